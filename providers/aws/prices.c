/*
 * prices.c - the aws provider's refresh_prices (`gpuctl catalog update`):
 * current spot prices from DescribeSpotPriceHistory (the provider's own
 * live_prices, signed with the user's credentials) for the catalog's aws
 * rows that have a spot price.  On-demand prices stay: they come from the
 * AWS Price List, which gpuctl does not read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/prices.h"
#include "gpuctl/catalog.h"
#include "gpuctl/util.h"

static int in_list(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

/* Ask for the prices; the rows to update are rows[0..n). */
static int fetch(const gpc_provider_config *cfg, gpc_offer *offers, size_t n, gpc_error *err)
{
    const gpc_provider *p = &gpc_provider_aws;
    void *ctx = NULL;
    int rc = p->open(cfg, &ctx, err);
    size_t updated = 0;
    if (!rc) {
        gpc_info(cfg->log, "aws: asking DescribeSpotPriceHistory for %zu row(s)", n);
        rc = p->live_prices(ctx, offers, n, &updated, err);
        p->close(ctx);
    }
    return rc;
}

int gpc_aws_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                           const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                           gpc_error *err)
{
    res->api = "EC2 DescribeSpotPriceHistory (spot prices only)";
    gpc_offer *offers = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*offers));
    size_t *rows = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*rows));
    int rc = !offers || !rows ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    size_t n = 0;
    for (size_t i = 0; !rc && i < cat->n_rows; i++) {
        const gpc_catalog_row *r = &cat->rows[i];
        if (strcmp(r->provider, "aws") != 0 || !*r->region || r->price_spot < 0 ||
            (o->n_regions && !in_list(o->regions, o->n_regions, r->region)))
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
                      "to refresh", o->n_regions ? " in the regions given" : "");
    if (!rc)
        rc = fetch(cfg, offers, n, err);
    if (rc && !o->named) {
        /* not asked by name: no AWS credentials is not an error */
        snprintf(res->skipped, sizeof(res->skipped), "%s", err->msg);
        gpc_info(o->log, "aws: %s (skipped)", err->msg);
        gpc_error_clear(err);
        free(offers);
        free(rows);
        return 0;
    }
    char today[16];
    time_t now = (time_t)gpc_now();
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    for (size_t k = 0; !rc && k < n; k++) {
        gpc_catalog_row *r = &cat->rows[rows[k]];
        res->rows++;
        if (offers[k].price_hourly <= 0) {
            res->not_listed++;
            continue;
        }
        rc = gpc_catalog_set_price(cat, r, -1, offers[k].price_hourly, NULL, err);
        char note[160];
        snprintf(note, sizeof(note), "spot price fetched %s from DescribeSpotPriceHistory "
                 "(lowest zone: %s)", today, offers[k].zone);
        if (!rc)
            rc = gpc_catalog_set_notes(cat, r, note, err);
        if (!rc)
            res->updated++;
    }
    if (!rc)
        gpc_info(o->log, "aws: %zu of %zu spot price(s) updated; %zu not listed by the API "
                 "(kept as they were)", res->updated, res->rows, res->not_listed);
    free(offers);
    free(rows);
    return rc;
}
