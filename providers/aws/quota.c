/*
 * quota.c - the account's EC2 vCPU quota for an instance family, checked
 * before RunInstances, so that a region whose quota has no room for the
 * cluster is known at once (GPC_ERR_QUOTA: the engine's failover leaves the
 * region) instead of after the resources are made and RunInstances answers
 * VcpuLimitExceeded / MaxSpotInstanceCountExceeded.
 *
 * Facts (sources; docs/providers/aws.md, "vCPU quota"):
 *  - EC2 limits running On-Demand instances, and Spot Instance requests,
 *    per account and region in vCPUs, one quota per group of instance
 *    families (EC2 User Guide, "On-Demand Instance quotas" and "Spot
 *    Instance quotas", using-spot-limits.md; awsdocs/amazon-ec2-user-guide);
 *    the vCPUs counted are those of the instance type
 *    (DescribeInstanceTypes vCpuInfo/defaultVCpus, aws.md 2.7: "quota
 *    accounting is in vCPUs").
 *  - The quotas' codes in Service Quotas (service code "ec2"), as
 *    ListServiceQuotas names them: aws.md's error table (P L-417A185B,
 *    G and VT L-DB2E81BA, P spot L-7212CCBC, G and VT spot L-3819A6DF); the
 *    AWS CLI User Guide's get-aws-default-service-quota example (Standard
 *    L-1216C47A); ListServiceQuotas answers recorded in public
 *    repositories (aquasecurity/cloudsploit
 *    plugins/aws/ec2/instanceVcpusLimit.spec.js: F L-74FC7D96, Inf
 *    L-1945791B, X L-7295265B, P, G, Standard; other recorded account
 *    listings for Trn L-2C3B7624, DL L-6E869C2A, High Memory L-43DA4232,
 *    HPC L-F7808C92 and the spot quotas Standard L-34B43A08, F L-88CF9481,
 *    X L-E3A00192, Inf L-B5D1601B, Trn L-6B0D517C, DL L-85EED4F7).  High
 *    Memory (u-) and HPC types are not sold as Spot: no spot quota.
 *  - GetServiceQuota (JSON 1.1, X-Amz-Target
 *    ServiceQuotasV20190624.GetServiceQuota, body {"ServiceCode": "ec2",
 *    "QuotaCode": ".."}) answers {"Quota": {"QuotaName": .., "Value": N}},
 *    the quota applied to the account in the region; NoSuchResourceException
 *    for a code it does not know there.
 *  - A Spot quota also counts open Spot requests not yet fulfilled; gpuctl
 *    makes one-time requests that end with their instance, so the running
 *    and pending instances are what it counts.
 *
 * Service Quotas does not decide a launch, RunInstances does: when Service
 * Quotas cannot answer (access denied, no such quota, unreachable) the
 * check says so at -v and lets RunInstances go on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "aws/aws_internal.h"
#include "aws/json_api.h"
#include "gpuctl/util.h"

/* ---- which quota an instance type counts against ---------------------------- */

static const aws_vcpu_quota_def
    OD_STD = {"L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 0},
    OD_F = {"L-74FC7D96", "Running On-Demand F instances", 0},
    OD_G = {"L-DB2E81BA", "Running On-Demand G and VT instances", 0},
    OD_P = {"L-417A185B", "Running On-Demand P instances", 0},
    OD_X = {"L-7295265B", "Running On-Demand X instances", 0},
    OD_INF = {"L-1945791B", "Running On-Demand Inf instances", 0},
    OD_TRN = {"L-2C3B7624", "Running On-Demand Trn instances", 0},
    OD_DL = {"L-6E869C2A", "Running On-Demand DL instances", 0},
    OD_HM = {"L-43DA4232", "Running On-Demand High Memory instances", 0},
    OD_HPC = {"L-F7808C92", "Running On-Demand HPC instances", 0},
    SP_STD = {"L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", 1},
    SP_F = {"L-88CF9481", "All F Spot Instance Requests", 1},
    SP_G = {"L-3819A6DF", "All G and VT Spot Instance Requests", 1},
    SP_P = {"L-7212CCBC", "All P Spot Instance Requests", 1},
    SP_X = {"L-E3A00192", "All X Spot Instance Requests", 1},
    SP_INF = {"L-B5D1601B", "All Inf Spot Instance Requests", 1},
    SP_TRN = {"L-6B0D517C", "All Trn Spot Instance Requests", 1},
    SP_DL = {"L-85EED4F7", "All DL Spot Instance Requests", 1};

/* By the letters an instance type's name starts with (its family
 * letters: "p" of p4d.24xlarge, "gr" of gr6.4xlarge, "u" of u-6tb1.metal). */
static const struct {
    const char *letters;
    const aws_vcpu_quota_def *on_demand, *spot;
} FAMILIES[] = {
    {"p", &OD_P, &SP_P},       {"g", &OD_G, &SP_G},     {"gr", &OD_G, &SP_G},
    {"vt", &OD_G, &SP_G},      {"f", &OD_F, &SP_F},     {"x", &OD_X, &SP_X},
    {"inf", &OD_INF, &SP_INF}, {"trn", &OD_TRN, &SP_TRN}, {"dl", &OD_DL, &SP_DL},
    {"u", &OD_HM, NULL},       {"hpc", &OD_HPC, NULL},  {"mac", NULL, NULL},
};

const aws_vcpu_quota_def *aws_vcpu_quota_of(const char *instance_type, int spot)
{
    char letters[16];
    size_t n = 0;
    if (!instance_type)
        return NULL;
    while (n + 1 < sizeof(letters) && instance_type[n] >= 'a' && instance_type[n] <= 'z') {
        letters[n] = instance_type[n];
        n++;
    }
    letters[n] = '\0';
    /* a family name is letters then a generation digit (u- for High Memory) */
    char after = instance_type[n];
    if (n == 0 || !((after >= '0' && after <= '9') || (after == '-' && n == 1)))
        return NULL;
    for (size_t i = 0; i < sizeof(FAMILIES) / sizeof(FAMILIES[0]); i++)
        if (strcmp(FAMILIES[i].letters, letters) == 0)
            return spot ? FAMILIES[i].spot : FAMILIES[i].on_demand;
    if (after != '-' && strchr("acdhimrtz", letters[0]))
        return spot ? &SP_STD : &OD_STD;
    return NULL;
}

/* ---- the quota's value (Service Quotas) -------------------------------------- */

/* Is Service Quotas to be asked?  Not when EC2 goes to an endpoint of the
 * user's (--endpoint, AWS_ENDPOINT_URL_EC2, ...) and Service Quotas would
 * go to AWS's public one: that answer would be about another account (a
 * stand-in of EC2) or out of reach (a private VPC endpoint). */
static int quota_service_in_reach(const aws_ctx *c)
{
    const gpc_aws_config *cfg = &c->ec2.cfg;
    return cfg->svc_endpoint[GPC_AWS_SERVICE_QUOTAS] != NULL || cfg->ec2_endpoint == NULL;
}

/* The session's entry for (region, code), a new one the first time (the
 * oldest is reused when all are taken). */
static aws_sq_entry *quota_slot(aws_ctx *c, const char *region, const char *code, int *fresh)
{
    for (size_t i = 0; i < c->n_sq; i++)
        if (strcmp(c->sq[i].region, region) == 0 && strcmp(c->sq[i].code, code) == 0) {
            *fresh = 0;
            return &c->sq[i];
        }
    size_t cap = sizeof(c->sq) / sizeof(c->sq[0]);
    aws_sq_entry *e = &c->sq[c->n_sq < cap ? c->n_sq++ : c->sq_next++ % cap];
    memset(e, 0, sizeof(*e));
    snprintf(e->region, sizeof(e->region), "%s", region);
    snprintf(e->code, sizeof(e->code), "%s", code);
    *fresh = 1;
    return e;
}

/* GetServiceQuota for q in `region` into e (e->known, e->limit).  Only an
 * allocation failure or an interruption is an error: a quota Service
 * Quotas cannot give is left unknown, said at -v. */
static int quota_read(aws_ctx *c, const char *region, const aws_vcpu_quota_def *q,
                      aws_sq_entry *e, gpc_error *err)
{
    cJSON *body = cJSON_CreateObject();
    if (!body || !cJSON_AddStringToObject(body, "ServiceCode", "ec2") ||
        !cJSON_AddStringToObject(body, "QuotaCode", q->code)) {
        cJSON_Delete(body);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    cJSON *out = NULL;
    gpc_error qe;
    gpc_error_clear(&qe);
    int rc = gpc_aws_json_call(&c->ec2, GPC_AWS_SERVICE_QUOTAS, region,
                               "ServiceQuotasV20190624.GetServiceQuota", body, &out, &qe);
    cJSON_Delete(body);
    if (rc == GPC_ERR_NOMEM || rc == GPC_ERR_INTERRUPTED) {
        cJSON_Delete(out);
        return gpc_error_wrap(err, &qe, NULL);
    }
    const cJSON *v = rc ? NULL : cJSON_GetObjectItemCaseSensitive(
                                     cJSON_GetObjectItemCaseSensitive(out, "Quota"), "Value");
    if (cJSON_IsNumber(v) && v->valuedouble >= 0) {
        e->known = 1;
        e->limit = v->valuedouble;
    } else {
        gpc_debug(c->log, "aws: the vCPU quota '%s' (%s) in %s is not checked: %s; RunInstances "
                  "decides", q->name, q->code, region,
                  rc ? qe.msg : "GetServiceQuota gave no Quota.Value");
    }
    cJSON_Delete(out);
    return 0;
}

/* ---- what the account runs already (DescribeInstances) ----------------------- */

typedef struct use_type {
    char type[64];
    long count;     /* live instances of it that count */
    double vcpus;   /* each; -1 until known */
} use_type;

typedef struct use_acc {
    const aws_vcpu_quota_def *q;
    const char *uid;    /* the cluster whose instances do not count; NULL none */
    use_type *types;
    size_t n;
} use_acc;

static int use_add(use_acc *a, const char *type, long count, gpc_error *err)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->types[i].type, type) == 0) {
            a->types[i].count += count;
            return 0;
        }
    use_type *g = realloc(a->types, (a->n + 1) * sizeof(*g));
    if (!g)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    a->types = g;
    use_type *u = &a->types[a->n++];
    memset(u, 0, sizeof(*u));
    snprintf(u->type, sizeof(u->type), "%s", type);
    u->count = count;
    u->vcpus = -1;
    return 0;
}

static int use_instance(void *arg, xmlNode *res, gpc_error *err)
{
    use_acc *a = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it; it = gpc_xml_next(it)) {
        char type[64], life[16];
        gpc_xml_text(it, "instanceType", type, sizeof(type));
        int spot = strcmp(gpc_xml_text(it, "instanceLifecycle", life, sizeof(life)), "spot") == 0;
        if (aws_vcpu_quota_of(type, spot) != a->q)
            continue;
        int mine = 0;
        for (xmlNode *t = gpc_xml_items(it, "tagSet"); t && a->uid && !mine; t = gpc_xml_next(t)) {
            char k[64], v[80];
            mine = strcmp(gpc_xml_text(t, "key", k, sizeof(k)), TAG_UID) == 0 &&
                   strcmp(gpc_xml_text(t, "value", v, sizeof(v)), a->uid) == 0;
        }
        if (!mine && use_add(a, type, 1, err))
            return GPC_ERR_NOMEM;
    }
    return 0;
}

static int type_vcpus(void *arg, xmlNode *it, gpc_error *err)
{
    (void)err;
    use_acc *a = arg;
    char type[64], v[32], *end;
    gpc_xml_text(it, "instanceType", type, sizeof(type));
    double x = strtod(gpc_xml_text(it, "vCpuInfo/defaultVCpus", v, sizeof(v)), &end);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->types[i].type, type) == 0 && v[0] && *end == '\0' && x > 0)
            a->types[i].vcpus = x;
    return 0;
}

/* The vCPUs of every type in a (DescribeInstanceTypes, 100 names a call). */
static int use_vcpus(aws_ctx *c, const char *region, use_acc *a, gpc_error *err)
{
    int rc = 0;
    for (size_t off = 0; !rc && off < a->n; off += 100) {
        gpc_ec2_params p;
        gpc_ec2_params_init(&p);
        for (size_t i = off; i < a->n && i < off + 100; i++)
            gpc_ec2_param(&p, a->types[i].type, "InstanceType.%zu", i - off + 1);
        rc = aws_describe_all(c, region, "DescribeInstanceTypes", &p, "instanceTypeSet",
                              type_vcpus, a, err);
        gpc_ec2_params_free(&p);
    }
    for (size_t i = 0; !rc && i < a->n; i++)
        if (a->types[i].vcpus < 0)
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: DescribeInstanceTypes (%s) gave no vCPUs "
                          "for %s", region, a->types[i].type);
    return rc;
}

/* ---- the check --------------------------------------------------------------- */

int aws_vcpu_quota(aws_ctx *c, const gpc_node_request *req, size_t n, int batch,
                   gpc_error *err)
{
    const gpc_offer *of = req->offer;
    /* The head launched alone stands for the whole cluster when its nodes
     * all buy the same way (the cluster's own instances are then part of
     * what it needs, not of the use); otherwise, and for a batch, the
     * nodes of this launch (the cluster's running ones are use). */
    const gpc_spec *spec = req->spec;
    int whole = !batch && req->rank == 0 && (!spec || spec->spot.head == spec->spot.policy);
    size_t nodes = whole ? req->nnodes : n;
    const aws_vcpu_quota_def *q = aws_vcpu_quota_of(of->instance_type, of->spot);
    if (!q) {
        gpc_debug(c->log, "aws: no EC2 vCPU quota is known for %s%s: not checked",
                  of->instance_type, of->spot ? " (spot)" : "");
        return 0;
    }
    if (!quota_service_in_reach(c)) {
        gpc_debug(c->log, "aws: the vCPU quota '%s' (%s) in %s is not checked: EC2 has its own "
                  "endpoint and Service Quotas none (AWS_ENDPOINT_URL_SERVICE_QUOTAS)", q->name,
                  q->code, of->region);
        return 0;
    }
    int fresh = 0;
    aws_sq_entry *e = quota_slot(c, of->region, q->code, &fresh);
    if (!fresh && strcmp(e->uid, req->cluster_uid) == 0)
        return 0;   /* this cluster fitted already */
    if (fresh) {
        int rc = quota_read(c, of->region, q, e, err);
        if (rc)
            return rc;
    }
    if (!e->known)
        return 0;
    /* the account's live instances under the same quota, not this cluster's */
    use_acc a = {.q = q, .uid = whole ? req->cluster_uid : NULL};
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    const char *live[] = {"pending", "running"};
    gpc_ec2_filter(&p, 1, "instance-state-name", live, 2);
    gpc_error ue;
    gpc_error_clear(&ue);
    size_t used_types = 0;
    int rc = aws_describe_all(c, of->region, "DescribeInstances", &p, "reservationSet",
                              use_instance, &a, &ue);
    gpc_ec2_params_free(&p);
    used_types = a.n;
    /* this type's vCPUs: the offer's, else asked with the others */
    if (!rc && of->vcpus <= 0)
        rc = use_add(&a, of->instance_type, 0, &ue);
    if (!rc && a.n)
        rc = use_vcpus(c, of->region, &a, &ue);
    double use = 0, each = of->vcpus;
    for (size_t i = 0; !rc && i < a.n; i++) {
        if (i < used_types)
            use += a.types[i].vcpus * (double)a.types[i].count;
        if (strcmp(a.types[i].type, of->instance_type) == 0 && each <= 0)
            each = a.types[i].vcpus;
    }
    free(a.types);
    if (rc == GPC_ERR_NOMEM || rc == GPC_ERR_INTERRUPTED)
        return gpc_error_wrap(err, &ue, NULL);
    if (rc) {
        gpc_debug(c->log, "aws: the vCPU quota '%s' (%s) in %s is not checked: %s; RunInstances "
                  "decides", q->name, q->code, of->region, ue.msg);
        return 0;
    }
    double need = each * (double)nodes;
    gpc_debug(c->log, "aws: vCPU quota '%s' (%s) in %s: %.0f, %.0f in use; %s needs %.0f (%zu x %s)",
              q->name, q->code, of->region, e->limit, use, req->cluster, need, nodes,
              of->instance_type);
    if (need > e->limit - use) {
        return gpc_fail(err, GPC_ERR_QUOTA,
                        "aws: cluster %s needs %.0f vCPUs in %s (%zu x %s, %.0f vCPUs each) but "
                        "the quota '%s' (%s) there is %.0f vCPUs and %.0f are in use: ask for "
                        "%.0f or more in Service Quotas (aws service-quotas "
                        "request-service-quota-increase --service-code ec2 --quota-code %s "
                        "--region %s --desired-value %.0f), stop instances that count against "
                        "it, or use fewer nodes or another region",
                        req->cluster, need, of->region, nodes, of->instance_type, each,
                        q->name, q->code, e->limit, use, use + need, q->code, of->region,
                        use + need);
    }
    snprintf(e->uid, sizeof(e->uid), "%s", req->cluster_uid);
    return 0;
}
