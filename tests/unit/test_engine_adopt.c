/*
 * test_engine_adopt.c - adoption after a crash, against the scripted
 * providers: a create that landed but whose answer was lost (adopted by
 * its client token, never made twice), a lookup that fails (nothing new
 * is made), a lookup that finds nothing (made again with the SAME token),
 * a lost batch whose head was rolled back (its workers replaced), and
 * destroy of a node whose create has no answer (docs/testing.md, "The
 * engine tests").
 *
 * gpuctl killed between a create and its record is the same to the
 * engine as an answer lost: the intent (token, region, zone) is recorded
 * and the provider id is not.  Between the applies the session is closed
 * and opened again (eng_restart), as a new gpuctl would; the scripted
 * world, like a cloud, stays.  Expected sequences are worked out from
 * src/engine/launch.c (gpc_lc_create_missing: adoption first, then
 * replace_orphans, then the launch) and create.c (gpc_lc_adopt).
 */
#include "engine_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC(prov, nodes)                                                            \
    "name: job\nprovider: " prov "\nnodes: " #nodes "\nrun:\n  command: python3 train.py\n"

/* What the apply that lost an answer says of the cluster it leaves. */
#define LEFT_UNKNOWN(n)                                                                      \
    "; cluster 'job' stays recorded with 0 node(s) and " #n " whose create has no answer "  \
    "(they may exist): gpuctl apply finishes it, gpuctl destroy job removes it"

/* The head's create lands, its answer is lost. */
static void lose_head(eng *e, const char *prov)
{
    scripted_lose("create_node", NULL, 1);
    char spec[256];
    snprintf(spec, sizeof(spec), "name: job\nprovider: %s\nnodes: 1\nrun:\n"
             "  command: python3 train.py\n", prov);
    eng_spec(e, spec);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg,
        "scripted: create_node: connection reset (answer lost)" LEFT_UNKNOWN(1));
    assert_int_equal(res.created, 0);
}

/* Lost answer: the create made s-1; the apply fails and keeps the intent;
 * the next apply finds s-1 by its token and records it, with no second
 * create, then waits for it to boot as for a node it made. */
static void test_lost_answer_adopted(void **state)
{
    eng *e = *state;
    lose_head(e, "scripted");
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1, ERR provider (answer lost)\n");
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_int_equal(c.phase, GPC_PHASE_FAILED);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_nodes(e, 1),
        "0 - job-0-U1-a1 r1/r1a t1 - pending(-1) started=- ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error provider: scripted: create_node: connection reset (answer lost)\n");
    eng_said(e);

    eng_restart(e);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-0-U1-a1 -> s-1 booting\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.adopted, 1);
    assert_int_equal(res.created, 0);
    assert_int_equal(res.unchanged, 0);
    assert_int_equal(res.phase, GPC_PHASE_RUNNING);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_said(e),
        "info: found node job-0 (s-1) made by an interrupted apply\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
    char hash[65], want[1024];
    gpc_error_clear(&err);
    assert_int_equal(gpc_spec_hash(e->spec, hash, &err), 0);
    snprintf(want, sizeof(want),
             "- apply: cluster recorded: 1 node(s) on scripted, spec %.12s\n"
             "0 error: create failed: scripted: create_node: connection reset (answer lost)\n"
             "0 adopt: found s-1 by its client token (created, never recorded)\n"
             "- job: job 1: spec %s, workdir none\n"
             "0 phase: booting -> running\n"
             "- phase: cluster failed -> running\n", hash, hash);
    assert_string_equal(eng_events(e, 1), want);
}

/* Failed lookup: find_node cannot tell; nothing is created, the error
 * says why and what is left.  A later apply whose lookup works adopts. */
static void test_failed_lookup(void **state)
{
    eng *e = *state;
    lose_head(e, "scripted");
    eng_calls(e);
    eng_restart(e);
    scripted_fail("find_node", NULL, 1, GPC_ERR_PROVIDER);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    assert_string_equal(eng_norm(e, err.msg),
        "could not look up node job-0 (client token job-0-U1-a1), which an interrupted apply "
        "may have created: scripted: find_node: provider (scripted)" LEFT_UNKNOWN(1));
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-0-U1-a1 -> ERR provider\n");
    assert_int_equal(res.created, 0);
    assert_int_equal(res.adopted, 0);
    assert_string_equal(eng_nodes(e, 1),
        "0 - job-0-U1-a1 r1/r1a t1 - pending(-1) started=- ended=-\n");

    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-0-U1-a1 -> s-1 booting\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.adopted, 1);
}

/* Empty lookup: the create failed without landing (an error that does not
 * say so); find_node finds nothing; the node is created again with the
 * same token and attempt number, in the zone it was meant for, without
 * asking for zones. */
static void test_empty_lookup(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b");
    scripted_fail("create_node", NULL, 1, GPC_ERR_PROVIDER);
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "scripted: create_node: provider (scripted)" LEFT_UNKNOWN(1));
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> ERR provider\n");

    eng_restart(e);
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-0-U1-a1 -> ERR not_found\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_nodes cluster=job ids=s-1 -> booting\n"
        "describe_nodes cluster=job ids=s-1 -> running\n"
        "nodes_running cluster=job ids=s-1 -> ok\n"
        "describe_nodes cluster=job ids=s-1 -> running\n");
    assert_int_equal(res.created, 1);
    assert_int_equal(res.adopted, 0);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/r1a t1 10.0.0.1 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 error provider: scripted: create_node: provider (scripted)\n"
        "0 a1 r1/r1a t1 created\n");
}

/* The same with a provider without describe_nodes: the IP of the node
 * created again is asked with describe_node. */
static void test_empty_lookup_basic(void **state)
{
    eng *e = *state;
    scripted_fail("create_node", NULL, 1, GPC_ERR_PROVIDER);
    eng_spec(e, SPEC("scripted_basic", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    eng_calls(e);
    eng_restart(e);
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-0-U1-a1 -> ERR not_found\n"
        "create_node name=job-0 rank=0 region=r1 zone=- type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "describe_node region=r1 id=s-1 -> booting\n"
        "describe_node region=r1 id=s-1 -> booting\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/- t1 10.0.0.1 booting(-1) started=+0 ended=-\n");
}

/* A batch whose answer was lost: the head the attempt made is rolled back,
 * the workers (made, unrecorded) keep their intent.  The next apply adopts
 * them by "<token>/<index>", then replaces them: they wait for a head that
 * is gone, at its old address.  The whole cluster is launched again. */
static void test_lost_batch_orphans(void **state)
{
    eng *e = *state;
    scripted_lose("create_nodes", NULL, 1);
    eng_spec(e, SPEC("scripted_batch", 3));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg,
        "scripted: create_nodes: connection reset (answer lost)" LEFT_UNKNOWN(2));
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 "
        "head=- -> s-1\n"
        "create_nodes n=2 first=job-1 rank=1+index region=r1 zone=r1a type=t1 "
        "token=job-w1-U1-a1 attempt=1 head=10.0.0.1 -> s-2,s-3, ERR provider (answer lost)\n"
        "delete_node region=r1 id=s-1 -> ok\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 - - r1/r1a t1 - pending(-1) started=- ended=-\n"
        "1 - job-w1-U1-a1/0 r1/r1a t1 - pending(-1) started=- ended=-\n"
        "2 - job-w1-U1-a1/1 r1/r1a t1 - pending(-1) started=- ended=-\n");
    eng_said(e);

    eng_restart(e);
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "find_node region=r1 token=job-w1-U1-a1/0 -> s-2 booting\n"
        "find_node region=r1 token=job-w1-U1-a1/1 -> s-3 booting\n"
        "delete_node region=r1 id=s-2 -> ok\n"
        "delete_node region=r1 id=s-3 -> ok\n"
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a2 attempt=2 "
        "head=- -> s-4\n"
        "create_nodes n=2 first=job-1 rank=1+index region=r1 zone=r1a type=t1 "
        "token=job-w1-U1-a2 attempt=2 head=10.0.0.4 -> s-5,s-6\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> booting,booting,booting\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n"
        "nodes_running cluster=job ids=s-4,s-5,s-6 -> ok\n"
        "describe_nodes cluster=job ids=s-4,s-5,s-6 -> running,running,running\n");
    assert_int_equal(res.adopted, 2);
    assert_int_equal(res.created, 3);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-4 job-0-U1-a2 r1/r1a t1 10.0.0.4 running(-1) started=+0 ended=-\n"
        "1 s-5 job-w1-U1-a2/0 r1/r1a t1 10.0.0.5 running(-1) started=+0 ended=-\n"
        "2 s-6 job-w1-U1-a2/1 r1/r1a t1 10.0.0.6 running(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 r1/r1a t1 created\n"
        "1 a1 r1/r1a t1 error provider: scripted: create_nodes: connection reset (answer lost)\n"
        "2 a1 r1/r1a t1 error provider: scripted: create_nodes: connection reset (answer lost)\n"
        "0 a2 r1/r1a t1 created\n"
        "1 a2 r1/r1a t1 created\n"
        "2 a2 r1/r1a t1 created\n");
    assert_string_equal(eng_said(e),
        "info: found node job-1 (s-2) made by an interrupted apply\n"
        "info: found node job-2 (s-3) made by an interrupted apply\n"
        "info: gpuctl: the head of cluster 'job' is gone and 2 worker(s) wait for it at its old "
        "address: replacing them\n"
        "info: created node job-0 (s-4)\n"
        "info: created node job-1 (s-5)\n"
        "info: created node job-2 (s-6)\n"
        "info: [   0s] job: 0 of 3 node(s) running\n"
        "info: [   5s] job: 3 of 3 node(s) running\n");
}

/* Destroy of a cluster whose create has no answer, on a provider that
 * deletes node by node: the node is looked up by its token and deleted. */
static void test_destroy_adopts(void **state)
{
    eng *e = *state;
    lose_head(e, "scripted_basic");
    eng_calls(e);
    eng_restart(e);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    int deleted = -1;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_destroy(&e->s, &c, &deleted, &err), 0);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_calls(e),
        "find_node region=r1 token=job-0-U1-a1 -> s-1 booting\n"
        "delete_node region=r1 id=s-1 -> ok\n");
    assert_int_equal(deleted, 1);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-0-U1-a1 r1/- t1 10.0.0.1 terminated(-1) started=+0 ended=+0\n");
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_get(e->s.st, "job", &c, &err), GPC_ERR_NOT_FOUND);
}

/* The same when the lookup fails: the node stays recorded, and so does
 * the cluster (GPC_ERR_PARTIAL naming it). */
static void test_destroy_lookup_fails(void **state)
{
    eng *e = *state;
    lose_head(e, "scripted_basic");
    eng_calls(e);
    scripted_fail("find_node", NULL, 1, GPC_ERR_PROVIDER);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    int deleted = -1;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_destroy(&e->s, &c, &deleted, &err), GPC_ERR_PARTIAL);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_norm(e, err.msg),
        "cluster 'job': 1 node(s) could not be deleted and stay recorded: job-0 (could not look "
        "up node job-0 (client token job-0-U1-a1), which an interrupted apply may have created: "
        "scripted: find_node: provider (scripted))");
    assert_string_equal(eng_calls(e), "find_node region=r1 token=job-0-U1-a1 -> ERR provider\n");
    assert_int_equal(deleted, 0);
    assert_string_equal(eng_nodes(e, 1),
        "0 - job-0-U1-a1 r1/- t1 - pending(-1) started=- ended=-\n");
    eng_cluster(e, "job", &c);
    gpc_cluster_rec_free(&c);
}

/* A provider that removes a cluster by its tag (cleanup_cluster) removes a
 * node it made but gpuctl never recorded, with no lookup. */
static void test_destroy_by_tag_takes_unrecorded(void **state)
{
    eng *e = *state;
    lose_head(e, "scripted");
    eng_calls(e);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    int deleted = -1;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_destroy(&e->s, &c, &deleted, &err), 0);
    gpc_cluster_rec_free(&c);
    assert_string_equal(eng_calls(e), "cleanup_cluster cluster=job regions=r1 -> ok deleted=s-1\n");
    assert_int_equal(deleted, 0); /* no recorded node had an id */
    assert_string_equal(eng_nodes(e, 1),
        "0 - job-0-U1-a1 r1/r1a t1 - terminated(-1) started=- ended=+0\n");
}

/* A record rebuilt from its nodes' tags (rebuild.c; made here by emptying
 * the spec of an applied one, as gpc_cluster_rebuild records it): another
 * spec of its name is refused, naming both hashes, with nothing made; the
 * spec of its hash is taken in (launch.c adopt_spec) with nothing made;
 * a provider without list_orphans cannot rebuild from tags. */
static void test_rebuilt_record(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted", 1));
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    assert_int_equal(gpc_cluster_rebuilt(&c), 0);
    char *json = strdup(c.spec_json), *keep = c.spec_json;
    assert_non_null(json);
    c.spec_json = (char *)"";
    assert_int_equal(gpc_cluster_update(e->s.st, &c, &err), 0);
    c.spec_json = keep;
    gpc_cluster_rec_free(&c);
    eng_cluster(e, "job", &c);
    assert_int_equal(gpc_cluster_rebuilt(&c), 1);
    eng_calls(e);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 1\nrun:\n  command: python3 other.py\n");
    char other[65];
    assert_int_equal(gpc_spec_hash(e->spec, other, &err), 0);
    assert_int_equal(eng_apply(e, &res, &err), GPC_ERR_USAGE);
    char want[1024];
    snprintf(want, sizeof(want), "cluster 'job' was rebuilt from its nodes' tags and its spec is "
             "not known: this spec (hash %.12s) is not the one it was made with (%.12s); apply "
             "that spec to take the cluster in, or remove it: gpuctl destroy job", other,
             c.spec_hash);
    assert_string_equal(err.msg, want);
    assert_null(strstr(eng_calls(e), "create_node"));
    eng_spec(e, SPEC("scripted", 1));
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_int_equal(res.created, 0);
    assert_null(strstr(eng_calls(e), "create_node"));
    gpc_cluster_rec_free(&c);
    eng_cluster(e, "job", &c);
    assert_int_equal(gpc_cluster_rebuilt(&c), 0);
    assert_string_equal(c.spec_json, json);
    free(json);
    char ev[160];
    snprintf(ev, sizeof(ev), "- adopt: spec %.12s given again: the record rebuilt from tags is "
             "whole\n", c.spec_hash);
    assert_non_null(strstr(eng_events(e, c.id), ev));
    gpc_cluster_rec_free(&c);
    /* scripted lists nothing it made: no rebuild from tags */
    gpc_rebuilt *r = NULL;
    size_t n = 7;
    gpc_error_clear(&err);
    assert_int_equal(gpc_cluster_rebuild(&e->s, "scripted", NULL, NULL, 0, &r, &n, &err),
                     GPC_ERR_USAGE);
    assert_string_equal(err.msg, "provider scripted cannot rebuild a cluster's record from "
                        "tags: it cannot list what it made for gpuctl");
    assert_null(r);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lost_answer_adopted, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_failed_lookup, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_empty_lookup, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_empty_lookup_basic, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_lost_batch_orphans, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_adopts, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_lookup_fails, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_rebuilt_record, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_by_tag_takes_unrecorded, eng_setup,
                                        eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
