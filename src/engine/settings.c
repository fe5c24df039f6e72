/*
 * settings.c - a provider's settings (endpoint, profile, region) from the
 * command line, the environment and the config file, and its named
 * sections of the config file (cluster.h, docs/config.md).
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

/* The longest name of a named section, [PROVIDER "NAME"] (bytes; gpc_site). */
#define SITE_NAME_MAX 47

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

/* A named section of the file, every section of its name together. */
typedef struct psite {
    const gpc_provider *prov;      /* a provider with site_keys */
    char name[SITE_NAME_MAX + 1];
    int line;                      /* of its first header */
    gpc_site_value *values;        /* owned; each value owned, or NULL for
                                      another provider's than the one read */
    size_t n_values;
} psite;

/* What the section of the lines being read is (config_parse.sect). */
enum { SECT_NONE, SECT_BAD, SECT_PROVIDER, SECT_SITE };

/* What the parse of one file is after, and where it stands. */
typedef struct config_parse {
    const char *path;
    const char *data;
    size_t len, pos;
    int line;                      /* of the line inih has now */
    const gpc_provider *want;      /* the provider whose settings are read */
    int sect;                      /* SECT_*: the section of the lines now, as
                                      its header said (inih keeps only 50
                                      bytes of it); SECT_BAD when it was an
                                      error, told at its line */
    char sect_prov[64];            /* SECT_PROVIDER: the provider's name */
    size_t sect_site;              /* SECT_SITE: its index in sites */
    psite *sites;                  /* every provider's (owned) */
    size_t n_sites;
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

/*
 * A named section: `PROVIDER "NAME"` (spaces around the words allowed;
 * NAME runs to the last '"').  Sets *prov to the provider of the registry
 * with site_keys that PROVIDER names, or NULL when none does, *name and
 * *name_len to NAME in section, and returns 1; returns 0 when the section
 * is not of that form.
 */
static int section_site(const char *section, const gpc_provider **prov, const char **name,
                        size_t *name_len)
{
    const char *s = section;
    while (isspace((unsigned char)*s))
        s++;
    const char *word = s;
    while (*s && *s != '"' && !isspace((unsigned char)*s))
        s++;
    size_t n = (size_t)(s - word);
    if (n == 0 || !isspace((unsigned char)*s))
        return 0;
    while (isspace((unsigned char)*s))
        s++;
    const char *q = *s == '"' ? strrchr(s, '"') : NULL;
    if (!q || q == s)
        return 0;
    for (const char *t = q + 1; *t; t++)
        if (!isspace((unsigned char)*t))
            return 0;
    *prov = NULL;
    for (size_t i = 0; gpc_providers[i] && !*prov; i++)
        if (gpc_providers[i]->site_keys && strlen(gpc_providers[i]->name) == n &&
            strncmp(gpc_providers[i]->name, word, n) == 0)
            *prov = gpc_providers[i];
    *name = s + 1;
    *name_len = (size_t)(q - s - 1);
    return 1;
}

/* Is this a named section's name: 1 to SITE_NAME_MAX letters, digits, '.',
 * '_' and '-'? */
static int site_name_ok(const char *name, size_t n)
{
    if (n == 0 || n > SITE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
            return 0;
    return 1;
}

/* The sections a file may have, for the message of one it may not:
 * [provider "NAME"], and [PROVIDER "NAME"] for each provider with
 * site_keys. */
static void sections_allowed(char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[provider \"NAME\"]");
    for (size_t i = 0; gpc_providers[i] && n < size; i++)
        if (gpc_providers[i]->site_keys)
            n += (size_t)snprintf(buf + n, size - n, ", [%s \"NAME\"]",
                                  gpc_providers[i]->name);
}

/* The named section `name` (n bytes, checked) of provider prov: its index
 * in p->sites, added at this line if it is the first of its name; -1 when
 * out of memory. */
static long site_index(config_parse *p, const gpc_provider *prov, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n_sites; i++)
        if (p->sites[i].prov == prov && strlen(p->sites[i].name) == n &&
            memcmp(p->sites[i].name, name, n) == 0)
            return (long)i;
    psite *ns = realloc(p->sites, (p->n_sites + 1) * sizeof(*ns));
    if (!ns)
        return -1;
    p->sites = ns;
    psite *site = &ns[p->n_sites];
    memset(site, 0, sizeof(*site));
    site->prov = prov;
    memcpy(site->name, name, n);
    site->name[n] = '\0';
    site->line = p->line;
    return (long)p->n_sites++;
}

static void sites_free(psite *sites, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < sites[i].n_values; j++)
            free((char *)sites[i].values[j].value);
        free(sites[i].values);
    }
    free(sites);
}

/* A section header's line ("[...]"): is it [provider "NAME"] of a provider
 * in the registry, or a named section of one with site_keys?  Checked
 * here, where the line is known, since inih calls on_value only for the
 * keys that follow; p->sect says what the keys are in.  A header without
 * its ']' is inih's syntax error. */
static void check_section(config_parse *p, const char *line, size_t n)
{
    p->sect = SECT_BAD;
    const char *close = memchr(line, ']', n);
    if (!close)
        return;
    char sect[200], prov[64];
    snprintf(sect, sizeof(sect), "%.*s", (int)(close - line - 1), line + 1);
    if (section_provider(sect, prov, sizeof(prov))) {
        if (!gpc_provider_find(prov)) {
            parse_fail(p, GPC_ERR_USAGE, "unknown provider '%s' (known: %s)", prov,
                       gpc_provider_names_with(0));
            return;
        }
        snprintf(p->sect_prov, sizeof(p->sect_prov), "%s", prov);
        p->sect = SECT_PROVIDER;
        return;
    }
    const gpc_provider *sp = NULL;
    const char *name = NULL;
    size_t name_len = 0;
    if (!section_site(sect, &sp, &name, &name_len) || !sp) {
        char allowed[300];
        sections_allowed(allowed, sizeof(allowed));
        parse_fail(p, GPC_ERR_USAGE, "unknown section [%s] (sections are %s)", sect, allowed);
        return;
    }
    if (!site_name_ok(name, name_len)) {
        parse_fail(p, GPC_ERR_USAGE, "the name in [%s] is not 1 to %d letters, digits, '.', "
                   "'_' and '-'", sect, SITE_NAME_MAX);
        return;
    }
    long i = site_index(p, sp, name, name_len);
    if (i < 0) {
        parse_fail(p, GPC_ERR_NOMEM, "out of memory");
        return;
    }
    p->sect_site = (size_t)i;
    p->sect = SECT_SITE;
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
    if (p->line == 1 && n >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0)
        lead = 3; /* a UTF-8 byte order mark, which inih skips */
    while (lead < n && isspace((unsigned char)start[lead]))
        lead++;
    if (lead < n && start[lead] == '[')
        check_section(p, start + lead, n - lead);
    memcpy(str, start, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    return str;
}

/* A key of a named section (p->sect == SECT_SITE). */
static int on_site_value(config_parse *p, const char *key, const char *value)
{
    psite *site = &p->sites[p->sect_site];
    const char *const *keys = site->prov->site_keys;
    const char *pn = site->prov->name;
    size_t k = 0;
    while (keys[k] && strcmp(key, keys[k]) != 0)
        k++;
    if (!keys[k]) {
        char list[300];
        size_t n = 0;
        list[0] = '\0';
        for (size_t i = 0; keys[i] && n < sizeof(list); i++)
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", keys[i]);
        return parse_fail(p, GPC_ERR_USAGE, "unknown key '%s' in [%s \"%s\"] (keys: %s)", key,
                          pn, site->name, list);
    }
    if (!*value)
        return parse_fail(p, GPC_ERR_USAGE, "%s of [%s \"%s\"] is empty", key, pn, site->name);
    for (size_t i = 0; i < site->n_values; i++)
        if (site->values[i].key == keys[k])
            return parse_fail(p, GPC_ERR_USAGE, "%s of [%s \"%s\"] is already set on line %d",
                              key, pn, site->name, site->values[i].line);
    gpc_site_value *nv = realloc(site->values, (site->n_values + 1) * sizeof(*nv));
    if (!nv)
        return parse_fail(p, GPC_ERR_NOMEM, "out of memory");
    site->values = nv;
    gpc_site_value *v = &nv[site->n_values];
    v->key = keys[k];
    v->value = NULL; /* another provider's: checked, not kept */
    v->line = p->line;
    if (site->prov == p->want && !(v->value = strdup(value)))
        return parse_fail(p, GPC_ERR_NOMEM, "out of memory");
    site->n_values++;
    return 1;
}

static int on_value(void *user, const char *section, const char *key, const char *value)
{
    (void)section; /* p->sect: inih cuts a section's name at 50 bytes */
    config_parse *p = user;
    if (p->fail_line)
        return 1; /* the first error is the one told */
    if (p->sect == SECT_NONE)
        return parse_fail(p, GPC_ERR_USAGE, "'%s' is outside a [provider \"NAME\"] section",
                          key);
    if (p->sect == SECT_BAD)
        return 1; /* told at the section's line (check_section) */
    if (p->sect == SECT_SITE)
        return on_site_value(p, key, value);
    const char *prov = p->sect_prov;
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
    if (strcmp(prov, p->want->name) != 0)
        return 1;
    if (!(p->value[k] = strdup(value)))
        return parse_fail(p, GPC_ERR_NOMEM, "out of memory");
    p->value_line[k] = p->line;
    return 1;
}

/* Read provider `want`'s values from the config file at `path` into
 * p->value[], and every provider's named sections into p->sites (absent
 * file: none, unless `named`).  The caller frees p->value[] and p->sites,
 * also after an error. */
static int config_read(const char *path, int named, const gpc_provider *want, config_parse *p,
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

/* Move prov's named sections from p->sites to out->sites, in p's order
 * (that of their names' first headers). */
static int sites_take(config_parse *p, const gpc_provider *prov, gpc_provider_settings *out,
                      gpc_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_sites; i++)
        n += p->sites[i].prov == prov;
    if (!n)
        return 0;
    if (!(out->sites = calloc(n, sizeof(*out->sites))))
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < p->n_sites; i++) {
        psite *ps = &p->sites[i];
        if (ps->prov != prov)
            continue;
        gpc_site *site = &out->sites[out->n_sites];
        if (!(site->name = gpc_strdup(ps->name, err)))
            return GPC_ERR_NOMEM;
        site->line = ps->line;
        site->values = ps->values;
        site->n_values = ps->n_values;
        out->n_sites++;
        ps->values = NULL; /* out's now */
        ps->n_values = 0;
    }
    return 0;
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
        rc = config_read(path, named, prov, &p, err);
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
    if (!rc)
        rc = sites_take(&p, prov, out, err);
    sites_free(p.sites, p.n_sites);
    if (!rc && !(out->config_path = gpc_strdup(path, err)))
        rc = GPC_ERR_NOMEM;
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
    out->cfg.sites = out->sites;
    out->cfg.n_sites = out->n_sites;
    out->cfg.config_path = out->config_path;
    return 0;
}

void gpc_provider_settings_free(gpc_provider_settings *ps)
{
    free(ps->endpoint);
    free(ps->profile);
    free(ps->region);
    for (size_t i = 0; i < ps->n_sites; i++) {
        for (size_t j = 0; j < ps->sites[i].n_values; j++)
            free((char *)ps->sites[i].values[j].value);
        free((gpc_site_value *)ps->sites[i].values);
        free((char *)ps->sites[i].name);
    }
    free(ps->sites);
    free(ps->config_path);
    memset(ps, 0, sizeof(*ps));
}
