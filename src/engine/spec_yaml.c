/*
 * spec_yaml.c - pass 1 of the spec loader: libyaml's events -> a small tree
 * of nodes that carry 1-based line/column marks (spec_int.h).  Aliases are
 * resolved with their expansion bounded, duplicate keys and nesting bombs
 * refused, and libyaml's own syntax errors named by place.
 *
 * Why events and not libyaml's document loader (yaml_parser_load): a spec
 * is the user's file, and the loader keeps too little and stops too late.
 * This is the one place gpuctl reads YAML.
 *  - It parses the whole file before returning, so a bound could be checked
 *    only afterwards.  libyaml's parse of deep nesting costs the square of
 *    the depth (32 KiB of '[' takes it seconds; a spec may have 1 MiB), and
 *    its anchor table is searched once per anchor and alias.  From events,
 *    reading stops at the 65th open collection or the 1,001st anchor
 *    (test_bombs_at_size_limit).
 *  - It keeps no position and no name for an alias, only the node it
 *    names: "alias expansion exceeds" and a self-referring alias could not
 *    say where, an unknown alias not which.
 *  - It refuses an anchor defined twice, which YAML allows (the alias means
 *    the latest).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "spec_int.h"

/* ------------------------------------------------------------------ */
/* Pass 1: libyaml events -> node tree.                               */

void *spec_grow(void *p, size_t *cap, size_t size)
{
    size_t ncap = *cap ? *cap * 2 : 8;
    void *np = realloc(p, ncap * size);
    if (np)
        *cap = ncap;
    return np;
}

void spec_doc_free(ydoc *d)
{
    for (size_t i = 0; i < d->n_all; i++) {
        free(d->all[i]->text);
        free(d->all[i]->anchor);
        free(d->all[i]->kids);
        free(d->all[i]);
    }
    free(d->all);
    free(d->anchored);
}

int spec_nomem(gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

int spec_fail_at(const ydoc *d, gpc_error *err, unsigned long line,
                   unsigned long col, const char *fmt, ...)
{
    char msg[GPC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gpc_fail(err, GPC_ERR_SPEC, "%s:%lu:%lu: %s", d->src, line, col, msg);
}

/* libyaml failed: name the place, and call a tab in indentation a tab. */
static int syntax_error(const ydoc *d, const yaml_parser_t *p, gpc_error *err)
{
    size_t line = p->problem_mark.line, col = p->problem_mark.column;
    if (p->error == YAML_MEMORY_ERROR)
        return spec_nomem(err);
    if (p->error == YAML_READER_ERROR) { /* only a byte offset is known */
        size_t off = p->problem_offset < d->len ? p->problem_offset : d->len;
        size_t start = 0;
        line = 0;
        for (size_t i = 0; i < off; i++)
            if (d->text[i] == '\n') {
                line++;
                start = i + 1;
            }
        col = off - start;
    }
    /* Find that line; look for a tab among its leading blanks. */
    const char *s = d->text, *end = d->text + d->len;
    for (size_t l = 0; l < line && s < end; s++)
        if (*s == '\n')
            l++;
    for (const char *t = s; t < end && (*t == ' ' || *t == '\t'); t++)
        if (*t == '\t')
            return spec_fail_at(d, err, line + 1, (unsigned long)(t - s) + 1,
                           "tab character in indentation (YAML allows only spaces)");
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->context)
        return spec_fail_at(d, err, line + 1, col + 1, "%s (%s at line %lu)", problem,
                       p->context, (unsigned long)p->context_mark.line + 1);
    return spec_fail_at(d, err, line + 1, col + 1, "%s", problem);
}

static ynode *new_node(ydoc *d, ykind kind, yaml_mark_t mark, gpc_error *err)
{
    ynode *n = calloc(1, sizeof(*n));
    if (!n) {
        spec_nomem(err);
        return NULL;
    }
    if (d->n_all == d->cap_all) {
        void *p = spec_grow(d->all, &d->cap_all, sizeof(*d->all));
        if (!p) {
            free(n);
            spec_nomem(err);
            return NULL;
        }
        d->all = p;
    }
    d->all[d->n_all++] = n;
    n->kind = kind;
    n->line = (unsigned long)mark.line + 1;
    n->col = (unsigned long)mark.column + 1;
    n->weight = 1;
    return n;
}

static int add_kid(ynode *parent, ynode *kid, gpc_error *err)
{
    if (parent->n == parent->cap) {
        void *p = spec_grow(parent->kids, &parent->cap, sizeof(*parent->kids));
        if (!p)
            return spec_nomem(err);
        parent->kids = p;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

static int set_anchor(ynode *n, const yaml_char_t *anchor, gpc_error *err)
{
    if (!anchor)
        return 0;
    n->anchor = strdup((const char *)anchor);
    return n->anchor ? 0 : spec_nomem(err);
}

/* A node is complete: its anchor (if any) may now be referred to.  Anchors
 * are registered only once complete, so no alias can form a cycle. */
static int register_anchor(ydoc *d, ynode *n, gpc_error *err)
{
    if (!n->anchor)
        return 0;
    if (d->n_anchored == ANCHORS_MAX)
        return spec_fail_at(d, err, n->line, n->col, "more than %d anchors", ANCHORS_MAX);
    if (d->n_anchored == d->cap_anchored) {
        void *p = spec_grow(d->anchored, &d->cap_anchored, sizeof(*d->anchored));
        if (!p)
            return spec_nomem(err);
        d->anchored = p;
    }
    d->anchored[d->n_anchored++] = n;
    return 0;
}

typedef struct keyref {
    const ynode *key;
    size_t i;
} keyref;

static int keyref_cmp(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    size_t l = x->key->len < y->key->len ? x->key->len : y->key->len;
    int c = memcmp(x->key->text, y->key->text, l);
    if (c)
        return c;
    if (x->key->len != y->key->len)
        return x->key->len < y->key->len ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* libyaml accepts duplicate keys; the first repeat (in document order) is
 * an error naming where the key was first seen. */
static int check_duplicates(const ydoc *d, const ynode *map, gpc_error *err)
{
    size_t m = 0;
    keyref *r;
    const keyref *dup = NULL, *first = NULL;
    if (map->n < 4)
        return 0;
    r = malloc(map->n / 2 * sizeof(*r));
    if (!r)
        return spec_nomem(err);
    for (size_t i = 0; i < map->n; i += 2)
        if (map->kids[i]->kind == Y_SCALAR)
            r[m++] = (keyref){map->kids[i], i};
    qsort(r, m, sizeof(*r), keyref_cmp);
    for (size_t j = 1, g = 0; j < m; j++) {
        if (r[j].key->len == r[g].key->len &&
            memcmp(r[j].key->text, r[g].key->text, r[g].key->len) == 0) {
            if (!dup || r[j].i < dup->i) {
                dup = &r[j];
                first = &r[g];
            }
        } else {
            g = j;
        }
    }
    int rc = 0;
    if (dup) {
        char q[SHOW_MAX];
        rc = spec_fail_at(d, err, map->kids[dup->i]->line, map->kids[dup->i]->col,
                     "duplicate key %s (first at line %lu)",
                     spec_quote(dup->key->text, dup->key->len, q), first->key->line);
    }
    free(r);
    return rc;
}

/* Node `n` was just created: hang it under the open collection, or make it
 * the root. */
static int attach(ydoc *d, ynode **stack, size_t depth, ynode *n, gpc_error *err)
{
    if (depth == 0) {
        d->root = n;
        return 0;
    }
    return add_kid(stack[depth - 1], n, err);
}

static int on_event(ydoc *d, const yaml_event_t *ev, ynode **stack, size_t *depth,
                    int *docs, gpc_error *err)
{
    ynode *n;
    int rc;
    unsigned long line = (unsigned long)ev->start_mark.line + 1;
    unsigned long col = (unsigned long)ev->start_mark.column + 1;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++*docs > 1)
            return spec_fail_at(d, err, line, col,
                           "a second YAML document; a spec file holds exactly one");
        return 0;
    case YAML_SCALAR_EVENT:
        n = new_node(d, Y_SCALAR, ev->start_mark, err);
        if (!n)
            return GPC_ERR_NOMEM;
        n->len = ev->data.scalar.length;
        n->text = malloc(n->len + 1);
        if (!n->text)
            return spec_nomem(err);
        memcpy(n->text, ev->data.scalar.value, n->len);
        n->text[n->len] = '\0';
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (set_anchor(n, ev->data.scalar.anchor, err))
            return GPC_ERR_NOMEM;
        rc = register_anchor(d, n, err);
        return rc ? rc : attach(d, stack, *depth, n, err);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (*depth == NEST_MAX)
            return spec_fail_at(d, err, line, col, "nesting deeper than %d levels", NEST_MAX);
        n = new_node(d, ev->type == YAML_MAPPING_START_EVENT ? Y_MAP : Y_SEQ,
                     ev->start_mark, err);
        if (!n)
            return GPC_ERR_NOMEM;
        if (set_anchor(n, ev->type == YAML_MAPPING_START_EVENT
                              ? ev->data.mapping_start.anchor
                              : ev->data.sequence_start.anchor, err) ||
            attach(d, stack, *depth, n, err))
            return GPC_ERR_NOMEM;
        stack[(*depth)++] = n;
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        n = stack[--*depth];
        for (size_t i = 0; i < n->n; i++) {
            n->weight += n->kids[i]->weight;
            if (n->weight > ALIAS_NODES_MAX)
                n->weight = ALIAS_NODES_MAX + 1;
        }
        if (n->kind == Y_MAP && (rc = check_duplicates(d, n, err)) != 0)
            return rc;
        return register_anchor(d, n, err);
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        ynode *target = NULL;
        for (size_t i = d->n_anchored; i-- > 0;)
            if (strcmp(d->anchored[i]->anchor, name) == 0) {
                target = d->anchored[i];
                break;
            }
        if (!target)
            return spec_fail_at(d, err, line, col, "alias '*%s' names no anchor defined before it",
                           name);
        if (target->weight > ALIAS_NODES_MAX - d->alias_nodes)
            return spec_fail_at(d, err, line, col,
                           "alias expansion exceeds %d nodes (billion laughs?)",
                           ALIAS_NODES_MAX);
        d->alias_nodes += target->weight;
        return attach(d, stack, *depth, target, err);
    }
    default:
        return 0;
    }
}

int spec_load_tree(ydoc *d, gpc_error *err)
{
    yaml_parser_t parser;
    ynode *stack[NEST_MAX];
    size_t depth = 0;
    int docs = 0, rc = 0;

    if (!yaml_parser_initialize(&parser))
        return spec_nomem(err);
    yaml_parser_set_input_string(&parser, (const unsigned char *)d->text, d->len);
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(d, &parser, err);
            break;
        }
        rc = on_event(d, &ev, stack, &depth, &docs, err);
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc || end)
            break;
    }
    yaml_parser_delete(&parser);
    return rc;
}
