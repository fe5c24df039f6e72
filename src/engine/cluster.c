/* cluster.c - see cluster.h */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuctl/cluster.h"
#include "gpuctl/plan.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

volatile sig_atomic_t gpc_interrupted;

/* Seconds --wait gives the other nodes after rank 0 ends, or rank 0 after
 * a worker failed (docs/cli.md). */
#define WAIT_GRACE_S 30

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
    if (!rc && gpc_state_read_only(s->st))
        gpc_warn(s->log, "the disk holding %s is full: the state is open read-only, as last "
                 "recorded; nothing is refreshed or recorded", s->state_dir);
    return rc;
}

int gpc_session_provider(gpc_session *s, const char *name, gpc_error *err)
{
    if (s->prov && strcmp(s->prov->name, name) == 0)
        return 0;
    if (s->prov) {
        s->prov->close(s->pctx);
        s->prov = NULL;
        s->pctx = NULL;
    }
    const gpc_provider *p = gpc_provider_find(name);
    if (!p || (p->caps & GPC_CAP_PLAN_ONLY))
        return gpc_fail(err, GPC_ERR_PROVIDER,
                        "provider '%s' is not built into this gpuctl (available: %s)",
                        name, gpc_provider_names());
    gpc_provider_config cfg = {.state_dir = s->state_dir, .endpoint = s->cfg->endpoint,
                               .region = NULL, .profile = s->cfg->profile, .log = s->log};
    int rc = p->open(&cfg, &s->pctx, err);
    if (!rc)
        s->prov = p;
    return rc;
}

void gpc_session_close(gpc_session *s)
{
    if (s->prov)
        s->prov->close(s->pctx);
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

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !gpc_interrupted)
        ;
}

static int is_terminal(gpc_phase p)
{
    return p == GPC_PHASE_SUCCEEDED || p == GPC_PHASE_FAILED ||
           p == GPC_PHASE_PREEMPTED || p == GPC_PHASE_TERMINATED;
}

static void set_str(char **dst, const char *src)
{
    char *p = strdup(src ? src : "");
    if (p) {
        free(*dst);
        *dst = p;
    }
}

/* Derive the cluster's phase from its nodes: rank 0 decides the job.  A
 * cluster some of whose nodes are not made while its last launch attempt
 * failed (launch_failed: an apply that failed and could not close the
 * record, or left nodes it could not remove) is `failed` until an apply
 * makes them; one with none made and no failure yet is `pending`. */
static gpc_phase summarise(const gpc_cluster_rec *c, const gpc_node_rec *nodes, size_t n,
                           int launch_failed, int *exit_code)
{
    *exit_code = -1;
    if (c->destroyed_at)
        return GPC_PHASE_TERMINATED;
    const gpc_node_rec *head = NULL;
    int any_created = 0, missing = 0;
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].rank == 0)
            head = &nodes[i]; /* by rank then id: the newest row of rank 0 */
        if (nodes[i].provider_id[0])
            any_created = 1;
        /* the newest row of each rank: is that rank's node made? */
        if (i + 1 == n || nodes[i + 1].rank != nodes[i].rank)
            missing |= !nodes[i].provider_id[0];
    }
    if (!any_created || !head)
        return launch_failed ? GPC_PHASE_FAILED : GPC_PHASE_PENDING;
    *exit_code = head->exit_code;
    switch (head->phase) {
    case GPC_PHASE_SUCCEEDED:
    case GPC_PHASE_FAILED:
    case GPC_PHASE_PREEMPTED:
        return head->phase;
    case GPC_PHASE_RUNNING:
        return launch_failed && missing ? GPC_PHASE_FAILED : head->phase;
    case GPC_PHASE_TERMINATED:
        return GPC_PHASE_FAILED;
    default:
        /* an apply that failed and left part of the cluster: failed */
        return launch_failed && missing ? GPC_PHASE_FAILED : GPC_PHASE_BOOTING;
    }
}

static int event(gpc_session *s, int64_t cid, int rank, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int event(gpc_session *s, int64_t cid, int rank, const char *kind, const char *fmt, ...)
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

/* Apply one describe result to a node record; returns 1 if it changed. */
static int absorb(gpc_session *s, gpc_node_rec *n, const gpc_node_status *ns, int64_t now)
{
    int changed = 0;
    if (ns->private_ip[0] && strcmp(ns->private_ip, n->private_ip) != 0) {
        set_str(&n->private_ip, ns->private_ip);
        changed = 1;
    }
    if (ns->phase != n->phase || ns->exit_code != n->exit_code) {
        if (ns->phase != n->phase)
            event(s, n->cluster_id, (int)n->rank, "phase", "%s -> %s%s%s",
                  gpc_phase_name(n->phase), gpc_phase_name(ns->phase),
                  ns->detail[0] ? ": " : "", ns->detail);
        n->phase = ns->phase;
        n->exit_code = ns->exit_code;
        changed = 1;
    }
    if (ns->stopped && n->ended_at == 0) {
        n->ended_at = now;
        gpc_error e;
        gpc_error_clear(&e);
        gpc_ledger_close(s->st, n->id, now, &e);
        changed = 1;
    }
    return changed;
}

/* Reload *c from the state (another gpuctl may have changed it). */
static int reload(gpc_session *s, gpc_cluster_rec *c, gpc_error *err)
{
    gpc_cluster_rec fresh;
    int rc = gpc_cluster_get_by_id(s->st, c->id, &fresh, err);
    if (rc)
        return rc;
    gpc_cluster_rec_free(c);
    *c = fresh;
    return 0;
}

static int cluster_regions(gpc_session *s, const gpc_cluster_rec *c, char ***out, size_t *n,
                           gpc_error *err);
static void free_strv(char **v, size_t n);

/*
 * Ask the provider about the nodes that may still change: one
 * describe_nodes call for all of them when the provider has it, else one
 * describe_node each.  have[i] tells which ns[i] were filled.
 */
static int describe_live(gpc_session *s, const gpc_cluster_rec *c, const gpc_node_rec *nodes,
                         size_t n, gpc_node_status *ns, int *have, gpc_error *err)
{
    int rc = 0;
    if (!s->prov->describe_nodes) {
        for (size_t i = 0; !rc && i < n; i++) {
            const gpc_node_rec *nd = &nodes[i];
            if (!nd->provider_id[0] || (is_terminal(nd->phase) && nd->ended_at))
                continue;
            rc = s->prov->describe_node(s->pctx, nd->region, nd->provider_id, &ns[i], err);
            have[i] = rc == 0;
        }
        return rc;
    }
    const char **ids = calloc(n ? n : 1, sizeof(*ids));
    size_t *at = calloc(n ? n : 1, sizeof(*at));
    gpc_node_status *out = calloc(n ? n : 1, sizeof(*out));
    size_t k = 0;
    if (!ids || !at || !out)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (!nodes[i].provider_id[0] || (is_terminal(nodes[i].phase) && nodes[i].ended_at))
            continue;
        ids[k] = nodes[i].provider_id;
        at[k++] = i;
    }
    char **regions = NULL;
    size_t nr = 0;
    if (!rc && k)
        rc = cluster_regions(s, c, &regions, &nr, err);
    if (!rc && k) {
        gpc_cluster_ref ref = {.cluster = c->name, .cluster_uid = c->uid,
                               .regions = (const char *const *)regions, .n_regions = nr};
        rc = s->prov->describe_nodes(s->pctx, &ref, ids, k, out, err);
    }
    for (size_t j = 0; !rc && j < k; j++) {
        ns[at[j]] = out[j];
        have[at[j]] = 1;
    }
    free_strv(regions, nr);
    free(ids);
    free(at);
    free(out);
    return rc;
}

/* The cluster's nodes from the state and what the provider says of each
 * (see describe_live).  The caller frees *nodes (gpc_node_list_free), *ns
 * and *have, also on failure. */
static int describe_cluster(gpc_session *s, const gpc_cluster_rec *c, gpc_node_rec **nodes,
                            size_t *n, gpc_node_status **ns, int **have, gpc_error *err)
{
    int rc = gpc_node_list(s->st, c->id, 0, nodes, n, err);
    if (rc)
        return rc;
    *ns = calloc(*n ? *n : 1, sizeof(**ns));
    *have = calloc(*n ? *n : 1, sizeof(int));
    if (!*ns || !*have)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    return describe_live(s, c, *nodes, *n, *ns, *have, err);
}

/* The cluster's last launch attempt (the newest row) did not create. */
static int last_attempt_failed(gpc_session *s, const gpc_cluster_rec *c)
{
    gpc_attempt_rec *att = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    int failed = gpc_attempt_list(s->st, c->id, &att, &n, &e) == 0 && n > 0 &&
                 strcmp(att[n - 1].outcome, "created") != 0;
    gpc_attempt_list_free(att, n);
    return failed;
}

int gpc_cluster_refresh(gpc_session *s, gpc_cluster_rec *c, gpc_error *err)
{
    int rc = reload(s, c, err);
    if (rc || c->destroyed_at)
        return rc;
    rc = gpc_session_provider(s, c->provider, err);
    if (rc)
        return rc;
    /* Ask the provider first, outside any transaction (it may be slow). */
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_node_status *ns = NULL;
    int *have = NULL;
    rc = describe_cluster(s, c, &nodes, &n, &ns, &have, err);
    /* Then record it against the rows as they are now: a destroy that ran
     * meanwhile must not be undone by what we saw before it. */
    gpc_node_rec *cur = NULL;
    size_t ncur = 0;
    if (!rc)
        rc = gpc_state_begin(s->st, err);
    if (!rc) {
        rc = reload(s, c, err);
        if (!rc && !c->destroyed_at)
            rc = gpc_node_list(s->st, c->id, 0, &cur, &ncur, err);
        int64_t now = gpc_now();
        for (size_t j = 0; !rc && !c->destroyed_at && j < ncur; j++) {
            for (size_t i = 0; i < n; i++) {
                if (!have[i] || nodes[i].id != cur[j].id)
                    continue;
                if (strcmp(nodes[i].provider_id, cur[j].provider_id) == 0 &&
                    absorb(s, &cur[j], &ns[i], now))
                    rc = gpc_node_update(s->st, &cur[j], err);
                break;
            }
        }
        /* the summary reads every row: a head that is gone (terminated)
         * still decides the cluster's phase */
        gpc_node_rec *all = NULL;
        size_t nall = 0;
        if (!rc && !c->destroyed_at)
            rc = gpc_node_list(s->st, c->id, 1, &all, &nall, err);
        if (!rc && !c->destroyed_at) {
            int exit_code;
            gpc_phase ph = summarise(c, all, nall, last_attempt_failed(s, c), &exit_code);
            if (ph != c->phase || exit_code != c->exit_code) {
                if (ph != c->phase)
                    event(s, c->id, -1, "phase", "cluster %s -> %s", gpc_phase_name(c->phase),
                          gpc_phase_name(ph));
                c->phase = ph;
                c->exit_code = exit_code;
                c->updated_at = now;
                rc = gpc_cluster_update(s->st, c, err);
            }
        }
        gpc_node_list_free(all, nall);
        if (!rc)
            rc = gpc_state_commit(s->st, err);
        else
            gpc_state_rollback(s->st);
    }
    gpc_node_list_free(cur, ncur);
    gpc_node_list_free(nodes, n);
    free(ns);
    free(have);
    return rc;
}

/* ---- apply ------------------------------------------------------------ */

int gpc_spec_path(const gpc_spec *spec, const char *p, char **out, gpc_error *err)
{
    char buf[PATH_MAX];
    int n;
    if (p[0] == '/') {
        n = snprintf(buf, sizeof(buf), "%s", p);
    } else {
        /* the spec's directory exists even when `p` does not yet */
        char *base = realpath(spec->base_dir ? spec->base_dir : ".", NULL);
        n = snprintf(buf, sizeof(buf), "%s/%s", base ? base : ".",
                     p[0] == '.' && p[1] == '/' ? p + 2 : p);
        free(base);
    }
    if (n < 0 || (size_t)n >= sizeof(buf))
        return gpc_fail(err, GPC_ERR_SPEC, "%s: path too long: %s", spec->source, p);
    char *r = realpath(buf, NULL);
    *out = r ? r : strdup(buf);
    return *out ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

/* The absolute path of directory `field` (created when `create`); it must
 * exist. */
static int resolve_path(const gpc_spec *spec, const char *field, const char *p, int create,
                        char **out, gpc_error *err)
{
    char *path = NULL;
    int rc = gpc_spec_path(spec, p, &path, err);
    if (!rc && create)
        rc = gpc_mkdir_p(path, 0755, err);
    struct stat sb;
    if (!rc && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: %s: directory '%s' does not exist (resolved: %s)",
                      spec->source, field, p, path);
    free(path);
    return rc ? rc : gpc_spec_path(spec, p, out, err); /* canonical once it exists */
}

/*
 * Node name and client token for a rank in launch attempt `attempt`.  The
 * token is derived from the cluster and the attempt, so a create repeated
 * after a crash or a retry reuses it (no second node), and a new attempt
 * (another zone or offer) gets a new one.  At most 32 + 1 + 10 + 1 + 8 + 2
 * + 10 < 64 characters (EC2's ClientToken limit).
 */
static void node_ids(const gpc_cluster_rec *c, uint32_t rank, uint32_t attempt, char *name,
                     size_t nl, char *token, size_t tl)
{
    snprintf(name, nl, "%s-%u", c->name, rank);
    snprintf(token, tl, "%.32s-%u-%.8s-a%u", c->name, rank, c->uid, attempt);
}

/* The token of a batch launch whose first node is `rank`; node i of it
 * is "<token>/<i>" (provider.h, find_node). */
static void batch_token(const gpc_cluster_rec *c, uint32_t rank, uint32_t attempt,
                        char *token, size_t tl)
{
    snprintf(token, tl, "%.32s-w%u-%.8s-a%u", c->name, rank, c->uid, attempt);
}

/*
 * Fault injection for the end-to-end tests (docs/testing.md): with
 * GPUCTL_TEST_FAULT=<point>:<rank>[:<code>], gpuctl kills itself (SIGKILL)
 * or fails at that point for that rank, so that crash recovery and the exit
 * code contract are tested for real.  Points: kill-in-create (SIGKILL
 * while the create call is in flight: fault_kill_in_create),
 * kill-before-record (created at the provider, not yet recorded),
 * kill-after-record, fail-create, fail-delete.  <code> (a gpc_code name
 * such as auth or quota; default provider) is the error a failing point
 * reports, as a provider would.
 */
static int fault_code = GPC_ERR_PROVIDER;

static int fault(const char *point, uint32_t rank)
{
    const char *f = getenv("GPUCTL_TEST_FAULT");
    size_t pl = strlen(point);
    char *end;
    if (!f || strncmp(f, point, pl) != 0 || f[pl] != ':' ||
        strtoul(f + pl + 1, &end, 10) != rank)
        return 0;
    fault_code = GPC_ERR_PROVIDER;
    for (int c = 1; *end == ':' && c < GPC_CODE_COUNT; c++)
        if (strcmp(end + 1, gpc_code_name((gpc_code)c)) == 0)
            fault_code = c;
    if (strncmp(point, "kill", 4) == 0)
        raise(SIGKILL);
    return 1;
}

static void kill_now(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

/* kill-in-create:<rank>[:<ms>]: SIGKILL <ms> (default 300) after the
 * create of <rank> starts, while the provider's call is in flight. */
static void fault_kill_in_create(uint32_t rank)
{
    const char *f = getenv("GPUCTL_TEST_FAULT");
    const char *point = "kill-in-create:";
    char *end;
    if (!f || strncmp(f, point, strlen(point)) != 0 ||
        strtoul(f + strlen(point), &end, 10) != rank)
        return;
    long ms = *end == ':' ? strtol(end + 1, NULL, 10) : 300;
    struct itimerval it;
    memset(&it, 0, sizeof(it));
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    signal(SIGALRM, kill_now);
    setitimer(ITIMER_REAL, &it, NULL);
}

static int adopt_late(gpc_session *s, gpc_node_rec **nds, size_t n, gpc_error *err);

static int new_cluster(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                       const char *hash, gpc_cluster_rec *c, gpc_error *err)
{
    char uid[33];
    int rc = gpc_random_hex(uid, err);
    if (rc)
        return rc;
    char *json = NULL;
    cJSON *j = gpc_spec_to_json(spec);
    if (j) {
        json = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    if (!json)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    uint32_t port = spec->run.rdzv_port;
    if (!port && s->prov->pick_rdzv_port)
        rc = s->prov->pick_rdzv_port(s->pctx, &port, err);
    if (!port)
        port = 29400;
    char *abs_spec = NULL;
    if (strcmp(spec_path, "-") != 0)
        gpc_realpath(spec_path, &abs_spec, NULL);
    int64_t now = gpc_now();
    memset(c, 0, sizeof(*c));
    c->name = strdup(spec->name);
    c->uid = strdup(uid);
    c->provider = strdup(s->prov->name);
    c->spec_hash = strdup(hash);
    c->spec_json = json;
    c->spec_path = strdup(abs_spec ? abs_spec : "");
    free(abs_spec);
    c->nodes = spec->nodes;
    c->rdzv_port = port;
    c->phase = GPC_PHASE_PENDING;
    c->exit_code = -1;
    c->created_at = now;
    c->updated_at = now;
    if (!c->name || !c->uid || !c->provider || !c->spec_hash || !c->spec_path)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (rc)
        return rc;
    /* The cluster and every node, as pending, in one transaction: a gpuctl
     * killed after this knows what it meant to create. */
    rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_cluster_insert(s->st, c, err);
    for (uint32_t r = 0; !rc && r < spec->nodes; r++) {
        char name[128], token[72];
        node_ids(c, r, 1, name, sizeof(name), token, sizeof(token));
        gpc_node_rec nd;
        memset(&nd, 0, sizeof(nd));
        nd.cluster_id = c->id;
        nd.rank = r;
        nd.name = name;
        nd.provider = c->provider;
        nd.provider_id = "";
        nd.client_token = token;
        nd.region = "";
        nd.zone = "";
        nd.instance_type = "";
        nd.private_ip = "";
        nd.phase = GPC_PHASE_PENDING;
        nd.exit_code = -1;
        nd.created_at = now;
        rc = gpc_node_insert(s->st, &nd, err);
    }
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (!rc)
        event(s, c->id, -1, "apply", "cluster recorded: %u node(s) on %s, spec %.12s",
              c->nodes, c->provider, hash);
    return rc;
}

/* One launch attempt: where it goes and its number (attempts table). */
typedef struct launch {
    uint32_t attempt;
    const gpc_offer *head;    /* the offers with the attempt's zone filled in */
    const gpc_offer *worker;
} launch;

static void record_attempt(gpc_session *s, const gpc_cluster_rec *c, uint32_t rank,
                           const launch *l, const gpc_offer *of, const char *outcome,
                           const gpc_error *e)
{
    gpc_attempt_rec a = {
        .cluster_id = c->id, .rank = rank, .provider = s->prov->name, .region = of->region,
        .zone = of->zone, .instance_type = of->instance_type, .spot = of->spot,
        .attempt = l->attempt, .outcome = outcome,
        .error_code = e && e->code ? gpc_code_name(e->code) : "",
        .error_message = e && e->code ? e->msg : "",
    };
    gpc_error e2;
    gpc_error_clear(&e2);
    if (gpc_attempt_add(s->st, &a, &e2))
        gpc_debug(s->log, "could not record attempt: %s", e2.msg);
}

/* Write where node `nd` is about to be created (record before create). */
static int record_intent(gpc_session *s, gpc_node_rec *nd, const gpc_offer *of,
                         const char *token, gpc_error *err)
{
    set_str(&nd->region, of->region);
    set_str(&nd->zone, of->zone);
    set_str(&nd->instance_type, of->instance_type);
    set_str(&nd->client_token, token);
    nd->spot = of->spot;
    nd->price_hourly = of->price_hourly;
    return gpc_node_update(s->st, nd, err);
}

/*
 * A node whose create may have happened: its intent (client token and
 * where) is recorded, and no answer was: gpuctl was killed while the call
 * was in flight, or the call failed in a way that does not say whether the
 * provider acted on it.  Such a node is looked up by its token and, when
 * the provider says there is none, created again with the SAME token, so
 * that the provider's idempotency makes one node however often it is asked
 * (a new token could make a second one while the first call lands).
 */
static int outcome_unknown(const gpc_node_rec *nd)
{
    return !nd->provider_id[0] && nd->client_token[0] && nd->region[0];
}

/*
 * After a create of nds[0..n-1] failed with `code`: when nothing was sent
 * (!sent), or the answer says for sure that nothing was made (no capacity,
 * a quota: the codes the failover walk moves on from), the token is done
 * with and dropped, so that the next try gets a new one.  Any other
 * failure leaves the intent as it is (outcome unknown).
 */
static void settle_intent(gpc_session *s, gpc_node_rec **nds, size_t n, int code, int sent)
{
    if (sent && code != GPC_ERR_CAPACITY && code != GPC_ERR_QUOTA)
        return;
    for (size_t i = 0; i < n; i++) {
        gpc_error e;
        gpc_error_clear(&e);
        set_str(&nds[i]->client_token, "");
        if (gpc_node_update(s->st, nds[i], &e))
            gpc_debug(s->log, "could not record node %s: %s", nds[i]->name, e.msg);
    }
}

/* Record what the provider made for node `nd`; on failure take it back. */
static int record_created(gpc_session *s, gpc_cluster_rec *c, gpc_node_rec *nd,
                          const gpc_offer *of, const gpc_node_status *ns, gpc_error *err)
{
    int64_t now = gpc_now();
    set_str(&nd->provider_id, ns->provider_id);
    set_str(&nd->private_ip, ns->private_ip);
    if (ns->private_ip[0] == '\0')
        set_str(&nd->private_ip, "");
    nd->phase = ns->phase == GPC_PHASE_PENDING ? GPC_PHASE_BOOTING : ns->phase;
    nd->exit_code = ns->exit_code;
    nd->started_at = now;
    nd->ended_at = 0;
    int rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_node_update(s->st, nd, err);
    if (!rc)
        rc = gpc_ledger_open(s->st, c->id, nd->id, s->prov->name, of->instance_type,
                             of->price_hourly, now, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (rc) {
        /* Created but not recorded: take it back now.  If even that fails,
         * destroy finds it by its client token (find_node). */
        gpc_error e;
        gpc_error_clear(&e);
        if (s->prov->delete_node(s->pctx, nd->region, ns->provider_id, &e) == 0)
            set_str(&nd->provider_id, "");
        return rc;
    }
    event(s, c->id, (int)nd->rank, "create", "created %s as %s in %s%s%s", nd->name,
          nd->provider_id, of->region, of->zone[0] ? "/" : "", of->zone);
    return 0;
}

/* Render the user-data of node `rank` (with_launch_index: of a batch that
 * starts at `rank`).  Checks it fits the provider's transport. */
static int render_for(gpc_session *s, const gpc_spec *spec, const gpc_cluster_rec *c,
                      uint32_t rank, int with_launch_index, const gpc_offer *of,
                      const char *head_ip, const char *workdir, const char *ckpt, char **ud,
                      gpc_error *err)
{
    const gpc_userdata_rules *rules = s->prov->userdata;
    gpc_node_ctx ctx = {
        .cluster = c->name, .cluster_id = c->uid, .rank = rank, .nnodes = c->nodes,
        .head_ip = head_ip, .rdzv_port = c->rdzv_port, .workdir = workdir,
        .checkpoint_dir = ckpt,
        /* the offer's fabric, unless the spec asks for none (then the
         * provider launches the node without it, too) */
        .fabric = of->fabric[0] && spec->resources.interconnect != GPC_IC_NONE ? of->fabric
                                                                               : NULL,
        .rank_from_launch_index = with_launch_index, .instance_type = of->instance_type,
    };
    int rc = gpc_render_userdata(spec, &ctx, rules, ud, err);
    if (!rc && rules && rules->max_raw) {
        char *enc = NULL;
        size_t enc_len;
        rc = gpc_userdata_encode(*ud, strlen(*ud), rules, &enc, &enc_len, NULL, err);
        free(enc);
    }
    return rc;
}

static gpc_node_request node_request(const gpc_spec *spec, const gpc_cluster_rec *c,
                                     const gpc_node_rec *nd, const gpc_offer *of,
                                     const char *ud, uint32_t attempt)
{
    gpc_node_request req = {
        .cluster = c->name, .cluster_uid = c->uid, .rank = nd->rank, .nnodes = c->nodes,
        .name = nd->name, .client_token = nd->client_token, .offer = of,
        .image = spec->image, .userdata = ud, .userdata_len = ud ? strlen(ud) : 0,
        .labels = spec->labels, .n_labels = spec->n_labels, .spec = spec,
        .attempt = attempt,
    };
    return req;
}

/* Render and create node `nd`; record it.  head_ip NULL for rank 0.  A
 * node whose create has an unknown outcome goes again with its own token
 * (and `offer` is the one it was made with: recorded_offer). */
static int create_one(gpc_session *s, const gpc_spec *spec, gpc_cluster_rec *c,
                      gpc_node_rec *nd, const launch *l, const gpc_offer *offer,
                      const char *head_ip, const char *workdir, const char *ckpt,
                      gpc_error *err)
{
    char name[128], token[72];
    node_ids(c, nd->rank, l->attempt, name, sizeof(name), token, sizeof(token));
    char *ud = NULL;
    int resumed = outcome_unknown(nd);
    int rc = render_for(s, spec, c, nd->rank, 0, offer, head_ip, workdir, ckpt, &ud, err);
    if (!rc && !resumed)
        rc = record_intent(s, nd, offer, token, err);
    int sent = 0;
    gpc_node_status ns;
    memset(&ns, 0, sizeof(ns));
    if (!rc) {
        gpc_node_request req = node_request(spec, c, nd, offer, ud, l->attempt);
        gpc_debug(s->log, "creating node %s (token %s)", nd->name, nd->client_token);
        if (fault("fail-create", nd->rank)) {
            rc = gpc_fail(err, (gpc_code)fault_code, "%s: injected %s failure creating %s",
                          s->prov->name, gpc_code_name((gpc_code)fault_code), nd->name);
        } else {
            sent = 1;
            fault_kill_in_create(nd->rank);
            rc = s->prov->create_node(s->pctx, &req, &ns, err);
        }
        fault("kill-before-record", nd->rank);
    }
    free(ud);
    if (rc && resumed && sent && adopt_late(s, &nd, 1, err) == 0) {
        record_attempt(s, c, nd->rank, l, offer, "created", NULL);
        return 0;
    }
    record_attempt(s, c, nd->rank, l, offer, rc ? "error" : "created", rc ? err : NULL);
    if (rc) {
        event(s, c->id, (int)nd->rank, "error", "create failed: %s", err->msg);
        settle_intent(s, &nd, 1, rc, sent || resumed);
        return rc;
    }
    rc = record_created(s, c, nd, offer, &ns, err);
    if (!rc)
        fault("kill-after-record", nd->rank);
    return rc;
}

/*
 * Create nodes nds[0..n-1] (consecutive ranks) in one provider call
 * (create_nodes): one user-data, each node's rank from its launch index.
 * made[i] is set for each node recorded.
 */
static int create_batch(gpc_session *s, const gpc_spec *spec, gpc_cluster_rec *c,
                        gpc_node_rec **nds, size_t n, const launch *l, const gpc_offer *of,
                        const char *head_ip, const char *workdir, const char *ckpt, int *made,
                        gpc_error *err)
{
    char token[72];
    char *ud = NULL;
    int resumed = outcome_unknown(nds[0]);
    int rc = render_for(s, spec, c, nds[0]->rank, 1, of, head_ip, workdir, ckpt, &ud, err);
    if (!rc && resumed) {
        /* the same batch again, with its own token (launch_attempt) */
        size_t tl = strcspn(nds[0]->client_token, "/");
        snprintf(token, sizeof(token), "%.*s", (int)tl, nds[0]->client_token);
    } else if (!rc) {
        batch_token(c, nds[0]->rank, l->attempt, token, sizeof(token));
        rc = gpc_state_begin(s->st, err);
        for (size_t i = 0; !rc && i < n; i++) {
            char sub[96];
            snprintf(sub, sizeof(sub), "%s/%zu", token, i);
            rc = record_intent(s, nds[i], of, sub, err);
        }
        if (!rc)
            rc = gpc_state_commit(s->st, err);
        else
            gpc_state_rollback(s->st);
    }
    int sent = 0;
    gpc_node_request *reqs = rc ? NULL : calloc(n, sizeof(*reqs));
    gpc_node_status *ns = rc ? NULL : calloc(n, sizeof(*ns));
    if (!rc && (!reqs || !ns))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        reqs[i] = node_request(spec, c, nds[i], of, ud, l->attempt);
        reqs[i].client_token = token;
    }
    if (!rc) {
        gpc_debug(s->log, "creating nodes %s..%s in one call (token %s)", nds[0]->name,
                  nds[n - 1]->name, token);
        for (size_t i = 0; !rc && i < n; i++)
            if (fault("fail-create", nds[i]->rank))
                rc = gpc_fail(err, (gpc_code)fault_code, "%s: injected %s failure creating %s",
                              s->prov->name, gpc_code_name((gpc_code)fault_code),
                              nds[i]->name);
        if (!rc) {
            sent = 1;
            for (size_t i = 0; i < n; i++)
                fault_kill_in_create(nds[i]->rank);
            rc = s->prov->create_nodes(s->pctx, reqs, n, ns, err);
        }
        for (size_t i = 0; i < n; i++)
            fault("kill-before-record", nds[i]->rank);
    }
    if (rc && resumed && sent && adopt_late(s, nds, n, err) == 0) {
        for (size_t i = 0; i < n; i++) {
            made[i] = 1;
            record_attempt(s, c, nds[i]->rank, l, of, "created", NULL);
        }
        free(ud);
        free(reqs);
        free(ns);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        record_attempt(s, c, nds[i]->rank, l, of, rc ? "error" : "created", rc ? err : NULL);
    if (rc) {
        event(s, c->id, (int)nds[0]->rank, "error", "create of %zu node(s) failed: %s", n,
              err->msg);
        settle_intent(s, nds, n, rc, sent || resumed);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        rc = record_created(s, c, nds[i], of, &ns[i], err);
        if (!rc) {
            made[i] = 1;
            fault("kill-after-record", nds[i]->rank);
        }
    }
    /* a record that failed midway: the nodes not yet recorded go back */
    for (size_t i = 0; rc && ns && i < n; i++) {
        if (made[i] || !ns[i].provider_id[0])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        s->prov->delete_node(s->pctx, nds[i]->region, ns[i].provider_id, &e);
    }
    free(ud);
    free(reqs);
    free(ns);
    return rc;
}

/*
 * A node whose create has an unknown outcome (outcome_unknown) may exist:
 * ask the provider by its client token and record what it says.  *found
 * is 1 when the provider has it, 0 when the provider says it has none.
 * A lookup that fails is not "none": its error is returned and nothing is
 * recorded, so that no caller makes the node again on a guess.
 */
static int adopt(gpc_session *s, gpc_node_rec *nd, int *found, gpc_error *err)
{
    *found = 0;
    if (!outcome_unknown(nd) || !s->prov->find_node)
        return 0;
    gpc_node_status ns;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = s->prov->find_node(s->pctx, nd->region, nd->client_token, &ns, &e);
    if (rc == GPC_ERR_NOT_FOUND)
        return 0;
    if (rc)
        return gpc_fail(err, e.code, "could not look up node %s (client token %s), which an "
                        "interrupted apply may have created: %s", nd->name, nd->client_token,
                        e.msg);
    if (ns.no_capacity) {
        /* made and taken back at once: the create is settled, nothing
         * lives; the node is made anew (a new token) */
        gpc_node_rec *one = nd;
        settle_intent(s, &one, 1, GPC_ERR_CAPACITY, 1);
        return 0;
    }
    set_str(&nd->provider_id, ns.provider_id);
    set_str(&nd->private_ip, ns.private_ip);
    nd->phase = ns.phase == GPC_PHASE_PENDING ? GPC_PHASE_BOOTING : ns.phase;
    nd->exit_code = ns.exit_code;
    int64_t now = gpc_now();
    if (!nd->started_at)
        nd->started_at = now;
    if (ns.stopped && !nd->ended_at)
        nd->ended_at = now;
    /* recorded as a create's answer would have been: the node and, while
     * it lives, its ledger entry (it bills from now on, as far as gpuctl
     * can tell) */
    rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_node_update(s->st, nd, err);
    if (!rc && !nd->ended_at)
        rc = gpc_ledger_open(s->st, nd->cluster_id, nd->id, s->prov->name, nd->instance_type,
                             nd->price_hourly, nd->started_at, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (rc)
        return rc;
    event(s, nd->cluster_id, (int)nd->rank, "adopt",
          "found %s by its client token (created, never recorded)", nd->provider_id);
    *found = 1;
    return 0;
}

/*
 * A create made again with its own token failed (EC2: the first call
 * landed after all, with other parameters: IdempotentParameterMismatch):
 * when the provider now has every node of it by token, they are the
 * nodes, recorded, and the create's error is dropped (0).  Else the
 * error stands (non-zero, err untouched).
 */
static int adopt_late(gpc_session *s, gpc_node_rec **nds, size_t n, gpc_error *err)
{
    int all = 1;
    for (size_t i = 0; all && i < n; i++) {
        gpc_error e;
        gpc_error_clear(&e);
        int found = 0;
        all = adopt(s, nds[i], &found, &e) == 0 && (found || nds[i]->provider_id[0]);
    }
    if (!all)
        return GPC_ERR_NOT_FOUND;
    gpc_error_clear(err);
    return 0;
}

/*
 * Undo the nodes this apply created (made[i]; a failed create leaves
 * nothing behind, and nodes of a killed gpuctl were adopted before the
 * launch).  A node removed goes back to pending, its
 * ledger entry closed, ready for the next attempt; one that cannot be
 * removed stays recorded.  Returns how many are left.
 */
static int rollback_created(gpc_session *s, gpc_cluster_rec *c, gpc_node_rec *nodes,
                            size_t n, const int *made)
{
    int64_t now = gpc_now();
    int left = 0;
    for (size_t i = 0; i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (nd->phase == GPC_PHASE_TERMINATED || !made[i])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        if (s->prov->delete_node(s->pctx, nd->region, nd->provider_id, &e) == 0) {
            gpc_ledger_close(s->st, nd->id, now, &e);
            event(s, c->id, (int)nd->rank, "delete", "removed %s after a failed launch",
                  nd->provider_id);
            set_str(&nd->provider_id, "");
            set_str(&nd->client_token, ""); /* its create is settled: gone */
            set_str(&nd->private_ip, "");
            nd->phase = GPC_PHASE_PENDING;
            nd->exit_code = -1;
            nd->started_at = 0;
            gpc_node_update(s->st, nd, &e);
        } else {
            left++;
            event(s, c->id, (int)nd->rank, "error",
                  "could not remove after a failed apply: %s", e.msg);
            gpc_info(s->log, "gpuctl: node %s could not be removed (%s); it stays recorded: "
                     "run 'gpuctl destroy %s'", nd->name, e.msg, c->name);
        }
    }
    return left;
}

/*
 * Workers whose head is gone (a clean-up that removed the head but not
 * them) wait for it at its old address, which their user-data carries,
 * and can never join a new one: when the head is to be made anew, they
 * are removed first and made again with the new head's address.  An error
 * when one cannot be removed (it stays recorded; destroy takes it).
 */
static int replace_orphans(gpc_session *s, gpc_cluster_rec *c, gpc_node_rec *nodes, size_t n,
                           gpc_error *err)
{
    if (!n || nodes[0].rank != 0 || nodes[0].provider_id[0] || outcome_unknown(&nodes[0]))
        return 0;
    int *orphan = calloc(n, sizeof(int));
    if (!orphan)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int k = 0;
    for (size_t i = 1; i < n; i++)
        k += orphan[i] = nodes[i].provider_id[0] != '\0';
    int left = 0;
    if (k) {
        gpc_info(s->log, "gpuctl: the head of cluster '%s' is gone and %d worker(s) wait for it "
                 "at its old address: replacing them", c->name, k);
        left = rollback_created(s, c, nodes, n, orphan);
    }
    free(orphan);
    return left ? gpc_fail(err, GPC_ERR_PARTIAL, "cluster '%s': %d worker(s) of a head that is "
                           "gone could not be removed, so no new head is made; run gpuctl "
                           "destroy %s", c->name, left, c->name)
                : 0;
}

/* A new cluster that failed with nothing left alive closes (the next
 * offer of the failover walk makes a new one); nodes from earlier applies
 * keep it alive, and its pending nodes wait for the next apply. */
static void close_if_empty(gpc_session *s, gpc_cluster_rec *c, gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i].phase != GPC_PHASE_TERMINATED && nodes[i].provider_id[0])
            return;
    int64_t now = gpc_now();
    gpc_error e;
    gpc_error_clear(&e);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].phase == GPC_PHASE_TERMINATED)
            continue;
        nodes[i].phase = GPC_PHASE_TERMINATED;
        nodes[i].ended_at = now;
        gpc_node_update(s->st, &nodes[i], &e);
    }
    c->destroyed_at = now;
    c->phase = GPC_PHASE_FAILED;
    gpc_cluster_update(s->st, c, &e);
}

/* Every region the cluster launched in or tried (nodes and attempts).
 * Caller frees with free_strv. */
static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static int cluster_regions(gpc_session *s, const gpc_cluster_rec *c, char ***out, size_t *n,
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
        free_strv(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* Ask the provider to remove what else it made for the cluster. */
static int cleanup_resources(gpc_session *s, gpc_cluster_rec *c, gpc_error *err)
{
    if (!s->prov->cleanup_cluster)
        return 0;
    char **regions = NULL;
    size_t nr = 0;
    int rc = cluster_regions(s, c, &regions, &nr, err);
    if (!rc) {
        gpc_cluster_ref ref = {.cluster = c->name, .cluster_uid = c->uid,
                               .regions = (const char *const *)regions, .n_regions = nr};
        rc = s->prov->cleanup_cluster(s->pctx, &ref, err);
    }
    free_strv(regions, nr);
    if (!rc)
        event(s, c->id, -1, "cleanup", "provider resources removed");
    return rc;
}

/* The next launch attempt number of cluster c. */
static uint32_t next_attempt(gpc_session *s, const gpc_cluster_rec *c)
{
    gpc_attempt_rec *att = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    uint32_t max = 0;
    if (gpc_attempt_list(s->st, c->id, &att, &n, &e) == 0)
        for (size_t i = 0; i < n; i++)
            if (att[i].attempt > max)
                max = att[i].attempt;
    gpc_attempt_list_free(att, n);
    return max + 1;
}

/* Seconds a pool that met no capacity is skipped for
 * ($GPUCTL_CAPACITY_SKIP_S, default 600; 0 = never skip). */
static long capacity_skip_s(void)
{
    const char *v = getenv("GPUCTL_CAPACITY_SKIP_S");
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && *end == '\0' && x >= 0 ? x : 600;
}

/* The batch token of a node created in a batch ("<batch>/<index>"): 1 and
 * *index when it is one, 0 for a node created alone. */
static int batch_member(const gpc_node_rec *nd, char *batch, size_t size, long *index)
{
    const char *slash = strchr(nd->client_token, '/');
    if (!slash)
        return 0;
    snprintf(batch, size, "%.*s", (int)(slash - nd->client_token), nd->client_token);
    *index = strtol(slash + 1, NULL, 10);
    return 1;
}

/* The launch attempt a token of node_ids / batch_token names ("...-a<N>",
 * maybe followed by "/<index>"), or `dflt` when it names none. */
static uint32_t token_attempt(const char *token, uint32_t dflt)
{
    size_t end = strcspn(token, "/");
    size_t i = end;
    while (i > 0 && token[i - 1] >= '0' && token[i - 1] <= '9')
        i--;
    if (i == end || i < 2 || token[i - 1] != 'a' || token[i - 2] != '-')
        return dflt;
    unsigned long v = strtoul(token + i, NULL, 10);
    return v > 0 && v <= UINT32_MAX ? (uint32_t)v : dflt;
}

/* The offer a node whose create has an unknown outcome was made with: the
 * plan's `base` with the node's recorded region, zone, instance type,
 * market and price (the same request again, for the same token). */
static gpc_offer recorded_offer(const gpc_offer *base, const gpc_node_rec *nd)
{
    gpc_offer of = *base;
    snprintf(of.region, sizeof(of.region), "%s", nd->region);
    snprintf(of.zone, sizeof(of.zone), "%s", nd->zone);
    snprintf(of.instance_type, sizeof(of.instance_type), "%s", nd->instance_type);
    of.spot = nd->spot;
    of.price_hourly = nd->price_hourly;
    return of;
}

static void note_created(gpc_session *s, const gpc_node_rec *nd, int *made,
                         gpc_apply_result *res)
{
    *made = 1;
    res->created++;
    gpc_info(s->log, "created node %s (%s)", nd->name, nd->provider_id);
}

/*
 * One launch attempt: the head (when missing), then every missing worker
 * (in one create_nodes call per run of consecutive ranks when the provider
 * has it), all in l's zone.  A create whose outcome is unknown is made
 * again as it was: the same token, offer and batch (whose nodes then come
 * back as one run), under its own attempt number.  made[i] marks the
 * nodes this call recorded.
 */
static int launch_attempt(gpc_session *s, const gpc_spec *spec, gpc_cluster_rec *c,
                          gpc_node_rec *nodes, size_t n, const launch *l, const char *workdir,
                          const char *ckpt, int *made, gpc_apply_result *res, gpc_error *err)
{
    int rc = 0;
    gpc_node_rec *head = n && nodes[0].rank == 0 ? &nodes[0] : NULL;
    if (!head)
        return gpc_fail(err, GPC_ERR_INTERNAL, "head node is missing");
    if (!head->provider_id[0]) {
        if (gpc_interrupted)
            return gpc_fail(err, GPC_ERR_INTERRUPTED, "interrupted");
        launch hl = *l;
        gpc_offer hof = *l->head;
        if (outcome_unknown(head)) {
            hof = recorded_offer(l->head, head);
            hl.attempt = token_attempt(head->client_token, l->attempt);
        }
        rc = create_one(s, spec, c, head, &hl, &hof, NULL, workdir, ckpt, err);
        if (rc)
            return rc;
        note_created(s, head, &made[0], res);
    }
    if (!head->private_ip[0]) {
        gpc_node_status hs;
        rc = s->prov->describe_node(s->pctx, head->region, head->provider_id, &hs, err);
        if (!rc)
            set_str(&head->private_ip, hs.private_ip);
        if (!rc && !head->private_ip[0])
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "head node %s has no private IP yet",
                          head->name);
        if (rc)
            return rc;
    }
    gpc_node_rec **run = calloc(n ? n : 1, sizeof(*run));
    if (!run)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 1; !rc && i < n;) {
        if (nodes[i].provider_id[0]) {
            i++;
            continue;
        }
        if (gpc_interrupted) {
            rc = gpc_fail(err, GPC_ERR_INTERRUPTED, "interrupted");
            break;
        }
        size_t k = 0, start = i;
        launch rl = *l;
        gpc_offer of = *l->worker;
        char batch[72] = "";
        int in_batch = 0;
        if (outcome_unknown(&nodes[i])) {
            /* a create to make again: the node, or its whole batch */
            long first = 0, idx;
            char b[72];
            in_batch = batch_member(&nodes[i], batch, sizeof(batch), &first);
            run[k++] = &nodes[i++];
            while (in_batch && i < n && outcome_unknown(&nodes[i]) &&
                   batch_member(&nodes[i], b, sizeof(b), &idx) && strcmp(b, batch) == 0 &&
                   idx == first + (long)k)
                run[k++] = &nodes[i++];
            of = recorded_offer(l->worker, run[0]);
            rl.attempt = token_attempt(run[0]->client_token, l->attempt);
        } else {
            /* a run of consecutive missing ranks, new creates all */
            while (i < n && !nodes[i].provider_id[0] && !outcome_unknown(&nodes[i]) &&
                   (k == 0 || nodes[i].rank == run[k - 1]->rank + 1))
                run[k++] = &nodes[i++];
            in_batch = k > 1;
        }
        if (in_batch && s->prov->create_nodes) {
            int *m = made + start;
            rc = create_batch(s, spec, c, run, k, &rl, &of, head->private_ip, workdir, ckpt,
                              m, err);
            for (size_t j = 0; j < k; j++)
                if (m[j]) {
                    m[j] = 0;
                    note_created(s, run[j], &m[j], res);
                }
            continue;
        }
        for (size_t j = 0; !rc && j < k; j++) {
            rc = create_one(s, spec, c, run[j], &rl, &of, head->private_ip, workdir, ckpt,
                            err);
            if (!rc)
                note_created(s, run[j], &made[start + j], res);
        }
    }
    free(run);
    return rc;
}

/* Seconds to wait for a cloud's new nodes to run ($GPUCTL_BOOT_TIMEOUT_S,
 * default 900). */
static long boot_timeout_s(void)
{
    const char *v = getenv("GPUCTL_BOOT_TIMEOUT_S");
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : 0;
    return v && *v && *end == '\0' && x > 0 ? x : 900;
}

/*
 * After a launch on a provider that reports machine states
 * (describe_nodes): poll, one call per round for the whole cluster, until
 * no node is still starting; print progress.  A node the provider took
 * back for want of capacity makes the attempt fail with GPC_ERR_CAPACITY
 * (the caller moves on); one that died otherwise, GPC_ERR_PROVIDER.
 */
static int wait_booted(gpc_session *s, gpc_cluster_rec *c, double poll_s, gpc_error *err)
{
    if (!s->prov->describe_nodes)
        return 0;
    long limit = boot_timeout_s();
    int64_t start = gpc_now();
    int last_up = -1;
    for (;;) {
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        gpc_node_status *ns = NULL;
        int *have = NULL;
        int rc = describe_cluster(s, c, &nodes, &n, &ns, &have, err);
        int up = 0, starting = 0;
        for (size_t i = 0; !rc && i < n; i++) {
            if (!have[i])
                continue;
            if (ns[i].no_capacity || is_terminal(ns[i].phase))
                rc = gpc_fail(err, ns[i].no_capacity ? GPC_ERR_CAPACITY : GPC_ERR_PROVIDER,
                              "%s: node %s (%s) ended while starting: %s", s->prov->name,
                              nodes[i].name, nodes[i].provider_id,
                              ns[i].detail[0] ? ns[i].detail : gpc_phase_name(ns[i].phase));
            else if (ns[i].phase == GPC_PHASE_PENDING || ns[i].phase == GPC_PHASE_BOOTING)
                starting++;
            else
                up++;
        }
        gpc_node_list_free(nodes, n);
        free(ns);
        free(have);
        if (rc)
            return rc;
        if (up != last_up)
            gpc_info(s->log, "[%4lds] %s: %d of %d node(s) running", (long)(gpc_now() - start),
                     c->name, up, up + starting);
        last_up = up;
        if (!starting)
            return 0; /* the caller refreshes the state */
        if (gpc_interrupted)
            return gpc_fail(err, GPC_ERR_INTERRUPTED, "interrupted while the nodes started");
        if (gpc_now() - start >= limit)
            return gpc_fail(err, GPC_ERR_TIMEOUT, "%s: %d node(s) still starting after %lds "
                            "(GPUCTL_BOOT_TIMEOUT_S)", c->name, starting, limit);
        sleep_s(poll_s);
    }
}

/* After wait_booted: the provider finishes the running nodes
 * (nodes_running; EC2: their Elastic IPs).  Its failure fails the launch. */
static int finish_nodes(gpc_session *s, gpc_cluster_rec *c, gpc_error *err)
{
    if (!s->prov->nodes_running)
        return 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0, k = 0, nr = 0;
    char **regions = NULL;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    const char **ids = rc ? NULL : calloc(n ? n : 1, sizeof(*ids));
    if (!rc && !ids)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].provider_id[0] && !(is_terminal(nodes[i].phase) && nodes[i].ended_at))
            ids[k++] = nodes[i].provider_id;
    if (!rc && k)
        rc = cluster_regions(s, c, &regions, &nr, err);
    if (!rc && k) {
        gpc_cluster_ref ref = {.cluster = c->name, .cluster_uid = c->uid,
                               .regions = (const char *const *)regions, .n_regions = nr};
        rc = s->prov->nodes_running(s->pctx, &ref, ids, k, err);
    }
    free_strv(regions, nr);
    free(ids);
    gpc_node_list_free(nodes, n);
    return rc;
}

/* The zone the cluster's live nodes are in, or its creates of unknown
 * outcome went to ("" when none or unknown). */
static const char *live_zone(const gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((nodes[i].provider_id[0] || outcome_unknown(&nodes[i])) && nodes[i].zone[0])
            return nodes[i].zone;
    return "";
}

/* Some node's create has an unknown outcome. */
static int any_unknown(const gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (outcome_unknown(&nodes[i]))
            return 1;
    return 0;
}

/*
 * Create the nodes of `c` that are still missing on `chosen`: head first
 * (workers need its IP).  With a provider that lists zones, each zone in
 * turn: a zone that meets no capacity is remembered (and skipped for a
 * while by later applies) and the next is tried, after removing what the
 * attempt created; a quota error leaves the region.  On failure what this
 * call created is removed.  Returns GPC_ERR_CAPACITY / GPC_ERR_QUOTA when
 * the caller may go on to its next offer.
 */
static int create_missing(gpc_session *s, const gpc_spec *spec, gpc_cluster_rec *c,
                          const gpc_plan_offer *chosen, const char *workdir,
                          const char *ckpt, double poll_s, gpc_apply_result *res,
                          gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    if (rc)
        return rc;
    /* A gpuctl killed between a create and its record left nodes that the
     * provider knows by their client tokens: take them in first.  Those
     * the provider does not know are made again with the same token
     * (launch_attempt); a lookup that fails stops here, before anything
     * new is made. */
    for (size_t i = 0; !rc && i < n; i++) {
        int found = 0;
        rc = adopt(s, &nodes[i], &found, err);
        if (!rc && found) {
            res->adopted++;
            gpc_info(s->log, "found node %s (%s) made by an interrupted apply", nodes[i].name,
                     nodes[i].provider_id);
        }
    }
    if (!rc)
        rc = replace_orphans(s, c, nodes, n, err);
    if (rc) {
        gpc_node_list_free(nodes, n);
        return rc;
    }
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += !nodes[i].provider_id[0];
    int alive_before = missing < n;
    if (!missing) {
        gpc_node_list_free(nodes, n);
        /* what an interrupted apply launched must still come up, and be
         * finished (also when it was recorded: killed in nodes_running) */
        rc = res->adopted ? wait_booted(s, c, poll_s, err) : 0;
        return rc ? rc : finish_nodes(s, c, err);
    }
    /* Where to try: the live nodes' zone, else the provider's zones. */
    char (*zones)[48] = NULL;
    size_t nz = 0;
    const char *pinned = live_zone(nodes, n);
    if (pinned[0] || !s->prov->list_zones) {
        zones = calloc(1, sizeof(*zones));
        if (!zones)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            snprintf(zones[0], sizeof(zones[0]), "%s", pinned[0] ? pinned : chosen->worker.zone);
        nz = 1;
    } else {
        rc = s->prov->list_zones(s->pctx, &chosen->worker, &zones, &nz, err);
        /* the spec's zones, when it names any */
        size_t kept = 0;
        for (size_t z = 0; !rc && z < nz; z++) {
            int ok = spec->n_zones == 0;
            for (size_t j = 0; !ok && j < spec->n_zones; j++)
                ok = strcmp(spec->zones[j], zones[z]) == 0;
            if (ok)
                memmove(zones[kept++], zones[z], sizeof(zones[z]));
        }
        if (!rc && nz > 0 && kept == 0)
            rc = gpc_fail(err, GPC_ERR_CAPACITY, "%s: %s is offered in %zu zone(s) of %s (%s%s), "
                          "none of them among the spec's zones", s->prov->name,
                          chosen->worker.instance_type, nz, chosen->worker.region, zones[0],
                          nz > 1 ? ", ..." : "");
        nz = rc ? nz : kept;
        if (!rc && nz == 0)
            rc = gpc_fail(err, GPC_ERR_CAPACITY, "%s: %s is not offered in any zone of %s",
                          s->prov->name, chosen->worker.instance_type, chosen->worker.region);
    }
    int *made = calloc(n, sizeof(int));
    if (!rc && !made)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    long skip_s = capacity_skip_s();
    int64_t now = gpc_now();
    gpc_buf tried;
    gpc_buf_init(&tried, GPC_BUF_LINE_MAX);
    int last = 0, left = 0;
    gpc_error last_err;
    gpc_error_clear(&last_err);
    for (size_t z = 0; !rc && z < nz; z++) {
        gpc_offer head = chosen->head, worker = chosen->worker;
        snprintf(head.zone, sizeof(head.zone), "%s", zones[z]);
        snprintf(worker.zone, sizeof(worker.zone), "%s", zones[z]);
        launch l = {.attempt = next_attempt(s, c), .head = &head, .worker = &worker};
        int64_t miss = 0;
        gpc_error e;
        gpc_error_clear(&e);
        if (skip_s > 0 && zones[z][0] && !pinned[0] &&
            gpc_capacity_miss_last(s->st, s->prov->name, worker.region, worker.zone,
                                   worker.instance_type, worker.spot, &miss, &e) == 0 &&
            miss && now - miss < skip_s) {
            gpc_fail(&e, GPC_ERR_CAPACITY, "skipped: no capacity here %lds ago (skipped for "
                     "%lds, GPUCTL_CAPACITY_SKIP_S)", (long)(now - miss), skip_s);
            record_attempt(s, c, 0, &l, &worker, "skipped", &e);
            gpc_buf_addf(&tried, NULL, "%s%s (skipped)", tried.len ? ", " : "", zones[z]);
            last = GPC_ERR_CAPACITY;
            gpc_fail_replace(&last_err, GPC_ERR_CAPACITY, "%s", e.msg);
            continue;
        }
        memset(made, 0, n * sizeof(int));
        int created_before = res->created;
        last = launch_attempt(s, spec, c, nodes, n, &l, workdir, ckpt, made, res, &e);
        if (!last) {
            last = wait_booted(s, c, poll_s, &e);
            if (!last)
                last = finish_nodes(s, c, &e);
            /* the nodes launched, then did not come up: the attempt failed */
            for (size_t i = 0; last && i < n; i++)
                if (made[i])
                    record_attempt(s, c, nodes[i].rank, &l,
                                   nodes[i].rank == 0 ? &head : &worker, "error", &e);
        }
        if (!last)
            break;
        if (last != GPC_ERR_INTERRUPTED) {
            /* the nodes as the state has them now (wait_booted refreshed) */
            gpc_node_rec *fresh = NULL;
            size_t nf = 0;
            gpc_error le;
            gpc_error_clear(&le);
            if (gpc_node_list(s->st, c->id, 0, &fresh, &nf, &le) == 0 && nf == n) {
                gpc_node_list_free(nodes, n);
                nodes = fresh;
            } else {
                gpc_node_list_free(fresh, nf);
            }
        }
        gpc_fail_replace(&last_err, e.code, "%s", e.msg);
        gpc_buf_addf(&tried, NULL, "%s%s", tried.len ? ", " : "", zones[z][0] ? zones[z] : "-");
        /* interrupted: the safe point; what follows cleans up, and its
         * calls go through unless interrupted again */
        if (gpc_interrupted)
            gpc_http_interrupt_ack();
        int any = 0;
        for (size_t i = 0; i < n; i++)
            any |= made[i];
        if (any) {
            gpc_info(s->log, "gpuctl: launch in %s%s%s failed (%s); removing what it created",
                     worker.region, zones[z][0] ? "/" : "", zones[z], e.msg);
            left = rollback_created(s, c, nodes, n, made);
            res->created = created_before;
        }
        if (left || (last != GPC_ERR_CAPACITY && last != GPC_ERR_QUOTA) || gpc_interrupted)
            break;
        if (last == GPC_ERR_CAPACITY) {
            gpc_capacity_miss_add(s->st, s->prov->name, worker.region, worker.zone,
                                  worker.instance_type, worker.spot, gpc_now(), &e);
            if (z + 1 < nz && !pinned[0])
                gpc_info(s->log, "gpuctl: no capacity for %s in %s; trying zone %s",
                         worker.instance_type, zones[z], zones[z + 1]);
            continue;
        }
        break; /* quota: this region is done */
    }
    if (!rc && last) {
        if (nz > 1 && last == GPC_ERR_CAPACITY)
            rc = gpc_fail(err, last, "%s: no capacity for %s %s in %s (zones tried: %s); last: "
                          "%s", s->prov->name, chosen->worker.instance_type,
                          chosen->worker.spot ? "spot" : "on-demand", chosen->worker.region,
                          gpc_buf_str(&tried), last_err.msg);
        else
            rc = gpc_fail(err, last_err.code ? last_err.code : (gpc_code)last, "%s",
                          last_err.msg);
    }
    if (rc && !left && !res->created && !alive_before && !any_unknown(nodes, n)) {
        /* nothing of this cluster lives: close it, after the provider's
         * own resources are gone (else it stays recorded for destroy).  A
         * create of unknown outcome keeps it recorded: its node may come. */
        gpc_error ce;
        gpc_error_clear(&ce);
        if (cleanup_resources(s, c, &ce) == 0)
            close_if_empty(s, c, nodes, n);
        else
            gpc_info(s->log, "gpuctl: %s; cluster '%s' stays recorded: run 'gpuctl destroy %s'",
                     ce.msg, c->name, c->name);
    }
    if (rc && !res->created && !alive_before && !c->destroyed_at) {
        /* the record stays (a clean-up left something, or a create has no
         * answer): it shows as failed until an apply makes its nodes */
        gpc_error ue;
        gpc_error_clear(&ue);
        c->phase = GPC_PHASE_FAILED;
        c->updated_at = gpc_now();
        gpc_cluster_update(s->st, c, &ue);
    }
    gpc_buf_free(&tried);
    free(made);
    free(zones);
    gpc_node_list_free(nodes, n);
    return rc;
}

/* After a failed apply: add to err's message what is left (when the
 * cluster stays recorded; also when not, after an interrupt). */
static void say_left(gpc_session *s, int64_t cid, int interrupted, gpc_error *err)
{
    gpc_cluster_rec c;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_cluster_get_by_id(s->st, cid, &c, &e))
        return;
    gpc_node_rec *nodes = NULL;
    size_t n = 0, live = 0, unknown = 0;
    if (!c.destroyed_at && gpc_node_list(s->st, cid, 0, &nodes, &n, &e) == 0)
        for (size_t i = 0; i < n; i++) {
            live += nodes[i].provider_id[0] && nodes[i].phase != GPC_PHASE_TERMINATED;
            unknown += outcome_unknown(&nodes[i]);
        }
    char msg[GPC_ERROR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    if (c.destroyed_at) {
        /* closed: a failure's own message says it all */
        if (interrupted)
            gpc_fail_replace(err, err->code, "%s; nothing is left of cluster '%s' (what this "
                             "apply made was removed)", msg, c.name);
    } else if (unknown) {
        gpc_fail_replace(err, err->code, "%s; cluster '%s' stays recorded with %zu node(s) "
                         "and %zu whose create has no answer (they may exist): gpuctl apply "
                         "finishes it, gpuctl destroy %s removes it", msg, c.name, live,
                         unknown, c.name);
    } else {
        gpc_fail_replace(err, err->code, "%s; cluster '%s' stays recorded with %zu node(s): "
                         "gpuctl apply finishes it, gpuctl destroy %s removes it", msg,
                         c.name, live, c.name);
    }
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&c);
}

int gpc_apply(gpc_session *s, const gpc_spec *spec, const char *spec_path,
              const gpc_apply_opts *opts, gpc_apply_result *res, gpc_error *err)
{
    memset(res, 0, sizeof(*res));
    res->exit_code = -1;
    gpc_plan own;
    memset(&own, 0, sizeof(own));
    char hash[65];
    int rc = gpc_spec_hash(spec, hash, err);
    if (rc)
        return rc;

    /* Where the job's directories are, as the node sees them (the
     * checkpoint directory is made further down, once the plan holds). */
    char *workdir = NULL, *ckpt = NULL;
    int lockfd = -1;
    if (!rc && !opts->dry_run)
        rc = gpc_cluster_lock(s, spec->name, 0, &lockfd, err);
    /* A saved plan holds only while the state is as it was when it was
     * made (checked under the lock, before anything else). */
    if (!rc && opts->plan) {
        char fp[65];
        rc = gpc_state_fingerprint(s->st, spec->name, fp, err);
        if (!rc && strcmp(fp, opts->plan->fingerprint) != 0)
            rc = gpc_fail(err, GPC_ERR_STALE,
                          "the saved plan is stale: cluster '%s' changed in the state since "
                          "the plan was made (created, destroyed or nodes added); run gpuctl "
                          "plan again", spec->name);
    }
    if (rc)
        goto out;

    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    gpc_error nf;
    gpc_error_clear(&nf);
    int have = gpc_cluster_get(s->st, spec->name, &c, &nf) == 0;
    if (!have && nf.code != GPC_ERR_NOT_FOUND) {
        rc = gpc_fail(err, nf.code, "%s", nf.msg);
        goto out;
    }
    /* A cluster with another spec: gpc_plan_make refuses it (and a saved
     * plan made against it could not pass the fingerprint check above). */
    /* The plan: the one given (a saved plan, which must still match the
     * state), or one made now under the lock. */
    const gpc_plan *plan = opts->plan;
    if (!plan) {
        gpc_plan_opts po = {.catalog_path = opts->catalog_path, .spec_path = spec_path};
        rc = gpc_plan_make(s, spec, &po, &own, err);
        plan = &own;
    }
    /* A saved plan for a cluster that existed (or not) must meet the same
     * now; the fingerprint says so, this says it for a plan made while
     * another gpuctl changed the state between its reads. */
    if (!rc && plan->cluster_exists != have)
        rc = gpc_fail(err, GPC_ERR_STALE, "the saved plan is stale: cluster '%s' %s when the "
                      "plan was made; run gpuctl plan again", spec->name,
                      plan->cluster_exists ? "existed" : "did not exist");
    if (rc)
        goto out_c;
    if (plan->action != GPC_PLAN_NONE && plan->n_offers == 0) {
        rc = gpc_fail(err, GPC_ERR_CAPACITY, "no offer fits '%s'", spec->name);
        goto out_c;
    }
    /* Where the job's directories are, as the node sees them.  The local
     * provider's nodes share this machine's files; a cloud node has its
     * own disk, where checkpoint_dir is a path of the node's and nothing of
     * this machine is copied (yet). */
    const char *target = plan->n_offers ? plan->offers[0].worker.provider
                       : have ? c.provider : gpc_provider_default()->name;
    const gpc_provider *tp = gpc_provider_find(target);
    int shares_files = tp && (tp->caps & GPC_CAP_SHARED_FILES);
    if (spec->workdir && shares_files)
        rc = resolve_path(spec, "workdir", spec->workdir, 0, &workdir, err);
    else if (spec->workdir && plan->action != GPC_PLAN_NONE)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: the chosen offer is on %s, whose nodes "
                      "cannot see this machine's files (only the %s provider shares them); "
                      "put the code in the image or fetch it in setup", spec->source, target,
                      gpc_provider_names_with(GPC_CAP_SHARED_FILES));
    if (!rc && spec->checkpoint_dir && !shares_files) {
        if (spec->checkpoint_dir[0] != '/')
            rc = gpc_fail(err, GPC_ERR_SPEC, "%s: checkpoint_dir: '%s' must be an absolute path "
                          "on the %s nodes", spec->source, spec->checkpoint_dir, target);
        else if (!(ckpt = strdup(spec->checkpoint_dir)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    } else if (!rc && spec->checkpoint_dir && !opts->dry_run &&
               plan->action != GPC_PLAN_NONE) {
        rc = resolve_path(spec, "checkpoint_dir", spec->checkpoint_dir, 1, &ckpt, err);
    }
    if (rc)
        goto out_c;
    /* What can be known before any call: the provider takes the spec
     * (aws: the image), and the user-data of the head and of a worker fits
     * the provider's transport (a placeholder head address, a full one). */
    if (plan->action != GPC_PLAN_NONE && plan->n_offers) {
        const gpc_offer *of = &plan->offers[0].worker;
        const gpc_provider *pv = gpc_provider_find(of->provider);
        if (pv && (pv->caps & GPC_CAP_PLAN_ONLY))
            pv = NULL; /* refused below, as not built in */
        if (pv && pv->check_spec)
            rc = pv->check_spec(spec, err);
        const gpc_userdata_rules *rules = pv ? pv->userdata : NULL;
        for (uint32_t r = 0; !rc && pv && rules && r < (spec->nodes > 1 ? 2u : 1u); r++) {
            gpc_node_ctx ctx = {
                .cluster = spec->name, .cluster_id = "00000000000000000000000000000000",
                .rank = r, .nnodes = spec->nodes,
                .head_ip = r ? "255.255.255.255" : NULL, .rdzv_port = 65535,
                .workdir = workdir, .checkpoint_dir = ckpt,
                .fabric = of->fabric[0] && spec->resources.interconnect != GPC_IC_NONE
                              ? of->fabric : NULL,
                .instance_type = of->instance_type,
                .rank_from_launch_index = r > 0 && pv->create_nodes && spec->nodes > 2 &&
                                          (pv->caps & GPC_CAP_LAUNCH_INDEX),
            };
            char *ud = NULL, *enc = NULL;
            size_t enc_len;
            rc = gpc_render_userdata(spec, &ctx, rules, &ud, err);
            if (!rc)
                rc = gpc_userdata_encode(ud, strlen(ud), rules, &enc, &enc_len, NULL, err);
            free(ud);
            free(enc);
        }
        if (rc)
            goto out_c;
    }
    if (opts->dry_run || plan->action == GPC_PLAN_NONE) {
        res->created = opts->dry_run ? (int)plan->n_create : 0;
        res->unchanged = plan->action == GPC_PLAN_NONE;
        res->phase = have ? c.phase : GPC_PHASE_PENDING;
        res->exit_code = have ? c.exit_code : -1;
        res->cluster_id = have ? c.id : 0;
        const gpc_provider *wp = plan->n_offers ? gpc_provider_find(plan->offers[0].worker.provider)
                                                : NULL;
        if (opts->dry_run && plan->n_offers && (!wp || (wp->caps & GPC_CAP_PLAN_ONLY)))
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "provider '%s' is not built into this gpuctl "
                          "(available: %s)", plan->offers[0].worker.provider,
                          gpc_provider_names());
        if (opts->dry_run)
            goto out_c;
    }
    /* Nodes go to the plan's offers in order: the chosen one, then, when a
     * new cluster meets no capacity (GPC_ERR_CAPACITY from the provider),
     * each fallback in turn.  An existing cluster's plan only holds offers
     * of its own provider, and it stays on the first. */
    size_t attempt = 0;
    for (;;) {
        const gpc_plan_offer *chosen = plan->n_offers ? &plan->offers[attempt] : NULL;
        gpc_error e;
        gpc_error_clear(&e);
        rc = gpc_session_provider(s, chosen ? chosen->worker.provider : c.provider, &e);
        int fresh = !have;
        if (!rc && fresh)
            rc = new_cluster(s, spec, spec_path, hash, &c, &e);
        if (!rc) {
            res->cluster_id = c.id;
            rc = create_missing(s, spec, &c, chosen, workdir, ckpt,
                                opts->poll_s > 0 ? opts->poll_s : 2.0, res, &e);
        }
        /* Only from a clean slate: when the rollback could not remove a
         * node, the cluster stays recorded for destroy, and this error
         * is the answer. */
        int closed = 0;
        int next_ok = rc == GPC_ERR_CAPACITY || rc == GPC_ERR_QUOTA;
        if (next_ok && fresh) {
            gpc_cluster_rec live;
            gpc_error ge;
            gpc_error_clear(&ge);
            closed = gpc_cluster_get(s->st, spec->name, &live, &ge) != 0 &&
                     ge.code == GPC_ERR_NOT_FOUND;
            if (!ge.code)
                gpc_cluster_rec_free(&live);
        }
        /* A quota error closes the whole region of that provider. */
        size_t next = attempt + 1;
        if (rc == GPC_ERR_QUOTA && chosen)
            while (next < plan->n_offers &&
                   strcmp(plan->offers[next].worker.provider, chosen->worker.provider) == 0 &&
                   strcmp(plan->offers[next].worker.region, chosen->worker.region) == 0)
                next++;
        if (next_ok && closed && next < plan->n_offers && !gpc_interrupted) {
            const gpc_offer *nx = &plan->offers[next].worker;
            gpc_info(s->log, "gpuctl: %s; trying offer %zu of %zu: %s %s %s %s", e.msg,
                     next + 1, plan->n_offers, nx->provider, nx->instance_type, nx->region,
                     nx->spot ? "spot" : "on-demand");
            attempt = next;
            gpc_cluster_rec_free(&c);
            memset(&c, 0, sizeof(c));
            res->created = 0;
            continue;
        }
        if (next_ok && attempt > 0)
            gpc_fail(err, rc, "no offer could be launched after %zu offer(s) in the plan's "
                     "failover order; last: %s", attempt + 1, e.msg);
        else if (rc)
            gpc_fail(err, e.code, "%s", e.msg);
        break;
    }
    if (rc && res->cluster_id)
        say_left(s, res->cluster_id, rc == GPC_ERR_INTERRUPTED, err);
    if (rc && !res->cluster_id)
        goto out_c;
    res->unchanged = !rc && res->created == 0 && res->adopted == 0;
    if (!rc)
        rc = gpc_cluster_refresh(s, &c, err);
    /* Waiting only reads: let destroy (or another apply) in meanwhile. */
    gpc_cluster_unlock(lockfd);
    lockfd = -1;
    if (!rc && opts->wait) {
        rc = gpc_cluster_wait(s, &c, opts->timeout_s, opts->poll_s, opts->stream_logs, err);
        res->waited = rc == 0 || rc == GPC_ERR_JOB_FAILED || rc == GPC_ERR_NODE_LOST;
    }
    res->phase = c.phase;
    res->exit_code = c.exit_code;
out_c:
    gpc_plan_free(&own);
    gpc_cluster_rec_free(&c);
out:
    gpc_cluster_unlock(lockfd);
    free(workdir);
    free(ckpt);
    return rc;
}

/* ---- logs and wait --------------------------------------------------- */

int gpc_log_pump(gpc_session *s, uint32_t rank, const char *provider_id, long *off,
                 int prefix, gpc_buf *partial, const gpc_log *f, gpc_error *err)
{
    if (!s->prov || !s->prov->read_log || !provider_id[0])
        return 0;
    gpc_buf b;
    gpc_buf_init(&b, 1u << 22);
    long next = *off;
    int rc = s->prov->read_log(s->pctx, provider_id, *off, &b, &next, err);
    if (!rc && b.len) {
        if (!prefix) {
            gpc_output(f, b.data, b.len);
        } else if (gpc_buf_add(partial, b.data, b.len, NULL) == 0) {
            char *start = partial->data, *nl;
            size_t left = partial->len;
            while ((nl = memchr(start, '\n', left))) {
                gpc_outputf(f, "[node %u] %.*s\n", rank, (int)(nl - start), start);
                left -= (size_t)(nl + 1 - start);
                start = nl + 1;
            }
            memmove(partial->data, start, left);
            partial->len = left;
            partial->data[left] = '\0';
        } else {
            /* an endless line: print what we have */
            gpc_outputf(f, "[node %u] %s", rank, gpc_buf_str(partial));
            gpc_output(f, b.data, b.len);
            gpc_output(f, "\n", 1);
            gpc_buf_reset(partial);
        }
    }
    *off = next;
    gpc_buf_free(&b);
    return rc;
}

void gpc_log_flush(uint32_t rank, int prefix, gpc_buf *partial, const gpc_log *f)
{
    if (partial->len && prefix)
        gpc_outputf(f, "[node %u] %s\n", rank, partial->data);
    else if (partial->len)
        gpc_outputf(f, "%s\n", partial->data);
    gpc_buf_reset(partial);
}

/*
 * Stop nodes that can no longer do anything useful, so that they do not
 * wait, and bill, for nothing.  all = 0: once rank 0 has ended, the nodes
 * still booting (they can never join; those that joined end with torchrun
 * by themselves).  all = 1: every node still alive (the job has failed).
 */
static void stop_stragglers(gpc_session *s, gpc_cluster_rec *c, int all, const char *why)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_node_list(s->st, c->id, 0, &nodes, &n, &e))
        return;
    int64_t now = gpc_now();
    for (size_t i = 0; i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (!nd->provider_id[0] || is_terminal(nd->phase) ||
            (!all && (nd->rank == 0 || nd->phase != GPC_PHASE_BOOTING)))
            continue;
        gpc_error_clear(&e);
        if (s->prov->delete_node(s->pctx, nd->region, nd->provider_id, &e) != 0) {
            gpc_info(s->log, "gpuctl: could not stop node %s: %s", nd->name, e.msg);
            continue;
        }
        nd->phase = GPC_PHASE_TERMINATED;
        nd->ended_at = now;
        gpc_node_update(s->st, nd, &e);
        gpc_ledger_close(s->st, nd->id, now, &e);
        event(s, c->id, (int)nd->rank, "delete", "stopped: %s", why);
        gpc_info(s->log, "stopped node %s: %s", nd->name, why);
    }
    gpc_node_list_free(nodes, n);
}

int gpc_cluster_wait(gpc_session *s, gpc_cluster_rec *c, long timeout_s, double poll_s,
                     int stream_logs, gpc_error *err)
{
    int64_t start = gpc_now();
    if (poll_s <= 0)
        poll_s = 1.0;
    int rc = 0;
    /* Log tails, indexed by rank. */
    uint32_t nt = c->nodes;
    long *offs = calloc(nt ? nt : 1, sizeof(long));
    gpc_buf *parts = calloc(nt ? nt : 1, sizeof(gpc_buf));
    if (!offs || !parts) {
        free(offs);
        free(parts);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    for (uint32_t r = 0; r < nt; r++)
        gpc_buf_init(&parts[r], 1u << 20);
    int64_t head_end = 0, bad_since = 0;
    int head_lost = 0;
    char bad_name[128] = "";
    int bad_exit = -1;
    for (int final = 0; !final;) {
        rc = gpc_cluster_refresh(s, c, err);
        if (rc)
            break;
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
        if (rc)
            break;
        /* Rank 0 decides the job; give the other nodes a grace period to
         * finish (and their logs to arrive) after it ends.  A worker that
         * failed while rank 0 lives fails the job after the same grace,
         * unless rank 0 ends by itself meanwhile. */
        int64_t now = gpc_now();
        int all_done = 1; /* nodes still booting never joined: they do not count */
        const gpc_node_rec *bad = NULL;
        for (size_t i = 0; i < n; i++) {
            all_done &= is_terminal(nodes[i].phase) || nodes[i].phase == GPC_PHASE_BOOTING;
            if (!bad && nodes[i].rank > 0 && nodes[i].phase == GPC_PHASE_FAILED)
                bad = &nodes[i];
        }
        /* rank 0 gone without an exit status (preempted, lost): the other
         * nodes cannot finish without its rendezvous; no grace */
        head_lost = c->phase == GPC_PHASE_PREEMPTED ||
                    (c->phase == GPC_PHASE_FAILED && c->exit_code < 0);
        if (is_terminal(c->phase)) {
            if (!head_end)
                head_end = now;
            final = all_done || head_lost || now - head_end >= WAIT_GRACE_S;
        } else if (bad) {
            if (!bad_since)
                bad_since = now;
            if (now - bad_since >= WAIT_GRACE_S) {
                final = 1;
                snprintf(bad_name, sizeof(bad_name), "%s", bad->name);
                bad_exit = bad->exit_code;
            }
        }
        if (stream_logs) {
            for (size_t i = 0; i < n; i++) {
                if (nodes[i].rank >= nt)
                    continue;
                gpc_error e;
                gpc_error_clear(&e);
                gpc_log_pump(s, nodes[i].rank, nodes[i].provider_id, &offs[nodes[i].rank],
                             nt > 1, &parts[nodes[i].rank], s->log, &e);
                if (final)
                    gpc_log_flush(nodes[i].rank, nt > 1, &parts[nodes[i].rank], s->log);
            }
        }
        /* One line: elapsed, then each node's phase. */
        char line[256];
        int len = snprintf(line, sizeof(line), "%s:", c->name);
        for (size_t i = 0; i < n && len < (int)sizeof(line) - 32; i++)
            len += snprintf(line + len, sizeof(line) - (size_t)len, " node%u=%s",
                            nodes[i].rank, gpc_phase_name(nodes[i].phase));
        gpc_node_list_free(nodes, n);
        gpc_status(s->log, (long)(gpc_now() - start), line);
        if (final) {
            if (bad_name[0])
                stop_stragglers(s, c, 1, "a worker failed and the job cannot finish");
            else if (head_lost)
                stop_stragglers(s, c, 1, "rank 0 is gone and the job cannot finish");
            else
                stop_stragglers(s, c, 0, "the job ended before this node joined");
            break;
        }
        if (gpc_interrupted) {
            rc = gpc_fail(err, GPC_ERR_INTERRUPTED,
                          "interrupted; the nodes keep running (gpuctl destroy %s stops them)",
                          c->name);
            break;
        }
        if (timeout_s > 0 && gpc_now() - start >= timeout_s) {
            rc = gpc_fail(err, GPC_ERR_TIMEOUT,
                          "cluster '%s' still %s after %lds; the nodes keep running",
                          c->name, gpc_phase_name(c->phase), timeout_s);
            break;
        }
        sleep_s(poll_s);
    }
    gpc_status_end(s->log);
    for (uint32_t r = 0; r < nt; r++)
        gpc_buf_free(&parts[r]);
    free(parts);
    free(offs);
    if (rc)
        return rc;
    if (bad_name[0])
        return gpc_fail(err, GPC_ERR_JOB_FAILED,
                        "cluster '%s': node %s failed (exit status %d) and rank 0 did not "
                        "finish within %d s; the other nodes were stopped",
                        c->name, bad_name, bad_exit, WAIT_GRACE_S);
    switch (c->phase) {
    case GPC_PHASE_SUCCEEDED:
        return 0;
    case GPC_PHASE_FAILED:
        if (c->exit_code < 0)
            return gpc_fail(err, GPC_ERR_NODE_LOST,
                            "cluster '%s': rank 0 ended without an exit status (node lost)", c->name);
        return gpc_fail(err, GPC_ERR_JOB_FAILED, "cluster '%s': job failed, rank 0 exit status %d",
                        c->name, c->exit_code);
    case GPC_PHASE_PREEMPTED:
        return gpc_fail(err, GPC_ERR_NODE_LOST, "cluster '%s': rank 0 was preempted", c->name);
    default:
        if (c->destroyed_at)
            return gpc_fail(err, GPC_ERR_NODE_LOST, "cluster '%s' was destroyed while waiting",
                            c->name);
        return gpc_fail(err, GPC_ERR_NODE_LOST, "cluster '%s' ended as %s", c->name,
                        gpc_phase_name(c->phase));
    }
}

/* ---- destroy ---------------------------------------------------------- */

int gpc_cluster_destroy(gpc_session *s, gpc_cluster_rec *c, int *deleted, gpc_error *err)
{
    *deleted = 0;
    int rc = gpc_session_provider(s, c->provider, err);
    if (rc)
        return rc;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    if (rc)
        return rc;
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    int nleft = 0;
    int64_t now = gpc_now();
    /* A provider that tags what it makes removes it all by the cluster's
     * tag (EC2: terminate, wait until terminated, then the placement group,
     * security group and key pair); the nodes are then gone too. */
    int by_tag = s->prov->cleanup_cluster != NULL;
    size_t to_mark = n;
    gpc_code by_tag_code = GPC_OK;
    if (by_tag) {
        gpc_error e;
        gpc_error_clear(&e);
        for (size_t i = 0; i < n; i++)
            if (nodes[i].provider_id[0] && fault("fail-delete", nodes[i].rank))
                gpc_fail(&e, (gpc_code)fault_code, "%s: injected %s failure deleting %s",
                         s->prov->name, gpc_code_name((gpc_code)fault_code), nodes[i].name);
        if (e.code || cleanup_resources(s, c, &e) != 0) {
            by_tag_code = e.code;
            nleft = 1;
            gpc_buf_addf(&left, NULL, "%s", e.msg);
            event(s, c->id, -1, "error", "cleanup failed: %s", e.msg);
            to_mark = 0; /* nothing is marked deleted: destroy again to finish */
        }
    }
    for (size_t i = 0; i < to_mark; i++) {
        gpc_node_rec *nd = &nodes[i];
        gpc_error e;
        gpc_error_clear(&e);
        int found = 0;
        /* a node created but never recorded is deleted too; one that
         * cannot be looked up stays recorded */
        int drc = by_tag ? 0 : adopt(s, nd, &found, &e);
        drc = drc ? drc : !nd->provider_id[0] || by_tag ? 0
                : fault("fail-delete", nd->rank)
                ? gpc_fail(&e, (gpc_code)fault_code, "%s: injected %s failure deleting %s",
                           s->prov->name, gpc_code_name((gpc_code)fault_code), nd->name)
                : s->prov->delete_node(s->pctx, nd->region, nd->provider_id, &e);
        if (drc) {
            nleft++;
            gpc_buf_addf(&left, NULL, "%s%s (%s)", nleft > 1 ? ", " : "", nd->name, e.msg);
            event(s, c->id, (int)nd->rank, "error", "delete failed: %s", e.msg);
            continue;
        }
        nd->phase = GPC_PHASE_TERMINATED;
        if (!nd->ended_at)
            nd->ended_at = now;
        rc = gpc_state_begin(s->st, err);
        if (!rc)
            rc = gpc_node_update(s->st, nd, err);
        if (!rc)
            rc = gpc_ledger_close(s->st, nd->id, now, err);
        if (!rc)
            rc = gpc_state_commit(s->st, err);
        else
            gpc_state_rollback(s->st);
        if (rc)
            break;
        if (nd->provider_id[0]) {
            (*deleted)++;
            event(s, c->id, (int)nd->rank, "delete", "deleted %s", nd->provider_id);
        }
    }
    gpc_node_list_free(nodes, n);
    if (!rc && nleft == 0) {
        c->destroyed_at = now;
        c->updated_at = now;
        c->phase = GPC_PHASE_TERMINATED;
        rc = gpc_cluster_update(s->st, c, err);
        if (!rc)
            event(s, c->id, -1, "destroy", "cluster destroyed");
    } else if (!rc) {
        rc = by_tag ? gpc_fail(err, by_tag_code == GPC_ERR_AUTH ? GPC_ERR_AUTH : GPC_ERR_PARTIAL,
                               "cluster '%s' stays recorded: %s; run destroy again", c->name,
                               gpc_buf_str(&left))
                    : gpc_fail(err, GPC_ERR_PARTIAL,
                               "cluster '%s': %d node(s) could not be deleted and stay "
                               "recorded: %s", c->name, nleft, gpc_buf_str(&left));
    }
    gpc_buf_free(&left);
    return rc;
}

