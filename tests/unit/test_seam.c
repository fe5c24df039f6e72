/*
 * test_seam.c - the provider seam's rules (gpc_provider_check,
 * gpc_provider_head_loss) and the provider data the state keeps for a
 * cluster and a node (schema version 3).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuctl/provider.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"

/* ---- gpc_provider_check ------------------------------------------------ */

static void test_every_table_fits(void **unused)
{
    (void)unused;
    size_t n = 0;
    for (size_t i = 0; gpc_providers[i]; i++, n++) {
        gpc_error err;
        gpc_error_clear(&err);
        if (gpc_provider_check(gpc_providers[i], &err))
            fail_msg("%s", err.msg);
    }
    assert_true(n >= 2); /* local and aws at least */
    /* the modes the real providers declare */
    assert_int_equal(gpc_provider_find("aws")->rdzv, GPC_RDZV_HEAD_IP);
    assert_int_equal(gpc_provider_find("aws")->rank, GPC_RANK_LAUNCH_INDEX);
    assert_int_equal(gpc_provider_find("local")->rdzv, GPC_RDZV_HEAD_IP);
    assert_int_equal(gpc_provider_find("local")->rank, GPC_RANK_ENGINE);
    assert_int_equal(gpc_provider_head_loss(gpc_provider_find("aws")),
                     GPC_HEAD_LOSS_WORKERS_TOO);
}

/* Operations for the made-up tables below: never called. */
static int x_create(void *c, const gpc_node_request *r, gpc_node_status *o, gpc_error *e)
{
    (void)c, (void)r, (void)o, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_creates(void *c, const gpc_node_request *r, size_t n, gpc_node_status *o,
                     gpc_error *e)
{
    (void)c, (void)r, (void)n, (void)o, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_describe(void *c, const gpc_node_ref *nd, gpc_node_status *o, gpc_error *e)
{
    (void)c, (void)nd, (void)o, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_delete(void *c, const gpc_node_ref *nd, gpc_error *e)
{
    (void)c, (void)nd, (void)e;
    return GPC_ERR_INTERNAL;
}
static int x_name(void *c, const struct gpc_cluster_ref *r, char *o, size_t n, gpc_error *e)
{
    (void)c, (void)r, (void)o, (void)n, (void)e;
    return GPC_ERR_INTERNAL;
}

/* Check `p` and expect `msg` ("" = accepted). */
static void expect(const gpc_provider *p, const char *msg)
{
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_provider_check(p, &err);
    if (!msg[0]) {
        if (rc)
            fail_msg("refused: %s", err.msg);
        return;
    }
    assert_int_equal(rc, GPC_ERR_INTERNAL);
    assert_string_equal(err.msg, msg);
}

static void test_combinations(void **unused)
{
    (void)unused;
    gpc_provider p = {.name = "t", .create_node = x_create, .describe_node = x_describe,
                      .delete_node = x_delete};
    expect(&p, ""); /* HEAD_IP + ENGINE, one by one */
    p.rank = GPC_RANK_RENDEZVOUS;
    expect(&p, "");
    p.rank = GPC_RANK_LAUNCH_INDEX;
    expect(&p, "provider t: launch-index ranks need create_nodes");
    p.create_nodes = x_creates;
    expect(&p, "");
    p.rank = GPC_RANK_SCHEDULER;
    expect(&p, "provider t: ranks from a scheduler need a group");
    p.rank = GPC_RANK_ENGINE;
    p.rdzv = GPC_RDZV_ON_NODE;
    expect(&p, "provider t: a rendezvous found on the node needs a group (the first host "
               "of one allocation)");
    p.rdzv = GPC_RDZV_NAME;
    expect(&p, "provider t: a named rendezvous needs rdzv_name");
    p.rdzv_name = x_name;
    expect(&p, "");
    assert_int_equal(gpc_provider_head_loss(&p), GPC_HEAD_LOSS_HEAD_ONLY);

    /* groups */
    p.caps = GPC_CAP_GROUP;
    p.rdzv = GPC_RDZV_HEAD_IP;
    expect(&p, "provider t: the nodes of a group are made together, so none can be told the "
               "head's IP: the rendezvous must be a name or found on the node");
    p.rdzv = GPC_RDZV_ON_NODE;
    expect(&p, "provider t: a group's nodes share one bootstrap: ranks must come from the "
               "scheduler or a launch index");
    p.rank = GPC_RANK_SCHEDULER;
    p.create_node = NULL; /* a group provider needs no create_node */
    expect(&p, "");
    assert_int_equal(gpc_provider_head_loss(&p), GPC_HEAD_LOSS_GROUP);
    p.create_nodes = NULL;
    expect(&p, "provider t: a group provider needs create_nodes");
    p.create_nodes = x_creates;
    p.delete_node = NULL;
    expect(&p, "provider t: describe_node and delete_node are required");

    /* plan-only tables are never driven */
    gpc_provider po = {.name = "p", .caps = GPC_CAP_PLAN_ONLY, .rdzv = GPC_RDZV_ON_NODE};
    expect(&po, "");
    /* a name an offer cannot hold (gpc_offer.provider, 16 bytes) would
     * plan as "no catalog row" (found with a 16-character test provider) */
    po.name = "scripted_elastic";
    expect(&po, "provider scripted_elastic: a name of more than 15 characters does not fit an "
                "offer");
    po.name = "scripted_elasti";
    expect(&po, "");
}

/* How launch.c makes each node, and where its bootstrap's rank comes
 * from: one rule for create, apply's check and `render`. */
static void test_rank_source(void **unused)
{
    (void)unused;
    const gpc_provider *aws = gpc_provider_find("aws"), *local = gpc_provider_find("local");
    /* aws: the head alone; the workers of 3+ nodes in one call */
    assert_int_equal(gpc_provider_batches(aws, 0, 3), 0);
    assert_int_equal(gpc_provider_batches(aws, 1, 2), 0); /* one worker: alone */
    assert_int_equal(gpc_provider_batches(aws, 1, 3), 1);
    assert_int_equal(gpc_provider_batches(aws, 2, 3), 1);
    assert_int_equal(gpc_provider_rank_source(aws, 0, 0), GPC_RANK_ENGINE);
    assert_int_equal(gpc_provider_rank_source(aws, 1, 0), GPC_RANK_ENGINE);
    assert_int_equal(gpc_provider_rank_source(aws, 1, 1), GPC_RANK_LAUNCH_INDEX);
    /* local: no create_nodes, every node alone with its own rank */
    assert_int_equal(gpc_provider_batches(local, 2, 8), 0);
    assert_int_equal(gpc_provider_rank_source(local, 2, 0), GPC_RANK_ENGINE);
    /* a group: every node in the call, ranks from the scheduler */
    gpc_provider g = {.name = "g", .caps = GPC_CAP_GROUP, .rdzv = GPC_RDZV_ON_NODE,
                      .rank = GPC_RANK_SCHEDULER, .create_nodes = x_creates};
    assert_int_equal(gpc_provider_batches(&g, 0, 1), 1);
    assert_int_equal(gpc_provider_rank_source(&g, 0, 1), GPC_RANK_SCHEDULER);
    /* workers numbered by the rendezvous: none for a worker, 0 for the head */
    gpc_provider r = {.name = "r", .rank = GPC_RANK_RENDEZVOUS, .create_node = x_create};
    assert_int_equal(gpc_provider_batches(&r, 1, 3), 0);
    assert_int_equal(gpc_provider_rank_source(&r, 0, 0), GPC_RANK_ENGINE);
    assert_int_equal(gpc_provider_rank_source(&r, 1, 0), GPC_RANK_RENDEZVOUS);
    r.create_nodes = x_creates; /* and made together when the provider can */
    assert_int_equal(gpc_provider_batches(&r, 1, 3), 1);
    assert_int_equal(gpc_provider_rank_source(&r, 1, 1), GPC_RANK_RENDEZVOUS);
}

/* ---- provider data in the state ----------------------------------------- */

static char dir[256];

static int setup(void **unused)
{
    (void)unused;
    snprintf(dir, sizeof(dir), "/tmp/gpuctl-test-seam-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **unused)
{
    (void)unused;
    gpc_error err;
    gpc_error_clear(&err);
    return gpc_rm_rf(dir, &err);
}

static gpc_state *open_state(void)
{
    gpc_state *st = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_state_open(dir, &st, &err))
        fail_msg("%s", err.msg);
    return st;
}

static void test_provider_data(void **unused)
{
    (void)unused;
    gpc_state *st = open_state();
    gpc_error err;
    gpc_error_clear(&err);
    gpc_cluster_rec c = {.name = "d", .uid = "u1", .provider = "local", .spec_hash = "h",
                         .spec_json = "{}", .spec_path = "", .nodes = 1, .exit_code = -1,
                         .provider_data = "{\"job\":\"42\"}"};
    assert_int_equal(gpc_cluster_insert(st, &c, &err), 0);
    gpc_node_rec nd = {.cluster_id = c.id, .rank = 0, .name = "d-0", .provider = "local",
                       .exit_code = -1, .provider_data = "{\"op\":\"https://x/1\"}"};
    assert_int_equal(gpc_node_insert(st, &nd, &err), 0);
    /* a record without provider data keeps "" (NULL binds as "") */
    gpc_node_rec nd1 = {.cluster_id = c.id, .rank = 1, .name = "d-1", .provider = "local",
                        .exit_code = -1};
    assert_int_equal(gpc_node_insert(st, &nd1, &err), 0);

    gpc_cluster_rec got;
    assert_int_equal(gpc_cluster_get(st, "d", &got, &err), 0);
    assert_string_equal(got.provider_data, "{\"job\":\"42\"}");
    gpc_cluster_rec_free(&got);
    assert_int_equal(gpc_cluster_set_provider_data(st, c.id, "{\"job\":\"43\"}", &err), 0);
    assert_int_equal(gpc_cluster_get(st, "d", &got, &err), 0);
    assert_string_equal(got.provider_data, "{\"job\":\"43\"}");
    assert_string_equal(got.spec_json, "{}"); /* nothing else changed */
    gpc_cluster_rec_free(&got);
    assert_int_equal(gpc_cluster_set_provider_data(st, 999, "{}", &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "cluster id 999 not found");

    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_node_list(st, c.id, 1, &nodes, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(nodes[0].provider_data, "{\"op\":\"https://x/1\"}");
    assert_string_equal(nodes[1].provider_data, "");
    gpc_node_list_free(nodes, n);
    gpc_state_close(st);
}

/* A state of schema version 2 (before provider data) migrates: its rows
 * stay and get "" provider data. */
static void test_migrate_from_2(void **unused)
{
    (void)unused;
    gpc_state *st = open_state();
    gpc_error err;
    gpc_error_clear(&err);
    gpc_cluster_rec c = {.name = "old", .uid = "u2", .provider = "local", .spec_hash = "h",
                         .spec_json = "{}", .spec_path = "", .nodes = 1, .exit_code = -1};
    assert_int_equal(gpc_cluster_insert(st, &c, &err), 0);
    gpc_node_rec nd = {.cluster_id = c.id, .rank = 0, .name = "old-0", .provider = "local",
                       .exit_code = -1};
    assert_int_equal(gpc_node_insert(st, &nd, &err), 0);
    gpc_state_close(st);

    /* take the database back to version 2 as it was (the columns of
     * versions 3 and 4 and the table of version 5 dropped) */
    char path[320];
    snprintf(path, sizeof(path), "%s/gpuctl.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "ALTER TABLE clusters DROP COLUMN provider_data;"
                                      "ALTER TABLE nodes DROP COLUMN provider_data;"
                                      "ALTER TABLE ledger DROP COLUMN region;"
                                      "ALTER TABLE ledger DROP COLUMN spot;"
                                      "DROP TABLE zone_cooldowns;"
                                      "PRAGMA user_version = 2;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    st = open_state();
    gpc_cluster_rec got;
    assert_int_equal(gpc_cluster_get(st, "old", &got, &err), 0);
    assert_string_equal(got.uid, "u2");
    assert_string_equal(got.provider_data, "");
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    assert_int_equal(gpc_node_list(st, got.id, 1, &nodes, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].name, "old-0");
    assert_string_equal(nodes[0].provider_data, "");
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&got);
    assert_int_equal(gpc_state_check(st, &err), 0);
    gpc_state_close(st);

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 5);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_table_fits),
        cmocka_unit_test(test_combinations),
        cmocka_unit_test(test_rank_source),
        cmocka_unit_test_setup_teardown(test_provider_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_2, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
