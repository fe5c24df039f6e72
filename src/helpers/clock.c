/* clock.c - the one clock (clock.h) */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "gpuctl/clock.h"

static int64_t system_now(void *ctx)
{
    (void)ctx;
    /* kept until the test hooks install a fixed clock themselves */
    const char *fake = getenv("GPUCTL_FAKE_NOW");
    if (fake && *fake)
        return strtoll(fake, NULL, 10);
    return (int64_t)time(NULL);
}

static void system_sleep(void *ctx, double s, const volatile sig_atomic_t *stop)
{
    (void)ctx;
    if (!(s > 0))
        return;
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
        *(int64_t *)ctx += (int64_t)ceil(s);
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

void gpc_sleep(double s, const volatile sig_atomic_t *stop)
{
    current.sleep(current.ctx, s, stop);
}
