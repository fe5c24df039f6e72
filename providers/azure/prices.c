/* prices.c - the Azure Retail Prices client and the provider's
 * refresh_prices (`gpuctl catalog update`); see prices.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "azure/prices.h"
#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

#define URL_BUF_MAX (64u << 10)

/* What has been chosen so far for one (region, sku). */
typedef struct pick {
    int has_od, has_spot;
    char od_date[40], spot_date[40];
} pick;

typedef struct query {
    const char *what;
    const gpc_http_opts *opts;
    const char *region;
    const char *const *skus;
    size_t n_skus;
    gpc_azure_price *res; /* the n_skus entries of this region */
    pick *picks;
} query;

static int valid_name(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return n > 0 && n < max;
}

/* Length of s once percent-encoded (see gpc_http_escape). */
static size_t escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        char c = *s;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        n += plain ? 1 : 3;
    }
    return n;
}

static const char filter_fmt[] =
    "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and "
    "armRegionName eq '%s' and (";

/*
 * Build the URL for skus[first..] and return in *end the index after the last
 * SKU it covers: as many as fit in GPC_AZURE_PRICES_URL_MAX, at least one.
 */
static int batch_url(const char *endpoint, const query *q, size_t first, size_t *end,
                     gpc_buf *url, gpc_error *err)
{
    gpc_buf filter;
    gpc_buf_init(&filter, URL_BUF_MAX);
    int rc = gpc_buf_addf(&filter, err, filter_fmt, q->region);
    if (rc)
        goto out;
    const char *sep = strchr(endpoint, '?') ? "&" : "?";
    size_t len = strlen(endpoint) + strlen(sep) + strlen("$filter=") +
                 escaped_len(gpc_buf_str(&filter)) + escaped_len(")");
    size_t i = first;
    for (; i < q->n_skus; i++) {
        size_t add = escaped_len("armSkuName eq ''") + escaped_len(q->skus[i]) +
                     (i > first ? escaped_len(" or ") : 0);
        if (i > first && len + add > GPC_AZURE_PRICES_URL_MAX)
            break;
        len += add;
        if ((rc = gpc_buf_addf(&filter, err, "%sarmSkuName eq '%s'", i > first ? " or " : "",
                               q->skus[i])))
            goto out;
    }
    if ((rc = gpc_buf_adds(&filter, ")", err)))
        goto out;
    *end = i;
    gpc_buf_reset(url);
    if (!(rc = gpc_buf_addf(url, err, "%s%s$filter=", endpoint, sep)))
        rc = gpc_http_escape(gpc_buf_str(&filter), url, err);
out:
    gpc_buf_free(&filter);
    return rc;
}

static const char *json_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Apply the row rules to one item and remember it if it is the best yet. */
static int take_item(const query *q, const cJSON *item, size_t idx, int page, gpc_error *err)
{
    if (!cJSON_IsObject(item))
        return gpc_fail(err, GPC_ERR_PROVIDER, "%s: item %zu of page %d is not an object",
                        q->what, idx + 1, page);
    const char *sku = json_str(item, "armSkuName");
    const char *region = json_str(item, "armRegionName");
    const char *currency = json_str(item, "currencyCode");
    if (!currency || strcmp(currency, "USD") != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "%s: '%s' in %s is priced in '%s', not USD",
                        q->what, sku ? sku : "?", region ? region : "?",
                        currency ? currency : "");
    if (!sku || !region || strcasecmp(region, q->region) != 0)
        return 0;
    size_t s = 0;
    while (s < q->n_skus && strcasecmp(q->skus[s], sku) != 0)
        s++;
    if (s == q->n_skus)
        return 0;

    const char *type = json_str(item, "type");
    const char *product = json_str(item, "productName");
    const char *sku_name = json_str(item, "skuName");
    const char *meter = json_str(item, "meterName");
    const char *unit = json_str(item, "unitOfMeasure");
    const char *date = json_str(item, "effectiveStartDate");
    const cJSON *price = cJSON_GetObjectItemCaseSensitive(item, "retailPrice");
    if (!sku_name)
        sku_name = "";
    if (!meter)
        meter = "";
    if (!date)
        date = "";
    if (!type || strcmp(type, "Consumption") != 0)
        return 0;
    if (product && ends_with(product, " Windows"))
        return 0;
    if (strstr(sku_name, "Low Priority") || strstr(meter, "Low Priority"))
        return 0;
    if (!unit || strcmp(unit, "1 Hour") != 0)
        return 0;
    if (!cJSON_IsNumber(price) || price->valuedouble < 0)
        return 0;
    int spot_sku = strstr(sku_name, "Spot") != NULL, spot_meter = strstr(meter, "Spot") != NULL;
    if (spot_sku != spot_meter)
        return 0; /* "Spot" in only one of them: neither kind for sure */

    gpc_azure_price *r = &q->res[s];
    pick *p = &q->picks[s];
    if (spot_sku) {
        if (p->has_spot && strcmp(date, p->spot_date) <= 0)
            return 0;
        p->has_spot = 1;
        snprintf(p->spot_date, sizeof(p->spot_date), "%s", date);
        r->spot_usd_hr = price->valuedouble;
    } else {
        if (p->has_od && strcmp(date, p->od_date) <= 0)
            return 0;
        p->has_od = 1;
        snprintf(p->od_date, sizeof(p->od_date), "%s", date);
        r->ondemand_usd_hr = price->valuedouble;
    }
    return 0;
}

/* Where Azure puts the request id in a reply's headers. */
static const char *const request_id_headers[] = {"x-ms-request-id", NULL};

/*
 * Re-raise he, a failed request's error, into err with the service's own
 * error code added when the reply was an Azure error document
 * ({"error": {"code", "message"}}; "Error"/"Code" spelled either way).
 */
static int request_failed(const gpc_http_response *resp, const gpc_error *he, gpc_error *err)
{
    gpc_error e = *he;
    cJSON *doc = e.remote.set && resp->body.len
                     ? cJSON_ParseWithLength(resp->body.data, resp->body.len) : NULL;
    const cJSON *er = cJSON_GetObjectItem(doc, "error"); /* case-insensitive */
    const cJSON *code = cJSON_GetObjectItem(er, "code");
    if (cJSON_IsString(code) && code->valuestring[0])
        gpc_error_remote(&e, e.remote.http_status, code->valuestring, e.remote.request_id,
                         e.remote.retryable);
    cJSON_Delete(doc);
    return gpc_error_wrap(err, &e, NULL);
}

/* GET url and every page after it, feeding the items to take_item(). */
static int fetch_pages(const query *q, const char *first_url, gpc_error *err)
{
    static const char *const headers[] = {"Accept: application/json"};
    char *url = strdup(first_url);
    int rc = 0;
    if (!url)
        return gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", q->what);
    for (int page = 1;; page++) {
        if (page > GPC_AZURE_PRICES_MAX_PAGES) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: more than %d pages for %s", q->what,
                          GPC_AZURE_PRICES_MAX_PAGES, q->region);
            break;
        }
        gpc_http_request req = {.method = "GET", .url = url, .headers = headers,
                                .n_headers = sizeof(headers) / sizeof(*headers)};
        gpc_http_response resp;
        gpc_error he;
        gpc_error_clear(&he);
        rc = gpc_http_send(&req, q->opts, &resp, &he);
        if (rc)
            request_failed(&resp, &he, err);
        cJSON *doc = rc ? NULL : cJSON_ParseWithLength(resp.body.data ? resp.body.data : "",
                                                       resp.body.len);
        gpc_http_response_free(&resp);
        if (rc)
            break;
        if (!doc) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: response is not JSON (page %d)",
                          q->what, page);
            break;
        }
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "Items");
        if (!cJSON_IsArray(items)) {
            cJSON_Delete(doc);
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: response has no Items array (page %d)",
                          q->what, page);
            break;
        }
        size_t idx = 0;
        const cJSON *item;
        cJSON_ArrayForEach(item, items) {
            if ((rc = take_item(q, item, idx++, page, err)))
                break;
        }
        const char *next = json_str(doc, "NextPageLink");
        /* 2023: the service once returned an empty NextPageLink on full pages
         * and may loop; stop on an empty page too (reference §5). */
        if (rc || idx == 0 || !next || !*next) {
            cJSON_Delete(doc);
            break;
        }
        if (strncmp(next, "https://", 8) != 0 && strncmp(next, "http://", 7) != 0) {
            cJSON_Delete(doc);
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: NextPageLink is not an http(s) URL "
                          "(page %d)", q->what, page);
            break;
        }
        free(url);
        url = strdup(next);
        cJSON_Delete(doc);
        if (!url) {
            rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", q->what);
            break;
        }
    }
    free(url);
    return rc;
}

int gpc_azure_retail_prices(const char *endpoint, const char *const *regions,
                            size_t n_regions, const char *const *skus, size_t n_skus,
                            const gpc_http_opts *opts, gpc_azure_price **out, size_t *n,
                            gpc_error *err)
{
    gpc_http_opts o = {0};
    if (opts)
        o = *opts;
    if (!o.what)
        o.what = "azure retail prices";
    if (!o.request_id_headers)
        o.request_id_headers = request_id_headers;
    if (!endpoint)
        endpoint = GPC_AZURE_PRICES_ENDPOINT;
    *out = NULL;
    *n = 0;
    if (!n_regions || !n_skus)
        return 0;
    for (size_t i = 0; i < n_regions; i++)
        if (!regions[i] || !valid_name(regions[i], sizeof(((gpc_azure_price *)0)->region)))
            return gpc_fail(err, GPC_ERR_USAGE, "%s: invalid region name '%s'", o.what,
                            regions[i] ? regions[i] : "");
    for (size_t i = 0; i < n_skus; i++)
        if (!skus[i] || !valid_name(skus[i], sizeof(((gpc_azure_price *)0)->sku)))
            return gpc_fail(err, GPC_ERR_USAGE, "%s: invalid VM size '%s'", o.what,
                            skus[i] ? skus[i] : "");
    if (n_regions > (size_t)-1 / sizeof(gpc_azure_price) / n_skus)
        return gpc_fail(err, GPC_ERR_NOMEM, "%s: too many regions and sizes", o.what);

    size_t total = n_regions * n_skus;
    gpc_azure_price *res = calloc(total, sizeof(*res));
    pick *picks = calloc(total, sizeof(*picks));
    gpc_buf url;
    gpc_buf_init(&url, URL_BUF_MAX);
    int rc = 0;
    if (!res || !picks) {
        rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", o.what);
        goto out;
    }
    for (size_t r = 0; r < n_regions; r++)
        for (size_t s = 0; s < n_skus; s++) {
            gpc_azure_price *p = &res[r * n_skus + s];
            snprintf(p->region, sizeof(p->region), "%s", regions[r]);
            snprintf(p->sku, sizeof(p->sku), "%s", skus[s]);
            p->ondemand_usd_hr = -1;
            p->spot_usd_hr = -1;
        }

    for (size_t r = 0; r < n_regions && !rc; r++) {
        query q = {.what = o.what, .opts = &o, .region = regions[r], .skus = skus,
                   .n_skus = n_skus, .res = &res[r * n_skus], .picks = &picks[r * n_skus]};
        for (size_t first = 0, end = 0; first < n_skus && !rc; first = end) {
            if (!(rc = batch_url(endpoint, &q, first, &end, &url, err)))
                rc = fetch_pages(&q, gpc_buf_str(&url), err);
        }
    }
    if (rc)
        goto out;
    for (size_t i = 0; i < total; i++) {
        const char *d = picks[i].has_od ? picks[i].od_date
                        : picks[i].has_spot ? picks[i].spot_date : "";
        snprintf(res[i].effective, sizeof(res[i].effective), "%s", d);
    }
    *out = res;
    *n = total;
    res = NULL;
out:
    free(res);
    free(picks);
    gpc_buf_free(&url);
    return rc;
}

/* ---- the provider's refresh_prices ------------------------------------ */

/* Source key given to rows whose prices came from the Retail Prices API
 * (catalog/sources.csv describes it). */
#define AZURE_SOURCE "azure-retail-api"

static int in_list(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

/* An azure row with a region, in o->regions when any are given. */
static int wanted(const gpc_catalog_row *r, const gpc_price_refresh_opts *o)
{
    return strcmp(r->provider, "azure") == 0 && *r->region &&
           (!o->n_regions || in_list(o->regions, o->n_regions, r->region));
}

int gpc_azure_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                             const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                             gpc_error *err)
{
    (void)cfg;
    res->api = "Azure Retail Prices";
    /* Which (region, size) pairs: the catalog's Azure rows, narrowed by
     * --region. */
    const char **regions = calloc(cat->n_rows + 1, sizeof(*regions));
    const char **skus = calloc(cat->n_rows + 1, sizeof(*skus));
    size_t nr = 0, ns = 0;
    int rc = !regions || !skus ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    for (size_t i = 0; !rc && i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        if (!wanted(r, o))
            continue;
        if (!in_list(regions, nr, r->region))
            regions[nr++] = r->region;
        if (!in_list(skus, ns, r->instance_type))
            skus[ns++] = r->instance_type;
    }
    if (!rc && (nr == 0 || ns == 0))
        rc = gpc_fail(err, GPC_ERR_USAGE, "azure: the catalog has no Azure rows%s to refresh",
                      o->n_regions ? " in the regions given" : "");
    gpc_azure_price *prices = NULL;
    size_t np = 0;
    const char *endpoint = o->endpoint ? o->endpoint : getenv("GPUCTL_AZURE_PRICES_ENDPOINT");
    if (!rc) {
        gpc_info(o->log, "azure: asking the Retail Prices API for %zu size(s) in %zu region(s)",
                 ns, nr);
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
        if (!wanted(r, o))
            continue;
        res->rows++;
        const gpc_azure_price *p = NULL;
        for (size_t k = 0; k < np && !p; k++)
            if (strcmp(prices[k].region, r->region) == 0 &&
                strcmp(prices[k].sku, r->instance_type) == 0)
                p = &prices[k];
        if (!p || p->ondemand_usd_hr < 0) {
            res->not_listed++;  /* the API does not list it (now): keep the old row */
            continue;
        }
        rc = gpc_catalog_set_price(cat, r, p->ondemand_usd_hr, p->spot_usd_hr, AZURE_SOURCE, err);
        if (!rc && p->spot_usd_hr < 0 && r->price_spot >= 0) {
            r->price_spot = -1;  /* no Spot meter any more: no stale spot price */
            res->spot_cleared++;
        }
        if (!rc) {
            char note[128];
            snprintf(note, sizeof(note), "fetched %s; price effective %.10s", today, p->effective);
            rc = gpc_catalog_set_notes(cat, r, note, err);
        }
        if (!rc) {
            r->price_ondemand_cny = -1;
            r->price_spot_cny = -1;
            res->updated++;
        }
    }
    if (!rc)
        gpc_info(o->log, "azure: %zu of %zu row(s) updated; %zu not listed by the API "
                 "(kept as they were); %zu spot price(s) removed (no Spot meter)",
                 res->updated, res->rows, res->not_listed, res->spot_cleared);
    free(prices);
    free(regions);
    free(skus);
    return rc;
}
