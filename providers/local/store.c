/*
 * store.c - the local provider's object storage (store.h): directories
 * under STATE_DIR/store, copied with the engine's incremental directory
 * copy (gpuctl/store.h).  This machine has one region, "local".
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/store.h"
#include "gpuctl/util.h"
#include "local_store.h"

/* The directory of `path` (NULL: the store itself) into out; the store is
 * made (0700) when `make`. */
static int store_dir(void *ctx, const char *region, const char *path, int make, char *out,
                     size_t size, gpc_error *err)
{
    if (region && region[0] && strcmp(region, "local") != 0)
        return gpc_fail(err, GPC_ERR_USAGE, "local: this machine's region is 'local', not '%s'",
                        region);
    const char *root = local_root(ctx);
    size_t rl = strlen(root);
    if (rl < 6 || strcmp(root + rl - 6, "/local") != 0)
        return gpc_fail(err, GPC_ERR_INTERNAL, "local: unexpected root %s", root);
    char store[PATH_MAX];
    if (snprintf(store, sizeof(store), "%.*s/store", (int)(rl - 6), root) >= (int)sizeof(store))
        return gpc_fail(err, GPC_ERR_IO, "local: state directory path too long");
    if (make) {
        int rc = gpc_mkdir_p(store, 0700, err);
        if (rc)
            return rc;
    }
    if (snprintf(out, size, "%s%s%s", store, path ? "/" : "", path ? path : "") >= (int)size)
        return gpc_fail(err, GPC_ERR_USAGE, "local: store path too long for its buffer");
    return 0;
}

int local_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                    gpc_error *err)
{
    return store_dir(ctx, region, path, 1, out, size, err);
}

int local_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                     gpc_store_stats *st, gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 1, dir, sizeof(dir), err);
    return rc ? rc : gpc_store_copy_dir(local_dir, dir, st, err);
}

int local_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                     gpc_store_stats *st, gpc_error *err)
{
    char dir[PATH_MAX];
    memset(st, 0, sizeof(*st));
    int rc = store_dir(ctx, region, path, 0, dir, sizeof(dir), err);
    return rc ? rc : gpc_store_pull_dir(dir, local_dir, st, err);
}

int local_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                     size_t *n, gpc_error *err)
{
    char dir[PATH_MAX];
    *out = NULL;
    *n = 0;
    int rc = store_dir(ctx, region, path, 0, dir, sizeof(dir), err);
    return rc ? rc : gpc_store_list_dir(dir, out, n, err);
}

int local_store_delete(void *ctx, const char *region, const char *path,
                       const char *const *keys, size_t n, gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 0, dir, sizeof(dir), err);
    return rc ? rc : gpc_store_delete_files(dir, keys, n, err);
}

int local_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                       gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 0, dir, sizeof(dir), err);
    return rc ? rc : gpc_store_remove_dir(dir, removed, err);
}
