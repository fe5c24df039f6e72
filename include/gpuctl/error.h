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
 * A failure that came from a remote service (a provider's API, a price
 * list) also carries what that service said, apart from the message, for
 * scripts and support tickets: its own error code, the HTTP status, its
 * request id, and whether sending the same request again later may succeed
 * (gpc_remote; `-o json` prints them, docs/cli.md).  The HTTP layer fills
 * the status, request id and retry verdict; a provider adds its code.
 *
 * To pass an inner failure up with more context, there is one way:
 * gpc_error_wrap(), which keeps the inner code and remote details and puts
 * the context before the inner message.  A plain struct copy (`*err = e`)
 * passes it up unchanged where first-failure-wins is not wanted.
 *
 * Ownership: a gpc_error is a plain value (no pointers, nothing to free);
 * copy it freely.  Every string in it is NUL-terminated and truncated to
 * fit its array.
 *
 * Messages and the remote details never contain secrets: callers must not
 * format credentials, signatures or tokens into them, and must fill the
 * remote details only with what a service's error document or headers say
 * about the failure (a code, a request id), never with request contents.
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
#define GPC_ERROR_CODE_MAX 96        /* bytes of gpc_remote.code, NUL included */
#define GPC_ERROR_REQUEST_ID_MAX 128 /* bytes of gpc_remote.request_id, NUL included */

/*
 * What a remote service said about a failure.  All zero / "" when the
 * failure did not come from a request to one (a spec error, a local file).
 */
typedef struct gpc_remote {
    int set;          /* 1 when the failure came from a request to a remote
                         service: the fields below are then meaningful (each
                         may still be 0 / "" when the service did not say) */
    int http_status;  /* the last reply's HTTP status; 0 when no reply came
                         (a transport failure) */
    int retryable;    /* 1 when the same request may succeed if sent again
                         later: throttling, a 5xx other than a capacity
                         refusal, a transport failure - what gpuctl's own
                         retry rule retries, so a 1 here means the attempts
                         ran out; 0 when not (a refusal, a bad request, no
                         capacity, an oversized reply) */
    char code[GPC_ERROR_CODE_MAX];  /* the service's own error code, e.g.
                                       EC2's "InsufficientInstanceCapacity";
                                       "" when it gave none */
    char request_id[GPC_ERROR_REQUEST_ID_MAX]; /* the service's id of the
                                       request, for its support; "" when none */
} gpc_remote;

typedef struct gpc_error {
    gpc_code code;
    char msg[GPC_ERROR_MSG_MAX];
    gpc_remote remote;  /* see gpc_remote; set with gpc_error_remote() */
} gpc_error;

/* Reset to "no error" (remote details too). err may be NULL. */
void gpc_error_clear(gpc_error *err);

/*
 * Record a failure.  If err already holds an error, it is left as is (first
 * failure wins).  fmt is printf-style; the result is truncated to fit and any
 * newline is replaced by a space.  The new failure has no remote details
 * (err held none).  err may be NULL.  Returns `code` (or, when err already
 * held an error, that error's code), so that callers can write
 * `return gpc_fail(err, GPC_ERR_IO, "...", ...);`.
 */
int gpc_fail(gpc_error *err, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Same as gpc_fail, but always replaces what err held, remote details
 * included (they are cleared: they belonged to the failure replaced).
 * Returns `code`. */
int gpc_fail_replace(gpc_error *err, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Attach remote details to the failure err holds: sets err->remote.set and
 * the four fields, replacing details already attached (a provider adds its
 * error code to what the HTTP layer attached, passing the rest back as it
 * found it).  remote_code and request_id may be NULL (= ""); they are
 * copied, truncated to GPC_ERROR_CODE_MAX - 1 and GPC_ERROR_REQUEST_ID_MAX
 * - 1 bytes, with control characters replaced by spaces.  http_status < 0
 * counts as 0; retryable is taken as 0 or 1.  Does nothing when err is NULL
 * or holds no failure.
 *
 * First failure wins here too, but only the caller can tell whether its
 * gpc_fail() recorded anything: attach details only to a failure you have
 * just recorded into an error that held none (a local gpc_error, cleared
 * before the call, that you then pass up with gpc_error_wrap), never to a
 * caller's err that may hold an earlier, unrelated failure.
 */
void gpc_error_remote(gpc_error *err, int http_status, const char *remote_code,
                      const char *request_id, int retryable);

/*
 * Re-raise the inner failure `inner` into `outer` with context: the code
 * and remote details are inner's, the message is "CONTEXT: INNER MESSAGE"
 * with CONTEXT made from fmt (printf-style), or inner's message alone when
 * fmt is NULL.  The message is truncated to fit and newlines become spaces,
 * as with gpc_fail.
 *
 * First failure wins: when outer already holds a failure it is left as is.
 * An inner that holds no failure (a callee returned non-zero without saying
 * why) is recorded as GPC_ERR_INTERNAL "CONTEXT: unknown error", so that an
 * error is never lost.  inner is only read; outer and inner must not be the
 * same object.  outer may be NULL.  Returns the code outer holds (inner's,
 * or the earlier failure's), or inner's code (GPC_ERR_INTERNAL for none)
 * when outer is NULL: `return gpc_error_wrap(err, &e, "aws: %s", what);`.
 */
int gpc_error_wrap(gpc_error *outer, const gpc_error *inner, const char *fmt, ...)
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
