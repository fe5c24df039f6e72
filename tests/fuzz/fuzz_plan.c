/*
 * fuzz_plan.c - a saved plan: the file -> gpc_plan_read (apply PLANFILE)
 * -> gpc_plan_print.
 *
 * An input that is a JSON object is sealed first as gpuctl seals a plan
 * (src/plan.c doc_checksum: SHA-256 of the unformatted document without
 * schema_version and checksum; the embedded spec's hash when the spec
 * parses), as anyone can: so inputs reach the checks behind the checksum
 * instead of all failing at it.  Other inputs are written as they are.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "present.h"
#include "gpuctl/plan.h"

static void replace_string(cJSON *o, const char *k, const char *v)
{
    if (cJSON_GetObjectItemCaseSensitive(o, k))
        cJSON_ReplaceItemInObjectCaseSensitive(o, k, cJSON_CreateString(v));
    else
        cJSON_AddStringToObject(o, k, v);
}

static void seal(cJSON *d)
{
    cJSON *sj = cJSON_GetObjectItemCaseSensitive(d, "spec");
    const cJSON *yaml = cJSON_GetObjectItemCaseSensitive(sj, "yaml");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(sj, "source");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(sj, "base_dir");
    if (cJSON_IsObject(sj) && cJSON_IsString(yaml) && cJSON_IsString(src) &&
        cJSON_IsString(base)) {
        gpc_spec *spec = NULL;
        gpc_error e;
        gpc_error_clear(&e);
        char hash[65];
        if (gpc_spec_load_string(src->valuestring, base->valuestring, yaml->valuestring,
                                 strlen(yaml->valuestring), &spec, &e) == 0 &&
            gpc_spec_hash(spec, hash, &e) == 0)
            replace_string(sj, "sha256", hash);
        gpc_spec_free(spec);
    }
    cJSON *copy = cJSON_Duplicate(d, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "schema_version");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "checksum");
    char *text = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!text)
        return;
    char hex[65], sum[72];
    gpc_sha256_hex(text, strlen(text), hex);
    free(text);
    snprintf(sum, sizeof(sum), "sha256:%s", hex);
    replace_string(d, "checksum", sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", fuzz_path("plan.json"));
    if (!once++ && !freopen("/dev/null", "w", stdout)) /* the printed plans */
        abort();
    cJSON *d = cJSON_ParseWithLength((const char *)data, size);
    char *text = NULL;
    if (cJSON_IsObject(d)) {
        seal(d);
        text = cJSON_Print(d);
    }
    cJSON_Delete(d);
    if (text)
        fuzz_write(path, text, strlen(text));
    else
        fuzz_write(path, data, size);
    free(text);
    gpc_plan plan;
    gpc_spec *spec = NULL;
    char *spec_path = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_plan_read(path, &plan, &spec, &spec_path, &err);
    fuzz_note("plan", "read", &err);
    if (rc == 0) {
        gpc_out o;
        memset(&o, 0, sizeof(o));
        gpc_plan_print(&o, &plan);
        fflush(stdout);
        gpc_plan_free(&plan);
        gpc_spec_free(spec);
        free(spec_path);
    }
    return 0;
}
