/*
 * state.c - see include/gpuctl/state.h
 *
 * One SQLite database (gpuctl.db) per state directory, in WAL mode.
 *
 * Durability: synchronous=FULL.  In WAL mode NORMAL keeps the database
 * consistent but may lose the last commits on power loss; the rows written
 * here record resources that cost money at a provider (instance ids, ledger
 * entries), and losing the record of a created instance would leave it
 * running and unbilled in our books.  Writes are rare (a few per command), so
 * an fsync per commit costs nothing noticeable.
 *
 * Concurrency: sqlite3_busy_timeout covers lock waits; on top of it every
 * statement run outside an explicit transaction, and every BEGIN IMMEDIATE,
 * is retried on SQLITE_BUSY until GPC_STATE_BUSY_MS have passed, because
 * SQLite returns SQLITE_BUSY without calling the busy handler in some cases
 * (another connection running WAL recovery, a snapshot that went stale).
 * Retrying is safe there: a statement that failed with SQLITE_BUSY changed
 * nothing.
 *
 * Transactions: gpc_state_begin nests by counting; only the outermost begin
 * and commit talk to SQLite.  A rollback at any depth rolls back the whole
 * transaction; until the outermost commit/rollback the handle refuses writes
 * and the outermost commit reports the failure.
 *
 * Schema: versioned by PRAGMA user_version; pending migrations are applied in
 * one BEGIN IMMEDIATE transaction, so concurrent first runs are safe.  Phases
 * are stored as their names (gpc_phase_name) and validated in C on write and
 * read (no CHECK constraint, so a new phase needs no table rebuild).  The
 * version is read before anything writes, so a database of a newer gpuctl
 * is refused untouched.
 *
 * Creation: a new database is built whole (schema, WAL) as gpuctl.db.new
 * under a lock on the state directory and renamed into place; an empty
 * gpuctl.db is therefore never one being made, and is refused.
 *
 * Full disk: errors that come from it (SQLITE_FULL, or an I/O error with
 * ENOSPC/EDQUOT or no space left) say so.  A caller that only reads may
 * then get a read-only handle (GPC_STATE_READ_ONLY_OK).
 *
 * Ledger: at most one open entry (stop_at IS NULL) per node; opening another
 * while one is open is a no-op (keeps the first start), so a resumed command
 * cannot bill a node twice.  Closing a node with no open entry is a no-op.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/spec.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"

#define GPC_STATE_DB_NAME "gpuctl.db"
#define GPC_STATE_BUSY_MS 10000

struct gpc_state {
    sqlite3 *db;
    char *dir;    /* as given */
    char *dbpath; /* dir/gpuctl.db */
    int depth;    /* gpc_state_begin nesting */
    int doomed;   /* rolled back inside a nested transaction */
    int full;     /* an error said the disk is full */
    int readonly; /* opened read-only (GPC_STATE_READ_ONLY_OK) */
};

/* ------------------------------------------------------------------ */
/* Phases                                                              */

static const char *const phase_names[GPC_PHASE_COUNT] = {
    "pending", "booting", "running", "succeeded",
    "failed", "preempted", "terminated",
};

const char *gpc_phase_name(gpc_phase p)
{
    if ((int)p < 0 || p >= GPC_PHASE_COUNT)
        return "unknown";
    return phase_names[p];
}

int gpc_phase_parse(const char *name, gpc_phase *out)
{
    if (!name)
        return -1;
    for (int i = 0; i < GPC_PHASE_COUNT; i++) {
        if (strcmp(name, phase_names[i]) == 0) {
            *out = (gpc_phase)i;
            return 0;
        }
    }
    return -1;
}

static int phase_valid(gpc_phase p)
{
    return (int)p >= 0 && p < GPC_PHASE_COUNT;
}

/* ------------------------------------------------------------------ */
/* Schema                                                              */

/* migrations[i] takes user_version i to i + 1.  Append only. */
static const char *const migrations[] = {
    /* 1: initial schema */
    "CREATE TABLE clusters ("
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name         TEXT    NOT NULL CHECK (name <> ''),"
    "  uid          TEXT    NOT NULL DEFAULT '',"
    "  provider     TEXT    NOT NULL DEFAULT '',"
    "  spec_hash    TEXT    NOT NULL DEFAULT '',"
    "  spec_json    TEXT    NOT NULL DEFAULT '',"
    "  spec_path    TEXT    NOT NULL DEFAULT '',"
    "  nodes        INTEGER NOT NULL DEFAULT 0,"
    "  rdzv_port    INTEGER NOT NULL DEFAULT 0,"
    "  phase        TEXT    NOT NULL DEFAULT 'pending',"
    "  exit_code    INTEGER NOT NULL DEFAULT -1,"
    "  created_at   INTEGER NOT NULL,"
    "  updated_at   INTEGER NOT NULL,"
    "  destroyed_at INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE UNIQUE INDEX clusters_live_name ON clusters(name)"
    "  WHERE destroyed_at = 0;"
    "CREATE TABLE nodes ("
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  cluster_id    INTEGER NOT NULL REFERENCES clusters(id),"
    "  rank          INTEGER NOT NULL,"
    "  name          TEXT    NOT NULL DEFAULT '',"
    "  provider      TEXT    NOT NULL DEFAULT '',"
    "  provider_id   TEXT    NOT NULL DEFAULT '',"
    "  client_token  TEXT    NOT NULL DEFAULT '',"
    "  region        TEXT    NOT NULL DEFAULT '',"
    "  zone          TEXT    NOT NULL DEFAULT '',"
    "  instance_type TEXT    NOT NULL DEFAULT '',"
    "  spot          INTEGER NOT NULL DEFAULT 0,"
    "  private_ip    TEXT    NOT NULL DEFAULT '',"
    "  price_hourly  REAL    NOT NULL DEFAULT 0,"
    "  phase         TEXT    NOT NULL DEFAULT 'pending',"
    "  exit_code     INTEGER NOT NULL DEFAULT -1,"
    "  created_at    INTEGER NOT NULL,"
    "  started_at    INTEGER NOT NULL DEFAULT 0,"
    "  ended_at      INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE UNIQUE INDEX nodes_live_rank ON nodes(cluster_id, rank)"
    "  WHERE phase <> 'terminated';"
    "CREATE INDEX nodes_by_cluster ON nodes(cluster_id, rank, id);"
    "CREATE TABLE attempts ("
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  cluster_id    INTEGER NOT NULL REFERENCES clusters(id),"
    "  rank          INTEGER NOT NULL,"
    "  at            INTEGER NOT NULL,"
    "  provider      TEXT    NOT NULL DEFAULT '',"
    "  region        TEXT    NOT NULL DEFAULT '',"
    "  instance_type TEXT    NOT NULL DEFAULT '',"
    "  outcome       TEXT    NOT NULL DEFAULT '',"
    "  error_code    TEXT    NOT NULL DEFAULT '',"
    "  error_message TEXT    NOT NULL DEFAULT ''"
    ");"
    "CREATE INDEX attempts_by_cluster ON attempts(cluster_id, id);"
    "CREATE TABLE events ("
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  cluster_id INTEGER NOT NULL REFERENCES clusters(id),"
    "  at         INTEGER NOT NULL,"
    "  rank       INTEGER NOT NULL DEFAULT -1,"
    "  kind       TEXT    NOT NULL DEFAULT '',"
    "  message    TEXT    NOT NULL DEFAULT ''"
    ");"
    "CREATE INDEX events_by_cluster ON events(cluster_id, id);"
    "CREATE TABLE ledger ("
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  cluster_id    INTEGER NOT NULL REFERENCES clusters(id),"
    "  node_id       INTEGER NOT NULL REFERENCES nodes(id),"
    "  provider      TEXT    NOT NULL DEFAULT '',"
    "  instance_type TEXT    NOT NULL DEFAULT '',"
    "  price_hourly  REAL    NOT NULL DEFAULT 0,"
    "  start_at      INTEGER NOT NULL,"
    "  stop_at       INTEGER"
    ");"
    "CREATE INDEX ledger_by_cluster ON ledger(cluster_id);"
    "CREATE UNIQUE INDEX ledger_open_node ON ledger(node_id)"
    "  WHERE stop_at IS NULL;",
    /* 2: failover - an attempt's zone, market and number; capacity misses */
    "ALTER TABLE attempts ADD COLUMN zone TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE attempts ADD COLUMN spot INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE attempts ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE capacity_misses ("
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  provider      TEXT    NOT NULL,"
    "  region        TEXT    NOT NULL,"
    "  zone          TEXT    NOT NULL DEFAULT '',"
    "  instance_type TEXT    NOT NULL,"
    "  spot          INTEGER NOT NULL DEFAULT 0,"
    "  at            INTEGER NOT NULL"
    ");"
    "CREATE INDEX capacity_misses_by_pool ON capacity_misses"
    "  (provider, region, zone, instance_type, spot, at);",
};

#define GPC_SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

/* ------------------------------------------------------------------ */
/* Low-level helpers                                                   */

/*
 * Is the last error of db a full disk (or a full quota)?  SQLite reports
 * ENOSPC on a write as SQLITE_FULL, but as a plain I/O error where it
 * grows the wal-index (-shm); there the errno tells, or else the space
 * left on the file system of `dir`.
 */
static int disk_full(const char *dir, sqlite3 *db)
{
    int x = db ? sqlite3_extended_errcode(db) : SQLITE_OK;
    if ((x & 0xff) == SQLITE_FULL)
        return 1;
    if ((x & 0xff) != SQLITE_IOERR)
        return 0;
    int e = sqlite3_system_errno(db);
    if (e == ENOSPC || e == EDQUOT)
        return 1;
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0)
        return 0;
    double blocks = geteuid() == 0 ? (double)vfs.f_bfree : (double)vfs.f_bavail;
    return blocks * (double)vfs.f_frsize < 65536.0; /* less than a wal-index */
}

static int st_fail(gpc_state *st, gpc_error *err, const char *what)
{
    if (disk_full(st->dir, st->db)) {
        st->full = 1;
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: the disk holding %s is full (%s: %s); free some space "
                        "there and run the command again", st->dbpath, st->dir,
                        sqlite3_errmsg(st->db), what);
    }
    return gpc_fail(err, GPC_ERR_STATE, "state %s: %s (%s)", st->dbpath,
                    sqlite3_errmsg(st->db), what);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Sleep before the next try after SQLITE_BUSY; returns 0 when the deadline
 * has passed (give up).  The pause grows from 1 ms to 50 ms with some jitter
 * so that competing processes do not retry in lock step.
 */
static int busy_backoff(int64_t deadline, int *tries)
{
    int64_t now = mono_ms();
    if (now >= deadline)
        return 0;
    int ms = 1 << (*tries < 5 ? *tries : 5); /* 1..32 */
    ms += (int)(((unsigned)getpid() * 2654435761u + (unsigned)*tries * 40503u) % 19u);
    if (now + ms > deadline)
        ms = (int)(deadline - now);
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    (*tries)++;
    return 1;
}

static int is_busy(int rc)
{
    return (rc & 0xff) == SQLITE_BUSY;
}

/* Prepare, retrying SQLITE_BUSY (reading the schema may need a lock). */
static int prep(gpc_state *st, const char *sql, sqlite3_stmt **out,
                const char *what, gpc_error *err)
{
    int64_t deadline = mono_ms() + GPC_STATE_BUSY_MS;
    int tries = 0;
    int rc;
    for (;;) {
        *out = NULL;
        rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);
        if (rc == SQLITE_OK)
            return 0;
        if (!is_busy(rc) || !busy_backoff(deadline, &tries))
            break;
    }
    st_fail(st, err, what);
    sqlite3_finalize(*out);
    *out = NULL;
    return GPC_ERR_STATE;
}

/*
 * First step of a statement.  Outside an explicit transaction a
 * SQLITE_BUSY is retried (the statement did nothing); inside one it is an
 * error.  Returns SQLITE_ROW / SQLITE_DONE, or the error code after filling
 * err.
 */
static int step_first(gpc_state *st, sqlite3_stmt *stmt, const char *what,
                      gpc_error *err)
{
    int64_t deadline = mono_ms() + GPC_STATE_BUSY_MS;
    int tries = 0;
    int rc;
    for (;;) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE)
            return rc;
        if (!is_busy(rc) || st->depth > 0 || !sqlite3_get_autocommit(st->db) ||
            !busy_backoff(deadline, &tries))
            break;
        sqlite3_reset(stmt);
    }
    st_fail(st, err, what);
    sqlite3_reset(stmt);
    return rc;
}

/* Later steps (rows of a list): no retry. */
static int step_next(gpc_state *st, sqlite3_stmt *stmt, const char *what,
                     gpc_error *err)
{
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        st_fail(st, err, what);
        sqlite3_reset(stmt);
    }
    return rc;
}

/* Run a statement that returns no rows worth reading, with busy retry. */
static int exec1(gpc_state *st, const char *sql, const char *what, gpc_error *err)
{
    sqlite3_stmt *stmt;
    if (prep(st, sql, &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = step_first(st, stmt, what, err);
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

/* BEGIN IMMEDIATE with a retry loop on top of the busy handler. */
static int begin_immediate(gpc_state *st, gpc_error *err)
{
    int64_t deadline = mono_ms() + GPC_STATE_BUSY_MS;
    int tries = 0;
    for (;;) {
        int rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return 0;
        if (!is_busy(rc) || !busy_backoff(deadline, &tries))
            return st_fail(st, err, "BEGIN IMMEDIATE");
    }
}

static int commit_raw(gpc_state *st, gpc_error *err)
{
    int64_t deadline = mono_ms() + GPC_STATE_BUSY_MS;
    int tries = 0;
    for (;;) {
        int rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return 0;
        if (!is_busy(rc) || sqlite3_get_autocommit(st->db) ||
            !busy_backoff(deadline, &tries)) {
            st_fail(st, err, "COMMIT");
            if (!sqlite3_get_autocommit(st->db))
                sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            return GPC_ERR_STATE;
        }
    }
}

static int read_only_fail(gpc_state *st, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_STATE,
                    "state %s: the disk holding %s is full, so the state was opened "
                    "read-only and this change cannot be recorded; free some space there "
                    "and run the command again", st->dbpath, st->dir);
}

/* Checked before every write. */
static int write_guard(gpc_state *st, gpc_error *err)
{
    if (st->readonly)
        return read_only_fail(st, err);
    if (st->depth > 0 && !st->doomed && sqlite3_get_autocommit(st->db))
        st->doomed = 1; /* SQLite rolled the transaction back on an error */
    if (st->doomed)
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: the enclosing transaction was rolled back",
                        st->dbpath);
    return 0;
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

static void bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
    sqlite3_bind_text(stmt, i, nz(s), -1, SQLITE_TRANSIENT);
}

/* Copy a text column ("" for NULL).  NULL on out-of-memory. */
static char *col_dup(sqlite3_stmt *stmt, int i, gpc_error *err)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return gpc_strdup(t ? (const char *)t : "", err);
}

static int col_phase(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                     gpc_phase *out, gpc_error *err)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    if (gpc_phase_parse(t ? (const char *)t : "", out) != 0)
        return gpc_fail(err, GPC_ERR_STATE, "state %s: unknown phase '%s' in %s row %lld",
                        st->dbpath, t ? (const char *)t : "", table,
                        (long long)sqlite3_column_int64(stmt, 0));
    return 0;
}

/*
 * Numbers read back are checked like anything else that comes from a file:
 * an integer column must hold an integer in its range, a REAL column a
 * finite number in its range.  A row that fails (a damaged database, one
 * written by hand or by another program) is refused naming the table, the
 * row id and the column; nothing of it is used.  The first failure is kept
 * in *rc, so that a reader can check a whole row and test once.
 */
#define TIME_MAX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
#define RANK_MAX ((int64_t)GPC_SPEC_NODES_MAX - 1)

static void col_bad(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                    const char *what, int *rc, gpc_error *err)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    *rc = gpc_fail(err, GPC_ERR_STATE, "state %s: %s row %lld: %s: '%.40s' %s", st->dbpath,
                   table, (long long)sqlite3_column_int64(stmt, 0),
                   sqlite3_column_name(stmt, i), t ? (const char *)t : "NULL", what);
}

static int64_t col_int(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                       int64_t lo, int64_t hi, int *rc, gpc_error *err)
{
    if (*rc)
        return lo;
    char what[96];
    if (sqlite3_column_type(stmt, i) != SQLITE_INTEGER) {
        col_bad(st, stmt, i, table, "is not an integer", rc, err);
        return lo;
    }
    int64_t v = sqlite3_column_int64(stmt, i);
    if (v >= lo && v <= hi)
        return v;
    snprintf(what, sizeof(what), "is out of range (%lld..%lld)", (long long)lo, (long long)hi);
    col_bad(st, stmt, i, table, what, rc, err);
    return lo;
}

static double col_real(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                       double lo, double hi, int *rc, gpc_error *err)
{
    if (*rc)
        return lo;
    char what[96];
    int type = sqlite3_column_type(stmt, i);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) {
        col_bad(st, stmt, i, table, "is not a number", rc, err);
        return lo;
    }
    double v = sqlite3_column_double(stmt, i);
    if (v >= lo && v <= hi)
        return v;
    snprintf(what, sizeof(what), "is out of range (%.15g..%.15g)", lo, hi);
    col_bad(st, stmt, i, table, what, rc, err);
    return lo;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                        */

int gpc_state_dir_default(char **out, gpc_error *err)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    const char *base;
    const char *suffix;
    /* XDG base-dir spec: a relative XDG_STATE_HOME is invalid and ignored. */
    if (xdg && xdg[0] == '/') {
        base = xdg;
        suffix = "/gpuctl";
    } else if (home && *home) {
        base = home;
        suffix = "/.local/state/gpuctl";
    } else {
        return gpc_fail(err, GPC_ERR_STATE,
                        "cannot locate the state directory: neither XDG_STATE_HOME "
                        "nor HOME is set (use --state-dir)");
    }
    size_t n = strlen(base) + strlen(suffix) + 1;
    char *p = malloc(n);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    snprintf(p, n, "%s%s", base, suffix);
    *out = p;
    return 0;
}

/* Create the database file 0600 (umask cannot loosen or tighten it). */
static int create_db_file(const char *path, gpc_error *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "state %s: %s", path, strerror(errno));
    int rc = 0;
    if (fchmod(fd, 0600) != 0)
        rc = gpc_fail(err, GPC_ERR_IO, "state %s: chmod: %s", path, strerror(errno));
    close(fd);
    return rc;
}

/* SQLite gives -wal/-shm the database file's mode; make sure of it. */
static void chmod_siblings(const gpc_state *st)
{
    static const char *const sfx[] = { "-wal", "-shm" };
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        if (snprintf(p, sizeof(p), "%s%s", st->dbpath, sfx[i]) >= (int)sizeof(p))
            continue;
        struct stat sb;
        if (stat(p, &sb) == 0 && (sb.st_mode & 0777) != 0600 && sb.st_uid == geteuid())
            (void)chmod(p, 0600);
    }
}

/* Remove a database that was never handed out, and its companions. */
static void unlink_db(const char *path)
{
    static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
        if (snprintf(p, sizeof(p), "%s%s", path, sfx[i]) < (int)sizeof(p))
            (void)unlink(p);
}

static int user_version(gpc_state *st, int *out, gpc_error *err)
{
    sqlite3_stmt *stmt;
    if (prep(st, "PRAGMA user_version", &stmt, "PRAGMA user_version", err))
        return GPC_ERR_STATE;
    int rc = step_first(st, stmt, "PRAGMA user_version", err);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW ? 0 : GPC_ERR_STATE;
}

static int too_new(gpc_state *st, int v, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_STATE,
                    "state %s: schema version %d is newer than this gpuctl supports (%d); "
                    "the file was left as it is: use the newer gpuctl that wrote it",
                    st->dbpath, v, GPC_SCHEMA_VERSION);
}

/*
 * Read the schema version before anything writes: a database of a newer
 * gpuctl is refused untouched (not even switched to WAL).  Without
 * `can_migrate` (read-only) an older schema is refused too.
 */
static int check_version(gpc_state *st, int can_migrate, gpc_error *err)
{
    int v = 0;
    if (user_version(st, &v, err))
        return GPC_ERR_STATE;
    if (v > GPC_SCHEMA_VERSION || v < 0)
        return too_new(st, v, err);
    if (!can_migrate && v != GPC_SCHEMA_VERSION)
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: schema version %d needs an upgrade to %d, which cannot "
                        "be written now", st->dbpath, v, GPC_SCHEMA_VERSION);
    return 0;
}

static int migrate(gpc_state *st, gpc_error *err)
{
    int v = 0;
    if (user_version(st, &v, err))
        return GPC_ERR_STATE;
    if (v == GPC_SCHEMA_VERSION)
        return 0;
    if (v > GPC_SCHEMA_VERSION || v < 0)
        return too_new(st, v, err);
    if (begin_immediate(st, err))
        return GPC_ERR_STATE;
    /* Another process may have migrated while we waited for the lock. */
    if (user_version(st, &v, err))
        goto fail;
    if (v > GPC_SCHEMA_VERSION || v < 0) {
        too_new(st, v, err);
        goto fail;
    }
    for (; v < GPC_SCHEMA_VERSION; v++) {
        char *msg = NULL;
        if (sqlite3_exec(st->db, migrations[v], NULL, NULL, &msg) != SQLITE_OK) {
            sqlite3_free(msg);
            char what[64];
            snprintf(what, sizeof(what), "migration to version %d", v + 1);
            st_fail(st, err, what);
            goto fail;
        }
    }
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", GPC_SCHEMA_VERSION);
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        st_fail(st, err, "set schema version");
        goto fail;
    }
    return commit_raw(st, err);
fail:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return GPC_ERR_STATE;
}

static int set_wal(gpc_state *st, gpc_error *err)
{
    sqlite3_stmt *stmt;
    const char *what = "PRAGMA journal_mode=WAL";
    if (prep(st, "PRAGMA journal_mode=WAL", &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = step_first(st, stmt, what, err);
    int ok = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *m = sqlite3_column_text(stmt, 0);
        ok = m && strcmp((const char *)m, "wal") == 0;
        if (!ok)
            gpc_fail(err, GPC_ERR_STATE,
                     "state %s: cannot use WAL journal mode (got '%s'); is the "
                     "state directory on a network file system?",
                     st->dbpath, m ? (const char *)m : "");
    }
    sqlite3_finalize(stmt);
    return ok ? 0 : GPC_ERR_STATE;
}

/* Open st->db on `path` (a file name, or a URI with SQLITE_OPEN_URI). */
static int db_open(gpc_state *st, const char *path, int flags, gpc_error *err)
{
    if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
        int rc = st->db ? st_fail(st, err, "open")
                        : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        sqlite3_close_v2(st->db);
        st->db = NULL;
        return rc;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, GPC_STATE_BUSY_MS);
    return 0;
}

/*
 * Make a new database at st->dbpath: built whole (schema, WAL mode) as
 * gpuctl.db.new, then renamed into place, so that gpuctl.db never exists
 * half-made and an empty gpuctl.db always means lost content.  The caller
 * holds the lock on the state directory (dfd).
 */
static int create_db(gpc_state *st, int dfd, gpc_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.new", st->dbpath) >= (int)sizeof(tmp))
        return gpc_fail(err, GPC_ERR_STATE, "state %s: path too long", st->dbpath);
    unlink_db(tmp); /* left by a gpuctl killed here */
    int rc = create_db_file(tmp, err);
    if (rc)
        return rc;
    gpc_state t = {.dir = st->dir, .dbpath = st->dbpath};
    rc = db_open(&t, tmp, SQLITE_OPEN_READWRITE, err);
    if (!rc && (exec1(&t, "PRAGMA synchronous=FULL", "PRAGMA synchronous", err) ||
                migrate(&t, err) || set_wal(&t, err)))
        rc = GPC_ERR_STATE;
    if (t.db && sqlite3_close(t.db) != SQLITE_OK && !rc)
        rc = gpc_fail(err, GPC_ERR_STATE, "state %s: cannot close the new database",
                      st->dbpath);
    if (!rc && rename(tmp, st->dbpath) != 0)
        rc = gpc_fail(err, GPC_ERR_IO, "state %s: rename: %s", st->dbpath, strerror(errno));
    if (!rc)
        (void)fsync(dfd);
    else
        unlink_db(tmp);
    st->full |= t.full;
    return rc;
}

static int empty_db(const gpc_state *st, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_STATE,
                    "state %s is empty (0 bytes): the clusters it recorded are unknown "
                    "(lost to a full disk, a truncation or a bad copy?), and gpuctl will "
                    "not start a new state over it. Restore the file from a backup if "
                    "you have one. Otherwise its nodes may still be running and billing: "
                    "find them at each provider by the tag gpuctl:cluster and delete them "
                    "there (docs/cli.md, 'The state database', says how for each "
                    "provider); then move the file aside to start a new state: mv %s "
                    "%s.empty", st->dbpath, st->dbpath, st->dbpath);
}

/*
 * The database file, made when missing.  A missing or empty file is
 * looked at again under a lock on the state directory, which a gpuctl
 * making the database holds until the database is in place: an empty
 * file seen under the lock is not one being made, and is refused.
 */
static int ensure_db(gpc_state *st, gpc_error *err)
{
    struct stat sb;
    if (stat(st->dbpath, &sb) == 0 && sb.st_size > 0)
        return 0;
    int dfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return gpc_fail(err, GPC_ERR_IO, "state %s: %s", st->dir, strerror(errno));
    int rc = 0;
    while (flock(dfd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            rc = gpc_fail(err, GPC_ERR_IO, "state %s: lock: %s", st->dir, strerror(errno));
            break;
        }
    }
    if (!rc) {
        if (stat(st->dbpath, &sb) == 0)
            rc = sb.st_size > 0 ? 0 : empty_db(st, err);
        else if (errno == ENOENT)
            rc = create_db(st, dfd, err);
        else
            rc = gpc_fail(err, GPC_ERR_IO, "state %s: %s", st->dbpath, strerror(errno));
    }
    close(dfd); /* and the lock with it */
    return rc;
}

/* The normal way in: read-write, WAL, migrated. */
static int open_rw(gpc_state *st, gpc_error *err)
{
    int rc = db_open(st, st->dbpath, SQLITE_OPEN_READWRITE, err);
    if (!rc && (check_version(st, 1, err) || set_wal(st, err) ||
                exec1(st, "PRAGMA synchronous=FULL", "PRAGMA synchronous", err) ||
                exec1(st, "PRAGMA foreign_keys=ON", "PRAGMA foreign_keys", err) ||
                migrate(st, err)))
        rc = GPC_ERR_STATE;
    if (!rc)
        chmod_siblings(st);
    return rc;
}

/* Does the WAL hold nothing (missing or empty file)? */
static int wal_empty(const gpc_state *st)
{
    char p[PATH_MAX];
    struct stat sb;
    if (snprintf(p, sizeof(p), "%s-wal", st->dbpath) >= (int)sizeof(p))
        return 0;
    if (stat(p, &sb) != 0)
        return errno == ENOENT;
    return sb.st_size == 0;
}

/*
 * Read-only, for a disk too full for the read-write way: SQLite reads a
 * WAL database read-only when its wal-index (-shm) exists, else only as
 * "immutable" (no locks, no WAL), which is exact when the WAL is empty:
 * then no other gpuctl has the database open, and none can write to the
 * full disk.
 */
static int open_ro(gpc_state *st, gpc_error *err)
{
    sqlite3_close_v2(st->db);
    st->db = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = db_open(st, st->dbpath, SQLITE_OPEN_READONLY, &e);
    if (!rc)
        rc = check_version(st, 0, &e);
    if (rc && e.code == GPC_ERR_STATE && st->db && disk_full(st->dir, st->db) &&
        wal_empty(st)) {
        sqlite3_close_v2(st->db);
        st->db = NULL;
        gpc_buf uri;
        gpc_buf_init(&uri, PATH_MAX * 3 + 64);
        rc = gpc_buf_adds(&uri, "file:", err);
        for (const char *p = st->dbpath; !rc && *p; p++)
            rc = *p == '%' || *p == '?' || *p == '#'
                     ? gpc_buf_addf(&uri, err, "%%%02x", (unsigned char)*p)
                     : gpc_buf_add(&uri, p, 1, err);
        if (!rc)
            rc = gpc_buf_adds(&uri, "?mode=ro&immutable=1", err);
        gpc_error_clear(&e);
        if (!rc)
            rc = db_open(st, gpc_buf_str(&uri), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, &e);
        gpc_buf_free(&uri);
        if (!rc)
            rc = check_version(st, 0, &e);
    }
    if (rc)
        return gpc_fail(err, e.code ? e.code : (gpc_code)rc, "%s", e.msg);
    st->readonly = 1;
    return 0;
}

int gpc_state_open(const char *dir, gpc_state **out, gpc_error *err)
{
    return gpc_state_open_ex(dir, 0, out, err);
}

int gpc_state_open_ex(const char *dir, unsigned flags, gpc_state **out, gpc_error *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return gpc_fail(err, GPC_ERR_STATE, "state directory is empty");
    if (gpc_mkdir_p(dir, 0700, err))
        return GPC_ERR_IO;
    gpc_state *st = calloc(1, sizeof(*st));
    if (!st)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t n = strlen(dir) + sizeof("/" GPC_STATE_DB_NAME);
    st->dir = gpc_strdup(dir, err);
    st->dbpath = malloc(n);
    if (!st->dir || !st->dbpath) {
        gpc_state_close(st);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    snprintf(st->dbpath, n, "%s/%s", dir, GPC_STATE_DB_NAME);

    gpc_error e;
    gpc_error_clear(&e);
    int rc = ensure_db(st, &e);
    if (!rc)
        rc = open_rw(st, &e);
    /* A full disk: a command that only reads may still read. */
    if (rc && st->full && (flags & GPC_STATE_READ_ONLY_OK) && st->db) {
        gpc_error ro;
        gpc_error_clear(&ro);
        if (open_ro(st, &ro) == 0)
            rc = 0;
    }
    if (rc) {
        gpc_state_close(st);
        return gpc_fail(err, e.code ? e.code : (gpc_code)rc, "%s", e.msg);
    }
    *out = st;
    return 0;
}

int gpc_state_read_only(const gpc_state *st)
{
    return st && st->readonly;
}

void gpc_state_close(gpc_state *st)
{
    if (!st)
        return;
    if (st->db) {
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(st->db);
    }
    free(st->dir);
    free(st->dbpath);
    free(st);
}

const char *gpc_state_path(const gpc_state *st)
{
    return st->dir;
}

/* ------------------------------------------------------------------ */
/* Transactions                                                        */

int gpc_state_begin(gpc_state *st, gpc_error *err)
{
    if (st->readonly)
        return read_only_fail(st, err);
    if (st->depth > 0) {
        if (write_guard(st, err))
            return GPC_ERR_STATE;
        st->depth++;
        return 0;
    }
    if (begin_immediate(st, err))
        return GPC_ERR_STATE;
    st->depth = 1;
    st->doomed = 0;
    return 0;
}

int gpc_state_commit(gpc_state *st, gpc_error *err)
{
    if (st->depth <= 0)
        return gpc_fail(err, GPC_ERR_INTERNAL,
                        "state %s: commit without a transaction", st->dbpath);
    if (--st->depth > 0)
        return 0;
    if (st->doomed) {
        st->doomed = 0;
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: transaction was rolled back", st->dbpath);
    }
    if (sqlite3_get_autocommit(st->db))
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: transaction was rolled back after an error",
                        st->dbpath);
    return commit_raw(st, err);
}

void gpc_state_rollback(gpc_state *st)
{
    if (!st || st->depth <= 0)
        return;
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    if (--st->depth > 0)
        st->doomed = 1;
    else
        st->doomed = 0;
}

int gpc_state_check(gpc_state *st, gpc_error *err)
{
    sqlite3_stmt *stmt;
    const char *what = "PRAGMA integrity_check";
    if (prep(st, "PRAGMA integrity_check", &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = step_first(st, stmt, what, err);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(stmt);
        return GPC_ERR_STATE;
    }
    const unsigned char *t = sqlite3_column_text(stmt, 0);
    if (!t || strcmp((const char *)t, "ok") != 0) {
        gpc_fail(err, GPC_ERR_STATE, "state %s: integrity check failed: %s",
                 st->dbpath, t ? (const char *)t : "(no result)");
        sqlite3_finalize(stmt);
        return GPC_ERR_STATE;
    }
    sqlite3_finalize(stmt);

    what = "PRAGMA foreign_key_check";
    if (prep(st, "PRAGMA foreign_key_check", &stmt, what, err))
        return GPC_ERR_STATE;
    rc = step_first(st, stmt, what, err);
    if (rc == SQLITE_ROW) {
        const unsigned char *tbl = sqlite3_column_text(stmt, 0);
        const unsigned char *parent = sqlite3_column_text(stmt, 2);
        gpc_fail(err, GPC_ERR_STATE,
                 "state %s: integrity check failed: %s row %lld refers to a "
                 "missing %s row", st->dbpath, tbl ? (const char *)tbl : "?",
                 (long long)sqlite3_column_int64(stmt, 1),
                 parent ? (const char *)parent : "?");
    }
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

/* ------------------------------------------------------------------ */
/* Clusters                                                            */

#define CLUSTER_COLS "id, name, uid, provider, spec_hash, spec_json, spec_path, " \
                     "nodes, rdzv_port, phase, exit_code, created_at, updated_at, " \
                     "destroyed_at"

void gpc_cluster_rec_free(gpc_cluster_rec *rec)
{
    if (!rec)
        return;
    free(rec->name);
    free(rec->uid);
    free(rec->provider);
    free(rec->spec_hash);
    free(rec->spec_json);
    free(rec->spec_path);
    memset(rec, 0, sizeof(*rec));
}

void gpc_cluster_list_free(gpc_cluster_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        gpc_cluster_rec_free(&recs[i]);
    free(recs);
}

static int read_cluster(gpc_state *st, sqlite3_stmt *s, gpc_cluster_rec *r,
                        gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *t = "clusters";
    int rc = 0;
    r->id = col_int(st, s, 0, t, 1, INT64_MAX, &rc, err);
    r->name = col_dup(s, 1, err);
    r->uid = col_dup(s, 2, err);
    r->provider = col_dup(s, 3, err);
    r->spec_hash = col_dup(s, 4, err);
    r->spec_json = col_dup(s, 5, err);
    r->spec_path = col_dup(s, 6, err);
    r->nodes = (uint32_t)col_int(st, s, 7, t, 0, GPC_SPEC_NODES_MAX, &rc, err);
    r->rdzv_port = (uint32_t)col_int(st, s, 8, t, 0, 65535, &rc, err);
    if (!rc)
        rc = col_phase(st, s, 9, t, &r->phase, err);
    r->exit_code = (int)col_int(st, s, 10, t, -1, 255, &rc, err);
    r->created_at = col_int(st, s, 11, t, 0, TIME_MAX, &rc, err);
    r->updated_at = col_int(st, s, 12, t, 0, TIME_MAX, &rc, err);
    r->destroyed_at = col_int(st, s, 13, t, 0, TIME_MAX, &rc, err);
    if (!rc && (!r->name || !r->uid || !r->provider || !r->spec_hash ||
                !r->spec_json || !r->spec_path))
        rc = GPC_ERR_NOMEM;
    if (rc)
        gpc_cluster_rec_free(r);
    return rc;
}

/* Bind the fields shared by insert and update as ?1..?13. */
static void bind_cluster(sqlite3_stmt *s, const gpc_cluster_rec *r)
{
    bind_text(s, 1, r->name);
    bind_text(s, 2, r->uid);
    bind_text(s, 3, r->provider);
    bind_text(s, 4, r->spec_hash);
    bind_text(s, 5, r->spec_json);
    bind_text(s, 6, r->spec_path);
    sqlite3_bind_int64(s, 7, r->nodes);
    sqlite3_bind_int64(s, 8, r->rdzv_port);
    bind_text(s, 9, gpc_phase_name(r->phase));
    sqlite3_bind_int(s, 10, r->exit_code);
    sqlite3_bind_int64(s, 11, r->created_at);
    sqlite3_bind_int64(s, 12, r->updated_at);
    sqlite3_bind_int64(s, 13, r->destroyed_at);
}

/* After a failed step (err already holds the SQLite message). */
static int cluster_write_fail(int rc, const gpc_cluster_rec *r, gpc_error *err)
{
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return gpc_fail_replace(err, GPC_ERR_STATE, "cluster '%s' already exists",
                                nz(r->name));
    return GPC_ERR_STATE;
}

static int cluster_validate(gpc_state *st, const gpc_cluster_rec *r, gpc_error *err)
{
    if (!r->name || !*r->name)
        return gpc_fail(err, GPC_ERR_STATE, "state %s: cluster name is empty", st->dbpath);
    if (!phase_valid(r->phase))
        return gpc_fail(err, GPC_ERR_STATE, "state %s: invalid phase %d for cluster '%s'",
                        st->dbpath, (int)r->phase, r->name);
    return 0;
}

int gpc_cluster_insert(gpc_state *st, gpc_cluster_rec *rec, gpc_error *err)
{
    if (write_guard(st, err) || cluster_validate(st, rec, err))
        return GPC_ERR_STATE;
    if (rec->created_at == 0)
        rec->created_at = gpc_now();
    if (rec->updated_at == 0)
        rec->updated_at = rec->created_at;
    const char *what = "insert cluster";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO clusters (name, uid, provider, spec_hash, spec_json, "
                 "spec_path, nodes, rdzv_port, phase, exit_code, created_at, "
                 "updated_at, destroyed_at) VALUES "
                 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_cluster(s, rec);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return cluster_write_fail(rc, rec, err);
    rec->id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

int gpc_cluster_update(gpc_state *st, const gpc_cluster_rec *rec, gpc_error *err)
{
    if (write_guard(st, err) || cluster_validate(st, rec, err))
        return GPC_ERR_STATE;
    const char *what = "update cluster";
    sqlite3_stmt *s;
    if (prep(st, "UPDATE clusters SET name = ?1, uid = ?2, provider = ?3, "
                 "spec_hash = ?4, spec_json = ?5, spec_path = ?6, nodes = ?7, "
                 "rdzv_port = ?8, phase = ?9, exit_code = ?10, created_at = ?11, "
                 "updated_at = ?12, destroyed_at = ?13 WHERE id = ?14",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_cluster(s, rec);
    sqlite3_bind_int64(s, 14, rec->id);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return cluster_write_fail(rc, rec, err);
    if (sqlite3_changes(st->db) == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "cluster id %lld not found",
                        (long long)rec->id);
    return 0;
}

static int cluster_get1(gpc_state *st, const char *sql, const char *name, int64_t id,
                        gpc_cluster_rec *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *what = "get cluster";
    sqlite3_stmt *s;
    if (prep(st, sql, &s, what, err))
        return GPC_ERR_STATE;
    if (name)
        bind_text(s, 1, name);
    else
        sqlite3_bind_int64(s, 1, id);
    int rc = step_first(st, s, what, err);
    int ret;
    if (rc == SQLITE_ROW)
        ret = read_cluster(st, s, out, err);
    else if (rc == SQLITE_DONE)
        ret = name ? gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster named '%s'", name)
                   : gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster with id %lld",
                              (long long)id);
    else
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    return ret;
}

int gpc_cluster_get(gpc_state *st, const char *name, gpc_cluster_rec *out,
                    gpc_error *err)
{
    return cluster_get1(st, "SELECT " CLUSTER_COLS " FROM clusters "
                            "WHERE name = ?1 AND destroyed_at = 0",
                        nz(name), 0, out, err);
}

int gpc_cluster_get_by_id(gpc_state *st, int64_t id, gpc_cluster_rec *out,
                          gpc_error *err)
{
    return cluster_get1(st, "SELECT " CLUSTER_COLS " FROM clusters WHERE id = ?1",
                        NULL, id, out, err);
}

/* Grow an array of `size`-byte records to hold one more. */
static int grow(void **arr, size_t *cap, size_t n, size_t size, gpc_error *err)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

int gpc_cluster_list(gpc_state *st, int all, gpc_cluster_rec **out, size_t *n,
                     gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list clusters";
    sqlite3_stmt *s;
    if (prep(st, "SELECT " CLUSTER_COLS " FROM clusters "
                 "WHERE ?1 OR destroyed_at = 0 ORDER BY name, id",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int(s, 1, all ? 1 : 0);
    gpc_cluster_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        if ((ret = read_cluster(st, s, &arr[cnt], err)) != 0)
            break;
        cnt++;
        rc = step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_cluster_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */

#define NODE_COLS "id, cluster_id, rank, name, provider, provider_id, client_token, " \
                  "region, zone, instance_type, spot, private_ip, price_hourly, "    \
                  "phase, exit_code, created_at, started_at, ended_at"

void gpc_node_rec_free(gpc_node_rec *rec)
{
    if (!rec)
        return;
    free(rec->name);
    free(rec->provider);
    free(rec->provider_id);
    free(rec->client_token);
    free(rec->region);
    free(rec->zone);
    free(rec->instance_type);
    free(rec->private_ip);
    memset(rec, 0, sizeof(*rec));
}

void gpc_node_list_free(gpc_node_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        gpc_node_rec_free(&recs[i]);
    free(recs);
}

static int read_node(gpc_state *st, sqlite3_stmt *s, gpc_node_rec *r, gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *t = "nodes";
    int rc = 0;
    r->id = col_int(st, s, 0, t, 1, INT64_MAX, &rc, err);
    r->cluster_id = col_int(st, s, 1, t, 1, INT64_MAX, &rc, err);
    r->rank = (uint32_t)col_int(st, s, 2, t, 0, RANK_MAX, &rc, err);
    r->name = col_dup(s, 3, err);
    r->provider = col_dup(s, 4, err);
    r->provider_id = col_dup(s, 5, err);
    r->client_token = col_dup(s, 6, err);
    r->region = col_dup(s, 7, err);
    r->zone = col_dup(s, 8, err);
    r->instance_type = col_dup(s, 9, err);
    r->spot = (int)col_int(st, s, 10, t, 0, 1, &rc, err);
    r->private_ip = col_dup(s, 11, err);
    r->price_hourly = col_real(st, s, 12, t, 0, GPC_CATALOG_PRICE_MAX, &rc, err);
    if (!rc)
        rc = col_phase(st, s, 13, t, &r->phase, err);
    r->exit_code = (int)col_int(st, s, 14, t, -1, 255, &rc, err);
    r->created_at = col_int(st, s, 15, t, 0, TIME_MAX, &rc, err);
    r->started_at = col_int(st, s, 16, t, 0, TIME_MAX, &rc, err);
    r->ended_at = col_int(st, s, 17, t, 0, TIME_MAX, &rc, err);
    if (!rc && (!r->name || !r->provider || !r->provider_id || !r->client_token ||
                !r->region || !r->zone || !r->instance_type || !r->private_ip))
        rc = GPC_ERR_NOMEM;
    if (rc)
        gpc_node_rec_free(r);
    return rc;
}

/* Bind the fields shared by insert and update as ?1..?17. */
static void bind_node(sqlite3_stmt *s, const gpc_node_rec *r)
{
    sqlite3_bind_int64(s, 1, r->cluster_id);
    sqlite3_bind_int64(s, 2, r->rank);
    bind_text(s, 3, r->name);
    bind_text(s, 4, r->provider);
    bind_text(s, 5, r->provider_id);
    bind_text(s, 6, r->client_token);
    bind_text(s, 7, r->region);
    bind_text(s, 8, r->zone);
    bind_text(s, 9, r->instance_type);
    sqlite3_bind_int(s, 10, r->spot ? 1 : 0);
    bind_text(s, 11, r->private_ip);
    sqlite3_bind_double(s, 12, r->price_hourly);
    bind_text(s, 13, gpc_phase_name(r->phase));
    sqlite3_bind_int(s, 14, r->exit_code);
    sqlite3_bind_int64(s, 15, r->created_at);
    sqlite3_bind_int64(s, 16, r->started_at);
    sqlite3_bind_int64(s, 17, r->ended_at);
}

static int node_write_fail(int rc, const gpc_node_rec *r, gpc_error *err)
{
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return gpc_fail_replace(err, GPC_ERR_STATE,
                                "node rank %u of cluster id %lld already exists",
                                (unsigned)r->rank, (long long)r->cluster_id);
    return GPC_ERR_STATE;
}

static int node_validate(gpc_state *st, const gpc_node_rec *r, gpc_error *err)
{
    if (!phase_valid(r->phase))
        return gpc_fail(err, GPC_ERR_STATE, "state %s: invalid phase %d for node '%s'",
                        st->dbpath, (int)r->phase, nz(r->name));
    return 0;
}

int gpc_node_insert(gpc_state *st, gpc_node_rec *rec, gpc_error *err)
{
    if (write_guard(st, err) || node_validate(st, rec, err))
        return GPC_ERR_STATE;
    if (rec->created_at == 0)
        rec->created_at = gpc_now();
    const char *what = "insert node";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO nodes (cluster_id, rank, name, provider, provider_id, "
                 "client_token, region, zone, instance_type, spot, private_ip, "
                 "price_hourly, phase, exit_code, created_at, started_at, ended_at) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                 "?14, ?15, ?16, ?17)",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_node(s, rec);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return node_write_fail(rc, rec, err);
    rec->id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

int gpc_node_update(gpc_state *st, const gpc_node_rec *rec, gpc_error *err)
{
    if (write_guard(st, err) || node_validate(st, rec, err))
        return GPC_ERR_STATE;
    const char *what = "update node";
    sqlite3_stmt *s;
    if (prep(st, "UPDATE nodes SET cluster_id = ?1, rank = ?2, name = ?3, "
                 "provider = ?4, provider_id = ?5, client_token = ?6, region = ?7, "
                 "zone = ?8, instance_type = ?9, spot = ?10, private_ip = ?11, "
                 "price_hourly = ?12, phase = ?13, exit_code = ?14, created_at = ?15, "
                 "started_at = ?16, ended_at = ?17 WHERE id = ?18",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_node(s, rec);
    sqlite3_bind_int64(s, 18, rec->id);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return node_write_fail(rc, rec, err);
    if (sqlite3_changes(st->db) == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "node id %lld not found",
                        (long long)rec->id);
    return 0;
}

int gpc_node_list(gpc_state *st, int64_t cluster_id, int include_terminated,
                  gpc_node_rec **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list nodes";
    sqlite3_stmt *s;
    if (prep(st, "SELECT " NODE_COLS " FROM nodes WHERE cluster_id = ?1 "
                 "AND (?2 OR phase <> 'terminated') ORDER BY rank, id",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int(s, 2, include_terminated ? 1 : 0);
    gpc_node_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        if ((ret = read_node(st, s, &arr[cnt], err)) != 0)
            break;
        cnt++;
        rc = step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_node_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Attempts and events                                                 */

int gpc_attempt_add(gpc_state *st, const gpc_attempt_rec *a, gpc_error *err)
{
    if (write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "record attempt";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO attempts (cluster_id, rank, at, provider, region, "
                 "instance_type, outcome, error_code, error_message, zone, spot, attempt) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, a->cluster_id);
    sqlite3_bind_int64(s, 2, a->rank);
    sqlite3_bind_int64(s, 3, a->at ? a->at : gpc_now());
    bind_text(s, 4, a->provider);
    bind_text(s, 5, a->region);
    bind_text(s, 6, a->instance_type);
    bind_text(s, 7, a->outcome);
    bind_text(s, 8, a->error_code);
    bind_text(s, 9, a->error_message);
    bind_text(s, 10, a->zone);
    sqlite3_bind_int(s, 11, a->spot ? 1 : 0);
    sqlite3_bind_int64(s, 12, a->attempt);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_attempt_list(gpc_state *st, int64_t cluster_id, gpc_attempt_rec **out, size_t *n,
                     gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list attempts";
    sqlite3_stmt *s;
    if (prep(st, "SELECT id, cluster_id, rank, at, provider, region, zone, instance_type, "
                 "spot, attempt, outcome, error_code, error_message FROM attempts "
                 "WHERE cluster_id = ?1 ORDER BY id",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    gpc_attempt_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        gpc_attempt_rec *a = &arr[cnt];
        memset(a, 0, sizeof(*a));
        const char *t = "attempts";
        a->id = col_int(st, s, 0, t, 1, INT64_MAX, &ret, err);
        a->cluster_id = col_int(st, s, 1, t, 1, INT64_MAX, &ret, err);
        a->rank = (uint32_t)col_int(st, s, 2, t, 0, RANK_MAX, &ret, err);
        a->at = col_int(st, s, 3, t, 0, TIME_MAX, &ret, err);
        a->provider = col_dup(s, 4, err);
        a->region = col_dup(s, 5, err);
        a->zone = col_dup(s, 6, err);
        a->instance_type = col_dup(s, 7, err);
        a->spot = (int)col_int(st, s, 8, t, 0, 1, &ret, err);
        a->attempt = (uint32_t)col_int(st, s, 9, t, 0, UINT32_MAX, &ret, err);
        a->outcome = col_dup(s, 10, err);
        a->error_code = col_dup(s, 11, err);
        a->error_message = col_dup(s, 12, err);
        cnt++; /* counted even when a copy failed, so the free below sees it */
        if (ret)
            break;
        if (!a->provider || !a->region || !a->zone || !a->instance_type || !a->outcome ||
            !a->error_code || !a->error_message) {
            ret = GPC_ERR_NOMEM;
            break;
        }
        rc = step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_attempt_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

void gpc_attempt_list_free(gpc_attempt_rec *recs, size_t n)
{
    for (size_t i = 0; recs && i < n; i++) {
        /* the const is for callers filling a record to add; lists own theirs */
        free((char *)recs[i].provider);
        free((char *)recs[i].region);
        free((char *)recs[i].zone);
        free((char *)recs[i].instance_type);
        free((char *)recs[i].outcome);
        free((char *)recs[i].error_code);
        free((char *)recs[i].error_message);
    }
    free(recs);
}

int gpc_capacity_miss_add(gpc_state *st, const char *provider, const char *region,
                          const char *zone, const char *instance_type, int spot, int64_t at,
                          gpc_error *err)
{
    if (write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "record capacity miss";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO capacity_misses (provider, region, zone, instance_type, spot, at) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_text(s, 1, provider);
    bind_text(s, 2, region);
    bind_text(s, 3, zone);
    bind_text(s, 4, instance_type);
    sqlite3_bind_int(s, 5, spot ? 1 : 0);
    sqlite3_bind_int64(s, 6, at);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_capacity_miss_last(gpc_state *st, const char *provider, const char *region,
                           const char *zone, const char *instance_type, int spot,
                           int64_t *at, gpc_error *err)
{
    *at = 0;
    const char *what = "read capacity misses";
    sqlite3_stmt *s;
    if (prep(st, "SELECT MAX(at) FROM capacity_misses WHERE provider = ?1 AND region = ?2 "
                 "AND zone = ?3 AND instance_type = ?4 AND spot = ?5",
             &s, what, err))
        return GPC_ERR_STATE;
    bind_text(s, 1, provider);
    bind_text(s, 2, region);
    bind_text(s, 3, zone);
    bind_text(s, 4, instance_type);
    sqlite3_bind_int(s, 5, spot ? 1 : 0);
    int rc = step_first(st, s, what, err), bad = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        *at = sqlite3_column_int64(s, 0);
        if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || *at < 0 || *at > TIME_MAX) {
            const unsigned char *t = sqlite3_column_text(s, 0);
            bad = gpc_fail(err, GPC_ERR_STATE, "state %s: capacity_misses of %s %s %s: at: "
                           "'%.40s' is not a time (0..%lld)", st->dbpath, provider, region,
                           instance_type, t ? (const char *)t : "", (long long)TIME_MAX);
            *at = 0;
        }
    }
    sqlite3_finalize(s);
    if (bad)
        return bad;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_event_add(gpc_state *st, int64_t cluster_id, int rank,
                  const char *kind, const char *message, gpc_error *err)
{
    if (write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "add event";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO events (cluster_id, at, rank, kind, message) "
                 "VALUES (?1, ?2, ?3, ?4, ?5)",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, gpc_now());
    sqlite3_bind_int(s, 3, rank);
    bind_text(s, 4, kind);
    bind_text(s, 5, message);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

void gpc_event_list_free(gpc_event_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(recs[i].kind);
        free(recs[i].message);
    }
    free(recs);
}

int gpc_event_list(gpc_state *st, int64_t cluster_id,
                   gpc_event_rec **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list events";
    sqlite3_stmt *s;
    if (prep(st, "SELECT id, cluster_id, at, rank, kind, message FROM events "
                 "WHERE cluster_id = ?1 ORDER BY id",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    gpc_event_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        gpc_event_rec *e = &arr[cnt];
        const char *t = "events";
        e->id = col_int(st, s, 0, t, 1, INT64_MAX, &ret, err);
        e->cluster_id = col_int(st, s, 1, t, 1, INT64_MAX, &ret, err);
        e->at = col_int(st, s, 2, t, 0, TIME_MAX, &ret, err);
        e->rank = (int)col_int(st, s, 3, t, -1, RANK_MAX, &ret, err);
        e->kind = col_dup(s, 4, err);
        e->message = col_dup(s, 5, err);
        cnt++; /* counted even when a copy failed, so the free below sees it */
        if (ret)
            break;
        if (!e->kind || !e->message) {
            ret = GPC_ERR_NOMEM;
            break;
        }
        rc = step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_event_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Ledger                                                              */

int gpc_ledger_open(gpc_state *st, int64_t cluster_id, int64_t node_id,
                    const char *provider, const char *instance_type,
                    double price_hourly, int64_t start_at, gpc_error *err)
{
    if (write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "open ledger entry";
    sqlite3_stmt *s;
    if (prep(st, "INSERT INTO ledger (cluster_id, node_id, provider, instance_type, "
                 "price_hourly, start_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                 "ON CONFLICT (node_id) WHERE stop_at IS NULL DO NOTHING",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, node_id);
    bind_text(s, 3, provider);
    bind_text(s, 4, instance_type);
    sqlite3_bind_double(s, 5, price_hourly);
    sqlite3_bind_int64(s, 6, start_at);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_ledger_close(gpc_state *st, int64_t node_id, int64_t stop_at, gpc_error *err)
{
    if (write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "close ledger entry";
    sqlite3_stmt *s;
    if (prep(st, "UPDATE ledger SET stop_at = ?2 "
                 "WHERE node_id = ?1 AND stop_at IS NULL",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, node_id);
    sqlite3_bind_int64(s, 2, stop_at);
    int rc = step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_ledger_cost(gpc_state *st, int64_t cluster_id, int64_t now,
                    double *usd, gpc_error *err)
{
    *usd = 0.0;
    const char *what = "ledger cost";
    sqlite3_stmt *s;
    /* An open entry that started after `now` (clock skew) counts as zero. */
    if (prep(st, "SELECT TOTAL(MAX(COALESCE(stop_at, ?2) - start_at, 0) / 3600.0 "
                 "* price_hourly) FROM ledger WHERE cluster_id = ?1",
             &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, now);
    int rc = step_first(st, s, what, err);
    if (rc == SQLITE_ROW)
        *usd = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW && !(*usd >= 0 && *usd <= DBL_MAX)) {
        /* prices and times out of range in the ledger's rows */
        double got = *usd;
        *usd = 0;
        return gpc_fail(err, GPC_ERR_STATE, "state %s: ledger of cluster id %lld: the cost is "
                        "not a finite number >= 0 (got %g)", st->dbpath, (long long)cluster_id,
                        got);
    }
    return rc == SQLITE_ROW ? 0 : GPC_ERR_STATE;
}
