/*
 * test_engine_settings.c - a provider's named sections of the config file,
 * [NAME "SITE"] (provider.h gpc_site, docs/config.md), read by
 * gpc_provider_settings_get.  The real registry has no provider with
 * site_keys, so this runs against the test registry, where scripted_group
 * takes the keys login, partitions and account (tests/providers/scripted/).
 * test_core.c has the [provider "NAME"] sections.
 */
#include "engine_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuctl/util.h"

static char cfg_dir[64];
static char cfg_path[300];

static void write_config(const char *text)
{
    assert_int_equal(gpc_write_file_atomic(cfg_path, text, strlen(text), 0600, NULL), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(cfg_dir, sizeof(cfg_dir), "/tmp/gpuctl-sites-XXXXXX");
    assert_non_null(mkdtemp(cfg_dir));
    snprintf(cfg_path, sizeof(cfg_path), "%s/config", cfg_dir);
    const char *vars[] = {"GPUCTL_CONFIG_DIR", "XDG_CONFIG_HOME", "GPUCTL_SCRIPTED_GROUP_ENDPOINT",
                          "GPUCTL_SCRIPTED_GROUP_PROFILE", "GPUCTL_SCRIPTED_GROUP_REGION",
                          "GPUCTL_AWS_ENDPOINT", "GPUCTL_AWS_PROFILE", "GPUCTL_AWS_REGION"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    setenv("GPUCTL_CONFIG", cfg_path, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("GPUCTL_CONFIG");
    gpc_rm_rf(cfg_dir, NULL);
    return 0;
}

static int resolve(const char *name, gpc_provider_settings *ps, gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find(name);
    assert_non_null(p);
    gpc_error_clear(err);
    return gpc_provider_settings_get(NULL, p, "/state", ps, err);
}

static void expect_site_value(const gpc_site *site, size_t i, const char *key, const char *value,
                         int line)
{
    assert_true(i < site->n_values);
    assert_string_equal(site->values[i].key, key);
    assert_string_equal(site->values[i].value, value);
    assert_int_equal(site->values[i].line, line);
}

/* Sites of two names, one of them over two sections, next to [provider]
 * sections; each provider gets its own and only its own. */
static void test_sites(void **state)
{
    (void)state;
    write_config("[scripted_group \"lab\"]\n"            /* 1 */
                 "login = local\n"                        /* 2 */
                 "  partitions=gpu, gpu-long  \n"         /* 3 */
                 "\n"                                     /* 4 */
                 "[provider \"scripted_group\"]\n"        /* 5 */
                 "endpoint = http://127.0.0.1:9\n"        /* 6 */
                 "[ scripted_group  \"a.b_c-9\" ]\n"      /* 7 */
                 "; a comment\n"                          /* 8 */
                 "account = ml ; all of it\n"             /* 9 */
                 "[provider \"aws\"]\n"                   /* 10 */
                 "region = us-east-2\n"                   /* 11 */
                 "[scripted_group \"lab\"]\n"             /* 12 */
                 "account = ml\n");                       /* 13 */
    gpc_provider_settings ps;
    gpc_error err;
    assert_int_equal(resolve("scripted_group", &ps, &err), 0);
    assert_string_equal(ps.cfg.endpoint, "http://127.0.0.1:9");
    assert_null(ps.cfg.region);
    assert_string_equal(ps.cfg.config_path, cfg_path);
    assert_int_equal(ps.cfg.n_sites, 2);
    const gpc_site *lab = &ps.cfg.sites[0], *abc = &ps.cfg.sites[1];
    assert_string_equal(lab->name, "lab");
    assert_int_equal(lab->line, 1);
    assert_int_equal(lab->n_values, 3);
    expect_site_value(lab, 0, "login", "local", 2);
    expect_site_value(lab, 1, "partitions", "gpu, gpu-long", 3);
    expect_site_value(lab, 2, "account", "ml", 13);
    assert_string_equal(abc->name, "a.b_c-9");
    assert_int_equal(abc->line, 7);
    assert_int_equal(abc->n_values, 1);
    expect_site_value(abc, 0, "account", "ml ; all of it", 9);
    /* the key is the table's own string */
    assert_ptr_equal(lab->values[0].key, gpc_provider_find("scripted_group")->site_keys[0]);
    gpc_provider_settings_free(&ps);
    assert_null(ps.sites);
    assert_int_equal(ps.n_sites, 0);
    /* another provider: none of them, its own settings as before */
    assert_int_equal(resolve("aws", &ps, &err), 0);
    assert_string_equal(ps.cfg.region, "us-east-2");
    assert_null(ps.cfg.endpoint);
    assert_null(ps.cfg.sites);
    assert_int_equal(ps.cfg.n_sites, 0);
    assert_string_equal(ps.cfg.config_path, cfg_path);
    gpc_provider_settings_free(&ps);
}

/* A site with no keys is still a site; a name of 47 bytes (past inih's
 * 50 bytes of section) is whole; a UTF-8 byte order mark before the first
 * header is skipped. */
static void test_site_forms(void **state)
{
    (void)state;
    const char *name47 = "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abc";
    assert_int_equal(strlen(name47), 47);
    char text[400];
    snprintf(text, sizeof(text), "\xEF\xBB\xBF[scripted_group \"bom\"]\nlogin = h1\n"
             "[scripted_group \"empty\"]\n[scripted_group \"%s\"]\nlogin = h2\n", name47);
    write_config(text);
    gpc_provider_settings ps;
    gpc_error err;
    assert_int_equal(resolve("scripted_group", &ps, &err), 0);
    assert_int_equal(ps.cfg.n_sites, 3);
    assert_string_equal(ps.cfg.sites[0].name, "bom");
    assert_int_equal(ps.cfg.sites[0].line, 1);
    assert_int_equal(ps.cfg.sites[0].n_values, 1);
    expect_site_value(&ps.cfg.sites[0], 0, "login", "h1", 2);
    assert_string_equal(ps.cfg.sites[1].name, "empty");
    assert_int_equal(ps.cfg.sites[1].line, 3);
    assert_int_equal(ps.cfg.sites[1].n_values, 0);
    assert_string_equal(ps.cfg.sites[2].name, name47);
    assert_int_equal(ps.cfg.sites[2].line, 4);
    assert_int_equal(ps.cfg.sites[2].n_values, 1);
    expect_site_value(&ps.cfg.sites[2], 0, "login", "h2", 5);
    gpc_provider_settings_free(&ps);
    /* a BOM before a [provider] header */
    write_config("\xEF\xBB\xBF[provider \"aws\"]\nregion = r\n");
    assert_int_equal(resolve("aws", &ps, &err), 0);
    assert_string_equal(ps.cfg.region, "r");
    gpc_provider_settings_free(&ps);
    /* no file: no sites, and the path where it would be */
    unsetenv("GPUCTL_CONFIG");
    setenv("GPUCTL_CONFIG_DIR", cfg_dir, 1);
    unlink(cfg_path);
    assert_int_equal(resolve("scripted_group", &ps, &err), 0);
    assert_int_equal(ps.cfg.n_sites, 0);
    assert_null(ps.cfg.sites);
    assert_string_equal(ps.cfg.config_path, cfg_path);
    gpc_provider_settings_free(&ps);
    unsetenv("GPUCTL_CONFIG_DIR");
    setenv("GPUCTL_CONFIG", cfg_path, 1);
}

/* The whole file is checked whichever provider asks, with or without
 * site_keys. */
static void expect_error(const char *text, const char *msg_after_path)
{
    write_config(text);
    const char *provs[] = {"scripted_group", "aws"};
    for (int i = 0; i < 2; i++) {
        gpc_provider_settings ps;
        gpc_error err;
        assert_int_equal(resolve(provs[i], &ps, &err), GPC_ERR_USAGE);
        char want[GPC_ERROR_MSG_MAX];
        snprintf(want, sizeof(want), "%s%s", cfg_path, msg_after_path);
        assert_string_equal(err.msg, want);
        assert_null(ps.cfg.sites);
        assert_null(ps.sites);
        assert_int_equal(ps.n_sites, 0);
        assert_null(ps.config_path);
        gpc_provider_settings_free(&ps);
    }
}

static void test_site_errors(void **state)
{
    (void)state;
    /* sections of a provider without site_keys, or of none */
    const char *sections = " (sections are [provider \"NAME\"], [slurm \"NAME\"], [scripted_group \"NAME\"])";
    char msg[512];
    snprintf(msg, sizeof(msg), ":1: unknown section [aws \"x\"]%s", sections);
    expect_error("[aws \"x\"]\nlogin = a\n", msg);
    snprintf(msg, sizeof(msg), ":2: unknown section [scripted \"x\"]%s", sections);
    expect_error("\n[scripted \"x\"]\n", msg);
    snprintf(msg, sizeof(msg), ":1: unknown section [foo \"x\"]%s", sections);
    expect_error("[foo \"x\"]\n", msg);
    snprintf(msg, sizeof(msg), ":1: unknown section [scripted_group]%s", sections);
    expect_error("[scripted_group]\n", msg);
    snprintf(msg, sizeof(msg), ":1: unknown section [scripted_group\"lab\"]%s", sections);
    expect_error("[scripted_group\"lab\"]\n", msg);
    snprintf(msg, sizeof(msg), ":1: unknown section [scripted_group \"lab\" x]%s", sections);
    expect_error("[scripted_group \"lab\" x]\n", msg);
    /* the site's name */
    expect_error("[scripted_group \"a b\"]\n", ":1: the name in [scripted_group \"a b\"] is "
                 "not 1 to 47 letters, digits, '.', '_' and '-'");
    expect_error("[scripted_group \"lab\"]\nlogin = x\n[scripted_group \"a/b\"]\n",
                 ":3: the name in [scripted_group \"a/b\"] is not 1 to 47 letters, digits, '.', "
                 "'_' and '-'");
    expect_error("[scripted_group \"a\"b\"]\n", ":1: the name in [scripted_group \"a\"b\"] is "
                 "not 1 to 47 letters, digits, '.', '_' and '-'");
    expect_error("[scripted_group \"\"]\n", ":1: the name in [scripted_group \"\"] is not 1 to "
                 "47 letters, digits, '.', '_' and '-'");
    const char *name48 = "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcd";
    char text[400];
    snprintf(text, sizeof(text), "[scripted_group \"%s\"]\nlogin = a\n", name48);
    snprintf(msg, sizeof(msg), ":1: the name in [scripted_group \"%s\"] is not 1 to 47 letters, "
             "digits, '.', '_' and '-'", name48);
    expect_error(text, msg);
    /* its keys */
    expect_error("[scripted_group \"lab\"]\nlogin = a\nfoo = 1\n",
                 ":3: unknown key 'foo' in [scripted_group \"lab\"] (keys: login, partitions, "
                 "account)");
    expect_error("[scripted_group \"lab\"]\nendpoint = http://x\n",
                 ":2: unknown key 'endpoint' in [scripted_group \"lab\"] (keys: login, "
                 "partitions, account)");
    expect_error("[provider \"scripted_group\"]\nlogin = a\n",
                 ":2: unknown key 'login' in [provider \"scripted_group\"] (keys: endpoint, "
                 "profile, region)");
    expect_error("[scripted_group \"lab\"]\nlogin =\n",
                 ":2: login of [scripted_group \"lab\"] is empty");
    expect_error("[scripted_group \"lab\"]\nlogin = a\n[scripted_group \"other\"]\nlogin = b\n"
                 "[provider \"scripted_group\"]\nendpoint = http://x\n"
                 "[scripted_group \"lab\"]\naccount = ml\nlogin = c\n",
                 ":9: login of [scripted_group \"lab\"] is already set on line 2");
    expect_error("login = a\n[scripted_group \"lab\"]\n",
                 ":1: 'login' is outside a [provider \"NAME\"] section");
    /* the first error is the one told */
    expect_error("[scripted_group \"lab\"]\nlogin =\nfoo = 1\n",
                 ":2: login of [scripted_group \"lab\"] is empty");
    expect_error("[scripted_group \"lab\"]\nlogin\nfoo = 1\n",
                 ":2: expected '[provider \"NAME\"]' or 'key = value'");
    snprintf(msg, sizeof(msg), ":1: unknown section [aws \"x\"]%s", sections);
    expect_error("[aws \"x\"]\nfoo = 1\n[scripted_group \"lab\"]\nlogin =\n", msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sites, setup, teardown),
        cmocka_unit_test_setup_teardown(test_site_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_site_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
