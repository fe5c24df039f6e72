/*
 * http.h - one HTTP request function over libcurl, with retries.
 *
 * gpc_http_send() performs a request and retries it, with exponential
 * backoff and full jitter, when the failure is likely to pass: transient
 * transport errors (could not connect, timeout, partial transfer, send/receive
 * error, empty reply) and HTTP 429, 500, 502, 503 and 504.  A Retry-After
 * header on such a reply replaces the computed delay (capped at the backoff
 * cap).  Every other failure - any other 4xx, a response over the size limit,
 * a non-transient curl error - ends the request at once.
 *
 * Redirects are not followed (a 3xx is an answer like any other non-2xx).
 * Proxies are taken from the usual environment variables (libcurl's rules).
 *
 * Retries resend the request as it is.  That is safe for GET/PUT/DELETE, and
 * for a POST only when the provider deduplicates it (a client token);
 * callers of other POSTs must make them idempotent first.
 *
 * Messages name the method and the URL without its query string and
 * fragment (queries may carry signatures) and without any user:password@
 * part; they never contain header values or bodies.  src/http.c is the only
 * file that includes <curl/curl.h>.
 */
#ifndef GPUCTL_HTTP_H
#define GPUCTL_HTTP_H

#include <stddef.h>

#include "gpuctl/buf.h"
#include "gpuctl/error.h"

/* Defaults used for the fields of gpc_http_opts left at 0. */
#define GPC_HTTP_TIMEOUT_S          60         /* whole attempt, seconds */
#define GPC_HTTP_CONNECT_TIMEOUT_S  10         /* connection set-up, seconds */
#define GPC_HTTP_MAX_ATTEMPTS       4          /* first try + 3 retries */
#define GPC_HTTP_BACKOFF_BASE_MS    500        /* delay ceiling before retry 1 */
#define GPC_HTTP_BACKOFF_CAP_MS     20000      /* no delay is ever longer */
#define GPC_HTTP_BODY_MAX           (8u << 20) /* response body, bytes */
#define GPC_HTTP_HEADERS_MAX        (64u << 10)/* kept response header bytes */

/*
 * How to send.  A zeroed struct (or opts == NULL) means every default.
 *
 * The delay before retry k (k = 1, 2, ...) is a uniformly random number of
 * milliseconds in [0, min(backoff_cap_ms, backoff_base_ms * 2^(k-1))]
 * ("full jitter"), or Retry-After when the reply carried one.
 */
typedef struct gpc_http_opts {
    long timeout_s;          /* per attempt, whole transfer; 0 = GPC_HTTP_TIMEOUT_S */
    long connect_timeout_s;  /* per attempt; 0 = GPC_HTTP_CONNECT_TIMEOUT_S */
    int max_attempts;        /* tries in all, >= 1; 0 = GPC_HTTP_MAX_ATTEMPTS */
    long backoff_base_ms;    /* 0 = GPC_HTTP_BACKOFF_BASE_MS */
    long backoff_cap_ms;     /* also caps Retry-After; 0 = GPC_HTTP_BACKOFF_CAP_MS */
    size_t max_body;         /* response body limit, bytes; 0 = GPC_HTTP_BODY_MAX */
    const char *what;        /* label that starts messages, e.g. "azure retail
                                prices"; NULL = "http" */
    /*
     * Statuses besides 2xx that count as success, e.g. {404} for a GET whose
     * "not found" is an answer.  They are never retried.  NULL/0 = none.
     */
    const long *accept;
    size_t n_accept;
} gpc_http_opts;

/* One request.  Nothing here is copied past the call. */
typedef struct gpc_http_request {
    const char *method;          /* "GET", "POST", "PUT", "PATCH", "DELETE",
                                    "HEAD"; NULL = "GET" */
    const char *url;             /* absolute http:// or https:// URL */
    const char *const *headers;  /* "Name: value" strings, sent as given */
    size_t n_headers;
    const void *body;            /* request body; NULL = none */
    size_t body_len;             /* bytes of body */
} gpc_http_request;

/*
 * The outcome.  gpc_http_send() initialises every field itself, on success
 * and on failure alike; the caller releases it with gpc_http_response_free().
 * All fields describe the last attempt.
 */
typedef struct gpc_http_response {
    long status;             /* HTTP status; 0 when no reply arrived */
    gpc_buf body;            /* the body, NUL-terminated (limit: max_body) */
    gpc_buf headers;         /* the header lines, "Name: value\r\n" each,
                                status line excluded (first 64 KiB) */
    char request_id[128];    /* x-ms-request-id, x-amz-request-id,
                                x-amzn-requestid or x-acs-request-id; "" if none */
    long retry_after_s;      /* Retry-After in seconds (a date is turned into
                                seconds from now); -1 = absent or unreadable */
    int attempts;            /* requests actually sent, >= 1 once sent */
} gpc_http_response;

/*
 * Send req, retrying as described at the top of this file, and fill *resp.
 *
 * Returns 0 when the last reply is 2xx or listed in opts->accept.
 * Otherwise returns, with err filled (first failure wins):
 *   GPC_ERR_PROVIDER  "WHAT: GET https://host/path: HTTP 503 after 4 attempts"
 *                     (just "HTTP 400" when there was one attempt); the
 *                     reply's status, body and headers stay in *resp so that
 *                     a caller may read a provider's error document and
 *                     refine the message with gpc_fail_replace();
 *                     "WHAT: GET URL: <curl's error text> (after N attempts)"
 *                     for transport failures; "WHAT: GET URL: response larger
 *                     than N bytes" when the body passes max_body;
 *   GPC_ERR_USAGE     a request without a URL or with a header holding a
 *                     newline;
 *   GPC_ERR_INTERNAL  libcurl could not be initialised or set up;
 *   GPC_ERR_NOMEM     out of memory.
 * The first call initialises libcurl globally (once per process).
 */
int gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                  gpc_http_response *resp, gpc_error *err);

/* Release what *resp holds; it may then be reused.  resp may be NULL. */
void gpc_http_response_free(gpc_http_response *resp);

/*
 * Look up a response header by name (case-insensitive).  Copies its value,
 * surrounding blanks removed, into out (truncated to size-1 bytes) and
 * returns out, or returns NULL when the header is absent.  With repeated
 * headers, the first one counts.
 */
const char *gpc_http_header(const gpc_http_response *resp, const char *name,
                            char *out, size_t size);

/*
 * Append s percent-encoded to out: every byte but A-Z a-z 0-9 - . _ ~
 * becomes %XX (upper-case hex), as RFC 3986 wants for a query value
 * (libcurl's curl_easy_escape).  Returns 0, or GPC_ERR_NOMEM when out's
 * limit is reached or memory runs out.
 */
int gpc_http_escape(const char *s, gpc_buf *out, gpc_error *err);

/*
 * Copy url into out without its query string, fragment and user:password@
 * part - the form safe to show in messages.  Truncated to size-1 bytes.
 */
void gpc_http_redact_url(const char *url, char *out, size_t size);

#endif /* GPUCTL_HTTP_H */
