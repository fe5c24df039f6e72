/* spec_path.c - paths of a spec, resolved against its file (spec.h) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuctl/provider.h"
#include "gpuctl/spec.h"

int gpc_spec_path(const gpc_spec *spec, const char *p, char **out, gpc_error *err)
{
    char buf[PATH_MAX];
    int n;
    if (p[0] == '/') {
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

int gpc_spec_check_paths(const gpc_spec *spec, gpc_error *err)
{
    if (!spec->workdir)
        return 0;
    char *path = NULL;
    int rc = gpc_spec_path(spec, spec->workdir, &path, err);
    struct stat sb;
    if (!rc && stat(path, &sb) != 0)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: directory '%s' does not exist "
                      "(resolved: %s)", spec->source, spec->workdir, path);
    else if (!rc && !S_ISDIR(sb.st_mode))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: '%s' is not a directory (resolved: %s)",
                      spec->source, spec->workdir, path);
    free(path);
    return rc;
}

int gpc_spec_check_providers(const gpc_spec *spec, gpc_error *err)
{
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < spec->n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(spec->providers[i]);
        if (p && !(p->caps & GPC_CAP_PLAN_ONLY))
            return 0;
        int n = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                         spec->providers[i]);
        if (n > 0 && (size_t)n < sizeof(names) - len)
            len += (size_t)n;
    }
    if (!spec->n_providers)
        return 0;
    return gpc_fail(err, GPC_ERR_PROVIDER, "%s: provider: %s %s not built into this gpuctl "
                    "yet (available: %s); gpuctl plan shows %s offers, but apply cannot "
                    "create %s nodes", spec->source, names,
                    spec->n_providers > 1 ? "are" : "is", gpc_provider_names(),
                    spec->n_providers > 1 ? "their" : "its",
                    spec->n_providers > 1 ? "their" : "its");
}
