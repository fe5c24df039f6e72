/* destroy.c - gpc_cluster_destroy and the provider's cluster clean-up */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "lifecycle.h"
#include "gpuctl/buf.h"
#include "gpuctl/spec.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"

/* Ask the provider to remove what else it made for the cluster. */
int gpc_lc_cleanup_resources(gpc_session *s, const gpc_open_provider *pv,
                             gpc_cluster_rec *c, gpc_error *err)
{
    if (!pv->prov->cleanup_cluster)
        return 0;
    gpc_lc_ref r;
    int rc = gpc_lc_ref_open(s, c, &r, err);
    if (!rc)
        rc = pv->prov->cleanup_cluster(pv->ctx, &r.ref, err);
    gpc_lc_ref_close(s, c, &r);
    if (!rc)
        gpc_lc_event(s, c->id, -1, "cleanup", "provider resources removed");
    return rc;
}

/* ---- destroy ---------------------------------------------------------- */

int gpc_lc_node_deleted(gpc_session *s, gpc_node_rec *nd, int64_t now, gpc_error *err)
{
    nd->phase = GPC_PHASE_TERMINATED;
    if (!nd->ended_at)
        nd->ended_at = now;
    int rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_node_update(s->st, nd, err);
    if (!rc)
        rc = gpc_ledger_close(s->st, nd->id, now, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    return rc;
}

int gpc_cluster_destroy(gpc_session *s, gpc_cluster_rec *c, int *deleted, gpc_error *err)
{
    *deleted = 0;
    gpc_open_provider op;
    const gpc_open_provider *pv = &op;
    int rc = gpc_session_provider(s, c->provider, &op, err);
    if (rc)
        return rc;
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    rc = gpc_node_list(s->st, c->id, 0, &nodes, &n, err);
    if (rc)
        return rc;
    gpc_buf left;
    gpc_buf_init(&left, GPC_BUF_LINE_MAX);
    int nleft = 0;
    int64_t now = gpc_now();
    /* A provider that tags what it makes removes it all by the cluster's
     * tag (EC2: terminate, wait until terminated, then the placement group,
     * security group and key pair); the nodes are then gone too. */
    int by_tag = pv->prov->cleanup_cluster != NULL;
    size_t to_mark = n;
    gpc_code by_tag_code = GPC_OK;
    if (by_tag) {
        gpc_error e;
        gpc_error_clear(&e);
        for (size_t i = 0; i < n; i++)
            if (nodes[i].provider_id[0] && gpc_lc_fault("fail-delete", nodes[i].rank))
                gpc_fail(&e, (gpc_code)gpc_lc_fault_code, "%s: injected %s failure deleting %s",
                         pv->prov->name, gpc_code_name((gpc_code)gpc_lc_fault_code), nodes[i].name);
        if (e.code || gpc_lc_cleanup_resources(s, pv, c, &e) != 0) {
            by_tag_code = e.code;
            nleft = 1;
            gpc_buf_addf(&left, NULL, "%s", e.msg);
            gpc_lc_event(s, c->id, -1, "error", "cleanup failed: %s", e.msg);
            to_mark = 0; /* nothing is marked deleted: destroy again to finish */
        }
    }
    for (size_t i = 0; i < to_mark; i++) {
        gpc_node_rec *nd = &nodes[i];
        gpc_error e;
        gpc_error_clear(&e);
        int found = 0;
        /* a node created but never recorded is deleted too; one that
         * cannot be looked up stays recorded */
        int drc = by_tag ? 0 : gpc_lc_adopt(s, pv, nd, &found, &e);
        drc = drc ? drc : !nd->provider_id[0] || by_tag ? 0
                : gpc_lc_fault("fail-delete", nd->rank)
                ? gpc_fail(&e, (gpc_code)gpc_lc_fault_code, "%s: injected %s failure deleting %s",
                           pv->prov->name, gpc_code_name((gpc_code)gpc_lc_fault_code), nd->name)
                : gpc_lc_delete(pv, nd, &e);
        if (drc) {
            nleft++;
            gpc_buf_addf(&left, NULL, "%s%s (%s)", nleft > 1 ? ", " : "", nd->name, e.msg);
            gpc_lc_event(s, c->id, (int)nd->rank, "error", "delete failed: %s", e.msg);
            continue;
        }
        rc = gpc_lc_node_deleted(s, nd, now, err);
        if (rc)
            break;
        if (nd->provider_id[0]) {
            (*deleted)++;
            gpc_lc_event(s, c->id, (int)nd->rank, "delete", "deleted %s", nd->provider_id);
        }
    }
    gpc_node_list_free(nodes, n);
    if (!rc && nleft == 0) {
        c->destroyed_at = now;
        c->updated_at = now;
        c->phase = GPC_PHASE_TERMINATED;
        rc = gpc_cluster_update(s->st, c, err);
        if (!rc)
            gpc_lc_event(s, c->id, -1, "destroy", "cluster destroyed");
    } else if (!rc) {
        rc = by_tag ? gpc_fail(err, by_tag_code == GPC_ERR_AUTH ? GPC_ERR_AUTH : GPC_ERR_PARTIAL,
                               "cluster '%s' stays recorded: %s; run destroy again", c->name,
                               gpc_buf_str(&left))
                    : gpc_fail(err, GPC_ERR_PARTIAL,
                               "cluster '%s': %d node(s) could not be deleted and stay "
                               "recorded: %s", c->name, nleft, gpc_buf_str(&left));
    }
    gpc_buf_free(&left);
    return rc;
}

/* ---- checkpoints in the store (destroy --purge) ----------------------- */

int gpc_cluster_checkpoints(gpc_session *s, const gpc_cluster_rec *c, gpc_ckpt_mode mode,
                            char *url, size_t size, size_t *n, gpc_error *err)
{
    int purge = mode == GPC_CKPT_PURGE;
    *n = 0;
    if (size)
        url[0] = '\0';
    gpc_open_provider op;
    int rc = gpc_session_provider(s, c->provider, &op, err);
    if (rc)
        return rc;
    if (!op.prov->store_url || !op.prov->store_list || !op.prov->store_remove)
        return 0;
    /* a plain destroy asks the store only about a spec with checkpoint_dir */
    if (mode == GPC_CKPT_LOOK) {
        cJSON *spec = cJSON_Parse(c->spec_json ? c->spec_json : "");
        int has = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(spec, "checkpoint_dir"));
        cJSON_Delete(spec);
        if (!has)
            return 0;
    }
    /* the store of the cluster's region: its nodes' (destroyed ones too) */
    gpc_node_rec *nodes = NULL;
    size_t nn = 0;
    char region[64] = "", path[256];
    rc = gpc_node_list(s->st, c->id, 1, &nodes, &nn, err);
    for (size_t i = 0; !rc && i < nn && !region[0]; i++)
        snprintf(region, sizeof(region), "%s", nodes[i].region);
    gpc_node_list_free(nodes, nn);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), GPC_CKPT_STORE_PATH_FMT, c->name);
    gpc_store_entry *v = NULL;
    size_t nv = 0;
    rc = op.prov->store_list(op.ctx, region[0] ? region : NULL, path, &v, &nv, err);
    free(v);
    if (rc || !nv)
        return rc;
    rc = op.prov->store_url(op.ctx, region[0] ? region : NULL, path, url, size, err);
    if (!rc && purge) {
        size_t removed = 0;
        rc = op.prov->store_remove(op.ctx, region[0] ? region : NULL, path, &removed, err);
        if (!rc) {
            gpc_lc_event(s, c->id, -1, "purge", "%zu checkpoint file(s) removed from %s",
                         removed, url);
            nv = removed;
        }
    }
    if (!rc)
        *n = nv;
    return rc;
}

/* ---- checkpoint_dir on this machine (local; slurm from its login node) -- */

int gpc_cluster_checkpoint_dir(gpc_session *s, const gpc_cluster_rec *c, char *dir, size_t size,
                               size_t *n, gpc_error *err)
{
    *n = 0;
    if (size)
        dir[0] = '\0';
    cJSON *js = cJSON_Parse(c->spec_json ? c->spec_json : "");
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(js, "checkpoint_dir");
    char *want = cJSON_IsString(ck) ? strdup(ck->valuestring) : NULL;
    cJSON_Delete(js);
    if (!want)
        return 0;
    const gpc_provider *p = gpc_provider_find(c->provider);
    int shares = p && (p->caps & GPC_CAP_SHARED_FILES);
    int rc = 0;
    if (!shares && p && p->shares_files && !(p->caps & GPC_CAP_PLAN_ONLY)) {
        /* the provider says per place: ask about the head's */
        gpc_node_rec *nodes = NULL;
        size_t nn = 0;
        gpc_offer at;
        memset(&at, 0, sizeof(at));
        rc = gpc_node_list(s->st, c->id, 1, &nodes, &nn, err);
        for (size_t i = 0; !rc && i < nn; i++)
            if (nodes[i].rank == 0) {
                snprintf(at.provider, sizeof(at.provider), "%s", nodes[i].provider);
                snprintf(at.region, sizeof(at.region), "%s", nodes[i].region);
                snprintf(at.zone, sizeof(at.zone), "%s", nodes[i].zone);
                snprintf(at.instance_type, sizeof(at.instance_type), "%s",
                         nodes[i].instance_type);
            }
        gpc_node_list_free(nodes, nn);
        if (!rc && at.provider[0])
            rc = gpc_lc_offer_shares(s, &at, &shares, err);
    }
    if (rc || !shares) {
        free(want);
        return rc;
    }
    /* resolved as apply did: against the spec file's directory */
    char *base = c->spec_path && c->spec_path[0] ? strdup(c->spec_path) : NULL;
    gpc_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.source = c->spec_path && c->spec_path[0] ? c->spec_path : (char *)"-";
    sp.base_dir = base ? dirname(base) : NULL;
    char *path = NULL;
    rc = gpc_spec_path(&sp, want, &path, err);
    free(base);
    free(want);
    if (rc)
        return rc;
    struct stat sb;
    gpc_store_entry *v = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        rc = gpc_store_list_dir(path, &v, n, err);
    free(v);
    if (!rc && (size_t)snprintf(dir, size, "%s", path) >= size)
        rc = gpc_fail(err, GPC_ERR_USAGE, "checkpoint_dir %s is too long for its buffer", path);
    free(path);
    return rc;
}
