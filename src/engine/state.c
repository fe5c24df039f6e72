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
 * Concurrency: SQLite's busy timeout (GPC_STATE_BUSY_MS) is the only lock
 * wait.  SQLite calls it for every transaction that starts from none (WAL
 * recovery and a stale snapshot included); it skips only a read transaction
 * that turns into a write one, and every transaction here that writes
 * begins IMMEDIATE (state_sql.c).
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
 * An entry copies its node's region and market when it opens (schema 4).
 * Zone cooldowns (schema 5) are rows added, never changed: the latest
 * `until` of a zone counts.
 *
 * This file: phases, the schema, open and close, transactions; the rest
 * of the state is in the files state_db.h lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state_db.h"
#include "gpuctl/buf.h"
#include "gpuctl/util.h"

#define GPC_STATE_DB_NAME "gpuctl.db"

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

int gpc_st_phase_valid(gpc_phase p)
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
    /* 3: the seam - what a provider keeps of a cluster and of a node (a
     * Slurm job id, an operation URL): opaque JSON, '' = none */
    ("ALTER TABLE clusters ADD COLUMN provider_data TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE nodes ADD COLUMN provider_data TEXT NOT NULL DEFAULT '';"),
    /* 4: the cost ledger (gpuctl cost) - where and on which market each
     * entry was bought, kept on the entry because a node's record moves
     * on (a failover re-records it in another region or market).  Older
     * entries take their node's last record: the same place unless the
     * node was moved after the entry closed. */
    ("ALTER TABLE ledger ADD COLUMN region TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE ledger ADD COLUMN spot INTEGER NOT NULL DEFAULT 0;"
     "UPDATE ledger SET"
     "  region = COALESCE((SELECT region FROM nodes WHERE nodes.id = ledger.node_id), ''),"
     "  spot = COALESCE((SELECT spot FROM nodes WHERE nodes.id = ledger.node_id), 0);"),
    /* 5: zone cooldowns - a zone that took a node back or had no capacity,
     * passed over until `until` (spot.zone_cooldown; why: which) */
    ("CREATE TABLE zone_cooldowns ("
     "  id       INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  provider TEXT    NOT NULL,"
     "  region   TEXT    NOT NULL,"
     "  zone     TEXT    NOT NULL,"
     "  at       INTEGER NOT NULL,"
     "  until    INTEGER NOT NULL,"
     "  why      TEXT    NOT NULL DEFAULT ''"
     ");"
     "CREATE INDEX zone_cooldowns_by_zone ON zone_cooldowns (provider, region, zone, until);"),
};

#define GPC_SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

/* ------------------------------------------------------------------ */
/* Open / close                                                        */

int gpc_state_dir_default(char **out, gpc_error *err)
{
    const char *own = getenv("GPUCTL_STATE_DIR");
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    const char *base;
    const char *suffix;
    /* as GPUCTL_CONFIG_DIR and GPUCTL_CACHE_DIR: the directory itself
     * (relative to the working directory, as --state-dir); empty: unset */
    if (own && *own) {
        base = own;
        suffix = "";
    /* XDG base-dir spec: a relative XDG_STATE_HOME is invalid and ignored. */
    } else if (xdg && xdg[0] == '/') {
        base = xdg;
        suffix = "/gpuctl";
    } else if (home && *home) {
        base = home;
        suffix = "/.local/state/gpuctl";
    } else {
        return gpc_fail(err, GPC_ERR_STATE,
                        "cannot locate the state directory: none of GPUCTL_STATE_DIR, "
                        "XDG_STATE_HOME and HOME is set (use --state-dir)");
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
    if (gpc_st_prep(st, "PRAGMA user_version", &stmt, "PRAGMA user_version", err))
        return GPC_ERR_STATE;
    int rc = gpc_st_step_first(st, stmt, "PRAGMA user_version", err);
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
    if (gpc_st_begin_immediate(st, err))
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
            gpc_st_fail(st, err, what);
            goto fail;
        }
    }
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", GPC_SCHEMA_VERSION);
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        gpc_st_fail(st, err, "set schema version");
        goto fail;
    }
    return gpc_st_commit_raw(st, err);
fail:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return GPC_ERR_STATE;
}

static int set_wal(gpc_state *st, gpc_error *err)
{
    sqlite3_stmt *stmt;
    const char *what = "PRAGMA journal_mode=WAL";
    if (gpc_st_prep(st, "PRAGMA journal_mode=WAL", &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = gpc_st_step_first(st, stmt, what, err);
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
        int rc = st->db ? gpc_st_fail(st, err, "open")
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
    if (!rc && (gpc_st_exec1(&t, "PRAGMA synchronous=FULL", "PRAGMA synchronous", err) ||
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
                gpc_st_exec1(st, "PRAGMA synchronous=FULL", "PRAGMA synchronous", err) ||
                gpc_st_exec1(st, "PRAGMA foreign_keys=ON", "PRAGMA foreign_keys", err) ||
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
    if (rc && e.code == GPC_ERR_STATE && st->db && gpc_st_disk_full(st->dir, st->db) &&
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
        return gpc_st_read_only_fail(st, err);
    if (st->depth > 0) {
        if (gpc_st_write_guard(st, err))
            return GPC_ERR_STATE;
        st->depth++;
        return 0;
    }
    if (gpc_st_begin_immediate(st, err))
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
    return gpc_st_commit_raw(st, err);
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
    if (gpc_st_prep(st, "PRAGMA integrity_check", &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = gpc_st_step_first(st, stmt, what, err);
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
    if (gpc_st_prep(st, "PRAGMA foreign_key_check", &stmt, what, err))
        return GPC_ERR_STATE;
    rc = gpc_st_step_first(st, stmt, what, err);
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
