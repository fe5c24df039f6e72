/*
 * shell.c - shell access to a node (shell.h): find the node, ask its
 * provider for the command that reaches it; and the argument vectors and
 * shell quoting the providers build it with.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/shell.h"
#include "gpuctl/util.h"
#include "lifecycle.h"

int gpc_argv_add(gpc_argv *a, const char *s, gpc_error *err)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        char **v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        a->v = v;
        a->cap = cap;
    }
    char *c = strdup(s);
    if (!c)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    a->v[a->n++] = c;
    a->v[a->n] = NULL;
    return 0;
}

int gpc_argv_addf(gpc_argv *a, gpc_error *err, const char *fmt, ...)
{
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    va_list ap;
    va_start(ap, fmt);
    int rc = gpc_buf_vaddf(&b, err, fmt, ap);
    va_end(ap);
    if (!rc)
        rc = gpc_argv_add(a, gpc_buf_str(&b), err);
    gpc_buf_free(&b);
    return rc;
}

void gpc_argv_reset(gpc_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

int gpc_argv_take(gpc_argv *a, char ***argv, gpc_error *err)
{
    if (!a->v) {
        a->v = calloc(1, sizeof(*a->v));
        if (!a->v)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    *argv = a->v;
    memset(a, 0, sizeof(*a));
    return 0;
}

void gpc_argv_free(char **argv)
{
    for (char **p = argv; p && *p; p++)
        free(*p);
    free(argv);
}

int gpc_shell_join(gpc_buf *b, const char *const *cmd, size_t n, gpc_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++)
        rc = gpc_buf_addf(b, err, "%s%s", i ? " " : "", cmd[i]);
    return rc;
}

int gpc_cluster_shell(gpc_session *s, const char *name, uint32_t rank,
                      const char *const *cmd, size_t n_cmd, int tty, char ***argv,
                      gpc_error *err)
{
    return gpc_lc_shell(s, name, rank, cmd, n_cmd, tty, 0, argv, err);
}

int gpc_lc_shell(gpc_session *s, const char *name, uint32_t rank, const char *const *cmd,
                 size_t n_cmd, int tty, int idle_ok, char ***argv, gpc_error *err)
{
    *argv = NULL;
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    gpc_open_provider pv;
    int rc = gpc_cluster_get(s->st, name, &c, err);
    if (!rc)
        rc = gpc_session_provider(s, c.provider, &pv, err);
    if (!rc && !pv.prov->shell_argv)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "provider %s has no shell access to its nodes",
                      c.provider);
    if (!rc)
        rc = gpc_cluster_refresh(s, &c, err);
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    if (!rc)
        rc = gpc_node_list(s->st, c.id, 0, &nodes, &n, err);
    const gpc_node_rec *nd = NULL;
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].rank == rank)
            nd = &nodes[i];
    if (!rc && !nd)
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "cluster %s has no node %u (it has %u node%s)",
                      name, rank, c.nodes, c.nodes == 1 ? "" : "s");
    /* idle_ok (a job for the node's job runner): also a node still booting
     * (a worker waiting for the head: the job queues behind its job) or
     * whose job ended but which stays up (lifecycle.idle_timeout) */
    int up = nd && (nd->phase == GPC_PHASE_RUNNING ||
                    (idle_ok && !nd->ended_at && (nd->phase == GPC_PHASE_BOOTING ||
                                                  nd->phase == GPC_PHASE_SUCCEEDED ||
                                                  nd->phase == GPC_PHASE_FAILED)));
    if (!rc && (!up || !nd->provider_id[0]))
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "node %u of cluster %s is in phase %s, not "
                      "running: no shell to open there%s", rank, name, gpc_phase_name(nd->phase),
                      nd->ended_at && idle_ok ? " (its node ended with its job: "
                      "lifecycle.idle_timeout keeps nodes up for later jobs; destroy the "
                      "cluster and apply again)" : "");
    gpc_lc_ref r;
    memset(&r, 0, sizeof(r));
    int have_ref = 0;
    if (!rc) {
        have_ref = 1;
        rc = gpc_lc_ref_open(s, &c, &r, err);
    }
    if (!rc) {
        gpc_node_ref ref = gpc_lc_node_ref(nd);
        rc = pv.prov->shell_argv(pv.ctx, &r.ref, &ref, rank, cmd, n_cmd, tty, argv, err);
    }
    if (have_ref)
        gpc_lc_ref_close(s, &c, &r);
    if (rc) {
        gpc_argv_free(*argv);
        *argv = NULL;
    }
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&c);
    return rc;
}
