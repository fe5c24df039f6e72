/*
 * prices.c - the aws provider's refresh_prices (`gpuctl catalog update`):
 * the catalog's aws rows rebuilt from the APIs, with the user's
 * credentials:
 *   1. DescribeRegions: the regions the credentials can use (opted in,
 *      commercial: no cn-*, us-gov-* or us-iso*), narrowed by --region;
 *   2. in every region at once (gpc_ec2_call_many), following nextToken:
 *      DescribeInstanceTypes and DescribeInstanceTypeOfferings
 *      (LocationType region) of the GPU families (instance-type p*, g*);
 *      a type with an NVIDIA GPU whose model the catalog's GPU table knows
 *      makes a row in each region that offers it;
 *   3. on-demand prices from the AWS Price List (pricelist.c: Linux,
 *      shared tenancy, no pre-installed software), one GetProducts query
 *      per instance type;
 *   4. spot prices from DescribeSpotPriceHistory (live_prices: the lowest
 *      zone's current price).
 * The aws rows of those regions are then replaced by these: rows the APIs
 * no longer list go, new ones come.  Each row has the source "aws-api"
 * (providers/aws/sources.csv) and a note with the date it was fetched and
 * where each price came from.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws/aws_internal.h"
#include "aws/pricelist.h"
#include "aws/prices.h"
#include "gpuctl/catalog.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

#define AWS_API_SOURCE "aws-api"
#define PAGE_ROUNDS_MAX 1000

/* One GPU instance type as DescribeInstanceTypes describes it. */
typedef struct api_type {
    char name[64];
    char gpu_name[64];
    char maker[32];
    unsigned gpu_count;
    double gpu_mib;             /* per GPU */
    double vcpus;
    double mem_mib;
    int efa;
    double gbps;                /* EFA types: networkPerformance; else 0 */
    const gpc_gpu_info *gpu;    /* its catalog model; NULL = left out */
} api_type;

/* A region and an instance type offered there. */
typedef struct offered {
    char region[48];
    char type[64];
    double ondemand;            /* < 0 until priced */
    char published[32];
} offered;

typedef struct rebuild {
    aws_ctx *c;
    const gpc_log *log;
    char (*regions)[48];
    size_t n_regions;
    api_type *types;
    size_t n_types;
    offered *offers;
    size_t n_offers;
} rebuild;

static int in_list(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- 1. regions ---------------------------------------------------------- */

static int list_regions(rebuild *b, const gpc_price_refresh_opts *o, gpc_error *err)
{
    aws_ctx *c = b->c;
    const char *home = c->ec2.cfg.region[0] ? c->ec2.cfg.region : "us-east-1";
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, home, "DescribeRegions", NULL, &d, err);
    size_t n = 0;
    for (xmlNode *it = rc ? NULL : gpc_xml_items(xmlDocGetRootElement(d), "regionInfo"); it;
         it = gpc_xml_next(it))
        n++;
    char(*all)[48] = calloc(n ? n : 1, sizeof(*all));
    if (!rc && !all)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    char names[512] = "";
    for (xmlNode *it = rc ? NULL : gpc_xml_items(xmlDocGetRootElement(d), "regionInfo"); it;
         it = gpc_xml_next(it)) {
        char name[48], opt[32];
        gpc_xml_text(it, "regionName", name, sizeof(name));
        gpc_xml_text(it, "optInStatus", opt, sizeof(opt));
        if (!name[0] || strcmp(opt, "not-opted-in") == 0 || starts(name, "cn-") ||
            starts(name, "us-gov-") || starts(name, "us-iso"))
            continue;
        snprintf(all[k++], sizeof(all[0]), "%s", name);
        if (strlen(names) + strlen(name) + 3 < sizeof(names))
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                     *names ? ", " : "", name);
    }
    xmlFreeDoc(d);
    for (size_t i = 0; !rc && i < o->n_regions; i++) {
        size_t j = 0;
        while (j < k && strcmp(all[j], o->regions[i]) != 0)
            j++;
        if (j == k)
            rc = gpc_fail(err, GPC_ERR_USAGE, "aws: region '%s' is not one that DescribeRegions "
                          "lists for these credentials (%s)", o->regions[i], names);
    }
    if (!rc && o->n_regions) {
        for (size_t i = 0; i < o->n_regions; i++)
            snprintf(all[i], sizeof(all[0]), "%s", o->regions[i]);
        k = o->n_regions;
    }
    if (!rc && k == 0)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: DescribeRegions lists no region these "
                      "credentials can use");
    if (rc) {
        free(all);
        return rc;
    }
    b->regions = all;
    b->n_regions = k;
    return 0;
}

/* ---- 2. types and offerings, every region at once ---------------------- */

typedef int (*page_fn)(rebuild *b, const char *region, xmlNode *root, gpc_error *err);

/* `action` with `base` in every region, a batch of calls per page round,
 * until no region has a nextToken; fn reads each answer. */
static int each_page(rebuild *b, const char *action, const gpc_ec2_params *base, page_fn fn,
                     gpc_error *err)
{
    size_t n = b->n_regions;
    char(*tokens)[2048] = calloc(n, sizeof(*tokens));
    int *done = calloc(n, sizeof(int));
    gpc_ec2_batch_item *items = calloc(n, sizeof(*items));
    gpc_ec2_params *pages = calloc(n, sizeof(*pages));
    size_t *which = calloc(n, sizeof(size_t));
    int rc = !tokens || !done || !items || !pages || !which
                 ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    for (int round = 0; !rc; round++) {
        if (round == PAGE_ROUNDS_MAX) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: %s answered more than %d pages", action,
                          PAGE_ROUNDS_MAX);
            break;
        }
        size_t k = 0;
        for (size_t r = 0; r < n; r++) {
            if (done[r])
                continue;
            gpc_ec2_params_init(&pages[k]);
            gpc_buf_adds(&pages[k].body, gpc_buf_str(&base->body), NULL);
            pages[k].failed = base->failed;
            if (tokens[r][0])
                gpc_ec2_param(&pages[k], tokens[r], "NextToken");
            items[k] = (gpc_ec2_batch_item){.region = b->regions[r], .action = action,
                                            .params = &pages[k]};
            which[k++] = r;
        }
        if (k == 0)
            break;
        rc = gpc_ec2_call_many(&b->c->ec2, items, k, err);
        for (size_t j = 0; j < k; j++) {
            size_t r = which[j];
            xmlNode *root = items[j].doc ? xmlDocGetRootElement(items[j].doc) : NULL;
            if (!rc && root)
                rc = fn(b, b->regions[r], root, err);
            tokens[r][0] = '\0';
            if (root)
                gpc_xml_text(root, "nextToken", tokens[r], sizeof(tokens[r]));
            done[r] = !root || !tokens[r][0];
            xmlFreeDoc(items[j].doc);
            gpc_ec2_params_free(&pages[j]);
        }
    }
    free(tokens);
    free(done);
    free(items);
    free(pages);
    free(which);
    return rc;
}

/* The GPU families (instance-type filter values). */
static const char *const gpu_families[] = {"p*", "g*"};

static double number_at(xmlNode *n, const char *path)
{
    char v[64];
    return strtod(gpc_xml_text(n, path, v, sizeof(v)), NULL);
}

/* Gbit/s of a networkPerformance: "3200 Gigabit", "4x 100 Gigabit",
 * "Up to 25 Gigabit"; 0 for anything else. */
static double gbps_of(const char *perf)
{
    const char *p = starts(perf, "Up to ") ? perf + 6 : perf;
    unsigned k;
    double g;
    if (sscanf(p, "%ux %lf Gigabit", &k, &g) == 2)
        return k * g;
    if (sscanf(p, "%lf Gigabit", &g) == 1)
        return g;
    return 0;
}

static int take_types(rebuild *b, const char *region, xmlNode *root, gpc_error *err)
{
    (void)region;
    for (xmlNode *it = gpc_xml_items(root, "instanceTypeSet"); it; it = gpc_xml_next(it)) {
        char name[64];
        gpc_xml_text(it, "instanceType", name, sizeof(name));
        xmlNode *g = gpc_xml_items(it, "gpuInfo/gpus");
        if (!name[0] || !g)
            continue; /* no GPU */
        size_t i = 0;
        while (i < b->n_types && strcmp(b->types[i].name, name) != 0)
            i++;
        if (i < b->n_types)
            continue; /* described in another region already */
        api_type *v = realloc(b->types, (b->n_types + 1) * sizeof(*v));
        if (!v)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        b->types = v;
        api_type *t = &v[b->n_types++];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof(t->name), "%s", name);
        gpc_xml_text(g, "name", t->gpu_name, sizeof(t->gpu_name));
        gpc_xml_text(g, "manufacturer", t->maker, sizeof(t->maker));
        t->gpu_mib = number_at(g, "memoryInfo/sizeInMiB");
        for (; g; g = gpc_xml_next(g))
            t->gpu_count += (unsigned)number_at(g, "count");
        t->vcpus = number_at(it, "vCpuInfo/defaultVCpus");
        t->mem_mib = number_at(it, "memoryInfo/sizeInMiB");
        char efa[16], perf[64];
        gpc_xml_text(it, "networkInfo/efaSupported", efa, sizeof(efa));
        gpc_xml_text(it, "networkInfo/networkPerformance", perf, sizeof(perf));
        t->efa = strcmp(efa, "true") == 0;
        t->gbps = t->efa ? gbps_of(perf) : 0;
    }
    return 0;
}

static int take_offerings(rebuild *b, const char *region, xmlNode *root, gpc_error *err)
{
    for (xmlNode *it = gpc_xml_items(root, "instanceTypeOfferingSet"); it;
         it = gpc_xml_next(it)) {
        char type[64];
        gpc_xml_text(it, "instanceType", type, sizeof(type));
        if (!type[0])
            continue;
        offered *v = realloc(b->offers, (b->n_offers + 1) * sizeof(*v));
        if (!v)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        b->offers = v;
        offered *f = &v[b->n_offers++];
        memset(f, 0, sizeof(*f));
        snprintf(f->region, sizeof(f->region), "%s", region);
        snprintf(f->type, sizeof(f->type), "%s", type);
        f->ondemand = -1;
    }
    return 0;
}

static int describe(rebuild *b, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_filter(&p, 1, "instance-type", gpu_families, 2);
    gpc_ec2_param(&p, "100", "MaxResults");
    gpc_info(b->log, "aws: asking DescribeInstanceTypes and DescribeInstanceTypeOfferings in "
             "%zu region(s)", b->n_regions);
    int rc = each_page(b, "DescribeInstanceTypes", &p, take_types, err);
    gpc_ec2_params_free(&p);
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "region", "LocationType");
    gpc_ec2_filter(&p, 1, "instance-type", gpu_families, 2);
    gpc_ec2_param(&p, "1000", "MaxResults");
    if (!rc)
        rc = each_page(b, "DescribeInstanceTypeOfferings", &p, take_offerings, err);
    gpc_ec2_params_free(&p);
    return rc;
}

/* ---- GPU models ------------------------------------------------------------ */

/* Is `model` ("H100-80GB-SXM") of the family `name` ("H100")? */
static int family_of(const char *model, const char *name)
{
    size_t n = strlen(name);
    return n && strncasecmp(model, name, n) == 0 && (model[n] == '\0' || model[n] == '-');
}

/*
 * The catalog's GPU model of a type: the model an aws row of the same type
 * has when it is of the API's GPU family, else the one model of that
 * family whose memory is within 10% of the API's (AWS gives an L4's 24 GB
 * as 22888 MiB); NULL when there is none
 * or more than one (said through the log).
 */
static const gpc_gpu_info *model_for(const gpc_catalog *cat, const api_type *t,
                                     const gpc_log *log)
{
    if (strcasecmp(t->maker, "NVIDIA") != 0) {
        gpc_info(log, "aws: %s: its GPU is %s %s, not NVIDIA; left out", t->name, t->maker,
                 t->gpu_name);
        return NULL;
    }
    for (size_t i = 0; i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        if (r->gpu && strcmp(r->provider, "aws") == 0 &&
            strcmp(r->instance_type, t->name) == 0 && family_of(r->gpu->model, t->gpu_name))
            return r->gpu;
    }
    const gpc_gpu_info *found = NULL;
    size_t k = 0;
    char names[256] = "";
    double gib = t->gpu_mib / 1024.0;
    for (size_t i = 0; i < cat->n_gpus; i++) {
        const gpc_gpu_info *g = &cat->gpus[i];
        if (!family_of(g->model, t->gpu_name) || fabs(g->memory_gib - gib) > 0.10 * g->memory_gib)
            continue;
        found = g;
        k++;
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", *names ? ", " : "",
                 g->model);
    }
    if (k == 1)
        return found;
    if (k == 0)
        gpc_info(log, "aws: %s: GPU %s with %.0f MiB is not in the catalog's GPU table; left out",
                 t->name, t->gpu_name, t->gpu_mib);
    else
        gpc_info(log, "aws: %s: GPU %s with %.0f MiB could be %s; left out", t->name,
                 t->gpu_name, t->gpu_mib, names);
    return NULL;
}

/* ---- 3. and 4. prices, then the rows ----------------------------------- */

static const api_type *type_named(const rebuild *b, const char *name)
{
    for (size_t i = 0; i < b->n_types; i++)
        if (strcmp(b->types[i].name, name) == 0)
            return &b->types[i];
    return NULL;
}

static int offer_cmp(const void *x, const void *y)
{
    const offered *a = x, *b = y;
    int d = strcmp(a->type, b->type);
    return d ? d : strcmp(a->region, b->region);
}

/* Keep the offerings of described GPU types with a catalog model, sorted
 * by type and region. */
static void keep_rows(rebuild *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->n_offers; i++) {
        const api_type *t = type_named(b, b->offers[i].type);
        if (t && t->gpu)
            b->offers[k++] = b->offers[i];
    }
    b->n_offers = k;
    if (k > 1)
        qsort(b->offers, k, sizeof(*b->offers), offer_cmp);
}

static int ondemand_prices(rebuild *b, gpc_error *err)
{
    size_t asked = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < b->n_offers; i++) {
        if (i && strcmp(b->offers[i - 1].type, b->offers[i].type) == 0)
            continue;
        gpc_aws_od_price *v = NULL;
        size_t n = 0;
        asked++;
        rc = gpc_aws_pricelist_ondemand(&b->c->ec2, b->offers[i].type,
                                        b->n_regions == 1 ? b->regions[0] : NULL, &v, &n, err);
        for (size_t j = i; !rc && j < b->n_offers &&
                           strcmp(b->offers[j].type, b->offers[i].type) == 0; j++)
            for (size_t q = 0; q < n; q++)
                if (strcmp(v[q].region, b->offers[j].region) == 0) {
                    b->offers[j].ondemand = v[q].usd_per_hour;
                    snprintf(b->offers[j].published, sizeof(b->offers[j].published), "%.10s",
                             v[q].published);
                }
        free(v);
    }
    if (!rc)
        gpc_info(b->log, "aws: asked the Price List (GetProducts) for %zu instance type(s)",
                 asked);
    return rc;
}

/* The scope of the rebuild: aws rows, in the regions asked when some were. */
typedef struct scope {
    const gpc_price_refresh_opts *o;
} scope;

static int in_scope(const gpc_catalog_row *r, void *arg)
{
    const scope *s = arg;
    return strcmp(r->provider, "aws") == 0 &&
           (!s->o->n_regions || in_list(s->o->regions, s->o->n_regions, r->region));
}

static int is_offered(const rebuild *b, const char *type, const char *region)
{
    for (size_t i = 0; i < b->n_offers; i++)
        if (strcmp(b->offers[i].type, type) == 0 && strcmp(b->offers[i].region, region) == 0)
            return 1;
    return 0;
}

static int write_rows(rebuild *b, gpc_catalog *cat, const gpc_offer *spot,
                      const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                      gpc_error *err)
{
    char today[16];
    time_t now = (time_t)gpc_now();
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    /* what goes, and what is new */
    size_t before = 0;
    for (size_t i = 0; i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        scope s = {o};
        if (!in_scope(r, &s))
            continue;
        before++;
        if (!is_offered(b, r->instance_type, r->region))
            res->removed++;
    }
    res->added = b->n_offers - (before - res->removed);
    scope s = {o};
    gpc_catalog_remove_rows(cat, in_scope, &s);
    int rc = 0;
    for (size_t i = 0; !rc && i < b->n_offers; i++) {
        const offered *f = &b->offers[i];
        const api_type *t = type_named(b, f->type);
        char od[96], sp[128], note[352];
        if (f->ondemand >= 0)
            snprintf(od, sizeof(od), "on-demand from the Price List%s%s%s",
                     f->published[0] ? " (published " : "", f->published,
                     f->published[0] ? ")" : "");
        else
            snprintf(od, sizeof(od), "no on-demand price in the Price List");
        if (spot[i].price_hourly > 0)
            snprintf(sp, sizeof(sp), "spot from DescribeSpotPriceHistory (lowest zone: %s)",
                     spot[i].zone);
        else
            snprintf(sp, sizeof(sp), "no spot price");
        snprintf(note, sizeof(note), "fetched %s: hardware from DescribeInstanceTypes; %s; %s",
                 today, od, sp);
        gpc_catalog_row row = {
            .provider = "aws", .instance_type = f->type, .region = f->region,
            .gpu_model = t->gpu->model, .gpu_count = t->gpu_count,
            .gpu_mem_gib = t->gpu_mib / 1024.0, .vcpus = t->vcpus, .mem_gib = t->mem_mib / 1024.0,
            .fabric = t->efa ? GPC_FABRIC_EFA : GPC_FABRIC_NONE, .fabric_gbps = t->gbps,
            .price_ondemand = f->ondemand,
            .price_spot = spot[i].price_hourly > 0 ? spot[i].price_hourly : -1,
            .price_ondemand_cny = -1, .price_spot_cny = -1, .source = AWS_API_SOURCE,
            .notes = note,
        };
        rc = gpc_catalog_add_row(cat, &row, err);
        res->rows++;
        if (f->ondemand >= 0)
            res->updated++;
        else
            res->not_listed++;
    }
    return rc;
}

static int rebuild_rows(aws_ctx *c, gpc_catalog *cat, const gpc_price_refresh_opts *o,
                        gpc_price_refresh_result *res, int *touched, gpc_error *err)
{
    rebuild b = {.c = c, .log = o->log};
    int rc = list_regions(&b, o, err);
    if (!rc)
        rc = describe(&b, err);
    for (size_t i = 0; !rc && i < b.n_types; i++)
        b.types[i].gpu = model_for(cat, &b.types[i], o->log);
    if (!rc) {
        keep_rows(&b);
        rc = ondemand_prices(&b, err);
    }
    gpc_offer *spot = calloc(b.n_offers ? b.n_offers : 1, sizeof(*spot));
    if (!rc && !spot)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < b.n_offers; i++) {
        snprintf(spot[i].provider, sizeof(spot[i].provider), "aws");
        snprintf(spot[i].instance_type, sizeof(spot[i].instance_type), "%s", b.offers[i].type);
        snprintf(spot[i].region, sizeof(spot[i].region), "%s", b.offers[i].region);
        spot[i].spot = 1;
        spot[i].price_hourly = -1;
    }
    size_t updated = 0;
    if (!rc && b.n_offers) {
        gpc_info(o->log, "aws: asking DescribeSpotPriceHistory for %zu row(s)", b.n_offers);
        rc = gpc_provider_aws.live_prices(c, spot, b.n_offers, &updated, err);
    }
    if (!rc) {
        *touched = 1;
        rc = write_rows(&b, cat, spot, o, res, err);
    }
    if (!rc)
        gpc_info(o->log, "aws: %zu row(s) from the APIs in %zu region(s): %zu with an on-demand "
                 "price, %zu without, %zu with a spot price; %zu new, %zu no longer listed "
                 "(removed)", res->rows, b.n_regions, res->updated, res->not_listed, updated,
                 res->added, res->removed);
    free(spot);
    free(b.regions);
    free(b.types);
    free(b.offers);
    return rc;
}

int gpc_aws_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                           const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                           gpc_error *err)
{
    res->api = "EC2 DescribeRegions, DescribeInstanceTypes, DescribeInstanceTypeOfferings, "
               "DescribeSpotPriceHistory; AWS Price List GetProducts";
    const gpc_provider *p = &gpc_provider_aws;
    void *ctx = NULL;
    int rc = p->open(cfg, &ctx, err), touched = 0;
    if (!rc) {
        rc = rebuild_rows(ctx, cat, o, res, &touched, err);
        p->close(ctx);
    }
    if (rc && !o->named && !touched) {
        /* not asked by name: no AWS credentials is not an error (the
         * catalog is as it was: the rows are replaced only after every
         * answer came) */
        snprintf(res->skipped, sizeof(res->skipped), "%s", err->msg);
        gpc_info(o->log, "aws: %s (skipped)", err->msg);
        gpc_error_clear(err);
        return 0;
    }
    return rc;
}
