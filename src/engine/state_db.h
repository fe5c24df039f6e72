/*
 * state_db.h - what the files of the state share (private to src/engine/;
 * the public interface is include/gpuctl/state.h).
 *
 *   state.c          phases, the schema and its migrations, open and close,
 *                    transactions, the integrity check
 *   state_sql.c      SQLite helpers: errors (full disk), statements,
 *                    binding and checked reading of columns
 *   state_records.c  clusters and nodes
 *   state_events.c   attempts, capacity misses, events, the ledger, the
 *                    fingerprint of a cluster's state
 */
#ifndef GPUCTL_ENGINE_STATE_DB_H
#define GPUCTL_ENGINE_STATE_DB_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "gpuctl/spec.h"
#include "gpuctl/state.h"

/* SQLite's busy timeout (sqlite3_busy_timeout): how long a statement or
 * BEGIN IMMEDIATE waits for a lock before SQLITE_BUSY, "database is
 * locked" (milliseconds). */
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

/* Ranges of the numbers read back (gpc_st_col_int). */
#define TIME_MAX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
#define RANK_MAX ((int64_t)GPC_SPEC_NODES_MAX - 1)

/* ---- state.c ----------------------------------------------------------- */

/* 1 when p is a phase gpc_phase_name knows. */
int gpc_st_phase_valid(gpc_phase p);

/* ---- state_sql.c ------------------------------------------------------- */

/* 1 when the last error of db (state directory `dir`) comes from a full
 * disk or quota. */
int gpc_st_disk_full(const char *dir, sqlite3 *db);

/* Fill err (GPC_ERR_STATE) with SQLite's last error on st and `what` (the
 * statement or step), saying so when the disk is full.  Returns
 * GPC_ERR_STATE. */
int gpc_st_fail(gpc_state *st, gpc_error *err, const char *what);

/* Prepare `sql` into *out (sqlite3_finalize).  0 or GPC_ERR_STATE.  Lock
 * waits here and below are SQLite's busy timeout (state_sql.c says why no
 * retry loop is needed). */
int gpc_st_prep(gpc_state *st, const char *sql, sqlite3_stmt **out, const char *what,
                gpc_error *err);

/* One step of a statement: SQLITE_ROW / SQLITE_DONE, else SQLite's error
 * code with err filled (and the statement reset).  The first step and the
 * later ones (the rows of a list) are the same call under two names. */
int gpc_st_step_first(gpc_state *st, sqlite3_stmt *stmt, const char *what, gpc_error *err);
int gpc_st_step_next(gpc_state *st, sqlite3_stmt *stmt, const char *what, gpc_error *err);

/* Prepare and run a statement whose rows are not read.  0 or
 * GPC_ERR_STATE. */
int gpc_st_exec1(gpc_state *st, const char *sql, const char *what, gpc_error *err);

/* BEGIN IMMEDIATE / COMMIT (a failed COMMIT rolls back).  0 or
 * GPC_ERR_STATE. */
int gpc_st_begin_immediate(gpc_state *st, gpc_error *err);
int gpc_st_commit_raw(gpc_state *st, gpc_error *err);

/* The error of a write to a state opened read-only (a full disk). */
int gpc_st_read_only_fail(gpc_state *st, gpc_error *err);

/* Checked before every write: 0, or GPC_ERR_STATE when the state is
 * read-only or the enclosing transaction was rolled back. */
int gpc_st_write_guard(gpc_state *st, gpc_error *err);

/* s, or "" for NULL. */
const char *gpc_st_nz(const char *s);

/* Bind text parameter i (1-based) to a copy of s (NULL binds ""). */
void gpc_st_bind_text(sqlite3_stmt *stmt, int i, const char *s);

/* A copy of text column i ("" for NULL); NULL (err filled) on
 * out-of-memory.  The caller frees it. */
char *gpc_st_col_dup(sqlite3_stmt *stmt, int i, gpc_error *err);

/* Column i of row (table, row id in column 0) as a phase; GPC_ERR_STATE
 * naming the row for an unknown name. */
int gpc_st_col_phase(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                     gpc_phase *out, gpc_error *err);

/* Column i as an integer in lo..hi (a REAL: a finite number in lo..hi).
 * On anything else *rc (and err) get GPC_ERR_STATE naming the table, row
 * and column, and lo is returned; nothing is checked once *rc is set, so
 * a reader checks a whole row and tests *rc once. */
int64_t gpc_st_col_int(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                       int64_t lo, int64_t hi, int *rc, gpc_error *err);
double gpc_st_col_real(gpc_state *st, sqlite3_stmt *stmt, int i, const char *table,
                       double lo, double hi, int *rc, gpc_error *err);

/* ---- state_records.c --------------------------------------------------- */

/* Make *arr (of *cap records of `size` bytes, n used) hold one more,
 * doubling it.  0 or GPC_ERR_NOMEM (*arr unchanged). */
int gpc_st_grow(void **arr, size_t *cap, size_t n, size_t size, gpc_error *err);

#endif /* GPUCTL_ENGINE_STATE_DB_H */
