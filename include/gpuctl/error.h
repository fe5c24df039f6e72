/*
 * error.h - gpuctl's one error type.
 *
 * Every fallible function in gpuctl returns an int that is 0 on success or a
 * gpc_code on failure, and takes a `gpc_error *err` that it fills in with the
 * code and a one-line message carrying context (file:line:column, field name,
 * provider request id, ...).  The first failure recorded wins: outer layers
 * may add nothing once an inner layer has explained the cause (the same rule
 * curl's error buffer follows), so the message a user sees names the real
 * cause, not a vague wrapper.
 *
 * Messages never contain secrets: callers must not format credentials,
 * signatures or tokens into them.
 */
#ifndef GPUCTL_ERROR_H
#define GPUCTL_ERROR_H

#include <stddef.h>

/*
 * Error codes.  Append only; never renumber.  Each maps to a process exit
 * status through gpc_exit_status(); the mapping is the documented contract in
 * docs/exit-codes.md.
 */
typedef enum gpc_code {
    GPC_OK = 0,
    GPC_ERR_INTERNAL,   /* a bug or an unexpected library failure */
    GPC_ERR_NOMEM,      /* allocation failed or a buffer limit was hit */
    GPC_ERR_USAGE,      /* bad command line */
    GPC_ERR_SPEC,       /* the job spec is invalid (file:line:col in msg) */
    GPC_ERR_RENDER,     /* user-data cannot be rendered (too large, ...) */
    GPC_ERR_IO,         /* reading or writing a local file failed */
    GPC_ERR_STATE,      /* the local state database failed */
    GPC_ERR_PROVIDER,   /* the provider refused or failed a request */
    GPC_ERR_NOT_FOUND,  /* no such cluster / node */
    GPC_ERR_PARTIAL,    /* destroy left resources behind (still recorded) */
    GPC_ERR_JOB_FAILED, /* the job ran and rank 0 exited non-zero */
    GPC_ERR_NODE_LOST,  /* a node vanished / was preempted before the end */
    GPC_ERR_TIMEOUT,    /* max_duration or --timeout elapsed */
    GPC_ERR_INTERRUPTED,/* SIGINT/SIGTERM while waiting */
    GPC_ERR_AUTH,       /* credentials missing or rejected */
    GPC_ERR_QUOTA,      /* account quota too low */
    GPC_ERR_CAPACITY,   /* no offer fits, or no capacity after every fallback */
    GPC_ERR_BUDGET,     /* a budget cap or spot.max_price would be crossed */
    GPC_ERR_LOCKED,     /* another gpuctl holds this cluster's lock */
    GPC_ERR_STALE,      /* a saved plan no longer matches the state */
    GPC_CODE_COUNT
} gpc_code;

#define GPC_ERROR_MSG_MAX 1024

typedef struct gpc_error {
    gpc_code code;
    char msg[GPC_ERROR_MSG_MAX];
} gpc_error;

/* Reset to "no error". err may be NULL. */
void gpc_error_clear(gpc_error *err);

/*
 * Record a failure.  If err already holds an error, it is left as is (first
 * failure wins).  fmt is printf-style; the result is truncated to fit and any
 * newline is replaced by a space.  err may be NULL.  Returns `code`, so that
 * callers can write `return gpc_fail(err, GPC_ERR_IO, "...", ...);`.
 */
int gpc_fail(gpc_error *err, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Same as gpc_fail, but always replaces what err held. */
int gpc_fail_replace(gpc_error *err, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stable lower-case name of a code ("spec", "provider", ...) used in JSON. */
const char *gpc_code_name(gpc_code code);

/*
 * Process exit status for a code (docs/exit-codes.md):
 *   0 ok, 1 internal/other, 3 usage, 4 spec/render, 5 state/io,
 *   6 provider, 7 not found, 8 partial destroy, 9 locked,
 *   10 job failed, 11 node lost, 12 timeout, 13 stale plan,
 *   20 auth, 21 quota, 22 capacity, 23 budget, 130 interrupted.
 * (2 is reserved for `plan --detailed-exitcode`: changes pending.)
 */
int gpc_exit_status(gpc_code code);

#endif /* GPUCTL_ERROR_H */
