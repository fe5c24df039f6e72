/*
 * output.h - how gpuctl talks to people and scripts.
 *
 * Human output is a table on a TTY (with colour unless NO_COLOR is set or
 * TERM=dumb) and the same table without colour when piped.  `-o json` prints
 * one JSON document per command with "schema_version" (docs/cli.md); the
 * schemas live in docs/schema/.  Diagnostics go to stderr, never into JSON.
 */
#ifndef GPUCTL_OUTPUT_H
#define GPUCTL_OUTPUT_H

#include <stdio.h>

#include "gpuctl/cluster.h"
#include "gpuctl/error.h"
#include "gpuctl/log.h"

struct cJSON;

#define GPC_JSON_SCHEMA_VERSION 1

typedef enum { GPC_OUT_TABLE = 0, GPC_OUT_JSON } gpc_out_format;

typedef struct gpc_out {
    gpc_out_format format;
    int quiet;      /* -q: only errors (and JSON, when asked for) */
    int verbose;    /* -v: 1, --debug: 2 */
    int tty;        /* stdout is a terminal */
    int err_tty;    /* stderr is a terminal */
    int color;      /* colour allowed on stdout */
    int color_err;  /* escape sequences allowed on stderr (a terminal, not
                       TERM=dumb): the rewritten status line */
    int color_err_red; /* and colour there (not NO_COLOR) */
    int assume_yes; /* -y */
    gpc_settings cfg; /* the engine's settings (--state-dir, --catalog, ...) */
    gpc_log log;      /* the engine's event sink: prints to stderr per -q/-v,
                         job output to stdout */
    int status_shown; /* a live status line is on stderr */
    char status_last[512];
} gpc_out;

/* Fill from the environment: isatty, NO_COLOR, TERM; the sink prints. */
void gpc_out_init(gpc_out *o);

/*
 * Print an error as "gpuctl: error: MSG" on stderr - followed by
 * " (request id ID)" when the error has a remote request id that MSG does
 * not already show - and, in JSON mode, the JSON error document
 * {"schema_version":1,"error":{...}} (gpc_json_add_error) on stdout too.
 * Returns the exit status for err->code.
 */
int gpc_report_error(const gpc_out *o, const gpc_error *err);

/* The same with another exit status than the code's (plan
 * --detailed-exitcode exits 1 for every error); returns `status`. */
int gpc_report_error_status(const gpc_out *o, const gpc_error *err, int status);

/*
 * A confirmation answered no: not an error.  Print `what` (what was not
 * done, e.g. "apply cancelled; nothing was created") on stderr, without
 * "gpuctl: error:", and in JSON mode the error document with code "usage"
 * and that message on stdout (a script still gets one document).  Returns
 * the exit status, 3 (docs/exit-codes.md).
 */
int gpc_report_cancelled(const gpc_out *o, const char *what);

/*
 * Add to obj, under key, the JSON error object of err (docs/cli.md, "JSON
 * documents"; docs/schema/error.schema.json):
 *   code        gpc_code_name(err->code)
 *   message     err->msg
 *   exit_status exit_status
 * and, when the failure came from a remote service (err->remote.set):
 *   retryable   always (true/false)
 *   remote_code only when the service gave its own code
 *   http_status only when a reply came (not 0)
 *   request_id  only when the service gave one
 * Members without a value are left out, never null.
 */
void gpc_json_add_error(struct cJSON *obj, const char *key, const gpc_error *err,
                        int exit_status);

/* Print a cJSON document (takes ownership, adds schema_version first). */
void gpc_print_json(struct cJSON *doc);

/* Colour helpers: return the escape or "" when colour is off. */
const char *gpc_c_bold(const gpc_out *o);
const char *gpc_c_reset(const gpc_out *o);
const char *gpc_c_phase(const gpc_out *o, const char *phase);

/* A simple table: add rows of `ncols` strings, then print with aligned
 * columns (header bold on a TTY). */
typedef struct gpc_table {
    size_t ncols;
    size_t nrows;      /* including the header */
    char **cells;      /* nrows * ncols, owned */
    size_t cap;
} gpc_table;

void gpc_table_init(gpc_table *t, size_t ncols, const char *const *header);
void gpc_table_add(gpc_table *t, const char *const *row);
void gpc_table_print(const gpc_out *o, gpc_table *t, FILE *f);
void gpc_table_free(gpc_table *t);

/* "3m12s", "2h05m", "4d03h" for a number of seconds. */
void gpc_fmt_age(long long secs, char *out, size_t len);

/* Ask a yes/no question on the terminal; 1 = yes.  Without a TTY on stdin
 * returns -1 (the caller must then demand -y). */
int gpc_confirm(const gpc_out *o, const char *question);

#endif
