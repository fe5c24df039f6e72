/*
 * provider.h - the one interface every provider implements.
 *
 * A provider is a `const gpc_provider` table of function pointers (the shape
 * curl uses for its TLS backends): providers/<name>/ fills one in, and
 * gpc_providers[] lists those compiled in.  The core owns planning, retries,
 * waiting, state and cleanup; a provider only translates one operation into
 * its API calls.  Optional operations may be NULL; callers check.
 *
 * Every operation is idempotent where the API allows it: create_node takes a
 * client token (EC2 ClientToken, Azure resource name, Aliyun ClientToken; the
 * local provider's node directory) so that a create repeated after a crash
 * finds the node it already made instead of making a second one, and
 * delete_node of a node already gone succeeds.
 */
#ifndef GPUCTL_PROVIDER_H
#define GPUCTL_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"
#include "gpuctl/http.h"
#include "gpuctl/log.h"
#include "gpuctl/render.h"
#include "gpuctl/spec.h"
#include "gpuctl/state.h"

struct gpc_buf;
struct gpc_catalog;

/* Capability bits. */
#define GPC_CAP_SPOT        (1u << 0)  /* spot / preemptible capacity */
#define GPC_CAP_EFA         (1u << 1)
#define GPC_CAP_INFINIBAND  (1u << 2)
#define GPC_CAP_ERDMA       (1u << 3)
#define GPC_CAP_PLACEMENT   (1u << 4)  /* placement groups */
#define GPC_CAP_FREE        (1u << 5)  /* costs nothing: no confirmation needed */
#define GPC_CAP_OWN_OFFERS  (1u << 6)  /* lists its offers itself (list_offers)
                                          instead of from the built-in catalog */
#define GPC_CAP_SHARED_FILES (1u << 7) /* nodes see this machine's files: workdir
                                          and checkpoint_dir are used in place */
/* (1u << 8) was GPC_CAP_LAUNCH_INDEX: gpc_provider.rank = GPC_RANK_LAUNCH_INDEX */
/* Plan-only providers (docs/providers/azure.md, aliyun.md): their offers
 * are planned from the catalog, but the provider cannot create nodes yet:
 * no open() nor create_node.  Lookups find them (spec validation, plan,
 * offers, render); nothing opens them, and `apply` of their offer fails
 * with "not built into this gpuctl".  Their node script and user-data rules
 * are real, so `gpuctl render --provider NAME` shows what a node would get. */
#define GPC_CAP_PLAN_ONLY   (1u << 9)
/* The nodes of a cluster are made and removed as one group (a Slurm job,
 * an Azure scale set, a Kubernetes Indexed Job): the engine makes every
 * rank in one create_nodes call, all or nothing, and never one node by
 * itself; delete_node of any member removes the whole group (the others'
 * delete_node then finds them gone and succeeds).  A node lost from a
 * group is not replaced alone: the group is removed and made again.
 * Needs create_nodes. */
#define GPC_CAP_GROUP       (1u << 10)
/* The provider queues what it is asked for (a batch scheduler: a Slurm job
 * waits in its partition's queue until the nodes are free, for seconds or
 * hours): a launch is done once the provider has accepted the nodes, and
 * apply does not wait for them to run (nor gives up on them after
 * GPUCTL_BOOT_TIMEOUT_S).  While they wait, describe says why in
 * gpc_node_status.detail (the scheduler's reason), which the engine says
 * and records ("note" events) each time it changes. */
#define GPC_CAP_QUEUE       (1u << 11)
/* The provider puts gpc_node_request.secrets into the job's environment
 * without writing them anywhere gpuctl or others keep them: not in
 * user-data, tags, provider data, node files nor logs (the local provider:
 * the node process's own environment).  A spec with `secrets` is refused
 * (plan, apply) on a provider without it. */
#define GPC_CAP_SECRETS     (1u << 12)
/* The nodes keep checkpoint_dir in the provider's store: on nodes that do
 * not see this machine's files (no GPC_CAP_SHARED_FILES, shares_files
 * false) and with store_url, the engine renders the bootstrap's
 * CKPT_STORE=1 section with the store URL of the cluster's checkpoints
 * (GPC_CKPT_STORE_PATH_FMT), and the node script defines
 * gpuctl_md_store_get / gpuctl_md_store_put (render.h).  Without it
 * checkpoint_dir is a path on the nodes, used in place (slurm over ssh:
 * the cluster's shared filesystem). */
#define GPC_CAP_NODE_STORE  (1u << 13)

/* Most bytes of provider data (with its NUL): gpc_node_status.data,
 * gpc_cluster_ref.data. */
#define GPC_PROVIDER_DATA_MAX 2048

/* One way to run one node: an instance type in a region/zone at a price. */
typedef struct gpc_offer {
    char provider[16];
    char instance_type[64];
    char region[48];
    char zone[48];
    char gpu_model[32];     /* "" for CPU-only */
    uint32_t gpu_count;
    double gpu_mem_gib;     /* per GPU, GiB */
    double vcpus;
    double mem_gib;         /* RAM, GiB */
    int spot;               /* 1 = spot price */
    double price_hourly;    /* USD per node-hour */
    char fabric[16];        /* "efa", "infiniband", "erdma", "none"; "" = not known */
} gpc_offer;

/* What to create. All pointers are borrowed for the duration of the call. */
typedef struct gpc_node_request {
    const char *cluster;       /* cluster name */
    const char *cluster_uid;   /* unique id of the cluster instance */
    uint32_t rank;
    uint32_t nnodes;           /* nodes in the cluster */
    const char *name;          /* node name, "<cluster>-<rank>" */
    const char *client_token;  /* idempotency token, <= 64 ASCII chars */
    const gpc_offer *offer;
    const char *image;
    /* What the node runs (render.h): the bootstrap, which exports the job
     * env itself, and that env again as name/value pairs for a launcher
     * that sets a container's environment natively.  A VM provider turns
     * it into its user-data with gpc_payload_cloud_init and its own rules
     * (gpc_provider.userdata); never NULL. */
    const gpc_payload *payload;
    const gpc_label *labels;
    size_t n_labels;
    const gpc_spec *spec;      /* the whole spec: disk, interconnect, spot
                                  max price (providers read what they need) */
    uint64_t end_s;            /* seconds after its boot when the node ends
                                  itself (spec.h, gpc_spec_node_end: its
                                  max_duration, the default one, or its
                                  budget end), as its bootstrap enforces;
                                  0 = no end.  aws tags it (expires-at). */
    int64_t requested_at;      /* Unix seconds the node was recorded, its create
                                  first meant: the same on every retry of
                                  its client token, so that a time derived
                                  from it (aws: expires-at = requested_at +
                                  end_s) keeps the request's parameters, and
                                  its idempotency, the same (EC2 refuses a
                                  token with other parameters:
                                  IdempotentParameterMismatch); 0 = now */
    uint32_t attempt;          /* 1, 2, ...: the launch attempt this create
                                  belongs to (the core's failover walk) */
    struct gpc_cluster_ref *ref; /* the cluster: its regions and provider data,
                                  which the create may set (a group's job id) */
    /* The spec's secrets, name and value (spec.h): for the job's
     * environment only (GPC_CAP_SECRETS); never logged, recorded or put in
     * user-data.  NULL/0 for a provider without GPC_CAP_SECRETS. */
    const gpc_env_var *secrets;
    size_t n_secrets;
    /* The cluster's spec hash (gpc_spec_hash, 64 hex digits), for a
     * provider that tags its nodes with it so that the cluster's record
     * can be rebuilt from the tags (list_orphans, gpc_orphan.node). */
    const char *spec_hash;
} gpc_node_request;

/* What identifies a cluster to a provider's cluster-wide operations. */
typedef struct gpc_cluster_ref {
    const char *cluster;       /* cluster name */
    const char *cluster_uid;   /* unique id of the cluster instance */
    const char *const *regions;/* every region the cluster launched in or
                                  tried (nodes and attempts), no duplicates */
    size_t n_regions;
    /* The cluster's provider data (a Slurm job id, a Kubernetes namespace,
     * an Azure scale set's name): a JSON object, "" = none, in a buffer of
     * GPC_PROVIDER_DATA_MAX bytes that an operation may rewrite (keeping
     * it NUL-terminated); the engine records what it holds after every
     * operation that gets the ref.  NULL where the caller keeps none (a
     * refresh without state).  Never a secret. */
    char *data;
} gpc_cluster_ref;

/* What a provider knows about one node. */
typedef struct gpc_node_status {
    char provider_id[256];  /* id at the provider ("" = unknown) */
    char private_ip[64];    /* IP literal, "" until known */
    gpc_phase phase;
    int exit_code;          /* the job's exit status on this node, -1 unknown */
    int stopped;            /* 1 when the machine no longer runs (no billing) */
    char detail[256];       /* short human explanation ("process group gone") */
    int no_capacity;        /* 1 when the provider took the node back at once
                               for want of capacity (EC2 stateReason
                               Server.InsufficientInstanceCapacity) */
    /* Provider data of the node: a JSON object the provider wants kept with
     * the node's record (an operation URL to poll, a job step id), "" to
     * keep what is recorded.  The engine stores it as given after
     * create_node, create_nodes, find_node and describe_node(s), and hands
     * it back in gpc_node_ref.data.  Never a secret. */
    char data[GPC_PROVIDER_DATA_MAX];
} gpc_node_status;

/* One recorded node, as the provider's per-node operations get it.
 * Strings borrowed for the call. */
typedef struct gpc_node_ref {
    const char *region;       /* the node record's region ("" where the
                                 provider has none) */
    const char *provider_id;  /* the provider's id of the node */
    const char *data;         /* its provider data as recorded, "" = none */
} gpc_node_ref;

/* An interruption notice for one node (poll_interruptions). */
typedef struct gpc_interruption {
    char action[32];        /* "" = none; else the provider's word for what
                               will happen: "terminate", "stop",
                               "hibernate", "rebalance" (a recommendation) */
    int64_t deadline;       /* when it happens, Unix seconds; 0 = not said */
    char detail[256];       /* the provider's notice, short, for the event */
} gpc_interruption;

/* Something the provider made for gpuctl and still keeps (list_orphans).
 * The provider fills the fields up to `data`; gpc_orphans() the rest. */
typedef struct gpc_orphan {
    char kind[32];          /* "node", "group", "security-group", "key-pair", ... */
    char id[256];           /* the provider's id of it */
    char region[48];        /* "" where the provider has none (global: an
                               IAM role) */
    char cluster_uid[64];   /* the uid of the cluster it was made for (its
                               tag), "" when it has none */
    char cluster[64];       /* that cluster's name (its tag), "" when it has
                               none */
    int64_t expires_at;     /* when it should be gone (a node's creation
                               plus lifecycle.max_duration, its tag), Unix
                               seconds; 0 = no expiry */
    char detail[256];       /* what it is, for a person: type, state, age */
    /* Provider data that cleanup_cluster needs in gpc_cluster_ref.data to
     * remove it when no state records the cluster (aws: {"iam_profile":
     * NAME} for an IAM role), a JSON object; "" = none.  Never a secret. */
    char data[256];
    /* For one of a cluster's nodes whose tags say which (aws: an instance
     * launched by a gpuctl that tags its rank), what rebuilds its record
     * when the state lost it (gpc_cluster_rebuild, `status --refresh`):
     * node 1 and the rest filled; node 0 for anything else (the rest
     * zero).  Never a secret nor a value of the spec's env: only what the
     * provider's tags and describe say. */
    int node;
    uint32_t rank;          /* the node's rank */
    uint32_t nodes;         /* the cluster's node count (its tag), 0 = not known */
    char spec_hash[65];     /* the spec hash it was made for (its tag), "" = not known */
    char instance_type[64];
    char zone[48];
    int spot;               /* 1 = spot capacity */
    double price_hourly;    /* USD/hour it was bought at (its tag), 0 = not known */
    gpc_phase phase;        /* from the provider's state of it, as describe_node */
    char private_ip[64];    /* "" = none */
    int64_t launched_at;    /* Unix seconds, 0 = not known */
    /* Set by gpc_orphans(), not the provider: */
    int owned;              /* 1: a live cluster of the state owns it; it is
                               listed because its cluster expired */
    int64_t expired_at;     /* the earliest expiry already passed among the
                               resources of its cluster uid, 0 = none */
} gpc_orphan;

/* ---- Object storage (store_* operations) ---- */

/* What a store_push or store_pull did. */
typedef struct gpc_store_stats {
    unsigned long files_sent;    /* files copied (uploaded, downloaded) */
    unsigned long files_skipped; /* unchanged: same size and SHA-256 there */
    uint64_t bytes_sent;         /* bytes copied (over the network for a
                                    remote store) */
    unsigned long files_deleted; /* objects deleted because the source has
                                    no such file (a mirror: store.h,
                                    gpc_data_push with GPC_DATA_DELETE);
                                    0 from the provider's own store_push */
} gpc_store_stats;

/* One object of a store (store_list). */
typedef struct gpc_store_entry {
    char key[1025];              /* its path below the listed path,
                                    '/'-separated ("a/b.bin") */
    uint64_t size;               /* bytes */
    int64_t mtime;               /* last modified, Unix seconds; 0 = not known */
} gpc_store_entry;

/* ---- Catalog price refresh (`gpuctl catalog update`) ---- */

/* What refresh_prices is asked.  Strings borrowed. */
typedef struct gpc_price_refresh_opts {
    const char *const *regions; /* --region: only rows in these regions; */
    size_t n_regions;           /*   0 = every region */
    const char *endpoint;       /* --endpoint for a price API that open() does
                                   not connect to (Azure's Retail Prices API),
                                   or NULL; a provider whose prices come from
                                   its own API gets the endpoint through open() */
    int named;                  /* 1 when the user named this provider
                                   (--provider), 0 when every provider runs */
    const gpc_log *log;         /* progress and summary lines, or NULL */
} gpc_price_refresh_opts;

/* What refresh_prices did, for the command's JSON document. */
typedef struct gpc_price_refresh_result {
    const char *api;            /* static: the API asked, e.g. "Azure Retail Prices" */
    size_t rows;                /* catalog rows looked at */
    size_t updated;             /* rows given the API's prices */
    size_t not_listed;          /* rows the API has no price for: kept as they were */
    size_t spot_cleared;        /* spot prices removed: the API has no spot price
                                   for the row any more */
    size_t added;               /* rows added: a provider that rebuilds its rows
                                   lists an instance type the catalog lacked */
    size_t removed;             /* rows removed: its APIs no longer list them */
    char skipped[GPC_ERROR_MSG_MAX]; /* "" or why the provider skipped the refresh
                                   (it then returned 0 and changed nothing) */
} gpc_price_refresh_result;

/*
 * A named section of the config file that belongs to one provider:
 * `[NAME "SITE"]`, NAME being the provider's name (docs/config.md): a
 * place the provider can run nodes that the user describes (a Slurm
 * cluster: its login node, partitions, account).  The engine checks the
 * file's form (a known key, no key twice, no empty value) and hands the
 * sections to open() as they are; what a value means, and whether it is
 * right, is the provider's to say (naming cfg->config_path and the
 * value's line).
 */
typedef struct gpc_site_value {
    const char *key;       /* one of the provider's site_keys */
    const char *value;     /* never empty */
    int line;              /* its line in the config file */
} gpc_site_value;

typedef struct gpc_site {
    const char *name;      /* SITE: letters, digits, '.', '_' and '-', at
                              most 47 bytes (it fits gpc_offer.region) */
    int line;              /* the line of its first header */
    const gpc_site_value *values; /* in file order, every section of this
                              name together */
    size_t n_values;
} gpc_site;

/* Settings handed to open(). Strings borrowed. */
typedef struct gpc_provider_config {
    const char *state_dir;  /* gpuctl's state directory */
    const char *endpoint;   /* API endpoint override, or NULL */
    const char *region;     /* default region, or NULL */
    const char *profile;    /* credentials profile, or NULL */
    /* Where each of the three came from, for messages: "--endpoint",
     * "--profile aws=...", "GPUCTL_AWS_REGION", "/home/u/.config/gpuctl/
     * config:3" (gpc_provider_settings_get, docs/config.md); NULL when the
     * value is NULL or its source is not known. */
    const char *endpoint_from, *region_from, *profile_from;
    const gpc_log *log;     /* for progress and --debug lines, or NULL */
    /* The provider's named sections of the config file, in the order their
     * names first appear (none when the provider has no site_keys); the
     * config file's path, also when it does not exist ("" only when no
     * path can be made), for its messages.  Valid during open() only: a
     * provider copies what it keeps. */
    const gpc_site *sites;
    size_t n_sites;
    const char *config_path;
} gpc_provider_config;

typedef struct gpc_provider {
    const char *name;         /* "local", "aws", ... */
    const char *summary;      /* one line for `gpuctl help providers` */
    unsigned caps;            /* GPC_CAP_* */
    /* How user-data travels to this provider's nodes (size limit, gzip,
     * base64) and the node script the bootstrap includes; see render.h. */
    const gpc_userdata_rules *userdata;
    /* The fabrics this provider sells, each with its fabric script (see
     * render.h), ended by an entry whose name is NULL; NULL = none.  The
     * scripts are embedded from the FABRIC pairs of the provider's
     * provider.cmake.  The bootstrap of any node on one of these fabrics,
     * whatever its provider, includes the fabric's script. */
    const gpc_fabric_script *fabrics;

    /* Optional: refuse what this provider cannot do with the spec before
     * anything is made (aws: an image that is neither `pytorch` nor an AMI
     * id).  GPC_ERR_SPEC naming the field.  Needs no session. */
    int (*check_spec)(const gpc_spec *spec, gpc_error *err);

    /* Open a session; *ctx (owned by the provider) goes to every call. */
    int (*open)(const gpc_provider_config *cfg, void **ctx, gpc_error *err);
    void (*close)(void *ctx);

    /* Offers able to run one node of `spec`, cheapest first.  Caller frees
     * *out with free().  GPC_ERR_CAPACITY (with the reason) when none fits. */
    int (*list_offers)(void *ctx, const gpc_spec *spec, gpc_offer **out,
                       size_t *n, gpc_error *err);

    /* How the nodes come together (render.h; docs/architecture.md, "The
     * seam"): where they find the rendezvous and where a node's rank comes
     * from.  Zero: the head's IP from the provider, ranks from the engine.
     * The engine supports GPC_RDZV_ON_NODE only with GPC_CAP_GROUP and
     * GPC_RANK_SCHEDULER, and GPC_RANK_SCHEDULER only with GPC_CAP_GROUP
     * (gpc_provider_check). */
    gpc_rdzv_from rdzv;
    gpc_rank_from rank;

    /* Required with rdzv == GPC_RDZV_NAME: the host name (or IP literal)
     * at which the cluster's head will serve the rendezvous, known before
     * anything is made (a Kubernetes Job's "<job>-0.<service>"), in `out`
     * (size bytes).  May set c->data.  GPC_ERR_PROVIDER when it cannot. */
    int (*rdzv_name)(void *ctx, const struct gpc_cluster_ref *c, char *out, size_t size,
                     gpc_error *err);

    /* Optional: do the nodes of `offer` see this machine's files, at the
     * same paths (a Slurm cluster whose login node is this machine, on a
     * shared filesystem)?  1 or 0.  Where the answer differs between the
     * provider's places; without it, GPC_CAP_SHARED_FILES answers for
     * every offer.  apply asks it before anything is made: workdir and
     * checkpoint_dir are then used in place. */
    int (*shares_files)(void *ctx, const gpc_offer *offer);

    /* Optional: a free TCP port for the c10d rendezvous when the provider
     * shares one network namespace between nodes (local). */
    int (*pick_rdzv_port)(void *ctx, uint32_t *port, gpc_error *err);

    /* Create one node (idempotent on req->client_token).  Fills *out with at
     * least provider_id; private_ip when already known. */
    int (*create_node)(void *ctx, const gpc_node_request *req,
                       gpc_node_status *out, gpc_error *err);

    /* Optional: the node created with this client token, if any (EC2:
     * DescribeInstances filtered by client-token), in whatever state: one
     * that already ended comes back as such (stopped, its phase, and
     * no_capacity when the provider took it back at once).
     * GPC_ERR_NOT_FOUND only when the provider has no node with the token;
     * any other error means "cannot tell".  Lets the core find a node that
     * a killed gpuctl created but never recorded. */
    int (*find_node)(void *ctx, const char *region, const char *client_token,
                     gpc_node_status *out, gpc_error *err);

    /* Current state of a recorded node.  A node the provider no longer
     * knows comes back as phase TERMINATED (or PREEMPTED when the provider
     * says so). */
    int (*describe_node)(void *ctx, const gpc_node_ref *node, gpc_node_status *out,
                         gpc_error *err);

    /* Optional: the state of several nodes of one cluster in one go (EC2:
     * one DescribeInstances by the cluster's tag per region, every page);
     * out[i] for ids[i].  The core polls with it when present. */
    int (*describe_nodes)(void *ctx, const gpc_cluster_ref *c, const char *const *ids,
                          size_t n, gpc_node_status *out, gpc_error *err);

    /* Optional: finish nodes once they run, before a launch counts as
     * done (EC2: an Elastic IP on the primary interface of each node with
     * several network cards, which EC2 refuses while a node is pending;
     * docs/providers/aws.md).  ids: the provider ids (n of them, borrowed)
     * of the cluster's live nodes, which the core has just seen running
     * after a launch or adoption; on an apply with nothing to create it
     * calls it too (a killed apply may have left its nodes unfinished),
     * and a node may then still be starting.  Idempotent: a node already
     * finished is left as it is, and what a killed earlier call half made
     * is reused or removed.  An error fails the launch attempt like a node
     * that did not boot; GPC_ERR_QUOTA (EC2: AddressLimitExceeded) makes
     * the core leave the region. */
    int (*nodes_running)(void *ctx, const gpc_cluster_ref *c, const char *const *ids, size_t n,
                         gpc_error *err);

    /* Delete a recorded node; succeeds when it is already gone.  With
     * GPC_CAP_GROUP it removes the node's whole group. */
    int (*delete_node)(void *ctx, const gpc_node_ref *node, gpc_error *err);

    /* Optional: the zones of offer->region where offer->instance_type is
     * offered, in the order to try them.  The core walks them when a
     * launch meets no capacity (GPC_ERR_CAPACITY), and leaves the region
     * on GPC_ERR_QUOTA.  *zones (caller frees) holds *n names of up to 47
     * bytes; n == 0 means "not offered in this region". */
    int (*list_zones)(void *ctx, const gpc_offer *offer, char (**zones)[48], size_t *n,
                      gpc_error *err);

    /* Optional: create n nodes of one offer in one call, all or nothing
     * (EC2 RunInstances with MinCount = MaxCount = n).  The requests share
     * offer, image, payload (rendered for all of them: rank_from
     * GPC_RANK_LAUNCH_INDEX, or the provider's own rank source) and
     * client_token; out[i] describes the node launched for reqs[i].  Node i
     * is found again by find_node with the token "<client_token>/<i>".  On
     * failure nothing of this call is left running. */
    int (*create_nodes)(void *ctx, const gpc_node_request *reqs, size_t n,
                        gpc_node_status *out, gpc_error *err);

    /* Optional: once the core has deleted a cluster's nodes, remove what
     * else the provider made for it (EC2: any instance still tagged with
     * the cluster, waited for until terminated, then its placement group,
     * security group and key pair).  Idempotent; what is already gone
     * counts as done.  GPC_ERR_PARTIAL (naming what is left) when some
     * resource could not be removed.  `gpuctl gc` calls it too for a
     * cluster uid no state records (gpc_orphans_delete): c->cluster is the
     * name its resources were tagged with, c->regions where list_orphans
     * found them (none for global resources only), c->data the first
     * non-empty gpc_orphan.data of them ("" none). */
    int (*cleanup_cluster)(void *ctx, const gpc_cluster_ref *c, gpc_error *err);

    /* Optional: replace the catalog prices of `offers` by the provider's
     * live ones (EC2 DescribeSpotPriceHistory for spot offers: the lowest
     * current price of the region's zones, and that zone), in place.
     * Offers it has no live price for are left as they are; *updated
     * counts the others. */
    int (*live_prices)(void *ctx, gpc_offer *offers, size_t n, size_t *updated,
                       gpc_error *err);

    /* Optional: replace the prices of this provider's rows of `cat` (those
     * with a region, narrowed by o->regions) by the ones its price API
     * lists now, with gpc_catalog_set_price and a row note saying when and
     * from where (gpc_catalog_set_notes); rows the API does not list are
     * kept as they are.  A provider whose APIs list its instance types
     * themselves (aws) may instead rebuild its rows of those regions:
     * gpc_catalog_remove_rows of its rows, then gpc_catalog_add_row of
     * each one its APIs list (a row note saying when and from where),
     * counting res->added and res->removed; it removes nothing before
     * every answer came, and touches no other provider's rows.  Needs no session: a provider whose price API
     * needs its context opens it with `cfg` (the settings open() takes)
     * once it knows it has rows to refresh, and closes it.  Fills *res
     * (zeroed by the caller) and says what it asks and what it did through
     * o->log.  A failure that should not stop the other providers when
     * this one was not named (aws: no credentials) returns 0 with
     * res->skipped set.  Errors: GPC_ERR_USAGE (no rows to refresh), the
     * API's errors (GPC_ERR_AUTH, GPC_ERR_PROVIDER, ...), GPC_ERR_NOMEM;
     * `cat` may then be partly updated. */
    int (*refresh_prices)(const gpc_provider_config *cfg, struct gpc_catalog *cat,
                          const gpc_price_refresh_opts *o, gpc_price_refresh_result *res,
                          gpc_error *err);
    /* Optional, for a provider without refresh_prices that has catalog
     * rows: why its prices cannot be refreshed, said after "NAME: ". */
    const char *no_refresh_prices;

    /* Optional, for a provider that lists its own offers from what it
     * recorded earlier (GPC_CAP_OWN_OFFERS; a Slurm cluster's partitions,
     * nodes and limits): ask again and record it, for `gpuctl catalog
     * update`.  `detail` (size bytes) says what it found, for a person.
     * GPC_ERR_AUTH when the provider has nothing to ask (no Slurm cluster
     * configured); the provider's errors otherwise. */
    int (*refresh_offers)(void *ctx, char *detail, size_t size, gpc_error *err);

    /* Optional: is `zone` a zone name of this provider that exists in
     * every region (Azure numbers its availability zones 1, 2, 3 in each
     * region)?  A spec's zone that some provider says so of keeps every
     * region when offers are chosen; any other zone keeps only the region
     * it is named after (the region, then a letter or '-': us-east-1a,
     * cn-hangzhou-h).  Returns 1 or 0. */
    int (*zone_in_every_region)(const char *zone);

    /* Optional: do the credentials resolve and work?  One cheap
     * authenticated call (EC2 DescribeRegions).  Fills `detail` (size
     * bytes) with where the credentials came from, the region and the
     * endpoint - never a secret.  GPC_ERR_AUTH when they are missing or
     * refused. */
    int (*check)(void *ctx, char *detail, size_t size, gpc_error *err);

    /* Optional: the log transport.  Append to `out` the bytes of the log
     * of node `rank` of cluster `c`, whose record is `node` (what its
     * bootstrap and its job printed: local, slurm, aws: node.log in the
     * node's GPUCTL_HOME), from byte `offset` on, at most a bound of the
     * provider's per call (local, slurm, aws: 1 MiB); *next receives the
     * offset to continue from (offset + the bytes appended).  Fewer bytes
     * than the bound (0 included) means the reader has caught up.
     * *exit_status receives the job's exit status on that node once the
     * node has written one (the bootstrap's exit_status file), else -1; it
     * is read before the bytes, so a status >= 0 with nothing read means
     * the log is complete.  A node not reachable yet (no address, no
     * sshd, no job step) is no error: nothing is read and *exit_status is
     * -1.  may_wait: 1 when the read may wait a bounded time for what it
     * needs to reach the node the first time (aws: the host keys in its
     * console output, as shell_argv does); 0 when it may not (it then
     * reads nothing yet).  Errors:
     * GPC_ERR_NOT_FOUND when the node is gone and its log with it (aws:
     * a terminated instance), the message saying so; GPC_ERR_PROVIDER
     * (an id not of this provider, a transport that fails), GPC_ERR_IO,
     * GPC_ERR_NOMEM. */
    int (*read_log)(void *ctx, const gpc_cluster_ref *c, const gpc_node_ref *node,
                    uint32_t rank, long offset, int may_wait, struct gpc_buf *out,
                    long *next, int *exit_status, gpc_error *err);

    /* Optional: the interruption notices of the cluster's live nodes (spot:
     * EC2's instance-action as the node's watcher wrote it, Azure's
     * Scheduled Events Preempt), out[i] for nodes[i] (n of them; zeroed by
     * the caller; out[i].action "" = no notice, or none known: a node not
     * reachable yet).  The engine calls it every few seconds while it
     * waits for a job and records each new notice as an event of the node
     * ("interruption").  A failed poll is retried on the next one, never
     * taken as "no notice". */
    int (*poll_interruptions)(void *ctx, const struct gpc_cluster_ref *c,
                              const gpc_node_ref *nodes, size_t n,
                              struct gpc_interruption *out, gpc_error *err);

    /* Optional: what this provider made for gpuctl in `regions` (NULL, 0:
     * every region it can look in) that it still bills or keeps: nodes,
     * groups and their resources, each with the cluster uid it was tagged
     * with (gpc_orphan), and what has no region (aws: IAM roles and
     * instance profiles); a node whose tags say its rank with
     * gpc_orphan.node and the fields after it, which rebuild a lost
     * record (gpc_cluster_rebuild).  Only what carries the provider's
     * cluster-uid tag: nothing else is ever listed.  *out (caller frees with free())
     * holds *n.  The engine's gpc_orphans() keeps those no live cluster of
     * the state owns, or whose cluster expired; `gpuctl gc -y` removes
     * them by cleanup_cluster per cluster uid.  Errors: the API's; a
     * region (or the global part) that could not be read is never taken
     * as empty: GPC_ERR_PARTIAL naming each such place and why, with *out
     * and *n holding what was read elsewhere. */
    int (*list_orphans)(void *ctx, const char *const *regions, size_t n_regions,
                        struct gpc_orphan **out, size_t *n, gpc_error *err);

    /* Optional: the keys of this provider's named sections of the config
     * file, `[NAME "SITE"]` (gpc_site), ended by NULL; NULL = the provider
     * takes none, and such a section is an error of the file. */
    const char *const *site_keys;

    /* Optional: the words that make this provider's headers, parameters and
     * document fields secret, or not (http.h, gpc_http_word), for the
     * redaction of the --debug trace: a list ended by GPC_HTTP_WORD_END;
     * NULL = none.  gpc_providers_register_secrets() adds them. */
    const gpc_http_word *secret_words;

    /* Optional: shell access to a node (`gpuctl ssh`): the argument vector
     * (*argv, ended by NULL; the caller frees it with gpc_argv_free,
     * shell.h) of a command that, run on this machine, runs `cmd` on the
     * node of rank `rank` of cluster `c`, whose record is `node`, with its
     * standard input, output and error.  n_cmd == 0: an interactive login
     * shell there; otherwise the n_cmd words joined by spaces are one
     * command line for the node's shell, as ssh(1) sends them.  tty: 1 to
     * ask for a terminal (ssh -t, srun --pty).  The engine calls it only
     * for a node it has just seen running.  The command's exit status is
     * the remote command's.  The provider may wait a bounded time for what
     * it needs (aws: the host keys in the console output), saying so on
     * the log, and may write the files the command reads (known_hosts)
     * under the state directory.  Errors: GPC_ERR_PROVIDER (the node
     * cannot be reached: no address, no job), the API's errors,
     * GPC_ERR_IO, GPC_ERR_NOMEM. */
    int (*shell_argv)(void *ctx, const gpc_cluster_ref *c, const gpc_node_ref *node,
                      uint32_t rank, const char *const *cmd, size_t n_cmd, int tty,
                      char ***argv, gpc_error *err);

    /* Optional: the remote shell that reaches a node for the engine's own
     * transfers (deliver.c: the workdir by `rsync -e`, the secrets, the
     * delivery marker), for nodes that do not see this machine's files.
     * *rsh (ended by NULL; the caller frees it with gpc_argv_free) is the
     * command and its options without destination or remote command (aws:
     * `ssh -T -o ...`, no "--"); dest (dest_size bytes) is where it goes,
     * "USER@HOST".  Run as `rsh... [-l USER] HOST COMMAND` (rsync's form)
     * or `rsh... USER@HOST COMMAND`, it runs COMMAND, one command line for
     * the node's POSIX shell, with the given standard input, output and
     * error, and exits with its status.  The remote user is root or may
     * run `sudo -n` without a password; the node runs the bootstrap with
     * GPUCTL_HOME /var/lib/gpuctl and has /run (tmpfs).  The engine calls
     * it only for a running node; the same waits and files as shell_argv.
     * A provider with it may leave GPC_CAP_SECRETS and
     * GPC_CAP_SHARED_FILES out and still take `workdir` and `secrets`.
     * The engine delivers to the nodes running once a launch's nodes have
     * started (not for GPC_CAP_QUEUE, whose nodes may wait in a queue:
     * such a provider must not have it) and again on each apply.
     * Errors: as shell_argv. */
    int (*transport_argv)(void *ctx, const gpc_cluster_ref *c, const gpc_node_ref *node,
                          char ***rsh, char *dest, size_t dest_size, gpc_error *err);

    /* ---- object storage ----
     * A store: where data and checkpoints live apart from the nodes, one
     * per region (aws: an S3 bucket; local: a directory under the state
     * directory; slurm: a directory under the Slurm cluster's job_dir on
     * its shared filesystem).  `path` names a key prefix in it: '/'-
     * separated segments of letters, digits, '.', '_' and '-' (no empty,
     * "." or ".." segment), e.g. "data/NAME" or "clusters/UID/checkpoints".
     * `region` NULL or "" = the provider's default (aws: its configured
     * region; slurm: the only Slurm cluster configured).  All five are
     * optional, present together or not at all; the engine checks `path`
     * before it calls them.  Errors: GPC_ERR_USAGE (a region without a
     * store, a store that cannot be reached yet), GPC_ERR_IO (local
     * files), the provider's API errors (GPC_ERR_AUTH, GPC_ERR_PROVIDER). */

    /* The URL of `path` in the store of `region`, as the provider's nodes
     * name it (aws: s3://BUCKET/PATH; local, slurm: an absolute directory)
     * into out (size bytes; GPC_ERR_USAGE when it does not fit), making
     * the store when it is missing (aws: the bucket, private, encrypted,
     * tagged; local, slurm: the directory, mode 0700). */
    int (*store_url)(void *ctx, const char *region, const char *path, char *out,
                     size_t size, gpc_error *err);

    /* Copy every regular file under directory `local_dir` (recursively,
     * symbolic links not followed) to `path` + its relative path, skipping
     * the files already there with the same size and SHA-256; nothing is
     * deleted.  Makes the store when missing.  Fills *st (zeroed first). */
    int (*store_push)(void *ctx, const char *region, const char *local_dir, const char *path,
                      gpc_store_stats *st, gpc_error *err);

    /* The reverse: every object under `path` to `local_dir` (made when
     * missing), skipping files there with the same size and SHA-256.
     * Fills *st (zeroed first).  Nothing under `path`: 0 files, no error. */
    int (*store_pull)(void *ctx, const char *region, const char *path, const char *local_dir,
                      gpc_store_stats *st, gpc_error *err);

    /* The objects under `path`, keys relative to it, sorted by key
     * (bytewise); *out (caller frees with free()) holds *n, 0 when there
     * is none (a store not made yet is empty, and is not made). */
    int (*store_list)(void *ctx, const char *region, const char *path,
                      gpc_store_entry **out, size_t *n, gpc_error *err);

    /* Remove every object under `path`; *removed (may be NULL) receives
     * how many.  Nothing there: 0, no error. */
    int (*store_remove)(void *ctx, const char *region, const char *path, size_t *removed,
                        gpc_error *err);

    /* Delete the objects `path` + "/" + keys[i] (i < n; keys as
     * store_list gives them, relative to `path`), each exactly (not as a
     * prefix); a key with no object is no error.  Optional (NULL: the
     * provider cannot mirror a directory, and `data push --delete` and
     * apply's mirror are refused there). */
    int (*store_delete)(void *ctx, const char *region, const char *path,
                        const char *const *keys, size_t n, gpc_error *err);

    /* The scheme of the store's URLs that name a bucket of its own
     * ("s3" for s3://BUCKET/KEY), or NULL when the store's URLs are
     * directories (local, slurm).  A spec's `data` source written as such
     * a URL needs a provider of the spec with that scheme. */
    const char *store_scheme;
    /* The endpoint URL a node must give its store functions (render.h,
     * gpuctl_md_store_get) for the store of `region`, into out (size
     * bytes): the one gpuctl itself uses when it is not the provider's
     * default (aws: AWS_ENDPOINT_URL_S3, a VPC or S3-compatible endpoint),
     * else "".  Optional (NULL: always the default); no network call. */
    int (*store_endpoint)(void *ctx, const char *region, char *out, size_t size,
                          gpc_error *err);
} gpc_provider;

/* The store path of a cluster's checkpoints (printf format, the cluster's
 * name): a cluster destroyed and applied again under the same name finds
 * its checkpoints there (render.h, gpc_node_ctx.ckpt_store). */
#define GPC_CKPT_STORE_PATH_FMT "clusters/%s/checkpoints"

/*
 * Is the table one the engine can drive?  The combinations it supports
 * (docs/architecture.md, "The seam"):
 *   rdzv HEAD_IP: nodes one by one, ranks from the engine, a launch index
 *       (workers made together) or the rendezvous (workers with no rank);
 *   rdzv NAME (needs rdzv_name): the same ranks, or a group;
 *   rdzv ON_NODE: a group only;
 *   GPC_CAP_GROUP (needs create_nodes): rdzv NAME or ON_NODE, ranks from
 *       the scheduler or a launch index;
 *   rank SCHEDULER: a group only; rank LAUNCH_INDEX: needs create_nodes.
 * A name must fit an offer (at most 15 characters, gpc_offer.provider).
 * Plan-only tables pass the rest (nothing is made with them).  Returns 0, or
 * GPC_ERR_INTERNAL naming the provider and what does not fit.  A unit test
 * checks every compiled-in table.
 */
int gpc_provider_check(const gpc_provider *p, gpc_error *err);

/*
 * Is the node of rank `rank` of an `nnodes`-node cluster made together with
 * others in one create_nodes call when the cluster is launched (launch.c)?
 * Every node of a group (GPC_CAP_GROUP); a worker of three nodes or more
 * where the provider has create_nodes and the engine does not give ranks
 * (rank != GPC_RANK_ENGINE); no other node.
 */
int gpc_provider_batches(const gpc_provider *p, uint32_t rank, uint32_t nnodes);

/*
 * Where the bootstrap of a node of rank `rank` takes its rank from
 * (render.h): made in one create_nodes call with others (in_batch), the
 * provider's rank source, a launch index where that is the engine's; made
 * alone, the engine's rank, or none for a worker whose rank the rendezvous
 * gives.  The one rule for create, apply's render check and `render`.
 */
gpc_rank_from gpc_provider_rank_source(const gpc_provider *p, uint32_t rank, int in_batch);

/* What losing the head (rank 0) costs, from the provider's modes. */
typedef enum gpc_head_loss {
    GPC_HEAD_LOSS_WORKERS_TOO, /* the workers' bootstrap names the head's IP:
                                  a new head means new workers too (the
                                  engine removes them first) */
    GPC_HEAD_LOSS_GROUP,       /* the group is the unit: removed and made again */
    GPC_HEAD_LOSS_HEAD_ONLY    /* the rendezvous name outlives the head: only
                                  the head is made again, under the same name */
} gpc_head_loss;

/* The engine's rule for `p` (it keeps the head off spot capacity where the
 * spec says spot.head: on-demand, so a spot preemption cannot take it). */
gpc_head_loss gpc_provider_head_loss(const gpc_provider *p);

/* The providers compiled in, ended by NULL: generated from the folders
 * providers/NAME/ (CMakeLists.txt), the default provider first. */
extern const gpc_provider *const gpc_providers[];

/* A provider by name, or NULL. */
const gpc_provider *gpc_provider_find(const char *name);

/* The provider of a spec that names none: gpc_providers[0]. */
const gpc_provider *gpc_provider_default(void);

/* Comma-separated names of the providers that can create nodes: those
 * compiled in, less the plan-only ones (GPC_CAP_PLAN_ONLY); "local, aws"
 * (static storage).  gpc_provider_names_with(0) names them all. */
const char *gpc_provider_names(void);

/* Comma-separated names of the providers with every bit of `caps` (a
 * static buffer, overwritten by the next call). */
const char *gpc_provider_names_with(unsigned caps);

/*
 * Add every compiled-in provider's secret_words to the HTTP helper's
 * redaction (gpc_http_add_words), so that a trace never shows a provider's
 * secret.  gpc_session_open() calls it; code that opens a provider without
 * a session calls it first.  Idempotent.  Returns 0, or GPC_ERR_USAGE with
 * err filled (naming the provider) when a table holds a word the helper
 * refuses.  Not thread-safe: call it before any thread sends.
 */
int gpc_providers_register_secrets(gpc_error *err);

#endif /* GPUCTL_PROVIDER_H */
