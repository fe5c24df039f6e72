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

static int apply_opt(int opt, const char *arg, void *ud)
{
    apply_args *a = ud;
    char *end;
    switch (opt) {
    case 'f':
        if (a->file)
            return GPC_OPT_TWICE;
        a->file = arg;
        return 0;
    case 'w': a->opts.wait = 1; return 0;
    case 'n': a->opts.dry_run = 1; return 0;
    case 't':
        a->opts.timeout_s = strtol(arg, &end, 10);
        return *end || a->opts.timeout_s <= 0 ? -1 : 0;
    case 'p':
        a->opts.poll_s = strtod(arg, &end);
        if (*end || !(a->opts.poll_s >= 0.05) || a->opts.poll_s > 3600)
            return gpc_opt_fail("--poll-interval: '%s' is not a number of seconds from 0.05 "
                                "to 3600", arg);
        return 0;
    }
    return -1;
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
    cJSON_AddStringToObject(doc, "phase", gpc_phase_name(res->phase));
    if (res->exit_code >= 0)
        cJSON_AddNumberToObject(doc, "exit_code", res->exit_code);
    else
        cJSON_AddNullToObject(doc, "exit_code");
    if (err->code) {
        cJSON *e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", gpc_code_name(err->code));
        cJSON_AddStringToObject(e, "message", err->msg);
        cJSON_AddNumberToObject(e, "exit_status", gpc_exit_status(err->code));
    } else {
        cJSON_AddNullToObject(doc, "error");
    }
    gpc_cluster_rec c;
    gpc_error e2;
    gpc_error_clear(&e2);
    cJSON *cj = NULL;
    if (res->cluster_id && gpc_cluster_get_by_id(s->st, res->cluster_id, &c, &e2) == 0) {
        cj = gpc_cluster_json(s, &c, &e2);
        gpc_cluster_rec_free(&c);
    }
    if (cj)
        cJSON_AddItemToObject(doc, "cluster_status", cj);
    else
        cJSON_AddNullToObject(doc, "cluster_status");
    gpc_print_json(doc);
}

int gpc_cmd_apply(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, 'f'},
        {"wait", no_argument, NULL, 'w'},
        {"dry-run", no_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 't'},
        {"poll-interval", required_argument, NULL, 'p'},
        {NULL, 0, NULL, 0}
    };
    apply_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, opts, "f:", apply_opt, &a, &done);
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
            gpc_fail(&err, GPC_ERR_USAGE, yes < 0 ? "refusing to create paid resources "
                     "without a terminal to confirm on; pass -y" : "aborted");
            gpc_spec_free(spec);
            gpc_plan_free(&plan);
            free(spec_path);
            return gpc_report_error(o, &err);
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
    if (o->format == GPC_OUT_JSON && s.st) {
        print_apply_json(&s, spec->name, &a.opts, &res, &err);
        if (rc)
            fprintf(stderr, "gpuctl: error: %s\n", err.msg);
    } else if (s.st && (!rc || res.waited)) {
        if (a.opts.dry_run)
            printf("cluster %s: would create %d node(s)%s (dry run, nothing changed)\n",
                   spec->name, res.created, res.unchanged ? "; unchanged" : "");
        else if (res.unchanged)
            printf("cluster %s: unchanged (%s)\n", spec->name, gpc_phase_name(res.phase));
        else if (res.adopted)
            printf("cluster %s: created %d node(s), found %d an interrupted apply made\n",
                   spec->name, res.created, res.adopted);
        else
            printf("cluster %s: created %d node(s)\n", spec->name, res.created);
        if (!a.opts.dry_run && !o->quiet) {
            gpc_cluster_rec cr;
            gpc_error e2;
            gpc_error_clear(&e2);
            if (gpc_cluster_get_by_id(s.st, res.cluster_id, &cr, &e2) == 0) {
                gpc_cluster_print_nodes(o, &s, &cr, &e2);
                gpc_cluster_rec_free(&cr);
            }
        }
        if (res.waited && res.exit_code >= 0)
            printf("job %s: rank 0 exit status %d\n", gpc_phase_name(res.phase), res.exit_code);
        else if (res.waited)
            printf("job %s: rank 0 has no exit status (node lost)\n", gpc_phase_name(res.phase));
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
} destroy_args;

/* At most this many did-you-mean names for a destroy of an unknown name. */
#define DESTROY_SUGGEST_MAX 3

typedef struct suggestion {
    const char *name; /* owned by the cluster list */
    size_t dist;
    int live;
} suggestion;

static int suggestion_cmp(const void *x, const void *y)
{
    const suggestion *a = x, *b = y;
    if (a->dist != b->dist)
        return a->dist < b->dist ? -1 : 1;
    if (a->live != b->live)
        return a->live ? -1 : 1; /* a live cluster is the likelier target */
    return strcmp(a->name, b->name);
}

/*
 * `name` has no live cluster.  When some record (a destroyed cluster)
 * has that name, set *destroyed: destroy is idempotent.  Otherwise the
 * name was never recorded: GPC_ERR_NOT_FOUND with the closest recorded
 * names (at most 1 edit for names of up to 4 letters, 2 up to 10, else
 * 3), which are also added to `sugg` (a JSON array).
 */
static int never_recorded(gpc_session *s, const char *name, int *destroyed, cJSON *sugg,
                          gpc_error *err)
{
    *destroyed = 0;
    gpc_cluster_rec *list = NULL;
    size_t n = 0;
    int rc = gpc_cluster_list(s->st, 1, &list, &n, err);
    if (rc)
        return rc;
    suggestion *near = calloc(n ? n : 1, sizeof(*near));
    if (!near) {
        gpc_cluster_list_free(list, n);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    size_t len = strlen(name), limit = len <= 4 ? 1 : len <= 10 ? 2 : 3, k = 0;
    for (size_t i = 0; i < n && !*destroyed; i++) {
        size_t d = gpc_edit_distance(name, list[i].name);
        if (d == 0)
            *destroyed = 1;
        if (d == 0 || d == SIZE_MAX || d > limit)
            continue;
        size_t j = 0; /* one entry per name; live if any of its records is */
        while (j < k && strcmp(near[j].name, list[i].name) != 0)
            j++;
        if (j == k)
            near[k++] = (suggestion){list[i].name, d, 0};
        near[j].live |= list[i].destroyed_at == 0;
    }
    if (!*destroyed) {
        qsort(near, k, sizeof(*near), suggestion_cmp);
        if (k > DESTROY_SUGGEST_MAX)
            k = DESTROY_SUGGEST_MAX;
        gpc_buf hint;
        gpc_buf_init(&hint, GPC_ERROR_MSG_MAX);
        for (size_t j = 0; j < k; j++) {
            gpc_buf_addf(&hint, NULL, "%s'%s'%s",
                         j == 0 ? "; did you mean " : j + 1 == k ? " or " : ", ", near[j].name,
                         near[j].live ? "" : " (destroyed)");
            cJSON_AddItemToArray(sugg, cJSON_CreateString(near[j].name));
        }
        if (k)
            gpc_buf_adds(&hint, "?", NULL);
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND,
                      "no cluster named '%s' was ever recorded in the state at %s%s",
                      name, s->state_dir,
                      k ? gpc_buf_str(&hint) : " (gpuctl status --all lists the recorded ones)");
        gpc_buf_free(&hint);
    }
    free(near);
    gpc_cluster_list_free(list, n);
    return rc;
}

static int destroy_opt(int opt, const char *arg, void *ud)
{
    if (opt != 'f')
        return -1;
    if (((destroy_args *)ud)->file)
        return GPC_OPT_TWICE;
    ((destroy_args *)ud)->file = arg;
    return 0;
}

int gpc_cmd_destroy(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0}
    };
    destroy_args a = {NULL};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, opts, "f:", destroy_opt, &a, &done);
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
    int lockfd = -1, deleted = 0, found = 0, destroyed_before = 0;
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
    if (!rc && found && !o->assume_yes) {
        char q[256];
        snprintf(q, sizeof(q), "Destroy cluster '%s' and its %u node(s)?", name, cr.nodes);
        int yes = gpc_confirm(o, q);
        if (yes == 0)
            rc = gpc_fail(&err, GPC_ERR_USAGE, "aborted");
    }
    if (!rc && found)
        rc = gpc_cluster_destroy(&s, &cr, &deleted, &err);
    if (o->format == GPC_OUT_JSON && s.st) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "destroy");
        cJSON_AddStringToObject(doc, "cluster", name);
        cJSON_AddBoolToObject(doc, "found", found);
        cJSON_AddNumberToObject(doc, "deleted", deleted);
        cJSON_AddItemToObject(doc, "suggestions", sugg);
        sugg = NULL;
        if (rc) {
            cJSON *e = cJSON_AddObjectToObject(doc, "error");
            cJSON_AddStringToObject(e, "code", gpc_code_name(err.code));
            cJSON_AddStringToObject(e, "message", err.msg);
            cJSON_AddNumberToObject(e, "exit_status", gpc_exit_status(err.code));
            fprintf(stderr, "gpuctl: error: %s\n", err.msg);
        } else {
            cJSON_AddNullToObject(doc, "error");
        }
        gpc_print_json(doc);
    } else if (rc) {
        gpc_report_error(o, &err);
    } else if (!found) {
        printf("cluster %s: already destroyed, nothing to destroy\n", name);
    } else {
        printf("cluster %s: destroyed (%d node(s) deleted)\n", name, deleted);
    }
    gpc_cluster_rec_free(&cr);
    gpc_cluster_unlock(lockfd);
    if (s.st || s.state_dir)
        gpc_session_close(&s);
    cJSON_Delete(sugg);
    free(name);
    return rc ? gpc_exit_status(err.code) : 0;
}
