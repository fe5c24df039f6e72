/*
 * data.c - the spec's `data` at plan and apply (data.h): where each data
 * set sits and what placing it implies (offline, for the plan), and the
 * placement before the nodes start (the store's incremental push).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpuctl/data.h"
#include "gpuctl/log.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"

void gpc_data_placed_free(gpc_data_placed *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->names ? d->names[i] : NULL);
        free(d->urls ? d->urls[i] : NULL);
        free(d->digests ? d->digests[i] : NULL);
    }
    free(d->digests);
    free(d->names);
    free(d->urls);
    free(d->dir);
    memset(d, 0, sizeof(*d));
}

/* The directory of data set `d` (gpc_spec_path_at: "~/" without HOME said
 * at its place). */
static int spec_dir(const gpc_spec *spec, const gpc_data_src *d, char **dir, gpc_error *err)
{
    char field[80];
    snprintf(field, sizeof(field), "data.%.70s", d->name);
    return gpc_spec_path_at(spec, field, d->source, d->line, d->col, dir, err);
}

/* The length of a URL's scheme ("s3" of s3://...), 0 when none. */
static size_t scheme_len(const char *url)
{
    const char *p = strstr(url, "://");
    return p ? (size_t)(p - url) : 0;
}

int gpc_data_check_offer(const gpc_spec *spec, const gpc_offer *offer, gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find(offer->provider);
    /* a provider without a store (plan-only ones: azure, aliyun in this
     * release) has nowhere to place a data set nor nodes that fetch one */
    if (spec->n_data && (!p || (p->caps & GPC_CAP_PLAN_ONLY) || !p->store_url ||
                         !p->store_push)) {
        const gpc_data_src *d = &spec->data[0];
        return gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: the chosen offer is on %s, "
                        "which has no object store in this release, so the data set cannot "
                        "be placed where its nodes read it; name in `provider` only providers "
                        "with one (%s), or drop `data` and fetch the data in `setup`", spec->source, d->line, d->col, d->name,
                        offer->provider, gpc_data_store_names());
    }
    for (size_t i = 0; i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        if (!d->is_url)
            continue;
        size_t sl = scheme_len(d->source);
        if (p && p->store_scheme && strlen(p->store_scheme) == sl &&
            strncmp(p->store_scheme, d->source, sl) == 0)
            continue;
        return gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: the chosen offer is on %s, "
                        "whose nodes cannot read %.*s:// URLs; push the data set with gpuctl "
                        "data push, or name a directory", spec->source, d->line, d->col,
                        d->name, offer->provider, (int)sl, d->source);
    }
    return 0;
}

/*
 * Before data set `d` (a directory, at `dir`) is pushed for cluster
 * spec->name: refuse when other live clusters use the set in the same
 * store and the push would change it (the content digests differ), naming
 * each.  `digest` receives dir's.
 */
static int guard_place(gpc_session *s, const gpc_data_where *w, const gpc_spec *spec,
                       const gpc_data_src *d, const char *dir, int offline, char digest[65],
                       gpc_error *err)
{
    gpc_data_user *u = NULL;
    size_t n = 0, k = 0;
    unsigned long files = 0;
    int rc = gpc_store_dir_digest(dir, digest, &files, err);
    if (!rc)
        rc = offline ? gpc_data_users_offline(s, w, d->name, spec->name, &u, &n, err)
                     : gpc_data_users(s, w, d->name, spec->name, &u, &n, err);
    int unknown = 0; /* a user whose digest the state does not have */
    for (size_t i = 0; !rc && i < n; i++) {
        if (strcmp(u[i].digest, digest) == 0)
            continue; /* the same files: shared, nothing moves */
        unknown |= !u[i].digest[0];
        u[k++] = u[i];
    }
    if (!rc && k) {
        char names[1024], destroys[2048], why[600];
        gpc_data_users_words(u, k, names, sizeof(names), destroys, sizeof(destroys));
        if (unknown)
            snprintf(why, sizeof(why), "the state does not say what %s placed there",
                     k > 1 ? "they" : "it");
        else
            snprintf(why, sizeof(why), "%.500s holds other files than %s", d->source,
                     k > 1 ? "they do" : "it does");
        rc = gpc_fail(err, GPC_ERR_USAGE, "%s:%u:%u: data.%s: live cluster%s %s use%s data "
                      "set '%s' in the store of %s region %s, and %s; applying would change "
                      "the files under %s job%s. Destroy %s first (%s), or give this data set "
                      "a name of its own", spec->source, d->line, d->col, d->name,
                      k > 1 ? "s" : "", names, k > 1 ? "" : "s", d->name, w->provider,
                      w->region, why, k > 1 ? "their" : "its", k > 1 ? "s" : "",
                      k > 1 ? "them" : "it", destroys);
    }
    free(u);
    return rc;
}

int gpc_data_check_place(gpc_session *s, const gpc_spec *spec, const gpc_offer *at,
                         gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find(at->provider);
    if (!spec->n_data || !p || (p->caps & GPC_CAP_PLAN_ONLY) || !p->store_url ||
        !p->store_push)
        return 0; /* refused by gpc_data_check_offer */
    gpc_data_where w = {.provider = p->name, .region = at->region};
    int rc = 0;
    for (size_t i = 0; !rc && i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        char *dir = NULL, digest[65];
        if (d->is_url)
            continue;
        rc = spec_dir(spec, d, &dir, err);
        if (!rc)
            rc = guard_place(s, &w, spec, d, dir, 1, digest, err);
        free(dir);
    }
    return rc;
}

int gpc_data_place(gpc_session *s, const gpc_open_provider *pv, const gpc_spec *spec,
                   const gpc_offer *offer, int shares_files, gpc_data_placed *out,
                   gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!spec->n_data)
        return 0;
    int rc = gpc_data_check_offer(spec, offer, err);
    if (rc)
        return rc;
    if (!pv->prov->store_url || !pv->prov->store_push)
        return gpc_fail(err, GPC_ERR_USAGE, "%s: data: provider %s has no object storage for "
                        "the data sets (providers with one: %s)", spec->source,
                        pv->prov->name, gpc_data_store_names());
    out->fetch = !shares_files;
    if (!(out->names = calloc(spec->n_data, sizeof(char *))) ||
        !(out->urls = calloc(spec->n_data, sizeof(char *))) ||
        !(out->digests = calloc(spec->n_data, sizeof(char *))))
        goto nomem;
    gpc_data_where w = {.provider = pv->prov->name, .region = offer->region};
    /* every set is checked before any is pushed */
    char (*digest)[65] = calloc(spec->n_data, sizeof(*digest));
    if (!digest)
        goto nomem;
    for (size_t i = 0; !rc && i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        char *dir = NULL;
        if (d->is_url)
            continue;
        rc = spec_dir(spec, d, &dir, err);
        if (!rc)
            rc = guard_place(s, &w, spec, d, dir, 0, digest[i], err);
        free(dir);
    }
    if (rc) {
        free(digest);
        gpc_data_placed_free(out);
        return rc;
    }
    for (size_t i = 0; i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        char url[1024];
        if (d->is_url) {
            snprintf(url, sizeof(url), "%s", d->source);
            gpc_info(s->log, "gpuctl: data %s: %s (used where it is)", d->name, url);
        } else {
            char *dir = NULL;
            gpc_store_stats st;
            rc = spec_dir(spec, d, &dir, err);
            /* the job sees the directory as it is now: a mirror */
            if (!rc)
                rc = gpc_data_push(s, &w, dir, d->name, GPC_DATA_DELETE, &st, url,
                                   sizeof(url), err);
            free(dir);
            if (rc) {
                gpc_error inner = *err;
                gpc_error_clear(err);
                gpc_error_wrap(err, &inner, "data.%s: placing %s in the store of %s %s",
                               d->name, d->source, offer->provider, offer->region);
                free(digest);
                gpc_data_placed_free(out);
                return rc;
            }
            char sz[32];
            gpc_format_bytes(st.bytes_sent, sz, sizeof(sz));
            gpc_info(s->log, "gpuctl: data %s: %lu file(s) sent (%s), %lu unchanged, %lu "
                     "deleted -> %s", d->name, st.files_sent, sz, st.files_skipped,
                     st.files_deleted, url);
        }
        if (!(out->names[i] = strdup(d->name)) || !(out->urls[i] = strdup(url)) ||
            !(out->digests[i] = strdup(digest[i])))
            goto nomem_d;
        out->n = i + 1;
    }
    free(digest);
    digest = NULL;
    if (out->fetch) {
        out->dir = strdup("");
    } else {
        /* the nodes read the store's data/ directory in place */
        char dir[1024];
        rc = pv->prov->store_url(pv->ctx, offer->region, "data", dir, sizeof(dir), err);
        if (rc) {
            gpc_data_placed_free(out);
            return rc;
        }
        out->dir = strdup(dir);
    }
    if (out->dir)
        return 0;
nomem_d:
    free(digest);
nomem:
    gpc_data_placed_free(out);
    return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

int gpc_data_record_placed(gpc_session *s, int64_t cluster_id, const gpc_data_placed *d,
                           gpc_error *err)
{
    int rc = 0;
    for (size_t i = 0; d && !rc && i < d->n; i++)
        if (d->digests && d->digests[i] && d->digests[i][0])
            rc = gpc_data_record(s, cluster_id, d->names[i], d->digests[i], err);
    return rc;
}

cJSON *gpc_data_plan_json(const gpc_spec *spec, const gpc_offer *chosen)
{
    if (!spec->n_data)
        return NULL;
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < spec->n_data; i++) {
        const gpc_data_src *d = &spec->data[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, j);
        cJSON_AddStringToObject(j, "name", d->name);
        cJSON_AddStringToObject(j, "source", d->source);
        cJSON_AddStringToObject(j, "kind", d->is_url ? "url" : "directory");
        char note[768];
        if (d->is_url) {
            size_t sl = scheme_len(d->source);
            const gpc_provider *owner = NULL;
            for (size_t k = 0; gpc_providers[k] && !owner; k++)
                if (gpc_providers[k]->store_scheme &&
                    strlen(gpc_providers[k]->store_scheme) == sl &&
                    strncmp(gpc_providers[k]->store_scheme, d->source, sl) == 0)
                    owner = gpc_providers[k];
            cJSON_AddNullToObject(j, "files");
            cJSON_AddNullToObject(j, "bytes");
            /* the bucket's region is known only by asking its provider,
             * which plan does not do */
            cJSON_AddNullToObject(j, "region");
            if (chosen)
                snprintf(note, sizeof(note), "data %s: %s, read where it is; its bucket's "
                         "region is known only online: outside %s (the chosen offer's) every "
                         "node's fetch is an inter-region transfer, billed per GiB by %s",
                         d->name, d->source, chosen->region, owner ? owner->name : "its provider");
            else
                snprintf(note, sizeof(note), "data %s: %s, read where it is", d->name,
                         d->source);
        } else {
            char *dir = NULL;
            gpc_store_entry *v = NULL;
            size_t n = 0;
            uint64_t bytes = 0;
            gpc_error e;
            gpc_error_clear(&e);
            int ok = gpc_spec_path(spec, d->source, &dir, &e) == 0 &&
                     gpc_store_list_dir(dir, &v, &n, &e) == 0;
            for (size_t k = 0; ok && k < n; k++)
                bytes += v[k].size;
            free(v);
            free(dir);
            cJSON_AddItemToObject(j, "files", ok ? cJSON_CreateNumber((double)n)
                                                 : cJSON_CreateNull());
            cJSON_AddItemToObject(j, "bytes", ok ? cJSON_CreateNumber((double)bytes)
                                                 : cJSON_CreateNull());
            if (chosen)
                cJSON_AddStringToObject(j, "region", chosen->region);
            else
                cJSON_AddNullToObject(j, "region");
            char sz[32];
            gpc_format_bytes(bytes, sz, sizeof(sz));
            if (chosen)
                snprintf(note, sizeof(note), "data %s: %s (%zu file(s), %s) is uploaded to "
                         "%s's store in %s at apply (only files changed since the last push "
                         "move)", d->name, d->source, n, sz, chosen->provider, chosen->region);
            else
                snprintf(note, sizeof(note), "data %s: %s (%zu file(s), %s) is uploaded at "
                         "apply to the store of the chosen offer's region", d->name,
                         d->source, n, sz);
        }
        cJSON_AddStringToObject(j, "note", note);
    }
    return arr;
}

int gpc_data_pull(gpc_session *s, const gpc_data_where *w, const char *name, const char *dir,
                  gpc_store_stats *st, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    if (!gpc_data_name_ok(name))
        return gpc_fail(err, GPC_ERR_USAGE, "invalid data set name '%s': 1 to 63 letters, "
                        "digits, '.', '_' and '-', starting with a letter or digit", name);
    /* a DIR that cannot be one is the caller's mistake, said before anything
     * is fetched (exit 3, as push's) */
    struct stat sb;
    if (lstat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: not a directory", dir);
    /* ls says whether there is one (NOT_FOUND) before anything is made */
    gpc_store_entry *v = NULL;
    size_t n = 0;
    int rc = gpc_data_list(s, w, name, &v, &n, err);
    free(v);
    gpc_open_provider op;
    if (!rc)
        rc = gpc_session_provider(s, gpc_data_provider(w, err)->name, &op, err);
    char path[GPC_STORE_PATH_MAX + 1];
    snprintf(path, sizeof(path), "data/%s", name);
    if (rc)
        return rc;
    rc = op.prov->store_pull(op.ctx, w->region, path, dir, st, err);
    if (rc) {
        /* each file arrives whole (FILE.gpuctl-part, renamed): say how many did */
        char sz[32];
        gpc_format_bytes(st->bytes_sent, sz, sizeof(sz));
        gpc_error inner = *err;
        gpc_error_clear(err);
        gpc_error_wrap(err, &inner, "data pull %s: %lu of %zu file(s) (%s) arrived in %s "
                       "before this failure, each whole; pull again to fetch the rest", name,
                       st->files_sent + st->files_skipped, n, sz, dir);
    }
    return rc;
}
