/* state_records.c - clusters and nodes in the state (state.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_db.h"
#include "gpuctl/catalog.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* Clusters                                                            */

#define CLUSTER_COLS "id, name, uid, provider, spec_hash, spec_json, spec_path, " \
                     "nodes, rdzv_port, phase, exit_code, created_at, updated_at, " \
                     "destroyed_at, provider_data"

void gpc_cluster_rec_free(gpc_cluster_rec *rec)
{
    if (!rec)
        return;
    free(rec->name);
    free(rec->uid);
    free(rec->provider);
    free(rec->spec_hash);
    free(rec->spec_json);
    free(rec->spec_path);
    free(rec->provider_data);
    memset(rec, 0, sizeof(*rec));
}

void gpc_cluster_list_free(gpc_cluster_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        gpc_cluster_rec_free(&recs[i]);
    free(recs);
}

static int read_cluster(gpc_state *st, sqlite3_stmt *s, gpc_cluster_rec *r,
                        gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *t = "clusters";
    int rc = 0;
    r->id = gpc_st_col_int(st, s, 0, t, 1, INT64_MAX, &rc, err);
    r->name = gpc_st_col_dup(s, 1, err);
    r->uid = gpc_st_col_dup(s, 2, err);
    r->provider = gpc_st_col_dup(s, 3, err);
    r->spec_hash = gpc_st_col_dup(s, 4, err);
    r->spec_json = gpc_st_col_dup(s, 5, err);
    r->spec_path = gpc_st_col_dup(s, 6, err);
    r->nodes = (uint32_t)gpc_st_col_int(st, s, 7, t, 0, GPC_SPEC_NODES_MAX, &rc, err);
    r->rdzv_port = (uint32_t)gpc_st_col_int(st, s, 8, t, 0, 65535, &rc, err);
    if (!rc)
        rc = gpc_st_col_phase(st, s, 9, t, &r->phase, err);
    r->exit_code = (int)gpc_st_col_int(st, s, 10, t, -1, 255, &rc, err);
    r->created_at = gpc_st_col_int(st, s, 11, t, 0, TIME_MAX, &rc, err);
    r->updated_at = gpc_st_col_int(st, s, 12, t, 0, TIME_MAX, &rc, err);
    r->destroyed_at = gpc_st_col_int(st, s, 13, t, 0, TIME_MAX, &rc, err);
    r->provider_data = gpc_st_col_dup(s, 14, err);
    if (!rc && (!r->name || !r->uid || !r->provider || !r->spec_hash ||
                !r->spec_json || !r->spec_path || !r->provider_data))
        rc = GPC_ERR_NOMEM;
    if (rc)
        gpc_cluster_rec_free(r);
    return rc;
}

/* Bind the fields shared by insert and update as ?1..?13. */
static void bind_cluster(sqlite3_stmt *s, const gpc_cluster_rec *r)
{
    gpc_st_bind_text(s, 1, r->name);
    gpc_st_bind_text(s, 2, r->uid);
    gpc_st_bind_text(s, 3, r->provider);
    gpc_st_bind_text(s, 4, r->spec_hash);
    gpc_st_bind_text(s, 5, r->spec_json);
    gpc_st_bind_text(s, 6, r->spec_path);
    sqlite3_bind_int64(s, 7, r->nodes);
    sqlite3_bind_int64(s, 8, r->rdzv_port);
    gpc_st_bind_text(s, 9, gpc_phase_name(r->phase));
    sqlite3_bind_int(s, 10, r->exit_code);
    sqlite3_bind_int64(s, 11, r->created_at);
    sqlite3_bind_int64(s, 12, r->updated_at);
    sqlite3_bind_int64(s, 13, r->destroyed_at);
    gpc_st_bind_text(s, 14, r->provider_data);
}

/* After a failed step (err already holds the SQLite message). */
static int cluster_write_fail(int rc, const gpc_cluster_rec *r, gpc_error *err)
{
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return gpc_fail_replace(err, GPC_ERR_STATE, "cluster '%s' already exists",
                                gpc_st_nz(r->name));
    return GPC_ERR_STATE;
}

static int cluster_validate(gpc_state *st, const gpc_cluster_rec *r, gpc_error *err)
{
    if (!r->name || !*r->name)
        return gpc_fail(err, GPC_ERR_STATE, "state %s: cluster name is empty", st->dbpath);
    if (!gpc_st_phase_valid(r->phase))
        return gpc_fail(err, GPC_ERR_STATE, "state %s: invalid phase %d for cluster '%s'",
                        st->dbpath, (int)r->phase, r->name);
    return 0;
}

int gpc_cluster_insert(gpc_state *st, gpc_cluster_rec *rec, gpc_error *err)
{
    if (gpc_st_write_guard(st, err) || cluster_validate(st, rec, err))
        return GPC_ERR_STATE;
    if (rec->created_at == 0)
        rec->created_at = gpc_now();
    if (rec->updated_at == 0)
        rec->updated_at = rec->created_at;
    const char *what = "insert cluster";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO clusters (name, uid, provider, spec_hash, spec_json, "
                        "spec_path, nodes, rdzv_port, phase, exit_code, created_at, "
                        "updated_at, destroyed_at, provider_data) VALUES "
                        "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                    &s, what, err))
        return GPC_ERR_STATE;
    bind_cluster(s, rec);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return cluster_write_fail(rc, rec, err);
    rec->id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

int gpc_cluster_update(gpc_state *st, const gpc_cluster_rec *rec, gpc_error *err)
{
    if (gpc_st_write_guard(st, err) || cluster_validate(st, rec, err))
        return GPC_ERR_STATE;
    const char *what = "update cluster";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "UPDATE clusters SET name = ?1, uid = ?2, provider = ?3, "
                        "spec_hash = ?4, spec_json = ?5, spec_path = ?6, nodes = ?7, "
                        "rdzv_port = ?8, phase = ?9, exit_code = ?10, created_at = ?11, "
                        "updated_at = ?12, destroyed_at = ?13, provider_data = ?14 "
                        "WHERE id = ?15",
                    &s, what, err))
        return GPC_ERR_STATE;
    bind_cluster(s, rec);
    sqlite3_bind_int64(s, 15, rec->id);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return cluster_write_fail(rc, rec, err);
    if (sqlite3_changes(st->db) == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "cluster id %lld not found",
                        (long long)rec->id);
    return 0;
}

static int cluster_get1(gpc_state *st, const char *sql, const char *name, int64_t id,
                        gpc_cluster_rec *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *what = "get cluster";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, sql, &s, what, err))
        return GPC_ERR_STATE;
    if (name)
        gpc_st_bind_text(s, 1, name);
    else
        sqlite3_bind_int64(s, 1, id);
    int rc = gpc_st_step_first(st, s, what, err);
    int ret;
    if (rc == SQLITE_ROW)
        ret = read_cluster(st, s, out, err);
    else if (rc == SQLITE_DONE)
        ret = name ? gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster named '%s'", name)
                   : gpc_fail(err, GPC_ERR_NOT_FOUND, "no cluster with id %lld",
                              (long long)id);
    else
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    return ret;
}

int gpc_cluster_set_provider_data(gpc_state *st, int64_t id, const char *data, gpc_error *err)
{
    if (gpc_st_write_guard(st, err))
        return GPC_ERR_STATE;
    const char *what = "update cluster provider data";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "UPDATE clusters SET provider_data = ?1 WHERE id = ?2", &s, what, err))
        return GPC_ERR_STATE;
    gpc_st_bind_text(s, 1, data);
    sqlite3_bind_int64(s, 2, id);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return GPC_ERR_STATE;
    if (sqlite3_changes(st->db) == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "cluster id %lld not found", (long long)id);
    return 0;
}

int gpc_cluster_get(gpc_state *st, const char *name, gpc_cluster_rec *out,
                    gpc_error *err)
{
    return cluster_get1(st, "SELECT " CLUSTER_COLS " FROM clusters "
                            "WHERE name = ?1 AND destroyed_at = 0",
                        gpc_st_nz(name), 0, out, err);
}

int gpc_cluster_get_by_id(gpc_state *st, int64_t id, gpc_cluster_rec *out,
                          gpc_error *err)
{
    return cluster_get1(st, "SELECT " CLUSTER_COLS " FROM clusters WHERE id = ?1",
                        NULL, id, out, err);
}

/* Grow an array of `size`-byte records to hold one more. */
int gpc_st_grow(void **arr, size_t *cap, size_t n, size_t size, gpc_error *err)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

int gpc_cluster_list(gpc_state *st, int all, gpc_cluster_rec **out, size_t *n,
                     gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list clusters";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT " CLUSTER_COLS " FROM clusters "
                        "WHERE ?1 OR destroyed_at = 0 ORDER BY name, id",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int(s, 1, all ? 1 : 0);
    gpc_cluster_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = gpc_st_step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = gpc_st_grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        if ((ret = read_cluster(st, s, &arr[cnt], err)) != 0)
            break;
        cnt++;
        rc = gpc_st_step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_cluster_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */

#define NODE_COLS "id, cluster_id, rank, name, provider, provider_id, client_token, " \
                  "region, zone, instance_type, spot, private_ip, price_hourly, "    \
                  "phase, exit_code, created_at, started_at, ended_at, provider_data"

void gpc_node_rec_free(gpc_node_rec *rec)
{
    if (!rec)
        return;
    free(rec->name);
    free(rec->provider);
    free(rec->provider_id);
    free(rec->client_token);
    free(rec->region);
    free(rec->zone);
    free(rec->instance_type);
    free(rec->private_ip);
    free(rec->provider_data);
    memset(rec, 0, sizeof(*rec));
}

void gpc_node_list_free(gpc_node_rec *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        gpc_node_rec_free(&recs[i]);
    free(recs);
}

static int read_node(gpc_state *st, sqlite3_stmt *s, gpc_node_rec *r, gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *t = "nodes";
    int rc = 0;
    r->id = gpc_st_col_int(st, s, 0, t, 1, INT64_MAX, &rc, err);
    r->cluster_id = gpc_st_col_int(st, s, 1, t, 1, INT64_MAX, &rc, err);
    r->rank = (uint32_t)gpc_st_col_int(st, s, 2, t, 0, RANK_MAX, &rc, err);
    r->name = gpc_st_col_dup(s, 3, err);
    r->provider = gpc_st_col_dup(s, 4, err);
    r->provider_id = gpc_st_col_dup(s, 5, err);
    r->client_token = gpc_st_col_dup(s, 6, err);
    r->region = gpc_st_col_dup(s, 7, err);
    r->zone = gpc_st_col_dup(s, 8, err);
    r->instance_type = gpc_st_col_dup(s, 9, err);
    r->spot = (int)gpc_st_col_int(st, s, 10, t, 0, 1, &rc, err);
    r->private_ip = gpc_st_col_dup(s, 11, err);
    r->price_hourly = gpc_st_col_real(st, s, 12, t, 0, GPC_CATALOG_PRICE_MAX, &rc, err);
    if (!rc)
        rc = gpc_st_col_phase(st, s, 13, t, &r->phase, err);
    r->exit_code = (int)gpc_st_col_int(st, s, 14, t, -1, 255, &rc, err);
    r->created_at = gpc_st_col_int(st, s, 15, t, 0, TIME_MAX, &rc, err);
    r->started_at = gpc_st_col_int(st, s, 16, t, 0, TIME_MAX, &rc, err);
    r->ended_at = gpc_st_col_int(st, s, 17, t, 0, TIME_MAX, &rc, err);
    r->provider_data = gpc_st_col_dup(s, 18, err);
    if (!rc && (!r->name || !r->provider || !r->provider_id || !r->client_token ||
                !r->region || !r->zone || !r->instance_type || !r->private_ip ||
                !r->provider_data))
        rc = GPC_ERR_NOMEM;
    if (rc)
        gpc_node_rec_free(r);
    return rc;
}

/* Bind the fields shared by insert and update as ?1..?17. */
static void bind_node(sqlite3_stmt *s, const gpc_node_rec *r)
{
    sqlite3_bind_int64(s, 1, r->cluster_id);
    sqlite3_bind_int64(s, 2, r->rank);
    gpc_st_bind_text(s, 3, r->name);
    gpc_st_bind_text(s, 4, r->provider);
    gpc_st_bind_text(s, 5, r->provider_id);
    gpc_st_bind_text(s, 6, r->client_token);
    gpc_st_bind_text(s, 7, r->region);
    gpc_st_bind_text(s, 8, r->zone);
    gpc_st_bind_text(s, 9, r->instance_type);
    sqlite3_bind_int(s, 10, r->spot ? 1 : 0);
    gpc_st_bind_text(s, 11, r->private_ip);
    sqlite3_bind_double(s, 12, r->price_hourly);
    gpc_st_bind_text(s, 13, gpc_phase_name(r->phase));
    sqlite3_bind_int(s, 14, r->exit_code);
    sqlite3_bind_int64(s, 15, r->created_at);
    sqlite3_bind_int64(s, 16, r->started_at);
    sqlite3_bind_int64(s, 17, r->ended_at);
    gpc_st_bind_text(s, 18, r->provider_data);
}

static int node_write_fail(int rc, const gpc_node_rec *r, gpc_error *err)
{
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return gpc_fail_replace(err, GPC_ERR_STATE,
                                "node rank %u of cluster id %lld already exists",
                                (unsigned)r->rank, (long long)r->cluster_id);
    return GPC_ERR_STATE;
}

static int node_validate(gpc_state *st, const gpc_node_rec *r, gpc_error *err)
{
    if (!gpc_st_phase_valid(r->phase))
        return gpc_fail(err, GPC_ERR_STATE, "state %s: invalid phase %d for node '%s'",
                        st->dbpath, (int)r->phase, gpc_st_nz(r->name));
    return 0;
}

int gpc_node_insert(gpc_state *st, gpc_node_rec *rec, gpc_error *err)
{
    if (gpc_st_write_guard(st, err) || node_validate(st, rec, err))
        return GPC_ERR_STATE;
    if (rec->created_at == 0)
        rec->created_at = gpc_now();
    const char *what = "insert node";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "INSERT INTO nodes (cluster_id, rank, name, provider, provider_id, "
                        "client_token, region, zone, instance_type, spot, private_ip, "
                        "price_hourly, phase, exit_code, created_at, started_at, ended_at, "
                        "provider_data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                        "?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                    &s, what, err))
        return GPC_ERR_STATE;
    bind_node(s, rec);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return node_write_fail(rc, rec, err);
    rec->id = sqlite3_last_insert_rowid(st->db);
    return 0;
}

int gpc_node_update(gpc_state *st, const gpc_node_rec *rec, gpc_error *err)
{
    if (gpc_st_write_guard(st, err) || node_validate(st, rec, err))
        return GPC_ERR_STATE;
    const char *what = "update node";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "UPDATE nodes SET cluster_id = ?1, rank = ?2, name = ?3, "
                        "provider = ?4, provider_id = ?5, client_token = ?6, region = ?7, "
                        "zone = ?8, instance_type = ?9, spot = ?10, private_ip = ?11, "
                        "price_hourly = ?12, phase = ?13, exit_code = ?14, created_at = ?15, "
                        "started_at = ?16, ended_at = ?17, provider_data = ?18 WHERE id = ?19",
                    &s, what, err))
        return GPC_ERR_STATE;
    bind_node(s, rec);
    sqlite3_bind_int64(s, 19, rec->id);
    int rc = gpc_st_step_first(st, s, what, err);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return node_write_fail(rc, rec, err);
    if (sqlite3_changes(st->db) == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "node id %lld not found",
                        (long long)rec->id);
    return 0;
}

int gpc_node_list(gpc_state *st, int64_t cluster_id, int include_terminated,
                  gpc_node_rec **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    const char *what = "list nodes";
    sqlite3_stmt *s;
    if (gpc_st_prep(st, "SELECT " NODE_COLS " FROM nodes WHERE cluster_id = ?1 "
                        "AND (?2 OR phase <> 'terminated') ORDER BY rank, id",
                    &s, what, err))
        return GPC_ERR_STATE;
    sqlite3_bind_int64(s, 1, cluster_id);
    sqlite3_bind_int(s, 2, include_terminated ? 1 : 0);
    gpc_node_rec *arr = NULL;
    size_t cnt = 0, cap = 0;
    int ret = 0;
    int rc = gpc_st_step_first(st, s, what, err);
    while (rc == SQLITE_ROW) {
        if ((ret = gpc_st_grow((void **)&arr, &cap, cnt, sizeof(*arr), err)) != 0)
            break;
        if ((ret = read_node(st, s, &arr[cnt], err)) != 0)
            break;
        cnt++;
        rc = gpc_st_step_next(st, s, what, err);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = GPC_ERR_STATE;
    sqlite3_finalize(s);
    if (ret) {
        gpc_node_list_free(arr, cnt);
        return ret;
    }
    *out = arr;
    *n = cnt;
    return 0;
}
