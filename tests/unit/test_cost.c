/* test_cost.c - the cost ledger over a window and owning against renting
 * (src/engine/cost.c), every amount worked out by hand below. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "fake/fixed_clock.h"
#include "gpuctl/catalog.h"
#include "gpuctl/cost.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"

#define H 3600
/* now: 2023-11-14T22:13:20Z */
#define NOW INT64_C(1700000000)
#define EPS 1e-9

/* cmocka 1.1 has no assert_double_equal: the same, to within eps */
#define assert_double_equal(a, b, eps) check_near((a), (b), (eps), __FILE__, __LINE__)
static void check_near(double a, double b, double eps, const char *file, int line)
{
    if (!(fabs(a - b) <= eps)) {
        print_error("%.12f != %.12f\n", a, b);
        _fail(file, line);
    }
}

#define OK(call)                                                   \
    do {                                                           \
        gpc_error e_;                                              \
        gpc_error_clear(&e_);                                      \
        gpc_error *err = &e_;                                      \
        int rc_ = (call);                                          \
        if (rc_ != 0)                                              \
            fail_msg("%s failed (%d): %s", #call, rc_, e_.msg);    \
    } while (0)

typedef struct fx {
    char dir[64];
    gpc_state *st;
} fx;

static int64_t add_cluster(gpc_state *st, const char *name, const char *provider)
{
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)name;
    c.uid = "0123456789abcdef0123456789abcdef";
    c.provider = (char *)provider;
    c.spec_hash = "hash";
    c.spec_json = "{}";
    c.spec_path = "";
    c.nodes = 2;
    c.exit_code = -1;
    c.created_at = NOW - 40 * H;
    OK(gpc_cluster_insert(st, &c, err));
    return c.id;
}

/* A node billed from `start` to `stop` (0: still billing) at `price`
 * USD/hour: recorded, then its ledger entry, as create.c does. */
static void add_node(gpc_state *st, int64_t cid, uint32_t rank, const char *name,
                     const char *provider, const char *type, const char *region, int spot,
                     double price, int64_t start, int64_t stop)
{
    gpc_node_rec n;
    memset(&n, 0, sizeof(n));
    n.cluster_id = cid;
    n.rank = rank;
    n.name = (char *)name;
    n.provider = (char *)provider;
    n.provider_id = "i-1";
    n.client_token = "";
    n.region = (char *)region;
    n.zone = "";
    n.instance_type = (char *)type;
    n.spot = spot;
    n.private_ip = "";
    n.price_hourly = price;
    n.phase = stop ? GPC_PHASE_TERMINATED : GPC_PHASE_RUNNING;
    n.exit_code = -1;
    n.created_at = start;
    n.started_at = start;
    n.ended_at = stop;
    OK(gpc_node_insert(st, &n, err));
    OK(gpc_ledger_open(st, cid, n.id, provider, type, price, start, err));
    if (stop)
        OK(gpc_ledger_close(st, n.id, stop, err));
}

/*
 * The ledger of every test:
 *   alpha (live, aws): rank 0 p4d.24xlarge us-east-1 on-demand 20.00 USD/h
 *                      from now-10h to now-4h;
 *                      rank 1 the same type, spot 8.00 USD/h, from now-10h,
 *                      still billing (open)
 *   beta (destroyed at now-20h, azure): rank 0 Standard_NC4as_T4_v3 westus2
 *                      spot 3.50 USD/h from now-30h to now-20h;
 *                      rank 1 the same type in westus3 (no catalog row
 *                      there) on-demand 1.25 USD/h from now-26h to now-21h
 */
static int setup(void **pstate)
{
    fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/gpuctl-test-cost-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    fixed_clock_at(NOW);
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_state_open(f->dir, &f->st, &e))
        return -1;
    int64_t a = add_cluster(f->st, "alpha", "aws");
    add_node(f->st, a, 0, "alpha-0", "aws", "p4d.24xlarge", "us-east-1", 0, 20.0,
             NOW - 10 * H, NOW - 4 * H);
    add_node(f->st, a, 1, "alpha-1", "aws", "p4d.24xlarge", "us-east-1", 1, 8.0,
             NOW - 10 * H, 0);
    int64_t b = add_cluster(f->st, "beta", "azure");
    add_node(f->st, b, 0, "beta-0", "azure", "Standard_NC4as_T4_v3", "westus2", 1, 3.5,
             NOW - 30 * H, NOW - 20 * H);
    add_node(f->st, b, 1, "beta-1", "azure", "Standard_NC4as_T4_v3", "westus3", 0, 1.25,
             NOW - 26 * H, NOW - 21 * H);
    gpc_cluster_rec c;
    OK(gpc_cluster_get_by_id(f->st, b, &c, err));
    c.destroyed_at = NOW - 20 * H;
    OK(gpc_cluster_update(f->st, &c, err));
    gpc_cluster_rec_free(&c);
    *pstate = f;
    return 0;
}

static int teardown(void **pstate)
{
    fx *f = *pstate;
    gpc_state_close(f->st);
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_rm_rf(f->dir, &e);
    free(f);
    gpc_clock_set(NULL);
    return rc;
}

static void check_sum(const gpc_cost_sum *s, const char *name, size_t rows, size_t open,
                      int64_t billed_s, double usd, double hourly_now)
{
    assert_string_equal(s->name, name);
    assert_int_equal(s->rows, rows);
    assert_int_equal(s->open, open);
    assert_int_equal(s->billed_s, billed_s);
    assert_double_equal(s->usd, usd, EPS);
    assert_double_equal(s->hourly_now, hourly_now, EPS);
}

/* Every entry, no window: whole stretches. */
static void test_all(void **pstate)
{
    fx *f = *pstate;
    gpc_cost_report r;
    OK(gpc_cost_report_make(f->st, NULL, 0, NOW, &r, err));
    assert_int_equal(r.n_rows, 4);
    /* alpha-0: 6h x 20.00 = 120.00 */
    assert_string_equal(r.rows[0].node, "alpha-0");
    assert_string_equal(r.rows[0].region, "us-east-1");
    assert_int_equal(r.rows[0].spot, 0);
    assert_int_equal(r.rows[0].open, 0);
    assert_int_equal(r.rows[0].billed_s, 6 * H);
    assert_double_equal(r.rows[0].usd, 120.0, EPS);
    /* alpha-1: open, 10h x 8.00 = 80.00 */
    assert_string_equal(r.rows[1].node, "alpha-1");
    assert_int_equal(r.rows[1].spot, 1);
    assert_int_equal(r.rows[1].open, 1);
    assert_int_equal(r.rows[1].stop_at, 0);
    assert_int_equal(r.rows[1].billed_s, 10 * H);
    assert_double_equal(r.rows[1].usd, 80.0, EPS);
    /* beta-0: 10h x 3.50 = 35.00; beta-1: 5h x 1.25 = 6.25 */
    assert_string_equal(r.rows[2].node, "beta-0");
    assert_int_equal(r.rows[2].destroyed_at, NOW - 20 * H);
    assert_double_equal(r.rows[2].usd, 35.0, EPS);
    assert_string_equal(r.rows[3].node, "beta-1");
    assert_string_equal(r.rows[3].region, "westus3");
    assert_double_equal(r.rows[3].usd, 6.25, EPS);

    assert_int_equal(r.n_clusters, 2);
    /* alpha: 120.00 + 80.00 = 200.00, 16 node-hours, 8.00 USD/h billing */
    check_sum(&r.clusters[0], "alpha", 2, 1, 16 * H, 200.0, 8.0);
    assert_int_equal(r.clusters[0].destroyed_at, 0);
    /* beta: 35.00 + 6.25 = 41.25, 15 node-hours */
    check_sum(&r.clusters[1], "beta", 2, 0, 15 * H, 41.25, 0.0);
    assert_int_equal(r.clusters[1].destroyed_at, NOW - 20 * H);
    assert_int_equal(r.n_providers, 2);
    check_sum(&r.providers[0], "aws", 2, 1, 16 * H, 200.0, 8.0);
    check_sum(&r.providers[1], "azure", 2, 0, 15 * H, 41.25, 0.0);
    /* 200.00 + 41.25 = 241.25 */
    check_sum(&r.total, "", 4, 1, 31 * H, 241.25, 8.0);
    gpc_cost_report_free(&r);
}

/* A window that cuts beta's entries: since = now-24h. */
static void test_since_straddles(void **pstate)
{
    fx *f = *pstate;
    gpc_cost_report r;
    OK(gpc_cost_report_make(f->st, NULL, NOW - 24 * H, NOW, &r, err));
    assert_int_equal(r.n_rows, 4);
    /* beta-0 ran now-30h..now-20h: in the window now-24h..now-20h = 4h
     * x 3.50 = 14.00 */
    assert_int_equal(r.rows[2].billed_s, 4 * H);
    assert_double_equal(r.rows[2].usd, 14.0, EPS);
    /* beta-1 ran now-26h..now-21h: now-24h..now-21h = 3h x 1.25 = 3.75 */
    assert_int_equal(r.rows[3].billed_s, 3 * H);
    assert_double_equal(r.rows[3].usd, 3.75, EPS);
    /* alpha whole: 200.00; beta 14.00 + 3.75 = 17.75; all 217.75 */
    check_sum(&r.clusters[0], "alpha", 2, 1, 16 * H, 200.0, 8.0);
    check_sum(&r.clusters[1], "beta", 2, 0, 7 * H, 17.75, 0.0);
    check_sum(&r.providers[1], "azure", 2, 0, 7 * H, 17.75, 0.0);
    check_sum(&r.total, "", 4, 1, 23 * H, 217.75, 8.0);
    gpc_cost_report_free(&r);

    /* since = now-5h: beta ended before it and is left out; alpha-0 ran
     * now-10h..now-4h: 1h x 20.00 = 20.00; alpha-1 5h x 8.00 = 40.00 */
    OK(gpc_cost_report_make(f->st, NULL, NOW - 5 * H, NOW, &r, err));
    assert_int_equal(r.n_rows, 2);
    assert_int_equal(r.n_clusters, 1);
    assert_int_equal(r.n_providers, 1);
    assert_double_equal(r.rows[0].usd, 20.0, EPS);
    assert_double_equal(r.rows[1].usd, 40.0, EPS);
    check_sum(&r.total, "", 2, 1, 6 * H, 60.0, 8.0);
    gpc_cost_report_free(&r);
}

/* One cluster by name, destroyed too; a name without records; a window
 * that ends before it starts. */
static void test_one_cluster(void **pstate)
{
    fx *f = *pstate;
    gpc_cost_report r;
    OK(gpc_cost_report_make(f->st, "beta", 0, NOW, &r, err));
    assert_int_equal(r.n_rows, 2);
    assert_int_equal(r.n_clusters, 1);
    check_sum(&r.total, "", 2, 0, 15 * H, 41.25, 0.0); /* 35.00 + 6.25 */
    gpc_cost_report_free(&r);

    OK(gpc_cost_report_make(f->st, "gamma", 0, NOW, &r, err));
    assert_int_equal(r.n_rows, 0);
    assert_int_equal(r.n_clusters, 0);
    check_sum(&r.total, "", 0, 0, 0, 0.0, 0.0);
    gpc_cost_report_free(&r);

    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_cost_report_make(f->st, NULL, NOW + 1, NOW, &r, &e), GPC_ERR_USAGE);
    assert_string_equal(e.msg, "the window starts after it ends (since 1700000001, now "
                               "1700000000)");
    assert_int_equal(r.n_rows, 0);
}

/* A database of schema 3 (entries without region and market) upgraded:
 * its entries take their node's. */
static void test_migration_backfill(void **pstate)
{
    fx *f = *pstate;
    gpc_state_close(f->st);
    f->st = NULL;
    char path[128];
    snprintf(path, sizeof(path), "%s/gpuctl.db", f->dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "ALTER TABLE ledger DROP COLUMN region;"
                                      "ALTER TABLE ledger DROP COLUMN spot;"
                                      "DROP TABLE zone_cooldowns;"
                                      "PRAGMA user_version = 3;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    OK(gpc_state_open(f->dir, &f->st, err));
    gpc_cost_report r;
    OK(gpc_cost_report_make(f->st, "alpha", 0, NOW, &r, err));
    assert_int_equal(r.n_rows, 2);
    assert_string_equal(r.rows[0].region, "us-east-1");
    assert_int_equal(r.rows[0].spot, 0);
    assert_int_equal(r.rows[1].spot, 1);
    gpc_cost_report_free(&r);
}

/* Owning against renting over the window since = now-24h (86,400 s). */
static void test_compare_buy(void **pstate)
{
    fx *f = *pstate;
    gpc_catalog *cat = NULL;
    OK(gpc_catalog_load_builtin(&cat, err));
    gpc_cost_report r;
    OK(gpc_cost_report_make(f->st, NULL, NOW - 24 * H, NOW, &r, err));
    gpc_buy_opts dflt = {-1, 0, -1, -1, -1, -1};
    gpc_buy_group *g = NULL;
    size_t n = 0;
    OK(gpc_buy_compare(&r, cat, &dflt, &g, &n, err));
    assert_int_equal(n, 2);
    /* A100-40GB (p4d.24xlarge: 8 GPUs each): alpha-0 and alpha-1 both
     * billed now-10h..now-4h: peak 16 GPUs; rented 120.00 + 80.00 =
     * 200.00; GPU-seconds 8 x 6h + 8 x 10h = 128h = 460,800 s */
    assert_string_equal(g[0].gpu_model, "A100-40GB");
    assert_int_equal(g[0].rows, 2);
    assert_int_equal(g[0].peak_units, 16);
    assert_double_equal(g[0].rented_usd, 200.0, EPS);
    assert_double_equal(g[0].unit_seconds, 460800.0, EPS);
    assert_int_equal(g[0].period_s, 86400);
    assert_null(g[0].missing);
    assert_string_equal(g[0].server, "NVIDIA DGX A100 (320 GB)");
    assert_double_equal(g[0].server_price.v, 199000.0, EPS);
    assert_double_equal(g[0].server_gpus.v, 8, EPS);
    assert_double_equal(g[0].power_kw.v, 6.5, EPS);
    assert_double_equal(g[0].pue.v, 1.58, EPS);
    assert_double_equal(g[0].kwh_price.v, 0.1107, EPS);
    assert_double_equal(g[0].years.v, 5.0, EPS);
    assert_string_equal(g[0].pue.source, gpc_buy_default_pue.source);
    /* servers = ceil(16 / 8) = 2
     * amortised = 2 x 199,000 x 86,400 / (5 x 365 x 86,400)
     *           = 398,000 / 1,825 = 218.0821917808...
     * power = 2 x 6.5 kW x 1.58 x 24 h x 0.1107 = 54.570672
     * owned = 272.6528637808...
     * utilisation = 460,800 / (16 x 86,400) = 1/3
     * at full use renting costs 200.00 / (1/3) = 600.00, so owning is
     * cheaper above 272.6528637808 / 600 = 0.4544214396 */
    assert_int_equal(g[0].servers, 2);
    assert_double_equal(g[0].amortised_usd, 398000.0 / 1825.0, EPS);
    assert_double_equal(g[0].power_usd, 54.570672, EPS);
    assert_double_equal(g[0].owned_usd, 272.6528637808219, EPS);
    assert_double_equal(g[0].utilisation, 1.0 / 3.0, EPS);
    assert_double_equal(g[0].break_even, 0.4544214396347032, EPS);
    /* T4 (Standard_NC4as_T4_v3, also from its eastus/westus2 rows for
     * westus3): no cited server */
    assert_string_equal(g[1].gpu_model, "T4");
    assert_string_equal(g[1].missing, "--server-price, --power-kw, --server-gpus");
    assert_null(g[1].server_price.source);
    assert_double_equal(g[1].owned_usd, 0.0, EPS);
    free(g);

    /* Every value given: 10,000 USD servers of 4 GPUs, 1 kW, PUE 1.5,
     * 0.20 USD/kWh, 2 years. */
    gpc_buy_opts o = {10000, 4, 1.0, 1.5, 0.2, 2};
    OK(gpc_buy_compare(&r, cat, &o, &g, &n, err));
    assert_int_equal(n, 2);
    /* A100-40GB: servers = ceil(16 / 4) = 4
     * amortised = 4 x 10,000 x 86,400 / (2 x 365 x 86,400) = 54.7945205479...
     * power = 4 x 1 x 1.5 x 24 x 0.20 = 28.80; owned = 83.5945205479...
     * break-even = 83.5945205479 / 600 = 0.1393242009 */
    assert_int_equal(g[0].servers, 4);
    assert_string_equal(g[0].server_price.source, "--server-price");
    assert_double_equal(g[0].owned_usd, 83.59452054794521, EPS);
    assert_double_equal(g[0].break_even, 0.13932420091324202, EPS);
    /* T4 (1 GPU each): beta-0 now-24h..now-20h (4h) and beta-1
     * now-24h..now-21h (3h) overlap: peak 2 GPUs; servers = ceil(2/4) = 1
     * rented 14.00 + 3.75 = 17.75; GPU-seconds 7h = 25,200
     * amortised = 10,000 / 730 = 13.6986301369...; power = 1 x 1 x 1.5 x
     * 24 x 0.20 = 7.20; owned = 20.8986301369...
     * utilisation = 25,200 / (2 x 86,400) = 0.1458333...
     * at full use 17.75 / 0.1458333 = 121.7142857...;
     * break-even = 20.8986301369 / 121.7142857 = 0.1717023602... */
    assert_string_equal(g[1].gpu_model, "T4");
    assert_null(g[1].missing);
    assert_int_equal(g[1].peak_units, 2);
    assert_int_equal(g[1].servers, 1);
    assert_double_equal(g[1].rented_usd, 17.75, EPS);
    assert_double_equal(g[1].amortised_usd, 10000.0 / 730.0, EPS);
    assert_double_equal(g[1].power_usd, 7.2, EPS);
    assert_double_equal(g[1].utilisation, 25200.0 / 172800.0, EPS);
    assert_double_equal(g[1].break_even, 0.1717023602804039, EPS);
    free(g);
    gpc_cost_report_free(&r);
    gpc_catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_since_straddles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_backfill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare_buy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
