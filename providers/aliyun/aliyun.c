/* aliyun.c - the aliyun (Alibaba Cloud ECS) provider's table: plan-only
 * (gpuctl cannot create ECS instances yet; its offers come from the catalog
 * rows of providers/aliyun/catalog.csv).  Its prices cannot be refreshed:
 * DescribePrice and DescribeSpotPriceHistory need signed requests with the
 * user's credentials, which come with the provider's API client. */
#include <stddef.h>

#include "gpuctl/provider.h"

const gpc_provider gpc_provider_aliyun = {
    .name = "aliyun",
    .summary = "Alibaba Cloud ECS: plan only (offers and prices from the catalog)",
    .no_refresh_prices = "refreshing prices needs DescribePrice and DescribeSpotPriceHistory "
                         "with Alibaba Cloud credentials; the aliyun provider is not built into "
                         "this gpuctl yet",
};
