/*
 * live_prices.c - the aws provider's live_prices operation: current spot
 * prices from DescribeSpotPriceHistory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/aws_internal.h"
#include "gpuctl/clock.h"

/* ---- live prices and check -------------------------------------------------- */

typedef struct spot_acc {
    gpc_offer *offers;
    size_t n;
    const char *region;
    double *best;       /* per offer, lowest live price seen (0 = none) */
} spot_acc;

static int take_price(void *arg, xmlNode *it, gpc_error *err)
{
    (void)err;
    spot_acc *a = arg;
    char type[64], zone[48], price[32];
    gpc_xml_text(it, "instanceType", type, sizeof(type));
    gpc_xml_text(it, "availabilityZone", zone, sizeof(zone));
    double p = strtod(gpc_xml_text(it, "spotPrice", price, sizeof(price)), NULL);
    if (p <= 0)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        gpc_offer *o = &a->offers[i];
        if (!o->spot || strcmp(o->provider, "aws") != 0 || strcmp(o->region, a->region) != 0 ||
            strcmp(o->instance_type, type) != 0)
            continue;
        if (a->best[i] == 0 || p < a->best[i]) {
            a->best[i] = p;
            snprintf(o->zone, sizeof(o->zone), "%s", zone);
        }
    }
    return 0;
}

/* One region's DescribeSpotPriceHistory: every spot type asked there. */
typedef struct spot_region {
    const char *region;
    gpc_ec2_params base;    /* without NextToken */
    char token[2048];       /* the next page's, "" when done */
    unsigned n_types;
    int done;
} spot_region;

/*
 * Live spot prices (aws.md 2.6): DescribeSpotPriceHistory with StartTime =
 * EndTime = now gives the current price per zone.  The regions are asked
 * at once (one batch of calls per page round); each offer takes the
 * lowest price of its region's zones, and that zone.
 */
int aws_live_prices(void *ctx, gpc_offer *offers, size_t n, size_t *updated,
                    gpc_error *err)
{
    aws_ctx *c = ctx;
    *updated = 0;
    double *best = calloc(n ? n : 1, sizeof(double));
    spot_region *rs = calloc(n ? n : 1, sizeof(*rs));
    gpc_ec2_batch_item *items = calloc(n ? n : 1, sizeof(*items));
    gpc_ec2_params *pages = calloc(n ? n : 1, sizeof(*pages));
    if (!best || !rs || !items || !pages) {
        free(best);
        free(rs);
        free(items);
        free(pages);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    char now[32];
    time_t t = (time_t)gpc_now();
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!offers[i].spot || strcmp(offers[i].provider, "aws") != 0)
            continue;
        size_t r = 0;
        while (r < nr && strcmp(rs[r].region, offers[i].region) != 0)
            r++;
        if (r == nr) {
            rs[nr].region = offers[i].region;
            gpc_ec2_params_init(&rs[nr].base);
            nr++;
        }
        int dup = 0; /* each type once per region */
        for (size_t q = 0; q < i && !dup; q++)
            dup = offers[q].spot && strcmp(offers[q].provider, "aws") == 0 &&
                  strcmp(offers[q].region, offers[i].region) == 0 &&
                  strcmp(offers[q].instance_type, offers[i].instance_type) == 0;
        if (!dup)
            gpc_ec2_param(&rs[r].base, offers[i].instance_type, "InstanceType.%u",
                          ++rs[r].n_types);
    }
    for (size_t r = 0; r < nr; r++) {
        gpc_ec2_param(&rs[r].base, "Linux/UNIX", "ProductDescription.1");
        gpc_ec2_param(&rs[r].base, now, "StartTime");
        gpc_ec2_param(&rs[r].base, now, "EndTime");
    }
    int rc = 0;
    for (int round = 0; !rc && round < 1000; round++) {
        size_t k = 0;
        for (size_t r = 0; r < nr; r++) {
            if (rs[r].done)
                continue;
            gpc_ec2_params_init(&pages[k]);
            gpc_buf_adds(&pages[k].body, gpc_buf_str(&rs[r].base.body), NULL);
            pages[k].failed = rs[r].base.failed;
            if (rs[r].token[0])
                gpc_ec2_param(&pages[k], rs[r].token, "NextToken");
            items[k] = (gpc_ec2_batch_item){.region = rs[r].region,
                                            .action = "DescribeSpotPriceHistory",
                                            .params = &pages[k]};
            k++;
        }
        if (k == 0)
            break;
        rc = gpc_ec2_call_many(&c->ec2, items, k, err);
        for (size_t j = 0; j < k; j++) {
            size_t r = 0;
            while (rs[r].region != items[j].region)
                r++;
            xmlNode *root = items[j].doc ? xmlDocGetRootElement(items[j].doc) : NULL;
            spot_acc a = {.offers = offers, .n = n, .region = rs[r].region, .best = best};
            for (xmlNode *it = gpc_xml_items(root, "spotPriceHistorySet"); it;
                 it = gpc_xml_next(it))
                take_price(&a, it, NULL);
            gpc_xml_text(root, "nextToken", rs[r].token, sizeof(rs[r].token));
            rs[r].done = !root || !rs[r].token[0];
            xmlFreeDoc(items[j].doc);
            gpc_ec2_params_free(&pages[j]);
        }
    }
    for (size_t i = 0; !rc && i < n; i++)
        if (best[i] > 0) {
            offers[i].price_hourly = best[i];
            (*updated)++;
        }
    for (size_t r = 0; r < nr; r++)
        gpc_ec2_params_free(&rs[r].base);
    free(best);
    free(rs);
    free(items);
    free(pages);
    return rc;
}
