/*
 * pricelist.h - on-demand EC2 prices from the AWS Price List Query API
 * (private to providers/aws/; pricelist.c).
 *
 * GetProducts (AWS Price List Service API Reference; botocore's
 * data/pricing/2017-10-15/service-2.json and examples-1.json): input
 * {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults":
 * 100, "Filters": [{"Type": "TERM_MATCH", "Field": F, "Value": V}, ...],
 * "NextToken": T}; answer {"FormatVersion", "NextToken" while more pages
 * remain, "PriceList": [strings]}, each string a JSON product document:
 *   {"product": {"productFamily", "attributes": {"instanceType",
 *    "regionCode", "operatingSystem", "tenancy", ...}, "sku"},
 *    "serviceCode": "AmazonEC2",
 *    "terms": {"OnDemand": {"SKU.OFFER": {"priceDimensions":
 *      {"SKU.OFFER.RATE": {"unit": "Hrs", "beginRange": "0",
 *       "pricePerUnit": {"USD": "55.0400000000"}, ...}}, ...}},
 *     "Reserved": {...}}, "version", "publicationDate"}
 * The on-demand hourly price is the OnDemand term's price dimension with
 * unit "Hrs" (Reserved terms are not read).
 */
#ifndef GPUCTL_AWS_PRICELIST_H
#define GPUCTL_AWS_PRICELIST_H

#include <stddef.h>

#include "aws/ec2.h"
#include "gpuctl/error.h"

/* One on-demand price of the Price List. */
typedef struct gpc_aws_od_price {
    char instance_type[64];  /* product.attributes.instanceType */
    char region[48];         /* product.attributes.regionCode */
    char sku[32];            /* product.sku */
    char published[32];      /* publicationDate, "2026-12-01T00:35:12Z"; "" when absent */
    double usd_per_hour;     /* pricePerUnit.USD of the OnDemand "Hrs" dimension, >= 0 */
} gpc_aws_od_price;

/*
 * Read one PriceList item (`text`, `len` bytes of JSON) into *out.
 * Errors: GPC_ERR_PROVIDER "aws: a Price List item ...: WHAT" for text that
 * is not a JSON object, a missing product.attributes.instanceType or
 * regionCode, no OnDemand term, no price dimension with unit "Hrs", or a
 * pricePerUnit.USD that is not a decimal number >= 0 (or above
 * 1,000,000).  Several OnDemand "Hrs" dimensions: the first with
 * beginRange "0".
 */
int gpc_aws_pricelist_item(const char *text, size_t len, gpc_aws_od_price *out,
                           gpc_error *err);

/*
 * The on-demand prices of `instance_type` for Linux, shared tenancy, no
 * pre-installed software, capacitystatus Used (the price of an instance
 * run on demand, not of a capacity reservation), in AWS Regions
 * (locationType "AWS Region": Local and Wavelength Zones left out), in
 * `region` only when not NULL: GetProducts with those TERM_MATCH filters
 * (instanceType, operatingSystem=Linux, tenancy=Shared, preInstalledSw=NA,
 * capacitystatus=Used, locationType=AWS Region[, regionCode]), following
 * NextToken.  Appends one entry per region to *v (realloc'd; *n entries;
 * the caller frees *v, also after an error); a region listed twice keeps
 * its first price (a second, different one is said through e->log).
 * Errors: those of gpc_aws_json_call and gpc_aws_pricelist_item,
 * GPC_ERR_PROVIDER for an answer without a PriceList array or more than
 * 1000 pages, GPC_ERR_NOMEM.
 */
int gpc_aws_pricelist_ondemand(gpc_ec2 *e, const char *instance_type, const char *region,
                               gpc_aws_od_price **v, size_t *n, gpc_error *err);

#endif /* GPUCTL_AWS_PRICELIST_H */
