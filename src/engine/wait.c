/* wait.c - gpc_cluster_wait, the log pump, stopping the nodes a finished
 * job leaves */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lifecycle.h"
#include "gpuctl/buf.h"
#include "gpuctl/util.h"

/* Seconds --wait gives the other nodes after rank 0 ends, or rank 0 after
 * a worker failed (docs/cli.md). */
#define WAIT_GRACE_S 30
/* Seconds between asks for interruption notices (the nodes ask their
 * provider every 5 s: templates/notice.sh). */
#define NOTICE_POLL_S 5
/* Looks in a row a wait lets the provider fail before it gives up. */
#define WAIT_REFRESH_TRIES 10
/* Whether a log read of --wait may wait for a node to become reachable
 * (read_log's may_wait): no, the next poll tries again, so the status line
 * keeps moving. */
#define LOG_MAY_WAIT 0

/* ---- logs and wait --------------------------------------------------- */

int gpc_node_log_read(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                      const gpc_node_rec *nd, long offset, int may_wait, gpc_buf *out,
                      long *next, int *exit_status, gpc_error *err)
{
    *next = offset;
    *exit_status = -1;
    if (!pv->prov->read_log)
        return gpc_fail(err, GPC_ERR_PROVIDER, "provider %s cannot read node logs",
                        pv->prov->name);
    if (!nd->provider_id || !nd->provider_id[0])
        return 0;
    gpc_lc_ref r;
    int rc = gpc_lc_ref_open(s, c, &r, err);
    if (!rc) {
        gpc_node_ref ref = gpc_lc_node_ref(nd);
        rc = pv->prov->read_log(pv->ctx, &r.ref, &ref, nd->rank, offset, may_wait, out, next,
                                exit_status, err);
    }
    gpc_lc_ref_close(s, c, &r);
    return rc;
}

int gpc_log_pump(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                 const gpc_node_rec *nd, int may_wait, long *off, int *exit_status, int prefix,
                 gpc_buf *partial, const gpc_log *f, gpc_error *err)
{
    *exit_status = -1;
    if (!pv || !pv->prov->read_log || !nd->provider_id || !nd->provider_id[0])
        return 0;
    uint32_t rank = nd->rank;
    gpc_buf b;
    gpc_buf_init(&b, 1u << 22);
    long next = *off;
    int rc = gpc_node_log_read(s, pv, c, nd, *off, may_wait, &b, &next, exit_status, err);
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
static void stop_stragglers(gpc_session *s, const gpc_open_provider *pv,
                            gpc_cluster_rec *c, int all, const char *why)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (!pv || gpc_node_list(s->st, c->id, 0, &nodes, &n, &e))
        return;
    int64_t now = gpc_now();
    for (size_t i = 0; i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (!nd->provider_id[0] || gpc_lc_is_terminal(nd->phase) ||
            (!all && (nd->rank == 0 || nd->phase != GPC_PHASE_BOOTING)))
            continue;
        gpc_error_clear(&e);
        if (gpc_lc_delete(pv, nd, &e) != 0) {
            gpc_info(s->log, "gpuctl: could not stop node %s: %s", nd->name, e.msg);
            continue;
        }
        nd->phase = GPC_PHASE_TERMINATED;
        nd->ended_at = now;
        gpc_node_update(s->st, nd, &e);
        gpc_ledger_close(s->st, nd->id, now, &e);
        gpc_lc_event(s, c->id, (int)nd->rank, "delete", "stopped %s: %s", nd->provider_id, why);
        gpc_info(s->log, "stopped node %s: %s", nd->name, why);
    }
    gpc_node_list_free(nodes, n);
}

/* GPC_ERR_JOB_FAILED naming the node whose job failed: rank 0, or the
 * first other node that exited non-zero after rank 0 exited 0
 * (gpc_cluster_failed_node, as refresh derives the cluster's phase), or,
 * on nodes kept up after the job, whose job_ex[rank] (nt entries: each
 * node's job exit status from its log, -1 none) is non-zero. */
static int job_failed(gpc_session *s, const gpc_cluster_rec *c, const int *job_ex,
                      uint32_t nt, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    int listed = gpc_node_list(s->st, c->id, 1, &nodes, &n, &e) == 0;
    const gpc_node_rec *bad = listed ? gpc_cluster_failed_node(nodes, n) : NULL;
    int bad_exit = bad ? bad->exit_code : -1;
    /* nodes kept up after the job (lifecycle.idle_timeout) still run: their
     * job's exit status is the one their log transport gave */
    for (size_t i = 0; listed && (!bad || bad->rank == 0) && i < n; i++)
        if (nodes[i].rank > 0 && nodes[i].rank < nt && job_ex[nodes[i].rank] > 0) {
            bad = &nodes[i];
            bad_exit = job_ex[nodes[i].rank];
        }
    int rc;
    if (bad && bad->rank != 0 && c->exit_code < 0)
        rc = gpc_fail(err, GPC_ERR_JOB_FAILED, "cluster '%s': job failed, node %s (rank %u) "
                      "exit status %d (rank 0 was stopped)", c->name, bad->name, bad->rank,
                      bad_exit);
    else if (bad && bad->rank != 0)
        rc = gpc_fail(err, GPC_ERR_JOB_FAILED, "cluster '%s': job failed, node %s (rank %u) "
                      "exit status %d (rank 0 exited %d)", c->name, bad->name, bad->rank,
                      bad_exit, c->exit_code);
    else
        rc = gpc_fail(err, GPC_ERR_JOB_FAILED, "cluster '%s': job failed, rank 0 exit status %d",
                      c->name, c->exit_code);
    gpc_node_list_free(nodes, n);
    return rc;
}

/*
 * Ask the provider for interruption notices of the live nodes
 * (poll_interruptions, when it has it) and record each new one as an
 * event of its node, once per node and action (seen[rank] holds the last
 * action recorded; nt entries).  A failed poll is only logged: the next
 * poll asks again, and no answer is never taken for "no notice".
 */
static void poll_notices(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                         const gpc_node_rec *nodes, size_t n, char (*seen)[32], uint32_t nt)
{
    if (!pv || !pv->prov->poll_interruptions || !n)
        return;
    gpc_node_ref *refs = calloc(n, sizeof(*refs));
    size_t *at = calloc(n, sizeof(*at));
    gpc_interruption *out = calloc(n, sizeof(*out));
    size_t k = 0;
    gpc_error e;
    gpc_error_clear(&e);
    for (size_t i = 0; refs && at && out && i < n; i++)
        if (nodes[i].provider_id[0] && !gpc_lc_is_terminal(nodes[i].phase)) {
            refs[k] = gpc_lc_node_ref(&nodes[i]);
            at[k++] = i;
        }
    gpc_lc_ref r;
    int rc = k ? gpc_lc_ref_open(s, c, &r, &e) : 0;
    if (k && !rc)
        rc = pv->prov->poll_interruptions(pv->ctx, &r.ref, refs, k, out, &e);
    if (k)
        gpc_lc_ref_close(s, c, &r);
    if (rc)
        gpc_debug(s->log, "could not poll interruption notices of %s: %s", c->name, e.msg);
    for (size_t j = 0; !rc && j < k; j++) {
        const gpc_node_rec *nd = &nodes[at[j]];
        gpc_interruption *in = &out[j];
        in->action[sizeof(in->action) - 1] = '\0';
        in->detail[sizeof(in->detail) - 1] = '\0';
        if (!in->action[0] || nd->rank >= nt || strcmp(seen[nd->rank], in->action) == 0)
            continue;
        snprintf(seen[nd->rank], sizeof(seen[0]), "%s", in->action);
        char when[32] = "not given";
        if (in->deadline > 0) {
            time_t t = (time_t)in->deadline;
            struct tm tm;
            if (gmtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        }
        gpc_lc_event(s, c->id, (int)nd->rank, "interruption", "%s notice for %s, deadline %s%s%s",
                     in->action, nd->provider_id, when, in->detail[0] ? ": " : "", in->detail);
        gpc_info(s->log, "gpuctl: node %s (%s) has a %s notice from %s, deadline %s",
                 nd->name, nd->provider_id, in->action, pv->prov->name, when);
    }
    free(refs);
    free(at);
    free(out);
}

/* The spec's budget.max_total of the cluster (canonical JSON), USD; 0 =
 * no cap. */
static double budget_total(const gpc_cluster_rec *c)
{
    cJSON *j = cJSON_Parse(c->spec_json ? c->spec_json : "");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "budget");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "max_total");
    double v = cJSON_IsNumber(t) ? t->valuedouble : 0;
    cJSON_Delete(j);
    return v > 0 ? v : 0;
}

/*
 * budget.max_total while the job runs: from the ledger, what the cluster
 * has cost (*spent, USD) and costs now (*rate, USD/hour: its nodes still
 * billing); 1 when the spend by the poll after next (spent + rate x 2
 * polls) would reach `total`, so that the nodes are stopped before the
 * cap is crossed, not after.
 */
static int budget_reached(gpc_session *s, const gpc_cluster_rec *c, double total,
                          double poll_s, double *spent, double *rate)
{
    int64_t now = gpc_now();
    double later = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_ledger_cost(s->st, c->id, now, spent, &e) ||
        gpc_ledger_cost(s->st, c->id, now + 3600, &later, &e)) {
        gpc_debug(s->log, "budget: %s", e.msg);
        return 0;
    }
    *rate = later - *spent;
    return *spent + *rate * (2 * poll_s) / 3600.0 >= total;
}

/* 1 when the cluster's nodes stay up after their job (its spec's
 * lifecycle.idle_timeout_s, canonical JSON). */
static int kept_up_after_job(const gpc_cluster_rec *c)
{
    cJSON *j = cJSON_Parse(c->spec_json ? c->spec_json : "");
    const cJSON *life = cJSON_GetObjectItemCaseSensitive(j, "lifecycle");
    int idle = gpc_json_num(life, "idle_timeout_s", 0) > 0;
    cJSON_Delete(j);
    return idle;
}

/*
 * The job's first output in rank 0's log: a gpc_log whose output passes
 * everything on (to `to`, when not NULL) and notes the time of the first
 * line after the bootstrap's "phase running" (torchrun started) that is
 * neither the bootstrap's own ("DATE gpuctl: ...") nor torchrun's
 * (torchrun_own).  Lines are judged by their first bytes, after a
 * "[node N] " prefix and a worker's "[default0]:".
 */
typedef struct first_output {
    const gpc_log *to;
    char line[96];      /* the start of the line being read */
    size_t len;
    int torchrun;       /* the bootstrap said "phase running" */
    double at;          /* gpc_monotonic_s() of the first line, 0 while none */
} first_output;

/* A line torchrun itself prints before its workers start: its logger's
 * ("WARNING:torch.distributed.run: ..."; torch 2: "W1202 10:00:00.1 42
 * torch/distributed/run.py:793] ..."), and the OMP_NUM_THREADS notice it
 * frames in asterisks when nproc_per_node > 1. */
static int torchrun_own(const char *l)
{
    return strstr(l, "torch.distributed") || strstr(l, "torch/distributed") ||
           strncmp(l, "*****", 5) == 0 || strncmp(l, "Setting OMP_NUM_THREADS", 23) == 0;
}

static void first_output_line(first_output *f)
{
    const char *l = f->line;
    if (strncmp(l, "[node ", 6) == 0 && strstr(l, "] "))
        l = strstr(l, "] ") + 2;
    /* torch 1.x's --tee prefix of a worker's (and its agent's) lines */
    if (strncmp(l, "[default", 8) == 0 && strstr(l, "]:"))
        l = strstr(l, "]:") + 2;
    /* "2026-12-02T10:15:20Z gpuctl: " */
    int ours = strlen(l) >= 29 && l[4] == '-' && l[10] == 'T' && l[19] == 'Z' &&
               strncmp(l + 20, " gpuctl: ", 9) == 0;
    if (ours && strncmp(l + 29, "phase running", 13) == 0)
        f->torchrun = 1;
    else if (!ours && f->torchrun && *l && !torchrun_own(l))
        f->at = gpc_monotonic_s();
}

static void first_output_out(void *ud, const char *data, size_t len)
{
    first_output *f = ud;
    gpc_output(f->to, data, len);
    for (size_t i = 0; i < len && !f->at; i++) {
        if (data[i] == '\n') {
            f->line[f->len] = '\0';
            first_output_line(f);
            f->len = 0;
        } else if (f->len < sizeof(f->line) - 1) {
            f->line[f->len++] = data[i];
        }
    }
}

/* 1 when the controller stopped the cluster at budget.max_total (its
 * "budget" event). */
static int budget_stopped(gpc_session *s, const gpc_cluster_rec *c)
{
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    int yes = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_event_list(s->st, c->id, &ev, &n, &e) == 0)
        for (size_t i = 0; i < n; i++)
            yes |= strcmp(ev[i].kind, "budget") == 0;
    gpc_event_list_free(ev, n);
    return yes;
}

/* 1 when a node of the cluster failed its job with an exit status
 * (gpc_cluster_failed_node). */
static int worker_failed(gpc_session *s, const gpc_cluster_rec *c)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    int yes = gpc_node_list(s->st, c->id, 1, &nodes, &n, &e) == 0 &&
              gpc_cluster_failed_node(nodes, n) != NULL;
    gpc_node_list_free(nodes, n);
    return yes;
}

/* The outcome of a wait that saw the cluster end: 0 when rank 0's job
 * succeeded, else the error that says why not (job_ex, nt: as in
 * job_failed). */
static int wait_outcome(gpc_session *s, const gpc_cluster_rec *c, const int *job_ex,
                        uint32_t nt, gpc_error *err)
{
    switch (c->phase) {
    case GPC_PHASE_SUCCEEDED:
        return 0;
    case GPC_PHASE_FAILED:
        if (c->exit_code < 0 && budget_stopped(s, c))
            return gpc_fail(err, GPC_ERR_BUDGET, "cluster '%s' was stopped at its "
                            "budget.max_total (gpuctl status %s shows when; gpuctl cost %s, "
                            "what it spent)", c->name, c->name, c->name);
        /* rank 0 stopped by gpuctl because a worker's job failed: the
         * job failed, as the wait that stopped it said */
        if (c->exit_code < 0 && worker_failed(s, c))
            return job_failed(s, c, job_ex, nt, err);
        if (c->exit_code < 0)
            return gpc_fail(err, GPC_ERR_NODE_LOST,
                            "cluster '%s': rank 0 ended without an exit status (node lost)", c->name);
        return job_failed(s, c, job_ex, nt, err);
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

int gpc_cluster_wait(gpc_session *s, gpc_cluster_rec *c, gpc_wait_opts *w, gpc_error *err)
{
    int64_t start = gpc_now();
    long timeout_s = w->timeout_s;
    double poll_s = w->poll_s > 0 ? w->poll_s : 1.0, since = w->since > 0 ? w->since
                                                                             : gpc_monotonic_s();
    int stream_logs = w->stream_logs;
    w->first_output_s = -1;
    first_output fo = {.to = stream_logs ? s->log : NULL};
    gpc_log fo_log = {.output = first_output_out, .ud = &fo};
    int rc = 0;
    /* Log tails, indexed by rank. */
    uint32_t nt = c->nodes;
    long *offs = calloc(nt ? nt : 1, sizeof(long));
    gpc_buf *parts = calloc(nt ? nt : 1, sizeof(gpc_buf));
    char (*seen)[32] = calloc(nt ? nt : 1, sizeof(*seen)); /* notices recorded, by rank */
    /* Each node's job exit status as its log transport says it, -1 while
     * none: a node kept up by lifecycle.idle_timeout still runs (at EC2:
     * an instance running) after its job, which only its log tells. */
    int *job_ex = calloc(nt ? nt : 1, sizeof(int));
    unsigned char *replaced = calloc(nt ? nt : 1, 1); /* ranks recovery made anew */
    /* each rank's node as the logs were read from it: a new node of the
     * rank (made by this wait, or by another gpuctl's) is read from its
     * beginning */
    char (*ids)[128] = calloc(nt ? nt : 1, sizeof(*ids));
    if (!offs || !parts || !seen || !job_ex || !replaced || !ids) {
        free(offs);
        free(parts);
        free(seen);
        free(job_ex);
        free(replaced);
        free(ids);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    for (uint32_t r = 0; r < nt; r++) {
        gpc_buf_init(&parts[r], 1u << 20);
        job_ex[r] = -1;
    }
    gpc_log quiet = {0}; /* where the logs go when not streamed: nowhere */
    int idle = kept_up_after_job(c);
    int64_t head_end = 0, bad_since = 0;
    int64_t notices_at = 0;
    int head_lost = 0;
    char bad_name[128] = "";
    int bad_exit = -1;
    gpc_open_provider op;
    int refresh_failed = 0; /* looks in a row that the provider failed */
    double max_total = budget_total(c), spent = 0, rate = 0;
    int over_budget = 0;
    for (int final = 0; !final;) {
        rc = gpc_cluster_refresh(s, c, err);
        /* the provider did not answer (after the HTTP layer's retries):
         * nothing is taken for a loss, the nodes keep their last known
         * phase, and the next poll asks again, WAIT_REFRESH_TRIES times */
        if ((rc == GPC_ERR_PROVIDER || rc == GPC_ERR_TIMEOUT) &&
            ++refresh_failed < WAIT_REFRESH_TRIES && !gpc_interrupted) {
            gpc_info(s->log, "gpuctl: could not ask the provider about %s (%s); asking again",
                     c->name, err->msg);
            gpc_error_clear(err);
            rc = 0;
            gpc_lc_sleep(poll_s);
            continue;
        }
        if (rc)
            break;
        refresh_failed = 0;
        /* the cluster's provider (refresh opened it, unless the cluster
         * is gone: then there is nothing to ask it) */
        const gpc_open_provider *pv = NULL;
        if (!c->destroyed_at) {
            rc = gpc_session_provider(s, c->provider, &op, err);
            if (rc)
                break;
            pv = &op;
        }
        /* budget.max_total: the nodes stopped before the spend crosses it
         * (the bootstrap's signal handler saves the checkpoints) */
        if (max_total > 0 && pv && !gpc_lc_is_terminal(c->phase) &&
            budget_reached(s, c, max_total, poll_s, &spent, &rate)) {
            gpc_lc_event(s, c->id, -1, "budget", "budget.max_total %.2f USD: %.4f USD spent, "
                         "%.4f USD/hour: stopping the nodes", max_total, spent, rate);
            stop_stragglers(s, pv, c, 1, "budget.max_total reached");
            over_budget = 1;
            break;
        }
        /* spot recovery: lost workers replaced while the job runs; a new
         * node's log starts from its beginning */
        if (w->recover && pv && replaced) {
            memset(replaced, 0, nt);
            gpc_error re;
            gpc_error_clear(&re);
            if (gpc_lc_recover(s, w->recover, c, replaced, &re) != 0)
                gpc_info(s->log, "gpuctl: %s", re.msg);
            for (uint32_t r = 0; r < nt; r++)
                if (replaced[r]) {
                    offs[r] = 0;
                    gpc_buf_reset(&parts[r]);
                    job_ex[r] = -1;
                    seen[r][0] = '\0';
                }
        }
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
        if (rc)
            break;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = nodes[i].rank;
            if (r >= nt || !nodes[i].provider_id[0] || strcmp(ids[r], nodes[i].provider_id) == 0)
                continue;
            if (ids[r][0]) {
                offs[r] = 0;
                gpc_buf_reset(&parts[r]);
                job_ex[r] = -1;
                seen[r][0] = '\0';
            }
            snprintf(ids[r], sizeof(ids[r]), "%s", nodes[i].provider_id);
        }
        /* the notices every NOTICE_POLL_S (a provider may have to ask
         * each node over its transport) */
        int64_t now = gpc_now();
        if (!notices_at || now - notices_at >= NOTICE_POLL_S) {
            notices_at = now;
            poll_notices(s, pv, c, nodes, n, seen, nt);
        }
        /* Rank 0 decides the job; give the other nodes a grace period to
         * finish (and their logs to arrive) after it ends.  A worker that
         * failed while rank 0 lives fails the job after the same grace,
         * unless rank 0 ends by itself meanwhile. */
        /* the logs first: a node that stays up after its job says so there
         * (streamed, or read and dropped) */
        for (size_t i = 0; i < n; i++) {
            uint32_t r = nodes[i].rank;
            int want_first = r == 0 && !fo.at && !w->no_timing;
            if (r >= nt || (!stream_logs && !want_first &&
                            (!idle || nodes[i].phase != GPC_PHASE_RUNNING || job_ex[r] >= 0)))
                continue;
            gpc_error e;
            gpc_error_clear(&e);
            int ex = -1;
            gpc_log_pump(s, pv, c, &nodes[i], LOG_MAY_WAIT, &offs[r], &ex, nt > 1, &parts[r],
                         r == 0 ? &fo_log : stream_logs ? s->log : &quiet, &e);
            if (want_first && fo.at) {
                w->first_output_s = fo.at - since;
                gpc_lc_event(s, c->id, 0, "timing", "the job's first output %.1f s after "
                             "apply began", w->first_output_s);
                gpc_info(s->log, "gpuctl: the job's first output came %.1f s after apply "
                         "began", w->first_output_s);
            }
            if (idle && ex >= 0 && job_ex[r] < 0 && nodes[i].phase == GPC_PHASE_RUNNING) {
                job_ex[r] = ex;
                gpc_lc_event(s, c->id, (int)r, "note", "the job ended with exit status %d; "
                             "the node stays up (lifecycle.idle_timeout)", ex);
            }
        }
        int all_done = 1; /* nodes still booting never joined: they do not count */
        const gpc_node_rec *bad = NULL;
        for (size_t i = 0; i < n; i++) {
            int ended = nodes[i].rank < nt && job_ex[nodes[i].rank] >= 0;
            all_done &= gpc_lc_is_terminal(nodes[i].phase) ||
                        nodes[i].phase == GPC_PHASE_BOOTING || ended;
            if (!bad && nodes[i].rank > 0 &&
                (nodes[i].phase == GPC_PHASE_FAILED || (ended && job_ex[nodes[i].rank] > 0)))
                bad = &nodes[i];
        }
        /* rank 0's job ended on a node that stays up: the job's end, as
         * the cluster's phase would say it of a node that ended with it */
        if (!gpc_lc_is_terminal(c->phase) && job_ex[0] >= 0) {
            c->exit_code = job_ex[0];
            c->phase = job_ex[0] == 0 && !bad ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
        }
        /* rank 0 gone without an exit status (preempted, lost): the other
         * nodes cannot finish without its rendezvous; no grace */
        head_lost = c->phase == GPC_PHASE_PREEMPTED ||
                    (c->phase == GPC_PHASE_FAILED && c->exit_code < 0);
        if (gpc_lc_is_terminal(c->phase)) {
            if (!head_end)
                head_end = now;
            final = all_done || head_lost || now - head_end >= WAIT_GRACE_S;
        } else if (bad) {
            if (!bad_since)
                bad_since = now;
            if (now - bad_since >= WAIT_GRACE_S) {
                final = 1;
                snprintf(bad_name, sizeof(bad_name), "%s", bad->name);
                bad_exit = job_ex[bad->rank] >= 0 ? job_ex[bad->rank] : bad->exit_code;
            }
        }
        if (stream_logs && final) {
            /* what arrived since, and each node's last, unfinished line */
            for (size_t i = 0; i < n; i++) {
                if (nodes[i].rank >= nt)
                    continue;
                gpc_error e;
                gpc_error_clear(&e);
                int ex;
                gpc_log_pump(s, pv, c, &nodes[i], LOG_MAY_WAIT, &offs[nodes[i].rank], &ex,
                             nt > 1, &parts[nodes[i].rank],
                             nodes[i].rank == 0 ? &fo_log : s->log, &e);
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
                stop_stragglers(s, pv, c, 1, "a worker failed and the job cannot finish");
            else if (head_lost)
                stop_stragglers(s, pv, c, 1, "rank 0 is gone and the job cannot finish");
            else
                stop_stragglers(s, pv, c, 0, "the job ended before this node joined");
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
        /* no later than the timeout (a poll longer than it waits no more) */
        double nap = poll_s;
        if (timeout_s > 0 && (double)(start + timeout_s - gpc_now()) < nap)
            nap = (double)(start + timeout_s - gpc_now());
        gpc_lc_sleep(nap > 0 ? nap : 0);
    }
    gpc_status_end(s->log);
    for (uint32_t r = 0; r < nt; r++)
        gpc_buf_free(&parts[r]);
    free(parts);
    free(offs);
    free(seen);
    free(replaced);
    free(ids);
    int kept_up = job_ex[0] >= 0;
    if (!rc && over_budget)
        rc = gpc_fail(err, GPC_ERR_BUDGET, "cluster '%s': budget.max_total %.2f USD would be "
                      "crossed (%.4f USD spent, %.4f USD/hour): its nodes were stopped "
                      "(their checkpoint_dir saved, as at max_duration); gpuctl cost %s shows the "
                      "ledger",
                      c->name, max_total, spent, rate, c->name);
    if (rc) {
        free(job_ex);
        return rc;
    }
    if (kept_up)
        gpc_info(s->log, "gpuctl: the job ended; the nodes of %s stay up for later jobs "
                 "until lifecycle.idle_timeout stops them (gpuctl destroy %s stops them now)",
                 c->name, c->name);
    if (bad_name[0])
        rc = gpc_fail(err, GPC_ERR_JOB_FAILED,
                      "cluster '%s': node %s failed (exit status %d) and rank 0 did not "
                      "finish within %d s; the other nodes were stopped",
                      c->name, bad_name, bad_exit, WAIT_GRACE_S);
    else
        rc = wait_outcome(s, c, job_ex, nt, err);
    free(job_ex);
    return rc;
}
