/*
 * catalog_arena.c - the catalog's strings in big blocks that never move,
 * and huge-page advice for large buffers (catalog_int.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "catalog_int.h"

#define ARENA_BLOCK (256u << 10)

/* ------------------------------------------------------------------ */
/* Arena: strings in big blocks that never move.                      */

static void *arena_alloc(arena *a, size_t n)
{
    arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        /* A string bigger than a quarter block gets a block of its own, put
         * behind the current one so the current one keeps filling. */
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        arena_block *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && cap != ARENA_BLOCK) {
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

/* A NUL-terminated copy of n bytes; "" is not copied. */
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

/* Move src's blocks into dst, behind dst's current block. */
void gpc_cat_arena_take(arena *dst, arena *src)
{
    while (src->head) {
        arena_block *b = src->head;
        src->head = b->next;
        if (dst->head) {
            b->next = dst->head->next;
            dst->head->next = b;
        } else {
            b->next = NULL;
            dst->head = b;
        }
    }
}

void gpc_cat_arena_free(arena *a)
{
    while (a->head) {
        arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ------------------------------------------------------------------ */
/* Small helpers.                                                     */

/* Ask for 2 MiB pages under the 2 MiB-aligned part of a large buffer: the
 * 12 MB file and rows of a 100,000-row catalog otherwise cost ~3,000 page
 * faults each, which is about 3 ms each here.  Advice only. */
void gpc_cat_advise_huge(void *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t to = ((uintptr_t)p + n) & ~(huge - 1);
    if (n >= 4 * huge && to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
}
