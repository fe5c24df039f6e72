# local: processes on this machine (docs/providers/local.md).
gpuctl_provider(local DEFAULT SOURCES local.c store.c NODE_SCRIPT node.sh)
