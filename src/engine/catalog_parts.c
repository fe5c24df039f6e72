/*
 * catalog_parts.c - reading the instance table in two parts, on two
 * threads, and joining their rows in order (catalog_int.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/util.h"
#include "catalog_int.h"

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
    if (!gpc_cat_feeder_init(r, &f, b->csv + b->from, b->csv + b->len)) {
        gpc_cat_feed(r, &f, false);
        gpc_cat_feed_end(r, &f);
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
    p->r = (reader){.name = name, .code = code, .err = &p->err, .defs = gpc_cat_instance_cols,
                    .n_defs = I_COUNT, .on_row = gpc_cat_instance_row,
                    .on_cell = gpc_cat_instance_field, .ctx = &p->L};
    return p;
}

static void part_free(part *p)
{
    if (!p)
        return;
    gpc_cat_reader_free(&p->r);
    if (!p->L.fixed) {
        free(p->L.rows);
        free(p->L.tags);
    }
    gpc_cat_arena_free(&p->a);
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
                    gpc_cat_show(row->provider, strlen(row->provider), q1),
                    gpc_cat_show(row->instance_type, strlen(row->instance_type), q2),
                    gpc_cat_show(row->region, strlen(row->region), q3), (unsigned)first->line);
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
    if (A->fixed && gpc_cat_grow_rows(A)) /* A's rows out of `all` */
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
    if (gpc_cat_dedup_add(d, rows, tags, d->n, n, n))
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
int gpc_cat_load_instances(gpc_catalog *c, const char *name, gpc_code code, const char *raw,
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
    int rc = gpc_cat_check_bytes(&a->r, &csv, &len);
    size_t split = rc ? 0 : find_split(csv, len);
    bool threaded = false;
    int nomem = 0;
    pthread_t th;
    if (!rc && !gpc_cat_feeder_init(&a->r, &f, csv, csv + (split ? split : len))) {
        gpc_cat_feed(&a->r, &f, true); /* the header */
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
                gpc_cat_advise_huge(all, (size_t)(base + (len - split) / 64) * sizeof(*all));
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
        gpc_cat_feed(&a->r, &f, false);
        gpc_cat_feed_end(&a->r, &f);
        if (b) /* while B reads: A's rows in the check, room for B's guessed */
            nomem = gpc_cat_dedup_add(&d, a->L.rows, a->L.tags, 0, a->L.n_rows,
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
        gpc_cat_arena_take(c->priv, &b->a);
    free(all);
    free(all_tags);
    free(d.slots);
    part_free(a);
    part_free(b);
    return rc;
}
