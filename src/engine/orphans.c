/* orphans.c - gpc_orphans: what a provider still keeps for gpuctl that no
 * live cluster of the state owns (the provider's list_orphans) */
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"

int gpc_orphans(gpc_session *s, const char *provider, gpc_orphan **out, size_t *n,
                gpc_error *err)
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
        rc = op.prov->list_orphans(op.ctx, NULL, 0, &all, &na, err);
    size_t k = 0;
    for (size_t i = 0; !rc && i < na; i++) {
        gpc_orphan *o = &all[i];
        o->cluster_uid[sizeof(o->cluster_uid) - 1] = '\0';
        int owned = 0;
        for (size_t j = 0; !owned && j < nl; j++)
            owned = o->cluster_uid[0] && strcmp(live[j].provider, provider) == 0 &&
                    strcmp(live[j].uid, o->cluster_uid) == 0;
        if (!owned)
            all[k++] = *o;
    }
    gpc_cluster_list_free(live, nl);
    if (rc) {
        free(all);
        return rc;
    }
    *out = all;
    *n = k;
    return 0;
}
