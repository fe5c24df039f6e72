/* session.c - sessions, signals, cluster locks and the helpers the lifecycle
 * files share (lifecycle.h) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "lifecycle.h"
#include "gpuctl/clock.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

volatile sig_atomic_t gpc_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    /* a count: the HTTP layer ends calls in flight on the second
     * (gpc_http_set_interrupt) */
    if (gpc_interrupted < 1000)
        gpc_interrupted = gpc_interrupted + 1;
    static const char note[] = "\ngpuctl: interrupted: stopping at the next safe point "
                               "(interrupt again to end the calls in flight too)\n";
    if (gpc_interrupted == 1 && write(STDERR_FILENO, note, sizeof(note) - 1) < 0)
        return;
}

void gpc_install_signal_handlers(void)
{
    gpc_http_set_interrupt(&gpc_interrupted);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* a closed terminal: clean up as for ^C */
}

/* ---- session ---------------------------------------------------------- */

int gpc_session_open(gpc_session *s, const gpc_settings *o, gpc_error *err)
{
    memset(s, 0, sizeof(*s));
    s->cfg = o;
    s->log = o->log;
    int rc = o->state_dir ? ((s->state_dir = gpc_strdup(o->state_dir, err)) ? 0 : GPC_ERR_NOMEM)
                          : gpc_state_dir_default(&s->state_dir, err);
    if (!rc)
        rc = gpc_state_open_ex(s->state_dir, o->state_reads_only ? GPC_STATE_READ_ONLY_OK : 0,
                               &s->st, err);
    /* Absolute from here on: providers keep paths under it that outlive
     * this working directory (a local node chdirs into its own; a relative
     * --state-dir made it lose its script) */
    char *abs = NULL;
    if (!rc && s->state_dir[0] != '/' && gpc_realpath(s->state_dir, &abs, NULL) == 0) {
        free(s->state_dir);
        s->state_dir = abs;
    }
    if (!rc && gpc_state_read_only(s->st))
        gpc_warn(s->log, "the disk holding %s is full: the state is open read-only, as last "
                 "recorded; nothing is refreshed or recorded", s->state_dir);
    return rc ? rc : gpc_providers_register_secrets(err);
}

int gpc_session_provider(gpc_session *s, const char *name, gpc_open_provider *out,
                         gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    size_t i = 0;
    while (gpc_providers[i] && strcmp(gpc_providers[i]->name, name) != 0)
        i++;
    if (!gpc_providers[i] || (gpc_providers[i]->caps & GPC_CAP_PLAN_ONLY))
        return gpc_fail(err, GPC_ERR_PROVIDER,
                        "provider '%s' is not built into this gpuctl (available: %s)",
                        name, gpc_provider_names());
    if (!s->open) {
        size_t n = 0;
        while (gpc_providers[n])
            n++;
        if (!(s->open = calloc(n, sizeof(*s->open))))
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        s->n_open = n;
    }
    gpc_open_provider *slot = &s->open[i];
    if (!slot->prov) {
        const gpc_provider *p = gpc_providers[i];
        gpc_provider_settings ps;
        void *ctx = NULL;
        int rc = gpc_provider_settings_get(s->cfg, p, s->state_dir, &ps, err);
        if (!rc)
            rc = p->open(&ps.cfg, &ctx, err);
        gpc_provider_settings_free(&ps);
        if (rc)
            return rc;
        slot->prov = p;
        slot->ctx = ctx;
    }
    *out = *slot;
    return 0;
}

void gpc_session_close(gpc_session *s)
{
    for (size_t i = 0; i < s->n_open; i++)
        if (s->open[i].prov)
            s->open[i].prov->close(s->open[i].ctx);
    free(s->open);
    gpc_state_close(s->st);
    free(s->state_dir);
    memset(s, 0, sizeof(*s));
}

int gpc_cluster_lock(gpc_session *s, const char *name, int wait, int *fd, gpc_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/locks", s->state_dir);
    int rc = gpc_mkdir_p(dir, 0700, err);
    if (rc)
        return rc;
    if (snprintf(path, sizeof(path), "%s/%s.lock", dir, name) >= (int)sizeof(path))
        return gpc_fail(err, GPC_ERR_IO, "lock path too long");
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        if (!wait) {
            close(f);
            return gpc_fail(err, GPC_ERR_LOCKED,
                            "cluster '%s' is being changed by another gpuctl (lock %s)",
                            name, path);
        }
        gpc_info(s->log, "waiting for another gpuctl working on cluster '%s'...", name);
        while (flock(f, LOCK_EX) != 0) {
            if (errno != EINTR || gpc_interrupted) {
                close(f);
                return gpc_fail(err, GPC_ERR_INTERRUPTED, "interrupted while waiting for the lock");
            }
        }
    }
    *fd = f;
    return 0;
}

void gpc_cluster_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* ---- helpers ---------------------------------------------------------- */

void gpc_lc_sleep(double s)
{
    gpc_sleep(s, &gpc_interrupted);
}

int gpc_lc_is_terminal(gpc_phase p)
{
    return p == GPC_PHASE_SUCCEEDED || p == GPC_PHASE_FAILED ||
           p == GPC_PHASE_PREEMPTED || p == GPC_PHASE_TERMINATED;
}

void gpc_lc_set_str(char **dst, const char *src)
{
    char *p = strdup(src ? src : "");
    if (p) {
        free(*dst);
        *dst = p;
    }
}

int gpc_lc_event(gpc_session *s, int64_t cid, int rank, const char *kind, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_event_add(s->st, cid, rank, kind, msg, &e))
        gpc_debug(s->log, "could not record event: %s", e.msg);
    gpc_debug(s->log, "event %s rank %d: %s", kind, rank, msg);
    return 0;
}

/* Every region the cluster launched in or tried (nodes and attempts).
 * Caller frees with gpc_lc_free_strv. */
void gpc_lc_free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

int gpc_lc_cluster_regions(gpc_session *s, const gpc_cluster_rec *c, char ***out, size_t *n,
                           gpc_error *err)
{
    *out = NULL;
    *n = 0;
    gpc_node_rec *nodes = NULL;
    size_t nn = 0;
    gpc_attempt_rec *att = NULL;
    size_t na = 0;
    int rc = gpc_node_list(s->st, c->id, 1, &nodes, &nn, err);
    if (!rc)
        rc = gpc_attempt_list(s->st, c->id, &att, &na, err);
    char **v = rc ? NULL : calloc(nn + na + 1, sizeof(char *));
    if (!rc && !v)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; !rc && i < nn + na; i++) {
        const char *r = i < nn ? nodes[i].region : att[i - nn].region;
        int seen = !r[0];
        for (size_t j = 0; !seen && j < k; j++)
            seen = strcmp(v[j], r) == 0;
        if (seen)
            continue;
        if (!(v[k] = strdup(r)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            k++;
    }
    gpc_node_list_free(nodes, nn);
    gpc_attempt_list_free(att, na);
    if (rc) {
        gpc_lc_free_strv(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* ---- what the provider keeps: refs and provider data ------------------ */

gpc_node_ref gpc_lc_node_ref(const gpc_node_rec *nd)
{
    gpc_node_ref r = {.region = nd->region ? nd->region : "",
                      .provider_id = nd->provider_id ? nd->provider_id : "",
                      .data = nd->provider_data ? nd->provider_data : ""};
    return r;
}

int gpc_lc_delete(const gpc_open_provider *pv, const gpc_node_rec *nd, gpc_error *err)
{
    gpc_node_ref ref = gpc_lc_node_ref(nd);
    return pv->prov->delete_node(pv->ctx, &ref, err);
}

void gpc_lc_take_data(gpc_node_rec *nd, const gpc_node_status *ns)
{
    if (ns->data[0])
        gpc_lc_set_str(&nd->provider_data, ns->data);
}

int gpc_lc_ref_open(gpc_session *s, const gpc_cluster_rec *c, gpc_lc_ref *r, gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->data, sizeof(r->data), "%s", c->provider_data ? c->provider_data : "");
    snprintf(r->before, sizeof(r->before), "%s", r->data);
    int rc = gpc_lc_cluster_regions(s, c, &r->regions, &r->nr, err);
    r->ref.cluster = c->name;
    r->ref.cluster_uid = c->uid;
    r->ref.regions = (const char *const *)r->regions;
    r->ref.n_regions = r->nr;
    r->ref.data = r->data;
    return rc;
}

void gpc_lc_ref_close(gpc_session *s, gpc_cluster_rec *c, gpc_lc_ref *r)
{
    r->data[sizeof(r->data) - 1] = '\0';
    if (strcmp(r->data, r->before) != 0) {
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_cluster_set_provider_data(s->st, c->id, r->data, &e))
            gpc_debug(s->log, "could not record the provider data of %s: %s", c->name, e.msg);
        else
            gpc_lc_set_str(&c->provider_data, r->data);
    }
    gpc_lc_free_strv(r->regions, r->nr);
    r->regions = NULL;
    r->nr = 0;
}
