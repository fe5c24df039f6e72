/*
 * fuzz_ec2.c - the aws provider's reading of EC2 answers: one provider
 * call (providers/aws/aws.c through gpc_provider, as the core makes it)
 * whose HTTP requests are answered from the input (fuzz.h: the fake HTTP
 * layer; EC2 Query API XML bodies, error documents, the checkip answer).
 *
 * Input: the first line names the call, then one part per answer:
 *
 *     zones
 *     @@@@ 200
 *     <DescribeInstanceTypeOfferingsResponse ...>...</...>
 *     @@@@ 503 x-amzn-RequestId: 42
 *     <Response><Errors>...</Errors></Response>
 *
 * Calls: zones (list_zones), create (list_zones, then create_node in the
 * first zone), create-many (list_zones, then create_nodes of 2 workers),
 * find, describe, describe-many, delete, cleanup, prices (live_prices),
 * check.  tests/fuzz/corpus/ec2/ has answers the fake EC2
 * (tests/fake/ec2.py) gave to each call.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "gpuctl/log.h"

#define MAX_ANSWERS 4096
#define UID "0123456789abcdef0123456789abcdef"

static const char spec_yaml[] =
    "name: fz\n"
    "provider: aws\n"
    "nodes: 4\n"
    "resources:\n"
    "  gpu: A100-40GB:8\n"
    "  interconnect: efa\n"
    "  disk: { size: 500GB, tier: nvme }\n"
    "region: us-east-1\n"
    "spot: { policy: spot, max_price: 9.5 }\n"
    "labels: { team: vision }\n"
    "run:\n"
    "  command: python train.py\n";

static gpc_spec *spec;
static char state_dir[PATH_MAX];

static void setup(void)
{
    fuzz_init();
    if (gpc_spec_load_string("fz.yaml", NULL, spec_yaml, strlen(spec_yaml), &spec, NULL))
        abort();
    snprintf(state_dir, sizeof(state_dir), "%s", fuzz_path("state"));
    /* The AWS documentation's example key (aws.md section 1.8); the
     * endpoint is never reached (the HTTP layer is the fake). */
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_ENDPOINT_URL_EC2", "http://ec2.fuzz.invalid", 1);
    static const char key[] =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0bn0WHcP2rGK5ONuyr8EJ6uA6mXL0hjmJtAn3YjcBm fz\n";
    char pub[PATH_MAX];
    snprintf(pub, sizeof(pub), "%s", fuzz_path("id_ed25519.pub"));
    fuzz_write(pub, key, strlen(key));
    setenv("GPUCTL_SSH_PUBLIC_KEY", pub, 1);
}

static void offer_init(gpc_offer *o, const char *zone)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->provider, sizeof(o->provider), "aws");
    snprintf(o->instance_type, sizeof(o->instance_type), "p4d.24xlarge");
    snprintf(o->region, sizeof(o->region), "us-east-1");
    snprintf(o->zone, sizeof(o->zone), "%s", zone);
    snprintf(o->gpu_model, sizeof(o->gpu_model), "A100-40GB");
    o->gpu_count = 8;
    o->spot = 1;
    o->price_hourly = 9.5;
    snprintf(o->fabric, sizeof(o->fabric), "efa");
}

/* list_zones, then the first zone it gave ("us-east-1a" when none). */
static void first_zone(const gpc_provider *p, void *ctx, gpc_offer *of)
{
    char(*zones)[48] = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    offer_init(of, "us-east-1a");
    if (p->list_zones(ctx, of, &zones, &n, &err) == 0 && n)
        snprintf(of->zone, sizeof(of->zone), "%s", zones[0]);
    free(zones);
}

static void run(const gpc_provider *p, void *ctx, const char *call)
{
    gpc_error err;
    gpc_error_clear(&err);
    gpc_node_status st, many[3];
    const char *regions[] = {"us-east-1"};
    const char *ids[] = {"i-00000000000000001", "i-00000000000000002", "i-0aaaaaaaaaaaaaaa3"};
    gpc_cluster_ref ref = {.cluster = "fz", .cluster_uid = UID, .regions = regions,
                           .n_regions = 1};
    gpc_offer of;
    static char script[] = "#!/bin/bash\ntrue\n";
    const gpc_payload payload = {.script = script, .script_len = sizeof(script) - 1};
    gpc_node_request req = {.cluster = "fz", .cluster_uid = UID, .nnodes = 4, .name = "fz-0",
                            .client_token = "fz-c0ffee-1", .offer = &of, .image = "pytorch",
                            .payload = &payload,
                            .labels = spec->labels, .n_labels = spec->n_labels, .spec = spec,
                            .attempt = 1};
    if (strcmp(call, "zones") == 0) {
        first_zone(p, ctx, &of);
    } else if (strcmp(call, "create") == 0) {
        first_zone(p, ctx, &of);
        p->create_node(ctx, &req, &st, &err);
    } else if (strcmp(call, "create-many") == 0) {
        first_zone(p, ctx, &of);
        gpc_node_request reqs[2] = {req, req};
        for (uint32_t i = 0; i < 2; i++) {
            reqs[i].rank = i + 1;
            reqs[i].name = i ? "fz-2" : "fz-1";
        }
        p->create_nodes(ctx, reqs, 2, many, &err);
    } else if (strcmp(call, "find") == 0) {
        p->find_node(ctx, "us-east-1", "fz-c0ffee-1/1", &st, &err);
    } else if (strcmp(call, "describe") == 0) {
        p->describe_node(ctx, &(gpc_node_ref){"us-east-1", ids[0], ""}, &st, &err);
    } else if (strcmp(call, "describe-many") == 0) {
        p->describe_nodes(ctx, &ref, ids, 3, many, &err);
    } else if (strcmp(call, "delete") == 0) {
        p->delete_node(ctx, &(gpc_node_ref){"us-east-1", ids[1], ""}, &err);
    } else if (strcmp(call, "cleanup") == 0) {
        p->cleanup_cluster(ctx, &ref, &err);
    } else if (strcmp(call, "prices") == 0) {
        gpc_offer offers[3];
        offer_init(&offers[0], "");
        offer_init(&offers[1], "");
        offers[1].spot = 0; /* no live price asked */
        offer_init(&offers[2], "");
        snprintf(offers[2].instance_type, sizeof(offers[2].instance_type), "p5.48xlarge");
        size_t updated = 0;
        p->live_prices(ctx, offers, 3, &updated, &err);
    } else if (strcmp(call, "check") == 0) {
        char detail[512];
        p->check(ctx, detail, sizeof(detail), &err);
    }
    fuzz_note("ec2", call, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_part parts[MAX_ANSWERS];
    if (!spec)
        setup();
    char *buf;
    const char *call;
    size_t n = fuzz_split(data, size, &buf, &call, parts, MAX_ANSWERS);
    /* Nothing from one input may be seen by the next: no image cache. */
    char cache[PATH_MAX];
    snprintf(cache, sizeof(cache), "%s/aws", getenv("GPUCTL_CACHE_DIR"));
    gpc_rm_rf(cache, NULL);
    fuzz_answers(parts, n);
    const gpc_provider *p = gpc_provider_find("aws");
    gpc_provider_config cfg = {.state_dir = state_dir, .log = NULL}; /* quiet */
    void *ctx = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    if (p && p->open(&cfg, &ctx, &err) == 0) {
        run(p, ctx, call);
        p->close(ctx);
    }
    fuzz_answers(NULL, 0);
    free(buf);
    return 0;
}
