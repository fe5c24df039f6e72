/*
 * launch.c - RunInstances for the aws provider: one node (the head), or a
 * batch whose nodes learn their rank from the launch index; the cluster's
 * resources ensured first, the vCPU quota (quota.c) and the Elastic IP
 * quota checked before the first launch in a region.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aws/aws_internal.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

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
    aws_base_name(req->cluster, req->cluster_uid, base, sizeof(base));
    int rc = 0;
    if (!same) {
        c->res_key[0] = c->pg_zone[0] = c->pg[0] = '\0';
        snprintf(c->key_name, sizeof(c->key_name), "%s", base);
        rc = aws_ensure_key(c, r->region, c->key_name, req->cluster, req->cluster_uid, err);
        if (!rc)
            rc = aws_ensure_group(c, r, base, req->cluster, req->cluster_uid, c->sg, sizeof(c->sg),
                                  err);
        if (!rc)
            snprintf(c->res_key, sizeof(c->res_key), "%s", key);
    }
    /* A cluster placement group lives in one zone: one per zone tried. */
    int want_pg = req->nnodes > 1 && uses_efa(req->spec, ti);
    if (!rc && want_pg && strcmp(c->pg_zone, req->offer->zone) != 0) {
        char pg[224];
        snprintf(pg, sizeof(pg), "%s-%s", base, req->offer->zone);
        rc = aws_ensure_placement(c, r->region, pg, req->cluster, req->cluster_uid, err);
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
int aws_efa_cards(const gpc_spec *spec, const type_info *ti)
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
    int k = aws_efa_cards(spec, ti);
    return k > 1 ? k + 1 : 1;
}

/* The id of an instance <item>'s primary network interface (card 0,
 * device 0) into out ("" when none); returns how many interfaces it has. */
int aws_primary_eni(xmlNode *it, char *out, size_t size)
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
                      const type_info *ti, const char *subnet, int batch, const char *profile,
                      gpc_ec2_params *p, gpc_error *err)
{
    const gpc_spec *spec = req->spec;
    const gpc_userdata_rules *rules = gpc_provider_aws.userdata;
    char *ud = NULL;
    size_t ud_len = 0;
    int rc = gpc_payload_cloud_init(req->payload, rules, &ud, &ud_len, NULL, err);
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
    int cards = aws_efa_cards(spec, ti);
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
    /* the cluster's instance profile (iam.c): the nodes' own access to
     * its checkpoints in the bucket */
    if (profile[0])
        gpc_ec2_param(p, profile, "IamInstanceProfile.Name");
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
    /* the node's end (its lifecycle.max_duration, the default one, or its
     * budget end: req->end_s) as a tag, so that gpuctl gc finds a node
     * that outlived it even with the state lost; its only value is a
     * time, nothing of the job's */
    char exp[32], *ex = NULL;
    if (req->end_s) {
        aws_rfc3339((req->requested_at > 0 ? req->requested_at : gpc_now()) +
                        (int64_t)req->end_s, exp, sizeof(exp));
        ex = exp;
    }
    /* what rebuilds the cluster's record from its instances (orphans.c):
     * the rank of launch index 0, the node count, the spec hash, the
     * price; never anything of the job */
    char rank[16], nodes[16], price[32];
    snprintf(rank, sizeof(rank), "%u", req->rank);
    snprintf(nodes, sizeof(nodes), "%u", req->nnodes);
    snprintf(price, sizeof(price), "%.6f", req->offer->price_hourly);
    gpc_label ours[4];
    size_t n_ours = 0;
    ours[n_ours++] = (gpc_label){(char *)TAG_RANK, rank};
    ours[n_ours++] = (gpc_label){(char *)TAG_NODES, nodes};
    if (req->spec_hash && req->spec_hash[0])
        ours[n_ours++] = (gpc_label){(char *)TAG_SPEC_HASH, (char *)req->spec_hash};
    ours[n_ours++] = (gpc_label){(char *)TAG_PRICE, price};
    aws_tag_spec_ex(p, 1, "instance", req->cluster, req->cluster_uid, nm, role, ex, ours, n_ours,
                    lb, nl);
    aws_tag_spec(p, 2, "volume", req->cluster, req->cluster_uid, nm, role, ex, lb, nl);
    aws_tag_spec(p, 3, "network-interface", req->cluster, req->cluster_uid, nm, role, ex, lb, nl);
    if (req->offer->spot)
        aws_tag_spec(p, 4, "spot-instances-request", req->cluster, req->cluster_uid, nm, role, ex,
                     lb, nl);
    return p->failed ? gpc_fail(err, GPC_ERR_NOMEM, "aws: RunInstances request too large") : 0;
}


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
    region_info *r = aws_region_slot(c, of->region, err);
    if (!r)
        return GPC_ERR_NOMEM;
    const zone_list *zl = NULL;
    const type_info *ti = NULL;
    int rc = aws_zones_for(c, of->region, of->instance_type, &zl, err);
    int offered = 0;
    for (size_t i = 0; !rc && i < zl->n; i++)
        offered |= strcmp(zl->zones[i], of->zone) == 0;
    if (!rc && !offered)
        rc = gpc_fail(err, GPC_ERR_CAPACITY, "aws: %s is not offered in zone '%s' of %s",
                      of->instance_type, of->zone, of->region);
    /* the account's vCPU quota for the family: a region without room is
     * left at once, before anything is made there */
    if (!rc)
        rc = aws_vcpu_quota(c, req, n, batch, err);
    if (!rc)
        rc = aws_type_facts(c, of->region, of->instance_type, &ti, err);
    /* nodes that will need Elastic IPs: room for them, before anything is made */
    if (!rc && nic_count(req->spec, ti) > 1) {
        c->multi_nic = 1;
        rc = aws_eip_quota(c, req, of->region, ti, err);
    }
    if (!rc)
        rc = aws_resolve_image(c, r, req->image, err);
    char subnet[64] = "";
    if (!rc)
        rc = aws_default_subnet(c, r, of->zone, subnet, sizeof(subnet), err);
    if (!rc)
        rc = ensure_cluster(c, req, r, ti, err);
    /* checkpoints that outlive the nodes, data sets the nodes fetch: an
     * instance profile for them */
    char profile[80] = "";
    if (!rc && req->spec && (req->spec->checkpoint_dir || req->spec->n_data))
        rc = aws_iam_ensure(c, req, of->region, profile, sizeof(profile), err);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    if (!rc)
        rc = run_params(c, req, n, r, ti, subnet, batch, profile, &p, err);
    xmlDoc *d = NULL;
    gpc_error re;
    gpc_error_clear(&re);
    /* a profile made a moment ago may not have reached EC2 yet (IAM is
     * eventually consistent): tried again for a bounded while */
    for (int tries = 0; !rc; tries++) {
        gpc_error_clear(&re);
        if (!gpc_ec2_call(&c->ec2, of->region, "RunInstances", &p, &d, &re))
            break;
        if (!profile[0] || !aws_iam_not_yet(&re) || tries >= 12) {
            rc = gpc_error_wrap(err, &re, NULL);
            break;
        }
        gpc_info(c->log, "aws: instance profile %s not known to EC2 yet; retrying", profile);
        aws_nap(aws_poll_s());
    }
    gpc_ec2_params_free(&p);
    if (rc && strncmp(re.remote.code, "InvalidAMIID", 12) == 0) {
        /* the image went away (deregistered): forget it, cached or not */
        char path[PATH_MAX];
        if (aws_image_cache_path(c, r->region, path, sizeof(path)) == 0)
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
            aws_instance_status(it, &tmp[got]);
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
        aws_terminate_ids(c, of->region, ids, got < n ? got : n, &e);
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: RunInstances returned %zu instance(s) for "
                      "%zu requested%s", got, n, got ? "; they were terminated" : "");
    }
    free(ids);
    free(tmp);
    return rc;
}

int aws_create(void *ctx, const gpc_node_request *req, gpc_node_status *out,
               gpc_error *err)
{
    return run_instances(ctx, req, 1, 0, out, err);
}

int aws_create_many(void *ctx, const gpc_node_request *reqs, size_t n,
                    gpc_node_status *out, gpc_error *err)
{
    if (n == 0)
        return 0;
    return run_instances(ctx, reqs, n, 1, out, err);
}
