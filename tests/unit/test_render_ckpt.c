/*
 * test_render_ckpt.c - checkpoint_dir kept in the provider's store
 * (render.h, gpc_node_ctx.ckpt_store; templates/bootstrap.sh's CKPT_STORE
 * section; the node script's gpuctl_md_store_get / gpuctl_md_store_put):
 * the section and its calls are rendered only with a store URL, with the
 * URL and endpoint quoted for the shell; a node script without the store
 * functions is refused, naming them.  The section run against the fake S3
 * is tests/e2e/test_aws_ckpt.sh part d.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/spec.h"

static void base(gpc_spec *s, gpc_node_ctx *n)
{
    memset(s, 0, sizeof(*s));
    s->name = "demo";
    s->nodes = 2;
    s->run.command = "python3 train.py";
    gpc_node_ctx c = {.cluster = "demo", .cluster_id = "demo-0123abcd", .rank = 0,
                      .nnodes = 2, .rdzv_port = 29400, .checkpoint_dir = "/var/lib/ckpt"};
    *n = c;
}

/* noinline: inlined, gcc 12 -O2 takes the returned heap pointer for one
 * into this frame (a false -Wdangling-pointer), as test_render.c says */
__attribute__((noinline)) static char *render(const gpc_spec *s, const gpc_node_ctx *n,
                                              const char *prov, int *rc, gpc_error *e)
{
    char *out = NULL;
    gpc_error_clear(e);
    *rc = gpc_render_bootstrap(s, n, gpc_provider_find(prov)->userdata, &out, e);
    return out;
}

static size_t count(const char *hay, const char *needle)
{
    size_t k = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

static void test_section_with_store(void **state)
{
    (void)state;
    gpc_spec s;
    gpc_node_ctx n;
    base(&s, &n);
    n.ckpt_store = "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints";
    n.store_endpoint = "http://127.0.0.1:9000/it's";
    int rc;
    gpc_error e;
    char *b = render(&s, &n, "aws", &rc, &e);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(b, "\nGPUCTL_CKPT_URL='s3://gpuctl-123456789012-us-east-1/clusters/"
                              "demo/checkpoints'\n"));
    assert_non_null(strstr(b, "\nGPUCTL_STORE_ENDPOINT='http://127.0.0.1:9000/it'\\''s'\n"));
    /* the node script's functions, and the bootstrap's calls: the restore
     * after the directory is made, the saver before the job, the stop and
     * the final save in the EXIT trap */
    assert_int_equal(count(b, "\ngpuctl_md_store_get() {\n"), 1);
    assert_int_equal(count(b, "\ngpuctl_md_store_put() {\n"), 1);
    assert_int_equal(count(b, "\n  gpuctl_ckpt_restore || exit 1\n"), 1);
    assert_int_equal(count(b, "\ngpuctl_ckpt_start\ngpuctl_phase running\n"), 1);
    assert_int_equal(count(b, "\n  gpuctl_ckpt_stop\n  gpuctl_sweep\n  gpuctl_ckpt_save final\n"), 1);
    const char *mk = strstr(b, "mkdir -p \"$GPUCTL_CHECKPOINT_DIR\"\n  gpuctl_ckpt_restore");
    assert_non_null(mk);
    free(b);
}

static void test_no_section_without_store(void **state)
{
    (void)state;
    gpc_spec s;
    gpc_node_ctx n;
    base(&s, &n);
    int rc;
    gpc_error e;
    char *b = render(&s, &n, "aws", &rc, &e);
    assert_int_equal(rc, 0);
    assert_null(strstr(b, "gpuctl_ckpt_"));
    assert_null(strstr(b, "GPUCTL_CKPT_URL"));
    assert_null(strstr(b, "gpuctl_md_store_"));
    free(b);
    /* a URL without checkpoint_dir: nothing either */
    n.checkpoint_dir = NULL;
    n.ckpt_store = "s3://b/clusters/demo/checkpoints";
    b = render(&s, &n, "aws", &rc, &e);
    assert_int_equal(rc, 0);
    assert_null(strstr(b, "gpuctl_ckpt_"));
    free(b);
}

static void test_node_script_without_store(void **state)
{
    (void)state;
    gpc_spec s;
    gpc_node_ctx n;
    base(&s, &n);
    n.ckpt_store = "/srv/store/clusters/demo/checkpoints";
    int rc;
    gpc_error e;
    char *b = render(&s, &n, "local", &rc, &e);
    assert_null(b);
    assert_int_equal(rc, GPC_ERR_RENDER);
    assert_string_equal(e.msg, "the node script of provider 'local' does not define "
                               "gpuctl_md_store_get, which checkpoint_dir in the store needs");
}

static void test_caps(void **state)
{
    (void)state;
    /* aws keeps checkpoints in its store; local and slurm use the path */
    assert_true(gpc_provider_find("aws")->caps & GPC_CAP_NODE_STORE);
    assert_false(gpc_provider_find("local")->caps & GPC_CAP_NODE_STORE);
    assert_false(gpc_provider_find("slurm")->caps & GPC_CAP_NODE_STORE);
    assert_non_null(gpc_provider_find("aws")->store_endpoint);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_section_with_store),
        cmocka_unit_test(test_no_section_without_store),
        cmocka_unit_test(test_node_script_without_store),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
