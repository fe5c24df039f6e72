/*
 * test_engine_apply.c - gpc_apply against the scripted providers: the
 * calls of a launch, one by one and in one batch, the failover walk over
 * zones, regions and offers, the capacity skip and the rollback of a
 * failed launch attempt (docs/testing.md, "The engine tests").
 *
 * Every expected call sequence is worked out from src/engine/apply.c,
 * launch.c and create.c: the comments say which step makes which call.
 * The clock is fixed at ENG_T0 and moves only when the engine sleeps (the
 * boot poll: 5 s); a scripted node boots for 5 s, then runs for 60 s.
 */
#include "engine_harness.h"

#include <stdio.h>
#include <string.h>

#define SPEC(prov, nodes)                                                            \
    "name: job\nprovider: " prov "\nnodes: " #nodes "\nrun:\n  command: python3 train.py\n"

/* One node, one zone: list the offers (plan), the zones, create the head
 * (its IP comes with the answer), poll until it runs (booting at +0,
 * running at +5), finish it (nodes_running), and refresh. */
static void test_apply_one_node(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.created, 1);
    assert_int_equal(res.adopted, 0);
    assert_int_equal(res.unchanged, 0);
    assert_int_equal(res.waited, 0);
    assert_int_equal(res.phase, GPC_PHASE_RUNNING);
    assert_int_equal(res.exit_code, -1);
    assert_int_equal(res.cluster_id, 1);
    assert_int_equal(e->now, ENG_T0 + 5);

    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_int_equal(c.id, 1);
    assert_string_equal(c.provider, "scripted");
    assert_int_equal(c.nodes, 1);
    assert_int_equal(c.rdzv_port, 29400);
    assert_int_equal(c.phase, GPC_PHASE_RUNNING);
    assert_int_equal(c.exit_code, -1);
    assert_int_equal(c.created_at, ENG_T0);
    assert_int_equal(c.updated_at, ENG_T0 + 5);
    assert_int_equal(c.destroyed_at, 0);
    char hash[65], recorded[160];
    gpc_error_clear(&err);
    assert_int_equal(gpc_spec_hash(e->spec, hash, &err), 0);
    assert_string_equal(c.spec_hash, hash);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1), "0 a1 r1/r1a t1 created\n");
    snprintf(recorded, sizeof(recorded),
             "- apply: cluster recorded: 1 node(s) on scripted, spec %.12s\n", hash);
    char events[1024];
    snprintf(events, sizeof(events), "%s"
             "0 create: created job-0 as s-1 in r1/r1a\n"
             "0 phase: booting -> running\n"
             "- phase: cluster pending -> running\n", recorded);
    assert_string_equal(eng_events(e, 1), events);
    assert_string_equal(eng_said(e),
        "info: created node job-0 (s-1)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
    gpc_cluster_rec_free(&c);

    /* The same spec again: nothing to create, the nodes are finished again
     * (a killed apply may have left them unfinished), and refreshed. */
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.created, 0);
    assert_int_equal(res.unchanged, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_one_node, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
