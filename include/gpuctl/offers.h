/*
 * offers.h - offer selection: which (instance type, region, purchase
 * option) runs a job cheapest, and why every other candidate lost.
 *
 * A candidate is one catalog row bought one way (on-demand or spot).  The
 * selection walks every row once, gives each a verdict from a fixed order
 * of checks, and ranks the feasible ones:
 *
 *   1. cluster price per hour, lowest first (or, with GPC_SORT_PER_TFLOPS,
 *      USD per dense TFLOPS-hour first);
 *   2. ties (equal to 1e-6 USD) broken by USD per dense TFLOPS-hour, lower
 *      first, unknown TFLOPS last;
 *   3. then provider, instance type, region, on-demand before spot, so the
 *      order is total and repeatable.
 *
 * The cluster price is head + (nodes - 1) x worker, per hour, where the head
 * (node rank 0) may be bought differently from the workers (spec
 * spot.head).  All prices are USD per hour.
 *
 * Ownership: gpc_offers_select fills a gpc_selection that the caller
 * releases with gpc_selection_free(); candidates point at the catalog rows
 * (and `extra` rows) given, which must outlive the selection.
 */
#ifndef GPUCTL_OFFERS_H
#define GPUCTL_OFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/catalog.h"
#include "gpuctl/error.h"
#include "gpuctl/spec.h"

typedef enum gpc_sort {
    GPC_SORT_PRICE = 0,     /* cluster USD/hour */
    GPC_SORT_PER_TFLOPS     /* USD per dense TFLOPS-hour */
} gpc_sort;

/* What is asked for.  Pointers are borrowed. */
typedef struct gpc_offer_query {
    const gpc_gpu_req *gpus;   /* acceptable GPU configurations (any of); */
    size_t n_gpus;             /*   none = any row, GPU or not */
    gpc_range cpus;            /* vCPUs per node, {0,0} = any */
    gpc_range memory_gib;      /* RAM per node, GiB, {0,0} = any */
    gpc_interconnect interconnect; /* ANY/NONE: no filter; EFA, INFINIBAND,
                                      ERDMA: that fabric; RDMA: any of them */
    const char *const *providers;  /* allowed providers; n = 0: all */
    size_t n_providers;
    const char *const *regions;    /* allowed regions; n = 0: all */
    size_t n_regions;
    const char *const *zones;      /* allowed zones; n = 0: all.  A zone named
                                      after its region (AWS us-east-1a, Aliyun
                                      cn-hangzhou-h) keeps only that region;
                                      one that a provider has in every region
                                      (gpc_provider.zone_in_every_region:
                                      Azure 1, 2, 3) any region.  A row with
                                      its own zone (gpc_catalog_row.zone: an
                                      offer a provider listed) stays only
                                      when that zone is named here exactly */
    size_t n_zones;
    const char *const *instance_types; /* pinned types; n = 0: all */
    size_t n_instance_types;
    gpc_spot_policy policy;    /* workers: ON_DEMAND, SPOT or AUTO (both) */
    gpc_spot_policy head;      /* node rank 0; AUTO = as the workers */
    double max_price;          /* USD per node-hour; 0 = no cap */
    uint32_t nodes;            /* >= 1 */
    double budget_hourly;      /* USD/hour for the cluster; 0 = no cap */
    double budget_total;       /* USD for the cluster's lifetime; 0 = no cap */
    uint64_t max_duration_s;   /* seconds; 0 = not bounded */
    gpc_sort sort;
} gpc_offer_query;

/*
 * Verdicts, in the order the checks run: the first that fails is the
 * candidate's verdict.  GPC_LOST_HARDWARE rows are not alternatives at all
 * (wrong GPU); the others are reported as "lost on ...".
 */
typedef enum gpc_verdict {
    GPC_FIT = 0,
    GPC_LOST_PROVIDER,      /* provider not allowed */
    GPC_LOST_INSTANCE_TYPE, /* not one of the pinned instance types */
    GPC_LOST_HARDWARE,      /* GPU model, memory or count does not match */
    GPC_LOST_CPU,           /* vCPUs outside resources.cpus */
    GPC_LOST_MEMORY,        /* RAM outside resources.memory */
    GPC_LOST_INTERCONNECT,  /* fabric missing or other than asked */
    GPC_LOST_REGION,        /* region not allowed */
    GPC_LOST_NO_PRICE,      /* no price for this purchase option */
    GPC_LOST_MAX_PRICE,     /* node price above spot.max_price */
    GPC_LOST_BUDGET_HOURLY, /* cluster price above budget.max_hourly */
    GPC_LOST_BUDGET_TOTAL,  /* cluster price x max_duration above budget.max_total */
    GPC_VERDICT_COUNT
} gpc_verdict;

/* Stable lower-case name used in JSON ("fit", "interconnect", "budget_hourly", ...). */
const char *gpc_verdict_name(gpc_verdict v);

typedef struct gpc_candidate {
    const gpc_catalog_row *row;
    int spot;                  /* 1 = workers bought as spot */
    int head_spot;             /* 1 = head (rank 0) bought as spot */
    double price_node;         /* USD/hour for one worker node */
    double price_head;         /* USD/hour for the head node */
    double price_cluster;      /* USD/hour: head + (nodes - 1) x worker */
    double price_cluster_ondemand; /* USD/hour for the same nodes all on-demand;
                                      < 0 when there is no on-demand price */
    double tflops_node;        /* dense TFLOPS of one node (gpc_gpu_tflops x count); 0 = unknown */
    double usd_per_tflops;     /* price_node / tflops_node, USD per TFLOPS-hour; 0 = unknown */
    double projected_total;    /* USD: price_cluster x max_duration hours; 0 = unbounded */
    gpc_verdict verdict;
    char why[192];             /* "" for a fit; else the reason, e.g.
                                  "interconnect none, wanted efa" */
} gpc_candidate;

typedef struct gpc_selection {
    gpc_candidate *fit;        /* feasible, ranked best first */
    size_t n_fit;
    gpc_candidate *lost;       /* hardware matched but lost, cheapest first */
    size_t n_lost;
    size_t n_rows;             /* rows looked at (catalog + extra) */
    size_t lost_by[GPC_VERDICT_COUNT]; /* candidates per verdict (GPC_FIT = n_fit) */
} gpc_selection;

/*
 * Rank every row of `cat` (may be NULL) and of `extra` (n_extra rows, may be
 * NULL: live offers a provider lists itself, e.g. the local machine) against
 * `q`.  A row yields one candidate per purchase option the policy allows
 * (AUTO: both).  Returns 0 (even when nothing fits: see n_fit) or
 * GPC_ERR_NOMEM / GPC_ERR_USAGE (nodes == 0).
 */
int gpc_offers_select(const gpc_catalog *cat, const gpc_catalog_row *extra, size_t n_extra,
                      const gpc_offer_query *q, gpc_selection *out, gpc_error *err);

/* Release what a selection holds (not the rows); NULL is fine. */
void gpc_selection_free(gpc_selection *s);

/* Fill a query from a spec (borrowing its strings): resources, providers,
 * regions, instance types, spot, budget and lifecycle.max_duration. */
void gpc_offer_query_from_spec(const gpc_spec *spec, gpc_offer_query *q);

/*
 * The error for a selection with no fit, naming what lost and why, e.g.
 * "no offer fits 'job': 12 candidates with A100 GPUs lost: 8 on
 * interconnect (none has efa), 4 on budget_hourly (cheapest 98.32 USD/hour
 * > 50.00)".  Code GPC_ERR_BUDGET when some candidate passed every check
 * except spot.max_price or a budget cap; GPC_ERR_CAPACITY otherwise.
 * Returns that code.
 */
int gpc_selection_fail(const gpc_selection *s, const gpc_offer_query *q, const char *job,
                       gpc_error *err);

#endif /* GPUCTL_OFFERS_H */
