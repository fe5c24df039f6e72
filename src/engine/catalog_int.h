/*
 * catalog_int.h - what the parts of the catalog loader share (src/engine
 * only; the public interface is include/gpuctl/catalog.h):
 *
 *   catalog.c        gpus.csv and sources.csv; loading (built-in, string,
 *                    file, the user override); lookups; free
 *   catalog_arena.c  the arena of strings; huge-page advice
 *   catalog_csv.c    the CSV reader over libcsv, and its messages
 *   catalog_rows.c   the instance table: numbers, cells to rows, the
 *                    duplicate check
 *   catalog_parts.c  reading the instance table in two parts, on two threads
 *   catalog_cache.c  the binary cache of parsed instance tables
 *   catalog_write.c  writing the instance table back as CSV; set_price and
 *                    set_notes
 *
 * Every message has the form "NAME:LINE: [column: ]what is wrong".
 */
#ifndef GPUCTL_CATALOG_INT_H
#define GPUCTL_CATALOG_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <csv.h>

#include "gpuctl/catalog.h"
#include "gpuctl/error.h"

#define SHOW_MAX 48             /* bytes of a cell quoted in a message */
#define NUM_TEXT_MAX 512        /* longest number cell (fixed notation of huge values) */

/* libcsv.c's parser state between records (ROW_NOT_BEGUN); csv_init sets it.
 * The state is a public member of struct csv_parser. */
#define LIBCSV_ROW_NOT_BEGUN 0

/* Small ASCII helper (locale-independent). */
static inline bool gpc_cat_is_digit(int c) { return c >= '0' && c <= '9'; }

/* ------------------------------------------------------------------ */
/* catalog_arena.c                                                    */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct arena {
    arena_block *head;
} arena;

/* A NUL-terminated copy of s[0..n) in a ("" for n 0, not copied); NULL
 * when memory runs out.  The copy lives until gpc_cat_arena_free(a). */
const char *gpc_cat_arena_strndup(arena *a, const char *s, size_t n);

/* Move src's blocks into dst, behind dst's current block; src is left
 * empty. */
void gpc_cat_arena_take(arena *dst, arena *src);

/* Free a's blocks (every string in them); a itself is the caller's. */
void gpc_cat_arena_free(arena *a);

/* madvise(MADV_HUGEPAGE) for the 2 MiB-aligned part of p[0..n) when n is
 * 8 MiB or more; advice only, no error. */
void gpc_cat_advise_huge(void *p, size_t n);

/* ------------------------------------------------------------------ */
/* catalog_csv.c                                                      */

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
     * cell's error (gpc_cat_cell_fail) waits in `pending` for the end of the
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

/* "NAME:LINE: [COLUMN: ]MESSAGE" into r->err with r->code (r->fail_line
 * set to LINE when it is the first error); returns that code. */
int gpc_cat_rfail(reader *r, uint32_t line, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same for a cell of the current record, held in r->pending until the
 * record's end; returns r->code. */
int gpc_cat_cell_fail(reader *r, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 'text' of s[0..len) for messages into buf, at most SHOW_MAX bytes (cut
 * on a UTF-8 boundary), control characters escaped; returns buf. */
const char *gpc_cat_show(const char *s, size_t len, char buf[SHOW_MAX * 4 + 8]);

/* libcsv, and the part of the data it has yet to read. */
typedef struct feeder {
    struct csv_parser p;
    const char *pos, *end;
} feeder;

/* libcsv (strict) over pos[0..end - pos); 0, or GPC_ERR_INTERNAL (also
 * r->rc) when csv_init fails. */
int gpc_cat_feeder_init(reader *r, feeder *f, const char *pos, const char *end);

/* Feed f's data to libcsv a line at a time until it ends, r fails or
 * (header_only) the header has been read; returns r->rc. */
int gpc_cat_feed(reader *r, feeder *f, bool header_only);

/* The end of the data (the last record without a line end; no header is
 * an error); frees f's parser.  Returns r->rc. */
int gpc_cat_feed_end(reader *r, feeder *f);

/* Skip a UTF-8 byte order mark at *csv (moving *csv, *len); a NUL byte in
 * the data is an error (r->rc).  Returns r->rc's new value or 0. */
int gpc_cat_check_bytes(reader *r, const char **csv, size_t *len);

/* Parse csv[0..len) as one table through r's callbacks; returns r->rc. */
int gpc_cat_read_table(reader *r, const char *csv, size_t len);

/* Free what reading allocated in r (not r itself). */
void gpc_cat_reader_free(reader *r);

/* The text of column k (index into r->defs) in the current record, and
 * its length in *len; "" (length 0) when the column is absent. */
const char *gpc_cat_col_text(const reader *r, int k, size_t *len);

/* Column k of the current record as a non-negative number into *out;
 * dflt when empty.  0, or r->code with a message. */
int gpc_cat_col_num(reader *r, int k, double dflt, double *out);

/* ------------------------------------------------------------------ */
/* catalog_rows.c                                                     */

typedef enum num_rc { NUM_OK, NUM_EMPTY, NUM_BAD, NUM_NEGATIVE } num_rc;

/* A plain decimal s[0..len) ("15", "0.526", ".5", "-0"; no '+', exponent,
 * inf or nan) into *out, exactly as strtod reads it. */
num_rc gpc_cat_parse_num(const char *s, size_t len, double *out);

enum {
    I_PROVIDER, I_TYPE, I_REGION, I_GPU_MODEL, I_GPU_COUNT, I_GPU_MEM, I_VCPUS, I_MEM,
    I_FABRIC, I_FABRIC_GBPS, I_OD, I_SPOT, I_OD_CNY, I_SPOT_CNY, I_SOURCE, I_NOTES, I_COUNT
};
/* The instance table's columns, in the order gpc_catalog_write_csv writes
 * them. */
extern const col_def gpc_cat_instance_cols[I_COUNT];

typedef struct loader {
    gpc_catalog *c;       /* gpus/sources being filled; for rows, the GPU table */
    arena *a;
    size_t cap;           /* of the array being filled */
    /* instance table: the rows read, with the key_hash of each; `fixed`:
     * they are a region of a larger array (see gpc_cat_load_instances), which a
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

/* [a-z][a-z0-9-]*, 1 to 32 bytes: a provider name in a cell. */
bool gpc_cat_provider_ok(const char *s, size_t len);

/* No white space or control characters in s[0..len). */
bool gpc_cat_name_ok(const char *s, size_t len);

/* Room for twice L's rows and tags; 0 or GPC_ERR_NOMEM (L unchanged). */
int gpc_cat_grow_rows(loader *L);

/* libcsv's field callback for the instance table's data records (data:
 * the reader, whose ctx is the loader). */
void gpc_cat_instance_field(void *s, size_t len, void *data);

/* The reader's row callback for the instance table: whole-row checks at
 * the end of a record whose cells all converted.  0 or an error code. */
int gpc_cat_instance_row(reader *r);

/* h with n bytes of s mixed in. */
uint64_t gpc_cat_hash_bytes(uint64_t h, const char *s, size_t n);

/* Rows [from, to) of rows[] and their tags[] into d's duplicate check,
 * with room made for `expect` rows; stops at the first duplicate (d->dup,
 * d->first).  0 or GPC_ERR_NOMEM. */
int gpc_cat_dedup_add(dedup *d, const gpc_catalog_row *rows, const uint32_t *tags, size_t from,
                      size_t to, size_t expect);

/* ------------------------------------------------------------------ */
/* catalog_parts.c                                                    */

/* The instance table raw[0..raw_len) (named `name` in messages; content
 * errors get `code`) into c, which has its GPUs and no rows, and the
 * SHA-256 of its bytes into c->sha256.  0 or an error code with err set. */
int gpc_cat_load_instances(gpc_catalog *c, const char *name, gpc_code code, const char *raw,
                           size_t raw_len, gpc_error *err);

/* ------------------------------------------------------------------ */
/* catalog_cache.c                                                    */

/* Where a CSV's cache is, and the CSV's identity before it was read. */
typedef struct cache_ref {
    char dir[PATH_MAX];       /* .../gpuctl/catalog */
    char path[PATH_MAX];      /* dir/SHA256-OF-REALPATH */
    struct stat st;           /* of the CSV */
} cache_ref;

/* Whether the CSV at `path` gets a cache, and where (into *ref, with the
 * CSV's identity from before it is read). */
bool gpc_cat_cache_prepare(const char *path, cache_ref *ref);

/* The rows of ref's cache file into c (which has its GPUs and no rows);
 * false, c unchanged, when there is no usable cache. */
bool gpc_cat_cache_read(gpc_catalog *c, const cache_ref *ref);

/* Write c's rows, just parsed from ref's CSV, as ref's cache file; any
 * failure is ignored. */
void gpc_cat_cache_write(const gpc_catalog *c, const cache_ref *ref);

/* ------------------------------------------------------------------ */
/* catalog.c                                                          */

/* The arena of c's strings (c->priv). */
arena *gpc_cat_arena(const gpc_catalog *c);

#endif
