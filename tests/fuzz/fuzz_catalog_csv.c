/*
 * fuzz_catalog_csv.c - an instance table: CSV -> gpc_catalog_load_string
 * (what --catalog, $GPUCTL_CATALOG and the user's override go through).
 * A table that loads must write back
 * (gpc_catalog_write_csv) to a CSV that loads to as many rows, and offer
 * selection must run over it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/offers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    gpc_catalog *c = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_catalog_load_string("fuzz.csv", (const char *)data, size, &c, &err);
    fuzz_note("catalog_csv", "load", &err);
    if (rc)
        return 0;
    gpc_buf out;
    gpc_buf_init(&out, GPC_CATALOG_MAX_BYTES);
    if (gpc_catalog_write_csv(c, &out, &err) == 0) {
        gpc_catalog *back = NULL;
        if (gpc_catalog_load_string("written.csv", out.data, out.len, &back, &err) != 0 ||
            back->n_rows != c->n_rows) {
            fprintf(stderr, "fuzz: a loaded table does not load again once written: %s\n",
                    err.msg);
            abort();
        }
        gpc_catalog_free(back);
    }
    gpc_buf_free(&out);
    gpc_offer_query q = {.nodes = 2, .policy = GPC_SPOT_AUTO, .head = GPC_SPOT_ON_DEMAND,
                         .budget_total = 1000, .max_duration_s = 7200};
    gpc_selection sel;
    if (gpc_offers_select(c, NULL, 0, &q, &sel, &err) == 0) {
        if (!sel.n_fit)
            gpc_selection_fail(&sel, &q, "fuzz", &err);
        gpc_selection_free(&sel);
    }
    gpc_catalog_free(c);
    return 0;
}
