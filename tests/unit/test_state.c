/* test_state.c - the SQLite state store (src/engine/state*.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fake/fixed_clock.h"
#include "gpuctl/clock.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* Fixtures and helpers                                                */

typedef struct fx {
    char dir[64];   /* mkdtemp directory */
    char state[96]; /* dir/state: the state directory under test */
} fx;

static int setup(void **pstate)
{
    fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/gpuctl-test-state-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
    gpc_clock_set(NULL);
    *pstate = f;
    return 0;
}

static int teardown(void **pstate)
{
    fx *f = *pstate;
    gpc_error ge;
    gpc_error_clear(&ge);
    int rc = gpc_rm_rf(f->dir, &ge);
    free(f);
    gpc_clock_set(NULL);
    return rc;
}

static gpc_state *open_ok(const char *dir)
{
    gpc_state *st = NULL;
    gpc_error ge;
    gpc_error_clear(&ge);
    int rc = gpc_state_open(dir, &st, &ge);
    if (rc)
        fail_msg("gpc_state_open(%s): %s", dir, ge.msg);
    assert_non_null(st);
    return st;
}

#define OK(call)                                                   \
    do {                                                           \
        gpc_error e_;                                              \
        gpc_error_clear(&e_);                                      \
        gpc_error *err = &e_;                                      \
        int rc_ = (call);                                          \
        if (rc_ != 0)                                              \
            fail_msg("%s failed (%d): %s", #call, rc_, e_.msg);    \
    } while (0)

/* A raw SQLite connection to look under the API. */
static sqlite3 *raw_open(const char *statedir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/gpuctl.db", statedir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(s) != SQLITE_ROW)
        fail_msg("step %s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The first column of the first row as text, copied into buf. */
static const char *raw_text(sqlite3 *db, const char *sql, char *buf, size_t n)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(s) != SQLITE_ROW)
        fail_msg("step %s: %s", sql, sqlite3_errmsg(db));
    const unsigned char *t = sqlite3_column_text(s, 0);
    snprintf(buf, n, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(s);
    return buf;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("exec %s: %s", sql, msg ? msg : "?");
}

static mode_t mode_of(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        fail_msg("stat %s: %s", path, strerror(errno));
    return sb.st_mode & 07777;
}

static gpc_cluster_rec cluster_tmpl(const char *name)
{
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)name;
    c.uid = "0123456789abcdef0123456789abcdef";
    c.provider = "local";
    c.spec_hash = "hash";
    c.spec_json = "{}";
    c.spec_path = "";
    c.nodes = 1;
    c.rdzv_port = 29500;
    c.phase = GPC_PHASE_PENDING;
    c.exit_code = -1;
    c.created_at = 100;
    c.updated_at = 100;
    return c;
}

static gpc_node_rec node_tmpl(int64_t cluster_id, uint32_t rank, const char *name)
{
    gpc_node_rec n;
    memset(&n, 0, sizeof(n));
    n.cluster_id = cluster_id;
    n.rank = rank;
    n.name = (char *)name;
    n.provider = "local";
    n.provider_id = "";
    n.client_token = "tok";
    n.region = "local";
    n.zone = "local-a";
    n.instance_type = "cpu";
    n.private_ip = "";
    n.price_hourly = 0.0;
    n.phase = GPC_PHASE_PENDING;
    n.exit_code = -1;
    n.created_at = 100;
    return n;
}

static int64_t insert_cluster(gpc_state *st, const char *name)
{
    gpc_cluster_rec c = cluster_tmpl(name);
    OK(gpc_cluster_insert(st, &c, err));
    assert_true(c.id > 0);
    return c.id;
}

/* ------------------------------------------------------------------ */
/* Phases and the state directory                                      */

static void test_phase_names(void **pstate)
{
    (void)pstate;
    static const char *const want[] = {
        "pending", "booting", "running", "succeeded",
        "failed", "preempted", "terminated",
    };
    assert_int_equal(GPC_PHASE_COUNT, 7);
    for (int i = 0; i < GPC_PHASE_COUNT; i++) {
        assert_string_equal(gpc_phase_name((gpc_phase)i), want[i]);
        gpc_phase p = GPC_PHASE_COUNT;
        assert_int_equal(gpc_phase_parse(want[i], &p), 0);
        assert_int_equal(p, i);
    }
    gpc_phase p = GPC_PHASE_RUNNING;
    assert_int_equal(gpc_phase_parse("Running", &p), -1);
    assert_int_equal(gpc_phase_parse("", &p), -1);
    assert_int_equal(gpc_phase_parse(NULL, &p), -1);
    assert_int_equal(p, GPC_PHASE_RUNNING);
    assert_string_equal(gpc_phase_name(GPC_PHASE_COUNT), "unknown");
}

static void test_dir_default(void **pstate)
{
    (void)pstate;
    char *oldx = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
    char *oldh = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *olds = getenv("GPUCTL_STATE_DIR") ? strdup(getenv("GPUCTL_STATE_DIR")) : NULL;
    char *out = NULL;
    unsetenv("GPUCTL_STATE_DIR");

    setenv("XDG_STATE_HOME", "/x/state", 1);
    setenv("HOME", "/home/u", 1);
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/x/state/gpuctl");
    free(out);

    unsetenv("XDG_STATE_HOME");
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/home/u/.local/state/gpuctl");
    free(out);

    setenv("XDG_STATE_HOME", "relative/dir", 1); /* invalid per XDG: ignored */
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/home/u/.local/state/gpuctl");
    free(out);

    setenv("XDG_STATE_HOME", "", 1);
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/home/u/.local/state/gpuctl");
    free(out);

    /* GPUCTL_STATE_DIR (a user trial: it was silently ignored) wins over
     * both, as given, relative too; empty is unset */
    setenv("XDG_STATE_HOME", "/x/state", 1);
    setenv("GPUCTL_STATE_DIR", "/ci/st", 1);
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/ci/st");
    free(out);
    setenv("GPUCTL_STATE_DIR", "./.gpuctl", 1);
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "./.gpuctl");
    free(out);
    setenv("GPUCTL_STATE_DIR", "", 1);
    OK(gpc_state_dir_default(&out, err));
    assert_string_equal(out, "/x/state/gpuctl");
    free(out);
    unsetenv("GPUCTL_STATE_DIR");

    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    gpc_error ge;
    gpc_error_clear(&ge);
    out = NULL;
    assert_int_equal(gpc_state_dir_default(&out, &ge), GPC_ERR_STATE);
    assert_null(out);
    assert_int_equal(ge.code, GPC_ERR_STATE);
    assert_string_equal(ge.msg, "cannot locate the state directory: none of "
                        "GPUCTL_STATE_DIR, XDG_STATE_HOME and HOME is set (use --state-dir)");

    if (oldx)
        setenv("XDG_STATE_HOME", oldx, 1);
    if (oldh)
        setenv("HOME", oldh, 1);
    if (olds)
        setenv("GPUCTL_STATE_DIR", olds, 1);
    free(oldx);
    free(oldh);
    free(olds);
}

static void test_open_modes(void **pstate)
{
    fx *f = *pstate;
    char dir[256], p[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/a/b/state", f->dir);
    mode_t old = umask(0); /* modes must not depend on the umask */
    gpc_state *st = open_ok(dir);
    umask(old);
    assert_string_equal(gpc_state_path(st), dir);

    snprintf(p, sizeof(p), "%s/a", f->dir);
    assert_int_equal(mode_of(p), 0700);
    snprintf(p, sizeof(p), "%s/a/b", f->dir);
    assert_int_equal(mode_of(p), 0700);
    assert_int_equal(mode_of(dir), 0700);
    snprintf(p, sizeof(p), "%s/gpuctl.db", dir);
    assert_int_equal(mode_of(p), 0600);

    insert_cluster(st, "m"); /* the -wal / -shm files exist while open */
    snprintf(p, sizeof(p), "%s/gpuctl.db-wal", dir);
    assert_int_equal(mode_of(p), 0600);
    snprintf(p, sizeof(p), "%s/gpuctl.db-shm", dir);
    assert_int_equal(mode_of(p), 0600);

    sqlite3 *db = raw_open(dir);
    char buf[64];
    assert_string_equal(raw_text(db, "PRAGMA journal_mode", buf, sizeof(buf)), "wal");
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 5);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                                 "AND name IN ('clusters','nodes','attempts','events',"
                                 "'ledger','capacity_misses','zone_cooldowns')"), 7);
    sqlite3_close(db);
    OK(gpc_state_check(st, err));
    gpc_state_close(st);

    /* Re-opening an existing database keeps everything and the modes. */
    umask(022);
    st = open_ok(dir);
    umask(old);
    snprintf(p, sizeof(p), "%s/gpuctl.db", dir);
    assert_int_equal(mode_of(p), 0600);
    gpc_cluster_rec c;
    OK(gpc_cluster_get(st, "m", &c, err));
    assert_string_equal(c.name, "m");
    gpc_cluster_rec_free(&c);
    gpc_state_close(st);
}

static void test_open_errors(void **pstate)
{
    fx *f = *pstate;
    char p[PATH_MAX];
    gpc_error ge;
    gpc_state *st = NULL;

    /* Not a database. */
    assert_int_equal(mkdir(f->state, 0700), 0);
    snprintf(p, sizeof(p), "%s/gpuctl.db", f->state);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    for (int i = 0; i < 512; i++)
        fputs("garbage!", fp);
    fclose(fp);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open(f->state, &st, &ge), GPC_ERR_STATE);
    assert_null(st);
    char want[PATH_MAX + 256];
    snprintf(want, sizeof(want), "state %s: file is not a database (", p);
    assert_memory_equal(ge.msg, want, strlen(want));

    /* A schema newer than this build. */
    assert_int_equal(unlink(p), 0);
    st = open_ok(f->state);
    gpc_state_close(st);
    sqlite3 *db = raw_open(f->state);
    raw_exec(db, "PRAGMA user_version = 99");
    sqlite3_close(db);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open(f->state, &st, &ge), GPC_ERR_STATE);
    assert_null(st);
    snprintf(want, sizeof(want),
             "state %s: schema version 99 is newer than this gpuctl supports (5); the file "
             "was left as it is: use the newer gpuctl that wrote it", p);
    assert_string_equal(ge.msg, want);

    /* The state directory cannot be created. */
    snprintf(p, sizeof(p), "%s/file", f->dir);
    fp = fopen(p, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(p, sizeof(p), "%s/file/sub", f->dir);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open(p, &st, &ge), GPC_ERR_IO);
    assert_null(st);
}

/* The whole content of a file (NULL when missing); *len its size. */
static unsigned char *slurp(const char *path, size_t *len)
{
    char *text = NULL;
    gpc_error ge;
    gpc_error_clear(&ge);
    if (gpc_read_file(path, 64u << 20, &text, len, &ge) != 0)
        return NULL;
    return (unsigned char *)text;
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* (regression) A zero-byte gpuctl.db was taken for an empty state: every
 * record was lost in silence.  It is refused, named, and left alone. */
static void test_open_empty_file(void **pstate)
{
    fx *f = *pstate;
    char p[PATH_MAX], q[PATH_MAX + 16];
    assert_int_equal(mkdir(f->state, 0700), 0);
    snprintf(p, sizeof(p), "%s/gpuctl.db", f->state);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);

    gpc_state *st = NULL;
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open(f->state, &st, &ge), GPC_ERR_STATE);
    assert_null(st);
    char want[4 * PATH_MAX + 1024];
    snprintf(want, sizeof(want),
             "state %s is empty (0 bytes): the clusters it recorded are unknown (lost to a "
             "full disk, a truncation or a bad copy?), and gpuctl will not start a new state "
             "over it. Restore the file from a backup if you have one. Otherwise its nodes "
             "may still be running and billing: find them at each provider by the tag "
             "gpuctl:cluster and delete them there (docs/cli.md, 'The state database', says "
             "how for each provider); then move the file aside to start a new state: mv %s "
             "%s.empty", p, p, p);
    assert_string_equal(ge.msg, want);
    /* untouched: still empty, nothing next to it */
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    static const char *const sfx[] = {"-wal", "-shm", "-journal", ".new"};
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        snprintf(q, sizeof(q), "%s%s", p, sfx[i]);
        assert_false(exists(q));
    }
    /* the read-only way refuses it just the same */
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open_ex(f->state, GPC_STATE_READ_ONLY_OK, &st, &ge),
                     GPC_ERR_STATE);
    assert_string_equal(ge.msg, want);

    /* Moved aside as the message says, a new state starts. */
    snprintf(q, sizeof(q), "%s.empty", p);
    assert_int_equal(rename(p, q), 0);
    st = open_ok(f->state);
    gpc_state_close(st);
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sb.st_size > 0);
    snprintf(q, sizeof(q), "%s.new", p);
    assert_false(exists(q));
}

/* A new database arrives whole: many first runs at once all succeed,
 * none sees the file half-made (and refuses it as empty). */
static void test_open_fresh_concurrent(void **pstate)
{
    fx *f = *pstate;
    enum { N = 8 };
    fflush(NULL);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            gpc_state *st = NULL;
            gpc_error ge;
            gpc_error_clear(&ge);
            int rc = gpc_state_open(f->state, &st, &ge);
            if (rc)
                fprintf(stderr, "child %d: %s\n", i, ge.msg);
            gpc_state_close(st);
            _exit(rc ? 1 : 0);
        }
    }
    for (int i = 0; i < N; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    gpc_state *st = open_ok(f->state);
    insert_cluster(st, "fresh");
    gpc_state_close(st);
}

/* (regression) A database of a newer schema was switched to WAL before it
 * was refused: the file changed.  Now nothing touches it. */
static void test_open_newer_untouched(void **pstate)
{
    fx *f = *pstate;
    char p[PATH_MAX], q[PATH_MAX + 16];
    gpc_state *st = open_ok(f->state);
    insert_cluster(st, "keep");
    gpc_state_close(st);
    snprintf(p, sizeof(p), "%s/gpuctl.db", f->state);
    for (int wal = 0; wal <= 1; wal++) {
        /* as a newer gpuctl might leave it: rollback journal, then WAL */
        sqlite3 *db = raw_open(f->state);
        raw_exec(db, wal ? "PRAGMA journal_mode = WAL" : "PRAGMA journal_mode = DELETE");
        raw_exec(db, "PRAGMA user_version = 99");
        sqlite3_close(db);
        struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p, old_times, 0), 0);
        size_t before_len = 0, after_len = 0;
        unsigned char *before = slurp(p, &before_len);
        assert_non_null(before);
        assert_int_equal(before[18], wal ? 2 : 1); /* journal mode in the header */

        gpc_error ge;
        gpc_error_clear(&ge);
        assert_int_equal(gpc_state_open(f->state, &st, &ge), GPC_ERR_STATE);
        assert_null(st);
        char want[PATH_MAX + 256];
        snprintf(want, sizeof(want),
                 "state %s: schema version 99 is newer than this gpuctl supports (5); the "
                 "file was left as it is: use the newer gpuctl that wrote it", p);
        assert_string_equal(ge.msg, want);

        unsigned char *after = slurp(p, &after_len);
        assert_non_null(after);
        assert_int_equal(after_len, before_len);
        assert_memory_equal(after, before, before_len);
        free(before);
        free(after);
        struct stat sb;
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mtim.tv_sec, 1000000000);
        assert_int_equal(sb.st_mtim.tv_nsec, 0);
        snprintf(q, sizeof(q), "%s-wal", p);
        assert_false(exists(q));
        snprintf(q, sizeof(q), "%s-journal", p);
        assert_false(exists(q));
    }
}

/* ---- a full disk, through a SQLite VFS that says so ---------------- */

/* The default VFS, wrapped: while `shim_full` is set every write fails
 * as the unix VFS fails on ENOSPC (SQLITE_FULL), and the wal-index cannot
 * be made (SQLITE_IOERR_SHMSIZE), as on a file system with no free block. */
static sqlite3_vfs *shim_real;
static sqlite3_vfs shim_vfs;
static int shim_full;
static int shim_errno;

typedef struct shim_file {
    sqlite3_file base;
    sqlite3_file *real;
} shim_file;

#define REAL(f) (((shim_file *)(f))->real)

static int shim_close(sqlite3_file *f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int shim_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int shim_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    if (shim_full) {
        shim_errno = errno = ENOSPC;
        return SQLITE_FULL;
    }
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 n)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int shim_sync(sqlite3_file *f, int fl) { return REAL(f)->pMethods->xSync(REAL(f), fl); }
static int shim_size(sqlite3_file *f, sqlite3_int64 *n)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int shim_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int shim_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int shim_reserved(sqlite3_file *f, int *r)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r);
}
static int shim_fcntl(sqlite3_file *f, int op, void *a)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, a);
}
static int shim_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int shim_devchar(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int shim_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
    if (shim_full) {
        *pp = NULL;
        shim_errno = errno = ENOSPC;
        return SQLITE_IOERR_SHMSIZE;
    }
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, extend, pp);
}
static int shim_shm_lock(sqlite3_file *f, int o, int n, int fl)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl);
}
static void shim_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int shim_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int shim_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp)
{
    return REAL(f)->pMethods->xFetch(REAL(f), o, n, pp);
}
static int shim_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static const sqlite3_io_methods shim_io = {
    3, shim_close, shim_read, shim_write, shim_truncate, shim_sync, shim_size, shim_lock,
    shim_unlock, shim_reserved, shim_fcntl, shim_sector, shim_devchar, shim_shm_map,
    shim_shm_lock, shim_shm_barrier, shim_shm_unmap, shim_fetch, shim_unfetch,
};

static int shim_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags,
                     int *out_flags)
{
    (void)v;
    shim_file *sf = (shim_file *)f;
    sf->real = (sqlite3_file *)(sf + 1);
    int rc = shim_real->xOpen(shim_real, name, sf->real, flags, out_flags);
    sf->base.pMethods = sf->real->pMethods ? &shim_io : NULL;
    return rc;
}
static int shim_delete(sqlite3_vfs *v, const char *n, int s)
{
    (void)v;
    return shim_real->xDelete(shim_real, n, s);
}
static int shim_access(sqlite3_vfs *v, const char *n, int fl, int *r)
{
    (void)v;
    return shim_real->xAccess(shim_real, n, fl, r);
}
static int shim_fullpath(sqlite3_vfs *v, const char *n, int sz, char *out)
{
    (void)v;
    return shim_real->xFullPathname(shim_real, n, sz, out);
}
static int shim_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return shim_real->xRandomness(shim_real, n, out);
}
static int shim_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return shim_real->xSleep(shim_real, us);
}
static int shim_time(sqlite3_vfs *v, double *t)
{
    (void)v;
    return shim_real->xCurrentTime(shim_real, t);
}
static int shim_last_error(sqlite3_vfs *v, int n, char *buf)
{
    (void)v;
    return shim_errno ? shim_errno : shim_real->xGetLastError(shim_real, n, buf);
}
static int shim_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
    (void)v;
    return shim_real->xCurrentTimeInt64(shim_real, t);
}

static void shim_install(void)
{
    shim_real = sqlite3_vfs_find(NULL);
    assert_non_null(shim_real);
    memset(&shim_vfs, 0, sizeof(shim_vfs));
    shim_vfs.iVersion = 2;
    shim_vfs.szOsFile = (int)sizeof(shim_file) + shim_real->szOsFile;
    shim_vfs.mxPathname = shim_real->mxPathname;
    shim_vfs.zName = "gpuctl-test-full";
    shim_vfs.xOpen = shim_open;
    shim_vfs.xDelete = shim_delete;
    shim_vfs.xAccess = shim_access;
    shim_vfs.xFullPathname = shim_fullpath;
    shim_vfs.xRandomness = shim_random;
    shim_vfs.xSleep = shim_sleep;
    shim_vfs.xCurrentTime = shim_time;
    shim_vfs.xGetLastError = shim_last_error;
    shim_vfs.xCurrentTimeInt64 = shim_time64;
    assert_int_equal(sqlite3_vfs_register(&shim_vfs, 1), SQLITE_OK);
    shim_full = 0;
    shim_errno = 0;
}

/* Teardown of the full-disk test: the default VFS back, whatever failed. */
static int teardown_shim(void **pstate)
{
    shim_full = 0;
    shim_errno = 0;
    if (shim_real) {
        sqlite3_vfs_unregister(&shim_vfs);
        shim_real = NULL;
    }
    return teardown(pstate);
}

/* (regression) On a full disk every command failed with "disk I/O error
 * (PRAGMA journal_mode=WAL)".  The message says the disk is full, and a
 * command that only reads may read. */
static void test_open_disk_full(void **pstate)
{
    fx *f = *pstate;
    char p[PATH_MAX], want[PATH_MAX * 3];
    shim_install();
    gpc_state *st = open_ok(f->state);
    insert_cluster(st, "keep");
    gpc_state_close(st);
    snprintf(p, sizeof(p), "%s/gpuctl.db", f->state);

    shim_full = 1;
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open(f->state, &st, &ge), GPC_ERR_STATE);
    assert_null(st);
    snprintf(want, sizeof(want),
             "state %s: the disk holding %s is full (disk I/O error: PRAGMA user_version); "
             "free some space there and run the command again", p, f->state);
    assert_string_equal(ge.msg, want);

    /* Read-only is fine: the records are there, writes are refused. */
    shim_errno = 0;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open_ex(f->state, GPC_STATE_READ_ONLY_OK, &st, &ge), 0);
    assert_non_null(st);
    assert_int_equal(gpc_state_read_only(st), 1);
    gpc_cluster_rec c;
    OK(gpc_cluster_get(st, "keep", &c, err));
    assert_string_equal(c.name, "keep");
    gpc_cluster_rec_free(&c);
    gpc_cluster_rec nc = cluster_tmpl("new");
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_insert(st, &nc, &ge), GPC_ERR_STATE);
    snprintf(want, sizeof(want),
             "state %s: the disk holding %s is full, so the state was opened read-only and "
             "this change cannot be recorded; free some space there and run the command "
             "again", p, f->state);
    assert_string_equal(ge.msg, want);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_begin(st, &ge), GPC_ERR_STATE);
    assert_string_equal(ge.msg, want);
    gpc_state_close(st);

    /* A write that meets the full disk on an open state says so too. */
    shim_full = 0;
    shim_errno = 0;
    st = open_ok(f->state);
    assert_int_equal(gpc_state_read_only(st), 0);
    shim_full = 1;
    gpc_error_clear(&ge);
    nc = cluster_tmpl("new");
    assert_int_equal(gpc_cluster_insert(st, &nc, &ge), GPC_ERR_STATE);
    snprintf(want, sizeof(want), "state %s: the disk holding %s is full (", p, f->state);
    assert_memory_equal(ge.msg, want, strlen(want));
    shim_full = 0;
    shim_errno = 0;
    gpc_state_close(st);

    /* A first run on a full disk leaves no (empty) gpuctl.db behind that
     * the next run would refuse. */
    char fresh[256];
    snprintf(fresh, sizeof(fresh), "%s/fresh", f->dir);
    shim_full = 1;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_open_ex(fresh, GPC_STATE_READ_ONLY_OK, &st, &ge),
                     GPC_ERR_STATE);
    snprintf(want, sizeof(want), "state %s/gpuctl.db: the disk holding %s is full (", fresh,
             fresh);
    assert_memory_equal(ge.msg, want, strlen(want));
    snprintf(p, sizeof(p), "%s/gpuctl.db", fresh);
    assert_false(exists(p));
    snprintf(p, sizeof(p), "%s/gpuctl.db.new", fresh);
    assert_false(exists(p));
    shim_full = 0;
    shim_errno = 0;
    st = open_ok(fresh);
    insert_cluster(st, "after");
    gpc_state_close(st);

    /* With the space back, everything works again. */
    st = open_ok(f->state);
    insert_cluster(st, "new");
    gpc_state_close(st);
}

/* ------------------------------------------------------------------ */
/* Clusters                                                            */

static void assert_cluster_eq(const gpc_cluster_rec *a, const gpc_cluster_rec *b)
{
    assert_int_equal(a->id, b->id);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->uid, b->uid);
    assert_string_equal(a->provider, b->provider);
    assert_string_equal(a->spec_hash, b->spec_hash);
    assert_string_equal(a->spec_json, b->spec_json);
    assert_string_equal(a->spec_path, b->spec_path);
    assert_int_equal(a->nodes, b->nodes);
    assert_int_equal(a->rdzv_port, b->rdzv_port);
    assert_int_equal(a->phase, b->phase);
    assert_int_equal(a->exit_code, b->exit_code);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->updated_at, b->updated_at);
    assert_int_equal(a->destroyed_at, b->destroyed_at);
}

static void test_cluster_roundtrip(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    gpc_cluster_rec c = {
        .name = "train-1",
        .uid = "c0ffee00c0ffee00c0ffee00c0ffee00",
        .provider = "aws",
        .spec_hash = "e3b0c44298fc1c149afbf4c8996fb924",
        .spec_json = "{\"name\":\"train-1\",\"nodes\":4,\"s\":\"it's \\\"quoted\\\"\"}",
        .spec_path = "/home/u/jobs/train.yaml",
        .nodes = 4,
        .rdzv_port = 29400,
        .phase = GPC_PHASE_BOOTING,
        .exit_code = -1,
        .created_at = 1700000000,
        .updated_at = 1700000005,
        .destroyed_at = 0,
    };
    OK(gpc_cluster_insert(st, &c, err));
    assert_int_equal(c.id, 1);

    gpc_cluster_rec got;
    OK(gpc_cluster_get(st, "train-1", &got, err));
    assert_cluster_eq(&got, &c);
    gpc_cluster_rec_free(&got);
    assert_null(got.name);
    OK(gpc_cluster_get_by_id(st, c.id, &got, err));
    assert_cluster_eq(&got, &c);
    gpc_cluster_rec_free(&got);

    /* Phases are stored as their names. */
    sqlite3 *db = raw_open(f->state);
    char buf[64];
    assert_string_equal(raw_text(db, "SELECT phase FROM clusters WHERE id = 1", buf,
                                 sizeof(buf)), "booting");

    /* Update every field (but id). */
    gpc_cluster_rec u = {
        .id = c.id,
        .name = "train-1b",
        .uid = "ffffffffffffffffffffffffffffffff",
        .provider = "gcp",
        .spec_hash = "h2",
        .spec_json = "{\"nodes\":2}",
        .spec_path = "",
        .nodes = 2,
        .rdzv_port = 4242,
        .phase = GPC_PHASE_FAILED,
        .exit_code = 137,
        .created_at = 1700000001,
        .updated_at = 1700000100,
        .destroyed_at = 1700000200,
    };
    OK(gpc_cluster_update(st, &u, err));
    OK(gpc_cluster_get_by_id(st, c.id, &got, err));
    assert_cluster_eq(&got, &u);
    gpc_cluster_rec_free(&got);
    assert_string_equal(raw_text(db, "SELECT phase FROM clusters WHERE id = 1", buf,
                                 sizeof(buf)), "failed");

    /* Every phase round-trips. */
    for (int p = 0; p < GPC_PHASE_COUNT; p++) {
        u.phase = (gpc_phase)p;
        OK(gpc_cluster_update(st, &u, err));
        OK(gpc_cluster_get_by_id(st, c.id, &got, err));
        assert_int_equal(got.phase, p);
        gpc_cluster_rec_free(&got);
        char sql[64];
        snprintf(sql, sizeof(sql), "SELECT phase FROM clusters WHERE id = %lld",
                 (long long)c.id);
        assert_string_equal(raw_text(db, sql, buf, sizeof(buf)),
                            gpc_phase_name((gpc_phase)p));
    }
    sqlite3_close(db);

    /* Destroyed: not found by name any more, still by id. */
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_get(st, "train-1b", &got, &ge), GPC_ERR_NOT_FOUND);
    assert_string_equal(ge.msg, "no cluster named 'train-1b'");
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_get_by_id(st, 999, &got, &ge), GPC_ERR_NOT_FOUND);
    assert_string_equal(ge.msg, "no cluster with id 999");
    gpc_error_clear(&ge);
    u.id = 999;
    assert_int_equal(gpc_cluster_update(st, &u, &ge), GPC_ERR_NOT_FOUND);
    assert_string_equal(ge.msg, "cluster id 999 not found");

    /* Invalid input. */
    gpc_cluster_rec bad = cluster_tmpl("");
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_insert(st, &bad, &ge), GPC_ERR_STATE);
    bad = cluster_tmpl("x");
    bad.phase = GPC_PHASE_COUNT;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_insert(st, &bad, &ge), GPC_ERR_STATE);
    gpc_state_close(st);
}

static void test_cluster_defaults(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    fixed_clock_at(1234567);
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    c.name = "bare"; /* every other string NULL, times 0 */
    c.exit_code = -1;
    OK(gpc_cluster_insert(st, &c, err));
    assert_int_equal(c.created_at, 1234567);
    assert_int_equal(c.updated_at, 1234567);
    gpc_cluster_rec got;
    OK(gpc_cluster_get(st, "bare", &got, err));
    assert_string_equal(got.uid, "");
    assert_string_equal(got.provider, "");
    assert_string_equal(got.spec_hash, "");
    assert_string_equal(got.spec_json, "");
    assert_string_equal(got.spec_path, "");
    assert_int_equal(got.phase, GPC_PHASE_PENDING);
    assert_int_equal(got.created_at, 1234567);
    assert_int_equal(got.updated_at, 1234567);
    assert_int_equal(got.destroyed_at, 0);
    gpc_cluster_rec_free(&got);
    gpc_state_close(st);
}

static void test_cluster_unique_live_name(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    gpc_cluster_rec a = cluster_tmpl("dup");
    OK(gpc_cluster_insert(st, &a, err));

    gpc_cluster_rec b = cluster_tmpl("dup");
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_insert(st, &b, &ge), GPC_ERR_STATE);
    assert_int_equal(ge.code, GPC_ERR_STATE);
    assert_string_equal(ge.msg, "cluster 'dup' already exists");

    /* Destroy the first; the name is free again. */
    a.destroyed_at = 200;
    OK(gpc_cluster_update(st, &a, err));
    b = cluster_tmpl("dup");
    OK(gpc_cluster_insert(st, &b, err));
    assert_true(b.id > a.id);

    gpc_cluster_rec got;
    OK(gpc_cluster_get(st, "dup", &got, err));
    assert_int_equal(got.id, b.id);
    gpc_cluster_rec_free(&got);

    /* Bringing the destroyed one back to life would clash. */
    a.destroyed_at = 0;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_update(st, &a, &ge), GPC_ERR_STATE);
    assert_string_equal(ge.msg, "cluster 'dup' already exists");

    /* Renaming a live one onto another live name clashes too. */
    gpc_cluster_rec c = cluster_tmpl("other");
    OK(gpc_cluster_insert(st, &c, err));
    c.name = "dup";
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_update(st, &c, &ge), GPC_ERR_STATE);
    assert_string_equal(ge.msg, "cluster 'dup' already exists");

    gpc_cluster_rec *list;
    size_t n;
    OK(gpc_cluster_list(st, 0, &list, &n, err));
    assert_int_equal(n, 2);
    assert_string_equal(list[0].name, "dup");
    assert_int_equal(list[0].id, b.id);
    assert_string_equal(list[1].name, "other");
    gpc_cluster_list_free(list, n);
    OK(gpc_cluster_list(st, 1, &list, &n, err));
    assert_int_equal(n, 3);
    assert_int_equal(list[0].id, a.id);
    assert_int_equal(list[0].destroyed_at, 200);
    assert_int_equal(list[1].id, b.id);
    assert_int_equal(list[2].id, c.id);
    gpc_cluster_list_free(list, n);
    gpc_state_close(st);
}

static void test_cluster_list_order(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    gpc_cluster_rec *list = (gpc_cluster_rec *)1;
    size_t n = 99;
    OK(gpc_cluster_list(st, 1, &list, &n, err));
    assert_int_equal(n, 0);
    gpc_cluster_list_free(list, n);

    const char *names[] = { "zeta", "alpha", "mid", "Beta", "alpha2" };
    int64_t ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = insert_cluster(st, names[i]);
    /* destroy "mid", then make a new "mid" and destroy "alpha" */
    gpc_cluster_rec c;
    OK(gpc_cluster_get(st, "mid", &c, err));
    c.destroyed_at = 5;
    OK(gpc_cluster_update(st, &c, err));
    gpc_cluster_rec_free(&c);
    int64_t mid2 = insert_cluster(st, "mid");
    OK(gpc_cluster_get(st, "alpha", &c, err));
    c.destroyed_at = 6;
    OK(gpc_cluster_update(st, &c, err));
    gpc_cluster_rec_free(&c);

    OK(gpc_cluster_list(st, 0, &list, &n, err));
    assert_int_equal(n, 4);
    assert_string_equal(list[0].name, "Beta"); /* byte order: 'B' < 'a' */
    assert_string_equal(list[1].name, "alpha2");
    assert_string_equal(list[2].name, "mid");
    assert_int_equal(list[2].id, mid2);
    assert_string_equal(list[3].name, "zeta");
    assert_int_equal(list[3].id, ids[0]);
    gpc_cluster_list_free(list, n);

    OK(gpc_cluster_list(st, 1, &list, &n, err));
    assert_int_equal(n, 6);
    const char *want[] = { "Beta", "alpha", "alpha2", "mid", "mid", "zeta" };
    int64_t wid[] = { ids[3], ids[1], ids[4], ids[2], mid2, ids[0] };
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(list[i].name, want[i]);
        assert_int_equal(list[i].id, wid[i]);
    }
    gpc_cluster_list_free(list, n);
    gpc_state_close(st);
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */

static void assert_node_eq(const gpc_node_rec *a, const gpc_node_rec *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->cluster_id, b->cluster_id);
    assert_int_equal(a->rank, b->rank);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->provider, b->provider);
    assert_string_equal(a->provider_id, b->provider_id);
    assert_string_equal(a->client_token, b->client_token);
    assert_string_equal(a->region, b->region);
    assert_string_equal(a->zone, b->zone);
    assert_string_equal(a->instance_type, b->instance_type);
    assert_int_equal(a->spot, b->spot);
    assert_string_equal(a->private_ip, b->private_ip);
    assert_true(a->price_hourly == b->price_hourly);
    assert_int_equal(a->phase, b->phase);
    assert_int_equal(a->exit_code, b->exit_code);
    assert_int_equal(a->created_at, b->created_at);
    assert_int_equal(a->started_at, b->started_at);
    assert_int_equal(a->ended_at, b->ended_at);
}

static void test_node_roundtrip(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "n");
    gpc_node_rec nd = {
        .cluster_id = cid,
        .rank = 3,
        .name = "n-3",
        .provider = "aws",
        .provider_id = "i-0abc123",
        .client_token = "n-3-c0ffee",
        .region = "us-east-1",
        .zone = "us-east-1a",
        .instance_type = "p4d.24xlarge",
        .spot = 1,
        .private_ip = "10.0.0.3",
        .price_hourly = 32.7726,
        .phase = GPC_PHASE_RUNNING,
        .exit_code = -1,
        .created_at = 1700000000,
        .started_at = 1700000060,
        .ended_at = 0,
    };
    OK(gpc_node_insert(st, &nd, err));
    assert_true(nd.id > 0);

    gpc_node_rec *list;
    size_t n;
    OK(gpc_node_list(st, cid, 0, &list, &n, err));
    assert_int_equal(n, 1);
    assert_node_eq(&list[0], &nd);
    gpc_node_list_free(list, n);

    sqlite3 *db = raw_open(f->state);
    char buf[64];
    assert_string_equal(raw_text(db, "SELECT phase FROM nodes", buf, sizeof(buf)), "running");

    gpc_node_rec u = {
        .id = nd.id,
        .cluster_id = cid,
        .rank = 4,
        .name = "n-4",
        .provider = "gcp",
        .provider_id = "projects/p/zones/z/instances/n-4",
        .client_token = "tok2",
        .region = "europe-west4",
        .zone = "europe-west4-b",
        .instance_type = "a2-highgpu-8g",
        .spot = 0,
        .private_ip = "10.128.0.9",
        .price_hourly = 0.125,
        .phase = GPC_PHASE_SUCCEEDED,
        .exit_code = 0,
        .created_at = 1700000001,
        .started_at = 1700000061,
        .ended_at = 1700003600,
    };
    OK(gpc_node_update(st, &u, err));
    OK(gpc_node_list(st, cid, 1, &list, &n, err));
    assert_int_equal(n, 1);
    assert_node_eq(&list[0], &u);
    gpc_node_list_free(list, n);
    assert_string_equal(raw_text(db, "SELECT phase FROM nodes", buf, sizeof(buf)),
                        "succeeded");

    for (int p = 0; p < GPC_PHASE_COUNT; p++) {
        u.phase = (gpc_phase)p;
        OK(gpc_node_update(st, &u, err));
        OK(gpc_node_list(st, cid, 1, &list, &n, err));
        assert_int_equal(n, 1);
        assert_int_equal(list[0].phase, p);
        gpc_node_list_free(list, n);
        assert_string_equal(raw_text(db, "SELECT phase FROM nodes", buf, sizeof(buf)),
                            gpc_phase_name((gpc_phase)p));
    }

    /* A phase name this build does not know is an error, not a guess. */
    raw_exec(db, "UPDATE nodes SET phase = 'hibernating'");
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_node_list(st, cid, 1, &list, &n, &ge), GPC_ERR_STATE);
    assert_null(list);
    assert_int_equal(n, 0);
    assert_non_null(strstr(ge.msg, "unknown phase 'hibernating' in nodes row"));
    sqlite3_close(db);

    gpc_error_clear(&ge);
    u.id = 4242;
    assert_int_equal(gpc_node_update(st, &u, &ge), GPC_ERR_NOT_FOUND);
    assert_string_equal(ge.msg, "node id 4242 not found");

    /* Nodes need an existing cluster. */
    gpc_node_rec orphan = node_tmpl(777, 0, "x-0");
    gpc_error_clear(&ge);
    assert_int_equal(gpc_node_insert(st, &orphan, &ge), GPC_ERR_STATE);
    assert_non_null(strstr(ge.msg, "FOREIGN KEY constraint failed"));
    gpc_state_close(st);
}

/* Numbers read back are range-checked: a row written by hand (here with
 * SQLite directly) with a number no gpuctl writes is refused, naming the
 * table, the row and the column, and nothing of it is returned. */
static void test_numbers_in_range(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "r");
    gpc_node_rec nd = node_tmpl(cid, 0, "r-0");
    OK(gpc_node_insert(st, &nd, err));
    gpc_attempt_rec a = {.cluster_id = cid, .rank = 0, .provider = "aws",
                         .region = "us-east-1", .instance_type = "p5.48xlarge",
                         .attempt = 1, .outcome = "created"};
    OK(gpc_attempt_add(st, &a, err));
    OK(gpc_event_add(st, cid, 0, "create", "created", err));
    OK(gpc_capacity_miss_add(st, "aws", "us-east-1", "us-east-1a", "p5.48xlarge", 0, 100, err));
    OK(gpc_ledger_open(st, cid, nd.id, "aws", "p5.48xlarge", 98.32, 100, err));
    sqlite3 *db = raw_open(f->state);
    enum { NODES, CLUSTER, CLUSTERS, ATTEMPTS, EVENTS, MISS, LEDGER };
    static const struct {
        const char *set, *reset;
        int read;
        const char *msg; /* after "state DBPATH: " */
    } cases[] = {
        {"UPDATE nodes SET rank = 4294967296", "UPDATE nodes SET rank = 0", NODES,
         "nodes row 1: rank: '4294967296' is out of range (0..1023)"},
        {"UPDATE nodes SET rank = 1024", "UPDATE nodes SET rank = 0", NODES,
         "nodes row 1: rank: '1024' is out of range (0..1023)"},
        {"UPDATE nodes SET rank = -1", "UPDATE nodes SET rank = 0", NODES,
         "nodes row 1: rank: '-1' is out of range (0..1023)"},
        {"UPDATE nodes SET rank = 1.5", "UPDATE nodes SET rank = 0", NODES,
         "nodes row 1: rank: '1.5' is not an integer"},
        {"UPDATE nodes SET rank = 'one'", "UPDATE nodes SET rank = 0", NODES,
         "nodes row 1: rank: 'one' is not an integer"},
        {"UPDATE nodes SET phase = 7", "UPDATE nodes SET phase = 'pending'", NODES,
         "unknown phase '7' in nodes row 1"},
        {"UPDATE nodes SET exit_code = 256", "UPDATE nodes SET exit_code = -1", NODES,
         "nodes row 1: exit_code: '256' is out of range (-1..255)"},
        {"UPDATE nodes SET exit_code = -2147483649", "UPDATE nodes SET exit_code = -1", NODES,
         "nodes row 1: exit_code: '-2147483649' is out of range (-1..255)"},
        {"UPDATE nodes SET spot = 2", "UPDATE nodes SET spot = 0", NODES,
         "nodes row 1: spot: '2' is out of range (0..1)"},
        {"UPDATE nodes SET price_hourly = 1e300", "UPDATE nodes SET price_hourly = 0", NODES,
         "nodes row 1: price_hourly: '1.0e+300' is out of range (0..1000000)"},
        {"UPDATE nodes SET price_hourly = -0.5", "UPDATE nodes SET price_hourly = 0", NODES,
         "nodes row 1: price_hourly: '-0.5' is out of range (0..1000000)"},
        {"UPDATE nodes SET price_hourly = 'free'", "UPDATE nodes SET price_hourly = 0", NODES,
         "nodes row 1: price_hourly: 'free' is not a number"},
        {"UPDATE nodes SET started_at = -5", "UPDATE nodes SET started_at = 0", NODES,
         "nodes row 1: started_at: '-5' is out of range (0..253402300799)"},
        {"UPDATE nodes SET ended_at = 1e20", "UPDATE nodes SET ended_at = 0", NODES,
         "nodes row 1: ended_at: '1.0e+20' is not an integer"},
        {"UPDATE nodes SET cluster_id = 0", "UPDATE nodes SET cluster_id = 1", NODES,
         NULL}, /* the list selects by cluster_id: the row is not read at all */
        {"UPDATE clusters SET nodes = 1025", "UPDATE clusters SET nodes = 1", CLUSTER,
         "clusters row 1: nodes: '1025' is out of range (0..1024)"},
        {"UPDATE clusters SET rdzv_port = 65536", "UPDATE clusters SET rdzv_port = 29500",
         CLUSTER, "clusters row 1: rdzv_port: '65536' is out of range (0..65535)"},
        {"UPDATE clusters SET exit_code = 300", "UPDATE clusters SET exit_code = -1", CLUSTERS,
         "clusters row 1: exit_code: '300' is out of range (-1..255)"},
        {"UPDATE clusters SET created_at = 253402300800", "UPDATE clusters SET created_at = 100",
         CLUSTERS, "clusters row 1: created_at: '253402300800' is out of range "
         "(0..253402300799)"},
        {"UPDATE clusters SET phase = 'lost'", "UPDATE clusters SET phase = 'pending'",
         CLUSTER, "unknown phase 'lost' in clusters row 1"},
        {"UPDATE attempts SET rank = 5000", "UPDATE attempts SET rank = 0", ATTEMPTS,
         "attempts row 1: rank: '5000' is out of range (0..1023)"},
        {"UPDATE attempts SET attempt = 4294967296", "UPDATE attempts SET attempt = 1",
         ATTEMPTS, "attempts row 1: attempt: '4294967296' is out of range (0..4294967295)"},
        {"UPDATE attempts SET spot = -1", "UPDATE attempts SET spot = 0", ATTEMPTS,
         "attempts row 1: spot: '-1' is out of range (0..1)"},
        {"UPDATE events SET rank = -2", "UPDATE events SET rank = 0", EVENTS,
         "events row 1: rank: '-2' is out of range (-1..1023)"},
        {"UPDATE events SET at = -1", "UPDATE events SET at = 100", EVENTS,
         "events row 1: at: '-1' is out of range (0..253402300799)"},
        {"UPDATE capacity_misses SET at = -1", "UPDATE capacity_misses SET at = 100", MISS,
         "capacity_misses of aws us-east-1 p5.48xlarge: at: '-1' is not a time "
         "(0..253402300799)"},
        {"UPDATE ledger SET price_hourly = 1e308, start_at = 0", "UPDATE ledger SET "
         "price_hourly = 98.32, start_at = 100", LEDGER,
         "ledger of cluster id 1: the cost is not a finite number >= 0 (got inf)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        raw_exec(db, cases[i].set);
        gpc_error ge;
        gpc_error_clear(&ge);
        int rc = 0;
        gpc_node_rec *nodes = NULL;
        gpc_cluster_rec c, *cl = NULL;
        gpc_attempt_rec *at = NULL;
        gpc_event_rec *ev = NULL;
        size_t n = 99;
        int64_t t = 99;
        double usd = 99;
        switch (cases[i].read) {
        case NODES:
            rc = gpc_node_list(st, cid, 1, &nodes, &n, &ge);
            assert_null(nodes);
            break;
        case CLUSTER:
            rc = gpc_cluster_get(st, "r", &c, &ge);
            break;
        case CLUSTERS:
            rc = gpc_cluster_list(st, 1, &cl, &n, &ge);
            assert_null(cl);
            break;
        case ATTEMPTS:
            rc = gpc_attempt_list(st, cid, &at, &n, &ge);
            assert_null(at);
            break;
        case EVENTS:
            rc = gpc_event_list(st, cid, &ev, &n, &ge);
            assert_null(ev);
            break;
        case MISS:
            rc = gpc_capacity_miss_last(st, "aws", "us-east-1", "us-east-1a", "p5.48xlarge", 0,
                                        &t, &ge);
            assert_int_equal(t, 0);
            break;
        default:
            rc = gpc_ledger_cost(st, cid, 36000, &usd, &ge); /* 1e308 x 10 hours */
            assert_true(usd == 0);
            break;
        }
        if (!cases[i].msg) {
            assert_int_equal(rc, 0);
            assert_int_equal(n, 0);
        } else {
            char want[512];
            snprintf(want, sizeof(want), "state %s/gpuctl.db: %s", f->state, cases[i].msg);
            if (rc != GPC_ERR_STATE || strcmp(ge.msg, want) != 0)
                fail_msg("%s: rc %d, message [%s], expected [%s]", cases[i].set, rc, ge.msg,
                         want);
            if (cases[i].read != CLUSTER && cases[i].read != MISS && cases[i].read != LEDGER)
                assert_int_equal(n, 0); /* a list: nothing of it */
        }
        raw_exec(db, cases[i].reset);
    }
    /* Reset, everything reads again. */
    gpc_node_rec *nodes;
    size_t n;
    OK(gpc_node_list(st, cid, 1, &nodes, &n, err));
    assert_int_equal(n, 1);
    assert_int_equal(nodes[0].rank, 0);
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec c;
    OK(gpc_cluster_get(st, "r", &c, err));
    assert_int_equal(c.rdzv_port, 29500);
    gpc_cluster_rec_free(&c);
    double usd;
    OK(gpc_ledger_cost(st, cid, 3700, &usd, err));
    assert_true(usd == 98.32);
    sqlite3_close(db);
    gpc_state_close(st);
}

static void test_node_unique_and_order(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "u");
    int64_t other = insert_cluster(st, "v");
    uint32_t ranks[] = { 2, 0, 1 };
    int64_t id_of[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "u-%u", ranks[i]);
        gpc_node_rec nd = node_tmpl(cid, ranks[i], name);
        OK(gpc_node_insert(st, &nd, err));
        id_of[ranks[i]] = nd.id;
    }
    gpc_node_rec v0 = node_tmpl(other, 0, "v-0");
    OK(gpc_node_insert(st, &v0, err)); /* same rank, other cluster: fine */

    gpc_node_rec dup = node_tmpl(cid, 1, "u-1");
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_node_insert(st, &dup, &ge), GPC_ERR_STATE);
    char want[128];
    snprintf(want, sizeof(want), "node rank 1 of cluster id %lld already exists",
             (long long)cid);
    assert_string_equal(ge.msg, want);

    /* Terminate rank 1; a replacement may take the rank. */
    gpc_node_rec *list;
    size_t n;
    OK(gpc_node_list(st, cid, 0, &list, &n, err));
    assert_int_equal(n, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(list[i].rank, i);
        assert_int_equal(list[i].id, id_of[i]);
    }
    list[1].phase = GPC_PHASE_TERMINATED;
    list[1].ended_at = 500;
    OK(gpc_node_update(st, &list[1], err));
    gpc_node_list_free(list, n);
    dup = node_tmpl(cid, 1, "u-1");
    OK(gpc_node_insert(st, &dup, err));

    OK(gpc_node_list(st, cid, 0, &list, &n, err));
    assert_int_equal(n, 3);
    assert_int_equal(list[0].id, id_of[0]);
    assert_int_equal(list[1].id, dup.id);
    assert_int_equal(list[1].phase, GPC_PHASE_PENDING);
    assert_int_equal(list[2].id, id_of[2]);
    gpc_node_list_free(list, n);

    OK(gpc_node_list(st, cid, 1, &list, &n, err));
    assert_int_equal(n, 4);
    assert_int_equal(list[0].id, id_of[0]);
    assert_int_equal(list[1].id, id_of[1]); /* rank 1, older id first */
    assert_int_equal(list[1].phase, GPC_PHASE_TERMINATED);
    assert_int_equal(list[1].ended_at, 500);
    assert_int_equal(list[2].id, dup.id);
    assert_int_equal(list[3].id, id_of[2]);
    gpc_node_list_free(list, n);

    OK(gpc_node_list(st, 9999, 1, &list, &n, err));
    assert_int_equal(n, 0);
    gpc_node_list_free(list, n);
    gpc_state_close(st);
}

/* ------------------------------------------------------------------ */
/* Attempts, events, ledger                                            */

static void test_attempts(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "a");
    fixed_clock_at(1700000123);
    gpc_attempt_rec a1 = {.cluster_id = cid, .rank = 2, .provider = "aws",
                          .region = "us-west-2", .zone = "us-west-2a",
                          .instance_type = "p5.48xlarge", .spot = 1, .attempt = 1,
                          .outcome = "error", .error_code = "InsufficientInstanceCapacity",
                          .error_message = "We currently do not have sufficient capacity"};
    gpc_attempt_rec a2 = {.cluster_id = cid, .rank = 2, .provider = "aws",
                          .region = "us-east-1", .instance_type = "p5.48xlarge",
                          .attempt = 2, .outcome = "created"};
    OK(gpc_attempt_add(st, &a1, err));
    OK(gpc_attempt_add(st, &a2, err));
    sqlite3 *db = raw_open(f->state);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db,
        "SELECT cluster_id, rank, at, provider, region, instance_type, outcome, "
        "error_code, error_message FROM attempts ORDER BY id", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(s, 0), cid);
    assert_int_equal(sqlite3_column_int64(s, 1), 2);
    assert_int_equal(sqlite3_column_int64(s, 2), 1700000123);
    assert_string_equal((const char *)sqlite3_column_text(s, 3), "aws");
    assert_string_equal((const char *)sqlite3_column_text(s, 4), "us-west-2");
    assert_string_equal((const char *)sqlite3_column_text(s, 5), "p5.48xlarge");
    assert_string_equal((const char *)sqlite3_column_text(s, 6), "error");
    assert_string_equal((const char *)sqlite3_column_text(s, 7),
                        "InsufficientInstanceCapacity");
    assert_string_equal((const char *)sqlite3_column_text(s, 8),
                        "We currently do not have sufficient capacity");
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 4), "us-east-1");
    assert_string_equal((const char *)sqlite3_column_text(s, 6), "created");
    assert_string_equal((const char *)sqlite3_column_text(s, 7), "");
    assert_string_equal((const char *)sqlite3_column_text(s, 8), "");
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    s = NULL;
    /* read back through the API: zone, market and attempt number too */
    gpc_attempt_rec *list = NULL;
    size_t n = 0;
    OK(gpc_attempt_list(st, cid, &list, &n, err));
    assert_int_equal(n, 2);
    assert_string_equal(list[0].zone, "us-west-2a");
    assert_int_equal(list[0].spot, 1);
    assert_int_equal(list[0].attempt, 1);
    assert_int_equal(list[0].at, 1700000123);
    assert_string_equal(list[1].zone, "");
    assert_int_equal(list[1].spot, 0);
    assert_int_equal(list[1].attempt, 2);
    assert_string_equal(list[1].error_code, "");
    gpc_attempt_list_free(list, n);
    /* capacity misses: the latest per pool, none for another market */
    int64_t at = -1;
    OK(gpc_capacity_miss_last(st, "aws", "us-east-1", "us-east-1a", "p4d.24xlarge", 1, &at, err));
    assert_int_equal(at, 0);
    OK(gpc_capacity_miss_add(st, "aws", "us-east-1", "us-east-1a", "p4d.24xlarge", 1, 100, err));
    OK(gpc_capacity_miss_add(st, "aws", "us-east-1", "us-east-1a", "p4d.24xlarge", 1, 250, err));
    OK(gpc_capacity_miss_last(st, "aws", "us-east-1", "us-east-1a", "p4d.24xlarge", 1, &at, err));
    assert_int_equal(at, 250);
    OK(gpc_capacity_miss_last(st, "aws", "us-east-1", "us-east-1a", "p4d.24xlarge", 0, &at, err));
    assert_int_equal(at, 0);
    OK(gpc_capacity_miss_last(st, "aws", "us-east-1", "us-east-1b", "p4d.24xlarge", 1, &at, err));
    assert_int_equal(at, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    gpc_state_close(st);
}

/* Zone cooldowns: the one that lasts longest while it holds, none once
 * it ended (until is exclusive) or for another zone; and a schema 4
 * database (before zone_cooldowns) migrated to 5 keeps its rows. */
static void test_zone_cooldowns(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    insert_cluster(st, "z");
    gpc_zone_cool_rec r;
    int found = -1;
    OK(gpc_zone_cool_get(st, "aws", "us-east-1", "us-east-1a", 1000, &r, &found, err));
    assert_int_equal(found, 0);
    assert_null(r.why);
    OK(gpc_zone_cool_add(st, "aws", "us-east-1", "us-east-1a", 1000, 2800, "node z-1 (i-1) was "
                         "preempted", err));
    OK(gpc_zone_cool_add(st, "aws", "us-east-1", "us-east-1a", 1100, 1700, "no capacity for p5 "
                         "spot", err));
    OK(gpc_zone_cool_get(st, "aws", "us-east-1", "us-east-1a", 1200, &r, &found, err));
    assert_int_equal(found, 1);
    assert_int_equal(r.at, 1000);
    assert_int_equal(r.until, 2800);
    assert_string_equal(r.why, "node z-1 (i-1) was preempted");
    gpc_zone_cool_rec_free(&r);
    assert_null(r.why);
    OK(gpc_zone_cool_get(st, "aws", "us-east-1", "us-east-1a", 2800, &r, &found, err));
    assert_int_equal(found, 0);
    OK(gpc_zone_cool_get(st, "aws", "us-east-1", "us-east-1b", 1200, &r, &found, err));
    assert_int_equal(found, 0);
    OK(gpc_zone_cool_get(st, "local", "us-east-1", "us-east-1a", 1200, &r, &found, err));
    assert_int_equal(found, 0);
    gpc_state_close(st);

    /* back to schema 4, as an older gpuctl left it */
    sqlite3 *db = raw_open(f->state);
    raw_exec(db, "DROP TABLE zone_cooldowns; PRAGMA user_version = 4");
    sqlite3_close(db);
    st = open_ok(f->state);
    db = raw_open(f->state);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 5);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM zone_cooldowns"), 0);
    sqlite3_close(db);
    gpc_cluster_rec c;
    OK(gpc_cluster_get(st, "z", &c, err));
    gpc_cluster_rec_free(&c);
    OK(gpc_zone_cool_add(st, "aws", "us-east-1", "us-east-1c", 10, 20, NULL, err));
    OK(gpc_zone_cool_get(st, "aws", "us-east-1", "us-east-1c", 19, &r, &found, err));
    assert_int_equal(found, 1);
    assert_string_equal(r.why, "");
    gpc_zone_cool_rec_free(&r);
    OK(gpc_state_check(st, err));
    gpc_state_close(st);
}

static void test_events_in_order(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "e");
    int64_t other = insert_cluster(st, "f");
    const char *kinds[] = { "create", "phase", "error", "phase", "delete" };
    const char *msgs[] = { "created 2 nodes", "rank 0 running", "rank 1: boom",
                           "rank 0 succeeded", "" };
    int ranks[] = { -1, 0, 1, 0, -1 };
    for (int i = 0; i < 5; i++) {
        fixed_clock_at(1700000000 - i); /* clock going back */
        OK(gpc_event_add(st, cid, ranks[i], kinds[i], i == 4 ? NULL : msgs[i], err));
        OK(gpc_event_add(st, other, 7, "noise", "other cluster", err));
    }
    gpc_event_rec *ev;
    size_t n;
    OK(gpc_event_list(st, cid, &ev, &n, err));
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ev[i].cluster_id, cid);
        assert_int_equal(ev[i].at, 1700000000 - (int64_t)i);
        assert_int_equal(ev[i].rank, ranks[i]);
        assert_string_equal(ev[i].kind, kinds[i]);
        assert_string_equal(ev[i].message, msgs[i]);
        if (i > 0)
            assert_true(ev[i].id > ev[i - 1].id);
    }
    gpc_event_list_free(ev, n);

    OK(gpc_event_list(st, other, &ev, &n, err));
    assert_int_equal(n, 5);
    assert_int_equal(ev[0].rank, 7);
    assert_string_equal(ev[4].message, "other cluster");
    gpc_event_list_free(ev, n);

    OK(gpc_event_list(st, 12345, &ev, &n, err));
    assert_int_equal(n, 0);
    gpc_event_list_free(ev, n);
    gpc_state_close(st);
}

static void test_ledger_cost(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "l");
    int64_t other = insert_cluster(st, "m");
    gpc_node_rec n0 = node_tmpl(cid, 0, "l-0"), n1 = node_tmpl(cid, 1, "l-1");
    gpc_node_rec m0 = node_tmpl(other, 0, "m-0");
    OK(gpc_node_insert(st, &n0, err));
    OK(gpc_node_insert(st, &n1, err));
    OK(gpc_node_insert(st, &m0, err));

    double usd = -1;
    OK(gpc_ledger_cost(st, cid, 1000000, &usd, err));
    assert_true(usd == 0.0);

    const int64_t t0 = 1700000000;
    /* n0: 2 h at 2.50 = 5.00, closed. */
    OK(gpc_ledger_open(st, cid, n0.id, "aws", "g5.xlarge", 2.5, t0, err));
    OK(gpc_ledger_close(st, n0.id, t0 + 7200, err));
    /* n0 again (restarted): open, 30 min so far at 4.00 = 2.00. */
    OK(gpc_ledger_open(st, cid, n0.id, "aws", "g5.2xlarge", 4.0, t0 + 9000, err));
    /* A second open while one is open is a no-op (no double billing). */
    OK(gpc_ledger_open(st, cid, n0.id, "aws", "g5.2xlarge", 4.0, t0 + 9500, err));
    /* n1: open, 1 h 30 min so far at 0.5 = 0.75. */
    OK(gpc_ledger_open(st, cid, n1.id, "aws", "g5.xlarge", 0.5, t0 + 5400, err));
    /* another cluster's node: must not count. */
    OK(gpc_ledger_open(st, other, m0.id, "aws", "p5", 98.32, t0, err));

    const int64_t now = t0 + 10800;
    OK(gpc_ledger_cost(st, cid, now, &usd, err));
    assert_true(usd == 5.0 + 2.0 + 0.75);
    /* Closing with a stop time freezes the amount. */
    OK(gpc_ledger_close(st, n1.id, t0 + 9000, err)); /* 1 h at 0.5 */
    OK(gpc_ledger_close(st, n1.id, t0 + 99999, err)); /* nothing open: no-op */
    OK(gpc_ledger_cost(st, cid, now, &usd, err));
    assert_true(usd == 5.0 + 2.0 + 0.5);
    OK(gpc_ledger_cost(st, cid, now + 3600, &usd, err));
    assert_true(usd == 5.0 + 6.0 + 0.5);
    /* A `now` before an open entry's start counts that entry as zero. */
    OK(gpc_ledger_cost(st, cid, t0 + 7200, &usd, err));
    assert_true(usd == 5.0 + 0.0 + 0.5);

    sqlite3 *db = raw_open(f->state);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM ledger"), 4);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db,
        "SELECT cluster_id, node_id, provider, instance_type, price_hourly, start_at, "
        "stop_at FROM ledger ORDER BY id", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(s, 0), cid);
    assert_int_equal(sqlite3_column_int64(s, 1), n0.id);
    assert_string_equal((const char *)sqlite3_column_text(s, 2), "aws");
    assert_string_equal((const char *)sqlite3_column_text(s, 3), "g5.xlarge");
    assert_true(sqlite3_column_double(s, 4) == 2.5);
    assert_int_equal(sqlite3_column_int64(s, 5), t0);
    assert_int_equal(sqlite3_column_int64(s, 6), t0 + 7200);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(s, 5), t0 + 9000);
    assert_int_equal(sqlite3_column_type(s, 6), SQLITE_NULL);
    sqlite3_finalize(s);
    sqlite3_close(db);

    OK(gpc_ledger_cost(st, other, t0 + 3600, &usd, err));
    assert_true(usd == 98.32);
    gpc_state_close(st);
}

/* ------------------------------------------------------------------ */
/* Transactions                                                        */

static size_t count_events(gpc_state *st, int64_t cid)
{
    gpc_event_rec *ev;
    size_t n;
    OK(gpc_event_list(st, cid, &ev, &n, err));
    gpc_event_list_free(ev, n);
    return n;
}

static void test_transactions(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "t");
    gpc_error ge;

    /* Rolled back: nothing stays. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "gone", err));
    gpc_cluster_rec c = cluster_tmpl("t2");
    OK(gpc_cluster_insert(st, &c, err));
    gpc_state_rollback(st);
    assert_int_equal(count_events(st, cid), 0);
    gpc_error_clear(&ge);
    gpc_cluster_rec got;
    assert_int_equal(gpc_cluster_get(st, "t2", &got, &ge), GPC_ERR_NOT_FOUND);

    /* Nested begin/commit: one transaction, committed by the outermost. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "one", err));
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "two", err));
    OK(gpc_state_commit(st, err));
    sqlite3 *db = raw_open(f->state); /* another connection sees nothing yet */
    assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 0);
    OK(gpc_state_commit(st, err));
    assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 2);
    sqlite3_close(db);

    /* A failed statement inside a transaction does not end it. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "three", err));
    gpc_cluster_rec d = cluster_tmpl("t");
    gpc_error_clear(&ge);
    assert_int_equal(gpc_cluster_insert(st, &d, &ge), GPC_ERR_STATE);
    assert_string_equal(ge.msg, "cluster 't' already exists");
    OK(gpc_state_commit(st, err));
    assert_int_equal(count_events(st, cid), 3);

    /* An inner rollback dooms the whole transaction. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "four", err));
    OK(gpc_state_begin(st, err));
    gpc_state_rollback(st);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_event_add(st, cid, 0, "k", "five", &ge), GPC_ERR_STATE);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_commit(st, &ge), GPC_ERR_STATE);
    assert_non_null(strstr(ge.msg, "rolled back"));
    assert_int_equal(count_events(st, cid), 3);

    /* Usable again afterwards; commit without begin is an error. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "six", err));
    OK(gpc_state_commit(st, err));
    assert_int_equal(count_events(st, cid), 4);
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_commit(st, &ge), GPC_ERR_INTERNAL);
    gpc_state_rollback(st); /* harmless */

    /* Closing with an open transaction rolls it back. */
    OK(gpc_state_begin(st, err));
    OK(gpc_event_add(st, cid, 0, "k", "seven", err));
    gpc_state_close(st);
    st = open_ok(f->state);
    assert_int_equal(count_events(st, cid), 4);
    gpc_state_close(st);
}

static void test_check(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "c");
    OK(gpc_event_add(st, cid, -1, "create", "x", err));
    OK(gpc_state_check(st, err));

    /* A row pointing at a missing cluster (written behind our back). */
    sqlite3 *db = raw_open(f->state);
    raw_exec(db, "PRAGMA foreign_keys = OFF;"
                 "INSERT INTO events (cluster_id, at, rank, kind, message) "
                 "VALUES (4242, 1, -1, 'k', 'm')");
    sqlite3_close(db);
    gpc_error ge;
    gpc_error_clear(&ge);
    assert_int_equal(gpc_state_check(st, &ge), GPC_ERR_STATE);
    assert_non_null(strstr(ge.msg, "integrity check failed: events row"));
    assert_non_null(strstr(ge.msg, "missing clusters row"));
    gpc_state_close(st);
}

/* ------------------------------------------------------------------ */
/* Concurrency and crashes                                             */

#define WRITERS 20
#define ROUNDS 50

/* One writer process; returns the exit status (0 = every call succeeded). */
static int writer(const char *dir, int64_t cid, int me)
{
    gpc_error ge;
    gpc_error_clear(&ge);
    gpc_state *st = NULL;
    if (gpc_state_open(dir, &st, &ge)) {
        fprintf(stderr, "writer %d: open: %s\n", me, ge.msg);
        return 1;
    }
    int bad = 0;
    for (int j = 0; j < ROUNDS && !bad; j++) {
        char msg[64];
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        gpc_cluster_rec c;
        memset(&c, 0, sizeof(c));
        snprintf(msg, sizeof(msg), "writer %d round %d", me, j);
        /* Read before the first write: only BEGIN IMMEDIATE makes this safe. */
        bad = gpc_state_begin(st, &ge) ||
              gpc_node_list(st, cid, 0, &nodes, &n, &ge) ||
              gpc_event_add(st, cid, me, "write", msg, &ge);
        if (!bad && (n != WRITERS || nodes[me].rank != (uint32_t)me)) {
            snprintf(ge.msg, sizeof(ge.msg), "unexpected node list (%zu)", n);
            bad = 1;
        }
        if (!bad) {
            char ip[32];
            snprintf(ip, sizeof(ip), "10.0.%d.%d", me, j);
            gpc_node_rec *nd = &nodes[me];
            free(nd->private_ip);
            nd->private_ip = strdup(ip);
            nd->exit_code = j + 1;
            bad = gpc_node_update(st, nd, &ge) ||
                  gpc_ledger_open(st, cid, nd->id, "local", "cpu", 1.5,
                                  (int64_t)j * 3600, &ge) ||
                  gpc_ledger_close(st, nd->id, (int64_t)(j + 1) * 3600, &ge) ||
                  /* read-modify-write of a shared row: a lost update shows */
                  gpc_cluster_get_by_id(st, cid, &c, &ge);
        }
        if (!bad) {
            c.updated_at++;
            bad = gpc_cluster_update(st, &c, &ge) || gpc_state_commit(st, &ge);
        }
        gpc_cluster_rec_free(&c);
        gpc_node_list_free(nodes, n);
        if (bad) {
            fprintf(stderr, "writer %d round %d: %s\n", me, j, ge.msg);
            gpc_state_rollback(st);
        }
    }
    gpc_state_close(st);
    return bad ? 1 : 0;
}

static void test_concurrent_writers(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    gpc_cluster_rec c = cluster_tmpl("conc");
    c.updated_at = 1000;
    OK(gpc_cluster_insert(st, &c, err));
    int64_t node_ids[WRITERS];
    for (uint32_t r = 0; r < WRITERS; r++) {
        char name[32];
        snprintf(name, sizeof(name), "conc-%u", r);
        gpc_node_rec nd = node_tmpl(c.id, r, name);
        OK(gpc_node_insert(st, &nd, err));
        node_ids[r] = nd.id;
    }
    /* SQLite connections must not cross fork(): close before forking. */
    gpc_state_close(st);

    fflush(NULL);
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(writer(f->state, c.id, i));
    }
    int failed = 0;
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "writer %d: status 0x%x\n", i, status);
            failed++;
        }
    }
    assert_int_equal(failed, 0);

    st = open_ok(f->state);
    gpc_event_rec *ev;
    size_t n;
    OK(gpc_event_list(st, c.id, &ev, &n, err));
    assert_int_equal(n, WRITERS * ROUNDS);
    int next[WRITERS] = { 0 };
    for (size_t i = 0; i < n; i++) {
        assert_true(ev[i].rank >= 0 && ev[i].rank < WRITERS);
        char want[64];
        snprintf(want, sizeof(want), "writer %d round %d", ev[i].rank, next[ev[i].rank]);
        assert_string_equal(ev[i].message, want); /* each writer's in order */
        next[ev[i].rank]++;
    }
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(next[i], ROUNDS);
    gpc_event_list_free(ev, n);

    gpc_node_rec *nodes;
    OK(gpc_node_list(st, c.id, 1, &nodes, &n, err));
    assert_int_equal(n, WRITERS);
    for (int i = 0; i < WRITERS; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "10.0.%d.%d", i, ROUNDS - 1);
        assert_int_equal(nodes[i].id, node_ids[i]);
        assert_int_equal(nodes[i].exit_code, ROUNDS);
        assert_string_equal(nodes[i].private_ip, ip);
    }
    gpc_node_list_free(nodes, n);

    gpc_cluster_rec got;
    OK(gpc_cluster_get_by_id(st, c.id, &got, err));
    assert_int_equal(got.updated_at, 1000 + WRITERS * ROUNDS);
    gpc_cluster_rec_free(&got);

    double usd = 0;
    OK(gpc_ledger_cost(st, c.id, 0, &usd, err));
    assert_true(usd == 1.5 * WRITERS * ROUNDS);
    OK(gpc_state_check(st, err));
    gpc_state_close(st);
}

/* A connection that finds the write lock held waits for it (SQLite's busy
 * timeout, GPC_STATE_BUSY_MS, with no retry loop of our own): to begin a
 * transaction, and for a write outside one.  It then sees what the holder
 * committed, after it. */
static void test_lock_wait(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "held");
    gpc_state_close(st); /* no connection crosses fork() */

    for (int round = 0; round < 2; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            gpc_error ge;
            gpc_error_clear(&ge);
            gpc_state *cst = NULL;
            if (gpc_state_open(f->state, &cst, &ge) || gpc_state_begin(cst, &ge) ||
                gpc_event_add(cst, cid, 0, "hold", "holder", &ge))
                _exit(2);
            if (write(fds[1], "x", 1) != 1)
                _exit(3);
            struct timespec pause = {0, 300 * 1000000L};
            nanosleep(&pause, NULL);
            _exit(gpc_state_commit(cst, &ge) ? 4 : 0);
        }
        close(fds[1]);
        char c;
        assert_int_equal(read(fds[0], &c, 1), 1); /* the child holds the lock */
        close(fds[0]);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = open_ok(f->state);
        if (round == 0) {
            OK(gpc_state_begin(st, err));
            OK(gpc_event_add(st, cid, 1, "wait", "waiter", err));
            OK(gpc_state_commit(st, err));
        } else {
            OK(gpc_event_add(st, cid, 1, "wait", "waiter", err));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        assert_true(ms >= 200.0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);

        gpc_event_rec *ev;
        size_t n;
        OK(gpc_event_list(st, cid, &ev, &n, err));
        assert_int_equal(n, 2 * (size_t)(round + 1));
        assert_string_equal(ev[n - 2].message, "holder");
        assert_string_equal(ev[n - 1].message, "waiter");
        gpc_event_list_free(ev, n);
        gpc_state_close(st);
    }
}

static void test_killed_mid_write(void **pstate)
{
    fx *f = *pstate;
    gpc_state *st = open_ok(f->state);
    int64_t cid = insert_cluster(st, "keep");
    OK(gpc_event_add(st, cid, -1, "create", "before", err));
    gpc_state_close(st);

    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gpc_error ge;
        gpc_error_clear(&ge);
        gpc_state *cst = NULL;
        if (gpc_state_open(f->state, &cst, &ge) || gpc_state_begin(cst, &ge))
            _exit(2);
        gpc_cluster_rec pc = cluster_tmpl("partial");
        if (gpc_cluster_insert(cst, &pc, &ge))
            _exit(3);
        /* Enough data (4 MiB) that SQLite spills uncommitted pages to the WAL. */
        char big[1024];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        for (int i = 0; i < 4096; i++)
            if (gpc_event_add(cst, cid, i, "spam", big, &ge))
                _exit(4);
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    /* The write really reached the WAL file before the kill. */
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/gpuctl.db-wal", f->state);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sb.st_size > (off_t)(1 << 20));

    st = open_ok(f->state);
    OK(gpc_state_check(st, err));
    gpc_event_rec *ev;
    size_t n;
    OK(gpc_event_list(st, cid, &ev, &n, err));
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].message, "before");
    gpc_event_list_free(ev, n);
    gpc_cluster_rec *list;
    OK(gpc_cluster_list(st, 1, &list, &n, err));
    assert_int_equal(n, 1);
    assert_string_equal(list[0].name, "keep");
    gpc_cluster_list_free(list, n);

    /* And it takes writes again. */
    gpc_cluster_rec pc = cluster_tmpl("partial");
    OK(gpc_cluster_insert(st, &pc, err));
    OK(gpc_state_check(st, err));
    gpc_state_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_names),
        cmocka_unit_test(test_dir_default),
        cmocka_unit_test_setup_teardown(test_open_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_fresh_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_newer_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_disk_full, setup, teardown_shim),
        cmocka_unit_test_setup_teardown(test_cluster_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_unique_live_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_list_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_unique_and_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numbers_in_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zone_cooldowns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_mid_write, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
