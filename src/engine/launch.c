/* launch.c - launch attempts: zones, rollback of a failed attempt, waiting
 * for the nodes to boot */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lifecycle.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

/*
 * Undo the nodes this apply created (made[i]; a failed create leaves
 * nothing behind, and nodes of a killed gpuctl were adopted before the
 * launch).  A node removed goes back to pending, its
 * ledger entry closed, ready for the next attempt (`why` ends the event:
 * "after a failed launch"); one that cannot be
 * removed stays recorded.  Returns how many are left.
 */
static int rollback_created(gpc_session *s, const gpc_open_provider *pv,
                            gpc_cluster_rec *c, gpc_node_rec *nodes,
                            size_t n, const int *made, const char *why)
{
    int64_t now = gpc_now();
    int left = 0;
    for (size_t i = 0; i < n; i++) {
        gpc_node_rec *nd = &nodes[i];
        if (nd->phase == GPC_PHASE_TERMINATED || !made[i])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_lc_delete(pv, nd, &e) == 0) {
            gpc_ledger_close(s->st, nd->id, now, &e);
            gpc_lc_event(s, c->id, (int)nd->rank, "delete", "removed %s %s", nd->provider_id,
                         why);
            gpc_lc_set_str(&nd->provider_id, "");
            gpc_lc_set_str(&nd->client_token, ""); /* its create is settled: gone */
            gpc_lc_set_str(&nd->private_ip, "");
            nd->phase = GPC_PHASE_PENDING;
            nd->exit_code = -1;
            nd->started_at = 0;
            gpc_node_update(s->st, nd, &e);
        } else {
            left++;
            gpc_lc_event(s, c->id, (int)nd->rank, "error",
                         "could not remove after a failed apply: %s", e.msg);
            gpc_info(s->log, "gpuctl: node %s could not be removed (%s); it stays recorded: "
                     "run 'gpuctl destroy %s'", nd->name, e.msg, c->name);
        }
    }
    return left;
}

/*
 * Before missing nodes are made again, remove the live ones that could
 * not work with them (gpc_provider_head_loss):
 *   WORKERS_TOO: workers whose head is gone wait for it at its old
 *       address, which their bootstrap carries, and can never join a new
 *       one: when the head is to be made anew, they are removed first and
 *       made again with the new head's address;
 *   GROUP: a group is made in one piece: when any node of it is missing,
 *       the rest is removed and the whole group made again;
 *   HEAD_ONLY: the rendezvous name outlives the head: nothing to remove.
 * An error when one cannot be removed (it stays recorded; destroy takes
 * it).
 */
static int replace_orphans(gpc_session *s, const gpc_open_provider *pv,
                           gpc_cluster_rec *c, gpc_node_rec *nodes, size_t n,
                           gpc_error *err)
{
    gpc_head_loss rule = gpc_provider_head_loss(pv->prov);
    if (!n || rule == GPC_HEAD_LOSS_HEAD_ONLY)
        return 0;
    /* a group: nodes without an id (never made, or a create of unknown
     * outcome whose lookup found no node: the all-or-nothing call cannot
     * be made again for part of it) beside live ones */
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += !nodes[i].provider_id[0];
    if (rule == GPC_HEAD_LOSS_GROUP ? missing == 0 || missing == n
                                    : nodes[0].rank != 0 || nodes[0].provider_id[0] ||
                                          gpc_lc_outcome_unknown(&nodes[0]))
        return 0;
    int *orphan = calloc(n, sizeof(int));
    if (!orphan)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int k = 0;
    for (size_t i = rule == GPC_HEAD_LOSS_GROUP ? 0 : 1; i < n; i++)
        k += orphan[i] = nodes[i].provider_id[0] != '\0';
    int left = 0;
    if (k && rule == GPC_HEAD_LOSS_GROUP)
        gpc_info(s->log, "gpuctl: %zu node(s) of cluster '%s' are gone and its nodes are made "
                 "as one group: replacing the %d left", missing, c->name, k);
    else if (k)
        gpc_info(s->log, "gpuctl: the head of cluster '%s' is gone and %d worker(s) wait for it "
                 "at its old address: replacing them", c->name, k);
    if (k)
        left = rollback_created(s, pv, c, nodes, n, orphan,
                                rule == GPC_HEAD_LOSS_GROUP ? "to make its group again"
                                                            : "to make it again with the new "
                                                              "head");
    for (size_t i = 0; !left && rule == GPC_HEAD_LOSS_GROUP && i < n; i++) {
        /* the group is made anew: a new call, with a new token */
        if (nodes[i].provider_id[0] || !nodes[i].client_token[0])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        gpc_lc_set_str(&nodes[i].client_token, "");
        if (gpc_node_update(s->st, &nodes[i], &e))
            gpc_debug(s->log, "could not record node %s: %s", nodes[i].name, e.msg);
    }
    free(orphan);
    if (left && rule == GPC_HEAD_LOSS_GROUP)
        return gpc_fail(err, GPC_ERR_PARTIAL, "cluster '%s': %d node(s) of a broken group could "
                        "not be removed, so no new group is made; run gpuctl destroy %s",
                        c->name, left, c->name);
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

/* The launch attempt a token of gpc_lc_node_ids / batch_token names ("...-a<N>",
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

/* The rendezvous host a provider names before launch (GPC_RDZV_NAME). */
static int rdzv_name(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                     char *out, size_t size, gpc_error *err)
{
    gpc_lc_ref r;
    int rc = gpc_lc_ref_open(s, c, &r, err);
    if (!rc)
        rc = pv->prov->rdzv_name(pv->ctx, &r.ref, out, size, err);
    gpc_lc_ref_close(s, c, &r);
    if (!rc && !out[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: no rendezvous name for cluster '%s'",
                      pv->prov->name, c->name);
    return rc;
}

/*
 * One launch attempt of a provider whose nodes are one group
 * (GPC_CAP_GROUP): every node in one create_nodes call (replace_orphans
 * removed what was left of a broken group), or the same call again with
 * its token when its outcome is unknown.  `addr`: the rendezvous name, or
 * NULL when the nodes find it themselves.
 */
static int launch_group(gpc_session *s, const gpc_open_provider *pv, const gpc_spec *spec,
                        gpc_cluster_rec *c, gpc_node_rec *nodes, size_t n,
                        const gpc_launch *l, const char *addr, const char *workdir,
                        const char *ckpt, int *made, gpc_apply_result *res, gpc_error *err)
{
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += !nodes[i].provider_id[0];
    if (!missing)
        return 0;
    if (missing != n)
        return gpc_fail(err, GPC_ERR_INTERNAL, "cluster '%s': %zu of %zu node(s) of a group "
                        "are missing", c->name, missing, n);
    gpc_node_rec **all = calloc(n, sizeof(*all));
    if (!all)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        all[i] = &nodes[i];
    gpc_launch gl = *l;
    gpc_offer of = n == 1 ? *l->head : *l->worker;
    if (gpc_lc_outcome_unknown(&nodes[0])) {
        of = recorded_offer(&of, &nodes[0]);
        gl.attempt = token_attempt(nodes[0].client_token, l->attempt);
    }
    int rc = gpc_lc_create_batch(s, pv, spec, c, all, n, &gl, &of, addr, workdir, ckpt, made,
                                 err);
    for (size_t i = 0; i < n; i++)
        if (made[i]) {
            made[i] = 0;
            note_created(s, &nodes[i], &made[i], res);
        }
    free(all);
    return rc;
}

/*
 * One launch attempt: the head (when missing), then every missing worker
 * (in one create_nodes call per run of consecutive ranks when the provider
 * has it and its ranks need not come from the engine), all in l's zone.
 * The workers are told the rendezvous: the head's IP (GPC_RDZV_HEAD_IP,
 * so the head comes first) or the provider's name for it, which the head
 * gets too.  A group provider makes every node at once (launch_group).  A create whose outcome is unknown is made
 * again as it was: the same token, offer and batch (whose nodes then come
 * back as one run), under its own attempt number.  made[i] marks the
 * nodes this call recorded.
 */
static int launch_attempt(gpc_session *s, const gpc_open_provider *pv,
                          const gpc_spec *spec, gpc_cluster_rec *c,
                          gpc_node_rec *nodes, size_t n, const gpc_launch *l, const char *workdir,
                          const char *ckpt, int *made, gpc_apply_result *res, gpc_error *err)
{
    int rc = 0;
    gpc_node_rec *head = n && nodes[0].rank == 0 ? &nodes[0] : NULL;
    if (!head)
        return gpc_fail(err, GPC_ERR_INTERNAL, "head node is missing");
    char name[256] = "";
    const char *addr = NULL; /* what the nodes are told of the rendezvous */
    if (pv->prov->rdzv == GPC_RDZV_NAME) {
        rc = rdzv_name(s, pv, c, name, sizeof(name), err);
        if (rc)
            return rc;
        addr = name;
    }
    if (pv->prov->caps & GPC_CAP_GROUP)
        return launch_group(s, pv, spec, c, nodes, n, l, addr, workdir, ckpt, made, res, err);
    if (!head->provider_id[0]) {
        if (gpc_interrupted)
            return gpc_fail(err, GPC_ERR_INTERRUPTED, "interrupted");
        gpc_launch hl = *l;
        gpc_offer hof = *l->head;
        if (gpc_lc_outcome_unknown(head)) {
            hof = recorded_offer(l->head, head);
            hl.attempt = token_attempt(head->client_token, l->attempt);
        }
        rc = gpc_lc_create_one(s, pv, spec, c, head, &hl, &hof, addr, workdir, ckpt, err);
        if (rc)
            return rc;
        note_created(s, head, &made[0], res);
    }
    if (pv->prov->rdzv == GPC_RDZV_HEAD_IP && !head->private_ip[0]) {
        gpc_node_status hs;
        gpc_node_ref hr = gpc_lc_node_ref(head);
        rc = pv->prov->describe_node(pv->ctx, &hr, &hs, err);
        if (!rc)
            gpc_lc_set_str(&head->private_ip, hs.private_ip);
        if (!rc && !head->private_ip[0])
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "head node %s has no private IP yet",
                          head->name);
        if (rc)
            return rc;
    }
    if (pv->prov->rdzv == GPC_RDZV_HEAD_IP)
        addr = head->private_ip;
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
        gpc_launch rl = *l;
        gpc_offer of = *l->worker;
        char batch[72] = "";
        int in_batch = 0;
        if (gpc_lc_outcome_unknown(&nodes[i])) {
            /* a create to make again: the node, or its whole batch */
            long first = 0, idx;
            char b[72];
            in_batch = batch_member(&nodes[i], batch, sizeof(batch), &first);
            run[k++] = &nodes[i++];
            while (in_batch && i < n && gpc_lc_outcome_unknown(&nodes[i]) &&
                   batch_member(&nodes[i], b, sizeof(b), &idx) && strcmp(b, batch) == 0 &&
                   idx == first + (long)k)
                run[k++] = &nodes[i++];
            of = recorded_offer(l->worker, run[0]);
            rl.attempt = token_attempt(run[0]->client_token, l->attempt);
        } else {
            /* a run of consecutive missing ranks, new creates all */
            while (i < n && !nodes[i].provider_id[0] && !gpc_lc_outcome_unknown(&nodes[i]) &&
                   (k == 0 || nodes[i].rank == run[k - 1]->rank + 1))
                run[k++] = &nodes[i++];
            in_batch = k > 1;
        }
        if (in_batch && pv->prov->create_nodes && pv->prov->rank != GPC_RANK_ENGINE) {
            int *m = made + start;
            rc = gpc_lc_create_batch(s, pv, spec, c, run, k, &rl, &of, addr, workdir, ckpt, m,
                                     err);
            for (size_t j = 0; j < k; j++)
                if (m[j]) {
                    m[j] = 0;
                    note_created(s, run[j], &m[j], res);
                }
            continue;
        }
        for (size_t j = 0; !rc && j < k; j++) {
            rc = gpc_lc_create_one(s, pv, spec, c, run[j], &rl, &of, addr, workdir, ckpt, err);
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
static int wait_booted(gpc_session *s, const gpc_open_provider *pv,
                       gpc_cluster_rec *c, double poll_s, gpc_error *err)
{
    if (!pv->prov->describe_nodes || (pv->prov->caps & GPC_CAP_QUEUE))
        return 0; /* a queue: accepted is launched */
    long limit = boot_timeout_s();
    int64_t start = gpc_now();
    int last_up = -1;
    for (;;) {
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        gpc_node_status *ns = NULL;
        int *have = NULL;
        int rc = gpc_lc_describe_cluster(s, pv, c, &nodes, &n, &ns, &have, err);
        int up = 0, starting = 0;
        for (size_t i = 0; !rc && i < n; i++) {
            if (!have[i])
                continue;
            if (ns[i].no_capacity || gpc_lc_is_terminal(ns[i].phase))
                rc = gpc_fail(err, ns[i].no_capacity ? GPC_ERR_CAPACITY : GPC_ERR_PROVIDER,
                              "%s: node %s (%s) ended while starting: %s", pv->prov->name,
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
        gpc_lc_sleep(poll_s);
    }
}

/* After wait_booted: the provider finishes the running nodes
 * (nodes_running; EC2: their Elastic IPs).  Its failure fails the launch. */
static int finish_nodes(gpc_session *s, const gpc_open_provider *pv,
                        gpc_cluster_rec *c, gpc_error *err)
{
    if (!pv->prov->nodes_running)
        return 0;
    gpc_node_rec *nodes = NULL;
    size_t n = 0, k = 0;
    int rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    const char **ids = rc ? NULL : calloc(n ? n : 1, sizeof(*ids));
    if (!rc && !ids)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].provider_id[0] && !(gpc_lc_is_terminal(nodes[i].phase) && nodes[i].ended_at))
            ids[k++] = nodes[i].provider_id;
    if (!rc && k) {
        gpc_lc_ref r;
        rc = gpc_lc_ref_open(s, c, &r, err);
        if (!rc)
            rc = pv->prov->nodes_running(pv->ctx, &r.ref, ids, k, err);
        gpc_lc_ref_close(s, c, &r);
    }
    free(ids);
    gpc_node_list_free(nodes, n);
    return rc;
}

/* The zone the cluster's live nodes are in, or its creates of unknown
 * outcome went to ("" when none or unknown). */
static const char *live_zone(const gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((nodes[i].provider_id[0] || gpc_lc_outcome_unknown(&nodes[i])) && nodes[i].zone[0])
            return nodes[i].zone;
    return "";
}

/* Some node's create has an unknown outcome. */
static int any_unknown(const gpc_node_rec *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (gpc_lc_outcome_unknown(&nodes[i]))
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
/* A record rebuilt from its nodes' tags (rebuild.c) takes in the spec it
 * was made with, which apply gives again (gpc_lc_plan_existing refuses
 * any other): the record is whole again. */
static int adopt_spec(gpc_session *s, const gpc_spec *spec, gpc_cluster_rec *c, gpc_error *err)
{
    char hash[65];
    int rc = gpc_spec_hash(spec, hash, err);
    if (rc || !gpc_cluster_rebuilt(c) || strcmp(hash, c->spec_hash) != 0)
        return rc;
    cJSON *j = gpc_spec_to_json(spec);
    char *json = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    char *path = NULL;
    if (spec->source && strcmp(spec->source, "-") != 0)
        gpc_realpath(spec->source, &path, NULL);
    if (!json) {
        free(path);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    free(c->spec_json);
    c->spec_json = json;
    if (path) {
        free(c->spec_path);
        c->spec_path = path;
    }
    if (spec->run.rdzv_port)
        c->rdzv_port = spec->run.rdzv_port;
    rc = gpc_cluster_update(s->st, c, err);
    if (!rc)
        gpc_lc_event(s, c->id, -1, "adopt", "spec %.12s given again: the record rebuilt from "
                     "tags is whole", hash);
    return rc;
}

int gpc_lc_create_missing(gpc_session *s, const gpc_open_provider *pv,
                          const gpc_spec *spec, gpc_cluster_rec *c,
                          const gpc_plan_offer *chosen, const char *workdir,
                          const char *ckpt, double poll_s, gpc_apply_result *res,
                          gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = adopt_spec(s, spec, c, err);
    if (!rc)
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    if (rc)
        return rc;
    /* A gpuctl killed between a create and its record left nodes that the
     * provider knows by their client tokens: take them in first.  Those
     * the provider does not know are made again with the same token
     * (launch_attempt); a lookup that fails stops here, before anything
     * new is made. */
    for (size_t i = 0; !rc && i < n; i++) {
        int found = 0;
        rc = gpc_lc_adopt(s, pv, &nodes[i], &found, err);
        if (!rc && found) {
            res->adopted++;
            gpc_info(s->log, "found node %s (%s) made by an interrupted apply", nodes[i].name,
                     nodes[i].provider_id);
        }
    }
    if (!rc)
        rc = replace_orphans(s, pv, c, nodes, n, err);
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
        rc = res->adopted ? wait_booted(s, pv, c, poll_s, err) : 0;
        rc = rc ? rc : finish_nodes(s, pv, c, err);
        /* the running nodes get the workdir and secrets again (a re-sync) */
        return rc ? rc : gpc_lc_deliver_apply(s, pv, c, err);
    }
    /* Where to try: the live nodes' zone, else the provider's zones. */
    char (*zones)[48] = NULL;
    size_t nz = 0;
    /* (recovery may unpin it: the survivors' zone cools down, zones.c) */
    const char *pinned = s->unpin_zone ? "" : live_zone(nodes, n);
    if (pinned[0] || !pv->prov->list_zones) {
        zones = calloc(1, sizeof(*zones));
        if (!zones)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            snprintf(zones[0], sizeof(zones[0]), "%s", pinned[0] ? pinned : chosen->worker.zone);
        nz = 1;
    } else {
        rc = pv->prov->list_zones(pv->ctx, &chosen->worker, &zones, &nz, err);
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
                          "none of them among the spec's zones", pv->prov->name,
                          chosen->worker.instance_type, nz, chosen->worker.region, zones[0],
                          nz > 1 ? ", ..." : "");
        nz = rc ? nz : kept;
        if (!rc && nz == 0)
            rc = gpc_fail(err, GPC_ERR_CAPACITY, "%s: %s is not offered in any zone of %s",
                          pv->prov->name, chosen->worker.instance_type, chosen->worker.region);
        /* zones that cool down (spot.zone_cooldown) last */
        if (!rc)
            gpc_lc_zones_order(s, pv->prov->name, chosen->worker.region, zones, nz);
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
        gpc_launch l = {.attempt = next_attempt(s, c), .head = &head, .worker = &worker};
        int64_t miss = 0;
        gpc_error e;
        gpc_error_clear(&e);
        /* only a zone of the provider's list is skipped: an offer's own
         * zone (no list_zones) is the one place it can be made */
        if (skip_s > 0 && zones[z][0] && !pinned[0] && pv->prov->list_zones &&
            gpc_capacity_miss_last(s->st, pv->prov->name, worker.region, worker.zone,
                                   worker.instance_type, worker.spot, &miss, &e) == 0 &&
            miss && now - miss < skip_s) {
            gpc_fail(&e, GPC_ERR_CAPACITY, "skipped: no capacity here %lds ago (skipped for "
                     "%lds, GPUCTL_CAPACITY_SKIP_S)", (long)(now - miss), skip_s);
            gpc_lc_record_attempt(s, pv, c, 0, &l, &worker, "skipped", &e);
            gpc_buf_addf(&tried, NULL, "%s%s (skipped)", tried.len ? ", " : "", zones[z]);
            last = GPC_ERR_CAPACITY;
            gpc_fail_replace(&last_err, GPC_ERR_CAPACITY, "%s", e.msg);
            continue;
        }
        memset(made, 0, n * sizeof(int));
        int created_before = res->created;
        last = launch_attempt(s, pv, spec, c, nodes, n, &l, workdir, ckpt, made, res, &e);
        if (!last) {
            last = wait_booted(s, pv, c, poll_s, &e);
            if (!last)
                last = finish_nodes(s, pv, c, &e);
            /* a node that cannot take the delivery failed as one that did
             * not boot */
            if (!last)
                last = gpc_lc_deliver_apply(s, pv, c, &e);
            /* the nodes launched, then did not come up: the attempt failed */
            for (size_t i = 0; last && i < n; i++)
                if (made[i])
                    gpc_lc_record_attempt(s, pv, c, nodes[i].rank, &l,
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
        last_err = e; /* its remote details too */
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
            left = rollback_created(s, pv, c, nodes, n, made, "after a failed launch");
            res->created = created_before;
        }
        if (left || (last != GPC_ERR_CAPACITY && last != GPC_ERR_QUOTA) || gpc_interrupted)
            break;
        if (last == GPC_ERR_CAPACITY) {
            gpc_capacity_miss_add(s->st, pv->prov->name, worker.region, worker.zone,
                                  worker.instance_type, worker.spot, gpc_now(), &e);
            char why[160];
            snprintf(why, sizeof(why), "no capacity for %s %s", worker.instance_type,
                     worker.spot ? "spot" : "on-demand");
            gpc_lc_zone_cool(s, spec, c->id, -1, pv->prov->name, worker.region, worker.zone, why);
            if (z + 1 < nz && !pinned[0])
                gpc_info(s->log, "gpuctl: no capacity for %s in %s; trying zone %s",
                         worker.instance_type, zones[z], zones[z + 1]);
            continue;
        }
        break; /* quota: this region is done */
    }
    if (!rc && last) {
        if (nz > 1 && last == GPC_ERR_CAPACITY)
            rc = gpc_error_wrap(err, &last_err, "%s: no capacity for %s %s in %s (zones tried: "
                                "%s); last", pv->prov->name, chosen->worker.instance_type,
                                chosen->worker.spot ? "spot" : "on-demand",
                                chosen->worker.region, gpc_buf_str(&tried));
        else if (last_err.code)
            rc = gpc_error_wrap(err, &last_err, NULL);
        else
            rc = gpc_fail(err, (gpc_code)last, "%s", last_err.msg);
    }
    if (rc && !left && !res->created && !alive_before && !s->keep_record &&
        !any_unknown(nodes, n)) {
        /* nothing of this cluster lives: close it, after the provider's
         * own resources are gone (else it stays recorded for destroy).  A
         * create of unknown outcome keeps it recorded: its node may come. */
        gpc_error ce;
        gpc_error_clear(&ce);
        if (gpc_lc_cleanup_resources(s, pv, c, &ce) == 0)
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
