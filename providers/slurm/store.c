/*
 * store.c - the slurm provider's object storage (provider.h, "object
 * storage"): a directory on the Slurm cluster's shared filesystem,
 * JOB_DIR/store (mode 0700), which the login node and every compute node
 * see under the same path; a store path is a directory below it.  The
 * region is the Slurm cluster's name ([slurm "NAME"]); none given: the
 * only one configured.  Built for a cluster gpuctl runs on (login =
 * local), with the engine's incremental directory copy (gpuctl/store.h);
 * over ssh it is refused, naming why.  docs/providers/slurm.md.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/store.h"
#include "gpuctl/util.h"
#include "slurm_internal.h"

/* The directory of `path` in the store of site `region` into out (PATH_MAX
 * bytes); the store is made (0700) when `make`. */
static int store_dir(slurm_ctx *c, const char *region, const char *path, int make, char *out,
                     gpc_error *err)
{
    const slurm_site *s = NULL;
    if (region && region[0]) {
        s = slurm_site_find(c, region);
        if (!s)
            return gpc_fail(err, GPC_ERR_USAGE, "slurm: no Slurm cluster '%s' in gpuctl's "
                            "config file (a [slurm \"%s\"] section; docs/providers/slurm.md)",
                            region, region);
    } else if (c->n_sites == 1) {
        s = &c->sites[0];
    } else if (c->n_sites == 0) {
        return gpc_fail(err, GPC_ERR_USAGE, "slurm: no Slurm cluster is configured: add a "
                        "[slurm \"NAME\"] section to gpuctl's config file "
                        "(docs/providers/slurm.md)");
    } else {
        return gpc_fail(err, GPC_ERR_USAGE, "slurm: %zu Slurm clusters are configured; name "
                        "one with --region", c->n_sites);
    }
    if (!s->local)
        return gpc_fail(err, GPC_ERR_USAGE, "slurm: the store of Slurm cluster '%s' is on its "
                        "shared filesystem, which gpuctl reaches only when it runs on a login "
                        "node (login = local); over ssh (login = %s) it is not supported yet",
                        s->name, s->login);
    char base[PATH_MAX];
    if (strncmp(s->job_dir, "~/", 2) == 0) {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
            return gpc_fail(err, GPC_ERR_USAGE, "slurm: job_dir %s: HOME is not set to an "
                            "absolute path", s->job_dir);
        if (snprintf(base, sizeof(base), "%s/%s/store", home, s->job_dir + 2) >=
            (int)sizeof(base))
            return gpc_fail(err, GPC_ERR_IO, "slurm: job_dir path too long");
    } else if (snprintf(base, sizeof(base), "%s/store", s->job_dir) >= (int)sizeof(base)) {
        return gpc_fail(err, GPC_ERR_IO, "slurm: job_dir path too long");
    }
    if (make) {
        int rc = gpc_mkdir_p(base, 0700, err);
        if (rc)
            return rc;
    }
    if (snprintf(out, PATH_MAX, "%s/%s", base, path) >= PATH_MAX)
        return gpc_fail(err, GPC_ERR_IO, "slurm: store path too long");
    return 0;
}

int slurm_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                    gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 1, dir, err);
    if (!rc && snprintf(out, size, "%s", dir) >= (int)size)
        rc = gpc_fail(err, GPC_ERR_USAGE, "slurm: store path too long for its buffer");
    return rc;
}

int slurm_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                     gpc_store_stats *st, gpc_error *err)
{
    char dir[PATH_MAX];
    memset(st, 0, sizeof(*st));
    int rc = store_dir(ctx, region, path, 1, dir, err);
    return rc ? rc : gpc_store_copy_dir(local_dir, dir, st, err);
}

int slurm_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                     gpc_store_stats *st, gpc_error *err)
{
    char dir[PATH_MAX];
    memset(st, 0, sizeof(*st));
    int rc = store_dir(ctx, region, path, 0, dir, err);
    return rc ? rc : gpc_store_pull_dir(dir, local_dir, st, err);
}

int slurm_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                     size_t *n, gpc_error *err)
{
    char dir[PATH_MAX];
    *out = NULL;
    *n = 0;
    int rc = store_dir(ctx, region, path, 0, dir, err);
    return rc ? rc : gpc_store_list_dir(dir, out, n, err);
}

int slurm_store_delete(void *ctx, const char *region, const char *path,
                       const char *const *keys, size_t n, gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 0, dir, err);
    return rc ? rc : gpc_store_delete_files(dir, keys, n, err);
}

int slurm_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                       gpc_error *err)
{
    char dir[PATH_MAX];
    int rc = store_dir(ctx, region, path, 0, dir, err);
    return rc ? rc : gpc_store_remove_dir(dir, removed, err);
}
