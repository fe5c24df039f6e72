/* test_budget.c - price caps checked before anything is created. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "cluster.h"

static gpc_spec base(void)
{
    gpc_spec s;
    memset(&s, 0, sizeof(s));
    s.source = "job.yaml";
    s.name = "b";
    s.nodes = 4;
    return s;
}

static gpc_offer offer(double price)
{
    gpc_offer o;
    memset(&o, 0, sizeof(o));
    strcpy(o.provider, "aws");
    strcpy(o.instance_type, "p4d.24xlarge");
    o.price_hourly = price;
    return o;
}

static void test_no_caps(void **state)
{
    (void)state;
    gpc_spec s = base();
    gpc_offer o = offer(32.7726);
    assert_int_equal(gpc_budget_check(&s, &o, NULL), 0);
}

static void test_max_price(void **state)
{
    (void)state;
    gpc_spec s = base();
    s.spot.max_price = 15.0;
    gpc_offer o = offer(15.0);
    assert_int_equal(gpc_budget_check(&s, &o, NULL), 0); /* equal is within */
    o = offer(15.01);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_budget_check(&s, &o, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "job.yaml: spot.max_price is 15.0000 USD/hour, "
                                 "aws p4d.24xlarge costs 15.0100");
}

static void test_max_hourly(void **state)
{
    (void)state;
    gpc_spec s = base();
    s.budget.max_hourly = 100;
    gpc_offer o = offer(25.0);
    assert_int_equal(gpc_budget_check(&s, &o, NULL), 0); /* 4 x 25 = 100 */
    o = offer(25.5);
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_budget_check(&s, &o, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "job.yaml: budget.max_hourly is 100.00 USD/hour, "
                                 "4 x p4d.24xlarge at 25.5000 is 102.00");
}

static void test_max_total(void **state)
{
    (void)state;
    gpc_spec s = base();
    s.budget.max_total = 1000;
    gpc_offer o = offer(10.0);
    /* without max_duration the total cannot be projected: no refusal */
    assert_int_equal(gpc_budget_check(&s, &o, NULL), 0);
    s.lifecycle.max_duration_s = 25 * 3600; /* 4 x 10 x 25 h = 1000 */
    assert_int_equal(gpc_budget_check(&s, &o, NULL), 0);
    s.lifecycle.max_duration_s = 26 * 3600; /* 1040 */
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_budget_check(&s, &o, &err), GPC_ERR_BUDGET);
    assert_string_equal(err.msg, "job.yaml: budget.max_total is 1000.00 USD, 4 x p4d.24xlarge "
                                 "for lifecycle.max_duration (93600 s) can cost 1040.00");
    assert_int_equal(gpc_exit_status(GPC_ERR_BUDGET), 23);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_caps),
        cmocka_unit_test(test_max_price),
        cmocka_unit_test(test_max_hourly),
        cmocka_unit_test(test_max_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
