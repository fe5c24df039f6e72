/* cmd_plan.c - `gpuctl plan`. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpuctl/cluster.h"
#include "commands.h"
#include "gpuctl/plan.h"

const gpc_option gpc_plan_options[] = {
    {"file", 'f', "FILE", 'f', "the job spec (YAML; - reads stdin); also as an operand"},
    {"out", 0, "PLANFILE", 'O', "also save the plan to PLANFILE (mode 0600; it holds the spec) "
     "for 'gpuctl apply PLANFILE'"},
    {"detailed-exitcode", 0, NULL, 'd', "exit 0 when apply would change nothing, 2 when it would "
     "create nodes, 1 on any error (Terraform's convention)"},
    {"live", 0, NULL, 'L', "ask the providers that have a price API for current spot "
     "prices of the offers that fit, then choose again (needs "
     "credentials)"},
    {NULL, 0, NULL, 0, NULL}
};

typedef struct plan_args {
    const char *file;
    const char *out;
    int detailed;
    int live;
} plan_args;

static int plan_opt(int opt, const char *arg, void *ud)
{
    plan_args *a = ud;
    switch (opt) {
    case 'f':
        return gpc_opt_once(&a->file, arg);
    case 'O':
        return gpc_opt_once(&a->out, arg);
    case 'd': a->detailed = 1; return 0;
    case 'L': a->live = 1; return 0;
    }
    return -1;
}

int gpc_cmd_plan(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, plan_opt, &a, &done);
    if (done)
        return rc;
    if (!a.file && optind < argc)
        a.file = argv[optind++];
    if (optind < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    if (!a.file)
        return gpc_usage_error(o, c, "missing -f FILE%s", "");
    if (a.out && (!*a.out || strcmp(a.out, "-") == 0))
        return gpc_usage_error(o, c, "--out needs a file name (a plan is not written to "
                               "stdout; -o json prints the same document)%s", "");
    struct stat sa, sb;
    if (a.out && stat(a.out, &sa) == 0 && stat(a.file, &sb) == 0 && sa.st_dev == sb.st_dev &&
        sa.st_ino == sb.st_ino)
        return gpc_usage_error(o, c, "--out %s is the spec itself; the plan would replace it",
                               a.out);

    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    char *text = NULL;
    gpc_session s;
    memset(&s, 0, sizeof(s));
    gpc_plan p;
    memset(&p, 0, sizeof(p));
    rc = gpc_spec_load_file_text(a.file, &spec, &text, &err);
    o->cfg.state_reads_only = 1;
    if (!rc)
        rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc) {
        gpc_plan_opts po = {.catalog_path = o->cfg.catalog_path, .spec_path = a.file,
                            .spec_text = text, .spec_len = text ? strlen(text) : 0,
                            .live = a.live};
        rc = gpc_plan_make(&s, spec, &po, &p, &err);
    }
    /* what apply would refuse before making anything, refused here too:
     * a plan CI approves is one apply can carry out */
    if (!rc)
        rc = gpc_plan_check(&s, spec, &p, &err);
    /* an offer no provider here can create: shown (Azure and Alibaba Cloud
     * are planned from the catalog), but never approved */
    const gpc_provider *chosen = !rc && p.n_offers ? gpc_provider_find(p.offers[0].worker.provider)
                                                   : NULL;
    int appliable = !p.n_offers || (chosen && !(chosen->caps & GPC_CAP_PLAN_ONLY));
    if (!rc && a.detailed && !appliable && p.action != GPC_PLAN_NONE)
        rc = gpc_fail(&err, GPC_ERR_PROVIDER, "apply cannot carry this plan out: the chosen "
                      "offer is on %s, which is not built into this gpuctl (available: %s)",
                      p.offers[0].worker.provider, gpc_provider_names());
    if (!rc && a.out)
        rc = gpc_plan_write(&p, a.out, &err);
    if (rc) {
        /* --detailed-exitcode: every error exits 1 (Terraform's contract) */
        rc = a.detailed ? gpc_report_error_status(o, &err, 1) : gpc_report_error(o, &err);
        goto out;
    }
    if (o->format == GPC_OUT_JSON)
        gpc_print_json(cJSON_Duplicate(p.doc, 1));
    else
        gpc_plan_print(o, &p);
    /* a plan whose chosen offer no provider here can create: apply would
     * refuse it (exit 6), so do not suggest it */
    if (a.out && appliable)
        gpc_info(&o->log, "plan saved to %s; carry it out with: gpuctl%s%s apply %s", a.out,
                 o->cfg.state_dir ? " --state-dir " : "", o->cfg.state_dir ? o->cfg.state_dir : "", a.out);
    else if (a.out)
        gpc_info(&o->log, "plan saved to %s; apply cannot carry it out: the chosen offer is on "
                 "%s, which is plan-only here (gpuctl help providers)", a.out,
                 p.offers[0].worker.provider);
    rc = a.detailed && p.action != GPC_PLAN_NONE ? 2 : 0;
out:
    gpc_plan_free(&p);
    gpc_session_close(&s);
    gpc_spec_free(spec);
    free(text);
    return rc;
}
