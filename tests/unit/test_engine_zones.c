/*
 * test_engine_zones.c - an offer a provider lists itself with its own zone
 * (a Slurm cluster's partition) keeps that zone through plan and apply:
 * the plan's chosen offer and its document carry it, the spec's zones
 * keep or drop the offer by that exact name, apply creates the nodes in
 * it, and a saved plan reads it back.
 *
 * The provider is scripted_group (one create_nodes call for the whole
 * cluster, no list_zones: the node's zone is the offer's); its create
 * logs "zone=" (tests/providers/scripted/scripted.c), and so does the
 * shares_files apply asks of the chosen offer first.  Expected lines are
 * worked out from src/engine/plan.c (collect_own, fill_offer),
 * src/engine/offers.c (row_verdict, explain, sb_detail),
 * src/engine/apply.c (shares_files) and src/engine/launch.c
 * (launch_attempt: the offer's zone without list_zones, and not skipped
 * after a miss; wait_booted: none for a queue, so one describe, apply's
 * closing refresh); the clock is fixed, a scripted node boots for 5 s.
 */
#include "engine_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/plan.h"
#include "gpuctl/util.h"

#define SPEC(prov, nodes, extra)                                                     \
    "name: job\nprovider: " prov "\nnodes: " #nodes "\n" extra                       \
    "run:\n  command: python3 train.py\n"

/* Plan e->spec (its YAML embedded, for a saved plan). */
static int plan_rc(eng *e, const char *yaml, gpc_plan *p, gpc_error *err)
{
    gpc_plan_opts po = {.spec_path = "job.yaml", .spec_text = yaml,
                        .spec_len = strlen(yaml)};
    gpc_error_clear(err);
    return gpc_plan_make(&e->s, e->spec, &po, p, err);
}

static int apply_plan_rc(eng *e, const gpc_plan *p, gpc_error *err)
{
    gpc_apply_opts o = {.poll_s = 5, .plan = p};
    gpc_apply_result res;
    gpc_error_clear(err);
    return gpc_apply(&e->s, e->spec, "job.yaml", &o, &res, err);
}

/* A member of the plan document by path: "chosen", "changes", ... */
static const cJSON *doc_item(const gpc_plan *p, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(p->doc, k);
}

/* "zone" of object o, or "(none)" when o has no such member. */
static const char *zone_of(const cJSON *o)
{
    const cJSON *z = cJSON_GetObjectItemCaseSensitive(o, "zone");
    return !z ? "(none)" : cJSON_IsString(z) ? z->valuestring : "(not a string)";
}

/* Plan and apply on an offer in region lab, zone gpu: the chosen offer
 * (head and workers) is in gpu, the document says so in `chosen` and in
 * each node change, and the one create call is made in gpu. */
static void test_zone_plan_apply(void **state)
{
    eng *e = *state;
    const char *yaml = SPEC("scripted_group", 2, "");
    eng_spec(e, yaml);
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    gpc_plan p;
    gpc_error err;
    assert_int_equal(plan_rc(e, yaml, &p, &err), 0);
    assert_int_equal(p.n_offers, 1);
    assert_string_equal(p.offers[0].worker.provider, "scripted_group");
    assert_string_equal(p.offers[0].worker.region, "lab");
    assert_string_equal(p.offers[0].worker.zone, "gpu");
    assert_string_equal(p.offers[0].head.zone, "gpu");
    const cJSON *chosen = doc_item(&p, "chosen");
    assert_string_equal(gpc_json_str(chosen, "region"), "lab");
    assert_string_equal(zone_of(chosen), "gpu");
    assert_string_equal(gpc_json_str(chosen, "source"), "live");
    const cJSON *ch = doc_item(&p, "changes");
    assert_int_equal(cJSON_GetArraySize(ch), 3);
    assert_string_equal(zone_of(cJSON_GetArrayItem(ch, 0)), "(none)"); /* the cluster */
    assert_string_equal(zone_of(cJSON_GetArrayItem(ch, 1)), "gpu");
    assert_string_equal(zone_of(cJSON_GetArrayItem(ch, 2)), "gpu");
    gpc_plan_free(&p);
    assert_string_equal(eng_calls(e), "list_offers -> 1\n");

    assert_int_equal(apply_plan_rc(e, NULL, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U1-a1 attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-w0-U1-a1/0 lab/gpu n1 10.0.0.1 booting(-1) started=+0 ended=-\n"
        "1 s-2 job-w0-U1-a1/1 lab/gpu n1 10.0.0.2 booting(-1) started=+0 ended=-\n");
    assert_string_equal(eng_attempts(e, 1),
        "0 a1 lab/gpu n1 created\n"
        "1 a1 lab/gpu n1 created\n");
}

/* The spec's zones keep an offer with its own zone only by that exact
 * name: no region naming rule applies (a partition "gpu" is in no region
 * "gp"), and an offer in another zone loses on region, with the zone in
 * its why. */
static void test_zone_filter(void **state)
{
    eng *e = *state;
    /* the cpu partition is cheaper: it wins without zones */
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    scripted_offer_zone("n1", "lab", "cpu", 1.0);
    const char *any = SPEC("scripted_group", 2, "");
    eng_spec(e, any);
    gpc_plan p;
    gpc_error err;
    assert_int_equal(plan_rc(e, any, &p, &err), 0);
    assert_int_equal(p.n_offers, 2);
    assert_string_equal(p.offers[0].worker.zone, "cpu");
    assert_string_equal(p.offers[1].worker.zone, "gpu");
    assert_string_equal(zone_of(cJSON_GetArrayItem(doc_item(&p, "fallbacks"), 0)), "gpu");
    gpc_plan_free(&p);

    const char *gpu = SPEC("scripted_group", 2, "zones: [gpu]\n");
    eng_spec(e, gpu);
    assert_int_equal(plan_rc(e, gpu, &p, &err), 0);
    assert_int_equal(p.n_offers, 1);
    assert_string_equal(p.offers[0].worker.zone, "gpu");
    const cJSON *lost = doc_item(&p, "lost");
    assert_int_equal(cJSON_GetArraySize(lost), 1);
    const cJSON *l0 = cJSON_GetArrayItem(lost, 0);
    assert_string_equal(zone_of(l0), "cpu");
    assert_string_equal(gpc_json_str(l0, "verdict"), "region");
    assert_string_equal(gpc_json_str(l0, "why"), "zone cpu not in [gpu]");
    assert_int_equal(gpc_json_num(doc_item(&p, "lost_by"), "region", 0), 1);
    gpc_plan_free(&p);

    /* the same with `zone:` */
    const char *one = SPEC("scripted_group", 2, "zone: cpu\n");
    eng_spec(e, one);
    assert_int_equal(plan_rc(e, one, &p, &err), 0);
    assert_int_equal(p.n_offers, 1);
    assert_string_equal(p.offers[0].worker.zone, "cpu");
    gpc_plan_free(&p);

    /* a zone no offer is in: nothing fits, and the message says which
     * zones were asked for */
    const char *other = SPEC("scripted_group", 2, "zones: [other, gp]\n");
    eng_spec(e, other);
    assert_int_equal(plan_rc(e, other, &p, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 2 candidates lost: 2 on region "
                                 "(not in zones [other, gp])");

    /* regions and zones both */
    const char *both = SPEC("scripted_group", 2, "region: lab\nzone: other\n");
    eng_spec(e, both);
    assert_int_equal(plan_rc(e, both, &p, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "no offer fits 'job': 2 candidates lost: 2 on region "
                                 "(not in [lab] or zones [other])");

    /* apply with zones: [gpu] creates in gpu */
    eng_calls(e);
    eng_spec(e, gpu);
    assert_int_equal(apply_plan_rc(e, NULL, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 2\n"
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U1-a1 attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
}

/* No capacity in an offer's own zone: the next apply asks again at once.
 * Only the zones of a provider's list are skipped for
 * GPUCTL_CAPACITY_SKIP_S (600 s here) after a miss: an offer's own zone is
 * the one place its nodes can be made. */
static void test_zone_not_skipped(void **state)
{
    eng *e = *state;
    eng_spec(e, SPEC("scripted_group", 2, ""));
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    scripted_fail("create_nodes", NULL, 1, GPC_ERR_CAPACITY);
    gpc_error err;
    assert_int_equal(apply_plan_rc(e, NULL, &err), GPC_ERR_CAPACITY);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U1-a1 attempt=1 head=node -> ERR capacity\n");
    e->now += 60;
    assert_int_equal(apply_plan_rc(e, NULL, &err), 0);
    assert_string_equal(eng_calls(e),
        "list_offers -> 1\n"
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U2-a1 attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
}

/* A saved plan keeps the zone: written, read back (the checker takes the
 * optional member), and carried out in that zone. */
static void test_zone_saved_plan(void **state)
{
    eng *e = *state;
    const char *yaml = SPEC("scripted_group", 2, "");
    eng_spec(e, yaml);
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    gpc_plan p;
    gpc_error err;
    assert_int_equal(plan_rc(e, yaml, &p, &err), 0);
    char path[300];
    snprintf(path, sizeof(path), "%s/p.json", e->dir);
    gpc_error_clear(&err);
    assert_int_equal(gpc_plan_write(&p, path, &err), 0);
    gpc_plan_free(&p);

    gpc_plan r;
    gpc_spec *spec = NULL;
    char *spec_path = NULL;
    gpc_error_clear(&err);
    if (gpc_plan_read(path, &r, &spec, &spec_path, &err))
        fail_msg("gpc_plan_read: %s", err.msg);
    assert_int_equal(r.n_offers, 1);
    assert_string_equal(r.offers[0].worker.region, "lab");
    assert_string_equal(r.offers[0].worker.zone, "gpu");
    assert_string_equal(r.offers[0].head.zone, "gpu");
    eng_calls(e);
    /* a saved plan is carried out without planning again: no list_offers */
    assert_int_equal(apply_plan_rc(e, &r, &err), 0);
    assert_string_equal(eng_calls(e),
        "shares_files region=lab zone=gpu -> 1\n"
        "create_nodes n=2 first=job-0 rank=sched region=lab zone=gpu type=n1 "
        "token=job-w0-U1-a1 attempt=1 head=node -> s-1,s-2 group=g-1\n"
        "describe_nodes cluster=job ids=s-1,s-2 -> booting,booting\n");
    gpc_plan_free(&r);
    gpc_spec_free(spec);
    free(spec_path);
}

/* Rewrite the saved plan at `path` with `edit` applied and its checksum
 * made again (as gpc_plan_write computes it), so that the checker, not
 * the checksum, judges the edit. */
static void edit_plan(const char *path, void (*edit)(cJSON *d))
{
    char *text = NULL;
    size_t len = 0;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_read_file(path, 1 << 24, &text, &len, &err), 0);
    cJSON *d = cJSON_Parse(text);
    free(text);
    assert_non_null(d);
    edit(d);
    cJSON *copy = cJSON_Duplicate(d, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "schema_version");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "checksum");
    char *flat = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    char hex[65], sum[72];
    gpc_sha256_hex(flat, strlen(flat), hex);
    free(flat);
    snprintf(sum, sizeof(sum), "sha256:%s", hex);
    cJSON_ReplaceItemInObjectCaseSensitive(d, "checksum", cJSON_CreateString(sum));
    char *out = cJSON_Print(d);
    cJSON_Delete(d);
    gpc_error_clear(&err);
    assert_int_equal(gpc_write_file_atomic(path, out, strlen(out), 0600, &err), 0);
    free(out);
}

static void zone_number(cJSON *d)
{
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "chosen"),
                                           "zone", cJSON_CreateNumber(5));
}

static void zone_empty(cJSON *d)
{
    cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "changes"), 1);
    cJSON_ReplaceItemInObjectCaseSensitive(ch, "zone", cJSON_CreateString(""));
}

static void zone_long(cJSON *d)
{
    char z[49];
    memset(z, 'z', 48);
    z[48] = '\0';
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "chosen"),
                                           "zone", cJSON_CreateString(z));
}

/* The saved-plan checker: a zone that is there must be a string that fits
 * gpc_offer.zone (47 bytes) and is not empty; a plan without zones (every
 * catalog offer's) reads with zone "". */
static void test_zone_saved_plan_checked(void **state)
{
    eng *e = *state;
    const char *yaml = SPEC("scripted_group", 2, "");
    eng_spec(e, yaml);
    scripted_offer_zone("n1", "lab", "gpu", 2.0);
    char path[300];
    snprintf(path, sizeof(path), "%s/p.json", e->dir);
    static const struct {
        void (*edit)(cJSON *d);
        const char *msg;
    } cases[] = {
        {zone_number, "chosen.zone: not a string"},
        {zone_empty, "changes[1].zone: empty (leave it out when there is none)"},
        {zone_long, "chosen.zone: longer than 47 bytes"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpc_plan p;
        gpc_error err;
        assert_int_equal(plan_rc(e, yaml, &p, &err), 0);
        gpc_error_clear(&err);
        assert_int_equal(gpc_plan_write(&p, path, &err), 0);
        gpc_plan_free(&p);
        edit_plan(path, cases[i].edit);
        gpc_spec *spec = NULL;
        char *spec_path = NULL;
        gpc_error_clear(&err);
        assert_int_equal(gpc_plan_read(path, &p, &spec, &spec_path, &err), GPC_ERR_USAGE);
        char want[512];
        snprintf(want, sizeof(want), "%s: %s; make the plan again", path, cases[i].msg);
        assert_string_equal(err.msg, want);
        assert_null(spec);
        assert_null(spec_path);
    }

    /* no zone: the offer's zone is "" and the create says "-" */
    scripted_reset();
    scripted_offer("n1", "lab", 2.0);
    gpc_plan p;
    gpc_error err;
    assert_int_equal(plan_rc(e, yaml, &p, &err), 0);
    assert_string_equal(zone_of(doc_item(&p, "chosen")), "(none)");
    assert_string_equal(zone_of(cJSON_GetArrayItem(doc_item(&p, "changes"), 1)), "(none)");
    gpc_error_clear(&err);
    assert_int_equal(gpc_plan_write(&p, path, &err), 0);
    gpc_plan_free(&p);
    gpc_spec *spec = NULL;
    char *spec_path = NULL;
    gpc_error_clear(&err);
    if (gpc_plan_read(path, &p, &spec, &spec_path, &err))
        fail_msg("gpc_plan_read: %s", err.msg);
    assert_string_equal(p.offers[0].worker.zone, "");
    assert_int_equal(apply_plan_rc(e, &p, &err), 0);
    assert_string_equal(eng_nodes(e, 1),
        "0 s-1 job-w0-U1-a1/0 lab/- n1 10.0.0.1 booting(-1) started=+0 ended=-\n"
        "1 s-2 job-w0-U1-a1/1 lab/- n1 10.0.0.2 booting(-1) started=+0 ended=-\n");
    gpc_plan_free(&p);
    gpc_spec_free(spec);
    free(spec_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zone_plan_apply, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_zone_filter, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_zone_not_skipped, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_zone_saved_plan, eng_setup, eng_teardown),
        cmocka_unit_test_setup_teardown(test_zone_saved_plan_checked, eng_setup, eng_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
