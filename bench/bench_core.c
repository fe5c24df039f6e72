/*
 * bench_core.c - how fast gpuctl's core path is: parse + validate a spec,
 * hash it, render a node's user-data and encode it for AWS, sign an EC2
 * RunInstances request of that size with SigV4, and open the state
 * database.  These run on every `apply`, so together they bound the
 * start-up cost gpuctl adds before the first API call.
 *
 * Usage: bench_core [SPEC] [ITERATIONS]   (default examples/quickstart.yaml, 2000)
 * Targets (bench/README.md): parse+hash+render+encode < 1 ms per node,
 * SigV4 signing < 50 us per request, state open < 20 ms, peak RSS < 32 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "aws/sigv4.h"
#include "gpuctl/spec.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "examples/quickstart.yaml";
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    if (iters < 1)
        iters = 1;
    char *text;
    size_t len;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_read_file(path, GPC_SPEC_MAX_BYTES, &text, &len, &err)) {
        fprintf(stderr, "bench_core: %s\n", err.msg);
        return 1;
    }
    const gpc_userdata_rules *aws = gpc_provider_find("aws")->userdata;
    double t0 = now_s(), t_parse = 0, t_render = 0;
    size_t bytes = 0;
    for (int i = 0; i < iters; i++) {
        double a = now_s();
        gpc_spec *spec = NULL;
        char hash[65];
        if (gpc_spec_load_string(path, ".", text, len, &spec, &err) ||
            gpc_spec_hash(spec, hash, &err)) {
            fprintf(stderr, "bench_core: %s\n", err.msg);
            return 1;
        }
        double b = now_s();
        gpc_node_ctx ctx = {.cluster = spec->name, .cluster_id = "bench", .rank = 1,
                            .nnodes = spec->nodes, .head_addr = "10.0.0.1", .rdzv_port = 29400};
        char *ud = NULL, *enc = NULL;
        size_t enc_len;
        if (gpc_render_userdata(spec, &ctx, aws, &ud, &err) ||
            gpc_userdata_encode(ud, strlen(ud), aws, &enc, &enc_len, NULL, &err)) {
            fprintf(stderr, "bench_core: %s\n", err.msg);
            return 1;
        }
        bytes = enc_len;
        t_parse += b - a;
        t_render += now_s() - b;
        free(ud);
        free(enc);
        gpc_spec_free(spec);
    }
    double total = now_s() - t0;
    /* SigV4 over a RunInstances body the size of that user-data (signed
     * anew on every attempt, so it is on the retry path too) */
    size_t body_len = bytes + 2048;
    char *body = malloc(body_len);
    double t_sign = 0;
    if (body) {
        memset(body, 'A', body_len);
        gpc_sigv4_header hdrs[] = {
            {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
            {"Host", "ec2.us-east-1.amazonaws.com"},
        };
        gpc_sigv4_input in = {.method = "POST", .path = "/", .headers = hdrs, .n_headers = 2,
                              .body = body, .body_len = body_len};
        gpc_sigv4_creds cr = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL};
        gpc_sigv4_result res;
        double a = now_s();
        for (int i = 0; i < iters; i++)
            if (gpc_sigv4_sign(&in, &cr, "us-east-1", "ec2", 1440938160, &res, &err)) {
                fprintf(stderr, "bench_core: %s\n", err.msg);
                return 1;
            }
        t_sign = (now_s() - a) / iters;
        free(body);
    }
    char dir[] = "/tmp/gpuctl-bench-XXXXXX";
    double t_state = 0;
    if (mkdtemp(dir)) {
        double a = now_s();
        gpc_state *st = NULL;
        if (gpc_state_open(dir, &st, &err) == 0)
            gpc_state_close(st);
        t_state = now_s() - a;
        gpc_rm_rf(dir, NULL);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("spec parse+validate+hash: %8.1f us/op\n", t_parse / iters * 1e6);
    printf("render+encode (aws):      %8.1f us/op (%zu bytes as sent)\n", t_render / iters * 1e6, bytes);
    printf("total per node:           %8.1f us/op over %d iterations\n", total / iters * 1e6, iters);
    printf("sigv4 sign (%6zu B body): %8.1f us/op\n", body_len, t_sign * 1e6);
    printf("state open (new db):      %8.1f ms\n", t_state * 1e3);
    printf("peak RSS:                 %8ld KiB\n", ru.ru_maxrss);
    free(text);
    return 0;
}
