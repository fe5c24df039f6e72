# Alibaba Cloud: plan-only (docs/providers/aliyun.md): catalog rows,
# user-data rules, the node script and the eRDMA fabric script.
gpuctl_provider(aliyun SOURCES aliyun.c NODE_SCRIPT node.sh FABRIC erdma erdma.sh)
