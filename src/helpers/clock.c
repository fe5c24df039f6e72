/* clock.c - the one clock (clock.h) */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "gpuctl/clock.h"

/* The longest wait, s (about 31 million years): keeps the conversions to
 * time_t and int64_t defined. */
#define MAX_WAIT_S 1e15

static int64_t system_now(void *ctx)
{
    (void)ctx;
    return (int64_t)time(NULL);
}

static void system_sleep(void *ctx, double s, const volatile sig_atomic_t *stop)
{
    (void)ctx;
    if (!(s > 0))
        return;
    if (s > MAX_WAIT_S)
        s = MAX_WAIT_S;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !(stop && *stop))
        ;
}

const gpc_clock gpc_clock_system = {system_now, system_sleep, NULL};

static int64_t fixed_now(void *ctx)
{
    return *(int64_t *)ctx;
}

static void fixed_sleep(void *ctx, double s, const volatile sig_atomic_t *stop)
{
    (void)stop;
    if (s > 0)
        *(int64_t *)ctx += (int64_t)ceil(s < MAX_WAIT_S ? s : MAX_WAIT_S);
}

gpc_clock gpc_clock_fixed(int64_t *t)
{
    gpc_clock c = {fixed_now, fixed_sleep, t};
    return c;
}

static gpc_clock current = {system_now, system_sleep, NULL};

void gpc_clock_set(const gpc_clock *c)
{
    current = c ? *c : gpc_clock_system;
}

const gpc_clock *gpc_clock_get(void)
{
    return &current;
}

int64_t gpc_now(void)
{
    return current.now(current.ctx);
}

double gpc_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gpc_sleep(double s, const volatile sig_atomic_t *stop)
{
    current.sleep(current.ctx, s, stop);
}
