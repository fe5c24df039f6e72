/*
 * config.c - the AWS configuration: profile, region and EC2 endpoint from
 * flags, the environment and ~/.aws/{config,credentials}; the helpers the
 * credentials chain shares (config_internal.h).  Interface: config.h.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>
#include <openssl/crypto.h>

#include "aws/config_internal.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

#define INI_FILE_MAX   (1u << 20) /* ~/.aws/config or credentials */

/* ---- small helpers ------------------------------------------------------ */

/* An environment variable; an empty one counts as unset. */
const char *aws_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* botocore's ensure_boolean: only "true", in any case, is true. */
int aws_is_true(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
}

/* Copy src into dst[size] when it fits; 0 (dst untouched) when it does not. */
int aws_fits(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        return 0;
    memcpy(dst, src, n + 1);
    return 1;
}

/* snprintf into a field, truncating (labels only: never data that counts). */
void aws_set_label(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

void aws_wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* Copy of s[0..n) with blanks trimmed at both ends; NULL when out of memory. */
static char *trimmed_dup(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return out;
}

/* http:// or https:// followed by a host. */
int aws_is_http_url(const char *url)
{
    const char *rest = NULL;
    if (strncasecmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        rest = url + 8;
    return rest && *rest && !strchr("/?#", *rest);
}

/* botocore's region rule, lower-case only: [a-z0-9] ([a-z0-9-]* [a-z0-9])?. */
int aws_valid_region(const char *r)
{
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > 63 || r[0] == '-' || r[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return 0;
    return 1;
}

/* ---- time --------------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int read_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return 0;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 1;
}

/*
 * "2026-01-01T12:00:00Z" as IMDS, STS and credential_process print it: an
 * optional fraction of a second, then Z or an offset +HH, +HHMM or +HH:MM.
 * A zone is required (botocore fails on a naive time too).
 */
int aws_parse_iso8601(const char *s, int64_t *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 1;
    if (!read_digits(&p, 4, &y) || *p++ != '-' || !read_digits(&p, 2, &mo) || *p++ != '-' ||
        !read_digits(&p, 2, &d))
        return 0;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return 0;
    p++;
    if (!read_digits(&p, 2, &h) || *p++ != ':' || !read_digits(&p, 2, &mi) || *p++ != ':' ||
        !read_digits(&p, 2, &sec))
        return 0;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '-' ? -1 : 1;
        if (!read_digits(&p, 2, &oh))
            return 0;
        if (*p == ':')
            p++;
        if (*p && !read_digits(&p, 2, &om))
            return 0;
    } else {
        return 0;
    }
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (*p || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || sec > 60 || oh > 23 || om > 59)
        return 0;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
           sign * (oh * 3600 + om * 60);
    return 1;
}

void aws_format_time(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "%lld", (long long)t);
}

/* ---- paths -------------------------------------------------------------- */

static int home_dir(const char **out, gpc_error *err)
{
    const char *home = aws_env("HOME");
    if (!home) {
        struct passwd *pw = getpwuid(getuid());
        if (pw && pw->pw_dir && *pw->pw_dir)
            home = pw->pw_dir;
    }
    if (!home)
        return gpc_fail(err, GPC_ERR_IO, "cannot find the home directory for ~/.aws "
                        "(HOME is not set)");
    *out = home;
    return 0;
}

/* $VAR with a leading "~" expanded, else $HOME + dflt ("/.aws/config"). */
static int resolve_path(const char *var, const char *dflt, char **out, gpc_error *err)
{
    const char *v = aws_env(var), *home = NULL;
    if (v && !(v[0] == '~' && (v[1] == '\0' || v[1] == '/'))) {
        *out = gpc_strdup(v, err);
        return *out ? 0 : GPC_ERR_NOMEM;
    }
    int rc = home_dir(&home, err);
    if (rc)
        return rc;
    gpc_buf b;
    gpc_buf_init(&b, PATH_MAX);
    if ((rc = gpc_buf_addf(&b, err, "%s%s", home, v ? v + 1 : dflt))) {
        gpc_buf_free(&b);
        return rc;
    }
    *out = gpc_buf_take(&b);
    return *out ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

/* A path for messages: $HOME/x becomes ~/x. */
static void show_path(const char *path, char *out, size_t size)
{
    const char *home = aws_env("HOME");
    size_t n = home ? strlen(home) : 0;
    while (n > 1 && home[n - 1] == '/')
        n--;
    if (n > 1 && strncmp(path, home, n) == 0 && path[n] == '/')
        aws_set_label(out, size, "~%s", path + n);
    else
        aws_set_label(out, size, "%s", path);
}

/* ---- INI files: libinih plus sub-sections ------------------------------- */

/* One parse: the reader and the handler share it. */
typedef struct ini_ctx {
    ini_doc *doc;
    const char *data;
    size_t len, pos;
    const char *raw;     /* the current line, without its '\n' */
    size_t raw_len;
    int line;
    int indented;        /* the line starts with a blank */
    int truncated;       /* the line was cut to fit inih's buffer */
    size_t top;          /* 1 + index of the section's last top-level entry; 0 = none */
    int fail_line;
    gpc_code fail_code;
    char fail_msg[256];
} ini_ctx;

static int ini_fail(ini_ctx *p, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ini_fail(ini_ctx *p, gpc_code code, const char *fmt, ...)
{
    if (!p->fail_line) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->fail_msg, sizeof(p->fail_msg), fmt, ap);
        va_end(ap);
        p->fail_line = p->line;
        p->fail_code = code;
    }
    return 0; /* tells inih the line failed */
}

/*
 * inih's reader: one line per call.  inih (Debian's build) keeps lines in a
 * 200-byte stack buffer and splits longer ones into bogus extra lines, yet
 * session tokens run to 2 KB.  So a long line is handed over cut short (its
 * key and separator intact) and the handler takes the value from the whole
 * line, which is kept here.
 */
static char *ini_read_line(char *str, int num, void *stream)
{
    ini_ctx *p = stream;
    if (p->pos >= p->len || num < 3)
        return NULL;
    const char *start = p->data + p->pos;
    const char *nl = memchr(start, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - start) : p->len - p->pos;
    p->pos += n + (nl ? 1 : 0);
    p->raw = start;
    p->raw_len = n;
    p->line++;
    p->indented = n > 0 && isspace((unsigned char)start[0]);
    size_t lead = 0;
    while (lead < n && isspace((unsigned char)start[lead]))
        lead++;
    /* A section header (one inih will not take as a continuation line)
     * ends the last key: indented lines after it start new keys. */
    if (lead < n && start[lead] == '[' && !(p->indented && p->top))
        p->top = 0;
    size_t room = (size_t)num - 2;
    p->truncated = n > room;
    size_t copy = p->truncated ? room : n;
    memcpy(str, start, copy);
    str[copy] = '\n';
    str[copy + 1] = '\0';
    return str;
}

static int ini_add(ini_ctx *p, const char *section, const char *key, const char *sub,
                   const char *value)
{
    ini_doc *d = p->doc;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        ini_entry *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return ini_fail(p, GPC_ERR_NOMEM, "out of memory");
        d->v = v;
        d->cap = cap;
    }
    ini_entry *e = &d->v[d->n];
    memset(e, 0, sizeof(*e));
    e->section = strdup(section);
    e->key = strdup(key);
    e->sub = sub ? strdup(sub) : NULL;
    e->value = strdup(value);
    e->line = p->line;
    d->n++; /* counted even when half-made, so that it is freed */
    if (!e->section || !e->key || (sub && !e->sub) || !e->value)
        return ini_fail(p, GPC_ERR_NOMEM, "out of memory");
    return 1;
}

/*
 * An indented line after a key (inih passes it as that key's value):
 * after "key =" it is a "name = value" of the key's sub-section (botocore's
 * _parse_nested, which splits at the first '='); after "key = value" it
 * continues the value, as in Python's configparser.
 */
static int ini_continue(ini_ctx *p, const char *text)
{
    ini_entry *top = &p->doc->v[p->top - 1];
    if (*top->value) {
        size_t a = strlen(top->value), b = strlen(text);
        char *joined = malloc(a + b + 2);
        if (!joined)
            return ini_fail(p, GPC_ERR_NOMEM, "out of memory");
        memcpy(joined, top->value, a);
        joined[a] = '\n';
        memcpy(joined + a + 1, text, b + 1);
        aws_wipe_free(top->value);
        top->value = joined;
        return 1;
    }
    const char *eq = strchr(text, '=');
    if (!eq)
        return ini_fail(p, GPC_ERR_SPEC, "expected 'name = value' in the '%s' sub-section",
                        top->key);
    char *name = trimmed_dup(text, (size_t)(eq - text));
    char *value = trimmed_dup(eq + 1, strlen(eq + 1));
    int ok = name && value ? ini_add(p, top->section, top->key, name, value)
                           : ini_fail(p, GPC_ERR_NOMEM, "out of memory");
    free(name);
    aws_wipe_free(value);
    return ok;
}

/* The value of the current (long) line, taken from the whole line. */
static char *long_line_value(const ini_ctx *p)
{
    const char *s = p->raw, *end = p->raw + p->raw_len;
    if (!(p->indented && p->top)) { /* "key = value": after the first '=' or ':' */
        const char *sep = s;
        while (sep < end && *sep != '=' && *sep != ':')
            sep++;
        s = sep < end ? sep + 1 : end;
    }
    return trimmed_dup(s, (size_t)(end - s));
}

static int ini_on_value(void *user, const char *section, const char *name, const char *value)
{
    ini_ctx *p = user;
    char *whole = NULL;
    if (p->truncated) {
        if (!(whole = long_line_value(p)))
            return ini_fail(p, GPC_ERR_NOMEM, "out of memory");
        value = whole;
    }
    int ok;
    if (p->indented && p->top) {
        ok = ini_continue(p, value);
    } else if (!*section) {
        ok = ini_fail(p, GPC_ERR_SPEC, "'%s' is outside any [section]", name);
    } else {
        ok = ini_add(p, section, name, NULL, value);
        if (ok)
            p->top = p->doc->n;
    }
    aws_wipe_free(whole);
    return ok;
}

static void ini_free(ini_doc *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].section);
        free(d->v[i].key);
        free(d->v[i].sub);
        aws_wipe_free(d->v[i].value);
    }
    free(d->v);
    d->v = NULL;
    d->n = d->cap = 0;
}

/* Parse path into *d.  An absent file (or not a regular one) leaves d empty. */
static int ini_load(ini_doc *d, const char *path, gpc_error *err)
{
    memset(d, 0, sizeof(*d));
    show_path(path, d->shown, sizeof(d->shown));
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return 0; /* botocore's os.path.isfile() */
    char *data = NULL;
    size_t len = 0;
    int rc = gpc_read_file(path, INI_FILE_MAX, &data, &len, err);
    if (rc)
        return rc;
    d->present = 1;

    ini_ctx p = {.doc = d, .data = data, .len = len};
    /* Debian's libinih strips "; comment" from values by default; botocore
     * (configparser) has no inline comments.  Continuation lines carry the
     * sub-sections.  Process-wide settings, put back at once: config files
     * are read before any thread starts. */
    bool inline_comments = ini_allow_inline_comments, multiline = ini_allow_multiline;
    ini_allow_inline_comments = false;
    ini_allow_multiline = true;
    int line = ini_parse_stream(ini_read_line, &p, ini_on_value, &p);
    ini_allow_inline_comments = inline_comments;
    ini_allow_multiline = multiline;
    OPENSSL_cleanse(data, len);
    free(data);

    if (line == 0)
        return 0;
    if (p.fail_line && p.fail_line <= line) {
        if (p.fail_code == GPC_ERR_NOMEM)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", d->shown);
        else
            rc = gpc_fail(err, p.fail_code, "%s:%d: %s", d->shown, p.fail_line, p.fail_msg);
    } else if (line > 0) {
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s:%d: expected '[section]' or 'key = value'",
                      d->shown, line);
    } else {
        rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", d->shown);
    }
    ini_free(d);
    return rc;
}

/*
 * Does a section name (as inih gives it: what is between the brackets,
 * untrimmed, as in configparser) stand for `name` of the given kind?  In
 * the config file "[profile NAME]" needs "profile" first and exactly one
 * word after it (botocore: startswith("profile"), then shlex.split), and a
 * bare "[NAME]" is no profile, but for "[default]".
 */
static int section_is(const char *section, enum section_kind kind, const char *name)
{
    if (kind == SECT_PLAIN)
        return strcmp(section, name) == 0;
    if (kind == SECT_PROFILE && strcmp(section, "default") == 0)
        return strcmp(name, "default") == 0;
    const char *word = kind == SECT_PROFILE ? "profile" : "services";
    size_t wl = strlen(word);
    if (strncmp(section, word, wl) != 0 || !isspace((unsigned char)section[wl]))
        return 0;
    const char *rest = section + wl;
    while (isspace((unsigned char)*rest))
        rest++;
    size_t n = 0;
    while (rest[n] && !isspace((unsigned char)rest[n]))
        n++;
    const char *after = rest + n;
    while (isspace((unsigned char)*after))
        after++;
    return *after == '\0' && n == strlen(name) && strncmp(rest, name, n) == 0;
}

/* The last entry for key (and sub-key) in the section; NULL when none. */
const ini_entry *aws_ini_get(const ini_doc *d, enum section_kind kind, const char *name,
                             const char *key, const char *sub)
{
    for (size_t i = d->n; i-- > 0;) {
        const ini_entry *e = &d->v[i];
        if (strcmp(e->key, key) != 0 || (sub ? !e->sub || strcmp(e->sub, sub) != 0 : !!e->sub))
            continue;
        if (section_is(e->section, kind, name))
            return e;
    }
    return NULL;
}

int aws_ini_has_section(const ini_doc *d, enum section_kind kind, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (section_is(d->v[i].section, kind, name))
            return 1;
    return 0;
}

/* ---- the two files and a profile's settings ----------------------------- */

void aws_files_free(aws_files *f)
{
    ini_free(&f->config);
    ini_free(&f->creds);
}

int aws_files_load(aws_files *f, const gpc_aws_config *cfg, gpc_error *err)
{
    memset(f, 0, sizeof(*f));
    int rc = ini_load(&f->config, cfg->config_file, err);
    if (!rc)
        rc = ini_load(&f->creds, cfg->credentials_file, err);
    if (rc)
        aws_files_free(f);
    return rc;
}

setting aws_profile_get(const aws_files *f, const char *profile, const char *key)
{
    setting s = {0};
    if ((s.e = aws_ini_get(&f->creds, SECT_PLAIN, profile, key, NULL))) {
        s.doc = &f->creds;
        s.in_creds = 1;
    } else if ((s.e = aws_ini_get(&f->config, SECT_PROFILE, profile, key, NULL))) {
        s.doc = &f->config;
    }
    return s;
}

const char *aws_setting_value(setting s)
{
    return s.e && *s.e->value ? s.e->value : NULL;
}

/* ---- gpc_aws_config_load ------------------------------------------------ */

static int resolve_profile(const gpc_aws_options *opts, gpc_aws_config *cfg, gpc_error *err)
{
    const char *name = "default", *from = "default";
    if (opts && opts->profile && *opts->profile) {
        name = opts->profile;
        from = opts->profile_from ? opts->profile_from : "--profile";
    } else if (aws_env("AWS_PROFILE")) {
        name = aws_env("AWS_PROFILE");
        from = "AWS_PROFILE";
    } else if (aws_env("AWS_DEFAULT_PROFILE")) {
        name = aws_env("AWS_DEFAULT_PROFILE");
        from = "AWS_DEFAULT_PROFILE";
    }
    if (!aws_fits(cfg->profile, sizeof(cfg->profile), name))
        return gpc_fail(err, GPC_ERR_USAGE, "AWS profile name from %s is longer than %zu "
                        "characters", from, sizeof(cfg->profile) - 1);
    aws_set_label(cfg->profile_from, sizeof(cfg->profile_from), "%s", from);
    return 0;
}

static int resolve_region(const gpc_aws_options *opts, gpc_aws_config *cfg, const aws_files *f,
                          gpc_error *err)
{
    const char *v, *from;
    char label[sizeof(cfg->region_from)];
    if (opts && opts->region && *opts->region) {
        v = opts->region;
        from = opts->region_from ? opts->region_from : "--region";
    } else if ((v = aws_env("AWS_REGION"))) {
        from = "AWS_REGION";
    } else if ((v = aws_env("AWS_DEFAULT_REGION"))) {
        from = "AWS_DEFAULT_REGION";
    } else {
        setting s = aws_profile_get(f, cfg->profile, "region");
        if (!(v = aws_setting_value(s)))
            return 0;
        aws_set_label(label, sizeof(label), "%s [profile %s]",
                      s.in_creds ? "credentials file" : "config file", cfg->profile);
        from = label;
    }
    if (!aws_fits(cfg->region, sizeof(cfg->region), v))
        return gpc_fail(err, GPC_ERR_USAGE, "AWS region from %s is longer than %zu characters",
                        from, sizeof(cfg->region) - 1);
    aws_set_label(cfg->region_from, sizeof(cfg->region_from), "%s", from);
    return 0;
}

/* AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, else the profile's setting. */
static int ignore_configured_endpoints(const gpc_aws_config *cfg, const aws_files *f)
{
    const char *v = aws_env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    if (v)
        return aws_is_true(v);
    return aws_is_true(
        aws_setting_value(aws_profile_get(f, cfg->profile, "ignore_configured_endpoint_urls")));
}

/* The profile's `services = NAME` -> [services NAME] -> KEY = endpoint_url. */
static int services_endpoint(const gpc_aws_config *cfg, const aws_files *f, const char *key,
                             const ini_entry **at, char *from, size_t from_size, gpc_error *err)
{
    setting s = aws_profile_get(f, cfg->profile, "services");
    const char *name = aws_setting_value(s);
    if (!name)
        return 0;
    if (!aws_ini_has_section(&f->config, SECT_SERVICES, name))
        return gpc_fail(err, GPC_ERR_SPEC, "%s:%d: profile '%s' uses services '%s', but %s has "
                        "no [services %s] section", s.doc->shown, s.e->line, cfg->profile, name,
                        f->config.shown, name);
    const ini_entry *e = aws_ini_get(&f->config, SECT_SERVICES, name, key, "endpoint_url");
    if (e && *e->value) {
        *at = e;
        aws_set_label(from, from_size, "config file [services %s]", name);
    }
    return 0;
}

/* Each service's names: the environment variable's suffix, the
 * [services] sub-key, the default host's first label and whether the
 * service is global or has one home region (NULL = the caller's region). */
static const struct {
    const char *env, *key, *host, *home;
} services[] = {
    [GPC_AWS_EC2] = {"EC2", "ec2", "ec2", NULL},
    [GPC_AWS_S3] = {"S3", "s3", "s3", NULL},
    [GPC_AWS_PRICING] = {"PRICING", "pricing", "api.pricing", "us-east-1"},
    [GPC_AWS_SERVICE_QUOTAS] = {"SERVICE_QUOTAS", "service_quotas", "servicequotas", NULL},
    [GPC_AWS_IAM] = {"IAM", "iam", "iam", "us-east-1"},
    [GPC_AWS_STS] = {"STS", "sts", "sts", NULL},
};

/*
 * The configured endpoint of service `svc`, in the SDKs' order (without
 * gpuctl's --endpoint and the ignore switch, which the callers weigh):
 * AWS_ENDPOINT_URL_<ID> > AWS_ENDPOINT_URL > the [services NAME] section's
 * `<key> =` endpoint_url > the profile's endpoint_url.  Copied into *out
 * (heap) with where it came from in `from`; *out NULL when none is set.
 * GPC_ERR_SPEC (PATH:LINE) / GPC_ERR_USAGE (the variable) for one that is
 * not an http(s) URL.
 */
static int configured_endpoint(const gpc_aws_config *cfg, const aws_files *f,
                               gpc_aws_service svc, char **out, char *from, size_t fs,
                               gpc_error *err)
{
    const char *url;
    const ini_entry *at = NULL;   /* set when the URL comes from a file */
    const ini_doc *doc = &f->config;
    char var[64];
    int rc;
    *out = NULL;
    snprintf(var, sizeof(var), "AWS_ENDPOINT_URL_%s", services[svc].env);
    if ((url = aws_env(var))) {
        aws_set_label(from, fs, "%s", var);
    } else if ((url = aws_env("AWS_ENDPOINT_URL"))) {
        aws_set_label(from, fs, "AWS_ENDPOINT_URL");
    } else {
        if ((rc = services_endpoint(cfg, f, services[svc].key, &at, from, fs, err)))
            return rc;
        if (!at) {
            setting s = aws_profile_get(f, cfg->profile, "endpoint_url");
            if (aws_setting_value(s)) {
                at = s.e;
                doc = s.doc;
                aws_set_label(from, fs, "%s [profile %s]",
                              s.in_creds ? "credentials file" : "config file", cfg->profile);
            }
        }
        if (!at)
            return 0;
        url = at->value;
    }
    if (!aws_is_http_url(url)) {
        char shown[256];
        gpc_http_redact_url(url, shown, sizeof(shown));
        if (at)
            return gpc_fail(err, GPC_ERR_SPEC, "%s:%d: endpoint_url '%s' is not an http:// or "
                            "https:// URL", doc->shown, at->line, shown);
        return gpc_fail(err, GPC_ERR_USAGE, "%s '%s' is not an http:// or https:// URL", from,
                        shown);
    }
    return (*out = gpc_strdup(url, err)) ? 0 : GPC_ERR_NOMEM;
}

/* EC2's: gpuctl's --endpoint first, then the configured one. */
static int resolve_endpoint(const gpc_aws_options *opts, gpc_aws_config *cfg,
                            const aws_files *f, gpc_error *err)
{
    if (opts && opts->endpoint && *opts->endpoint) {
        if (!aws_is_http_url(opts->endpoint)) {
            char shown[256];
            gpc_http_redact_url(opts->endpoint, shown, sizeof(shown));
            return gpc_fail(err, GPC_ERR_USAGE, "%s '%s' is not an http:// or https:// URL",
                            opts->endpoint_from ? opts->endpoint_from : "--endpoint", shown);
        }
        if (!(cfg->ec2_endpoint = gpc_strdup(opts->endpoint, err)))
            return GPC_ERR_NOMEM;
        aws_set_label(cfg->endpoint_from, sizeof(cfg->endpoint_from), "%s",
                      opts->endpoint_from ? opts->endpoint_from : "--endpoint");
        return 0;
    }
    if (ignore_configured_endpoints(cfg, f))
        return 0;
    return configured_endpoint(cfg, f, GPC_AWS_EC2, &cfg->ec2_endpoint, cfg->endpoint_from,
                               sizeof(cfg->endpoint_from), err);
}

/* Every service but EC2 (resolve_endpoint): the configured ones, without
 * gpuctl's own --endpoint. */
static int resolve_service_endpoints(gpc_aws_config *cfg, const aws_files *f, gpc_error *err)
{
    if (ignore_configured_endpoints(cfg, f))
        return 0;
    for (size_t i = GPC_AWS_S3; i < sizeof(services) / sizeof(services[0]); i++) {
        int rc = configured_endpoint(cfg, f, (gpc_aws_service)i, &cfg->svc_endpoint[i],
                                     cfg->svc_endpoint_from[i], sizeof(cfg->svc_endpoint_from[i]),
                                     err);
        if (rc)
            return rc;
    }
    return 0;
}

int gpc_aws_config_load(const gpc_aws_options *opts, gpc_aws_config *cfg, gpc_error *err)
{
    aws_files f;
    memset(cfg, 0, sizeof(*cfg));
    memset(&f, 0, sizeof(f));
    int rc = resolve_profile(opts, cfg, err);
    if (!rc)
        rc = resolve_path("AWS_CONFIG_FILE", "/.aws/config", &cfg->config_file, err);
    if (!rc)
        rc = resolve_path("AWS_SHARED_CREDENTIALS_FILE", "/.aws/credentials",
                          &cfg->credentials_file, err);
    if (!rc)
        rc = aws_files_load(&f, cfg, err);
    if (!rc)
        rc = resolve_region(opts, cfg, &f, err);
    if (!rc)
        rc = resolve_endpoint(opts, cfg, &f, err);
    if (!rc)
        rc = resolve_service_endpoints(cfg, &f, err);
    aws_files_free(&f);
    if (rc)
        gpc_aws_config_free(cfg);
    return rc;
}

void gpc_aws_config_free(gpc_aws_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->ec2_endpoint);
    for (size_t i = 0; i < sizeof(cfg->svc_endpoint) / sizeof(cfg->svc_endpoint[0]); i++)
        free(cfg->svc_endpoint[i]);
    free(cfg->credentials_file);
    free(cfg->config_file);
    memset(cfg, 0, sizeof(*cfg));
}

/* ---- endpoint and region ------------------------------------------------ */

int gpc_aws_ec2_endpoint(const gpc_aws_config *cfg, const char *region, char **url,
                         gpc_error *err)
{
    *url = NULL;
    if (!aws_valid_region(region))
        return gpc_fail(err, GPC_ERR_USAGE, "invalid AWS region '%.64s' (expected lower-case "
                        "letters, digits and '-', e.g. us-east-1)", region ? region : "");
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_LINE_MAX);
    int rc;
    if (cfg && cfg->ec2_endpoint)
        rc = gpc_buf_adds(&b, cfg->ec2_endpoint, err);
    else
        rc = gpc_buf_addf(&b, err, "https://ec2.%s.amazonaws.com%s", region,
                          strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
    if (rc) {
        gpc_buf_free(&b);
        return rc;
    }
    *url = gpc_buf_take(&b);
    return *url ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}


int gpc_aws_service_endpoint(const gpc_aws_config *cfg, gpc_aws_service svc,
                             const char *region, char **url, char *sign_region,
                             size_t size, gpc_error *err)
{
    *url = NULL;
    if ((size_t)svc >= sizeof(services) / sizeof(services[0]))
        return gpc_fail(err, GPC_ERR_INTERNAL, "unknown AWS service %d", (int)svc);
    if (svc == GPC_AWS_EC2) {
        int rc = gpc_aws_ec2_endpoint(cfg, region, url, err);
        if (!rc && sign_region)
            snprintf(sign_region, size, "%s", region);
        return rc;
    }
    if (!aws_valid_region(region))
        return gpc_fail(err, GPC_ERR_USAGE, "invalid AWS region '%.64s' (expected lower-case "
                        "letters, digits and '-', e.g. us-east-1)", region ? region : "");
    const char *home = services[svc].home;
    int china = strncmp(region, "cn-", 3) == 0;
    if (home && china)   /* the partition's own home region */
        home = svc == GPC_AWS_IAM ? "cn-north-1" : "cn-northwest-1";
    if (sign_region && !aws_fits(sign_region, size, home ? home : region))
        return gpc_fail(err, GPC_ERR_INTERNAL, "signing region buffer too small");
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_LINE_MAX);
    int rc;
    if (cfg && cfg->svc_endpoint[svc])
        rc = gpc_buf_adds(&b, cfg->svc_endpoint[svc], err);
    else if (svc == GPC_AWS_IAM)
        rc = gpc_buf_addf(&b, err, "https://iam.amazonaws.com%s", china ? ".cn" : "");
    else
        rc = gpc_buf_addf(&b, err, "https://%s.%s.amazonaws.com%s", services[svc].host,
                          home ? home : region, china ? ".cn" : "");
    if (rc) {
        gpc_buf_free(&b);
        return rc;
    }
    *url = gpc_buf_take(&b);
    return *url ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}
