/* log.c - see log.h */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuctl/log.h"

static void vemit(const gpc_log *l, gpc_log_kind kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vemit(const gpc_log *l, gpc_log_kind kind, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    l->emit(l->ud, kind, 0, msg);
}

#define EMIT(l, kind, fmt)                                                                 \
    do {                                                                                   \
        if (!(l) || !(l)->emit)                                                            \
            return;                                                                        \
        va_list ap;                                                                        \
        va_start(ap, fmt);                                                                 \
        vemit(l, kind, fmt, ap);                                                           \
        va_end(ap);                                                                        \
    } while (0)

void gpc_warn(const gpc_log *l, const char *fmt, ...)
{
    EMIT(l, GPC_LOG_WARN, fmt);
}

void gpc_info(const gpc_log *l, const char *fmt, ...)
{
    EMIT(l, GPC_LOG_INFO, fmt);
}

void gpc_debug(const gpc_log *l, const char *fmt, ...)
{
    if (l && !l->debug)
        return;
    EMIT(l, GPC_LOG_DEBUG, fmt);
}

void gpc_status(const gpc_log *l, long elapsed_s, const char *line)
{
    if (l && l->emit)
        l->emit(l->ud, GPC_LOG_STATUS, elapsed_s, line);
}

void gpc_status_end(const gpc_log *l)
{
    if (l && l->emit)
        l->emit(l->ud, GPC_LOG_STATUS_END, 0, "");
}

void gpc_output(const gpc_log *l, const char *data, size_t len)
{
    if (l && l->output && len)
        l->output(l->ud, data, len);
}

void gpc_outputf(const gpc_log *l, const char *fmt, ...)
{
    if (!l || !l->output)
        return;
    va_list ap;
    va_start(ap, fmt);
    char stack[4096];
    int n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(stack)) {
        l->output(l->ud, stack, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    l->output(l->ud, big, (size_t)n);
    free(big);
}
