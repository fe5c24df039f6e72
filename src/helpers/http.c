/*
 * http.c - the request engine of include/gpuctl/http.h: libcurl handles,
 * retries with backoff, interrupts, and many requests at once through the
 * multi interface.  Redaction is in http_redact.c, the --debug trace in
 * http_trace.c.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <libxml/parser.h>

#include "gpuctl/clock.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"
#include "http_internal.h"

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
    xmlInitParser(); /* once, before any thread parses (trace redaction) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rng_state = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
                ((uint64_t)getpid() << 16) ^ 0x9e3779b97f4a7c15u;
    if (!rng_state)
        rng_state = 1;
}

void http_init_once(void)
{
    pthread_once(&init_once, global_init);
}

static int ensure_init(gpc_error *err)
{
    http_init_once();
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

double http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ---- interrupts ----------------------------------------------------------- */

/* Longest wait between two looks at the interrupt flag, ms. */
#define INTERRUPT_CHECK_MS 100

static const volatile sig_atomic_t *interrupt_flag; /* gpc_http_set_interrupt */
static sig_atomic_t interrupt_acked;                /* its value taken as seen */

void gpc_http_set_interrupt(const volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
    interrupt_acked = flag ? *flag : 0;
}

void gpc_http_interrupt_ack(void)
{
    if (interrupt_flag)
        interrupt_acked = *interrupt_flag;
}

/* Interrupts since the last acknowledgement. */
static long interrupts(void)
{
    return interrupt_flag ? (long)*interrupt_flag - (long)interrupt_acked : 0;
}

/* ---- small helpers ------------------------------------------------------ */

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
    int64_t now = gpc_now(); /* the clock (clock.h), as a test sets it */
    return (int64_t)t > now ? (long)((int64_t)t - now) : 0;
}

/* ---- one transfer ------------------------------------------------------- */

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
    for (size_t i = 0; x->id_headers && x->id_headers[i] && !r->request_id[0]; i++)
        header_value(data, len, x->id_headers[i], r->request_id, sizeof(r->request_id));
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

/* ---- extra headers ------------------------------------------------------ */

int gpc_http_headers_add(gpc_http_headers *h, const char *name, const char *value,
                         gpc_error *err)
{
    if (!h || !name || !value)
        return gpc_fail(err, GPC_ERR_USAGE, "http: header without a name or value");
    size_t nlen = strlen(name), vlen = strlen(value);
    if (!nlen)
        return gpc_fail(err, GPC_ERR_USAGE, "http: header with an empty name");
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= 0x20 || c == 0x7f || c == ':')
            return gpc_fail(err, GPC_ERR_USAGE, "http: a header name holds a blank, ':' "
                            "or a control character");
    }
    if (strpbrk(value, "\r\n"))
        return gpc_fail(err, GPC_ERR_USAGE, "http: header %.64s: value holds a line break", name);
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        char **v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return gpc_fail(err, GPC_ERR_NOMEM, "http: out of memory adding a header");
        h->v = v;
        h->cap = cap;
    }
    char *line = malloc(nlen + vlen + 3);
    if (!line)
        return gpc_fail(err, GPC_ERR_NOMEM, "http: out of memory adding a header");
    memcpy(line, name, nlen);
    memcpy(line + nlen, ": ", 2);
    memcpy(line + nlen + 2, value, vlen + 1);
    h->v[h->n++] = line;
    return 0;
}

void gpc_http_headers_free(gpc_http_headers *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i]);
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

/* ---- connection cache --------------------------------------------------- */

struct gpc_http_client {
    CURLSH *share; /* connections, DNS answers and TLS sessions */
};

int gpc_http_client_new(gpc_http_client **out, gpc_error *err)
{
    *out = NULL;
    int rc = ensure_init(err);
    if (rc)
        return rc;
    gpc_http_client *c = calloc(1, sizeof(*c));
    if (!c)
        return gpc_fail(err, GPC_ERR_NOMEM, "http: out of memory making a client");
    if (!(c->share = curl_share_init())) {
        free(c);
        return gpc_fail(err, GPC_ERR_NOMEM, "http: out of memory making a client");
    }
    /* No lock callbacks: a client is used by one thread at a time. */
    if (curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
        curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
        curl_share_cleanup(c->share);
        free(c);
        return gpc_fail(err, GPC_ERR_INTERNAL, "http: libcurl cannot share connections");
    }
    *out = c;
    return 0;
}

void gpc_http_client_free(gpc_http_client *c)
{
    if (!c)
        return;
    curl_share_cleanup(c->share); /* closes the cached connections */
    free(c);
}

/* ---- requests ----------------------------------------------------------- */

static int has_header(const gpc_http_request *req, const gpc_http_headers *extra,
                      const char *name)
{
    size_t nlen = strlen(name);
    for (size_t i = 0; i < req->n_headers; i++)
        if (strncasecmp(req->headers[i], name, nlen) == 0 && req->headers[i][nlen] == ':')
            return 1;
    for (size_t i = 0; extra && i < extra->n; i++)
        if (strncasecmp(extra->v[i], name, nlen) == 0 && extra->v[i][nlen] == ':')
            return 1;
    return 0;
}

/* The Content-Type the request says it has, for the trace. */
static int body_kind(const gpc_http_request *req, const gpc_http_headers *extra)
{
    char type[128] = "";
    for (size_t i = 0; i < req->n_headers && !type[0]; i++)
        header_value(req->headers[i], strlen(req->headers[i]), "content-type", type,
                     sizeof(type));
    for (size_t i = 0; extra && i < extra->n && !type[0]; i++)
        header_value(extra->v[i], strlen(extra->v[i]), "content-type", type, sizeof(type));
    if (http_holds_word(type, strlen(type), "x-www-form-urlencoded"))
        return BODY_FORM;
    if (http_holds_word(type, strlen(type), "json"))
        return BODY_JSON;
    if (!type[0] && req->body && req->body_len) {
        const char *b = req->body;
        size_t i = 0;
        while (i < req->body_len && isspace((unsigned char)b[i]))
            i++;
        if (i < req->body_len && (b[i] == '{' || b[i] == '['))
            return BODY_JSON;
    }
    return BODY_OTHER;
}

static int check_headers(const gpc_http_request *req, const char *what, gpc_error *err)
{
    for (size_t i = 0; i < req->n_headers; i++)
        if (!req->headers[i] || strpbrk(req->headers[i], "\r\n"))
            return gpc_fail(err, GPC_ERR_USAGE, "%s: request header %zu is empty or "
                            "holds a line break", what, i + 1);
    return 0;
}

/* Build one attempt's header list: the caller's, then the attempt's extra
 * ones, plus removal of curl's defaults that would change the request behind
 * the caller's back.  NULL when memory runs out. */
static struct curl_slist *build_headers(const gpc_http_request *req,
                                        const gpc_http_headers *extra, int with_body,
                                        int *no_mem)
{
    struct curl_slist *list = NULL, *t;
    *no_mem = 0;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (!(t = curl_slist_append(list, req->headers[i])))
            goto nomem;
        list = t;
    }
    for (size_t i = 0; i < extra->n; i++) {
        const char *line = extra->v[i];
        size_t len = strlen(line);
        if (len >= 2 && memcmp(line + len - 2, ": ", 2) == 0) {
            /* "Name: " would tell curl to drop the header; "Name;" sends it empty. */
            char *empty = strdup(line);
            if (!empty)
                goto nomem;
            empty[len - 2] = ';';
            empty[len - 1] = '\0';
            t = curl_slist_append(list, empty);
            free(empty);
        } else {
            t = curl_slist_append(list, line);
        }
        if (!t)
            goto nomem;
        list = t;
    }
    if (!has_header(req, extra, "Expect")) { /* no 100-continue round trip */
        if (!(t = curl_slist_append(list, "Expect:")))
            goto nomem;
        list = t;
    }
    if (with_body && !has_header(req, extra, "Content-Type")) { /* not form-urlencoded */
        if (!(t = curl_slist_append(list, "Content-Type:")))
            goto nomem;
        list = t;
    }
    return list;
nomem:
    curl_slist_free_all(list);
    *no_mem = 1;
    return NULL;
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

static int setup_handle(const engine *e, slot *s)
{
    CURL *h = s->h;
    const gpc_http_request *req = s->req;
    const char *method = s->method;
    SETOPT(h, CURLOPT_URL, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500
    SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    SETOPT(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    /* Always verify the peer and its name (libcurl's default, made explicit
     * so that no build or environment can change it). */
    SETOPT(h, CURLOPT_SSL_VERIFYPEER, 1L);
    SETOPT(h, CURLOPT_SSL_VERIFYHOST, 2L);
    SETOPT(h, CURLOPT_NOSIGNAL, 1L);
    SETOPT(h, CURLOPT_FOLLOWLOCATION, 0L);
    SETOPT(h, CURLOPT_TIMEOUT, e->timeout_s);
    SETOPT(h, CURLOPT_CONNECTTIMEOUT, e->connect_s);
    SETOPT(h, CURLOPT_ERRORBUFFER, s->errbuf);
    SETOPT(h, CURLOPT_USERAGENT, "gpuctl/" GPUCTL_VERSION);
    SETOPT(h, CURLOPT_ACCEPT_ENCODING, "");
    SETOPT(h, CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(h, CURLOPT_WRITEDATA, &s->x);
    SETOPT(h, CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(h, CURLOPT_HEADERDATA, &s->x);
    SETOPT(h, CURLOPT_PRIVATE, (void *)s);
    if (e->o->client)
        SETOPT(h, CURLOPT_SHARE, e->o->client->share);
    /* libcurl resends a request by itself only on a reused connection */
    if (req->fresh_connect)
        SETOPT(h, CURLOPT_FRESH_CONNECT, 1L);
    if (e->trace) {
        SETOPT(h, CURLOPT_DEBUGFUNCTION, http_on_debug);
        SETOPT(h, CURLOPT_DEBUGDATA, (void *)s);
        SETOPT(h, CURLOPT_VERBOSE, 1L);
    }

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

static void slot_done(slot *s, int rc)
{
    s->rc = rc;
    s->state = SLOT_DONE;
}

/* Check the request and make its handle; the slot is SLOT_WAIT after, or
 * SLOT_DONE with the error. */
static void slot_prepare(const engine *e, slot *s)
{
    const gpc_http_request *req = s->req;
    const char *what = e->what, *method = req->method ? req->method : "GET";
    s->method = method;
    s->state = SLOT_WAIT;
    gpc_buf_init(&s->sent, 64u << 10);
    response_init(s->resp, e->max_body);
    s->x.resp = s->resp;
    s->x.max_body = e->max_body;
    s->x.id_headers = e->o->request_id_headers;
    gpc_http_redact_url(req->url, s->shown, sizeof(s->shown));
    int rc;
    if (!req->url || !*req->url) {
        rc = gpc_fail(s->err, GPC_ERR_USAGE, "%s: %s request without a URL", what, method);
    } else if (!*method || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(method)) {
        rc = gpc_fail(s->err, GPC_ERR_USAGE, "%s: invalid HTTP method", what);
    } else if (!(rc = ensure_init(s->err)) && !(rc = check_headers(req, what, s->err))) {
        if (!(s->h = curl_easy_init()) || setup_handle(e, s))
            rc = gpc_fail(s->err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl set-up failed", what,
                          method, s->shown);
    }
    if (rc)
        slot_done(s, rc);
}

/* Start the next attempt: run the hook, set the headers, add the handle. */
static void slot_start(const engine *e, slot *s)
{
    const gpc_http_opts *o = e->o;
    gpc_http_headers extra = {0};
    int attempt = s->attempt + 1;
    if (o->before_attempt) {
        int hr = o->before_attempt(o->arg, s->req, attempt, &extra, s->err);
        if (hr) {
            if (hr < 0 || hr >= GPC_CODE_COUNT)
                hr = GPC_ERR_INTERNAL;
            gpc_fail(s->err, (gpc_code)hr, "%s: %s %s: before_attempt failed", e->what,
                     s->method, s->shown);
            gpc_http_headers_free(&extra);
            slot_done(s, hr);
            return;
        }
    }
    int no_mem;
    struct curl_slist *list = build_headers(s->req, &extra, sends_body(s->req, s->method),
                                            &no_mem);
    s->kind = body_kind(s->req, &extra);
    gpc_http_headers_free(&extra);
    if (no_mem) {
        slot_done(s, gpc_fail(s->err, GPC_ERR_NOMEM, "%s: out of memory building request "
                              "headers", e->what));
        return;
    }
    if (curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, list) != CURLE_OK) {
        curl_slist_free_all(list);
        slot_done(s, gpc_fail(s->err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl set-up failed",
                              e->what, s->method, s->shown));
        return;
    }
    curl_slist_free_all(s->headers); /* the previous attempt's; no longer used */
    s->headers = list;

    gpc_http_response *r = s->resp;
    gpc_buf_reset(&r->body);
    gpc_buf_reset(&r->headers);
    r->request_id[0] = '\0';
    r->retry_after_s = -1;
    r->status = 0;
    s->errbuf[0] = '\0';
    s->x.too_big = s->x.no_mem = 0;
    s->attempt = attempt;
    r->attempts = attempt;
    s->traced = 0;
    gpc_buf_reset(&s->sent);
    s->started_ms = http_now_ms();
    if (curl_multi_add_handle(e->multi, s->h) != CURLM_OK) {
        slot_done(s, gpc_fail(s->err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl set-up failed",
                              e->what, s->method, s->shown));
        return;
    }
    s->state = SLOT_RUN;
}

/* Ask the caller's rule, if any: should this failed attempt be retried? */
static int want_retry(const engine *e, const slot *s, int by_default)
{
    if (!e->o->should_retry)
        return by_default;
    int v = e->o->should_retry(e->o->arg, s->resp);
    return v == GPC_HTTP_RETRY ? 1 : v == GPC_HTTP_STOP ? 0 : by_default;
}

static void slot_retry_in(const engine *e, slot *s, long ms)
{
    if (e->o->on_retry)
        e->o->on_retry(e->o->arg, s->req, s->resp, s->attempt, ms);
    http_trace_retry(s, ms);
    s->state = SLOT_WAIT;
    s->due_ms = http_now_ms() + (double)ms;
}

/* The request failed for good (rc, just recorded into s->err): attach what
 * the service said, when s->err held nothing before this failure (fresh),
 * and end the slot. */
static void slot_failed(slot *s, int rc, int fresh, long status, int retryable)
{
    if (fresh)
        gpc_error_remote(s->err, status > 0 && status <= 999 ? (int)status : 0, NULL,
                         s->resp->request_id, retryable);
    slot_done(s, rc);
}

/* An attempt ended (its handle is out of the multi handle): success, a
 * retry later, or the final failure. */
static void slot_finish(const engine *e, slot *s, CURLcode cc)
{
    gpc_http_response *resp = s->resp;
    const char *what = e->what, *method = s->method, *shown = s->shown;
    int attempt = s->attempt;
    int fresh = s->err->code == GPC_OK; /* failures below are this request's */
    const char *text = s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc);
    if (cc == CURLE_OK && !s->x.too_big)
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &resp->status);
    http_trace_reply(s, cc, text);
    if (s->x.too_big) {
        long status = 0; /* a reply came, cut short: its status for the error */
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
        slot_failed(s, gpc_fail(s->err, GPC_ERR_PROVIDER, "%s: %s %s: response larger than "
                                "%zu bytes", what, method, shown, e->max_body),
                    fresh, status, 0);
        return;
    }
    if (s->x.no_mem) {
        slot_done(s, gpc_fail(s->err, GPC_ERR_NOMEM, "%s: %s %s: out of memory reading the "
                              "response", what, method, shown));
        return;
    }
    if (cc != CURLE_OK) {
        int again = want_retry(e, s, transient_curl_error(cc));
        if (again && attempt < e->max_attempts) {
            slot_retry_in(e, s, backoff_ms(attempt, e->base_ms, e->cap_ms));
            return;
        }
        if (attempt > 1)
            slot_failed(s, gpc_fail(s->err, GPC_ERR_PROVIDER, "%s: %s %s: %s (after %d "
                                    "attempts)", what, method, shown, text, attempt),
                        fresh, 0, again);
        else
            slot_failed(s, gpc_fail(s->err, GPC_ERR_PROVIDER, "%s: %s %s: %s", what, method,
                                    shown, text),
                        fresh, 0, again);
        return;
    }
    if (accepted_status(resp->status, e->o)) {
        slot_done(s, 0);
        return;
    }
    int again = want_retry(e, s, retryable_status(resp->status));
    if (again && attempt < e->max_attempts) {
        long cap = e->cap_ms;
        if (resp->retry_after_s >= 0)
            slot_retry_in(e, s, resp->retry_after_s > cap / 1000 ? cap
                                                                 : resp->retry_after_s * 1000);
        else
            slot_retry_in(e, s, backoff_ms(attempt, e->base_ms, cap));
        return;
    }
    if (attempt > 1)
        slot_failed(s, gpc_fail(s->err, GPC_ERR_PROVIDER, "%s: %s %s: HTTP %ld after %d "
                                "attempts", what, method, shown, resp->status, attempt),
                    fresh, resp->status, again);
    else
        slot_failed(s, gpc_fail(s->err, GPC_ERR_PROVIDER, "%s: %s %s: HTTP %ld", what, method,
                                shown, resp->status),
                    fresh, resp->status, again);
}

/* libcurl's multi handle failed: end every request not yet done. */
static void fail_all(const engine *e, slot *s, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i].state == SLOT_DONE)
            continue;
        if (s[i].state == SLOT_RUN)
            curl_multi_remove_handle(e->multi, s[i].h);
        slot_done(&s[i], gpc_fail(s[i].err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl: %s",
                                  e->what, s[i].method, s[i].shown, why));
    }
}

/*
 * After an interrupt (gpc_http_set_interrupt): every request not yet sent
 * or waiting to be retried ends with GPC_ERR_INTERRUPTED; after a second
 * one, those in flight too (whether the server acted on them is then
 * unknown).  Returns how many running transfers it ended.
 */
static size_t interrupt_slots(const engine *e, slot *s, size_t n)
{
    long k = interrupts();
    size_t ended = 0;
    for (size_t i = 0; k > 0 && i < n; i++) {
        if (s[i].state == SLOT_WAIT) {
            if (s[i].attempt > 0)
                slot_done(&s[i], gpc_fail(s[i].err, GPC_ERR_INTERRUPTED, "%s: %s %s: "
                                          "interrupted while waiting to retry (after %d "
                                          "attempt%s)", e->what, s[i].method, s[i].shown,
                                          s[i].attempt, s[i].attempt > 1 ? "s" : ""));
            else
                slot_done(&s[i], gpc_fail(s[i].err, GPC_ERR_INTERRUPTED, "%s: %s %s: "
                                          "interrupted before it was sent", e->what,
                                          s[i].method, s[i].shown));
        } else if (s[i].state == SLOT_RUN && k > 1) {
            curl_multi_remove_handle(e->multi, s[i].h);
            ended++;
            slot_done(&s[i], gpc_fail(s[i].err, GPC_ERR_INTERRUPTED, "%s: %s %s: interrupted "
                                      "while in flight (whether it was carried out is "
                                      "unknown)", e->what, s[i].method, s[i].shown));
        }
    }
    return ended;
}

/*
 * Nothing in flight: wait on the clock (clock.h) until `next_ms` (on
 * http_now_ms's timeline), the first waiting slot's due time; a signal
 * (an interrupt) ends the wait early.  A clock that returns sooner than the
 * real time asked for (a test's fixed clock) has moved its own time on:
 * the waiting slots' due times move on by what it skipped.
 */
static void wait_for_retry(slot *s, size_t n, double next_ms)
{
    double t0 = http_now_ms(), ms = next_ms - t0;
    if (ms <= 0)
        return;
    gpc_sleep(ms / 1000.0, interrupt_flag);
    double skipped = ms - (http_now_ms() - t0);
    for (size_t i = 0; skipped > 0 && !interrupts() && i < n; i++)
        if (s[i].state == SLOT_WAIT)
            s[i].due_ms -= skipped;
}

/* Run every prepared slot to its end. */
static void run(engine *e, slot *s, size_t n, size_t max_parallel)
{
    size_t running = 0;
    for (;;) {
        running -= interrupt_slots(e, s, n);
        double now = http_now_ms();
        for (size_t i = 0; i < n && running < max_parallel; i++)
            if (s[i].state == SLOT_WAIT && s[i].due_ms <= now) {
                slot_start(e, &s[i]);
                running += s[i].state == SLOT_RUN;
            }
        if (!running) {
            double next = -1;
            for (size_t i = 0; i < n; i++)
                if (s[i].state == SLOT_WAIT && (next < 0 || s[i].due_ms < next))
                    next = s[i].due_ms;
            if (next < 0)
                return; /* all done */
            wait_for_retry(s, n, next);
            continue;
        }
        int still;
        CURLMcode mc = curl_multi_perform(e->multi, &still);
        if (mc != CURLM_OK) {
            fail_all(e, s, n, curl_multi_strerror(mc));
            return;
        }
        CURLMsg *m;
        int queued;
        while ((m = curl_multi_info_read(e->multi, &queued))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *h = m->easy_handle;
            CURLcode cc = m->data.result;
            char *priv = NULL;
            curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
            curl_multi_remove_handle(e->multi, h); /* m is invalid from here */
            running--;
            slot_finish(e, (slot *)(void *)priv, cc);
        }
        /* Wait for traffic, or until a waiting request may start. */
        now = http_now_ms();
        double wait = 1000;
        int ready = 0;
        for (size_t i = 0; i < n && running < max_parallel; i++)
            if (s[i].state == SLOT_WAIT) {
                if (s[i].due_ms <= now)
                    ready = 1;
                else if (s[i].due_ms - now < wait)
                    wait = s[i].due_ms - now;
            }
        if (ready || !running)
            continue;
        if (wait > INTERRUPT_CHECK_MS)
            wait = INTERRUPT_CHECK_MS;
        mc = curl_multi_poll(e->multi, NULL, 0, (int)wait + 1, NULL);
        if (mc != CURLM_OK) {
            fail_all(e, s, n, curl_multi_strerror(mc));
            return;
        }
    }
}

static int send_many(const gpc_http_request *reqs, size_t n, const gpc_http_opts *opts,
                     size_t max_parallel, gpc_http_response *resps, int *rcs,
                     gpc_error *errs, int batch)
{
    static const gpc_http_opts defaults;
    const gpc_http_opts *o = opts ? opts : &defaults;
    engine e = {
        .o = o,
        .what = o->what ? o->what : "http",
        .timeout_s = o->timeout_s > 0 ? o->timeout_s : GPC_HTTP_TIMEOUT_S,
        .connect_s = o->connect_timeout_s > 0 ? o->connect_timeout_s
                                              : GPC_HTTP_CONNECT_TIMEOUT_S,
        .max_attempts = o->max_attempts > 0 ? o->max_attempts
                        : o->max_attempts < 0 ? 1 : GPC_HTTP_MAX_ATTEMPTS,
        .base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : GPC_HTTP_BACKOFF_BASE_MS,
        .cap_ms = o->backoff_cap_ms > 0 ? o->backoff_cap_ms : GPC_HTTP_BACKOFF_CAP_MS,
        .max_body = o->max_body ? o->max_body : GPC_HTTP_BODY_MAX,
        .trace = http_tracing(),
    };
    if (!max_parallel)
        max_parallel = GPC_HTTP_PARALLEL;
    slot *s = calloc(n, sizeof(*s));
    if (!s) {
        for (size_t i = 0; i < n; i++) {
            response_init(&resps[i], e.max_body);
            rcs[i] = gpc_fail(errs ? &errs[i] : NULL, GPC_ERR_NOMEM, "%s: out of memory",
                              e.what);
        }
        return rcs[0];
    }
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        s[i].req = &reqs[i];
        s[i].resp = &resps[i];
        s[i].err = errs ? &errs[i] : &s[i].scratch;
        if (batch)
            snprintf(s[i].tag, sizeof(s[i].tag), ", #%zu of %zu", i + 1, n);
        slot_prepare(&e, &s[i]);
        live += s[i].state != SLOT_DONE;
    }
    if (live && !(e.multi = curl_multi_init())) {
        for (size_t i = 0; i < n; i++)
            if (s[i].state != SLOT_DONE)
                slot_done(&s[i], gpc_fail(s[i].err, GPC_ERR_INTERNAL, "%s: %s %s: libcurl "
                                          "set-up failed", e.what, s[i].method, s[i].shown));
    }
    if (e.multi)
        run(&e, s, n, max_parallel);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].h)
            curl_easy_cleanup(s[i].h);
        curl_slist_free_all(s[i].headers);
        gpc_buf_free(&s[i].sent);
        rcs[i] = s[i].rc;
        if (!first)
            first = s[i].rc;
    }
    if (e.multi)
        curl_multi_cleanup(e.multi);
    free(s);
    return first;
}

int gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                  gpc_http_response *resp, gpc_error *err)
{
    int rc;
    return send_many(req, 1, opts, 1, resp, &rc, err, 0);
}

int gpc_http_send_all(const gpc_http_request *reqs, size_t n, const gpc_http_opts *opts,
                      size_t max_parallel, gpc_http_response *resps, int *rcs,
                      gpc_error *errs)
{
    if (!n)
        return 0;
    if (!reqs || !resps || !rcs || !errs)
        return GPC_ERR_USAGE; /* nowhere to say why */
    for (size_t i = 0; i < n; i++)
        gpc_error_clear(&errs[i]);
    return send_many(reqs, n, opts, max_parallel, resps, rcs, errs, 1);
}
