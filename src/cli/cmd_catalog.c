/* cmd_catalog.c - `gpuctl catalog show|export|update|reset`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "azure/prices.h"
#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/provider.h"
#include "gpuctl/util.h"

/* Source key given to rows whose prices `catalog update` fetched from the
 * Azure Retail Prices API (catalog/sources.csv describes it). */
#define AZURE_SOURCE "azure-retail-api"

typedef struct catalog_args {
    const char *from;
    const char *endpoint;
    char **providers, **regions;
    size_t n_providers, n_regions;
    int dry_run;
} catalog_args;

const gpc_option gpc_catalog_options[] = {
    {"provider", 0, "P[,P]", 'P', "update: only these providers (default: every one whose "
     "prices can be refreshed)"},
    {"region", 0, "R[,R]", 'r', "update: only these regions, where the provider's price "
     "refresh takes regions (docs/cli.md#catalog)"},
    {"from", 0, "FILE", 'F', "update: check the catalog CSV FILE and install it as the "
     "user override"},
    {"dry-run", 0, NULL, 'n', "update: fetch and check, do not write"},
    {NULL, 0, NULL, 0, NULL}
};

static int catalog_opt(int opt, const char *arg, void *ud)
{
    catalog_args *a = ud;
    switch (opt) {
    case 'F':
        if (a->from)
            return GPC_OPT_TWICE;
        a->from = arg;
        return 0;
    case 'e':
        if (a->endpoint)
            return GPC_OPT_TWICE;
        a->endpoint = arg;
        return 0;
    case 'P': return gpc_list_append(arg, &a->providers, &a->n_providers);
    case 'r': return gpc_list_append(arg, &a->regions, &a->n_regions);
    case 'n': a->dry_run = 1; return 0;
    }
    return -1;
}

static int has(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

/* ---- show ---------------------------------------------------------------- */

static int catalog_show(const gpc_out *o, const gpc_catalog *cat, const char *user_path)
{
    static const char *const provs[] = {"aws", "azure", "aliyun"};
    struct stat sb;
    int user = user_path[0] && stat(user_path, &sb) == 0;
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "catalog");
        cJSON_AddStringToObject(doc, "origin", cat->origin);
        cJSON_AddStringToObject(doc, "sha256", cat->sha256);
        cJSON_AddNumberToObject(doc, "rows", (double)cat->n_rows);
        cJSON *by = cJSON_AddObjectToObject(doc, "rows_by_provider");
        for (size_t i = 0; i < cat->n_rows; i++) {
            cJSON *v = cJSON_GetObjectItemCaseSensitive(by, cat->rows[i].provider);
            if (v)
                cJSON_SetNumberValue(v, v->valuedouble + 1);
            else
                cJSON_AddNumberToObject(by, cat->rows[i].provider, 1);
        }
        cJSON_AddStringToObject(doc, "user_override", user_path);
        cJSON_AddBoolToObject(doc, "user_override_exists", user);
        cJSON *src = cJSON_AddArrayToObject(doc, "sources");
        for (size_t i = 0; i < cat->n_sources; i++) {
            const gpc_catalog_source *s = &cat->sources[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "key", s->key);
            cJSON_AddStringToObject(j, "citation", s->citation);
            cJSON_AddStringToObject(j, "version", s->version);
            cJSON_AddStringToObject(j, "data_date", s->data_date);
            cJSON_AddStringToObject(j, "currency", s->currency);
            cJSON_AddNumberToObject(j, "usd_per_unit", s->usd_per_unit);
            cJSON_AddItemToArray(src, j);
        }
        cJSON_AddNumberToObject(doc, "gpu_models", (double)cat->n_gpus);
        gpc_print_json(doc);
        return 0;
    }
    printf("%scatalog:%s %s (%zu rows, sha256 %.12s)\n", gpc_c_bold(o), gpc_c_reset(o),
           cat->origin, cat->n_rows, cat->sha256);
    for (size_t p = 0; p < sizeof(provs) / sizeof(provs[0]); p++) {
        size_t n = 0;
        for (size_t i = 0; i < cat->n_rows; i++)
            n += strcmp(cat->rows[i].provider, provs[p]) == 0;
        printf("  %-7s %zu rows\n", provs[p], n);
    }
    printf("user override: %s (%s)\n", user_path[0] ? user_path : "-",
           user ? "present" : "absent");
    printf("\n%ssources:%s\n", gpc_c_bold(o), gpc_c_reset(o));
    gpc_table t;
    static const char *const head[] = {"KEY", "CURRENCY", "USD/UNIT", "DATA DATE", "CITATION"};
    gpc_table_init(&t, 5, head);
    for (size_t i = 0; i < cat->n_sources; i++) {
        const gpc_catalog_source *s = &cat->sources[i];
        char rate[32], date[64], cit[96];
        snprintf(rate, sizeof(rate), "%g", s->usd_per_unit);
        snprintf(date, sizeof(date), "%.63s", *s->data_date ? s->data_date : "not stated");
        snprintf(cit, sizeof(cit), "%.95s", s->citation);
        const char *row[] = {s->key, s->currency, rate, date, cit};
        gpc_table_add(&t, row);
    }
    gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
    printf("\nPrices are USD/hour; CNY prices were converted at the USD/UNIT rate shown. "
           "See catalog/README.md.\n");
    return 0;
}

/* ---- update -------------------------------------------------------------- */

typedef struct update_stats {
    size_t rows, updated, no_price, spot_cleared;
} update_stats;

static int refresh_azure(const gpc_out *o, gpc_catalog *cat, const catalog_args *a,
                         update_stats *st, char ***notes, size_t *n_notes, gpc_error *err)
{
    /* Which (region, size) pairs: the catalog's Azure rows, narrowed by
     * --region. */
    const char **regions = calloc(cat->n_rows + 1, sizeof(*regions));
    const char **skus = calloc(cat->n_rows + 1, sizeof(*skus));
    size_t nr = 0, ns = 0;
    int rc = !regions || !skus ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    for (size_t i = 0; !rc && i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        if (strcmp(r->provider, "azure") != 0 || !*r->region ||
            (a->n_regions && !has(a->regions, a->n_regions, r->region)))
            continue;
        int seen = 0;
        for (size_t k = 0; k < nr && !seen; k++)
            seen = strcmp(regions[k], r->region) == 0;
        if (!seen)
            regions[nr++] = r->region;
        seen = 0;
        for (size_t k = 0; k < ns && !seen; k++)
            seen = strcmp(skus[k], r->instance_type) == 0;
        if (!seen)
            skus[ns++] = r->instance_type;
    }
    if (!rc && (nr == 0 || ns == 0))
        rc = gpc_fail(err, GPC_ERR_USAGE, "azure: the catalog has no Azure rows%s%s to refresh",
                      a->n_regions ? " in the regions given" : "", "");
    gpc_azure_price *prices = NULL;
    size_t np = 0;
    const char *endpoint = a->endpoint ? a->endpoint : getenv("GPUCTL_AZURE_PRICES_ENDPOINT");
    if (!rc) {
        gpc_info(&o->log, "azure: asking the Retail Prices API for %zu size(s) in %zu region(s)", ns, nr);
        gpc_http_opts ho;
        memset(&ho, 0, sizeof(ho));
        ho.what = "azure retail prices";
        rc = gpc_azure_retail_prices(endpoint && *endpoint ? endpoint : NULL, regions, nr, skus,
                                     ns, &ho, &prices, &np, err);
    }
    char today[16];
    time_t now = (time_t)gpc_now();
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    for (size_t i = 0; !rc && i < cat->n_rows; i++) {
        gpc_catalog_row *r = &cat->rows[i];
        if (strcmp(r->provider, "azure") != 0 || !*r->region ||
            (a->n_regions && !has(a->regions, a->n_regions, r->region)))
            continue;
        st->rows++;
        const gpc_azure_price *p = NULL;
        for (size_t k = 0; k < np && !p; k++)
            if (strcmp(prices[k].region, r->region) == 0 && strcmp(prices[k].sku, r->instance_type) == 0)
                p = &prices[k];
        if (!p || p->ondemand_usd_hr < 0) {
            st->no_price++;  /* the API does not list it (now): keep the old row */
            continue;
        }
        rc = gpc_catalog_set_price(cat, r, p->ondemand_usd_hr, p->spot_usd_hr, AZURE_SOURCE, err);
        if (!rc && p->spot_usd_hr < 0 && r->price_spot >= 0) {
            r->price_spot = -1;  /* no Spot meter any more: no stale spot price */
            st->spot_cleared++;
        }
        char **nn = rc ? NULL : realloc(*notes, (*n_notes + 1) * sizeof(*nn));
        if (!rc && !nn)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        if (!rc) {
            *notes = nn;
            char buf[128];
            snprintf(buf, sizeof(buf), "fetched %s; price effective %.10s", today,
                     p->effective);
            nn[*n_notes] = strdup(buf);
            if (!nn[*n_notes])
                rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            else
                r->notes = nn[(*n_notes)++];
            r->price_ondemand_cny = -1;
            r->price_spot_cny = -1;
            st->updated++;
        }
    }
    free(prices);
    free(regions);
    free(skus);
    return rc;
}

/* AWS: current spot prices from DescribeSpotPriceHistory (the aws
 * provider's live_prices, signed with the user's credentials) for the
 * catalog's AWS rows that have a spot price.  On-demand prices stay (they
 * come from the AWS Price List, which gpuctl does not read). */
static int refresh_aws(const gpc_out *o, gpc_catalog *cat, const catalog_args *a,
                       update_stats *st, char ***notes, size_t *n_notes, gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find("aws");
    gpc_offer *offers = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*offers));
    size_t *rows = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*rows));
    int rc = !p ? gpc_fail(err, GPC_ERR_PROVIDER, "aws: the provider is not built in")
           : !offers || !rows ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    size_t n = 0;
    for (size_t i = 0; !rc && i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        if (strcmp(r->provider, "aws") != 0 || !*r->region || r->price_spot < 0 ||
            (a->n_regions && !has(a->regions, a->n_regions, r->region)))
            continue;
        snprintf(offers[n].provider, sizeof(offers[n].provider), "aws");
        snprintf(offers[n].instance_type, sizeof(offers[n].instance_type), "%s",
                 r->instance_type);
        snprintf(offers[n].region, sizeof(offers[n].region), "%s", r->region);
        offers[n].spot = 1;
        offers[n].price_hourly = -1;
        rows[n++] = i;
    }
    if (!rc && n == 0)
        rc = gpc_fail(err, GPC_ERR_USAGE, "aws: the catalog has no AWS rows with spot prices%s "
                      "to refresh", a->n_regions ? " in the regions given" : "");
    void *ctx = NULL;
    /* --endpoint is the EC2 endpoint only when aws is the one provider
     * asked; else it is the Azure API's (AWS_ENDPOINT_URL_EC2 still works) */
    gpc_provider_config cfg = {.endpoint = a->n_providers == 1 ? o->cfg.endpoint : NULL,
                               .profile = o->cfg.profile, .log = &o->log};
    if (!rc)
        rc = p->open(&cfg, &ctx, err);
    size_t updated = 0;
    if (!rc) {
        gpc_info(&o->log, "aws: asking DescribeSpotPriceHistory for %zu row(s)", n);
        rc = p->live_prices(ctx, offers, n, &updated, err);
        p->close(ctx);
    }
    char today[16];
    time_t now = (time_t)gpc_now();
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    for (size_t k = 0; !rc && k < n; k++) {
        gpc_catalog_row *r = &cat->rows[rows[k]];
        st->rows++;
        if (offers[k].price_hourly <= 0) {
            st->no_price++;
            continue;
        }
        r->price_spot = offers[k].price_hourly;
        r->price_spot_cny = -1;
        char **nn = realloc(*notes, (*n_notes + 1) * sizeof(*nn));
        if (!nn) {
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            break;
        }
        *notes = nn;
        char buf[160];
        snprintf(buf, sizeof(buf), "spot price fetched %s from DescribeSpotPriceHistory "
                 "(lowest zone: %s)", today, offers[k].zone);
        if (!(nn[*n_notes] = strdup(buf)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            r->notes = nn[(*n_notes)++];
        st->updated++;
    }
    free(offers);
    free(rows);
    return rc;
}

static int catalog_update(const gpc_out *o, gpc_catalog **catp, const catalog_args *a,
                          const char *user_path)
{
    gpc_error err;
    gpc_error_clear(&err);
    gpc_catalog *cat = *catp;
    int rc = 0;
    char **notes = NULL;
    size_t n_notes = 0;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "catalog update");
    cJSON *provs = cJSON_AddArrayToObject(doc, "providers");
    if (a->from) {
        if (a->n_providers || a->endpoint || a->n_regions)
            rc = gpc_fail(&err, GPC_ERR_USAGE, "--from installs a file as it is; it does not "
                          "combine with --provider, --region or --endpoint");
        gpc_catalog *from = NULL;
        if (!rc)
            rc = gpc_catalog_load_file(a->from, &from, &err);
        if (!rc) {
            gpc_catalog_free(cat);
            *catp = cat = from;
            cJSON_AddStringToObject(doc, "from", a->from);
        }
    } else {
        static const char *const known[] = {"aws", "azure", "aliyun"};
        for (size_t i = 0; !rc && i < a->n_providers; i++)
            if (!has((char *const *)known, 3, a->providers[i]))
                rc = gpc_fail(&err, GPC_ERR_USAGE, "unknown provider '%s' (aws, azure, aliyun)",
                              a->providers[i]);
        for (size_t i = 0; !rc && i < 3; i++) {
            const char *p = known[i];
            int asked = a->n_providers ? has(a->providers, a->n_providers, p) : 1;
            if (!asked)
                continue;
            cJSON *pj = cJSON_CreateObject();
            cJSON_AddStringToObject(pj, "provider", p);
            if (strcmp(p, "azure") == 0) {
                update_stats st;
                memset(&st, 0, sizeof(st));
                rc = refresh_azure(o, cat, a, &st, &notes, &n_notes, &err);
                cJSON_AddStringToObject(pj, "status", rc ? "failed" : "updated");
                cJSON_AddStringToObject(pj, "api", "Azure Retail Prices");
                cJSON_AddNumberToObject(pj, "rows", (double)st.rows);
                cJSON_AddNumberToObject(pj, "updated", (double)st.updated);
                cJSON_AddNumberToObject(pj, "not_listed", (double)st.no_price);
                cJSON_AddNumberToObject(pj, "spot_cleared", (double)st.spot_cleared);
                if (!rc)
                    gpc_info(&o->log, "azure: %zu of %zu row(s) updated; %zu not listed by the API "
                             "(kept as they were); %zu spot price(s) removed (no Spot meter)",
                             st.updated, st.rows, st.no_price, st.spot_cleared);
            } else if (strcmp(p, "aws") == 0) {
                update_stats st;
                memset(&st, 0, sizeof(st));
                gpc_error ae;
                gpc_error_clear(&ae);
                int arc = refresh_aws(o, cat, a, &st, &notes, &n_notes, &ae);
                int skipped = arc && !a->n_providers;
                cJSON_AddStringToObject(pj, "status", !arc ? "updated"
                                                      : skipped ? "skipped" : "failed");
                if (!skipped) {
                    cJSON_AddStringToObject(pj, "api",
                                            "EC2 DescribeSpotPriceHistory (spot prices only)");
                    cJSON_AddNumberToObject(pj, "rows", (double)st.rows);
                    cJSON_AddNumberToObject(pj, "updated", (double)st.updated);
                    cJSON_AddNumberToObject(pj, "not_listed", (double)st.no_price);
                    cJSON_AddNumberToObject(pj, "spot_cleared", 0);
                }
                if (arc && a->n_providers) {
                    rc = gpc_fail(&err, ae.code, "%s", ae.msg);
                } else if (arc) {
                    /* not asked by name: no AWS credentials is not an error */
                    cJSON_AddStringToObject(pj, "reason", ae.msg);
                    gpc_info(&o->log, "aws: %s (skipped)", ae.msg);
                } else {
                    gpc_info(&o->log, "aws: %zu of %zu spot price(s) updated; %zu not listed by the "
                             "API (kept as they were)", st.updated, st.rows, st.no_price);
                }
            } else {
                /* The signed price APIs need the provider's credentials and
                 * request signing, which come with the provider module. */
                char why[256];
                snprintf(why, sizeof(why), "%s: refreshing prices needs DescribePrice and "
                         "DescribeSpotPriceHistory with Alibaba Cloud credentials; the %s "
                         "provider is not built into this gpuctl yet", p, p);
                cJSON_AddStringToObject(pj, "status", "skipped");
                cJSON_AddStringToObject(pj, "reason", why);
                if (a->n_providers)
                    rc = gpc_fail(&err, GPC_ERR_PROVIDER, "%s", why);
                else
                    gpc_info(&o->log, "%s (skipped)", why);
            }
            cJSON_AddItemToArray(provs, pj);
        }
    }
    gpc_buf csv;
    gpc_buf_init(&csv, GPC_CATALOG_MAX_BYTES);
    if (!rc)
        rc = gpc_catalog_write_csv(cat, &csv, &err);
    if (!rc && !a->dry_run) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", user_path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        rc = gpc_mkdir_p(dir, 0700, &err);
        if (!rc)
            rc = gpc_write_file_atomic(user_path, csv.data, csv.len, 0644, &err);
    }
    if (!rc) {
        char sha[65];
        gpc_sha256_hex(csv.data, csv.len, sha);
        cJSON_AddStringToObject(doc, "written", a->dry_run ? "" : user_path);
        cJSON_AddBoolToObject(doc, "dry_run", a->dry_run);
        cJSON_AddNumberToObject(doc, "rows", (double)cat->n_rows);
        cJSON_AddStringToObject(doc, "sha256", sha);
        if (o->format == GPC_OUT_JSON)
            gpc_print_json(doc);
        else if (a->dry_run)
            printf("catalog: %zu rows; dry run, %s not written\n", cat->n_rows, user_path);
        else
            printf("catalog: %zu rows written to %s (sha256 %.12s)\n", cat->n_rows, user_path,
                   sha);
        if (o->format == GPC_OUT_JSON)
            doc = NULL;
    }
    cJSON_Delete(doc);
    gpc_buf_free(&csv);
    for (size_t i = 0; i < n_notes; i++)
        free(notes[i]);
    free(notes);
    return rc ? gpc_report_error(o, &err) : 0;
}

int gpc_cmd_catalog(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    catalog_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, catalog_opt, &a, &done);
    a.endpoint = o->cfg.endpoint; /* --endpoint is global: every provider API takes one */
    const char *verb = !done && optind < argc ? argv[optind++] : "show";
    if (!done && optind < argc)
        rc = gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]), done = 1;
    int is_update = strcmp(verb, "update") == 0;
    if (!done && !is_update && (a.from || a.endpoint || a.n_providers || a.n_regions || a.dry_run))
        rc = gpc_usage_error(o, c, "--from, --endpoint, --provider, --region and --dry-run "
                             "belong to 'catalog update', not '%s'", verb), done = 1;
    if (!done && !is_update && strcmp(verb, "show") != 0 && strcmp(verb, "export") != 0 &&
        strcmp(verb, "reset") != 0)
        rc = gpc_usage_error(o, c, "unknown catalog command '%s' (show, export, update, reset)",
                             verb), done = 1;
    if (done)
        goto out;

    gpc_error err;
    gpc_error_clear(&err);
    char user[4096] = "";
    gpc_error ue;
    gpc_error_clear(&ue);
    int have_user = gpc_catalog_user_path(user, sizeof(user), &ue) == 0;
    if (strcmp(verb, "reset") == 0) {
        if (!have_user) {
            rc = gpc_report_error(o, &ue);
            goto out;
        }
        int had = unlink(user) == 0;
        if (!had && errno != ENOENT) {
            gpc_fail(&err, GPC_ERR_IO, "%s: cannot remove: %s", user, strerror(errno));
            rc = gpc_report_error(o, &err);
            goto out;
        }
        if (o->format == GPC_OUT_JSON) {
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "command", "catalog reset");
            if (had)
                cJSON_AddStringToObject(doc, "removed", user);
            else
                cJSON_AddNullToObject(doc, "removed");
            gpc_print_json(doc);
        } else if (had) {
            printf("catalog: user override %s removed; the built-in catalog is in effect "
                   "unless --catalog or GPUCTL_CATALOG names a file\n", user);
        } else {
            printf("catalog: no user override at %s; nothing to remove\n", user);
        }
        rc = 0;
        goto out;
    }
    if (is_update && !have_user) {
        rc = gpc_report_error(o, &ue);
        goto out;
    }
    gpc_catalog *cat = NULL;
    /* update --from replaces the catalog whole: the one in effect does not
     * matter, and may be the broken override being replaced. */
    rc = is_update && a.from ? 0 : gpc_catalog_open(o->cfg.catalog_path, &cat, &err);
    if (rc) {
        const char *env = getenv("GPUCTL_CATALOG");
        struct stat sb;
        if (!o->cfg.catalog_path && !(env && *env) && have_user && stat(user, &sb) == 0) {
            gpc_error e2;
            gpc_error_clear(&e2);
            gpc_fail(&e2, err.code, "%s (this is the user override; 'gpuctl catalog update "
                     "--from FILE' replaces it, 'gpuctl catalog reset' removes it)", err.msg);
            err = e2;
        }
        rc = gpc_report_error(o, &err);
        goto out;
    }
    if (strcmp(verb, "show") == 0) {
        rc = catalog_show(o, cat, have_user ? user : "");
    } else if (strcmp(verb, "export") == 0) {
        gpc_buf b;
        gpc_buf_init(&b, GPC_CATALOG_MAX_BYTES);
        rc = gpc_catalog_write_csv(cat, &b, &err);
        if (!rc)
            fwrite(b.data, 1, b.len, stdout);
        gpc_buf_free(&b);
        rc = rc ? gpc_report_error(o, &err) : 0;
    } else {
        rc = catalog_update(o, &cat, &a, user);
    }
    gpc_catalog_free(cat);
out:
    gpc_list_free(a.providers, a.n_providers);
    gpc_list_free(a.regions, a.n_regions);
    return rc;
}
