/* state_sql.c - SQLite helpers of the state: errors, statements, columns
 * (state_db.h) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "state_db.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* Low-level helpers                                                   */

/*
 * Is the last error of db a full disk (or a full quota)?  SQLite reports
 * ENOSPC on a write as SQLITE_FULL, but as a plain I/O error where it
 * grows the wal-index (-shm); there the errno tells, or else the space
 * left on the file system of `dir`.
 */
int gpc_st_disk_full(const char *dir, sqlite3 *db)
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

int gpc_st_fail(gpc_state *st, gpc_error *err, const char *what)
{
    if (gpc_st_disk_full(st->dir, st->db)) {
        st->full = 1;
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: the disk holding %s is full (%s: %s); free some space "
                        "there and run the command again", st->dbpath, st->dir,
                        sqlite3_errmsg(st->db), what);
    }
    return gpc_fail(err, GPC_ERR_STATE, "state %s: %s (%s)", st->dbpath,
                    sqlite3_errmsg(st->db), what);
}

/*
 * Lock waits are SQLite's own: the busy timeout (GPC_STATE_BUSY_MS, set
 * where the connection is opened) makes a statement or BEGIN IMMEDIATE
 * wait for a lock, and covers the cases that started a transaction from
 * none: a first read or a BEGIN IMMEDIATE meeting a writer, a connection
 * that is checkpointing on close, or one running WAL recovery.  What the
 * busy handler does not cover is upgrading a read transaction to a write
 * one (SQLITE_BUSY_SNAPSHOT, or SQLITE_BUSY to avoid a deadlock); the
 * state never does that: every transaction that writes begins IMMEDIATE
 * (gpc_state_begin), and a write outside one is a transaction of its own.
 * So an SQLITE_BUSY that reaches us means the timeout passed ("database
 * is locked") and is reported like any error.
 */

int gpc_st_prep(gpc_state *st, const char *sql, sqlite3_stmt **out,
                const char *what, gpc_error *err)
{
    *out = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, out, NULL) == SQLITE_OK)
        return 0;
    gpc_st_fail(st, err, what);
    sqlite3_finalize(*out);
    *out = NULL;
    return GPC_ERR_STATE;
}

int gpc_st_step_first(gpc_state *st, sqlite3_stmt *stmt, const char *what,
                      gpc_error *err)
{
    return gpc_st_step_next(st, stmt, what, err);
}

int gpc_st_step_next(gpc_state *st, sqlite3_stmt *stmt, const char *what,
                     gpc_error *err)
{
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        gpc_st_fail(st, err, what);
        sqlite3_reset(stmt);
    }
    return rc;
}

/* Run a statement that returns no rows worth reading. */
int gpc_st_exec1(gpc_state *st, const char *sql, const char *what, gpc_error *err)
{
    sqlite3_stmt *stmt;
    if (gpc_st_prep(st, sql, &stmt, what, err))
        return GPC_ERR_STATE;
    int rc = gpc_st_step_first(st, stmt, what, err);
    sqlite3_finalize(stmt);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_st_begin_immediate(gpc_state *st, gpc_error *err)
{
    if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return gpc_st_fail(st, err, "BEGIN IMMEDIATE");
}

int gpc_st_commit_raw(gpc_state *st, gpc_error *err)
{
    if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    gpc_st_fail(st, err, "COMMIT");
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return GPC_ERR_STATE;
}

int gpc_st_read_only_fail(gpc_state *st, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_STATE,
                    "state %s: the disk holding %s is full, so the state was opened "
                    "read-only and this change cannot be recorded; free some space there "
                    "and run the command again", st->dbpath, st->dir);
}

/* Checked before every write. */
int gpc_st_write_guard(gpc_state *st, gpc_error *err)
{
    if (st->readonly)
        return gpc_st_read_only_fail(st, err);
    if (st->depth > 0 && !st->doomed && sqlite3_get_autocommit(st->db))
        st->doomed = 1; /* SQLite rolled the transaction back on an error */
    if (st->doomed)
        return gpc_fail(err, GPC_ERR_STATE,
                        "state %s: the enclosing transaction was rolled back",
                        st->dbpath);
    return 0;
}

const char *gpc_st_nz(const char *s)
{
    return s ? s : "";
}

void gpc_st_bind_text(sqlite3_stmt *stmt, int i, const char *s)
{
    sqlite3_bind_text(stmt, i, gpc_st_nz(s), -1, SQLITE_TRANSIENT);
}

/* Copy a text column ("" for NULL).  NULL on out-of-memory. */
char *gpc_st_col_dup(sqlite3_stmt *stmt, int i, gpc_error *err)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return gpc_strdup(t ? (const char *)t : "", err);
}

int gpc_st_col_phase(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
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

static void col_bad(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                    const char *what, int *rc, gpc_error *err)
{
    const unsigned char *t = sqlite3_column_text(stmt, i);
    *rc = gpc_fail(err, GPC_ERR_STATE, "state %s: %s row %lld: %s: '%.40s' %s", st->dbpath,
                   table, (long long)sqlite3_column_int64(stmt, 0),
                   sqlite3_column_name(stmt, i), t ? (const char *)t : "NULL", what);
}

int64_t gpc_st_col_int(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
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

double gpc_st_col_real(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
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
