/*
 * log.h - the event sink: how the engine and the providers say what they
 * do without printing.
 *
 * The engine never writes to stdout or stderr.  What it has to tell goes
 * to a gpc_log the caller hands it: the CLI's sink prints (stderr for
 * events, stdout for job output, a rewritten status line on a terminal);
 * a test's sink collects; a future daemon's would log.  A NULL sink, or a
 * sink whose emit is NULL, drops everything.
 */
#ifndef GPUCTL_LOG_H
#define GPUCTL_LOG_H

#include <stddef.h>

typedef enum gpc_log_kind {
    GPC_LOG_WARN = 0, /* something the user must see even with -q */
    GPC_LOG_INFO,     /* progress: a node created, a retry, a failover step */
    GPC_LOG_DEBUG,    /* -v: API calls, cache hits, decisions */
    GPC_LOG_STATUS,   /* the one-line state of a wait, sent every poll: a
                         terminal rewrites it in place, a pipe shows it when
                         it changes */
    GPC_LOG_STATUS_END /* the wait is over: the status line is final */
} gpc_log_kind;

typedef struct gpc_log {
    /* One event: msg is one line without its newline (borrowed for the
     * call).  For GPC_LOG_STATUS, elapsed_s is the seconds since the wait
     * began; 0 otherwise. */
    void (*emit)(void *ud, gpc_log_kind kind, long elapsed_s, const char *msg);
    /* The job's own output (a node's log), `len` bytes, not necessarily
     * whole lines; NULL drops it. */
    void (*output)(void *ud, const char *data, size_t len);
    void *ud;
    int debug; /* 1 when GPC_LOG_DEBUG events are wanted (saves formatting) */
} gpc_log;

/* printf-style events; each is one line. NULL log: nothing. */
void gpc_warn(const gpc_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpc_info(const gpc_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpc_debug(const gpc_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The status line of a wait (see GPC_LOG_STATUS). */
void gpc_status(const gpc_log *l, long elapsed_s, const char *line);
void gpc_status_end(const gpc_log *l);
/* Job output, passed through as is. */
void gpc_output(const gpc_log *l, const char *data, size_t len);
void gpc_outputf(const gpc_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GPUCTL_LOG_H */
