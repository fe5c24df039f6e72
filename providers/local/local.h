/* local.h - what the local provider (local.c) exposes besides its table. */
#ifndef GPUCTL_LOCAL_H
#define GPUCTL_LOCAL_H

#include <stddef.h>

#include "gpuctl/error.h"
#include "gpuctl/provider.h"

extern const gpc_provider gpc_provider_local;

/*
 * Do what cloud-init does with `userdata` (len bytes, a `#cloud-config`
 * document) in the node directory `dir`: write its `write_files` (paths
 * under /var/lib/gpuctl/ only, mapped into `dir`; `encoding: b64` decoded)
 * and write its `runcmd` list to dir/runcmd.sh.  Any other key, or a path
 * elsewhere, is GPC_ERR_PROVIDER naming it; bad YAML is GPC_ERR_PROVIDER
 * with its line.  create_node runs it on the user-data it makes from the
 * payload; tests/unit/test_local.c runs it on documents of its own.
 */
int gpc_local_cloud_init(const char *dir, const char *userdata, size_t len, gpc_error *err);

#endif /* GPUCTL_LOCAL_H */
