/* prices.h - the aws provider's catalog price refresh (prices.c). */
#ifndef GPUCTL_AWS_PRICES_H
#define GPUCTL_AWS_PRICES_H

#include "gpuctl/catalog.h"
#include "gpuctl/provider.h"

/* The aws provider's table (aws.c). */
extern const gpc_provider gpc_provider_aws;

/*
 * The aws provider's refresh_prices (provider.h): the catalog's aws rows
 * (in o->regions when given, else every region) rebuilt from the APIs,
 * through the table's open with `cfg`: DescribeRegions (the credentials'
 * opted-in commercial regions; a region of o->regions it does not list is
 * GPC_ERR_USAGE "aws: region 'X' is not one that DescribeRegions lists
 * for these credentials (A, B)"), then in every region at once
 * DescribeInstanceTypes and DescribeInstanceTypeOfferings of the GPU
 * families (p*, g*), on-demand prices from the Price List (pricelist.h)
 * and spot prices from DescribeSpotPriceHistory (live_prices, lowest
 * zone).  One row per (type, region offering it) whose NVIDIA GPU maps to
 * a model of the GPU table (the model an aws row of that type has, else
 * the one model of the API's GPU name with its memory within 10%), with
 * the API's vCPUs, memory, GPU count and memory (MiB / 1024), fabric efa
 * (networkPerformance Gbit/s) or none, source "aws-api" and the note
 * "fetched YYYY-MM-DD: hardware from DescribeInstanceTypes; on-demand
 * from the Price List (published YYYY-MM-DD); spot from
 * DescribeSpotPriceHistory (lowest zone: ZONE)" ("no on-demand price in
 * the Price List", "no spot price" when missing).  The rows are replaced
 * only once every answer came: res->rows rows written, res->updated with
 * an on-demand price, res->not_listed without one, res->added new,
 * res->removed no longer listed.  Errors: those of open, the EC2 calls and
 * the Price List (GPC_ERR_AUTH without credentials, ...), GPC_ERR_NOMEM.
 * When the provider was not named (o->named == 0), an error before the
 * catalog was touched is a skip: 0, with res->skipped = the message.
 */
int gpc_aws_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                           const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                           gpc_error *err);

#endif /* GPUCTL_AWS_PRICES_H */
