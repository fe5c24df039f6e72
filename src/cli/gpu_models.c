/* gpu_models.c - the catalog's GPU models for `offers --gpu` and `validate`. */
#include <string.h>
#include <strings.h>

#include "commands.h"

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
