/* prices.h - the aws provider's catalog price refresh (prices.c). */
#ifndef GPUCTL_AWS_PRICES_H
#define GPUCTL_AWS_PRICES_H

#include "gpuctl/catalog.h"
#include "gpuctl/provider.h"

/* The aws provider's table (aws.c). */
extern const gpc_provider gpc_provider_aws;

/*
 * The aws provider's refresh_prices (provider.h): the current spot price
 * (the lowest of the region's zones, DescribeSpotPriceHistory through the
 * table's open and live_prices with `cfg`) for each aws row of `cat` with
 * a region and a spot price, narrowed by o->regions.  A row the API prices
 * gets that spot price, no CNY spot figure and the note "spot price
 * fetched YYYY-MM-DD from DescribeSpotPriceHistory (lowest zone: ZONE)";
 * on-demand prices are kept.  Errors: GPC_ERR_USAGE "aws: the catalog has
 * no AWS rows with spot prices[ in the regions given] to refresh", those
 * of open and live_prices (GPC_ERR_AUTH without credentials, ...),
 * GPC_ERR_PROVIDER for a price out of the catalog's range, GPC_ERR_NOMEM.
 * When the provider was not named (o->named == 0), any error is a skip:
 * 0, with res->skipped = the message.
 */
int gpc_aws_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                           const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                           gpc_error *err);

#endif /* GPUCTL_AWS_PRICES_H */
