/*
 * cluster.h - the core's cluster lifecycle: apply, refresh, wait, destroy.
 *
 * The CLI commands (cmd_*.c) are thin: they parse flags, call these, and
 * print.  Everything that touches providers and state goes through here, so
 * the rules (record before create, clean up after a failed create, never an
 * untracked node) live in one place.
 */
#ifndef GPUCTL_CLUSTER_H
#define GPUCTL_CLUSTER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuctl/error.h"
#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "gpuctl/state.h"
#include "gpuctl/log.h"

struct cJSON;

/* A setting the command line gave one provider: `--endpoint aws=URL`. */
typedef struct gpc_provider_flag {
    const char *provider;     /* a name of the registry */
    const char *key;          /* "endpoint" or "profile" */
    const char *value;
} gpc_provider_flag;

#define GPC_PROVIDER_FLAGS_MAX 16

/* What the engine is configured with (the CLI fills it from its flags).
 * Strings are borrowed for the session's life. */
typedef struct gpc_settings {
    const char *state_dir;    /* --state-dir, or NULL for the default */
    const char *catalog_path; /* --catalog FILE, or NULL (see catalog.h) */
    const char *endpoint;     /* --endpoint URL: the API endpoint of every provider,
                                 or NULL (gpc_provider_settings_get) */
    const char *profile;      /* --profile NAME: the credentials profile of every
                                 provider, or NULL */
    gpc_provider_flag flags[GPC_PROVIDER_FLAGS_MAX]; /* --endpoint P=URL, --profile
                                 P=NAME: one provider's, before the above */
    size_t n_flags;
    int state_reads_only;     /* the command only reads the state: on a full
                                 disk it opens it read-only (state.h) */
    const gpc_log *log;       /* where events go; NULL drops them */
} gpc_settings;

/*
 * Take the value of a flag that sets `key` ("endpoint" or "profile"):
 * "PROVIDER=VALUE" sets it for that provider only (PROVIDER: letters,
 * digits, '-' and '_' before the first '=', with no ':' or '/' in it, so
 * that "http://h/?a=b" is a plain value), anything else for every
 * provider.  `arg` is borrowed for the settings' life.  Errors:
 * GPC_ERR_USAGE naming the flag when PROVIDER is not in the registry or
 * too many provider flags are given.
 */
int gpc_settings_flag(gpc_settings *set, const char *key, const char *arg, gpc_error *err);

/*
 * A provider's settings, resolved: what its open() is handed.  Each of
 * endpoint, profile and region comes from, first to last:
 *   1. the flag (gpc_settings: --endpoint, --profile; there is no region
 *      flag): the provider's own (--endpoint NAME=URL), else the one for
 *      every provider;
 *   2. the environment: GPUCTL_<NAME>_ENDPOINT, GPUCTL_<NAME>_PROFILE,
 *      GPUCTL_<NAME>_REGION, NAME being the provider's name upper-cased
 *      (an empty variable counts as unset);
 *   3. the config file (gpc_config_path), section [provider "NAME"], keys
 *      endpoint, profile, region;
 * else it stays NULL, and the provider uses its own defaults (AWS:
 * AWS_ENDPOINT_URL_EC2, AWS_PROFILE, AWS_REGION, ~/.aws/config, ...).
 * A provider with site_keys also gets its named sections of the config
 * file, [NAME "SITE"] (gpc_site), which come from the file only.
 * docs/config.md has the file's format.
 */
typedef struct gpc_provider_settings {
    gpc_provider_config cfg; /* for open(); its strings point into this struct,
                                and to state_dir and log as given */
    char *endpoint;          /* owned, or NULL */
    char *profile;           /* owned, or NULL */
    char *region;            /* owned, or NULL */
    char from[3][320];       /* where endpoint, profile, region came from */
    gpc_site *sites;         /* owned, with each site's name, values and their
                                strings (a value's key is the provider's
                                site_keys string): cfg.sites; NULL when none */
    size_t n_sites;
    char *config_path;       /* owned: the config file's path (gpc_config_path),
                                whether the file exists or not; "" when there
                                is none */
} gpc_provider_settings;

/*
 * Resolve the settings of provider `prov` (from the registry) into *out;
 * `set` may be NULL (no flags, no log), `state_dir` (borrowed) is handed on
 * as is and may be NULL for a provider that keeps no files (catalog
 * refreshes).  The config file is read, and checked whole, on every call.
 * out->cfg.sites has prov's named sections, in the order their names
 * first appear, each with its values in file order (other providers' are
 * checked, not kept), and out->cfg.config_path the file's path.
 * Errors, with *out empty: GPC_ERR_USAGE "FILE:LINE: ..." for a config
 * file that is not right (a line that is not '[section]' or 'key =
 * value', a section other than [provider "NAME"] and [NAME "SITE"] of a
 * provider with site_keys, a NAME not in the registry, a SITE that is not
 * 1 to 47 letters, digits, '.', '_' and '-', an unknown key, an empty or
 * repeated value, a line longer than 198 characters); GPC_ERR_IO when it
 * cannot be read (also when GPUCTL_CONFIG names a file that does not
 * exist); GPC_ERR_NOMEM.  Free with gpc_provider_settings_free (also
 * after an error).
 */
int gpc_provider_settings_get(const gpc_settings *set, const gpc_provider *prov,
                              const char *state_dir, gpc_provider_settings *out,
                              gpc_error *err);
void gpc_provider_settings_free(gpc_provider_settings *ps);

/*
 * The config file's path into buf (n bytes): $GPUCTL_CONFIG (then
 * *named = 1: it must exist), else $GPUCTL_CONFIG_DIR/config, else
 * $XDG_CONFIG_HOME/gpuctl/config (an XDG_CONFIG_HOME that is not absolute
 * is ignored), else $HOME/.config/gpuctl/config; "" when none of these is
 * set.  Errors: GPC_ERR_IO when the path does not fit.
 */
int gpc_config_path(char *buf, size_t n, int *named, gpc_error *err);

/* A provider open in a session: its table and the context its open()
 * made.  Both belong to the session and stay valid until
 * gpc_session_close. */
typedef struct gpc_open_provider {
    const gpc_provider *prov;
    void *ctx;
} gpc_open_provider;

/* The state, and the providers opened so far: one context per provider
 * of the registry (gpc_providers[]), each opened on first use and all
 * closed by gpc_session_close.  Asking for one provider never closes
 * another. */
typedef struct gpc_session {
    const gpc_settings *cfg;
    const gpc_log *log;         /* cfg->log */
    gpc_state *st;
    char *state_dir;            /* owned */
    gpc_open_provider *open;    /* owned; open[i] is gpc_providers[i], prov NULL
                                   until opened (n_open entries) */
    size_t n_open;
    /* The spec's secrets (spec.h, gpc_secrets_read) while gpc_apply runs:
     * borrowed, handed to create_node(s) in gpc_node_request, never
     * recorded; NULL otherwise. */
    const gpc_env_var *secrets;
    size_t n_secrets;
    /* The spec's data sets as placed for the offer being launched
     * (data.h, gpc_data_place) while gpc_apply runs: borrowed, rendered
     * into each node's bootstrap; NULL otherwise. */
    const struct gpc_data_placed *data;
    /* While gpc_apply runs: 1 when its nodes get the workdir and secrets
     * from gpuctl over the provider's transport (deliver.c; their
     * bootstrap waits for it: gpc_node_ctx.deliver), and the workdir on
     * this machine to send (borrowed; NULL = none); 0 and NULL otherwise. */
    int deliver;
    const char *deliver_workdir;
    /* While gpc_apply adds nodes to a live cluster (a changed node count,
     * replace.c): 1, their bootstraps run no job of their own
     * (gpc_node_ctx.no_first_job); 0 otherwise. */
    int no_first_job;
    /* While a lost node is replaced under a running job (recover.c): the
     * time (Unix seconds) its record was made; the delivery goes to nodes
     * recorded since only (the others' running job holds their job.lock,
     * which a delivery waits for).  0 otherwise: every running node. */
    int64_t deliver_since;
    /* While gpc_apply replaces or resizes a live cluster's nodes: 1, the
     * cluster is not this apply's own, so a create that fails (or is
     * interrupted) with no node alive leaves it recorded with its nodes to
     * create, for the next apply or destroy, instead of closing it as a
     * new cluster's failed first attempt is; 0 otherwise. */
    int keep_record;
    /* While recovery replaces a lost node (recover.c, zones.c): 1 when the
     * survivors' zone cools down (spot.zone_cooldown) and nothing keeps
     * the cluster there: the create tries the provider's zones, the
     * cooling ones last, instead of the live nodes' zone alone; 0
     * otherwise. */
    int unpin_zone;
} gpc_session;

/* Open the state (--state-dir or the default).  No provider is opened
 * yet.  On failure the session is still closed with gpc_session_close. */
int gpc_session_open(gpc_session *s, const gpc_settings *cfg, gpc_error *err);

/*
 * Provider `name` of the session in *out, opened on first use with its
 * settings (gpc_provider_settings); later calls give the same context.
 * Errors: GPC_ERR_PROVIDER when `name` is not in the registry (the
 * message lists the names), the settings' errors, and what the
 * provider's open() returns (GPC_ERR_AUTH, ...); a provider that failed to
 * open is tried again by the next call.
 */
int gpc_session_provider(gpc_session *s, const char *name, gpc_open_provider *out,
                         gpc_error *err);

/* Close every provider opened, the state, and free the session. */
void gpc_session_close(gpc_session *s);

/* Hold an exclusive lock on a cluster name (flock on
 * <state>/locks/<name>.lock) until gpc_cluster_unlock.  GPC_ERR_LOCKED when
 * another gpuctl holds it and `wait` is 0. */
int gpc_cluster_lock(gpc_session *s, const char *name, int wait, int *fd, gpc_error *err);
void gpc_cluster_unlock(int fd);

struct gpc_plan;

typedef struct gpc_apply_opts {
    const struct gpc_plan *plan; /* a saved plan to carry out exactly, or NULL:
                                    plan now (see plan.h) */
    const char *catalog_path;    /* --catalog FILE, or NULL */
    int dry_run;
    int wait;
    long timeout_s;       /* --timeout for --wait; 0 = none */
    double poll_s;        /* seconds between polls while waiting */
    int stream_logs;      /* with wait: print the nodes' logs on stdout */
    /* A plan that replaces nodes (GPC_PLAN_REPLACE) is carried out when
     * replace_ok is 1 (`-y`, a saved plan), else when confirm (called once,
     * under the cluster's lock, with a one-line question) returns 1; 0 is
     * "no" (nothing changes, the result's cancelled is 1), -1 "cannot ask"
     * (GPC_ERR_USAGE).  NULL confirm: as -1. */
    int replace_ok;
    int (*confirm)(void *ctx, const char *question);
    void *confirm_ctx;
    /* `gpuctl watch`: the cluster must exist and the spec be the one its
     * nodes run (GPC_ERR_NOT_FOUND, GPC_ERR_USAGE naming what changed);
     * only nodes it still misses are made; with wait, the controller's
     * wait (spot recovery, budget) follows.  0 for apply. */
    int watch;
} gpc_apply_opts;

typedef struct gpc_apply_result {
    int64_t cluster_id;
    int created;          /* nodes created by this apply */
    int adopted;          /* nodes an interrupted apply created, recorded now */
    int unchanged;        /* the same spec was already applied */
    int waited;           /* --wait ran to the job's end */
    gpc_phase phase;      /* cluster phase at the end */
    int exit_code;        /* rank 0's exit status, -1 when unknown */
    char rerun[512];      /* only the job changed (plan GPC_PLAN_RERUN): what
                             ("run.command, workdir (its files)"), else "" */
    char rerun_job[16];   /* the re-run's job id, "" when none ran */
    char replaced[512];   /* the shape changed (plan GPC_PLAN_REPLACE): what
                             ("nodes 2 -> 3"), else "" */
    int resized;          /* with replaced: only the node count changed (plan
                             GPC_PLAN_RESIZE): the live nodes stayed, the job
                             ran again on all (rerun_job) */
    int removed;          /* nodes this apply deleted to replace them */
    int cancelled;        /* the replacement was not confirmed: nothing changed */
    double first_output_s;/* with wait: seconds from the apply's start to the job's
                             first output on rank 0 (gpc_wait_opts), -1 when none */
} gpc_apply_result;

/* Apply a parsed spec (see docs/cli.md for the contract). */
int gpc_apply(gpc_session *s, const gpc_spec *spec, const char *spec_path,
              const gpc_apply_opts *opts, gpc_apply_result *res, gpc_error *err);

/*
 * `gpuctl watch NAME` (docs/cli.md): wait for live cluster `name`'s job as
 * `apply --wait` does (opts: timeout_s, poll_s, stream_logs; the rest is
 * ignored), and, when `recover` is 1 and the cluster buys spot, replace
 * its lost workers while the job runs (the engine's recover.c).  A
 * replacement is made from `spec` (borrowed; spec_path: its file) or, when
 * NULL, from the file the cluster was applied from; either must be the
 * spec the nodes run.  Fills *res as gpc_apply does for --wait.  Errors:
 * GPC_ERR_NOT_FOUND (no such live cluster), GPC_ERR_USAGE (a spec of
 * another cluster, a changed spec, a spot cluster applied from stdin with
 * no spec given), the spec file's (GPC_ERR_SPEC, GPC_ERR_IO), and those of
 * gpc_cluster_wait (GPC_ERR_JOB_FAILED, GPC_ERR_NODE_LOST,
 * GPC_ERR_TIMEOUT, GPC_ERR_BUDGET, GPC_ERR_INTERRUPTED, ...).
 */
int gpc_watch(gpc_session *s, const char *name, const gpc_spec *spec, const char *spec_path,
              const gpc_apply_opts *opts, int recover, gpc_apply_result *res, gpc_error *err);

/*
 * What `apply` of `plan` would refuse before making anything, known
 * without calling a provider's API (the checks apply makes first): a
 * workdir the chosen offer's nodes cannot see or that does not exist, a
 * relative checkpoint_dir on nodes that do not share this machine's files,
 * what the provider's check_spec refuses, a payload over the provider's
 * user-data limit.  Nothing is created (not even checkpoint_dir).  An
 * offer on a provider that cannot create nodes here (plan-only) is the
 * caller's to judge (a plan of it is still shown).  `plan` calls it so
 * that a plan CI approves is one apply can carry out.  Returns 0, or the
 * error apply would give (GPC_ERR_SPEC naming the file and field, or the
 * provider's own).
 */
int gpc_plan_check(gpc_session *s, const gpc_spec *spec, const struct gpc_plan *plan,
                   gpc_error *err);

/* Ask the provider about every live node of a cluster and record what
 * changed (phases, exit codes, IPs, ledger), and the cluster's phase
 * derived from them: rank 0's while it runs or when it ends other than
 * with 0; once rank 0 exited 0, `failed` when another node's job exited
 * non-zero (gpc_cluster_failed_node says which), else `succeeded`.  The
 * cluster's exit_code stays rank 0's.  Reloads *c. */
int gpc_cluster_refresh(gpc_session *s, gpc_cluster_rec *c, gpc_error *err);

/* Of a cluster's node rows ordered by rank then id (gpc_node_list with
 * terminated ones), the newest row of the first rank whose job failed with
 * an exit status (phase failed, exit_code > 0); NULL when none.  Points
 * into `nodes`. */
const gpc_node_rec *gpc_cluster_failed_node(const gpc_node_rec *nodes, size_t n);

/* How gpc_cluster_wait waits, and what it measured. */
typedef struct gpc_wait_opts {
    long timeout_s;        /* give up after this many seconds (GPC_ERR_TIMEOUT); 0: never */
    double poll_s;         /* seconds between polls; <= 0: 1 */
    int stream_logs;       /* print every node's log as output */
    double since;          /* gpc_monotonic_s() when the apply began; 0: when the wait did */
    double first_output_s; /* out: seconds from `since` until the first line of rank 0's
                              log after its torchrun started that is not gpuctl's own
                              (the job's first output), as the wait's polls saw it
                              (within poll_s); -1 when none came */
    int no_timing;         /* 1: the first output is not measured (first_output_s
                              stays -1; a wait that did not begin with the apply,
                              as watch's) */
    struct gpc_lc_recovery *recover; /* apply's: replace lost workers while
                              the job runs (spot recovery, the engine's
                              recover.c); NULL = never */
} gpc_wait_opts;

/* Block until rank 0's job ends (or timeout / interrupt), sending a status
 * line to the session's log every poll and, when w->stream_logs, every
 * node's log as output ("[node N] ..." when there are several nodes).  A
 * node kept up after its job (lifecycle.idle_timeout) ends the wait by its
 * log's exit status.  The job's first output is said once (an info line
 * and a "timing" event).  Errors: GPC_ERR_JOB_FAILED, GPC_ERR_NODE_LOST,
 * GPC_ERR_TIMEOUT, GPC_ERR_INTERRUPTED, the provider's and the state's. */
int gpc_cluster_wait(gpc_session *s, gpc_cluster_rec *c, gpc_wait_opts *w, gpc_error *err);

/*
 * One read of the log of node `nd` of cluster `c` through its provider's
 * log transport (read_log, provider.h): the bytes from `offset` on,
 * bounded by the provider, appended to `out`; *next, *exit_status and
 * may_wait as read_log says.  `pv` is the cluster's provider
 * (gpc_session_provider).  A node without a provider id yet: nothing read,
 * no error.  Errors: GPC_ERR_PROVIDER when the provider has no read_log;
 * the provider's (GPC_ERR_NOT_FOUND: the node is gone, its log with it);
 * state errors.  Provider data the read changes is recorded in c.
 */
struct gpc_buf;
int gpc_node_log_read(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                      const gpc_node_rec *nd, long offset, int may_wait, struct gpc_buf *out,
                      long *next, int *exit_status, gpc_error *err);

/*
 * Send the bytes node `nd` of cluster `c` logged since *off to `log` as
 * output (one gpc_node_log_read), and advance *off; *exit_status receives
 * the node's exit status as the read saw it (-1 while it has none).  `pv`
 * NULL, or one without read_log, sends nothing.  With `prefix`, whole
 * lines are printed as "[node RANK] line" and an unfinished last line
 * waits in `partial` (a buffer the caller owns) for the next call;
 * gpc_log_flush prints what is left.  *off unchanged after a read means
 * the reader had caught up.  Returns 0 or gpc_node_log_read's error.
 */
int gpc_log_pump(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                 const gpc_node_rec *nd, int may_wait, long *off, int *exit_status, int prefix,
                 struct gpc_buf *partial, const gpc_log *log, gpc_error *err);
void gpc_log_flush(uint32_t rank, int prefix, struct gpc_buf *partial, const gpc_log *log);

/*
 * Run `job` (render.h) on every node of live cluster `name` (exec.c).
 * Nodes that do not see this machine's files first get the workdir and
 * secrets of `spec` (NULL: of the spec the cluster was applied with) over
 * the provider's transport (deliver.c), each once the job running there,
 * if any, has ended.  Then the job file goes to each node's job runner over the node's shell (shell.h,
 * gpc_cluster_shell, which refreshes the cluster and needs every node
 * running), all nodes at once; on each node the job waits until the job
 * running there, if any, has ended (queued after it, never beside it),
 * then runs with the node's rendezvous wiring and the rendezvous id
 * CLUSTER_UID-JOB_ID.  job->id NULL: a new id "x" + 12 hex digits.  The
 * nodes' output goes to the session's log as output, "[node N] line" when
 * the cluster has several nodes.  *status: the job's exit status, the
 * first non-zero one by rank (a node's shell that failed counts: ssh's
 * 255, 127 for a command not found or a node without gpuctl's bootstrap),
 * else 0.  With job->detach the job starts in the background on each node
 * and the call returns once every node's runner has taken it; *status is
 * then the first non-zero status of a node's command by rank.  An "exec"
 * event records the job.  Errors: GPC_ERR_NOT_FOUND (no live cluster
 * `name`, a node not running), GPC_ERR_PROVIDER (no shell access; with
 * job->detach, nodes whose runner did not take the job or whose shell
 * failed, each named by rank with its status and the last line it
 * printed: the job did not start there, and runs on the others),
 * GPC_ERR_RENDER (the job), GPC_ERR_IO (pipes, fork), GPC_ERR_NOMEM;
 * *status is then 0 and nothing ran, or, when a later node's command
 * could not be made, nothing either (except after a detached start, as
 * said).
 */
struct gpc_job_def;
int gpc_cluster_exec(gpc_session *s, const char *name, const gpc_spec *spec,
                     const struct gpc_job_def *job, int *status, gpc_error *err);

/* Delete every node of a live cluster; GPC_ERR_PARTIAL naming what is
 * left (still recorded) when some deletes fail. *deleted counts nodes. */
int gpc_cluster_destroy(gpc_session *s, gpc_cluster_rec *c, int *deleted, gpc_error *err);

/* What gpc_cluster_checkpoints does. */
typedef enum gpc_ckpt_mode {
    GPC_CKPT_LOOK,  /* list them when the cluster's spec has checkpoint_dir
                       (else ask the store nothing) */
    GPC_CKPT_LIST,  /* list them whatever the spec says */
    GPC_CKPT_PURGE  /* remove them */
} gpc_ckpt_mode;

/*
 * The checkpoints cluster `c` (live or destroyed) keeps in its provider's
 * store, which outlive its nodes (GPC_CKPT_STORE_PATH_FMT, in the store of
 * its nodes' region): *n receives how many files are there and `url`
 * (size bytes) their URL (s3://BUCKET/clusters/NAME/checkpoints, or a
 * directory), "" when none; with GPC_CKPT_PURGE they are removed and *n
 * counts the files removed.  A provider without a store: 0, no error.
 * Data sets are not the cluster's and are never touched.  Errors: the
 * provider's (store_list, store_url, store_remove), the state's.
 */
int gpc_cluster_checkpoints(gpc_session *s, const gpc_cluster_rec *c, gpc_ckpt_mode mode,
                            char *url, size_t size, size_t *n, gpc_error *err);

/*
 * The checkpoint_dir of cluster `c` (live or destroyed) when its nodes
 * wrote it on this machine (they saw this machine's files: local; slurm
 * whose login node this is): the user's own directory, which destroy
 * (--purge too) never removes.  `dir` (size bytes) receives its absolute
 * path, resolved as apply did (against the spec file's directory), and *n
 * the regular files under it now (0 when it is gone); `dir` is "" and *n 0
 * when the spec has no checkpoint_dir or the nodes kept it elsewhere (a
 * node's path, saved to the store: gpc_cluster_checkpoints).  Errors: the
 * state's, the provider's shares_files, GPC_ERR_IO listing the directory.
 */
int gpc_cluster_checkpoint_dir(gpc_session *s, const gpc_cluster_rec *c, char *dir, size_t size,
                               size_t *n, gpc_error *err);

/*
 * What provider `provider` still keeps for gpuctl (its list_orphans in
 * `regions`, NULL/0 = wherever it can look) that `gpuctl gc` collects:
 * every resource whose cluster uid no live cluster of the state owns
 * (resources of destroyed clusters, of clusters never recorded, or with no
 * cluster uid), and every resource of a cluster uid one of whose resources
 * passed its expiry (gpc_orphan.expires_at), live cluster or not; each
 * with `owned` and `expired_at` set.  *out (caller frees with free())
 * holds *n, in the provider's order.  Errors: those of opening the
 * provider and of its listing; GPC_ERR_USAGE when the provider cannot list
 * (no list_orphans); GPC_ERR_PARTIAL (the provider's message naming what
 * it could not read) with *out and *n holding what it did read.
 */
int gpc_orphans(gpc_session *s, const char *provider, const char *const *regions,
                size_t n_regions, gpc_orphan **out, size_t *n, gpc_error *err);

/*
 * Remove the n orphans `o` of `provider` (as gpc_orphans gave them), one
 * cluster uid at a time, in the order of their first resource: a uid a
 * live cluster of the state owns (its cluster expired) is destroyed as
 * `gpuctl destroy` does (its lock taken without waiting; its record then
 * says destroyed); any other by the provider's cleanup_cluster with the
 * name its resources were tagged with, the regions they were found in and
 * the first non-empty gpc_orphan.data.  deleted[i] (n of them) is set to 1
 * for each orphan whose uid was removed, else 0.  Says each uid removed on
 * the session's log.  Errors: those of opening the provider;
 * GPC_ERR_USAGE when it has no cleanup_cluster; GPC_ERR_PARTIAL naming
 * each cluster whose resources are left and why (the others are removed).
 */
int gpc_orphans_delete(gpc_session *s, const char *provider, const gpc_orphan *o, size_t n,
                       int *deleted, gpc_error *err);

/* One cluster that gpc_cluster_rebuild found by its nodes' tags. */
typedef struct gpc_rebuilt {
    char provider[16];
    char cluster[64];       /* its name (tag) */
    char uid[64];           /* its uid (tag) */
    char region[48];        /* where its nodes are */
    uint32_t found;         /* its nodes found (live, rank tagged) */
    uint32_t nodes;         /* its node count (tag; at least the highest
                               rank found + 1) */
    int64_t cluster_id;     /* the record made, 0 when none was */
    char skipped[256];      /* "" when recorded, else why not */
} gpc_rebuilt;

/*
 * Rebuild the records of the clusters of `provider` that the state lost
 * (`gpuctl status --refresh`): its nodes that carry gpuctl's tags with a
 * rank (gpc_orphan.node, from gpc_orphans in `regions`, NULL/0 =
 * wherever it can look) and whose cluster uid no live record has; `name`
 * (NULL = any) keeps those tagged with that name.  Per cluster uid, under
 * the name's lock (not waited for), in one transaction: a cluster record
 * (name, uid, provider, spec hash, node count from the tags; no spec:
 * gpc_cluster_rebuilt; provider data the first any of its resources has,
 * as gc hands it to cleanup), a node record per node found (rank,
 * provider id, region, zone, type, market, price, phase, address), a
 * pending node record (no provider id, the cluster's region) for each
 * rank below the node count that no node was found for (apply of the
 * spec makes it), a ledger entry per live node from its launch at its
 * tagged price, and an event "rebuild" saying so.  Not recorded, with the reason in `skipped`: a name
 * that a live record of another uid holds (both are kept as they are:
 * the other cluster's nodes stay untouched, and gpc_orphans lists them),
 * two nodes of one rank, nodes of two names, regions or spec hashes, a
 * name that is not a cluster name, a lock another gpuctl holds, a record
 * of that uid another gpuctl made meanwhile.  What
 * carries no gpuctl tag is never listed nor touched.  *out (caller frees
 * with free()) holds *n, one per cluster uid found.  Says each record
 * made on the session's log.  Errors: GPC_ERR_USAGE when the provider has
 * no list_orphans ("cannot rebuild from tags"); its listing's
 * (GPC_ERR_PARTIAL, naming what was not read, with *out holding what was
 * rebuilt from the rest); state errors.
 */
int gpc_cluster_rebuild(gpc_session *s, const char *provider, const char *name,
                        const char *const *regions, size_t n_regions, gpc_rebuilt **out,
                        size_t *n, gpc_error *err);

/*
 * 1 when record `c` was rebuilt from tags (gpc_cluster_rebuild) and has no
 * spec yet (its spec_json is ""): `apply` of a spec with its spec hash
 * takes that spec into the record (adoption); any other spec is refused;
 * `destroy` removes it as any cluster.
 */
int gpc_cluster_rebuilt(const gpc_cluster_rec *c);

/* Set by the SIGINT/SIGTERM handler while waiting. */
extern volatile sig_atomic_t gpc_interrupted;
void gpc_install_signal_handlers(void);

#endif
