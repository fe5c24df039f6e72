/* cost.c - the cost ledger over a window, and owning against renting
 * (cost.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "state_db.h"
#include "gpuctl/cost.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* The report                                                          */

void gpc_cost_report_free(gpc_cost_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->rows && i < r->n_rows; i++) {
        free((char *)r->rows[i].cluster);
        free((char *)r->rows[i].node);
        free((char *)r->rows[i].provider);
        free((char *)r->rows[i].instance_type);
        free((char *)r->rows[i].region);
    }
    free(r->rows);
    free(r->clusters);
    free(r->providers);
    memset(r, 0, sizeof(*r));
}

static void sum_add(gpc_cost_sum *s, const gpc_cost_row *row)
{
    s->rows++;
    s->open += row->open != 0;
    s->billed_s += row->billed_s;
    s->usd += row->usd;
    if (row->open)
        s->hourly_now += row->price_hourly;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const gpc_cost_sum *)a)->name, ((const gpc_cost_sum *)b)->name);
}

/* The sums per cluster record (rows come ordered by record), per provider
 * and in all. */
static int summarise(gpc_cost_report *r, gpc_error *err)
{
    size_t capc = 0, capp = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        const gpc_cost_row *row = &r->rows[i];
        gpc_cost_sum *c = r->n_clusters ? &r->clusters[r->n_clusters - 1] : NULL;
        if (!c || c->cluster_id != row->cluster_id) {
            if (gpc_st_grow((void **)&r->clusters, &capc, r->n_clusters, sizeof(*c), err))
                return GPC_ERR_NOMEM;
            c = &r->clusters[r->n_clusters++];
            memset(c, 0, sizeof(*c));
            c->name = row->cluster;
            c->cluster_id = row->cluster_id;
            c->destroyed_at = row->destroyed_at;
        }
        sum_add(c, row);
        gpc_cost_sum *p = NULL;
        for (size_t k = 0; !p && k < r->n_providers; k++)
            if (strcmp(r->providers[k].name, row->provider) == 0)
                p = &r->providers[k];
        if (!p) {
            if (gpc_st_grow((void **)&r->providers, &capp, r->n_providers, sizeof(*p), err))
                return GPC_ERR_NOMEM;
            p = &r->providers[r->n_providers++];
            memset(p, 0, sizeof(*p));
            p->name = row->provider;
        }
        sum_add(p, row);
        sum_add(&r->total, row);
    }
    if (r->n_providers > 1)
        qsort(r->providers, r->n_providers, sizeof(*r->providers), by_name);
    return 0;
}

int gpc_cost_report_make(gpc_state *st, const char *cluster, int64_t since, int64_t now,
                         gpc_cost_report *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    out->total.name = "";
    if (since < 0 || since > now)
        return gpc_fail(err, GPC_ERR_USAGE, "the window starts after it ends (since %lld, "
                        "now %lld)", (long long)since, (long long)now);
    out->since = since;
    out->now = now;
    const char *what = "read the ledger";
    sqlite3_stmt *s;
    /* The overlap of [start, stop or now] with [since, now], in SQL so that
     * the clipping is written once.  An entry that started after `now`
     * (a clock set back) is left out, as one that ended by `since`. */
    if (gpc_st_prep(st, "SELECT l.id, l.cluster_id, c.name, c.destroyed_at, n.rank, n.name, "
                        "l.provider, l.instance_type, l.region, l.spot, l.price_hourly, "
                        "l.start_at, l.stop_at, "
                        "MAX(0, MIN(COALESCE(l.stop_at, ?2), ?2) - MAX(l.start_at, ?3)) "
                        "FROM ledger l JOIN clusters c ON c.id = l.cluster_id "
                        "JOIN nodes n ON n.id = l.node_id "
                        "WHERE (?1 IS NULL OR c.name = ?1) AND l.start_at <= ?2 "
                        "AND (?3 = 0 OR l.stop_at IS NULL OR l.stop_at > ?3) "
                        "ORDER BY c.name, c.id, n.rank, l.start_at, l.id",
                    &s, what, err))
        return GPC_ERR_STATE;
    if (cluster)
        gpc_st_bind_text(s, 1, cluster);
    else
        sqlite3_bind_null(s, 1);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int64(s, 3, since);
    size_t cap = 0;
    int ret = 0;
    int rc = gpc_st_step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = gpc_st_grow((void **)&out->rows, &cap, out->n_rows, sizeof(*out->rows),
                               err)) != 0)
            break;
        gpc_cost_row *row = &out->rows[out->n_rows];
        memset(row, 0, sizeof(*row));
        const char *t = "ledger";
        row->ledger_id = gpc_st_col_int(st, s, 0, t, 1, INT64_MAX, &ret, err);
        row->cluster_id = gpc_st_col_int(st, s, 1, t, 1, INT64_MAX, &ret, err);
        row->cluster = gpc_st_col_dup(s, 2, err);
        row->destroyed_at = gpc_st_col_int(st, s, 3, t, 0, TIME_MAX, &ret, err);
        row->rank = (uint32_t)gpc_st_col_int(st, s, 4, t, 0, RANK_MAX, &ret, err);
        row->node = gpc_st_col_dup(s, 5, err);
        row->provider = gpc_st_col_dup(s, 6, err);
        row->instance_type = gpc_st_col_dup(s, 7, err);
        row->region = gpc_st_col_dup(s, 8, err);
        row->spot = (int)gpc_st_col_int(st, s, 9, t, 0, 1, &ret, err);
        /* a price the catalog could hold, per node of the largest count */
        row->price_hourly = gpc_st_col_real(st, s, 10, t, 0,
                                            GPC_CATALOG_PRICE_MAX * GPC_CATALOG_GPU_COUNT_MAX,
                                            &ret, err);
        row->start_at = gpc_st_col_int(st, s, 11, t, 0, TIME_MAX, &ret, err);
        row->open = sqlite3_column_type(s, 12) == SQLITE_NULL;
        if (!row->open)
            row->stop_at = gpc_st_col_int(st, s, 12, t, 0, TIME_MAX, &ret, err);
        row->billed_s = gpc_st_col_int(st, s, 13, t, 0, TIME_MAX, &ret, err);
        row->usd = (double)row->billed_s / 3600.0 * row->price_hourly;
        out->n_rows++; /* counted even when a copy failed, so the free sees it */
        if (ret)
            break;
        if (!row->cluster || !row->node || !row->provider || !row->instance_type ||
            !row->region) {
            ret = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            break;
        }
        rc = gpc_st_step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (!ret)
        ret = summarise(out, err);
    if (ret)
        gpc_cost_report_free(out);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Owning instead of renting                                           */

/*
 * Every default is a published figure; docs/spot.md ("Cost ledger")
 * quotes each source.  A model without a cited server has no entry: its
 * comparison needs the user's figures.
 */
const gpc_buy_value gpc_buy_default_pue = {
    1.58, "Uptime Institute, industry average PUE 2023 (UII Update 221, Nov 2023)"};
const gpc_buy_value gpc_buy_default_kwh_price = {
    0.1107, "US EIA, Electricity Monthly Update, commercial average Sept. 2020 "
            "(11.07 cents/kWh)"};
const gpc_buy_value gpc_buy_default_years = {
    5.0, "IRS Publication 946: computers are 5-year MACRS property"};

const gpc_buy_default gpc_buy_defaults[] = {
    /* The DGX A100 launched (May 2020) with eight A100 40GB GPUs. */
    {"A100-40GB", "NVIDIA DGX A100 (320 GB)", 199000.0,
     "DGX A100 launch price, NVIDIA GTC keynote 14 May 2020 (AnandTech)", 8, 6.5,
     "NVIDIA DGX A100 datasheet and user guide: 6.5 kW max"},
    {NULL, NULL, 0, NULL, 0, 0, NULL},
};

/* The catalog row of an entry: its provider, type and region, else the
 * same type in another region (GPUs do not change with the region). */
static const gpc_catalog_row *row_of(const gpc_catalog *cat, const gpc_cost_row *r)
{
    const gpc_catalog_row *any = NULL;
    for (size_t i = 0; cat && i < cat->n_rows; i++) {
        const gpc_catalog_row *c = &cat->rows[i];
        if (strcmp(c->provider, r->provider) != 0 ||
            strcmp(c->instance_type, r->instance_type) != 0)
            continue;
        if (strcmp(c->region, r->region) == 0)
            return c;
        if (!any)
            any = c;
    }
    return any;
}

typedef struct buy_ev {
    int64_t t;
    int64_t d; /* units starting (> 0) or ending (< 0) */
} buy_ev;

static int ev_cmp(const void *a, const void *b)
{
    const buy_ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d); /* ends before starts: no false overlap */
}

/* The most units billed at once in the window. */
static uint32_t peak_units(const gpc_cost_report *r, const uint32_t *units, const int *grp,
                           int g, gpc_error *err, int *rc)
{
    buy_ev *ev = malloc(2 * (r->n_rows ? r->n_rows : 1) * sizeof(*ev));
    if (!ev) {
        *rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        return 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        const gpc_cost_row *row = &r->rows[i];
        if (grp[i] != g || row->billed_s <= 0)
            continue;
        int64_t a = row->start_at > r->since ? row->start_at : r->since;
        ev[n++] = (buy_ev){a, (int64_t)units[i]};
        ev[n++] = (buy_ev){a + row->billed_s, -(int64_t)units[i]};
    }
    qsort(ev, n, sizeof(*ev), ev_cmp);
    int64_t cur = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        cur += ev[i].d;
        if (cur > best)
            best = cur;
    }
    free(ev);
    return best > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)best;
}

static gpc_buy_value pick(double given, const char *option, double dflt, const char *source)
{
    if (given >= 0)
        return (gpc_buy_value){given, option};
    return (gpc_buy_value){dflt, source};
}

/* Fill one group's values, then its amounts when none is missing. */
static void compare_group(const gpc_cost_report *r, const gpc_buy_opts *o, gpc_buy_group *b,
                          int64_t first_start)
{
    const gpc_buy_default *d = NULL;
    for (size_t i = 0; b->gpu_model[0] && gpc_buy_defaults[i].gpu_model; i++)
        if (strcasecmp(gpc_buy_defaults[i].gpu_model, b->gpu_model) == 0)
            d = &gpc_buy_defaults[i];
    b->server = d ? d->server : NULL;
    b->server_price = pick(o->server_price, "--server-price", d ? d->price_usd : 0,
                           d ? d->price_source : NULL);
    b->power_kw = pick(o->power_kw, "--power-kw", d ? d->power_kw : 0,
                       d ? d->power_source : NULL);
    if (!b->gpu_model[0]) /* GPUs not known: each node stands for one server */
        b->server_gpus = (gpc_buy_value){1, "one server per node (GPUs not in the catalog, so --server-gpus cannot apply)"};
    else if (o->server_gpus > 0)
        b->server_gpus = (gpc_buy_value){o->server_gpus, "--server-gpus"};
    else
        b->server_gpus = (gpc_buy_value){d ? d->gpus : 0, d ? d->price_source : NULL};
    b->pue = pick(o->pue, "--pue", gpc_buy_default_pue.v, gpc_buy_default_pue.source);
    b->kwh_price = pick(o->kwh_price, "--kwh-price", gpc_buy_default_kwh_price.v,
                        gpc_buy_default_kwh_price.source);
    b->years = pick(o->years, "--years", gpc_buy_default_years.v,
                    gpc_buy_default_years.source);
    static const char *const need[] = {
        NULL, "--server-price", "--power-kw", "--server-price, --power-kw", "--server-gpus",
        "--server-price, --server-gpus", "--power-kw, --server-gpus",
        "--server-price, --power-kw, --server-gpus"};
    int m = (!b->server_price.source) | (!b->power_kw.source) << 1 |
            (!b->server_gpus.source) << 2;
    b->missing = need[m];
    b->period_s = r->since ? r->now - r->since : r->now - first_start;
    if (b->missing || b->period_s <= 0)
        return;
    uint32_t per = (uint32_t)b->server_gpus.v;
    b->servers = b->peak_units / per + (b->peak_units % per != 0);
    double hours = (double)b->period_s / 3600.0;
    b->amortised_usd = b->servers * b->server_price.v * (double)b->period_s /
                       (b->years.v * 365.0 * 86400.0);
    b->power_usd = b->servers * b->power_kw.v * b->pue.v * hours * b->kwh_price.v;
    b->owned_usd = b->amortised_usd + b->power_usd;
    if (b->peak_units)
        b->utilisation = b->unit_seconds / ((double)b->peak_units * (double)b->period_s);
    b->break_even = b->rented_usd > 0 && b->utilisation > 0
                        ? b->owned_usd / (b->rented_usd / b->utilisation)
                        : -1;
}

static int group_cmp(const void *a, const void *b)
{
    const char *x = ((const gpc_buy_group *)a)->gpu_model;
    const char *y = ((const gpc_buy_group *)b)->gpu_model;
    if (!x[0] || !y[0])
        return !x[0] - !y[0]; /* the unknown model last */
    return strcmp(x, y);
}

int gpc_buy_compare(const gpc_cost_report *r, const gpc_catalog *cat, const gpc_buy_opts *o,
                    gpc_buy_group **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    size_t nr = r->n_rows ? r->n_rows : 1;
    uint32_t *units = calloc(nr, sizeof(*units));
    int *grp = calloc(nr, sizeof(*grp));
    gpc_buy_group *g = calloc(nr, sizeof(*g));
    int64_t *first = calloc(nr, sizeof(*first));
    if (!units || !grp || !g || !first) {
        free(units), free(grp), free(g), free(first);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    size_t ng = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        const gpc_cost_row *row = &r->rows[i];
        const gpc_catalog_row *c = row_of(cat, row);
        const char *model = c && c->gpu_count && c->gpu_model ? c->gpu_model : "";
        units[i] = model[0] ? c->gpu_count : 1;
        size_t k = 0;
        while (k < ng && strcmp(g[k].gpu_model, model) != 0)
            k++;
        if (k == ng) {
            g[ng].gpu_model = model;
            first[ng++] = row->start_at;
        }
        grp[i] = (int)k;
        g[k].rows++;
        g[k].rented_usd += row->usd;
        g[k].unit_seconds += (double)row->billed_s * units[i];
        if (row->start_at < first[k])
            first[k] = row->start_at;
    }
    int rc = 0;
    for (size_t k = 0; !rc && k < ng; k++) {
        g[k].peak_units = peak_units(r, units, grp, (int)k, err, &rc);
        if (!rc)
            compare_group(r, o, &g[k], first[k]);
    }
    free(units), free(grp), free(first);
    if (rc) {
        free(g);
        return rc;
    }
    qsort(g, ng, sizeof(*g), group_cmp);
    *out = g;
    *n = ng;
    return 0;
}
