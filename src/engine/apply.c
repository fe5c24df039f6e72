/* apply.c - gpc_apply: the plan and its checks, the failover walk over
 * the plan's offers */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "lifecycle.h"
#include "gpuctl/data.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

/* ---- apply ------------------------------------------------------------ */

static int new_cluster(gpc_session *s, const gpc_open_provider *pv,
                       const gpc_spec *spec, const char *spec_path,
                       const char *hash, gpc_cluster_rec *c, gpc_error *err)
{
    char uid[33];
    int rc = gpc_random_hex(uid, err);
    if (rc)
        return rc;
    char *json = NULL;
    cJSON *j = gpc_spec_to_json(spec);
    if (j) {
        json = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    if (!json)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    uint32_t port = spec->run.rdzv_port;
    if (!port && pv->prov->pick_rdzv_port)
        rc = pv->prov->pick_rdzv_port(pv->ctx, &port, err);
    if (!port)
        port = 29400;
    char *abs_spec = NULL;
    if (strcmp(spec_path, "-") != 0)
        gpc_realpath(spec_path, &abs_spec, NULL);
    int64_t now = gpc_now();
    memset(c, 0, sizeof(*c));
    c->name = strdup(spec->name);
    c->uid = strdup(uid);
    c->provider = strdup(pv->prov->name);
    c->spec_hash = strdup(hash);
    c->spec_json = json;
    c->spec_path = strdup(abs_spec ? abs_spec : "");
    free(abs_spec);
    c->nodes = spec->nodes;
    c->rdzv_port = port;
    c->phase = GPC_PHASE_PENDING;
    c->exit_code = -1;
    c->created_at = now;
    c->updated_at = now;
    if (!c->name || !c->uid || !c->provider || !c->spec_hash || !c->spec_path)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (rc)
        return rc;
    /* The cluster and every node, as pending, in one transaction: a gpuctl
     * killed after this knows what it meant to create. */
    rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_cluster_insert(s->st, c, err);
    if (!rc)
        rc = gpc_lc_nodes_record(s, c, 0, 1, now, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (!rc)
        gpc_lc_event(s, c->id, -1, "apply", "cluster recorded: %u node(s) on %s, spec %.12s",
                     c->nodes, c->provider, hash);
    return rc;
}

/* After a failed apply: add to err's message what is left (when the
 * cluster stays recorded; also when not, after an interrupt). */
static void say_left(gpc_session *s, int64_t cid, int interrupted, gpc_error *err)
{
    gpc_cluster_rec c;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_cluster_get_by_id(s->st, cid, &c, &e))
        return;
    gpc_node_rec *nodes = NULL;
    size_t n = 0, live = 0, unknown = 0;
    if (!c.destroyed_at && gpc_node_list(s->st, cid, 0, &nodes, &n, &e) == 0)
        for (size_t i = 0; i < n; i++) {
            live += nodes[i].provider_id[0] && nodes[i].phase != GPC_PHASE_TERMINATED;
            unknown += gpc_lc_outcome_unknown(&nodes[i]);
        }
    char msg[GPC_ERROR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    gpc_remote remote = err->remote; /* the same failure, told at more length */
    if (c.destroyed_at) {
        /* closed: a failure's own message says it all */
        if (interrupted)
            gpc_fail_replace(err, err->code, "%s; nothing is left of cluster '%s' (what this "
                             "apply made was removed)", msg, c.name);
    } else if (unknown) {
        gpc_fail_replace(err, err->code, "%s; cluster '%s' stays recorded with %zu node(s) "
                         "and %zu whose create has no answer (they may exist): gpuctl apply "
                         "finishes it, gpuctl destroy %s removes it", msg, c.name, live,
                         unknown, c.name);
    } else {
        gpc_fail_replace(err, err->code, "%s; cluster '%s' stays recorded with %zu node(s): "
                         "gpuctl apply finishes it, gpuctl destroy %s removes it", msg,
                         c.name, live, c.name);
    }
    err->remote = remote;
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&c);
}

/* The spec's data sets placed for the nodes of `chosen` (data.h), before
 * any of them is made, and handed to their bootstraps (s->data). */
static int place_data(gpc_session *s, const gpc_open_provider *pv, const gpc_spec *spec,
                      const gpc_plan_offer *chosen, gpc_data_placed *placed, gpc_error *err)
{
    int sh = 0;
    if (!spec->n_data || !chosen)
        return 0;
    int rc = gpc_lc_offer_shares(s, &chosen->worker, &sh, err);
    if (!rc)
        rc = gpc_data_place(s, pv, spec, &chosen->worker, sh, placed, err);
    s->data = rc ? NULL : placed;
    return rc;
}

/* The most lost workers one `apply --wait` replaces (GPUCTL_RECOVER_MAX,
 * 0 = none; default 10): a zone that takes back every node it is given
 * must not be paid for forever. */
static int recover_max(void)
{
    const char *v = getenv("GPUCTL_RECOVER_MAX");
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : 10;
    return v && *v && (*end || n < 0 || n > 1000) ? 10 : (int)n;
}

/* Spot recovery's hooks (recover.c): the data sets placed again for the
 * replacement's bootstrap, and released after its create. */
typedef struct recover_data {
    const gpc_spec *spec;
    const gpc_plan_offer *chosen;
    gpc_data_placed placed;
} recover_data;

static int recover_prepare(void *ud, gpc_session *s, const gpc_open_provider *pv,
                           gpc_error *err)
{
    recover_data *d = ud;
    memset(&d->placed, 0, sizeof(d->placed));
    return place_data(s, pv, d->spec, d->chosen, &d->placed, err);
}

static void recover_done(void *ud, gpc_session *s)
{
    recover_data *d = ud;
    s->data = NULL;
    gpc_data_placed_free(&d->placed);
}

/* The job again on every node of live cluster *c (rerun.c): attached with
 * --wait (the cluster's lock let go first: destroy may come in meanwhile),
 * else handed to the nodes' runners. */
static int run_again(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                     const gpc_apply_opts *opts, gpc_cluster_rec *c, int *lockfd,
                     gpc_apply_result *res, gpc_error *err)
{
    int status = 0;
    if (opts->wait) {
        gpc_cluster_unlock(*lockfd);
        *lockfd = -1;
    }
    res->phase = c->phase;
    int rc = gpc_lc_rerun(s, spec, spec_path, c, opts->wait, opts->stream_logs, &status,
                          res->rerun_job, err);
    if (!rc && opts->wait) {
        res->waited = 1;
        res->exit_code = status;
        res->phase = status ? GPC_PHASE_FAILED : GPC_PHASE_SUCCEEDED;
        /* a job whose nodes a destroy took meanwhile was lost, as with
         * --wait of a first job (exit 11), not failed: the destroy holds
         * the cluster's lock until it has recorded it (30 s at most) */
        gpc_cluster_rec now;
        memset(&now, 0, sizeof(now));
        gpc_error e;
        gpc_error_clear(&e);
        int fd = -1;
        for (int i = 0; status && i < 60; i++) {
            gpc_error le;
            gpc_error_clear(&le);
            if (gpc_cluster_lock(s, c->name, 0, &fd, &le) == 0 || le.code != GPC_ERR_LOCKED)
                break;
            gpc_lc_sleep(0.5);
        }
        gpc_cluster_unlock(fd);
        int gone = status && gpc_cluster_get_by_id(s->st, c->id, &now, &e) == 0 &&
                   now.destroyed_at;
        gpc_cluster_rec_free(&now);
        if (gone)
            rc = gpc_fail(err, GPC_ERR_NODE_LOST, "cluster '%s' was destroyed while job %s "
                          "ran", c->name, res->rerun_job);
        else if (status)
            rc = gpc_fail(err, GPC_ERR_JOB_FAILED, "cluster '%s': job %s failed: exit "
                          "status %d", c->name, res->rerun_job, status);
    }
    return rc;
}

/* A replacement goes ahead when -y or a saved plan said so, or when the
 * caller's confirm answers yes (res->cancelled: no). */
static int confirm_replace(gpc_session *s, const gpc_apply_opts *opts, const gpc_plan *plan,
                           const gpc_cluster_rec *c, gpc_apply_result *res, gpc_error *err)
{
    if (opts->replace_ok)
        return 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int running = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        running += nodes[i].provider_id[0] && !gpc_lc_is_terminal(nodes[i].phase);
    gpc_node_list_free(nodes, n);
    if (rc)
        return rc;
    char q[1024];
    if (plan->action == GPC_PLAN_RESIZE)
        snprintf(q, sizeof(q), "Resize cluster '%s': delete %u node%s, create %u, and run its "
                 "job again on all of them (changed: %s)?", c->name, plan->n_remove,
                 plan->n_remove == 1 ? "" : "s", plan->n_create, plan->rerun);
    else
        snprintf(q, sizeof(q), "Replace cluster '%s': delete its %u node%s and create %u on %s "
                 "(changed: %s)?%s", c->name, plan->n_remove, plan->n_remove == 1 ? "" : "s",
                 plan->n_create, plan->offers[0].worker.provider, plan->rerun,
                 running ? " The job running there stops." : "");
    int yes = opts->confirm ? opts->confirm(opts->confirm_ctx, q) : -1;
    if (yes == 0)
        res->cancelled = 1;
    else if (yes < 0)
        rc = plan->action == GPC_PLAN_RESIZE
                 ? gpc_fail(err, GPC_ERR_USAGE, "cluster '%s' changed its node count (%s): "
                            "apply would delete %u node%s, create %u and run its job again "
                            "on all, which needs a confirmation, and there is no terminal to "
                            "ask on; pass -y (gpuctl plan shows what changes)", c->name,
                            plan->rerun, plan->n_remove, plan->n_remove == 1 ? "" : "s",
                            plan->n_create)
                 : gpc_fail(err, GPC_ERR_USAGE, "cluster '%s' changed (%s): apply "
                            "would replace its %u node%s, which needs a confirmation, and "
                            "there is no terminal to ask on; pass -y (gpuctl plan shows what "
                            "is replaced)", c->name, plan->rerun, plan->n_remove,
                            plan->n_remove == 1 ? "" : "s");
    return rc;
}

int gpc_apply(gpc_session *s, const gpc_spec *spec, const char *spec_path,
              const gpc_apply_opts *opts, gpc_apply_result *res, gpc_error *err)
{
    memset(res, 0, sizeof(*res));
    res->exit_code = -1;
    res->first_output_s = -1;
    double started = gpc_monotonic_s();
    gpc_plan own;
    memset(&own, 0, sizeof(own));
    gpc_plan_offer *ordered_offers = NULL; /* a new cluster's offers, reordered */
    char hash[65];
    int rc = gpc_spec_hash(spec, hash, err);
    if (rc)
        return rc;

    /* Where the job's directories are, as the node sees them (the
     * checkpoint directory is made further down, once the plan holds). */
    gpc_lc_dirs dirs;
    memset(&dirs, 0, sizeof(dirs));
    int lockfd = -1;
    /* a watch waits for another gpuctl's change (a recovery under another
     * controller) instead of failing: it changes nothing of its own */
    if (!rc && !opts->dry_run)
        rc = gpc_cluster_lock(s, spec->name, opts->watch, &lockfd, err);
    /* A saved plan holds only while the state is as it was when it was
     * made (checked under the lock, before anything else). */
    if (!rc && opts->plan) {
        char fp[65];
        rc = gpc_state_fingerprint(s->st, spec->name, fp, err);
        if (!rc && strcmp(fp, opts->plan->fingerprint) != 0)
            rc = gpc_fail(err, GPC_ERR_STALE,
                          "the saved plan is stale: cluster '%s' changed in the state since "
                          "the plan was made (created, destroyed or nodes added); run gpuctl "
                          "plan again", spec->name);
    }
    if (rc)
        goto out;

    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    gpc_error nf;
    gpc_error_clear(&nf);
    int have = gpc_cluster_get(s->st, spec->name, &c, &nf) == 0;
    if (!have && nf.code != GPC_ERR_NOT_FOUND) {
        rc = gpc_fail(err, nf.code, "%s", nf.msg);
        goto out;
    }
    /* A cluster with another spec: gpc_plan_make refuses it (and a saved
     * plan made against it could not pass the fingerprint check above). */
    /* The plan: the one given (a saved plan, which must still match the
     * state), or one made now under the lock. */
    const gpc_plan *plan = opts->plan;
    if (!plan) {
        gpc_plan_opts po = {.catalog_path = opts->catalog_path, .spec_path = spec_path};
        rc = gpc_plan_make(s, spec, &po, &own, err);
        plan = &own;
    }
    /* A saved plan for a cluster that existed (or not) must meet the same
     * now; the fingerprint says so, this says it for a plan made while
     * another gpuctl changed the state between its reads. */
    if (!rc && plan->cluster_exists != have)
        rc = gpc_fail(err, GPC_ERR_STALE, "the saved plan is stale: cluster '%s' %s when the "
                      "plan was made; run gpuctl plan again", spec->name,
                      plan->cluster_exists ? "existed" : "did not exist");
    /* watch: the cluster as applied, nothing changed but the nodes it
     * still misses */
    if (!rc && opts->watch && !have)
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster '%s' (gpuctl apply -f SPEC creates "
                      "it)", spec->name);
    else if (!rc && opts->watch && plan->action == GPC_PLAN_RERUN)
        rc = gpc_fail(err, GPC_ERR_USAGE, "the job of '%s' changed since it was applied "
                      "(changed: %s): watch makes replacement nodes from the spec and workdir "
                      "as applied, so restore them, or watch with --no-recover (gpuctl apply "
                      "-f %s would run the job again)", spec->name, plan->rerun, spec_path);
    else if (!rc && opts->watch && plan->action != GPC_PLAN_NONE &&
             plan->action != GPC_PLAN_RESUME)
        rc = gpc_fail(err, GPC_ERR_USAGE, "the spec of '%s' differs from the one its nodes run "
                      "(changed: %s): gpuctl apply -f %s applies it; watch needs the spec as it "
                      "was applied, to make replacement nodes (or --no-recover)", spec->name,
                      plan->rerun[0] ? plan->rerun : "the cluster's shape", spec_path);
    /* a new cluster tries offers in a zone that cools down last (zones.c):
     * the same plan, its offers in that order */
    gpc_plan ordered;
    if (!rc && !have && plan->n_offers > 1 &&
        (ordered_offers = malloc(plan->n_offers * sizeof(*ordered_offers))) != NULL) {
        memcpy(ordered_offers, plan->offers, plan->n_offers * sizeof(*ordered_offers));
        ordered = *plan;
        ordered.offers = ordered_offers;
        if (gpc_lc_offers_order(s, ordered.offers, ordered.n_offers))
            plan = &ordered;
    }
    if (rc)
        goto out_c;
    if (plan->action != GPC_PLAN_NONE && plan->action != GPC_PLAN_RERUN && plan->n_offers == 0) {
        rc = gpc_fail(err, GPC_ERR_CAPACITY, "no offer fits '%s'", spec->name);
        goto out_c;
    }
    /* What apply refuses before making anything (precheck.c), and the
     * job's directories as the node sees them. */
    rc = gpc_lc_precheck(s, spec, plan, have ? c.provider : NULL, !opts->dry_run, &dirs, err);
    const char *workdir = dirs.workdir, *ckpt = dirs.ckpt;
    int shares_files = dirs.shares_files, dirs_depend = dirs.dirs_depend;
    if (rc)
        goto out_c;
    /* for the creates of this apply only */
    s->secrets = dirs.secrets;
    s->n_secrets = dirs.n_secrets;
    s->deliver = dirs.deliver; /* deliver.c, once the nodes run */
    s->deliver_workdir = dirs.send_workdir;
    if (plan->action == GPC_PLAN_RERUN)
        snprintf(res->rerun, sizeof(res->rerun), "%s", plan->rerun);
    if (plan->action == GPC_PLAN_REPLACE || plan->action == GPC_PLAN_RESIZE)
        snprintf(res->replaced, sizeof(res->replaced), "%s", plan->rerun);
    res->resized = plan->action == GPC_PLAN_RESIZE;
    if (opts->dry_run || plan->action == GPC_PLAN_NONE) {
        res->created = opts->dry_run ? (int)plan->n_create : 0;
        res->removed = opts->dry_run ? (int)plan->n_remove : 0;
        res->unchanged = plan->action == GPC_PLAN_NONE;
        res->phase = have ? c.phase : GPC_PHASE_PENDING;
        res->exit_code = have ? c.exit_code : -1;
        res->cluster_id = have ? c.id : 0;
        if (opts->dry_run && plan->action != GPC_PLAN_NONE)
            rc = gpc_lc_precheck_provider(plan, err);
        if (opts->dry_run)
            goto out_c;
    }
    /* Only the job changed: it runs again on the same nodes (rerun.c), after
     * the job running there; with --wait this waits for it (the cluster is
     * unlocked: destroy may come in meanwhile). */
    if (plan->action == GPC_PLAN_RERUN) {
        res->cluster_id = c.id;
        rc = run_again(s, spec, spec_path, opts, &c, &lockfd, res, err);
        goto out_c;
    }
    /* The shape changed: the nodes are replaced (replace.c), once confirmed;
     * the new ones are then created below, as a new cluster's would be. */
    int resize = plan->action == GPC_PLAN_RESIZE;
    if (plan->action == GPC_PLAN_REPLACE || resize) {
        res->cluster_id = c.id;
        res->phase = c.phase;
        res->exit_code = c.exit_code;
        /* the nodes that stay must have ended their job (replace.c) */
        if (resize)
            rc = gpc_lc_resize_ready(s, &c, c.nodes < spec->nodes ? c.nodes : spec->nodes, err);
        if (!rc)
            rc = confirm_replace(s, opts, plan, &c, res, err);
        if (!rc && !res->cancelled)
            rc = resize ? gpc_lc_resize(s, spec, spec_path, plan, &c, &res->removed, err)
                        : gpc_lc_replace(s, spec, spec_path, plan, &c, &res->removed, err);
        if (rc || res->cancelled)
            goto out_c;
        s->no_first_job = resize; /* the job runs on all nodes below */
        s->keep_record = 1;       /* a failed create leaves it recorded */
    }
    /* Nodes go to the plan's offers in order: the chosen one, then, when a
     * new cluster meets no capacity (GPC_ERR_CAPACITY from the provider),
     * each fallback in turn.  An existing cluster's plan only holds offers
     * of its own provider, and it stays on the first. */
    size_t attempt = 0;
    gpc_data_placed placed; /* the spec's data sets, for this attempt's offer */
    memset(&placed, 0, sizeof(placed));
    /* offers in a region a quota error closed (NULL: out of memory, then
     * only the quota error's own offer is left) */
    unsigned char *region_closed = plan->n_offers ? calloc(plan->n_offers, 1) : NULL;
    for (;;) {
        const gpc_plan_offer *chosen = plan->n_offers ? &plan->offers[attempt] : NULL;
        gpc_error e;
        gpc_error_clear(&e);
        gpc_open_provider op;
        const gpc_open_provider *pv = &op;
        rc = gpc_session_provider(s, chosen ? chosen->worker.provider : c.provider, &op, &e);
        int fresh = !have;
        /* the data first: a cluster is recorded only once it can start */
        if (!rc && plan->action != GPC_PLAN_NONE)
            rc = place_data(s, pv, spec, chosen, &placed, &e);
        if (!rc && fresh)
            rc = new_cluster(s, pv, spec, spec_path, hash, &c, &e);
        if (!rc && placed.n) /* which data sets it uses, with what (store.h) */
            rc = gpc_data_record_placed(s, c.id, &placed, &e);
        if (!rc) {
            res->cluster_id = c.id;
            rc = gpc_lc_create_missing(s, pv, spec, &c, chosen, workdir, ckpt,
                                       opts->poll_s > 0 ? opts->poll_s : 2.0, res, &e);
        }
        s->data = NULL;
        gpc_data_placed_free(&placed);
        /* Only from a clean slate: when the rollback could not remove a
         * node, the cluster stays recorded for destroy, and this error
         * is the answer. */
        int closed = 0;
        int next_ok = rc == GPC_ERR_CAPACITY || rc == GPC_ERR_QUOTA;
        if (next_ok && fresh) {
            gpc_cluster_rec live;
            gpc_error ge;
            gpc_error_clear(&ge);
            closed = gpc_cluster_get(s->st, spec->name, &live, &ge) != 0 &&
                     ge.code == GPC_ERR_NOT_FOUND;
            if (!ge.code)
                gpc_cluster_rec_free(&live);
        }
        /* A quota error closes the whole region of that provider: every
         * later offer there, wherever the price order put it. */
        if (rc == GPC_ERR_QUOTA && chosen && region_closed)
            for (size_t k = attempt + 1; k < plan->n_offers; k++)
                region_closed[k] |=
                    strcmp(plan->offers[k].worker.provider, chosen->worker.provider) == 0 &&
                    strcmp(plan->offers[k].worker.region, chosen->worker.region) == 0;
        size_t next = attempt + 1;
        while (next_ok && closed && next < plan->n_offers) {
            const gpc_offer *nx = &plan->offers[next].worker;
            const gpc_provider *np = gpc_provider_find(nx->provider);
            if (region_closed && region_closed[next]) {
                next++;
                continue;
            }
            if (!np || (np->caps & GPC_CAP_PLAN_ONLY)) {
                gpc_info(s->log, "gpuctl: skipping offer %zu of %zu (%s %s %s): provider %s is "
                         "not built into this gpuctl", next + 1, plan->n_offers, nx->provider,
                         nx->instance_type, nx->region, nx->provider);
                next++;
                continue;
            }
            if (!dirs_depend)
                break;
            int sh = 0;
            gpc_error se;
            gpc_error_clear(&se);
            if (gpc_lc_offer_shares(s, nx, &sh, &se) == 0 && sh == shares_files)
                break;
            gpc_info(s->log, "gpuctl: skipping offer %zu of %zu (%s %s %s): its nodes %s this "
                     "machine's files, unlike the first offer's, which workdir and "
                     "checkpoint_dir were resolved for", next + 1, plan->n_offers,
                     nx->provider, nx->instance_type, nx->region, sh ? "see" : "cannot see");
            next++;
        }
        if (next_ok && closed && next < plan->n_offers && !gpc_interrupted) {
            const gpc_offer *nx = &plan->offers[next].worker;
            gpc_info(s->log, "gpuctl: %s; trying offer %zu of %zu: %s %s %s %s", e.msg,
                     next + 1, plan->n_offers, nx->provider, nx->instance_type, nx->region,
                     nx->spot ? "spot" : "on-demand");
            attempt = next;
            gpc_cluster_rec_free(&c);
            memset(&c, 0, sizeof(c));
            res->created = 0;
            continue;
        }
        if (next_ok && attempt > 0)
            gpc_error_wrap(err, &e, "no offer could be launched after %zu offer(s) in the "
                           "plan's failover order; last", attempt + 1);
        else if (rc)
            gpc_error_wrap(err, &e, NULL);
        break;
    }
    free(region_closed);
    if (rc && res->cluster_id)
        say_left(s, res->cluster_id, rc == GPC_ERR_INTERRUPTED, err);
    if (rc && !res->cluster_id)
        goto out_c;
    s->no_first_job = 0;
    res->unchanged = !rc && res->created == 0 && res->adopted == 0 && !resize;
    /* a resize: the job on every node, the kept and the new, with the new
     * world size, as a re-run (attached with --wait) */
    if (!rc && resize) {
        rc = run_again(s, spec, spec_path, opts, &c, &lockfd, res, err);
        goto out_c;
    }
    /* what the first job runs with: the next apply compares (rerun.c) */
    if (!rc && plan->action != GPC_PLAN_NONE) {
        char wd[65];
        gpc_lc_spec_workdir_digest(s, spec, wd);
        rc = gpc_lc_job_record(s, c.id, "1", hash, wd, err);
    }
    if (!rc)
        rc = gpc_cluster_refresh(s, &c, err);
    /* Waiting only reads: let destroy (or another apply) in meanwhile. */
    gpc_cluster_unlock(lockfd);
    lockfd = -1;
    if (!rc && opts->wait) {
        gpc_wait_opts w = {.timeout_s = opts->timeout_s, .poll_s = opts->poll_s,
                           .stream_logs = opts->stream_logs, .since = started,
                           .no_timing = opts->watch};
        /* a cluster that buys spot gets its lost workers replaced while
         * its first job runs (recover.c) */
        recover_data rd = {.spec = spec, .chosen = plan->n_offers ? &plan->offers[attempt]
                                                                   : NULL};
        gpc_lc_recovery rv = {
            .spec = spec, .chosen = rd.chosen, .workdir = workdir, .ckpt = ckpt,
            .poll_s = opts->poll_s > 0 ? opts->poll_s : 2.0,
            .prepare = recover_prepare, .done = recover_done, .ud = &rd,
            .max = recover_max(), .offers = plan->offers, .n_offers = plan->n_offers,
        };
        if (rd.chosen && gpc_lc_recoverable(s, &c, spec, NULL, 0))
            w.recover = &rv;
        rc = gpc_cluster_wait(s, &c, &w, err);
        res->first_output_s = w.first_output_s;
        res->waited = rc == 0 || rc == GPC_ERR_JOB_FAILED || rc == GPC_ERR_NODE_LOST;
    }
    res->phase = c.phase;
    res->exit_code = c.exit_code;
out_c:
    free(ordered_offers);
    gpc_plan_free(&own);
    gpc_cluster_rec_free(&c);
out:
    gpc_cluster_unlock(lockfd);
    s->secrets = NULL;
    s->n_secrets = 0;
    s->deliver = 0;
    s->deliver_workdir = NULL;
    s->no_first_job = 0;
    s->keep_record = 0;
    gpc_lc_dirs_free(&dirs);
    return rc;
}
