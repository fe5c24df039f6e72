# Azure: plan-only (docs/providers/azure.md): catalog rows, the Retail
# Prices API for `catalog update`, user-data rules and the node script.
gpuctl_provider(azure SOURCES azure.c prices.c NODE_SCRIPT node.sh)
