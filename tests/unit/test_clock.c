/*
 * test_clock.c - the one clock (include/gpuctl/clock.h, src/helpers/clock.c):
 * the fixed clock's time and its sleeps (rounded up to whole seconds, at
 * once), replacing the clock and putting the system clock back, and the
 * system clock's sleep: it waits, a signal does not end it while the stop
 * flag is clear, and it ends early once a signal comes with the flag set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "gpuctl/clock.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int reset(void **state)
{
    (void)state;
    gpc_clock_set(NULL);
    return 0;
}

static void test_fixed_clock(void **state)
{
    (void)state;
    int64_t t = 1700000000;
    gpc_clock c = gpc_clock_fixed(&t);
    gpc_clock_set(&c);
    assert_ptr_equal(gpc_clock_get()->ctx, &t);
    assert_int_equal(gpc_now(), 1700000000);
    assert_int_equal(gpc_now(), 1700000000); /* it stands still */
    double t0 = mono_s();
    gpc_sleep(0.2, NULL); /* rounded up to a whole second */
    assert_int_equal(gpc_now(), 1700000001);
    gpc_sleep(2.0, NULL);
    assert_int_equal(t, 1700000003);
    gpc_sleep(2.5, NULL);
    assert_int_equal(gpc_now(), 1700000006);
    /* nothing for no time, a negative time or NaN */
    gpc_sleep(0, NULL);
    gpc_sleep(-3, NULL);
    gpc_sleep(NAN, NULL);
    assert_int_equal(gpc_now(), 1700000006);
    /* the stop flag changes nothing: it returns at once anyway */
    volatile sig_atomic_t stop = 1;
    gpc_sleep(60, &stop);
    assert_int_equal(gpc_now(), 1700000066);
    /* an absurd wait is bounded (1e15 s), not undefined */
    t = 0;
    gpc_sleep(1e300, NULL);
    assert_int_equal(gpc_now(), 1000000000000000LL);
    /* the test may move it itself, backwards too */
    t = 1234;
    assert_int_equal(gpc_now(), 1234);
    assert_true(mono_s() - t0 < 1.0); /* and none of it waited */
}

static int64_t calls_now(void *ctx)
{
    return ++*(int64_t *)ctx;
}

static void no_sleep(void *ctx, double s, const volatile sig_atomic_t *stop)
{
    (void)ctx, (void)s, (void)stop;
}

static void test_set_and_reset(void **state)
{
    (void)state;
    /* the system clock to begin with */
    assert_true(gpc_clock_get()->now == gpc_clock_system.now);
    assert_true(gpc_clock_get()->sleep == gpc_clock_system.sleep);
    int64_t before = (int64_t)time(NULL), now = gpc_now(), after = (int64_t)time(NULL);
    assert_true(before <= now && now <= after);

    /* a clock of one's own; the struct is copied, its ctx is not */
    int64_t n = 0;
    gpc_clock mine = {calls_now, no_sleep, &n};
    gpc_clock_set(&mine);
    mine.now = NULL; /* the copy in use does not change */
    assert_int_equal(gpc_now(), 1);
    assert_int_equal(gpc_now(), 2);
    assert_int_equal(n, 2);

    /* NULL puts the system clock back */
    gpc_clock_set(NULL);
    assert_true(gpc_clock_get()->now == gpc_clock_system.now);
    assert_ptr_equal(gpc_clock_get()->ctx, NULL);
    before = (int64_t)time(NULL);
    now = gpc_now();
    after = (int64_t)time(NULL);
    assert_true(before <= now && now <= after);
    assert_int_equal(n, 2);
}

static volatile sig_atomic_t stop_flag, alarms;

/* SIGALRM every 50 ms: the third one sets the stop flag. */
static void on_alarm(int sig)
{
    (void)sig;
    if (alarms < 3 && ++alarms == 3)
        stop_flag = 1;
}

static void alarm_every_50ms(int on)
{
    struct itimerval it;
    memset(&it, 0, sizeof(it));
    if (on) {
        it.it_value.tv_usec = 50000;
        it.it_interval.tv_usec = 50000;
    }
    assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void test_system_sleep(void **state)
{
    (void)state;
    /* it waits, NULL stop or not */
    double t0 = mono_s();
    gpc_sleep(0.1, NULL);
    assert_true(mono_s() - t0 >= 0.1);
    stop_flag = 0;
    t0 = mono_s();
    gpc_sleep(0.05, &stop_flag);
    assert_true(mono_s() - t0 >= 0.05);

    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);

    /* two signals with the flag clear go on waiting; the third sets it and
     * ends the wait at about 150 ms instead of 30 s */
    stop_flag = 0;
    alarms = 0;
    t0 = mono_s();
    alarm_every_50ms(1);
    gpc_sleep(30, &stop_flag);
    double took = mono_s() - t0;
    alarm_every_50ms(0);
    assert_int_equal(alarms, 3);
    assert_int_equal(stop_flag, 1);
    assert_true(took >= 0.14);
    assert_true(took < 10);

    /* without a stop flag, signals do not end it: 0.3 s in full */
    alarms = 0;
    t0 = mono_s();
    alarm_every_50ms(1);
    gpc_sleep(0.3, NULL);
    took = mono_s() - t0;
    alarm_every_50ms(0);
    assert_true(alarms >= 1);
    assert_true(took >= 0.3);

    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fixed_clock, reset),
        cmocka_unit_test_teardown(test_set_and_reset, reset),
        cmocka_unit_test_teardown(test_system_sleep, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
