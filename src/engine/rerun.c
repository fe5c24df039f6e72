/*
 * rerun.c - a spec applied again to a live cluster: what changed since the
 * cluster's latest job, and whether `plan` and `apply` re-run the job on
 * the same nodes or refuse.
 *
 * A job is what spec_diff.c calls the job's fields (env, secrets, setup,
 * run.command) plus the contents of the workdir: the files the delivery
 * would send (.gitignore and .gpuctlignore applied), by path, size and
 * SHA-256, so that an edit of a file re-runs and a `touch` or a file the
 * job writes under an ignored directory does not.  Every job a cluster
 * runs (its first, each re-run, each `gpuctl exec -f`) leaves a "job"
 * event with the spec hash and the workdir digest it ran with; the latest
 * one is what a new apply compares with.
 *
 * Everything else of the spec is the cluster's shape: a change there
 * replaces the cluster's nodes (GPC_PLAN_REPLACE, replace.c), shown with
 * the diff (old -> new).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/plan.h"
#include "gpuctl/render.h"
#include "gpuctl/data.h"
#include "gpuctl/spec.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"
#include "lifecycle.h"

/* The event message of a job: its id, the spec hash, the workdir digest
 * ("none": no workdir, or none could be made). */
#define JOB_FMT "job %s: spec %s, workdir %s"
#define WORKDIR_AT ", workdir "

int gpc_lc_job_record(gpc_session *s, int64_t cluster_id, const char *job_id,
                      const char *spec_hash, const char *workdir_digest, gpc_error *err)
{
    char msg[256];
    snprintf(msg, sizeof(msg), JOB_FMT, job_id, spec_hash,
             workdir_digest && *workdir_digest ? workdir_digest : "none");
    return gpc_event_add(s->st, cluster_id, -1, "job", msg, err);
}

/* The workdir digest the cluster's latest job recorded: 64 hex digits,
 * "none", or "" when no job was recorded (a cluster an older gpuctl made). */
static int recorded_workdir(gpc_session *s, int64_t cluster_id, char out[65], gpc_error *err)
{
    out[0] = '\0';
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    int rc = gpc_event_list(s->st, cluster_id, &ev, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *at = strcmp(ev[i].kind, "job") == 0 ? strstr(ev[i].message, WORKDIR_AT)
                                                        : NULL;
        if (at && strlen(at + strlen(WORKDIR_AT)) <= 64)
            snprintf(out, 65, "%s", at + strlen(WORKDIR_AT)); /* the last one wins */
    }
    gpc_event_list_free(ev, n);
    return rc;
}

int gpc_lc_spec_workdir_digest(gpc_session *s, const gpc_spec *spec, char hex[65])
{
    snprintf(hex, 65, "none");
    if (!spec->workdir)
        return 0;
    char *wd = NULL, *ck = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_spec_path(spec, spec->workdir, &wd, &e);
    /* what the job writes there (a local job's checkpoint_dir inside its
     * workdir) and gpuctl's own state are not the job's code */
    if (!rc && spec->checkpoint_dir && gpc_spec_path(spec, spec->checkpoint_dir, &ck, NULL))
        ck = NULL;
    const char *out[] = {s->state_dir, ck};
    if (!rc)
        rc = gpc_lc_workdir_digest(wd, out, 2, hex, &e);
    free(ck);
    if (rc) {
        /* the checks before apply say what is wrong with the directory */
        gpc_debug(s->log, "workdir digest: %s", e.msg);
        snprintf(hex, 65, "none");
    }
    free(wd);
    return rc;
}

/* How many of the cluster's nodes have ended (ended_at set). */
static int ended_nodes(gpc_session *s, const gpc_cluster_rec *c, uint32_t *ended, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    *ended = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        *ended += nodes[i].ended_at != 0;
    gpc_node_list_free(nodes, n);
    return rc;
}


/* 1 when cluster c's nodes can stay for `spec`: of its shape only the
 * node count changed, its nodes stay up for later jobs
 * (lifecycle.idle_timeout), and its provider makes and removes them one
 * by one (not as a group). */
static int can_resize(const gpc_spec *spec, const gpc_cluster_rec *c)
{
    const gpc_provider *p = gpc_provider_find(c->provider);
    if (!p || (p->caps & GPC_CAP_GROUP) || !spec->lifecycle.idle_timeout_s)
        return 0;
    gpc_spec_change *ch = NULL;
    size_t n = 0;
    int only = gpc_spec_diff(c->spec_json, spec, &ch, &n, NULL) == 0;
    for (size_t i = 0; only && i < n; i++)
        only = ch[i].job || strcmp(ch[i].field, "nodes") == 0;
    gpc_spec_changes_free(ch, n);
    return only;
}

/* The plan changes cluster c's nodes (replace.c): GPC_PLAN_REPLACE, all of
 * them go (from 0) and spec->nodes new ones come; GPC_PLAN_RESIZE, those
 * of rank `from` (spec->nodes) and up go and the ranks from c->nodes up
 * come.  `what` changed. */
static int plan_nodes(gpc_session *s, const gpc_spec *spec, const gpc_cluster_rec *c,
                      gpc_plan_action action, const char *what, gpc_plan *out,
                      gpc_error *err)
{
    uint32_t from = action == GPC_PLAN_RESIZE ? spec->nodes : 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        out->n_remove += nodes[i].provider_id[0] && nodes[i].rank >= from;
    gpc_node_list_free(nodes, n);
    out->action = action;
    out->n_create = action == GPC_PLAN_REPLACE ? spec->nodes
                  : spec->nodes > c->nodes ? spec->nodes - c->nodes : 0;
    snprintf(out->rerun, sizeof(out->rerun), "%s", what);
    return rc;
}

int gpc_lc_plan_existing(gpc_session *s, const gpc_spec *spec, const gpc_cluster_rec *c, uint32_t missing, gpc_plan *out,
                         gpc_error *err)
{
    gpc_buf d;
    gpc_buf_init(&d, 1024);
    int job_only = 0, rc = 0;
    int spec_changed = strcmp(c->spec_hash, out->spec_hash) != 0;
    /* a record rebuilt from tags knows its spec by hash only: the spec it
     * was made with is taken in (launch.c), no other */
    if (gpc_cluster_rebuilt(c) && spec_changed) {
        gpc_buf_free(&d);
        return gpc_fail(err, GPC_ERR_USAGE,
                        "cluster '%s' was rebuilt from its nodes' tags and its spec is not "
                        "known: this spec (hash %.12s) is not the one it was made with (%.12s); apply "
                        "that spec to take the cluster in, or remove it: gpuctl destroy %s",
                        c->name, out->spec_hash, c->spec_hash, c->name);
    }
    int drc = spec_changed ? gpc_spec_diff_summary(c->spec_json, spec, &d, &job_only, NULL) : 0;
    if (drc)
        job_only = 0;
    /* another hash and no change: only the fields that steer the
     * controller changed (spec_diff.c), which the nodes never see; the
     * cluster's record keeps its spec, the applied spec steers this
     * apply's recovery */
    if (spec_changed && !drc && !d.len)
        spec_changed = 0;
    if (spec_changed && !job_only && missing) {
        rc = gpc_fail(err, GPC_ERR_USAGE,
                      "cluster '%s' has %u node%s still to create and its shape changed (%s): "
                      "apply the spec it was applied with first, then this one; or destroy "
                      "it: gpuctl destroy %s",
                      c->name, missing, missing == 1 ? "" : "s", d.len ? gpc_buf_str(&d) : "?",
                      c->name);
        gpc_buf_free(&d);
        return rc;
    }
    /* The shape changed: every node is replaced (replace.c); the new nodes
     * get the workdir, the data and the job afresh.  Unless only the node
     * count changed on nodes kept up for later jobs, made one by one: they
     * stay, nodes are added or removed, and the job runs again on all. */
    int shape = spec_changed && !job_only;
    if (shape && !can_resize(spec, c)) {
        rc = plan_nodes(s, spec, c, GPC_PLAN_REPLACE, d.len ? gpc_buf_str(&d) : "?", out, err);
        gpc_buf_free(&d);
        return rc;
    }
    /* the workdir's files, when the cluster's latest job recorded them */
    char was[65], now[65];
    rc = recorded_workdir(s, c->id, was, err);
    int wd_changed = 0;
    if (!rc && was[0]) {
        gpc_lc_spec_workdir_digest(s, spec, now);
        wd_changed = strcmp(was, now) != 0;
    }
    if (!rc && wd_changed)
        rc = gpc_buf_addf(&d, err, "%sworkdir (its files)", d.len ? ", " : "");
    /* each data set pushed from a directory, by content (data.h) */
    int data_changed = 0;
    for (size_t i = 0; !rc && i < spec->n_data; i++) {
        const gpc_data_src *ds = &spec->data[i];
        char rec[65] = "", cur[65] = "";
        if (!ds->is_url)
            rc = gpc_data_recorded(s, c->id, ds->name, rec, err);
        if (rc || !rec[0])
            continue;
        char *dir = NULL;
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_spec_path(spec, ds->source, &dir, &e) == 0 &&
            gpc_store_dir_digest(dir, cur, NULL, &e) == 0 && strcmp(rec, cur) != 0) {
            data_changed = 1;
            rc = gpc_buf_addf(&d, err, "%sdata.%s (its files)", d.len ? ", " : "", ds->name);
        }
        free(dir);
    }
    if (!rc && (spec_changed || wd_changed || data_changed)) {
        uint32_t ended = 0;
        if (!missing)
            rc = ended_nodes(s, c, &ended, err);
        if (!rc && ended) {
            /* nodes that ended with their job cannot run another: they
             * are what must change (lifecycle.idle_timeout keeps nodes
             * up for later jobs) */
            char what[sizeof(out->rerun)];
            snprintf(what, sizeof(what), "%s; %u of its nodes ended with the last job",
                     gpc_buf_str(&d), ended);
            rc = plan_nodes(s, spec, c, GPC_PLAN_REPLACE, what, out, err);
        } else if (!rc && missing)
            rc = gpc_fail(err, GPC_ERR_USAGE,
                          "cluster '%s' has %u node%s still to create and its job changed "
                          "(%s): apply the spec it was applied with first, then this one; or "
                          "destroy it: gpuctl destroy %s",
                          c->name, missing, missing == 1 ? "" : "s", gpc_buf_str(&d), c->name);
        else if (!rc && shape)
            rc = plan_nodes(s, spec, c, GPC_PLAN_RESIZE, gpc_buf_str(&d), out, err);
        else if (!rc) {
            out->action = GPC_PLAN_RERUN;
            snprintf(out->rerun, sizeof(out->rerun), "%s", gpc_buf_str(&d));
        }
    }
    gpc_buf_free(&d);
    return rc;
}

/*
 * The spec's data sets placed again where the cluster's nodes are (the
 * head's provider and region) into *placed: a push moves only what
 * changed, and the nodes' next job fetches them again (the bootstrap's
 * gpuctl_data_all).  What was placed is recorded once the job started
 * (gpc_lc_rerun), so that a job that did not start leaves the change to
 * the next apply.
 */
static int replace_data(gpc_session *s, const gpc_spec *spec, const gpc_cluster_rec *c,
                        gpc_data_placed *placed, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    const gpc_node_rec *head = NULL;
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].rank == 0)
            head = &nodes[i];
    gpc_offer at;
    memset(&at, 0, sizeof(at));
    if (!rc && !head)
        rc = gpc_fail(err, GPC_ERR_STATE, "cluster %s has no node of rank 0", c->name);
    if (!rc) {
        snprintf(at.provider, sizeof(at.provider), "%s", head->provider);
        snprintf(at.region, sizeof(at.region), "%s", head->region);
        snprintf(at.zone, sizeof(at.zone), "%s", head->zone);
        snprintf(at.instance_type, sizeof(at.instance_type), "%s", head->instance_type);
    }
    gpc_node_list_free(nodes, n);
    gpc_open_provider op;
    int shares = 0;
    if (!rc)
        rc = gpc_session_provider(s, c->provider, &op, err);
    if (!rc)
        rc = gpc_lc_offer_shares(s, &at, &shares, err);
    if (!rc)
        rc = gpc_data_place(s, &op, spec, &at, shares, placed, err);
    return rc;
}

int gpc_lc_rerun(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                 const gpc_cluster_rec *c, int wait, int stream, int *status,
                 char job_id[16], gpc_error *err)
{
    *status = 0;
    char rnd[33], hash[65], wd[65], was[65] = "";
    int rc = gpc_random_hex(rnd, err);
    snprintf(job_id, 16, "r%.12s", rnd);
    if (!rc)
        rc = gpc_spec_hash(spec, hash, err);
    gpc_lc_spec_workdir_digest(s, spec, wd);
    cJSON *j = rc ? NULL : gpc_spec_to_json(spec);
    char *json = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    char *path = !rc && spec_path ? realpath(spec_path, NULL) : NULL;
    if (!rc && !json)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (!rc)
        rc = recorded_workdir(s, c->id, was, err);
    /* the new spec is the cluster's from now on (an apply meanwhile finds
     * nothing to re-run); the old one again when the job could not start */
    int recorded = 0;
    if (!rc) {
        gpc_cluster_rec upd = *c;
        upd.spec_hash = hash;
        upd.spec_json = json;
        upd.spec_path = path ? path : c->spec_path;
        rc = gpc_cluster_update(s->st, &upd, err);
        recorded = !rc;
        if (!rc)
            rc = gpc_lc_job_record(s, c->id, job_id, hash, wd, err);
    }
    gpc_data_placed placed;
    memset(&placed, 0, sizeof(placed));
    if (!rc && spec->n_data)
        rc = replace_data(s, spec, c, &placed, err);
    gpc_job_def job = {.id = job_id, .setup = spec->setup, .run = spec->run.command,
                       .env = spec->env, .n_env = spec->n_env, .with_env = 1,
                       .detach = !wait, .quiet = !stream};
    if (!rc)
        rc = gpc_cluster_exec(s, c->name, spec, &job, status, err);
    if (!rc && placed.n)
        rc = gpc_data_record_placed(s, c->id, &placed, err);
    gpc_data_placed_free(&placed);
    if (rc && recorded) {
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_cluster_update(s->st, c, &e) ||
            gpc_lc_job_record(s, c->id, "-", c->spec_hash, was[0] ? was : "none", &e))
            gpc_warn(s->log, "cluster %s: the spec it had could not be recorded again: %s",
                     c->name, e.msg);
    }
    free(json);
    free(path);
    return rc;
}
