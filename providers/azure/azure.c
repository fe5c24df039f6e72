/* azure.c - the azure provider's table: plan-only (gpuctl cannot create
 * Azure VMs yet; its offers come from the catalog rows of
 * providers/azure/catalog.csv), with the catalog price refresh from the
 * Retail Prices API (prices.c).  docs/providers/azure.md. */
#include <stddef.h>

#include "azure/prices.h"
#include "gpuctl/provider.h"

const gpc_provider gpc_provider_azure = {
    .name = "azure",
    .summary = "Microsoft Azure: plan only (offers and prices from the catalog)",
    .refresh_prices = gpc_azure_refresh_prices,
};
