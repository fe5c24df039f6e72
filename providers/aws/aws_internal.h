/*
 * aws_internal.h - what the files of the aws provider share (private to
 * providers/aws/): the provider's context, the facts it caches per region,
 * and the functions one file of it calls in another.
 *
 *   aws.c          open/close, shared helpers, check, the provider table
 *   region.c       zones and instance types, default VPC and subnet, AMI
 *   network.c      key pair, security group, placement group
 *   launch.c       RunInstances (one node, or a batch by launch index)
 *   instances.c    find, describe, delete instances; their console output
 *   ssh.c          shell access to a node: ssh with its host keys (gpuctl ssh)
 *   logs.c         the log transport: a node's log and exit status over ssh
 *   eip.c          Elastic IPs of multi-card nodes (nodes_running)
 *   cleanup.c      destroy: everything tagged with the cluster
 *   orphans.c      gpuctl gc: everything tagged by gpuctl, every region
 *   live_prices.c  current spot prices (DescribeSpotPriceHistory)
 *   quota.c        the account's EC2 vCPU quota, checked before a launch
 *   iam.c          the cluster's IAM role and instance profile (checkpoints)
 */
#ifndef GPUCTL_AWS_INTERNAL_H
#define GPUCTL_AWS_INTERNAL_H

#include <stddef.h>

#include <libxml/tree.h>

#include "aws/ec2.h"
#include "gpuctl/buf.h"
#include "gpuctl/error.h"
#include "gpuctl/log.h"
#include "gpuctl/provider.h"

/* The tags on everything gpuctl makes for a cluster. */
#define TAG_CLUSTER "gpuctl:cluster"
#define TAG_UID "gpuctl:cluster-uid"
#define TAG_ROLE "gpuctl:role"
/* On the instances of a cluster whose nodes have an end (every cluster
 * but one whose spec says lifecycle.max_duration: none and has no budget
 * end): when the node should be gone (its launch plus its end:
 * max_duration, the default one, or the budget end), RFC 3339 UTC
 * ("2026-11-29T08:00:00Z"); `gpuctl gc` collects a cluster once one of its
 * nodes passed it (orphans.c). */
#define TAG_EXPIRES "gpuctl:expires-at"
/* On the instances only, what rebuilds a cluster's record when the state
 * lost it (orphans.c, `gpuctl status --refresh`; docs/spot.md): the rank
 * of the instance of launch index 0 of its RunInstances (a node's rank is
 * it plus the node's amiLaunchIndex: a batch of workers shares one tag
 * set), the cluster's node count, its spec hash and the price the node
 * was bought at, USD/hour.  Nothing of the job (env, secrets, command). */
#define TAG_RANK "gpuctl:rank"
#define TAG_NODES "gpuctl:nodes"
#define TAG_SPEC_HASH "gpuctl:spec-hash"
#define TAG_PRICE "gpuctl:price-usd-hour"
/* EC2 keeps at most 50 tags a resource (key 128, value 256 characters);
 * gpuctl's own take at most AWS_OWN_TAGS of them (cluster, uid, Name,
 * role, expires-at and the four above), the spec's labels the rest. */
#define AWS_TAGS_MAX 50
#define AWS_OWN_TAGS 9

typedef struct type_info {
    char region[48];
    char type[64];
    int efa;            /* efaSupported */
    int max_efa;        /* efaInfo/maximumEfaInterfaces */
    int max_cards;      /* maximumNetworkCards */
} type_info;

typedef struct zone_list {
    char region[48];
    char type[64];
    char (*zones)[48];
    size_t n;
} zone_list;

typedef struct region_info {
    char region[48];
    char vpc[32];
    char ami_for[64];   /* the spec image this AMI answers */
    char ami[32];
    char root_dev[32];
    double ami_gib;
    char subnet_zone[48]; /* the last default subnet looked up */
    char subnet[32];
} region_info;

/* What this session learnt of one EC2 vCPU quota in one region (quota.c). */
typedef struct aws_sq_entry {
    char region[48];
    char code[16];      /* the quota code, "L-417A185B" */
    int known;          /* 1: Service Quotas gave its value; 0: it could not */
    double limit;       /* the value, vCPUs */
    char uid[64];       /* the cluster last found to fit ("" none) */
} aws_sq_entry;

typedef struct aws_ctx {
    gpc_ec2 ec2;
    char *state_dir;
    const gpc_log *log;
    type_info *types;
    size_t n_types;
    zone_list *zl;
    size_t n_zl;
    region_info *ri;
    size_t n_ri;
    /* the cluster resources ensured in this process */
    char res_key[160];  /* "<region> <uid>" they belong to */
    char sg[32];
    char key_name[160];
    char pg_zone[48];
    char pg[224];
    const gpc_label *labels;  /* the spec's, while a create runs (borrowed) */
    size_t n_labels;
    char quota_key[160];      /* "<region> <uid>" whose Elastic IP quota was checked */
    char nic_uid[64];         /* the cluster whose instances this process has listed */
    int multi_nic;            /* a node with several network interfaces was seen */
    aws_sq_entry sq[32];      /* vCPU quotas read in this session (quota.c) */
    size_t n_sq;
    size_t sq_next;           /* the entry reused next once all are taken */
    struct aws_store *store;  /* object storage: S3 sessions and buckets (store.c) */
    struct aws_logs *logs;    /* log transport: each node's ssh command (logs.c) */
    char iam_key[160];        /* "<region> <uid>" whose instance profile was ensured (iam.c) */
} aws_ctx;

/* One <item> of a Describe* answer (aws_describe_all). */
typedef int (*item_fn)(void *arg, xmlNode *item, gpc_error *err);

/* Instances found by the cluster's tag (aws_list_tagged). */
typedef struct tagged_acc {
    char (*ids)[32];
    gpc_node_status *st;
    size_t n, cap;
    int multi_nic;          /* one of them has several network interfaces */
} tagged_acc;

/* ---- aws.c -------------------------------------------------------------- */

/* The provider table (its user-data rules are read by launch.c). */
extern const gpc_provider gpc_provider_aws;

/* Seconds between polls: $GPUCTL_AWS_POLL_S, else 5. */
double aws_poll_s(void);

/* Sleep s seconds on the clock (gpc_sleep, clock.h; resumed after a
 * signal). */
void aws_nap(double s);

/* "gpuctl-<name>-<uid8>" */
void aws_base_name(const char *cluster, const char *uid, char *out, size_t size);

/* TagSpecification.<spec> for `type` with the cluster's tags (and the
 * spec's labels, and Name, role and TAG_EXPIRES when not NULL).  Labels'
 * keys hold no ':' (spec.c), so none can pass for one of gpuctl's. */
void aws_tag_spec(gpc_ec2_params *p, unsigned spec, const char *type, const char *cluster,
                  const char *uid, const char *name, const char *role, const char *expires,
                  const gpc_label *labels, size_t n_labels);
/* The same with gpuctl's node tags (`ours`, n_ours of them, keys TAG_RANK
 * ...) after the role's, before the labels. */
void aws_tag_spec_ex(gpc_ec2_params *p, unsigned spec, const char *type, const char *cluster,
                     const char *uid, const char *name, const char *role, const char *expires,
                     const gpc_label *ours, size_t n_ours, const gpc_label *labels,
                     size_t n_labels);

/* Every page of a Describe* call `action` in `region` with the parameters
 * of `base` (may be NULL), following nextToken: calls `each` on each <item>
 * of the list `list` in every answer; stops at the first error. */
int aws_describe_all(aws_ctx *c, const char *region, const char *action,
                     const gpc_ec2_params *base, const char *list, item_fn each,
                     void *arg, gpc_error *err);

/* An EC2 instance <item> as a gpc_node_status (aws.md 2.3, 2.4). */
void aws_instance_status(xmlNode *it, gpc_node_status *ns);

/* ---- orphans.c: what gpuctl made and no cluster owns (gpuctl gc) -------- */

/* The seam's list_orphans (provider.h); orphans.c's top comment says what
 * is listed and how. */
int aws_list_orphans(void *ctx, const char *const *regions, size_t n_regions,
                     gpc_orphan **out, size_t *n, gpc_error *err);

/* RFC 3339 UTC of Unix time t ("2026-11-29T08:00:00Z") into out (size >=
 * 21), and back: the Unix time of such a text, -1 when it is not one. */
void aws_rfc3339(int64_t t, char *out, size_t size);
int64_t aws_rfc3339_parse(const char *text);

/* ---- store.c: object storage (provider.h) ------------------------------- */

int aws_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                  gpc_error *err);
int aws_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                   gpc_store_stats *st, gpc_error *err);
int aws_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                   gpc_store_stats *st, gpc_error *err);
int aws_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                   size_t *n, gpc_error *err);
int aws_store_delete(void *ctx, const char *region, const char *path, const char *const *keys,
                     size_t n, gpc_error *err);
int aws_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                     gpc_error *err);
/* The S3 endpoint for nodes (provider.h store_endpoint; iam.c): the
 * configured override, else "". */
int aws_store_endpoint(void *ctx, const char *region, char *out, size_t size, gpc_error *err);
/* Close the store's S3 sessions (aws_close). */
void aws_store_free(aws_ctx *c);

/* ---- region.c ----------------------------------------------------------- */

/* The zones of `region` offering `type`, cached (DescribeInstanceTypeOfferings,
 * aws.md 2.8). */
int aws_zones_for(aws_ctx *c, const char *region, const char *type, const zone_list **out,
                  gpc_error *err);

/* EFA facts of an instance type (DescribeInstanceTypes, aws.md 2.7, 5.3). */
int aws_type_facts(aws_ctx *c, const char *region, const char *type, const type_info **out,
                   gpc_error *err);

/* The facts kept for `region`, a new empty slot the first time; NULL with
 * err filled when out of memory. */
region_info *aws_region_slot(aws_ctx *c, const char *region, gpc_error *err);

/* r->vpc: the region's default VPC (DescribeVpcs isDefault), looked up once. */
int aws_default_vpc(aws_ctx *c, region_info *r, gpc_error *err);

/* The default subnet of `zone` in r's default VPC into out (DescribeSubnets
 * default-for-az), the last one looked up kept in r. */
int aws_default_subnet(aws_ctx *c, region_info *r, const char *zone, char *out, size_t size,
                       gpc_error *err);

/*
 * The AMI for `image` in region r: "pytorch" is the newest AWS Deep
 * Learning AMI with PyTorch (DescribeImages, owner amazon, by name,
 * aws.md 2.12), cached for a day; an explicit ami-... is used as is (its
 * root device looked up).
 */
int aws_resolve_image(aws_ctx *c, region_info *r, const char *image, gpc_error *err);

/* The image cache file: $GPUCTL_CACHE_DIR|$XDG_CACHE_HOME/gpuctl|~/.cache/gpuctl
 * /aws/images-<region>.txt, lines "<image> <ami> <root dev> <GiB> <unix time>". */
int aws_image_cache_path(const aws_ctx *c, const char *region, char *out, size_t size);

/* ---- network.c ---------------------------------------------------------- */

/* The key pair `kname` for the cluster in `region`, imported from the
 * user's public key or one gpuctl makes (see aws.c's top comment). */
int aws_ensure_key(aws_ctx *c, const char *region, const char *kname, const char *cluster,
                   const char *uid, gpc_error *err);

/* The cluster's security group `name` in r's default VPC, made with its
 * rules when missing; its id into sg. */
int aws_ensure_group(aws_ctx *c, region_info *r, const char *name, const char *cluster,
                     const char *uid, char *sg, size_t size, gpc_error *err);

/* The cluster placement group `name` in `region`, made when missing. */
int aws_ensure_placement(aws_ctx *c, const char *region, const char *name,
                         const char *cluster, const char *uid, gpc_error *err);

/* ---- launch.c ----------------------------------------------------------- */

/* EFA interfaces per node: one per network card (as many as the type has
 * EFA interfaces, aws.md 2.7), 0 without EFA. */
int aws_efa_cards(const gpc_spec *spec, const type_info *ti);

/* The id of an instance <item>'s primary network interface (card 0,
 * device 0) into out ("" when none); returns how many interfaces it has. */
int aws_primary_eni(xmlNode *it, char *out, size_t size);

/* ---- instances.c -------------------------------------------------------- */

/*
 * The serial console output of instance `id` in `region` (GetConsoleOutput,
 * decoded from base64): *text (caller frees; NULL with *len 0 when EC2 has
 * none yet).  latest: ask for the latest output (Latest=true, which EC2
 * serves on Nitro instances only) instead of the last buffered one.
 * Errors: EC2's.
 */
int aws_console_output(aws_ctx *c, const char *region, const char *id, int latest,
                       unsigned char **text, size_t *len, gpc_error *err);

/*
 * The SSH host keys cloud-init printed to the console: the lines of the
 * last block between "-----BEGIN SSH HOST KEY KEYS-----" and
 * "-----END SSH HOST KEY KEYS-----", each "TYPE BASE64 [comment]" after an
 * optional prefix ("ec2: ").  A line counts when TYPE is ssh-ed25519,
 * ecdsa-sha2-nistp256/384/521 or ssh-rsa and BASE64 decodes to a key blob
 * of that type; others are skipped.  out (reset first) gets "TYPE
 * BASE64\n" per key.  Returns how many; 0 (out empty) when there is no
 * block, or its end is not printed yet.
 */
int aws_console_host_keys(const unsigned char *text, size_t len, gpc_buf *out);

/* TerminateInstances of ids[0..n) in `region` (a missing instance counts as
 * gone). */
int aws_terminate_ids(aws_ctx *c, const char *region, const char *const *ids, size_t n,
                      gpc_error *err);

/* Every instance tagged with the cluster uid in `region` (all pages). */
int aws_list_tagged(aws_ctx *c, const char *region, const char *uid, int live_only,
                    tagged_acc *a, gpc_error *err);

/* ---- eip.c -------------------------------------------------------------- */

/*
 * Before the first launch of req's cluster in `region` (once per process):
 * refuse with GPC_ERR_QUOTA when the region's Elastic IP quota has no room
 * for one address per node (DescribeAccountAttributes vpc-max-elastic-ips,
 * less every address allocated there, DescribeAddresses; the cluster's own
 * addresses serve its nodes again).  The core then leaves the region.
 */
int aws_eip_quota(aws_ctx *c, const gpc_node_request *req, const char *region,
                  const type_info *ti, gpc_error *err);

/*
 * Destroy: every Elastic IP tagged with the cluster uid in `region` is
 * disassociated (when it is; termination would do it only once the
 * instance is `terminated`, aws.md "Public addresses..." section 2,
 * dstack's _release_eip) and then released, each step at once for all.
 * What could not be is added to `left`.  Returns -1 when the addresses
 * could not be listed, else 0.
 */
int aws_release_tagged_addresses(aws_ctx *c, const char *region, const char *uid,
                                 gpc_buf *left);

/* ---- quota.c ------------------------------------------------------------ */

/* An EC2 vCPU quota (Service Quotas, service code "ec2"). */
typedef struct aws_vcpu_quota_def {
    const char *code;   /* "L-417A185B" */
    const char *name;   /* "Running On-Demand P instances" */
    int spot;           /* 1: a Spot Instance Requests quota */
} aws_vcpu_quota_def;

/*
 * The vCPU quota an instance type counts against, On-Demand (spot 0) or
 * Spot (spot 1), by its family letters (quota.c says the sources):
 * Standard (a c d h i m r t z), F, G and VT (g, gr, vt), P, X, Inf, Trn,
 * DL, High Memory (u-, On-Demand only), HPC (On-Demand only).  A static
 * definition; NULL for a type of no known quota (mac, a name that is not
 * an instance type's).
 */
const aws_vcpu_quota_def *aws_vcpu_quota_of(const char *instance_type, int spot);

/*
 * Before RunInstances of n nodes like req (batch 1: workers by launch
 * index; 0: one node): refuse with GPC_ERR_QUOTA, naming the quota (name
 * and code), the region, the vCPUs needed, the quota and the vCPUs in use,
 * and how to raise it, when the nodes do not fit under the account's vCPU
 * quota for the type's family in the offer's region (GetServiceQuota, read
 * once a session per region and quota) less the vCPUs of the account's
 * pending and running instances under that quota (DescribeInstances, every
 * page; On-Demand or Spot by instanceLifecycle; vCPUs per type from
 * DescribeInstanceTypes, the offer's own from req->offer->vcpus when set).
 * The head launched alone (rank 0, not a batch) stands for all
 * req->nnodes nodes when the spec buys head and workers the same way
 * (spot.head == spot.policy), the cluster's own instances then not counted
 * as use; otherwise the n nodes of this launch count.  Once a cluster fits
 * under a quota in a region it is not checked there again this session.
 * Not checked (0, said at -v): a type of no known quota, EC2 at an endpoint
 * of the user's with Service Quotas at AWS's, Service Quotas or
 * DescribeInstances unable to answer (RunInstances then decides).
 * Errors: GPC_ERR_QUOTA, GPC_ERR_NOMEM, GPC_ERR_INTERRUPTED (a signal
 * while a call waited to be retried).
 */
int aws_vcpu_quota(aws_ctx *c, const gpc_node_request *req, size_t n, int batch,
                   gpc_error *err);

/* ---- iam.c: the cluster's instance profile ---------------------------- */

/* "gpuctl-<cluster, first 48 characters>-<uid8>": the name of the
 * cluster's IAM role and of its instance profile (at most 64 characters,
 * IAM's limit for a role name). */
void aws_iam_name(const char *cluster, const char *uid, char *out, size_t size);

/* The store path of a cluster's checkpoints, "clusters/<cluster>/checkpoints"
 * (by name: a cluster applied again finds its predecessor's). */
void aws_iam_ckpt_path(const char *cluster, char *out, size_t size);

/* A prefix of a bucket the nodes may only read (a data set), without a
 * trailing '/'; "" = the whole bucket.  Strings borrowed. */
typedef struct aws_iam_read {
    const char *bucket;
    const char *prefix;
} aws_iam_read;

/*
 * The inline policy of the cluster's role (*out, caller frees), one line
 * without blanks.  With `prefix` (the checkpoints' prefix in BUCKET, no
 * trailing '/'; NULL = none) and S = PREFIX + "/" + "*":
 * {"Version":"2012-10-17","Statement":[
 *  {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject",
 *   "s3:AbortMultipartUpload"],"Resource":"arn:aws:s3:::BUCKET/S"},
 *  {"Effect":"Allow","Action":["s3:ListBucket"],"Resource":
 *   "arn:aws:s3:::BUCKET","Condition":{"StringLike":{"s3:prefix":"S"}}},
 * then for each of the n_reads reads (R = its prefix + "/" + "*", or "*"
 * for the whole bucket) the same two statements with s3:GetObject only
 * on its bucket: what `aws s3 sync` of the data sets needs.
 * Errors: GPC_ERR_NOMEM.
 */
int aws_iam_policy(const char *bucket, const char *prefix, const aws_iam_read *reads,
                   size_t n_reads, char **out, gpc_error *err);

/*
 * One IAM Query API call `action` with `p` (may be NULL) at IAM's endpoint
 * for the partition of `region` (NULL: the configured region's): *doc the
 * parsed answer (caller frees).  Errors: the IAM error code in
 * err->remote.code, AccessDenied -> GPC_ERR_AUTH (naming iam:ACTION),
 * others as EC2's codes map (gpc_ec2_error_code); transport errors.
 */
int aws_iam_call(aws_ctx *c, const char *region, const char *action, const gpc_ec2_params *p,
                 xmlDoc **doc, gpc_error *err);

/*
 * Before the first RunInstances of req's cluster in `region` (once per
 * process and region): the cluster's role (CreateRole, tagged), its
 * policy for the region's bucket (PutRolePolicy "gpuctl-store-
 * REGION", aws_iam_policy), its instance profile (CreateInstanceProfile,
 * tagged) holding the role (AddRoleToInstanceProfile); what exists already
 * counts.  The profile's name goes to req->ref->data first (see iam.c) and
 * into profile (size bytes).  Makes the region's bucket when missing.
 * Errors: IAM's and S3's (aws_iam_call, aws_store_url).
 */
int aws_iam_ensure(aws_ctx *c, const gpc_node_request *req, const char *region, char *profile,
                   size_t size, gpc_error *err);

/* Is e RunInstances refusing an instance profile IAM has not spread yet
 * (InvalidParameterValue "Invalid IAM Instance Profile name")? */
int aws_iam_not_yet(const gpc_error *e);

/* The instance profile recorded in a cluster's provider data into out
 * (size bytes); 1 when there is one, else 0 (out ""). */
int aws_iam_recorded(const char *data, char *out, size_t size);

/*
 * Destroy: the recorded role and instance profile of ref's cluster removed
 * (the role out of the profile, the profile, the role's inline policies,
 * the role; NoSuchEntity counts as gone).  What could not be is added to
 * `left`; returns -1 then, else 0 (also when nothing is recorded).
 */
int aws_iam_remove(aws_ctx *c, const gpc_cluster_ref *ref, gpc_buf *left);

/* ---- the provider table's operations (provider.h says what each does) --- */

int aws_list_zones(void *ctx, const gpc_offer *offer, char (**zones)[48], size_t *n,
                   gpc_error *err);
int aws_create(void *ctx, const gpc_node_request *req, gpc_node_status *out,
               gpc_error *err);
int aws_create_many(void *ctx, const gpc_node_request *reqs, size_t n,
                    gpc_node_status *out, gpc_error *err);
int aws_find(void *ctx, const char *region, const char *token, gpc_node_status *out,
             gpc_error *err);
int aws_describe(void *ctx, const char *region, const char *id, gpc_node_status *out,
                 gpc_error *err);
int aws_describe_many(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                      size_t n, gpc_node_status *out, gpc_error *err);
int aws_delete(void *ctx, const char *region, const char *id, gpc_error *err);
int aws_nodes_running(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                      size_t n, gpc_error *err);
int aws_cleanup(void *ctx, const gpc_cluster_ref *ref, gpc_error *err);
int aws_live_prices(void *ctx, gpc_offer *offers, size_t n, size_t *updated,
                    gpc_error *err);

/* ---- ssh.c ---------------------------------------------------------------- */

struct gpc_argv;

/*
 * The ssh command that reaches node `node` of cluster `cl`, without its
 * destination and command: "ssh -T|-t [-i KEY -o IdentitiesOnly=yes] -o
 * StrictHostKeyChecking=yes|accept-new -o UserKnownHostsFile=... -o
 * HostKeyAlias=INSTANCE-ID -o ControlMaster=auto -o ControlPath=... -o
 * ControlPersist=300" appended to *a (what rsync -e and a remote command
 * run), and the destination "USER@PUBLIC-IP" in dest (USER:
 * $GPUCTL_AWS_SSH_USER, else ubuntu, the Deep Learning AMI's).  Before
 * that, the node's host keys from its console output are written to the
 * cluster's known_hosts (see ssh.c's top comment).  Errors:
 * GPC_ERR_PROVIDER (no public address, an instance no longer listed),
 * EC2's, GPC_ERR_IO, GPC_ERR_NOMEM.
 */
int aws_ssh_transport(aws_ctx *c, const gpc_cluster_ref *cl, const gpc_node_ref *node, int tty,
                      struct gpc_argv *a, char *dest, size_t dest_size, gpc_error *err);

/* The seam's shell_argv (provider.h): aws_ssh_transport, "--", the
 * destination, then the command's words (ssh joins them). */
int aws_shell_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node, uint32_t rank,
                   const char *const *cmd, size_t n_cmd, int tty, char ***argv, gpc_error *err);

/* The seam's transport_argv (provider.h): aws_ssh_transport's vector and
 * destination. */
int aws_transport_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                       char ***rsh, char *dest, size_t dest_size, gpc_error *err);
/* ---- logs.c ---------------------------------------------------------------- */

/* The seam's poll_interruptions (provider.h): what each node's notice
 * watcher wrote, read over ssh (logs.c). */
int aws_poll_interruptions(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *nodes,
                           size_t n, gpc_interruption *out, gpc_error *err);
/* The seam's read_log (provider.h): node.log and exit_status of the node's
 * /var/lib/gpuctl, read over ssh (aws_ssh_transport). */
int aws_read_log(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node, uint32_t rank,
                 long offset, int may_wait, gpc_buf *out, long *next, int *exit_status,
                 gpc_error *err);

/* Free what the log transport keeps in c (aws_close). */
void aws_logs_free(aws_ctx *c);

#endif /* GPUCTL_AWS_INTERNAL_H */
