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
#include <stdlib.h>
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
    /* the first job's record: what a later apply compares with (rerun.c) */
    snprintf(events, sizeof(events), "%s"
             "0 create: created job-0 as s-1 in r1/r1a\n"
             "- job: job 1: spec %s, workdir none\n"
             "0 phase: booting -> running\n"
             "- phase: cluster pending -> running\n", recorded, hash);
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

/* Destroy cluster `name` (it must succeed); forget its calls. */
static void destroy(eng *e, const char *name)
{
    gpc_cluster_rec c;
    eng_cluster(e, name, &c);
    int deleted = 0;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_cluster_destroy(&e->s, &c, &deleted, &err))
        fail_msg("destroy: %s", err.msg);
    gpc_cluster_rec_free(&c);
    eng_calls(e);
    eng_said(e);
}

/* Three nodes one by one: the head first, then each worker with the head's
 * address (head IP rendezvous, the rank given by the engine). */
static void test_apply_three_nodes(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-3\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "nodes_running cluster=job ids=s-1,s-2,s-3 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n");
    assert_int_equal(res.created, 3);
    assert_int_equal(res.phase, GPC_PHASE_RUNNING);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 running(-1) started=+0 ended=-\n"
        "2 s-3 job-2-U1-a1 r1/r1a t1 10.0.0.3 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 created\n"
        "2 a1 r1/r1a t1 created\n");
}

/* A provider with create_nodes: the workers in one call, one payload whose
 * rank is the first worker's plus the node's launch index; each node is
 * recorded with the batch's token and its index. */
static void test_apply_batch(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_batch", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_nodes n=2 first=job-1 rank=1+index region=r1 zone=r1a type=t1 "
        "token=job-w1-U1-a1 attempt=1 head=10.0.0.1 -> s-2,s-3\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "nodes_running cluster=job ids=s-1,s-2,s-3 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n");
    assert_int_equal(res.created, 3);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-w1-U1-a1/0 r1/r1a t1 10.0.0.2 running(-1) started=+0 ended=-\n"
        "2 s-3 job-w1-U1-a1/1 r1/r1a t1 10.0.0.3 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 created\n"
        "2 a1 r1/r1a t1 created\n");
}

/* One worker is no batch: it is created alone, its rank in its payload. */
static void test_apply_batch_of_one(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_batch", 2));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "nodes_running cluster=job ids=s-1,s-2 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n");
}

/* A provider with only the required operations: no zones (the offer's,
 * none), the head's IP asked with describe_node before the workers are
 * made, no boot poll, and a refresh of one describe_node per node, which
 * records the IPs. */
static void test_apply_basic(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_basic", 2));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_node region=r1 id=s-1 -> booting\n"
        "create_node name=job-1 rank=1 region=r1 zone=- type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "describe_node region=r1 id=s-1 -> booting\n"
        "describe_node region=r1 id=s-2 -> booting\n");
    assert_int_equal(e->now, ENG_T0);
    assert_int_equal(res.created, 2);
    assert_int_equal(res.phase, GPC_PHASE_BOOTING);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/- t1 10.0.0.1 booting(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/- t1 10.0.0.2 booting(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/- t1 created\n"
        "1 a1 r1/- t1 created\n");
}

/* No capacity in the first zone: the next zone, a new launch attempt and
 * token; the zone is remembered as a capacity miss. */
static void test_zone_capacity_next_zone(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", "zone=r1a", 1, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR capacity\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.created, 1);
    assert_int_equal(res.phase, GPC_PHASE_RUNNING);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a2 r1/r1b t1 10.0.0.1 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error capacity: scripted: create_node: capacity (scripted)\n"
        "0 a2 r1/r1b t1 created\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: no capacity for t1 in r1a; trying zone r1b\n"
        "info: created node job-0 (s-1)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
    int64_t miss = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_capacity_miss_last(e->s.st, "scripted", "r1", "r1a", "t1", 0, &miss,
                                            &err), 0);
    assert_int_equal(miss, ENG_T0);
    assert_int_equal(gpc_capacity_miss_last(e->s.st, "scripted", "r1", "r1b", "t1", 0, &miss,
                                            &err), 0);
    assert_int_equal(miss, 0);
}

/* A worker meets no capacity: the head and the worker this attempt made
 * are deleted, their rows go back to pending, and the next zone gets the
 * whole cluster again (new tokens, the new head's address). */
static void test_rollback_next_zone(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", "zone=r1a rank=2", 1, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 "
        "head=10.0.0.1 -> ERR capacity\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> s-3\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1b type=t1 token=job-1-U1-a2 attempt=2 "
        "head=10.0.0.3 -> s-4\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1b type=t1 token=job-2-U1-a2 attempt=2 "
        "head=10.0.0.3 -> s-5\n"
        "describe_nodes cluster=job ids=s-3,s-4,s-5 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-3,s-4,s-5 -> running,running,running\n"
        "nodes_running cluster=job ids=s-3,s-4,s-5 -> ok\n"
        "describe_nodes cluster=job ids=s-3,s-4,s-5 -> running,running,running\n");
    assert_int_equal(res.created, 3);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-3 job-0-U1-a2 r1/r1b t1 10.0.0.3 running(-1) started=+0 ended=-\n"
        "1 s-4 job-1-U1-a2 r1/r1b t1 10.0.0.4 running(-1) started=+0 ended=-\n"
        "2 s-5 job-2-U1-a2 r1/r1b t1 10.0.0.5 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 created\n"
        "2 a1 r1/r1a t1 error capacity: scripted: create_node: capacity (scripted)\n"
        "0 a2 r1/r1b t1 created\n"
        "1 a2 r1/r1b t1 created\n"
        "2 a2 r1/r1b t1 created\n");
    char hash[65], want[2048];
    gpc_error_clear(&err);
    assert_int_equal(gpc_spec_hash(e->spec, hash, &err), 0);
    snprintf(want, sizeof(want),
             "- apply: cluster recorded: 3 node(s) on scripted, spec %.12s\n"
             "0 create: created job-0 as s-1 in r1/r1a\n"
             "1 create: created job-1 as s-2 in r1/r1a\n"
             "2 error: create failed: scripted: create_node: capacity (scripted)\n"
             "0 delete: removed s-1 after a failed launch\n"
             "1 delete: removed s-2 after a failed launch\n"
             "- recovery: zone r1a of r1 passed over for 30m (spot.zone_cooldown, until "
             "2023-11-14T22:43:20Z): no capacity for t1 on-demand\n"
             "0 create: created job-0 as s-3 in r1/r1b\n"
             "1 create: created job-1 as s-4 in r1/r1b\n"
             "2 create: created job-2 as s-5 in r1/r1b\n"
             "- job: job 1: spec %s, workdir none\n"
             "0 phase: booting -> running\n"
             "1 phase: booting -> running\n"
             "2 phase: booting -> running\n"
             "- phase: cluster pending -> running\n", hash, hash);
    assert_string_equal(eng_events(e, 1), want);
    assert_string_equal(eng_said(e),
        "info: created node job-0 (s-1)\n"
        "info: created node job-1 (s-2)\n"
        "info: gpuctl: launch in r1/r1a failed (scripted: create_node: capacity (scripted)); "
        "removing what it created\n"
        "info: gpuctl: no capacity for t1 in r1a; trying zone r1b\n"
        "info: created node job-0 (s-3)\n"
        "info: created node job-1 (s-4)\n"
        "info: created node job-2 (s-5)\n"
        "info: [   0s] job: 0 of 3 node(s) running\n"
        "info: [   5s] job: 3 of 3 node(s) running\n");
}

/* The same in one batch: the workers' create_nodes meets no capacity, the
 * head goes, and the next zone gets the head and one batch again. */
static void test_rollback_batch(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_nodes", "zone=r1a", 1, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted_batch", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_nodes n=2 first=job-1 rank=1+index region=r1 zone=r1a type=t1 "
        "token=job-w1-U1-a1 attempt=1 head=10.0.0.1 -> ERR capacity\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> s-2\n"
        "create_nodes n=2 first=job-1 rank=1+index region=r1 zone=r1b type=t1 "
        "token=job-w1-U1-a2 attempt=2 head=10.0.0.2 -> s-3,s-4\n"
        "describe_nodes cluster=job ids=s-2,s-3,s-4 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-2,s-3,s-4 -> running,running,running\n"
        "nodes_running cluster=job ids=s-2,s-3,s-4 -> ok\n"
        "describe_nodes cluster=job ids=s-2,s-3,s-4 -> running,running,running\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-2 job-0-U1-a2 r1/r1b t1 10.0.0.2 running(-1) started=+0 ended=-\n"
        "1 s-3 job-w1-U1-a2/0 r1/r1b t1 10.0.0.3 running(-1) started=+0 ended=-\n"
        "2 s-4 job-w1-U1-a2/1 r1/r1b t1 10.0.0.4 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 error capacity: scripted: create_nodes: capacity (scripted)\n"
        "2 a1 r1/r1a t1 error capacity: scripted: create_nodes: capacity (scripted)\n"
        "0 a2 r1/r1b t1 created\n"
        "1 a2 r1/r1b t1 created\n"
        "2 a2 r1/r1b t1 created\n");
}

/* A worker meets no capacity in the only zone of the only offer: what
 * the attempt made is deleted, the provider cleans up, and the cluster
 * is closed (failed, destroyed): nothing is left recorded as alive. */
static void test_rollback_closes(void **state)
{
    eng *e = *state;
    scripted_fail("create_node", "rank=2", 1, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "scripted: create_node: capacity (scripted)");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 "
        "head=10.0.0.1 -> ERR capacity\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n");
    assert_int_equal(res.created, 0);
    assert_int_equal(res.cluster_id, 1);
    assert_int_equal(res.phase, GPC_PHASE_FAILED);
    gpc_cluster_rec c;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &c, &err), GPC_ERR_NOT_FOUND);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get_by_id(e->s.st, 1, &c, &err), 0);
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    assert_int_equal(c.destroyed_at, ENG_T0);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_nodes(e, 1),
        "0 - - r1/r1a t1 - terminated(-1) started=- ended=+0\n"
        "1 - - r1/r1a t1 - terminated(-1) started=- ended=+0\n"
        "2 - - r1/r1a t1 - terminated(-1) started=- ended=+0\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 created\n"
        "2 a1 r1/r1a t1 error capacity: scripted: create_node: capacity (scripted)\n");
}

/* A worker's create fails with an error that does not say whether the
 * provider made the node: the head and the first worker are deleted, but
 * the cluster stays recorded (failed) with that create's intent, for the
 * next apply to look up; the message says so. */
static void test_rollback_unknown_stays(void **state)
{
    eng *e = *state;
    scripted_fail("create_node", "rank=2", 1, GPC_ERR_PROVIDER);
    eng_spec(e, SPEC("scripted", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg,
        "scripted: create_node: provider (scripted); cluster 'job' stays recorded with 0 "
        "node(s) and 1 whose create has no answer (they may exist): gpuctl apply finishes it, "
        "gpuctl destroy job removes it");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 "
        "head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 "
        "head=10.0.0.1 -> ERR provider\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n");
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    assert_int_equal(c.destroyed_at, 0);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_nodes(e, 1),
        "0 - - r1/r1a t1 - pending(-1) started=- ended=-\n"
        "1 - - r1/r1a t1 - pending(-1) started=- ended=-\n"
        "2 - job-2-U1-a1 r1/r1a t1 - pending(-1) started=- ended=-\n");
}

/* Every zone of the first offer without capacity: the cluster is closed
 * and the next offer of the plan gets a new one (another uid, attempts
 * from 1 again). */
static void test_every_zone_out_next_offer(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t1", "r2", 2.0);
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", "region=r1", 0, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR capacity\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> ERR capacity\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n"
        "list_zones region=r2 type=t1 -> r2a\n"
        "create_node name=job-0 rank=0 region=r2 zone=r2a type=t1 token=job-0-U2-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.cluster_id, 2);
    assert_int_equal(res.created, 1);
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error capacity: scripted: create_node: capacity (scripted)\n"
        "0 a2 r1/r1b t1 error capacity: scripted: create_node: capacity (scripted)\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 - - r1/r1b t1 - terminated(-1) started=- ended=+0\n");
    assert_string_equal(eng_attempts(e, 2), "0 a1 r2/r2a t1 created\n");
    assert_string_equal(eng_nodes(e, 2),
        "0 s-1 job-0-U2-a1 r2/r2a t1 10.0.0.1 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: no capacity for t1 in r1a; trying zone r1b\n"
        "info: gpuctl: scripted: no capacity for t1 on-demand in r1 (zones tried: r1a, r1b); "
        "last: scripted: create_node: capacity (scripted); trying offer 2 of 2: scripted t1 r2 "
        "on-demand\n"
        "info: created node job-0 (s-1)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
}

/* No capacity anywhere: every offer is tried, and the answer names how
 * many and the last error. */
static void test_every_offer_out(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t1", "r2", 2.0);
    scripted_fail("create_node", NULL, 0, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg,
        "no offer could be launched after 2 offer(s) in the plan's failover order; last: "
        "scripted: create_node: capacity (scripted)");
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR capacity\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n"
        "list_zones region=r2 type=t1 -> r2a\n"
        "create_node name=job-0 rank=0 region=r2 zone=r2a type=t1 token=job-0-U2-a1 attempt=1 "
        "head=- -> ERR capacity\n"
        "cleanup_cluster cluster=job regions=r2 -> ok\n");
    gpc_cluster_rec c;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &c, &err), GPC_ERR_NOT_FOUND);
}

/* A quota error leaves the region: its other zone and its other offer
 * are not tried; the next offer in another region is. */
static void test_region_quota(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t2", "r1", 1.5);
    scripted_offer("t1", "r2", 2.0);
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", "region=r1", 1, GPC_ERR_QUOTA);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 3\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR quota\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n"
        "list_zones region=r2 type=t1 -> r2a\n"
        "create_node name=job-0 rank=0 region=r2 zone=r2a type=t1 token=job-0-U2-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error quota: scripted: create_node: quota (scripted)\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: scripted: create_node: quota (scripted); trying offer 3 of 3: scripted "
        "t1 r2 on-demand\n"
        "info: created node job-0 (s-1)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
}

/* The region a quota error closed stays closed for the offers that the
 * price order puts after another region's (regression: only the offers
 * right after it were skipped, so interleaved regions were each tried). */
static void test_region_quota_interleaved(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t1", "r2", 1.5);
    scripted_offer("t2", "r1", 2.0);
    scripted_offer("t2", "r2", 2.5);
    scripted_fail("create_node", "region=r1", 0, GPC_ERR_QUOTA);
    scripted_fail("create_node", "region=r2 type=t1", 0, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    /* t2 in r1 (offer 3) is never tried */
    assert_string_equal(eng_calls(e),
        "list_offers -> 4\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR quota\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n"
        "list_zones region=r2 type=t1 -> r2a\n"
        "create_node name=job-0 rank=0 region=r2 zone=r2a type=t1 token=job-0-U2-a1 attempt=1 "
        "head=- -> ERR capacity\n"
        "cleanup_cluster cluster=job regions=r2 -> ok\n"
        "list_zones region=r2 type=t2 -> r2a\n"
        "create_node name=job-0 rank=0 region=r2 zone=r2a type=t2 token=job-0-U3-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: scripted: create_node: quota (scripted); trying offer 2 of 4: scripted "
        "t1 r2 on-demand\n"
        "info: gpuctl: scripted: create_node: capacity (scripted); trying offer 4 of 4: "
        "scripted t2 r2 on-demand\n"
        /* r2a had no capacity for t1: it cools down (zones.c), and is tried */
        "info: gpuctl: zone r2a cools down (until 2023-11-14T22:43:20Z: no capacity for t1 "
        "on-demand): tried anyway, the only zone\n"
        "info: created node job-0 (s-1)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
}

/* A zone that met no capacity is skipped by the applies of the next
 * GPUCTL_CAPACITY_SKIP_S seconds (600 by default; 0: never), recorded as
 * a skipped attempt.  (spot.zone_cooldown 0: no zone is tried last,
 * test_zone_cooldown_order tests that.) */
static void test_capacity_skip(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", "zone=r1a", 1, GPC_ERR_CAPACITY);
    eng_spec(e, "name: job\nprovider: scripted\nspot: {zone_cooldown: 0}\nrun:\n"
                "  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0); /* the miss at +0, done at +5 */
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error capacity: scripted: create_node: capacity (scripted)\n"
        "0 a2 r1/r1b t1 created\n");
    destroy(e, "job");

    /* at +5: r1a is skipped, without a call */
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U2-a2 attempt=2 "
        "head=- -> s-2\n"
        "describe_nodes cluster=job ids=s-2 -> booting\n"
        "describe_nodes cluster=job ids=s-2 -> running\n"
        "nodes_running cluster=job ids=s-2 -> ok\n"
        "describe_nodes cluster=job ids=s-2 -> running\n");
    assert_string_equal(eng_attempts(e, 2),
        "0 a1 r1/r1a t1 skipped capacity: skipped: no capacity here 5s ago (skipped for 600s, "
        "GPUCTL_CAPACITY_SKIP_S)\n"
        "0 a2 r1/r1b t1 created\n");
    destroy(e, "job");

    /* at +10 with GPUCTL_CAPACITY_SKIP_S=0: r1a is asked */
    setenv("GPUCTL_CAPACITY_SKIP_S", "0", 1);
    assert_int_equal(eng_apply(e, &res, &err), 0);
    unsetenv("GPUCTL_CAPACITY_SKIP_S");
    assert_string_equal(eng_attempts(e, 3), "0 a1 r1/r1a t1 created\n");
    destroy(e, "job");

    /* 600 s after the miss: r1a is asked again */
    e->now = ENG_T0 + 600;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_attempts(e, 4), "0 a1 r1/r1a t1 created\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_one_node, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_apply_three_nodes, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_apply_batch, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_apply_batch_of_one, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_apply_basic, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_zone_capacity_next_zone, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollback_next_zone, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollback_batch, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollback_closes, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rollback_unknown_stays, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_every_zone_out_next_offer, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_every_offer_out, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_region_quota, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_region_quota_interleaved, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_capacity_skip, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
