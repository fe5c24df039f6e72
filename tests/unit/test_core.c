/*
 * test_core.c - error type, bounded buffer and util helpers; the engine's
 * session (one open context per provider) and providers' settings
 * (flags, environment, config file).
 * Vectors: SHA-256 of "abc" and of "" from FIPS 180-2 (Appendix B.1) /
 * NIST CSRC examples; base64 from RFC 4648 section 10.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuctl/buf.h"
#include "gpuctl/cluster.h"
#include "gpuctl/error.h"
#include "gpuctl/provider.h"
#include "gpuctl/util.h"

static void test_first_error_wins(void **state)
{
    (void)state;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_fail(&err, GPC_ERR_SPEC, "job.yaml:%d:%d: bad\nthing", 2, 8), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:2:8: bad thing");
    /* an outer layer cannot overwrite the inner cause */
    assert_int_equal(gpc_fail(&err, GPC_ERR_IO, "vague"), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "job.yaml:2:8: bad thing");
    gpc_fail_replace(&err, GPC_ERR_IO, "replaced");
    assert_int_equal(err.code, GPC_ERR_IO);
    assert_string_equal(err.msg, "replaced");
    assert_int_equal(gpc_fail(NULL, GPC_ERR_STATE, "x"), GPC_ERR_STATE);
}

/* Remote details: set only on a failure, cleared with it, replaced by
 * gpc_fail_replace, bounded and on one line. */
static void test_error_remote(void **state)
{
    (void)state;
    gpc_error err;
    gpc_error_clear(&err);
    /* no failure: nothing to attach to */
    gpc_error_remote(&err, 500, "InternalError", "rid-1", 1);
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(err.remote.http_status, 0);
    assert_string_equal(err.remote.code, "");
    gpc_error_remote(NULL, 500, "x", "y", 1); /* no crash */

    gpc_fail(&err, GPC_ERR_CAPACITY, "no capacity");
    assert_int_equal(err.remote.set, 0); /* gpc_fail attaches none */
    gpc_error_remote(&err, 500, "InsufficientInstanceCapacity",
                     "00000000-0000-4000-8000-000000000001", 0);
    assert_int_equal(err.remote.set, 1);
    assert_int_equal(err.remote.http_status, 500);
    assert_string_equal(err.remote.code, "InsufficientInstanceCapacity");
    assert_string_equal(err.remote.request_id, "00000000-0000-4000-8000-000000000001");
    assert_int_equal(err.remote.retryable, 0);
    /* a later gpc_fail changes nothing, details included */
    gpc_fail(&err, GPC_ERR_IO, "vague");
    assert_int_equal(err.code, GPC_ERR_CAPACITY);
    assert_string_equal(err.remote.code, "InsufficientInstanceCapacity");
    /* passing err's own fields back (a provider adding its code) */
    gpc_error_remote(&err, err.remote.http_status, "Other", err.remote.request_id,
                     err.remote.retryable);
    assert_string_equal(err.remote.code, "Other");
    assert_string_equal(err.remote.request_id, "00000000-0000-4000-8000-000000000001");
    /* NULL strings are "", a negative status 0, any non-zero retryable 1 */
    gpc_error_remote(&err, -3, NULL, NULL, 7);
    assert_int_equal(err.remote.http_status, 0);
    assert_string_equal(err.remote.code, "");
    assert_string_equal(err.remote.request_id, "");
    assert_int_equal(err.remote.retryable, 1);
    /* bounded, and control characters become spaces */
    char long_code[200];
    memset(long_code, 'C', sizeof(long_code) - 1);
    long_code[sizeof(long_code) - 1] = '\0';
    gpc_error_remote(&err, 400, long_code, "a\r\nb\tc", 0);
    assert_int_equal(strlen(err.remote.code), GPC_ERROR_CODE_MAX - 1);
    assert_string_equal(err.remote.request_id, "a  b c");
    /* a replaced failure loses the details of the one it replaces */
    gpc_fail_replace(&err, GPC_ERR_STATE, "replaced");
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(err.remote.http_status, 0);
    assert_string_equal(err.remote.code, "");
    assert_string_equal(err.remote.request_id, "");
    /* and clearing clears them */
    gpc_error_remote(&err, 429, "Throttling", "r", 1);
    gpc_error_clear(&err);
    assert_int_equal(err.code, GPC_OK);
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(err.remote.retryable, 0);
}

/* gpc_error_wrap: the one way to re-raise an inner failure. */
static void test_error_wrap(void **state)
{
    (void)state;
    gpc_error inner, outer;
    gpc_error_clear(&inner);
    gpc_error_clear(&outer);
    gpc_fail(&inner, GPC_ERR_QUOTA, "VcpuLimitExceeded: too many");
    gpc_error_remote(&inner, 400, "VcpuLimitExceeded", "rid-7", 0);
    /* context before the message; code and details kept */
    assert_int_equal(gpc_error_wrap(&outer, &inner, "aws: offer %d of %d", 2, 3), GPC_ERR_QUOTA);
    assert_int_equal(outer.code, GPC_ERR_QUOTA);
    assert_string_equal(outer.msg, "aws: offer 2 of 3: VcpuLimitExceeded: too many");
    assert_int_equal(outer.remote.set, 1);
    assert_int_equal(outer.remote.http_status, 400);
    assert_string_equal(outer.remote.code, "VcpuLimitExceeded");
    assert_string_equal(outer.remote.request_id, "rid-7");
    assert_int_equal(outer.remote.retryable, 0);
    /* first failure wins: a second wrap changes nothing */
    gpc_error other;
    gpc_error_clear(&other);
    gpc_fail(&other, GPC_ERR_IO, "disk");
    assert_int_equal(gpc_error_wrap(&outer, &other, "late"), GPC_ERR_QUOTA);
    assert_string_equal(outer.msg, "aws: offer 2 of 3: VcpuLimitExceeded: too many");
    assert_string_equal(outer.remote.code, "VcpuLimitExceeded");
    /* no context: the message as it is, and a failure without details
     * gives an outer without details */
    gpc_error_clear(&outer);
    assert_int_equal(gpc_error_wrap(&outer, &other, NULL), GPC_ERR_IO);
    assert_string_equal(outer.msg, "disk");
    assert_int_equal(outer.remote.set, 0);
    /* an inner that holds no failure is never lost: internal */
    gpc_error empty;
    gpc_error_clear(&empty);
    gpc_error_clear(&outer);
    assert_int_equal(gpc_error_wrap(&outer, &empty, "step %s", "x"), GPC_ERR_INTERNAL);
    assert_string_equal(outer.msg, "step x: unknown error");
    gpc_error_clear(&outer);
    assert_int_equal(gpc_error_wrap(&outer, NULL, NULL), GPC_ERR_INTERNAL);
    assert_string_equal(outer.msg, "unknown error");
    /* no outer: the inner's code */
    assert_int_equal(gpc_error_wrap(NULL, &inner, "x"), GPC_ERR_QUOTA);
    assert_int_equal(gpc_error_wrap(NULL, &empty, "x"), GPC_ERR_INTERNAL);
    /* one line, truncated to fit */
    gpc_error_clear(&outer);
    gpc_error_wrap(&outer, &inner, "a\nb");
    assert_string_equal(outer.msg, "a b: VcpuLimitExceeded: too many");
    char ctx[GPC_ERROR_MSG_MAX + 100];
    memset(ctx, 'x', sizeof(ctx) - 1);
    ctx[sizeof(ctx) - 1] = '\0';
    gpc_error_clear(&outer);
    assert_int_equal(gpc_error_wrap(&outer, &inner, "%s", ctx), GPC_ERR_QUOTA);
    assert_int_equal(strlen(outer.msg), GPC_ERROR_MSG_MAX - 1);
    assert_int_equal(outer.msg[GPC_ERROR_MSG_MAX - 2], 'x');
    memset(ctx, 'y', GPC_ERROR_MSG_MAX - 4);
    ctx[GPC_ERROR_MSG_MAX - 4] = '\0';
    gpc_error_clear(&outer);
    gpc_error_wrap(&outer, &inner, "%s", ctx);
    assert_int_equal(strlen(outer.msg), GPC_ERROR_MSG_MAX - 1);
    assert_string_equal(outer.msg + GPC_ERROR_MSG_MAX - 4, ": V");
}

static void test_exit_status_contract(void **state)
{
    (void)state;
    /* docs/exit-codes.md */
    assert_int_equal(gpc_exit_status(GPC_OK), 0);
    assert_int_equal(gpc_exit_status(GPC_ERR_INTERNAL), 1);
    assert_int_equal(gpc_exit_status(GPC_ERR_USAGE), 3);
    assert_int_equal(gpc_exit_status(GPC_ERR_SPEC), 4);
    assert_int_equal(gpc_exit_status(GPC_ERR_RENDER), 4);
    assert_int_equal(gpc_exit_status(GPC_ERR_IO), 5);
    assert_int_equal(gpc_exit_status(GPC_ERR_STATE), 5);
    assert_int_equal(gpc_exit_status(GPC_ERR_PROVIDER), 6);
    assert_int_equal(gpc_exit_status(GPC_ERR_NOT_FOUND), 7);
    assert_int_equal(gpc_exit_status(GPC_ERR_PARTIAL), 8);
    assert_int_equal(gpc_exit_status(GPC_ERR_LOCKED), 9);
    assert_int_equal(gpc_exit_status(GPC_ERR_JOB_FAILED), 10);
    assert_int_equal(gpc_exit_status(GPC_ERR_NODE_LOST), 11);
    assert_int_equal(gpc_exit_status(GPC_ERR_TIMEOUT), 12);
    assert_int_equal(gpc_exit_status(GPC_ERR_STALE), 13);
    assert_int_equal(gpc_exit_status(GPC_ERR_AUTH), 20);
    assert_int_equal(gpc_exit_status(GPC_ERR_QUOTA), 21);
    assert_int_equal(gpc_exit_status(GPC_ERR_CAPACITY), 22);
    assert_int_equal(gpc_exit_status(GPC_ERR_BUDGET), 23);
    assert_int_equal(gpc_exit_status(GPC_ERR_INTERRUPTED), 130);
    assert_int_equal(gpc_exit_status((gpc_code)999), 1);
    assert_string_equal(gpc_code_name(GPC_ERR_JOB_FAILED), "job_failed");
    assert_string_equal(gpc_code_name(GPC_ERR_NOT_FOUND), "not_found");
    assert_string_equal(gpc_code_name(GPC_ERR_STALE), "stale");
    for (int c = 0; c < GPC_CODE_COUNT; c++)
        assert_non_null(gpc_code_name((gpc_code)c));
}

static void test_buf_limit(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_buf_init(&b, 8);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_buf_adds(&b, "abcd", &err), 0);
    assert_int_equal(gpc_buf_addf(&b, &err, "%d", 1234), 0);
    assert_string_equal(gpc_buf_str(&b), "abcd1234");
    assert_int_equal(gpc_buf_adds(&b, "x", &err), GPC_ERR_NOMEM);
    assert_string_equal(err.msg, "buffer limit of 8 bytes exceeded");
    assert_string_equal(gpc_buf_str(&b), "abcd1234"); /* unchanged */
    char *s = gpc_buf_take(&b);
    assert_string_equal(s, "abcd1234");
    free(s);
    assert_int_equal(b.len, 0);
    s = gpc_buf_take(&b);
    assert_string_equal(s, "");
    free(s);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    gpc_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    gpc_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_base64_rfc4648(void **state)
{
    (void)state;
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char *e;
        size_t el;
        assert_int_equal(gpc_base64_encode(in[i], strlen(in[i]), &e, &el, NULL), 0);
        assert_string_equal(e, out[i]);
        assert_int_equal(el, strlen(out[i]));
        unsigned char *d;
        size_t dl;
        assert_int_equal(gpc_base64_decode(e, el, &d, &dl, NULL), 0);
        assert_int_equal(dl, strlen(in[i]));
        assert_memory_equal(d, in[i], dl);
        free(d);
        free(e);
    }
    unsigned char *d;
    size_t dl;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_base64_decode("abc", 3, &d, &dl, &err), GPC_ERR_RENDER);
}

static void test_gzip_round_trip(void **state)
{
    (void)state;
    char text[4096];
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = "gpuctl "[i % 7];
    unsigned char *z, *back;
    size_t zl, bl;
    assert_int_equal(gpc_gzip(text, sizeof(text), &z, &zl, NULL), 0);
    assert_true(zl < 200);
    assert_int_equal(z[0], 0x1f); /* RFC 1952 magic */
    assert_int_equal(z[1], 0x8b);
    assert_int_equal(z[4] | z[5] | z[6] | z[7], 0); /* mtime 0: deterministic */
    assert_int_equal(gpc_gunzip(z, zl, 1 << 20, &back, &bl, NULL), 0);
    assert_int_equal(bl, sizeof(text));
    assert_memory_equal(back, text, bl);
    free(back);
    gpc_error err;
    gpc_error_clear(&err);
    /* a bound on the output defeats zip bombs */
    assert_int_equal(gpc_gunzip(z, zl, 100, &back, &bl, &err), GPC_ERR_NOMEM);
    free(z);
}

/* Did-you-mean distances, up to the longest cluster name (63). */
/* gpc_format_bytes: bytes below 1 KiB, one decimal above, TiB the largest */
static void test_format_bytes(void **state)
{
    (void)state;
    char b[32];
    gpc_format_bytes(0, b, sizeof(b));
    assert_string_equal(b, "0 B");
    gpc_format_bytes(1023, b, sizeof(b));
    assert_string_equal(b, "1023 B");
    gpc_format_bytes(1024, b, sizeof(b));
    assert_string_equal(b, "1.0 KiB");
    gpc_format_bytes(15053, b, sizeof(b)); /* 14.70 KiB */
    assert_string_equal(b, "14.7 KiB");
    gpc_format_bytes(12582912, b, sizeof(b)); /* 12 MiB */
    assert_string_equal(b, "12.0 MiB");
    gpc_format_bytes(3435973837ull, b, sizeof(b)); /* 3.2 GiB */
    assert_string_equal(b, "3.2 GiB");
    gpc_format_bytes(2048ull << 40, b, sizeof(b)); /* 2048 TiB: no larger unit */
    assert_string_equal(b, "2048.0 TiB");
    gpc_format_bytes(1536, b, 4); /* truncated to fit */
    assert_string_equal(b, "1.5");
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(gpc_edit_distance("", ""), 0);
    assert_int_equal(gpc_edit_distance("gpu", "cpu"), 1);
    assert_int_equal(gpc_edit_distance("my-clustr", "my-cluster"), 1);
    assert_int_equal(gpc_edit_distance("my-cluetsr", "my-cluster"), 2); /* a swap is one */
    assert_int_equal(gpc_edit_distance("Nodes", "nodes"), 0);
    assert_int_equal(gpc_edit_distance("abc", ""), 3);
    char a[80], b[80];
    memset(a, 'a', 63);
    a[63] = '\0';
    memcpy(b, a, 64);
    b[40] = 'b';
    assert_int_equal(gpc_edit_distance(a, b), 1);
    memset(b, 'b', 64);
    b[64] = '\0';
    assert_int_equal(gpc_edit_distance(a, b), 64);
    b[65] = '\0';
    b[64] = 'b';
    assert_int_equal(gpc_edit_distance(a, b), SIZE_MAX); /* 65 bytes */
}

static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpuctl-core-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], sub[256];
    snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
    assert_int_equal(gpc_mkdir_p(sub, 0700, NULL), 0);
    snprintf(path, sizeof(path), "%s/a/b/c/f.txt", dir);
    assert_int_equal(gpc_write_file_atomic(path, "hello\n", 6, 0600, NULL), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char *data;
    size_t len;
    assert_int_equal(gpc_read_file(path, 1024, &data, &len, NULL), 0);
    assert_string_equal(data, "hello\n");
    free(data);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_read_file(path, 3, &data, &len, &err), GPC_ERR_IO);
    assert_non_null(strstr(err.msg, "larger than 3 bytes"));
    assert_int_equal(gpc_rm_rf(dir, NULL), 0);
    assert_int_not_equal(stat(dir, &sb), 0);
    assert_int_equal(gpc_rm_rf(dir, NULL), 0); /* missing is fine */
}

/* ---- settings ------------------------------------------------------------ */

static char cfg_dir[64];
static char cfg_path[300];

static void write_config(const char *text)
{
    assert_int_equal(gpc_write_file_atomic(cfg_path, text, strlen(text), 0600, NULL), 0);
}

static void settings_env_clear(void)
{
    const char *vars[] = {"GPUCTL_AWS_ENDPOINT", "GPUCTL_AWS_PROFILE", "GPUCTL_AWS_REGION",
                          "GPUCTL_LOCAL_ENDPOINT", "GPUCTL_LOCAL_PROFILE",
                          "GPUCTL_LOCAL_REGION", "GPUCTL_CONFIG", "GPUCTL_CONFIG_DIR",
                          "XDG_CONFIG_HOME"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

static int settings_setup(void **state)
{
    (void)state;
    snprintf(cfg_dir, sizeof(cfg_dir), "/tmp/gpuctl-cfg-XXXXXX");
    assert_non_null(mkdtemp(cfg_dir));
    snprintf(cfg_path, sizeof(cfg_path), "%s/config", cfg_dir);
    settings_env_clear();
    setenv("GPUCTL_CONFIG", cfg_path, 1);
    return 0;
}

static int settings_teardown(void **state)
{
    (void)state;
    settings_env_clear();
    gpc_rm_rf(cfg_dir, NULL);
    return 0;
}

/* Settings of `name` resolved with flags `set`; 0 or the error in err. */
static int resolve(const gpc_settings *set, const char *name, gpc_provider_settings *ps,
                   gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find(name);
    assert_non_null(p);
    gpc_error_clear(err);
    return gpc_provider_settings_get(set, p, "/state", ps, err);
}

#define assert_str_or_null(want, got) \
    do { if (want) assert_string_equal(want, got); else assert_null(got); } while (0)

static void expect(const gpc_settings *set, const char *name, const char *endpoint,
                   const char *profile, const char *region)
{
    gpc_provider_settings ps;
    gpc_error err;
    assert_int_equal(resolve(set, name, &ps, &err), 0);
    assert_str_or_null(endpoint, ps.cfg.endpoint);
    assert_str_or_null(profile, ps.cfg.profile);
    assert_str_or_null(region, ps.cfg.region);
    assert_string_equal(ps.cfg.state_dir, "/state");
    gpc_provider_settings_free(&ps);
}

/* flag > environment > file, key by key and provider by provider */
static void test_settings_order(void **state)
{
    (void)state;
    gpc_settings none = {0};
    unsetenv("GPUCTL_CONFIG");
    setenv("HOME", cfg_dir, 1);                          /* no config file there */
    expect(&none, "aws", NULL, NULL, NULL);
    expect(NULL, "aws", NULL, NULL, NULL);
    setenv("GPUCTL_CONFIG", cfg_path, 1);
    write_config("# gpuctl\n"
                 "; settings per provider\n"
                 "[provider \"aws\"]\n"
                 "endpoint = http://127.0.0.1:8001\n"
                 "  profile=file-profile  \n"
                 "\n"
                 "[ provider  \"local\" ]\n"
                 "region = here\n"
                 "[provider \"aws\"]\n"
                 "region = eu-west-1 ; not a comment\n");
    expect(&none, "aws", "http://127.0.0.1:8001", "file-profile", "eu-west-1 ; not a comment");
    expect(&none, "local", NULL, NULL, "here");
    setenv("GPUCTL_AWS_ENDPOINT", "http://127.0.0.1:8002", 1);
    setenv("GPUCTL_AWS_REGION", "us-west-2", 1);
    setenv("GPUCTL_AWS_PROFILE", "", 1);                 /* empty: unset */
    expect(&none, "aws", "http://127.0.0.1:8002", "file-profile", "us-west-2");
    expect(&none, "local", NULL, NULL, "here");          /* another provider's */
    gpc_settings flags = {.endpoint = "http://127.0.0.1:8003", .profile = "flag-profile"};
    expect(&flags, "aws", "http://127.0.0.1:8003", "flag-profile", "us-west-2");
    expect(&flags, "local", "http://127.0.0.1:8003", "flag-profile", "here");
    settings_env_clear();
    /* the file's default places, in order */
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/gpuctl", cfg_dir);
    assert_int_equal(gpc_mkdir_p(dir, 0700, NULL), 0);
    char xdg[320];
    snprintf(xdg, sizeof(xdg), "%s/config", dir);
    assert_int_equal(gpc_write_file_atomic(xdg, "[provider \"aws\"]\nregion = xdg\n", 30, 0600,
                                           NULL), 0);
    char path[400];
    int named = 1;
    assert_int_equal(gpc_config_path(path, sizeof(path), &named, NULL), 0);
    char want[400];
    snprintf(want, sizeof(want), "%s/.config/gpuctl/config", cfg_dir);
    assert_string_equal(path, want);
    assert_int_equal(named, 0);
    expect(&none, "aws", NULL, NULL, NULL);              /* not there: none */
    setenv("XDG_CONFIG_HOME", "relative", 1);            /* ignored */
    assert_int_equal(gpc_config_path(path, sizeof(path), &named, NULL), 0);
    assert_string_equal(path, want);
    setenv("XDG_CONFIG_HOME", cfg_dir, 1);
    assert_int_equal(gpc_config_path(path, sizeof(path), &named, NULL), 0);
    assert_string_equal(path, xdg);
    expect(&none, "aws", NULL, NULL, "xdg");
    setenv("GPUCTL_CONFIG_DIR", cfg_dir, 1);
    assert_int_equal(gpc_config_path(path, sizeof(path), &named, NULL), 0);
    assert_string_equal(path, cfg_path);
    expect(&none, "aws", "http://127.0.0.1:8001", "file-profile", "eu-west-1 ; not a comment");
    setenv("GPUCTL_CONFIG", xdg, 1);
    assert_int_equal(gpc_config_path(path, sizeof(path), &named, NULL), 0);
    assert_string_equal(path, xdg);
    assert_int_equal(named, 1);
    settings_env_clear();
    setenv("GPUCTL_CONFIG", cfg_path, 1);
}

static void expect_error(const char *text, gpc_code code, const char *msg_after_path)
{
    write_config(text);
    gpc_provider_settings ps;
    gpc_error err;
    /* the whole file is checked, whichever provider asks */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(resolve(NULL, i ? "local" : "aws", &ps, &err), code);
        char want[GPC_ERROR_MSG_MAX];
        snprintf(want, sizeof(want), "%s%s", cfg_path, msg_after_path);
        assert_string_equal(err.msg, want);
        assert_null(ps.cfg.endpoint);
        assert_null(ps.endpoint);
        gpc_provider_settings_free(&ps);
    }
}

static void test_settings_file_errors(void **state)
{
    (void)state;
    char msg[512];
    expect_error("[aws]\nendpoint = http://x\n", GPC_ERR_USAGE,
                 ":1: unknown section [aws] (sections are [provider \"NAME\"], [slurm \"NAME\"])");
    expect_error("\n[provider aws]\n", GPC_ERR_USAGE,
                 ":2: unknown section [provider aws] (sections are [provider \"NAME\"], [slurm \"NAME\"])");
    /* every provider of the registry, plan-only ones too, can have settings */
    expect_error("[provider \"aws\"]\nregion = a\n[provider \"nosuch\"]\nendpoint = x\n",
                 GPC_ERR_USAGE, ":3: unknown provider 'nosuch' (known: local, aliyun, aws, azure, slurm)");
    expect_error("[provider \"aws\"]\nzone = us-east-1a\n", GPC_ERR_USAGE,
                 ":2: unknown key 'zone' in [provider \"aws\"] (keys: endpoint, profile, "
                 "region)");
    expect_error("endpoint = http://x\n", GPC_ERR_USAGE,
                 ":1: 'endpoint' is outside a [provider \"NAME\"] section");
    expect_error("[provider \"aws\"]\nendpoint = http://a\n# b\nendpoint = http://b\n",
                 GPC_ERR_USAGE, ":4: endpoint of provider 'aws' is already set on line 2");
    expect_error("[provider \"aws\"]\nregion =\n", GPC_ERR_USAGE,
                 ":2: region of provider 'aws' is empty");
    expect_error("[provider \"aws\"]\nendpoint\n", GPC_ERR_USAGE,
                 ":2: expected '[provider \"NAME\"]' or 'key = value'");
    expect_error("[provider \"aws\"\n", GPC_ERR_USAGE,
                 ":1: expected '[provider \"NAME\"]' or 'key = value'");
    /* the first error is the one told */
    expect_error("[provider \"aws\"]\nendpoint\nzone = a\n", GPC_ERR_USAGE,
                 ":2: expected '[provider \"NAME\"]' or 'key = value'");
    expect_error("[provider \"aws\"]\nzone = a\nendpoint\n", GPC_ERR_USAGE,
                 ":2: unknown key 'zone' in [provider \"aws\"] (keys: endpoint, profile, "
                 "region)");
    char longline[400];
    snprintf(longline, sizeof(longline), "[provider \"aws\"]\nendpoint = http://%0250d\n", 0);
    expect_error(longline, GPC_ERR_USAGE, ":2: line longer than 198 characters");
    /* GPUCTL_CONFIG names a file: it must be there */
    unlink(cfg_path);
    gpc_provider_settings ps;
    gpc_error err;
    assert_int_equal(resolve(NULL, "aws", &ps, &err), GPC_ERR_IO);
    snprintf(msg, sizeof(msg), "%s: No such file or directory", cfg_path);
    assert_string_equal(err.msg, msg);
    gpc_provider_settings_free(&ps);
}

/* The session keeps one context per provider, opened on first use. */
static void test_session_contexts(void **state)
{
    (void)state;
    write_config("[provider \"aws\"]\nregion = us-east-2\n");
    setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials", 1);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/state", cfg_dir);
    gpc_settings set = {.state_dir = dir};
    gpc_session s;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_session_open(&s, &set, &err), 0);
    assert_null(s.open); /* nothing opened yet */
    gpc_open_provider a, b, a2;
    assert_int_equal(gpc_session_provider(&s, "local", &a, &err), 0);
    assert_string_equal(a.prov->name, "local");
    assert_int_equal(gpc_session_provider(&s, "aws", &b, &err), 0);
    assert_string_equal(b.prov->name, "aws");
    assert_int_equal(gpc_session_provider(&s, "local", &a2, &err), 0);
    assert_ptr_equal(a.ctx, a2.ctx); /* still open: the same context */
    assert_ptr_equal(a.prov, a2.prov);
    gpc_open_provider none;
    assert_int_equal(gpc_session_provider(&s, "nosuch", &none, &err), GPC_ERR_PROVIDER);
    char msg[512];
    snprintf(msg, sizeof(msg), "provider 'nosuch' is not built into this gpuctl (available: %s)",
             gpc_provider_names());
    assert_string_equal(err.msg, msg);
    assert_null(none.prov);
    gpc_session_close(&s);
    /* a config file in error: no provider opens */
    write_config("[provider \"aws\"]\nzone = a\n");
    gpc_error_clear(&err);
    assert_int_equal(gpc_session_open(&s, &set, &err), 0);
    assert_int_equal(gpc_session_provider(&s, "local", &a, &err), GPC_ERR_USAGE);
    snprintf(msg, sizeof(msg), "%s:2: unknown key 'zone' in [provider \"aws\"] (keys: "
             "endpoint, profile, region)", cfg_path);
    assert_string_equal(err.msg, msg);
    gpc_session_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_error_remote),
        cmocka_unit_test(test_error_wrap),
        cmocka_unit_test(test_exit_status_contract),
        cmocka_unit_test(test_buf_limit),
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_base64_rfc4648),
        cmocka_unit_test(test_gzip_round_trip),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_files),
        cmocka_unit_test_setup_teardown(test_settings_order, settings_setup, settings_teardown),
        cmocka_unit_test_setup_teardown(test_settings_file_errors, settings_setup,
                                        settings_teardown),
        cmocka_unit_test_setup_teardown(test_session_contexts, settings_setup,
                                        settings_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
