/* plan_read.c - a saved plan read back and checked field by field
 * (plan.h, gpc_plan_read): every value in its range, so that a plan edited
 * by hand or cut short is refused naming the field, never half-applied. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/util.h"
#include "gpuctl/plan.h"
#include "gpuctl/spec.h"
#include "plan_int.h"

/* One offer from its JSON (the inverse of gpc_candidate_json's fields). */
static int offer_from_json(const cJSON *j, int head, gpc_offer *o)
{
    memset(o, 0, sizeof(*o));
    const char *prov = gpc_json_str(j, "provider"), *type = gpc_json_str(j, "instance_type");
    const char *region = gpc_json_str(j, "region"), *zone = gpc_json_str(j, "zone");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    const cJSON *ic = cJSON_GetObjectItemCaseSensitive(j, "interconnect");
    const cJSON *price = cJSON_GetObjectItemCaseSensitive(j, "price");
    const char *purchase = gpc_json_str(j, head ? "head_purchase" : "purchase");
    if (!prov || !type || !region || !cJSON_IsObject(gpu) || !cJSON_IsObject(price) ||
        !purchase || !cJSON_IsObject(ic))
        return -1;
    snprintf(o->provider, sizeof(o->provider), "%s", prov);
    snprintf(o->instance_type, sizeof(o->instance_type), "%s", type);
    snprintf(o->region, sizeof(o->region), "%s", region);
    snprintf(o->zone, sizeof(o->zone), "%s", zone ? zone : ""); /* optional */
    const char *model = gpc_json_str(gpu, "model");
    snprintf(o->gpu_model, sizeof(o->gpu_model), "%s", model ? model : "");
    o->gpu_count = (uint32_t)gpc_json_num(gpu, "count", 0);
    o->gpu_mem_gib = gpc_json_num(gpu, "memory_gib", 0);
    o->vcpus = gpc_json_num(j, "vcpus", 0);
    o->mem_gib = gpc_json_num(j, "memory_gib", 0);
    o->spot = strcmp(purchase, "spot") == 0;
    o->price_hourly = gpc_json_num(price, head ? "head_usd_hr" : "node_usd_hr", -1);
    const char *fab = gpc_json_str(ic, "fabric");
    snprintf(o->fabric, sizeof(o->fabric), "%s", fab && strcmp(fab, "unknown") ? fab : "");
    return o->price_hourly < 0 ? -1 : 0;
}

/* ---- checking a saved plan --------------------------------------------- */

/*
 * A saved plan is checked whole before any of it is used: every field that
 * apply or gpc_plan_print reads must be there with its type, every string
 * must fit where it goes, and every number must be in its range.  (The
 * checksum only says that the file is as some gpuctl wrote it: anyone can
 * recompute it.)  The first fault found is reported with its JSON path,
 * e.g. "p.json: chosen.gpu.count: 1e+20 is out of range (a whole number
 * 0..65535); make the plan again".
 */
#define PLAN_USD_HR_MAX (GPC_CATALOG_PRICE_MAX * GPC_SPEC_NODES_MAX) /* a cluster's */
#define PLAN_USD_TOTAL_MAX (PLAN_USD_HR_MAX * (double)(GPC_SPEC_DURATION_MAX_S / 3600))
#define PLAN_ROWS_MAX 4294967295.0      /* catalog rows */
#define PLAN_CANDIDATES_MAX (2 * PLAN_ROWS_MAX) /* a row bought two ways */
#define PLAN_TFLOPS_MAX 1e9             /* dense TFLOPS of one GPU */

typedef struct pchk {
    const char *file;
    gpc_error *err;
    int rc;
} pchk;

enum { P_INT = 1, P_NULL = 2, P_OPT = 4 };

static int pfail(pchk *c, const char *at, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int pfail(pchk *c, const char *at, const char *k, const char *fmt, ...)
{
    if (c->rc)
        return c->rc;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return c->rc = gpc_fail(c->err, GPC_ERR_USAGE, "%s: %s%s%s: %s; make the plan again",
                            c->file, at, *at && k ? "." : "", k ? k : "", what);
}

/* o[k]: NULL when absent (and P_OPT) or null (and P_NULL), without a fault. */
static const cJSON *pget(pchk *c, const cJSON *o, const char *at, const char *k, int flags,
                         cJSON_bool (*is)(const cJSON *), const char *what)
{
    if (c->rc)
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if ((!v && (flags & P_OPT)) || (cJSON_IsNull(v) && (flags & P_NULL)))
        return NULL;
    if (!is(v)) {
        const char *null = flags & P_NULL ? " or null" : "";
        if (v)
            pfail(c, at, k, "not %s%s", what, null);
        else
            pfail(c, at, k, "missing (expected %s%s)", what, null);
        return NULL;
    }
    return v;
}

static const cJSON *pobj(pchk *c, const cJSON *o, const char *at, const char *k, int flags)
{
    return pget(c, o, at, k, flags, cJSON_IsObject, "an object");
}

static const cJSON *parr(pchk *c, const cJSON *o, const char *at, const char *k, int max)
{
    const cJSON *a = pget(c, o, at, k, 0, cJSON_IsArray, "an array");
    if (a && cJSON_GetArraySize(a) > max)
        pfail(c, at, k, "more than %d entries", max);
    return a;
}

/* A string of at most `max` bytes (0: any length); NULL after a fault. */
static const char *pstr(pchk *c, const cJSON *o, const char *at, const char *k, size_t max)
{
    const cJSON *v = pget(c, o, at, k, 0, cJSON_IsString, "a string");
    if (v && max && strlen(v->valuestring) > max) {
        pfail(c, at, k, "longer than %zu bytes", max);
        return NULL;
    }
    return v ? v->valuestring : NULL;
}

/* An optional string of 1..max bytes: absent is no fault. */
static void pstr_opt(pchk *c, const cJSON *o, const char *at, const char *k, size_t max)
{
    const cJSON *v = pget(c, o, at, k, P_OPT, cJSON_IsString, "a string");
    if (v && !v->valuestring[0])
        pfail(c, at, k, "empty (leave it out when there is none)");
    else if (v && strlen(v->valuestring) > max)
        pfail(c, at, k, "longer than %zu bytes", max);
}

/* One of names[] (NULL-terminated): its index, or -1 after a fault. */
static int penum(pchk *c, const cJSON *o, const char *at, const char *k,
                 const char *const *names)
{
    char what[160] = "one of ";
    for (int i = 0; names[i]; i++)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", i ? ", " : "",
                 names[i]);
    const cJSON *v = pget(c, o, at, k, 0, cJSON_IsString, what);
    for (int i = 0; v && names[i]; i++)
        if (strcmp(v->valuestring, names[i]) == 0)
            return i;
    if (v)
        pfail(c, at, k, "'%.40s' is not %s", v->valuestring, what);
    return -1;
}

static void pbool(pchk *c, const cJSON *o, const char *at, const char *k, int flags)
{
    pget(c, o, at, k, flags, cJSON_IsBool, "true or false");
}

/* The number v (at.k) in [lo, hi], a whole one with P_INT; -1 after a fault. */
static double pval(pchk *c, const cJSON *v, const char *at, const char *k, double lo,
                   double hi, int flags)
{
    double x = v->valuedouble;
    if (!(x >= lo && x <= hi)) {
        pfail(c, at, k, "%.17g is out of range (%s %.15g..%.15g)", x,
              flags & P_INT ? "a whole number" : "a number", lo, hi);
        return -1;
    }
    if ((flags & P_INT) && x != floor(x)) {
        pfail(c, at, k, "%.17g is not a whole number", x);
        return -1;
    }
    return x;
}

/* A number o[k] as pval; -1 when absent or null as flags allow. */
static double pnum(pchk *c, const cJSON *o, const char *at, const char *k, double lo,
                   double hi, int flags)
{
    const cJSON *v = pget(c, o, at, k, flags, cJSON_IsNumber, "a number");
    return v ? pval(c, v, at, k, lo, hi, flags) : -1;
}

static const char *const purchases[] = {"on-demand", "spot", NULL};

/* A candidate (gpc_candidate_json): chosen and fallbacks fit, lost ones
 * may lack prices. */
static void check_candidate(pchk *c, const cJSON *o, const char *at, int lost)
{
    static const char *const fabrics[] = {"unknown", "none", "efa", "infiniband", "erdma",
                                          NULL};
    const gpc_offer *of = NULL; /* for the sizes of its strings */
    pstr(c, o, at, "provider", sizeof(of->provider) - 1);
    pstr(c, o, at, "instance_type", sizeof(of->instance_type) - 1);
    pstr(c, o, at, "region", sizeof(of->region) - 1);
    pstr_opt(c, o, at, "zone", sizeof(of->zone) - 1);
    char sub[64];
    snprintf(sub, sizeof(sub), "%s.gpu", at);
    const cJSON *gpu = pobj(c, o, at, "gpu", 0);
    pstr(c, gpu, sub, "model", sizeof(of->gpu_model) - 1);
    pnum(c, gpu, sub, "count", 0, GPC_CATALOG_GPU_COUNT_MAX, P_INT);
    pnum(c, gpu, sub, "memory_gib", 0, GPC_CATALOG_GIB_MAX, 0);
    pnum(c, gpu, sub, "tflops_dense", 0, PLAN_TFLOPS_MAX, P_NULL);
    pnum(c, o, at, "vcpus", 0, GPC_CATALOG_VCPUS_MAX, 0);
    pnum(c, o, at, "memory_gib", 0, GPC_CATALOG_GIB_MAX, 0);
    snprintf(sub, sizeof(sub), "%s.interconnect", at);
    const cJSON *ic = pobj(c, o, at, "interconnect", 0);
    penum(c, ic, sub, "fabric", fabrics);
    pnum(c, ic, sub, "gbps", 0, GPC_CATALOG_GBPS_MAX, P_NULL);
    penum(c, o, at, "purchase", purchases);
    penum(c, o, at, "head_purchase", purchases);
    snprintf(sub, sizeof(sub), "%s.price", at);
    const cJSON *pr = pobj(c, o, at, "price", 0);
    int fit = lost ? P_NULL : 0;
    pnum(c, pr, sub, "node_usd_hr", 0, GPC_CATALOG_PRICE_MAX, fit);
    pnum(c, pr, sub, "head_usd_hr", 0, GPC_CATALOG_PRICE_MAX, fit);
    pnum(c, pr, sub, "cluster_usd_hr", 0, PLAN_USD_HR_MAX, fit);
    pnum(c, pr, sub, "cluster_on_demand_usd_hr", 0, PLAN_USD_HR_MAX, P_NULL);
    pnum(c, pr, sub, "usd_per_tflops_hr", 0, PLAN_USD_HR_MAX, P_NULL);
    pnum(c, pr, sub, "projected_total_usd", 0, PLAN_USD_TOTAL_MAX, P_NULL);
    pnum(c, pr, sub, "node_cny_hr", 0, GPC_CATALOG_PRICE_MAX, P_NULL | P_OPT);
    pnum(c, pr, sub, "usd_per_cny", 0, GPC_CATALOG_PRICE_MAX, P_OPT);
    if (lost)
        pstr(c, o, at, "why", 0);
}

static void check_candidates(pchk *c, const cJSON *d, const char *k, int max, int lost)
{
    const cJSON *a = parr(c, d, "", k, max);
    int i = 0;
    for (const cJSON *it = a ? a->child : NULL; it && !c->rc; it = it->next, i++) {
        char at[32];
        snprintf(at, sizeof(at), "%s[%d]", k, i);
        if (!cJSON_IsObject(it))
            pfail(c, at, NULL, "not an object");
        else
            check_candidate(c, it, at, lost);
    }
}

/* Everything of the document but what gpc_plan_read checks itself (kind,
 * format, checksum, spec, state and action). */
static int check_doc(const char *file, const cJSON *d, gpc_error *err)
{
    static const char *const resources[] = {"cluster", "node", "job", NULL};
    static const char *const checks[] = {"spot.max_price", "budget.max_hourly",
                                         "budget.max_total", NULL};
    pchk ck = {.file = file, .err = err}, *c = &ck;
    pstr(c, d, "", "cluster", 0);
    const cJSON *cat = pobj(c, d, "", "catalog", 0);
    pstr(c, cat, "catalog", "origin", 0);
    pnum(c, cat, "catalog", "rows", 0, PLAN_ROWS_MAX, P_INT);
    pbool(c, cJSON_GetObjectItemCaseSensitive(d, "state"), "state", "cluster_exists", 0);
    const cJSON *ch = parr(c, d, "", "changes", INT_MAX);
    int i = 0;
    for (const cJSON *it = ch ? ch->child : NULL; it && !c->rc; it = it->next, i++) {
        char at[32];
        snprintf(at, sizeof(at), "changes[%d]", i);
        if (!cJSON_IsObject(it)) {
            pfail(c, at, NULL, "not an object");
            break;
        }
        int res = penum(c, it, at, "resource", resources), node = res == 1;
        const char *act = gpc_json_str(it, "action");
        int del = act && strcmp(act, "delete") == 0;
        pstr(c, it, at, "name", 0);
        pstr(c, it, at, res == 2 ? "changed" : "provider", 0);
        if (node && del) { /* a node a replacement deletes */
            pnum(c, it, at, "rank", 0, GPC_SPEC_NODES_MAX - 1, P_INT);
            pstr(c, it, at, "provider_id", 0);
        } else if (node) {
            pnum(c, it, at, "rank", 0, GPC_SPEC_NODES_MAX - 1, P_INT);
            pstr(c, it, at, "instance_type", 0);
            pstr(c, it, at, "region", 0);
            pstr_opt(c, it, at, "zone", sizeof(((gpc_offer *)0)->zone) - 1);
            penum(c, it, at, "purchase", purchases);
            pnum(c, it, at, "price_usd_hr", 0, GPC_CATALOG_PRICE_MAX, 0);
        }
    }
    const cJSON *chosen = pobj(c, d, "", "chosen", P_NULL);
    if (chosen)
        check_candidate(c, chosen, "chosen", 0);
    check_candidates(c, d, "fallbacks", GPC_PLAN_OFFERS_MAX - 1, 0);
    pnum(c, d, "", "feasible", 0, PLAN_CANDIDATES_MAX, P_INT);
    check_candidates(c, d, "lost", LOST_LISTED, 1);
    const cJSON *by = pobj(c, d, "", "lost_by", 0);
    for (const cJSON *it = by ? by->child : NULL; it && !c->rc; it = it->next) {
        if (!cJSON_IsNumber(it))
            pfail(c, "lost_by", it->string, "not a number");
        else
            pval(c, it, "lost_by", it->string, 1, PLAN_CANDIDATES_MAX, P_INT);
    }
    const cJSON *cost = pobj(c, d, "", "cost", 0);
    pnum(c, cost, "cost", "node_usd_hr", 0, GPC_CATALOG_PRICE_MAX, P_NULL);
    pnum(c, cost, "cost", "head_usd_hr", 0, GPC_CATALOG_PRICE_MAX, P_NULL);
    pnum(c, cost, "cost", "cluster_usd_hr", 0, PLAN_USD_HR_MAX, P_NULL);
    pnum(c, cost, "cost", "cluster_on_demand_usd_hr", 0, PLAN_USD_HR_MAX, P_NULL);
    pnum(c, cost, "cost", "spot_saving_usd_hr", 0, PLAN_USD_HR_MAX, P_NULL);
    pnum(c, cost, "cost", "spot_saving_pct", 0, 100, P_NULL);
    pnum(c, cost, "cost", "max_duration_s", 1, (double)GPC_SPEC_DURATION_MAX_S,
         P_INT | P_NULL);
    pnum(c, cost, "cost", "projected_total_usd", 0, PLAN_USD_TOTAL_MAX, P_NULL);
    /* the nodes' end (plan.c ends_json); absent from plans of earlier
     * releases */
    static const char *const whys[] = {"none", "max_duration", "default", "budget", NULL};
    const cJSON *ends = pobj(c, d, "", "ends", P_OPT | P_NULL);
    if (ends) {
        pnum(c, ends, "ends", "end_s", 1, 1e12, P_INT | P_NULL);
        penum(c, ends, "ends", "why", whys);
        pnum(c, ends, "ends", "max_duration_s", 1, (double)GPC_SPEC_DURATION_MAX_S,
             P_INT | P_NULL);
        pnum(c, ends, "ends", "budget_s", 1, 1e12, P_INT | P_NULL);
        pstr(c, ends, "ends", "reason", 0);
    }
    const cJSON *bud = parr(c, d, "", "budget", 3);
    i = 0;
    for (const cJSON *it = bud ? bud->child : NULL; it && !c->rc; it = it->next, i++) {
        char at[32];
        snprintf(at, sizeof(at), "budget[%d]", i);
        if (!cJSON_IsObject(it)) {
            pfail(c, at, NULL, "not an object");
            break;
        }
        penum(c, it, at, "check", checks);
        pnum(c, it, at, "limit", 0, DBL_MAX, P_NULL);
        pnum(c, it, at, "value", 0, PLAN_USD_TOTAL_MAX, P_NULL);
        pstr(c, it, at, "unit", 0);
        pbool(c, it, at, "ok", P_NULL);
    }
    const cJSON *notes = parr(c, d, "", "notes", INT_MAX);
    i = 0;
    for (const cJSON *it = notes ? notes->child : NULL; it && !c->rc; it = it->next, i++) {
        char at[32];
        snprintf(at, sizeof(at), "notes[%d]", i);
        if (!cJSON_IsString(it))
            pfail(c, at, NULL, "not a string");
    }
    return c->rc;
}

int gpc_plan_read(const char *path, gpc_plan *out, gpc_spec **spec, char **spec_path,
                  gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    *spec = NULL;
    *spec_path = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = gpc_read_file(path, GPC_BUF_FILE_MAX * 4, &text, &len, err);
    if (rc)
        return rc;
    /* the whole file is the document: nothing may follow it */
    cJSON *d = cJSON_ParseWithLengthOpts(text, len + 1, NULL, 1);
    free(text);
    const char *kind = d ? gpc_json_str(d, "kind") : NULL;
    if (!d || !kind || strcmp(kind, PLAN_KIND) != 0) {
        cJSON_Delete(d);
        return gpc_fail(err, GPC_ERR_USAGE, "%s: not a gpuctl plan file (a plan comes from "
                        "gpuctl plan -f SPEC --out PLANFILE; to apply a spec, use apply -f %s)",
                        path, path);
    }
    out->doc = d;
    if (gpc_json_num(d, "plan_format", 0) != PLAN_FORMAT) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: plan format %g is not %d; make the plan again "
                      "with this gpuctl (%s)", path, gpc_json_num(d, "plan_format", 0), PLAN_FORMAT,
                      GPUCTL_VERSION);
        goto fail;
    }
    char sum[72];
    const char *have = gpc_json_str(d, "checksum");
    if (!have || gpc_plan_doc_checksum(d, sum) != 0 || strcmp(have, sum) != 0) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: the plan file was changed after gpuctl wrote "
                      "it (its checksum does not match); make the plan again", path);
        goto fail;
    }
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(d, "spec");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(d, "state");
    const char *yaml = sj ? gpc_json_str(sj, "yaml") : NULL, *hash = sj ? gpc_json_str(sj, "sha256") : NULL;
    const char *src = sj ? gpc_json_str(sj, "source") : NULL, *base = sj ? gpc_json_str(sj, "base_dir") : NULL;
    const char *fp = st ? gpc_json_str(st, "fingerprint") : NULL, *action = gpc_json_str(d, "action");
    if (!yaml || !hash || !src || !base || !fp || !action || strlen(hash) != 64 ||
        strlen(fp) != 64) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: plan file is incomplete (spec, state or action "
                      "missing); make it again", path);
        goto fail;
    }
    if ((rc = check_doc(path, d, err)))
        goto fail;
    rc = gpc_spec_load_string(src, base, yaml, strlen(yaml), spec, err);
    if (!rc)
        rc = gpc_spec_hash(*spec, out->spec_hash, err);
    if (!rc && strcmp(out->spec_hash, hash) != 0) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: the embedded spec does not match its recorded "
                      "hash (edited by hand?); make the plan again", path);
        goto fail;
    }
    if (rc)
        goto fail;
    memcpy(out->fingerprint, fp, 65);
    if (strcmp(action, "create") == 0)
        out->action = GPC_PLAN_CREATE;
    else if (strcmp(action, "resume") == 0)
        out->action = GPC_PLAN_RESUME;
    else if (strcmp(action, "none") == 0)
        out->action = GPC_PLAN_NONE;
    else if (strcmp(action, "rerun") == 0 && gpc_json_str(d, "rerun")) {
        out->action = GPC_PLAN_RERUN;
        snprintf(out->rerun, sizeof(out->rerun), "%s", gpc_json_str(d, "rerun"));
    } else if (strcmp(action, "replace") == 0 && gpc_json_str(d, "replace")) {
        out->action = GPC_PLAN_REPLACE;
        snprintf(out->rerun, sizeof(out->rerun), "%s", gpc_json_str(d, "replace"));
    } else if (strcmp(action, "resize") == 0 && gpc_json_str(d, "resize")) {
        out->action = GPC_PLAN_RESIZE;
        snprintf(out->rerun, sizeof(out->rerun), "%s", gpc_json_str(d, "resize"));
    }
    else {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: unknown plan action '%.32s'; make the plan again",
                      path, action);
        goto fail;
    }
    out->cluster_exists = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "cluster_exists"));
    const cJSON *changes = cJSON_GetObjectItemCaseSensitive(d, "changes");
    for (const cJSON *ch = cJSON_IsArray(changes) ? changes->child : NULL; ch; ch = ch->next) {
        const char *res = gpc_json_str(ch, "resource"), *act = gpc_json_str(ch, "action");
        int node = res && strcmp(res, "node") == 0, del = act && strcmp(act, "delete") == 0;
        out->n_create += node && !del;
        out->n_remove += node && del;
    }
    const cJSON *chosen = cJSON_GetObjectItemCaseSensitive(d, "chosen");
    const cJSON *fb = cJSON_GetObjectItemCaseSensitive(d, "fallbacks");
    size_t n = (cJSON_IsObject(chosen) ? 1 : 0) + (size_t)cJSON_GetArraySize(fb);
    out->offers = calloc(n ? n : 1, sizeof(*out->offers));
    if (!out->offers) {
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (out->action != GPC_PLAN_NONE && !cJSON_IsObject(chosen)) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s: the plan has changes but no chosen offer; make "
                      "the plan again", path);
        goto fail;
    }
    const cJSON *it = cJSON_IsObject(chosen) ? chosen : NULL;
    const cJSON *next = cJSON_IsArray(fb) ? fb->child : NULL;
    while (it) {
        gpc_plan_offer *po = &out->offers[out->n_offers];
        if (offer_from_json(it, 0, &po->worker) || offer_from_json(it, 1, &po->head)) {
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s: an offer in the plan is incomplete; make "
                          "the plan again", path);
            goto fail;
        }
        const cJSON *price = cJSON_GetObjectItemCaseSensitive(it, "price");
        po->price_cluster = gpc_json_num(price, "cluster_usd_hr", 0);
        out->n_offers++;
        it = next;
        next = next ? next->next : NULL;
    }
    const char *sp = gpc_json_str(sj, "path");
    *spec_path = strdup(sp && *sp ? sp : src);
    if (!*spec_path) {
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        goto fail;
    }
    return 0;
fail:
    gpc_spec_free(*spec);
    *spec = NULL;
    free(*spec_path);
    *spec_path = NULL;
    gpc_plan_free(out);
    return rc;
}

