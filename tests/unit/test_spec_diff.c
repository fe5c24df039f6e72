/* test_spec_diff.c - src/engine/spec_diff.c: what changed between the
 * applied spec and a new one, the job's fields apart from the shape's; and
 * src/engine/render.c's job file for the node's job runner (job.sh). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/plan.h"
#include "gpuctl/render.h"
#include "gpuctl/spec.h"

static const char base_yaml[] =
    "name: demo\n"
    "provider: local\n"
    "nodes: 2\n"
    "resources:\n"
    "  cpus: 4+\n"
    "env:\n"
    "  A: one\n"
    "setup: pip install x\n"
    "run:\n"
    "  command: python train.py\n"
    "  nproc_per_node: 1\n";

static gpc_spec *load(const char *yaml)
{
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_spec_load_string("job.yaml", NULL, yaml, strlen(yaml), &s, &e))
        fail_msg("spec: %s\n%s", e.msg, yaml);
    return s;
}

/* The canonical JSON of base_yaml, as a cluster records it. */
static char *base_json(void)
{
    gpc_spec *s = load(base_yaml);
    cJSON *j = gpc_spec_to_json(s);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    gpc_spec_free(s);
    return out;
}

/* "field[job|shape]=old->new;" for every change of base_yaml -> yaml. */
static char *diff(const char *yaml)
{
    char *old = base_json();
    gpc_spec *s = load(yaml);
    gpc_spec_change *c = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_diff(old, s, &c, &n, &e), 0);
    gpc_buf b;
    gpc_buf_init(&b, 1u << 16);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gpc_buf_addf(&b, &e, "%s[%s]=%s->%s;", c[i].field,
                                      c[i].job ? "job" : "shape", c[i].old_value,
                                      c[i].new_value), 0);
    assert_int_equal(gpc_spec_changes_shape(c, n), strstr(gpc_buf_str(&b), "[shape]") != NULL);
    char *out = strdup(gpc_buf_str(&b));
    gpc_buf_free(&b);
    gpc_spec_changes_free(c, n);
    gpc_spec_free(s);
    free(old);
    return out;
}

/* yaml = base_yaml with `from` replaced by `to` (once). */
static char *edit(const char *from, const char *to)
{
    const char *p = strstr(base_yaml, from);
    assert_non_null(p);
    size_t pre = (size_t)(p - base_yaml);
    char *out = malloc(sizeof(base_yaml) + strlen(to));
    assert_non_null(out);
    memcpy(out, base_yaml, pre);
    strcpy(out + pre, to);
    strcat(out, p + strlen(from));
    return out;
}

static void expect_diff(const char *from, const char *to, const char *want)
{
    char *y = edit(from, to);
    char *got = diff(y);
    if (strcmp(got, want) != 0)
        fail_msg("%s -> %s:\n got  %s\n want %s", from, to, got, want);
    free(got);
    free(y);
}

static void test_same_spec(void **state)
{
    (void)state;
    char *got = diff(base_yaml);
    assert_string_equal(got, "");
    free(got);
}

static void test_job_fields(void **state)
{
    (void)state;
    expect_diff("python train.py", "python train2.py",
                "run.command[job]=\"python train.py\"->\"python train2.py\";");
    expect_diff("  A: one\n", "  A: two\n  B: x\n",
                "env[job]={\"A\":\"one\"}->{\"A\":\"two\",\"B\":\"x\"};");
    expect_diff("setup: pip install x\n", "",
                "setup[job]=\"pip install x\"->null;");
}

static void test_shape_fields(void **state)
{
    (void)state;
    expect_diff("nodes: 2\n", "nodes: 3\n", "nodes[shape]=2->3;");
    expect_diff("cpus: 4+\n", "cpus: 8+\n", "resources.cpus.min[shape]=4->8;");
    expect_diff("nproc_per_node: 1\n", "nproc_per_node: 2\n",
                "run.nproc_per_node[shape]=1->2;");
    expect_diff("provider: local\n", "provider: slurm\n",
                "provider[shape]=[\"local\"]->[\"slurm\"];");
    /* two shape changes, in the canonical JSON's order; a field the old
     * spec lacks is null there */
    expect_diff("nodes: 2\n", "nodes: 3\nlifecycle:\n  idle_timeout: 60s\n",
                "nodes[shape]=2->3;lifecycle.idle_timeout_s[shape]=null->60;");
    /* lifecycle.max_duration: none is a change of its own (spec.h) */
    expect_diff("nodes: 2\n", "nodes: 2\nlifecycle: {max_duration: none}\n",
                "lifecycle.max_duration_s[shape]=null->\"none\";");
    /* a shape change and a job change together: both listed */
    expect_diff("nodes: 2\nresources:\n  cpus: 4+\nenv:\n  A: one\nsetup: pip install x\n",
                "nodes: 1\nresources:\n  cpus: 4+\nenv:\n  A: one\nsetup: make\n",
                "nodes[shape]=2->1;setup[job]=\"pip install x\"->\"make\";");
}

/* spot.zone_cooldown and spot.fallback_after only steer the controller:
 * set, changed or removed, no change; beside another change, only that
 * one. */
static void test_controller_fields(void **state)
{
    (void)state;
    expect_diff("nodes: 2\n", "nodes: 2\nspot:\n  zone_cooldown: 10m\n", "");
    char *old = edit("nodes: 2\n", "nodes: 2\nspot:\n  policy: auto\n  zone_cooldown: 10m\n"
                                   "  fallback_after: 3\n");
    gpc_spec *a = load(old);
    cJSON *j = gpc_spec_to_json(a);
    char *aj = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    gpc_spec *b = load(base_yaml);
    b->spot.policy = b->spot.head = GPC_SPOT_AUTO;
    gpc_spec_change *c = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_diff(aj, b, &c, &n, &e), 0); /* both removed */
    assert_int_equal(n, 0);
    b->spot.fallback_after = 5;
    b->nodes = 3;
    assert_int_equal(gpc_spec_diff(aj, b, &c, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(c[0].field, "nodes");
    gpc_spec_changes_free(c, n);
    cJSON_free(aj);
    gpc_spec_free(a);
    gpc_spec_free(b);
    free(old);
}

static void test_field_is_job(void **state)
{
    (void)state;
    const char *job[] = {"env", "secrets", "setup", "run.command"};
    const char *shape[] = {"nodes", "provider", "run", "run.nproc_per_node", "run.rdzv_port",
                           "resources.gpu", "image", "workdir", "labels", "commands"};
    for (size_t i = 0; i < sizeof(job) / sizeof(job[0]); i++)
        assert_int_equal(gpc_spec_field_is_job(job[i]), 1);
    for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++)
        assert_int_equal(gpc_spec_field_is_job(shape[i]), 0);
}

static void test_bad_recorded_json(void **state)
{
    (void)state;
    gpc_spec *s = load(base_yaml);
    gpc_spec_change *c = (gpc_spec_change *)1;
    size_t n = 9;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_diff("[1]", s, &c, &n, &e), GPC_ERR_STATE);
    assert_null(c);
    assert_int_equal(n, 0);
    gpc_spec_free(s);
}

static void test_render_job(void **state)
{
    (void)state;
    gpc_env_var env[] = {{"A", "it's $HOME"}, {"B_2", ""}};
    gpc_job_def j = {.id = "x0123456789ab", .setup = NULL, .run = "echo $RANK",
                     .env = env, .n_env = 2, .with_env = 1};
    gpc_buf b;
    gpc_buf_init(&b, 1u << 16);
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_job(&j, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b),
                        "GPUCTL_JOB_ID=x0123456789ab\n"
                        "GPUCTL_SETUP=''\n"
                        "GPUCTL_RUN_COMMAND='echo $RANK'\n"
                        "gpuctl_user_env='A B_2'\n"
                        "gpuctl_job_env() {\n"
                        "  :\n"
                        "export A='it'\\''s $HOME'\n"
                        "export B_2=''\n"
                        "}\n");
    /* without env: the node keeps the latest job env */
    gpc_buf_reset(&b);
    j.with_env = 0;
    j.setup = "apt-get install -y x";
    assert_int_equal(gpc_render_job(&j, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b),
                        "GPUCTL_JOB_ID=x0123456789ab\n"
                        "GPUCTL_SETUP='apt-get install -y x'\n"
                        "GPUCTL_RUN_COMMAND='echo $RANK'\n");
    /* refused: an id with a shell character, no run command, a bad env name */
    gpc_buf_reset(&b);
    j.id = "x;rm";
    assert_int_equal(gpc_render_job(&j, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "job id 'x;rm' has a character other than [A-Za-z0-9._-]");
    j.id = "x1";
    j.run = "";
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_job(&j, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "the job has no run command");
    j.run = "true";
    j.with_env = 1;
    env[1].name = "B-2";
    gpc_error_clear(&e);
    gpc_buf_reset(&b);
    assert_int_equal(gpc_render_job(&j, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "env name 'B-2' is not a shell name, or has no value");
    gpc_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_spec),
        cmocka_unit_test(test_job_fields),
        cmocka_unit_test(test_shape_fields),
        cmocka_unit_test(test_controller_fields),
        cmocka_unit_test(test_field_is_job),
        cmocka_unit_test(test_bad_recorded_json),
        cmocka_unit_test(test_render_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
