/* cmd_cost.c - `gpuctl cost`: the ledger per cluster, provider and in all
 * over a window, and owning against renting (--compare-buy). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/clock.h"
#include "gpuctl/cost.h"
#include "gpuctl/spec.h"

enum { O_SINCE = 1, O_COMPARE, O_PRICE, O_GPUS, O_KW, O_PUE, O_KWH, O_YEARS };

const gpc_option gpc_cost_options[] = {
    {"since", 0, "WHEN", O_SINCE, "only what was billed from WHEN on: a duration back from "
     "now (7d, 24h, 1h30m) or an RFC 3339 UTC date or time (2025-01-31, "
     "2025-01-31T08:00:00Z); default: every entry"},
    {"compare-buy", 0, NULL, O_COMPARE, "also the cost of owning servers for the same GPUs "
     "over the same period, and the utilisation above which owning is cheaper"},
    {"server-price", 0, "USD", O_PRICE, "price of one server (default: per GPU model, "
     "source: docs/spot.md; A100-40GB: 199000, NVIDIA DGX A100 launch price)"},
    {"server-gpus", 0, "N", O_GPUS, "GPUs per server (default: per GPU model; A100-40GB: "
     "8, DGX A100)"},
    {"power-kw", 0, "KW", O_KW, "power of one server at full load, kW (default: per GPU "
     "model; A100-40GB: 6.5, DGX A100 datasheet)"},
    {"pue", 0, "X", O_PUE, "power usage effectiveness, >= 1 (default 1.58, source: Uptime "
     "Institute 2023 industry average)"},
    {"kwh-price", 0, "USD", O_KWH, "electricity, USD per kWh (default 0.1107, source: US EIA "
     "commercial average, Sept. 2020)"},
    {"years", 0, "N", O_YEARS, "years the server price is spread over (default 5, source: "
     "IRS Publication 946, 5-year MACRS property)"},
    {NULL, 0, NULL, 0, NULL}
};

typedef struct cost_args {
    const char *since;
    int compare;
    gpc_buy_opts buy;
    int buy_given; /* a --server-price etc. without --compare-buy */
} cost_args;

/* A decimal number > 0 (>= 1 for the PUE) and at most 1e12, written as
 * digits (no hex, no leading blanks). */
static int parse_pos(const char *opt, const char *arg, double min, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    int digits = arg[0] && strchr("0123456789.", arg[0]) && !strpbrk(arg, "xXpP");
    if (!digits || end == arg || *end || !isfinite(v) || v < min || (min == 0 && v <= 0) ||
        v > 1e12)
        return gpc_opt_fail("%s: expected a decimal number %s %g and at most 1e12, got '%s'",
                            opt, min == 0 ? "above" : "from", min, arg);
    *out = v;
    return 0;
}

static int cost_opt(int id, const char *arg, void *ud)
{
    cost_args *a = ud;
    double v = 0;
    if (id != O_SINCE && id != O_COMPARE)
        a->buy_given = 1;
    switch (id) {
    case O_SINCE: return gpc_opt_once(&a->since, arg);
    case O_COMPARE: a->compare = 1; return 0;
    case O_PRICE: return parse_pos("--server-price", arg, 0, &a->buy.server_price);
    case O_KW: return parse_pos("--power-kw", arg, 0, &a->buy.power_kw);
    case O_PUE: return parse_pos("--pue", arg, 1, &a->buy.pue);
    case O_KWH: return parse_pos("--kwh-price", arg, 0, &a->buy.kwh_price);
    case O_YEARS: return parse_pos("--years", arg, 0, &a->buy.years);
    case O_GPUS:
        if (parse_pos("--server-gpus", arg, 0, &v) || v != floor(v) || v > 65535)
            return gpc_opt_fail("--server-gpus: expected a whole number of GPUs from 1 to "
                                "65535, got '%s'", arg);
        a->buy.server_gpus = (uint32_t)v;
        return 0;
    }
    return -1;
}

/* An RFC 3339 date (midnight UTC) or date and time (Z or an offset;
 * seconds, no fraction), into *t.  -1 when `s` is neither. */
static int parse_rfc3339(const char *s, int64_t *t)
{
    int y, mo, d, h = 0, mi = 0, se = 0, n = 0, oh = 0, om = 0;
    char sign = 0;
    size_t len = strlen(s);
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
        return -1;
    if (len > 10) {
        int m = 0;
        if ((s[10] != 'T' && s[10] != 't') ||
            sscanf(s + 11, "%2d:%2d:%2d%n", &h, &mi, &se, &m) != 3 || m != 8)
            return -1;
        const char *z = s + 19;
        if ((z[0] == 'Z' || z[0] == 'z') && !z[1]) {
            /* UTC */
        } else if ((z[0] == '+' || z[0] == '-') && strlen(z) == 6 && z[3] == ':' &&
                   sscanf(z + 1, "%2d:%2d", &oh, &om) == 2 && oh <= 23 && om <= 59) {
            sign = z[0];
        } else {
            return -1;
        }
    }
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
                    .tm_min = mi, .tm_sec = se};
    time_t v = timegm(&tm);
    /* timegm normalises 2025-02-30 into March: a date that moved is no date */
    if (v == (time_t)-1 || tm.tm_year != y - 1900 || tm.tm_mon != mo - 1 ||
        tm.tm_mday != d || tm.tm_hour != h || tm.tm_min != mi || tm.tm_sec != se)
        return -1;
    int64_t off = (int64_t)oh * 3600 + om * 60;
    *t = (int64_t)v - (sign == '+' ? off : sign == '-' ? -off : 0);
    return 0;
}

/* The window's start from --since (0 when none), or a usage error. */
static int since_of(const char *arg, int64_t now, int64_t *since, gpc_error *err)
{
    *since = 0;
    if (!arg)
        return 0;
    uint64_t d;
    gpc_error e;
    gpc_error_clear(&e);
    if (arg[0] >= '0' && arg[0] <= '9' && strchr(arg, '-') == NULL) {
        if (gpc_parse_duration("--since", arg, &d, &e))
            return gpc_fail(err, GPC_ERR_USAGE, "%s", e.msg);
        *since = (int64_t)d >= now ? 1 : now - (int64_t)d;
        return 0;
    }
    if (parse_rfc3339(arg, since))
        return gpc_fail(err, GPC_ERR_USAGE, "--since: expected a duration back from now "
                        "(7d, 24h, 1h30m) or an RFC 3339 UTC date or time (2025-01-31, "
                        "2025-01-31T08:00:00Z), got '%s'", arg);
    if (*since > now)
        return gpc_fail(err, GPC_ERR_USAGE, "--since: %s is after now", arg);
    /* before any entry could be (1970): the whole ledger, as with no --since */
    if (*since <= 0)
        *since = 0;
    return 0;
}

static void fmt_time(int64_t t, char *out, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, n, "-");
}

/* ---- JSON ---------------------------------------------------------------- */

static void add_time(cJSON *o, const char *key, int64_t t)
{
    if (t > 0)
        cJSON_AddNumberToObject(o, key, (double)t);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *sum_json(const gpc_cost_sum *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "entries", (double)s->rows);
    cJSON_AddNumberToObject(j, "open", (double)s->open);
    cJSON_AddNumberToObject(j, "billed_s", (double)s->billed_s);
    cJSON_AddNumberToObject(j, "cost_usd", s->usd);
    cJSON_AddNumberToObject(j, "price_hourly_now", s->hourly_now);
    return j;
}

static cJSON *value_json(const gpc_buy_value *v)
{
    cJSON *j = cJSON_CreateObject();
    if (v->source) {
        cJSON_AddNumberToObject(j, "value", v->v);
        cJSON_AddStringToObject(j, "source", v->source);
        cJSON_AddBoolToObject(j, "default", v->source[0] != '-');
    } else {
        cJSON_AddNullToObject(j, "value");
        cJSON_AddNullToObject(j, "source");
        cJSON_AddFalseToObject(j, "default");
    }
    return j;
}

static cJSON *buy_json(const gpc_buy_group *g, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        const gpc_buy_group *b = &g[i];
        cJSON *j = cJSON_CreateObject();
        if (b->gpu_model[0])
            cJSON_AddStringToObject(j, "gpu_model", b->gpu_model);
        else
            cJSON_AddNullToObject(j, "gpu_model");
        cJSON_AddStringToObject(j, "unit", b->gpu_model[0] ? "gpu" : "node");
        cJSON_AddNumberToObject(j, "entries", (double)b->rows);
        cJSON_AddNumberToObject(j, "rented_usd", b->rented_usd);
        cJSON_AddNumberToObject(j, "unit_seconds", b->unit_seconds);
        cJSON_AddNumberToObject(j, "peak_units", b->peak_units);
        cJSON_AddNumberToObject(j, "period_s", (double)b->period_s);
        if (b->server)
            cJSON_AddStringToObject(j, "server", b->server);
        else
            cJSON_AddNullToObject(j, "server");
        cJSON_AddItemToObject(j, "server_price_usd", value_json(&b->server_price));
        cJSON_AddItemToObject(j, "server_gpus", value_json(&b->server_gpus));
        cJSON_AddItemToObject(j, "power_kw", value_json(&b->power_kw));
        cJSON_AddItemToObject(j, "pue", value_json(&b->pue));
        cJSON_AddItemToObject(j, "kwh_price_usd", value_json(&b->kwh_price));
        cJSON_AddItemToObject(j, "years", value_json(&b->years));
        cJSON_AddNumberToObject(j, "servers", b->servers);
        cJSON_AddNumberToObject(j, "amortised_usd", b->amortised_usd);
        cJSON_AddNumberToObject(j, "power_usd", b->power_usd);
        cJSON_AddNumberToObject(j, "owned_usd", b->owned_usd);
        cJSON_AddNumberToObject(j, "utilisation", b->utilisation);
        if (b->break_even >= 0)
            cJSON_AddNumberToObject(j, "break_even_utilisation", b->break_even);
        else
            cJSON_AddNullToObject(j, "break_even_utilisation");
        cJSON_AddItemToArray(arr, j);
    }
    return arr;
}

static void print_json(const gpc_cost_report *r, const gpc_buy_group *g, size_t ng,
                       int compare)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "cost");
    add_time(doc, "since", r->since);
    cJSON_AddNumberToObject(doc, "now", (double)r->now);
    cJSON *cl = cJSON_AddArrayToObject(doc, "clusters");
    for (size_t c = 0, i = 0; c < r->n_clusters; c++) {
        const gpc_cost_sum *s = &r->clusters[c];
        cJSON *j = sum_json(s);
        cJSON_AddStringToObject(j, "name", s->name);
        add_time(j, "destroyed_at", s->destroyed_at);
        cJSON *nodes = cJSON_AddArrayToObject(j, "ledger");
        for (; i < r->n_rows && r->rows[i].cluster_id == s->cluster_id; i++) {
            const gpc_cost_row *row = &r->rows[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "rank", row->rank);
            cJSON_AddStringToObject(e, "node", row->node);
            cJSON_AddStringToObject(e, "provider", row->provider);
            cJSON_AddStringToObject(e, "instance_type", row->instance_type);
            cJSON_AddStringToObject(e, "region", row->region);
            cJSON_AddStringToObject(e, "purchase", row->spot ? "spot" : "on-demand");
            cJSON_AddNumberToObject(e, "price_hourly", row->price_hourly);
            cJSON_AddNumberToObject(e, "start_at", (double)row->start_at);
            add_time(e, "stop_at", row->stop_at);
            cJSON_AddBoolToObject(e, "open", row->open);
            cJSON_AddNumberToObject(e, "billed_s", (double)row->billed_s);
            cJSON_AddNumberToObject(e, "cost_usd", row->usd);
            cJSON_AddItemToArray(nodes, e);
        }
        cJSON_AddItemToArray(cl, j);
    }
    cJSON *pv = cJSON_AddArrayToObject(doc, "providers");
    for (size_t p = 0; p < r->n_providers; p++) {
        cJSON *j = sum_json(&r->providers[p]);
        cJSON_AddStringToObject(j, "name", r->providers[p].name);
        cJSON_AddItemToArray(pv, j);
    }
    cJSON_AddItemToObject(doc, "total", sum_json(&r->total));
    if (compare)
        cJSON_AddItemToObject(doc, "compare_buy", buy_json(g, ng));
    else
        cJSON_AddNullToObject(doc, "compare_buy");
    gpc_print_json(doc);
}

/* ---- tables --------------------------------------------------------------- */

static void print_tables(const gpc_out *o, const gpc_cost_report *r)
{
    char a[32], b[32];
    for (size_t c = 0, i = 0; c < r->n_clusters; c++) {
        const gpc_cost_sum *s = &r->clusters[c];
        fmt_time(s->destroyed_at, a, sizeof(a));
        printf("%scluster %s%s%s", c ? "\n" : "", gpc_c_bold(o), s->name, gpc_c_reset(o));
        if (s->destroyed_at)
            printf(" (destroyed %s)", a);
        printf("\n");
        static const char *const hdr[] = {"RANK", "INSTANCE TYPE", "PROVIDER", "REGION",
                                          "PURCHASE", "USD/H", "START", "STOP", "HOURS",
                                          "USD"};
        gpc_table t;
        gpc_table_init(&t, 10, hdr);
        for (; i < r->n_rows && r->rows[i].cluster_id == s->cluster_id; i++) {
            const gpc_cost_row *row = &r->rows[i];
            char rank[16], price[32], hours[32], usd[32];
            snprintf(rank, sizeof(rank), "%u", row->rank);
            snprintf(price, sizeof(price), "%.4f", row->price_hourly);
            fmt_time(row->start_at, a, sizeof(a));
            if (row->open)
                snprintf(b, sizeof(b), "running");
            else
                fmt_time(row->stop_at, b, sizeof(b));
            snprintf(hours, sizeof(hours), "%.2f", (double)row->billed_s / 3600.0);
            snprintf(usd, sizeof(usd), "%.2f", row->usd);
            const char *cells[] = {rank, row->instance_type, row->provider,
                                   row->region[0] ? row->region : "-",
                                   row->spot ? "spot" : "on-demand", price, a, b, hours, usd};
            gpc_table_add(&t, cells);
        }
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
        printf("cluster %s: %.2f USD over %.2f node-hours", s->name, s->usd,
               (double)s->billed_s / 3600.0);
        if (s->open)
            printf("; %zu node(s) still billing, %.4f USD/hour", s->open, s->hourly_now);
        printf("\n");
    }
    static const char *const phdr[] = {"PROVIDER", "ENTRIES", "NODE-HOURS", "USD",
                                       "RUNNING USD/H"};
    gpc_table t;
    gpc_table_init(&t, 5, phdr);
    for (size_t p = 0; p < r->n_providers; p++) {
        const gpc_cost_sum *s = &r->providers[p];
        char n[16], h[32], u[32], run[32];
        snprintf(n, sizeof(n), "%zu", s->rows);
        snprintf(h, sizeof(h), "%.2f", (double)s->billed_s / 3600.0);
        snprintf(u, sizeof(u), "%.2f", s->usd);
        snprintf(run, sizeof(run), "%.4f", s->hourly_now);
        const char *cells[] = {s->name, n, h, u, run};
        gpc_table_add(&t, cells);
    }
    printf("\n");
    gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
    fmt_time(r->now, b, sizeof(b));
    if (r->since)
        fmt_time(r->since, a, sizeof(a));
    printf("\ntotal: %.2f USD over %.2f node-hours, from %s to %s", r->total.usd,
           (double)r->total.billed_s / 3600.0, r->since ? a : "the first entry", b);
    if (r->total.open)
        printf("; %zu node(s) still billing, %.4f USD/hour", r->total.open,
               r->total.hourly_now);
    printf("\n");
}

/* dec: decimals, or < 0 for the shortest form (%g) */
static void print_value(gpc_table *t, const char *what, const gpc_buy_value *v, int dec,
                        const char *unit)
{
    char val[64], from[320];
    if (dec >= 0)
        snprintf(val, sizeof(val), "%.*f%s", dec, v->v, unit);
    else
        snprintf(val, sizeof(val), "%g%s", v->v, unit);
    if (v->source[0] == '-')
        snprintf(from, sizeof(from), "given (%s)", v->source);
    else
        snprintf(from, sizeof(from), "default, source: %s", v->source);
    const char *cells[] = {what, val, from};
    gpc_table_add(t, cells);
}

static void print_buy(const gpc_out *o, const gpc_cost_report *r, const gpc_buy_group *g,
                      size_t n)
{
    printf("\nOwning instead of renting (--compare-buy):\n");
    for (size_t i = 0; i < n; i++) {
        const gpc_buy_group *b = &g[i];
        const char *unit = b->gpu_model[0] ? "GPU(s)" : "node(s)";
        printf("\n%s%s%s: rented %.2f USD over %.2f hours; at most %u %s billed at once "
               "(%.2f %s-hours)\n", gpc_c_bold(o),
               b->gpu_model[0] ? b->gpu_model : "GPUs not in the catalog", gpc_c_reset(o),
               b->rented_usd, (double)b->period_s / 3600.0, b->peak_units, unit,
               b->unit_seconds / 3600.0, b->gpu_model[0] ? "GPU" : "node");
        static const char *const hdr[] = {"FIGURE", "VALUE", "FROM"};
        gpc_table t;
        gpc_table_init(&t, 3, hdr);
        print_value(&t, "server price", &b->server_price, 2, " USD");
        print_value(&t, "GPUs per server", &b->server_gpus, 0, "");
        print_value(&t, "server power", &b->power_kw, 2, " kW");
        print_value(&t, "PUE", &b->pue, 2, "");
        print_value(&t, "electricity", &b->kwh_price, 4, " USD/kWh");
        print_value(&t, "amortisation", &b->years, -1, " years");
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
        printf("owned: %u server(s)%s%s%s: %.2f amortised + %.2f power = %.2f USD\n",
               b->servers, b->server ? " (" : "", b->server ? b->server : "",
               b->server ? ")" : "", b->amortised_usd, b->power_usd, b->owned_usd);
        if (b->break_even < 0)
            printf("the rental cost %.2f USD: owning is never cheaper (no break-even)\n",
                   b->rented_usd);
        else
            printf("utilisation %.1f%%: owning is cheaper above %.1f%% (%s at this "
                   "utilisation)\n", 100 * b->utilisation, 100 * b->break_even,
                   b->owned_usd < b->rented_usd ? "owning is cheaper" : "renting is cheaper");
    }
    (void)r;
}

int gpc_cmd_cost(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    cost_args a = {NULL, 0, {-1, 0, -1, -1, -1, -1}, 0};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, cost_opt, &a, &done);
    if (done)
        return rc;
    const char *name = optind < argc ? argv[optind] : NULL;
    if (name && optind + 1 < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind + 1]);
    if (name && !gpc_valid_cluster_name(name))
        return gpc_usage_error(o, c, "invalid cluster name '%s'", name);
    if (a.buy_given && !a.compare)
        return gpc_usage_error(o, c, "--server-price, --server-gpus, --power-kw, --pue, "
                               "--kwh-price and --years go with --compare-buy%s", "");
    gpc_error err;
    gpc_error_clear(&err);
    int64_t now = gpc_now(), since = 0;
    if (since_of(a.since, now, &since, &err))
        return gpc_usage_error(o, c, "%s", err.msg);

    gpc_session s;
    gpc_cost_report r;
    memset(&r, 0, sizeof(r));
    gpc_buy_group *g = NULL;
    size_t ng = 0;
    gpc_catalog *cat = NULL;
    o->cfg.state_reads_only = 1; /* on a full disk: what was last recorded */
    rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc && name) {
        int recorded = 0;
        rc = gpc_suggest_clusters(&s, name, &recorded, NULL, NULL, &err);
        if (!rc && !recorded)
            rc = gpc_no_cluster(&s, name, "", &err);
    }
    /* What the providers say changed since we last looked (a node that
     * ended stops billing there), as status does; not on a read-only
     * state, which could not record it. */
    gpc_cluster_rec *live = NULL;
    size_t nl = 0;
    gpc_error le;
    gpc_error_clear(&le);
    if (!rc && !gpc_state_read_only(s.st) && gpc_cluster_list(s.st, 0, &live, &nl, &le) == 0) {
        for (size_t i = 0; i < nl; i++) {
            if (name && strcmp(live[i].name, name) != 0)
                continue;
            gpc_error e;
            gpc_error_clear(&e);
            if (gpc_cluster_refresh(&s, &live[i], &e))
                fprintf(stderr, "gpuctl: warning: cluster %s: could not refresh: %s\n",
                        live[i].name, e.msg);
        }
    }
    gpc_cluster_list_free(live, nl); /* a list that failed: the report says why */
    if (!rc) {
        now = gpc_now();
        if (since > now)
            since = now;
        rc = gpc_cost_report_make(s.st, name, since, now, &r, &err);
    }
    if (!rc && a.compare)
        rc = gpc_catalog_open(o->cfg.catalog_path, &cat, &err);
    if (!rc && a.compare)
        rc = gpc_buy_compare(&r, cat, &a.buy, &g, &ng, &err);
    for (size_t i = 0; !rc && i < ng; i++) {
        if (!g[i].missing)
            continue;
        if (g[i].gpu_model[0])
            rc = gpc_fail(&err, GPC_ERR_USAGE, "--compare-buy: no cited server figures for "
                          "GPU model %s (docs/spot.md lists the defaults): give %s",
                          g[i].gpu_model, g[i].missing);
        else
            rc = gpc_fail(&err, GPC_ERR_USAGE, "--compare-buy: the catalog does not know "
                          "the GPUs of some nodes (each counts as one server): give %s",
                          g[i].missing);
    }
    if (!rc && o->format == GPC_OUT_JSON)
        print_json(&r, g, ng, a.compare);
    else if (!rc && r.n_rows == 0)
        printf("nothing billed%s%s%s\n", name ? " for cluster " : "", name ? name : "",
               a.since ? " in the window" : "");
    else if (!rc) {
        print_tables(o, &r);
        if (a.compare)
            print_buy(o, &r, g, ng);
    }
    int st = rc ? gpc_report_error(o, &err) : 0;
    free(g);
    gpc_catalog_free(cat);
    gpc_cost_report_free(&r);
    gpc_session_close(&s);
    return st;
}
