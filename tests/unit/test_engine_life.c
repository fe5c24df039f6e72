/*
 * test_engine_life.c - a cluster's life after apply, against the scripted
 * providers: refresh (phases, a node gone, one call per cluster or one per
 * node), wait (rank 0's exit status, a failed job, a failed worker, a lost
 * head, a timeout on the fixed clock) and destroy (by the cluster's tag or
 * node by node, a failure that leaves the cluster recorded, destroy again)
 * (docs/testing.md, "The engine tests").
 *
 * Expected sequences are worked out from src/engine/refresh.c, wait.c and
 * destroy.c.  After eng_up's apply the clock is at ENG_T0 + 5 (the boot
 * poll): every node was created at +0 and runs from +5; its job ends at
 * +65 unless the test says otherwise.
 */
#include "engine_harness.h"
#include "gpuctl/state.h"

#include <stdio.h>
#include <string.h>

/* Apply `nodes` nodes of provider `prov` (it must work); forget its calls
 * and what it said; *c is the cluster (the caller frees it). */
static void eng_up(eng *e, const char *prov, int nodes, gpc_cluster_rec *c)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "name: job\nprovider: %s\nnodes: %d\nrun:\n"
             "  command: python3 train.py\n", prov, nodes);
    eng_spec(e, spec);
    gpc_apply_result res;
    gpc_error err;
    if (eng_apply(e, &res, &err))
        fail_msg("apply: %s", err.msg);
    eng_calls(e);
    eng_said(e);
    eng_cluster(e, "job", c);
}

static int refresh(eng *e, gpc_cluster_rec *c, gpc_error *err)
{
    gpc_error_clear(err);
    return gpc_cluster_refresh(&e->s, c, err);
}

static int wait_job(eng *e, gpc_cluster_rec *c, long timeout_s, gpc_error *err)
{
    gpc_error_clear(err);
    gpc_wait_opts w = {.timeout_s = timeout_s, .poll_s = 5};
    return gpc_cluster_wait(&e->s, c, &w, err);
}

static int destroy(eng *e, gpc_cluster_rec *c, int *deleted, gpc_error *err)
{
    gpc_error_clear(err);
    *deleted = -1;
    return gpc_cluster_destroy(&e->s, c, deleted, err);
}

/* ---- refresh ------------------------------------------------------------ */

/* One describe_nodes for the live nodes; a node gone is terminated (and
 * ended); ended nodes are not asked again; rank 0 decides the cluster. */
static void test_refresh_phases(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 3, &c);
    scripted_gone("s-2");
    e->now = ENG_T0 + 10;
    gpc_error err;
    assert_int_equal(refresh(e, &c, &err), 0);
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,terminated,running\n");
    assert_int_equal(c.phase, GPC_PHASE_RUNNING);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+10\n"
        "2 s-3 job-2-U1-a1 r1/r1a t1 10.0.0.3 running(-1) started=+0 ended=-\n");

    e->now = ENG_T0 + 70;
    assert_int_equal(refresh(e, &c, &err), 0);
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-3 -> succeeded(0),succeeded(0)\n");
    assert_int_equal(c.phase, GPC_PHASE_SUCCEEDED);
    assert_int_equal(c.exit_code, 0);
    assert_int_equal(c.updated_at, ENG_T0 + 70);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 succeeded(0) started=+0 ended=+70\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+10\n"
        "2 s-3 job-2-U1-a1 r1/r1a t1 10.0.0.3 succeeded(0) started=+0 ended=+70\n");
    const char *ev = eng_events(e, 1);
    const char *tail = strstr(ev, "- phase: cluster pending -> running\n");
    assert_non_null(tail);
    assert_string_equal(tail,
        "- phase: cluster pending -> running\n"
        "1 phase: running -> terminated: gone\n"
        "0 phase: running -> succeeded\n"
        "2 phase: running -> succeeded\n"
        "- phase: cluster running -> succeeded\n");

    /* nothing left to ask */
    assert_int_equal(refresh(e, &c, &err), 0);
    assert_string_equal(eng_calls(e), "");
    gpc_cluster_rec_free(&c);
}

/* Without describe_nodes: one describe_node per live node. */
static void test_refresh_basic(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted_basic", 2, &c);
    assert_int_equal(c.phase, GPC_PHASE_BOOTING);
    e->now = ENG_T0 + 5;
    gpc_error err;
    assert_int_equal(refresh(e, &c, &err), 0);
    assert_string_equal(eng_calls(e),
        "describe_node region=r1 id=s-1 -> running\n"
        "describe_node region=r1 id=s-2 -> running\n");
    assert_int_equal(c.phase, GPC_PHASE_RUNNING);
    gpc_cluster_rec_free(&c);
}

/* A describe that fails: the error, and nothing recorded. */
static void test_refresh_error(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    scripted_gone("s-2");
    scripted_fail("describe_nodes", NULL, 1, GPC_ERR_PROVIDER);
    gpc_error err;
    assert_int_equal(refresh(e, &c, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "scripted: describe_nodes: provider (scripted)");
    assert_string_equal(eng_calls(e), "describe_nodes cluster=job ids=s-1,s-2 -> ERR provider\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 running(-1) started=+0 ended=-\n");
    gpc_cluster_rec_free(&c);
}

/* ---- wait --------------------------------------------------------------- */

/* A refresh every 5 s until rank 0 ends; its exit status 0 is success. */
static void test_wait_succeeds(void **state)
{
    eng *e = *state;
    scripted_timing(5, 10);
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 0, &err), 0);
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> succeeded(0),succeeded(0)\n");
    assert_string_equal(eng_said(e),
        "status [0s]: job: node0=running node1=running\n"
        "status [5s]: job: node0=running node1=running\n"
        "status [10s]: job: node0=succeeded node1=succeeded\n");
    assert_int_equal(e->now, ENG_T0 + 15);
    assert_int_equal(c.phase, GPC_PHASE_SUCCEEDED);
    assert_int_equal(c.exit_code, 0);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 succeeded(0) started=+0 ended=+15\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 succeeded(0) started=+0 ended=+15\n");
    gpc_cluster_rec_free(&c);
}

/* Rank 0 exits 3: the job failed, with its status. */
static void test_wait_job_failed(void **state)
{
    eng *e = *state;
    scripted_timing(5, 10);
    scripted_exit("job-0", 3, -1);
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_JOB_FAILED);
    assert_string_equal(err.msg, "cluster 'job': job failed, rank 0 exit status 3");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> failed(3),succeeded(0)\n");
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    assert_int_equal(c.exit_code, 3);
    gpc_cluster_rec_free(&c);
}

/* The same on nodes kept up after their job (lifecycle.idle_timeout): the
 * machines still run, and only their log transport has the jobs' exit
 * statuses.  Rank 1's job exits 3 at +15, rank 0's 0 at +25: the wait
 * fails the job naming rank 1 with its own status (a regression: it named
 * rank 0, "rank 0 exit status 0"); then rank 1's 3 at +15 while rank 0
 * runs on: after the 30 s grace the failed worker's status is its job's
 * (it said -1, the record's). */
static void test_wait_kept_up_worker_failed(void **state)
{
    eng *e = *state;
    scripted_timing(5, 20);
    scripted_keep_up(1);
    scripted_exit("job-1", 3, 10);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 2\nlifecycle:\n  idle_timeout: 10m\n"
                "run:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    if (eng_apply(e, &res, &err))
        fail_msg("apply: %s", err.msg);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_JOB_FAILED);
    assert_string_equal(err.msg, "cluster 'job': job failed, node job-1 (rank 1) exit status 3 "
                                 "(rank 0 exited 0)");
    assert_int_equal(c.exit_code, 0);
    gpc_cluster_rec_free(&c);
    int deleted;
    eng_cluster(e, "job", &c);
    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    gpc_cluster_rec_free(&c);

    /* rank 0's job runs long past rank 1's failure */
    scripted_exit("job-0", 0, 600);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 2\nlifecycle:\n  idle_timeout: 10m\n"
                "run:\n  command: python3 train.py\n");
    if (eng_apply(e, &res, &err))
        fail_msg("apply: %s", err.msg);
    eng_cluster(e, "job", &c);
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_JOB_FAILED);
    assert_string_equal(err.msg, "cluster 'job': node job-1 failed (exit status 3) and rank 0 "
                                 "did not finish within 30 s; the other nodes were stopped");
    gpc_cluster_rec_free(&c);
}

/* Rank 0 exits 0 but rank 1's job exits 3: the job failed, and says which
 * node (a user trial: status showed `succeeded`); the cluster's exit code
 * stays rank 0's. */
static void test_wait_worker_exit_after_head(void **state)
{
    eng *e = *state;
    scripted_timing(5, 10);
    scripted_exit("job-1", 3, -1);
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_JOB_FAILED);
    assert_string_equal(err.msg, "cluster 'job': job failed, node job-1 (rank 1) exit status 3 "
                                 "(rank 0 exited 0)");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> succeeded(0),failed(3)\n");
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    assert_int_equal(c.exit_code, 0);
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    assert_int_equal(gpc_node_list(e->s.st, c.id, 1, &nodes, &n, &err), 0);
    const gpc_node_rec *bad = gpc_cluster_failed_node(nodes, n);
    assert_non_null(bad);
    assert_int_equal(bad->rank, 1);
    assert_string_equal(bad->name, "job-1");
    assert_int_equal(bad->exit_code, 3);
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&c);
}

/* --timeout on the fixed clock: three polls (+0, +5, +10 s of waiting),
 * then the timeout; the nodes keep running. */
static void test_wait_timeout(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 10, &err), GPC_ERR_TIMEOUT);
    assert_string_equal(err.msg, "cluster 'job' still running after 10s; the nodes keep running");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n");
    assert_int_equal(e->now, ENG_T0 + 15);
    assert_int_equal(c.phase, GPC_PHASE_RUNNING);
    gpc_cluster_rec_free(&c);
}

/* A worker fails (exit 2 at +15) while rank 0 runs: 30 s of grace for
 * rank 0 to end by itself, then the nodes still alive are stopped and the
 * job has failed. */
static void test_wait_worker_failed(void **state)
{
    eng *e = *state;
    scripted_exit("job-1", 2, 10);
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_JOB_FAILED);
    assert_string_equal(err.msg, "cluster 'job': node job-1 failed (exit status 2) and rank 0 "
                                 "did not finish within 30 s; the other nodes were stopped");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"      /* +5 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"      /* +10 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,failed(2)\n"    /* +15 */
        "describe_nodes cluster=job ids=s-1 -> running\n"                  /* +20 */
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"                  /* +45 */
        "delete_node region=r1 id=s-1 -> ok\n");
    assert_int_equal(e->now, ENG_T0 + 45);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 terminated(-1) started=+0 ended=+45\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 failed(2) started=+0 ended=+15\n");
    const char *said = eng_said(e);
    assert_non_null(strstr(said, "info: stopped node job-0: a worker failed and the job cannot "
                                 "finish\n"));
    gpc_cluster_rec_free(&c);
}

/* Rank 0 gone without an exit status: no grace, the workers are stopped,
 * the node is lost. */
static void test_wait_head_lost(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    scripted_gone("s-1");
    gpc_error err;
    assert_int_equal(wait_job(e, &c, 0, &err), GPC_ERR_NODE_LOST);
    assert_string_equal(err.msg, "cluster 'job': rank 0 ended without an exit status (node lost)");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> terminated,running\n"
        "delete_node region=r1 id=s-2 -> ok\n");
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    assert_int_equal(c.exit_code, -1);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 terminated(-1) started=+0 ended=+5\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+5\n");
    gpc_cluster_rec_free(&c);
}

/* ---- destroy ------------------------------------------------------------ */

/* A provider with cleanup_cluster removes the cluster by its tag in one
 * call; every node is recorded deleted; destroying again asks again and
 * finds nothing. */
static void test_destroy_by_tag(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 3, &c);
    int deleted;
    gpc_error err;
    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e),
        "cleanup_cluster cluster=job regions=r1 -> ok deleted=s-1,s-2,s-3\n");
    assert_int_equal(deleted, 3);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 terminated(-1) started=+0 ended=+5\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+5\n"
        "2 s-3 job-2-U1-a1 r1/r1a t1 10.0.0.3 terminated(-1) started=+0 ended=+5\n");
    const char *tail = strstr(eng_events(e, 1), "- cleanup:");
    assert_non_null(tail);
    assert_string_equal(tail,
        "- cleanup: provider resources removed\n"
        "0 delete: deleted s-1\n"
        "1 delete: deleted s-2\n"
        "2 delete: deleted s-3\n"
        "- destroy: cluster destroyed\n");
    gpc_cluster_rec_free(&c);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &c, &err), GPC_ERR_NOT_FOUND);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get_by_id(e->s.st, 1, &c, &err), 0);
    assert_int_equal(c.phase, GPC_PHASE_TERMINATED);
    assert_int_equal(c.destroyed_at, ENG_T0 + 5);

    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e), "cleanup_cluster cluster=job regions=r1 -> ok\n");
    assert_int_equal(deleted, 0);
    gpc_cluster_rec_free(&c);
}

/* The clean-up by tag fails: nothing is marked deleted, the cluster stays
 * recorded (refused credentials: GPC_ERR_AUTH; else GPC_ERR_PARTIAL), and
 * destroy again finishes. */
static void test_destroy_cleanup_fails(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted", 2, &c);
    scripted_fail("cleanup_cluster", NULL, 1, GPC_ERR_AUTH);
    scripted_fail("cleanup_cluster", NULL, 2, GPC_ERR_PROVIDER);
    int deleted;
    gpc_error err;
    assert_int_equal(destroy(e, &c, &deleted, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "cluster 'job' stays recorded: scripted: cleanup_cluster: auth "
                                 "(scripted); run destroy again");
    assert_int_equal(destroy(e, &c, &deleted, &err), GPC_ERR_PARTIAL);
    assert_string_equal(err.msg, "cluster 'job' stays recorded: scripted: cleanup_cluster: "
                                 "provider (scripted); run destroy again");
    assert_int_equal(deleted, 0);
    assert_string_equal(eng_calls(e),
        "cleanup_cluster cluster=job regions=r1 -> ERR auth\n"
        "cleanup_cluster cluster=job regions=r1 -> ERR provider\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 running(-1) started=+0 ended=-\n");
    gpc_cluster_rec live;
    eng_cluster(e, "job", &live);
    gpc_cluster_rec_free(&live);

    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e),
        "cleanup_cluster cluster=job regions=r1 -> ok deleted=s-1,s-2\n");
    assert_int_equal(deleted, 2);
    gpc_cluster_rec_free(&c);
}

/* Without cleanup_cluster: one delete_node per node; again: no call. */
static void test_destroy_one_by_one(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted_basic", 2, &c);
    int deleted;
    gpc_error err;
    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e),
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n");
    assert_int_equal(deleted, 2);
    assert_int_equal(c.phase, GPC_PHASE_TERMINATED);
    assert_int_equal(c.destroyed_at, ENG_T0);
    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e), "");
    assert_int_equal(deleted, 0);
    gpc_cluster_rec_free(&c);
}

/* A delete that fails: the others are deleted, that node stays recorded
 * and so does the cluster (GPC_ERR_PARTIAL naming it); destroy again
 * deletes only what is left. */
static void test_destroy_delete_fails(void **state)
{
    eng *e = *state;
    gpc_cluster_rec c;
    eng_up(e, "scripted_basic", 3, &c);
    scripted_fail("delete_node", "id=s-2", 1, GPC_ERR_PROVIDER);
    int deleted;
    gpc_error err;
    assert_int_equal(destroy(e, &c, &deleted, &err), GPC_ERR_PARTIAL);
    assert_string_equal(err.msg, "cluster 'job': 1 node(s) could not be deleted and stay "
                                 "recorded: job-1 (scripted: delete_node: provider (scripted))");
    assert_string_equal(eng_calls(e),
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ERR provider\n"
        "delete_node region=r1 id=s-3 -> ok\n");
    assert_int_equal(deleted, 2);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/- t1 10.0.0.1 terminated(-1) started=+0 ended=+0\n"
        "1 s-2 job-1-U1-a1 r1/- t1 10.0.0.2 booting(-1) started=+0 ended=-\n"
        "2 s-3 job-2-U1-a1 r1/- t1 10.0.0.3 terminated(-1) started=+0 ended=+0\n");
    gpc_cluster_rec live;
    eng_cluster(e, "job", &live);
    assert_int_equal(live.destroyed_at, 0);
    gpc_cluster_rec_free(&live);

    assert_int_equal(destroy(e, &c, &deleted, &err), 0);
    assert_string_equal(eng_calls(e), "delete_node region=r1 id=s-2 -> ok\n");
    assert_int_equal(deleted, 1);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &live, &err), GPC_ERR_NOT_FOUND);
    gpc_cluster_rec_free(&c);
}

/* ---- spot recovery (recover.c) ------------------------------------------- */

/* apply --wait of a 3-node spot cluster whose worker s-2 is taken back at
 * +20 (booted +0..+5, jobs until +65): the poll that sees it preempted
 * replaces only that node (s-4, rank 1, made at +20, booted at +25, its
 * job until +85) and the job goes on; the head and s-3 are never touched
 * (no call names them but describe).  A describe that fails before it
 * (+10) is asked again, never taken for a loss. */
static void test_recover_preempted_worker(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    /* no zone cooldown here: test_engine_recover.c has it */
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\nspot:\n  policy: spot\n"
                "  zone_cooldown: 0\nrun:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    /* the wait's 2nd look (+10) finds no provider: asked again at +15 */
    scripted_fail("describe_nodes", NULL, 5, GPC_ERR_PROVIDER);
    gpc_apply_result res;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_apply_opts o = {.poll_s = 5, .wait = 1};
    int rc = gpc_apply(&e->s, e->spec, "-", &o, &res, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 head=10.0.0.1 -> s-3\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "nodes_running cluster=job ids=s-1,s-2,s-3 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> ERR provider\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,preempted,running\n"
        "describe_nodes cluster=job ids=s-1,s-3 -> running,running\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a2 attempt=2 head=10.0.0.1 -> s-4\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,booting,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "nodes_running cluster=job ids=s-1,s-4,s-3 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-4,s-3 -> succeeded(0),running,succeeded(0)\n"
        "describe_nodes cluster=job ids=s-4 -> running\n"
        "describe_nodes cluster=job ids=s-4 -> running\n"
        "describe_nodes cluster=job ids=s-4 -> running\n"
        "describe_nodes cluster=job ids=s-4 -> succeeded(0)\n");
    /* s-2's record ends at +20; s-4 takes rank 1 from +20 to its job's end */
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
    const char *said = eng_said(e);
    assert_non_null(strstr(said, "info: gpuctl: could not ask the provider about job (scripted: "
                                 "describe_nodes: provider (scripted)); asking again\n"));
    assert_non_null(strstr(said, "info: gpuctl: node job-1 (s-2) was preempted: replacing it; "
                                 "the other nodes keep their job\n"));
    assert_non_null(strstr(said, "info: gpuctl: node job-1 replaced by s-4; it joins the "
                                 "running job\n"));
}

/* budget.max_total while apply --wait waits: 2 nodes at 1.00 USD/hour
 * (the scripted offer) bill 2 USD/hour = 1/1800 USD a second from +0.  With
 * a 5 s poll the nodes are stopped at the first poll whose spend plus two
 * polls' worth reaches 0.02 USD: at +25, 25/1800 + 10/1800 = 0.019444 (go
 * on); at +30, 30/1800 + 10/1800 = 0.022222 (stop).  The ledger then holds
 * 2 x 30 s x 1.00 USD/hour = 0.016667 USD, under the cap; exit code budget. */
static void test_budget_total_stops(void **state)
{
    eng *e = *state;
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 2\nbudget:\n  max_total: 0.02\n"
                "run:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_apply_opts o = {.poll_s = 5, .wait = 1};
    assert_int_equal(gpc_apply(&e->s, e->spec, "-", &o, &res, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "cluster 'job': budget.max_total 0.02 USD would be crossed "
                                 "(0.0167 USD spent, 2.0000 USD/hour): its nodes were stopped "
                                 "(their checkpoint_dir saved, as at max_duration); gpuctl cost "
                                 "job shows the ledger");
    const char *calls = strstr(eng_calls(e), "nodes_running");
    assert_non_null(calls);
    assert_string_equal(calls,
        "nodes_running cluster=job ids=s-1,s-2 -> ok\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* apply, +5 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +5 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +10 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +15 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +20 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +25 */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"   /* +30: stop */
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ok\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 terminated(-1) started=+0 ended=+30\n"
        "1 s-2 job-1-U1-a1 r1/r1a t1 10.0.0.2 terminated(-1) started=+0 ended=+30\n");
    const char *ev = strstr(eng_events(e, 1), "- budget:");
    assert_non_null(ev);
    assert_string_equal(ev,
        "- budget: budget.max_total 0.02 USD: 0.0167 USD spent, 2.0000 USD/hour: stopping the "
        "nodes\n"
        "0 delete: stopped s-1: budget.max_total reached\n"
        "1 delete: stopped s-2: budget.max_total reached\n");
    double usd = -1;
    assert_int_equal(gpc_ledger_cost(e->s.st, 1, ENG_T0 + 1000, &usd, &err), 0);
    assert_true(usd > 0.0166666 && usd < 0.0166667); /* 60 node-seconds / 3600 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refresh_phases, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_refresh_basic, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_refresh_error, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_succeeds, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_job_failed, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_worker_exit_after_head, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_timeout, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_worker_failed, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_head_lost, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_by_tag, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_wait_kept_up_worker_failed, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_cleanup_fails, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_one_by_one, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_delete_fails, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_recover_preempted_worker, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_budget_total_stops, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
