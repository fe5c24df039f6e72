/*
 * test_engine_recover.c - zone cooldowns and policy auto's fallback to
 * on-demand (src/engine/zones.c; docs/spot.md), against the scripted
 * provider: the zone a worker was preempted in (or that had no capacity)
 * is passed over for spot.zone_cooldown, the replacement goes to another
 * zone unless a placement group keeps the cluster in it, and after
 * spot.fallback_after interruptions the replacement is bought on-demand at
 * the plan's on-demand price.  A change of only these fields is no change
 * of the cluster.
 *
 * Times are the fixed clock's (ENG_T0 = 2023-11-14T22:13:20Z): nodes boot
 * 5 s, their jobs run 60 s; apply --wait polls every 5 s (docs/testing.md,
 * "The engine tests").  Sequences are worked out from src/engine/
 * recover.c, zones.c and launch.c (gpc_lc_create_missing).
 */
#include "engine_harness.h"
#include "gpuctl/plan.h"
#include "gpuctl/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* apply --wait of e->spec; its code. */
static int apply_wait(eng *e, gpc_apply_result *res, gpc_error *err)
{
    gpc_error_clear(err);
    gpc_apply_opts o = {.poll_s = 5, .wait = 1};
    return gpc_apply(&e->s, e->spec, "-", &o, res, err);
}

/* The create_node lines of the call log since the last eng_calls. */
static const char *creates(eng *e)
{
    static char out[4096];
    const char *calls = eng_calls(e);
    out[0] = '\0';
    for (const char *p = calls; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
        if ((strncmp(p, "create_node ", 12) == 0 || strncmp(p, "list_zones ", 11) == 0) &&
            strlen(out) + len < sizeof(out))
            strncat(out, p, len);
        p += len;
    }
    return out;
}

/* Every node of cluster 1 (terminated too): "RANK ID ZONE spot|on-demand PRICE". */
static const char *markets(eng *e)
{
    static char out[1024];
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_node_list(e->s.st, 1, 1, &nodes, &n, &err), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char line[128];
        snprintf(line, sizeof(line), "%u %s %s %s %.2f\n", nodes[i].rank, nodes[i].provider_id,
                 nodes[i].zone, nodes[i].spot ? "spot" : "on-demand", nodes[i].price_hourly);
        strncat(out, line, sizeof(out) - strlen(out) - 1);
    }
    gpc_node_list_free(nodes, n);
    return out;
}

/* The events of kind recovery of cluster 1. */
static const char *recoveries(eng *e)
{
    static char out[4096];
    const char *ev = eng_events(e, 1);
    out[0] = '\0';
    for (const char *p = ev; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
        const char *sp = strchr(p, ' ');
        if (sp && strncmp(sp + 1, "recovery:", 9) == 0 && strlen(out) + len < sizeof(out))
            strncat(out, p, len);
        p += len;
    }
    return out;
}

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

/* 1 when the state has zone `zone` of r1 at scripted cooling down at
 * `now`; *until and why filled. */
static int cooling(eng *e, const char *zone, int64_t now, int64_t *until, char *why, size_t wl)
{
    gpc_zone_cool_rec r;
    int found = -1;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_zone_cool_get(e->s.st, "scripted", "r1", zone, now, &r, &found, &err),
                     0);
    if (found) {
        *until = r.until;
        snprintf(why, wl, "%s", r.why);
    }
    gpc_zone_cool_rec_free(&r);
    return found;
}

/* A worker preempted in r1a at +20, with the default cooldown (30m): r1a
 * is passed over until +1820 (22:43:40Z), the replacement (s-4) goes to
 * r1b, the other zone of r1 (list_zones asked again; r1a would come
 * last), while the head and s-3 stay in r1a; the state's cooldown holds
 * until +1820, exclusive. */
static void test_preempted_zone_passed_over(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    scripted_zones("r1", "r1a r1b");
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\nspot: spot\n"
                "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_wait(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 head=10.0.0.1 -> s-3\n"
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1b type=t1 token=job-1-U1-a2 attempt=2 head=10.0.0.1 -> s-4\n");
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "1 recovery: zone r1a of r1 passed over for 30m (spot.zone_cooldown, until "
        "2023-11-14T22:43:40Z): node job-1 (s-2) was preempted\n"
        "- recovery: zone r1a cools down (until 2023-11-14T22:43:40Z: node job-1 (s-2) was "
        "preempted): the replacement goes to another zone of r1 first\n"
        "1 recovery: replaced by s-4\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a spot 0.30\n"
        "1 s-2 r1a spot 0.30\n"
        "1 s-4 r1b spot 0.30\n"
        "2 s-3 r1a spot 0.30\n");
    assert_non_null(strstr(eng_said(e), "info: gpuctl: zone r1a cools down (until "
                                        "2023-11-14T22:43:40Z: node job-1 (s-2) was "
                                        "preempted): tried after the others\n"));
    int64_t until = 0;
    char why[128];
    assert_int_equal(cooling(e, "r1a", ENG_T0 + 1819, &until, why, sizeof(why)), 1);
    assert_int_equal(until, ENG_T0 + 1820);
    assert_string_equal(why, "node job-1 (s-2) was preempted");
    assert_int_equal(cooling(e, "r1a", ENG_T0 + 1820, &until, why, sizeof(why)), 0);
    assert_int_equal(cooling(e, "r1b", ENG_T0 + 30, &until, why, sizeof(why)), 0);
}

/* apply's zone by zone create: r1a has no capacity at +0 (cooldown 15m:
 * until +900, 22:28:20Z), r1b takes the node; the next apply (+5) tries
 * r1b first and never reaches r1a; once the cooldown ended (+900) r1a is
 * first again (the capacity skip of 600 s ended too). */
static void test_capacity_zone_tried_last(void **state)
{
    eng *e = *state;
    scripted_zones("r1", "r1a r1b r1c");
    scripted_fail("create_node", "zone=r1a", 1, GPC_ERR_CAPACITY);
    eng_spec(e, "name: job\nprovider: scripted\nspot: {zone_cooldown: 15m}\n"
                "run:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a,r1b,r1c\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 head=- -> ERR capacity\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U1-a2 attempt=2 head=- -> s-1\n");
    assert_string_equal(recoveries(e),
        "- recovery: zone r1a of r1 passed over for 15m (spot.zone_cooldown, until "
        "2023-11-14T22:28:20Z): no capacity for t1 on-demand\n");
    destroy(e, "job");

    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a,r1b,r1c\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1b type=t1 token=job-0-U2-a1 attempt=1 head=- -> s-2\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: zone r1a cools down (until 2023-11-14T22:28:20Z: no capacity for t1 "
        "on-demand): tried after the others\n"
        "info: created node job-0 (s-2)\n"
        "info: [   0s] job: 0 of 1 node(s) running\n"
        "info: [   5s] job: 1 of 1 node(s) running\n");
    destroy(e, "job");

    e->now = ENG_T0 + 900;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a,r1b,r1c\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U3-a1 attempt=1 head=- -> s-3\n");
}

/* policy auto, all spot (0.30 against 1.00 on-demand): s-2 is taken back
 * at +20 and replaced on spot (1 interruption, fallback_after 2 by
 * default), its replacement s-4 at +40: the 2nd interruption, so s-5 is
 * bought on-demand at the plan's on-demand price (the all-on-demand
 * offer), in the same zone (zone_cooldown 0). */
static void test_fallback_on_demand(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer_spot("t1", "r1", 0.3);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\n"
                "spot: {policy: auto, zone_cooldown: 0}\n"
                "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    scripted_preempt_at("s-4", ENG_T0 + 40);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_wait(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 head=10.0.0.1 -> s-3\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a2 attempt=2 head=10.0.0.1 -> s-4\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a3 attempt=3 head=10.0.0.1 -> s-5\n");
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "1 recovery: replaced by s-4\n"
        "1 recovery: node job-1 (s-4) was preempted while the job runs: replacing it\n"
        "- recovery: falls back to on-demand after 2 spot interruptions (spot.fallback_after "
        "2): the replacement is t1 on-demand in r1 at 1.0000 USD/hour\n"
        "1 recovery: replaced by s-5\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a spot 0.30\n"
        "1 s-2 r1a spot 0.30\n"
        "1 s-4 r1a spot 0.30\n"
        "1 s-5 r1a on-demand 1.00\n"
        "2 s-3 r1a spot 0.30\n");
    assert_non_null(strstr(eng_said(e), "info: gpuctl: cluster job falls back to on-demand "
                                        "after 2 spot interruptions\n"));
}

/* The plan holds no on-demand price of t1 (budget.max_hourly 2 rules out
 * 3 x 1.00 on-demand): the replacement stays on spot, and says why. */
static void test_fallback_no_price(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer_spot("t1", "r1", 0.3);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\n"
                "spot: {policy: auto, zone_cooldown: 0, fallback_after: 1}\n"
                "budget: {max_hourly: 2}\n"
                "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_wait(e, &res, &err), 0);
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "- recovery: 1 spot interruption (spot.fallback_after 1), but the plan has no "
        "on-demand price for t1 in r1: the replacement stays on spot\n"
        "1 recovery: replaced by s-4\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a spot 0.30\n"
        "1 s-2 r1a spot 0.30\n"
        "1 s-4 r1a spot 0.30\n"
        "2 s-3 r1a spot 0.30\n");
}

/* apply --wait of 3 nodes of t1 in r1 from a catalog row with both
 * prices (1.00 on-demand, 0.30 spot; the scripted offers fit nothing):
 * policy auto with the head on-demand, the workers spot (1.60 USD/hour;
 * all on-demand, 3.00, is over budget.max_hourly `cap`), fallback_after
 * 1, s-2 preempted at +20. */
static void apply_mixed(eng *e, const char *cap)
{
    char cat[512], yaml[512];
    snprintf(cat, sizeof(cat), "%s/catalog.csv", e->dir);
    FILE *f = fopen(cat, "w");
    assert_non_null(f);
    fputs("provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
          "interconnect,interconnect_gbps,price_ondemand_usd_hr,price_spot_usd_hr,"
          "price_ondemand_cny_hr,price_spot_cny_hr,source,notes\n"
          "scripted,t1,r1,,0,,8,32,none,,1.0,0.3,,,test,\n", f);
    fclose(f);
    scripted_offer_spot("t9", "r9", 99);
    snprintf(yaml, sizeof(yaml), "name: job\nprovider: scripted\nnodes: 3\nregion: r1\n"
             "spot: {policy: auto, head: on-demand, zone_cooldown: 0, fallback_after: 1}\n"
             "budget: {max_hourly: %s}\nrun:\n  command: python3 train.py\n", cap);
    eng_spec(e, yaml);
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_apply_opts o = {.poll_s = 5, .wait = 1, .catalog_path = cat};
    if (gpc_apply(&e->s, e->spec, "-", &o, &res, &err))
        fail_msg("%s", err.msg);
}

/* The head's offer carries the on-demand price (the plan holds no
 * all-on-demand offer), and the cluster with a worker on-demand, 1.00 +
 * 0.30 + 1.00 = 2.30 USD/hour, stays under a cap of 2.5: s-4 on-demand. */
static void test_fallback_head_price(void **state)
{
    eng *e = *state;
    apply_mixed(e, "2.5");
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "- recovery: falls back to on-demand after 1 spot interruption (spot.fallback_after "
        "1): the replacement is t1 on-demand in r1 at 1.0000 USD/hour\n"
        "1 recovery: replaced by s-4\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a on-demand 1.00\n"
        "1 s-2 r1a spot 0.30\n"
        "1 s-4 r1a on-demand 1.00\n"
        "2 s-3 r1a spot 0.30\n");
}

/* The same under a cap of 2: 2.30 USD/hour would cross it, so the
 * replacement stays on spot, and says so. */
static void test_fallback_over_budget(void **state)
{
    eng *e = *state;
    apply_mixed(e, "2");
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "- recovery: 1 spot interruption (spot.fallback_after 1), but on-demand (1.0000 "
        "USD/hour) would bring the cluster to 2.3000 USD/hour, over budget.max_hourly 2.0000: "
        "the replacement stays on spot\n"
        "1 recovery: replaced by s-4\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a on-demand 1.00\n"
        "1 s-2 r1a spot 0.30\n"
        "1 s-4 r1a spot 0.30\n"
        "2 s-3 r1a spot 0.30\n");
}

/* policy auto, all spot, fallback_after 1: the head s-1 is preempted at
 * +20; the scripted provider's head-loss rule makes every rank again,
 * the head and the workers on-demand at 1.00 (the workers' rows are
 * made again in place: their spot nodes s-2, s-3 no longer show). */
static void test_fallback_head_lost(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer_spot("t1", "r1", 0.3);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\n"
                "spot: {policy: auto, zone_cooldown: 0, fallback_after: 1}\n"
                "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-1", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    if (apply_wait(e, &res, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(recoveries(e),
        "0 recovery: node job-0 (s-1) was preempted while the job runs: replacing it\n"
        "- recovery: falls back to on-demand after 1 spot interruption (spot.fallback_after "
        "1): the replacement is t1 on-demand in r1 at 1.0000 USD/hour\n"
        "0 recovery: replaced by s-4\n"
        "1 recovery: replaced by s-5\n"
        "2 recovery: replaced by s-6\n");
    assert_string_equal(markets(e),
        "0 s-1 r1a spot 0.30\n"
        "0 s-4 r1a on-demand 1.00\n"
        "1 s-5 r1a on-demand 1.00\n"
        "2 s-6 r1a on-demand 1.00\n");
}

/* An offer with a fabric (efa) on a provider with placement groups, three
 * nodes: the group lives in r1a, so the replacement stays there although
 * r1a cools down (no list_zones asked), and an event says so. */
static void test_placement_keeps_zone(void **state)
{
    eng *e = *state;
    scripted_offer_spot("t1", "r1", 0.3);
    scripted_offer_fabric("efa");
    scripted_zones("r1", "r1a r1b");
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 3\nspot: spot\n"
                "run:\n  command: python3 train.py\n");
    scripted_preempt_at("s-2", ENG_T0 + 20);
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(apply_wait(e, &res, &err), 0);
    assert_string_equal(creates(e),
        "list_zones region=r1 type=t1 -> r1a,r1b\n"
        "create_node name=job-0 rank=0 region=r1 zone=r1a type=t1 token=job-0-U1-a1 attempt=1 head=- -> s-1\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a1 attempt=1 head=10.0.0.1 -> s-2\n"
        "create_node name=job-2 rank=2 region=r1 zone=r1a type=t1 token=job-2-U1-a1 attempt=1 head=10.0.0.1 -> s-3\n"
        "create_node name=job-1 rank=1 region=r1 zone=r1a type=t1 token=job-1-U1-a2 attempt=2 head=10.0.0.1 -> s-4\n");
    assert_string_equal(recoveries(e),
        "1 recovery: node job-1 (s-2) was preempted while the job runs: replacing it\n"
        "1 recovery: zone r1a of r1 passed over for 30m (spot.zone_cooldown, until "
        "2023-11-14T22:43:40Z): node job-1 (s-2) was preempted\n"
        "- recovery: zone r1a cools down (until 2023-11-14T22:43:40Z: node job-1 (s-2) was "
        "preempted), but the cluster's nodes share a placement group (efa), which lives in "
        "one zone: the replacement stays in r1a\n"
        "1 recovery: replaced by s-4\n");
}

/* A change of only spot.zone_cooldown and spot.fallback_after is no
 * change: the plan's action is none, apply makes and removes nothing
 * (the calls of an apply of the same spec), and the cluster keeps its
 * spec. */
static void test_controller_change(void **state)
{
    eng *e = *state;
    scripted_offer("t1", "r1", 1.0);
    scripted_offer_spot("t1", "r1", 0.3);
    eng_spec(e, "name: job\nprovider: scripted\nnodes: 2\nspot: auto\n"
                "run:\n  command: python3 train.py\n");
    gpc_apply_result res;
    gpc_error err;
    assert_int_equal(eng_apply(e, &res, &err), 0);
    gpc_cluster_rec c;
    eng_cluster(e, "job", &c);
    char *was = strdup(c.spec_hash);
    gpc_cluster_rec_free(&c);
    eng_calls(e);
    eng_said(e);
    const char *y = "name: job\nprovider: scripted\nnodes: 2\n"
                    "spot: {policy: auto, zone_cooldown: 5m, fallback_after: 4}\n"
                    "run:\n  command: python3 train.py\n";
    eng_spec(e, y);
    gpc_plan p;
    gpc_plan_opts po = {.spec_path = "job.yaml", .spec_text = y, .spec_len = strlen(y)};
    gpc_error_clear(&err);
    assert_int_equal(gpc_plan_make(&e->s, e->spec, &po, &p, &err), 0);
    assert_int_equal(p.action, GPC_PLAN_NONE);
    assert_int_equal(p.n_create, 0);
    assert_int_equal(p.n_remove, 0);
    assert_string_equal(p.rerun, "");
    assert_string_not_equal(p.spec_hash, was); /* the spec did change */
    gpc_plan_free(&p);
    eng_calls(e);
    assert_int_equal(eng_apply(e, &res, &err), 0);
    assert_int_equal(res.unchanged, 1);
    assert_int_equal(res.created, 0);
    assert_int_equal(res.removed, 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "nodes_running cluster=job ids=s-1,s-2 -> ok\n"  /* as any apply of a */
        "describe_nodes cluster=job ids=s-1,s-2 -> running,running\n"); /* whole cluster */
    eng_cluster(e, "job", &c);
    assert_string_equal(c.spec_hash, was);
    gpc_cluster_rec_free(&c);
    free(was);
}

/* apply's offer failover with offers that carry their own zone (a
 * scheduler's partitions; scripted_group lists no zones): partition gpu
 * (the cheaper) has no capacity at +0, so big takes the cluster and gpu
 * cools down; the next apply (+60) tries big first, gpu after it. */
static void test_offer_zone_tried_last(void **state)
{
    eng *e = *state;
    eng_spec(e, "name: job\nprovider: scripted_group\nnodes: 2\nzones: [gpu, big]\n"
                "run:\n  command: python3 train.py\n");
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    scripted_offer_zone("n1", "lab", "big", 3.0);
    scripted_fail("create_nodes", "zone=gpu", 1, GPC_ERR_CAPACITY);
    gpc_apply_result res;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_apply_opts o = {.poll_s = 5};
    assert_int_equal(gpc_apply(&e->s, e->spec, "job.yaml", &o, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U1-a1 attempt=1 head=node -> ERR capacity\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=big type=n1 "
        "token=job-w0-U2-a1 attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
    destroy(e, "job");
    e->now += 60;
    assert_int_equal(gpc_apply(&e->s, e->spec, "job.yaml", &o, &res, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "shares_files region=lab zone=big -> 1\n"  /* precheck: the first offer, now big */
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=big type=n1 "
        "token=job-w0-U3-a1 attempt=1 head=node -> s-3,s-4 group=g-2\n"
        "describe_nodes cluster=job ids=s-3,s-4 -> booting,booting\n");
    assert_string_equal(eng_said(e),
        "info: gpuctl: offer 1 (scripted_group n1 lab/gpu) is in a zone that cools down (until "
        "2023-11-14T22:43:20Z: no capacity for n1 on-demand): tried after the others\n"
        "info: created node job-0 (s-3)\n"
        "info: created node job-1 (s-4)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_preempted_zone_passed_over, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_capacity_zone_tried_last, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_fallback_on_demand, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_fallback_no_price, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_fallback_head_price, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_fallback_over_budget, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_fallback_head_lost, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_placement_keeps_zone, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_controller_change, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_offer_zone_tried_last, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
