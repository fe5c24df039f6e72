/*
 * recover.c - spot recovery while `apply --wait` waits for a job: a worker
 * node the provider took back (preempted) or that vanished (terminated
 * without an exit status, not by gpuctl) while rank 0's job runs is
 * replaced alone, from the offer the cluster was made from, and joins the
 * running job: the survivors' torchrun restarts its workers into a new
 * rendezvous round (the bootstrap's --max_restarts on clusters that buy
 * spot, render.c), which the new node joins with the same rendezvous id;
 * the job resumes from its latest checkpoint (the node's own, or the one
 * in the store that the new node restores at boot).  Healthy nodes are
 * never touched: only torchrun restarts their worker processes.
 *
 * What is a loss is what the provider says of the node after gpuctl's
 * refresh (preempted; terminated or failed without an exit status), never
 * a failed or slow describe: the refresh keeps the last phase it knew
 * until the provider answers again.  A lost head is not replaced here:
 * the rendezvous lives on it, so the job cannot go on (the seam's rule,
 * gpc_provider_head_loss, is for a later apply).
 *
 * Each loss and each replacement is a `recovery` event of the node's
 * rank, which `status` shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/util.h"
#include "lifecycle.h"

/* A node of rank > 0 that is lost: taken back, or gone without an exit
 * status. */
static int lost(const gpc_node_rec *nd)
{
    if (nd->rank == 0 || !nd->provider_id[0])
        return 0;
    if (nd->phase == GPC_PHASE_PREEMPTED)
        return 1;
    return (nd->phase == GPC_PHASE_TERMINATED || nd->phase == GPC_PHASE_FAILED) &&
           nd->exit_code < 0 && nd->ended_at;
}

int gpc_lc_recover(gpc_session *s, gpc_lc_recovery *rv, gpc_cluster_rec *c,
                   unsigned char *replaced, gpc_error *err)
{
    if (!rv || c->destroyed_at || c->phase != GPC_PHASE_RUNNING)
        return 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    if (rc)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += lost(&nodes[i]);
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
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    k = 0;
    for (size_t i = 0; !rc && i < n; i++)
        k += lost(&nodes[i]);
    if (!rc && (c->destroyed_at || c->phase != GPC_PHASE_RUNNING || !k)) {
        gpc_cluster_unlock(lockfd);
        gpc_node_list_free(nodes, n);
        return 0;
    }
    if (!rc)
        rc = gpc_session_provider(s, c->provider, &op, err);
    int64_t now = gpc_now();
    /* the lost nodes' records end; a pending one for each rank takes over */
    for (size_t i = 0; !rc && i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (!lost(nd))
            continue;
        gpc_lc_event(s, c->id, (int)nd->rank, "recovery", "node %s (%s) %s while the job "
                     "runs: replacing it", nd->name, nd->provider_id,
                     nd->phase == GPC_PHASE_PREEMPTED ? "was preempted" : "is gone");
        gpc_info(s->log, "gpuctl: node %s (%s) %s: replacing it; the other nodes keep their "
                 "job", nd->name, nd->provider_id,
                 nd->phase == GPC_PHASE_PREEMPTED ? "was preempted" : "is gone");
        rc = gpc_lc_node_deleted(s, nd, now, err);
        gpc_cluster_rec one = *c;
        one.nodes = nd->rank + 1;
        if (!rc)
            rc = gpc_lc_nodes_record(s, &one, nd->rank, 0, now, err);
        if (!rc && replaced && nd->rank < c->nodes)
            replaced[nd->rank] = 1;
    }
    gpc_node_list_free(nodes, n);
    if (rc) {
        gpc_cluster_unlock(lockfd);
        return rc;
    }
    rv->used++;
    if (rv->prepare)
        rc = rv->prepare(rv->ud, s, &op, err);
    gpc_apply_result res;
    memset(&res, 0, sizeof(res));
    /* the workdir and secrets go to the new node only: the others' job
     * holds their job.lock, which a delivery waits for */
    s->deliver_since = now;
    if (!rc)
        rc = gpc_lc_create_missing(s, &op, rv->spec, c, rv->chosen, rv->workdir, rv->ckpt,
                                   rv->poll_s, &res, err);
    s->deliver_since = 0;
    if (rv->done)
        rv->done(rv->ud, s);
    gpc_cluster_unlock(lockfd);
    if (rc) {
        gpc_lc_event(s, c->id, -1, "recovery", "replacing the lost node(s) failed: %s; they "
                     "stay recorded (gpuctl apply makes them)", err->msg);
        return rc;
    }
    /* say what took each lost node's place */
    rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (replaced && nodes[i].rank < c->nodes && replaced[nodes[i].rank] &&
            nodes[i].created_at >= now) {
            gpc_lc_event(s, c->id, (int)nodes[i].rank, "recovery", "replaced by %s",
                         nodes[i].provider_id);
            gpc_info(s->log, "gpuctl: node %s replaced by %s; it joins the running job",
                     nodes[i].name, nodes[i].provider_id);
        }
    gpc_node_list_free(nodes, n);
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
