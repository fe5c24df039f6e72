/*
 * s3_internal.h - what the S3 client's files (s3.c, s3_object.c,
 * s3_multipart.c) share; not an interface for anyone else.
 */
#ifndef GPUCTL_AWS_S3_INTERNAL_H
#define GPUCTL_AWS_S3_INTERNAL_H

#include "aws/s3.h"
#include "aws/sigv4.h"
#include "gpuctl/http.h"

/* A request made ready to send: URL, the headers sent (r->headers then the
 * payload headers) and the same split for the signer (Host first). */
typedef struct gpc_s3_prepared {
    const gpc_s3_request *r;
    char *url;                 /* heap */
    char host[256];
    char *path;                /* heap: raw path for the signer */
    char payload[2][160];      /* x-amz-content-sha256, Content-MD5 */
    const char **hdrs;         /* heap array of borrowed strings */
    size_t n_hdrs;
    gpc_sigv4_header *sig;     /* heap; names/values point into store */
    size_t n_sig;
    char *store;               /* heap */
    gpc_http_request req;
} gpc_s3_prepared;

/* The fields of an S3 (or STS) error document; "" when absent. */
typedef struct gpc_s3_errdoc {
    char code[GPC_ERROR_CODE_MAX];
    char message[512];
    char request_id[GPC_ERROR_REQUEST_ID_MAX];
    char region[64];
} gpc_s3_errdoc;

/* Build p for r (p is zeroed first; free it with gpc_s3_prepared_free, also
 * after an error). */
int gpc_s3_prepare(gpc_s3 *s, const gpc_s3_request *r, gpc_s3_prepared *p, gpc_error *err);
void gpc_s3_prepared_free(gpc_s3_prepared *p);
/* Add X-Amz-Date, X-Amz-Security-Token and Authorization for p, signed for
 * `service` in `region` with the session's (refreshed) credentials. */
int gpc_s3_sign(gpc_s3 *s, const gpc_s3_prepared *p, const char *service,
                const char *region, gpc_http_headers *extra, gpc_error *err);
/* Read an error document (<Error> or STS's <ErrorResponse>). */
void gpc_s3_error_fields(const gpc_buf *body, gpc_s3_errdoc *d);
/* The retry rule of aws.md 6.6 for one failed attempt. */
int gpc_s3_retry_rule(const gpc_http_response *resp);
/* An S3 error code (or, without one, the HTTP status) as a gpc_code. */
gpc_code gpc_s3_error_code(const char *code, long status);
/* Map what the HTTP layer gave for r into err (0 when hrc is 0). */
int gpc_s3_finish(const gpc_s3_request *r, int hrc, const gpc_error *he,
                  const gpc_http_response *resp, gpc_error *err);
/* The HTTP options of the session (what, client, attempts, backoff, ids,
 * body limit, r's accepted statuses when r is given). */
void gpc_s3_http_opts(gpc_s3 *s, gpc_http_opts *o, const gpc_s3_request *r);
/* MD5 of data: base64 (24 chars + NUL) or lower-case hex (32 + NUL). */
int gpc_s3_md5_base64(const void *data, size_t len, char out[25], gpc_error *err);
int gpc_s3_md5_hex(const void *data, size_t len, char out[33], gpc_error *err);
/* Parse an XML answer; NULL when it is not XML. */
xmlDoc *gpc_s3_xml(const gpc_buf *body);
/* SHA-256 (hex) of a whole file, read in 1 MiB blocks; *size its length. */
int gpc_s3_file_sha256(const char *path, char hex[65], uint64_t *size, gpc_error *err);

#endif /* GPUCTL_AWS_S3_INTERNAL_H */
