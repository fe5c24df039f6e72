/*
 * aws.c - the `aws` provider: EC2 over the Query API (providers/aws/ec2.c),
 * signed with our own SigV4 (providers/aws/sigv4.c).  Facts:
 * docs/providers/aws.md and aws.md (the reference notes) sections 2-5.
 * This file holds the context, the helpers the others share and the
 * provider table; aws_internal.h lists the files of the rest.
 *
 * What one cluster gets, all tagged gpuctl:cluster=<name> and
 * gpuctl:cluster-uid=<uid> (so destroy finds everything by tag):
 *  - a key pair gpuctl-<name>-<uid8>: the user's public key
 *    ($GPUCTL_SSH_PUBLIC_KEY, ~/.ssh/id_ed25519.pub, ~/.ssh/id_rsa.pub) or an
 *    RSA key gpuctl makes and keeps in <state>/keys/ (0600);
 *  - a security group gpuctl-<name>-<uid8> in the region's default VPC:
 *    all traffic within the group both ways (NCCL, EFA's self-referencing
 *    rule, aws.md 2.10) and SSH from the caller's address;
 *  - a cluster placement group gpuctl-<name>-<uid8>-<zone> when the nodes
 *    use EFA and there is more than one;
 *  - the instances: the head first (one RunInstances), then every worker in
 *    one RunInstances with the head's address in the user-data (each finds
 *    its rank from its ami-launch-index); ClientToken from the cluster and
 *    the attempt; IMDSv2 only; shutdown terminates; spot as one-time
 *    requests with the spec's max price; every EFA card of the type (an
 *    ENA primary interface and efa-only interfaces on types with several
 *    network cards, see run_params);
 *  - an Elastic IP per node with several network interfaces, on its primary
 *    interface once it runs (nodes_running), after a check that the
 *    region's Elastic IP quota has room for them before the first launch
 *    there (eip_quota).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "aws/aws_internal.h"
#include "aws/prices.h"
#include "gpuctl/clock.h"
#include "gpuctl/http.h"
#include "gpuctl/render.h"

/* EC2 RunInstances `UserData`: base64 of the raw data, raw limit 16 KB
 * (16384 bytes) (EC2 API Reference, RunInstances); cloud-init accepts
 * gzip-compressed data (cloud-init docs, "User-data formats": gzip
 * compressed content).  The node learns about itself from node.sh (IMDSv2). */
extern const unsigned char gpc_node_script_aws[];
static const gpc_userdata_rules aws_userdata = {
    .provider = "aws", .max_raw = 16384, .gzip_ok = 1, .base64 = 1,
    .node_script = (const char *)gpc_node_script_aws,
};

/* EFA's environment (efa.sh, embedded from provider.cmake's FABRIC). */
extern const unsigned char gpc_fabric_script_aws_efa[];
static const gpc_fabric_script aws_fabrics[] = {
    {"efa", (const char *)gpc_fabric_script_aws_efa},
    {NULL, NULL},
};

/* ---- small helpers ----------------------------------------------------- */

double aws_poll_s(void)
{
    const char *v = getenv("GPUCTL_AWS_POLL_S");
    double x = v && *v ? strtod(v, NULL) : 0;
    return x > 0 ? x : 5.0;
}

void aws_nap(double s)
{
    gpc_sleep(s, NULL);
}

/* "gpuctl-<name>-<uid8>" */
void aws_base_name(const char *cluster, const char *uid, char *out, size_t size)
{
    snprintf(out, size, "gpuctl-%.100s-%.8s", cluster, uid);
}

void aws_tag_spec(gpc_ec2_params *p, unsigned spec, const char *type, const char *cluster,
                  const char *uid, const char *name, const char *role, const char *expires,
                  const gpc_label *labels, size_t n_labels)
{
    aws_tag_spec_ex(p, spec, type, cluster, uid, name, role, expires, NULL, 0, labels, n_labels);
}

void aws_tag_spec_ex(gpc_ec2_params *p, unsigned spec, const char *type, const char *cluster,
                     const char *uid, const char *name, const char *role, const char *expires,
                     const gpc_label *ours, size_t n_ours, const gpc_label *labels,
                     size_t n_labels)
{
    unsigned t = 0;
    gpc_ec2_param(p, type, "TagSpecification.%u.ResourceType", spec);
#define TAG(k, v)                                                                  \
    do {                                                                           \
        t++;                                                                       \
        gpc_ec2_param(p, (k), "TagSpecification.%u.Tag.%u.Key", spec, t);          \
        gpc_ec2_param(p, (v), "TagSpecification.%u.Tag.%u.Value", spec, t);        \
    } while (0)
    TAG(TAG_CLUSTER, cluster);
    TAG(TAG_UID, uid);
    if (name)
        TAG("Name", name);
    if (role)
        TAG(TAG_ROLE, role);
    if (expires)
        TAG(TAG_EXPIRES, expires);
    for (size_t i = 0; i < n_ours; i++)
        TAG(ours[i].key, ours[i].value);
    for (size_t i = 0; i < n_labels; i++)
        TAG(labels[i].key, labels[i].value);
#undef TAG
}

int aws_describe_all(aws_ctx *c, const char *region, const char *action,
                     const gpc_ec2_params *base, const char *list, item_fn each,
                     void *arg, gpc_error *err)
{
    char token[2048] = "";
    int rc = 0;
    for (int page = 0; !rc && page < 1000; page++) {
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        if (base && base->body.len)
            gpc_buf_adds(&p.body, gpc_buf_str(&base->body), NULL);
        p.failed = base ? base->failed : 0;
        if (token[0])
            gpc_ec2_param(&p, token, "NextToken");
        xmlDoc *d = NULL;
        rc = gpc_ec2_call(&c->ec2, region, action, &p, &d, err);
        gpc_ec2_params_free(&p);
        if (rc)
            break;
        xmlNode *root = xmlDocGetRootElement(d);
        for (xmlNode *it = gpc_xml_items(root, list); !rc && it; it = gpc_xml_next(it))
            rc = each(arg, it, err);
        gpc_xml_text(root, "nextToken", token, sizeof(token));
        xmlFreeDoc(d);
        if (!token[0])
            break;
    }
    return rc;
}

/* ---- instance answers -------------------------------------------------- */

/* An EC2 instance <item> as a gpc_node_status (aws.md 2.3, 2.4). */
void aws_instance_status(xmlNode *it, gpc_node_status *ns)
{
    memset(ns, 0, sizeof(*ns));
    ns->exit_code = -1;
    char state[32], reason[96], rmsg[160];
    gpc_xml_text(it, "instanceId", ns->provider_id, sizeof(ns->provider_id));
    gpc_xml_text(it, "privateIpAddress", ns->private_ip, sizeof(ns->private_ip));
    gpc_xml_text(it, "instanceState/name", state, sizeof(state));
    gpc_xml_text(it, "stateReason/code", reason, sizeof(reason));
    gpc_xml_text(it, "stateReason/message", rmsg, sizeof(rmsg));
    if (strcmp(state, "pending") == 0) {
        ns->phase = GPC_PHASE_BOOTING;
        snprintf(ns->detail, sizeof(ns->detail), "instance pending");
    } else if (strcmp(state, "running") == 0) {
        ns->phase = GPC_PHASE_RUNNING;
        snprintf(ns->detail, sizeof(ns->detail), "instance running");
    } else if (strcmp(state, "stopping") == 0 || strcmp(state, "stopped") == 0) {
        ns->phase = GPC_PHASE_FAILED;
        ns->stopped = 1;
        snprintf(ns->detail, sizeof(ns->detail), "instance %s", state);
    } else {
        /* shutting-down, terminated: EC2 bills neither */
        ns->stopped = 1;
        ns->phase = strcmp(reason, "Server.SpotInstanceTermination") == 0
                        ? GPC_PHASE_PREEMPTED : GPC_PHASE_TERMINATED;
        ns->no_capacity = strcmp(reason, "Server.InsufficientInstanceCapacity") == 0;
        snprintf(ns->detail, sizeof(ns->detail), "instance %s%s%s", state[0] ? state : "gone",
                 reason[0] ? ": " : "", reason);
    }
}

/* ---- open / close ------------------------------------------------------ */

static int aws_open(const gpc_provider_config *cfg, void **ctxp, gpc_error *err)
{
    aws_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    c->log = cfg->log;
    c->state_dir = cfg->state_dir ? strdup(cfg->state_dir) : NULL;
    int rc = cfg->state_dir && !c->state_dir ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory")
                                             : 0;
    if (!rc)
        rc = gpc_ec2_open(&c->ec2,
                          &(gpc_aws_options){.profile = cfg->profile, .region = cfg->region,
                                             .endpoint = cfg->endpoint,
                                             .profile_from = cfg->profile_from,
                                             .region_from = cfg->region_from,
                                             .endpoint_from = cfg->endpoint_from},
                          cfg->log, err);
    if (rc) {
        gpc_ec2_close(&c->ec2);
        free(c->state_dir);
        free(c);
        return rc;
    }
    *ctxp = c;
    return 0;
}

static void aws_close(void *ctx)
{
    aws_ctx *c = ctx;
    if (!c)
        return;
    aws_store_free(c);
    aws_logs_free(c);
    gpc_ec2_close(&c->ec2);
    for (size_t i = 0; i < c->n_zl; i++)
        free(c->zl[i].zones);
    free(c->zl);
    free(c->types);
    free(c->ri);
    free(c->state_dir);
    free(c);
}

static int aws_check(void *ctx, char *detail, size_t size, gpc_error *err)
{
    aws_ctx *c = ctx;
    int rc = gpc_ec2_credentials(&c->ec2, err);
    if (rc)
        return rc;
    /* the configured region, else this EC2 machine's (IMDS, as the AWS CLI
     * does), else us-east-1 */
    char imds_region[64] = "";
    gpc_error ie;
    gpc_error_clear(&ie);
    if (!c->ec2.cfg.region[0])
        gpc_aws_imds_region(imds_region, sizeof(imds_region), &ie);
    const char *region = c->ec2.cfg.region[0] ? c->ec2.cfg.region
                       : imds_region[0]       ? imds_region : "us-east-1";
    char *url = NULL;
    rc = gpc_aws_ec2_endpoint(&c->ec2.cfg, region, &url, err);
    xmlDoc *d = NULL;
    if (!rc)
        rc = gpc_ec2_call(&c->ec2, region, "DescribeRegions", NULL, &d, err);
    size_t nreg = 0;
    for (xmlNode *it = rc ? NULL : gpc_xml_items(xmlDocGetRootElement(d), "regionInfo"); it;
         it = gpc_xml_next(it))
        nreg++;
    xmlFreeDoc(d);
    char safe[512] = "";
    if (url)
        gpc_http_redact_url(url, safe, sizeof(safe));
    if (!rc)
        snprintf(detail, size, "credentials from %s; region %s%s%s%s; endpoint %s; "
                 "DescribeRegions answered %zu region(s)", c->ec2.creds.source, region,
                 c->ec2.cfg.region[0] ? " (from " : imds_region[0] ? " (from "
                                                      : " (none configured: us-east-1 used",
                 c->ec2.cfg.region[0] ? c->ec2.cfg.region_from
                 : imds_region[0]     ? "EC2 instance metadata" : "", ")", safe, nreg);
    free(url);
    return rc;
}

/* For the redaction of the --debug trace (http.h): the session token of
 * temporary credentials (SigV4) and the IMDSv2 token are secret headers;
 * EC2's idempotency and pagination tokens and the IMDSv2 setting
 * (MetadataOptions.HttpTokens) hold "token" but are no secret. */
static const gpc_http_word aws_secret_words[] = {
    {GPC_HTTP_SECRET_HEADER, "x-amz-security-token"},
    {GPC_HTTP_SECRET_HEADER, "x-aws-ec2-metadata-token"},
    {GPC_HTTP_PUBLIC_NAME, "ClientToken"},
    {GPC_HTTP_PUBLIC_NAME, "NextToken"},
    {GPC_HTTP_PUBLIC_NAME, "HttpTokens"},
    {GPC_HTTP_WORD_END, NULL},
};

/* The image: "pytorch" (the Deep Learning AMI) or an AMI id, ami- and 8
 * or 17 hex digits (EC2 User Guide, "Amazon Machine Images"). */
static int aws_check_spec(const gpc_spec *spec, gpc_error *err)
{
    /* every label is a tag on each resource, beside gpuctl's own */
    if (spec->n_labels > AWS_TAGS_MAX - AWS_OWN_TAGS)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: labels: %zu labels, at most %d on aws (EC2 "
                        "keeps %d tags a resource; gpuctl's own take %d)",
                        spec->source ? spec->source : "spec", spec->n_labels,
                        AWS_TAGS_MAX - AWS_OWN_TAGS, AWS_TAGS_MAX, AWS_OWN_TAGS);
    for (size_t i = 0; i < spec->n_labels; i++)
        if (strlen(spec->labels[i].value) > 256)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: labels.%s: a value of %zu characters, at "
                            "most 256 on aws (an EC2 tag's value)",
                            spec->source ? spec->source : "spec", spec->labels[i].key,
                            strlen(spec->labels[i].value));
    const char *img = spec->image && *spec->image ? spec->image : "pytorch";
    if (strcmp(img, "pytorch") == 0)
        return 0;
    size_t hex = strncmp(img, "ami-", 4) == 0 ? strspn(img + 4, "0123456789abcdef") : 0;
    if (hex && img[4 + hex] == '\0' && (hex == 8 || hex == 17))
        return 0;
    return gpc_fail(err, GPC_ERR_SPEC, "%s: image: '%s' is neither 'pytorch' (the AWS Deep "
                    "Learning AMI with PyTorch) nor an AMI id (ami- and 8 or 17 hex digits)",
                    spec->source ? spec->source : "spec", img);
}

/*
 * The EC2 endpoint a cluster was made at, kept as its provider data (the
 * cluster's and each node's): {"ec2_endpoint": URL} (redacted as traces
 * show it), "default" for AWS's own.  Asked at another one (a cluster made
 * against a local EC2 emulator with --endpoint, then `status` without it),
 * EC2 would answer that the instances do not exist, and they would be
 * recorded as gone and left running; so every operation on a recorded
 * cluster or node first checks that the session's endpoint is the one
 * recorded.  Data recorded before this check (none) is not judged.
 */
static void endpoint_shown(const aws_ctx *c, char *out, size_t size)
{
    const char *ep = c->ec2.cfg.ec2_endpoint;
    if (ep)
        gpc_http_redact_url(ep, out, size);
    else
        snprintf(out, size, "default");
}

static void endpoint_data(const aws_ctx *c, char *out, size_t size)
{
    char shown[512];
    endpoint_shown(c, shown, sizeof(shown));
    /* what else the data holds stays (iam.c's instance profile) */
    cJSON *j = out[0] ? cJSON_Parse(out) : NULL;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = cJSON_CreateObject();
    }
    cJSON_DeleteItemFromObjectCaseSensitive(j, "ec2_endpoint");
    char *text = j && cJSON_AddStringToObject(j, "ec2_endpoint", shown)
                     ? cJSON_PrintUnformatted(j) : NULL;
    if (text && strlen(text) < size)
        snprintf(out, size, "%s", text);
    cJSON_free(text);
    cJSON_Delete(j);
}

static int endpoint_check(const aws_ctx *c, const char *data, gpc_error *err)
{
    if (!data || !*data)
        return 0;
    cJSON *j = cJSON_Parse(data);
    const cJSON *ep = cJSON_GetObjectItemCaseSensitive(j, "ec2_endpoint");
    char shown[512];
    endpoint_shown(c, shown, sizeof(shown));
    int rc = 0;
    if (cJSON_IsString(ep) && strcmp(ep->valuestring, shown) != 0) {
        int dflt = strcmp(ep->valuestring, "default") == 0;
        rc = gpc_fail(err, GPC_ERR_USAGE, "aws: this cluster was made at %s EC2 endpoint%s%s, "
                      "but gpuctl is now set for %s%s%s%s; give the endpoint it was made with "
                      "(--endpoint aws=URL or AWS_ENDPOINT_URL_EC2)",
                      dflt ? "AWS's own" : "the", dflt ? "" : " ", dflt ? "" : ep->valuestring,
                      c->ec2.cfg.ec2_endpoint ? shown : "AWS's own endpoint",
                      c->ec2.cfg.endpoint_from[0] ? " (from " : "", c->ec2.cfg.endpoint_from[0]
                          ? c->ec2.cfg.endpoint_from : "",
                      c->ec2.cfg.endpoint_from[0] ? ")" : "");
    }
    cJSON_Delete(j);
    return rc;
}

/* The table's per-node operations take the node's record: EC2 needs its
 * region and instance id, and the endpoint it was made at. */
static int aws_describe_ref(void *ctx, const gpc_node_ref *node, gpc_node_status *out,
                            gpc_error *err)
{
    int rc = endpoint_check(ctx, node->data, err);
    return rc ? rc : aws_describe(ctx, node->region, node->provider_id, out, err);
}

static int aws_delete_ref(void *ctx, const gpc_node_ref *node, gpc_error *err)
{
    int rc = endpoint_check(ctx, node->data, err);
    return rc ? rc : aws_delete(ctx, node->region, node->provider_id, err);
}

static int aws_create_rec(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                          gpc_error *err)
{
    int rc = req->ref ? endpoint_check(ctx, req->ref->data, err) : 0;
    if (!rc)
        rc = aws_create(ctx, req, out, err);
    if (!rc) {
        endpoint_data(ctx, out->data, sizeof(out->data));
        if (req->ref && req->ref->data)
            endpoint_data(ctx, req->ref->data, GPC_PROVIDER_DATA_MAX);
    }
    return rc;
}

static int aws_create_many_rec(void *ctx, const gpc_node_request *reqs, size_t n,
                               gpc_node_status *out, gpc_error *err)
{
    int rc = n && reqs[0].ref ? endpoint_check(ctx, reqs[0].ref->data, err) : 0;
    if (!rc)
        rc = aws_create_many(ctx, reqs, n, out, err);
    for (size_t i = 0; !rc && i < n; i++)
        endpoint_data(ctx, out[i].data, sizeof(out[i].data));
    if (!rc && n && reqs[0].ref && reqs[0].ref->data)
        endpoint_data(ctx, reqs[0].ref->data, GPC_PROVIDER_DATA_MAX);
    return rc;
}

static int aws_describe_many_rec(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                                 size_t n, gpc_node_status *out, gpc_error *err)
{
    int rc = endpoint_check(ctx, ref ? ref->data : NULL, err);
    return rc ? rc : aws_describe_many(ctx, ref, ids, n, out, err);
}

static int aws_cleanup_rec(void *ctx, const gpc_cluster_ref *ref, gpc_error *err)
{
    int rc = endpoint_check(ctx, ref ? ref->data : NULL, err);
    return rc ? rc : aws_cleanup(ctx, ref, err);
}

const gpc_provider gpc_provider_aws = {
    .name = "aws",
    .summary = "Amazon EC2 over the Query API (SigV4), spot, EFA, placement groups",
    .caps = GPC_CAP_SPOT | GPC_CAP_EFA | GPC_CAP_PLACEMENT | GPC_CAP_NODE_STORE,
    /* the head's private IP from DescribeInstances; the workers of one
     * RunInstances call number themselves by ami-launch-index (node.sh) */
    .rdzv = GPC_RDZV_HEAD_IP,
    .rank = GPC_RANK_LAUNCH_INDEX,
    .userdata = &aws_userdata,
    .fabrics = aws_fabrics,
    .check_spec = aws_check_spec,
    .open = aws_open,
    .close = aws_close,
    .list_offers = NULL,
    .pick_rdzv_port = NULL,
    .create_node = aws_create_rec,
    .find_node = aws_find,
    .describe_node = aws_describe_ref,
    .describe_nodes = aws_describe_many_rec,
    .nodes_running = aws_nodes_running,
    .delete_node = aws_delete_ref,
    .list_zones = aws_list_zones,
    .create_nodes = aws_create_many_rec,
    .cleanup_cluster = aws_cleanup_rec,
    .list_orphans = aws_list_orphans,
    .live_prices = aws_live_prices,
    .refresh_prices = gpc_aws_refresh_prices,
    .check = aws_check,
    .read_log = aws_read_log,
    .poll_interruptions = aws_poll_interruptions,
    .secret_words = aws_secret_words,
    .shell_argv = aws_shell_argv,
    .transport_argv = aws_transport_argv,
    .store_url = aws_store_url,
    .store_push = aws_store_push,
    .store_pull = aws_store_pull,
    .store_list = aws_store_list,
    .store_remove = aws_store_remove,
    .store_delete = aws_store_delete,
    .store_scheme = "s3",
    .store_endpoint = aws_store_endpoint,
};
