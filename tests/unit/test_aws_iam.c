/*
 * test_aws_iam.c - the cluster's instance profile (providers/aws/iam.c):
 * its name within IAM's 64 characters, the store path of the checkpoints,
 * the exact inline policy for a bucket, and the provider data that
 * remembers the profile for destroy.  The IAM calls themselves, against the
 * fake IAM, are tests/e2e/test_aws_ckpt.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"

static void test_names(void **state)
{
    (void)state;
    char out[80];
    aws_iam_name("ck", "0123456789abcdef", out, sizeof(out));
    assert_string_equal(out, "gpuctl-ck-01234567");
    /* the longest cluster name (58 characters) is cut to 48: 64 in all */
    aws_iam_name("a234567890b234567890c234567890d234567890e234567890f2345678",
                 "0123456789abcdef", out, sizeof(out));
    assert_string_equal(out, "gpuctl-a234567890b234567890c234567890d234567890e2345678-01234567");
    assert_int_equal(strlen(out), 64);
    aws_iam_ckpt_path("ck", out, sizeof(out));
    assert_string_equal(out, "clusters/ck/checkpoints");
}

static void test_policy_exact(void **state)
{
    (void)state;
    char *doc = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(aws_iam_policy("gpuctl-123456789012-us-east-1", "clusters/ck/checkpoints",
                                    NULL, 0, &doc, &err), 0);
    assert_string_equal(doc,
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\",\"s3:PutObject\","
        "\"s3:AbortMultipartUpload\"],"
        "\"Resource\":\"arn:aws:s3:::gpuctl-123456789012-us-east-1/clusters/ck/checkpoints/*\"},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
        "\"Resource\":\"arn:aws:s3:::gpuctl-123456789012-us-east-1\","
        "\"Condition\":{\"StringLike\":{\"s3:prefix\":\"clusters/ck/checkpoints/*\"}}}]}");
    free(doc);
}

/* Data sets only (no checkpoint_dir): read-only, one pair of statements
 * per data set; a pushed one under data/NAME of the cluster's bucket, an
 * s3:// source where it is, a whole bucket as "*". */
static void test_policy_data_reads(void **state)
{
    (void)state;
    char *doc = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    aws_iam_read reads[] = {{"gpuctl-123456789012-us-east-1", "data/ds"},
                            {"public-sets", "imagenet/train"}, {"whole", ""}};
    assert_int_equal(aws_iam_policy("gpuctl-123456789012-us-east-1", NULL, reads, 3, &doc, &err),
                     0);
    assert_string_equal(doc,
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\"],"
        "\"Resource\":\"arn:aws:s3:::gpuctl-123456789012-us-east-1/data/ds/*\"},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
        "\"Resource\":\"arn:aws:s3:::gpuctl-123456789012-us-east-1\","
        "\"Condition\":{\"StringLike\":{\"s3:prefix\":\"data/ds/*\"}}},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\"],"
        "\"Resource\":\"arn:aws:s3:::public-sets/imagenet/train/*\"},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
        "\"Resource\":\"arn:aws:s3:::public-sets\","
        "\"Condition\":{\"StringLike\":{\"s3:prefix\":\"imagenet/train/*\"}}},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\"],"
        "\"Resource\":\"arn:aws:s3:::whole/*\"},"
        "{\"Effect\":\"Allow\",\"Action\":[\"s3:ListBucket\"],"
        "\"Resource\":\"arn:aws:s3:::whole\","
        "\"Condition\":{\"StringLike\":{\"s3:prefix\":\"*\"}}}]}");
    free(doc);
}

static void test_recorded(void **state)
{
    (void)state;
    char out[80];
    assert_int_equal(aws_iam_recorded("", out, sizeof(out)), 0);
    assert_string_equal(out, "");
    assert_int_equal(aws_iam_recorded(NULL, out, sizeof(out)), 0);
    assert_int_equal(aws_iam_recorded("{\"ec2_endpoint\":\"default\"}", out, sizeof(out)), 0);
    assert_int_equal(aws_iam_recorded("{\"ec2_endpoint\":\"default\",\"iam_profile\":"
                                      "\"gpuctl-ck-01234567\"}", out, sizeof(out)), 1);
    assert_string_equal(out, "gpuctl-ck-01234567");
    /* not JSON, or not a string: none */
    assert_int_equal(aws_iam_recorded("{\"iam_profile\":3}", out, sizeof(out)), 0);
    assert_int_equal(aws_iam_recorded("iam_profile", out, sizeof(out)), 0);
}

static void test_not_yet(void **state)
{
    (void)state;
    gpc_error e;
    gpc_error_clear(&e);
    gpc_fail(&e, GPC_ERR_PROVIDER, "aws: RunInstances (us-east-1): InvalidParameterValue: Value "
             "(gpuctl-ck-01234567) for parameter iamInstanceProfile.name is invalid. Invalid IAM "
             "Instance Profile name");
    gpc_error_remote(&e, 400, "InvalidParameterValue", "r1", 0);
    assert_int_equal(aws_iam_not_yet(&e), 1);
    gpc_error_clear(&e);
    gpc_fail(&e, GPC_ERR_PROVIDER, "aws: RunInstances (us-east-1): InvalidParameterValue: "
             "Invalid value 'x' for instanceType");
    gpc_error_remote(&e, 400, "InvalidParameterValue", "r2", 0);
    assert_int_equal(aws_iam_not_yet(&e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_policy_exact),
        cmocka_unit_test(test_policy_data_reads),
        cmocka_unit_test(test_recorded),
        cmocka_unit_test(test_not_yet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
