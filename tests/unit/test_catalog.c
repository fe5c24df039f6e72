/* test_catalog.c - src/engine/catalog*.c: the built-in catalog, the CSV
 * loader and its messages, large tables, files, writing, overrides. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/embedded.h"
#include "gpuctl/util.h"

/* Every column, in the order the writer uses, and one good row. */
#define HDR                                                                              \
    "provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib," \
    "interconnect,interconnect_gbps,price_ondemand_usd_hr,price_spot_usd_hr,"            \
    "price_ondemand_cny_hr,price_spot_cny_hr,source,notes\n"
#define ROW "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,skypilot-v8-aws,\n"
/* The header of the required columns only. */
#define HDR_MIN                                                                          \
    "provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib," \
    "interconnect,price_ondemand_usd_hr,price_spot_usd_hr\n"

#define KNOWN_GPUS                                                                      \
    "T4, V100-16GB, V100-32GB, V100-16GB-PCIe, A10G, A10, A100-40GB, A100-80GB, "        \
    "A100-80GB-PCIe, A800-40GB, H100-80GB-SXM, H100-PCIe, H100-NVL, H200-141GB-SXM, "    \
    "H800, H20, L4, L40S, L20, H-e, B200-SXM, B300"

/* ------------------------------------------------------------------ */
/* helpers                                                            */

static gpc_catalog *load(const char *csv)
{
    gpc_catalog *c = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_catalog_load_string("t.csv", csv, strlen(csv), &c, &e);
    if (rc)
        fail_msg("unexpected error %d: %s\n--- csv:\n%s", rc, e.msg, csv);
    assert_non_null(c);
    return c;
}

static gpc_catalog *builtin(void)
{
    gpc_catalog *c = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_catalog_load_builtin(&c, &e);
    if (rc)
        fail_msg("built-in catalog: %d: %s", rc, e.msg);
    assert_non_null(c);
    return c;
}

static void expect_error_n(const char *csv, size_t len, const char *want)
{
    gpc_catalog *c = (gpc_catalog *)1;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_catalog_load_string("t.csv", csv, len, &c, &e);
    if (rc != GPC_ERR_SPEC)
        fail_msg("expected '%s', got rc %d ('%s')\n--- csv:\n%s", want, rc, e.msg, csv);
    assert_null(c);
    assert_int_equal(e.code, GPC_ERR_SPEC);
    if (strcmp(e.msg, want) != 0)
        fail_msg("message differs\n  want: %s\n  got:  %s\n--- csv:\n%s", want, e.msg, csv);
}

static void expect_error(const char *csv, const char *want)
{
    expect_error_n(csv, strlen(csv), want);
}

static const gpc_catalog_row *find(const gpc_catalog *c, const char *provider,
                                   const char *type, const char *region)
{
    for (size_t i = 0; i < c->n_rows; i++) {
        const gpc_catalog_row *r = &c->rows[i];
        if (!strcmp(r->provider, provider) && !strcmp(r->instance_type, type) &&
            !strcmp(r->region, region))
            return r;
    }
    fail_msg("no row %s/%s/%s", provider, type, region);
    return NULL;
}

static void assert_rows_equal(const gpc_catalog_row *a, const gpc_catalog_row *b)
{
    assert_string_equal(a->provider, b->provider);
    assert_string_equal(a->instance_type, b->instance_type);
    assert_string_equal(a->region, b->region);
    assert_string_equal(a->gpu_model, b->gpu_model);
    assert_int_equal(a->gpu_count, b->gpu_count);
    /* Exact: the writer prints numbers that read back bit for bit. */
    assert_true(a->gpu_mem_gib == b->gpu_mem_gib);
    assert_true(a->vcpus == b->vcpus);
    assert_true(a->mem_gib == b->mem_gib);
    assert_int_equal(a->fabric, b->fabric);
    assert_true(a->fabric_gbps == b->fabric_gbps);
    assert_true(a->price_ondemand == b->price_ondemand);
    assert_true(a->price_spot == b->price_spot);
    assert_true(a->price_ondemand_cny == b->price_ondemand_cny);
    assert_true(a->price_spot_cny == b->price_spot_cny);
    assert_string_equal(a->source, b->source);
    assert_string_equal(a->notes, b->notes);
    assert_true((a->gpu == NULL) == (b->gpu == NULL));
    if (a->gpu)
        assert_string_equal(a->gpu->model, b->gpu->model);
}

static char *write_csv(const gpc_catalog *c)
{
    gpc_buf b;
    gpc_error e;
    gpc_error_clear(&e);
    gpc_buf_init(&b, GPC_CATALOG_MAX_BYTES);
    assert_int_equal(gpc_catalog_write_csv(c, &b, &e), 0);
    return gpc_buf_take(&b);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* ------------------------------------------------------------------ */
/* the built-in catalog                                               */

static void test_builtin_counts(void **state)
{
    (void)state;
    gpc_catalog *c = builtin();
    assert_string_equal(c->origin, "built-in");
    assert_int_equal(c->n_rows, 368);
    size_t aws = 0, azure = 0, aliyun = 0;
    for (size_t i = 0; i < c->n_rows; i++) {
        const char *p = c->rows[i].provider;
        aws += !strcmp(p, "aws");
        azure += !strcmp(p, "azure");
        aliyun += !strcmp(p, "aliyun");
        /* Every row names a source the sources table has. */
        assert_non_null(gpc_catalog_source_get(c, c->rows[i].source));
        /* Sorted by provider, instance type, region; line = index + 2. */
        assert_int_equal(c->rows[i].line, i + 2);
        if (i > 0) {
            const gpc_catalog_row *a = &c->rows[i - 1], *b = &c->rows[i];
            int d = strcmp(a->provider, b->provider);
            if (!d)
                d = strcmp(a->instance_type, b->instance_type);
            if (!d)
                d = strcmp(a->region, b->region);
            assert_true(d < 0);
        }
    }
    assert_int_equal(aws, 227);
    /* AWS rows per instance family (the type up to its '.'). */
    static const struct {
        const char *family;
        size_t rows;
    } fam[] = {{"g4dn", 49}, {"g5", 48},   {"g6", 40},   {"g6e", 40},     {"gr6", 10},
               {"p3", 9},    {"p3dn", 3},  {"p4d", 6},   {"p4de", 5},     {"p5", 7},
               {"p5e", 2},   {"p5en", 4},  {"p6-b200", 3}, {"p6-b300", 1}};
    size_t in_families = 0;
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        size_t n = 0, len = strlen(fam[f].family);
        for (size_t i = 0; i < c->n_rows; i++)
            n += !strcmp(c->rows[i].provider, "aws") &&
                 !strncmp(c->rows[i].instance_type, fam[f].family, len) &&
                 c->rows[i].instance_type[len] == '.';
        assert_int_equal(n, fam[f].rows);
        in_families += n;
    }
    assert_int_equal(in_families, aws);
    assert_int_equal(azure, 40);
    assert_int_equal(aliyun, 101);
    assert_int_equal(c->n_gpus, 22);
    /* 6 sources of the built-in rows, azure-retail-api and aws-api for rows
     * that `catalog update` refreshes, and aws-ec2-ac-specs (AWS
     * interconnect figures, cited by the skypilot-v8-aws rows) */
    assert_int_equal(c->n_sources, 9);
    const gpc_catalog_source *az = gpc_catalog_source_get(c, "azure-retail-api");
    assert_non_null(az);
    assert_string_equal(az->currency, "USD");
    assert_true(az->usd_per_unit == 1);

    const gpc_embedded_file *f = gpc_catalog_file_get("gpu_instances.csv");
    assert_non_null(f);
    char sha[65];
    gpc_sha256_hex(f->data, f->len, sha);
    assert_string_equal(c->sha256, sha);
    assert_int_equal(strlen(c->sha256), 64);
    assert_null(gpc_catalog_file_get("README.md")); /* only the CSV files */
    gpc_catalog_free(c);
}

static void test_builtin_rows(void **state)
{
    (void)state;
    gpc_catalog *c = builtin();

    const gpc_catalog_row *r = find(c, "aws", "p4de.24xlarge", "us-east-1");
    assert_string_equal(r->gpu_model, "A100-80GB");
    assert_ptr_equal(r->gpu, gpc_catalog_gpu(c, "A100-80GB"));
    assert_int_equal(r->gpu_count, 8);
    assert_true(r->gpu_mem_gib == 80);
    assert_true(r->vcpus == 96);
    assert_true(r->mem_gib == 1152);
    assert_int_equal(r->fabric, GPC_FABRIC_EFA);
    assert_true(r->fabric_gbps == 400);
    assert_true(r->price_ondemand == 27.44705);
    assert_true(r->price_spot == 8.6505);
    assert_true(r->price_ondemand_cny == -1);
    assert_true(r->price_spot_cny == -1);
    assert_string_equal(r->source, "skypilot-v8-aws");
    assert_string_equal(r->notes, "");
    assert_int_equal(r->line, 311);

    r = find(c, "aws", "g5.xlarge", "us-east-1");
    assert_string_equal(r->gpu_model, "A10G");
    assert_true(r->price_ondemand == 1.006);
    assert_true(r->price_spot == 0.397);
    assert_int_equal(r->fabric, GPC_FABRIC_NONE);
    assert_true(r->fabric_gbps == 0);
    assert_string_equal(r->source, "skypilot-v7-aws");

    /* p5.4xlarge: EFA 100 Gbit/s (AWS spec page), no spot data in us-east-1. */
    r = find(c, "aws", "p5.4xlarge", "us-east-1");
    assert_int_equal(r->fabric, GPC_FABRIC_EFA);
    assert_true(r->fabric_gbps == 100);
    assert_true(r->price_ondemand == 6.88);
    assert_true(r->price_spot == -1);
    assert_string_equal(r->notes, "");

    /* Rows of the families added from skypilot-v8-aws, checked by hand
     * against catalogs/v8/aws/vms.csv @00148f2a (spot: lowest over the
     * region's zones) and the AWS accelerated-computing spec page. */
    r = find(c, "aws", "g6.xlarge", "us-east-1");
    assert_string_equal(r->gpu_model, "L4");
    assert_int_equal(r->gpu_count, 1);
    assert_true(r->gpu_mem_gib == 24);
    assert_true(r->vcpus == 4);
    assert_true(r->mem_gib == 16);
    assert_int_equal(r->fabric, GPC_FABRIC_NONE);
    assert_true(r->price_ondemand == 0.8048);
    assert_true(r->price_spot == 0.349); /* use1-az4 */
    assert_string_equal(r->source, "skypilot-v8-aws");
    r = find(c, "aws", "g6e.48xlarge", "us-east-2");
    assert_string_equal(r->gpu_model, "L40S");
    assert_int_equal(r->gpu_count, 8);
    assert_true(r->mem_gib == 1536);
    assert_int_equal(r->fabric, GPC_FABRIC_EFA);
    assert_true(r->fabric_gbps == 400);
    assert_true(r->price_ondemand == 30.13118);
    assert_true(r->price_spot == 8.2444); /* use2-az2 */
    r = find(c, "aws", "p6-b200.48xlarge", "us-east-1");
    assert_string_equal(r->gpu_model, "B200-SXM");
    assert_true(r->gpu_mem_gib == 179);
    assert_true(r->fabric_gbps == 3200);
    assert_true(r->price_ondemand == 113.9328);
    assert_true(r->price_spot == 21.0148); /* use1-az6; the Atlanta Local Zone's 13.0338 is not */
    r = find(c, "aws", "p5e.48xlarge", "us-east-2"); /* spot only */
    assert_true(r->price_ondemand == -1);
    assert_true(r->price_spot == 18.7359);
    assert_string_equal(r->notes, "no on-demand price in the source (spot only)");
    r = find(c, "aws", "p5en.48xlarge", "us-west-2");
    assert_true(r->price_ondemand == 63.296);
    assert_true(r->price_spot == 15.482);

    r = find(c, "azure", "Standard_ND96isr_H100_v5", "eastus");
    assert_int_equal(r->gpu_count, 8); /* the source's 12 is corrected */
    assert_string_equal(r->gpu_model, "H100-80GB-SXM");
    assert_true(r->gpu_mem_gib == 80);
    assert_true(r->mem_gib == 1900);
    assert_int_equal(r->fabric, GPC_FABRIC_INFINIBAND);
    assert_true(r->fabric_gbps == 3200);
    assert_true(r->price_ondemand == 98.32);
    assert_true(r->price_spot == -1);
    assert_string_equal(r->source, "skypilot-v6-azure");
    assert_string_equal(r->notes, "source SpotPrice equals on-demand (98.32) - treated as no "
                                  "spot data; source AcceleratorCount=12 is wrong; 8x H100 per "
                                  "Azure docs");

    /* Aliyun: USD as the source gives it; CNY = USD / 0.138, to 4 decimals. */
    r = find(c, "aliyun", "ecs.ebmgn6v.24xlarge", "cn-beijing");
    assert_string_equal(r->gpu_model, "V100-16GB");
    assert_int_equal(r->gpu_count, 8);
    assert_true(r->price_ondemand == 32.734842);
    assert_true(r->price_spot == 4.265614);
    assert_true(r->price_ondemand_cny == 237.209);
    assert_true(r->price_spot_cny == 30.9102);
    assert_string_equal(r->source, "sugarlxn-v8-alicloud");
    const gpc_catalog_source *s = gpc_catalog_source_get(c, r->source);
    assert_true(s->usd_per_unit == 0.138);
    /* 237.209 x 0.138 = 32.734842 exactly; 30.9102 x 0.138 = 4.2656076. */
    assert_true(fabs(r->price_ondemand_cny * s->usd_per_unit - r->price_ondemand) < 1e-9);
    assert_true(fabs(r->price_spot_cny * s->usd_per_unit - r->price_spot) < 7e-6);

    /* ArthurChiao: CNY as published, USD = CNY x 0.138 (31.58 -> 4.35804). */
    r = find(c, "aliyun", "ecs.gn7-c12g1.3xlarge", "cn-shanghai");
    assert_string_equal(r->gpu_model, "A100-40GB");
    assert_true(r->price_ondemand_cny == 31.58);
    assert_true(r->price_ondemand == 4.358);
    assert_true(r->price_spot == -1);
    assert_true(r->price_spot_cny == -1);
    assert_string_equal(r->source, "arthurchiao-2023-06");
    assert_string_equal(r->notes, "");

    /* Every Aliyun price pair agrees with its source's rate to rounding
     * (CNY or USD kept to 4 decimals: 0.00005 CNY or USD). */
    size_t pairs = 0;
    for (size_t i = 0; i < c->n_rows; i++) {
        const gpc_catalog_row *x = &c->rows[i];
        const gpc_catalog_source *xs = gpc_catalog_source_get(c, x->source);
        assert_true((x->price_ondemand_cny >= 0) == !strcmp(x->provider, "aliyun") ||
                    !strcmp(x->source, "alibaba-docs"));
        if (x->price_ondemand_cny >= 0) {
            assert_true(fabs(x->price_ondemand_cny * xs->usd_per_unit - x->price_ondemand) <
                        5.1e-5);
            pairs++;
        }
        if (x->price_spot_cny >= 0) {
            assert_true(fabs(x->price_spot_cny * xs->usd_per_unit - x->price_spot) < 5.1e-5);
            pairs++;
        }
    }
    assert_int_equal(pairs, 100 + 93);

    /* ebmgn7ex: specs only, no region, no price. */
    r = find(c, "aliyun", "ecs.ebmgn7ex.32xlarge", "");
    assert_int_equal(r->fabric, GPC_FABRIC_ERDMA);
    assert_true(r->fabric_gbps == 160);
    assert_true(r->price_ondemand == -1);
    assert_true(r->price_spot == -1);
    assert_true(r->price_ondemand_cny == -1);
    assert_string_equal(r->source, "alibaba-docs");

    /* The unnamed 141GB Aliyun GPU. */
    r = find(c, "aliyun", "ecs.gn8e-8x.48xlarge", "cn-hongkong");
    assert_string_equal(r->gpu_model, "H-e");
    assert_true(r->gpu->memory_gib == 141);
    assert_true(gpc_gpu_tflops(r->gpu) == 0);
    assert_string_equal(r->notes, "GPUSpec 'H-e' 141GB; model unverified");
    assert_true(r->price_ondemand == 80.755066);
    assert_true(r->price_ondemand_cny == 585.1816);
    gpc_catalog_free(c);
}

static void test_gpus(void **state)
{
    (void)state;
    gpc_catalog *c = builtin();
    const gpc_gpu_info *g = gpc_catalog_gpu(c, "A100-80GB");
    assert_non_null(g);
    assert_true(g->memory_gib == 80);
    assert_true(g->bf16_tflops_dense == 312);
    assert_true(g->fp16_tflops_dense == 312);
    assert_true(g->fp32_tflops == 19.5);
    assert_string_equal(g->source, "NVIDIA A100 datasheet");
    assert_true(gpc_gpu_tflops(g) == 312);

    g = gpc_catalog_gpu(c, "t4"); /* case-insensitive */
    assert_non_null(g);
    assert_string_equal(g->model, "T4");
    assert_true(g->bf16_tflops_dense == 0);
    assert_true(g->fp16_tflops_dense == 65);
    assert_true(g->fp32_tflops == 8.1);
    assert_true(gpc_gpu_tflops(g) == 65);

    g = gpc_catalog_gpu(c, "A10G");
    assert_true(g->memory_gib == 24);
    assert_true(g->bf16_tflops_dense == 0);
    assert_true(g->fp16_tflops_dense == 0);
    assert_true(gpc_gpu_tflops(g) == 0);

    assert_true(gpc_gpu_tflops(gpc_catalog_gpu(c, "H100-80GB-SXM")) == 989);
    assert_true(gpc_gpu_tflops(gpc_catalog_gpu(c, "L4")) == 121);
    assert_true(gpc_catalog_gpu(c, "H100-NVL")->memory_gib == 94);
    assert_null(gpc_catalog_gpu(c, "A100"));
    assert_null(gpc_catalog_gpu(c, NULL));
    assert_true(gpc_gpu_tflops(NULL) == 0);
    gpc_catalog_free(c);
}

static void test_sources(void **state)
{
    (void)state;
    gpc_catalog *c = builtin();
    const gpc_catalog_source *s = gpc_catalog_source_get(c, "sugarlxn-v8-alicloud");
    assert_non_null(s);
    assert_string_equal(s->currency, "CNY");
    assert_true(s->usd_per_unit == 0.138);
    assert_string_equal(s->version, "003c56a723d369190b11308e630e4cfd33e25c86");
    assert_string_equal(s->data_date, "not stated; has 2025 families (gn9gc, gn8ep)");

    s = gpc_catalog_source_get(c, "arthurchiao-2023-06");
    assert_string_equal(s->currency, "CNY");
    assert_true(s->usd_per_unit == 0.138);
    assert_string_equal(s->data_date, "2023-06");
    assert_string_equal(s->version, "f234afcab779778aef1bcd0ffd42a85934e5f578");

    s = gpc_catalog_source_get(c, "skypilot-v8-aws");
    assert_string_equal(s->currency, "USD");
    assert_true(s->usd_per_unit == 1);
    assert_string_equal(s->citation, "skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv");
    assert_string_equal(s->version, "00148f2af3672e2229b4f7bf8157d5a3f36e3c35");

    s = gpc_catalog_source_get(c, "skypilot-v7-aws");
    assert_string_equal(s->version, "001367d22a0033fac286a8c71aeac7109e431bcb");
    s = gpc_catalog_source_get(c, "skypilot-v6-azure");
    assert_string_equal(s->version, "098741e70562f65d7af1cceb81e33b284f742604");
    assert_string_equal(s->currency, "USD");

    s = gpc_catalog_source_get(c, "alibaba-docs"); /* specs only: no currency */
    assert_string_equal(s->currency, "");
    assert_true(s->usd_per_unit == 0);
    assert_string_equal(s->version, "");

    s = gpc_catalog_source_get(c, "aws-api"); /* rows aws's catalog update writes */
    assert_non_null(s);
    assert_string_equal(s->currency, "USD");
    assert_true(s->usd_per_unit == 1);
    assert_string_equal(s->version, "");

    assert_null(gpc_catalog_source_get(c, "skypilot"));
    assert_null(gpc_catalog_source_get(c, NULL));
    gpc_catalog_free(c);
}

static void test_fabric_names(void **state)
{
    (void)state;
    assert_string_equal(gpc_fabric_name(GPC_FABRIC_UNKNOWN), "unknown");
    assert_string_equal(gpc_fabric_name(GPC_FABRIC_NONE), "none");
    assert_string_equal(gpc_fabric_name(GPC_FABRIC_EFA), "efa");
    assert_string_equal(gpc_fabric_name(GPC_FABRIC_INFINIBAND), "infiniband");
    assert_string_equal(gpc_fabric_name(GPC_FABRIC_ERDMA), "erdma");
    assert_string_equal(gpc_fabric_name((gpc_fabric)99), "unknown");
}

/* ------------------------------------------------------------------ */
/* loading user data                                                  */

static void test_columns_any_order(void **state)
{
    (void)state;
    /* Required columns only, shuffled; quoted cells; blank lines; CRLF. */
    gpc_catalog *c = load("price_spot_usd_hr,interconnect,region,provider,instance_type,"
                          "gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
                          "price_ondemand_usd_hr\r\n"
                          "\r\n"
                          ",none,\"eu-west-1\",mycloud-2,\"g9.big\",a10g,1,24,4,16,1.5\r\n"
                          "0.25,,\"\",aws,c5.large,,0,0,2,4,0.085\r\n");
    assert_string_equal(c->origin, "t.csv");
    assert_int_equal(c->n_rows, 2);
    const gpc_catalog_row *r = &c->rows[0];
    assert_string_equal(r->provider, "mycloud-2");
    assert_string_equal(r->instance_type, "g9.big");
    assert_string_equal(r->region, "eu-west-1");
    assert_string_equal(r->gpu_model, "A10G"); /* the table's spelling */
    assert_ptr_equal(r->gpu, gpc_catalog_gpu(c, "A10G"));
    assert_int_equal(r->gpu_count, 1);
    assert_int_equal(r->fabric, GPC_FABRIC_NONE);
    assert_true(r->fabric_gbps == 0);
    assert_true(r->price_ondemand == 1.5);
    assert_true(r->price_spot == -1);
    assert_true(r->price_ondemand_cny == -1);
    assert_true(r->price_spot_cny == -1);
    assert_string_equal(r->source, "");
    assert_string_equal(r->notes, "");
    assert_int_equal(r->line, 3);
    r = &c->rows[1];
    assert_string_equal(r->gpu_model, "");
    assert_null(r->gpu);
    assert_int_equal(r->gpu_count, 0);
    assert_int_equal(r->fabric, GPC_FABRIC_UNKNOWN);
    assert_string_equal(r->region, "");
    assert_true(r->price_spot == 0.25);
    assert_true(r->price_ondemand == 0.085);
    assert_int_equal(r->line, 4);
    gpc_catalog_free(c);

    /* A byte order mark, no newline at the end, numbers in every form. */
    c = load("\xEF\xBB\xBF" HDR "aws,x.1,r,T4,1,16,.5,7.,none,0,0,00.10,1.5,3,k, spaced \t");
    assert_int_equal(c->n_rows, 1);
    r = &c->rows[0];
    assert_true(r->vcpus == 0.5);
    assert_true(r->mem_gib == 7);
    assert_true(r->price_ondemand == 0);
    assert_true(r->price_spot == 0.1);
    assert_true(r->price_ondemand_cny == 1.5);
    assert_true(r->price_spot_cny == 3);
    assert_string_equal(r->source, "k");
    assert_string_equal(r->notes, "spaced"); /* libcsv trims unquoted cells */
    gpc_catalog_free(c);

    /* Header only: no rows. */
    c = load(HDR);
    assert_int_equal(c->n_rows, 0);
    gpc_catalog_free(c);
}

static void test_line_numbers(void **state)
{
    (void)state;
    /* A quoted cell with newlines: the next records' lines stay right. */
    const char *csv = HDR
        "aws,a.1,r1,T4,1,16,4,16,none,,1,,,,s,\"two\nlines\"\n"
        "aws,a.2,r1,T4,1,16,4,16,none,,1,,,,s,\"three\n\nlines\"\n"
        "\n"
        "aws,a.3,r1,T4,1,16,4,16,none,,1,,,,s,x\n";
    gpc_catalog *c = load(csv);
    assert_int_equal(c->n_rows, 3);
    assert_int_equal(c->rows[0].line, 2);
    assert_string_equal(c->rows[0].notes, "two\nlines");
    assert_int_equal(c->rows[1].line, 4);
    assert_string_equal(c->rows[1].notes, "three\n\nlines");
    assert_int_equal(c->rows[2].line, 8);
    gpc_catalog_free(c);

    expect_error(HDR "aws,a.1,r1,T4,1,16,4,16,none,,1,,,,s,\"two\nlines\"\n"
                     "aws,a.2,r1,T4,1,16,four,16,none,,1,,,,s,\n",
                 "t.csv:4: vcpus: not a number (got 'four')");
    /* A record's error names the line it began on. */
    expect_error(HDR "aws,a.1,r1,T4,1,16,4,16,none,,1,,,,s,\"two\nlines\"\n"
                     "aws,a.2,r1,T4,1,16,4,16,none,,-1,,,,s,\"x\ny\"\n",
                 "t.csv:4: price_ondemand_usd_hr: negative price (got '-1'); leave the cell "
                 "empty for no price");
    /* A record that is too short, begun on line 2, ending on line 3. */
    expect_error(HDR "aws,a.1,r1,T4,1,16,4,\"16\n\",none\n",
                 "t.csv:2: 9 cells where the header has 16");
}

typedef struct err_case {
    const char *csv;
    const char *msg;
} err_case;

static void test_errors(void **state)
{
    (void)state;
    static const err_case cases[] = {
        /* the header */
        {"", "t.csv:1: no header row (the data is empty)"},
        {"\n\n", "t.csv:1: no header row (the data is empty)"},
        {"provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
         "interconnect,price_ondemand_usd_hr\n",
         "t.csv:1: missing column 'price_spot_usd_hr'"},
        {"provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
         "interconnect,price_ondemand_usd_hr,price_spot_usd_hour\n",
         "t.csv:1: unknown column 'price_spot_usd_hour' (did you mean 'price_spot_usd_hr'?)"},
        {"Provider,instance_type\n", "t.csv:1: unknown column 'Provider' (did you mean 'provider'?)"},
        {"provider,colour\n",
         "t.csv:1: unknown column 'colour'; known: provider, instance_type, region, gpu_model, "
         "gpu_count, gpu_memory_gib, vcpus, memory_gib, interconnect, interconnect_gbps, "
         "price_ondemand_usd_hr, price_spot_usd_hr, price_ondemand_cny_hr, price_spot_cny_hr, "
         "source, notes"},
        {"provider,region,instance_type,region\n",
         "t.csv:1: duplicate column 'region' (columns 2 and 4)"},
        {"provider,,region\n", "t.csv:1: column 2 has no name"},
        {"\nprovider,colour\n", "t.csv:2: unknown column 'colour'; known: provider, "
         "instance_type, region, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, "
         "interconnect, interconnect_gbps, price_ondemand_usd_hr, price_spot_usd_hr, "
         "price_ondemand_cny_hr, price_spot_cny_hr, source, notes"},
        /* cell counts */
        {HDR "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s\n",
         "t.csv:2: 15 cells where the header has 16"},
        {HDR ROW "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,,\n",
         "t.csv:3: 17 cells where the header has 16"},
        {HDR "x\n", "t.csv:2: 1 cell where the header has 16"},
        /* a wrong count explains a bad cell (shifted cells), so it wins */
        {HDR "aws,p4d,us,A100-40GB,8,40,abc,1152\n", "t.csv:2: 8 cells where the header has 16"},
        {HDR "AWS,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,,x\n",
         "t.csv:2: 17 cells where the header has 16"},
        /* quoting (libcsv, strict mode) */
        {HDR "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\"open\n",
         "t.csv:2: notes: unterminated quoted cell (no closing '\"' before the end of the data)"},
        {HDR ROW "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\"a\n"
                 "b\nc\n",
         "t.csv:3: notes: unterminated quoted cell (no closing '\"' before the end of the data)"},
        {"provider,\"instance_type\n",
         "t.csv:1: unterminated quoted cell (no closing '\"' before the end of the data)"},
        {HDR "aws,p4d\"x,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: instance_type: bad quoting: a '\"' inside an unquoted cell, or text after a "
         "closing '\"' (error parsing data while strict checking enabled)"},
        {HDR "aws,p4d,\"us\"east,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: region: bad quoting: a '\"' inside an unquoted cell, or text after a "
         "closing '\"' (error parsing data while strict checking enabled)"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\"a\nb\"c\n",
         "t.csv:3: notes: bad quoting: a '\"' inside an unquoted cell, or text after a "
         "closing '\"' (error parsing data while strict checking enabled)"},
        /* numbers */
        {HDR "aws,p4d,us,A100-40GB,8,40,abc,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: vcpus: not a number (got 'abc')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,1e3,,,s,\n",
         "t.csv:2: price_spot_usd_hr: not a number (got '1e3')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,+1,,,s,\n",
         "t.csv:2: price_spot_usd_hr: not a number (got '+1')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,.,8.1,,,s,\n",
         "t.csv:2: price_ondemand_usd_hr: not a number (got '.')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,\"8.1 \",,,s,\n",
         "t.csv:2: price_spot_usd_hr: not a number (got '8.1 ')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,-0.5,,,s,\n",
         "t.csv:2: price_spot_usd_hr: negative price (got '-0.5'); leave the cell empty for "
         "no price"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,-3,,s,\n",
         "t.csv:2: price_ondemand_cny_hr: negative price (got '-3'); leave the cell empty for "
         "no price"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,-1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: memory_gib: negative number (got '-1152')"},
        {HDR "aws,p4d,us,A100-40GB,1.5,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: not a whole number of at most 65535 (got '1.5')"},
        {HDR "aws,p4d,us,A100-40GB,65536,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: not a whole number of at most 65535 (got '65536')"},
        /* out of range (catalog.h): every number column has a largest value */
        {HDR "aws,p4d,us,A100-40GB,8,1048577,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_memory_gib: more than 1048576 (got '1048577')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,1048576.5,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: vcpus: more than 1048576 (got '1048576.5')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,100000000000000000000,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: memory_gib: more than 1048576 (got '100000000000000000000')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,2000000,21.96,8.1,,,s,\n",
         "t.csv:2: interconnect_gbps: more than 1048576 (got '2000000')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,1000000.000001,8.1,,,s,\n",
         "t.csv:2: price_ondemand_usd_hr: more than 1000000 (got '1000000.000001')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,"
             "1000000000000000000000000000000000000000000000000000000000000.5,s,\n",
         "t.csv:2: price_spot_cny_hr: more than 1000000 (got "
         "'100000000000000000000000000000000000000000000000...')"},
        {HDR "aws,p4d,us,A100-40GB,4294967296,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: not a whole number of at most 65535 (got '4294967296')"},
        {HDR "aws,p4d,us,A100-40GB,100000000000000000000,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: not a whole number of at most 65535 (got "
         "'100000000000000000000')"},
        {HDR "aws,p4d,us,A100-40GB,0,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: 0 with gpu_model 'A100-40GB' (at least 1)"},
        {HDR "aws,p4d,us,A100-40GB,,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_count: 0 with gpu_model 'A100-40GB' (at least 1)"},
        {HDR "aws,c5,us,,2,0,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_model: empty with gpu_count 2"},
        /* names */
        {HDR "AWS,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: provider: not a provider name: a lower-case letter, then letters, digits or "
         "'-', at most 15 (got 'AWS')"},
        {HDR ",p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: provider: not a provider name: a lower-case letter, then letters, digits or "
         "'-', at most 15 (got '')"},
        {HDR "9cloud,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: provider: not a provider name: a lower-case letter, then letters, digits or "
         "'-', at most 15 (got '9cloud')"},
        {HDR "aws,,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: instance_type: empty (got '')"},
        /* regressions: a row for local was planned over the machine's own
         * offer; names longer than a node request holds were cut */
        {HDR "local,big,local,T4,4,16,64,256,none,,0,,,,s,\n",
         "t.csv:2: provider: the local provider's offer is this machine, which it reports "
         "itself; the catalog cannot list it (got 'local')"},
        {HDR "a-very-long-cloud,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: provider: not a provider name: a lower-case letter, then letters, digits or "
         "'-', at most 15 (got 'a-very-long-cloud')"},
        {HDR "aws,p4d,rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr,A100-40GB,8,40,96,1152,efa,"
             "400,21.96,8.1,,,s,\n",
         "t.csv:2: region: longer than 47 bytes (got "
         "'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr')"},
        {HDR "aws,\"p4d 24\",us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: instance_type: white space or a control character (got 'p4d 24')"},
        {HDR "aws,p4d,\"us\teast\",A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: region: white space or a control character (got 'us\\teast')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,ib,400,21.96,8.1,,,s,\n",
         "t.csv:2: interconnect: unknown interconnect (got 'ib'); one of none, efa, infiniband, "
         "erdma, or empty when not known"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,EFA,400,21.96,8.1,,,s,\n",
         "t.csv:2: interconnect: unknown interconnect (got 'EFA'); one of none, efa, "
         "infiniband, erdma, or empty when not known"},
        {HDR "aws,p4d,us,A100,8,40,96,1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: gpu_model: unknown GPU model (got 'A100'); known: " KNOWN_GPUS},
        /* duplicates */
        {HDR ROW "aws,p4d.24xlarge,us-west-2,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n" ROW,
         "t.csv:4: duplicate row for provider 'aws', instance_type 'p4d.24xlarge', region "
         "'us-east-1' (first on line 2)"},
        {HDR "aws,ebm,,T4,1,16,4,16,,,,,,,,\n\n\"aws\",\"ebm\",\"\",T4,1,16,4,16,,,,,,,,\n",
         "t.csv:4: duplicate row for provider 'aws', instance_type 'ebm', region '' (first on "
         "line 2)"},
        /* values in messages: control characters escaped, long ones cut */
        {HDR "aws,p4d,us,A100-40GB,8,40,\"1\n2\x01\",1152,efa,400,21.96,8.1,,,s,\n",
         "t.csv:2: vcpus: not a number (got '1\\n2\\x01')"},
        {HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,"
             "12345678901234567890123456789012345678901234567890abcdefghij,,,s,\n",
         "t.csv:2: price_spot_usd_hr: not a number (got "
         "'123456789012345678901234567890123456789012345678...')"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_error(cases[i].csv, cases[i].msg);

    /* A NUL byte. */
    static const char nul[] = HDR "aws,p4d,us,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,a\0b\n";
    expect_error_n(nul, sizeof(nul) - 1, "t.csv:2: a NUL byte in the data");

    /* A file that cannot be read. */
    gpc_catalog *c = (gpc_catalog *)1;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_load_file("/nonexistent/cat.csv", &c, &e), GPC_ERR_IO);
    assert_null(c);
    assert_string_equal(e.msg, "/nonexistent/cat.csv: No such file or directory");

    /* err may be NULL. */
    assert_int_equal(gpc_catalog_load_string("t.csv", "x\n", 2, &c, NULL), GPC_ERR_SPEC);
    assert_null(c);
}

/* A big number of cells, well-formed: parse_num against strtod. */
static void test_numbers_exact(void **state)
{
    (void)state;
    static const char *const nums[] = {
        "0", "1", "0.1", "0.526", "32.734842", "4.265614", "9.499092", "1.7567", "0.000001",
        "123456.789123456", "0.30000000000000004", "3.14159265358979323846",
        "0.0000000000000000000000001",
        /* more than 2^53 or 19 digits in all: strtod's (prices are at most 1e6) */
        "9007.199254740993", "1234.567890123456789012",
    };
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        char csv[512];
        snprintf(csv, sizeof(csv), HDR "aws,a,r,T4,1,16,4,16,,,%s,,,,,\n", nums[i]);
        gpc_catalog *c = load(csv);
        if (c->rows[0].price_ondemand != strtod(nums[i], NULL))
            fail_msg("%s read as %.17g", nums[i], c->rows[0].price_ondemand);
        gpc_catalog_free(c);
    }
}

/* ------------------------------------------------------------------ */
/* writing                                                            */

static void test_write_builtin_exact(void **state)
{
    (void)state;
    /* The writer's format is the built-in file's: writing the built-in
     * catalog gives back its bytes, and reading that gives the same rows. */
    gpc_catalog *c = builtin();
    char *text = write_csv(c);
    const gpc_embedded_file *f = gpc_catalog_file_get("gpu_instances.csv");
    assert_int_equal(strlen(text), f->len);
    assert_memory_equal(text, f->data, f->len);
    gpc_catalog *d = load(text);
    assert_int_equal(d->n_rows, c->n_rows);
    for (size_t i = 0; i < c->n_rows; i++)
        assert_rows_equal(&c->rows[i], &d->rows[i]);
    assert_string_equal(d->sha256, c->sha256);
    free(text);
    gpc_catalog_free(d);
    gpc_catalog_free(c);
}

static void test_round_trip(void **state)
{
    (void)state;
    gpc_catalog *c = load(HDR_MIN
                          "aws,a.1,us,T4,1,16,4,16,efa,0.1,\n"
                          "aws,a.2,us,,0,0,2,4,,1,2\n"
                          "azure,b.1,eastus,T4,4,16,4,16,infiniband,3,4\n");
    /* Values that need quoting or more digits; set through the API. */
    gpc_catalog_row *r = &c->rows[0];
    r->notes = "comma, \"quote\"\nnewline";
    r->source = " lead";
    r->gpu_mem_gib = 16.5;
    r->vcpus = 0.1 + 0.2;                 /* 0.30000000000000004 */
    r->mem_gib = 1e-7;                    /* written without an exponent */
    r->fabric_gbps = 123456.123;
    r->price_ondemand_cny = 999999.999999; /* the largest price is 1e6 */
    assert_int_equal(gpc_catalog_set_price(c, &c->rows[1], 1.0 / 3, -1, NULL, NULL), 0);
    c->rows[2].source = "tail\t";
    char *once = write_csv(c);
    gpc_catalog *d = load(once);
    char *twice = write_csv(d);
    assert_string_equal(once, twice); /* the format is stable */
    assert_int_equal(d->n_rows, 3);
    for (size_t i = 0; i < 3; i++)
        assert_rows_equal(&c->rows[i], &d->rows[i]);
    assert_true(d->rows[0].vcpus == 0.1 + 0.2);
    assert_true(d->rows[0].mem_gib == 1e-7);
    assert_true(d->rows[1].price_ondemand == 1.0 / 3);
    /* The exact text of the first lines. */
    const char *want = HDR
        "aws,a.1,us,T4,1,16.5,0.30000000000000004,0.0000001,efa,123456.123,0.1,,"
        "999999.999999,,\" lead\",\"comma, \"\"quote\"\"\nnewline\"\n"
        "aws,a.2,us,,0,0,2,4,,,0.3333333333333333,2,,,,\n"
        "azure,b.1,eastus,T4,4,16,4,16,infiniband,,3,4,,,\"tail\t\",\n";
    assert_string_equal(once, want);
    free(once);
    free(twice);
    gpc_catalog_free(d);
    gpc_catalog_free(c);
}

static void test_set_price(void **state)
{
    (void)state;
    gpc_catalog *c = builtin();
    gpc_catalog_row *r = (gpc_catalog_row *)find(c, "aliyun", "ecs.ebmgn6v.24xlarge",
                                                 "cn-beijing");
    char src[32];
    strcpy(src, "aliyun-api-2025");
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_set_price(c, r, 30.5, -1, src, &e), 0);
    strcpy(src, "changed");
    assert_string_equal(r->source, "aliyun-api-2025"); /* a copy */
    assert_true(r->price_ondemand == 30.5);
    assert_true(r->price_ondemand_cny == -1); /* it described the old price */
    assert_true(r->price_spot == 4.265614);   /* < 0: left as it was */
    assert_true(r->price_spot_cny == 30.9102);
    assert_int_equal(gpc_catalog_set_price(c, r, -1, 0, NULL, &e), 0);
    assert_true(r->price_ondemand == 30.5);
    assert_true(r->price_spot == 0);
    assert_true(r->price_spot_cny == -1);
    assert_string_equal(r->source, "aliyun-api-2025");

    /* Prices a CSV cell could not hold: refused, the row unchanged. */
    assert_int_equal(gpc_catalog_set_price(c, r, 1000000, -1, NULL, &e), 0);
    assert_true(r->price_ondemand == 1000000);
    assert_int_equal(gpc_catalog_set_price(c, r, 1000000.5, 2, "x", &e), GPC_ERR_PROVIDER);
    assert_string_equal(e.msg, "aliyun ecs.ebmgn6v.24xlarge cn-beijing: on-demand price "
                               "1000000.5 USD/hour is out of range (at most 1000000)");
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_set_price(c, r, -1, INFINITY, NULL, &e), GPC_ERR_PROVIDER);
    assert_string_equal(e.msg, "aliyun ecs.ebmgn6v.24xlarge cn-beijing: spot price inf "
                               "USD/hour is out of range (at most 1000000)");
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_set_price(c, r, NAN, -1, NULL, &e), GPC_ERR_PROVIDER);
    assert_string_equal(e.msg, "aliyun ecs.ebmgn6v.24xlarge cn-beijing: on-demand price "
                               "nan USD/hour is out of range (at most 1000000)");
    gpc_error_clear(&e);
    assert_true(r->price_ondemand == 1000000);
    assert_true(r->price_spot == 0);
    assert_string_equal(r->source, "aliyun-api-2025");

    gpc_catalog_row other = *r;
    assert_int_equal(gpc_catalog_set_price(c, &other, 1, 1, NULL, &e), GPC_ERR_INTERNAL);
    assert_string_equal(e.msg, "gpc_catalog_set_price: row not in catalog");
    gpc_catalog_free(c);
    gpc_catalog_free(NULL);
}

static bool rows_same(const gpc_catalog *ca, const gpc_catalog_row *a, const gpc_catalog *cb,
                      const gpc_catalog_row *b);

/* The rows a provider rebuilding its catalog rows removes and adds. */
static int drop_aws_east(const gpc_catalog_row *r, void *arg)
{
    (*(int *)arg)++;
    return strcmp(r->provider, "aws") == 0 && strcmp(r->region, "us-east-1") == 0;
}

static void test_add_remove_rows(void **state)
{
    (void)state;
    gpc_catalog *c = load("provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,"
                          "vcpus,memory_gib,interconnect,interconnect_gbps,"
                          "price_ondemand_usd_hr,price_spot_usd_hr\n"
                          "aws,g5.xlarge,us-east-1,A10G,1,24,4,16,none,,1.006,\n"
                          "azure,nc,eastus,T4,1,16,4,28,none,,0.526,\n"
                          "aws,p5.48xlarge,us-east-1,H100-80GB-SXM,8,80,192,2048,efa,3200,55.04,\n"
                          "aws,g5.xlarge,us-west-2,A10G,1,24,4,16,none,,1.006,\n");
    int seen = 0;
    assert_int_equal(gpc_catalog_remove_rows(c, drop_aws_east, &seen), 2);
    assert_int_equal(seen, 4);
    assert_int_equal(c->n_rows, 2);
    assert_string_equal(c->rows[0].instance_type, "nc");     /* order kept */
    assert_string_equal(c->rows[1].region, "us-west-2");

    char type[16], notes[64];
    strcpy(type, "g6.xlarge");
    strcpy(notes, "fetched 2026-12-02");
    gpc_catalog_row r = {
        .provider = "aws", .instance_type = type, .region = "us-east-1", .gpu_model = "l4",
        .gpu_count = 1, .gpu_mem_gib = 22.3515625, .vcpus = 4, .mem_gib = 16,
        .fabric = GPC_FABRIC_NONE, .price_ondemand = 0.8048, .price_spot = -1,
        .price_ondemand_cny = -1, .price_spot_cny = -1, .source = "aws-api", .notes = notes,
        .line = 99,
    };
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), 0);
    strcpy(type, "changed");
    strcpy(notes, "changed");
    assert_int_equal(c->n_rows, 3);
    const gpc_catalog_row *a = &c->rows[2];
    assert_string_equal(a->instance_type, "g6.xlarge");  /* copies */
    assert_string_equal(a->notes, "fetched 2026-12-02");
    assert_string_equal(a->gpu_model, "L4");              /* the table's spelling */
    assert_ptr_equal(a->gpu, gpc_catalog_gpu(c, "L4"));
    assert_string_equal(a->zone, "");
    assert_int_equal(a->line, 0);
    /* written and read back: the same row */
    char *csv = write_csv(c);
    assert_non_null(strstr(csv, "\naws,g6.xlarge,us-east-1,L4,1,22.3515625,4,16,none,,0.8048,,,,"
                                "aws-api,fetched 2026-12-02\n"));
    gpc_catalog *back = load(csv);
    assert_int_equal(back->n_rows, 3);
    gpc_catalog_row same = c->rows[2];
    same.line = 4; /* its line in the file written */
    assert_int_equal(back->rows[2].line, 4);
    assert_true(rows_same(c, &same, back, &back->rows[2]));
    gpc_catalog_free(back);
    free(csv);

    /* refused, the catalog unchanged */
    strcpy(type, "g6.xlarge");
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), GPC_ERR_SPEC);
    assert_string_equal(e.msg, "aws g6.xlarge us-east-1: the catalog has this row already");
    r.region = "us-west-2";
    r.gpu_model = "B200";
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), GPC_ERR_SPEC);
    assert_string_equal(e.msg, "aws g6.xlarge us-west-2: GPU model 'B200' is not in the "
                               "catalog's GPU table");
    r.gpu_model = "L4";
    r.gpu_count = 0;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), GPC_ERR_SPEC);
    assert_string_equal(e.msg, "aws g6.xlarge us-west-2: gpu_count 0 with gpu_model 'L4'");
    r.gpu_count = 1;
    r.vcpus = NAN;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), GPC_ERR_PROVIDER);
    assert_string_equal(e.msg, "aws g6.xlarge us-west-2: a hardware figure is out of range "
                               "(GPU memory 22.3515625 GiB, memory 16 GiB, nan vCPUs, 0 Gbit/s)");
    r.vcpus = 4;
    r.price_spot = 1000000.5;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), GPC_ERR_PROVIDER);
    assert_string_equal(e.msg, "aws g6.xlarge us-west-2: price 1000000.5 per hour is out of "
                               "range (at most 1000000)");
    assert_int_equal(c->n_rows, 3);
    /* a CPU-only row: no model, no GPUs */
    r.price_spot = -1;
    r.gpu_model = NULL;
    r.gpu_count = 0;
    r.gpu_mem_gib = 0;
    r.notes = NULL;
    assert_int_equal(gpc_catalog_add_row(c, &r, &e), 0);
    assert_null(c->rows[3].gpu);
    assert_string_equal(c->rows[3].gpu_model, "");
    assert_string_equal(c->rows[3].notes, "");
    gpc_catalog_free(c);
}

/* ------------------------------------------------------------------ */
/* large tables                                                       */

/* Row i of a generated table: its text (with the line end) appended. */
static void gen_row(gpc_buf *b, size_t i, const char *notes)
{
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_buf_addf(&b[0], &e, "aws,t%zu.x,r%zu,T4,%zu,16,4,16,none,,%zu.25,,,,s,%s\n",
                                  i % 7, i, i % 3 + 1, i, notes), 0);
}

/* HDR and n rows; every 5th row's notes is a quoted cell over three lines
 * with a doubled quote, and the line ends are CRLF when crlf. */
static char *gen_table(size_t n, bool crlf)
{
    gpc_buf b;
    gpc_error e;
    gpc_error_clear(&e);
    gpc_buf_init(&b, 64u << 20);
    assert_int_equal(gpc_buf_adds(&b, HDR, &e), 0);
    for (size_t i = 0; i < n; i++)
        gen_row(&b, i, i % 5 == 0 ? "\"a \"\"q\"\"\nb,\nc\"" : "plain");
    char *t = gpc_buf_take(&b);
    if (!crlf)
        return t;
    gpc_buf_init(&b, 64u << 20);
    for (const char *p = t; *p; p++) {
        if (*p == '\n')
            assert_int_equal(gpc_buf_add(&b, "\r", 1, &e), 0);
        assert_int_equal(gpc_buf_add(&b, p, 1, &e), 0);
    }
    free(t);
    return gpc_buf_take(&b);
}

/* Load `csv`: want_rows rows, and the SHA-256 of its bytes. */
static gpc_catalog *load_large(const char *csv, size_t want_rows)
{
    gpc_catalog *c = load(csv);
    assert_int_equal(c->n_rows, want_rows);
    char sha[65];
    gpc_sha256_hex(csv, strlen(csv), sha);
    assert_string_equal(c->sha256, sha);
    return c;
}

static void test_large_rows(void **state)
{
    (void)state;
    char *t = gen_table(3000, false);
    /* Row i's line: 2 + i + 2 per earlier quoted row (every 5th, from 0). */
    gpc_catalog *c = load_large(t, 3000);
    assert_int_equal(c->rows[2999].line, 2 + 2999 + 2 * 600);
    assert_string_equal(c->rows[2999].region, "r2999");
    assert_string_equal(c->rows[2995].notes, "a \"q\"\nb,\nc");
    gpc_catalog_free(c);
    free(t);

    t = gen_table(3000, true); /* CRLF */
    c = load_large(t, 3000);
    assert_int_equal(c->rows[2999].line, 2 + 2999 + 2 * 600);
    assert_string_equal(c->rows[2995].notes, "a \"q\"\r\nb,\r\nc");
    gpc_catalog_free(c);
    free(t);

    /* A quoted cell of many lines. */
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    assert_int_equal(gpc_buf_adds(&b, HDR "aws,a,r,T4,1,16,4,16,,,1,,,,,x\naws,b,r,T4,1,16,4,16,,,1,,,,,\"", NULL), 0);
    for (int i = 0; i < 400; i++)
        assert_int_equal(gpc_buf_adds(&b, "line \"\" of the notes\n", NULL), 0);
    assert_int_equal(gpc_buf_adds(&b, "end\"\naws,c,r,T4,1,16,4,16,,,1,,,,,y\n", NULL), 0);
    t = gpc_buf_take(&b);
    c = load_large(t, 3);
    assert_int_equal(c->rows[2].line, 404);
    gpc_catalog_free(c);
    free(t);

    /* Records ended by a lone CR (libcsv's line end too): more rows than
     * lines. */
    gpc_buf_init(&b, 1u << 20);
    assert_int_equal(gpc_buf_adds(&b, HDR, NULL), 0);
    for (size_t i = 0; i < 2000; i++) {
        char row[128];
        snprintf(row, sizeof(row), "aws,cr%zu,r,T4,1,16,4,16,,,1,,,,,%s", i,
                 i < 600 ? "\r" : "\n");
        assert_int_equal(gpc_buf_adds(&b, row, NULL), 0);
    }
    t = gpc_buf_take(&b);
    c = load_large(t, 2000);
    assert_int_equal(c->rows[600].line, 2); /* 601 records on line 2 */
    assert_int_equal(c->rows[601].line, 3);
    assert_int_equal(c->rows[1999].line, 1401);
    gpc_catalog_free(c);
    free(t);

    /* A header ended by a lone CR, a row after it on the same line. */
    t = gen_table(3000, false);
    t[strlen(HDR) - 1] = '\r';
    c = load_large(t, 3000);
    assert_int_equal(c->rows[0].line, 1);
    assert_int_equal(c->rows[2999].line, 1 + 2999 + 2 * 600);
    gpc_catalog_free(c);
    free(t);

    /* No line end after the last row. */
    c = load_large(HDR "aws,a,r,T4,1,16,4,16,,,1,,,,,last-note", 1);
    assert_string_equal(c->rows[0].notes, "last-note");
    gpc_catalog_free(c);
}

/* A generated table of n rows (no quoted cells: row i is on line i + 2)
 * with row `at` replaced by `bad`. */
static char *gen_with(size_t n, size_t at, const char *bad, size_t at2, const char *bad2)
{
    gpc_buf b;
    gpc_buf_init(&b, 64u << 20);
    assert_int_equal(gpc_buf_adds(&b, HDR, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        if (i == at)
            assert_int_equal(gpc_buf_adds(&b, bad, NULL), 0);
        else if (i == at2)
            assert_int_equal(gpc_buf_adds(&b, bad2, NULL), 0);
        else
            gen_row(&b, i, "n");
    }
    return gpc_buf_take(&b);
}

static void test_large_errors(void **state)
{
    (void)state;
    const size_t n = 2000, late = 1900, early = 20;
    char *t;
    /* An error late in the table. */
    t = gen_with(n, late, "aws,bad,r,T4,1,16,x,16,none,,1,,,,s,n\n", SIZE_MAX, NULL);
    expect_error(t, "t.csv:1902: vcpus: not a number (got 'x')");
    free(t);
    /* Two errors: the first one. */
    t = gen_with(n, early, "aws,bad,r,T4,1,16,4,16,ib,,1,,,,s,n\n", late,
                 "aws,bad2,r,T4,1,16,x,16,none,,1,,,,s,n\n");
    expect_error(t, "t.csv:22: interconnect: unknown interconnect (got 'ib'); one of none, efa, "
                   "infiniband, erdma, or empty when not known");
    free(t);
    /* A late row repeats an early one. */
    t = gen_with(n, late, "aws,t3.x,r10,T4,1,16,4,16,none,,1,,,,s,n\n", SIZE_MAX, NULL);
    expect_error(t, "t.csv:1902: duplicate row for provider 'aws', instance_type 't3.x', region "
                   "'r10' (first on line 12)");
    free(t);
    /* A duplicate before an error: the duplicate. */
    t = gen_with(n, early, "aws,t3.x,r10,T4,1,16,4,16,none,,1,,,,s,n\n", late,
                 "aws,bad2,r,T4,1,16,x,16,none,,1,,,,s,n\n");
    expect_error(t, "t.csv:22: duplicate row for provider 'aws', instance_type 't3.x', region "
                   "'r10' (first on line 12)");
    free(t);
    /* An error before a duplicate: the error. */
    t = gen_with(n, early, "aws,bad,r,T4,1,16,x,16,none,,1,,,,s,n\n", late,
                 "aws,t3.x,r10,T4,1,16,4,16,none,,1,,,,s,n\n");
    expect_error(t, "t.csv:22: vcpus: not a number (got 'x')");
    free(t);
    /* Bad quoting and an unterminated quote late in the table. */
    t = gen_with(n, late, "aws,b\"ad,r,T4,1,16,4,16,none,,1,,,,s,n\n", SIZE_MAX, NULL);
    expect_error(t, "t.csv:1902: instance_type: bad quoting: a '\"' inside an unquoted cell, or "
                   "text after a closing '\"' (error parsing data while strict checking enabled)");
    free(t);
    t = gen_with(n, n - 1, "aws,last,r,T4,1,16,4,16,none,,1,,,,s,\"open\n", SIZE_MAX, NULL);
    expect_error(t, "t.csv:2001: notes: unterminated quoted cell (no closing '\"' before the end "
                   "of the data)");
    free(t);
    /* A wrong cell count. */
    t = gen_with(n, 1100, "aws,short\n", SIZE_MAX, NULL);
    expect_error(t, "t.csv:1102: 2 cells where the header has 16");
    free(t);
}

/* ------------------------------------------------------------------ */
/* a file                                                             */

/* A table of n rows with every kind of cell: a byte order mark, CPU-only
 * rows, GPU models in another case, every fabric, empty and odd prices,
 * CNY columns, quoted notes with commas, quotes, line ends and UTF-8. */
static char *gen_rich(size_t n)
{
    static const char *const prov[] = {"aws", "azure", "aliyun", "new-cloud9"};
    static const char *const gpus[] = {"", "A100-80GB", "h100-80gb-sxm", "T4", "H-e"};
    static const char *const fab[] = {"", "none", "efa", "infiniband", "erdma"};
    static const char *const src[] = {"skypilot-v8-aws", "", "alibaba-docs", "my-own"};
    static const char *const notes[] = {"", "plain", "\"quoted, with a comma\"",
                                        "\"two\nlines \"\"q\"\"\"", "\"\xc3\xbcnicode \xe2\x9c\x93\""};
    gpc_buf b;
    gpc_error e;
    gpc_error_clear(&e);
    gpc_buf_init(&b, 64u << 20);
    assert_int_equal(gpc_buf_adds(&b, "\xEF\xBB\xBF" HDR, &e), 0);
    for (size_t i = 0; i < n; i++) {
        const char *g = gpus[i % 5];
        char gbps[16] = "", od[32] = "", spot[32] = "", odc[32] = "", spotc[32] = "";
        if (i % 3)
            snprintf(gbps, sizeof(gbps), "%zu", i % 7 * 100);
        if (i % 11)
            snprintf(od, sizeof(od), "%zu.%03zu", i % 50, i % 1000);
        if (i % 4)
            snprintf(spot, sizeof(spot), "0.%04zu", i % 10000);
        if (i % 4 == 2) {
            snprintf(odc, sizeof(odc), "%zu.1", i % 900);
            snprintf(spotc, sizeof(spotc), "%zu", i % 90);
        }
        assert_int_equal(gpc_buf_addf(&b, &e, "%s,t%zu.%zux,r-%zu,%s,%zu,%s,%zu,%zu.5,%s,%s,%s,%s,%s,%s,%s,%s%s",
                                      prov[i % 4], i % 13, i % 3, i, g, *g ? i % 8 + 1 : 0,
                                      *g ? "80" : "", i % 192, i % 2048, fab[i / 5 % 5], gbps,
                                      od, spot, odc, spotc, src[i / 3 % 4], notes[i / 7 % 5],
                                      i % 9 == 8 ? "\r\n" : "\n"),
                         0);
    }
    return gpc_buf_take(&b);
}

/* Row fields bit for bit, and the GPU by its index in each catalog's table. */
static bool rows_same(const gpc_catalog *ca, const gpc_catalog_row *a, const gpc_catalog *cb,
                      const gpc_catalog_row *b)
{
    ptrdiff_t ga = a->gpu ? a->gpu - ca->gpus : -1, gb = b->gpu ? b->gpu - cb->gpus : -1;
    return strcmp(a->provider, b->provider) == 0 &&
           strcmp(a->instance_type, b->instance_type) == 0 &&
           strcmp(a->region, b->region) == 0 && strcmp(a->gpu_model, b->gpu_model) == 0 &&
           a->gpu_count == b->gpu_count && memcmp(&a->gpu_mem_gib, &b->gpu_mem_gib, 8) == 0 &&
           memcmp(&a->vcpus, &b->vcpus, 8) == 0 && memcmp(&a->mem_gib, &b->mem_gib, 8) == 0 &&
           a->fabric == b->fabric && memcmp(&a->fabric_gbps, &b->fabric_gbps, 8) == 0 &&
           memcmp(&a->price_ondemand, &b->price_ondemand, 8) == 0 &&
           memcmp(&a->price_spot, &b->price_spot, 8) == 0 &&
           memcmp(&a->price_ondemand_cny, &b->price_ondemand_cny, 8) == 0 &&
           memcmp(&a->price_spot_cny, &b->price_spot_cny, 8) == 0 &&
           strcmp(a->source, b->source) == 0 && strcmp(a->notes, b->notes) == 0 && ga == gb &&
           gb >= -1 && gb < (ptrdiff_t)cb->n_gpus && a->line == b->line;
}

/* Every field of every row, the sha256, the origin, GPUs and sources. */
static void assert_same_catalog(const gpc_catalog *want, const gpc_catalog *got)
{
    assert_string_equal(got->origin, want->origin);
    assert_string_equal(got->sha256, want->sha256);
    assert_int_equal(got->n_rows, want->n_rows);
    assert_int_equal(got->n_gpus, want->n_gpus);
    assert_int_equal(got->n_sources, want->n_sources);
    for (size_t i = 0; i < want->n_rows; i++)
        if (!rows_same(want, &want->rows[i], got, &got->rows[i]))
            fail_msg("row %zu (line %u) differs", i, (unsigned)want->rows[i].line);
}

static gpc_catalog *load_path(const char *path)
{
    gpc_catalog *c = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_catalog_load_file(path, &c, &e);
    if (rc)
        fail_msg("gpc_catalog_load_file(%s): %d: %s", path, rc, e.msg);
    assert_int_equal(e.code, GPC_OK);
    return c;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* A file is read as its bytes are: the same catalog as from memory (the
 * rows, the SHA-256 of the bytes as they are, byte order mark included),
 * with exact figures, written back to the same CSV, its prices settable. */
static void test_file_rich(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpuctl-catalog-file-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/cat.csv", dir);
    char *text = gen_rich(4000);
    write_bytes(path, text, strlen(text));
    gpc_catalog *want = NULL, *c = load_path(path);
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_load_string(path, text, strlen(text), &want, &e), 0);
    assert_same_catalog(want, c);
    assert_string_equal(c->origin, path);
    assert_int_equal(c->n_rows, 4000);
    char sha[65];
    gpc_sha256_hex(text, strlen(text), sha);
    assert_string_equal(c->sha256, sha);

    /* Exact figures of a few rows, as gen_rich writes them. */
    const gpc_catalog_row *r = &c->rows[2];
    assert_string_equal(r->provider, "aliyun");
    assert_string_equal(r->instance_type, "t2.2x");
    assert_string_equal(r->region, "r-2");
    assert_string_equal(r->gpu_model, "H100-80GB-SXM"); /* the table's spelling */
    assert_non_null(r->gpu);
    assert_string_equal(r->gpu->model, "H100-80GB-SXM");
    assert_int_equal(r->gpu_count, 3);
    assert_true(r->gpu_mem_gib == 80 && r->vcpus == 2 && r->mem_gib == 2.5);
    assert_int_equal(r->fabric, GPC_FABRIC_UNKNOWN);
    assert_true(r->fabric_gbps == 200 && r->price_ondemand == 2.002 && r->price_spot == 0.0002);
    assert_true(r->price_ondemand_cny == 2.1 && r->price_spot_cny == 2);
    assert_string_equal(r->source, "skypilot-v8-aws");
    assert_string_equal(r->notes, "");
    assert_int_equal(r->line, 4);
    r = &c->rows[25]; /* CPU-only, quoted notes over two lines */
    assert_string_equal(r->provider, "azure");
    assert_string_equal(r->gpu_model, "");
    assert_null(r->gpu);
    assert_int_equal(r->gpu_count, 0);
    assert_true(r->gpu_mem_gib == 0);
    assert_int_equal(r->fabric, GPC_FABRIC_UNKNOWN);
    assert_true(r->fabric_gbps == 400);
    assert_true(r->price_ondemand == 25.025 && r->price_spot == 0.0025);
    assert_true(r->price_ondemand_cny == -1 && r->price_spot_cny == -1);
    assert_string_equal(r->notes, "two\nlines \"q\"");
    assert_string_equal(c->rows[0].source, "skypilot-v8-aws");
    assert_true(c->rows[0].price_ondemand == -1 && c->rows[0].price_spot == -1);
    assert_true(c->rows[0].fabric_gbps == 0);
    assert_string_equal(c->rows[28].notes, "\xc3\xbcnicode \xe2\x9c\x93");
    assert_string_equal(c->rows[14].notes, "quoted, with a comma");
    assert_string_equal(c->rows[3].source, "");
    assert_int_equal(c->rows[2].fabric, GPC_FABRIC_UNKNOWN);
    assert_int_equal(c->rows[5].fabric, GPC_FABRIC_NONE);
    assert_int_equal(c->rows[10].fabric, GPC_FABRIC_EFA);
    assert_int_equal(c->rows[15].fabric, GPC_FABRIC_INFINIBAND);
    assert_int_equal(c->rows[20].fabric, GPC_FABRIC_ERDMA);
    /* Row i's line: 2 + i + 1 per earlier row with two-line notes (i / 7 %
     * 5 == 3: rows 21-27, 56-62, ...: 7 in every 35, 3 in 2975-2998) */
    assert_int_equal(c->rows[2999].line, 2 + 2999 + 85 * 7 + 3);

    char *w1 = write_csv(want), *w2 = write_csv(c);
    assert_string_equal(w1, w2);
    free(w1);
    free(w2);
    assert_int_equal(gpc_catalog_set_price(c, &c->rows[5], 1.5, 0.5, "mine", &e), 0);
    assert_string_equal(c->rows[5].source, "mine");
    assert_true(c->rows[5].price_ondemand == 1.5 && c->rows[5].price_spot == 0.5);
    gpc_catalog_free(c);
    gpc_catalog_free(want);
    free(text);
    assert_int_equal(gpc_rm_rf(dir, &e), 0);
}

/* ------------------------------------------------------------------ */
/* where the catalog comes from                                       */

static char tmp_root[64];

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmp_root, name);
}

static gpc_catalog *open_catalog(const char *explicit_path)
{
    gpc_catalog *c = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_catalog_open(explicit_path, &c, &e);
    if (rc)
        fail_msg("gpc_catalog_open: %d: %s", rc, e.msg);
    return c;
}

static void test_user_path(void **state)
{
    (void)state;
    char buf[256];
    gpc_error e;
    setenv("GPUCTL_CONFIG_DIR", "/cfg/g", 1);
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(gpc_catalog_user_path(buf, sizeof(buf), NULL), 0);
    assert_string_equal(buf, "/cfg/g/catalog.csv");
    setenv("GPUCTL_CONFIG_DIR", "", 1);
    assert_int_equal(gpc_catalog_user_path(buf, sizeof(buf), NULL), 0);
    assert_string_equal(buf, "/xdg/gpuctl/catalog.csv");
    setenv("XDG_CONFIG_HOME", "relative", 1); /* invalid: ignored */
    assert_int_equal(gpc_catalog_user_path(buf, sizeof(buf), NULL), 0);
    assert_string_equal(buf, "/home/u/.config/gpuctl/catalog.csv");
    unsetenv("XDG_CONFIG_HOME");
    assert_int_equal(gpc_catalog_user_path(buf, sizeof(buf), NULL), 0);
    assert_string_equal(buf, "/home/u/.config/gpuctl/catalog.csv");
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_user_path(buf, 10, &e), GPC_ERR_IO);
    assert_string_equal(e.msg, "catalog path under /home/u is too long");
    unsetenv("HOME");
    unsetenv("GPUCTL_CONFIG_DIR");
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_user_path(buf, sizeof(buf), &e), GPC_ERR_IO);
    assert_string_equal(e.msg,
                        "no configuration directory for the catalog: set GPUCTL_CONFIG_DIR or HOME");
}

static void test_open_precedence(void **state)
{
    (void)state;
    char cfg[128], user[160], envf[128], expl[128];
    strcpy(tmp_root, "/tmp/gpuctl-catalog-XXXXXX");
    assert_non_null(mkdtemp(tmp_root));
    path_in(cfg, sizeof(cfg), "cfg");
    assert_int_equal(mkdir(cfg, 0700), 0);
    snprintf(user, sizeof(user), "%s/catalog.csv", cfg);
    path_in(envf, sizeof(envf), "env.csv");
    path_in(expl, sizeof(expl), "explicit.csv");
    write_file(user, HDR "aws,user.1,r,T4,1,16,4,16,,,1,,,,,\n");
    write_file(envf, HDR "aws,env.1,r,T4,1,16,4,16,,,1,,,,,\naws,env.2,r,T4,1,16,4,16,,,1,,,,,\n");
    write_file(expl, HDR);

    unsetenv("GPUCTL_CATALOG");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", tmp_root, 1);            /* $HOME/.config/gpuctl: none there */
    setenv("GPUCTL_CONFIG_DIR", tmp_root, 1); /* no catalog.csv in it */
    gpc_catalog *c = open_catalog(NULL);
    assert_string_equal(c->origin, "built-in");
    assert_int_equal(c->n_rows, 368);
    gpc_catalog_free(c);

    setenv("GPUCTL_CONFIG_DIR", cfg, 1);   /* the user-level override */
    c = open_catalog(NULL);
    assert_string_equal(c->origin, user);
    assert_int_equal(c->n_rows, 1);
    assert_string_equal(c->rows[0].instance_type, "user.1");
    assert_int_equal(c->n_gpus, 22); /* GPUs and sources stay built in */
    assert_int_equal(c->n_sources, 9);
    gpc_catalog_free(c);

    setenv("GPUCTL_CATALOG", "", 1);        /* empty: as if unset */
    c = open_catalog(NULL);
    assert_string_equal(c->origin, user);
    gpc_catalog_free(c);

    setenv("GPUCTL_CATALOG", envf, 1);      /* beats the user file */
    c = open_catalog(NULL);
    assert_string_equal(c->origin, envf);
    assert_int_equal(c->n_rows, 2);
    gpc_catalog_free(c);

    c = open_catalog(expl);                  /* --catalog beats everything */
    assert_string_equal(c->origin, expl);
    assert_int_equal(c->n_rows, 0);
    gpc_catalog_free(c);

    /* Errors are not skipped over: a bad user file fails. */
    unsetenv("GPUCTL_CATALOG");
    write_file(user, HDR "aws,user.1,r,T4,1,16,4,16,bad,,1,,,,,\n");
    gpc_error e;
    gpc_error_clear(&e);
    c = (gpc_catalog *)1;
    assert_int_equal(gpc_catalog_open(NULL, &c, &e), GPC_ERR_SPEC);
    assert_null(c);
    char want[512];
    snprintf(want, sizeof(want),
             "%s:2: interconnect: unknown interconnect (got 'bad'); one of none, efa, "
             "infiniband, erdma, or empty when not known", user);
    assert_string_equal(e.msg, want);
    gpc_error_clear(&e);
    assert_int_equal(gpc_catalog_open("/nonexistent/x.csv", &c, &e), GPC_ERR_IO);
    assert_string_equal(e.msg, "/nonexistent/x.csv: No such file or directory");

    /* No configuration directory at all: the built-in catalog. */
    unsetenv("GPUCTL_CONFIG_DIR");
    unsetenv("HOME");
    c = open_catalog(NULL);
    assert_string_equal(c->origin, "built-in");
    gpc_catalog_free(c);

    gpc_error_clear(&e);
    assert_int_equal(gpc_rm_rf(tmp_root, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_counts),
        cmocka_unit_test(test_builtin_rows),
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_fabric_names),
        cmocka_unit_test(test_columns_any_order),
        cmocka_unit_test(test_line_numbers),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_numbers_exact),
        cmocka_unit_test(test_write_builtin_exact),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_set_price),
        cmocka_unit_test(test_add_remove_rows),
        cmocka_unit_test(test_large_rows),
        cmocka_unit_test(test_large_errors),
        cmocka_unit_test(test_file_rich),
        cmocka_unit_test(test_user_path),
        cmocka_unit_test(test_open_precedence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
