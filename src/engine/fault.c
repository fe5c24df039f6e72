/* fault.c - fault injection for the end-to-end tests (GPUCTL_TEST_FAULT) */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "lifecycle.h"

/*
 * Fault injection for the end-to-end tests (docs/testing.md): with
 * GPUCTL_TEST_FAULT=<point>:<rank>[:<code>], gpuctl kills itself (SIGKILL)
 * or fails at that point for that rank, so that crash recovery and the exit
 * code contract are tested for real.  Points: kill-in-create (SIGKILL
 * while the create call is in flight: gpc_lc_fault_kill_in_create),
 * kill-before-record (created at the provider, not yet recorded),
 * kill-after-record, fail-create, fail-delete.  <code> (a gpc_code name
 * such as auth or quota; default provider) is the error a failing point
 * reports, as a provider would.
 */
int gpc_lc_fault_code = GPC_ERR_PROVIDER;

int gpc_lc_fault(const char *point, uint32_t rank)
{
    const char *f = getenv("GPUCTL_TEST_FAULT");
    size_t pl = strlen(point);
    char *end;
    if (!f || strncmp(f, point, pl) != 0 || f[pl] != ':' ||
        strtoul(f + pl + 1, &end, 10) != rank)
        return 0;
    gpc_lc_fault_code = GPC_ERR_PROVIDER;
    for (int c = 1; *end == ':' && c < GPC_CODE_COUNT; c++)
        if (strcmp(end + 1, gpc_code_name((gpc_code)c)) == 0)
            gpc_lc_fault_code = c;
    if (strncmp(point, "kill", 4) == 0)
        raise(SIGKILL);
    return 1;
}

static void kill_now(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

/* kill-in-create:<rank>[:<ms>]: SIGKILL <ms> (default 300) after the
 * create of <rank> starts, while the provider's call is in flight. */
void gpc_lc_fault_kill_in_create(uint32_t rank)
{
    const char *f = getenv("GPUCTL_TEST_FAULT");
    const char *point = "kill-in-create:";
    char *end;
    if (!f || strncmp(f, point, strlen(point)) != 0 ||
        strtoul(f + strlen(point), &end, 10) != rank)
        return;
    long ms = *end == ':' ? strtol(end + 1, NULL, 10) : 300;
    struct itimerval it;
    memset(&it, 0, sizeof(it));
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    signal(SIGALRM, kill_now);
    setitimer(ITIMER_REAL, &it, NULL);
}
