/*
 * recover.c - spot recovery while `apply --wait` or `watch` waits for a
 * job: a worker node the provider took back (preempted) or that vanished
 * (terminated without an exit status, not by gpuctl) while rank 0's job
 * runs is replaced alone, from the offer the cluster was made from, and
 * joins the running job: the survivors' torchrun restarts its workers into
 * a new rendezvous round (the bootstrap's --max_restarts on clusters that
 * buy spot, render.c), which the new node joins with the same rendezvous
 * id; the job resumes from its latest checkpoint (the node's own, or the
 * one in the store that the new node restores at boot).  Healthy nodes
 * are never touched: only torchrun restarts their worker processes.
 *
 * A lost head (rank 0: the rendezvous lives on it) is replaced by the
 * provider's head-loss rule (gpc_provider_head_loss, applied by
 * gpc_lc_create_missing as for any apply): where the workers' bootstrap
 * names the head's address, they are made anew with it; where the group
 * is the unit, the group; where the rendezvous name outlives the head,
 * the head alone.  The new head's bootstrap runs the first job again,
 * which resumes from the checkpoint in the store.  With spot.head:
 * on-demand the head is bought on-demand (the offer's head), so a spot
 * interruption cannot take it.
 *
 * What is a loss is what the provider says of the node after gpuctl's
 * refresh (preempted; terminated or failed without an exit status), never
 * a failed or slow describe: the refresh keeps the last phase it knew
 * until the provider answers again.
 *
 * Each loss and each replacement is a `recovery` event of the node's
 * rank, which `status` shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/util.h"
#include "lifecycle.h"

/* A node record that says its node is lost: taken back, or gone without
 * an exit status. */
static int lost(const gpc_node_rec *nd)
{
    if (!nd->provider_id[0])
        return 0;
    if (nd->phase == GPC_PHASE_PREEMPTED)
        return 1;
    return (nd->phase == GPC_PHASE_TERMINATED || nd->phase == GPC_PHASE_FAILED) &&
           nd->exit_code < 0 && nd->ended_at;
}

/*
 * The lost nodes of a cluster's node rows (gpc_node_list with terminated
 * ones, by rank then id): mark[i] = 1 for each newest row of a rank the
 * cluster has that is lost() and that gpuctl did not delete itself (a
 * "delete" event of that rank naming the node's provider id: a budget
 * stop, the stop of a job that cannot finish, a destroy, a replacement);
 * returns how many.
 */
/* Does `msg` name provider id `id` as a word of its own ("stopped i-0ab:
 * ...", "deleted i-0ab", "removed i-0ab ...")? */
static int named(const char *msg, const char *id)
{
    size_t len = strlen(id);
    for (const char *p = msg; len && (p = strstr(p, id)); p += len)
        if ((p == msg || p[-1] == ' ') && (!p[len] || p[len] == ' ' || p[len] == ':'))
            return 1;
    return 0;
}

static size_t mark_lost(gpc_session *s, const gpc_cluster_rec *c, const gpc_node_rec *nodes,
                        size_t n, unsigned char *mark)
{
    gpc_event_rec *ev = NULL;
    size_t ne = 0, k = 0;
    int events = 0; /* 1: read, -1: could not be read */
    for (size_t i = 0; i < n; i++) {
        const gpc_node_rec *nd = &nodes[i];
        mark[i] = 0;
        if ((i + 1 < n && nodes[i + 1].rank == nd->rank) || nd->rank >= c->nodes || !lost(nd))
            continue;
        int ours = 0;
        if (nd->phase == GPC_PHASE_TERMINATED) {
            gpc_error e;
            gpc_error_clear(&e);
            if (!events)
                events = gpc_event_list(s->st, c->id, &ev, &ne, &e) == 0 ? 1 : -1;
            ours = events < 0; /* not known to be lost */
            for (size_t j = 0; j < ne; j++)
                ours |= ev[j].rank == (int)nd->rank && strcmp(ev[j].kind, "delete") == 0 &&
                        named(ev[j].message, nd->provider_id);
        }
        mark[i] = !ours;
        k += mark[i];
    }
    gpc_event_list_free(ev, ne);
    return k;
}

/* The cluster's job still runs, or its head is lost while it ran (rank 0
 * preempted, or gone without an exit status): what recovery acts on. */
static int job_on(const gpc_cluster_rec *c)
{
    return c->phase == GPC_PHASE_RUNNING || c->phase == GPC_PHASE_PREEMPTED ||
           (c->phase == GPC_PHASE_FAILED && c->exit_code < 0);
}

int gpc_lc_recover(gpc_session *s, gpc_lc_recovery *rv, gpc_cluster_rec *c,
                   unsigned char *replaced, gpc_error *err)
{
    if (!rv || rv->stale || c->destroyed_at || !job_on(c))
        return 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 1, &nodes, &n, err);
    if (rc)
        return rc;
    unsigned char *mark = calloc(n ? n : 1, 1);
    if (!mark) {
        gpc_node_list_free(nodes, n);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    size_t k = mark_lost(s, c, nodes, n, mark);
    free(mark);
    mark = NULL;
    if (!k) {
        gpc_node_list_free(nodes, n);
        return 0;
    }
    if (rv->used >= rv->max) {
        if (!rv->said_max)
            gpc_lc_event(s, c->id, -1, "recovery", "%zu node(s) lost; not replaced: %d "
                         "replacement(s) already made while waiting (the most)", k, rv->used);
        rv->said_max = 1;
        gpc_node_list_free(nodes, n);
        return 0;
    }
    /* the cluster's lock, as apply's: a destroy (or apply) that holds it
     * now goes first, and this poll replaces nothing */
    int lockfd = -1;
    gpc_error le;
    gpc_error_clear(&le);
    if (gpc_cluster_lock(s, c->name, 0, &lockfd, &le) != 0) {
        gpc_node_list_free(nodes, n);
        return le.code == GPC_ERR_LOCKED ? 0 : gpc_fail(err, le.code, "%s", le.msg);
    }
    /* under the lock, the cluster as it is now: another gpuctl that held
     * the lock may have replaced the node, or destroyed the cluster */
    gpc_open_provider op;
    gpc_node_list_free(nodes, n);
    nodes = NULL;
    n = 0;
    rc = gpc_cluster_refresh(s, c, err);
    if (!rc)
        rc = gpc_node_list(s->st, c->id, 1, &nodes, &n, err);
    if (!rc && !(mark = calloc(n ? n : 1, 1)))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    k = rc ? 0 : mark_lost(s, c, nodes, n, mark);
    /* an apply of another spec meanwhile (a re-run, a replacement): this
     * controller's spec and offer are not the cluster's any more */
    char hash[65] = "";
    gpc_error he;
    gpc_error_clear(&he);
    if (!rc && k && gpc_spec_hash(rv->spec, hash, &he) == 0 && strcmp(hash, c->spec_hash) != 0) {
        rv->stale = 1;
        gpc_lc_event(s, c->id, -1, "recovery", "%zu node(s) lost; not replaced: the cluster "
                     "was applied again with another spec (%.12s) since this controller "
                     "began", k, c->spec_hash);
        gpc_info(s->log, "gpuctl: cluster '%s' was applied again with another spec: this "
                 "controller replaces no node (gpuctl watch %s, started again, does)", c->name,
                 c->name);
        k = 0;
    }
    if (!rc && (c->destroyed_at || !job_on(c) || !k)) {
        gpc_cluster_unlock(lockfd);
        gpc_node_list_free(nodes, n);
        free(mark);
        return 0;
    }
    if (!rc)
        rc = gpc_session_provider(s, c->provider, &op, err);
    int64_t now = gpc_now();
    /* the job starts again (from its checkpoint) when the head is lost, or
     * when the provider makes the cluster's nodes as one group */
    int group = !rc && gpc_provider_head_loss(op.prov) == GPC_HEAD_LOSS_GROUP;
    int anew = group;
    /* the lost nodes' records end; a pending one for each rank takes over */
    size_t taken = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (!mark[i])
            continue;
        /* first made sure of at the provider (deleting a node already gone
         * succeeds): one a describe only missed (EC2's lists are
         * eventually consistent) must not bill on beside its replacement */
        gpc_error de;
        gpc_error_clear(&de);
        if (gpc_lc_delete(&op, nd, &de) != 0) {
            gpc_info(s->log, "gpuctl: node %s (%s) looks lost, but deleting it failed (%s); "
                     "it is not replaced until that succeeds", nd->name, nd->provider_id,
                     de.msg);
            continue;
        }
        taken++;
        anew |= nd->rank == 0;
        gpc_lc_event(s, c->id, (int)nd->rank, "recovery", "node %s (%s) %s while the job "
                     "runs: replacing it", nd->name, nd->provider_id,
                     nd->phase == GPC_PHASE_PREEMPTED ? "was preempted" : "is gone");
        gpc_info(s->log, "gpuctl: node %s (%s) %s: replacing it; %s", nd->name,
                 nd->provider_id, nd->phase == GPC_PHASE_PREEMPTED ? "was preempted" : "is gone",
                 nd->rank == 0 ? "it was the head, so the job starts again from its checkpoint"
                 : group ? "the provider makes the cluster's nodes as one group, so the job "
                           "starts again from its checkpoint"
                 : anew ? "the head is lost too" : "the other nodes keep their job");
        gpc_lc_recover_lost(s, rv, c, nd); /* zones.c: its zone cools down */
        rc = gpc_lc_node_deleted(s, nd, now, err);
        gpc_cluster_rec one = *c;
        one.nodes = nd->rank + 1;
        if (!rc)
            rc = gpc_lc_nodes_record(s, &one, nd->rank, 0, now, err);
    }
    /* the survivors' zone (the lowest rank's still up), before the list goes */
    char zone[48] = "";
    for (size_t i = 0; !rc && i < n && !zone[0]; i++)
        if (!mark[i] && nodes[i].provider_id[0] && !nodes[i].ended_at)
            snprintf(zone, sizeof(zone), "%s", nodes[i].zone);
    gpc_node_list_free(nodes, n);
    free(mark);
    if (rc || !taken) {
        gpc_cluster_unlock(lockfd);
        return rc;
    }
    rv->used++;
    /* zones.c: on-demand after spot.fallback_after interruptions (policy
     * auto), another zone when the survivors' cools down */
    const gpc_plan_offer *buy = gpc_lc_recover_offer(s, rv, &op, c, zone);
    if (rv->prepare)
        rc = rv->prepare(rv->ud, s, &op, err);
    gpc_apply_result res;
    memset(&res, 0, sizeof(res));
    /* the workdir and secrets go to the new node only: the others' job
     * holds their job.lock, which a delivery waits for */
    s->deliver_since = now;
    if (!rc)
        rc = gpc_lc_create_missing(s, &op, rv->spec, c, buy, rv->workdir, rv->ckpt,
                                   rv->poll_s, &res, err);
    s->deliver_since = 0;
    s->unpin_zone = 0;
    if (rv->done)
        rv->done(rv->ud, s);
    gpc_cluster_unlock(lockfd);
    if (rc) {
        gpc_lc_event(s, c->id, -1, "recovery", "replacing the lost node(s) failed: %s; they "
                     "stay recorded (gpuctl apply makes them)", err->msg);
        return rc;
    }
    /* say what took each lost node's place (and, after the head, each
     * worker the provider's head-loss rule made anew with it) */
    rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].provider_id[0] && nodes[i].started_at >= now) {
            if (replaced && nodes[i].rank < c->nodes)
                replaced[nodes[i].rank] = 1;
            gpc_lc_event(s, c->id, (int)nodes[i].rank, "recovery", "replaced by %s",
                         nodes[i].provider_id);
            gpc_info(s->log, "gpuctl: node %s replaced by %s; %s", nodes[i].name,
                     nodes[i].provider_id, anew ? "the job starts again from its latest "
                     "checkpoint in the store" : "it joins the running job");
        }
    gpc_node_list_free(nodes, n);
    /* the cluster's phase from its new head */
    if (!rc && anew)
        rc = gpc_cluster_refresh(s, c, err);
    return rc;
}

int gpc_lc_recoverable(gpc_session *s, const gpc_cluster_rec *c, const gpc_spec *spec,
                       char *why, size_t size)
{
    if (why && size)
        why[0] = '\0';
    if (spec->spot.policy == GPC_SPOT_ON_DEMAND && spec->spot.head == GPC_SPOT_ON_DEMAND)
        return 0;
    /* the latest job the cluster's events record ("job ID: spec ...",
     * rerun.c); none: a cluster an older gpuctl made, which ran only its
     * first */
    char job[16] = "1";
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_event_list(s->st, c->id, &ev, &n, &e) == 0)
        for (size_t i = 0; i < n; i++) {
            const char *m = ev[i].message;
            size_t len = strcspn(m + (strncmp(m, "job ", 4) == 0 ? 4 : 0), ":");
            if (strcmp(ev[i].kind, "job") == 0 && strncmp(m, "job ", 4) == 0 &&
                len < sizeof(job))
                snprintf(job, sizeof(job), "%.*s", (int)len, m + 4);
        }
    gpc_event_list_free(ev, n);
    if (strcmp(job, "1") == 0)
        return 1;
    if (why && size)
        snprintf(why, size, "the job running is job %s (a re-run or exec); a new node's "
                 "bootstrap runs only the first, so lost nodes are not replaced", job);
    return 0;
}
