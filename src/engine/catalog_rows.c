/*
 * catalog_rows.c - the instance table's cells into gpc_catalog_rows: plain
 * decimals read without strtod in the common case, names checked, strings
 * interned in the arena, and the duplicate check after the pass
 * (catalog_int.h).  Every cell goes through here: keep it lean.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog_int.h"

/* 10^0 .. 10^22: every one is exact as a double. */
static const double pow10_exact[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * A plain decimal: optional '-', digits, optional '.' and digits ("15",
 * "0.526", ".5").  No '+', exponent, inf or nan.  The common case (at most
 * 2^53 as an integer of all digits, at most 22 decimals) is m / 10^k in
 * double arithmetic, which is correctly rounded because both operands are
 * exact (Clinger's fast path), so it equals strtod's result; anything else
 * goes to strtod.  strtod is ~10x slower and a catalog has ~10 numbers a row.
 */
/* gpc_cat_parse_num's rare case: many digits or decimals (syntax already checked). */
__attribute__((cold, noinline))
static num_rc parse_num_slow(const char *s, size_t len, double *out)
{
    char tmp[NUM_TEXT_MAX];
    size_t neg = s[0] == '-';
    if (len >= sizeof(tmp))
        return NUM_BAD;
    memcpy(tmp, s + neg, len - neg);
    tmp[len - neg] = '\0';
    double v = strtod(tmp, NULL);
    if (!isfinite(v))
        return NUM_BAD;
    if (neg && v != 0)
        return NUM_NEGATIVE;
    *out = v;
    return NUM_OK;
}

num_rc gpc_cat_parse_num(const char *s, size_t len, double *out)
{
    if (len == 0)
        return NUM_EMPTY;
    size_t neg = s[0] == '-', dot = 0; /* dot: index of '.' + 1; 0 = none */
    uint64_t m = 0; /* wraps past 19 digits: then only strtod's result counts */
    for (size_t i = neg; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d < 10)
            m = m * 10 + d;
        else if (s[i] == '.' && !dot)
            dot = i + 1;
        else
            return NUM_BAD;
    }
    size_t frac = dot ? len - dot : 0, digits = len - neg - (dot != 0);
    if (digits == 0)
        return NUM_BAD;
    if (digits > 19 || m > (UINT64_C(1) << 53) ||
        frac >= sizeof(pow10_exact) / sizeof(pow10_exact[0]))
        return parse_num_slow(s, len, out);
    double v = frac ? (double)m / pow10_exact[frac] : (double)m;
    if (s[0] == '-' && v != 0)
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

/* A string cell, shared with the previous row's when equal: provider,
 * source and notes repeat from row to row, so most rows copy nothing. */
static const char *intern(loader *L, int slot, const char *s, size_t len)
{
    if (L->prev[slot].s && L->prev[slot].len == len && memcmp(L->prev[slot].s, s, len) == 0)
        return L->prev[slot].s;
    const char *p = gpc_cat_arena_strndup(L->a, s, len);
    if (!p)
        return NULL; /* gpc_cat_instance_row reports it */
    L->prev[slot].s = p;
    L->prev[slot].len = len;
    return p;
}

/* [a-z][a-z0-9-]*: the providers gpuctl has and any it may get. */
bool gpc_cat_provider_ok(const char *s, size_t len)
{
    if (len == 0 || len > 32 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || gpc_cat_is_digit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

/* Whether one of the 8 bytes of w is below 0x21 or is 0x7f (bytes of
 * 0x80 and up, UTF-8, are fine): the "has a byte less than n" bit trick. */
static bool word_has_bad(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t del = w ^ (0x7f * ones);
    return (((w - 0x21 * ones) & ~w) | ((del - ones) & ~del)) & highs;
}

/* No white space or control characters: names passed to provider APIs.
 * Eight bytes at a time: this runs on two cells of every row. */
bool gpc_cat_name_ok(const char *s, size_t len)
{
    uint64_t w;
    if (len < 8) {
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
                return false;
        return true;
    }
    for (size_t i = 0; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        if (word_has_bad(w))
            return false;
    }
    memcpy(&w, s + len - 8, 8); /* the last 8 bytes, overlapping */
    return !word_has_bad(w);
}

static const gpc_gpu_info *find_gpu(const gpc_catalog *c, const char *s, size_t len)
{
    /* s has no NUL; len > 0.  The exact spelling first, cheaply, then any case. */
    for (size_t i = 0; i < c->n_gpus; i++) {
        const char *m = c->gpus[i].model;
        if (m[0] == s[0] && strncmp(m, s, len) == 0 && m[len] == '\0')
            return &c->gpus[i];
    }
    for (size_t i = 0; i < c->n_gpus; i++) {
        const char *m = c->gpus[i].model;
        if (strncasecmp(m, s, len) == 0 && m[len] == '\0')
            return &c->gpus[i];
    }
    return NULL;
}

__attribute__((cold, noinline))
static int bad_gpu(reader *r, const char *s, size_t len)
{
    const gpc_catalog *c = ((loader *)r->ctx)->c;
    char known[GPC_ERROR_MSG_MAX / 2], q[SHOW_MAX * 4 + 8];
    size_t o = 0;
    known[0] = '\0';
    for (size_t i = 0; i < c->n_gpus && o < sizeof(known); i++)
        o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", i ? ", " : "",
                              c->gpus[i].model);
    return gpc_cat_cell_fail(r, "gpu_model", "unknown GPU model (got %s); known: %s",
                             gpc_cat_show(s, len, q), known);
}

/* Room for twice the rows: realloc, or new arrays when they were a region
 * of a larger array. */
int gpc_cat_grow_rows(loader *L)
{
    size_t cap = L->cap ? 2 * L->cap : 64;
    if (L->fixed) {
        gpc_catalog_row *rows = malloc(cap * sizeof(*rows));
        uint32_t *tags = malloc(cap * sizeof(*tags));
        if (!rows || !tags) {
            free(rows);
            free(tags);
            return GPC_ERR_NOMEM;
        }
        memcpy(rows, L->rows, L->n_rows * sizeof(*rows));
        memcpy(tags, L->tags, L->n_rows * sizeof(*tags));
        L->rows = rows;
        L->tags = tags;
        L->fixed = false;
    } else {
        gpc_catalog_row *rows = realloc(L->rows, cap * sizeof(*rows));
        if (!rows)
            return GPC_ERR_NOMEM;
        L->rows = rows;
        uint32_t *tags = realloc(L->tags, cap * sizeof(*tags));
        if (!tags)
            return GPC_ERR_NOMEM;
        L->tags = tags;
    }
    L->cap = cap;
    return 0;
}

/* A new row with the defaults of absent columns. */
static int start_row(reader *r, loader *L)
{
    static const gpc_catalog_row blank = {
        .region = "", .gpu_model = "", .price_ondemand = -1, .price_spot = -1,
        .price_ondemand_cny = -1, .price_spot_cny = -1, .source = "", .notes = ""};
    if (L->n_rows >= UINT32_MAX - 1)
        return gpc_fail(&r->pending, r->code, "%s:%u: too many rows", r->name,
                        (unsigned)r->rec_line);
    if (L->n_rows == L->cap && gpc_cat_grow_rows(L))
        return gpc_fail(&r->pending, GPC_ERR_NOMEM, "out of memory");
    L->row = &L->rows[L->n_rows];
    L->key_parts = 0;
    memcpy(L->row, &blank, sizeof(blank));
    L->row->line = r->rec_line;
    return 0;
}

static uint32_t key_hash(const gpc_catalog_row *row, const size_t len[3]);

/* One of the key columns is in; with all three, hash the key for the
 * duplicate check (here, where the lengths are known). */
static void key_part(loader *L, int part, size_t len)
{
    gpc_catalog_row *row = L->row;
    L->key_len[part] = len;
    if (++L->key_parts < 3 || !row->provider || !row->instance_type || !row->region)
        return;
    L->tag = key_hash(row, L->key_len);
}

/* "COLUMN: WHAT (got 'CELL')TAIL" for a cell of column k.  Error paths are
 * kept out of the functions every cell goes through: a message buffer on
 * their stack costs each call a stack-protector check. */
__attribute__((cold, noinline))
static int bad_cell(reader *r, int k, const char *what, const char *s, size_t len,
                    const char *tail)
{
    char q[SHOW_MAX * 4 + 8];
    return gpc_cat_cell_fail(r, gpc_cat_instance_cols[k].name, "%s (got %s)%s", what,
                             gpc_cat_show(s, len, q), tail);
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

__attribute__((cold, noinline))
static int too_large(reader *r, int k, const char *s, size_t len)
{
    char what[64];
    snprintf(what, sizeof(what), "more than %.0f", col_max(k));
    return bad_cell(r, k, what, s, len, "");
}

/* A number cell of column k: 0 .. col_max(k), or `empty` when the cell is. */
static int num_cell(reader *r, int k, const char *s, size_t len, double empty, double *v)
{
    switch (gpc_cat_parse_num(s, len, v)) {
    case NUM_OK:
        /* gpu_count: its own message (convert_cell) */
        return *v > col_max(k) && k != I_GPU_COUNT ? too_large(r, k, s, len) : 0;
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
        if (strncmp(fabric_names[f], s, len) == 0 && fabric_names[f][len] == '\0') {
            row->fabric = (gpc_fabric)f;
            return 0;
        }
    }
    return bad_cell(r, I_FABRIC, "unknown interconnect", s, len,
                    "; one of none, efa, infiniband, erdma, or empty when not known");
}

static int gpu_cell(reader *r, loader *L, gpc_catalog_row *row, const char *s, size_t len)
{
    if (len == 0)
        return 0; /* CPU only: gpu_model "" and gpu NULL */
    const gpc_gpu_info *g = L->prev_gpu;
    if (!g || L->prev_gpu_len != len || memcmp(g->model, s, len) != 0) {
        if (!(g = find_gpu(L->c, s, len)))
            return bad_gpu(r, s, len);
        L->prev_gpu = g;
        L->prev_gpu_len = len;
    }
    /* Rows carry the table's spelling of the model. */
    row->gpu = g;
    row->gpu_model = g->model;
    return 0;
}

/* Column k's cell (s, len bytes, not NUL-terminated) into the row.  A
 * string that cannot be copied is left NULL for gpc_cat_instance_row to report. */
static int convert_cell(reader *r, loader *L, gpc_catalog_row *row, int k, const char *s,
                        size_t len)
{
    double v;
    int rc;
    switch (k) {
    case I_PROVIDER:
        /* Lengths: what a node request carries (provider.h gpc_offer). */
        if (!gpc_cat_provider_ok(s, len) || len > 15)
            return bad_cell(r, k, "not a provider name: a lower-case letter, then letters, "
                            "digits or '-', at most 15", s, len, "");
        if (len == 5 && memcmp(s, "local", 5) == 0)
            return bad_cell(r, k, "the local provider's offer is this machine, which it "
                            "reports itself; the catalog cannot list it", s, len, "");
        row->provider = intern(L, 0, s, len);
        key_part(L, 0, len);
        return 0;
    case I_TYPE:
        if (len == 0 || !gpc_cat_name_ok(s, len))
            return bad_cell(r, k, len ? "white space or a control character" : "empty", s, len,
                            "");
        if (len > 63)
            return bad_cell(r, k, "longer than 63 bytes", s, len, "");
        row->instance_type = gpc_cat_arena_strndup(L->a, s, len);
        key_part(L, 1, len);
        return 0;
    case I_REGION:
        if (!gpc_cat_name_ok(s, len))
            return bad_cell(r, k, "white space or a control character", s, len, "");
        if (len > 47)
            return bad_cell(r, k, "longer than 47 bytes", s, len, "");
        row->region = intern(L, 1, s, len);
        key_part(L, 2, len);
        return 0;
    case I_GPU_MODEL:
        return gpu_cell(r, L, row, s, len);
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
    case I_SOURCE: row->source = intern(L, 2, s, len); return 0;
    case I_NOTES: row->notes = intern(L, 3, s, len); return 0;
    default: return 0;
    }
}

/* libcsv's field callback for the instance table's data records. */
void gpc_cat_instance_field(void *s, size_t len, void *data)
{
    reader *r = data;
    loader *L = r->ctx;
    size_t i = r->n_cells++;
    if (r->rc || r->pending.code || i >= r->ncols)
        return;
    if (i == 0 && start_row(r, L))
        return;
    convert_cell(r, L, L->row, r->col[i], s, len);
}

/* The last n < 8 bytes of a string as one word, with fixed-size loads (a
 * memcpy of a variable size is a library call). */
static uint64_t tail_word(const char *s, size_t n)
{
    uint32_t a, b;
    if (n >= 4) {
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4); /* overlaps a when n < 8 */
        return (uint64_t)a << 32 | b;
    }
    if (n == 0)
        return 0;
    return (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[n / 2] << 8 |
           (unsigned char)s[n - 1];
}

/* Mix n bytes into h, eight at a time (a byte at a time is three times
 * slower on 100,000 rows: each step waits for the previous multiply). */
uint64_t gpc_cat_hash_bytes(uint64_t h, const char *s, size_t n)
{
    uint64_t w;
    h ^= n;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    h = (h ^ tail_word(s, n)) * 0x9e3779b97f4a7c15u;
    return h ^ (h >> 29);
}

/* The slot tag of a row's (provider, instance type, region), of lengths
 * len[]: the high 32 bits of a hash ended by the murmur3 finaliser. */
static uint32_t key_hash(const gpc_catalog_row *row, const size_t len[3])
{
    uint64_t h = 0;
    h = gpc_cat_hash_bytes(h, row->provider, len[0]);
    h = gpc_cat_hash_bytes(h, row->instance_type, len[1]);
    h = gpc_cat_hash_bytes(h, row->region, len[2]);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return (uint32_t)(h >> 32);
}

static bool same_key(const gpc_catalog_row *a, const gpc_catalog_row *b)
{
    return strcmp(a->instance_type, b->instance_type) == 0 && strcmp(a->region, b->region) == 0 &&
           strcmp(a->provider, b->provider) == 0;
}

static int dedup_resize(dedup *d, size_t rows)
{
    size_t n = 1024;
    while (n < 2 * rows)
        n *= 2;
    if (n <= d->n_slots)
        return 0;
    uint64_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return GPC_ERR_NOMEM;
    for (size_t i = 0; i < d->n_slots; i++) {
        size_t j = (size_t)(d->slots[i] >> 32) & (n - 1);
        if (!d->slots[i])
            continue;
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = d->slots[i];
    }
    free(d->slots);
    d->slots = slots;
    d->n_slots = n;
    return 0;
}

/* Rows [from, to) of rows[], tags[] in; `expect`: the rows to make room
 * for in all.  Stops at the first duplicate.  0 or GPC_ERR_NOMEM. */
int gpc_cat_dedup_add(dedup *d, const gpc_catalog_row *rows, const uint32_t *tags, size_t from,
                      size_t to, size_t expect)
{
    if (d->dup != SIZE_MAX)
        return 0;
    if (dedup_resize(d, expect > to ? expect : to))
        return GPC_ERR_NOMEM;
    size_t mask = d->n_slots - 1;
    for (size_t i = from; i < to; i++) {
        if (i + 8 < to)
            __builtin_prefetch(&d->slots[tags[i + 8] & mask]);
        size_t j = tags[i] & mask;
        for (; d->slots[j]; j = (j + 1) & mask) {
            size_t o = (uint32_t)d->slots[j] - 1;
            if ((uint32_t)(d->slots[j] >> 32) == tags[i] && same_key(&rows[o], &rows[i])) {
                d->dup = i;
                d->first = o;
                return 0;
            }
        }
        d->slots[j] = (uint64_t)tags[i] << 32 | (uint32_t)(i + 1);
    }
    d->n = to;
    return 0;
}

/* The end of a record whose cells all converted: whole-row checks. */
int gpc_cat_instance_row(reader *r)
{
    loader *L = r->ctx;
    gpc_catalog_row *row = L->row;
    if (!row->provider || !row->instance_type || !row->region || !row->source || !row->notes)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    if (row->gpu && row->gpu_count == 0)
        return gpc_cat_rfail(r, r->rec_line, "gpu_count", "0 with gpu_model '%s' (at least 1)",
                             row->gpu_model);
    if (!row->gpu && row->gpu_count > 0)
        return gpc_cat_rfail(r, r->rec_line, "gpu_model", "empty with gpu_count %u",
                             (unsigned)row->gpu_count);
    L->tags[L->n_rows++] = L->tag;
    return 0;
}
