/*
 * test_aws_quota.c - which EC2 vCPU quota an instance type counts against
 * (providers/aws/quota.c, aws_vcpu_quota_of): the family letters of the
 * type's name, On-Demand and Spot, with the exact Service Quotas codes and
 * names (sources in quota.c's top comment).  The check itself, against the
 * fake's Service Quotas, is tests/e2e/test_aws_quota.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "aws/aws_internal.h"

/* "CODE|NAME|spot" of a type's quota, "none" without one. */
static const char *quota(const char *type, int spot)
{
    static char buf[256];
    const aws_vcpu_quota_def *q = aws_vcpu_quota_of(type, spot);
    if (!q)
        return "none";
    snprintf(buf, sizeof(buf), "%s|%s|%d", q->code, q->name, q->spot);
    return buf;
}

static void test_gpu_families_on_demand(void **state)
{
    (void)state;
    const char *p = "L-417A185B|Running On-Demand P instances|0";
    const char *g = "L-DB2E81BA|Running On-Demand G and VT instances|0";
    assert_string_equal(quota("p4d.24xlarge", 0), p);
    assert_string_equal(quota("p4de.24xlarge", 0), p);
    assert_string_equal(quota("p5.48xlarge", 0), p);
    assert_string_equal(quota("p5en.48xlarge", 0), p);
    assert_string_equal(quota("p3dn.24xlarge", 0), p);
    assert_string_equal(quota("p6-b200.48xlarge", 0), p);
    assert_string_equal(quota("g5.2xlarge", 0), g);
    assert_string_equal(quota("g4dn.xlarge", 0), g);
    assert_string_equal(quota("g6e.12xlarge", 0), g);
    assert_string_equal(quota("gr6.4xlarge", 0), g);
    assert_string_equal(quota("vt1.3xlarge", 0), g);
}

static void test_gpu_families_spot(void **state)
{
    (void)state;
    const char *p = "L-7212CCBC|All P Spot Instance Requests|1";
    const char *g = "L-3819A6DF|All G and VT Spot Instance Requests|1";
    assert_string_equal(quota("p4d.24xlarge", 1), p);
    assert_string_equal(quota("p5.48xlarge", 1), p);
    assert_string_equal(quota("g5.2xlarge", 1), g);
    assert_string_equal(quota("gr6.8xlarge", 1), g);
    assert_string_equal(quota("vt1.24xlarge", 1), g);
}

static void test_other_families(void **state)
{
    (void)state;
    const char *std = "L-1216C47A|Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances|0";
    const char *std_spot =
        "L-34B43A08|All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests|1";
    const char *std_types[] = {"a1.large", "c5.xlarge", "c6gn.16xlarge", "d3en.xlarge",
                               "h1.2xlarge", "i4i.large", "im4gn.large", "is4gen.large",
                               "m5.large", "m7i-flex.large", "r6i.large", "t3.micro",
                               "z1d.large"};
    for (size_t i = 0; i < sizeof(std_types) / sizeof(std_types[0]); i++) {
        assert_string_equal(quota(std_types[i], 0), std);
        assert_string_equal(quota(std_types[i], 1), std_spot);
    }
    assert_string_equal(quota("f1.2xlarge", 0), "L-74FC7D96|Running On-Demand F instances|0");
    assert_string_equal(quota("f1.2xlarge", 1), "L-88CF9481|All F Spot Instance Requests|1");
    assert_string_equal(quota("x2idn.16xlarge", 0), "L-7295265B|Running On-Demand X instances|0");
    assert_string_equal(quota("x1e.xlarge", 1), "L-E3A00192|All X Spot Instance Requests|1");
    assert_string_equal(quota("inf2.xlarge", 0), "L-1945791B|Running On-Demand Inf instances|0");
    assert_string_equal(quota("inf1.xlarge", 1), "L-B5D1601B|All Inf Spot Instance Requests|1");
    assert_string_equal(quota("trn1.32xlarge", 0), "L-2C3B7624|Running On-Demand Trn instances|0");
    assert_string_equal(quota("trn1n.32xlarge", 1), "L-6B0D517C|All Trn Spot Instance Requests|1");
    assert_string_equal(quota("dl1.24xlarge", 0), "L-6E869C2A|Running On-Demand DL instances|0");
    assert_string_equal(quota("dl2q.24xlarge", 1), "L-85EED4F7|All DL Spot Instance Requests|1");
    assert_string_equal(quota("u-6tb1.metal", 0),
                        "L-43DA4232|Running On-Demand High Memory instances|0");
    assert_string_equal(quota("hpc7g.16xlarge", 0), "L-F7808C92|Running On-Demand HPC instances|0");
}

/* No quota: High Memory and HPC are not sold as Spot; mac has no vCPU
 * quota of these; names that are no instance type's. */
static void test_no_quota(void **state)
{
    (void)state;
    assert_string_equal(quota("u-6tb1.metal", 1), "none");
    assert_string_equal(quota("hpc7g.16xlarge", 1), "none");
    assert_string_equal(quota("mac2.metal", 0), "none");
    assert_string_equal(quota("", 0), "none");
    assert_string_equal(quota("P4d.24xlarge", 0), "none");
    assert_string_equal(quota("p.large", 0), "none");
    assert_string_equal(quota("m-5.large", 0), "none");
    assert_string_equal(quota("qq1.large", 0), "none");
    assert_null(aws_vcpu_quota_of(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_families_on_demand),
        cmocka_unit_test(test_gpu_families_spot),
        cmocka_unit_test(test_other_families),
        cmocka_unit_test(test_no_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
