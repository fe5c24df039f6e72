/*
 * record.c - what a Slurm cluster has (partitions, nodes, GPUs, limits),
 * read from what sinfo and scontrol print, kept under the state directory
 * as JSON, and the offers made from it (slurm_internal.h).
 *
 * Nothing here runs a command: slurm.c runs them (slurm_record_fetch) and
 * hands their output to slurm_record_parse, so that `plan` and `offers`
 * read the kept record and stay offline.
 *
 * Rules (docs: slurm_internal.h, docs/providers/slurm.md "Offers"):
 *   - A node is usable unless its sinfo state says it will not take a new
 *     job: a '*' suffix (not responding), or a state (or a '+' part of
 *     one) beginning with down, drain (drained, draining), fail (fail,
 *     failing), inval or future.  Other suffixes (~ powered off, # powering
 *     up, $ maintenance, @ reboot pending, ...) leave it usable: Slurm
 *     starts jobs there once the node is up.
 *   - GRES: the node's GPUs are its `gpu` entries; when they name more
 *     than one type ("gpu:a100:2,gpu:v100:1") the node is recorded with
 *     the first type and that type's count (entries of the same type add
 *     up): a job asking for that type fits it, and gpuctl never asks a
 *     job for GPUs of two types.  Other GRES (shard, mps) are not kept.
 *   - A node shape is GPU type, GPU count, CPUs and memory in whole GiB
 *     (RealMemory / 1024, rounded down), so that nodes whose RealMemory
 *     differs by a few MiB are one shape; the offer's memory is the least
 *     of them.  The nodes counted for a shape are the usable ones at least
 *     as large: same GPU type, at least as many GPUs, CPUs and MiB.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpuctl/util.h"
#include "slurm/slurm_internal.h"

/* The record's JSON form; a newer one is refused. */
#define RECORD_SCHEMA_VERSION 1
/* The largest record read back (about 200 bytes a node). */
#define RECORD_MAX_BYTES (64u << 20)

void slurm_record_free(slurm_record *rec)
{
    if (!rec)
        return;
    free(rec->parts);
    free(rec->nodes);
    rec->parts = NULL;
    rec->nodes = NULL;
    rec->n_parts = rec->n_nodes = 0;
}

/* ---- parsing what the commands printed ---------------------------------- */

/* Copy [s, s+n) into dst (size bytes); -1 when it does not fit. */
static int copy_n(char *dst, size_t size, const char *s, size_t n)
{
    if (n >= size)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* An unsigned decimal of exactly [s, s+n) into *out (at most max); -1 when
 * it is not one. */
static int parse_uint(const char *s, size_t n, unsigned long long max,
                      unsigned long long *out)
{
    if (n == 0 || n > 20)
        return -1;
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/*
 * The GPUs of a GRES list as sinfo %G prints it: entries separated by ','
 * (outside parentheses), each NAME[:TYPE][:no_consume]:COUNT with an
 * optional "(S:...)" or "(IDX:...)" tail; "(null)" = none.  -1 when an
 * entry is not of that form.
 */
static int parse_gres(const char *g, size_t len, char *type, size_t type_size,
                      uint32_t *gpus)
{
    type[0] = '\0';
    *gpus = 0;
    if (len == 6 && memcmp(g, "(null)", 6) == 0)
        return 0;
    if (len == 0)
        return -1;
    int have_type = 0;
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        int depth = 0;
        while (i < len && (depth > 0 || g[i] != ',')) {
            if (g[i] == '(')
                depth++;
            else if (g[i] == ')' && depth > 0)
                depth--;
            i++;
        }
        size_t end = i; /* the entry is [start, end) */
        i++;            /* past the ',' */
        const char *paren = memchr(g + start, '(', end - start);
        size_t elen = paren ? (size_t)(paren - (g + start)) : end - start;
        if (paren && g[end - 1] != ')')
            return -1;
        const char *e = g + start;
        /* split on ':' */
        const char *tok[4];
        size_t tl[4], nt = 0;
        size_t p = 0;
        while (p <= elen) {
            size_t q = p;
            while (q < elen && e[q] != ':')
                q++;
            if (nt == 4)
                return -1;
            tok[nt] = e + p;
            tl[nt] = q - p;
            nt++;
            p = q + 1;
        }
        for (size_t k = 0; k < nt; k++)
            if (tl[k] == 0)
                return -1;
        if (!(tl[0] == 3 && memcmp(tok[0], "gpu", 3) == 0))
            continue; /* shard, mps, ...: not GPUs */
        unsigned long long count = 1;
        size_t last = nt;
        if (nt >= 2 && parse_uint(tok[nt - 1], tl[nt - 1], UINT32_MAX, &count) == 0)
            last = nt - 1;
        else if (nt >= 2)
            return -1;
        /* tokens between the name and the count: the type, and no_consume */
        const char *ty = "";
        size_t tyl = 0;
        for (size_t k = 1; k < last; k++) {
            if (tl[k] == 10 && memcmp(tok[k], "no_consume", 10) == 0)
                continue;
            if (tyl)
                return -1; /* two types in one entry */
            ty = tok[k];
            tyl = tl[k];
        }
        if (!have_type) {
            if (copy_n(type, type_size, ty, tyl) != 0)
                return -1;
            have_type = 1;
        } else if (strlen(type) != tyl || memcmp(type, ty, tyl) != 0) {
            continue; /* a second type: the node is recorded with the first */
        }
        if ((unsigned long long)*gpus + count > UINT32_MAX)
            return -1;
        *gpus += (uint32_t)count;
    }
    return 0;
}

/*
 * A Slurm time limit (man sbatch --time): UNLIMITED/INFINITE, MM, MM:SS,
 * HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, in minutes (seconds rounded up);
 * -1 for no limit.  Returns -2 when `s` is not one of those forms.
 */
static long parse_max_time(const char *s, size_t n)
{
    if ((n == 9 && memcmp(s, "UNLIMITED", 9) == 0) || (n == 8 && memcmp(s, "INFINITE", 8) == 0))
        return -1;
    unsigned long long days = 0, f[3];
    size_t nf = 0;
    const char *dash = memchr(s, '-', n);
    const char *p = s;
    size_t rest = n;
    if (dash) {
        if (parse_uint(s, (size_t)(dash - s), 100000, &days) != 0)
            return -2;
        p = dash + 1;
        rest = n - (size_t)(p - s);
    }
    while (1) {
        const char *colon = memchr(p, ':', rest);
        size_t l = colon ? (size_t)(colon - p) : rest;
        if (nf == 3 || parse_uint(p, l, 100000000ull, &f[nf]) != 0)
            return -2;
        nf++;
        if (!colon)
            break;
        rest -= l + 1;
        p = colon + 1;
    }
    unsigned long long h = 0, m = 0, sec = 0;
    if (dash) { /* D-HH, D-HH:MM, D-HH:MM:SS */
        h = f[0];
        m = nf > 1 ? f[1] : 0;
        sec = nf > 2 ? f[2] : 0;
    } else if (nf == 1) { /* MM */
        m = f[0];
    } else if (nf == 2) { /* MM:SS */
        m = f[0];
        sec = f[1];
    } else { /* HH:MM:SS */
        h = f[0];
        m = f[1];
        sec = f[2];
    }
    unsigned long long min = days * 1440 + h * 60 + m + (sec + 59) / 60;
    if (min > LONG_MAX)
        return -2;
    return (long)min;
}

const char *slurm_first_line(const char *s, size_t *len)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    *len = n;
    return s;
}

/* One line of SLURM_SINFO_FORMAT's output into *nd; -1 when it is not of
 * that form. */
static int parse_sinfo_line(const char *l, size_t len, slurm_node_rec *nd)
{
    const char *f[6];
    size_t fl[6], nf = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || l[i] == '|') {
            if (nf == 6)
                return -1;
            f[nf] = l + start;
            fl[nf] = i - start;
            nf++;
            start = i + 1;
        }
    }
    if (nf != 6)
        return -1;
    memset(nd, 0, sizeof(*nd));
    unsigned long long cpus, mem;
    if (fl[0] == 0 || copy_n(nd->partition, sizeof(nd->partition), f[0], fl[0]) != 0 ||
        fl[1] == 0 || copy_n(nd->name, sizeof(nd->name), f[1], fl[1]) != 0 ||
        parse_uint(f[2], fl[2], UINT32_MAX, &cpus) != 0 ||
        parse_uint(f[3], fl[3], UINT64_MAX, &mem) != 0 ||
        parse_gres(f[4], fl[4], nd->gpu_type, sizeof(nd->gpu_type), &nd->gpus) != 0 ||
        fl[5] == 0 || copy_n(nd->state, sizeof(nd->state), f[5], fl[5]) != 0)
        return -1;
    /* %R prints no '*'; strip one should a Slurm print the default's mark */
    size_t pl = strlen(nd->partition);
    if (pl > 1 && nd->partition[pl - 1] == '*')
        nd->partition[pl - 1] = '\0';
    nd->cpus = (uint32_t)cpus;
    nd->mem_mib = mem;
    return 0;
}

const char *slurm_kv_find(const char *l, size_t len, const char *key, size_t *vlen)
{
    size_t kl = strlen(key), i = 0;
    while (i < len) {
        while (i < len && l[i] == ' ')
            i++;
        size_t start = i;
        while (i < len && l[i] != ' ')
            i++;
        if (i - start > kl && memcmp(l + start, key, kl) == 0 && l[start + kl] == '=') {
            *vlen = i - start - kl - 1;
            return l + start + kl + 1;
        }
    }
    return NULL;
}

/* One line of `scontrol show partition -o` into *p; -1 when a word this
 * needs is missing or not of its form. */
static int parse_part_line(const char *l, size_t len, slurm_part_rec *p)
{
    memset(p, 0, sizeof(*p));
    const char *v;
    size_t vl;
    unsigned long long u;
    if (!(v = slurm_kv_find(l, len, "PartitionName", &vl)) || vl == 0 ||
        copy_n(p->name, sizeof(p->name), v, vl) != 0)
        return -1;
    if (!(v = slurm_kv_find(l, len, "Default", &vl)))
        return -1;
    if (vl == 3 && memcmp(v, "YES", 3) == 0)
        p->is_default = 1;
    else if (!(vl == 2 && memcmp(v, "NO", 2) == 0))
        return -1;
    if (!(v = slurm_kv_find(l, len, "MaxTime", &vl)) || (p->max_time_min = parse_max_time(v, vl)) < -1)
        return -1;
    if (!(v = slurm_kv_find(l, len, "MaxNodes", &vl)))
        return -1;
    if (vl == 9 && memcmp(v, "UNLIMITED", 9) == 0)
        p->max_nodes = 0;
    else if (parse_uint(v, vl, UINT32_MAX, &u) == 0)
        p->max_nodes = (uint32_t)u;
    else
        return -1;
    if (!(v = slurm_kv_find(l, len, "TotalNodes", &vl)) || parse_uint(v, vl, UINT32_MAX, &u) != 0)
        return -1;
    p->total_nodes = (uint32_t)u;
    if (!(v = slurm_kv_find(l, len, "State", &vl)) || vl == 0 ||
        copy_n(p->state, sizeof(p->state), v, vl) != 0)
        return -1;
    return 0;
}

/* Grow *arr (of *n items of `size` bytes, *cap allocated) by one; the new
 * item, or NULL when out of memory. */
static void *grow(void **arr, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        void *a = realloc(*arr, nc * size);
        if (!a)
            return NULL;
        *arr = a;
        *cap = nc;
    }
    return (char *)*arr + (*n)++ * size;
}

/* Each non-empty line of `text` (trailing blanks dropped) into a new
 * element of *arr (n, cap; `size` bytes each) by `parse`; GPC_ERR_PROVIDER
 * naming the first line that is not of its form (`what`, `form`). */
static int parse_lines(const char *text, int (*parse)(const char *, size_t, void *),
                       void **arr, size_t *n, size_t *cap, size_t size, const char *what,
                       const char *form, gpc_error *err)
{
    unsigned lineno = 0;
    for (const char *l = text ? text : ""; *l;) {
        size_t len = strcspn(l, "\n");
        const char *next = l[len] ? l + len + 1 : l + len;
        lineno++;
        size_t tl = len;
        while (tl > 0 && (l[tl - 1] == '\r' || l[tl - 1] == ' '))
            tl--;
        if (tl > 0) {
            void *el = grow(arr, n, cap, size);
            if (!el)
                return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
            if (parse(l, tl, el) != 0)
                return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: line %u of %s %s: '%.*s'",
                                lineno, what, form, (int)(tl > 200 ? 200 : tl), l);
        }
        l = next;
    }
    return 0;
}

static int sinfo_line(const char *l, size_t len, void *el)
{
    return parse_sinfo_line(l, len, el);
}

static int part_line(const char *l, size_t len, void *el)
{
    return parse_part_line(l, len, el);
}

int slurm_record_parse(const char *sinfo_out, const char *parts_out, const char *version_out,
                       slurm_record *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    size_t cap_nodes = 0, cap_parts = 0;
    int rc = parse_lines(sinfo_out, sinfo_line, (void **)&out->nodes, &out->n_nodes, &cap_nodes,
                         sizeof(*out->nodes), "sinfo",
                         "is not PARTITION|NODE|CPUS|MEMORY|GRES|STATE as " SLURM_SINFO_FORMAT
                         " prints it", err);
    if (!rc)
        rc = parse_lines(parts_out, part_line, (void **)&out->parts, &out->n_parts, &cap_parts,
                         sizeof(*out->parts), "scontrol show partition -o",
                         "lacks one of PartitionName, Default=YES|NO, MaxTime, MaxNodes, "
                         "TotalNodes, State, or has one of another form", err);
    if (rc) {
        slurm_record_free(out);
        return rc;
    }
    size_t vl;
    const char *v = slurm_first_line(version_out ? version_out : "", &vl);
    if (copy_n(out->version, sizeof(out->version), v, vl) != 0) {
        slurm_record_free(out);
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: sinfo -V printed '%.*s', not a version",
                        (int)(vl > 100 ? 100 : vl), v);
    }
    return 0;
}

/* ---- keeping it ---------------------------------------------------------- */

/* STATE_DIR/slurm[/NAME.json] into out; GPC_ERR_IO when it cannot be. */
static int record_path(const slurm_ctx *c, const char *site, char *out, size_t size, int dir,
                       gpc_error *err)
{
    if (!c->state_dir[0])
        return gpc_fail(err, GPC_ERR_IO,
                        "slurm: no state directory to keep the record of Slurm cluster '%s' in",
                        site);
    if (!site[0] || strchr(site, '/') || strcmp(site, ".") == 0 || strcmp(site, "..") == 0)
        return gpc_fail(err, GPC_ERR_IO, "slurm: '%s' cannot name a Slurm cluster's record", site);
    int n = dir ? snprintf(out, size, "%s/slurm", c->state_dir)
                : snprintf(out, size, "%s/slurm/%s.json", c->state_dir, site);
    if (n < 0 || (size_t)n >= size)
        return gpc_fail(err, GPC_ERR_IO, "slurm: the state directory's path is too long: %s",
                        c->state_dir);
    return 0;
}

int slurm_record_save(const slurm_ctx *c, const slurm_record *rec, gpc_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int rc = record_path(c, rec->site, dir, sizeof(dir), 1, err);
    if (!rc)
        rc = record_path(c, rec->site, path, sizeof(path), 0, err);
    if (!rc)
        rc = gpc_mkdir_p(dir, 0700, err);
    if (rc)
        return rc;
    cJSON *doc = cJSON_CreateObject(), *parts = NULL, *nodes = NULL;
    int ok = doc && cJSON_AddNumberToObject(doc, "schema_version", RECORD_SCHEMA_VERSION) &&
             cJSON_AddStringToObject(doc, "site", rec->site) &&
             cJSON_AddNumberToObject(doc, "checked_at", (double)rec->checked_at) &&
             cJSON_AddStringToObject(doc, "version", rec->version) &&
             (parts = cJSON_AddArrayToObject(doc, "partitions")) &&
             (nodes = cJSON_AddArrayToObject(doc, "nodes"));
    for (size_t i = 0; ok && i < rec->n_parts; i++) {
        const slurm_part_rec *p = &rec->parts[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(parts, o)) {
            cJSON_Delete(o);
            ok = 0;
            break;
        }
        ok = cJSON_AddStringToObject(o, "name", p->name) &&
             cJSON_AddBoolToObject(o, "default", p->is_default) &&
             cJSON_AddNumberToObject(o, "max_time_min", (double)p->max_time_min) &&
             cJSON_AddNumberToObject(o, "max_nodes", p->max_nodes) &&
             cJSON_AddNumberToObject(o, "total_nodes", p->total_nodes) &&
             cJSON_AddStringToObject(o, "state", p->state);
    }
    for (size_t i = 0; ok && i < rec->n_nodes; i++) {
        const slurm_node_rec *nd = &rec->nodes[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(nodes, o)) {
            cJSON_Delete(o);
            ok = 0;
            break;
        }
        ok = cJSON_AddStringToObject(o, "name", nd->name) &&
             cJSON_AddStringToObject(o, "partition", nd->partition) &&
             cJSON_AddNumberToObject(o, "cpus", nd->cpus) &&
             cJSON_AddNumberToObject(o, "mem_mib", (double)nd->mem_mib) &&
             cJSON_AddStringToObject(o, "gpu_type", nd->gpu_type) &&
             cJSON_AddNumberToObject(o, "gpus", nd->gpus) &&
             cJSON_AddStringToObject(o, "state", nd->state);
    }
    char *text = ok ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    rc = gpc_write_file_atomic(path, text, strlen(text), 0600, err);
    free(text);
    return rc;
}

/* A string member of at most size-1 bytes into dst; -1 when absent, not a
 * string or too long. */
static int json_str(const cJSON *o, const char *k, char *dst, size_t size)
{
    const char *s = gpc_json_str(o, k);
    return s ? copy_n(dst, size, s, strlen(s)) : -1;
}

/* A number member that is a whole number in [lo, hi]; -1 otherwise. */
static int json_int(const cJSON *o, const char *k, double lo, double hi, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
        v->valuedouble != (double)(long long)v->valuedouble)
        return -1;
    *out = v->valuedouble;
    return 0;
}

/* The record of `doc` into *out; the name of what is wrong, or NULL. */
static const char *record_from_json(const cJSON *doc, const char *site, slurm_record *out)
{
    double d;
    if (!cJSON_IsObject(doc))
        return "not a JSON object";
    if (json_str(doc, "site", out->site, sizeof(out->site)) != 0)
        return "site";
    if (strcmp(out->site, site) != 0)
        return "site (another Slurm cluster's)";
    if (json_int(doc, "checked_at", 0, 9007199254740992.0, &d) != 0)
        return "checked_at";
    out->checked_at = (int64_t)d;
    if (json_str(doc, "version", out->version, sizeof(out->version)) != 0)
        return "version";
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(doc, "partitions");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
    if (!cJSON_IsArray(parts))
        return "partitions";
    if (!cJSON_IsArray(nodes))
        return "nodes";
    size_t np = (size_t)cJSON_GetArraySize(parts), nn = (size_t)cJSON_GetArraySize(nodes);
    out->parts = calloc(np ? np : 1, sizeof(*out->parts));
    out->nodes = calloc(nn ? nn : 1, sizeof(*out->nodes));
    if (!out->parts || !out->nodes)
        return NULL; /* the caller sees the missing arrays: out of memory */
    const cJSON *it;
    cJSON_ArrayForEach(it, parts) {
        slurm_part_rec *p = &out->parts[out->n_parts++];
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(it, "default");
        if (!cJSON_IsObject(it) || json_str(it, "name", p->name, sizeof(p->name)) != 0 ||
            !cJSON_IsBool(def) || json_int(it, "max_time_min", -1, (double)LONG_MAX, &d) != 0)
            return "partitions[]";
        p->is_default = cJSON_IsTrue(def);
        p->max_time_min = (long)d;
        if (json_int(it, "max_nodes", 0, UINT32_MAX, &d) != 0)
            return "partitions[].max_nodes";
        p->max_nodes = (uint32_t)d;
        if (json_int(it, "total_nodes", 0, UINT32_MAX, &d) != 0)
            return "partitions[].total_nodes";
        p->total_nodes = (uint32_t)d;
        if (json_str(it, "state", p->state, sizeof(p->state)) != 0)
            return "partitions[].state";
    }
    cJSON_ArrayForEach(it, nodes) {
        slurm_node_rec *nd = &out->nodes[out->n_nodes++];
        if (!cJSON_IsObject(it) || json_str(it, "name", nd->name, sizeof(nd->name)) != 0 ||
            json_str(it, "partition", nd->partition, sizeof(nd->partition)) != 0 ||
            json_str(it, "gpu_type", nd->gpu_type, sizeof(nd->gpu_type)) != 0 ||
            json_str(it, "state", nd->state, sizeof(nd->state)) != 0)
            return "nodes[]";
        if (json_int(it, "cpus", 0, UINT32_MAX, &d) != 0)
            return "nodes[].cpus";
        nd->cpus = (uint32_t)d;
        if (json_int(it, "mem_mib", 0, 9007199254740992.0, &d) != 0)
            return "nodes[].mem_mib";
        nd->mem_mib = (uint64_t)d;
        if (json_int(it, "gpus", 0, UINT32_MAX, &d) != 0)
            return "nodes[].gpus";
        nd->gpus = (uint32_t)d;
    }
    return NULL;
}

int slurm_record_load(const slurm_ctx *c, const char *site, slurm_record *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    char path[PATH_MAX];
    int rc = record_path(c, site, path, sizeof(path), 0, err);
    if (rc)
        return rc;
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT)
        return gpc_fail(err, GPC_ERR_NOT_FOUND,
                        "slurm: Slurm cluster '%s' has not been checked yet: run gpuctl check "
                        "slurm", site);
    char *text = NULL;
    size_t len = 0;
    rc = gpc_read_file(path, RECORD_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!doc)
        return gpc_fail(err, GPC_ERR_IO,
                        "slurm: %s is not JSON: run gpuctl check slurm to write it again", path);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(doc, "schema_version");
    if (!cJSON_IsNumber(ver)) {
        cJSON_Delete(doc);
        return gpc_fail(err, GPC_ERR_IO,
                        "slurm: %s has no schema_version: run gpuctl check slurm to write it "
                        "again", path);
    }
    if (ver->valuedouble > RECORD_SCHEMA_VERSION) {
        double v = ver->valuedouble;
        cJSON_Delete(doc);
        return gpc_fail(err, GPC_ERR_IO,
                        "slurm: %s has schema_version %g, written by a newer gpuctl (this one "
                        "reads %d): upgrade gpuctl", path, v, RECORD_SCHEMA_VERSION);
    }
    const char *bad = ver->valuedouble == RECORD_SCHEMA_VERSION
                          ? record_from_json(doc, site, out)
                          : "schema_version";
    cJSON_Delete(doc);
    if (!bad && (!out->parts || !out->nodes)) {
        slurm_record_free(out);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    if (bad) {
        slurm_record_free(out);
        memset(out, 0, sizeof(*out));
        return gpc_fail(err, GPC_ERR_IO,
                        "slurm: %s is not a record of Slurm cluster '%s' (%s is missing or "
                        "wrong): run gpuctl check slurm to write it again", path, site, bad);
    }
    return 0;
}

/* ---- offers -------------------------------------------------------------- */

/*
 * Is a node in sinfo state `state` (%T: "idle", "mixed", "drained",
 * "down*", "idle~", "mixed+drain", ...) able to take a new job?  See the
 * rules at the top of this file.
 */
static int node_usable(const char *state)
{
    static const char *const bad[] = {"down", "drain", "fail", "inval", "future", NULL};
    if (strchr(state, '*'))
        return 0;
    for (const char *p = state; *p;) {
        size_t n = strcspn(p, "+");
        for (size_t i = 0; bad[i]; i++) {
            size_t bl = strlen(bad[i]);
            if (n >= bl && strncasecmp(p, bad[i], bl) == 0)
                return 0;
        }
        p += n;
        if (*p == '+')
            p++;
    }
    return 1;
}

/* A node shape: what an offer is (see the top of this file). */
typedef struct shape {
    char gpu_type[32];
    uint32_t gpus, cpus;
    uint64_t gib;        /* mem_mib / 1024 */
    uint64_t min_mib;    /* the least RealMemory of the usable nodes of it */
} shape;

static int same_shape(const shape *s, const slurm_node_rec *nd)
{
    return strcmp(s->gpu_type, nd->gpu_type) == 0 && s->gpus == nd->gpus &&
           s->cpus == nd->cpus && s->gib == nd->mem_mib / 1024;
}

/* Can node `nd` run a node of shape `s`: same GPU type, at least as much? */
static int fits_shape(const shape *s, const slurm_node_rec *nd)
{
    return strcmp(s->gpu_type, nd->gpu_type) == 0 && nd->gpus >= s->gpus &&
           nd->cpus >= s->cpus && nd->mem_mib >= s->min_mib;
}

/* The instance type naming shape `s`: "2xa100-2cpu-3gib" (GPUs x GRES
 * type), "4xgpu-4cpu-15gib" (untyped GPUs), "4cpu-15gib" (none), cut at
 * size - 1 bytes (63: a node of 8 GPUs of a 31-byte type, 9999 CPUs and
 * 99999 GiB takes 51). */
static void shape_name(const shape *s, char *out, size_t size)
{
    if (s->gpus)
        snprintf(out, size, "%ux%s-%ucpu-%llugib", (unsigned)s->gpus,
                 s->gpu_type[0] ? s->gpu_type : "gpu", (unsigned)s->cpus,
                 (unsigned long long)s->gib);
    else
        snprintf(out, size, "%ucpu-%llugib", (unsigned)s->cpus, (unsigned long long)s->gib);
}

/*
 * The GPU model of a GRES type, as the catalog names models: a leading
 * "nvidia_" or "tesla_" (or with '-') dropped, '_' as '-', upper case:
 * "a100" -> "A100", "nvidia_a100-sxm4-80gb" -> "A100-SXM4-80GB" (the form
 * Slurm's AutoDetect=nvml gives).  A '-'-separated part "NNGB" at the end
 * or inside gives the memory per GPU (GiB), else *mem_gib is 0 (Slurm does
 * not say).
 */
static void gpu_model_of(const char *type, char *out, size_t size, double *mem_gib)
{
    static const char *const prefixes[] = {"nvidia_", "nvidia-", "tesla_", "tesla-", NULL};
    for (size_t i = 0; prefixes[i]; i++) {
        size_t l = strlen(prefixes[i]);
        if (strncasecmp(type, prefixes[i], l) == 0 && type[l]) {
            type += l;
            break;
        }
    }
    size_t n = 0;
    for (; type[n] && n + 1 < size; n++)
        out[n] = type[n] == '_' ? '-' : (char)toupper((unsigned char)type[n]);
    out[n] = '\0';
    *mem_gib = 0;
    for (const char *p = out; *p;) {
        size_t l = strcspn(p, "-");
        size_t d = 0;
        while (d < l && isdigit((unsigned char)p[d]))
            d++;
        if (d > 0 && d <= 6 && l == d + 2 && strncmp(p + d, "GB", 2) == 0 && p != out)
            *mem_gib = strtod(p, NULL);
        p += l;
        if (*p == '-')
            p++;
    }
}

/* `total_s` seconds as Slurm writes a time: [D-]HH:MM:SS. */
static void fmt_duration(unsigned long long total_s, char *out, size_t size)
{
    unsigned long long d = total_s / 86400, h = total_s / 3600 % 24, m = total_s / 60 % 60,
                       s = total_s % 60;
    if (d)
        snprintf(out, size, "%llu-%02llu:%02llu:%02llu", d, h, m, s);
    else
        snprintf(out, size, "%02llu:%02llu:%02llu", h, m, s);
}

static int name_in(const char *name, char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

static const slurm_part_rec *part_find(const slurm_record *r, const char *name)
{
    for (size_t i = 0; i < r->n_parts; i++)
        if (strcmp(r->parts[i].name, name) == 0)
            return &r->parts[i];
    return NULL;
}

/* What list_offers gathers. */
typedef struct offers_acc {
    gpc_offer *o;
    size_t n, cap;
    gpc_buf why;        /* every reason, "; " between */
    gpc_error *err;
} offers_acc;

static int why_add(offers_acc *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why_add(offers_acc *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = a->why.len ? gpc_buf_adds(&a->why, "; ", a->err) : 0;
    if (!rc)
        rc = gpc_buf_vaddf(&a->why, a->err, fmt, ap);
    va_end(ap);
    return rc;
}

/* The offers of one partition of one site. */
static int partition_offers(const slurm_site *s, const slurm_record *r, const slurm_part_rec *p,
                            const gpc_spec *spec, offers_acc *a)
{
    uint32_t want = spec->nodes ? spec->nodes : 1;
    if (strlen(p->name) >= sizeof(a->o->zone))
        return why_add(a, "partition '%s' of Slurm cluster '%s' has a name longer than an "
                       "offer's zone (%zu bytes)", p->name, s->name, sizeof(a->o->zone) - 1);
    if (strcmp(p->state, "UP") != 0)
        return why_add(a, "partition '%s' of Slurm cluster '%s' is %s, not UP", p->name, s->name,
                       p->state);
    if (p->max_nodes && want > p->max_nodes)
        return why_add(a, "partition '%s' of Slurm cluster '%s' allows at most %u node%s per "
                       "job (MaxNodes); the spec asks for %u", p->name, s->name,
                       (unsigned)p->max_nodes, p->max_nodes == 1 ? "" : "s", (unsigned)want);
    if (p->max_time_min >= 0 && spec->lifecycle.max_duration_s >
                                    (unsigned long long)p->max_time_min * 60) {
        char lim[48], asked[48];
        fmt_duration((unsigned long long)p->max_time_min * 60, lim, sizeof(lim));
        fmt_duration(spec->lifecycle.max_duration_s, asked, sizeof(asked));
        return why_add(a, "partition '%s' of Slurm cluster '%s' limits a job to %s (MaxTime); "
                       "lifecycle.max_duration asks for %s", p->name, s->name, lim, asked);
    }
    /* the shapes of its usable nodes, in the order sinfo lists them */
    shape *sh = NULL;
    size_t n_sh = 0, cap_sh = 0;
    gpc_buf unusable;
    gpc_buf_init(&unusable, 256);
    size_t n_unusable = 0;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const slurm_node_rec *nd = &r->nodes[i];
        if (strcmp(nd->partition, p->name) != 0)
            continue;
        if (!node_usable(nd->state)) {
            if (n_unusable++ < 4)
                gpc_buf_addf(&unusable, NULL, "%s%s %s", unusable.len ? ", " : "", nd->name,
                             nd->state); /* best effort: it only explains */
            continue;
        }
        size_t k = 0;
        while (k < n_sh && !same_shape(&sh[k], nd))
            k++;
        if (k < n_sh) {
            if (nd->mem_mib < sh[k].min_mib)
                sh[k].min_mib = nd->mem_mib;
            continue;
        }
        shape *ns = grow((void **)&sh, &n_sh, &cap_sh, sizeof(*sh));
        if (!ns) {
            free(sh);
            gpc_buf_free(&unusable);
            return gpc_fail(a->err, GPC_ERR_NOMEM, "out of memory");
        }
        memset(ns, 0, sizeof(*ns));
        memcpy(ns->gpu_type, nd->gpu_type, sizeof(ns->gpu_type));
        ns->gpus = nd->gpus;
        ns->cpus = nd->cpus;
        ns->gib = nd->mem_mib / 1024;
        ns->min_mib = nd->mem_mib;
    }
    int rc = 0;
    if (n_sh == 0) {
        if (n_unusable)
            rc = why_add(a, "partition '%s' of Slurm cluster '%s' has no usable node (%s%s)",
                         p->name, s->name, gpc_buf_str(&unusable), n_unusable > 4 ? ", ..." : "");
        else
            rc = why_add(a, "partition '%s' of Slurm cluster '%s' has no node", p->name, s->name);
    }
    for (size_t k = 0; !rc && k < n_sh; k++) {
        uint32_t count = 0;
        for (size_t i = 0; i < r->n_nodes; i++) {
            const slurm_node_rec *nd = &r->nodes[i];
            count += strcmp(nd->partition, p->name) == 0 && node_usable(nd->state) &&
                     fits_shape(&sh[k], nd);
        }
        char type[64];
        shape_name(&sh[k], type, sizeof(type));
        if (count < want) {
            /* a node out of service when check looked may be back: say
             * which, and how to look again */
            if (n_unusable)
                rc = why_add(a, "partition '%s' of Slurm cluster '%s' has %u usable node%s of "
                             "shape %s; the spec asks for %u node%s (not usable when gpuctl "
                             "check slurm looked: %s%s; run it again once they are back)",
                             p->name, s->name, (unsigned)count, count == 1 ? "" : "s", type,
                             (unsigned)want, want == 1 ? "" : "s", gpc_buf_str(&unusable),
                             n_unusable > 4 ? ", ..." : "");
            else
                rc = why_add(a, "partition '%s' of Slurm cluster '%s' has %u usable node%s of "
                             "shape %s; the spec asks for %u node%s", p->name, s->name,
                             (unsigned)count, count == 1 ? "" : "s", type, (unsigned)want,
                             want == 1 ? "" : "s");
            continue;
        }
        gpc_offer *o = grow((void **)&a->o, &a->n, &a->cap, sizeof(*o));
        if (!o) {
            rc = gpc_fail(a->err, GPC_ERR_NOMEM, "out of memory");
            break;
        }
        memset(o, 0, sizeof(*o));
        snprintf(o->provider, sizeof(o->provider), "slurm");
        snprintf(o->instance_type, sizeof(o->instance_type), "%s", type);
        snprintf(o->region, sizeof(o->region), "%s", s->name);
        memcpy(o->zone, p->name, strlen(p->name) + 1); /* fits: checked above */
        if (sh[k].gpus && sh[k].gpu_type[0])
            gpu_model_of(sh[k].gpu_type, o->gpu_model, sizeof(o->gpu_model), &o->gpu_mem_gib);
        o->gpu_count = sh[k].gpus;
        o->vcpus = sh[k].cpus;
        o->mem_gib = (double)sh[k].min_mib / 1024.0;
        o->spot = 0;
        o->price_hourly = s->gpu_hour_price * sh[k].gpus;
        o->fabric[0] = '\0';
    }
    free(sh);
    gpc_buf_free(&unusable);
    return rc;
}

/* The offers of one site, or why it has none. */
static int site_offers(const slurm_ctx *c, const slurm_site *s, const gpc_spec *spec,
                       offers_acc *a)
{
    slurm_record r;
    gpc_error e;
    gpc_error_clear(&e);
    int rc = slurm_record_load(c, s->name, &r, &e);
    if (rc == GPC_ERR_NOT_FOUND) /* its message: "... has not been checked yet: run ..." */
        return why_add(a, "%s", strncmp(e.msg, "slurm: ", 7) == 0 ? e.msg + 7 : e.msg);
    if (rc)
        return gpc_error_wrap(a->err, &e, NULL);
    size_t considered = 0;
    if (s->n_partitions) {
        for (size_t i = 0; !rc && i < s->n_partitions; i++) {
            const char *name = s->partitions[i];
            if (spec->n_zones && !name_in(name, spec->zones, spec->n_zones))
                continue;
            considered++;
            const slurm_part_rec *p = part_find(&r, name);
            if (!p)
                rc = why_add(a, "Slurm cluster '%s' has no partition '%s' (partitions in %s; "
                             "run gpuctl check slurm if it was added since)", s->name, name,
                             s->from);
            else
                rc = partition_offers(s, &r, p, spec, a);
        }
    } else {
        for (size_t i = 0; !rc && i < r.n_parts; i++) {
            if (spec->n_zones && !name_in(r.parts[i].name, spec->zones, spec->n_zones))
                continue;
            considered++;
            rc = partition_offers(s, &r, &r.parts[i], spec, a);
        }
    }
    if (!rc && considered == 0 && spec->n_zones) {
        rc = why_add(a, "zones: Slurm cluster '%s' has no partition named ", s->name);
        for (size_t i = 0; !rc && i < spec->n_zones; i++)
            rc = gpc_buf_addf(&a->why, a->err, "%s'%s'", i ? ", " : "", spec->zones[i]);
        if (!rc && s->n_partitions)
            rc = gpc_buf_addf(&a->why, a->err, " among the partitions of %s", s->from);
    }
    slurm_record_free(&r);
    return rc;
}

int slurm_list_offers(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                      gpc_error *err)
{
    const slurm_ctx *c = ctx;
    *out = NULL;
    *n = 0;
    if (c->n_sites == 0)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "slurm: no Slurm cluster is configured: add a [slurm \"NAME\"] section "
                        "to gpuctl's config file (docs/providers/slurm.md)");
    offers_acc a;
    memset(&a, 0, sizeof(a));
    gpc_buf_init(&a.why, GPC_BUF_LINE_MAX);
    a.err = err;
    int rc = 0;
    size_t considered = 0;
    for (size_t i = 0; !rc && i < c->n_sites; i++) {
        const slurm_site *s = &c->sites[i];
        if (spec->n_regions && !name_in(s->name, spec->regions, spec->n_regions))
            continue;
        considered++;
        rc = site_offers(c, s, spec, &a);
    }
    if (!rc && considered == 0) {
        rc = why_add(&a, "regions: no Slurm cluster named ");
        for (size_t i = 0; !rc && i < spec->n_regions; i++)
            rc = gpc_buf_addf(&a.why, err, "%s'%s'", i ? ", " : "", spec->regions[i]);
        rc = rc ? rc : gpc_buf_adds(&a.why, " is configured (configured: ", err);
        for (size_t i = 0; !rc && i < c->n_sites; i++)
            rc = gpc_buf_addf(&a.why, err, "%s%s", i ? ", " : "", c->sites[i].name);
        rc = rc ? rc : gpc_buf_adds(&a.why, ")", err);
    }
    if (!rc && a.n == 0)
        rc = gpc_fail(err, GPC_ERR_CAPACITY, "slurm: %s", gpc_buf_str(&a.why));
    gpc_buf_free(&a.why);
    if (rc) {
        free(a.o);
        return rc;
    }
    /* cheapest first; equal prices keep the order of sites, partitions and
     * shapes (insertion sort: stable) */
    for (size_t i = 1; i < a.n; i++) {
        gpc_offer t = a.o[i];
        size_t j = i;
        while (j > 0 && a.o[j - 1].price_hourly > t.price_hourly) {
            a.o[j] = a.o[j - 1];
            j--;
        }
        a.o[j] = t;
    }
    *out = a.o;
    *n = a.n;
    return 0;
}
