/*
 * cost.h - what the cost ledger says was spent (`gpuctl cost`), and what
 * owning equivalent servers would have cost instead (`--compare-buy`).
 *
 * The ledger (state.h) has one entry per stretch a node was billed: the
 * price it was bought at (USD/hour, the spot price at launch for a spot
 * node where the catalog or the provider knew it), its provider, instance
 * type, region and market, its start and its stop (none while it bills).
 * A report reads every entry of every cluster, destroyed ones included,
 * and bills it for its overlap with a window:
 *
 *   billed seconds = overlap([start, stop or now], [since, now])
 *   USD            = billed seconds / 3600 x price (USD/hour)
 *
 * Units: times are Unix seconds (UTC), durations seconds, prices USD/hour,
 * amounts USD.  The engine computes; it prints nothing.
 *
 * Ownership: a gpc_cost_report owns every string and array it points to;
 * release it with gpc_cost_report_free.  gpc_buy_compare fills an array
 * the caller releases with free(); its strings point into the report, the
 * catalog and static tables, so it lives no longer than they do.
 */
#ifndef GPUCTL_COST_H
#define GPUCTL_COST_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/catalog.h"
#include "gpuctl/error.h"
#include "gpuctl/state.h"

/* One ledger entry, billed for the window. */
typedef struct gpc_cost_row {
    int64_t ledger_id;
    int64_t cluster_id;         /* the cluster record (names repeat across records) */
    const char *cluster;        /* its name */
    int64_t destroyed_at;       /* the cluster's; 0 while it lives */
    uint32_t rank;
    const char *node;           /* the node's name, "<cluster>-<rank>" */
    const char *provider;
    const char *instance_type;
    const char *region;         /* "" for an entry whose node recorded none */
    int spot;                   /* 1 = bought as spot, 0 = on-demand */
    double price_hourly;        /* USD/hour, as bought */
    int64_t start_at;
    int64_t stop_at;            /* 0 while open */
    int open;                   /* still billing (no stop recorded) */
    int64_t billed_s;           /* seconds inside the window, >= 0 */
    double usd;                 /* billed_s / 3600 x price_hourly */
} gpc_cost_row;

/* A sum over rows: a cluster record, a provider, or all. */
typedef struct gpc_cost_sum {
    const char *name;           /* the cluster's or provider's name; "" for the total */
    int64_t cluster_id;         /* a cluster's record; 0 otherwise */
    int64_t destroyed_at;       /* a cluster's; 0 otherwise, or while it lives */
    size_t rows;                /* entries in the window */
    size_t open;                /* of them still billing */
    int64_t billed_s;           /* node-seconds */
    double usd;
    double hourly_now;          /* USD/hour of the entries still billing */
} gpc_cost_sum;

typedef struct gpc_cost_report {
    int64_t since;              /* the window's start (0: every entry) */
    int64_t now;                /* its end */
    gpc_cost_row *rows;         /* by cluster name, record, rank, start */
    size_t n_rows;
    gpc_cost_sum *clusters;     /* by name, then record; one per record with rows */
    size_t n_clusters;
    gpc_cost_sum *providers;    /* by name */
    size_t n_providers;
    gpc_cost_sum total;
    void *priv;                 /* string storage; opaque */
} gpc_cost_report;

/*
 * The ledger over the window [since, now] into *out: every entry that
 * overlaps it (an open entry always does when it started by `now`), of
 * every cluster record named `cluster` (destroyed ones too), or of every
 * cluster when `cluster` is NULL.  since = 0: from the first entry.  A
 * stop after `now` (a clock set back) is billed up to `now`.
 * Errors: GPC_ERR_USAGE when since > now, GPC_ERR_STATE (a row out of
 * range names its table, row and column), GPC_ERR_NOMEM; *out is then
 * empty (gpc_cost_report_free is still fine).
 */
int gpc_cost_report_make(gpc_state *st, const char *cluster, int64_t since, int64_t now,
                         gpc_cost_report *out, gpc_error *err);
void gpc_cost_report_free(gpc_cost_report *r);

/* ---- owning instead of renting (--compare-buy) ------------------------ */

/*
 * What the user gave: each value < 0 (server_gpus: 0) takes the default
 * (gpc_buy_default for the GPU model; the PUE, electricity price and
 * years of every model).  A value given applies to every GPU model.
 */
typedef struct gpc_buy_opts {
    double server_price;        /* USD per server */
    uint32_t server_gpus;       /* GPUs per server */
    double power_kw;            /* kW per server at full load */
    double pue;                 /* power usage effectiveness, >= 1 */
    double kwh_price;           /* USD per kWh */
    double years;               /* years the price is spread over (straight line) */
} gpc_buy_opts;

/* A value and where it came from: the option's name ("--pue") when the
 * user gave it, else the public source of the default. */
typedef struct gpc_buy_value {
    double v;
    const char *source;         /* NULL: neither given nor a cited default */
} gpc_buy_value;

/* A server with cited figures, for the GPU models it holds. */
typedef struct gpc_buy_default {
    const char *gpu_model;      /* the catalog's key */
    const char *server;         /* what it is ("NVIDIA DGX A100 (320 GB)") */
    double price_usd;
    const char *price_source;
    uint32_t gpus;
    double power_kw;            /* the maximum system power */
    const char *power_source;
} gpc_buy_default;

/* The defaults every model shares, with their sources. */
extern const gpc_buy_value gpc_buy_default_pue;
extern const gpc_buy_value gpc_buy_default_kwh_price;
extern const gpc_buy_value gpc_buy_default_years;

/* The server defaults, ended by an entry whose gpu_model is NULL. */
extern const gpc_buy_default gpc_buy_defaults[];

/*
 * One GPU model's rental against owning enough servers for the most GPUs
 * it had billed at once.  A node whose GPUs the catalog does not know
 * (an instance type of no catalog row: local, a Slurm site) is a group of
 * its own (gpu_model "") that counts nodes, each one server: `units` are
 * GPUs in a model's group and nodes in that one.
 *
 *   period     = now - since (since 0: the group's first start)
 *   servers    = ceil(peak_units / server_gpus)
 *   amortised  = servers x server_price x period / (years x 365 days)
 *   power      = servers x power_kw x pue x period hours x kwh_price
 *                (full load for the whole period: an upper bound)
 *   owned      = amortised + power
 *   utilisation = unit_seconds / (peak_units x period)
 *   break_even = owned / (rented / utilisation): the utilisation above
 *                which owning costs less than renting at these prices
 */
typedef struct gpc_buy_group {
    const char *gpu_model;      /* "" = not known to the catalog */
    size_t rows;
    double rented_usd;
    double unit_seconds;        /* GPU-seconds (node-seconds for "") billed */
    uint32_t peak_units;        /* most GPUs (nodes) billed at once */
    int64_t period_s;
    const char *server;         /* the default server's name, or NULL */
    gpc_buy_value server_price, server_gpus, power_kw, pue, kwh_price, years;
    const char *missing;        /* NULL, or the options it needs ("--server-price, --power-kw") */
    uint32_t servers;
    double amortised_usd, power_usd, owned_usd;
    double utilisation;         /* 0..1 */
    double break_even;          /* < 0: owning never costs less (nothing billed) */
} gpc_buy_group;

/*
 * Group the report's rows by GPU model (from `cat`: the row of the
 * entry's provider, instance type and region, else of another region) and
 * compare each group.  *out (free()) gets the groups by model name, the
 * unknown one last.  A group missing a value is still returned, with
 * `missing` set and its amounts 0.  Errors: GPC_ERR_NOMEM.
 */
int gpc_buy_compare(const gpc_cost_report *r, const gpc_catalog *cat, const gpc_buy_opts *o,
                    gpc_buy_group **out, size_t *n, gpc_error *err);

#endif /* GPUCTL_COST_H */
