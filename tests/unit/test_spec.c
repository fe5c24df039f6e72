/* test_spec.c - src/spec.c: parsing, validation, canonical JSON, hash. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuctl/spec.h"
#include "gpuctl/util.h"

/* The two keys every spec needs, for tests about something else. */
#define MIN "name: x\nrun: a\n"

/* ------------------------------------------------------------------ */
/* helpers                                                            */

static gpc_spec *load(const char *yaml)
{
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_spec_load_string("job.yaml", NULL, yaml, strlen(yaml), &s, &e);
    if (rc)
        fail_msg("unexpected error %d: %s\n--- yaml:\n%s", rc, e.msg, yaml);
    assert_non_null(s);
    return s;
}

static void expect_error(const char *yaml, const char *want)
{
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_spec_load_string("job.yaml", NULL, yaml, strlen(yaml), &s, &e);
    if (rc != GPC_ERR_SPEC)
        fail_msg("expected a spec error '%s', got rc %d ('%s')\n--- yaml:\n%s", want, rc,
                 e.msg, yaml);
    assert_null(s);
    assert_int_equal(e.code, GPC_ERR_SPEC);
    if (strcmp(e.msg, want) != 0)
        fail_msg("message differs\n  want: %s\n  got:  %s\n--- yaml:\n%s", want, e.msg, yaml);
}

typedef struct err_case {
    const char *yaml;
    const char *msg;
} err_case;

#define RUN_ERR_CASES(cases)                                        \
    for (size_t i_ = 0; i_ < sizeof(cases) / sizeof(cases[0]); i_++) \
        expect_error(cases[i_].yaml, cases[i_].msg)

static const char *env_value(const gpc_spec *s, const char *name)
{
    for (size_t i = 0; i < s->n_env; i++)
        if (strcmp(s->env[i].name, name) == 0)
            return s->env[i].value;
    fail_msg("no env var %s", name);
    return NULL;
}

static void hash_of(const char *yaml, char out[65])
{
    gpc_spec *s = load(yaml);
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_hash(s, out, &e), 0);
    assert_int_equal(strlen(out), 64);
    gpc_spec_free(s);
}

static const char *source_dir(void)
{
    const char *d = getenv("GPUCTL_SOURCE_DIR");
    if (!d || !*d)
        skip();
    return d;
}

/* ------------------------------------------------------------------ */
/* whole specs                                                        */

static void test_minimal_defaults(void **state)
{
    (void)state;
    gpc_spec *s = load("name: det3d\nrun: python train.py\n");
    assert_string_equal(s->source, "job.yaml");
    assert_string_equal(s->base_dir, ".");
    assert_string_equal(s->name, "det3d");
    assert_int_equal(s->n_providers, 1);
    assert_string_equal(s->providers[0], "local");
    assert_int_equal(s->nodes, 1);
    assert_int_equal(s->resources.n_gpus, 0);
    assert_true(s->resources.cpus.min == 0 && s->resources.cpus.max == 0);
    assert_true(s->resources.memory_gib.min == 0 && s->resources.memory_gib.max == 0);
    assert_true(s->resources.disk_gib == 0);
    assert_int_equal(s->resources.disk_tier, GPC_DISK_ANY);
    assert_int_equal(s->resources.disk_iops, 0);
    assert_int_equal(s->resources.interconnect, GPC_IC_ANY);
    assert_int_equal(s->resources.n_instance_types, 0);
    assert_int_equal(s->n_regions, 0);
    assert_int_equal(s->n_zones, 0);
    assert_int_equal(s->spot.policy, GPC_SPOT_ON_DEMAND);
    assert_int_equal(s->spot.head, GPC_SPOT_ON_DEMAND);
    assert_true(s->spot.max_price == 0);
    assert_true(s->budget.max_hourly == 0 && s->budget.max_total == 0);
    assert_int_equal(s->lifecycle.max_duration_s, 0);
    assert_int_equal(s->lifecycle.idle_timeout_s, 0);
    assert_string_equal(s->image, "pytorch");
    assert_int_equal(s->n_env, 0);
    assert_int_equal(s->n_labels, 0);
    assert_null(s->workdir);
    assert_null(s->checkpoint_dir);
    assert_null(s->setup);
    assert_string_equal(s->run.command, "python train.py");
    assert_int_equal(s->run.nproc_per_node, 0);
    assert_int_equal(s->run.rdzv_port, 0); /* 0 = provider default (29400) */
    gpc_spec_free(s);
}

static void test_full_fixture(void **state)
{
    (void)state;
    char path[4096];
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    snprintf(path, sizeof(path), "%s/tests/fixtures/spec/full.yaml", source_dir());
    int rc = gpc_spec_load_file(path, &s, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(s->source, path);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/tests/fixtures/spec", source_dir());
    assert_string_equal(s->base_dir, dir);

    assert_string_equal(s->name, "det3d-pretrain");
    assert_int_equal(s->n_providers, 2);
    assert_string_equal(s->providers[0], "aws");
    assert_string_equal(s->providers[1], "azure");
    assert_int_equal(s->nodes, 8);

    assert_int_equal(s->resources.n_gpus, 2);
    assert_string_equal(s->resources.gpus[0].model, "A100");
    assert_true(s->resources.gpus[0].mem_gib.min == 80 && s->resources.gpus[0].mem_gib.max == 80);
    assert_true(s->resources.gpus[0].count.min == 8 && s->resources.gpus[0].count.max == 8);
    assert_string_equal(s->resources.gpus[1].model, "H100");
    assert_true(s->resources.gpus[1].mem_gib.min == 0 && s->resources.gpus[1].mem_gib.max == 0);
    assert_true(s->resources.gpus[1].count.min == 1 && s->resources.gpus[1].count.max == 2);
    assert_true(s->resources.cpus.min == 32 && s->resources.cpus.max == 0);
    assert_true(s->resources.memory_gib.min == 256 && s->resources.memory_gib.max == 1024);
    assert_true(s->resources.disk_gib == 2048);
    assert_int_equal(s->resources.disk_tier, GPC_DISK_NVME);
    assert_int_equal(s->resources.disk_iops, 100000);
    assert_int_equal(s->resources.interconnect, GPC_IC_INFINIBAND);
    assert_int_equal(s->resources.n_instance_types, 2);
    assert_string_equal(s->resources.instance_types[0], "p4d.24xlarge");
    assert_string_equal(s->resources.instance_types[1], "Standard_ND96amsr_A100_v4");

    assert_int_equal(s->n_regions, 2);
    assert_string_equal(s->regions[0], "us-east-1");
    assert_string_equal(s->regions[1], "eastus");
    assert_int_equal(s->n_zones, 1);
    assert_string_equal(s->zones[0], "us-east-1a");

    assert_int_equal(s->spot.policy, GPC_SPOT_AUTO);
    assert_true(s->spot.max_price == 15.5);
    assert_int_equal(s->spot.head, GPC_SPOT_ON_DEMAND);
    assert_true(s->budget.max_hourly == 200);
    assert_true(s->budget.max_total == 5000);
    assert_int_equal(s->lifecycle.max_duration_s, 72 * 3600);
    assert_int_equal(s->lifecycle.idle_timeout_s, 5400);

    assert_string_equal(s->image, "pytorch-2.4-cuda12");
    assert_int_equal(s->n_env, 7);
    assert_string_equal(s->env[0].name, "NCCL_DEBUG"); /* document order */
    assert_string_equal(s->env[0].value, "WARN");
    assert_string_equal(env_value(s, "NO_VALUE"), "no");
    assert_string_equal(env_value(s, "MODE"), "0755");
    assert_string_equal(env_value(s, "VERSION"), "1.10");
    assert_string_equal(env_value(s, "QUOTED"), "True");
    assert_string_equal(env_value(s, "BIG"), "12345678901234567890");
    assert_string_equal(env_value(s, "EMPTY"), "");
    assert_int_equal(s->n_labels, 2);
    assert_string_equal(s->labels[0].key, "team");
    assert_string_equal(s->labels[0].value, "vision");
    assert_string_equal(s->labels[1].key, "cost-center");
    assert_string_equal(s->labels[1].value, "1234");

    assert_string_equal(s->workdir, "./src");
    assert_string_equal(s->checkpoint_dir, "s3://bucket/det3d/ckpt");
    assert_string_equal(s->setup, "pip install -r requirements.txt\n"
                                  "python -c \"import torch; print(torch.__version__)\"\n");
    assert_string_equal(s->run.command, "python train.py --epochs 10");
    assert_int_equal(s->run.nproc_per_node, 8);
    assert_int_equal(s->run.rdzv_port, 29500);
    gpc_spec_free(s);
}

static void test_load_file_paths(void **state)
{
    (void)state;
    const char *src = source_dir();
    char cwd[4096];
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    assert_non_null(getcwd(cwd, sizeof(cwd)));

    /* Relative path: base_dir is its directory as given. */
    assert_int_equal(chdir(src), 0);
    assert_int_equal(gpc_spec_load_file("tests/fixtures/spec/full.yaml", &s, &e), 0);
    assert_string_equal(s->base_dir, "tests/fixtures/spec");
    gpc_spec_free(s);
    s = NULL;

    /* A bare file name: ".". */
    assert_int_equal(chdir("tests/fixtures/spec"), 0);
    assert_int_equal(gpc_spec_load_file("full.yaml", &s, &e), 0);
    assert_string_equal(s->base_dir, ".");
    assert_string_equal(s->source, "full.yaml");
    gpc_spec_free(s);
    s = NULL;

    /* "-" reads stdin; base_dir is ".". */
    assert_non_null(freopen("full.yaml", "r", stdin));
    assert_int_equal(gpc_spec_load_file("-", &s, &e), 0);
    assert_string_equal(s->base_dir, ".");
    assert_string_equal(s->source, "<stdin>");
    assert_string_equal(s->name, "det3d-pretrain");
    gpc_spec_free(s);
    s = NULL;
    assert_int_equal(chdir(cwd), 0);

    /* A missing file is an I/O error naming it; *out untouched. */
    assert_int_equal(gpc_spec_load_file("/nonexistent/job.yaml", &s, &e), GPC_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(e.msg, "/nonexistent/job.yaml"));
}

static void test_too_large(void **state)
{
    (void)state;
    size_t len = GPC_SPEC_MAX_BYTES + 1;
    char *big = malloc(len);
    assert_non_null(big);
    memset(big, '#', len);
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_load_string("job.yaml", NULL, big, len, &s, &e), GPC_ERR_SPEC);
    assert_string_equal(e.msg, "job.yaml: larger than 1048576 bytes");
    assert_null(s);
    free(big);
}

/* ------------------------------------------------------------------ */
/* YAML-level rules                                                   */

static void test_positions_are_one_based(void **state)
{
    (void)state;
    expect_error("name: x\nrun: a\nnodes: two\n",
                 "job.yaml:3:8: nodes: expected an integer >= 1, got 'two'");
    expect_error("# comment\nname: x\nrun: a\nresources:\n  cpus: lots\n",
                 "job.yaml:5:9: resources.cpus: expected a vCPU count like 8, 8+ or 4..16, "
                 "got 'lots'");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    static const err_case cases[] = {
        {"name: [a, b\nrun: a\n",
         "job.yaml:2:4: did not find expected ',' or ']' (while parsing a flow sequence at line 1)"},
        {"name: a: b\n",
         "job.yaml:1:8: mapping values are not allowed in this context"},
        {"name: x\n  run: a\n",
         "job.yaml:2:6: mapping values are not allowed in this context"},
        {"name: \"x\nrun: a\n",
         "job.yaml:3:1: found unexpected end of stream (while scanning a quoted scalar at line 1)"},
        {"name: x\nrun: \xff\n", "job.yaml:2:6: invalid leading UTF-8 octet"},
        {"name: x\nrun: a\x01b\n", "job.yaml:2:7: control characters are not allowed"},
        {"name: x\nrun: a\nenv: {A: 1\n",
         "job.yaml:4:1: did not find expected ',' or '}' (while parsing a flow mapping at line 3)"},
    };
    RUN_ERR_CASES(cases);
}

static void test_tabs_in_indentation(void **state)
{
    (void)state;
    static const err_case cases[] = {
        {"name: x\n\tnodes: 2\nrun: a\n",
         "job.yaml:2:1: tab character in indentation (YAML allows only spaces)"},
        {"name: x\nrun:\n\tcommand: a\n",
         "job.yaml:3:1: tab character in indentation (YAML allows only spaces)"},
        {"name: x\nrun: a\nenv:\n  A: 1\n  \tB: 2\n",
         "job.yaml:5:3: tab character in indentation (YAML allows only spaces)"},
        {"\tname: x\n", "job.yaml:1:1: tab character in indentation (YAML allows only spaces)"},
    };
    RUN_ERR_CASES(cases);

    /* Tabs inside a block scalar's content, or after a key, are text. */
    gpc_spec *s = load("name:\tx\nrun: a\nsetup: |\n  cat <<-EOF\n  \tindented\n  EOF\n");
    assert_string_equal(s->name, "x");
    assert_string_equal(s->setup, "cat <<-EOF\n\tindented\nEOF\n");
    gpc_spec_free(s);
}

static void test_unknown_keys(void **state)
{
    (void)state;
    static const err_case cases[] = {
        {MIN "nodez: 2\n", "job.yaml:3:1: unknown key 'nodez' (did you mean 'nodes'?)"},
        {MIN "resorces: {}\n", "job.yaml:3:1: unknown key 'resorces' (did you mean 'resources'?)"},
        {"name: x\nrun:\n  comand: a\n",
         "job.yaml:3:3: run: unknown key 'comand' (did you mean 'command'?)"},
        {MIN "Nodes: 2\n", "job.yaml:3:1: unknown key 'Nodes' (did you mean 'nodes'?)"},
        {MIN "frobnicate: 1\n", "job.yaml:3:1: unknown key 'frobnicate'"},
        {MIN "resources:\n  cpu: 8\n",
         "job.yaml:4:3: resources: unknown key 'cpu' (did you mean 'cpus'?)"},
        {MIN "resources:\n  disk: {size: 1TB, teir: ssd}\n",
         "job.yaml:4:21: resources.disk: unknown key 'teir' (did you mean 'tier'?)"},
        {MIN "spot: {polcy: auto}\n",
         "job.yaml:3:8: spot: unknown key 'polcy' (did you mean 'policy'?)"},
        {MIN "budget: {max_hour: 1}\n",
         "job.yaml:3:10: budget: unknown key 'max_hour' (did you mean 'max_hourly'?)"},
        {MIN "lifecycle: {idle: 1h}\n", "job.yaml:3:13: lifecycle: unknown key 'idle'"},
        /* right key, wrong level; names from other tools */
        {MIN "gpu: A100:8\n", "job.yaml:3:1: unknown key 'gpu' (did you mean 'resources.gpu'?)"},
        {MIN "num_nodes: 2\n", "job.yaml:3:1: unknown key 'num_nodes' (did you mean 'nodes'?)"},
        {MIN "resources:\n  region: us-east-1\n",
         "job.yaml:4:3: resources: unknown key 'region' (did you mean 'region' at the top level?)"},
        {MIN "<<: {nodes: 2}\n", "job.yaml:3:1: merge keys ('<<') are not supported"},
        {MIN "[a, b]: 1\n", "job.yaml:3:1: expected a string key, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    static const err_case cases[] = {
        {"name: x\nnodes: 2\nrun: a\nnodes: 3\n",
         "job.yaml:4:1: duplicate key 'nodes' (first at line 2)"},
        {"name: x\nrun:\n  command: a\n  rdzv_port: 2000\n  command: b\n",
         "job.yaml:5:3: duplicate key 'command' (first at line 3)"},
        {MIN "env:\n  A: 1\n  B: 2\n  A: 3\n", "job.yaml:6:3: duplicate key 'A' (first at line 4)"},
        {MIN "env: {A: 1, 'A': 2}\n", "job.yaml:3:13: duplicate key 'A' (first at line 3)"},
        /* the first repeat in document order is the one reported */
        {"name: x\nrun: a\nb: 1\na: 1\nb: 2\na: 2\n",
         "job.yaml:5:1: duplicate key 'b' (first at line 3)"},
    };
    RUN_ERR_CASES(cases);
}

static void test_documents_and_top_level(void **state)
{
    (void)state;
    static const err_case cases[] = {
        {"", "job.yaml:1:1: the spec is empty; expected a mapping with at least 'name' and 'run'"},
        {"# only a comment\n",
         "job.yaml:1:1: the spec is empty; expected a mapping with at least 'name' and 'run'"},
        {"---\n", "job.yaml:1:1: the spec is empty; expected a mapping with at least 'name' and 'run'"},
        {"~\n", "job.yaml:1:1: the spec is empty; expected a mapping with at least 'name' and 'run'"},
        {"- name: x\n", "job.yaml:1:1: expected a mapping at the top level, got a sequence"},
        {"hello\n", "job.yaml:1:1: expected a mapping at the top level, got 'hello'"},
        {MIN "---\nname: y\nrun: b\n",
         "job.yaml:3:1: a second YAML document; a spec file holds exactly one"},
        {"run: a\n", "job.yaml:1:1: missing required key 'name'"},
        {"name: x\n", "job.yaml:1:1: missing required key 'run'"},
        {"name:\nrun: a\n", "job.yaml:1:6: name: expected a value, got null"},
    };
    RUN_ERR_CASES(cases);

    /* An explicit "---" and "..." around one document are fine. */
    gpc_spec *s = load("---\n" MIN "...\n");
    assert_string_equal(s->name, "x");
    gpc_spec_free(s);
}

static void test_nesting_limit(void **state)
{
    (void)state;
    char yaml[512];
    size_t n = 0;
    n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, MIN "env: ");
    for (int i = 0; i < 70; i++)
        yaml[n++] = '[';
    for (int i = 0; i < 70; i++)
        yaml[n++] = ']';
    yaml[n++] = '\n';
    yaml[n] = '\0';
    expect_error(yaml, "job.yaml:3:69: nesting deeper than 64 levels");
}

static void test_strings_byte_exact(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN
                       "env:\n"
                       "  A: no\n"
                       "  B: 0755\n"
                       "  C: 1.10\n"
                       "  D: on\n"
                       "  E: 'True'\n"
                       "  F: 12345678901234567890\n"
                       "  G: '~'\n"
                       "  H: \"null\"\n"
                       "  I: ''\n"
                       "  J: 'it''s'\n"
                       "  K: \"tab\\there\\u00e9\"\n"
                       "  L: |\n"
                       "    line one\n"
                       "      indented\n"
                       "  M: >\n"
                       "    folded\n"
                       "    text\n"
                       "  N: |-\n"
                       "    no newline\n"
                       "  O: 1e3\n"
                       "  P: 0x1F\n"
                       "  Q: yes # a comment\n"
                       "  R: a:b # not a key\n"
                       "  S: 'x y'  \n");
    assert_string_equal(env_value(s, "A"), "no");
    assert_string_equal(env_value(s, "B"), "0755");
    assert_string_equal(env_value(s, "C"), "1.10");
    assert_string_equal(env_value(s, "D"), "on");
    assert_string_equal(env_value(s, "E"), "True");
    assert_string_equal(env_value(s, "F"), "12345678901234567890");
    assert_string_equal(env_value(s, "G"), "~");
    assert_string_equal(env_value(s, "H"), "null");
    assert_string_equal(env_value(s, "I"), "");
    assert_string_equal(env_value(s, "J"), "it's");
    assert_string_equal(env_value(s, "K"), "tab\there\xc3\xa9");
    assert_string_equal(env_value(s, "L"), "line one\n  indented\n");
    assert_string_equal(env_value(s, "M"), "folded text\n");
    assert_string_equal(env_value(s, "N"), "no newline");
    assert_string_equal(env_value(s, "O"), "1e3");
    assert_string_equal(env_value(s, "P"), "0x1F");
    assert_string_equal(env_value(s, "Q"), "yes");
    assert_string_equal(env_value(s, "R"), "a:b");
    assert_string_equal(env_value(s, "S"), "x y");
    gpc_spec_free(s);
}

static void test_crlf_input(void **state)
{
    (void)state;
    gpc_spec *s = load("name: x\r\nrun: |\r\n  a\r\n  b\r\nnodes: 2\r\n");
    assert_string_equal(s->run.command, "a\nb\n");
    assert_int_equal(s->nodes, 2);
    gpc_spec_free(s);
}

static void test_nul_in_string(void **state)
{
    (void)state;
    expect_error(MIN "env: {A: \"x\\0y\"}\n", "job.yaml:3:10: env.A: contains a NUL character");
}

static void test_null_means_default(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "nodes: ~\nimage:\nprovider: null\nspot: ~\nsetup:\nresources: {gpu: ~}\n");
    assert_int_equal(s->nodes, 1);
    assert_string_equal(s->image, "pytorch");
    assert_string_equal(s->providers[0], "local");
    assert_null(s->setup);
    assert_int_equal(s->resources.n_gpus, 0);
    gpc_spec_free(s);
}

/* ------------------------------------------------------------------ */
/* anchors and aliases                                                */

static void test_aliases_resolve(void **state)
{
    (void)state;
    gpc_spec *s = load("name: &n det3d\n"
                       "run: a\n"
                       "regions: &r [us-east-1, us-west-2]\n"
                       "env: &e\n"
                       "  A: &v '0755'\n"
                       "  B: *v\n"
                       "labels: {job: *n}\n"
                       "resources: {gpu: &g A100:8, instance_types: [p4d.24xlarge]}\n");
    assert_string_equal(env_value(s, "B"), "0755");
    assert_string_equal(s->labels[0].value, "det3d");
    assert_int_equal(s->n_regions, 2);
    gpc_spec_free(s);

    s = load("name: x\nrun: &cmd\n  command: python train.py\n  rdzv_port: 30000\n"
             "env:\n  CMD: &c hello\n  CMD2: *c\n");
    assert_int_equal(s->run.rdzv_port, 30000);
    assert_string_equal(env_value(s, "CMD2"), "hello");
    gpc_spec_free(s);

    /* An anchor may be defined again; an alias means the latest. */
    s = load(MIN "env: {A: &v one, B: &v two, C: *v}\n");
    assert_string_equal(env_value(s, "C"), "two");
    gpc_spec_free(s);

    /* An aliased mapping is checked like the original. */
    expect_error("name: x\nrun: a\nbase: &b {A: 1}\nenv: *b\n",
                 "job.yaml:3:1: unknown key 'base'");
    expect_error(MIN "env: &e {A: 1, B: *e}\n",
                 "job.yaml:3:19: alias '*e' names no anchor defined before it");
    expect_error(MIN "env: {A: *nope}\n",
                 "job.yaml:3:10: alias '*nope' names no anchor defined before it");
}

static void test_anchor_limit(void **state)
{
    (void)state;
    size_t cap = 32768, n = 0;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    n += (size_t)snprintf(yaml + n, cap - n, MIN "env:\n");
    for (int i = 0; i <= 1000; i++)
        n += (size_t)snprintf(yaml + n, cap - n, "  V%d: &a%d x\n", i, i);
    expect_error(yaml, "job.yaml:1004:10: more than 1000 anchors");
    free(yaml);
}

static void test_billion_laughs(void **state)
{
    (void)state;
    static const char bomb[] =
        "name: x\nrun: a\n"
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(bomb, "job.yaml:7:8: alias expansion exceeds 10000 nodes (billion laughs?)");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 0.5);

    /* The same bomb inside a valid key fails the same way. */
    expect_error("name: x\nrun: a\nenv:\n"
                 "  A: &a [x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x,x]\n"
                 "  B: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                 "  C: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
                 "job.yaml:6:55: alias expansion exceeds 10000 nodes (billion laughs?)");
}

static double secs_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Bombs as large as a spec may be (GPC_SPEC_MAX_BYTES) fail as fast as small
 * ones: the tree is built from libyaml's events, so reading stops at the
 * 65th open collection or the 1,001st anchor.  (libyaml's document loader,
 * yaml_parser_load, parses the whole file first: it takes seconds on 32 KiB
 * of '[' and grows with the square of the size, and its anchor table too.) */
static void test_bombs_at_size_limit(void **state)
{
    (void)state;
    size_t cap = GPC_SPEC_MAX_BYTES + 1;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    size_t n = (size_t)snprintf(yaml, cap, MIN "env: ");
    memset(yaml + n, '[', cap - 1 - n);
    yaml[cap - 1] = '\0';
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(yaml, "job.yaml:3:69: nesting deeper than 64 levels");
    assert_true(secs_since(&t0) < 1.0);

    n = (size_t)snprintf(yaml, cap, MIN "env:\n");
    for (int i = 0; n < cap - 32; i++)
        n += (size_t)snprintf(yaml + n, cap - n, "  V%d: &a%d x\n", i, i);
    assert_true(n > GPC_SPEC_MAX_BYTES - 32 && n <= GPC_SPEC_MAX_BYTES);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(yaml, "job.yaml:1004:10: more than 1000 anchors");
    assert_true(secs_since(&t0) < 1.0);
    free(yaml);
}

/* ------------------------------------------------------------------ */
/* numeric forms                                                      */

static void test_parse_size(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        double gib;
    } ok[] = {
        {"80GB", 80}, {"80GiB", 80}, {"80G", 80}, {"80gb", 80}, {"80gIb", 80},
        {"2TB", 2048}, {"2TiB", 2048}, {"2t", 2048}, {"1.5TB", 1536},
        {"512MB", 0.5}, {"512MiB", 0.5}, {"1024m", 1}, {"64", 64}, {"0.5", 0.5},
        {"80 GB", 80},
    };
    gpc_error e;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double gib = -1;
        gpc_error_clear(&e);
        if (gpc_parse_size_gib("disk", ok[i].in, &gib, &e))
            fail_msg("%s: %s", ok[i].in, e.msg);
        if (gib != ok[i].gib)
            fail_msg("%s: got %g, want %g", ok[i].in, gib, ok[i].gib);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"0GB", "disk: expected a positive size, got '0GB'"},
        {"0", "disk: expected a positive size, got '0'"},
        {"-5GB", "disk: expected a positive size, got '-5GB'"},
        {"10XB", "disk: unknown size unit 'XB' in '10XB' (use MB, GB or TB)"},
        {"10KB", "disk: unknown size unit 'KB' in '10KB' (use MB, GB or TB)"},
        {"GB", "disk: expected a size like 80GB, 512MB or 2TB, got 'GB'"},
        {"", "disk: expected a size like 80GB, 512MB or 2TB, got ''"},
        {"1e3GB", "disk: expected a size like 80GB, 512MB or 2TB, got '1e3GB'"},
        {"80 ", "disk: expected a size like 80GB, 512MB or 2TB, got '80 '"},
        {"lots", "disk: expected a size like 80GB, 512MB or 2TB, got 'lots'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double gib = 0;
        gpc_error_clear(&e);
        assert_int_equal(gpc_parse_size_gib("disk", bad[i].in, &gib, &e), GPC_ERR_SPEC);
        assert_string_equal(e.msg, bad[i].msg);
    }
}

static void test_parse_duration(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        uint64_t secs;
    } ok[] = {
        {"90s", 90}, {"30m", 1800}, {"72h", 259200}, {"1d", 86400}, {"1h30m", 5400},
        {"3600", 3600}, {"1d2h3m4s", 93784}, {"2h0m", 7200}, {"36500d", 36500ull * 86400},
    };
    gpc_error e;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t secs = 0;
        gpc_error_clear(&e);
        if (gpc_parse_duration("t", ok[i].in, &secs, &e))
            fail_msg("%s: %s", ok[i].in, e.msg);
        assert_int_equal(secs, ok[i].secs);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"0", "t: expected a positive duration, got '0'"},
        {"0s", "t: expected a positive duration, got '0s'"},
        {"-5m", "t: expected a positive duration, got '-5m'"},
        {"30x", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '30x'"},
        {"30m1h", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '30m1h'"},
        {"1h1h", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '1h1h'"},
        {"1.5h", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '1.5h'"},
        {"h", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got 'h'"},
        {"1h30", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '1h30'"},
        {"30M", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '30M'"},
        {"", "t: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got ''"},
        {"36501d", "t: '36501d' is too long (at most 36500d)"},
        {"99999999999999999999999s", "t: '99999999999999999999999s' is too long (at most 36500d)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t secs = 0;
        gpc_error_clear(&e);
        assert_int_equal(gpc_parse_duration("t", bad[i].in, &secs, &e), GPC_ERR_SPEC);
        assert_string_equal(e.msg, bad[i].msg);
    }
}

static void test_parse_gpu(void **state)
{
    (void)state;
    static const struct {
        const char *in, *model;
        double mem_min, mem_max, count_min, count_max;
    } ok[] = {
        {"A100-80GB:8", "A100", 80, 80, 8, 8},
        {"A100:80GB:8", "A100", 80, 80, 8, 8},
        {"H100:8", "H100", 0, 0, 8, 8},
        {"T4:1", "T4", 0, 0, 1, 1},
        {"T4", "T4", 0, 0, 1, 1},
        {"24GB..80GB:2", "", 24, 80, 2, 2},
        {"H100:1..2", "H100", 0, 0, 1, 2},
        {"A100:40GB..80GB:8", "A100", 40, 80, 8, 8},
        {"a100-40gb", "A100", 40, 40, 1, 1},
        {"l40s:4", "L40S", 0, 0, 4, 4},
        {"8", "", 0, 0, 8, 8},
        {"H100:8+", "H100", 0, 0, 8, 0},
        {"H100:..4", "H100", 0, 0, 1, 4},
        {"H100:2..", "H100", 0, 0, 2, 0},
        {"A100:..40GB:1", "A100", 0, 40, 1, 1},
        {"A100:80GB", "A100", 80, 80, 1, 1},
        {"40GB+:4", "", 40, 0, 4, 4},
        {"RTX-4090:2", "RTX-4090", 0, 0, 2, 2},
        {"A100-SXM4-80GB:8", "A100-SXM4", 80, 80, 8, 8},
        {"A10G", "A10G", 0, 0, 1, 1},
        {"MI300X:8", "MI300X", 0, 0, 8, 8},
    };
    gpc_error e;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        gpc_gpu_req g;
        memset(&g, 0, sizeof(g));
        gpc_error_clear(&e);
        if (gpc_parse_gpu("gpu", ok[i].in, &g, &e))
            fail_msg("%s: %s", ok[i].in, e.msg);
        if (strcmp(g.model, ok[i].model) != 0 || g.mem_gib.min != ok[i].mem_min ||
            g.mem_gib.max != ok[i].mem_max || g.count.min != ok[i].count_min ||
            g.count.max != ok[i].count_max)
            fail_msg("%s: got %s mem {%g,%g} count {%g,%g}", ok[i].in, g.model, g.mem_gib.min,
                     g.mem_gib.max, g.count.min, g.count.max);
        free(g.model);
    }
#define GPU_BAD(s) "gpu: expected a GPU like A100-80GB:8, A100:80GB:8, H100:8, T4 " \
                   "or 24GB..80GB:2, got '" s "'"
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"A100:0", "gpu: GPU count must be at least 1 in 'A100:0'"},
        {"0", "gpu: GPU count must be at least 1 in '0'"},
        {"H100:65", "gpu: at most 64 GPUs per node in 'H100:65'"},
        {"A100::8", GPU_BAD("A100::8")},
        {":8", GPU_BAD(":8")},
        {"", GPU_BAD("")},
        {"A100:80GB:8:1", GPU_BAD("A100:80GB:8:1")},
        {"A100:x:8", GPU_BAD("A100:x:8")},
        {"A100:fast", GPU_BAD("A100:fast")},
        {"A 100:8", GPU_BAD("A 100:8")},
        {"H100:4..2", GPU_BAD("H100:4..2")},
        {"H100:-1", GPU_BAD("H100:-1")},
        {"A100:0GB:8", GPU_BAD("A100:0GB:8")},
        {"A100-80GB:40GB:8", GPU_BAD("A100-80GB:40GB:8")},
        {"80GB..40GB:1", GPU_BAD("80GB..40GB:1")},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gpc_gpu_req g;
        memset(&g, 0, sizeof(g));
        gpc_error_clear(&e);
        assert_int_equal(gpc_parse_gpu("gpu", bad[i].in, &g, &e), GPC_ERR_SPEC);
        assert_null(g.model);
        if (strcmp(e.msg, bad[i].msg) != 0)
            fail_msg("%s\n  want: %s\n  got:  %s", bad[i].in, bad[i].msg, e.msg);
    }
}

/* ------------------------------------------------------------------ */
/* fields                                                             */

static void test_name(void **state)
{
    (void)state;
#define NAME_RULE "is not a valid name (lower-case letters, digits and '-', starting with " \
                  "a letter, not ending with '-', at most 58 characters)"
    static const err_case cases[] = {
        {"name: Det3D\nrun: a\n", "job.yaml:1:7: name: 'Det3D' " NAME_RULE},
        {"name: 3d\nrun: a\n", "job.yaml:1:7: name: '3d' " NAME_RULE},
        {"name: det3d-\nrun: a\n", "job.yaml:1:7: name: 'det3d-' " NAME_RULE},
        {"name: det_3d\nrun: a\n", "job.yaml:1:7: name: 'det_3d' " NAME_RULE},
        {"name: ''\nrun: a\n", "job.yaml:1:7: name: '' " NAME_RULE},
        {"name: a234567890123456789012345678901234567890123456789012345678901234\nrun: a\n",
         "job.yaml:1:7: name: 'a234567890123456789012345678901234567890123456789012345678901234' "
         NAME_RULE},
        /* regression: 59..63 characters made node names ("<name>-1023") over 63 */
        {"name: a2345678901234567890123456789012345678901234567890123456789\nrun: a\n",
         "job.yaml:1:7: name: 'a2345678901234567890123456789012345678901234567890123456789' "
         NAME_RULE},
        {"name: [a]\nrun: a\n", "job.yaml:1:7: name: expected a string, got a sequence"},
    };
    RUN_ERR_CASES(cases);
    gpc_spec *s = load("name: a234567890123456789012345678901234567890123456789012345678\n"
                       "run: a\n");
    assert_int_equal(strlen(s->name), 58);
    gpc_spec_free(s);
    s = load("name: a\nrun: a\n");
    assert_string_equal(s->name, "a");
    gpc_spec_free(s);
}

/* Regression: absurd sizes (1e23 TB) were accepted and failed only at apply. */
static void test_size_upper_bound(void **state)
{
    (void)state;
    expect_error(MIN "resources: {memory: 99999999999999999999999TB}\n",
                 "job.yaml:3:21: resources.memory: '99999999999999999999999TB' is more than 1PB");
    expect_error(MIN "resources: {disk: 2000TB}\n",
                 "job.yaml:3:19: resources.disk: '2000TB' is more than 1PB");
    gpc_spec *s = load(MIN "resources: {disk: 1024TB}\n");
    assert_true(s->resources.disk_gib == 1048576.0);
    gpc_spec_free(s);
}

static void test_provider(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "provider: aliyun\n");
    assert_int_equal(s->n_providers, 1);
    assert_string_equal(s->providers[0], "aliyun");
    gpc_spec_free(s);
    s = load(MIN "provider: [azure, aws, local]\n");
    assert_int_equal(s->n_providers, 3);
    assert_string_equal(s->providers[0], "azure");
    assert_string_equal(s->providers[2], "local");
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "provider: gcp\n",
         "job.yaml:3:11: provider: unknown provider 'gcp' (known: local, aliyun, aws, azure, slurm)"},
        {MIN "provider: [aws, awz]\n",
         "job.yaml:3:17: provider[1]: unknown provider 'awz' (did you mean 'aws'? known: local, "
         "aliyun, aws, azure, slurm)"},
        {MIN "provider: [aws, aws]\n", "job.yaml:3:17: provider[1]: 'aws' is listed twice"},
        {MIN "provider: []\n", "job.yaml:3:11: provider: empty list; name at least one provider"},
        {MIN "provider: {aws: 1}\n",
         "job.yaml:3:11: provider: expected a string or a list of strings, got a mapping"},
        {MIN "provider: [aws, [azure]]\n",
         "job.yaml:3:17: provider[1]: expected a string, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_nodes(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "nodes: 1024\n");
    assert_int_equal(s->nodes, 1024);
    gpc_spec_free(s);
    s = load(MIN "nodes: '16'\n");
    assert_int_equal(s->nodes, 16);
    gpc_spec_free(s);
    static const err_case cases[] = {
        {MIN "nodes: two\n", "job.yaml:3:8: nodes: expected an integer >= 1, got 'two'"},
        {MIN "nodes: 0\n", "job.yaml:3:8: nodes: expected an integer >= 1, got '0'"},
        {MIN "nodes: -1\n", "job.yaml:3:8: nodes: expected an integer >= 1, got '-1'"},
        {MIN "nodes: 2.5\n", "job.yaml:3:8: nodes: expected an integer >= 1, got '2.5'"},
        {MIN "nodes: 1025\n", "job.yaml:3:8: nodes: at most 1024, got '1025'"},
        {MIN "nodes: 99999999999999999999999\n",
         "job.yaml:3:8: nodes: expected an integer >= 1, got '99999999999999999999999'"},
        {MIN "nodes: {n: 1}\n", "job.yaml:3:8: nodes: expected an integer >= 1, got a mapping"},
    };
    RUN_ERR_CASES(cases);
}

static void test_resources_gpu(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "resources:\n  gpu: A100:80GB:8\n");
    assert_int_equal(s->resources.n_gpus, 1);
    assert_string_equal(s->resources.gpus[0].model, "A100");
    gpc_spec_free(s);
    s = load(MIN "resources:\n  gpu: 8\n");
    assert_int_equal(s->resources.n_gpus, 1);
    assert_string_equal(s->resources.gpus[0].model, "");
    assert_true(s->resources.gpus[0].count.min == 8);
    gpc_spec_free(s);
    s = load(MIN "resources:\n  gpu: [H100:8, A100-80GB:8, 24GB..80GB:2]\n");
    assert_int_equal(s->resources.n_gpus, 3);
    assert_string_equal(s->resources.gpus[2].model, "");
    assert_true(s->resources.gpus[2].mem_gib.min == 24 && s->resources.gpus[2].mem_gib.max == 80);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "resources:\n  gpu: [H100:8, A100:0]\n",
         "job.yaml:4:17: resources.gpu[1]: GPU count must be at least 1 in 'A100:0'"},
        {MIN "resources:\n  gpu: [H100:8, A100:8:8:8]\n",
         "job.yaml:4:17: resources.gpu[1]: expected a GPU like A100-80GB:8, A100:80GB:8, H100:8, "
         "T4 or 24GB..80GB:2, got 'A100:8:8:8'"},
        {MIN "resources:\n  gpu: 0\n",
         "job.yaml:4:8: resources.gpu: GPU count must be at least 1 in '0'"},
        {MIN "resources:\n  gpu: {A100: 8}\n",
         "job.yaml:4:8: resources.gpu: expected a GPU like A100-80GB:8 or a list of them, "
         "got a mapping"},
        {MIN "resources:\n  gpu: [[A100]]\n",
         "job.yaml:4:9: resources.gpu[0]: expected a GPU like A100-80GB:8, got a sequence"},
        {MIN "resources: [gpu]\n", "job.yaml:3:12: resources: expected a mapping, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

/* Where each GPU request stands in the file (1-based line:column of its
 * node), and whether it is a list item: `validate` names an unknown model
 * by that place.  Columns counted by hand; the same as libyaml's document
 * loader gives for those nodes. */
static void expect_gpu_at(const gpc_spec *s, size_t i, unsigned line, unsigned col, int listed)
{
    const gpc_gpu_req *g = &s->resources.gpus[i];
    if (g->line != line || g->col != col || g->listed != listed)
        fail_msg("gpu[%zu]: want %u:%u listed %d, got %u:%u listed %d", i, line, col, listed,
                 g->line, g->col, g->listed);
}

static void test_resources_gpu_position(void **state)
{
    (void)state;
    /* a single value: line 4, after "  gpu: " */
    gpc_spec *s = load(MIN "resources:\n  gpu: A100\n");
    assert_int_equal(s->resources.n_gpus, 1);
    expect_gpu_at(s, 0, 4, 8, 0);
    gpc_spec_free(s);
    /* a block list: each item where its value starts, after "- " */
    s = load(MIN "resources:\n  gpu:\n    - A100:8\n    -   H100\n");
    assert_int_equal(s->resources.n_gpus, 2);
    expect_gpu_at(s, 0, 5, 7, 1);
    expect_gpu_at(s, 1, 6, 9, 1);
    gpc_spec_free(s);
    /* a flow list of one is still a list; a quoted item starts at its quote */
    s = load(MIN "resources:\n  gpu: [ \"T4\" ]\n");
    assert_int_equal(s->resources.n_gpus, 1);
    expect_gpu_at(s, 0, 4, 10, 1);
    gpc_spec_free(s);
    /* an alias stands where its anchored node is, the anchor included */
    s = load(MIN "resources:\n  gpu: [&big H100:8, T4, *big]\n");
    assert_int_equal(s->resources.n_gpus, 3);
    expect_gpu_at(s, 0, 4, 9, 1);
    expect_gpu_at(s, 1, 4, 22, 1);
    expect_gpu_at(s, 2, 4, 9, 1);
    gpc_spec_free(s);
    /* a spec written as JSON is read by the same loader and has places too */
    s = load("{\"name\": \"x\", \"run\": \"a\", \"resources\": {\"gpu\": \"A100\"}}\n");
    assert_int_equal(s->resources.n_gpus, 1);
    expect_gpu_at(s, 0, 1, 48, 0);
    gpc_spec_free(s);

    /* a request parsed on its own (offers --gpu) has no place */
    gpc_gpu_req g;
    gpc_error e;
    gpc_error_clear(&e);
    memset(&g, 0xff, sizeof(g));
    assert_int_equal(gpc_parse_gpu("--gpu", "T4", &g, &e), 0);
    assert_int_equal(g.line, 0);
    assert_int_equal(g.col, 0);
    assert_int_equal(g.listed, 0);
    free(g.model);
}

static void test_resources_cpus_memory(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "resources: {cpus: 32, memory: 256}\n");
    assert_true(s->resources.cpus.min == 32 && s->resources.cpus.max == 32);
    assert_true(s->resources.memory_gib.min == 256 && s->resources.memory_gib.max == 256);
    gpc_spec_free(s);
    s = load(MIN "resources: {cpus: 32+, memory: 256GB+}\n");
    assert_true(s->resources.cpus.min == 32 && s->resources.cpus.max == 0);
    assert_true(s->resources.memory_gib.min == 256 && s->resources.memory_gib.max == 0);
    gpc_spec_free(s);
    s = load(MIN "resources: {cpus: 8..64, memory: 512MB..2TB}\n");
    assert_true(s->resources.cpus.min == 8 && s->resources.cpus.max == 64);
    assert_true(s->resources.memory_gib.min == 0.5 && s->resources.memory_gib.max == 2048);
    gpc_spec_free(s);
    s = load(MIN "resources: {cpus: '..16', memory: 64GB..}\n");
    assert_true(s->resources.cpus.min == 0 && s->resources.cpus.max == 16);
    assert_true(s->resources.memory_gib.min == 64 && s->resources.memory_gib.max == 0);
    gpc_spec_free(s);

#define CPUS_BAD "expected a vCPU count like 8, 8+ or 4..16, got"
#define MEM_BAD "expected a size like 256GB, 256GB+ or 128GB..512GB, got"
    static const err_case cases[] = {
        {MIN "resources: {cpus: 0}\n", "job.yaml:3:19: resources.cpus: " CPUS_BAD " '0'"},
        {MIN "resources: {cpus: -4}\n", "job.yaml:3:19: resources.cpus: " CPUS_BAD " '-4'"},
        {MIN "resources: {cpus: 4.5}\n", "job.yaml:3:19: resources.cpus: " CPUS_BAD " '4.5'"},
        {MIN "resources: {cpus: 16..4}\n",
         "job.yaml:3:19: resources.cpus: empty range '16..4' (the minimum is above the maximum)"},
        {MIN "resources: {cpus: ..}\n", "job.yaml:3:19: resources.cpus: " CPUS_BAD " '..'"},
        {MIN "resources: {memory: 0GB}\n", "job.yaml:3:21: resources.memory: " MEM_BAD " '0GB'"},
        {MIN "resources: {memory: -8GB}\n",
         "job.yaml:3:21: resources.memory: " MEM_BAD " '-8GB'"},
        {MIN "resources: {memory: 2TB..1TB}\n",
         "job.yaml:3:21: resources.memory: empty range '2TB..1TB' (the minimum is above the "
         "maximum)"},
        {MIN "resources: {memory: [1]}\n",
         "job.yaml:3:21: resources.memory: " MEM_BAD " a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_resources_disk(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "resources: {disk: 500GB}\n");
    assert_true(s->resources.disk_gib == 500);
    assert_int_equal(s->resources.disk_tier, GPC_DISK_ANY);
    gpc_spec_free(s);
    s = load(MIN "resources: {disk: 500}\n");
    assert_true(s->resources.disk_gib == 500);
    gpc_spec_free(s);
    s = load(MIN "resources:\n  disk:\n    size: 2TB\n    tier: ssd\n    iops: 16000\n");
    assert_true(s->resources.disk_gib == 2048);
    assert_int_equal(s->resources.disk_tier, GPC_DISK_SSD);
    assert_int_equal(s->resources.disk_iops, 16000);
    gpc_spec_free(s);
    s = load(MIN "resources: {disk: {tier: standard}}\n");
    assert_true(s->resources.disk_gib == 0);
    assert_int_equal(s->resources.disk_tier, GPC_DISK_STANDARD);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "resources: {disk: 0}\n",
         "job.yaml:3:19: resources.disk: expected a positive size, got '0'"},
        {MIN "resources: {disk: -1TB}\n",
         "job.yaml:3:19: resources.disk: expected a positive size, got '-1TB'"},
        {MIN "resources: {disk: 1PB}\n",
         "job.yaml:3:19: resources.disk: unknown size unit 'PB' in '1PB' (use MB, GB or TB)"},
        {MIN "resources: {disk: {size: big}}\n",
         "job.yaml:3:26: resources.disk.size: expected a size like 80GB, 512MB or 2TB, got 'big'"},
        {MIN "resources: {disk: {tier: fast}}\n",
         "job.yaml:3:26: resources.disk.tier: expected standard, ssd or nvme, got 'fast'"},
        {MIN "resources: {disk: {tier: sdd}}\n",
         "job.yaml:3:26: resources.disk.tier: expected standard, ssd or nvme, got 'sdd' "
         "(did you mean 'ssd'?)"},
        {MIN "resources: {disk: {tier: any}}\n",
         "job.yaml:3:26: resources.disk.tier: expected standard, ssd or nvme, got 'any'"},
        {MIN "resources: {disk: {iops: 0}}\n",
         "job.yaml:3:26: resources.disk.iops: expected an integer >= 1, got '0'"},
        {MIN "resources: {disk: {iops: 5000000000}}\n",
         "job.yaml:3:26: resources.disk.iops: at most 4294967295, got '5000000000'"},
        {MIN "resources: {disk: [1]}\n",
         "job.yaml:3:19: resources.disk: expected a size like 500GB, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_resources_interconnect_instances(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        gpc_interconnect ic;
    } ics[] = {
        {"any", GPC_IC_ANY}, {"none", GPC_IC_NONE}, {"efa", GPC_IC_EFA},
        {"infiniband", GPC_IC_INFINIBAND}, {"erdma", GPC_IC_ERDMA}, {"rdma", GPC_IC_RDMA},
    };
    for (size_t i = 0; i < sizeof(ics) / sizeof(ics[0]); i++) {
        char yaml[128];
        snprintf(yaml, sizeof(yaml), MIN "resources: {interconnect: %s}\n", ics[i].name);
        gpc_spec *s = load(yaml);
        assert_int_equal(s->resources.interconnect, ics[i].ic);
        assert_string_equal(gpc_interconnect_name(ics[i].ic), ics[i].name);
        gpc_spec_free(s);
    }
    gpc_spec *s = load(MIN "resources: {instance_types: p4d.24xlarge}\n");
    assert_int_equal(s->resources.n_instance_types, 1);
    assert_string_equal(s->resources.instance_types[0], "p4d.24xlarge");
    gpc_spec_free(s);
    s = load(MIN "resources: {instance_types: [ecs.gn7i-c8g1.2xlarge, Standard_NC24ads_A100_v4]}\n");
    assert_int_equal(s->resources.n_instance_types, 2);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "resources: {interconnect: ib}\n",
         "job.yaml:3:27: resources.interconnect: expected any, none, efa, infiniband, erdma "
         "or rdma, got 'ib'"},
        {MIN "resources: {interconnect: infiniban}\n",
         "job.yaml:3:27: resources.interconnect: expected any, none, efa, infiniband, erdma "
         "or rdma, got 'infiniban' (did you mean 'infiniband'?)"},
        {MIN "resources: {instance_types: ['p4d 24xlarge']}\n",
         "job.yaml:3:30: resources.instance_types[0]: 'p4d 24xlarge' is not a valid name "
         "(letters, digits, '-', '_' and '.')"},
        {MIN "resources: {instance_types: ['']}\n",
         "job.yaml:3:30: resources.instance_types[0]: must not be empty"},
    };
    RUN_ERR_CASES(cases);
}

static void test_regions_zones(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "region: us-east-1\nzone: us-east-1a\n");
    assert_int_equal(s->n_regions, 1);
    assert_string_equal(s->regions[0], "us-east-1");
    assert_int_equal(s->n_zones, 1);
    assert_string_equal(s->zones[0], "us-east-1a");
    gpc_spec_free(s);
    s = load(MIN "regions: [cn-hangzhou, cn-beijing]\nzones: [1, 2]\n");
    assert_int_equal(s->n_regions, 2);
    assert_string_equal(s->regions[1], "cn-beijing");
    assert_int_equal(s->n_zones, 2);
    assert_string_equal(s->zones[0], "1");
    gpc_spec_free(s);
    s = load(MIN "regions: eastus\n");
    assert_int_equal(s->n_regions, 1);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "region: us-east-1\nregions: [us-west-2]\n",
         "job.yaml:4:1: 'regions' and 'region' are both set (first at line 3); use one"},
        {MIN "zones: [a]\nzone: b\n",
         "job.yaml:4:1: 'zone' and 'zones' are both set (first at line 3); use one"},
        {MIN "region: [us-east-1]\n",
         "job.yaml:3:9: region: expected a string, got a sequence (use 'regions' for a list)"},
        {MIN "regions: [us-east-1, us-east-1]\n",
         "job.yaml:3:22: regions[1]: 'us-east-1' is listed twice"},
        {MIN "regions: [a]\nregions: [b]\n", "job.yaml:4:1: duplicate key 'regions' (first at line 3)"},
        {MIN "region: us east\n",
         "job.yaml:3:9: region: 'us east' is not a valid name (letters, digits, '-', '_' and '.')"},
    };
    RUN_ERR_CASES(cases);
}

static void test_list_limit(void **state)
{
    (void)state;
    char *yaml = malloc(8192);
    assert_non_null(yaml);
    size_t n = (size_t)snprintf(yaml, 8192, MIN "zones: [");
    for (int i = 0; i < 257; i++)
        n += (size_t)snprintf(yaml + n, 8192 - n, "z%d,", i);
    snprintf(yaml + n - 1, 8192 - n + 1, "]\n");
    expect_error(yaml, "job.yaml:3:8: zones: at most 256 entries, got 257");
    /* 256 is fine */
    char *cut = strstr(yaml, ",z256]");
    assert_non_null(cut);
    strcpy(cut, "]\n");
    gpc_spec *s = load(yaml);
    assert_int_equal(s->n_zones, 256);
    gpc_spec_free(s);
    free(yaml);
}

static void test_spot(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "spot: true\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_SPOT);
    assert_int_equal(s->spot.head, GPC_SPOT_SPOT);
    gpc_spec_free(s);
    s = load(MIN "spot: false\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_ON_DEMAND);
    assert_int_equal(s->spot.head, GPC_SPOT_ON_DEMAND);
    gpc_spec_free(s);
    s = load(MIN "spot: auto\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_AUTO);
    assert_int_equal(s->spot.head, GPC_SPOT_AUTO);
    gpc_spec_free(s);
    s = load(MIN "spot: {policy: spot, max_price: 2.5}\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_SPOT);
    assert_int_equal(s->spot.head, GPC_SPOT_SPOT); /* head defaults to policy */
    assert_true(s->spot.max_price == 2.5);
    gpc_spec_free(s);
    s = load(MIN "spot: {policy: auto, max_price: 15, head: on-demand}\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_AUTO);
    assert_int_equal(s->spot.head, GPC_SPOT_ON_DEMAND);
    assert_true(s->spot.max_price == 15);
    gpc_spec_free(s);
    s = load(MIN "spot: {head: spot}\n");
    assert_int_equal(s->spot.policy, GPC_SPOT_ON_DEMAND);
    assert_int_equal(s->spot.head, GPC_SPOT_SPOT);
    gpc_spec_free(s);
    assert_string_equal(gpc_spot_policy_name(GPC_SPOT_ON_DEMAND), "on-demand");
    assert_string_equal(gpc_spot_policy_name(GPC_SPOT_SPOT), "spot");
    assert_string_equal(gpc_spot_policy_name(GPC_SPOT_AUTO), "auto");

    static const err_case cases[] = {
        {MIN "spot: {max_price: cheap}\n",
         "job.yaml:3:19: spot.max_price: expected a number, got 'cheap'"},
        {MIN "spot: {max_price: 0}\n",
         "job.yaml:3:19: spot.max_price: must be greater than 0, got '0'"},
        {MIN "spot: {max_price: -3}\n",
         "job.yaml:3:19: spot.max_price: must be greater than 0, got '-3'"},
        {MIN "spot: {max_price: $15}\n",
         "job.yaml:3:19: spot.max_price: expected a number, got '$15'"},
        {MIN "spot: {policy: on_demand}\n",
         "job.yaml:3:16: spot.policy: expected on-demand, spot or auto, got 'on_demand' "
         "(did you mean 'on-demand'?)"},
        {MIN "spot: {head: preemptible}\n",
         "job.yaml:3:14: spot.head: expected on-demand, spot or auto, got 'preemptible'"},
        {MIN "spot: yes\n",
         "job.yaml:3:7: spot: expected true, false, a policy (spot, on-demand, auto) or a "
         "mapping, got 'yes'"},
        {MIN "spot: 'true'\n",
         "job.yaml:3:7: spot: expected true, false, a policy (spot, on-demand, auto) or a "
         "mapping, got 'true'"},
        {MIN "spot: [spot]\n",
         "job.yaml:3:7: spot: expected true, false, a policy (spot, on-demand, auto) or a "
         "mapping, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

/* spot.zone_cooldown and spot.fallback_after: parsed, their defaults, in
 * the canonical JSON only when set (a spec without them keeps its hash),
 * and fallback_after refused with a policy other than auto, where it is
 * written. */
static void test_spot_recovery_fields(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "spot: {policy: auto, zone_cooldown: 1h30m, fallback_after: 3}\n");
    assert_int_equal(s->spot.zone_cooldown_set, 1);
    assert_int_equal(s->spot.zone_cooldown_s, 5400);
    assert_int_equal(gpc_spec_zone_cooldown_s(s), 5400);
    assert_int_equal(gpc_spec_fallback_after(s), 3);
    cJSON *j = gpc_spec_to_json(s);
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "spot"));
    assert_string_equal(text, "{\"policy\":\"auto\",\"max_price\":null,\"head\":\"auto\","
                              "\"zone_cooldown_s\":5400,\"fallback_after\":3}");
    cJSON_free(text);
    cJSON_Delete(j);
    gpc_spec_free(s);
    /* 0 disables the cooldown, and is set (so in the JSON) */
    s = load(MIN "spot: {policy: spot, zone_cooldown: 0}\n");
    assert_int_equal(s->spot.zone_cooldown_set, 1);
    assert_int_equal(gpc_spec_zone_cooldown_s(s), 0);
    assert_int_equal(gpc_spec_fallback_after(s), 0); /* not auto: never */
    j = gpc_spec_to_json(s);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "spot"));
    assert_string_equal(text, "{\"policy\":\"spot\",\"max_price\":null,\"head\":\"spot\","
                              "\"zone_cooldown_s\":0}");
    cJSON_free(text);
    cJSON_Delete(j);
    gpc_spec_free(s);
    s = load(MIN "spot: {zone_cooldown: 0m}\n");
    assert_int_equal(s->spot.zone_cooldown_set, 1);
    assert_int_equal(gpc_spec_zone_cooldown_s(s), 0);
    gpc_spec_free(s);
    /* not set: the defaults, and the JSON (so the hash) of before */
    s = load(MIN "spot: auto\n");
    assert_int_equal(s->spot.zone_cooldown_set, 0);
    assert_int_equal(gpc_spec_zone_cooldown_s(s), 1800);
    assert_int_equal(gpc_spec_fallback_after(s), 2);
    j = gpc_spec_to_json(s);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "spot"));
    assert_string_equal(text, "{\"policy\":\"auto\",\"max_price\":null,\"head\":\"auto\"}");
    cJSON_free(text);
    cJSON_Delete(j);
    gpc_spec_free(s);
    char a[65], b[65];
    hash_of(MIN "spot: auto\n", a);
    hash_of(MIN "spot: {policy: auto}\n", b);
    assert_string_equal(a, b);
    hash_of(MIN "spot: {policy: auto, fallback_after: 2}\n", b); /* written: counts */
    assert_string_not_equal(a, b);

    static const err_case cases[] = {
        {MIN "spot: {policy: spot, fallback_after: 2}\n",
         "job.yaml:3:38: spot.fallback_after: only policy auto falls back to on-demand, and "
         "spot.policy is spot: remove fallback_after or set policy: auto"},
        {MIN "spot: {fallback_after: 3}\n",
         "job.yaml:3:24: spot.fallback_after: only policy auto falls back to on-demand, and "
         "spot.policy is on-demand: remove fallback_after or set policy: auto"},
        {MIN "spot: {policy: auto, fallback_after: 0}\n",
         "job.yaml:3:38: spot.fallback_after: expected an integer >= 1, got '0'"},
        {MIN "spot: {policy: auto, fallback_after: 10001}\n",
         "job.yaml:3:38: spot.fallback_after: at most 10000, got '10001'"},
        {MIN "spot: {zone_cooldown: soon}\n",
         "job.yaml:3:23: spot.zone_cooldown: expected a duration like 90s, 30m, 72h, 1d or "
         "1h30m, got 'soon'"},
        {MIN "spot: {zone_cooldown: 0x}\n",
         "job.yaml:3:23: spot.zone_cooldown: expected a duration like 90s, 30m, 72h, 1d or "
         "1h30m, got '0x'"},
        {MIN "spot: {zone_cooldown: -5m}\n",
         "job.yaml:3:23: spot.zone_cooldown: expected a positive duration, got '-5m'"},
    };
    RUN_ERR_CASES(cases);
}

static void test_budget_lifecycle(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "budget: {max_hourly: 200, max_total: 5000.50}\n"
                       "lifecycle: {max_duration: 72h, idle_timeout: 30m}\n");
    assert_true(s->budget.max_hourly == 200);
    assert_true(s->budget.max_total == 5000.5);
    assert_int_equal(s->lifecycle.max_duration_s, 259200);
    assert_int_equal(s->lifecycle.idle_timeout_s, 1800);
    gpc_spec_free(s);
    s = load(MIN "lifecycle: {max_duration: 3600}\n");
    assert_int_equal(s->lifecycle.max_duration_s, 3600);
    assert_int_equal(s->lifecycle.max_duration_none, 0);
    gpc_spec_free(s);
    /* none: no end of the node's own (spec.h), quoted or not */
    s = load(MIN "lifecycle: {max_duration: none}\n");
    assert_int_equal(s->lifecycle.max_duration_s, 0);
    assert_int_equal(s->lifecycle.max_duration_none, 1);
    gpc_spec_free(s);
    s = load(MIN "lifecycle:\n  max_duration: 'none'\n");
    assert_int_equal(s->lifecycle.max_duration_none, 1);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "budget: {max_hourly: 0}\n",
         "job.yaml:3:22: budget.max_hourly: must be greater than 0, got '0'"},
        {MIN "budget: {max_total: lots}\n",
         "job.yaml:3:21: budget.max_total: expected a number, got 'lots'"},
        {MIN "budget: 100\n", "job.yaml:3:9: budget: expected a mapping, got '100'"},
        {MIN "lifecycle: {max_duration: 3 days}\n",
         "job.yaml:3:27: lifecycle.max_duration: expected a duration like 90s, 30m, 72h, 1d or "
         "1h30m, got '3 days'"},
        /* one spelling of "no end": none; others said at their place */
        {MIN "lifecycle: {max_duration: off}\n",
         "job.yaml:3:27: lifecycle.max_duration: expected a duration like 30m or 72h, or "
         "none (no end of the node's own), got 'off'"},
        {MIN "lifecycle:\n  max_duration: None\n",
         "job.yaml:4:17: lifecycle.max_duration: expected a duration like 30m or 72h, or "
         "none (no end of the node's own), got 'None'"},
        {MIN "lifecycle: {max_duration: never}\n",
         "job.yaml:3:27: lifecycle.max_duration: expected a duration like 30m or 72h, or "
         "none (no end of the node's own), got 'never'"},
        {MIN "lifecycle: {max_duration: 0}\n",
         "job.yaml:3:27: lifecycle.max_duration: expected a positive duration, got '0'"},
        {MIN "lifecycle: {idle_timeout: none}\n",
         "job.yaml:3:27: lifecycle.idle_timeout: expected a duration like 90s, 30m, 72h, 1d or "
         "1h30m, got 'none'"},
        {MIN "lifecycle: {idle_timeout: 0}\n",
         "job.yaml:3:27: lifecycle.idle_timeout: expected a positive duration, got '0'"},
        {MIN "lifecycle: {idle_timeout: [1]}\n",
         "job.yaml:3:27: lifecycle.idle_timeout: expected a duration like 30m or 72h, "
         "got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_env(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "env:\n  _X: 1\n  b2: two\n  NCCL_DEBUG: WARN\n");
    assert_int_equal(s->n_env, 3);
    assert_string_equal(s->env[0].name, "_X");
    assert_string_equal(s->env[0].value, "1");
    assert_string_equal(s->env[1].name, "b2");
    assert_string_equal(s->env[2].name, "NCCL_DEBUG");
    gpc_spec_free(s);
    s = load(MIN "env: {}\n");
    assert_int_equal(s->n_env, 0);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "env:\n  A: ~\n", "job.yaml:4:3: env.A: null value; quote it if you mean the text"},
        {MIN "env:\n  A: null\n", "job.yaml:4:3: env.A: null value; quote it if you mean the text"},
        {MIN "env:\n  A:\n  B: 1\n",
         "job.yaml:4:3: env.A: null value; quote it if you mean the text"},
        {MIN "env:\n  A: {b: 1}\n", "job.yaml:4:6: env.A: expected a scalar value, got a mapping"},
        {MIN "env:\n  A: [1, 2]\n", "job.yaml:4:6: env.A: expected a scalar value, got a sequence"},
        {MIN "env:\n  1A: x\n",
         "job.yaml:4:3: env: invalid variable name '1A' (letters, digits and '_', not starting "
         "with a digit)"},
        {MIN "env:\n  MY-VAR: x\n",
         "job.yaml:4:3: env: invalid variable name 'MY-VAR' (letters, digits and '_', not "
         "starting with a digit)"},
        {MIN "env:\n  '': x\n",
         "job.yaml:4:3: env: invalid variable name '' (letters, digits and '_', not starting "
         "with a digit)"},
        {MIN "env:\n  GPUCTL_RANK: 3\n",
         "job.yaml:4:3: env.GPUCTL_RANK: names starting with GPUCTL_ are reserved"},
        {MIN "env:\n  - A=1\n", "job.yaml:4:3: env: expected a mapping of NAME: value, got a sequence"},
        {MIN "env:\n  ? [A]\n  : 1\n", "job.yaml:4:5: env: expected a string key, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_labels(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "labels:\n  team: vision\n  cost.center_1-a: 0042\n  9x: ''\n");
    assert_int_equal(s->n_labels, 3);
    assert_string_equal(s->labels[1].key, "cost.center_1-a");
    assert_string_equal(s->labels[1].value, "0042");
    assert_string_equal(s->labels[2].value, "");
    gpc_spec_free(s);

#define LABEL_RULE "(lower-case letters, digits, '-', '_' and '.', starting with a letter or " \
                   "digit, at most 63 characters)"
    static const err_case cases[] = {
        {MIN "labels: {Team: x}\n", "job.yaml:3:10: labels: invalid label key 'Team' " LABEL_RULE},
        {MIN "labels: {-x: x}\n", "job.yaml:3:10: labels: invalid label key '-x' " LABEL_RULE},
        {MIN "labels: {team: ~}\n",
         "job.yaml:3:10: labels.team: null value; quote it if you mean the text"},
        {MIN "labels: {team: [a]}\n",
         "job.yaml:3:16: labels.team: expected a scalar value, got a sequence"},
        {MIN "labels: [a]\n",
         "job.yaml:3:9: labels: expected a mapping of key: value, got a sequence"},
    };
    RUN_ERR_CASES(cases);
}

static void test_paths_image_setup(void **state)
{
    (void)state;
    gpc_spec *s = load(MIN "image: ami-0123456789abcdef0\nworkdir: .\ncheckpoint_dir: /mnt/ckpt\n"
                       "setup: >\n  pip install\n  -r requirements.txt\n");
    assert_string_equal(s->image, "ami-0123456789abcdef0");
    assert_string_equal(s->workdir, ".");
    assert_string_equal(s->checkpoint_dir, "/mnt/ckpt");
    assert_string_equal(s->setup, "pip install -r requirements.txt\n");
    gpc_spec_free(s);

    static const err_case cases[] = {
        {MIN "image: ''\n", "job.yaml:3:8: image: must not be empty"},
        {MIN "workdir: ''\n", "job.yaml:3:10: workdir: must not be empty"},
        {MIN "checkpoint_dir: [a]\n",
         "job.yaml:3:17: checkpoint_dir: expected a string, got a sequence"},
        {MIN "setup: {a: 1}\n", "job.yaml:3:8: setup: expected a string, got a mapping"},
    };
    RUN_ERR_CASES(cases);
}

static void test_run(void **state)
{
    (void)state;
    gpc_spec *s = load("name: x\nrun: |\n  torchrun train.py \\\n    --epochs 10\n");
    assert_string_equal(s->run.command, "torchrun train.py \\\n  --epochs 10\n");
    assert_int_equal(s->run.nproc_per_node, 0);
    assert_int_equal(s->run.rdzv_port, 0);
    gpc_spec_free(s);
    s = load("name: x\nrun: {command: python t.py, nproc_per_node: auto, rdzv_port: 1024}\n");
    assert_string_equal(s->run.command, "python t.py");
    assert_int_equal(s->run.nproc_per_node, 0);
    assert_int_equal(s->run.rdzv_port, 1024);
    gpc_spec_free(s);
    s = load("name: x\nrun: {command: a, nproc_per_node: 64, rdzv_port: 65535}\n");
    assert_int_equal(s->run.nproc_per_node, 64);
    assert_int_equal(s->run.rdzv_port, 65535);
    gpc_spec_free(s);

    static const err_case cases[] = {
        {"name: x\nrun: ''\n", "job.yaml:2:6: run: the command must not be empty"},
        {"name: x\nrun: |\n  \n\n", "job.yaml:2:6: run: the command must not be empty"},
        {"name: x\nrun:\n", "job.yaml:2:5: run: expected a value, got null"},
        {"name: x\nrun: [a]\n", "job.yaml:2:6: run: expected a string, got a sequence"},
        {"name: x\nrun: {nproc_per_node: 2}\n", "job.yaml:2:6: run: missing required key 'command'"},
        {"name: x\nrun: {command: ' '}\n", "job.yaml:2:16: run.command: the command must not be empty"},
        {"name: x\nrun: {command: a, nproc_per_node: 0}\n",
         "job.yaml:2:35: run.nproc_per_node: expected 'auto' or an integer from 1 to 64, got '0'"},
        {"name: x\nrun: {command: a, nproc_per_node: 65}\n",
         "job.yaml:2:35: run.nproc_per_node: expected 'auto' or an integer from 1 to 64, got '65'"},
        {"name: x\nrun: {command: a, nproc_per_node: all}\n",
         "job.yaml:2:35: run.nproc_per_node: expected 'auto' or an integer from 1 to 64, "
         "got 'all'"},
        {"name: x\nrun: {command: a, rdzv_port: 80}\n",
         "job.yaml:2:30: run.rdzv_port: expected a port from 1024 to 65535, got '80'"},
        {"name: x\nrun: {command: a, rdzv_port: 70000}\n",
         "job.yaml:2:30: run.rdzv_port: expected a port from 1024 to 65535, got '70000'"},
    };
    RUN_ERR_CASES(cases);
}

/* ------------------------------------------------------------------ */
/* canonical JSON and hash                                            */

static void test_to_json(void **state)
{
    (void)state;
    static const char *const top[] = {
        "spec_version", "name", "provider", "nodes", "resources", "regions", "zones", "spot",
        "budget", "lifecycle", "image", "env", "labels", "workdir", "checkpoint_dir", "setup",
        "run", NULL};
    gpc_spec *s = load("name: x\nrun: a\nenv: {Z: 1, A: 2}\nresources: {gpu: H100:8}\n");
    cJSON *j = gpc_spec_to_json(s);
    assert_non_null(j);
    size_t i = 0;
    for (cJSON *c = j->child; c; c = c->next, i++) {
        assert_non_null(top[i]);
        assert_string_equal(c->string, top[i]);
    }
    assert_null(top[i]);
    assert_int_equal(cJSON_GetObjectItem(j, "spec_version")->valueint, 1);
    assert_null(cJSON_GetObjectItem(j, "source"));
    assert_null(cJSON_GetObjectItem(j, "base_dir"));

    char *text = cJSON_PrintUnformatted(j);
    assert_string_equal(
        text,
        "{\"spec_version\":1,\"name\":\"x\",\"provider\":[\"local\"],\"nodes\":1,"
        "\"resources\":{\"gpu\":[{\"model\":\"H100\",\"memory_gib\":{\"min\":null,\"max\":null},"
        "\"count\":{\"min\":8,\"max\":8}}],\"cpus\":{\"min\":null,\"max\":null},"
        "\"memory_gib\":{\"min\":null,\"max\":null},"
        "\"disk\":{\"size_gib\":null,\"tier\":\"any\",\"iops\":null},\"interconnect\":\"any\","
        "\"instance_types\":[]},\"regions\":[],\"zones\":[],"
        "\"spot\":{\"policy\":\"on-demand\",\"max_price\":null,\"head\":\"on-demand\"},"
        "\"budget\":{\"max_hourly\":null,\"max_total\":null},"
        "\"lifecycle\":{\"max_duration_s\":null,\"idle_timeout_s\":null},\"image\":\"pytorch\","
        "\"env\":{\"A\":\"2\",\"Z\":\"1\"},\"labels\":{},\"workdir\":null,\"checkpoint_dir\":null,"
        "\"setup\":null,\"run\":{\"command\":\"a\",\"nproc_per_node\":\"auto\","
        "\"rdzv_port\":null}}");
    cJSON_free(text);
    cJSON_Delete(j);
    gpc_spec_free(s);
    assert_null(gpc_spec_to_json(NULL));
}

/* A spec saved on Windows: the text a node executes arrives without the
 * BOM and the CR of CR LF (also where YAML escapes put them), a note says
 * so per field with file:line, and the hash is that of the LF spec. */
static void test_exec_text_windows(void **state)
{
    (void)state;
    static const char lf[] = "name: w\nsetup: |\n  echo a\n  echo b\nrun: \"python t.py\\n\"\n";
    static const char crlf[] = "\xef\xbb\xbfname: w\r\nsetup: |\r\n  echo a\r\n  echo b\r\n"
                               "run: \"\\ufeffpython t.py\\r\\n\"\r\n";
    gpc_spec *a = load(lf), *b = load(crlf);
    assert_int_equal(a->n_notes, 0);
    assert_string_equal(b->setup, "echo a\necho b\n");
    assert_string_equal(b->run.command, "python t.py\n");
    assert_int_equal(b->n_notes, 2);
    assert_string_equal(b->notes[0], "job.yaml:2: setup: read CR LF line ends as LF (saved on "
                                     "Windows?); bash runs the text without them");
    assert_string_equal(b->notes[1], "job.yaml:5: run: removed 1 CR of CR LF line ends and "
                                     "removed 1 U+FEFF (byte order mark) (saved on Windows?); "
                                     "bash runs the text without them");
    char ha[65], hb[65];
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_hash(a, ha, &e), 0);
    assert_int_equal(gpc_spec_hash(b, hb, &e), 0);
    assert_string_equal(ha, hb);
    gpc_spec_free(a);
    gpc_spec_free(b);

    /* LF file, CRs inside the text only, a lone CR kept; run as a mapping */
    b = load("name: w\nsetup: \"a\\r\\nb\\rc\\r\"\nrun:\n  command: \"x\\ufeff\\ufeff\"\n");
    assert_string_equal(b->setup, "a\nb\rc");
    assert_string_equal(b->run.command, "x");
    assert_int_equal(b->n_notes, 2);
    assert_string_equal(b->notes[0], "job.yaml:2: setup: removed 2 CR of CR LF line ends "
                                     "(saved on Windows?); bash runs the text without them");
    assert_string_equal(b->notes[1], "job.yaml:4: run.command: removed 2 U+FEFF (byte order "
                                     "mark) (saved on Windows?); bash runs the text without them");
    gpc_spec_free(b);
}

static void test_hash_same_meaning(void **state)
{
    (void)state;
    char a[65], b[65], c[65];
    hash_of("name: det3d\n"
            "provider: aws\n"
            "nodes: 2\n"
            "resources:\n"
            "  gpu: A100-80GB:8\n"
            "  memory: 1TB+\n"
            "spot: true\n"
            "env:\n"
            "  A: '1'\n"
            "  B: two\n"
            "run: python train.py\n",
            a);
    hash_of("# the same job, written differently\n"
            "run:\n"
            "  command: \"python train.py\"\n"
            "  nproc_per_node: auto    # the default, spelled out\n"
            "env: {B: \"two\", A: 1}\n"
            "spot: {policy: spot}\n"
            "resources: {memory: 1024GiB+, gpu: [\"A100:80GB:8\"]}\n"
            "nodes: '2'\n"
            "provider: [aws]\n"
            "name: 'det3d'\n"
            "image: pytorch\n",
            b);
    assert_string_equal(a, b);
    hash_of("name: det3d\n"
            "provider: aws\n"
            "nodes: 2\n"
            "resources:\n"
            "  gpu: A100-80GB:8\n"
            "  memory: 1TB+\n"
            "spot: true\n"
            "env:\n"
            "  A: '1'\n"
            "  B: three\n"
            "run: python train.py\n",
            c);
    assert_string_not_equal(a, c);
}

static void test_hash_changes(void **state)
{
    (void)state;
    char base[65], h[65];
    hash_of(MIN, base);
    static const char *const variants[] = {
        MIN "nodes: 2\n",
        MIN "env: {A: '0755'}\n",
        MIN "env: {A: '755'}\n",
        MIN "provider: [local, aws]\n",
        MIN "spot: {policy: spot, head: on-demand}\n",
        MIN "setup: ''\n",
        "name: y\nrun: a\n",
        "name: x\nrun: 'a '\n",
        /* an explicit port is not the same as "provider default" */
        "name: x\nrun: {command: a, rdzv_port: 29400}\n",
    };
    char seen[sizeof(variants) / sizeof(variants[0])][65];
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        hash_of(variants[i], h);
        assert_string_not_equal(h, base);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(h, seen[j]);
        memcpy(seen[i], h, sizeof(h));
    }
    /* source and base_dir do not count. */
    gpc_spec *s = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_spec_load_string("other.yaml", "/elsewhere", MIN, strlen(MIN), &s, &e), 0);
    assert_string_equal(s->base_dir, "/elsewhere");
    assert_int_equal(gpc_spec_hash(s, h, &e), 0);
    assert_string_equal(h, base);
    gpc_spec_free(s);
}

/* The hash of an ordinary spec is what earlier releases recorded (the
 * default end is no part of the canonical form); `max_duration: none` is.
 * Hand-checked: sha256 of the canonical JSON text (test_to_json's form),
 * with "max_duration_s":null, and with "max_duration_s":"none". */
static void test_hash_vectors(void **state)
{
    (void)state;
    char h[65];
    hash_of(MIN, h);
    assert_string_equal(h, "851b2c3bacdc945a4ec9c10082b5d990083ed1944ccf4292f79a6391ffec8516");
    hash_of(MIN "lifecycle: {max_duration: none}\n", h);
    assert_string_equal(h, "4e24c275bbde0b7b60737cbddbc7a72abcb94a67a8e0872e9d67986e39d5d963");
    gpc_spec *s = load(MIN "lifecycle: {max_duration: none}\n");
    cJSON *j = gpc_spec_to_json(s);
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "lifecycle"));
    assert_string_equal(text, "{\"max_duration_s\":\"none\",\"idle_timeout_s\":null}");
    cJSON_free(text);
    cJSON_Delete(j);
    gpc_spec_free(s);
}

/* A node's end (gpc_spec_node_end): the spec's max_duration, else the
 * default 72 h where no budget end bounds the node, the budget end when
 * sooner; none: only the budget's.  0.02 USD at 24 USD/hour: 3 s;
 * 100 USD at 10 USD/hour: 36000 s; 1e-9 USD: at least 1 s. */
static void test_node_end(void **state)
{
    (void)state;
    static const struct {
        uint64_t md;
        int none;
        double total, hourly;
        uint64_t want_md, want_budget, want_end;
        gpc_end_why why;
    } cases[] = {
        {0, 0, 0, 0, 259200, 0, 259200, GPC_END_DEFAULT},
        {0, 0, 0, 24, 259200, 0, 259200, GPC_END_DEFAULT},
        {7200, 0, 0, 24, 7200, 0, 7200, GPC_END_MAX_DURATION},
        {0, 1, 0, 24, 0, 0, 0, GPC_END_NONE},
        {0, 0, 0.02, 24, 0, 3, 3, GPC_END_BUDGET},
        {0, 0, 100, 10, 0, 36000, 36000, GPC_END_BUDGET},
        {0, 0, 0.02, 0, 259200, 0, 259200, GPC_END_DEFAULT},
        {0, 1, 0.02, 24, 0, 3, 3, GPC_END_BUDGET},
        {2, 0, 0.02, 24, 2, 3, 2, GPC_END_MAX_DURATION},
        {3, 0, 0.02, 24, 3, 3, 3, GPC_END_MAX_DURATION},
        {7200, 0, 100, 10, 7200, 36000, 7200, GPC_END_MAX_DURATION},
        {0, 0, 1e-9, 10, 0, 1, 1, GPC_END_BUDGET},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpc_spec s;
        memset(&s, 0, sizeof(s));
        s.lifecycle.max_duration_s = cases[i].md;
        s.lifecycle.max_duration_none = cases[i].none;
        s.budget.max_total = cases[i].total;
        s.lifecycle.idle_timeout_s = 60; /* no end of a hung job: never counts */
        gpc_node_end e;
        gpc_spec_node_end(&s, cases[i].hourly, &e);
        if (e.max_duration_s != cases[i].want_md || e.budget_s != cases[i].want_budget ||
            e.end_s != cases[i].want_end || e.why != cases[i].why)
            fail_msg("case %zu: got %llu %llu %llu %d", i, (unsigned long long)e.max_duration_s,
                     (unsigned long long)e.budget_s, (unsigned long long)e.end_s, (int)e.why);
    }
    assert_int_equal(GPC_SPEC_DEFAULT_MAX_DURATION_S, 259200);
}

static void test_enum_names(void **state)
{
    (void)state;
    assert_string_equal(gpc_disk_tier_name(GPC_DISK_ANY), "any");
    assert_string_equal(gpc_disk_tier_name(GPC_DISK_STANDARD), "standard");
    assert_string_equal(gpc_disk_tier_name(GPC_DISK_SSD), "ssd");
    assert_string_equal(gpc_disk_tier_name(GPC_DISK_NVME), "nvme");
    assert_string_equal(gpc_interconnect_name((gpc_interconnect)99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_full_fixture),
        cmocka_unit_test(test_load_file_paths),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_positions_are_one_based),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_tabs_in_indentation),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_documents_and_top_level),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_strings_byte_exact),
        cmocka_unit_test(test_crlf_input),
        cmocka_unit_test(test_nul_in_string),
        cmocka_unit_test(test_null_means_default),
        cmocka_unit_test(test_aliases_resolve),
        cmocka_unit_test(test_anchor_limit),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_bombs_at_size_limit),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_parse_gpu),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_size_upper_bound),
        cmocka_unit_test(test_provider),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_resources_gpu),
        cmocka_unit_test(test_resources_gpu_position),
        cmocka_unit_test(test_resources_cpus_memory),
        cmocka_unit_test(test_resources_disk),
        cmocka_unit_test(test_resources_interconnect_instances),
        cmocka_unit_test(test_regions_zones),
        cmocka_unit_test(test_list_limit),
        cmocka_unit_test(test_spot),
        cmocka_unit_test(test_budget_lifecycle),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_paths_image_setup),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_to_json),
        cmocka_unit_test(test_exec_text_windows),
        cmocka_unit_test(test_hash_same_meaning),
        cmocka_unit_test(test_hash_changes),
        cmocka_unit_test(test_hash_vectors),
        cmocka_unit_test(test_node_end),
        cmocka_unit_test(test_spot_recovery_fields),
        cmocka_unit_test(test_enum_names),
    };
    return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
