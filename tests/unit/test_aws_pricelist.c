/*
 * test_aws_pricelist.c - the AWS JSON 1.1 client (providers/aws/json_api.c)
 * against the fake Price List endpoint tests/fake/pricing.py, which
 * recomputes every SigV4 signature with botocore: signing (service
 * "pricing", region us-east-1, X-Amz-Target signed), session tokens,
 * retries (throttling codes and a gateway's 502 retried, other errors
 * not), the clock-skew re-sign, the error mapping, messages and remote
 * details; and the Price List client (providers/aws/pricelist.c): one
 * PriceList item read (the OnDemand "Hrs" price, not a Reserved one), and
 * GetProducts with its filters and NextToken paging, exact prices.
 *
 * Keys: the AWS documentation example (AKIDEXAMPLE and
 * wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY), the fake's defaults.  The fake
 * numbers its request ids by the request's place in its log:
 * 00000000-0000-4000-8000-<n, 12 digits>.  Its products are
 * tests/fixtures/aws_pricelist_products.json: product documents in the
 * Price List's aws_v1 format, shaped as the GetProducts example of
 * botocore's data/pricing/2017-10-15/examples-1.json (the PriceList
 * item of AWS's "To retrieve a list of products"), with hand-set prices.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "aws/ec2.h"
#include "aws/json_api.h"
#include "aws/pricelist.h"
#include "fake/aws_env.h"
#include "fake/spawn.h"
#include "gpuctl/log.h"

#define AKID   "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define RID(n) "00000000-0000-4000-8000-0000000000" #n
#define GET_PRODUCTS "AWSPriceListService.GetProducts"

typedef struct fixture {
    fake_server srv;
    char faults[64];  /* fault rules file, "" when none */
    gpc_log out;
    gpc_ec2 ec2;
    int opened;
} fixture;

static int setup(void **state)
{
    aws_env_reset();
    setenv("AWS_CONFIG_FILE", "/nonexistent/gpuctl-test/aws-config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/gpuctl-test/aws-credentials", 1);
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->srv.in_fd = f->srv.out_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->opened)
        gpc_ec2_close(&f->ec2);
    fake_stop(&f->srv);
    if (f->faults[0])
        unlink(f->faults);
    free(f);
    aws_env_reset();
    return 0;
}

/* Start the fake with fault rules `faults` (JSON, or NULL) and extra
 * flags (NULL-terminated), point the Price List and Service Quotas
 * endpoints at it and open a session for us-east-1. */
static void start(fixture *f, const char *faults, ...)
{
    const char *args[32];
    int n = 0;
    if (faults) {
        snprintf(f->faults, sizeof(f->faults), "/tmp/gpuctl-pricing-faults-XXXXXX");
        int fd = mkstemp(f->faults);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, faults, strlen(faults)), (ssize_t)strlen(faults));
        close(fd);
        args[n++] = "--faults";
        args[n++] = f->faults;
    }
    va_list ap;
    va_start(ap, faults);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 31)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    assert_int_equal(fake_start(&f->srv, "pricing.py", args), 0);
    setenv("AWS_ENDPOINT_URL_PRICING", f->srv.base, 1);
    setenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS", f->srv.base, 1);
    gpc_error err;
    gpc_error_clear(&err);
    memset(&f->out, 0, sizeof(f->out));
    assert_int_equal(gpc_ec2_open(&f->ec2, &(gpc_aws_options){.region = "us-east-1"}, &f->out,
                                  &err), 0);
    f->opened = 1;
}

/* Requests in the fake's log naming `needle` (NULL: all). */
static int log_count(const fixture *f, const char *needle)
{
    char *log = fake_log(&f->srv);
    assert_non_null(log);
    int n = 0;
    for (char *line = log; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!needle || strstr(line, needle))
            n++;
        if (!nl)
            break;
        line = nl + 1;
    }
    free(log);
    return n;
}

static void expect_remote(const gpc_error *err, int http_status, const char *code,
                          const char *request_id, int retryable)
{
    assert_int_equal(err->remote.set, 1);
    assert_int_equal(err->remote.http_status, http_status);
    assert_string_equal(err->remote.code, code);
    assert_string_equal(err->remote.request_id, request_id);
    assert_int_equal(err->remote.retryable, retryable);
}

/* GetProducts for p5.48xlarge in us-east-1, Linux, shared tenancy. */
static cJSON *p5_request(int max_results)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "ServiceCode", "AmazonEC2");
    cJSON_AddStringToObject(b, "FormatVersion", "aws_v1");
    cJSON *fl = cJSON_AddArrayToObject(b, "Filters");
    const char *kv[][2] = {{"instanceType", "p5.48xlarge"}, {"regionCode", "us-east-1"},
                           {"operatingSystem", "Linux"}, {"tenancy", "Shared"},
                           {"preInstalledSw", "NA"}, {"capacitystatus", "Used"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "Type", "TERM_MATCH");
        cJSON_AddStringToObject(o, "Field", kv[i][0]);
        cJSON_AddStringToObject(o, "Value", kv[i][1]);
        cJSON_AddItemToArray(fl, o);
    }
    if (max_results)
        cJSON_AddNumberToObject(b, "MaxResults", max_results);
    return b;
}

static int get_products(fixture *f, int max_results, cJSON **out, gpc_error *err)
{
    cJSON *b = p5_request(max_results);
    gpc_error_clear(err);
    int rc = gpc_aws_json_call(&f->ec2, GPC_AWS_PRICING, "us-east-1", GET_PRODUCTS, b, out, err);
    cJSON_Delete(b);
    return rc;
}

/* ---- calls ----------------------------------------------------------------- */

static void test_json_get_products(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), 0);
    assert_int_equal(err.code, GPC_OK);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(out, "FormatVersion")),
                        "aws_v1");
    const cJSON *pl = cJSON_GetObjectItem(out, "PriceList");
    assert_int_equal(cJSON_GetArraySize(pl), 1);
    assert_null(cJSON_GetObjectItem(out, "NextToken"));
    /* the item is a JSON document in a string, as the API sends it */
    cJSON *item = cJSON_Parse(cJSON_GetStringValue(cJSON_GetArrayItem(pl, 0)));
    assert_non_null(item);
    const cJSON *attrs = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "product"), "attributes");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(attrs, "instanceType")),
                        "p5.48xlarge");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(attrs, "tenancy")), "Shared");
    cJSON_Delete(item);
    cJSON_Delete(out);
    assert_int_equal(f->ec2.calls, 1);
    /* the fake checked the signature (service pricing, region us-east-1)
     * and logged exactly this */
    assert_int_equal(log_count(f, NULL), 1);
    assert_int_equal(log_count(f, "{\"n\": 1, \"request_id\": \"" RID(01) "\", \"target\": \""
                                  GET_PRODUCTS "\", \"region\": \"us-east-1\", \"body\": "
                                  "{\"ServiceCode\": \"AmazonEC2\", \"FormatVersion\": "
                                  "\"aws_v1\", \"Filters\": [{\"Type\": \"TERM_MATCH\", "
                                  "\"Field\": \"instanceType\", \"Value\": \"p5.48xlarge\"}, "),
                     1);
    assert_int_equal(log_count(f, "\"status\": 200, \"error\": null, \"fault\": null, "
                                  "\"items\": 1}"), 1);
}

static void test_json_paging_token(void **state)
{
    /* the fake's default page is 2 items; NextToken ("<offset>:<check>")
     * comes back, and sent again gives the next page */
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "ServiceCode", "AmazonEC2");
    cJSON *out = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_json_call(&f->ec2, GPC_AWS_PRICING, "us-east-1", GET_PRODUCTS, b,
                                       &out, &err), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(out, "PriceList")), 2);
    const char *tok = cJSON_GetStringValue(cJSON_GetObjectItem(out, "NextToken"));
    assert_non_null(tok);
    assert_memory_equal(tok, "2:", 2);
    cJSON_AddStringToObject(b, "NextToken", tok);
    cJSON_Delete(out);
    assert_int_equal(gpc_aws_json_call(&f->ec2, GPC_AWS_PRICING, "us-east-1", GET_PRODUCTS, b,
                                       &out, &err), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(out, "PriceList")), 2);
    tok = cJSON_GetStringValue(cJSON_GetObjectItem(out, "NextToken"));
    assert_non_null(tok);
    assert_memory_equal(tok, "4:", 2);
    cJSON_Delete(out);
    cJSON_Delete(b);
    assert_int_equal(log_count(f, "\"status\": 200, \"error\": null, \"fault\": null, "
                                  "\"items\": 2}"), 2);
}

static void test_json_null_body(void **state)
{
    /* no input: "{}", which GetProducts refuses (ServiceCode is required):
     * a validation error, not retried */
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_json_call(&f->ec2, GPC_AWS_PRICING, "us-east-1", GET_PRODUCTS,
                                       NULL, &out, &err), GPC_ERR_PROVIDER);
    assert_null(out);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): ValidationException: 1 "
                        "validation error detected: Value null at 'serviceCode' failed to "
                        "satisfy constraint: Member must not be null (request id " RID(01) ")");
    expect_remote(&err, 400, "ValidationException", RID(01), 0);
    assert_int_equal(log_count(f, "\"body\": {}"), 1);
}

static void test_json_session_token(void **state)
{
    fixture *f = *state;
    setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzE+token/with=chars", 1);
    start(f, NULL, "--session-token", "FQoGZXIvYXdzE+token/with=chars", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), 0);
    cJSON_Delete(out);
    assert_int_equal(log_count(f, "\"status\": 200"), 1);
}

static void test_json_wrong_secret(void **state)
{
    fixture *f = *state;
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_AUTH);
    assert_null(out);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): InvalidSignatureException: "
                        "The request signature we calculated does not match the signature "
                        "you provided. Check your AWS Secret Access Key and signing method. "
                        "Consult the service documentation for details. (check the "
                        "credentials, their region and this machine's clock) (request id "
                        RID(01) ")");
    expect_remote(&err, 403, "InvalidSignatureException", RID(01), 0);
    assert_int_equal(log_count(f, NULL), 1);
}

static void test_json_unknown_key(void **state)
{
    fixture *f = *state;
    setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN", 1);
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): "
                        "UnrecognizedClientException: The security token included in the "
                        "request is invalid. (check the credentials, their region and this "
                        "machine's clock) (request id " RID(01) ")");
    expect_remote(&err, 403, "UnrecognizedClientException", RID(01), 0);
}

static void test_json_throttled_then_ok(void **state)
{
    fixture *f = *state;
    start(f, "[{\"target\": \"GetProducts\", \"type\": \"ThrottlingException\", "
             "\"message\": \"Rate exceeded\", \"times\": 2}]", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(out, "PriceList")), 1);
    cJSON_Delete(out);
    assert_int_equal(log_count(f, NULL), 3);
    assert_int_equal(log_count(f, "\"status\": 400, \"error\": \"ThrottlingException\""), 2);
    assert_int_equal(log_count(f, "\"n\": 3, \"request_id\": \"" RID(03) "\""), 1);
    assert_int_equal(log_count(f, "\"status\": 200, \"error\": null"), 1);
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(f->ec2.calls, 1);
}

static void test_json_access_denied(void **state)
{
    fixture *f = *state;
    start(f, "[{\"target\": \"*\", \"type\": \"AccessDeniedException\", \"message\": "
             "\"User: arn:aws:iam::123456789012:user/ci is not authorized to perform: "
             "pricing:GetProducts\"}]", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): AccessDeniedException: "
                        "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: "
                        "pricing:GetProducts (the credentials lack the IAM permission "
                        "pricing:GetProducts; docs/providers/aws-iam-policy.json lists every "
                        "action gpuctl needs) (request id " RID(01) ")");
    expect_remote(&err, 400, "AccessDeniedException", RID(01), 0);
    assert_int_equal(log_count(f, NULL), 1);
}

static void test_json_not_found(void **state)
{
    /* a namespaced __type and a lower-case "message" key */
    fixture *f = *state;
    start(f, "[{\"target\": \"*\", \"type\": \"com.amazonaws.servicequotas#"
             "NoSuchResourceException\", \"lower\": true, \"message\": \"The request failed "
             "because the specified service does not exist.\"}]", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): NoSuchResourceException: "
                        "The request failed because the specified service does not exist. "
                        "(request id " RID(01) ")");
    expect_remote(&err, 400, "NoSuchResourceException", RID(01), 0);
}

static void test_json_invalid_parameter(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 500, &out, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): InvalidParameterException: "
                        "MaxResults must be between 1 and 100. (request id " RID(01) ")");
    expect_remote(&err, 400, "InvalidParameterException", RID(01), 0);
    assert_int_equal(log_count(f, NULL), 1);
}

static void test_json_error_type_header(void **state)
{
    /* no __type in the body: the code is the x-amzn-ErrorType header's, up
     * to its ':' (a regression test: that copy was one a release build
     * warned could be cut short) */
    fixture *f = *state;
    start(f, "[{\"target\": \"*\", \"status\": 403, \"body\": \"{\\\"message\\\": "
             "\\\"denied\\\"}\", \"content_type\": \"application/x-amz-json-1.1\", "
             "\"error_type\": \"AccessDeniedException:http://internal.amazon.com/coral/"
             "com.amazon.coral.service/\"}]", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): AccessDeniedException: "
                        "denied (the credentials lack the IAM permission pricing:GetProducts; "
                        "docs/providers/aws-iam-policy.json lists every action gpuctl needs) "
                        "(request id " RID(01) ")");
    expect_remote(&err, 403, "AccessDeniedException", RID(01), 0);
}

static void test_json_gateway_retried(void **state)
{
    /* a proxy's 502 without an AWS error: retried, then given up after 6 */
    fixture *f = *state;
    start(f, "[{\"target\": \"*\", \"body\": \"<html>Bad Gateway</html>\", \"status\": 502}]",
          NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "aws: " GET_PRODUCTS " (us-east-1): HTTP 502 with no AWS error "
                        "in the answer (Content-Type text/html)");
    assert_int_equal(err.remote.set, 1);
    assert_int_equal(err.remote.http_status, 502);
    assert_string_equal(err.remote.code, "");
    assert_string_equal(err.remote.request_id, "00000000-0000-4000-8000-000000000006");
    assert_int_equal(err.remote.retryable, 1);
    assert_int_equal(log_count(f, "\"status\": 502"), 6);
}

static void test_json_clock_skew(void **state)
{
    /* the fake's clock is an hour ahead: InvalidSignatureException
     * "Signature expired", then one re-signed request with the offset from
     * its Date header */
    fixture *f = *state;
    start(f, NULL, "--clock-offset", "3600", NULL);
    cJSON *out = NULL;
    gpc_error err;
    assert_int_equal(get_products(f, 0, &out, &err), 0);
    cJSON_Delete(out);
    assert_int_equal(log_count(f, NULL), 2);
    assert_int_equal(log_count(f, "\"n\": 1, \"request_id\": \"" RID(01) "\""), 1);
    assert_int_equal(log_count(f, "\"status\": 403, \"error\": \"InvalidSignatureException\""),
                     1);
    assert_int_equal(log_count(f, "is more than 5 minutes from the fake's clock"), 1);
    assert_int_equal(log_count(f, "\"status\": 200, \"error\": null"), 1);
    assert_in_range(f->ec2.clock_offset_s, 3598, 3602);
    assert_int_equal(f->ec2.calls, 2);
}

static void test_json_service_quotas_signing_name(void **state)
{
    /* Service Quotas is signed as "servicequotas" for the call's region:
     * the Price List fake, which wants "pricing", says so */
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_json_call(&f->ec2, GPC_AWS_SERVICE_QUOTAS, "us-west-2",
                                       "ServiceQuotasV20190624.GetServiceQuota", NULL, &out,
                                       &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "aws: ServiceQuotasV20190624.GetServiceQuota (us-west-2): "
                        "InvalidSignatureException: Credential should be scoped to correct "
                        "service: 'pricing'. (check the credentials, their region and this "
                        "machine's clock) (request id " RID(01) ")");
    assert_int_equal(log_count(f, "\"target\": \"ServiceQuotasV20190624.GetServiceQuota\", "
                                  "\"region\": \"us-west-2\""), 1);
    assert_int_equal(log_count(f, "\"reason\": \"service servicequotas is not pricing\""), 1);
}

static void test_json_not_a_json_service(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    cJSON *out = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_json_call(&f->ec2, GPC_AWS_S3, "us-east-1", "S3.GetObject", NULL,
                                       &out, &err), GPC_ERR_INTERNAL);
    assert_string_equal(err.msg, "aws: S3.GetObject: not a JSON 1.1 service");
    assert_int_equal(log_count(f, NULL), 0);
}

static void test_json_error_codes(void **state)
{
    (void)state;
    const struct {
        const char *code;
        gpc_code want;
        int throttle;
    } t[] = {
        {"AccessDeniedException", GPC_ERR_AUTH, 0},
        {"UnrecognizedClientException", GPC_ERR_AUTH, 0},
        {"InvalidSignatureException", GPC_ERR_AUTH, 0},
        {"IncompleteSignatureException", GPC_ERR_AUTH, 0},
        {"MissingAuthenticationTokenException", GPC_ERR_AUTH, 0},
        {"ExpiredTokenException", GPC_ERR_AUTH, 0},
        {"NoSuchResourceException", GPC_ERR_NOT_FOUND, 0},
        {"ThrottlingException", GPC_ERR_PROVIDER, 1},
        {"TooManyRequestsException", GPC_ERR_PROVIDER, 1},
        {"InvalidParameterException", GPC_ERR_PROVIDER, 0},
        {"InternalErrorException", GPC_ERR_PROVIDER, 0},
        {"ServiceException", GPC_ERR_PROVIDER, 0},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        assert_int_equal(gpc_aws_json_error_code(t[i].code), t[i].want);
        assert_int_equal(gpc_aws_json_code_is_throttle(t[i].code), t[i].throttle);
    }
}

/* ---- the Price List client ------------------------------------------------ */

/* Item `i` of the fixture, as the JSON text the API sends (caller frees). */
static char *fixture_item(int i)
{
    char path[1024];
    const char *src = getenv("GPUCTL_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/tests/fixtures/aws_pricelist_products.json",
             src && *src ? src : ".");
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[len] = '\0';
    cJSON *all = cJSON_Parse(buf);
    assert_non_null(all);
    char *text = cJSON_PrintUnformatted(cJSON_GetArrayItem(all, i));
    cJSON_Delete(all);
    assert_non_null(text);
    return text;
}

static void test_item_ondemand_not_reserved(void **state)
{
    (void)state;
    /* item 0: p5.48xlarge, us-east-1, OnDemand 55.04 and a Reserved 36.1812 */
    char *text = fixture_item(0);
    gpc_aws_od_price p;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_pricelist_item(text, strlen(text), &p, &err), 0);
    assert_string_equal(p.instance_type, "p5.48xlarge");
    assert_string_equal(p.region, "us-east-1");
    assert_true(p.usd_per_hour == 55.04);
    assert_string_equal(p.published, "2026-12-01T00:35:12Z");
    assert_int_equal(strlen(p.sku), 16);
    free(text);
}

static void test_item_errors(void **state)
{
    (void)state;
    const struct {
        const char *text;
        const char *msg;
    } t[] = {
        {"[1]", "aws: a Price List item is not a JSON object"},
        {"{\"product\":{\"sku\":\"ABC\",\"attributes\":{\"regionCode\":\"us-east-1\"}}}",
         "aws: a Price List item (sku ABC) has no product.attributes.instanceType"},
        {"{\"product\":{\"attributes\":{\"instanceType\":\"g5.xlarge\"}}}",
         "aws: a Price List item (sku none) has no product.attributes.regionCode"},
        {"{\"product\":{\"attributes\":{\"instanceType\":\"g5.xlarge\",\"regionCode\":"
         "\"us-east-1\"}},\"terms\":{\"Reserved\":{}}}",
         "aws: the Price List item of g5.xlarge in us-east-1 has no OnDemand term"},
        {"{\"product\":{\"attributes\":{\"instanceType\":\"g5.xlarge\",\"regionCode\":"
         "\"us-east-1\"}},\"terms\":{\"OnDemand\":{\"A.B\":{\"priceDimensions\":{\"A.B.C\":"
         "{\"unit\":\"GB-Mo\",\"pricePerUnit\":{\"USD\":\"0.1\"}}}}}}}",
         "aws: the Price List item of g5.xlarge in us-east-1 has no hourly (\"Hrs\") USD price"},
        {"{\"product\":{\"attributes\":{\"instanceType\":\"g5.xlarge\",\"regionCode\":"
         "\"us-east-1\"}},\"terms\":{\"OnDemand\":{\"A.B\":{\"priceDimensions\":{\"A.B.C\":"
         "{\"unit\":\"Hrs\",\"pricePerUnit\":{\"USD\":\"1.0x\"}}}}}}}",
         "aws: the Price List item of g5.xlarge in us-east-1 has the price '1.0x' USD/hour "
         "(expected a decimal number from 0 to 1000000)"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        gpc_aws_od_price p;
        gpc_error err;
        gpc_error_clear(&err);
        assert_int_equal(gpc_aws_pricelist_item(t[i].text, strlen(t[i].text), &p, &err),
                         GPC_ERR_PROVIDER);
        assert_string_equal(err.msg, t[i].msg);
    }
}

static void test_ondemand_every_region(void **state)
{
    /* p4d.24xlarge: 3 Linux prices (and a Windows one the filters leave
     * out), in the fake's pages of 2 items: NextToken followed */
    fixture *f = *state;
    start(f, NULL, NULL);
    gpc_aws_od_price *v = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_pricelist_ondemand(&f->ec2, "p4d.24xlarge", NULL, &v, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].region, "us-east-1");
    assert_true(v[0].usd_per_hour == 21.957642);
    assert_string_equal(v[1].region, "us-west-2");
    assert_true(v[1].usd_per_hour == 21.95764);
    assert_string_equal(v[2].region, "ap-northeast-1");
    assert_true(v[2].usd_per_hour == 30.09784);
    free(v);
    assert_int_equal(log_count(f, NULL), 2);
    assert_int_equal(log_count(f, "\"MaxResults\": 100, \"NextToken\": \"2:"), 1);
    assert_int_equal(log_count(f, "\"Filters\": [{\"Type\": \"TERM_MATCH\", \"Field\": "
                                  "\"instanceType\", \"Value\": \"p4d.24xlarge\"}, {\"Type\": "
                                  "\"TERM_MATCH\", \"Field\": \"operatingSystem\", \"Value\": "
                                  "\"Linux\"}, {\"Type\": \"TERM_MATCH\", \"Field\": \"tenancy\", "
                                  "\"Value\": \"Shared\"}, {\"Type\": \"TERM_MATCH\", \"Field\": "
                                  "\"preInstalledSw\", \"Value\": \"NA\"}, {\"Type\": "
                                  "\"TERM_MATCH\", \"Field\": \"capacitystatus\", \"Value\": "
                                  "\"Used\"}, {\"Type\": \"TERM_MATCH\", \"Field\": "
                                  "\"locationType\", \"Value\": \"AWS Region\"}], \"ServiceCode\": "
                                  "\"AmazonEC2\", \"FormatVersion\": \"aws_v1\", \"MaxResults\": 100"),
                     2);
}

static void test_ondemand_decoys_and_pages(void **state)
{
    /* p5.48xlarge: of 7 products only us-east-1 and us-west-2 (Linux,
     * Shared, NA, Used, AWS Region) pass the filters; pages of 1 item;
     * a throttled request retried; one region asked */
    fixture *f = *state;
    start(f, "[{\"target\": \"GetProducts\", \"type\": \"ThrottlingException\", "
             "\"times\": 1}]", "--page-size", "1", NULL);
    gpc_aws_od_price *v = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_pricelist_ondemand(&f->ec2, "p5.48xlarge", NULL, &v, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].region, "us-east-1");
    assert_true(v[0].usd_per_hour == 55.04);
    assert_string_equal(v[1].region, "us-west-2");
    assert_true(v[1].usd_per_hour == 55.04);
    free(v);
    v = NULL;
    n = 0;
    assert_int_equal(gpc_aws_pricelist_ondemand(&f->ec2, "g5.xlarge", "ap-northeast-1", &v, &n,
                                                &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].instance_type, "g5.xlarge");
    assert_string_equal(v[0].region, "ap-northeast-1");
    assert_true(v[0].usd_per_hour == 1.459);
    free(v);
    v = NULL;
    n = 0;
    /* a type the Price List does not list: no prices, no error */
    assert_int_equal(gpc_aws_pricelist_ondemand(&f->ec2, "p6-b200.48xlarge", NULL, &v, &n,
                                                &err), 0);
    assert_int_equal(n, 0);
    free(v);
    /* the throttled first request was retried */
    assert_int_equal(log_count(f, "\"error\": \"ThrottlingException\""), 1);
    assert_int_equal(log_count(f, "\"regionCode\""), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_get_products, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_paging_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_null_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_session_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_wrong_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_unknown_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_throttled_then_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_access_denied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_invalid_parameter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_error_type_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_gateway_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_clock_skew, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_service_quotas_signing_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_not_a_json_service, setup, teardown),
        cmocka_unit_test(test_json_error_codes),
        cmocka_unit_test(test_item_ondemand_not_reserved),
        cmocka_unit_test(test_item_errors),
        cmocka_unit_test_setup_teardown(test_ondemand_every_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ondemand_decoys_and_pages, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
