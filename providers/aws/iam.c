/*
 * iam.c - the cluster's instance profile: how its nodes reach the
 * cluster's checkpoints and data sets in the bucket without the user's own
 * keys.
 *
 * A cluster whose spec has checkpoint_dir or data gets, before its first
 * RunInstances, an IAM role and an instance profile of the same name,
 * "gpuctl-<cluster, at most 48 characters>-<uid8>" (IAM role names are at
 * most 64 characters), both tagged gpuctl:cluster and gpuctl:cluster-uid
 * like the cluster's EC2 resources.  The role may be assumed by EC2
 * (ec2.amazonaws.com) only, and holds one inline policy per region the
 * cluster launched in, "gpuctl-store-<region>" (aws_iam_policy):
 * the node script's `aws s3 sync` of the checkpoints (node.sh) may read,
 * write and abort multipart uploads of the objects under
 * "clusters/<cluster name>/checkpoints/" in that region's bucket, and list
 * that prefix only; and read (get, list) each data set it fetches: the
 * bucket's "data/NAME/" for a set gpuctl pushed, the spec's s3:// URL
 * for one read where it is.  The checkpoints' prefix is the cluster's name, not its uid, so a
 * cluster destroyed and applied again finds its checkpoints.  Nodes get
 * the role's temporary credentials from the instance metadata service;
 * nothing of the user's own keys reaches them.
 *
 * The profile's name is kept in the cluster's provider data
 * ({"iam_profile": NAME}) before the role is made, so destroy removes
 * role, policies and profile also after a failed apply (aws_iam_remove):
 * RemoveRoleFromInstanceProfile, DeleteInstanceProfile, ListRolePolicies
 * and DeleteRolePolicy, DeleteRole, each NoSuchEntity counting as gone.
 *
 * Wire format (IAM API Reference, "Making query requests"): the Query
 * protocol as EC2's (ec2.h), Version 2010-05-08, to the global endpoint
 * https://iam.amazonaws.com (gpc_aws_service_endpoint, AWS_ENDPOINT_URL_IAM
 * overrides it), signed for us-east-1 with the service name "iam".
 * Answers: <ActionResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">;
 * errors: <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>
 * </ErrorResponse>.  Throttling and 5xx are retried as EC2's.
 *
 * IAM is eventually consistent: RunInstances may refuse a profile made a
 * moment ago ("Value (NAME) for parameter iamInstanceProfile.name is
 * invalid. Invalid IAM Instance Profile name", InvalidParameterValue);
 * launch.c retries that (aws_iam_not_yet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "aws/aws_internal.h"
#include "gpuctl/util.h"

#define IAM_VERSION "2010-05-08"
#define IAM_CONTENT_TYPE "application/x-www-form-urlencoded; charset=utf-8"
#define IAM_MAX_ATTEMPTS 6

/* The role may be taken on by EC2 instances only. */
static const char ASSUME_ROLE_POLICY[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":"
    "{\"Service\":\"ec2.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}";

/* ---- names and the policy ------------------------------------------------ */

void aws_iam_name(const char *cluster, const char *uid, char *out, size_t size)
{
    snprintf(out, size, "gpuctl-%.48s-%.8s", cluster, uid);
}

void aws_iam_ckpt_path(const char *cluster, char *out, size_t size)
{
    snprintf(out, size, GPC_CKPT_STORE_PATH_FMT, cluster);
}

static cJSON *add_statement(cJSON *list, const char *const *actions, size_t n,
                            const char *resource)
{
    cJSON *st = cJSON_CreateObject();
    cJSON *acts = cJSON_CreateArray();
    if (!st || !acts || !cJSON_AddItemToArray(list, st)) {
        cJSON_Delete(st);
        cJSON_Delete(acts);
        return NULL;
    }
    cJSON_AddStringToObject(st, "Effect", "Allow");
    cJSON_AddItemToObject(st, "Action", acts);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(acts, cJSON_CreateString(actions[i]));
    cJSON_AddStringToObject(st, "Resource", resource);
    return st;
}

/* s3:ListBucket on `bucket` for keys like `like` */
static int add_list(cJSON *list, const char *bucket, const char *like)
{
    static const char *const list_actions[] = {"s3:ListBucket"};
    char bucket_arn[200];
    snprintf(bucket_arn, sizeof(bucket_arn), "arn:aws:s3:::%s", bucket);
    cJSON *ls = add_statement(list, list_actions, 1, bucket_arn);
    cJSON *cond = ls ? cJSON_AddObjectToObject(ls, "Condition") : NULL;
    cJSON *sl = cond ? cJSON_AddObjectToObject(cond, "StringLike") : NULL;
    return sl && cJSON_AddStringToObject(sl, "s3:prefix", like);
}

int aws_iam_policy(const char *bucket, const char *prefix, const aws_iam_read *reads,
                   size_t n_reads, char **out, gpc_error *err)
{
    *out = NULL;
    static const char *const object_actions[] = {"s3:GetObject", "s3:PutObject",
                                                 "s3:AbortMultipartUpload"};
    static const char *const read_actions[] = {"s3:GetObject"};
    cJSON *doc = cJSON_CreateObject();
    cJSON *list = cJSON_CreateArray();
    int ok = doc && list && cJSON_AddStringToObject(doc, "Version", "2012-10-17");
    if (ok)
        ok = cJSON_AddItemToObject(doc, "Statement", list);
    else
        cJSON_Delete(list);
    char objects[400], like[300];
    if (ok && prefix) {
        snprintf(objects, sizeof(objects), "arn:aws:s3:::%s/%s/*", bucket, prefix);
        snprintf(like, sizeof(like), "%s/*", prefix);
        ok = add_statement(list, object_actions, 3, objects) != NULL && add_list(list, bucket, like);
    }
    for (size_t i = 0; ok && i < n_reads; i++) {
        const char *p = reads[i].prefix;
        snprintf(objects, sizeof(objects), "arn:aws:s3:::%s/%s%s*", reads[i].bucket, p,
                 *p ? "/" : "");
        snprintf(like, sizeof(like), "%s%s*", p, *p ? "/" : "");
        ok = add_statement(list, read_actions, 1, objects) != NULL &&
             add_list(list, reads[i].bucket, like);
    }
    char *text = ok ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    *out = text;
    return 0;
}

/* ---- the Query call ------------------------------------------------------ */

typedef struct iam_call_ctx {
    aws_ctx *c;
    const char *sign_region;
} iam_call_ctx;

static int sign_iam(void *arg, const gpc_http_request *req, int attempt,
                    gpc_http_headers *extra, gpc_error *err)
{
    (void)attempt;
    iam_call_ctx *ic = arg;
    return gpc_ec2_sign(&ic->c->ec2, req, ic->sign_region, "iam", IAM_CONTENT_TYPE, NULL, extra,
                        err);
}

/* The <Code>, <Message> and <RequestId> of an IAM error document. */
static void error_fields(const gpc_buf *body, char *code, size_t cs, char *msg, size_t ms,
                         char *rid, size_t rs)
{
    code[0] = msg[0] = rid[0] = '\0';
    if (!body->len)
        return;
    xmlDoc *d = xmlReadMemory(body->data, (int)body->len, "error.xml", NULL,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlNode *root = d ? xmlDocGetRootElement(d) : NULL;
    xmlNode *er = root ? gpc_xml_path(root, "Error") : NULL;
    if (er) {
        gpc_xml_text(er, "Code", code, cs);
        gpc_xml_text(er, "Message", msg, ms);
    }
    if (root)
        gpc_xml_text(root, "RequestId", rid, rs);
    xmlFreeDoc(d);
}

static int iam_retry(void *arg, const gpc_http_response *resp)
{
    (void)arg;
    if (resp->status == 0)
        return GPC_HTTP_DEFAULT;
    char code[96], msg[8], rid[8];
    error_fields(&resp->body, code, sizeof(code), msg, sizeof(msg), rid, sizeof(rid));
    if (code[0])
        return strncmp(code, "Throttling", 10) == 0 || gpc_ec2_code_is_throttle(code) ||
                       strcmp(code, "ServiceFailure") == 0
                   ? GPC_HTTP_RETRY : GPC_HTTP_STOP;
    return resp->status == 429 || resp->status >= 500 ? GPC_HTTP_RETRY : GPC_HTTP_STOP;
}

/* The region IAM's endpoint is chosen for (its partition): the given one,
 * else the configured one, else us-east-1. */
static const char *iam_region(const aws_ctx *c, const char *region)
{
    if (region && region[0])
        return region;
    return c->ec2.cfg.region[0] ? c->ec2.cfg.region : "us-east-1";
}

int aws_iam_call(aws_ctx *c, const char *region, const char *action, const gpc_ec2_params *p,
                 xmlDoc **doc, gpc_error *err)
{
    *doc = NULL;
    if (p && p->failed)
        return gpc_fail(err, GPC_ERR_NOMEM, "aws: iam %s: request too large", action);
    /* EC2 at an endpoint of the user's (an emulator, a VPC endpoint) and
     * IAM at AWS's: the role would be made in another world than the
     * instances that use it */
    const gpc_aws_config *cfg = &c->ec2.cfg;
    if (cfg->ec2_endpoint && !cfg->svc_endpoint[GPC_AWS_IAM])
        return gpc_fail(err, GPC_ERR_USAGE, "aws: iam %s: EC2 goes to an endpoint of its own "
                        "(%s) but IAM would go to AWS's; set AWS_ENDPOINT_URL_IAM (or "
                        "AWS_ENDPOINT_URL) for the instance profile of checkpoint_dir", action,
                        cfg->endpoint_from[0] ? cfg->endpoint_from : "--endpoint");
    char sign_region[64], *url = NULL;
    int rc = gpc_aws_service_endpoint(&c->ec2.cfg, GPC_AWS_IAM, iam_region(c, region), &url,
                                      sign_region, sizeof(sign_region), err);
    if (rc)
        return rc;
    gpc_buf body;
    gpc_buf_init(&body, 64u << 10);
    rc = gpc_buf_addf(&body, err, "Action=%s&Version=%s", action, IAM_VERSION);
    if (!rc && p && p->body.len)
        rc = gpc_buf_addf(&body, err, "&%s", gpc_buf_str(&p->body));
    char what[128];
    snprintf(what, sizeof(what), "aws: iam %s", action);
    const char *hdrs[] = {"Content-Type: " IAM_CONTENT_TYPE};
    gpc_http_request req = {.method = "POST", .url = url, .headers = hdrs, .n_headers = 1,
                            .body = body.data, .body_len = body.len};
    iam_call_ctx ic = {.c = c, .sign_region = sign_region};
    static const char *const rid_headers[] = {"x-amzn-RequestId", NULL};
    gpc_http_opts o = {.what = what, .client = c->ec2.http, .before_attempt = sign_iam,
                       .should_retry = iam_retry, .arg = &ic, .max_attempts = IAM_MAX_ATTEMPTS,
                       .request_id_headers = rid_headers};
    gpc_http_response resp;
    memset(&resp, 0, sizeof(resp));
    gpc_error he;
    gpc_error_clear(&he);
    int hrc = 0;
    if (!rc) {
        c->ec2.calls++;
        gpc_debug(c->log, "aws: iam %s", action);
        hrc = gpc_http_send(&req, &o, &resp, &he);
    }
    if (!rc && hrc == 0) {
        *doc = xmlReadMemory(resp.body.data, (int)resp.body.len, "answer.xml", NULL,
                             XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        if (!*doc)
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: the answer is not XML (HTTP %ld)", what,
                          resp.status);
    } else if (!rc) {
        char code[GPC_ERROR_CODE_MAX], msg[600], rid[GPC_ERROR_REQUEST_ID_MAX];
        error_fields(&resp.body, code, sizeof(code), msg, sizeof(msg), rid, sizeof(rid));
        if (!code[0] || !resp.status) {
            rc = gpc_error_wrap(err, &he, NULL);
        } else {
            gpc_code gc = strcmp(code, "AccessDenied") == 0 ? GPC_ERR_AUTH
                                                             : gpc_ec2_error_code(code);
            char hint[200] = "";
            if (strcmp(code, "AccessDenied") == 0)
                snprintf(hint, sizeof(hint), " (the credentials lack the IAM permission iam:%s; "
                         "docs/providers/aws-iam-policy.json lists every action gpuctl needs)", action);
            rc = gpc_fail(err, gc, "%s: %s: %s%s%s%s%s", what, code, msg, hint,
                          rid[0] ? " (request id " : "", rid, rid[0] ? ")" : "");
            gpc_error_remote(err, (int)resp.status, code, rid[0] ? rid : resp.request_id, 0);
        }
    }
    gpc_http_response_free(&resp);
    gpc_buf_free(&body);
    free(url);
    return rc;
}

/* aws_iam_call that counts the codes in `ok` (a NULL-ended list, may be
 * NULL) as success, and frees p. */
static int call_ok(aws_ctx *c, const char *region, const char *action, gpc_ec2_params *p,
                   const char *const *ok, gpc_error *err)
{
    xmlDoc *d = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = aws_iam_call(c, region, action, p, &d, &e);
    xmlFreeDoc(d);
    gpc_ec2_params_free(p);
    for (size_t i = 0; rc && ok && ok[i]; i++)
        if (strcmp(e.remote.code, ok[i]) == 0)
            rc = 0;
    return rc ? gpc_error_wrap(err, &e, NULL) : 0;
}

/* ---- the provider data ----------------------------------------------------- */

/* Set "iam_profile": name in the cluster's provider data (a JSON object,
 * "" = none), keeping what else it holds. */
static void record_profile(char *data, const char *name)
{
    cJSON *j = data[0] ? cJSON_Parse(data) : cJSON_CreateObject();
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = cJSON_CreateObject();
    }
    cJSON_DeleteItemFromObjectCaseSensitive(j, "iam_profile");
    char *text = j && cJSON_AddStringToObject(j, "iam_profile", name)
                     ? cJSON_PrintUnformatted(j) : NULL;
    if (text && strlen(text) < GPC_PROVIDER_DATA_MAX)
        snprintf(data, GPC_PROVIDER_DATA_MAX, "%s", text);
    cJSON_free(text);
    cJSON_Delete(j);
}

int aws_iam_recorded(const char *data, char *out, size_t size)
{
    out[0] = '\0';
    if (!data || !data[0])
        return 0;
    cJSON *j = cJSON_Parse(data);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "iam_profile");
    if (cJSON_IsString(v) && strlen(v->valuestring) < size)
        snprintf(out, size, "%s", v->valuestring);
    cJSON_Delete(j);
    return out[0] != '\0';
}

/* ---- making it ------------------------------------------------------------- */

static void tag_params(gpc_ec2_params *p, const char *cluster, const char *uid)
{
    gpc_ec2_param(p, TAG_CLUSTER, "Tags.member.1.Key");
    gpc_ec2_param(p, cluster, "Tags.member.1.Value");
    gpc_ec2_param(p, TAG_UID, "Tags.member.2.Key");
    gpc_ec2_param(p, uid, "Tags.member.2.Value");
}

int aws_iam_ensure(aws_ctx *c, const gpc_node_request *req, const char *region, char *profile,
                   size_t size, gpc_error *err)
{
    char name[80];
    aws_iam_name(req->cluster, req->cluster_uid, name, sizeof(name));
    snprintf(profile, size, "%s", name);
    char key[160];
    snprintf(key, sizeof(key), "%s %s", region, req->cluster_uid);
    if (strcmp(c->iam_key, key) == 0)
        return 0;
    /* recorded first: destroy removes it whatever happens next */
    if (req->ref && req->ref->data)
        record_profile(req->ref->data, name);
    /* the bucket of the region (made when missing), the checkpoints'
     * prefix, and what the nodes fetch of the spec's data (data.c: a
     * directory pushed to data/NAME of that bucket, or an s3:// URL read
     * where it is) */
    const gpc_spec *spec = req->spec;
    char path[160], url[512];
    aws_iam_ckpt_path(req->cluster, path, sizeof(path));
    int rc = aws_store_url(c, region, spec->checkpoint_dir ? path : "data", url, sizeof(url), err);
    if (rc)
        return rc;
    char bucket[80] = "";
    if (strncmp(url, "s3://", 5) == 0)
        snprintf(bucket, sizeof(bucket), "%.*s", (int)strcspn(url + 5, "/"), url + 5);
    if (!bucket[0])
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: store URL '%s' names no bucket", url);
    aws_iam_read *reads = calloc(spec->n_data + 1, sizeof(*reads));
    char (*texts)[2][512] = calloc(spec->n_data + 1, sizeof(*texts));
    if (!reads || !texts)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        if (d->is_url && strncmp(d->source, "s3://", 5) == 0) {
            const char *b = d->source + 5;
            size_t bl = strcspn(b, "/");
            const char *pre = b[bl] == '/' ? b + bl + 1 : "";
            size_t pl = strlen(pre);
            while (pl && pre[pl - 1] == '/')
                pl--;
            snprintf(texts[i][0], sizeof(texts[i][0]), "%.*s", (int)bl, b);
            snprintf(texts[i][1], sizeof(texts[i][1]), "%.*s", (int)pl, pre);
        } else {
            snprintf(texts[i][0], sizeof(texts[i][0]), "%s", bucket);
            snprintf(texts[i][1], sizeof(texts[i][1]), "data/%s", d->name);
        }
        reads[i].bucket = texts[i][0];
        reads[i].prefix = texts[i][1];
    }
    char *policy = NULL;
    if (!rc)
        rc = aws_iam_policy(bucket, spec->checkpoint_dir ? path : NULL, reads, spec->n_data,
                            &policy, err);
    free(reads);
    free(texts);
    if (rc)
        return rc;
    if (spec->checkpoint_dir)
        gpc_info(c->log, "aws: instance profile %s: nodes may read and write "
                 "s3://%s/%s/ only%s", name, bucket, path,
                 spec->n_data ? ", and read their data sets" : "");
    else
        gpc_info(c->log, "aws: instance profile %s: nodes may read their data sets only", name);
    static const char *const exists[] = {"EntityAlreadyExists", NULL};
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "RoleName");
    gpc_ec2_param(&p, ASSUME_ROLE_POLICY, "AssumeRolePolicyDocument");
    gpc_ec2_param(&p, "gpuctl: the nodes of one cluster, for its checkpoints and data",
                  "Description");
    tag_params(&p, req->cluster, req->cluster_uid);
    rc = call_ok(c, region, "CreateRole", &p, exists, err);
    if (!rc) {
        char pname[96];
        snprintf(pname, sizeof(pname), "gpuctl-store-%s", region);
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "RoleName");
        gpc_ec2_param(&p, pname, "PolicyName");
        gpc_ec2_param(&p, policy, "PolicyDocument");
        rc = call_ok(c, region, "PutRolePolicy", &p, NULL, err);
    }
    free(policy);
    if (!rc) {
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "InstanceProfileName");
        tag_params(&p, req->cluster, req->cluster_uid);
        rc = call_ok(c, region, "CreateInstanceProfile", &p, exists, err);
    }
    if (!rc) {
        /* LimitExceeded: the profile holds a role already (one at most),
         * ours, from an earlier apply of this cluster */
        static const char *const full[] = {"LimitExceeded", NULL};
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "InstanceProfileName");
        gpc_ec2_param(&p, name, "RoleName");
        rc = call_ok(c, region, "AddRoleToInstanceProfile", &p, full, err);
    }
    if (!rc)
        snprintf(c->iam_key, sizeof(c->iam_key), "%s", key);
    return rc;
}

int aws_iam_not_yet(const gpc_error *e)
{
    return strcmp(e->remote.code, "InvalidParameterValue") == 0 &&
           strstr(e->msg, "Invalid IAM Instance Profile") != NULL;
}

/* ---- what the nodes are told ------------------------------------------------ */

int aws_store_endpoint(void *ctx, const char *region, char *out, size_t size, gpc_error *err)
{
    (void)region;
    const aws_ctx *c = ctx;
    const char *ep = c->ec2.cfg.svc_endpoint[GPC_AWS_S3];
    if (ep && strlen(ep) >= size)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: the S3 endpoint is too long for a node");
    snprintf(out, size, "%s", ep ? ep : "");
    return 0;
}

/* ---- removing it ------------------------------------------------------------ */

static void note_left(gpc_buf *left, const char *what, const gpc_error *e)
{
    gpc_buf_addf(left, NULL, "%s%s (%s)", left->len ? "; " : "", what, e->msg);
}

int aws_iam_remove(aws_ctx *c, const gpc_cluster_ref *ref, gpc_buf *left)
{
    char name[80];
    if (!aws_iam_recorded(ref->data, name, sizeof(name)))
        return 0;
    const char *region = ref->n_regions ? ref->regions[0] : NULL;
    static const char *const gone[] = {"NoSuchEntity", NULL};
    gpc_error e;
    gpc_error_clear(&e);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "InstanceProfileName");
    gpc_ec2_param(&p, name, "RoleName");
    int bad = call_ok(c, region, "RemoveRoleFromInstanceProfile", &p, gone, &e);
    if (!bad) {
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "InstanceProfileName");
        bad = call_ok(c, region, "DeleteInstanceProfile", &p, gone, &e);
    }
    if (bad) {
        char what[128];
        snprintf(what, sizeof(what), "IAM instance profile %s", name);
        note_left(left, what, &e);
    }
    /* the role's inline policies, then the role */
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, name, "RoleName");
    xmlDoc *d = NULL;
    gpc_error_clear(&e);
    int rc = aws_iam_call(c, region, "ListRolePolicies", &p, &d, &e);
    gpc_ec2_params_free(&p);
    int role_gone = rc && strcmp(e.remote.code, "NoSuchEntity") == 0;
    xmlNode *root = d ? xmlDocGetRootElement(d) : NULL;
    xmlNode *names = root ? gpc_xml_path(root, "ListRolePoliciesResult/PolicyNames") : NULL;
    for (xmlNode *m = names ? names->children : NULL; !rc && m; m = m->next) {
        if (m->type != XML_ELEMENT_NODE || strcmp((const char *)m->name, "member") != 0)
            continue;
        xmlChar *pn = xmlNodeGetContent(m);
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "RoleName");
        gpc_ec2_param(&p, pn ? (const char *)pn : "", "PolicyName");
        xmlFree(pn);
        rc = call_ok(c, region, "DeleteRolePolicy", &p, gone, &e);
    }
    xmlFreeDoc(d);
    if (!rc && !role_gone) {
        gpc_ec2_params_init(&p);
        gpc_ec2_param(&p, name, "RoleName");
        rc = call_ok(c, region, "DeleteRole", &p, gone, &e);
    }
    if (rc && !role_gone) {
        char what[128];
        snprintf(what, sizeof(what), "IAM role %s", name);
        note_left(left, what, &e);
    }
    if (!bad && (!rc || role_gone))
        gpc_info(c->log, "aws: removed the IAM role and instance profile %s", name);
    c->iam_key[0] = '\0';
    return bad || (rc && !role_gone) ? -1 : 0;
}
