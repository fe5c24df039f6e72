/* azure.c - the azure provider's table: plan-only (gpuctl cannot create
 * Azure VMs yet; its offers come from the catalog rows of
 * providers/azure/catalog.csv), with the catalog price refresh from the
 * Retail Prices API (prices.c).  docs/providers/azure.md. */
#include <stddef.h>
#include <string.h>

#include "azure/prices.h"
#include "gpuctl/provider.h"

/* Availability zones are numbered 1, 2, 3 in every region that has them
 * (learn.microsoft.com: "Availability zones overview"); gpuctl has taken
 * any string of digits as such a zone. */
static int azure_zone_in_every_region(const char *zone)
{
    return strspn(zone, "0123456789") == strlen(zone);
}

const gpc_provider gpc_provider_azure = {
    .name = "azure",
    .summary = "Microsoft Azure: plan only (offers and prices from the catalog)",
    .refresh_prices = gpc_azure_refresh_prices,
    .zone_in_every_region = azure_zone_in_every_region,
};
