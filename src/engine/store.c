/*
 * store.c - `gpuctl data push/ls/rm` in the engine (store.h): pick the
 * provider, check the data set's name, open the provider in the session
 * and call its store_* operation.  Prints nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuctl/store.h"

const gpc_provider *gpc_data_provider(const gpc_data_where *w, gpc_error *err)
{
    const gpc_provider *p = w->provider ? gpc_provider_find(w->provider)
                                        : gpc_provider_default();
    if (!p) {
        gpc_fail(err, GPC_ERR_USAGE, "unknown provider '%s' (available: %s)", w->provider,
                 gpc_provider_names());
        return NULL;
    }
    if ((p->caps & GPC_CAP_PLAN_ONLY) || !p->store_url || !p->store_push || !p->store_pull ||
        !p->store_list || !p->store_remove) {
        gpc_fail(err, GPC_ERR_USAGE, "provider %s has no object storage (providers with one: "
                 "%s)", p->name, gpc_data_store_names());
        return NULL;
    }
    return p;
}

const char *gpc_data_store_names(void)
{
    static char names[256];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        if ((p->caps & GPC_CAP_PLAN_ONLY) || !p->store_url)
            continue;
        int k = snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", p->name);
        if (k < 0 || (size_t)k >= sizeof(names) - used)
            break;
        used += (size_t)k;
    }
    return names;
}

/* The provider of `w`, opened in the session; "data/NAME" (or "data") in
 * path. */
static int open_store(gpc_session *s, const gpc_data_where *w, const char *name,
                      gpc_open_provider *op, char path[GPC_STORE_PATH_MAX + 1], gpc_error *err)
{
    if (name && !gpc_data_name_ok(name))
        return gpc_fail(err, GPC_ERR_USAGE, "invalid data set name '%s': 1 to 63 letters, "
                        "digits, '.', '_' and '-', starting with a letter or digit", name);
    snprintf(path, GPC_STORE_PATH_MAX + 1, "data%s%s", name ? "/" : "", name ? name : "");
    const gpc_provider *p = gpc_data_provider(w, err);
    if (!p)
        return err->code;
    return gpc_session_provider(s, p->name, op, err);
}

static const char *region_words(const gpc_data_where *w, char *buf, size_t size)
{
    const gpc_provider *p = w->provider ? gpc_provider_find(w->provider)
                                        : gpc_provider_default();
    snprintf(buf, size, "%s%s%s", p ? p->name : "?", w->region && w->region[0] ? " region " : "",
             w->region && w->region[0] ? w->region : "");
    return buf;
}

int gpc_data_push(gpc_session *s, const gpc_data_where *w, const char *dir, const char *name,
                  gpc_store_stats *st, char *url, size_t size, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    struct stat sb;
    errno = 0;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: %s", dir,
                        errno == ENOENT ? "no such directory" : "not a directory");
    gpc_open_provider op;
    char path[GPC_STORE_PATH_MAX + 1];
    int rc = open_store(s, w, name, &op, path, err);
    if (!rc)
        rc = op.prov->store_push(op.ctx, w->region, dir, path, st, err);
    if (!rc && url)
        rc = op.prov->store_url(op.ctx, w->region, path, url, size, err);
    return rc;
}

int gpc_data_list(gpc_session *s, const gpc_data_where *w, const char *name,
                  gpc_store_entry **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    gpc_open_provider op;
    char path[GPC_STORE_PATH_MAX + 1];
    int rc = open_store(s, w, name, &op, path, err);
    if (!rc)
        rc = op.prov->store_list(op.ctx, w->region, path, out, n, err);
    if (!rc && name && *n == 0) {
        char where[128];
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no data set '%s' in the store of %s", name,
                      region_words(w, where, sizeof(where)));
    }
    return rc;
}

int gpc_data_remove(gpc_session *s, const gpc_data_where *w, const char *name,
                    size_t *removed, gpc_error *err)
{
    *removed = 0;
    if (!name)
        return gpc_fail(err, GPC_ERR_USAGE, "data rm needs a data set name");
    gpc_open_provider op;
    char path[GPC_STORE_PATH_MAX + 1];
    int rc = open_store(s, w, name, &op, path, err);
    if (!rc)
        rc = op.prov->store_remove(op.ctx, w->region, path, removed, err);
    if (!rc && *removed == 0) {
        char where[128];
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no data set '%s' in the store of %s", name,
                      region_words(w, where, sizeof(where)));
    }
    return rc;
}
