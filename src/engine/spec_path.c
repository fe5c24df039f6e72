/* spec_path.c - paths of a spec, resolved against its file (spec.h) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
