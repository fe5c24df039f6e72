/*
 * catalog.c - the GPU instance catalog: CSV tables -> gpc_catalog.
 *
 * Three tables, all read with libcsv through one small reader: gpus.csv and
 * sources.csv (always the built-in copies) and the instance table (built-in
 * or a user's file).  The reader feeds libcsv one physical line at a time so
 * that every record knows the line it began on, collects a record's cells,
 * and hands the record to the table's row function at its end.  Columns are
 * found by header name.
 *
 * The instance table is read in one pass: strings into an arena of blocks
 * that never move, numbers with strtod; then the rows are sorted once by
 * key to find a duplicate.  A user's table of 25,000 rows (about AWS's
 * real size across all regions) loads and plans in well under 50 ms: see
 * bench/README.md.
 *
 * This file: gpus.csv and sources.csv, loading, lookups and free; the other
 * parts (the reader, the instance table's rows, writing) are listed in
 * catalog_int.h.
 *
 * Every message has the form "NAME:LINE: [column: ]what is wrong".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gpuctl/catalog.h"
#include "gpuctl/embedded.h"
#include "gpuctl/util.h"
#include "catalog_int.h"

#define BUILTIN_ORIGIN "built-in"

/* ------------------------------------------------------------------ */
/* gpus.csv and sources.csv (built-in; an error in them is a bug).    */

enum { G_MODEL, G_MEM, G_FP16, G_BF16, G_FP32, G_SOURCE };
static const col_def gpu_cols[] = {
    {"gpu_model", true, false},
    {"memory_gib", true, false},
    {"fp16_tensor_tflops_dense", true, false},
    {"bf16_tflops_dense", true, false},
    {"fp32_tflops", true, false},
    {"source", true, false},
    {"memory_type", false, true},
    {"tdp_w", false, true},
    {"nvlink", false, true},
    {"form_factor", false, true},
    {"memory_bandwidth_gbs", false, true},
    {"nvlink_gbps_bidir", false, true},
    {"fp16_tflops_sparse", false, true},
    {"notes", false, true},
};

enum { S_KEY, S_CITATION, S_VERSION, S_DATE, S_CURRENCY, S_RATE, S_NOTES };
static const col_def source_cols[] = {
    {"key", true, false},
    {"citation", true, false},
    {"version", true, false},
    {"data_date", true, false},
    {"currency", true, false},
    {"usd_per_unit", true, false},
    {"notes", true, false},
};

/* What the row functions of gpus.csv and sources.csv fill (the reader's
 * ctx). */
typedef struct loader {
    gpc_catalog *c;
    arena *a;
    size_t cap;           /* of the array being filled */
} loader;

static const char *col_str(reader *r, int k)
{
    loader *L = r->ctx;
    size_t len;
    const char *s = gpc_cat_col_text(r, k, &len);
    const char *p = gpc_cat_arena_strndup(L->a, s, len);
    if (!p)
        r->rc = gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    return p;
}

/* `arr` with room for element n (of `size` bytes): arr itself, or a bigger
 * copy; NULL (arr untouched) when memory runs out. */
static void *grow(void *arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return arr;
    size_t ncap = *cap ? 2 * *cap : 64;
    void *p = realloc(arr, ncap * size);
    if (p)
        *cap = ncap;
    return p;
}

static int gpu_row(reader *r)
{
    loader *L = r->ctx;
    gpc_catalog *c = L->c;
    gpc_gpu_info *gpus = grow(c->gpus, c->n_gpus, &L->cap, sizeof(*gpus));
    if (!gpus)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    c->gpus = gpus;
    gpc_gpu_info *g = &gpus[c->n_gpus];
    memset(g, 0, sizeof(*g));
    size_t len;
    gpc_cat_col_text(r, G_MODEL, &len);
    if (len == 0)
        return gpc_cat_rfail(r, r->rec_line, "gpu_model", "empty");
    if (!(g->model = col_str(r, G_MODEL)) || !(g->source = col_str(r, G_SOURCE)))
        return GPC_ERR_NOMEM;
    int rc;
    if ((rc = gpc_cat_col_num(r, G_MEM, 0, &g->memory_gib)) ||
        (rc = gpc_cat_col_num(r, G_BF16, 0, &g->bf16_tflops_dense)) ||
        (rc = gpc_cat_col_num(r, G_FP16, 0, &g->fp16_tflops_dense)) ||
        (rc = gpc_cat_col_num(r, G_FP32, 0, &g->fp32_tflops)))
        return rc;
    for (size_t i = 0; i < c->n_gpus; i++)
        if (strcasecmp(c->gpus[i].model, g->model) == 0)
            return gpc_cat_rfail(r, r->rec_line, "gpu_model", "duplicate model '%s'", g->model);
    c->n_gpus++;
    return 0;
}

static int source_row(reader *r)
{
    loader *L = r->ctx;
    gpc_catalog *c = L->c;
    gpc_catalog_source *srcs = grow(c->sources, c->n_sources, &L->cap, sizeof(*srcs));
    if (!srcs)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    c->sources = srcs;
    gpc_catalog_source *s = &srcs[c->n_sources];
    memset(s, 0, sizeof(*s));
    if (!(s->key = col_str(r, S_KEY)) || !(s->citation = col_str(r, S_CITATION)) ||
        !(s->version = col_str(r, S_VERSION)) || !(s->data_date = col_str(r, S_DATE)) ||
        !(s->currency = col_str(r, S_CURRENCY)) || !(s->notes = col_str(r, S_NOTES)))
        return GPC_ERR_NOMEM;
    if (!*s->key)
        return gpc_cat_rfail(r, r->rec_line, "key", "empty");
    /* Empty currency and rate: a source of specs only, with no prices. */
    if (strcmp(s->currency, "USD") != 0 && strcmp(s->currency, "CNY") != 0 && *s->currency)
        return gpc_cat_rfail(r, r->rec_line, "currency", "not USD or CNY (got '%s')", s->currency);
    int rc = gpc_cat_col_num(r, S_RATE, 0, &s->usd_per_unit);
    if (rc)
        return rc;
    if (gpc_catalog_source_get(c, s->key))
        return gpc_cat_rfail(r, r->rec_line, "key", "duplicate key '%s'", s->key);
    c->n_sources++;
    return 0;
}

static int source_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_catalog_source *)a)->key, ((const gpc_catalog_source *)b)->key);
}

/* Read one built-in table; its content errors are GPC_ERR_INTERNAL. */
static int load_builtin_table(loader *L, const char *file, const col_def *defs, size_t n_defs,
                              row_fn fn, gpc_error *err)
{
    const gpc_embedded_file *f = gpc_catalog_file_get(file);
    if (!f)
        return gpc_fail(err, GPC_ERR_INTERNAL, "built-in catalog file %s is missing", file);
    reader r = {.name = file, .code = GPC_ERR_INTERNAL, .err = err, .defs = defs,
                .n_defs = n_defs, .on_row = fn, .ctx = L};
    L->cap = 0;
    int rc = gpc_cat_read_table(&r, f->data, f->len);
    gpc_cat_reader_free(&r);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Loading.                                                           */

arena *gpc_cat_arena(const gpc_catalog *c) { return c->priv; }

/*
 * The whole catalog: its origin, the built-in GPUs and sources, then the
 * instance table `csv` (named `name` in messages; content errors get
 * `code`).
 */
static int load(const char *name, const char *origin, gpc_code code, const char *csv,
                size_t len, gpc_catalog **out, gpc_error *err)
{
    gpc_error local;
    *out = NULL;
    if (!err) { /* the reader reports through err: give it one */
        gpc_error_clear(&local);
        err = &local;
    }
    if (len > GPC_CATALOG_MAX_BYTES)
        return gpc_fail(err, code, "%s: larger than %u bytes", name, GPC_CATALOG_MAX_BYTES);
    gpc_catalog *c = calloc(1, sizeof(*c));
    arena *a = calloc(1, sizeof(*a));
    if (!c || !a) {
        free(c);
        free(a);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    c->priv = a;
    loader L = {.c = c, .a = a};
    int rc = 0;
    if (!(c->origin = gpc_cat_arena_strndup(a, origin, strlen(origin))))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (!rc)
        rc = load_builtin_table(&L, "gpus.csv", gpu_cols, sizeof(gpu_cols) / sizeof(gpu_cols[0]),
                                gpu_row, err);
    if (!rc)
        rc = load_builtin_table(&L, "sources.csv", source_cols,
                                sizeof(source_cols) / sizeof(source_cols[0]), source_row, err);
    /* sources.csv joins each provider folder's sources in folder order;
     * the catalog lists them by key */
    if (!rc && c->n_sources > 1)
        qsort(c->sources, c->n_sources, sizeof(*c->sources), source_cmp);
    if (!rc)
        rc = gpc_cat_load_instances(c, name, code, csv, len, err);
    if (rc) {
        gpc_catalog_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int gpc_catalog_load_builtin(gpc_catalog **out, gpc_error *err)
{
    const gpc_embedded_file *f = gpc_catalog_file_get("gpu_instances.csv");
    *out = NULL;
    if (!f)
        return gpc_fail(err, GPC_ERR_INTERNAL, "built-in catalog file gpu_instances.csv is missing");
    return load("built-in gpu_instances.csv", BUILTIN_ORIGIN, GPC_ERR_INTERNAL, f->data, f->len,
                out, err);
}

int gpc_catalog_load_string(const char *name, const char *csv, size_t len,
                            gpc_catalog **out, gpc_error *err)
{
    return load(name, name, GPC_ERR_SPEC, csv, len, out, err);
}

int gpc_catalog_load_file(const char *path, gpc_catalog **out, gpc_error *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = gpc_read_file(path, GPC_CATALOG_MAX_BYTES, &data, &len, err);
    if (!rc)
        rc = load(path, path, GPC_ERR_SPEC, data, len, out, err);
    free(data);
    return rc;
}

int gpc_catalog_user_path(char *buf, size_t n, gpc_error *err)
{
    const char *dir = getenv("GPUCTL_CONFIG_DIR"), *sub = "/catalog.csv";
    if (!dir || !*dir) {
        /* XDG: a relative XDG_CONFIG_HOME is invalid and is ignored. */
        dir = getenv("XDG_CONFIG_HOME");
        sub = "/gpuctl/catalog.csv";
        if (!dir || dir[0] != '/') {
            dir = getenv("HOME");
            sub = "/.config/gpuctl/catalog.csv";
        }
    }
    if (!dir || !*dir)
        return gpc_fail(err, GPC_ERR_IO,
                        "no configuration directory for the catalog: set GPUCTL_CONFIG_DIR or HOME");
    int len = snprintf(buf, n, "%s%s", dir, sub);
    if (len < 0 || (size_t)len >= n)
        return gpc_fail(err, GPC_ERR_IO, "catalog path under %s is too long", dir);
    return 0;
}

int gpc_catalog_open(const char *explicit_path, gpc_catalog **out, gpc_error *err)
{
    *out = NULL;
    if (explicit_path)
        return gpc_catalog_load_file(explicit_path, out, err);
    const char *env = getenv("GPUCTL_CATALOG");
    if (env && *env)
        return gpc_catalog_load_file(env, out, err);
    char path[4096];
    /* No configuration directory means no override: the built-in one. */
    if (gpc_catalog_user_path(path, sizeof(path), NULL) == 0 && access(path, F_OK) == 0)
        return gpc_catalog_load_file(path, out, err);
    return gpc_catalog_load_builtin(out, err);
}

const gpc_gpu_info *gpc_catalog_gpu(const gpc_catalog *c, const char *model)
{
    for (size_t i = 0; c && model && i < c->n_gpus; i++)
        if (strcasecmp(c->gpus[i].model, model) == 0)
            return &c->gpus[i];
    return NULL;
}

const gpc_catalog_source *gpc_catalog_source_get(const gpc_catalog *c, const char *key)
{
    for (size_t i = 0; c && key && i < c->n_sources; i++)
        if (strcmp(c->sources[i].key, key) == 0)
            return &c->sources[i];
    return NULL;
}

double gpc_gpu_tflops(const gpc_gpu_info *g)
{
    if (!g)
        return 0;
    if (g->bf16_tflops_dense > 0)
        return g->bf16_tflops_dense;
    return g->fp16_tflops_dense > 0 ? g->fp16_tflops_dense : 0;
}

void gpc_catalog_free(gpc_catalog *c)
{
    if (!c)
        return;
    if (c->priv)
        gpc_cat_arena_free(c->priv);
    free(c->priv);
    free(c->rows);
    free(c->gpus);
    free(c->sources);
    free(c);
}
