/* azure.c - the Azure provider table: plan-only (docs/providers/azure.md).
 *
 * gpuctl plans Azure offers from the catalog rows of
 * providers/azure/catalog.csv and refreshes their prices from the Retail
 * Prices API (prices.c), but cannot create VMs yet: the table has no open
 * or create_node, and GPC_CAP_PLAN_ONLY tells the engine so (apply of an
 * Azure offer is refused, naming the providers that can create nodes). */
#include <stddef.h>
#include <string.h>

#include "azure/prices.h"
#include "gpuctl/provider.h"

/* `osProfile.customData` of VirtualMachines - Create: base64, at most 65535
 * bytes once decoded (Azure Compute REST API 2024-07-01).  cloud-init on
 * Azure reads gzip-compressed custom data like any user-data (cloud-init
 * docs, "User-data formats": gzip compressed content). */
extern const unsigned char gpc_node_script_azure[];
static const gpc_userdata_rules azure_userdata = {
    .provider = "azure", .max_raw = 65535, .gzip_ok = 1, .base64 = 1,
    .node_script = (const char *)gpc_node_script_azure,
};

/* Availability zones are numbered 1, 2, 3 in every region that has them
 * (learn.microsoft.com: "Availability zones overview"); gpuctl has taken
 * any string of digits as such a zone. */
static int azure_zone_in_every_region(const char *zone)
{
    return strspn(zone, "0123456789") == strlen(zone);
}

const gpc_provider gpc_provider_azure = {
    .name = "azure",
    .summary = "Microsoft Azure VMs: plans from the catalog only; cannot create nodes yet",
    .caps = GPC_CAP_PLAN_ONLY | GPC_CAP_SPOT | GPC_CAP_INFINIBAND,
    .userdata = &azure_userdata,
    .refresh_prices = gpc_azure_refresh_prices,
    .zone_in_every_region = azure_zone_in_every_region,
};
