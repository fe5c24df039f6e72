# Azure: plan only; the Retail Prices API for `catalog update`
# (docs/providers/azure.md).
gpuctl_provider(azure PLAN_ONLY SOURCES azure.c prices.c)
