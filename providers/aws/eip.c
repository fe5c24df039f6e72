/*
 * eip.c - Elastic IPs: the public addresses of the aws provider's nodes
 * with several network cards (nodes_running), and their release on
 * destroy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"
#include "gpuctl/util.h"

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
    double d = aws_poll_s() / 5 * (double)(1u << (round < 16 ? round - 1 : 15));
    return d < 2 * aws_poll_s() ? d : 2 * aws_poll_s();
}

/* An AssociateAddress refusal that means "not running yet" (see above). */
static int eip_pending(const gpc_ec2_batch_item *it)
{
    const char *code = it->err.remote.code;
    return strcmp(code, "IncorrectInstanceState") == 0 ||
           (strcmp(code, "InvalidInstanceID") == 0 && strstr(it->err.msg, "pending"));
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
        if (!asked || aws_primary_eni(it, eni, sizeof(eni)) < 2 || !eni[0])
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
    int rc = aws_describe_all(c, region, "DescribeAddresses", &p, "addressesSet", eip_address, s,
                              err);
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
int aws_eip_quota(aws_ctx *c, const gpc_node_request *req, const char *region,
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
        rc = aws_describe_all(c, region, "DescribeAddresses", NULL, "addressesSet", count_address,
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
                        aws_efa_cards(req->spec, ti), room, max, a.total, mine);
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
        if (items[i].rc && strcmp(items[i].err.remote.code, "InvalidAllocationID.NotFound") != 0)
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
        aws_tag_spec(&ps[i], 1, "elastic-ip", ref->cluster, ref->cluster_uid, NULL, NULL, NULL, c->labels,
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
            nd->unknown = !items[i].err.remote.code[0];
            if (!items[i].rc)
                gpc_fail(&nd->err, GPC_ERR_PROVIDER, "aws: AllocateAddress (%s) gave no "
                         "allocation id", region);
            else if (strcmp(items[i].err.remote.code, "AddressLimitExceeded") == 0)
                gpc_fail(&nd->err, GPC_ERR_QUOTA, "%s: the room gpuctl saw in %s before "
                         "the launch was taken meanwhile ('EC2-VPC Elastic IPs')",
                         items[i].err.msg, region);
            else
                gpc_error_wrap(&nd->err, &items[i].err, NULL);
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
            aws_nap(eip_backoff(round - 1));
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
int aws_nodes_running(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
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
        rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", eip_instance,
                              &s, err);
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
int aws_release_tagged_addresses(aws_ctx *c, const char *region, const char *uid,
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
            gone = !it->rc || strcmp(it->err.remote.code, "InvalidAssociationID.NotFound") == 0;
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
