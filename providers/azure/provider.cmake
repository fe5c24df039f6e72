# Azure: the Retail Prices API for `catalog update` (docs/providers/azure.md).
gpuctl_provider_code(SOURCES prices.c)
