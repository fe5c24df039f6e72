/* test_offers.c - offer selection: ranking, filters, purchase options and
 * the "nothing fits" error.  Every expected number is worked out by hand in
 * the comment next to its assert. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/offers.h"
#include "gpuctl/plan.h"

/* ------------------------------------------------------------------ */
/* Fixtures.                                                          */

/* GPU figures from catalog/gpus.csv: model, memory, bf16, fp16, fp32. */
static const gpc_gpu_info T4 = {"T4", 16, 0, 65, 8.1, ""};
static const gpc_gpu_info A10 = {"A10", 24, 125, 125, 31.2, ""};
static const gpc_gpu_info A10G = {"A10G", 24, 0, 0, 0, ""};
static const gpc_gpu_info L4 = {"L4", 24, 121, 121, 30.3, ""};
static const gpc_gpu_info L40S = {"L40S", 48, 362, 362, 91.6, ""};
static const gpc_gpu_info A100_40 = {"A100-40GB", 40, 312, 312, 19.5, ""};
static const gpc_gpu_info A100_80 = {"A100-80GB", 80, 312, 312, 19.5, ""};
static const gpc_gpu_info A100_80P = {"A100-80GB-PCIe", 80, 312, 312, 19.5, ""};
static const gpc_gpu_info H100_SXM = {"H100-80GB-SXM", 80, 989, 989, 67, ""};
static const gpc_gpu_info H100_PCIE = {"H100-PCIe", 80, 756, 756, 51, ""};
static const gpc_gpu_info H100_NVL = {"H100-NVL", 94, 835, 835, 60, ""};

static const gpc_fabric NONE = GPC_FABRIC_NONE, EFA = GPC_FABRIC_EFA,
                        IB = GPC_FABRIC_INFINIBAND, ERDMA = GPC_FABRIC_ERDMA,
                        UNVERIFIED = GPC_FABRIC_UNKNOWN;

static gpc_catalog_row R(const char *prov, const char *type, const char *region,
                         const gpc_gpu_info *g, uint32_t n, double vcpus, double mem,
                         gpc_fabric fab, double od, double spot)
{
    gpc_catalog_row r;
    memset(&r, 0, sizeof(r));
    r.provider = prov;
    r.instance_type = type;
    r.region = region;
    r.gpu_model = g ? g->model : "";
    r.gpu_count = n;
    r.gpu_mem_gib = g ? g->memory_gib : 0;
    r.vcpus = vcpus;
    r.mem_gib = mem;
    r.fabric = fab;
    r.price_ondemand = od;
    r.price_spot = spot;
    r.price_ondemand_cny = -1;
    r.price_spot_cny = -1;
    r.source = "test";
    r.notes = "";
    r.gpu = g;
    return r;
}

static gpc_catalog CAT(gpc_catalog_row *rows, size_t n)
{
    gpc_catalog c;
    memset(&c, 0, sizeof(c));
    c.origin = "test";
    c.rows = rows;
    c.n_rows = n;
    return c;
}

/* "A100-80GB:8" as gpc_parse_gpu gives it. */
static gpc_gpu_req A100_80x8 = {.model = "A100", .mem_gib = {80, 80}, .count = {8, 8}};

static gpc_offer_query Q(const gpc_gpu_req *g, size_t n, uint32_t nodes)
{
    gpc_offer_query q;
    memset(&q, 0, sizeof(q));
    q.gpus = g;
    q.n_gpus = n;
    q.nodes = nodes;
    q.policy = GPC_SPOT_ON_DEMAND;
    q.head = GPC_SPOT_ON_DEMAND;
    q.sort = GPC_SORT_PRICE;
    return q;
}

/*
 * Eight-GPU A100 nodes across the three clouds (prices USD/hour):
 *   0 aws    p4de.24xlarge          us-east-1   A100-80GB x8  96 vCPU 1152 GiB efa   od 40.96     spot 16.3863
 *   1 azure  ND96amsr_A100_v4       eastus      A100-80GB x8  96 vCPU 1900 GiB ib    od 32.77     spot 13.1
 *   2 aliyun ecs.ebmgn7e.32xlarge   cn-shanghai A100-80GB x8 128 vCPU 1024 GiB none  od 38.3543   spot -
 *   3 aliyun ecs.sccgn7ex.32xlarge  cn-beijing  A100-80GB x8 128 vCPU 1024 GiB ?     od 49.872786 spot 15.468562
 *   4 aws    p4d.24xlarge           us-east-1   A100-40GB x8  (wrong memory)         od 32.7726   spot 12
 *   5 aws    p5.48xlarge            us-east-1   H100 x8       (wrong model)          od 98.32     spot 30
 *   6 aliyun ecs.ebmgn7ex.32xlarge  cn-beijing  A100-80GB x8 128 vCPU 1024 GiB erdma od 45        spot -
 */
#define AZ "Standard_ND96amsr_A100_v4"
static void a100_rows(gpc_catalog_row r[7])
{
    r[0] = R("aws", "p4de.24xlarge", "us-east-1", &A100_80, 8, 96, 1152, EFA, 40.96, 16.3863);
    r[1] = R("azure", AZ, "eastus", &A100_80, 8, 96, 1900, IB, 32.77, 13.1);
    r[2] = R("aliyun", "ecs.ebmgn7e.32xlarge", "cn-shanghai", &A100_80, 8, 128, 1024, NONE,
             38.3543, -1);
    r[3] = R("aliyun", "ecs.sccgn7ex.32xlarge", "cn-beijing", &A100_80, 8, 128, 1024,
             UNVERIFIED, 49.872786, 15.468562);
    r[4] = R("aws", "p4d.24xlarge", "us-east-1", &A100_40, 8, 96, 1152, EFA, 32.7726, 12);
    r[5] = R("aws", "p5.48xlarge", "us-east-1", &H100_SXM, 8, 192, 2048, EFA, 98.32, 30);
    r[6] = R("aliyun", "ecs.ebmgn7ex.32xlarge", "cn-beijing", &A100_80, 8, 128, 1024, ERDMA,
             45, -1);
}

#define assert_price(a, b) check_near((a), (b), __FILE__, __LINE__)
static void check_near(double a, double b, const char *file, int line)
{
    if (!(fabs(a - b) <= 1e-9)) {
        print_error("%.12f != %.12f\n", a, b);
        _fail(file, line);
    }
}

/* "type[/spot]" of each fit, space separated, best first. */
static const char *fits(const gpc_selection *s)
{
    static char buf[2048];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_fit && len < sizeof buf - 100; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s%s", i ? " " : "",
                                s->fit[i].row->instance_type, s->fit[i].spot ? "/spot" : "",
                                s->fit[i].head_spot != s->fit[i].spot
                                    ? (s->fit[i].head_spot ? "+head/spot" : "+head/od")
                                    : "");
    return buf;
}

static void select_ok(const gpc_catalog *cat, const gpc_offer_query *q, gpc_selection *s)
{
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_offers_select(cat, NULL, 0, q, s, &err), 0);
    assert_int_equal(err.code, GPC_OK);
}

static int why_none(const gpc_selection *s, const gpc_offer_query *q, gpc_error *err)
{
    gpc_error_clear(err);
    return gpc_selection_fail(s, q, "job", err);
}

/* ------------------------------------------------------------------ */
/* Ranking across providers.                                          */

static void test_cheapest_across_providers(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 8);
    const char *provs[] = {"aws", "azure", "aliyun"};
    q.providers = provs;
    q.n_providers = 3;
    gpc_selection s;
    select_ok(&cat, &q, &s);

    /* 8 nodes on-demand: azure 8 x 32.77 = 262.16, ebmgn7e 8 x 38.3543 = 306.8344,
     * p4de 8 x 40.96 = 327.68, ebmgn7ex 8 x 45 = 360, sccgn7ex 8 x 49.872786 =
     * 398.982288; p4d (A100-40GB) and p5 (H100) are not alternatives. */
    assert_int_equal(s.n_rows, 7);
    assert_int_equal(s.n_fit, 5);
    assert_string_equal(fits(&s), AZ " ecs.ebmgn7e.32xlarge p4de.24xlarge "
                                     "ecs.ebmgn7ex.32xlarge ecs.sccgn7ex.32xlarge");
    assert_int_equal(s.n_lost, 0);
    assert_int_equal(s.lost_by[GPC_FIT], 5);
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE], 2);
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 0);

    const gpc_candidate *c = &s.fit[0];
    assert_ptr_equal(c->row, &rows[1]);
    assert_int_equal(c->verdict, GPC_FIT);
    assert_string_equal(c->why, "");
    assert_int_equal(c->spot, 0);
    assert_int_equal(c->head_spot, 0);
    assert_price(c->price_node, 32.77);
    assert_price(c->price_head, 32.77);
    assert_price(c->price_cluster, 262.16);           /* 32.77 + 7 x 32.77 */
    assert_price(c->price_cluster_ondemand, 262.16);
    assert_price(c->tflops_node, 2496);                /* 312 x 8 */
    assert_price(c->usd_per_tflops, 32.77 / 2496);     /* 0.013129... */
    assert_price(c->projected_total, 0);               /* no max_duration */
    assert_price(s.fit[1].price_cluster, 306.8344);
    assert_price(s.fit[2].price_cluster, 327.68);
    assert_price(s.fit[3].price_cluster, 360);
    assert_price(s.fit[4].price_cluster, 398.982288);
    gpc_selection_free(&s);

    /* providers [aws, azure]: the three aliyun rows lose on provider and are
     * only counted; p4de is the fallback after azure. */
    q.n_providers = 2;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " p4de.24xlarge");
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 3);
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE], 2);
    assert_int_equal(s.n_lost, 0);
    gpc_selection_free(&s);
}

static void test_interconnect(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 8);
    gpc_selection s;

    /* efa: only p4de.  Lost, cheapest first: azure 262.16 (ib), ebmgn7e
     * 306.8344 (none), ebmgn7ex 360 (erdma), sccgn7ex 398.982288 (empty cell). */
    q.interconnect = GPC_IC_EFA;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "p4de.24xlarge");
    assert_int_equal(s.n_lost, 4);
    assert_int_equal(s.lost_by[GPC_LOST_INTERCONNECT], 4);
    assert_ptr_equal(s.lost[0].row, &rows[1]);
    assert_int_equal(s.lost[0].verdict, GPC_LOST_INTERCONNECT);
    assert_string_equal(s.lost[0].why, "interconnect infiniband, wanted efa");
    assert_price(s.lost[0].price_cluster, 262.16);   /* priced even though lost */
    assert_string_equal(s.lost[1].why, "interconnect none, wanted efa");
    assert_string_equal(s.lost[2].why, "interconnect erdma, wanted efa");
    assert_ptr_equal(s.lost[3].row, &rows[3]);
    assert_string_equal(s.lost[3].why, "interconnect not verified, wanted efa");
    gpc_selection_free(&s);

    /* rdma: any of efa / infiniband / erdma; "none" and the unverified row lose. */
    q.interconnect = GPC_IC_RDMA;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " p4de.24xlarge ecs.ebmgn7ex.32xlarge");
    assert_int_equal(s.n_lost, 2);
    assert_string_equal(s.lost[0].why, "interconnect none, wanted rdma");
    assert_string_equal(s.lost[1].why, "interconnect not verified, wanted rdma");
    gpc_selection_free(&s);

    q.interconnect = GPC_IC_INFINIBAND;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ);
    gpc_selection_free(&s);

    q.interconnect = GPC_IC_ERDMA;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "ecs.ebmgn7ex.32xlarge");
    gpc_selection_free(&s);

    /* none and any do not filter, not even the unverified row */
    q.interconnect = GPC_IC_NONE;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 5);
    gpc_selection_free(&s);
    q.interconnect = GPC_IC_ANY;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 5);
    gpc_selection_free(&s);

    /* efa without aws: every A100-80GB candidate loses on interconnect. */
    const char *provs[] = {"azure", "aliyun"};
    q.providers = provs;
    q.n_providers = 2;
    q.interconnect = GPC_IC_EFA;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 0);
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 3);   /* p4de, p4d, p5 */
    gpc_error err;
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_int_equal(err.code, GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 4 candidates with A100-80GB:8 GPUs "
                                 "lost: 4 on interconnect (none has efa)");
    gpc_selection_free(&s);

    /* rdma on aliyun once ebmgn7ex has no erdma either: none / ? / none */
    q.interconnect = GPC_IC_RDMA;
    q.providers = (const char *const[]){"aliyun"};
    q.n_providers = 1;
    rows[6].fabric = NONE;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 3 candidates with A100-80GB:8 GPUs "
                                 "lost: 3 on interconnect (none has efa, infiniband or erdma)");
    gpc_selection_free(&s);
}

static void test_max_price(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 8);
    q.policy = q.head = GPC_SPOT_SPOT;
    q.max_price = 15.0;
    gpc_selection s;
    select_ok(&cat, &q, &s);

    /* spot, 8 nodes, max 15/node: azure 13.1 fits (8 x 13.1 = 104.8);
     * sccgn7ex 15.468562 > 15 (cluster 123.748496) and p4de 16.3863 > 15
     * (131.0904) lose on max_price; ebmgn7e and ebmgn7ex have no spot price
     * (unknown price sorts last; "ecs.ebmgn7e." < "ecs.ebmgn7ex"). */
    assert_string_equal(fits(&s), AZ "/spot");
    assert_price(s.fit[0].price_cluster, 104.8);
    assert_price(s.fit[0].price_cluster_ondemand, 262.16);
    assert_int_equal(s.n_lost, 4);
    assert_int_equal(s.lost_by[GPC_LOST_MAX_PRICE], 2);
    assert_int_equal(s.lost_by[GPC_LOST_NO_PRICE], 2);
    assert_ptr_equal(s.lost[0].row, &rows[3]);
    assert_int_equal(s.lost[0].verdict, GPC_LOST_MAX_PRICE);
    assert_string_equal(s.lost[0].why, "spot 15.4686 USD/hour > spot.max_price 15.0000");
    assert_price(s.lost[0].price_cluster, 123.748496);
    assert_ptr_equal(s.lost[1].row, &rows[0]);
    assert_string_equal(s.lost[1].why, "spot 16.3863 USD/hour > spot.max_price 15.0000");
    assert_price(s.lost[1].price_cluster, 131.0904);
    assert_ptr_equal(s.lost[2].row, &rows[2]);
    assert_int_equal(s.lost[2].verdict, GPC_LOST_NO_PRICE);
    assert_string_equal(s.lost[2].why, "no spot price");
    assert_price(s.lost[2].price_node, -1);
    assert_price(s.lost[2].price_cluster, -1);
    assert_price(s.lost[2].price_cluster_ondemand, 306.8344);   /* 8 x 38.3543 */
    assert_price(s.lost[2].usd_per_tflops, 0);
    assert_ptr_equal(s.lost[3].row, &rows[6]);
    gpc_selection_free(&s);

    /* a price equal to the cap is within it */
    q.max_price = 13.1;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot");
    gpc_selection_free(&s);

    /* max 10: nothing fits; a cap was the reason -> GPC_ERR_BUDGET, naming the
     * cheapest candidate that lost on it (azure, 13.1/node). */
    q.max_price = 10.0;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 0);
    gpc_error err;
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg,
                        "no offer fits 'job': 5 candidates with A100-80GB:8 GPUs lost: "
                        "2 on no_price (no spot price), 3 on max_price (cheapest azure " AZ
                        " eastus spot: 13.1000 USD/hour > 10.0000)");
    gpc_selection_free(&s);

    /* the cap is per node-hour whatever the purchase option */
    q.policy = q.head = GPC_SPOT_ON_DEMAND;
    q.max_price = 35;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ);                 /* 32.77 <= 35 */
    assert_string_equal(s.lost[0].why, "on-demand 38.3543 USD/hour > spot.max_price 35.0000");
    gpc_selection_free(&s);
}

static void test_budget(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 3);            /* p4de, azure, ebmgn7e */
    gpc_offer_query q = Q(&A100_80x8, 1, 2);
    gpc_selection s;
    gpc_error err;

    /* 2 nodes: azure 65.54, ebmgn7e 76.7086, p4de 81.92 USD/hour. */
    q.budget_hourly = 70;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ);
    assert_int_equal(s.lost_by[GPC_LOST_BUDGET_HOURLY], 2);
    assert_string_equal(s.lost[0].why, "cluster 76.71 USD/hour > budget.max_hourly 70.00");
    assert_string_equal(s.lost[1].why, "cluster 81.92 USD/hour > budget.max_hourly 70.00");
    gpc_selection_free(&s);

    /* a total cap without max_duration cannot be projected: no filter */
    q.budget_hourly = 0;
    q.budget_total = 5000;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 3);
    assert_price(s.fit[0].projected_total, 0);
    gpc_selection_free(&s);

    /* 72 h: azure 65.54 x 72 = 4718.88 fits; ebmgn7e 76.7086 x 72 = 5523.0192,
     * p4de 81.92 x 72 = 5898.24 exceed 5000. */
    q.max_duration_s = 72 * 3600;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ);
    assert_price(s.fit[0].projected_total, 4718.88);
    assert_int_equal(s.lost_by[GPC_LOST_BUDGET_TOTAL], 2);
    assert_string_equal(s.lost[0].why, "cluster 76.71 USD/hour x 72 h = 5523.02 USD > "
                                       "budget.max_total 5000.00");
    assert_price(s.lost[0].projected_total, 5523.0192);
    assert_string_equal(s.lost[1].why, "cluster 81.92 USD/hour x 72 h = 5898.24 USD > "
                                       "budget.max_total 5000.00");
    gpc_selection_free(&s);

    /* 90 minutes: 65.54 x 1.5 = 98.31 */
    q.max_duration_s = 5400;
    q.budget_total = 100;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ);
    assert_price(s.fit[0].projected_total, 98.31);
    assert_string_equal(s.lost[0].why, "cluster 76.71 USD/hour x 1.5 h = 115.06 USD > "
                                       "budget.max_total 100.00");   /* 76.7086 x 1.5 = 115.0629 */
    gpc_selection_free(&s);

    /* nothing under 50/hour -> GPC_ERR_BUDGET naming azure at 65.54 */
    q.budget_total = 0;
    q.max_duration_s = 0;
    q.budget_hourly = 50;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "no offer fits 'job': 3 candidates with A100-80GB:8 GPUs "
                                 "lost: 3 on budget_hourly (cheapest azure " AZ
                                 " eastus on-demand: 65.54 USD/hour > 50.00)");
    gpc_selection_free(&s);

    /* hourly 70 and total 4000 over 72 h: azure passes the hourly cap but
     * 4718.88 > 4000; the other two fail the hourly cap first. */
    q.budget_hourly = 70;
    q.budget_total = 4000;
    q.max_duration_s = 72 * 3600;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg,
                        "no offer fits 'job': 3 candidates with A100-80GB:8 GPUs lost: "
                        "2 on budget_hourly (cheapest aliyun ecs.ebmgn7e.32xlarge cn-shanghai "
                        "on-demand: 76.71 USD/hour > 70.00), 1 on budget_total (cheapest azure "
                        AZ " eastus on-demand: 4718.88 USD for 72 h > 4000.00)");
    assert_int_equal(gpc_exit_status(err.code), 23);
    gpc_selection_free(&s);
}

/* ------------------------------------------------------------------ */
/* Purchase options.                                                  */

static void test_spot_ondemand_auto(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 3);            /* p4de, azure, ebmgn7e */
    gpc_offer_query q = Q(&A100_80x8, 1, 4);
    gpc_selection s;

    /* on-demand, 4 nodes: azure 131.08, ebmgn7e 153.4172, p4de 163.84 */
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " ecs.ebmgn7e.32xlarge p4de.24xlarge");
    assert_price(s.fit[0].price_cluster, 131.08);
    assert_price(s.fit[1].price_cluster, 153.4172);
    assert_price(s.fit[2].price_cluster, 163.84);
    gpc_selection_free(&s);

    /* spot: azure 4 x 13.1 = 52.4, p4de 4 x 16.3863 = 65.5452; ebmgn7e has none */
    q.policy = q.head = GPC_SPOT_SPOT;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot p4de.24xlarge/spot");
    assert_price(s.fit[0].price_cluster, 52.4);
    assert_price(s.fit[1].price_cluster, 65.5452);
    assert_int_equal(s.fit[1].spot, 1);
    assert_int_equal(s.fit[1].head_spot, 1);
    assert_int_equal(s.n_lost, 1);
    assert_int_equal(s.lost[0].verdict, GPC_LOST_NO_PRICE);
    assert_string_equal(s.lost[0].why, "no spot price");
    gpc_selection_free(&s);

    /* auto: both options of every row, ranked together:
     * 52.4 < 65.5452 < 131.08 < 153.4172 < 163.84; ebmgn7e spot has no price. */
    q.policy = q.head = GPC_SPOT_AUTO;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot p4de.24xlarge/spot " AZ
                                     " ecs.ebmgn7e.32xlarge p4de.24xlarge");
    assert_int_equal(s.lost_by[GPC_FIT], 5);
    assert_int_equal(s.lost_by[GPC_LOST_NO_PRICE], 1);
    assert_price(s.fit[0].price_cluster_ondemand, 131.08);
    assert_int_equal(s.n_lost, 1);
    assert_ptr_equal(s.lost[0].row, &rows[2]);
    assert_int_equal(s.lost[0].spot, 1);
    gpc_selection_free(&s);

    /* equal prices: on-demand before spot as the last tie-break */
    gpc_catalog_row same[1] = {R("aws", "g5.xlarge", "us-east-1", &A10G, 1, 4, 16, NONE,
                                 1.006, 1.006)};
    gpc_catalog one = CAT(same, 1);
    gpc_offer_query any = Q(NULL, 0, 1);
    any.policy = any.head = GPC_SPOT_AUTO;
    select_ok(&one, &any, &s);
    assert_string_equal(fits(&s), "g5.xlarge g5.xlarge/spot");
    gpc_selection_free(&s);
}

static void test_head_on_demand(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 3);            /* p4de, azure, ebmgn7e */
    gpc_offer_query q = Q(&A100_80x8, 1, 4);
    gpc_selection s;
    gpc_error err;

    /* spot workers, on-demand head, 4 nodes:
     * azure 32.77 + 3 x 13.1 = 72.07; p4de 40.96 + 3 x 16.3863 = 90.1189;
     * ebmgn7e has no spot price for its workers. */
    q.policy = GPC_SPOT_SPOT;
    q.head = GPC_SPOT_ON_DEMAND;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot+head/od p4de.24xlarge/spot+head/od");
    const gpc_candidate *c = &s.fit[0];
    assert_int_equal(c->spot, 1);
    assert_int_equal(c->head_spot, 0);
    assert_price(c->price_node, 13.1);
    assert_price(c->price_head, 32.77);
    assert_price(c->price_cluster, 72.07);
    assert_price(c->price_cluster_ondemand, 131.08);
    assert_price(c->usd_per_tflops, 13.1 / 2496);     /* per worker node */
    assert_price(s.fit[1].price_cluster, 90.1189);
    assert_string_equal(s.lost[0].why, "no spot price");
    gpc_selection_free(&s);

    /* on-demand workers, spot head: azure 13.1 + 3 x 32.77 = 111.41,
     * p4de 16.3863 + 3 x 40.96 = 139.2663; ebmgn7e lacks the head's price. */
    q.policy = GPC_SPOT_ON_DEMAND;
    q.head = GPC_SPOT_SPOT;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "+head/spot p4de.24xlarge+head/spot");
    assert_price(s.fit[0].price_cluster, 111.41);
    assert_price(s.fit[1].price_cluster, 139.2663);
    assert_string_equal(s.lost[0].why, "no spot price for the head");
    gpc_selection_free(&s);

    /* auto workers, on-demand head: spot-worker candidates (72.07, 90.1189)
     * rank before the all-on-demand ones (131.08, 153.4172, 163.84). */
    q.policy = GPC_SPOT_AUTO;
    q.head = GPC_SPOT_ON_DEMAND;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot+head/od p4de.24xlarge/spot+head/od " AZ
                                     " ecs.ebmgn7e.32xlarge p4de.24xlarge");
    gpc_selection_free(&s);

    /* max_price applies to the head as well: p4de's on-demand head 40.96 > 35 */
    q.policy = GPC_SPOT_SPOT;
    q.max_price = 35;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ "/spot+head/od");
    assert_ptr_equal(s.lost[0].row, &rows[0]);
    assert_string_equal(s.lost[0].why, "head on-demand 40.9600 USD/hour > spot.max_price 35.0000");
    gpc_selection_free(&s);

    /* max 30: azure's head (32.77) fails too; the message names its options */
    q.max_price = 30;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg,
                        "no offer fits 'job': 3 candidates with A100-80GB:8 GPUs lost: "
                        "1 on no_price (no spot price), 2 on max_price (cheapest azure " AZ
                        " eastus spot, head on-demand: 32.7700 USD/hour > 30.0000)");
    gpc_selection_free(&s);

    /* one node is the head: bought as spot.head says, whatever the policy */
    q.nodes = 1;
    q.max_price = 0;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " ecs.ebmgn7e.32xlarge p4de.24xlarge");
    assert_price(s.fit[0].price_cluster, 32.77);
    assert_price(s.fit[0].price_node, 32.77);
    assert_int_equal(s.n_lost, 0);
    gpc_selection_free(&s);
}

/* ------------------------------------------------------------------ */
/* Tie-breaks and the per-TFLOPS order.                               */

static void test_tie_and_per_tflops(void **state)
{
    (void)state;
    /* Three single-GPU rows within 1e-6 USD of 2.00 and three others:
     *   aliyun gn-a10g  A10G x1 2.0        TFLOPS unknown
     *   aws    g6.xlarge L4 x1   2.0000004  2.0000004 / 121 = 0.016528929
     *   azure  NV36 A10 x1       1.9999997  1.9999997 / 125 = 0.0159999976
     *   aws    g4dn.xlarge T4 x1 0.526      0.526 / 65 (FP16) = 0.0080923
     *   azure  NC24 A100-80GB-PCIe x1 4.0   4 / 312 = 0.0128205
     *   aws    p5 H100 x8        98.32      98.32 / 7912 = 0.0124267 */
    gpc_catalog_row rows[] = {
        R("aliyun", "ecs.gn-a10g", "cn-hangzhou", &A10G, 1, 4, 16, NONE, 2.0, -1),
        R("aws", "g6.xlarge", "us-east-1", &L4, 1, 4, 16, NONE, 2.0000004, -1),
        R("azure", "Standard_NV36ads_A10_v5", "eastus", &A10, 1, 36, 440, NONE, 1.9999997, -1),
        R("aws", "g4dn.xlarge", "us-east-1", &T4, 1, 4, 16, NONE, 0.526, -1),
        R("azure", "Standard_NC24ads_A100_v4", "eastus", &A100_80P, 1, 24, 220, NONE, 4.0, -1),
        R("aws", "p5.48xlarge", "us-east-1", &H100_SXM, 8, 192, 2048, EFA, 98.32, -1),
    };
    gpc_catalog cat = CAT(rows, 6);
    gpc_offer_query q = Q(NULL, 0, 1);
    gpc_selection s;

    /* price: T4 first; the 2.00 tie goes by USD/TFLOPS (A10, L4), unknown
     * last (A10G) - the reverse of the provider order; then A100, H100. */
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "g4dn.xlarge Standard_NV36ads_A10_v5 g6.xlarge ecs.gn-a10g "
                                  "Standard_NC24ads_A100_v4 p5.48xlarge");
    assert_price(s.fit[0].tflops_node, 65);            /* T4: no BF16, FP16 65 */
    assert_price(s.fit[0].usd_per_tflops, 0.526 / 65);
    assert_price(s.fit[3].tflops_node, 0);             /* A10G: unknown */
    assert_price(s.fit[3].usd_per_tflops, 0);
    assert_price(s.fit[5].tflops_node, 7912);          /* 989 x 8 */
    gpc_selection_free(&s);

    /* USD per TFLOPS-hour: T4 0.00809, H100 0.01243, A100 0.01282,
     * A10 0.01600, L4 0.01653, A10G unknown last. */
    q.sort = GPC_SORT_PER_TFLOPS;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "g4dn.xlarge p5.48xlarge Standard_NC24ads_A100_v4 "
                                  "Standard_NV36ads_A10_v5 g6.xlarge ecs.gn-a10g");
    assert_price(s.fit[1].usd_per_tflops, 98.32 / 7912);
    gpc_selection_free(&s);

    /* 2e-6 apart is not a tie: A10G at 2.0 wins despite unknown TFLOPS over
     * L4 and A10 at 2.000002 (a tie between those two: A10 first) */
    rows[1].price_ondemand = 2.000002;
    rows[2].price_ondemand = 2.000002;
    q.sort = GPC_SORT_PRICE;
    gpc_catalog two = CAT(rows, 3);
    select_ok(&two, &q, &s);
    assert_string_equal(fits(&s), "ecs.gn-a10g Standard_NV36ads_A10_v5 g6.xlarge");
    gpc_selection_free(&s);
}

/* ------------------------------------------------------------------ */
/* GPU matching.                                                      */

static gpc_catalog_row family_rows[13];

static const char *match(const char *gpus)
{
    /* "A10G or L4": several alternatives */
    gpc_gpu_req req[2];
    size_t n = 0;
    char copy[64];
    gpc_error err;
    snprintf(copy, sizeof copy, "%s", gpus);
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
        if (!strcmp(tok, "or"))
            continue;
        gpc_error_clear(&err);
        assert_int_equal(gpc_parse_gpu("resources.gpu", tok, &req[n], &err), 0);
        n++;
    }
    gpc_catalog cat = CAT(family_rows, 13);
    gpc_offer_query q = Q(req, n, 1);
    gpc_selection s;
    select_ok(&cat, &q, &s);
    static char out[1024];
    snprintf(out, sizeof out, "%s", fits(&s));
    /* everything else lost on hardware: nothing stored */
    assert_int_equal(s.n_lost, 0);
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE] + s.n_fit, 13);
    gpc_selection_free(&s);
    for (size_t i = 0; i < n; i++)
        free(req[i].model);
    return out;
}

static void test_family_matching(void **state)
{
    (void)state;
    /* by on-demand price: */
    family_rows[0] = R("aws", "g4dn.xlarge", "us-east-1", &T4, 1, 4, 16, NONE, 0.526, -1);
    family_rows[1] = R("aws", "g6.xlarge", "us-east-1", &L4, 1, 4, 16, NONE, 0.805, -1);
    family_rows[2] = R("azure", "Standard_NV36ads_A10_v5", "eastus", &A10, 1, 36, 440, NONE,
                       1.0, -1);
    family_rows[3] = R("aws", "g5.xlarge", "us-east-1", &A10G, 1, 4, 16, NONE, 1.1, -1);
    family_rows[4] = R("aws", "g6e.xlarge", "us-east-1", &L40S, 1, 4, 32, NONE, 1.861, -1);
    family_rows[5] = R("azure", "Standard_NC24ads_A100_v4", "eastus", &A100_80P, 1, 24, 220,
                       NONE, 3.67, -1);
    family_rows[6] = R("aliyun", "ecs.h100-pcie", "cn-beijing", &H100_PCIE, 1, 32, 256, NONE,
                       5.5, -1);
    family_rows[7] = R("azure", "Standard_NC40ads_H100_v5", "eastus", &H100_NVL, 1, 40, 320,
                       NONE, 6.98, -1);
    family_rows[8] = R("aws", "c7i.48xlarge", "us-east-1", NULL, 0, 192, 384, NONE, 8.568, -1);
    family_rows[9] = R("aws", "p4d.24xlarge", "us-east-1", &A100_40, 8, 96, 1152, EFA, 32.7726,
                       -1);
    family_rows[10] = R("aws", "p4de.24xlarge", "us-east-1", &A100_80, 8, 96, 1152, EFA, 40.96,
                        -1);
    family_rows[11] = R("aws", "p5.48xlarge", "us-east-1", &H100_SXM, 8, 192, 2048, EFA, 98.32,
                        -1);
    family_rows[12] = R("aws", "g4dn.12xlarge", "us-east-1", &T4, 4, 48, 192, EFA, 3.912, -1);

    /* A10 is its own family: not A100*, not A10G */
    assert_string_equal(match("A10"), "Standard_NV36ads_A10_v5");
    assert_string_equal(match("A10G"), "g5.xlarge");
    assert_string_equal(match("a10g"), "g5.xlarge");        /* case-insensitive */
    /* A100 = family of A100-80GB, A100-40GB, A100-80GB-PCIe; count and memory apply */
    assert_string_equal(match("A100"), "Standard_NC24ads_A100_v4");
    assert_string_equal(match("A100:8"), "p4d.24xlarge p4de.24xlarge");
    assert_string_equal(match("A100-80GB:8"), "p4de.24xlarge");
    assert_string_equal(match("A100:80GB:8"), "p4de.24xlarge");
    assert_string_equal(match("A100-80GB"), "Standard_NC24ads_A100_v4");
    assert_string_equal(match("A100:1..8"),
                        "Standard_NC24ads_A100_v4 p4d.24xlarge p4de.24xlarge");
    assert_string_equal(match("A100-80GB-PCIe"), "Standard_NC24ads_A100_v4");  /* full key */
    /* H100 covers H100-PCIe, H100-NVL (94 GB) and H100-80GB-SXM */
    assert_string_equal(match("H100"), "ecs.h100-pcie Standard_NC40ads_H100_v5");
    assert_string_equal(match("H100:1..8"),
                        "ecs.h100-pcie Standard_NC40ads_H100_v5 p5.48xlarge");
    assert_string_equal(match("H100-80GB:1..8"), "ecs.h100-pcie p5.48xlarge");
    assert_string_equal(match("H100-NVL"), "Standard_NC40ads_H100_v5");
    assert_string_equal(match("H100-PCIe"), "ecs.h100-pcie");
    /* L4 is not L40S */
    assert_string_equal(match("L4"), "g6.xlarge");
    assert_string_equal(match("L40S"), "g6e.xlarge");
    /* memory range, any model: 24..80 GB per GPU, 1 GPU (not T4 16, not NVL 94) */
    assert_string_equal(match("24GB..80GB:1"),
                        "g6.xlarge Standard_NV36ads_A10_v5 g5.xlarge g6e.xlarge "
                        "Standard_NC24ads_A100_v4 ecs.h100-pcie");
    assert_string_equal(match("48GB+:1"),
                        "g6e.xlarge Standard_NC24ads_A100_v4 ecs.h100-pcie "
                        "Standard_NC40ads_H100_v5");
    assert_string_equal(match("T4:4"), "g4dn.12xlarge");
    assert_string_equal(match("T4:1..4"), "g4dn.xlarge g4dn.12xlarge");
    /* any of several */
    assert_string_equal(match("A10G or L4"), "g6.xlarge g5.xlarge");
    assert_string_equal(match("H200:8"), "");

    /* no GPU asked for: every row, the CPU-only one included */
    gpc_catalog cat = CAT(family_rows, 13);
    gpc_offer_query q = Q(NULL, 0, 1);
    gpc_selection s;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 13);
    assert_string_equal(s.fit[9].row->instance_type, "c7i.48xlarge");   /* 8.568 */
    assert_price(s.fit[9].tflops_node, 0);
    gpc_selection_free(&s);

    /* nothing has the GPU: capacity, naming the request and the providers */
    gpc_gpu_req two[2] = {{.model = "A100", .mem_gib = {40, 40}, .count = {2, 2}},
                          {.model = "H200", .mem_gib = {0, 0}, .count = {8, 8}}};
    q = Q(two, 2, 1);
    const char *provs[] = {"aws", "azure"};
    q.providers = provs;
    q.n_providers = 2;
    select_ok(&cat, &q, &s);
    gpc_error err;
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': no catalog row has A100-40GB:2 or "
                                 "H200:8 GPUs (providers aws, azure)");
    assert_int_equal(gpc_exit_status(err.code), 22);
    gpc_selection_free(&s);
}

/* ------------------------------------------------------------------ */
/* Filters: hardware limits, regions, pinned types, providers.        */

static void test_cpu_memory(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 3);            /* p4de 96/1152, azure 96/1900, ebmgn7e 128/1024 */
    gpc_offer_query q = Q(&A100_80x8, 1, 1);
    gpc_selection s;
    gpc_error err;

    q.cpus = (gpc_range){128, 0};
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "ecs.ebmgn7e.32xlarge");
    assert_string_equal(s.lost[0].why, "96 vCPUs, wanted 128+");   /* azure 32.77 */
    assert_int_equal(s.lost[0].verdict, GPC_LOST_CPU);
    gpc_selection_free(&s);

    q.cpus = (gpc_range){0, 64};
    select_ok(&cat, &q, &s);
    assert_string_equal(s.lost[0].why, "96 vCPUs, wanted at most 64");
    gpc_selection_free(&s);

    q.cpus = (gpc_range){32, 64};
    q.memory_gib = (gpc_range){2048, 0};
    select_ok(&cat, &q, &s);
    assert_string_equal(s.lost[0].why, "96 vCPUs, wanted 32..64");
    assert_string_equal(s.lost[1].why, "128 vCPUs, wanted 32..64");
    gpc_selection_free(&s);

    /* cpus 128+ and memory 2048+: azure and p4de lose on cpu (checked first),
     * ebmgn7e (1024 GiB) on memory. */
    q.cpus = (gpc_range){128, 0};
    select_ok(&cat, &q, &s);
    assert_string_equal(s.lost[1].why, "1024 GiB RAM, wanted 2048+ GiB");   /* 38.3543 */
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 3 candidates with A100-80GB:8 GPUs "
                                 "lost: 2 on cpu (wanted 128+ vCPUs), 1 on memory "
                                 "(wanted 2048+ GiB RAM)");
    gpc_selection_free(&s);

    q.cpus = (gpc_range){0, 0};
    q.memory_gib = (gpc_range){1000, 1200};
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "ecs.ebmgn7e.32xlarge p4de.24xlarge");
    assert_string_equal(s.lost[0].why, "1900 GiB RAM, wanted 1000..1200 GiB");
    gpc_selection_free(&s);
}

/* Regression: a loser just above a cap printed as "0.25 > 0.25". */
static void test_why_precision(void **state)
{
    (void)state;
    gpc_catalog_row rows[] = {
        R("azure", "Standard_NC4as_T4_v3", "eastus", &T4, 1, 4, 28, NONE, 0.526, 0.062699),
    };
    gpc_catalog cat = CAT(rows, 1);
    gpc_gpu_req t4x1 = {.model = "T4", .mem_gib = {0, 0}, .count = {1, 1}};
    gpc_offer_query q = Q(&t4x1, 1, 4);
    q.policy = GPC_SPOT_SPOT;
    q.head = GPC_SPOT_SPOT;
    q.budget_hourly = 0.25;     /* 4 x 0.062699 = 0.250796 */
    gpc_selection s;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 0);
    assert_string_equal(s.lost[0].why, "cluster 0.251 USD/hour > budget.max_hourly 0.250");
    gpc_selection_free(&s);
    q.budget_hourly = 0;
    q.max_price = 0.0626;       /* 0.062699 > 0.0626, equal at 3 decimals */
    select_ok(&cat, &q, &s);
    assert_string_equal(s.lost[0].why, "spot 0.0627 USD/hour > spot.max_price 0.0626");
    gpc_selection_free(&s);
    q.max_price = 0.06269;      /* equal at 4 decimals: 5 are printed */
    select_ok(&cat, &q, &s);
    assert_string_equal(s.lost[0].why, "spot 0.06270 USD/hour > spot.max_price 0.06269");
    gpc_selection_free(&s);
}

static void test_region(void **state)
{
    (void)state;
    gpc_catalog_row rows[] = {
        R("aws", "p4de.24xlarge", "us-east-1", &A100_80, 8, 96, 1152, EFA, 40.96, -1),
        R("aws", "p4de.24xlarge", "us-west-2", &A100_80, 8, 96, 1152, EFA, 40.96, -1),
        R("aws", "p4de.24xlarge", "ap-northeast-1", &A100_80, 8, 96, 1152, EFA, 51.2, -1),
        R("azure", AZ, "eastus", &A100_80, 8, 96, 1900, IB, 32.77, -1),
        R("aliyun", "ecs.ebmgn7ex.32xlarge", "", &A100_80, 8, 128, 1024, ERDMA, 45, -1),
    };
    gpc_catalog cat = CAT(rows, 5);
    gpc_offer_query q = Q(&A100_80x8, 1, 1);
    gpc_selection s;

    /* no filter: equal p4de prices fall back to region order; the row
     * without a region never fits (a node needs one; regression: it was
     * chosen when it was the cheapest) */
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 4);
    assert_string_equal(s.fit[1].row->region, "us-east-1");
    assert_string_equal(s.fit[2].row->region, "us-west-2");
    assert_string_equal(s.fit[3].row->region, "ap-northeast-1");
    assert_int_equal(s.lost_by[GPC_LOST_REGION], 1);
    assert_string_equal(s.lost[0].why, "the catalog states no region for it");
    gpc_selection_free(&s);

    const char *regions[] = {"us-east-1", "eastus"};
    q.regions = regions;
    q.n_regions = 2;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " p4de.24xlarge");
    assert_string_equal(s.fit[1].row->region, "us-east-1");
    assert_int_equal(s.lost_by[GPC_LOST_REGION], 3);
    /* lost, cheapest first: us-west-2 40.96, aliyun 45, ap-northeast-1 51.2 */
    assert_string_equal(s.lost[0].why, "region us-west-2 not in [us-east-1, eastus]");
    assert_string_equal(s.lost[1].why, "the catalog states no region for it");
    assert_string_equal(s.lost[2].why, "region ap-northeast-1 not in [us-east-1, eastus]");
    gpc_selection_free(&s);

    /* no row in eu-west-1 */
    q.regions = (const char *const[]){"eu-west-1"};
    q.n_regions = 1;
    q.n_gpus = 0;
    select_ok(&cat, &q, &s);
    gpc_error err;
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 5 candidates lost: 5 on region "
                                 "(not in [eu-west-1])");
    gpc_selection_free(&s);
}

/* Zones named after their region keep only that region (regression: a
 * spec with zone us-west-2b planned us-east-1 and then launched in
 * us-west-2); bare zone numbers (Azure) keep every region. */
static void test_zones(void **state)
{
    (void)state;
    gpc_catalog_row rows[] = {
        R("aws", "p4de.24xlarge", "us-east-1", &A100_80, 8, 96, 1152, EFA, 40.96, -1),
        R("aws", "p4de.24xlarge", "us-west-2", &A100_80, 8, 96, 1152, EFA, 41.0, -1),
        R("aws", "p4de.24xlarge", "us-east-10", &A100_80, 8, 96, 1152, EFA, 39.0, -1),
        R("azure", AZ, "eastus", &A100_80, 8, 96, 1900, IB, 42.0, -1),
    };
    gpc_catalog cat = CAT(rows, 4);
    gpc_offer_query q = Q(&A100_80x8, 1, 1);
    gpc_selection s;

    q.zones = (const char *const[]){"us-west-2b"};
    q.n_zones = 1;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "p4de.24xlarge");
    assert_string_equal(s.fit[0].row->region, "us-west-2");
    assert_int_equal(s.lost_by[GPC_LOST_REGION], 3);
    /* lost, cheapest first; us-east-10 does not own "us-west-2b", nor
     * does us-east-1 own "us-east-10a"-like names below */
    assert_string_equal(s.lost[0].why, "none of the zones [us-west-2b] is in region us-east-10");
    gpc_selection_free(&s);

    /* a local zone and another region's zone */
    q.zones = (const char *const[]){"us-east-1-bos-1a", "us-east-10c"};
    q.n_zones = 2;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 2);
    assert_string_equal(s.fit[0].row->region, "us-east-10");
    assert_string_equal(s.fit[1].row->region, "us-east-1");
    gpc_selection_free(&s);

    /* Azure's zone numbers name no region: every region stays */
    q.zones = (const char *const[]){"2"};
    q.n_zones = 1;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_fit, 4);
    gpc_selection_free(&s);
}

static void test_pinned_and_providers(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 8);
    gpc_selection s;
    gpc_error err;

    /* pinned: only these two types are looked at; the other five rows
     * (p4d and p5 too) lose on instance_type before hardware. */
    const char *types[] = {"p4de.24xlarge", "standard_nd96amsr_a100_v4"};
    q.instance_types = types;
    q.n_instance_types = 2;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), AZ " p4de.24xlarge");  /* 262.16, 327.68 */
    assert_int_equal(s.lost_by[GPC_LOST_INSTANCE_TYPE], 5);
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE], 0);
    assert_int_equal(s.n_lost, 0);
    gpc_selection_free(&s);

    /* a pinned type with other GPUs: hardware */
    q.instance_types = (const char *const[]){"p4d.24xlarge"};
    q.n_instance_types = 1;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': no catalog row has A100-80GB:8 GPUs "
                                 "(instance type p4d.24xlarge)");
    gpc_selection_free(&s);

    /* a pinned type no allowed provider has */
    q.instance_types = (const char *const[]){"p4de.24xlarg"};
    q.providers = (const char *const[]){"aws"};
    q.n_providers = 1;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 4);
    assert_int_equal(s.lost_by[GPC_LOST_INSTANCE_TYPE], 3);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': no catalog row has instance type "
                                 "p4de.24xlarg (provider aws)");
    gpc_selection_free(&s);

    /* a provider the catalog does not have */
    q.n_instance_types = 0;
    q.providers = (const char *const[]){"gcp", "lambda"};
    q.n_providers = 2;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 7);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': no catalog row for providers gcp, lambda");
    gpc_selection_free(&s);

    /* auto: every rejected row counts once per purchase option; the counts add
     * up to rows x 2. */
    q.providers = (const char *const[]){"aws", "azure"};
    q.policy = q.head = GPC_SPOT_AUTO;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 6);   /* 3 aliyun rows x 2 */
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE], 4);   /* p4d, p5 x 2 */
    assert_int_equal(s.n_fit, 4);                        /* p4de, azure x 2 */
    size_t total = 0;
    for (int v = 0; v < GPC_VERDICT_COUNT; v++)
        total += s.lost_by[v];
    assert_int_equal(total, 14);
    /* azure spot 104.8, p4de spot 131.0904, azure 262.16, p4de 327.68 */
    assert_string_equal(fits(&s), AZ "/spot p4de.24xlarge/spot " AZ " p4de.24xlarge");
    gpc_selection_free(&s);

    /* empty catalog */
    gpc_catalog empty = CAT(NULL, 0);
    select_ok(&empty, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': the catalog has no rows");
    gpc_selection_free(&s);
}

static void test_extra_rows(void **state)
{
    (void)state;
    gpc_catalog_row rows[] = {
        R("aws", "g6.xlarge", "us-east-1", &L4, 1, 4, 16, NONE, 0.805, 0.3),
        R("azure", "Standard_NV36ads_A10_v5", "eastus", &A10, 1, 36, 440, NONE, 1.0, -1),
    };
    gpc_catalog_row local[] = {
        R("local", "local", "local", &L4, 1, 16, 64, NONE, 0, -1),
    };
    gpc_catalog cat = CAT(rows, 2);
    gpc_gpu_req l4 = {.model = "L4", .mem_gib = {0, 0}, .count = {1, 1}};
    gpc_offer_query q = Q(&l4, 1, 1);
    q.providers = (const char *const[]){"local", "aws", "azure"};
    q.n_providers = 3;
    gpc_selection s;
    gpc_error err;
    gpc_error_clear(&err);

    /* the local machine costs nothing and ranks first */
    assert_int_equal(gpc_offers_select(&cat, local, 1, &q, &s, &err), 0);
    assert_int_equal(s.n_rows, 3);
    assert_string_equal(fits(&s), "local g6.xlarge");
    assert_ptr_equal(s.fit[0].row, &local[0]);
    assert_price(s.fit[0].price_cluster, 0);
    assert_price(s.fit[0].tflops_node, 121);
    assert_int_equal(s.lost_by[GPC_LOST_HARDWARE], 1);     /* A10 */
    gpc_selection_free(&s);

    /* and it ranks first per TFLOPS too */
    q.sort = GPC_SORT_PER_TFLOPS;
    assert_int_equal(gpc_offers_select(&cat, local, 1, &q, &s, &err), 0);
    assert_string_equal(fits(&s), "local g6.xlarge");
    gpc_selection_free(&s);

    /* spot: the local row has no spot price */
    q.policy = q.head = GPC_SPOT_SPOT;
    assert_int_equal(gpc_offers_select(&cat, local, 1, &q, &s, &err), 0);
    assert_string_equal(fits(&s), "g6.xlarge/spot");
    assert_ptr_equal(s.lost[0].row, &local[0]);
    assert_string_equal(s.lost[0].why, "no spot price");
    gpc_selection_free(&s);

    /* no catalog at all */
    q.policy = q.head = GPC_SPOT_ON_DEMAND;
    assert_int_equal(gpc_offers_select(NULL, local, 1, &q, &s, &err), 0);
    assert_int_equal(s.n_rows, 1);
    assert_string_equal(fits(&s), "local");
    gpc_selection_free(&s);
}

/* ------------------------------------------------------------------ */
/* API edges.                                                         */

static void test_nodes_zero(void **state)
{
    (void)state;
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 0);
    gpc_selection s;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_offers_select(&cat, NULL, 0, &q, &s, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "offers: nodes must be at least 1");
    assert_int_equal(s.n_fit, 0);
    assert_null(s.fit);
    gpc_selection_free(&s);          /* safe after a failure */
    gpc_selection_free(NULL);
}

static void test_query_from_spec(void **state)
{
    (void)state;
    gpc_spec spec;
    memset(&spec, 0, sizeof(spec));
    gpc_gpu_req req = {.model = "A100", .mem_gib = {80, 80}, .count = {8, 8}};
    char *provs[] = {"aws", "azure"};
    char *regions[] = {"us-east-1"};
    char *types[] = {"p4de.24xlarge"};
    spec.name = "job";
    spec.nodes = 8;
    spec.providers = provs;
    spec.n_providers = 2;
    spec.regions = regions;
    spec.n_regions = 1;
    spec.resources.gpus = &req;
    spec.resources.n_gpus = 1;
    spec.resources.cpus = (gpc_range){96, 0};
    spec.resources.memory_gib = (gpc_range){512, 2048};
    spec.resources.interconnect = GPC_IC_RDMA;
    spec.resources.instance_types = types;
    spec.resources.n_instance_types = 1;
    spec.spot.policy = GPC_SPOT_AUTO;
    spec.spot.max_price = 45;
    spec.spot.head = GPC_SPOT_ON_DEMAND;
    spec.budget.max_hourly = 300;
    spec.budget.max_total = 5000;
    spec.lifecycle.max_duration_s = 3600;

    gpc_offer_query q;
    memset(&q, 0xff, sizeof(q));
    gpc_offer_query_from_spec(&spec, &q);
    assert_ptr_equal(q.gpus, &req);
    assert_int_equal(q.n_gpus, 1);
    assert_price(q.cpus.min, 96);
    assert_price(q.memory_gib.max, 2048);
    assert_int_equal(q.interconnect, GPC_IC_RDMA);
    assert_ptr_equal(q.providers, provs);
    assert_int_equal(q.n_providers, 2);
    assert_ptr_equal(q.regions, regions);
    assert_int_equal(q.n_regions, 1);
    assert_ptr_equal(q.instance_types, types);
    assert_int_equal(q.n_instance_types, 1);
    assert_int_equal(q.policy, GPC_SPOT_AUTO);
    assert_int_equal(q.head, GPC_SPOT_ON_DEMAND);
    assert_price(q.max_price, 45);
    assert_int_equal(q.nodes, 8);
    assert_price(q.budget_hourly, 300);
    assert_price(q.budget_total, 5000);
    assert_int_equal(q.max_duration_s, 3600);
    assert_int_equal(q.sort, GPC_SORT_PRICE);

    /* and it selects: only p4de (pinned, efa, us-east-1) qualifies; auto
     * workers with an on-demand head: 40.96 + 7 x 16.3863 = 155.6641 fits
     * (every node <= 45); all on-demand 8 x 40.96 = 327.68 > 300 per hour. */
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_selection s;
    select_ok(&cat, &q, &s);
    assert_string_equal(fits(&s), "p4de.24xlarge/spot+head/od");
    assert_price(s.fit[0].price_cluster, 155.6641);
    assert_price(s.fit[0].projected_total, 155.6641);          /* 1 h */
    assert_int_equal(s.n_lost, 1);
    assert_int_equal(s.lost[0].spot, 0);
    assert_string_equal(s.lost[0].why, "cluster 327.68 USD/hour > budget.max_hourly 300.00");
    assert_int_equal(s.lost_by[GPC_LOST_INSTANCE_TYPE], 2 * 3);   /* azure, p4d, p5 */
    assert_int_equal(s.lost_by[GPC_LOST_PROVIDER], 2 * 3);        /* aliyun */
    gpc_selection_free(&s);
}

static void test_verdict_names(void **state)
{
    (void)state;
    static const char *const want[] = {
        "fit", "provider", "instance_type", "hardware", "cpu", "memory", "interconnect",
        "region", "no_price", "max_price", "budget_hourly", "budget_total",
    };
    for (int v = 0; v < GPC_VERDICT_COUNT; v++)
        assert_string_equal(gpc_verdict_name((gpc_verdict)v), want[v]);
    assert_string_equal(gpc_verdict_name(GPC_VERDICT_COUNT), "?");
}

/* Long lists are clipped: `why` fits its 192 bytes, the error its 1024. */
static void test_clipping(void **state)
{
    (void)state;
    char names[80][48];
    const char *regions[80];
    for (int i = 0; i < 80; i++) {
        snprintf(names[i], sizeof names[i], "region-with-a-rather-long-name-%02d", i);
        regions[i] = names[i];
    }
    gpc_catalog_row rows[7];
    a100_rows(rows);
    gpc_catalog cat = CAT(rows, 7);
    gpc_offer_query q = Q(&A100_80x8, 1, 1);
    q.regions = regions;
    q.n_regions = 80;
    q.providers = regions;                 /* no such providers: long scope list */
    q.n_providers = 0;
    gpc_selection s;
    select_ok(&cat, &q, &s);
    assert_int_equal(s.n_lost, 5);
    const char *why = s.lost[0].why;                    /* azure, 32.77 */
    const char *head = "region eastus not in [region-with-a-rather-long-name-00, ";
    assert_true(strlen(why) < sizeof s.lost[0].why);
    assert_true(strlen(why) > 150);
    assert_true(strncmp(why, head, strlen(head)) == 0);
    assert_string_equal(why + strlen(why) - 6, ", ...]");
    gpc_error err;
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_true(strlen(err.msg) < GPC_ERROR_MSG_MAX);
    assert_non_null(strstr(err.msg, ", ...])"));
    gpc_selection_free(&s);

    q.n_regions = 0;
    q.n_providers = 80;
    select_ok(&cat, &q, &s);
    assert_int_equal(why_none(&s, &q, &err), GPC_ERR_CAPACITY);
    assert_true(strlen(err.msg) < GPC_ERROR_MSG_MAX);
    head = "no offer fits 'job': no catalog row for providers "
           "region-with-a-rather-long-name-00, ";
    assert_true(strncmp(err.msg, head, strlen(head)) == 0);
    assert_string_equal(err.msg + strlen(err.msg) - 5, ", ...");
    gpc_selection_free(&s);
}

/* A large synthetic catalog: one pass, sorted output, counts add up. */
static void test_many_rows(void **state)
{
    (void)state;
    enum { N = 100000 };
    static const char *const provs[] = {"aws", "azure", "aliyun", "gcp"};
    static const gpc_gpu_info *const gpus[] = {&A100_80, &H100_SXM, &T4, &L4, &A10G};
    static char types[64][24];
    gpc_catalog_row *rows = calloc(N, sizeof(*rows));
    assert_non_null(rows);
    for (int i = 0; i < 64; i++)
        snprintf(types[i], sizeof types[i], "type-%02d", i);
    for (int i = 0; i < N; i++) {
        const gpc_gpu_info *g = gpus[i % 5];
        double od = 1.0 + (double)((i * 7919) % 10007) / 100.0;
        rows[i] = R(provs[i % 4], types[i % 64], (i % 3) ? "us-east-1" : "eu-west-1", g,
                    (uint32_t)(1 + i % 8), 8.0 * (1 + i % 8), 64, (i % 2) ? EFA : NONE, od,
                    (i % 10) ? od / 3 : -1);
    }
    gpc_catalog cat = CAT(rows, N);
    gpc_gpu_req req[2] = {{.model = "A100", .mem_gib = {0, 0}, .count = {1, 8}},
                          {.model = "H100", .mem_gib = {0, 0}, .count = {8, 8}}};
    gpc_offer_query q = Q(req, 2, 4);
    q.providers = (const char *const[]){"aws", "azure", "aliyun"};
    q.n_providers = 3;
    q.regions = (const char *const[]){"us-east-1"};
    q.n_regions = 1;
    q.policy = q.head = GPC_SPOT_AUTO;
    q.budget_hourly = 200;
    gpc_selection s;
    select_ok(&cat, &q, &s);
    size_t total = 0;
    for (int v = 0; v < GPC_VERDICT_COUNT; v++)
        total += s.lost_by[v];
    assert_int_equal(total, 2 * N);
    assert_int_equal(s.n_rows, N);
    assert_int_equal(s.lost_by[GPC_FIT], s.n_fit);
    assert_true(s.n_fit > 1000);
    for (size_t i = 1; i < s.n_fit; i++)
        assert_true(s.fit[i - 1].price_cluster <= s.fit[i].price_cluster + 1e-6);
    for (size_t i = 0; i < s.n_fit; i++)
        assert_true(s.fit[i].price_cluster <= 200);
    size_t stored = 0;
    for (int v = GPC_LOST_CPU; v < GPC_VERDICT_COUNT; v++)
        stored += s.lost_by[v];
    assert_int_equal(s.n_lost, stored);
    gpc_selection_free(&s);
    free(rows);
}

/* Prices and savings as printed (plan.h): enough digits for a tiny live
 * spot price, and a saving between 0 and 100 never shown as 0 or 100.
 * regression: 0.0031 against 32.77 printed as "0.00" and "100%". */
static void test_price_and_saving_digits(void **state)
{
    (void)state;
    assert_int_equal(gpc_price_decimals(0.0031, 4), 4);     /* "0.0031" */
    assert_int_equal(gpc_price_decimals(0.0031, 2), 4);     /* not "0.00" */
    assert_int_equal(gpc_price_decimals(0.00314, 4), 5);    /* "0.00314" */
    assert_int_equal(gpc_price_decimals(0.000031, 4), 6);   /* "0.000031" */
    assert_int_equal(gpc_price_decimals(0.0000001, 4), 4);  /* 0 at 6 decimals, as documents */
    assert_int_equal(gpc_price_decimals(8.22609, 4), 4);    /* "8.2261" */
    assert_int_equal(gpc_price_decimals(58.0029, 2), 2);    /* "58.00" */
    assert_int_equal(gpc_price_decimals(0.25, 2), 2);       /* "0.25" */
    assert_int_equal(gpc_price_decimals(0.0125, 2), 4);     /* "0.0125" */
    assert_int_equal(gpc_price_decimals(0, 2), 2);
    assert_int_equal(gpc_price_decimals(-1, 4), 4);         /* unknown */

    int d = -1;
    /* 100 x (1 - 0.0031/32.77) = 99.990540 */
    double pct = 100.0 * (1.0 - 0.0031 / 32.77);
    assert_true(gpc_saving_pct_round(pct, 1, &d) == 99.99);
    assert_int_equal(d, 2);
    assert_true(gpc_saving_pct_round(pct, 0, &d) == 99.99);
    assert_int_equal(d, 2);
    assert_true(gpc_saving_pct_round(77.875, 1, &d) == 77.9); /* as before */
    assert_int_equal(d, 1);
    assert_true(gpc_saving_pct_round(89.0, 0, &d) == 89);
    assert_int_equal(d, 0);
    assert_true(gpc_saving_pct_round(99.6, 0, &d) == 99.6);    /* not 100 */
    assert_int_equal(d, 1);
    assert_true(gpc_saving_pct_round(0.3, 0, &d) == 0.3);      /* not 0 */
    assert_int_equal(d, 1);
    assert_true(gpc_saving_pct_round(-0.0002, 0, &d) == -0.0002); /* not -0 */
    assert_int_equal(d, 4);
    assert_true(gpc_saving_pct_round(99.99999999, 1, &d) == 99.999999); /* into the range */
    assert_int_equal(d, 6);
    assert_true(gpc_saving_pct_round(0.00000001, 1, &d) == 0.000001);
    assert_true(gpc_saving_pct_round(-0.00000001, 0, &d) == -0.000001);
    assert_true(gpc_saving_pct_round(100, 1, &d) == 100);      /* a free spot price */
    assert_int_equal(d, 1);
    double z = gpc_saving_pct_round(0, 0, &d);                 /* spot = on-demand */
    assert_true(z == 0 && !signbit(z));
    assert_int_equal(d, 0);
    assert_true(gpc_saving_pct_round(-5.04, 0, NULL) == -5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cheapest_across_providers),
        cmocka_unit_test(test_interconnect),
        cmocka_unit_test(test_max_price),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_spot_ondemand_auto),
        cmocka_unit_test(test_head_on_demand),
        cmocka_unit_test(test_tie_and_per_tflops),
        cmocka_unit_test(test_family_matching),
        cmocka_unit_test(test_cpu_memory),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_zones),
        cmocka_unit_test(test_why_precision),
        cmocka_unit_test(test_pinned_and_providers),
        cmocka_unit_test(test_extra_rows),
        cmocka_unit_test(test_nodes_zero),
        cmocka_unit_test(test_query_from_spec),
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_clipping),
        cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_price_and_saving_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
