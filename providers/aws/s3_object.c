/* s3_object.c - see s3.h: the bucket and single-object operations. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <openssl/evp.h>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "gpuctl/util.h"
#include "gpuctl/xml.h"

xmlDoc *gpc_s3_xml(const gpc_buf *body)
{
    if (!body->len)
        return NULL;
    return xmlReadMemory(body->data, (int)body->len, "answer.xml", NULL,
                         XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

int gpc_s3_file_sha256(const char *path, char hex[65], uint64_t *size, gpc_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char *buf = malloc(1u << 20);
    int rc = 0;
    uint64_t total = 0;
    if (!c || !buf || !EVP_DigestInit_ex(c, EVP_sha256(), NULL))
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: SHA-256 failed");
    while (!rc) {
        ssize_t n = read(fd, buf, 1u << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        if (n <= 0)
            break;
        total += (uint64_t)n;
        if (!EVP_DigestUpdate(c, buf, (size_t)n))
            rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: SHA-256 failed");
    }
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!rc && (!EVP_DigestFinal_ex(c, md, &mdlen) || mdlen != 32))
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: SHA-256 failed");
    for (int i = 0; !rc && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (size)
        *size = total;
    EVP_MD_CTX_free(c);
    free(buf);
    close(fd);
    return rc;
}

/* Send r and drop the answer. */
static int send_simple(gpc_s3 *s, const gpc_s3_request *r, gpc_error *err)
{
    gpc_http_response resp;
    int rc = gpc_s3_send(s, r, &resp, err);
    gpc_http_response_free(&resp);
    return rc;
}

/* ---- bucket ------------------------------------------------------------- */

/* PUT ?SUBRESOURCE with an XML body. */
static int put_config(gpc_s3 *s, const char *op, const char *bucket, const char *sub,
                      const char *xml, gpc_error *err)
{
    const char *hdrs[] = {"Content-Type: application/xml"};
    gpc_s3_request r = {
        .op = op, .method = "PUT", .bucket = bucket, .query = sub, .headers = hdrs,
        .n_headers = 1, .body = xml, .body_len = strlen(xml), .content_md5 = 1,
    };
    return send_simple(s, &r, err);
}

/* Append text with XML's five characters escaped. */
static int add_xml_text(gpc_buf *b, const char *t, gpc_error *err)
{
    int rc = 0;
    for (; !rc && *t; t++) {
        switch (*t) {
        case '&': rc = gpc_buf_adds(b, "&amp;", err); break;
        case '<': rc = gpc_buf_adds(b, "&lt;", err); break;
        case '>': rc = gpc_buf_adds(b, "&gt;", err); break;
        case '"': rc = gpc_buf_adds(b, "&quot;", err); break;
        case '\'': rc = gpc_buf_adds(b, "&apos;", err); break;
        default: rc = gpc_buf_add(b, t, 1, err);
        }
    }
    return rc;
}

int gpc_s3_ensure_bucket(gpc_s3 *s, const char *bucket, const gpc_s3_tag *tags,
                         size_t n_tags, int abort_days, int *created, gpc_error *err)
{
    if (created)
        *created = 0;
    if (n_tags > 50)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: at most 50 bucket tags");
    if (abort_days < 1 || abort_days > 365)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: abort days %d not in 1..365", abort_days);
    /* HeadBucket: 301/400 say the region in x-amz-bucket-region */
    static const long head_ok[] = {301, 400, 403, 404};
    gpc_s3_request head = {
        .op = "HeadBucket", .method = "HEAD", .bucket = bucket, .accept = head_ok,
        .n_accept = 4,
    };
    char before[64];
    snprintf(before, sizeof(before), "%s", s->region);
    gpc_http_response resp;
    int rc = gpc_s3_send(s, &head, &resp, err);
    long st = resp.status;
    char where[64] = "";
    gpc_http_header(&resp, "x-amz-bucket-region", where, sizeof(where));
    gpc_http_response_free(&resp);
    if (rc)
        return rc;
    if ((st == 301 || st == 400 || strcmp(before, s->region) != 0) && where[0] &&
        strcmp(where, before) != 0)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: bucket %s is in region %s, not %s",
                        bucket, where, before);
    if (st == 403)
        return gpc_fail(err, GPC_ERR_AUTH, "aws: s3: bucket %s exists but belongs to another "
                        "account (or these credentials may not use it)", bucket);
    if (st == 404) {
        char body[256] = "";
        if (strcmp(s->region, "us-east-1") != 0)
            snprintf(body, sizeof(body),
                     "<CreateBucketConfiguration xmlns=\"" GPC_S3_XMLNS "\">"
                     "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
                     s->region);
        const char *hdrs[] = {"Content-Type: application/xml"};
        gpc_s3_request cr = {
            .op = "CreateBucket", .method = "PUT", .bucket = bucket, .headers = hdrs,
            .n_headers = body[0] ? 1 : 0, .body = body[0] ? body : NULL,
            .body_len = strlen(body),
        };
        gpc_error ce;
        gpc_error_clear(&ce);
        rc = send_simple(s, &cr, &ce);
        if (rc && strcmp(ce.remote.code, "BucketAlreadyOwnedByYou") == 0)
            rc = 0;
        else if (rc && strcmp(ce.remote.code, "BucketAlreadyExists") == 0)
            return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: bucket name %s is taken by another "
                            "AWS account; name another bucket", bucket);
        else if (rc)
            return gpc_error_wrap(err, &ce, NULL);
        else if (created)
            *created = 1;
    }
    rc = put_config(s, "PutPublicAccessBlock", bucket, "publicAccessBlock",
                    "<PublicAccessBlockConfiguration xmlns=\"" GPC_S3_XMLNS "\">"
                    "<BlockPublicAcls>true</BlockPublicAcls>"
                    "<IgnorePublicAcls>true</IgnorePublicAcls>"
                    "<BlockPublicPolicy>true</BlockPublicPolicy>"
                    "<RestrictPublicBuckets>true</RestrictPublicBuckets>"
                    "</PublicAccessBlockConfiguration>", err);
    if (!rc)
        rc = put_config(s, "PutBucketEncryption", bucket, "encryption",
                        "<ServerSideEncryptionConfiguration xmlns=\"" GPC_S3_XMLNS "\"><Rule>"
                        "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
                        "</ApplyServerSideEncryptionByDefault></Rule>"
                        "</ServerSideEncryptionConfiguration>", err);
    gpc_buf b;
    gpc_buf_init(&b, 64u << 10);
    if (!rc && n_tags) {
        rc = gpc_buf_adds(&b, "<Tagging xmlns=\"" GPC_S3_XMLNS "\"><TagSet>", err);
        for (size_t i = 0; !rc && i < n_tags; i++) {
            rc = gpc_buf_adds(&b, "<Tag><Key>", err);
            if (!rc)
                rc = add_xml_text(&b, tags[i].key, err);
            if (!rc)
                rc = gpc_buf_adds(&b, "</Key><Value>", err);
            if (!rc)
                rc = add_xml_text(&b, tags[i].value, err);
            if (!rc)
                rc = gpc_buf_adds(&b, "</Value></Tag>", err);
        }
        if (!rc)
            rc = gpc_buf_adds(&b, "</TagSet></Tagging>", err);
        if (!rc)
            rc = put_config(s, "PutBucketTagging", bucket, "tagging", gpc_buf_str(&b), err);
    }
    if (!rc) {
        gpc_buf_reset(&b);
        rc = gpc_buf_addf(&b, err,
                          "<LifecycleConfiguration xmlns=\"" GPC_S3_XMLNS "\"><Rule>"
                          "<ID>gpuctl-abort-incomplete-multipart</ID><Filter><Prefix></Prefix>"
                          "</Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload>"
                          "<DaysAfterInitiation>%d</DaysAfterInitiation>"
                          "</AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>",
                          abort_days);
        if (!rc)
            rc = put_config(s, "PutBucketLifecycleConfiguration", bucket, "lifecycle",
                            gpc_buf_str(&b), err);
    }
    gpc_buf_free(&b);
    return rc;
}

/* ---- objects -------------------------------------------------------------- */

int gpc_s3_put(gpc_s3 *s, const char *bucket, const char *key, const void *data, size_t len,
               gpc_error *err)
{
    char hex[65], meta[128];
    int rc = gpc_sigv4_sha256_hex(data, len, hex, err);
    if (rc)
        return rc;
    snprintf(meta, sizeof(meta), GPC_S3_META_SHA256 ": %s", hex);
    const char *hdrs[] = {meta, "Content-Type: application/octet-stream"};
    gpc_s3_request r = {
        .op = "PutObject", .method = "PUT", .bucket = bucket, .key = key, .headers = hdrs,
        .n_headers = 2, .body = data ? data : "", .body_len = len, .content_md5 = 1,
    };
    return send_simple(s, &r, err);
}

static uint64_t header_u64(const gpc_http_response *resp, const char *name)
{
    char v[32];
    if (!gpc_http_header(resp, name, v, sizeof(v)))
        return 0;
    return strtoull(v, NULL, 10);
}

int gpc_s3_head(gpc_s3 *s, const char *bucket, const char *key, gpc_s3_object *out,
                gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    gpc_s3_request r = {.op = "HeadObject", .method = "HEAD", .bucket = bucket, .key = key};
    gpc_http_response resp;
    int rc = gpc_s3_send(s, &r, &resp, err);
    if (!rc) {
        snprintf(out->key, sizeof(out->key), "%s", key);
        out->size = header_u64(&resp, "Content-Length");
        if (!gpc_http_header(&resp, "ETag", out->etag, sizeof(out->etag)))
            out->etag[0] = '\0';
        if (!gpc_http_header(&resp, GPC_S3_META_SHA256, out->sha256, sizeof(out->sha256)))
            out->sha256[0] = '\0';
    }
    gpc_http_response_free(&resp);
    return rc;
}

/* Write all of buf to fd. */
static int write_all(int fd, const char *buf, size_t n, const char *path, gpc_error *err)
{
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Make the directories above path. */
static int mkdir_parent(const char *path, gpc_error *err)
{
    char *dir = gpc_strdup(path, err);
    if (!dir)
        return GPC_ERR_NOMEM;
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = gpc_mkdir_p(dir, 0755, err);
    }
    free(dir);
    return rc;
}

int gpc_s3_get_file(gpc_s3 *s, const char *bucket, const char *key, const char *path,
                    uint64_t *size, gpc_error *err)
{
    if (size)
        *size = 0;
    int rc = mkdir_parent(path, err);
    if (rc)
        return rc;
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.gpuctl-part", path) >= (int)sizeof(tmp))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", tmp, strerror(errno));
    uint64_t off = 0, total = UINT64_MAX;
    char etag[80] = "";
    static const long ok_range[] = {416}; /* an empty object has no byte 0 */
    while (!rc && off < total) {
        char range[80];
        snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, off,
                 off + GPC_S3_GET_CHUNK - 1);
        const char *hdrs[] = {range};
        gpc_s3_request r = {
            .op = "GetObject", .method = "GET", .bucket = bucket, .key = key, .headers = hdrs,
            .n_headers = 1, .accept = ok_range, .n_accept = off == 0 ? 1 : 0,
        };
        gpc_http_response resp;
        rc = gpc_s3_send(s, &r, &resp, err);
        if (!rc && resp.status == 416) {
            total = 0;
        } else if (!rc) {
            char cr[128], et[80] = "";
            gpc_http_header(&resp, "ETag", et, sizeof(et));
            if (off == 0)
                snprintf(etag, sizeof(etag), "%s", et);
            else if (strcmp(et, etag) != 0)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 GetObject s3://%s/%s: the object "
                              "changed during the download", bucket, key);
            if (!rc && resp.status == 206 && gpc_http_header(&resp, "Content-Range", cr,
                                                             sizeof(cr))) {
                const char *slash = strrchr(cr, '/');
                if (slash && slash[1] != '*')
                    total = strtoull(slash + 1, NULL, 10);
            } else if (!rc) {
                total = resp.body.len; /* 200: the whole object at once */
            }
            if (!rc)
                rc = write_all(fd, resp.body.data, resp.body.len, tmp, err);
            off += resp.body.len;
            if (!rc && !resp.body.len && off < total)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 GetObject s3://%s/%s: empty "
                              "range", bucket, key);
        }
        gpc_http_response_free(&resp);
    }
    if (!rc && fsync(fd) != 0)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && !rc)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    if (rc)
        unlink(tmp);
    else if (size)
        *size = off;
    return rc;
}

int gpc_s3_list(gpc_s3 *s, const char *bucket, const char *prefix, gpc_s3_object **out,
                size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    char token[1100] = "";
    int rc = 0;
    do {
        gpc_buf q;
        gpc_buf_init(&q, 8192);
        rc = gpc_buf_adds(&q, "list-type=2", err);
        if (!rc && token[0]) {
            rc = gpc_buf_adds(&q, "&continuation-token=", err);
            if (!rc)
                rc = gpc_sigv4_uri_encode(token, strlen(token), 1, &q, err);
        }
        if (!rc && prefix && *prefix) {
            rc = gpc_buf_adds(&q, "&prefix=", err);
            if (!rc)
                rc = gpc_sigv4_uri_encode(prefix, strlen(prefix), 1, &q, err);
        }
        gpc_http_response resp;
        memset(&resp, 0, sizeof(resp));
        if (!rc) {
            gpc_s3_request r = {.op = "ListObjectsV2", .method = "GET", .bucket = bucket,
                                .query = gpc_buf_str(&q)};
            rc = gpc_s3_send(s, &r, &resp, err);
        }
        gpc_buf_free(&q);
        xmlDoc *x = rc ? NULL : gpc_s3_xml(&resp.body);
        if (!rc && !x)
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 ListObjectsV2 s3://%s/%s: the answer "
                          "is not XML", bucket, prefix ? prefix : "");
        gpc_http_response_free(&resp);
        token[0] = '\0';
        if (!rc) {
            xmlNode *root = xmlDocGetRootElement(x);
            for (xmlNode *c = gpc_xml_child(root, "Contents"); !rc && c; c = gpc_xml_next(c)) {
                if (*n == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    gpc_s3_object *m = realloc(*out, nc * sizeof(**out));
                    if (!m) {
                        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
                        break;
                    }
                    *out = m;
                    cap = nc;
                }
                gpc_s3_object *o = &(*out)[(*n)++];
                memset(o, 0, sizeof(*o));
                char sz[32];
                gpc_xml_text(c, "Key", o->key, sizeof(o->key));
                gpc_xml_text(c, "ETag", o->etag, sizeof(o->etag));
                o->size = strtoull(gpc_xml_text(c, "Size", sz, sizeof(sz)), NULL, 10);
            }
            char trunc[8];
            if (strcmp(gpc_xml_text(root, "IsTruncated", trunc, sizeof(trunc)), "true") == 0) {
                gpc_xml_text(root, "NextContinuationToken", token, sizeof(token));
                if (!token[0])
                    rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 ListObjectsV2 s3://%s: a "
                                  "truncated page without NextContinuationToken", bucket);
            }
        }
        xmlFreeDoc(x);
    } while (!rc && token[0]);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int gpc_s3_delete(gpc_s3 *s, const char *bucket, const char *const *keys, size_t n,
                  gpc_error *err)
{
    int rc = 0;
    for (size_t at = 0; !rc && at < n; at += GPC_S3_DELETE_BATCH) {
        size_t k = n - at < GPC_S3_DELETE_BATCH ? n - at : GPC_S3_DELETE_BATCH;
        gpc_buf b;
        gpc_buf_init(&b, 8u << 20);
        rc = gpc_buf_adds(&b, "<Delete xmlns=\"" GPC_S3_XMLNS "\"><Quiet>true</Quiet>", err);
        for (size_t i = 0; !rc && i < k; i++) {
            rc = gpc_buf_adds(&b, "<Object><Key>", err);
            if (!rc)
                rc = add_xml_text(&b, keys[at + i], err);
            if (!rc)
                rc = gpc_buf_adds(&b, "</Key></Object>", err);
        }
        if (!rc)
            rc = gpc_buf_adds(&b, "</Delete>", err);
        gpc_http_response resp;
        memset(&resp, 0, sizeof(resp));
        if (!rc) {
            const char *hdrs[] = {"Content-Type: application/xml"};
            gpc_s3_request r = {.op = "DeleteObjects", .method = "POST", .bucket = bucket,
                                .query = "delete", .headers = hdrs, .n_headers = 1,
                                .body = b.data, .body_len = b.len, .content_md5 = 1};
            rc = gpc_s3_send(s, &r, &resp, err);
        }
        gpc_buf_free(&b);
        xmlDoc *x = rc ? NULL : gpc_s3_xml(&resp.body);
        xmlNode *e = x ? gpc_xml_child(xmlDocGetRootElement(x), "Error") : NULL;
        if (e) {
            char key[1025], code[64], msg[256];
            gpc_xml_text(e, "Key", key, sizeof(key));
            gpc_xml_text(e, "Code", code, sizeof(code));
            gpc_xml_text(e, "Message", msg, sizeof(msg));
            rc = gpc_fail(err, gpc_s3_error_code(code, 0), "aws: s3 DeleteObjects s3://%s/%s: "
                          "%s: %s", bucket, key, code, msg);
            gpc_error_remote(err, (int)resp.status, code, resp.request_id, 0);
        }
        xmlFreeDoc(x);
        gpc_http_response_free(&resp);
    }
    return rc;
}
