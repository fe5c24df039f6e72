/* s3.c - see s3.h: the signed request, addressing, errors, bucket and
 * single-object operations. */
#define _XOPEN_SOURCE 700 /* strptime */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "aws/sigv4.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"
#include "gpuctl/xml.h"

#define S3_MAX_ATTEMPTS 5
#define S3_LIST_BODY_MAX (4u << 20)

static const char *const request_id_headers[] = {"x-amz-request-id", "x-amzn-RequestId",
                                                 NULL};

/* ---- names and addresses ------------------------------------------------ */

int gpc_s3_bucket_name_ok(const char *b)
{
    size_t n = b ? strlen(b) : 0;
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return 0;
        if (!alnum && (i == 0 || i == n - 1))
            return 0;
        if (c == '.' && (b[i + 1] == '.' || b[i - 1] == '-' || b[i + 1] == '-'))
            return 0;
    }
    return 1;
}

int gpc_s3_open(gpc_s3 *s, gpc_ec2 *aws, const char *region, gpc_error *err)
{
    memset(s, 0, sizeof(*s));
    s->aws = aws;
    if (!region || !*region || strlen(region) >= sizeof(s->region))
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: no region for the bucket");
    snprintf(s->region, sizeof(s->region), "%s", region);
    s->override = aws->cfg.svc_endpoint[GPC_AWS_S3] != NULL;
    return gpc_aws_service_endpoint(&aws->cfg, GPC_AWS_S3, region, &s->endpoint, NULL, 0, err);
}

void gpc_s3_close(gpc_s3 *s)
{
    free(s->endpoint);
    s->endpoint = NULL;
}

/* Move the session to `region` (a bucket found elsewhere). */
static int s3_set_region(gpc_s3 *s, const char *region, gpc_error *err)
{
    char *url = NULL;
    int rc = gpc_aws_service_endpoint(&s->aws->cfg, GPC_AWS_S3, region, &url, NULL, 0, err);
    if (rc)
        return rc;
    free(s->endpoint);
    s->endpoint = url;
    snprintf(s->region, sizeof(s->region), "%s", region);
    return 0;
}

/* Virtual-hosted style: a default endpoint and a name without dots. */
static int virtual_hosted(const gpc_s3 *s, const char *bucket)
{
    return !s->override && !strchr(bucket, '.');
}

int gpc_s3_url(const gpc_s3 *s, const char *bucket, const char *key, const char *query,
               char **url, gpc_error *err)
{
    *url = NULL;
    if (!gpc_s3_bucket_name_ok(bucket))
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: '%s' is not a valid bucket name "
                        "(3-63 lower-case letters, digits, '.' and '-')", bucket ? bucket : "");
    for (const char *k = key; k && *k;) {
        size_t n = strcspn(k, "/");
        if ((n == 1 && k[0] == '.') || (n == 2 && k[0] == '.' && k[1] == '.'))
            return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: key '%s' has a '.' or '..' segment, "
                            "which gpuctl does not send", key);
        k += n + (k[n] == '/');
    }
    const char *ep = s->endpoint;
    const char *sep = strstr(ep, "://");
    if (!sep)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3 endpoint '%s' is not an http(s) URL", ep);
    gpc_buf b;
    gpc_buf_init(&b, 8192);
    int rc;
    size_t eplen = strlen(ep);
    while (eplen > (size_t)(sep + 3 - ep) && ep[eplen - 1] == '/')
        eplen--;
    if (virtual_hosted(s, bucket))
        rc = gpc_buf_addf(&b, err, "%.*s%s.%.*s", (int)(sep + 3 - ep), ep, bucket,
                          (int)(eplen - (size_t)(sep + 3 - ep)), sep + 3);
    else
        rc = gpc_buf_addf(&b, err, "%.*s/%s", (int)eplen, ep, bucket);
    if (!rc)
        rc = gpc_buf_adds(&b, "/", err);
    if (!rc && key && *key)
        rc = gpc_sigv4_uri_encode(key, strlen(key), 0, &b, err);
    if (!rc && query && *query)
        rc = gpc_buf_addf(&b, err, "?%s", query);
    if (!rc)
        *url = gpc_buf_take(&b);
    gpc_buf_free(&b);
    return rc;
}

/* The raw (not encoded) path the signer canonicalises for BUCKET/KEY: the
 * endpoint's own path, then "/BUCKET" in path style, then "/KEY". */
static char *raw_path(const gpc_s3 *s, const char *bucket, const char *key)
{
    const char *p = strstr(s->endpoint, "://");
    p = p ? p + 3 : s->endpoint;
    p += strcspn(p, "/?#");
    size_t plen = strcspn(p, "?#");
    while (plen && p[plen - 1] == '/')
        plen--;
    gpc_buf b;
    gpc_error e;
    gpc_buf_init(&b, 8192);
    gpc_error_clear(&e);
    int rc = gpc_buf_addf(&b, &e, "%.*s", (int)plen, p);
    if (!rc && !virtual_hosted(s, bucket))
        rc = gpc_buf_addf(&b, &e, "/%s", bucket);
    if (!rc)
        rc = gpc_buf_addf(&b, &e, "/%s", key ? key : "");
    char *out = rc ? NULL : gpc_buf_take(&b);
    gpc_buf_free(&b);
    return out;
}

/* host[:port] of a URL as libcurl sends it in Host: (default port left out). */
static int url_host(const char *url, char *host, size_t hs, gpc_error *err)
{
    char path[2]; /* not wanted here: gpc_aws_split_url cuts it short */
    return gpc_aws_split_url(url, host, hs, path, sizeof(path), err);
}

/* ---- payload headers ------------------------------------------------------ */

int gpc_s3_md5_base64(const void *data, size_t len, char out[25], gpc_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data ? data : "", len, md, &mdlen, EVP_md5(), NULL) || mdlen != 16)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: MD5 failed");
    if (EVP_EncodeBlock((unsigned char *)out, md, 16) != 24)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: base64 failed");
    return 0;
}

int gpc_s3_md5_hex(const void *data, size_t len, char out[33], gpc_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data ? data : "", len, md, &mdlen, EVP_md5(), NULL) || mdlen != 16)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: s3: MD5 failed");
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int gpc_s3_payload_headers(const void *body, size_t len, int has_body, int https,
                           int content_md5, char hdr[2][160], gpc_error *err)
{
    int n = 0;
    if (has_body && https) {
        snprintf(hdr[n++], 160, "x-amz-content-sha256: %s", GPC_SIGV4_UNSIGNED_PAYLOAD);
    } else {
        char hex[65];
        if (gpc_sigv4_sha256_hex(body, len, hex, err))
            return -1;
        snprintf(hdr[n++], 160, "x-amz-content-sha256: %s", hex);
    }
    if (has_body && (https || content_md5)) {
        char md5[25];
        if (gpc_s3_md5_base64(body, len, md5, err))
            return -1;
        snprintf(hdr[n++], 160, "Content-MD5: %s", md5);
    }
    return n;
}

/* ---- one prepared request ------------------------------------------------- */

void gpc_s3_prepared_free(gpc_s3_prepared *p)
{
    free(p->url);
    free(p->path);
    free(p->hdrs);
    free(p->sig);
    free(p->store);
    memset(p, 0, sizeof(*p));
}

int gpc_s3_prepare(gpc_s3 *s, const gpc_s3_request *r, gpc_s3_prepared *p, gpc_error *err)
{
    memset(p, 0, sizeof(*p));
    p->r = r;
    int rc = gpc_s3_url(s, r->bucket, r->key, r->query, &p->url, err);
    if (!rc)
        rc = url_host(p->url, p->host, sizeof(p->host), err);
    if (!rc && !(p->path = raw_path(s, r->bucket, r->key)))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (rc)
        return rc;
    int https = strncasecmp(p->url, "https:", 6) == 0;
    int has_body = r->body != NULL || strcmp(r->method, "PUT") == 0 ||
                   strcmp(r->method, "POST") == 0;
    int np = gpc_s3_payload_headers(r->body, r->body_len, has_body, https,
                                    r->content_md5, p->payload, err);
    if (np < 0)
        return GPC_ERR_INTERNAL;
    size_t n = r->n_headers + (size_t)np;
    p->hdrs = calloc(n + 1, sizeof(char *));
    p->sig = calloc(n + 1, sizeof(gpc_sigv4_header));
    size_t total = 0;
    for (size_t i = 0; i < r->n_headers; i++)
        total += strlen(r->headers[i]) + 1;
    for (int i = 0; i < np; i++)
        total += strlen(p->payload[i]) + 1;
    p->store = malloc(total + 1);
    if (!p->hdrs || !p->sig || !p->store)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    char *w = p->store;
    p->sig[0] = (gpc_sigv4_header){"Host", p->host};
    for (size_t i = 0; i < n; i++) {
        const char *line = i < r->n_headers ? r->headers[i] : p->payload[i - r->n_headers];
        p->hdrs[i] = line;
        size_t l = strlen(line);
        memcpy(w, line, l + 1);
        char *colon = strchr(w, ':');
        if (!colon)
            return gpc_fail(err, GPC_ERR_USAGE, "aws: s3: header without ':'");
        *colon = '\0';
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        p->sig[i + 1] = (gpc_sigv4_header){w, v};
        w += l + 1;
    }
    p->n_hdrs = n;
    p->n_sig = n + 1;
    p->req = (gpc_http_request){
        .method = r->method, .url = p->url, .headers = p->hdrs, .n_headers = n,
        .body = r->body, .body_len = r->body_len,
    };
    return 0;
}

/* The credentials for a batch of attempts (refreshed when near expiry). */
int gpc_s3_sign(gpc_s3 *s, const gpc_s3_prepared *p, const char *service,
                const char *region, gpc_http_headers *extra, gpc_error *err)
{
    gpc_ec2 *e = s->aws;
    int rc = gpc_ec2_credentials(e, err);
    if (rc)
        return rc;
    const char *q = strchr(p->url, '?');
    const char *payload = NULL;
    for (size_t i = 1; i < p->n_sig; i++)
        if (strcasecmp(p->sig[i].name, "x-amz-content-sha256") == 0)
            payload = p->sig[i].value;
    gpc_sigv4_input in = {
        .method = p->req.method, .path = p->path, .query = q ? q + 1 : NULL,
        .headers = p->sig, .n_headers = p->n_sig, .body = p->req.body,
        .body_len = p->req.body_len, .payload_hash = payload, .s3 = 1,
    };
    gpc_sigv4_creds cr = {
        .access_key_id = e->creds.access_key_id,
        .secret_access_key = e->creds.secret_access_key,
        .session_token = e->creds.session_token,
    };
    gpc_sigv4_result sig;
    rc = gpc_sigv4_sign(&in, &cr, region, service, gpc_now() + s->clock_offset_s, &sig, err);
    if (!rc)
        rc = gpc_http_headers_add(extra, "X-Amz-Date", sig.amz_date, err);
    if (!rc && e->creds.session_token && *e->creds.session_token)
        rc = gpc_http_headers_add(extra, "X-Amz-Security-Token", e->creds.session_token, err);
    if (!rc)
        rc = gpc_http_headers_add(extra, "Authorization", sig.authorization, err);
    OPENSSL_cleanse(&sig, sizeof(sig));
    return rc;
}

/* ---- errors ---------------------------------------------------------------- */

void gpc_s3_error_fields(const gpc_buf *body, gpc_s3_errdoc *d)
{
    memset(d, 0, sizeof(*d));
    if (!body->len)
        return;
    xmlDoc *x = xmlReadMemory(body->data, (int)body->len, "error.xml", NULL,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!x)
        return;
    xmlNode *root = xmlDocGetRootElement(x);
    if (root && strcmp((const char *)root->name, "Error") == 0) {
        gpc_xml_text(root, "Code", d->code, sizeof(d->code));
        gpc_xml_text(root, "Message", d->message, sizeof(d->message));
        gpc_xml_text(root, "RequestId", d->request_id, sizeof(d->request_id));
        gpc_xml_text(root, "Region", d->region, sizeof(d->region));
    } else if (root && strcmp((const char *)root->name, "ErrorResponse") == 0) { /* STS */
        gpc_xml_text(root, "Error/Code", d->code, sizeof(d->code));
        gpc_xml_text(root, "Error/Message", d->message, sizeof(d->message));
        gpc_xml_text(root, "RequestId", d->request_id, sizeof(d->request_id));
    }
    xmlFreeDoc(x);
}

static int in_list(const char *c, const char *const *l)
{
    for (size_t i = 0; l[i]; i++)
        if (strcmp(c, l[i]) == 0)
            return 1;
    return 0;
}

static const char *const retry_codes[] = {
    "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling",
    "ThrottlingException", "RequestLimitExceeded", NULL,
};
static const char *const auth_codes[] = {
    "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "ExpiredToken",
    "InvalidToken", "RequestTimeTooSkewed", "AllAccessDisabled", "AccountProblem",
    "InvalidClientTokenId", NULL,
};
static const char *const missing_codes[] = {"NoSuchBucket", "NoSuchKey", "NoSuchUpload", NULL};

int gpc_s3_retry_rule(const gpc_http_response *resp)
{
    if (resp->status == 0)
        return GPC_HTTP_DEFAULT;
    gpc_s3_errdoc d;
    gpc_s3_error_fields(&resp->body, &d);
    if (d.code[0] && in_list(d.code, retry_codes))
        return GPC_HTTP_RETRY;
    return resp->status >= 500 ? GPC_HTTP_RETRY : GPC_HTTP_STOP;
}

gpc_code gpc_s3_error_code(const char *code, long status)
{
    if (code && *code) {
        if (in_list(code, auth_codes))
            return GPC_ERR_AUTH;
        if (in_list(code, missing_codes))
            return GPC_ERR_NOT_FOUND;
        return GPC_ERR_PROVIDER;
    }
    if (status == 404)
        return GPC_ERR_NOT_FOUND;
    if (status == 403)
        return GPC_ERR_AUTH;
    return GPC_ERR_PROVIDER;
}

int gpc_s3_finish(const gpc_s3_request *r, int hrc, const gpc_error *he,
                  const gpc_http_response *resp, gpc_error *err)
{
    if (hrc == 0)
        return 0;
    if (hrc == GPC_ERR_INTERRUPTED || hrc == GPC_ERR_NOMEM || hrc == GPC_ERR_INTERNAL ||
        hrc == GPC_ERR_USAGE || !resp->status)
        return gpc_error_wrap(err, he, NULL);
    gpc_s3_errdoc d;
    gpc_s3_error_fields(&resp->body, &d);
    if (!d.code[0] && resp->status == 404)
        snprintf(d.code, sizeof(d.code), "%s", r->key && *r->key ? "NoSuchKey" : "NoSuchBucket");
    if (!d.code[0] && resp->status == 403)
        snprintf(d.code, sizeof(d.code), "AccessDenied");
    const char *rid = d.request_id[0] ? d.request_id : resp->request_id;
    gpc_code gc = gpc_s3_error_code(d.code, resp->status);
    const char *hint = "";
    if (strcmp(d.code, "AccessDenied") == 0)
        hint = " (the credentials lack an s3: permission for this; "
               "docs/providers/aws-iam-policy.json lists every action gpuctl needs)";
    int rc;
    if (d.code[0])
        rc = gpc_fail(err, gc, "aws: s3 %s s3://%s/%s: %s: %s%s%s%s%s", r->op, r->bucket,
                      r->key ? r->key : "", d.code, d.message[0] ? d.message : "(no message)",
                      hint, rid[0] ? " (request id " : "", rid, rid[0] ? ")" : "");
    else
        rc = gpc_fail(err, gc, "aws: s3 %s s3://%s/%s: HTTP %ld%s", r->op, r->bucket,
                      r->key ? r->key : "", resp->status,
                      he->remote.retryable ? " (retries ran out)" : "");
    gpc_error_remote(err, (int)resp->status, d.code, rid,
                     he->remote.set ? he->remote.retryable : 0);
    return rc;
}

/* Seconds S3's clock is ahead of ours, from a reply's Date header. */
static long skew_from(const gpc_http_response *r)
{
    char date[64];
    if (!gpc_http_header(r, "Date", date, sizeof(date)))
        return 0;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!strptime(date, "%a, %d %b %Y %H:%M:%S GMT", &tm))
        return 0;
    return (long)((int64_t)timegm(&tm) - gpc_now());
}

/* ---- sending -------------------------------------------------------------- */

typedef struct one_ctx {
    gpc_s3 *s;
    gpc_s3_prepared *p;
} one_ctx;

static int sign_one(void *arg, const gpc_http_request *req, int attempt,
                    gpc_http_headers *extra, gpc_error *err)
{
    (void)req;
    (void)attempt;
    one_ctx *c = arg;
    return gpc_s3_sign(c->s, c->p, "s3", c->s->region, extra, err);
}

static int retry_one(void *arg, const gpc_http_response *resp)
{
    (void)arg;
    return gpc_s3_retry_rule(resp);
}

static void note_retry(void *arg, const gpc_http_request *req, const gpc_http_response *resp,
                       int attempt, long delay_ms)
{
    (void)req;
    const one_ctx *c = arg;
    gpc_s3_errdoc d;
    gpc_s3_error_fields(&resp->body, &d);
    gpc_info(c->s->aws->log, "aws: s3 %s s3://%s/%s: %s (HTTP %ld); retrying in %.1f s "
             "(attempt %d)", c->p->r->op, c->p->r->bucket, c->p->r->key ? c->p->r->key : "",
             d.code[0] ? d.code : resp->status ? "error" : "no answer", resp->status,
             (double)delay_ms / 1000.0, attempt + 1);
}

void gpc_s3_http_opts(gpc_s3 *s, gpc_http_opts *o, const gpc_s3_request *r)
{
    memset(o, 0, sizeof(*o));
    o->what = "aws: s3";
    o->client = s->aws->http;
    o->max_attempts = s->max_attempts ? s->max_attempts : S3_MAX_ATTEMPTS;
    o->backoff_base_ms = s->backoff_base_ms;
    o->request_id_headers = request_id_headers;
    o->max_body = S3_LIST_BODY_MAX + GPC_S3_GET_CHUNK;
    if (r) {
        o->accept = r->accept;
        o->n_accept = r->n_accept;
    }
}

int gpc_s3_send(gpc_s3 *s, const gpc_s3_request *r, gpc_http_response *resp, gpc_error *err)
{
    memset(resp, 0, sizeof(*resp));
    int rc = 0;
    /* at most three rounds: one more after a wrong region, one more after
     * a clock skew */
    for (int round = 0; round < 3; round++) {
        gpc_s3_prepared p;
        rc = gpc_s3_prepare(s, r, &p, err);
        if (rc) {
            gpc_s3_prepared_free(&p);
            return rc;
        }
        one_ctx c = {.s = s, .p = &p};
        gpc_http_opts o;
        gpc_s3_http_opts(s, &o, r);
        o.before_attempt = sign_one;
        o.should_retry = retry_one;
        o.on_retry = note_retry;
        o.arg = &c;
        gpc_error he;
        gpc_error_clear(&he);
        if (round)
            gpc_http_response_free(resp);
        s->requests++;
        gpc_debug(s->aws->log, "aws: s3 %s s3://%s/%s", r->op, r->bucket, r->key ? r->key : "");
        int hrc = gpc_http_send(&p.req, &o, resp, &he);
        gpc_s3_prepared_free(&p);
        if (hrc && resp->status) {
            gpc_s3_errdoc d;
            gpc_s3_error_fields(&resp->body, &d);
            char where[64] = "";
            if (!gpc_http_header(resp, "x-amz-bucket-region", where, sizeof(where)) ||
                strcmp(where, s->region) == 0)
                snprintf(where, sizeof(where), "%s", d.region);
            int wrong_region = (strcmp(d.code, "AuthorizationHeaderMalformed") == 0 ||
                                strcmp(d.code, "PermanentRedirect") == 0 ||
                                resp->status == 301) &&
                               where[0] && strcmp(where, s->region) != 0;
            if (wrong_region && round < 2) {
                gpc_debug(s->aws->log, "aws: s3: bucket %s is in %s, not %s", r->bucket, where,
                          s->region);
                rc = s3_set_region(s, where, err);
                if (rc)
                    return rc;
                continue;
            }
            if (strcmp(d.code, "RequestTimeTooSkewed") == 0 && round < 2) {
                long skew = skew_from(resp);
                if (skew && skew != s->clock_offset_s) {
                    s->clock_offset_s = skew;
                    gpc_debug(s->aws->log, "aws: s3: clock off by %ld s; signing with S3's time",
                              skew);
                    continue;
                }
            }
        }
        rc = gpc_s3_finish(r, hrc, &he, resp, err);
        break;
    }
    return rc;
}

/* ---- STS: the account id --------------------------------------------------- */

typedef struct sts_ctx {
    gpc_s3 *s;
    gpc_s3_prepared *p;
    const char *region;
} sts_ctx;

static int sign_sts(void *arg, const gpc_http_request *req, int attempt,
                    gpc_http_headers *extra, gpc_error *err)
{
    (void)req;
    (void)attempt;
    sts_ctx *c = arg;
    return gpc_s3_sign(c->s, c->p, "sts", c->region, extra, err);
}

int gpc_s3_account_id(gpc_s3 *s, char out[13], gpc_error *err)
{
    out[0] = '\0';
    char *url = NULL, region[64];
    int rc = gpc_aws_service_endpoint(&s->aws->cfg, GPC_AWS_STS, s->region, &url, region,
                                      sizeof(region), err);
    if (rc)
        return rc;
    static const char body[] = "Action=GetCallerIdentity&Version=2011-06-15";
    static const char ctype[] = "Content-Type: application/x-www-form-urlencoded; charset=utf-8";
    gpc_s3_prepared p;
    memset(&p, 0, sizeof(p));
    gpc_sigv4_header sig[3];
    char host[256], hash[65];
    rc = url_host(url, host, sizeof(host), err);
    if (!rc)
        rc = gpc_sigv4_sha256_hex(body, sizeof(body) - 1, hash, err);
    if (!rc) {
        sig[0] = (gpc_sigv4_header){"Host", host};
        sig[1] = (gpc_sigv4_header){"Content-Type",
                                    "application/x-www-form-urlencoded; charset=utf-8"};
        sig[2] = (gpc_sigv4_header){"x-amz-content-sha256", hash};
        p.url = url;
        p.sig = sig;
        p.n_sig = 3;
        const char *path = strstr(url, "://");
        path = path ? path + 3 + strcspn(path + 3, "/?#") : "/";
        char pathbuf[512];
        snprintf(pathbuf, sizeof(pathbuf), "%.*s", (int)strcspn(path, "?#"), path);
        if (!pathbuf[0])
            snprintf(pathbuf, sizeof(pathbuf), "/");
        p.path = pathbuf;
        char shdr[100];
        snprintf(shdr, sizeof(shdr), "x-amz-content-sha256: %s", hash);
        const char *all[] = {ctype, shdr};
        p.req = (gpc_http_request){.method = "POST", .url = url, .headers = all,
                                   .n_headers = 2, .body = body, .body_len = sizeof(body) - 1};
        sts_ctx c = {.s = s, .p = &p, .region = region};
        gpc_http_opts o;
        gpc_s3_http_opts(s, &o, NULL);
        o.what = "aws: sts GetCallerIdentity";
        o.before_attempt = sign_sts;
        o.arg = &c;
        gpc_http_response resp;
        gpc_error he;
        gpc_error_clear(&he);
        s->requests++;
        int hrc = gpc_http_send(&p.req, &o, &resp, &he);
        if (hrc) {
            gpc_s3_errdoc d;
            gpc_s3_error_fields(&resp.body, &d);
            if (d.code[0] && resp.status) {
                rc = gpc_fail(err, gpc_ec2_error_code(d.code), "aws: sts GetCallerIdentity: "
                              "%s: %s", d.code, d.message);
                gpc_error_remote(err, (int)resp.status, d.code,
                                 d.request_id[0] ? d.request_id : resp.request_id, 0);
            } else {
                rc = gpc_error_wrap(err, &he, NULL);
            }
        } else {
            xmlDoc *x = xmlReadMemory(resp.body.data, (int)resp.body.len, "sts.xml", NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR |
                                          XML_PARSE_NOWARNING);
            char acct[32] = "";
            if (x)
                gpc_xml_text(xmlDocGetRootElement(x), "GetCallerIdentityResult/Account", acct,
                             sizeof(acct));
            xmlFreeDoc(x);
            size_t n = strspn(acct, "0123456789");
            if (n != 12 || acct[12])
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: sts GetCallerIdentity: the answer "
                              "holds no 12-digit account id");
            else
                memcpy(out, acct, 13);
        }
        gpc_http_response_free(&resp);
    }
    free(url);
    return rc;
}

void gpc_s3_default_bucket(const char *account, const char *region, char out[64])
{
    snprintf(out, 64, "gpuctl-%s-%s", account, region);
}
