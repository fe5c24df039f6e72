/*
 * test_engine_modes.c - the seam's modes (docs/architecture.md, "The
 * seam") against the scripted providers: a rendezvous name given before
 * launch (scripted_named), one group with the head found on the node and
 * ranks from the scheduler (scripted_group), workers numbered by the
 * rendezvous (scripted_rdzv); what losing the head or part of a group
 * costs in each; provider data kept and handed back; interruption notices
 * recorded while waiting; the orphan listing and sweep (gpuctl gc);
 * every table the engine may be given passes gpc_provider_check.
 *
 * Each expected sequence is worked out from src/engine/launch.c (launch_attempt,
 * launch_group, replace_orphans), create.c and wait.c; the clock is
 * fixed and moves only when the engine sleeps (5 s polls); a scripted
 * node boots for 5 s, then runs for 60 s.  None of these tables lists
 * zones, so the zone is the offer's ("-").
 */
#include "engine_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC(prov, nodes)                                                            \
    "name: job\nprovider: " prov "\nnodes: " #nodes "\nrun:\n  command: python3 train.py\n"

static int apply_rc(eng *e, gpc_error *err)
{
    gpc_apply_result res;
    gpc_error_clear(err);
    return eng_apply(e, &res, err);
}

/* The test registry's tables, real and scripted, are all ones the engine
 * can drive. */
static void test_tables_fit(void **state)
{
    (void)state;
    size_t n = 0;
    for (size_t i = 0; gpc_providers[i]; i++, n++) {
        gpc_error err;
        gpc_error_clear(&err);
        if (gpc_provider_check(gpc_providers[i], &err))
            fail_msg("%s", err.msg);
    }
    assert_int_equal(gpc_provider_head_loss(gpc_provider_find("scripted")),
                     GPC_HEAD_LOSS_WORKERS_TOO);
    assert_int_equal(gpc_provider_head_loss(gpc_provider_find("scripted_named")),
                     GPC_HEAD_LOSS_HEAD_ONLY);
    assert_int_equal(gpc_provider_head_loss(gpc_provider_find("scripted_group")),
                     GPC_HEAD_LOSS_GROUP);
    assert_true(n >= 8);
}

/* A named rendezvous: the name first (rdzv_name, which keeps the
 * service in the cluster's provider data), then every node, head
 * included, told that name; no node waits for the head's IP (no
 * describe_node between the creates). */
static void test_named(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_named", 3));
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "rdzv_name cluster=job -> job-0.svc.test\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=- type=t1 token=job-1-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=- type=t1 token=job-2-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-3\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/- t1 10.0.0.1 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/- t1 10.0.0.2 running(-1) started=+0 ended=-\n"
        "2 s-3 job-2-U1-a1 r1/- t1 10.0.0.3 running(-1) started=+0 ended=-\n");
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_string_equal(c.provider_data, "{\"service\":\"job\"}");
    gpc_cluster_rec_free(&c);
}

/* A named rendezvous outlives its head.  A launch fails at rank 2, and
 * the rollback removes the head but cannot remove worker 1: the next
 * apply keeps worker 1 (HEAD_ONLY), makes the head again under the same
 * name with a new token, and makes rank 2 again with its own token (its
 * create had no clear answer: find_node first).  With the head's IP
 * (test_engine_adopt's lost batch) the worker would be removed first. */
static void test_named_head_only(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_named", 3));
    scripted_fail("create_node", "name=job-2", 1, GPC_ERR_PROVIDER);
    scripted_fail("delete_node", "id=s-2", 1, GPC_ERR_PROVIDER);
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "scripted: create_node: provider (scripted); cluster 'job' "
                        "stays recorded with 1 node(s) and 1 whose create has no answer (they "
                        "may exist): gpuctl apply finishes it, gpuctl destroy job removes it");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "rdzv_name cluster=job -> job-0.svc.test\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=- type=t1 token=job-1-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=- type=t1 token=job-2-U1-a1 attempt=1 "
        "head=job-0.svc.test -> ERR provider\n"
        "delete_node region=r1 id=s-1 -> ok\n"
        "delete_node region=r1 id=s-2 -> ERR provider\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 - - r1/- t1 - pending(-1) started=- ended=-\n"
        "1 s-2 job-1-U1-a1 r1/- t1 10.0.0.2 booting(-1) started=+0 ended=-\n"
        "2 - job-2-U1-a1 r1/- t1 - pending(-1) started=- ended=-\n");

    assert_int_equal(apply_rc(e, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-2-U1-a1 -> ERR not_found\n"
        "rdzv_name cluster=job -> job-0.svc.test\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a2 attempt=2 "
        "head=job-0.svc.test -> s-3\n"
        "create_node name=job-2 rank=2 region=r1 zone=- type=t1 token=job-2-U1-a1 attempt=1 "
        "head=job-0.svc.test -> s-4\n"
        "describe_nodes cluster=job ids=s-3,s-2,s-4 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-3,s-2,s-4 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-3,s-2,s-4 -> running,running,running\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-3 job-0-U1-a2 r1/- t1 10.0.0.3 running(-1) started=+0 ended=-\n"
        "1 s-2 job-1-U1-a1 r1/- t1 10.0.0.2 running(-1) started=+0 ended=-\n"
        "2 s-4 job-2-U1-a1 r1/- t1 10.0.0.4 running(-1) started=+0 ended=-\n");
}

/* One group: every rank in one create_nodes call (token "-w0-", the
 * first rank's), one bootstrap whose rank the scheduler gives and whose
 * head the node finds; the group's id is the cluster's provider data and
 * each node's names its group.  apply asks shares_files first, and, the
 * table being a queue (GPC_CAP_QUEUE), ends once the group is accepted:
 * no wait for the nodes to run, only apply's closing refresh.  Destroy
 * deletes the first live member, which takes the group (the provider
 * needs the node's data to know which), and the others find themselves
 * gone. */
static void test_group(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_group", 3));
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "create_nodes n=3 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a1 "
        "attempt=1 head=node -> s-1,s-2,s-3 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-w0-U1-a1/0 r1/- t1 10.0.0.1 booting(-1) started=+0 ended=-\n"
        "1 s-2 job-w0-U1-a1/1 r1/- t1 10.0.0.2 booting(-1) started=+0 ended=-\n"
        "2 s-3 job-w0-U1-a1/2 r1/- t1 10.0.0.3 booting(-1) started=+0 ended=-\n");
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_string_equal(c.provider_data, "{\"group\":\"g-1\"}");
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_node_list(e->s.st, c.id, 0, &nodes, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(nodes[1].provider_data, "{\"group\":\"g-1\",\"node\":\"s-2\"}");
    gpc_node_list_free(nodes, n);

    int deleted = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_destroy(&e->s, &c, &deleted, &err), 0);
    assert_int_equal(deleted, 3);
    assert_string_equal(eng_calls(e),
        "delete_node region=r1 id=s-1 -> ok also=s-2,s-3\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "delete_node region=r1 id=s-3 -> ok\n");
    gpc_cluster_rec_free(&c);
}

/* A group whose create's answer was lost, and whose lookup then finds
 * two of its three nodes: an all-or-nothing call cannot be made again for
 * one node, so the two are removed (the first delete takes the group) and
 * the group is made anew with a new token. */
static void test_group_replaced(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_group", 3));
    scripted_lose("create_nodes", NULL, 1);
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), GPC_ERR_PROVIDER);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "create_nodes n=3 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a1 "
        "attempt=1 head=node -> s-1,s-2,s-3 group=g-1, ERR provider (answer lost)\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 - job-w0-U1-a1/0 r1/- t1 - pending(-1) started=- ended=-\n"
        "1 - job-w0-U1-a1/1 r1/- t1 - pending(-1) started=- ended=-\n"
        "2 - job-w0-U1-a1/2 r1/- t1 - pending(-1) started=- ended=-\n");
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    char where[96];
    snprintf(where, sizeof(where), "token=job-w0-%.8s-a1/1", c.uid);
    gpc_cluster_rec_free(&c);
    scripted_fail("find_node", where, 1, GPC_ERR_NOT_FOUND);
    eng_said(e);

    assert_int_equal(apply_rc(e, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=r1 zone=- -> 1\n"
        "find_node region=r1 token=job-w0-U1-a1/0 -> s-1 booting\n"
        "find_node region=r1 token=job-w0-U1-a1/1 -> ERR not_found\n"
        "find_node region=r1 token=job-w0-U1-a1/2 -> s-3 booting\n"
        "delete_node region=r1 id=s-1 -> ok also=s-2,s-3\n"
        "delete_node region=r1 id=s-3 -> ok\n"
        "create_nodes n=3 first=job-0 rank=sched region=r1 zone=- type=t1 token=job-w0-U1-a2 "
        "attempt=2 head=node -> s-4,s-5,s-6 group=g-2\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> booting,booting,booting\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-4 job-w0-U1-a2/0 r1/- t1 10.0.0.4 booting(-1) started=+0 ended=-\n"
        "1 s-5 job-w0-U1-a2/1 r1/- t1 10.0.0.5 booting(-1) started=+0 ended=-\n"
        "2 s-6 job-w0-U1-a2/2 r1/- t1 10.0.0.6 booting(-1) started=+0 ended=-\n");
    assert_string_equal(eng_said(e),
        "info: found node job-0 (s-1) made by an interrupted apply\n"
        "info: found node job-2 (s-3) made by an interrupted apply\n"
        "info: gpuctl: 1 node(s) of cluster 'job' are gone and its nodes are made as one "
        "group: replacing the 2 left\n"
        "info: created node job-0 (s-4)\n"
        "info: created node job-1 (s-5)\n"
        "info: created node job-2 (s-6)\n");
    eng_cluster(e, "job", &c);
    assert_string_equal(c.provider_data, "{\"group\":\"g-2\"}");
    gpc_cluster_rec_free(&c);
}

/* Workers numbered by the rendezvous: the head first (rank 0 from the
 * engine, its IP from the create's answer), then workers whose bootstrap
 * carries the head's IP and no rank. */
static void test_rdzv_ranks(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_rdzv", 3));
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_node name=job-1 rank=rdzv region=r1 zone=- type=t1 token=job-1-U1-a1 "
        "attempt=1 head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=rdzv region=r1 zone=- type=t1 token=job-2-U1-a1 "
        "attempt=1 head=10.0.0.1 -> s-3\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n"
        "describe_nodes cluster=job ids=s-1,s-2,s-3 -> running,running,running\n");
}

/* An interruption notice while waiting: polled after each refresh,
 * recorded once as an event of its node and said once, however often the
 * provider repeats it. */
static void test_notice(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_named", 2));
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), 0);
    eng_calls(e);
    eng_said(e);
    scripted_notice("s-2", "terminate", ENG_T0 + 125);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_wait(&e->s, &c, &(gpc_wait_opts){.timeout_s = 0, .poll_s = 5, .stream_logs = 0}, &err), 0);
    gpc_cluster_rec_free(&c);
    /* running from +5 to +65: polls at +5, +10, ..., +60 see it running,
     * +65 sees the end (12 rounds with a poll of notices, then the last) */
    char want[4096] = "";
    for (int i = 0; i < 12; i++)
        strcat(want, "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"
                     "poll_interruptions cluster=job ids=s-1,s-2 -> s-2:terminate\n");
    strcat(want, "describe_nodes cluster=job ids=s-1,s-2 -> succeeded(0),succeeded(0)\n");
    assert_string_equal(eng_calls(e), want);
    const char *ev = strstr(eng_events(e, 1), "1 interruption:");
    assert_non_null(ev);
    assert_string_equal(ev,
        "1 interruption: terminate notice for s-2, deadline 2023-11-14T22:15:25Z: scripted "
        "notice\n"
        "0 phase: running -> succeeded\n"
        "1 phase: running -> succeeded\n"
        "- phase: cluster running -> succeeded\n");
    const char *said = eng_said(e);
    assert_non_null(strstr(said, "info: gpuctl: node job-1 (s-2) has a terminate notice from "
                                 "scripted_named, deadline 2023-11-14T22:15:25Z\n"));
    assert_null(strstr(strstr(said, "terminate notice") + 1, "terminate notice"));
}

/* A failed poll of notices is not "no notice" and does not stop the wait. */
static void test_notice_poll_fails(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_named", 1));
    gpc_error err;
    assert_int_equal(apply_rc(e, &err), 0);
    eng_calls(e);
    scripted_fail("poll_interruptions", NULL, 0, GPC_ERR_PROVIDER);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_wait(&e->s, &c, &(gpc_wait_opts){.timeout_s = 12, .poll_s = 5, .stream_logs = 0}, &err), GPC_ERR_TIMEOUT);
    assert_string_equal(err.msg, "cluster 'job' still running after 12s; the nodes keep running");
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_calls(e),
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "poll_interruptions cluster=job ids=s-1 -> ERR provider\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "poll_interruptions cluster=job ids=s-1 -> ERR provider\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "poll_interruptions cluster=job ids=s-1 -> ERR provider\n"
        /* +12: the timeout, not the next 5 s poll; notices were asked at +10 */
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_null(strstr(eng_events(e, 1), "interruption"));
}

/* gpc_orphans: what the provider keeps that no live cluster owns.  The
 * record of cluster "old" says destroyed while its node still runs (a
 * state restored from a backup): its node is listed, job's is not. */
static void test_orphans(void **state)
{
    eng *e = *state;
    gpc_error err;
    eng_spec(e, "name: job\nprovider: scripted_named\nrun:\n  command: a\n");
    assert_int_equal(apply_rc(e, &err), 0);
    eng_spec(e, "name: old\nprovider: scripted_named\nrun:\n  command: a\n");
    assert_int_equal(apply_rc(e, &err), 0);
    gpc_cluster_rec old;
    eng_cluster(e, "old", &old);
    old.destroyed_at = e->now;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_update(e->s.st, &old, &err), 0);
    eng_calls(e);

    gpc_orphan *o = NULL;
    size_t n = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted_named", NULL, 0, &o, &n, &err), 0);
    assert_string_equal(eng_calls(e), "list_orphans -> s-1,s-2\n");
    assert_int_equal(n, 1);
    assert_string_equal(o[0].kind, "node");
    assert_string_equal(o[0].id, "s-2");
    assert_string_equal(o[0].region, "r1");
    assert_string_equal(o[0].cluster_uid, old.uid);
    assert_string_equal(o[0].cluster, "old");
    assert_string_equal(o[0].detail, "old-0");
    assert_string_equal(o[0].data, "{\"node\":\"s-2\"}");
    assert_int_equal(o[0].owned, 0);
    assert_int_equal(o[0].expired_at, 0);
    free(o);
    gpc_cluster_rec_free(&old);

    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted", NULL, 0, &o, &n, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "provider scripted cannot list what it made for gpuctl");
    assert_null(o);
    assert_int_equal(n, 0);

    /* a provider that could not read some place says so: nothing is taken
     * as clean */
    scripted_fail("list_orphans", NULL, 1, GPC_ERR_PARTIAL);
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted_named", NULL, 0, &o, &n, &err),
                     GPC_ERR_PARTIAL);
    assert_string_equal(err.msg, "scripted: list_orphans: partial (scripted)");
    assert_int_equal(n, 0);
    free(o);
}

/* The sweep (gpuctl gc): "old" is destroyed in the state while its node
 * runs, "exp" is live but its node passed its expiry, "job" is live and
 * its node's expiry is still ahead.  Listed in r1: old's node (no live
 * cluster) and exp's (expired); then removed, old's by cleanup_cluster
 * with what its orphans say (name, region, data), exp by a destroy of its
 * record (its own provider data), which then says destroyed. */
static void test_gc(void **state)
{
    eng *e = *state;
    gpc_error err;
    const char *names[] = {"job", "old", "exp"};
    for (int i = 0; i < 3; i++) {
        char yaml[128];
        snprintf(yaml, sizeof(yaml), "name: %s\nprovider: scripted_named\nrun:\n  command: a\n",
                 names[i]);
        eng_spec(e, yaml);
        assert_int_equal(apply_rc(e, &err), 0);
    }
    gpc_cluster_rec old, exp;
    eng_cluster(e, "old", &old);
    eng_cluster(e, "exp", &exp);
    old.destroyed_at = e->now;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_update(e->s.st, &old, &err), 0);
    scripted_expires("s-1", e->now + 3600);
    scripted_expires("s-3", e->now - 10);
    eng_calls(e);
    eng_said(e);

    gpc_orphan *o = NULL;
    size_t n = 0;
    const char *r1[] = {"r1"};
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted_named", r1, 1, &o, &n, &err), 0);
    assert_string_equal(eng_calls(e), "list_orphans regions=r1 -> s-1,s-2,s-3\n");
    assert_int_equal(n, 2);
    assert_string_equal(o[0].id, "s-2");
    assert_int_equal(o[0].owned, 0);
    assert_int_equal(o[0].expired_at, 0);
    assert_string_equal(o[1].id, "s-3");
    assert_string_equal(o[1].cluster, "exp");
    assert_int_equal(o[1].owned, 1);
    assert_int_equal(o[1].expires_at, e->now - 10);
    assert_int_equal(o[1].expired_at, e->now - 10);

    /* the first removal fails: exp's is still done, and the error names
     * old's cluster */
    scripted_fail("cleanup_cluster", "cluster=old", 1, GPC_ERR_PROVIDER);
    int deleted[2] = {-1, -1};
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans_delete(&e->s, "scripted_named", o, n, deleted, &err),
                     GPC_ERR_PARTIAL);
    char want[512];
    snprintf(want, sizeof(want), "scripted_named: the resources of 1 cluster(s) are left: "
             "cluster old (%s): scripted: cleanup_cluster: provider (scripted)", old.uid);
    assert_string_equal(err.msg, want);
    assert_int_equal(deleted[0], 0);
    assert_int_equal(deleted[1], 1);
    assert_string_equal(eng_calls(e),
        "cleanup_cluster cluster=old regions=r1 data={\"node\":\"s-2\"} -> ERR provider\n"
        "cleanup_cluster cluster=exp regions=r1 data={\"service\":\"exp\"} -> ok deleted=s-3\n");
    snprintf(want, sizeof(want), "info: scripted_named: removed 1 resource(s) of cluster exp "
             "(%s)\n", exp.uid);
    assert_string_equal(eng_said(e), eng_norm(e, want));
    gpc_cluster_rec *live = NULL;
    size_t nl = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_list(e->s.st, 0, &live, &nl, &err), 0);
    assert_int_equal(nl, 1);
    assert_string_equal(live[0].name, "job");
    gpc_cluster_list_free(live, nl);
    free(o);

    /* again: only old's node is left, and goes */
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted_named", NULL, 0, &o, &n, &err), 0);
    assert_int_equal(n, 1);
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans_delete(&e->s, "scripted_named", o, n, deleted, &err), 0);
    assert_int_equal(deleted[0], 1);
    assert_string_equal(eng_calls(e),
        "list_orphans -> s-1,s-2\n"
        "cleanup_cluster cluster=old regions=r1 data={\"node\":\"s-2\"} -> ok deleted=s-2\n");
    free(o);
    gpc_error_clear(&err);
    assert_int_equal(gpc_orphans(&e->s, "scripted_named", NULL, 0, &o, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_string_equal(eng_calls(e), "list_orphans -> s-1\n");
    free(o);
    gpc_cluster_rec_free(&old);
    gpc_cluster_rec_free(&exp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_fit),
        cmocka_unit_test_setup_teardown(test_named, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_named_head_only, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_group, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_group_replaced, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rdzv_ranks, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_notice, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_notice_poll_fails, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_orphans, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_gc, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
