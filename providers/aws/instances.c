/*
 * instances.c - the aws provider's view of its instances: find by client
 * token, describe one or the cluster's by tag, read a node's job result
 * from its console output, terminate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"
#include "gpuctl/util.h"

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
        aws_instance_status(it, a->out);
        a->nics = aws_primary_eni(it, eni, sizeof(eni));
        a->found = 1;
    }
    return 0;
}

static void job_result(aws_ctx *c, const char *region, gpc_node_status *ns);

int aws_find(void *ctx, const char *region, const char *token, gpc_node_status *out,
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
    int rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_instance,
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

int aws_describe(void *ctx, const char *region, const char *id, gpc_node_status *out,
                 gpc_error *err)
{
    aws_ctx *c = ctx;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, id, "InstanceId.1");
    find_acc a = {.want_index = -1, .out = out};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_instance,
                              &a, &e);
    gpc_ec2_params_free(&p);
    if ((rc && strcmp(e.remote.code, "InvalidInstanceID.NotFound") == 0) ||
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
    return rc ? gpc_error_wrap(err, &e, NULL) : 0;
}

int aws_console_output(aws_ctx *c, const char *region, const char *id, int latest,
                       unsigned char **text, size_t *len, gpc_error *err)
{
    *text = NULL;
    *len = 0;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, id, "InstanceId");
    if (latest)
        gpc_ec2_param(&p, "true", "Latest");
    xmlDoc *d = NULL;
    int rc = gpc_ec2_call(&c->ec2, region, "GetConsoleOutput", &p, &d, err);
    gpc_ec2_params_free(&p);
    gpc_buf b64;
    gpc_buf_init(&b64, 1u << 20);
    if (!rc) {
        xmlNode *o = gpc_xml_child(xmlDocGetRootElement(d), "output");
        xmlChar *t = o ? xmlNodeGetContent(o) : NULL;
        if (t) {
            /* base64 of up to 64 KiB; drop the line breaks some answers have */
            for (const xmlChar *q = t; !rc && *q; q++)
                if (*q != '\n' && *q != '\r' && *q != ' ')
                    rc = gpc_buf_add(&b64, q, 1, err);
            xmlFree(t);
        }
    }
    xmlFreeDoc(d);
    if (!rc && b64.len)
        rc = gpc_base64_decode(gpc_buf_str(&b64), b64.len, text, len, err);
    gpc_buf_free(&b64);
    return rc;
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
    gpc_error e;
    gpc_error_clear(&e);
    unsigned char *text = NULL;
    size_t len = 0;
    int rc = aws_console_output(c, region, ns->provider_id, 0, &text, &len, &e);
    if (!rc && len) {
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
}

/* The key types a host key line may have (ssh-keygen -l's, less DSA,
 * which OpenSSH no longer accepts). */
static const char *const host_key_types[] = {
    "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "ssh-rsa", NULL};

/* One line of the block: "[prefix]TYPE BASE64 [comment]".  Appends
 * "TYPE BASE64\n" to out when the key is well formed (the blob is base64
 * whose first SSH string is TYPE); 0, or -1 for a line that is not a key. */
static int host_key_line(const char *l, size_t ll, gpc_buf *out)
{
    for (const char *const *t = host_key_types; *t; t++) {
        size_t tl = strlen(*t);
        for (size_t i = 0; i + tl < ll; i++) {
            if (memcmp(l + i, *t, tl) != 0 || l[i + tl] != ' ' || (i && l[i - 1] != ' ' &&
                                                                   l[i - 1] != ':'))
                continue;
            const char *b = l + i + tl + 1;
            size_t bl = 0;
            while (b + bl < l + ll && b[bl] != ' ' && b[bl] != '\r')
                bl++;
            unsigned char *blob = NULL;
            size_t n = 0;
            int ok = bl > 0 && gpc_base64_decode(b, bl, &blob, &n, NULL) == 0 && n > 4 + tl &&
                     blob[0] == 0 && blob[1] == 0 && blob[2] == 0 && blob[3] == tl &&
                     memcmp(blob + 4, *t, tl) == 0;
            free(blob);
            if (!ok)
                return -1;
            return gpc_buf_addf(out, NULL, "%s %.*s\n", *t, (int)bl, b) ? -1 : 0;
        }
    }
    return -1;
}

int aws_console_host_keys(const unsigned char *text, size_t len, gpc_buf *out)
{
    static const char begin[] = "-----BEGIN SSH HOST KEY KEYS-----";
    static const char end[] = "-----END SSH HOST KEY KEYS-----";
    const char *s = (const char *)text, *last = NULL;
    /* the last whole block: a reboot prints the keys again */
    for (size_t i = 0; i + sizeof(begin) - 1 <= len; i++)
        if (memcmp(s + i, begin, sizeof(begin) - 1) == 0)
            last = s + i + sizeof(begin) - 1;
    size_t keys = 0;
    gpc_buf_reset(out);
    for (const char *l = last; l && l < s + len;) {
        const char *eol = memchr(l, '\n', (size_t)(s + len - l));
        size_t ll = eol ? (size_t)(eol - l) : (size_t)(s + len - l);
        int is_end = 0;
        for (size_t k = 0; !is_end && k + sizeof(end) - 1 <= ll; k++)
            is_end = memcmp(l + k, end, sizeof(end) - 1) == 0;
        if (is_end)
            return (int)keys;
        if (host_key_line(l, ll, out) == 0)
            keys++;
        if (!eol)
            break;
        l = eol + 1;
    }
    gpc_buf_reset(out); /* no block, or one not ended yet */
    return 0;
}

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
        aws_instance_status(it, &a->st[a->n++]);
        if (aws_primary_eni(it, eni, sizeof(eni)) > 1)
            a->multi_nic = 1;
    }
    return 0;
}

/* Every instance tagged with the cluster uid in `region` (all pages). */
int aws_list_tagged(aws_ctx *c, const char *region, const char *uid, int live_only,
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
    int rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", collect_tagged,
                              a, err);
    gpc_ec2_params_free(&p);
    return rc;
}

int aws_describe_many(void *ctx, const gpc_cluster_ref *ref, const char *const *ids,
                      size_t n, gpc_node_status *out, gpc_error *err)
{
    aws_ctx *c = ctx;
    tagged_acc a = {0};
    int rc = 0;
    for (size_t r = 0; !rc && r < ref->n_regions; r++) {
        size_t from = a.n;
        rc = aws_list_tagged(c, ref->regions[r], ref->cluster_uid, 0, &a, err);
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

int aws_terminate_ids(aws_ctx *c, const char *region, const char *const *ids, size_t n,
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
        if (rc && strcmp(e.remote.code, "InvalidInstanceID.NotFound") == 0 && n == 1)
            rc = 0; /* already gone */
        if (rc)
            gpc_error_wrap(err, &e, NULL);
    }
    return rc;
}

int aws_delete(void *ctx, const char *region, const char *id, gpc_error *err)
{
    const char *ids[] = {id};
    return aws_terminate_ids(ctx, region, ids, 1, err);
}
