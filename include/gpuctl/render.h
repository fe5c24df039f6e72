/*
 * render.h - node bootstrap rendering (templates/ -> a provider-neutral
 * payload, and the cloud-init user-data VM providers wrap it in).
 *
 * Every node, cloud or local, runs the same kind of script: the bootstrap
 * (templates/bootstrap.sh), which the engine hands its provider as a
 * gpc_payload (below).  A VM provider wraps it in a `#cloud-config`
 * user-data that writes /var/lib/gpuctl/bootstrap.sh and runs it
 * (gpc_payload_cloud_init); a scheduler provider would make it a batch
 * script, an orchestrator a pod's command.  The bootstrap exports the job
 * env (POSIX single-quote quoting, so a
 * value with $, backquotes, quotes, newlines or $(...) arrives unchanged and
 * never executes), sets NCCL / libfabric variables for the interconnect, runs
 * `setup`, then starts torchrun with a c10d rendezvous on the head node
 * (its private IP literal, or the host name the provider gives: see
 * gpc_node_ctx), logging to $GPUCTL_HOME/node.log and recording the exit
 * status in $GPUCTL_HOME/exit_status.
 *
 * Files the bootstrap keeps under GPUCTL_HOME (default /var/lib/gpuctl; the
 * local provider points it at the node's directory):
 *   bootstrap.sh   the script itself
 *   node.log       setup + torchrun output (the "fixed path" `logs` reads)
 *   phase          one word: booting | setup | running | succeeded | failed
 *   exit_status    the node's exit status, written once at the end (also
 *                  when setup or the bootstrap itself fails): setup's status
 *                  when setup failed; 124 when the node's end was hit
 *                  (lifecycle.max_duration, its default or the budget
 *                  end: gpc_spec_node_end in spec.h); 128+N when the bootstrap got signal N, unless a
 *                  worker had already failed by itself; when torchrun
 *                  failed because a worker did (or a signal came after a
 *                  worker failed), that worker's own exit status (the
 *                  lowest local rank's that is not a signal's); else
 *                  torchrun's.  A signal while the status is being
 *                  recorded changes nothing
 *   job            "running EPOCH" from the start of a job, "ended EPOCH"
 *                  once it ended (EPOCH: Unix seconds).  A job started on
 *                  the node later (`gpuctl exec`) writes the same two lines
 *                  (atomically: a temp file, then rename), which resets the
 *                  lifecycle.idle_timeout clock below
 *   stopped        "idle N s": the node stopped itself after N s with no job
 *   ckpt.lock      held (flock) while checkpoint_dir is saved to the
 *                  provider's store (gpc_node_ctx.ckpt_store), so that two
 *                  saves never run at once
 *   worker.sh, workers/<local rank>.status   the wrapper each torchrun
 *                  worker runs the command under, and what it recorded
 *   torchrun/      torchrun's --log_dir
 *   workdir/, delivered   on a node that waits for gpuctl's delivery
 *                  (gpc_node_ctx.deliver): the workdir gpuctl sent, and the
 *                  marker it writes last (the secrets are in
 *                  $GPUCTL_RUN_DIR/secrets.env, default /run/gpuctl, tmpfs)
 *
 * On a machine of its own (gpuctl_md_machine=1 in the node script, below:
 * a cloud VM) the bootstrap powers the node off when it ends,
 * whatever the outcome (`shutdown -h now`), unless it was started with
 * GPUCTL_POWEROFF=0 in its environment.  That stops billing only where the
 * instance is launched to terminate on a guest shutdown (EC2
 * InstanceInitiatedShutdownBehavior=terminate).  An Azure VM shut down from
 * inside stays allocated and billed, and so does a pay-as-you-go ECS
 * instance unless it stops in no-charge mode: those providers must delete
 * the VM from the control plane or set a release time (ECS AutoReleaseTime).
 * Before it exits, the bootstrap kills what the job left behind (any
 * process carrying this node's GPUCTL_HOME).
 *
 * With lifecycle.idle_timeout (the spec's, in seconds) the bootstrap does
 * not end with its job: it stays until the `job` record has said "ended"
 * for that long, then writes `stopped` and calls the node script's
 * gpuctl_md_stop (below), and ends; no power-off of its own then.  Not
 * after a signal (the node is being stopped), nor on a machine started
 * with GPUCTL_POWEROFF=0.
 *
 * Every node advertises its own private IP literal (the node script's
 * gpuctl_md_private_ip) to the rendezvous: torchrun --local_addr where its
 * torch has the option (2.0 and later; the bootstrap looks for it in
 * torch/distributed/run.py, and reads the version with importlib.metadata,
 * never importing torch), and GPUCTL_NODE_IP in the job's environment.
 * Where torchrun lacks it (torch 1.x) the rendezvous publishes the head's
 * host name, and the log says peers must resolve it.
 */
#ifndef GPUCTL_RENDER_H
#define GPUCTL_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"
#include "gpuctl/spec.h"

/*
 * How user-data travels to a provider's nodes, and the node side of the
 * provider.  Each provider defines its rules in its folder (providers/NAME/,
 * with the limit and its source) and points gpc_provider.userdata at them.
 *
 * The node script (providers/NAME/node.sh, embedded by the build from the
 * NODE_SCRIPT of providers/NAME/provider.cmake) is how a node learns facts
 * about itself.  It is a template like the bootstrap (see
 * gpc_template_render: `##` comments and `##if` sections, the bootstrap's
 * placeholders), and the bootstrap includes it near its top, before any of
 * its own code runs.  The contract:
 *
 *   gpuctl_md_machine=0|1   (variable, required) 1: the node is a machine
 *       of its own (a cloud VM): when the job ends the bootstrap writes the
 *       exit status to the serial console and powers the machine off
 *       (unless GPUCTL_POWEROFF=0), it schedules the power-off of the
 *       node's end (gpc_spec_node_end) at boot, falls back to `hostname -I` when gpuctl_md_private_ip
 *       gives no address, and gives the job 25 s to stop after a signal.
 *       0: the node is processes on this machine: none of that, and 8 s to
 *       stop (the provider's delete kills what is left after 10 s).
 *   gpuctl_md_private_ip    (function, required) print this node's private
 *       IP literal (IPv4 or IPv6) on stdout; non-zero when it cannot tell.
 *       Every node calls it: the address it advertises to the rendezvous
 *       (and the head's, for the head, with GPC_RDZV_HEAD_IP).
 *   gpuctl_md_stop          (function, required where the spec sets
 *       lifecycle.idle_timeout: define it in a `##if IDLE=1` section) stop
 *       this node for good, called once when it has been idle that long;
 *       the bootstrap exits after it returns.  A machine of its own powers
 *       off (EC2: which terminates it); processes of this machine (local)
 *       and a scheduler's task (Slurm: the allocation ends with the srun
 *       step) need do nothing: the bootstrap's exit ends them.
 *   gpuctl_md_launch_index  (function, required of providers whose nodes
 *       take their rank from a launch index: GPC_RANK_LAUNCH_INDEX) print
 *       the node's 0-based position among the nodes launched by one call;
 *       when it cannot, say why on stderr (gpuctl_say ... >&2) and fail.
 *   gpuctl_md_node_rank     (function, required of providers whose
 *       scheduler numbers the nodes: GPC_RANK_SCHEDULER) print the node's
 *       rank, 0-based and below the node count (Slurm's SLURM_NODEID, a
 *       Kubernetes Job's completion index); when it cannot, say why on
 *       stderr and fail.  The bootstrap stops the node (exit 1, saying why)
 *       when what it prints is not such a number.
 *   gpuctl_md_head_addr     (function, required of providers whose nodes
 *       find the rendezvous on the node: GPC_RDZV_ON_NODE) print the head's
 *       address, an IP literal or a host name (Slurm: the first host of the
 *       allocation); when it cannot, say why on stderr and fail.  The
 *       bootstrap checks it as gpc_node_ctx.head_addr is checked for
 *       GPC_RDZV_NAME.
 *   gpuctl_md_store_get URL DIR  (function, required where the node keeps
 *       its checkpoints in the provider's store: define it in a `##if
 *       CKPT_STORE=1` section, see gpc_node_ctx.ckpt_store) copy every
 *       object under URL/ (the store URL, aws: s3://BUCKET/PREFIX) into
 *       directory DIR, keeping the relative paths; nothing there is no
 *       error.  Non-zero when it could not (said on stderr).  The
 *       store's endpoint, when not the provider's default, is
 *       $GPUCTL_STORE_ENDPOINT (else it is empty); credentials are the
 *       node's own (aws: the instance profile's, from the metadata
 *       service), never the user's.
 *   gpuctl_md_store_put DIR URL  (function, required with the one above)
 *       copy DIR's regular files that are new or changed to URL/,
 *       deleting nothing there.  Non-zero when it could not.
 *   gpuctl_md_notice        (function, optional: where the provider tells
 *       a node of its coming interruption) ask once whether the node has
 *       an interruption notice; set gpuctl_md_notice_is to "ACTION EPOCH"
 *       (ACTION the provider's word, [a-z-]: terminate, stop, hibernate;
 *       EPOCH when it happens, Unix seconds, 0 when not said) or to ""
 *       for none, and return 0.  Non-zero, saying why on stderr, when it
 *       could not tell: the bootstrap then asks again and never takes it
 *       for "no notice".  Called every GPUCTL_NOTICE_POLL_S seconds (5)
 *       from one process, so it may keep what it needs (a token) in
 *       gpuctl_md_ variables between calls.  A spot node's bootstrap
 *       (gpc_node_ctx.spot) watches for notices only where it is defined.
 *
 * A function is defined by a line that starts with `NAME() {`; the
 * renderer looks for that line.  The node script may use the bootstrap's
 * sections (`##if RANK_FROM=launch`, `##if HEAD_FROM=node`: see
 * gpc_node_ctx for the words) to define a function only where it is used.
 * The script may call the bootstrap's gpuctl_say (a log line) and
 * gpuctl_md_curl (curl for a link-local metadata service: never through a
 * proxy, 2 s to connect, 5 s in all, 3 retries).  Every function and
 * variable it defines starts with gpuctl_md_.
 */
/*
 * A fabric a provider sells (EFA, eRDMA, ...) and its fabric script: the
 * node side of the fabric, the NCCL / libfabric environment and library
 * paths a node on it needs.  A provider lists them in gpc_provider.fabrics
 * (provider.h); each script lives in the provider's folder and is embedded
 * by the build from the FABRIC pairs of providers/NAME/provider.cmake
 * (`FABRIC efa efa.sh`).  The bootstrap itself knows the fabrics any, none,
 * rdma (as NCCL finds them) and infiniband (used by many vendors and on
 * premises); no provider declares those, and no two providers one fabric.
 *
 * The bootstrap of a node whose fabric (gpc_node_ctx.fabric, else the
 * spec's resources.interconnect) is one of the providers' includes that
 * fabric's script, whichever provider declares it (the node's own provider
 * or not), after the bootstrap's helpers and before the job starts.  The
 * script is a template like the node script (`##` comments, `##if`
 * sections, the bootstrap's placeholders).  The contract:
 *
 *   gpuctl_ic_FABRIC   (function, required; gpuctl_ic_efa for `efa`) set
 *       the fabric's environment; the bootstrap calls it once, with the
 *       job env already exported.
 *
 * It sets variables with the bootstrap's `gpuctl_default NAME VALUE`
 * (exported unless the spec's env sets NAME: the user's value wins), and
 * may call gpuctl_ldpath DIR (put DIR, when it exists, in front of
 * LD_LIBRARY_PATH unless the spec's env sets it), gpuctl_socket_ifname
 * (NCCL_SOCKET_IFNAME: eth0 where the node has one, else anything but
 * loopback and docker bridges) and gpuctl_say; it may read
 * $GPUCTL_INSTANCE_TYPE.  Every function it defines starts with
 * gpuctl_ic_FABRIC.
 */
typedef struct gpc_fabric_script {
    const char *name;   /* the fabric's word, as the catalog, offers and
                           resources.interconnect spell it: [a-z][a-z0-9]* */
    const char *script; /* the fabric script (NUL-terminated, static
                           storage) */
} gpc_fabric_script;

typedef struct gpc_userdata_rules {
    const char *provider;   /* the provider's name: GPUCTL_METADATA on the
                               node, and error messages ("aws allows 16384") */
    size_t max_raw;         /* limit on the bytes before base64; 0 = none */
    int gzip_ok;            /* may gzip when the plain text is over max_raw */
    int base64;             /* the API wants base64 (exactly once) */
    const char *node_script;/* the node script (NUL-terminated, static
                               storage); NULL only where nothing is rendered */
    int bare;               /* 1: the node gets the bootstrap itself, not
                               cloud-init user-data (a Slurm batch script
                               carries it): `gpuctl render` shows it so */
} gpc_userdata_rules;

/*
 * Where the nodes of a cluster find the rendezvous: the host of torchrun's
 * c10d store, which is the head (node rank 0).  A provider says which it
 * does (gpc_provider.rdzv); docs/architecture.md, "The seam".
 */
typedef enum gpc_rdzv_from {
    GPC_RDZV_HEAD_IP = 0, /* the head is created first and the provider reports
                             its private IP literal (create_node or
                             describe_node); the engine writes it into every
                             worker's bootstrap (EC2, local) */
    GPC_RDZV_NAME,        /* a host name the provider gives before anything is
                             created (rdzv_name: a Kubernetes headless
                             service's DNS name), written into every node's
                             bootstrap; no node waits for another's creation */
    GPC_RDZV_ON_NODE      /* found on the node at boot by the node script's
                             gpuctl_md_head_addr (Slurm: the NodeAddr of the
                             allocation's first host); the bootstrap carries
                             no address */
} gpc_rdzv_from;

/* Where a node's rank comes from (gpc_provider.rank). */
typedef enum gpc_rank_from {
    GPC_RANK_ENGINE = 0,   /* the engine writes each node's rank into its own
                              bootstrap: one bootstrap per node */
    GPC_RANK_LAUNCH_INDEX, /* nodes made by one create_nodes call share one
                              bootstrap; each adds its launch index (the node
                              script's gpuctl_md_launch_index) to the first
                              node's rank (EC2 ami-launch-index); a node made
                              alone gets its rank from the engine */
    GPC_RANK_SCHEDULER,    /* the scheduler numbers the nodes: the node
                              script's gpuctl_md_node_rank (Slurm
                              SLURM_NODEID, a Kubernetes completion index);
                              one bootstrap for every node */
    GPC_RANK_RENDEZVOUS    /* no rank in the workers' bootstrap: torchrun's
                              rendezvous numbers them as they join (elastic;
                              an Azure scale set, whose VMs all get the same
                              customData); the head keeps rank 0 from the
                              engine */
} gpc_rank_from;

/*
 * What differs between nodes of one cluster.
 *
 * How a node finds its rank (rank_from) and the rendezvous (rdzv_from),
 * and what `rank` and `head_addr` then hold:
 *
 *   rank_from GPC_RANK_ENGINE: `rank` is the node's rank, written into its
 *       bootstrap (GPUCTL_NODE_RANK); rank 0 is the head.
 *   rank_from GPC_RANK_LAUNCH_INDEX: one bootstrap for the nodes one call
 *       launches; `rank` is the first one's rank, and each node adds its
 *       launch index (the node script's gpuctl_md_launch_index) at boot.
 *       With GPC_RDZV_HEAD_IP `rank` is 1 or more: the head is made first,
 *       by itself; otherwise the node that gets rank 0 is the head.
 *   rank_from GPC_RANK_SCHEDULER: one bootstrap for every node of the
 *       cluster; `rank` is not used (0); each node reads its rank from
 *       gpuctl_md_node_rank at boot, and the one that reads 0 is the head.
 *   rank_from GPC_RANK_RENDEZVOUS: the bootstrap of workers that have no
 *       rank of their own: torchrun's c10d rendezvous numbers them as they
 *       join; `rank` is not used (the first worker's rank, for messages
 *       only), GPUCTL_NODE_RANK is empty on the node, and the node never
 *       hosts the rendezvous.  The head itself is rendered with
 *       GPC_RANK_ENGINE, rank 0.
 *
 *   rdzv_from GPC_RDZV_HEAD_IP: head_addr is the head's private IP literal
 *       (IPv4, or IPv6 with or without brackets), required of every node
 *       but the head itself; NULL for the head (GPC_RANK_ENGINE, rank 0),
 *       which finds its own IP through the node script's
 *       gpuctl_md_private_ip (a literal given for the head is used as is).
 *       With GPC_RANK_SCHEDULER the head is not known when the bootstrap
 *       is rendered, so head_addr is required.
 *   rdzv_from GPC_RDZV_NAME: head_addr is the address every node, the head
 *       included, uses as the rendezvous host: a host name
 *       ([A-Za-z0-9.-], labels of 1..63 characters that neither start nor
 *       end with '-', 253 at most, the last label not all digits) or an IP
 *       literal; required.
 *   rdzv_from GPC_RDZV_ON_NODE: head_addr is NULL; each node asks the node
 *       script's gpuctl_md_head_addr at boot (checked the same way).
 *
 * The rendezvous host is GPUCTL_HEAD_IP on the node, whichever it is.
 */
/* How often torchrun restarts the workers of a cluster that buys spot
 * (spot.policy spot or auto) after a failure, a lost node included: the
 * nodes left then wait, in a new rendezvous round of up to
 * GPC_SPOT_JOIN_TIMEOUT_S seconds, for the node that replaces it. */
#define GPC_SPOT_MAX_RESTARTS 3
#define GPC_SPOT_JOIN_TIMEOUT_S 1800

typedef struct gpc_node_ctx {
    const char *cluster;     /* cluster name (spec name) */
    const char *cluster_id;  /* unique id of this cluster instance (rdzv id) */
    uint32_t rank;           /* node rank, 0 = head (see rank_from) */
    uint32_t nnodes;         /* world size in nodes */
    const char *head_addr;   /* the rendezvous host, or NULL (see rdzv_from) */
    uint32_t rdzv_port;      /* c10d port on the head; 0: the spec's
                                run.rdzv_port, else 29400 */
    const char *workdir;     /* path of the job's workdir on the node, or NULL */
    const char *checkpoint_dir; /* path on the node, or NULL */
    const char *ckpt_store;  /* with checkpoint_dir: the store URL its
                                checkpoints are kept at (provider.h
                                store_url; aws: s3://BUCKET/clusters/NAME/
                                checkpoints), restored before setup and
                                saved back by the head during and after the
                                job (the bootstrap's CKPT_STORE=1 section);
                                NULL where the nodes share this machine's
                                files or nothing is kept */
    const char *store_endpoint; /* the store's endpoint URL for the node
                                (provider.h store_endpoint), NULL or "" =
                                the provider's default */
    const char *fabric;      /* the chosen offer's fabric ("efa", "infiniband",
                                "erdma", "none"), or NULL: the spec's
                                resources.interconnect decides (a spec that
                                says `rdma` needs this to get fabric env) */
    const char *instance_type; /* the node's instance type (GPUCTL_INSTANCE_TYPE
                                on the node, which a fabric script may read:
                                GPUDirect RDMA on EFA), or NULL */
    gpc_rank_from rank_from; /* where the node's rank comes from (above);
                                0 = GPC_RANK_ENGINE */
    gpc_rdzv_from rdzv_from; /* where the node finds the rendezvous (above);
                                0 = GPC_RDZV_HEAD_IP */
    /* The spec's data sets (data.h, gpc_data_placed): the job sees data
     * set NAME at $GPUCTL_DATA_DIR/NAME before setup.  data_dir NULL: no
     * data (GPUCTL_DATA_DIR unset); "": $GPUCTL_HOME/data on the node.
     * With data_fetch 1 the bootstrap's DATA section fetches
     * data_urls[i] into $GPUCTL_DATA_DIR/data_names[i] (the node script's
     * gpuctl_md_store_get URL DIR, with store_endpoint; rendering fails
     * for a node script without it); with 0 the directory already holds them.  Names
     * are data set names (gpc_data_name_ok), URLs hold no control
     * character; both are quoted for the shell. */
    const char *data_dir;
    int data_fetch;
    const char *const *data_names;
    const char *const *data_urls;
    size_t n_data;
    int deliver;             /* 1: gpuctl delivers the spec's workdir (when
                                `workdir` above is NULL) and secrets over
                                the provider's transport once the node runs
                                (provider.h, transport_argv): before setup
                                the bootstrap waits for the delivery marker
                                (the DELIVER section of templates/bootstrap.sh) */
    int spot;                /* 1: the node is bought on the spot market:
                                where its node script defines
                                gpuctl_md_notice, the bootstrap watches for
                                interruption notices (its NOTICE section) */
    double cluster_hourly;   /* USD/hour of all the cluster's nodes as they
                                were bought (head + nnodes - 1 workers at
                                their offers' prices, the spot price at
                                launch where known); with the spec's
                                budget.max_total every node ends itself once
                                the cluster would have spent it at this
                                price: max_total / cluster_hourly hours
                                after its boot (the BUDGET_S value), so that
                                each node's part is in proportion to its
                                price; 0 = costs nothing */
    int no_first_job;        /* 1: a node added to a live cluster (apply of
                                a changed node count, replace.c): the
                                bootstrap installs the job runner and runs no
                                job of its own (phase "idle"); gpuctl hands
                                the cluster's next job to every node */
} gpc_node_ctx;

/*
 * Render the bootstrap shell script for one node, with rules->node_script
 * in it and the fabric script of the node's fabric, found by the fabric's
 * name among the fabrics of every provider in gpc_providers[] (see
 * gpc_fabric_script).  Returns 0 with *out a NUL-terminated string the
 * caller frees, or GPC_ERR_RENDER / GPC_ERR_NOMEM.  Fails when an env value
 * holds a NUL byte, when the node script is missing or does not define a
 * function the contract above asks of it for the node's modes (naming the
 * function), when rank, head_addr and the modes do not go together as
 * gpc_node_ctx says (a head address that is not an IP literal where one is
 * needed, or not a host name either where a name may be), when the node's
 * fabric is neither one the bootstrap knows nor one a provider declares
 * (naming the fabric), and when its fabric script does not define
 * gpuctl_ic_FABRIC.
 */
int gpc_render_bootstrap(const gpc_spec *spec, const gpc_node_ctx *node,
                         const gpc_userdata_rules *rules,
                         char **out, gpc_error *err);

/*
 * What the engine hands a provider to start a node with (gpc_node_request.
 * payload): provider-neutral, owned by whoever rendered it
 * (gpc_render_payload; gpc_payload_free).
 *
 * `script` is the whole bootstrap, and it already exports the job env
 * itself: a provider that runs the script (a VM's user-data, a batch
 * script) needs nothing else.  `env` is that same job env as name/value
 * pairs, in the spec's order, for a launcher that sets a container's
 * environment natively (a pod spec); setting it there too is harmless, as
 * the script sets the same values.
 */
typedef struct gpc_payload {
    char *script;       /* the bootstrap, NUL-terminated */
    size_t script_len;  /* its length in bytes */
    gpc_env_var *env;   /* copies of the spec's env (names match
                           [A-Za-z_][A-Za-z0-9_]*, values byte-exact) */
    size_t n_env;
} gpc_payload;

/*
 * Render the payload for one node: the bootstrap (gpc_render_bootstrap,
 * with its errors) and a copy of the spec's env.  On success *out holds
 * what gpc_payload_free releases; on failure *out is zeroed.
 */
int gpc_render_payload(const gpc_spec *spec, const gpc_node_ctx *node,
                       const gpc_userdata_rules *rules, gpc_payload *out,
                       gpc_error *err);

/* Free what gpc_render_payload put in *p and zero it; NULL is a no-op. */
void gpc_payload_free(gpc_payload *p);

/*
 * For VM providers: the `#cloud-config` user-data (templates/cloud-config.
 * yaml: write the script to /var/lib/gpuctl/bootstrap.sh, run it once)
 * around payload->script, encoded by `rules` as gpc_userdata_encode does
 * (gzip over rules->max_raw where allowed, base64 where the API wants it).
 * *out (caller frees) is NUL-terminated, *out_len its length in bytes;
 * *gzipped (may be NULL) tells whether gzip was applied.  GPC_ERR_RENDER
 * when it does not fit (the sizes named, as gpc_userdata_encode says) or
 * when the script holds a NUL byte; GPC_ERR_INTERNAL on a NULL argument or
 * a script longer than script_len.
 */
int gpc_payload_cloud_init(const gpc_payload *payload, const gpc_userdata_rules *rules,
                           char **out, size_t *out_len, int *gzipped, gpc_error *err);

/*
 * Render the whole `#cloud-config` user-data for one node (plain text, no
 * BOM, no CR, no leading blank line): the cloud-config around the node's
 * bootstrap, before any encoding (what `gpuctl render` shows).  Caller
 * frees *out.
 */
int gpc_render_userdata(const gpc_spec *spec, const gpc_node_ctx *node,
                        const gpc_userdata_rules *rules,
                        char **out, gpc_error *err);

/*
 * Encode user-data for the provider's API: gzip when the plain text is over
 * rules->max_raw and gzip is allowed, then base64 exactly once when the API
 * wants it.  Fails with GPC_ERR_RENDER naming the limit ("user-data is 20480
 * bytes after gzip; aws allows 16384") when it cannot fit.  *out (caller
 * frees) is NUL-terminated, *out_len its length; *gzipped tells whether
 * gzip was applied (may be NULL).
 */
int gpc_userdata_encode(const char *userdata, size_t len,
                        const gpc_userdata_rules *rules,
                        char **out, size_t *out_len, int *gzipped,
                        gpc_error *err);

/*
 * Quote `value` for the shell so that it reads back byte for byte:
 * 'abc' with each ' written as '\''.  Appends to `out`.
 *
 * Bytes that must not appear raw in user-data are written as bash ANSI-C
 * segments concatenated with the single-quoted ones ('a'$'\r''b'): control
 * characters other than TAB and LF (CR as \r, the rest as \xHH), DEL, bytes
 * that are not valid UTF-8, and the characters YAML reads as line breaks or
 * refuses (U+0080..U+009F, U+2028, U+2029, U+FFFE, U+FFFF).  The result is
 * then printable UTF-8 with no CR; it is POSIX sh when the value has none of
 * those bytes, bash otherwise.  An empty value is ''.
 */
struct gpc_buf;
int gpc_shell_quote(struct gpc_buf *out, const char *value, gpc_error *err);

/* The same for `len` bytes; a NUL among them is GPC_ERR_RENDER. */
int gpc_shell_quote_n(struct gpc_buf *out, const char *value, size_t len,
                      gpc_error *err);

/*
 * The template engine behind gpc_render_*, exposed for tests and for other
 * templates.  `text` (len bytes) holds placeholders {{NAME}}, NAME being
 * [A-Z][A-Z0-9_]*; each is replaced by the value of the var of that name.
 * Values are inserted verbatim and never scanned again.  A placeholder alone
 * on its line after spaces or tabs is a block: every further non-empty line
 * of the value gets the same indentation, and one trailing newline of the
 * value is dropped (the template line ends the block).  Lines between
 * "##if NAME=word1|word2" and "##endif" (not nested) are kept only when var
 * NAME is one of the words.  A line whose first
 * non-blank characters are `##` is a template comment and is left out.
 * A malformed placeholder, one with no var, or a var whose value is NULL is
 * GPC_ERR_RENDER naming `tname` and the line.  Appends to `out`.
 */
typedef struct gpc_tpl_var {
    const char *name;
    const char *value;
} gpc_tpl_var;

int gpc_template_render(const char *tname, const char *text, size_t len,
                        const gpc_tpl_var *vars, size_t n_vars,
                        struct gpc_buf *out, gpc_error *err);

/*
 * A job for a live node's job runner (GPUCTL_HOME/job.sh, installed by the
 * bootstrap): `gpuctl exec` and a re-run by `apply` send it on the node's
 * standard input.  The bootstrap's first job is the same form.
 */
typedef struct gpc_job_def {
    const char *id;            /* 1 to 64 of [A-Za-z0-9._-]; the rendezvous id
                                  on the node is CLUSTER_UID-ID */
    const char *setup;         /* shell text run before, or NULL/"" for none */
    const char *run;           /* the command each worker runs (required) */
    const gpc_env_var *env;    /* the job env, when with_env */
    size_t n_env;
    int detach;                /* gpc_cluster_exec: 1 = started in the background
                                  on each node, output to node.log only; a
                                  node that does not take it fails the call */
    int quiet;                 /* gpc_cluster_exec: 1 = the nodes' output is not
                                  printed (it is in node.log) */
    int with_env;              /* 1: env replaces the node's job env (an empty
                                  env too); 0: the latest job env stays */
    uint32_t num_nodes;        /* the cluster's node count now (the job's
                                  world size in nodes, GPUCTL_NUM_NODES),
                                  which a node keeps from its boot when 0 */
} gpc_job_def;

/*
 * The job file of `job` appended to `out`: GPUCTL_JOB_ID, GPUCTL_SETUP and
 * GPUCTL_RUN_COMMAND assignments, GPUCTL_NUM_NODES when num_nodes is set,
 * and, with with_env, gpuctl_user_env and
 * a gpuctl_job_env function of `export NAME='value'` lines, every value
 * quoted by gpc_shell_quote (data, never code).  Errors: GPC_ERR_RENDER (a
 * bad id, no run command, an env name that is not a shell name, an env
 * value NULL or holding bytes the quoting refuses); the buffer's.
 */
int gpc_render_job(const gpc_job_def *job, struct gpc_buf *out, gpc_error *err);

#endif /* GPUCTL_RENDER_H */
