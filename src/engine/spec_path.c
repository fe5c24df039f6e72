/* spec_path.c - paths of a spec, resolved against its file (spec.h) */
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "spec_int.h"

/* "~/" cannot be expanded: HOME unset or empty (`at`: "FILE:L:C: FIELD: "
 * or "FILE: "). */
static int no_home(const char *at, const char *p, const char *home, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_SPEC, "%s'%s': HOME is %s, so '~/' cannot be expanded; set "
                    "HOME, or write the path without '~'", at, p, home ? "empty" : "not set");
}

int gpc_spec_path_at(const gpc_spec *spec, const char *field, const char *p, unsigned line,
                     unsigned col, char **out, gpc_error *err)
{
    const char *home = getenv("HOME");
    if (p[0] == '~' && p[1] == '/' && (!home || !*home)) {
        char at[GPC_SPEC_AT_MAX], where[GPC_SPEC_AT_MAX + 80];
        snprintf(where, sizeof(where), "%s: %.64s: ", gpc_spec_at(spec, line, col, at), field);
        *out = NULL;
        return no_home(where, p, home, err);
    }
    return gpc_spec_path(spec, p, out, err);
}

int gpc_spec_path(const gpc_spec *spec, const char *p, char **out, gpc_error *err)
{
    char buf[PATH_MAX];
    int n;
    if (p[0] == '~' && p[1] == '/') {
        /* this machine's home, as a shell would expand it */
        const char *home = getenv("HOME");
        if (!home || !*home) {
            char where[320];
            snprintf(where, sizeof(where), "%.300s: ", spec->source ? spec->source : "-");
            return no_home(where, p, home, err);
        }
        n = snprintf(buf, sizeof(buf), "%s%s", home, p + 1);
    } else if (p[0] == '/') {
        n = snprintf(buf, sizeof(buf), "%s", p);
    } else {
        /* the spec's directory exists even when `p` does not yet */
        char *base = realpath(spec->base_dir ? spec->base_dir : ".", NULL);
        n = snprintf(buf, sizeof(buf), "%s/%s", base ? base : ".",
                     p[0] == '.' && p[1] == '/' ? p + 2 : p);
        free(base);
    }
    if (n < 0 || (size_t)n >= sizeof(buf))
        return gpc_fail(err, GPC_ERR_SPEC, "%s: path too long: %s", spec->source, p);
    char *r = realpath(buf, NULL);
    *out = r ? r : strdup(buf);
    return *out ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

const char *gpc_spec_at(const gpc_spec *spec, unsigned line, unsigned col,
                        char buf[GPC_SPEC_AT_MAX])
{
    const char *src = spec->source ? spec->source : "-";
    if (line)
        snprintf(buf, GPC_SPEC_AT_MAX, "%.280s:%u:%u", src, line, col);
    else
        snprintf(buf, GPC_SPEC_AT_MAX, "%.280s", src);
    return buf;
}

size_t spec_url_scheme_len(const char *s)
{
    size_t i = 0;
    if (!is_alpha((unsigned char)s[0]))
        return 0;
    while (is_alnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
        i++;
    return strncmp(s + i, "://", 3) == 0 ? i : 0;
}

const char *spec_store_url_problem(const char *url, size_t sl)
{
    for (const char *c = url; *c; c++) {
        if (*c == '?' || *c == '#')
            return "a store URL holds no '?' or '#' (query or fragment)";
        if (*c == ' ' || (unsigned char)*c < 0x20 || *c == 0x7f)
            return "a store URL holds no spaces or control characters";
    }
    const char *b = url + sl + 3;
    size_t bl = strcspn(b, "/");
    if (bl == 0)
        return "the bucket is empty";
    if (bl < 3 || bl > 63)
        return "a bucket name has 3 to 63 characters";
    for (size_t i = 0; i < bl; i++)
        if (!(is_lower((unsigned char)b[i]) || is_digit((unsigned char)b[i]) || b[i] == '.' ||
              b[i] == '-'))
            return "a bucket name has only lower-case letters, digits, '.' and '-'";
    if (!is_alnum((unsigned char)b[0]) || !is_alnum((unsigned char)b[bl - 1]))
        return "a bucket name begins and ends with a letter or digit";
    char bucket[64];
    memcpy(bucket, b, bl);
    bucket[bl] = '\0';
    if (strstr(bucket, ".."))
        return "a bucket name has no two adjacent dots";
    /* each dot-separated label begins and ends with a letter or digit */
    if (strstr(bucket, ".-") || strstr(bucket, "-."))
        return "a bucket name has no '-' next to a '.' (each label between dots begins "
               "and ends with a letter or digit)";
    /* prefixes S3 reserves (its user guide, bucket naming rules) */
    static const struct {
        const char *prefix, *why;
    } reserved[] = {
        {"xn--", "a bucket name does not begin with 'xn--' (reserved by S3)"},
        {"sthree-", "a bucket name does not begin with 'sthree-' (reserved by S3)"},
        {"amzn-s3-demo-", "a bucket name does not begin with 'amzn-s3-demo-' (reserved by S3)"},
    };
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strncmp(bucket, reserved[i].prefix, strlen(reserved[i].prefix)) == 0)
            return reserved[i].why;
    struct in_addr a;
    if (inet_pton(AF_INET, bucket, &a) == 1)
        return "a bucket name is not an IP address";
    const char *prefix = b + bl;
    if (*prefix == '/' && prefix[1] == '\0')
        return "the prefix after the bucket's '/' is empty (write the bucket alone)";
    if (strstr(prefix, "//"))
        return "the prefix has an empty part ('//')";
    /* a "." or ".." part: S3 keeps it as written (a key "a/../b"), while
     * whoever reads the URL as a path goes elsewhere */
    for (const char *seg = prefix; *seg == '/';) {
        seg++;
        size_t len = strcspn(seg, "/");
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return "the prefix has a '.' or '..' part";
        seg += len;
    }
    return NULL;
}

/* "a, b, c" of n strings into buf. */
static void join(char *buf, size_t size, const char *const *v, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < n; j++) {
        int k = snprintf(buf + used, size - used, "%s%s", j ? ", " : "", v[j]);
        if (k < 0 || (size_t)k >= size - used)
            break;
        used += (size_t)k;
    }
}

int spec_check_data_urls(const gpc_spec *s, gpc_error *err)
{
    for (size_t i = 0; i < s->n_data; i++) {
        const gpc_data_src *d = &s->data[i];
        if (!d->is_url)
            continue;
        int sl = (int)spec_url_scheme_len(d->source);
        const gpc_provider *owner = NULL;
        const char *schemes[16];
        char words[16][64];
        size_t n = 0;
        for (size_t j = 0; gpc_providers[j]; j++) {
            const gpc_provider *p = gpc_providers[j];
            if (!p->store_scheme)
                continue;
            if ((int)strlen(p->store_scheme) == sl && strncmp(p->store_scheme, d->source,
                                                               (size_t)sl) == 0)
                owner = p;
            if (n < 16) {
                snprintf(words[n], sizeof(words[n]), "%.20s:// (%.30s)", p->store_scheme,
                         p->name);
                schemes[n] = words[n];
                n++;
            }
        }
        char have[512], names[256];
        join(have, sizeof(have), schemes, n);
        if (!owner)
            return gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: no provider's store has "
                            "URLs %.*s:// (store URLs: %s)", s->source, d->line, d->col,
                            d->name, sl, d->source, n ? have : "none");
        int listed = 0;
        for (size_t j = 0; j < s->n_providers && !listed; j++)
            listed = strcmp(s->providers[j], owner->name) == 0;
        join(names, sizeof(names), (const char *const *)s->providers, s->n_providers);
        if (!listed)
            return gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: %.*s:// is the store of "
                            "%s, which is not among the spec's providers (%s)", s->source,
                            d->line, d->col, d->name, sl, d->source, owner->name, names);
    }
    return 0;
}

/* The data sets given as local directories must be directories. */
static int check_data_dirs(const gpc_spec *spec, gpc_error *err)
{
    for (size_t i = 0; i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        if (d->is_url)
            continue;
        char *path = NULL, field[80];
        snprintf(field, sizeof(field), "data.%.70s", d->name);
        int rc = gpc_spec_path_at(spec, field, d->source, d->line, d->col, &path, err);
        struct stat sb;
        if (!rc && stat(path, &sb) != 0)
            rc = gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: directory '%s' does not "
                          "exist (resolved: %s)", spec->source, d->line, d->col, d->name,
                          d->source, path);
        else if (!rc && !S_ISDIR(sb.st_mode))
            rc = gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: '%s' is not a directory "
                          "(resolved: %s)", spec->source, d->line, d->col, d->name,
                          d->source, path);
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

int gpc_spec_check_paths(const gpc_spec *spec, gpc_error *err)
{
    if (!spec->workdir)
        return check_data_dirs(spec, err);
    char *path = NULL, at[GPC_SPEC_AT_MAX];
    gpc_spec_at(spec, spec->workdir_line, spec->workdir_col, at);
    int rc = gpc_spec_path_at(spec, "workdir", spec->workdir, spec->workdir_line,
                              spec->workdir_col, &path, err);
    struct stat sb;
    if (!rc && stat(path, &sb) != 0)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: directory '%s' does not exist "
                      "(resolved: %s)", at, spec->workdir, path);
    else if (!rc && !S_ISDIR(sb.st_mode))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: '%s' is not a directory (resolved: %s)",
                      at, spec->workdir, path);
    free(path);
    return rc ? rc : check_data_dirs(spec, err);
}

/* Is `p` (absolute) the root, a top-level directory of the system, or
 * the bootstrap's own home (trailing '/' ignored)?  A checkpoint_dir kept
 * in a store must be a directory of its own: the node restores the whole
 * prefix into it and saves all of it back. */
static int system_dir(const char *p)
{
    static const char *const dirs[] = {"", "/bin", "/boot", "/dev", "/etc", "/home", "/lib",
                                       "/lib64", "/opt", "/proc", "/root", "/run", "/sbin",
                                       "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib",
                                       "/var/lib/gpuctl", NULL};
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        n--;
    for (size_t i = 0; dirs[i]; i++)
        if (strlen(dirs[i]) == n && strncmp(p, dirs[i], n) == 0)
            return 1;
    return 0;
}

int spec_check_node_ckpt(const gpc_spec *spec, const char *where, gpc_error *err)
{
    char at[GPC_SPEC_AT_MAX];
    const char *p = spec->checkpoint_dir;
    if (!p)
        return 0;
    gpc_spec_at(spec, spec->checkpoint_dir_line, spec->checkpoint_dir_col, at);
    if (p[0] != '/')
        return gpc_fail(err, GPC_ERR_SPEC, "%s: checkpoint_dir: '%s' must be an absolute path "
                        "on the %s nodes", at, p, where);
    if (system_dir(p))
        return gpc_fail(err, GPC_ERR_SPEC, "%s: checkpoint_dir: '%s' is a directory of the "
                        "node's system: its whole contents would be restored onto and saved "
                        "from every node; name a directory of its own (e.g. /var/lib/gpuctl/"
                        "checkpoints)", at, p);
    return 0;
}

int gpc_spec_check_providers(const gpc_spec *spec, gpc_error *err)
{
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < spec->n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(spec->providers[i]);
        if (p && !(p->caps & GPC_CAP_PLAN_ONLY))
            return gpc_spec_check_targets(spec, err);
        int n = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                         spec->providers[i]);
        if (n > 0 && (size_t)n < sizeof(names) - len)
            len += (size_t)n;
    }
    if (!spec->n_providers)
        return gpc_spec_check_targets(spec, err);
    return gpc_fail(err, GPC_ERR_PROVIDER, "%s: provider: %s %s not built into this gpuctl "
                    "yet (available: %s); gpuctl plan shows %s offers, but apply cannot "
                    "create %s nodes", spec->source, names,
                    spec->n_providers > 1 ? "are" : "is", gpc_provider_names(),
                    spec->n_providers > 1 ? "their" : "its",
                    spec->n_providers > 1 ? "their" : "its");
}
