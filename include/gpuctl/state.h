/*
 * state.h - gpuctl's local state: one SQLite database per state directory.
 *
 * Location: --state-dir, else $GPUCTL_STATE_DIR, else
 * $XDG_STATE_HOME/gpuctl, else $HOME/.local/state/gpuctl.  The database file is gpuctl.db, mode 0600, in
 * WAL mode with a busy timeout, so concurrent gpuctl processes never lose or
 * corrupt a record, and every change is one transaction (a process killed
 * mid-write leaves the old or the new state, never a mix).
 *
 * Tables: clusters, nodes, attempts (provisioning tries and their errors),
 * events, ledger (node start/stop x price), capacity_misses (pools that
 * recently had no capacity), zone_cooldowns (zones passed over for a
 * while: spot.zone_cooldown).  Times are Unix seconds (UTC),
 * prices USD/hour.  Secrets are never stored.
 *
 * Ownership: a gpc_state is opened with gpc_state_open and closed with
 * gpc_state_close.  Record structs filled by the getters own their strings;
 * release them with the matching *_free / gpc_*_list_free.
 */
#ifndef GPUCTL_STATE_H
#define GPUCTL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"

typedef struct gpc_state gpc_state;

/* Phases of a node (and, summarised, of a cluster). */
typedef enum gpc_phase {
    GPC_PHASE_PENDING = 0, /* recorded, not yet created at the provider */
    GPC_PHASE_BOOTING,     /* created; bootstrap not yet running the job */
    GPC_PHASE_RUNNING,     /* the job is running */
    GPC_PHASE_SUCCEEDED,   /* the job ended with exit status 0 */
    GPC_PHASE_FAILED,      /* the job ended non-zero, or the node broke */
    GPC_PHASE_PREEMPTED,   /* the provider took the node back */
    GPC_PHASE_TERMINATED,  /* deleted at the provider */
    GPC_PHASE_COUNT
} gpc_phase;

const char *gpc_phase_name(gpc_phase p);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int gpc_phase_parse(const char *name, gpc_phase *out);

typedef struct gpc_cluster_rec {
    int64_t id;
    char *name;          /* unique among clusters not yet destroyed */
    char *uid;           /* random id of this cluster instance (rdzv id, tags) */
    char *provider;
    char *spec_hash;     /* gpc_spec_hash of the spec applied */
    char *spec_json;     /* canonical spec JSON; "" = not known: the record
                            was rebuilt from the provider's tags
                            (gpc_cluster_rebuilt, cluster.h) */
    char *spec_path;     /* absolute path of the spec file, or "" */
    uint32_t nodes;      /* desired node count */
    uint32_t rdzv_port;
    gpc_phase phase;     /* summary phase */
    int exit_code;       /* rank 0's exit status, -1 while unknown */
    int64_t created_at;
    int64_t updated_at;
    int64_t destroyed_at;/* 0 while alive */
    char *provider_data; /* what the provider keeps of the cluster
                            (gpc_cluster_ref.data): a JSON object, "" = none */
} gpc_cluster_rec;

typedef struct gpc_node_rec {
    int64_t id;
    int64_t cluster_id;
    uint32_t rank;
    char *name;          /* "<cluster>-<rank>" */
    char *provider;
    char *provider_id;   /* id at the provider (instance id, local dir); "" until created */
    char *client_token;  /* idempotency token used for create */
    char *region;
    char *zone;
    char *instance_type;
    int spot;            /* 1 = spot */
    char *private_ip;    /* "" until known */
    double price_hourly; /* USD/hour */
    gpc_phase phase;
    int exit_code;       /* -1 while unknown */
    int64_t created_at;
    int64_t started_at;  /* 0 until created at the provider */
    int64_t ended_at;    /* 0 while alive */
    char *provider_data; /* what the provider keeps of the node
                            (gpc_node_status.data): a JSON object, "" = none */
} gpc_node_rec;

typedef struct gpc_event_rec {
    int64_t id;
    int64_t cluster_id;
    int64_t at;
    int rank;            /* -1 for cluster-wide events */
    char *kind;          /* "create", "phase", "delete", "error", ... */
    char *message;
} gpc_event_rec;

/*
 * The state directory when --state-dir is not given, into *out (caller
 * frees): $GPUCTL_STATE_DIR as given (non-empty; a relative one is the
 * caller's to make absolute, as --state-dir's), else $XDG_STATE_HOME/gpuctl
 * (an absolute XDG_STATE_HOME; a relative one is ignored, as the XDG base
 * directory spec says), else $HOME/.local/state/gpuctl.  Errors:
 * GPC_ERR_STATE when none of the three is set, GPC_ERR_NOMEM.
 */
int gpc_state_dir_default(char **out, gpc_error *err);

/*
 * Open (creating it and the directory, mode 0700 / 0600, when missing) the
 * database in `dir`.  Applies the schema migrations.  Returns 0 or
 * GPC_ERR_STATE / GPC_ERR_IO.
 *
 * A new database is built whole next to its final name and renamed into
 * place, so an empty (0-byte) gpuctl.db is never one being made: it is
 * refused (GPC_ERR_STATE, saying how to recover) instead of being taken
 * for an empty state.  A database of a newer schema is refused before
 * anything writes to it.  On a full disk the message says so.
 */
int gpc_state_open(const char *dir, gpc_state **out, gpc_error *err);

/* Flags of gpc_state_open_ex. */
enum {
    /* The caller only reads: when the disk is too full to open the state
     * read-write, open it read-only (writes then fail with a message
     * naming the full disk; gpc_state_read_only tells). */
    GPC_STATE_READ_ONLY_OK = 1,
};
int gpc_state_open_ex(const char *dir, unsigned flags, gpc_state **out, gpc_error *err);

/* 1 when the state was opened read-only (GPC_STATE_READ_ONLY_OK). */
int gpc_state_read_only(const gpc_state *st);
void gpc_state_close(gpc_state *st);

/* Directory the state lives in (owned by st). */
const char *gpc_state_path(const gpc_state *st);

/*
 * Check the database (used by `doctor`): runs PRAGMA integrity_check and
 * PRAGMA foreign_key_check.  Returns 0 when both are clean, else
 * GPC_ERR_STATE with the first problem found in err.
 */
int gpc_state_check(gpc_state *st, gpc_error *err);

/* Wrap several calls in one transaction (BEGIN IMMEDIATE ... COMMIT). */
int gpc_state_begin(gpc_state *st, gpc_error *err);
int gpc_state_commit(gpc_state *st, gpc_error *err);
void gpc_state_rollback(gpc_state *st);

/* Clusters.  "Live" = destroyed_at == 0. */
int gpc_cluster_insert(gpc_state *st, gpc_cluster_rec *rec, gpc_error *err); /* sets rec->id */
int gpc_cluster_update(gpc_state *st, const gpc_cluster_rec *rec, gpc_error *err);
/* Set only the provider data of cluster `id` (a JSON object, "" = none;
 * copied).  GPC_ERR_NOT_FOUND when no such cluster, GPC_ERR_STATE. */
int gpc_cluster_set_provider_data(gpc_state *st, int64_t id, const char *data, gpc_error *err);
/* Live cluster by name; GPC_ERR_NOT_FOUND when none. */
int gpc_cluster_get(gpc_state *st, const char *name, gpc_cluster_rec *out, gpc_error *err);
int gpc_cluster_get_by_id(gpc_state *st, int64_t id, gpc_cluster_rec *out, gpc_error *err);
/* Live clusters (all = 1: destroyed too), ordered by name then id. */
int gpc_cluster_list(gpc_state *st, int all, gpc_cluster_rec **out, size_t *n, gpc_error *err);
void gpc_cluster_rec_free(gpc_cluster_rec *rec);
void gpc_cluster_list_free(gpc_cluster_rec *recs, size_t n);

/* Nodes.  (cluster_id, rank) is unique among nodes not terminated. */
int gpc_node_insert(gpc_state *st, gpc_node_rec *rec, gpc_error *err); /* sets rec->id */
int gpc_node_update(gpc_state *st, const gpc_node_rec *rec, gpc_error *err);
/* Nodes of a cluster ordered by rank then id (include_terminated = 0 hides those). */
int gpc_node_list(gpc_state *st, int64_t cluster_id, int include_terminated,
                  gpc_node_rec **out, size_t *n, gpc_error *err);
void gpc_node_rec_free(gpc_node_rec *rec);
void gpc_node_list_free(gpc_node_rec *recs, size_t n);

/*
 * Provisioning attempts: one row per create call (or per pool skipped),
 * with its outcome.  `attempt` numbers the launch attempts of a cluster
 * (1, 2, ...: one per offer and zone tried).  outcome is "created",
 * "error" (error_code a gpc_code name, error_message the provider's text)
 * or "skipped" (a pool that met no capacity a short while ago).  at == 0
 * when adding means now.  Lists own their strings
 * (gpc_attempt_list_free).
 */
typedef struct gpc_attempt_rec {
    int64_t id;
    int64_t cluster_id;
    uint32_t rank;
    int64_t at;
    const char *provider;
    const char *region;
    const char *zone;          /* "" when the provider chose */
    const char *instance_type;
    int spot;
    uint32_t attempt;
    const char *outcome;
    const char *error_code;
    const char *error_message;
} gpc_attempt_rec;
int gpc_attempt_add(gpc_state *st, const gpc_attempt_rec *a, gpc_error *err);
int gpc_attempt_list(gpc_state *st, int64_t cluster_id, gpc_attempt_rec **out, size_t *n,
                     gpc_error *err);
void gpc_attempt_list_free(gpc_attempt_rec *recs, size_t n);

/*
 * Capacity misses: a pool (provider, region, zone, instance type, market)
 * that answered "no capacity" at `at` (Unix seconds).  The core skips such
 * a pool for a while instead of asking again at once (docs/cli.md).
 * gpc_capacity_miss_last sets *at to the latest miss, 0 when none.
 */
int gpc_capacity_miss_add(gpc_state *st, const char *provider, const char *region,
                          const char *zone, const char *instance_type, int spot, int64_t at,
                          gpc_error *err);
int gpc_capacity_miss_last(gpc_state *st, const char *provider, const char *region,
                           const char *zone, const char *instance_type, int spot,
                           int64_t *at, gpc_error *err);

/*
 * Zone cooldowns: zone `zone` of `region` at `provider` took a node of a
 * cluster back (a spot interruption) or had no capacity at `at`, and is
 * passed over until `until` (both Unix seconds; spot.zone_cooldown, which
 * zone, in which order: docs/spot.md).  `why` says which, for people
 * ("node job-1 (i-0abc) was preempted", "no capacity for p5.48xlarge
 * spot"; never a secret); "" = none.  Strings are copied.  Errors:
 * GPC_ERR_STATE.
 */
int gpc_zone_cool_add(gpc_state *st, const char *provider, const char *region, const char *zone,
                      int64_t at, int64_t until, const char *why, gpc_error *err);

/* A zone's cooldown as gpc_zone_cool_get reads it; owns its string. */
typedef struct gpc_zone_cool_rec {
    int64_t at;      /* when it began (Unix seconds) */
    int64_t until;   /* passed over until then (Unix seconds) */
    char *why;
} gpc_zone_cool_rec;

/*
 * The cooldown of (provider, region, zone) that lasts longest, when it
 * still holds at `now` (until > now, Unix seconds): *found = 1 and *out
 * filled (gpc_zone_cool_rec_free); else *found = 0 and *out zeroed.
 * Errors: GPC_ERR_STATE (also for a row whose times are not times).
 */
int gpc_zone_cool_get(gpc_state *st, const char *provider, const char *region, const char *zone,
                      int64_t now, gpc_zone_cool_rec *out, int *found, gpc_error *err);
void gpc_zone_cool_rec_free(gpc_zone_cool_rec *rec);

/* Events: an append-only log shown by status -v and logs. */
int gpc_event_add(gpc_state *st, int64_t cluster_id, int rank,
                  const char *kind, const char *message, gpc_error *err);
int gpc_event_list(gpc_state *st, int64_t cluster_id,
                   gpc_event_rec **out, size_t *n, gpc_error *err);
void gpc_event_list_free(gpc_event_rec *recs, size_t n);

/* Cost ledger: open an entry when a node starts, close it when it stops.
 * An entry also keeps the node's region and market (spot or on-demand) as
 * recorded when it opens: record the node's place first.  gpuctl cost
 * reads the entries (cost.h). */
int gpc_ledger_open(gpc_state *st, int64_t cluster_id, int64_t node_id,
                    const char *provider, const char *instance_type,
                    double price_hourly, int64_t start_at, gpc_error *err);
int gpc_ledger_close(gpc_state *st, int64_t node_id, int64_t stop_at, gpc_error *err);
/* Cost so far in USD for a cluster: sum of (stop or now - start)/3600 x price. */
int gpc_ledger_cost(gpc_state *st, int64_t cluster_id, int64_t now,
                    double *usd, gpc_error *err);

/*
 * Fingerprint of what the state holds for cluster `name`: SHA-256 (hex)
 * over its id, spec hash, provider and every live node's rank and provider
 * id; "absent" hashed when there is no live cluster.  Phases are left out:
 * a node moving from booting to running does not make a plan stale.
 */
int gpc_state_fingerprint(gpc_state *st, const char *name, char out[65], gpc_error *err);

#endif /* GPUCTL_STATE_H */
