/* plan.c - see plan.h */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/util.h"
#include "gpuctl/data.h"
#include "gpuctl/plan.h"
#include "lifecycle.h"
#include "plan_int.h"


/* ---- small JSON helpers ---------------------------------------------- */

/* A number, or null when `v` is negative (our "unknown"). */
static cJSON *num_or_null(double v)
{
    return v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

/* Round to 6 decimals so that documents do not carry float noise
 * (0.1 + 0.2 style); prices in the catalog have at most 6. */
static double r6(double v)
{
    return v < 0 ? v : round(v * 1e6) / 1e6;
}

int gpc_price_decimals(double v, int min_decimals)
{
    int d = min_decimals < 0 ? 0 : min_decimals > 6 ? 6 : min_decimals;
    if (!(v > 0) || !isfinite(v))
        return d;
    double full = round(v * 1e6);
    for (; d < 6; d++) {
        double s = pow(10, d);
        if (round(v * s) >= 100 || round(v * s) * pow(10, 6 - d) == full)
            break;
    }
    return d;
}

double gpc_saving_pct_round(double pct, int min_decimals, int *decimals)
{
    int d = min_decimals < 0 ? 0 : min_decimals > 6 ? 6 : min_decimals;
    double v = pct;
    for (;; d++) {
        double s = pow(10, d);
        v = round(pct * s) / s;
        int inside = pct > 0 && pct < 100, below = pct < 0;
        if (!((inside && (v <= 0 || v >= 100)) || (below && v >= 0)))
            break;
        if (d == 6) { /* into the range: 99.9999999 -> 99.999999 */
            v = (inside && pct < 50 ? ceil(pct * s) : floor(pct * s)) / s;
            break;
        }
    }
    if (decimals)
        *decimals = d;
    return v + 0.0; /* no -0 */
}

static const char *purchase_name(int spot)
{
    return spot ? "spot" : "on-demand";
}

/* ---- rows and candidates as JSON --------------------------------------- */

static cJSON *gpu_json(const gpc_catalog_row *r)
{
    cJSON *g = cJSON_CreateObject();
    cJSON_AddStringToObject(g, "model", r->gpu_model);
    cJSON_AddNumberToObject(g, "count", r->gpu_count);
    cJSON_AddNumberToObject(g, "memory_gib", r->gpu_mem_gib);
    double tf = r->gpu ? gpc_gpu_tflops(r->gpu) : 0;
    cJSON_AddItemToObject(g, "tflops_dense", tf > 0 ? cJSON_CreateNumber(tf) : cJSON_CreateNull());
    return g;
}

static void add_hardware(cJSON *o, const gpc_catalog_row *r)
{
    cJSON_AddStringToObject(o, "provider", r->provider);
    cJSON_AddStringToObject(o, "instance_type", r->instance_type);
    cJSON_AddStringToObject(o, "region", r->region);
    if (r->zone && r->zone[0]) /* only an offer a provider listed itself */
        cJSON_AddStringToObject(o, "zone", r->zone);
    cJSON_AddItemToObject(o, "gpu", gpu_json(r));
    cJSON_AddNumberToObject(o, "vcpus", r->vcpus);
    cJSON_AddNumberToObject(o, "memory_gib", r->mem_gib);
    cJSON *ic = cJSON_AddObjectToObject(o, "interconnect");
    cJSON_AddStringToObject(ic, "fabric", gpc_fabric_name(r->fabric));
    cJSON_AddItemToObject(ic, "gbps", r->fabric_gbps > 0 ? cJSON_CreateNumber(r->fabric_gbps)
                                                         : cJSON_CreateNull());
}

/* Currency facts of a row's source: the rate when prices were CNY. */
static double cny_rate(const gpc_catalog *cat, const gpc_catalog_row *r)
{
    const gpc_catalog_source *src = cat ? gpc_catalog_source_get(cat, r->source) : NULL;
    if (src && strcmp(src->currency, "CNY") == 0 && src->usd_per_unit > 0)
        return src->usd_per_unit;
    return 0;
}

cJSON *gpc_row_json(const gpc_catalog *cat, const gpc_catalog_row *r)
{
    cJSON *o = cJSON_CreateObject();
    add_hardware(o, r);
    cJSON *p = cJSON_AddObjectToObject(o, "price");
    cJSON_AddItemToObject(p, "on_demand_usd_hr", num_or_null(r6(r->price_ondemand)));
    cJSON_AddItemToObject(p, "spot_usd_hr", num_or_null(r6(r->price_spot)));
    double rate = cny_rate(cat, r);
    if (rate > 0) {
        cJSON_AddItemToObject(p, "on_demand_cny_hr", num_or_null(r->price_ondemand_cny));
        cJSON_AddItemToObject(p, "spot_cny_hr", num_or_null(r->price_spot_cny));
        cJSON_AddNumberToObject(p, "usd_per_cny", rate);
    }
    double saving = r->price_ondemand > 0 && r->price_spot >= 0
                  ? 100.0 * (1.0 - r->price_spot / r->price_ondemand) : -1;
    cJSON_AddItemToObject(o, "spot_saving_pct",
                          num_or_null(saving < 0 ? -1 : gpc_saving_pct_round(saving, 1, NULL)));
    double tf = r->gpu ? gpc_gpu_tflops(r->gpu) * r->gpu_count : 0;
    double ppt = tf > 0 && r->price_ondemand >= 0 ? r->price_ondemand / tf : -1;
    cJSON_AddItemToObject(o, "on_demand_usd_per_tflops_hr", num_or_null(r6(ppt)));
    cJSON_AddStringToObject(o, "source", r->source);
    return o;
}

cJSON *gpc_candidate_json(const gpc_catalog *cat, const gpc_candidate *c)
{
    const gpc_catalog_row *r = c->row;
    cJSON *o = cJSON_CreateObject();
    add_hardware(o, r);
    cJSON_AddStringToObject(o, "purchase", purchase_name(c->spot));
    cJSON_AddStringToObject(o, "head_purchase", purchase_name(c->head_spot));
    cJSON *p = cJSON_AddObjectToObject(o, "price");
    cJSON_AddItemToObject(p, "node_usd_hr", num_or_null(r6(c->price_node)));
    cJSON_AddItemToObject(p, "head_usd_hr", num_or_null(r6(c->price_head)));
    cJSON_AddItemToObject(p, "cluster_usd_hr", num_or_null(r6(c->price_cluster)));
    cJSON_AddItemToObject(p, "cluster_on_demand_usd_hr", num_or_null(r6(c->price_cluster_ondemand)));
    cJSON_AddItemToObject(p, "usd_per_tflops_hr",
                          c->usd_per_tflops > 0 ? cJSON_CreateNumber(r6(c->usd_per_tflops))
                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(p, "projected_total_usd",
                          c->projected_total >= 0 && c->price_cluster >= 0 &&
                          (c->projected_total > 0 || c->price_cluster == 0)
                          ? cJSON_CreateNumber(r6(c->projected_total)) : cJSON_CreateNull());
    double rate = cny_rate(cat, r);
    if (rate > 0) {
        double cny = c->spot ? r->price_spot_cny : r->price_ondemand_cny;
        cJSON_AddItemToObject(p, "node_cny_hr", num_or_null(cny));
        cJSON_AddNumberToObject(p, "usd_per_cny", rate);
    }
    cJSON_AddStringToObject(o, "source", r->source);
    cJSON_AddStringToObject(o, "verdict", gpc_verdict_name(c->verdict));
    cJSON_AddStringToObject(o, "why", c->why);
    return o;
}

/* ---- offers a provider lists itself (local) ---------------------------- */

/* Rows made from a provider's own offers, and the strings they point at. */
typedef struct own_rows {
    gpc_catalog_row *rows;
    size_t n;
    gpc_offer *offers;   /* the strings of rows[] point into these */
    size_t n_offers;
    cJSON *notes;        /* array of strings: why a provider had nothing */
} own_rows;

/*
 * "NVIDIA A100-SXM4-80GB" -> "A100-SXM4-80GB", "Tesla T4" -> "T4": the
 * catalog's family naming, which offer selection matches on.
 */
static void model_key(char *m)
{
    static const char *const prefixes[] = {"NVIDIA ", "Tesla ", NULL};
    for (int again = 1; again; ) {
        again = 0;
        for (size_t i = 0; prefixes[i]; i++) {
            size_t l = strlen(prefixes[i]);
            if (strncmp(m, prefixes[i], l) == 0) {
                memmove(m, m + l, strlen(m + l) + 1);
                again = 1;
            }
        }
    }
    for (char *p = m; *p; p++)
        if (*p == ' ')
            *p = '-';
}

/*
 * The catalog's entry for a GPU a provider detected: the same family
 * ("H200" for "H200-141GB-SXM") with the memory within 5 % (nvidia-smi
 * reports 140.4 GiB for the H200 that datasheets call 141GB).  NULL when
 * none or several differ.
 */
static const gpc_gpu_info *catalog_gpu_for(const gpc_catalog *cat, const char *model,
                                           double mem_gib)
{
    const gpc_gpu_info *hit = NULL;
    size_t ml = strlen(model);
    for (size_t i = 0; cat && i < cat->n_gpus; i++) {
        const gpc_gpu_info *g = &cat->gpus[i];
        size_t fl = strcspn(g->model, "-");
        if (fl != ml || strncasecmp(g->model, model, ml) != 0)
            continue;
        if (g->memory_gib <= 0 || fabs(mem_gib - g->memory_gib) > 0.05 * g->memory_gib)
            continue;
        if (hit && hit->memory_gib != g->memory_gib)
            return NULL;
        hit = hit ? hit : g;
    }
    return hit;
}

/*
 * plan --live: ask each provider that has live prices for the current spot
 * price of the catalog rows that fit (or lost only on price), put them in
 * place of the catalog's, and let the caller select again.  A note per
 * provider says how many rows changed.
 */
static int rows_wanted(const gpc_catalog *cat, const gpc_candidate *cs, size_t n, char *want)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const gpc_candidate *cd = &cs[i];
        if (cd->verdict != GPC_FIT && cd->verdict != GPC_LOST_MAX_PRICE &&
            cd->verdict != GPC_LOST_BUDGET_HOURLY && cd->verdict != GPC_LOST_BUDGET_TOTAL)
            continue;
        if (cd->row < cat->rows || cd->row >= cat->rows + cat->n_rows)
            continue; /* a provider's own row: already live */
        want[cd->row - cat->rows] = 1;
        any = 1;
    }
    return any;
}

static int live_prices(gpc_session *s, gpc_catalog *cat, const gpc_selection *sel,
                       cJSON *notes, gpc_error *err)
{
    char *want = calloc(cat->n_rows ? cat->n_rows : 1, 1);
    gpc_offer *o = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*o));
    size_t *row = calloc(cat->n_rows ? cat->n_rows : 1, sizeof(*row));
    int rc = want && o && row ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (!rc) {
        rows_wanted(cat, sel->fit, sel->n_fit, want);
        rows_wanted(cat, sel->lost, sel->n_lost, want);
    }
    for (size_t pi = 0; !rc && gpc_providers[pi]; pi++) {
        const gpc_provider *p = gpc_providers[pi];
        size_t n = 0;
        if (p->caps & GPC_CAP_PLAN_ONLY)
            continue; /* the note on providers not built in covers it */
        for (size_t r = 0; r < cat->n_rows; r++) {
            const gpc_catalog_row *cr = &cat->rows[r];
            if (!want[r] || strcasecmp(cr->provider, p->name) != 0 || cr->price_spot < 0 ||
                !cr->region[0])
                continue;
            memset(&o[n], 0, sizeof(o[n]));
            snprintf(o[n].provider, sizeof(o[n].provider), "%s", p->name);
            snprintf(o[n].instance_type, sizeof(o[n].instance_type), "%s", cr->instance_type);
            snprintf(o[n].region, sizeof(o[n].region), "%s", cr->region);
            o[n].spot = 1;
            o[n].price_hourly = cr->price_spot;
            row[n++] = r;
        }
        if (!n)
            continue;
        char note[256];
        if (!p->live_prices) {
            snprintf(note, sizeof(note), "--live: %s has no live prices; its catalog prices "
                     "are used", p->name);
            cJSON_AddItemToArray(notes, cJSON_CreateString(note));
            continue;
        }
        size_t updated = 0;
        gpc_open_provider op;
        rc = gpc_session_provider(s, p->name, &op, err);
        if (!rc) {
            gpc_error e;
            gpc_error_clear(&e);
            rc = op.prov->live_prices(op.ctx, o, n, &updated, &e);
            if (rc)
                gpc_error_wrap(err, &e, "--live");
        }
        /* a price out of the catalog's range (an answer of 1e300, inf or
         * nan) is the provider's error, not a price to plan with */
        for (size_t k = 0; !rc && k < n; k++)
            rc = gpc_catalog_set_price(cat, &cat->rows[row[k]], -1, o[k].price_hourly, NULL,
                                       err);
        if (!rc) {
            snprintf(note, sizeof(note), "--live: %zu of %zu %s spot price(s) are live from "
                     "the provider's API, the rest from the catalog", updated, n, p->name);
            cJSON_AddItemToArray(notes, cJSON_CreateString(note));
        }
    }
    free(want);
    free(o);
    free(row);
    return rc;
}

static int collect_own(gpc_session *s, const gpc_spec *spec, const gpc_catalog *cat,
                       const char *const *names, size_t n_names, own_rows *own,
                       gpc_error *err)
{
    memset(own, 0, sizeof(*own));
    own->notes = cJSON_CreateArray();
    for (size_t i = 0; i < n_names; i++) {
        const gpc_provider *p = gpc_provider_find(names[i]);
        if (!p || !(p->caps & GPC_CAP_OWN_OFFERS))
            continue;
        gpc_open_provider op;
        int rc = gpc_session_provider(s, p->name, &op, err);
        if (rc)
            return rc;
        gpc_offer *o = NULL;
        size_t n = 0;
        gpc_error e;
        gpc_error_clear(&e);
        rc = op.prov->list_offers(op.ctx, spec, &o, &n, &e);
        if (rc == GPC_ERR_CAPACITY || rc == GPC_ERR_BUDGET || (!rc && n == 0)) {
            cJSON_AddItemToArray(own->notes, cJSON_CreateString(
                rc ? e.msg : "no offer from this provider"));
            free(o);
            continue;
        }
        if (rc) {
            free(o);
            return gpc_error_wrap(err, &e, NULL);
        }
        gpc_offer *all = realloc(own->offers, (own->n_offers + n) * sizeof(*all));
        if (!all) {
            free(o);
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        }
        own->offers = all;
        memcpy(all + own->n_offers, o, n * sizeof(*o));
        own->n_offers += n;
        free(o);
    }
    own->rows = calloc(own->n_offers ? own->n_offers : 1, sizeof(*own->rows));
    if (!own->rows)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < own->n_offers; i++) {
        gpc_offer *o = &own->offers[i];
        gpc_catalog_row *r = &own->rows[i];
        model_key(o->gpu_model);
        /* Name and size it as the catalog does, so that GPU requests match
         * it the same way, and it has TFLOPS figures. */
        const gpc_gpu_info *g = o->gpu_count ? catalog_gpu_for(cat, o->gpu_model, o->gpu_mem_gib)
                                             : NULL;
        if (g) {
            snprintf(o->gpu_model, sizeof(o->gpu_model), "%s", g->model);
            o->gpu_mem_gib = g->memory_gib;
        }
        r->gpu = g;
        r->provider = o->provider;
        r->instance_type = o->instance_type;
        r->region = o->region;
        r->zone = o->zone;
        r->gpu_model = o->gpu_model;
        r->gpu_count = o->gpu_count;
        r->gpu_mem_gib = o->gpu_mem_gib;
        r->vcpus = o->vcpus;
        r->mem_gib = o->mem_gib;
        r->fabric = GPC_FABRIC_UNKNOWN; /* "" or a name gpuctl does not know */
        for (int f = GPC_FABRIC_NONE; f <= GPC_FABRIC_ERDMA; f++)
            if (strcmp(o->fabric, gpc_fabric_name((gpc_fabric)f)) == 0)
                r->fabric = (gpc_fabric)f;
        r->price_ondemand = o->spot ? -1 : o->price_hourly;
        r->price_spot = o->spot ? o->price_hourly : -1;
        r->price_ondemand_cny = -1;
        r->price_spot_cny = -1;
        r->source = "live";
        r->notes = "";
    }
    own->n = own->n_offers;
    return 0;
}

static void own_free(own_rows *own)
{
    free(own->rows);
    free(own->offers);
    cJSON_Delete(own->notes);
    memset(own, 0, sizeof(*own));
}

/*
 * The document's checksum: SHA-256 of its unformatted JSON without
 * "schema_version" and "checksum".  Not a signature (anyone can recompute
 * it): it makes `apply` refuse a plan edited by hand or damaged, as a
 * reviewed plan must be carried out as it was shown.
 */
int gpc_plan_doc_checksum(const cJSON *doc, char out[72])
{
    cJSON *copy = cJSON_Duplicate(doc, 1);
    if (!copy)
        return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "schema_version");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "checksum");
    char *text = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!text)
        return -1;
    char hex[65];
    gpc_sha256_hex(text, strlen(text), hex);
    free(text);
    snprintf(out, 72, "sha256:%s", hex);
    return 0;
}

/* ---- making a plan ----------------------------------------------------- */

static void fill_offer(gpc_offer *o, const gpc_catalog_row *r, int spot, double price)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->provider, sizeof(o->provider), "%s", r->provider);
    snprintf(o->instance_type, sizeof(o->instance_type), "%s", r->instance_type);
    snprintf(o->region, sizeof(o->region), "%s", r->region);
    snprintf(o->zone, sizeof(o->zone), "%s", r->zone ? r->zone : "");
    snprintf(o->gpu_model, sizeof(o->gpu_model), "%s", r->gpu_model);
    o->gpu_count = r->gpu_count;
    o->gpu_mem_gib = r->gpu_mem_gib;
    o->vcpus = r->vcpus;
    o->mem_gib = r->mem_gib;
    o->spot = spot;
    o->price_hourly = price;
    snprintf(o->fabric, sizeof(o->fabric), "%s",
             r->fabric == GPC_FABRIC_UNKNOWN ? "" : gpc_fabric_name(r->fabric));
}

static void iso_time(int64_t t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *budget_check(const char *name, double limit, double value, const char *unit)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "check", name);
    cJSON_AddItemToObject(b, "limit", limit > 0 ? cJSON_CreateNumber(limit) : cJSON_CreateNull());
    cJSON_AddItemToObject(b, "value", value >= 0 ? cJSON_CreateNumber(r6(value)) : cJSON_CreateNull());
    cJSON_AddStringToObject(b, "unit", unit);
    /* ok: null when the cap cannot be checked before running (max_total
     * without a lifecycle.max_duration to bound the run). */
    if (limit > 0 && value < 0)
        cJSON_AddNullToObject(b, "ok");
    else
        cJSON_AddBoolToObject(b, "ok", limit <= 0 || value <= limit + 1e-9);
    return b;
}

static cJSON *strs_json(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

/* The "changes" list: what apply would create. */
static cJSON *changes_json(const gpc_spec *spec, const gpc_plan *p, const gpc_node_rec *nodes,
                           size_t n_nodes)
{
    cJSON *a = cJSON_CreateArray();
    cJSON *job = p->action == GPC_PLAN_RERUN || p->action == GPC_PLAN_RESIZE
                     ? cJSON_CreateObject() : NULL;
    if (job) {
        cJSON_AddStringToObject(job, "action", "rerun");
        cJSON_AddStringToObject(job, "resource", "job");
        cJSON_AddStringToObject(job, "name", spec->name);
        cJSON_AddStringToObject(job, "changed", p->rerun);
        cJSON_AddItemToArray(a, job);
    }
    if (p->action == GPC_PLAN_NONE || p->action == GPC_PLAN_RERUN || !p->n_offers)
        return a;
    const gpc_plan_offer *o = &p->offers[0];
    int resize = p->action == GPC_PLAN_RESIZE;
    if (p->action == GPC_PLAN_REPLACE || resize) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "action", resize ? "resize" : "replace");
        cJSON_AddStringToObject(c, "resource", "cluster");
        cJSON_AddStringToObject(c, "name", spec->name);
        cJSON_AddStringToObject(c, "provider", o->worker.provider);
        cJSON_AddStringToObject(c, "changed", p->rerun);
        cJSON_AddItemToArray(a, c);
        /* every live node goes (a resize: those of the ranks no longer
         * wanted), with what it is running */
        for (size_t i = 0; i < n_nodes; i++) {
            const gpc_node_rec *nd = &nodes[i];
            if (!nd->provider_id[0] || (resize && nd->rank < spec->nodes))
                continue;
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "action", "delete");
            cJSON_AddStringToObject(d, "resource", "node");
            cJSON_AddStringToObject(d, "name", nd->name);
            cJSON_AddNumberToObject(d, "rank", nd->rank);
            cJSON_AddStringToObject(d, "provider", nd->provider);
            cJSON_AddStringToObject(d, "provider_id", nd->provider_id);
            cJSON_AddStringToObject(d, "instance_type", nd->instance_type);
            cJSON_AddStringToObject(d, "region", nd->region);
            cJSON_AddStringToObject(d, "phase", gpc_phase_name(nd->phase));
            cJSON_AddItemToArray(a, d);
        }
    }
    if (p->action == GPC_PLAN_CREATE) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "action", "create");
        cJSON_AddStringToObject(c, "resource", "cluster");
        cJSON_AddStringToObject(c, "name", spec->name);
        cJSON_AddStringToObject(c, "provider", o->worker.provider);
        cJSON_AddItemToArray(a, c);
    }
    for (uint32_t rank = 0; rank < spec->nodes; rank++) {
        if (p->action == GPC_PLAN_RESUME || resize) {
            int missing = 0, live = 0;
            for (size_t i = 0; i < n_nodes; i++) {
                missing |= nodes[i].rank == rank && !nodes[i].provider_id[0];
                live |= nodes[i].rank == rank && nodes[i].provider_id[0];
            }
            if (resize ? live : !missing)
                continue;
        }
        const gpc_offer *no = rank == 0 ? &o->head : &o->worker;
        char name[128];
        snprintf(name, sizeof(name), "%s-%u", spec->name, rank);
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "action", "create");
        cJSON_AddStringToObject(c, "resource", "node");
        cJSON_AddStringToObject(c, "name", name);
        cJSON_AddNumberToObject(c, "rank", rank);
        cJSON_AddStringToObject(c, "provider", no->provider);
        cJSON_AddStringToObject(c, "instance_type", no->instance_type);
        cJSON_AddStringToObject(c, "region", no->region);
        if (no->zone[0])
            cJSON_AddStringToObject(c, "zone", no->zone);
        cJSON_AddStringToObject(c, "purchase", purchase_name(no->spot));
        cJSON_AddNumberToObject(c, "price_usd_hr", r6(no->price_hourly));
        cJSON_AddItemToArray(a, c);
    }
    return a;
}

static const char *action_name(gpc_plan_action a)
{
    switch (a) {
    case GPC_PLAN_NONE: return "none";
    case GPC_PLAN_CREATE: return "create";
    case GPC_PLAN_RESUME: return "resume";
    case GPC_PLAN_RERUN: return "rerun";
    case GPC_PLAN_REPLACE: return "replace";
    case GPC_PLAN_RESIZE: return "resize";
    }
    return "none";
}

/* Build the document once selection and state are known. */
/* "72h", "1h30m", "42s": seconds as hours, minutes and seconds. */
static void fmt_span(char *buf, size_t size, uint64_t secs)
{
    unsigned long long h = secs / 3600, m = secs % 3600 / 60, sec = secs % 60;
    int n = 0;
    buf[0] = '\0';
    if (h)
        n += snprintf(buf + n, size - (size_t)n, "%lluh", h);
    if (m && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, "%llum", m);
    if ((sec || !secs) && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%llus", sec);
}

/* The nodes' end at the chosen offer's price (spec.h, gpc_spec_node_end):
 * "ends" of the plan document, or NULL without an offer. */
static cJSON *ends_json(const gpc_spec *spec, const gpc_candidate *best)
{
    static const char *const whys[] = {"none", "max_duration", "default", "budget"};
    if (!best)
        return cJSON_CreateNull();
    gpc_node_end e;
    gpc_spec_node_end(spec, best->price_cluster, &e);
    char md[48], bs[48], why[400];
    fmt_span(md, sizeof(md), e.max_duration_s);
    fmt_span(bs, sizeof(bs), e.budget_s);
    switch (e.why) {
    case GPC_END_MAX_DURATION:
        snprintf(why, sizeof(why), "max_duration %s (lifecycle.max_duration)", md);
        break;
    case GPC_END_DEFAULT:
        snprintf(why, sizeof(why), "max_duration %s (default: no lifecycle.max_duration, %s; "
                 "lifecycle.max_duration: none keeps nodes up)", md,
                 spec->budget.max_total > 0 ? "and budget.max_total gives no end at 0 USD/hour"
                                            : "no budget.max_total");
        break;
    case GPC_END_BUDGET:
        snprintf(why, sizeof(why), "budget.max_total %.2f USD spent at the cluster's %.4f "
                 "USD/hour, %s after boot%s%s%s", spec->budget.max_total, best->price_cluster,
                 bs, e.max_duration_s ? " (before lifecycle.max_duration " : "",
                 e.max_duration_s ? md : "", e.max_duration_s ? ")" : "");
        break;
    default:
        snprintf(why, sizeof(why), "none (lifecycle.max_duration: none): a hung job keeps "
                 "the nodes up until gpuctl destroy");
        break;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "end_s", e.end_s ? cJSON_CreateNumber((double)e.end_s)
                                              : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "why", whys[e.why]);
    cJSON_AddItemToObject(o, "max_duration_s", e.max_duration_s
                                                   ? cJSON_CreateNumber((double)e.max_duration_s)
                                                   : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "budget_s", e.budget_s ? cJSON_CreateNumber((double)e.budget_s)
                                                    : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "reason", why);
    return o;
}

static cJSON *plan_doc(const gpc_spec *spec, const gpc_plan_opts *po, const gpc_plan *p,
                       const gpc_catalog *cat, const gpc_selection *sel,
                       const gpc_offer_query *q, const gpc_node_rec *nodes, size_t n_nodes,
                       cJSON *notes)
{
    cJSON *d = cJSON_CreateObject();
    char now[32];
    iso_time(gpc_now(), now, sizeof(now));
    cJSON_AddStringToObject(d, "kind", PLAN_KIND);
    cJSON_AddNumberToObject(d, "plan_format", PLAN_FORMAT);
    cJSON_AddStringToObject(d, "gpuctl_version", GPUCTL_VERSION);
    cJSON_AddStringToObject(d, "created_at", now);
    cJSON_AddStringToObject(d, "cluster", spec->name);

    cJSON *sj = cJSON_AddObjectToObject(d, "spec");
    char *abs = NULL;
    if (po->spec_path && strcmp(po->spec_path, "-") != 0)
        gpc_realpath(po->spec_path, &abs, NULL);
    cJSON_AddStringToObject(sj, "source", spec->source ? spec->source : "");
    cJSON_AddStringToObject(sj, "path", abs ? abs : "");
    free(abs);
    char *base = NULL;
    gpc_realpath(spec->base_dir ? spec->base_dir : ".", &base, NULL);
    cJSON_AddStringToObject(sj, "base_dir", base ? base : ".");
    free(base);
    cJSON_AddStringToObject(sj, "sha256", p->spec_hash);
    if (po->spec_text)
        cJSON_AddStringToObject(sj, "yaml", po->spec_text);
    else
        cJSON_AddNullToObject(sj, "yaml");

    cJSON *cj = cJSON_AddObjectToObject(d, "catalog");
    cJSON_AddStringToObject(cj, "origin", cat->origin);
    cJSON_AddStringToObject(cj, "sha256", cat->sha256);
    cJSON_AddNumberToObject(cj, "rows", (double)cat->n_rows);

    cJSON *st = cJSON_AddObjectToObject(d, "state");
    cJSON_AddBoolToObject(st, "cluster_exists", p->cluster_exists);
    cJSON_AddStringToObject(st, "fingerprint", p->fingerprint);

    cJSON *rq = cJSON_AddObjectToObject(d, "request");
    cJSON_AddNumberToObject(rq, "nodes", q->nodes);
    cJSON_AddItemToObject(rq, "providers", strs_json(q->providers, q->n_providers));
    cJSON_AddItemToObject(rq, "regions", strs_json(q->regions, q->n_regions));
    cJSON_AddStringToObject(rq, "interconnect", gpc_interconnect_name(q->interconnect));
    cJSON_AddStringToObject(rq, "spot_policy", gpc_spot_policy_name(q->policy));
    cJSON_AddStringToObject(rq, "head_policy", gpc_spot_policy_name(q->head));

    cJSON_AddStringToObject(d, "action", action_name(p->action));
    if (p->action == GPC_PLAN_RERUN)
        cJSON_AddStringToObject(d, "rerun", p->rerun);
    if (p->action == GPC_PLAN_REPLACE)
        cJSON_AddStringToObject(d, "replace", p->rerun);
    if (p->action == GPC_PLAN_RESIZE)
        cJSON_AddStringToObject(d, "resize", p->rerun);
    cJSON_AddBoolToObject(d, "changes_pending", p->action != GPC_PLAN_NONE);
    cJSON_AddItemToObject(d, "changes", changes_json(spec, p, nodes, n_nodes));

    const gpc_candidate *best = sel->n_fit ? &sel->fit[0] : NULL;
    cJSON_AddItemToObject(d, "chosen", best ? gpc_candidate_json(cat, best) : cJSON_CreateNull());
    cJSON *fb = cJSON_AddArrayToObject(d, "fallbacks");
    for (size_t i = 1; i < sel->n_fit && i < GPC_PLAN_OFFERS_MAX; i++)
        cJSON_AddItemToArray(fb, gpc_candidate_json(cat, &sel->fit[i]));
    cJSON_AddNumberToObject(d, "feasible", (double)sel->n_fit);
    cJSON *lost = cJSON_AddArrayToObject(d, "lost");
    for (size_t i = 0; i < sel->n_lost && i < LOST_LISTED; i++)
        cJSON_AddItemToArray(lost, gpc_candidate_json(cat, &sel->lost[i]));
    cJSON *by = cJSON_AddObjectToObject(d, "lost_by");
    for (int v = GPC_FIT + 1; v < GPC_VERDICT_COUNT; v++)
        if (sel->lost_by[v])
            cJSON_AddNumberToObject(by, gpc_verdict_name((gpc_verdict)v), (double)sel->lost_by[v]);

    cJSON *cost = cJSON_AddObjectToObject(d, "cost");
    cJSON_AddStringToObject(cost, "currency", "USD");
    if (best) {
        cJSON_AddNumberToObject(cost, "node_usd_hr", r6(best->price_node));
        cJSON_AddNumberToObject(cost, "head_usd_hr", r6(best->price_head));
        cJSON_AddNumberToObject(cost, "cluster_usd_hr", r6(best->price_cluster));
        cJSON_AddItemToObject(cost, "cluster_on_demand_usd_hr",
                              num_or_null(r6(best->price_cluster_ondemand)));
        double save = best->price_cluster_ondemand > 0
                    ? best->price_cluster_ondemand - best->price_cluster : -1;
        cJSON_AddItemToObject(cost, "spot_saving_usd_hr", num_or_null(r6(save)));
        cJSON_AddItemToObject(cost, "spot_saving_pct",
                              num_or_null(save < 0 ? -1 : gpc_saving_pct_round(100.0 * save /
                                          best->price_cluster_ondemand, 1, NULL)));
    } else {
        cJSON_AddNullToObject(cost, "node_usd_hr");
        cJSON_AddNullToObject(cost, "head_usd_hr");
        cJSON_AddNullToObject(cost, "cluster_usd_hr");
        cJSON_AddNullToObject(cost, "cluster_on_demand_usd_hr");
        cJSON_AddNullToObject(cost, "spot_saving_usd_hr");
        cJSON_AddNullToObject(cost, "spot_saving_pct");
    }
    if (spec->lifecycle.max_duration_s)
        cJSON_AddNumberToObject(cost, "max_duration_s", (double)spec->lifecycle.max_duration_s);
    else
        cJSON_AddNullToObject(cost, "max_duration_s");
    cJSON_AddItemToObject(cost, "projected_total_usd",
                          best && spec->lifecycle.max_duration_s && best->projected_total >= 0
                          ? cJSON_CreateNumber(r6(best->projected_total)) : cJSON_CreateNull());

    /* when the nodes end themselves, and why (after cost: additive) */
    cJSON_AddItemToObject(d, "ends", ends_json(spec, best));

    cJSON *bud = cJSON_AddArrayToObject(d, "budget");
    if (best) {
        double top = best->price_node > best->price_head ? best->price_node : best->price_head;
        cJSON_AddItemToArray(bud, budget_check("spot.max_price", spec->spot.max_price, top,
                                               "USD/hour per node"));
        cJSON_AddItemToArray(bud, budget_check("budget.max_hourly", spec->budget.max_hourly,
                                               best->price_cluster, "USD/hour"));
        cJSON_AddItemToArray(bud, budget_check("budget.max_total", spec->budget.max_total,
                                               spec->lifecycle.max_duration_s
                                               ? best->projected_total : -1, "USD"));
    }
    cJSON_AddItemToObject(d, "notes", cJSON_Duplicate(notes, 1));
    /* the spec's data sets (data.c); only when it has some */
    cJSON *data = gpc_data_plan_json(spec, p->n_offers ? &p->offers[0].worker : NULL);
    if (data)
        cJSON_AddItemToObject(d, "data", data);
    return d;
}

int gpc_plan_make(gpc_session *s, const gpc_spec *spec, const gpc_plan_opts *po,
                  gpc_plan *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = gpc_spec_hash(spec, out->spec_hash, err);
    if (!rc)
        rc = gpc_state_fingerprint(s->st, spec->name, out->fingerprint, err);
    if (rc)
        return rc;

    /* What exists already. */
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    gpc_error nf;
    gpc_error_clear(&nf);
    gpc_node_rec *nodes = NULL;
    size_t n_nodes = 0;
    out->cluster_exists = gpc_cluster_get(s->st, spec->name, &c, &nf) == 0;
    if (!out->cluster_exists && nf.code != GPC_ERR_NOT_FOUND)
        return gpc_fail(err, nf.code, "%s", nf.msg);
    if (out->cluster_exists) {
        rc = gpc_node_list(s->st, c.id, 0, &nodes, &n_nodes, err);
        for (size_t i = 0; !rc && i < n_nodes; i++)
            out->n_create += !nodes[i].provider_id[0];
        out->action = out->n_create ? GPC_PLAN_RESUME : GPC_PLAN_NONE;
        /* its shape must stay; its job may change (rerun.c) */
        if (!rc)
            rc = gpc_lc_plan_existing(s, spec, &c, out->n_create, out, err);
        if (rc) {
            gpc_node_list_free(nodes, n_nodes);
            gpc_cluster_rec_free(&c);
            return rc;
        }
    } else {
        out->action = GPC_PLAN_CREATE;
        out->n_create = spec->nodes;
    }

    /* Candidates: the catalog, plus offers that providers list themselves.
     * An existing cluster stays on its provider. */
    gpc_offer_query q;
    gpc_offer_query_from_spec(spec, &q);
    /* An existing cluster's missing nodes join its live ones: same
     * provider, and the region and instance type those nodes run on (a
     * worker in another region could not reach the head). */
    const char *only[1], *region[1], *type[1];
    if (out->cluster_exists && out->action != GPC_PLAN_REPLACE) {
        only[0] = c.provider;
        q.providers = only;
        q.n_providers = 1;
        for (size_t i = 0; i < n_nodes; i++) {
            /* a node that exists, or whose create may have made it (its
             * intent recorded, no answer: apply makes it again there) */
            int placed = nodes[i].provider_id[0] ||
                         (nodes[i].client_token[0] && nodes[i].region[0]);
            if (!placed || !nodes[i].instance_type[0])
                continue;
            type[0] = nodes[i].instance_type;
            q.instance_types = type;
            q.n_instance_types = 1;
            if (nodes[i].region[0]) {
                region[0] = nodes[i].region;
                q.regions = region;
                q.n_regions = 1;
            }
            break;
        }
    }
    gpc_catalog *cat = NULL;
    own_rows own;
    memset(&own, 0, sizeof(own));
    gpc_selection sel;
    memset(&sel, 0, sizeof(sel));
    if (!rc)
        rc = gpc_catalog_open(po->catalog_path, &cat, err);
    if (!rc)
        rc = gpc_spec_gpu_models_check(spec, cat, err);
    if (!rc)
        rc = collect_own(s, spec, cat, q.providers, q.n_providers, &own, err);
    if (!rc)
        rc = gpc_offers_select(cat, own.rows, own.n, &q, &sel, err);
    if (!rc && po->live) {
        /* live prices for what fits (or lost on price), then choose again */
        rc = live_prices(s, cat, &sel, own.notes, err);
        gpc_selection_free(&sel);
        memset(&sel, 0, sizeof(sel));
        if (!rc)
            rc = gpc_offers_select(cat, own.rows, own.n, &q, &sel, err);
    }
    /* Providers planned from the catalog alone: say so once. */
    char missing[160] = "";
    size_t n_missing = 0;
    for (size_t i = 0; !rc && i < q.n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(q.providers[i]);
        if ((!p || (p->caps & GPC_CAP_PLAN_ONLY)) &&
            strlen(missing) + strlen(q.providers[i]) + 3 < sizeof(missing)) {
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                     n_missing ? ", " : "", q.providers[i]);
            n_missing++;
        }
    }
    if (n_missing) {
        char note[512];
        snprintf(note, sizeof(note), "provider%s %s %s not built into this gpuctl yet "
                 "(available: %s): %s offers are planned from the catalog, but apply cannot "
                 "create them", n_missing > 1 ? "s" : "", missing, n_missing > 1 ? "are" : "is",
                 gpc_provider_names(), n_missing > 1 ? "their" : "its");
        cJSON_AddItemToArray(own.notes, cJSON_CreateString(note));
    }
    if (!rc && sel.n_fit == 0 && out->action != GPC_PLAN_NONE && out->action != GPC_PLAN_RERUN) {
        /* Say why, including what a provider said of its own offers. */
        gpc_error e;
        gpc_error_clear(&e);
        gpc_selection_fail(&sel, &q, spec->name, &e);
        /* A provider that lists its own offers (local) says best why it has
         * none; when it is the only candidate its word is the answer. */
        int only_own = q.n_providers > 0;
        for (size_t i = 0; i < q.n_providers; i++) {
            const gpc_provider *p = gpc_provider_find(q.providers[i]);
            only_own &= p && (p->caps & GPC_CAP_OWN_OFFERS);
        }
        gpc_buf why;
        gpc_buf_init(&why, GPC_ERROR_MSG_MAX);
        for (const cJSON *it = own.notes->child; it; it = it->next)
            if (cJSON_IsString(it))
                gpc_buf_addf(&why, NULL, "%s%s", why.len ? "; " : "", it->valuestring);
        if (only_own && why.len)
            rc = gpc_fail(err, GPC_ERR_CAPACITY, "%s", gpc_buf_str(&why));
        else if (why.len)
            rc = gpc_fail(err, e.code, "%s; %s", e.msg, gpc_buf_str(&why));
        else
            rc = gpc_fail(err, e.code, "%s", e.msg);
        gpc_buf_free(&why);
    }
    if (!rc) {
        size_t n = sel.n_fit < GPC_PLAN_OFFERS_MAX ? sel.n_fit : GPC_PLAN_OFFERS_MAX;
        out->offers = calloc(n ? n : 1, sizeof(*out->offers));
        if (!out->offers)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n; i++) {
            const gpc_candidate *cd = &sel.fit[i];
            fill_offer(&out->offers[i].worker, cd->row, cd->spot, cd->price_node);
            fill_offer(&out->offers[i].head, cd->row, cd->head_spot, cd->price_head);
            out->offers[i].price_cluster = cd->price_cluster;
        }
        out->n_offers = n;
    }
    /* A replacement on another provider starts without the old one's store */
    if (!rc && out->action == GPC_PLAN_REPLACE && out->n_offers && spec->checkpoint_dir &&
        strcmp(out->offers[0].worker.provider, c.provider) != 0) {
        char note[512];
        snprintf(note, sizeof(note), "cluster '%s' moves from %s to %s: its checkpoints stay "
                 "in %s's store, and the new nodes start without them", spec->name, c.provider,
                 out->offers[0].worker.provider, c.provider);
        cJSON_AddItemToArray(own.notes, cJSON_CreateString(note));
    }
    if (!rc) {
        out->doc = plan_doc(spec, po, out, cat, &sel, &q, nodes, n_nodes, own.notes);
        char sum[72];
        if (!out->doc || gpc_plan_doc_checksum(out->doc, sum) != 0 ||
            !cJSON_AddStringToObject(out->doc, "checksum", sum))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    gpc_selection_free(&sel);
    own_free(&own);
    gpc_catalog_free(cat);
    gpc_node_list_free(nodes, n_nodes);
    if (out->cluster_exists)
        gpc_cluster_rec_free(&c);
    if (rc)
        gpc_plan_free(out);
    return rc;
}

void gpc_plan_free(gpc_plan *p)
{
    if (!p)
        return;
    free(p->offers);
    cJSON_Delete(p->doc);
    memset(p, 0, sizeof(*p));
}

/* ---- saved plans ------------------------------------------------------- */

int gpc_plan_write(const gpc_plan *p, const char *path, gpc_error *err)
{
    /* schema_version first, as every -o json document has it */
    cJSON *copy = cJSON_CreateObject();
    cJSON_AddNumberToObject(copy, "schema_version", 1);
    for (const cJSON *it = p->doc->child; it; it = it->next)
        cJSON_AddItemToObject(copy, it->string, cJSON_Duplicate(it, 1));
    char *text = cJSON_Print(copy);
    cJSON_Delete(copy);
    if (!text)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_FILE_MAX * 4);
    int rc = gpc_buf_adds(&b, text, err);
    if (!rc)
        rc = gpc_buf_adds(&b, "\n", err);
    free(text);
    if (!rc)
        rc = gpc_write_file_atomic(path, b.data, b.len, 0600, err);
    gpc_buf_free(&b);
    return rc;
}
