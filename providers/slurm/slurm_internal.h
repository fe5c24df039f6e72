/*
 * slurm_internal.h - what the files of the slurm provider share (private
 * to providers/slurm/): the Slurm clusters of the config file, the way
 * commands reach a cluster's login node, the record `gpuctl check slurm`
 * keeps of each cluster, and the functions one file calls in another.
 *
 *   slurm.c    the provider table, open/close (the [slurm "NAME"] sections
 *              of the config file), check
 *   exec.c     running a command on a Slurm cluster's login node: here
 *              (login = local) or through the system's OpenSSH client
 *   record.c   what a Slurm cluster has (partitions, nodes, GPUs, limits),
 *              asked with sinfo/scontrol and kept under the state directory;
 *              the offers made from it
 *   shell.c    a shell on a node of the job (gpuctl ssh): an srun step
 *   job.c      one sbatch allocation per gpuctl cluster: submit, find,
 *              describe (scontrol/squeue), cancel, logs
 *
 * Words: a "Slurm cluster" is a configured Slurm installation (a site of
 * the config file); a gpuctl "cluster" is one job's nodes, here one Slurm
 * job (an allocation of N nodes).  An offer's region is the Slurm
 * cluster's name, its zone the partition.
 */
#ifndef GPUCTL_SLURM_INTERNAL_H
#define GPUCTL_SLURM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/buf.h"
#include "gpuctl/error.h"
#include "gpuctl/log.h"
#include "gpuctl/provider.h"

/* One Slurm cluster of the config file ([slurm "NAME"]). */
typedef struct slurm_site {
    char name[48];          /* the section's NAME: an offer's region */
    int local;              /* login = local: gpuctl runs on a login node */
    char login[256];        /* else the ssh destination ([user@]host, or a
                               Host of ~/.ssh/config) */
    char (*partitions)[64]; /* partitions = a, b: the ones gpuctl may use, */
    size_t n_partitions;    /*   0 = every partition the record lists */
    char account[64];       /* sbatch --account, "" = the user's default */
    char qos[64];           /* sbatch --qos, "" = the default */
    double gpu_hour_price;  /* USD per GPU-hour the user pays; 0 = free */
    char job_dir[1024];     /* on the shared filesystem, as the login node
                               and every compute node see it: where each
                               job's bootstrap, logs and node homes go */
    char from[320];         /* "FILE:LINE" of its section, for messages */
} slurm_site;

typedef struct slurm_ctx {
    slurm_site *sites;
    size_t n_sites;
    char state_dir[1024];   /* gpuctl's state directory ("" = none) */
    const gpc_log *log;
} slurm_ctx;

/* A site by name, or NULL. */
const slurm_site *slurm_site_find(const slurm_ctx *c, const char *name);

/* ---- store.c: object storage (provider.h), JOB_DIR/store ---- */

int slurm_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                    gpc_error *err);
int slurm_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                     gpc_store_stats *st, gpc_error *err);
int slurm_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                     gpc_store_stats *st, gpc_error *err);
int slurm_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                     size_t *n, gpc_error *err);
int slurm_store_delete(void *ctx, const char *region, const char *path,
                       const char *const *keys, size_t n, gpc_error *err);
int slurm_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                       gpc_error *err);

/* ---- exec.c ---- */

/* What a command run on the login node did. */
typedef struct slurm_result {
    int status;             /* its exit status; 128+N when signal N ended it */
    gpc_buf out;            /* its standard output (owned; NUL-terminated) */
    gpc_buf err;            /* its standard error (owned; NUL-terminated) */
} slurm_result;

/* Most bytes kept of a command's output (each of out and err); more is an
 * error. */
#define SLURM_OUTPUT_MAX (8u << 20)

/*
 * Run the shell command line `cmd` on site `s`'s login node, with `input`
 * (len bytes, NULL = nothing) on its standard input, and wait at most
 * timeout_s seconds.  login = local: /bin/sh -c cmd, in gpuctl's
 * environment less everything but what the Slurm commands and the user's
 * software environment need (exec.c keep_var; docs/providers/slurm.md), so
 * that no secret of gpuctl's environment, such as AWS_SECRET_ACCESS_KEY,
 * reaches a job that sbatch --export=ALL starts;
 * otherwise `ssh -o BatchMode=yes -o ConnectTimeout=15 -- LOGIN cmd`
 * (the user's ssh config and agent apply; the login node's shell runs
 * cmd).  *r is filled (free with slurm_result_free, also after an error)
 * whatever the command's status: a non-zero status is not an error here.
 * Errors: GPC_ERR_PROVIDER when the command cannot be started, or ssh
 * cannot reach the login node (status 255: the message names the login
 * and ssh's last line; retryable); GPC_ERR_TIMEOUT when it ran past
 * timeout_s (its process group is killed); GPC_ERR_PROVIDER when its
 * output passes SLURM_OUTPUT_MAX; GPC_ERR_NOMEM.
 */
int slurm_exec(const slurm_site *s, const char *cmd, const char *input, size_t len,
               int timeout_s, slurm_result *r, gpc_error *err);
void slurm_result_free(slurm_result *r);

/*
 * Run `cmd` as slurm_exec does, and fail when it exits non-zero:
 * GPC_ERR_PROVIDER "slurm: LABEL on Slurm cluster 'NAME' failed (exit N):
 * <the first line of its stderr>".  `label` names the command for the
 * message ("sbatch").  *r as for slurm_exec.
 */
int slurm_exec_ok(const slurm_site *s, const char *label, const char *cmd, const char *input,
                  size_t len, int timeout_s, slurm_result *r, gpc_error *err);

/* ---- record.c ---- */

/* The value of the Key=Value word `key` in the line [l, l+len) (scontrol's
 * -o output), or NULL; *vlen gets its length. */
const char *slurm_kv_find(const char *l, size_t len, const char *key, size_t *vlen);

/* The first non-blank line of `s`, without its end's blanks; *len gets
 * its length. */
const char *slurm_first_line(const char *s, size_t *len);

/* One node of a partition, as sinfo lists it. */
typedef struct slurm_node_rec {
    char name[64];
    char partition[64];
    uint32_t cpus;
    uint64_t mem_mib;       /* RealMemory, MiB */
    char gpu_type[32];      /* GRES gpu type ("a100"), "" when untyped */
    uint32_t gpus;          /* GRES gpu count, 0 = none */
    char state[32];         /* sinfo %T: idle, mixed, allocated, down, drained, ... */
} slurm_node_rec;

typedef struct slurm_part_rec {
    char name[64];
    int is_default;
    long max_time_min;      /* MaxTime in minutes, -1 = UNLIMITED */
    uint32_t max_nodes;     /* MaxNodes per job, 0 = UNLIMITED */
    uint32_t total_nodes;
    char state[16];         /* UP, DOWN, DRAIN, INACTIVE */
} slurm_part_rec;

/* What `gpuctl check slurm` found of one Slurm cluster. */
typedef struct slurm_record {
    char site[48];
    int64_t checked_at;     /* Unix seconds */
    char version[32];       /* "slurm 22.05.8" */
    slurm_part_rec *parts;
    size_t n_parts;
    slurm_node_rec *nodes;  /* one per node and partition */
    size_t n_nodes;
} slurm_record;

/* Ask site `s` what it has (scontrol ping, `sinfo SLURM_SINFO_FORMAT`,
 * `scontrol show partition -o`, `sinfo -V`) into *out (free with
 * slurm_record_free).  In slurm.c: the only part that runs commands. */
int slurm_record_fetch(const slurm_site *s, slurm_record *out, gpc_error *err);

/* The sinfo command line slurm_record_fetch runs: one line per node and
 * partition, fields separated by '|': partition (no '*'), node, CPUs,
 * RealMemory (MiB), GRES, state. */
#define SLURM_SINFO_FORMAT "sinfo -h -a -N -o '%R|%N|%c|%m|%G|%T'"

/*
 * Make *out (zeroed first; free with slurm_record_free) from what the
 * commands printed: `sinfo_out` (SLURM_SINFO_FORMAT's lines), `parts_out`
 * (`scontrol show partition -o`: one line per partition of Key=Value
 * words: PartitionName, Default, MaxTime, MaxNodes, TotalNodes, State),
 * `version_out` (`sinfo -V`: "slurm 22.05.8").  The site's name and the
 * time are the caller's to set; version is sinfo -V's first line as
 * printed (Debian's: "slurm-wlm 22.05.8").  GRES such as "gpu:a100:2",
 * "gpu:a100:2(S:0-1)", "gpu:4", "gpu:a100:2,shard:8" and "(null)" are
 * understood; a node with GPUs of two types ("gpu:a100:2,gpu:v100:1") is
 * recorded with the first type and its count.  Errors: GPC_ERR_PROVIDER naming the line that is not of
 * that form; GPC_ERR_NOMEM.
 */
int slurm_record_parse(const char *sinfo_out, const char *parts_out, const char *version_out,
                       slurm_record *out, gpc_error *err);
/* Keep it under the state directory (STATE_DIR/slurm/NAME.json), and read
 * it back: GPC_ERR_NOT_FOUND when there is none yet. */
int slurm_record_save(const slurm_ctx *c, const slurm_record *rec, gpc_error *err);
int slurm_record_load(const slurm_ctx *c, const char *site, slurm_record *out, gpc_error *err);
void slurm_record_free(slurm_record *rec);

/*
 * The offers of every configured site's record for `spec` (list_offers;
 * ctx is a slurm_ctx).  One offer per site, partition (the site's
 * `partitions`, else every one the record lists) and node shape (CPUs,
 * memory in whole GiB, GPU type and count): provider "slurm", region =
 * site, zone = partition, instance type naming the shape
 * ("GxTYPE-Ccpu-Mgib": "2xa100-2cpu-3gib"; TYPE "gpu" for untyped GRES;
 * "Ccpu-Mgib" without GPUs; M = RealMemory / 1024 rounded down), gpu_model
 * the GRES type in the catalog's form ("a100" -> "A100",
 * "nvidia_a100-sxm4-80gb" -> "A100-SXM4-80GB", gpu_mem_gib 80 from its
 * "80GB" part, else 0), mem_gib the least RealMemory of the shape / 1024,
 * price gpu_hour_price x GPUs per node-hour, on-demand only (spot 0),
 * fabric "" (not known).  A partition is left out, with the reason kept
 * for the error, when it is not UP, has fewer usable nodes of at least
 * the shape (not down, drain*, fail*, inval, future, nor '*' not
 * responding) than spec->nodes, caps a job below spec->nodes (MaxNodes),
 * or limits time below spec->lifecycle.max_duration_s (MaxTime).
 * spec->regions narrow the sites, spec->zones the partitions.  Sites
 * without a record yet are named in the error ("run gpuctl check slurm").
 * Errors: GPC_ERR_CAPACITY with every reason when no offer is left (no
 * site configured: say how to add one, docs/providers/slurm.md);
 * GPC_ERR_NOMEM; a record that cannot be read (GPC_ERR_IO, naming it).
 */
int slurm_list_offers(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                      gpc_error *err);

/* ---- job.c ---- */

/* The most nodes of one job whose status is read (ranks beyond are
 * reported from the job's state alone). */
#define SLURM_JOB_NODES_MAX 64

/* What one poll learnt of a job. */
typedef struct slurm_job_view {
    char error[256];        /* "" or what scontrol said when it could not
                               answer (not "Invalid job id": the job is
                               then forgotten, and known is 0) */
    int known;              /* Slurm (or accounting) knows the job */
    char state[32];         /* JobState: PENDING, RUNNING, COMPLETED, ... */
    char reason[128];       /* Reason: why it is pending ("Resources") */
    int exit_code, exit_signal; /* ExitCode=CODE:SIGNAL */
    char nodelist[256];     /* NodeList as Slurm prints it ("node[1-2]") */
    size_t n_nodes;         /* the allocation's hosts, in rank order: */
    struct {
        char name[64], addr[64], state[64]; /* NodeName, NodeAddr, State */
    } nodes[SLURM_JOB_NODES_MAX];
    struct {                /* what each rank's bootstrap recorded */
        int seen;           /* its directory exists */
        char phase[16];     /* its phase file, "" when none */
        int exit_status;    /* its exit_status file; -1 = none recorded */
    } files[SLURM_JOB_NODES_MAX];
} slurm_job_view;

/*
 * Read what job.c's status command printed (sections "@job": the line of
 * `scontrol show job -o` or nothing; "@error MESSAGE" instead, and
 * nothing after it, when scontrol could not answer; "@acct": `sacct -n -P -X -o
 * State,ExitCode` lines when Slurm has forgotten the job; "@nodes": a
 * `scontrol show node -o` line per host of the allocation, in rank order;
 * "@files": "RANK|PHASE|EXIT_STATUS" per node directory) into *v.
 */
void slurm_job_view_parse(const char *text, slurm_job_view *v);

/*
 * The status of node `rank` of job `job` on site `site` from *v
 * (docs/providers/slurm.md, "Status, logs, destroy"): phase, exit code,
 * whether it stopped, its NodeAddr, and the detail the engine says (the
 * pending reason, the lost node).
 */
void slurm_job_node_status(const char *site, long job, unsigned rank, const slurm_job_view *v,
                           gpc_node_status *o);

int slurm_create_nodes(void *ctx, const gpc_node_request *reqs, size_t n,
                       gpc_node_status *out, gpc_error *err);
int slurm_find_node(void *ctx, const char *region, const char *client_token,
                    gpc_node_status *out, gpc_error *err);
int slurm_describe_node(void *ctx, const gpc_node_ref *node, gpc_node_status *out,
                        gpc_error *err);
int slurm_describe_nodes(void *ctx, const gpc_cluster_ref *c, const char *const *ids,
                         size_t n, gpc_node_status *out, gpc_error *err);
int slurm_delete_node(void *ctx, const gpc_node_ref *node, gpc_error *err);
int slurm_read_log(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                   uint32_t node_rank, long offset, int may_wait, gpc_buf *out, long *next,
                   int *exit_status, gpc_error *err);

/* Append to b the shell word of site s's job directory, for the shell of
 * the login node (a path under ~/ keeps "$HOME" for that shell to expand:
 * "$HOME"/'rest'; any other path quoted whole).  Errors: GPC_ERR_NOMEM. */
int slurm_dir_word(gpc_buf *b, const slurm_site *s, gpc_error *err);

/* ---- shell.c ---- */

struct gpc_argv;

/* The script of the shell_argv's first bash: it exports GPUCTL_HOME (its
 * $1), then becomes a login shell with the words after it ("-c CMD", or
 * none for an interactive one). */
#define SLURM_SHELL_HOME_SCRIPT \
    "GPUCTL_HOME=$1; export GPUCTL_HOME; shift; exec /bin/bash -l \"$@\""

/*
 * The srun words that run `cmd` (n_cmd words joined by spaces, for bash
 * -c; none: an interactive login shell) on the node of rank `rank` of
 * Slurm job `job`, with GPUCTL_HOME set to `home` (the node's directory,
 * JOB_DIR/job-JOB/node-RANK, as srun's own argument), appended to *a:
 * "srun --jobid=JOB --overlap --nodes=1 --ntasks=1 --relative=RANK
 * --export=NONE [--pty] /bin/bash -c SLURM_SHELL_HOME_SCRIPT gpuctl HOME
 * [-c CMD]" (--pty when tty).  *home_at receives the index in a->v of the
 * HOME word (a caller that writes the words for a shell may write its own
 * form there).  Errors: GPC_ERR_NOMEM.
 */
int slurm_shell_words(long job, uint32_t rank, const char *home, const char *const *cmd,
                      size_t n_cmd, int tty, struct gpc_argv *a, size_t *home_at,
                      gpc_error *err);

/* The seam's shell_argv (provider.h): slurm_shell_words, run here (login =
 * local) or as one quoted command line through `ssh -t|-T -- LOGIN`. */
int slurm_shell_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                     uint32_t rank, const char *const *cmd, size_t n_cmd, int tty,
                     char ***argv, gpc_error *err);

#endif /* GPUCTL_SLURM_INTERNAL_H */
