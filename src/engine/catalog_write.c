/*
 * catalog_write.c - the instance table written back as CSV (libcsv quotes
 * what must be quoted), and the edits of catalog update: prices and notes
 * (catalog_int.h), and rows added and removed when a provider rebuilds
 * its rows.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "gpuctl/buf.h"
#include "catalog_int.h"

/*
 * The shortest text that gpc_cat_parse_num reads back as exactly v: "%.15g" is
 * exact for any decimal of up to 15 significant digits (every value read
 * from a catalog), else 16 or 17 digits.  gpc_cat_parse_num takes no exponent, so
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

/* The cell as written in the CSV: "" for GPC_FABRIC_UNKNOWN. */
static const char *fabric_cell(gpc_fabric f)
{
    return f == GPC_FABRIC_UNKNOWN ? "" : gpc_fabric_name(f);
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
        rc = put_cell(out, gpc_cat_instance_cols[k].name, k == I_COUNT - 1, err);
    for (size_t i = 0; i < c->n_rows && !rc; i++) {
        const gpc_catalog_row *row = &c->rows[i];
        /* In gpc_cat_instance_cols order.  interconnect_gbps 0 means "none or not
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
        const char *s = gpc_cat_arena_strndup(gpc_cat_arena(c), source, strlen(source));
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
    const char *s = gpc_cat_arena_strndup(gpc_cat_arena(c), notes ? notes : "",
                                          notes ? strlen(notes) : 0);
    if (!s)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    row->notes = s;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Adding and removing rows (a provider's refresh_prices rebuilding    */
/* its rows).                                                          */

/* A copy of s (NULL = "") in the catalog's storage, or NULL. */
static const char *keep_str(gpc_catalog *c, const char *s)
{
    return gpc_cat_arena_strndup(gpc_cat_arena(c), s ? s : "", s ? strlen(s) : 0);
}

/* 1 when v is a figure a CSV cell holds: finite, from 0 to max. */
static bool figure_ok(double v, double max)
{
    return v >= 0 && v <= max;
}

int gpc_catalog_add_row(gpc_catalog *c, const gpc_catalog_row *row, gpc_error *err)
{
    if (!c || !row || !row->provider || !*row->provider || !row->instance_type ||
        !*row->instance_type)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_catalog_add_row: no provider or instance "
                        "type");
    const char *region = row->region ? row->region : "";
    const char *what_model = row->gpu_model ? row->gpu_model : "";
    const char *name = row->instance_type;
    for (size_t i = 0; i < c->n_rows; i++)
        if (strcmp(c->rows[i].provider, row->provider) == 0 &&
            strcmp(c->rows[i].instance_type, name) == 0 && strcmp(c->rows[i].region, region) == 0)
            return gpc_fail(err, GPC_ERR_SPEC, "%s %s %s: the catalog has this row already",
                            row->provider, name, region);
    const gpc_gpu_info *gpu = NULL;
    if (*what_model && !(gpu = gpc_catalog_gpu(c, what_model)))
        return gpc_fail(err, GPC_ERR_SPEC, "%s %s %s: GPU model '%s' is not in the catalog's "
                        "GPU table", row->provider, name, region, what_model);
    if ((gpu != NULL) != (row->gpu_count > 0) || row->gpu_count > GPC_CATALOG_GPU_COUNT_MAX)
        return gpc_fail(err, GPC_ERR_SPEC, "%s %s %s: gpu_count %u with gpu_model '%s'",
                        row->provider, name, region, (unsigned)row->gpu_count, what_model);
    if (!figure_ok(row->gpu_mem_gib, GPC_CATALOG_GIB_MAX) ||
        !figure_ok(row->mem_gib, GPC_CATALOG_GIB_MAX) ||
        !figure_ok(row->vcpus, GPC_CATALOG_VCPUS_MAX) ||
        !figure_ok(row->fabric_gbps, GPC_CATALOG_GBPS_MAX))
        return gpc_fail(err, GPC_ERR_PROVIDER, "%s %s %s: a hardware figure is out of range "
                        "(GPU memory %.15g GiB, memory %.15g GiB, %.15g vCPUs, %.15g Gbit/s)",
                        row->provider, name, region, row->gpu_mem_gib, row->mem_gib, row->vcpus,
                        row->fabric_gbps);
    const double p[4] = {row->price_ondemand, row->price_spot, row->price_ondemand_cny,
                         row->price_spot_cny};
    for (int i = 0; i < 4; i++)
        if (!(p[i] < 0) && !(p[i] <= GPC_CATALOG_PRICE_MAX))
            return gpc_fail(err, GPC_ERR_PROVIDER, "%s %s %s: price %.15g per hour is out of "
                            "range (at most %.0f)", row->provider, name, region, p[i],
                            GPC_CATALOG_PRICE_MAX);
    gpc_catalog_row r = *row;
    r.provider = keep_str(c, row->provider);
    r.instance_type = keep_str(c, name);
    r.region = keep_str(c, region);
    r.zone = "";
    r.gpu = gpu;
    r.gpu_model = gpu ? gpu->model : keep_str(c, "");
    r.source = keep_str(c, row->source);
    r.notes = keep_str(c, row->notes);
    r.line = 0;
    if (!r.provider || !r.instance_type || !r.region || !r.gpu_model || !r.source || !r.notes)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    gpc_catalog_row *v = realloc(c->rows, (c->n_rows + 1) * sizeof(*v));
    if (!v)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    c->rows = v;
    c->rows[c->n_rows++] = r;
    return 0;
}

size_t gpc_catalog_remove_rows(gpc_catalog *c,
                               int (*drop)(const gpc_catalog_row *row, void *arg), void *arg)
{
    size_t kept = 0, n = c ? c->n_rows : 0;
    for (size_t i = 0; i < n; i++)
        if (!drop(&c->rows[i], arg))
            c->rows[kept++] = c->rows[i];
    if (c)
        c->n_rows = kept;
    return n - kept;
}
