/*
 * settings.c - a provider's settings (endpoint, profile, region) from the
 * command line, the environment and the config file (cluster.h,
 * docs/config.md).
 *
 * The config file is INI, read with inih from memory one line at a time
 * (so that every error names its line), with continuation lines and
 * inline comments off: a value is the whole rest of its line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "gpuctl/cluster.h"
#include "gpuctl/util.h"

/* The keys of a [provider "NAME"] section, in gpc_provider_settings order. */
enum { KEY_ENDPOINT, KEY_PROFILE, KEY_REGION, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {"endpoint", "profile", "region"};

/* A config file larger than this is refused (bytes). */
#define CONFIG_FILE_MAX (1u << 20)

int gpc_config_path(char *buf, size_t n, int *named, gpc_error *err)
{
    *named = 0;
    const char *env = getenv("GPUCTL_CONFIG"), *dir, *sub;
    int len;
    if (env && *env) {
        *named = 1;
        len = snprintf(buf, n, "%s", env);
    } else {
        if ((dir = getenv("GPUCTL_CONFIG_DIR")) && *dir) {
            sub = "/config";
        } else if ((dir = getenv("XDG_CONFIG_HOME")) && dir[0] == '/') {
            sub = "/gpuctl/config"; /* a relative XDG_CONFIG_HOME is ignored */
        } else if ((dir = getenv("HOME")) && *dir) {
            sub = "/.config/gpuctl/config";
        } else {
            buf[0] = '\0';
            return 0;
        }
        len = snprintf(buf, n, "%s%s", dir, sub);
    }
    if (len < 0 || (size_t)len >= n)
        return gpc_fail(err, GPC_ERR_IO, "the config file's path is too long (%s)",
                        env && *env ? "GPUCTL_CONFIG" : "its directory");
    return 0;
}

/* What the parse of one file is after, and where it stands. */
typedef struct config_parse {
    const char *path;
    const char *data;
    size_t len, pos;
    int line;                      /* of the line inih has now */
    const char *want;              /* the provider whose settings are read */
    char *value[KEY_COUNT];        /* its values (owned) */
    int value_line[KEY_COUNT];
    struct seen {                  /* every provider's keys so far (owned) */
        char prov[64];
        int key, line;
    } *seen;
    size_t n_seen;
    int fail_line;                 /* the first error, 0 when none */
    gpc_code fail_code;
    char fail_msg[512];
} config_parse;

static int parse_fail(config_parse *p, gpc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int parse_fail(config_parse *p, gpc_code code, const char *fmt, ...)
{
    if (!p->fail_line) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->fail_msg, sizeof(p->fail_msg), fmt, ap);
        va_end(ap);
        p->fail_line = p->line;
        p->fail_code = code;
    }
    return 0; /* inih: this line failed */
}

/*
 * The provider a section names: `provider "NAME"` (spaces around the
 * words allowed).  Copies NAME to name (size bytes) and returns 1, or
 * returns 0 when the section is not of that form.
 */
static int section_provider(const char *section, char *name, size_t size)
{
    const char *s = section;
    while (isspace((unsigned char)*s))
        s++;
    if (strncmp(s, "provider", 8) != 0 || !isspace((unsigned char)s[8]))
        return 0;
    s += 8;
    while (isspace((unsigned char)*s))
        s++;
    if (*s != '"')
        return 0;
    const char *q = strchr(s + 1, '"');
    if (!q)
        return 0;
    for (const char *t = q + 1; *t; t++)
        if (!isspace((unsigned char)*t))
            return 0;
    size_t n = (size_t)(q - s - 1);
    if (n == 0 || n >= size)
        return 0;
    memcpy(name, s + 1, n);
    name[n] = '\0';
    return 1;
}

/* A section header's line ("[...]"): is it [provider "NAME"] of a provider
 * in the registry?  Checked here, where the line is known, since inih
 * calls on_value only for the keys that follow.  A header without its
 * ']' is inih's syntax error. */
static void check_section(config_parse *p, const char *line, size_t n)
{
    const char *close = memchr(line, ']', n);
    if (!close)
        return;
    char sect[200], prov[64];
    snprintf(sect, sizeof(sect), "%.*s", (int)(close - line - 1), line + 1);
    if (!section_provider(sect, prov, sizeof(prov)))
        parse_fail(p, GPC_ERR_USAGE, "unknown section [%s] (sections are "
                   "[provider \"NAME\"])", sect);
    else if (!gpc_provider_find(prov))
        parse_fail(p, GPC_ERR_USAGE, "unknown provider '%s' (known: %s)", prov,
                   gpc_provider_names_with(0));
}

/* inih's reader: the next whole line of the file, or NULL at its end.  A
 * line that does not fit inih's buffer is an error of that line. */
static char *read_line(char *str, int num, void *stream)
{
    config_parse *p = stream;
    if (p->pos >= p->len || num < 3)
        return NULL;
    const char *start = p->data + p->pos;
    const char *nl = memchr(start, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - start) : p->len - p->pos;
    p->pos += n + (nl ? 1 : 0);
    p->line++;
    size_t room = (size_t)num - 2;
    if (n > room) {
        parse_fail(p, GPC_ERR_USAGE, "line longer than %zu characters", room);
        n = 0; /* an empty line for inih */
    }
    size_t lead = 0;
    while (lead < n && isspace((unsigned char)start[lead]))
        lead++;
    if (lead < n && start[lead] == '[')
        check_section(p, start + lead, n - lead);
    memcpy(str, start, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    return str;
}

static int on_value(void *user, const char *section, const char *key, const char *value)
{
    config_parse *p = user;
    if (p->fail_line)
        return 1; /* the first error is the one told */
    char prov[64];
    if (!*section)
        return parse_fail(p, GPC_ERR_USAGE, "'%s' is outside a [provider \"NAME\"] section",
                          key);
    if (!section_provider(section, prov, sizeof(prov)) || !gpc_provider_find(prov))
        return 1; /* told at the section's line (check_section) */
    int k = 0;
    while (k < KEY_COUNT && strcmp(key, key_names[k]) != 0)
        k++;
    if (k == KEY_COUNT)
        return parse_fail(p, GPC_ERR_USAGE, "unknown key '%s' in [provider \"%s\"] (keys: "
                          "endpoint, profile, region)", key, prov);
    if (!*value)
        return parse_fail(p, GPC_ERR_USAGE, "%s of provider '%s' is empty", key, prov);
    for (size_t i = 0; i < p->n_seen; i++)
        if (p->seen[i].key == k && strcmp(p->seen[i].prov, prov) == 0)
            return parse_fail(p, GPC_ERR_USAGE, "%s of provider '%s' is already set on line %d",
                              key, prov, p->seen[i].line);
    struct seen *sv = realloc(p->seen, (p->n_seen + 1) * sizeof(*sv));
    if (!sv)
        return parse_fail(p, GPC_ERR_NOMEM, "out of memory");
    p->seen = sv;
    snprintf(sv[p->n_seen].prov, sizeof(sv[0].prov), "%s", prov);
    sv[p->n_seen].key = k;
    sv[p->n_seen++].line = p->line;
    if (strcmp(prov, p->want) != 0)
        return 1;
    if (!(p->value[k] = strdup(value)))
        return parse_fail(p, GPC_ERR_NOMEM, "out of memory");
    p->value_line[k] = p->line;
    return 1;
}

/* Read provider `want`'s values from the config file at `path` into
 * p->value[] (absent file: none, unless `named`). */
static int config_read(const char *path, int named, const char *want, config_parse *p,
                       gpc_error *err)
{
    memset(p, 0, sizeof(*p));
    p->path = path;
    p->want = want;
    if (!path[0])
        return 0;
    char *data = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "r");
    if (!f && !named && (errno == ENOENT || errno == ENOTDIR))
        return 0;
    if (f)
        fclose(f);
    int rc = gpc_read_file(path, CONFIG_FILE_MAX, &data, &len, err);
    if (rc)
        return rc;
    p->data = data;
    p->len = len;
    /* Process-wide settings of Debian's libinih, put back at once (the
     * config is read before any thread starts). */
    bool inline_comments = ini_allow_inline_comments, multiline = ini_allow_multiline;
    ini_allow_inline_comments = false;
    ini_allow_multiline = false;
    int line = ini_parse_stream(read_line, p, on_value, p);
    ini_allow_inline_comments = inline_comments;
    ini_allow_multiline = multiline;
    free(data);
    p->data = NULL;
    free(p->seen);
    p->seen = NULL;
    if (p->fail_line && p->fail_code == GPC_ERR_NOMEM)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", path);
    else if (p->fail_line && (line <= 0 || p->fail_line <= line))
        rc = gpc_fail(err, p->fail_code, "%s:%d: %s", path, p->fail_line, p->fail_msg);
    else if (line > 0)
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s:%d: expected '[provider \"NAME\"]' or "
                      "'key = value'", path, line);
    else if (line < 0)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "%s: out of memory", path);
    return rc;
}

/* GPUCTL_<NAME>_<KEY> (NAME upper-cased, anything but a letter or digit
 * as '_'): its value, or NULL when unset or empty.  var gets the name. */
static const char *env_setting(const char *prov, const char *key, char *var, size_t size)
{
    size_t n = 0;
    const char *parts[] = {"GPUCTL_", prov, "_", key};
    for (size_t i = 0; i < 4; i++)
        for (const char *c = parts[i]; *c && n + 1 < size; c++)
            var[n++] = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    var[n] = '\0';
    const char *v = getenv(var);
    return v && *v ? v : NULL;
}

int gpc_settings_flag(gpc_settings *set, const char *key, const char *arg, gpc_error *err)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : 0;
    int named = n > 0 && strcspn(arg, ":/") > n;
    for (size_t i = 0; named && i < n; i++)
        named = isalnum((unsigned char)arg[i]) || arg[i] == '-' || arg[i] == '_';
    if (!named) {
        const char **dst = strcmp(key, "endpoint") == 0 ? &set->endpoint : &set->profile;
        if (*dst)
            return gpc_fail(err, GPC_ERR_USAGE, "--%s %s: --%s %s was given already (one value "
                            "for every provider, and one per provider with NAME=)", key, arg, key,
                            *dst);
        *dst = arg;
        return 0;
    }
    const gpc_provider *p = NULL;
    for (size_t i = 0; gpc_providers[i] && !p; i++)
        if (strlen(gpc_providers[i]->name) == n && strncmp(gpc_providers[i]->name, arg, n) == 0)
            p = gpc_providers[i];
    if (!p)
        return gpc_fail(err, GPC_ERR_USAGE, "--%s %s: unknown provider '%.*s' (known: %s)", key,
                        arg, (int)n, arg, gpc_provider_names_with(0));
    if (!eq[1])
        return gpc_fail(err, GPC_ERR_USAGE, "--%s %s: the value for provider %s is empty", key,
                        arg, p->name);
    for (size_t i = 0; i < set->n_flags; i++)
        if (strcmp(set->flags[i].provider, p->name) == 0 && strcmp(set->flags[i].key, key) == 0)
            return gpc_fail(err, GPC_ERR_USAGE, "--%s %s: --%s %s=%s was given already", key, arg,
                            key, p->name, set->flags[i].value);
    if (set->n_flags == GPC_PROVIDER_FLAGS_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "--%s %s: more than %d provider settings on the "
                        "command line", key, arg, GPC_PROVIDER_FLAGS_MAX);
    gpc_provider_flag *f = &set->flags[set->n_flags++];
    f->provider = p->name;
    f->key = strcmp(key, "endpoint") == 0 ? "endpoint" : "profile";
    f->value = eq + 1;
    return 0;
}

/* The command line's value of `key` for provider `prov`: its own, else
 * the one for every provider (`dflt`), else NULL; *own says which. */
static const char *flag_value(const gpc_settings *set, const char *prov, const char *key,
                              const char *dflt, int *own)
{
    *own = 0;
    for (size_t i = 0; set && i < set->n_flags; i++)
        if (strcmp(set->flags[i].provider, prov) == 0 && strcmp(set->flags[i].key, key) == 0) {
            *own = 1;
            return set->flags[i].value;
        }
    return dflt && *dflt ? dflt : NULL;
}

int gpc_provider_settings_get(const gpc_settings *set, const gpc_provider *prov,
                              const char *state_dir, gpc_provider_settings *out,
                              gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    char path[4096];
    int named = 0;
    int rc = gpc_config_path(path, sizeof(path), &named, err);
    config_parse p;
    memset(&p, 0, sizeof(p));
    if (!rc)
        rc = config_read(path, named, prov->name, &p, err);
    const char *flag[KEY_COUNT] = {set ? set->endpoint : NULL, set ? set->profile : NULL, NULL};
    char **own[KEY_COUNT] = {&out->endpoint, &out->profile, &out->region};
    for (int k = 0; !rc && k < KEY_COUNT; k++) {
        char var[96], from[4200];
        int mine;
        const char *v = flag_value(set, prov->name, key_names[k], flag[k], &mine);
        if (v) {
            snprintf(from, sizeof(from), "--%s%s%s", key_names[k], mine ? " " : "",
                     mine ? prov->name : "");
            if (mine)
                snprintf(from + strlen(from), sizeof(from) - strlen(from), "=...");
        } else if ((v = env_setting(prov->name, key_names[k], var, sizeof(var)))) {
            snprintf(from, sizeof(from), "%s", var);
        } else if ((v = p.value[k])) {
            snprintf(from, sizeof(from), "%s:%d", path, p.value_line[k]);
        } else {
            continue;
        }
        snprintf(out->from[k], sizeof(out->from[k]), "%.319s", from);
        if (!(*own[k] = gpc_strdup(v, err)))
            rc = GPC_ERR_NOMEM;
        else if (set)
            gpc_debug(set->log, "%s: %s %s (%s)", prov->name, key_names[k], v, from);
    }
    for (int k = 0; k < KEY_COUNT; k++)
        free(p.value[k]);
    if (rc) {
        gpc_provider_settings_free(out);
        return rc;
    }
    out->cfg.state_dir = state_dir;
    out->cfg.endpoint = out->endpoint;
    out->cfg.profile = out->profile;
    out->cfg.region = out->region;
    out->cfg.endpoint_from = out->endpoint ? out->from[KEY_ENDPOINT] : NULL;
    out->cfg.profile_from = out->profile ? out->from[KEY_PROFILE] : NULL;
    out->cfg.region_from = out->region ? out->from[KEY_REGION] : NULL;
    out->cfg.log = set ? set->log : NULL;
    return 0;
}

void gpc_provider_settings_free(gpc_provider_settings *ps)
{
    free(ps->endpoint);
    free(ps->profile);
    free(ps->region);
    memset(ps, 0, sizeof(*ps));
}
