/* http.c - see include/gpuctl/http.h */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "gpuctl/http.h"

#ifndef GPUCTL_VERSION
#define GPUCTL_VERSION "0.0.0"
#endif

/* ---- process-wide set-up ------------------------------------------------ */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_result = CURLE_FAILED_INIT;
static uint64_t rng_state;

static void global_init(void)
{
    init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rng_state = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
                ((uint64_t)getpid() << 16) ^ 0x9e3779b97f4a7c15u;
    if (!rng_state)
        rng_state = 1;
}

static int ensure_init(gpc_error *err)
{
    pthread_once(&init_once, global_init);
    if (init_result != CURLE_OK)
        return gpc_fail(err, GPC_ERR_INTERNAL, "libcurl initialisation failed: %s",
                        curl_easy_strerror(init_result));
    return 0;
}

/* xorshift64*: jitter needs spread, not secrecy. */
static uint64_t next_random(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

/* Full jitter: uniform in [0, min(cap, base * 2^(attempt-1))] milliseconds. */
static long backoff_ms(int attempt, long base_ms, long cap_ms)
{
    long ceiling = base_ms;
    for (int i = 1; i < attempt && ceiling < cap_ms; i++)
        ceiling *= 2;
    if (ceiling > cap_ms)
        ceiling = cap_ms;
    return (long)(next_random() % (uint64_t)(ceiling + 1));
}

static void sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L}, rem;
    while (nanosleep(&ts, &rem) != 0 && errno == EINTR)
        ts = rem;
}

/* ---- small helpers ------------------------------------------------------ */

void gpc_http_redact_url(const char *url, char *out, size_t size)
{
    if (!size)
        return;
    out[0] = '\0';
    if (!url)
        return;
    const char *p = url, *scheme = strstr(url, "://");
    size_t o = 0;
    if (scheme && scheme < url + strcspn(url, "/?#")) {
        const char *auth = scheme + 3;
        size_t alen = strcspn(auth, "/?#");
        const char *at = NULL;
        for (size_t i = 0; i < alen; i++)
            if (auth[i] == '@')
                at = auth + i;
        /* copy "scheme://" then the authority after any userinfo */
        for (const char *q = url; q < auth && o + 1 < size; q++)
            out[o++] = *q;
        p = at ? at + 1 : auth;
    }
    for (; *p && *p != '?' && *p != '#' && o + 1 < size; p++)
        out[o++] = *p;
    out[o] = '\0';
}

int gpc_http_escape(const char *s, gpc_buf *out, gpc_error *err)
{
    int rc = ensure_init(err);
    if (rc)
        return rc;
    size_t len = strlen(s);
    if (len > (size_t)INT32_MAX)
        return gpc_fail(err, GPC_ERR_NOMEM, "string too long to escape");
    /* Since curl 7.82 the handle argument is unused. */
    char *e = curl_easy_escape(NULL, s, (int)len);
    if (!e)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory escaping a URL part");
    rc = gpc_buf_adds(out, e, err);
    curl_free(e);
    return rc;
}

/* Value of "Name: value" into out when the name matches (case-insensitive). */
static int header_value(const char *line, size_t len, const char *name, char *out,
                        size_t size)
{
    size_t nlen = strlen(name);
    if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0)
        return 0;
    const char *v = line + nlen + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    size_t n = (size_t)(end - v);
    if (n >= size)
        n = size - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
}

const char *gpc_http_header(const gpc_http_response *resp, const char *name, char *out,
                            size_t size)
{
    if (!resp || !resp->headers.data || !size)
        return NULL;
    const char *p = resp->headers.data;
    while (*p) {
        size_t len = strcspn(p, "\r\n");
        if (header_value(p, len, name, out, size))
            return out;
        p += len;
        while (*p == '\r' || *p == '\n')
            p++;
    }
    return NULL;
}

/* Retry-After: delta-seconds or an HTTP date; -1 when neither. */
static long parse_retry_after(const char *v)
{
    if (!*v)
        return -1;
    if (isdigit((unsigned char)*v)) {
        char *end;
        errno = 0;
        long long s = strtoll(v, &end, 10);
        if (*end || errno)
            return errno == ERANGE ? 86400L * 365 : -1;
        return s > 86400LL * 365 ? 86400L * 365 : (long)s;
    }
    time_t t = curl_getdate(v, NULL);
    if (t == (time_t)-1)
        return -1;
    time_t now = time(NULL);
    return t > now ? (long)(t - now) : 0;
}

/* ---- one transfer ------------------------------------------------------- */

typedef struct xfer {
    gpc_http_response *resp;
    size_t max_body;
    int too_big;  /* the body passed max_body */
    int no_mem;   /* an append failed for want of memory */
} xfer;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    xfer *x = userp;
    size_t n = size * nmemb;
    gpc_buf *b = &x->resp->body;
    if (n > x->max_body || b->len > x->max_body - n) {
        x->too_big = 1;
        return 0;
    }
    if (gpc_buf_add(b, data, n, NULL)) {
        x->no_mem = 1;
        return 0;
    }
    return n;
}

static const char *const request_id_headers[] = {
    "x-ms-request-id", "x-amz-request-id", "x-amzn-requestid", "x-acs-request-id",
};

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    xfer *x = userp;
    gpc_http_response *r = x->resp;
    size_t n = size * nmemb, len = n;
    while (len && (data[len - 1] == '\r' || data[len - 1] == '\n'))
        len--;
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        /* A new response (after a 1xx, say): forget the previous one's. */
        gpc_buf_reset(&r->headers);
        r->request_id[0] = '\0';
        r->retry_after_s = -1;
        return n;
    }
    if (!len)
        return n;
    /* Keep what fits; a header section past the limit is cut, not fatal. */
    if (r->headers.len + len + 2 <= r->headers.max) {
        gpc_buf_add(&r->headers, data, len, NULL);
        gpc_buf_add(&r->headers, "\r\n", 2, NULL);
    }
    char v[128];
    if (header_value(data, len, "retry-after", v, sizeof(v)))
        r->retry_after_s = parse_retry_after(v);
    for (size_t i = 0; i < sizeof(request_id_headers) / sizeof(*request_id_headers); i++)
        if (!r->request_id[0])
            header_value(data, len, request_id_headers[i], r->request_id,
                         sizeof(r->request_id));
    return n;
}

static int transient_curl_error(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
        return 1;
    default:
        return 0;
    }
}

static int retryable_status(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static int accepted_status(long s, const gpc_http_opts *o)
{
    if (s >= 200 && s < 300)
        return 1;
    for (size_t i = 0; o && i < o->n_accept; i++)
        if (o->accept[i] == s)
            return 1;
    return 0;
}

static int has_header(const gpc_http_request *req, const char *name)
{
    size_t nlen = strlen(name);
    for (size_t i = 0; i < req->n_headers; i++)
        if (strncasecmp(req->headers[i], name, nlen) == 0 && req->headers[i][nlen] == ':')
            return 1;
    return 0;
}

/* Build the header list: the caller's, plus removal of curl's defaults that
 * would change the request behind the caller's back. */
static int build_headers(const gpc_http_request *req, int with_body, const char *what,
                         struct curl_slist **out, gpc_error *err)
{
    struct curl_slist *list = NULL, *t;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (!req->headers[i] || strpbrk(req->headers[i], "\r\n")) {
            curl_slist_free_all(list);
            return gpc_fail(err, GPC_ERR_USAGE, "%s: request header %zu is empty or "
                            "holds a line break", what, i + 1);
        }
        if (!(t = curl_slist_append(list, req->headers[i])))
            goto nomem;
        list = t;
    }
    if (!has_header(req, "Expect")) { /* no 100-continue round trip */
        if (!(t = curl_slist_append(list, "Expect:")))
            goto nomem;
        list = t;
    }
    if (with_body && !has_header(req, "Content-Type")) { /* not form-urlencoded */
        if (!(t = curl_slist_append(list, "Content-Type:")))
            goto nomem;
        list = t;
    }
    *out = list;
    return 0;
nomem:
    curl_slist_free_all(list);
    return gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory building request headers", what);
}

/* A body goes out when there is one, and for POST/PUT/PATCH an empty one
 * (with "Content-Length: 0", which some services insist on). */
static int sends_body(const gpc_http_request *req, const char *method)
{
    return req->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
           strcmp(method, "PATCH") == 0;
}

#define SETOPT(h, opt, val)                                                  \
    do {                                                                     \
        if (curl_easy_setopt((h), (opt), (val)) != CURLE_OK)                 \
            goto setopt_failed;                                              \
    } while (0)

static int setup_handle(CURL *h, const gpc_http_request *req, const char *method,
                        struct curl_slist *headers, long timeout_s, long connect_s,
                        xfer *x, char *errbuf)
{
    SETOPT(h, CURLOPT_URL, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500
    SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    SETOPT(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    SETOPT(h, CURLOPT_NOSIGNAL, 1L);
    SETOPT(h, CURLOPT_FOLLOWLOCATION, 0L);
    SETOPT(h, CURLOPT_TIMEOUT, timeout_s);
    SETOPT(h, CURLOPT_CONNECTTIMEOUT, connect_s);
    SETOPT(h, CURLOPT_ERRORBUFFER, errbuf);
    SETOPT(h, CURLOPT_USERAGENT, "gpuctl/" GPUCTL_VERSION);
    SETOPT(h, CURLOPT_ACCEPT_ENCODING, "");
    SETOPT(h, CURLOPT_HTTPHEADER, headers);
    SETOPT(h, CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(h, CURLOPT_WRITEDATA, x);
    SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(h, CURLOPT_HEADERDATA, x);

    int is_get = strcmp(method, "GET") == 0, is_head = strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (is_head) {
        SETOPT(h, CURLOPT_NOBODY, 1L);
    } else if (is_get && !req->body) {
        SETOPT(h, CURLOPT_HTTPGET, 1L);
    } else if (sends_body(req, method)) {
        /* POSTFIELDS (not a read callback) also gives an empty body its length. */
        SETOPT(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
        SETOPT(h, CURLOPT_POSTFIELDS, req->body ? (const char *)req->body : "");
        if (!is_post)
            SETOPT(h, CURLOPT_CUSTOMREQUEST, method);
    } else {
        SETOPT(h, CURLOPT_CUSTOMREQUEST, method);
    }
    return 0;
setopt_failed:
    return -1;
}

/* ---- the request -------------------------------------------------------- */

void gpc_http_response_free(gpc_http_response *resp)
{
    if (!resp)
        return;
    gpc_buf_free(&resp->body);
    gpc_buf_free(&resp->headers);
}

static void response_init(gpc_http_response *resp, size_t max_body)
{
    memset(resp, 0, sizeof(*resp));
    gpc_buf_init(&resp->body, max_body);
    gpc_buf_init(&resp->headers, GPC_HTTP_HEADERS_MAX);
    resp->retry_after_s = -1;
}

int gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                  gpc_http_response *resp, gpc_error *err)
{
    static const gpc_http_opts defaults;
    const gpc_http_opts *o = opts ? opts : &defaults;
    const char *what = o->what ? o->what : "http";
    const char *method = req->method ? req->method : "GET";
    long timeout_s = o->timeout_s > 0 ? o->timeout_s : GPC_HTTP_TIMEOUT_S;
    long connect_s = o->connect_timeout_s > 0 ? o->connect_timeout_s
                                              : GPC_HTTP_CONNECT_TIMEOUT_S;
    int max_attempts = o->max_attempts > 0 ? o->max_attempts
                       : o->max_attempts < 0 ? 1 : GPC_HTTP_MAX_ATTEMPTS;
    long base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : GPC_HTTP_BACKOFF_BASE_MS;
    long cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : GPC_HTTP_BACKOFF_CAP_MS;
    size_t max_body = o->max_body ? o->max_body : GPC_HTTP_BODY_MAX;

    response_init(resp, max_body);
    char shown[512];
    gpc_http_redact_url(req->url, shown, sizeof(shown));
    if (!req->url || !*req->url)
        return gpc_fail(err, GPC_ERR_USAGE, "%s: %s request without a URL", what, method);
    if (!*method || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(method))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: invalid HTTP method", what);
    int rc = ensure_init(err);
    if (rc)
        return rc;

    struct curl_slist *headers = NULL;
    if ((rc = build_headers(req, sends_body(req, method), what, &headers, err)))
        return rc;
    CURL *h = curl_easy_init();
    char errbuf[CURL_ERROR_SIZE];
    xfer x = {.resp = resp, .max_body = max_body};
    if (!h || setup_handle(h, req, method, headers, timeout_s, connect_s, &x, errbuf)) {
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl set-up failed", what,
                      method, shown);
        goto out;
    }

    for (int attempt = 1;; attempt++) {
        gpc_buf_reset(&resp->body);
        gpc_buf_reset(&resp->headers);
        resp->request_id[0] = '\0';
        resp->retry_after_s = -1;
        resp->status = 0;
        errbuf[0] = '\0';
        x.too_big = x.no_mem = 0;
        resp->attempts = attempt;

        CURLcode cc = curl_easy_perform(h);
        if (x.too_big) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: response larger than %zu bytes",
                          what, method, shown, max_body);
            goto out;
        }
        if (x.no_mem) {
            rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: %s %s: out of memory reading the response",
                          what, method, shown);
            goto out;
        }
        if (cc != CURLE_OK) {
            if (transient_curl_error(cc) && attempt < max_attempts) {
                sleep_ms(backoff_ms(attempt, base_ms, cap_ms));
                continue;
            }
            const char *text = errbuf[0] ? errbuf : curl_easy_strerror(cc);
            if (attempt > 1)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: %s (after %d attempts)",
                              what, method, shown, text, attempt);
            else
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: %s", what, method, shown,
                              text);
            goto out;
        }
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
        if (accepted_status(resp->status, o)) {
            rc = 0;
            goto out;
        }
        if (!retryable_status(resp->status) || attempt >= max_attempts) {
            if (attempt > 1)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: HTTP %ld after %d attempts",
                              what, method, shown, resp->status, attempt);
            else
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: HTTP %ld", what, method,
                              shown, resp->status);
            goto out;
        }
        if (resp->retry_after_s >= 0)
            sleep_ms(resp->retry_after_s > cap_ms / 1000 ? cap_ms : resp->retry_after_s * 1000);
        else
            sleep_ms(backoff_ms(attempt, base_ms, cap_ms));
    }

out:
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    return rc;
}
