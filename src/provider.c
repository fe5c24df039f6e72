/* provider.c - the registry of providers compiled in (see provider.h). */
#include <string.h>

#include "gpuctl/provider.h"

extern const gpc_provider gpc_provider_local;
extern const gpc_provider gpc_provider_aws;

const gpc_provider *const gpc_providers[] = {
    &gpc_provider_local,
    &gpc_provider_aws,
    NULL
};

const gpc_provider *gpc_provider_find(const char *name)
{
    for (size_t i = 0; gpc_providers[i]; i++)
        if (strcmp(gpc_providers[i]->name, name) == 0)
            return gpc_providers[i];
    return NULL;
}

const char *gpc_provider_names(void)
{
    static char names[256];
    if (names[0])
        return names;
    size_t len = 0;
    for (size_t i = 0; gpc_providers[i]; i++) {
        const char *n = gpc_providers[i]->name;
        size_t l = strlen(n);
        if (len + l + 3 >= sizeof(names))
            break;
        if (i) {
            memcpy(names + len, ", ", 2);
            len += 2;
        }
        memcpy(names + len, n, l);
        len += l;
        names[len] = '\0';
    }
    return names;
}
