/* config.c - AWS credentials, region and EC2 endpoint; see include/gpuctl/aws_config.h */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ini.h>
#include <openssl/crypto.h>

#include "aws/config.h"
#include "gpuctl/buf.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

extern char **environ;

#define INI_FILE_MAX   (1u << 20) /* ~/.aws/config or credentials */
#define SHOWN_MAX      256        /* a path as shown in messages */
#define IMDS_TOKEN_MAX 512        /* real tokens are ~60 bytes */
#define IMDS_BODY_MAX  (64u << 10)
#define HINT_FMT       "eval \"$(aws configure export-credentials --profile %s --format env)\""
#define STR_(x)        #x
#define STR(x)         STR_(x)

/* ---- small helpers ------------------------------------------------------ */

/* An environment variable; an empty one counts as unset. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* botocore's ensure_boolean: only "true", in any case, is true. */
static int is_true(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
}

/* Copy src into dst[size] when it fits; 0 (dst untouched) when it does not. */
static int fits(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        return 0;
    memcpy(dst, src, n + 1);
    return 1;
}

/* snprintf into a field, truncating (labels only: never data that counts). */
static void set_label(char *dst, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_label(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

static void wipe_free(char *s)
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
static int is_http_url(const char *url)
{
    const char *rest = NULL;
    if (strncasecmp(url, "http://", 7) == 0)
        rest = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        rest = url + 8;
    return rest && *rest && !strchr("/?#", *rest);
}

/* botocore's region rule, lower-case only: [a-z0-9] ([a-z0-9-]* [a-z0-9])?. */
static int valid_region(const char *r)
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
static int parse_iso8601(const char *s, int64_t *out)
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

static void format_time(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, size, "%lld", (long long)t);
}

/* ---- paths -------------------------------------------------------------- */

static int home_dir(const char **out, gpc_error *err)
{
    const char *home = env("HOME");
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
    const char *v = env(var), *home = NULL;
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
    const char *home = env("HOME");
    size_t n = home ? strlen(home) : 0;
    while (n > 1 && home[n - 1] == '/')
        n--;
    if (n > 1 && strncmp(path, home, n) == 0 && path[n] == '/')
        set_label(out, size, "~%s", path + n);
    else
        set_label(out, size, "%s", path);
}

/* ---- INI files: libinih plus sub-sections ------------------------------- */

typedef struct ini_entry {
    char *section;  /* as inih gives it (untrimmed), e.g. "profile dev" */
    char *key;
    char *sub;      /* sub-section key ("endpoint_url" under "ec2 ="); NULL = top level */
    char *value;
    int line;
} ini_entry;

typedef struct ini_doc {
    char shown[SHOWN_MAX];
    int present;    /* the file exists */
    ini_entry *v;
    size_t n, cap;
} ini_doc;

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
        wipe_free(top->value);
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
    wipe_free(value);
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
    wipe_free(whole);
    return ok;
}

static void ini_free(ini_doc *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].section);
        free(d->v[i].key);
        free(d->v[i].sub);
        wipe_free(d->v[i].value);
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

enum section_kind {
    SECT_PLAIN,    /* credentials file: [NAME] */
    SECT_PROFILE,  /* config file: [profile NAME], [default] */
    SECT_SERVICES  /* config file: [services NAME] */
};

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
static const ini_entry *ini_get(const ini_doc *d, enum section_kind kind, const char *name,
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

static int ini_has_section(const ini_doc *d, enum section_kind kind, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (section_is(d->v[i].section, kind, name))
            return 1;
    return 0;
}

/* ---- the two files and a profile's settings ----------------------------- */

typedef struct aws_files {
    ini_doc config, creds;
} aws_files;

static void files_free(aws_files *f)
{
    ini_free(&f->config);
    ini_free(&f->creds);
}

static int files_load(aws_files *f, const gpc_aws_config *cfg, gpc_error *err)
{
    memset(f, 0, sizeof(*f));
    int rc = ini_load(&f->config, cfg->config_file, err);
    if (!rc)
        rc = ini_load(&f->creds, cfg->credentials_file, err);
    if (rc)
        files_free(f);
    return rc;
}

/* A profile setting: botocore overlays the credentials file's [NAME] on the
 * config file's [profile NAME] (session.full_config). */
typedef struct setting {
    const ini_entry *e;   /* NULL = not set */
    const ini_doc *doc;
    int in_creds;
} setting;

static setting profile_get(const aws_files *f, const char *profile, const char *key)
{
    setting s = {0};
    if ((s.e = ini_get(&f->creds, SECT_PLAIN, profile, key, NULL))) {
        s.doc = &f->creds;
        s.in_creds = 1;
    } else if ((s.e = ini_get(&f->config, SECT_PROFILE, profile, key, NULL))) {
        s.doc = &f->config;
    }
    return s;
}

static const char *setting_value(setting s)
{
    return s.e && *s.e->value ? s.e->value : NULL;
}

/* ---- gpc_aws_config_load ------------------------------------------------ */

static int resolve_profile(const gpc_aws_options *opts, gpc_aws_config *cfg, gpc_error *err)
{
    const char *name = "default", *from = "default";
    if (opts && opts->profile && *opts->profile) {
        name = opts->profile;
        from = "--profile";
    } else if (env("AWS_PROFILE")) {
        name = env("AWS_PROFILE");
        from = "AWS_PROFILE";
    } else if (env("AWS_DEFAULT_PROFILE")) {
        name = env("AWS_DEFAULT_PROFILE");
        from = "AWS_DEFAULT_PROFILE";
    }
    if (!fits(cfg->profile, sizeof(cfg->profile), name))
        return gpc_fail(err, GPC_ERR_USAGE, "AWS profile name from %s is longer than %zu "
                        "characters", from, sizeof(cfg->profile) - 1);
    set_label(cfg->profile_from, sizeof(cfg->profile_from), "%s", from);
    return 0;
}

static int resolve_region(const gpc_aws_options *opts, gpc_aws_config *cfg, const aws_files *f,
                          gpc_error *err)
{
    const char *v, *from;
    char label[sizeof(cfg->region_from)];
    if (opts && opts->region && *opts->region) {
        v = opts->region;
        from = "--region";
    } else if ((v = env("AWS_REGION"))) {
        from = "AWS_REGION";
    } else if ((v = env("AWS_DEFAULT_REGION"))) {
        from = "AWS_DEFAULT_REGION";
    } else {
        setting s = profile_get(f, cfg->profile, "region");
        if (!(v = setting_value(s)))
            return 0;
        set_label(label, sizeof(label), "%s [profile %s]",
                  s.in_creds ? "credentials file" : "config file", cfg->profile);
        from = label;
    }
    if (!fits(cfg->region, sizeof(cfg->region), v))
        return gpc_fail(err, GPC_ERR_USAGE, "AWS region from %s is longer than %zu characters",
                        from, sizeof(cfg->region) - 1);
    set_label(cfg->region_from, sizeof(cfg->region_from), "%s", from);
    return 0;
}

/* AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, else the profile's setting. */
static int ignore_configured_endpoints(const gpc_aws_config *cfg, const aws_files *f)
{
    const char *v = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    if (v)
        return is_true(v);
    return is_true(setting_value(profile_get(f, cfg->profile, "ignore_configured_endpoint_urls")));
}

/* The profile's `services = NAME` -> [services NAME] -> ec2 = endpoint_url. */
static int services_endpoint(const gpc_aws_config *cfg, const aws_files *f,
                             const ini_entry **at, char *from, size_t from_size, gpc_error *err)
{
    setting s = profile_get(f, cfg->profile, "services");
    const char *name = setting_value(s);
    if (!name)
        return 0;
    if (!ini_has_section(&f->config, SECT_SERVICES, name))
        return gpc_fail(err, GPC_ERR_SPEC, "%s:%d: profile '%s' uses services '%s', but %s has "
                        "no [services %s] section", s.doc->shown, s.e->line, cfg->profile, name,
                        f->config.shown, name);
    const ini_entry *e = ini_get(&f->config, SECT_SERVICES, name, "ec2", "endpoint_url");
    if (e && *e->value) {
        *at = e;
        set_label(from, from_size, "config file [services %s]", name);
    }
    return 0;
}

static int resolve_endpoint(const gpc_aws_options *opts, gpc_aws_config *cfg,
                            const aws_files *f, gpc_error *err)
{
    const char *url = NULL;
    const ini_entry *at = NULL;   /* set when the URL comes from a file */
    const ini_doc *doc = &f->config;
    char from[sizeof(cfg->endpoint_from)] = "";
    int rc;

    if (opts && opts->endpoint && *opts->endpoint) {
        url = opts->endpoint;
        set_label(from, sizeof(from), "--endpoint");
    } else if (ignore_configured_endpoints(cfg, f)) {
        return 0;
    } else if ((url = env("AWS_ENDPOINT_URL_EC2"))) {
        set_label(from, sizeof(from), "AWS_ENDPOINT_URL_EC2");
    } else if ((url = env("AWS_ENDPOINT_URL"))) {
        set_label(from, sizeof(from), "AWS_ENDPOINT_URL");
    } else {
        if ((rc = services_endpoint(cfg, f, &at, from, sizeof(from), err)))
            return rc;
        if (!at) {
            setting s = profile_get(f, cfg->profile, "endpoint_url");
            if (setting_value(s)) {
                at = s.e;
                doc = s.doc;
                set_label(from, sizeof(from), "%s [profile %s]",
                          s.in_creds ? "credentials file" : "config file", cfg->profile);
            }
        }
        if (!at)
            return 0;
        url = at->value;
    }
    if (!is_http_url(url)) {
        char shown[256];
        gpc_http_redact_url(url, shown, sizeof(shown));
        if (at)
            return gpc_fail(err, GPC_ERR_SPEC, "%s:%d: endpoint_url '%s' is not an http:// or "
                            "https:// URL", doc->shown, at->line, shown);
        return gpc_fail(err, GPC_ERR_USAGE, "%s '%s' is not an http:// or https:// URL", from,
                        shown);
    }
    if (!(cfg->ec2_endpoint = gpc_strdup(url, err)))
        return GPC_ERR_NOMEM;
    set_label(cfg->endpoint_from, sizeof(cfg->endpoint_from), "%s", from);
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
        rc = files_load(&f, cfg, err);
    if (!rc)
        rc = resolve_region(opts, cfg, &f, err);
    if (!rc)
        rc = resolve_endpoint(opts, cfg, &f, err);
    files_free(&f);
    if (rc)
        gpc_aws_config_free(cfg);
    return rc;
}

void gpc_aws_config_free(gpc_aws_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->ec2_endpoint);
    free(cfg->credentials_file);
    free(cfg->config_file);
    memset(cfg, 0, sizeof(*cfg));
}

/* ---- credentials: common parts ------------------------------------------ */

void gpc_aws_creds_free(gpc_aws_creds *c)
{
    if (!c)
        return;
    wipe_free(c->session_token);
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
static int creds_fill(gpc_aws_creds *out, const char *akid, const char *secret,
                      const char *token, int64_t expiration, const char *source,
                      gpc_error *err)
{
    if (expiration && expiration <= gpc_now()) {
        char when[40];
        format_time(expiration, when, sizeof(when));
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS credentials from %s expired at %s", source,
                        when);
    }
    if (!fits(out->access_key_id, sizeof(out->access_key_id), akid))
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS access key id from %s is longer than %zu "
                        "characters", source, sizeof(out->access_key_id) - 1);
    if (!fits(out->secret_access_key, sizeof(out->secret_access_key), secret))
        return gpc_fail(err, GPC_ERR_AUTH, "the AWS secret access key from %s is longer than "
                        "%zu characters", source, sizeof(out->secret_access_key) - 1);
    if (token && *token && !(out->session_token = strdup(token)))
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    out->expiration = expiration;
    set_label(out->source, sizeof(out->source), "%s", source);
    return 0;
}

/* The state of one walk down the chain. */
typedef struct chain {
    const gpc_aws_config *cfg;
    aws_files files;
    int explicit_profile;   /* --profile: no env keys */
    gpc_aws_creds *out;
    int found;
    gpc_buf tried;          /* "what, what (why), ..." for the final message */
    gpc_error *err;
} chain;

static void note_tried(chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_tried(chain *c, const char *fmt, ...)
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
    const ini_entry *akid = ini_get(d, kind, profile, "aws_access_key_id", NULL);
    const ini_entry *secret = ini_get(d, kind, profile, "aws_secret_access_key", NULL);
    /* botocore looks at the legacy name first */
    const ini_entry *token = ini_get(d, kind, profile, "aws_security_token", NULL);
    if (!token)
        token = ini_get(d, kind, profile, "aws_session_token", NULL);
    if (akid && !*akid->value)
        akid = NULL;
    if (secret && !*secret->value)
        secret = NULL;
    if (!akid && !secret) {
        if (d->present)
            note_tried(c, "%s %s (no keys in %s)", file_label, d->shown, section_label);
        else
            note_tried(c, "%s %s (no such file)", file_label, d->shown);
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
        set_label(source, sizeof(source), "%s %s [profile %s]", file_label, d->shown, profile);
    else
        set_label(source, sizeof(source), "%s [profile %s]", file_label, profile);
    c->found = 1;
    return creds_fill(c->out, akid->value, secret->value, token ? token->value : NULL, 0,
                      source, c->err);
}

/* ---- credentials: the steps, in botocore's order ------------------------ */

static int step_profile_exists(chain *c)
{
    const gpc_aws_config *cfg = c->cfg;
    if (strcmp(cfg->profile_from, "default") == 0 ||
        ini_has_section(&c->files.config, SECT_PROFILE, cfg->profile) ||
        ini_has_section(&c->files.creds, SECT_PLAIN, cfg->profile))
        return 0;
    return gpc_fail(c->err, GPC_ERR_AUTH, "AWS profile '%s' not found in %s or %s (named by %s)",
                    cfg->profile, c->files.config.shown, c->files.creds.shown,
                    cfg->profile_from);
}

static int step_env(chain *c)
{
    if (c->explicit_profile) {
        note_tried(c, "environment variables (ignored with --profile)");
        return 0;
    }
    const char *akid = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    if (!akid && !secret) {
        note_tried(c, "environment variables");
        return 0;
    }
    if (!akid || !secret)
        return gpc_fail(c->err, GPC_ERR_AUTH, "%s is set but %s is not; set both, or unset "
                        "%s to use the profile", akid ? "AWS_ACCESS_KEY_ID" :
                        "AWS_SECRET_ACCESS_KEY", akid ? "AWS_SECRET_ACCESS_KEY" :
                        "AWS_ACCESS_KEY_ID", akid ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
    const char *token = env("AWS_SECURITY_TOKEN"); /* botocore: the legacy name first */
    if (!token)
        token = env("AWS_SESSION_TOKEN");
    const char *exp_text = env("AWS_CREDENTIAL_EXPIRATION");
    int64_t exp = 0;
    if (exp_text && !parse_iso8601(exp_text, &exp))
        return gpc_fail(c->err, GPC_ERR_AUTH, "AWS_CREDENTIAL_EXPIRATION '%.40s' is not an ISO "
                        "8601 time such as 2026-01-01T12:00:00Z", exp_text);
    c->found = 1;
    return creds_fill(c->out, akid, secret, token, exp, "environment", c->err);
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
        if (profile_get(&c->files, c->cfg->profile, keys[i].key).e) {
            set_label(what, sizeof(what), "profile '%s' uses %s (%s)", c->cfg->profile,
                      keys[i].key, keys[i].feature);
            return unsupported(c, what);
        }
    }
    if (!c->explicit_profile && env("AWS_WEB_IDENTITY_TOKEN_FILE"))
        return unsupported(c, "AWS_WEB_IDENTITY_TOKEN_FILE is set (AssumeRoleWithWebIdentity)");
    return 0;
}

static int step_credentials_file(chain *c)
{
    char section[sizeof(c->cfg->profile) + 2];
    set_label(section, sizeof(section), "[%s]", c->cfg->profile);
    return file_keys(c, &c->files.creds, SECT_PLAIN, section, "shared credentials file");
}

static int step_login_session(chain *c)
{
    char what[200];
    if (!profile_get(&c->files, c->cfg->profile, "login_session").e)
        return 0;
    set_label(what, sizeof(what), "profile '%s' uses login_session (aws login)", c->cfg->profile);
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

static const char *json_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* Overwrite every string in a parsed document before it is freed. */
static void json_wipe(cJSON *j)
{
    for (; j; j = j->next) {
        if (j->valuestring)
            OPENSSL_cleanse(j->valuestring, strlen(j->valuestring));
        json_wipe(j->child);
    }
}

/* The credential_process JSON (Version 1).  Never quotes the output. */
static int process_creds(chain *c, const char *what, const gpc_buf *text)
{
    cJSON *doc = cJSON_ParseWithLength(text->data ? text->data : "", text->len);
    int rc;
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "Version");
    const char *akid = json_str(doc, "AccessKeyId"), *secret = json_str(doc, "SecretAccessKey");
    const char *exp_text = json_str(doc, "Expiration");
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
    else if (exp_text && !parse_iso8601(exp_text, &exp))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "%s printed an Expiration that is not an ISO 8601 "
                      "time", what);
    else {
        set_label(source, sizeof(source), "credential_process [profile %s]", c->cfg->profile);
        c->found = 1;
        rc = creds_fill(c->out, akid, secret, json_str(doc, "SessionToken"), exp, source,
                        c->err);
    }
    json_wipe(doc);
    cJSON_Delete(doc);
    return rc;
}

static int step_credential_process(chain *c)
{
    const char *cmd = setting_value(profile_get(&c->files, c->cfg->profile, "credential_process"));
    if (!cmd)
        return 0;
    char what[200];
    set_label(what, sizeof(what), "credential_process for profile '%s'", c->cfg->profile);
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
        set_label(section, sizeof(section), "[default]");
    else
        set_label(section, sizeof(section), "[profile %s]", c->cfg->profile);
    return file_keys(c, &c->files.config, SECT_PROFILE, section, "config file");
}

static int step_container(chain *c)
{
    static const char *const vars[] = {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI"};
    char what[120];
    for (size_t i = 0; i < 2; i++) {
        if (env(vars[i])) {
            set_label(what, sizeof(what), "%s is set (container credentials)", vars[i]);
            return unsupported(c, what);
        }
    }
    return 0;
}

/* ---- IMDSv2 ------------------------------------------------------------- */

static const gpc_http_opts imds_http = {
    .timeout_s = GPC_AWS_IMDS_TIMEOUT_S,
    .connect_timeout_s = GPC_AWS_IMDS_TIMEOUT_S,
    .max_attempts = 1,
    .max_body = IMDS_BODY_MAX,
    .what = "EC2 instance metadata",
};

static int imds_disabled(void)
{
    return is_true(env("AWS_EC2_METADATA_DISABLED"));
}

/* The IMDS base URL, without a trailing '/'. */
static int imds_base(char *out, size_t size, gpc_error *err)
{
    const char *v = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    const char *mode = env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (v) {
        char shown[256];
        gpc_http_redact_url(v, shown, sizeof(shown));
        if (!is_http_url(v) || strlen(v) >= size)
            return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT '%s' is not "
                            "an http:// URL", shown);
        /* IMDS takes no user:password@, and messages show this URL */
        const char *auth = strstr(v, "://") + 3;
        if (memchr(auth, '@', strcspn(auth, "/?#")))
            return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT '%s' must not "
                            "hold a user name or password", shown);
    } else if (mode && strcasecmp(mode, "ipv6") == 0) {
        v = GPC_AWS_IMDS_ENDPOINT_IPV6;
    } else if (!mode || strcasecmp(mode, "ipv4") == 0) {
        v = GPC_AWS_IMDS_ENDPOINT;
    } else {
        return gpc_fail(err, GPC_ERR_USAGE, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE '%.20s' is "
                        "neither IPv4 nor IPv6", mode);
    }
    size_t n = strlen(v);
    while (n > 0 && v[n - 1] == '/')
        n--;
    memcpy(out, v, n);
    out[n] = '\0';
    return 0;
}

static void response_wipe_free(gpc_http_response *resp)
{
    if (resp->body.data)
        OPENSSL_cleanse(resp->body.data, resp->body.cap);
    gpc_http_response_free(resp);
}

/*
 * One IMDS request with one header.  Returns the HTTP status of a 2xx reply
 * kept in *resp, 0 when nothing answered, the status of any other reply, or
 * -1 when a reply could not be taken (too large).  Failures are answers
 * here, so the caller's error is not touched.
 */
static long imds_send(const char *base, const char *method, const char *path,
                      const char *header, gpc_http_response *resp)
{
    char url[512];
    set_label(url, sizeof(url), "%s%s", base, path);
    const char *headers[] = {header};
    gpc_http_request req = {.method = method, .url = url, .headers = headers, .n_headers = 1};
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_http_send(&req, &imds_http, resp, &e);
    if (rc == 0)
        return resp->status;
    if (resp->status == 0 || (resp->status >= 200 && resp->status < 300))
        return resp->status ? -1 : 0;
    return resp->status;
}

/* The body of a 200 reply, blanks trimmed, first line only, in out. */
static int body_line(const gpc_http_response *resp, char *out, size_t size)
{
    const char *s = resp->body.data ? resp->body.data : "";
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= size)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* PUT /latest/api/token; fills hdr with the "X-aws-ec2-metadata-token: T"
 * header.  Returns the status as imds_send() (-1 for a bad token). */
static long imds_session(const char *base, char *hdr, size_t size)
{
    gpc_http_response resp;
    char token[IMDS_TOKEN_MAX];
    long st = imds_send(base, "PUT", "/latest/api/token",
                        "X-aws-ec2-metadata-token-ttl-seconds: " STR(GPC_AWS_IMDS_TOKEN_TTL_S),
                        &resp);
    if (st == 200 && !body_line(&resp, token, sizeof(token)))
        st = -1;
    if (st == 200)
        set_label(hdr, size, "X-aws-ec2-metadata-token: %s", token);
    OPENSSL_cleanse(token, sizeof(token));
    response_wipe_free(&resp);
    return st;
}

/* An IAM role name, safe to put in a path: [A-Za-z0-9+=,.@_-]{1,64}. */
static int valid_role(const char *r)
{
    size_t n = strlen(r);
    return n > 0 && n <= 64 && strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789+=,.@_-") == n;
}

#define IMDS_ROLES "/latest/meta-data/iam/security-credentials/"

/* GET .../security-credentials/ROLE and fill the credentials from it. */
static int imds_role_creds(chain *c, const char *base, const char *hdr, const char *role)
{
    char path[160], source[sizeof(c->out->source)];
    set_label(path, sizeof(path), IMDS_ROLES "%s", role);
    set_label(source, sizeof(source), "EC2 instance role '%s' (IMDSv2)", role);
    gpc_http_response resp;
    long st = imds_send(base, "GET", path, hdr, &resp);
    cJSON *doc = st == 200 ? cJSON_ParseWithLength(resp.body.data, resp.body.len) : NULL;
    response_wipe_free(&resp);
    const char *code = json_str(doc, "Code"), *exp_text = json_str(doc, "Expiration");
    const char *akid = json_str(doc, "AccessKeyId"), *secret = json_str(doc, "SecretAccessKey");
    const char *token = json_str(doc, "Token");
    int64_t exp = 0;
    int rc;
    if (st != 200)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: cannot read the "
                      "credentials of instance role '%s' (%s %ld)", base, role,
                      st > 0 ? "HTTP" : "status", st);
    else if (!cJSON_IsObject(doc))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the credentials of "
                      "instance role '%s' are not a JSON object", base, role);
    else if (code && strcmp(code, "Success") != 0)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: instance role '%s' "
                      "has no credentials (Code '%.40s')", base, role, code);
    else if (!akid || !*akid || !secret || !*secret || !token || !*token || !exp_text)
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the credentials of "
                      "instance role '%s' lack AccessKeyId, SecretAccessKey, Token or "
                      "Expiration", base, role);
    else if (!parse_iso8601(exp_text, &exp))
        rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: instance role '%s' "
                      "credentials have an Expiration that is not an ISO 8601 time", base, role);
    else {
        c->found = 1;
        rc = creds_fill(c->out, akid, secret, token, exp, source, c->err);
    }
    json_wipe(doc);
    cJSON_Delete(doc);
    return rc;
}

static int step_imds(chain *c)
{
    if (imds_disabled()) {
        note_tried(c, "EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED)");
        return 0;
    }
    char base[256], hdr[IMDS_TOKEN_MAX + 40], role[128];
    int rc = imds_base(base, sizeof(base), c->err);
    if (rc)
        return rc;
    long st = imds_session(base, hdr, sizeof(hdr));
    if (st == 200) {
        gpc_http_response resp;
        st = imds_send(base, "GET", IMDS_ROLES, hdr, &resp);
        if (st == 200 && !body_line(&resp, role, sizeof(role)))
            st = 404; /* an empty list: no role */
        response_wipe_free(&resp);
        if (st == 200 && !valid_role(role))
            rc = gpc_fail(c->err, GPC_ERR_AUTH, "EC2 instance metadata at %s: the instance "
                          "role name is not valid", base);
        else if (st == 200)
            rc = imds_role_creds(c, base, hdr, role);
        else if (st == 404)
            note_tried(c, "EC2 instance metadata at %s (no instance role)", base);
        else if (st > 0)
            note_tried(c, "EC2 instance metadata at %s (listing instance roles: HTTP %ld)", base,
                       st);
        else
            note_tried(c, "EC2 instance metadata at %s (no answer listing instance roles)",
                       base);
    } else if (st == 0) {
        note_tried(c, "EC2 instance metadata at %s (no reply)", base);
    } else if (st > 0) {
        note_tried(c, "EC2 instance metadata at %s (token request: HTTP %ld)", base, st);
    } else {
        note_tried(c, "EC2 instance metadata at %s (no usable token)", base);
    }
    OPENSSL_cleanse(hdr, sizeof(hdr));
    return rc;
}

int gpc_aws_credentials(const gpc_aws_config *cfg, const gpc_aws_options *opts,
                        gpc_aws_creds *out, gpc_error *err)
{
    static int (*const steps[])(chain *) = {
        step_profile_exists, step_env, step_unsupported_profile, step_credentials_file,
        step_login_session, step_credential_process, step_config_file, step_container,
        step_imds,
    };
    memset(out, 0, sizeof(*out));
    chain c = {.cfg = cfg, .out = out, .err = err};
    c.explicit_profile = strcmp(cfg->profile_from, "--profile") == 0 ||
                         (opts && opts->profile && *opts->profile);
    gpc_buf_init(&c.tried, GPC_BUF_LINE_MAX);
    int rc = files_load(&c.files, cfg, err);
    for (size_t i = 0; !rc && !c.found && i < sizeof(steps) / sizeof(*steps); i++)
        rc = steps[i](&c);
    if (!rc && !c.found)
        rc = gpc_fail(err, GPC_ERR_AUTH, "no AWS credentials found for profile '%s': tried %s; "
                      "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the profile "
                      "keys (aws configure)", cfg->profile, gpc_buf_str(&c.tried));
    files_free(&c.files);
    gpc_buf_free(&c.tried);
    if (rc)
        gpc_aws_creds_free(out);
    return rc;
}

/* ---- endpoint and region ------------------------------------------------ */

int gpc_aws_ec2_endpoint(const gpc_aws_config *cfg, const char *region, char **url,
                         gpc_error *err)
{
    *url = NULL;
    if (!valid_region(region))
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

int gpc_aws_imds_region(char *out, size_t size, gpc_error *err)
{
    if (size)
        out[0] = '\0';
    if (imds_disabled())
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "cannot ask EC2 instance metadata for the "
                        "region: disabled by AWS_EC2_METADATA_DISABLED");
    char base[256], hdr[IMDS_TOKEN_MAX + 40], region[64];
    int rc = imds_base(base, sizeof(base), err);
    if (rc)
        return rc;
    long st = imds_session(base, hdr, sizeof(hdr));
    if (st == 0)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "no reply from EC2 instance metadata at %s "
                        "(not on EC2?)", base);
    if (st != 200)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "EC2 instance metadata at %s refused a token "
                        "(%s %ld)", base, st > 0 ? "HTTP" : "status", st);
    gpc_http_response resp;
    st = imds_send(base, "GET", "/latest/meta-data/placement/region", hdr, &resp);
    OPENSSL_cleanse(hdr, sizeof(hdr));
    int got = st == 200 && body_line(&resp, region, sizeof(region));
    gpc_http_response_free(&resp);
    if (st == 0 || st == 404)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "EC2 instance metadata at %s: no "
                        "placement/region (%s)", base, st ? "HTTP 404" : "no reply");
    if (st != 200)
        return gpc_fail(err, GPC_ERR_PROVIDER, "EC2 instance metadata at %s: GET "
                        "placement/region: %s %ld", base, st > 0 ? "HTTP" : "status", st);
    if (!got || !valid_region(region) || !fits(out, size, region))
        return gpc_fail(err, GPC_ERR_PROVIDER, "EC2 instance metadata at %s: placement/region "
                        "is not a region name", base);
    return 0;
}
