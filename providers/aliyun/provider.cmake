# Alibaba Cloud: plan-only (docs/providers/aliyun.md): catalog rows,
# user-data rules and the node script.
gpuctl_provider(aliyun SOURCES aliyun.c NODE_SCRIPT node.sh)
