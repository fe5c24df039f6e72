/*
 * spec_diff.c - what changed between the spec a cluster was applied with
 * and a new one (plan.h, gpc_spec_diff), each change either the job's
 * (run, env, setup, secrets: a re-run on the same nodes) or the cluster's
 * shape (anything else: new nodes).  The fields that only steer the
 * controller (spot.zone_cooldown, spot.fallback_after) are no change.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/plan.h"
#include "gpuctl/spec.h"

/* The fields of the canonical spec JSON that only the job reads. */
static const char *const job_fields[] = {"env", "secrets", "setup", "run.command", NULL};

/* The fields that only steer gpuctl's controller while the cluster runs
 * (spot recovery): no change of them is a change of the cluster, so none
 * is reported. */
static const char *const controller_fields[] = {"spot.zone_cooldown_s", "spot.fallback_after",
                                                NULL};

static int is_controller(const char *field)
{
    for (size_t i = 0; controller_fields[i]; i++)
        if (strcmp(field, controller_fields[i]) == 0)
            return 1;
    return 0;
}

int gpc_spec_field_is_job(const char *field)
{
    for (size_t i = 0; job_fields[i]; i++)
        if (strcmp(field, job_fields[i]) == 0)
            return 1;
    return 0;
}

typedef struct diff_ctx {
    gpc_spec_change *v;
    size_t n, cap;
    int nomem;
} diff_ctx;

static char *print(const cJSON *j)
{
    return j ? cJSON_PrintUnformatted(j) : strdup("(none)");
}

static void add(diff_ctx *d, const char *field, const cJSON *a, const cJSON *b)
{
    if (d->nomem)
        return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        gpc_spec_change *v = realloc(d->v, cap * sizeof(*v));
        if (!v) {
            d->nomem = 1;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    gpc_spec_change *c = &d->v[d->n];
    c->field = strdup(field);
    c->old_value = print(a);
    c->new_value = print(b);
    c->job = gpc_spec_field_is_job(field);
    if (!c->field || !c->old_value || !c->new_value) {
        free(c->field);
        free(c->old_value);
        free(c->new_value);
        d->nomem = 1;
        return;
    }
    d->n++;
}

/* Compare objects member by member (the keys of `a` in its order, then
 * those only `b` has); a job field, an array or a scalar that differs is
 * one change named by its dotted path. */
static void walk(diff_ctx *d, const char *prefix, const cJSON *a, const cJSON *b)
{
    char path[256];
    if (is_controller(prefix))
        return;
    if (cJSON_IsObject(a) && cJSON_IsObject(b) && !gpc_spec_field_is_job(prefix)) {
        const cJSON *x;
        cJSON_ArrayForEach(x, a) {
            snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", x->string);
            walk(d, path, x, cJSON_GetObjectItemCaseSensitive(b, x->string));
        }
        cJSON_ArrayForEach(x, b) {
            if (cJSON_GetObjectItemCaseSensitive(a, x->string))
                continue;
            snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", x->string);
            walk(d, path, NULL, x);
        }
        return;
    }
    if (a && b && cJSON_Compare(a, b, 1))
        return;
    add(d, prefix, a, b);
}

int gpc_spec_diff(const char *old_json, const gpc_spec *spec, gpc_spec_change **out, size_t *n,
                  gpc_error *err)
{
    *out = NULL;
    *n = 0;
    /* a record rebuilt from tags has no spec (gpc_cluster_rebuilt) */
    if (old_json && !old_json[0])
        return gpc_fail(err, GPC_ERR_USAGE, "the cluster's spec is not known: its record was "
                        "rebuilt from its nodes' tags; apply the spec it was made with first "
                        "(gpuctl apply -f SPEC)");
    cJSON *a = cJSON_Parse(old_json ? old_json : "");
    if (!cJSON_IsObject(a)) {
        cJSON_Delete(a);
        return gpc_fail(err, GPC_ERR_STATE, "the recorded spec of the cluster is not a JSON "
                        "object");
    }
    cJSON *b = gpc_spec_to_json(spec);
    if (!b) {
        cJSON_Delete(a);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    diff_ctx d = {0};
    walk(&d, "", a, b);
    cJSON_Delete(a);
    cJSON_Delete(b);
    if (d.nomem) {
        gpc_spec_changes_free(d.v, d.n);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    *out = d.v;
    *n = d.n;
    return 0;
}

int gpc_spec_changes_shape(const gpc_spec_change *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!c[i].job)
            return 1;
    return 0;
}

void gpc_spec_changes_free(gpc_spec_change *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        free(c[i].field);
        free(c[i].old_value);
        free(c[i].new_value);
    }
    free(c);
}

int gpc_spec_diff_summary(const char *old_json, const gpc_spec *spec, gpc_buf *out,
                          int *job_only, gpc_error *err)
{
    gpc_spec_change *c = NULL;
    size_t n = 0;
    *job_only = 0;
    int rc = gpc_spec_diff(old_json, spec, &c, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = gpc_buf_addf(out, err, "%s%s", i ? ", " : "", c[i].field);
        /* a job field's values may be long or private (env): its name only */
        if (!rc && !c[i].job)
            rc = gpc_buf_addf(out, err, " %.40s%s -> %.40s%s", c[i].old_value,
                              strlen(c[i].old_value) > 40 ? "..." : "", c[i].new_value,
                              strlen(c[i].new_value) > 40 ? "..." : "");
    }
    if (!rc)
        *job_only = n > 0 && !gpc_spec_changes_shape(c, n);
    gpc_spec_changes_free(c, n);
    return rc;
}
