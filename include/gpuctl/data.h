/*
 * data.h - the spec's `data` (spec.h, gpc_data_src) at plan and apply:
 * where each data set sits, what placing it implies, and the placement
 * itself, before the nodes start (docs/spec.md#data).
 *
 * The contract with the nodes: every node sees data set NAME at
 * $GPUCTL_DATA_DIR/NAME (a directory), before `setup` runs.
 *   - A local directory is pushed (incremental: only files whose size or
 *     SHA-256 differ move; gpc_data_push) to data/NAME in the store of the
 *     chosen offer's provider and region.
 *   - On nodes that see this machine's files (local; slurm whose login
 *     node this is), GPUCTL_DATA_DIR is the store's data/ directory
 *     itself: the nodes read the pushed copy in place, a snapshot that a
 *     later edit of the source does not change under a running job.
 *   - Elsewhere (clouds) GPUCTL_DATA_DIR is $GPUCTL_HOME/data on the node
 *     (/var/lib/gpuctl/data), and the node fetches each data set's URL
 *     (the store's, or the spec's own s3:// URL, used where it is) into
 *     it with its node script's gpuctl_md_store_get URL DIR.
 */
#ifndef GPUCTL_DATA_H
#define GPUCTL_DATA_H

#include <stddef.h>

#include "gpuctl/cluster.h"
#include "gpuctl/error.h"
#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "gpuctl/store.h"

struct cJSON;

/* What the nodes of one apply get of the spec's data sets (owned; free
 * with gpc_data_placed_free). */
typedef struct gpc_data_placed {
    char *dir;      /* GPUCTL_DATA_DIR on the node: an absolute directory,
                       or "" for $GPUCTL_HOME/data on the node */
    int fetch;      /* 1: the node fetches urls[i] into dir/names[i]; 0:
                       dir already holds every data set */
    char **names;   /* the data sets, in the spec's order */
    char **urls;    /* where each is: a store URL (s3://BUCKET/data/NAME,
                       the spec's own URL) or, with fetch 0, a directory */
    char **digests; /* each pushed set's content digest
                       (gpc_store_dir_digest), "" for a URL */
    size_t n;
} gpc_data_placed;

/* Free what *d holds and zero it (NULL fine). */
void gpc_data_placed_free(gpc_data_placed *d);

/*
 * What apply refuses of the spec's data for `offer` (the chosen one),
 * known offline: an offer on a provider without an object store (a
 * plan-only one) for a spec with any data set, and a source URL whose
 * scheme is not the store of the offer's provider (GPC_ERR_SPEC
 * "FILE:LINE:COL: data.NAME: ...", at the first data set for the
 * former).
 * The directories themselves are judged by gpc_spec_check_paths.
 */
int gpc_data_check_offer(const gpc_spec *spec, const gpc_offer *offer, gpc_error *err);

/*
 * What gpc_data_place refuses, known offline (plan, apply --dry-run, and
 * apply before anything is made): each data set given as a directory
 * that other live clusters use in the store of `at` (its provider and
 * region: the chosen offer, or where the cluster's nodes are for a
 * re-run) with other content than the directory holds now, by content
 * digest (gpc_data_users_offline: neither the provider nor its store is
 * asked anything).  0 when the spec has no data or `at` is on a provider
 * without a store (gpc_data_check_offer's to refuse).  Errors: the same
 * GPC_ERR_USAGE "FILE:LINE:COL: data.NAME: live cluster 'Y' uses ..." as
 * gpc_data_place, the digest's (GPC_ERR_IO), the state's.
 */
int gpc_data_check_place(gpc_session *s, const gpc_spec *spec, const gpc_offer *at,
                         gpc_error *err);

/*
 * Place the spec's data sets for nodes of `offer` on provider `pv` (the
 * offer's, opened in the session), `shares_files` saying whether those
 * nodes see this machine's files (gpc_lc_offer_shares): mirror each local
 * directory to data/NAME in the store of the offer's region (a push, then
 * the objects the directory has no file for deleted; one info line per
 * data set on the session's log: files sent, bytes, unchanged, deleted,
 * where), and fill *out (zeroed first; the caller frees it).
 * Before anything is pushed, each set is refused that other live
 * clusters (not spec->name: a cluster's own re-apply may change its sets)
 * use in the same store with other content (gpc_data_users, by content
 * digest): GPC_ERR_USAGE "FILE:LINE:COL: data.NAME: live cluster 'Y' uses
 * ..." (or "live clusters 'Y', 'Z' use ..."), naming each and a destroy
 * command for each ("gpuctl destroy Y; gpuctl destroy Z").  The same content is shared: nothing moves.
 * Errors: those of gpc_data_check_offer, gpc_data_push (the store's), and
 * GPC_ERR_USAGE for a provider without a store.
 */
int gpc_data_place(gpc_session *s, const gpc_open_provider *pv, const gpc_spec *spec,
                   const gpc_offer *offer, int shares_files, gpc_data_placed *out,
                   gpc_error *err);

/*
 * Record in the state what `d` placed for cluster `cluster_id` (each
 * pushed set's digest: gpc_data_record), after apply recorded the cluster
 * and before its nodes start, so that other clusters' applies and `gpuctl
 * data push/rm` know the set is in use and with what.  Errors: the state's.
 */
int gpc_data_record_placed(gpc_session *s, int64_t cluster_id, const gpc_data_placed *d,
                           gpc_error *err);

/*
 * The plan's `data` array (docs/schema/plan.schema.json), offline: for
 * each data set its name, source, kind ("directory" or "url"), for a
 * directory its files and bytes now (counted here) and that apply uploads
 * it to the store of the chosen offer's provider and region, for a URL
 * that it is read where it is and what a bucket in another region than
 * the offer's implies.  `chosen` may be NULL (no offer fits).  NULL when
 * the spec has no data (or out of memory).  Lines for a person, one per
 * data set, are each element's "note".
 */
struct cJSON *gpc_data_plan_json(const gpc_spec *spec, const gpc_offer *chosen);

/*
 * `gpuctl data pull NAME DIR`: copy data set `name` (data/NAME of the
 * store of w's provider and region, store.h) into directory `dir` (made
 * when missing), incremental: a file already in `dir` with the same size
 * and SHA-256 is not fetched again; nothing in `dir` is deleted.  Files
 * get mode 0666 and directories 0777, less the umask (as cp gives).  Each
 * file is written to FILE.gpuctl-part and renamed, so none is ever half
 * written under its name.  *st receives the counts.  Errors: GPC_ERR_USAGE
 * (a bad name, an unknown provider, one without a store, a `dir` that
 * exists and is not a directory: "DIR: not a directory"),
 * GPC_ERR_NOT_FOUND "no data set 'NAME' in the store of P[ region R]"
 * (nothing is made then), the provider's, with "data pull NAME: K of N
 * file(s) (B) arrived in DIR before this failure" in front.
 */
int gpc_data_pull(gpc_session *s, const gpc_data_where *w, const char *name,
                  const char *dir, gpc_store_stats *st, gpc_error *err);

#endif /* GPUCTL_DATA_H */
