/*
 * lifecycle.h - what the files of the cluster lifecycle share (private to
 * src/engine/; the public entry is include/gpuctl/cluster.h).
 *
 *   session.c  sessions, signals, cluster locks, events, the shared helpers
 *   refresh.c  gpc_cluster_refresh: ask the provider, record what changed
 *   apply.c    gpc_apply: the plan check, the failover walk
 *   precheck.c what apply refuses before anything is made (also for plan)
 *   create.c   one create (or one batch create) of nodes, record before
 *              create, adoption of nodes an interrupted apply made
 *   launch.c   launch attempts over zones, rollback, waiting for boot
 *   wait.c     gpc_cluster_wait, the log pump, stopping stragglers
 *   destroy.c  gpc_cluster_destroy and the provider's cluster clean-up
 *   deliver.c  the workdir and secrets sent to nodes that do not see this
 *              machine's files, over the provider's transport
 *   rerun.c    a changed job run again on the same nodes (plan and apply)
 *   replace.c  a changed shape: the nodes deleted and recorded anew, or
 *              only a changed node count: nodes added or removed
 *   zones.c    zone cooldowns, and how recovery buys a replacement
 *   fault.c    fault injection for the end-to-end tests
 *
 * A function that talks to a provider takes it as `pv`: the cluster's
 * provider, opened in the session by the public entry point
 * (gpc_session_provider).  Nothing here keeps a "current" provider.
 */
#ifndef GPUCTL_ENGINE_LIFECYCLE_H
#define GPUCTL_ENGINE_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/cluster.h"
#include "gpuctl/plan.h"

/* ---- shell.c ----------------------------------------------------------- */

/* gpc_cluster_shell (shell.h); idle_ok 1: also a node whose job ended that
 * is still up (succeeded or failed, no ended_at: lifecycle.idle_timeout),
 * as a later job (exec.c) reaches it. */
int gpc_lc_shell(gpc_session *s, const char *name, uint32_t rank, const char *const *cmd,
                 size_t n_cmd, int tty, int idle_ok, char ***argv, gpc_error *err);

/* ---- precheck.c -------------------------------------------------------- */

/* The job's directories as a node sees them (heap paths, NULL = not set
 * or not resolved here), and how they were judged. */
typedef struct gpc_lc_dirs {
    char *workdir, *ckpt;
    int shares_files;   /* the chosen offer's nodes see this machine's files */
    int dirs_depend;    /* the paths depend on that: workdir, or a relative
                           checkpoint_dir */
    gpc_env_var *secrets; /* the spec's secrets, read (gpc_secrets_read) */
    size_t n_secrets;
    int deliver;        /* the nodes get the workdir and/or the secrets from
                           gpuctl over the provider's transport (deliver.c) */
    char *send_workdir; /* the workdir on this machine to send them, or NULL */
} gpc_lc_dirs;

/* Free (and wipe) what *d holds; zero it. */
void gpc_lc_dirs_free(gpc_lc_dirs *d);

/* What apply refuses before anything is made, for the plan's first offer
 * (or, with no offer, the cluster's provider `have_provider`, NULL = none
 * recorded): workdir and checkpoint_dir against whether the nodes see this
 * machine's files (a relative checkpoint_dir created when make_dirs), the
 * provider's check_spec, whether the payload fits the provider's
 * user-data transport, and the secrets (a provider with GPC_CAP_SECRETS,
 * values that can be read: read into *d).  Fills *d (caller frees it with
 * gpc_lc_dirs_free; zeroed and nothing to free on error).  GPC_ERR_SPEC
 * naming the file and field. */
int gpc_lc_precheck(gpc_session *s, const gpc_spec *spec, const gpc_plan *plan,
                    const char *have_provider, int make_dirs, gpc_lc_dirs *d, gpc_error *err);

/* GPC_ERR_PROVIDER when the plan's first offer is on a provider this
 * gpuctl cannot create nodes with (plan-only or not compiled in). */
int gpc_lc_precheck_provider(const gpc_plan *plan, gpc_error *err);

/* Do the nodes of `offer` see this machine's files (provider.h,
 * shares_files, else GPC_CAP_SHARED_FILES)?  *out = 1 or 0. */
int gpc_lc_offer_shares(gpc_session *s, const gpc_offer *offer, int *out, gpc_error *err);

/* ---- session.c --------------------------------------------------------- */

/* Sleep `s` seconds on the clock (gpc_sleep, clock.h); returns early on an
 * interrupt (a signal that bumps gpc_interrupted). */
void gpc_lc_sleep(double s);

/* 1 for the phases a node does not leave (succeeded, failed, preempted,
 * terminated). */
int gpc_lc_is_terminal(gpc_phase p);

/* Replace *dst (owned, freed) by a copy of src (NULL counts as ""); on
 * allocation failure *dst is left as it was. */
void gpc_lc_set_str(char **dst, const char *src);

/* Record an event of cluster `cid` (rank -1: cluster-wide) in the state and
 * send it to the session's log as a debug line.  A failure to record is
 * only logged.  Returns 0. */
int gpc_lc_event(gpc_session *s, int64_t cid, int rank, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Every region the cluster launched in or tried (its nodes' and attempts'),
 * without duplicates or "".  *out (n strings) is the caller's:
 * gpc_lc_free_strv.  Errors: state errors, GPC_ERR_NOMEM. */
int gpc_lc_cluster_regions(gpc_session *s, const gpc_cluster_rec *c, char ***out, size_t *n,
                           gpc_error *err);
void gpc_lc_free_strv(char **v, size_t n);

/* The provider's view of recorded node nd (provider.h): its strings are
 * borrowed from nd. */
gpc_node_ref gpc_lc_node_ref(const gpc_node_rec *nd);

/* delete_node of recorded node nd. */
int gpc_lc_delete(const gpc_open_provider *pv, const gpc_node_rec *nd, gpc_error *err);

/* Keep the provider data a provider returned for nd (ns->data, when not
 * "") in nd; the caller writes nd. */
void gpc_lc_take_data(gpc_node_rec *nd, const gpc_node_status *ns);

/* A cluster ref (provider.h) for a provider's cluster-wide operations:
 * the cluster's regions and a copy of its provider data that the
 * operation may rewrite. */
typedef struct gpc_lc_ref {
    gpc_cluster_ref ref;
    char **regions;
    size_t nr;
    char data[GPC_PROVIDER_DATA_MAX];
    char before[GPC_PROVIDER_DATA_MAX];
} gpc_lc_ref;

/* Fill r for c.  Errors: state errors, GPC_ERR_NOMEM (r is then still
 * closed with gpc_lc_ref_close). */
int gpc_lc_ref_open(gpc_session *s, const gpc_cluster_rec *c, gpc_lc_ref *r, gpc_error *err);

/* Record the provider data the operation left in r when it changed it (in
 * the state and in c), and free r.  A failure to record is only logged: the
 * operation's own result stands. */
void gpc_lc_ref_close(gpc_session *s, gpc_cluster_rec *c, gpc_lc_ref *r);

/* ---- refresh.c --------------------------------------------------------- */

/* The cluster's nodes from the state and what the provider says of each
 * live one (describe_nodes in one call when the provider has it, else
 * describe_node each); (*have)[i] tells which (*ns)[i] were filled.  The
 * caller frees *nodes (gpc_node_list_free), *ns and *have, also on
 * failure. */
int gpc_lc_describe_cluster(gpc_session *s, const gpc_open_provider *pv,
                            gpc_cluster_rec *c, gpc_node_rec **nodes,
                            size_t *n, gpc_node_status **ns, int **have, gpc_error *err);

/* ---- create.c ---------------------------------------------------------- */

/* One launch attempt: where it goes and its number (attempts table). */
typedef struct gpc_launch {
    uint32_t attempt;
    const gpc_offer *head;    /* the offers with the attempt's zone filled in */
    const gpc_offer *worker;
} gpc_launch;

/* Node name and client token of `rank` in launch attempt `attempt`
 * (name: nl bytes, token: tl bytes; 72 bytes hold any token). */
void gpc_lc_node_ids(const gpc_cluster_rec *c, uint32_t rank, uint32_t attempt, char *name,
                     size_t nl, char *token, size_t tl);

/* Record one try of `rank` at offer `of` in the attempts table (outcome
 * "created", "error", "skipped"; e: the error, or NULL).  A failure to
 * record is only logged. */
void gpc_lc_record_attempt(gpc_session *s, const gpc_open_provider *pv,
                           const gpc_cluster_rec *c, uint32_t rank,
                           const gpc_launch *l, const gpc_offer *of, const char *outcome,
                           const gpc_error *e);

/* 1 when node nd's create may have happened without gpuctl seeing the
 * answer: its intent (token, region) is recorded, its provider id is not. */
int gpc_lc_outcome_unknown(const gpc_node_rec *nd);

/* Render, record the intent of, create and record node `nd` at `offer`
 * (head_ip: rank 0's address, NULL for rank 0 itself). */
int gpc_lc_create_one(gpc_session *s, const gpc_open_provider *pv,
                      const gpc_spec *spec, gpc_cluster_rec *c,
                      gpc_node_rec *nd, const gpc_launch *l, const gpc_offer *offer,
                      const char *head_ip, const char *workdir, const char *ckpt,
                      gpc_error *err);

/* The same for nds[0..n-1] (consecutive ranks) in one create_nodes call;
 * made[i] is set for each node recorded. */
int gpc_lc_create_batch(gpc_session *s, const gpc_open_provider *pv,
                        const gpc_spec *spec, gpc_cluster_rec *c,
                        gpc_node_rec **nds, size_t n, const gpc_launch *l, const gpc_offer *of,
                        const char *head_ip, const char *workdir, const char *ckpt, int *made,
                        gpc_error *err);

/* Look a node of unknown outcome up by its client token and record it when
 * the provider has it (*found = 1).  A failed lookup is an error, never
 * "none". */
int gpc_lc_adopt(gpc_session *s, const gpc_open_provider *pv,
                 gpc_node_rec *nd, int *found, gpc_error *err);

/* ---- launch.c ---------------------------------------------------------- */

/* Create the nodes of `c` still missing on offer `chosen`, zone by zone,
 * removing what a failed attempt made.  GPC_ERR_CAPACITY / GPC_ERR_QUOTA
 * when the caller may go on to its next offer. */
int gpc_lc_create_missing(gpc_session *s, const gpc_open_provider *pv,
                          const gpc_spec *spec, gpc_cluster_rec *c,
                          const gpc_plan_offer *chosen, const char *workdir,
                          const char *ckpt, double poll_s, gpc_apply_result *res,
                          gpc_error *err);

/* ---- recover.c --------------------------------------------------------- */

/*
 * What apply hands the wait to replace lost workers (gpc_wait_opts.recover):
 * how it makes a node.  Borrowed for the wait.
 */
typedef struct gpc_lc_recovery {
    const gpc_spec *spec;          /* the applied spec */
    const gpc_plan_offer *chosen;  /* the offer the cluster was made from */
    const char *workdir, *ckpt;    /* as apply resolved them (gpc_lc_dirs) */
    double poll_s;                 /* between looks while a node boots */
    /* before a create: set what the session needs for it (the data sets'
     * placement, s->data), and after it, release that; either may be NULL */
    int (*prepare)(void *ud, gpc_session *s, const gpc_open_provider *pv, gpc_error *err);
    void (*done)(void *ud, gpc_session *s);
    void *ud;
    int max;                       /* replacements at most in one wait */
    int used;                      /* made so far */
    int said_max;                  /* the limit was said */
    int stale;                     /* the cluster was applied again with another
                                      spec meanwhile: nothing more is replaced */
    /* the plan's offers (its failover order), where an on-demand price of
     * the chosen type is found for policy auto's fallback (zones.c);
     * NULL/0: only the chosen offer's head */
    const gpc_plan_offer *offers;
    size_t n_offers;
    gpc_plan_offer buy;            /* what a replacement is made from (zones.c) */
} gpc_lc_recovery;

/*
 * Replace the nodes of cluster *c that are lost (preempted, or gone
 * without an exit status) while its job runs with new nodes of the same
 * ranks, made from rv's offer, which join the running job (recover.c); a
 * lost head is replaced by the provider's head-loss rule, and *c is then
 * refreshed (its phase: the new head's).  replaced[rank] is set to 1 for
 * each rank that has a new node (an array of c->nodes, or NULL).  0 when
 * nothing was lost, the job had ended, or rv->max replacements were made.
 * On a failed create the lost nodes stay recorded as pending (apply makes
 * them) and the create's error is returned.
 */
int gpc_lc_recover(gpc_session *s, gpc_lc_recovery *rv, gpc_cluster_rec *c,
                   unsigned char *replaced, gpc_error *err);

/*
 * Whether a wait on cluster *c, applied with `spec`, replaces its lost
 * workers: 1 when the spec buys spot (spot.policy or spot.head not
 * on-demand) and the job running is the cluster's first (the one a new
 * node's bootstrap runs: a later re-run or `exec` job is not recovered).
 * Else 0, and `why` (when not NULL; `size` bytes) says why not, "" when
 * the cluster buys no spot.
 */
int gpc_lc_recoverable(gpc_session *s, const gpc_cluster_rec *c, const gpc_spec *spec,
                       char *why, size_t size);

/* ---- zones.c ----------------------------------------------------------- */

/* 1 when zone `zone` of `region` at `provider` cools down at `now` (Unix
 * seconds; spot.zone_cooldown), why ("until 2023-11-14T22:43:20Z: node
 * job-1 (s-2) was preempted"; wl bytes, NULL = not wanted) filled; 0 for
 * zone "" or none.  A state that cannot be read counts as no cooldown
 * (said in the log). */
int gpc_lc_zone_cooling(gpc_session *s, const char *provider, const char *region,
                        const char *zone, int64_t now, char *why, size_t wl);

/* Pass zone `zone` of `region` at `provider` over for spec's
 * spot.zone_cooldown from now on (nothing when it is 0 or zone is ""),
 * with `why`, and record it as a `recovery` event of cluster cid (rank -1:
 * the cluster's).  A failure to record is only logged. */
void gpc_lc_zone_cool(gpc_session *s, const gpc_spec *spec, int64_t cid, int rank,
                      const char *provider, const char *region, const char *zone,
                      const char *why);

/* Order zones[0..n) of `region` at `provider` for trying: those that do
 * not cool down first, then those that do, each group in its order (every
 * zone cooling: the order stays, all are tried), saying in the log which
 * come last.  Returns how many cool down. */
size_t gpc_lc_zones_order(gpc_session *s, const char *provider, const char *region,
                          char (*zones)[48], size_t n);

/* The same for a new cluster's offers[0..n) (apply's failover order): an
 * offer whose own zone cools down goes after those that do not. */
size_t gpc_lc_offers_order(gpc_session *s, gpc_plan_offer *offers, size_t n);

/* Recovery found node nd of c lost (recover.c): a preempted node's zone is
 * passed over (gpc_lc_zone_cool). */
void gpc_lc_recover_lost(gpc_session *s, gpc_lc_recovery *rv, const gpc_cluster_rec *c,
                         const gpc_node_rec *nd);

/* What recovery makes the replacement(s) of cluster c from, whose nodes
 * are in `zone` (the survivors'): rv->buy, rv->chosen's offer, bought
 * on-demand (same type and region, the plan's on-demand price) once
 * spot.fallback_after spot interruptions of the cluster happened under
 * policy auto, unless the plan has no such price or the cluster would then
 * cost more per hour than budget.max_hourly; and s->unpin_zone set when `zone` cools down and the
 * cluster has no placement group and pv lists zones (the replacement then
 * goes to another zone first).  Each choice is a `recovery` event.  The
 * caller clears s->unpin_zone after its create. */
const gpc_plan_offer *gpc_lc_recover_offer(gpc_session *s, gpc_lc_recovery *rv,
                                           const gpc_open_provider *pv,
                                           const gpc_cluster_rec *c, const char *zone);

/* ---- destroy.c --------------------------------------------------------- */

/* Ask the provider to remove what else it made for the cluster
 * (cleanup_cluster; 0 when it has none). */
/* Mark node `nd` deleted at `now` (s since the epoch): phase terminated,
 * ended_at, its ledger entry closed, in one transaction.  State errors. */
int gpc_lc_node_deleted(gpc_session *s, gpc_node_rec *nd, int64_t now, gpc_error *err);

/* Record cluster c's nodes from .. c->nodes-1 as pending, created at
 * `now`, with the client token of launch attempt 1 (first_attempt: a new
 * cluster, whose intent a killed gpuctl must find) or none (a later
 * attempt chooses its own).  In the caller's transaction. */
int gpc_lc_nodes_record(gpc_session *s, const gpc_cluster_rec *c, uint32_t from,
                        int first_attempt, int64_t now, gpc_error *err);

/*
 * Carry out a GPC_PLAN_REPLACE plan on live cluster *c (replace.c): delete
 * its nodes (and, when the plan's chosen offer is on another provider, what
 * else the old one made for it), then record the new spec, provider and
 * pending nodes, so that apply's create makes them; *c is reloaded.
 * *removed: the nodes deleted.  Errors: GPC_ERR_PARTIAL (a node could not
 * be deleted: it stays recorded, the spec is not changed), the provider's,
 * state errors.
 */
struct gpc_plan;

/* Carry out a GPC_PLAN_RESIZE plan on live cluster *c (replace.c): delete
 * its nodes of rank spec->nodes and up, record the new spec and pending
 * nodes for the new ranks (made by apply's create with no job of their
 * own: gpc_session.no_first_job); *c is reloaded.  The job then runs
 * again on every node (gpc_lc_rerun).  Errors: as gpc_lc_replace. */
/* Before a resize of live cluster *c: 0 when the job has ended on each of
 * its live nodes of rank below `keep` (the nodes that stay), as their log
 * transport says (an exit status); GPC_ERR_USAGE naming the nodes where a
 * job still runs; the provider's error when a node cannot be asked. */
int gpc_lc_resize_ready(gpc_session *s, gpc_cluster_rec *c, uint32_t keep, gpc_error *err);
int gpc_lc_resize(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                  const struct gpc_plan *plan, gpc_cluster_rec *c, int *removed,
                  gpc_error *err);
int gpc_lc_replace(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                   const struct gpc_plan *plan, gpc_cluster_rec *c, int *removed,
                   gpc_error *err);

int gpc_lc_cleanup_resources(gpc_session *s, const gpc_open_provider *pv,
                             gpc_cluster_rec *c, gpc_error *err);

/* ---- rerun.c ----------------------------------------------------------- */

/*
 * Record in the cluster's events that job `job_id` runs with spec
 * `spec_hash` and workdir digest `workdir_digest` (gpc_lc_workdir_digest;
 * NULL or "" = none): what the next apply compares with.  Errors: the
 * state's.
 */
int gpc_lc_job_record(gpc_session *s, int64_t cluster_id, const char *job_id,
                      const char *spec_hash, const char *workdir_digest, gpc_error *err);

/* The digest of spec's workdir (gpc_lc_workdir_digest) into hex, "none"
 * when it has none or none could be made (then GPC_ERR_IO, logged). */
int gpc_lc_spec_workdir_digest(gpc_session *s, const gpc_spec *spec, char hex[65]);

/*
 * `plan` of `spec` for live cluster `c`, which has `missing` nodes still to
 * create: a change of the cluster's shape is refused with the diff
 * (GPC_ERR_USAGE); a change of only its job (the job's fields, the
 * workdir's files since the latest recorded job) sets out->action to
 * GPC_PLAN_RERUN and out->rerun to what changed, or is refused while nodes
 * are missing; no change leaves *out as it is.  Errors: the state's, the
 * above.
 */
int gpc_lc_plan_existing(gpc_session *s, const gpc_spec *spec, const gpc_cluster_rec *c,
                         uint32_t missing, gpc_plan *out, gpc_error *err);

/*
 * Re-run `spec`'s job on the live nodes of `c` (apply of a plan
 * GPC_PLAN_RERUN): the cluster's spec becomes `spec` (spec_path: its file),
 * a "job" event records it, then gpc_cluster_exec runs it with the new
 * workdir and secrets, queued after a running job: attached with `wait`
 * (*status: the job's exit status; the nodes' output printed with
 * `stream`), else started in the background on every node.  job_id receives the new job's id ("r" + 12 hex digits).  A
 * job that could not start leaves the old spec recorded.  Errors:
 * gpc_cluster_exec's, the state's.
 */
int gpc_lc_rerun(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                 const gpc_cluster_rec *c, int wait, int stream, int *status,
                 char job_id[16], gpc_error *err);

/* ---- deliver.c --------------------------------------------------------- */

/*
 * Deliver to every running node of cluster `c` (provider pv, which must
 * have transport_argv): the workdir `workdir` (a directory of this
 * machine, NULL = none) synchronised into the node's
 * /var/lib/gpuctl/workdir (rsync -a --delete, .gpuctlignore and
 * .gitignore honoured), the secrets (n of them; written to the node's
 * /run/gpuctl/secrets.env through the transport's standard input, mode
 * 0600, n == 0: the file removed), then the marker
 * /var/lib/gpuctl/delivered the bootstrap waits for.  Nodes in parallel;
 * idempotent (only what changed moves).  Says per node what moved
 * ("workdir: 1 file, 120 B sent to node 0"), and warns first when the
 * workdir is larger than $GPUCTL_WORKDIR_WARN_MB MiB (default 100).
 * Errors: GPC_ERR_PROVIDER naming the node and the step that failed
 * (rsync missing on the node, ssh refused, ...), the provider's, GPC_ERR_IO,
 * GPC_ERR_NOMEM.
 */
int gpc_lc_deliver(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                   const char *workdir, const gpc_env_var *secrets, size_t n, gpc_error *err);

/* For a re-run on the nodes of cluster `c` (gpuctl exec, an apply that
 * re-runs): whether spec's nodes there get a delivery (*delivers: the
 * provider has transport_argv and its nodes do not see this machine's
 * files, or cannot take secrets otherwise) and, when they do, the
 * delivery itself (gpc_lc_deliver with the spec's workdir resolved and its
 * secrets read now).  Errors: gpc_lc_deliver's, GPC_ERR_SPEC (a workdir
 * that is not a directory, a secret that cannot be read). */
int gpc_deliver_nodes(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                      const gpc_spec *spec, int *delivers, gpc_error *err);

/*
 * The content digest of `workdir` as the delivery sends it (rsync
 * --list-only with its filters; the n_out directories leave_out[] (gpuctl's
 * state directory, the job's checkpoint_dir; NULL entries fine) left out
 * where they lie inside, and every .git directory, which git rewrites
 * without a change of the files): the hex SHA-256 of one line
 * "PATH\tSIZE\tSHA256\tPERMS" per regular file ("-rwxr-xr-x") and
 * "PATH -> TARGET\tPERMS" per symbolic link, in rsync's order.  Errors:
 * GPC_ERR_IO (rsync missing or failing, a file unreadable), GPC_ERR_NOMEM.
 */
int gpc_lc_workdir_digest(const char *workdir, const char *const *leave_out, size_t n_out,
                          char hex[65], gpc_error *err);

/* gpc_lc_deliver with what gpc_apply holds in the session (s->deliver,
 * s->deliver_workdir, s->secrets); 0 and nothing done when s->deliver is
 * 0. */
int gpc_lc_deliver_apply(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                         gpc_error *err);

/* ---- fault.c ----------------------------------------------------------- */

/* Fault points exist in the test build only (cmake -DGPUCTL_TEST_HOOKS=ON,
 * docs/testing.md): without it fault.c is not compiled, no point ever
 * fires and gpuctl reads no GPUCTL_TEST_FAULT. */
#ifdef GPUCTL_TEST_HOOKS

/* The error code the last fault point that fired reports. */
extern int gpc_lc_fault_code;

/* 1 when GPUCTL_TEST_FAULT names `point` for `rank` (a kill point does not
 * return: SIGKILL). */
int gpc_lc_fault(const char *point, uint32_t rank);

/* kill-in-create:<rank>[:<ms>]: arm a SIGKILL <ms> after now. */
void gpc_lc_fault_kill_in_create(uint32_t rank);

#else

#define gpc_lc_fault_code ((int)GPC_ERR_PROVIDER)

static inline int gpc_lc_fault(const char *point, uint32_t rank)
{
    (void)point;
    (void)rank;
    return 0;
}

static inline void gpc_lc_fault_kill_in_create(uint32_t rank)
{
    (void)rank;
}

#endif /* GPUCTL_TEST_HOOKS */

#endif /* GPUCTL_ENGINE_LIFECYCLE_H */
