/*
 * plan.h - what `apply` would do, as a value: the chosen offer, the
 * failover order, the cost and budget checks, and the changes against the
 * state.  `gpuctl plan` prints it, `plan --out FILE` saves it, `apply FILE`
 * carries it out exactly (refusing it when the state moved since), and
 * `apply -f job.yaml` makes one and carries it out at once.
 *
 * The saved form is the JSON document of docs/schema/plan.schema.json
 * ("kind": "plan"); it embeds the spec's YAML text, so a plan file is all
 * that `apply` needs.  It may hold env values from the spec: it is written
 * with mode 0600, like the spec it came from should be.
 */
#ifndef GPUCTL_PLAN_H
#define GPUCTL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/cluster.h"
#include "gpuctl/catalog.h"
#include "gpuctl/offers.h"

struct cJSON;

/* Offers kept in a plan: the chosen one and this many fallbacks at most. */
#define GPC_PLAN_OFFERS_MAX 20

/* One way to run the whole cluster: how rank 0 and the workers are bought. */
typedef struct gpc_plan_offer {
    gpc_offer head;      /* node rank 0 */
    gpc_offer worker;    /* ranks 1 .. nodes-1 (same type and region) */
    double price_cluster;/* USD/hour */
} gpc_plan_offer;

typedef enum gpc_plan_action {
    GPC_PLAN_NONE = 0,   /* everything the spec asks for exists */
    GPC_PLAN_CREATE,     /* a new cluster and all its nodes */
    GPC_PLAN_RESUME,     /* the cluster exists; some nodes are still to create */
    GPC_PLAN_RERUN,      /* the cluster exists with all its nodes; its job changed
                            (rerun.c): it runs again on the same nodes */
    GPC_PLAN_REPLACE,    /* the cluster exists; its shape changed (resources,
                            nodes, provider, ...): its n_remove nodes are
                            deleted and n_create new ones made from the plan's
                            chosen offer (replace.c); its name, its store
                            (checkpoints, data) and its history stay */
    GPC_PLAN_RESIZE      /* the cluster exists; only its node count changed (and
                            maybe its job) on nodes kept up for later jobs:
                            n_remove nodes of the highest ranks go, n_create
                            new ones come (with no job of their own), and the
                            job runs again on all, with the new world size */
} gpc_plan_action;

typedef struct gpc_plan {
    gpc_plan_action action;
    uint32_t n_create;        /* nodes apply would create */
    uint32_t n_remove;        /* GPC_PLAN_REPLACE, GPC_PLAN_RESIZE: live nodes apply
                                 would delete */
    int cluster_exists;
    char spec_hash[65];
    char fingerprint[65];     /* of this cluster name's state when planned */
    gpc_plan_offer *offers;   /* chosen first, then the failover order */
    size_t n_offers;
    struct cJSON *doc;        /* the plan document (owned) */
    char rerun[512];          /* GPC_PLAN_RERUN, _REPLACE and _RESIZE: what
                                 changed ("run.command, workdir (its files)";
                                 "nodes 2 -> 3") */
} gpc_plan;

typedef struct gpc_plan_opts {
    const char *catalog_path; /* --catalog FILE, or NULL (gpc_catalog_open's order) */
    const char *spec_path;    /* the spec file as named on the command line */
    const char *spec_text;    /* its YAML, embedded in the document; may be NULL */
    size_t spec_len;
    int live;                 /* --live: spot prices from the providers' APIs
                                 (live_prices) replace the catalog's */
} gpc_plan_opts;

/*
 * Plan `spec` against the catalog and the state in `s`.  An existing
 * cluster stays on its provider, its region and its instance type, unless
 * its shape changed (GPC_PLAN_REPLACE: offers are chosen as for a new
 * cluster).  Errors: GPC_ERR_USAGE (the cluster exists with another spec
 * that apply cannot carry out: nodes still to create, or a changed job on
 * nodes that ended), GPC_ERR_CAPACITY / GPC_ERR_BUDGET (nothing fits: the
 * message says what lost and why), catalog and state errors.  The caller
 * frees *out with gpc_plan_free().
 */
int gpc_plan_make(gpc_session *s, const gpc_spec *spec, const gpc_plan_opts *po,
                  gpc_plan *out, gpc_error *err);

/*
 * Read a saved plan: checks its kind and version, parses the embedded spec
 * and checks it against the recorded hash.  *spec (gpc_spec_free) and
 * *spec_path (free) are the caller's.  Errors: GPC_ERR_IO, GPC_ERR_USAGE
 * ("not a gpuctl plan"), GPC_ERR_SPEC.
 */
int gpc_plan_read(const char *path, gpc_plan *out, gpc_spec **spec, char **spec_path,
                  gpc_error *err);

/* Write the plan document to `path` (atomically, mode 0600). */
int gpc_plan_write(const gpc_plan *p, const char *path, gpc_error *err);

void gpc_plan_free(gpc_plan *p);

/*
 * JSON for one catalog row with both prices (`gpuctl offers`), and for one
 * candidate (plans).  Caller owns the result (cJSON_Delete).
 */
struct cJSON *gpc_row_json(const gpc_catalog *cat, const gpc_catalog_row *r);
struct cJSON *gpc_candidate_json(const gpc_catalog *cat, const gpc_candidate *c);

/*
 * Decimals to print an hourly price `v` (USD or CNY) with: `min_decimals`
 * (0..6), or more, up to 6 (what plan and offers documents keep), while the
 * text shows fewer than 3 significant digits and more digits would change
 * it.  So 0.0031 prints "0.0031" with 4 and with 2 (not "0.00"), 0.00314
 * "0.00314", 8.22609 "8.2261" with 4.  A negative `v` (unknown) gives
 * `min_decimals`.  Pure function.
 */
int gpc_price_decimals(double v, int min_decimals);

/*
 * A spot saving `pct` (percent, 100 * (1 - spot / on-demand)) rounded for
 * display: to `min_decimals` (0..6), or to more, up to 6, where that rounding
 * would show a saving strictly between 0 and 100 as 0 or 100, or a negative
 * one (spot above on-demand) as 0: a 0.0031 USD/h spot price against 32.77
 * on-demand (99.9905 %) gives 99.99 with 0 or 1, never 100.  At 6
 * decimals it rounds into the range instead (99.9999999 gives 99.999999).
 * A `pct` of exactly 0 or 100 stays so.  `decimals`, when not
 * NULL, receives the decimals the result needs.  Pure function.
 */
double gpc_saving_pct_round(double pct, int min_decimals, int *decimals);

/*
 * What changed from the spec a cluster was applied with (its canonical JSON,
 * gpc_cluster_rec.spec_json) to `spec` (spec_diff.c): one entry per field
 * that differs, named by its dotted path in the canonical JSON
 * ("nodes", "resources.cpus.min", "run.command"), in the JSON's order;
 * old_value and new_value are the values as compact JSON, "(none)" for a
 * field one side lacks.  A job field (gpc_spec_field_is_job: env, secrets,
 * setup, run.command) is one entry as a whole; the fields that only steer
 * the controller (spot.zone_cooldown_s, spot.fallback_after: recovery's
 * zone choice and market) are no entry at all; every other field is the
 * cluster's shape.  *out (gpc_spec_changes_free) holds *n entries, NULL
 * and 0 when nothing changed.  Errors: GPC_ERR_STATE (old_json is not a
 * JSON object), GPC_ERR_NOMEM.
 */
typedef struct gpc_spec_change {
    char *field;
    char *old_value;
    char *new_value;
    int job;           /* 1: the job's field (a re-run); 0: the shape's */
} gpc_spec_change;

int gpc_spec_diff(const char *old_json, const gpc_spec *spec, gpc_spec_change **out, size_t *n,
                  gpc_error *err);

/* 1 when `field` (a dotted path as gpc_spec_diff names it) is the job's. */
int gpc_spec_field_is_job(const char *field);

/* 1 when some change is of the cluster's shape (not the job's). */
int gpc_spec_changes_shape(const gpc_spec_change *c, size_t n);

void gpc_spec_changes_free(gpc_spec_change *c, size_t n);

/*
 * The changes of gpc_spec_diff as one line appended to `out`: the fields
 * separated by ", ", a shape field followed by " OLD -> NEW" (each value
 * cut to 40 bytes and "..."), a job field by its name only (its values may
 * be long, or private: env).  *job_only: 1 when something changed and only
 * the job's fields did.  Errors: gpc_spec_diff's, the buffer's.
 */
struct gpc_buf;
int gpc_spec_diff_summary(const char *old_json, const gpc_spec *spec, struct gpc_buf *out,
                          int *job_only, gpc_error *err);

#endif /* GPUCTL_PLAN_H */
