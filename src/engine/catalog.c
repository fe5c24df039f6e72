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
 * load_instances.  A file of 256 KiB or more is parsed only once: its
 * rows go to a binary cache file that later loads read instead while the
 * file is unchanged (see "The cache of parsed instance tables").
 *
 * Every message has the form "NAME:LINE: [column: ]what is wrong".
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csv.h>
#include <zlib.h>
#include <pthread.h>

#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/embedded.h"
#include "gpuctl/util.h"

#define SHOW_MAX 48             /* bytes of a cell quoted in a message */
#define ARENA_BLOCK (256u << 10)
#define NUM_TEXT_MAX 512        /* longest number cell (fixed notation of huge values) */
#define BUILTIN_ORIGIN "built-in"

/* libcsv.c's parser state between records (ROW_NOT_BEGUN); csv_init sets it.
 * The state is a public member of struct csv_parser. */
#define LIBCSV_ROW_NOT_BEGUN 0

/* ------------------------------------------------------------------ */
/* Arena: strings in big blocks that never move.                      */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct arena {
    arena_block *head;
} arena;

static void *arena_alloc(arena *a, size_t n)
{
    arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        /* A string bigger than a quarter block gets a block of its own, put
         * behind the current one so the current one keeps filling. */
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        arena_block *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && cap != ARENA_BLOCK) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

/* A NUL-terminated copy of n bytes; "" is not copied. */
static const char *arena_strndup(arena *a, const char *s, size_t n)
{
    if (n == 0)
        return "";
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Move src's blocks into dst, behind dst's current block. */
static void arena_take(arena *dst, arena *src)
{
    while (src->head) {
        arena_block *b = src->head;
        src->head = b->next;
        if (dst->head) {
            b->next = dst->head->next;
            dst->head->next = b;
        } else {
            b->next = NULL;
            dst->head = b;
        }
    }
}

static void arena_free(arena *a)
{
    while (a->head) {
        arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ------------------------------------------------------------------ */
/* Small helpers.                                                     */

/* Ask for 2 MiB pages under the 2 MiB-aligned part of a large buffer: the
 * 12 MB file and rows of a 100,000-row catalog otherwise cost ~3,000 page
 * faults each, which is about 3 ms each here.  Advice only. */
static void advise_huge(void *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t to = ((uintptr_t)p + n) & ~(huge - 1);
    if (n >= 4 * huge && to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* 'text' for messages: at most SHOW_MAX bytes (cut on a UTF-8 boundary),
 * control characters escaped so a message stays one readable line. */
static const char *show(const char *s, size_t len, char buf[SHOW_MAX * 4 + 8])
{
    bool cut = len > SHOW_MAX;
    if (cut) {
        len = SHOW_MAX;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n' || c == '\r' || c == '\t') {
            buf[o++] = '\\';
            buf[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    if (cut) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}


typedef enum num_rc { NUM_OK, NUM_EMPTY, NUM_BAD, NUM_NEGATIVE } num_rc;

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
/* parse_num's rare case: many digits or decimals (syntax already checked). */
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

static num_rc parse_num(const char *s, size_t len, double *out)
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

/*
 * The shortest text that parse_num reads back as exactly v: "%.15g" is
 * exact for any decimal of up to 15 significant digits (every value read
 * from a catalog), else 16 or 17 digits.  parse_num takes no exponent, so
 * very small or large values are written in fixed notation.
 */
static void format_num(double v, char *buf, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strchr(buf, 'e'))
        return;
    for (int prec = 0; prec < 400; prec++) {
        snprintf(buf, n, "%.*f", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ------------------------------------------------------------------ */
/* The CSV reader.                                                    */

typedef struct col_def {
    const char *name;
    bool required;
    bool ignored;  /* known, but not used */
} col_def;

typedef struct cell {
    size_t off, len;  /* into reader.buf; the bytes are NUL-terminated */
} cell;

typedef struct reader reader;
typedef int (*row_fn)(reader *r);
typedef void (*field_fn)(void *s, size_t len, void *data);

struct reader {
    const char *name;      /* names the data in messages */
    gpc_code code;         /* of content errors: SPEC, or INTERNAL for built-in data */
    gpc_error *err;
    int rc;                /* first failure; once set, callbacks do nothing */
    const col_def *defs;   /* the table's known columns */
    size_t n_defs;
    int *col;              /* column (index into defs) of each header cell */
    int *cell_of;          /* header cell of each column, -1 when absent */
    size_t ncols;          /* cells in the header; 0 until it has been read */
    row_fn on_row;
    /* Set for the instance table: libcsv's field callback for the data
     * records, which converts each cell as it comes, without a copy.  A
     * cell's error (cell_fail) waits in `pending` for the end of the
     * record: when the record has the wrong number of cells, that is the
     * message to give. */
    field_fn on_cell;
    gpc_error pending;
    void *ctx;
    uint32_t line;         /* physical line being fed, 1-based */
    uint32_t rec_line;     /* line the current record began on */
    uint32_t fail_line;    /* the line rc's error is about; 0: none (out of memory) */
    char *buf;             /* the current record's cell bytes */
    size_t buf_len, buf_cap;
    cell *cells;
    size_t n_cells, cells_cap;
};

static int rfail(reader *r, uint32_t line, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int rfail(reader *r, uint32_t line, const char *column, const char *fmt, ...)
{
    char msg[GPC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!r->err->code)
        r->fail_line = line;
    return gpc_fail(r->err, r->code, "%s:%u: %s%s%s", r->name, (unsigned)line,
                    column ? column : "", column ? ": " : "", msg);
}

static int cell_fail(reader *r, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error in a cell of the current record, held until its end. */
static int cell_fail(reader *r, const char *column, const char *fmt, ...)
{
    char msg[GPC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gpc_fail(&r->pending, r->code, "%s:%u: %s: %s", r->name, (unsigned)r->rec_line,
                    column, msg);
}

/* A message held in `pending` becomes the reader's error. */
static int rfail_as(reader *r, gpc_code code, const char *msg)
{
    if (!r->err->code)
        r->fail_line = code == GPC_ERR_NOMEM ? 0 : r->rec_line;
    return gpc_fail(r->err, code, "%s", msg);
}

static const char *cell_text(const reader *r, size_t i) { return r->buf + r->cells[i].off; }

/* The column name of header cell i, or NULL past the header. */
static const char *cell_column(const reader *r, size_t i)
{
    return i < r->ncols && r->col[i] >= 0 ? r->defs[r->col[i]].name : NULL;
}

/* libcsv's field callback for a record kept whole: the header, and the
 * rows of gpus.csv and sources.csv. */
static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->rc)
        return;
    if (r->on_cell && r->ncols) { /* a record began on the header's line */
        r->on_cell(s, len, data);
        return;
    }
    if (r->n_cells == r->cells_cap) {
        size_t cap = r->cells_cap ? 2 * r->cells_cap : 32;
        cell *p = realloc(r->cells, cap * sizeof(*p));
        if (!p) {
            r->rc = gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
            return;
        }
        r->cells = p;
        r->cells_cap = cap;
    }
    if (r->buf_cap - r->buf_len < len + 1) {
        size_t cap = r->buf_cap ? r->buf_cap : 1024;
        while (cap - r->buf_len < len + 1)
            cap *= 2;
        char *p = realloc(r->buf, cap);
        if (!p) {
            r->rc = gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
            return;
        }
        r->buf = p;
        r->buf_cap = cap;
    }
    if (len)
        memcpy(r->buf + r->buf_len, s, len);
    r->buf[r->buf_len + len] = '\0';
    r->cells[r->n_cells++] = (cell){r->buf_len, len};
    r->buf_len += len + 1;
}

static int read_header(reader *r)
{
    r->col = malloc(r->n_cells * sizeof(*r->col));
    r->cell_of = malloc(r->n_defs * sizeof(*r->cell_of));
    if (!r->col || !r->cell_of)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < r->n_defs; k++)
        r->cell_of[k] = -1;
    for (size_t i = 0; i < r->n_cells; i++) {
        const char *name = cell_text(r, i);
        char q[SHOW_MAX * 4 + 8];
        size_t k = 0;
        while (k < r->n_defs && strcmp(r->defs[k].name, name) != 0)
            k++;
        if (k == r->n_defs) {
            if (!*name)
                return rfail(r, r->rec_line, NULL, "column %zu has no name", i + 1);
            /* The closest known name within 2 edits (1 for short names). */
            size_t limit = strlen(name) <= 4 ? 1 : 2, best_d = SIZE_MAX, best = 0;
            for (size_t j = 0; j < r->n_defs; j++) {
                size_t d = gpc_edit_distance(name, r->defs[j].name);
                if (d < best_d) {
                    best_d = d;
                    best = j;
                }
            }
            if (best_d <= limit)
                return rfail(r, r->rec_line, NULL, "unknown column %s (did you mean '%s'?)",
                             show(name, r->cells[i].len, q), r->defs[best].name);
            char known[GPC_ERROR_MSG_MAX / 2];
            size_t o = 0;
            for (size_t j = 0; j < r->n_defs && o < sizeof(known); j++)
                o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", j ? ", " : "",
                                      r->defs[j].name);
            return rfail(r, r->rec_line, NULL, "unknown column %s; known: %s",
                         show(name, r->cells[i].len, q), known);
        }
        if (r->cell_of[k] >= 0)
            return rfail(r, r->rec_line, NULL, "duplicate column '%s' (columns %d and %zu)",
                         r->defs[k].name, r->cell_of[k] + 1, i + 1);
        r->cell_of[k] = (int)i;
        r->col[i] = r->defs[k].ignored ? -1 : (int)k;
    }
    for (size_t k = 0; k < r->n_defs; k++)
        if (r->defs[k].required && r->cell_of[k] < 0)
            return rfail(r, r->rec_line, NULL, "missing column '%s'", r->defs[k].name);
    r->ncols = r->n_cells;
    return 0;
}

static void on_record(int c, void *data)
{
    reader *r = data;
    (void)c;
    if (!r->rc) {
        if (!r->ncols)
            r->rc = read_header(r);
        else if (r->n_cells != r->ncols)
            r->rc = rfail(r, r->rec_line, NULL, "%zu cell%s where the header has %zu",
                          r->n_cells, r->n_cells == 1 ? "" : "s", r->ncols);
        else if (r->pending.code)
            r->rc = rfail_as(r, r->pending.code, r->pending.msg);
        else
            r->rc = r->on_row(r);
    }
    if (r->pending.code)
        gpc_error_clear(&r->pending);
    r->n_cells = 0;
    r->buf_len = 0;
    /* The next record starts on this line at the earliest (after a lone CR,
     * which libcsv also takes for a line end, it starts on this very line). */
    r->rec_line = r->line;
}

/* libcsv stopped early on line r->line: bad quoting (strict mode) or memory. */
static int parse_error(reader *r, struct csv_parser *p)
{
    int status = csv_error(p);
    if (status == CSV_ENOMEM || status == CSV_ETOOBIG)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "%s:%u: out of memory", r->name,
                        (unsigned)r->line);
    return rfail(r, r->line, cell_column(r, r->n_cells),
                 "bad quoting: a '\"' inside an unquoted cell, or text after a closing '\"' (%s)",
                 csv_strerror(status));
}

/* libcsv, and the part of the data it has yet to read. */
typedef struct feeder {
    struct csv_parser p;
    const char *pos, *end;
} feeder;

static int feeder_init(reader *r, feeder *f, const char *pos, const char *end)
{
    if (csv_init(&f->p, CSV_STRICT | CSV_STRICT_FINI) != 0)
        return r->rc = gpc_fail(r->err, GPC_ERR_INTERNAL, "csv_init failed");
    csv_set_blk_size(&f->p, 4096);
    f->pos = pos;
    f->end = end;
    return 0;
}

/*
 * Feed the data to libcsv, one physical line (up to and with its '\n') per
 * call, until it ends, fails, or (header_only) the header has been read.
 * A record that begins while the parser is between records begins on the
 * line fed, so every record knows its first line even when a quoted cell
 * holds newlines.
 */
static int feed(reader *r, feeder *f, bool header_only)
{
    while (f->pos < f->end && !r->rc && !(header_only && r->ncols)) {
        const char *nl = memchr(f->pos, '\n', (size_t)(f->end - f->pos));
        size_t n = nl ? (size_t)(nl + 1 - f->pos) : (size_t)(f->end - f->pos);
        r->line++;
        if (f->p.pstate == LIBCSV_ROW_NOT_BEGUN)
            r->rec_line = r->line;
        field_fn cb = r->on_cell && r->ncols ? r->on_cell : on_field;
        if (csv_parse(&f->p, f->pos, n, cb, on_record, r) != n && !r->rc)
            r->rc = parse_error(r, &f->p);
        f->pos += n;
    }
    return r->rc;
}

/* The end of the data: the last record when no line end follows it. */
static int feed_end(reader *r, feeder *f)
{
    field_fn cb = r->on_cell && r->ncols ? r->on_cell : on_field;
    if (!r->rc && csv_fini(&f->p, cb, on_record, r) != 0 && !r->rc)
        r->rc = rfail(r, r->rec_line, cell_column(r, r->n_cells),
                      "unterminated quoted cell (no closing '\"' before the end of the data)");
    csv_free(&f->p);
    if (!r->rc && !r->ncols)
        r->rc = rfail(r, 1, NULL, "no header row (the data is empty)");
    return r->rc;
}

/* Skip a UTF-8 byte order mark (a spreadsheet's, not part of the first
 * column's name) and refuse a NUL byte: C strings end there. */
static int check_bytes(reader *r, const char **csv, size_t *len)
{
    if (*len >= 3 && memcmp(*csv, "\xEF\xBB\xBF", 3) == 0) {
        *csv += 3;
        *len -= 3;
    }
    const char *nul = memchr(*csv, '\0', *len);
    if (!nul)
        return 0;
    uint32_t line = 1;
    for (const char *q = *csv; (q = memchr(q, '\n', (size_t)(nul - q))); q++)
        line++;
    return r->rc = rfail(r, line, NULL, "a NUL byte in the data");
}

/* Parse csv[0..len) as one table. */
static int read_table(reader *r, const char *csv, size_t len)
{
    feeder f;
    r->line = 0;
    r->rec_line = 1;
    if (check_bytes(r, &csv, &len) || feeder_init(r, &f, csv, csv + len))
        return r->rc;
    feed(r, &f, false);
    return feed_end(r, &f);
}

static void reader_free(reader *r)
{
    free(r->col);
    free(r->cell_of);
    free(r->buf);
    free(r->cells);
}

/* The text and length of column k in the current record ("" when absent). */
static const char *col_text(const reader *r, int k, size_t *len)
{
    int i = r->cell_of[k];
    *len = i >= 0 ? r->cells[i].len : 0;
    return i >= 0 ? cell_text(r, (size_t)i) : "";
}

/* A non-negative number of column k; empty -> dflt. */
static int col_num(reader *r, int k, double dflt, double *out)
{
    size_t len;
    const char *s = col_text(r, k, &len);
    char q[SHOW_MAX * 4 + 8];
    switch (parse_num(s, len, out)) {
    case NUM_OK:
        return 0;
    case NUM_EMPTY:
        *out = dflt;
        return 0;
    case NUM_NEGATIVE:
        return rfail(r, r->rec_line, r->defs[k].name, "negative number (got %s)", show(s, len, q));
    default:
        return rfail(r, r->rec_line, r->defs[k].name, "not a number (got %s)", show(s, len, q));
    }
}

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

typedef struct loader {
    gpc_catalog *c;       /* gpus/sources being filled; for rows, the GPU table */
    arena *a;
    size_t cap;           /* of the array being filled */
    /* instance table: the rows read, with the key_hash of each; `fixed`:
     * they are a region of a larger array (see load_instances), which a
     * part leaves for arrays of its own when the region is full */
    gpc_catalog_row *rows;
    uint32_t *tags;
    size_t n_rows;
    bool fixed;
    gpc_catalog_row *row; /* the row being read */
    int key_parts;        /* of provider, instance type, region: how many it has */
    size_t key_len[3];    /* their lengths */
    uint32_t tag;         /* key_hash of the row once key_parts is 3 */
    /* instance table: the previous row's strings, reused when equal */
    struct {
        const char *s;
        size_t len;
    } prev[4];
    const gpc_gpu_info *prev_gpu;
    size_t prev_gpu_len;
} loader;

static const char *col_str(reader *r, int k)
{
    loader *L = r->ctx;
    size_t len;
    const char *s = col_text(r, k, &len);
    const char *p = arena_strndup(L->a, s, len);
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
    col_text(r, G_MODEL, &len);
    if (len == 0)
        return rfail(r, r->rec_line, "gpu_model", "empty");
    if (!(g->model = col_str(r, G_MODEL)) || !(g->source = col_str(r, G_SOURCE)))
        return GPC_ERR_NOMEM;
    int rc;
    if ((rc = col_num(r, G_MEM, 0, &g->memory_gib)) ||
        (rc = col_num(r, G_BF16, 0, &g->bf16_tflops_dense)) ||
        (rc = col_num(r, G_FP16, 0, &g->fp16_tflops_dense)) ||
        (rc = col_num(r, G_FP32, 0, &g->fp32_tflops)))
        return rc;
    for (size_t i = 0; i < c->n_gpus; i++)
        if (strcasecmp(c->gpus[i].model, g->model) == 0)
            return rfail(r, r->rec_line, "gpu_model", "duplicate model '%s'", g->model);
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
        return rfail(r, r->rec_line, "key", "empty");
    /* Empty currency and rate: a source of specs only, with no prices. */
    if (strcmp(s->currency, "USD") != 0 && strcmp(s->currency, "CNY") != 0 && *s->currency)
        return rfail(r, r->rec_line, "currency", "not USD or CNY (got '%s')", s->currency);
    int rc = col_num(r, S_RATE, 0, &s->usd_per_unit);
    if (rc)
        return rc;
    if (gpc_catalog_source_get(c, s->key))
        return rfail(r, r->rec_line, "key", "duplicate key '%s'", s->key);
    c->n_sources++;
    return 0;
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
    int rc = read_table(&r, f->data, f->len);
    reader_free(&r);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The instance table.                                                */

enum {
    I_PROVIDER, I_TYPE, I_REGION, I_GPU_MODEL, I_GPU_COUNT, I_GPU_MEM, I_VCPUS, I_MEM,
    I_FABRIC, I_FABRIC_GBPS, I_OD, I_SPOT, I_OD_CNY, I_SPOT_CNY, I_SOURCE, I_NOTES, I_COUNT
};
/* In the order gpc_catalog_write_csv writes them. */
static const col_def instance_cols[I_COUNT] = {
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

/* The cell as written in the CSV: "" for GPC_FABRIC_UNKNOWN. */
static const char *fabric_cell(gpc_fabric f)
{
    return f == GPC_FABRIC_UNKNOWN ? "" : gpc_fabric_name(f);
}

/* A string cell, shared with the previous row's when equal: provider,
 * source and notes repeat from row to row, so most rows copy nothing. */
static const char *intern(loader *L, int slot, const char *s, size_t len)
{
    if (L->prev[slot].s && L->prev[slot].len == len && memcmp(L->prev[slot].s, s, len) == 0)
        return L->prev[slot].s;
    const char *p = arena_strndup(L->a, s, len);
    if (!p)
        return NULL; /* instance_row reports it */
    L->prev[slot].s = p;
    L->prev[slot].len = len;
    return p;
}

/* [a-z][a-z0-9-]*: the providers gpuctl has and any it may get. */
static bool provider_ok(const char *s, size_t len)
{
    if (len == 0 || len > 32 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || is_digit((unsigned char)s[i]) || s[i] == '-'))
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
static bool name_ok(const char *s, size_t len)
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
    return cell_fail(r, "gpu_model", "unknown GPU model (got %s); known: %s", show(s, len, q),
                     known);
}

/* Room for twice the rows: realloc, or new arrays when they were a region
 * of a larger array. */
static int grow_rows(loader *L)
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
    if (L->n_rows == L->cap && grow_rows(L))
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
    return cell_fail(r, instance_cols[k].name, "%s (got %s)%s", what, show(s, len, q), tail);
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
    switch (parse_num(s, len, v)) {
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
 * string that cannot be copied is left NULL for instance_row to report. */
static int convert_cell(reader *r, loader *L, gpc_catalog_row *row, int k, const char *s,
                        size_t len)
{
    double v;
    int rc;
    switch (k) {
    case I_PROVIDER:
        /* Lengths: what a node request carries (provider.h gpc_offer). */
        if (!provider_ok(s, len) || len > 15)
            return bad_cell(r, k, "not a provider name: a lower-case letter, then letters, "
                            "digits or '-', at most 15", s, len, "");
        if (len == 5 && memcmp(s, "local", 5) == 0)
            return bad_cell(r, k, "the local provider's offer is this machine, which it "
                            "reports itself; the catalog cannot list it", s, len, "");
        row->provider = intern(L, 0, s, len);
        key_part(L, 0, len);
        return 0;
    case I_TYPE:
        if (len == 0 || !name_ok(s, len))
            return bad_cell(r, k, len ? "white space or a control character" : "empty", s, len,
                            "");
        if (len > 63)
            return bad_cell(r, k, "longer than 63 bytes", s, len, "");
        row->instance_type = arena_strndup(L->a, s, len);
        key_part(L, 1, len);
        return 0;
    case I_REGION:
        if (!name_ok(s, len))
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
static void instance_field(void *s, size_t len, void *data)
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
static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
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
    h = hash_bytes(h, row->provider, len[0]);
    h = hash_bytes(h, row->instance_type, len[1]);
    h = hash_bytes(h, row->region, len[2]);
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

/*
 * The duplicate check: rows go in, in order, until one has the key of an
 * earlier one.  Open addressing, at most half full; a slot holds a row's
 * tag (high 32 bits) and its index + 1 (low 32 bits, never 0 when used).
 * On 100,000 rows nearly every probe misses the cache, so the slot of the
 * row 8 ahead is prefetched.
 */
typedef struct dedup {
    uint64_t *slots;
    size_t n_slots, n;
    size_t dup, first;    /* the repeating row and the one it repeats; dup SIZE_MAX: none */
} dedup;

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
static int dedup_add(dedup *d, const gpc_catalog_row *rows, const uint32_t *tags, size_t from,
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
static int instance_row(reader *r)
{
    loader *L = r->ctx;
    gpc_catalog_row *row = L->row;
    if (!row->provider || !row->instance_type || !row->region || !row->source || !row->notes)
        return gpc_fail(r->err, GPC_ERR_NOMEM, "out of memory");
    if (row->gpu && row->gpu_count == 0)
        return rfail(r, r->rec_line, "gpu_count", "0 with gpu_model '%s' (at least 1)",
                     row->gpu_model);
    if (!row->gpu && row->gpu_count > 0)
        return rfail(r, r->rec_line, "gpu_model", "empty with gpu_count %u",
                     (unsigned)row->gpu_count);
    L->tags[L->n_rows++] = L->tag;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Reading the instance table in two parts, on two threads.           */

/* Below this many bytes (about 8,000 rows) one thread reads the table.
 * GPUCTL_CATALOG_PARALLEL_MIN (bytes) overrides it, for the tests. */
#define PARALLEL_MIN ((size_t)1 << 20)

/*
 * One thread's share of the instance table: part A is read by the calling
 * thread from the start (the header included), part B by a second thread
 * from a line end near the middle, with the header A read.  Each has its
 * own reader, rows, strings and error, so the threads share nothing but
 * the (read-only) data and GPU table.  The pads keep the two parts' busy
 * fields off one cache line.
 */
typedef struct part {
    char pad0[64];
    reader r;
    loader L;
    arena a;              /* B's strings (A's go straight into the catalog's) */
    gpc_error err;
    const char *csv;      /* B: all the data, where B's rows start, and the */
    size_t len, from;     /*    lines before that */
    uint32_t lines_before;
    const char *raw;      /* B: the bytes to hash into *sha after reading */
    size_t raw_len;
    char *sha;
    char pad1[64];
} part;

static size_t count_byte(const char *s, size_t n, char c)
{
    size_t k = 0;
    for (const char *end = s + n; (s = memchr(s, c, (size_t)(end - s))); s++)
        k++;
    return k;
}

/*
 * Where part B may start: just after a '\n' that ends a record, i.e. with
 * an even number of '"' before it (in CSV that libcsv's strict mode takes,
 * every '"' opens or closes a quoted cell or is one of a doubled pair).
 * Part B gets the last 46%: its thread also hashes the data, while part
 * A's puts its rows in the duplicate check.  0 = one part.
 */
static size_t find_split(const char *csv, size_t len)
{
    size_t min = PARALLEL_MIN;
    const char *env = getenv("GPUCTL_CATALOG_PARALLEL_MIN");
    if (env && *env)
        min = (size_t)strtoull(env, NULL, 10);
    if (len < min || len < 2)
        return 0;
    size_t at = len / 100 * 54;
    size_t quotes = count_byte(csv, at, '"');
    for (const char *p = csv + at, *end = csv + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return 0;
        quotes += count_byte(p, (size_t)(nl - p), '"');
        p = nl + 1;
        if (quotes % 2 == 0)
            return p < end ? (size_t)(p - csv) : 0;
    }
    return 0;
}

/* Part B: its rows, then the hash of all the data. */
static void *part_main(void *arg)
{
    part *b = arg;
    reader *r = &b->r;
    feeder f;
    r->line = b->lines_before;
    r->rec_line = r->line + 1;
    if (!feeder_init(r, &f, b->csv + b->from, b->csv + b->len)) {
        feed(r, &f, false);
        feed_end(r, &f);
    }
    gpc_sha256_hex(b->raw, b->raw_len, b->sha);
    return NULL;
}

static part *part_new(gpc_catalog *c, arena *a, const char *name, gpc_code code)
{
    part *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->L = (loader){.c = c, .a = a ? a : &p->a};
    p->r = (reader){.name = name, .code = code, .err = &p->err, .defs = instance_cols,
                    .n_defs = I_COUNT, .on_row = instance_row, .on_cell = instance_field,
                    .ctx = &p->L};
    return p;
}

static void part_free(part *p)
{
    if (!p)
        return;
    reader_free(&p->r);
    if (!p->L.fixed) {
        free(p->L.rows);
        free(p->L.tags);
    }
    arena_free(&p->a);
    free(p);
}

/* Part B with part A's header; NULL when memory runs out. */
static part *part_b(const part *a, gpc_catalog *c, const char *csv, size_t len, size_t from,
                    uint32_t lines_before, const char *raw, size_t raw_len)
{
    part *b = part_new(c, NULL, a->r.name, a->r.code);
    if (!b)
        return NULL;
    b->r.ncols = a->r.ncols;
    b->r.col = malloc(a->r.ncols * sizeof(*b->r.col));
    b->r.cell_of = malloc(I_COUNT * sizeof(*b->r.cell_of));
    if (!b->r.col || !b->r.cell_of) {
        part_free(b);
        return NULL;
    }
    memcpy(b->r.col, a->r.col, a->r.ncols * sizeof(*b->r.col));
    memcpy(b->r.cell_of, a->r.cell_of, I_COUNT * sizeof(*b->r.cell_of));
    b->csv = csv;
    b->len = len;
    b->from = from;
    b->lines_before = lines_before;
    b->raw = raw;
    b->raw_len = raw_len;
    b->sha = c->sha256;
    return b;
}

__attribute__((cold, noinline))
static int duplicate_error(gpc_error *err, const part *a, const gpc_catalog_row *row,
                           const gpc_catalog_row *first)
{
    char q1[SHOW_MAX * 4 + 8], q2[SHOW_MAX * 4 + 8], q3[SHOW_MAX * 4 + 8];
    return gpc_fail(err, a->r.code,
                    "%s:%u: duplicate row for provider %s, instance_type %s, region %s "
                    "(first on line %u)",
                    a->r.name, (unsigned)row->line,
                    show(row->provider, strlen(row->provider), q1),
                    show(row->instance_type, strlen(row->instance_type), q2),
                    show(row->region, strlen(row->region), q3), (unsigned)first->line);
}

/*
 * All rows in one array, in order: `all` (of `all_cap` rows), where part A
 * filled the start and part B a region from `base` on, when both stayed in
 * their regions (B's rows move down when A left some of its region empty);
 * else A's own array with B's rows copied after.  *n gets the count.
 */
static gpc_catalog_row *gather_rows(part *a, part *b, gpc_catalog_row *all, uint32_t *all_tags,
                                    size_t base, size_t *n, uint32_t **tags)
{
    loader *A = &a->L, *B = &b->L;
    *n = A->n_rows + B->n_rows;
    if (A->fixed && B->fixed) {
        memmove(all + A->n_rows, all + base, B->n_rows * sizeof(*all));
        memmove(all_tags + A->n_rows, all_tags + base, B->n_rows * sizeof(*all_tags));
        *tags = all_tags;
        return all;
    }
    if (A->fixed && grow_rows(A)) /* A's rows out of `all` */
        return NULL;
    gpc_catalog_row *rows = realloc(A->rows, *n * sizeof(*rows));
    if (!rows)
        return NULL;
    A->rows = rows;
    uint32_t *t = realloc(A->tags, *n * sizeof(*t));
    if (!t)
        return NULL;
    A->tags = t;
    memcpy(rows + A->n_rows, B->rows, B->n_rows * sizeof(*rows));
    memcpy(t + A->n_rows, B->tags, B->n_rows * sizeof(*t));
    A->n_rows = *n;
    *tags = t;
    return rows;
}

/*
 * The parts' rows into the catalog, and the duplicate check (A's rows are
 * in `d` already when b is set).  A part stops at its first error, so the
 * rows it read all lie before it; the error reported is the one on the
 * earliest line, as if one thread had read the table (out of memory,
 * line 0, first of all).
 */
static int join_parts(gpc_catalog *c, part *a, part *b, dedup *d, gpc_catalog_row *all,
                      uint32_t *all_tags, size_t base, gpc_error *err)
{
    const gpc_error *e = a->err.code ? &a->err : NULL;
    uint32_t e_line = e ? a->r.fail_line : UINT32_MAX;
    if (b && b->err.code && (!e || b->r.fail_line < e_line)) {
        e = &b->err;
        e_line = b->r.fail_line;
    }
    if (e && e_line == 0)
        return gpc_fail(err, e->code, "%s", e->msg);
    gpc_catalog_row *rows = a->L.rows;
    uint32_t *tags = a->L.tags;
    size_t n = a->L.n_rows;
    if (b && !a->err.code && d->dup == SIZE_MAX) { /* B's rows count */
        rows = gather_rows(a, b, all, all_tags, base, &n, &tags);
        if (!rows)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    if (dedup_add(d, rows, tags, d->n, n, n))
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (d->dup != SIZE_MAX && rows[d->dup].line < e_line)
        return duplicate_error(err, a, &rows[d->dup], &rows[d->first]);
    if (e)
        return gpc_fail(err, e->code, "%s", e->msg);
    c->rows = rows;
    c->n_rows = n;
    return 0;
}

/*
 * The instance table `raw` into c, and the hash of its bytes.
 *
 * Data of PARALLEL_MIN bytes or more is read in two parts on two threads
 * (libcsv alone takes ~2.5 ns a byte on the test machine: more than a
 * 100,000-row file may take in all).  Part B's thread also hashes, and
 * part A, done first, puts its rows in the duplicate check meanwhile.  The
 * rows of both go into one array: A's at the start, in a region of as
 * many rows as A has data lines, and B's after it, in a region of the most
 * rows B's bytes can hold (a row is at least 12 bytes and a line end), so
 * that usually the array is the catalog's as it is.  Without a second
 * thread, part B is read after part A.
 */
static int load_instances(gpc_catalog *c, const char *name, gpc_code code, const char *raw,
                          size_t raw_len, gpc_error *err)
{
    const char *csv = raw;
    size_t len = raw_len, base = 0;
    part *a = part_new(c, c->priv, name, code), *b = NULL;
    dedup d = {.dup = SIZE_MAX};
    gpc_catalog_row *all = NULL;
    uint32_t *all_tags = NULL;
    if (!a)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    feeder f;
    int rc = check_bytes(&a->r, &csv, &len);
    size_t split = rc ? 0 : find_split(csv, len);
    bool threaded = false;
    int nomem = 0;
    pthread_t th;
    if (!rc && !feeder_init(&a->r, &f, csv, csv + (split ? split : len))) {
        feed(&a->r, &f, true); /* the header */
        /* Two parts when the header has been read and nothing else yet
         * (after a header ended by a lone CR, a row may follow on its line). */
        if (split && !a->r.rc && a->r.ncols && !a->L.n_rows && !a->r.n_cells &&
            f.p.pstate == LIBCSV_ROW_NOT_BEGUN) {
            uint32_t lines_a = (uint32_t)count_byte(csv, split, '\n');
            base = lines_a - a->r.line;
            size_t cap_b = (len - split) / 12 + 1;
            all = malloc((base + cap_b) * sizeof(*all));
            all_tags = malloc((base + cap_b) * sizeof(*all_tags));
            if (all) /* the part rows will fill: cap_b is an upper bound */
                advise_huge(all, (size_t)(base + (len - split) / 64) * sizeof(*all));
            if (all && all_tags)
                b = part_b(a, c, csv, len, split, lines_a, raw, raw_len);
            if (b) {
                a->L = (loader){.c = c, .a = c->priv, .rows = all, .tags = all_tags,
                                .cap = base, .fixed = true};
                b->L.rows = all + base;
                b->L.tags = all_tags + base;
                b->L.cap = cap_b;
                b->L.fixed = true;
            }
        }
        if (b)
            threaded = pthread_create(&th, NULL, part_main, b) == 0;
        else
            f.end = csv + len; /* one part */
        feed(&a->r, &f, false);
        feed_end(&a->r, &f);
        if (b) /* while B reads: A's rows in the check, room for B's guessed */
            nomem = dedup_add(&d, a->L.rows, a->L.tags, 0, a->L.n_rows,
                              a->L.n_rows + a->L.n_rows * (len - split) / split + 64);
    }
    if (b && threaded)
        pthread_join(th, NULL);
    else if (b)
        part_main(b);
    else
        gpc_sha256_hex(raw, raw_len, c->sha256);
    rc = nomem ? gpc_fail(err, GPC_ERR_NOMEM, "out of memory")
               : join_parts(c, a, b, &d, all, all_tags, base, err);
    if (!rc && c->rows == all) /* the rows are the catalog's now */
        all = NULL;
    else if (!rc && c->rows == a->L.rows)
        a->L.rows = NULL;
    if (b) /* B's strings are the catalog's now (and are freed with it) */
        arena_take(c->priv, &b->a);
    free(all);
    free(all_tags);
    free(d.slots);
    part_free(a);
    part_free(b);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Loading.                                                           */

static arena *cat_arena(const gpc_catalog *c) { return c->priv; }

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
        rc = load_instances(c, name, code, csv, len, err);
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
    if (!(c->origin = arena_strndup(a, origin, strlen(origin))))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (!rc)
        rc = load_builtin_table(&L, "gpus.csv", gpu_cols, sizeof(gpu_cols) / sizeof(gpu_cols[0]),
                                gpu_row, err);
    if (!rc)
        rc = load_builtin_table(&L, "sources.csv", source_cols,
                                sizeof(source_cols) / sizeof(source_cols[0]), source_row, err);
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
        advise_huge(buf, cap);
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

/* ------------------------------------------------------------------ */
/* The cache of parsed instance tables.                               */

/*
 * A file of GPC_CATALOG_CACHE_MIN_BYTES or more read by
 * gpc_catalog_load_file is parsed once; its rows are kept in a binary file
 * in the cache directory (see catalog.h), named by the SHA-256 of the
 * CSV's realpath, and later loads read that file (one read(), no parse, no
 * hash of the CSV) while the CSV's identity (device, inode, size, mtime,
 * ctime) is the one the cache recorded.  Same machine, same build: the
 * header pins the byte order, the double format, the sizes of its structs
 * and a fingerprint of this build (format, version, built-in GPU and
 * source tables: rows name GPUs by their index in the built-in table).
 *
 * The file: cache_header, then n_rows cache_rows, then the string blob
 * (every string NUL-terminated; offset 0 is "").  Nothing of it is trusted:
 * the header's sizes must add up to the file's length, the CRC-32
 * checksum (cache_checksum: of the header up to the checksum and of
 * everything after it) must match, and every row is checked (offsets
 * inside the blob, which ends with a NUL; GPU index, enum and counts in
 * range; numbers and names as a parse gives them: what a CSV cell may hold,
 * catalog.h's ranges; not the duplicate check) before a pointer is made.  Any
 * doubt means a parse, as without a cache, and a new cache file.
 *
 * The accepted edge: a rewrite of the CSV that keeps its size, its inode
 * and its mtime and ctime to the nanosecond (a second write within one
 * tick of the file system's clock: ctime changes on every write, and on
 * chmod, rename and utimensat too) is not seen; the cache's rows stay in
 * effect until the CSV's identity changes.
 */

#define CACHE_MAGIC "GPCCACHE"
#define CACHE_VERSION 2u  /* 2: zlib CRC-32 checksum */
#define CACHE_ENDIAN 0x01020304u
#define CACHE_PROBE (-1234.5678)
#ifndef GPUCTL_VERSION
#define GPUCTL_VERSION "0.0.0"
#endif
/* Goes into the fingerprint: change it with any change to the file format
 * or to what a row's fields mean. */
#define CACHE_FORMAT                                                                    \
    "gpuctl catalog cache, format 1 (header 240 bytes, rows 104 bytes, string blob), " \
    "gpuctl " GPUCTL_VERSION
/* The most a cache file may be: rows of 104 bytes for the smallest rows a
 * CSV can hold (13 bytes with the line end), and the strings. */
#define CACHE_MAX_BYTES ((size_t)GPC_CATALOG_MAX_BYTES / 12 * 104 + GPC_CATALOG_MAX_BYTES + 4096)

typedef struct cache_header {
    char magic[8];            /* CACHE_MAGIC, no NUL */
    uint32_t version;         /* CACHE_VERSION */
    uint32_t endian;          /* CACHE_ENDIAN in the writer's byte order */
    uint32_t header_size;     /* sizeof(cache_header) */
    uint32_t row_size;        /* sizeof(cache_row) */
    double probe;             /* CACHE_PROBE: the same double format */
    char fingerprint[64];     /* cache_fingerprint(), hex, no NUL */
    /* the CSV, as stat() gave it before the CSV was read */
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
    char sha256[64];          /* of the CSV's bytes, hex, no NUL: the catalog's sha256 */
    uint64_t n_rows;
    uint64_t blob_size;       /* bytes of strings after the rows */
    uint64_t checksum;        /* cache_checksum of all but this field */
} cache_header;

/* A row: gpc_catalog_row with string offsets into the blob and the GPU's
 * index in the built-in table (-1: none; gpu_model is that GPU's model). */
typedef struct cache_row {
    double gpu_mem_gib, vcpus, mem_gib, fabric_gbps;
    double price_ondemand, price_spot, price_ondemand_cny, price_spot_cny;
    uint32_t provider, instance_type, region, source, notes;
    int32_t gpu;
    uint32_t gpu_count, fabric, line, zero;
} cache_row;

_Static_assert(sizeof(cache_header) == 240, "cache_header: see CACHE_FORMAT");
_Static_assert(offsetof(cache_header, checksum) == 232, "the checksum is the header's end");
_Static_assert(sizeof(cache_row) == 104, "cache_row: see CACHE_FORMAT");

/* Where a CSV's cache is, and the CSV's identity before it was read. */
typedef struct cache_ref {
    char dir[PATH_MAX];       /* .../gpuctl/catalog */
    char path[PATH_MAX];      /* dir/SHA256-OF-REALPATH */
    struct stat st;           /* of the CSV */
} cache_ref;

/* zlib's CRC-32 of n bytes, continued from `seed` (a project rule: no
 * hand-written hashes).  Against torn or damaged files, where a change
 * goes unseen with a chance of about 2^-32; not against a forger (who
 * could write the cache directory anyway). */
static uint64_t cache_checksum(uint64_t seed, const unsigned char *p, size_t n)
{
    return crc32_z((uLong)seed, p, n);
}

/* The checksum of a whole cache file (its checksum field not counted). */
static uint64_t cache_file_checksum(const unsigned char *file, size_t len)
{
    const size_t at = offsetof(cache_header, checksum);
    uint64_t h = cache_checksum(0, file, at);
    return cache_checksum(h, file + sizeof(cache_header), len - sizeof(cache_header));
}

/* SHA-256 (hex) of CACHE_FORMAT and the built-in gpus.csv and sources.csv:
 * a cache made by another build is never read.  false when a table is
 * missing or memory runs out. */
static bool cache_fingerprint(char out[65])
{
    const gpc_embedded_file *g = gpc_catalog_file_get("gpus.csv");
    const gpc_embedded_file *s = gpc_catalog_file_get("sources.csv");
    if (!g || !s)
        return false;
    size_t n = sizeof(CACHE_FORMAT) + 24 + g->len + s->len;
    char *buf = malloc(n);
    if (!buf)
        return false;
    int o = snprintf(buf, n, "%s%c%zu:%zu:", CACHE_FORMAT, 0, g->len, s->len);
    if (o < 0 || (size_t)o + g->len + s->len > n) {
        free(buf);
        return false;
    }
    memcpy(buf + o, g->data, g->len);
    memcpy(buf + o + g->len, s->data, s->len);
    gpc_sha256_hex(buf, (size_t)o + g->len + s->len, out);
    free(buf);
    return true;
}

/* The cache directory: $GPUCTL_CACHE_DIR, else $XDG_CACHE_HOME/gpuctl (an
 * absolute one), else $HOME/.cache/gpuctl; then /catalog.  false: none. */
static bool cache_dir(char *buf, size_t n)
{
    const char *dir = getenv("GPUCTL_CACHE_DIR"), *sub = "/catalog";
    if (!dir || !*dir) {
        dir = getenv("XDG_CACHE_HOME");
        sub = "/gpuctl/catalog";
        if (!dir || dir[0] != '/') {
            dir = getenv("HOME");
            sub = "/.cache/gpuctl/catalog";
        }
    }
    if (!dir || !*dir)
        return false;
    int len = snprintf(buf, n, "%s%s", dir, sub);
    return len > 0 && (size_t)len < n;
}

/*
 * Whether `path` gets a cache, and where: a regular file of at least
 * GPC_CATALOG_CACHE_MIN_BYTES (and at most GPC_CATALOG_MAX_BYTES), a cache
 * directory, and GPUCTL_CATALOG_CACHE not "0".  ref->st is the file's
 * identity from now, before it is read.
 */
static bool cache_prepare(const char *path, cache_ref *ref)
{
    const char *env = getenv("GPUCTL_CATALOG_CACHE");
    if ((env && strcmp(env, "0") == 0) || strcmp(path, "-") == 0)
        return false;
    if (stat(path, &ref->st) != 0 || !S_ISREG(ref->st.st_mode) ||
        ref->st.st_size < (off_t)GPC_CATALOG_CACHE_MIN_BYTES ||
        (uint64_t)ref->st.st_size > GPC_CATALOG_MAX_BYTES)
        return false;
    if (!cache_dir(ref->dir, sizeof(ref->dir)))
        return false;
    char *real = realpath(path, NULL), key[65];
    if (!real)
        return false;
    gpc_sha256_hex(real, strlen(real), key);
    free(real);
    int len = snprintf(ref->path, sizeof(ref->path), "%s/%s", ref->dir, key);
    return len > 0 && (size_t)len < sizeof(ref->path);
}

/* The header's record of the CSV matches ref->st. */
static bool cache_same_csv(const cache_header *h, const struct stat *st)
{
    return h->dev == (uint64_t)st->st_dev && h->ino == (uint64_t)st->st_ino &&
           h->size == (uint64_t)st->st_size && h->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
           h->mtime_nsec == (int64_t)st->st_mtim.tv_nsec &&
           h->ctime_sec == (int64_t)st->st_ctim.tv_sec &&
           h->ctime_nsec == (int64_t)st->st_ctim.tv_nsec;
}

static bool is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!is_digit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return false;
    return true;
}

/* A figure as a parse gives it: 0 .. max (catalog.h); or -1 (no price). */
static bool count_ok(double v, double max) { return v >= 0 && v <= max; }
static bool price_ok(double v) { return count_ok(v, GPC_CATALOG_PRICE_MAX) || v == -1; }

/* The names of a row as convert_cell takes them from a CSV cell. */
static bool names_ok(const char *provider, const char *type, const char *region)
{
    size_t pl = strlen(provider), tl = strlen(type), rl = strlen(region);
    return provider_ok(provider, pl) && pl <= 15 && strcmp(provider, "local") != 0 && tl &&
           tl <= 63 && name_ok(type, tl) && rl <= 47 && name_ok(region, rl);
}

/* The rows of a cache file read whole into `file` (len bytes, 8-byte
 * aligned), checked; NULL (nothing kept) when anything is wrong. */
static gpc_catalog_row *cache_rows(const gpc_catalog *c, const cache_ref *ref,
                                   const unsigned char *file, size_t len, size_t *n_rows,
                                   char sha[65])
{
    cache_header h;
    char fp[65];
    if (len < sizeof(h))
        return NULL;
    memcpy(&h, file, sizeof(h));
    if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0 || h.version != CACHE_VERSION ||
        h.endian != CACHE_ENDIAN || h.header_size != sizeof(cache_header) ||
        h.row_size != sizeof(cache_row) || h.probe != CACHE_PROBE ||
        !cache_same_csv(&h, &ref->st) || !is_hex64(h.sha256))
        return NULL;
    /* The sizes add up to the file's (without overflow: both are bounded
     * by len first), and the strings end with a NUL. */
    size_t body = len - sizeof(h);
    if (h.n_rows > body / sizeof(cache_row) || h.blob_size == 0 ||
        h.blob_size != body - h.n_rows * sizeof(cache_row) || h.blob_size > UINT32_MAX ||
        h.n_rows > UINT32_MAX)
        return NULL;
    const char *blob = (const char *)file + sizeof(h) + h.n_rows * sizeof(cache_row);
    if (blob[h.blob_size - 1] != '\0' || blob[0] != '\0')
        return NULL;
    if (!cache_fingerprint(fp) || memcmp(h.fingerprint, fp, 64) != 0)
        return NULL;
    if (cache_file_checksum(file, len) != h.checksum)
        return NULL;
    size_t n = (size_t)h.n_rows;
    gpc_catalog_row *rows = malloc(n ? n * sizeof(*rows) : 1);
    if (!rows)
        return NULL;
    advise_huge(rows, n * sizeof(*rows));
    const cache_row *in = (const cache_row *)(const void *)(file + sizeof(h));
    const uint32_t bs = (uint32_t)h.blob_size;
    uint32_t prev_line = 1;
    for (size_t i = 0; i < n; i++) {
        const cache_row *r = &in[i];
        if (r->provider >= bs || r->instance_type >= bs || r->region >= bs || r->source >= bs ||
            r->notes >= bs || !blob[r->provider] || !blob[r->instance_type] ||
            r->gpu < -1 || r->gpu >= (int64_t)c->n_gpus || r->gpu_count > GPC_CATALOG_GPU_COUNT_MAX ||
            (r->gpu >= 0) != (r->gpu_count > 0) || r->fabric > GPC_FABRIC_ERDMA ||
            r->line < prev_line || r->zero != 0 || !count_ok(r->gpu_mem_gib, GPC_CATALOG_GIB_MAX) ||
            !count_ok(r->vcpus, GPC_CATALOG_VCPUS_MAX) ||
            !count_ok(r->mem_gib, GPC_CATALOG_GIB_MAX) ||
            !count_ok(r->fabric_gbps, GPC_CATALOG_GBPS_MAX) ||
            !price_ok(r->price_ondemand) || !price_ok(r->price_spot) ||
            !price_ok(r->price_ondemand_cny) || !price_ok(r->price_spot_cny) ||
            !names_ok(blob + r->provider, blob + r->instance_type, blob + r->region)) {
            free(rows);
            return NULL;
        }
        prev_line = r->line;
        const gpc_gpu_info *g = r->gpu >= 0 ? &c->gpus[r->gpu] : NULL;
        rows[i] = (gpc_catalog_row){
            .provider = blob + r->provider,
            .instance_type = blob + r->instance_type,
            .region = blob + r->region,
            .gpu_model = g ? g->model : "",
            .gpu_count = r->gpu_count,
            .gpu_mem_gib = r->gpu_mem_gib,
            .vcpus = r->vcpus,
            .mem_gib = r->mem_gib,
            .fabric = (gpc_fabric)r->fabric,
            .fabric_gbps = r->fabric_gbps,
            .price_ondemand = r->price_ondemand,
            .price_spot = r->price_spot,
            .price_ondemand_cny = r->price_ondemand_cny,
            .price_spot_cny = r->price_spot_cny,
            .source = blob + r->source,
            .notes = blob + r->notes,
            .gpu = g,
            .line = r->line,
        };
    }
    memcpy(sha, h.sha256, 64);
    sha[64] = '\0';
    *n_rows = n;
    return rows;
}

/* The rows of ref's cache into c (which has its GPUs and no rows); false
 * (c unchanged) when there is no usable cache. */
static bool cache_read(gpc_catalog *c, const cache_ref *ref)
{
    struct stat st;
    int fd = open(ref->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(cache_header) || (uint64_t)st.st_size > CACHE_MAX_BYTES) {
        close(fd);
        return false;
    }
    size_t len = (size_t)st.st_size, got = 0;
    /* The file becomes an arena block: the rows' strings stay in it. */
    arena_block *b = malloc(sizeof(*b) + len);
    if (!b) {
        close(fd);
        return false;
    }
    advise_huge(b->data, len);
    while (got < len) {
        ssize_t k = read(fd, b->data + got, len - got);
        if (k > 0)
            got += (size_t)k;
        else if (k == 0 || errno != EINTR)
            break;
    }
    close(fd);
    size_t n = 0;
    gpc_catalog_row *rows =
        got == len ? cache_rows(c, ref, (const unsigned char *)b->data, len, &n, c->sha256)
                   : NULL;
    if (!rows) {
        free(b);
        return false;
    }
    b->used = b->cap = len;
    arena *a = cat_arena(c);
    b->next = a->head ? a->head->next : NULL; /* behind the current block */
    if (a->head)
        a->head->next = b;
    else
        a->head = b;
    c->rows = rows;
    c->n_rows = n;
    return true;
}

/* The blob being built: strings, each once. */
typedef struct blob_builder {
    char *data;
    size_t len, cap;
    uint32_t *slots;          /* offset + 1 of a string; 0: empty */
    size_t n_slots, used;
} blob_builder;

static bool blob_grow_slots(blob_builder *bb)
{
    size_t n = bb->n_slots ? 2 * bb->n_slots : 4096;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return false;
    for (size_t i = 0; i < bb->n_slots; i++) {
        if (!bb->slots[i])
            continue;
        const char *s = bb->data + bb->slots[i] - 1;
        size_t j = (size_t)hash_bytes(0, s, strlen(s)) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = bb->slots[i];
    }
    free(bb->slots);
    bb->slots = slots;
    bb->n_slots = n;
    return true;
}

/* The offset of s in the blob, added when new; UINT32_MAX on failure. */
static uint32_t blob_add(blob_builder *bb, const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return 0;
    if (2 * (bb->used + 1) > bb->n_slots && !blob_grow_slots(bb))
        return UINT32_MAX;
    size_t mask = bb->n_slots - 1, j = (size_t)hash_bytes(0, s, len) & mask;
    for (; bb->slots[j]; j = (j + 1) & mask) {
        const char *t = bb->data + bb->slots[j] - 1;
        if (memcmp(t, s, len + 1) == 0)
            return bb->slots[j] - 1;
    }
    if (bb->len + len + 1 >= UINT32_MAX)
        return UINT32_MAX;
    if (bb->cap - bb->len < len + 1) {
        size_t cap = bb->cap;
        while (cap - bb->len < len + 1)
            cap *= 2;
        char *p = realloc(bb->data, cap);
        if (!p)
            return UINT32_MAX;
        bb->data = p;
        bb->cap = cap;
    }
    uint32_t off = (uint32_t)bb->len;
    memcpy(bb->data + off, s, len + 1);
    bb->len += len + 1;
    bb->slots[j] = off + 1;
    bb->used++;
    return off;
}

/* Write all of buf to fd; false on an error. */
static bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k == 0 || errno != EINTR) {
            return false;
        }
    }
    return true;
}

/*
 * Write c's rows (just parsed from the CSV that ref->st describes) as ref's
 * cache file: PATH.tmp.PID, then renamed over PATH, so a reader sees the
 * old file or the new one whole.  No fsync: a file torn by a crash fails
 * the checks and is made again.  Every failure is ignored: the cache is
 * only an optimisation.
 */
static void cache_write(const gpc_catalog *c, const cache_ref *ref)
{
    char fp[65], tmp[PATH_MAX + 32];
    size_t n = c->n_rows;
    if (!cache_fingerprint(fp) || n > UINT32_MAX)
        return;
    /* The rows go straight into the file's buffer; the blob after them
     * once its size is known. */
    const size_t rows_end = sizeof(cache_header) + n * sizeof(cache_row);
    unsigned char *file = malloc(rows_end);
    if (file)
        advise_huge(file, rows_end);
    blob_builder bb = {.data = malloc(64u << 10), .len = 1, .cap = 64u << 10};
    bool ok = file && bb.data;
    if (bb.data)
        bb.data[0] = '\0'; /* offset 0: "" */
    cache_row *rows = ok ? (cache_row *)(void *)(file + sizeof(cache_header)) : NULL;
    /* The parse shares a string between neighbouring rows: those are
     * looked up once. */
    const char *prev_s[5] = {0};
    uint32_t prev_o[5] = {0};
    for (size_t i = 0; ok && i < n; i++) {
        const gpc_catalog_row *r = &c->rows[i];
        const char *s[5] = {r->provider, r->instance_type, r->region, r->source, r->notes};
        uint32_t o[5];
        for (int k = 0; k < 5; k++) {
            o[k] = s[k] == prev_s[k] ? prev_o[k] : blob_add(&bb, s[k]);
            prev_s[k] = s[k];
            prev_o[k] = o[k];
            ok = ok && o[k] != UINT32_MAX;
        }
        ptrdiff_t g = r->gpu ? r->gpu - c->gpus : -1;
        ok = ok && g >= -1 && g < (ptrdiff_t)c->n_gpus;
        rows[i] = (cache_row){
            .gpu_mem_gib = r->gpu_mem_gib, .vcpus = r->vcpus, .mem_gib = r->mem_gib,
            .fabric_gbps = r->fabric_gbps, .price_ondemand = r->price_ondemand,
            .price_spot = r->price_spot, .price_ondemand_cny = r->price_ondemand_cny,
            .price_spot_cny = r->price_spot_cny, .provider = o[0], .instance_type = o[1],
            .region = o[2], .source = o[3], .notes = o[4], .gpu = (int32_t)g,
            .gpu_count = r->gpu_count, .fabric = (uint32_t)r->fabric, .line = r->line};
    }
    size_t len = rows_end + bb.len;
    unsigned char *whole = ok ? realloc(file, len) : NULL;
    if (whole) {
        file = whole;
        cache_header h;
        memset(&h, 0, sizeof(h));
        memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
        h.version = CACHE_VERSION;
        h.endian = CACHE_ENDIAN;
        h.header_size = sizeof(cache_header);
        h.row_size = sizeof(cache_row);
        h.probe = CACHE_PROBE;
        memcpy(h.fingerprint, fp, 64);
        h.dev = (uint64_t)ref->st.st_dev;
        h.ino = (uint64_t)ref->st.st_ino;
        h.size = (uint64_t)ref->st.st_size;
        h.mtime_sec = (int64_t)ref->st.st_mtim.tv_sec;
        h.mtime_nsec = (int64_t)ref->st.st_mtim.tv_nsec;
        h.ctime_sec = (int64_t)ref->st.st_ctim.tv_sec;
        h.ctime_nsec = (int64_t)ref->st.st_ctim.tv_nsec;
        memcpy(h.sha256, c->sha256, 64);
        h.n_rows = n;
        h.blob_size = bb.len;
        memcpy(file, &h, sizeof(h));
        memcpy(file + rows_end, bb.data, bb.len);
        h.checksum = cache_file_checksum(file, len);
        memcpy(file + offsetof(cache_header, checksum), &h.checksum, sizeof(h.checksum));
    }
    free(bb.data);
    free(bb.slots);
    int k = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", ref->path, (long)getpid());
    if (!whole || k < 0 || (size_t)k >= sizeof(tmp) || gpc_mkdir_p(ref->dir, 0700, NULL)) {
        free(file);
        return;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
        ok = write_all(fd, file, len);
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, ref->path) != 0)
            (void)unlink(tmp);
    }
    free(file);
}

int gpc_catalog_load_file(const char *path, gpc_catalog **out, gpc_error *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    cache_ref *ref = malloc(sizeof(*ref));
    bool cached = ref && cache_prepare(path, ref);
    if (cached) { /* the rows from the cache, or on to the CSV as without one */
        gpc_catalog *c;
        gpc_error local;
        gpc_error_clear(&local);
        if (!load_base(path, &c, &local)) {
            if (cache_read(c, ref)) {
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
        cache_write(*out, ref);
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

/* ------------------------------------------------------------------ */
/* Writing.                                                           */

/* One cell and its separator; quoted (by libcsv) only when it must be:
 * a separator, quote or line end inside, or white space at an end that
 * the reader would trim. */
static int put_cell(gpc_buf *out, const char *s, bool last, gpc_error *err)
{
    size_t len = strlen(s);
    bool quote = len && (strpbrk(s, ",\"\r\n") || s[0] == ' ' || s[0] == '\t' ||
                         s[len - 1] == ' ' || s[len - 1] == '\t');
    int rc;
    if (quote) {
        size_t need = csv_write(NULL, 0, s, len);
        char small[256], *tmp = need <= sizeof(small) ? small : malloc(need);
        if (!tmp)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        csv_write(tmp, need, s, len);
        rc = gpc_buf_add(out, tmp, need, err);
        if (tmp != small)
            free(tmp);
    } else {
        rc = gpc_buf_add(out, s, len, err);
    }
    return rc ? rc : gpc_buf_add(out, last ? "\n" : ",", 1, err);
}

/* A number cell, or "" when `empty`. */
static int put_num(gpc_buf *out, double v, bool empty, gpc_error *err)
{
    char buf[NUM_TEXT_MAX];
    if (empty)
        buf[0] = '\0';
    else
        format_num(v, buf, sizeof(buf));
    return put_cell(out, buf, false, err);
}

int gpc_catalog_write_csv(const gpc_catalog *c, gpc_buf *out, gpc_error *err)
{
    int rc = 0;
    for (int k = 0; k < I_COUNT && !rc; k++)
        rc = put_cell(out, instance_cols[k].name, k == I_COUNT - 1, err);
    for (size_t i = 0; i < c->n_rows && !rc; i++) {
        const gpc_catalog_row *row = &c->rows[i];
        /* In instance_cols order.  interconnect_gbps 0 means "none or not
         * known" and is written empty, as the built-in file has it. */
        if (put_cell(out, row->provider, false, err) ||
            put_cell(out, row->instance_type, false, err) ||
            put_cell(out, row->region, false, err) || put_cell(out, row->gpu_model, false, err) ||
            put_num(out, row->gpu_count, false, err) ||
            put_num(out, row->gpu_mem_gib, false, err) || put_num(out, row->vcpus, false, err) ||
            put_num(out, row->mem_gib, false, err) ||
            put_cell(out, fabric_cell(row->fabric), false, err) ||
            put_num(out, row->fabric_gbps, row->fabric_gbps <= 0, err) ||
            put_num(out, row->price_ondemand, row->price_ondemand < 0, err) ||
            put_num(out, row->price_spot, row->price_spot < 0, err) ||
            put_num(out, row->price_ondemand_cny, row->price_ondemand_cny < 0, err) ||
            put_num(out, row->price_spot_cny, row->price_spot_cny < 0, err) ||
            put_cell(out, row->source, false, err) ||
            put_cell(out, row->notes, true, err))
            rc = err && err->code ? (int)err->code : GPC_ERR_NOMEM;
    }
    return rc;
}

int gpc_catalog_set_price(gpc_catalog *c, gpc_catalog_row *row, double ondemand,
                          double spot, const char *source, gpc_error *err)
{
    if (!c || row < c->rows || row >= c->rows + c->n_rows)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_catalog_set_price: row not in catalog");
    /* A price a CSV cell could not hold would make the catalog written
     * from it unreadable (NaN is neither >= 0 nor < 0: refused too). */
    const double p[2] = {ondemand, spot};
    for (int i = 0; i < 2; i++)
        if (!(p[i] < 0) && !(p[i] <= GPC_CATALOG_PRICE_MAX))
            return gpc_fail(err, GPC_ERR_PROVIDER, "%s %s %s: %s price %.15g USD/hour is out of "
                            "range (at most %.0f)", row->provider, row->instance_type,
                            row->region, i ? "spot" : "on-demand", p[i], GPC_CATALOG_PRICE_MAX);
    if (source) {
        const char *s = arena_strndup(cat_arena(c), source, strlen(source));
        if (!s)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        row->source = s;
    }
    /* A CNY figure describes the price it came with: it goes with it. */
    if (ondemand >= 0) {
        row->price_ondemand = ondemand;
        row->price_ondemand_cny = -1;
    }
    if (spot >= 0) {
        row->price_spot = spot;
        row->price_spot_cny = -1;
    }
    return 0;
}

int gpc_catalog_set_notes(gpc_catalog *c, gpc_catalog_row *row, const char *notes,
                          gpc_error *err)
{
    if (!c || row < c->rows || row >= c->rows + c->n_rows)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_catalog_set_notes: row not in catalog");
    const char *s = arena_strndup(cat_arena(c), notes ? notes : "", notes ? strlen(notes) : 0);
    if (!s)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    row->notes = s;
    return 0;
}

void gpc_catalog_free(gpc_catalog *c)
{
    if (!c)
        return;
    if (c->priv)
        arena_free(c->priv);
    free(c->priv);
    free(c->rows);
    free(c->gpus);
    free(c->sources);
    free(c);
}
