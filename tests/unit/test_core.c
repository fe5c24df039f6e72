/*
 * test_core.c - error type, bounded buffer and util helpers.
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
#include "gpuctl/error.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_exit_status_contract),
        cmocka_unit_test(test_buf_limit),
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_base64_rfc4648),
        cmocka_unit_test(test_gzip_round_trip),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
