/*
 * clock.h - the one clock of gpuctl: what time it is, and waiting.
 *
 * Everything that reads the time or waits goes through this clock: the
 * engine's timeouts, polls and records, the HTTP helper's back-off and
 * Retry-After, request signing (SigV4's X-Amz-Date), credential expiry and
 * the providers' own waits.  A test installs a clock of its own with
 * gpc_clock_set() (gpc_clock_fixed(): a fixed time that sleeping moves on),
 * so that a run is the same on every machine and no test waits for real.
 *
 * Not thread-safe to change: set it before any thread reads it.
 */
#ifndef GPUCTL_CLOCK_H
#define GPUCTL_CLOCK_H

#include <signal.h>
#include <stdint.h>

typedef struct gpc_clock {
    /* Seconds since the Unix epoch (UTC). */
    int64_t (*now)(void *ctx);
    /* Wait `s` seconds (s <= 0: return at once).  When `stop` is not NULL
     * and *stop becomes non-zero (a signal handler sets it), return early:
     * a signal interrupts the wait and the clock checks *stop. */
    void (*sleep)(void *ctx, double s, const volatile sig_atomic_t *stop);
    void *ctx;
} gpc_clock;

/* The system clock: time(2) and nanosleep(2). */
extern const gpc_clock gpc_clock_system;

/*
 * A clock that stands still at *t (seconds since the epoch) until someone
 * sleeps: sleep(s) adds s, rounded up to whole seconds, to *t and returns
 * at once.  *t is the caller's and must outlive the clock's use.
 */
gpc_clock gpc_clock_fixed(int64_t *t);

/* Make `c` the clock (copied); NULL puts the system clock back. */
void gpc_clock_set(const gpc_clock *c);

/* The clock in use (never NULL). */
const gpc_clock *gpc_clock_get(void);

/* Seconds since the Unix epoch, from the clock in use. */
int64_t gpc_now(void);

/* Wait `s` seconds on the clock in use; returns early when `stop` (may be
 * NULL) is set by a signal handler while waiting. */
void gpc_sleep(double s, const volatile sig_atomic_t *stop);

#endif /* GPUCTL_CLOCK_H */
