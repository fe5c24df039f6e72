/* buf.c - see include/gpuctl/buf.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/buf.h"

void gpc_buf_init(gpc_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void gpc_buf_free(gpc_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void gpc_buf_reset(gpc_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Make room for n more bytes plus the NUL. */
static int grow(gpc_buf *b, size_t n, gpc_error *err)
{
    if (n > b->max || b->len > b->max - n)
        return gpc_fail(err, GPC_ERR_NOMEM,
                        "buffer limit of %zu bytes exceeded", b->max);
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory (%zu bytes)", cap);
    b->data = p;
    b->cap = cap;
    return 0;
}

int gpc_buf_add(gpc_buf *b, const void *data, size_t n, gpc_error *err)
{
    int rc = grow(b, n, err);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int gpc_buf_adds(gpc_buf *b, const char *s, gpc_error *err)
{
    return gpc_buf_add(b, s, strlen(s), err);
}

int gpc_buf_vaddf(gpc_buf *b, gpc_error *err, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return gpc_fail(err, GPC_ERR_INTERNAL, "bad format string");
    int rc = grow(b, (size_t)n, err);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int gpc_buf_addf(gpc_buf *b, gpc_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = gpc_buf_vaddf(b, err, fmt, ap);
    va_end(ap);
    return rc;
}

char *gpc_buf_take(gpc_buf *b)
{
    char *p = b->data;
    if (!p)
        p = strdup("");
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

const char *gpc_buf_str(const gpc_buf *b)
{
    return b->data ? b->data : "";
}
