/*
 * catalog_rows.c - the instance table's records into gpc_catalog_rows:
 * each record's cells converted at its end (numbers with strtod, names
 * checked, strings copied into the catalog's arena), then the duplicate
 * check: the rows sorted once by key, equal neighbours compared
 * (catalog_int.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpuctl/util.h"
#include "catalog_int.h"

/*
 * A plain decimal: optional '-', digits, optional '.' and digits ("15",
 * "0.526", ".5").  The syntax is checked here, because strtod also takes
 * '+', white space, exponents, hex, inf and nan; the value is strtod's.
 * s[len] is '\0' (a cell of the reader's buffer).
 */
num_rc gpc_cat_parse_num(const char *s, size_t len, double *out)
{
    if (len == 0)
        return NUM_EMPTY;
    size_t neg = s[0] == '-', digits = 0;
    bool dot = false;
    for (size_t i = neg; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else if (s[i] == '.' && !dot)
            dot = true;
        else
            return NUM_BAD;
    }
    if (digits == 0 || len >= NUM_TEXT_MAX)
        return NUM_BAD;
    double v = strtod(s + neg, NULL);
    if (!isfinite(v))
        return NUM_BAD;
    if (neg && v != 0)
        return NUM_NEGATIVE;
    *out = v; /* "-0" is 0 */
    return NUM_OK;
}

/* ------------------------------------------------------------------ */
/* The instance table.                                                */

/* In the order gpc_catalog_write_csv writes them. */
const col_def gpc_cat_instance_cols[I_COUNT] = {
    [I_PROVIDER] = {"provider", true, false},
    [I_TYPE] = {"instance_type", true, false},
    [I_REGION] = {"region", true, false},
    [I_GPU_MODEL] = {"gpu_model", true, false},
    [I_GPU_COUNT] = {"gpu_count", true, false},
    [I_GPU_MEM] = {"gpu_memory_gib", true, false},
    [I_VCPUS] = {"vcpus", true, false},
    [I_MEM] = {"memory_gib", true, false},
    [I_FABRIC] = {"interconnect", true, false},
    [I_FABRIC_GBPS] = {"interconnect_gbps", false, false},
    [I_OD] = {"price_ondemand_usd_hr", true, false},
    [I_SPOT] = {"price_spot_usd_hr", true, false},
    [I_OD_CNY] = {"price_ondemand_cny_hr", false, false},
    [I_SPOT_CNY] = {"price_spot_cny_hr", false, false},
    [I_SOURCE] = {"source", false, false},
    [I_NOTES] = {"notes", false, false},
};

static const char *const fabric_names[] = {
    [GPC_FABRIC_UNKNOWN] = "unknown",
    [GPC_FABRIC_NONE] = "none",
    [GPC_FABRIC_EFA] = "efa",
    [GPC_FABRIC_INFINIBAND] = "infiniband",
    [GPC_FABRIC_ERDMA] = "erdma",
};

const char *gpc_fabric_name(gpc_fabric f)
{
    return (unsigned)f < sizeof(fabric_names) / sizeof(fabric_names[0]) ? fabric_names[f]
                                                                        : "unknown";
}

/* The rows being read (the reader's ctx). */
typedef struct rows {
    gpc_catalog *c;       /* the GPU table; rows go to the arena of its strings */
    gpc_catalog_row *v;
    size_t n, cap;
} rows;

/* [a-z][a-z0-9-]*: the providers gpuctl has and any it may get. */
static bool provider_ok(const char *s, size_t len)
{
    if (len == 0 || len > 32 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* No white space or control characters: names passed to provider APIs.
 * (Bytes of 0x80 and up, UTF-8, are fine.) */
static bool name_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

/* The GPU of a model cell: the exact spelling first, then any case. */
static const gpc_gpu_info *find_gpu(const gpc_catalog *c, const char *s)
{
    for (size_t i = 0; i < c->n_gpus; i++)
        if (strcmp(c->gpus[i].model, s) == 0)
            return &c->gpus[i];
    return gpc_catalog_gpu(c, s);
}

/* "COLUMN: WHAT (got 'CELL')TAIL" for a cell of column k. */
static int bad_cell(reader *r, int k, const char *what, const char *s, size_t len,
                    const char *tail)
{
    char q[SHOW_MAX * 4 + 8];
    return gpc_cat_rfail(r, r->rec_line, gpc_cat_instance_cols[k].name, "%s (got %s)%s", what,
                         gpc_cat_show(s, len, q), tail);
}

static int bad_gpu(reader *r, const char *s, size_t len)
{
    const gpc_catalog *c = ((rows *)r->ctx)->c;
    char known[GPC_ERROR_MSG_MAX / 2];
    size_t o = 0;
    known[0] = '\0';
    for (size_t i = 0; i < c->n_gpus && o < sizeof(known); i++)
        o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", i ? ", " : "",
                              c->gpus[i].model);
    char tail[sizeof(known) + 16];
    snprintf(tail, sizeof(tail), "; known: %s", known);
    return bad_cell(r, I_GPU_MODEL, "unknown GPU model", s, len, tail);
}

/* The largest value of number column k (catalog.h has the ranges). */
static double col_max(int k)
{
    switch (k) {
    case I_GPU_COUNT: return GPC_CATALOG_GPU_COUNT_MAX;
    case I_GPU_MEM: case I_MEM: return GPC_CATALOG_GIB_MAX;
    case I_VCPUS: return GPC_CATALOG_VCPUS_MAX;
    case I_FABRIC_GBPS: return GPC_CATALOG_GBPS_MAX;
    default: return GPC_CATALOG_PRICE_MAX;
    }
}

/* A number cell of column k: 0 .. col_max(k), or `empty` when the cell is. */
static int num_cell(reader *r, int k, const char *s, size_t len, double empty, double *v)
{
    switch (gpc_cat_parse_num(s, len, v)) {
    case NUM_OK:
        if (*v > col_max(k) && k != I_GPU_COUNT) { /* gpu_count: its own message */
            char what[64];
            snprintf(what, sizeof(what), "more than %.0f", col_max(k));
            return bad_cell(r, k, what, s, len, "");
        }
        return 0;
    case NUM_EMPTY:
        *v = empty;
        return 0;
    case NUM_NEGATIVE:
        if (k >= I_OD)
            return bad_cell(r, k, "negative price", s, len,
                            "; leave the cell empty for no price");
        return bad_cell(r, k, "negative number", s, len, "");
    default:
        return bad_cell(r, k, "not a number", s, len, "");
    }
}

static int fabric_cell_in(reader *r, gpc_catalog_row *row, const char *s, size_t len)
{
    if (len == 0) {
        row->fabric = GPC_FABRIC_UNKNOWN;
        return 0;
    }
    for (int f = GPC_FABRIC_NONE; f <= GPC_FABRIC_ERDMA; f++) {
        if (strcmp(fabric_names[f], s) == 0) {
            row->fabric = (gpc_fabric)f;
            return 0;
        }
    }
    return bad_cell(r, I_FABRIC, "unknown interconnect", s, len,
                    "; one of none, efa, infiniband, erdma, or empty when not known");
}

/* A copy of a string cell in the catalog's arena into *out. */
static int str_cell(reader *r, const char *s, size_t len, const char **out)
{
    *out = gpc_cat_arena_strndup(gpc_cat_arena(((rows *)r->ctx)->c), s, len);
    return *out ? 0 : gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
}

/* Column k's cell (s, len bytes, NUL-terminated) into the row. */
static int convert_cell(reader *r, gpc_catalog_row *row, int k, const char *s, size_t len)
{
    double v;
    int rc;
    switch (k) {
    case I_PROVIDER:
        /* Lengths: what a node request carries (provider.h gpc_offer). */
        if (!provider_ok(s, len) || len > 15)
            return bad_cell(r, k, "not a provider name: a lower-case letter, then letters, "
                            "digits or '-', at most 15", s, len, "");
        if (strcmp(s, "local") == 0)
            return bad_cell(r, k, "the local provider's offer is this machine, which it "
                            "reports itself; the catalog cannot list it", s, len, "");
        return str_cell(r, s, len, &row->provider);
    case I_TYPE:
        if (len == 0 || !name_ok(s, len))
            return bad_cell(r, k, len ? "white space or a control character" : "empty", s, len,
                            "");
        if (len > 63)
            return bad_cell(r, k, "longer than 63 bytes", s, len, "");
        return str_cell(r, s, len, &row->instance_type);
    case I_REGION:
        if (!name_ok(s, len))
            return bad_cell(r, k, "white space or a control character", s, len, "");
        if (len > 47)
            return bad_cell(r, k, "longer than 47 bytes", s, len, "");
        return str_cell(r, s, len, &row->region);
    case I_GPU_MODEL:
        if (len == 0)
            return 0; /* CPU only: gpu_model "" and gpu NULL */
        if (!(row->gpu = find_gpu(((rows *)r->ctx)->c, s)))
            return bad_gpu(r, s, len);
        row->gpu_model = row->gpu->model; /* rows carry the table's spelling */
        return 0;
    case I_GPU_COUNT:
        if ((rc = num_cell(r, k, s, len, 0, &v)))
            return rc;
        if (v > GPC_CATALOG_GPU_COUNT_MAX || v != (double)(uint32_t)v)
            return bad_cell(r, k, "not a whole number of at most 65535", s, len, "");
        row->gpu_count = (uint32_t)v;
        return 0;
    case I_GPU_MEM: return num_cell(r, k, s, len, 0, &row->gpu_mem_gib);
    case I_VCPUS: return num_cell(r, k, s, len, 0, &row->vcpus);
    case I_MEM: return num_cell(r, k, s, len, 0, &row->mem_gib);
    case I_FABRIC: return fabric_cell_in(r, row, s, len);
    case I_FABRIC_GBPS: return num_cell(r, k, s, len, 0, &row->fabric_gbps);
    case I_OD: return num_cell(r, k, s, len, -1, &row->price_ondemand);
    case I_SPOT: return num_cell(r, k, s, len, -1, &row->price_spot);
    case I_OD_CNY: return num_cell(r, k, s, len, -1, &row->price_ondemand_cny);
    case I_SPOT_CNY: return num_cell(r, k, s, len, -1, &row->price_spot_cny);
    case I_SOURCE: return str_cell(r, s, len, &row->source);
    case I_NOTES: return str_cell(r, s, len, &row->notes);
    default: return 0;
    }
}

/* The reader's row callback: one record into a new row, its cells in the
 * order of the file (so the first bad cell is the one reported), then the
 * checks of the whole row. */
static int instance_row(reader *r)
{
    static const gpc_catalog_row blank = {
        .region = "", .gpu_model = "", .price_ondemand = -1, .price_spot = -1,
        .price_ondemand_cny = -1, .price_spot_cny = -1, .source = "", .notes = ""};
    rows *R = r->ctx;
    if (R->n >= UINT32_MAX - 1)
        return gpc_cat_rfail(r, r->rec_line, NULL, "too many rows");
    if (R->n == R->cap) {
        size_t cap = R->cap ? 2 * R->cap : 256;
        gpc_catalog_row *v = realloc(R->v, cap * sizeof(*v));
        if (!v)
            return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
        R->v = v;
        R->cap = cap;
    }
    gpc_catalog_row *row = &R->v[R->n];
    *row = blank;
    row->line = r->rec_line;
    for (size_t i = 0; i < r->ncols; i++) {
        int rc = r->col[i] < 0 ? 0
                               : convert_cell(r, row, r->col[i], r->buf + r->cells[i].off,
                                              r->cells[i].len);
        if (rc)
            return rc;
    }
    if (row->gpu && row->gpu_count == 0)
        return gpc_cat_rfail(r, r->rec_line, "gpu_count", "0 with gpu_model '%s' (at least 1)",
                             row->gpu_model);
    if (!row->gpu && row->gpu_count > 0)
        return gpc_cat_rfail(r, r->rec_line, "gpu_model", "empty with gpu_count %u",
                             (unsigned)row->gpu_count);
    R->n++;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The duplicate check.                                               */

/* Two rows' keys in the order of a sorted table: provider, instance_type,
 * region. */
static int key_cmp(const gpc_catalog_row *a, const gpc_catalog_row *b)
{
    int d = strcmp(a->provider, b->provider);
    if (!d)
        d = strcmp(a->instance_type, b->instance_type);
    return d ? d : strcmp(a->region, b->region);
}

/* Rows by key, then by their place in the table (the pointers point into
 * one array). */
static int by_key_then_place(const void *pa, const void *pb)
{
    const gpc_catalog_row *a = *(const gpc_catalog_row *const *)pa;
    const gpc_catalog_row *b = *(const gpc_catalog_row *const *)pb;
    int d = key_cmp(a, b);
    return d ? d : (a > b) - (a < b);
}

/*
 * The first row (in table order) whose key an earlier row has, into *dup,
 * and that earlier row into *first; *dup NULL when every key is unique.
 * A table whose keys ascend (the built-in one, and any written by
 * `catalog export` from it) has none, which one pass shows; any other is
 * sorted once.  0 or GPC_ERR_NOMEM.
 */
static int find_duplicate(const gpc_catalog_row *v, size_t n, const gpc_catalog_row **dup,
                          const gpc_catalog_row **first)
{
    *dup = *first = NULL;
    size_t i = 1;
    while (i < n && key_cmp(&v[i - 1], &v[i]) < 0)
        i++;
    if (i >= n)
        return 0;
    const gpc_catalog_row **by_key = malloc(n * sizeof(*by_key));
    if (!by_key)
        return GPC_ERR_NOMEM;
    for (i = 0; i < n; i++)
        by_key[i] = &v[i];
    qsort(by_key, n, sizeof(*by_key), by_key_then_place);
    /* In a run of equal keys the rows are in table order: the run's second
     * row is its key's first repeat. */
    for (i = 1; i < n; i++) {
        const gpc_catalog_row *a = by_key[i - 1], *b = by_key[i];
        bool run_start = i == 1 || key_cmp(by_key[i - 2], a) != 0;
        if (run_start && key_cmp(a, b) == 0 && (!*dup || b < *dup)) {
            *dup = b;
            *first = a;
        }
    }
    free(by_key);
    return 0;
}

int gpc_cat_load_instances(gpc_catalog *c, const char *name, gpc_code code, const char *csv,
                           size_t len, gpc_error *err)
{
    rows R = {.c = c};
    gpc_error read_err;
    gpc_error_clear(&read_err);
    reader r = {.name = name, .code = code, .err = &read_err, .defs = gpc_cat_instance_cols,
                .n_defs = I_COUNT, .on_row = instance_row, .ctx = &R};
    int rc = gpc_cat_read_table(&r, csv, len);
    gpc_cat_reader_free(&r);
    /* Reading stops at the first error, so every row read lies before it:
     * a duplicate among them is the earlier fault (out of memory aside). */
    const gpc_catalog_row *dup = NULL, *first = NULL;
    if ((!rc || r.fail_line > 0) && find_duplicate(R.v, R.n, &dup, &first)) {
        gpc_error_clear(&read_err);
        rc = gpc_fail(&read_err, GPC_ERR_NOMEM, "out of memory");
    } else if (dup) {
        char q1[SHOW_MAX * 4 + 8], q2[SHOW_MAX * 4 + 8], q3[SHOW_MAX * 4 + 8];
        gpc_error_clear(&read_err);
        rc = gpc_fail(&read_err, code,
                      "%s:%u: duplicate row for provider %s, instance_type %s, region %s "
                      "(first on line %u)",
                      name, (unsigned)dup->line,
                      gpc_cat_show(dup->provider, strlen(dup->provider), q1),
                      gpc_cat_show(dup->instance_type, strlen(dup->instance_type), q2),
                      gpc_cat_show(dup->region, strlen(dup->region), q3), (unsigned)first->line);
    }
    if (rc) {
        free(R.v);
        return gpc_fail(err, read_err.code, "%s", read_err.msg);
    }
    c->rows = R.v;
    c->n_rows = R.n;
    gpc_sha256_hex(csv, len, c->sha256);
    return 0;
}
