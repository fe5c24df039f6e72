/* rebuild.c - gpc_cluster_rebuild (`gpuctl status --refresh`): a lost
 * cluster record made again from what the provider's tags say of its
 * nodes (gpc_orphan.node, listed by list_orphans as `gpuctl gc` lists
 * them).  The record says what the tags hold (name, uid, ranks, provider
 * ids, place, market, price, spec hash) and has no spec (spec_json ""):
 * the spec must be given again (gpc_cluster_rebuilt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "gpuctl/clock.h"

int gpc_cluster_rebuilt(const gpc_cluster_rec *c)
{
    return c && c->spec_json && !c->spec_json[0];
}

/* n lower-case hex digits and nothing else */
static int hex_ok(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* Why the nodes of uid `uid` among o[0..n) cannot make one record ("" when
 * they can), into why (size bytes); *count their number, *nodes the
 * cluster's node count, *hash the first spec hash. */
static void judge(const gpc_orphan *o, size_t n, const char *uid, size_t *count,
                  uint32_t *nodes, const char **hash, char *why, size_t size)
{
    why[0] = '\0';
    *count = 0;
    *nodes = 0;
    *hash = "";
    const gpc_orphan *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!o[i].node || strcmp(o[i].cluster_uid, uid) != 0)
            continue;
        (*count)++;
        if (!first)
            first = &o[i];
        if (!(*hash)[0] && o[i].spec_hash[0])
            *hash = o[i].spec_hash;
        if (o[i].nodes > *nodes)
            *nodes = o[i].nodes;
        if (o[i].rank + 1 > *nodes)
            *nodes = o[i].rank + 1;
        for (size_t j = 0; !why[0] && j < i; j++)
            if (o[j].node && strcmp(o[j].cluster_uid, uid) == 0 && o[j].rank == o[i].rank)
                snprintf(why, size, "two nodes are tagged rank %u (%s, %s)", o[i].rank, o[j].id,
                         o[i].id);
        if (!why[0] && strcmp(o[i].cluster, first->cluster) != 0)
            snprintf(why, size, "its nodes are tagged with two names ('%s', '%s')",
                     first->cluster, o[i].cluster);
        if (!why[0] && strcmp(o[i].region, first->region) != 0)
            snprintf(why, size, "its nodes are in two regions (%s, %s)", first->region,
                     o[i].region);
        if (!why[0] && o[i].spec_hash[0] && strcmp(o[i].spec_hash, *hash) != 0)
            snprintf(why, size, "its nodes are tagged with two spec hashes");
    }
    if (!why[0] && first && !gpc_valid_cluster_name(first->cluster))
        snprintf(why, size, "its name tag '%s' is not a cluster name", first->cluster);
    if (!why[0] && !hex_ok(uid, 32))
        snprintf(why, size, "its uid tag is not one gpuctl makes (32 hex digits)");
    if (!why[0] && !hex_ok(*hash, 64))
        snprintf(why, size, "its nodes carry no spec hash tag");
}

/* Record cluster `uid` of `provider` from its nodes among o[0..n): the
 * cluster, its nodes, their ledger entries from their launch, and an
 * event, in one transaction.  *cid receives the cluster's id. */
static int record(gpc_session *s, const char *provider, const gpc_orphan *o, size_t n,
                  const char *uid, uint32_t nodes, const char *hash, int64_t *cid,
                  gpc_error *err)
{
    int64_t now = gpc_now(), created = now;
    const gpc_orphan *any = NULL;
    const char *data = "";
    int running = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(o[i].cluster_uid, uid) != 0)
            continue;
        /* the cluster's provider data as gc would hand it to cleanup (an
         * IAM role's name): the first that any of its resources has */
        if (!data[0] && o[i].data[0])
            data = o[i].data;
        if (!o[i].node)
            continue;
        if (!any)
            any = &o[i];
        if (o[i].launched_at && o[i].launched_at < created)
            created = o[i].launched_at;
        running |= o[i].phase == GPC_PHASE_RUNNING;
    }
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)any->cluster;
    c.uid = (char *)uid;
    c.provider = (char *)provider;
    c.spec_hash = (char *)hash;
    c.spec_json = (char *)""; /* no spec: gpc_cluster_rebuilt */
    c.spec_path = (char *)"";
    c.nodes = nodes;
    c.rdzv_port = 29400;
    c.phase = running ? GPC_PHASE_RUNNING : GPC_PHASE_BOOTING;
    c.exit_code = -1;
    c.created_at = created;
    c.updated_at = now;
    c.provider_data = (char *)data;
    int rc = gpc_state_begin(s->st, err);
    if (!rc)
        rc = gpc_cluster_insert(s->st, &c, err);
    size_t count = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!o[i].node || strcmp(o[i].cluster_uid, uid) != 0)
            continue;
        char name[96];
        snprintf(name, sizeof(name), "%s-%u", any->cluster, o[i].rank);
        int64_t at = o[i].launched_at ? o[i].launched_at : now;
        gpc_node_rec nd = {
            .cluster_id = c.id, .rank = o[i].rank, .name = name, .provider = (char *)provider,
            .provider_id = (char *)o[i].id, .client_token = (char *)"",
            .region = (char *)o[i].region, .zone = (char *)o[i].zone,
            .instance_type = (char *)o[i].instance_type, .spot = o[i].spot,
            .private_ip = (char *)o[i].private_ip, .price_hourly = o[i].price_hourly,
            .phase = o[i].phase, .exit_code = -1, .created_at = at, .started_at = at,
            .provider_data = (char *)"",
        };
        rc = gpc_node_insert(s->st, &nd, err);
        /* what it has cost since its launch, at the price it was bought at */
        if (!rc && !gpc_lc_is_terminal(o[i].phase))
            rc = gpc_ledger_open(s->st, c.id, nd.id, provider, o[i].instance_type,
                                 o[i].price_hourly, at, err);
        count++;
    }
    /* the ranks no node was found for: recorded to be made (pending, in
     * the cluster's region), as an apply that could not make them leaves
     * them, so that apply of the spec makes them (launch.c) */
    char missing[160] = "";
    size_t n_missing = 0;
    for (uint32_t r = 0; !rc && r < nodes; r++) {
        size_t i = 0;
        while (i < n && !(o[i].node && o[i].rank == r && strcmp(o[i].cluster_uid, uid) == 0))
            i++;
        if (i < n)
            continue;
        char name[96];
        snprintf(name, sizeof(name), "%s-%u", any->cluster, r);
        gpc_node_rec nd = {
            .cluster_id = c.id, .rank = r, .name = name, .provider = (char *)provider,
            .provider_id = (char *)"", .client_token = (char *)"",
            .region = (char *)any->region, .zone = (char *)"", .instance_type = (char *)"",
            .private_ip = (char *)"", .phase = GPC_PHASE_PENDING, .exit_code = -1,
            .created_at = now, .provider_data = (char *)"",
        };
        rc = gpc_node_insert(s->st, &nd, err);
        if (n_missing++ < 8)
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%u",
                     n_missing > 1 ? ", " : "", r);
        else if (n_missing == 9)
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), ", ...");
    }
    char msg[512], gone[256] = "";
    if (n_missing)
        snprintf(gone, sizeof(gone), " (rank%s %s not found: recorded as pending, made by apply "
                 "of the spec)", n_missing > 1 ? "s" : "", missing);
    snprintf(msg, sizeof(msg), "rebuilt from tags: %zu of %u node(s) in %s%s, spec %.12s; the "
             "spec itself must be given again (gpuctl apply -f SPEC)", count, nodes,
             any->region, gone, hash);
    if (!rc)
        rc = gpc_event_add(s->st, c.id, -1, "rebuild", msg, err);
    if (!rc)
        rc = gpc_state_commit(s->st, err);
    else
        gpc_state_rollback(s->st);
    if (!rc)
        *cid = c.id;
    return rc;
}

int gpc_cluster_rebuild(gpc_session *s, const char *provider, const char *name,
                        const char *const *regions, size_t n_regions, gpc_rebuilt **out,
                        size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    gpc_open_provider op;
    int rc = gpc_session_provider(s, provider, &op, err);
    if (rc)
        return rc;
    if (!op.prov->list_orphans)
        return gpc_fail(err, GPC_ERR_USAGE, "provider %s cannot rebuild a cluster's record "
                        "from tags: it cannot list what it made for gpuctl", provider);
    gpc_orphan *o = NULL;
    size_t no = 0;
    rc = gpc_orphans(s, provider, regions, n_regions, &o, &no, err);
    int partial = rc == GPC_ERR_PARTIAL;
    gpc_error part;
    gpc_error_clear(&part);
    if (partial) {
        part = *err;
        gpc_error_clear(err);
        rc = 0;
    }
    if (rc)
        return rc;
    gpc_rebuilt *v = calloc(no ? no : 1, sizeof(*v));
    size_t k = 0;
    if (!v)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < no; i++) {
        /* each uid once, at its first node; what a live cluster owns (an
         * expired one's) is its record's already */
        if (!o[i].node || o[i].owned || !o[i].cluster_uid[0] ||
            (name && strcmp(o[i].cluster, name) != 0))
            continue;
        size_t first = 0;
        while (first < i && !(o[first].node && strcmp(o[first].cluster_uid,
                                                      o[i].cluster_uid) == 0))
            first++;
        if (first < i)
            continue;
        gpc_rebuilt *r = &v[k++];
        snprintf(r->provider, sizeof(r->provider), "%s", provider);
        snprintf(r->cluster, sizeof(r->cluster), "%s", o[i].cluster);
        snprintf(r->uid, sizeof(r->uid), "%s", o[i].cluster_uid);
        snprintf(r->region, sizeof(r->region), "%s", o[i].region);
        const char *hash;
        size_t count;
        judge(o, no, o[i].cluster_uid, &count, &r->nodes, &hash, r->skipped,
              sizeof(r->skipped));
        r->found = (uint32_t)count;
        if (r->skipped[0])
            continue;
        /* under the name's lock, as apply makes a record: a live record of
         * that name (another uid: another cluster) keeps the name */
        int fd = -1;
        gpc_error e;
        gpc_error_clear(&e);
        int lrc = gpc_cluster_lock(s, o[i].cluster, 0, &fd, &e);
        gpc_cluster_rec live;
        memset(&live, 0, sizeof(live));
        int have = 0;
        if (!lrc) {
            have = gpc_cluster_get(s->st, o[i].cluster, &live, &e) == 0;
            lrc = have || e.code == GPC_ERR_NOT_FOUND ? 0 : e.code;
        }
        if (lrc)
            snprintf(r->skipped, sizeof(r->skipped), "%.200s", e.msg);
        else if (have && strcmp(live.uid, o[i].cluster_uid) == 0)
            snprintf(r->skipped, sizeof(r->skipped), "another gpuctl recorded it meanwhile");
        else if (have)
            snprintf(r->skipped, sizeof(r->skipped), "a live cluster of that name is recorded "
                     "(uid %s); its nodes are left as they are (gpuctl gc lists them)",
                     live.uid);
        else
            rc = record(s, provider, o, no, o[i].cluster_uid, r->nodes, hash, &r->cluster_id,
                        err);
        if (have)
            gpc_cluster_rec_free(&live);
        gpc_cluster_unlock(fd);
        if (!rc && r->cluster_id)
            gpc_info(s->log, "%s: cluster %s (%s) rebuilt from tags: %u of %u node(s) in %s",
                     provider, r->cluster, r->uid, r->found, r->nodes, r->region);
    }
    free(o);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    if (partial)
        *err = part;
    return partial ? GPC_ERR_PARTIAL : 0;
}
