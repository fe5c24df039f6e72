/* cmd_apply.c - `gpuctl apply` and `gpuctl destroy`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/cluster.h"
#include "commands.h"
#include "gpuctl/buf.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "gpuctl/plan.h"

typedef struct apply_args {
    const char *file;
    gpc_apply_opts opts;
} apply_args;

const gpc_option gpc_apply_options[] = {
    {"file", 'f', "FILE", 'f', "the job spec to apply (YAML; - reads stdin)"},
    {"wait", 0, NULL, 'w', "follow the job until rank 0 ends, streaming the node logs to "
     "stdout; exit with its outcome (0, 10, 11)"},
    {"timeout", 0, "DURATION", 't', "with --wait: give up waiting after DURATION (90s, 5m, 2h, "
     "1h30m; a bare number is seconds) and exit 12; the nodes "
     "keep running"},
    {"poll-interval", 0, "DURATION", 'p', "time between polls while new cloud nodes start (default "
     "2s) and while --wait waits (default 1s): 0.05s to 1h "
     "(2s, 0.5s, 500ms, 1m; a bare number is seconds)"},
    {"dry-run", 0, NULL, 'n', "plan and say what would be created, re-run or replaced; change nothing"},
    {NULL, 0, NULL, 0, NULL}
};

const gpc_option gpc_destroy_options[] = {
    {"file", 'f', "FILE", 'f', "take the cluster's name from this job spec"},
    {"purge", 0, NULL, 'u', "also remove the checkpoints the cluster keeps in its provider's "
     "store (clusters/NAME/checkpoints), which otherwise outlive it; also after an earlier "
     "destroy. Data sets, and a checkpoint_dir the nodes wrote on this machine (your own "
     "directory: local), are never removed"},
    {NULL, 0, NULL, 0, NULL}
};

int gpc_wait_opt(int opt, const char *arg, gpc_apply_opts *o)
{
    switch (opt) {
    case 't': {
        /* whole seconds: the wait counts in seconds */
        double secs;
        if (gpc_opt_duration("--timeout", arg, 1, (double)GPC_SPEC_DURATION_MAX_S, &secs))
            return -1;
        if (secs != (double)(long)secs)
            return gpc_opt_fail("--timeout: '%s' is not a whole number of seconds", arg);
        o->timeout_s = (long)secs;
        return 0;
    }
    case 'p':
        return gpc_opt_duration("--poll-interval", arg, 0.05, 3600, &o->poll_s);
    }
    return -1;
}

static int apply_opt(int opt, const char *arg, void *ud)
{
    apply_args *a = ud;
    switch (opt) {
    case 'f':
        return gpc_opt_once(&a->file, arg);
    case 'w': a->opts.wait = 1; return 0;
    case 'n': a->opts.dry_run = 1; return 0;
    }
    return gpc_wait_opt(opt, arg, &a->opts);
}

void gpc_json_add_job_end(cJSON *doc, gpc_session *s, const gpc_apply_result *res,
                          const gpc_error *err)
{
    cJSON_AddStringToObject(doc, "phase", gpc_phase_name(res->phase));
    if (res->exit_code >= 0)
        cJSON_AddNumberToObject(doc, "exit_code", res->exit_code);
    else
        cJSON_AddNullToObject(doc, "exit_code");
    if (err->code)
        gpc_json_add_error(doc, "error", err, gpc_exit_status(err->code));
    else
        cJSON_AddNullToObject(doc, "error");
    gpc_cluster_rec c;
    gpc_error e;
    gpc_error_clear(&e);
    cJSON *cj = NULL;
    if (res->cluster_id && gpc_cluster_get_by_id(s->st, res->cluster_id, &c, &e) == 0) {
        cj = gpc_cluster_json(s, &c, &e);
        gpc_cluster_rec_free(&c);
    }
    if (cj)
        cJSON_AddItemToObject(doc, "cluster_status", cj);
    else
        cJSON_AddNullToObject(doc, "cluster_status");
}

void gpc_print_job_end(gpc_session *s, const gpc_apply_result *res)
{
    /* rank 0 exited 0 while another node's job failed: name that node
     * (rank 0's status alone read as a contradiction) */
    const gpc_node_rec *bad = NULL;
    gpc_node_rec *nodes = NULL;
    size_t nn = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (res->waited && res->exit_code == 0 && res->phase == GPC_PHASE_FAILED &&
        gpc_node_list(s->st, res->cluster_id, 1, &nodes, &nn, &e) == 0)
        bad = gpc_cluster_failed_node(nodes, nn);
    if (bad)
        printf("job %s: node %s (rank %u) exit status %d (rank 0 exited 0)\n",
               gpc_phase_name(res->phase), bad->name, bad->rank, bad->exit_code);
    else if (res->waited && res->exit_code >= 0)
        printf("job %s: rank 0 exit status %d\n", gpc_phase_name(res->phase), res->exit_code);
    else if (res->waited)
        printf("job %s: rank 0 has no exit status (node lost)\n", gpc_phase_name(res->phase));
    gpc_node_list_free(nodes, nn);
}

/* gpc_apply_opts.confirm: the question on the terminal */
static int confirm_on_tty(void *ctx, const char *question)
{
    return gpc_confirm((const gpc_out *)ctx, question);
}

static void print_apply_json(gpc_session *s, const char *name, const gpc_apply_opts *opts,
                             const gpc_apply_result *res, const gpc_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "apply");
    cJSON_AddStringToObject(doc, "cluster", name);
    cJSON_AddBoolToObject(doc, "dry_run", opts->dry_run);
    cJSON_AddNumberToObject(doc, "created", res->created);
    cJSON_AddNumberToObject(doc, "adopted", res->adopted);
    cJSON_AddBoolToObject(doc, "unchanged", res->unchanged);
    cJSON_AddBoolToObject(doc, "waited", res->waited);
    /* only the job changed: what, and the job that ran it again */
    if (res->rerun[0]) {
        cJSON *rr = cJSON_AddObjectToObject(doc, "rerun");
        cJSON_AddStringToObject(rr, "changed", res->rerun);
        if (res->rerun_job[0])
            cJSON_AddStringToObject(rr, "job", res->rerun_job);
        else
            cJSON_AddNullToObject(rr, "job");
    } else {
        cJSON_AddNullToObject(doc, "rerun");
    }
    /* the shape changed: what, and how many nodes went for the new ones */
    if (res->replaced[0]) {
        cJSON *rp = cJSON_AddObjectToObject(doc, "replaced");
        cJSON_AddStringToObject(rp, "changed", res->replaced);
        cJSON_AddNumberToObject(rp, "removed", res->removed);
        cJSON_AddBoolToObject(rp, "resized", res->resized);
        if (res->resized && res->rerun_job[0])
            cJSON_AddStringToObject(rp, "job", res->rerun_job);
        else
            cJSON_AddNullToObject(rp, "job");
    } else {
        cJSON_AddNullToObject(doc, "replaced");
    }
    /* with --wait: how long the job took to say its first line */
    if (res->first_output_s >= 0)
        cJSON_AddNumberToObject(doc, "first_output_s", (double)(long)(res->first_output_s * 10) / 10);
    else
        cJSON_AddNullToObject(doc, "first_output_s");
    gpc_json_add_job_end(doc, s, res, err);
    gpc_print_json(doc);
}

int gpc_cmd_apply(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    apply_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, apply_opt, &a, &done);
    if (done)
        return rc;
    const char *planfile = NULL;
    if (!a.file && optind < argc)
        planfile = argv[optind++];
    if (optind < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    if (!a.file && !planfile)
        return gpc_usage_error(o, c, "missing -f FILE or a PLANFILE%s", "");
    if (a.opts.timeout_s && !a.opts.wait)
        return gpc_usage_error(o, c, "--timeout needs --wait%s", "");

    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    gpc_plan plan;
    memset(&plan, 0, sizeof(plan));
    char *spec_path = NULL;
    if (planfile) {
        /* A saved plan: its spec, its offers, exactly; no confirmation (it was
         * reviewed when it was made, as with terraform apply PLANFILE). */
        if (gpc_plan_read(planfile, &plan, &spec, &spec_path, &err))
            return gpc_report_error(o, &err);
        a.opts.plan = &plan;
        a.file = spec_path;
    } else if (gpc_spec_load_file(a.file, &spec, &err)) {
        return gpc_report_error(o, &err);
    }
    a.opts.catalog_path = o->cfg.catalog_path;
    /* a replacement of nodes: -y, or a saved plan (reviewed), or asked */
    a.opts.replace_ok = o->assume_yes || planfile != NULL;
    a.opts.confirm = confirm_on_tty;
    a.opts.confirm_ctx = (void *)o;
    /* Any candidate that costs money may be the one chosen: ask first. */
    const char *paid = NULL;
    for (size_t i = 0; i < spec->n_providers && !paid; i++) {
        const gpc_provider *p = gpc_provider_find(spec->providers[i]);
        if (p && !(p->caps & (GPC_CAP_FREE | GPC_CAP_PLAN_ONLY)))
            paid = p->name;
    }
    if (paid && !o->assume_yes && !a.opts.dry_run && !planfile) {
        char q[256];
        snprintf(q, sizeof(q), "Create up to %u paid node(s) on %s for cluster '%s'?",
                 spec->nodes, paid, spec->name);
        int yes = gpc_confirm(o, q);
        if (yes != 1) {
            if (yes < 0)
                gpc_fail(&err, GPC_ERR_USAGE, "refusing to create paid resources without a "
                         "terminal to confirm on; pass -y");
            gpc_spec_free(spec);
            gpc_plan_free(&plan);
            free(spec_path);
            /* answered no: what was not done, not an error */
            return yes < 0 ? gpc_report_error(o, &err)
                           : gpc_report_cancelled(o, "apply cancelled; nothing was created");
        }
    }
    gpc_session s;
    rc = gpc_session_open(&s, &o->cfg, &err);
    gpc_apply_result res;
    memset(&res, 0, sizeof(res));
    res.exit_code = -1;
    if (!rc) {
        gpc_install_signal_handlers();
        a.opts.stream_logs = a.opts.wait && !o->quiet && o->format != GPC_OUT_JSON;
        rc = gpc_apply(&s, spec, a.file, &a.opts, &res, &err);
    }
    if (res.cancelled) {
        /* answered no: what was not done, not an error */
        int status = gpc_report_cancelled(o, "apply cancelled; nothing was changed");
        gpc_session_close(&s);
        gpc_spec_free(spec);
        gpc_plan_free(&plan);
        free(spec_path);
        return status;
    }
    if (o->format == GPC_OUT_JSON && s.st) {
        print_apply_json(&s, spec->name, &a.opts, &res, &err);
        if (rc)
            fprintf(stderr, "gpuctl: error: %s\n", err.msg);
    } else if (s.st && (!rc || res.waited)) {
        if (a.opts.dry_run && res.resized)
            printf("cluster %s: would resize: create %d node(s), delete %d, and run its job "
                   "again on all (changed: %s) (dry run, nothing changed)\n", spec->name,
                   res.created, res.removed, res.replaced);
        else if (a.opts.dry_run && res.replaced[0])
            printf("cluster %s: would replace its nodes: delete %d, create %d (changed: %s) "
                   "(dry run, nothing changed)\n", spec->name, res.removed, res.created,
                   res.replaced);
        else if (a.opts.dry_run && res.rerun[0])
            printf("cluster %s: would run its job again on the same nodes (changed: %s) "
                   "(dry run, nothing changed)\n", spec->name, res.rerun);
        else if (a.opts.dry_run)
            printf("cluster %s: would create %d node(s)%s (dry run, nothing changed)\n",
                   spec->name, res.created, res.unchanged ? "; unchanged" : "");
        else if (res.resized && res.waited)
            printf("cluster %s: resized: deleted %d node(s), created %d; job %s ran on all %u "
                   "(changed: %s)\n", spec->name, res.removed, res.created, res.rerun_job,
                   spec->nodes, res.replaced);
        else if (res.resized)
            printf("cluster %s: resized: deleted %d node(s), created %d; job %s handed to all "
                   "%u (changed: %s); gpuctl logs -f %s follows it\n", spec->name, res.removed,
                   res.created, res.rerun_job, spec->nodes, res.replaced, spec->name);
        else if (res.rerun_job[0] && res.waited)
            printf("cluster %s: job %s ran on the same nodes (changed: %s)\n", spec->name,
                   res.rerun_job, res.rerun);
        else if (res.rerun_job[0])
            printf("cluster %s: job %s handed to the same nodes, which run it after any job "
                   "running there (changed: %s); gpuctl logs -f %s follows it\n", spec->name,
                   res.rerun_job, res.rerun, spec->name);
        else if (res.replaced[0])
            printf("cluster %s: replaced: deleted %d node(s), created %d (changed: %s)\n",
                   spec->name, res.removed, res.created, res.replaced);
        else if (res.unchanged)
            printf("cluster %s: unchanged (%s)\n", spec->name, gpc_phase_name(res.phase));
        else if (res.adopted)
            printf("cluster %s: created %d node(s), found %d an interrupted apply made\n",
                   spec->name, res.created, res.adopted);
        else
            printf("cluster %s: created %d node(s)\n", spec->name, res.created);
        /* (after a re-run the node table would show the previous job's end) */
        if (!a.opts.dry_run && !o->quiet && !res.rerun_job[0]) {
            gpc_cluster_rec cr;
            gpc_error e2;
            gpc_error_clear(&e2);
            if (gpc_cluster_get_by_id(s.st, res.cluster_id, &cr, &e2) == 0) {
                gpc_cluster_print_nodes(o, &s, &cr, &e2);
                gpc_cluster_rec_free(&cr);
            }
        }
        gpc_print_job_end(&s, &res);
        if (rc)
            gpc_report_error(o, &err);
    } else if (rc) {
        gpc_report_error(o, &err);
    }
    gpc_session_close(&s);
    gpc_spec_free(spec);
    gpc_plan_free(&plan);
    free(spec_path);
    return rc ? gpc_exit_status(err.code) : 0;
}

typedef struct destroy_args {
    const char *file;
    int purge;
} destroy_args;

/*
 * `name` has no live cluster.  When some record (a destroyed cluster)
 * has that name, set *destroyed: destroy is idempotent.  Otherwise the
 * name was never recorded: GPC_ERR_NOT_FOUND with the closest recorded
 * names (gpc_suggest_clusters), which are also added to `sugg` (a JSON
 * array).
 */
static int never_recorded(gpc_session *s, const char *name, int *destroyed, cJSON *sugg,
                          gpc_error *err)
{
    gpc_buf hint;
    gpc_buf_init(&hint, GPC_ERROR_MSG_MAX);
    int rc = gpc_suggest_clusters(s, name, destroyed, &hint, sugg, err);
    if (!rc && !*destroyed)
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND,
                      "no cluster named '%s' was ever recorded in the state at %s%s",
                      name, s->state_dir,
                      hint.len ? gpc_buf_str(&hint)
                               : " (gpuctl status --all lists the recorded ones)");
    gpc_buf_free(&hint);
    return rc;
}

static int destroy_opt(int opt, const char *arg, void *ud)
{
    if (opt == 'u') {
        ((destroy_args *)ud)->purge = 1;
        return 0;
    }
    if (opt != 'f')
        return -1;
    return gpc_opt_once(&((destroy_args *)ud)->file, arg);
}

/* The last destroyed record of `name` into *out (for --purge after an
 * earlier destroy); GPC_ERR_NOT_FOUND when none. */
static int last_destroyed(gpc_session *s, const char *name, gpc_cluster_rec *out,
                          gpc_error *err)
{
    gpc_cluster_rec *v = NULL;
    size_t n = 0;
    int rc = gpc_cluster_list(s->st, 1, &v, &n, err);
    int64_t id = 0;
    for (size_t i = 0; !rc && i < n; i++)
        if (strcmp(v[i].name, name) == 0 && v[i].destroyed_at && v[i].id > id)
            id = v[i].id;
    gpc_cluster_list_free(v, n);
    if (!rc && !id)
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no destroyed cluster '%s'", name);
    return rc ? rc : gpc_cluster_get_by_id(s->st, id, out, err);
}

int gpc_cmd_destroy(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    destroy_args a = {NULL, 0};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, destroy_opt, &a, &done);
    if (done)
        return rc;
    gpc_error err;
    gpc_error_clear(&err);
    char *name = NULL;
    if (a.file) {
        if (optind < argc)
            return gpc_usage_error(o, c, "give a NAME or -f FILE, not both ('%s')", argv[optind]);
        gpc_spec *spec = NULL;
        if (gpc_spec_load_file(a.file, &spec, &err))
            return gpc_report_error(o, &err);
        name = strdup(spec->name);
        gpc_spec_free(spec);
    } else {
        if (optind >= argc)
            return gpc_usage_error(o, c, "missing cluster NAME%s", "");
        if (optind + 1 < argc)
            return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind + 1]);
        if (!gpc_valid_cluster_name(argv[optind]))
            return gpc_usage_error(o, c, "invalid cluster name '%s' (RFC 1123 label: "
                                   "lower-case letters, digits and '-')", argv[optind]);
        name = strdup(argv[optind]);
    }
    if (!name) {
        gpc_fail(&err, GPC_ERR_NOMEM, "out of memory");
        return gpc_report_error(o, &err);
    }
    gpc_session s;
    memset(&s, 0, sizeof(s));
    int lockfd = -1, deleted = 0, found = 0, destroyed_before = 0, cancelled = 0;
    cJSON *sugg = cJSON_CreateArray();
    rc = sugg ? gpc_session_open(&s, &o->cfg, &err) : gpc_fail(&err, GPC_ERR_NOMEM, "out of memory");
    if (!rc)
        rc = gpc_cluster_lock(&s, name, 1, &lockfd, &err);
    gpc_cluster_rec cr;
    memset(&cr, 0, sizeof(cr));
    if (!rc) {
        rc = gpc_cluster_get(s.st, name, &cr, &err);
        if (rc == GPC_ERR_NOT_FOUND) {
            /* destroyed before: fine (idempotent); never recorded: a typo? */
            gpc_error_clear(&err);
            rc = never_recorded(&s, name, &destroyed_before, sugg, &err);
        } else if (!rc) {
            found = 1;
        }
    }
    /* the checkpoints in the store: kept unless --purge */
    char ckpt_url[1024] = "";
    size_t ckpt_n = 0;
    int purged = 0;
    if (!rc && !found && destroyed_before && a.purge) {
        rc = last_destroyed(&s, name, &cr, &err);
        if (!rc)
            rc = gpc_cluster_checkpoints(&s, &cr, GPC_CKPT_LIST, ckpt_url, sizeof(ckpt_url),
                                         &ckpt_n, &err);
    }
    if (!rc && (found || ckpt_n) && !o->assume_yes) {
        char q[1400];
        if (!found)
            snprintf(q, sizeof(q), "Remove the %zu checkpoint file(s) of destroyed cluster "
                     "'%s' at %s?", ckpt_n, name, ckpt_url);
        else
            snprintf(q, sizeof(q), "Destroy cluster '%s' and its %u node(s)%s?", name,
                     cr.nodes, a.purge ? ", and remove its checkpoints from the store" : "");
        if (gpc_confirm(o, q) == 0) {
            /* answered no: what was not done, not an error */
            if (found)
                snprintf(q, sizeof(q), "destroy cancelled; cluster '%s' and its %u node(s) are "
                         "left as they are", name, cr.nodes);
            else
                snprintf(q, sizeof(q), "destroy cancelled; the checkpoints of '%s' are left as "
                         "they are", name);
            rc = gpc_fail(&err, GPC_ERR_USAGE, "%s", q);
            cancelled = 1;
        }
    }
    if (!rc && found)
        rc = gpc_cluster_destroy(&s, &cr, &deleted, &err);
    /* once the nodes are gone (none writes a checkpoint any more) */
    if (!rc && (found || ckpt_n)) {
        gpc_error ce;
        gpc_error_clear(&ce);
        int crc = gpc_cluster_checkpoints(&s, &cr, a.purge ? GPC_CKPT_PURGE : GPC_CKPT_LOOK,
                                          ckpt_url, sizeof(ckpt_url), &ckpt_n, &ce);
        if (crc && a.purge) {
            rc = gpc_error_wrap(&err, &ce, "cluster '%s' is destroyed, but its checkpoints "
                                "were not removed", name);
        } else if (crc) {
            /* the destroy itself succeeded: say what could not be told */
            fprintf(stderr, "gpuctl: note: could not look for the checkpoints of '%s' in the "
                    "store: %s\n", name, ce.msg);
            ckpt_url[0] = '\0';
            ckpt_n = 0;
        }
        purged = a.purge && ckpt_n;
    }
    /* checkpoint_dir on this machine (local; slurm from its login node):
     * the user's own directory, never removed, said where */
    char own_dir[1024] = "";
    size_t own_n = 0;
    if (!rc && (found || (destroyed_before && a.purge && cr.name))) {
        gpc_error ce;
        gpc_error_clear(&ce);
        if (gpc_cluster_checkpoint_dir(&s, &cr, own_dir, sizeof(own_dir), &own_n, &ce)) {
            fprintf(stderr, "gpuctl: note: could not look at the checkpoint_dir of '%s': %s\n",
                    name, ce.msg);
            own_dir[0] = '\0';
            own_n = 0;
        }
    }
    if (o->format == GPC_OUT_JSON && s.st) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "destroy");
        cJSON_AddStringToObject(doc, "cluster", name);
        cJSON_AddBoolToObject(doc, "found", found);
        cJSON_AddNumberToObject(doc, "deleted", deleted);
        if (ckpt_url[0])
            cJSON_AddStringToObject(doc, "checkpoints", ckpt_url);
        else
            cJSON_AddNullToObject(doc, "checkpoints");
        cJSON_AddNumberToObject(doc, "checkpoint_files", (double)ckpt_n);
        cJSON_AddBoolToObject(doc, "purged", purged);
        if (own_dir[0])
            cJSON_AddStringToObject(doc, "checkpoint_dir", own_dir);
        else
            cJSON_AddNullToObject(doc, "checkpoint_dir");
        cJSON_AddNumberToObject(doc, "checkpoint_dir_files", (double)own_n);
        cJSON_AddItemToObject(doc, "suggestions", sugg);
        sugg = NULL;
        if (rc) {
            gpc_json_add_error(doc, "error", &err, gpc_exit_status(err.code));
            fprintf(stderr, "%s%s\n", cancelled ? "" : "gpuctl: error: ", err.msg);
        } else {
            cJSON_AddNullToObject(doc, "error");
        }
        gpc_print_json(doc);
    } else if (cancelled) {
        fprintf(stderr, "%s\n", err.msg);
    } else if (rc) {
        gpc_report_error(o, &err);
    } else {
        if (!found)
            printf("cluster %s: already destroyed, nothing to destroy\n", name);
        else
            printf("cluster %s: destroyed (%d node(s) deleted)\n", name, deleted);
        if (purged)
            printf("checkpoints removed: %zu file(s) at %s\n", ckpt_n, ckpt_url);
        else if (ckpt_n)
            printf("checkpoints kept: %zu file(s) at %s; gpuctl destroy --purge %s removes "
                   "them\n", ckpt_n, ckpt_url, name);
        else if (a.purge)
            printf("no checkpoints in the store to remove\n");
        if (own_dir[0])
            printf("checkpoints kept: %zu file(s) in %s (checkpoint_dir: your own directory on "
                   "this machine; gpuctl never removes it, not even with --purge)\n", own_n,
                   own_dir);
    }
    gpc_cluster_rec_free(&cr);
    gpc_cluster_unlock(lockfd);
    if (s.st || s.state_dir)
        gpc_session_close(&s);
    cJSON_Delete(sugg);
    free(name);
    return rc ? gpc_exit_status(err.code) : 0;
}
