/*
 * cmd_data.c - `gpuctl data push DIR --name NAME`, `gpuctl data ls [NAME]`,
 * `gpuctl data pull NAME DIR`, `gpuctl data rm NAME`: data sets in a provider's object storage, placed
 * ahead of a job (docs/cli.md#data).  The engine (gpuctl/store.h) does the
 * work; this file parses, asks, and prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/cluster.h"
#include "gpuctl/data.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"

typedef struct data_args {
    const char *name;
    const char *provider;
    const char *region;
    int delete_extra; /* push --delete */
} data_args;

const gpc_option gpc_data_options[] = {
    {"name", 0, "NAME", 'n', "push: the data set's name (1 to 63 letters, digits, '.', '_' "
     "and '-'); its objects go under data/NAME/ in the store"},
    {"provider", 0, "P", 'P', "the provider whose store holds the data (default: the default "
     "provider)"},
    {"region", 0, "R", 'r', "the region of the store (default: the provider's region)"},
    {"delete", 0, NULL, 'D', "push: also delete the data set's files that DIR no longer has "
     "(a mirror, as an S3 sync with --delete); without it push never deletes"},
    {NULL, 0, NULL, 0, NULL}
};

static int data_opt(int opt, const char *arg, void *ud)
{
    data_args *a = ud;
    switch (opt) {
    case 'n': return gpc_opt_once(&a->name, arg);
    case 'P': return gpc_opt_once(&a->provider, arg);
    case 'r': return gpc_opt_once(&a->region, arg);
    case 'D': a->delete_extra = 1; return 0;
    }
    return -1;
}

/* The JSON document's common members. */
static cJSON *doc_new(const char *action, const gpc_provider *p, const data_args *a)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "data");
    cJSON_AddStringToObject(doc, "action", action);
    cJSON_AddStringToObject(doc, "provider", p->name);
    if (a->region)
        cJSON_AddStringToObject(doc, "region", a->region);
    else
        cJSON_AddNullToObject(doc, "region");
    return doc;
}

static int data_push(gpc_out *o, gpc_session *s, const gpc_provider *p, const data_args *a,
                     const char *dir, gpc_error *err)
{
    gpc_data_where w = {.provider = p->name, .region = a->region};
    gpc_store_stats st;
    char url[1024];
    unsigned flags = GPC_DATA_GUARD | (a->delete_extra ? GPC_DATA_DELETE : 0);
    int rc = gpc_data_push(s, &w, dir, a->name, flags, &st, url, sizeof(url), err);
    if (rc)
        return rc;
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = doc_new("push", p, a);
        cJSON_AddStringToObject(doc, "name", a->name);
        cJSON_AddStringToObject(doc, "url", url);
        cJSON_AddNumberToObject(doc, "files_sent", (double)st.files_sent);
        cJSON_AddNumberToObject(doc, "files_unchanged", (double)st.files_skipped);
        cJSON_AddNumberToObject(doc, "bytes_sent", (double)st.bytes_sent);
        cJSON_AddNumberToObject(doc, "files_deleted", (double)st.files_deleted);
        gpc_print_json(doc);
    } else {
        char sz[32];
        gpc_format_bytes(st.bytes_sent, sz, sizeof(sz));
        if (a->delete_extra)
            printf("data %s: %lu file(s) sent (%s), %lu unchanged, %lu deleted\n", a->name,
                   st.files_sent, sz, st.files_skipped, st.files_deleted);
        else
            printf("data %s: %lu file(s) sent (%s), %lu unchanged\n", a->name, st.files_sent,
                   sz, st.files_skipped);
        printf("  %s\n", url);
    }
    return 0;
}

static int data_pull(gpc_out *o, gpc_session *s, const gpc_provider *p, const data_args *a,
                     const char *name, const char *dir, gpc_error *err)
{
    gpc_data_where w = {.provider = p->name, .region = a->region};
    gpc_store_stats st;
    int rc = gpc_data_pull(s, &w, name, dir, &st, err);
    if (rc)
        return rc;
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = doc_new("pull", p, a);
        cJSON_AddStringToObject(doc, "name", name);
        cJSON_AddStringToObject(doc, "dir", dir);
        cJSON_AddNumberToObject(doc, "files_received", (double)st.files_sent);
        cJSON_AddNumberToObject(doc, "files_unchanged", (double)st.files_skipped);
        cJSON_AddNumberToObject(doc, "bytes_received", (double)st.bytes_sent);
        gpc_print_json(doc);
    } else {
        char sz[32];
        gpc_format_bytes(st.bytes_sent, sz, sizeof(sz));
        printf("data %s: %lu file(s) received (%s), %lu unchanged\n", name, st.files_sent, sz,
               st.files_skipped);
        printf("  %s\n", dir);
    }
    return 0;
}

/* A list of data sets from the keys "NAME/FILE" under data/. */
typedef struct data_set {
    char name[64];
    size_t files;
    uint64_t bytes;
} data_set;

static size_t group_sets(const gpc_store_entry *v, size_t n, data_set *sets)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(v[i].key, "/");
        if (!v[i].key[len] || len >= sizeof(sets[0].name))
            continue; /* a file directly under data/: no data set's */
        if (!k || strlen(sets[k - 1].name) != len || strncmp(sets[k - 1].name, v[i].key, len)) {
            memset(&sets[k], 0, sizeof(sets[k]));
            memcpy(sets[k].name, v[i].key, len);
            k++;
        }
        sets[k - 1].files++;
        sets[k - 1].bytes += v[i].size;
    }
    return k;
}

static void fmt_mtime(int64_t t, char *out, size_t size)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "-");
}

static int data_ls(gpc_out *o, gpc_session *s, const gpc_provider *p, const data_args *a,
                   const char *name, gpc_error *err)
{
    gpc_data_where w = {.provider = p->name, .region = a->region};
    gpc_store_entry *v = NULL;
    size_t n = 0;
    int rc = gpc_data_list(s, &w, name, &v, &n, err);
    if (rc)
        return rc;
    data_set *sets = name ? NULL : calloc(n ? n : 1, sizeof(*sets));
    if (!name && !sets) {
        free(v);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    size_t n_sets = name ? 0 : group_sets(v, n, sets);
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = doc_new("ls", p, a);
        if (name) {
            cJSON_AddStringToObject(doc, "name", name);
            cJSON *arr = cJSON_AddArrayToObject(doc, "objects");
            for (size_t i = 0; i < n; i++) {
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "key", v[i].key);
                cJSON_AddNumberToObject(j, "size", (double)v[i].size);
                if (v[i].mtime > 0)
                    cJSON_AddNumberToObject(j, "mtime", (double)v[i].mtime);
                else
                    cJSON_AddNullToObject(j, "mtime");
                cJSON_AddItemToArray(arr, j);
            }
        } else {
            cJSON_AddNullToObject(doc, "name");
            cJSON *arr = cJSON_AddArrayToObject(doc, "data_sets");
            for (size_t i = 0; i < n_sets; i++) {
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "name", sets[i].name);
                cJSON_AddNumberToObject(j, "files", (double)sets[i].files);
                cJSON_AddNumberToObject(j, "bytes", (double)sets[i].bytes);
                cJSON_AddItemToArray(arr, j);
            }
        }
        gpc_print_json(doc);
    } else if (name) {
        gpc_table t;
        gpc_table_init(&t, 3, (const char *const[]){"KEY", "SIZE", "MODIFIED"});
        for (size_t i = 0; i < n; i++) {
            char sz[32], when[32];
            snprintf(sz, sizeof(sz), "%llu", (unsigned long long)v[i].size);
            fmt_mtime(v[i].mtime, when, sizeof(when));
            gpc_table_add(&t, (const char *const[]){v[i].key, sz, when});
        }
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
    } else if (n_sets == 0) {
        printf("no data sets in the store of %s%s%s\n", p->name, a->region ? " region " : "",
               a->region ? a->region : "");
    } else {
        gpc_table t;
        gpc_table_init(&t, 3, (const char *const[]){"NAME", "FILES", "SIZE"});
        for (size_t i = 0; i < n_sets; i++) {
            char files[32], sz[32];
            snprintf(files, sizeof(files), "%zu", sets[i].files);
            gpc_format_bytes(sets[i].bytes, sz, sizeof(sz));
            gpc_table_add(&t, (const char *const[]){sets[i].name, files, sz});
        }
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
    }
    free(sets);
    free(v);
    return 0;
}

static int data_rm(gpc_out *o, gpc_session *s, const gpc_provider *p, const data_args *a,
                   const char *name, gpc_error *err)
{
    gpc_data_where w = {.provider = p->name, .region = a->region};
    if (!o->assume_yes) {
        /* say how much goes before asking (and fail as ls does when none,
         * or as rm would when a live cluster uses it) */
        gpc_store_entry *v = NULL;
        size_t n = 0;
        int rc = gpc_data_list(s, &w, name, &v, &n, err);
        if (!rc)
            rc = gpc_data_guard(s, &w, name, NULL, err);
        free(v);
        if (rc)
            return rc;
        char q[256];
        snprintf(q, sizeof(q), "Remove data set '%s' (%zu file(s)) from the store of %s?", name,
                 n, p->name);
        int yes = gpc_confirm(o, q);
        if (yes < 0)
            return gpc_fail(err, GPC_ERR_USAGE, "refusing to remove data without a terminal "
                            "to confirm on; pass -y");
        if (yes == 0)
            return -1; /* cancelled */
    }
    size_t removed = 0;
    int rc = gpc_data_remove(s, &w, name, &removed, err);
    if (rc)
        return rc;
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = doc_new("rm", p, a);
        cJSON_AddStringToObject(doc, "name", name);
        cJSON_AddNumberToObject(doc, "removed", (double)removed);
        gpc_print_json(doc);
    } else {
        printf("data %s: %zu file(s) removed\n", name, removed);
    }
    return 0;
}

int gpc_cmd_data(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    data_args a;
    memset(&a, 0, sizeof(a));
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, data_opt, &a, &done);
    if (done)
        return rc;
    if (optind >= argc)
        return gpc_usage_error(o, c, "data needs an action: push, ls, pull or rm");
    const char *verb = argv[optind++];
    int nops = argc - optind;
    const char *op1 = nops > 0 ? argv[optind] : NULL;
    if (strcmp(verb, "push") == 0) {
        if (nops != 1)
            return gpc_usage_error(o, c, "data push needs one directory (data push DIR "
                                   "--name NAME)");
        if (!a.name)
            return gpc_usage_error(o, c, "data push needs --name NAME");
    } else if (a.delete_extra) {
        return gpc_usage_error(o, c, "--delete belongs to 'data push'");
    } else if (strcmp(verb, "pull") == 0) {
        if (a.name)
            return gpc_usage_error(o, c, "--name belongs to 'data push'; give the name as "
                                   "the first operand of 'data pull'");
        if (nops != 2)
            return gpc_usage_error(o, c, "data pull needs a data set name and a directory "
                                   "(data pull NAME DIR)");
    } else if (strcmp(verb, "ls") == 0 || strcmp(verb, "rm") == 0) {
        if (a.name)
            return gpc_usage_error(o, c, "--name belongs to 'data push'; give the name as "
                                   "the operand of 'data %s'", verb);
        if (nops > 1 || (nops == 0 && verb[0] == 'r'))
            return gpc_usage_error(o, c, "data %s takes %s data set name", verb,
                                   verb[0] == 'r' ? "one" : "at most one");
    } else {
        return gpc_usage_error(o, c, "unknown data action '%s' (push, ls, pull, rm)", verb);
    }
    const char *name = strcmp(verb, "push") == 0 ? a.name : op1;
    if (name && !gpc_data_name_ok(name))
        return gpc_usage_error(o, c, "invalid data set name '%s': 1 to 63 letters, digits, "
                               "'.', '_' and '-', starting with a letter or digit", name);
    gpc_error err;
    gpc_error_clear(&err);
    const gpc_provider *p = gpc_data_provider(&(gpc_data_where){a.provider, a.region}, &err);
    if (!p)
        return gpc_report_error(o, &err);
    gpc_session s;
    if (verb[0] == 'l')
        o->cfg.state_reads_only = 1;
    rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc) {
        if (strcmp(verb, "push") == 0)
            rc = data_push(o, &s, p, &a, op1, &err);
        else if (strcmp(verb, "pull") == 0)
            rc = data_pull(o, &s, p, &a, name, argv[optind + 1], &err);
        else if (verb[0] == 'l')
            rc = data_ls(o, &s, p, &a, name, &err);
        else
            rc = data_rm(o, &s, p, &a, name, &err);
    }
    gpc_session_close(&s);
    if (rc == -1)
        return gpc_report_cancelled(o, "data rm cancelled; nothing was removed");
    return rc ? gpc_report_error(o, &err) : 0;
}
