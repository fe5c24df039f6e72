/*
 * cleanup.c - destroy for the aws provider: every instance still tagged
 * with the cluster terminated and waited for, then its Elastic IPs,
 * placement groups, security group and key pair, and the IAM role and
 * instance profile of its nodes (iam.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aws/aws_internal.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

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
    int rc = aws_describe_all(c, region, describe, &p, list, collect_name, &a, &e);
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
            if (!drc || strstr(e.remote.code, "NotFound") || strstr(e.remote.code, "Unknown"))
                break;
            int busy = strcmp(e.remote.code, "DependencyViolation") == 0 ||
                       strcmp(e.remote.code, "InvalidPlacementGroup.InUse") == 0;
            if (!busy || tries >= 5) {
                gpc_buf_addf(left, NULL, "%s%s %s (%s)", left->len ? "; " : "", del + 6,
                             a.names[i], e.msg);
                break;
            }
            aws_nap(aws_poll_s());
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

int aws_cleanup(void *ctx, const gpc_cluster_ref *ref, gpc_error *err)
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
        int listed = aws_release_tagged_addresses(c, region, ref->cluster_uid, &early) == 0;
        /* 2. terminate what still carries the tag, and wait until it is gone */
        char(*done)[32] = NULL; /* the instances terminated here */
        size_t ndone = 0;
        int64_t start = gpc_now();
        for (int round = 0;; round++) {
            tagged_acc a = {0};
            rc = aws_list_tagged(c, region, ref->cluster_uid, 1, &a, err);
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
            if (!rc && k && aws_terminate_ids(c, region, ids, k, &te) != 0)
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
            if (gpc_now() - start > 900) {
                rc = gpc_fail(err, GPC_ERR_TIMEOUT, "aws: %zu instance(s) of %s in %s still "
                              "not terminated after 900 s", pending, ref->cluster, region);
                break;
            }
            aws_nap(aws_poll_s());
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
            aws_release_tagged_addresses(c, region, ref->cluster_uid, &left);
        else
            gpc_buf_addf(&left, NULL, "%s%s", left.len ? "; " : "", gpc_buf_str(&early));
        gpc_buf_free(&early);
    }
    /* 5. the nodes' IAM role and instance profile, once no node uses them
     * (the checkpoints in the bucket stay: docs/providers/aws.md) */
    if (!rc)
        aws_iam_remove(c, ref, &left);
    if (!rc && left.len)
        rc = gpc_fail(err, GPC_ERR_PARTIAL, "aws: left behind: %s", gpc_buf_str(&left));
    if (!rc && c->state_dir) {
        /* the key gpuctl made for the cluster goes with it */
        char base[160], path[PATH_MAX];
        aws_base_name(ref->cluster, ref->cluster_uid, base, sizeof(base));
        snprintf(path, sizeof(path), "%s/keys/%s", c->state_dir, base);
        unlink(path);
        snprintf(path, sizeof(path), "%s/keys/%s.pub", c->state_dir, base);
        unlink(path);
        /* and the known_hosts of its nodes (ssh.c) */
        gpc_error e;
        gpc_error_clear(&e);
        snprintf(path, sizeof(path), "%s/ssh/%s", c->state_dir, ref->cluster_uid);
        if (strchr(ref->cluster_uid, '/') == NULL && ref->cluster_uid[0] &&
            gpc_rm_rf(path, &e) != 0)
            gpc_debug(c->log, "aws: could not remove %s: %s", path, e.msg);
    }
    if (!rc)
        c->res_key[0] = c->pg[0] = c->pg_zone[0] = '\0';
    gpc_buf_free(&left);
    return rc;
}
