/*
 * region.c - what the aws provider learns about a region and caches in its
 * context: the zones offering an instance type, the type's EFA facts, the
 * default VPC and subnets, and the AMI of the spec's image (with a file
 * cache of a day for the Deep Learning AMI).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"
#include "gpuctl/util.h"

/* DLAMI names: aws.md 2.12 ("Deep Learning OSS Nvidia Driver AMI GPU
* PyTorch 2.x (Ubuntu 22.04) YYYYMMDD"). */
#define DLAMI_PYTORCH "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.* (Ubuntu 22.04) *"
#define AMI_CACHE_TTL_S (24 * 3600)

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
int aws_zones_for(aws_ctx *c, const char *region, const char *type, const zone_list **out,
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
    int rc = aws_describe_all(c, region, "DescribeInstanceTypeOfferings", &p,
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

int aws_list_zones(void *ctx, const gpc_offer *offer, char (**zones)[48], size_t *n,
                   gpc_error *err)
{
    const zone_list *z;
    *zones = NULL;
    *n = 0;
    int rc = aws_zones_for(ctx, offer->region, offer->instance_type, &z, err);
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
int aws_type_facts(aws_ctx *c, const char *region, const char *type, const type_info **out,
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

region_info *aws_region_slot(aws_ctx *c, const char *region, gpc_error *err)
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

int aws_default_vpc(aws_ctx *c, region_info *r, gpc_error *err)
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

int aws_default_subnet(aws_ctx *c, region_info *r, const char *zone, char *out, size_t size,
                       gpc_error *err)
{
    if (r->subnet[0] && strcmp(r->subnet_zone, zone) == 0) {
        snprintf(out, size, "%s", r->subnet);
        return 0;
    }
    int rc = aws_default_vpc(c, r, err);
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
int aws_image_cache_path(const aws_ctx *c, const char *region, char *out, size_t size)
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
    if (aws_image_cache_path(c, region, path, sizeof(path)))
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
    if (aws_image_cache_path(c, region, path, sizeof(path)))
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
int aws_resolve_image(aws_ctx *c, region_info *r, const char *image, gpc_error *err)
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
    int rc = aws_describe_all(c, r->region, "DescribeImages", &p, "imagesSet", newest_image, &best,
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
