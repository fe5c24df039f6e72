/*
 * test_http.c - gpc_http_send() against tests/fake/http_server.py: methods,
 * headers and bodies, which failures are retried and how often, Retry-After,
 * the body limit, transport errors, and the URL shown in messages.
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
#include <time.h>

#include <cjson/cJSON.h>

#include "fake/spawn.h"
#include "gpuctl/buf.h"
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

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int get(fake_server *s, const char *target, const gpc_http_opts *o,
               gpc_http_response *resp, gpc_error *err)
{
    char url[512];
    snprintf(url, sizeof(url), "%s%s", s->base, target);
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
    assert_int_equal(gpc_http_send(&req, &quick, &resp, &err), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_post_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_methods_and_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_503_then_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retried_statuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_4xx_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test_setup_teardown(test_transient_transport_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_list, setup, teardown),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_redact_and_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
