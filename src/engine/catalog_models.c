/* catalog_models.c - the catalog's GPU models: is a spec's or `offers
 * --gpu`'s model one of them, and which are there. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gpuctl/catalog.h"
#include "gpuctl/spec.h"

int gpc_gpu_model_known(const gpc_catalog *cat, const char *model)
{
    if (!*model)
        return 1;
    size_t ml = strlen(model);
    for (size_t k = 0; k < cat->n_gpus; k++) {
        const char *key = cat->gpus[k].model;
        /* the model itself, or its family: the key up to its first '-' */
        if (strcasecmp(key, model) == 0 ||
            (ml == strcspn(key, "-") && strncasecmp(key, model, ml) == 0))
            return 1;
    }
    return 0;
}

void gpc_gpu_model_list(const gpc_catalog *cat, char *out, size_t len)
{
    size_t used = 0;
    if (len)
        out[0] = '\0';
    for (size_t k = 0; k < cat->n_gpus && len; k++) {
        const char *m = cat->gpus[k].model;
        size_t need = strlen(m) + (k ? 2 : 0);
        if (used + need + 5 > len) { /* room for ", ..." */
            snprintf(out + used, len - used, "%s...", k ? ", " : "");
            return;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s", k ? ", " : "", m);
    }
}

int gpc_spec_gpu_models_check(const gpc_spec *spec, const gpc_catalog *cat, gpc_error *err)
{
    size_t bad = spec->resources.n_gpus;
    for (size_t i = 0; i < spec->resources.n_gpus && bad == spec->resources.n_gpus; i++) {
        const char *m = spec->resources.gpus[i].model;
        if (m && *m && !gpc_gpu_model_known(cat, m))
            bad = i;
    }
    if (bad == spec->resources.n_gpus)
        return 0;
    char list[512], where[96] = "", field[48];
    gpc_gpu_model_list(cat, list, sizeof(list));
    const gpc_gpu_req *g = &spec->resources.gpus[bad];
    if (g->line)
        snprintf(where, sizeof(where), ":%u:%u", g->line, g->col);
    /* an item of a list of alternatives is named as the spec's own errors
     * name it */
    if (g->listed || (!g->line && spec->resources.n_gpus > 1))
        snprintf(field, sizeof(field), "resources.gpu[%zu]", bad);
    else
        snprintf(field, sizeof(field), "resources.gpu");
    return gpc_fail(err, GPC_ERR_SPEC, "%s%s: %s: unknown GPU model '%s' (the catalog (%s) "
                    "knows %s; a family such as A100 matches every A100-*)", spec->source, where,
                    field, g->model, cat->origin, list);
}
