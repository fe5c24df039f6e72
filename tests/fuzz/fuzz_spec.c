/*
 * fuzz_spec.c - the job spec: YAML text -> gpc_spec_load_string (what
 * gpc_spec_load_file and an embedded plan spec go through), then what apply
 * does with a valid spec before any provider call: its canonical JSON and
 * hash, offer selection against the built-in catalog (and the "nothing
 * fits" message), and the user-data of a worker node for aws.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "gpuctl/catalog.h"
#include "gpuctl/offers.h"
#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gpc_catalog *cat;
    const char *dir = fuzz_init();
    if (!cat && gpc_catalog_load_builtin(&cat, NULL))
        abort();
    gpc_spec *spec = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_spec_load_string("fuzz.yaml", dir, (const char *)data, size, &spec, &err);
    fuzz_note("spec", "load", &err);
    if (rc)
        return 0;
    char hash[65];
    gpc_spec_hash(spec, hash, &err);
    cJSON *j = gpc_spec_to_json(spec);
    free(cJSON_PrintUnformatted(j));
    cJSON_Delete(j);

    gpc_offer_query q;
    gpc_offer_query_from_spec(spec, &q);
    gpc_selection sel;
    gpc_error_clear(&err);
    if (gpc_offers_select(cat, NULL, 0, &q, &sel, &err) == 0) {
        if (!sel.n_fit)
            gpc_selection_fail(&sel, &q, spec->name, &err);
        gpc_selection_free(&sel);
    }

    gpc_node_ctx node = {.cluster = spec->name, .cluster_id = "0123456789abcdef",
                         .rank = 1, .nnodes = spec->nodes, .head_addr = "10.0.0.1",
                         .rdzv_port = 29400, .fabric = "efa", .instance_type = "p4d.24xlarge"};
    char *ud = NULL;
    gpc_error_clear(&err);
    if (gpc_render_userdata(spec, &node, gpc_provider_find("aws")->userdata, &ud, &err) == 0) {
        char *enc = NULL;
        size_t len = 0;
        gpc_userdata_encode(ud, strlen(ud), gpc_provider_find("aws")->userdata, &enc, &len, NULL,
                            &err);
        free(enc);
    }
    free(ud);
    gpc_spec_free(spec);
    return 0;
}
