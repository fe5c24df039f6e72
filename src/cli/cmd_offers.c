/* cmd_offers.c - `gpuctl offers`: the catalog's offers for one node, cheapest first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/offers.h"
#include "gpuctl/spec.h"

static int parse_interconnect(const char *s, gpc_interconnect *out)
{
    for (int i = GPC_IC_ANY; i <= GPC_IC_RDMA; i++)
        if (strcasecmp(s, gpc_interconnect_name((gpc_interconnect)i)) == 0) {
            *out = (gpc_interconnect)i;
            return 0;
        }
    return -1;
}

static int parse_usd(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

const gpc_option gpc_offers_options[] = {
    {"gpu", 'g', "GPU[,GPU]", 'g', "GPU configurations as in the spec's resources.gpu (A100-80GB:8, "
     "H100:8, T4, 24GB..80GB:2); commas and repeats: alternatives"},
    {"spot", 0, NULL, 's', "price, filter and rank by the spot price (default: on-demand)"},
    {"provider", 0, "P[,P]", 'P', "only offers of these providers"},
    {"region", 0, "R[,R]", 'r', "only offers in these regions"},
    {"interconnect", 0, "any|none|efa|infiniband|erdma|rdma", 'i',
     "as the spec's resources.interconnect: only offers with that "
     "fabric (rdma: any of efa, infiniband, erdma); any, none: all"},
    {"max-price", 0, "USD", 'm', "only offers of at most USD per node-hour (> 0)"},
    {"sort", 0, "price|price-per-tflops", 'S',
     "rank by USD per node-hour (default) or by USD per dense "
     "TFLOPS-hour"},
    {"limit", 0, "N", 'n', "show only the first N offers (N >= 1)"},
    {NULL, 0, NULL, 0, NULL}
};

typedef struct offers_args {
    gpc_gpu_req *gpus;
    size_t n_gpus;
    char **providers, **regions;
    size_t n_providers, n_regions;
    gpc_interconnect ic;
    int spot;
    double max_price;
    gpc_sort sort;
    long limit;
} offers_args;

static int offers_opt(int opt, const char *arg, void *ud)
{
    offers_args *a = ud;
    char *end;
    switch (opt) {
    case 'g': {
        /* repeatable, and comma-separated: alternatives */
        char **items = NULL;
        size_t n = 0;
        int rc = gpc_list_append(arg, &items, &n);
        if (rc) /* "", "T4," and ",," name no GPU */
            gpc_opt_fail("--gpu: empty GPU in '%s'", arg);
        gpc_gpu_req *g = rc ? NULL : realloc(a->gpus, (a->n_gpus + n) * sizeof(*g));
        if (!rc && !g)
            rc = -1;
        for (size_t i = 0; !rc && i < n; i++) {
            a->gpus = g;
            memset(&g[a->n_gpus], 0, sizeof(*g));
            gpc_error e;
            gpc_error_clear(&e);
            if (gpc_parse_gpu("--gpu", items[i], &g[a->n_gpus], &e))
                rc = gpc_opt_fail("%s", e.msg);
            else
                a->n_gpus++;
        }
        gpc_list_free(items, n);
        return rc;
    }
    case 's': a->spot = 1; return 0;
    case 'P': return gpc_list_append(arg, &a->providers, &a->n_providers);
    case 'r': return gpc_list_append(arg, &a->regions, &a->n_regions);
    case 'i':
        if (parse_interconnect(arg, &a->ic))
            return gpc_opt_fail("--interconnect: expected any, none, efa, infiniband, erdma "
                                "or rdma, got '%s'", arg);
        return 0;
    case 'm':
        if (parse_usd(arg, &a->max_price))
            return gpc_opt_fail("--max-price: expected a price above 0 in USD/hour, got '%s'",
                                arg);
        return 0;
    case 'S':
        if (strcmp(arg, "price") == 0)
            a->sort = GPC_SORT_PRICE;
        else if (strcmp(arg, "price-per-tflops") == 0)
            a->sort = GPC_SORT_PER_TFLOPS;
        else
            return gpc_opt_fail("--sort: expected price or price-per-tflops, got '%s'", arg);
        return 0;
    case 'n':
        a->limit = strtol(arg, &end, 10);
        if (end == arg || *end || a->limit <= 0)
            return gpc_opt_fail("--limit: expected a whole number of offers from 1, got '%s'",
                                arg);
        return 0;
    }
    return -1;
}

static void offers_args_free(offers_args *a)
{
    for (size_t i = 0; i < a->n_gpus; i++)
        free(a->gpus[i].model);
    free(a->gpus);
    gpc_list_free(a->providers, a->n_providers);
    gpc_list_free(a->regions, a->n_regions);
}

static void cell_price(char *b, size_t n, double v, int dec)
{
    if (v < 0)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.*f", gpc_price_decimals(v, dec), v);
}

/* One table row for a candidate of `gpuctl offers`. */
static void offer_cells(const gpc_candidate *c, char cells[][48], int with_gpu)
{
    const gpc_catalog_row *r = c->row;
    int k = 0;
    snprintf(cells[k++], 48, "%s", r->provider);
    snprintf(cells[k++], 48, "%s", r->instance_type);
    if (r->zone && *r->zone) /* an offer a provider listed with its zone */
        snprintf(cells[k++], 48, "%s/%s", r->region, r->zone);
    else
        snprintf(cells[k++], 48, "%s", *r->region ? r->region : "-");
    if (with_gpu)
        snprintf(cells[k++], 48, "%s", *r->gpu_model ? r->gpu_model : "-");
    snprintf(cells[k++], 48, "%u", r->gpu_count);
    snprintf(cells[k++], 48, "%g", r->vcpus);
    snprintf(cells[k++], 48, "%g", r->mem_gib);
    if (r->fabric_gbps > 0)
        snprintf(cells[k++], 48, "%s %g", gpc_fabric_name(r->fabric), r->fabric_gbps);
    else
        snprintf(cells[k++], 48, "%s", gpc_fabric_name(r->fabric));
    cell_price(cells[k++], 48, r->price_ondemand, 4);
    cell_price(cells[k++], 48, r->price_spot, 4);
    if (r->price_ondemand > 0 && r->price_spot >= 0) {
        int d;
        double pct = gpc_saving_pct_round(100.0 * (1.0 - r->price_spot / r->price_ondemand), 0, &d);
        snprintf(cells[k++], 48, "%.*f%%", d, pct);
    } else
        snprintf(cells[k++], 48, "-");
    if (c->usd_per_tflops > 0)
        snprintf(cells[k++], 48, "%.4g", c->usd_per_tflops);
    else
        snprintf(cells[k++], 48, "-");
}

static void print_offers_table(const gpc_out *o, const gpc_catalog *cat,
                               const gpc_selection *sel, size_t shown, int spot, gpc_sort sort)
{
    static const char *const flat[] = {"PROVIDER", "INSTANCE TYPE", "REGION", "GPU", "GPUS",
                                       "VCPU", "RAM GIB", "FABRIC GBIT/S", "ON-DEMAND $/H",
                                       "SPOT $/H", "SAVING", "$/TFLOPS-H"};
    char cells[12][48];
    const char *row[12];
    for (int i = 0; i < 12; i++)
        row[i] = cells[i];
    if (!o->tty) {
        /* Piped: one flat table, one line per offer, for grep and awk. */
        gpc_table t;
        gpc_table_init(&t, 12, flat);
        for (size_t i = 0; i < shown; i++) {
            offer_cells(&sel->fit[i], cells, 1);
            gpc_table_add(&t, row);
        }
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
    } else {
        /* On a terminal: one table per GPU model, groups in order of their
         * best offer. */
        const char *header[11];
        header[0] = flat[0];
        header[1] = flat[1];
        header[2] = flat[2];
        for (int i = 3; i < 11; i++)
            header[i] = flat[i + 1];
        char *done = calloc(shown ? shown : 1, 1);
        for (size_t i = 0; done && i < shown; i++) {
            if (done[i])
                continue;
            const gpc_catalog_row *g = sel->fit[i].row;
            const gpc_gpu_info *gi = g->gpu;
            printf("%s%s%s", gpc_c_bold(o), *g->gpu_model ? g->gpu_model : "no GPU",
                   gpc_c_reset(o));
            if (gi && gpc_gpu_tflops(gi) > 0)
                printf("  %g GiB, %g dense TFLOPS per GPU\n", gi->memory_gib, gpc_gpu_tflops(gi));
            else if (gi)
                printf("  %g GiB per GPU\n", gi->memory_gib);
            else
                printf("\n");
            gpc_table t;
            gpc_table_init(&t, 11, header);
            for (size_t j = i; j < shown; j++) {
                if (done[j] || strcmp(sel->fit[j].row->gpu_model, g->gpu_model) != 0)
                    continue;
                done[j] = 1;
                offer_cells(&sel->fit[j], cells, 0);
                gpc_table_add(&t, row);
            }
            gpc_table_print(o, &t, stdout);
            gpc_table_free(&t);
            printf("\n");
        }
        free(done);
    }
    if (!o->quiet) {
        /* the currencies other than USD that the catalog's rows were priced
         * in at source (their sources' currency), e.g. "CNY" */
        char cur[64] = "";
        for (size_t i = 0; i < cat->n_rows; i++) {
            const gpc_catalog_source *src = gpc_catalog_source_get(cat, cat->rows[i].source);
            const char *c = src ? src->currency : "";
            if (*c && strcmp(c, "USD") != 0 && !strstr(cur, c) &&
                strlen(cur) + strlen(c) + 3 < sizeof(cur))
                snprintf(cur + strlen(cur), sizeof(cur) - strlen(cur), "%s%s", *cur ? ", " : "", c);
        }
        fprintf(stderr, "%zu of %zu offer(s) shown, by %s price%s; catalog %s (%zu rows); "
                "prices USD/hour%s%s%s\n", shown, sel->n_fit, spot ? "spot" : "on-demand",
                sort == GPC_SORT_PER_TFLOPS ? " per dense TFLOPS" : "", cat->origin, cat->n_rows,
                *cur ? "; " : "", cur,
                *cur ? " rows converted at the catalog's rate (see gpuctl catalog)" : "");
    }
}

int gpc_cmd_offers(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    offers_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, offers_opt, &a, &done);
    if (done) {
        offers_args_free(&a);
        return rc;
    }
    if (optind < argc) {
        offers_args_free(&a);
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    }
    gpc_error err;
    gpc_error_clear(&err);
    gpc_catalog *cat = NULL;
    rc = gpc_catalog_open(o->cfg.catalog_path, &cat, &err);
    /* A provider the catalog has no row for is a typo, not "no offers"
     * (names compare without case, as offer selection does). */
    for (size_t i = 0; !rc && i < a.n_providers; i++) {
        int found = 0;
        for (size_t r = 0; r < cat->n_rows && !found; r++)
            found = strcasecmp(cat->rows[r].provider, a.providers[i]) == 0;
        if (!found) {
            char have[256] = "";
            const char *seen[16];
            size_t n_seen = 0;
            for (size_t r = 0; r < cat->n_rows && n_seen < 16; r++) {
                size_t k = 0;
                while (k < n_seen && strcmp(seen[k], cat->rows[r].provider) != 0)
                    k++;
                if (k == n_seen)
                    seen[n_seen++] = cat->rows[r].provider;
            }
            for (size_t k = 0; k < n_seen; k++)
                snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
                         k ? ", " : "", seen[k]);
            size_t hl = n_seen;
            rc = gpc_fail(&err, GPC_ERR_USAGE, "--provider: the catalog (%s) has no rows for "
                          "provider '%s' (it has: %s)", cat->origin, a.providers[i],
                          hl ? have : "no rows");
        }
    }
    /* A GPU model the catalog does not know is a typo, not "no offers". */
    for (size_t i = 0; !rc && i < a.n_gpus; i++) {
        const char *m = a.gpus[i].model;
        if (!gpc_gpu_model_known(cat, m)) {
            char list[512];
            gpc_gpu_model_list(cat, list, sizeof(list));
            rc = gpc_fail(&err, GPC_ERR_USAGE, "--gpu: unknown GPU model '%s' (the catalog "
                          "knows %s; a family such as A100 matches every A100-*)", m, list);
        }
    }
    gpc_offer_query q;
    memset(&q, 0, sizeof(q));
    q.gpus = a.gpus;
    q.n_gpus = a.n_gpus;
    q.interconnect = a.ic;
    q.providers = (const char *const *)a.providers;
    q.n_providers = a.n_providers;
    q.regions = (const char *const *)a.regions;
    q.n_regions = a.n_regions;
    q.policy = a.spot ? GPC_SPOT_SPOT : GPC_SPOT_ON_DEMAND;
    q.head = q.policy;
    q.max_price = a.max_price;
    q.nodes = 1;
    q.sort = a.sort;
    gpc_selection sel;
    memset(&sel, 0, sizeof(sel));
    if (!rc)
        rc = gpc_offers_select(cat, NULL, 0, &q, &sel, &err);
    if (rc) {
        rc = gpc_report_error(o, &err);
        goto out;
    }
    size_t shown = a.limit > 0 && (size_t)a.limit < sel.n_fit ? (size_t)a.limit : sel.n_fit;
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "offers");
        cJSON *cj = cJSON_AddObjectToObject(doc, "catalog");
        cJSON_AddStringToObject(cj, "origin", cat->origin);
        cJSON_AddStringToObject(cj, "sha256", cat->sha256);
        cJSON_AddNumberToObject(cj, "rows", (double)cat->n_rows);
        cJSON_AddStringToObject(doc, "purchase", a.spot ? "spot" : "on-demand");
        cJSON_AddStringToObject(doc, "sort", a.sort == GPC_SORT_PRICE ? "price"
                                                                      : "price-per-tflops");
        cJSON_AddNumberToObject(doc, "matched", (double)sel.n_fit);
        cJSON *arr = cJSON_AddArrayToObject(doc, "offers");
        for (size_t i = 0; i < shown; i++) {
            cJSON *r = gpc_row_json(cat, sel.fit[i].row);
            cJSON_AddNumberToObject(r, "price_usd_hr", round(sel.fit[i].price_node * 1e6) / 1e6);
            if (sel.fit[i].usd_per_tflops > 0)
                cJSON_AddNumberToObject(r, "usd_per_tflops_hr",
                                        round(sel.fit[i].usd_per_tflops * 1e9) / 1e9);
            else
                cJSON_AddNullToObject(r, "usd_per_tflops_hr");
            cJSON_AddItemToArray(arr, r);
        }
        gpc_print_json(doc);
    } else if (sel.n_fit == 0) {
        gpc_info(&o->log, "no offer matches (catalog %s, %zu rows)", cat->origin, cat->n_rows);
    } else {
        print_offers_table(o, cat, &sel, shown, a.spot, a.sort);
    }
    rc = 0;
out:
    gpc_selection_free(&sel);
    gpc_catalog_free(cat);
    offers_args_free(&a);
    return rc;
}
