/*
 * sigv4.c - see include/gpuctl/sigv4.h
 *
 * AWS Signature Version 4 (AWS General Reference, "Signature Version 4
 * signing process"; IAM User Guide, "Create a signed AWS API request"),
 * written as separate pure stages.  Hashing and HMAC are libcrypto's
 * (EVP_Digest, HMAC); nothing here is a hand-written hash.  Section numbers
 * in comments refer to the gpuctl AWS reference, aws.md section 1.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "aws/sigv4.h"
#include "gpuctl/util.h"

#define SHA256_LEN 32

/* ---- small helpers ------------------------------------------------------ */

static void to_hex(const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}


static unsigned char ascii_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

static int is_space_or_tab(char c)
{
    return c == ' ' || c == '\t';
}

static int has_cr_or_lf(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* UriEncode's unreserved set (aws.md 1.2): A-Z a-z 0-9 - _ . ~ */
static int is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
           c == '~';
}

/* Visible ASCII (0x21-0x7e) except the characters in `banned`; non-empty. */
static int is_visible_except(const char *s, const char *banned)
{
    if (!s || !*s)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr(banned, *p))
            return 0;
    return 1;
}

/* A header name or method: a non-empty run of visible ASCII, no ':'. */
static int is_token(const char *s)
{
    return is_visible_except(s, ":");
}

/* Byte-order comparison of two counted strings (memcmp is unsigned). */
static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return (an > bn) - (an < bn);
}

/* The same, ASCII case folded (header names are compared lower-cased). */
static int cmp_bytes_nocase(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = ascii_lower((unsigned char)a[i]);
        unsigned char cb = ascii_lower((unsigned char)b[i]);
        if (ca != cb)
            return ca < cb ? -1 : 1;
    }
    return (an > bn) - (an < bn);
}

static int check_date8(const char *date8, gpc_error *err)
{
    if (!date8 || strlen(date8) != 8)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: date must be YYYYMMDD");
    for (int i = 0; i < 8; i++)
        if (date8[i] < '0' || date8[i] > '9')
            return gpc_fail(err, GPC_ERR_USAGE, "sigv4: date must be YYYYMMDD");
    return 0;
}

/* Region and service go into the scope between '/'. */
static int check_scope_part(const char *s, const char *what, gpc_error *err)
{
    if (!s || !*s)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: %s missing", what);
    if (!is_visible_except(s, "/"))
        return gpc_fail(err, GPC_ERR_USAGE,
                        "sigv4: %s holds '/', whitespace or a control character",
                        what);
    return 0;
}

/* ---- libcrypto primitives ----------------------------------------------- */

int gpc_sigv4_sha256_hex(const void *data, size_t len, char hex[65],
                         gpc_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    hex[0] = '\0';
    if (!data) {
        if (len)
            return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no data to hash");
        data = "";
    }
    if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 ||
        md_len != SHA256_LEN)
        return gpc_fail(err, GPC_ERR_INTERNAL, "sigv4: SHA-256 failed (libcrypto)");
    to_hex(md, SHA256_LEN, hex);
    return 0;
}

int gpc_sigv4_hmac_sha256(const void *key, size_t key_len, const void *data,
                          size_t len, unsigned char mac[32], gpc_error *err)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int out_len = 0;
    if (key_len > INT_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: HMAC key too long");
    if ((!key && key_len) || (!data && len))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no HMAC key or data");
    if (!key)
        key = "";
    if (!data)
        data = "";
    int ok = HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &out_len) &&
             out_len == SHA256_LEN;
    if (ok)
        memcpy(mac, out, SHA256_LEN);
    else
        OPENSSL_cleanse(mac, SHA256_LEN);
    OPENSSL_cleanse(out, sizeof(out));
    if (!ok)
        return gpc_fail(err, GPC_ERR_INTERNAL, "sigv4: HMAC-SHA256 failed (libcrypto)");
    return 0;
}

/* ---- UriEncode (aws.md 1.2) --------------------------------------------- */

int gpc_sigv4_uri_encode(const char *s, size_t len, int encode_slash,
                         gpc_buf *out, gpc_error *err)
{
    static const char upper[] = "0123456789ABCDEF";
    size_t i = 0;
    while (i < len) {
        /* Copy the longest run that needs no escaping in one append. */
        size_t run = i;
        while (run < len && (is_unreserved((unsigned char)s[run]) ||
                             (!encode_slash && s[run] == '/')))
            run++;
        if (run > i) {
            int rc = gpc_buf_add(out, s + i, run - i, err);
            if (rc)
                return rc;
            i = run;
            continue;
        }
        unsigned char c = (unsigned char)s[i++];
        char esc[3] = {'%', upper[c >> 4], upper[c & 15]};
        int rc = gpc_buf_add(out, esc, sizeof(esc), err);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- canonical URI (aws.md 1.3) ----------------------------------------- */

typedef struct span {
    const char *p;
    size_t n;
} span;

/*
 * Non-S3: split on '/', drop "" and "." segments, let ".." drop the segment
 * before it (never above the root), encode each remaining segment and join
 * them with '/'.  A trailing '/' of the raw path is kept (botocore and
 * aws-sdk-rust do the same; "/a/b/.." gives "/a").
 */
static int normalized_path(const char *path, size_t len, gpc_buf *out,
                           gpc_error *err)
{
    size_t max_segs = 1;
    for (size_t i = 0; i < len; i++)
        max_segs += path[i] == '/';
    span *segs = calloc(max_segs, sizeof(*segs));
    if (!segs)
        return gpc_fail(err, GPC_ERR_NOMEM, "sigv4: out of memory");

    size_t n_segs = 0;
    size_t start = 0;
    while (start <= len) {
        const char *slash = memchr(path + start, '/', len - start);
        size_t end = slash ? (size_t)(slash - path) : len;
        const char *seg = path + start;
        size_t seg_len = end - start;
        if (seg_len == 0 || (seg_len == 1 && seg[0] == '.')) {
            /* "//" and "/./" add nothing */
        } else if (seg_len == 2 && seg[0] == '.' && seg[1] == '.') {
            if (n_segs)
                n_segs--;
        } else {
            segs[n_segs].p = seg;
            segs[n_segs].n = seg_len;
            n_segs++;
        }
        start = end + 1;
    }

    int rc = 0;
    for (size_t i = 0; i < n_segs && !rc; i++) {
        rc = gpc_buf_add(out, "/", 1, err);
        if (!rc)
            rc = gpc_sigv4_uri_encode(segs[i].p, segs[i].n, 1, out, err);
    }
    if (!rc && (n_segs == 0 || path[len - 1] == '/'))
        rc = gpc_buf_add(out, "/", 1, err);
    free(segs);
    return rc;
}

static int canonical_uri(const char *path, int s3, gpc_buf *out, gpc_error *err)
{
    if (!path || !*path)
        return gpc_buf_add(out, "/", 1, err);
    size_t len = strlen(path);
    if (!s3)
        return normalized_path(path, len, out, err);
    /* S3: "//", "." and ".." are part of the key; encode once, keep '/'. */
    int rc = 0;
    if (path[0] != '/')
        rc = gpc_buf_add(out, "/", 1, err);
    if (!rc)
        rc = gpc_sigv4_uri_encode(path, len, 0, out, err);
    return rc;
}

/* ---- canonical query string (aws.md 1.4) -------------------------------- */

typedef struct qparam {
    size_t name_off, name_len;   /* encoded name in the pool */
    size_t value_off, value_len; /* encoded value in the pool */
    const char *name, *value;    /* set once the pool stops moving */
} qparam;

static int cmp_qparam(const void *a, const void *b)
{
    const qparam *x = a, *y = b;
    int c = cmp_bytes(x->name, x->name_len, y->name, y->name_len);
    if (c)
        return c;
    return cmp_bytes(x->value, x->value_len, y->value, y->value_len);
}

/*
 * Percent-decode s[0..n) into `out` (replaced).  "%XY" with two hex digits
 * (either case) becomes one byte; any other '%' stays literal; '+' stays
 * '+' (RFC 3986 has no "+ means space" rule; that is form encoding).
 */
static int percent_decode(const char *s, size_t n, gpc_buf *out, gpc_error *err)
{
    gpc_buf_reset(out);
    size_t i = 0;
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        size_t stop = pct ? (size_t)(pct - s) : n;
        int rc = gpc_buf_add(out, s + i, stop - i, err);
        if (rc)
            return rc;
        i = stop;
        if (i >= n)
            break;
        int hi = i + 2 < n ? gpc_hex_value((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? gpc_hex_value((unsigned char)s[i + 2]) : -1;
        if (hi >= 0 && lo >= 0) {
            char byte = (char)(hi << 4 | lo);
            rc = gpc_buf_add(out, &byte, 1, err);
            i += 3;
        } else {
            rc = gpc_buf_add(out, "%", 1, err);
            i++;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Decode s[0..n), UriEncode it into the pool; report where it went. */
static int reencode(const char *s, size_t n, gpc_buf *scratch, gpc_buf *pool,
                    size_t *off, size_t *len, gpc_error *err)
{
    int rc = percent_decode(s, n, scratch, err);
    if (rc)
        return rc;
    *off = pool->len;
    rc = gpc_sigv4_uri_encode(scratch->data, scratch->len, 1, pool, err);
    *len = pool->len - *off;
    return rc;
}

static int canonical_query(const char *query, gpc_buf *out, gpc_error *err)
{
    if (!query || !*query)
        return 0;
    size_t qlen = strlen(query);
    size_t max_params = 1;
    for (size_t i = 0; i < qlen; i++)
        max_params += query[i] == '&';
    qparam *params = calloc(max_params, sizeof(*params));
    if (!params)
        return gpc_fail(err, GPC_ERR_NOMEM, "sigv4: out of memory");

    /* Scratch space is bounded by the caller's limit on the output. */
    gpc_buf pool, scratch;
    gpc_buf_init(&pool, out->max);
    gpc_buf_init(&scratch, out->max);

    int rc = 0;
    size_t n_params = 0;
    size_t start = 0;
    while (!rc && start < qlen) {
        const char *amp = memchr(query + start, '&', qlen - start);
        size_t end = amp ? (size_t)(amp - query) : qlen;
        const char *pair = query + start;
        size_t pair_len = end - start;
        start = end + 1;
        if (pair_len == 0)
            continue; /* "a=1&&b=2", a trailing '&' */
        const char *eq = memchr(pair, '=', pair_len);
        size_t name_len = eq ? (size_t)(eq - pair) : pair_len;
        const char *value = eq ? eq + 1 : pair + pair_len;
        size_t value_len = pair_len - name_len - (eq ? 1 : 0);
        qparam *p = &params[n_params++];
        rc = reencode(pair, name_len, &scratch, &pool, &p->name_off, &p->name_len,
                      err);
        if (!rc)
            rc = reencode(value, value_len, &scratch, &pool, &p->value_off,
                          &p->value_len, err);
    }

    if (!rc && n_params) {
        /* pool.data is NULL when every name and value is empty */
        const char *base = pool.data ? pool.data : "";
        for (size_t i = 0; i < n_params; i++) {
            params[i].name = base + params[i].name_off;
            params[i].value = base + params[i].value_off;
        }
        qsort(params, n_params, sizeof(*params), cmp_qparam);
    }
    for (size_t i = 0; i < n_params && !rc; i++) {
        if (i)
            rc = gpc_buf_add(out, "&", 1, err);
        if (!rc)
            rc = gpc_buf_add(out, params[i].name, params[i].name_len, err);
        if (!rc)
            rc = gpc_buf_add(out, "=", 1, err);
        if (!rc)
            rc = gpc_buf_add(out, params[i].value, params[i].value_len, err);
    }
    gpc_buf_free(&scratch);
    gpc_buf_free(&pool);
    free(params);
    return rc;
}

/* ---- canonical headers (aws.md 1.5) ------------------------------------- */

typedef struct hdr_ref {
    const char *name;
    size_t name_len;
    const char *value;
    size_t index; /* position in the input: keeps repeated names in order */
} hdr_ref;

static int cmp_hdr_ref(const void *a, const void *b)
{
    const hdr_ref *x = a, *y = b;
    int c = cmp_bytes_nocase(x->name, x->name_len, y->name, y->name_len);
    if (c)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* Append the name lower-cased. */
static int add_lower(gpc_buf *out, const char *s, size_t n, gpc_error *err)
{
    size_t at = out->len;
    int rc = gpc_buf_add(out, s, n, err);
    if (rc)
        return rc;
    for (size_t i = at; i < out->len; i++)
        out->data[i] = (char)ascii_lower((unsigned char)out->data[i]);
    return 0;
}

/* Append the value trimmed, each inner run of spaces/tabs made one space. */
static int add_trimmed(gpc_buf *out, const char *v, gpc_error *err)
{
    const char *end = v + strlen(v);
    while (v < end && is_space_or_tab(*v))
        v++;
    while (end > v && is_space_or_tab(end[-1]))
        end--;
    while (v < end) {
        const char *run = v;
        while (run < end && !is_space_or_tab(*run))
            run++;
        int rc = gpc_buf_add(out, v, (size_t)(run - v), err);
        if (rc)
            return rc;
        if (run == end)
            break;
        rc = gpc_buf_add(out, " ", 1, err);
        if (rc)
            return rc;
        v = run;
        while (v < end && is_space_or_tab(*v))
            v++;
    }
    return 0;
}

static int check_headers(const gpc_sigv4_header *h, size_t n, gpc_error *err)
{
    if (n && !h)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: %zu headers but no array", n);
    for (size_t i = 0; i < n; i++) {
        /* A bad name is not echoed: it could be anything. */
        if (!is_token(h[i].name))
            return gpc_fail(err, GPC_ERR_USAGE,
                            "sigv4: header %zu has an empty or invalid name", i + 1);
        if (!h[i].value)
            return gpc_fail(err, GPC_ERR_USAGE, "sigv4: header %s has no value",
                            h[i].name);
        if (has_cr_or_lf(h[i].value))
            return gpc_fail(err, GPC_ERR_USAGE,
                            "sigv4: value of header %s contains CR or LF", h[i].name);
    }
    return 0;
}

/*
 * Append the CanonicalHeaders lines ("name:value\n" each) to `out` and the
 * SignedHeaders list to `signed_headers`.  Headers are already checked.
 */
static int canonical_headers(const gpc_sigv4_header *h, size_t n, gpc_buf *out,
                             gpc_buf *signed_headers, gpc_error *err)
{
    if (n == 0)
        return 0;
    hdr_ref *refs = calloc(n, sizeof(*refs));
    if (!refs)
        return gpc_fail(err, GPC_ERR_NOMEM, "sigv4: out of memory");
    for (size_t i = 0; i < n; i++) {
        refs[i].name = h[i].name;
        refs[i].name_len = strlen(h[i].name);
        refs[i].value = h[i].value;
        refs[i].index = i;
    }
    qsort(refs, n, sizeof(*refs), cmp_hdr_ref);

    int rc = 0;
    size_t i = 0;
    while (i < n && !rc) {
        size_t j = i + 1;
        while (j < n && cmp_bytes_nocase(refs[i].name, refs[i].name_len,
                                         refs[j].name, refs[j].name_len) == 0)
            j++;
        if (i)
            rc = gpc_buf_add(signed_headers, ";", 1, err);
        if (!rc)
            rc = add_lower(signed_headers, refs[i].name, refs[i].name_len, err);
        if (!rc)
            rc = add_lower(out, refs[i].name, refs[i].name_len, err);
        if (!rc)
            rc = gpc_buf_add(out, ":", 1, err);
        for (size_t k = i; k < j && !rc; k++) {
            if (k > i)
                rc = gpc_buf_add(out, ",", 1, err);
            if (!rc)
                rc = add_trimmed(out, refs[k].value, err);
        }
        if (!rc)
            rc = gpc_buf_add(out, "\n", 1, err);
        i = j;
    }
    free(refs);
    return rc;
}

/* ---- stage 1: canonical request (aws.md 1.1 step 2) --------------------- */

int gpc_sigv4_canonical_request(const gpc_sigv4_input *in, gpc_buf *creq,
                                gpc_buf *signed_headers, gpc_error *err)
{
    if (!in || !creq || !signed_headers)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no request or output buffer");
    if (!in->method || !*in->method)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: request method missing");
    if (!is_token(in->method))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: invalid request method");
    if (in->body_len && !in->body)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: body_len %zu but no body",
                        in->body_len);
    if (in->payload_hash && (!*in->payload_hash || has_cr_or_lf(in->payload_hash)))
        return gpc_fail(err, GPC_ERR_USAGE,
                        "sigv4: payload hash is empty or contains CR or LF");
    int rc = check_headers(in->headers, in->n_headers, err);
    if (rc)
        return rc;

    char body_hash[65];
    const char *payload = in->payload_hash;
    if (!payload) {
        rc = gpc_sigv4_sha256_hex(in->body, in->body_len, body_hash, err);
        if (rc)
            return rc;
        payload = body_hash;
    }

    gpc_buf_reset(creq);
    gpc_buf_reset(signed_headers);
    rc = gpc_buf_adds(creq, in->method, err);
    if (!rc)
        rc = gpc_buf_add(creq, "\n", 1, err);
    if (!rc)
        rc = canonical_uri(in->path, in->s3, creq, err);
    if (!rc)
        rc = gpc_buf_add(creq, "\n", 1, err);
    if (!rc)
        rc = canonical_query(in->query, creq, err);
    if (!rc)
        rc = gpc_buf_add(creq, "\n", 1, err);
    if (!rc)
        rc = canonical_headers(in->headers, in->n_headers, creq, signed_headers, err);
    if (!rc)
        rc = gpc_buf_add(creq, "\n", 1, err);
    if (!rc)
        rc = gpc_buf_add(creq, signed_headers->data, signed_headers->len, err);
    if (!rc)
        rc = gpc_buf_add(creq, "\n", 1, err);
    if (!rc)
        rc = gpc_buf_adds(creq, payload, err);
    return rc;
}

/* ---- scope and stage 2: string to sign (aws.md 1.1 steps 3-4) ----------- */

int gpc_sigv4_scope(const char *date8, const char *region, const char *service,
                    char *out, size_t size, gpc_error *err)
{
    if (out && size)
        out[0] = '\0';
    int rc = check_date8(date8, err);
    if (!rc)
        rc = check_scope_part(region, "region", err);
    if (!rc)
        rc = check_scope_part(service, "service", err);
    if (rc)
        return rc;
    if (!out || !size)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no room for the scope");
    int n = snprintf(out, size, "%s/%s/%s/aws4_request", date8, region, service);
    if (n < 0 || (size_t)n >= size) {
        out[0] = '\0';
        return gpc_fail(err, GPC_ERR_NOMEM,
                        "sigv4: credential scope longer than %zu bytes", size - 1);
    }
    return 0;
}

static int check_amz_date(const char *d, gpc_error *err)
{
    int ok = d && strlen(d) == 16 && d[8] == 'T' && d[15] == 'Z';
    for (int i = 0; ok && i < 15; i++)
        if (i != 8 && (d[i] < '0' || d[i] > '9'))
            ok = 0;
    if (!ok)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: x-amz-date must be YYYYMMDDTHHMMSSZ");
    return 0;
}

int gpc_sigv4_string_to_sign(const char *amz_date, const char *scope,
                             const char *creq, size_t creq_len, gpc_buf *out,
                             gpc_error *err)
{
    int rc = check_amz_date(amz_date, err);
    if (rc)
        return rc;
    if (!scope || !*scope || has_cr_or_lf(scope))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: credential scope missing or invalid");
    if (!out)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no output buffer");
    char creq_hash[65];
    rc = gpc_sigv4_sha256_hex(creq, creq_len, creq_hash, err);
    if (rc)
        return rc;
    gpc_buf_reset(out);
    return gpc_buf_addf(out, err, "%s\n%s\n%s\n%s", GPC_SIGV4_ALGORITHM, amz_date,
                        scope, creq_hash);
}

/* ---- stage 3: signing key (aws.md 1.1 step 5) --------------------------- */

int gpc_sigv4_signing_key(const char *secret, const char *date8,
                          const char *region, const char *service,
                          unsigned char key[32], gpc_error *err)
{
    memset(key, 0, SHA256_LEN);
    if (!secret || !*secret)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: AWS secret access key missing");
    size_t secret_len = strlen(secret);
    if (secret_len > GPC_SIGV4_SECRET_MAX)
        return gpc_fail(err, GPC_ERR_USAGE,
                        "sigv4: AWS secret access key longer than %d bytes",
                        GPC_SIGV4_SECRET_MAX);
    int rc = check_date8(date8, err);
    if (!rc)
        rc = check_scope_part(region, "region", err);
    if (!rc)
        rc = check_scope_part(service, "service", err);
    if (rc)
        return rc;

    unsigned char k_secret[4 + GPC_SIGV4_SECRET_MAX];
    unsigned char k_a[SHA256_LEN], k_b[SHA256_LEN];
    memcpy(k_secret, "AWS4", 4);
    memcpy(k_secret + 4, secret, secret_len);

    rc = gpc_sigv4_hmac_sha256(k_secret, 4 + secret_len, date8, 8, k_a, err);
    if (!rc) /* kRegion */
        rc = gpc_sigv4_hmac_sha256(k_a, SHA256_LEN, region, strlen(region), k_b, err);
    if (!rc) /* kService */
        rc = gpc_sigv4_hmac_sha256(k_b, SHA256_LEN, service, strlen(service), k_a,
                                   err);
    if (!rc) /* kSigning */
        rc = gpc_sigv4_hmac_sha256(k_a, SHA256_LEN, "aws4_request", 12, key, err);

    OPENSSL_cleanse(k_secret, sizeof(k_secret));
    OPENSSL_cleanse(k_a, sizeof(k_a));
    OPENSSL_cleanse(k_b, sizeof(k_b));
    if (rc)
        OPENSSL_cleanse(key, SHA256_LEN);
    return rc;
}

/* ---- stage 4: signature (aws.md 1.1 step 6) ----------------------------- */

int gpc_sigv4_signature(const unsigned char key[32], const char *sts,
                        size_t sts_len, char hex[65], gpc_error *err)
{
    unsigned char mac[SHA256_LEN];
    hex[0] = '\0';
    int rc = gpc_sigv4_hmac_sha256(key, SHA256_LEN, sts, sts_len, mac, err);
    if (!rc)
        to_hex(mac, SHA256_LEN, hex);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc;
}

/* ---- stage 5: Authorization value (aws.md 1.1 step 7) ------------------- */

int gpc_sigv4_authorization(const char *access_key_id, const char *scope,
                            const char *signed_headers,
                            const char *signature_hex, gpc_buf *out,
                            gpc_error *err)
{
    if (!access_key_id || !*access_key_id)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: AWS access key id missing");
    /* The AKID is not echoed either: a secret pasted into the wrong field
     * must not end up in a message. */
    if (!is_visible_except(access_key_id, "/,"))
        return gpc_fail(err, GPC_ERR_USAGE,
                        "sigv4: AWS access key id holds '/', ',', whitespace or "
                        "a non-ASCII byte");
    if (!scope || !*scope || has_cr_or_lf(scope))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: credential scope missing or invalid");
    if (!signed_headers || !*signed_headers || has_cr_or_lf(signed_headers))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: SignedHeaders missing or invalid");
    if (!signature_hex || strlen(signature_hex) != 64 ||
        strspn(signature_hex, "0123456789abcdef") != 64)
        return gpc_fail(err, GPC_ERR_USAGE,
                        "sigv4: signature must be 64 lower-case hex digits");
    if (!out)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no output buffer");
    gpc_buf_reset(out);
    return gpc_buf_addf(out, err, "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                        GPC_SIGV4_ALGORITHM, access_key_id, scope, signed_headers,
                        signature_hex);
}

/* ---- time --------------------------------------------------------------- */

void gpc_sigv4_amz_date(time_t t, char out[17])
{
    struct tm tm;
    out[0] = '\0';
    if (!gmtime_r(&t, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
        return;
    int n = snprintf(out, 17, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (n != 16)
        out[0] = '\0';
}

/* ---- all stages (aws.md 1.1, 1.6) --------------------------------------- */

/* Headers the signer adds itself; the caller must not pass them. */
static int check_reserved_headers(const gpc_sigv4_header *h, size_t n,
                                  gpc_error *err)
{
    static const char *const reserved[] = {"x-amz-date", "x-amz-security-token"};
    for (size_t i = 0; h && i < n; i++) {
        if (!h[i].name)
            continue; /* reported by the canonical request */
        for (size_t r = 0; r < sizeof(reserved) / sizeof(*reserved); r++)
            if (strcasecmp(h[i].name, reserved[r]) == 0)
                return gpc_fail(err, GPC_ERR_USAGE,
                                "sigv4: header %s is added by the signer; do not pass it",
                                reserved[r]);
    }
    return 0;
}

int gpc_sigv4_sign(const gpc_sigv4_input *in, const gpc_sigv4_creds *creds,
                   const char *region, const char *service, time_t now,
                   gpc_sigv4_result *out, gpc_error *err)
{
    if (out)
        memset(out, 0, sizeof(*out));
    if (!in || !out)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: no request or result");
    if (!creds || !creds->access_key_id || !*creds->access_key_id)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: AWS access key id missing");
    if (!creds->secret_access_key || !*creds->secret_access_key)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: AWS secret access key missing");
    const char *token = creds->session_token;
    if (token && !*token)
        token = NULL;
    if (token && has_cr_or_lf(token))
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: session token contains CR or LF");
    if (in->n_headers && !in->headers)
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: %zu headers but no array",
                        in->n_headers);
    int rc = check_reserved_headers(in->headers, in->n_headers, err);
    if (rc)
        return rc;

    char amz_date[17];
    gpc_sigv4_amz_date(now, amz_date);
    if (!amz_date[0])
        return gpc_fail(err, GPC_ERR_USAGE, "sigv4: time %lld is out of range",
                        (long long)now);
    char date8[9];
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    char scope[GPC_SIGV4_SCOPE_SIZE];
    rc = gpc_sigv4_scope(date8, region, service, scope, sizeof(scope), err);
    if (rc)
        return rc;

    /* in->headers + x-amz-date [+ x-amz-security-token] */
    if (in->n_headers > SIZE_MAX / sizeof(gpc_sigv4_header) - 2)
        return gpc_fail(err, GPC_ERR_NOMEM, "sigv4: too many headers");
    gpc_sigv4_header *headers = malloc((in->n_headers + 2) * sizeof(*headers));
    if (!headers)
        return gpc_fail(err, GPC_ERR_NOMEM, "sigv4: out of memory");
    size_t n = in->n_headers;
    if (n)
        memcpy(headers, in->headers, n * sizeof(*headers));
    headers[n++] = (gpc_sigv4_header){"x-amz-date", amz_date};
    if (token)
        headers[n++] = (gpc_sigv4_header){"x-amz-security-token", token};
    gpc_sigv4_input signed_in = *in;
    signed_in.headers = headers;
    signed_in.n_headers = n;

    gpc_buf creq, signed_headers, sts, authz;
    gpc_buf_init(&creq, GPC_SIGV4_CREQ_MAX);
    gpc_buf_init(&signed_headers, GPC_SIGV4_CREQ_MAX);
    gpc_buf_init(&sts, GPC_BUF_LINE_MAX);
    gpc_buf_init(&authz, sizeof(out->authorization) - 1);
    unsigned char key[SHA256_LEN];
    char signature[65] = "";

    rc = gpc_sigv4_canonical_request(&signed_in, &creq, &signed_headers, err);
    if (!rc)
        rc = gpc_sigv4_string_to_sign(amz_date, scope, creq.data, creq.len, &sts, err);
    if (!rc)
        rc = gpc_sigv4_signing_key(creds->secret_access_key, date8, region, service,
                                   key, err);
    if (!rc)
        rc = gpc_sigv4_signature(key, sts.data, sts.len, signature, err);
    if (!rc)
        rc = gpc_sigv4_authorization(creds->access_key_id, scope,
                                     signed_headers.data, signature, &authz, err);
    if (!rc) {
        memcpy(out->amz_date, amz_date, sizeof(out->amz_date));
        memcpy(out->authorization, authz.data, authz.len + 1);
    }

    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(signature, sizeof(signature));
    if (authz.data)
        OPENSSL_cleanse(authz.data, authz.cap);
    gpc_buf_free(&authz);
    gpc_buf_free(&sts);
    gpc_buf_free(&signed_headers);
    gpc_buf_free(&creq);
    free(headers);
    return rc;
}
