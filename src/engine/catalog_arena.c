/*
 * catalog_arena.c - the catalog's strings in big blocks that never move
 * (catalog_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"

#define ARENA_BLOCK (64u << 10)

static void *arena_alloc(arena *a, size_t n)
{
    arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        /* A string bigger than a quarter block gets a block of its own. */
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        arena_block *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && cap != ARENA_BLOCK) { /* behind the current one, which keeps filling */
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

const char *gpc_cat_arena_strndup(arena *a, const char *s, size_t n)
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

void gpc_cat_arena_free(arena *a)
{
    while (a->head) {
        arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}
