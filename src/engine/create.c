/* create.c - creating nodes: record before create, one node or one batch,
 * and adopting what an interrupted apply created */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "gpuctl/data.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

/*
 * Node name and client token for a rank in launch attempt `attempt`.  The
 * token is derived from the cluster and the attempt, so a create repeated
 * after a crash or a retry reuses it (no second node), and a new attempt
 * (another zone or offer) gets a new one.  At most 32 + 1 + 10 + 1 + 8 + 2
 * + 10 < 64 characters (EC2's ClientToken limit).
 */
void gpc_lc_node_ids(const gpc_cluster_rec *c, uint32_t rank, uint32_t attempt, char *name,
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

void gpc_lc_record_attempt(gpc_session *s, const gpc_open_provider *pv,
                           const gpc_cluster_rec *c, uint32_t rank,
                           const gpc_launch *l, const gpc_offer *of, const char *outcome,
                           const gpc_error *e)
{
    gpc_attempt_rec a = {
        .cluster_id = c->id, .rank = rank, .provider = pv->prov->name, .region = of->region,
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

static int adopt_late(gpc_session *s, const gpc_open_provider *pv,
                      gpc_node_rec **nds, size_t n, gpc_error *err);

/* Write where node `nd` is about to be created (record before create). */
static int record_intent(gpc_session *s, gpc_node_rec *nd, const gpc_offer *of,
                         const char *token, gpc_error *err)
{
    gpc_lc_set_str(&nd->region, of->region);
    gpc_lc_set_str(&nd->zone, of->zone);
    gpc_lc_set_str(&nd->instance_type, of->instance_type);
    gpc_lc_set_str(&nd->client_token, token);
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
int gpc_lc_outcome_unknown(const gpc_node_rec *nd)
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
        gpc_lc_set_str(&nds[i]->client_token, "");
        if (gpc_node_update(s->st, nds[i], &e))
            gpc_debug(s->log, "could not record node %s: %s", nds[i]->name, e.msg);
    }
}

/* Record what the provider made for node `nd`; on failure take it back. */
static int record_created(gpc_session *s, const gpc_open_provider *pv,
                          gpc_cluster_rec *c, gpc_node_rec *nd,
                          const gpc_offer *of, const gpc_node_status *ns, gpc_error *err)
{
    int64_t now = gpc_now();
    gpc_lc_set_str(&nd->provider_id, ns->provider_id);
    gpc_lc_set_str(&nd->private_ip, ns->private_ip);
    gpc_lc_take_data(nd, ns);
    if (ns->private_ip[0] == '\0')
        gpc_lc_set_str(&nd->private_ip, "");
    nd->phase = ns->phase == GPC_PHASE_PENDING ? GPC_PHASE_BOOTING : ns->phase;
    nd->exit_code = ns->exit_code;
    nd->started_at = now;
    nd->ended_at = 0;
    int rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_node_update(s->st, nd, err);
    if (!rc)
        rc = gpc_ledger_open(s->st, c->id, nd->id, pv->prov->name, of->instance_type,
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
        gpc_node_ref ref = {.region = nd->region, .provider_id = ns->provider_id,
                            .data = ns->data};
        if (pv->prov->delete_node(pv->ctx, &ref, &e) == 0)
            gpc_lc_set_str(&nd->provider_id, "");
        return rc;
    }
    gpc_lc_event(s, c->id, (int)nd->rank, "create", "created %s as %s in %s%s%s", nd->name,
                 nd->provider_id, of->region, of->zone[0] ? "/" : "", of->zone);
    return 0;
}

/* USD/hour of the whole cluster as launch `l` buys it: its head and
 * nodes - 1 workers (the node's budget end, render.h cluster_hourly). */
static double launch_hourly(const gpc_cluster_rec *c, const gpc_launch *l)
{
    uint32_t workers = c->nodes ? c->nodes - 1 : 0;
    return l->head->price_hourly + workers * l->worker->price_hourly;
}

/* Render the payload of node `rank` (rank_from: render.h; with
 * GPC_RANK_LAUNCH_INDEX, of a batch that starts at `rank`), finding the
 * rendezvous as the provider says (gpc_provider.rdzv).  Checks that its
 * user-data fits the provider's transport. */
static int render_for(gpc_session *s, const gpc_open_provider *pv,
                      const gpc_spec *spec, const gpc_cluster_rec *c,
                      uint32_t rank, gpc_rank_from rank_from, const gpc_offer *of,
                      double cluster_hourly, const char *head_ip, const char *workdir,
                      const char *ckpt, gpc_payload *pl, gpc_error *err)
{
    const gpc_userdata_rules *rules = pv->prov->userdata;
    /* checkpoint_dir on nodes that do not see this machine's files: kept
     * in the provider's store, under the cluster's name */
    char ckpt_url[1024] = "", store_ep[1024] = "";
    int keeps = ckpt && (pv->prov->caps & GPC_CAP_NODE_STORE) && pv->prov->store_url &&
                !(pv->prov->caps & GPC_CAP_SHARED_FILES) &&
                !(pv->prov->shares_files && pv->prov->shares_files(pv->ctx, of));
    if (keeps) {
        char path[128];
        snprintf(path, sizeof(path), GPC_CKPT_STORE_PATH_FMT, c->name);
        int rc = pv->prov->store_url(pv->ctx, of->region, path, ckpt_url, sizeof(ckpt_url), err);
        if (rc)
            return rc;
    }
    /* where the node's store functions reach the store: for the
     * checkpoints and for the data sets it fetches */
    if ((keeps || (s->data && s->data->fetch)) && pv->prov->store_endpoint) {
        int rc = pv->prov->store_endpoint(pv->ctx, of->region, store_ep, sizeof(store_ep), err);
        if (rc)
            return rc;
    }
    gpc_node_ctx ctx = {
        .cluster = c->name, .cluster_id = c->uid, .rank = rank, .nnodes = c->nodes,
        .head_addr = head_ip, .rdzv_port = c->rdzv_port, .workdir = workdir,
        .checkpoint_dir = ckpt,
        .ckpt_store = ckpt_url[0] ? ckpt_url : NULL, .store_endpoint = store_ep,
        /* the offer's fabric, unless the spec asks for none (then the
         * provider launches the node without it, too) */
        .fabric = of->fabric[0] && spec->resources.interconnect != GPC_IC_NONE ? of->fabric
                                                                               : NULL,
        .instance_type = of->instance_type,
        .rank_from = rank_from, .rdzv_from = pv->prov->rdzv, .deliver = s->deliver,
        .no_first_job = s->no_first_job,
        .spot = of->spot, .cluster_hourly = cluster_hourly,
    };
    if (s->data) { /* the spec's data sets, placed by apply (data.h) */
        ctx.data_dir = s->data->dir;
        ctx.data_fetch = s->data->fetch;
        ctx.data_names = (const char *const *)s->data->names;
        ctx.data_urls = (const char *const *)s->data->urls;
        ctx.n_data = s->data->n;
    }
    int rc = gpc_render_payload(spec, &ctx, rules, pl, err);
    if (!rc && rules && rules->max_raw) {
        char *enc = NULL;
        size_t enc_len;
        rc = gpc_payload_cloud_init(pl, rules, &enc, &enc_len, NULL, err);
        free(enc);
        if (rc)
            gpc_payload_free(pl);
    }
    return rc;
}

/* The request to create node `nd`; its end (end_s) as render_for
 * rendered it, at the cluster's price `cluster_hourly`. */
static gpc_node_request node_request(const gpc_session *s, const gpc_spec *spec,
                                     const gpc_cluster_rec *c,
                                     const gpc_node_rec *nd, const gpc_offer *of,
                                     const gpc_payload *pl, uint32_t attempt,
                                     double cluster_hourly)
{
    gpc_node_end end;
    gpc_spec_node_end(spec, cluster_hourly, &end);
    gpc_node_request req = {
        .end_s = end.end_s, .requested_at = nd->created_at,
        .cluster = c->name, .cluster_uid = c->uid, .rank = nd->rank, .nnodes = c->nodes,
        .name = nd->name, .client_token = nd->client_token, .offer = of,
        .image = spec->image, .payload = pl,
        .labels = spec->labels, .n_labels = spec->n_labels, .spec = spec,
        .attempt = attempt,
        .secrets = s->secrets, .n_secrets = s->n_secrets, .spec_hash = c->spec_hash,
    };
    return req;
}

/* Render and create node `nd`; record it.  head_ip NULL for rank 0.  A
 * node whose create has an unknown outcome goes again with its own token
 * (and `offer` is the one it was made with: recorded_offer). */
int gpc_lc_create_one(gpc_session *s, const gpc_open_provider *pv,
                      const gpc_spec *spec, gpc_cluster_rec *c,
                      gpc_node_rec *nd, const gpc_launch *l, const gpc_offer *offer,
                      const char *head_ip, const char *workdir, const char *ckpt,
                      gpc_error *err)
{
    char name[128], token[72];
    gpc_lc_node_ids(c, nd->rank, l->attempt, name, sizeof(name), token, sizeof(token));
    gpc_payload pl = {0};
    int resumed = gpc_lc_outcome_unknown(nd);
    gpc_rank_from rf = gpc_provider_rank_source(pv->prov, nd->rank, 0);
    int rc = render_for(s, pv, spec, c, nd->rank, rf, offer, launch_hourly(c, l), head_ip,
                        workdir, ckpt, &pl, err);
    if (!rc && !resumed)
        rc = record_intent(s, nd, offer, token, err);
    int sent = 0;
    gpc_node_status ns;
    memset(&ns, 0, sizeof(ns));
    gpc_lc_ref r;
    int opened = 0;
    if (!rc) {
        opened = 1;
        rc = gpc_lc_ref_open(s, c, &r, err);
    }
    if (!rc) {
        gpc_node_request req = node_request(s, spec, c, nd, offer, &pl, l->attempt,
                                            launch_hourly(c, l));
        req.ref = &r.ref;
        gpc_debug(s->log, "creating node %s (token %s)", nd->name, nd->client_token);
        if (gpc_lc_fault("fail-create", nd->rank)) {
            rc = gpc_fail(err, (gpc_code)gpc_lc_fault_code, "%s: injected %s failure creating %s",
                          pv->prov->name, gpc_code_name((gpc_code)gpc_lc_fault_code), nd->name);
        } else {
            sent = 1;
            gpc_lc_fault_kill_in_create(nd->rank);
            rc = pv->prov->create_node(pv->ctx, &req, &ns, err);
        }
        gpc_lc_fault("kill-before-record", nd->rank);
    }
    if (opened)
        gpc_lc_ref_close(s, c, &r);
    gpc_payload_free(&pl);
    if (rc && resumed && sent && adopt_late(s, pv, &nd, 1, err) == 0) {
        gpc_lc_record_attempt(s, pv, c, nd->rank, l, offer, "created", NULL);
        return 0;
    }
    gpc_lc_record_attempt(s, pv, c, nd->rank, l, offer, rc ? "error" : "created", rc ? err : NULL);
    if (rc) {
        gpc_lc_event(s, c->id, (int)nd->rank, "error", "create failed: %s", err->msg);
        settle_intent(s, &nd, 1, rc, sent || resumed);
        return rc;
    }
    rc = record_created(s, pv, c, nd, offer, &ns, err);
    if (!rc)
        gpc_lc_fault("kill-after-record", nd->rank);
    return rc;
}

/*
 * Create nodes nds[0..n-1] (consecutive ranks) in one provider call
 * (create_nodes): one user-data, each node's rank from its launch index.
 * made[i] is set for each node recorded.
 */
int gpc_lc_create_batch(gpc_session *s, const gpc_open_provider *pv,
                        const gpc_spec *spec, gpc_cluster_rec *c,
                        gpc_node_rec **nds, size_t n, const gpc_launch *l, const gpc_offer *of,
                        const char *head_ip, const char *workdir, const char *ckpt, int *made,
                        gpc_error *err)
{
    char token[72];
    gpc_payload pl = {0};
    int resumed = gpc_lc_outcome_unknown(nds[0]);
    gpc_rank_from rf = gpc_provider_rank_source(pv->prov, nds[0]->rank, 1);
    int rc = render_for(s, pv, spec, c, nds[0]->rank, rf, of, launch_hourly(c, l), head_ip,
                        workdir, ckpt, &pl, err);
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
    gpc_lc_ref r;
    int opened = 0;
    if (!rc) {
        opened = 1;
        rc = gpc_lc_ref_open(s, c, &r, err);
    }
    gpc_node_request *reqs = rc ? NULL : calloc(n, sizeof(*reqs));
    gpc_node_status *ns = rc ? NULL : calloc(n, sizeof(*ns));
    if (!rc && (!reqs || !ns))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        reqs[i] = node_request(s, spec, c, nds[i], of, &pl, l->attempt, launch_hourly(c, l));
        reqs[i].client_token = token;
        reqs[i].ref = &r.ref;
    }
    if (!rc) {
        gpc_debug(s->log, "creating nodes %s..%s in one call (token %s)", nds[0]->name,
                  nds[n - 1]->name, token);
        for (size_t i = 0; !rc && i < n; i++)
            if (gpc_lc_fault("fail-create", nds[i]->rank))
                rc = gpc_fail(err, (gpc_code)gpc_lc_fault_code,
                              "%s: injected %s failure creating %s",
                              pv->prov->name, gpc_code_name((gpc_code)gpc_lc_fault_code),
                              nds[i]->name);
        if (!rc) {
            sent = 1;
            for (size_t i = 0; i < n; i++)
                gpc_lc_fault_kill_in_create(nds[i]->rank);
            rc = pv->prov->create_nodes(pv->ctx, reqs, n, ns, err);
        }
        for (size_t i = 0; i < n; i++)
            gpc_lc_fault("kill-before-record", nds[i]->rank);
    }
    if (opened)
        gpc_lc_ref_close(s, c, &r);
    if (rc && resumed && sent && adopt_late(s, pv, nds, n, err) == 0) {
        for (size_t i = 0; i < n; i++) {
            made[i] = 1;
            gpc_lc_record_attempt(s, pv, c, nds[i]->rank, l, of, "created", NULL);
        }
        gpc_payload_free(&pl);
        free(reqs);
        free(ns);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        gpc_lc_record_attempt(s, pv, c, nds[i]->rank, l, of, rc ? "error" : "created",
                              rc ? err : NULL);
    if (rc) {
        gpc_lc_event(s, c->id, (int)nds[0]->rank, "error", "create of %zu node(s) failed: %s", n,
                     err->msg);
        settle_intent(s, nds, n, rc, sent || resumed);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        rc = record_created(s, pv, c, nds[i], of, &ns[i], err);
        if (!rc) {
            made[i] = 1;
            gpc_lc_fault("kill-after-record", nds[i]->rank);
        }
    }
    /* a record that failed midway: the nodes not yet recorded go back */
    for (size_t i = 0; rc && ns && i < n; i++) {
        if (made[i] || !ns[i].provider_id[0])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        gpc_node_ref ref = {.region = nds[i]->region, .provider_id = ns[i].provider_id,
                            .data = ns[i].data};
        pv->prov->delete_node(pv->ctx, &ref, &e);
    }
    gpc_payload_free(&pl);
    free(reqs);
    free(ns);
    return rc;
}

/*
 * A node whose create has an unknown outcome (gpc_lc_outcome_unknown) may exist:
 * ask the provider by its client token and record what it says.  *found
 * is 1 when the provider has it, 0 when the provider says it has none.
 * A lookup that fails is not "none": its error is returned and nothing is
 * recorded, so that no caller makes the node again on a guess.
 */
int gpc_lc_adopt(gpc_session *s, const gpc_open_provider *pv,
                 gpc_node_rec *nd, int *found, gpc_error *err)
{
    *found = 0;
    if (!gpc_lc_outcome_unknown(nd) || !pv->prov->find_node)
        return 0;
    gpc_node_status ns;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = pv->prov->find_node(pv->ctx, nd->region, nd->client_token, &ns, &e);
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
    gpc_lc_set_str(&nd->provider_id, ns.provider_id);
    gpc_lc_set_str(&nd->private_ip, ns.private_ip);
    gpc_lc_take_data(nd, &ns);
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
        rc = gpc_ledger_open(s->st, nd->cluster_id, nd->id, pv->prov->name, nd->instance_type,
                             nd->price_hourly, nd->started_at, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (rc)
        return rc;
    gpc_lc_event(s, nd->cluster_id, (int)nd->rank, "adopt",
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
static int adopt_late(gpc_session *s, const gpc_open_provider *pv,
                      gpc_node_rec **nds, size_t n, gpc_error *err)
{
    int all = 1;
    for (size_t i = 0; all && i < n; i++) {
        gpc_error e;
        gpc_error_clear(&e);
        int found = 0;
        all = gpc_lc_adopt(s, pv, nds[i], &found, &e) == 0 && (found || nds[i]->provider_id[0]);
    }
    if (!all)
        return GPC_ERR_NOT_FOUND;
    gpc_error_clear(err);
    return 0;
}
