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
