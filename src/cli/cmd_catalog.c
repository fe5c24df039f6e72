/* cmd_catalog.c - `gpuctl catalog show|export|update|reset`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/cluster.h"
#include "gpuctl/provider.h"
#include "gpuctl/util.h"

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
        return gpc_opt_once(&a->from, arg);
    case 'e':
        return gpc_opt_once(&a->endpoint, arg);
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

/* The providers whose offers come from the catalog (not GPC_CAP_OWN_OFFERS),
 * those that can refresh their prices first, each group in registry order:
 * the providers `catalog show` counts rows of and `catalog update` walks.
 * Fills v (room for CATALOG_PROVIDERS_MAX) and returns how many. */
#define CATALOG_PROVIDERS_MAX 64
static size_t catalog_providers(const gpc_provider **v)
{
    size_t n = 0;
    for (int refresh = 1; refresh >= 0; refresh--)
        for (size_t i = 0; gpc_providers[i] && n < CATALOG_PROVIDERS_MAX; i++) {
            const gpc_provider *p = gpc_providers[i];
            if (!(p->caps & GPC_CAP_OWN_OFFERS) && !p->refresh_prices == !refresh)
                v[n++] = p;
        }
    return n;
}

/* ---- show ---------------------------------------------------------------- */

static int catalog_show(const gpc_out *o, const gpc_catalog *cat, const char *user_path)
{
    const gpc_provider *provs[CATALOG_PROVIDERS_MAX];
    size_t n_provs = catalog_providers(provs);
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
    for (size_t p = 0; p < n_provs; p++) {
        size_t n = 0;
        for (size_t i = 0; i < cat->n_rows; i++)
            n += strcmp(cat->rows[i].provider, provs[p]->name) == 0;
        printf("  %-7s %zu rows\n", provs[p]->name, n);
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

/* `catalog update` of a provider whose offers come from what it recorded
 * (refresh_offers: a Slurm cluster's partitions and nodes): ask it again.
 * Not named, one with nothing to ask (GPC_ERR_AUTH: no Slurm cluster
 * configured) is skipped with a note. */
static int refresh_own(const gpc_out *o, const gpc_provider *p, int named, cJSON *provs,
                       gpc_error *err)
{
    cJSON *pj = cJSON_CreateObject();
    cJSON_AddStringToObject(pj, "provider", p->name);
    cJSON_AddItemToArray(provs, pj);
    gpc_session s;
    gpc_error e;
    gpc_error_clear(&e);
    char detail[1024] = "";
    int rc = gpc_session_open(&s, &o->cfg, &e);
    if (!rc) {
        gpc_open_provider op;
        rc = gpc_session_provider(&s, p->name, &op, &e);
        if (!rc)
            rc = op.prov->refresh_offers(op.ctx, detail, sizeof(detail), &e);
        gpc_session_close(&s);
    }
    if (rc && !named && e.code == GPC_ERR_AUTH) {
        cJSON_AddStringToObject(pj, "status", "skipped");
        cJSON_AddStringToObject(pj, "reason", e.msg);
        gpc_info(&o->log, "%s (skipped)", e.msg);
        return 0;
    }
    cJSON_AddStringToObject(pj, "status", rc ? "failed" : "updated");
    if (rc)
        return gpc_error_wrap(err, &e, NULL);
    cJSON_AddStringToObject(pj, "detail", detail);
    if (o->format != GPC_OUT_JSON)
        printf("%s: %s\n", p->name, detail);
    return 0;
}

static int catalog_update(const gpc_out *o, gpc_catalog **catp, const catalog_args *a,
                          const char *user_path)
{
    gpc_error err;
    gpc_error_clear(&err);
    gpc_catalog *cat = *catp;
    int rc = gpc_providers_register_secrets(&err);
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
        const gpc_provider *known[CATALOG_PROVIDERS_MAX];
        size_t n_known = catalog_providers(known);
        char names[256] = "";
        for (size_t i = 0; i < n_known; i++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                     i ? ", " : "", known[i]->name);
        for (size_t i = 0; !rc && i < a->n_providers; i++) {
            size_t k = 0;
            while (k < n_known && strcmp(known[k]->name, a->providers[i]) != 0)
                k++;
            const gpc_provider *p = gpc_provider_find(a->providers[i]);
            if (k < n_known || (p && p->refresh_offers))
                continue;
            if (p)
                rc = gpc_fail(&err, GPC_ERR_USAGE, "provider '%s' lists its offers itself and "
                              "has no catalog prices to update (those with catalog rows: %s)",
                              a->providers[i], names);
            else
                rc = gpc_fail(&err, GPC_ERR_USAGE, "unknown provider '%s' (%s)",
                              a->providers[i], names);
        }
        /* --endpoint is the provider API's only when one provider is asked;
         * a price API of its own (Azure's) takes it in any case. */
        gpc_settings set = o->cfg;
        if (a->n_providers != 1)
            set.endpoint = NULL;
        gpc_price_refresh_opts ro = {.regions = (const char *const *)a->regions,
                                     .n_regions = a->n_regions, .endpoint = a->endpoint,
                                     .named = a->n_providers > 0, .log = &o->log};
        for (size_t i = 0; !rc && i < n_known; i++) {
            const gpc_provider *p = known[i];
            if (a->n_providers && !has(a->providers, a->n_providers, p->name))
                continue;
            cJSON *pj = cJSON_CreateObject();
            cJSON_AddStringToObject(pj, "provider", p->name);
            if (p->refresh_prices) {
                gpc_price_refresh_result res;
                memset(&res, 0, sizeof(res));
                gpc_provider_settings ps;
                rc = gpc_provider_settings_get(&set, p, NULL, &ps, &err);
                if (!rc)
                    rc = p->refresh_prices(&ps.cfg, cat, &ro, &res, &err);
                gpc_provider_settings_free(&ps);
                cJSON_AddStringToObject(pj, "status", rc ? "failed"
                                                    : res.skipped[0] ? "skipped" : "updated");
                if (res.skipped[0] && !rc) {
                    cJSON_AddStringToObject(pj, "reason", res.skipped);
                } else {
                    cJSON_AddStringToObject(pj, "api", res.api ? res.api : "");
                    cJSON_AddNumberToObject(pj, "rows", (double)res.rows);
                    cJSON_AddNumberToObject(pj, "updated", (double)res.updated);
                    cJSON_AddNumberToObject(pj, "not_listed", (double)res.not_listed);
                    cJSON_AddNumberToObject(pj, "spot_cleared", (double)res.spot_cleared);
                    cJSON_AddNumberToObject(pj, "added", (double)res.added);
                    cJSON_AddNumberToObject(pj, "removed", (double)res.removed);
                }
            } else {
                char why[512];
                snprintf(why, sizeof(why), "%s: %s", p->name, p->no_refresh_prices
                         ? p->no_refresh_prices : "this gpuctl cannot refresh its prices");
                cJSON_AddStringToObject(pj, "status", "skipped");
                cJSON_AddStringToObject(pj, "reason", why);
                if (a->n_providers)
                    rc = gpc_fail(&err, GPC_ERR_PROVIDER, "%s", why);
                else
                    gpc_info(&o->log, "%s (skipped)", why);
            }
            cJSON_AddItemToArray(provs, pj);
        }
        /* then the providers whose offers come from what they recorded */
        for (size_t i = 0; !rc && gpc_providers[i]; i++) {
            const gpc_provider *p = gpc_providers[i];
            if (!p->refresh_offers || (a->n_providers && !has(a->providers, a->n_providers,
                                                              p->name)))
                continue;
            if (a->dry_run) {
                /* what it records is its own: a dry run asks nothing */
                cJSON *pj = cJSON_CreateObject();
                cJSON_AddStringToObject(pj, "provider", p->name);
                cJSON_AddStringToObject(pj, "status", "skipped");
                cJSON_AddStringToObject(pj, "reason", "--dry-run");
                cJSON_AddItemToArray(provs, pj);
                continue;
            }
            rc = refresh_own(o, p, a->n_providers > 0, provs, &err);
        }
    }
    /* Only providers that record their own offers asked: no catalog to write. */
    int own_only = a->n_providers > 0 && !a->from;
    for (size_t i = 0; own_only && i < a->n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(a->providers[i]);
        own_only = p && p->refresh_offers;
    }
    if (own_only) {
        if (!rc && o->format == GPC_OUT_JSON) {
            cJSON_AddStringToObject(doc, "written", "");
            cJSON_AddBoolToObject(doc, "dry_run", a->dry_run);
            cJSON_AddNumberToObject(doc, "rows", (double)cat->n_rows);
            cJSON_AddStringToObject(doc, "sha256", cat->sha256);
            gpc_print_json(doc);
            doc = NULL;
        }
        cJSON_Delete(doc);
        return rc ? gpc_report_error(o, &err) : 0;
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
