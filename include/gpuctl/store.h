/*
 * store.h - object storage: `gpuctl data push/ls/rm` over the provider
 * seam's store_* operations (provider.h), and the incremental directory
 * copy that the providers whose store is a directory (local, slurm) share.
 *
 * A data set NAME lives at the key prefix "data/NAME" of a provider's
 * store for a region (docs/cli.md#data).  The engine opens the provider
 * in the session, checks names and paths, and calls the operation; it
 * prints nothing.
 */
#ifndef GPUCTL_STORE_H
#define GPUCTL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/cluster.h"
#include "gpuctl/error.h"
#include "gpuctl/provider.h"

/* Longest store path the engine hands a provider, bytes without the NUL. */
#define GPC_STORE_PATH_MAX 512

/*
 * Is `path` a store path: 1 to GPC_STORE_PATH_MAX bytes of '/'-separated
 * segments, each of letters, digits, '.', '_' and '-', none empty, "." or
 * ".." (so no leading or trailing '/')?  Returns 1 or 0.
 */
int gpc_store_path_ok(const char *path);

/*
 * Is `name` a data set name: 1 to 63 bytes of letters, digits, '.', '_'
 * and '-', starting with a letter or digit?  Returns 1 or 0.
 */
int gpc_data_name_ok(const char *name);

/* ---- directory stores (store_copy.c) ----------------------------------- */

/*
 * Copy every regular file under directory `src` (recursively, symbolic
 * links and other non-regular files not followed nor copied) to `dst` +
 * its path relative to `src`, skipping a file when `dst` has a regular
 * file there of the same size and SHA-256.  Each file is written to
 * "FILE.gpuctl-part" (mode 0600), then renamed over FILE, so a copy
 * interrupted leaves each file whole (old or new); directories are made
 * with mode 0700.  Nothing at `dst` is deleted.  *st is zeroed, then
 * counts the files copied and skipped and the bytes copied.  Errors:
 * GPC_ERR_USAGE (`src` is not a directory), GPC_ERR_IO naming the file,
 * GPC_ERR_NOMEM.  `src` missing: GPC_ERR_USAGE "SRC: no such directory".
 */
int gpc_store_copy_dir(const char *src, const char *dst, gpc_store_stats *st, gpc_error *err);

/*
 * A directory store's pull: gpc_store_copy_dir from `store` to
 * `local_dir`, where a `store` that does not exist yet (nothing pushed)
 * only makes `local_dir` (0700), with *st zeroed.  Errors as
 * gpc_store_copy_dir.
 */
int gpc_store_pull_dir(const char *store, const char *local_dir, gpc_store_stats *st,
                       gpc_error *err);

/*
 * The regular files under directory `dir`, keys relative to it
 * ('/'-separated), sorted bytewise, with size and mtime, into *out (caller
 * frees with free()), *n of them.  A missing `dir`: 0 entries, no error.
 * Errors: GPC_ERR_IO, GPC_ERR_NOMEM (*out NULL, *n 0).
 */
int gpc_store_list_dir(const char *dir, gpc_store_entry **out, size_t *n, gpc_error *err);

/*
 * Remove directory `dir` and everything under it; *removed (may be NULL)
 * receives how many regular files were there.  A missing `dir`: 0, no
 * error.  Errors: GPC_ERR_IO.
 */
int gpc_store_remove_dir(const char *dir, size_t *removed, gpc_error *err);

/* ---- `gpuctl data` (store.c) ------------------------------------------- */

/* Where a data command runs: the provider (its name; NULL = the default
 * provider, gpc_provider_default) and the region (NULL = the provider's
 * default). Strings borrowed. */
typedef struct gpc_data_where {
    const char *provider;
    const char *region;
} gpc_data_where;

/*
 * Push directory `dir` to data set `name` (data/NAME) of the store:
 * incremental (store_push).  *st receives the counts; `url` (size bytes,
 * may be NULL) the data set's URL as the nodes name it (store_url).
 * Errors: GPC_ERR_USAGE (a bad name, an unknown provider, one without a
 * store: "provider P has no object storage"), what the provider returns.
 */
int gpc_data_push(gpc_session *s, const gpc_data_where *w, const char *dir, const char *name,
                  gpc_store_stats *st, char *url, size_t size, gpc_error *err);

/*
 * The objects of data set `name` (keys relative to data/NAME), or with
 * `name` NULL every object under data/ (keys "NAME/FILE").  *out (caller
 * frees with free()) holds *n.  Errors: as gpc_data_push;
 * GPC_ERR_NOT_FOUND "no data set NAME in ..." when `name` has no object.
 */
int gpc_data_list(gpc_session *s, const gpc_data_where *w, const char *name,
                  gpc_store_entry **out, size_t *n, gpc_error *err);

/*
 * Remove every object of data set `name`; *removed receives how many.
 * Errors: as gpc_data_list (GPC_ERR_NOT_FOUND when there was none).
 */
int gpc_data_remove(gpc_session *s, const gpc_data_where *w, const char *name,
                    size_t *removed, gpc_error *err);

/* The provider a gpc_data_where names (its default when NULL), or NULL
 * with err GPC_ERR_USAGE (unknown; no store). */
const gpc_provider *gpc_data_provider(const gpc_data_where *w, gpc_error *err);

/* Comma-separated names of the providers with object storage, "local,
 * aws, slurm" in registry order (a static buffer). */
const char *gpc_data_store_names(void);

/*
 * The hex SHA-256 of the bytes of regular file `path` (not followed when a
 * symbolic link) into hex (64 digits and NUL).  Errors: GPC_ERR_IO naming
 * the path, GPC_ERR_NOMEM.
 */
int gpc_store_file_sha256(const char *path, char hex[65], gpc_error *err);

#endif /* GPUCTL_STORE_H */
