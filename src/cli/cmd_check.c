/*
 * cmd_check.c - `gpuctl check [PROVIDER...]`: do each provider's
 * credentials resolve and work?  One cheap authenticated call per provider
 * (AWS: EC2 DescribeRegions), like `sky check`.
 *
 * Exit status: with provider names, 0 when every one named works, else
 * the status of the first that does not (20 auth, 6 provider, ...; see
 * docs/exit-codes.md); without names, 0 when at least one works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpuctl/cluster.h"
#include "commands.h"
#include "gpuctl/provider.h"

typedef struct check_result {
    const char *name;
    int ok;
    char detail[768];
    gpc_error err;
} check_result;

static void check_one(gpc_session *s, const gpc_provider *p, check_result *r)
{
    r->name = p->name;
    gpc_error_clear(&r->err);
    if (!p->check) {
        r->ok = 1;
        snprintf(r->detail, sizeof(r->detail), "%s",
                 (p->caps & GPC_CAP_FREE) ? "runs on this machine; no credentials needed"
                                          : "no credentials check for this provider");
        return;
    }
    gpc_open_provider op;
    int rc = gpc_session_provider(s, p->name, &op, &r->err);
    if (!rc)
        rc = op.prov->check(op.ctx, r->detail, sizeof(r->detail), &r->err);
    r->ok = rc == 0;
}

int gpc_cmd_check(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, NULL, NULL, &done);
    if (done)
        return rc;
    size_t n_named = (size_t)(argc - optind);
    for (int i = optind; i < argc; i++) {
        const gpc_provider *p = gpc_provider_find(argv[i]);
        if (!p)
            return gpc_usage_error(o, c, "unknown provider '%s' (available: %s)", argv[i],
                                   gpc_provider_names());
        if (p->caps & GPC_CAP_PLAN_ONLY)
            return gpc_usage_error(o, c, "provider '%s' is plan-only: it has no credentials "
                                   "to check yet (available: %s)", argv[i],
                                   gpc_provider_names());
    }
    /* the providers that can create nodes (plan-only ones have nothing to
     * check), in registry order */
    const gpc_provider *avail[64];
    size_t total = 0;
    for (size_t i = 0; gpc_providers[i] && total < sizeof(avail) / sizeof(avail[0]); i++)
        if (!(gpc_providers[i]->caps & GPC_CAP_PLAN_ONLY))
            avail[total++] = gpc_providers[i];
    size_t n = n_named ? n_named : total;
    check_result *res = calloc(n, sizeof(*res));
    gpc_session s;
    gpc_error err;
    gpc_error_clear(&err);
    o->cfg.state_reads_only = 1;
    rc = res ? gpc_session_open(&s, &o->cfg, &err) : gpc_fail(&err, GPC_ERR_NOMEM, "out of memory");
    if (rc) {
        free(res);
        return gpc_report_error(o, &err);
    }
    int any_ok = 0, first_bad = -1;
    for (size_t i = 0; i < n; i++) {
        const gpc_provider *p = n_named ? gpc_provider_find(argv[optind + (int)i])
                                        : avail[i];
        check_one(&s, p, &res[i]);
        any_ok |= res[i].ok;
        if (!res[i].ok && first_bad < 0)
            first_bad = (int)i;
    }
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "check");
        cJSON *arr = cJSON_AddArrayToObject(doc, "providers");
        for (size_t i = 0; i < n; i++) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "name", res[i].name);
            cJSON_AddBoolToObject(j, "ok", res[i].ok);
            cJSON_AddStringToObject(j, "detail", res[i].ok ? res[i].detail : "");
            if (res[i].ok) {
                cJSON_AddNullToObject(j, "error");
            } else {
                gpc_json_add_error(j, "error", &res[i].err, gpc_exit_status(res[i].err.code));
            }
            cJSON_AddItemToArray(arr, j);
        }
        gpc_print_json(doc);
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%-8s %s  %s\n", res[i].name, res[i].ok ? "ok    " : "FAILED",
                   res[i].ok ? res[i].detail : res[i].err.msg);
    }
    int status = 0;
    if (n_named && first_bad >= 0)
        status = gpc_exit_status(res[first_bad].err.code);
    else if (!n_named && !any_ok && first_bad >= 0)
        status = gpc_exit_status(res[first_bad].err.code);
    gpc_session_close(&s);
    free(res);
    return status;
}
