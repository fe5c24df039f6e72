/*
 * cmd_gc.c - `gpuctl gc [--provider P] [--region R] [-y]`: the orphan sweep
 * (docs/cli.md#gc).  Lists every resource carrying gpuctl's tags that no
 * live cluster of this state owns, or whose cluster expired
 * (gpc_orphans), by default in every region of every provider that can
 * list what it made; with -y removes them (gpc_orphans_delete).  Without
 * -y it only lists, never asks: the sweep is meant for cron as much as for
 * a person.
 *
 * Exit status: 0; 8 (partial) when a place could not be read or something
 * could not be removed, naming it; a provider's own error otherwise (20
 * refused credentials, ...).  A provider not named that has no
 * credentials is skipped with a note.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/cluster.h"
#include "gpuctl/provider.h"

typedef struct gc_args {
    char **providers;
    size_t n_providers;
    char **regions;
    size_t n_regions;
} gc_args;

const gpc_option gpc_gc_options[] = {
    {"provider", 0, "P[,P]", 'P', "only these providers (repeatable; default: every provider "
     "that can list what it made, skipping those without credentials)"},
    {"region", 0, "R[,R]", 'r', "only these regions (repeatable; default: every region the "
     "credentials can use)"},
    {NULL, 0, NULL, 0, NULL}
};

static int gc_opt(int opt, const char *arg, void *ud)
{
    gc_args *a = ud;
    int rc = -1;
    if (opt == 'P')
        rc = gpc_list_append(arg, &a->providers, &a->n_providers);
    else if (opt == 'r')
        rc = gpc_list_append(arg, &a->regions, &a->n_regions);
    return rc ? gpc_opt_fail("--%s: '%s' is not a comma-separated list of names",
                             opt == 'P' ? "provider" : "region", arg) : 0;
}

/* What one provider gave. */
typedef struct gc_prov {
    const gpc_provider *p;
    gpc_orphan *o;
    size_t n;
    int *deleted;
    int listed;       /* gpc_orphans answered (0 or PARTIAL) */
    int skipped;      /* not named, no credentials */
    int deleted_rc;   /* gpc_orphans_delete's result */
    gpc_error err;    /* the listing's error (also PARTIAL) */
    gpc_error del_err;
} gc_prov;

static void utc(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "-");
}

static void why_of(const gpc_orphan *o, char *out, size_t size)
{
    char at[32];
    utc(o->expired_at, at, sizeof(at));
    if (o->owned)
        snprintf(out, size, "expired at %s", at);
    else if (o->expired_at)
        snprintf(out, size, "no live cluster; expired at %s", at);
    else
        snprintf(out, size, "no live cluster");
}

/* The providers that can list what they made, in registry order. */
static size_t sweepers(const gpc_provider **out, size_t max, char *names, size_t size)
{
    size_t k = 0;
    names[0] = '\0';
    for (size_t i = 0; gpc_providers[i] && k < max; i++) {
        const gpc_provider *p = gpc_providers[i];
        if ((p->caps & GPC_CAP_PLAN_ONLY) || !p->list_orphans)
            continue;
        out[k++] = p;
        snprintf(names + strlen(names), size - strlen(names), "%s%s", k > 1 ? ", " : "",
                 p->name);
    }
    return k;
}

static void print_json(const gc_prov *pv, size_t np, int delete, const gpc_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "gc");
    cJSON_AddBoolToObject(doc, "delete", delete);
    cJSON *provs = cJSON_AddArrayToObject(doc, "providers");
    cJSON *res = cJSON_AddArrayToObject(doc, "resources");
    for (size_t i = 0; i < np; i++) {
        const gc_prov *v = &pv[i];
        cJSON *pj = cJSON_CreateObject();
        cJSON_AddStringToObject(pj, "name", v->p->name);
        const char *status = v->skipped ? "skipped"
                           : !v->listed ? "failed"
                           : v->err.code ? "partial" : "listed";
        cJSON_AddStringToObject(pj, "status", status);
        if (v->err.code)
            cJSON_AddStringToObject(pj, "reason", v->err.msg);
        else
            cJSON_AddNullToObject(pj, "reason");
        cJSON_AddItemToArray(provs, pj);
        for (size_t j = 0; j < v->n; j++) {
            const gpc_orphan *o = &v->o[j];
            cJSON *r = cJSON_CreateObject();
            char at[32];
            cJSON_AddStringToObject(r, "provider", v->p->name);
            if (o->region[0])
                cJSON_AddStringToObject(r, "region", o->region);
            else
                cJSON_AddNullToObject(r, "region");
            cJSON_AddStringToObject(r, "kind", o->kind);
            cJSON_AddStringToObject(r, "id", o->id);
            if (o->cluster[0])
                cJSON_AddStringToObject(r, "cluster", o->cluster);
            else
                cJSON_AddNullToObject(r, "cluster");
            if (o->cluster_uid[0])
                cJSON_AddStringToObject(r, "cluster_uid", o->cluster_uid);
            else
                cJSON_AddNullToObject(r, "cluster_uid");
            cJSON_AddStringToObject(r, "detail", o->detail);
            cJSON_AddStringToObject(r, "why", o->owned ? "expired" : "no-live-cluster");
            utc(o->expires_at, at, sizeof(at));
            if (o->expires_at)
                cJSON_AddStringToObject(r, "expires_at", at);
            else
                cJSON_AddNullToObject(r, "expires_at");
            cJSON_AddBoolToObject(r, "deleted", v->deleted && v->deleted[j]);
            cJSON_AddItemToArray(res, r);
        }
    }
    if (err->code)
        gpc_json_add_error(doc, "error", err, gpc_exit_status(err->code));
    else
        cJSON_AddNullToObject(doc, "error");
    gpc_print_json(doc);
}

static void print_table(const gpc_out *o, const gc_prov *pv, size_t np)
{
    static const char *const head[] = {"PROVIDER", "REGION", "KIND", "ID", "CLUSTER", "WHY",
                                       "DETAIL"};
    gpc_table t;
    gpc_table_init(&t, 7, head);
    size_t rows = 0;
    for (size_t i = 0; i < np; i++)
        for (size_t j = 0; j < pv[i].n; j++) {
            const gpc_orphan *g = &pv[i].o[j];
            char why[96];
            why_of(g, why, sizeof(why));
            const char *row[] = {pv[i].p->name, g->region[0] ? g->region : "-", g->kind, g->id,
                                 g->cluster[0] ? g->cluster : "-", why, g->detail};
            gpc_table_add(&t, row);
            rows++;
        }
    if (rows)
        gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
}

int gpc_cmd_gc(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    gc_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, gc_opt, &a, &done);
    if (done || optind < argc) {
        if (!done)
            rc = gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind]);
        gpc_list_free(a.providers, a.n_providers);
        gpc_list_free(a.regions, a.n_regions);
        return rc;
    }
    const gpc_provider *all[64];
    char names[256];
    size_t n_all = sweepers(all, sizeof(all) / sizeof(all[0]), names, sizeof(names));
    const gpc_provider *chosen[64];
    size_t np = 0;
    for (size_t i = 0; i < a.n_providers && np < 64; i++) {
        const gpc_provider *p = gpc_provider_find(a.providers[i]);
        size_t k = 0;
        while (k < n_all && all[k] != p)
            k++;
        if (k == n_all) {
            rc = gpc_usage_error(o, c, "%s '%s' (those that can list what they made for "
                                 "gpuctl: %s)", p ? "nothing to collect from provider"
                                 : "unknown provider", a.providers[i], names);
            gpc_list_free(a.providers, a.n_providers);
            gpc_list_free(a.regions, a.n_regions);
            return rc;
        }
        size_t j = 0;
        while (j < np && chosen[j] != p)
            j++;
        if (j == np)
            chosen[np++] = p;
    }
    int named = np > 0;
    if (!named)
        for (size_t i = 0; i < n_all; i++)
            chosen[np++] = all[i];
    gc_prov *pv = calloc(np ? np : 1, sizeof(*pv));
    gpc_session s;
    memset(&s, 0, sizeof(s));
    gpc_error err;
    gpc_error_clear(&err);
    rc = pv ? gpc_session_open(&s, &o->cfg, &err) : gpc_fail(&err, GPC_ERR_NOMEM, "out of memory");
    /* list everything first, every provider: what one cannot read does not
     * hide what the others hold */
    for (size_t i = 0; !rc && i < np; i++) {
        gc_prov *v = &pv[i];
        v->p = chosen[i];
        gpc_error_clear(&v->err);
        int lrc = gpc_orphans(&s, v->p->name, (const char *const *)a.regions, a.n_regions, &v->o,
                              &v->n, &v->err);
        v->listed = lrc == 0 || lrc == GPC_ERR_PARTIAL;
        /* no credentials at all (nothing was asked of the provider's API,
         * so no remote answer): not configured, not an error unless named */
        if (lrc == GPC_ERR_AUTH && !named && !v->err.remote.http_status) {
            v->skipped = 1;
            gpc_info(&o->log, "%s: skipped: %s", v->p->name, v->err.msg);
            continue;
        }
        if (lrc && !err.code)
            gpc_error_wrap(&err, &v->err, NULL);
        else if (lrc && !o->quiet)
            fprintf(stderr, "gpuctl: error: %s\n", v->err.msg);
    }
    /* every provider skipped: nothing was read, which is not "clean" (a
     * gc run from cron whose credentials went away must not pass) */
    size_t n_skipped = 0;
    for (size_t i = 0; !rc && pv && i < np; i++)
        n_skipped += (size_t)pv[i].skipped;
    if (!rc && np && n_skipped == np && !err.code)
        gpc_fail(&err, GPC_ERR_AUTH, "nothing looked at: no provider that lists what it made "
                 "for gpuctl has credentials here (%zu skipped, said why above); what they hold "
                 "is not known", np);
    size_t total = 0;
    char looked[256] = "";
    for (size_t i = 0; pv && i < np; i++) {
        total += pv[i].listed ? pv[i].n : 0;
        if (pv[i].listed)
            snprintf(looked + strlen(looked), sizeof(looked) - strlen(looked), "%s%s",
                     looked[0] ? ", " : "", pv[i].p->name);
    }
    if (!rc && o->format != GPC_OUT_JSON && !o->quiet) {
        print_table(o, pv, np);
        if (!total && !err.code && looked[0])
            printf("nothing to collect (%s): everything tagged by gpuctl belongs to a live "
                   "cluster\n", looked);
    }
    /* then remove, with -y only */
    size_t removed = 0;
    for (size_t i = 0; !rc && o->assume_yes && i < np; i++) {
        gc_prov *v = &pv[i];
        if (!v->listed || !v->n)
            continue;
        v->deleted = calloc(v->n, sizeof(int));
        gpc_error_clear(&v->del_err);
        v->deleted_rc = v->deleted ? gpc_orphans_delete(&s, v->p->name, v->o, v->n, v->deleted,
                                                        &v->del_err)
                                   : gpc_fail(&v->del_err, GPC_ERR_NOMEM, "out of memory");
        for (size_t j = 0; v->deleted && j < v->n; j++)
            removed += (size_t)v->deleted[j];
        if (v->deleted_rc) {
            /* what could not be removed outranks what could not be read */
            if (err.code && !o->quiet && o->format != GPC_OUT_JSON)
                fprintf(stderr, "gpuctl: error: %s\n", err.msg);
            gpc_error_clear(&err);
            gpc_error_wrap(&err, &v->del_err, NULL);
        }
    }
    if (!rc && o->format != GPC_OUT_JSON && !o->quiet && o->assume_yes && total)
        printf("deleted %zu of %zu resource(s)\n", removed, total);
    else if (!rc && !o->assume_yes && total && !o->quiet)
        fprintf(stderr, "gpuctl: note: %zu resource(s) listed, nothing deleted; 'gpuctl gc -y' "
                "deletes them\n", total);
    if (rc)
        gpc_report_error(o, &err);
    else if (o->format == GPC_OUT_JSON)
        print_json(pv, np, o->assume_yes, &err);
    if (!rc && err.code)
        fprintf(stderr, "gpuctl: error: %s\n", err.msg);
    int status = err.code ? gpc_exit_status(err.code) : 0;
    for (size_t i = 0; pv && i < np; i++) {
        free(pv[i].o);
        free(pv[i].deleted);
    }
    free(pv);
    if (s.st || s.state_dir)
        gpc_session_close(&s);
    gpc_list_free(a.providers, a.n_providers);
    gpc_list_free(a.regions, a.n_regions);
    return status;
}
