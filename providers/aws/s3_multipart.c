/* s3_multipart.c - see s3.h: multipart upload with a resume manifest, and
 * the incremental directory syncs. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libxml/parser.h>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "gpuctl/util.h"
#include "gpuctl/xml.h"

#define MIB (1ull << 20)

/* The part size for a file of `size` bytes (aws.md 6.3). */
static uint64_t part_size_for(const gpc_s3 *s, uint64_t size)
{
    if (s->part_size)
        return s->part_size;
    uint64_t p = (size + GPC_S3_PARTS_MAX - 1) / GPC_S3_PARTS_MAX;
    if (p < GPC_S3_PART_DEFAULT)
        p = GPC_S3_PART_DEFAULT;
    return (p + MIB - 1) / MIB * MIB;
}

/* Read len bytes at off of fd into buf. */
static int read_at(int fd, void *buf, size_t len, uint64_t off, const char *path,
                   gpc_error *err)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        if (n == 0)
            return gpc_fail(err, GPC_ERR_IO, "%s: the file shrank during the upload", path);
        got += (size_t)n;
    }
    return 0;
}

/* ---- manifest -------------------------------------------------------------- */

typedef struct manifest {
    char bucket[64];
    char key[1025];
    uint64_t size;
    int64_t mtime_ns;
    char sha256[65];
    uint64_t part_size;
    char upload_id[1024];
} manifest;

static int manifest_path(const char *dir, const char *bucket, const char *key, char *out,
                         size_t size)
{
    char id[2200], hex[65];
    snprintf(id, sizeof(id), "%s/%s", bucket, key);
    gpc_sha256_hex(id, strlen(id), hex);
    return snprintf(out, size, "%s/s3-upload-%s.json", dir, hex) >= (int)size ? -1 : 0;
}

/* 1 when loaded, 0 when absent or unreadable (a broken manifest is only a
 * lost chance to resume). */
static int manifest_load(const char *path, manifest *m)
{
    memset(m, 0, sizeof(*m));
    char *text = NULL;
    size_t len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_read_file(path, 1u << 20, &text, &len, &e))
        return 0;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j)
        return 0;
    const char *b = gpc_json_str(j, "bucket"), *k = gpc_json_str(j, "key");
    const char *h = gpc_json_str(j, "sha256"), *u = gpc_json_str(j, "upload_id");
    const char *sz = gpc_json_str(j, "size"), *mt = gpc_json_str(j, "mtime_ns");
    const char *ps = gpc_json_str(j, "part_size");
    int ok = b && k && h && u && sz && mt && ps;
    if (ok) {
        snprintf(m->bucket, sizeof(m->bucket), "%s", b);
        snprintf(m->key, sizeof(m->key), "%s", k);
        snprintf(m->sha256, sizeof(m->sha256), "%s", h);
        snprintf(m->upload_id, sizeof(m->upload_id), "%s", u);
        m->size = strtoull(sz, NULL, 10);
        m->mtime_ns = strtoll(mt, NULL, 10);
        m->part_size = strtoull(ps, NULL, 10);
    }
    cJSON_Delete(j);
    return ok;
}

static int manifest_save(const char *path, const manifest *m, gpc_error *err)
{
    cJSON *j = cJSON_CreateObject();
    char n[3][32];
    snprintf(n[0], sizeof(n[0]), "%" PRIu64, m->size);
    snprintf(n[1], sizeof(n[1]), "%" PRId64, m->mtime_ns);
    snprintf(n[2], sizeof(n[2]), "%" PRIu64, m->part_size);
    int ok = j && cJSON_AddStringToObject(j, "bucket", m->bucket) &&
             cJSON_AddStringToObject(j, "key", m->key) &&
             cJSON_AddStringToObject(j, "size", n[0]) &&
             cJSON_AddStringToObject(j, "mtime_ns", n[1]) &&
             cJSON_AddStringToObject(j, "sha256", m->sha256) &&
             cJSON_AddStringToObject(j, "part_size", n[2]) &&
             cJSON_AddStringToObject(j, "upload_id", m->upload_id);
    char *text = ok ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int rc = gpc_write_file_atomic(path, text, strlen(text), 0600, err);
    free(text);
    return rc;
}

/* ---- the multipart calls ----------------------------------------------------- */

/* "uploadId=ID" (encoded) into q, with `extra` ("partNumber=N&") before it. */
static int upload_query(gpc_buf *q, const char *extra, const char *upload_id, gpc_error *err)
{
    gpc_buf_init(q, 4096);
    int rc = gpc_buf_adds(q, extra, err);
    if (!rc)
        rc = gpc_buf_adds(q, "uploadId=", err);
    if (!rc)
        rc = gpc_sigv4_uri_encode(upload_id, strlen(upload_id), 1, q, err);
    return rc;
}

static int create_upload(gpc_s3 *s, const char *bucket, const char *key, const char *sha256,
                         char *upload_id, size_t size, gpc_error *err)
{
    char meta[128];
    snprintf(meta, sizeof(meta), GPC_S3_META_SHA256 ": %s", sha256);
    const char *hdrs[] = {meta, "Content-Type: application/octet-stream"};
    gpc_s3_request r = {.op = "CreateMultipartUpload", .method = "POST", .bucket = bucket,
                        .key = key, .query = "uploads", .headers = hdrs, .n_headers = 2};
    gpc_http_response resp;
    int rc = gpc_s3_send(s, &r, &resp, err);
    xmlDoc *x = rc ? NULL : gpc_s3_xml(&resp.body);
    upload_id[0] = '\0';
    if (x)
        gpc_xml_text(xmlDocGetRootElement(x), "UploadId", upload_id, size);
    if (!rc && !upload_id[0])
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 CreateMultipartUpload s3://%s/%s: no "
                      "UploadId in the answer", bucket, key);
    xmlFreeDoc(x);
    gpc_http_response_free(&resp);
    return rc;
}

static void abort_upload(gpc_s3 *s, const char *bucket, const char *key, const char *id)
{
    gpc_buf q;
    gpc_error e;
    gpc_error_clear(&e);
    static const long gone[] = {404};
    if (!upload_query(&q, "", id, &e)) {
        gpc_s3_request r = {.op = "AbortMultipartUpload", .method = "DELETE", .bucket = bucket,
                            .key = key, .query = gpc_buf_str(&q), .accept = gone,
                            .n_accept = 1};
        gpc_http_response resp;
        gpc_s3_send(s, &r, &resp, &e);
        gpc_http_response_free(&resp);
    }
    gpc_buf_free(&q);
}

/* ListParts, every page: etags[i] / sizes[i] of part i+1 ("" when absent). */
static int list_parts(gpc_s3 *s, const char *bucket, const char *key, const char *id,
                      size_t nparts, char (*etags)[80], uint64_t *sizes, gpc_error *err)
{
    char marker[16] = "0";
    int rc = 0, more = 1;
    while (!rc && more) {
        gpc_buf q;
        char pre[64];
        snprintf(pre, sizeof(pre), "max-parts=1000&part-number-marker=%s&", marker);
        rc = upload_query(&q, pre, id, err);
        gpc_http_response resp;
        memset(&resp, 0, sizeof(resp));
        if (!rc) {
            gpc_s3_request r = {.op = "ListParts", .method = "GET", .bucket = bucket,
                                .key = key, .query = gpc_buf_str(&q)};
            rc = gpc_s3_send(s, &r, &resp, err);
        }
        gpc_buf_free(&q);
        xmlDoc *x = rc ? NULL : gpc_s3_xml(&resp.body);
        gpc_http_response_free(&resp);
        if (!rc && !x)
            return gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 ListParts s3://%s/%s: the answer is "
                            "not XML", bucket, key);
        if (rc)
            break;
        xmlNode *root = xmlDocGetRootElement(x);
        for (xmlNode *p = gpc_xml_child(root, "Part"); p; p = gpc_xml_next(p)) {
            char num[16], sz[32];
            unsigned long n = strtoul(gpc_xml_text(p, "PartNumber", num, sizeof(num)), NULL, 10);
            if (n < 1 || n > nparts)
                continue;
            gpc_xml_text(p, "ETag", etags[n - 1], 80);
            sizes[n - 1] = strtoull(gpc_xml_text(p, "Size", sz, sizeof(sz)), NULL, 10);
        }
        char t[8];
        more = strcmp(gpc_xml_text(root, "IsTruncated", t, sizeof(t)), "true") == 0;
        gpc_xml_text(root, "NextPartNumberMarker", marker, sizeof(marker));
        if (more && !marker[0])
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3 ListParts: a truncated page without "
                          "NextPartNumberMarker");
        xmlFreeDoc(x);
    }
    return rc;
}

/* One window of parts sent at once. */
typedef struct window {
    gpc_s3 *s;
    size_t n;
    gpc_s3_request r[64];
    gpc_s3_prepared p[64];
    gpc_http_request req[64];
    gpc_buf q[64];
    char *data[64];
    size_t part[64];          /* part index (0-based) */
} window;

static int sign_window(void *arg, const gpc_http_request *req, int attempt,
                       gpc_http_headers *extra, gpc_error *err)
{
    (void)attempt;
    window *w = arg;
    size_t i = (size_t)(req - w->req);
    if (req < w->req || i >= w->n)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: unknown part in a batch");
    return gpc_s3_sign(w->s, &w->p[i], "s3", w->s->region, extra, err);
}

static int retry_window(void *arg, const gpc_http_response *resp)
{
    (void)arg;
    return gpc_s3_retry_rule(resp);
}

/* Send the window's parts; etags of those that went. */
static int send_window(gpc_s3 *s, window *w, char (*etags)[80], uint64_t *sent,
                       gpc_error *err)
{
    gpc_http_response resps[64];
    int rcs[64];
    gpc_error errs[64];
    gpc_http_opts o;
    gpc_s3_http_opts(s, &o, NULL);
    o.before_attempt = sign_window;
    o.should_retry = retry_window;
    o.arg = w;
    for (size_t i = 0; i < w->n; i++)
        w->req[i] = w->p[i].req;
    s->requests += w->n;
    gpc_http_send_all(w->req, w->n, &o, (size_t)(s->parallel ? s->parallel : GPC_S3_PARALLEL),
                      resps, rcs, errs);
    int rc = 0;
    for (size_t i = 0; i < w->n; i++) {
        gpc_error fe;
        gpc_error_clear(&fe);
        int prc = gpc_s3_finish(&w->r[i], rcs[i], &errs[i], &resps[i], &fe);
        if (!prc && !gpc_http_header(&resps[i], "ETag", etags[w->part[i]], 80))
            prc = gpc_fail(&fe, GPC_ERR_PROVIDER, "aws: s3 UploadPart s3://%s/%s: no ETag in "
                           "the answer", w->r[i].bucket, w->r[i].key);
        if (!prc) {
            s->parts_sent++;
            *sent += w->r[i].body_len;
        } else if (!rc) {
            rc = gpc_error_wrap(err, &fe, "part %zu", w->part[i] + 1);
        }
        gpc_http_response_free(&resps[i]);
    }
    return rc;
}

static void window_clear(window *w)
{
    for (size_t i = 0; i < w->n; i++) {
        gpc_s3_prepared_free(&w->p[i]);
        gpc_buf_free(&w->q[i]);
        free(w->data[i]);
    }
    w->n = 0;
}

/* CompleteMultipartUpload; a 200 may carry an <Error> (aws.md 6.2). */
static int complete_upload(gpc_s3 *s, const char *bucket, const char *key, const char *id,
                           size_t nparts, char (*etags)[80], gpc_error *err)
{
    gpc_buf b, q;
    gpc_buf_init(&b, 1u << 20);
    int rc = gpc_buf_adds(&b, "<CompleteMultipartUpload xmlns=\"" GPC_S3_XMLNS "\">", err);
    for (size_t i = 0; !rc && i < nparts; i++)
        rc = gpc_buf_addf(&b, err, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
                          i + 1, etags[i]);
    if (!rc)
        rc = gpc_buf_adds(&b, "</CompleteMultipartUpload>", err);
    if (!rc)
        rc = upload_query(&q, "", id, err);
    else
        gpc_buf_init(&q, 16);
    for (int attempt = 0; !rc && attempt < 3; attempt++) {
        const char *hdrs[] = {"Content-Type: application/xml"};
        gpc_s3_request r = {.op = "CompleteMultipartUpload", .method = "POST",
                            .bucket = bucket, .key = key, .query = gpc_buf_str(&q),
                            .headers = hdrs, .n_headers = 1, .body = b.data,
                            .body_len = b.len};
        gpc_http_response resp;
        rc = gpc_s3_send(s, &r, &resp, err);
        gpc_s3_errdoc d;
        if (!rc)
            gpc_s3_error_fields(&resp.body, &d);
        if (!rc && d.code[0]) {
            int again = strcmp(d.code, "InternalError") == 0 || strcmp(d.code, "SlowDown") == 0 ||
                        strcmp(d.code, "ServiceUnavailable") == 0;
            if (!again || attempt == 2) {
                rc = gpc_fail(err, gpc_s3_error_code(d.code, 200), "aws: s3 "
                              "CompleteMultipartUpload s3://%s/%s: %s: %s (request id %s)",
                              bucket, key, d.code, d.message, d.request_id);
                gpc_error_remote(err, 200, d.code, d.request_id, again);
            }
            gpc_http_response_free(&resp);
            if (!rc)
                continue;
            break;
        }
        gpc_http_response_free(&resp);
        break;
    }
    gpc_buf_free(&b);
    gpc_buf_free(&q);
    return rc;
}

/* ---- upload a file ------------------------------------------------------------ */

static int put_small(gpc_s3 *s, const char *bucket, const char *key, const char *path,
                     uint64_t size, uint64_t *sent, gpc_error *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = gpc_read_file(path, (size_t)size + 1, &data, &len, err);
    if (!rc)
        rc = gpc_s3_put(s, bucket, key, data, len, err);
    if (!rc)
        *sent += len;
    free(data);
    return rc;
}

/* The object is already what the file holds (size and SHA-256). */
static int object_matches(gpc_s3 *s, const char *bucket, const char *key, uint64_t size,
                          const char *sha, gpc_error *err)
{
    gpc_s3_object o;
    gpc_error he;
    gpc_error_clear(&he);
    int rc = gpc_s3_head(s, bucket, key, &o, &he);
    if (rc == GPC_ERR_NOT_FOUND)
        return 0;
    if (rc) {
        gpc_error_wrap(err, &he, NULL);
        return -1;
    }
    return o.size == size && strcmp(o.sha256, sha) == 0;
}

static int upload_parts(gpc_s3 *s, const manifest *m, const char *path, int resume,
                        uint64_t *sent, int *gone, gpc_error *err)
{
    *gone = 0;
    size_t nparts = (size_t)((m->size + m->part_size - 1) / m->part_size);
    if (nparts == 0)
        nparts = 1;
    if (nparts > GPC_S3_PARTS_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "%s: %zu parts of %" PRIu64 " bytes is over "
                        "S3's 10000", path, nparts, m->part_size);
    char (*etags)[80] = calloc(nparts, 80);
    char (*listed)[80] = calloc(nparts, 80);
    uint64_t *sizes = calloc(nparts, sizeof(uint64_t));
    window *w = calloc(1, sizeof(*w));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = 0;
    if (!etags || !listed || !sizes || !w)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    else if (fd < 0)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    if (!rc && resume) {
        gpc_error le;
        gpc_error_clear(&le);
        rc = list_parts(s, m->bucket, m->key, m->upload_id, nparts, listed, sizes, &le);
        if (rc && strcmp(le.remote.code, "NoSuchUpload") == 0) {
            *gone = 1;
            rc = 0;
            goto out;
        }
        if (rc)
            gpc_error_wrap(err, &le, NULL);
    }
    if (w)
        w->s = s;
    size_t width = (size_t)(s->parallel ? s->parallel : GPC_S3_PARALLEL);
    if (width > 64)
        width = 64;
    for (size_t i = 0; !rc && i < nparts; i++) {
        uint64_t off = (uint64_t)i * m->part_size;
        size_t len = (size_t)(m->size - off < m->part_size ? m->size - off : m->part_size);
        char *data = malloc(len ? len : 1);
        if (!data) {
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            break;
        }
        rc = read_at(fd, data, len, off, path, err);
        char md5[33], want[40];
        if (!rc)
            rc = gpc_s3_md5_hex(data, len, md5, err);
        snprintf(want, sizeof(want), "\"%s\"", md5);
        if (!rc && listed[i][0] && sizes[i] == len && strcmp(listed[i], want) == 0) {
            memcpy(etags[i], listed[i], 80); /* already there: kept */
            free(data);
            continue;
        }
        if (rc) {
            free(data);
            break;
        }
        size_t k = w->n;
        w->data[k] = data;
        w->part[k] = i;
        char pre[48];
        snprintf(pre, sizeof(pre), "partNumber=%zu&", i + 1);
        rc = upload_query(&w->q[k], pre, m->upload_id, err);
        w->r[k] = (gpc_s3_request){.op = "UploadPart", .method = "PUT", .bucket = m->bucket,
                                   .key = m->key, .query = gpc_buf_str(&w->q[k]), .body = data,
                                   .body_len = len, .content_md5 = 1};
        w->n++;
        if (!rc)
            rc = gpc_s3_prepare(s, &w->r[k], &w->p[k], err);
        if (!rc && w->n == width)
            rc = send_window(s, w, etags, sent, err);
        if (rc || w->n == width)
            window_clear(w);
    }
    if (!rc && w && w->n)
        rc = send_window(s, w, etags, sent, err);
    if (w)
        window_clear(w);
    if (!rc)
        rc = complete_upload(s, m->bucket, m->key, m->upload_id, nparts, etags, err);
out:
    if (fd >= 0)
        close(fd);
    free(etags);
    free(listed);
    free(sizes);
    free(w);
    return rc;
}

int gpc_s3_upload_file(gpc_s3 *s, const char *bucket, const char *key, const char *path,
                       const char *state_dir, uint64_t *sent, gpc_error *err)
{
    uint64_t dummy = 0;
    if (!sent)
        sent = &dummy;
    *sent = 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return gpc_fail(err, GPC_ERR_IO, "%s: not a regular file", path);
    uint64_t size = (uint64_t)st.st_size;
    uint64_t part = part_size_for(s, size);
    if (part < GPC_S3_PART_MIN || part > GPC_S3_PART_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: part size %" PRIu64 " outside 5 MiB..5 GiB",
                        part);
    /* PutObject reads the file whole: never more than one part's worth */
    uint64_t threshold = s->multipart_threshold && s->multipart_threshold < part
                             ? s->multipart_threshold : part;
    if (size < threshold)
        return put_small(s, bucket, key, path, size, sent, err);
    manifest m;
    memset(&m, 0, sizeof(m));
    snprintf(m.bucket, sizeof(m.bucket), "%s", bucket);
    snprintf(m.key, sizeof(m.key), "%s", key);
    m.size = size;
    m.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    m.part_size = part;
    uint64_t hashed = 0;
    int rc = gpc_s3_file_sha256(path, m.sha256, &hashed, err);
    if (!rc && hashed != size)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: the file changed while it was read", path);
    char mpath[4096] = "";
    if (!rc && state_dir && *state_dir) {
        if (manifest_path(state_dir, bucket, key, mpath, sizeof(mpath)))
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s: path too long", state_dir);
        else
            rc = gpc_mkdir_p(state_dir, 0700, err);
    }
    if (rc)
        return rc;
    int resume = 0;
    manifest old;
    if (mpath[0] && manifest_load(mpath, &old)) {
        if (strcmp(old.bucket, bucket) == 0 && strcmp(old.key, key) == 0 &&
            old.size == m.size && old.mtime_ns == m.mtime_ns &&
            strcmp(old.sha256, m.sha256) == 0 && old.part_size == m.part_size) {
            snprintf(m.upload_id, sizeof(m.upload_id), "%s", old.upload_id);
            resume = 1;
            gpc_info(s->aws->log, "aws: s3: resuming the upload of %s to s3://%s/%s", path,
                     bucket, key);
        } else {
            abort_upload(s, old.bucket, old.key, old.upload_id);
            unlink(mpath);
        }
    }
    for (int round = 0; !rc && round < 2; round++) {
        if (!resume) {
            rc = create_upload(s, bucket, key, m.sha256, m.upload_id, sizeof(m.upload_id), err);
            if (!rc && mpath[0])
                rc = manifest_save(mpath, &m, err);
            if (rc)
                break;
        }
        int gone = 0;
        rc = upload_parts(s, &m, path, resume, sent, &gone, err);
        if (!rc && gone) {
            /* completed or aborted (aws.md 6.4 step 3) */
            int same = object_matches(s, bucket, key, size, m.sha256, err);
            if (same < 0) {
                rc = err->code;
                break;
            }
            if (same)
                break;
            resume = 0;
            continue;
        }
        break;
    }
    if (!rc && mpath[0])
        unlink(mpath);
    return rc;
}

/* ---- sync --------------------------------------------------------------------- */

typedef struct file_list {
    char **v;
    size_t n, cap;
} file_list;

static void file_list_free(file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Every regular file under root/rel, relative paths, in name order. */
static int walk(const char *root, const char *rel, file_list *out, gpc_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel);
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", dir, strerror(errno));
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (!rc && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char r[4096], full[8200];
            if (snprintf(r, sizeof(r), "%s%s%s", rel, rel[0] ? "/" : "", name) >=
                (int)sizeof(r))
                rc = gpc_fail(err, GPC_ERR_USAGE, "%s/%s: path too long", dir, name);
            snprintf(full, sizeof(full), "%s/%s", root, r);
            struct stat st;
            if (!rc && lstat(full, &st) != 0)
                rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", full, strerror(errno));
            else if (!rc && S_ISDIR(st.st_mode))
                rc = walk(root, r, out, err);
            else if (!rc && S_ISREG(st.st_mode)) {
                if (out->n == out->cap) {
                    size_t nc = out->cap ? out->cap * 2 : 64;
                    char **m = realloc(out->v, nc * sizeof(char *));
                    if (!m)
                        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
                    else {
                        out->v = m;
                        out->cap = nc;
                    }
                }
                if (!rc && !(out->v[out->n] = strdup(r)))
                    rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
                if (!rc)
                    out->n++;
            }
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(((const gpc_s3_object *)a)->key, ((const gpc_s3_object *)b)->key);
}

int gpc_s3_sync_up(gpc_s3 *s, const char *dir, const char *bucket, const char *prefix,
                   const char *state_dir, gpc_s3_sync_stats *st, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    const char *pre = prefix ? prefix : "";
    if (pre[0] && pre[strlen(pre) - 1] != '/')
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: prefix '%s' must end in '/'", pre);
    file_list files = {0};
    gpc_s3_object *objs = NULL;
    size_t nobj = 0;
    int rc = walk(dir, "", &files, err);
    if (!rc)
        rc = gpc_s3_list(s, bucket, pre, &objs, &nobj, err);
    if (!rc && nobj)
        qsort(objs, nobj, sizeof(*objs), cmp_key);
    for (size_t i = 0; !rc && i < files.n; i++) {
        char path[8200], sha[65];
        gpc_s3_object want;
        memset(&want, 0, sizeof(want));
        if (snprintf(want.key, sizeof(want.key), "%s%s", pre, files.v[i]) >=
            (int)sizeof(want.key)) {
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s/%s: key longer than 1024 bytes", dir,
                          files.v[i]);
            break;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, files.v[i]);
        uint64_t size = 0;
        rc = gpc_s3_file_sha256(path, sha, &size, err);
        if (rc)
            break;
        const gpc_s3_object *o = nobj ? bsearch(&want, objs, nobj, sizeof(*objs), cmp_key)
                                      : NULL;
        if (o && o->size == size) {
            int same = object_matches(s, bucket, want.key, size, sha, err);
            if (same < 0) {
                rc = err->code;
                break;
            }
            if (same) {
                st->files_skipped++;
                continue;
            }
        }
        uint64_t sent = 0;
        rc = gpc_s3_upload_file(s, bucket, want.key, path, state_dir, &sent, err);
        if (!rc) {
            st->files_sent++;
            st->bytes_sent += sent;
        }
    }
    free(objs);
    file_list_free(&files);
    return rc;
}

/* A key's rest that is safe as a relative path under the target. */
static int safe_rest(const char *rest)
{
    if (!rest[0] || rest[0] == '/')
        return 0;
    const char *p = rest;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += n;
        if (*p == '/')
            p++;
        if (!*p && p[-1] == '/')
            return 0;
    }
    return 1;
}

int gpc_s3_sync_down(gpc_s3 *s, const char *bucket, const char *prefix, const char *dir,
                     gpc_s3_sync_stats *st, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    const char *pre = prefix ? prefix : "";
    size_t pl = strlen(pre);
    gpc_s3_object *objs = NULL;
    size_t nobj = 0;
    int rc = gpc_s3_list(s, bucket, pre, &objs, &nobj, err);
    for (size_t i = 0; !rc && i < nobj; i++) {
        const char *k = objs[i].key;
        size_t kl = strlen(k);
        if (kl && k[kl - 1] == '/')
            continue;
        if (strncmp(k, pre, pl) != 0 || !safe_rest(k + pl))
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: s3: unsafe key %s under s3://%s/%s "
                          "(an absolute path or an empty, '.' or '..' segment)", k, bucket, pre);
    }
    for (size_t i = 0; !rc && i < nobj; i++) {
        const char *k = objs[i].key;
        size_t kl = strlen(k);
        if (kl && k[kl - 1] == '/')
            continue;
        char path[8200];
        if (snprintf(path, sizeof(path), "%s/%s", dir, k + pl) >= (int)sizeof(path)) {
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s/%s: path too long", dir, k + pl);
            break;
        }
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
            (uint64_t)sb.st_size == objs[i].size) {
            gpc_s3_object o;
            char sha[65];
            rc = gpc_s3_head(s, bucket, k, &o, err);
            if (!rc)
                rc = gpc_s3_file_sha256(path, sha, NULL, err);
            if (rc)
                break;
            if (o.sha256[0] && strcmp(o.sha256, sha) == 0) {
                st->files_skipped++;
                continue;
            }
        }
        uint64_t got = 0;
        rc = gpc_s3_get_file(s, bucket, k, path, &got, err);
        if (!rc) {
            st->files_sent++;
            st->bytes_sent += got;
        }
    }
    free(objs);
    return rc;
}
