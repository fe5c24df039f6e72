/* pricelist.c - see pricelist.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "aws/json_api.h"
#include "aws/pricelist.h"
#include "gpuctl/catalog.h"
#include "gpuctl/log.h"

#define GET_PRODUCTS "AWSPriceListService.GetProducts"
#define PAGES_MAX 1000

static const char *str_at(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The price of one OnDemand term: its "Hrs" dimension, the first with
 * beginRange "0" when there are several. */
static const char *hourly_usd(const cJSON *ondemand)
{
    const char *found = NULL;
    const cJSON *term, *dim;
    cJSON_ArrayForEach(term, ondemand) {
        cJSON_ArrayForEach(dim, cJSON_GetObjectItemCaseSensitive(term, "priceDimensions")) {
            const char *unit = str_at(dim, "unit");
            const char *usd = str_at(cJSON_GetObjectItemCaseSensitive(dim, "pricePerUnit"), "USD");
            if (!unit || strcmp(unit, "Hrs") != 0 || !usd)
                continue;
            const char *begin = str_at(dim, "beginRange");
            if (begin && strcmp(begin, "0") == 0)
                return usd;
            if (!found)
                found = usd;
        }
    }
    return found;
}

int gpc_aws_pricelist_item(const char *text, size_t len, gpc_aws_od_price *out,
                           gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *d = cJSON_ParseWithLength(text, len);
    int rc = 0;
    const cJSON *prod = cJSON_GetObjectItemCaseSensitive(d, "product");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(prod, "attributes");
    const char *type = str_at(attrs, "instanceType"), *region = str_at(attrs, "regionCode");
    const char *sku = str_at(prod, "sku");
    const cJSON *od = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(d, "terms"), "OnDemand");
    const char *usd = hourly_usd(od);
    char *end = NULL;
    double v = usd ? strtod(usd, &end) : -1;
    if (!cJSON_IsObject(d))
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: a Price List item is not a JSON object");
    else if (!type || !*type || !region || !*region)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: a Price List item (sku %s) has no "
                      "product.attributes.%s", sku ? sku : "none",
                      !type || !*type ? "instanceType" : "regionCode");
    else if (!od)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the Price List item of %s in %s has no "
                      "OnDemand term", type, region);
    else if (!usd)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the Price List item of %s in %s has no "
                      "hourly (\"Hrs\") USD price", type, region);
    else if (end == usd || *end || !(v >= 0) || v > GPC_CATALOG_PRICE_MAX)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the Price List item of %s in %s has the "
                      "price '%s' USD/hour (expected a decimal number from 0 to %.0f)", type,
                      region, usd, GPC_CATALOG_PRICE_MAX);
    if (!rc) {
        snprintf(out->instance_type, sizeof(out->instance_type), "%s", type);
        snprintf(out->region, sizeof(out->region), "%s", region);
        snprintf(out->sku, sizeof(out->sku), "%s", sku ? sku : "");
        const char *pub = str_at(d, "publicationDate");
        snprintf(out->published, sizeof(out->published), "%s", pub ? pub : "");
        out->usd_per_hour = v;
    }
    cJSON_Delete(d);
    return rc;
}

static void add_filter(cJSON *filters, const char *field, const char *value)
{
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "Type", "TERM_MATCH");
    cJSON_AddStringToObject(f, "Field", field);
    cJSON_AddStringToObject(f, "Value", value);
    cJSON_AddItemToArray(filters, f);
}

/* Add p to v unless its region is there; a different second price is said. */
static int keep(gpc_ec2 *e, const gpc_aws_od_price *p, gpc_aws_od_price **v, size_t *n,
                gpc_error *err)
{
    for (size_t i = 0; i < *n; i++) {
        const gpc_aws_od_price *q = &(*v)[i];
        if (strcmp(q->instance_type, p->instance_type) != 0 || strcmp(q->region, p->region) != 0)
            continue;
        if (q->usd_per_hour != p->usd_per_hour)
            gpc_info(e->log, "aws: the Price List lists %s in %s twice (sku %s: %.6g, sku %s: "
                     "%.6g USD/hour); using the first", p->instance_type, p->region, q->sku,
                     q->usd_per_hour, p->sku, p->usd_per_hour);
        return 0;
    }
    gpc_aws_od_price *nv = realloc(*v, (*n + 1) * sizeof(**v));
    if (!nv)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    *v = nv;
    nv[(*n)++] = *p;
    return 0;
}

int gpc_aws_pricelist_ondemand(gpc_ec2 *e, const char *instance_type, const char *region,
                               gpc_aws_od_price **v, size_t *n, gpc_error *err)
{
    cJSON *req = cJSON_CreateObject();
    cJSON *filters = cJSON_AddArrayToObject(req, "Filters");
    if (!req || !filters) {
        cJSON_Delete(req);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(req, "ServiceCode", "AmazonEC2");
    cJSON_AddStringToObject(req, "FormatVersion", "aws_v1");
    cJSON_AddNumberToObject(req, "MaxResults", 100);
    add_filter(filters, "instanceType", instance_type);
    add_filter(filters, "operatingSystem", "Linux");
    add_filter(filters, "tenancy", "Shared");
    add_filter(filters, "preInstalledSw", "NA");
    add_filter(filters, "capacitystatus", "Used");
    add_filter(filters, "locationType", "AWS Region");
    if (region)
        add_filter(filters, "regionCode", region);
    int rc = 0;
    const char *where = region ? region : "us-east-1";
    for (int page = 0; !rc; page++) {
        if (page == PAGES_MAX) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the Price List answered more than %d "
                          "pages for %s", PAGES_MAX, instance_type);
            break;
        }
        cJSON *out = NULL;
        rc = gpc_aws_json_call(e, GPC_AWS_PRICING, where, GET_PRODUCTS, req, &out, err);
        if (rc)
            break;
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(out, "PriceList"), *it;
        if (!cJSON_IsArray(list))
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: GetProducts for %s answered no PriceList "
                          "array", instance_type);
        cJSON_ArrayForEach(it, list) {
            if (rc)
                break;
            const char *text = cJSON_GetStringValue(it);
            gpc_aws_od_price p;
            if (!text)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: GetProducts for %s answered a "
                              "PriceList item that is not a string", instance_type);
            else
                rc = gpc_aws_pricelist_item(text, strlen(text), &p, err);
            if (!rc && strcmp(p.instance_type, instance_type) != 0)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: GetProducts for %s answered the "
                              "price of %s", instance_type, p.instance_type);
            if (!rc)
                rc = keep(e, &p, v, n, err);
        }
        const char *next = str_at(out, "NextToken");
        int more = !rc && next && *next;
        if (more) {
            cJSON_DeleteItemFromObjectCaseSensitive(req, "NextToken");
            if (!cJSON_AddStringToObject(req, "NextToken", next))
                rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        }
        cJSON_Delete(out);
        if (!more)
            break;
    }
    cJSON_Delete(req);
    return rc;
}
