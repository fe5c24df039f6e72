/* test_render.c - node bootstrap and user-data rendering (src/engine/render.c,
 * templates/bootstrap.sh, templates/cloud-config.yaml, providers/NAME/node.sh).
 *
 * Besides string checks, the rendered scripts are run: bash -n, shellcheck,
 * a round trip of hostile env values through bash, and whole bootstrap runs
 * on the local flavour with stub torchrun / python3 / nvidia-smi on PATH.
 * The rendered user-data goes through PyYAML and `cloud-init schema`. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuctl/buf.h"
#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static char tmp_root[64]; /* mkdtemp directory for the whole group */

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuctl-test-render-XXXXXX");
    return mkdtemp(tmp_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    gpc_error e;
    gpc_error_clear(&e);
    return gpc_rm_rf(tmp_root, &e);
}

/* snprintf into buf, failing the test when it does not fit. */
static void fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int k = vsnprintf(buf, n, f, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < n);
}

/* A fresh directory tmp_root/name. */
static void mkdir_in(char *out, size_t n, const char *name)
{
    fmt(out, n, "%s/%s", tmp_root, name);
    assert_int_equal(mkdir(out, 0700), 0);
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

/* The whole file, or NULL when it is missing. */
static char *slurp(const char *path, size_t *len)
{
    char *out = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_read_file(path, 8u << 20, &out, &n, &e) != 0)
        return NULL;
    if (len)
        *len = n;
    return out;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Run a shell command line; its exit status, or -1. */
static int sh(const char *f, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *f, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, f);
    int k = vsnprintf(cmd, sizeof(cmd), f, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < sizeof(cmd));
    int st = system(cmd);
    return (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

static int have(const char *check)
{
    return sh("%s >/dev/null 2>&1", check) == 0;
}

static void base_spec(gpc_spec *s)
{
    memset(s, 0, sizeof(*s));
    s->name = "demo";
    s->nodes = 2;
    s->run.command = "python3 train.py --epochs 2";
}

static gpc_node_ctx base_node(void)
{
    gpc_node_ctx n = {
        .cluster = "demo", .cluster_id = "demo-0123abcd", .rank = 0, .nnodes = 2,
        .head_addr = NULL, .rdzv_port = 29400, .workdir = NULL, .checkpoint_dir = NULL,
    };
    return n;
}

/* noinline: inlined, gcc 12 -O2 takes the returned heap pointer for one
 * into this frame (a false -Wdangling-pointer) */
__attribute__((noinline)) static char *render_boot(const gpc_spec *s, const gpc_node_ctx *n,
                                                   const char *prov)
{
    char *out = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_render_bootstrap(s, n, gpc_provider_find(prov)->userdata, &out, &e);
    if (rc)
        fail_msg("render failed: %s", e.msg);
    return out;
}

static char *render_ud(const gpc_spec *s, const gpc_node_ctx *n, const char *prov)
{
    char *out = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_render_userdata(s, n, gpc_provider_find(prov)->userdata, &out, &e);
    if (rc)
        fail_msg("render failed: %s", e.msg);
    return out;
}

__attribute__((noinline)) static char *render_with(const gpc_spec *s, const gpc_node_ctx *n,
                                                   const gpc_userdata_rules *rules)
{
    char *out = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_render_bootstrap(s, n, rules, &out, &e))
        fail_msg("render failed: %s", e.msg);
    return out;
}

/* The message of a render that must fail with GPC_ERR_RENDER. */
static const char *render_error(const gpc_spec *s, const gpc_node_ctx *n,
                                const gpc_userdata_rules *rules)
{
    static gpc_error e;
    char *out = NULL;
    gpc_error_clear(&e);
    int rc = gpc_render_bootstrap(s, n, rules, &out, &e);
    if (rc != GPC_ERR_RENDER)
        fail_msg("render gave %d, want GPC_ERR_RENDER", rc);
    assert_null(out);
    return e.msg;
}

/*
 * A node script with every function of the contract, for the rank and
 * rendezvous sources no built-in provider uses: the node's rank and the
 * head's address come from STUB_NODE_RANK and STUB_HEAD_ADDR ("fail":
 * the function says why and fails).
 */
static const char mode_script[] =
    "## a test's node script\n"
    "gpuctl_md_machine=0\n"
    "gpuctl_md_private_ip() {\n"
    "  printf '%s\\n' 127.0.0.1\n"
    "}\n"
    "##if RANK_FROM=launch\n"
    "gpuctl_md_launch_index() {\n"
    "  printf '%s\\n' \"${STUB_LAUNCH_INDEX:-0}\"\n"
    "}\n"
    "##endif\n"
    "##if RANK_FROM=scheduler\n"
    "gpuctl_md_node_rank() {\n"
    "  if [ \"${STUB_NODE_RANK:-}\" = fail ]; then\n"
    "    gpuctl_say 'error: no rank from the test scheduler' >&2\n"
    "    return 1\n"
    "  fi\n"
    "  printf '%s\\n' \"${STUB_NODE_RANK:-}\"\n"
    "}\n"
    "##endif\n"
    "##if HEAD_FROM=node\n"
    "gpuctl_md_head_addr() {\n"
    "  if [ \"${STUB_HEAD_ADDR:-}\" = fail ]; then\n"
    "    gpuctl_say 'error: no head from the test scheduler' >&2\n"
    "    return 1\n"
    "  fi\n"
    "  printf '%s\\n' \"${STUB_HEAD_ADDR:-}\"\n"
    "}\n"
    "##endif\n";
static const gpc_userdata_rules mode_rules = {"modes", 0, 0, 0, mode_script, 0};

/* The modes a node can be rendered in: rank source, rendezvous source,
 * rank, head address. */
typedef struct mode {
    gpc_rank_from rank_from;
    gpc_rdzv_from rdzv_from;
    uint32_t rank;
    const char *head;
} mode;

static const mode modes[] = {
    {GPC_RANK_ENGINE, GPC_RDZV_HEAD_IP, 0, NULL},
    {GPC_RANK_ENGINE, GPC_RDZV_NAME, 0, "head-0.train.svc.cluster.local"},
    {GPC_RANK_ENGINE, GPC_RDZV_ON_NODE, 1, NULL},
    {GPC_RANK_LAUNCH_INDEX, GPC_RDZV_HEAD_IP, 1, "10.0.0.1"},
    {GPC_RANK_LAUNCH_INDEX, GPC_RDZV_NAME, 0, "head.example"},
    {GPC_RANK_SCHEDULER, GPC_RDZV_HEAD_IP, 0, "10.0.0.1"},
    {GPC_RANK_SCHEDULER, GPC_RDZV_NAME, 0, "head.example"},
    {GPC_RANK_SCHEDULER, GPC_RDZV_ON_NODE, 0, NULL},
    {GPC_RANK_RENDEZVOUS, GPC_RDZV_HEAD_IP, 1, "fd00::5"},
    {GPC_RANK_RENDEZVOUS, GPC_RDZV_NAME, 1, "10.0.0.1"},
    {GPC_RANK_RENDEZVOUS, GPC_RDZV_ON_NODE, 1, NULL},
};
#define N_MODES (sizeof(modes) / sizeof(modes[0]))

static gpc_node_ctx mode_node(const mode *m)
{
    gpc_node_ctx n = {
        .cluster = "demo", .cluster_id = "demo-0123abcd", .rank = m->rank, .nnodes = 3,
        .head_addr = m->head, .rdzv_port = 29400, .rank_from = m->rank_from,
        .rdzv_from = m->rdzv_from,
    };
    return n;
}

/* The value of NAME in NUL-separated NAME=VALUE records, or NULL. */
static const char *env_get(const char *env, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        const char *rec = env + i;
        size_t rl = strnlen(rec, len - i);
        if (rl > nl && memcmp(rec, name, nl) == 0 && rec[nl] == '=') {
            *vlen = rl - nl - 1;
            return rec + nl + 1;
        }
        i += rl + 1;
    }
    return NULL;
}

static void assert_env(const char *env, size_t len, const char *name, const char *want)
{
    size_t vl = 0;
    const char *v = env_get(env, len, name, &vl);
    if (!want) {
        if (v)
            fail_msg("%s is set to '%.*s', want unset", name, (int)vl, v);
        return;
    }
    if (!v)
        fail_msg("%s is not set, want '%s'", name, want);
    if (vl != strlen(want) || memcmp(v, want, vl) != 0)
        fail_msg("%s is '%.*s', want '%s'", name, (int)vl, v, want);
}

/* data (len bytes) is exactly the NUL-terminated list want[0..n). */
static void assert_nul_list(const char *data, size_t len, const char *const *want, size_t n)
{
    size_t i = 0, k = 0;
    for (; k < n; k++) {
        size_t wl = strlen(want[k]);
        if (i + wl + 1 > len || memcmp(data + i, want[k], wl) != 0 || data[i + wl] != '\0')
            fail_msg("item %zu: got '%.*s', want '%s'", k, (int)strnlen(data + i, len - i),
                     i < len ? data + i : "", want[k]);
        i += wl + 1;
    }
    assert_int_equal(i, len);
}

/* Does the NUL-separated list hold the item? */
static int nul_list_has(const char *data, size_t len, const char *item)
{
    for (size_t i = 0; data && i < len; i += strnlen(data + i, len - i) + 1)
        if (strcmp(data + i, item) == 0)
            return 1;
    return 0;
}

/* Is every byte of s (n bytes) well-formed, printable UTF-8 with no CR? */
static int clean_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
            return 0;
        if (c >= 0x80) {
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            if (len == 0 || c > 0xf4 || i + len > n)
                return 0;
            for (size_t k = 1; k < len; k++)
                if (((unsigned char)s[i + k] & 0xc0) != 0x80)
                    return 0;
            if (len == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
                return 0; /* C1 controls */
            i += len - 1;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Hostile env values                                                  */

#define N_HOSTILE 30
static char hostile_buf[N_HOSTILE][160];
static const char *hostile[N_HOSTILE];

/* Values that must arrive byte for byte and never execute.  The ones that
 * would run `touch` point it into `dir`. */
static void make_hostile(const char *dir)
{
    static const char *const fixed[] = {
        "it's",
        "say \"hi\" 'there'",
        "line1\nline2\n",
        "cr\r\nlf\r",
        "back\\slash\\",
        "no",
        "0755",
        "",
        "\xc3\xbcn\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
        "${HOME} $HOME \\$x $'\\n' $((1+1))",
        "'\"'\"",
        "\t tab lead",
        "  leading spaces\n    and more",
        "\x01\x1b[31mesc\x7f",
        "nel\xc2\x85 ls\xe2\x80\xa8 ps\xe2\x80\xa9 nc\xef\xbf\xbf",
        "bad\xff\xfeutf8\xc3",
        "{{CLUSTER}} {{NOPE}} {{",
        "#!/bin/sh\nexit 7\n",
        "trailing newlines\n\n",
        "-n",
        "*",
        "~",
        "a;b|c&d>e<f",
        "\\'",
        "\x02\x03\x01\x7f\x01",
    };
    size_t n = sizeof(fixed) / sizeof(fixed[0]);
    assert_int_equal(n + 5, N_HOSTILE);
    for (size_t i = 0; i < n; i++)
        hostile[i] = fixed[i];
    fmt(hostile_buf[0], sizeof(hostile_buf[0]), "$(touch %s/pwned1)", dir);
    fmt(hostile_buf[1], sizeof(hostile_buf[1]), "`touch %s/pwned2`", dir);
    fmt(hostile_buf[2], sizeof(hostile_buf[2]), "a'$(touch %s/pwned3)'b", dir);
    fmt(hostile_buf[3], sizeof(hostile_buf[3]), "'; touch %s/pwned4; '", dir);
    fmt(hostile_buf[4], sizeof(hostile_buf[4]), "\"; touch %s/pwned5; \"", dir);
    for (size_t i = 0; i < 5; i++)
        hostile[n + i] = hostile_buf[i];
}

static void assert_not_pwned(const char *dir)
{
    for (int i = 1; i <= 5; i++) {
        char p[256];
        fmt(p, sizeof(p), "%s/pwned%d", dir, i);
        if (file_exists(p))
            fail_msg("a value was executed: %s exists", p);
    }
}

static gpc_env_var hostile_env[N_HOSTILE];
static char hostile_names[N_HOSTILE][16];

static void hostile_spec(gpc_spec *s, const char *dir)
{
    base_spec(s);
    make_hostile(dir);
    for (size_t i = 0; i < N_HOSTILE; i++) {
        fmt(hostile_names[i], sizeof(hostile_names[i]), "V%zu", i);
        hostile_env[i].name = hostile_names[i];
        hostile_env[i].value = (char *)hostile[i];
    }
    s->env = hostile_env;
    s->n_env = N_HOSTILE;
}

/* ------------------------------------------------------------------ */
/* Rules                                                               */

static void test_rules_for(void **state)
{
    (void)state;
    const gpc_userdata_rules *r = gpc_provider_find("aws")->userdata;
    assert_non_null(r);
    assert_string_equal(r->provider, "aws");
    assert_int_equal(r->max_raw, 16384);
    assert_true(r->gzip_ok && r->base64);
    assert_non_null(strstr(r->node_script, "\ngpuctl_md_private_ip() {\n  gpuctl_md_ec2 local-ipv4\n"));

    r = gpc_provider_find("azure")->userdata;
    assert_non_null(r);
    assert_int_equal(r->max_raw, 65535);
    assert_true(r->base64);
    assert_non_null(strstr(r->node_script, "\ngpuctl_md_private_ip() {\n  gpuctl_md_curl -H 'Metadata: true'"));

    r = gpc_provider_find("aliyun")->userdata;
    assert_non_null(r);
    assert_int_equal(r->max_raw, 32768);
    assert_true(r->base64);
    assert_non_null(strstr(r->node_script, "http://100.100.100.200/latest/meta-data/private-ipv4"));

    r = gpc_provider_find("local")->userdata;
    assert_non_null(r);
    assert_int_equal(r->max_raw, 0);
    assert_false(r->base64);
    assert_non_null(strstr(r->node_script, "\ngpuctl_md_machine=0\n"));

    /* every provider has rules and a node script; only those whose nodes
     * take their rank from a launch index define gpuctl_md_launch_index */
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        assert_non_null(p->userdata);
        assert_string_equal(p->userdata->provider, p->name);
        assert_non_null(p->userdata->node_script);
        assert_int_equal(strstr(p->userdata->node_script, "\ngpuctl_md_launch_index() {\n") != NULL,
                         p->rank == GPC_RANK_LAUNCH_INDEX);
        assert_int_equal(strstr(p->userdata->node_script, "\ngpuctl_md_node_rank() {\n") != NULL,
                         p->rank == GPC_RANK_SCHEDULER);
        assert_int_equal(strstr(p->userdata->node_script, "\ngpuctl_md_head_addr() {\n") != NULL,
                         p->rdzv == GPC_RDZV_ON_NODE);
    }

    assert_null(gpc_provider_find("gcp"));
    assert_null(gpc_provider_find(""));
}

/* The fabrics the providers sell, each with its fabric script, and one
 * provider's only. */
static void test_fabric_scripts(void **state)
{
    (void)state;
    const gpc_fabric_script *f = gpc_provider_find("aws")->fabrics;
    assert_non_null(f);
    assert_string_equal(f[0].name, "efa");
    assert_non_null(strstr(f[0].script, "\ngpuctl_ic_efa() {\n  local d\n"));
    assert_null(f[1].name);
    f = gpc_provider_find("aliyun")->fabrics;
    assert_non_null(f);
    assert_string_equal(f[0].name, "erdma");
    assert_non_null(strstr(f[0].script, "\ngpuctl_ic_erdma() {\n"));
    assert_null(f[1].name);
    assert_null(gpc_provider_find("local")->fabrics);
    assert_null(gpc_provider_find("azure")->fabrics);

    size_t n_fabrics = 0;
    for (size_t i = 0; gpc_providers[i]; i++)
        for (f = gpc_providers[i]->fabrics; f && f->name; f++) {
            static const char *const bootstrap_own[] = {"any", "none", "rdma", "infiniband"};
            for (size_t k = 0; k < 4; k++)
                assert_string_not_equal(f->name, bootstrap_own[k]);
            for (size_t j = 0; gpc_providers[j]; j++)
                for (const gpc_fabric_script *g = gpc_providers[j]->fabrics; g && g->name; g++)
                    assert_true(g == f || strcmp(g->name, f->name) != 0);
            n_fabrics++;
        }
    assert_int_equal(n_fabrics, 2);

    /* a node gets the script of its fabric, whichever its provider; the
     * fabrics the bootstrap knows itself get none */
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    static const struct {
        const char *fabric, *prov, *call;
    } cases[] = {
        {"efa", "local", "\n  efa) gpuctl_ic_efa ;;\n"},
        {"efa", "azure", "\n  efa) gpuctl_ic_efa ;;\n"},
        {"erdma", "aws", "\n  erdma) gpuctl_ic_erdma ;;\n"},
        {"erdma", "aliyun", "\n  erdma) gpuctl_ic_erdma ;;\n"},
        {"infiniband", "aws", NULL},
        {"none", "aliyun", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n.fabric = cases[i].fabric;
        char *b = render_boot(&s, &n, cases[i].prov);
        char want[64];
        fmt(want, sizeof(want), "\nGPUCTL_INTERCONNECT=%s\n", cases[i].fabric);
        assert_non_null(strstr(b, want));
        assert_int_equal(strstr(b, "\ngpuctl_ic_efa() {\n") != NULL,
                         strcmp(cases[i].fabric, "efa") == 0);
        assert_int_equal(strstr(b, "\ngpuctl_ic_erdma() {\n") != NULL,
                         strcmp(cases[i].fabric, "erdma") == 0);
        assert_int_equal(strstr(b, "\ngpuctl_ic_infiniband() {\n") != NULL,
                         strcmp(cases[i].fabric, "infiniband") == 0);
        if (cases[i].call)
            assert_non_null(strstr(b, cases[i].call));
        else
            assert_null(strstr(b, "# --- fabric script ---"));
        free(b);
    }
}

/* ------------------------------------------------------------------ */
/* Shell quoting                                                       */

static void test_shell_quote_exact(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"", "''"},
        {"abc", "'abc'"},
        {"it's", "'it'\\''s'"},
        {"'", "''\\'''"},
        {"a b\tc\nd", "'a b\tc\nd'"},
        {"$(x) `y` \"z\" \\", "'$(x) `y` \"z\" \\'"},
        {"a\rb", "'a'$'\\r''b'"},
        {"\r\n", "$'\\r''\n'"},
        {"\r", "$'\\r'"},
        {"x\x01\x1f\x7f", "'x'$'\\x01\\x1f\\x7f'"},
        {"\x1b'", "$'\\x1b'''\\'''"},
        {"\xc3\xa9\xe2\x9c\x93", "'\xc3\xa9\xe2\x9c\x93'"},
        {"\xf0\x9f\x98\x80", "'\xf0\x9f\x98\x80'"},
        {"\xc2\x85", "$'\\xc2\\x85'"},
        {"\xc2\xa0", "'\xc2\xa0'"},
        {"a\xe2\x80\xa8" "b", "'a'$'\\xe2\\x80\\xa8''b'"},
        {"\xe2\x80\xa9", "$'\\xe2\\x80\\xa9'"},
        {"\xef\xbf\xbe\xef\xbf\xbf", "$'\\xef\\xbf\\xbe\\xef\\xbf\\xbf'"},
        {"\xef\xbb\xbf", "'\xef\xbb\xbf'"},
        {"\xff", "$'\\xff'"},
        {"ok\xc3", "'ok'$'\\xc3'"},
        {"\xe0\x80\xaf", "$'\\xe0\\x80\\xaf'"},
        {"\xed\xa0\x80", "$'\\xed\\xa0\\x80'"},
        {"\xf4\x90\x80\x80", "$'\\xf4\\x90\\x80\\x80'"},
        {"no", "'no'"},
        {"0755", "'0755'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpc_buf b;
        gpc_error e;
        gpc_buf_init(&b, 4096);
        gpc_error_clear(&e);
        assert_int_equal(gpc_shell_quote(&b, cases[i].in, &e), 0);
        if (strcmp(gpc_buf_str(&b), cases[i].want) != 0)
            fail_msg("case %zu: got [%s], want [%s]", i, gpc_buf_str(&b), cases[i].want);
        gpc_buf_free(&b);
    }
}

static void test_shell_quote_nul(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_error e;
    gpc_buf_init(&b, 4096);
    gpc_error_clear(&e);
    assert_int_equal(gpc_shell_quote_n(&b, "a\0b", 3, &e), GPC_ERR_RENDER);
    assert_non_null(strstr(e.msg, "NUL"));
    gpc_error_clear(&e);
    assert_int_equal(gpc_shell_quote_n(&b, "ab", 2, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "'ab'");
    gpc_buf_free(&b);
}

/* Every value, quoted, reads back byte for byte through bash, in the C and
 * the C.UTF-8 locale, and the quoted text is clean printable UTF-8. */
static void test_shell_quote_bash_roundtrip(void **state)
{
    (void)state;
    char dir[128], script[256], outp[256];
    mkdir_in(dir, sizeof(dir), "quote");
    make_hostile(dir);

    /* every single byte, then all bytes 1..255 in one value */
    static char single[255][2];
    static char all[256];
    const char *vals[N_HOSTILE + 256];
    size_t nv = 0;
    for (size_t i = 0; i < N_HOSTILE; i++)
        vals[nv++] = hostile[i];
    for (int c = 1; c < 256; c++) {
        single[c - 1][0] = (char)c;
        vals[nv++] = single[c - 1];
        all[c - 1] = (char)c;
    }
    vals[nv++] = all;

    gpc_buf sc, want;
    gpc_error e;
    gpc_buf_init(&sc, GPC_BUF_SCRIPT_MAX);
    gpc_buf_init(&want, GPC_BUF_SCRIPT_MAX);
    gpc_error_clear(&e);
    for (size_t i = 0; i < nv; i++) {
        assert_int_equal(gpc_buf_adds(&sc, "printf '%s\\0' ", &e), 0);
        size_t q = sc.len;
        assert_int_equal(gpc_shell_quote(&sc, vals[i], &e), 0);
        if (!clean_text(sc.data + q, sc.len - q))
            fail_msg("value %zu quotes to text with control bytes or bad UTF-8", i);
        assert_int_equal(gpc_buf_adds(&sc, "\n", &e), 0);
        assert_int_equal(gpc_buf_add(&want, vals[i], strlen(vals[i]) + 1, &e), 0);
    }
    fmt(script, sizeof(script), "%s/q.sh", dir);
    fmt(outp, sizeof(outp), "%s/q.out", dir);
    write_file(script, sc.data, sc.len, 0600);

    static const char *const locales[] = {"C", "C.UTF-8"};
    for (size_t l = 0; l < 2; l++) {
        assert_int_equal(sh("env -i LC_ALL=%s /bin/bash '%s' >'%s'", locales[l], script, outp), 0);
        size_t n = 0;
        char *got = slurp(outp, &n);
        assert_non_null(got);
        assert_int_equal(n, want.len);
        assert_memory_equal(got, want.data, n);
        free(got);
    }
    assert_not_pwned(dir);
    gpc_buf_free(&sc);
    gpc_buf_free(&want);
}

/* ------------------------------------------------------------------ */
/* Template engine                                                     */

static int tpl(const char *text, const gpc_tpl_var *vars, size_t n, gpc_buf *out,
               gpc_error *e)
{
    gpc_buf_init(out, 1 << 16);
    gpc_error_clear(e);
    return gpc_template_render("t", text, strlen(text), vars, n, out, e);
}

static void test_template_unknown_placeholder(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_error e;
    const gpc_tpl_var vars[] = {{"A", "1"}, {"NOVALUE", NULL}};

    assert_int_equal(tpl("x={{A}}\ny={{NOPE}}\n", vars, 2, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "template 't' line 2: unknown placeholder {{NOPE}}");
    gpc_buf_free(&b);

    assert_int_equal(tpl("{{NOVALUE}}", vars, 2, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "template 't' line 1: no value for placeholder {{NOVALUE}}");
    gpc_buf_free(&b);

    static const char *const bad[] = {"{{a}}", "{{A", "{{ A }}", "{{}}", "{{A}", "x\n\n{{9A}}",
                                      "{{A-B}}", "{{"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tpl(bad[i], vars, 2, &b, &e), GPC_ERR_RENDER);
        assert_non_null(strstr(e.msg, "malformed placeholder"));
        gpc_buf_free(&b);
    }
    assert_int_equal(tpl("x\n\n{{9A}}", vars, 2, &b, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "template 't' line 3: malformed placeholder");
    gpc_buf_free(&b);

    /* a placeholder in a ## comment line is not one */
    assert_int_equal(tpl("## {{NOPE}}\n{{A}}\n", vars, 2, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "1\n");
    gpc_buf_free(&b);
}

/* ##if sections: kept only for the listed values; misuse is an error. */
static void test_template_sections(void **state)
{
    (void)state;
    static const char t[] = "a\n##if MD=aws|azure\ncloud\n##endif\n##if MD=local\nlocal\n##endif\nz\n";
    const gpc_tpl_var aws[] = {{"MD", "aws"}};
    const gpc_tpl_var loc[] = {{"MD", "local"}};
    const gpc_tpl_var ali[] = {{"MD", "aliyun"}};
    gpc_buf b;
    gpc_buf_init(&b, 1024);
    assert_int_equal(gpc_template_render("t", t, strlen(t), aws, 1, &b, NULL), 0);
    assert_string_equal(gpc_buf_str(&b), "a\ncloud\nz\n");
    gpc_buf_reset(&b);
    assert_int_equal(gpc_template_render("t", t, strlen(t), loc, 1, &b, NULL), 0);
    assert_string_equal(gpc_buf_str(&b), "a\nlocal\nz\n");
    gpc_buf_reset(&b);
    assert_int_equal(gpc_template_render("t", t, strlen(t), ali, 1, &b, NULL), 0);
    assert_string_equal(gpc_buf_str(&b), "a\nz\n");
    gpc_error err;
    static const char open_[] = "##if MD=aws\nx\n";
    gpc_buf_reset(&b);
    gpc_error_clear(&err);
    assert_int_equal(gpc_template_render("t", open_, strlen(open_), aws, 1, &b, &err), GPC_ERR_RENDER);
    assert_string_equal(err.msg, "template t: ##if without ##endif");
    static const char nested[] = "##if MD=aws\n##if MD=aws\n##endif\n";
    gpc_buf_reset(&b);
    gpc_error_clear(&err);
    assert_int_equal(gpc_template_render("t", nested, strlen(nested), aws, 1, &b, &err), GPC_ERR_RENDER);
    assert_string_equal(err.msg, "template t:2: nested ##if");
    gpc_buf_free(&b);
}

static void test_template_substitution(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_error e;

    /* values are not scanned again */
    const gpc_tpl_var v1[] = {{"A", "{{B}} {{"}, {"B", "no"}};
    assert_int_equal(tpl("[{{A}}][{{B}}]{", v1, 2, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "[{{B}} {{][no]{");
    gpc_buf_free(&b);

    /* block: indentation follows the placeholder's, empty lines stay empty,
     * one trailing newline of the value is dropped */
    const gpc_tpl_var v2[] = {{"B", "l1\n  l2\n\nl4\n"}, {"E", ""}, {"I", "x\ny"}};
    assert_int_equal(tpl("a:\n    {{B}}\nz\n", v2, 3, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "a:\n    l1\n      l2\n\n    l4\nz\n");
    gpc_buf_free(&b);
    assert_int_equal(tpl("a:\n    {{E}}\nz\n", v2, 3, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "a:\n\nz\n");
    gpc_buf_free(&b);
    assert_int_equal(tpl("{{B}}\n", v2, 3, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "l1\n  l2\n\nl4\n");
    gpc_buf_free(&b);
    /* not alone on its line: verbatim */
    assert_int_equal(tpl("  v={{I}};\n", v2, 3, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "  v=x\ny;\n");
    gpc_buf_free(&b);

    /* ## lines go, # lines stay, no newline at the end is kept as is */
    const gpc_tpl_var v3[] = {{"A", "1"}};
    assert_int_equal(tpl("##c\nkeep\n  ## also\n#not\n# ## no\n{{A}}", v3, 1, &b, &e), 0);
    assert_string_equal(gpc_buf_str(&b), "keep\n#not\n# ## no\n1");
    gpc_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Bootstrap rendering                                                 */

static void test_bootstrap_basics(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    assert_true(strncmp(b, "#!/bin/bash\n", 12) == 0);
    assert_null(strstr(b, "{{"));
    assert_null(strstr(b, "\n##"));
    assert_null(strchr(b, '\r'));
    assert_non_null(strstr(b, "\nset -euo pipefail\n"));
    assert_non_null(strstr(b, "\nGPUCTL_METADATA=local\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_CLUSTER='demo'\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_CLUSTER_ID='demo-0123abcd'\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_NODE_RANK=0\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_NUM_NODES=2\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_RDZV_PORT=29400\n"));
    assert_non_null(strstr(b, "\nGPUCTL_HEAD_IP=''\n"));
    /* no max_duration nor budget.max_total: the default end (spec.h) */
    assert_non_null(strstr(b, "\nGPUCTL_MAX_DURATION_S=259200\n"));
    assert_non_null(strstr(b, "\ngpuctl_end_why=\"max_duration limit of "
                              "${GPUCTL_MAX_DURATION_S}s\"' (the default: the spec sets no "
                              "lifecycle.max_duration)'\" hit\"\n"));
    assert_non_null(strstr(b, "\nGPUCTL_NPROC_PER_NODE=0\n"));
    assert_non_null(strstr(b, "\nGPUCTL_INTERCONNECT=any\n"));
    assert_non_null(strstr(b, "\nGPUCTL_WORKDIR=''\n"));
    assert_non_null(strstr(b, "\nGPUCTL_SETUP=''\n"));
    assert_non_null(strstr(b, "\nGPUCTL_RUN_COMMAND='python3 train.py --epochs 2'\n"));
    assert_non_null(strstr(b, "\ngpuctl_user_env=''\n"));
    free(b);

    /* each provider bakes its metadata flavour; the port falls back to the
     * spec's, then to 29400 */
    static const char *const provs[] = {"aws", "azure", "aliyun"};
    n.rdzv_port = 0;
    s.run.rdzv_port = 29555;
    for (size_t i = 0; i < 3; i++) {
        char want[64];
        fmt(want, sizeof(want), "\nGPUCTL_METADATA=%s\n", provs[i]);
        b = render_boot(&s, &n, provs[i]);
        assert_non_null(strstr(b, want));
        assert_non_null(strstr(b, "\nexport GPUCTL_RDZV_PORT=29555\n"));
        free(b);
    }
    s.run.rdzv_port = 0;
    b = render_boot(&s, &n, "aws");
    assert_non_null(strstr(b, "\nexport GPUCTL_RDZV_PORT=29400\n"));
    free(b);

    /* numbers, words and quoted paths */
    static const char *const ics[] = {"any", "none", "efa", "infiniband", "erdma"};
    for (int ic = GPC_IC_ANY; ic <= GPC_IC_ERDMA; ic++) {
        char want[64];
        s.resources.interconnect = (gpc_interconnect)ic;
        fmt(want, sizeof(want), "\nGPUCTL_INTERCONNECT=%s\n", ics[ic]);
        b = render_boot(&s, &n, "aws");
        assert_non_null(strstr(b, want));
        free(b);
    }
    s.lifecycle.max_duration_s = 7200;
    s.run.nproc_per_node = 4;
    s.setup = "pip install -r requirements.txt\necho 'done'";
    n.workdir = "/home/u/my job";
    n.checkpoint_dir = "/mnt/ckpt";
    n.rank = 1;
    n.head_addr = "10.0.0.5";
    b = render_boot(&s, &n, "aws");
    assert_non_null(strstr(b, "\nGPUCTL_MAX_DURATION_S=7200\n"));
    assert_non_null(strstr(b, "\ngpuctl_end_why=\"max_duration limit of "
                              "${GPUCTL_MAX_DURATION_S}s\"''\" hit\"\n"));
    assert_non_null(strstr(b, "\nGPUCTL_NPROC_PER_NODE=4\n"));
    assert_non_null(strstr(b, "\nGPUCTL_SETUP='pip install -r requirements.txt\necho '\\''done'\\'''\n"));
    assert_non_null(strstr(b, "\nGPUCTL_WORKDIR='/home/u/my job'\n"));
    assert_non_null(strstr(b, "\nGPUCTL_CHECKPOINT_DIR='/mnt/ckpt'\n"));
    assert_non_null(strstr(b, "\nexport GPUCTL_NODE_RANK=1\n"));
    assert_non_null(strstr(b, "\nGPUCTL_HEAD_IP='10.0.0.5'\n"));
    free(b);
}

static void test_bootstrap_head_ip(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    n.rank = 1;
    static const struct {
        const char *in, *baked;
    } ok[] = {
        {"10.1.2.3", "'10.1.2.3'"},
        {"255.255.255.255", "'255.255.255.255'"},
        {"fd00::5", "'fd00::5'"},
        {"[fd00::5]", "'fd00::5'"},
        {"::1", "'::1'"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char want[64];
        n.head_addr = ok[i].in;
        fmt(want, sizeof(want), "\nGPUCTL_HEAD_IP=%s\n", ok[i].baked);
        char *b = render_boot(&s, &n, "aws");
        assert_non_null(strstr(b, want));
        free(b);
    }
    static const char *const bad[] = {
        "head.example.com", "localhost", "1.2.3", "1.2.3.256", "01.2.3.4", " 1.2.3.4",
        "1.2.3.4 ", "1.2.3.4;reboot", "$(reboot)", "[1.2.3.4]", "[fd00::5", "fe80::1%eth0", "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        gpc_error e;
        gpc_error_clear(&e);
        n.head_addr = bad[i];
        if (gpc_render_bootstrap(&s, &n, gpc_provider_find("aws")->userdata, &out, &e) !=
            GPC_ERR_RENDER)
            fail_msg("head_ip '%s' was accepted", bad[i]);
        assert_null(out);
        assert_non_null(strstr(e.msg, "is not an IP literal"));
    }
}

static void test_bootstrap_rejects(void **state)
{
    (void)state;
    gpc_spec s;
    gpc_node_ctx n;
    gpc_env_var env[1];
    char *out = NULL;
    gpc_error e;
    const gpc_userdata_rules *aws = gpc_provider_find("aws")->userdata;

#define EXPECT_FAIL(substr)                                                      \
    do {                                                                         \
        gpc_error_clear(&e);                                                     \
        out = NULL;                                                              \
        assert_int_equal(gpc_render_bootstrap(&s, &n, aws, &out, &e), GPC_ERR_RENDER); \
        assert_null(out);                                                        \
        if (!strstr(e.msg, substr))                                              \
            fail_msg("message '%s' lacks '%s'", e.msg, substr);                  \
    } while (0)

    base_spec(&s);
    n = base_node();
    n.rank = 1;
    EXPECT_FAIL("needs the head's IP");

    n = base_node();
    n.rank = 2;
    EXPECT_FAIL("node rank 2 is not below the node count 2");

    n = base_node();
    n.cluster_id = NULL;
    EXPECT_FAIL("no cluster name or id");

    n = base_node();
    n.rdzv_port = 70000;
    EXPECT_FAIL("rendezvous port 70000");

    n = base_node();
    s.run.command = NULL;
    EXPECT_FAIL("no run command");
    s.run.command = "";
    EXPECT_FAIL("no run command");

    base_spec(&s);
    s.env = env;
    s.n_env = 1;
    static const char *const bad_names[] = {"1A", "A-B", "A B", "", "A=B", "A$(x)"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        env[0].name = (char *)bad_names[i];
        env[0].value = "x";
        EXPECT_FAIL("is not a shell name");
    }
    env[0].name = "OK_1";
    env[0].value = NULL;
    EXPECT_FAIL("env OK_1 has no value");

    base_spec(&s);
    s.resources.interconnect = (gpc_interconnect)42;
    EXPECT_FAIL("unknown interconnect");

    /* a fabric no provider declares */
    base_spec(&s);
    n.fabric = "roce";
    EXPECT_FAIL("no provider declares the fabric 'roce'");
    n.fabric = "efa;reboot";
    EXPECT_FAIL("no provider declares the fabric 'efa;reboot'");
    n.fabric = NULL;

    base_spec(&s);
    gpc_userdata_rules weird = *aws;
    weird.node_script = NULL;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_bootstrap(&s, &n, &weird, &out, &e), GPC_ERR_RENDER);
    assert_non_null(strstr(e.msg, "provider 'aws' has no node script"));
    weird.node_script = "gpuctl_md_machine=1\ngpuctl_md_ip() {\n  :\n}\n";
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_bootstrap(&s, &n, &weird, &out, &e), GPC_ERR_RENDER);
    assert_non_null(strstr(e.msg, "does not define gpuctl_md_private_ip"));
#undef EXPECT_FAIL
}

/* The job env part of a rendered bootstrap, sourced by bash, sets every
 * variable to its value byte for byte and runs nothing. */
static void test_bootstrap_env_roundtrip(void **state)
{
    (void)state;
    char dir[128], script[256], outp[256];
    mkdir_in(dir, sizeof(dir), "envrt");
    gpc_spec s;
    hostile_spec(&s, dir);
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "aws");

    const char *begin = strstr(b, "# --- job env (begin) ---\n");
    const char *end = strstr(b, "# --- job env (end) ---\n");
    assert_non_null(begin);
    assert_non_null(end);
    assert_true(begin < end);

    /* in spec order, one export each */
    const char *p = begin;
    for (size_t i = 0; i < N_HOSTILE; i++) {
        char want[32];
        fmt(want, sizeof(want), "\nexport V%zu=", i);
        const char *q = strstr(p, want);
        assert_non_null(q);
        assert_true(q < end);
        p = q + 1;
    }

    gpc_buf sc, want;
    gpc_error e;
    gpc_buf_init(&sc, GPC_BUF_SCRIPT_MAX);
    gpc_buf_init(&want, GPC_BUF_SCRIPT_MAX);
    gpc_error_clear(&e);
    assert_int_equal(gpc_buf_adds(&sc, "set -euo pipefail\n", &e), 0);
    assert_int_equal(gpc_buf_add(&sc, begin, (size_t)(end - begin), &e), 0);
    for (size_t i = 0; i < N_HOSTILE; i++) {
        assert_int_equal(gpc_buf_addf(&sc, &e, "printf '%%s\\0' \"$V%zu\"\n", i), 0);
        assert_int_equal(gpc_buf_add(&want, hostile[i], strlen(hostile[i]) + 1, &e), 0);
    }
    /* exported, not only set */
    assert_int_equal(gpc_buf_adds(&sc, "env | grep -q '^V0=' || exit 9\n", &e), 0);
    fmt(script, sizeof(script), "%s/env.sh", dir);
    fmt(outp, sizeof(outp), "%s/env.out", dir);
    write_file(script, sc.data, sc.len, 0600);
    assert_int_equal(sh("env -i LANG=C.UTF-8 PATH=/usr/bin:/bin /bin/bash '%s' >'%s'", script, outp), 0);

    size_t len = 0;
    char *got = slurp(outp, &len);
    assert_non_null(got);
    assert_int_equal(len, want.len);
    assert_memory_equal(got, want.data, len);
    assert_not_pwned(dir);
    free(got);
    free(b);
    gpc_buf_free(&sc);
    gpc_buf_free(&want);
}

/* bash -n and shellcheck accept every flavour and interconnect, with
 * hostile values in the env. */
static void test_bootstrap_lint(void **state)
{
    (void)state;
    if (!have("command -v shellcheck"))
        skip();
    char dir[128], files[8192] = "";
    mkdir_in(dir, sizeof(dir), "lint");
    static const char *const provs[] = {"local", "aws", "azure", "aliyun", "aws"};
    for (int ic = GPC_IC_ANY; ic <= GPC_IC_ERDMA; ic++) {
        gpc_spec s;
        gpc_node_ctx n = base_node();
        char path[256];
        hostile_spec(&s, dir);
        s.resources.interconnect = (gpc_interconnect)ic;
        s.setup = ic % 2 ? "echo hi" : NULL;
        s.lifecycle.max_duration_s = ic % 2 ? 0 : 3600;
        if (ic >= 3) {
            n.rank = 1;
            n.head_addr = "10.0.0.1";
        }
        char *b = render_boot(&s, &n, provs[ic]);
        fmt(path, sizeof(path), "%s/boot-%d.sh", dir, ic);
        write_file(path, b, strlen(b), 0700);
        if (ic == 0) {
            /* the worker wrapper the bootstrap writes with a here-document */
            const char *w = strstr(b, "<<'EOF'\n");
            assert_non_null(w);
            w += 8;
            const char *e = strstr(w, "\nEOF\n");
            assert_non_null(e);
            char wp[256];
            fmt(wp, sizeof(wp), "%s/worker.sh", dir);
            write_file(wp, w, (size_t)(e - w) + 1, 0700);
            assert_true(strncmp(w, "#!/bin/bash\n", 12) == 0);
            size_t used = strlen(files);
            fmt(files + used, sizeof(files) - used, " '%s'", wp);
        }
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    {
        /* the worker of an EC2 batch: its rank from the launch index */
        gpc_spec s;
        gpc_node_ctx n = base_node();
        char path[256];
        hostile_spec(&s, dir);
        n.rank = 1;
        n.head_addr = "10.0.0.1";
        n.rank_from = GPC_RANK_LAUNCH_INDEX;
        char *b = render_boot(&s, &n, "aws");
        assert_non_null(strstr(b, "ami-launch-index"));
        fmt(path, sizeof(path), "%s/boot-batch.sh", dir);
        write_file(path, b, strlen(b), 0700);
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    {
        /* a node that waits for gpuctl's delivery of workdir and secrets
         * (the DELIVER section) */
        gpc_spec s;
        gpc_node_ctx n = base_node();
        char path[256];
        hostile_spec(&s, dir);
        gpc_secret_ref sec[2] = {{"HF_TOKEN", "env:HF_TOKEN", 0, 0}, {"API_KEY", "file:k", 0, 0}};
        s.workdir = "./code";
        s.secrets = sec;
        s.n_secrets = 2;
        n.deliver = 1;
        char *b = render_boot(&s, &n, "aws");
        assert_non_null(strstr(b, "\ngpuctl_secret_names='HF_TOKEN API_KEY'\n"));
        assert_non_null(strstr(b, "\ngpuctl_deliver_workdir=1\nif [ \"$gpuctl_deliver_workdir\" = 1 ]; "
                                  "then\n  GPUCTL_WORKDIR=$GPUCTL_HOME/workdir\n"));
        fmt(path, sizeof(path), "%s/boot-deliver.sh", dir);
        write_file(path, b, strlen(b), 0700);
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    /* lifecycle.idle_timeout, on each provider's node script */
    static const char *const idle_provs[] = {"local", "aws", "azure", "aliyun"};
    for (size_t i = 0; i < sizeof(idle_provs) / sizeof(idle_provs[0]); i++) {
        gpc_spec s;
        gpc_node_ctx n = base_node();
        char path[256];
        base_spec(&s);
        s.lifecycle.idle_timeout_s = 600;
        char *b = render_boot(&s, &n, idle_provs[i]);
        assert_non_null(strstr(b, "\ngpuctl_md_stop() {\n"));
        fmt(path, sizeof(path), "%s/boot-idle-%zu.sh", dir, i);
        write_file(path, b, strlen(b), 0700);
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    /* checkpoint_dir kept in the store (the CKPT_STORE section), on aws */
    {
        gpc_spec s;
        gpc_node_ctx n = base_node();
        char path[256];
        base_spec(&s);
        n.checkpoint_dir = "/var/lib/ckpt";
        n.ckpt_store = "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints";
        n.store_endpoint = "http://127.0.0.1:9000";
        char *b = render_boot(&s, &n, "aws");
        assert_non_null(strstr(b, "\ngpuctl_md_store_put() {\n"));
        fmt(path, sizeof(path), "%s/boot-ckpt.sh", dir);
        write_file(path, b, strlen(b), 0700);
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    /* every rank and rendezvous source, with a node script that has the
     * functions they need */
    for (size_t i = 0; i < N_MODES; i++) {
        gpc_spec s;
        char path[256];
        hostile_spec(&s, dir);
        gpc_node_ctx n = mode_node(&modes[i]);
        char *b = render_with(&s, &n, &mode_rules);
        fmt(path, sizeof(path), "%s/boot-mode%zu.sh", dir, i);
        write_file(path, b, strlen(b), 0700);
        free(b);
        assert_int_equal(sh("bash -n '%s'", path), 0);
        size_t used = strlen(files);
        fmt(files + used, sizeof(files) - used, " '%s'", path);
    }
    int rc = sh("shellcheck -s bash %s >&2", files);
    if (rc != 0)
        fail_msg("shellcheck found problems (exit %d), see above", rc);
    assert_not_pwned(dir);
}

/* ------------------------------------------------------------------ */
/* Running the bootstrap (local flavour, stub tools)                   */

typedef struct node_run {
    char dir[128];
    char home[192];
    char out[192];
    int status;        /* exit status of bash */
    char *exit_status; /* files the bootstrap left */
    char *phase;
    char *log;
    char *args; /* NUL-separated torchrun arguments, NULL when not run */
    size_t args_len;
    char *env; /* NUL-separated environment torchrun saw */
    size_t env_len;
    char *ran; /* what the run command wrote */
    char *shutdown; /* the arguments `shutdown` got, one call a line */
    char *console;  /* what it wrote to the serial console (GPUCTL_CONSOLE) */
} node_run;

static void node_run_free(node_run *r)
{
    free(r->exit_status);
    free(r->phase);
    free(r->log);
    free(r->args);
    free(r->env);
    free(r->ran);
    free(r->shutdown);
    free(r->console);
}

/*
 * Make tmp_root/name with stubs: torchrun (records its arguments and
 * environment, runs one worker the way --no_python does, passes SIGTERM on
 * as torch does (1.x: to the worker's pid; 2.x: to the worker's own
 * session, killpg), and exits 1 when the worker fails, as torchrun does;
 * the node's group rank is STUB_GROUP_RANK, default 0),
 * python3 (answers the torch version), and nvidia-smi when gpus > 0.
 */
static void node_prepare(node_run *r, const char *name, const char *torch, int gpus)
{
    char stub[256], p[320], text[1024];
    memset(r, 0, sizeof(*r));
    mkdir_in(r->dir, sizeof(r->dir), name);
    fmt(r->home, sizeof(r->home), "%s/home", r->dir);
    fmt(r->out, sizeof(r->out), "%s/out", r->dir);
    fmt(stub, sizeof(stub), "%s/stub", r->dir);
    assert_int_equal(mkdir(r->out, 0700), 0);
    assert_int_equal(mkdir(stub, 0700), 0);

    fmt(p, sizeof(p), "%s/torchrun", stub);
    int v2 = torch[0] != '1';
    fmt(text, sizeof(text),
        "#!/bin/bash\n"
        "printf '%%s\\0' \"$@\" >'%s/args'\n"
        "env -0 >'%s/env'\n"
        "while [ $# -gt 0 ] && [ \"$1\" != --no_python ]; do shift; done\n"
        "shift\n"
        "export LOCAL_RANK=0 GROUP_RANK=\"${STUB_GROUP_RANK:-0}\"\n"
        "w=0\n"
        "trap 'kill -TERM %s\"$w\"' TERM\n"
        "%s\"$@\" &\n"
        "w=$!\n"
        "wait \"$w\"\n"
        "rc=$?\n"
        "while kill -0 \"$w\" 2>/dev/null; do wait \"$w\"; rc=$?; done\n"
        "[ \"$rc\" = 0 ] || exit 1\n",
        r->out, r->out, v2 ? "-- -" : "", v2 ? "setsid " : "");
    write_file(p, text, strlen(text), 0755);

    /* The bootstrap asks torchrun's interpreter for "VERSION LOCAL_ADDR"
     * (1: torchrun has --local_addr, torch 2.x) without importing torch. */
    fmt(p, sizeof(p), "%s/python3", stub);
    fmt(text, sizeof(text),
        "#!/bin/bash\n"
        "if [[ $1 == -c && $2 == *importlib.metadata* ]]; then\n"
        "  [[ $2 != *'import torch'* ]] || exit 9\n"
        "  echo '%s %d'\n"
        "else\n"
        "  echo '%s'\n"
        "fi\n",
        torch, v2, torch);
    write_file(p, text, strlen(text), 0755);

    /* Cloud flavours power the node off at the end: never the real one. */
    static const char *const off[] = {"shutdown", "poweroff"};
    for (size_t i = 0; i < 2; i++) {
        fmt(p, sizeof(p), "%s/%s", stub, off[i]);
        fmt(text, sizeof(text), "#!/bin/bash\nprintf '%%s\\n' \"$*\" >>'%s/%s'\n", r->out, off[i]);
        write_file(p, text, strlen(text), 0755);
    }

    /* The metadata services, answering only well-formed requests. */
    static const char curl[] =
        "#!/bin/bash\n"
        "printf '%s\\n' \"$*\" >>\"$STUB_OUT/curl.log\"\n"
        "[ \"${STUB_CURL:-}\" = fail ] && exit 7\n"
        "a=\" $* \"\n"
        "url=${!#}\n"
        "case $url in\n"
        "http://169.254.169.254/latest/api/token)\n"
        "  [[ $a == *' -X PUT '* && $a == *' X-aws-ec2-metadata-token-ttl-seconds: 300 '* ]] &&\n"
        "    printf TOKEN-AWS && exit 0 ;;\n"
        "http://169.254.169.254/latest/meta-data/local-ipv4)\n"
        "  [[ $a == *' X-aws-ec2-metadata-token: TOKEN-AWS '* ]] && printf 10.0.0.7 && exit 0 ;;\n"
        "http://169.254.169.254/latest/meta-data/ami-launch-index)\n"
        "  [[ $a == *' X-aws-ec2-metadata-token: TOKEN-AWS '* ]] &&\n"
        "    printf '%s' \"${STUB_LAUNCH_INDEX:-0}\" && exit 0 ;;\n"
        "'http://169.254.169.254/metadata/instance/network/interface/0/ipv4/ipAddress/0/"
        "privateIpAddress?api-version=2021-02-01&format=text')\n"
        "  [[ $a == *' Metadata: true '* ]] && printf 10.1.0.4 && exit 0 ;;\n"
        "http://100.100.100.200/latest/api/token)\n"
        "  [[ $a == *' -X PUT '* && $a == *' X-aliyun-ecs-metadata-token-ttl-seconds: 300 '* ]] &&\n"
        "    printf TOKEN-ALI && exit 0 ;;\n"
        "http://100.100.100.200/latest/meta-data/private-ipv4)\n"
        "  [[ $a == *' X-aliyun-ecs-metadata-token: TOKEN-ALI '* ]] && printf 172.16.0.9 && exit 0 ;;\n"
        "esac\n"
        "exit 22\n";
    fmt(p, sizeof(p), "%s/curl", stub);
    write_file(p, curl, sizeof(curl) - 1, 0755);
    static const char host[] = "#!/bin/bash\n[ \"$1\" = -I ] && echo '192.168.1.5 fe80::1 '\n";
    fmt(p, sizeof(p), "%s/hostname", stub);
    write_file(p, host, sizeof(host) - 1, 0755);

    if (gpus > 0) {
        fmt(p, sizeof(p), "%s/nvidia-smi", stub);
        fmt(text, sizeof(text),
            "#!/bin/bash\n"
            "[ \"$1\" = -L ] || exit 2\n"
            "for i in $(seq 0 %d); do\n"
            "  echo \"GPU $i: NVIDIA H200 (UUID: GPU-0000000$i)\"\n"
            "  echo \"  MIG 1g.18gb     Device  0: (UUID: MIG-0000000$i)\"\n"
            "done\n",
            gpus - 1);
        write_file(p, text, strlen(text), 0755);
    }
}

/* Run the script in r->dir with a clean environment plus `extra` (shell
 * words), then collect what it left. */
static void node_exec(node_run *r, const char *script, const char *extra)
{
    char path[256], f[320];
    fmt(path, sizeof(path), "%s/bootstrap.sh", r->dir);
    write_file(path, script, strlen(script), 0700);
    r->status = sh("cd '%s' && env -i PATH='%s/stub:/usr/bin:/bin' LANG=C.UTF-8 "
                   "GPUCTL_HOME='%s' STUB_OUT='%s' GPUCTL_CONSOLE='%s/console' %s "
                   "/bin/bash '%s' </dev/null",
                   r->dir, r->dir, r->home, r->out, r->out, extra ? extra : "", path);
    fmt(f, sizeof(f), "%s/exit_status", r->home);
    r->exit_status = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/phase", r->home);
    r->phase = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/node.log", r->home);
    r->log = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/args", r->out);
    r->args = slurp(f, &r->args_len);
    fmt(f, sizeof(f), "%s/env", r->out);
    r->env = slurp(f, &r->env_len);
    fmt(f, sizeof(f), "%s/ran", r->out);
    r->ran = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/shutdown", r->out);
    r->shutdown = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/console", r->out);
    r->console = slurp(f, NULL);
}

static void assert_outcome(const node_run *r, int status, const char *phase)
{
    char want[16];
    fmt(want, sizeof(want), "%d\n", status);
    if (r->status != status || !r->exit_status || strcmp(r->exit_status, want) != 0 ||
        !r->phase || strcmp(r->phase, phase) != 0)
        fail_msg("exit %d, exit_status '%s', phase '%s'; want %d, %s; log:\n%s", r->status,
                 r->exit_status ? r->exit_status : "(none)", r->phase ? r->phase : "(none)",
                 status, phase, r->log ? r->log : "(none)");
}

/* Rank 0 on CPU with torch 1.x: hostile env arrives intact in the worker's
 * environment, the torchrun command line is exact, files are written. */
static void test_run_rank0_cpu_torch1(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "run0", "1.13.0a0", 0);
    gpc_spec s;
    hostile_spec(&s, r.dir);
    s.resources.interconnect = GPC_IC_NONE;
    s.setup = "echo setup-ran >\"$STUB_OUT/setup\"; pwd >>\"$STUB_OUT/setup\"";
    s.run.command = "printf '%s|%s|%s' \"$GPUCTL_CLUSTER\" \"$V0\" \"it's\" >\"$STUB_OUT/ran\"";
    gpc_node_ctx n = base_node();
    n.cluster = "demo 'x'";
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);

    assert_outcome(&r, 0, "succeeded\n");
    assert_not_pwned(r.dir);
    assert_non_null(r.args);
    char logdir[256], worker[256];
    fmt(logdir, sizeof(logdir), "%s/torchrun", r.home);
    fmt(worker, sizeof(worker), "%s/worker.sh", r.home);
    const char *const want_args[] = {
        "--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d",
        "--rdzv_endpoint=127.0.0.1:29400", "--rdzv_id=demo-0123abcd-1", "--rdzv_conf=is_host=1",
        "--monitor_interval=0.1", "--max_restarts=0", "--log_dir", logdir, "--redirects", "1", "--tee", "1",
        "--no_python", "/bin/bash", worker,
    };
    assert_nul_list(r.args, r.args_len, want_args, sizeof(want_args) / sizeof(want_args[0]));
    /* torch 1.x has no --local_addr: the node says what is published */
    assert_non_null(strstr(r.log, "gpuctl: launcher torchrun, torch 1.13.0a0\n"));
    assert_non_null(strstr(r.log, "gpuctl: no --local_addr in torch < 2.0: peers must resolve host name"));
    assert_env(r.env, r.env_len, "GPUCTL_NODE_IP", "127.0.0.1");

    for (size_t i = 0; i < N_HOSTILE; i++)
        assert_env(r.env, r.env_len, hostile_names[i], hostile[i]);
    assert_env(r.env, r.env_len, "GPUCTL_CLUSTER", "demo 'x'");
    assert_env(r.env, r.env_len, "GPUCTL_RUN_COMMAND", s.run.command);
    assert_env(r.env, r.env_len, "GPUCTL_CLUSTER_ID", "demo-0123abcd");
    assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", "0");
    assert_env(r.env, r.env_len, "GPUCTL_NUM_NODES", "2");
    assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", "127.0.0.1");
    assert_env(r.env, r.env_len, "GPUCTL_RDZV_PORT", "29400");
    assert_env(r.env, r.env_len, "GPUCTL_GPUS_PER_NODE", "0");
    assert_env(r.env, r.env_len, "GPUCTL_DIST_BACKEND", "gloo");
    assert_env(r.env, r.env_len, "GPUCTL_WORKDIR", NULL);
    assert_env(r.env, r.env_len, "GPUCTL_CHECKPOINT_DIR", NULL);
    assert_env(r.env, r.env_len, "NCCL_IB_DISABLE", "1");
    assert_env(r.env, r.env_len, "FI_PROVIDER", NULL);

    char want_ran[256];
    fmt(want_ran, sizeof(want_ran), "demo 'x'|%s|it's", hostile[0]);
    assert_non_null(r.ran);
    assert_string_equal(r.ran, want_ran);

    char f[256], want_setup[256];
    fmt(f, sizeof(f), "%s/setup", r.out);
    char *setup = slurp(f, NULL);
    fmt(want_setup, sizeof(want_setup), "setup-ran\n%s\n", r.home);
    assert_non_null(setup);
    assert_string_equal(setup, want_setup);
    free(setup);

    assert_non_null(r.log);
    assert_non_null(strstr(r.log, "gpuctl: bootstrap start"));
    assert_non_null(strstr(r.log, "gpuctl: phase setup\n"));
    assert_non_null(strstr(r.log, "gpuctl: phase running\n"));
    assert_non_null(strstr(r.log, "gpuctl: exit status 0\n"));
    assert_null(strstr(r.log, "powering off"));
    assert_null(r.shutdown); /* never on the local provider */
    node_run_free(&r);
}

/* Rank 1 with 2 GPUs and torch 2.x: IPv6 head, workdir and checkpoint dir,
 * nccl, no --redirects; the EFA defaults apply except where the job env
 * sets the variable. */
static void test_run_rank1_gpu_torch2(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "run1", "2.5.1+cu124", 2);
    char work[256], ckpt[256];
    fmt(work, sizeof(work), "%s/work dir", r.dir);
    fmt(ckpt, sizeof(ckpt), "%s/ckpt/a", r.dir);
    assert_int_equal(mkdir(work, 0700), 0);

    gpc_spec s;
    base_spec(&s);
    gpc_env_var env[] = {{"NCCL_SOCKET_IFNAME", "ens5"}, {"FI_EFA_FORK_SAFE", "0"}};
    s.env = env;
    s.n_env = 2;
    s.resources.interconnect = GPC_IC_EFA;
    s.run.command = "pwd >\"$STUB_OUT/ran\"";
    gpc_node_ctx n = base_node();
    n.rank = 1;
    n.nnodes = 3;
    n.head_addr = "[::1]";
    n.rdzv_port = 29411;
    n.workdir = work;
    n.checkpoint_dir = ckpt;
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, "GPUCTL_HEAD_WAIT_S=0");
    free(b);

    assert_outcome(&r, 0, "succeeded\n");
    char logdir[256], worker[256];
    fmt(logdir, sizeof(logdir), "%s/torchrun", r.home);
    fmt(worker, sizeof(worker), "%s/worker.sh", r.home);
    const char *const want_args[] = {
        "--nnodes=3", "--nproc_per_node=2", "--rdzv_backend=c10d",
        "--rdzv_endpoint=[::1]:29411", "--rdzv_id=demo-0123abcd-1", "--rdzv_conf=is_host=0",
        "--monitor_interval=0.1", "--max_restarts=0", "--log_dir", logdir, "--local_addr=127.0.0.1",
        "--no_python", "/bin/bash", worker,
    };
    assert_nul_list(r.args, r.args_len, want_args, sizeof(want_args) / sizeof(want_args[0]));
    assert_non_null(strstr(r.log, "gpuctl: launcher torchrun, torch 2.5.1+cu124\n"));
    assert_env(r.env, r.env_len, "GPUCTL_NODE_IP", "127.0.0.1");
    assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", "::1");
    assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", "1");
    assert_env(r.env, r.env_len, "GPUCTL_GPUS_PER_NODE", "2");
    assert_env(r.env, r.env_len, "GPUCTL_DIST_BACKEND", "nccl");
    assert_env(r.env, r.env_len, "GPUCTL_WORKDIR", work);
    assert_env(r.env, r.env_len, "GPUCTL_CHECKPOINT_DIR", ckpt);
    assert_env(r.env, r.env_len, "FI_PROVIDER", "efa");
    assert_env(r.env, r.env_len, "FI_EFA_USE_DEVICE_RDMA", NULL); /* no type: not forced */
    assert_env(r.env, r.env_len, "RDMAV_FORK_SAFE", "1");
    assert_env(r.env, r.env_len, "FI_EFA_FORK_SAFE", "0");
    assert_env(r.env, r.env_len, "NCCL_SOCKET_IFNAME", "ens5");
    assert_env(r.env, r.env_len, "NCCL_IB_DISABLE", NULL);
    assert_true(file_exists(ckpt));
    char want_ran[300];
    fmt(want_ran, sizeof(want_ran), "%s\n", work);
    assert_non_null(r.ran);
    assert_string_equal(r.ran, want_ran);
    node_run_free(&r);
}

/* A node given a share of the machine's GPUs (CUDA_VISIBLE_DEVICES, as the
 * local provider does on a multi-GPU server) counts only those: 4 GPUs on
 * the machine, 2 visible -> 2 per node and nproc_per_node auto = 2. */
static void test_run_visible_gpu_share(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "share", "2.5.1+cu124", 4);
    gpc_spec s;
    base_spec(&s);
    s.run.nproc_per_node = 0;
    s.run.command = "true";
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, "CUDA_VISIBLE_DEVICES=2,3");
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "GPUCTL_GPUS_PER_NODE", "2");
    assert_env(r.env, r.env_len, "GPUCTL_DIST_BACKEND", "nccl");
    assert_env(r.env, r.env_len, "CUDA_VISIBLE_DEVICES", "2,3");
    node_run_free(&r);
    /* without a share, all four */
    node_prepare(&r, "noshare", "2.5.1+cu124", 4);
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "GPUCTL_GPUS_PER_NODE", "4");
    node_run_free(&r);
}

/* The interconnect sets of azure.md 7.3 and aliyun.md 6.2, and an explicit
 * nproc_per_node. */
static void test_run_interconnect_sets(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runib", "2.4.0", 1);
    gpc_spec s;
    base_spec(&s);
    gpc_env_var env[] = {{"NCCL_IB_PCI_RELAXED_ORDERING", "0"}};
    s.env = env;
    s.n_env = 1;
    s.resources.interconnect = GPC_IC_INFINIBAND;
    s.run.command = "true";
    s.run.nproc_per_node = 3;
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "NCCL_IB_DISABLE", "0");
    assert_env(r.env, r.env_len, "NCCL_IB_PCI_RELAXED_ORDERING", "0");
    assert_env(r.env, r.env_len, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    assert_true(nul_list_has(r.args, r.args_len, "--nproc_per_node=3"));
    node_run_free(&r);

    node_prepare(&r, "runerdma", "2.4.0", 0);
    s.n_env = 0;
    s.resources.interconnect = GPC_IC_ERDMA;
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "NCCL_IB_HCA", "erdma");
    assert_env(r.env, r.env_len, "NCCL_IB_GID_INDEX", "1");
    assert_env(r.env, r.env_len, "NCCL_IB_QPS_PER_CONNECTION", "8");
    assert_env(r.env, r.env_len, "NCCL_MIN_NCHANNELS", "16");
    assert_env(r.env, r.env_len, "NCCL_NET_PLUGIN", "none");
    assert_env(r.env, r.env_len, "GPUCTL_DIST_BACKEND", "gloo");
    node_run_free(&r);

    node_prepare(&r, "runany", "2.4.0", 0);
    s.resources.interconnect = GPC_IC_ANY;
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "NCCL_IB_DISABLE", NULL);
    assert_env(r.env, r.env_len, "NCCL_SOCKET_IFNAME", NULL);
    assert_env(r.env, r.env_len, "FI_PROVIDER", NULL);
    node_run_free(&r);
}

static void test_run_job_fails(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runfail", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "echo boom; exit 3";
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    /* torchrun says 1; the node reports the worker's own 3 */
    assert_outcome(&r, 3, "failed\n");
    assert_non_null(strstr(r.log, "boom\n"));
    assert_non_null(strstr(r.log, "torchrun exited 1; local rank 0 exited 3\n"));
    assert_non_null(strstr(r.log, "gpuctl: exit status 3\n"));
    assert_null(r.console); /* local: nothing on the console */
    node_run_free(&r);

    /* on a cloud the failing status reaches the serial console too */
    node_prepare(&r, "runfailaws", "2.4.0", 0);
    n.rank = 1;
    n.head_addr = "10.0.0.1";
    b = render_boot(&s, &n, "aws");
    node_exec(&r, b, "GPUCTL_HEAD_WAIT_S=0");
    free(b);
    assert_outcome(&r, 3, "failed\n");
    assert_non_null(r.console);
    assert_string_equal(r.console, "gpuctl-node-exit: cluster=demo-0123abcd rank=1 status=3\n");
    node_run_free(&r);

    /* a SIGTERM while it records the outcome (a scheduler stopping the
     * job's other tasks as this one ends: here from `shutdown`) does not
     * replace the outcome.  Regression: the bootstrap then exited 143. */
    node_prepare(&r, "runfailterm", "2.4.0", 0);
    char stubp[320];
    fmt(stubp, sizeof(stubp), "%s/stub/shutdown", r.dir);
    /* (only the power-off at the end: the one the node's end schedules at
     * boot, `-h +4322` for the default 72 h, is no signal) */
    static const char term[] = "#!/bin/bash\n[ \"$2\" = now ] || exit 0\n"
                               "kill -TERM \"$PPID\"\nsleep 1\n";
    write_file(stubp, term, sizeof(term) - 1, 0755);
    b = render_boot(&s, &n, "aws");
    node_exec(&r, b, "GPUCTL_HEAD_WAIT_S=0");
    free(b);
    assert_outcome(&r, 3, "failed\n");
    assert_null(strstr(r.log, "received SIGTERM"));
    node_run_free(&r);
    n.rank = 0;
    n.head_addr = NULL;

    /* a worker killed by a signal: torchrun's status stands */
    node_prepare(&r, "runkilled", "2.4.0", 0);
    s.run.command = "kill -KILL $$";
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 1, "failed\n");
    char f[256];
    fmt(f, sizeof(f), "%s/workers/0.status", r.home);
    char *st = slurp(f, NULL);
    assert_non_null(st);
    assert_string_equal(st, "137\n");
    free(st);
    node_run_free(&r);
}

static void test_run_setup_fails(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runsetup", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.setup = "echo first\nfalse\necho never";
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 1, "failed\n");
    assert_null(r.args); /* torchrun never started */
    assert_non_null(strstr(r.log, "first\n"));
    assert_null(strstr(r.log, "never"));
    assert_non_null(strstr(r.log, "setup failed with status 1"));
    node_run_free(&r);
}

static void test_run_max_duration(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runlimit", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.setup = "sleep 20; echo not-reached";
    s.lifecycle.max_duration_s = 1;
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    time_t t0 = time(NULL);
    node_exec(&r, b, NULL);
    free(b);
    assert_true(time(NULL) - t0 < 10);
    assert_outcome(&r, 124, "failed\n");
    assert_non_null(strstr(r.log, "max_duration limit of 1s hit; setup stopped"));
    assert_null(strstr(r.log, "not-reached"));
    assert_null(r.args);
    node_run_free(&r);

    /* the limit also covers torchrun */
    node_prepare(&r, "runlimit2", "2.4.0", 0);
    base_spec(&s);
    s.run.command = "sleep 20";
    s.lifecycle.max_duration_s = 2;
    b = render_boot(&s, &n, "local");
    t0 = time(NULL);
    node_exec(&r, b, NULL);
    free(b);
    assert_true(time(NULL) - t0 < 10);
    assert_outcome(&r, 124, "failed\n");
    assert_non_null(strstr(r.log, "max_duration limit of 2s hit; torchrun stopped"));
    node_run_free(&r);
}

/* SIGTERM to the node's process group (what the local provider's delete
 * sends) stops the job quickly, records 143, and leaves nothing behind,
 * with torch 1.x's and 2.x's ways of signalling workers. */
/* A worker that failed by itself (exit 7) while torchrun still waits (for
 * the other nodes, as after a failure), then SIGTERM (a scheduler ending
 * the job's other tasks): the node's status is the worker's 7, not 143.
 * Regression: a Slurm job's failing rank was reported 143. */
static void test_run_sigterm_after_failure(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runtermfail", "2.4.0", 0);
    /* torchrun that waits on after its worker failed */
    char p[320];
    fmt(p, sizeof(p), "%s/stub/torchrun", r.dir);
    static const char stub[] =
        "#!/bin/bash\n"
        "while [ $# -gt 0 ] && [ \"$1\" != --no_python ]; do shift; done\n"
        "shift\n"
        "export LOCAL_RANK=0\n"
        "\"$@\"\n"
        "exec sleep 60\n";
    write_file(p, stub, sizeof(stub) - 1, 0755);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "exit 7";
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    char path[256], drv[256], text[2048];
    fmt(path, sizeof(path), "%s/bootstrap.sh", r.dir);
    write_file(path, b, strlen(b), 0700);
    free(b);
    fmt(drv, sizeof(drv), "%s/driver.sh", r.dir);
    fmt(text, sizeof(text),
        "cd '%s' || exit 90\n"
        "env -i PATH='%s/stub:/usr/bin:/bin' GPUCTL_HOME='%s' STUB_OUT='%s' "
        "setsid /bin/bash '%s' </dev/null &\n"
        "pid=$!\n"
        "for i in $(seq 100); do [ -s '%s/workers/0.status' ] && break; sleep 0.1; done\n"
        "[ -s '%s/workers/0.status' ] || exit 91\n"
        "kill -TERM \"$pid\"\n"
        "wait $pid\n",
        r.dir, r.dir, r.home, r.out, path, r.home, r.home);
    write_file(drv, text, strlen(text), 0700);
    time_t t0 = time(NULL);
    int rc = sh("/bin/bash '%s'", drv);
    assert_true(time(NULL) - t0 < 20);
    char f[256];
    fmt(f, sizeof(f), "%s/exit_status", r.home);
    r.exit_status = slurp(f, NULL);
    fmt(f, sizeof(f), "%s/node.log", r.home);
    r.log = slurp(f, NULL);
    if (rc != 7)
        fail_msg("driver exit %d; log:\n%s", rc, r.log ? r.log : "(none)");
    assert_non_null(r.exit_status);
    assert_string_equal(r.exit_status, "7\n");
    assert_non_null(strstr(r.log, "received SIGTERM"));
    assert_non_null(strstr(r.log, "local rank 0 had exited 7\n"));
    node_run_free(&r);
}

static void test_run_sigterm(void **state)
{
    (void)state;
    static const char *const torch[] = {"1.13.0a0", "2.4.0"};
    for (size_t t = 0; t < 2; t++) {
        node_run r;
        char name[32];
        fmt(name, sizeof(name), "runterm%zu", t);
        node_prepare(&r, name, torch[t], 0);
        gpc_spec s;
        base_spec(&s);
        s.run.command = "echo $$ >\"$STUB_OUT/worker.pid\"; exec sleep 60";
        gpc_node_ctx n = base_node();
        char *b = render_boot(&s, &n, "local");
        char path[256], drv[256], text[2048];
        fmt(path, sizeof(path), "%s/bootstrap.sh", r.dir);
        write_file(path, b, strlen(b), 0700);
        free(b);
        fmt(drv, sizeof(drv), "%s/driver.sh", r.dir);
        fmt(text, sizeof(text),
            "cd '%s' || exit 90\n"
            "env -i PATH='%s/stub:/usr/bin:/bin' GPUCTL_HOME='%s' STUB_OUT='%s' "
            "setsid /bin/bash '%s' </dev/null &\n"
            "pid=$!\n"
            "for i in $(seq 100); do [ -s '%s/worker.pid' ] && break; sleep 0.1; done\n"
            "[ -s '%s/worker.pid' ] || exit 91\n"
            "kill -TERM -- -$pid\n"
            "wait $pid\n"
            "rc=$?\n"
            "sleep 0.2\n"
            "if kill -0 \"$(cat '%s/worker.pid')\" 2>/dev/null; then exit 92; fi\n"
            "exit $rc\n",
            r.dir, r.dir, r.home, r.out, path, r.out, r.out, r.out);
        write_file(drv, text, strlen(text), 0700);
        time_t t0 = time(NULL);
        int rc = sh("/bin/bash '%s'", drv);
        assert_true(time(NULL) - t0 < 10);
        char f[256];
        fmt(f, sizeof(f), "%s/exit_status", r.home);
        r.exit_status = slurp(f, NULL);
        fmt(f, sizeof(f), "%s/node.log", r.home);
        r.log = slurp(f, NULL);
        if (rc != 143)
            fail_msg("torch %s: driver exit %d; log:\n%s", torch[t], rc, r.log ? r.log : "(none)");
        assert_non_null(r.exit_status);
        assert_string_equal(r.exit_status, "143\n");
        assert_non_null(strstr(r.log, "received SIGTERM"));
        fmt(f, sizeof(f), "%s/workers/0.status", r.home);
        r.ran = slurp(f, NULL);
        assert_non_null(r.ran);
        assert_string_equal(r.ran, "143\n");
        node_run_free(&r);
    }
}

/* The head address must be an IP literal, also when found at run time. */
static void test_run_bad_local_ip(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "runbadip", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "local");
    node_exec(&r, b, "GPUCTL_LOCAL_IP=localhost");
    free(b);
    assert_outcome(&r, 1, "failed\n");
    assert_non_null(strstr(r.log, "head address 'localhost' is not an IP literal"));
    assert_null(r.args);
    node_run_free(&r);

    node_prepare(&r, "runlocalip", "2.4.0", 0);
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, "GPUCTL_LOCAL_IP=10.9.8.7");
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", "10.9.8.7");
    node_run_free(&r);
}

/* max_duration on a cloud also schedules an OS power-off two minutes after
 * the limit (in case the bootstrap dies), then powers off at the end. */
static void test_run_cloud_poweroff_fallback(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "fallback", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "true";
    s.lifecycle.max_duration_s = 3600;
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "aws");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_non_null(r.shutdown);
    assert_string_equal(r.shutdown, "-h +62\n-h now\n");
    node_run_free(&r);
}

/* lifecycle.idle_timeout on the node: after its job the node stays up until
 * no job has run for that long (the `job` record, which a later job
 * rewrites), then stops itself through the node script's gpuctl_md_stop
 * (local: the bootstrap ends; aws: it powers off) and says why in
 * `stopped`.  Without idle_timeout the bootstrap has none of it. */
static void test_run_idle_timeout(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "aws");
    assert_null(strstr(b, "gpuctl_idle"));
    assert_null(strstr(b, "gpuctl_md_stop"));
    free(b);

    /* local, 2 s; a job started by hand 1 s after the first one ended runs
     * 2 s: the node stops 2 s after that one ended, not after the first */
    node_run r;
    node_prepare(&r, "idle", "2.4.0", 0);
    s.lifecycle.idle_timeout_s = 2;
    s.run.command = "H=$GPUCTL_HOME; setsid env -u GPUCTL_HOME -u GPUCTL_JOB_ID bash -c 'sleep 1; "
                    "echo \"running $(date +%s)\" >\"$0/job\"; sleep 2; "
                    "echo \"ended $(date +%s)\" >\"$0/job\"' \"$H\" </dev/null >/dev/null 2>&1 & sleep 0.3";
    b = render_boot(&s, &n, "local");
    assert_non_null(strstr(b, "\nGPUCTL_IDLE_TIMEOUT_S=2\n"));
    time_t t0 = time(NULL);
    node_exec(&r, b, NULL);
    time_t took = time(NULL) - t0;
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    if (took < 5 || took > 12)
        fail_msg("the node stopped after %lld s; want 5 (1 + 2 + 2) to 12; log:\n%s",
                 (long long)took, r.log);
    char f[256];
    fmt(f, sizeof(f), "%s/stopped", r.home);
    char *why = slurp(f, NULL);
    assert_non_null(why);
    assert_string_equal(why, "idle 2s\n");
    free(why);
    fmt(f, sizeof(f), "%s/job", r.home);
    char *job = slurp(f, NULL);
    assert_non_null(job);
    assert_int_equal(strncmp(job, "ended ", 6), 0);
    free(job);
    assert_non_null(strstr(r.log, "gpuctl: idle: the node stops after 2s with no job\n"));
    assert_non_null(strstr(r.log, "gpuctl: no job for 2s: stopping the node\n"));
    assert_null(r.shutdown);
    node_run_free(&r);

    /* aws, 1 s: the node powers itself off (terminate) after the idle time */
    node_prepare(&r, "idleaws", "2.4.0", 0);
    s.lifecycle.idle_timeout_s = 1;
    s.run.command = "true";
    b = render_boot(&s, &n, "aws");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_non_null(r.shutdown);
    /* idle_timeout is no end of a hung job: the default end stands */
    assert_string_equal(r.shutdown, "-h +4322\n-h now\n");
    assert_non_null(strstr(r.log, "gpuctl: no job for 1s: stopping the node\n"));
    assert_null(strstr(r.log, "powering off"));
    node_run_free(&r);

    /* a node script without gpuctl_md_stop cannot honour it */
    gpc_userdata_rules bare = *gpc_provider_find("local")->userdata;
    bare.node_script = "gpuctl_md_machine=0\ngpuctl_md_private_ip() {\n  :\n}\n";
    char *out = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    s.lifecycle.idle_timeout_s = 60;
    assert_int_equal(gpc_render_bootstrap(&s, &n, &bare, &out, &e), GPC_ERR_RENDER);
    assert_non_null(strstr(e.msg, "does not define gpuctl_md_stop, which lifecycle.idle_timeout needs"));
    assert_null(out);
}

/* Rank 0 on a cloud finds its private IP through the provider's metadata
 * service (hostname -I when that fails), and powers the node off at the
 * end unless GPUCTL_POWEROFF=0. */
static void test_run_cloud_metadata(void **state)
{
    (void)state;
    static const struct {
        const char *prov, *extra, *ip, *shutdown;
    } cases[] = {
        /* first the power-off backup of the default end (72 h: at boot,
         * 72 h + 2 min = 4322 minutes ahead), then the one at the end */
        {"aws", NULL, "10.0.0.7", "-h +4322\n-h now\n"},
        {"azure", NULL, "10.1.0.4", "-h +4322\n-h now\n"},
        {"aliyun", "GPUCTL_POWEROFF_DELAY=5", "172.16.0.9", "-h +4322\n-h +5\n"},
        {"aws", "STUB_CURL=fail", "192.168.1.5", "-h +4322\n-h now\n"},
        {"aliyun", "GPUCTL_POWEROFF=0", "172.16.0.9", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        node_run r;
        char name[32], extra[128], want_ep[64];
        fmt(name, sizeof(name), "runmd%zu", i);
        node_prepare(&r, name, "2.4.0", 0);
        gpc_spec s;
        base_spec(&s);
        s.run.command = "true";
        gpc_node_ctx n = base_node();
        char *b = render_boot(&s, &n, cases[i].prov);
        fmt(extra, sizeof(extra), "%s", cases[i].extra ? cases[i].extra : "");
        node_exec(&r, b, extra);
        free(b);
        assert_outcome(&r, 0, "succeeded\n");
        assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", cases[i].ip);
        fmt(want_ep, sizeof(want_ep), "--rdzv_endpoint=%s:29400", cases[i].ip);
        assert_true(nul_list_has(r.args, r.args_len, want_ep));
        /* the node's own IP literal is what it advertises */
        assert_env(r.env, r.env_len, "GPUCTL_NODE_IP", cases[i].ip);
        fmt(want_ep, sizeof(want_ep), "--local_addr=%s", cases[i].ip);
        assert_true(nul_list_has(r.args, r.args_len, want_ep));
        if (cases[i].shutdown) {
            assert_non_null(r.shutdown);
            assert_string_equal(r.shutdown, cases[i].shutdown);
            assert_non_null(strstr(r.log, "powering off"));
        } else {
            assert_null(r.shutdown);
        }
        /* the exit status on the serial console, for the control plane */
        assert_non_null(r.console);
        assert_string_equal(r.console, "gpuctl-node-exit: cluster=demo-0123abcd rank=0 status=0\n");
        node_run_free(&r);
    }
}

/* EFA: GPUDirect RDMA is turned on only for the instance types that have
 * it (aws.md 5.3), and the node knows its instance type. */
static void test_run_efa_gpudirect(void **state)
{
    (void)state;
    static const struct {
        const char *type, *rdma;
    } cases[] = {{"p4d.24xlarge", "1"}, {"p5.48xlarge", "1"}, {"p5en.48xlarge", "1"},
                 {"g5.48xlarge", NULL}, {"p3dn.24xlarge", NULL}, {"g4dn.12xlarge", NULL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        node_run r;
        char name[32];
        fmt(name, sizeof(name), "gdr%zu", i);
        node_prepare(&r, name, "2.4.0", 0);
        gpc_spec s;
        base_spec(&s);
        s.run.command = "true";
        s.resources.interconnect = GPC_IC_EFA;
        gpc_node_ctx n = base_node();
        n.instance_type = cases[i].type;
        char *b = render_boot(&s, &n, "aws");
        node_exec(&r, b, NULL);
        free(b);
        assert_outcome(&r, 0, "succeeded\n");
        assert_env(r.env, r.env_len, "GPUCTL_INSTANCE_TYPE", cases[i].type);
        assert_env(r.env, r.env_len, "FI_PROVIDER", "efa");
        assert_env(r.env, r.env_len, "FI_EFA_USE_DEVICE_RDMA", cases[i].rdma);
        node_run_free(&r);
    }
}

/* The workers of one EC2 RunInstances share one user-data: each takes
 * its rank from its ami-launch-index (IMDSv2) plus the first worker's
 * rank; an index that would pass the node count stops the node. */
static void test_run_rank_from_launch_index(void **state)
{
    (void)state;
    static const struct {
        const char *index;
        int exit;
        const char *rank;
    } cases[] = {{"0", 0, "1"}, {"2", 0, "3"}, {"3", 1, NULL}, {"x", 1, NULL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        node_run r;
        char name[32], extra[64];
        fmt(name, sizeof(name), "launch%zu", i);
        node_prepare(&r, name, "2.4.0", 0);
        gpc_spec s;
        base_spec(&s);
        s.run.command = "true";
        gpc_node_ctx n = base_node();
        n.rank = 1;
        n.nnodes = 4;
        n.head_addr = "10.0.0.1";
        n.rank_from = GPC_RANK_LAUNCH_INDEX;
        char *b = render_boot(&s, &n, "aws");
        fmt(extra, sizeof(extra), "STUB_LAUNCH_INDEX=%s GPUCTL_HEAD_WAIT_S=0", cases[i].index);
        node_exec(&r, b, extra);
        free(b);
        if (cases[i].rank) {
            assert_outcome(&r, 0, "succeeded\n");
            assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", cases[i].rank);
        } else {
            assert_outcome(&r, cases[i].exit, "failed\n");
            assert_non_null(strstr(r.log, i == 2 ? "gives node rank 4, not below 4 nodes"
                                                 : "no ami-launch-index"));
        }
        node_run_free(&r);
    }
    /* only with a node script that knows the launch index, and never for
     * the head */
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    n.rank = 1;
    n.head_addr = "10.0.0.1";
    n.rank_from = GPC_RANK_LAUNCH_INDEX;
    char *out = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_bootstrap(&s, &n, gpc_provider_find("azure")->userdata, &out, &e),
                     GPC_ERR_RENDER);
    assert_string_equal(e.msg, "a node rank from the launch index needs a node script that "
                               "defines gpuctl_md_launch_index and a first rank above 0");
    n.rank = 0;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_bootstrap(&s, &n, gpc_provider_find("aws")->userdata, &out, &e),
                     GPC_ERR_RENDER);
    assert_null(out);
}


/* ------------------------------------------------------------------ */
/* Rank and rendezvous sources                                         */

/* The lines that differ between the modes of render.h's gpc_node_ctx. */
static void test_bootstrap_modes(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    static const char launch[] = "\ngpuctl_launch_index=$(gpuctl_md_launch_index) || exit 1\n";
    static const char sched[] = "\ngpuctl_node_rank=$(gpuctl_md_node_rank) || exit 1\n";
    static const char own_ip[] = "\nif [ -z \"$GPUCTL_HEAD_IP\" ]; then\n"
                                 "  GPUCTL_HEAD_IP=$gpuctl_node_ip\nfi\n";
    /* every node finds its own IP literal, to advertise to the rendezvous */
    static const char node_ip[] = "\ngpuctl_node_ip=$(gpuctl_own_ip)\n";
    static const char on_node[] = "\nGPUCTL_HEAD_IP=$(gpuctl_md_head_addr) || exit 1\n";
    static const char names[] = "\nelif gpuctl_is_host_name \"$GPUCTL_HEAD_IP\"; then\n"
                                "  gpuctl_endpoint=\"$GPUCTL_HEAD_IP:$GPUCTL_RDZV_PORT\"\n";
    static const char head[] = "\ngpuctl_is_head=0\nif [ \"$GPUCTL_NODE_RANK\" = 0 ]; then\n"
                               "  gpuctl_is_head=1\nfi\n";
    static const struct {
        const char *rank_line, *head_line;
    } want[N_MODES] = {
        {"\nexport GPUCTL_NODE_RANK=0\n", "\nGPUCTL_HEAD_IP=''\n"},
        {"\nexport GPUCTL_NODE_RANK=0\n", "\nGPUCTL_HEAD_IP='head-0.train.svc.cluster.local'\n"},
        {"\nexport GPUCTL_NODE_RANK=1\n", "\nGPUCTL_HEAD_IP=''\n"},
        {"\nexport GPUCTL_NODE_RANK=1\n", "\nGPUCTL_HEAD_IP='10.0.0.1'\n"},
        {"\nexport GPUCTL_NODE_RANK=0\n", "\nGPUCTL_HEAD_IP='head.example'\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP='10.0.0.1'\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP='head.example'\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP=''\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP='fd00::5'\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP='10.0.0.1'\n"},
        {"\nexport GPUCTL_NODE_RANK=''\n", "\nGPUCTL_HEAD_IP=''\n"},
    };
    for (size_t i = 0; i < N_MODES; i++) {
        gpc_node_ctx n = mode_node(&modes[i]);
        char *b = render_with(&s, &n, &mode_rules);
        if (!strstr(b, want[i].rank_line) || !strstr(b, want[i].head_line))
            fail_msg("mode %zu: lacks '%s' or '%s'", i, want[i].rank_line, want[i].head_line);
        assert_int_equal(strstr(b, launch) != NULL, modes[i].rank_from == GPC_RANK_LAUNCH_INDEX);
        assert_int_equal(strstr(b, "\ngpuctl_md_launch_index() {\n") != NULL,
                         modes[i].rank_from == GPC_RANK_LAUNCH_INDEX);
        assert_int_equal(strstr(b, sched) != NULL, modes[i].rank_from == GPC_RANK_SCHEDULER);
        assert_int_equal(strstr(b, "\ngpuctl_md_node_rank() {\n") != NULL,
                         modes[i].rank_from == GPC_RANK_SCHEDULER);
        assert_int_equal(strstr(b, own_ip) != NULL, modes[i].rdzv_from == GPC_RDZV_HEAD_IP);
        assert_non_null(strstr(b, "\ngpuctl_own_ip() {\n"));
        assert_non_null(strstr(b, node_ip));
        assert_non_null(strstr(b, "\n    gpuctl_args+=(--local_addr=\"$GPUCTL_NODE_IP\")\n"));
        assert_int_equal(strstr(b, on_node) != NULL, modes[i].rdzv_from == GPC_RDZV_ON_NODE);
        assert_int_equal(strstr(b, "\ngpuctl_md_head_addr() {\n") != NULL,
                         modes[i].rdzv_from == GPC_RDZV_ON_NODE);
        assert_int_equal(strstr(b, names) != NULL, modes[i].rdzv_from != GPC_RDZV_HEAD_IP);
        assert_int_equal(strstr(b, "'$GPUCTL_HEAD_IP' is not an IP literal\"\n") != NULL,
                         modes[i].rdzv_from == GPC_RDZV_HEAD_IP);
        /* the head is decided once, and nothing compares the rank */
        assert_non_null(strstr(b, head));
        assert_non_null(strstr(b, "\nif [ \"$gpuctl_is_head\" = 0 ]; then\n"));
        assert_non_null(strstr(b, "\ngpuctl_rdzv_conf=\"is_host=$gpuctl_is_head\"\n"));
        assert_non_null(strstr(b, "\n  --rdzv_conf=\"$gpuctl_rdzv_conf\"\n"));
        assert_null(strstr(b, "\"$GPUCTL_NODE_RANK\" -eq"));
        assert_null(strstr(b, "\"$GPUCTL_NODE_RANK\" -gt"));
        free(b);
    }
}

/* Ranks, head addresses and node scripts that do not go together. */
static void test_bootstrap_mode_errors(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    const gpc_userdata_rules *aws = gpc_provider_find("aws")->userdata;
    gpc_node_ctx n = base_node();

    /* a node script without the function its mode needs */
    n.rank_from = GPC_RANK_SCHEDULER;
    n.head_addr = "10.0.0.1";
    assert_string_equal(render_error(&s, &n, aws),
                        "the node script of provider 'aws' does not define "
                        "gpuctl_md_node_rank, which a node rank from the scheduler needs");
    n = base_node();
    n.rdzv_from = GPC_RDZV_ON_NODE;
    assert_string_equal(render_error(&s, &n, aws),
                        "the node script of provider 'aws' does not define "
                        "gpuctl_md_head_addr, which a rendezvous found on the node needs");
    /* ... also when the function is only in a section of another mode */
    gpc_userdata_rules local = *gpc_provider_find("local")->userdata;
    local.node_script = "gpuctl_md_machine=0\ngpuctl_md_private_ip() {\n  :\n}\n"
                        "##if HEAD_FROM=node\ngpuctl_md_node_rank() {\n  :\n}\n##endif\n";
    n = base_node();
    n.rank_from = GPC_RANK_SCHEDULER;
    n.head_addr = "10.0.0.1";
    assert_string_equal(render_error(&s, &n, &local),
                        "the node script of provider 'local' does not define "
                        "gpuctl_md_node_rank, which a node rank from the scheduler needs");

    /* the head's address where the mode wants one, and not where not */
    n = base_node();
    n.rank_from = GPC_RANK_SCHEDULER;
    assert_string_equal(render_error(&s, &n, &mode_rules),
                        "a node rank from the scheduler needs the head's IP");
    n.rank_from = GPC_RANK_RENDEZVOUS;
    n.rank = 1;
    assert_string_equal(render_error(&s, &n, &mode_rules),
                        "a node rank from the rendezvous needs the head's IP");
    n.rdzv_from = GPC_RDZV_NAME;
    assert_string_equal(render_error(&s, &n, &mode_rules),
                        "a rendezvous at a name needs the head's address on every node");
    n.rdzv_from = GPC_RDZV_ON_NODE;
    n.head_addr = "10.0.0.1";
    assert_string_equal(render_error(&s, &n, &mode_rules),
                        "head address '10.0.0.1' given, but the nodes find the head "
                        "themselves (gpuctl_md_head_addr)");
    n = base_node();
    n.rdzv_from = GPC_RDZV_HEAD_IP;
    n.head_addr = "head.example";
    assert_string_equal(render_error(&s, &n, &mode_rules),
                        "head address 'head.example' is not an IP literal");
    n.rank_from = (gpc_rank_from)9;
    assert_string_equal(render_error(&s, &n, &mode_rules), "unknown rank source 9");
    n.rank_from = GPC_RANK_ENGINE;
    n.rdzv_from = (gpc_rdzv_from)7;
    assert_string_equal(render_error(&s, &n, &mode_rules), "unknown rendezvous source 7");

    /* host names: taken as given, IP literals in their bare form */
    char l63[64], l64[65], n253[254], n254[255];
    memset(l63, 'a', 63);
    l63[63] = '\0';
    memset(l64, 'a', 64);
    l64[64] = '\0';
    for (size_t i = 0; i < 253; i++)
        n253[i] = i % 4 == 3 ? '.' : 'b';
    n253[252] = 'c';
    n253[253] = '\0';
    fmt(n254, sizeof(n254), "%sd", n253);
    char with63[80];
    fmt(with63, sizeof(with63), "%s.example", l63);
    const struct {
        const char *in, *baked;
    } ok[] = {
        {"head", "'head'"},
        {"head-0.train.default.svc.cluster.local", "'head-0.train.default.svc.cluster.local'"},
        {"H1.Example", "'H1.Example'"},
        {"0a.1b", "'0a.1b'"},
        {"x1-2", "'x1-2'"},
        {with63, NULL},
        {n253, NULL},
        {"10.0.0.5", "'10.0.0.5'"},
        {"[fd00::5]", "'fd00::5'"},
    };
    n = base_node();
    n.rdzv_from = GPC_RDZV_NAME;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char want[300];
        n.head_addr = ok[i].in;
        if (ok[i].baked)
            fmt(want, sizeof(want), "\nGPUCTL_HEAD_IP=%s\n", ok[i].baked);
        else
            fmt(want, sizeof(want), "\nGPUCTL_HEAD_IP='%s'\n", ok[i].in);
        char *b = render_with(&s, &n, &mode_rules);
        if (!strstr(b, want))
            fail_msg("'%s': lacks %s", ok[i].in, want);
        free(b);
    }
    const char *const bad[] = {
        "", "-head", "head-", "a.-b", "a-.b", "a..b", ".a", "a.", "a_b", "a b", "1.2.3",
        "head.42", "01.2.3.4", "1.2.3.256", l64, n254, "h;reboot", "$(reboot)", "h\xc3\xa9",
        "[head]", "head:29400", "fe80::1%eth0",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[200];
        n.head_addr = bad[i];
        fmt(want, sizeof(want), "head address '%.64s' is neither a host name nor an IP literal",
            bad[i]);
        const char *msg = render_error(&s, &n, &mode_rules);
        if (strcmp(msg, want) != 0)
            fail_msg("'%s': got '%s'", bad[i], msg);
    }
}

/* Run one node in mode m with the test node script; `extra`: shell words
 * for its environment. */
static void run_mode(node_run *r, const char *name, const mode *m, uint32_t nnodes,
                     const gpc_userdata_rules *rules, const char *extra)
{
    node_prepare(r, name, "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "true";
    gpc_node_ctx n = mode_node(m);
    n.nnodes = nnodes;
    char *b = render_with(&s, &n, rules);
    char words[256];
    fmt(words, sizeof(words), "GPUCTL_HEAD_WAIT_S=0 %s", extra ? extra : "");
    node_exec(r, b, words);
    free(b);
}

/* The log line that tells the node's rank and head, exactly. */
static void assert_node_line(const node_run *r, const char *rank, const char *nnodes,
                             const char *endpoint)
{
    char want[256];
    fmt(want, sizeof(want), " gpuctl: node %s of %s, head %s, GPUs 0, nproc_per_node 1, "
        "backend gloo\n", rank, nnodes, endpoint);
    if (!r->log || !strstr(r->log, want))
        fail_msg("log lacks '%s':\n%s", want, r->log ? r->log : "(none)");
}

/* checkpoint_dir kept in the store (aws) is saved by the node whose
 * torchrun group rank is 0, where global rank 0 runs and writes the
 * checkpoints: not always the head, as the rendezvous orders nodes by host
 * address (a regression: only the head saved, so a job whose rank 0 ran
 * on another node never had a checkpoint saved).  A stub AWS CLI records
 * each sync. */
static void test_ckpt_saved_where_rank0_runs(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint32_t rank;     /* node rank */
        const char *group; /* torchrun's group rank */
        int saves;
    } cases[] = {
        {"ckw0g1", 0, "1", 0},
        {"ckw1g0", 1, "0", 1},
        {"ckw0g0", 0, "0", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        node_run r;
        node_prepare(&r, cases[i].name, "2.4.0", 0);
        char p[320], ckpt[300];
        fmt(p, sizeof(p), "%s/stub/aws", r.dir);
        static const char aws[] = "#!/bin/bash\nprintf '%s\\n' \"$*\" >>\"$STUB_OUT/aws.log\"\n";
        write_file(p, aws, sizeof(aws) - 1, 0755);
        fmt(ckpt, sizeof(ckpt), "%s/ckpt", r.dir);
        gpc_spec s;
        base_spec(&s);
        s.run.command = "true";
        const mode m = {GPC_RANK_ENGINE, GPC_RDZV_HEAD_IP, cases[i].rank,
                        cases[i].rank ? "127.0.0.1" : NULL};
        gpc_node_ctx n = mode_node(&m);
        n.nnodes = 2;
        n.checkpoint_dir = ckpt;
        n.ckpt_store = "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints";
        char *b = render_with(&s, &n, gpc_provider_find("aws")->userdata);
        char extra[64];
        fmt(extra, sizeof(extra), "GPUCTL_HEAD_WAIT_S=0 STUB_GROUP_RANK=%s", cases[i].group);
        node_exec(&r, b, extra);
        free(b);
        assert_outcome(&r, 0, "succeeded\n");
        char want[1024], log[320];
        fmt(want, sizeof(want), "s3 sync --only-show-errors --no-progress "
                         "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints/ %s/\n",
                         ckpt);
        size_t n_want = strlen(want);
        if (cases[i].saves)
            fmt(want + n_want, sizeof(want) - n_want,
                "s3 sync --only-show-errors --no-progress %s/ "
                "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints/\n", ckpt);
        fmt(log, sizeof(log), "%s/aws.log", r.out);
        char *got = slurp(log, NULL);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
        assert_int_equal(strstr(r.log, "checkpoints: saved (final)") != NULL, cases[i].saves);
        node_run_free(&r);
    }
}

/* A spot node's interruption notices (templates/notice.sh, the aws node
 * script's gpuctl_md_notice against a stub IMDSv2 in curl's place): the
 * token first, 404 while there is none; a notice (AWS's documented form,
 * aws.md 5.1) is written to `preempting` as "ACTION EPOCH"
 * (2030-01-01T00:00:00Z = 1893456000), logged with its deadline, the
 * job's worker gets SIGUSR1, and the checkpoint it writes on that signal
 * is saved to the store ("notice").  On-demand nodes, and spot ones on a
 * provider without a notice source (local), have no watcher. */
static void test_run_spot_notice(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "aws");
    assert_null(strstr(b, "gpuctl_notice_watch"));
    assert_null(strstr(b, "gpuctl_md_notice"));
    free(b);
    n.spot = 1;
    b = render_boot(&s, &n, "local");
    assert_null(strstr(b, "gpuctl_notice_watch"));
    free(b);

    node_run r;
    node_prepare(&r, "notice", "2.4.0", 0);
    char p[320], ckpt[300];
    fmt(p, sizeof(p), "%s/stub/curl", r.dir);
    static const char curl[] =
        "#!/bin/bash\n"
        "out='' url='' put=0\n"
        "while [ $# -gt 0 ]; do\n"
        "  case $1 in\n"
        "    -o) out=$2; shift ;;\n"
        "    -X) [ \"$2\" = PUT ] && put=1; shift ;;\n"
        "    -w | -H | --connect-timeout | --max-time | --retry | --retry-delay | --noproxy)"
        " shift ;;\n"
        "    http*) url=$1 ;;\n"
        "  esac\n"
        "  shift\n"
        "done\n"
        "if [ \"$put\" = 1 ]; then echo PUT >>\"$STUB_OUT/imds.log\"; printf T1; exit 0; fi\n"
        "case $url in\n"
        "  */spot/instance-action)\n"
        "    if [ -e \"$STUB_OUT/notice\" ]; then cp \"$STUB_OUT/notice\" \"$out\"; printf 200;\n"
        "    else printf 404; fi ;;\n"
        "  */meta-data/local-ipv4) printf 10.0.0.7 ;;\n"
        "  *) exit 22 ;;\n"
        "esac\n";
    write_file(p, curl, sizeof(curl) - 1, 0755);
    fmt(p, sizeof(p), "%s/stub/aws", r.dir);
    static const char aws[] = "#!/bin/bash\nprintf '%s\\n' \"$*\" >>\"$STUB_OUT/aws.log\"\n";
    write_file(p, aws, sizeof(aws) - 1, 0755);
    /* the notice's JSON is read by the real python3 */
    fmt(p, sizeof(p), "%s/stub/python3", r.dir);
    static const char py[] = "#!/bin/bash\n"
                             "if [[ $1 == -c && $2 == *importlib.metadata* ]]; then\n"
                             "  echo '2.4.0 1'\nelse\n  exec /usr/bin/python3 \"$@\"\nfi\n";
    write_file(p, py, sizeof(py) - 1, 0755);
    fmt(ckpt, sizeof(ckpt), "%s/ckpt", r.dir);
    base_spec(&s);
    /* the job: the notice comes once it runs; on SIGUSR1 it writes a
     * checkpoint and ends once the node said the notice save is done */
    s.run.command =
        "trap 'echo step-7 >\"$GPUCTL_CHECKPOINT_DIR/step-7.pt\"; echo usr1 >\"$STUB_OUT/usr1\"; "
        "for i in $(seq 100); do grep -q \"saved (notice)\" \"$GPUCTL_HOME/node.log\" && "
        "exit 0; sleep 0.1; done; exit 3' USR1\n"
        "printf '{\"action\": \"terminate\", \"time\": \"2030-01-01T00:00:00Z\"}' "
        ">\"$STUB_OUT/notice\"\n"
        "for i in $(seq 100); do sleep 0.1; done; exit 4";
    s.spot.policy = GPC_SPOT_SPOT;
    n = base_node();
    n.nnodes = 1;
    n.spot = 1;
    n.checkpoint_dir = ckpt;
    n.ckpt_store = "s3://gpuctl-123456789012-us-east-1/clusters/demo/checkpoints";
    b = render_boot(&s, &n, "aws");
    node_exec(&r, b, "GPUCTL_NOTICE_POLL_S=1");
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    char f[320];
    fmt(f, sizeof(f), "%s/preempting", r.home);
    char *got = slurp(f, NULL);
    assert_non_null(got);
    assert_string_equal(got, "terminate 1893456000\n");
    free(got);
    fmt(f, sizeof(f), "%s/usr1", r.out);
    got = slurp(f, NULL);
    assert_non_null(got);
    assert_string_equal(got, "usr1\n");
    free(got);
    assert_non_null(strstr(r.log, "interruption notices: asking the aws metadata service every 1s"));
    assert_non_null(strstr(r.log, "interruption notice: terminate at 2030-01-01T00:00:00Z (in "));
    assert_non_null(strstr(r.log, "; the job's workers get SIGUSR1\n"));
    assert_non_null(strstr(r.log, "checkpoints: saved (notice) to s3://gpuctl-123456789012-"
                                  "us-east-1/clusters/demo/checkpoints\n"));
    /* a cluster that buys spot: torchrun restarts the workers left when a
     * node is lost and waits up to 1800 s for its replacement */
    char logdir[256], worker[256];
    fmt(logdir, sizeof(logdir), "%s/torchrun", r.home);
    fmt(worker, sizeof(worker), "%s/worker.sh", r.home);
    const char *const want_args[] = {
        "--nnodes=1", "--nproc_per_node=1", "--rdzv_backend=c10d",
        "--rdzv_endpoint=10.0.0.7:29400", "--rdzv_id=demo-0123abcd-1",
        "--rdzv_conf=is_host=1,join_timeout=1800", "--monitor_interval=0.1", "--max_restarts=3",
        "--log_dir", logdir, "--local_addr=10.0.0.7", "--no_python", "/bin/bash", worker,
    };
    assert_nul_list(r.args, r.args_len, want_args, sizeof(want_args) / sizeof(want_args[0]));
    /* two tokens: one for the node's address (gpuctl_md_private_ip), one
     * the watcher keeps for all of its asks */
    fmt(f, sizeof(f), "%s/imds.log", r.out);
    got = slurp(f, NULL);
    assert_non_null(got);
    assert_string_equal(got, "PUT\nPUT\n");
    free(got);
    node_run_free(&r);
}

/* The node's end where the spec gives none (spec.h, gpc_spec_node_end):
 * the default max_duration (72 h = 259200 s) unless the spec says
 * `max_duration: none` or a budget end bounds the node; `none` renders no
 * end at all, and on a cloud schedules no power-off at boot. */
static void test_bootstrap_default_end(void **state)
{
    (void)state;
    static const struct {
        int none;
        double max_total, hourly;
        const char *want_md, *want_budget, *want_note;
    } cases[] = {
        {0, 0, 0, "=259200\n", "=0\n", "s\"' (the default: the spec sets no "
                                          "lifecycle.max_duration)'\" hit\"\n"},
        {0, 0, 24, "=259200\n", "=0\n", "s\"' (the default: the spec sets no "},
        {1, 0, 24, "=0\n", "=0\n", "s\"''\" hit\"\n"},
        /* 0.02 USD at 24 USD/hour: 3 s, and no default */
        {0, 0.02, 24, "=0\n", "=3\n", "s\"''\" hit\"\n"},
        {1, 0.02, 24, "=0\n", "=3\n", "s\"''\" hit\"\n"},
        /* a budget that a cluster of no price never spends: the default */
        {0, 0.02, 0, "=259200\n", "=0\n", "s\"' (the default: the spec sets no "},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpc_spec s;
        base_spec(&s);
        s.lifecycle.max_duration_none = cases[i].none;
        s.budget.max_total = cases[i].max_total;
        gpc_node_ctx n = base_node();
        n.cluster_hourly = cases[i].hourly;
        char *b = render_boot(&s, &n, "aws");
        char want[256];
        fmt(want, sizeof(want), "\nGPUCTL_MAX_DURATION_S%s", cases[i].want_md);
        if (!strstr(b, want))
            fail_msg("case %zu: no '%s'", i, want);
        fmt(want, sizeof(want), "\nGPUCTL_BUDGET_S%s", cases[i].want_budget);
        if (!strstr(b, want))
            fail_msg("case %zu: no '%s'", i, want);
        fmt(want, sizeof(want), "\ngpuctl_end_why=\"max_duration limit of "
            "${GPUCTL_MAX_DURATION_S}%s", cases[i].want_note);
        if (!strstr(b, want))
            fail_msg("case %zu: no '%s'", i, want);
        free(b);
    }

    /* none on aws: the only power-off is the one at the job's end */
    node_run r;
    node_prepare(&r, "endnone", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "true";
    s.lifecycle.max_duration_none = 1;
    gpc_node_ctx n = base_node();
    char *b = render_boot(&s, &n, "aws");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 0, "succeeded\n");
    assert_non_null(r.shutdown);
    assert_string_equal(r.shutdown, "-h now\n");
    node_run_free(&r);
}

/* budget.max_total on the node: every node ends when the cluster, at the
 * prices its nodes were bought at, would have spent it, as max_duration
 * does, whichever comes first.  0.02 USD at 24 USD/hour (2 nodes) is
 * 0.02 / 24 x 3600 = 3 s.  (Where the end finds the node, in setup, before
 * torchrun or in it, depends on the machine's load: the reason is what is
 * asserted; regression: CI's load put a 1 s end before torchrun.) */
static void test_run_budget_end(void **state)
{
    (void)state;
    node_run r;
    node_prepare(&r, "budget", "2.4.0", 0);
    gpc_spec s;
    base_spec(&s);
    s.run.command = "sleep 20";
    s.budget.max_total = 0.02;
    gpc_node_ctx n = base_node();
    n.cluster_hourly = 24;
    char *b = render_boot(&s, &n, "local");
    assert_non_null(strstr(b, "\nGPUCTL_BUDGET_S=3\n"));
    time_t t0 = time(NULL);
    node_exec(&r, b, NULL);
    free(b);
    assert_true(time(NULL) - t0 < 15);
    assert_outcome(&r, 124, "failed\n");
    assert_non_null(strstr(r.log, "gpuctl: budget.max_total 0.0200 USD at the cluster's 24.0000 "
                                  "USD/hour (2 node(s)) is spent (3s)"));
    node_run_free(&r);

    /* max_duration first: it says so */
    node_prepare(&r, "budget2", "2.4.0", 0);
    s.lifecycle.max_duration_s = 2;
    b = render_boot(&s, &n, "local");
    node_exec(&r, b, NULL);
    free(b);
    assert_outcome(&r, 124, "failed\n");
    assert_non_null(strstr(r.log, "gpuctl: max_duration limit of 2s hit"));
    assert_null(strstr(r.log, "gpuctl: budget.max_total"));
    node_run_free(&r);

    /* nothing to spend: no end from the budget */
    s.lifecycle.max_duration_s = 0;
    n.cluster_hourly = 0;
    b = render_boot(&s, &n, "local");
    assert_non_null(strstr(b, "\nGPUCTL_BUDGET_S=0\n"));
    free(b);
}

/* The bootstrap of each mode, run to its end with stub torchrun: the rank
 * from the scheduler, the head from the node or by name, a worker the
 * rendezvous numbers. */
static void test_run_modes(void **state)
{
    (void)state;
    node_run r;
    const mode sched_name = {GPC_RANK_SCHEDULER, GPC_RDZV_NAME, 0, "localhost"};
    const mode sched_node = {GPC_RANK_SCHEDULER, GPC_RDZV_ON_NODE, 0, NULL};
    const mode engine_node = {GPC_RANK_ENGINE, GPC_RDZV_ON_NODE, 0, NULL};
    const mode rdzv_ip = {GPC_RANK_RENDEZVOUS, GPC_RDZV_HEAD_IP, 1, "127.0.0.1"};
    const mode rdzv_name = {GPC_RANK_RENDEZVOUS, GPC_RDZV_NAME, 1, "localhost"};
    const mode launch_name = {GPC_RANK_LAUNCH_INDEX, GPC_RDZV_NAME, 0, "localhost"};

    /* the scheduler's rank 2 of 3: a worker, which waits for the head */
    run_mode(&r, "msched2", &sched_name, 3, &mode_rules, "STUB_NODE_RANK=2");
    assert_outcome(&r, 0, "succeeded\n");
    assert_node_line(&r, "2", "3", "localhost:29400");
    /* after 0 s, or 1 s when the second turned meanwhile (a loaded machine) */
    assert_true(strstr(r.log, "gpuctl: head localhost:29400 not reachable after 0s; "
                              "starting anyway\n") ||
                strstr(r.log, "gpuctl: head localhost:29400 not reachable after 1s; "
                              "starting anyway\n"));
    assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", "2");
    assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", "localhost");
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_endpoint=localhost:29400"));
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_conf=is_host=0"));
    node_run_free(&r);
    /* ... and its rank 0 (written 000): the head, which waits for nobody */
    run_mode(&r, "msched0", &sched_name, 3, &mode_rules, "STUB_NODE_RANK=000");
    assert_outcome(&r, 0, "succeeded\n");
    assert_node_line(&r, "0", "3", "localhost:29400");
    assert_null(strstr(r.log, "head localhost:29400 not reachable"));
    assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", "0");
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_conf=is_host=1"));
    node_run_free(&r);
    /* ... ranks it must not take */
    static const struct {
        const char *rank, *says;
    } bad_rank[] = {
        {"3", "gpuctl: error: node rank 3 from the scheduler is not below 3 nodes\n"},
        {"x1", "gpuctl: error: node rank 'x1' from the scheduler is not a number\n"},
        {"", "gpuctl: error: node rank '' from the scheduler is not a number\n"},
        {"1234567", "gpuctl: error: node rank '1234567' from the scheduler is not a number\n"},
        {"fail", "gpuctl: error: no rank from the test scheduler\n"},
    };
    for (size_t i = 0; i < sizeof(bad_rank) / sizeof(bad_rank[0]); i++) {
        char name[32], extra[64];
        fmt(name, sizeof(name), "mschedbad%zu", i);
        fmt(extra, sizeof(extra), "STUB_NODE_RANK='%s'", bad_rank[i].rank);
        run_mode(&r, name, &sched_name, 3, &mode_rules, extra);
        assert_outcome(&r, 1, "failed\n");
        if (!strstr(r.log, bad_rank[i].says))
            fail_msg("rank '%s': log lacks '%s':\n%s", bad_rank[i].rank, bad_rank[i].says, r.log);
        assert_null(r.args);
        node_run_free(&r);
    }

    /* the head's address from the node script: IP literals and names */
    static const struct {
        const char *addr, *endpoint, *head_ip;
    } on_node[] = {
        {"127.0.0.1", "127.0.0.1:29400", "127.0.0.1"},
        {"[::1]", "[::1]:29400", "::1"},
        {"localhost", "localhost:29400", "localhost"},
    };
    for (size_t i = 0; i < sizeof(on_node) / sizeof(on_node[0]); i++) {
        char name[32], extra[64], ep[64];
        fmt(name, sizeof(name), "mnode%zu", i);
        fmt(extra, sizeof(extra), "STUB_NODE_RANK=1 STUB_HEAD_ADDR='%s'", on_node[i].addr);
        run_mode(&r, name, &sched_node, 2, &mode_rules, extra);
        assert_outcome(&r, 0, "succeeded\n");
        assert_node_line(&r, "1", "2", on_node[i].endpoint);
        assert_env(r.env, r.env_len, "GPUCTL_HEAD_IP", on_node[i].head_ip);
        fmt(ep, sizeof(ep), "--rdzv_endpoint=%s", on_node[i].endpoint);
        assert_true(nul_list_has(r.args, r.args_len, ep));
        node_run_free(&r);
    }
    static const struct {
        const char *addr, *says;
    } bad_head[] = {
        {"head_0", "gpuctl: error: head address 'head_0' is neither a host name nor an IP "
                   "literal\n"},
        {"", "gpuctl: error: head address '' is neither a host name nor an IP literal\n"},
        {"-x", "gpuctl: error: head address '-x' is neither a host name nor an IP literal\n"},
        {"a.1", "gpuctl: error: head address 'a.1' is neither a host name nor an IP literal\n"},
        {"fail", "gpuctl: error: no head from the test scheduler\n"},
    };
    for (size_t i = 0; i < sizeof(bad_head) / sizeof(bad_head[0]); i++) {
        char name[32], extra[64];
        fmt(name, sizeof(name), "mnodebad%zu", i);
        fmt(extra, sizeof(extra), "STUB_HEAD_ADDR='%s'", bad_head[i].addr);
        run_mode(&r, name, &engine_node, 2, &mode_rules, extra);
        assert_outcome(&r, 1, "failed\n");
        if (!strstr(r.log, bad_head[i].says))
            fail_msg("head '%s': log lacks '%s':\n%s", bad_head[i].addr, bad_head[i].says, r.log);
        assert_null(r.args);
        node_run_free(&r);
    }
    /* a 63-character label passes, a 64-character one does not */
    char extra[160];
    fmt(extra, sizeof(extra), "STUB_HEAD_ADDR=%s.localhost", "a123456789b123456789c123456789"
        "d123456789e123456789f123456789xyz");
    run_mode(&r, "mnode63", &engine_node, 2, &mode_rules, extra);
    assert_outcome(&r, 0, "succeeded\n");
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_conf=is_host=1"));
    node_run_free(&r);
    fmt(extra, sizeof(extra), "STUB_HEAD_ADDR=%s.localhost", "a123456789b123456789c123456789"
        "d123456789e123456789f123456789wxyz");
    run_mode(&r, "mnode64", &engine_node, 2, &mode_rules, extra);
    assert_outcome(&r, 1, "failed\n");
    node_run_free(&r);

    /* a worker the rendezvous numbers: no rank of its own, never the host */
    run_mode(&r, "mrdzv", &rdzv_name, 4, &mode_rules, NULL);
    assert_outcome(&r, 0, "succeeded\n");
    assert_node_line(&r, "(rank from the rendezvous)", "4", "localhost:29400");
    assert_true(strstr(r.log, "gpuctl: head localhost:29400 not reachable after 0s; "
                              "starting anyway\n") ||
                strstr(r.log, "gpuctl: head localhost:29400 not reachable after 1s; "
                              "starting anyway\n"));
    assert_env(r.env, r.env_len, "GPUCTL_NODE_RANK", "");
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_conf=is_host=0"));
    assert_true(nul_list_has(r.args, r.args_len, "--nnodes=4"));
    node_run_free(&r);
    /* ... on a machine of its own, whose exit line on the console says so */
    run_mode(&r, "mrdzvaws", &rdzv_ip, 2, gpc_provider_find("aws")->userdata, NULL);
    assert_outcome(&r, 0, "succeeded\n");
    assert_node_line(&r, "(rank from the rendezvous)", "2", "127.0.0.1:29400");
    assert_non_null(r.console);
    assert_string_equal(r.console, "gpuctl-node-exit: cluster=demo-0123abcd rank=- status=0\n");
    node_run_free(&r);

    /* one launch call from rank 0 where the head has a name: index 0 is
     * the head (EC2's IMDS, stubbed) */
    run_mode(&r, "mlaunch", &launch_name, 2, gpc_provider_find("aws")->userdata,
             "STUB_LAUNCH_INDEX=0");
    assert_outcome(&r, 0, "succeeded\n");
    assert_node_line(&r, "0", "2", "localhost:29400");
    assert_true(nul_list_has(r.args, r.args_len, "--rdzv_conf=is_host=1"));
    assert_non_null(r.console);
    assert_string_equal(r.console, "gpuctl-node-exit: cluster=demo-0123abcd rank=0 status=0\n");
    node_run_free(&r);
}

/* ------------------------------------------------------------------ */
/* User-data                                                           */

static void test_userdata_document(void **state)
{
    (void)state;
    char dir[128], udp[256], bp[256], pyp[256], outp[256];
    mkdir_in(dir, sizeof(dir), "ud");
    gpc_spec s;
    hostile_spec(&s, dir);
    s.setup = "  indented first line\n\tand a tab\n";
    s.resources.interconnect = GPC_IC_EFA;
    gpc_node_ctx n = base_node();
    char *ud = render_ud(&s, &n, "aws");
    char *boot = render_boot(&s, &n, "aws");
    size_t len = strlen(ud);

    assert_true(strncmp(ud, "#cloud-config\n", 14) == 0); /* no BOM, no blank line */
    assert_null(strchr(ud, '\r'));
    assert_true(clean_text(ud, len));
    assert_non_null(strstr(ud, "\n  permissions: '0700'\n"));
    assert_non_null(strstr(ud, "\n- path: /var/lib/gpuctl/bootstrap.sh\n"));
    assert_non_null(strstr(ud, "\n  content: |1\n   #!/bin/bash\n"));
    assert_non_null(strstr(ud, "\nruncmd:\n- [/bin/bash, /var/lib/gpuctl/bootstrap.sh]\n"));
    /* the env value that looks like placeholders arrived as text */
    assert_non_null(strstr(ud, "export V16='{{CLUSTER}} {{NOPE}} {{'\n"));

    fmt(udp, sizeof(udp), "%s/user-data", dir);
    fmt(bp, sizeof(bp), "%s/bootstrap.sh", dir);
    fmt(outp, sizeof(outp), "%s/content", dir);
    write_file(udp, ud, len, 0600);
    write_file(bp, boot, strlen(boot), 0600);

    /* YAML gives back the script byte for byte */
    if (have("python3 -c 'import yaml'")) {
        static const char py[] =
            "import sys, yaml\n"
            "raw = open(sys.argv[1], 'rb').read()\n"
            "doc = yaml.safe_load(raw.decode('utf-8', 'strict'))\n"
            "assert sorted(doc) == ['runcmd', 'write_files'], sorted(doc)\n"
            "assert doc['runcmd'] == [['/bin/bash', '/var/lib/gpuctl/bootstrap.sh']]\n"
            "wf = doc['write_files']\n"
            "assert len(wf) == 1 and wf[0]['path'] == '/var/lib/gpuctl/bootstrap.sh'\n"
            "assert wf[0]['permissions'] == '0700'\n"
            "open(sys.argv[2], 'wb').write(wf[0]['content'].encode('utf-8', 'surrogateescape'))\n";
        fmt(pyp, sizeof(pyp), "%s/check.py", dir);
        write_file(pyp, py, sizeof(py) - 1, 0600);
        assert_int_equal(sh("python3 '%s' '%s' '%s'", pyp, udp, outp), 0);
        size_t n2 = 0;
        char *content = slurp(outp, &n2);
        assert_non_null(content);
        assert_int_equal(n2, strlen(boot));
        assert_memory_equal(content, boot, n2);
        free(content);
    } else {
        print_message("python3 with yaml missing: YAML round trip not checked\n");
    }

    /* cloud-init's own schema check */
    if (have("command -v cloud-init")) {
        int rc = sh("cloud-init schema --config-file '%s' >&2", udp);
        if (rc != 0)
            fail_msg("cloud-init schema rejected the user-data (exit %d)", rc);
    } else {
        print_message("cloud-init missing: schema not checked\n");
    }

    /* and the bootstrap written by it is the one that ran the checks above */
    assert_int_equal(sh("bash -n '%s'", bp), 0);
    assert_not_pwned(dir);
    free(ud);
    free(boot);
}

/* The payload: the bootstrap and a copy of the env; for a VM, the
 * cloud-config around the script, encoded: the same bytes as the
 * user-data rendered and encoded directly. */
static void test_payload(void **state)
{
    (void)state;
    char dir[128];
    mkdir_in(dir, sizeof(dir), "payload");
    gpc_spec s;
    hostile_spec(&s, dir);
    gpc_node_ctx n = base_node();
    n.rank = 1;
    n.head_addr = "10.0.0.1";
    const gpc_userdata_rules *aws = gpc_provider_find("aws")->userdata;
    gpc_payload p;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_payload(&s, &n, aws, &p, &e), 0);
    char *boot = render_boot(&s, &n, "aws");
    assert_int_equal(p.script_len, strlen(boot));
    assert_string_equal(p.script, boot);
    free(boot);
    assert_int_equal(p.n_env, N_HOSTILE);
    for (size_t i = 0; i < N_HOSTILE; i++) {
        assert_string_equal(p.env[i].name, hostile_names[i]);
        assert_string_equal(p.env[i].value, hostile[i]);
        assert_true(p.env[i].value != hostile[i]); /* a copy */
    }
    /* gzip (the bootstrap alone is over 16 KB), with a 30 KB env value too:
     * byte for byte what encoding the user-data gives */
    for (int big = 0; big < 2; big++) {
        static char lorem[30001];
        gpc_env_var env[] = {{"BIG", lorem}};
        if (big) {
            for (size_t i = 0; i < sizeof(lorem) - 1; i++)
                lorem[i] = "lorem ipsum dolor "[i % 18];
            base_spec(&s);
            s.env = env;
            s.n_env = 1;
            gpc_payload_free(&p);
            assert_int_equal(gpc_render_payload(&s, &n, aws, &p, &e), 0);
        }
        char *ud = render_ud(&s, &n, "aws"), *want = NULL, *got = NULL;
        size_t want_len = 0, got_len = 0;
        int want_gz = -1, got_gz = -1;
        assert_int_equal(gpc_userdata_encode(ud, strlen(ud), aws, &want, &want_len, &want_gz, &e),
                         0);
        assert_int_equal(gpc_payload_cloud_init(&p, aws, &got, &got_len, &got_gz, &e), 0);
        assert_int_equal(got_gz, 1);
        assert_int_equal(want_gz, 1);
        assert_int_equal(got_len, want_len);
        assert_string_equal(got, want);
        free(got);
        free(want);
        /* local: the plain text itself */
        assert_int_equal(gpc_payload_cloud_init(&p, gpc_provider_find("local")->userdata, &got,
                                                &got_len, NULL, &e), 0);
        assert_int_equal(got_len, strlen(ud));
        assert_string_equal(got, ud);
        free(got);
        free(ud);
    }
    /* what cannot be user-data */
    char *got = (char *)"untouched";
    size_t got_len = 0;
    p.script_len--;
    gpc_error_clear(&e);
    assert_int_equal(gpc_payload_cloud_init(&p, aws, &got, &got_len, NULL, &e), GPC_ERR_INTERNAL);
    assert_string_equal(e.msg, "the bootstrap is longer than its length says");
    p.script_len++;
    p.script[10] = '\0';
    gpc_error_clear(&e);
    assert_int_equal(gpc_payload_cloud_init(&p, aws, &got, &got_len, NULL, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "the bootstrap holds a NUL byte");
    assert_string_equal(got, "untouched");
    gpc_payload_free(&p);
    assert_null(p.script);
    assert_int_equal(p.n_env, 0);
    gpc_payload_free(&p); /* twice: a no-op */
    gpc_payload_free(NULL);
    gpc_error_clear(&e);
    assert_int_equal(gpc_payload_cloud_init(&p, aws, &got, &got_len, NULL, &e), GPC_ERR_INTERNAL);
    /* a failed render leaves the payload empty */
    memset(&p, 0xa5, sizeof(p));
    n.head_addr = NULL;
    gpc_error_clear(&e);
    assert_int_equal(gpc_render_payload(&s, &n, aws, &p, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, "node rank 1 needs the head's IP");
    assert_null(p.script);
    assert_null(p.env);
    assert_int_equal(p.script_len, 0);
    assert_int_equal(p.n_env, 0);
    assert_not_pwned(dir);
}

/* A typical spec's user-data fits AWS's 16 KB: gzipped, since the job
 * runner (job.sh) took it over 16 KB plain. */
static void test_userdata_typical_size(void **state)
{
    (void)state;
    gpc_spec s;
    base_spec(&s);
    gpc_env_var env[] = {{"WANDB_PROJECT", "demo"}, {"NCCL_DEBUG", "INFO"},
                         {"HF_HOME", "/mnt/hf"}, {"OMP_NUM_THREADS", "8"}};
    s.env = env;
    s.n_env = 4;
    s.setup = "pip install -r requirements.txt";
    s.resources.interconnect = GPC_IC_EFA;
    s.lifecycle.max_duration_s = 86400;
    gpc_node_ctx n = base_node();
    n.workdir = "/var/lib/gpuctl/workdir";
    n.checkpoint_dir = "/mnt/checkpoints";
    char *ud = render_ud(&s, &n, "aws");
    size_t len = strlen(ud);
    /* about 22 KB now with the job runner (15 KB before it), the
     * checkpoint writer's test and the node's end from budget.max_total;
     * aws sends it gzip-compressed (below), which is the limit that
     * counts */
    if (len > 22500)
        fail_msg("typical user-data is %zu bytes; keep it near 21000", len);
    char *enc = NULL;
    size_t enc_len = 0;
    int gz = -1;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_userdata_encode(ud, len, gpc_provider_find("aws")->userdata, &enc, &enc_len,
                                         &gz, &e), 0);
    assert_int_equal(gz, 1);
    if (enc_len > 9216)
        fail_msg("typical user-data is %zu bytes gzipped and base64-encoded; keep it well under "
                 "16384", enc_len);
    free(enc);
    free(ud);
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */

static void decode_b64(const char *text, size_t len, unsigned char **out, size_t *out_len)
{
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_base64_decode(text, len, out, out_len, &e), 0);
}

static void test_encode_small(void **state)
{
    (void)state;
    static const char ud[] = "#cloud-config\nruncmd:\n- [echo, hi]\n";
    static const char *const provs[] = {"aws", "azure", "aliyun"};
    for (size_t i = 0; i < 3; i++) {
        char *enc = NULL;
        size_t enc_len = 0;
        int gz = -1;
        gpc_error e;
        gpc_error_clear(&e);
        assert_int_equal(gpc_userdata_encode(ud, sizeof(ud) - 1, gpc_provider_find(provs[i])->userdata,
                                             &enc, &enc_len, &gz, &e), 0);
        assert_int_equal(gz, 0);
        assert_int_equal(strlen(enc), enc_len);
        /* base64 exactly once: one decode gives the text */
        unsigned char *dec = NULL;
        size_t dec_len = 0;
        decode_b64(enc, enc_len, &dec, &dec_len);
        assert_int_equal(dec_len, sizeof(ud) - 1);
        assert_memory_equal(dec, ud, dec_len);
        free(dec);
        free(enc);
    }

    /* local: the text itself */
    char *enc = NULL;
    size_t enc_len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_userdata_encode(ud, sizeof(ud) - 1, gpc_provider_find("local")->userdata,
                                         &enc, &enc_len, NULL, &e), 0);
    assert_int_equal(enc_len, sizeof(ud) - 1);
    assert_string_equal(enc, ud);
    free(enc);
}

static void test_encode_gzip_40k(void **state)
{
    (void)state;
    static char big[40001];
    static const char words[] = "lorem ipsum dolor sit amet, consectetur adipiscing elit ";
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = words[i % (sizeof(words) - 1)];
    gpc_spec s;
    base_spec(&s);
    gpc_env_var env[] = {{"BIG", big}};
    s.env = env;
    s.n_env = 1;
    gpc_node_ctx n = base_node();
    char *ud = render_ud(&s, &n, "aws");
    size_t len = strlen(ud);
    assert_true(len > 40000);

    char *enc = NULL;
    size_t enc_len = 0;
    int gz = -1;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_userdata_encode(ud, len, gpc_provider_find("aws")->userdata, &enc, &enc_len,
                                         &gz, &e), 0);
    assert_int_equal(gz, 1);
    unsigned char *dec = NULL, *plain = NULL;
    size_t dec_len = 0, plain_len = 0;
    decode_b64(enc, enc_len, &dec, &dec_len);
    assert_true(dec_len <= 16384);
    assert_true(dec_len > 2 && dec[0] == 0x1f && dec[1] == 0x8b);
    assert_int_equal(gpc_gunzip(dec, dec_len, 1 << 20, &plain, &plain_len, &e), 0);
    assert_int_equal(plain_len, len);
    assert_memory_equal(plain, ud, len);
    free(plain);
    free(dec);
    free(enc);

    /* azure takes it plain (65535) */
    gpc_error_clear(&e);
    assert_int_equal(gpc_userdata_encode(ud, len, gpc_provider_find("azure")->userdata, &enc,
                                         &enc_len, &gz, &e), 0);
    assert_int_equal(gz, 0);
    decode_b64(enc, enc_len, &dec, &dec_len);
    assert_int_equal(dec_len, len);
    assert_memory_equal(dec, ud, len);
    free(dec);
    free(enc);
    free(ud);
}

static void test_encode_too_big(void **state)
{
    (void)state;
    unsigned char rnd[24000];
    int fd = open("/dev/urandom", O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, rnd, sizeof(rnd)), (ssize_t)sizeof(rnd));
    close(fd);
    char *b64 = NULL;
    gpc_error e;
    gpc_error_clear(&e);
    assert_int_equal(gpc_base64_encode(rnd, sizeof(rnd), &b64, NULL, &e), 0);

    gpc_spec s;
    base_spec(&s);
    gpc_env_var env[] = {{"NOISE", b64}};
    s.env = env;
    s.n_env = 1;
    gpc_node_ctx n = base_node();
    char *ud = render_ud(&s, &n, "aws");
    size_t len = strlen(ud);

    unsigned char *gzd = NULL;
    size_t gz_len = 0;
    assert_int_equal(gpc_gzip(ud, len, &gzd, &gz_len, &e), 0);
    assert_true(gz_len > 16384);
    char want[128];
    fmt(want, sizeof(want), "user-data is %zu bytes after gzip; aws allows 16384", gz_len);

    char *enc = (char *)"untouched";
    size_t enc_len = 0;
    int gz = -1;
    assert_int_equal(gpc_userdata_encode(ud, len, gpc_provider_find("aws")->userdata, &enc, &enc_len,
                                         &gz, &e), GPC_ERR_RENDER);
    assert_string_equal(e.msg, want);
    assert_string_equal(enc, "untouched");

    /* where gzip is not allowed, the plain size is named */
    gpc_userdata_rules strict = {"test", 1000, 0, 1, NULL, 0};
    fmt(want, sizeof(want), "user-data is %zu bytes; test allows 1000", len);
    gpc_error_clear(&e);
    assert_int_equal(gpc_userdata_encode(ud, len, &strict, &enc, &enc_len, &gz, &e),
                     GPC_ERR_RENDER);
    assert_string_equal(e.msg, want);

    free(gzd);
    free(ud);
    free(b64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_for),
        cmocka_unit_test(test_fabric_scripts),
        cmocka_unit_test(test_shell_quote_exact),
        cmocka_unit_test(test_shell_quote_nul),
        cmocka_unit_test(test_shell_quote_bash_roundtrip),
        cmocka_unit_test(test_template_unknown_placeholder),
        cmocka_unit_test(test_template_substitution),
        cmocka_unit_test(test_template_sections),
        cmocka_unit_test(test_bootstrap_basics),
        cmocka_unit_test(test_bootstrap_head_ip),
        cmocka_unit_test(test_bootstrap_rejects),
        cmocka_unit_test(test_bootstrap_env_roundtrip),
        cmocka_unit_test(test_bootstrap_lint),
        cmocka_unit_test(test_run_rank0_cpu_torch1),
        cmocka_unit_test(test_run_rank1_gpu_torch2),
        cmocka_unit_test(test_run_visible_gpu_share),
        cmocka_unit_test(test_run_interconnect_sets),
        cmocka_unit_test(test_run_job_fails),
        cmocka_unit_test(test_run_setup_fails),
        cmocka_unit_test(test_run_max_duration),
        cmocka_unit_test(test_run_sigterm),
        cmocka_unit_test(test_run_sigterm_after_failure),
        cmocka_unit_test(test_run_bad_local_ip),
        cmocka_unit_test(test_run_cloud_metadata),
        cmocka_unit_test(test_run_rank_from_launch_index),
        cmocka_unit_test(test_bootstrap_modes),
        cmocka_unit_test(test_bootstrap_mode_errors),
        cmocka_unit_test(test_run_modes),
        cmocka_unit_test(test_ckpt_saved_where_rank0_runs),
        cmocka_unit_test(test_run_efa_gpudirect),
        cmocka_unit_test(test_run_cloud_poweroff_fallback),
        cmocka_unit_test(test_run_spot_notice),
        cmocka_unit_test(test_run_budget_end),
        cmocka_unit_test(test_bootstrap_default_end),
        cmocka_unit_test(test_run_idle_timeout),
        cmocka_unit_test(test_userdata_document),
        cmocka_unit_test(test_userdata_typical_size),
        cmocka_unit_test(test_payload),
        cmocka_unit_test(test_encode_small),
        cmocka_unit_test(test_encode_gzip_40k),
        cmocka_unit_test(test_encode_too_big),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
