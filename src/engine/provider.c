/* provider.c - lookups over the registry of providers compiled in
 * (gpc_providers[], generated from providers/NAME/provider.cmake). */
#include <string.h>

#include "gpuctl/provider.h"

const gpc_provider *gpc_provider_find(const char *name)
{
    for (size_t i = 0; gpc_providers[i]; i++)
        if (strcmp(gpc_providers[i]->name, name) == 0)
            return gpc_providers[i];
    return NULL;
}

const gpc_provider *gpc_provider_default(void)
{
    return gpc_providers[0];
}

/* Names of the providers with every bit of `caps` and none of `without`. */
static void names_into(char *names, size_t size, unsigned caps, unsigned without)
{
    size_t len = 0;
    names[0] = '\0';
    for (size_t i = 0; gpc_providers[i]; i++) {
        if ((gpc_providers[i]->caps & caps) != caps || (gpc_providers[i]->caps & without))
            continue;
        const char *n = gpc_providers[i]->name;
        size_t l = strlen(n);
        if (len + l + 3 >= size)
            break;
        if (len) {
            memcpy(names + len, ", ", 2);
            len += 2;
        }
        memcpy(names + len, n, l);
        len += l;
        names[len] = '\0';
    }
}

const char *gpc_provider_names(void)
{
    static char names[256];
    if (!names[0])
        names_into(names, sizeof(names), 0, GPC_CAP_PLAN_ONLY);
    return names;
}

const char *gpc_provider_names_with(unsigned caps)
{
    static char names[256];
    names_into(names, sizeof(names), caps, 0);
    return names;
}

int gpc_providers_register_secrets(gpc_error *err)
{
    for (size_t i = 0; gpc_providers[i]; i++) {
        gpc_error e;
        gpc_error_clear(&e);
        int rc = gpc_http_add_words(gpc_providers[i]->secret_words, &e);
        if (rc)
            return gpc_fail(err, (gpc_code)rc, "provider %s: %s", gpc_providers[i]->name, e.msg);
    }
    return 0;
}

int gpc_provider_check(const gpc_provider *p, gpc_error *err)
{
    const char *n = p->name;
    if (strlen(n) >= sizeof(((gpc_offer *)0)->provider))
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: a name of more than %zu "
                        "characters does not fit an offer", n,
                        sizeof(((gpc_offer *)0)->provider) - 1);
    if (p->caps & GPC_CAP_PLAN_ONLY)
        return 0; /* nothing is made: its modes are never driven */
    int group = (p->caps & GPC_CAP_GROUP) != 0;
    if (!p->create_node && !group)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: no create_node", n);
    if (!p->delete_node || !p->describe_node)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: describe_node and delete_node "
                        "are required", n);
    if (group && !p->create_nodes)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: a group provider needs "
                        "create_nodes", n);
    if (group && p->rdzv == GPC_RDZV_HEAD_IP)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: the nodes of a group are made "
                        "together, so none can be told the head's IP: the rendezvous must be "
                        "a name or found on the node", n);
    if (group && p->rank != GPC_RANK_SCHEDULER && p->rank != GPC_RANK_LAUNCH_INDEX)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: a group's nodes share one "
                        "bootstrap: ranks must come from the scheduler or a launch index", n);
    if (!group && p->rdzv == GPC_RDZV_ON_NODE)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: a rendezvous found on the node "
                        "needs a group (the first host of one allocation)", n);
    if (!group && p->rank == GPC_RANK_SCHEDULER)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: ranks from a scheduler need a "
                        "group", n);
    if (p->rank == GPC_RANK_LAUNCH_INDEX && !p->create_nodes)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: launch-index ranks need "
                        "create_nodes", n);
    if (p->rdzv == GPC_RDZV_NAME && !p->rdzv_name)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: a named rendezvous needs "
                        "rdzv_name", n);
    int store_ops = !!p->store_url + !!p->store_push + !!p->store_pull + !!p->store_list +
                    !!p->store_remove;
    if (store_ops != 0 && store_ops != 5)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s: object storage needs all of "
                        "store_url, store_push, store_pull, store_list and store_remove", n);
    return 0;
}

gpc_head_loss gpc_provider_head_loss(const gpc_provider *p)
{
    if (p->caps & GPC_CAP_GROUP)
        return GPC_HEAD_LOSS_GROUP;
    if (p->rdzv == GPC_RDZV_NAME)
        return GPC_HEAD_LOSS_HEAD_ONLY;
    return GPC_HEAD_LOSS_WORKERS_TOO;
}

int gpc_provider_batches(const gpc_provider *p, uint32_t rank, uint32_t nnodes)
{
    if (p->caps & GPC_CAP_GROUP)
        return 1;
    return rank > 0 && nnodes > 2 && p->create_nodes && p->rank != GPC_RANK_ENGINE;
}

gpc_rank_from gpc_provider_rank_source(const gpc_provider *p, uint32_t rank, int in_batch)
{
    if (in_batch)
        return p->rank == GPC_RANK_ENGINE ? GPC_RANK_LAUNCH_INDEX : p->rank;
    return p->rank == GPC_RANK_RENDEZVOUS && rank > 0 ? GPC_RANK_RENDEZVOUS : GPC_RANK_ENGINE;
}
