/* suggest.c - "did you mean" for cluster names (see commands.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "gpuctl/util.h"

/* At most this many names are suggested. */
#define SUGGEST_MAX 3

size_t gpc_suggest_limit(const char *word)
{
    size_t len = strlen(word);
    return len <= 4 ? 1 : len <= 10 ? 2 : 3;
}

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

int gpc_suggest_clusters(gpc_session *s, const char *name, int *recorded, gpc_buf *hint,
                         cJSON *names, gpc_error *err)
{
    *recorded = 0;
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
    size_t limit = gpc_suggest_limit(name), k = 0;
    for (size_t i = 0; i < n && !*recorded; i++) {
        size_t d = gpc_edit_distance(name, list[i].name);
        if (d == 0)
            *recorded = 1;
        if (d == 0 || d == SIZE_MAX || d > limit)
            continue;
        size_t j = 0; /* one entry per name; live if any of its records is */
        while (j < k && strcmp(near[j].name, list[i].name) != 0)
            j++;
        if (j == k)
            near[k++] = (suggestion){list[i].name, d, 0};
        near[j].live |= list[i].destroyed_at == 0;
    }
    if (!*recorded && k) {
        qsort(near, k, sizeof(*near), suggestion_cmp);
        if (k > SUGGEST_MAX)
            k = SUGGEST_MAX;
        for (size_t j = 0; j < k; j++) {
            if (hint)
                gpc_buf_addf(hint, NULL, "%s'%s'%s",
                             j == 0 ? "; did you mean " : j + 1 == k ? " or " : ", ",
                             near[j].name, near[j].live ? "" : " (destroyed)");
            if (names)
                cJSON_AddItemToArray(names, cJSON_CreateString(near[j].name));
        }
        if (hint)
            gpc_buf_adds(hint, "?", NULL);
    }
    free(near);
    gpc_cluster_list_free(list, n);
    return 0;
}

int gpc_no_cluster(gpc_session *s, const char *name, const char *no_hint, gpc_error *err)
{
    gpc_error_clear(err);
    gpc_buf hint;
    gpc_buf_init(&hint, GPC_ERROR_MSG_MAX);
    int recorded = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_suggest_clusters(s, name, &recorded, &hint, NULL, &e))
        gpc_buf_free(&hint);
    /* a failed look for suggestions leaves the message without them */
    int rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster named '%s'%s", name,
                      hint.len ? gpc_buf_str(&hint) : no_hint);
    gpc_buf_free(&hint);
    return rc;
}

int gpc_name_operand(gpc_out *o, const gpc_command *c, int argc, char **argv,
                     const char **name)
{
    if (optind >= argc)
        return gpc_usage_error(o, c, "missing cluster NAME%s", "");
    if (optind + 1 < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind + 1]);
    *name = argv[optind];
    if (!gpc_valid_cluster_name(*name))
        return gpc_usage_error(o, c, "invalid cluster name '%s'", *name);
    return 0;
}

int gpc_node_command_name(gpc_out *o, const gpc_command *c, int argc, char **argv,
                          const char *what, const char **name)
{
    if (optind >= argc)
        return gpc_usage_error(o, c, "missing cluster NAME%s", "");
    *name = argv[optind];
    if (!gpc_valid_cluster_name(*name))
        return gpc_usage_error(o, c, "invalid cluster name '%s'", *name);
    if (o->format == GPC_OUT_JSON)
        return gpc_usage_error(o, c, "-o json cannot be used: the output is the %s", what);
    return 0;
}
