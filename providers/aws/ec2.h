/*
 * ec2.h - the EC2 Query API client under gpuctl's AWS provider (private to
 * providers/aws/).
 *
 * Wire format (aws.md section 2.1; EC2 API Reference "Query requests"):
 * POST https://ec2.<region>.amazonaws.com/ with Content-Type
 * application/x-www-form-urlencoded; charset=utf-8 and the body
 * Action=<Op>&Version=2016-11-15&<params>, each name and value UriEncoded
 * (so the '+', '/' and '=' of base64 survive form decoding).  Answers are
 * XML in the namespace http://ec2.amazonaws.com/doc/2016-11-15/; errors are
 * <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/>
 * (section 3.1).  Every attempt is signed anew with SigV4 (src/sigv4.c):
 * fresh X-Amz-Date, credentials refreshed when they are about to expire.
 *
 * Retries (section 3.3): throttling codes (RequestLimitExceeded, ...) and
 * 5xx are retried with capped exponential backoff and full jitter through
 * src/helpers/http.c, except the capacity family (InsufficientInstanceCapacity is a
 * 500 that must not be hammered).  Transport failures are retried too,
 * except for AllocateAddress: it has no idempotency token, and a call whose
 * reply was lost may have been carried out, so it is not sent again (the
 * error says so; the caller looks for what it made).  RequestExpired (clock
 * skew) is answered once by re-signing with the offset the reply's Date
 * header gives.
 *
 * Error mapping (section 3.2): auth family -> GPC_ERR_AUTH, capacity family
 * and Unsupported -> GPC_ERR_CAPACITY, InstanceLimitExceeded /
 * VcpuLimitExceeded / MaxSpotInstanceCountExceeded -> GPC_ERR_QUOTA,
 * SpotMaxPriceTooLow -> GPC_ERR_BUDGET, everything else GPC_ERR_PROVIDER.
 * The message reads "aws: ACTION (REGION): CODE: MESSAGE (request id ID)".
 * The error's remote details (error.h) hold CODE (err->remote.code, for
 * callers that treat some codes as success: InvalidGroup.Duplicate, ...),
 * the HTTP status, the request id (<RequestID>, else the x-amzn-RequestId
 * header) and whether the retry rule above wanted another attempt (a
 * throttling code or a 5xx whose attempts ran out; a transport failure).
 */
#ifndef GPUCTL_AWS_EC2_H
#define GPUCTL_AWS_EC2_H

#include <stddef.h>
#include <stdint.h>

#include <libxml/tree.h>

#include "aws/config.h"
#include "gpuctl/buf.h"
#include "gpuctl/error.h"
#include "gpuctl/http.h"
#include "gpuctl/xml.h"

#include "gpuctl/log.h"

#define GPC_EC2_API_VERSION "2016-11-15"

typedef struct gpc_ec2 {
    gpc_aws_options opts;     /* strings owned (copies) */
    gpc_aws_config cfg;
    gpc_aws_creds creds;
    int have_creds;
    int64_t creds_at;         /* when they were resolved (Unix seconds) */
    gpc_http_client *http;
    long clock_offset_s;      /* AWS time - our time, from a RequestExpired */
    const gpc_log *log;
    unsigned long calls;      /* requests made (for -v) */
} gpc_ec2;

/* Resolve config (not yet credentials: those on the first call).  `opts`
 * (NULL = none given) is copied; `log` is borrowed for the session's life.
 * Errors: those of gpc_aws_config_load, GPC_ERR_NOMEM.  Close with
 * gpc_ec2_close also after an error. */
int gpc_ec2_open(gpc_ec2 *e, const gpc_aws_options *opts, const gpc_log *log, gpc_error *err);
void gpc_ec2_close(gpc_ec2 *e);

/* Resolve (or refresh) credentials now; gpuctl check uses it to report. */
int gpc_ec2_credentials(gpc_ec2 *e, gpc_error *err);

/* A request's parameters, in the order added (the body's order). */
typedef struct gpc_ec2_params {
    gpc_buf body;
    int failed;              /* an add ran out of memory: the call fails */
} gpc_ec2_params;

void gpc_ec2_params_init(gpc_ec2_params *p);
void gpc_ec2_params_free(gpc_ec2_params *p);
/* Add name=value; the name is printf-formatted ("Filter.%u.Name"). */
void gpc_ec2_param(gpc_ec2_params *p, const char *value, const char *name_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a filter: Filter.N.Name=name, Filter.N.Value.1..k=values. */
void gpc_ec2_filter(gpc_ec2_params *p, unsigned n, const char *name,
                    const char *const *values, size_t k);

/*
 * Call `action` in `region` with `p` (may be NULL).  On success *doc (the
 * caller frees it with xmlFreeDoc) is the parsed answer.  Errors as
 * described above.
 */
int gpc_ec2_call(gpc_ec2 *e, const char *region, const char *action,
                 const gpc_ec2_params *p, xmlDoc **doc, gpc_error *err);

/*
 * Several calls at once (src/helpers/http.c gpc_http_send_all, curl's multi
 * interface), e.g. one per region.  Each item's doc / rc / err receive what
 * gpc_ec2_call would have given (the caller frees every doc; the EC2 code
 * of a failure is err.remote.code).  Returns 0
 * when all succeeded, else the first failure's code (items tell each).
 * Credentials are resolved once before the batch.  No clock-skew retry.
 */
typedef struct gpc_ec2_batch_item {
    const char *region;
    const char *action;
    const gpc_ec2_params *params;   /* may be NULL */
    xmlDoc *doc;                    /* out */
    int rc;                         /* out */
    gpc_error err;                  /* out (err.remote.code: the EC2 error
                                       code, "" when none) */
    int attempts;                   /* out: requests sent (more than 1: retried) */
} gpc_ec2_batch_item;
int gpc_ec2_call_many(gpc_ec2 *e, gpc_ec2_batch_item *items, size_t n, gpc_error *err);

/*
 * Sign one attempt of `req` (its method, URL and body) with SigV4 for
 * `service` ("ec2", "pricing", "servicequotas") in `sign_region`, with the
 * session's credentials (resolved or refreshed first, as gpc_ec2_credentials)
 * and clock (gpc_now() plus e->clock_offset_s): the signed headers are
 * Content-Type (`content_type`, which the request must send as it is),
 * Host (from req->url, default port left out) and, when `target` is not
 * NULL, X-Amz-Target: `target` (which the request must send too).  Adds
 * X-Amz-Date, X-Amz-Security-Token (temporary credentials) and
 * Authorization to `extra`.  The before_attempt hook of every AWS call
 * (ec2.c, json_api.c).  Errors: those of gpc_ec2_credentials,
 * GPC_ERR_USAGE an endpoint that is not an http(s) URL, GPC_ERR_NOMEM.
 */
int gpc_ec2_sign(gpc_ec2 *e, const gpc_http_request *req, const char *sign_region,
                 const char *service, const char *content_type, const char *target,
                 gpc_http_headers *extra, gpc_error *err);

/* Seconds AWS's clock is ahead of ours (negative: behind), from a reply's
 * Date header ("Sun, 06 Nov 1994 08:49:37 GMT") against gpc_now(); 0 when
 * the reply has no such header.  Used after a RequestExpired /
 * InvalidSignatureException "Signature expired" answer to re-sign. */
long gpc_ec2_clock_skew(const gpc_http_response *r);

/* host[:port] as libcurl sends it in Host: (lower case, the scheme's
 * default port left out, user info dropped) and the path ("/" when none)
 * of an http(s) URL, into host (hs bytes) and path (ps bytes): what SigV4
 * signs for any AWS service.  GPC_ERR_USAGE for a URL that is not http(s)
 * or has no host that fits. */
int gpc_aws_split_url(const char *url, char *host, size_t hs, char *path, size_t ps,
                      gpc_error *err);

/* Classify an EC2 error code (exposed for tests). */
gpc_code gpc_ec2_error_code(const char *ec2_code);
/* 1 when a reply with this code should be retried (throttling). */
int gpc_ec2_code_is_throttle(const char *ec2_code);

#endif /* GPUCTL_AWS_EC2_H */
