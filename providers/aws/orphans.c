/*
 * orphans.c - list_orphans for the aws provider (`gpuctl gc`): everything
 * that carries gpuctl's cluster-uid tag (TAG_UID), whichever cluster, state
 * or machine it was made for; the engine keeps what no live cluster of the
 * state owns.  Nothing without the tag is ever listed, so nothing without
 * it is ever removed (cleanup.c removes by the tag's value too).
 *
 * EC2, in each region asked, else every region DescribeRegions lists for
 * the credentials (less those not opted in, as prices.c): instances not
 * terminated nor shutting down (DescribeInstances), Elastic IPs
 * (DescribeAddresses), placement groups, security groups and key pairs,
 * each filtered by tag-key TAG_UID.  All regions and kinds go at once, one
 * gpc_ec2_call_many per round (the HTTP layer's retries and throttling
 * rule apply to each call), the next round asking again only those that
 * answered a nextToken.
 *
 * IAM, global, once: ListRoles and ListInstanceProfiles (every page, by
 * Marker), whose names start with "gpuctl-" (iam.c's names), then
 * ListRoleTags / ListInstanceProfileTags of each of those: ListRoles and
 * ListInstanceProfiles do not return tags (IAM API Reference).  Their
 * gpc_orphan.data is {"iam_profile": NAME}, what aws_iam_remove needs to
 * remove the role and the profile of that name.
 *
 * An instance tagged with a rank (TAG_RANK, launch.c) is one of a
 * cluster's nodes: its gpc_orphan.node fields say what rebuilds its
 * record (`gpuctl status --refresh`, src/engine/rebuild.c): its rank (the
 * tag plus its amiLaunchIndex), the node count, spec hash and price of
 * its tags, and its type, zone, market (instanceLifecycle) and state.
 *
 * A region (or IAM) whose calls fail is not taken as clean: what the
 * others hold is listed, and the error is GPC_ERR_PARTIAL naming each
 * place not read and why.  When nothing could be read at all, the first
 * error is returned as it is (refused credentials: GPC_ERR_AUTH).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"
#include "gpuctl/clock.h"

#define ORPHAN_ROUNDS_MAX 200
#define IAM_ACTION(name) name
#define IAM_PAGES_MAX 100

/* ---- times ------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so that no TZ or timegm is needed. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void aws_rfc3339(int64_t t, char *out, size_t size)
{
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    int64_t secs = t - days * 86400;
    /* civil_from_days */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    snprintf(out, size, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d,
             (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

int64_t aws_rfc3339_parse(const char *text)
{
    int y, mo, d, h, mi, s, used = 0;
    if (!text || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 ||
        used != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 ||
        y < 1970 || h < 0 || mi < 0 || s < 0)
        return -1;
    const char *p = text + used;
    if (*p == '.') /* EC2's launchTime has milliseconds */
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    if (strcmp(p, "Z") != 0)
        return -1;
    return days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
}

/* "3d04h", "2h05m", "7m", "12s": how long ago `since` was (for a person). */
static void age_of(int64_t since, char *out, size_t size)
{
    int64_t a = gpc_now() - since;
    if (since <= 0 || a < 0)
        snprintf(out, size, "?");
    else if (a < 60)
        snprintf(out, size, "%llds", (long long)a);
    else if (a < 3600)
        snprintf(out, size, "%lldm", (long long)(a / 60));
    else if (a < 86400)
        snprintf(out, size, "%lldh%02lldm", (long long)(a / 3600), (long long)(a / 60 % 60));
    else
        snprintf(out, size, "%lldd%02lldh", (long long)(a / 86400), (long long)(a / 3600 % 24));
}

/* ---- the list ------------------------------------------------------------ */

typedef struct orphan_acc {
    gpc_orphan *v;
    size_t n, cap;
} orphan_acc;

static gpc_orphan *add_orphan(orphan_acc *a, const char *kind, const char *region,
                              gpc_error *err)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        gpc_orphan *g = realloc(a->v, cap * sizeof(*g));
        if (!g) {
            gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            return NULL;
        }
        a->v = g;
        a->cap = cap;
    }
    gpc_orphan *o = &a->v[a->n++];
    memset(o, 0, sizeof(*o));
    snprintf(o->kind, sizeof(o->kind), "%s", kind);
    snprintf(o->region, sizeof(o->region), "%s", region);
    return o;
}

/* gpuctl's tags of an EC2 <item>'s tagSet into o; 0 when it has no
 * TAG_UID (the filter asked for it: a resource tagged a moment later, or
 * a filter an emulator ignored), 1 when it has. */
static int ec2_tags(xmlNode *it, gpc_orphan *o)
{
    int has_uid = 0;
    for (xmlNode *t = gpc_xml_items(it, "tagSet"); t; t = gpc_xml_next(t)) {
        char key[128], value[256];
        gpc_xml_text(t, "key", key, sizeof(key));
        gpc_xml_text(t, "value", value, sizeof(value));
        if (strcmp(key, TAG_UID) == 0) {
            snprintf(o->cluster_uid, sizeof(o->cluster_uid), "%.63s", value);
            has_uid = 1;
        } else if (strcmp(key, TAG_CLUSTER) == 0) {
            snprintf(o->cluster, sizeof(o->cluster), "%.63s", value);
        } else if (strcmp(key, TAG_EXPIRES) == 0) {
            int64_t t2 = aws_rfc3339_parse(value);
            o->expires_at = t2 > 0 ? t2 : 0;
        } else if (strcmp(key, TAG_RANK) == 0) {
            /* a node's tags: its rank is this plus its launch index */
            char *end;
            unsigned long r = strtoul(value, &end, 10);
            o->node = value[0] >= '0' && value[0] <= '9' && !*end && r < 1024;
            o->rank = o->node ? (uint32_t)r : 0;
        } else if (strcmp(key, TAG_NODES) == 0) {
            char *end;
            unsigned long r = strtoul(value, &end, 10);
            o->nodes = value[0] >= '0' && value[0] <= '9' && !*end && r <= 1024 ? (uint32_t)r : 0;
        } else if (strcmp(key, TAG_SPEC_HASH) == 0) {
            size_t hex = strspn(value, "0123456789abcdef");
            if (hex == 64 && !value[hex])
                snprintf(o->spec_hash, sizeof(o->spec_hash), "%.64s", value);
        } else if (strcmp(key, TAG_PRICE) == 0) {
            char *end;
            double v = strtod(value, &end);
            o->price_hourly = value[0] >= '0' && value[0] <= '9' && !*end && v < 1e6 ? v : 0;
        }
    }
    return has_uid;
}

/* The node fields of instance <item> `it` whose tags `tags` holds into o
 * (gpc_orphan.node): its rank (the tag plus its launch index), place,
 * market and state as describe_node reads them. */
static void node_of(xmlNode *it, const gpc_orphan *tags, gpc_orphan *o)
{
    char v[64];
    long idx = strtol(gpc_xml_text(it, "amiLaunchIndex", v, sizeof(v)), NULL, 10);
    if (idx < 0 || tags->rank + (unsigned long)idx >= 1024)
        return; /* not a rank: not a node to rebuild */
    o->node = 1;
    o->rank = tags->rank + (uint32_t)idx;
    o->nodes = tags->nodes;
    memcpy(o->spec_hash, tags->spec_hash, sizeof(o->spec_hash));
    o->price_hourly = tags->price_hourly;
    gpc_xml_text(it, "instanceType", o->instance_type, sizeof(o->instance_type));
    gpc_xml_text(it, "placement/availabilityZone", o->zone, sizeof(o->zone));
    o->spot = strcmp(gpc_xml_text(it, "instanceLifecycle", v, sizeof(v)), "spot") == 0;
    gpc_node_status ns;
    aws_instance_status(it, &ns);
    o->phase = ns.phase;
    memcpy(o->private_ip, ns.private_ip, sizeof(o->private_ip));
    int64_t t = aws_rfc3339_parse(gpc_xml_text(it, "launchTime", v, sizeof(v)));
    o->launched_at = t > 0 ? t : 0;
}

/* One EC2 kind: what to ask and how to read an answer's item. */
typedef struct ec2_kind {
    const char *action;
    const char *list;       /* the answer's list element */
    const char *kind;       /* gpc_orphan.kind */
    int paged;              /* takes NextToken */
} ec2_kind;

static const ec2_kind KINDS[] = {
    {"DescribeInstances", "reservationSet", "instance", 1},
    {"DescribeAddresses", "addressesSet", "elastic-ip", 0},
    {"DescribePlacementGroups", "placementGroupSet", "placement-group", 0},
    {"DescribeSecurityGroups", "securityGroupInfo", "security-group", 1},
    {"DescribeKeyPairs", "keySet", "key-pair", 0},
};
#define N_KINDS (sizeof(KINDS) / sizeof(KINDS[0]))

/* An item of KINDS[k]'s answer in `region` into a (when it carries the
 * tag). */
static int read_item(orphan_acc *a, size_t k, const char *region, xmlNode *it, gpc_error *err)
{
    gpc_orphan tmp;
    memset(&tmp, 0, sizeof(tmp));
    if (!ec2_tags(it, &tmp))
        return 0;
    gpc_orphan *o = add_orphan(a, KINDS[k].kind, region, err);
    if (!o)
        return GPC_ERR_NOMEM;
    memcpy(o->cluster_uid, tmp.cluster_uid, sizeof(o->cluster_uid));
    memcpy(o->cluster, tmp.cluster, sizeof(o->cluster));
    o->expires_at = tmp.expires_at;
    /* the instance of a node whose rank is tagged: what rebuilds its
     * record (the node tags mean nothing on other kinds) */
    if (k == 0 && tmp.node)
        node_of(it, &tmp, o);
    char a1[64], a2[64], age[32];
    switch (k) {
    case 0: /* an instance */
        gpc_xml_text(it, "instanceId", o->id, sizeof(o->id));
        gpc_xml_text(it, "instanceType", a1, sizeof(a1));
        gpc_xml_text(it, "instanceState/name", a2, sizeof(a2));
        age_of(aws_rfc3339_parse(gpc_xml_text(it, "launchTime", age, sizeof(age))), age,
               sizeof(age));
        snprintf(o->detail, sizeof(o->detail), "%s %s, launched %s ago", a1, a2, age);
        break;
    case 1: /* an Elastic IP */
        gpc_xml_text(it, "allocationId", o->id, sizeof(o->id));
        gpc_xml_text(it, "publicIp", a1, sizeof(a1));
        gpc_xml_text(it, "instanceId", a2, sizeof(a2));
        snprintf(o->detail, sizeof(o->detail), "%s%s%s", a1, a2[0] ? " on " : ", not associated",
                 a2);
        break;
    case 2: /* a placement group */
        gpc_xml_text(it, "groupName", o->id, sizeof(o->id));
        gpc_xml_text(it, "strategy", a1, sizeof(a1));
        snprintf(o->detail, sizeof(o->detail), "strategy %s", a1);
        break;
    case 3: /* a security group */
        gpc_xml_text(it, "groupId", o->id, sizeof(o->id));
        gpc_xml_text(it, "groupName", o->detail, sizeof(o->detail));
        break;
    default: /* a key pair: deleted by name */
        gpc_xml_text(it, "keyName", o->id, sizeof(o->id));
        gpc_xml_text(it, "keyPairId", o->detail, sizeof(o->detail));
        break;
    }
    return 0;
}

static int read_answer(orphan_acc *a, size_t k, const char *region, xmlNode *root,
                       gpc_error *err)
{
    int rc = 0;
    for (xmlNode *it = gpc_xml_items(root, KINDS[k].list); !rc && it; it = gpc_xml_next(it)) {
        if (k != 0) {
            rc = read_item(a, k, region, it, err);
            continue;
        }
        /* instances come in reservations */
        for (xmlNode *in = gpc_xml_items(it, "instancesSet"); !rc && in; in = gpc_xml_next(in))
            rc = read_item(a, k, region, in, err);
    }
    return rc;
}

/* The regions to look in: those asked, else every one DescribeRegions
 * lists for the credentials and that they may use.  *out (caller frees)
 * holds *n names. */
static int all_regions(aws_ctx *c, char (**out)[48], size_t *n, gpc_error *err)
{
    const char *home = c->ec2.cfg.region[0] ? c->ec2.cfg.region : "us-east-1";
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, home, "DescribeRegions", NULL, &d, err);
    size_t k = 0, cap = 0;
    char(*v)[48] = NULL;
    for (xmlNode *it = rc ? NULL : gpc_xml_items(xmlDocGetRootElement(d), "regionInfo");
         !rc && it; it = gpc_xml_next(it)) {
        char name[48], opt[32];
        gpc_xml_text(it, "regionName", name, sizeof(name));
        gpc_xml_text(it, "optInStatus", opt, sizeof(opt));
        if (!name[0] || strcmp(opt, "not-opted-in") == 0)
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 32;
            char(*g)[48] = realloc(v, cap * sizeof(*g));
            if (!g) {
                rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
                break;
            }
            v = g;
        }
        snprintf(v[k++], sizeof(v[0]), "%s", name);
    }
    xmlFreeDoc(d);
    if (!rc && k == 0)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: DescribeRegions lists no region these "
                      "credentials can use");
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* Every region and kind at once, page round by page round.  A failed call
 * marks its region failed (fail[r] set, `why` told) and its region's other
 * kinds are still read. */
static int list_ec2(aws_ctx *c, char (*regions)[48], size_t nr, orphan_acc *a, int *fail,
                    gpc_buf *why, gpc_error *first, gpc_error *err)
{
    size_t n = nr * N_KINDS;
    char(*tokens)[2048] = calloc(n, sizeof(*tokens));
    int *done = calloc(n, sizeof(int));
    gpc_ec2_batch_item *items = calloc(n, sizeof(*items));
    gpc_ec2_params *pages = calloc(n, sizeof(*pages));
    size_t *which = calloc(n, sizeof(size_t));
    int rc = !tokens || !done || !items || !pages || !which
                 ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory") : 0;
    const char *key[] = {TAG_UID};
    const char *live[] = {"pending", "running", "stopping", "stopped"};
    for (int round = 0; !rc; round++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (done[i])
                continue;
            size_t k = i % N_KINDS;
            gpc_ec2_params_init(&pages[m]);
            gpc_ec2_filter(&pages[m], 1, "tag-key", key, 1);
            if (k == 0)
                gpc_ec2_filter(&pages[m], 2, "instance-state-name", live, 4);
            if (tokens[i][0])
                gpc_ec2_param(&pages[m], tokens[i], "NextToken");
            items[m] = (gpc_ec2_batch_item){.region = regions[i / N_KINDS],
                                            .action = KINDS[k].action, .params = &pages[m]};
            which[m++] = i;
        }
        if (m == 0)
            break;
        if (round == ORPHAN_ROUNDS_MAX) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the listing answered more than %d pages",
                          ORPHAN_ROUNDS_MAX);
            for (size_t j = 0; j < m; j++)
                gpc_ec2_params_free(&pages[j]);
            break;
        }
        gpc_error ignored;
        gpc_error_clear(&ignored);
        /* each item's own result is read below */
        gpc_ec2_call_many(&c->ec2, items, m, &ignored);
        for (size_t j = 0; j < m; j++) {
            size_t i = which[j], r = i / N_KINDS, k = i % N_KINDS;
            xmlNode *root = items[j].doc ? xmlDocGetRootElement(items[j].doc) : NULL;
            tokens[i][0] = '\0';
            if (items[j].rc || !root) {
                if (!fail[r]) {
                    fail[r] = 1;
                    if (!first->code) {
                        if (items[j].rc)
                            *first = items[j].err;
                        else
                            gpc_fail(first, GPC_ERR_PROVIDER, "aws: %s (%s): no answer",
                                     KINDS[k].action, regions[r]);
                    }
                    gpc_buf_addf(why, NULL, "%s%s (%s)", why->len ? "; " : "", regions[r],
                                 items[j].rc ? items[j].err.msg : "no answer");
                }
            } else if (!rc) {
                rc = read_answer(a, k, regions[r], root, err);
                if (KINDS[k].paged)
                    gpc_xml_text(root, "nextToken", tokens[i], sizeof(tokens[i]));
            }
            done[i] = !tokens[i][0];
            xmlFreeDoc(items[j].doc);
            gpc_ec2_params_free(&pages[j]);
        }
    }
    free(tokens);
    free(done);
    free(items);
    free(pages);
    free(which);
    return rc;
}

/* The text of each <member>'s `field` under `path` of an IAM answer, one
 * by one, to fn. */
typedef int (*member_fn)(void *arg, xmlNode *member, gpc_error *err);

static int each_member(xmlNode *root, const char *path, member_fn fn, void *arg, gpc_error *err)
{
    xmlNode *list = root ? gpc_xml_path(root, path) : NULL;
    int rc = 0;
    for (xmlNode *m = list ? list->children : NULL; !rc && m; m = m->next)
        if (m->type == XML_ELEMENT_NODE && strcmp((const char *)m->name, "member") == 0)
            rc = fn(arg, m, err);
    return rc;
}

typedef struct name_list {
    const char *field;      /* RoleName, InstanceProfileName */
    char (*v)[128];
    size_t n;
} name_list;

static int add_gpuctl_name(void *arg, xmlNode *m, gpc_error *err)
{
    name_list *l = arg;
    char name[128];
    gpc_xml_text(m, l->field, name, sizeof(name));
    if (strncmp(name, "gpuctl-", 7) != 0)
        return 0;
    char(*g)[128] = realloc(l->v, (l->n + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    l->v = g;
    snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", name);
    return 0;
}

static int read_iam_tag(void *arg, xmlNode *m, gpc_error *err)
{
    (void)err;
    gpc_orphan *o = arg;
    char key[128], value[256];
    gpc_xml_text(m, "Key", key, sizeof(key));
    gpc_xml_text(m, "Value", value, sizeof(value));
    if (strcmp(key, TAG_UID) == 0)
        snprintf(o->cluster_uid, sizeof(o->cluster_uid), "%.63s", value);
    else if (strcmp(key, TAG_CLUSTER) == 0)
        snprintf(o->cluster, sizeof(o->cluster), "%.63s", value);
    return 0;
}

/* The IAM roles (or instance profiles) named gpuctl-... that carry
 * TAG_UID, into a. */
static int list_iam(aws_ctx *c, int profiles, orphan_acc *a, gpc_error *err)
{
    /* the IAM actions as literals: test_aws_ckpt.sh checks them against
     * docs/providers/aws-iam-policy.json */
    const char *list = profiles ? IAM_ACTION("ListInstanceProfiles") : IAM_ACTION("ListRoles");
    const char *tags = profiles ? IAM_ACTION("ListInstanceProfileTags")
                                : IAM_ACTION("ListRoleTags");
    const char *field = profiles ? "InstanceProfileName" : "RoleName";
    char path[96], tpath[96], marker[1024] = "";
    snprintf(path, sizeof(path), "%sResult/%s", list, profiles ? "InstanceProfiles" : "Roles");
    snprintf(tpath, sizeof(tpath), "%sResult/Tags", tags);
    name_list names = {.field = field};
    int rc = 0;
    for (int page = 0; !rc; page++) {
        if (page == IAM_PAGES_MAX) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: iam %s answered more than %d pages", list,
                          IAM_PAGES_MAX);
            break;
        }
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        if (marker[0])
            gpc_ec2_param(&p, marker, "Marker");
        xmlDoc *d = NULL;
        rc = aws_iam_call(c, NULL, list, &p, &d, err);
        gpc_ec2_params_free(&p);
        xmlNode *root = d ? xmlDocGetRootElement(d) : NULL;
        if (!rc)
            rc = each_member(root, path, add_gpuctl_name, &names, err);
        char trunc[16] = "";
        marker[0] = '\0';
        if (root) {
            char mp[96];
            snprintf(mp, sizeof(mp), "%sResult/IsTruncated", list);
            gpc_xml_text(root, mp, trunc, sizeof(trunc));
            snprintf(mp, sizeof(mp), "%sResult/Marker", list);
            gpc_xml_text(root, mp, marker, sizeof(marker));
        }
        xmlFreeDoc(d);
        if (strcmp(trunc, "true") != 0 || !marker[0])
            break;
    }
    for (size_t i = 0; !rc && i < names.n; i++) {
        gpc_orphan tmp;
        memset(&tmp, 0, sizeof(tmp));
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, names.v[i], "%s", field);
        xmlDoc *d = NULL;
        gpc_error e;
        gpc_error_clear(&e);
        int trc = aws_iam_call(c, NULL, tags, &p, &d, &e);
        gpc_ec2_params_free(&p);
        if (!trc)
            rc = each_member(xmlDocGetRootElement(d), tpath, read_iam_tag, &tmp, err);
        else if (strcmp(e.remote.code, "NoSuchEntity") != 0) /* gone since: fine */
            rc = gpc_error_wrap(err, &e, NULL);
        xmlFreeDoc(d);
        if (rc || trc || !tmp.cluster_uid[0])
            continue;
        gpc_orphan *o = add_orphan(a, profiles ? "iam-instance-profile" : "iam-role", "", err);
        if (!o) {
            rc = GPC_ERR_NOMEM;
            break;
        }
        snprintf(o->id, sizeof(o->id), "%s", names.v[i]);
        memcpy(o->cluster_uid, tmp.cluster_uid, sizeof(o->cluster_uid));
        memcpy(o->cluster, tmp.cluster, sizeof(o->cluster));
        snprintf(o->detail, sizeof(o->detail), "%s (global)",
                 profiles ? "IAM instance profile" : "IAM role");
        snprintf(o->data, sizeof(o->data), "{\"iam_profile\":\"%s\"}", names.v[i]);
    }
    free(names.v);
    return rc;
}

int aws_list_orphans(void *ctx, const char *const *regions, size_t n_regions, gpc_orphan **out,
                     size_t *n, gpc_error *err)
{
    aws_ctx *c = ctx;
    *out = NULL;
    *n = 0;
    char(*rv)[48] = NULL;
    size_t nr = 0;
    int rc = 0;
    /* the account's regions, also when some are asked: an unknown name is
     * refused by name (not sent, to fail as a signature scoped to no
     * region), and missing credentials are said as such */
    rc = all_regions(c, &rv, &nr, err);
    if (rc)
        return rc;
    if (n_regions) {
        char(*asked)[48] = calloc(n_regions, sizeof(*asked));
        if (!asked) {
            free(rv);
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; !rc && i < n_regions; i++) {
            int known = 0;
            for (size_t j = 0; !known && j < nr; j++)
                known = strcmp(rv[j], regions[i]) == 0;
            if (!known) {
                gpc_buf list;
                gpc_buf_init(&list, GPC_BUF_LINE_MAX);
                for (size_t j = 0; j < nr; j++)
                    gpc_buf_addf(&list, NULL, "%s%s", j ? ", " : "", rv[j]);
                rc = gpc_fail(err, GPC_ERR_USAGE, "aws: unknown region '%s' (the regions these "
                              "credentials can use: %s)", regions[i], gpc_buf_str(&list));
                gpc_buf_free(&list);
            }
            snprintf(asked[i], sizeof(asked[0]), "%s", regions[i]);
        }
        free(rv);
        rv = asked;
        nr = n_regions;
        if (rc) {
            free(rv);
            return rc;
        }
    }
    orphan_acc a = {0};
    int *fail = calloc(nr, sizeof(int));
    gpc_buf why;
    gpc_buf_init(&why, GPC_BUF_LINE_MAX);
    gpc_error first;
    gpc_error_clear(&first);
    rc = fail ? list_ec2(c, rv, nr, &a, fail, &why, &first, err)
              : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t failed = 0;
    for (size_t r = 0; fail && r < nr; r++)
        failed += (size_t)fail[r];
    /* IAM is global: once, whatever regions were asked */
    int iam_failed = 0;
    for (int profiles = 0; !rc && profiles < 2 && !iam_failed; profiles++) {
        gpc_error e;
        gpc_error_clear(&e);
        if (list_iam(c, profiles, &a, &e) != 0) {
            if (e.code == GPC_ERR_NOMEM) {
                rc = gpc_error_wrap(err, &e, NULL);
                break;
            }
            iam_failed = 1;
            if (!first.code)
                first = e;
            gpc_buf_addf(&why, NULL, "%sIAM (%s)", why.len ? "; " : "", e.msg);
        }
    }
    if (!rc && failed == nr && iam_failed) {
        rc = gpc_error_wrap(err, &first, NULL); /* nothing read at all */
    } else if (!rc && (failed || iam_failed)) {
        rc = gpc_fail(err, GPC_ERR_PARTIAL, "aws: not listed, so not known to be clean: %s",
                      gpc_buf_str(&why));
    }
    gpc_buf_free(&why);
    free(fail);
    free(rv);
    if (rc && rc != GPC_ERR_PARTIAL) {
        free(a.v);
        return rc;
    }
    *out = a.v;
    *n = a.n;
    return rc;
}
