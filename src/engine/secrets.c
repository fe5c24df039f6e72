/* secrets.c - the values of a spec's secrets, read at apply time (spec.h,
 * gpc_secrets_read); nothing here keeps or prints a value. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "gpuctl/spec.h"
#include "gpuctl/util.h"

#define SECRET_MAX (64u * 1024u)

void gpc_secrets_free(gpc_env_var *vals, size_t n)
{
    if (!vals)
        return;
    for (size_t i = 0; i < n; i++) {
        if (vals[i].value)
            OPENSSL_cleanse(vals[i].value, strlen(vals[i].value));
        free(vals[i].value);
        free(vals[i].name);
    }
    free(vals);
}

/* PATH of "file:PATH", as gpc_spec_path resolves a path on this machine:
 * "~/..." under $HOME, a relative one under the spec's directory. */
static int secret_path(const gpc_spec *spec, const gpc_secret_ref *r, const char *at,
                       const char *p, char **out, gpc_error *err)
{
    const char *home = getenv("HOME");
    if (p[0] == '~' && p[1] == '/' && (!home || !*home))
        return gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: %s: HOME is not set", at,
                        r->name, r->source);
    return gpc_spec_path(spec, p, out, err);
}

static int read_one(const gpc_spec *spec, const gpc_secret_ref *r, char **value,
                    gpc_error *err)
{
    *value = NULL;
    char at[GPC_SPEC_AT_MAX];
    gpc_spec_at(spec, r->line, r->col, at);
    if (strncmp(r->source, "env:", 4) == 0) {
        const char *v = getenv(r->source + 4);
        if (!v)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: environment variable %s is "
                            "not set", at, r->name, r->source + 4);
        if (strlen(v) > SECRET_MAX)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: environment variable %s is "
                            "longer than %u bytes", at, r->name, r->source + 4,
                            SECRET_MAX);
        *value = strdup(v);
        return *value ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    if (strncmp(r->source, "file:", 5) != 0)
        return gpc_fail(err, GPC_ERR_INTERNAL, "secrets.%s: unknown source", r->name);
    char *path = NULL;
    int rc = secret_path(spec, r, at, r->source + 5, &path, err);
    if (rc)
        return rc;
    struct stat sb;
    if (stat(path, &sb) != 0)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: file %s: %s", at, r->name,
                      path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: %s is not a regular file",
                      at, r->name, path);
    char *data = NULL;
    size_t len = 0;
    gpc_error fe;
    gpc_error_clear(&fe);
    if (!rc && gpc_read_file(path, SECRET_MAX, &data, &len, &fe) != 0)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: %s", at, r->name, fe.msg);
    if (!rc && memchr(data, '\0', len))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: secrets.%s: file %s holds a NUL byte, which no "
                      "environment variable can", at, r->name, path);
    if (!rc) {
        if (len && data[len - 1] == '\n')
            data[--len] = '\0';
        if (len && data[len - 1] == '\r')
            data[--len] = '\0';
        *value = data;
        data = NULL;
    }
    if (data) {
        OPENSSL_cleanse(data, len);
        free(data);
    }
    free(path);
    return rc;
}

int gpc_secrets_read(const gpc_spec *spec, gpc_env_var **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    if (!spec->n_secrets)
        return 0;
    gpc_env_var *v = calloc(spec->n_secrets, sizeof(*v));
    if (!v)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int rc = 0;
    size_t i;
    for (i = 0; !rc && i < spec->n_secrets; i++) {
        if (!(v[i].name = strdup(spec->secrets[i].name)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            rc = read_one(spec, &spec->secrets[i], &v[i].value, err);
    }
    if (rc) {
        gpc_secrets_free(v, spec->n_secrets);
        return rc;
    }
    *out = v;
    *n = spec->n_secrets;
    return 0;
}
