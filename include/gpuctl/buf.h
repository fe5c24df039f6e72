/*
 * buf.h - a growable byte buffer with a declared maximum size.
 *
 * Every buffer says how large it may ever grow; an append past that limit
 * fails with GPC_ERR_NOMEM and leaves the buffer as it was.  The data is
 * always NUL-terminated (the NUL is not counted in len), so text buffers can
 * be used as C strings.
 */
#ifndef GPUCTL_BUF_H
#define GPUCTL_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "gpuctl/error.h"

/* Limits, in bytes, for the buffers gpuctl keeps. */
#define GPC_BUF_SCRIPT_MAX   (1u << 20)  /* a rendered bootstrap / user-data */
#define GPC_BUF_FILE_MAX     (8u << 20)  /* a job spec or template file read */
#define GPC_BUF_LINE_MAX     (64u << 10) /* one formatted line / message */

typedef struct gpc_buf {
    char *data;    /* NULL until the first append; owned by the buffer */
    size_t len;    /* bytes used, excluding the trailing NUL */
    size_t cap;    /* bytes allocated */
    size_t max;    /* the most len may ever be */
} gpc_buf;

/* Initialise an empty buffer that may grow to `max` bytes. */
void gpc_buf_init(gpc_buf *b, size_t max);

/* Release the memory; the buffer is empty (and reusable) afterwards. */
void gpc_buf_free(gpc_buf *b);

/* Forget the contents but keep the allocation. */
void gpc_buf_reset(gpc_buf *b);

/* Append n bytes.  Returns 0 or GPC_ERR_NOMEM (err filled). */
int gpc_buf_add(gpc_buf *b, const void *data, size_t n, gpc_error *err);

/* Append a NUL-terminated string. */
int gpc_buf_adds(gpc_buf *b, const char *s, gpc_error *err);

/* Append printf-style formatted text; the va_list variant for callers that
 * are printf-like themselves (they carry the format attribute too). */
int gpc_buf_addf(gpc_buf *b, gpc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int gpc_buf_vaddf(gpc_buf *b, gpc_error *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/*
 * Hand the bytes to the caller (who frees them with free()) and leave the
 * buffer empty.  Never returns NULL: an empty buffer yields "".  Returns NULL
 * only when memory for the empty string cannot be had.
 */
char *gpc_buf_take(gpc_buf *b);

/* The contents as a C string ("" when empty); valid until the next change. */
const char *gpc_buf_str(const gpc_buf *b);

#endif /* GPUCTL_BUF_H */
