/*
 * spec.c - the job spec: YAML -> gpc_spec (pass 2, the schema walk), load
 * and free; the other parts are listed in spec_int.h.
 *
 * Two passes.  load_tree() turns libyaml's events into a small tree of nodes
 * that carry 1-based line/column marks; it resolves aliases (bounding their
 * expansion), rejects duplicate keys and nesting bombs, and reports libyaml's
 * own syntax errors.  walk_*() then checks the schema against that tree with
 * one table of fields per mapping and fills the gpc_spec.
 *
 * Every message has the form "FILE:LINE:COL: [field.path: ]what is wrong".
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"
#include "spec_int.h"

/* ------------------------------------------------------------------ */
/* Enum names.                                                        */

static const char *const interconnect_names[] = {
    "any", "none", "efa", "infiniband", "erdma", "rdma", NULL};
static const char *const spot_names[] = {"on-demand", "spot", "auto", NULL};
static const char *const tier_names[] = {"any", "standard", "ssd", "nvme", NULL};

const char *gpc_interconnect_name(gpc_interconnect ic)
{
    return (unsigned)ic <= GPC_IC_RDMA ? interconnect_names[ic] : "?";
}

const char *gpc_spot_policy_name(gpc_spot_policy p)
{
    return (unsigned)p <= GPC_SPOT_AUTO ? spot_names[p] : "?";
}

const char *gpc_disk_tier_name(gpc_disk_tier t)
{
    return (unsigned)t <= GPC_DISK_NVME ? tier_names[t] : "?";
}

/* ------------------------------------------------------------------ */
/* Pass 2: the schema walk.                                           */

typedef struct walk {
    const ydoc *doc;
    gpc_spec *s;
    gpc_error *err;
    const ynode *place_key[4]; /* region, regions, zone, zones: where set */
    bool spot_head_set;
    const ynode *fallback_after; /* spot.fallback_after's value: where set */
} walk;

typedef int (*field_fn)(walk *w, const ynode *key, const ynode *val, const char *path);

typedef struct field {
    const char *key;
    const char *path; /* full field path, for messages */
    field_fn fn;
    bool required;
} field;

/* "FILE:L:C: PATH: message" at node n (no "PATH: " when path is empty). */
static int failn(walk *w, const ynode *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int failn(walk *w, const ynode *n, const char *path, const char *fmt, ...)
{
    char msg[GPC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return spec_fail_at(w->doc, w->err, n->line, n->col, "%s%s%s", path ? path : "",
                   path && *path ? ": " : "", msg);
}

/* Move an error from a gpc_parse_* helper (already "what: ...") to node n. */
static int fail_from(walk *w, const ynode *n, const gpc_error *e)
{
    if (e->code != GPC_ERR_SPEC)
        return gpc_fail(w->err, e->code, "%s", e->msg);
    return spec_fail_at(w->doc, w->err, n->line, n->col, "%s", e->msg);
}

static bool is_null(const ynode *n)
{
    return n->kind == Y_SCALAR && n->plain &&
           (n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
            strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0);
}

/* What a node is, for "got ..." in messages. */
static const char *show(const ynode *n, char buf[SHOW_MAX])
{
    if (n->kind == Y_MAP)
        return "a mapping";
    if (n->kind == Y_SEQ)
        return "a sequence";
    if (is_null(n))
        return "null";
    return spec_quote(n->text, n->len, buf);
}

static int get_str(walk *w, const ynode *v, const char *path, bool nonempty, char **out)
{
    char q[SHOW_MAX];
    if (v->kind != Y_SCALAR || is_null(v))
        return failn(w, v, path, "expected a string, got %s", show(v, q));
    if (memchr(v->text, '\0', v->len))
        return failn(w, v, path, "contains a NUL character");
    if (nonempty && v->len == 0)
        return failn(w, v, path, "must not be empty");
    *out = strdup(v->text);
    return *out ? 0 : spec_nomem(w->err);
}

static int get_enum(walk *w, const ynode *v, const char *path, const char *const *names,
                    size_t first, int *out)
{
    char q[SHOW_MAX], list[128] = "";
    if (v->kind == Y_SCALAR)
        for (size_t i = first; names[i]; i++)
            if (strcmp(v->text, names[i]) == 0) {
                *out = (int)i;
                return 0;
            }
    for (size_t i = first; names[i]; i++)      /* "a, b or c" */
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                 i == first ? "" : names[i + 1] ? ", " : " or ", names[i]);
    const char *near = v->kind == Y_SCALAR ? spec_closest(v->text, names + first) : NULL;
    if (near)
        return failn(w, v, path, "expected %s, got %s (did you mean '%s'?)", list,
                     show(v, q), near);
    return failn(w, v, path, "expected %s, got %s", list, show(v, q));
}

static int get_positive(walk *w, const ynode *v, const char *path, double *out)
{
    char q[SHOW_MAX];
    double d;
    if (v->kind != Y_SCALAR || !spec_parse_number(v->text, v->len, &d))
        return failn(w, v, path, "expected a number, got %s", show(v, q));
    if (d <= 0)
        return failn(w, v, path, "must be greater than 0, got %s", show(v, q));
    *out = d;
    return 0;
}

/* An integer in [lo, hi]; `expect` words the error ("an integer >= 1"). */
static int get_int(walk *w, const ynode *v, const char *path, uint64_t lo, uint64_t hi,
                   const char *expect, uint64_t *out)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind != Y_SCALAR || !spec_parse_u64(v->text, v->len, &n) || n < lo)
        return failn(w, v, path, "expected %s, got %s", expect, show(v, q));
    if (n > hi)
        return failn(w, v, path, "at most %llu, got %s", (unsigned long long)hi,
                     show(v, q));
    *out = n;
    return 0;
}

static int get_duration(walk *w, const ynode *v, const char *path, uint64_t *out)
{
    char q[SHOW_MAX];
    gpc_error e;
    gpc_error_clear(&e);
    if (v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a duration like 30m or 72h, got %s", show(v, q));
    if (gpc_parse_duration(path, v->text, out, &e))
        return fail_from(w, v, &e);
    return 0;
}

static int get_size(walk *w, const ynode *v, const char *path, double *out)
{
    char q[SHOW_MAX];
    gpc_error e;
    gpc_error_clear(&e);
    if (v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a size like 500GB, got %s", show(v, q));
    if (gpc_parse_size_gib(path, v->text, out, &e))
        return fail_from(w, v, &e);
    return 0;
}

typedef int (*item_check)(walk *w, const ynode *item, const char *path);

/* Item i of a "string or list" value (a scalar is a list of one). */
static const ynode *item_at(const ynode *v, size_t i)
{
    return v->kind == Y_SEQ ? v->kids[i] : v;
}

/* A string or a sequence of strings, each non-empty, none repeated. */
static int get_str_list(walk *w, const ynode *v, const char *path, item_check check,
                        char ***out, size_t *n)
{
    char q[SHOW_MAX], ipath[PATH_MAX_LEN];
    if (v->kind == Y_MAP)
        return failn(w, v, path, "expected a string or a list of strings, got a mapping");
    size_t count = v->kind == Y_SEQ ? v->n : 1;
    if (count > LIST_MAX)
        return failn(w, v, path, "at most %d entries, got %zu", LIST_MAX, count);
    *out = calloc(count ? count : 1, sizeof(**out));
    if (!*out)
        return spec_nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *item = item_at(v, i);
        char *str;
        if (v->kind == Y_SEQ)
            snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        else
            snprintf(ipath, sizeof(ipath), "%s", path);
        int rc = get_str(w, item, ipath, true, &str);
        if (rc)
            return rc;
        (*out)[(*n)++] = str;
        if (check && (rc = check(w, item, ipath)) != 0)
            return rc;
        for (size_t j = 0; j + 1 < *n; j++)
            if (strcmp((*out)[j], str) == 0)
                return failn(w, item, ipath, "%s is listed twice", spec_quote(str, strlen(str), q));
    }
    return 0;
}

/* Cloud names: region, zone, instance type ("us-east-1", "Standard_ND96asr_v4"). */
static int check_cloud_name(walk *w, const ynode *item, const char *path)
{
    char q[SHOW_MAX];
    for (size_t i = 0; i < item->len; i++) {
        int c = (unsigned char)item->text[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return failn(w, item, path,
                         "%s is not a valid name (letters, digits, '-', '_' and '.')",
                         show(item, q));
    }
    return 0;
}

/* A provider of the registry (plan-only ones too: a spec may name them). */
static int check_provider(walk *w, const ynode *item, const char *path)
{
    char q[SHOW_MAX];
    const char *names[65];
    size_t n = 0;
    if (gpc_provider_find(item->text))
        return 0;
    for (size_t i = 0; gpc_providers[i] && n + 1 < sizeof(names) / sizeof(names[0]); i++)
        names[n++] = gpc_providers[i]->name;
    names[n] = NULL;
    const char *near = spec_closest(item->text, names);
    if (near)
        return failn(w, item, path, "unknown provider %s (did you mean '%s'? known: %s)",
                     show(item, q), near, gpc_provider_names_with(0));
    return failn(w, item, path, "unknown provider %s (known: %s)", show(item, q),
                 gpc_provider_names_with(0));
}

/* Keys people bring from other tools or put at the wrong level. */
static const struct {
    const char *level, *key, *hint;
} key_hints[] = {
    {"", "num_nodes", "'nodes'"},
    {"", "gpu", "'resources.gpu'"},
    {"", "gpus", "'resources.gpu'"},
    {"", "accelerators", "'resources.gpu'"},
    {"", "cpus", "'resources.cpus'"},
    {"", "memory", "'resources.memory'"},
    {"", "disk", "'resources.disk'"},
    {"", "interconnect", "'resources.interconnect'"},
    {"", "instance_type", "'resources.instance_types'"},
    {"", "instance_types", "'resources.instance_types'"},
    {"", "use_spot", "'spot'"},
    {"", "spot_policy", "'spot'"},
    {"", "max_price", "'spot.max_price'"},
    {"", "max_duration", "'lifecycle.max_duration'"},
    {"", "idle_timeout", "'lifecycle.idle_timeout'"},
    {"", "idle_duration", "'lifecycle.idle_timeout'"},
    {"", "autostop", "'lifecycle.idle_timeout'"},
    {"", "command", "'run'"},
    {"", "commands", "'run'"},
    {"", "envs", "'env'"},
    {"", "tags", "'labels'"},
    {"", "working_dir", "'workdir'"},
    {"", "cloud", "'provider'"},
    {"", "clouds", "'provider'"},
    {"", "backends", "'provider'"},
    {"", "providers", "'provider'"},
    {"resources", "accelerators", "'gpu'"},
    {"resources", "disk_size", "'disk'"},
    {"resources", "disk_tier", "'disk.tier'"},
    {"resources", "region", "'region' at the top level"},
    {"resources", "zone", "'zone' at the top level"},
    {"resources", "use_spot", "'spot' at the top level"},
    {"resources", "image_id", "'image' at the top level"},
    {"run", "nproc", "'nproc_per_node'"},
    {"run", "port", "'rdzv_port'"},
};

static int unknown_key(walk *w, const ynode *k, const char *path, const field *fields)
{
    char q[SHOW_MAX], near[PATH_MAX_LEN];
    const char *hint = NULL;
    if (k->plain && strcmp(k->text, "<<") == 0)
        return failn(w, k, path, "merge keys ('<<') are not supported");
    for (size_t i = 0; i < sizeof(key_hints) / sizeof(key_hints[0]); i++)
        if (strcmp(key_hints[i].level, path) == 0 && strcmp(key_hints[i].key, k->text) == 0)
            hint = key_hints[i].hint;
    if (!hint) {
        const char *keys[32];
        size_t n = 0;
        for (; fields[n].key && n + 1 < sizeof(keys) / sizeof(keys[0]); n++)
            keys[n] = fields[n].key;
        keys[n] = NULL;
        const char *c = spec_closest(k->text, keys);
        if (c) {
            snprintf(near, sizeof(near), "'%s'", c);
            hint = near;
        }
    }
    if (hint)
        return failn(w, k, path, "unknown key %s (did you mean %s?)",
                     spec_quote(k->text, k->len, q), hint);
    return failn(w, k, path, "unknown key %s", spec_quote(k->text, k->len, q));
}

/* Walk a mapping with a field table: keys in document order, unknown keys
 * rejected, null values left at their defaults, required keys checked. */
static int walk_map(walk *w, const ynode *map, const char *path, const field *fields)
{
    char q[SHOW_MAX];
    uint64_t seen = 0;
    if (map->kind != Y_MAP)
        return failn(w, map, path, "expected a mapping, got %s", show(map, q));
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const ynode *k = map->kids[i], *v = map->kids[i + 1];
        size_t j;
        if (k->kind != Y_SCALAR)
            return failn(w, k, path, "expected a string key, got %s", show(k, q));
        for (j = 0; fields[j].key; j++)
            if (strcmp(fields[j].key, k->text) == 0)
                break;
        if (!fields[j].key)
            return unknown_key(w, k, path, fields);
        seen |= (uint64_t)1 << j;
        if (is_null(v)) {
            if (fields[j].required)
                return failn(w, v, fields[j].path, "expected a value, got null");
            continue;
        }
        int rc = fields[j].fn(w, k, v, fields[j].path);
        if (rc)
            return rc;
    }
    for (size_t j = 0; fields[j].key; j++)
        if (fields[j].required && !(seen & ((uint64_t)1 << j)))
            return failn(w, map, path, "missing required key '%s'", fields[j].key);
    return 0;
}

/* RFC 1123 label: [a-z]([-a-z0-9]{0,61}[a-z0-9])?, at most 58 characters
 * so that node names ("<name>-<rank>", rank < 1024) are labels too. */
#define NAME_MAX_LEN 58
static bool valid_label_name(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > NAME_MAX_LEN || !is_lower((unsigned char)s[0]) || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_lower((unsigned char)s[i]) && !is_digit((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

static int f_name(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    int rc = get_str(w, v, path, false, &w->s->name);
    if (rc)
        return rc;
    if (!valid_label_name(w->s->name))
        return failn(w, v, path,
                     "%s is not a valid name (lower-case letters, digits and '-', "
                     "starting with a letter, not ending with '-', at most 58 characters)",
                     show(v, q));
    return 0;
}

static int f_provider(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int rc = get_str_list(w, v, path, check_provider, &w->s->providers, &w->s->n_providers);
    if (!rc && w->s->n_providers == 0)
        return failn(w, v, path, "empty list; name at least one provider");
    return rc;
}

static int f_nodes(walk *w, const ynode *k, const ynode *v, const char *path)
{
    uint64_t n = 0;
    int rc = get_int(w, v, path, 1, NODES_MAX, "an integer >= 1", &n);
    if (!rc)
        w->s->nodes = (uint32_t)n;
    return rc;
}

static int f_gpu(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX], ipath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind == Y_MAP)
        return failn(w, v, path, "expected a GPU like A100-80GB:8 or a list of them, got a mapping");
    size_t count = v->kind == Y_SEQ ? v->n : 1;
    if (count > LIST_MAX)
        return failn(w, v, path, "at most %d entries, got %zu", LIST_MAX, count);
    s->resources.gpus = calloc(count ? count : 1, sizeof(*s->resources.gpus));
    if (!s->resources.gpus)
        return spec_nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *item = item_at(v, i);
        gpc_error e;
        gpc_error_clear(&e);
        if (v->kind == Y_SEQ)
            snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        else
            snprintf(ipath, sizeof(ipath), "%s", path);
        if (item->kind != Y_SCALAR || is_null(item))
            return failn(w, item, ipath, "expected a GPU like A100-80GB:8, got %s",
                         show(item, q));
        gpc_gpu_req *g = &s->resources.gpus[i];
        if (gpc_parse_gpu(ipath, item->text, g, &e))
            return fail_from(w, item, &e);
        /* a spec is at most GPC_SPEC_MAX_BYTES: line and column fit */
        g->line = (unsigned)item->line;
        g->col = (unsigned)item->col;
        g->listed = v->kind == Y_SEQ;
        s->resources.n_gpus++;
    }
    return 0;
}

static int get_range(walk *w, const ynode *v, const char *path, range_end_fn end,
                     const char *expect, gpc_range *out)
{
    char q[SHOW_MAX];
    range_rc rc = v->kind == Y_SCALAR ? spec_parse_range(v->text, v->len, end, out) : RG_SYNTAX;
    if (rc == RG_EMPTY)
        return failn(w, v, path, "empty range %s (the minimum is above the maximum)",
                     show(v, q));
    if (rc != RG_OK)
        return failn(w, v, path, "expected %s, got %s", expect, show(v, q));
    return 0;
}

static int f_cpus(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_range(w, v, path, spec_count_end, "a vCPU count like 8, 8+ or 4..16",
                     &w->s->resources.cpus);
}

static int f_memory(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    gpc_range *m = &w->s->resources.memory_gib;
    int rc = get_range(w, v, path, spec_size_end, "a size like 256GB, 256GB+ or 128GB..512GB", m);
    if (!rc && (m->min > SIZE_MAX_GIB || m->max > SIZE_MAX_GIB))
        rc = failn(w, v, path, "%s is more than 1PB", show(v, q));
    return rc;
}

static int f_disk_size(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_size(w, v, path, &w->s->resources.disk_gib);
}

static int f_disk_tier(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int t;
    int rc = get_enum(w, v, path, tier_names, 1, &t);
    if (!rc)
        w->s->resources.disk_tier = (gpc_disk_tier)t;
    return rc;
}

static int f_disk_iops(walk *w, const ynode *k, const ynode *v, const char *path)
{
    uint64_t n = 0;
    int rc = get_int(w, v, path, 1, UINT32_MAX, "an integer >= 1", &n);
    if (!rc)
        w->s->resources.disk_iops = (uint32_t)n;
    return rc;
}

static const field disk_fields[] = {
    {"size", "resources.disk.size", f_disk_size, false},
    {"tier", "resources.disk.tier", f_disk_tier, false},
    {"iops", "resources.disk.iops", f_disk_iops, false},
    {NULL, NULL, NULL, false},
};

static int f_disk(walk *w, const ynode *k, const ynode *v, const char *path)
{
    if (v->kind == Y_MAP)
        return walk_map(w, v, path, disk_fields);
    return get_size(w, v, path, &w->s->resources.disk_gib);
}

static int f_interconnect(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int ic;
    int rc = get_enum(w, v, path, interconnect_names, 0, &ic);
    if (!rc)
        w->s->resources.interconnect = (gpc_interconnect)ic;
    return rc;
}

static int f_instance_types(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_list(w, v, path, check_cloud_name, &w->s->resources.instance_types,
                        &w->s->resources.n_instance_types);
}

static const field resources_fields[] = {
    {"gpu", "resources.gpu", f_gpu, false},
    {"cpus", "resources.cpus", f_cpus, false},
    {"memory", "resources.memory", f_memory, false},
    {"disk", "resources.disk", f_disk, false},
    {"interconnect", "resources.interconnect", f_interconnect, false},
    {"instance_types", "resources.instance_types", f_instance_types, false},
    {NULL, NULL, NULL, false},
};

static int f_resources(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, resources_fields);
}

/* region/regions and zone/zones: one of each pair; which = 0..3. */
static int place(walk *w, const ynode *k, const ynode *v, const char *path, int which,
                 char ***list, size_t *n)
{
    char q[SHOW_MAX];
    static const char *const names[] = {"region", "regions", "zone", "zones"};
    const ynode *other = w->place_key[which ^ 1];
    w->place_key[which] = k;
    if (other)
        return failn(w, k, NULL, "'%s' and '%s' are both set (first at line %lu); use one",
                     names[which], names[which ^ 1], other->line);
    if (!(which & 1) && v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a string, got %s (use '%s' for a list)",
                     show(v, q), names[which | 1]);
    return get_str_list(w, v, path, check_cloud_name, list, n);
}

static int f_region(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 0, &w->s->regions, &w->s->n_regions);
}

static int f_regions(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 1, &w->s->regions, &w->s->n_regions);
}

static int f_zone(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 2, &w->s->zones, &w->s->n_zones);
}

static int f_zones(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 3, &w->s->zones, &w->s->n_zones);
}

static int f_spot_policy(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int p;
    int rc = get_enum(w, v, path, spot_names, 0, &p);
    if (!rc)
        w->s->spot.policy = (gpc_spot_policy)p;
    return rc;
}

static int f_spot_head(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int p;
    int rc = get_enum(w, v, path, spot_names, 0, &p);
    if (!rc) {
        w->s->spot.head = (gpc_spot_policy)p;
        w->spot_head_set = true;
    }
    return rc;
}

static int f_spot_max_price(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->spot.max_price);
}

static int f_spot_zone_cooldown(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int off = v->kind == Y_SCALAR && spec_duration_zero(v->text, v->len); /* 0 turns it off */
    int rc = off ? 0 : get_duration(w, v, path, &w->s->spot.zone_cooldown_s);
    w->s->spot.zone_cooldown_set = !rc;
    return rc;
}

static int f_spot_fallback_after(walk *w, const ynode *k, const ynode *v, const char *path)
{
    uint64_t n = 0;
    int rc = get_int(w, v, path, 1, GPC_SPOT_FALLBACK_AFTER_MAX, "an integer >= 1", &n);
    if (!rc) {
        w->s->spot.fallback_after = (uint32_t)n;
        w->fallback_after = v;
    }
    return rc;
}

static const field spot_fields[] = {
    {"policy", "spot.policy", f_spot_policy, false},
    {"max_price", "spot.max_price", f_spot_max_price, false},
    {"head", "spot.head", f_spot_head, false},
    {"zone_cooldown", "spot.zone_cooldown", f_spot_zone_cooldown, false},
    {"fallback_after", "spot.fallback_after", f_spot_fallback_after, false},
    {NULL, NULL, NULL, false},
};

static int f_spot(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    gpc_spec *s = w->s;
    if (v->kind == Y_MAP) {
        int rc = walk_map(w, v, path, spot_fields);
        if (!w->spot_head_set)
            s->spot.head = s->spot.policy;
        /* refused, not ignored: only auto has an on-demand to fall back to */
        if (!rc && w->fallback_after && s->spot.policy != GPC_SPOT_AUTO)
            rc = failn(w, w->fallback_after, "spot.fallback_after",
                       "only policy auto falls back to on-demand, and spot.policy is %s: "
                       "remove fallback_after or set policy: auto",
                       gpc_spot_policy_name(s->spot.policy));
        return rc;
    }
    bool found = false;
    if (v->kind == Y_SCALAR && v->plain) {
        static const char *const yes[] = {"true", "True", "TRUE"};
        static const char *const no[] = {"false", "False", "FALSE"};
        for (size_t i = 0; i < 3; i++) {
            if (strcmp(v->text, yes[i]) == 0) {
                s->spot.policy = GPC_SPOT_SPOT;
                found = true;
            } else if (strcmp(v->text, no[i]) == 0) {
                s->spot.policy = GPC_SPOT_ON_DEMAND;
                found = true;
            }
        }
    }
    for (size_t i = 0; !found && v->kind == Y_SCALAR && spot_names[i]; i++)
        if (strcmp(v->text, spot_names[i]) == 0) {
            s->spot.policy = (gpc_spot_policy)i;
            found = true;
        }
    if (!found)
        return failn(w, v, path,
                     "expected true, false, a policy (spot, on-demand, auto) or a mapping, got %s",
                     show(v, q));
    s->spot.head = s->spot.policy;
    return 0;
}

static int f_max_hourly(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->budget.max_hourly);
}

static int f_max_total(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->budget.max_total);
}

static const field budget_fields[] = {
    {"max_hourly", "budget.max_hourly", f_max_hourly, false},
    {"max_total", "budget.max_total", f_max_total, false},
    {NULL, NULL, NULL, false},
};

static int f_budget(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, budget_fields);
}

/* A duration, or `none`: no end of its own (no default, spec.h). */
static int f_max_duration(walk *w, const ynode *k, const ynode *v, const char *path)
{
    static const char *const off[] = {"off", "never", "unlimited", "infinite", "inf",
                                      "false", "no", "None", "NONE", NULL};
    char q[SHOW_MAX];
    if (v->kind == Y_SCALAR && strcmp(v->text, "none") == 0) {
        w->s->lifecycle.max_duration_none = 1;
        return 0;
    }
    for (size_t i = 0; v->kind == Y_SCALAR && off[i]; i++)
        if (strcmp(v->text, off[i]) == 0)
            return failn(w, v, path, "expected a duration like 30m or 72h, or none (no end "
                         "of the node's own), got %s", show(v, q));
    return get_duration(w, v, path, &w->s->lifecycle.max_duration_s);
}

static int f_idle_timeout(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_duration(w, v, path, &w->s->lifecycle.idle_timeout_s);
}

static const field lifecycle_fields[] = {
    {"max_duration", "lifecycle.max_duration", f_max_duration, false},
    {"idle_timeout", "lifecycle.idle_timeout", f_idle_timeout, false},
    {NULL, NULL, NULL, false},
};

static int f_lifecycle(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, lifecycle_fields);
}

static int f_image(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str(w, v, path, true, &w->s->image);
}

/* A mapping of names to scalars kept byte for byte (env, labels). */
static int get_str_map(walk *w, const ynode *v, const char *path, bool is_env)
{
    char q[SHOW_MAX], kpath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind != Y_MAP)
        return failn(w, v, path, "expected a mapping of %s, got %s",
                     is_env ? "NAME: value" : "key: value", show(v, q));
    size_t count = v->n / 2;
    void *arr = calloc(count ? count : 1, is_env ? sizeof(gpc_env_var) : sizeof(gpc_label));
    if (!arr)
        return spec_nomem(w->err);
    if (is_env)
        s->env = arr;
    else
        s->labels = arr;
    for (size_t i = 0; i < count; i++) {
        const ynode *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        if (key->kind != Y_SCALAR)
            return failn(w, key, path, "expected a string key, got %s", show(key, q));
        if (is_env && !spec_valid_env_name(key->text, key->len))
            return failn(w, key, path,
                         "invalid variable name %s (letters, digits and '_', "
                         "not starting with a digit)", spec_quote(key->text, key->len, q));
        if (!is_env && !spec_valid_label_key(key->text, key->len))
            return failn(w, key, path,
                         "invalid label key %s (lower-case letters, digits, '-', '_' and '.', "
                         "starting with a letter or digit, at most 63 characters)",
                         spec_quote(key->text, key->len, q));
        snprintf(kpath, sizeof(kpath), "%s.%s", path, key->text);
        if (is_env && strncmp(key->text, "GPUCTL_", 7) == 0)
            return failn(w, key, kpath, "names starting with GPUCTL_ are reserved");
        if (val->kind != Y_SCALAR)
            return failn(w, val, kpath, "expected a scalar value, got %s", show(val, q));
        if (is_null(val)) /* at the key: an empty value has no place of its own */
            return failn(w, key, kpath, "null value; quote it if you mean the text");
        char *name = strdup(key->text), *text;
        if (!name)
            return spec_nomem(w->err);
        if (is_env) {
            s->env[s->n_env].name = name;
            s->n_env++;
        } else {
            s->labels[s->n_labels].key = name;
            s->n_labels++;
        }
        int rc = get_str(w, val, kpath, false, &text);
        if (rc)
            return rc;
        if (is_env)
            s->env[s->n_env - 1].value = text;
        else
            s->labels[s->n_labels - 1].value = text;
    }
    return 0;
}

static int f_env(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_map(w, v, path, true);
}

/* secrets: NAME: null | "env:VAR" | "file:PATH" (gpc_secret_ref) */
static int f_secrets(walk *w, const ynode *k, const ynode *v, const char *path)
{
    (void)k;
    char q[SHOW_MAX], kpath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind != Y_MAP)
        return failn(w, v, path, "expected a mapping of NAME: source (null for the "
                     "environment variable NAME, env:VAR or file:PATH), got %s", show(v, q));
    size_t count = v->n / 2;
    if (!(s->secrets = calloc(count ? count : 1, sizeof(*s->secrets))))
        return spec_nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        if (key->kind != Y_SCALAR)
            return failn(w, key, path, "expected a string key, got %s", show(key, q));
        if (!spec_valid_env_name(key->text, key->len))
            return failn(w, key, path,
                         "invalid variable name %s (letters, digits and '_', "
                         "not starting with a digit)", spec_quote(key->text, key->len, q));
        snprintf(kpath, sizeof(kpath), "%s.%s", path, key->text);
        if (strncmp(key->text, "GPUCTL_", 7) == 0)
            return failn(w, key, kpath, "names starting with GPUCTL_ are reserved");
        gpc_secret_ref *r = &s->secrets[s->n_secrets];
        if (!(r->name = strdup(key->text)))
            return spec_nomem(w->err);
        s->n_secrets++;
        r->line = (unsigned)(is_null(val) ? key->line : val->line);
        r->col = (unsigned)(is_null(val) ? key->col : val->col);
        if (is_null(val)) {
            size_t n = strlen(key->text) + 5;
            if (!(r->source = malloc(n)))
                return spec_nomem(w->err);
            snprintf(r->source, n, "env:%s", key->text);
            continue;
        }
        if (val->kind != Y_SCALAR)
            return failn(w, val, kpath, "expected null, env:VAR or file:PATH, got %s",
                         show(val, q));
        int rc = get_str(w, val, kpath, true, &r->source);
        if (rc)
            return rc;
        const char *src = r->source;
        if (strncmp(src, "env:", 4) == 0 && spec_valid_env_name(src + 4, strlen(src + 4)))
            continue;
        if (strncmp(src, "file:", 5) == 0 && src[5])
            continue;
        if (strncmp(src, "env:", 4) == 0)
            return failn(w, val, kpath, "env:VAR: %s is not a variable name (letters, digits "
                         "and '_', not starting with a digit)",
                         spec_quote(src + 4, strlen(src + 4), q));
        /* never the value: it may be the secret itself, written in by mistake */
        return failn(w, val, kpath, "expected null (the environment variable %s), env:VAR "
                     "or file:PATH; the value is not shown, as it may be the secret itself, "
                     "which belongs in the environment or a file", key->text);
    }
    return 0;
}

static int f_labels(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_map(w, v, path, false);
}

static int f_workdir(walk *w, const ynode *k, const ynode *v, const char *path)
{
    w->s->workdir_line = (unsigned)v->line;
    w->s->workdir_col = (unsigned)v->col;
    return get_str(w, v, path, true, &w->s->workdir);
}

/* "~" in checkpoint_dir is judged once the providers are known
 * (check_ckpt_tilde). */
static int f_checkpoint_dir(walk *w, const ynode *k, const ynode *v, const char *path)
{
    w->s->checkpoint_dir_line = (unsigned)v->line;
    w->s->checkpoint_dir_col = (unsigned)v->col;
    return get_str(w, v, path, true, &w->s->checkpoint_dir);
}

/* A path of the nodes where they do not see this machine's files: "~" is
 * not this machine's home there, nor expanded by anyone (docs/spec.md);
 * refused on every provider, with a hint that fits the spec's: where
 * every one's nodes may see this machine's files (local), a path
 * relative to the spec; else a node's absolute path. */
static int check_ckpt_tilde(walk *w)
{
    const gpc_spec *s = w->s;
    if (!s->checkpoint_dir || s->checkpoint_dir[0] != '~')
        return 0;
    int all_share = s->n_providers > 0;
    for (size_t i = 0; i < s->n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(s->providers[i]);
        all_share &= p && ((p->caps & GPC_CAP_SHARED_FILES) || p->shares_files) &&
                     !(p->caps & GPC_CAP_PLAN_ONLY);
    }
    char q[SHOW_MAX];
    spec_quote(s->checkpoint_dir, strlen(s->checkpoint_dir), q);
    if (all_share)
        return spec_fail_at(w->doc, w->err, s->checkpoint_dir_line, s->checkpoint_dir_col,
                            "checkpoint_dir: %s: '~' is not expanded in checkpoint_dir; write "
                            "a path relative to the spec's directory (e.g. ./checkpoints) or "
                            "an absolute one", q);
    return spec_fail_at(w->doc, w->err, s->checkpoint_dir_line, s->checkpoint_dir_col,
                        "checkpoint_dir: %s: '~' is not expanded in checkpoint_dir, which is "
                        "a path on the nodes (this machine's home is not theirs); write an "
                        "absolute path (e.g. /var/lib/gpuctl/checkpoints) or, where the nodes "
                        "see this machine's files, one relative to the spec's directory", q);
}

/* data: NAME: DIR | SCHEME://BUCKET[/PREFIX] (gpc_data_src); the URL's
 * scheme is judged against the spec's providers once they are known
 * (spec_check_data_urls). */
static int f_data(walk *w, const ynode *k, const ynode *v, const char *path)
{
    (void)k;
    char q[SHOW_MAX], kpath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind != Y_MAP)
        return failn(w, v, path, "expected a mapping of NAME: source (a local directory or "
                     "a store URL such as s3://BUCKET/PREFIX), got %s", show(v, q));
    size_t count = v->n / 2;
    if (!(s->data = calloc(count ? count : 1, sizeof(*s->data))))
        return spec_nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        if (key->kind != Y_SCALAR || !gpc_data_name_ok(key->text) ||
            strlen(key->text) != key->len)
            return failn(w, key, path, "invalid data set name %s: 1 to 63 letters, digits, "
                         "'.', '_' and '-', starting with a letter or digit",
                         key->kind == Y_SCALAR ? spec_quote(key->text, key->len, q)
                                               : show(key, q));
        snprintf(kpath, sizeof(kpath), "%s.%s", path, key->text);
        gpc_data_src *d = &s->data[s->n_data];
        if (!(d->name = strdup(key->text)))
            return spec_nomem(w->err);
        s->n_data++;
        d->line = (unsigned)val->line;
        d->col = (unsigned)val->col;
        if (val->kind != Y_SCALAR || is_null(val))
            return failn(w, val, kpath, "expected a local directory or a store URL, got %s",
                         show(val, q));
        int rc = get_str(w, val, kpath, true, &d->source);
        if (rc)
            return rc;
        for (const char *c = d->source; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return failn(w, val, kpath, "contains a control character");
        size_t sl = spec_url_scheme_len(d->source);
        if (!sl && strstr(d->source, "://"))
            return failn(w, val, kpath, "%s is neither a directory nor a URL "
                         "SCHEME://BUCKET/PREFIX", spec_quote(val->text, val->len, q));
        if (!sl)
            continue;
        d->is_url = 1;
        const char *why = spec_store_url_problem(d->source, sl);
        if (why)
            return failn(w, val, kpath, "%s: %s; expected %.*s://BUCKET or %.*s://BUCKET/PREFIX",
                         spec_quote(val->text, val->len, q), why, (int)sl, d->source, (int)sl,
                         d->source);
    }
    return 0;
}

/*
 * Text a node executes (setup, run.command), as the user meant it when the
 * file was saved on Windows (gpc_spec.notes): remove every U+FEFF and the
 * CR of each CR LF (and a CR that ends the text), in place, and note it,
 * naming the field and the line its value starts on; also when the YAML
 * reader already read the value's own lines' CR LF as LF.
 */
static int clean_exec_text(walk *w, const ynode *v, const char *path, char *text)
{
    static const char bom[] = "\xef\xbb\xbf";
    size_t n_bom = 0, n_cr = 0, lines = 1, o = 0;
    for (size_t i = 0; text[i]; i++) {
        if (strncmp(text + i, bom, 3) == 0) {
            n_bom++;
            i += 2;
            continue;
        }
        if (text[i] == '\r' && (text[i + 1] == '\n' || text[i + 1] == '\0')) {
            n_cr++;
            continue;
        }
        lines += text[i] == '\n';
        text[o++] = text[i];
    }
    text[o] = '\0';
    /* the source lines the value spans (from its first, as many as it has) */
    int raw_crlf = 0;
    const char *p = w->doc->text, *end = p + w->doc->len;
    for (unsigned long l = 1; p < end && l < v->line + lines; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (l >= v->line && nl > p && nl[-1] == '\r')
            raw_crlf = 1;
        p = nl + 1;
    }
    if (!n_bom && !n_cr && !raw_crlf)
        return 0;
    char note[320], what[160] = "";
    if (n_cr)
        snprintf(what, sizeof(what), "removed %zu CR of CR LF line ends", n_cr);
    if (n_bom)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), "%sremoved %zu U+FEFF "
                 "(byte order mark)", n_cr ? " and " : "", n_bom);
    if (raw_crlf && !n_cr)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), "%sread CR LF line ends "
                 "as LF", n_bom ? "; " : "");
    snprintf(note, sizeof(note), "%s:%lu: %s: %s (saved on Windows?); bash runs the text "
             "without them", w->doc->src, v->line, path, what);
    char **grown = realloc(w->s->notes, (w->s->n_notes + 1) * sizeof(*grown));
    if (!grown)
        return spec_nomem(w->err);
    w->s->notes = grown;
    if (!(grown[w->s->n_notes] = strdup(note)))
        return spec_nomem(w->err);
    w->s->n_notes++;
    return 0;
}

static int f_setup(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int rc = get_str(w, v, path, false, &w->s->setup);
    return rc ? rc : clean_exec_text(w, v, path, w->s->setup);
}

static int f_run_command(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int rc = get_str(w, v, path, false, &w->s->run.command);
    if (!rc)
        rc = clean_exec_text(w, v, path, w->s->run.command);
    if (rc)
        return rc;
    for (const char *p = w->s->run.command; *p; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return 0;
    return failn(w, v, path, "the command must not be empty");
}

static int f_nproc(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind == Y_SCALAR && strcmp(v->text, "auto") == 0) {
        w->s->run.nproc_per_node = 0;
        return 0;
    }
    if (v->kind != Y_SCALAR || !spec_parse_u64(v->text, v->len, &n) || n < 1 || n > NPROC_MAX)
        return failn(w, v, path, "expected 'auto' or an integer from 1 to %d, got %s",
                     NPROC_MAX, show(v, q));
    w->s->run.nproc_per_node = (uint32_t)n;
    return 0;
}

static int f_rdzv_port(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind != Y_SCALAR || !spec_parse_u64(v->text, v->len, &n) || n < 1024 || n > 65535)
        return failn(w, v, path, "expected a port from 1024 to 65535, got %s", show(v, q));
    w->s->run.rdzv_port = (uint32_t)n;
    return 0;
}

static const field run_fields[] = {
    {"command", "run.command", f_run_command, true},
    {"nproc_per_node", "run.nproc_per_node", f_nproc, false},
    {"rdzv_port", "run.rdzv_port", f_rdzv_port, false},
    {NULL, NULL, NULL, false},
};

static int f_run(walk *w, const ynode *k, const ynode *v, const char *path)
{
    if (v->kind == Y_MAP)
        return walk_map(w, v, path, run_fields);
    return f_run_command(w, k, v, path);
}

static const field top_fields[] = {
    {"name", "name", f_name, true},
    {"provider", "provider", f_provider, false},
    {"nodes", "nodes", f_nodes, false},
    {"resources", "resources", f_resources, false},
    {"region", "region", f_region, false},
    {"regions", "regions", f_regions, false},
    {"zone", "zone", f_zone, false},
    {"zones", "zones", f_zones, false},
    {"spot", "spot", f_spot, false},
    {"budget", "budget", f_budget, false},
    {"lifecycle", "lifecycle", f_lifecycle, false},
    {"image", "image", f_image, false},
    {"env", "env", f_env, false},
    {"secrets", "secrets", f_secrets, false},
    {"labels", "labels", f_labels, false},
    {"workdir", "workdir", f_workdir, false},
    {"checkpoint_dir", "checkpoint_dir", f_checkpoint_dir, false},
    {"data", "data", f_data, false},
    {"setup", "setup", f_setup, false},
    {"run", "run", f_run, true},
    {NULL, NULL, NULL, false},
};

static int walk_spec(walk *w, const ynode *root)
{
    char q[SHOW_MAX];
    gpc_spec *s = w->s;
    if (!root || is_null(root))
        return spec_fail_at(w->doc, w->err, 1, 1,
                       "the spec is empty; expected a mapping with at least 'name' and 'run'");
    if (root->kind != Y_MAP)
        return failn(w, root, NULL, "expected a mapping at the top level, got %s",
                     show(root, q));
    int rc = walk_map(w, root, "", top_fields);
    if (rc)
        return rc;
    /* a variable is configuration (env) or a secret, not both: said at
     * the secret's name, wherever the two fields are */
    for (size_t i = 0; i + 1 < root->n; i += 2) {
        const ynode *key = root->kids[i], *val = root->kids[i + 1];
        if (key->kind != Y_SCALAR || strcmp(key->text, "secrets") != 0 || val->kind != Y_MAP)
            continue;
        for (size_t j = 0; j + 1 < val->n; j += 2)
            for (size_t e = 0; e < s->n_env; e++)
                if (strcmp(s->env[e].name, val->kids[j]->text) == 0) {
                    char kpath[PATH_MAX_LEN];
                    snprintf(kpath, sizeof(kpath), "secrets.%s", s->env[e].name);
                    return failn(w, val->kids[j], kpath, "%s is in env too; a variable is "
                                 "either configuration (env) or a secret", s->env[e].name);
                }
    }
    if (s->n_providers == 0) {
        s->providers = calloc(1, sizeof(*s->providers));
        if (!s->providers || !(s->providers[0] = strdup(gpc_provider_default()->name)))
            return spec_nomem(w->err);
        s->n_providers = 1;
    }
    if (!s->image && !(s->image = strdup("pytorch")))
        return spec_nomem(w->err);
    int rc2 = check_ckpt_tilde(w);
    return rc2 ? rc2 : spec_check_data_urls(s, w->err);
}

/* ------------------------------------------------------------------ */
/* Public entry points.                                               */

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (strcmp(path, "-") == 0 || !slash)
        return strdup(".");
    size_t len = (size_t)(slash - path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    return strndup(path, len ? len : 1);
}

int gpc_spec_load_string(const char *source, const char *base_dir,
                         const char *text, size_t len,
                         gpc_spec **out, gpc_error *err)
{
    ydoc d;
    walk w;
    int rc;
    if (!source)
        source = "<string>";
    if (!text) {
        text = "";
        len = 0;
    }
    if (len > GPC_SPEC_MAX_BYTES)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: larger than %u bytes", source,
                        GPC_SPEC_MAX_BYTES);
    memset(&d, 0, sizeof(d));
    d.src = source;
    d.text = text;
    d.len = len;

    gpc_spec *s = calloc(1, sizeof(*s));
    if (!s)
        return spec_nomem(err);
    s->nodes = 1;
    s->source = strdup(source);
    s->base_dir = strdup(base_dir ? base_dir : ".");
    if (!s->source || !s->base_dir) {
        rc = spec_nomem(err);
        goto done;
    }
    rc = spec_load_tree(&d, err);
    if (rc)
        goto done;
    memset(&w, 0, sizeof(w));
    w.doc = &d;
    w.s = s;
    w.err = err;
    rc = walk_spec(&w, d.root);
done:
    spec_doc_free(&d);
    if (rc) {
        gpc_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int gpc_spec_load_file_text(const char *path, gpc_spec **out, char **text_out,
                            gpc_error *err)
{
    char *text = NULL, *dir;
    size_t len = 0;
    if (text_out)
        *text_out = NULL;
    int rc = gpc_read_file(path, GPC_SPEC_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    dir = dir_of(path);
    if (!dir) {
        free(text);
        return spec_nomem(err);
    }
    rc = gpc_spec_load_string(strcmp(path, "-") == 0 ? "<stdin>" : path, dir, text, len,
                              out, err);
    free(dir);
    if (text_out)
        *text_out = text;
    else
        free(text);
    return rc;
}

int gpc_spec_load_file(const char *path, gpc_spec **out, gpc_error *err)
{
    return gpc_spec_load_file_text(path, out, NULL, err);
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void gpc_spec_free(gpc_spec *s)
{
    if (!s)
        return;
    free(s->source);
    free(s->base_dir);
    free(s->name);
    free_strs(s->providers, s->n_providers);
    for (size_t i = 0; s->resources.gpus && i < s->resources.n_gpus; i++)
        free(s->resources.gpus[i].model);
    free(s->resources.gpus);
    free_strs(s->resources.instance_types, s->resources.n_instance_types);
    free_strs(s->regions, s->n_regions);
    free_strs(s->zones, s->n_zones);
    free(s->image);
    for (size_t i = 0; s->env && i < s->n_env; i++) {
        free(s->env[i].name);
        free(s->env[i].value);
    }
    free(s->env);
    for (size_t i = 0; s->secrets && i < s->n_secrets; i++) {
        free(s->secrets[i].name);
        free(s->secrets[i].source);
    }
    free(s->secrets);
    for (size_t i = 0; s->labels && i < s->n_labels; i++) {
        free(s->labels[i].key);
        free(s->labels[i].value);
    }
    free(s->labels);
    free(s->workdir);
    free(s->checkpoint_dir);
    for (size_t i = 0; s->data && i < s->n_data; i++) {
        free(s->data[i].name);
        free(s->data[i].source);
    }
    free(s->data);
    free(s->setup);
    free(s->run.command);
    free_strs(s->notes, s->n_notes);
    free(s);
}
