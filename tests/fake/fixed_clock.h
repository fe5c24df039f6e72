/*
 * fixed_clock.h - a fixed clock (include/gpuctl/clock.h) for unit tests
 * (header-only; static inline).
 *
 * fixed_clock_at(t) makes gpuctl's clock stand at t (seconds since the
 * epoch): gpc_now() answers t until something sleeps, and a sleep of s
 * seconds returns at once and moves the time on by s rounded up to whole
 * seconds.  fixed_clock_now() is where it stands; gpc_clock_set(NULL) puts
 * the system clock back (aws_env_reset() does too).
 */
#ifndef GPUCTL_TESTS_FAKE_FIXED_CLOCK_H
#define GPUCTL_TESTS_FAKE_FIXED_CLOCK_H

#include <stdint.h>

#include "gpuctl/clock.h"

static int64_t fixed_clock_t; /* the fixed clock's time, one per test program */

static inline void fixed_clock_at(int64_t t)
{
    fixed_clock_t = t;
    gpc_clock c = gpc_clock_fixed(&fixed_clock_t);
    gpc_clock_set(&c);
}

static inline int64_t fixed_clock_now(void)
{
    return fixed_clock_t;
}

#endif /* GPUCTL_TESTS_FAKE_FIXED_CLOCK_H */
