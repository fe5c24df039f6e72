/* present_cluster.c - a cluster for people and scripts: the node table,
 * the launch attempts, and the JSON of `status -o json` (present.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/cluster.h"
#include "gpuctl/util.h"
#include "present.h"


static void add_time(cJSON *o, const char *key, int64_t t)
{
    if (t > 0)
        cJSON_AddNumberToObject(o, key, (double)t);
    else
        cJSON_AddNullToObject(o, key);
}

/* The events of the kinds the spot and budget controls write: a node's
 * interruption notice, a recovery, a budget stop. */
static int spot_event(const gpc_event_rec *e)
{
    return strcmp(e->kind, "interruption") == 0 || strcmp(e->kind, "recovery") == 0 ||
           strcmp(e->kind, "budget") == 0;
}

/*
 * A running cluster is degraded while one of its workers is lost outside
 * gpuctl's doing: the newest record of a rank > 0 says preempted, or
 * terminated / failed without an exit status.  *d is that node (the first
 * by rank), NULL when none; detail: what the provider said of it (its
 * last phase event's reason), "" when nothing.
 */
static const gpc_node_rec *degraded_node(gpc_session *s, const gpc_cluster_rec *c,
                                         const gpc_node_rec *nodes, size_t n, char *detail,
                                         size_t size)
{
    detail[0] = '\0';
    if (c->phase != GPC_PHASE_RUNNING || c->destroyed_at)
        return NULL;
    const gpc_node_rec *d = NULL;
    for (size_t i = 0; !d && i < n; i++) {
        const gpc_node_rec *nd = &nodes[i];
        if (nd->rank == 0 || (i + 1 < n && nodes[i + 1].rank == nd->rank))
            continue; /* the newest record of each rank */
        if (nd->phase == GPC_PHASE_PREEMPTED ||
            ((nd->phase == GPC_PHASE_TERMINATED || nd->phase == GPC_PHASE_FAILED) &&
             nd->exit_code < 0))
            d = nd;
    }
    gpc_event_rec *ev = NULL;
    size_t ne = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (d && gpc_event_list(s->st, c->id, &ev, &ne, &e) == 0) {
        for (size_t i = 0; i < ne; i++) {
            const char *why = strstr(ev[i].message, ": ");
            if (ev[i].rank == (int)d->rank && strcmp(ev[i].kind, "phase") == 0)
                snprintf(detail, size, "%s", why ? why + 2 : "");
        }
    }
    gpc_event_list_free(ev, ne);
    return d;
}

cJSON *gpc_cluster_json(gpc_session *s, const gpc_cluster_rec *c, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    if (gpc_node_list(s->st, c->id, 1, &nodes, &n, err))
        return NULL;
    int64_t now = gpc_now();
    double cost = 0, hourly = 0;
    gpc_ledger_cost(s->st, c->id, now, &cost, err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "uid", c->uid);
    cJSON_AddStringToObject(o, "provider", c->provider);
    cJSON_AddStringToObject(o, "phase", gpc_phase_name(c->phase));
    if (c->exit_code >= 0)
        cJSON_AddNumberToObject(o, "exit_code", c->exit_code);
    else
        cJSON_AddNullToObject(o, "exit_code");
    /* which node failed the job (rank 0 may have exited 0) */
    const gpc_node_rec *bad = c->phase == GPC_PHASE_FAILED ? gpc_cluster_failed_node(nodes, n)
                                                           : NULL;
    if (bad) {
        cJSON *f = cJSON_AddObjectToObject(o, "failed_node");
        cJSON_AddNumberToObject(f, "rank", bad->rank);
        cJSON_AddStringToObject(f, "name", bad->name);
        cJSON_AddNumberToObject(f, "exit_code", bad->exit_code);
    } else {
        cJSON_AddNullToObject(o, "failed_node");
    }
    char why[256];
    const gpc_node_rec *lost = degraded_node(s, c, nodes, n, why, sizeof(why));
    if (lost) {
        cJSON *g = cJSON_AddObjectToObject(o, "degraded");
        cJSON_AddNumberToObject(g, "rank", lost->rank);
        cJSON_AddStringToObject(g, "name", lost->name);
        cJSON_AddStringToObject(g, "provider_id", lost->provider_id);
        cJSON_AddStringToObject(g, "phase", gpc_phase_name(lost->phase));
        cJSON_AddStringToObject(g, "detail", why);
    } else {
        cJSON_AddNullToObject(o, "degraded");
    }
    cJSON_AddNumberToObject(o, "nodes_desired", c->nodes);
    cJSON_AddStringToObject(o, "spec_hash", c->spec_hash);
    cJSON_AddStringToObject(o, "spec_path", c->spec_path);
    cJSON_AddBoolToObject(o, "rebuilt", gpc_cluster_rebuilt(c));
    cJSON_AddNumberToObject(o, "rdzv_port", c->rdzv_port);
    add_time(o, "created_at", c->created_at);
    add_time(o, "destroyed_at", c->destroyed_at);
    cJSON_AddNumberToObject(o, "age_s", (double)((c->destroyed_at ? c->destroyed_at : now) - c->created_at));
    cJSON *arr = cJSON_AddArrayToObject(o, "nodes");
    for (size_t i = 0; i < n; i++) {
        const gpc_node_rec *nd = &nodes[i];
        if (!nd->ended_at && nd->started_at)
            hourly += nd->price_hourly;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "rank", nd->rank);
        cJSON_AddStringToObject(j, "name", nd->name);
        cJSON_AddStringToObject(j, "provider_id", nd->provider_id);
        cJSON_AddStringToObject(j, "phase", gpc_phase_name(nd->phase));
        cJSON_AddStringToObject(j, "private_ip", nd->private_ip);
        cJSON_AddStringToObject(j, "instance_type", nd->instance_type);
        cJSON_AddStringToObject(j, "region", nd->region);
        cJSON_AddStringToObject(j, "zone", nd->zone);
        cJSON_AddBoolToObject(j, "spot", nd->spot);
        cJSON_AddNumberToObject(j, "price_hourly", nd->price_hourly);
        if (nd->exit_code >= 0)
            cJSON_AddNumberToObject(j, "exit_code", nd->exit_code);
        else
            cJSON_AddNullToObject(j, "exit_code");
        add_time(j, "created_at", nd->created_at);
        add_time(j, "started_at", nd->started_at);
        add_time(j, "ended_at", nd->ended_at);
        cJSON_AddItemToArray(arr, j);
    }
    cJSON_AddNumberToObject(o, "price_hourly", hourly);
    cJSON_AddNumberToObject(o, "cost_usd", cost);
    gpc_attempt_rec *att = NULL;
    size_t na = 0;
    gpc_error ae;
    gpc_error_clear(&ae);
    cJSON *aa = cJSON_AddArrayToObject(o, "attempts");
    if (gpc_attempt_list(s->st, c->id, &att, &na, &ae) == 0) {
        for (size_t i = 0; i < na; i++) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "attempt", att[i].attempt);
            cJSON_AddNumberToObject(j, "rank", att[i].rank);
            cJSON_AddNumberToObject(j, "at", (double)att[i].at);
            cJSON_AddStringToObject(j, "provider", att[i].provider);
            cJSON_AddStringToObject(j, "region", att[i].region);
            cJSON_AddStringToObject(j, "zone", att[i].zone);
            cJSON_AddStringToObject(j, "instance_type", att[i].instance_type);
            cJSON_AddBoolToObject(j, "spot", att[i].spot);
            cJSON_AddStringToObject(j, "outcome", att[i].outcome);
            cJSON_AddStringToObject(j, "error_code", att[i].error_code);
            cJSON_AddStringToObject(j, "error_message", att[i].error_message);
            cJSON_AddItemToArray(aa, j);
        }
    }
    gpc_attempt_list_free(att, na);
    /* what the spot and budget controls did (interruption notices,
     * recoveries, budget stops), oldest first */
    gpc_event_rec *ev = NULL;
    size_t ne = 0;
    cJSON *ra = cJSON_AddArrayToObject(o, "recoveries");
    if (gpc_event_list(s->st, c->id, &ev, &ne, &ae) == 0) {
        for (size_t i = 0; i < ne; i++) {
            if (!spot_event(&ev[i]))
                continue;
            cJSON *j = cJSON_CreateObject();
            add_time(j, "at", ev[i].at);
            if (ev[i].rank >= 0)
                cJSON_AddNumberToObject(j, "rank", ev[i].rank);
            else
                cJSON_AddNullToObject(j, "rank");
            cJSON_AddStringToObject(j, "kind", ev[i].kind);
            cJSON_AddStringToObject(j, "message", ev[i].message);
            cJSON_AddItemToArray(ra, j);
        }
    }
    gpc_event_list_free(ev, ne);
    gpc_node_list_free(nodes, n);
    return o;
}

int gpc_cluster_print_nodes(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c, gpc_error *err)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    int rc = gpc_node_list(s->st, c->id, 1, &nodes, &n, err);
    if (rc)
        return rc;
    static const char *const hdr[] = {"RANK", "NODE", "PHASE", "IP", "INSTANCE", "EXIT",
                                      "RUNTIME", "ID"};
    gpc_table t;
    gpc_table_init(&t, 8, hdr);
    int64_t now = gpc_now();
    for (size_t i = 0; i < n; i++) {
        const gpc_node_rec *nd = &nodes[i];
        char rank[16], ex[16], age[32];
        snprintf(rank, sizeof(rank), "%u", nd->rank);
        if (nd->exit_code >= 0)
            snprintf(ex, sizeof(ex), "%d", nd->exit_code);
        else
            snprintf(ex, sizeof(ex), "-");
        if (nd->started_at)
            gpc_fmt_age((nd->ended_at ? nd->ended_at : now) - nd->started_at, age, sizeof(age));
        else
            snprintf(age, sizeof(age), "-");
        const char *row[] = {rank, nd->name, gpc_phase_name(nd->phase),
                             nd->private_ip[0] ? nd->private_ip : "-",
                             nd->instance_type[0] ? nd->instance_type : "-", ex, age,
                             nd->provider_id[0] ? nd->provider_id : "-"};
        gpc_table_add(&t, row);
    }
    gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
    const gpc_node_rec *bad = c->phase == GPC_PHASE_FAILED ? gpc_cluster_failed_node(nodes, n)
                                                           : NULL;
    if (bad)
        printf("\njob failed: node %s (rank %u) exited with status %d\n", bad->name, bad->rank,
               bad->exit_code);
    gpc_node_list_free(nodes, n);
    return 0;
}

int gpc_cluster_print_recoveries(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c,
                                 gpc_error *err)
{
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    int rc = gpc_event_list(s->st, c->id, &ev, &n, err);
    if (rc)
        return rc;
    static const char *const hdr[] = {"AT", "RANK", "KIND", "WHAT"};
    gpc_table t;
    gpc_table_init(&t, 4, hdr);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!spot_event(&ev[i]))
            continue;
        char at[32] = "-", rank[16];
        time_t tt = (time_t)ev[i].at;
        struct tm tm;
        if (gmtime_r(&tt, &tm))
            strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (ev[i].rank >= 0)
            snprintf(rank, sizeof(rank), "%d", ev[i].rank);
        else
            snprintf(rank, sizeof(rank), "-");
        const char *row[] = {at, rank, ev[i].kind, ev[i].message};
        gpc_table_add(&t, row);
        k++;
    }
    if (k) {
        printf("\ninterruptions, recoveries and budget stops:\n");
        gpc_table_print(o, &t, stdout);
    }
    gpc_table_free(&t);
    gpc_event_list_free(ev, n);
    return 0;
}

int gpc_cluster_print_attempts(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c, gpc_error *err)
{
    gpc_attempt_rec *a = NULL;
    size_t n = 0;
    int rc = gpc_attempt_list(s->st, c->id, &a, &n, err);
    if (rc)
        return rc;
    int failover = 0;
    for (size_t i = 0; i < n; i++)
        failover |= strcmp(a[i].outcome, "created") != 0;
    if (!failover) {
        gpc_attempt_list_free(a, n);
        return 0;
    }
    static const char *const hdr[] = {"ATTEMPT", "RANKS", "WHERE", "INSTANCE", "MARKET",
                                      "OUTCOME", "WHY"};
    gpc_table t;
    gpc_table_init(&t, 7, hdr);
    /* one row per attempt, zone and outcome: the ranks it covered */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j].attempt == a[i].attempt && strcmp(a[j].zone, a[i].zone) == 0 &&
               a[j].spot == a[i].spot && strcmp(a[j].outcome, a[i].outcome) == 0 &&
               strcmp(a[j].error_message, a[i].error_message) == 0)
            j++;
        char att[16], ranks[32], where[112];
        snprintf(att, sizeof(att), "%u", a[i].attempt);
        if (j - i > 1)
            snprintf(ranks, sizeof(ranks), "%u-%u", a[i].rank, a[j - 1].rank);
        else
            snprintf(ranks, sizeof(ranks), "%u", a[i].rank);
        snprintf(where, sizeof(where), "%s %s%s%s", a[i].provider, a[i].region,
                 a[i].zone[0] ? "/" : "", a[i].zone);
        const char *row[] = {att, ranks, where, a[i].instance_type,
                             a[i].spot ? "spot" : "on-demand", a[i].outcome,
                             a[i].error_code[0] ? a[i].error_code : "-"};
        gpc_table_add(&t, row);
        i = j;
    }
    printf("\nlaunch attempts (failover):\n");
    gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
    gpc_attempt_list_free(a, n);
    return 0;
}
