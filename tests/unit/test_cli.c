/*
 * test_cli.c - the CLI's option tables (one per command: the parser, -h
 * and the completions read them), duration values, did-you-mean limits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

/* Every option of every command has a name, help, and a long name and a
 * short letter that neither the command's table nor the global one uses
 * twice (getopt_long would take the first silently); ids are unique within
 * a table, since the handler tells options apart by them. */
static void test_option_tables(void **state)
{
    (void)state;
    size_t n_cmds = 0;
    for (const gpc_command *c = gpc_commands; c->name; c++, n_cmds++) {
        assert_non_null(c->summary);
        assert_non_null(c->usage);
        const gpc_option *tables[2] = {c->options, gpc_global_options};
        for (int t = 0; t < 2; t++)
            for (const gpc_option *p = tables[t]; p && p->name; p++) {
                assert_true(strlen(p->name) > 1);
                assert_non_null(p->help);
                assert_true(strlen(p->help) > 0);
                assert_null(strchr(p->help, '\n')); /* help wraps it */
                if (p->arg)
                    assert_null(strchr(p->arg, ' '));
                for (int u = t; u < 2; u++)
                    for (const gpc_option *q = u == t ? p + 1 : tables[u]; q && q->name; q++) {
                        assert_string_not_equal(p->name, q->name);
                        if (p->short_name)
                            assert_int_not_equal(p->short_name, q->short_name);
                        if (u == t)
                            assert_int_not_equal(p->id, q->id);
                    }
            }
    }
    assert_int_equal(n_cmds, 19); /* ... catalog, data, gc, check, ssh, exec, cost, watch ... */
}

static void test_opt_duration(void **state)
{
    (void)state;
    static const struct { const char *arg; double secs; } ok[] = {
        {"90s", 90}, {"5m", 300}, {"2h", 7200}, {"1h30m", 5400}, {"1d", 86400},
        {"3600", 3600}, {"0.05", 0.05}, {"0.5", 0.5}, {"1m", 60},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double v = -1;
        assert_int_equal(gpc_opt_duration("--poll-interval", ok[i].arg, 0.05, 86400, &v), 0);
        assert_true(v == ok[i].secs);
    }
    static const char *const bad[] = {"", "5x", "m", "-1", "0", "0.001", "2d", "1m1h", "inf", "nan"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = -1;
        assert_int_equal(gpc_opt_duration("--poll-interval", bad[i], 0.05, 86400, &v), -1);
        assert_true(v == -1); /* untouched */
    }
}

static void test_suggest_limit(void **state)
{
    (void)state;
    assert_int_equal(gpc_suggest_limit("aply"), 1);
    assert_int_equal(gpc_suggest_limit("dry-rn"), 2);
    assert_int_equal(gpc_suggest_limit("my-clustr12"), 3);
}

static void test_completion(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(gpc_completion_print("bash", f), 0);
    assert_int_equal(gpc_completion_print("fish", f), -1);
    fclose(f);
    assert_non_null(strstr(text, "\ncomplete -F _gpuctl gpuctl\n"));
    /* plan's options, from its table */
    assert_non_null(strstr(text, "\" -f --file --out --detailed-exitcode --live $globals\""));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_option_tables),
        cmocka_unit_test(test_opt_duration),
        cmocka_unit_test(test_suggest_limit),
        cmocka_unit_test(test_completion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
