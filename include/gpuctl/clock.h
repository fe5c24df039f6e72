/*
 * clock.h - the one clock of gpuctl: what time it is, and waiting.
 *
 * Everything that reads the time or waits goes through this clock: the
 * engine's timeouts, polls and records, the HTTP helper's back-off and
 * Retry-After, request signing (SigV4's X-Amz-Date), credential expiry and
 * the providers' own waits.  A test installs a clock of its own with
 * gpc_clock_set() (gpc_clock_fixed(): a fixed time that sleeping moves on),
 * so that a run is the same on every machine and no test waits for real.
 * A test build (cmake -DGPUCTL_TEST_HOOKS=ON, docs/testing.md) installs
 * gpc_clock_fixed() at start-up when GPUCTL_FAKE_NOW=<unix seconds> is set;
 * a release build reads no such variable.
 *
 * What does not go through this clock, and why:
 *   - durations measured for traces and the HTTP helper's own scheduling
 *     (CLOCK_MONOTONIC, http_now_ms): a trace reports how long a transfer
 *     really took.  The HTTP helper waits for a retry on this clock; when
 *     the clock returns sooner than the real time asked for (a test's), it
 *     moves its retries' due times on by what the clock skipped;
 *   - waiting for network traffic (curl_multi_poll) and libcurl's own
 *     connect and transfer timeouts: a socket answers in real time;
 *   - the seed of the retry jitter (CLOCK_REALTIME's nanoseconds): a seed,
 *     not a time;
 *   - the local provider's short looks (50 ms) for a node's processes to
 *     end after a signal: processes of this machine take real time to exit,
 *     and a clock that does not wait would give up on them at once;
 *   - SQLite's busy timeout: SQLite waits for a lock itself.
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
    /* Wait `s` seconds (s <= 0 or NaN: return at once).  When `stop` is
     * not NULL, a signal that arrives during the wait while *stop is
     * non-zero (its handler sets or counts it) ends the wait early; a
     * *stop already non-zero does not by itself (callers that poll after
     * an interrupt, a rollback, still wait between looks). */
    void (*sleep)(void *ctx, double s, const volatile sig_atomic_t *stop);
    void *ctx;
} gpc_clock;

/* The system clock: time(2) and nanosleep(2); the clock in use until
 * gpc_clock_set() replaces it. */
extern const gpc_clock gpc_clock_system;

/*
 * A clock that stands still at *t (seconds since the epoch) until someone
 * sleeps: sleep(s) adds s, rounded up to whole seconds (0.2 adds 1; s <= 0
 * adds nothing), to *t and returns at once, whatever `stop` says.  *t is
 * the caller's, may be changed by it between calls, and must outlive the
 * clock's use.
 */
gpc_clock gpc_clock_fixed(int64_t *t);

/* Make `c` the clock (the struct is copied; its ctx is not); NULL puts
 * the system clock back. */
void gpc_clock_set(const gpc_clock *c);

/* The clock in use (never NULL). */
const gpc_clock *gpc_clock_get(void);

/* Seconds since the Unix epoch, from the clock in use. */
int64_t gpc_now(void);

/* Seconds on the system's monotonic clock (CLOCK_MONOTONIC), with
 * fractions: for measuring how long something took, never a date; the
 * clock in use (gpc_clock_set) does not change it. */
double gpc_monotonic_s(void);

/* Wait `s` seconds on the clock in use; returns early when `stop` (may be
 * NULL) is set by a signal handler while waiting. */
void gpc_sleep(double s, const volatile sig_atomic_t *stop);

#endif /* GPUCTL_CLOCK_H */
