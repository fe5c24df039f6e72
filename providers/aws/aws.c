/*
 * aws.c - the `aws` provider: EC2 over the Query API (providers/aws/ec2.c),
 * signed with our own SigV4 (src/sigv4.c).  Facts: docs/providers/aws.md
 * and aws.md (the reference notes) sections 2-5.
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
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libxml/tree.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "aws/ec2.h"
#include "aws/prices.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"
#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

#define TAG_CLUSTER "gpuctl:cluster"
#define TAG_UID "gpuctl:cluster-uid"
#define TAG_ROLE "gpuctl:role"
#define CHECKIP_URL "https://checkip.amazonaws.com"
/* DLAMI names: aws.md 2.12 ("Deep Learning OSS Nvidia Driver AMI GPU
 * PyTorch 2.x (Ubuntu 22.04) YYYYMMDD"). */
#define DLAMI_PYTORCH "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.* (Ubuntu 22.04) *"
#define AMI_CACHE_TTL_S (24 * 3600)

/* EC2 RunInstances UserData: base64 of at most 16 KB (16384 bytes) of raw
 * data; cloud-init takes it gzip-compressed (render.h has the sources). */
static const gpc_userdata_rules aws_userdata = {"aws", 16384, 1, 1, GPC_MD_AWS};

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
} aws_ctx;

/* ---- small helpers ----------------------------------------------------- */

static double poll_s(void)
{
    const char *v = getenv("GPUCTL_AWS_POLL_S");
    double x = v && *v ? strtod(v, NULL) : 0;
    return x > 0 ? x : 5.0;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* "gpuctl-<name>-<uid8>" */
static void base_name(const char *cluster, const char *uid, char *out, size_t size)
{
    snprintf(out, size, "gpuctl-%.100s-%.8s", cluster, uid);
}

/* TagSpecification.<spec> for `type` with the cluster's tags (and the
 * spec's labels, and Name when given). */
static void tag_spec(gpc_ec2_params *p, unsigned spec, const char *type, const char *cluster,
                     const char *uid, const char *name, const char *role,
                     const gpc_label *labels, size_t n_labels)
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
    for (size_t i = 0; i < n_labels; i++)
        TAG(labels[i].key, labels[i].value);
#undef TAG
}

/* Every page of a Describe* call: calls `each` on each <item> of the list
 * at `list` in every answer. */
typedef int (*item_fn)(void *arg, xmlNode *item, gpc_error *err);

static int describe_all(aws_ctx *c, const char *region, const char *action,
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
static void instance_status(xmlNode *it, gpc_node_status *ns)
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
        rc = gpc_ec2_open(&c->ec2, cfg->profile, cfg->region, cfg->endpoint, cfg->log, err);
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
    gpc_ec2_close(&c->ec2);
    for (size_t i = 0; i < c->n_zl; i++)
        free(c->zl[i].zones);
    free(c->zl);
    free(c->types);
    free(c->ri);
    free(c->state_dir);
    free(c);
}

/* ---- zones and instance types ------------------------------------------ */

typedef struct zones_acc {
    zone_list *zl;
    const char *type;
} zones_acc;

static int add_zone(void *arg, xmlNode *it, gpc_error *err)
{
    zones_acc *a = arg;
    char type[64], loc[48];
    gpc_xml_text(it, "instanceType", type, sizeof(type));
    gpc_xml_text(it, "location", loc, sizeof(loc));
    if (strcmp(type, a->type) != 0 || !loc[0])
        return 0;
    for (size_t i = 0; i < a->zl->n; i++)
        if (strcmp(a->zl->zones[i], loc) == 0)
            return 0;
    char(*z)[48] = realloc(a->zl->zones, (a->zl->n + 1) * sizeof(*z));
    if (!z)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    a->zl->zones = z;
    snprintf(z[a->zl->n++], sizeof(z[0]), "%s", loc);
    return 0;
}

static int cmp_zone(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The zones of `region` offering `type`, cached (DescribeInstanceTypeOfferings,
 * aws.md 2.8). */
static int zones_for(aws_ctx *c, const char *region, const char *type, const zone_list **out,
                     gpc_error *err)
{
    for (size_t i = 0; i < c->n_zl; i++)
        if (strcmp(c->zl[i].region, region) == 0 && strcmp(c->zl[i].type, type) == 0) {
            *out = &c->zl[i];
            return 0;
        }
    zone_list *g = realloc(c->zl, (c->n_zl + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    c->zl = g;
    zone_list *z = &c->zl[c->n_zl];
    memset(z, 0, sizeof(*z));
    snprintf(z->region, sizeof(z->region), "%s", region);
    snprintf(z->type, sizeof(z->type), "%s", type);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "availability-zone", "LocationType");
    const char *v[] = {type};
    gpc_ec2_filter(&p, 1, "instance-type", v, 1);
    zones_acc acc = {.zl = z, .type = type};
    int rc = describe_all(c, region, "DescribeInstanceTypeOfferings", &p,
                          "instanceTypeOfferingSet", add_zone, &acc, err);
    gpc_ec2_params_free(&p);
    if (rc) {
        free(z->zones);
        return rc;
    }
    /* none at all is an answer too (and qsort's array may not be NULL,
     * even for no element: C11 7.22.5) */
    if (z->n > 1)
        qsort(z->zones, z->n, sizeof(z->zones[0]), cmp_zone);
    c->n_zl++;
    *out = z;
    return 0;
}

static int aws_list_zones(void *ctx, const gpc_offer *offer, char (**zones)[48], size_t *n,
                          gpc_error *err)
{
    const zone_list *z;
    *zones = NULL;
    *n = 0;
    int rc = zones_for(ctx, offer->region, offer->instance_type, &z, err);
    if (rc)
        return rc;
    if (z->n) {
        *zones = malloc(z->n * sizeof(**zones));
        if (!*zones)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        memcpy(*zones, z->zones, z->n * sizeof(**zones));
    }
    *n = z->n;
    return 0;
}

/* EFA facts of an instance type (DescribeInstanceTypes, aws.md 2.7, 5.3). */
static int type_facts(aws_ctx *c, const char *region, const char *type, const type_info **out,
                      gpc_error *err)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (strcmp(c->types[i].region, region) == 0 && strcmp(c->types[i].type, type) == 0) {
            *out = &c->types[i];
            return 0;
        }
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, type, "InstanceType.1");
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, region, "DescribeInstanceTypes", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (rc)
        return rc;
    xmlNode *it = gpc_xml_items(xmlDocGetRootElement(d), "instanceTypeSet");
    type_info ti;
    memset(&ti, 0, sizeof(ti));
    snprintf(ti.region, sizeof(ti.region), "%s", region);
    snprintf(ti.type, sizeof(ti.type), "%s", type);
    char v[32];
    if (it) {
        ti.efa = strcmp(gpc_xml_text(it, "networkInfo/efaSupported", v, sizeof(v)), "true") == 0;
        ti.max_efa = atoi(gpc_xml_text(it, "networkInfo/efaInfo/maximumEfaInterfaces", v,
                                       sizeof(v)));
        ti.max_cards = atoi(gpc_xml_text(it, "networkInfo/maximumNetworkCards", v, sizeof(v)));
    }
    xmlFreeDoc(d);
    if (!it)
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: instance type %s is unknown in %s", type,
                        region);
    type_info *g = realloc(c->types, (c->n_types + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    c->types = g;
    c->types[c->n_types] = ti;
    *out = &c->types[c->n_types++];
    return 0;
}

/* ---- region: default VPC, subnet, image --------------------------------- */

static region_info *region_slot(aws_ctx *c, const char *region, gpc_error *err)
{
    for (size_t i = 0; i < c->n_ri; i++)
        if (strcmp(c->ri[i].region, region) == 0)
            return &c->ri[i];
    region_info *g = realloc(c->ri, (c->n_ri + 1) * sizeof(*g));
    if (!g) {
        gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->ri = g;
    region_info *r = &c->ri[c->n_ri++];
    memset(r, 0, sizeof(*r));
    snprintf(r->region, sizeof(r->region), "%s", region);
    return r;
}

static int default_vpc(aws_ctx *c, region_info *r, gpc_error *err)
{
    if (r->vpc[0])
        return 0;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *v[] = {"true"};
    gpc_ec2_filter(&p, 1, "is-default", v, 1);
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, r->region, "DescribeVpcs", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (rc)
        return rc;
    gpc_xml_text(gpc_xml_items(xmlDocGetRootElement(d), "vpcSet"), "vpcId", r->vpc,
                 sizeof(r->vpc));
    xmlFreeDoc(d);
    if (!r->vpc[0])
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: region %s has no default VPC; gpuctl "
                        "launches into the default VPC (create one with 'aws ec2 "
                        "create-default-vpc')", r->region);
    return 0;
}

static int default_subnet(aws_ctx *c, region_info *r, const char *zone, char *out, size_t size,
                          gpc_error *err)
{
    if (r->subnet[0] && strcmp(r->subnet_zone, zone) == 0) {
        snprintf(out, size, "%s", r->subnet);
        return 0;
    }
    int rc = default_vpc(c, r, err);
    if (rc)
        return rc;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *vpc[] = {r->vpc}, *az[] = {zone}, *t[] = {"true"};
    gpc_ec2_filter(&p, 1, "vpc-id", vpc, 1);
    gpc_ec2_filter(&p, 2, "availability-zone", az, 1);
    gpc_ec2_filter(&p, 3, "default-for-az", t, 1);
    xmlDoc *d = NULL;
    rc = gpc_ec2_call(&c->ec2, r->region, "DescribeSubnets", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (rc)
        return rc;
    gpc_xml_text(gpc_xml_items(xmlDocGetRootElement(d), "subnetSet"), "subnetId", out, size);
    xmlFreeDoc(d);
    if (!out[0])
        return gpc_fail(err, GPC_ERR_CAPACITY, "aws: no default subnet in zone %s of %s",
                        zone, r->region);
    snprintf(r->subnet, sizeof(r->subnet), "%s", out);
    snprintf(r->subnet_zone, sizeof(r->subnet_zone), "%s", zone);
    return 0;
}

typedef struct image_pick {
    char id[32];
    char created[40];
    char root[32];
    double gib;
} image_pick;

static int newest_image(void *arg, xmlNode *it, gpc_error *err)
{
    (void)err;
    image_pick *b = arg;
    char created[40], v[32];
    gpc_xml_text(it, "creationDate", created, sizeof(created));
    if (b->id[0] && strcmp(created, b->created) <= 0)
        return 0;
    gpc_xml_text(it, "imageId", b->id, sizeof(b->id));
    snprintf(b->created, sizeof(b->created), "%s", created);
    gpc_xml_text(it, "rootDeviceName", b->root, sizeof(b->root));
    b->gib = 0;
    for (xmlNode *m = gpc_xml_items(it, "blockDeviceMapping"); m; m = gpc_xml_next(m)) {
        char dev[32];
        if (strcmp(gpc_xml_text(m, "deviceName", dev, sizeof(dev)), b->root) == 0)
            b->gib = atof(gpc_xml_text(m, "ebs/volumeSize", v, sizeof(v)));
    }
    return 0;
}

/* The image cache file: $GPUCTL_CACHE_DIR|$XDG_CACHE_HOME/gpuctl|~/.cache/gpuctl
 * /aws/images-<region>.txt, lines "<image> <ami> <root dev> <GiB> <unix time>". */
static int image_cache_path(const aws_ctx *c, const char *region, char *out, size_t size)
{
    const char *d = getenv("GPUCTL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *h = getenv("HOME");
    /* one file per endpoint: a mock's images are not AWS's */
    char sum[65], tag[16] = "";
    const char *ep = c->ec2.cfg.ec2_endpoint;
    if (ep && *ep) {
        gpc_sha256_hex(ep, strlen(ep), sum);
        snprintf(tag, sizeof(tag), "-%.8s", sum);
    }
    int n;
    if (d && *d)
        n = snprintf(out, size, "%s/aws/images-%s%s.txt", d, region, tag);
    else if (x && *x)
        n = snprintf(out, size, "%s/gpuctl/aws/images-%s%s.txt", x, region, tag);
    else if (h && *h)
        n = snprintf(out, size, "%s/.cache/gpuctl/aws/images-%s%s.txt", h, region, tag);
    else
        return -1;
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static int image_cache_read(const aws_ctx *c, const char *region, const char *image,
                            region_info *r)
{
    char path[PATH_MAX];
    if (image_cache_path(c, region, path, sizeof(path)))
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512], name[128], ami[32], root[32];
    double gib;
    long long at;
    int found = -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%127s %31s %31s %lf %lld", name, ami, root, &gib, &at) == 5 &&
            strcmp(name, image) == 0 && gpc_now() - at < AMI_CACHE_TTL_S && at <= gpc_now()) {
            snprintf(r->ami, sizeof(r->ami), "%s", ami);
            snprintf(r->root_dev, sizeof(r->root_dev), "%s", root);
            r->ami_gib = gib;
            found = 0;
        }
    }
    fclose(f);
    return found;
}

static void image_cache_write(const aws_ctx *c, const char *region, const char *image,
                              const region_info *r)
{
    char path[PATH_MAX], dir[PATH_MAX];
    if (image_cache_path(c, region, path, sizeof(path)))
        return;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    char line[512];
    int n = snprintf(line, sizeof(line), "%s %s %s %.0f %lld\n", image, r->ami, r->root_dev,
                     r->ami_gib, (long long)gpc_now());
    gpc_error e;
    gpc_error_clear(&e);
    if (n > 0 && (size_t)n < sizeof(line) && gpc_mkdir_p(dir, 0700, &e) == 0)
        gpc_write_file_atomic(path, line, (size_t)n, 0600, &e);
}

/*
 * The AMI for `image` in region r: "pytorch" is the newest AWS Deep
 * Learning AMI with PyTorch (DescribeImages, owner amazon, by name,
 * aws.md 2.12), cached for a day; an explicit ami-... is used as is (its
 * root device looked up).
 */
static int resolve_image(aws_ctx *c, region_info *r, const char *image, gpc_error *err)
{
    if (!image || !*image)
        image = "pytorch";
    if (r->ami[0] && strcmp(r->ami_for, image) == 0)
        return 0;
    int explicit_id = strncmp(image, "ami-", 4) == 0;
    if (!explicit_id && strcmp(image, "pytorch") != 0)
        return gpc_fail(err, GPC_ERR_SPEC, "aws: image '%s' is neither 'pytorch' (the AWS "
                        "Deep Learning AMI) nor an AMI id (ami-...)", image);
    snprintf(r->ami_for, sizeof(r->ami_for), "%s", image);
    if (!explicit_id && image_cache_read(c, r->region, image, r) == 0) {
        gpc_debug(c->log, "aws: image %s in %s is %s (cached)", image, r->region, r->ami);
        return 0;
    }
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    if (explicit_id) {
        gpc_ec2_param(&p, image, "ImageId.1");
    } else {
        const char *name[] = {DLAMI_PYTORCH}, *st[] = {"available"}, *arch[] = {"x86_64"};
        gpc_ec2_param(&p, "amazon", "Owner.1");
        gpc_ec2_filter(&p, 1, "name", name, 1);
        gpc_ec2_filter(&p, 2, "state", st, 1);
        gpc_ec2_filter(&p, 3, "architecture", arch, 1);
    }
    image_pick best;
    memset(&best, 0, sizeof(best));
    int rc = describe_all(c, r->region, "DescribeImages", &p, "imagesSet", newest_image, &best,
                          err);
    gpc_ec2_params_free(&p);
    if (!rc && !best.id[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, explicit_id ? "aws: image %s does not exist in %s"
                      : "aws: no Deep Learning AMI with PyTorch (%s) found in %s",
                      explicit_id ? image : DLAMI_PYTORCH, r->region);
    if (rc) {
        r->ami_for[0] = '\0';
        return rc;
    }
    snprintf(r->ami, sizeof(r->ami), "%s", best.id);
    snprintf(r->root_dev, sizeof(r->root_dev), "%s", best.root[0] ? best.root : "/dev/sda1");
    r->ami_gib = best.gib;
    if (!explicit_id)
        image_cache_write(c, r->region, image, r);
    gpc_debug(c->log, "aws: image %s in %s is %s (created %s)", image, r->region, r->ami,
              best.created);
    return 0;
}

/* ---- cluster resources: key pair, security group, placement group ------- */

/* Append an SSH string (uint32 length + bytes) to b. */
static int ssh_string(gpc_buf *b, const unsigned char *p, size_t n, gpc_error *err)
{
    unsigned char len[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    int rc = gpc_buf_add(b, len, 4, err);
    return rc ? rc : gpc_buf_add(b, p, n, err);
}

/* An SSH mpint (RFC 4251 section 5): big-endian, a 0 byte before a set top bit. */
static int ssh_mpint(gpc_buf *b, const BIGNUM *bn, gpc_error *err)
{
    int n = BN_num_bytes(bn);
    unsigned char *tmp = calloc(1, (size_t)n + 1);
    if (!tmp)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    BN_bn2bin(bn, tmp + 1);
    int lead = n > 0 && (tmp[1] & 0x80);
    int rc = ssh_string(b, lead ? tmp : tmp + 1, (size_t)n + (size_t)lead, err);
    free(tmp);
    return rc;
}

/* A new RSA-3072 key: the private key (PKCS#8 PEM, which OpenSSH reads)
 * written 0600 to `path`, the "ssh-rsa AAAA... comment" line to
 * `path`.pub and into *pub (caller frees). */
static int make_key(const char *path, const char *comment, char **pub, gpc_error *err)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
    if (!k)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not generate an SSH key");
    BIGNUM *e = NULL, *n = NULL;
    gpc_buf blob;
    gpc_buf_init(&blob, 4096);
    int rc = EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e) == 1 &&
             EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n) == 1
                 ? 0 : gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not read the new key");
    if (!rc)
        rc = ssh_string(&blob, (const unsigned char *)"ssh-rsa", 7, err);
    if (!rc)
        rc = ssh_mpint(&blob, e, err);
    if (!rc)
        rc = ssh_mpint(&blob, n, err);
    char *b64 = NULL;
    size_t b64_len;
    if (!rc)
        rc = gpc_base64_encode(blob.data, blob.len, &b64, &b64_len, err);
    BIO *bio = NULL;
    if (!rc) {
        bio = BIO_new(BIO_s_mem());
        if (!bio || PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) != 1)
            rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: could not write the new key");
    }
    if (!rc) {
        char *pem;
        long len = BIO_get_mem_data(bio, &pem);
        rc = gpc_write_file_atomic(path, pem, (size_t)len, 0600, err);
    }
    gpc_buf line;
    gpc_buf_init(&line, 8192);
    if (!rc)
        rc = gpc_buf_addf(&line, err, "ssh-rsa %s %s\n", b64, comment);
    char pubpath[PATH_MAX + 8];
    snprintf(pubpath, sizeof(pubpath), "%s.pub", path);
    if (!rc)
        rc = gpc_write_file_atomic(pubpath, line.data, line.len, 0644, err);
    if (!rc && !(*pub = strdup(gpc_buf_str(&line))))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    gpc_buf_free(&line);
    BIO_free(bio);
    free(b64);
    gpc_buf_free(&blob);
    BN_free(e);
    BN_free(n);
    EVP_PKEY_free(k);
    return rc;
}

/* The public key line to import: the user's, else one made for this
 * cluster (kept in <state>/keys/). */
static int public_key(aws_ctx *c, const char *kname, char **pub, char *src, size_t ss,
                      gpc_error *err)
{
    const char *env = getenv("GPUCTL_SSH_PUBLIC_KEY"), *home = getenv("HOME");
    char path[PATH_MAX];
    const char *cands[3] = {env && *env ? env : NULL, NULL, NULL};
    char p1[PATH_MAX], p2[PATH_MAX];
    if (!cands[0] && home && *home) {
        snprintf(p1, sizeof(p1), "%s/.ssh/id_ed25519.pub", home);
        snprintf(p2, sizeof(p2), "%s/.ssh/id_rsa.pub", home);
        cands[1] = p1;
        cands[2] = p2;
    }
    for (int i = 0; i < 3; i++) {
        size_t len;
        if (!cands[i])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_read_file(cands[i], 16384, pub, &len, &e) == 0) {
            snprintf(src, ss, "%s", cands[i]);
            return 0;
        }
        if (i == 0)
            return gpc_fail(err, GPC_ERR_IO, "GPUCTL_SSH_PUBLIC_KEY: %s", e.msg);
    }
    if (!c->state_dir)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: no state directory for the SSH key");
    snprintf(path, sizeof(path), "%s/keys", c->state_dir);
    int rc = gpc_mkdir_p(path, 0700, err);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "%s/keys/%s", c->state_dir, kname);
    size_t len;
    char pubpath[PATH_MAX + 8];
    snprintf(pubpath, sizeof(pubpath), "%s.pub", path);
    gpc_error e;
    gpc_error_clear(&e);
    snprintf(src, ss, "%s (made by gpuctl)", path);
    if (gpc_read_file(pubpath, 16384, pub, &len, &e) == 0)
        return 0;
    gpc_info(c->log, "aws: making an SSH key for the cluster: %s", path);
    return make_key(path, kname, pub, err);
}

static int ensure_key(aws_ctx *c, const char *region, const char *kname, const char *cluster,
                      const char *uid, gpc_error *err)
{
    char *pub = NULL, src[PATH_MAX + 32];
    int rc = public_key(c, kname, &pub, src, sizeof(src), err);
    if (rc)
        return rc;
    /* one line: "type base64 [comment]" */
    pub[strcspn(pub, "\r\n")] = '\0';
    char *b64 = NULL;
    size_t bl;
    rc = gpc_base64_encode(pub, strlen(pub), &b64, &bl, err);
    free(pub);
    if (rc)
        return rc;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, kname, "KeyName");
    gpc_ec2_param(&p, b64, "PublicKeyMaterial");
    tag_spec(&p, 1, "key-pair", cluster, uid, NULL, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    rc = gpc_ec2_call(&c->ec2, region, "ImportKeyPair", &p, &d, &e);
    gpc_ec2_params_free(&p);
    free(b64);
    xmlFreeDoc(d);
    if (rc && strcmp(c->ec2.last_code, "InvalidKeyPair.Duplicate") == 0)
        rc = 0; /* made by an earlier apply of this cluster: reuse it */
    if (rc)
        return gpc_fail(err, e.code, "%s", e.msg);
    gpc_debug(c->log, "aws: key pair %s in %s from %s", kname, region, src);
    return 0;
}

/* The caller's address for the SSH rule: $GPUCTL_SSH_CIDR ("none" = no
 * rule), else what checkip.amazonaws.com ($GPUCTL_CHECKIP_URL) says. */
static void ssh_cidr(aws_ctx *c, char *out, size_t size)
{
    out[0] = '\0';
    const char *v = getenv("GPUCTL_SSH_CIDR");
    if (v && *v) {
        if (strcmp(v, "none") != 0)
            snprintf(out, size, "%s", v);
        return;
    }
    const char *url = getenv("GPUCTL_CHECKIP_URL");
    gpc_http_request req = {.method = "GET", .url = url && *url ? url : CHECKIP_URL};
    gpc_http_opts o = {.timeout_s = 5, .connect_timeout_s = 3, .max_attempts = 2,
                       .what = "aws: caller address", .max_body = 256};
    gpc_http_response r;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_http_send(&req, &o, &r, &e) == 0) {
        char ip[64];
        snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(gpc_buf_str(&r.body), " \r\n"),
                 gpc_buf_str(&r.body));
        unsigned a, b, cc, d;
        char tail;
        if (sscanf(ip, "%u.%u.%u.%u%c", &a, &b, &cc, &d, &tail) == 4 && a < 256 && b < 256 &&
            cc < 256 && d < 256)
            snprintf(out, size, "%u.%u.%u.%u/32", a, b, cc, d);
    }
    gpc_http_response_free(&r);
    if (!out[0])
        gpc_info(c->log, "aws: could not learn this machine's public address (%s); the "
                 "security group gets no SSH rule (set GPUCTL_SSH_CIDR)",
                 e.code ? e.msg : "unexpected answer");
}

/* Authorize one rule: SSH from `cidr`, or (cidr NULL) all traffic from
 * the group itself; an existing rule is fine. */
static int authorize(aws_ctx *c, const char *region, const char *action, const char *sg,
                     const char *cidr, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, sg, "GroupId");
    if (cidr && *cidr) {
        gpc_ec2_param(&p, "tcp", "IpPermissions.1.IpProtocol");
        gpc_ec2_param(&p, "22", "IpPermissions.1.FromPort");
        gpc_ec2_param(&p, "22", "IpPermissions.1.ToPort");
        gpc_ec2_param(&p, cidr, "IpPermissions.1.IpRanges.1.CidrIp");
    } else {
        gpc_ec2_param(&p, "-1", "IpPermissions.1.IpProtocol");
        gpc_ec2_param(&p, sg, "IpPermissions.1.Groups.1.GroupId");
    }
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call(&c->ec2, region, action, &p, &d, &e);
    gpc_ec2_params_free(&p);
    xmlFreeDoc(d);
    if (rc && strcmp(c->ec2.last_code, "InvalidPermission.Duplicate") == 0)
        return 0;
    return rc ? gpc_fail(err, e.code, "%s", e.msg) : 0;
}

static int find_group(aws_ctx *c, const char *region, const char *vpc, const char *name,
                      char *out, size_t size, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *n[] = {name}, *v[] = {vpc};
    gpc_ec2_filter(&p, 1, "group-name", n, 1);
    gpc_ec2_filter(&p, 2, "vpc-id", v, 1);
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, region, "DescribeSecurityGroups", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (!rc)
        gpc_xml_text(gpc_xml_items(xmlDocGetRootElement(d), "securityGroupInfo"), "groupId",
                     out, size);
    xmlFreeDoc(d);
    if (!rc && !out[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: security group %s vanished", name);
    return rc;
}

static int ensure_group(aws_ctx *c, region_info *r, const char *name, const char *cluster,
                        const char *uid, char *sg, size_t size, gpc_error *err)
{
    int rc = default_vpc(c, r, err);
    if (rc)
        return rc;
    char desc[256];
    snprintf(desc, sizeof(desc), "gpuctl cluster %.100s: all traffic within the group "
             "(NCCL, EFA), SSH from the caller", cluster);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "GroupName");
    gpc_ec2_param(&p, desc, "GroupDescription");
    gpc_ec2_param(&p, r->vpc, "VpcId");
    tag_spec(&p, 1, "security-group", cluster, uid, name, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    rc = gpc_ec2_call(&c->ec2, r->region, "CreateSecurityGroup", &p, &d, &e);
    gpc_ec2_params_free(&p);
    sg[0] = '\0';
    if (!rc)
        gpc_xml_text(xmlDocGetRootElement(d), "groupId", sg, size);
    xmlFreeDoc(d);
    if (rc && strcmp(c->ec2.last_code, "InvalidGroup.Duplicate") == 0)
        rc = find_group(c, r->region, r->vpc, name, sg, size, &e);
    if (rc)
        return gpc_fail(err, e.code, "%s", e.msg);
    char cidr[64];
    ssh_cidr(c, cidr, sizeof(cidr));
    /* one rule a call: EC2 refuses a whole call for one rule it has, so
     * a rule set changed between applies (another SSH address) still lands */
    rc = authorize(c, r->region, "AuthorizeSecurityGroupIngress", sg, NULL, err);
    if (!rc && cidr[0])
        rc = authorize(c, r->region, "AuthorizeSecurityGroupIngress", sg, cidr, err);
    if (!rc)
        rc = authorize(c, r->region, "AuthorizeSecurityGroupEgress", sg, NULL, err);
    return rc;
}

static int ensure_placement(aws_ctx *c, const char *region, const char *name,
                            const char *cluster, const char *uid, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "GroupName");
    gpc_ec2_param(&p, "cluster", "Strategy");
    tag_spec(&p, 1, "placement-group", cluster, uid, NULL, NULL, c->labels, c->n_labels);
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call(&c->ec2, region, "CreatePlacementGroup", &p, &d, &e);
    gpc_ec2_params_free(&p);
    xmlFreeDoc(d);
    if (rc && strcmp(c->ec2.last_code, "InvalidPlacementGroup.Duplicate") == 0)
        rc = 0;
    return rc ? gpc_fail(err, e.code, "%s", e.msg) : 0;
}

/* ---- launching ----------------------------------------------------------- */

static int uses_efa(const gpc_spec *spec, const type_info *ti)
{
    return ti->efa && ti->max_efa > 0 &&
           (!spec || spec->resources.interconnect != GPC_IC_NONE);
}

/* Everything RunInstances needs besides the node itself, made once per
 * cluster, region and zone in this process. */
static int ensure_cluster(aws_ctx *c, const gpc_node_request *req, region_info *r,
                          const type_info *ti, gpc_error *err)
{
    char key[160];
    snprintf(key, sizeof(key), "%s %s", r->region, req->cluster_uid);
    int same = strcmp(key, c->res_key) == 0;
    c->labels = req->spec ? req->spec->labels : NULL;
    c->n_labels = req->spec ? req->spec->n_labels : 0;
    char base[160];
    base_name(req->cluster, req->cluster_uid, base, sizeof(base));
    int rc = 0;
    if (!same) {
        c->res_key[0] = c->pg_zone[0] = c->pg[0] = '\0';
        snprintf(c->key_name, sizeof(c->key_name), "%s", base);
        rc = ensure_key(c, r->region, c->key_name, req->cluster, req->cluster_uid, err);
        if (!rc)
            rc = ensure_group(c, r, base, req->cluster, req->cluster_uid, c->sg, sizeof(c->sg),
                              err);
        if (!rc)
            snprintf(c->res_key, sizeof(c->res_key), "%s", key);
    }
    /* A cluster placement group lives in one zone: one per zone tried. */
    int want_pg = req->nnodes > 1 && uses_efa(req->spec, ti);
    if (!rc && want_pg && strcmp(c->pg_zone, req->offer->zone) != 0) {
        char pg[224];
        snprintf(pg, sizeof(pg), "%s-%s", base, req->offer->zone);
        rc = ensure_placement(c, r->region, pg, req->cluster, req->cluster_uid, err);
        if (!rc) {
            snprintf(c->pg, sizeof(c->pg), "%s", pg);
            snprintf(c->pg_zone, sizeof(c->pg_zone), "%s", req->offer->zone);
        }
    }
    if (!want_pg)
        c->pg[0] = c->pg_zone[0] = '\0';
    return rc;
}

/* EFA interfaces per node: one per network card (as many as the type has
 * EFA interfaces, aws.md 2.7), 0 without EFA. */
static int efa_cards(const gpc_spec *spec, const type_info *ti)
{
    if (!uses_efa(spec, ti))
        return 0;
    int n = ti->max_cards > 0 && ti->max_cards < ti->max_efa ? ti->max_cards : ti->max_efa;
    return n < 1 ? 1 : n;
}

/* Network interfaces per node: one, or with EFA on several network cards
 * an ENA primary and one EFA interface per card (run_params). */
static int nic_count(const gpc_spec *spec, const type_info *ti)
{
    int k = efa_cards(spec, ti);
    return k > 1 ? k + 1 : 1;
}

/* The id of an instance <item>'s primary network interface (card 0,
 * device 0) into out ("" when none); returns how many interfaces it has. */
static int primary_eni(xmlNode *it, char *out, size_t size)
{
    int n = 0;
    out[0] = '\0';
    for (xmlNode *ni = gpc_xml_items(it, "networkInterfaceSet"); ni; ni = gpc_xml_next(ni)) {
        char dev[8], card[8];
        n++;
        gpc_xml_text(ni, "attachment/deviceIndex", dev, sizeof(dev));
        gpc_xml_text(ni, "attachment/networkCardIndex", card, sizeof(card));
        if (!out[0] && strcmp(dev, "0") == 0 && (!card[0] || strcmp(card, "0") == 0))
            gpc_xml_text(ni, "networkInterfaceId", out, size);
    }
    return n;
}

static const char *volume_type(const gpc_spec *spec)
{
    return spec && spec->resources.disk_tier == GPC_DISK_NVME ? "io2" : "gp3";
}

/* The RunInstances body for n nodes like reqs[0] (aws.md 2.2). */
static int run_params(aws_ctx *c, const gpc_node_request *req, size_t n, region_info *r,
                      const type_info *ti, const char *subnet, int batch, gpc_ec2_params *p,
                      gpc_error *err)
{
    const gpc_spec *spec = req->spec;
    const gpc_userdata_rules *rules = &aws_userdata;
    char *ud = NULL;
    size_t ud_len = 0;
    int rc = gpc_userdata_encode(req->userdata ? req->userdata : "", req->userdata_len, rules,
                                 &ud, &ud_len, NULL, err);
    if (rc)
        return rc;
    char num[32];
    snprintf(num, sizeof(num), "%zu", n);
    gpc_ec2_param(p, r->ami, "ImageId");
    gpc_ec2_param(p, req->offer->instance_type, "InstanceType");
    gpc_ec2_param(p, num, "MinCount");
    gpc_ec2_param(p, num, "MaxCount");
    gpc_ec2_param(p, c->key_name, "KeyName");
    gpc_ec2_param(p, req->client_token, "ClientToken");
    gpc_ec2_param(p, ud, "UserData");
    free(ud);
    gpc_ec2_param(p, req->offer->zone, "Placement.AvailabilityZone");
    if (c->pg[0])
        gpc_ec2_param(p, c->pg, "Placement.GroupName");
    /*
     * NICs.  Without EFA, or with EFA on one network card: one interface
     * (InterfaceType efa, "EFA with ENA", when EFA) with a public address
     * at launch.  With EFA on several cards, the layout the EC2 User Guide
     * recommends ("Maximize network bandwidth on Amazon EC2 instances with
     * multiple network cards", efa-acc-inst-types.html; aws.md, "Public
     * addresses on EFA (multi-card) nodes" sections 4-5): card 0 device 0
     * an ENA `interface` (the primary: it may not be efa-only), card 0
     * device 1 and device 0 of every other card `efa-only` (an EFA device
     * without ENA: no IP address, no multi-homed routing).  For P5/P5e/P5en
     * this is the guide's P5 use case that keeps one private IP (all of
     * the EFA bandwidth, the primary's IP bandwidth); its other use case
     * adds ENA to more cards for IP traffic, which NCCL over EFA does not
     * need.  EC2 refuses AssociatePublicIpAddress with more than one
     * interface, so such a node gets an Elastic IP once it runs
     * (aws_nodes_running).  Every interface: the zone's default subnet, the
     * cluster's group, deleted with the instance.
     */
    int cards = efa_cards(spec, ti);
    int nics = nic_count(spec, ti);
    for (int k = 1; k <= nics; k++) {
        int card = k <= 2 ? 0 : k - 2, dev = k == 2;
        char num_s[16];
        snprintf(num_s, sizeof(num_s), "%d", dev);
        gpc_ec2_param(p, num_s, "NetworkInterface.%d.DeviceIndex", k);
        if (cards) {
            snprintf(num_s, sizeof(num_s), "%d", card);
            gpc_ec2_param(p, num_s, "NetworkInterface.%d.NetworkCardIndex", k);
            gpc_ec2_param(p, nics == 1 ? "efa" : k == 1 ? "interface" : "efa-only",
                          "NetworkInterface.%d.InterfaceType", k);
        }
        gpc_ec2_param(p, subnet, "NetworkInterface.%d.SubnetId", k);
        gpc_ec2_param(p, c->sg, "NetworkInterface.%d.SecurityGroupId.1", k);
        gpc_ec2_param(p, "true", "NetworkInterface.%d.DeleteOnTermination", k);
        if (nics == 1)
            gpc_ec2_param(p, "true", "NetworkInterface.%d.AssociatePublicIpAddress", k);
    }
    double gib = spec ? spec->resources.disk_gib : 0;
    if (gib < r->ami_gib)
        gib = r->ami_gib;
    if (gib <= 0)
        gib = 100;
    char size[32];
    snprintf(size, sizeof(size), "%.0f", gib + 0.4999);
    gpc_ec2_param(p, r->root_dev, "BlockDeviceMapping.1.DeviceName");
    gpc_ec2_param(p, size, "BlockDeviceMapping.1.Ebs.VolumeSize");
    gpc_ec2_param(p, volume_type(spec), "BlockDeviceMapping.1.Ebs.VolumeType");
    if (spec && (spec->resources.disk_iops || spec->resources.disk_tier == GPC_DISK_NVME)) {
        char iops[32];
        snprintf(iops, sizeof(iops), "%u",
                 spec->resources.disk_iops ? spec->resources.disk_iops : 16000u);
        gpc_ec2_param(p, iops, "BlockDeviceMapping.1.Ebs.Iops");
    }
    gpc_ec2_param(p, "true", "BlockDeviceMapping.1.Ebs.DeleteOnTermination");
    if (req->offer->spot) {
        gpc_ec2_param(p, "spot", "InstanceMarketOptions.MarketType");
        gpc_ec2_param(p, "one-time", "InstanceMarketOptions.SpotOptions.SpotInstanceType");
        gpc_ec2_param(p, "terminate",
                      "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior");
        if (spec && spec->spot.max_price > 0) {
            char mp[32];
            snprintf(mp, sizeof(mp), "%.4f", spec->spot.max_price);
            gpc_ec2_param(p, mp, "InstanceMarketOptions.SpotOptions.MaxPrice");
        }
    }
    gpc_ec2_param(p, "terminate", "InstanceInitiatedShutdownBehavior");
    gpc_ec2_param(p, "required", "MetadataOptions.HttpTokens");
    gpc_ec2_param(p, "enabled", "MetadataOptions.HttpEndpoint");
    gpc_ec2_param(p, "2", "MetadataOptions.HttpPutResponseHopLimit");
    const char *role = batch ? "worker" : req->rank == 0 ? "head" : "worker";
    char name[160];
    if (batch)
        snprintf(name, sizeof(name), "%s-workers", req->cluster);
    const char *nm = batch ? name : req->name;
    const gpc_label *lb = spec ? spec->labels : NULL;
    size_t nl = spec ? spec->n_labels : 0;
    tag_spec(p, 1, "instance", req->cluster, req->cluster_uid, nm, role, lb, nl);
    tag_spec(p, 2, "volume", req->cluster, req->cluster_uid, nm, role, lb, nl);
    tag_spec(p, 3, "network-interface", req->cluster, req->cluster_uid, nm, role, lb, nl);
    if (req->offer->spot)
        tag_spec(p, 4, "spot-instances-request", req->cluster, req->cluster_uid, nm, role, lb,
                 nl);
    return p->failed ? gpc_fail(err, GPC_ERR_NOMEM, "aws: RunInstances request too large") : 0;
}

static int terminate_ids(aws_ctx *c, const char *region, const char *const *ids, size_t n,
                         gpc_error *err);
static int eip_quota(aws_ctx *c, const gpc_node_request *req, const char *region,
                     const type_info *ti, gpc_error *err);

/* Is root the answer to `action` (<ActionResponse>)? */
static int answer_to(const xmlNode *root, const char *action)
{
    size_t n = strlen(action);
    const char *name = root ? (const char *)root->name : "";
    return strncmp(name, action, n) == 0 && strcmp(name + n, "Response") == 0;
}

/* Launch n nodes like reqs[0] in one RunInstances; out[i] by launch index. */
static int run_instances(aws_ctx *c, const gpc_node_request *reqs, size_t n, int batch,
                         gpc_node_status *out, gpc_error *err)
{
    const gpc_node_request *req = &reqs[0];
    const gpc_offer *of = req->offer;
    region_info *r = region_slot(c, of->region, err);
    if (!r)
        return GPC_ERR_NOMEM;
    const zone_list *zl = NULL;
    const type_info *ti = NULL;
    int rc = zones_for(c, of->region, of->instance_type, &zl, err);
    int offered = 0;
    for (size_t i = 0; !rc && i < zl->n; i++)
        offered |= strcmp(zl->zones[i], of->zone) == 0;
    if (!rc && !offered)
        rc = gpc_fail(err, GPC_ERR_CAPACITY, "aws: %s is not offered in zone '%s' of %s",
                      of->instance_type, of->zone, of->region);
    if (!rc)
        rc = type_facts(c, of->region, of->instance_type, &ti, err);
    /* nodes that will need Elastic IPs: room for them, before anything is made */
    if (!rc && nic_count(req->spec, ti) > 1) {
        c->multi_nic = 1;
        rc = eip_quota(c, req, of->region, ti, err);
    }
    if (!rc)
        rc = resolve_image(c, r, req->image, err);
    char subnet[64] = "";
    if (!rc)
        rc = default_subnet(c, r, of->zone, subnet, sizeof(subnet), err);
    if (!rc)
        rc = ensure_cluster(c, req, r, ti, err);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    if (!rc)
        rc = run_params(c, req, n, r, ti, subnet, batch, &p, err);
    xmlDoc *d = NULL;
    if (!rc)
        rc = gpc_ec2_call(&c->ec2, of->region, "RunInstances", &p, &d, err);
    gpc_ec2_params_free(&p);
    if (rc && strncmp(c->ec2.last_code, "InvalidAMIID", 12) == 0) {
        /* the image went away (deregistered): forget it, cached or not */
        char path[PATH_MAX];
        if (image_cache_path(c, r->region, path, sizeof(path)) == 0)
            unlink(path);
        r->ami[0] = r->ami_for[0] = '\0';
    }
    if (rc)
        return rc;
    /* a success status with some other document (a proxy's HTML page):
     * what EC2 did, if it got the call, is unknown */
    xmlNode *root = xmlDocGetRootElement(d);
    if (!answer_to(root, "RunInstances")) {
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: RunInstances (%s): the answer is not an EC2 "
                      "RunInstances answer (its root element is <%s>): whether instances were "
                      "launched is unknown (any that were carry the cluster's tag: destroy "
                      "removes them)", of->region, root ? (const char *)root->name : "none");
        xmlFreeDoc(d);
        return rc;
    }
    size_t got = 0;
    const char **ids = calloc(n, sizeof(*ids));
    gpc_node_status *tmp = calloc(n, sizeof(*tmp));
    if (!ids || !tmp)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (xmlNode *it = gpc_xml_items(xmlDocGetRootElement(d), "instancesSet"); !rc && it;
         it = gpc_xml_next(it)) {
        char v[16];
        long idx = strtol(gpc_xml_text(it, "amiLaunchIndex", v, sizeof(v)), NULL, 10);
        if (got < n)
            instance_status(it, &tmp[got]);
        if (got < n)
            ids[got] = tmp[got].provider_id;
        got++;
        if (idx >= 0 && (size_t)idx < n && got <= n)
            out[idx] = tmp[got - 1];
    }
    xmlFreeDoc(d);
    int complete = !rc && got == n;
    for (size_t i = 0; complete && i < n; i++)
        complete = out[i].provider_id[0] != '\0';
    if (!rc && !complete) {
        /* never leave a half launch behind */
        gpc_error e;
        gpc_error_clear(&e);
        terminate_ids(c, of->region, ids, got < n ? got : n, &e);
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: RunInstances returned %zu instance(s) for "
                      "%zu requested%s", got, n, got ? "; they were terminated" : "");
    }
    free(ids);
    free(tmp);
    return rc;
}

static int aws_create(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                      gpc_error *err)
{
    return run_instances(ctx, req, 1, 0, out, err);
}

static int aws_create_many(void *ctx, const gpc_node_request *reqs, size_t n,
                           gpc_node_status *out, gpc_error *err)
{
    if (n == 0)
        return 0;
    return run_instances(ctx, reqs, n, 1, out, err);
}

/* ---- describing and deleting ---------------------------------------------- */

typedef struct find_acc {
    long want_index;        /* -1: any */
    gpc_node_status *out;
    int found;
    int nics;               /* its network interfaces */
} find_acc;

static int pick_instance(void *arg, xmlNode *res, gpc_error *err)
{
    (void)err;
    find_acc *a = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it; it = gpc_xml_next(it)) {
        char v[16];
        long idx = strtol(gpc_xml_text(it, "amiLaunchIndex", v, sizeof(v)), NULL, 10);
        if (a->found || (a->want_index >= 0 && idx != a->want_index))
            continue;
        char eni[64];
        instance_status(it, a->out);
        a->nics = primary_eni(it, eni, sizeof(eni));
        a->found = 1;
    }
    return 0;
}

static void job_result(aws_ctx *c, const char *region, gpc_node_status *ns);

static int aws_find(void *ctx, const char *region, const char *token, gpc_node_status *out,
                    gpc_error *err)
{
    aws_ctx *c = ctx;
    char tok[96];
    snprintf(tok, sizeof(tok), "%s", token);
    find_acc a = {.want_index = -1, .out = out};
    char *slash = strchr(tok, '/');
    if (slash) {
        *slash = '\0';
        a.want_index = strtol(slash + 1, NULL, 10);
    }
    if (!region || !*region)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "aws: node with token %s has no region", tok);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *v[] = {tok};
    gpc_ec2_filter(&p, 1, "client-token", v, 1);
    int rc = describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_instance,
                          &a, err);
    gpc_ec2_params_free(&p);
    /* an instance that ended is an answer too (EC2 lists it for about an
     * hour after): "none" is only for a token no instance carries */
    if (!rc && !a.found)
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "aws: no instance with client token %s", tok);
    if (!rc)
        job_result(c, region, out);
    /* a gpuctl killed after RunInstances: its Elastic IP comes once it runs
     * (aws_nodes_running) */
    if (!rc && a.nics > 1)
        c->multi_nic = 1;
    return rc;
}

static int aws_describe(void *ctx, const char *region, const char *id, gpc_node_status *out,
                        gpc_error *err)
{
    aws_ctx *c = ctx;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, id, "InstanceId.1");
    find_acc a = {.want_index = -1, .out = out};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_instance,
                          &a, &e);
    gpc_ec2_params_free(&p);
    if ((rc && strcmp(c->ec2.last_code, "InvalidInstanceID.NotFound") == 0) ||
        (!rc && !a.found)) {
        memset(out, 0, sizeof(*out));
        snprintf(out->provider_id, sizeof(out->provider_id), "%s", id);
        out->phase = GPC_PHASE_TERMINATED;
        out->exit_code = -1;
        out->stopped = 1;
        snprintf(out->detail, sizeof(out->detail), "instance no longer listed");
        return 0;
    }
    if (!rc)
        job_result(c, region, out);
    return rc ? gpc_fail(err, e.code, "%s", e.msg) : 0;
}

/*
 * A node that powered itself off (stateReason
 * Client.InstanceInitiatedShutdown) did so at the end of its job: its
 * bootstrap wrote "gpuctl-node-exit: cluster=.. rank=.. status=N" to the
 * serial console first.  Read it back (GetConsoleOutput; EC2 keeps the
 * console output for at least an hour after the instance's last post,
 * which termination makes) and report the job's result.  Without the line
 * the node stays TERMINATED with no exit status.
 */
static void job_result(aws_ctx *c, const char *region, gpc_node_status *ns)
{
    if (ns->phase != GPC_PHASE_TERMINATED ||
        !strstr(ns->detail, "Client.InstanceInitiatedShutdown"))
        return;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, ns->provider_id, "InstanceId");
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call(&c->ec2, region, "GetConsoleOutput", &p, &d, &e);
    gpc_ec2_params_free(&p);
    gpc_buf b64;
    gpc_buf_init(&b64, 1u << 20);
    if (!rc) {
        xmlNode *o = gpc_xml_child(xmlDocGetRootElement(d), "output");
        xmlChar *t = o ? xmlNodeGetContent(o) : NULL;
        if (t) {
            /* base64 of up to 64 KiB; drop the line breaks some answers have */
            for (const xmlChar *q = t; *q; q++)
                if (*q != '\n' && *q != '\r' && *q != ' ')
                    gpc_buf_add(&b64, q, 1, NULL);
            xmlFree(t);
        }
    }
    xmlFreeDoc(d);
    unsigned char *text = NULL;
    size_t len = 0;
    if (!rc && b64.len && gpc_base64_decode(gpc_buf_str(&b64), b64.len, &text, &len, NULL) == 0) {
        /* the last such line wins */
        const char *key = "gpuctl-node-exit: ";
        long status = -1;
        for (size_t i = 0; i + strlen(key) <= len; i++) {
            if (memcmp(text + i, key, strlen(key)) != 0)
                continue;
            const char *line = (const char *)text + i;
            const char *eol = memchr(line, '\n', len - i);
            size_t ll = eol ? (size_t)(eol - line) : len - i;
            const char *st = NULL;
            for (size_t k = 0; !st && k + 8 <= ll; k++)
                if (memcmp(line + k, " status=", 8) == 0)
                    st = line + k;
            if (st) {
                char *end;
                long v = strtol(st + 8, &end, 10);
                if (end != st + 8 && v >= 0 && v <= 255)
                    status = v;
            }
        }
        if (status >= 0) {
            ns->exit_code = (int)status;
            ns->phase = status == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
            snprintf(ns->detail, sizeof(ns->detail), "the job ended with exit status %ld; the "
                     "node powered itself off", status);
        }
    }
    if (rc)
        gpc_debug(c->log, "aws: %s: no console output (%s)", ns->provider_id, e.msg);
    free(text);
    gpc_buf_free(&b64);
}

typedef struct tagged_acc {
    char (*ids)[32];
    gpc_node_status *st;
    size_t n, cap;
    int multi_nic;          /* one of them has several network interfaces */
} tagged_acc;

static int collect_tagged(void *arg, xmlNode *res, gpc_error *err)
{
    tagged_acc *a = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it; it = gpc_xml_next(it)) {
        if (a->n == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 16;
            gpc_node_status *s = realloc(a->st, cap * sizeof(*s));
            if (!s)
                return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            a->st = s;
            a->cap = cap;
        }
        char eni[64];
        instance_status(it, &a->st[a->n++]);
        if (primary_eni(it, eni, sizeof(eni)) > 1)
            a->multi_nic = 1;
    }
    return 0;
}

/* Every instance tagged with the cluster uid in `region` (all pages). */
static int list_tagged(aws_ctx *c, const char *region, const char *uid, int live_only,
                       tagged_acc *a, gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *v[] = {uid};
    gpc_ec2_filter(&p, 1, "tag:" TAG_UID, v, 1);
    if (live_only) {
        const char *st[] = {"pending", "running", "shutting-down", "stopping", "stopped"};
        gpc_ec2_filter(&p, 2, "instance-state-name", st, 5);
    }
    int rc = describe_all(c, region, "DescribeInstances", &p, "reservationSet", collect_tagged,
                          a, err);
    gpc_ec2_params_free(&p);
    return rc;
}

static int aws_describe_many(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                             size_t n, gpc_node_status *out, gpc_error *err)
{
    aws_ctx *c = ctx;
    tagged_acc a = {0};
    int rc = 0;
    for (size_t r = 0; !rc && r < ref->n_regions; r++) {
        size_t from = a.n;
        rc = list_tagged(c, ref->regions[r], ref->cluster_uid, 0, &a, err);
        /* the job's result of the asked nodes that powered themselves off */
        for (size_t j = from; !rc && j < a.n; j++)
            for (size_t i = 0; i < n; i++)
                if (strcmp(a.st[j].provider_id, ids[i]) == 0)
                    job_result(c, ref->regions[r], &a.st[j]);
    }
    /* aws_nodes_running has work, or none */
    if (!rc) {
        snprintf(c->nic_uid, sizeof(c->nic_uid), "%s", ref->cluster_uid);
        c->multi_nic |= a.multi_nic;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        int hit = 0;
        for (size_t j = 0; !hit && j < a.n; j++)
            if (strcmp(a.st[j].provider_id, ids[i]) == 0) {
                out[i] = a.st[j];
                hit = 1;
            }
        if (!hit) {
            memset(&out[i], 0, sizeof(out[i]));
            snprintf(out[i].provider_id, sizeof(out[i].provider_id), "%s", ids[i]);
            out[i].phase = GPC_PHASE_TERMINATED;
            out[i].exit_code = -1;
            out[i].stopped = 1;
            snprintf(out[i].detail, sizeof(out[i].detail), "instance no longer listed");
        }
    }
    free(a.st);
    return rc;
}

static int terminate_ids(aws_ctx *c, const char *region, const char *const *ids, size_t n,
                         gpc_error *err)
{
    int rc = 0;
    for (size_t off = 0; !rc && off < n; off += 1000) {
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        for (size_t i = off; i < n && i < off + 1000; i++)
            gpc_ec2_param(&p, ids[i], "InstanceId.%zu", i - off + 1);
        xmlDoc *d = NULL;
        gpc_error e;
        gpc_error_clear(&e);
        rc = gpc_ec2_call(&c->ec2, region, "TerminateInstances", &p, &d, &e);
        gpc_ec2_params_free(&p);
        xmlFreeDoc(d);
        if (rc && strcmp(c->ec2.last_code, "InvalidInstanceID.NotFound") == 0 && n == 1)
            rc = 0; /* already gone */
        if (rc)
            gpc_fail(err, e.code, "%s", e.msg);
    }
    return rc;
}

static int aws_delete(void *ctx, const char *region, const char *id, gpc_error *err)
{
    const char *ids[] = {id};
    return terminate_ids(ctx, region, ids, 1, err);
}

/* ---- Elastic IPs: the public addresses of multi-card nodes ---------------- */

/*
 * Facts (aws.md, "Public addresses on EFA (multi-card) nodes", sections
 * 1-3 and 5; docs/providers/aws.md):
 *  - EC2 gives a public IPv4 address at launch only to an instance with one
 *    network interface (AssociatePublicIpAddress with more answers
 *    InvalidParameterCombination), so in the default VPC a node with EFA on
 *    several cards reaches and is reached from the internet only through
 *    an Elastic IP;
 *  - AssociateAddress refuses an instance that is still pending:
 *    InvalidInstanceID "The pending instance 'i-..' is not in a valid state
 *    for this operation." by instance id, IncorrectInstanceState "The
 *    pending-instance-creation instance to which 'eni-..' is attached ..." by
 *    interface id (behaviour its users report, e.g. terraform-provider-aws
 *    #19699; not documented), and wants NetworkInterfaceId when the
 *    instance has several interfaces (API reference, AssociateAddress);
 *  - 5 Elastic IPs per region by default (quota "EC2-VPC Elastic IPs" in
 *    Service Quotas), DescribeAccountAttributes vpc-max-elastic-ips says
 *    how many; beyond it AllocateAddress answers AddressLimitExceeded;
 *  - since 2024-02-01 every public IPv4 address costs $0.005 an hour, an
 *    Elastic IP in use or idle alike (the same as the auto-assigned one it
 *    replaces): one left allocated bills on, so each is tagged with the
 *    cluster and released by destroy.
 * So, as dstack does: each such node gets an Elastic IP (AllocateAddress,
 * tagged) associated to its primary interface by NetworkInterfaceId, with
 * AllowReassociation=false, once DescribeInstances says it runs; the
 * pending refusals are retried a bounded number of times.
 */

/* AssociateAddress rounds for a node EC2 still calls pending, and the wait
 * before round r (1, 2, ...): poll_s / 5 doubling, at most 2 x poll_s
 * (1, 2, 4, 8, 10, 10, 10 s with the default 5 s: under a minute). */
#define EIP_TRIES 8
#define EIP_STR_(x) #x
#define EIP_STR(x) EIP_STR_(x)

static double eip_backoff(int round)
{
    double d = poll_s() / 5 * (double)(1u << (round < 16 ? round - 1 : 15));
    return d < 2 * poll_s() ? d : 2 * poll_s();
}

/* An AssociateAddress refusal that means "not running yet" (see above). */
static int eip_pending(const gpc_ec2_batch_item *it)
{
    return strcmp(it->code, "IncorrectInstanceState") == 0 ||
           (strcmp(it->code, "InvalidInstanceID") == 0 && strstr(it->err.msg, "pending"));
}

/* One call of `action` in `region` per ps[i], at once (curl multi through
 * gpc_ec2_call_many, GPC_HTTP_PARALLEL at a time); items[i] get each
 * answer (the caller frees their docs).  A batch that could not start at
 * all gives every item its error. */
static void eip_batch(aws_ctx *c, const char *region, const char *action,
                      const gpc_ec2_params *ps, gpc_ec2_batch_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        items[i] = (gpc_ec2_batch_item){.region = region, .action = action, .params = &ps[i]};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_ec2_call_many(&c->ec2, items, n, &e);
    for (size_t i = 0; i < n; i++)
        if (!items[i].rc && !items[i].doc) {
            items[i].rc = rc ? rc : GPC_ERR_INTERNAL;
            gpc_fail(&items[i].err, (gpc_code)items[i].rc, "%s",
                     rc ? e.msg : "aws: no answer in the batch");
        }
}

static void eip_batch_free(gpc_ec2_params *ps, gpc_ec2_batch_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gpc_ec2_params_free(&ps[i]);
        xmlFreeDoc(items[i].doc);
        items[i].doc = NULL;
    }
}

/* An Elastic IP of the cluster (DescribeAddresses item). */
typedef struct eip_addr {
    char alloc[64];
    char assoc[64];     /* "" when not associated */
    char eni[64];
    char ip[64];
    int taken;          /* a node has it, or gets it */
} eip_addr;

/* A node with several network interfaces (DescribeInstances item). */
typedef struct eip_node {
    char id[32];
    char eni[64];       /* its primary interface */
    int done;           /* it has its address */
    char alloc[64];     /* the address it gets ("" none yet) */
    char ip[64];
    int failed;
    int unknown;        /* its AllocateAddress got no EC2 answer: it may have made one */
    gpc_error err;      /* why it has none */
} eip_node;

typedef struct eip_scan {
    const char *const *ids;  /* the nodes asked about */
    size_t n_ids;
    eip_node *nodes;
    size_t n;
    eip_addr *addrs;
    size_t na;
} eip_scan;

static int eip_instance(void *arg, xmlNode *res, gpc_error *err)
{
    eip_scan *s = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it; it = gpc_xml_next(it)) {
        char id[32], eni[64], ip[64];
        gpc_xml_text(it, "instanceId", id, sizeof(id));
        int asked = 0;
        for (size_t i = 0; !asked && i < s->n_ids; i++)
            asked = strcmp(s->ids[i], id) == 0;
        if (!asked || primary_eni(it, eni, sizeof(eni)) < 2 || !eni[0])
            continue;
        eip_node *g = realloc(s->nodes, (s->n + 1) * sizeof(*g));
        if (!g)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        s->nodes = g;
        eip_node *nd = &s->nodes[s->n++];
        memset(nd, 0, sizeof(*nd));
        snprintf(nd->id, sizeof(nd->id), "%s", id);
        snprintf(nd->eni, sizeof(nd->eni), "%s", eni);
        nd->done = gpc_xml_text(it, "ipAddress", ip, sizeof(ip))[0] != '\0';
    }
    return 0;
}

static int eip_address(void *arg, xmlNode *it, gpc_error *err)
{
    eip_scan *s = arg;
    eip_addr *g = realloc(s->addrs, (s->na + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    s->addrs = g;
    eip_addr *a = &s->addrs[s->na++];
    memset(a, 0, sizeof(*a));
    gpc_xml_text(it, "allocationId", a->alloc, sizeof(a->alloc));
    gpc_xml_text(it, "associationId", a->assoc, sizeof(a->assoc));
    gpc_xml_text(it, "networkInterfaceId", a->eni, sizeof(a->eni));
    gpc_xml_text(it, "publicIp", a->ip, sizeof(a->ip));
    return 0;
}

/* Every Elastic IP tagged with the cluster uid in `region`. */
static int eip_list(aws_ctx *c, const char *region, const char *uid, eip_scan *s,
                    gpc_error *err)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *v[] = {uid};
    gpc_ec2_filter(&p, 1, "tag:" TAG_UID, v, 1);
    int rc = describe_all(c, region, "DescribeAddresses", &p, "addressesSet", eip_address, s, err);
    gpc_ec2_params_free(&p);
    return rc;
}

typedef struct addr_count {
    const char *uid;
    long total;         /* the region's addresses */
    long mine;          /* those of the cluster */
} addr_count;

static int count_address(void *arg, xmlNode *it, gpc_error *err)
{
    (void)err;
    addr_count *a = arg;
    a->total++;
    for (xmlNode *t = gpc_xml_items(it, "tagSet"); t; t = gpc_xml_next(t)) {
        char k[64], v[80];
        if (strcmp(gpc_xml_text(t, "key", k, sizeof(k)), TAG_UID) == 0 &&
            strcmp(gpc_xml_text(t, "value", v, sizeof(v)), a->uid) == 0)
            a->mine++;
    }
    return 0;
}

/*
 * Before the first launch of req's cluster in `region` (once per process):
 * refuse with GPC_ERR_QUOTA when the region's Elastic IP quota has no room
 * for one address per node (DescribeAccountAttributes vpc-max-elastic-ips,
 * less every address allocated there, DescribeAddresses; the cluster's own
 * addresses serve its nodes again).  The core then leaves the region.
 */
static int eip_quota(aws_ctx *c, const gpc_node_request *req, const char *region,
                     const type_info *ti, gpc_error *err)
{
    char key[160];
    snprintf(key, sizeof(key), "%s %s", region, req->cluster_uid);
    if (strcmp(c->quota_key, key) == 0)
        return 0;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "vpc-max-elastic-ips", "AttributeName.1");
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, region, "DescribeAccountAttributes", &p, &d, err);
    gpc_ec2_params_free(&p);
    long max = -1;
    for (xmlNode *it = rc ? NULL : gpc_xml_items(xmlDocGetRootElement(d), "accountAttributeSet");
         it; it = gpc_xml_next(it)) {
        char name[64], v[32], *end;
        if (strcmp(gpc_xml_text(it, "attributeName", name, sizeof(name)),
                   "vpc-max-elastic-ips") != 0)
            continue;
        gpc_xml_text(gpc_xml_items(it, "attributeValueSet"), "attributeValue", v, sizeof(v));
        long x = strtol(v, &end, 10);
        if (v[0] && *end == '\0' && x >= 0)
            max = x;
    }
    xmlFreeDoc(d);
    if (!rc && max < 0)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: DescribeAccountAttributes (%s) gave no "
                      "vpc-max-elastic-ips", region);
    addr_count a = {.uid = req->cluster_uid};
    if (!rc)
        rc = describe_all(c, region, "DescribeAddresses", NULL, "addressesSet", count_address,
                          &a, err);
    if (rc)
        return rc;
    long need = (long)req->nnodes - a.mine, room = max - a.total;
    need = need > 0 ? need : 0;
    room = room > 0 ? room : 0;
    gpc_debug(c->log, "aws: Elastic IPs in %s: %ld of %ld allocated (%ld of them %s's); %s "
              "needs %ld more", region, a.total, max, a.mine, req->cluster, req->cluster, need);
    if (need > room) {
        char mine[64] = "";
        if (a.mine)
            snprintf(mine, sizeof(mine), ", %ld of them this cluster's", a.mine);
        return gpc_fail(err, GPC_ERR_QUOTA,
                        "aws: cluster %s needs %ld more Elastic IP(s) in %s, one per node (%s "
                        "has %d network cards, and EC2 gives no public address at launch to an "
                        "instance with several network interfaces), but only %ld of the "
                        "region's %ld (vpc-max-elastic-ips) are free (%ld allocated%s): raise "
                        "the 'EC2-VPC Elastic IPs' quota in Service Quotas, release unused "
                        "Elastic IPs, or use fewer nodes or another region",
                        req->cluster, need, region, req->offer->instance_type,
                        efa_cards(req->spec, ti), room, max, a.total, mine);
    }
    snprintf(c->quota_key, sizeof(c->quota_key), "%s", key);
    return 0;
}

/* Release the Elastic IPs allocs[0..n-1] at once; what could not be
 * released is added to `left`. */
static void eip_release(aws_ctx *c, const char *region, const char *const *allocs, size_t n,
                        gpc_buf *left)
{
    gpc_ec2_params *ps = calloc(n ? n : 1, sizeof(*ps));
    gpc_ec2_batch_item *items = calloc(n ? n : 1, sizeof(*items));
    if (!ps || !items) {
        gpc_buf_addf(left, NULL, "%sElastic IPs (out of memory)", left->len ? "; " : "");
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        gpc_ec2_params_init(&ps[i]);
        gpc_ec2_param(&ps[i], allocs[i], "AllocationId");
    }
    if (n)
        eip_batch(c, region, "ReleaseAddress", ps, items, n);
    for (size_t i = 0; i < n; i++)
        if (items[i].rc && strcmp(items[i].code, "InvalidAllocationID.NotFound") != 0)
            gpc_buf_addf(left, NULL, "%sElastic IP %s (%s)", left->len ? "; " : "", allocs[i],
                         items[i].err.msg);
    if (ps && items)
        eip_batch_free(ps, items, n);
    free(ps);
    free(items);
}

/* Allocate an Elastic IP, tagged with the cluster, for each node of
 * nds[0..n-1] at once.  Returns 1 when a call may have made an address
 * that no node got: it was sent more than once (a retried throttling or
 * 5xx answer), or it failed. */
static int eip_allocate(aws_ctx *c, const gpc_cluster_ref *ref, const char *region,
                        eip_node **nds, size_t n)
{
    int doubt = 0;
    gpc_ec2_params *ps = calloc(n ? n : 1, sizeof(*ps));
    gpc_ec2_batch_item *items = calloc(n ? n : 1, sizeof(*items));
    for (size_t i = 0; i < n; i++)
        if (!ps || !items) {
            nds[i]->failed = 1;
            gpc_fail(&nds[i]->err, GPC_ERR_NOMEM, "out of memory");
        }
    if (!ps || !items)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        gpc_ec2_params_init(&ps[i]);
        gpc_ec2_param(&ps[i], "vpc", "Domain");
        tag_spec(&ps[i], 1, "elastic-ip", ref->cluster, ref->cluster_uid, NULL, NULL, c->labels,
                 c->n_labels);
    }
    if (n)
        eip_batch(c, region, "AllocateAddress", ps, items, n);
    for (size_t i = 0; i < n; i++) {
        eip_node *nd = nds[i];
        xmlNode *root = items[i].doc ? xmlDocGetRootElement(items[i].doc) : NULL;
        if (root) {
            gpc_xml_text(root, "allocationId", nd->alloc, sizeof(nd->alloc));
            gpc_xml_text(root, "publicIp", nd->ip, sizeof(nd->ip));
        }
        doubt |= items[i].attempts > 1;
        if (items[i].rc || !nd->alloc[0]) {
            doubt = 1;
            nd->failed = 1;
            /* no EC2 error: the call may have been carried out (its reply
             * lost; ec2.c does not send AllocateAddress again) */
            nd->unknown = !items[i].code[0];
            if (!items[i].rc)
                gpc_fail(&nd->err, GPC_ERR_PROVIDER, "aws: AllocateAddress (%s) gave no "
                         "allocation id", region);
            else if (strcmp(items[i].code, "AddressLimitExceeded") == 0)
                gpc_fail(&nd->err, GPC_ERR_QUOTA, "%s: the room gpuctl saw in %s before "
                         "the launch was taken meanwhile ('EC2-VPC Elastic IPs')",
                         items[i].err.msg, region);
            else
                gpc_fail(&nd->err, (gpc_code)items[i].rc, "%s", items[i].err.msg);
        }
    }
    if (ps && items)
        eip_batch_free(ps, items, n);
    free(ps);
    free(items);
    return doubt;
}

/* Is `alloc` the address of one of s's nodes, or in s's first listing? */
static int eip_known(const eip_scan *s, const char *alloc)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->nodes[i].alloc, alloc) == 0)
            return 1;
    for (size_t j = 0; j < s->na; j++)
        if (strcmp(s->addrs[j].alloc, alloc) == 0)
            return 1;
    return 0;
}

/*
 * After failed allocations: list the cluster's addresses again and give
 * each node of nds[0..n-1] that got none an address of the cluster that
 * is associated with nothing and that s did not know (what an
 * AllocateAddress whose answer was lost made).  Returns how many nodes
 * got one.
 */
static size_t eip_claim(aws_ctx *c, const char *region, const char *uid, const eip_scan *s,
                        eip_node **nds, size_t n)
{
    eip_scan again = {0};
    gpc_error e;
    gpc_error_clear(&e);
    size_t got = 0;
    if (eip_list(c, region, uid, &again, &e) != 0) {
        gpc_debug(c->log, "aws: could not list the Elastic IPs of %s in %s again: %s", uid,
                  region, e.msg);
        free(again.addrs);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        eip_node *nd = nds[i];
        for (size_t j = 0; nd->failed && j < again.na; j++) {
            eip_addr *a = &again.addrs[j];
            if (a->taken || a->assoc[0] || eip_known(s, a->alloc))
                continue;
            a->taken = 1;
            snprintf(nd->alloc, sizeof(nd->alloc), "%s", a->alloc);
            snprintf(nd->ip, sizeof(nd->ip), "%s", a->ip);
            nd->failed = nd->unknown = 0;
            gpc_error_clear(&nd->err);
            got++;
            gpc_debug(c->log, "aws: %s: Elastic IP %s (%s) found after a failed AllocateAddress",
                      nd->id, a->alloc, a->ip);
        }
    }
    free(again.addrs);
    return got;
}

/*
 * An Elastic IP for each node of nds[0..n-1] (none has one): AllocateAddress
 * for all at once.  When some fail, the cluster's addresses are listed
 * again and one that a failed call made serves its node (eip_claim); a
 * node whose call got no EC2 answer and for which none turned up is asked
 * for again, EIP_ALLOC_ROUNDS rounds in all.  Returns 1 when an address
 * no node got may exist (see eip_allocate).
 */
#define EIP_ALLOC_ROUNDS 3

static int eip_obtain(aws_ctx *c, const gpc_cluster_ref *ref, const char *region,
                      const eip_scan *s, eip_node **nds, size_t n)
{
    int doubt = 0;
    eip_node **want = calloc(n ? n : 1, sizeof(*want));
    if (!want) {
        for (size_t i = 0; i < n; i++) {
            nds[i]->failed = 1;
            gpc_fail(&nds[i]->err, GPC_ERR_NOMEM, "out of memory");
        }
        return 0;
    }
    memcpy(want, nds, n * sizeof(*want));
    size_t k = n;
    for (int round = 1; k; round++) {
        if (!eip_allocate(c, ref, region, want, k))
            break;
        doubt = 1;
        size_t nf = 0;
        for (size_t i = 0; i < k; i++)
            nf += want[i]->failed;
        if (!nf)
            break;
        gpc_info(c->log, "aws: %zu AllocateAddress call(s) in %s failed or got no answer; "
                 "looking for addresses of %s they may have made", nf, region, ref->cluster);
        eip_claim(c, region, ref->cluster_uid, s, want, k);
        /* again: the nodes whose call may not have been carried out */
        size_t again = 0;
        for (size_t i = 0; i < k; i++)
            if (want[i]->failed && want[i]->unknown && round < EIP_ALLOC_ROUNDS) {
                want[i]->failed = want[i]->unknown = 0;
                gpc_error_clear(&want[i]->err);
                want[again++] = want[i];
            }
        k = again;
    }
    free(want);
    return doubt;
}

/* Associate each node's address with its primary interface, all at once,
 * again for those EC2 still calls pending (EIP_TRIES rounds). */
static void eip_associate(aws_ctx *c, const char *region, eip_node **nds, size_t n)
{
    gpc_ec2_params *ps = calloc(n ? n : 1, sizeof(*ps));
    gpc_ec2_batch_item *items = calloc(n ? n : 1, sizeof(*items));
    eip_node **want = calloc(n ? n : 1, sizeof(*want));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ps && items && want)
            want[k++] = nds[i];
        else {
            nds[i]->failed = 1;
            gpc_fail(&nds[i]->err, GPC_ERR_NOMEM, "out of memory");
        }
    }
    for (int round = 1; k && round <= EIP_TRIES; round++) {
        if (round > 1)
            nap(eip_backoff(round - 1));
        for (size_t i = 0; i < k; i++) {
            gpc_ec2_params_init(&ps[i]);
            gpc_ec2_param(&ps[i], want[i]->alloc, "AllocationId");
            gpc_ec2_param(&ps[i], want[i]->eni, "NetworkInterfaceId");
            gpc_ec2_param(&ps[i], "false", "AllowReassociation");
        }
        eip_batch(c, region, "AssociateAddress", ps, items, k);
        size_t again = 0;
        for (size_t i = 0; i < k; i++) {
            eip_node *nd = want[i];
            if (!items[i].rc) {
                nd->done = 1;
                gpc_debug(c->log, "aws: %s: public address %s (Elastic IP %s on %s)", nd->id,
                          nd->ip, nd->alloc, nd->eni);
            } else if (eip_pending(&items[i]) && round < EIP_TRIES) {
                want[again++] = nd;
            } else {
                nd->failed = 1;
                gpc_fail(&nd->err, (gpc_code)items[i].rc, "%s%s", items[i].err.msg,
                         eip_pending(&items[i]) ? " (still so after " EIP_STR(EIP_TRIES)
                                                  " tries)" : "");
            }
        }
        eip_batch_free(ps, items, k);
        if (again)
            gpc_debug(c->log, "aws: %zu node(s) in %s not ready for an Elastic IP yet; again",
                      again, region);
        k = again;
    }
    free(ps);
    free(items);
    free(want);
}

/*
 * Add to drop[0..*nd-1] (grown as needed) every address of the cluster in
 * `region` that is associated with nothing and not there yet; `spare`
 * holds the listing (the strings drop points to; the caller frees
 * spare->addrs).  A listing that fails is only noted (-v): the next apply
 * or destroy finds what is left.
 */
static int eip_spares(aws_ctx *c, const char *region, const char *uid, eip_scan *spare,
                      const char ***drop, size_t *nd, gpc_error *err)
{
    gpc_error e;
    gpc_error_clear(&e);
    if (eip_list(c, region, uid, spare, &e) != 0) {
        gpc_debug(c->log, "aws: could not list the Elastic IPs of %s in %s again: %s", uid,
                  region, e.msg);
        return 0;
    }
    const char **g = realloc(*drop, (*nd + spare->na + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    *drop = g;
    for (size_t j = 0; j < spare->na; j++) {
        int there = spare->addrs[j].assoc[0] != '\0';
        for (size_t i = 0; !there && i < *nd; i++)
            there = strcmp(g[i], spare->addrs[j].alloc) == 0;
        if (!there) {
            gpc_debug(c->log, "aws: Elastic IP %s (%s) of %s is associated with nothing: "
                      "releasing it", spare->addrs[j].alloc, spare->addrs[j].ip, uid);
            g[(*nd)++] = spare->addrs[j].alloc;
        }
    }
    return 0;
}

/*
 * nodes_running: every node of ids[] with several network interfaces gets
 * its Elastic IP (see above), per region: DescribeInstances by the
 * cluster's tag (pending or running), DescribeAddresses by the tag, then
 * AllocateAddress for the nodes without one at once (eip_obtain: after a
 * failed or lost call, the addresses are listed again and one the call
 * made is used before another is asked for), AssociateAddress at once.
 * Nothing at all when this process listed the cluster's instances (the
 * core's wait) and none has several interfaces.  Idempotent: a node whose
 * primary interface has an address keeps it; an address of the cluster
 * associated with nothing (a gpuctl killed between AllocateAddress and
 * AssociateAddress, or while AllocateAddress was in flight, a node since
 * removed) serves a node that needs one or is released.  When an
 * AllocateAddress was retried or failed, the addresses are listed once
 * more at the end and those associated with nothing are released.  When a
 * node gets no address (AllocateAddress refused: no node is associated;
 * AssociateAddress refused, or still "pending" after EIP_TRIES rounds) the
 * call fails and the addresses not associated are released.
 */
static int aws_nodes_running(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                             size_t n, gpc_error *err)
{
    aws_ctx *c = ctx;
    if (!c->multi_nic && strcmp(c->nic_uid, ref->cluster_uid) == 0)
        return 0; /* the cluster's instances were listed: none has several interfaces */
    int rc = 0;
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    for (size_t r = 0; !rc && r < ref->n_regions; r++) {
        const char *region = ref->regions[r];
        eip_scan s = {.ids = ids, .n_ids = n};
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        /* pending too: a node recorded by a killed apply that the core did
         * not wait for; its association is retried while EC2 refuses it */
        const char *v[] = {ref->cluster_uid}, *st[] = {"pending", "running"};
        gpc_ec2_filter(&p, 1, "tag:" TAG_UID, v, 1);
        gpc_ec2_filter(&p, 2, "instance-state-name", st, 2);
        rc = describe_all(c, region, "DescribeInstances", &p, "reservationSet", eip_instance, &s,
                          err);
        gpc_ec2_params_free(&p);
        if (!rc && s.n)
            rc = eip_list(c, region, ref->cluster_uid, &s, err);
        eip_node **want = rc ? NULL : calloc(s.n ? s.n : 1, sizeof(*want));
        const char **drop = rc ? NULL : calloc(s.na + s.n + 1, sizeof(*drop));
        if (!rc && (!want || !drop))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        size_t nw = 0, nd = 0, fresh = 0;
        /* who has an address already, who reuses a free one, who needs one */
        for (size_t i = 0; !rc && i < s.na; i++)
            s.addrs[i].taken = s.addrs[i].assoc[0] != '\0';
        for (size_t i = 0; !rc && i < s.n; i++) {
            eip_node *node = &s.nodes[i];
            for (size_t j = 0; !node->done && j < s.na; j++)
                node->done = s.addrs[j].assoc[0] && strcmp(s.addrs[j].eni, node->eni) == 0;
            if (node->done)
                continue;
            for (size_t j = 0; !node->alloc[0] && j < s.na; j++)
                if (!s.addrs[j].taken) {
                    s.addrs[j].taken = 1;
                    snprintf(node->alloc, sizeof(node->alloc), "%s", s.addrs[j].alloc);
                    snprintf(node->ip, sizeof(node->ip), "%s", s.addrs[j].ip);
                }
            want[nw++] = node;
        }
        /* free addresses no node needs go back (they bill) */
        for (size_t j = 0; !rc && j < s.na; j++)
            if (!s.addrs[j].taken)
                drop[nd++] = s.addrs[j].alloc;
        eip_node **alloc = want ? calloc(nw ? nw : 1, sizeof(*alloc)) : NULL;
        if (!rc && !alloc)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < nw; i++)
            if (!want[i]->alloc[0])
                alloc[fresh++] = want[i];
        int doubt = !rc && fresh ? eip_obtain(c, ref, region, &s, alloc, fresh) : 0;
        /* one could not be allocated: the launch fails, none is associated */
        size_t k = 0;
        int nofail = 1;
        for (size_t i = 0; !rc && i < nw; i++)
            nofail &= !want[i]->failed;
        for (size_t i = 0; !rc && i < nw; i++)
            if (!want[i]->failed && nofail)
                want[k++] = want[i];
            else if (!want[i]->failed && want[i]->alloc[0])
                drop[nd++] = want[i]->alloc;
        if (!rc && k)
            eip_associate(c, region, want, k);
        /* a node that did not get its address: the address goes back, the call fails */
        size_t failed = 0;
        const eip_node *first = NULL;
        for (size_t i = 0; !rc && i < s.n; i++) {
            if (!s.nodes[i].failed)
                continue;
            if (!first)
                first = &s.nodes[i];
            failed++;
            if (s.nodes[i].alloc[0])
                drop[nd++] = s.nodes[i].alloc;
        }
        if (!rc && k && !first)
            gpc_info(c->log, "aws: %zu node(s) of %s in %s: an Elastic IP each on the primary "
                     "network interface", k, ref->cluster, region);
        /* an allocation retried or failed may have made an address no node
         * got: the cluster's addresses associated with nothing go back too */
        eip_scan spare = {0};
        if (!rc && doubt)
            rc = eip_spares(c, region, ref->cluster_uid, &spare, &drop, &nd, err);
        if (!rc && nd)
            eip_release(c, region, drop, nd, &left);
        if (!rc && first)
            rc = gpc_fail(err, first->err.code ? first->err.code : GPC_ERR_PROVIDER,
                          "aws: %zu node(s) of %s in %s got no public address (Elastic IP); "
                          "%s: %s%s%s", failed, ref->cluster, region, first->id, first->err.msg,
                          left.len ? "; left allocated: " : "", gpc_buf_str(&left));
        else if (!rc && left.len)
            gpc_info(c->log, "aws: warning: could not release unused Elastic IPs of %s in %s "
                     "(destroy releases them): %s", ref->cluster, region, gpc_buf_str(&left));
        gpc_buf_reset(&left);
        free(alloc);
        free(want);
        free(drop);
        free(s.nodes);
        free(s.addrs);
        free(spare.addrs);
    }
    gpc_buf_free(&left);
    return rc;
}

/*
 * Destroy: every Elastic IP tagged with the cluster uid in `region` is
 * disassociated (when it is; termination would do it only once the
 * instance is `terminated`, aws.md "Public addresses..." section 2,
 * dstack's _release_eip) and then released, each step at once for all.
 * What could not be is added to `left`.  Returns -1 when the addresses
 * could not be listed, else 0.
 */
static int release_tagged_addresses(aws_ctx *c, const char *region, const char *uid,
                                    gpc_buf *left)
{
    eip_scan s = {0};
    gpc_error e;
    gpc_error_clear(&e);
    if (eip_list(c, region, uid, &s, &e) != 0) {
        gpc_buf_addf(left, NULL, "%sthe cluster's Elastic IPs in %s, if any (they could not be "
                     "listed: %s)", left->len ? "; " : "", region, e.msg);
        free(s.addrs);
        return -1;
    }
    size_t na = 0;
    for (size_t i = 0; i < s.na; i++)
        na += s.addrs[i].assoc[0] != '\0';
    gpc_ec2_params *ps = calloc(s.na ? s.na : 1, sizeof(*ps));
    gpc_ec2_batch_item *items = calloc(s.na ? s.na : 1, sizeof(*items));
    const char **allocs = calloc(s.na ? s.na : 1, sizeof(*allocs));
    size_t k = 0, nr = 0;
    if (!ps || !items || !allocs) {
        gpc_buf_addf(left, NULL, "%sElastic IPs (out of memory)", left->len ? "; " : "");
        s.na = na = 0;
    }
    for (size_t i = 0; na && i < s.na; i++)
        if (s.addrs[i].assoc[0]) {
            gpc_ec2_params_init(&ps[k]);
            gpc_ec2_param(&ps[k++], s.addrs[i].assoc, "AssociationId");
        }
    if (k)
        eip_batch(c, region, "DisassociateAddress", ps, items, k);
    k = 0;
    for (size_t i = 0; i < s.na; i++) {
        int gone = 1;
        if (s.addrs[i].assoc[0]) {
            gpc_ec2_batch_item *it = &items[k++];
            gone = !it->rc || strcmp(it->code, "InvalidAssociationID.NotFound") == 0;
            if (!gone)
                gpc_buf_addf(left, NULL, "%sElastic IP %s (%s)", left->len ? "; " : "",
                             s.addrs[i].alloc, it->err.msg);
        }
        if (gone)
            allocs[nr++] = s.addrs[i].alloc;
    }
    if (ps && items)
        eip_batch_free(ps, items, k);
    if (nr)
        eip_release(c, region, allocs, nr, left);
    free(ps);
    free(items);
    free(allocs);
    free(s.addrs);
    return 0;
}

/* ---- cleanup: by tag ------------------------------------------------------- */

typedef struct named_acc {
    const char *field;
    char (*names)[160];
    size_t n;
} named_acc;

static int collect_name(void *arg, xmlNode *it, gpc_error *err)
{
    named_acc *a = arg;
    char(*g)[160] = realloc(a->names, (a->n + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    a->names = g;
    gpc_xml_text(it, a->field, a->names[a->n++], sizeof(g[0]));
    return 0;
}

/* Delete every resource of one kind tagged with the cluster uid. */
static int delete_tagged(aws_ctx *c, const char *region, const char *uid,
                         const char *describe, const char *list, const char *field,
                         const char *del, const char *param, gpc_buf *left)
{
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *v[] = {uid};
    gpc_ec2_filter(&p, 1, "tag:" TAG_UID, v, 1);
    named_acc a = {.field = field};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = describe_all(c, region, describe, &p, list, collect_name, &a, &e);
    gpc_ec2_params_free(&p);
    for (size_t i = 0; !rc && i < a.n; i++) {
        if (!a.names[i][0])
            continue;
        /* a security group may still be held by an ENI for a moment */
        for (int tries = 0;; tries++) {
            gpc_ec2_params q;
            gpc_ec2_params_init(&q);
            gpc_ec2_param(&q, a.names[i], "%s", param);
            xmlDoc *d = NULL;
            gpc_error_clear(&e);
            int drc = gpc_ec2_call(&c->ec2, region, del, &q, &d, &e);
            gpc_ec2_params_free(&q);
            xmlFreeDoc(d);
            if (!drc || strstr(c->ec2.last_code, "NotFound") || strstr(c->ec2.last_code, "Unknown"))
                break;
            int busy = strcmp(c->ec2.last_code, "DependencyViolation") == 0 ||
                       strcmp(c->ec2.last_code, "InvalidPlacementGroup.InUse") == 0;
            if (!busy || tries >= 5) {
                gpc_buf_addf(left, NULL, "%s%s %s (%s)", left->len ? "; " : "", del + 6,
                             a.names[i], e.msg);
                break;
            }
            nap(poll_s());
        }
    }
    if (rc)
        gpc_buf_addf(left, NULL, "%s%s: %s", left->len ? "; " : "", describe, e.msg);
    free(a.names);
    return rc;
}

/* Add id to ids[0..*n-1] unless it is there; 0, or -1 out of memory. */
static int add_id(char (**ids)[32], size_t *n, const char *id)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*ids)[i], id) == 0)
            return 0;
    char(*g)[32] = realloc(*ids, (*n + 1) * sizeof(*g));
    if (!g)
        return -1;
    *ids = g;
    snprintf(g[(*n)++], sizeof(g[0]), "%s", id);
    return 0;
}

/*
 * TerminateInstances of ids[0..n-1] failed with e: err says so and names
 * what stays (the instances, and what destroy removes after them), with
 * e's code (GPC_ERR_AUTH: the core exits 20, refused credentials).
 */
static int terminate_failed(const char *region, const char *const *ids, size_t n,
                            const gpc_error *e, const gpc_buf *left, gpc_error *err)
{
    char names[400] = "";
    size_t len = 0, shown = 0;
    for (size_t i = 0; i < n && len < sizeof(names) - 64; i++, shown++) {
        int w = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", ids[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    if (shown < n)
        snprintf(names + len, sizeof(names) - len, " and %zu more", n - shown);
    return gpc_fail(err, e->code ? e->code : GPC_ERR_PROVIDER,
                    "%s; left in %s: %zu instance(s) (%s), still running or starting, and the "
                    "cluster's security group, key pair and any placement group%s%s",
                    e->msg, region, n, names, left->len ? "; also left: " : "",
                    gpc_buf_str(left));
}

static int aws_cleanup(void *ctx, const gpc_cluster_ref *ref, gpc_error *err)
{
    aws_ctx *c = ctx;
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    int rc = 0;
    for (size_t r = 0; !rc && r < ref->n_regions; r++) {
        const char *region = ref->regions[r];
        /* 1. the Elastic IPs first: they bill until released, and nothing
         * after this needs them */
        gpc_buf early;
        gpc_buf_init(&early, GPC_BUF_LINE_MAX);
        int listed = release_tagged_addresses(c, region, ref->cluster_uid, &early) == 0;
        /* 2. terminate what still carries the tag, and wait until it is gone */
        char(*done)[32] = NULL; /* the instances terminated here */
        size_t ndone = 0;
        time_t start = time(NULL);
        for (int round = 0;; round++) {
            tagged_acc a = {0};
            rc = list_tagged(c, region, ref->cluster_uid, 1, &a, err);
            const char **ids = rc ? NULL : calloc(a.n ? a.n : 1, sizeof(*ids));
            if (!rc && !ids)
                rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            size_t k = 0;
            for (size_t i = 0; ids && i < a.n; i++) {
                if (a.st[i].phase == GPC_PHASE_TERMINATED || a.st[i].phase == GPC_PHASE_PREEMPTED)
                    continue; /* shutting-down: on its way */
                ids[k++] = a.st[i].provider_id;
            }
            gpc_error te;
            gpc_error_clear(&te);
            if (!rc && k && terminate_ids(c, region, ids, k, &te) != 0)
                rc = terminate_failed(region, ids, k, &te, &early, err);
            for (size_t i = 0; !rc && i < k; i++)
                if (add_id(&done, &ndone, ids[i]) != 0)
                    rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            size_t pending = rc ? 0 : a.n;
            free(ids);
            free(a.st);
            if (rc || pending == 0)
                break;
            if (round == 0)
                gpc_info(c->log, "aws: waiting for %zu instance(s) of %s in %s to terminate",
                         pending, ref->cluster, region);
            if (time(NULL) - start > 900) {
                rc = gpc_fail(err, GPC_ERR_TIMEOUT, "aws: %zu instance(s) of %s in %s still "
                              "not terminated after 900 s", pending, ref->cluster, region);
                break;
            }
            nap(poll_s());
        }
        /* the core deletes no node itself when the provider cleans up by
         * tag, so its count is of the nodes it recorded: say what went */
        if (ndone)
            gpc_info(c->log, "aws: terminated %zu instance(s) of %s in %s found by its tag",
                     ndone, ref->cluster, region);
        free(done);
        if (rc) {
            gpc_buf_free(&early);
            break;
        }
        /* 3. then what the instances were using */
        delete_tagged(c, region, ref->cluster_uid, "DescribePlacementGroups",
                      "placementGroupSet", "groupName", "DeletePlacementGroup", "GroupName",
                      &left);
        delete_tagged(c, region, ref->cluster_uid, "DescribeSecurityGroups",
                      "securityGroupInfo", "groupId", "DeleteSecurityGroup", "GroupId", &left);
        delete_tagged(c, region, ref->cluster_uid, "DescribeKeyPairs", "keySet", "keyName",
                      "DeleteKeyPair", "KeyName", &left);
        /* 4. the Elastic IPs again: an AllocateAddress of a killed apply
         * that was in flight at step 1 lands later; what is left is what
         * this pass could not release (step 1's failures are tried again) */
        if (listed)
            release_tagged_addresses(c, region, ref->cluster_uid, &left);
        else
            gpc_buf_addf(&left, NULL, "%s%s", left.len ? "; " : "", gpc_buf_str(&early));
        gpc_buf_free(&early);
    }
    if (!rc && left.len)
        rc = gpc_fail(err, GPC_ERR_PARTIAL, "aws: left behind: %s", gpc_buf_str(&left));
    if (!rc && c->state_dir) {
        /* the key gpuctl made for the cluster goes with it */
        char base[160], path[PATH_MAX];
        base_name(ref->cluster, ref->cluster_uid, base, sizeof(base));
        snprintf(path, sizeof(path), "%s/keys/%s", c->state_dir, base);
        unlink(path);
        snprintf(path, sizeof(path), "%s/keys/%s.pub", c->state_dir, base);
        unlink(path);
    }
    if (!rc)
        c->res_key[0] = c->pg[0] = c->pg_zone[0] = '\0';
    gpc_buf_free(&left);
    return rc;
}

/* ---- live prices and check -------------------------------------------------- */

typedef struct spot_acc {
    gpc_offer *offers;
    size_t n;
    const char *region;
    double *best;       /* per offer, lowest live price seen (0 = none) */
} spot_acc;

static int take_price(void *arg, xmlNode *it, gpc_error *err)
{
    (void)err;
    spot_acc *a = arg;
    char type[64], zone[48], price[32];
    gpc_xml_text(it, "instanceType", type, sizeof(type));
    gpc_xml_text(it, "availabilityZone", zone, sizeof(zone));
    double p = strtod(gpc_xml_text(it, "spotPrice", price, sizeof(price)), NULL);
    if (p <= 0)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        gpc_offer *o = &a->offers[i];
        if (!o->spot || strcmp(o->provider, "aws") != 0 || strcmp(o->region, a->region) != 0 ||
            strcmp(o->instance_type, type) != 0)
            continue;
        if (a->best[i] == 0 || p < a->best[i]) {
            a->best[i] = p;
            snprintf(o->zone, sizeof(o->zone), "%s", zone);
        }
    }
    return 0;
}

/* One region's DescribeSpotPriceHistory: every spot type asked there. */
typedef struct spot_region {
    const char *region;
    gpc_ec2_params base;    /* without NextToken */
    char token[2048];       /* the next page's, "" when done */
    unsigned n_types;
    int done;
} spot_region;

/*
 * Live spot prices (aws.md 2.6): DescribeSpotPriceHistory with StartTime =
 * EndTime = now gives the current price per zone.  The regions are asked
 * at once (one batch of calls per page round); each offer takes the
 * lowest price of its region's zones, and that zone.
 */
static int aws_live_prices(void *ctx, gpc_offer *offers, size_t n, size_t *updated,
                           gpc_error *err)
{
    aws_ctx *c = ctx;
    *updated = 0;
    double *best = calloc(n ? n : 1, sizeof(double));
    spot_region *rs = calloc(n ? n : 1, sizeof(*rs));
    gpc_ec2_batch_item *items = calloc(n ? n : 1, sizeof(*items));
    gpc_ec2_params *pages = calloc(n ? n : 1, sizeof(*pages));
    if (!best || !rs || !items || !pages) {
        free(best);
        free(rs);
        free(items);
        free(pages);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!offers[i].spot || strcmp(offers[i].provider, "aws") != 0)
            continue;
        size_t r = 0;
        while (r < nr && strcmp(rs[r].region, offers[i].region) != 0)
            r++;
        if (r == nr) {
            rs[nr].region = offers[i].region;
            gpc_ec2_params_init(&rs[nr].base);
            nr++;
        }
        int dup = 0; /* each type once per region */
        for (size_t q = 0; q < i && !dup; q++)
            dup = offers[q].spot && strcmp(offers[q].provider, "aws") == 0 &&
                  strcmp(offers[q].region, offers[i].region) == 0 &&
                  strcmp(offers[q].instance_type, offers[i].instance_type) == 0;
        if (!dup)
            gpc_ec2_param(&rs[r].base, offers[i].instance_type, "InstanceType.%u",
                          ++rs[r].n_types);
    }
    for (size_t r = 0; r < nr; r++) {
        gpc_ec2_param(&rs[r].base, "Linux/UNIX", "ProductDescription.1");
        gpc_ec2_param(&rs[r].base, now, "StartTime");
        gpc_ec2_param(&rs[r].base, now, "EndTime");
    }
    int rc = 0;
    for (int round = 0; !rc && round < 1000; round++) {
        size_t k = 0;
        for (size_t r = 0; r < nr; r++) {
            if (rs[r].done)
                continue;
            gpc_ec2_params_init(&pages[k]);
            gpc_buf_adds(&pages[k].body, gpc_buf_str(&rs[r].base.body), NULL);
            pages[k].failed = rs[r].base.failed;
            if (rs[r].token[0])
                gpc_ec2_param(&pages[k], rs[r].token, "NextToken");
            items[k] = (gpc_ec2_batch_item){.region = rs[r].region,
                                            .action = "DescribeSpotPriceHistory",
                                            .params = &pages[k]};
            k++;
        }
        if (k == 0)
            break;
        rc = gpc_ec2_call_many(&c->ec2, items, k, err);
        for (size_t j = 0; j < k; j++) {
            size_t r = 0;
            while (rs[r].region != items[j].region)
                r++;
            xmlNode *root = items[j].doc ? xmlDocGetRootElement(items[j].doc) : NULL;
            spot_acc a = {.offers = offers, .n = n, .region = rs[r].region, .best = best};
            for (xmlNode *it = gpc_xml_items(root, "spotPriceHistorySet"); it;
                 it = gpc_xml_next(it))
                take_price(&a, it, NULL);
            gpc_xml_text(root, "nextToken", rs[r].token, sizeof(rs[r].token));
            rs[r].done = !root || !rs[r].token[0];
            xmlFreeDoc(items[j].doc);
            gpc_ec2_params_free(&pages[j]);
        }
    }
    for (size_t i = 0; !rc && i < n; i++)
        if (best[i] > 0) {
            offers[i].price_hourly = best[i];
            (*updated)++;
        }
    for (size_t r = 0; r < nr; r++)
        gpc_ec2_params_free(&rs[r].base);
    free(best);
    free(rs);
    free(items);
    free(pages);
    return rc;
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

/* The image: "pytorch" (the Deep Learning AMI) or an AMI id, ami- and 8
 * or 17 hex digits (EC2 User Guide, "Amazon Machine Images"). */
static int aws_check_spec(const gpc_spec *spec, gpc_error *err)
{
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

const gpc_provider gpc_provider_aws = {
    .name = "aws",
    .summary = "Amazon EC2 over the Query API (SigV4), spot, EFA, placement groups",
    .caps = GPC_CAP_SPOT | GPC_CAP_EFA | GPC_CAP_PLACEMENT | GPC_CAP_LAUNCH_INDEX,
    .userdata = &aws_userdata,
    .check_spec = aws_check_spec,
    .open = aws_open,
    .close = aws_close,
    .list_offers = NULL,
    .pick_rdzv_port = NULL,
    .create_node = aws_create,
    .find_node = aws_find,
    .describe_node = aws_describe,
    .describe_nodes = aws_describe_many,
    .nodes_running = aws_nodes_running,
    .delete_node = aws_delete,
    .list_zones = aws_list_zones,
    .create_nodes = aws_create_many,
    .cleanup_cluster = aws_cleanup,
    .live_prices = aws_live_prices,
    .refresh_prices = gpc_aws_refresh_prices,
    .check = aws_check,
    .read_log = NULL,
};
