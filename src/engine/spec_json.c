/*
 * spec_json.c - the canonical JSON of a gpc_spec (gpc_spec_to_json) and the
 * spec hash built on it (gpuctl/spec.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/util.h"
#include "spec_int.h"

/* ------------------------------------------------------------------ */
/* Canonical JSON.                                                    */

/* Add item to obj (or to array obj when key is NULL); on any failure mark
 * *ok false and free the item. */
static cJSON *jput(bool *ok, cJSON *obj, const char *key, cJSON *item)
{
    if (!item || !obj ||
        !(key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item))) {
        cJSON_Delete(item);
        *ok = false;
        return NULL;
    }
    return item;
}

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* 0 means "not set / no limit": null. */
static cJSON *jnum0(double v)
{
    return v != 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *jrange(bool *ok, gpc_range r)
{
    cJSON *o = cJSON_CreateObject();
    jput(ok, o, "min", jnum0(r.min));
    jput(ok, o, "max", jnum0(r.max));
    return o;
}

static cJSON *jstrs(bool *ok, char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        jput(ok, a, NULL, cJSON_CreateString(v[i]));
    return a;
}

static int env_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_env_var *)a)->name, ((const gpc_env_var *)b)->name);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_label *)a)->key, ((const gpc_label *)b)->key);
}

/* env and labels sorted by name: their order carries no meaning. */
static int secret_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_secret_ref *)a)->name, ((const gpc_secret_ref *)b)->name);
}

static int data_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_data_src *)a)->name, ((const gpc_data_src *)b)->name);
}

static cJSON *jpairs(bool *ok, const void *items, size_t n, bool is_env)
{
    cJSON *o = cJSON_CreateObject();
    size_t size = is_env ? sizeof(gpc_env_var) : sizeof(gpc_label);
    void *copy = n ? malloc(n * size) : NULL;
    if (n && !copy) {
        *ok = false;
        return o;
    }
    if (n) {
        memcpy(copy, items, n * size);
        qsort(copy, n, size, is_env ? env_cmp : label_cmp);
    }
    for (size_t i = 0; i < n; i++) {
        if (is_env) {
            const gpc_env_var *e = (const gpc_env_var *)copy + i;
            jput(ok, o, e->name, jstr(e->value));
        } else {
            const gpc_label *l = (const gpc_label *)copy + i;
            jput(ok, o, l->key, jstr(l->value));
        }
    }
    free(copy);
    return o;
}

cJSON *gpc_spec_to_json(const gpc_spec *s)
{
    bool ok = true;
    if (!s)
        return NULL;
    cJSON *j = cJSON_CreateObject();
    jput(&ok, j, "spec_version", cJSON_CreateNumber(GPC_SPEC_VERSION));
    jput(&ok, j, "name", jstr(s->name));
    jput(&ok, j, "provider", jstrs(&ok, s->providers, s->n_providers));
    jput(&ok, j, "nodes", cJSON_CreateNumber(s->nodes));

    cJSON *r = jput(&ok, j, "resources", cJSON_CreateObject());
    cJSON *gpus = jput(&ok, r, "gpu", cJSON_CreateArray());
    for (size_t i = 0; i < s->resources.n_gpus; i++) {
        const gpc_gpu_req *g = &s->resources.gpus[i];
        cJSON *o = jput(&ok, gpus, NULL, cJSON_CreateObject());
        jput(&ok, o, "model", jstr(g->model && *g->model ? g->model : NULL));
        jput(&ok, o, "memory_gib", jrange(&ok, g->mem_gib));
        jput(&ok, o, "count", jrange(&ok, g->count));
    }
    jput(&ok, r, "cpus", jrange(&ok, s->resources.cpus));
    jput(&ok, r, "memory_gib", jrange(&ok, s->resources.memory_gib));
    cJSON *disk = jput(&ok, r, "disk", cJSON_CreateObject());
    jput(&ok, disk, "size_gib", jnum0(s->resources.disk_gib));
    jput(&ok, disk, "tier", cJSON_CreateString(gpc_disk_tier_name(s->resources.disk_tier)));
    jput(&ok, disk, "iops", jnum0(s->resources.disk_iops));
    jput(&ok, r, "interconnect",
         cJSON_CreateString(gpc_interconnect_name(s->resources.interconnect)));
    jput(&ok, r, "instance_types",
         jstrs(&ok, s->resources.instance_types, s->resources.n_instance_types));

    jput(&ok, j, "regions", jstrs(&ok, s->regions, s->n_regions));
    jput(&ok, j, "zones", jstrs(&ok, s->zones, s->n_zones));

    cJSON *spot = jput(&ok, j, "spot", cJSON_CreateObject());
    jput(&ok, spot, "policy", cJSON_CreateString(gpc_spot_policy_name(s->spot.policy)));
    jput(&ok, spot, "max_price", jnum0(s->spot.max_price));
    jput(&ok, spot, "head", cJSON_CreateString(gpc_spot_policy_name(s->spot.head)));
    /* only when set: the hash of a spec without them stays what earlier
     * releases recorded */
    if (s->spot.zone_cooldown_set)
        jput(&ok, spot, "zone_cooldown_s", cJSON_CreateNumber((double)s->spot.zone_cooldown_s));
    if (s->spot.fallback_after)
        jput(&ok, spot, "fallback_after", cJSON_CreateNumber(s->spot.fallback_after));

    cJSON *budget = jput(&ok, j, "budget", cJSON_CreateObject());
    jput(&ok, budget, "max_hourly", jnum0(s->budget.max_hourly));
    jput(&ok, budget, "max_total", jnum0(s->budget.max_total));

    cJSON *life = jput(&ok, j, "lifecycle", cJSON_CreateObject());
    /* "none" only when the spec says so: the hash of a spec without it
     * stays what earlier releases recorded (its default end is not part
     * of the canonical form, gpc_spec_node_end) */
    jput(&ok, life, "max_duration_s", s->lifecycle.max_duration_none
                                          ? cJSON_CreateString("none")
                                          : jnum0((double)s->lifecycle.max_duration_s));
    jput(&ok, life, "idle_timeout_s", jnum0((double)s->lifecycle.idle_timeout_s));

    jput(&ok, j, "image", jstr(s->image ? s->image : "pytorch"));
    jput(&ok, j, "env", jpairs(&ok, s->env, s->n_env, true));
    /* names and where their values come from, by name; never a value.
     * Only when there are some: the hash of a spec without secrets stays
     * what earlier releases recorded. */
    if (s->n_secrets) {
        cJSON *sec = jput(&ok, j, "secrets", cJSON_CreateObject());
        gpc_secret_ref *copy = malloc(s->n_secrets * sizeof(*copy));
        if (!copy) {
            ok = false;
        } else {
            memcpy(copy, s->secrets, s->n_secrets * sizeof(*copy));
            qsort(copy, s->n_secrets, sizeof(*copy), secret_cmp);
            for (size_t i = 0; i < s->n_secrets; i++)
                jput(&ok, sec, copy[i].name, jstr(copy[i].source));
            free(copy);
        }
    }
    jput(&ok, j, "labels", jpairs(&ok, s->labels, s->n_labels, false));
    jput(&ok, j, "workdir", jstr(s->workdir));
    jput(&ok, j, "checkpoint_dir", jstr(s->checkpoint_dir));
    /* NAME: source as written, by name; only when there are some (the
     * hash of a spec without data stays what earlier releases recorded) */
    if (s->n_data) {
        cJSON *data = jput(&ok, j, "data", cJSON_CreateObject());
        gpc_data_src *copy = malloc(s->n_data * sizeof(*copy));
        if (!copy) {
            ok = false;
        } else {
            memcpy(copy, s->data, s->n_data * sizeof(*copy));
            qsort(copy, s->n_data, sizeof(*copy), data_cmp);
            for (size_t i = 0; i < s->n_data; i++)
                jput(&ok, data, copy[i].name, jstr(copy[i].source));
            free(copy);
        }
    }
    jput(&ok, j, "setup", jstr(s->setup));

    cJSON *run = jput(&ok, j, "run", cJSON_CreateObject());
    jput(&ok, run, "command", jstr(s->run.command));
    jput(&ok, run, "nproc_per_node", s->run.nproc_per_node
                                         ? cJSON_CreateNumber(s->run.nproc_per_node)
                                         : cJSON_CreateString("auto"));
    jput(&ok, run, "rdzv_port", jnum0(s->run.rdzv_port)); /* null: provider default */
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gpc_spec_hash(const gpc_spec *spec, char out[65], gpc_error *err)
{
    cJSON *j = gpc_spec_to_json(spec);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        return spec_nomem(err);
    gpc_sha256_hex(text, strlen(text), out);
    cJSON_free(text);
    return 0;
}
