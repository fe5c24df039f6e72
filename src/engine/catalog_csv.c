/*
 * catalog_csv.c - the CSV reader shared by the catalog's three tables:
 * libcsv fed one physical line at a time, so that every record knows the
 * line it began on; columns found by header name; every message of the
 * form "NAME:LINE: [column: ]what is wrong" (catalog_int.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "gpuctl/util.h"
#include "catalog_int.h"

/* libcsv.c's parser state between records (ROW_NOT_BEGUN); csv_init sets
 * it.  The state is a public member of struct csv_parser. */
#define LIBCSV_ROW_NOT_BEGUN 0

/* 'text' for messages: at most SHOW_MAX bytes (cut on a UTF-8 boundary),
 * control characters escaped so a message stays one readable line. */
const char *gpc_cat_show(const char *s, size_t len, char buf[SHOW_MAX * 4 + 8])
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

/* ------------------------------------------------------------------ */
/* The CSV reader.                                                    */

int gpc_cat_rfail(reader *r, uint32_t line, const char *column, const char *fmt, ...)
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

static const char *cell_text(const reader *r, size_t i) { return r->buf + r->cells[i].off; }

/* The column name of header cell i, or NULL past the header. */
static const char *cell_column(const reader *r, size_t i)
{
    return i < r->ncols && r->col[i] >= 0 ? r->defs[r->col[i]].name : NULL;
}

/* libcsv's field callback: the cell's bytes, NUL-terminated, into the
 * record's buffer. */
static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->rc)
        return;
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
                return gpc_cat_rfail(r, r->rec_line, NULL, "column %zu has no name", i + 1);
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
                return gpc_cat_rfail(r, r->rec_line, NULL, "unknown column %s (did you mean '%s'?)",
                                     gpc_cat_show(name, r->cells[i].len, q), r->defs[best].name);
            char known[GPC_ERROR_MSG_MAX / 2];
            size_t o = 0;
            for (size_t j = 0; j < r->n_defs && o < sizeof(known); j++)
                o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", j ? ", " : "",
                                      r->defs[j].name);
            return gpc_cat_rfail(r, r->rec_line, NULL, "unknown column %s; known: %s",
                                 gpc_cat_show(name, r->cells[i].len, q), known);
        }
        if (r->cell_of[k] >= 0)
            return gpc_cat_rfail(r, r->rec_line, NULL, "duplicate column '%s' (columns %d and %zu)",
                                 r->defs[k].name, r->cell_of[k] + 1, i + 1);
        r->cell_of[k] = (int)i;
        r->col[i] = r->defs[k].ignored ? -1 : (int)k;
    }
    for (size_t k = 0; k < r->n_defs; k++)
        if (r->defs[k].required && r->cell_of[k] < 0)
            return gpc_cat_rfail(r, r->rec_line, NULL, "missing column '%s'", r->defs[k].name);
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
            r->rc = gpc_cat_rfail(r, r->rec_line, NULL, "%zu cell%s where the header has %zu",
                                  r->n_cells, r->n_cells == 1 ? "" : "s", r->ncols);
        else
            r->rc = r->on_row(r);
    }
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
    return gpc_cat_rfail(r, r->line, cell_column(r, r->n_cells),
                         "bad quoting: a '\"' inside an unquoted cell, or text after a "
                         "closing '\"' (%s)",
                         csv_strerror(status));
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
    return r->rc = gpc_cat_rfail(r, line, NULL, "a NUL byte in the data");
}

/*
 * Parse csv[0..len) as one table.  libcsv gets one physical line (up to
 * and with its '\n') per call: a record that begins while the parser is
 * between records begins on the line fed, so every record knows its first
 * line even when a quoted cell holds newlines.
 */
int gpc_cat_read_table(reader *r, const char *csv, size_t len)
{
    struct csv_parser p;
    r->line = 0;
    r->rec_line = 1;
    if (check_bytes(r, &csv, &len))
        return r->rc;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0)
        return r->rc = gpc_fail(r->err, GPC_ERR_INTERNAL, "csv_init failed");
    csv_set_blk_size(&p, 4096);
    for (const char *pos = csv, *end = csv + len; pos < end && !r->rc;) {
        const char *nl = memchr(pos, '\n', (size_t)(end - pos));
        size_t n = nl ? (size_t)(nl + 1 - pos) : (size_t)(end - pos);
        r->line++;
        if (p.pstate == LIBCSV_ROW_NOT_BEGUN)
            r->rec_line = r->line;
        if (csv_parse(&p, pos, n, on_field, on_record, r) != n && !r->rc)
            r->rc = parse_error(r, &p);
        pos += n;
    }
    /* The end of the data: the last record when no line end follows it. */
    if (!r->rc && csv_fini(&p, on_field, on_record, r) != 0 && !r->rc)
        r->rc = gpc_cat_rfail(r, r->rec_line, cell_column(r, r->n_cells),
                              "unterminated quoted cell (no closing '\"' before the end of "
                              "the data)");
    csv_free(&p);
    if (!r->rc && !r->ncols)
        r->rc = gpc_cat_rfail(r, 1, NULL, "no header row (the data is empty)");
    return r->rc;
}

void gpc_cat_reader_free(reader *r)
{
    free(r->col);
    free(r->cell_of);
    free(r->buf);
    free(r->cells);
}

/* The text and length of column k in the current record ("" when absent). */
const char *gpc_cat_col_text(const reader *r, int k, size_t *len)
{
    int i = r->cell_of[k];
    *len = i >= 0 ? r->cells[i].len : 0;
    return i >= 0 ? cell_text(r, (size_t)i) : "";
}

/* A non-negative number of column k; empty -> dflt. */
int gpc_cat_col_num(reader *r, int k, double dflt, double *out)
{
    size_t len;
    const char *s = gpc_cat_col_text(r, k, &len);
    char q[SHOW_MAX * 4 + 8];
    switch (gpc_cat_parse_num(s, len, out)) {
    case NUM_OK:
        return 0;
    case NUM_EMPTY:
        *out = dflt;
        return 0;
    case NUM_NEGATIVE:
        return gpc_cat_rfail(r, r->rec_line, r->defs[k].name, "negative number (got %s)",
                             gpc_cat_show(s, len, q));
    default:
        return gpc_cat_rfail(r, r->rec_line, r->defs[k].name, "not a number (got %s)",
                             gpc_cat_show(s, len, q));
    }
}
