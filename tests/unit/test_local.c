/*
 * test_local.c - the local provider on its own: the payload placed and
 * started as a node, idempotent create by client token, describe,
 * delete, logs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuctl/buf.h"
#include "gpuctl/provider.h"
#include "gpuctl/util.h"

/* A payload whose bootstrap is the script `text` (a char array). */
#define PAYLOAD(text) (&(gpc_payload){.script = (char *)(text), .script_len = sizeof(text) - 1})

/* A recorded local node by its provider id (no region, no provider data). */
#define NREF(id) (&(gpc_node_ref){.region = "", .provider_id = (id), .data = ""})

typedef struct fixture {
    char dir[64];
    const gpc_provider *p;
    void *ctx;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/gpuctl-local-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->p = gpc_provider_find("local");
    gpc_provider_config cfg = {.state_dir = f->dir};
    if (!f->p || f->p->open(&cfg, &f->ctx, NULL))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    f->p->close(f->ctx);
    gpc_rm_rf(f->dir, NULL);
    free(f);
    return 0;
}

/* A node that writes a marker, its env and an exit status, then ends. */
static const char job[] =
    "#!/bin/sh\n"
    "echo \"hello from $GPUCTL_LOCAL_IP\" > \"$GPUCTL_HOME/node.log\"\n"
    "env | sort > \"$GPUCTL_HOME/env.txt\"\n"
    "echo running > \"$GPUCTL_HOME/phase\"\n"
    "echo 7 > \"$GPUCTL_HOME/exit_status\"\n";

static void wait_phase(fixture *f, const char *id, gpc_phase want, gpc_node_status *ns)
{
    for (int i = 0; i < 200; i++) {
        assert_int_equal(f->p->describe_node(f->ctx, NREF(id), ns, NULL), 0);
        if (ns->phase == want)
            return;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("node %s never reached phase %d (now %d)", id, want, ns->phase);
}

static void test_create_describe_delete(void **state)
{
    fixture *f = *state;
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_node_request req = {.cluster = "t", .cluster_uid = "u", .rank = 0, .name = "t-0",
                            .client_token = "t-0-abc", .offer = &offer, .payload = PAYLOAD(job)};
    gpc_node_status ns;
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
    assert_string_equal(ns.provider_id, "t-0-abc");
    assert_string_equal(ns.private_ip, "127.0.0.1");
    wait_phase(f, "t-0-abc", GPC_PHASE_FAILED, &ns);
    assert_int_equal(ns.exit_code, 7);

    char path[256], *data;
    size_t len;
    /* the payload's bootstrap where a node keeps it, and the one command
     * that starts it */
    snprintf(path, sizeof(path), "%s/local/t-0-abc/bootstrap.sh", f->dir);
    assert_int_equal(gpc_read_file(path, 4096, &data, &len, NULL), 0);
    assert_string_equal(data, job);
    free(data);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    char want[320];
    snprintf(want, sizeof(want), "#!/bin/sh\n'/bin/bash' '%s/local/t-0-abc/bootstrap.sh'\n",
             f->dir);
    snprintf(path, sizeof(path), "%s/local/t-0-abc/runcmd.sh", f->dir);
    assert_int_equal(gpc_read_file(path, 4096, &data, &len, NULL), 0);
    assert_string_equal(data, want);
    free(data);
    snprintf(path, sizeof(path), "%s/local/t-0-abc/user-data", f->dir);
    assert_int_equal(stat(path, &sb), -1); /* no cloud-config on this machine */
    /* the node starts with a clean environment, not the test's */
    snprintf(path, sizeof(path), "%s/local/t-0-abc/env.txt", f->dir);
    assert_int_equal(gpc_read_file(path, 1 << 16, &data, &len, NULL), 0);
    assert_non_null(strstr(data, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"));
    assert_non_null(strstr(data, "GPUCTL_LOCAL_IP=127.0.0.1\n"));
    assert_null(strstr(data, "ASAN_OPTIONS"));
    free(data);

    gpc_buf b;
    gpc_buf_init(&b, 1 << 20);
    long next = 0;
    int ex = -2;
    gpc_cluster_ref cl = {"t", "abc", NULL, 0, NULL};
    assert_int_equal(f->p->read_log(f->ctx, &cl, NREF("t-0-abc"), 0, 0, 0, &b, &next, &ex, NULL),
                     0);
    assert_string_equal(gpc_buf_str(&b), "hello from 127.0.0.1\n");
    assert_int_equal(next, 21);
    assert_int_equal(ex, 7); /* the node's exit_status file, read with the log */
    gpc_buf_reset(&b);
    assert_int_equal(f->p->read_log(f->ctx, &cl, NREF("t-0-abc"), 0, next, 0, &b, &next, &ex,
                                    NULL), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(ex, 7);
    gpc_buf_free(&b);

    /* Same token again: the same node, not a second one. */
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
    assert_string_equal(ns.provider_id, "t-0-abc");
    assert_int_equal(ns.exit_code, 7);

    assert_int_equal(f->p->delete_node(f->ctx, NREF("t-0-abc"), NULL), 0);
    assert_int_equal(f->p->describe_node(f->ctx, NREF("t-0-abc"), &ns, NULL), 0);
    assert_int_equal(ns.phase, GPC_PHASE_TERMINATED);
    assert_int_equal(f->p->delete_node(f->ctx, NREF("t-0-abc"), NULL), 0); /* idempotent */
}

static void test_delete_running_node(void **state)
{
    fixture *f = *state;
    static const char sleeper[] = "echo running > \"$GPUCTL_HOME/phase\"; sleep 600\n";
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_node_request req = {.rank = 0, .name = "s-0", .client_token = "s-0-x", .offer = &offer,
                            .payload = PAYLOAD(sleeper)};
    gpc_node_status ns;
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
    wait_phase(f, "s-0-x", GPC_PHASE_RUNNING, &ns);
    assert_int_equal(ns.stopped, 0);
    assert_int_equal(f->p->delete_node(f->ctx, NREF("s-0-x"), NULL), 0);
    assert_int_equal(f->p->describe_node(f->ctx, NREF("s-0-x"), &ns, NULL), 0);
    assert_int_equal(ns.phase, GPC_PHASE_TERMINATED);
}

/* Regression: a node whose bootstrap wrote its final phase and not yet its
 * exit status (the two are written one after the other) read as booting,
 * so apply --wait's status line showed a finished node as "booting". */
static void test_phase_while_ending(void **state)
{
    fixture *f = *state;
    static const char ending[] = "echo succeeded > \"$GPUCTL_HOME/phase\"; sleep 600\n";
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_node_request req = {.rank = 0, .name = "e-0", .client_token = "e-0-x", .offer = &offer,
                            .payload = PAYLOAD(ending)};
    gpc_node_status ns;
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
    wait_phase(f, "e-0-x", GPC_PHASE_RUNNING, &ns);
    assert_string_equal(ns.detail, "ending: succeeded");
    assert_int_equal(ns.exit_code, -1);
    assert_int_equal(f->p->delete_node(f->ctx, NREF("e-0-x"), NULL), 0);
}

static void test_rejects_what_it_cannot_do(void **state)
{
    fixture *f = *state;
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_error err;
    gpc_node_request req = {.client_token = "../escape", .offer = &offer,
                            .payload = PAYLOAD(job)};
    gpc_node_status ns;
    gpc_error_clear(&err);
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "local: invalid node id '../escape'");
    /* a payload that cannot become user-data: the create fails */
    static const char nul[] = "echo a\0echo b\n";
    req.client_token = "r-0";
    req.payload = PAYLOAD(nul);
    gpc_error_clear(&err);
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, &err), GPC_ERR_RENDER);
    assert_string_equal(err.msg, "the bootstrap holds a NUL byte");
    /* (regression) a failed create left its directory, user-data and all */
    char path[256];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/local/r-0", f->dir);
    assert_int_equal(lstat(path, &sb), -1);
}

/* ---- leftovers of creates that never started their node -------------- */

static const char secret_boot[] =
    "export API_TOKEN='hunter2-secret'\n"
    "echo 0 > \"$GPUCTL_HOME/exit_status\"\n";

static int dir_exists(fixture *f, const char *id)
{
    char path[256];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/local/%s", f->dir, id);
    return lstat(path, &sb) == 0;
}

/* A gpuctl killed in the middle of create_node (the fault hook
 * kill-after-node-dir, in a child process): the node directory holds the
 * user-data and its files, and no node runs. */
static void killed_create(fixture *f, const char *token, uint32_t rank)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char fault[64];
        snprintf(fault, sizeof(fault), "kill-after-node-dir:%u", rank);
        setenv("GPUCTL_TEST_FAULT", fault, 1);
        gpc_offer offer;
        memset(&offer, 0, sizeof(offer));
        gpc_node_request req = {.rank = rank, .name = "lo", .client_token = token,
                                .offer = &offer, .payload = PAYLOAD(secret_boot)};
        gpc_node_status ns;
        f->p->create_node(f->ctx, &req, &ns, NULL);
        _exit(3); /* not reached */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    char path[256], *data;
    size_t len;
    snprintf(path, sizeof(path), "%s/local/%s/bootstrap.sh", f->dir, token);
    assert_int_equal(gpc_read_file(path, 1000, &data, &len, NULL), 0);
    assert_string_equal(data, secret_boot);
    free(data);
    snprintf(path, sizeof(path), "%s/local/%s/pid", f->dir, token);
    struct stat sb;
    assert_int_equal(lstat(path, &sb), -1);
}

static int create_ok(fixture *f, const char *token, uint32_t rank, gpc_node_status *ns)
{
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_node_request req = {.rank = rank, .name = "lo", .client_token = token, .offer = &offer,
                            .payload = PAYLOAD(secret_boot)};
    return f->p->create_node(f->ctx, &req, ns, NULL);
}

/*
 * (regression) A killed create left <state>/local/<token>/ with the
 * user-data (the job's env values) that neither a re-apply nor destroy
 * removed.  find_node (asked before either) removes it, and the leftovers
 * of the node's other attempts; create_node with the token starts it
 * over; delete_node takes the other attempts' leftovers too.  Another
 * cluster's, another rank's and a live node's directories stay.
 */
static void test_leftovers(void **state)
{
#ifndef GPUCTL_TEST_HOOKS
    skip(); /* killed_create needs the fault hook of the test build */
#endif
    fixture *f = *state;
    gpc_node_status ns;
    gpc_error err;
    static const char a1[] = "lo-1-0123abcd-a1", a2[] = "lo-1-0123abcd-a2",
                      a3[] = "lo-1-0123abcd-a3", rank2[] = "lo-2-0123abcd-a1",
                      other[] = "lo-1-99999999-a1";

    /* find: not found, and the leftover is gone */
    killed_create(f, a1, 1);
    gpc_error_clear(&err);
    assert_int_equal(f->p->find_node(f->ctx, "", a1, &ns, &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "local: no node with token lo-1-0123abcd-a1");
    assert_false(dir_exists(f, a1));

    /* find of a later attempt takes the earlier attempts' leftovers, not
     * another rank's or another cluster's */
    killed_create(f, a1, 1);
    killed_create(f, rank2, 2);
    killed_create(f, other, 1);
    gpc_error_clear(&err);
    assert_int_equal(f->p->find_node(f->ctx, "", a2, &ns, &err), GPC_ERR_NOT_FOUND);
    assert_false(dir_exists(f, a1));
    assert_true(dir_exists(f, rank2));
    assert_true(dir_exists(f, other));

    /* create with the token of its own leftover: that node, started over */
    killed_create(f, a2, 1);
    assert_int_equal(create_ok(f, a2, 1, &ns), 0);
    assert_string_equal(ns.provider_id, a2);
    wait_phase(f, a2, GPC_PHASE_SUCCEEDED, &ns);
    assert_int_equal(ns.exit_code, 0);
    /* ... and again: the same node (idempotent) */
    assert_int_equal(create_ok(f, a2, 1, &ns), 0);
    assert_int_equal(ns.phase, GPC_PHASE_SUCCEEDED);

    /* a live node is never a leftover, even without its pid file */
    static const char sleeper[] = "echo running > \"$GPUCTL_HOME/phase\"; sleep 600\n";
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    gpc_node_request req = {.rank = 1, .name = "lo", .client_token = a3, .offer = &offer,
                            .payload = PAYLOAD(sleeper)};
    assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
    wait_phase(f, a3, GPC_PHASE_RUNNING, &ns);
    char pid[256];
    snprintf(pid, sizeof(pid), "%s/local/%s/pid", f->dir, a3);
    assert_int_equal(truncate(pid, 0), 0);
    gpc_error_clear(&err);
    assert_int_equal(f->p->find_node(f->ctx, "", a3, &ns, &err), GPC_ERR_NOT_FOUND);
    assert_true(dir_exists(f, a3));
    assert_int_equal(f->p->describe_node(f->ctx, NREF(a3), &ns, NULL), 0);
    assert_int_equal(ns.phase, GPC_PHASE_FAILED); /* its processes still run */
    assert_int_equal(ns.stopped, 0);
    gpc_error_clear(&err);
    assert_int_equal(create_ok(f, a3, 1, &ns), GPC_ERR_PROVIDER);
    assert_int_equal(f->p->delete_node(f->ctx, NREF(a3), NULL), 0);
    assert_false(dir_exists(f, a3));

    /* delete of the node takes its other attempts' leftovers */
    killed_create(f, a1, 1);
    killed_create(f, a3, 1);
    assert_int_equal(f->p->delete_node(f->ctx, NREF(a2), NULL), 0);
    assert_false(dir_exists(f, a1));
    assert_false(dir_exists(f, a2));
    assert_false(dir_exists(f, a3));
    assert_true(dir_exists(f, rank2));
    assert_true(dir_exists(f, other));
    /* the secret lingers nowhere but in the two leftovers left on purpose */
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "test -z \"$(grep -rl hunter2-secret %s | grep -Fv -e /%s/ -e /%s/)\"", f->dir,
             rank2, other);
    assert_int_equal(system(cmd), 0);
}

static void test_offer_and_port(void **state)
{
    fixture *f = *state;
    gpc_spec spec;
    memset(&spec, 0, sizeof(spec));
    gpc_offer *offers = NULL;
    size_t n = 0;
    assert_int_equal(f->p->list_offers(f->ctx, &spec, &offers, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(offers[0].instance_type, "local");
    assert_true(offers[0].vcpus >= 1);
    assert_true(offers[0].price_hourly == 0.0);
    free(offers);
    spec.resources.cpus.min = 100000;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(f->p->list_offers(f->ctx, &spec, &offers, &n, &err), GPC_ERR_CAPACITY);
    assert_non_null(strstr(err.msg, "local: resources.cpus asks for 100000, this machine has "));
    uint32_t port = 0;
    assert_int_equal(f->p->pick_rdzv_port(f->ctx, &port, NULL), 0);
    assert_true(port >= 1024 && port <= 65535);
}


/*
 * Regression: describe read the files before checking liveness, so a node
 * that wrote its exit status and ended in between looked lost (exit -1).
 * Twenty quick nodes, polled as fast as possible, must all report 7.
 */
static void test_exit_status_never_lost(void **state)
{
    fixture *f = *state;
    static const char quick[] = "echo 7 > \"$GPUCTL_HOME/exit_status\"\n";
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    for (int i = 0; i < 20; i++) {
        char token[32];
        snprintf(token, sizeof(token), "q-%d", i);
        gpc_node_request req = {.rank = 0, .name = token, .client_token = token,
                                .offer = &offer, .payload = PAYLOAD(quick)};
        gpc_node_status ns;
        assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
        for (int k = 0; k < 20000; k++) {
            assert_int_equal(f->p->describe_node(f->ctx, NREF(token), &ns, NULL), 0);
            if (ns.phase == GPC_PHASE_FAILED || ns.phase == GPC_PHASE_SUCCEEDED)
                break;
        }
        assert_int_equal(ns.phase, GPC_PHASE_FAILED);
        assert_int_equal(ns.exit_code, 7);
        assert_int_equal(f->p->delete_node(f->ctx, NREF(token), NULL), 0);
    }
}

/*
 * A multi-GPU machine (a stand-in nvidia-smi on PATH that answers like an
 * H200 host, gpu-node.md): the offer reports the GPUs, and two nodes of one
 * cluster each get their own half of them through CUDA_VISIBLE_DEVICES.
 */
static void test_gpu_share(void **state)
{
    fixture *f = *state;
    char bin[128], smi[160], path[4096];
    snprintf(bin, sizeof(bin), "%s/bin", f->dir);
    assert_int_equal(gpc_mkdir_p(bin, 0700, NULL), 0);
    snprintf(smi, sizeof(smi), "%s/nvidia-smi", bin);
    static const char script[] =
        "#!/bin/sh\nfor i in 0 1 2 3; do echo 'NVIDIA H200, 143771'; done\n";
    assert_int_equal(gpc_write_file_atomic(smi, script, strlen(script), 0700, NULL), 0);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "");
    snprintf(path, sizeof(path), "%s:%s", bin, saved);
    setenv("PATH", path, 1);

    gpc_spec spec;
    memset(&spec, 0, sizeof(spec));
    gpc_gpu_req want = {.model = "H200", .mem_gib = {140, 0}, .count = {4, 4}};
    spec.resources.gpus = &want;
    spec.resources.n_gpus = 1;
    gpc_offer *offers = NULL;
    size_t n = 0;
    assert_int_equal(f->p->list_offers(f->ctx, &spec, &offers, &n, NULL), 0);
    assert_int_equal(offers[0].gpu_count, 4);
    assert_string_equal(offers[0].gpu_model, "NVIDIA H200");
    free(offers);
    gpc_gpu_req h100 = {.model = "H100", .count = {1, 1}};
    spec.resources.gpus = &h100;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(f->p->list_offers(f->ctx, &spec, &offers, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "local: resources.gpu does not fit this machine (4 x NVIDIA H200)");

    static const char dump[] = "echo \"$CUDA_VISIBLE_DEVICES\" > \"$GPUCTL_HOME/cuda\"\n"
                               "echo 0 > \"$GPUCTL_HOME/exit_status\"\n";
    gpc_offer offer;
    memset(&offer, 0, sizeof(offer));
    static const char *const want_cuda[] = {"0,1\n", "2,3\n"};
    for (uint32_t r = 0; r < 2; r++) {
        char token[16], file[256], *data;
        size_t len;
        snprintf(token, sizeof(token), "g-%u", r);
        gpc_node_request req = {.rank = r, .nnodes = 2, .name = token, .client_token = token,
                                .offer = &offer, .payload = PAYLOAD(dump)};
        gpc_node_status ns;
        assert_int_equal(f->p->create_node(f->ctx, &req, &ns, NULL), 0);
        wait_phase(f, token, GPC_PHASE_SUCCEEDED, &ns);
        snprintf(file, sizeof(file), "%s/local/%s/cuda", f->dir, token);
        assert_int_equal(gpc_read_file(file, 100, &data, &len, NULL), 0);
        assert_string_equal(data, want_cuda[r]);
        free(data);
    }
    setenv("PATH", saved, 1);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_describe_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_phase_while_ending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_running_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejects_what_it_cannot_do, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offer_and_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_status_never_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leftovers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
