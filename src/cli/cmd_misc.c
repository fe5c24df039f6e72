/* cmd_misc.c - `gpuctl validate`, `gpuctl render`, `gpuctl version`. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <sqlite3.h>
#include <yaml.h> /* yaml_get_version_string for `version` */

#include "gpuctl/cluster.h"
#include "commands.h"
#include "gpuctl/render.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"

#ifndef GPUCTL_VERSION
#define GPUCTL_VERSION "0.0.0"
#endif

const gpc_option gpc_validate_options[] = {
    {"file", 'f', "FILE", 'f', "the job spec (YAML; - reads stdin); also as an operand"},
    {NULL, 0, NULL, 0, NULL}
};

const gpc_option gpc_render_options[] = {
    {"file", 'f', "FILE", 'f', "the job spec (YAML; - reads stdin)"},
    {"node", 0, "N", 'N', "the node's rank: 0 (the head, the default) to 1023"},
    {"provider", 0, "P", 'P', "apply that provider's user-data rules (default: the spec's "
     "first provider)"},
    {"head-ip", 0, "IP", 'H', "the head's IP address in a worker's user-data (default "
     "192.0.2.10, a documentation address)"},
    {"encoded", 0, NULL, 'E', "print the payload as sent: gzip when needed, then base64"},
    {NULL, 0, NULL, 0, NULL}
};

static int file_opt(int opt, const char *arg, void *ud)
{
    if (opt != 'f')
        return -1;
    return gpc_opt_once((const char **)ud, arg);
}

/* A GPU model the catalog in effect does not know is a spec error
 * (gpc_spec_gpu_models_check). */
static int check_gpu_models(const gpc_out *o, const gpc_spec *spec, gpc_error *err)
{
    int any = 0;
    for (size_t i = 0; i < spec->resources.n_gpus; i++)
        any |= spec->resources.gpus[i].model && *spec->resources.gpus[i].model;
    if (!any)
        return 0;
    gpc_catalog *cat = NULL;
    int rc = gpc_catalog_open(o->cfg.catalog_path, &cat, err);
    if (!rc)
        rc = gpc_spec_gpu_models_check(spec, cat, err);
    gpc_catalog_free(cat);
    return rc;
}

int gpc_cmd_validate(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    const char *file = NULL;
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, file_opt, &file, &done);
    if (done)
        return rc;
    if (!file && optind < argc)
        file = argv[optind++];
    if (!file)
        return gpc_usage_error(o, c, "missing -f FILE%s", "");
    if (optind < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    char hash[65] = "";
    rc = gpc_spec_load_file(file, &spec, &err);
    if (!rc)
        rc = gpc_spec_hash(spec, hash, &err);
    if (!rc)
        rc = check_gpu_models(o, spec, &err);
    /* what apply would refuse that is known here (spec.h) */
    if (!rc)
        rc = gpc_spec_check_paths(spec, &err);
    if (!rc)
        rc = gpc_spec_check_providers(spec, &err);
    /* a node without an end is allowed, but said (spec.h) */
    if (!rc && spec->lifecycle.max_duration_none)
        gpc_warn(&o->log, "%s: lifecycle.max_duration: none: %s", file,
                 spec->budget.max_total > 0
                     ? "the nodes end only when budget.max_total is spent"
                     : "the nodes have no end of their own (a hung job keeps them up, "
                       "and billed, until gpuctl destroy)");
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "validate");
        cJSON_AddStringToObject(doc, "file", file);
        cJSON_AddBoolToObject(doc, "valid", rc == 0);
        if (rc) {
            gpc_json_add_error(doc, "error", &err, gpc_exit_status(err.code));
            fprintf(stderr, "gpuctl: error: %s\n", err.msg);
        } else {
            cJSON_AddStringToObject(doc, "spec_hash", hash);
            cJSON_AddItemToObject(doc, "spec", gpc_spec_to_json(spec));
            cJSON *notes = cJSON_AddArrayToObject(doc, "notes");
            for (size_t i = 0; notes && i < spec->n_notes; i++)
                cJSON_AddItemToArray(notes, cJSON_CreateString(spec->notes[i]));
        }
        gpc_print_json(doc);
        gpc_spec_free(spec);
        return rc ? gpc_exit_status(err.code) : 0;
    }
    if (rc) {
        gpc_spec_free(spec);
        return gpc_report_error(o, &err);
    }
    printf("%s: valid: cluster %s, %u node(s) on %s, spec %.12s\n", file, spec->name,
           spec->nodes, spec->n_providers ? spec->providers[0] : "local", hash);
    /* what loading removed from the text the nodes execute (spec.h) */
    for (size_t i = 0; i < spec->n_notes; i++)
        printf("note: %s\n", spec->notes[i]);
    gpc_spec_free(spec);
    return 0;
}

typedef struct render_args {
    const char *file;
    const char *provider;
    const char *head_ip;
    long node;
    int encoded;
} render_args;

static int render_opt(int opt, const char *arg, void *ud)
{
    render_args *a = ud;
    char *end;
    switch (opt) {
    case 'f':
        return gpc_opt_once(&a->file, arg);
    case 'P': a->provider = arg; return 0;
    case 'H': a->head_ip = arg; return 0;
    case 'E': a->encoded = 1; return 0;
    case 'N':
        a->node = strtol(arg, &end, 10);
        return *end || a->node < 0 || a->node > 1023 ? -1 : 0;
    }
    return -1;
}

int gpc_cmd_render(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    render_args a = {NULL, NULL, NULL, 0, 0};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, render_opt, &a, &done);
    if (done)
        return rc;
    if (!a.file)
        return gpc_usage_error(o, c, "missing -f FILE%s", "");
    if (optind < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    if (gpc_spec_load_file(a.file, &spec, &err))
        return gpc_report_error(o, &err);
    const char *prov = a.provider ? a.provider
                                  : (spec->n_providers ? spec->providers[0]
                                                       : gpc_provider_default()->name);
    const gpc_provider *pv = gpc_provider_find(prov);
    const gpc_userdata_rules *rules = pv ? pv->userdata : NULL;
    if (!rules) {
        gpc_fail(&err, GPC_ERR_USAGE, "unknown provider '%s' (%s)", prov,
                 gpc_provider_names_with(0));
        gpc_spec_free(spec);
        return gpc_report_error(o, &err);
    }
    if ((uint32_t)a.node >= spec->nodes) {
        gpc_fail(&err, GPC_ERR_USAGE, "--node %ld: the spec has %u node(s) (ranks 0..%u)",
                 a.node, spec->nodes, spec->nodes - 1);
        gpc_spec_free(spec);
        return gpc_report_error(o, &err);
    }
    /* What apply would fill in, with documentation values where only a
     * live cluster knows them (RFC 5737 address for the head, an RFC 2606
     * name where the provider names it), for the provider's rank and
     * rendezvous sources (render.h): where the scheduler numbers the
     * nodes, one bootstrap for all of them; where the rendezvous does,
     * every worker's. */
    char rdzv_id[80];
    char hash[65];
    gpc_spec_hash(spec, hash, NULL);
    snprintf(rdzv_id, sizeof(rdzv_id), "render-%.12s", hash);
    /* as launch.c makes the node: in a batch (from the batch's first
     * rank: 0 in a group, else 1) or by itself */
    int batch = gpc_provider_batches(pv, (uint32_t)a.node, spec->nodes);
    gpc_rank_from rank_from = gpc_provider_rank_source(pv, (uint32_t)a.node, batch);
    uint32_t rank = batch ? ((pv->caps & GPC_CAP_GROUP) ? 0 : 1) : (uint32_t)a.node;
    if (rank_from == GPC_RANK_SCHEDULER)
        gpc_info(&o->log, "gpuctl: note: %s's nodes share one bootstrap and read their rank "
                 "from the scheduler", prov);
    else if (rank_from == GPC_RANK_LAUNCH_INDEX)
        gpc_info(&o->log, "gpuctl: note: %s's %s share one bootstrap: rank %u plus each "
                 "node's launch index", prov, rank ? "workers" : "nodes", rank);
    else if (rank_from == GPC_RANK_RENDEZVOUS)
        gpc_info(&o->log, "gpuctl: note: %s's workers carry no rank: torchrun's rendezvous "
                 "numbers them", prov);
    const char *head_ip = NULL;
    if (pv->rdzv == GPC_RDZV_ON_NODE) {
        gpc_info(&o->log, "gpuctl: note: %s's nodes find the head themselves%s", prov,
                 a.head_ip ? "; --head-ip is not used" : "");
    } else if (pv->rdzv == GPC_RDZV_NAME) {
        head_ip = a.head_ip ? a.head_ip : "head.example";
        if (!a.head_ip)
            gpc_info(&o->log, "gpuctl: note: head address shown as %s (set it with --head-ip)",
                     head_ip);
    } else if (a.node > 0 || rank_from != GPC_RANK_ENGINE) {
        head_ip = a.head_ip ? a.head_ip : "192.0.2.10";
        if (!a.head_ip)
            gpc_info(&o->log, "gpuctl: note: head IP shown as %s (set it with --head-ip)", head_ip);
    }
    char *workdir = NULL, *ckpt = NULL;
    if (spec->workdir)
        gpc_spec_path(spec, spec->workdir, &workdir, NULL);
    if (spec->checkpoint_dir)
        gpc_spec_path(spec, spec->checkpoint_dir, &ckpt, NULL);
    gpc_node_ctx ctx = {
        .cluster = spec->name, .cluster_id = rdzv_id,
        .rank = rank,
        .nnodes = spec->nodes, .head_addr = head_ip, .rank_from = rank_from,
        .rdzv_from = pv->rdzv,
        .rdzv_port = spec->run.rdzv_port ? spec->run.rdzv_port : 29400,
        .workdir = workdir, .checkpoint_dir = ckpt,
        /* bought as the spec says: rank 0 by spot.head, the others by
         * spot.policy (auto: spot, where the watcher matters) */
        .spot = (rank == 0 && !batch ? spec->spot.head : spec->spot.policy) != GPC_SPOT_ON_DEMAND,
    };
    /* no plan, so no prices: the node's budget end is not in it (and
     * where the spec sets no max_duration, the default one stands in) */
    if (spec->budget.max_total > 0)
        gpc_info(&o->log, "gpuctl: note: budget.max_total's end on the node needs the prices "
                 "of the plan's offer: not rendered here (GPUCTL_BUDGET_S=0%s; docs/spot.md)",
                 spec->lifecycle.max_duration_s || spec->lifecycle.max_duration_none
                     ? "" : "; the default max_duration stands in for it");
    else if (!spec->lifecycle.max_duration_s && !spec->lifecycle.max_duration_none)
        gpc_info(&o->log, "gpuctl: note: the spec sets no lifecycle.max_duration nor "
                 "budget.max_total: the node ends after the default %llus (72h; "
                 "lifecycle.max_duration: none keeps it up)",
                 (unsigned long long)GPC_SPEC_DEFAULT_MAX_DURATION_S);
    /* nodes that get the workdir and secrets from gpuctl over ssh wait for
     * them (deliver.c; as precheck.c judges it) */
    if (pv->transport_argv && !(pv->caps & GPC_CAP_SHARED_FILES) &&
        (spec->workdir || (spec->n_secrets && !(pv->caps & GPC_CAP_SECRETS)))) {
        ctx.deliver = 1;
        ctx.workdir = NULL;
    }
    char *ud = NULL, *enc = NULL;
    size_t enc_len = 0;
    int gz = 0;
    if (rules->bare) {
        /* the provider hands the node the bootstrap as it is */
        gpc_payload pl;
        rc = gpc_render_payload(spec, &ctx, rules, &pl, &err);
        if (!rc) {
            ud = pl.script;
            pl.script = NULL;
            gpc_payload_free(&pl);
        }
    } else {
        rc = gpc_render_userdata(spec, &ctx, rules, &ud, &err);
    }
    if (!rc)
        rc = gpc_userdata_encode(ud, strlen(ud), rules, &enc, &enc_len, &gz, &err);
    if (!rc && o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "render");
        cJSON_AddStringToObject(doc, "provider", prov);
        cJSON_AddNumberToObject(doc, "node", (double)a.node);
        cJSON_AddStringToObject(doc, "userdata", ud);
        cJSON_AddNumberToObject(doc, "userdata_bytes", (double)strlen(ud));
        cJSON_AddBoolToObject(doc, "gzipped", gz);
        cJSON_AddStringToObject(doc, "encoded", enc);
        cJSON_AddNumberToObject(doc, "encoded_bytes", (double)enc_len);
        gpc_print_json(doc);
    } else if (!rc) {
        if (a.encoded)
            printf("%s\n", enc);
        else
            fputs(ud, stdout);
        if (rules->bare)
            gpc_info(&o->log, "gpuctl: %s bootstrap for node %ld: %zu bytes (no cloud-init: "
                     "the provider runs it as it is; docs/providers/%s.md)", prov, a.node,
                     strlen(ud), prov);
        else
            gpc_info(&o->log, "gpuctl: %s user-data for node %ld: %zu bytes%s, %zu bytes as "
                     "sent", prov, a.node, strlen(ud), gz ? " (gzipped)" : "", enc_len);
    }
    free(ud);
    free(enc);
    free(workdir);
    free(ckpt);
    gpc_spec_free(spec);
    return rc ? gpc_report_error(o, &err) : 0;
}

void gpc_version_print(const gpc_out *o)
{
    curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "version");
        cJSON_AddStringToObject(doc, "version", GPUCTL_VERSION);
        cJSON_AddNumberToObject(doc, "spec_version", GPC_SPEC_VERSION);
        cJSON *libs = cJSON_AddObjectToObject(doc, "libraries");
        cJSON_AddStringToObject(libs, "curl", cv->version);
        cJSON_AddStringToObject(libs, "ssl", cv->ssl_version ? cv->ssl_version : "");
        cJSON_AddStringToObject(libs, "sqlite", sqlite3_libversion());
        cJSON_AddStringToObject(libs, "yaml", yaml_get_version_string());
        cJSON_AddStringToObject(libs, "cjson", cJSON_Version());
        cJSON *prov = cJSON_AddArrayToObject(doc, "providers");
        for (size_t i = 0; gpc_providers[i]; i++)
            if (!(gpc_providers[i]->caps & GPC_CAP_PLAN_ONLY))
                cJSON_AddItemToArray(prov, cJSON_CreateString(gpc_providers[i]->name));
        gpc_print_json(doc);
        return;
    }
    printf("gpuctl %s (spec v%d; providers: %s; curl %s, %s, sqlite %s, libyaml %s)\n",
           GPUCTL_VERSION, GPC_SPEC_VERSION, gpc_provider_names(), cv->version,
           cv->ssl_version ? cv->ssl_version : "no TLS", sqlite3_libversion(),
           yaml_get_version_string());
}

int gpc_cmd_version(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, NULL, NULL, &done);
    if (done)
        return rc;
    if (optind < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
    gpc_version_print(o);
    return 0;
}
