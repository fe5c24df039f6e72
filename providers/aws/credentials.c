/*
 * credentials.c - gpc_aws_credentials(): the credentials chain in
 * botocore's order (environment, the credentials and config files,
 * credential_process, EC2 instance metadata), saying what it tried; the
 * sources gpuctl does not support yet are refused with a hint.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "aws/config_internal.h"
#include "gpuctl/util.h"

extern char **environ;

/* ---- credentials: common parts ------------------------------------------ */

void gpc_aws_creds_free(gpc_aws_creds *c)
{
    if (!c)
        return;
    aws_wipe_free(c->session_token);
    OPENSSL_cleanse(c, sizeof(*c));
    c->session_token = NULL;
}

int gpc_aws_creds_expiring(const gpc_aws_creds *c, int64_t now, int64_t margin_s)
{
    if (!c)
        return 1;
    if (c->expiration == 0)
        return 0;
    /* expiration - now <= margin, without overflow */
    if (margin_s >= 0 && now > INT64_MAX - margin_s)
        return 1;
    return c->expiration <= now + margin_s;
}

/* Fill *out from found values; source says where they came from. */
int aws_creds_fill(gpc_aws_creds *out, const char *akid, const char *secret,
                   const char *token, int64_t expiration, const char *source,
                   gpc_error *err)
{
    if (expiration && expiration <= gpc_now()) {
        char when[40];
        aws_format_time(expiration, when, sizeof(when));
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS credentials from %s expired at %s", source,
                        when);
    }
    if (!aws_fits(out->access_key_id, sizeof(out->access_key_id), akid))
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS access key id from %s is longer than %zu "
                        "characters", source, sizeof(out->access_key_id) - 1);
    if (!aws_fits(out->secret_access_key, sizeof(out->secret_access_key), secret))
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS secret access key from %s is longer than "
                        "%zu characters", source, sizeof(out->secret_access_key) - 1);
    if (token && *token && !(out->session_token = strdup(token)))
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    out->expiration = expiration;
    aws_set_label(out->source, sizeof(out->source), "%s", source);
    return 0;
}

void aws_note_tried(chain *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->tried.len)
        gpc_buf_adds(&c->tried, ", ", NULL);
    gpc_buf_vaddf(&c->tried, NULL, fmt, ap);
    va_end(ap);
}

static int unsupported(chain *c, const char *what)
{
    return gpc_fail(c->err, GPC_ERR_AUTH, "%s, which gpuctl does not support yet; export "
                    "temporary keys instead: " HINT_FMT, what, c->cfg->profile);
}

/* Keys of one file's section: both or neither. */
static int file_keys(chain *c, const ini_doc *d, enum section_kind kind, const char *section_label,
                     const char *file_label)
{
    const char *profile = c->cfg->profile;
    const ini_entry *akid = aws_ini_get(d, kind, profile, "aws_access_key_id", NULL);
    const ini_entry *secret = aws_ini_get(d, kind, profile, "aws_secret_access_key", NULL);
    /* botocore looks at the legacy name first */
    const ini_entry *token = aws_ini_get(d, kind, profile, "aws_security_token", NULL);
    if (!token)
        token = aws_ini_get(d, kind, profile, "aws_session_token", NULL);
    if (akid && !*akid->value)
        akid = NULL;
    if (secret && !*secret->value)
        secret = NULL;
    if (!akid && !secret) {
        if (d->present)
            aws_note_tried(c, "%s %s (no keys in %s)", file_label, d->shown, section_label);
        else
            aws_note_tried(c, "%s %s (no such file)", file_label, d->shown);
        return 0;
    }
    const ini_entry *have = akid ? akid : secret;
    if (!akid || !secret)
        return gpc_fail(c->err, GPC_ERR_AUTH, "%s:%d: %s has %s but no %s", d->shown,
                        have->line, section_label, akid ? "aws_access_key_id" :
                        "aws_secret_access_key", akid ? "aws_secret_access_key" :
                        "aws_access_key_id");
    char source[sizeof(c->out->source)];
    if (kind == SECT_PLAIN)
        aws_set_label(source, sizeof(source), "%s %s [profile %s]", file_label, d->shown, profile);
    else
        aws_set_label(source, sizeof(source), "%s [profile %s]", file_label, profile);
    c->found = 1;
    return aws_creds_fill(c->out, akid->value, secret->value, token ? token->value : NULL, 0,
                          source, c->err);
}

/* ---- credentials: the steps, in botocore's order ------------------------ */

static int step_profile_exists(chain *c)
{
    const gpc_aws_config *cfg = c->cfg;
    if (strcmp(cfg->profile_from, "default") == 0 ||
        aws_ini_has_section(&c->files.config, SECT_PROFILE, cfg->profile) ||
        aws_ini_has_section(&c->files.creds, SECT_PLAIN, cfg->profile))
        return 0;
    return gpc_fail(c->err, GPC_ERR_AUTH, "AWS profile '%s' not found in %s or %s (named by %s)",
                    cfg->profile, c->files.config.shown, c->files.creds.shown,
                    cfg->profile_from);
}

static int step_env(chain *c)
{
    if (c->explicit_profile) {
        aws_note_tried(c, "environment variables (ignored with --profile)");
        return 0;
    }
    const char *akid = aws_env("AWS_ACCESS_KEY_ID"), *secret = aws_env("AWS_SECRET_ACCESS_KEY");
    if (!akid && !secret) {
        aws_note_tried(c, "environment variables");
        return 0;
    }
    if (!akid || !secret)
        return gpc_fail(c->err, GPC_ERR_AUTH, "%s is set but %s is not; set both, or unset "
                        "%s to use the profile", akid ? "AWS_ACCESS_KEY_ID" :
                        "AWS_SECRET_ACCESS_KEY", akid ? "AWS_SECRET_ACCESS_KEY" :
                        "AWS_ACCESS_KEY_ID", akid ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
    const char *token = aws_env("AWS_SECURITY_TOKEN"); /* botocore: the legacy name first */
    if (!token)
        token = aws_env("AWS_SESSION_TOKEN");
    const char *exp_text = aws_env("AWS_CREDENTIAL_EXPIRATION");
    int64_t exp = 0;
    if (exp_text && !aws_parse_iso8601(exp_text, &exp))
        return gpc_fail(c->err, GPC_ERR_AUTH, "AWS_CREDENTIAL_EXPIRATION '%.40s' is not an ISO "
                        "8601 time such as 2026-01-01T12:00:00Z", exp_text);
    c->found = 1;
    return aws_creds_fill(c->out, akid, secret, token, exp, "environment", c->err);
}

/* AssumeRole, web identity and IAM Identity Center (botocore's providers
 * before the shared credentials file). */
static int step_unsupported_profile(chain *c)
{
    static const struct {
        const char *key, *feature;
    } keys[] = {
        {"web_identity_token_file", "AssumeRoleWithWebIdentity"},
        {"role_arn", "AssumeRole"},
        {"source_profile", "AssumeRole"},
        {"credential_source", "AssumeRole"},
        {"sso_session", "IAM Identity Center"},
        {"sso_start_url", "IAM Identity Center"},
        {"sso_account_id", "IAM Identity Center"},
        {"sso_role_name", "IAM Identity Center"},
    };
    char what[200];
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
        if (aws_profile_get(&c->files, c->cfg->profile, keys[i].key).e) {
            aws_set_label(what, sizeof(what), "profile '%s' uses %s (%s)", c->cfg->profile,
                          keys[i].key, keys[i].feature);
            return unsupported(c, what);
        }
    }
    if (!c->explicit_profile && aws_env("AWS_WEB_IDENTITY_TOKEN_FILE"))
        return unsupported(c, "AWS_WEB_IDENTITY_TOKEN_FILE is set (AssumeRoleWithWebIdentity)");
    return 0;
}

static int step_credentials_file(chain *c)
{
    char section[sizeof(c->cfg->profile) + 2];
    aws_set_label(section, sizeof(section), "[%s]", c->cfg->profile);
    return file_keys(c, &c->files.creds, SECT_PLAIN, section, "shared credentials file");
}

static int step_login_session(chain *c)
{
    char what[200];
    if (!aws_profile_get(&c->files, c->cfg->profile, "login_session").e)
        return 0;
    aws_set_label(what, sizeof(what), "profile '%s' uses login_session (aws login)",
                  c->cfg->profile);
    return unsupported(c, what);
}

/* Run cmd with /bin/sh -c and collect its stdout (at most out->max bytes).
 * *status is waitpid()'s; *too_big when it printed more. */
static int run_shell(const char *cmd, const char *what, gpc_buf *out, int *status, int *too_big,
                     gpc_error *err)
{
    int fds[2];
    if (pipe(fds) != 0)
        return gpc_fail(err, GPC_ERR_AUTH, "%s: cannot create a pipe: %s", what,
                        strerror(errno));
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    char sh[] = "sh", dash_c[] = "-c";
    char *argv[] = {sh, dash_c, (char *)cmd, NULL};
    pid_t pid;
    int src = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (src != 0) {
        close(fds[0]);
        return gpc_fail(err, GPC_ERR_AUTH, "%s: cannot run /bin/sh: %s", what, strerror(src));
    }
    char chunk[4096];
    *too_big = 0;
    for (;;) {
        ssize_t n = read(fds[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (gpc_buf_add(out, chunk, (size_t)n, NULL)) {
            *too_big = 1;
            break;
        }
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    close(fds[0]); /* a process still writing gets SIGPIPE */
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR)
            return gpc_fail(err, GPC_ERR_AUTH, "%s: waitpid: %s", what, strerror(errno));
    }
    return 0;
}

const char *aws_json_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* Overwrite every string in a parsed document before it is freed. */
void aws_json_wipe(cJSON *j)
{
    for (; j; j = j->next) {
        if (j->valuestring)
            OPENSSL_cleanse(j->valuestring, strlen(j->valuestring));
        aws_json_wipe(j->child);
    }
}

/* The credential_process JSON (Version 1).  Never quotes the output. */
static int process_creds(chain *c, const char *what, const gpc_buf *text)
{
    cJSON *doc = cJSON_ParseWithLength(text->data ? text->data : "", text->len);
    int rc;
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "Version");
    const char *akid = aws_json_str(doc, "AccessKeyId");
    const char *secret = aws_json_str(doc, "SecretAccessKey");
    const char *exp_text = aws_json_str(doc, "Expiration");
    int64_t exp = 0;
    char source[sizeof(c->out->source)];
    if (!cJSON_IsObject(doc))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s did not print a JSON object", what);
    else if (!cJSON_IsNumber(version) || version->valuedouble != 1)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed JSON without \"Version\": 1", what);
    else if (!akid || !*akid)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed no AccessKeyId", what);
    else if (!secret || !*secret)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed no SecretAccessKey", what);
    else if (exp_text && !aws_parse_iso8601(exp_text, &exp))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed an Expiration that is not an ISO 8601 "
                      "time", what);
    else {
        aws_set_label(source, sizeof(source), "credential_process [profile %s]", c->cfg->profile);
        c->found = 1;
        rc = aws_creds_fill(c->out, akid, secret, aws_json_str(doc, "SessionToken"), exp, source,
                            c->err);
    }
    aws_json_wipe(doc);
    cJSON_Delete(doc);
    return rc;
}

static int step_credential_process(chain *c)
{
    const char *cmd =
        aws_setting_value(aws_profile_get(&c->files, c->cfg->profile, "credential_process"));
    if (!cmd)
        return 0;
    char what[200];
    aws_set_label(what, sizeof(what), "credential_process for profile '%s'", c->cfg->profile);
    gpc_buf text;
    gpc_buf_init(&text, GPC_AWS_PROCESS_OUTPUT_MAX);
    int status = 0, too_big = 0;
    int rc = run_shell(cmd, what, &text, &status, &too_big, c->err);
    if (!rc && too_big) /* before the status: it may have died of SIGPIPE */
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed more than %u bytes", what,
                      GPC_AWS_PROCESS_OUTPUT_MAX);
    else if (!rc && WIFSIGNALED(status))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s was killed by signal %d", what, WTERMSIG(status));
    else if (!rc && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s exited with status %d", what,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else if (!rc)
        rc = process_creds(c, what, &text);
    if (text.data)
        OPENSSL_cleanse(text.data, text.cap);
    gpc_buf_free(&text);
    return rc;
}

static int step_config_file(chain *c)
{
    char section[sizeof(c->cfg->profile) + 12];
    if (strcmp(c->cfg->profile, "default") == 0)
        aws_set_label(section, sizeof(section), "[default]");
    else
        aws_set_label(section, sizeof(section), "[profile %s]", c->cfg->profile);
    return file_keys(c, &c->files.config, SECT_PROFILE, section, "config file");
}

static int step_container(chain *c)
{
    static const char *const vars[] = {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI"};
    char what[120];
    for (size_t i = 0; i < 2; i++) {
        if (aws_env(vars[i])) {
            aws_set_label(what, sizeof(what), "%s is set (container credentials)", vars[i]);
            return unsupported(c, what);
        }
    }
    return 0;
}

int gpc_aws_credentials(const gpc_aws_config *cfg, const gpc_aws_options *opts,
                        gpc_aws_creds *out, gpc_error *err)
{
    static int (*const steps[])(chain *) = {
        step_profile_exists, step_env, step_unsupported_profile, step_credentials_file,
        step_login_session, step_credential_process, step_config_file, step_container,
        aws_step_imds,
    };
    memset(out, 0, sizeof(*out));
    chain c = {.cfg = cfg, .out = out, .err = err};
    c.explicit_profile = opts && opts->profile && *opts->profile;
    gpc_buf_init(&c.tried, GPC_BUF_LINE_MAX);
    int rc = aws_files_load(&c.files, cfg, err);
    for (size_t i = 0; !rc && !c.found && i < sizeof(steps) / sizeof(*steps); i++)
        rc = steps[i](&c);
    if (!rc && !c.found)
        rc = gpc_fail(err, GPC_ERR_AUTH, "no AWS credentials found for profile '%s': tried %s; "
                      "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the profile "
                      "keys (aws configure)", cfg->profile, gpc_buf_str(&c.tried));
    aws_files_free(&c.files);
    gpc_buf_free(&c.tried);
    if (rc)
        gpc_aws_creds_free(out);
    return rc;
}

