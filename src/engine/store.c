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

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/log.h"
#include "gpuctl/state.h"
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

/* Delete the objects of data/NAME (at `path`) that directory `dir` has no
 * regular file for; st->files_deleted counts them. */
static int mirror_delete(gpc_open_provider *op, const gpc_data_where *w, const char *dir,
                         const char *path, gpc_store_stats *st, gpc_error *err)
{
    gpc_store_entry *have = NULL, *want = NULL;
    size_t nh = 0, nw = 0, nd = 0;
    int rc = op->prov->store_list(op->ctx, w->region, path, &have, &nh, err);
    if (!rc)
        rc = gpc_store_list_dir(dir, &want, &nw, err);
    const char **gone = !rc && nh ? calloc(nh, sizeof(*gone)) : NULL;
    if (!rc && nh && !gone)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    /* both sorted bytewise: one merge */
    for (size_t i = 0, j = 0; !rc && i < nh; i++) {
        while (j < nw && strcmp(want[j].key, have[i].key) < 0)
            j++;
        if (j == nw || strcmp(want[j].key, have[i].key) != 0)
            gone[nd++] = have[i].key;
    }
    if (!rc && nd)
        rc = op->prov->store_delete(op->ctx, w->region, path, gone, nd, err);
    if (!rc)
        st->files_deleted = nd;
    free(gone);
    free(have);
    free(want);
    return rc;
}

int gpc_data_push(gpc_session *s, const gpc_data_where *w, const char *dir, const char *name,
                  unsigned flags, gpc_store_stats *st, char *url, size_t size, gpc_error *err)
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
    if (!rc && (flags & GPC_DATA_DELETE) && !op.prov->store_delete)
        rc = gpc_fail(err, GPC_ERR_USAGE, "provider %s cannot delete single objects of its "
                      "store: data set '%s' cannot be mirrored there", op.prov->name, name);
    if (!rc && (flags & GPC_DATA_GUARD))
        rc = gpc_data_guard(s, w, name, dir, err);
    if (!rc)
        rc = op.prov->store_push(op.ctx, w->region, dir, path, st, err);
    if (!rc && (flags & GPC_DATA_DELETE))
        rc = mirror_delete(&op, w, dir, path, st, err);
    if (!rc && url)
        rc = op.prov->store_url(op.ctx, w->region, path, url, size, err);
    return rc;
}

/* The event message that records a data set's digest (gpc_data_record). */
#define RECORD_FMT "data set %s placed: content sha256 %s"

int gpc_data_record(gpc_session *s, int64_t cluster_id, const char *name, const char *digest,
                    gpc_error *err)
{
    char msg[256];
    snprintf(msg, sizeof(msg), RECORD_FMT, name, digest);
    return gpc_event_add(s->st, cluster_id, -1, "data", msg, err);
}

/* The digest cluster `cid`'s last apply recorded for `name`, "" if none. */
static int recorded_digest(gpc_session *s, int64_t cid, const char *name, char out[65],
                           gpc_error *err)
{
    out[0] = '\0';
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    int rc = gpc_event_list(s->st, cid, &ev, &n, err);
    char head[128];
    int hl = snprintf(head, sizeof(head), RECORD_FMT, name, "");
    for (size_t i = 0; !rc && i < n; i++) {
        const char *m = ev[i].message;
        if (strcmp(ev[i].kind, "data") == 0 && hl > 0 && strncmp(m, head, (size_t)hl) == 0 &&
            strlen(m + hl) == 64)
            memcpy(out, m + hl, 65); /* the last one wins */
    }
    gpc_event_list_free(ev, n);
    return rc;
}

int gpc_data_recorded(gpc_session *s, int64_t cluster_id, const char *name, char out[65],
                      gpc_error *err)
{
    return recorded_digest(s, cluster_id, name, out, err);
}

/* Does the canonical spec JSON push a directory to data set `name`? */
static int spec_pushes(const char *spec_json, const char *name)
{
    cJSON *j = spec_json && spec_json[0] ? cJSON_Parse(spec_json) : NULL;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j,
                                                        "data"), name);
    int yes = cJSON_IsString(src) && !strstr(src->valuestring, "://");
    cJSON_Delete(j);
    return yes;
}

/* gpc_data_users; `offline`: the same store is the same provider and
 * region, and no provider is opened (gpc_data_users_offline). */
static int users(gpc_session *s, const gpc_data_where *w, const char *name, const char *except,
                 int offline, gpc_data_user **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    gpc_open_provider op;
    memset(&op, 0, sizeof(op));
    char path[GPC_STORE_PATH_MAX + 1], here[1024] = "";
    int rc = 0;
    if (!offline) {
        rc = open_store(s, w, name, &op, path, err);
    } else if (!gpc_data_name_ok(name)) {
        rc = gpc_fail(err, GPC_ERR_USAGE, "invalid data set name '%s': 1 to 63 letters, "
                      "digits, '.', '_' and '-', starting with a letter or digit", name);
    } else if (!(op.prov = gpc_data_provider(w, err))) {
        rc = err->code;
    }
    gpc_cluster_rec *cl = NULL;
    size_t ncl = 0;
    if (!rc)
        rc = gpc_cluster_list(s->st, 0, &cl, &ncl, err);
    gpc_data_user *v = !rc && ncl ? calloc(ncl, sizeof(*v)) : NULL;
    if (!rc && ncl && !v)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; !rc && i < ncl; i++) {
        const gpc_cluster_rec *c = &cl[i];
        if (c->destroyed_at || strcmp(c->provider, op.prov->name) != 0 ||
            (except && strcmp(c->name, except) == 0) || !spec_pushes(c->spec_json, name))
            continue;
        /* its store: the one of its nodes' region */
        gpc_node_rec *nodes = NULL;
        size_t nn = 0;
        char region[64] = "", there[1024];
        rc = gpc_node_list(s->st, c->id, 0, &nodes, &nn, err);
        for (size_t r = 0; !rc && r < nn && !region[0]; r++)
            snprintf(region, sizeof(region), "%s", nodes[r].region);
        gpc_node_list_free(nodes, nn);
        if (rc)
            continue;
        if (offline) {
            /* a cluster whose nodes' region is not known counts */
            if (region[0] && w->region && w->region[0] && strcmp(region, w->region) != 0)
                continue;
        } else {
            if (!here[0])
                rc = op.prov->store_url(op.ctx, w->region, path, here, sizeof(here), err);
            if (!rc)
                rc = op.prov->store_url(op.ctx, region[0] ? region : w->region, path, there,
                                        sizeof(there), err);
            if (rc || strcmp(here, there) != 0)
                continue;
        }
        snprintf(v[k].cluster, sizeof(v[k].cluster), "%s", c->name);
        rc = recorded_digest(s, c->id, name, v[k].digest, err);
        k++;
    }
    gpc_cluster_list_free(cl, ncl);
    if (rc || !k) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

int gpc_data_users(gpc_session *s, const gpc_data_where *w, const char *name,
                   const char *except, gpc_data_user **out, size_t *n, gpc_error *err)
{
    return users(s, w, name, except, 0, out, n, err);
}

int gpc_data_users_offline(gpc_session *s, const gpc_data_where *w, const char *name,
                           const char *except, gpc_data_user **out, size_t *n, gpc_error *err)
{
    return users(s, w, name, except, 1, out, n, err);
}

void gpc_data_users_words(const gpc_data_user *u, size_t n, char *names, size_t names_size,
                          char *destroys, size_t destroys_size)
{
    size_t a = 0, b = 0;
    names[0] = destroys[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(names + a, names_size - a, "%s'%s'", i ? ", " : "", u[i].cluster);
        if (k > 0 && (size_t)k < names_size - a)
            a += (size_t)k;
        k = snprintf(destroys + b, destroys_size - b, "%sgpuctl destroy %s", i ? "; " : "",
                     u[i].cluster);
        if (k > 0 && (size_t)k < destroys_size - b)
            b += (size_t)k;
    }
}

int gpc_data_guard(gpc_session *s, const gpc_data_where *w, const char *name, const char *dir,
                   gpc_error *err)
{
    gpc_data_user *u = NULL;
    size_t n = 0, k = 0;
    char digest[65] = "";
    unsigned long files = 0;
    int rc = dir ? gpc_store_dir_digest(dir, digest, &files, err) : 0;
    if (!rc)
        rc = gpc_data_users(s, w, name, NULL, &u, &n, err);
    if (rc || !n) {
        free(u);
        return rc;
    }
    /* a push of the files the users' applies placed changes nothing under
     * their jobs: allowed (apply shares such a set too); the others to the
     * front, those sharing the files after them */
    for (size_t i = 0; i < n; i++) {
        if (dir && u[i].digest[0] && strcmp(u[i].digest, digest) == 0)
            continue;
        gpc_data_user t = u[k];
        u[k++] = u[i];
        u[i] = t;
    }
    char where[128], names[1024], destroys[2048];
    region_words(w, where, sizeof(where));
    if (!k) {
        gpc_data_users_words(u, n, names, sizeof(names), destroys, sizeof(destroys));
        gpc_info(s->log, "gpuctl: data %s: %s holds the files live cluster%s %s use%s: "
                 "nothing under %s job%s changes", name, dir, n > 1 ? "s" : "", names,
                 n > 1 ? "" : "s", n > 1 ? "their" : "its", n > 1 ? "s" : "");
        free(u);
        return 0;
    }
    gpc_data_users_words(u, k, names, sizeof(names), destroys, sizeof(destroys));
    if (dir)
        rc = gpc_fail(err, GPC_ERR_USAGE, "refusing to push to data set '%s' in the store of "
                      "%s: live cluster%s %s use%s it, and %s job%s read%s it; %s holds other "
                      "files than %s placed there. Destroy %s first (%s), or push under "
                      "another --name", name, where, k > 1 ? "s" : "", names, k > 1 ? "" : "s",
                      k > 1 ? "their" : "its", k > 1 ? "s" : "", k > 1 ? "" : "s", dir,
                      k > 1 ? "they" : "it", k > 1 ? "them" : "it", destroys);
    else
        rc = gpc_fail(err, GPC_ERR_USAGE, "refusing to remove data set '%s' in the store of "
                      "%s: live cluster%s %s use%s it, and %s job%s read%s it; destroy %s "
                      "first (%s), then remove it", name, where, k > 1 ? "s" : "", names,
                      k > 1 ? "" : "s", k > 1 ? "their" : "its", k > 1 ? "s" : "",
                      k > 1 ? "" : "s", k > 1 ? "them" : "it", destroys);
    free(u);
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
        rc = gpc_data_guard(s, w, name, NULL, err);
    if (!rc)
        rc = op.prov->store_remove(op.ctx, w->region, path, removed, err);
    if (!rc && *removed == 0) {
        char where[128];
        rc = gpc_fail(err, GPC_ERR_NOT_FOUND, "no data set '%s' in the store of %s", name,
                      region_words(w, where, sizeof(where)));
    }
    return rc;
}
