/* main.c - gpuctl entry point; everything else lives in the core library. */
#include "cli.h"

#ifdef GPUCTL_TEST_HOOKS
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuctl/clock.h"
#include "gpuctl/error.h"

/* The fixed clock's time (GPUCTL_FAKE_NOW); lives as long as the process. */
static int64_t fake_now;

/*
 * Test builds only (cmake -DGPUCTL_TEST_HOOKS=ON, docs/testing.md):
 * GPUCTL_FAKE_NOW=<unix seconds> makes the clock a fixed one (clock.h):
 * it reads that time, and waiting returns at once, moving it on.  0 when
 * unset or installed; -1 (after a message) when it is not a whole number.
 */
static int install_test_clock(void)
{
    const char *v = getenv("GPUCTL_FAKE_NOW");
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long long t = strtoll(v, &end, 10);
    if (*end || errno) {
        fprintf(stderr, "gpuctl: GPUCTL_FAKE_NOW=%s is not a whole number of seconds since "
                "the epoch\n", v);
        return -1;
    }
    fake_now = (int64_t)t;
    gpc_clock c = gpc_clock_fixed(&fake_now);
    gpc_clock_set(&c);
    return 0;
}
#endif

int main(int argc, char **argv)
{
#ifdef GPUCTL_TEST_HOOKS
    if (install_test_clock() != 0)
        return gpc_exit_status(GPC_ERR_USAGE);
#endif
    return gpc_cli_main(argc, argv);
}
