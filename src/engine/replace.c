/*
 * replace.c - a spec whose shape changed applied to a live cluster
 * (GPC_PLAN_REPLACE): its nodes are deleted, the cluster's record takes the
 * new spec, and new node records wait for apply's create (apply.c), from
 * the plan's chosen offer, on any provider of the spec.
 *
 * What stays is the cluster itself: its name and uid (so the store's
 * prefix, where checkpoint_dir and the data sets are), its events and
 * ledger.  The new nodes restore the latest checkpoint from the store at
 * boot, as a destroyed and re-applied cluster's would, and run the job
 * from its start.  The old nodes go first: a replacement never bills both
 * sets at once, and a node type the account has quota for only once is not
 * refused.
 *
 * A resize (GPC_PLAN_RESIZE: only the node count changed, on nodes kept up
 * for later jobs) keeps the live nodes: those of the ranks no longer wanted
 * go, the new ranks are recorded for apply's create, which boots them with
 * no job of their own (gpc_session.no_first_job), and apply then runs the
 * job again on every node through their job runners (rerun.c), each job
 * file carrying the new world size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/plan.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "lifecycle.h"

int gpc_lc_nodes_record(gpc_session *s, const gpc_cluster_rec *c, uint32_t from,
                        int first_attempt, int64_t now, gpc_error *err)
{
    int rc = 0;
    for (uint32_t r = from; !rc && r < c->nodes; r++) {
        char name[128], token[72];
        gpc_lc_node_ids(c, r, 1, name, sizeof(name), token, sizeof(token));
        gpc_node_rec nd;
        memset(&nd, 0, sizeof(nd));
        nd.cluster_id = c->id;
        nd.rank = r;
        nd.name = name;
        nd.provider = c->provider;
        nd.provider_id = "";
        /* a later attempt's token is chosen when it launches (launch.c): a
         * replacement must not reuse the first launch's, which a provider
         * would answer with the node it made then */
        nd.client_token = first_attempt ? token : "";
        nd.region = "";
        nd.zone = "";
        nd.instance_type = "";
        nd.private_ip = "";
        nd.phase = GPC_PHASE_PENDING;
        nd.exit_code = -1;
        nd.created_at = now;
        rc = gpc_node_insert(s->st, &nd, err);
    }
    return rc;
}

/* Delete the cluster's live nodes on their provider and mark them so;
 * *removed counts those that existed.  A node that cannot be deleted stays
 * recorded (live), and the answer is GPC_ERR_PARTIAL naming it. */
static int remove_nodes(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                        uint32_t from_rank, int *removed, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    int nleft = 0;
    int64_t now = gpc_now();
    for (size_t i = 0; !rc && i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        gpc_error e;
        gpc_error_clear(&e);
        if (nd->rank < from_rank)
            continue;
        if (nd->provider_id[0] && gpc_lc_delete(pv, nd, &e) != 0) {
            nleft++;
            gpc_buf_addf(&left, NULL, "%s%s (%s)", nleft > 1 ? ", " : "", nd->name, e.msg);
            gpc_lc_event(s, c->id, (int)nd->rank, "error", "delete failed: %s", e.msg);
            continue;
        }
        rc = gpc_lc_node_deleted(s, nd, now, err);
        if (!rc && nd->provider_id[0]) {
            (*removed)++;
            gpc_lc_event(s, c->id, (int)nd->rank, "delete", "deleted %s to replace it",
                         nd->provider_id);
        }
    }
    if (!rc && nleft)
        rc = gpc_fail(err, GPC_ERR_PARTIAL,
                      "cluster '%s': %d node(s) could not be deleted to replace them and stay "
                      "recorded: %s; the others are gone: gpuctl apply tries again, gpuctl "
                      "destroy %s removes the cluster",
                      c->name, nleft, gpc_buf_str(&left), c->name);
    gpc_buf_free(&left);
    gpc_node_list_free(nodes, n);
    return rc;
}

/* Record `spec` as cluster *c's (its hash, JSON, path, node count), on
 * provider `dest` when it moves there (NULL: it stays), with pending nodes
 * for ranks from .. spec->nodes-1; *c is reloaded. */
static int record_spec(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                       const gpc_open_provider *dest, uint32_t from, gpc_cluster_rec *c,
                       gpc_error *err)
{
    int moves = dest != NULL;
    const char *to = moves ? dest->prov->name : c->provider;
    char hash[65];
    char *json = NULL, *path = NULL;
    int rc = gpc_spec_hash(spec, hash, err);
    if (!rc) {
        cJSON *j = gpc_spec_to_json(spec);
        json = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        if (!json)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    if (!rc && spec_path && strcmp(spec_path, "-") != 0)
        gpc_realpath(spec_path, &path, NULL);
    uint32_t port = c->rdzv_port;
    if (!rc && moves) {
        port = spec->run.rdzv_port;
        if (!port && dest->prov->pick_rdzv_port)
            rc = dest->prov->pick_rdzv_port(dest->ctx, &port, err);
        if (!port)
            port = 29400;
    }
    if (rc) {
        free(json);
        free(path);
        return rc;
    }
    gpc_cluster_rec upd = *c;
    upd.provider = (char *)to;
    upd.spec_hash = hash;
    upd.spec_json = json;
    upd.spec_path = path ? path : c->spec_path;
    upd.nodes = spec->nodes;
    upd.rdzv_port = port;
    upd.phase = GPC_PHASE_PENDING;
    upd.exit_code = -1;
    upd.updated_at = gpc_now();
    upd.provider_data = moves ? "" : c->provider_data;
    rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_cluster_update(s->st, &upd, err);
    if (!rc)
        rc = gpc_lc_nodes_record(s, &upd, from, 0, upd.updated_at, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    free(json);
    free(path);
    if (rc)
        return rc;
    gpc_lc_event(s, c->id, -1, "apply", "cluster recorded again: %u node(s) on %s, spec %.12s",
                 spec->nodes, to, hash);
    /* *c as recorded now, for the creates that follow */
    gpc_cluster_rec now;
    rc = gpc_cluster_get_by_id(s->st, c->id, &now, err);
    if (!rc) {
        gpc_cluster_rec_free(c);
        *c = now;
    }
    return rc;
}

int gpc_lc_replace(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                   const gpc_plan *plan, gpc_cluster_rec *c, int *removed, gpc_error *err)
{
    *removed = 0;
    if (!plan->n_offers)
        return gpc_fail(err, GPC_ERR_CAPACITY, "no offer fits '%s'", spec->name);
    const char *to = plan->offers[0].worker.provider;
    int moves = strcmp(to, c->provider) != 0;
    gpc_open_provider from, dest;
    int rc = gpc_session_provider(s, c->provider, &from, err);
    if (!rc && moves)
        rc = gpc_session_provider(s, to, &dest, err);
    if (rc)
        return rc;
    gpc_lc_event(s, c->id, -1, "replace", "replacing the cluster's nodes on %s (changed: %s)",
                 to, plan->rerun);
    rc = remove_nodes(s, &from, c, 0, removed, err);
    /* what else the old provider made for the cluster (a security group,
     * a key pair) goes with its nodes when none stay there */
    if (!rc && moves)
        rc = gpc_lc_cleanup_resources(s, &from, c, err);

    if (!rc)
        rc = record_spec(s, spec, spec_path, moves ? &dest : NULL, 0, c, err);
    return rc;
}

int gpc_lc_resize(gpc_session *s, const gpc_spec *spec, const char *spec_path,
                  const gpc_plan *plan, gpc_cluster_rec *c, int *removed, gpc_error *err)
{
    *removed = 0;
    gpc_open_provider pv;
    int rc = gpc_session_provider(s, c->provider, &pv, err);
    if (rc)
        return rc;
    gpc_lc_event(s, c->id, -1, "replace", "resizing the cluster: %u -> %u node(s) (changed: %s)",
                 c->nodes, spec->nodes, plan->rerun);
    uint32_t had = c->nodes;
    rc = remove_nodes(s, &pv, c, spec->nodes, removed, err);
    if (!rc)
        rc = record_spec(s, spec, spec_path, NULL, had, c, err);
    return rc;
}

int gpc_lc_resize_ready(gpc_session *s, gpc_cluster_rec *c, uint32_t keep, gpc_error *err)
{
    gpc_open_provider pv;
    int rc = gpc_session_provider(s, c->provider, &pv, err);
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    if (!rc)
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    gpc_buf busy, out;
    gpc_buf_init(&busy, GPC_BUF_LINE_MAX);
    gpc_buf_init(&out, 4096);
    for (size_t i = 0; !rc && i < n; i++) {
        if (!nodes[i].provider_id[0] || nodes[i].rank >= keep)
            continue;
        /* only its exit status: from an offset past any log's end */
        long next = 0;
        int ex = -1;
        gpc_error e;
        gpc_error_clear(&e);
        gpc_buf_reset(&out);
        if (gpc_node_log_read(s, &pv, c, &nodes[i], 1L << 40, 0, &out, &next, &ex, &e) != 0)
            rc = gpc_fail(err, e.code, "cluster '%s': could not ask node %s whether its job "
                          "ended: %s", c->name, nodes[i].name, e.msg);
        else if (ex < 0)
            gpc_buf_addf(&busy, NULL, "%s%s", busy.len ? ", " : "", nodes[i].name);
    }
    if (!rc && busy.len)
        rc = gpc_fail(err, GPC_ERR_USAGE,
                      "cluster '%s': a job still runs on %s; a resize runs the job again on "
                      "every node with the new world size, and new nodes cannot join while "
                      "it runs: apply again once it has ended (gpuctl logs -f %s follows it)",
                      c->name, gpc_buf_str(&busy), c->name);
    gpc_buf_free(&busy);
    gpc_buf_free(&out);
    gpc_node_list_free(nodes, n);
    return rc;
}
