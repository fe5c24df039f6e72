/* cmd_status.c - `gpuctl status` (alias get) and `gpuctl logs`. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/cluster.h"
#include "commands.h"
#include "gpuctl/buf.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

const gpc_option gpc_status_options[] = {
    {"all", 'a', NULL, 'a', "also destroyed clusters (history); with NAME, its earlier "
     "records too"},
    {"refresh", 0, NULL, 'R', "first rebuild the records the state lost from the cloud tags "
     "of their nodes (every provider that can list what it made, every region)"},
    {NULL, 0, NULL, 0, NULL}
};

const gpc_option gpc_logs_options[] = {
    {"node", 0, "N", 'N', "only node N (its rank, 0 to 1023)"},
    {"follow", 'f', NULL, 'F', "keep printing new lines until the job ends; exit with its "
     "exit status"},
    {NULL, 0, NULL, 0, NULL}
};

typedef struct status_args {
    int all;
    int refresh;
} status_args;

static int status_opt(int opt, const char *arg, void *ud)
{
    (void)arg;
    status_args *a = ud;
    if (opt == 'a')
        a->all = 1;
    else if (opt == 'R')
        a->refresh = 1;
    else
        return -1;
    return 0;
}

/* --refresh: the records the state lost, rebuilt from the tags of their
 * nodes by every provider that can list what it made (gpc_cluster_rebuild),
 * `name` only when given.  Says what it rebuilt and what it left on
 * stderr; a provider without credentials that was not asked by name is
 * skipped with a note.  err: the first provider's failure (the others are
 * still asked). */
static void rebuild_all(gpc_out *o, gpc_session *s, const char *name, gpc_error *err)
{
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        if (p->caps & GPC_CAP_PLAN_ONLY)
            continue;
        if (!p->list_orphans) {
            gpc_info(&o->log, "%s: cannot rebuild from tags: it cannot list what it made for "
                     "gpuctl", p->name);
            continue;
        }
        gpc_rebuilt *r = NULL;
        size_t n = 0;
        gpc_error e;
        gpc_error_clear(&e);
        int rc = gpc_cluster_rebuild(s, p->name, name, NULL, 0, &r, &n, &e);
        for (size_t j = 0; j < n; j++)
            if (r[j].skipped[0] && !o->quiet)
                fprintf(stderr, "gpuctl: warning: %s: cluster %s (%s) not rebuilt from tags: "
                        "%s\n", p->name, r[j].cluster, r[j].uid, r[j].skipped);
        free(r);
        if (rc == GPC_ERR_AUTH && !e.remote.http_status) {
            gpc_info(&o->log, "%s: skipped: %s", p->name, e.msg);
            continue;
        }
        if (rc && !err->code)
            gpc_error_wrap(err, &e, NULL);
        else if (rc && !o->quiet)
            fprintf(stderr, "gpuctl: error: %s\n", e.msg);
    }
}

int gpc_cmd_status(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    status_args a = {0};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, status_opt, &a, &done);
    int all = a.all;
    if (done)
        return rc;
    const char *name = optind < argc ? argv[optind] : NULL;
    if (name && optind + 1 < argc)
        return gpc_usage_error(o, c, "unexpected argument '%s'", argv[optind + 1]);
    if (name && !gpc_valid_cluster_name(name))
        return gpc_usage_error(o, c, "invalid cluster name '%s'", name);

    gpc_error err;
    gpc_error_clear(&err);
    gpc_session s;
    gpc_cluster_rec *list = NULL;
    size_t n = 0;
    o->cfg.state_reads_only = !a.refresh; /* on a full disk: what was last recorded */
    rc = gpc_session_open(&s, &o->cfg, &err);
    /* what the state lost, from the cloud's tags first; a provider that
     * failed is said at the end, after what the others hold is shown */
    gpc_error rebuild_err;
    gpc_error_clear(&rebuild_err);
    if (!rc && a.refresh)
        rebuild_all(o, &s, name, &rebuild_err);
    if (!rc) {
        rc = gpc_cluster_list(s.st, all, &list, &n, &err);
        if (!rc && name) {
            /* keep that name's records (with --all, its history too) */
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                if (strcmp(list[i].name, name) == 0)
                    list[k++] = list[i];
                else
                    gpc_cluster_rec_free(&list[i]);
            }
            n = k;
            if (n == 0)
                rc = gpc_no_cluster(&s, name, all ? "" : " (gpuctl status --all shows destroyed ones)", &err);
        }
    }
    /* Ask the providers what changed since we last looked (not when the
     * state is read-only: what they say could not be recorded). */
    for (size_t i = 0; !rc && !gpc_state_read_only(s.st) && i < n; i++) {
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_cluster_refresh(&s, &list[i], &e))
            fprintf(stderr, "gpuctl: warning: cluster %s: could not refresh: %s\n",
                    list[i].name, e.msg);
    }
    if (rc) {
        int st = gpc_report_error(o, &err);
        gpc_cluster_list_free(list, n);
        gpc_session_close(&s);
        return st;
    }
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "command", "status");
        cJSON *arr = cJSON_AddArrayToObject(doc, "clusters");
        for (size_t i = 0; i < n; i++) {
            cJSON *cj = gpc_cluster_json(&s, &list[i], &err);
            if (cj)
                cJSON_AddItemToArray(arr, cj);
        }
        gpc_print_json(doc);
    } else if (n == 0) {
        printf("no clusters%s\n", all ? "" : " (gpuctl status --all shows destroyed ones)");
    } else {
        static const char *const hdr[] = {"NAME", "PROVIDER", "NODES", "PHASE", "EXIT", "AGE",
                                          "$/HR", "COST"};
        gpc_table t;
        gpc_table_init(&t, 8, hdr);
        gpc_buf notes;
        gpc_buf_init(&notes, GPC_BUF_LINE_MAX);
        for (size_t i = 0; i < n; i++) {
            cJSON *cj = gpc_cluster_json(&s, &list[i], &err);
            if (!cj)
                continue;
            char nodes[16], ex[16], age[32], hr[32], cost[32];
            snprintf(nodes, sizeof(nodes), "%u", list[i].nodes);
            if (list[i].exit_code >= 0)
                snprintf(ex, sizeof(ex), "%d", list[i].exit_code);
            else
                snprintf(ex, sizeof(ex), "-");
            gpc_fmt_age((long long)cJSON_GetObjectItem(cj, "age_s")->valuedouble, age, sizeof(age));
            snprintf(hr, sizeof(hr), "%.2f", cJSON_GetObjectItem(cj, "price_hourly")->valuedouble);
            snprintf(cost, sizeof(cost), "%.2f", cJSON_GetObjectItem(cj, "cost_usd")->valuedouble);
            /* running with a worker lost: degraded, said below */
            const cJSON *dg = cJSON_GetObjectItem(cj, "degraded");
            const char *row[] = {list[i].name, list[i].provider, nodes,
                                 cJSON_IsObject(dg) ? "degraded" : gpc_phase_name(list[i].phase),
                                 ex, age, hr, cost};
            gpc_table_add(&t, row);
            if (cJSON_IsObject(dg)) {
                const char *det = gpc_json_str(dg, "detail");
                gpc_buf_addf(&notes, NULL, "%s is degraded: node %s (%s) %s%s%s\n",
                             list[i].name, gpc_json_str(dg, "name"),
                             gpc_json_str(dg, "provider_id"), gpc_json_str(dg, "phase"),
                             det && *det ? ": " : "", det ? det : "");
            }
            if (gpc_cluster_rebuilt(&list[i]) && !list[i].destroyed_at)
                gpc_buf_addf(&notes, NULL, "%s was rebuilt from cloud tags: its spec must be "
                             "given again (gpuctl apply -f SPEC with the spec it was made "
                             "with, %.12s, takes it in; gpuctl destroy %s removes it)\n",
                             list[i].name, list[i].spec_hash, list[i].name);
            cJSON_Delete(cj);
        }
        gpc_table_print(o, &t, stdout);
        gpc_table_free(&t);
        if (notes.len)
            printf("\n%s", gpc_buf_str(&notes));
        gpc_buf_free(&notes);
        if (name) {
            printf("\n");
            gpc_cluster_print_nodes(o, &s, &list[n - 1], &err);
            gpc_cluster_print_attempts(o, &s, &list[n - 1], &err);
            gpc_cluster_print_recoveries(o, &s, &list[n - 1], &err);
        }
    }
    gpc_cluster_list_free(list, n);
    gpc_session_close(&s);
    /* a provider whose tags could not be read: after what is known */
    if (rebuild_err.code) {
        if (!o->quiet)
            fprintf(stderr, "gpuctl: error: %s\n", rebuild_err.msg);
        return gpc_exit_status(rebuild_err.code);
    }
    return 0;
}

typedef struct logs_args {
    long node;
    int follow;
} logs_args;

static int logs_opt(int opt, const char *arg, void *ud)
{
    logs_args *a = ud;
    char *end;
    if (opt == 'F') {
        a->follow = 1;
        return 0;
    }
    if (opt == 'N') {
        a->node = strtol(arg, &end, 10);
        return *end || a->node < 0 || a->node > 1023 ? -1 : 0; /* spec: nodes <= 1024 */
    }
    return -1;
}

/* `logs -o json`: every node's whole log as one string, and its exit
 * status where it has one. */
static int logs_json(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *cr,
                     const gpc_node_rec *nodes, size_t n, long only, gpc_error *err)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "command", "logs");
    cJSON_AddStringToObject(doc, "cluster", cr->name);
    cJSON *arr = cJSON_AddArrayToObject(doc, "nodes");
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (only >= 0 && nodes[i].rank != (uint32_t)only)
            continue;
        gpc_buf b;
        gpc_buf_init(&b, 64u << 20);
        long off = 0, next = 0;
        int ex = -1;
        while (!rc) {
            size_t before = b.len;
            rc = gpc_node_log_read(s, pv, cr, &nodes[i], off, 0, &b, &next, &ex, err);
            if (b.len == before)
                break;
            off = next;
        }
        if (!rc && ex < 0)
            ex = nodes[i].exit_code;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "rank", nodes[i].rank);
        cJSON_AddStringToObject(j, "name", nodes[i].name);
        cJSON_AddStringToObject(j, "phase", gpc_phase_name(nodes[i].phase));
        if (ex >= 0)
            cJSON_AddNumberToObject(j, "exit_code", ex);
        else
            cJSON_AddNullToObject(j, "exit_code");
        cJSON_AddStringToObject(j, "log", gpc_buf_str(&b));
        cJSON_AddItemToArray(arr, j);
        gpc_buf_free(&b);
    }
    if (rc) {
        cJSON_Delete(doc);
        return rc;
    }
    gpc_print_json(doc);
    return 0;
}

/* What `logs` knows of one followed node, by rank. */
typedef struct log_follow {
    long off;
    gpc_buf part;     /* its unfinished last line */
    int exit_status;  /* the job's exit status there, -1 while none */
    int done;         /* its log is complete (ended, read to the end), or gone */
} log_follow;

/*
 * One round of `logs`: read each followed node's new bytes (all nodes, or
 * only `only`).  A node is done once it has an exit status (read with its
 * log, or recorded: `ended`, its record is terminal) and a read brought
 * nothing new.  A node that is gone with its log (read_log's
 * GPC_ERR_NOT_FOUND) is done: while following, a warning says so at once;
 * otherwise the first such error is kept in *gone for the end.  Returns 0
 * or the first other read error.
 */
static int logs_round(gpc_out *o, gpc_session *s, const gpc_open_provider *op, gpc_cluster_rec *cr,
                      const gpc_node_rec *nodes, size_t n, long only, int follow, int prefix,
                      log_follow *lf, uint32_t nr, gpc_error *gone, gpc_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        uint32_t r = nodes[i].rank;
        if (r >= nr || (only >= 0 && r != (uint32_t)only) || lf[r].done ||
            !nodes[i].provider_id[0])
            continue;
        long before = lf[r].off;
        int ex = -1;
        rc = gpc_log_pump(s, op, cr, &nodes[i], follow, &lf[r].off, &ex, prefix, &lf[r].part,
                          &o->log, err);
        if (rc == GPC_ERR_NOT_FOUND) {
            /* the rest of its log went with it: said at the end (the
             * first such node), or at once while following */
            gpc_log_flush(r, prefix, &lf[r].part, &o->log);
            if (follow)
                fprintf(stderr, "gpuctl: warning: %s\n", err->msg);
            else if (!gone->code)
                *gone = *err;
            gpc_error_clear(err);
            lf[r].done = 1;
            rc = 0;
            continue;
        }
        if (ex >= 0)
            lf[r].exit_status = ex;
        int ended = lf[r].exit_status >= 0 || nodes[i].phase == GPC_PHASE_SUCCEEDED ||
                    nodes[i].phase == GPC_PHASE_FAILED ||
                    nodes[i].phase == GPC_PHASE_PREEMPTED ||
                    nodes[i].phase == GPC_PHASE_TERMINATED;
        if (!rc && ended && lf[r].off == before)
            lf[r].done = 1;
    }
    return rc;
}

/* Does every followed node have an exit status (read with its log, or
 * recorded)? */
static int status_known(const gpc_node_rec *nodes, size_t n, long only, const log_follow *lf,
                        uint32_t nr)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t r = nodes[i].rank;
        if ((only >= 0 && r != (uint32_t)only) || r >= nr)
            continue;
        if (lf[r].exit_status < 0 && nodes[i].exit_code < 0)
            return 0;
    }
    return 1;
}

/*
 * `logs -f`'s exit status once every followed node ended, into *status:
 * the first non-zero exit status of the followed nodes (by rank), else 0.
 * Returns 0, or GPC_ERR_NODE_LOST when no node failed with a status and
 * one ended without one (lost, preempted, gone before it wrote one).
 */
static int logs_status(const gpc_node_rec *nodes, size_t n, long only, const log_follow *lf,
                       uint32_t nr, const char *name, int *status, gpc_error *err)
{
    *status = 0;
    int lost = -1;
    for (uint32_t r = 0; r < nr; r++) {
        if (only >= 0 && r != (uint32_t)only)
            continue;
        int ex = lf[r].exit_status;
        for (size_t i = 0; ex < 0 && i < n; i++)
            if (nodes[i].rank == r)
                ex = nodes[i].exit_code;
        if (ex > 0) {
            *status = ex;
            return 0;
        }
        int known = 0;
        for (size_t i = 0; i < n; i++)
            known |= nodes[i].rank == r;
        if (ex < 0 && known && lost < 0)
            lost = (int)r;
    }
    if (lost >= 0)
        return gpc_fail(err, GPC_ERR_NODE_LOST, "cluster %s: node %d ended without an exit "
                        "status (node lost)", name, lost);
    return 0;
}

int gpc_cmd_logs(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    logs_args a = {-1, 0};
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, logs_opt, &a, &done);
    if (done)
        return rc;
    const char *name = NULL;
    if ((rc = gpc_name_operand(o, c, argc, argv, &name)) != 0)
        return rc;

    gpc_error err;
    gpc_error_clear(&err);
    gpc_session s;
    gpc_open_provider op;
    gpc_cluster_rec cr;
    memset(&cr, 0, sizeof(cr));
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    o->cfg.state_reads_only = !a.follow; /* --follow records the phases it sees */
    rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc) {
        rc = gpc_cluster_get(s.st, name, &cr, &err);
        if (rc == GPC_ERR_NOT_FOUND)
            rc = gpc_no_cluster(&s, name, "", &err);
    }
    if (!rc)
        rc = gpc_session_provider(&s, cr.provider, &op, &err);
    if (!rc && !op.prov->read_log)
        rc = gpc_fail(&err, GPC_ERR_PROVIDER, "provider %s cannot read node logs", cr.provider);
    if (!rc)
        rc = gpc_node_list(s.st, cr.id, 0, &nodes, &n, &err);
    if (!rc && a.node >= 0) {
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (nodes[i].rank == (uint32_t)a.node)
                j = i + 1;
        if (!j)
            rc = gpc_fail(&err, GPC_ERR_NOT_FOUND, "cluster %s has no node %ld", name, a.node);
    }
    if (!rc && o->format == GPC_OUT_JSON) {
        if (a.follow)
            rc = gpc_fail(&err, GPC_ERR_USAGE, "logs: --follow cannot be used with -o json");
        else
            rc = logs_json(&s, &op, &cr, nodes, n, a.node, &err);
        int st = rc ? gpc_report_error(o, &err) : 0;
        gpc_node_list_free(nodes, n);
        gpc_cluster_rec_free(&cr);
        gpc_session_close(&s);
        return st;
    }
    /* What is known of each node, by rank; the node list is read again
     * on every round, so nodes created meanwhile show up too. */
    uint32_t nr = cr.nodes ? cr.nodes : 1;
    log_follow *lf = rc ? NULL : calloc(nr, sizeof(*lf));
    if (!rc && !lf)
        rc = gpc_fail(&err, GPC_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; !rc && r < nr; r++) {
        gpc_buf_init(&lf[r].part, 1u << 20);
        lf[r].exit_status = -1;
    }
    int prefix = a.node < 0 && nr > 1;
    if (!rc)
        gpc_install_signal_handlers();
    /* Without -f: one read of each node up to its end.  With -f: until
     * every followed node ended and its log was read to the end; also
     * once the cluster itself has ended, after one more round. */
    int st = 0;
    gpc_error gone;
    gpc_error_clear(&gone);
    for (int last = 0; !rc;) {
        long before = 0;
        for (uint32_t r = 0; r < nr; r++)
            before += lf[r].off;
        rc = logs_round(o, &s, &op, &cr, nodes, n, a.node, a.follow, prefix, lf, nr, &gone,
                        &err);
        long after = 0;
        int all_done = 1;
        for (uint32_t r = 0; r < nr; r++) {
            after += lf[r].off;
            for (size_t i = 0; i < n; i++)
                if (nodes[i].rank == r && (a.node < 0 || r == (uint32_t)a.node))
                    all_done &= lf[r].done;
        }
        if (rc || gpc_interrupted || (!a.follow && after == before) ||
            (a.follow && (all_done || (last && after == before))))
            break;
        if (!a.follow)
            continue; /* a log bigger than one read: the next part */
        /* Follow: ask the provider what changed (phases, exit codes) */
        if (gpc_cluster_refresh(&s, &cr, &err) == 0 &&
            (cr.phase == GPC_PHASE_SUCCEEDED || cr.phase == GPC_PHASE_FAILED ||
             cr.phase == GPC_PHASE_PREEMPTED || cr.phase == GPC_PHASE_TERMINATED))
            last = 1;
        gpc_error_clear(&err);
        gpc_node_list_free(nodes, n);
        nodes = NULL;
        n = 0;
        rc = gpc_node_list(s.st, cr.id, 0, &nodes, &n, &err);
        if (!rc && after == before)
            gpc_sleep(0.5, &gpc_interrupted);
    }
    for (uint32_t r = 0; lf && r < nr; r++) {
        gpc_log_flush(r, prefix, &lf[r].part, &o->log);
        gpc_buf_free(&lf[r].part);
    }
    /* A node that powered itself off right after its job (a cloud node)
     * may be gone before a read brought its exit status: the provider
     * still knows it (EC2: the console's gpuctl-node-exit line), so ask
     * once more before calling it lost. */
    if (!rc && a.follow && !gpc_interrupted && !status_known(nodes, n, a.node, lf, nr)) {
        if (gpc_cluster_refresh(&s, &cr, &err) == 0) {
            gpc_node_list_free(nodes, n);
            nodes = NULL;
            n = 0;
            rc = gpc_node_list(s.st, cr.id, 0, &nodes, &n, &err);
        } else {
            gpc_error_clear(&err); /* what is recorded decides */
        }
    }
    if (!rc && a.follow && gpc_interrupted)
        rc = gpc_fail(&err, GPC_ERR_INTERRUPTED, "interrupted; the job keeps running");
    else if (!rc && a.follow)
        rc = logs_status(nodes, n, a.node, lf, nr, name, &st, &err);
    else if (!rc && gone.code)
        rc = gpc_error_wrap(&err, &gone, NULL);
    free(lf);
    if (rc)
        st = gpc_report_error(o, &err);
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&cr);
    gpc_session_close(&s);
    return st;
}
