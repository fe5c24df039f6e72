/*
 * imds.c - the EC2 instance metadata service (IMDSv2: a session token,
 * then GETs): the credentials of the instance's role, the last step of the
 * chain, and the region gpuctl check falls back on.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "aws/config_internal.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

#define IMDS_TOKEN_MAX 512        /* real tokens are ~60 bytes */
#define IMDS_BODY_MAX  (64u << 10)
#define STR_(x)        #x
#define STR(x)         STR_(x)

/* ---- IMDSv2 ------------------------------------------------------------- */

static const gpc_http_opts imds_http = {
    .timeout_s = GPC_AWS_IMDS_TIMEOUT_S,
    .connect_timeout_s = GPC_AWS_IMDS_TIMEOUT_S,
    .max_attempts = 1,
    .max_body = IMDS_BODY_MAX,
    .what = "EC2 instance metadata",
};

static int imds_disabled(void)
{
    return aws_is_true(aws_env("AWS_EC2_METADATA_DISABLED"));
}

/* The IMDS base URL, without a trailing '/'. */
static int imds_base(char *out, size_t size, gpc_error *err)
{
    const char *v = aws_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    const char *mode = aws_env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (v) {
        char shown[256];
        gpc_http_redact_url(v, shown, sizeof(shown));
        if (!aws_is_http_url(v) || strlen(v) >= size)
            return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT '%s' is not "
                            "an http:// URL", shown);
        /* IMDS takes no user:password@, and messages show this URL */
        const char *auth = strstr(v, "://") + 3;
        if (memchr(auth, '@', strcspn(auth, "/?#")))
            return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT '%s' must not "
                            "hold a user name or password", shown);
    } else if (mode && strcasecmp(mode, "ipv6") == 0) {
        v = GPC_AWS_IMDS_ENDPOINT_IPV6;
    } else if (!mode || strcasecmp(mode, "ipv4") == 0) {
        v = GPC_AWS_IMDS_ENDPOINT;
    } else {
        return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE '%.20s' is "
                        "neither IPv4 nor IPv6", mode);
    }
    size_t n = strlen(v);
    while (n > 0 && v[n - 1] == '/')
        n--;
    memcpy(out, v, n);
    out[n] = '\0';
    return 0;
}

static void response_wipe_free(gpc_http_response *resp)
{
    if (resp->body.data)
        OPENSSL_cleanse(resp->body.data, resp->body.cap);
    gpc_http_response_free(resp);
}

/*
 * One IMDS request with one header.  Returns the HTTP status of a 2xx reply
 * kept in *resp, 0 when nothing answered, the status of any other reply, or
 * -1 when a reply could not be taken (too large).  Failures are answers
 * here, so the caller's error is not touched.
 */
static long imds_send(const char *base, const char *method, const char *path,
                      const char *header, gpc_http_response *resp)
{
    char url[512];
    aws_set_label(url, sizeof(url), "%s%s", base, path);
    const char *headers[] = {header};
    gpc_http_request req = {.method = method, .url = url, .headers = headers, .n_headers = 1};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_http_send(&req, &imds_http, resp, &e);
    if (rc == 0)
        return resp->status;
    if (resp->status == 0 || (resp->status >= 200 && resp->status < 300))
        return resp->status ? -1 : 0;
    return resp->status;
}

/* The body of a 200 reply, blanks trimmed, first line only, in out. */
static int body_line(const gpc_http_response *resp, char *out, size_t size)
{
    const char *s = resp->body.data ? resp->body.data : "";
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= size)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* PUT /latest/api/token; fills hdr with the "X-aws-ec2-metadata-token: T"
 * header.  Returns the status as imds_send() (-1 for a bad token). */
static long imds_session(const char *base, char *hdr, size_t size)
{
    gpc_http_response resp;
    char token[IMDS_TOKEN_MAX];
    long st = imds_send(base, "PUT", "/latest/api/token",
                        "X-aws-ec2-metadata-token-ttl-seconds: " STR(GPC_AWS_IMDS_TOKEN_TTL_S),
                        &resp);
    if (st == 200 && !body_line(&resp, token, sizeof(token)))
        st = -1;
    if (st == 200)
        aws_set_label(hdr, size, "X-aws-ec2-metadata-token: %s", token);
    OPENSSL_cleanse(token, sizeof(token));
    response_wipe_free(&resp);
    return st;
}

/* An IAM role name, safe to put in a path: [A-Za-z0-9+=,.@_-]{1,64}. */
static int valid_role(const char *r)
{
    size_t n = strlen(r);
    return n > 0 && n <= 64 && strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789+=,.@_-") == n;
}

#define IMDS_ROLES "/latest/meta-data/iam/security-credentials/"

/* GET .../security-credentials/ROLE and fill the credentials from it. */
static int imds_role_creds(chain *c, const char *base, const char *hdr, const char *role)
{
    char path[160], source[sizeof(c->out->source)];
    aws_set_label(path, sizeof(path), IMDS_ROLES "%s", role);
    aws_set_label(source, sizeof(source), "EC2 instance role '%s' (IMDSv2)", role);
    gpc_http_response resp;
    long st = imds_send(base, "GET", path, hdr, &resp);
    cJSON *doc = st == 200 ? cJSON_ParseWithLength(resp.body.data, resp.body.len) : NULL;
    response_wipe_free(&resp);
    const char *code = aws_json_str(doc, "Code"), *exp_text = aws_json_str(doc, "Expiration");
    const char *akid = aws_json_str(doc, "AccessKeyId");
    const char *secret = aws_json_str(doc, "SecretAccessKey");
    const char *token = aws_json_str(doc, "Token");
    int64_t exp = 0;
    int rc;
    if (st != 200)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: cannot read the "
                      "credentials of instance role '%s' (%s %ld)", base, role,
                      st > 0 ? "HTTP" : "status", st);
    else if (!cJSON_IsObject(doc))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the credentials of "
                      "instance role '%s' are not a JSON object", base, role);
    else if (code && strcmp(code, "Success") != 0)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: instance role '%s' "
                      "has no credentials (Code '%.40s')", base, role, code);
    else if (!akid || !*akid || !secret || !*secret || !token || !*token || !exp_text)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the credentials of "
                      "instance role '%s' lack AccessKeyId, SecretAccessKey, Token or "
                      "Expiration", base, role);
    else if (!aws_parse_iso8601(exp_text, &exp))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: instance role '%s' "
                      "credentials have an Expiration that is not an ISO 8601 time", base, role);
    else {
        c->found = 1;
        rc = aws_creds_fill(c->out, akid, secret, token, exp, source, c->err);
    }
    aws_json_wipe(doc);
    cJSON_Delete(doc);
    return rc;
}

int aws_step_imds(chain *c)
{
    if (imds_disabled()) {
        aws_note_tried(c, "EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED)");
        return 0;
    }
    char base[256], hdr[IMDS_TOKEN_MAX + 40], role[128];
    int rc = imds_base(base, sizeof(base), c->err);
    if (rc)
        return rc;
    long st = imds_session(base, hdr, sizeof(hdr));
    if (st == 200) {
        gpc_http_response resp;
        st = imds_send(base, "GET", IMDS_ROLES, hdr, &resp);
        if (st == 200 && !body_line(&resp, role, sizeof(role)))
            st = 404; /* an empty list: no role */
        response_wipe_free(&resp);
        if (st == 200 && !valid_role(role))
            rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the instance "
                          "role name is not valid", base);
        else if (st == 200)
            rc = imds_role_creds(c, base, hdr, role);
        else if (st == 404)
            aws_note_tried(c, "EC2 instance metadata at %s (no instance role)", base);
        else if (st > 0)
            aws_note_tried(c, "EC2 instance metadata at %s (listing instance roles: HTTP %ld)",
                           base, st);
        else
            aws_note_tried(c, "EC2 instance metadata at %s (no answer listing instance roles)",
                           base);
    } else if (st == 0) {
        aws_note_tried(c, "EC2 instance metadata at %s (no reply)", base);
    } else if (st > 0) {
        aws_note_tried(c, "EC2 instance metadata at %s (token request: HTTP %ld)", base, st);
    } else {
        aws_note_tried(c, "EC2 instance metadata at %s (no usable token)", base);
    }
    OPENSSL_cleanse(hdr, sizeof(hdr));
    return rc;
}


int gpc_aws_imds_region(char *out, size_t size, gpc_error *err)
{
    if (size)
        out[0] = '\0';
    if (imds_disabled())
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "cannot ask EC2 instance metadata for the "
                        "region: disabled by AWS_EC2_METADATA_DISABLED");
    char base[256], hdr[IMDS_TOKEN_MAX + 40], region[64];
    int rc = imds_base(base, sizeof(base), err);
    if (rc)
        return rc;
    long st = imds_session(base, hdr, sizeof(hdr));
    if (st == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "no reply from EC2 instance metadata at %s "
                        "(not on EC2?)", base);
    if (st != 200)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "EC2 instance metadata at %s refused a token "
                        "(%s %ld)", base, st > 0 ? "HTTP" : "status", st);
    gpc_http_response resp;
    st = imds_send(base, "GET", "/latest/meta-data/placement/region", hdr, &resp);
    OPENSSL_cleanse(hdr, sizeof(hdr));
    int got = st == 200 && body_line(&resp, region, sizeof(region));
    gpc_http_response_free(&resp);
    if (st == 0 || st == 404)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "EC2 instance metadata at %s: no "
                        "placement/region (%s)", base, st ? "HTTP 404" : "no reply");
    if (st != 200)
        return gpc_fail(err, GPC_ERR_PROVIDER, "EC2 instance metadata at %s: GET "
                        "placement/region: %s %ld", base, st > 0 ? "HTTP" : "status", st);
    if (!got || !aws_valid_region(region) || !aws_fits(out, size, region))
        return gpc_fail(err, GPC_ERR_PROVIDER, "EC2 instance metadata at %s: placement/region "
                        "is not a region name", base);
    return 0;
}
