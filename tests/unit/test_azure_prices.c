/*
 * test_azure_prices.c - gpc_azure_retail_prices() against the fake Retail
 * Prices API in tests/fake/azure_prices.py and its fixture
 * tests/fake/azure_prices.items.json: which rows are chosen, the exact
 * requests (filters, $skip paging), SKU batching, retries and errors.
 *
 * Expected prices, from the fixture by hand (eastus unless said):
 *   Standard_NC4as_T4_v3      on-demand 0.526 (2023-04-01 row; the older
 *                             2021-03-01 row says 0.572), Spot 0.0627;
 *                             westus2: 0.526 and 0.0616
 *   Standard_ND96isr_H100_v5  on-demand 98.32 (2023-08-01), no Linux Spot
 *                             (only a Windows one) -> -1
 * Every Windows, Low Priority, DevTestConsumption and Reservation row, and
 * two synthetic ones (NC4as "Spot" in skuName only: 0.2; H100 unit
 * "10 Hours": 983.2), is dated 2025-01-01, later than the rows above, so a
 * rule left out would show up as a different price.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake/spawn.h"
#include "azure/prices.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"

#define NC4 "Standard_NC4as_T4_v3"
#define H100 "Standard_ND96isr_H100_v5"
#define PFX "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and "
#define ROWPFX "GET\t/api/retail/prices\t"

typedef struct fixture {
    fake_server srv;
    char endpoint[128];
} fixture;

static int setup(void **state)
{
    /* A proxy from the environment must not swallow 127.0.0.1. */
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->srv.in_fd = f->srv.out_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fake_stop(&f->srv);
    free(f);
    return 0;
}

/* Start the fake with extra flags (NULL-terminated). */
static void start(fixture *f, ...)
{
    const char *args[32];
    int n = 0;
    va_list ap;
    va_start(ap, f);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 31)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    assert_int_equal(fake_start(&f->srv, "azure_prices.py", args), 0);
    snprintf(f->endpoint, sizeof(f->endpoint), "%s/api/retail/prices", f->srv.base);
}

/* The request log without its last column (target length, checked apart). */
static char *log_rows(const fixture *f)
{
    char *log = fake_log(&f->srv);
    char *w = log;
    for (char *line = log; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *tab = NULL;
        for (size_t i = 0; i < len; i++)
            if (line[i] == '\t')
                tab = line + i;
        size_t keep = tab ? (size_t)(tab - line) : len;
        memmove(w, line, keep);
        w += keep;
        *w++ = '\n';
        line += len + (nl ? 1 : 0);
    }
    *w = '\0';
    return log;
}

/* Tiny backoffs; Retry-After from the fake is 0 unless a test says so. */
static const gpc_http_opts quick = {.backoff_base_ms = 1, .backoff_cap_ms = 5};

static void expect_price(const gpc_azure_price *p, const char *region, const char *sku,
                         double od, double spot, const char *effective)
{
    assert_string_equal(p->region, region);
    assert_string_equal(p->sku, sku);
    assert_true(p->ondemand_usd_hr == od);
    assert_true(p->spot_usd_hr == spot);
    assert_string_equal(p->effective, effective);
}

static int fetch(fixture *f, const char *const *regions, size_t nr, const char *const *skus,
                 size_t ns, const gpc_http_opts *o, gpc_azure_price **out, size_t *n,
                 gpc_error *err)
{
    gpc_error_clear(err);
    return gpc_azure_retail_prices(f->endpoint, regions, nr, skus, ns, o, out, n, err);
}

static void test_choose_rows_and_pages(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {NC4, H100, "Standard_NC999_v9"};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 3, &quick, &p, &n, &err), 0);
    assert_int_equal(n, 3);
    expect_price(&p[0], "eastus", NC4, 0.526, 0.0627, "2023-04-01T00:00:00Z");
    expect_price(&p[1], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    expect_price(&p[2], "eastus", "Standard_NC999_v9", -1, -1, "");
    free(p);

    /* Twelve Consumption rows match, two per page. */
#define F1 PFX "armRegionName eq 'eastus' and (armSkuName eq '" NC4 "' or armSkuName eq '" \
           H100 "' or armSkuName eq 'Standard_NC999_v9')"
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX F1 "\t-\t200\n"
                             ROWPFX F1 "\t2\t200\n"
                             ROWPFX F1 "\t4\t200\n"
                             ROWPFX F1 "\t6\t200\n"
                             ROWPFX F1 "\t8\t200\n"
                             ROWPFX F1 "\t10\t200\n");
    free(log);
}

/* With every price type served, the client's own type rule must hold. */
static void test_rules_hold_without_server_filter(void **state)
{
    fixture *f = *state;
    start(f, "--loose", "--page-size", "5", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {NC4, H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 2, &quick, &p, &n, &err), 0);
    assert_int_equal(n, 2);
    expect_price(&p[0], "eastus", NC4, 0.526, 0.0627, "2023-04-01T00:00:00Z");
    expect_price(&p[1], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    free(p);
    char *log = log_rows(f); /* 15 rows, 5 per page */
    assert_int_equal(fake_log_lines(log), 3);
    free(log);
}

static void test_two_regions(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    const char *regions[] = {"eastus", "westus2"};
    const char *skus[] = {NC4};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 2, skus, 1, &quick, &p, &n, &err), 0);
    assert_int_equal(n, 2);
    expect_price(&p[0], "eastus", NC4, 0.526, 0.0627, "2023-04-01T00:00:00Z");
    expect_price(&p[1], "westus2", NC4, 0.526, 0.0616, "2023-04-01T00:00:00Z");
    free(p);
#define FE PFX "armRegionName eq 'eastus' and (armSkuName eq '" NC4 "')"
#define FW PFX "armRegionName eq 'westus2' and (armSkuName eq '" NC4 "')"
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX FE "\t-\t200\n"
                             ROWPFX FE "\t2\t200\n"
                             ROWPFX FE "\t4\t200\n"
                             ROWPFX FE "\t6\t200\n"
                             ROWPFX FW "\t-\t200\n");
    free(log);
}

#define FH PFX "armRegionName eq 'eastus' and (armSkuName eq '" H100 "')"

static void test_retry_503(void **state)
{
    fixture *f = *state;
    start(f, "--fail-503", "2", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), 0);
    assert_int_equal(n, 1);
    expect_price(&p[0], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    free(p);
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX FH "\t-\t503\n"
                             ROWPFX FH "\t-\t503\n"
                             ROWPFX FH "\t-\t200\n"
                             ROWPFX FH "\t2\t200\n"
                             ROWPFX FH "\t4\t200\n");
    free(log);
}

static void test_retries_exhausted(void **state)
{
    fixture *f = *state;
    start(f, "--fail-503", "10", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p = (gpc_azure_price *)1;
    size_t n = 9;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), GPC_ERR_PROVIDER);
    assert_null(p);
    assert_int_equal(n, 0);
    char want[256];
    snprintf(want, sizeof(want), "azure retail prices: GET %s: HTTP 503 after 4 attempts",
             f->endpoint);
    assert_string_equal(err.msg, want);
    /* the service's code and request id (the 4th request), retries ran out */
    assert_int_equal(err.remote.set, 1);
    assert_int_equal(err.remote.http_status, 503);
    assert_string_equal(err.remote.code, "ServiceUnavailable");
    assert_string_equal(err.remote.request_id, "00000000-0000-4000-8000-000000000004");
    assert_int_equal(err.remote.retryable, 1);
    char *log = log_rows(f);
    assert_int_equal(fake_log_lines(log), 4);
    free(log);
}

static void test_429_retry_after(void **state)
{
    fixture *f = *state;
    start(f, "--fail-429", "1", "--retry-after", "1", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_http_opts o = quick;
    o.backoff_cap_ms = 5000; /* room for the 1 s the server asks for */
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(fetch(f, regions, 1, skus, 1, &o, &p, &n, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms >= 990);
    expect_price(&p[0], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    free(p);
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX FH "\t-\t429\n"
                             ROWPFX FH "\t-\t200\n"
                             ROWPFX FH "\t2\t200\n"
                             ROWPFX FH "\t4\t200\n");
    free(log);
}

static void test_400_not_retried(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    char endpoint[160];
    snprintf(endpoint, sizeof(endpoint), "%s?bogus=1", f->endpoint);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_azure_retail_prices(endpoint, regions, 1, skus, 1, &quick, &p, &n,
                                             &err), GPC_ERR_PROVIDER);
    assert_int_equal(err.code, GPC_ERR_PROVIDER);
    char want[256];
    snprintf(want, sizeof(want), "azure retail prices: GET %s: HTTP 400", f->endpoint);
    assert_string_equal(err.msg, want);
    assert_int_equal(gpc_exit_status(err.code), 6);
    assert_int_equal(err.remote.set, 1);
    assert_int_equal(err.remote.http_status, 400);
    assert_string_equal(err.remote.code, "BadRequest");
    assert_string_equal(err.remote.request_id, "00000000-0000-4000-8000-000000000001");
    assert_int_equal(err.remote.retryable, 0);
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX FH "\t-\t400\n");
    free(log);

    /* A query the service knows is kept, on every page. */
    snprintf(endpoint, sizeof(endpoint), "%s?api-version=2023-01-01-preview", f->endpoint);
    gpc_error_clear(&err);
    assert_int_equal(gpc_azure_retail_prices(endpoint, regions, 1, skus, 1, &quick, &p, &n,
                                             &err), 0);
    expect_price(&p[0], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    free(p);
}

static void test_body_limit(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_http_opts o = quick;
    o.max_body = 1000; /* a page of two items is about 1.8 kB */
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &o, &p, &n, &err), GPC_ERR_PROVIDER);
    char want[256];
    snprintf(want, sizeof(want), "azure retail prices: GET %s: response larger than 1000 bytes",
             f->endpoint);
    assert_string_equal(err.msg, want);
}

static void test_currency_not_usd(void **state)
{
    fixture *f = *state;
    start(f, "--currency", "EUR", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {NC4};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "azure retail prices: '" NC4 "' in eastus is priced in 'EUR', "
                                 "not USD");
    assert_null(p);
}

static void test_invalid_json(void **state)
{
    fixture *f = *state;
    start(f, "--invalid-json-at", "2", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "azure retail prices: response is not JSON (page 2)");
}

static void test_missing_items(void **state)
{
    fixture *f = *state;
    start(f, "--no-items-at", "1", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "azure retail prices: response has no Items array (page 1)");
}

static void test_stops_on_empty_page(void **state)
{
    fixture *f = *state;
    start(f, "--trailing-empty-pages", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), 0);
    expect_price(&p[0], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    free(p);
    char *log = log_rows(f);
    assert_string_equal(log, ROWPFX FH "\t-\t200\n"
                             ROWPFX FH "\t2\t200\n"
                             ROWPFX FH "\t4\t200\n"
                             ROWPFX FH "\t6\t200\n");
    free(log);
}

static void test_page_cap(void **state)
{
    fixture *f = *state;
    start(f, "--endless", NULL);
    const char *regions[] = {"eastus"};
    const char *skus[] = {H100};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, 1, &quick, &p, &n, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "azure retail prices: more than 100 pages for eastus");
    char *log = log_rows(f);
    assert_int_equal(fake_log_lines(log), 100);
    free(log);
}

/* Many SKUs: split over requests whose URLs stay within the limit. */
static void test_batches(void **state)
{
    fixture *f = *state;
    start(f, "--page-size", "100", NULL);
    enum { NS = 70 };
    char names[NS][40];
    const char *skus[NS];
    snprintf(names[0], sizeof(names[0]), "%s", NC4);
    for (int i = 1; i < NS - 1; i++)
        snprintf(names[i], sizeof(names[i]), "Standard_Fake%02d_v9", i);
    snprintf(names[NS - 1], sizeof(names[0]), "%s", H100);
    for (int i = 0; i < NS; i++)
        skus[i] = names[i];
    const char *regions[] = {"eastus"};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    assert_int_equal(fetch(f, regions, 1, skus, NS, &quick, &p, &n, &err), 0);
    assert_int_equal(n, NS);
    expect_price(&p[0], "eastus", NC4, 0.526, 0.0627, "2023-04-01T00:00:00Z");
    expect_price(&p[NS - 1], "eastus", H100, 98.32, -1, "2023-08-01T00:00:00Z");
    for (int i = 1; i < NS - 1; i++)
        expect_price(&p[i], "eastus", names[i], -1, -1, "");
    free(p);

    /* Every SKU asked for exactly once, in order; no URL over the limit. */
    char *log = fake_log(&f->srv);
    int requests = 0, next = 0;
    for (char *line = log; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        const char *len = strrchr(line, '\t');
        size_t url_len = strlen(f->srv.base) + strtoul(len + 1, NULL, 10);
        assert_true(url_len <= GPC_AZURE_PRICES_URL_MAX);
        assert_true(url_len > GPC_AZURE_PRICES_URL_MAX - 100 || !strstr(line, "Fake01"));
        const char *at = line;
        while ((at = strstr(at, "armSkuName eq '"))) {
            at += strlen("armSkuName eq '");
            assert_true(next < NS);
            assert_memory_equal(at, names[next], strlen(names[next]));
            assert_int_equal(at[strlen(names[next])], '\'');
            next++;
        }
        requests++;
        line = nl + 1;
    }
    assert_int_equal(next, NS);
    assert_true(requests >= 2);
    free(log);
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *good_r[] = {"eastus"}, *good_s[] = {NC4};
    const char *bad_r[] = {"east us"}, *bad_s[] = {"Standard_X' or armSkuName eq 'Y"};
    gpc_azure_price *p;
    size_t n;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_azure_retail_prices("http://127.0.0.1:9/x", bad_r, 1, good_s, 1, NULL,
                                             &p, &n, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "azure retail prices: invalid region name 'east us'");
    gpc_error_clear(&err);
    assert_int_equal(gpc_azure_retail_prices("http://127.0.0.1:9/x", good_r, 1, bad_s, 1, NULL,
                                             &p, &n, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "azure retail prices: invalid VM size "
                                 "'Standard_X' or armSkuName eq 'Y'");
    /* Nothing to ask: nothing sent, nothing returned. */
    gpc_error_clear(&err);
    assert_int_equal(gpc_azure_retail_prices("http://127.0.0.1:9/x", good_r, 1, good_s, 0, NULL,
                                             &p, &n, &err), 0);
    assert_null(p);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_choose_rows_and_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rules_hold_without_server_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_503, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_429_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_400_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_currency_not_usd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stops_on_empty_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_page_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
