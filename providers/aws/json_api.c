/* json_api.c - see json_api.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "aws/json_api.h"
#include "gpuctl/clock.h"
#include "gpuctl/http.h"
#include "gpuctl/log.h"

#define JSON_MAX_ATTEMPTS 6 /* as EC2's (ec2.c) */

static const char *const request_id_headers[] = {"x-amzn-RequestId", "x-amz-request-id",
                                                 NULL};

/* ---- error codes -------------------------------------------------------- */

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *const auth_prefixes[] = {
    "AccessDenied", "UnrecognizedClient", "InvalidSignature", "IncompleteSignature",
    "MissingAuthenticationToken", "ExpiredToken", "InvalidClientTokenId", NULL,
};

gpc_code gpc_aws_json_error_code(const char *c)
{
    for (size_t i = 0; auth_prefixes[i]; i++)
        if (starts(c, auth_prefixes[i]))
            return GPC_ERR_AUTH;
    if (gpc_ec2_error_code(c) == GPC_ERR_AUTH)
        return GPC_ERR_AUTH;
    if (strcmp(c, "NoSuchResourceException") == 0)
        return GPC_ERR_NOT_FOUND;
    return GPC_ERR_PROVIDER;
}

int gpc_aws_json_code_is_throttle(const char *c)
{
    return starts(c, "Throttling") || gpc_ec2_code_is_throttle(c);
}

/* The code (after the last '#' of __type, else of the x-amzn-ErrorType
 * header up to its ':'), message and request id of an error reply; ""
 * for what it lacks. */
static void error_fields(const gpc_http_response *r, char *code, size_t cs, char *msg,
                         size_t ms)
{
    code[0] = msg[0] = '\0';
    cJSON *d = r->body.len ? cJSON_ParseWithLength(r->body.data, r->body.len) : NULL;
    if (cJSON_IsObject(d)) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "__type"));
        if (!t)
            t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "code"));
        if (t) {
            const char *h = strrchr(t, '#');
            snprintf(code, cs, "%s", h ? h + 1 : t);
        }
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "message"));
        if (!m)
            m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "Message"));
        if (m)
            snprintf(msg, ms, "%s", m);
    }
    cJSON_Delete(d);
    char h[256];
    if (!code[0] && r->status >= 400 && gpc_http_header(r, "x-amzn-ErrorType", h, sizeof(h))) {
        size_t n = strcspn(h, ":");
        if (n >= cs)
            n = cs - 1;
        memcpy(code, h, n);
        code[n] = '\0';
    }
}

static int gateway_retried(long st)
{
    return st == 429 || st == 502 || st == 503 || st == 504;
}

/* ---- one call ----------------------------------------------------------- */

typedef struct json_ctx {
    gpc_ec2 *e;
    const char *sign_region;
    const char *service;
    const char *target;
    const char *region;
} json_ctx;

static int sign_json(void *arg, const gpc_http_request *req, int attempt,
                     gpc_http_headers *extra, gpc_error *err)
{
    json_ctx *c = arg;
    (void)attempt;
    return gpc_ec2_sign(c->e, req, c->sign_region, c->service, GPC_AWS_JSON_CONTENT_TYPE,
                        c->target, extra, err);
}

/* What is worth another try: transport failures (every JSON call gpuctl
 * makes only reads), throttling codes, any 5xx, and a gateway's 429/502/
 * 503/504. */
static int retry_json(void *arg, const gpc_http_response *resp)
{
    (void)arg;
    if (resp->status == 0)
        return GPC_HTTP_DEFAULT;
    char code[96], msg[8];
    error_fields(resp, code, sizeof(code), msg, sizeof(msg));
    if (code[0] && gpc_aws_json_code_is_throttle(code))
        return GPC_HTTP_RETRY;
    return resp->status >= 500 || gateway_retried(resp->status) ? GPC_HTTP_RETRY
                                                                 : GPC_HTTP_STOP;
}

static void note_retry(void *arg, const gpc_http_request *req, const gpc_http_response *resp,
                       int attempt, long delay_ms)
{
    (void)req;
    const json_ctx *c = arg;
    char code[96], msg[8], why[128];
    code[0] = '\0';
    if (resp->status)
        error_fields(resp, code, sizeof(code), msg, sizeof(msg));
    if (code[0])
        snprintf(why, sizeof(why), "%s (HTTP %ld)", code, resp->status);
    else if (resp->status)
        snprintf(why, sizeof(why), "HTTP %ld", resp->status);
    else
        snprintf(why, sizeof(why), "no answer");
    gpc_info(c->e->log, "aws: %s (%s): %s; retrying in %.1f s (attempt %d of %d)", c->target,
             c->region, why, (double)delay_ms / 1000.0, attempt + 1, JSON_MAX_ATTEMPTS);
}

/* A clock-skew answer: re-sign with the server's time. */
static int is_skew(const char *code, const char *msg)
{
    return strcmp(code, "RequestExpired") == 0 ||
           (starts(code, "InvalidSignature") && starts(msg, "Signature expired"));
}

/* The IAM action of a target: "AWSPriceListService.GetProducts" ->
 * "pricing:GetProducts". */
static void iam_action(const char *service, const char *target, char *out, size_t size)
{
    const char *dot = strrchr(target, '.');
    snprintf(out, size, "%s:%s", service, dot ? dot + 1 : target);
}

static int finish(const json_ctx *c, const char *what, int hrc, const gpc_error *he,
                  const gpc_http_response *resp, cJSON **out, long *skew, gpc_error *err)
{
    *skew = 0;
    const gpc_remote *hr = &he->remote;
    int st = resp->status > 0 && resp->status <= 999 ? (int)resp->status : 0;
    if (hrc == 0) {
        *out = cJSON_ParseWithLength(resp->body.data, resp->body.len);
        if (cJSON_IsObject(*out))
            return 0;
        cJSON_Delete(*out);
        *out = NULL;
        int rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: the answer is not a JSON object "
                          "(HTTP %ld)", what, resp->status);
        gpc_error_remote(err, st, NULL, resp->request_id, 0);
        return rc;
    }
    if (hrc == GPC_ERR_INTERRUPTED || !resp->status)
        return gpc_error_wrap(err, he, NULL);
    char code[GPC_ERROR_CODE_MAX], msg[600];
    error_fields(resp, code, sizeof(code), msg, sizeof(msg));
    int rc;
    if (!code[0]) {
        char ctype[96];
        if (!gpc_http_header(resp, "Content-Type", ctype, sizeof(ctype)))
            snprintf(ctype, sizeof(ctype), "none");
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: HTTP %ld with no AWS error in the answer "
                      "(Content-Type %s)", what, resp->status, ctype);
        gpc_error_remote(err, st, NULL, resp->request_id, hr->set ? hr->retryable : 0);
        return rc;
    }
    if (is_skew(code, msg))
        *skew = gpc_ec2_clock_skew(resp);
    gpc_code gc = gpc_aws_json_error_code(code);
    char hint[224] = "";
    if (starts(code, "AccessDenied")) {
        char act[96];
        iam_action(c->service, c->target, act, sizeof(act));
        snprintf(hint, sizeof(hint), " (the credentials lack the IAM permission %s; "
                 "docs/providers/aws-iam-policy.json lists every action gpuctl needs)", act);
    } else if (gc == GPC_ERR_AUTH)
        snprintf(hint, sizeof(hint), " (check the credentials, their region and this "
                 "machine's clock)");
    const char *rid = resp->request_id;
    rc = gpc_fail(err, gc, "%s: %s: %s%s%s%s%s", what, code, msg, hint,
                  rid[0] ? " (request id " : "", rid, rid[0] ? ")" : "");
    gpc_error_remote(err, st, code, rid,
                     hr->set ? hr->retryable : gpc_aws_json_code_is_throttle(code));
    return rc;
}

static const char *signing_name(gpc_aws_service svc)
{
    switch (svc) {
    case GPC_AWS_PRICING:
        return "pricing";
    case GPC_AWS_SERVICE_QUOTAS:
        return "servicequotas";
    default:
        return NULL;
    }
}

int gpc_aws_json_call(gpc_ec2 *e, gpc_aws_service svc, const char *region, const char *target,
                      const cJSON *body, cJSON **out, gpc_error *err)
{
    *out = NULL;
    const char *service = signing_name(svc);
    if (!service)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: %s: not a JSON 1.1 service", target);
    char sign_region[64];
    char *url = NULL;
    int rc = gpc_aws_service_endpoint(&e->cfg, svc, region, &url, sign_region,
                                      sizeof(sign_region), err);
    if (rc)
        return rc;
    char *text = body ? cJSON_PrintUnformatted(body) : strdup("{}");
    char target_h[192];
    int tn = snprintf(target_h, sizeof(target_h), "X-Amz-Target: %s", target);
    if (!text)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    else if (tn < 0 || (size_t)tn >= sizeof(target_h))
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "aws: target '%s' too long", target);
    char what[160];
    snprintf(what, sizeof(what), "aws: %s (%s)", target, region);
    const char *hdrs[] = {"Content-Type: " GPC_AWS_JSON_CONTENT_TYPE, target_h};
    gpc_http_request req = {
        .method = "POST", .url = url, .headers = hdrs, .n_headers = 2,
        .body = text, .body_len = text ? strlen(text) : 0,
    };
    json_ctx c = {.e = e, .sign_region = sign_region, .service = service, .target = target,
                  .region = region};
    gpc_http_opts o = {
        .what = what, .client = e->http, .before_attempt = sign_json,
        .should_retry = retry_json, .on_retry = note_retry, .arg = &c,
        .max_attempts = JSON_MAX_ATTEMPTS, .request_id_headers = request_id_headers,
    };
    /* at most twice: once more, re-signed with AWS's time, after a clock
     * skew answer that tells how far off our clock is */
    for (int round = 0; !rc && round < 2; round++) {
        gpc_http_response resp;
        gpc_error he, fe;
        gpc_error_clear(&he);
        gpc_error_clear(&fe);
        e->calls++;
        gpc_debug(e->log, "aws: %s for %s", target, region);
        int hrc = gpc_http_send(&req, &o, &resp, &he);
        long skew = 0;
        rc = finish(&c, what, hrc, &he, &resp, out, &skew, &fe);
        gpc_http_response_free(&resp);
        if (rc && skew && round == 0) {
            e->clock_offset_s = skew;
            gpc_debug(e->log, "aws: clock off by %ld s; signing with the server's time", skew);
            rc = 0;
            continue;
        }
        if (rc)
            gpc_error_wrap(err, &fe, NULL);
        break;
    }
    free(text);
    free(url);
    return rc;
}
