/* error.c - see include/gpuctl/error.h */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuctl/error.h"

void gpc_error_clear(gpc_error *err)
{
    if (!err)
        return;
    err->code = GPC_OK;
    err->msg[0] = '\0';
    memset(&err->remote, 0, sizeof(err->remote));
}

/* Newlines and other control characters become spaces: one line each. */
static void one_line(char *s, int all_controls)
{
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r' || (all_controls && (unsigned char)*p < 0x20))
            *p = ' ';
}

static void set_msg(gpc_error *err, gpc_code code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void set_msg(gpc_error *err, gpc_code code, const char *fmt, va_list ap)
{
    err->code = code;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    one_line(err->msg, 0);
    memset(&err->remote, 0, sizeof(err->remote));
}

int gpc_fail(gpc_error *err, gpc_code code, const char *fmt, ...)
{
    if (err && err->code == GPC_OK) {
        va_list ap;
        va_start(ap, fmt);
        set_msg(err, code, fmt, ap);
        va_end(ap);
    }
    if (err && err->code != GPC_OK)
        return (int)err->code;
    return (int)code;
}

int gpc_fail_replace(gpc_error *err, gpc_code code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_msg(err, code, fmt, ap);
        va_end(ap);
    }
    return (int)code;
}

void gpc_error_remote(gpc_error *err, int http_status, const char *remote_code,
                      const char *request_id, int retryable)
{
    if (!err || err->code == GPC_OK)
        return;
    gpc_remote *r = &err->remote;
    /* the arguments may be err's own fields (details passed back) */
    char code[sizeof(r->code)], rid[sizeof(r->request_id)];
    snprintf(code, sizeof(code), "%s", remote_code ? remote_code : "");
    snprintf(rid, sizeof(rid), "%s", request_id ? request_id : "");
    r->set = 1;
    r->http_status = http_status > 0 ? http_status : 0;
    r->retryable = retryable != 0;
    memcpy(r->code, code, sizeof(code));
    memcpy(r->request_id, rid, sizeof(rid));
    one_line(r->code, 1);
    one_line(r->request_id, 1);
}

int gpc_error_wrap(gpc_error *outer, const gpc_error *inner, const char *fmt, ...)
{
    int has_inner = inner && inner->code != GPC_OK;
    gpc_code code = has_inner ? inner->code : GPC_ERR_INTERNAL;
    if (!outer)
        return (int)code;
    if (outer->code != GPC_OK)
        return (int)outer->code;
    const char *msg = has_inner ? inner->msg : "unknown error";
    int n = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        n = vsnprintf(outer->msg, sizeof(outer->msg), fmt, ap);
        va_end(ap);
        if (n < 0)
            n = 0;
        if ((size_t)n < sizeof(outer->msg))
            n += snprintf(outer->msg + n, sizeof(outer->msg) - (size_t)n, ": ");
    }
    if ((size_t)n < sizeof(outer->msg))
        snprintf(outer->msg + n, sizeof(outer->msg) - (size_t)n, "%s", msg);
    one_line(outer->msg, 0);
    outer->code = code;
    if (has_inner)
        outer->remote = inner->remote;
    else
        memset(&outer->remote, 0, sizeof(outer->remote));
    return (int)code;
}

static const struct {
    const char *name;
    int exit_status;
} codes[GPC_CODE_COUNT] = {
    [GPC_OK]              = {"ok", 0},
    [GPC_ERR_INTERNAL]    = {"internal", 1},
    [GPC_ERR_NOMEM]       = {"nomem", 1},
    [GPC_ERR_USAGE]       = {"usage", 3},
    [GPC_ERR_SPEC]        = {"spec", 4},
    [GPC_ERR_RENDER]      = {"render", 4},
    [GPC_ERR_IO]          = {"io", 5},
    [GPC_ERR_STATE]       = {"state", 5},
    [GPC_ERR_PROVIDER]    = {"provider", 6},
    [GPC_ERR_NOT_FOUND]   = {"not_found", 7},
    [GPC_ERR_PARTIAL]     = {"partial", 8},
    [GPC_ERR_LOCKED]      = {"locked", 9},
    [GPC_ERR_JOB_FAILED]  = {"job_failed", 10},
    [GPC_ERR_NODE_LOST]   = {"node_lost", 11},
    [GPC_ERR_TIMEOUT]     = {"timeout", 12},
    [GPC_ERR_STALE]       = {"stale", 13},
    [GPC_ERR_AUTH]        = {"auth", 20},
    [GPC_ERR_QUOTA]       = {"quota", 21},
    [GPC_ERR_CAPACITY]    = {"capacity", 22},
    [GPC_ERR_BUDGET]      = {"budget", 23},
    [GPC_ERR_INTERRUPTED] = {"interrupted", 130},
};

const char *gpc_code_name(gpc_code code)
{
    if ((unsigned)code >= GPC_CODE_COUNT || !codes[code].name)
        return "internal";
    return codes[code].name;
}

int gpc_exit_status(gpc_code code)
{
    if ((unsigned)code >= GPC_CODE_COUNT || !codes[code].name)
        return 1;
    return codes[code].exit_status;
}
