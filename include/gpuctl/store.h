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
 * `local_dir`, but the files and directories it makes get the modes cp
 * gives (0666 and 0777, less the umask) instead of the store's private
 * 0600 and 0700; a `store` that does not exist yet (nothing pushed) only
 * makes `local_dir`, with *st zeroed.  *st counts as the copy goes, so
 * after an error it says what arrived (each file whole).  Errors as
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

/*
 * A directory store's store_delete: unlink `dir` + "/" + keys[i] for each
 * i < n (a key with no file is skipped), then each directory that leaves
 * empty below `dir`.  Errors: GPC_ERR_INTERNAL (a key that is not a store
 * path), GPC_ERR_IO naming the file.
 */
int gpc_store_delete_files(const char *dir, const char *const *keys, size_t n, gpc_error *err);

/*
 * The content digest of directory `dir`: the hex SHA-256 of the lines
 * "KEY\tSIZE\tSHA256\n" of its regular files (as gpc_store_list_dir sees
 * them: keys relative to `dir`, in bytewise order; SIZE in bytes, decimal;
 * SHA256 the file's, hex) into hex; *files (may be NULL) receives how
 * many.  Two directories with the same digest hold the same files with the
 * same bytes, so a push of one over a mirror of the other moves nothing.
 * Errors: GPC_ERR_USAGE ("DIR: no such directory", "not a directory"),
 * GPC_ERR_IO, GPC_ERR_NOMEM.
 */
int gpc_store_dir_digest(const char *dir, char hex[65], unsigned long *files, gpc_error *err);

/* ---- `gpuctl data` (store.c) ------------------------------------------- */

/* Where a data command runs: the provider (its name; NULL = the default
 * provider, gpc_provider_default) and the region (NULL = the provider's
 * default). Strings borrowed. */
typedef struct gpc_data_where {
    const char *provider;
    const char *region;
} gpc_data_where;

/* gpc_data_push's flags. */
#define GPC_DATA_DELETE 1u   /* mirror: delete the objects of the set that
                                `dir` has no file for (aws s3 sync --delete) */
#define GPC_DATA_GUARD  2u   /* refuse (gpc_data_guard) while a live
                                cluster uses the set with other files than
                                `dir` holds: `gpuctl data push` */

/*
 * Push directory `dir` to data set `name` (data/NAME) of the store:
 * incremental (store_push), then with GPC_DATA_DELETE each object of the
 * set whose key `dir` has no regular file for is deleted (store_delete).
 * *st receives the counts (files_deleted among them); `url` (size bytes,
 * may be NULL) the data set's URL as the nodes name it (store_url).
 * Errors: GPC_ERR_USAGE (a bad name, an unknown provider, one without a
 * store: "provider P has no object storage", GPC_DATA_DELETE on one
 * without store_delete; with GPC_DATA_GUARD, the set in use:
 * gpc_data_guard), what the provider returns.
 */
int gpc_data_push(gpc_session *s, const gpc_data_where *w, const char *dir, const char *name,
                  unsigned flags, gpc_store_stats *st, char *url, size_t size, gpc_error *err);

/* A live cluster that uses a data set (gpc_data_users). */
typedef struct gpc_data_user {
    char cluster[64];   /* its name */
    char digest[65];    /* the content digest (gpc_store_dir_digest) of what
                           its last apply placed in the set, "" when the
                           state does not say (an apply of an earlier
                           gpuctl) */
} gpc_data_user;

/*
 * The live clusters (not destroyed) other than `except` (NULL: none
 * excepted) whose spec pushes a directory to data set `name` in the same
 * store as `w` (the provider's, the store URL of their nodes' region
 * equal to w's): into *out (caller frees with free()), *n of them, in the
 * state's order.  Errors: those of the state and of the provider's
 * store_url.
 */
int gpc_data_users(gpc_session *s, const gpc_data_where *w, const char *name,
                   const char *except, gpc_data_user **out, size_t *n, gpc_error *err);

/*
 * gpc_data_users offline, for plan: without opening the provider or
 * asking its store anything, the same store is the same provider and
 * region (a cluster whose nodes' region the state does not have counts as
 * in w's).  It can name fewer users than gpc_data_users only where two
 * regions share one store (aws with GPUCTL_AWS_BUCKET), which apply then
 * finds.  Errors: GPC_ERR_USAGE (a bad name, an unknown provider, one
 * without a store), the state's.
 */
int gpc_data_users_offline(gpc_session *s, const gpc_data_where *w, const char *name,
                           const char *except, gpc_data_user **out, size_t *n,
                           gpc_error *err);

/*
 * Refuse to change data set `name` while a live cluster uses it
 * (gpc_data_users): for a removal (`dir` NULL) while any does; for a push
 * of directory `dir`, while one does whose last apply placed other files
 * than `dir` holds (by content digest, gpc_store_dir_digest; a user whose
 * digest the state does not have counts as other).  A push of the same
 * files changes nothing under their jobs: allowed, said in an info line on
 * the session's log ("gpuctl: data NAME: DIR holds the files live cluster
 * 'A' uses: nothing under its job changes").  Errors: GPC_ERR_USAGE
 * "refusing to push to|remove data set 'NAME' in the store of P[ region
 * R]: live cluster(s) 'A', 'B' use it ...", naming every such cluster and
 * a destroy command for each ("gpuctl destroy A; gpuctl destroy B"); the
 * digest's (GPC_ERR_IO) and the state's.
 */
int gpc_data_guard(gpc_session *s, const gpc_data_where *w, const char *name,
                   const char *dir, gpc_error *err);

/*
 * The words for the live clusters u[0..n-1] of a refusal: their names
 * quoted ("'a', 'b'") into `names` and a destroy command for each
 * ("gpuctl destroy a; gpuctl destroy b") into `destroys` (each cut short
 * at its size, in bytes, with a NUL).
 */
void gpc_data_users_words(const gpc_data_user *u, size_t n, char *names, size_t names_size,
                          char *destroys, size_t destroys_size);

/*
 * Record in the state, as an event of cluster `cluster_id` (kind "data"),
 * that its apply placed data set `name` with content `digest`
 * (gpc_store_dir_digest), which gpc_data_users reads back.
 */
int gpc_data_record(gpc_session *s, int64_t cluster_id, const char *name, const char *digest,
                    gpc_error *err);

/*
 * The content digest the latest apply (or re-run) of cluster `cluster_id`
 * recorded for its data set `name` (gpc_data_record) into out, "" when
 * none is recorded.  Errors: the state's.
 */
int gpc_data_recorded(gpc_session *s, int64_t cluster_id, const char *name, char out[65],
                      gpc_error *err);

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
 * Refused while a live cluster uses the set (gpc_data_guard).  Errors: as
 * gpc_data_list (GPC_ERR_NOT_FOUND when there was none), GPC_ERR_USAGE
 * (in use).
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
