/*
 * spec.h - the job spec (schema v1): parsing, validation, canonical form.
 *
 * The YAML schema is documented field by field in docs/spec.md; this header
 * is the in-memory form.  Sizes are GiB (2^30 bytes: "80GB", "80GiB" and
 * "80G" all mean 80 GiB, as GPU catalogs use the word), durations are
 * seconds, prices are USD.
 *
 * Strings are kept exactly as written in the YAML (an env value `no`, `0755`,
 * `1.10`, `on` stays that text); numbers and units are parsed only where a
 * field is numeric.
 *
 * Ownership: gpc_spec_load_* allocate a gpc_spec that the caller releases
 * with gpc_spec_free(); every pointer inside is owned by the spec.
 */
#ifndef GPUCTL_SPEC_H
#define GPUCTL_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"

struct cJSON;

#define GPC_SPEC_VERSION 1

/* The largest spec file accepted, in bytes. */
#define GPC_SPEC_MAX_BYTES (1u << 20)

/* The most `nodes` a spec may ask for, and the longest lifecycle.max_duration. */
#define GPC_SPEC_NODES_MAX 1024u
#define GPC_SPEC_DURATION_MAX_S (36500ull * 86400) /* 100 years */

/*
 * The default end of a node (seconds after its boot) whose spec bounds its
 * life with neither lifecycle.max_duration nor budget.max_total (nor says
 * `lifecycle.max_duration: none`): 72 hours, dstack's default max_duration
 * for tasks (github.com/dstackai/dstack issue 570, released with PR 571), so
 * that a hung job (a deadlocked NCCL all-reduce) does not bill a GPU node
 * forever.  lifecycle.idle_timeout does not count: it bounds only the time
 * after a job.  See gpc_spec_node_end.
 */
#define GPC_SPEC_DEFAULT_MAX_DURATION_S (72ull * 3600)

/* Interconnect between nodes. */
typedef enum gpc_interconnect {
    GPC_IC_ANY = 0,     /* whatever the offer has (default) */
    GPC_IC_NONE,        /* plain TCP; no fabric needed */
    GPC_IC_EFA,         /* AWS Elastic Fabric Adapter (libfabric + aws-ofi-nccl) */
    GPC_IC_INFINIBAND,  /* InfiniBand (Azure ND, ...) */
    GPC_IC_ERDMA,       /* Alibaba Cloud elastic RDMA */
    GPC_IC_RDMA         /* any of efa, infiniband, erdma: whichever the offer has */
} gpc_interconnect;

/* Purchase option for a node. */
typedef enum gpc_spot_policy {
    GPC_SPOT_ON_DEMAND = 0, /* default */
    GPC_SPOT_SPOT,          /* spot only */
    GPC_SPOT_AUTO           /* spot when cheaper and available, else on-demand */
} gpc_spot_policy;

/* Disk tier. */
typedef enum gpc_disk_tier {
    GPC_DISK_ANY = 0, GPC_DISK_STANDARD, GPC_DISK_SSD, GPC_DISK_NVME
} gpc_disk_tier;

/*
 * A closed or half-open range of a numeric quantity.  max == 0 means "no
 * upper bound"; min == 0 means "no lower bound".  `32+` is {32, 0}; `32` is
 * {32, 32}; `24GB..80GB` is {24, 80}.
 */
typedef struct gpc_range {
    double min;
    double max;
} gpc_range;

/*
 * One acceptable GPU configuration per node, e.g. "A100-80GB:8" is
 * {model "A100", memory {80,80}, count {8,8}}; "24GB..80GB:2" is
 * {model "", memory {24,80}, count {2,2}}; "H100:1..2" has count {1,2}.
 */
typedef struct gpc_gpu_req {
    char *model;        /* upper-case model name ("A100", "H100", "T4"), or "" for any */
    gpc_range mem_gib;  /* per-GPU memory, GiB; {0,0} = any */
    gpc_range count;    /* GPUs per node; count.min >= 1 unless cpu-only */
    /* Where the spec file writes this request, for messages about it: the
     * 1-based line and column of its YAML node (of the item, in a list; of
     * the anchored node, when written as an alias).  A spec loaded from a
     * saved plan counts from the spec text the plan embeds.  0 and 0 when
     * the request was not read from a spec (gpc_parse_gpu alone, as
     * `offers --gpu` does, or built in code).  Not part of the spec's
     * canonical JSON or hash. */
    unsigned line, col;
    /* 1 when the spec writes resources.gpu as a list (messages then name the
     * item "resources.gpu[i]", even in a list of one); 0 for a single value
     * or when not read from a spec. */
    int listed;
} gpc_gpu_req;

typedef struct gpc_env_var {
    char *name;   /* matches [A-Za-z_][A-Za-z0-9_]* */
    char *value;  /* byte-exact as written in the YAML; may be "" */
} gpc_env_var;

/* A secret (spec field `secrets`): a variable of the job's environment
 * whose value is read on this machine at apply time and never recorded:
 * not in the state, plan files, tags nor user-data (gpc_secrets_read). */
typedef struct gpc_secret_ref {
    char *name;    /* the job's variable, as an env name */
    char *source;  /* where its value comes from: "env:VAR" or "file:PATH"
                      (PATH as written: "~/" is the home directory, a
                      relative path is relative to the spec's directory);
                      a null value in the YAML is "env:NAME" */
    unsigned line, col; /* where the spec file writes the source (1-based; of
                      the key when the value is null), for messages; 0 when
                      not read from a spec; not part of the canonical form */
} gpc_secret_ref;

/* A data set of the job (spec field `data`, docs/spec.md#data): placed in
 * the store of the chosen offer's region before the nodes start, and seen
 * by every node at $GPUCTL_DATA_DIR/NAME. */
typedef struct gpc_data_src {
    char *name;      /* the data set's name: 1 to 63 letters, digits, '.',
                        '_' and '-', starting with a letter or digit (as
                        `gpuctl data push --name`) */
    char *source;    /* as written: a local directory (relative to the
                        spec's directory), or a store URL
                        "SCHEME://BUCKET/PREFIX" of a data set already
                        there (s3://...), used where it is */
    int is_url;      /* 1 when source is a URL */
    unsigned line, col; /* where the spec file writes the source (1-based),
                        for messages; not part of the canonical form */
} gpc_data_src;

typedef struct gpc_label {
    char *key;
    char *value;
} gpc_label;

typedef struct gpc_spec {
    char *source;          /* file name it was read from (for messages) */
    char *base_dir;        /* directory of that file; relative paths resolve here */

    char *name;            /* RFC 1123 label */
    char **providers;      /* candidates in preference order; default: the
                              registry's default provider (gpc_provider_default) */
    size_t n_providers;
    uint32_t nodes;        /* >= 1, default 1 */

    struct {
        gpc_gpu_req *gpus;     /* alternatives; n_gpus == 0 = no GPU asked for */
        size_t n_gpus;
        gpc_range cpus;        /* vCPUs per node */
        gpc_range memory_gib;  /* RAM per node, GiB */
        double disk_gib;       /* root disk size, GiB; 0 = provider default */
        gpc_disk_tier disk_tier;
        uint32_t disk_iops;    /* 0 = tier default */
        gpc_interconnect interconnect;
        char **instance_types; /* pinned instance types (any of), may be empty */
        size_t n_instance_types;
    } resources;

    char **regions;  size_t n_regions;   /* empty = any */
    char **zones;    size_t n_zones;     /* empty = any */

    struct {
        gpc_spot_policy policy;       /* default on-demand */
        double max_price;             /* USD per node-hour; 0 = no cap */
        gpc_spot_policy head;         /* policy for node rank 0; default = policy */
        /* spot.zone_cooldown: how long a zone that preempted a node or met
         * no capacity is passed over (seconds; 0 = never), when
         * zone_cooldown_set; else GPC_SPOT_ZONE_COOLDOWN_DEFAULT_S
         * (gpc_spec_zone_cooldown_s). */
        uint64_t zone_cooldown_s;
        int zone_cooldown_set;
        /* spot.fallback_after (policy auto only): after this many spot
         * interruptions of the cluster, a replacement is bought on-demand;
         * 0 = not set: GPC_SPOT_FALLBACK_AFTER_DEFAULT
         * (gpc_spec_fallback_after). */
        uint32_t fallback_after;
    } spot;

    struct {
        double max_hourly;  /* USD/hour for the whole cluster; 0 = no cap */
        double max_total;   /* USD for the cluster's lifetime; 0 = no cap */
    } budget;

    struct {
        uint64_t max_duration_s;  /* hard wall clock per node; 0 = not set
                                     (the node's end: gpc_spec_node_end) */
        int max_duration_none;    /* 1: the spec writes `max_duration: none`
                                     (max_duration_s is 0): no default end;
                                     canonical JSON "max_duration_s": "none" */
        uint64_t idle_timeout_s;  /* stop after this long with no job; 0 = none */
    } lifecycle;

    char *image;           /* logical image ("pytorch") or explicit id; default "pytorch" */
    gpc_env_var *env;      /* in document order */
    size_t n_env;
    gpc_secret_ref *secrets; /* in document order; names not in env */
    size_t n_secrets;
    gpc_label *labels;     /* tags put on every cloud resource */
    size_t n_labels;

    char *workdir;         /* local directory made available on each node, or NULL */
    char *checkpoint_dir;  /* directory for checkpoints (shared by nodes), or NULL */
    /* Where the spec file writes workdir and checkpoint_dir (1-based line
     * and column of the value), for messages (gpc_spec_at); 0 when not
     * read from a spec.  Not part of the canonical form. */
    unsigned workdir_line, workdir_col;
    unsigned checkpoint_dir_line, checkpoint_dir_col;
    gpc_data_src *data;    /* data sets (spec field `data`), in document order */
    size_t n_data;
    char *setup;           /* shell commands run once per node before `run`, or NULL */
    struct {
        char *command;          /* the training command (required) */
        uint32_t nproc_per_node;/* 0 = auto (GPUs on the node, else 1) */
        uint32_t rdzv_port;     /* c10d rendezvous TCP port; 0 = default 29400 */
    } run;

    /* What loading changed in the text a node executes (setup,
     * run.command), one note per field: "FILE:LINE: FIELD: ...".  A file
     * saved on Windows arrives as meant: every U+FEFF (a UTF-8 byte order
     * mark) and the CR of each CR LF line end are removed from that text,
     * which bash would otherwise run as part of the commands; the YAML
     * reader already drops a byte order mark that starts the file and reads
     * the file's own CR LF line breaks as LF.  The spec hash covers the
     * cleaned text: the same job either way.  Not part of the canonical
     * form. */
    char **notes;
    size_t n_notes;
} gpc_spec;

/*
 * Parse and validate a spec file.  `path` is read whole (at most
 * GPC_SPEC_MAX_BYTES); "-" reads standard input.  On failure returns
 * GPC_ERR_SPEC (or GPC_ERR_IO) with a message of the form
 * "FILE:LINE:COL: what is wrong" (or naming the field, e.g.
 * "FILE: resources.gpu: ...") and *out untouched.
 */
int gpc_spec_load_file(const char *path, gpc_spec **out, gpc_error *err);

/*
 * As gpc_spec_load_file, and hand the file's text to the caller in
 * *text (NUL-terminated; the caller frees it, also when parsing failed;
 * NULL when the file could not be read).  A saved plan embeds it.
 */
int gpc_spec_load_file_text(const char *path, gpc_spec **out, char **text,
                            gpc_error *err);

/*
 * Parse and validate a spec from memory.  `source` names it in messages
 * (e.g. "job.yaml"); `base_dir` resolves relative paths (may be NULL = ".").
 */
int gpc_spec_load_string(const char *source, const char *base_dir,
                         const char *text, size_t len,
                         gpc_spec **out, gpc_error *err);

/* Release a spec (NULL is fine). */
void gpc_spec_free(gpc_spec *spec);

/* Is s a valid cluster name: lower-case letters, digits and '-', a letter
 * first, no '-' last, 1 to 63 characters (an RFC 1123 label, as the
 * spec's `name`)?  1 or 0. */
int gpc_valid_cluster_name(const char *s);

/*
 * Canonical JSON form of the spec ("spec_version": 1, every field, defaults
 * filled in, keys in a fixed order).  Caller frees with cJSON_Delete.
 * Returns NULL only when out of memory.
 */
struct cJSON *gpc_spec_to_json(const gpc_spec *spec);

/*
 * SHA-256 (hex, 64 chars + NUL) of the canonical JSON printed unformatted.
 * Two specs that mean the same thing hash the same, whatever their YAML
 * layout, comments or key order.  Returns 0 or an error.
 */
int gpc_spec_hash(const gpc_spec *spec, char out[65], gpc_error *err);

/*
 * The absolute path of a spec path `p` on this machine (workdir, a data
 * set's directory, a secret's file:PATH, checkpoint_dir where the nodes
 * see this machine's files): a leading "~/" is $HOME's (the user's home
 * directory on this machine); else as is when absolute, else under the
 * spec file's directory; canonical (realpath) when it exists.  Caller
 * frees *out.
 * Errors: GPC_ERR_SPEC (the path is longer than PATH_MAX; "~/" with HOME
 * unset or empty: "FILE: '~/...': HOME is not set|empty, so '~/' cannot
 * be expanded; ..."), GPC_ERR_NOMEM; err may be NULL.
 */
int gpc_spec_path(const gpc_spec *spec, const char *p, char **out, gpc_error *err);

/*
 * gpc_spec_path of field `field` ("workdir", "data.NAME", ...), which the
 * spec file writes at `line`:`col` (1-based; 0: unknown): the same, but
 * "~/" with HOME unset or empty is said at the field's place,
 * "FILE:LINE:COL: FIELD: '~/...': HOME is not set|empty, so '~/' cannot be
 * expanded; set HOME, or write the path without '~'" (GPC_ERR_SPEC).
 */
int gpc_spec_path_at(const gpc_spec *spec, const char *field, const char *p, unsigned line,
                     unsigned col, char **out, gpc_error *err);

/* Longest text gpc_spec_at writes, NUL included. */
#define GPC_SPEC_AT_MAX 320

/*
 * "FILE:LINE:COL" of a place in the spec (spec->source, then the 1-based
 * line and column), or "FILE" alone when line is 0 (not read from a spec
 * file), into buf (GPC_SPEC_AT_MAX bytes; a longer file name is cut).
 * Returns buf.  Messages about a field begin with it: "FILE:3:10:
 * workdir: ...".
 */
const char *gpc_spec_at(const gpc_spec *spec, unsigned line, unsigned col,
                        char buf[GPC_SPEC_AT_MAX]);

/*
 * What validate, plan and apply refuse in a spec that the schema allows,
 * known on this machine without a plan:
 * gpc_spec_check_paths: workdir must be an existing directory (relative
 *   to the spec file's directory): GPC_ERR_SPEC "FILE: workdir: directory
 *   'X' does not exist (resolved: /abs/X)"; so must each data set given
 *   as a local directory: "FILE:LINE:COL: data.NAME: directory 'X' does
 *   not exist (resolved: /abs/X)" (or "... 'X' is not a directory ...").
 * gpc_spec_check_providers: a spec that names only providers this gpuctl
 *   cannot create nodes with (plan-only: Azure, Alibaba Cloud) is
 *   GPC_ERR_PROVIDER naming them and those available; `plan` still shows
 *   their offers, so it does not call this one.  Otherwise it returns
 *   what gpc_spec_check_targets does.
 * gpc_spec_check_targets: what `plan` and `apply` refuse on the chosen
 *   offer's provider (gpc_plan_check) when every provider of the spec
 *   would refuse it, so known without a catalog: what the providers'
 *   check_spec refuses (aws: an image that is no AMI id; the first
 *   one's error), a checkpoint_dir that
 *   is relative or a system directory when no provider's nodes may see
 *   this machine's files ("FILE:LINE:COL: checkpoint_dir: 'ckpt' must be
 *   an absolute path on the aws nodes"), secrets that no provider can
 *   deliver ("FILE:LINE:COL: secrets: slurm cannot deliver secrets ..."),
 *   data sets where no provider has an object store ("FILE:LINE:COL:
 *   data.NAME: azure has no object store in this release ...").  All
 *   GPC_ERR_SPEC, at the field's place where the spec keeps it.
 */
int gpc_spec_check_paths(const gpc_spec *spec, gpc_error *err);
int gpc_spec_check_providers(const gpc_spec *spec, gpc_error *err);
int gpc_spec_check_targets(const gpc_spec *spec, gpc_error *err);

/*
 * The values of the spec's secrets, read now: out[i] (name and value, both
 * heap; free with gpc_secrets_free, which wipes the values) for
 * spec->secrets[i].  An environment variable must be set (it may be
 * empty); a file must be a readable regular file of at most 64 KiB, and one
 * trailing newline ("\n" or "\r\n") is dropped.  A value holding a NUL
 * byte is refused.  Errors (GPC_ERR_SPEC, naming the spec file, the field
 * `secrets.NAME` and the source, never a value): "environment variable X
 * is not set", "file P: No such file or directory", ...; GPC_ERR_NOMEM.
 * *out is NULL and *n 0 on error and for a spec without secrets.
 */
int gpc_secrets_read(const gpc_spec *spec, gpc_env_var **out, size_t *n, gpc_error *err);

/* Wipe and free what gpc_secrets_read gave.  vals may be NULL. */
void gpc_secrets_free(gpc_env_var *vals, size_t n);

/* Parsers for the numeric forms, exposed for tests and other modules.
 * Each returns 0 or GPC_ERR_SPEC with a message naming `what`. */

/* "80GB" / "80GiB" / "80G" / "2TB" / "512MB" / "64" (GiB) -> GiB. */
int gpc_parse_size_gib(const char *what, const char *s, double *gib, gpc_error *err);

/* "30m", "72h", "1d", "90s", "1h30m", "3600" (seconds) -> seconds. */
int gpc_parse_duration(const char *what, const char *s, uint64_t *secs, gpc_error *err);

/* "A100-80GB:8", "A100:80GB:8", "H100:8", "T4", "24GB..80GB:2", "H100:1..2".
 * On success sets every field of *out (line, col and listed to 0) and
 * out->model is allocated (the caller frees it); on error *out is untouched. */
int gpc_parse_gpu(const char *what, const char *s, gpc_gpu_req *out, gpc_error *err);

/* Why a node ends when it does (gpc_spec_node_end). */
typedef enum gpc_end_why {
    GPC_END_NONE = 0,        /* no end: `lifecycle.max_duration: none` and no
                                budget end */
    GPC_END_MAX_DURATION,    /* the spec's lifecycle.max_duration */
    GPC_END_DEFAULT,         /* GPC_SPEC_DEFAULT_MAX_DURATION_S: the spec sets
                                no lifecycle.max_duration and no budget end
                                bounds the node */
    GPC_END_BUDGET           /* budget.max_total is spent at the cluster's
                                price before any max_duration */
} gpc_end_why;

/* A node's end: what the bootstrap enforces (render.h). */
typedef struct gpc_node_end {
    uint64_t max_duration_s; /* the max_duration the node runs under
                                (MAX_DURATION_S): the spec's, else the
                                default, else 0 (none) */
    uint64_t budget_s;       /* seconds after boot when the cluster, at
                                cluster_hourly, has spent budget.max_total
                                (BUDGET_S): floor(max_total / price * 3600),
                                at least 1, at most 1e12; 0 = no budget end */
    uint64_t end_s;          /* the sooner of the two that are not 0; 0 =
                                the node has no end */
    gpc_end_why why;         /* which one end_s is */
} gpc_node_end;

/*
 * The end of a node of `spec` in a cluster that costs `cluster_hourly` USD
 * per hour (all its nodes; 0 or less: costs nothing or not known, so
 * budget.max_total gives no end).  The default max_duration applies when
 * the spec sets no lifecycle.max_duration, does not say `none`, and no
 * budget end bounds the node (no budget.max_total, or a cluster that costs
 * nothing); lifecycle.idle_timeout does not count.  Fills *out; no errors.
 */
void gpc_spec_node_end(const gpc_spec *spec, double cluster_hourly, gpc_node_end *out);

/* Names for enums, as written in the YAML. */
const char *gpc_interconnect_name(gpc_interconnect ic);
const char *gpc_spot_policy_name(gpc_spot_policy p);

/* spot.zone_cooldown when the spec does not set it: 30 minutes, long
 * enough to outlast one wave of interruptions (several workers of a pool
 * taken back minutes apart, each replacement otherwise sent back into
 * the same starved zone), short enough that a region of two or three
 * zones has them all back within an hour (docs/spec.md, spot). */
#define GPC_SPOT_ZONE_COOLDOWN_DEFAULT_S 1800u
/* spot.fallback_after when not set: one interruption may be bad luck, a
 * second one in the same cluster says the pool is unsteady, and each
 * costs a restart from the latest checkpoint. */
#define GPC_SPOT_FALLBACK_AFTER_DEFAULT 2u
/* The most spot.fallback_after may be. */
#define GPC_SPOT_FALLBACK_AFTER_MAX 10000u

/* The zone cooldown `spec` asks for, in seconds (0: zones are never
 * passed over): spot.zone_cooldown when set, else the default. */
uint64_t gpc_spec_zone_cooldown_s(const gpc_spec *spec);

/* The spot interruptions after which recovery buys on-demand: 0 when the
 * policy is not auto (never), else spot.fallback_after or its default. */
uint32_t gpc_spec_fallback_after(const gpc_spec *spec);
const char *gpc_disk_tier_name(gpc_disk_tier t);

#endif /* GPUCTL_SPEC_H */
