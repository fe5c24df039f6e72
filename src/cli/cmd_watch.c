/* cmd_watch.c - `gpuctl watch NAME`: the controller of apply --wait for a
 * cluster applied without it (the engine's gpc_watch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/cluster.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"

typedef struct watch_args {
    const char *file;
    int no_recover;
    gpc_apply_opts opts;
} watch_args;

const gpc_option gpc_watch_options[] = {
    {"file", 'f', "FILE", 'f', "the spec the cluster was applied with (default: the file it "
     "was applied from); needed to make replacement nodes"},
    {"no-recover", 0, NULL, 'r', "do not replace lost nodes (no spec needed); still follow "
     "the job, its notices and budget.max_total"},
    {"timeout", 0, "DURATION", 't', "give up after DURATION (90s, 5m, 2h; a bare number is "
     "seconds) and exit 12; the nodes keep running"},
    {"poll-interval", 0, "DURATION", 'p', "time between polls (default 1s): 0.05s to 1h"},
    {NULL, 0, NULL, 0, NULL}
};

static int watch_opt(int opt, const char *arg, void *ud)
{
    watch_args *a = ud;
    switch (opt) {
    case 'f':
        return gpc_opt_once(&a->file, arg);
    case 'r': a->no_recover = 1; return 0;
    }
    return gpc_wait_opt(opt, arg, &a->opts);
}

static void print_watch_json(gpc_session *s, const char *name, int recover,
                             const gpc_apply_result *res, const gpc_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "watch");
    cJSON_AddStringToObject(doc, "cluster", name);
    cJSON_AddBoolToObject(doc, "recover", recover);
    cJSON_AddNumberToObject(doc, "created", res->created);
    cJSON_AddBoolToObject(doc, "waited", res->waited);
    gpc_json_add_job_end(doc, s, res, err);
    gpc_print_json(doc);
}

int gpc_cmd_watch(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    watch_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, watch_opt, &a, &done);
    if (done)
        return rc;
    const char *name = NULL;
    if ((rc = gpc_name_operand(o, c, argc, argv, &name)) != 0)
        return rc;
    if (a.file && a.no_recover)
        return gpc_usage_error(o, c, "-f gives the spec for replacement nodes, which "
                               "--no-recover makes none of%s", "");

    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    if (a.file && gpc_spec_load_file(a.file, &spec, &err))
        return gpc_report_error(o, &err);
    gpc_session s;
    gpc_apply_result res;
    memset(&res, 0, sizeof(res));
    res.exit_code = -1;
    rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc) {
        gpc_install_signal_handlers();
        a.opts.catalog_path = o->cfg.catalog_path;
        a.opts.stream_logs = !o->quiet && o->format != GPC_OUT_JSON;
        rc = gpc_watch(&s, name, spec, a.file, &a.opts, !a.no_recover, &res, &err);
        if (rc == GPC_ERR_NOT_FOUND && !res.cluster_id) {
            gpc_error_clear(&err);
            rc = gpc_no_cluster(&s, name, " (gpuctl status lists the live ones)", &err);
        }
    }
    if (o->format == GPC_OUT_JSON && s.st) {
        print_watch_json(&s, name, !a.no_recover, &res, &err);
        if (rc)
            fprintf(stderr, "gpuctl: error: %s\n", err.msg);
    } else {
        if (s.st && res.waited && !o->quiet) {
            gpc_cluster_rec cr;
            gpc_error e;
            gpc_error_clear(&e);
            if (gpc_cluster_get_by_id(s.st, res.cluster_id, &cr, &e) == 0) {
                gpc_cluster_print_nodes(o, &s, &cr, &e);
                gpc_cluster_rec_free(&cr);
            }
        }
        if (s.st)
            gpc_print_job_end(&s, &res);
        if (rc)
            gpc_report_error(o, &err);
    }
    gpc_session_close(&s);
    gpc_spec_free(spec);
    return rc ? gpc_exit_status(err.code) : 0;
}
