/*
 * http.h - one HTTP request function over libcurl, with retries.
 *
 * gpc_http_send() performs a request and retries it, with exponential
 * backoff and full jitter, when the failure is likely to pass: transient
 * transport errors (could not connect, timeout, partial transfer, send/receive
 * error, empty reply) and HTTP 429, 500, 502, 503 and 504.  A Retry-After
 * header on such a reply replaces the computed delay (capped at the backoff
 * cap).  Every other failure - any other 4xx, a response over the size limit,
 * a non-transient curl error - ends the request at once.  A caller's
 * opts->should_retry may overrule that choice for any failed attempt but the
 * oversized response.
 *
 * Redirects are not followed (a 3xx is an answer like any other non-2xx).
 * Proxies are taken from the usual environment variables (libcurl's rules).
 *
 * Retries resend the request as it is (plus what opts->before_attempt adds
 * for that attempt).  That is safe for GET/PUT/DELETE, and
 * for a POST only when the provider deduplicates it (a client token);
 * callers of other POSTs must make them idempotent first.  Note that
 * libcurl itself also resends a request once, within the same attempt and
 * with the same headers, when a reused keep-alive connection turns out to
 * have been closed before any reply came; a request with fresh_connect
 * set is never resent that way.
 *
 * Messages name the method and the URL without its query string and
 * fragment (queries may carry signatures) and without any user:password@
 * part; they never contain header values or bodies.  The files
 * src/helpers/http*.c are the only ones that include <curl/curl.h>.
 *
 * Beyond that one call, the layer gives every provider what a signed cloud
 * API needs:
 *   - a connection cache (gpc_http_client) so that consecutive requests to
 *     one host reuse the TCP/TLS connection;
 *   - a hook run before every attempt (gpc_http_before_fn) that may add
 *     headers for that attempt only - a SigV4 signature with a fresh
 *     X-Amz-Date, say;
 *   - a caller's retry rule (gpc_http_retry_fn) on top of the built-in one;
 *   - gpc_http_send_all(), many independent requests at once through the
 *     libcurl multi interface, each with its own retries and waits;
 *   - a trace of every attempt for --debug (gpc_http_set_trace) in which
 *     credentials, signatures, tokens, passwords and user data are redacted,
 *     with words each provider adds (gpc_http_add_word).
 *
 * TLS: peer and host name verification are always on (CURLOPT_SSL_VERIFYPEER
 * 1, CURLOPT_SSL_VERIFYHOST 2, set explicitly on every handle); nothing in
 * this API turns them off.
 */
#ifndef GPUCTL_HTTP_H
#define GPUCTL_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

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
#define GPC_HTTP_PARALLEL           8          /* gpc_http_send_all's default */
#define GPC_HTTP_TRACE_BODY_MAX     4096       /* request body bytes traced */
#define GPC_HTTP_TRACE_ERROR_MAX    1024       /* error body bytes traced */

/* One request.  Nothing here is copied past the call. */
typedef struct gpc_http_request {
    const char *method;          /* "GET", "POST", "PUT", "PATCH", "DELETE",
                                    "HEAD"; NULL = "GET" */
    const char *url;             /* absolute http:// or https:// URL */
    const char *const *headers;  /* "Name: value" strings, sent as given */
    size_t n_headers;
    const void *body;            /* request body; NULL = none */
    size_t body_len;             /* bytes of body */
    int fresh_connect;           /* 1: every attempt on a new connection, so
                                    that libcurl never resends it on its own
                                    (see above): for a request that must not
                                    be carried out twice, whose transport
                                    failures the caller's should_retry stops */
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
    char request_id[128];    /* the value of the first header named in
                                opts->request_id_headers that the reply
                                has; "" if none */
    long retry_after_s;      /* Retry-After in seconds (a date is turned into
                                seconds from now); -1 = absent or unreadable */
    int attempts;            /* requests actually sent, >= 1 once sent (0 when
                                the request was refused before any was sent) */
} gpc_http_response;

/*
 * A connection cache: requests sent with the same client reuse its open
 * connections (HTTP keep-alive, TLS sessions) and its DNS answers, across
 * gpc_http_send() and gpc_http_send_all() calls alike, for as long as the
 * server keeps them open.  A request without a client uses a cache of its
 * own that is closed when the call returns.
 *
 * Threads: a client may be used by one thread at a time (no locking inside);
 * give each thread its own, or serialise the calls.
 */
typedef struct gpc_http_client gpc_http_client;

/*
 * Make a client into *out (set to NULL on failure).  Returns 0, or
 * GPC_ERR_INTERNAL (libcurl could not be initialised) or GPC_ERR_NOMEM with
 * err filled.  The first call initialises libcurl globally, like
 * gpc_http_send().  Release it with gpc_http_client_free().
 */
int gpc_http_client_new(gpc_http_client **out, gpc_error *err);

/* Close the client's connections and release it.  NULL is fine.  No call may
 * be using it at the time. */
void gpc_http_client_free(gpc_http_client *c);

/*
 * Extra headers for one attempt: v[0..n-1] are "Name: value" strings that
 * the list owns (cap is the allocated length of v).  Start from a zeroed
 * struct; release with gpc_http_headers_free().
 */
typedef struct gpc_http_headers {
    char **v;
    size_t n, cap;
} gpc_http_headers;

/*
 * Append "Name: value" (copies both).  Returns 0, or with err filled:
 *   GPC_ERR_USAGE  a name that is empty or holds a blank, ':' or a control
 *                  character, or a value holding CR or LF (header injection);
 *   GPC_ERR_NOMEM  out of memory.
 * An empty value is sent as an empty header (not as curl's "remove this
 * header").
 */
int gpc_http_headers_add(gpc_http_headers *h, const char *name, const char *value,
                         gpc_error *err);

/* Release every string and the array; *h is then empty and reusable.  h may
 * be NULL. */
void gpc_http_headers_free(gpc_http_headers *h);

/*
 * Called before EVERY attempt (the first included) with the request as it
 * will be sent (req is the caller's own pointer: reqs + i for
 * gpc_http_send_all) and the attempt number (1, 2, ...).  Headers added to
 * `extra` (empty on entry; the layer owns and frees it) are sent after
 * req->headers for this attempt only - e.g. X-Amz-Date and an Authorization
 * computed afresh for each retry.  A non-zero return (a gpc_code) stops the
 * request at once with that code; the hook should fill err (never NULL:
 * the request's own error) - when it leaves err empty the message is
 * "WHAT: METHOD URL: before_attempt failed".  The response then still holds
 * the previous attempt's reply, if any (resp->attempts counts only the
 * attempts sent).  The hook must not keep req or extra past the call.
 */
typedef int (*gpc_http_before_fn)(void *arg, const gpc_http_request *req, int attempt,
                                  gpc_http_headers *extra, gpc_error *err);

/* What a gpc_http_retry_fn answers. */
enum {
    GPC_HTTP_DEFAULT = 0, /* the built-in rule: retry 429, 500, 502, 503, 504
                             and transient transport errors */
    GPC_HTTP_RETRY = 1,   /* retry (while attempts are left) */
    GPC_HTTP_STOP = 2     /* give up now with this reply */
};

/*
 * Called after every attempt that did not succeed: a reply that is neither
 * 2xx nor in opts->accept, or a transport failure (resp->status 0, empty
 * body).  resp holds that attempt's status, headers, body and request id
 * (resp->attempts is its number); the callee reads it and must not free or
 * keep it.  In gpc_http_send_all, resp is resps + i of reqs[i], so a rule
 * can tell the requests apart.  Returns GPC_HTTP_RETRY, GPC_HTTP_STOP or GPC_HTTP_DEFAULT (any
 * other value counts as DEFAULT).  A retry waits as usual (backoff or
 * Retry-After) and never passes max_attempts.  Not called for a response
 * over max_body (never retried) nor after a before_attempt failure.  It
 * lets EC2 refuse to retry InsufficientInstanceCapacity (a 500) and retry
 * a throttling code that comes with a 400.
 */
typedef int (*gpc_http_retry_fn)(void *arg, const gpc_http_response *resp);

/*
 * Called when a failed attempt will be retried: resp holds that attempt's
 * reply (status 0 for a transport failure), `attempt` its number, and
 * delay_ms the wait before the next one.  For progress lines ("retrying
 * in 1.2 s"); it must not keep resp.
 */
typedef void (*gpc_http_retry_note_fn)(void *arg, const gpc_http_request *req,
                                       const gpc_http_response *resp, int attempt,
                                       long delay_ms);

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
    /* Connection cache to use (borrowed: the caller keeps it alive for the
     * call); NULL = a fresh connection cache per call. */
    gpc_http_client *client;
    gpc_http_before_fn before_attempt;  /* NULL = none */
    gpc_http_retry_fn should_retry;     /* NULL = the built-in rule */
    gpc_http_retry_note_fn on_retry;    /* NULL = none */
    void *arg;                          /* passed to the callbacks */
    /*
     * Names of the response headers that carry the service's id of the
     * request, NULL-terminated, matched case-insensitively, e.g.
     * {"x-amzn-RequestId", "x-amz-request-id", NULL}: each provider names
     * its own.  The first such header of the reply (in the reply's order)
     * fills resp->request_id and, on failure, err->remote.request_id.
     * Borrowed for the call.  NULL = none (request_id stays "").
     */
    const char *const *request_id_headers;
} gpc_http_opts;

/*
 * Send req, retrying as described at the top of this file, and fill *resp.
 *
 * Returns 0 when the last reply is 2xx or listed in opts->accept.
 * Otherwise returns, with err filled (first failure wins; when err held
 * no failure before the call, a failure of the request itself also gets
 * its remote details, gpc_error_remote: err->remote.http_status the last
 * reply's status or 0, request_id resp->request_id, retryable 1 when the
 * retry rule - the built-in one or opts->should_retry - wanted another
 * attempt and the attempts ran out, 0 when it gave up at once or the body
 * passed max_body; code stays "" for the caller, who knows the service's
 * error document, to fill; no remote details for USAGE, INTERNAL, NOMEM,
 * INTERRUPTED or a before_attempt failure):
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
 *   GPC_ERR_NOMEM     out of memory;
 *   any code          that opts->before_attempt returned.
 * The first call initialises libcurl globally (once per process).
 */
int gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                  gpc_http_response *resp, gpc_error *err);

/*
 * Send n independent requests at once through the libcurl multi interface,
 * at most max_parallel of them in flight (0 = GPC_HTTP_PARALLEL), each with
 * opts' retry policy, client and callbacks (opts->arg is shared; the
 * callbacks get reqs + i, so they can tell the requests apart).  A request
 * waiting to be retried does not count as in flight, and its wait holds up
 * no other request.  Requests start in index order.
 *
 * reqs, resps, rcs and errs have n elements each.  resps[i], rcs[i] and
 * errs[i] receive what gpc_http_send() would have given for reqs[i]: every
 * resps[i] is initialised (release each with gpc_http_response_free()),
 * every errs[i] is cleared first and filled when rcs[i] != 0.  Returns 0
 * when every request succeeded, else rcs[] of the lowest-numbered failing
 * request.  n == 0 returns 0; a NULL array (n > 0) returns GPC_ERR_USAGE
 * and touches nothing.
 *
 * The callbacks run in the calling thread, one at a time.
 */
int gpc_http_send_all(const gpc_http_request *reqs, size_t n, const gpc_http_opts *opts,
                      size_t max_parallel, gpc_http_response *resps, int *rcs,
                      gpc_error *errs);

/*
 * Interrupts (Ctrl-C).  With gpc_http_set_interrupt(flag), where *flag is
 * a counter a signal handler raises by one per signal, every request
 * watches it (at least every 100 ms, also while it waits to be retried):
 * once *flag is past the value last acknowledged, a request not yet sent
 * or waiting for a retry ends at once with GPC_ERR_INTERRUPTED
 * ("interrupted while waiting to retry (after N attempts)"), and one in
 * flight is let finish, so that its answer is not lost; once it is two
 * past, transfers in flight end too ("interrupted while in flight (whether
 * it was carried out is unknown)").  gpc_http_interrupt_ack() takes the
 * interrupts so far as seen: the requests a caller makes afterwards to
 * clean up go through until the next one.  flag NULL turns it off.  The
 * setting is process-wide; neither function is for signal handlers.
 */
void gpc_http_set_interrupt(const volatile sig_atomic_t *flag);
void gpc_http_interrupt_ack(void);

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

/* ---- trace (--debug) ---------------------------------------------------- */

/*
 * Send a trace of every attempt of every request to f; NULL (the default)
 * turns it off.  f is borrowed: keep it open until the trace is turned off.
 * Set it before any thread sends.  Each event is written with one locked
 * write, so lines of concurrent requests do not mix within an event:
 *
 *   http: > POST https://host/path?Name=value (attempt 1)
 *   http: > Host: host                       the headers as libcurl sent them,
 *   http: > Authorization: AWS4-HMAC-SHA256 [redacted]    redacted
 *   http: > Action=RunInstances&UserData=[123 bytes]      the body: form and
 *                       JSON bodies only, redacted, first 4 KiB
 *   http: < 200 (request id X, 1234 bytes, 0.123 s)
 *   http: < 503 (...)   followed, for a reply that is not a success, by
 *   http: < <body>      its first 1 KiB after redaction
 *   http: < failed: <curl's error> (0.012 s)      transport failure
 *   http: retrying in 250 ms
 *
 * The URL loses any user:password@ and its query goes through
 * gpc_http_redact_form().  In gpc_http_send_all() the request and reply
 * lines say which request they are about ("#2 of 5").  Successful response
 * bodies are never traced (credential services answer with secrets).  An
 * error body is shown after gpc_http_redact_json() when it is JSON, after
 * XML redaction (the text and attributes of every element whose local name
 * holds one of the sensitive words below, or is userData/customData) when
 * it starts with '<', and through gpc_http_redact_form() otherwise; JSON or
 * XML that does not parse is not shown, only its size.
 */
void gpc_http_set_trace(FILE *f);

/*
 * Append to out one "Name: value" header line (a trailing CR/LF is dropped)
 * with the value replaced by "[redacted]" when the name is sensitive:
 * Authorization (only the scheme word is kept: "Authorization:
 * AWS4-HMAC-SHA256 [redacted]"), Proxy-Authorization, Cookie, Set-Cookie,
 * Api-Key, and every GPC_HTTP_SECRET_HEADER added with gpc_http_add_word();
 * and any name holding (case-insensitive) "authorization", "secret",
 * "token", "signature", "password", "credential", "cookie" or a
 * GPC_HTTP_SECRET_WORD, unless it is a GPC_HTTP_PUBLIC_NAME, or ending in
 * "-key" (X-Api-Key, SSE-C keys).  Other lines, an empty value and a line
 * without ':' are copied as they are (X-Amz-Content-Sha256 is kept).
 * Appends are best-effort (out's limit or memory may cut the line); a
 * secret value is never copied, whole or part.
 */
void gpc_http_redact_header(const char *line, gpc_buf *out);

/*
 * Append to out the form body (or URL query string) body[0..len) -
 * "a=b&c=d" - with the values of sensitive parameters replaced: names that
 * hold (case-insensitive, after percent-decoding) "signature", "token",
 * "secret", "password", "credential" or a GPC_HTTP_SECRET_WORD, and are no
 * GPC_HTTP_PUBLIC_NAME, get "[redacted]"; UserData and
 * CustomData (exactly, or as the last dotted part:
 * LaunchSpecification.UserData) get "[N bytes]", N the decoded length.
 * Everything else is copied as it is.  Best-effort like
 * gpc_http_redact_header().
 */
void gpc_http_redact_form(const char *body, size_t len, gpc_buf *out);

/*
 * Append to out the JSON document body[0..len), printed without
 * formatting, with the value of every member whose key holds one of the
 * words of gpc_http_redact_form() replaced by "[redacted]", and of keys
 * userData / customData (case-insensitive) by "[N bytes]" for a string (else
 * "[redacted]"), at any depth (objects inside arrays included).  Text that
 * is not JSON gives "[N bytes, not valid JSON]".  Best-effort.
 */
void gpc_http_redact_json(const char *body, size_t len, gpc_buf *out);

/*
 * Append to out the XML document body[0..len) (root element only, no
 * declaration) with the text of every element, and the value of every
 * attribute, whose local name holds one of the words of
 * gpc_http_redact_form() replaced by "[redacted]" ("[N bytes]" for an
 * element named userData or customData, case-insensitive).  Parsed by
 * libxml2 without network access or entity expansion.  Text that is not
 * well-formed XML gives "[N bytes, not well-formed XML]".  Best-effort.
 */
void gpc_http_redact_xml(const char *body, size_t len, gpc_buf *out);

/* ---- words the redaction learns from providers -------------------------- */

/*
 * The redaction above knows only generic words.  A provider adds its own
 * (EC2's X-Amz-Security-Token header, its ClientToken that is no secret)
 * before it sends anything; the engine registers every provider's list
 * when a session opens (gpc_providers_register_secrets, provider.h).
 */
typedef enum gpc_http_word_kind {
    GPC_HTTP_WORD_END = 0,   /* ends a gpc_http_word list */
    GPC_HTTP_SECRET_HEADER,  /* a header name, matched whole (case-insensitive),
                                whose value is secret */
    GPC_HTTP_SECRET_WORD,    /* a word that makes secret the value of any
                                header, form or query parameter (percent-
                                decoded), JSON key or XML element or attribute
                                whose name holds it (case-insensitive) */
    GPC_HTTP_PUBLIC_NAME     /* a parameter, key, element or header name that
                                holds a secret word but carries no secret:
                                matched whole or as the last dotted part
                                (LaunchSpecification.ClientToken), case-
                                insensitive; shown as it is */
} gpc_http_word_kind;

/* Longest word gpc_http_add_word() takes, bytes. */
#define GPC_HTTP_WORD_MAX 63

/* One word of a provider's list. */
typedef struct gpc_http_word {
    gpc_http_word_kind kind;
    const char *word;
} gpc_http_word;

/*
 * Add a word to every later redaction (trace lines, the gpc_http_redact_*
 * functions), process-wide; the word is copied.  Adding a word already
 * there (same kind, case-insensitively) does nothing and returns 0.
 * Returns 0, or GPC_ERR_USAGE with err filled: an unknown kind, a word that
 * is empty, longer than GPC_HTTP_WORD_MAX bytes or holds a blank, ':' or a
 * control character, or a 65th word.  Not thread-safe: add words before
 * any thread sends (like gpc_http_set_trace).  Words are never removed.
 */
int gpc_http_add_word(gpc_http_word_kind kind, const char *word, gpc_error *err);

/* gpc_http_add_word() for each entry of list up to GPC_HTTP_WORD_END (list
 * may be NULL); stops at the first error and returns it. */
int gpc_http_add_words(const gpc_http_word *list, gpc_error *err);

#endif /* GPUCTL_HTTP_H */
