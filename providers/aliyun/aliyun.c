/* aliyun.c - the Alibaba Cloud (ECS) provider table: plan-only
 * (docs/providers/aliyun.md).
 *
 * gpuctl plans ECS offers from the catalog rows of
 * providers/aliyun/catalog.csv (their prices cannot be refreshed:
 * DescribePrice and DescribeSpotPriceHistory need signed requests) but
 * cannot create instances yet: the table has no open or create_node, and
 * GPC_CAP_PLAN_ONLY tells the engine so (apply of an ECS offer is refused,
 * naming the providers that can create nodes). */
#include <stddef.h>

#include "gpuctl/provider.h"

/* ECS RunInstances `UserData`: base64, at most 32 KB (32768 bytes) before
 * encoding (ECS API Reference, RunInstances; older pages said 16 KB).
 * cloud-init takes gzip-compressed data (cloud-init docs, "User-data
 * formats": gzip compressed content). */
extern const unsigned char gpc_node_script_aliyun[];
static const gpc_userdata_rules aliyun_userdata = {
    .provider = "aliyun", .max_raw = 32768, .gzip_ok = 1, .base64 = 1,
    .node_script = (const char *)gpc_node_script_aliyun,
};

/* eRDMA's environment (erdma.sh, embedded from provider.cmake's FABRIC). */
extern const unsigned char gpc_fabric_script_aliyun_erdma[];
static const gpc_fabric_script aliyun_fabrics[] = {
    {"erdma", (const char *)gpc_fabric_script_aliyun_erdma},
    {NULL, NULL},
};

const gpc_provider gpc_provider_aliyun = {
    .name = "aliyun",
    .summary = "Alibaba Cloud ECS: plans from the catalog only; cannot create nodes yet",
    .caps = GPC_CAP_PLAN_ONLY | GPC_CAP_SPOT | GPC_CAP_ERDMA,
    .userdata = &aliyun_userdata,
    .fabrics = aliyun_fabrics,
    .no_refresh_prices = "refreshing prices needs DescribePrice and DescribeSpotPriceHistory "
                         "with Alibaba Cloud credentials; the aliyun provider is not built into "
                         "this gpuctl yet",
};
