/*
 * test_http.c - gpc_http_send() against tests/fake/http_server.py: methods,
 * headers and bodies, which failures are retried and how often, Retry-After,
 * waits on the clock (a fixed one skips them), the body limit, transport
 * errors, and the URL shown in messages; the
 * per-attempt hook, the caller's retry rule, connection reuse,
 * gpc_http_send_all(), TLS verification, redaction and the --debug trace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fake/fixed_clock.h"
#include "fake/spawn.h"
#include "gpuctl/buf.h"
#include "gpuctl/clock.h"
#include "gpuctl/http.h"

static int setup(void **state)
{
    /* A proxy from the environment must not swallow 127.0.0.1. */
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    fake_server *s = calloc(1, sizeof(*s));
    if (!s || fake_start(s, "http_server.py", NULL)) {
        if (s)
            fake_stop(s);
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    fake_server *s = *state;
    fake_stop(s);
    free(s);
    return 0;
}

/* Tiny backoffs: the tests must not sleep unless they measure a sleep. */
static const gpc_http_opts quick = {.backoff_base_ms = 1, .backoff_cap_ms = 5,
                                    .what = "http test"};

/* Request id headers as a provider names them (any case). */
static const char *const rid_headers[] = {"X-Req-Id", "x-ms-request-id", "x-amz-request-id",
                                          NULL};

/* The remote details of err are exactly these. */
static void expect_remote(const gpc_error *err, int http_status, const char *request_id,
                          int retryable)
{
    assert_int_equal(err->remote.set, 1);
    assert_int_equal(err->remote.http_status, http_status);
    assert_string_equal(err->remote.code, ""); /* the HTTP layer knows no service code */
    assert_string_equal(err->remote.request_id, request_id);
    assert_int_equal(err->remote.retryable, retryable);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int get(fake_server *s, const char *target, const gpc_http_opts *o,
               gpc_http_response *resp, gpc_error *err)
{
    char url[2048];
    assert_true((size_t)snprintf(url, sizeof(url), "%s%s", s->base, target) < sizeof(url));
    gpc_http_request req = {.url = url};
    gpc_error_clear(err);
    return gpc_http_send(&req, o, resp, err);
}

static void test_post_echo(void **state)
{
    fake_server *s = *state;
    char url[256];
    snprintf(url, sizeof(url), "%s/echo?hdr=x-ms-request-id:req-42&hdr=X-Other:%%20v%%20", s->base);
    const char *headers[] = {"Content-Type: application/json", "X-Test: yes"};
    const char body[] = "{\"a\":1}";
    gpc_http_request req = {.method = "POST", .url = url, .headers = headers, .n_headers = 2,
                            .body = body, .body_len = strlen(body)};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    /* without a list of request id headers, none is read */
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
    assert_string_equal(resp.request_id, "");
    gpc_http_response_free(&resp);
    gpc_http_opts o = quick;
    o.request_id_headers = rid_headers;
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), 0);
    assert_int_equal(err.code, GPC_OK);
    assert_int_equal(err.remote.set, 0); /* a success attaches nothing */
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 1);
    assert_string_equal(resp.request_id, "req-42");
    assert_int_equal(resp.retry_after_s, -1);
    char v[64];
    assert_string_equal(gpc_http_header(&resp, "X-OTHER", v, sizeof(v)), "v");
    char want[32];
    snprintf(want, sizeof(want), "%zu", resp.body.len);
    assert_string_equal(gpc_http_header(&resp, "content-length", v, sizeof(v)), want);
    assert_null(gpc_http_header(&resp, "x-absent", v, sizeof(v)));
    assert_null(gpc_http_header(&resp, "HTTP/1.1 200 OK", v, sizeof(v)));
    /* the server saw the request as sent */
    cJSON *doc = cJSON_Parse(gpc_buf_str(&resp.body));
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "body")->valuestring, body);
    cJSON_Delete(doc);
    gpc_http_response_free(&resp);
}

static void test_methods_and_bodies(void **state)
{
    fake_server *s = *state;
    char url[256];
    snprintf(url, sizeof(url), "%s/echo", s->base);
    const char *headers[] = {"Content-Type: application/json", "X-Test: yes"};
    const char body[] = "{\"a\":1}";
    struct {
        const char *method;
        const void *body;
        size_t len;
        const char *want_body;
        const char *want_length; /* Content-Length seen; NULL = none */
        const char *want_type;   /* Content-Type seen; NULL = none */
        size_t n_headers;
    } cases[] = {
        {"POST", body, strlen(body), "{\"a\":1}", "7", "application/json", 2},
        {"POST", NULL, 0, "", "0", NULL, 0},         /* no curl form default */
        {"PUT", NULL, 0, "", "0", NULL, 0},          /* empty PUT says length 0 */
        {"PATCH", body, strlen(body), "{\"a\":1}", "7", NULL, 0},
        {"DELETE", NULL, 0, "", NULL, NULL, 0},
        {NULL, NULL, 0, "", NULL, "application/json", 2}, /* NULL = GET */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gpc_http_request req = {.method = cases[i].method, .url = url, .headers = headers,
                                .n_headers = cases[i].n_headers, .body = cases[i].body,
                                .body_len = cases[i].len};
        gpc_http_response resp;
        gpc_error err;
        gpc_error_clear(&err);
        assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
        cJSON *doc = cJSON_Parse(gpc_buf_str(&resp.body));
        assert_non_null(doc);
        const char *method = cases[i].method ? cases[i].method : "GET";
        assert_string_equal(cJSON_GetObjectItem(doc, "method")->valuestring, method);
        assert_string_equal(cJSON_GetObjectItem(doc, "body")->valuestring, cases[i].want_body);
        cJSON *h = cJSON_GetObjectItem(doc, "headers");
        cJSON *len = cJSON_GetObjectItem(h, "content-length");
        cJSON *type = cJSON_GetObjectItem(h, "content-type");
        if (cases[i].want_length)
            assert_string_equal(len ? len->valuestring : "(none)", cases[i].want_length);
        else
            assert_null(len);
        if (cases[i].want_type)
            assert_string_equal(type ? type->valuestring : "(none)", cases[i].want_type);
        else
            assert_null(type);
        assert_null(cJSON_GetObjectItem(h, "expect"));
        assert_memory_equal(cJSON_GetObjectItem(h, "user-agent")->valuestring, "gpuctl/", 7);
        if (cases[i].n_headers)
            assert_string_equal(cJSON_GetObjectItem(h, "x-test")->valuestring, "yes");
        cJSON_Delete(doc);
        gpc_http_response_free(&resp);
    }

    /* HEAD: a status, no body. */
    gpc_http_request req = {.method = "HEAD", .url = url};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.body.len, 0);
    gpc_http_response_free(&resp);
}

static void test_retry_503_then_ok(void **state)
{
    fake_server *s = *state;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/flaky?code=503&times=2&retry_after=0", &quick, &resp, &err), 0);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 3);
    assert_string_equal(gpc_buf_str(&resp.body), "{\"n\": 3}");
    gpc_http_response_free(&resp);
    char *log = fake_log(s);
    assert_string_equal(log, "GET /flaky?code=503&times=2&retry_after=0 503\n"
                             "GET /flaky?code=503&times=2&retry_after=0 503\n"
                             "GET /flaky?code=503&times=2&retry_after=0 200\n");
    free(log);
}

static void test_retried_statuses(void **state)
{
    fake_server *s = *state;
    static const int codes[] = {429, 500, 502, 503, 504};
    for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++) {
        char target[64];
        snprintf(target, sizeof(target), "/r%d?code=%d&times=1", codes[i], codes[i]);
        gpc_http_response resp;
        gpc_error err;
        assert_int_equal(get(s, target, &quick, &resp, &err), 0);
        assert_int_equal(resp.attempts, 2);
        gpc_http_response_free(&resp);
    }
}

static void test_4xx_not_retried(void **state)
{
    fake_server *s = *state;
    static const int codes[] = {400, 401, 403, 404, 409, 501};
    for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++) {
        char target[64], want[256];
        snprintf(target, sizeof(target), "/c%d?code=%d&sig=SECRET", codes[i], codes[i]);
        gpc_http_response resp;
        gpc_error err;
        assert_int_equal(get(s, target, &quick, &resp, &err), GPC_ERR_PROVIDER);
        assert_int_equal(err.code, GPC_ERR_PROVIDER);
        assert_int_equal(resp.attempts, 1);
        assert_int_equal(resp.status, codes[i]);
        /* the reply stays readable for the caller; the query is not shown */
        assert_string_equal(gpc_buf_str(&resp.body), "{\"n\": 1}");
        snprintf(want, sizeof(want), "http test: GET %s/c%d: HTTP %d", s->base, codes[i],
                 codes[i]);
        assert_string_equal(err.msg, want);
        gpc_http_response_free(&resp);
    }
    char *log = fake_log(s);
    assert_int_equal(fake_log_lines(log), 6);
    free(log);
}

static void test_retries_exhausted(void **state)
{
    fake_server *s = *state;
    gpc_http_opts o = quick;
    o.max_attempts = 3;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/down?code=503", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(resp.status, 503);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/down: HTTP 503 after 3 attempts", s->base);
    assert_string_equal(err.msg, want);
    gpc_http_response_free(&resp);

    /* The default is four attempts. */
    o.max_attempts = 0;
    assert_int_equal(get(s, "/down2?code=502", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 4);
    gpc_http_response_free(&resp);
}

/* ---- interrupts and retry notes ---------------------------------------- */

static volatile sig_atomic_t intr_flag;

typedef struct notes {
    int calls;
    int attempt[8];
    long status[8];
    long delay[8];
    int raise_on;        /* raise intr_flag by one in note number raise_on (1, 2, ...) */
} notes;

static void note(void *arg, const gpc_http_request *req, const gpc_http_response *resp,
                 int attempt, long delay_ms)
{
    (void)req;
    notes *n = arg;
    if (n->calls < 8) {
        n->attempt[n->calls] = attempt;
        n->status[n->calls] = resp->status;
        n->delay[n->calls] = delay_ms;
    }
    if (++n->calls == n->raise_on)
        intr_flag = intr_flag + 1;
}

static int raise_twice(void *arg, const gpc_http_request *req, int attempt,
                       gpc_http_headers *extra, gpc_error *err)
{
    (void)arg, (void)req, (void)attempt, (void)extra, (void)err;
    intr_flag = intr_flag + 2;
    return 0;
}

static void test_on_retry_notes(void **state)
{
    fake_server *s = *state;
    notes n = {0};
    gpc_http_opts o = quick;
    o.on_retry = note;
    o.arg = &n;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/note?code=503&times=2", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(n.calls, 2);
    assert_int_equal(n.attempt[0], 1);
    assert_int_equal(n.attempt[1], 2);
    assert_int_equal(n.status[0], 503);
    assert_int_equal(n.status[1], 503);
    /* full jitter under quick's ceilings: base 1 ms, then 2, capped at 5 */
    assert_in_range(n.delay[0], 0, 1);
    assert_in_range(n.delay[1], 0, 2);
    gpc_http_response_free(&resp);
}

static void test_interrupt_before_send(void **state)
{
    fake_server *s = *state;
    intr_flag = 0;
    gpc_http_set_interrupt(&intr_flag);
    intr_flag = 1;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/never", &quick, &resp, &err), GPC_ERR_INTERRUPTED);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/never: interrupted before it was sent",
             s->base);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.remote.set, 0); /* no request went out */
    assert_int_equal(resp.attempts, 0);
    gpc_http_response_free(&resp);
    char *log = fake_log(s);
    assert_int_equal(fake_log_lines(log), 0);
    free(log);
    /* once acknowledged, requests (a clean-up, say) go through again */
    gpc_http_interrupt_ack();
    assert_int_equal(get(s, "/after", &quick, &resp, &err), 0);
    gpc_http_response_free(&resp);
    gpc_http_set_interrupt(NULL);
}

static void test_interrupt_ends_retry_wait(void **state)
{
    fake_server *s = *state;
    intr_flag = 0;
    gpc_http_set_interrupt(&intr_flag);
    /* a long wait before the retry (Retry-After: 20 s, capped at 20 s); the
     * interrupt comes as the retry is planned and ends the wait at once */
    notes n = {.raise_on = 1};
    gpc_http_opts o = {.what = "http test", .backoff_cap_ms = 20000, .on_retry = note,
                       .arg = &n};
    gpc_http_response resp;
    gpc_error err;
    double t0 = now_ms();
    assert_int_equal(get(s, "/slow?code=503&retry_after=20", &o, &resp, &err),
                     GPC_ERR_INTERRUPTED);
    assert_true(now_ms() - t0 < 5000);
    assert_int_equal(n.calls, 1);
    assert_int_equal(n.delay[0], 20000);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/slow: interrupted while waiting to retry "
             "(after 1 attempt)", s->base);
    assert_string_equal(err.msg, want);
    /* the last reply stays readable */
    assert_int_equal(resp.status, 503);
    gpc_http_response_free(&resp);
    char *log = fake_log(s);
    assert_int_equal(fake_log_lines(log), 1);
    free(log);
    gpc_http_set_interrupt(NULL);
}

static void test_interrupt_twice_ends_transfer(void **state)
{
    fake_server *s = *state;
    intr_flag = 0;
    gpc_http_set_interrupt(&intr_flag);
    /* the server takes 20 s to answer; two interrupts while it is in
     * flight end the transfer */
    gpc_http_opts o = quick;
    o.before_attempt = raise_twice;
    gpc_http_response resp;
    gpc_error err;
    double t0 = now_ms();
    assert_int_equal(get(s, "/hang?code=200&ms=20000", &o, &resp, &err), GPC_ERR_INTERRUPTED);
    assert_true(now_ms() - t0 < 5000);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/hang: interrupted while in flight (whether "
             "it was carried out is unknown)", s->base);
    assert_string_equal(err.msg, want);
    gpc_http_response_free(&resp);
    gpc_http_set_interrupt(NULL);
}

static int raise_once(void *arg, const gpc_http_request *req, int attempt,
                      gpc_http_headers *extra, gpc_error *err)
{
    (void)arg, (void)req, (void)attempt, (void)extra, (void)err;
    intr_flag = intr_flag + 1;
    return 0;
}

static void test_interrupt_lets_flight_finish(void **state)
{
    fake_server *s = *state;
    intr_flag = 0;
    gpc_http_set_interrupt(&intr_flag);
    /* one interrupt while a request is in flight: its answer is not lost */
    gpc_http_opts o = quick;
    o.before_attempt = raise_once;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/fly?code=200&ms=300", &o, &resp, &err), 0);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 1);
    gpc_http_response_free(&resp);
    gpc_http_set_interrupt(NULL);
}

static void test_retry_after_honoured(void **state)
{
    fake_server *s = *state;
    gpc_http_response resp;
    gpc_error err;

    /* Retry-After: 1 with a 5 ms backoff cap... is capped to 5 ms. */
    double t0 = now_ms();
    assert_int_equal(get(s, "/ra0?code=429&times=1&retry_after=1", &quick, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    assert_true(now_ms() - t0 < 900);
    gpc_http_response_free(&resp);

    /* ...and waited for in full under a cap of 5 s (backoff alone: <= 1 ms). */
    gpc_http_opts o = quick;
    o.backoff_cap_ms = 5000;
    t0 = now_ms();
    assert_int_equal(get(s, "/ra1?code=429&times=1&retry_after=1", &o, &resp, &err), 0);
    double took = now_ms() - t0;
    assert_int_equal(resp.attempts, 2);
    assert_int_equal(resp.status, 200);
    assert_true(took >= 990);
    assert_true(took < 4000);
    gpc_http_response_free(&resp);

    /* A long Retry-After is capped at the backoff cap (300 ms here). */
    o.backoff_cap_ms = 300;
    t0 = now_ms();
    assert_int_equal(get(s, "/ra2?code=503&times=1&retry_after=3600", &o, &resp, &err), 0);
    took = now_ms() - t0;
    assert_true(took >= 290);
    assert_true(took < 2000);
    gpc_http_response_free(&resp);

    /* The last reply's Retry-After is reported. */
    o.max_attempts = 1;
    assert_int_equal(get(s, "/ra3?code=429&retry_after=7", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.retry_after_s, 7);
    gpc_http_response_free(&resp);
}

/* The wait before a retry is the clock's (clock.h): under a fixed clock a
 * Retry-After of 30 s, then one that is an HTTP date 30 s after the
 * clock's time, each move the clock on by 30 s and take no real time. */
static void test_retry_wait_on_the_clock(void **state)
{
    fake_server *s = *state;
    fixed_clock_at(1445412480); /* Wed, 21 Oct 2015 07:28:00 GMT */
    gpc_http_opts o = quick;
    o.backoff_cap_ms = 60000;
    gpc_http_response resp;
    gpc_error err;
    double t0 = now_ms();
    assert_int_equal(get(s, "/c1?code=503&times=1&retry_after=30", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    assert_int_equal(fixed_clock_now(), 1445412510);
    gpc_http_response_free(&resp);
    assert_int_equal(get(s, "/c2?code=429&times=1&retry_after=Wed,%2021%20Oct%202015"
                         "%2007:29:00%20GMT", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    assert_int_equal(fixed_clock_now(), 1445412540);
    gpc_http_response_free(&resp);
    assert_true(now_ms() - t0 < 5000);
    char *log = fake_log(s);
    assert_string_equal(log, "GET /c1?code=503&times=1&retry_after=30 503\n"
                             "GET /c1?code=503&times=1&retry_after=30 200\n"
                             "GET /c2?code=429&times=1&retry_after=Wed,%2021%20Oct%202015"
                             "%2007:29:00%20GMT 429\n"
                             "GET /c2?code=429&times=1&retry_after=Wed,%2021%20Oct%202015"
                             "%2007:29:00%20GMT 200\n");
    free(log);
}

static int teardown_clock(void **state)
{
    gpc_clock_set(NULL);
    return teardown(state);
}

static void test_body_limit(void **state)
{
    fake_server *s = *state;
    gpc_http_opts o = quick;
    o.max_body = 4096;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/big?bytes=4096", &o, &resp, &err), 0);
    assert_int_equal(resp.body.len, 4096);
    gpc_http_response_free(&resp);

    assert_int_equal(get(s, "/big?bytes=4097", &o, &resp, &err), GPC_ERR_PROVIDER);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/big: response larger than 4096 bytes",
             s->base);
    assert_string_equal(err.msg, want);
    assert_int_equal(resp.attempts, 1);
    gpc_http_response_free(&resp);

    /* Also on a retryable status: the limit ends it. */
    assert_int_equal(get(s, "/big?bytes=9999&code=503", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    gpc_http_response_free(&resp);
}

/* A port with nobody listening: bind, read the port, close. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

static void test_connection_refused(void **state)
{
    (void)state;
    int port = dead_port();
    assert_true(port > 0);
    char url[128], prefix[128];
    snprintf(url, sizeof(url), "http://user:pw@127.0.0.1:%d/p?token=SECRET", port);
    snprintf(prefix, sizeof(prefix), "http test: GET http://127.0.0.1:%d/p: ", port);
    gpc_http_opts o = quick;
    o.max_attempts = 2;
    gpc_http_request req = {.url = url};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 2);
    assert_int_equal(resp.status, 0);
    assert_memory_equal(err.msg, prefix, strlen(prefix));
    const char *tail = " (after 2 attempts)";
    assert_string_equal(err.msg + strlen(err.msg) - strlen(tail), tail);
    assert_null(strstr(err.msg, "SECRET"));
    assert_null(strstr(err.msg, "pw"));
    gpc_http_response_free(&resp);
}

static void test_transient_transport_errors(void **state)
{
    fake_server *s = *state;
    gpc_http_response resp;
    gpc_error err;
    /* An empty reply (connection closed) is retried... */
    assert_int_equal(get(s, "/drop?drop=1&times=1", &quick, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    gpc_http_response_free(&resp);
    /* ...and so is a timeout. */
    gpc_http_opts o = quick;
    o.timeout_s = 1;
    assert_int_equal(get(s, "/slow?ms=3000&times=1", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    gpc_http_response_free(&resp);
    /* With one attempt, the curl text stands alone. */
    o.max_attempts = 1;
    assert_int_equal(get(s, "/drop2?drop=1", &o, &resp, &err), GPC_ERR_PROVIDER);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/drop2: Empty reply from server", s->base);
    assert_string_equal(err.msg, want);
    gpc_http_response_free(&resp);
}

static void test_accept_list(void **state)
{
    fake_server *s = *state;
    static const long accept[] = {404};
    gpc_http_opts o = quick;
    o.accept = accept;
    o.n_accept = 1;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/gone?code=404", &o, &resp, &err), 0);
    assert_int_equal(resp.status, 404);
    assert_int_equal(err.code, GPC_OK);
    gpc_http_response_free(&resp);
}

static void test_bad_requests(void **state)
{
    (void)state;
    const char *headers[] = {"X-A: 1\r\nX-Injected: 2"};
    gpc_http_request req = {.url = "http://127.0.0.1:9/", .headers = headers, .n_headers = 1};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http test: request header 1 is empty or holds a line break");
    gpc_http_response_free(&resp);

    gpc_http_request injected = {.method = "GET /x HTTP/1.1\r\nX:", .url = "http://127.0.0.1:9/"};
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&injected, &quick, &resp, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http test: invalid HTTP method");
    gpc_http_response_free(&resp);

    gpc_http_request none = {.method = "GET"};
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&none, NULL, &resp, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http: GET request without a URL");
    gpc_http_response_free(&resp);
    gpc_http_response_free(NULL);
}

static void test_redact_and_escape(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"https://user:pw@host.example:443/a/b?sig=x&t=y#frag", "https://host.example:443/a/b"},
        {"https://prices.azure.com/api/retail/prices?$filter=x", "https://prices.azure.com/api/retail/prices"},
        {"http://h/p#f", "http://h/p"},
        {"http://h", "http://h"},
        {"http://u@h?q", "http://h"},
        {"/relative/path?q=1", "/relative/path"},
        {"", ""},
    };
    char out[128];
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gpc_http_redact_url(cases[i][0], out, sizeof(out));
        assert_string_equal(out, cases[i][1]);
    }
    gpc_http_redact_url("https://host/abcdef", out, 12);
    assert_string_equal(out, "https://hos");

    gpc_buf b;
    gpc_buf_init(&b, 1024);
    assert_int_equal(gpc_http_escape("a b'c(d)=&$~_.-Z9", &b, NULL), 0);
    assert_string_equal(gpc_buf_str(&b), "a%20b%27c%28d%29%3D%26%24~_.-Z9");
    gpc_buf_free(&b);
    gpc_buf_init(&b, 4);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_escape("a b", &b, &err), GPC_ERR_NOMEM);
    gpc_buf_free(&b);
}

/* ---- per-attempt hook --------------------------------------------------- */

typedef struct hook_log {
    int n;                              /* calls */
    int attempts[32];
    const gpc_http_request *reqs[32];
    int fail_at;                        /* fail at this attempt; 0 = never */
    int fail_code;
    int fill_err;                       /* say why when failing */
    const char *extra_name, *extra_value; /* one more header, if set */
} hook_log;

static int before_hook(void *arg, const gpc_http_request *req, int attempt,
                       gpc_http_headers *extra, gpc_error *err)
{
    hook_log *h = arg;
    if (h->n < 32) {
        h->attempts[h->n] = attempt;
        h->reqs[h->n] = req;
    }
    h->n++;
    assert_int_equal(extra->n, 0); /* a fresh list every attempt */
    if (h->fail_at == attempt)
        return h->fill_err ? gpc_fail(err, (gpc_code)h->fail_code, "hook: no credentials")
                           : h->fail_code;
    char v[16];
    snprintf(v, sizeof(v), "%d", attempt);
    int rc = gpc_http_headers_add(extra, "X-Attempt", v, err);
    if (!rc && h->extra_name)
        rc = gpc_http_headers_add(extra, h->extra_name, h->extra_value, err);
    return rc;
}

static void test_before_attempt(void **state)
{
    fake_server *s = *state;
    char url[256];
    snprintf(url, sizeof(url), "%s/flaky?code=503&times=2&log_hdr=X-Attempt&log_hdr=X-Static",
             s->base);
    const char *headers[] = {"X-Static: s"};
    gpc_http_request req = {.url = url, .headers = headers, .n_headers = 1};
    hook_log h = {0};
    gpc_http_opts o = quick;
    o.before_attempt = before_hook;
    o.arg = &h;
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(h.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(h.attempts[i], i + 1);
        assert_ptr_equal(h.reqs[i], &req);
    }
    gpc_http_response_free(&resp);
    char *log = fake_log(s);
    const char *t = "GET /flaky?code=503&times=2&log_hdr=X-Attempt&log_hdr=X-Static";
    char want[1024];
    snprintf(want, sizeof(want),
             "%s 503 X-Attempt=1 X-Static=s\n%s 503 X-Attempt=2 X-Static=s\n"
             "%s 200 X-Attempt=3 X-Static=s\n", t, t, t);
    assert_string_equal(log, want);
    free(log);

    /* Extra headers: an empty value is sent empty; a Content-Type among them
     * counts as the request's. */
    snprintf(url, sizeof(url), "%s/echo", s->base);
    gpc_http_request post = {.method = "POST", .url = url, .body = "{}", .body_len = 2};
    hook_log h2 = {.extra_name = "Content-Type", .extra_value = "application/json"};
    o.arg = &h2;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&post, &o, &resp, &err), 0);
    cJSON *doc = cJSON_Parse(gpc_buf_str(&resp.body));
    cJSON *hd = cJSON_GetObjectItem(doc, "headers");
    assert_string_equal(cJSON_GetObjectItem(hd, "x-attempt")->valuestring, "1");
    assert_string_equal(cJSON_GetObjectItem(hd, "content-type")->valuestring,
                        "application/json");
    cJSON_Delete(doc);
    gpc_http_response_free(&resp);
    hook_log h3 = {.extra_name = "X-Empty", .extra_value = ""};
    o.arg = &h3;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&post, &o, &resp, &err), 0);
    doc = cJSON_Parse(gpc_buf_str(&resp.body));
    hd = cJSON_GetObjectItem(doc, "headers");
    assert_non_null(cJSON_GetObjectItem(hd, "x-empty"));
    assert_string_equal(cJSON_GetObjectItem(hd, "x-empty")->valuestring, "");
    assert_null(cJSON_GetObjectItem(hd, "content-type")); /* still no curl default */
    cJSON_Delete(doc);
    gpc_http_response_free(&resp);
}

static void test_before_attempt_fails(void **state)
{
    fake_server *s = *state;
    char url[256];
    snprintf(url, sizeof(url), "%s/f?code=503&times=5", s->base);
    gpc_http_request req = {.url = url};
    gpc_http_opts o = quick;
    o.before_attempt = before_hook;
    gpc_http_response resp;
    gpc_error err;

    /* Failing at attempt 2: the hook's code and message; the reply of
     * attempt 1 stays. */
    hook_log h = {.fail_at = 2, .fail_code = GPC_ERR_AUTH, .fill_err = 1};
    o.arg = &h;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "hook: no credentials");
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(resp.status, 503);
    assert_int_equal(h.n, 2);
    gpc_http_response_free(&resp);

    /* Failing at once without a word: nothing sent, a message of ours. */
    hook_log h2 = {.fail_at = 1, .fail_code = GPC_ERR_AUTH};
    o.arg = &h2;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), GPC_ERR_AUTH);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/f: before_attempt failed", s->base);
    assert_string_equal(err.msg, want);
    assert_int_equal(resp.attempts, 0);
    assert_int_equal(resp.status, 0);
    gpc_http_response_free(&resp);
    char *log = fake_log(s);
    assert_int_equal(fake_log_lines(log), 1);
    free(log);
}

static void test_headers_add(void **state)
{
    (void)state;
    gpc_http_headers h = {0};
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_headers_add(&h, "X-Amz-Date", "20150830T123600Z", &err), 0);
    assert_int_equal(gpc_http_headers_add(&h, "X-Empty", "", &err), 0);
    for (int i = 0; i < 20; i++) /* grows */
        assert_int_equal(gpc_http_headers_add(&h, "X-N", "v", &err), 0);
    assert_int_equal(h.n, 22);
    assert_string_equal(h.v[0], "X-Amz-Date: 20150830T123600Z");
    assert_string_equal(h.v[1], "X-Empty: ");
    static const char *const bad[][2] = {
        {"X-A", "1\r\nX-Injected: 2"}, {"X-A", "1\n"}, {"X-A\r\nX-B", "1"},
        {"X-A:", "1"}, {"X A", "1"}, {"", "1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        gpc_error_clear(&err);
        assert_int_equal(gpc_http_headers_add(&h, bad[i][0], bad[i][1], &err), GPC_ERR_USAGE);
        assert_int_equal(err.code, GPC_ERR_USAGE);
        assert_null(strchr(err.msg, '\n'));
    }
    assert_int_equal(h.n, 22);
    gpc_http_headers_free(&h);
    assert_int_equal(h.n, 0);
    assert_null(h.v);
    gpc_http_headers_free(&h);
    gpc_http_headers_free(NULL);
}

/* ---- the caller's retry rule --------------------------------------------- */

typedef struct rule_log {
    int answer;
    int calls;
    long statuses[32];
    int attempts[32];
} rule_log;

static int fixed_rule(void *arg, const gpc_http_response *resp)
{
    rule_log *r = arg;
    if (r->calls < 32) {
        r->statuses[r->calls] = resp->status;
        r->attempts[r->calls] = resp->attempts;
    }
    r->calls++;
    return r->answer;
}

/* EC2's rule (reference aws.md 3.2/3.3): never hot-loop on capacity, always
 * retry throttling, else the default. */
static int ec2_rule(void *arg, const gpc_http_response *resp)
{
    (void)arg;
    const char *b = gpc_buf_str(&resp->body);
    if (strstr(b, "<Code>InsufficientInstanceCapacity</Code>"))
        return GPC_HTTP_STOP;
    if (strstr(b, "<Code>RequestLimitExceeded</Code>"))
        return GPC_HTTP_RETRY;
    return GPC_HTTP_DEFAULT;
}

static void ec2_error_target(char *out, size_t size, const char *path, int code,
                             const char *ec2_code, int times)
{
    char doc[256];
    snprintf(doc, sizeof(doc), "<Response><Errors><Error><Code>%s</Code><Message>m</Message>"
             "</Error></Errors><RequestID>r</RequestID></Response>", ec2_code);
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    assert_int_equal(gpc_http_escape(doc, &b, NULL), 0);
    if (times)
        snprintf(out, size, "%s?code=%d&times=%d&ctype=text/xml&reply=%s", path, code, times,
                 gpc_buf_str(&b));
    else
        snprintf(out, size, "%s?code=%d&ctype=text/xml&reply=%s", path, code, gpc_buf_str(&b));
    gpc_buf_free(&b);
}

static void test_should_retry(void **state)
{
    fake_server *s = *state;
    gpc_http_opts o = quick;
    o.should_retry = fixed_rule;
    gpc_http_response resp;
    gpc_error err;

    /* STOP on a 500: one attempt. */
    rule_log stop = {.answer = GPC_HTTP_STOP};
    o.arg = &stop;
    assert_int_equal(get(s, "/s500?code=500", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(stop.calls, 1);
    assert_int_equal(stop.statuses[0], 500);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/s500: HTTP 500", s->base);
    assert_string_equal(err.msg, want);
    gpc_http_response_free(&resp);

    /* RETRY on a 400: retried, and not called for the success. */
    rule_log retry = {.answer = GPC_HTTP_RETRY};
    o.arg = &retry;
    assert_int_equal(get(s, "/r400?code=400&times=2", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(retry.calls, 2);
    assert_int_equal(retry.statuses[1], 400);
    assert_int_equal(retry.attempts[0], 1);
    assert_int_equal(retry.attempts[1], 2);
    gpc_http_response_free(&resp);

    /* ...but never past max_attempts. */
    rule_log retry2 = {.answer = GPC_HTTP_RETRY};
    o.arg = &retry2;
    o.max_attempts = 3;
    assert_int_equal(get(s, "/r400b?code=400", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(retry2.calls, 3);
    gpc_http_response_free(&resp);
    o.max_attempts = 0;

    /* DEFAULT: today's rule (503 retried, 400 not). */
    rule_log def = {.answer = GPC_HTTP_DEFAULT};
    o.arg = &def;
    assert_int_equal(get(s, "/d503?code=503&times=1", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    gpc_http_response_free(&resp);
    assert_int_equal(get(s, "/d400?code=400&times=1", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    gpc_http_response_free(&resp);
    assert_int_equal(def.calls, 2);

    /* Accepted statuses are successes: the rule is not asked. */
    static const long accept[] = {404};
    rule_log none = {.answer = GPC_HTTP_RETRY};
    o.arg = &none;
    o.accept = accept;
    o.n_accept = 1;
    assert_int_equal(get(s, "/a404?code=404", &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(none.calls, 0);
    gpc_http_response_free(&resp);
    o.accept = NULL;
    o.n_accept = 0;

    /* Transport failures reach the rule with status 0; STOP ends them. */
    int port = dead_port();
    assert_true(port > 0);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", port);
    gpc_http_request req = {.url = url};
    rule_log stop2 = {.answer = GPC_HTTP_STOP};
    o.arg = &stop2;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(stop2.calls, 1);
    assert_int_equal(stop2.statuses[0], 0);
    gpc_http_response_free(&resp);

    /* The EC2 rule: capacity (a 500) is not retried, throttling is. */
    char target[1024];
    o.should_retry = ec2_rule;
    o.arg = NULL;
    ec2_error_target(target, sizeof(target), "/ice", 500, "InsufficientInstanceCapacity", 0);
    assert_int_equal(get(s, target, &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(resp.status, 500);
    assert_non_null(strstr(gpc_buf_str(&resp.body), "InsufficientInstanceCapacity"));
    gpc_http_response_free(&resp);
    ec2_error_target(target, sizeof(target), "/rle", 400, "RequestLimitExceeded", 2);
    assert_int_equal(get(s, target, &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 3);
    gpc_http_response_free(&resp);
    ec2_error_target(target, sizeof(target), "/ie", 500, "InternalError", 1);
    assert_int_equal(get(s, target, &o, &resp, &err), 0);
    assert_int_equal(resp.attempts, 2);
    gpc_http_response_free(&resp);
}

/* ---- connection reuse ---------------------------------------------------- */

/* The fake's number for the connection a GET /echo came over. */
static int echo_conn(fake_server *s, gpc_http_client *c)
{
    gpc_http_opts o = quick;
    o.client = c;
    gpc_http_response resp;
    gpc_error err;
    assert_int_equal(get(s, "/echo", &o, &resp, &err), 0);
    cJSON *doc = cJSON_Parse(gpc_buf_str(&resp.body));
    assert_non_null(doc);
    int conn = cJSON_GetObjectItem(doc, "conn")->valueint;
    cJSON_Delete(doc);
    gpc_http_response_free(&resp);
    return conn;
}

/* A failed request's error carries the HTTP status, the request id of the
 * last reply and the retry rule's verdict (gpc_error_remote). */
static void test_error_remote_details(void **state)
{
    fake_server *s = *state;
    gpc_http_opts o = quick;
    o.request_id_headers = rid_headers;
    o.max_attempts = 2;
    gpc_http_response resp;
    gpc_error err;
    /* a 4xx: not retried, not retryable */
    assert_int_equal(get(s, "/d400?code=400&hdr=x-req-id:id-400", &o, &resp, &err),
                     GPC_ERR_PROVIDER);
    expect_remote(&err, 400, "id-400", 0);
    gpc_http_response_free(&resp);
    /* a 503 until the attempts run out: retryable */
    assert_int_equal(get(s, "/d503?code=503&hdr=x-amz-request-id:id-503", &o, &resp, &err),
                     GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 2);
    expect_remote(&err, 503, "id-503", 1);
    gpc_http_response_free(&resp);
    /* no reply at all: status 0, no id, retryable (a transient transport error) */
    assert_int_equal(get(s, "/ddrop?drop=1", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 2);
    expect_remote(&err, 0, "", 1);
    gpc_http_response_free(&resp);
    /* a reply over max_body: its status, never retryable */
    gpc_http_opts small = o;
    small.max_body = 16;
    assert_int_equal(get(s, "/dbig?bytes=17&code=503&hdr=x-req-id:id-big", &small, &resp, &err),
                     GPC_ERR_PROVIDER);
    expect_remote(&err, 503, "id-big", 0);
    gpc_http_response_free(&resp);
    /* the caller's rule decides: STOP on a 503 is not retryable, RETRY on
     * a 400 whose attempts ran out is */
    o.should_retry = fixed_rule;
    rule_log stop = {.answer = GPC_HTTP_STOP};
    o.arg = &stop;
    assert_int_equal(get(s, "/e503?code=503", &o, &resp, &err), GPC_ERR_PROVIDER);
    expect_remote(&err, 503, "", 0);
    gpc_http_response_free(&resp);
    rule_log retry = {.answer = GPC_HTTP_RETRY};
    o.arg = &retry;
    assert_int_equal(get(s, "/e400?code=400", &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 2);
    expect_remote(&err, 400, "", 1);
    gpc_http_response_free(&resp);
    /* first failure wins: an err that already held one keeps it all */
    gpc_error held;
    gpc_error_clear(&held);
    gpc_fail(&held, GPC_ERR_IO, "earlier");
    gpc_http_request req = {.url = NULL};
    char url[256];
    snprintf(url, sizeof(url), "%s/f400?code=400&hdr=x-req-id:id-f", s->base);
    req.url = url;
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &held), GPC_ERR_IO);
    assert_int_equal(held.code, GPC_ERR_IO);
    assert_string_equal(held.msg, "earlier");
    assert_int_equal(held.remote.set, 0);
    gpc_http_response_free(&resp);
    /* a batch: each error its own */
    char u1[256], u2[256];
    snprintf(u1, sizeof(u1), "%s/b404?code=404&hdr=x-req-id:id-b1", s->base);
    snprintf(u2, sizeof(u2), "%s/echo", s->base);
    gpc_http_request two[2] = {{.url = u1}, {.url = u2}};
    gpc_http_response resps[2];
    int rcs[2];
    gpc_error errs[2];
    gpc_http_opts b = quick;
    b.request_id_headers = rid_headers;
    assert_int_equal(gpc_http_send_all(two, 2, &b, 0, resps, rcs, errs), GPC_ERR_PROVIDER);
    expect_remote(&errs[0], 404, "id-b1", 0);
    assert_int_equal(rcs[1], 0);
    assert_int_equal(errs[1].remote.set, 0);
    gpc_http_response_free(&resps[0]);
    gpc_http_response_free(&resps[1]);
}

static void test_connection_reuse(void **state)
{
    fake_server *s = *state;
    /* Without a client: a new connection per call. */
    int a = echo_conn(s, NULL), b = echo_conn(s, NULL);
    assert_int_not_equal(a, b);

    /* With one: the same connection, call after call. */
    gpc_http_client *c = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_client_new(&c, &err), 0);
    assert_non_null(c);
    int c1 = echo_conn(s, c), c2 = echo_conn(s, c), c3 = echo_conn(s, c);
    assert_int_not_equal(c1, b);
    assert_int_equal(c1, c2);
    assert_int_equal(c2, c3);

    /* ...and in a batch (one at a time: they all fit on that connection). */
    char url[256];
    snprintf(url, sizeof(url), "%s/echo", s->base);
    gpc_http_request reqs[3] = {{.url = url}, {.url = url}, {.url = url}};
    gpc_http_response resps[3];
    int rcs[3];
    gpc_error errs[3];
    gpc_http_opts o = quick;
    o.client = c;
    assert_int_equal(gpc_http_send_all(reqs, 3, &o, 1, resps, rcs, errs), 0);
    for (int i = 0; i < 3; i++) {
        cJSON *doc = cJSON_Parse(gpc_buf_str(&resps[i].body));
        assert_int_equal(cJSON_GetObjectItem(doc, "conn")->valueint, c1);
        cJSON_Delete(doc);
        gpc_http_response_free(&resps[i]);
    }
    assert_int_equal(echo_conn(s, c), c1);

    /* A connection the server closed is replaced, not reused.  (libcurl
     * itself resends once on a fresh connection when a reused one dies
     * without a reply, so this may take one attempt or two.) */
    gpc_http_opts o2 = quick;
    o2.client = c;
    gpc_http_response resp;
    assert_int_equal(get(s, "/drop?drop=1&times=1", &o2, &resp, &err), 0);
    assert_true(resp.attempts >= 1 && resp.attempts <= 2);
    gpc_http_response_free(&resp);
    int c4 = echo_conn(s, c);
    assert_int_not_equal(c4, c1);
    assert_int_equal(echo_conn(s, c), c4);
    gpc_http_client_free(c);
    gpc_http_client_free(NULL);

    /* A new client: a new connection. */
    assert_int_equal(gpc_http_client_new(&c, &err), 0);
    assert_int_not_equal(echo_conn(s, c), c1);
    gpc_http_client_free(c);
}

/* fresh_connect: no silent resend by libcurl on a reused connection that
 * dies without a reply (a POST that must not be carried out twice, EC2's
 * AllocateAddress: regression, the lost call was made twice). */
static void test_fresh_connect(void **state)
{
    fake_server *s = *state;
    gpc_http_client *c = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_client_new(&c, &err), 0);
    int c1 = echo_conn(s, c);
    assert_int_equal(echo_conn(s, c), c1); /* a connection to reuse */
    char url[256];
    snprintf(url, sizeof(url), "%s/drop?drop=1&times=1&fresh=1", s->base);
    gpc_http_request req = {.method = "POST", .url = url, .body = "x", .body_len = 1,
                            .fresh_connect = 1};
    gpc_http_opts o = quick;
    o.client = c;
    o.max_attempts = 1;
    gpc_http_response resp;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), GPC_ERR_PROVIDER);
    assert_int_equal(resp.attempts, 1);
    assert_int_equal(resp.status, 0);
    gpc_http_response_free(&resp);
    /* sent exactly once: the next request of that target is its second */
    assert_int_equal(get(s, "/drop?drop=1&times=1&fresh=1", &quick, &resp, &err), 0);
    assert_string_equal(gpc_buf_str(&resp.body), "{\"n\": 2}");
    gpc_http_response_free(&resp);
    /* and it went on a new connection (an echo with fresh_connect) */
    snprintf(url, sizeof(url), "%s/echo", s->base);
    gpc_http_request er = {.url = url, .fresh_connect = 1};
    assert_int_equal(gpc_http_send(&er, &o, &resp, &err), 0);
    cJSON *doc = cJSON_Parse(gpc_buf_str(&resp.body));
    assert_non_null(doc);
    assert_int_not_equal(cJSON_GetObjectItem(doc, "conn")->valueint, c1);
    cJSON_Delete(doc);
    gpc_http_response_free(&resp);
    gpc_http_client_free(c);
}

/* ---- many at once -------------------------------------------------------- */

static void test_send_all(void **state)
{
    fake_server *s = *state;
    static const char *const targets[5] = {
        "/a?ms=300",                 /* ok at once (slow) */
        "/b?code=503&times=1",       /* fails, then ok */
        "/c?code=500",               /* fails for good */
        "/d?code=429&times=1&ms=300",/* fails (slowly), then ok */
        "/echo?i=4",                 /* ok at once */
    };
    char urls[5][256];
    gpc_http_request reqs[5];
    for (int i = 0; i < 5; i++) {
        snprintf(urls[i], sizeof(urls[i]), "%s%s", s->base, targets[i]);
        reqs[i] = (gpc_http_request){.url = urls[i]};
    }
    hook_log h = {0};
    gpc_http_opts o = quick;
    o.max_attempts = 3;
    o.before_attempt = before_hook;
    o.arg = &h;
    gpc_http_response resps[5];
    int rcs[5];
    gpc_error errs[5];
    for (int i = 0; i < 5; i++) { /* cleared by the call */
        errs[i].code = GPC_ERR_IO;
        snprintf(errs[i].msg, sizeof(errs[i].msg), "stale");
    }
    assert_int_equal(gpc_http_send_all(reqs, 5, &o, 0, resps, rcs, errs), GPC_ERR_PROVIDER);
    static const int want_rc[5] = {0, 0, GPC_ERR_PROVIDER, 0, 0};
    static const int want_attempts[5] = {1, 2, 3, 2, 1};
    static const char *const want_body[4] = {"{\"n\": 1}", "{\"n\": 2}", "{\"n\": 3}",
                                             "{\"n\": 2}"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rcs[i], want_rc[i]);
        assert_int_equal(errs[i].code, want_rc[i]);
        assert_int_equal(resps[i].attempts, want_attempts[i]);
        if (i < 4)
            assert_string_equal(gpc_buf_str(&resps[i].body), want_body[i]);
    }
    assert_int_equal(resps[2].status, 500);
    char want[256];
    snprintf(want, sizeof(want), "http test: GET %s/c: HTTP 500 after 3 attempts", s->base);
    assert_string_equal(errs[2].msg, want);
    assert_string_equal(errs[0].msg, "");
    /* Request 4's attempt header reached the server. */
    cJSON *doc = cJSON_Parse(gpc_buf_str(&resps[4].body));
    assert_string_equal(cJSON_GetObjectItem(doc, "path")->valuestring, "/echo?i=4");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "headers"), "x-attempt")->valuestring, "1");
    cJSON_Delete(doc);
    /* The hook ran once per attempt, with each request's own pointer. */
    assert_int_equal(h.n, 1 + 2 + 3 + 2 + 1);
    int seen[5] = {0};
    for (int k = 0; k < h.n; k++) {
        ptrdiff_t i = h.reqs[k] - reqs;
        assert_true(i >= 0 && i < 5);
        seen[i]++;
        assert_int_equal(h.attempts[k], seen[i]); /* 1, 2, ... per request */
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(seen[i], want_attempts[i]);
        gpc_http_response_free(&resps[i]);
    }

    /* Nothing to do; and a bad request among good ones fails alone. */
    assert_int_equal(gpc_http_send_all(reqs, 0, &o, 0, resps, rcs, errs), 0);
    gpc_http_request mixed[2] = {{.url = urls[4]}, {.method = "GET"}};
    o.before_attempt = NULL;
    assert_int_equal(gpc_http_send_all(mixed, 2, &o, 0, resps, rcs, errs), GPC_ERR_USAGE);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(rcs[1], GPC_ERR_USAGE);
    assert_string_equal(errs[1].msg, "http test: GET request without a URL");
    assert_int_equal(resps[1].attempts, 0);
    gpc_http_response_free(&resps[0]);
    gpc_http_response_free(&resps[1]);
}

static double batch_ms(fake_server *s, const char *prefix, int n, size_t max_parallel)
{
    char urls[8][256];
    gpc_http_request reqs[8];
    gpc_http_response resps[8];
    int rcs[8];
    gpc_error errs[8];
    for (int i = 0; i < n; i++) {
        snprintf(urls[i], sizeof(urls[i]), "%s/%s%d?ms=300", s->base, prefix, i);
        reqs[i] = (gpc_http_request){.url = urls[i]};
    }
    double t0 = now_ms();
    assert_int_equal(gpc_http_send_all(reqs, (size_t)n, &quick, max_parallel, resps, rcs, errs),
                     0);
    double took = now_ms() - t0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(rcs[i], 0);
        assert_string_equal(gpc_buf_str(&resps[i].body), "{\"n\": 1}");
        gpc_http_response_free(&resps[i]);
    }
    return took;
}

static void test_send_all_concurrent(void **state)
{
    fake_server *s = *state;
    /* Five 300 ms answers: one after another they would take 1.5 s. */
    assert_true(batch_ms(s, "p", 5, 0) < 1200);
    /* max_parallel holds: one at a time is serial, two at a time is 3 rounds. */
    assert_true(batch_ms(s, "q", 3, 1) >= 890);
    assert_true(batch_ms(s, "r", 5, 2) >= 890);
}

static void test_send_all_retry_wait_is_per_request(void **state)
{
    fake_server *s = *state;
    /* Request 0 is told to come back in 2 s; the four others (300 ms each,
     * two at a time) must not wait for it. */
    char urls[5][256];
    gpc_http_request reqs[5];
    gpc_http_response resps[5];
    int rcs[5];
    gpc_error errs[5];
    snprintf(urls[0], sizeof(urls[0]), "%s/later?code=503&times=1&retry_after=2", s->base);
    for (int i = 1; i < 5; i++)
        snprintf(urls[i], sizeof(urls[i]), "%s/w%d?ms=300", s->base, i);
    for (int i = 0; i < 5; i++)
        reqs[i] = (gpc_http_request){.url = urls[i]};
    gpc_http_opts o = quick;
    o.backoff_cap_ms = 5000;
    double t0 = now_ms();
    assert_int_equal(gpc_http_send_all(reqs, 5, &o, 2, resps, rcs, errs), 0);
    assert_true(now_ms() - t0 >= 1990);
    assert_int_equal(resps[0].attempts, 2);
    for (int i = 0; i < 5; i++)
        gpc_http_response_free(&resps[i]);
    /* The log: request 0's retry comes last, after the four others. */
    char *log = fake_log(s);
    assert_int_equal(fake_log_lines(log), 6);
    assert_memory_equal(log, "GET /later?code=503&times=1&retry_after=2 503\n", 46);
    const char *last = "GET /later?code=503&times=1&retry_after=2 200\n";
    assert_string_equal(log + strlen(log) - strlen(last), last);
    free(log);
}

/* ---- TLS ----------------------------------------------------------------- */

/*
 * Verification is on: a server whose certificate nobody vouches for is
 * refused, on every path (a call, a client, a batch), and not retried.
 * (The certificate is valid for 127.0.0.1; curl accepts it when told to
 * trust it, so the refusal is the missing trust, nothing else.)
 */
static void test_tls_verified(void **state)
{
    (void)state;
    fake_server tls;
    const char *const args[] = {"--tls", NULL};
    assert_int_equal(fake_start(&tls, "http_server.py", args), 0);
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/echo", tls.port);
    gpc_http_request req = {.url = url};
    gpc_http_client *c = NULL;
    assert_int_equal(gpc_http_client_new(&c, NULL), 0);
    for (int path = 0; path < 3; path++) {
        gpc_http_opts o = quick;
        o.client = path == 1 ? c : NULL;
        gpc_http_response resp;
        gpc_error err;
        gpc_error_clear(&err);
        int rc, rcs[1];
        if (path == 2)
            rc = gpc_http_send_all(&req, 1, &o, 0, &resp, rcs, &err);
        else
            rc = gpc_http_send(&req, &o, &resp, &err);
        assert_int_equal(rc, GPC_ERR_PROVIDER);
        assert_int_equal(resp.attempts, 1);
        assert_int_equal(resp.status, 0);
        assert_non_null(strstr(err.msg, "certificate"));
        /* a refused certificate is no passing failure */
        expect_remote(&err, 0, "", 0);
        gpc_http_response_free(&resp);
    }
    gpc_http_client_free(c);
    char *log = fake_log(&tls);
    assert_string_equal(log, ""); /* no request got through */
    free(log);
    fake_stop(&tls);
}

/* ---- redaction and trace ------------------------------------------------- */

static void test_redact_header(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/"
         "aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         "Authorization: AWS4-HMAC-SHA256 [redacted]"},
        {"authorization: Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig\r\n",
         "authorization: Bearer [redacted]"},
        {"Authorization: opaque-secret", "Authorization: [redacted]"},
        {"X-Amz-Security-Token: IQoJb3JpZ2luX2VjEXAMPLE//+=",
         "X-Amz-Security-Token: [redacted]"},
        {"x-aws-ec2-metadata-token: AQAEAEXAMPLE==", "x-aws-ec2-metadata-token: [redacted]"},
        {"Cookie: session=abc; other=def", "Cookie: [redacted]"},
        {"Set-Cookie: id=1; HttpOnly", "Set-Cookie: [redacted]"},
        {"Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: [redacted]"},
        {"Ocp-Apim-Subscription-Key: k", "Ocp-Apim-Subscription-Key: [redacted]"},
        {"api-key: k", "api-key: [redacted]"},
        {"X-Ms-Foo-Token: t", "X-Ms-Foo-Token: [redacted]"},
        {"X-Client-Secret: s", "X-Client-Secret: [redacted]"},
        {"X-Admin-Password:p", "X-Admin-Password: [redacted]"},
        {"X-Amz-Content-Sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "X-Amz-Content-Sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"X-Amz-Date: 20150830T123600Z", "X-Amz-Date: 20150830T123600Z"},
        {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
         "Content-Type: application/x-www-form-urlencoded; charset=utf-8"},
        {"Authorization:", "Authorization:"},
        {"no colon here", "no colon here"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gpc_buf b;
        gpc_buf_init(&b, 4096);
        gpc_http_redact_header(cases[i][0], &b);
        assert_string_equal(gpc_buf_str(&b), cases[i][1]);
        gpc_buf_free(&b);
    }
}

/* The words providers/aws adds (its table's secret_words). */
static void add_ec2_words(void)
{
    static const gpc_http_word ec2[] = {
        {GPC_HTTP_SECRET_HEADER, "x-amz-security-token"},
        {GPC_HTTP_SECRET_HEADER, "x-aws-ec2-metadata-token"},
        {GPC_HTTP_PUBLIC_NAME, "ClientToken"},
        {GPC_HTTP_PUBLIC_NAME, "NextToken"},
        {GPC_HTTP_PUBLIC_NAME, "HttpTokens"},
        {GPC_HTTP_WORD_END, NULL},
    };
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_add_words(ec2, &err), 0);
}

static void test_redact_form(void **state)
{
    (void)state;
    const char *in =
        "Action=RunInstances&Version=2016-11-15&UserData=IyEvYmluL2Jhc2gKZWNobyBoaQ%3D%3D"
        "&KeyName=k&PublicKeyMaterial=c3NoLXJzYSBBQUFB&X-Amz-Signature=abc123"
        "&SecurityToken=tok%2Fen&LaunchSpecification.UserData=QUJD&Password=hunter2&Flag"
        "&X-Amz-Credential=AKID%2F20150830&Sig%6eature=x&CustomData=&&ClientSecret=";
    const char *want =
        "Action=RunInstances&Version=2016-11-15&UserData=[28 bytes]"
        "&KeyName=k&PublicKeyMaterial=c3NoLXJzYSBBQUFB&X-Amz-Signature=[redacted]"
        "&SecurityToken=[redacted]&LaunchSpecification.UserData=[4 bytes]&Password=[redacted]"
        "&Flag&X-Amz-Credential=[redacted]&Sig%6eature=[redacted]&CustomData=[0 bytes]&"
        "&ClientSecret=[redacted]";
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    gpc_http_redact_form(in, strlen(in), &b);
    assert_string_equal(gpc_buf_str(&b), want);
    gpc_buf_reset(&b);
    gpc_http_redact_form("", 0, &b);
    assert_string_equal(gpc_buf_str(&b), "");
    /* EC2's idempotency and pagination tokens and the IMDSv2 setting are
     * not secrets: shown as they are, once added as providers/aws adds
     * them (the helper itself knows no provider's names) */
    gpc_buf_reset(&b);
    const char *pub = "ClientToken=c-1&NextToken=n%2F2&MetadataOptions.HttpTokens=required"
                      "&X.SessionToken=s";
    gpc_http_redact_form(pub, strlen(pub), &b);
    assert_string_equal(gpc_buf_str(&b), "ClientToken=[redacted]&NextToken=[redacted]"
                        "&MetadataOptions.HttpTokens=[redacted]&X.SessionToken=[redacted]");
    add_ec2_words();
    gpc_buf_reset(&b);
    gpc_http_redact_form(pub, strlen(pub), &b);
    assert_string_equal(gpc_buf_str(&b), "ClientToken=c-1&NextToken=n%2F2"
                        "&MetadataOptions.HttpTokens=required&X.SessionToken=[redacted]");
    gpc_buf_reset(&b);
    gpc_http_redact_form("a=1&Token=2", 3, &b); /* only len bytes */
    assert_string_equal(gpc_buf_str(&b), "a=1");
    gpc_buf_free(&b);
}

static void test_redact_json(void **state)
{
    (void)state;
    const char *in =
        "{\"osProfile\": {\"adminUsername\": \"azureuser\", \"adminPassword\": \"Hunter2!\",\n"
        " \"customData\": \"IyEvYmluL2Jhc2g=\", \"secrets\": [{\"v\": 1}]},\n"
        " \"list\": [{\"client_secret\": \"cs\", \"name\": \"n\"},"
        " {\"nested\": {\"PASSWORD\": \"p\", \"ok\": true}}],\n"
        " \"userData\": 42, \"refresh_token\": \"rt\", \"n\": 1.5, \"publicKey\": \"ssh-rsa A\"}";
    const char *want =
        "{\"osProfile\":{\"adminUsername\":\"azureuser\",\"adminPassword\":\"[redacted]\","
        "\"customData\":\"[16 bytes]\",\"secrets\":\"[redacted]\"},"
        "\"list\":[{\"client_secret\":\"[redacted]\",\"name\":\"n\"},"
        "{\"nested\":{\"PASSWORD\":\"[redacted]\",\"ok\":true}}],"
        "\"userData\":\"[redacted]\",\"refresh_token\":\"[redacted]\",\"n\":1.5,"
        "\"publicKey\":\"ssh-rsa A\"}";
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    gpc_http_redact_json(in, strlen(in), &b);
    assert_string_equal(gpc_buf_str(&b), want);
    gpc_buf_reset(&b);
    gpc_http_redact_json("{oops", 5, &b);
    assert_string_equal(gpc_buf_str(&b), "[5 bytes, not valid JSON]");
    gpc_buf_reset(&b);
    gpc_http_redact_json("[{\"token\":\"t\"}]", 15, &b);
    assert_string_equal(gpc_buf_str(&b), "[{\"token\":\"[redacted]\"}]");
    gpc_buf_free(&b);
}

static void test_redact_xml(void **state)
{
    (void)state;
    const char *in =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>AuthFailure"
        "</Code><Message>bad</Message></Error></Errors><SessionToken>TOK</SessionToken>"
        "<a:SecretAccessKey xmlns:a=\"urn:x\">SAK</a:SecretAccessKey>"
        "<Item password=\"pw\" id=\"1\"><userData>QUJD</userData></Item>"
        "<RequestID>r-1</RequestID></Response>\n";
    const char *want =
        "<Response><Errors><Error><Code>AuthFailure</Code><Message>bad</Message></Error>"
        "</Errors><SessionToken>[redacted]</SessionToken>"
        "<a:SecretAccessKey xmlns:a=\"urn:x\">[redacted]</a:SecretAccessKey>"
        "<Item password=\"[redacted]\" id=\"1\"><userData>[4 bytes]</userData></Item>"
        "<RequestID>r-1</RequestID></Response>";
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    gpc_http_redact_xml(in, strlen(in), &b);
    assert_string_equal(gpc_buf_str(&b), want);
    gpc_buf_reset(&b);
    gpc_http_redact_xml("<Response><unclosed>", 20, &b);
    assert_string_equal(gpc_buf_str(&b), "[20 bytes, not well-formed XML]");
    gpc_buf_free(&b);
}

/* The whole of a stream's contents. */
static char *slurp(FILE *f)
{
    fflush(f);
    long size = ftell(f);
    assert_true(size >= 0);
    char *data = calloc(1, (size_t)size + 1);
    assert_non_null(data);
    rewind(f);
    assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
    return data;
}

static void test_trace(void **state)
{
    fake_server *s = *state;
    static const char *const secrets[] = {
        "AKIDSECRET1", "SIGSECRET2", "SESSIONSECRET3", "QUERYSECRET4", "FORMSECRET5",
        "USERDATASECRET6", "XMLSECRET7", "JSONSECRET8", "COOKIESECRET9", "PWSECRET10",
    };
    add_ec2_words(); /* ClientToken is shown */
    FILE *f = tmpfile();
    assert_non_null(f);
    gpc_http_set_trace(f);

    /* A signed form POST that the server echoes (echo bodies hold every
     * secret: success bodies must not be traced). */
    char url[512];
    snprintf(url, sizeof(url), "%s/echo?X-Amz-Signature=QUERYSECRET4&a=1#frag", s->base);
    const char *headers[] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        "X-Amz-Security-Token: SESSIONSECRET3",
        "Cookie: c=COOKIESECRET9",
    };
    const char body[] = "Action=RunInstances&KeyName=mykey&Signature=FORMSECRET5"
                        "&UserData=USERDATASECRET6&ClientToken=t-1";
    gpc_http_request req = {.method = "POST", .url = url, .headers = headers, .n_headers = 3,
                            .body = body, .body_len = strlen(body)};
    hook_log h = {.extra_name = "Authorization",
                  .extra_value = "AWS4-HMAC-SHA256 Credential=AKIDSECRET1/x, Signature=SIGSECRET2"};
    gpc_http_opts o = quick;
    o.before_attempt = before_hook;
    o.arg = &h;
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &resp, &err), 0);
    assert_non_null(strstr(gpc_buf_str(&resp.body), "FORMSECRET5")); /* it was sent */
    gpc_http_response_free(&resp);

    /* Error bodies: XML and JSON, redacted; a retry says its delay.  (The
     * fake answers with the request's body, an octet stream: not traced.) */
    const char *octets[] = {"Content-Type: application/octet-stream"};
    const char xml[] = "<Response><Errors><Error><Code>AuthFailure</Code></Error></Errors>"
                       "<SecretAccessKey>XMLSECRET7</SecretAccessKey></Response>";
    snprintf(url, sizeof(url), "%s/xmlerr?code=503&times=1&echo_body=1", s->base);
    gpc_http_request xreq = {.method = "POST", .url = url, .headers = octets, .n_headers = 1,
                             .body = xml, .body_len = strlen(xml)};
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&xreq, &quick, &resp, &err), 0);
    gpc_http_response_free(&resp);
    const char json[] = "{\"error\":{\"code\":\"Bad\",\"password\":\"JSONSECRET8\"}}";
    snprintf(url, sizeof(url), "%s/jsonerr?code=400&echo_body=1", s->base);
    gpc_http_request jereq = {.method = "POST", .url = url, .headers = octets, .n_headers = 1,
                              .body = json, .body_len = strlen(json)};
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&jereq, &quick, &resp, &err), GPC_ERR_PROVIDER);
    gpc_http_response_free(&resp);

    /* A JSON request body; a transport failure; a batch. */
    snprintf(url, sizeof(url), "%s/echo?hdr=x-amz-request-id:rid-9", s->base);
    const char jbody[] = "{\"adminPassword\":\"PWSECRET10\",\"n\":1}";
    gpc_http_request jreq = {.method = "PUT", .url = url, .body = jbody,
                             .body_len = strlen(jbody)};
    gpc_error_clear(&err);
    gpc_http_opts with_ids = quick;
    with_ids.request_id_headers = rid_headers;
    assert_int_equal(gpc_http_send(&jreq, &with_ids, &resp, &err), 0);
    gpc_http_response_free(&resp);
    char dead[128];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d/nobody", dead_port());
    gpc_http_request dreq = {.url = dead};
    gpc_http_opts one = quick;
    one.max_attempts = 1;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&dreq, &one, &resp, &err), GPC_ERR_PROVIDER);
    gpc_http_response_free(&resp);
    snprintf(url, sizeof(url), "%s/echo", s->base);
    gpc_http_request two[2] = {{.url = url}, {.url = url}};
    gpc_http_response resps[2];
    int rcs[2];
    gpc_error errs[2];
    assert_int_equal(gpc_http_send_all(two, 2, &quick, 0, resps, rcs, errs), 0);
    gpc_http_response_free(&resps[0]);
    gpc_http_response_free(&resps[1]);

    gpc_http_set_trace(NULL);
    char *t = slurp(f);
    fclose(f);
    for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++)
        if (strstr(t, secrets[i]))
            fail_msg("trace shows %s:\n%s", secrets[i], t);

    char want[512];
    snprintf(want, sizeof(want),
             "http: > POST %s/echo?X-Amz-Signature=[redacted]&a=1 (attempt 1)\n", s->base);
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof(want), "http: > Host: 127.0.0.1:%d\n", s->port);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "http: > Authorization: AWS4-HMAC-SHA256 [redacted]\n"));
    assert_non_null(strstr(t, "http: > X-Amz-Security-Token: [redacted]\n"));
    assert_non_null(strstr(t, "http: > Cookie: [redacted]\n"));
    assert_non_null(strstr(t, "http: > X-Attempt: 1\n"));
    assert_non_null(strstr(t, "http: > Action=RunInstances&KeyName=mykey&Signature=[redacted]"
                              "&UserData=[15 bytes]&ClientToken=t-1\n"));
    assert_non_null(strstr(t, "http: < 200 ("));
    assert_null(strstr(t, "\"method\"")); /* no success body */
    snprintf(want, sizeof(want), "http: > POST %s/xmlerr?code=503&times=1&echo_body=1 "
             "(attempt 2)\n", s->base);
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof(want), "http: > [%zu bytes, not shown]\n", strlen(xml));
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "http: < 503 ("));
    assert_non_null(strstr(t, "http: < <Response><Errors><Error><Code>AuthFailure</Code>"
                              "</Error></Errors><SecretAccessKey>[redacted]</SecretAccessKey>"
                              "</Response>\n"));
    assert_non_null(strstr(t, "http: retrying in "));
    assert_non_null(strstr(t, "http: < 400 ("));
    assert_non_null(strstr(t, "http: < {\"error\":{\"code\":\"Bad\",\"password\":\"[redacted]\"}}\n"));
    assert_non_null(strstr(t, "http: > {\"adminPassword\":\"[redacted]\",\"n\":1}\n"
                              "http: < 200 (request id rid-9, "));
    snprintf(want, sizeof(want), "http: > GET %s (attempt 1)\nhttp: < failed: ", dead);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "(attempt 1, #1 of 2)\n"));
    assert_non_null(strstr(t, "(attempt 1, #2 of 2)\n"));
    assert_non_null(strstr(t, "http: < 200 (#2 of 2, "));
    free(t);
}

/* One POST to /jsonerr (HTTP 400, the request body as the reply) with a
 * header and an error document that hold HDRSECRET1 and BODYSECRET2; the
 * trace it leaves (caller frees) and the error message into msg. */
static char *trace_of_words_request(const fake_server *s, char *msg, size_t size)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    gpc_http_set_trace(f);
    char url[512];
    snprintf(url, sizeof(url), "%s/jsonerr?code=400&echo_body=1", s->base);
    const char *headers[] = {"Content-Type: application/octet-stream",
                             "X-Gpuctl-Test-Session: HDRSECRET1"};
    const char body[] = "{\"error\":{\"code\":\"Bad\",\"sessionRef\":\"BODYSECRET2\"}}";
    gpc_http_request req = {.method = "POST", .url = url, .headers = headers, .n_headers = 2,
                            .body = body, .body_len = strlen(body)};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), GPC_ERR_PROVIDER);
    snprintf(msg, size, "%s", err.msg);
    gpc_http_response_free(&resp);
    gpc_http_set_trace(NULL);
    char *t = slurp(f);
    fclose(f);
    return t;
}

/* A word added at run time (as a provider's table adds it) is redacted in
 * trace lines and in the error document a reply carries; before, the
 * helper treats it like any other word. */
static void test_added_words(void **state)
{
    fake_server *s = *state;
    char msg[GPC_ERROR_MSG_MAX], want[256];
    snprintf(want, sizeof(want), "http test: POST %s/jsonerr: HTTP 400", s->base);

    char *t = trace_of_words_request(s, msg, sizeof(msg));
    assert_non_null(strstr(t, "http: > X-Gpuctl-Test-Session: HDRSECRET1\n"));
    assert_non_null(strstr(t, "http: < {\"error\":{\"code\":\"Bad\","
                              "\"sessionRef\":\"BODYSECRET2\"}}\n"));
    assert_string_equal(msg, want);
    free(t);
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    gpc_http_redact_form("SessionRef=1&a=2", 16, &b);
    assert_string_equal(gpc_buf_str(&b), "SessionRef=1&a=2");

    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_add_word(GPC_HTTP_SECRET_HEADER, "x-gpuctl-test-session", &err),
                     0);
    assert_int_equal(gpc_http_add_word(GPC_HTTP_SECRET_WORD, "sessionref", &err), 0);
    assert_int_equal(gpc_http_add_word(GPC_HTTP_SECRET_WORD, "SessionRef", &err), 0); /* again */

    t = trace_of_words_request(s, msg, sizeof(msg));
    if (strstr(t, "HDRSECRET1") || strstr(t, "BODYSECRET2"))
        fail_msg("trace shows a secret:\n%s", t);
    assert_non_null(strstr(t, "http: > X-Gpuctl-Test-Session: [redacted]\n"));
    assert_non_null(strstr(t, "http: < {\"error\":{\"code\":\"Bad\","
                              "\"sessionRef\":\"[redacted]\"}}\n"));
    assert_string_equal(msg, want);
    free(t);
    gpc_buf_reset(&b);
    gpc_http_redact_form("SessionRef=1&a=2", 16, &b);
    assert_string_equal(gpc_buf_str(&b), "SessionRef=[redacted]&a=2");
    gpc_buf_reset(&b);
    gpc_http_redact_xml("<R><MySessionRef a=\"1\">x</MySessionRef></R>", 43, &b);
    assert_string_equal(gpc_buf_str(&b), "<R><MySessionRef a=\"1\">[redacted]</MySessionRef></R>");
    gpc_buf_free(&b);

    /* what the helper refuses */
    assert_int_equal(gpc_http_add_word(GPC_HTTP_SECRET_WORD, "", &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http: a redaction word must have 1 to 63 bytes");
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_add_word(GPC_HTTP_SECRET_HEADER, "x-a b", &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http: redaction word 'x-a b' holds a blank, ':' or a control "
                        "character");
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_add_word(GPC_HTTP_WORD_END, "x", &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "http: redaction word of unknown kind 0");
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_add_words(NULL, &err), 0);
}

/* Request bodies are traced up to 4 KiB; other bodies not at all. */
static void test_trace_limits(void **state)
{
    fake_server *s = *state;
    FILE *f = tmpfile();
    assert_non_null(f);
    gpc_http_set_trace(f);
    char url[256];
    snprintf(url, sizeof(url), "%s/echo", s->base);
    size_t len = 10000;
    char *big = malloc(len + 1);
    assert_non_null(big);
    memcpy(big, "a=", 2);
    memset(big + 2, 'x', len - 2);
    big[len] = '\0';
    const char *form[] = {"Content-Type: application/x-www-form-urlencoded"};
    const char *octets[] = {"Content-Type: application/octet-stream"};
    gpc_http_request req = {.method = "POST", .url = url, .headers = form, .n_headers = 1,
                            .body = big, .body_len = len};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
    gpc_http_response_free(&resp);
    req.headers = octets;
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
    gpc_http_response_free(&resp);
    gpc_http_set_trace(NULL);
    char *t = slurp(f);
    fclose(f);
    char want[64];
    snprintf(want, sizeof(want), "x [... %zu more bytes]\n", len - GPC_HTTP_TRACE_BODY_MAX);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "http: > [10000 bytes, not shown]\n"));
    free(t);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_post_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_methods_and_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_503_then_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retried_statuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_4xx_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_remote_details, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_wait_on_the_clock, setup, teardown_clock),
        cmocka_unit_test_setup_teardown(test_on_retry_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_before_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_ends_retry_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_twice_ends_transfer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_lets_flight_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test_setup_teardown(test_transient_transport_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_list, setup, teardown),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_redact_and_escape),
        cmocka_unit_test_setup_teardown(test_before_attempt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_before_attempt_fails, setup, teardown),
        cmocka_unit_test(test_headers_add),
        cmocka_unit_test_setup_teardown(test_should_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_connect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_all_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_all_retry_wait_is_per_request, setup,
                                        teardown),
        cmocka_unit_test(test_tls_verified),
        cmocka_unit_test(test_redact_header),
        cmocka_unit_test(test_redact_form),
        cmocka_unit_test(test_redact_json),
        cmocka_unit_test(test_redact_xml),
        cmocka_unit_test_setup_teardown(test_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_added_words, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_limits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
