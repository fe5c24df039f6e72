/* gpu_models.c - the catalog's GPU models for `offers --gpu` and `validate`. */
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "commands.h"

int gpc_gpu_model_known(const gpc_catalog *cat, const char *model)
{
    if (!*model)
        return 1;
    size_t ml = strlen(model);
    for (size_t k = 0; k < cat->n_gpus; k++) {
        const char *key = cat->gpus[k].model;
        /* the model itself, or its family: the key up to its first '-' */
        if (strcasecmp(key, model) == 0 ||
            (ml == strcspn(key, "-") && strncasecmp(key, model, ml) == 0))
            return 1;
    }
    return 0;
}

void gpc_gpu_model_list(const gpc_catalog *cat, char *out, size_t len)
{
    size_t used = 0;
    if (len)
        out[0] = '\0';
    for (size_t k = 0; k < cat->n_gpus && len; k++) {
        const char *m = cat->gpus[k].model;
        size_t need = strlen(m) + (k ? 2 : 0);
        if (used + need + 5 > len) { /* room for ", ..." */
            snprintf(out + used, len - used, "%s...", k ? ", " : "");
            return;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s", k ? ", " : "", m);
    }
}

/* The value of `key` in the mapping `map`, or NULL. */
static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

int gpc_spec_gpu_position(const char *text, size_t item, unsigned *line, unsigned *col)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int found = 0;
    if (!text || !yaml_parser_initialize(&parser))
        return 0;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    if (yaml_parser_load(&parser, &doc)) {
        int seq = 0;
        yaml_node_t *g = map_get(&doc, map_get(&doc, yaml_document_get_root_node(&doc),
                                               "resources"), "gpu");
        if (g && g->type == YAML_SEQUENCE_NODE) {
            yaml_node_item_t *it = g->data.sequence.items.start + item;
            g = it < g->data.sequence.items.top ? yaml_document_get_node(&doc, *it) : NULL;
            seq = 1;
        } else if (item > 0) {
            g = NULL;
        }
        if (g) {
            *line = (unsigned)g->start_mark.line + 1;
            *col = (unsigned)g->start_mark.column + 1;
            found = 1 + seq;
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    return found;
}
