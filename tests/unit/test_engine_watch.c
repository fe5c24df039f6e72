/*
 * test_engine_watch.c - `gpuctl watch NAME` (the engine's watch.c) against
 * the scripted providers: a spot cluster applied without --wait has a lost
 * worker replaced by the watch, as apply --wait would; a lost spot head
 * replaced by the provider's head-loss rule; a worker of a group (as a
 * Slurm allocation) taking its group with it; a worker gone without a
 * delete replaced; nodes gpuctl stopped itself (a budget stop) not made
 * again; a changed spec, a spot cluster applied from stdin with no spec, a
 * cluster that does not exist and a job that is not the cluster's first
 * are refused or watched without recovery, each saying why (docs/cli.md,
 * "watch").
 *
 * Times: the apply creates every node at +0, they run from +5 (the boot
 * poll), and their job ends at +65 (the scripted timing) unless a node is
 * lost first.
 */
#include "engine_harness.h"
#include "gpuctl/state.h"

#include <stdio.h>
#include <string.h>

/* (no zone cooldown: test_engine_recover has it) */
#define SPOT_SPEC "name: job\nprovider: scripted\nnodes: 3\nspot:\n  policy: spot\n" \
                  "  zone_cooldown: 0\nrun:\n  command: python3 train.py\n"

/* apply without --wait (polling every 5 s); calls and what it said are
 * forgotten */
static void up(eng *e, const char *yaml)
{
    eng_spec(e, yaml);
    gpc_apply_result res;
    gpc_error err;
    if (eng_apply(e, &res, &err))
        fail_msg("apply: %s", err.msg);
    eng_calls(e);
    eng_said(e);
}

/* How many times `needle` occurs in `hay`. */
static int count(const char *hay, const char *needle)
{
    int k = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        k++;
    return k;
}

static int watch(eng *e, const char *name, const gpc_spec *spec, int recover,
                 gpc_apply_result *res, gpc_error *err)
{
    gpc_error_clear(err);
    gpc_apply_opts o = {.poll_s = 5};
    return gpc_watch(&e->s, name, spec, "job.yaml", &o, recover, res, err);
}

/* The worker preempted at +20 is replaced (same rank, offer and zone, a
 * new attempt's token) while rank 0's job runs; the others are never
 * touched; the job succeeds. */
static void test_watch_recovers(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    assert_int_equal(res.waited, 1);
    assert_int_equal(res.phase, GPC_PHASE_SUCCEEDED);
    assert_int_equal(res.exit_code, 0);
    assert_true(res.first_output_s < 0);
    const char *calls = strstr(eng_calls(e), "running,preempted,running");
    assert_non_null(calls);
    assert_non_null(strstr(calls,
        "describe_nodes cluster=job ids=s-1,s-3 -> running,running\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a2 attempt=2 "
        "head=10.0.0.1 -> s-4\n"));
    /* the one delete: the lost node's, made sure of (it was gone) */
    assert_int_equal(count(calls, "delete_node"), 1);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 succeeded(0) started=+0 ended=+65\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+20\n"
        "1 s-4 job-1-U1-a2 r1/r1a t1 10.0.0.4 succeeded(0) started=+20 ended=+85\n"
        "2 s-3 job-2-U1-a1 r1/r1a t1 10.0.0.3 succeeded(0) started=+0 ended=+65\n");
    const char *ev = strstr(eng_events(e, 1), "1 phase: running -> preempted");
    assert_non_null(ev);
    assert_string_equal(ev,
        "1 phase: running -> preempted: spot interruption\n"
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "1 create: created job-1 as s-4 in r1/r1a\n"
        "1 recovery: replaced by s-4\n"
        "1 phase: booting -> running\n"
        "0 phase: running -> succeeded\n"
        "2 phase: running -> succeeded\n"
        "- phase: cluster running -> succeeded\n"
        "1 phase: running -> succeeded\n");
    /* the watch measured no first output: it did not begin with the apply */
    assert_null(strstr(eng_events(e, 1), "timing"));
}

/* The spot head preempted at +20: the scripted provider's bootstrap names
 * the head's address (head-loss rule: workers too), so both workers are
 * removed and all three ranks made anew with the new head (a new attempt
 * each), whose first job starts again; the watch goes on to its end
 * instead of exiting node_lost. */
static void test_watch_head_lost(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    scripted_preempt_at("s-1", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    assert_int_equal(res.phase, GPC_PHASE_SUCCEEDED);
    const char *calls = strstr(eng_calls(e), "preempted,running,running");
    assert_non_null(calls);
    assert_string_equal(calls,
        "preempted,running,running\n"
        "describe_nodes cluster=job ids=s-2,s-3 -> running,running\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "delete_node region=r1 id=s-3 -> ok\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> s-4\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a2 attempt=2 "
        "head=10.0.0.4 -> s-5\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a2 attempt=2 "
        "head=10.0.0.4 -> s-6\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "nodes_running cluster=job ids=s-4,s-5,s-6 -> ok\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> succeeded(0),succeeded(0),succeeded(0)\n");
    /* the new nodes start at +20 and their job ends 65 s later */
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 terminated(-1) started=+0 ended=+20\n"
        "0 s-4 job-0-U1-a2 r1/r1a t1 10.0.0.4 succeeded(0) started=+20 ended=+85\n"
        "1 s-5 job-1-U1-a2 r1/r1a t1 10.0.0.5 succeeded(0) started=+20 ended=+85\n"
        "2 s-6 job-2-U1-a2 r1/r1a t1 10.0.0.6 succeeded(0) started=+20 ended=+85\n");
    const char *ev = strstr(eng_events(e, 1), "0 phase: running -> preempted");
    assert_non_null(ev);
    assert_string_equal(ev,
        "0 phase: running -> preempted: spot interruption\n"
        "- phase: cluster running -> preempted\n"
        "0 recovery: node job-0 (s-1) was preempted while the job runs: replacing it\n"
        "1 delete: removed s-2 to make it again with the new head\n"
        "2 delete: removed s-3 to make it again with the new head\n"
        "0 create: created job-0 as s-4 in r1/r1a\n"
        "1 create: created job-1 as s-5 in r1/r1a\n"
        "2 create: created job-2 as s-6 in r1/r1a\n"
        "0 recovery: replaced by s-4\n"
        "1 recovery: replaced by s-5\n"
        "2 recovery: replaced by s-6\n"
        "0 phase: booting -> running\n"
        "1 phase: booting -> running\n"
        "2 phase: booting -> running\n"
        "- phase: cluster preempted -> running\n"
        "0 phase: running -> succeeded\n"
        "1 phase: running -> succeeded\n"
        "2 phase: running -> succeeded\n"
        "- phase: cluster running -> succeeded\n");
    const char *said = eng_said(e);
    assert_non_null(strstr(said, "info: gpuctl: node job-0 (s-1) was preempted: replacing it; "
                                 "it was the head, so the job starts again from its "
                                 "checkpoint\n"));
    assert_non_null(strstr(said, "info: gpuctl: node job-1 replaced by s-5; the job starts "
                                 "again from its latest checkpoint in the store\n"));
}

/* A worker gone from the provider without a delete (removed by hand):
 * terminated with no exit status, and no delete of gpuctl's since it
 * started: lost, replaced alone. */
static void test_watch_worker_gone(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    scripted_gone("s-3");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    const char *calls = eng_calls(e);
    assert_non_null(strstr(calls,
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,terminated\n"));
    assert_non_null(strstr(calls,
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a2 attempt=2 "
        "head=10.0.0.1 -> s-4\n"));
    /* made sure of at the provider before its replacement: the one delete */
    assert_non_null(strstr(calls, "delete_node region=r1 id=s-3 -> ok\n"
                                  "create_node name=job-2"));
    assert_int_equal(count(calls, "delete_node"), 1);
    const char *ev = strstr(eng_events(e, 1), "2 recovery:");
    assert_non_null(ev);
    assert_non_null(strstr(ev, "2 recovery: node job-2 (s-3) is gone while the job runs: "
                               "replacing it\n"
                               "2 create: created job-2 as s-4 in r1/r1a\n"
                               "2 recovery: replaced by s-4\n"));
}

/* After the head's loss at +20 made the workers again (s-5, s-6, started
 * in the second of the old workers' removal), s-5 gone at +40 is replaced
 * too.  Regression: a removal event of its rank at or after its start
 * was taken for gpuctl's delete of it, so it never was. */
static void test_watch_gone_after_head_loss(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    scripted_preempt_at("s-1", ENG_T0 + 20);
    scripted_gone_at("s-5", ENG_T0 + 40);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    const char *calls = strstr(eng_calls(e), "running,terminated,running");
    assert_non_null(calls);
    assert_non_null(strstr(calls,
        "describe_nodes cluster=job ids=s-4,s-6 -> running,running\n"
        "delete_node region=r1 id=s-5 -> ok\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a3 attempt=3 "
        "head=10.0.0.4 -> s-7\n"));
    assert_non_null(strstr(eng_events(e, 1), "1 recovery: node job-1 (s-5) is gone while the "
                                             "job runs: replacing it\n"));
}

/* The gone worker's delete (making sure it is gone) fails once: not
 * replaced on that poll, said why; replaced on the next, 5 s later. */
static void test_watch_delete_fails(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    scripted_gone("s-3");
    scripted_fail("delete_node", "id=s-3", 1, GPC_ERR_PROVIDER);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    const char *calls = strstr(eng_calls(e), "delete_node");
    assert_non_null(calls);
    assert_non_null(strstr(calls,
        "delete_node region=r1 id=s-3 -> ERR provider\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "delete_node region=r1 id=s-3 -> ok\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a2 attempt=2 "
        "head=10.0.0.1 -> s-4\n"));
    assert_non_null(strstr(eng_said(e), "info: gpuctl: node job-2 (s-3) looks lost, but deleting "
                                        "it failed (scripted: delete_node: provider (scripted)); "
                                        "it is not replaced until that succeeds\n"));
}

/* Nodes gpuctl stopped itself (budget.max_total under apply --wait) are
 * not lost: a later watch makes none again, and says the cluster was
 * stopped at its budget (exit budget, not node_lost). */
static void test_watch_after_budget_stop(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 1.0);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 2\nspot:\n  policy: spot\n"
                "budget:\n  max_total: 0.02\nrun:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_apply_opts o = {.poll_s = 5, .wait = 1};
    assert_int_equal(gpc_apply(&e->s, e->spec, "-", &o, &res, &err), GPC_ERR_BUDGET);
    eng_calls(e);
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "cluster 'job' was stopped at its budget.max_total (gpuctl "
                                 "status job shows when; gpuctl cost job, what it spent)");
    /* (without the check of gpuctl's own deletes, both were made again) */
    assert_string_equal(eng_calls(e), "list_offers -> 1\n");
    assert_null(strstr(eng_events(e, 1), "recovery"));
}

/* A provider whose unit is a group (as a Slurm allocation): a worker
 * preempted at +20 takes the group with it, so the group is made again,
 * all three ranks (the head-loss rule GROUP), and the job starts again. */
static void test_watch_group_lost(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, "name: job\nprovider: scripted_group\nnodes: 3\nspot:\n  policy: spot\n"
          "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    const char *calls = strstr(eng_calls(e), "running,preempted,running");
    assert_non_null(calls);
    /* the lost member's delete takes its group (made sure of); the
     * head-loss rule's deletes of the two left then find them gone */
    assert_non_null(strstr(calls,
        "running,preempted,running\n"
        "describe_nodes cluster=job ids=s-1,s-3 -> running,running\n"
        "delete_node region=r1 id=s-2 -> ok also=s-1,s-3\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-3 -> ok\n"
        "create_nodes n=3 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a2 "
        "attempt=2 head=node -> s-4,s-5,s-6 group=g-2\n"));
    assert_string_equal(eng_nodes(e, 1),
        "0 s-4 job-w0-U1-a2/0 r1/- t1 10.0.0.4 succeeded(0) started=+20 ended=+85\n"
        "1 s-2 job-w0-U1-a1/1 r1/- t1 10.0.0.2 terminated(-1) started=+0 ended=+20\n"
        "1 s-5 job-w0-U1-a2/1 r1/- t1 10.0.0.5 succeeded(0) started=+20 ended=+85\n"
        "2 s-6 job-w0-U1-a2/2 r1/- t1 10.0.0.6 succeeded(0) started=+20 ended=+85\n");
    const char *ev = strstr(eng_events(e, 1), "1 recovery:");
    assert_non_null(ev);
    assert_non_null(strstr(ev,
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "0 delete: removed s-1 to make its group again\n"
        "2 delete: removed s-3 to make its group again\n"
        "0 create: created job-0 as s-4 in r1\n"
        "1 create: created job-1 as s-5 in r1\n"
        "2 create: created job-2 as s-6 in r1\n"
        "0 recovery: replaced by s-4\n"
        "1 recovery: replaced by s-5\n"
        "2 recovery: replaced by s-6\n"));
    const char *said = eng_said(e);
    assert_non_null(strstr(said, "info: gpuctl: node job-1 (s-2) was preempted: replacing it; "
                                 "the provider makes the cluster's nodes as one group, so the "
                                 "job starts again from its checkpoint\n"));
    assert_non_null(strstr(said, "info: gpuctl: node job-1 replaced by s-5; the job starts "
                                 "again from its latest checkpoint in the store\n"));
}

/* A spec whose job changed since the apply: refused, nothing made. */
static void test_watch_spec_changed(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\nspot:\n  policy: spot\n"
                "run:\n  command: python3 train.py --lr 0.1\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "the job of 'job' changed since it was applied (changed: "
                                 "run.command): watch makes replacement nodes from the spec "
                                 "and workdir as applied, so restore them, or watch with "
                                 "--no-recover (gpuctl apply -f job.yaml would run the job "
                                 "again)");
    assert_null(strstr(eng_calls(e), "create_node"));
    /* a change of the cluster's shape (its node count) */
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 4\nspot:\n  policy: spot\n"
                "run:\n  command: python3 train.py\n");
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "the spec of 'job' differs from the one its nodes run "
                                 "(changed: nodes 3 -> 4): gpuctl apply -f job.yaml applies "
                                 "it; watch needs the spec as it was applied, to make "
                                 "replacement nodes (or --no-recover)");
    assert_null(strstr(eng_calls(e), "create_node"));
}

/* A spot cluster applied from stdin, watched with no spec: refused; with
 * recovery off, watched. */
static void test_watch_stdin_spec(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", NULL, 1, &res, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "cluster 'job' (spot.policy spot) was applied from "
                                 "standard input: give its spec with -f FILE, to make "
                                 "replacement nodes, or watch it with --no-recover");
    assert_int_equal(watch(e, "job", NULL, 0, &res, &err), 0);
    assert_int_equal(res.phase, GPC_PHASE_SUCCEEDED);
    assert_int_equal(res.exit_code, 0);
}

/* No such cluster; a spec of another cluster. */
static void test_watch_refusals(void **state)
{
    eng *e = *state;
    up(e, "name: job\nprovider: scripted\nnodes: 1\nrun:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "nosuch", NULL, 1, &res, &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "no cluster 'nosuch' (gpuctl status lists them; gpuctl "
                                 "apply -f SPEC creates one)");
    assert_int_equal(watch(e, "other", e->spec, 1, &res, &err), GPC_ERR_NOT_FOUND);
    up(e, "name: other\nprovider: scripted\nnodes: 1\nrun:\n  command: x\n");
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "job.yaml is the spec of cluster 'other', not 'job'");
}

/* An on-demand cluster: the wait alone, said so. */
static void test_watch_on_demand(void **state)
{
    eng *e = *state;
    up(e, "name: job\nprovider: scripted\nnodes: 2\nrun:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(watch(e, "job", NULL, 1, &res, &err), 0);
    assert_int_equal(res.phase, GPC_PHASE_SUCCEEDED);
    assert_non_null(strstr(eng_said(e), "info: gpuctl: job buys no spot: watching its job\n"));
    assert_null(strstr(eng_calls(e), "create_node"));
    /* a spec given is checked, spot or not (regression: a changed one was
     * accepted silently) */
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\nrun:\n  command: python3 train.py\n");
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "the spec of 'job' differs from the one its nodes run "
                                 "(changed: nodes 2 -> 3): gpuctl apply -f job.yaml applies "
                                 "it; watch needs the spec as it was applied, to make "
                                 "replacement nodes (or --no-recover)");
}

/* The job running is a re-run (job 2): a new node's bootstrap would run
 * job 1, so the lost worker is not replaced, and the watch says why; the
 * job goes on (rank 0 decides it). */
static void test_watch_rerun_not_recovered(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    up(e, SPOT_SPEC);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_event_add(e->s.st, c.id, -1, "job", "job 2: spec 00, workdir none",
                                   &err), 0);
    gpc_cluster_rec_free(&c);
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    assert_int_equal(watch(e, "job", e->spec, 1, &res, &err), 0);
    assert_non_null(strstr(eng_said(e), "info: gpuctl: the job running is job 2 (a re-run or "
                                        "exec); a new node's bootstrap runs only the first, so "
                                        "lost nodes are not replaced\n"));
    assert_null(strstr(eng_calls(e), "create_node"));
    assert_null(strstr(eng_events(e, 1), "recovery"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_watch_recovers, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_head_lost, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_worker_gone, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_gone_after_head_loss, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_delete_fails, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_after_budget_stop, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_group_lost, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_spec_changed, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_stdin_spec, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_refusals, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_on_demand, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_watch_rerun_not_recovered, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
