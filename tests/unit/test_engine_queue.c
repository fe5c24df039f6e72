/*
 * test_engine_queue.c - the seam for a batch scheduler (docs/architecture.md,
 * "The seam"), against scripted_group, which is made like a Slurm job: one
 * group per cluster, GPC_CAP_QUEUE, and a shares_files whose answer a test
 * sets per region.
 *
 *   - a queue: apply ends once the provider accepted the nodes, with no
 *     wait for them to run and no GPUCTL_BOOT_TIMEOUT_S give-up, where a
 *     table that is no queue polls until that limit;
 *   - notes: while a node boots, each new word of the provider's
 *     (gpc_node_status.detail: a Slurm job's pending reason) is a "note"
 *     event of its rank and an info line, once per change; what it says of
 *     a node that fails or ends is said once;
 *   - shares_files: workdir and checkpoint_dir used in place, refused or
 *     kept as node paths, as the provider answers for the chosen offer.
 *
 * Expected sequences are worked out from src/engine/apply.c (shares_files,
 * the closing gpc_cluster_refresh), src/engine/launch.c (wait_booted,
 * rollback), src/engine/refresh.c (note_node, last_said, absorb) and
 * create.c; the clock is fixed and moves only when the engine sleeps (5 s
 * polls) or a test moves it.  scripted_group lists no zones: the zone is
 * the offer's ("-").
 */
#include "engine_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuctl/plan.h"
#include "gpuctl/util.h"

#define SPEC(prov, nodes, extra)                                                     \
    "name: job\nprovider: " prov "\nnodes: " #nodes "\n" extra                       \
    "run:\n  command: python3 train.py\n"

static int apply_rc(eng *e, gpc_apply_result *res, gpc_error *err)
{
    return eng_apply(e, res, err);
}

/* Refresh cluster "job" once (as gpuctl status does). */
static void refresh(eng *e)
{
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_cluster_refresh(&e->s, &c, &err))
        fail_msg("refresh: %s", err.msg);
    gpc_cluster_rec_free(&c);
}

/* The events of cluster 1 from the first that starts with `from`. */
static const char *events_from(eng *e, const char *from)
{
    const char *all = eng_events(e, 1);
    const char *at = strstr(all, from);
    if (!at)
        fail_msg("no event '%s' in:\n%s", from, all);
    return at;
}

/* e->dir as the engine resolves it (a canonical path), with `rel`. */
static void dir_path(eng *e, const char *rel, char *out, size_t size)
{
    char *real = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_realpath(e->dir, &real, &err))
        fail_msg("realpath: %s", err.msg);
    snprintf(out, size, "%s%s%s", real, rel[0] ? "/" : "", rel);
    free(real);
}

/* ---- a queue ---------------------------------------------------------- */

/* A job that waits an hour in the queue (a node boots for 3600 s) while
 * GPUCTL_BOOT_TIMEOUT_S is 10: apply asks shares_files, creates the group,
 * and its closing refresh (one describe_nodes) finds it booting; no poll,
 * no sleep (the clock has not moved), no "N of M node(s) running" line,
 * and the nodes stay recorded as booting. */
static void test_queue_apply_returns(void **state)
{
    eng *e = *state;
    setenv("GPUCTL_BOOT_TIMEOUT_S", "10", 1);
    scripted_timing(3600, 60);
    eng_spec(e, SPEC("scripted_group", 2, ""));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a1 "
        "attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
    assert_int_equal(e->now, ENG_T0);
    assert_int_equal(res.created, 2);
    assert_int_equal(res.phase, GPC_PHASE_BOOTING);
    assert_int_equal(res.exit_code, -1);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-w0-U1-a1/0 r1/- t1 10.0.0.1 booting(-1) started=+0 ended=-\n"
        "1 s-2 job-w0-U1-a1/1 r1/- t1 10.0.0.2 booting(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/- t1 created\n"
        "1 a1 r1/- t1 created\n");
    assert_string_equal(eng_said(e),
        "info: created node job-0 (s-1)\n"
        "info: created node job-1 (s-2)\n");
    /* the same spec again: nothing to do, and no wait either */
    assert_int_equal(apply_rc(e, &res, &err), 0);
    assert_int_equal(res.unchanged, 1);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
    assert_int_equal(e->now, ENG_T0);
}

/* The same hour-long boot on a table that is no queue (scripted: nodes
 * one by one, describe_nodes): wait_booted polls every 5 s until
 * GPUCTL_BOOT_TIMEOUT_S (at +0, +5, +10), gives up, and the launch is
 * rolled back (delete, then the clean-up that closes the record). */
static void test_no_queue_gives_up(void **state)
{
    eng *e = *state;
    setenv("GPUCTL_BOOT_TIMEOUT_S", "10", 1);
    scripted_timing(3600, 60);
    eng_spec(e, SPEC("scripted", 1, ""));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), GPC_ERR_TIMEOUT);
    assert_string_equal(err.msg, "job: 1 node(s) still starting after 10s "
                                 "(GPUCTL_BOOT_TIMEOUT_S)");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 "
        "attempt=1 head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "cleanup_cluster cluster=job regions=r1 -> ok\n");
    assert_int_equal(e->now, ENG_T0 + 10);
}

/* ---- notes ------------------------------------------------------------ */

/* What the scheduler says of a waiting job, per rank, once per change:
 * "pending (Resources)" twice, then "pending (Priority)": two notes per
 * rank, not three; back to Resources: a third.  Once the nodes run,
 * their word is the phase event's, and a new word of a running node is
 * neither noted nor said. */
static void test_notes(void **state)
{
    eng *e = *state;
    scripted_timing(3600, 600);
    eng_spec(e, SPEC("scripted_group", 2, ""));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    eng_calls(e);
    eng_said(e);
    /* apply's own refresh saw no word: no note */
    assert_null(strstr(eng_events(e, 1), "note:"));

    const char *res_a = "Slurm job 7 pending (Resources)";
    const char *prio = "Slurm job 7 pending (Priority)";
    scripted_detail("s-1", res_a);
    scripted_detail("s-2", res_a);
    refresh(e);
    assert_string_equal(eng_said(e),
        "info: job: node 0: Slurm job 7 pending (Resources)\n"
        "info: job: node 1: Slurm job 7 pending (Resources)\n");
    refresh(e);
    assert_string_equal(eng_said(e), "");
    scripted_detail("s-1", prio);
    scripted_detail("s-2", prio);
    refresh(e);
    assert_string_equal(eng_said(e),
        "info: job: node 0: Slurm job 7 pending (Priority)\n"
        "info: job: node 1: Slurm job 7 pending (Priority)\n");
    assert_string_equal(events_from(e, "0 note:"),
        "0 note: Slurm job 7 pending (Resources)\n"
        "1 note: Slurm job 7 pending (Resources)\n"
        "0 note: Slurm job 7 pending (Priority)\n"
        "1 note: Slurm job 7 pending (Priority)\n");
    /* one rank only: the other's last word stands */
    scripted_detail("s-2", res_a);
    refresh(e);
    refresh(e);
    assert_string_equal(eng_said(e), "info: job: node 1: Slurm job 7 pending (Resources)\n");

    /* the job starts: the phase event carries the word, no note */
    e->now += 3600;
    scripted_detail("s-1", "Slurm job 7 RUNNING on n1 (10.0.0.1)");
    scripted_detail("s-2", "Slurm job 7 RUNNING on n2 (10.0.0.2)");
    refresh(e);
    scripted_detail("s-1", "Slurm job 7 RUNNING on n1 (10.0.0.1), again");
    refresh(e);
    assert_string_equal(eng_said(e), "");
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n");
    assert_string_equal(events_from(e, "0 note:"),
        "0 note: Slurm job 7 pending (Resources)\n"
        "1 note: Slurm job 7 pending (Resources)\n"
        "0 note: Slurm job 7 pending (Priority)\n"
        "1 note: Slurm job 7 pending (Priority)\n"
        "1 note: Slurm job 7 pending (Resources)\n"
        "0 phase: booting -> running: Slurm job 7 RUNNING on n1 (10.0.0.1)\n"
        "1 phase: booting -> running: Slurm job 7 RUNNING on n2 (10.0.0.2)\n"
        "- phase: cluster booting -> running\n");
}

/* Why a node ended, said once when it changes to failed or terminated
 * (the phase event records it); a node that ends with no word of the
 * provider's is not said. */
static void test_ended_said(void **state)
{
    eng *e = *state;
    scripted_timing(5, 60);
    scripted_exit("job-1", 3, 10);
    scripted_exit("job-2", 4, 10);
    eng_spec(e, SPEC("scripted_group", 3, ""));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    eng_calls(e);
    eng_said(e);
    scripted_detail("s-1", "Slurm job 7 RUNNING");
    scripted_detail("s-2", "Slurm job 7 FAILED");
    /* at +15 rank 0 runs, ranks 1 and 2 have failed (5 s boot, 10 s run) */
    e->now += 15;
    refresh(e);
    assert_string_equal(eng_said(e), "info: job: node 1 failed: Slurm job 7 FAILED\n");
    refresh(e);
    assert_string_equal(eng_said(e), "");
    /* rank 0 removed behind gpuctl's back: terminated, "gone" */
    scripted_gone("s-1");
    refresh(e);
    assert_string_equal(eng_said(e), "info: job: node 0 terminated: gone\n");
    /* the ended nodes are not asked again */
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,failed(3),failed(4)\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "describe_nodes cluster=job ids=s-1 -> terminated\n");
    assert_string_equal(events_from(e, "0 phase:"),
        "0 phase: booting -> running: Slurm job 7 RUNNING\n"
        "1 phase: booting -> failed: Slurm job 7 FAILED\n"
        "2 phase: booting -> failed\n"
        "- phase: cluster booting -> running\n"
        "0 phase: running -> terminated: gone\n"
        "- phase: cluster running -> failed\n");
}

/* ---- shares_files ----------------------------------------------------- */

/* The provider says its nodes see this machine's files (scripted_group's
 * default): workdir is this machine's directory, resolved, and the
 * bootstrap carries it. */
static void test_workdir_in_place(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_group", 1, "workdir: .\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "create_nodes n=1 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a1 "
        "attempt=1 head=node -> s-1 group=g-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n");
    char want[600], wd[512];
    dir_path(e, "", wd, sizeof(wd));
    snprintf(want, sizeof(want), "workdir=%s checkpoint_dir=-", wd);
    assert_string_equal(scripted_dirs(), want);
}

/* The provider says no for this place: workdir is refused before anything
 * is made, in the words of a provider that answers per place ("there"),
 * where one without shares_files names the providers that share. */
static void test_workdir_refused(void **state)
{
    eng *e = *state;
    scripted_shares_files("r1", 0);
    eng_spec(e, SPEC("scripted_group", 1, "workdir: .\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:4:10: workdir: the chosen offer is on scripted_group, whose "
                                 "nodes cannot see this machine's files there and which cannot "
                                 "send it to them (providers that can: aws); put the code in "
                                 "the image or fetch it in setup");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 0\n");
    assert_string_equal(scripted_dirs(), "none");
    gpc_cluster_rec c;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &c, &err), GPC_ERR_NOT_FOUND);

    eng_spec(e, SPEC("scripted", 1, "workdir: .\n"));
    assert_int_equal(apply_rc(e, &res, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:4:10: workdir: the chosen offer is on scripted, whose "
                                 "nodes cannot see this machine's files (only the local "
                                 "provider shares them) and which cannot send it to them "
                                 "(providers that can: aws); put the code in the image or "
                                 "fetch it in setup");
    assert_string_equal(eng_calls(e), "list_offers -> 1\n");
}

/* A provider that reaches its nodes over ssh (transport_argv: aws) takes a
 * workdir and secrets its nodes cannot see (deliver.c sends them), where
 * plan (gpc_plan_check, offline) refuses them on one that has neither
 * that nor shared files (scripted) or secrets in the environment. */
static void test_workdir_delivered(void **state)
{
    eng *e = *state;
    setenv("GPUCTL_TEST_TOKEN", "s3cr3t", 1);
    eng_spec(e, "name: job\nprovider: aws\nresources: {gpu: T4:1}\nworkdir: .\n"
                "secrets: {TOKEN: env:GPUCTL_TEST_TOKEN}\nrun:\n  command: python3 train.py\n");
    gpc_plan p;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_plan_opts po = {.spec_path = "job.yaml"};
    assert_int_equal(gpc_plan_make(&e->s, e->spec, &po, &p, &err), 0);
    assert_int_equal(gpc_plan_check(&e->s, e->spec, &p, &err), 0);
    gpc_plan_free(&p);

    eng_spec(e, SPEC("scripted", 1, "secrets: {TOKEN: env:GPUCTL_TEST_TOKEN}\n"));
    assert_int_equal(gpc_plan_make(&e->s, e->spec, &po, &p, &err), 0);
    assert_int_equal(gpc_plan_check(&e->s, e->spec, &p, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:4:18: secrets: the chosen offer is on scripted, which "
                                 "cannot deliver secrets to its nodes without writing them where "
                                 "they are kept (providers that can: local, slurm; over ssh: aws); "
                                 "pass them another way, or choose such a provider");
    gpc_plan_free(&p);
    unsetenv("GPUCTL_TEST_TOKEN");
}

/* The answer is per place: r1 (cheaper, chosen without a region) does not
 * share this machine's files, r2 does. */
static void test_workdir_per_region(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t1", "r2", 2.0);
    scripted_shares_files("r1", 0);
    scripted_shares_files("r2", 1);
    eng_spec(e, SPEC("scripted_group", 1, "workdir: .\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), GPC_ERR_SPEC);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "shares_files region=r1 zone=- -> 0\n");

    eng_spec(e, SPEC("scripted_group", 1, "workdir: .\nregion: r2\n"));
    assert_int_equal(apply_rc(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "shares_files region=r2 zone=- -> 1\n"
        "create_nodes n=1 first=job-0 rank=sched region=r2 zone=- type=t1 token=job-w0-U1-a1 "
        "attempt=1 head=node -> s-1 group=g-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n");
    char want[600], wd[512];
    dir_path(e, "", wd, sizeof(wd));
    snprintf(want, sizeof(want), "workdir=%s checkpoint_dir=-", wd);
    assert_string_equal(scripted_dirs(), want);
}

/* checkpoint_dir where the nodes share this machine's files: resolved
 * against the spec's directory and made here; where they do not, a node
 * path, kept as written and not made here, and a relative one refused. */
static void test_checkpoint_dir(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_group", 1, "checkpoint_dir: ckpt\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    char want[600], ck[512];
    dir_path(e, "ckpt", ck, sizeof(ck));
    snprintf(want, sizeof(want), "workdir=- checkpoint_dir=%s", ck);
    assert_string_equal(scripted_dirs(), want);
    struct stat sb;
    assert_int_equal(stat(ck, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    int deleted = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_destroy(&e->s, &c, &deleted, &err), 0);
    gpc_cluster_rec_free(&c);
    eng_calls(e);

    scripted_shares_files("r1", 0);
    assert_int_equal(apply_rc(e, &res, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:4:17: checkpoint_dir: 'ckpt' must be an absolute path "
                                 "on the scripted_group nodes");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 0\n");

    char far[400], yaml[600];
    snprintf(far, sizeof(far), "%s/far/ckpt", e->dir);
    snprintf(yaml, sizeof(yaml), SPEC("scripted_group", 1, "checkpoint_dir: %s\n"), far);
    eng_spec(e, yaml);
    assert_int_equal(apply_rc(e, &res, &err), 0);
    snprintf(want, sizeof(want), "workdir=- checkpoint_dir=%s", far);
    assert_string_equal(scripted_dirs(), want);
    assert_int_equal(stat(far, &sb), -1);
}

/* Regression: an applied cluster whose provider now offers nothing (its
 * list_offers says capacity: the plan has no offer to ask shares_files
 * of) applied again with the same spec is unchanged; the relative
 * checkpoint_dir its first apply resolved here is not judged again as a
 * node path (it was, by GPC_CAP_SHARED_FILES, which scripted_group has
 * not, as Slurm has not: "must be an absolute path", exit 4). */
static void test_checkpoint_dir_unchanged(void **state)
{
    eng *e = *state;
    /* a workdir of its own: the state directory (e->dir) changes with each
     * apply, and a workdir's changed files run the job again (rerun.c) */
    char wd[sizeof(e->dir) + 4];
    snprintf(wd, sizeof(wd), "%s/wd", e->dir);
    assert_int_equal(mkdir(wd, 0755), 0);
    eng_spec(e, SPEC("scripted_group", 1, "checkpoint_dir: ckpt\nworkdir: wd\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    eng_calls(e);
    scripted_fail("list_offers", NULL, 0, GPC_ERR_CAPACITY);
    assert_int_equal(apply_rc(e, &res, &err), 0);
    assert_int_equal(res.unchanged, 1);
    assert_int_equal(res.phase, GPC_PHASE_BOOTING);
    assert_string_equal(eng_calls(e),
        "list_offers -> ERR capacity\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n");
}

/* Failover keeps to offers whose nodes see this machine's files as the
 * first one's do: workdir was resolved for r1 (shares), so when r1 has no
 * capacity, r2 (does not share) is skipped, said, and r3 (shares) is
 * tried.  Regression: r2's nodes were made with this machine's path. */
static void test_failover_keeps_sharing(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer("t1", "r2", 2.0);
    scripted_offer("t1", "r3", 3.0);
    scripted_shares_files("r1", 1);
    scripted_shares_files("r2", 0);
    scripted_shares_files("r3", 1);
    scripted_fail("create_nodes", "region=r1", 1, GPC_ERR_CAPACITY);
    eng_spec(e, SPEC("scripted_group", 1, "workdir: .\n"));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_rc(e, &res, &err), 0);
    const char *calls = eng_calls(e);
    assert_non_null(strstr(calls, "shares_files region=r2 zone=- -> 0\n"));
    assert_null(strstr(calls, "create_nodes n=1 first=job-0 rank=sched region=r2"));
    assert_non_null(strstr(calls, "create_nodes n=1 first=job-0 rank=sched region=r3"));
    assert_non_null(strstr(eng_said(e), "gpuctl: skipping offer 2 of 3 (scripted_group t1 r2): "
                                       "its nodes cannot see this machine's files, unlike the "
                                       "first offer's, which workdir and checkpoint_dir were "
                                       "resolved for"));
    char want[600], wd[512];
    dir_path(e, "", wd, sizeof(wd));
    snprintf(want, sizeof(want), "workdir=%s checkpoint_dir=-", wd);
    assert_string_equal(scripted_dirs(), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_apply_returns, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_no_queue_gives_up, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_notes, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_ended_said, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_workdir_in_place, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_workdir_refused, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_workdir_delivered, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_workdir_per_region, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_dir, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_dir_unchanged, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_failover_keeps_sharing, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
