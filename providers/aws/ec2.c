/* ec2.c - see ec2.h */
#define _XOPEN_SOURCE 700 /* strptime */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libxml/parser.h>
#include <openssl/crypto.h>

#include "aws/ec2.h"
#include "aws/sigv4.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

#define EC2_CONTENT_TYPE "application/x-www-form-urlencoded; charset=utf-8"
#define EC2_BODY_MAX (1u << 20) /* UserData is at most 16 KiB before base64 */
#define EC2_MAX_ATTEMPTS 6      /* aws.md 3.3: more than the SDK's 3 for provisioning */

/* Where AWS puts the request id in a reply's headers (EC2's error
 * document has it too, as <RequestID>). */
static const char *const request_id_headers[] = {"x-amzn-RequestId", "x-amz-request-id",
                                                 NULL};

/* ---- error codes (aws.md section 3.2) --------------------------------- */

static int in_list(const char *code, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(code, list[i]) == 0)
            return 1;
    return 0;
}

static const char *const auth_codes[] = {
    "AuthFailure", "SignatureDoesNotMatch", "IncompleteSignature", "InvalidClientTokenId",
    "MissingAuthenticationToken", "UnauthorizedOperation", "OptInRequired", "Blocked",
    "PendingVerification", "ExpiredToken", "RequestExpired", "UnrecognizedClientException",
    NULL,
};
static const char *const capacity_codes[] = {
    "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "InsufficientCapacityOnHost", "Unsupported",
    NULL,
};
static const char *const quota_codes[] = {
    "InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded",
    "ResourceLimitExceeded", "PlacementGroupLimitExceeded", "SecurityGroupLimitExceeded",
    "KeyPairLimitExceeded", "AddressLimitExceeded", NULL,
};
/* The SDKs' "standard" retry mode throttling codes (aws.md section 3.3). */
static const char *const throttle_codes[] = {
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException",
    "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
    "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
    "EC2ThrottledException", "RequestTimeout", "RequestTimeoutException", "InternalError",
    "InternalFailure", "ServiceUnavailable", "Unavailable", NULL,
};

gpc_code gpc_ec2_error_code(const char *c)
{
    if (in_list(c, auth_codes))
        return GPC_ERR_AUTH;
    if (in_list(c, capacity_codes))
        return GPC_ERR_CAPACITY;
    if (in_list(c, quota_codes))
        return GPC_ERR_QUOTA;
    if (strcmp(c, "SpotMaxPriceTooLow") == 0)
        return GPC_ERR_BUDGET;
    return GPC_ERR_PROVIDER;
}

int gpc_ec2_code_is_throttle(const char *c)
{
    return in_list(c, throttle_codes);
}

/* ---- parameters -------------------------------------------------------- */

void gpc_ec2_params_init(gpc_ec2_params *p)
{
    gpc_buf_init(&p->body, EC2_BODY_MAX);
    p->failed = 0;
}

void gpc_ec2_params_free(gpc_ec2_params *p)
{
    gpc_buf_free(&p->body);
}

static void add_pair(gpc_buf *b, const char *name, const char *value, int *failed)
{
    gpc_error e;
    gpc_error_clear(&e);
    if (*failed)
        return;
    if (b->len && gpc_buf_adds(b, "&", &e))
        *failed = 1;
    if (!*failed && gpc_sigv4_uri_encode(name, strlen(name), 1, b, &e))
        *failed = 1;
    if (!*failed && gpc_buf_adds(b, "=", &e))
        *failed = 1;
    if (!*failed && gpc_sigv4_uri_encode(value, strlen(value), 1, b, &e))
        *failed = 1;
}

void gpc_ec2_param(gpc_ec2_params *p, const char *value, const char *name_fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, name_fmt);
    int n = vsnprintf(name, sizeof(name), name_fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(name)) {
        p->failed = 1;
        return;
    }
    add_pair(&p->body, name, value ? value : "", &p->failed);
}

void gpc_ec2_filter(gpc_ec2_params *p, unsigned n, const char *name,
                    const char *const *values, size_t k)
{
    gpc_ec2_param(p, name, "Filter.%u.Name", n);
    for (size_t i = 0; i < k; i++)
        gpc_ec2_param(p, values[i], "Filter.%u.Value.%zu", n, i + 1);
}

/* ---- session ----------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

int gpc_ec2_open(gpc_ec2 *e, const gpc_aws_options *opts, const gpc_log *log, gpc_error *err)
{
    memset(e, 0, sizeof(*e));
    e->log = log;
    const gpc_aws_options none = {0};
    const gpc_aws_options *o = opts ? opts : &none;
    const char *in[] = {o->profile, o->region, o->endpoint,
                        o->profile_from, o->region_from, o->endpoint_from};
    const char **out[] = {&e->opts.profile, &e->opts.region, &e->opts.endpoint,
                          &e->opts.profile_from, &e->opts.region_from, &e->opts.endpoint_from};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        if ((*out[i] = dup_or_null(in[i])) == NULL && in[i] && *in[i])
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int rc = gpc_aws_config_load(&e->opts, &e->cfg, err);
    if (!rc)
        rc = gpc_http_client_new(&e->http, err);
    return rc;
}

void gpc_ec2_close(gpc_ec2 *e)
{
    if (e->have_creds)
        gpc_aws_creds_free(&e->creds);
    gpc_aws_config_free(&e->cfg);
    gpc_http_client_free(e->http);
    free((char *)e->opts.profile);
    free((char *)e->opts.region);
    free((char *)e->opts.endpoint);
    free((char *)e->opts.profile_from);
    free((char *)e->opts.region_from);
    free((char *)e->opts.endpoint_from);
    memset(e, 0, sizeof(*e));
}

int gpc_ec2_credentials(gpc_ec2 *e, gpc_error *err)
{
    /* refresh 5 minutes before they expire (aws.md 4.4), but not more than
     * once a minute: a credential_process that hands out short-lived keys
     * (or prompts for MFA) must not run before every request */
    int64_t now = gpc_now();
    if (e->have_creds && (!gpc_aws_creds_expiring(&e->creds, now, 300) ||
                          (now - e->creds_at < 60 && !gpc_aws_creds_expiring(&e->creds, now, 0))))
        return 0;
    if (e->have_creds) {
        gpc_aws_creds_free(&e->creds);
        e->have_creds = 0;
    }
    int rc = gpc_aws_credentials(&e->cfg, &e->opts, &e->creds, err);
    if (!rc) {
        e->have_creds = 1;
        e->creds_at = now;
        gpc_debug(e->log, "aws: credentials from %s", e->creds.source);
    }
    return rc;
}

/* ---- one call ---------------------------------------------------------- */

typedef struct call_ctx {
    gpc_ec2 *e;
    const char *region;
    const char *action;
} call_ctx;

int gpc_aws_split_url(const char *url, char *host, size_t hs, char *path, size_t ps,
                      gpc_error *err)
{
    const char *p = strstr(url, "://");
    if (!p)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: endpoint '%s' is not an http(s) URL", url);
    int https = strncasecmp(url, "https", 5) == 0;
    p += 3;
    size_t len = strcspn(p, "/?#");
    const char *at = memchr(p, '@', len);
    if (at) {
        len -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    if (len == 0 || len >= hs)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: endpoint URL has no usable host");
    memcpy(host, p, len);
    host[len] = '\0';
    const char *defport = https ? ":443" : ":80";
    size_t dl = strlen(defport);
    if (len > dl && strcmp(host + len - dl, defport) == 0)
        host[len - dl] = '\0';
    for (char *c = host; *c && *c != ':'; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    const char *rest = p + len;
    size_t pl = strcspn(rest, "?#");
    snprintf(path, ps, "%.*s", (int)(pl ? pl : 1), pl ? rest : "/");
    return 0;
}

int gpc_ec2_sign(gpc_ec2 *e, const gpc_http_request *req, const char *sign_region,
                 const char *service, const char *content_type, const char *target,
                 gpc_http_headers *extra, gpc_error *err)
{
    int rc = gpc_ec2_credentials(e, err);
    if (rc)
        return rc;
    char host[256], path[512];
    rc = gpc_aws_split_url(req->url, host, sizeof(host), path, sizeof(path), err);
    if (rc)
        return rc;
    gpc_sigv4_header hdrs[] = {
        {"Content-Type", content_type},
        {"Host", host},
        {"X-Amz-Target", target},
    };
    gpc_sigv4_input in = {
        .method = req->method ? req->method : "POST", .path = path, .query = NULL,
        .headers = hdrs, .n_headers = target ? 3 : 2, .body = req->body,
        .body_len = req->body_len,
    };
    gpc_sigv4_creds cr = {
        .access_key_id = e->creds.access_key_id,
        .secret_access_key = e->creds.secret_access_key,
        .session_token = e->creds.session_token,
    };
    gpc_sigv4_result sig;
    rc = gpc_sigv4_sign(&in, &cr, sign_region, service, gpc_now() + e->clock_offset_s, &sig,
                        err);
    if (!rc)
        rc = gpc_http_headers_add(extra, "X-Amz-Date", sig.amz_date, err);
    if (!rc && e->creds.session_token && *e->creds.session_token)
        rc = gpc_http_headers_add(extra, "X-Amz-Security-Token", e->creds.session_token, err);
    if (!rc)
        rc = gpc_http_headers_add(extra, "Authorization", sig.authorization, err);
    OPENSSL_cleanse(&sig, sizeof(sig));
    return rc;
}

static int sign_attempt(void *arg, const gpc_http_request *req, int attempt,
                        gpc_http_headers *extra, gpc_error *err)
{
    call_ctx *cc = arg;
    (void)attempt;
    return gpc_ec2_sign(cc->e, req, cc->region, "ec2", EC2_CONTENT_TYPE, NULL, extra, err);
}

/* The <Code> of an EC2 error document, "" when the body is not one. */
static void error_fields(const gpc_buf *body, char *code, size_t cs, char *msg, size_t ms,
                         char *rid, size_t rs)
{
    code[0] = msg[0] = rid[0] = '\0';
    if (!body->len)
        return;
    xmlDoc *d = xmlReadMemory(body->data, (int)body->len, "error.xml", NULL,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!d)
        return;
    xmlNode *root = xmlDocGetRootElement(d);
    /* EC2: Response/Errors/Error; some gateways answer a bare <Error> */
    xmlNode *er = gpc_xml_path(root, "Errors/Error");
    if (!er && root && strcmp((const char *)root->name, "Error") == 0)
        er = root;
    if (er) {
        gpc_xml_text(er, "Code", code, cs);
        gpc_xml_text(er, "Message", msg, ms);
    }
    gpc_xml_text(root, "RequestID", rid, rs);
    if (!rid[0])
        gpc_xml_text(root, "RequestId", rid, rs);
    xmlFreeDoc(d);
}

/* A status retried when the reply holds no EC2 error: a gateway's. */
static int gateway_retried(long st)
{
    return st == 429 || st == 502 || st == 503 || st == 504;
}

/*
 * Actions that are not sent again after a transport failure (no reply, or
 * one cut short): EC2 may have carried the call out, and these have no
 * idempotency token, so a second call would make a second resource
 * (AllocateAddress: another Elastic IP, billing and taking quota).  The
 * caller finds out what the lost call did instead (providers/aws/eip.c
 * looks for the cluster's tagged addresses).  Such a call also goes on a
 * new connection: libcurl resends a request by itself when a reused
 * connection dies before any reply.
 */
static const char *const once_actions[] = {"AllocateAddress", NULL};

static int once_only(const char *action)
{
    return action && in_list(action, once_actions);
}

/*
 * What is worth another try (aws.md 3.3): transport failures (the HTTP
 * layer's list), EC2's throttling and transient codes, and a gateway's
 * 429, 502, 503 or 504 without an EC2 error document.  Everything else is
 * the answer, at once: capacity (a 500), auth, quota, a bad request, and a
 * reply that is no EC2 error at all (an HTML 500 from an endpoint that
 * does not serve the action, any other 4xx), which no retry cures; and a
 * transport failure of an action in once_actions.
 */
static int retry_rule(const char *action, const gpc_http_response *resp)
{
    if (resp->status == 0) /* transport: the built-in rule, unless not resendable */
        return once_only(action) ? GPC_HTTP_STOP : GPC_HTTP_DEFAULT;
    char code[96], msg[8], rid[8];
    error_fields(&resp->body, code, sizeof(code), msg, sizeof(msg), rid, sizeof(rid));
    if (code[0])
        return gpc_ec2_code_is_throttle(code) ? GPC_HTTP_RETRY : GPC_HTTP_STOP;
    long st = resp->status;
    return gateway_retried(st) ? GPC_HTTP_RETRY : GPC_HTTP_STOP;
}

static int retry_one(void *arg, const gpc_http_response *resp)
{
    const call_ctx *cc = arg;
    return retry_rule(cc->action, resp);
}

/* A progress line for each retry, so that a slow call says why. */
static void say_retry(const gpc_ec2 *e, const char *action, const char *region,
                      const gpc_http_response *resp, int attempt, long delay_ms)
{
    char code[96], msg[8], rid[8];
    code[0] = '\0';
    if (resp->status)
        error_fields(&resp->body, code, sizeof(code), msg, sizeof(msg), rid, sizeof(rid));
    char why[128];
    if (code[0])
        snprintf(why, sizeof(why), "%s (HTTP %ld)", code, resp->status);
    else if (resp->status)
        snprintf(why, sizeof(why), "HTTP %ld", resp->status);
    else
        snprintf(why, sizeof(why), "no answer");
    gpc_info(e->log, "aws: %s (%s): %s; retrying in %.1f s (attempt %d of %d)", action, region,
             why, (double)delay_ms / 1000.0, attempt + 1, EC2_MAX_ATTEMPTS);
}

static void note_retry(void *arg, const gpc_http_request *req, const gpc_http_response *resp,
                       int attempt, long delay_ms)
{
    (void)req;
    const call_ctx *cc = arg;
    say_retry(cc->e, cc->action, cc->region, resp, attempt, delay_ms);
}

long gpc_ec2_clock_skew(const gpc_http_response *r)
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

/* The URL and body of one call (caller frees both). */
static int prepare(gpc_ec2 *e, const char *region, const char *action, const gpc_ec2_params *p,
                   char **url, gpc_buf *body, gpc_error *err)
{
    gpc_buf_init(body, EC2_BODY_MAX + 256);
    *url = NULL;
    if (p && p->failed)
        return gpc_fail(err, GPC_ERR_NOMEM, "aws: %s: request too large", action);
    int rc = gpc_aws_ec2_endpoint(&e->cfg, region, url, err);
    if (!rc)
        rc = gpc_buf_addf(body, err, "Action=%s&Version=%s", action, GPC_EC2_API_VERSION);
    if (!rc && p && p->body.len)
        rc = gpc_buf_addf(body, err, "&%s", gpc_buf_str(&p->body));
    return rc;
}

/*
 * Turn what gpc_http_send* gave (hrc, he, resp) into the parsed answer or
 * the mapped error, with its remote details (the EC2 code, the HTTP
 * status, the request id, whether the retry rule wanted more); err holds
 * no failure on entry.  *skew is set to AWS's clock offset when the answer
 * was RequestExpired with a usable Date header (the caller may re-sign).
 */
static int finish(const char *action, const char *what, int hrc, const gpc_error *he,
                  const gpc_http_response *resp, xmlDoc **doc, long *skew, gpc_error *err)
{
    *skew = 0;
    const gpc_remote *hr = &he->remote;
    int st = resp->status > 0 && resp->status <= 999 ? (int)resp->status : 0;
    if (hrc == 0) {
        *doc = xmlReadMemory(resp->body.data, (int)resp->body.len, "answer.xml", NULL,
                             XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        if (*doc)
            return 0;
        int rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: the answer is not XML (HTTP %ld)", what,
                          resp->status);
        gpc_error_remote(err, st, NULL, resp->request_id, 0);
        return rc;
    }
    if (hrc == GPC_ERR_INTERRUPTED) /* not the reply of an earlier attempt */
        return gpc_error_wrap(err, he, NULL);
    char code[GPC_ERROR_CODE_MAX], msg[600], rid[GPC_ERROR_REQUEST_ID_MAX];
    error_fields(&resp->body, code, sizeof(code), msg, sizeof(msg), rid, sizeof(rid));
    int rc;
    if (!code[0] && resp->status && hrc == GPC_ERR_PROVIDER) {
        char ctype[96];
        if (!gpc_http_header(resp, "Content-Type", ctype, sizeof(ctype)))
            snprintf(ctype, sizeof(ctype), "none");
        /* a gateway's 429/502/503/504 was retried: busy or down, not absent */
        if (gateway_retried(resp->status))
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: the endpoint answered HTTP %ld without "
                          "an EC2 error %d time(s) (Content-Type %s)", what, resp->status,
                          resp->attempts, ctype);
        else
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "%s: HTTP %ld with no EC2 error in the answer "
                          "(Content-Type %s): the endpoint may not serve this action", what,
                          resp->status, ctype);
        gpc_error_remote(err, hr->http_status, NULL, hr->request_id, hr->retryable);
        return rc;
    }
    if (!code[0] && !resp->status && once_only(action)) {
        rc = gpc_fail(err, (gpc_code)hrc, "%s (not sent again: EC2 may have carried it out, "
                      "and %s has no idempotency token)", he->msg, action);
        if (hr->set)
            gpc_error_remote(err, hr->http_status, NULL, hr->request_id, hr->retryable);
        return rc;
    }
    if (!code[0])
        return gpc_error_wrap(err, he, NULL);
    if (strcmp(code, "RequestExpired") == 0)
        *skew = gpc_ec2_clock_skew(resp);
    gpc_code gc = gpc_ec2_error_code(code);
    const char *hint = "";
    char perm[192];
    if (gc == GPC_ERR_AUTH && strcmp(code, "UnauthorizedOperation") != 0)
        hint = " (check the credentials, their region and this machine's clock)";
    else if (strcmp(code, "UnauthorizedOperation") == 0) {
        snprintf(perm, sizeof(perm), " (the credentials lack the IAM permission ec2:%s; "
                 "docs/providers/aws-iam-policy.json lists every action gpuctl needs)", action);
        hint = perm;
    } else if (gc == GPC_ERR_QUOTA)
        hint = " (raise the quota in the Service Quotas console)";
    rc = gpc_fail(err, gc, "%s: %s: %s%s%s%s%s", what, code, msg, hint,
                  rid[0] ? " (request id " : "", rid, rid[0] ? ")" : "");
    /* the retry rule's verdict: a throttling code whose attempts ran out */
    gpc_error_remote(err, st, code, rid[0] ? rid : resp->request_id,
                     hr->set ? hr->retryable : gpc_ec2_code_is_throttle(code));
    return rc;
}

int gpc_ec2_call(gpc_ec2 *e, const char *region, const char *action,
                 const gpc_ec2_params *p, xmlDoc **doc, gpc_error *err)
{
    *doc = NULL;
    char *url = NULL;
    gpc_buf body;
    int rc = prepare(e, region, action, p, &url, &body, err);
    char what[128];
    snprintf(what, sizeof(what), "aws: %s (%s)", action, region);
    const char *hdrs[] = {"Content-Type: " EC2_CONTENT_TYPE};
    gpc_http_request req = {
        .method = "POST", .url = url, .headers = hdrs, .n_headers = 1,
        .body = body.data, .body_len = body.len, .fresh_connect = once_only(action),
    };
    call_ctx cc = {.e = e, .region = region, .action = action};
    gpc_http_opts o = {
        .what = what, .client = e->http, .before_attempt = sign_attempt,
        .should_retry = retry_one, .on_retry = note_retry, .arg = &cc,
        .max_attempts = EC2_MAX_ATTEMPTS, .request_id_headers = request_id_headers,
    };
    /* at most twice: once more, re-signed with AWS's time, after a
     * RequestExpired that tells how far off our clock is */
    for (int round = 0; !rc && round < 2; round++) {
        gpc_http_response resp;
        gpc_error he;
        gpc_error_clear(&he);
        e->calls++;
        gpc_debug(e->log, "aws: %s in %s", action, region);
        int hrc = gpc_http_send(&req, &o, &resp, &he);
        long skew = 0;
        gpc_error fe;
        gpc_error_clear(&fe);
        rc = finish(action, what, hrc, &he, &resp, doc, &skew, &fe);
        gpc_http_response_free(&resp);
        if (rc && skew && round == 0) {
            e->clock_offset_s = skew; /* gpc_ec2_clock_skew: AWS - ours, without the offset */
            gpc_debug(e->log, "aws: clock off by %ld s; signing with the server's time", skew);
            rc = 0;
            continue;
        }
        if (rc)
            gpc_error_wrap(err, &fe, NULL);
        break;
    }
    gpc_buf_free(&body);
    free(url);
    return rc;
}

/* The sign hook of a batch: the request's region by its position. */
typedef struct many_ctx {
    gpc_ec2 *e;
    const gpc_http_request *reqs;
    const gpc_http_response *resps;
    gpc_ec2_batch_item *items;
    size_t n;
} many_ctx;

/* The retry rule of a batch: the request's action by its response's
 * position (gpc_http_send_all hands the rule resps + i). */
static int retry_many(void *arg, const gpc_http_response *resp)
{
    const many_ctx *m = arg;
    size_t i = (size_t)(resp - m->resps);
    return retry_rule(resp >= m->resps && i < m->n ? m->items[i].action : NULL, resp);
}

static int sign_many(void *arg, const gpc_http_request *req, int attempt,
                     gpc_http_headers *extra, gpc_error *err)
{
    many_ctx *m = arg;
    size_t i = (size_t)(req - m->reqs);
    if (req < m->reqs || i >= m->n)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: unknown request in a batch");
    call_ctx cc = {.e = m->e, .region = m->items[i].region, .action = m->items[i].action};
    return sign_attempt(&cc, req, attempt, extra, err);
}

static void note_retry_many(void *arg, const gpc_http_request *req,
                            const gpc_http_response *resp, int attempt, long delay_ms)
{
    const many_ctx *m = arg;
    size_t i = (size_t)(req - m->reqs);
    if (req >= m->reqs && i < m->n)
        say_retry(m->e, m->items[i].action, m->items[i].region, resp, attempt, delay_ms);
}

int gpc_ec2_call_many(gpc_ec2 *e, gpc_ec2_batch_item *items, size_t n, gpc_error *err)
{
    if (n == 0)
        return 0;
    /* credentials first, once, not from several requests at a time */
    int rc = gpc_ec2_credentials(e, err);
    if (rc)
        return rc;
    gpc_http_request *reqs = calloc(n, sizeof(*reqs));
    gpc_http_response *resps = calloc(n, sizeof(*resps));
    int *rcs = calloc(n, sizeof(int));
    gpc_error *errs = calloc(n, sizeof(gpc_error));
    char **urls = calloc(n, sizeof(char *));
    gpc_buf *bodies = calloc(n, sizeof(gpc_buf));
    if (!reqs || !resps || !rcs || !errs || !urls || !bodies)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    static const char *const hdrs[] = {"Content-Type: " EC2_CONTENT_TYPE};
    size_t prepared = 0;
    for (size_t i = 0; !rc && i < n; i++, prepared++) {
        items[i].doc = NULL;
        items[i].rc = 0;
        items[i].attempts = 0;
        gpc_error_clear(&items[i].err);
        rc = prepare(e, items[i].region, items[i].action, items[i].params, &urls[i],
                     &bodies[i], err);
        reqs[i] = (gpc_http_request){
            .method = "POST", .url = urls[i], .headers = hdrs, .n_headers = 1,
            .body = bodies[i].data, .body_len = bodies[i].len,
            .fresh_connect = once_only(items[i].action),
        };
    }
    many_ctx m = {.e = e, .reqs = reqs, .resps = resps, .items = items, .n = n};
    gpc_http_opts o = {
        .what = "aws", .client = e->http, .before_attempt = sign_many,
        .should_retry = retry_many, .on_retry = note_retry_many, .arg = &m,
        .max_attempts = EC2_MAX_ATTEMPTS, .request_id_headers = request_id_headers,
    };
    if (!rc) {
        e->calls += n;
        gpc_debug(e->log, "aws: %zu calls at once (%s ...)", n, items[0].action);
        gpc_http_send_all(reqs, n, &o, 0, resps, rcs, errs);
    }
    /* every item's answer, also after a failed one */
    int sent = !rc;
    for (size_t i = 0; sent && i < n; i++) {
        char what[128];
        snprintf(what, sizeof(what), "aws: %s (%s)", items[i].action, items[i].region);
        long skew;
        items[i].rc = finish(items[i].action, what, rcs[i], &errs[i], &resps[i],
                             &items[i].doc, &skew, &items[i].err);
        items[i].attempts = resps[i].attempts;
        if (items[i].rc && !rc)
            rc = gpc_error_wrap(err, &items[i].err, NULL);
    }
    for (size_t i = 0; resps && i < n; i++)
        gpc_http_response_free(&resps[i]);
    for (size_t i = 0; bodies && i < prepared; i++) {
        gpc_buf_free(&bodies[i]);
        free(urls[i]);
    }
    free(reqs);
    free(resps);
    free(rcs);
    free(errs);
    free(urls);
    free(bodies);
    return rc;
}
