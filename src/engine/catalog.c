/*
 * catalog.c - the GPU instance catalog: CSV tables -> gpc_catalog.
 *
 * Three tables, all read with libcsv through one small reader: gpus.csv and
 * sources.csv (always the built-in copies) and the instance table (built-in
 * or a user's file).  The reader feeds libcsv one physical line at a time so
 * that every record knows the line it began on.  Columns are found by header
 * name.  The two small tables collect a record's cells and convert them at
 * its end; the instance table converts each cell as libcsv delivers it.
 *
 * The instance table may be large (a user's file of 100,000 rows, 12 MB,
 * should load in ~30 ms), so its path is one pass with little work per
 * cell: no copy of the cell, strings into an arena of large blocks (rows
 * point into blocks that never move), numbers read without strtod in the
 * common case, error paths kept out of line.  Duplicates are found after
 * the pass, in row order, with an open-addressing hash table.  libcsv alone
 * takes ~2.5 ns a byte (30 ms for 12 MB on the 2-core test machine), so a
 * table of 1 MiB or more is read in two parts on two threads: see
 * gpc_cat_load_instances (catalog_parts.c).  A file of 256 KiB or more is
 * parsed only once: its rows go to a binary cache file that later loads
 * read instead while the file is unchanged (see catalog_cache.c).
 *
 * This file: gpus.csv and sources.csv, loading, lookups and free; the other
 * parts (the reader, the instance table's rows, the cache, writing) are
 * listed in catalog_int.h.
 *
 * Every message has the form "NAME:LINE: [column: ]what is wrong".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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
 * The whole catalog: built-in GPUs and sources, then the instance table
 * `csv` (named `name` in messages; content errors get `code`).
 */
static int load_base(const char *origin, gpc_catalog **out, gpc_error *err);

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
    gpc_catalog *c;
    int rc = load_base(origin, &c, err);
    if (!rc)
        rc = gpc_cat_load_instances(c, name, code, csv, len, err);
    if (rc) {
        gpc_catalog_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* A catalog with its origin, the built-in GPUs and sources, and no rows
 * yet; *out is NULL on failure.  err is not NULL. */
static int load_base(const char *origin, gpc_catalog **out, gpc_error *err)
{
    *out = NULL;
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

/*
 * A regular file in one read() of the size fstat() gives; anything else
 * ("-", a pipe) through gpc_read_file.  (gpc_read_file reads 8 KiB at a
 * time into a buffer that doubles: 10 ms more on a 12 MB catalog.)
 */
static int read_catalog_file(const char *path, char **out, size_t *out_len, gpc_error *err)
{
    struct stat st;
    int fd = strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return gpc_read_file(path, GPC_CATALOG_MAX_BYTES, out, out_len, err);
    }
    size_t cap = (size_t)st.st_size + 1, len = 0; /* + 1: a file that grew shows */
    if ((uint64_t)st.st_size > GPC_CATALOG_MAX_BYTES) {
        close(fd);
        return gpc_fail(err, GPC_ERR_IO, "%s: larger than %u bytes", path,
                        GPC_CATALOG_MAX_BYTES);
    }
    char *buf = malloc(cap + 1);
    int rc = buf ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (buf)
        gpc_cat_advise_huge(buf, cap);
    while (!rc) {
        if (len == cap) { /* it grew while being read */
            char *p = cap > GPC_CATALOG_MAX_BYTES ? NULL : realloc(buf, 2 * cap + 1);
            if (!p) {
                rc = gpc_fail(err, GPC_ERR_IO, "%s: larger than %u bytes", path,
                              GPC_CATALOG_MAX_BYTES);
                break;
            }
            buf = p;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n == 0)
            break;
        if (n > 0)
            len += (size_t)n;
        else if (errno != EINTR)
            rc = gpc_fail(err, GPC_ERR_IO, "%s: read error: %s", path, strerror(errno));
    }
    close(fd);
    if (!rc && len > GPC_CATALOG_MAX_BYTES)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: larger than %u bytes", path, GPC_CATALOG_MAX_BYTES);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

int gpc_catalog_load_file(const char *path, gpc_catalog **out, gpc_error *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    cache_ref *ref = malloc(sizeof(*ref));
    bool cached = ref && gpc_cat_cache_prepare(path, ref);
    if (cached) { /* the rows from the cache, or on to the CSV as without one */
        gpc_catalog *c;
        gpc_error local;
        gpc_error_clear(&local);
        if (!load_base(path, &c, &local)) {
            if (gpc_cat_cache_read(c, ref)) {
                free(ref);
                *out = c;
                return 0;
            }
            gpc_catalog_free(c);
        }
    }
    int rc = read_catalog_file(path, &data, &len, err);
    if (!rc)
        rc = load(path, path, GPC_ERR_SPEC, data, len, out, err);
    free(data);
    if (!rc && cached)
        gpc_cat_cache_write(*out, ref);
    free(ref);
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
