/* orphans.c - the orphan sweep (`gpuctl gc`): gpc_orphans, what a provider
 * still keeps for gpuctl that no live cluster of the state owns or whose
 * cluster expired (the provider's list_orphans), and gpc_orphans_delete,
 * which removes them cluster uid by cluster uid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "gpuctl/buf.h"
#include "gpuctl/clock.h"

/* The live cluster of `provider` whose uid is `uid`, or NULL. */
static const gpc_cluster_rec *owner_of(const gpc_cluster_rec *live, size_t nl,
                                       const char *provider, const char *uid)
{
    for (size_t j = 0; uid[0] && j < nl; j++)
        if (strcmp(live[j].provider, provider) == 0 && strcmp(live[j].uid, uid) == 0)
            return &live[j];
    return NULL;
}

int gpc_orphans(gpc_session *s, const char *provider, const char *const *regions,
                size_t n_regions, gpc_orphan **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    gpc_open_provider op;
    int rc = gpc_session_provider(s, provider, &op, err);
    if (rc)
        return rc;
    if (!op.prov->list_orphans)
        return gpc_fail(err, GPC_ERR_USAGE, "provider %s cannot list what it made for gpuctl",
                        provider);
    gpc_cluster_rec *live = NULL;
    size_t nl = 0;
    rc = gpc_cluster_list(s->st, 0, &live, &nl, err);
    gpc_orphan *all = NULL;
    size_t na = 0;
    if (!rc)
        rc = op.prov->list_orphans(op.ctx, regions, n_regions, &all, &na, err);
    /* a region the provider could not read is said (PARTIAL); what it read
     * elsewhere is still listed */
    int partial = rc == GPC_ERR_PARTIAL;
    if (partial)
        rc = 0;
    int64_t now = gpc_now();
    for (size_t i = 0; !rc && i < na; i++) {
        all[i].cluster_uid[sizeof(all[i].cluster_uid) - 1] = '\0';
        all[i].owned = owner_of(live, nl, provider, all[i].cluster_uid) != NULL;
        all[i].expired_at = 0;
    }
    /* A resource whose expiry passed makes its whole cluster uid
     * collectable, live or not: cleanup_cluster removes by uid, and a node
     * past lifecycle.max_duration means the cluster should be over. */
    for (size_t i = 0; !rc && i < na; i++) {
        if (!all[i].expires_at || all[i].expires_at > now || !all[i].cluster_uid[0])
            continue;
        for (size_t j = 0; j < na; j++)
            if (strcmp(all[j].cluster_uid, all[i].cluster_uid) == 0 &&
                (!all[j].expired_at || all[i].expires_at < all[j].expired_at))
                all[j].expired_at = all[i].expires_at;
    }
    size_t k = 0;
    for (size_t i = 0; !rc && i < na; i++)
        if (!all[i].owned || all[i].expired_at)
            all[k++] = all[i];
    gpc_cluster_list_free(live, nl);
    if (rc) {
        free(all);
        return rc;
    }
    *out = all;
    *n = k;
    return partial ? GPC_ERR_PARTIAL : 0;
}

/* Destroy the live cluster `name` (uid `uid`) whose resources expired, as
 * `gpuctl destroy` does: its record then says destroyed.  Its lock is taken
 * without waiting: a cluster another gpuctl is working on is left alone. */
static int destroy_expired(gpc_session *s, const char *name, const char *uid, gpc_error *err)
{
    int fd = -1;
    int rc = gpc_cluster_lock(s, name, 0, &fd, err);
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    if (!rc)
        rc = gpc_cluster_get(s->st, name, &c, err);
    if (!rc && strcmp(c.uid, uid) != 0)
        rc = gpc_fail(err, GPC_ERR_LOCKED, "cluster '%s' was replaced while gc ran", name);
    int deleted = 0;
    if (!rc)
        rc = gpc_cluster_destroy(s, &c, &deleted, err);
    gpc_cluster_rec_free(&c);
    gpc_cluster_unlock(fd);
    return rc;
}

int gpc_orphans_delete(gpc_session *s, const char *provider, const gpc_orphan *o, size_t n,
                       int *deleted, gpc_error *err)
{
    for (size_t i = 0; i < n; i++)
        deleted[i] = 0;
    if (n == 0)
        return 0;
    gpc_open_provider op;
    int rc = gpc_session_provider(s, provider, &op, err);
    if (rc)
        return rc;
    if (!op.prov->cleanup_cluster)
        return gpc_fail(err, GPC_ERR_USAGE, "provider %s cannot remove what it made for gpuctl",
                        provider);
    gpc_cluster_rec *live = NULL;
    size_t nl = 0;
    rc = gpc_cluster_list(s->st, 0, &live, &nl, err);
    if (rc)
        return rc;
    const char **regions = calloc(n, sizeof(*regions));
    char *data = malloc(GPC_PROVIDER_DATA_MAX);
    if (!regions || !data) {
        free(regions);
        free(data);
        gpc_cluster_list_free(live, nl);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    size_t n_left = 0;
    for (size_t i = 0; i < n; i++) {
        const char *uid = o[i].cluster_uid;
        /* each uid once, at its first resource */
        size_t first = 0;
        while (first < i && strcmp(o[first].cluster_uid, uid) != 0)
            first++;
        if (first < i)
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        const char *name = "";
        size_t nr = 0;
        data[0] = '\0';
        for (size_t j = i; j < n; j++) {
            if (strcmp(o[j].cluster_uid, uid) != 0)
                continue;
            if (!name[0])
                name = o[j].cluster;
            if (!data[0] && o[j].data[0])
                snprintf(data, GPC_PROVIDER_DATA_MAX, "%s", o[j].data);
            size_t r = 0;
            while (r < nr && strcmp(regions[r], o[j].region) != 0)
                r++;
            if (r == nr && o[j].region[0])
                regions[nr++] = o[j].region;
        }
        const gpc_cluster_rec *own = owner_of(live, nl, provider, uid);
        int drc;
        if (!uid[0])
            drc = gpc_fail(&e, GPC_ERR_PROVIDER, "it carries no cluster uid to remove it by");
        else if (own)
            drc = destroy_expired(s, own->name, uid, &e);
        else
            drc = op.prov->cleanup_cluster(op.ctx, &(gpc_cluster_ref){
                .cluster = name, .cluster_uid = uid, .regions = regions, .n_regions = nr,
                .data = data}, &e);
        if (drc) {
            n_left++;
            if (uid[0])
                gpc_buf_addf(&left, NULL, "%scluster %s (%s): %s", left.len ? "; " : "",
                             name[0] ? name : "without a name", uid, e.msg);
            else
                gpc_buf_addf(&left, NULL, "%s%s %s: %s", left.len ? "; " : "", o[i].kind,
                             o[i].id, e.msg);
            continue;
        }
        size_t count = 0;
        for (size_t j = i; j < n; j++)
            if (strcmp(o[j].cluster_uid, uid) == 0) {
                deleted[j] = 1;
                count++;
            }
        gpc_info(s->log, "%s: removed %zu resource(s) of cluster %s (%s)", provider, count,
                 name[0] ? name : "without a name", uid);
    }
    free(regions);
    free(data);
    gpc_cluster_list_free(live, nl);
    if (n_left)
        rc = gpc_fail(err, GPC_ERR_PARTIAL, "%s: the resources of %zu cluster(s) are left: %s",
                      provider, n_left, gpc_buf_str(&left));
    gpc_buf_free(&left);
    return rc;
}
