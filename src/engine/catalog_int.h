/*
 * catalog_int.h - what the parts of the catalog loader share (src/engine
 * only; the public interface is include/gpuctl/catalog.h):
 *
 *   catalog.c        gpus.csv and sources.csv; loading (built-in, string,
 *                    file, the user override); lookups; free
 *   catalog_arena.c  the arena of strings
 *   catalog_csv.c    the CSV reader over libcsv, and its messages
 *   catalog_rows.c   the instance table: numbers, cells to rows, the
 *                    duplicate check
 *   catalog_write.c  writing the instance table back as CSV; set_price and
 *                    set_notes
 *
 * Every message has the form "NAME:LINE: [column: ]what is wrong".
 */
#ifndef GPUCTL_CATALOG_INT_H
#define GPUCTL_CATALOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuctl/catalog.h"
#include "gpuctl/error.h"

#define SHOW_MAX 48             /* bytes of a cell quoted in a message */
#define NUM_TEXT_MAX 512        /* longest number cell (fixed notation of huge values) */

/* ------------------------------------------------------------------ */
/* catalog_arena.c                                                    */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

/* Strings in blocks that never move (rows point into them). */
typedef struct arena {
    arena_block *head;
} arena;

/* A NUL-terminated copy of s[0..n) in a ("" for n 0, not copied); NULL
 * when memory runs out.  The copy lives until gpc_cat_arena_free(a). */
const char *gpc_cat_arena_strndup(arena *a, const char *s, size_t n);

/* Free a's blocks (every string in them); a itself is the caller's. */
void gpc_cat_arena_free(arena *a);

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
/* Called at the end of each data record whose cell count is the
 * header's; returns 0 or an error code (with r->err set). */
typedef int (*row_fn)(reader *r);

struct reader {
    const char *name;      /* names the data in messages */
    gpc_code code;         /* of content errors: SPEC, or INTERNAL for built-in data */
    gpc_error *err;
    int rc;                /* first failure; once set, callbacks do nothing */
    const col_def *defs;   /* the table's known columns */
    size_t n_defs;
    int *col;              /* column (index into defs) of each header cell; -1: ignored */
    int *cell_of;          /* header cell of each column, -1 when absent */
    size_t ncols;          /* cells in the header; 0 until it has been read */
    row_fn on_row;
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

/* 'text' of s[0..len) for messages into buf, at most SHOW_MAX bytes (cut
 * on a UTF-8 boundary), control characters escaped; returns buf. */
const char *gpc_cat_show(const char *s, size_t len, char buf[SHOW_MAX * 4 + 8]);

/* Parse csv[0..len) as one table through r's callbacks (a UTF-8 byte
 * order mark is skipped; a NUL byte is an error); returns r->rc. */
int gpc_cat_read_table(reader *r, const char *csv, size_t len);

/* Free what reading allocated in r (not r itself). */
void gpc_cat_reader_free(reader *r);

/* The text of column k (index into r->defs) in the current record, and
 * its length in *len; "" (length 0) when the column is absent.  The text
 * is NUL-terminated. */
const char *gpc_cat_col_text(const reader *r, int k, size_t *len);

/* Column k of the current record as a non-negative number into *out;
 * dflt when empty.  0, or r->code with a message. */
int gpc_cat_col_num(reader *r, int k, double dflt, double *out);

/* ------------------------------------------------------------------ */
/* catalog_rows.c                                                     */

typedef enum num_rc { NUM_OK, NUM_EMPTY, NUM_BAD, NUM_NEGATIVE } num_rc;

/* A plain decimal s[0..len) ("15", "0.526", ".5", "-0"; no '+', exponent,
 * inf or nan; s[len] is '\0') into *out, as strtod reads it. */
num_rc gpc_cat_parse_num(const char *s, size_t len, double *out);

enum {
    I_PROVIDER, I_TYPE, I_REGION, I_GPU_MODEL, I_GPU_COUNT, I_GPU_MEM, I_VCPUS, I_MEM,
    I_FABRIC, I_FABRIC_GBPS, I_OD, I_SPOT, I_OD_CNY, I_SPOT_CNY, I_SOURCE, I_NOTES, I_COUNT
};
/* The instance table's columns, in the order gpc_catalog_write_csv writes
 * them. */
extern const col_def gpc_cat_instance_cols[I_COUNT];

/* The instance table csv[0..len) (named `name` in messages; content
 * errors get `code`) into c, which has its GPUs and no rows, and the
 * SHA-256 of its bytes into c->sha256.  0 or an error code with err set. */
int gpc_cat_load_instances(gpc_catalog *c, const char *name, gpc_code code, const char *csv,
                           size_t len, gpc_error *err);

/* ------------------------------------------------------------------ */
/* catalog.c                                                          */

/* The arena of c's strings (c->priv). */
arena *gpc_cat_arena(const gpc_catalog *c);

#endif
