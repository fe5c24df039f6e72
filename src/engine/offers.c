/*
 * offers.c - offer selection (see include/gpuctl/offers.h).
 *
 * One pass over the rows.  Rows that fail a row-level check that makes them
 * no alternative at all (provider, pinned instance type, GPU) are only
 * counted.  Every other candidate is recorded as a small sort record (row,
 * purchase options, price keys, verdict); the two lists are sorted once
 * each and only then turned into gpc_candidate values, in their final
 * order, so the large structs are written once and no `why` is formatted
 * for what is never stored.  The arrays grow geometrically: no allocation
 * per row.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/offers.h"
#include "gpuctl/provider.h"

/* Prices equal to a micro-dollar rank as equal (offers.h). */
#define PRICE_QUANTUM 1e6

static const char *const verdict_names[GPC_VERDICT_COUNT] = {
    "fit", "provider", "instance_type", "hardware", "cpu", "memory",
    "interconnect", "region", "no_price", "max_price", "budget_hourly",
    "budget_total",
};

const char *gpc_verdict_name(gpc_verdict v)
{
    return (unsigned)v < GPC_VERDICT_COUNT ? verdict_names[v] : "?";
}

/* ------------------------------------------------------------------ */
/* Small helpers.                                                     */

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* ASCII case-insensitive: a[0..alen) equals the whole of b. */
static bool eq_nocase_n(const char *a, size_t alen, const char *b)
{
    size_t i = 0;
    for (; i < alen; i++)
        if (b[i] == '\0' || lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return b[i] == '\0';
}

static bool eq_nocase(const char *a, const char *b)
{
    return eq_nocase_n(a, strlen(a), b);
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] && eq_nocase(list[i], s))
            return true;
    return false;
}

/* min == 0: no lower bound; max == 0: no upper bound (spec.h). */
static bool in_range(double v, gpc_range r)
{
    return (r.min <= 0 || v >= r.min - 1e-9) && (r.max <= 0 || v <= r.max + 1e-9);
}

static bool exceeds(double v, double cap)
{
    return v > cap + 1e-9 * (1.0 + fabs(cap));
}

/*
 * Decimals to print a value that exceeds `cap` with: `d` (the usual 2 or
 * 4), or more when fewer would print both the same ("0.25 > 0.25" for
 * 0.250796 against 0.25).
 */
static int apart(double v, double cap, int d)
{
    for (; d < 8; d++) {
        char a[64], b[64];
        snprintf(a, sizeof(a), "%.*f", d, v);
        snprintf(b, sizeof(b), "%.*f", d, cap);
        if (strcmp(a, b) != 0)
            break;
    }
    return d;
}

static const char *opt_name(int spot)
{
    return spot ? "spot" : "on-demand";
}

/* A bounded string builder: appends until full, never overflows. */
typedef struct sbuf {
    char *p;
    size_t cap, len;
    bool full;
} sbuf;

static void sb_init(sbuf *b, char *p, size_t cap)
{
    b->p = p;
    b->cap = cap;
    b->len = 0;
    b->full = false;
    p[0] = '\0';
}

__attribute__((format(printf, 2, 3)))
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (b->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->len = b->cap - 1;
        b->full = true;
        if (b->cap > 4)
            memcpy(b->p + b->cap - 4, "...", 4);
    } else {
        b->len += (size_t)n;
    }
}

/*
 * Append `items` joined by `sep`, using at most `limit` bytes and leaving
 * `reserve` bytes free for what follows; a list that does not fit ends in
 * "..." after the items that do.
 */
static void sb_list(sbuf *b, const char *const *items, size_t n, const char *sep,
                    size_t limit, size_t reserve)
{
    if (b->full)
        return;
    size_t end = b->cap - 1 > reserve ? b->cap - 1 - reserve : 0;
    if (b->len + limit < end)
        end = b->len + limit;
    size_t seplen = strlen(sep);
    for (size_t i = 0; i < n; i++) {
        const char *it = items[i] ? items[i] : "";
        size_t need = (i ? seplen : 0) + strlen(it);
        /* the last item needs no room for a "..." after it */
        size_t more = i + 1 < n ? seplen + 3 : 0;
        if (b->len + need + more > end) {
            if (b->len + (i ? seplen : 0) + 3 <= end || i == 0)
                sb_add(b, "%s...", i ? sep : "");
            return;
        }
        sb_add(b, "%s%s", i ? sep : "", it);
    }
}

/* "128+", "128", "4..16", "at most 16" ("..16" when !words), "any". */
static void fmt_range(char *buf, size_t n, gpc_range r, const char *unit, bool words)
{
    if (r.min > 0 && r.max <= 0)
        snprintf(buf, n, "%g%s+", r.min, unit);
    else if (r.min > 0 && r.max == r.min)
        snprintf(buf, n, "%g%s", r.min, unit);
    else if (r.min > 0)
        snprintf(buf, n, "%g%s..%g%s", r.min, unit, r.max, unit);
    else if (r.max > 0)
        snprintf(buf, n, "%s%g%s", words ? "at most " : "..", r.max, unit);
    else
        snprintf(buf, n, "any");
}

/* A GPU request as the spec writes it: "A100-80GB:8", "24GB..80GB:2", "H100:1..2". */
static void fmt_req(char *buf, size_t n, const gpc_gpu_req *r)
{
    sbuf b;
    char t[64];
    const char *model = r->model ? r->model : "";
    bool mem = r->mem_gib.min > 0 || r->mem_gib.max > 0;
    sb_init(&b, buf, n);
    fmt_range(t, sizeof t, r->mem_gib, "GB", false);
    if (*model) {
        sb_add(&b, "%s", model);
        if (mem)
            sb_add(&b, "%s%s", r->mem_gib.min == r->mem_gib.max ? "-" : ":", t);
    } else {
        sb_add(&b, "%s", mem ? t : "any");
    }
    if (r->count.min > 0 || r->count.max > 0) {
        fmt_range(t, sizeof t, r->count, "", false);
        sb_add(&b, ":%s", t);
    }
}

/* Every request, joined by " or ", clipped to `limit` bytes. */
static void sb_reqs(sbuf *b, const gpc_offer_query *q, size_t limit, size_t reserve)
{
    char texts[8][96];
    const char *items[8];
    size_t n = q->n_gpus < 8 ? q->n_gpus : 8;
    for (size_t i = 0; i < n; i++) {
        fmt_req(texts[i], sizeof texts[i], &q->gpus[i]);
        items[i] = texts[i];
    }
    if (n < q->n_gpus) {            /* more than 8 alternatives: say so */
        items[n - 1] = "...";
    }
    sb_list(b, items, n, " or ", limit, reserve);
}

/* ------------------------------------------------------------------ */
/* Checks and prices.                                                 */

static bool model_matches(const char *want, const char *key)
{
    if (!key || !*key)
        return false;
    if (eq_nocase(want, key))
        return true;
    const char *dash = strchr(key, '-');
    return dash && eq_nocase_n(key, (size_t)(dash - key), want);
}

/*
 * Which requests accept a GPU model, as a bit mask (bit i: gpus[i]; a
 * request with no model accepts any).  Catalog rows share their model
 * strings, so the mask is cached per string.
 */
typedef struct scan {
    const gpc_offer_query *q;
    const char *provider;      /* last provider seen, and whether allowed */
    bool provider_ok;
    const char *model;         /* last gpu_model seen, and its mask */
    uint64_t model_mask;
} scan;

static uint64_t model_mask(const gpc_offer_query *q, const char *key)
{
    uint64_t m = 0;
    for (size_t i = 0; i < q->n_gpus && i < 64; i++) {
        const char *want = q->gpus[i].model;
        if (!want || !want[0] || model_matches(want, key))
            m |= (uint64_t)1 << i;
    }
    return m;
}

static bool req_matches(const gpc_gpu_req *r, const gpc_catalog_row *row, bool model_ok)
{
    if (!in_range((double)row->gpu_count, r->count))
        return false;
    if (r->model && r->model[0] && (row->gpu_count == 0 || !model_ok))
        return false;
    if ((r->mem_gib.min > 0 || r->mem_gib.max > 0) &&
        (row->gpu_count == 0 || !in_range(row->gpu_mem_gib, r->mem_gib)))
        return false;
    return true;
}

static bool hardware_ok(scan *sc, const gpc_catalog_row *row)
{
    const gpc_offer_query *q = sc->q;
    const char *key = row->gpu_model ? row->gpu_model : "";
    bool cached = q->n_gpus <= 64;
    if (cached && (key != sc->model || !sc->model)) {
        sc->model = key;
        sc->model_mask = model_mask(q, key);
    }
    for (size_t i = 0; i < q->n_gpus; i++) {
        const char *want = q->gpus[i].model;
        bool model_ok = cached ? (sc->model_mask >> i) & 1
                               : !want || !want[0] || model_matches(want, key);
        if (req_matches(&q->gpus[i], row, model_ok))
            return true;
    }
    return false;
}

static bool fabric_ok(gpc_interconnect want, gpc_fabric have)
{
    switch (want) {
    case GPC_IC_EFA:        return have == GPC_FABRIC_EFA;
    case GPC_IC_INFINIBAND: return have == GPC_FABRIC_INFINIBAND;
    case GPC_IC_ERDMA:      return have == GPC_FABRIC_ERDMA;
    case GPC_IC_RDMA:
        return have == GPC_FABRIC_EFA || have == GPC_FABRIC_INFINIBAND ||
               have == GPC_FABRIC_ERDMA;
    case GPC_IC_ANY:
    case GPC_IC_NONE:
    default:
        return true;
    }
}

/* Row-level checks that do not depend on the purchase option. */
/* Zone `z` named after region `r`: r, then a letter or '-' ("us-east-1a",
 * "us-east-1-bos-1a", "cn-hangzhou-h"). */
static bool zone_in_region(const char *z, const char *r)
{
    size_t n = strlen(r);
    return strncmp(z, r, n) == 0 && ((z[n] >= 'a' && z[n] <= 'z') || z[n] == '-');
}

/* Does some provider (gpc_provider.zone_in_every_region) have a zone
 * named z in every region, so that z names no region at all? */
static bool zone_everywhere(const char *z)
{
    for (size_t i = 0; gpc_providers[i]; i++)
        if (gpc_providers[i]->zone_in_every_region && gpc_providers[i]->zone_in_every_region(z))
            return true;
    return false;
}

/* Is the row's zone (an offer a provider listed with its zone) one of the
 * query's, by its exact name? */
static bool zone_listed(const gpc_offer_query *q, const char *z)
{
    for (size_t i = 0; i < q->n_zones; i++)
        if (q->zones[i] && strcmp(q->zones[i], z) == 0)
            return true;
    return false;
}

/* May the query's zones hold the row?  A row with its own zone: when that
 * zone is one of them.  A row without (the catalog's: a region whose zones
 * it does not list): when some zone of the query lies in its region, or
 * names no region at all.  True without zones. */
static bool zones_allow(const gpc_offer_query *q, const gpc_catalog_row *row)
{
    if (q->n_zones == 0)
        return true;
    if (row->zone && row->zone[0])
        return zone_listed(q, row->zone);
    for (size_t i = 0; i < q->n_zones; i++) {
        const char *z = q->zones[i];
        if (zone_in_region(z, row->region) || zone_everywhere(z))
            return true;
    }
    return false;
}

static gpc_verdict row_verdict(scan *sc, const gpc_catalog_row *row)
{
    const gpc_offer_query *q = sc->q;
    if (q->n_providers) {
        const char *p = row->provider ? row->provider : "";
        if (p != sc->provider || !sc->provider) {
            sc->provider = p;
            sc->provider_ok = in_list(p, q->providers, q->n_providers);
        }
        if (!sc->provider_ok)
            return GPC_LOST_PROVIDER;
    }
    if (q->n_instance_types &&
        !in_list(row->instance_type ? row->instance_type : "", q->instance_types,
                 q->n_instance_types))
        return GPC_LOST_INSTANCE_TYPE;
    if (q->n_gpus && !hardware_ok(sc, row))
        return GPC_LOST_HARDWARE;
    if (!in_range(row->vcpus, q->cpus))
        return GPC_LOST_CPU;
    if (!in_range(row->mem_gib, q->memory_gib))
        return GPC_LOST_MEMORY;
    if (!fabric_ok(q->interconnect, row->fabric))
        return GPC_LOST_INTERCONNECT;
    if (!row->region || !row->region[0] ||
        (q->n_regions && !in_list(row->region, q->regions, q->n_regions)) ||
        !zones_allow(q, row))
        return GPC_LOST_REGION;  /* no region: nowhere to create the node */
    return GPC_FIT;
}

typedef struct prices {
    double node, head, cluster, cluster_od, tflops, upt, total;
    double upt_key;      /* upt for ranking: HUGE_VAL when unknown */
} prices;

static void price(const gpc_catalog_row *row, const gpc_offer_query *q, int spot,
                  int head_spot, prices *p)
{
    double od = row->price_ondemand >= 0 ? row->price_ondemand : -1;
    double sp = row->price_spot >= 0 ? row->price_spot : -1;
    double n = (double)q->nodes;
    p->node = spot ? sp : od;
    p->head = head_spot ? sp : od;
    p->cluster = p->node >= 0 && p->head >= 0 ? p->head + (n - 1) * p->node : -1;
    p->cluster_od = od >= 0 ? n * od : -1;
    p->tflops = row->gpu ? gpc_gpu_tflops(row->gpu) * (double)row->gpu_count : 0;
    if (!(p->tflops > 0))
        p->tflops = 0;
    if (p->tflops > 0 && p->node >= 0) {
        p->upt = p->node / p->tflops;
        p->upt_key = p->upt;
    } else {
        p->upt = 0;
        p->upt_key = HUGE_VAL;
    }
    if (q->max_duration_s > 0)
        p->total = p->cluster >= 0 ? p->cluster * ((double)q->max_duration_s / 3600.0) : -1;
    else
        p->total = 0;
}

/* The price checks, in verdict order. */
static gpc_verdict price_verdict(const gpc_offer_query *q, const prices *p)
{
    if (p->cluster < 0)
        return GPC_LOST_NO_PRICE;
    if (q->max_price > 0 &&
        ((q->nodes > 1 && exceeds(p->node, q->max_price)) || exceeds(p->head, q->max_price)))
        return GPC_LOST_MAX_PRICE;
    if (q->budget_hourly > 0 && exceeds(p->cluster, q->budget_hourly))
        return GPC_LOST_BUDGET_HOURLY;
    if (q->budget_total > 0 && q->max_duration_s > 0 && exceeds(p->total, q->budget_total))
        return GPC_LOST_BUDGET_TOTAL;
    return GPC_FIT;
}

/* ------------------------------------------------------------------ */
/* Sort records.                                                      */

/* 32 bytes, so that qsort moves records, not pointers to them. */
typedef struct rec {
    const gpc_catalog_row *row;
    int64_t qprice;      /* cluster price in micro-USD; INT64_MAX when unknown */
    double upt;          /* USD per TFLOPS-hour; HUGE_VAL when unknown */
    uint32_t seq;        /* order seen: makes the order total */
    uint8_t spot, head_spot, verdict;
} rec;
_Static_assert(sizeof(rec) <= 32, "rec grew past 32 bytes");

typedef struct recs {
    rec *v;
    size_t n, cap;
} recs;

static bool recs_push(recs *a, const rec *r)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        if (cap > SIZE_MAX / sizeof(rec))
            return false;
        rec *v = realloc(a->v, cap * sizeof(rec));
        if (!v)
            return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = *r;
    return true;
}

static int64_t qprice(double cluster)
{
    if (!(cluster >= 0))
        return INT64_MAX;
    double s = floor(cluster * PRICE_QUANTUM + 0.5);
    return s < 9e18 ? (int64_t)s : INT64_MAX - 1;
}

static int cmp_str(const char *a, const char *b)
{
    return a == b ? 0 : strcmp(a ? a : "", b ? b : "");
}

static int cmp_tail(const rec *a, const rec *b)
{
    int c;
    if ((c = cmp_str(a->row->provider, b->row->provider)) != 0 ||
        (c = cmp_str(a->row->instance_type, b->row->instance_type)) != 0 ||
        (c = cmp_str(a->row->region, b->row->region)) != 0)
        return c;
    if (a->spot != b->spot)
        return a->spot < b->spot ? -1 : 1;
    if (a->head_spot != b->head_spot)
        return a->head_spot < b->head_spot ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The numeric keys only: 0 when both rank the same. */
static int cmp_keys(const rec *a, const rec *b, bool tflops_first)
{
    if (tflops_first && a->upt != b->upt)
        return a->upt < b->upt ? -1 : 1;
    if (a->qprice != b->qprice)
        return a->qprice < b->qprice ? -1 : 1;
    if (a->upt != b->upt)
        return a->upt < b->upt ? -1 : 1;
    return 0;
}

/* First pass: numbers, then the order seen (no row is touched). */
static int cmp_num_price(const void *pa, const void *pb)
{
    const rec *a = pa, *b = pb;
    int c = cmp_keys(a, b, false);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_num_tflops(const void *pa, const void *pb)
{
    const rec *a = pa, *b = pb;
    int c = cmp_keys(a, b, true);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* Second pass, within a run of equal keys: provider, type, region, ... */
static int cmp_names(const void *pa, const void *pb)
{
    return cmp_tail(pa, pb);
}

/*
 * Sort by the numeric keys, then each run of candidates that rank equal on
 * them by name.  Ties are usually few and short (one instance type in
 * several regions), so the string comparisons stay off the hot path.
 */
static void sort_recs(rec *v, size_t n, bool tflops_first)
{
    qsort(v, n, sizeof(rec), tflops_first ? cmp_num_tflops : cmp_num_price);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && cmp_keys(&v[i], &v[j], tflops_first) == 0)
            j++;
        if (j - i > 1)
            qsort(v + i, j - i, sizeof(rec), cmp_names);
        i = j;
    }
}

/* ------------------------------------------------------------------ */
/* Explanations.                                                      */

static void explain(char *why, size_t n, const gpc_catalog_row *row, const gpc_offer_query *q,
                    int spot, int head_spot, gpc_verdict v, const prices *p)
{
    sbuf b;
    char t[64];
    sb_init(&b, why, n);
    switch (v) {
    case GPC_LOST_CPU:
        fmt_range(t, sizeof t, q->cpus, "", true);
        sb_add(&b, "%g vCPUs, wanted %s", row->vcpus, t);
        break;
    case GPC_LOST_MEMORY:
        fmt_range(t, sizeof t, q->memory_gib, "", true);
        sb_add(&b, "%g GiB RAM, wanted %s GiB", row->mem_gib, t);
        break;
    case GPC_LOST_INTERCONNECT:
        if (row->fabric == GPC_FABRIC_UNKNOWN)
            sb_add(&b, "interconnect not verified, wanted %s",
                   gpc_interconnect_name(q->interconnect));
        else
            sb_add(&b, "interconnect %s, wanted %s", gpc_fabric_name(row->fabric),
                   gpc_interconnect_name(q->interconnect));
        break;
    case GPC_LOST_REGION:
        if (!row->region || !row->region[0]) {
            sb_add(&b, "the catalog states no region for it");
            break;
        }
        if (q->n_regions && !in_list(row->region, q->regions, q->n_regions)) {
            sb_add(&b, "region %s not in [", row->region);
            sb_list(&b, q->regions, q->n_regions, ", ", n, 1);
            sb_add(&b, "]");
        } else if (row->zone && row->zone[0]) {
            sb_add(&b, "zone %s not in [", row->zone);
            sb_list(&b, q->zones, q->n_zones, ", ", n, 1);
            sb_add(&b, "]");
        } else {
            sb_add(&b, "none of the zones [");
            sb_list(&b, q->zones, q->n_zones, ", ", n, 1);
            sb_add(&b, "] is in region %s", row->region);
        }
        break;
    case GPC_LOST_NO_PRICE: {
        bool od_missing = (!spot || !head_spot) && row->price_ondemand < 0;
        bool sp_missing = (spot || head_spot) && row->price_spot < 0;
        if (od_missing && sp_missing)
            sb_add(&b, "no on-demand or spot price");
        else
            sb_add(&b, "no %s price%s", od_missing ? "on-demand" : "spot",
                   q->nodes > 1 && spot != head_spot &&
                   (od_missing ? spot : !spot) ? " for the head" : "");
        break;
    }
    case GPC_LOST_MAX_PRICE:
        if (q->nodes > 1 && exceeds(p->node, q->max_price)) {
            int d = apart(p->node, q->max_price, 4);
            sb_add(&b, "%s %.*f USD/hour > spot.max_price %.*f", opt_name(spot), d, p->node,
                   d, q->max_price);
        } else {
            int d = apart(p->head, q->max_price, 4);
            sb_add(&b, "%s%s %.*f USD/hour > spot.max_price %.*f",
                   q->nodes > 1 && spot != head_spot ? "head " : "", opt_name(head_spot),
                   d, p->head, d, q->max_price);
        }
        break;
    case GPC_LOST_BUDGET_HOURLY: {
        int d = apart(p->cluster, q->budget_hourly, 2);
        sb_add(&b, "cluster %.*f USD/hour > budget.max_hourly %.*f", d, p->cluster, d,
               q->budget_hourly);
        break;
    }
    case GPC_LOST_BUDGET_TOTAL: {
        int d = apart(p->total, q->budget_total, 2);
        sb_add(&b, "cluster %.2f USD/hour x %g h = %.*f USD > budget.max_total %.*f",
               p->cluster, (double)q->max_duration_s / 3600.0, d, p->total, d,
               q->budget_total);
        break;
    }
    case GPC_LOST_PROVIDER:
        sb_add(&b, "provider %s not in [", row->provider ? row->provider : "");
        sb_list(&b, q->providers, q->n_providers, ", ", n, 1);
        sb_add(&b, "]");
        break;
    case GPC_LOST_INSTANCE_TYPE:
        sb_add(&b, "instance type %s not pinned", row->instance_type ? row->instance_type : "");
        break;
    case GPC_LOST_HARDWARE:
        if (row->gpu_count)
            sb_add(&b, "GPU %s x%u (%g GiB), wanted ", row->gpu_model ? row->gpu_model : "?",
                   (unsigned)row->gpu_count, row->gpu_mem_gib);
        else
            sb_add(&b, "no GPU, wanted ");
        sb_reqs(&b, q, n, 0);
        break;
    case GPC_FIT:
    default:
        break;
    }
}

static void materialize(gpc_candidate *c, const rec *r, const gpc_offer_query *q)
{
    prices p;
    price(r->row, q, r->spot, r->head_spot, &p);
    memset(c, 0, sizeof(*c));
    c->row = r->row;
    c->spot = r->spot;
    c->head_spot = r->head_spot;
    c->price_node = p.node;
    c->price_head = p.head;
    c->price_cluster = p.cluster;
    c->price_cluster_ondemand = p.cluster_od;
    c->tflops_node = p.tflops;
    c->usd_per_tflops = p.upt;
    c->projected_total = p.total;
    c->verdict = (gpc_verdict)r->verdict;
    if (c->verdict != GPC_FIT)
        explain(c->why, sizeof c->why, r->row, q, r->spot, r->head_spot, c->verdict, &p);
}

static int build(const recs *a, const gpc_offer_query *q, bool tflops_first,
                 gpc_candidate **out, size_t *n_out)
{
    enum { AHEAD = 8 };
    *out = NULL;
    *n_out = 0;
    if (a->n == 0)
        return 0;
    sort_recs(a->v, a->n, tflops_first);
    gpc_candidate *c = malloc(a->n * sizeof(*c));
    if (!c)
        return -1;
    for (size_t i = 0; i < a->n; i++) {
        /* rows are read in ranked order, not in memory order */
        if (i + AHEAD < a->n)
            __builtin_prefetch(a->v[i + AHEAD].row);
        materialize(&c[i], &a->v[i], q);
    }
    *out = c;
    *n_out = a->n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Selection.                                                         */

int gpc_offers_select(const gpc_catalog *cat, const gpc_catalog_row *extra, size_t n_extra,
                      const gpc_offer_query *q, gpc_selection *out, gpc_error *err)
{
    if (out)
        memset(out, 0, sizeof(*out));
    if (!q || !out)
        return gpc_fail(err, GPC_ERR_USAGE, "offers: no query");
    if (q->nodes == 0)
        return gpc_fail(err, GPC_ERR_USAGE, "offers: nodes must be at least 1");
    if ((unsigned)q->policy > GPC_SPOT_AUTO || (unsigned)q->head > GPC_SPOT_AUTO)
        return gpc_fail(err, GPC_ERR_USAGE, "offers: unknown purchase option");

    /* The (workers, head) options each row is bought with. */
    uint8_t opt[2][2];
    size_t k = 0;
    if (q->nodes == 1 && q->head != GPC_SPOT_AUTO) {
        /* one node: it is the head, bought as spot.head says */
        uint8_t h = q->head == GPC_SPOT_SPOT;
        opt[k][0] = h, opt[k][1] = h, k++;
    } else {
        for (uint8_t w = 0; w < 2; w++) {
            if ((w == 0 && q->policy == GPC_SPOT_SPOT) ||
                (w == 1 && q->policy == GPC_SPOT_ON_DEMAND))
                continue;
            opt[k][0] = w;
            opt[k][1] = q->head == GPC_SPOT_AUTO ? w : (uint8_t)(q->head == GPC_SPOT_SPOT);
            k++;
        }
    }

    size_t n_cat = cat ? cat->n_rows : 0;
    if (!extra)
        n_extra = 0;
    if (n_cat + n_extra < n_cat || n_cat + n_extra > UINT32_MAX / 2)   /* rec.seq */
        return gpc_fail(err, GPC_ERR_USAGE, "offers: too many rows (%zu)", n_cat + n_extra);
    recs fit = {0}, lost = {0};
    scan sc = {.q = q};
    uint32_t seq = 0;

    for (size_t i = 0; i < n_cat + n_extra; i++) {
        const gpc_catalog_row *row = i < n_cat ? &cat->rows[i] : &extra[i - n_cat];
        gpc_verdict rv = row_verdict(&sc, row);
        if (rv != GPC_FIT && rv <= GPC_LOST_HARDWARE) {
            out->lost_by[rv] += k;
            seq += (uint32_t)k;
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            prices p;
            price(row, q, opt[j][0], opt[j][1], &p);
            gpc_verdict v = rv != GPC_FIT ? rv : price_verdict(q, &p);
            rec r = {.row = row, .qprice = qprice(p.cluster), .upt = p.upt_key,
                     .seq = seq++, .spot = opt[j][0], .head_spot = opt[j][1],
                     .verdict = (uint8_t)v};
            out->lost_by[v]++;
            if (!recs_push(v == GPC_FIT ? &fit : &lost, &r))
                goto nomem;
        }
    }
    out->n_rows = n_cat + n_extra;

    if (build(&fit, q, q->sort == GPC_SORT_PER_TFLOPS, &out->fit, &out->n_fit) ||
        build(&lost, q, false, &out->lost, &out->n_lost))
        goto nomem;
    free(fit.v);
    free(lost.v);
    return 0;

nomem:
    free(fit.v);
    free(lost.v);
    gpc_selection_free(out);
    return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

void gpc_selection_free(gpc_selection *s)
{
    if (!s)
        return;
    free(s->fit);
    free(s->lost);
    memset(s, 0, sizeof(*s));
}

void gpc_offer_query_from_spec(const gpc_spec *spec, gpc_offer_query *q)
{
    memset(q, 0, sizeof(*q));
    q->gpus = spec->resources.gpus;
    q->n_gpus = spec->resources.n_gpus;
    q->cpus = spec->resources.cpus;
    q->memory_gib = spec->resources.memory_gib;
    q->interconnect = spec->resources.interconnect;
    q->providers = (const char *const *)spec->providers;
    q->n_providers = spec->n_providers;
    q->regions = (const char *const *)spec->regions;
    q->n_regions = spec->n_regions;
    q->zones = (const char *const *)spec->zones;
    q->n_zones = spec->n_zones;
    q->instance_types = (const char *const *)spec->resources.instance_types;
    q->n_instance_types = spec->resources.n_instance_types;
    q->policy = spec->spot.policy;
    q->head = spec->spot.head;
    q->max_price = spec->spot.max_price;
    q->nodes = spec->nodes;
    q->budget_hourly = spec->budget.max_hourly;
    q->budget_total = spec->budget.max_total;
    q->max_duration_s = spec->lifecycle.max_duration_s;
    q->sort = GPC_SORT_PRICE;
}

/* ------------------------------------------------------------------ */
/* The error for "nothing fits".                                      */

/* "aws p4de.24xlarge us-east-1 spot, head on-demand"; a row with its own
 * zone reads "REGION/ZONE" */
static void sb_label(sbuf *b, const gpc_candidate *c, const gpc_offer_query *q)
{
    const gpc_catalog_row *r = c->row;
    sb_add(b, "%s %s", r->provider ? r->provider : "", r->instance_type ? r->instance_type : "");
    if (r->region && r->region[0])
        sb_add(b, " %s%s%s", r->region, r->zone && r->zone[0] ? "/" : "",
               r->zone ? r->zone : "");
    sb_add(b, " %s", opt_name(c->spot));
    if (q->nodes > 1 && c->head_spot != c->spot)
        sb_add(b, ", head %s", opt_name(c->head_spot));
}

static const gpc_candidate *cheapest(const gpc_selection *s, gpc_verdict v)
{
    for (size_t i = 0; i < s->n_lost; i++)
        if (s->lost[i].verdict == v)
            return &s->lost[i];
    return NULL;
}

static void sb_detail(sbuf *b, const gpc_selection *s, const gpc_offer_query *q, gpc_verdict v)
{
    char t[64];
    const gpc_candidate *c;
    switch (v) {
    case GPC_LOST_CPU:
        fmt_range(t, sizeof t, q->cpus, "", true);
        sb_add(b, " (wanted %s vCPUs)", t);
        break;
    case GPC_LOST_MEMORY:
        fmt_range(t, sizeof t, q->memory_gib, "", true);
        sb_add(b, " (wanted %s GiB RAM)", t);
        break;
    case GPC_LOST_INTERCONNECT:
        sb_add(b, " (none has %s)", q->interconnect == GPC_IC_RDMA
                                        ? "efa, infiniband or erdma"
                                        : gpc_interconnect_name(q->interconnect));
        break;
    case GPC_LOST_REGION:
        /* " (not in [eu-west-1])", " (not in zones [gpu])", or both */
        sb_add(b, " (not in ");
        if (q->n_regions || !q->n_zones) {
            sb_add(b, "[");
            sb_list(b, q->regions, q->n_regions, ", ", 160, 2);
            sb_add(b, "]%s", q->n_zones ? " or " : "");
        }
        if (q->n_zones) {
            sb_add(b, "zones [");
            sb_list(b, q->zones, q->n_zones, ", ", 160, 2);
            sb_add(b, "]");
        }
        sb_add(b, ")");
        break;
    case GPC_LOST_NO_PRICE: {
        bool od = false, sp = false;
        for (size_t i = 0; i < s->n_lost; i++) {
            const gpc_candidate *x = &s->lost[i];
            if (x->verdict != GPC_LOST_NO_PRICE)
                continue;
            od |= (!x->spot || !x->head_spot) && x->row->price_ondemand < 0;
            sp |= (x->spot || x->head_spot) && x->row->price_spot < 0;
        }
        sb_add(b, " (no %s price)", od && sp ? "on-demand or spot" : od ? "on-demand" : "spot");
        break;
    }
    case GPC_LOST_MAX_PRICE:
        if ((c = cheapest(s, v)) != NULL) {
            bool worker = q->nodes > 1 && exceeds(c->price_node, q->max_price);
            sb_add(b, " (cheapest ");
            sb_label(b, c, q);
            sb_add(b, ": %.4f USD/hour > %.4f)", worker ? c->price_node : c->price_head,
                   q->max_price);
        }
        break;
    case GPC_LOST_BUDGET_HOURLY:
        if ((c = cheapest(s, v)) != NULL) {
            sb_add(b, " (cheapest ");
            sb_label(b, c, q);
            sb_add(b, ": %.2f USD/hour > %.2f)", c->price_cluster, q->budget_hourly);
        }
        break;
    case GPC_LOST_BUDGET_TOTAL:
        if ((c = cheapest(s, v)) != NULL) {
            sb_add(b, " (cheapest ");
            sb_label(b, c, q);
            sb_add(b, ": %.2f USD for %g h > %.2f)", c->projected_total,
                   (double)q->max_duration_s / 3600.0, q->budget_total);
        }
        break;
    default:
        break;
    }
}

/* " (providers aws, azure; instance types p4de.24xlarge)", or nothing. */
static void sb_scope(sbuf *b, const gpc_offer_query *q, bool types)
{
    if (!q->n_providers && !(types && q->n_instance_types))
        return;
    sb_add(b, " (");
    if (q->n_providers) {
        sb_add(b, "provider%s ", q->n_providers > 1 ? "s" : "");
        sb_list(b, q->providers, q->n_providers, ", ", 200, 1);
    }
    if (types && q->n_instance_types) {
        sb_add(b, "%sinstance type%s ", q->n_providers ? "; " : "",
               q->n_instance_types > 1 ? "s" : "");
        sb_list(b, q->instance_types, q->n_instance_types, ", ", 300, 1);
    }
    sb_add(b, ")");
}

int gpc_selection_fail(const gpc_selection *s, const gpc_offer_query *q, const char *job,
                       gpc_error *err)
{
    char msg[GPC_ERROR_MSG_MAX];
    sbuf b;
    if (!job)
        job = "job";
    if (!s || !q)
        return gpc_fail(err, GPC_ERR_INTERNAL, "offers: nothing to explain for '%s'", job);
    if (s->n_fit)
        return gpc_fail(err, GPC_ERR_INTERNAL, "offers: %zu offer%s fit '%s'", s->n_fit,
                        s->n_fit == 1 ? "" : "s", job);

    int code = s->lost_by[GPC_LOST_MAX_PRICE] || s->lost_by[GPC_LOST_BUDGET_HOURLY] ||
               s->lost_by[GPC_LOST_BUDGET_TOTAL] ? GPC_ERR_BUDGET : GPC_ERR_CAPACITY;
    size_t total = 0;
    for (int v = 0; v < GPC_VERDICT_COUNT; v++)
        total += s->lost_by[v];

    sb_init(&b, msg, sizeof msg);
    sb_add(&b, "no offer fits '%s': ", job);
    if (s->n_lost) {
        sb_add(&b, "%zu candidate%s ", s->n_lost, s->n_lost == 1 ? "" : "s");
        if (q->n_gpus) {
            sb_add(&b, "with ");
            sb_reqs(&b, q, 300, 0);
            sb_add(&b, " GPUs ");
        }
        sb_add(&b, "lost: ");
        bool first = true;
        for (int v = GPC_LOST_CPU; v < GPC_VERDICT_COUNT; v++) {
            if (!s->lost_by[v])
                continue;
            sb_add(&b, "%s%zu on %s", first ? "" : ", ", s->lost_by[v],
                   gpc_verdict_name((gpc_verdict)v));
            sb_detail(&b, s, q, (gpc_verdict)v);
            first = false;
        }
    } else if (s->n_rows == 0) {
        sb_add(&b, "the catalog has no rows");
    } else if (s->lost_by[GPC_LOST_PROVIDER] == total) {
        sb_add(&b, "no catalog row for provider%s ", q->n_providers > 1 ? "s" : "");
        sb_list(&b, q->providers, q->n_providers, ", ", 400, 0);
    } else if (s->lost_by[GPC_LOST_HARDWARE] == 0) {
        sb_add(&b, "no catalog row has instance type%s ", q->n_instance_types > 1 ? "s" : "");
        sb_list(&b, q->instance_types, q->n_instance_types, ", ", 400, 0);
        sb_scope(&b, q, false);
    } else {
        sb_add(&b, "no catalog row has ");
        sb_reqs(&b, q, 400, 0);
        sb_add(&b, " GPUs");
        sb_scope(&b, q, true);
    }
    return gpc_fail(err, (gpc_code)code, "%s", msg);
}
