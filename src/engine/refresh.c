/* refresh.c - gpc_cluster_refresh: what the provider says of a cluster's
 * nodes, recorded */
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "gpuctl/util.h"

const gpc_node_rec *gpc_cluster_failed_node(const gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((i + 1 == n || nodes[i + 1].rank != nodes[i].rank) &&
            nodes[i].phase == GPC_PHASE_FAILED && nodes[i].exit_code > 0)
            return &nodes[i];
    return NULL;
}

/* Derive the cluster's phase from its nodes, and its exit code (rank
 * 0's): rank 0 decides the job while it runs and when it ends other than
 * with 0; once it exited 0, the job succeeded only if no node's job
 * failed: a node whose job exited non-zero makes it failed
 * (gpc_cluster_failed_node says which).  A cluster some of whose nodes are not made while its last
 * launch attempt failed (launch_failed: an apply that failed and could
 * not close the record, or left nodes it could not remove) is `failed`
 * until an apply makes them; one with none made and no failure yet is
 * `pending`. */
static gpc_phase summarise(const gpc_cluster_rec *c, const gpc_node_rec *nodes, size_t n,
                           int launch_failed, int *exit_code)
{
    *exit_code = -1;
    if (c->destroyed_at)
        return GPC_PHASE_TERMINATED;
    const gpc_node_rec *head = NULL, *bad = gpc_cluster_failed_node(nodes, n);
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
        return bad ? GPC_PHASE_FAILED : head->phase;
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

/* Apply one describe result to a node record; returns 1 if it changed. */
static int absorb(gpc_session *s, gpc_node_rec *n, const gpc_node_status *ns, int64_t now)
{
    int changed = 0;
    if (ns->private_ip[0] && strcmp(ns->private_ip, n->private_ip) != 0) {
        gpc_lc_set_str(&n->private_ip, ns->private_ip);
        changed = 1;
    }
    if (ns->data[0] && strcmp(ns->data, n->provider_data) != 0) {
        gpc_lc_take_data(n, ns);
        changed = 1;
    }
    if (ns->phase != n->phase || ns->exit_code != n->exit_code) {
        if (ns->phase != n->phase)
            gpc_lc_event(s, n->cluster_id, (int)n->rank, "phase", "%s -> %s%s%s",
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

/* What the provider last said of node `rank` (its last phase event's
 * detail, or its last note), "" when nothing. */
static const char *last_said(const gpc_event_rec *ev, size_t n, int rank)
{
    for (size_t i = n; i-- > 0;) {
        if (ev[i].rank != rank)
            continue;
        if (strcmp(ev[i].kind, "note") == 0)
            return ev[i].message;
        if (strcmp(ev[i].kind, "phase") == 0) {
            const char *d = strstr(ev[i].message, ": ");
            return d ? d + 2 : "";
        }
    }
    return "";
}

/*
 * Say what the provider says of a node when it matters to the person
 * waiting: while it is still booting, each new word (a Slurm job pending
 * for Resources, then for Priority; recorded as a "note" event), and why it
 * ended when it ends other than by succeeding (the phase event records it).
 */
static void note_node(gpc_session *s, const gpc_cluster_rec *c, const gpc_node_rec *nd,
                      const gpc_node_status *ns, gpc_event_rec **ev, size_t *nev, int *loaded)
{
    if (!ns->detail[0])
        return;
    if (ns->phase != nd->phase && (ns->phase == GPC_PHASE_FAILED ||
                                   ns->phase == GPC_PHASE_PREEMPTED ||
                                   ns->phase == GPC_PHASE_TERMINATED)) {
        gpc_info(s->log, "%s: node %u %s: %s", c->name, nd->rank, gpc_phase_name(ns->phase),
                 ns->detail);
        return;
    }
    if (ns->phase != GPC_PHASE_BOOTING || nd->phase != GPC_PHASE_BOOTING)
        return;
    gpc_error e;
    gpc_error_clear(&e);
    if (!*loaded) {
        *loaded = 1;
        if (gpc_event_list(s->st, c->id, ev, nev, &e))
            return;
    }
    if (strcmp(last_said(*ev, *nev, (int)nd->rank), ns->detail) == 0)
        return;
    gpc_lc_event(s, c->id, (int)nd->rank, "note", "%s", ns->detail);
    gpc_info(s->log, "%s: node %u: %s", c->name, nd->rank, ns->detail);
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

/*
 * Ask the provider about the nodes that may still change: one
 * describe_nodes call for all of them when the provider has it, else one
 * describe_node each.  have[i] tells which ns[i] were filled.
 */
static int describe_live(gpc_session *s, const gpc_open_provider *pv,
                         gpc_cluster_rec *c, const gpc_node_rec *nodes,
                         size_t n, gpc_node_status *ns, int *have, gpc_error *err)
{
    int rc = 0;
    if (!pv->prov->describe_nodes) {
        for (size_t i = 0; !rc && i < n; i++) {
            const gpc_node_rec *nd = &nodes[i];
            if (!nd->provider_id[0] || (gpc_lc_is_terminal(nd->phase) && nd->ended_at))
                continue;
            gpc_node_ref ref = gpc_lc_node_ref(nd);
            rc = pv->prov->describe_node(pv->ctx, &ref, &ns[i], err);
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
        if (!nodes[i].provider_id[0] || (gpc_lc_is_terminal(nodes[i].phase) && nodes[i].ended_at))
            continue;
        ids[k] = nodes[i].provider_id;
        at[k++] = i;
    }
    gpc_lc_ref r;
    int opened = 0;
    if (!rc && k) {
        opened = 1;
        rc = gpc_lc_ref_open(s, c, &r, err);
    }
    if (!rc && k)
        rc = pv->prov->describe_nodes(pv->ctx, &r.ref, ids, k, out, err);
    if (opened)
        gpc_lc_ref_close(s, c, &r);
    for (size_t j = 0; !rc && j < k; j++) {
        ns[at[j]] = out[j];
        have[at[j]] = 1;
    }
    free(ids);
    free(at);
    free(out);
    return rc;
}

/* The cluster's nodes from the state and what the provider says of each
 * (see describe_live).  The caller frees *nodes (gpc_node_list_free), *ns
 * and *have, also on failure. */
int gpc_lc_describe_cluster(gpc_session *s, const gpc_open_provider *pv,
                            gpc_cluster_rec *c, gpc_node_rec **nodes,
                            size_t *n, gpc_node_status **ns, int **have, gpc_error *err)
{
    int rc = gpc_node_list(s->st, c->id, 0, nodes, n, err);
    if (rc)
        return rc;
    *ns = calloc(*n ? *n : 1, sizeof(**ns));
    *have = calloc(*n ? *n : 1, sizeof(int));
    if (!*ns || !*have)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    return describe_live(s, pv, c, *nodes, *n, *ns, *have, err);
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
    gpc_open_provider op;
    const gpc_open_provider *pv = &op;
    rc = gpc_session_provider(s, c->provider, &op, err);
    if (rc)
        return rc;
    /* Ask the provider first, outside any transaction (it may be slow). */
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_node_status *ns = NULL;
    int *have = NULL;
    rc = gpc_lc_describe_cluster(s, pv, c, &nodes, &n, &ns, &have, err);
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
        gpc_event_rec *ev = NULL;
        size_t nev = 0;
        int ev_loaded = 0;
        for (size_t j = 0; !rc && !c->destroyed_at && j < ncur; j++) {
            for (size_t i = 0; i < n; i++) {
                if (!have[i] || nodes[i].id != cur[j].id)
                    continue;
                if (strcmp(nodes[i].provider_id, cur[j].provider_id) != 0)
                    break;
                note_node(s, c, &cur[j], &ns[i], &ev, &nev, &ev_loaded);
                if (absorb(s, &cur[j], &ns[i], now))
                    rc = gpc_node_update(s->st, &cur[j], err);
                break;
            }
        }
        gpc_event_list_free(ev, nev);
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
                    gpc_lc_event(s, c->id, -1, "phase", "cluster %s -> %s",
                                 gpc_phase_name(c->phase), gpc_phase_name(ph));
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
