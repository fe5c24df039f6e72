/*
 * prices.h - the Azure Retail Prices API client (public, no
 * credentials): Linux on-demand and Spot USD/hour for VM sizes by region.
 *
 * For each region it sends
 *   GET ENDPOINT?$filter=serviceName eq 'Virtual Machines' and
 *       priceType eq 'Consumption' and armRegionName eq 'REGION' and
 *       (armSkuName eq 'A' or armSkuName eq 'B' ...)
 * (percent-encoded), splitting the SKUs over several requests so that no
 * URL passes GPC_AZURE_PRICES_URL_MAX characters, and follows NextPageLink
 * until it is null or empty or a page has no items (at most
 * GPC_AZURE_PRICES_MAX_PAGES pages per request).
 *
 * Rows are chosen by the rules of the shared Azure reference (azure.md §5):
 *   - type "Consumption" only (DevTestConsumption and Reservation are not);
 *   - productName ending in " Windows" is skipped;
 *   - skuName or meterName containing "Low Priority" is skipped;
 *   - unitOfMeasure must be "1 Hour";
 *   - Spot: both skuName and meterName contain "Spot"; on-demand: neither
 *     does (a row with "Spot" in only one of them is skipped);
 *   - several candidates: the latest effectiveStartDate wins (the first
 *     seen on a tie);
 *   - the price is retailPrice.
 * Rows are matched to the requested SKU and region case-insensitively.
 */
#ifndef GPUCTL_AZURE_PRICES_H
#define GPUCTL_AZURE_PRICES_H

#include <stddef.h>

#include "gpuctl/catalog.h"
#include "gpuctl/error.h"
#include "gpuctl/http.h"
#include "gpuctl/provider.h"

#define GPC_AZURE_PRICES_ENDPOINT  "https://prices.azure.com/api/retail/prices"
#define GPC_AZURE_PRICES_URL_MAX   2000 /* characters per request URL */
#define GPC_AZURE_PRICES_MAX_PAGES 100  /* pages followed per request */

/* One (region, VM size). */
typedef struct gpc_azure_price {
    char region[48];         /* as requested, e.g. "eastus" */
    char sku[96];            /* as requested, e.g. "Standard_ND96isr_H100_v5" */
    double ondemand_usd_hr;  /* Linux pay-as-you-go, USD/hour; -1 = no row */
    double spot_usd_hr;      /* Linux Spot, USD/hour; -1 = no row */
    char effective[40];      /* effectiveStartDate of the on-demand row chosen,
                                or of the Spot row when there is no on-demand
                                one; "" when neither was found */
} gpc_azure_price;

/*
 * Fetch prices for every (region, sku) pair.
 *
 * endpoint: the API URL, NULL = GPC_AZURE_PRICES_ENDPOINT (tests pass a
 * local one); it may already hold a query (e.g. "?api-version=...").
 * regions/skus: ARM names (letters, digits, '_', '-', '.'; shorter than the
 * struct fields).  opts: passed to gpc_http_send(); NULL = defaults; its
 * `what` defaults to "azure retail prices".
 *
 * On success *out holds n_regions * n_skus entries, region-major in the
 * order given (entry r * n_skus + s is regions[r], skus[s]), every one
 * present even when no price was found; the caller frees *out with free().
 * With no regions or no SKUs, *out = NULL and *n = 0 and nothing is sent.
 *
 * Errors (*out = NULL, *n = 0):
 *   GPC_ERR_USAGE     a region or SKU that is empty, too long or holds
 *                     other characters;
 *   GPC_ERR_PROVIDER  from gpc_http_send() (HTTP status, transport, body
 *                     limit), or "azure retail prices: response is not JSON
 *                     (page N)", "...: response has no Items array (page N)",
 *                     "...: item N of page P is not an object",
 *                     "...: 'SKU' in REGION is priced in 'EUR', not USD",
 *                     "...: more than 100 pages for REGION";
 *   GPC_ERR_NOMEM     out of memory.
 * Page numbers count from 1 within each request (batch of SKUs).
 */
int gpc_azure_retail_prices(const char *endpoint, const char *const *regions,
                            size_t n_regions, const char *const *skus, size_t n_skus,
                            const gpc_http_opts *opts, gpc_azure_price **out, size_t *n,
                            gpc_error *err);

/*
 * The azure provider's refresh_prices (provider.h): new on-demand and Spot
 * prices for the catalog's azure rows (narrowed by o->regions) from the
 * Retail Prices API at o->endpoint, else $GPUCTL_AZURE_PRICES_ENDPOINT
 * when set and not empty, else GPC_AZURE_PRICES_ENDPOINT.  A listed row
 * gets both prices (a Spot price the API no longer lists is removed), the
 * source key "azure-retail-api", no CNY figures and the note "fetched
 * YYYY-MM-DD; price effective YYYY-MM-DD"; others are kept.  cfg unused.
 * Errors: GPC_ERR_USAGE "azure: the catalog has no Azure rows[ in the
 * regions given] to refresh", those of gpc_azure_retail_prices, and
 * GPC_ERR_PROVIDER for a price out of the catalog's range.
 */
int gpc_azure_refresh_prices(const gpc_provider_config *cfg, gpc_catalog *cat,
                             const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                             gpc_error *err);

#endif /* GPUCTL_AZURE_PRICES_H */
