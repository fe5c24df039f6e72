/*
 * watch.c - gpc_watch, `gpuctl watch NAME`: the controller of `apply
 * --wait` for a cluster applied without it (from a CI job, a laptop that
 * was closed): it waits for the job's end as apply --wait does (logs,
 * interruption notices, budget.max_total) and, on a cluster that buys
 * spot, replaces lost workers (recover.c).  A replacement node is made
 * from the spec the cluster was applied with, so watch needs that spec:
 * the one given, else the file the cluster was applied from, and either
 * must still be what the nodes run (apply.c refuses a changed one).  A
 * cluster that buys no spot, or `--no-recover`, needs no spec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lifecycle.h"
#include "gpuctl/util.h"

/* 1 when the spec the cluster was applied with buys spot (spot.policy or
 * spot.head not on-demand, in its canonical JSON), as recovery asks
 * (gpc_lc_recoverable); *why (size bytes) says which ("spot.policy auto"). */
static int buys_spot(const gpc_cluster_rec *c, char *why, size_t size)
{
    cJSON *j = cJSON_Parse(c->spec_json ? c->spec_json : "");
    const cJSON *spot = cJSON_GetObjectItemCaseSensitive(j, "spot");
    const char *policy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spot, "policy"));
    const char *head = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spot, "head"));
    int yes = 1;
    if (policy && strcmp(policy, "on-demand") != 0)
        snprintf(why, size, "spot.policy %s", policy);
    else if (head && strcmp(head, "on-demand") != 0)
        snprintf(why, size, "spot.head %s", head);
    else
        yes = 0;
    cJSON_Delete(j);
    return yes;
}

int gpc_watch(gpc_session *s, const char *name, const gpc_spec *spec, const char *spec_path,
              const gpc_apply_opts *opts, int recover, gpc_apply_result *res, gpc_error *err)
{
    memset(res, 0, sizeof(*res));
    res->exit_code = -1;
    res->first_output_s = -1;
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    int rc = gpc_cluster_get(s->st, name, &c, err);
    if (rc == GPC_ERR_NOT_FOUND)
        return gpc_fail_replace(err, rc, "no cluster '%s' (gpuctl status lists them; gpuctl "
                                "apply -f SPEC creates one)", name);
    if (rc)
        return rc;
    if (spec && strcmp(spec->name, name) != 0) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s is the spec of cluster '%s', not '%s'",
                      spec_path, spec->name, name);
        gpc_cluster_rec_free(&c);
        return rc;
    }
    char buys[64] = "";
    int spot = recover && buys_spot(&c, buys, sizeof(buys));
    /* the spec the cluster was applied with, from its file */
    gpc_spec *own = NULL;
    gpc_error le;
    gpc_error_clear(&le);
    if (spot && !spec) {
        if (!c.spec_path || !c.spec_path[0])
            rc = gpc_fail(err, GPC_ERR_USAGE, "cluster '%s' (%s) was applied from standard "
                          "input: give its spec with -f FILE, to make replacement nodes, or "
                          "watch it with --no-recover", name, buys);
        else if ((rc = gpc_spec_load_file(c.spec_path, &own, &le)) != 0)
            rc = gpc_error_wrap(err, &le, "cluster '%s' (%s): the spec it was applied from, "
                                "which watch makes replacement nodes from, cannot be read "
                                "(give it with -f FILE, or watch with --no-recover)", name,
                                buys);
        spec = own;
        spec_path = c.spec_path;
    }
    /* a spec given is checked against the cluster's, spot or not */
    if (!rc && (spot || spec)) {
        /* the controller of apply --wait, on the cluster as applied */
        char why[256];
        if (spot && !gpc_lc_recoverable(s, &c, spec, why, sizeof(why)) && why[0])
            gpc_info(s->log, "gpuctl: %s", why);
        gpc_apply_opts w = *opts;
        w.watch = 1;
        w.wait = 1;
        w.dry_run = 0;
        w.plan = NULL;
        rc = gpc_apply(s, spec, spec_path, &w, res, err);
    } else if (!rc) {
        /* nothing to replace: the wait alone (notices, budget, the job) */
        if (recover)
            gpc_info(s->log, "gpuctl: %s buys no spot: watching its job", name);
        gpc_wait_opts w = {.timeout_s = opts->timeout_s, .poll_s = opts->poll_s,
                           .stream_logs = opts->stream_logs, .no_timing = 1};
        res->cluster_id = c.id;
        rc = gpc_cluster_wait(s, &c, &w, err);
        res->first_output_s = w.first_output_s;
        res->waited = rc == 0 || rc == GPC_ERR_JOB_FAILED || rc == GPC_ERR_NODE_LOST;
        res->phase = c.phase;
        res->exit_code = c.exit_code;
    }
    gpc_spec_free(own);
    gpc_cluster_rec_free(&c);
    return rc;
}
