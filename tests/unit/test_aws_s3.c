/*
 * test_aws_s3.c - the S3 client (providers/aws/s3*.c) against the fake S3
 * endpoint tests/fake/s3.py, which recomputes every SigV4 signature with
 * botocore: signing against AWS's published S3 examples, addressing, the
 * bucket gpuctl ensures (with the exact settings the fake recorded),
 * objects, listing pages, DeleteObjects, incremental sync both ways
 * (counted at the fake), multipart upload resumed after a failure mid-
 * upload (UploadPart calls counted at the fake), and a key limited to a
 * prefix refused outside it.
 *
 * The signing examples are those of the Amazon S3 API Reference,
 * "Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk (AWS Signature Version 4)",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 * (examplebucket, AKIAIOSFODNN7EXAMPLE, 20130524; also in aws.md 1.8).
 *
 * Keys for the fake: the EC2 documentation example (AKIDEXAMPLE), the
 * fake's default owner; AKIDNODE is limited to s3://BUCKET/cluster-a/.
 * The fake numbers request ids by the request's place: REQ + 8 digits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "fake/aws_env.h"
#include "fake/fixed_clock.h"
#include "fake/spawn.h"
#include "gpuctl/http.h"
#include "gpuctl/log.h"
#include "gpuctl/util.h"

#define AKID   "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define BUCKET "gpuctl-123456789012-us-west-2"
#define MIB (1u << 20)

typedef struct fixture {
    fake_server srv;
    gpc_log out;
    gpc_ec2 ec2;
    gpc_s3 s3;
    int opened;
    char tmp[64];      /* a scratch directory */
} fixture;

static void use_keys(const char *akid, const char *secret)
{
    setenv("AWS_ACCESS_KEY_ID", akid, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
}

static int setup(void **state)
{
    aws_env_reset();
    setenv("AWS_CONFIG_FILE", "/nonexistent/gpuctl-test/aws-config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/gpuctl-test/aws-credentials", 1);
    use_keys(AKID, SECRET);
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->srv.in_fd = f->srv.out_fd = -1;
    snprintf(f->tmp, sizeof(f->tmp), "/tmp/gpuctl-s3-test-XXXXXX");
    if (!mkdtemp(f->tmp))
        return -1;
    *state = f;
    return 0;
}

static void close_sessions(fixture *f)
{
    if (f->opened) {
        gpc_s3_close(&f->s3);
        gpc_ec2_close(&f->ec2);
        f->opened = 0;
    }
}

static int teardown(void **state)
{
    fixture *f = *state;
    close_sessions(f);
    fake_stop(&f->srv);
    gpc_error err;
    gpc_error_clear(&err);
    gpc_rm_rf(f->tmp, &err);
    free(f);
    gpc_clock_set(&gpc_clock_system);
    aws_env_reset();
    return 0;
}

/* Open the EC2 and S3 sessions for `region` against the fake. */
static void open_sessions(fixture *f, const char *region)
{
    gpc_error err;
    gpc_error_clear(&err);
    memset(&f->out, 0, sizeof(f->out));
    assert_int_equal(gpc_ec2_open(&f->ec2, &(gpc_aws_options){.region = region}, &f->out, &err),
                     0);
    assert_int_equal(gpc_s3_open(&f->s3, &f->ec2, region, &err), 0);
    f->s3.backoff_base_ms = 1;
    f->opened = 1;
}

/* Start the fake with extra flags (NULL-terminated) and open sessions for
 * us-west-2. */
static void start(fixture *f, ...)
{
    const char *args[32];
    int n = 0;
    va_list ap;
    va_start(ap, f);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 31)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    assert_int_equal(fake_start(&f->srv, "s3.py", args), 0);
    setenv("AWS_ENDPOINT_URL_S3", f->srv.base, 1);
    setenv("AWS_ENDPOINT_URL_STS", f->srv.base, 1);
    open_sessions(f, "us-west-2");
}

/* A plain request to the fake's control endpoints. */
static cJSON *control(fixture *f, const char *method, const char *what, const char *body)
{
    char url[128];
    snprintf(url, sizeof(url), "%s/_fake/%s", f->srv.base, what);
    gpc_http_request req = {.method = method, .url = url, .body = body,
                            .body_len = body ? strlen(body) : 0};
    gpc_http_response resp;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, NULL, &resp, &err), 0);
    cJSON *j = cJSON_Parse(resp.body.data);
    gpc_http_response_free(&resp);
    assert_non_null(j);
    return j;
}

static int op_count(fixture *f, const char *op)
{
    cJSON *st = control(f, "GET", "state", NULL);
    cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "counts"), op);
    int n = c ? c->valueint : 0;
    cJSON_Delete(st);
    return n;
}

static void write_file(const char *path, const void *data, size_t len)
{
    gpc_error err;
    gpc_error_clear(&err);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(gpc_mkdir_p(dir, 0755, &err), 0);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

static char *read_all(const char *path, size_t *len)
{
    char *data = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_read_file(path, 64u << 20, &data, len, &err), 0);
    return data;
}

/* A file of n deterministic bytes (byte i = (i * 7 + seed) mod 251). */
static void write_pattern(const char *path, size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i * 7 + seed) % 251);
    write_file(path, b, n);
    free(b);
}

/* ---- signing: AWS's published S3 examples -------------------------------- */

static void test_signing_examples(void **state)
{
    fixture *f = *state;
    use_keys("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    fixed_clock_at(1369353600); /* 2013-05-24T00:00:00Z */
    open_sessions(f, "us-east-1");
    /* the examples' host: examplebucket.s3.amazonaws.com, virtual-hosted,
     * over http so that the payload hash is signed as in the examples */
    free(f->s3.endpoint);
    f->s3.endpoint = strdup("http://s3.amazonaws.com");
    const char *get_hdrs[] = {"Range: bytes=0-9"};
    const char *put_hdrs[] = {"Date: Fri, 24 May 2013 00:00:00 GMT",
                              "x-amz-storage-class: REDUCED_REDUNDANCY"};
    static const char put_body[] = "Welcome to Amazon S3.";
    struct {
        gpc_s3_request r;
        const char *url, *auth_tail;
    } cases[] = {
        {{.op = "GetObject", .method = "GET", .bucket = "examplebucket", .key = "test.txt",
          .headers = get_hdrs, .n_headers = 1},
         "http://examplebucket.s3.amazonaws.com/test.txt",
         "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
         "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
        {{.op = "PutObject", .method = "PUT", .bucket = "examplebucket", .key = "test$file.text",
          .headers = put_hdrs, .n_headers = 2, .body = put_body,
          .body_len = sizeof(put_body) - 1},
         "http://examplebucket.s3.amazonaws.com/test%24file.text",
         "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
         "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
        {{.op = "GetBucketLifecycle", .method = "GET", .bucket = "examplebucket",
          .query = "lifecycle"},
         "http://examplebucket.s3.amazonaws.com/?lifecycle",
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
        {{.op = "ListObjects", .method = "GET", .bucket = "examplebucket",
          .query = "max-keys=2&prefix=J"},
         "http://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gpc_error err;
        gpc_error_clear(&err);
        gpc_s3_prepared p;
        assert_int_equal(gpc_s3_prepare(&f->s3, &cases[i].r, &p, &err), 0);
        assert_string_equal(p.url, cases[i].url);
        gpc_http_headers extra = {0};
        assert_int_equal(gpc_s3_sign(&f->s3, &p, "s3", "us-east-1", &extra, &err), 0);
        assert_int_equal(extra.n, 2); /* no session token */
        assert_string_equal(extra.v[0], "X-Amz-Date: 20130524T000000Z");
        char want[512];
        snprintf(want, sizeof(want), "Authorization: AWS4-HMAC-SHA256 Credential="
                 "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, %s",
                 cases[i].auth_tail);
        assert_string_equal(extra.v[1], want);
        gpc_http_headers_free(&extra);
        gpc_s3_prepared_free(&p);
    }
}

/* ---- addressing and payload headers ---------------------------------------- */

static void test_addressing(void **state)
{
    fixture *f = *state;
    open_sessions(f, "us-west-2"); /* no override: the public endpoint */
    assert_int_equal(f->s3.override, 0);
    gpc_error err;
    gpc_error_clear(&err);
    char *url = NULL;
    assert_int_equal(gpc_s3_url(&f->s3, "my-bucket", "a b/c~d+e", NULL, &url, &err), 0);
    assert_string_equal(url, "https://my-bucket.s3.us-west-2.amazonaws.com/a%20b/c~d%2Be");
    free(url);
    assert_int_equal(gpc_s3_url(&f->s3, "my.bucket", "k", "uploads", &url, &err), 0);
    assert_string_equal(url, "https://s3.us-west-2.amazonaws.com/my.bucket/k?uploads");
    free(url);
    assert_int_equal(gpc_s3_url(&f->s3, "My_Bucket", "k", NULL, &url, &err), GPC_ERR_USAGE);
    assert_null(url);
    assert_string_equal(err.msg, "aws: s3: 'My_Bucket' is not a valid bucket name "
                        "(3-63 lower-case letters, digits, '.' and '-')");
    close_sessions(f);
    /* an override: path style, even for a name without dots */
    setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9/", 1);
    open_sessions(f, "us-west-2");
    assert_int_equal(f->s3.override, 1);
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_url(&f->s3, "my-bucket", "x/y", NULL, &url, &err), 0);
    assert_string_equal(url, "http://127.0.0.1:9/my-bucket/x/y");
    free(url);

    /* the payload headers: body hash over http, UNSIGNED-PAYLOAD only with
     * Content-MD5 over https (hand-checked: sha256sum / md5 | base64) */
    char h[2][160];
    assert_int_equal(gpc_s3_payload_headers("abc", 3, 1, 0, 0, h, &err), 1);
    assert_string_equal(h[0], "x-amz-content-sha256: "
                        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(gpc_s3_payload_headers("abc", 3, 1, 0, 1, h, &err), 2);
    assert_string_equal(h[1], "Content-MD5: kAFQmDzST7DWlj99KOF/cg==");
    assert_int_equal(gpc_s3_payload_headers("abc", 3, 1, 1, 0, h, &err), 2);
    assert_string_equal(h[0], "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    assert_string_equal(h[1], "Content-MD5: kAFQmDzST7DWlj99KOF/cg==");
    assert_int_equal(gpc_s3_payload_headers(NULL, 0, 0, 1, 0, h, &err), 1);
    assert_string_equal(h[0], "x-amz-content-sha256: " GPC_SIGV4_EMPTY_SHA256);
}

/* ---- the bucket --------------------------------------------------------------- */

static void test_ensure_bucket(void **state)
{
    fixture *f = *state;
    start(f, "--taken", "someone-elses", NULL);
    gpc_error err;
    gpc_error_clear(&err);
    char acct[13], name[64];
    assert_int_equal(gpc_s3_account_id(&f->s3, acct, &err), 0);
    assert_string_equal(acct, "123456789012");
    gpc_s3_default_bucket(acct, "us-west-2", name);
    assert_string_equal(name, BUCKET);
    gpc_s3_tag tags[] = {{"gpuctl:managed", "true"}, {"gpuctl:purpose", "data & checkpoints"}};
    int created = -1;
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, name, tags, 2, 7, &created, &err), 0);
    assert_int_equal(created, 1);
    created = -1;
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, name, tags, 2, 7, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_int_equal(op_count(f, "CreateBucket"), 1);
    assert_int_equal(op_count(f, "HeadBucket"), 2);
    cJSON *st = control(f, "GET", "state", NULL);
    cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "buckets"), BUCKET);
    char *settings = cJSON_PrintUnformatted(cJSON_GetObjectItem(b, "settings"));
    assert_string_equal(settings, /* the fake sorts keys */
        "{\"BucketEncryption\":[\"AES256\"],"
        "\"BucketLifecycleConfiguration\":[{\"DaysAfterInitiation\":7,"
        "\"ID\":\"gpuctl-abort-incomplete-multipart\",\"Prefix\":\"\",\"Status\":\"Enabled\"}],"
        "\"BucketTagging\":{\"gpuctl:managed\":\"true\",\"gpuctl:purpose\":\"data & checkpoints\"},"
        "\"PublicAccessBlock\":{\"BlockPublicAcls\":\"true\",\"BlockPublicPolicy\":\"true\","
        "\"IgnorePublicAcls\":\"true\",\"RestrictPublicBuckets\":\"true\"}}");
    assert_string_equal(cJSON_GetObjectItem(b, "region")->valuestring, "us-west-2");
    free(settings);
    cJSON_Delete(st);

    /* HeadBucket and CreateBucket race with another caller: the bucket is
     * there by the time CreateBucket runs (BucketAlreadyOwnedByYou) */
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"HeadBucket\", \"status\": 404, "
                         "\"code\": \"NoSuchBucket\", \"times\": 2}]"));
    created = -1;
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, name, tags, 2, 7, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_int_equal(op_count(f, "CreateBucket"), 2);
    /* ... or another account took the name meanwhile */
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, "someone-elses", NULL, 0, 7, NULL, &err),
                     GPC_ERR_USAGE);
    assert_string_equal(err.msg, "aws: s3: bucket name someone-elses is taken by another AWS "
                        "account; name another bucket");

    /* another account's name */
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, "someone-elses", NULL, 0, 7, NULL, &err),
                     GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: s3: bucket someone-elses exists but belongs to another "
                        "account (or these credentials may not use it)");
    /* the bucket seen from another region */
    close_sessions(f);
    open_sessions(f, "us-east-1");
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, BUCKET, NULL, 0, 7, NULL, &err),
                     GPC_ERR_USAGE);
    assert_string_equal(err.msg, "aws: s3: bucket " BUCKET " is in region us-west-2, not "
                        "us-east-1");
    /* an object call follows the bucket to its region, once */
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "r/x", "hi", 2, &err), 0);
    assert_string_equal(f->s3.region, "us-west-2");
}

/* ---- objects ------------------------------------------------------------------ */

static void make_bucket(fixture *f)
{
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, BUCKET, NULL, 0, 7, NULL, &err), 0);
}

static void test_objects(void **state)
{
    fixture *f = *state;
    start(f, "--page-size", "2", NULL);
    make_bucket(f);
    gpc_error err;
    gpc_error_clear(&err);
    const char *keys[] = {"p/a", "p/b c", "p/d/e", "p/f", "q/g"};
    for (int i = 0; i < 5; i++)
        assert_int_equal(gpc_s3_put(&f->s3, BUCKET, keys[i], keys[i], strlen(keys[i]), &err), 0);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "p/empty", NULL, 0, &err), 0);
    gpc_s3_object o;
    assert_int_equal(gpc_s3_head(&f->s3, BUCKET, "p/b c", &o, &err), 0);
    assert_int_equal(o.size, 5);
    /* md5("p/b c"), sha256("p/b c") */
    char md5[33], sha[65];
    assert_int_equal(gpc_s3_md5_hex("p/b c", 5, md5, &err), 0);
    gpc_sha256_hex("p/b c", 5, sha);
    char etag[40];
    snprintf(etag, sizeof(etag), "\"%s\"", md5);
    assert_string_equal(o.etag, etag);
    assert_string_equal(o.sha256, sha);
    assert_int_equal(gpc_s3_head(&f->s3, BUCKET, "p/nothing", &o, &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.remote.code, "NoSuchKey");

    gpc_s3_object *list = NULL;
    size_t n = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "p/", &list, &n, &err), 0);
    assert_int_equal(n, 5);
    assert_string_equal(list[0].key, "p/a");
    assert_string_equal(list[1].key, "p/b c");
    assert_string_equal(list[2].key, "p/d/e");
    assert_string_equal(list[3].key, "p/empty");
    assert_int_equal(list[3].size, 0);
    assert_string_equal(list[4].key, "p/f");
    free(list);
    assert_int_equal(op_count(f, "ListObjectsV2"), 3); /* pages of 2 */

    char path[256];
    uint64_t got = 0;
    snprintf(path, sizeof(path), "%s/dl/x/b c", f->tmp);
    assert_int_equal(gpc_s3_get_file(&f->s3, BUCKET, "p/b c", path, &got, &err), 0);
    assert_int_equal(got, 5);
    size_t len;
    char *data = read_all(path, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(data, "p/b c", 5);
    free(data);
    snprintf(path, sizeof(path), "%s/dl/empty", f->tmp);
    assert_int_equal(gpc_s3_get_file(&f->s3, BUCKET, "p/empty", path, &got, &err), 0);
    assert_int_equal(got, 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    /* a missing object leaves no file behind */
    snprintf(path, sizeof(path), "%s/dl/none", f->tmp);
    assert_int_equal(gpc_s3_get_file(&f->s3, BUCKET, "p/none", path, &got, &err),
                     GPC_ERR_NOT_FOUND);
    assert_int_not_equal(stat(path, &sb), 0);
    char part[300];
    snprintf(part, sizeof(part), "%s.gpuctl-part", path);
    assert_int_not_equal(stat(part, &sb), 0);

    gpc_error_clear(&err);
    const char *del[] = {"p/a", "p/d/e", "p/not-there"};
    assert_int_equal(gpc_s3_delete(&f->s3, BUCKET, del, 3, &err), 0);
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "", &list, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_string_equal(list[0].key, "p/b c");
    assert_string_equal(list[1].key, "p/empty");
    assert_string_equal(list[2].key, "p/f");
    assert_string_equal(list[3].key, "q/g");
    free(list);
}

/* Virtual-hosted requests, as on AWS's own endpoint: libcurl resolves
 * every name under .localhost to the loopback address, so the fake sees
 * Host: BUCKET.s3.localhost:PORT and finds the bucket there. */
static void test_virtual_hosted(void **state)
{
    fixture *f = *state;
    start(f, "--page-size", "1", NULL);
    make_bucket(f);
    f->s3.override = 0;
    free(f->s3.endpoint);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://s3.localhost:%d", f->srv.port);
    f->s3.endpoint = strdup(ep);
    gpc_error err;
    gpc_error_clear(&err);
    char *url = NULL, want[128];
    assert_int_equal(gpc_s3_url(&f->s3, BUCKET, "v/a b", NULL, &url, &err), 0);
    snprintf(want, sizeof(want), "http://" BUCKET ".s3.localhost:%d/v/a%%20b", f->srv.port);
    assert_string_equal(url, want);
    free(url);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "v/a b", "one", 3, &err), 0);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "v/c", "two", 3, &err), 0);
    gpc_s3_object *l = NULL;
    size_t n = 0;
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "v/", &l, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(l[0].key, "v/a b");
    assert_string_equal(l[1].key, "v/c");
    free(l);
    char path[256];
    snprintf(path, sizeof(path), "%s/got", f->tmp);
    assert_int_equal(gpc_s3_get_file(&f->s3, BUCKET, "v/a b", path, NULL, &err), 0);
    size_t len;
    char *data = read_all(path, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "one", 3);
    free(data);
}

/* ---- incremental sync ------------------------------------------------------------ */

static void test_sync_incremental(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    make_bucket(f);
    char src[128], dst[128], p[256];
    snprintf(src, sizeof(src), "%s/src", f->tmp);
    snprintf(dst, sizeof(dst), "%s/dst", f->tmp);
    snprintf(p, sizeof(p), "%s/a.txt", src);
    write_file(p, "alpha\n", 6);
    snprintf(p, sizeof(p), "%s/sub/b.bin", src);
    write_pattern(p, 1000, 3);
    snprintf(p, sizeof(p), "%s/c.txt", src);
    write_file(p, "charlie\n", 8);
    gpc_error err;
    gpc_error_clear(&err);
    gpc_s3_sync_stats st;
    assert_int_equal(gpc_s3_sync_up(&f->s3, src, BUCKET, "c1/data/", NULL, &st, &err), 0);
    assert_int_equal(st.files_sent, 3);
    assert_int_equal(st.files_skipped, 0);
    assert_int_equal(st.bytes_sent, 1014);
    /* the same size, other bytes: only the checksum tells */
    write_file(p, "CHARLIE\n", 8);
    assert_int_equal(gpc_s3_sync_up(&f->s3, src, BUCKET, "c1/data/", NULL, &st, &err), 0);
    assert_int_equal(st.files_sent, 1);
    assert_int_equal(st.files_skipped, 2);
    assert_int_equal(st.bytes_sent, 8);
    assert_int_equal(op_count(f, "PutObject"), 4);
    /* and back */
    assert_int_equal(gpc_s3_sync_down(&f->s3, BUCKET, "c1/data/", dst, &st, &err), 0);
    assert_int_equal(st.files_sent, 3);
    assert_int_equal(st.files_skipped, 0);
    assert_int_equal(st.bytes_sent, 1014);
    snprintf(p, sizeof(p), "%s/c.txt", dst);
    size_t len;
    char *data = read_all(p, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(data, "CHARLIE\n", 8);
    free(data);
    write_file(p, "charlie\n", 8);
    assert_int_equal(gpc_s3_sync_down(&f->s3, BUCKET, "c1/data/", dst, &st, &err), 0);
    assert_int_equal(st.files_sent, 1);
    assert_int_equal(st.files_skipped, 2);
    assert_int_equal(st.bytes_sent, 8);
    assert_int_equal(op_count(f, "GetObject"), 4);
    data = read_all(p, &len);
    assert_memory_equal(data, "CHARLIE\n", 8);
    free(data);

    /* a key that would escape the directory: refused before any write */
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "c1/data//etc/passwd", "x", 1, &err), 0);
    assert_int_equal(gpc_s3_sync_down(&f->s3, BUCKET, "c1/data/", dst, &st, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "aws: s3: unsafe key c1/data//etc/passwd under s3://" BUCKET
                        "/c1/data/ (an absolute path or an empty, '.' or '..' segment)");
    /* keys with '.' or '..' segments are never sent (HTTP clients rewrite them) */
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "c1/data/../escape", "x", 1, &err),
                     GPC_ERR_USAGE);
    assert_string_equal(err.msg, "aws: s3: key 'c1/data/../escape' has a '.' or '..' "
                        "segment, which gpuctl does not send");
}

/* ---- multipart upload, resumed ----------------------------------------------------- */

#define BIG_SIZE (12u * MIB + 123u) /* parts of 5 MiB: 5, 5, 2 MiB + 123 */

static void test_multipart_resume(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    make_bucket(f);
    f->s3.part_size = 5 * MIB;
    f->s3.max_attempts = 2;
    char path[256], mdir[256];
    snprintf(path, sizeof(path), "%s/big.bin", f->tmp);
    snprintf(mdir, sizeof(mdir), "%s/state", f->tmp);
    write_pattern(path, BIG_SIZE, 11);

    /* part 2 fails every time: parts 1 and 3 go, the upload stops */
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"UploadPart\", \"part\": 2, \"status\": 500, "
                         "\"code\": \"InternalError\"}]"));
    gpc_error err;
    gpc_error_clear(&err);
    uint64_t sent = 0;
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "ckpt/big.bin", path, mdir, &sent, &err),
                     GPC_ERR_PROVIDER);
    assert_non_null(strstr(err.msg, "part 2: aws: s3 UploadPart s3://" BUCKET
                           "/ckpt/big.bin: InternalError: injected fault"));
    assert_int_equal(sent, 5 * MIB + 2 * MIB + 123);
    assert_int_equal(op_count(f, "UploadPart"), 4); /* 1, 3, and 2 twice */
    cJSON *st = control(f, "GET", "state", NULL);
    cJSON *ups = cJSON_GetObjectItem(st, "uploads");
    assert_int_equal(cJSON_GetArraySize(ups), 1);
    char *parts = cJSON_PrintUnformatted(cJSON_GetObjectItem(ups->child, "parts"));
    assert_string_equal(parts, "[1,3]");
    free(parts);
    cJSON_Delete(st);

    /* again, fault gone: only part 2 moves */
    cJSON_Delete(control(f, "POST", "faults", "[]"));
    cJSON_Delete(control(f, "POST", "reset", NULL));
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "ckpt/big.bin", path, mdir, &sent, &err),
                     0);
    assert_int_equal(sent, 5 * MIB);
    assert_int_equal(op_count(f, "UploadPart"), 1);
    assert_int_equal(op_count(f, "ListParts"), 1);
    assert_int_equal(op_count(f, "CreateMultipartUpload"), 0);
    assert_int_equal(op_count(f, "CompleteMultipartUpload"), 1);
    gpc_s3_object o;
    assert_int_equal(gpc_s3_head(&f->s3, BUCKET, "ckpt/big.bin", &o, &err), 0);
    assert_int_equal(o.size, BIG_SIZE);
    char sha[65];
    assert_int_equal(gpc_s3_file_sha256(path, sha, NULL, &err), 0);
    assert_string_equal(o.sha256, sha);
    assert_int_equal(strlen(o.etag), 1 + 32 + 2 + 1); /* "<md5 of md5s>-3" */
    assert_string_equal(o.etag + 33, "-3\"");
    /* the manifest is gone once the object is there */
    gpc_s3_sync_stats ss;
    char back[256];
    snprintf(back, sizeof(back), "%s/back", f->tmp);
    assert_int_equal(gpc_s3_sync_down(&f->s3, BUCKET, "ckpt/", back, &ss, &err), 0);
    assert_int_equal(ss.files_sent, 1);
    assert_int_equal(ss.bytes_sent, BIG_SIZE);
    snprintf(back, sizeof(back), "%s/back/big.bin", f->tmp);
    char sha2[65];
    assert_int_equal(gpc_s3_file_sha256(back, sha2, NULL, &err), 0);
    assert_string_equal(sha2, sha);
    assert_int_equal(op_count(f, "GetObject"), 2); /* ranges of 8 MiB */
    int left = 0;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "ls %s | grep -c s3-upload- >/dev/null", mdir);
    left = system(cmd) == 0;
    assert_int_equal(left, 0);
}

/* The upload's parts the fake holds, as JSON ("[1,3]"; "" without an
 * upload). */
static void upload_parts(fixture *f, char *out, size_t size)
{
    cJSON *st = control(f, "GET", "state", NULL);
    cJSON *up = cJSON_GetObjectItem(st, "uploads")->child;
    out[0] = '\0';
    if (up) {
        char *p = cJSON_PrintUnformatted(cJSON_GetObjectItem(up, "parts"));
        snprintf(out, size, "%s", p);
        free(p);
    }
    cJSON_Delete(st);
}

static void test_multipart_resume_after_kill(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    make_bucket(f);
    char path[256], mdir[256];
    snprintf(path, sizeof(path), "%s/big.bin", f->tmp);
    snprintf(mdir, sizeof(mdir), "%s/state", f->tmp);
    write_pattern(path, BIG_SIZE, 17);
    /* part 2 never answers: the uploader is killed while it waits */
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"UploadPart\", \"part\": 2, \"hang\": 60}]"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the child: its own sessions, one part at a time */
        gpc_ec2 e;
        gpc_s3 s;
        gpc_log quiet;
        gpc_error err;
        memset(&quiet, 0, sizeof(quiet));
        gpc_error_clear(&err);
        if (gpc_ec2_open(&e, &(gpc_aws_options){.region = "us-west-2"}, &quiet, &err) ||
            gpc_s3_open(&s, &e, "us-west-2", &err))
            _exit(3);
        s.part_size = 5 * MIB;
        s.parallel = 1;
        gpc_s3_upload_file(&s, BUCKET, "ckpt/big.bin", path, mdir, NULL, &err);
        _exit(4); /* not reached while part 2 hangs */
    }
    char parts[64] = "";
    for (int i = 0; i < 200 && op_count(f, "UploadPart") < 2; i++)
        usleep(50 * 1000);
    upload_parts(f, parts, sizeof(parts));
    assert_int_equal(op_count(f, "UploadPart"), 2);
    assert_string_equal(parts, "[1]");
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* resumed by another process (this one): parts 2 and 3 only */
    cJSON_Delete(control(f, "POST", "faults", "[]"));
    cJSON_Delete(control(f, "POST", "reset", NULL));
    f->s3.part_size = 5 * MIB;
    gpc_error err;
    gpc_error_clear(&err);
    uint64_t sent = 0;
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "ckpt/big.bin", path, mdir, &sent, &err),
                     0);
    assert_int_equal(sent, 5 * MIB + 2 * MIB + 123);
    assert_int_equal(op_count(f, "CreateMultipartUpload"), 0);
    assert_int_equal(op_count(f, "ListParts"), 1);
    assert_int_equal(op_count(f, "UploadPart"), 2);
    assert_int_equal(op_count(f, "CompleteMultipartUpload"), 1);
    upload_parts(f, parts, sizeof(parts));
    assert_string_equal(parts, "");
    gpc_s3_object o;
    char sha[65];
    assert_int_equal(gpc_s3_head(&f->s3, BUCKET, "ckpt/big.bin", &o, &err), 0);
    assert_int_equal(gpc_s3_file_sha256(path, sha, NULL, &err), 0);
    assert_int_equal(o.size, BIG_SIZE);
    assert_string_equal(o.sha256, sha);

    /* the file changes: the old manifest's upload is aborted, a new one sent */
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"UploadPart\", \"part\": 3, \"status\": 400, "
                         "\"code\": \"InvalidArgument\"}]"));
    write_pattern(path, BIG_SIZE, 19);
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "ckpt/big.bin", path, mdir, &sent, &err),
                     GPC_ERR_PROVIDER);
    write_pattern(path, BIG_SIZE, 23);
    cJSON_Delete(control(f, "POST", "faults", "[]"));
    cJSON_Delete(control(f, "POST", "reset", NULL));
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "ckpt/big.bin", path, mdir, &sent, &err),
                     0);
    assert_int_equal(sent, BIG_SIZE);
    assert_int_equal(op_count(f, "AbortMultipartUpload"), 1);
    assert_int_equal(op_count(f, "ListParts"), 0);
    assert_int_equal(op_count(f, "UploadPart"), 3);
    upload_parts(f, parts, sizeof(parts));
    assert_string_equal(parts, "");
}

static void test_multipart_upload_gone(void **state)
{
    fixture *f = *state;
    start(f, NULL);
    make_bucket(f);
    f->s3.part_size = 5 * MIB;
    f->s3.max_attempts = 1;
    char path[256], mdir[256];
    snprintf(path, sizeof(path), "%s/big.bin", f->tmp);
    snprintf(mdir, sizeof(mdir), "%s/state", f->tmp);
    write_pattern(path, BIG_SIZE, 5);
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"UploadPart\", \"part\": 3, \"status\": 503, "
                         "\"code\": \"SlowDown\"}]"));
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "k/big", path, mdir, NULL, &err),
                     GPC_ERR_PROVIDER);
    /* the upload is aborted behind gpuctl's back (the lifecycle rule) */
    cJSON *st = control(f, "GET", "state", NULL);
    cJSON *up = cJSON_GetObjectItem(st, "uploads")->child;
    assert_non_null(up);
    gpc_buf q;
    gpc_buf_init(&q, 1024);
    assert_int_equal(gpc_buf_adds(&q, "uploadId=", &err), 0);
    assert_int_equal(gpc_sigv4_uri_encode(up->string, strlen(up->string), 1, &q, &err), 0);
    gpc_s3_request r = {.op = "AbortMultipartUpload", .method = "DELETE", .bucket = BUCKET,
                        .key = "k/big", .query = gpc_buf_str(&q)};
    gpc_http_response resp;
    assert_int_equal(gpc_s3_send(&f->s3, &r, &resp, &err), 0);
    assert_int_equal(resp.status, 204);
    gpc_http_response_free(&resp);
    gpc_buf_free(&q);
    cJSON_Delete(st);
    /* NoSuchUpload -> HeadObject (absent) -> a new upload of all 3 parts */
    cJSON_Delete(control(f, "POST", "faults", "[]"));
    cJSON_Delete(control(f, "POST", "reset", NULL));
    f->s3.max_attempts = 0;
    /* a 503 SlowDown on part 1, once: retried */
    cJSON_Delete(control(f, "POST", "faults",
                         "[{\"op\": \"UploadPart\", \"part\": 1, \"status\": 503, "
                         "\"code\": \"SlowDown\", \"times\": 1},"
                         " {\"op\": \"CompleteMultipartUpload\", \"complete_200\": true, "
                         "\"code\": \"InternalError\", \"times\": 1}]"));
    uint64_t sent = 0;
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_upload_file(&f->s3, BUCKET, "k/big", path, mdir, &sent, &err), 0);
    assert_int_equal(sent, BIG_SIZE);
    assert_int_equal(op_count(f, "ListParts"), 1);
    assert_int_equal(op_count(f, "HeadObject"), 1);
    assert_int_equal(op_count(f, "CreateMultipartUpload"), 1);
    assert_int_equal(op_count(f, "UploadPart"), 4);            /* 3 + the retried one */
    assert_int_equal(op_count(f, "CompleteMultipartUpload"), 2); /* 200 with <Error>, again */
}

/* ---- a key limited to its prefix --------------------------------------------------- */

static void test_prefix_policy(void **state)
{
    fixture *f = *state;
    start(f, "--restrict", "AKIDNODE:nodesecret:" BUCKET "/cluster-a/", NULL);
    make_bucket(f);
    close_sessions(f);
    use_keys("AKIDNODE", "nodesecret");
    open_sessions(f, "us-west-2");
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "cluster-a/ckpt/1", "x", 1, &err), 0);
    gpc_s3_object *l = NULL;
    size_t n = 0;
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "cluster-a/", &l, &n, &err), 0);
    assert_int_equal(n, 1);
    free(l);
    unsigned long before = f->s3.requests;
    (void)before;
    assert_int_equal(gpc_s3_put(&f->s3, BUCKET, "cluster-b/ckpt/1", "x", 1, &err),
                     GPC_ERR_AUTH);
    /* requests so far: HeadBucket, CreateBucket, 3 settings (no tags), PutObject,
     * ListObjectsV2, this one */
    assert_string_equal(err.msg, "aws: s3 PutObject s3://" BUCKET "/cluster-b/ckpt/1: "
                        "AccessDenied: Access Denied (the credentials lack an s3: permission "
                        "for this; docs/providers/aws-iam-policy.json lists every action gpuctl "
                        "needs) (request id REQ00000008)");
    assert_int_equal(err.remote.http_status, 403);
    assert_string_equal(err.remote.code, "AccessDenied");
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "cluster-b/", &l, &n, &err), GPC_ERR_AUTH);
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_ensure_bucket(&f->s3, BUCKET, NULL, 0, 7, NULL, &err),
                     GPC_ERR_AUTH);
    /* DeleteObjects answers 200 and names each key it refused */
    gpc_error_clear(&err);
    const char *del[] = {"cluster-a/ckpt/1", "cluster-b/other"};
    assert_int_equal(gpc_s3_delete(&f->s3, BUCKET, del, 2, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: s3 DeleteObjects s3://" BUCKET "/cluster-b/other: "
                        "AccessDenied: Access Denied");
    gpc_error_clear(&err);
    assert_int_equal(gpc_s3_list(&f->s3, BUCKET, "cluster-a/", &l, &n, &err), 0);
    assert_int_equal(n, 0); /* the allowed key went */
    free(l);
}

/* ---- the IAM policy ---------------------------------------------------------------- */

/* The IAM action each S3 operation needs (Amazon S3 User Guide, "Policy
 * actions for Amazon S3"; the multipart calls are s3:PutObject, HeadBucket
 * is s3:ListBucket). */
static const char *const op_actions[][2] = {
    {"AbortMultipartUpload", "s3:AbortMultipartUpload"},
    {"CompleteMultipartUpload", "s3:PutObject"},
    {"CreateBucket", "s3:CreateBucket"},
    {"CreateMultipartUpload", "s3:PutObject"},
    {"DeleteObjects", "s3:DeleteObject"},
    {"GetObject", "s3:GetObject"},
    {"HeadBucket", "s3:ListBucket"},
    {"HeadObject", "s3:GetObject"},
    {"ListObjectsV2", "s3:ListBucket"},
    {"ListParts", "s3:ListMultipartUploadParts"},
    {"PutBucketEncryption", "s3:PutEncryptionConfiguration"},
    {"PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration"},
    {"PutBucketTagging", "s3:PutBucketTagging"},
    {"PutObject", "s3:PutObject"},
    {"PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock"},
    {"UploadPart", "s3:PutObject"},
};
#define N_OPS (sizeof(op_actions) / sizeof(*op_actions))

/* Mark in used[] the operations named after `marker` in text. */
static void scan_ops(const char *text, const char *marker, int *used)
{
    for (const char *p = strstr(text, marker); p; p = strstr(p + 1, marker)) {
        const char *name = p + strlen(marker);
        size_t len = strcspn(name, "\"");
        size_t i = 0;
        while (i < N_OPS && (strlen(op_actions[i][0]) != len ||
                             strncmp(op_actions[i][0], name, len) != 0))
            i++;
        if (i == N_OPS)
            fail_msg("operation %.*s has no IAM action in the table", (int)len, name);
        used[i] = 1;
    }
}

/* docs/providers/aws-iam-policy.json allows exactly the s3: actions of the
 * operations in providers/aws/s3*.c. */
static void test_iam_policy(void **state)
{
    (void)state;
    const char *src = getenv("GPUCTL_SOURCE_DIR");
    assert_non_null(src);
    int used[N_OPS] = {0};
    const char *files[] = {"s3.c", "s3_object.c", "s3_multipart.c"};
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/providers/aws/%s", src, files[i]);
        size_t len;
        char *text = read_all(path, &len);
        scan_ops(text, ".op = \"", used);
        scan_ops(text, "put_config(s, \"", used);
        free(text);
    }
    char want[1024] = "", got[1024] = "";
    for (size_t i = 0; i < N_OPS; i++)
        assert_int_equal(used[i], 1); /* every operation of the table is called */
    const char *acts[N_OPS];
    size_t na = 0;
    for (size_t i = 0; i < N_OPS; i++) {
        size_t k = 0;
        while (k < na && strcmp(acts[k], op_actions[i][1]) != 0)
            k++;
        if (k == na)
            acts[na++] = op_actions[i][1];
    }
    for (size_t i = 0; i < na; i++) /* sort (few items) */
        for (size_t j = i + 1; j < na; j++)
            if (strcmp(acts[j], acts[i]) < 0) {
                const char *t = acts[i];
                acts[i] = acts[j];
                acts[j] = t;
            }
    for (size_t i = 0; i < na; i++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s ", acts[i]);
    char path[512];
    snprintf(path, sizeof(path), "%s/docs/providers/aws-iam-policy.json", src);
    size_t len;
    char *text = read_all(path, &len);
    cJSON *pol = cJSON_Parse(text);
    free(text);
    assert_non_null(pol);
    cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItem(pol, "Statement")) {
        cJSON *a, *list = cJSON_GetObjectItem(st, "Action");
        cJSON_ArrayForEach(a, list) {
            if (strncmp(a->valuestring, "s3:", 3) == 0)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s ", a->valuestring);
        }
    }
    cJSON_Delete(pol);
    assert_string_equal(got, want);
    assert_string_equal(got, "s3:AbortMultipartUpload s3:CreateBucket s3:DeleteObject "
                        "s3:GetObject s3:ListBucket s3:ListMultipartUploadParts "
                        "s3:PutBucketPublicAccessBlock s3:PutBucketTagging "
                        "s3:PutEncryptionConfiguration s3:PutLifecycleConfiguration "
                        "s3:PutObject ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signing_examples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_addressing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ensure_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_virtual_hosted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_incremental, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multipart_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multipart_resume_after_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multipart_upload_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iam_policy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
