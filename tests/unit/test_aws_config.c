/*
 * test_aws_config.c - gpc_aws_config_load(), gpc_aws_credentials(),
 * gpc_aws_ec2_endpoint(), gpc_aws_imds_region() and gpc_aws_creds_expiring()
 * against ~/.aws files in a temporary HOME, the environment (every AWS_*
 * variable is cleared before each test) and the fake IMDSv2 in
 * tests/fake/imds.py.
 *
 * The keys are the AWS documentation examples (access key id AKIDEXAMPLE,
 * secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY), with a suffix on the
 * access key id (AKIDEXAMPLECREDS, ...) where a test must tell sources
 * apart.  None of them is a real credential.
 *
 * Times: 1893456000 = 2030-01-01T00:00:00Z, 1927857906 =
 * 2031-02-03T04:05:06Z, 1577836800 = 2020-01-01T00:00:00Z (Python's
 * calendar.timegm).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake/aws_env.h"
#include "fake/fixed_clock.h"
#include "fake/spawn.h"
#include "aws/config.h"
#include "gpuctl/util.h"


#define AKID   "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define KEYS(id) "aws_access_key_id = " id "\naws_secret_access_key = " SECRET "\n"
#define HINT(p) "export temporary keys instead: eval \"$(aws configure export-credentials " \
                "--profile " p " --format env)\""
#define NO_CREDS_TAIL "; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the " \
                      "profile keys (aws configure)"

typedef struct fixture {
    char home[64];
    fake_server srv;
} fixture;

static int setup(void **state)
{
    aws_env_reset(); /* no AWS_* of this machine, no proxy, no IMDS */
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->srv.in_fd = f->srv.out_fd = -1;
    snprintf(f->home, sizeof(f->home), "/tmp/gpuctl-awscfg-XXXXXX");
    if (!mkdtemp(f->home))
        return -1;
    setenv("HOME", f->home, 1);
    char aws[128];
    snprintf(aws, sizeof(aws), "%s/.aws", f->home);
    if (mkdir(aws, 0700) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    fake_stop(&f->srv);
    gpc_rm_rf(f->home, NULL);
    free(f);
    aws_env_reset(); /* and the system clock */
    return 0;
}

/* Write HOME/rel (mode 0700 for scripts, harmless for the rest). */
static void put(const fixture *f, const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->home, rel);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(chmod(path, 0700), 0);
}

static void put_config(const fixture *f, const char *text)
{
    put(f, ".aws/config", text);
}

static void put_credentials(const fixture *f, const char *text)
{
    put(f, ".aws/credentials", text);
}

static void load(const gpc_aws_options *o, gpc_aws_config *cfg)
{
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_aws_config_load(o, cfg, &err);
    if (rc)
        print_message("unexpected: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static int load_err(const gpc_aws_options *o, gpc_error *err)
{
    gpc_aws_config cfg;
    gpc_error_clear(err);
    int rc = gpc_aws_config_load(o, &cfg, err);
    assert_null(cfg.config_file); /* zeroed on failure */
    gpc_aws_config_free(&cfg);
    return rc;
}

/* Load the configuration, then walk the credential chain. */
static int get_creds(const gpc_aws_options *o, gpc_aws_creds *c, gpc_error *err)
{
    gpc_aws_config cfg;
    gpc_error_clear(err);
    int rc = gpc_aws_config_load(o, &cfg, err);
    if (!rc)
        rc = gpc_aws_credentials(&cfg, o, c, err);
    else
        memset(c, 0, sizeof(*c));
    gpc_aws_config_free(&cfg);
    return rc;
}

static void expect_creds(const gpc_aws_options *o, const char *akid, const char *token,
                         int64_t expiration, const char *source)
{
    gpc_aws_creds c;
    gpc_error err;
    int rc = get_creds(o, &c, &err);
    if (rc)
        print_message("unexpected: %s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(c.access_key_id, akid);
    assert_string_equal(c.secret_access_key, SECRET);
    if (token)
        assert_string_equal(c.session_token, token);
    else
        assert_null(c.session_token);
    assert_int_equal(c.expiration, expiration);
    assert_string_equal(c.source, source);
    gpc_aws_creds_free(&c);
    assert_null(c.session_token);
    assert_string_equal(c.access_key_id, "");
    assert_string_equal(c.secret_access_key, "");
}

/* The chain fails with `code` and exactly `msg`, never naming the secret. */
static void expect_creds_error(const gpc_aws_options *o, int code, const char *msg)
{
    gpc_aws_creds c;
    gpc_error err;
    assert_int_equal(get_creds(o, &c, &err), code);
    assert_int_equal(err.code, code);
    assert_string_equal(err.msg, msg);
    assert_null(strstr(err.msg, SECRET));
    assert_null(c.session_token);
    assert_string_equal(c.access_key_id, "");
    assert_string_equal(c.secret_access_key, "");
    gpc_aws_creds_free(&c);
}

/* ---- environment and profiles ------------------------------------------ */

static void test_env_keys(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds(NULL, AKID, NULL, 0, "environment");

    setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLETOKEN", 1);
    expect_creds(NULL, AKID, "FwoGZXIvYXdzEXAMPLETOKEN", 0, "environment");
    setenv("AWS_SECURITY_TOKEN", "legacy-token", 1); /* botocore reads it first */
    expect_creds(NULL, AKID, "legacy-token", 0, "environment");
    setenv("AWS_SECURITY_TOKEN", "", 1); /* empty = unset */
    expect_creds(NULL, AKID, "FwoGZXIvYXdzEXAMPLETOKEN", 0, "environment");
    unsetenv("AWS_SESSION_TOKEN");
    setenv("AWS_SECURITY_TOKEN", "legacy-token", 1);

    setenv("AWS_CREDENTIAL_EXPIRATION", "2030-01-01T00:00:00Z", 1);
    expect_creds(NULL, AKID, "legacy-token", 1893456000, "environment");
    fixed_clock_at(1893456000);
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "the AWS credentials from environment expired at 2030-01-01T00:00:00Z");
    setenv("AWS_CREDENTIAL_EXPIRATION", "tomorrow", 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS_CREDENTIAL_EXPIRATION 'tomorrow' is not an "
                       "ISO 8601 time such as 2026-01-01T12:00:00Z");
}

static void test_env_partial(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY "
                       "is not; set both, or unset AWS_ACCESS_KEY_ID to use the profile");
    unsetenv("AWS_ACCESS_KEY_ID");
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID "
                       "is not; set both, or unset AWS_SECRET_ACCESS_KEY to use the profile");
    assert_int_equal(gpc_exit_status(GPC_ERR_AUTH), 20);
}

static void test_profile_selection(void **state)
{
    fixture *f = *state;
    put_credentials(f, "[default]\n" KEYS("AKIDEXAMPLEDEFAULT")
                       "[dev]\n" KEYS("AKIDEXAMPLEDEV")
                       "[ci]\n" KEYS("AKIDEXAMPLECI"));
    gpc_aws_config cfg;
    load(NULL, &cfg);
    assert_string_equal(cfg.profile, "default");
    assert_string_equal(cfg.profile_from, "default");
    gpc_aws_config_free(&cfg);
    expect_creds(NULL, "AKIDEXAMPLEDEFAULT", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile default]");

    setenv("AWS_DEFAULT_PROFILE", "ci", 1);
    load(NULL, &cfg);
    assert_string_equal(cfg.profile, "ci");
    assert_string_equal(cfg.profile_from, "AWS_DEFAULT_PROFILE");
    gpc_aws_config_free(&cfg);
    expect_creds(NULL, "AKIDEXAMPLECI", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile ci]");

    setenv("AWS_PROFILE", "dev", 1); /* beats AWS_DEFAULT_PROFILE */
    load(NULL, &cfg);
    assert_string_equal(cfg.profile, "dev");
    assert_string_equal(cfg.profile_from, "AWS_PROFILE");
    gpc_aws_config_free(&cfg);
    expect_creds(NULL, "AKIDEXAMPLEDEV", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile dev]");

    gpc_aws_options o = {.profile = "ci"}; /* --profile beats both */
    load(&o, &cfg);
    assert_string_equal(cfg.profile, "ci");
    assert_string_equal(cfg.profile_from, "--profile");
    gpc_aws_config_free(&cfg);
    expect_creds(&o, "AKIDEXAMPLECI", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile ci]");

    /* Env keys win over a profile from AWS_PROFILE ... */
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds(NULL, "AKIDEXAMPLEENV", NULL, 0, "environment");
    /* ... but not over one from --profile, which skips them altogether. */
    expect_creds(&o, "AKIDEXAMPLECI", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile ci]");
    unsetenv("AWS_SECRET_ACCESS_KEY"); /* partial env keys do not matter then */
    expect_creds(&o, "AKIDEXAMPLECI", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile ci]");
}

static void test_profile_not_found(void **state)
{
    fixture *f = *state;
    put_credentials(f, "[default]\n" KEYS(AKID));
    put_config(f, "[nope]\nregion = us-east-1\n"); /* a bare [nope] is no profile */
    setenv("AWS_PROFILE", "nope", 1);
    gpc_aws_config cfg;
    load(NULL, &cfg); /* not an error here: no region, that is all */
    assert_string_equal(cfg.region, "");
    assert_string_equal(cfg.region_from, "");
    gpc_aws_config_free(&cfg);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS profile 'nope' not found in ~/.aws/config or "
                       "~/.aws/credentials (named by AWS_PROFILE)");
    /* The CLI refuses a missing named profile even when env keys are set. */
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS profile 'nope' not found in ~/.aws/config or "
                       "~/.aws/credentials (named by AWS_PROFILE)");
    unsetenv("AWS_PROFILE");
    char path[128];
    snprintf(path, sizeof(path), "%s/.aws/credentials", f->home);
    assert_int_equal(unlink(path), 0);
    gpc_aws_options o = {.profile = "default"};
    expect_creds_error(&o, GPC_ERR_AUTH, "AWS profile 'default' not found in ~/.aws/config or "
                       "~/.aws/credentials (named by --profile)");
}

static void test_credentials_file_beats_config(void **state)
{
    fixture *f = *state;
    put_config(f, "[default]\n" KEYS("AKIDEXAMPLECONFIG"));
    put_credentials(f, "[default]\n" KEYS("AKIDEXAMPLECREDS")
                       "aws_session_token = FwoGZXIvYXdzEXAMPLETOKEN\n");
    expect_creds(NULL, "AKIDEXAMPLECREDS", "FwoGZXIvYXdzEXAMPLETOKEN", 0,
                 "shared credentials file ~/.aws/credentials [profile default]");
    put_credentials(f, "[other]\n" KEYS("AKIDEXAMPLEOTHER"));
    expect_creds(NULL, "AKIDEXAMPLECONFIG", NULL, 0, "config file [profile default]");
    /* One key without the other is an error, not a fall-through. */
    put_credentials(f, "[default]\n\naws_access_key_id = AKIDEXAMPLECREDS\n");
    expect_creds_error(NULL, GPC_ERR_AUTH, "~/.aws/credentials:3: [default] has "
                       "aws_access_key_id but no aws_secret_access_key");
    put_credentials(f, "");
    put_config(f, "[profile dev]\naws_secret_access_key = " SECRET "\n");
    gpc_aws_options o = {.profile = "dev"};
    expect_creds_error(&o, GPC_ERR_AUTH, "~/.aws/config:2: [profile dev] has "
                       "aws_secret_access_key but no aws_access_key_id");
}

static void test_config_profile_sections(void **state)
{
    fixture *f = *state;
    put_config(f, "[dev]\nregion = eu-west-1\n" KEYS("AKIDEXAMPLEBARE")
                  "[profile prod]\nregion = us-west-2\n" KEYS("AKIDEXAMPLEPROD")
                  "[profile   spaced  ]\nregion = eu-south-1\n"
                  "[ profile leading]\nregion = eu-south-2\n"
                  "[profile two words]\nregion = eu-south-2\n"
                  "[ default ]\nregion = eu-south-2\n"
                  "[profile default]\nregion = ap-south-1\n");
    gpc_aws_options o = {.profile = "dev"};
    gpc_aws_config cfg;
    load(&o, &cfg);
    assert_string_equal(cfg.region, "");
    gpc_aws_config_free(&cfg);
    expect_creds_error(&o, GPC_ERR_AUTH, "AWS profile 'dev' not found in ~/.aws/config or "
                       "~/.aws/credentials (named by --profile)");

    o.profile = "prod";
    load(&o, &cfg);
    assert_string_equal(cfg.region, "us-west-2");
    assert_string_equal(cfg.region_from, "config file [profile prod]");
    gpc_aws_config_free(&cfg);
    expect_creds(&o, "AKIDEXAMPLEPROD", NULL, 0, "config file [profile prod]");

    o.profile = "spaced";
    load(&o, &cfg);
    assert_string_equal(cfg.region, "eu-south-1");
    gpc_aws_config_free(&cfg);

    /* As botocore: "profile" must come first, then exactly one word; the
     * text between the brackets is not trimmed ("[ default ]" is no
     * profile either). */
    o.profile = "leading";
    load(&o, &cfg);
    assert_string_equal(cfg.region, "");
    gpc_aws_config_free(&cfg);
    o.profile = "two words";
    load(&o, &cfg);
    assert_string_equal(cfg.region, "");
    gpc_aws_config_free(&cfg);

    load(NULL, &cfg); /* [profile default] names the default profile */
    assert_string_equal(cfg.region, "ap-south-1");
    assert_string_equal(cfg.region_from, "config file [profile default]");
    gpc_aws_config_free(&cfg);
}

static void test_unsupported_features(void **state)
{
    fixture *f = *state;
    put_config(f, "[profile assume]\nrole_arn = arn:aws:iam::123456789012:role/gpuctl\n"
                  "source_profile = default\n"
                  "[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\n"
                  "sso_role_name = Admin\n"
                  "[sso-session corp]\nsso_start_url = https://example.awsapps.com/start\n"
                  "sso_region = us-east-1\n"
                  "[profile web]\nrole_arn = arn:aws:iam::123456789012:role/gpuctl\n"
                  "web_identity_token_file = /var/run/token\n"
                  "[profile login]\nlogin_session = arn:aws:iam::123456789012:user/me\n");
    put_credentials(f, "[source]\n" KEYS(AKID));
    gpc_aws_options o = {.profile = "assume"};
    expect_creds_error(&o, GPC_ERR_AUTH, "profile 'assume' uses role_arn (AssumeRole), which "
                       "gpuctl does not support yet; " HINT("assume"));
    o.profile = "sso";
    expect_creds_error(&o, GPC_ERR_AUTH, "profile 'sso' uses sso_session (IAM Identity Center), "
                       "which gpuctl does not support yet; " HINT("sso"));
    o.profile = "web";
    expect_creds_error(&o, GPC_ERR_AUTH, "profile 'web' uses web_identity_token_file "
                       "(AssumeRoleWithWebIdentity), which gpuctl does not support yet; "
                       HINT("web"));
    o.profile = "login";
    expect_creds_error(&o, GPC_ERR_AUTH, "profile 'login' uses login_session (aws login), which "
                       "gpuctl does not support yet; " HINT("login"));

    /* Env keys come first in the chain (without --profile). */
    setenv("AWS_PROFILE", "assume", 1);
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds(NULL, AKID, NULL, 0, "environment");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");

    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/gpuctl", 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS_WEB_IDENTITY_TOKEN_FILE is set "
                       "(AssumeRoleWithWebIdentity), which gpuctl does not support yet; "
                       HINT("default"));
    o.profile = "source"; /* --profile ignores the variables, as botocore does */
    expect_creds(&o, AKID, NULL, 0, "shared credentials file ~/.aws/credentials [profile source]");
    unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");

    setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/x", 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is set "
                       "(container credentials), which gpuctl does not support yet; "
                       HINT("default"));
    expect_creds(&o, AKID, NULL, 0, "shared credentials file ~/.aws/credentials [profile source]");
}

/* ---- credential_process ------------------------------------------------- */

#define PROC_JSON(id, secret, extra) \
    "{\"Version\": 1, \"AccessKeyId\": \"" id "\", \"SecretAccessKey\": \"" secret "\"" extra "}"

/* HOME/proc.sh prints `json` and exits with `status`. */
static void put_process(const fixture *f, const char *json, int status)
{
    char script[2048];
    snprintf(script, sizeof(script), "#!/bin/sh\ncat <<'EOF'\n%s\nEOF\nexit %d\n", json, status);
    put(f, "proc.sh", script);
}

static void test_credential_process_ok(void **state)
{
    fixture *f = *state;
    char config[512];
    snprintf(config, sizeof(config), "[default]\ncredential_process = /bin/sh %s/proc.sh "
             "--profile 'some arg'\n" KEYS("AKIDEXAMPLECONFIG"), f->home);
    put_config(f, config);
    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ", \"SessionToken\": "
                             "\"FwoGZXIvYXdzEXAMPLEPROC\", \"Expiration\": "
                             "\"2030-01-01T00:00:00Z\""), 0);
    /* botocore's order: credential_process before the config file's keys */
    expect_creds(NULL, "AKIDEXAMPLEPROC", "FwoGZXIvYXdzEXAMPLEPROC", 1893456000,
                 "credential_process [profile default]");
    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ", \"Expiration\": "
                             "\"2030-01-01T02:00:00.250+02:00\""), 0);
    expect_creds(NULL, "AKIDEXAMPLEPROC", NULL, 1893456000,
                 "credential_process [profile default]");
    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ""), 0);
    expect_creds(NULL, "AKIDEXAMPLEPROC", NULL, 0, "credential_process [profile default]");
    /* ... and after the shared credentials file. */
    put_credentials(f, "[default]\n" KEYS("AKIDEXAMPLECREDS"));
    expect_creds(NULL, "AKIDEXAMPLECREDS", NULL, 0,
                 "shared credentials file ~/.aws/credentials [profile default]");
}

static void test_credential_process_failures(void **state)
{
    fixture *f = *state;
    char config[512];
    snprintf(config, sizeof(config), "[default]\ncredential_process = %s/proc.sh\n", f->home);
    put_config(f, config);

    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ""), 3);
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "credential_process for profile 'default' exited with status 3");
    put_process(f, "not JSON at all: " SECRET, 0);
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "credential_process for profile 'default' did not print a JSON object");
    put_process(f, "{\"Version\": 2, \"AccessKeyId\": \"AKIDEXAMPLE\", \"SecretAccessKey\": \""
                   SECRET "\"}", 0);
    expect_creds_error(NULL, GPC_ERR_AUTH, "credential_process for profile 'default' printed "
                       "JSON without \"Version\": 1");
    put_process(f, "{\"Version\": 1, \"AccessKeyId\": \"AKIDEXAMPLE\"}", 0);
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "credential_process for profile 'default' printed no SecretAccessKey");
    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ", \"Expiration\": \"" SECRET "\""), 0);
    expect_creds_error(NULL, GPC_ERR_AUTH, "credential_process for profile 'default' printed "
                       "an Expiration that is not an ISO 8601 time");
    put_process(f, PROC_JSON("AKIDEXAMPLEPROC", SECRET, ", \"Expiration\": "
                             "\"2020-01-01T00:00:00Z\""), 0);
    expect_creds_error(NULL, GPC_ERR_AUTH, "the AWS credentials from credential_process "
                       "[profile default] expired at 2020-01-01T00:00:00Z");
    put_config(f, "[default]\ncredential_process = kill -9 $$\n");
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "credential_process for profile 'default' was killed by signal 9");
    put_config(f, "[default]\ncredential_process = head -c 70000 /dev/zero\n");
    expect_creds_error(NULL, GPC_ERR_AUTH,
                       "credential_process for profile 'default' printed more than 65536 bytes");
}

/* ---- region and endpoint ------------------------------------------------ */

static void expect_region(const gpc_aws_options *o, const char *region, const char *from)
{
    gpc_aws_config cfg;
    load(o, &cfg);
    assert_string_equal(cfg.region, region);
    assert_string_equal(cfg.region_from, from);
    gpc_aws_config_free(&cfg);
}

static void test_region_precedence(void **state)
{
    fixture *f = *state;
    expect_region(NULL, "", "");
    put_config(f, "[default]\nregion = eu-north-1\n");
    expect_region(NULL, "eu-north-1", "config file [profile default]");
    setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
    expect_region(NULL, "eu-west-3", "AWS_DEFAULT_REGION");
    setenv("AWS_REGION", "us-east-2", 1);
    expect_region(NULL, "us-east-2", "AWS_REGION");
    gpc_aws_options o = {.region = "ap-northeast-1"};
    expect_region(&o, "ap-northeast-1", "--region");

    /* botocore overlays the credentials file's [default] on the profile. */
    unsetenv("AWS_REGION");
    unsetenv("AWS_DEFAULT_REGION");
    put_credentials(f, "[default]\nregion = sa-east-1\n");
    expect_region(NULL, "sa-east-1", "credentials file [profile default]");
}

static void expect_endpoint(const gpc_aws_options *o, const char *url, const char *from)
{
    gpc_aws_config cfg;
    load(o, &cfg);
    if (url)
        assert_string_equal(cfg.ec2_endpoint, url);
    else
        assert_null(cfg.ec2_endpoint);
    assert_string_equal(cfg.endpoint_from, from);
    gpc_aws_config_free(&cfg);
}

static void test_endpoint_precedence(void **state)
{
    fixture *f = *state;
    put_config(f, "[default]\nendpoint_url = http://profile.example:1\nservices = local\n"
                  "[profile plain]\nendpoint_url = http://profile.example:1\n"
                  "[profile ignoring]\nendpoint_url = http://profile.example:1\n"
                  "ignore_configured_endpoint_urls = TRUE\n"
                  "[services local]\nec2 =\n  endpoint_url = http://services.example:2\n");
    expect_endpoint(NULL, "http://services.example:2", "config file [services local]");
    gpc_aws_options plain = {.profile = "plain"};
    expect_endpoint(&plain, "http://profile.example:1", "config file [profile plain]");
    setenv("AWS_ENDPOINT_URL", "http://global.example:3", 1);
    expect_endpoint(NULL, "http://global.example:3", "AWS_ENDPOINT_URL");
    setenv("AWS_ENDPOINT_URL_EC2", "http://ec2.example:4/prefix", 1);
    expect_endpoint(NULL, "http://ec2.example:4/prefix", "AWS_ENDPOINT_URL_EC2");
    gpc_aws_options flag = {.endpoint = "https://flag.example:5"};
    expect_endpoint(&flag, "https://flag.example:5", "--endpoint");

    /* The ignore switch drops all but the flag. */
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    expect_endpoint(NULL, NULL, "");
    expect_endpoint(&flag, "https://flag.example:5", "--endpoint");
    gpc_aws_options ignoring = {.profile = "ignoring"};
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    expect_endpoint(&ignoring, NULL, ""); /* from the profile */
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false", 1); /* the variable wins */
    expect_endpoint(&ignoring, "http://ec2.example:4/prefix", "AWS_ENDPOINT_URL_EC2");
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");

    /* Not URLs. */
    gpc_error err;
    gpc_aws_options bad = {.endpoint = "ftp://user:pw@flag.example/x"};
    assert_int_equal(load_err(&bad, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "--endpoint 'ftp://flag.example/x' is not an http:// or "
                                 "https:// URL");
    setenv("AWS_ENDPOINT_URL_EC2", "localhost:4566", 1);
    assert_int_equal(load_err(NULL, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "AWS_ENDPOINT_URL_EC2 'localhost:4566' is not an http:// or "
                                 "https:// URL");
    unsetenv("AWS_ENDPOINT_URL_EC2");
    unsetenv("AWS_ENDPOINT_URL");
    put_config(f, "[default]\n\nendpoint_url = localhost:4566\n");
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/config:3: endpoint_url 'localhost:4566' is not an "
                                 "http:// or https:// URL");
    put_config(f, "[default]\nservices = nope\n[services other]\nec2 =\n"
                  "  endpoint_url = http://x\n");
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/config:2: profile 'default' uses services 'nope', but "
                                 "~/.aws/config has no [services nope] section");
}

static void test_services_syntax(void **state)
{
    fixture *f = *state;
    put_config(f, "# a comment\n"
                  "; another\n"
                  "[default]\n"
                  "region = us-east-1 ; not a comment for botocore\n"
                  "s3 =\n"
                  "    max_concurrent_requests = 20\n"
                  "    addressing_style = path\n"
                  "services = dev-endpoints\n"
                  "\n"
                  "[services dev-endpoints]\n"
                  "s3 =\n"
                  "  endpoint_url = http://s3.local:9000\n"
                  "ec2 =\n"
                  "\n"
                  "  # a comment inside\n"
                  "\tendpoint_url=http://localhost:4566/ec2\n"
                  "sts =\n"
                  "  endpoint_url = http://sts.local\n");
    gpc_aws_config cfg;
    load(NULL, &cfg);
    assert_string_equal(cfg.region, "us-east-1 ; not a comment for botocore");
    assert_string_equal(cfg.ec2_endpoint, "http://localhost:4566/ec2");
    assert_string_equal(cfg.endpoint_from, "config file [services dev-endpoints]");
    /* The other services' sub-sections are theirs. */
    assert_string_equal(cfg.svc_endpoint[GPC_AWS_S3], "http://s3.local:9000");
    assert_string_equal(cfg.svc_endpoint_from[GPC_AWS_S3], "config file [services dev-endpoints]");
    assert_string_equal(cfg.svc_endpoint[GPC_AWS_STS], "http://sts.local");
    assert_null(cfg.svc_endpoint[GPC_AWS_PRICING]);
    assert_null(cfg.svc_endpoint[GPC_AWS_IAM]);
    gpc_aws_config_free(&cfg);

    /* CRLF line ends; an `ec2 =` without endpoint_url falls back to the
     * profile's own endpoint_url. */
    put_config(f, "[default]\r\nservices = s\r\nendpoint_url = http://profile:1\r\n"
                  "[services s]\r\nec2 =\r\n  region = x\r\n");
    load(NULL, &cfg);
    assert_string_equal(cfg.ec2_endpoint, "http://profile:1");
    assert_string_equal(cfg.endpoint_from, "config file [profile default]");
    gpc_aws_config_free(&cfg);

    /* A sub-section line needs '='. */
    put_config(f, "[services s]\nec2 =\n  endpoint_url: http://x\n");
    gpc_error err;
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/config:3: expected 'name = value' in the 'ec2' "
                                 "sub-section");
}

static void test_ec2_endpoint(void **state)
{
    (void)state;
    char *url = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_ec2_endpoint(NULL, "us-east-1", &url, &err), 0);
    assert_string_equal(url, "https://ec2.us-east-1.amazonaws.com");
    free(url);
    assert_int_equal(gpc_aws_ec2_endpoint(NULL, "cn-north-1", &url, &err), 0);
    assert_string_equal(url, "https://ec2.cn-north-1.amazonaws.com.cn");
    free(url);
    gpc_aws_config cfg = {.ec2_endpoint = "http://localhost:4566"};
    assert_int_equal(gpc_aws_ec2_endpoint(&cfg, "eu-west-1", &url, &err), 0);
    assert_string_equal(url, "http://localhost:4566");
    free(url);

    static const char *const bad[] = {"", "US-EAST-1", "us east 1", "-us-east-1", "us-east-1-",
                                      "us-east-1.evil.com/x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char want[256];
        snprintf(want, sizeof(want), "invalid AWS region '%s' (expected lower-case letters, "
                 "digits and '-', e.g. us-east-1)", bad[i]);
        gpc_error_clear(&err);
        url = (char *)1;
        assert_int_equal(gpc_aws_ec2_endpoint(&cfg, bad[i], &url, &err), GPC_ERR_USAGE);
        assert_null(url);
        assert_string_equal(err.msg, want);
    }
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_ec2_endpoint(NULL, NULL, &url, &err), GPC_ERR_USAGE);
}

/* Every other service: its public endpoint and signing region (AWS
 * General Reference, "Service endpoints and quotas"), and the overrides in
 * the SDKs' order, gpuctl's --endpoint (EC2's) not among them. */
static void test_service_endpoint(void **state)
{
    (void)state;
    static const struct {
        gpc_aws_service svc;
        const char *region, *url, *sign;
    } want[] = {
        {GPC_AWS_EC2, "eu-west-1", "https://ec2.eu-west-1.amazonaws.com", "eu-west-1"},
        {GPC_AWS_S3, "eu-west-1", "https://s3.eu-west-1.amazonaws.com", "eu-west-1"},
        {GPC_AWS_PRICING, "eu-west-1", "https://api.pricing.us-east-1.amazonaws.com", "us-east-1"},
        {GPC_AWS_SERVICE_QUOTAS, "ap-south-1", "https://servicequotas.ap-south-1.amazonaws.com",
         "ap-south-1"},
        {GPC_AWS_IAM, "eu-west-1", "https://iam.amazonaws.com", "us-east-1"},
        {GPC_AWS_STS, "us-west-2", "https://sts.us-west-2.amazonaws.com", "us-west-2"},
        {GPC_AWS_S3, "cn-north-1", "https://s3.cn-north-1.amazonaws.com.cn", "cn-north-1"},
        {GPC_AWS_IAM, "cn-northwest-1", "https://iam.amazonaws.com.cn", "cn-north-1"},
        {GPC_AWS_PRICING, "cn-north-1", "https://api.pricing.cn-northwest-1.amazonaws.com.cn",
         "cn-northwest-1"},
    };
    gpc_error err;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char *url = NULL, sign[64] = "";
        gpc_error_clear(&err);
        assert_int_equal(gpc_aws_service_endpoint(NULL, want[i].svc, want[i].region, &url, sign,
                                                  sizeof(sign), &err), 0);
        assert_string_equal(url, want[i].url);
        assert_string_equal(sign, want[i].sign);
        free(url);
    }
    char *url = (char *)1;
    assert_int_equal(gpc_aws_service_endpoint(NULL, GPC_AWS_S3, "bad region", &url, NULL, 0,
                                              &err), GPC_ERR_USAGE);
    assert_null(url);

    /* AWS_ENDPOINT_URL_<ID> beats AWS_ENDPOINT_URL; --endpoint is EC2's only. */
    setenv("AWS_ENDPOINT_URL", "http://all.example:1", 1);
    setenv("AWS_ENDPOINT_URL_S3", "http://s3.example:2/p", 1);
    setenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS", "http://sq.example:3", 1);
    gpc_aws_options o = {.endpoint = "http://flag.example:4"};
    gpc_aws_config cfg;
    load(&o, &cfg);
    assert_string_equal(cfg.ec2_endpoint, "http://flag.example:4");
    assert_string_equal(cfg.svc_endpoint[GPC_AWS_S3], "http://s3.example:2/p");
    assert_string_equal(cfg.svc_endpoint_from[GPC_AWS_S3], "AWS_ENDPOINT_URL_S3");
    assert_string_equal(cfg.svc_endpoint[GPC_AWS_SERVICE_QUOTAS], "http://sq.example:3");
    assert_string_equal(cfg.svc_endpoint[GPC_AWS_PRICING], "http://all.example:1");
    assert_string_equal(cfg.svc_endpoint_from[GPC_AWS_PRICING], "AWS_ENDPOINT_URL");
    char sign[64];
    assert_int_equal(gpc_aws_service_endpoint(&cfg, GPC_AWS_PRICING, "eu-west-1", &url, sign,
                                              sizeof(sign), &err), 0);
    assert_string_equal(url, "http://all.example:1");
    assert_string_equal(sign, "us-east-1");  /* an override keeps the signing region */
    free(url);
    gpc_aws_config_free(&cfg);

    /* The ignore switch drops them; a bad one is named. */
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    load(NULL, &cfg);
    assert_null(cfg.svc_endpoint[GPC_AWS_S3]);
    gpc_aws_config_free(&cfg);
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    setenv("AWS_ENDPOINT_URL_S3", "s3.example", 1);
    assert_int_equal(load_err(NULL, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "AWS_ENDPOINT_URL_S3 's3.example' is not an http:// or "
                                 "https:// URL");
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS");
    unsetenv("AWS_ENDPOINT_URL");
}

/* ---- IMDSv2 ------------------------------------------------------------- */

/* Start tests/fake/imds.py with extra flags (NULL-terminated) and point
 * AWS_EC2_METADATA_SERVICE_ENDPOINT at it. */
static void start_imds(fixture *f, ...)
{
    const char *args[16];
    int n = 0;
    va_list ap;
    va_start(ap, f);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 15)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    assert_int_equal(fake_start(&f->srv, "imds.py", args), 0);
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f->srv.base, 1);
    unsetenv("AWS_EC2_METADATA_DISABLED");
}

static void expect_log(const fixture *f, const char *want)
{
    char *log = fake_log(&f->srv);
    assert_string_equal(log, want);
    free(log);
}

#define LOG_TOKEN "PUT /latest/api/token 200\n"
#define LOG_ROLES "GET /latest/meta-data/iam/security-credentials/ "

static void test_imds_credentials(void **state)
{
    fixture *f = *state;
    start_imds(f, "--role", "gpuctl-node", "--expiration", "2031-02-03T04:05:06Z", NULL);
    char token[1201];
    memset(token, 'x', 1200);
    token[1200] = '\0';
    memcpy(token, "IQoJb3JpZ2luX2VjEXAMPLE", strlen("IQoJb3JpZ2luX2VjEXAMPLE"));
    expect_creds(NULL, AKID, token, 1927857906, "EC2 instance role 'gpuctl-node' (IMDSv2)");
    expect_log(f, LOG_TOKEN LOG_ROLES "200\n"
                  "GET /latest/meta-data/iam/security-credentials/gpuctl-node 200\n");

    /* A trailing '/' on the endpoint is dropped. */
    char base[96];
    snprintf(base, sizeof(base), "%s/", f->srv.base);
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", base, 1);
    expect_creds(NULL, AKID, token, 1927857906, "EC2 instance role 'gpuctl-node' (IMDSv2)");

    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "169.254.169.254", 1);
    expect_creds_error(NULL, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT "
                       "'169.254.169.254' is not an http:// URL");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://user:pw@169.254.169.254", 1);
    expect_creds_error(NULL, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT "
                       "'http://169.254.169.254' must not hold a user name or password");
    unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv5", 1);
    expect_creds_error(NULL, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE 'IPv5' is "
                       "neither IPv4 nor IPv6");
}

static void test_imds_disabled(void **state)
{
    fixture *f = *state;
    start_imds(f, NULL);
    setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
    expect_creds_error(NULL, GPC_ERR_AUTH, "no AWS credentials found for profile 'default': "
                       "tried environment variables, shared credentials file "
                       "~/.aws/credentials (no such file), config file ~/.aws/config (no such "
                       "file), EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED)"
                       NO_CREDS_TAIL);
    char region[64];
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_imds_region(region, sizeof(region), &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "cannot ask EC2 instance metadata for the region: disabled by "
                                 "AWS_EC2_METADATA_DISABLED");
    expect_log(f, ""); /* not a single request */
}

static void test_imds_no_role(void **state)
{
    fixture *f = *state;
    start_imds(f, "--no-role", NULL);
    put_config(f, "[default]\nregion = us-east-1\n");
    put_credentials(f, "[other]\n" KEYS(AKID));
    char want[1024];
    gpc_aws_options o = {.profile = "default"};
    snprintf(want, sizeof(want), "no AWS credentials found for profile 'default': tried "
             "environment variables (ignored with --profile), shared credentials file "
             "~/.aws/credentials (no keys in [default]), config file ~/.aws/config (no keys "
             "in [default]), EC2 instance metadata at %s (no instance role)" NO_CREDS_TAIL,
             f->srv.base);
    expect_creds_error(&o, GPC_ERR_AUTH, want);
    expect_log(f, LOG_TOKEN LOG_ROLES "404\n");

    /* Nothing listening: no reply, no error of its own. */
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
    snprintf(want, sizeof(want), "no AWS credentials found for profile 'default': tried "
             "environment variables (ignored with --profile), shared credentials file "
             "~/.aws/credentials (no keys in [default]), config file ~/.aws/config (no keys "
             "in [default]), EC2 instance metadata at http://127.0.0.1:1 (no reply)"
             NO_CREDS_TAIL);
    expect_creds_error(&o, GPC_ERR_AUTH, want);
}

static void test_imds_bad_credentials(void **state)
{
    fixture *f = *state;
    start_imds(f, "--expiration", "2020-01-01T00:00:00Z", NULL);
    expect_creds_error(NULL, GPC_ERR_AUTH, "the AWS credentials from EC2 instance role "
                       "'gpuctl-test-role' (IMDSv2) expired at 2020-01-01T00:00:00Z");
    fixed_clock_at(1577836799); /* one second before */
    gpc_aws_creds c;
    gpc_error err;
    assert_int_equal(get_creds(NULL, &c, &err), 0);
    assert_int_equal(c.expiration, 1577836800);
    assert_int_equal(gpc_aws_creds_expiring(&c, gpc_now(), GPC_AWS_REFRESH_MARGIN_S), 1);
    gpc_aws_creds_free(&c);
    fake_stop(&f->srv);

    start_imds(f, "--code", "AssumeRoleUnauthorizedAccess", NULL);
    char want[512];
    snprintf(want, sizeof(want), "EC2 instance metadata at %s: instance role "
             "'gpuctl-test-role' has no credentials (Code 'AssumeRoleUnauthorizedAccess')",
             f->srv.base);
    expect_creds_error(NULL, GPC_ERR_AUTH, want);
}

static void test_imds_region(void **state)
{
    fixture *f = *state;
    start_imds(f, "--region", "eu-central-1", NULL);
    char region[64] = "junk";
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_imds_region(region, sizeof(region), &err), 0);
    assert_string_equal(region, "eu-central-1");
    expect_log(f, LOG_TOKEN "GET /latest/meta-data/placement/region 200\n");
    fake_stop(&f->srv);

    start_imds(f, NULL); /* no region served */
    char want[256];
    snprintf(want, sizeof(want), "EC2 instance metadata at %s: no placement/region (HTTP 404)",
             f->srv.base);
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_imds_region(region, sizeof(region), &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, want);
    assert_string_equal(region, "");

    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
    gpc_error_clear(&err);
    assert_int_equal(gpc_aws_imds_region(region, sizeof(region), &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "no reply from EC2 instance metadata at http://127.0.0.1:1 "
                                 "(not on EC2?)");
}

/* ---- the rest ----------------------------------------------------------- */

static void test_creds_expiring(void **state)
{
    (void)state;
    gpc_aws_creds c = {.expiration = 0};
    assert_int_equal(gpc_aws_creds_expiring(&c, 1000, 300), 0); /* never expires */
    c.expiration = 1000;
    assert_int_equal(gpc_aws_creds_expiring(&c, 699, 300), 0);
    assert_int_equal(gpc_aws_creds_expiring(&c, 700, 300), 1); /* exactly the margin */
    assert_int_equal(gpc_aws_creds_expiring(&c, 999, 0), 0);
    assert_int_equal(gpc_aws_creds_expiring(&c, 1000, 0), 1);
    assert_int_equal(gpc_aws_creds_expiring(&c, 5000, 300), 1);
    assert_int_equal(gpc_aws_creds_expiring(&c, 1, INT64_MAX), 1);
    assert_int_equal(gpc_aws_creds_expiring(NULL, 0, 0), 1);
}

static void test_malformed_ini(void **state)
{
    fixture *f = *state;
    gpc_error err;
    put_config(f, "[default]\nregion = us-east-1\nthis line has no equals sign\n");
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/config:3: expected '[section]' or 'key = value'");
    put_config(f, "[default\nregion = us-east-1\n");
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/config:1: expected '[section]' or 'key = value'");
    put_config(f, "");
    put_credentials(f, "# keys\naws_access_key_id = " AKID "\n[default]\n");
    assert_int_equal(load_err(NULL, &err), GPC_ERR_SPEC);
    assert_string_equal(err.msg, "~/.aws/credentials:2: 'aws_access_key_id' is outside any "
                                 "[section]");
    if (geteuid() != 0) { /* root reads anything */
        put_credentials(f, "[default]\n");
        char path[128];
        snprintf(path, sizeof(path), "%s/.aws/credentials", f->home);
        assert_int_equal(chmod(path, 0), 0);
        assert_int_equal(load_err(NULL, &err), GPC_ERR_IO);
        char want[256];
        snprintf(want, sizeof(want), "%s: Permission denied", path);
        assert_string_equal(err.msg, want);
    }
}

static void test_long_lines(void **state)
{
    fixture *f = *state;
    char token[1601], url[401], text[4096];
    memset(token, 'T', 1600);
    token[1600] = '\0';
    snprintf(url, sizeof(url), "http://localhost:4566/");
    memset(url + strlen(url), 'p', 400 - strlen(url));
    url[400] = '\0';
    snprintf(text, sizeof(text), "[default]\n" KEYS(AKID) "aws_session_token = %s  \n"
             "region = us-east-1\n", token);
    put_credentials(f, text);
    snprintf(text, sizeof(text), "[default]\nservices = s\n[services s]\nec2 =\n"
             "  endpoint_url = %s\nafter = 1\n", url);
    put_config(f, text);
    expect_creds(NULL, AKID, token, 0,
                 "shared credentials file ~/.aws/credentials [profile default]");
    gpc_aws_config cfg;
    load(NULL, &cfg);
    assert_string_equal(cfg.ec2_endpoint, url);
    assert_string_equal(cfg.region, "us-east-1");
    gpc_aws_config_free(&cfg);
}

static void test_file_paths(void **state)
{
    fixture *f = *state;
    char dir[128], path[160], want[160];
    snprintf(dir, sizeof(dir), "%s/alt", f->home);
    assert_int_equal(mkdir(dir, 0700), 0);
    put(f, "alt/config", "[default]\nregion = me-south-1\n");
    put(f, "alt/creds", "[default]\n" KEYS("AKIDEXAMPLEALT"));
    setenv("AWS_CONFIG_FILE", "~/alt/config", 1);
    snprintf(path, sizeof(path), "%s/alt/creds", f->home);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    gpc_aws_config cfg;
    load(NULL, &cfg);
    snprintf(want, sizeof(want), "%s/alt/config", f->home);
    assert_string_equal(cfg.config_file, want);
    assert_string_equal(cfg.credentials_file, path);
    assert_string_equal(cfg.region, "me-south-1");
    gpc_aws_config_free(&cfg);
    expect_creds(NULL, "AKIDEXAMPLEALT", NULL, 0,
                 "shared credentials file ~/alt/creds [profile default]");

    /* Defaults under HOME; a directory in a file's place counts as absent. */
    unsetenv("AWS_CONFIG_FILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    snprintf(path, sizeof(path), "%s/.aws/config", f->home);
    assert_int_equal(mkdir(path, 0700), 0);
    load(NULL, &cfg);
    assert_string_equal(cfg.config_file, path);
    snprintf(want, sizeof(want), "%s/.aws/credentials", f->home);
    assert_string_equal(cfg.credentials_file, want);
    assert_string_equal(cfg.region, "");
    gpc_aws_config_free(&cfg);
    gpc_aws_config_free(NULL);
    gpc_aws_creds_free(NULL);
}

int main(void)
{
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_env_keys),
        T(test_env_partial),
        T(test_profile_selection),
        T(test_profile_not_found),
        T(test_credentials_file_beats_config),
        T(test_config_profile_sections),
        T(test_unsupported_features),
        T(test_credential_process_ok),
        T(test_credential_process_failures),
        T(test_region_precedence),
        T(test_endpoint_precedence),
        T(test_services_syntax),
        T(test_ec2_endpoint),
        T(test_service_endpoint),
        T(test_imds_credentials),
        T(test_imds_disabled),
        T(test_imds_no_role),
        T(test_imds_bad_credentials),
        T(test_imds_region),
        T(test_creds_expiring),
        T(test_malformed_ini),
        T(test_long_lines),
        T(test_file_paths),
    };
#undef T
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (home)
        setenv("HOME", home, 1);
    free(home);
    return rc;
}
