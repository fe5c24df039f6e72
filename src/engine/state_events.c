/* state_events.c - attempts, capacity misses, events, the ledger and the
 * fingerprint of a cluster in the state (state.h) */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_db.h"
#include "gpuctl/buf.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* Attempts and events                                                 */

int gpc_attempt_add(gpc_state *st, const gpc_attempt_rec *a, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "record attempt";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO attempts (cluster_id, rank, at, provider, region, "
                        "instance_type, outcome, error_code, error_message, zone, spot, attempt) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, a->cluster_id);
    sqlite3_bind_int64(s, 2, a->rank);
    sqlite3_bind_int64(s, 3, a->at ? a->at : gpc_now());
    gpc_st_bind_text(s, 4, a->provider);
    gpc_st_bind_text(s, 5, a->region);
    gpc_st_bind_text(s, 6, a->instance_type);
    gpc_st_bind_text(s, 7, a->outcome);
    gpc_st_bind_text(s, 8, a->error_code);
    gpc_st_bind_text(s, 9, a->error_message);
    gpc_st_bind_text(s, 10, a->zone);
    sqlite3_bind_int(s, 11, a->spot ? 1 : 0);
    sqlite3_bind_int64(s, 12, a->attempt);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_attempt_list(gpc_state *st, int64_t cluster_id, gpc_attempt_rec **out, size_t *n,
                     gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list attempts";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT id, cluster_id, rank, at, provider, region, zone, instance_type, "
                        "spot, attempt, outcome, error_code, error_message FROM attempts "
                        "WHERE cluster_id = ?1 ORDER BY id",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    gpc_attempt_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = gpc_st_step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = gpc_st_grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        gpc_attempt_rec *a = &arr[cnt];
        memset(a, 0, sizeof(*a));
        const char *t = "attempts";
        a->id = gpc_st_col_int(st, s, 0, t, 1, INT64_MAX, &ret, err);
        a->cluster_id = gpc_st_col_int(st, s, 1, t, 1, INT64_MAX, &ret, err);
        a->rank = (uint32_t)gpc_st_col_int(st, s, 2, t, 0, RANK_MAX, &ret, err);
        a->at = gpc_st_col_int(st, s, 3, t, 0, TIME_MAX, &ret, err);
        a->provider = gpc_st_col_dup(s, 4, err);
        a->region = gpc_st_col_dup(s, 5, err);
        a->zone = gpc_st_col_dup(s, 6, err);
        a->instance_type = gpc_st_col_dup(s, 7, err);
        a->spot = (int)gpc_st_col_int(st, s, 8, t, 0, 1, &ret, err);
        a->attempt = (uint32_t)gpc_st_col_int(st, s, 9, t, 0, UINT32_MAX, &ret, err);
        a->outcome = gpc_st_col_dup(s, 10, err);
        a->error_code = gpc_st_col_dup(s, 11, err);
        a->error_message = gpc_st_col_dup(s, 12, err);
        cnt++; /* counted even when a copy failed, so the free below sees it */
        if (ret)
            break;
        if (!a->provider || !a->region || !a->zone || !a->instance_type || !a->outcome ||
            !a->error_code || !a->error_message) {
            ret = GPC_ERR_NOMEM;
            break;
        }
        rc = gpc_st_step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_attempt_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

void gpc_attempt_list_free(gpc_attempt_rec *recs, size_t n)
{
    for (size_t i = 0; recs && i < n; i++) {
        /* the const is for callers filling a record to add; lists own theirs */
        free((char *)recs[i].provider);
        free((char *)recs[i].region);
        free((char *)recs[i].zone);
        free((char *)recs[i].instance_type);
        free((char *)recs[i].outcome);
        free((char *)recs[i].error_code);
        free((char *)recs[i].error_message);
    }
    free(recs);
}

int gpc_capacity_miss_add(gpc_state *st, const char *provider, const char *region,
                          const char *zone, const char *instance_type, int spot, int64_t at,
                          gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "record capacity miss";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO capacity_misses (provider, region, zone, instance_type, "
                        "spot, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &s, what, err))
        return GPC_ERR_STATE;
    gpc_st_bind_text(s, 1, provider);
    gpc_st_bind_text(s, 2, region);
    gpc_st_bind_text(s, 3, zone);
    gpc_st_bind_text(s, 4, instance_type);
    sqlite3_bind_int(s, 5, spot ? 1 : 0);
    sqlite3_bind_int64(s, 6, at);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_capacity_miss_last(gpc_state *st, const char *provider, const char *region,
                           const char *zone, const char *instance_type, int spot,
                           int64_t *at, gpc_error *err)
{
    *at = 0;
    const char *what = "read capacity misses";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT MAX(at) FROM capacity_misses WHERE provider = ?1 AND region = ?2 "
                        "AND zone = ?3 AND instance_type = ?4 AND spot = ?5",
                    &s, what, err))
        return GPC_ERR_STATE;
    gpc_st_bind_text(s, 1, provider);
    gpc_st_bind_text(s, 2, region);
    gpc_st_bind_text(s, 3, zone);
    gpc_st_bind_text(s, 4, instance_type);
    sqlite3_bind_int(s, 5, spot ? 1 : 0);
    int rc = gpc_st_step_first(st, s, what, err), bad = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        *at = sqlite3_column_int64(s, 0);
        if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || *at < 0 || *at > TIME_MAX) {
            const unsigned char *t = sqlite3_column_text(s, 0);
            bad = gpc_fail(err, GPC_ERR_STATE, "state %s: capacity_misses of %s %s %s: at: "
                           "'%.40s' is not a time (0..%lld)", st->dbpath, provider, region,
                           instance_type, t ? (const char *)t : "", (long long)TIME_MAX);
            *at = 0;
        }
    }
    sqlite3_finalize(s);
    if (bad)
        return bad;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_zone_cool_add(gpc_state *st, const char *provider, const char *region, const char *zone,
                      int64_t at, int64_t until, const char *why, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "record zone cooldown";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO zone_cooldowns (provider, region, zone, at, until, why) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &s, what, err))
        return GPC_ERR_STATE;
    gpc_st_bind_text(s, 1, provider);
    gpc_st_bind_text(s, 2, region);
    gpc_st_bind_text(s, 3, zone);
    sqlite3_bind_int64(s, 4, at);
    sqlite3_bind_int64(s, 5, until);
    gpc_st_bind_text(s, 6, why ? why : "");
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_zone_cool_get(gpc_state *st, const char *provider, const char *region, const char *zone,
                      int64_t now, gpc_zone_cool_rec *out, int *found, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    *found = 0;
    const char *what = "read zone cooldowns";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT at, until, why FROM zone_cooldowns WHERE provider = ?1 AND "
                        "region = ?2 AND zone = ?3 AND until > ?4 ORDER BY until DESC, id DESC "
                        "LIMIT 1",
                    &s, what, err))
        return GPC_ERR_STATE;
    gpc_st_bind_text(s, 1, provider);
    gpc_st_bind_text(s, 2, region);
    gpc_st_bind_text(s, 3, zone);
    sqlite3_bind_int64(s, 4, now);
    int rc = gpc_st_step_first(st, s, what, err), bad = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *why = sqlite3_column_text(s, 2);
        out->at = sqlite3_column_int64(s, 0);
        out->until = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 0) != SQLITE_INTEGER ||
            sqlite3_column_type(s, 1) != SQLITE_INTEGER || out->at < 0 || out->at > TIME_MAX ||
            out->until < 0 || out->until > TIME_MAX)
            bad = gpc_fail(err, GPC_ERR_STATE, "state %s: zone_cooldowns of %s %s %s: at or "
                           "until is not a time (0..%lld)", st->dbpath, provider, region, zone,
                           (long long)TIME_MAX);
        else if (!(out->why = strdup(why ? (const char *)why : "")))
            bad = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        *found = !bad;
        if (bad)
            memset(out, 0, sizeof(*out));
    }
    sqlite3_finalize(s);
    if (bad)
        return bad;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

void gpc_zone_cool_rec_free(gpc_zone_cool_rec *rec)
{
    if (!rec)
        return;
    free(rec->why);
    memset(rec, 0, sizeof(*rec));
}

int gpc_event_add(gpc_state *st, int64_t cluster_id, int rank,
                  const char *kind, const char *message, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "add event";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO events (cluster_id, at, rank, kind, message) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, gpc_now());
    sqlite3_bind_int(s, 3, rank);
    gpc_st_bind_text(s, 4, kind);
    gpc_st_bind_text(s, 5, message);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

void gpc_event_list_free(gpc_event_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(recs[i].kind);
        free(recs[i].message);
    }
    free(recs);
}

int gpc_event_list(gpc_state *st, int64_t cluster_id,
                   gpc_event_rec **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list events";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT id, cluster_id, at, rank, kind, message FROM events "
                        "WHERE cluster_id = ?1 ORDER BY id",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    gpc_event_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = gpc_st_step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = gpc_st_grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        gpc_event_rec *e = &arr[cnt];
        const char *t = "events";
        e->id = gpc_st_col_int(st, s, 0, t, 1, INT64_MAX, &ret, err);
        e->cluster_id = gpc_st_col_int(st, s, 1, t, 1, INT64_MAX, &ret, err);
        e->at = gpc_st_col_int(st, s, 2, t, 0, TIME_MAX, &ret, err);
        e->rank = (int)gpc_st_col_int(st, s, 3, t, -1, RANK_MAX, &ret, err);
        e->kind = gpc_st_col_dup(s, 4, err);
        e->message = gpc_st_col_dup(s, 5, err);
        cnt++; /* counted even when a copy failed, so the free below sees it */
        if (ret)
            break;
        if (!e->kind || !e->message) {
            ret = GPC_ERR_NOMEM;
            break;
        }
        rc = gpc_st_step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_event_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Ledger                                                              */

int gpc_ledger_open(gpc_state *st, int64_t cluster_id, int64_t node_id,
                    const char *provider, const char *instance_type,
                    double price_hourly, int64_t start_at, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "open ledger entry";
    sqlite3_stmt *s;
    /* The node's region and market as recorded now: the callers record
     * the node's place before they open its entry (create.c), and a later
     * failover may record the node elsewhere. */
    if (gpc_st_prep(st, "INSERT INTO ledger (cluster_id, node_id, provider, instance_type, "
                        "price_hourly, start_at, region, spot) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                        "COALESCE((SELECT region FROM nodes WHERE id = ?2), ''), "
                        "COALESCE((SELECT spot FROM nodes WHERE id = ?2), 0)) "
                        "ON CONFLICT (node_id) WHERE stop_at IS NULL DO NOTHING",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, node_id);
    gpc_st_bind_text(s, 3, provider);
    gpc_st_bind_text(s, 4, instance_type);
    sqlite3_bind_double(s, 5, price_hourly);
    sqlite3_bind_int64(s, 6, start_at);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_ledger_close(gpc_state *st, int64_t node_id, int64_t stop_at, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "close ledger entry";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "UPDATE ledger SET stop_at = ?2 "
                        "WHERE node_id = ?1 AND stop_at IS NULL",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, node_id);
    sqlite3_bind_int64(s, 2, stop_at);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : GPC_ERR_STATE;
}

int gpc_ledger_cost(gpc_state *st, int64_t cluster_id, int64_t now,
                    double *usd, gpc_error *err)
{
    *usd = 0.0;
    const char *what = "ledger cost";
    sqlite3_stmt *s;
    /* An open entry that started after `now` (clock skew) counts as zero. */
    if (gpc_st_prep(st, "SELECT TOTAL(MAX(COALESCE(stop_at, ?2) - start_at, 0) / 3600.0 "
                        "* price_hourly) FROM ledger WHERE cluster_id = ?1",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int64(s, 2, now);
    int rc = gpc_st_step_first(st, s, what, err);
    if (rc == SQLITE_ROW)
        *usd = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW && !(*usd >= 0 && *usd <= DBL_MAX)) {
        /* prices and times out of range in the ledger's rows */
        double got = *usd;
        *usd = 0;
        return gpc_fail(err, GPC_ERR_STATE, "state %s: ledger of cluster id %lld: the cost is "
                        "not a finite number >= 0 (got %g)", st->dbpath, (long long)cluster_id,
                        got);
    }
    return rc == SQLITE_ROW ? 0 : GPC_ERR_STATE;
}

/* ------------------------------------------------------------------ */
/* Fingerprint                                                         */

int gpc_state_fingerprint(gpc_state *st, const char *name, char out[65], gpc_error *err)
{
    gpc_cluster_rec c;
    gpc_error nf;
    gpc_error_clear(&nf);
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_FILE_MAX);
    int rc = 0;
    if (gpc_cluster_get(st, name, &c, &nf) != 0) {
        if (nf.code != GPC_ERR_NOT_FOUND)
            return gpc_fail(err, nf.code, "%s", nf.msg);
        rc = gpc_buf_addf(&b, err, "absent %s\n", name);
    } else {
        gpc_node_rec *nodes = NULL;
        size_t n = 0;
        rc = gpc_buf_addf(&b, err, "cluster %s %lld %s %s %s\n", c.name, (long long)c.id,
                          c.uid, c.spec_hash, c.provider);
        if (!rc)
            rc = gpc_node_list(st, c.id, 0, &nodes, &n, err);
        for (size_t i = 0; !rc && i < n; i++)
            rc = gpc_buf_addf(&b, err, "node %u %s\n", nodes[i].rank, nodes[i].provider_id);
        gpc_node_list_free(nodes, n);
        gpc_cluster_rec_free(&c);
    }
    if (!rc)
        gpc_sha256_hex(b.data, b.len, out);
    gpc_buf_free(&b);
    return rc;
}
