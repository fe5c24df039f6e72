/*
 * test_aws_ec2.c - the EC2 Query API client (providers/aws/ec2.c) against
 * the fake EC2 endpoint tests/fake/ec2.py, which recomputes every SigV4
 * signature with botocore: gpc_ec2_call's signing (with and without a
 * session token), its retries (throttling and 5xx retried, the capacity
 * family not), the clock-skew re-sign, the clock it signs with (clock.h),
 * its error mapping and messages;
 * the parameter encoding (gpc_ec2_param, gpc_ec2_filter) and the XML
 * readers (gpc_xml_*).
 *
 * Keys: the AWS documentation example (AKIDEXAMPLE and
 * wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY), the fake's defaults.  The fake
 * numbers its request ids by the request's place in its log:
 * 00000000-0000-4000-8000-<n, 12 digits>, so each test knows them.
 *
 * The SSH key of test_param_base64_survives (worked out with Python's
 * base64 and hashlib): the blob is string "ssh-ed25519", string of the 32
 * bytes 0xe0..0xff; the comment "ab~ab?a" puts a '~' and a '?' where the
 * base64 of the whole line turns them into '+' and '/', and the line's
 * length makes it end in "==".  ED25519 fingerprint: base64 (no padding)
 * of the SHA-256 of the blob.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "aws/ec2.h"
#include "fake/aws_env.h"
#include "fake/fixed_clock.h"
#include "fake/spawn.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"
#include "gpuctl/log.h"
#include "gpuctl/provider.h"


#define AKID   "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define RID(n) "00000000-0000-4000-8000-0000000000" #n

#define KEY_LINE "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIODh4uPk5ebn6Onq6+zt7u/w8fLz9PX29/j5+vv8/f7/ ab~ab?a"
#define KEY_B64 "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU9EaDR1UGs1ZWJuNk9ucTYrenQ3dS93" \
                "OGZMejlQWDI5L2o1K3Z2OC9mNy8gYWJ+YWI/YQ=="
/* KEY_B64 UriEncoded: only its last '+', '/' and the padding change */
#define KEY_B64_ENC "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU9EaDR1UGs1ZWJuNk9ucTYrenQ3dS93" \
                    "OGZMejlQWDI5L2o1K3Z2OC9mNy8gYWJ%2BYWI%2FYQ%3D%3D"
#define KEY_FP "ebf5fnR+l1NTftqhxGB7cqk9W20uN8rrPsRzdWp7eOk"

typedef struct fixture {
    fake_server srv;
    char faults[64];  /* fault rules file, "" when none */
    gpc_log out;
    gpc_ec2 ec2;
    int opened;
} fixture;

static int setup(void **state)
{
    aws_env_reset(); /* no AWS_* of this machine, no proxy, no IMDS */
    /* only the environment's keys: no files, no instance metadata */
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

/*
 * Start the fake (answers in one page) with fault rules `faults` (JSON,
 * or NULL) and extra flags (NULL-terminated), point AWS_ENDPOINT_URL_EC2
 * at it and open a client for us-east-1.
 */
static void start(fixture *f, const char *faults, ...)
{
    const char *args[32];
    int n = 0;
    args[n++] = "--page-size";
    args[n++] = "0";
    if (faults) {
        snprintf(f->faults, sizeof(f->faults), "/tmp/gpuctl-ec2-faults-XXXXXX");
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
    assert_int_equal(fake_start(&f->srv, "ec2.py", args), 0);
    setenv("AWS_ENDPOINT_URL_EC2", f->srv.base, 1);
    gpc_error err;
    gpc_error_clear(&err);
    memset(&f->out, 0, sizeof(f->out));
    assert_int_equal(gpc_ec2_open(&f->ec2, &(gpc_aws_options){.region = "us-east-1"}, &f->out,
                                  &err), 0);
    f->opened = 1;
}

/* Requests in the fake's log, and those naming `needle` (NULL: all). */
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

/* Line `i` (0-based) of the fake's log, copied into out. */
static void log_line(const fixture *f, int i, char *out, size_t size)
{
    char *log = fake_log(&f->srv);
    assert_non_null(log);
    char *line = log;
    for (int k = 0; k < i && line; k++) {
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    assert_non_null(line);
    snprintf(out, size, "%.*s", (int)strcspn(line, "\n"), line);
    free(log);
}

static int call(fixture *f, const char *action, const gpc_ec2_params *p, xmlDoc **doc,
                gpc_error *err)
{
    gpc_error_clear(err);
    return gpc_ec2_call(&f->ec2, "us-east-1", action, p, doc, err);
}

/* The remote details of err are exactly these. */
static void expect_remote(const gpc_error *err, int http_status, const char *code,
                          const char *request_id, int retryable)
{
    assert_int_equal(err->remote.set, 1);
    assert_int_equal(err->remote.http_status, http_status);
    assert_string_equal(err->remote.code, code);
    assert_string_equal(err->remote.request_id, request_id);
    assert_int_equal(err->remote.retryable, retryable);
}

/* ---- calls ----------------------------------------------------------------- */

static void test_describe_regions(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    assert_int_equal(err.code, GPC_OK);
    assert_non_null(d);
    xmlNode *root = xmlDocGetRootElement(d);
    assert_string_equal((const char *)root->name, "DescribeRegionsResponse");
    assert_non_null(root->ns);
    assert_string_equal((const char *)root->ns->href, "http://ec2.amazonaws.com/doc/2016-11-15/");
    char v[128];
    assert_string_equal(gpc_xml_text(root, "requestId", v, sizeof(v)), RID(01));
    const char *want[] = {"us-east-1", "us-west-2", "ap-northeast-1"};
    size_t k = 0;
    for (xmlNode *it = gpc_xml_items(root, "regionInfo"); it; it = gpc_xml_next(it), k++) {
        assert_true(k < 3);
        assert_string_equal(gpc_xml_text(it, "regionName", v, sizeof(v)), want[k]);
    }
    assert_int_equal(k, 3);
    xmlFreeDoc(d);
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(f->ec2.calls, 1);
    assert_true(f->ec2.have_creds);
    assert_string_equal(f->ec2.creds.access_key_id, AKID);
    /* the fake checked the signature and logged exactly this */
    char *log = fake_log(&f->srv);
    assert_string_equal(log, "{\"n\": 1, \"request_id\": \"" RID(01) "\", \"action\": "
                        "\"DescribeRegions\", \"region\": \"us-east-1\", \"params\": {}, "
                        "\"status\": 200, \"error\": null, \"client_token\": null, "
                        "\"fault\": null}\n");
    free(log);
}

static void test_session_token(void **state)
{
    fixture *f = *state;
    setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzE+token/with=chars", 1);
    start(f, NULL, "--session-token", "FQoGZXIvYXdzE+token/with=chars", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_string_equal(f->ec2.creds.session_token, "FQoGZXIvYXdzE+token/with=chars");
    assert_int_equal(log_count(f, NULL), 1);
    assert_int_equal(log_count(f, "\"action\": \"DescribeRegions\", \"region\": \"us-east-1\", "
                                  "\"params\": {}, \"status\": 200"), 1);
}

static void test_session_token_missing(void **state)
{
    /* the fake wants a token; the client has none: refused, not retried */
    fixture *f = *state;
    start(f, NULL, "--session-token", "T", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), GPC_ERR_AUTH);
    assert_null(d);
    assert_string_equal(err.msg, "aws: DescribeRegions (us-east-1): AuthFailure: The security "
                        "token included in the request is invalid. (check the credentials, "
                        "their region and this machine's clock) (request id " RID(01) ")");
    assert_int_equal(log_count(f, NULL), 1);
}

static void test_wrong_secret(void **state)
{
    fixture *f = *state;
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-0123456789abcdef", 1);
    start(f, NULL, NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), GPC_ERR_AUTH);
    assert_int_equal(err.code, GPC_ERR_AUTH);
    assert_null(d);
    assert_string_equal(err.msg, "aws: DescribeRegions (us-east-1): AuthFailure: AWS was not "
                        "able to validate the provided access credentials (check the "
                        "credentials, their region and this machine's clock) (request id "
                        RID(01) ")");
    assert_non_null(strstr(err.msg, "AuthFailure"));
    assert_null(strstr(err.msg, "not-the-secret"));
    assert_null(strstr(err.msg, SECRET));
    /* EC2's <Code> and <RequestID>, the 401, and no retry to come */
    expect_remote(&err, 401, "AuthFailure", RID(01), 0);
    /* a 401 is not retried */
    assert_int_equal(log_count(f, NULL), 1);
    assert_int_equal(log_count(f, "\"status\": 401, \"error\": \"AuthFailure\""), 1);
}

static void test_throttled_twice_then_ok(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"DescribeRegions\", \"code\": \"RequestLimitExceeded\", "
             "\"times\": 2}]", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    assert_non_null(d);
    char v[64];
    /* the answer is the third request's */
    assert_string_equal(gpc_xml_text(xmlDocGetRootElement(d), "requestId", v, sizeof(v)),
                        RID(03));
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 3);
    assert_int_equal(log_count(f, "\"status\": 503, \"error\": \"RequestLimitExceeded\""), 2);
    assert_int_equal(log_count(f, "\"status\": 200, \"error\": null"), 1);
    char line[512];
    log_line(f, 2, line, sizeof(line));
    assert_non_null(strstr(line, "\"n\": 3,"));
    assert_non_null(strstr(line, "\"status\": 200"));
    assert_int_equal(err.code, GPC_OK);
    assert_int_equal(err.remote.set, 0);
    assert_int_equal(f->ec2.calls, 1);
}

static void test_internal_error_retried(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"DescribeRegions\", \"code\": \"InternalError\", \"times\": 1}]",
          NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 2);
    assert_int_equal(log_count(f, "\"status\": 500, \"error\": \"InternalError\""), 1);
}

static void test_capacity_not_retried(void **state)
{
    /* the fake's own InsufficientInstanceCapacity (a 500): launch at most 0 */
    fixture *f = *state;
    start(f, "[{\"action\": \"RunInstances\", \"capacity\": 0}]", NULL);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "ami-01000000000000002", "ImageId");
    gpc_ec2_param(&p, "p4d.24xlarge", "InstanceType");
    gpc_ec2_param(&p, "1", "MinCount");
    gpc_ec2_param(&p, "1", "MaxCount");
    gpc_ec2_param(&p, "us-east-1a", "Placement.AvailabilityZone");
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "RunInstances", &p, &d, &err), GPC_ERR_CAPACITY);
    gpc_ec2_params_free(&p);
    assert_null(d);
    assert_int_equal(err.code, GPC_ERR_CAPACITY);
    /* a 500, but the retry rule does not send it again: not retryable */
    expect_remote(&err, 500, "InsufficientInstanceCapacity", RID(01), 0);
    assert_string_equal(err.msg,
                        "aws: RunInstances (us-east-1): InsufficientInstanceCapacity: We "
                        "currently do not have sufficient p4d.24xlarge capacity in the "
                        "Availability Zone you requested (us-east-1a). Our system will be "
                        "working on provisioning additional capacity. You can currently get "
                        "p4d.24xlarge capacity by not specifying an Availability Zone in your "
                        "request or choosing us-east-1b, us-east-1c. (request id " RID(01) ")");
    /* exactly one request: a 500 of the capacity family is not hammered */
    assert_int_equal(log_count(f, NULL), 1);
    assert_int_equal(log_count(f, "\"status\": 500, \"error\": \"InsufficientInstanceCapacity\""),
                     1);
}

static void test_quota(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"DescribeRegions\", \"code\": \"VcpuLimitExceeded\", "
             "\"message\": \"You have requested more vCPU capacity than your current vCPU "
             "limit of 0 allows.\"}]", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), GPC_ERR_QUOTA);
    assert_null(d);
    expect_remote(&err, 400, "VcpuLimitExceeded", RID(01), 0);
    assert_string_equal(err.msg, "aws: DescribeRegions (us-east-1): VcpuLimitExceeded: You have "
                        "requested more vCPU capacity than your current vCPU limit of 0 "
                        "allows. (raise the quota in the Service Quotas console) (request id "
                        RID(01) ")");
    assert_int_equal(log_count(f, NULL), 1);
    assert_int_equal(log_count(f, "\"status\": 400, \"error\": \"VcpuLimitExceeded\""), 1);
}

/* gpc_ec2_call_many: every item gets its own answer and EC2 code, also
 * those after a failed one (regression: the items after the first failure
 * were left without answer, so a refused AssociateAddress hid the codes of
 * the others). */
static void test_call_many_every_item(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    gpc_ec2_params p[3];
    for (int i = 0; i < 3; i++)
        gpc_ec2_params_init(&p[i]);
    gpc_ec2_param(&p[0], "eipalloc-0ffffffffffffffff", "AllocationId");
    gpc_ec2_param(&p[0], "eni-0ffffffffffffffff", "NetworkInterfaceId");
    gpc_ec2_param(&p[1], "vpc-max-elastic-ips", "AttributeName.1");
    gpc_ec2_param(&p[2], "eipalloc-0fffffffffffffffe", "AllocationId");
    gpc_ec2_batch_item items[3] = {
        {.region = "us-east-1", .action = "AssociateAddress", .params = &p[0]},
        {.region = "us-east-1", .action = "DescribeAccountAttributes", .params = &p[1]},
        {.region = "us-east-1", .action = "ReleaseAddress", .params = &p[2]},
    };
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_ec2_call_many(&f->ec2, items, 3, &err), GPC_ERR_PROVIDER);
    assert_int_equal(items[0].rc, GPC_ERR_PROVIDER);
    expect_remote(&items[0].err, 400, "InvalidAllocationID.NotFound", items[0].err.remote.request_id,
                  0);
    assert_null(items[0].doc);
    const char *want0 = "aws: AssociateAddress (us-east-1): InvalidAllocationID.NotFound: The "
                        "allocation ID 'eipalloc-0ffffffffffffffff' does not exist (request id ";
    assert_int_equal(strncmp(items[0].err.msg, want0, strlen(want0)), 0);
    assert_int_equal(items[1].rc, 0);
    assert_int_equal(items[1].err.remote.set, 0);
    assert_non_null(items[1].doc);
    char v[64];
    xmlNode *it = gpc_xml_items(xmlDocGetRootElement(items[1].doc), "accountAttributeSet");
    assert_string_equal(gpc_xml_text(it, "attributeName", v, sizeof(v)), "vpc-max-elastic-ips");
    assert_string_equal(gpc_xml_text(gpc_xml_items(it, "attributeValueSet"), "attributeValue", v,
                                     sizeof(v)),
                        "5");
    assert_int_equal(items[2].rc, GPC_ERR_PROVIDER);
    expect_remote(&items[2].err, 400, "InvalidAllocationID.NotFound",
                  items[2].err.remote.request_id, 0);
    /* the requests went at once: ids 1 to 3 in some order, each in its message */
    for (int i = 0; i < 3; i += 2) {
        const char *rid = items[i].err.remote.request_id;
        assert_int_equal(strncmp(rid, RID(0), strlen(RID(0))), 0);
        assert_int_equal(strlen(rid), strlen(RID(01)));
        assert_non_null(strstr(items[i].err.msg, rid));
    }
    assert_string_not_equal(items[0].err.remote.request_id, items[2].err.remote.request_id);
    /* the first failure is the call's, with its remote details */
    assert_string_equal(err.msg, items[0].err.msg);
    expect_remote(&err, 400, "InvalidAllocationID.NotFound", items[0].err.remote.request_id, 0);
    for (int i = 0; i < 3; i++) {
        xmlFreeDoc(items[i].doc);
        gpc_ec2_params_free(&p[i]);
    }
    assert_int_equal(log_count(f, NULL), 3);
}

/* AllocateAddress has no idempotency token: a call whose reply was lost
 * may have been carried out, so it is not sent again, neither by the
 * retries nor by libcurl itself on a reused connection (regression: EC2
 * made a second Elastic IP).  An EC2 error that says it was not carried
 * out (throttling) is still retried. */
static void test_allocate_not_resent(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"AllocateAddress\", \"lose_reply\": true, \"times\": 2}, "
             "{\"action\": \"AllocateAddress\", \"code\": \"RequestLimitExceeded\", "
             "\"times\": 1}]", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0); /* a connection to reuse */
    xmlFreeDoc(d);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "vpc", "Domain");
    assert_int_equal(call(f, "AllocateAddress", &p, &d, &err), GPC_ERR_PROVIDER);
    assert_null(d);
    const char *head = "aws: AllocateAddress (us-east-1): POST ";
    const char *tail = " (not sent again: EC2 may have carried it out, and AllocateAddress has "
                       "no idempotency token)";
    assert_int_equal(strncmp(err.msg, head, strlen(head)), 0);
    assert_true(strlen(err.msg) > strlen(tail));
    assert_string_equal(err.msg + strlen(err.msg) - strlen(tail), tail);
    /* no reply, and not to be sent again */
    expect_remote(&err, 0, "", "", 0);
    assert_int_equal(log_count(f, "\"action\": \"AllocateAddress\""), 1);
    /* in a batch: the lost one once; the throttled one again (attempts 2) */
    gpc_ec2_batch_item items[2] = {
        {.region = "us-east-1", .action = "AllocateAddress", .params = &p},
        {.region = "us-east-1", .action = "AllocateAddress", .params = &p},
    };
    gpc_error_clear(&err);
    assert_int_equal(gpc_ec2_call_many(&f->ec2, items, 2, &err), GPC_ERR_PROVIDER);
    int lost = items[0].rc ? 0 : 1, won = 1 - lost;
    assert_int_equal(items[lost].rc, GPC_ERR_PROVIDER);
    expect_remote(&items[lost].err, 0, "", "", 0);
    assert_int_equal(items[lost].attempts, 1);
    assert_string_equal(items[lost].err.msg + strlen(items[lost].err.msg) - strlen(tail), tail);
    assert_int_equal(items[won].rc, 0);
    assert_int_equal(items[won].attempts, 2);
    assert_non_null(items[won].doc);
    for (int i = 0; i < 2; i++)
        xmlFreeDoc(items[i].doc);
    gpc_ec2_params_free(&p);
    /* 1 + 1 lost, 1 throttled + 1 carried out */
    assert_int_equal(log_count(f, "\"action\": \"AllocateAddress\""), 4);
    assert_int_equal(log_count(f, "\"fault\": \"lose_reply\""), 2);
}

/* UnauthorizedOperation names the IAM permission that is missing and the
 * policy file (regression: a destroy refused DescribeAddresses by a policy
 * from before Elastic IPs said only "docs/providers/aws.md lists the IAM
 * actions"). */
static void test_unauthorized_names_permission(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"DescribeAddresses\", \"code\": \"UnauthorizedOperation\"}]",
          NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeAddresses", NULL, &d, &err), GPC_ERR_AUTH);
    assert_null(d);
    assert_string_equal(err.msg, "aws: DescribeAddresses (us-east-1): UnauthorizedOperation: You "
                        "are not authorized to perform this operation. (the credentials lack "
                        "the IAM permission ec2:DescribeAddresses; "
                        "docs/providers/aws-iam-policy.json lists every action gpuctl needs) "
                        "(request id " RID(01) ")");
    assert_int_equal(log_count(f, NULL), 1);
}

static void test_not_found_keeps_code(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "i-0000000000000009f", "InstanceId.1");
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeInstances", &p, &d, &err), GPC_ERR_PROVIDER);
    gpc_ec2_params_free(&p);
    expect_remote(&err, 400, "InvalidInstanceID.NotFound", RID(01), 0);
    assert_string_equal(err.msg, "aws: DescribeInstances (us-east-1): InvalidInstanceID.NotFound: "
                        "The instance ID 'i-0000000000000009f' does not exist (request id "
                        RID(01) ")");
    assert_int_equal(log_count(f, NULL), 1);
    /* a successful call leaves its error without remote details */
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_int_equal(err.remote.set, 0);
    assert_string_equal(err.remote.code, "");
}

/* A gateway's 503 without an EC2 error document is retried until the
 * attempts run out: the error says so (retryable), with the HTTP status
 * and the last reply's x-amzn-RequestId, and no EC2 code. */
static void test_gateway_busy_retryable(void **state)
{
    fixture *f = *state;
    start(f, "[{\"action\": \"DescribeRegions\", \"body\": \"<html>busy</html>\", "
             "\"status\": 503, \"retry_after\": 0}]", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), GPC_ERR_PROVIDER);
    assert_null(d);
    assert_string_equal(err.msg, "aws: DescribeRegions (us-east-1): the endpoint answered HTTP "
                        "503 without an EC2 error 6 time(s) (Content-Type text/html)");
    expect_remote(&err, 503, "", RID(06), 1);
    assert_int_equal(log_count(f, "\"status\": 503"), 6);
}

static void test_clock_skew(void **state)
{
    /* the fake's clock is an hour ahead: RequestExpired, then one re-signed
     * retry with the offset from its Date header */
    fixture *f = *state;
    start(f, NULL, "--clock-offset", "3600", NULL);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    assert_non_null(d);
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 2);
    char line[1024];
    log_line(f, 0, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 400, \"error\": \"RequestExpired\""));
    log_line(f, 1, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 200, \"error\": null"));
    /* 3600 s, give or take the second boundaries of the Date header */
    assert_in_range(f->ec2.clock_offset_s, 3598, 3602);
    assert_int_equal(f->ec2.calls, 2);
    /* the offset stays: the next call goes through at once */
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 3);
}

/*
 * The signer and the skew reading use the clock (clock.h).  A fixed clock
 * at the time of the AWS documentation's SigV4 example (20150830T123600Z,
 * 1440938160) signs with that X-Amz-Date: botocore accepts the signature,
 * and the fake, whose clock is the real one, refuses the request as
 * expired.  The offset read from its Date header is the real time minus
 * the fixed clock's, and the re-signed request goes through.  When our
 * clock then falls an hour further behind, the next RequestExpired sets
 * the offset anew (not on top of the old one) and that call goes through.
 */
static void test_signs_with_the_clock(void **state)
{
    fixture *f = *state;
    fixed_clock_at(1440938160);
    start(f, NULL, NULL);
    int64_t behind = (int64_t)time(NULL) - 1440938160;
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 2);
    char line[2048];
    log_line(f, 0, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 400, \"error\": \"RequestExpired\""));
    assert_non_null(strstr(line, "\"auth\": {\"reason\": \"X-Amz-Date 20150830T123600Z is "
                                 "more than 15 minutes from the fake's clock\"}"));
    log_line(f, 1, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 200, \"error\": null"));
    /* give or take the second boundaries of the Date header */
    assert_in_range(f->ec2.clock_offset_s, behind - 2, behind + 2);

    fixed_clock_at(1440938160 - 3600);
    assert_int_equal(call(f, "DescribeRegions", NULL, &d, &err), 0);
    xmlFreeDoc(d);
    assert_int_equal(log_count(f, NULL), 4);
    log_line(f, 2, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 400, \"error\": \"RequestExpired\""));
    log_line(f, 3, line, sizeof(line));
    assert_non_null(strstr(line, "\"status\": 200, \"error\": null"));
    assert_in_range(f->ec2.clock_offset_s, behind + 3600 - 2, behind + 3600 + 2);
    assert_int_equal(f->ec2.calls, 4);
}

/* ---- parameters -------------------------------------------------------------- */

static void test_params_encoding(void **state)
{
    (void)state;
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "a b+c/d=e~f_g-h.i", "Name");
    gpc_ec2_param(&p, "v", "Filter.%u.Value.%zu", 3u, (size_t)2);
    gpc_ec2_param(&p, NULL, "Empty");
    const char *vals[] = {"abc", "x y"};
    gpc_ec2_filter(&p, 1, "tag:gpuctl:cluster-uid", vals, 2);
    assert_int_equal(p.failed, 0);
    assert_string_equal(gpc_buf_str(&p.body),
                        "Name=a%20b%2Bc%2Fd%3De~f_g-h.i&Filter.3.Value.2=v&Empty="
                        "&Filter.1.Name=tag%3Agpuctl%3Acluster-uid&Filter.1.Value.1=abc"
                        "&Filter.1.Value.2=x%20y");
    gpc_ec2_params_free(&p);

    /* a name past 255 characters fails the request before it is sent */
    gpc_ec2_params_init(&p);
    char longname[300];
    memset(longname, 'N', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    gpc_ec2_param(&p, "v", "%s", longname);
    assert_int_equal(p.failed, 1);
    gpc_ec2 e;
    memset(&e, 0, sizeof(e));
    xmlDoc *d = (xmlDoc *)&e; /* must be reset to NULL */
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_ec2_call(&e, "us-east-1", "DescribeRegions", &p, &d, &err),
                     GPC_ERR_NOMEM);
    assert_null(d);
    assert_string_equal(err.msg, "aws: DescribeRegions: request too large");
    gpc_ec2_params_free(&p);
}

static void test_param_base64_survives(void **state)
{
    fixture *f = *state;
    start(f, NULL, NULL);
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, "ut-key", "KeyName");
    gpc_ec2_param(&p, KEY_B64, "PublicKeyMaterial");
    assert_string_equal(gpc_buf_str(&p.body),
                        "KeyName=ut-key&PublicKeyMaterial=" KEY_B64_ENC);
    xmlDoc *d = NULL;
    gpc_error err;
    assert_int_equal(call(f, "ImportKeyPair", &p, &d, &err), 0);
    gpc_ec2_params_free(&p);
    char v[128];
    xmlNode *root = xmlDocGetRootElement(d);
    assert_string_equal((const char *)root->name, "ImportKeyPairResponse");
    assert_string_equal(gpc_xml_text(root, "keyName", v, sizeof(v)), "ut-key");
    /* the fingerprint of exactly that key */
    assert_string_equal(gpc_xml_text(root, "keyFingerprint", v, sizeof(v)), KEY_FP);
    assert_string_equal(gpc_xml_text(root, "keyPairId", v, sizeof(v)), "key-00000000000000001");
    xmlFreeDoc(d);
    /* the fake decoded the form value intact ('+' is no space) */
    assert_int_equal(log_count(f, "\"params\": {\"KeyName\": \"ut-key\", \"PublicKeyMaterial\": \""
                                  KEY_B64 "\"}, \"status\": 200"), 1);
    /* and keeps the line itself */
    char url[128];
    snprintf(url, sizeof(url), "%s/_fake/state", f->srv.base);
    gpc_http_request req = {.method = "GET", .url = url};
    gpc_http_opts o = {.what = "fake state", .max_attempts = 1};
    gpc_http_response r;
    gpc_error_clear(&err);
    assert_int_equal(gpc_http_send(&req, &o, &r, &err), 0);
    const char *s = gpc_buf_str(&r.body);
    assert_non_null(strstr(s, "\"name\": \"ut-key\""));
    assert_non_null(strstr(s, "\"fingerprint\": \"" KEY_FP "\""));
    assert_non_null(strstr(s, "\"type\": \"ed25519\""));
    assert_non_null(strstr(s, "\"public_key\": \"" KEY_LINE "\""));
    gpc_http_response_free(&r);
}

/* ---- error codes --------------------------------------------------------------- */

static void test_error_codes(void **state)
{
    (void)state;
    static const char *const auth[] = {
        "AuthFailure", "SignatureDoesNotMatch", "IncompleteSignature", "InvalidClientTokenId",
        "MissingAuthenticationToken", "UnauthorizedOperation", "OptInRequired", "Blocked",
        "PendingVerification", "ExpiredToken", "RequestExpired", "UnrecognizedClientException",
    };
    static const char *const capacity[] = {
        "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity", "InsufficientCapacityOnHost", "Unsupported",
    };
    static const char *const quota[] = {
        "InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotInstanceCountExceeded",
        "ResourceLimitExceeded", "PlacementGroupLimitExceeded", "SecurityGroupLimitExceeded",
        "KeyPairLimitExceeded",
    };
    static const char *const provider[] = {
        "InvalidParameterValue", "InvalidParameterCombination", "MissingParameter",
        "IdempotentParameterMismatch", "InvalidAMIID.NotFound", "InvalidInstanceID.NotFound",
        "InvalidGroup.Duplicate", "DryRunOperation", "RequestLimitExceeded", "InternalError",
        "authfailure", "", "Insufficient",
    };
    for (size_t i = 0; i < sizeof(auth) / sizeof(*auth); i++)
        assert_int_equal(gpc_ec2_error_code(auth[i]), GPC_ERR_AUTH);
    for (size_t i = 0; i < sizeof(capacity) / sizeof(*capacity); i++)
        assert_int_equal(gpc_ec2_error_code(capacity[i]), GPC_ERR_CAPACITY);
    for (size_t i = 0; i < sizeof(quota) / sizeof(*quota); i++)
        assert_int_equal(gpc_ec2_error_code(quota[i]), GPC_ERR_QUOTA);
    assert_int_equal(gpc_ec2_error_code("SpotMaxPriceTooLow"), GPC_ERR_BUDGET);
    for (size_t i = 0; i < sizeof(provider) / sizeof(*provider); i++)
        assert_int_equal(gpc_ec2_error_code(provider[i]), GPC_ERR_PROVIDER);

    /* retried: throttling and transient; never the capacity family or auth */
    assert_true(gpc_ec2_code_is_throttle("RequestLimitExceeded"));
    assert_true(gpc_ec2_code_is_throttle("Throttling"));
    assert_true(gpc_ec2_code_is_throttle("InternalError"));
    assert_true(gpc_ec2_code_is_throttle("Unavailable"));
    assert_true(gpc_ec2_code_is_throttle("ServiceUnavailable"));
    assert_false(gpc_ec2_code_is_throttle("InsufficientInstanceCapacity"));
    assert_false(gpc_ec2_code_is_throttle("AuthFailure"));
    assert_false(gpc_ec2_code_is_throttle("RequestExpired"));
    assert_false(gpc_ec2_code_is_throttle("VcpuLimitExceeded"));
    assert_false(gpc_ec2_code_is_throttle(""));
}

/* ---- XML ------------------------------------------------------------------------- */

static const char ec2_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">\n"
    "    <requestId>8f7724cf-496f-496e-8fe3-example</requestId>\n"
    "    <reservationSet>\n"
    "        <item>\n"
    "            <reservationId>r-1234567890abcdef0</reservationId>\n"
    "            <instancesSet>\n"
    "                <!-- a comment before the first item -->\n"
    "                <item>\n"
    "                    <instanceId>i-1234567890abcdef0</instanceId>\n"
    "                    <instanceState>\n"
    "                        <code>16</code>\n"
    "                        <name>running</name>\n"
    "                    </instanceState>\n"
    "                    <privateIpAddress>\n"
    "                        10.0.0.12\n"
    "                    </privateIpAddress>\n"
    "                    <tagSet><item><key>gpuctl:cluster</key><value>a&amp;b</value></item></tagSet>\n"
    "                </item>\n"
    "                <item>\n"
    "                    <instanceId>i-0598c7d356eba48d7</instanceId>\n"
    "                    <instanceState><code>0</code><name>pending</name></instanceState>\n"
    "                </item>\n"
    "                <notAnItem>x</notAnItem>\n"
    "                <item><instanceId>i-0third</instanceId></item>\n"
    "            </instancesSet>\n"
    "        </item>\n"
    "    </reservationSet>\n"
    "    <nextToken/>\n"
    "</DescribeInstancesResponse>\n";

static void test_xml_helpers(void **state)
{
    (void)state;
    xmlDoc *d = xmlReadMemory(ec2_doc, (int)strlen(ec2_doc), "t.xml", NULL, XML_PARSE_NONET);
    assert_non_null(d);
    xmlNode *root = xmlDocGetRootElement(d);
    assert_string_equal((const char *)root->ns->href, "http://ec2.amazonaws.com/doc/2016-11-15/");
    char v[64];

    assert_string_equal(gpc_xml_text(root, "requestId", v, sizeof(v)),
                        "8f7724cf-496f-496e-8fe3-example");
    xmlNode *res = gpc_xml_items(root, "reservationSet");
    assert_non_null(res);
    assert_string_equal((const char *)res->name, "item");
    assert_string_equal(gpc_xml_text(res, "reservationId", v, sizeof(v)), "r-1234567890abcdef0");

    /* the comment and blank text nodes are skipped */
    xmlNode *it = gpc_xml_items(res, "instancesSet");
    assert_non_null(it);
    assert_ptr_equal(it, gpc_xml_path(root, "reservationSet/item/instancesSet/item"));
    assert_string_equal(gpc_xml_text(it, "instanceId", v, sizeof(v)), "i-1234567890abcdef0");
    assert_string_equal(gpc_xml_text(it, "instanceState/name", v, sizeof(v)), "running");
    assert_string_equal(gpc_xml_text(it, "instanceState/code", v, sizeof(v)), "16");
    /* surrounding blanks trimmed */
    assert_string_equal(gpc_xml_text(it, "privateIpAddress", v, sizeof(v)), "10.0.0.12");
    /* entities decoded */
    assert_string_equal(gpc_xml_text(gpc_xml_items(it, "tagSet"), "value", v, sizeof(v)), "a&b");
    /* "" path: the node's own text */
    assert_string_equal(gpc_xml_text(gpc_xml_child(it, "instanceId"), "", v, sizeof(v)),
                        "i-1234567890abcdef0");

    /* siblings named like the node, skipping <notAnItem> */
    xmlNode *second = gpc_xml_next(it);
    assert_non_null(second);
    assert_string_equal(gpc_xml_text(second, "instanceId", v, sizeof(v)), "i-0598c7d356eba48d7");
    assert_string_equal(gpc_xml_text(second, "instanceState/name", v, sizeof(v)), "pending");
    xmlNode *third = gpc_xml_next(second);
    assert_non_null(third);
    assert_string_equal(gpc_xml_text(third, "instanceId", v, sizeof(v)), "i-0third");
    assert_null(gpc_xml_next(third));
    int n = 0;
    for (xmlNode *x = it; x; x = gpc_xml_next(x))
        n++;
    assert_int_equal(n, 3);

    /* absent: "" (and out returned), NULL */
    strcpy(v, "junk");
    assert_ptr_equal(gpc_xml_text(third, "instanceState/name", v, sizeof(v)), v);
    assert_string_equal(v, "");
    assert_string_equal(gpc_xml_text(root, "nextToken", v, sizeof(v)), "");
    assert_null(gpc_xml_path(root, "reservationSet/item/nope"));
    assert_null(gpc_xml_items(root, "nosuchSet"));
    assert_null(gpc_xml_items(root, "requestId")); /* no <item> below */
    assert_null(gpc_xml_child(NULL, "item"));
    assert_null(gpc_xml_next(NULL));
    assert_null(gpc_xml_path(NULL, "requestId"));
    assert_ptr_equal(gpc_xml_path(root, ""), root);
    /* a path element of 128 characters or more matches nothing */
    char longpath[200];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    assert_null(gpc_xml_path(root, longpath));

    /* truncation to the buffer; size 0 leaves it alone */
    char small[6];
    assert_string_equal(gpc_xml_text(it, "instanceId", small, sizeof(small)), "i-123");
    strcpy(small, "keep");
    assert_string_equal(gpc_xml_text(it, "instanceId", small, 0), "keep");
    xmlFreeDoc(d);

    /* an EC2 error document */
    static const char err_doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
        "<Code>InsufficientInstanceCapacity</Code><Message>no room</Message></Error>"
        "</Errors><RequestID>rid-1</RequestID></Response>";
    d = xmlReadMemory(err_doc, (int)strlen(err_doc), "e.xml", NULL, XML_PARSE_NONET);
    assert_non_null(d);
    root = xmlDocGetRootElement(d);
    assert_string_equal(gpc_xml_text(root, "Errors/Error/Code", v, sizeof(v)),
                        "InsufficientInstanceCapacity");
    assert_string_equal(gpc_xml_text(root, "Errors/Error/Message", v, sizeof(v)), "no room");
    assert_string_equal(gpc_xml_text(root, "RequestID", v, sizeof(v)), "rid-1");
    xmlFreeDoc(d);
}

/* The provider table's secret_words reach the HTTP helper's redaction
 * through the engine (gpc_providers_register_secrets, as a session opens):
 * the session token header is redacted, EC2's ClientToken, NextToken and
 * MetadataOptions.HttpTokens are shown, which the helper alone does not. */
static void test_secret_words(void **state)
{
    (void)state;
    const char form[] = "Action=RunInstances&ClientToken=c-1&NextToken=n-2"
                        "&MetadataOptions.HttpTokens=required&SessionToken=s";
    gpc_buf b;
    gpc_buf_init(&b, 4096);
    gpc_http_redact_form(form, strlen(form), &b);
    assert_string_equal(gpc_buf_str(&b), "Action=RunInstances&ClientToken=[redacted]"
                        "&NextToken=[redacted]&MetadataOptions.HttpTokens=[redacted]"
                        "&SessionToken=[redacted]");
    const gpc_provider *p = gpc_provider_find("aws");
    assert_non_null(p);
    assert_non_null(p->secret_words);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_providers_register_secrets(&err), 0);
    assert_int_equal(gpc_providers_register_secrets(&err), 0); /* idempotent */
    gpc_buf_reset(&b);
    gpc_http_redact_form(form, strlen(form), &b);
    assert_string_equal(gpc_buf_str(&b), "Action=RunInstances&ClientToken=c-1&NextToken=n-2"
                        "&MetadataOptions.HttpTokens=required&SessionToken=[redacted]");
    gpc_buf_reset(&b);
    gpc_http_redact_header("X-Amz-Security-Token: IQoJb3JpZ2luX2VjEXAMPLE", &b);
    assert_string_equal(gpc_buf_str(&b), "X-Amz-Security-Token: [redacted]");
    gpc_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_describe_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_token_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_twice_then_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_internal_error_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_many_every_item, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocate_not_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unauthorized_names_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_keeps_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gateway_busy_retryable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_skew, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signs_with_the_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params_encoding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_param_base64_survives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xml_helpers, setup, teardown),
        cmocka_unit_test(test_secret_words),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    xmlCleanupParser();
    return rc;
}
