/*
 * store.h - the local provider's object storage (private to
 * providers/local/): a directory, STATE_DIR/store (mode 0700), stands in
 * for a bucket; a store path is a directory below it.  The operations are
 * those of gpc_provider (provider.h, "object storage"); `ctx` is the
 * provider's context.
 */
#ifndef GPUCTL_LOCAL_STORE_H
#define GPUCTL_LOCAL_STORE_H

#include "gpuctl/provider.h"

/* The provider's root directory, "STATE_DIR/local", of its context
 * (local.c); borrowed for the context's life. */
const char *local_root(void *ctx);

int local_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                    gpc_error *err);
int local_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                     gpc_store_stats *st, gpc_error *err);
int local_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                     gpc_store_stats *st, gpc_error *err);
int local_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                     size_t *n, gpc_error *err);
int local_store_delete(void *ctx, const char *region, const char *path,
                       const char *const *keys, size_t n, gpc_error *err);
int local_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                       gpc_error *err);

#endif
