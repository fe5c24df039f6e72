/*
 * spec.c - the job spec: YAML -> gpc_spec, canonical JSON, hash.
 *
 * Two passes.  load_tree() turns libyaml's events into a small tree of nodes
 * that carry 1-based line/column marks; it resolves aliases (bounding their
 * expansion), rejects duplicate keys and nesting bombs, and reports libyaml's
 * own syntax errors.  walk_*() then checks the schema against that tree with
 * one table of fields per mapping and fills the gpc_spec.
 *
 * Every message has the form "FILE:LINE:COL: [field.path: ]what is wrong".
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "gpuctl/provider.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"

#define ALIAS_NODES_MAX 10000 /* nodes reachable through aliases, in all */
#define NEST_MAX 64           /* collections open at once */
#define ANCHORS_MAX 1000
#define NODES_MAX GPC_SPEC_NODES_MAX
#define GPUS_PER_NODE_MAX 64
#define NPROC_MAX 64
#define LIST_MAX 256          /* entries in a list field (provider, regions, gpu, ...) */
#define DURATION_MAX_S GPC_SPEC_DURATION_MAX_S
#define SHOW_MAX 96           /* quoted value in a message */
#define PATH_MAX_LEN 160      /* field path in a message */

/* ------------------------------------------------------------------ */
/* Small ASCII helpers (locale-independent).                          */

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_lower(int c) { return c >= 'a' && c <= 'z'; }
static bool is_alpha(int c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
static int to_upper(int c) { return is_lower(c) ? c - 'a' + 'A' : c; }

/* Digits only, no sign; false on overflow or empty. */
static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit((unsigned char)s[i]))
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* An optional sign, digits, an optional fraction ("15", "-2", "0.5", ".5").
 * No exponents, hex, inf or nan. */
static bool parse_number(const char *s, size_t len, double *out)
{
    char tmp[64];
    size_t i = 0, digits = 0;
    if (len == 0 || len >= sizeof(tmp))
        return false;
    if (s[i] == '+' || s[i] == '-')
        i++;
    for (; i < len && is_digit((unsigned char)s[i]); i++)
        digits++;
    if (i < len && s[i] == '.')
        for (i++; i < len && is_digit((unsigned char)s[i]); i++)
            digits++;
    if (i != len || digits == 0)
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    *out = strtod(tmp, NULL);
    return isfinite(*out);
}

/* 'text' for messages, cut at SHOW_MAX bytes on a UTF-8 boundary. */
static const char *quote(const char *text, size_t len, char buf[SHOW_MAX])
{
    size_t room = SHOW_MAX - 6; /* quotes, "...", NUL */
    bool cut = len > room;
    if (cut) {
        len = room;
        while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
            len--;
    }
    snprintf(buf, SHOW_MAX, "'%.*s%s'", (int)len, text, cut ? "..." : "");
    return buf;
}


/* The closest of `names` (NULL-terminated) to `word`, or NULL when none is
 * close: at most 1 edit for words of up to 4 letters, else 2. */
static const char *closest(const char *word, const char *const *names)
{
    size_t len = strlen(word);
    size_t limit = len <= 4 ? 1 : 2;
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (const char *const *p = names; *p; p++) {
        /* Ties go to a name with the same first letter ("cpu": "cpus", not "gpu"). */
        size_t dist = gpc_edit_distance(word, *p);
        if (dist != SIZE_MAX)
            dist = 2 * dist + (to_lower((unsigned char)word[0]) != to_lower((unsigned char)(*p)[0]));
        if (dist <= 2 * limit + 1 && dist < best_d) {
            best = *p;
            best_d = dist;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* Numeric forms.                                                     */

typedef enum size_rc { SZ_OK, SZ_SYNTAX, SZ_UNIT, SZ_NONPOS, SZ_HUGE } size_rc;

/* No machine or disk is bigger than 1 PB; a larger number is a typo. */
#define SIZE_MAX_GIB (1024.0 * 1024.0)

static const struct size_unit {
    const char *name;
    double gib;
} size_units[] = {
    {"", 1}, {"g", 1}, {"gb", 1}, {"gib", 1},
    {"t", 1024}, {"tb", 1024}, {"tib", 1024},
    {"m", 1.0 / 1024}, {"mb", 1.0 / 1024}, {"mib", 1.0 / 1024},
};

/* "80GB", "1.5 TB", "512mib", "64" -> GiB.  *unit gets the unit's offset. */
static size_rc scan_size(const char *s, size_t len, double *gib, size_t *unit)
{
    size_t i = 0, digits = 0;
    double v;
    if (i < len && s[i] == '-')
        i++;
    size_t num_start = i;
    for (; i < len && is_digit((unsigned char)s[i]); i++)
        digits++;
    if (i < len && s[i] == '.')
        for (i++; i < len && is_digit((unsigned char)s[i]); i++)
            digits++;
    if (digits == 0 || !parse_number(s + num_start, i - num_start, &v))
        return SZ_SYNTAX;
    size_t num_end = i;
    while (i < len && s[i] == ' ')
        i++;
    *unit = i;
    if (i > num_end && i == len)
        return SZ_SYNTAX; /* trailing blank, no unit */
    for (size_t j = i; j < len; j++)
        if (!is_alpha((unsigned char)s[j]))
            return SZ_SYNTAX;
    size_t ulen = len - i;
    const struct size_unit *u = NULL;
    for (size_t k = 0; k < sizeof(size_units) / sizeof(size_units[0]); k++) {
        const char *n = size_units[k].name;
        if (strlen(n) != ulen)
            continue;
        size_t j = 0;
        while (j < ulen && to_lower((unsigned char)s[i + j]) == n[j])
            j++;
        if (j == ulen) {
            u = &size_units[k];
            break;
        }
    }
    if (!u)
        return SZ_UNIT;
    if (s[0] == '-' || v <= 0)
        return SZ_NONPOS;
    *gib = v * u->gib;
    return *gib > SIZE_MAX_GIB ? SZ_HUGE : SZ_OK;
}

int gpc_parse_size_gib(const char *what, const char *s, double *gib, gpc_error *err)
{
    char q[SHOW_MAX];
    size_t unit = 0, len = strlen(s);
    switch (scan_size(s, len, gib, &unit)) {
    case SZ_OK:
        return 0;
    case SZ_UNIT:
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: unknown size unit '%s' in %s (use MB, GB or TB)",
                        what, s + unit, quote(s, len, q));
    case SZ_NONPOS:
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive size, got %s",
                        what, quote(s, len, q));
    case SZ_HUGE:
        return gpc_fail(err, GPC_ERR_SPEC, "%s: %s is more than 1PB", what, quote(s, len, q));
    default:
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: expected a size like 80GB, 512MB or 2TB, got %s",
                        what, quote(s, len, q));
    }
}

int gpc_parse_duration(const char *what, const char *s, uint64_t *secs, gpc_error *err)
{
    static const char units[] = "dhms";
    static const uint64_t mult[] = {86400, 3600, 60, 1};
    char q[SHOW_MAX];
    size_t len = strlen(s), i = 0;
    uint64_t total = 0;
    int last = -1;
    bool ok = len > 0;

    if (ok && s[0] == '-')
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive duration, got %s",
                        what, quote(s, len, q));
    while (ok && i < len) { /* NUMBER UNIT ..., units in the order d h m s */
        size_t start = i;
        uint64_t n;
        int unit;
        const char *u;
        while (i < len && is_digit((unsigned char)s[i]))
            i++;
        if (i == start) {
            ok = false;
            break;
        }
        if (!parse_u64(s + start, i - start, &n))
            n = UINT64_MAX;               /* overflow: "too long" below */
        if (i == len && start == 0) {
            unit = 3;                     /* a bare number is seconds */
        } else if (i < len && (u = strchr(units, s[i])) != NULL) {
            unit = (int)(u - units);
            i++;
        } else {
            unit = -1;
        }
        if (unit <= last) {
            ok = false;
            break;
        }
        last = unit;
        if (n > (UINT64_MAX - total) / mult[unit])
            total = UINT64_MAX;
        else
            total += n * mult[unit];
    }
    if (!ok)
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got %s",
                        what, quote(s, len, q));
    if (total == 0)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive duration, got %s",
                        what, quote(s, len, q));
    if (total > DURATION_MAX_S)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: %s is too long (at most 36500d)",
                        what, quote(s, len, q));
    *secs = total;
    return 0;
}

/* One end of a range: a positive size, or a positive integer count. */
typedef bool (*range_end_fn)(const char *s, size_t len, double *out);

static bool size_end(const char *s, size_t len, double *out)
{
    size_t unit;
    size_rc rc = scan_size(s, len, out, &unit);
    return rc == SZ_OK || rc == SZ_HUGE; /* callers bound the result */
}

static bool count_end(const char *s, size_t len, double *out)
{
    uint64_t v;
    if (!parse_u64(s, len, &v) || v == 0 || v > 1000000)
        return false;
    *out = (double)v;
    return true;
}

typedef enum range_rc { RG_OK, RG_SYNTAX, RG_EMPTY } range_rc;

/* "X", "X+", "X..Y", "X..", "..Y" -> {min, max} (0 = unbounded). */
static range_rc parse_range(const char *s, size_t len, range_end_fn end, gpc_range *out)
{
    const char *dots = NULL;
    gpc_range r = {0, 0};
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == '.' && s[i + 1] == '.') {
            dots = s + i;
            break;
        }
    if (len > 1 && s[len - 1] == '+') {
        if (!end(s, len - 1, &r.min))
            return RG_SYNTAX;
    } else if (dots) {
        size_t l = (size_t)(dots - s), rl = len - l - 2;
        if ((l == 0 && rl == 0) || (l > 0 && !end(s, l, &r.min)) ||
            (rl > 0 && !end(dots + 2, rl, &r.max)))
            return RG_SYNTAX;
        if (r.max > 0 && r.min > r.max)
            return RG_EMPTY;
    } else {
        if (!end(s, len, &r.min))
            return RG_SYNTAX;
        r.max = r.min;
    }
    *out = r;
    return RG_OK;
}

/* A model name: [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters. */
static bool valid_model(const char *s, size_t len)
{
    if (len == 0 || len > 64 || !is_alnum((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static bool has_alpha(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (is_alpha((unsigned char)s[i]))
            return true;
    return false;
}

/* "A100-80GB": when the text after the last '-' is a size with a unit, set
 * *mem (if not NULL) and return the model's length without it; else 0. */
static size_t model_mem_suffix(const char *model, size_t len, gpc_range *mem)
{
    size_t dash = 0;
    gpc_range m;
    for (size_t i = 1; i < len; i++)
        if (model[i] == '-')
            dash = i;
    if (dash == 0 || dash + 1 >= len)
        return 0;
    const char *suf = model + dash + 1;
    size_t sl = len - dash - 1;
    if (!is_digit((unsigned char)suf[0]) || !has_alpha(suf, sl) ||
        parse_range(suf, sl, size_end, &m) != RG_OK)
        return 0;
    if (mem)
        *mem = m;
    return dash;
}

int gpc_parse_gpu(const char *what, const char *s, gpc_gpu_req *out, gpc_error *err)
{
    const char *part[3];
    size_t plen[3], n = 0, len = strlen(s);
    gpc_range count = {1, 1}, mem = {0, 0};
    const char *model = "";
    size_t model_len = 0;
    char q[SHOW_MAX];

    /* Split at ':' into at most three non-empty parts. */
    for (const char *p = s;; ) {
        const char *c = strchr(p, ':');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (n == 3 || l == 0)
            goto bad;
        part[n] = p;
        plen[n++] = l;
        if (!c)
            break;
        p = c + 1;
    }

    /* The last part is a count unless it has letters ("80GB" is memory). */
    if (!has_alpha(part[n - 1], plen[n - 1])) {
        const char *c = part[n - 1];
        size_t cl = plen[n - 1];
        uint64_t zero;
        if (parse_u64(c, cl, &zero) && zero == 0)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: GPU count must be at least 1 in %s",
                            what, quote(s, len, q));
        if (parse_range(c, cl, count_end, &count) != RG_OK)
            goto bad;
        if (count.min == 0)                 /* "..2" is "1..2" */
            count.min = 1;
        if (count.min > GPUS_PER_NODE_MAX || count.max > GPUS_PER_NODE_MAX)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: at most %d GPUs per node in %s",
                            what, GPUS_PER_NODE_MAX, quote(s, len, q));
        n--;
    }
    if (n == 2) {                       /* MODEL:MEM */
        model = part[0];
        model_len = plen[0];
        if (parse_range(part[1], plen[1], size_end, &mem) != RG_OK ||
            model_mem_suffix(model, model_len, NULL))
            goto bad;
    } else if (n == 1 && (is_digit((unsigned char)part[0][0]) || part[0][0] == '.')) {
        if (parse_range(part[0], plen[0], size_end, &mem) != RG_OK)  /* MEM */
            goto bad;
    } else if (n == 1) {                /* MODEL or MODEL-MEM */
        model = part[0];
        model_len = plen[0];
        size_t cut = model_mem_suffix(model, model_len, &mem);
        if (cut)
            model_len = cut;
    } else if (n != 0) {
        goto bad;
    }
    if (model_len > 0 && !valid_model(model, model_len))
        goto bad;

    char *m = malloc(model_len + 1);
    if (!m)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < model_len; i++)
        m[i] = (char)to_upper((unsigned char)model[i]);
    m[model_len] = '\0';
    out->model = m;
    out->mem_gib = mem;
    out->count = count;
    return 0;

bad:
    return gpc_fail(err, GPC_ERR_SPEC,
                    "%s: expected a GPU like A100-80GB:8, A100:80GB:8, H100:8, T4 "
                    "or 24GB..80GB:2, got %s", what, quote(s, len, q));
}

/* ------------------------------------------------------------------ */
/* Enum names.                                                        */

static const char *const interconnect_names[] = {
    "any", "none", "efa", "infiniband", "erdma", "rdma", NULL};
static const char *const spot_names[] = {"on-demand", "spot", "auto", NULL};
static const char *const tier_names[] = {"any", "standard", "ssd", "nvme", NULL};

const char *gpc_interconnect_name(gpc_interconnect ic)
{
    return (unsigned)ic <= GPC_IC_RDMA ? interconnect_names[ic] : "?";
}

const char *gpc_spot_policy_name(gpc_spot_policy p)
{
    return (unsigned)p <= GPC_SPOT_AUTO ? spot_names[p] : "?";
}

const char *gpc_disk_tier_name(gpc_disk_tier t)
{
    return (unsigned)t <= GPC_DISK_NVME ? tier_names[t] : "?";
}

/* ------------------------------------------------------------------ */
/* Pass 1: libyaml events -> node tree.                               */

typedef enum ykind { Y_SCALAR, Y_SEQ, Y_MAP } ykind;

typedef struct ynode {
    ykind kind;
    unsigned long line, col; /* 1-based */
    char *text;              /* scalar value, NUL-terminated */
    size_t len;
    bool plain;              /* plain scalar: may mean null or a boolean */
    char *anchor;            /* its anchor name, or NULL */
    struct ynode **kids;     /* sequence items; mapping key, value, key, ... */
    size_t n, cap;
    size_t weight;           /* nodes in this subtree with aliases expanded,
                                capped at ALIAS_NODES_MAX + 1 */
} ynode;

typedef struct ydoc {
    const char *src;
    const char *text;
    size_t len;
    ynode **all;           /* every node, for freeing (aliases share nodes) */
    size_t n_all, cap_all;
    ynode **anchored;      /* completed nodes with an anchor, in order */
    size_t n_anchored, cap_anchored;
    ynode *root;
    size_t alias_nodes;
} ydoc;

static void *grow(void *p, size_t *cap, size_t size)
{
    size_t ncap = *cap ? *cap * 2 : 8;
    void *np = realloc(p, ncap * size);
    if (np)
        *cap = ncap;
    return np;
}

static void doc_free(ydoc *d)
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

static int nomem(gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

static int fail_at(const ydoc *d, gpc_error *err, unsigned long line,
                   unsigned long col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail_at(const ydoc *d, gpc_error *err, unsigned long line,
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
        return nomem(err);
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
            return fail_at(d, err, line + 1, (unsigned long)(t - s) + 1,
                           "tab character in indentation (YAML allows only spaces)");
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->context)
        return fail_at(d, err, line + 1, col + 1, "%s (%s at line %lu)", problem,
                       p->context, (unsigned long)p->context_mark.line + 1);
    return fail_at(d, err, line + 1, col + 1, "%s", problem);
}

static ynode *new_node(ydoc *d, ykind kind, yaml_mark_t mark, gpc_error *err)
{
    ynode *n = calloc(1, sizeof(*n));
    if (!n) {
        nomem(err);
        return NULL;
    }
    if (d->n_all == d->cap_all) {
        void *p = grow(d->all, &d->cap_all, sizeof(*d->all));
        if (!p) {
            free(n);
            nomem(err);
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
        void *p = grow(parent->kids, &parent->cap, sizeof(*parent->kids));
        if (!p)
            return nomem(err);
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
    return n->anchor ? 0 : nomem(err);
}

/* A node is complete: its anchor (if any) may now be referred to.  Anchors
 * are registered only once complete, so no alias can form a cycle. */
static int register_anchor(ydoc *d, ynode *n, gpc_error *err)
{
    if (!n->anchor)
        return 0;
    if (d->n_anchored == ANCHORS_MAX)
        return fail_at(d, err, n->line, n->col, "more than %d anchors", ANCHORS_MAX);
    if (d->n_anchored == d->cap_anchored) {
        void *p = grow(d->anchored, &d->cap_anchored, sizeof(*d->anchored));
        if (!p)
            return nomem(err);
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
        return nomem(err);
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
        rc = fail_at(d, err, map->kids[dup->i]->line, map->kids[dup->i]->col,
                     "duplicate key %s (first at line %lu)",
                     quote(dup->key->text, dup->key->len, q), first->key->line);
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
            return fail_at(d, err, line, col,
                           "a second YAML document; a spec file holds exactly one");
        return 0;
    case YAML_SCALAR_EVENT:
        n = new_node(d, Y_SCALAR, ev->start_mark, err);
        if (!n)
            return GPC_ERR_NOMEM;
        n->len = ev->data.scalar.length;
        n->text = malloc(n->len + 1);
        if (!n->text)
            return nomem(err);
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
            return fail_at(d, err, line, col, "nesting deeper than %d levels", NEST_MAX);
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
            return fail_at(d, err, line, col, "alias '*%s' names no anchor defined before it",
                           name);
        if (target->weight > ALIAS_NODES_MAX - d->alias_nodes)
            return fail_at(d, err, line, col,
                           "alias expansion exceeds %d nodes (billion laughs?)",
                           ALIAS_NODES_MAX);
        d->alias_nodes += target->weight;
        return attach(d, stack, *depth, target, err);
    }
    default:
        return 0;
    }
}

static int load_tree(ydoc *d, gpc_error *err)
{
    yaml_parser_t parser;
    ynode *stack[NEST_MAX];
    size_t depth = 0;
    int docs = 0, rc = 0;

    if (!yaml_parser_initialize(&parser))
        return nomem(err);
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

/* ------------------------------------------------------------------ */
/* Pass 2: the schema walk.                                           */

typedef struct walk {
    const ydoc *doc;
    gpc_spec *s;
    gpc_error *err;
    const ynode *place_key[4]; /* region, regions, zone, zones: where set */
    bool spot_head_set;
} walk;

typedef int (*field_fn)(walk *w, const ynode *key, const ynode *val, const char *path);

typedef struct field {
    const char *key;
    const char *path; /* full field path, for messages */
    field_fn fn;
    bool required;
} field;

/* "FILE:L:C: PATH: message" at node n (no "PATH: " when path is empty). */
static int failn(walk *w, const ynode *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int failn(walk *w, const ynode *n, const char *path, const char *fmt, ...)
{
    char msg[GPC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail_at(w->doc, w->err, n->line, n->col, "%s%s%s", path ? path : "",
                   path && *path ? ": " : "", msg);
}

/* Move an error from a gpc_parse_* helper (already "what: ...") to node n. */
static int fail_from(walk *w, const ynode *n, const gpc_error *e)
{
    if (e->code != GPC_ERR_SPEC)
        return gpc_fail(w->err, e->code, "%s", e->msg);
    return fail_at(w->doc, w->err, n->line, n->col, "%s", e->msg);
}

static bool is_null(const ynode *n)
{
    return n->kind == Y_SCALAR && n->plain &&
           (n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
            strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0);
}

/* What a node is, for "got ..." in messages. */
static const char *show(const ynode *n, char buf[SHOW_MAX])
{
    if (n->kind == Y_MAP)
        return "a mapping";
    if (n->kind == Y_SEQ)
        return "a sequence";
    if (is_null(n))
        return "null";
    return quote(n->text, n->len, buf);
}

static int get_str(walk *w, const ynode *v, const char *path, bool nonempty, char **out)
{
    char q[SHOW_MAX];
    if (v->kind != Y_SCALAR || is_null(v))
        return failn(w, v, path, "expected a string, got %s", show(v, q));
    if (memchr(v->text, '\0', v->len))
        return failn(w, v, path, "contains a NUL character");
    if (nonempty && v->len == 0)
        return failn(w, v, path, "must not be empty");
    *out = strdup(v->text);
    return *out ? 0 : nomem(w->err);
}

static int get_enum(walk *w, const ynode *v, const char *path, const char *const *names,
                    size_t first, int *out)
{
    char q[SHOW_MAX], list[128] = "";
    if (v->kind == Y_SCALAR)
        for (size_t i = first; names[i]; i++)
            if (strcmp(v->text, names[i]) == 0) {
                *out = (int)i;
                return 0;
            }
    for (size_t i = first; names[i]; i++)      /* "a, b or c" */
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                 i == first ? "" : names[i + 1] ? ", " : " or ", names[i]);
    const char *near = v->kind == Y_SCALAR ? closest(v->text, names + first) : NULL;
    if (near)
        return failn(w, v, path, "expected %s, got %s (did you mean '%s'?)", list,
                     show(v, q), near);
    return failn(w, v, path, "expected %s, got %s", list, show(v, q));
}

static int get_positive(walk *w, const ynode *v, const char *path, double *out)
{
    char q[SHOW_MAX];
    double d;
    if (v->kind != Y_SCALAR || !parse_number(v->text, v->len, &d))
        return failn(w, v, path, "expected a number, got %s", show(v, q));
    if (d <= 0)
        return failn(w, v, path, "must be greater than 0, got %s", show(v, q));
    *out = d;
    return 0;
}

/* An integer in [lo, hi]; `expect` words the error ("an integer >= 1"). */
static int get_int(walk *w, const ynode *v, const char *path, uint64_t lo, uint64_t hi,
                   const char *expect, uint64_t *out)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind != Y_SCALAR || !parse_u64(v->text, v->len, &n) || n < lo)
        return failn(w, v, path, "expected %s, got %s", expect, show(v, q));
    if (n > hi)
        return failn(w, v, path, "at most %llu, got %s", (unsigned long long)hi,
                     show(v, q));
    *out = n;
    return 0;
}

static int get_duration(walk *w, const ynode *v, const char *path, uint64_t *out)
{
    char q[SHOW_MAX];
    gpc_error e;
    gpc_error_clear(&e);
    if (v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a duration like 30m or 72h, got %s", show(v, q));
    if (gpc_parse_duration(path, v->text, out, &e))
        return fail_from(w, v, &e);
    return 0;
}

static int get_size(walk *w, const ynode *v, const char *path, double *out)
{
    char q[SHOW_MAX];
    gpc_error e;
    gpc_error_clear(&e);
    if (v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a size like 500GB, got %s", show(v, q));
    if (gpc_parse_size_gib(path, v->text, out, &e))
        return fail_from(w, v, &e);
    return 0;
}

typedef int (*item_check)(walk *w, const ynode *item, const char *path);

/* Item i of a "string or list" value (a scalar is a list of one). */
static const ynode *item_at(const ynode *v, size_t i)
{
    return v->kind == Y_SEQ ? v->kids[i] : v;
}

/* A string or a sequence of strings, each non-empty, none repeated. */
static int get_str_list(walk *w, const ynode *v, const char *path, item_check check,
                        char ***out, size_t *n)
{
    char q[SHOW_MAX], ipath[PATH_MAX_LEN];
    if (v->kind == Y_MAP)
        return failn(w, v, path, "expected a string or a list of strings, got a mapping");
    size_t count = v->kind == Y_SEQ ? v->n : 1;
    if (count > LIST_MAX)
        return failn(w, v, path, "at most %d entries, got %zu", LIST_MAX, count);
    *out = calloc(count ? count : 1, sizeof(**out));
    if (!*out)
        return nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *item = item_at(v, i);
        char *str;
        if (v->kind == Y_SEQ)
            snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        else
            snprintf(ipath, sizeof(ipath), "%s", path);
        int rc = get_str(w, item, ipath, true, &str);
        if (rc)
            return rc;
        (*out)[(*n)++] = str;
        if (check && (rc = check(w, item, ipath)) != 0)
            return rc;
        for (size_t j = 0; j + 1 < *n; j++)
            if (strcmp((*out)[j], str) == 0)
                return failn(w, item, ipath, "%s is listed twice", quote(str, strlen(str), q));
    }
    return 0;
}

/* Cloud names: region, zone, instance type ("us-east-1", "Standard_ND96asr_v4"). */
static int check_cloud_name(walk *w, const ynode *item, const char *path)
{
    char q[SHOW_MAX];
    for (size_t i = 0; i < item->len; i++) {
        int c = (unsigned char)item->text[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return failn(w, item, path,
                         "%s is not a valid name (letters, digits, '-', '_' and '.')",
                         show(item, q));
    }
    return 0;
}

/* A provider of the registry (plan-only ones too: a spec may name them). */
static int check_provider(walk *w, const ynode *item, const char *path)
{
    char q[SHOW_MAX];
    const char *names[65];
    size_t n = 0;
    if (gpc_provider_find(item->text))
        return 0;
    for (size_t i = 0; gpc_providers[i] && n + 1 < sizeof(names) / sizeof(names[0]); i++)
        names[n++] = gpc_providers[i]->name;
    names[n] = NULL;
    const char *near = closest(item->text, names);
    if (near)
        return failn(w, item, path, "unknown provider %s (did you mean '%s'? known: %s)",
                     show(item, q), near, gpc_provider_names_with(0));
    return failn(w, item, path, "unknown provider %s (known: %s)", show(item, q),
                 gpc_provider_names_with(0));
}

/* Keys people bring from other tools or put at the wrong level. */
static const struct {
    const char *level, *key, *hint;
} key_hints[] = {
    {"", "num_nodes", "'nodes'"},
    {"", "gpu", "'resources.gpu'"},
    {"", "gpus", "'resources.gpu'"},
    {"", "accelerators", "'resources.gpu'"},
    {"", "cpus", "'resources.cpus'"},
    {"", "memory", "'resources.memory'"},
    {"", "disk", "'resources.disk'"},
    {"", "interconnect", "'resources.interconnect'"},
    {"", "instance_type", "'resources.instance_types'"},
    {"", "instance_types", "'resources.instance_types'"},
    {"", "use_spot", "'spot'"},
    {"", "spot_policy", "'spot'"},
    {"", "max_price", "'spot.max_price'"},
    {"", "max_duration", "'lifecycle.max_duration'"},
    {"", "idle_timeout", "'lifecycle.idle_timeout'"},
    {"", "idle_duration", "'lifecycle.idle_timeout'"},
    {"", "autostop", "'lifecycle.idle_timeout'"},
    {"", "command", "'run'"},
    {"", "commands", "'run'"},
    {"", "envs", "'env'"},
    {"", "tags", "'labels'"},
    {"", "working_dir", "'workdir'"},
    {"", "cloud", "'provider'"},
    {"", "clouds", "'provider'"},
    {"", "backends", "'provider'"},
    {"", "providers", "'provider'"},
    {"resources", "accelerators", "'gpu'"},
    {"resources", "disk_size", "'disk'"},
    {"resources", "disk_tier", "'disk.tier'"},
    {"resources", "region", "'region' at the top level"},
    {"resources", "zone", "'zone' at the top level"},
    {"resources", "use_spot", "'spot' at the top level"},
    {"resources", "image_id", "'image' at the top level"},
    {"run", "nproc", "'nproc_per_node'"},
    {"run", "port", "'rdzv_port'"},
};

static int unknown_key(walk *w, const ynode *k, const char *path, const field *fields)
{
    char q[SHOW_MAX], near[PATH_MAX_LEN];
    const char *hint = NULL;
    if (k->plain && strcmp(k->text, "<<") == 0)
        return failn(w, k, path, "merge keys ('<<') are not supported");
    for (size_t i = 0; i < sizeof(key_hints) / sizeof(key_hints[0]); i++)
        if (strcmp(key_hints[i].level, path) == 0 && strcmp(key_hints[i].key, k->text) == 0)
            hint = key_hints[i].hint;
    if (!hint) {
        const char *keys[32];
        size_t n = 0;
        for (; fields[n].key && n + 1 < sizeof(keys) / sizeof(keys[0]); n++)
            keys[n] = fields[n].key;
        keys[n] = NULL;
        const char *c = closest(k->text, keys);
        if (c) {
            snprintf(near, sizeof(near), "'%s'", c);
            hint = near;
        }
    }
    if (hint)
        return failn(w, k, path, "unknown key %s (did you mean %s?)",
                     quote(k->text, k->len, q), hint);
    return failn(w, k, path, "unknown key %s", quote(k->text, k->len, q));
}

/* Walk a mapping with a field table: keys in document order, unknown keys
 * rejected, null values left at their defaults, required keys checked. */
static int walk_map(walk *w, const ynode *map, const char *path, const field *fields)
{
    char q[SHOW_MAX];
    uint64_t seen = 0;
    if (map->kind != Y_MAP)
        return failn(w, map, path, "expected a mapping, got %s", show(map, q));
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const ynode *k = map->kids[i], *v = map->kids[i + 1];
        size_t j;
        if (k->kind != Y_SCALAR)
            return failn(w, k, path, "expected a string key, got %s", show(k, q));
        for (j = 0; fields[j].key; j++)
            if (strcmp(fields[j].key, k->text) == 0)
                break;
        if (!fields[j].key)
            return unknown_key(w, k, path, fields);
        seen |= (uint64_t)1 << j;
        if (is_null(v)) {
            if (fields[j].required)
                return failn(w, v, fields[j].path, "expected a value, got null");
            continue;
        }
        int rc = fields[j].fn(w, k, v, fields[j].path);
        if (rc)
            return rc;
    }
    for (size_t j = 0; fields[j].key; j++)
        if (fields[j].required && !(seen & ((uint64_t)1 << j)))
            return failn(w, map, path, "missing required key '%s'", fields[j].key);
    return 0;
}

/* RFC 1123 label: [a-z]([-a-z0-9]{0,61}[a-z0-9])?, at most 58 characters
 * so that node names ("<name>-<rank>", rank < 1024) are labels too. */
#define NAME_MAX_LEN 58
static bool valid_label_name(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > NAME_MAX_LEN || !is_lower((unsigned char)s[0]) || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_lower((unsigned char)s[i]) && !is_digit((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

static int f_name(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    int rc = get_str(w, v, path, false, &w->s->name);
    if (rc)
        return rc;
    if (!valid_label_name(w->s->name))
        return failn(w, v, path,
                     "%s is not a valid name (lower-case letters, digits and '-', "
                     "starting with a letter, not ending with '-', at most 58 characters)",
                     show(v, q));
    return 0;
}

static int f_provider(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int rc = get_str_list(w, v, path, check_provider, &w->s->providers, &w->s->n_providers);
    if (!rc && w->s->n_providers == 0)
        return failn(w, v, path, "empty list; name at least one provider");
    return rc;
}

static int f_nodes(walk *w, const ynode *k, const ynode *v, const char *path)
{
    uint64_t n = 0;
    int rc = get_int(w, v, path, 1, NODES_MAX, "an integer >= 1", &n);
    if (!rc)
        w->s->nodes = (uint32_t)n;
    return rc;
}

static int f_gpu(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX], ipath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind == Y_MAP)
        return failn(w, v, path, "expected a GPU like A100-80GB:8 or a list of them, got a mapping");
    size_t count = v->kind == Y_SEQ ? v->n : 1;
    if (count > LIST_MAX)
        return failn(w, v, path, "at most %d entries, got %zu", LIST_MAX, count);
    s->resources.gpus = calloc(count ? count : 1, sizeof(*s->resources.gpus));
    if (!s->resources.gpus)
        return nomem(w->err);
    for (size_t i = 0; i < count; i++) {
        const ynode *item = item_at(v, i);
        gpc_error e;
        gpc_error_clear(&e);
        if (v->kind == Y_SEQ)
            snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
        else
            snprintf(ipath, sizeof(ipath), "%s", path);
        if (item->kind != Y_SCALAR || is_null(item))
            return failn(w, item, ipath, "expected a GPU like A100-80GB:8, got %s",
                         show(item, q));
        if (gpc_parse_gpu(ipath, item->text, &s->resources.gpus[i], &e))
            return fail_from(w, item, &e);
        s->resources.n_gpus++;
    }
    return 0;
}

static int get_range(walk *w, const ynode *v, const char *path, range_end_fn end,
                     const char *expect, gpc_range *out)
{
    char q[SHOW_MAX];
    range_rc rc = v->kind == Y_SCALAR ? parse_range(v->text, v->len, end, out) : RG_SYNTAX;
    if (rc == RG_EMPTY)
        return failn(w, v, path, "empty range %s (the minimum is above the maximum)",
                     show(v, q));
    if (rc != RG_OK)
        return failn(w, v, path, "expected %s, got %s", expect, show(v, q));
    return 0;
}

static int f_cpus(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_range(w, v, path, count_end, "a vCPU count like 8, 8+ or 4..16",
                     &w->s->resources.cpus);
}

static int f_memory(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    gpc_range *m = &w->s->resources.memory_gib;
    int rc = get_range(w, v, path, size_end, "a size like 256GB, 256GB+ or 128GB..512GB", m);
    if (!rc && (m->min > SIZE_MAX_GIB || m->max > SIZE_MAX_GIB))
        rc = failn(w, v, path, "%s is more than 1PB", show(v, q));
    return rc;
}

static int f_disk_size(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_size(w, v, path, &w->s->resources.disk_gib);
}

static int f_disk_tier(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int t;
    int rc = get_enum(w, v, path, tier_names, 1, &t);
    if (!rc)
        w->s->resources.disk_tier = (gpc_disk_tier)t;
    return rc;
}

static int f_disk_iops(walk *w, const ynode *k, const ynode *v, const char *path)
{
    uint64_t n = 0;
    int rc = get_int(w, v, path, 1, UINT32_MAX, "an integer >= 1", &n);
    if (!rc)
        w->s->resources.disk_iops = (uint32_t)n;
    return rc;
}

static const field disk_fields[] = {
    {"size", "resources.disk.size", f_disk_size, false},
    {"tier", "resources.disk.tier", f_disk_tier, false},
    {"iops", "resources.disk.iops", f_disk_iops, false},
    {NULL, NULL, NULL, false},
};

static int f_disk(walk *w, const ynode *k, const ynode *v, const char *path)
{
    if (v->kind == Y_MAP)
        return walk_map(w, v, path, disk_fields);
    return get_size(w, v, path, &w->s->resources.disk_gib);
}

static int f_interconnect(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int ic;
    int rc = get_enum(w, v, path, interconnect_names, 0, &ic);
    if (!rc)
        w->s->resources.interconnect = (gpc_interconnect)ic;
    return rc;
}

static int f_instance_types(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_list(w, v, path, check_cloud_name, &w->s->resources.instance_types,
                        &w->s->resources.n_instance_types);
}

static const field resources_fields[] = {
    {"gpu", "resources.gpu", f_gpu, false},
    {"cpus", "resources.cpus", f_cpus, false},
    {"memory", "resources.memory", f_memory, false},
    {"disk", "resources.disk", f_disk, false},
    {"interconnect", "resources.interconnect", f_interconnect, false},
    {"instance_types", "resources.instance_types", f_instance_types, false},
    {NULL, NULL, NULL, false},
};

static int f_resources(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, resources_fields);
}

/* region/regions and zone/zones: one of each pair; which = 0..3. */
static int place(walk *w, const ynode *k, const ynode *v, const char *path, int which,
                 char ***list, size_t *n)
{
    char q[SHOW_MAX];
    static const char *const names[] = {"region", "regions", "zone", "zones"};
    const ynode *other = w->place_key[which ^ 1];
    w->place_key[which] = k;
    if (other)
        return failn(w, k, NULL, "'%s' and '%s' are both set (first at line %lu); use one",
                     names[which], names[which ^ 1], other->line);
    if (!(which & 1) && v->kind != Y_SCALAR)
        return failn(w, v, path, "expected a string, got %s (use '%s' for a list)",
                     show(v, q), names[which | 1]);
    return get_str_list(w, v, path, check_cloud_name, list, n);
}

static int f_region(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 0, &w->s->regions, &w->s->n_regions);
}

static int f_regions(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 1, &w->s->regions, &w->s->n_regions);
}

static int f_zone(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 2, &w->s->zones, &w->s->n_zones);
}

static int f_zones(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return place(w, k, v, path, 3, &w->s->zones, &w->s->n_zones);
}

static int f_spot_policy(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int p;
    int rc = get_enum(w, v, path, spot_names, 0, &p);
    if (!rc)
        w->s->spot.policy = (gpc_spot_policy)p;
    return rc;
}

static int f_spot_head(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int p;
    int rc = get_enum(w, v, path, spot_names, 0, &p);
    if (!rc) {
        w->s->spot.head = (gpc_spot_policy)p;
        w->spot_head_set = true;
    }
    return rc;
}

static int f_spot_max_price(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->spot.max_price);
}

static const field spot_fields[] = {
    {"policy", "spot.policy", f_spot_policy, false},
    {"max_price", "spot.max_price", f_spot_max_price, false},
    {"head", "spot.head", f_spot_head, false},
    {NULL, NULL, NULL, false},
};

static int f_spot(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    gpc_spec *s = w->s;
    if (v->kind == Y_MAP) {
        int rc = walk_map(w, v, path, spot_fields);
        if (!w->spot_head_set)
            s->spot.head = s->spot.policy;
        return rc;
    }
    bool found = false;
    if (v->kind == Y_SCALAR && v->plain) {
        static const char *const yes[] = {"true", "True", "TRUE"};
        static const char *const no[] = {"false", "False", "FALSE"};
        for (size_t i = 0; i < 3; i++) {
            if (strcmp(v->text, yes[i]) == 0) {
                s->spot.policy = GPC_SPOT_SPOT;
                found = true;
            } else if (strcmp(v->text, no[i]) == 0) {
                s->spot.policy = GPC_SPOT_ON_DEMAND;
                found = true;
            }
        }
    }
    for (size_t i = 0; !found && v->kind == Y_SCALAR && spot_names[i]; i++)
        if (strcmp(v->text, spot_names[i]) == 0) {
            s->spot.policy = (gpc_spot_policy)i;
            found = true;
        }
    if (!found)
        return failn(w, v, path,
                     "expected true, false, a policy (spot, on-demand, auto) or a mapping, got %s",
                     show(v, q));
    s->spot.head = s->spot.policy;
    return 0;
}

static int f_max_hourly(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->budget.max_hourly);
}

static int f_max_total(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_positive(w, v, path, &w->s->budget.max_total);
}

static const field budget_fields[] = {
    {"max_hourly", "budget.max_hourly", f_max_hourly, false},
    {"max_total", "budget.max_total", f_max_total, false},
    {NULL, NULL, NULL, false},
};

static int f_budget(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, budget_fields);
}

static int f_max_duration(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_duration(w, v, path, &w->s->lifecycle.max_duration_s);
}

static int f_idle_timeout(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_duration(w, v, path, &w->s->lifecycle.idle_timeout_s);
}

static const field lifecycle_fields[] = {
    {"max_duration", "lifecycle.max_duration", f_max_duration, false},
    {"idle_timeout", "lifecycle.idle_timeout", f_idle_timeout, false},
    {NULL, NULL, NULL, false},
};

static int f_lifecycle(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return walk_map(w, v, path, lifecycle_fields);
}

static int f_image(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str(w, v, path, true, &w->s->image);
}

/* env: NAME must be [A-Za-z_][A-Za-z0-9_]*. */
static bool valid_env_name(const char *s, size_t len)
{
    if (len == 0 || is_digit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

/* labels: key must be [a-z0-9][-_.a-z0-9]{0,62}. */
static bool valid_label_key(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !(is_lower((unsigned char)s[0]) || is_digit((unsigned char)s[0])))
        return false;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

/* A mapping of names to scalars kept byte for byte (env, labels). */
static int get_str_map(walk *w, const ynode *v, const char *path, bool is_env)
{
    char q[SHOW_MAX], kpath[PATH_MAX_LEN];
    gpc_spec *s = w->s;
    if (v->kind != Y_MAP)
        return failn(w, v, path, "expected a mapping of %s, got %s",
                     is_env ? "NAME: value" : "key: value", show(v, q));
    size_t count = v->n / 2;
    void *arr = calloc(count ? count : 1, is_env ? sizeof(gpc_env_var) : sizeof(gpc_label));
    if (!arr)
        return nomem(w->err);
    if (is_env)
        s->env = arr;
    else
        s->labels = arr;
    for (size_t i = 0; i < count; i++) {
        const ynode *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        if (key->kind != Y_SCALAR)
            return failn(w, key, path, "expected a string key, got %s", show(key, q));
        if (is_env && !valid_env_name(key->text, key->len))
            return failn(w, key, path,
                         "invalid variable name %s (letters, digits and '_', "
                         "not starting with a digit)", quote(key->text, key->len, q));
        if (!is_env && !valid_label_key(key->text, key->len))
            return failn(w, key, path,
                         "invalid label key %s (lower-case letters, digits, '-', '_' and '.', "
                         "starting with a letter or digit, at most 63 characters)",
                         quote(key->text, key->len, q));
        snprintf(kpath, sizeof(kpath), "%s.%s", path, key->text);
        if (is_env && strncmp(key->text, "GPUCTL_", 7) == 0)
            return failn(w, key, kpath, "names starting with GPUCTL_ are reserved");
        if (val->kind != Y_SCALAR)
            return failn(w, val, kpath, "expected a scalar value, got %s", show(val, q));
        if (is_null(val)) /* at the key: an empty value has no place of its own */
            return failn(w, key, kpath, "null value; quote it if you mean the text");
        char *name = strdup(key->text), *text;
        if (!name)
            return nomem(w->err);
        if (is_env) {
            s->env[s->n_env].name = name;
            s->n_env++;
        } else {
            s->labels[s->n_labels].key = name;
            s->n_labels++;
        }
        int rc = get_str(w, val, kpath, false, &text);
        if (rc)
            return rc;
        if (is_env)
            s->env[s->n_env - 1].value = text;
        else
            s->labels[s->n_labels - 1].value = text;
    }
    return 0;
}

static int f_env(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_map(w, v, path, true);
}

static int f_labels(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str_map(w, v, path, false);
}

static int f_workdir(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str(w, v, path, true, &w->s->workdir);
}

static int f_checkpoint_dir(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str(w, v, path, true, &w->s->checkpoint_dir);
}

static int f_setup(walk *w, const ynode *k, const ynode *v, const char *path)
{
    return get_str(w, v, path, false, &w->s->setup);
}

static int f_run_command(walk *w, const ynode *k, const ynode *v, const char *path)
{
    int rc = get_str(w, v, path, false, &w->s->run.command);
    if (rc)
        return rc;
    for (const char *p = w->s->run.command; *p; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return 0;
    return failn(w, v, path, "the command must not be empty");
}

static int f_nproc(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind == Y_SCALAR && strcmp(v->text, "auto") == 0) {
        w->s->run.nproc_per_node = 0;
        return 0;
    }
    if (v->kind != Y_SCALAR || !parse_u64(v->text, v->len, &n) || n < 1 || n > NPROC_MAX)
        return failn(w, v, path, "expected 'auto' or an integer from 1 to %d, got %s",
                     NPROC_MAX, show(v, q));
    w->s->run.nproc_per_node = (uint32_t)n;
    return 0;
}

static int f_rdzv_port(walk *w, const ynode *k, const ynode *v, const char *path)
{
    char q[SHOW_MAX];
    uint64_t n;
    if (v->kind != Y_SCALAR || !parse_u64(v->text, v->len, &n) || n < 1024 || n > 65535)
        return failn(w, v, path, "expected a port from 1024 to 65535, got %s", show(v, q));
    w->s->run.rdzv_port = (uint32_t)n;
    return 0;
}

static const field run_fields[] = {
    {"command", "run.command", f_run_command, true},
    {"nproc_per_node", "run.nproc_per_node", f_nproc, false},
    {"rdzv_port", "run.rdzv_port", f_rdzv_port, false},
    {NULL, NULL, NULL, false},
};

static int f_run(walk *w, const ynode *k, const ynode *v, const char *path)
{
    if (v->kind == Y_MAP)
        return walk_map(w, v, path, run_fields);
    return f_run_command(w, k, v, path);
}

static const field top_fields[] = {
    {"name", "name", f_name, true},
    {"provider", "provider", f_provider, false},
    {"nodes", "nodes", f_nodes, false},
    {"resources", "resources", f_resources, false},
    {"region", "region", f_region, false},
    {"regions", "regions", f_regions, false},
    {"zone", "zone", f_zone, false},
    {"zones", "zones", f_zones, false},
    {"spot", "spot", f_spot, false},
    {"budget", "budget", f_budget, false},
    {"lifecycle", "lifecycle", f_lifecycle, false},
    {"image", "image", f_image, false},
    {"env", "env", f_env, false},
    {"labels", "labels", f_labels, false},
    {"workdir", "workdir", f_workdir, false},
    {"checkpoint_dir", "checkpoint_dir", f_checkpoint_dir, false},
    {"setup", "setup", f_setup, false},
    {"run", "run", f_run, true},
    {NULL, NULL, NULL, false},
};

static int walk_spec(walk *w, const ynode *root)
{
    char q[SHOW_MAX];
    gpc_spec *s = w->s;
    if (!root || is_null(root))
        return fail_at(w->doc, w->err, 1, 1,
                       "the spec is empty; expected a mapping with at least 'name' and 'run'");
    if (root->kind != Y_MAP)
        return failn(w, root, NULL, "expected a mapping at the top level, got %s",
                     show(root, q));
    int rc = walk_map(w, root, "", top_fields);
    if (rc)
        return rc;
    if (s->n_providers == 0) {
        s->providers = calloc(1, sizeof(*s->providers));
        if (!s->providers || !(s->providers[0] = strdup(gpc_provider_default()->name)))
            return nomem(w->err);
        s->n_providers = 1;
    }
    if (!s->image && !(s->image = strdup("pytorch")))
        return nomem(w->err);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Public entry points.                                               */

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (strcmp(path, "-") == 0 || !slash)
        return strdup(".");
    size_t len = (size_t)(slash - path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    return strndup(path, len ? len : 1);
}

int gpc_spec_load_string(const char *source, const char *base_dir,
                         const char *text, size_t len,
                         gpc_spec **out, gpc_error *err)
{
    ydoc d;
    walk w;
    int rc;
    if (!source)
        source = "<string>";
    if (!text) {
        text = "";
        len = 0;
    }
    if (len > GPC_SPEC_MAX_BYTES)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: larger than %u bytes", source,
                        GPC_SPEC_MAX_BYTES);
    memset(&d, 0, sizeof(d));
    d.src = source;
    d.text = text;
    d.len = len;

    gpc_spec *s = calloc(1, sizeof(*s));
    if (!s)
        return nomem(err);
    s->nodes = 1;
    s->source = strdup(source);
    s->base_dir = strdup(base_dir ? base_dir : ".");
    if (!s->source || !s->base_dir) {
        rc = nomem(err);
        goto done;
    }
    rc = load_tree(&d, err);
    if (rc)
        goto done;
    memset(&w, 0, sizeof(w));
    w.doc = &d;
    w.s = s;
    w.err = err;
    rc = walk_spec(&w, d.root);
done:
    doc_free(&d);
    if (rc) {
        gpc_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int gpc_spec_load_file_text(const char *path, gpc_spec **out, char **text_out,
                            gpc_error *err)
{
    char *text = NULL, *dir;
    size_t len = 0;
    if (text_out)
        *text_out = NULL;
    int rc = gpc_read_file(path, GPC_SPEC_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    dir = dir_of(path);
    if (!dir) {
        free(text);
        return nomem(err);
    }
    rc = gpc_spec_load_string(strcmp(path, "-") == 0 ? "<stdin>" : path, dir, text, len,
                              out, err);
    free(dir);
    if (text_out)
        *text_out = text;
    else
        free(text);
    return rc;
}

int gpc_spec_load_file(const char *path, gpc_spec **out, gpc_error *err)
{
    return gpc_spec_load_file_text(path, out, NULL, err);
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void gpc_spec_free(gpc_spec *s)
{
    if (!s)
        return;
    free(s->source);
    free(s->base_dir);
    free(s->name);
    free_strs(s->providers, s->n_providers);
    for (size_t i = 0; s->resources.gpus && i < s->resources.n_gpus; i++)
        free(s->resources.gpus[i].model);
    free(s->resources.gpus);
    free_strs(s->resources.instance_types, s->resources.n_instance_types);
    free_strs(s->regions, s->n_regions);
    free_strs(s->zones, s->n_zones);
    free(s->image);
    for (size_t i = 0; s->env && i < s->n_env; i++) {
        free(s->env[i].name);
        free(s->env[i].value);
    }
    free(s->env);
    for (size_t i = 0; s->labels && i < s->n_labels; i++) {
        free(s->labels[i].key);
        free(s->labels[i].value);
    }
    free(s->labels);
    free(s->workdir);
    free(s->checkpoint_dir);
    free(s->setup);
    free(s->run.command);
    free(s);
}

/* ------------------------------------------------------------------ */
/* Canonical JSON.                                                    */

/* Add item to obj (or to array obj when key is NULL); on any failure mark
 * *ok false and free the item. */
static cJSON *jput(bool *ok, cJSON *obj, const char *key, cJSON *item)
{
    if (!item || !obj ||
        !(key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item))) {
        cJSON_Delete(item);
        *ok = false;
        return NULL;
    }
    return item;
}

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* 0 means "not set / no limit": null. */
static cJSON *jnum0(double v)
{
    return v != 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *jrange(bool *ok, gpc_range r)
{
    cJSON *o = cJSON_CreateObject();
    jput(ok, o, "min", jnum0(r.min));
    jput(ok, o, "max", jnum0(r.max));
    return o;
}

static cJSON *jstrs(bool *ok, char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        jput(ok, a, NULL, cJSON_CreateString(v[i]));
    return a;
}

static int env_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_env_var *)a)->name, ((const gpc_env_var *)b)->name);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_label *)a)->key, ((const gpc_label *)b)->key);
}

/* env and labels sorted by name: their order carries no meaning. */
static cJSON *jpairs(bool *ok, const void *items, size_t n, bool is_env)
{
    cJSON *o = cJSON_CreateObject();
    size_t size = is_env ? sizeof(gpc_env_var) : sizeof(gpc_label);
    void *copy = n ? malloc(n * size) : NULL;
    if (n && !copy) {
        *ok = false;
        return o;
    }
    if (n) {
        memcpy(copy, items, n * size);
        qsort(copy, n, size, is_env ? env_cmp : label_cmp);
    }
    for (size_t i = 0; i < n; i++) {
        if (is_env) {
            const gpc_env_var *e = (const gpc_env_var *)copy + i;
            jput(ok, o, e->name, jstr(e->value));
        } else {
            const gpc_label *l = (const gpc_label *)copy + i;
            jput(ok, o, l->key, jstr(l->value));
        }
    }
    free(copy);
    return o;
}

cJSON *gpc_spec_to_json(const gpc_spec *s)
{
    bool ok = true;
    if (!s)
        return NULL;
    cJSON *j = cJSON_CreateObject();
    jput(&ok, j, "spec_version", cJSON_CreateNumber(GPC_SPEC_VERSION));
    jput(&ok, j, "name", jstr(s->name));
    jput(&ok, j, "provider", jstrs(&ok, s->providers, s->n_providers));
    jput(&ok, j, "nodes", cJSON_CreateNumber(s->nodes));

    cJSON *r = jput(&ok, j, "resources", cJSON_CreateObject());
    cJSON *gpus = jput(&ok, r, "gpu", cJSON_CreateArray());
    for (size_t i = 0; i < s->resources.n_gpus; i++) {
        const gpc_gpu_req *g = &s->resources.gpus[i];
        cJSON *o = jput(&ok, gpus, NULL, cJSON_CreateObject());
        jput(&ok, o, "model", jstr(g->model && *g->model ? g->model : NULL));
        jput(&ok, o, "memory_gib", jrange(&ok, g->mem_gib));
        jput(&ok, o, "count", jrange(&ok, g->count));
    }
    jput(&ok, r, "cpus", jrange(&ok, s->resources.cpus));
    jput(&ok, r, "memory_gib", jrange(&ok, s->resources.memory_gib));
    cJSON *disk = jput(&ok, r, "disk", cJSON_CreateObject());
    jput(&ok, disk, "size_gib", jnum0(s->resources.disk_gib));
    jput(&ok, disk, "tier", cJSON_CreateString(gpc_disk_tier_name(s->resources.disk_tier)));
    jput(&ok, disk, "iops", jnum0(s->resources.disk_iops));
    jput(&ok, r, "interconnect",
         cJSON_CreateString(gpc_interconnect_name(s->resources.interconnect)));
    jput(&ok, r, "instance_types",
         jstrs(&ok, s->resources.instance_types, s->resources.n_instance_types));

    jput(&ok, j, "regions", jstrs(&ok, s->regions, s->n_regions));
    jput(&ok, j, "zones", jstrs(&ok, s->zones, s->n_zones));

    cJSON *spot = jput(&ok, j, "spot", cJSON_CreateObject());
    jput(&ok, spot, "policy", cJSON_CreateString(gpc_spot_policy_name(s->spot.policy)));
    jput(&ok, spot, "max_price", jnum0(s->spot.max_price));
    jput(&ok, spot, "head", cJSON_CreateString(gpc_spot_policy_name(s->spot.head)));

    cJSON *budget = jput(&ok, j, "budget", cJSON_CreateObject());
    jput(&ok, budget, "max_hourly", jnum0(s->budget.max_hourly));
    jput(&ok, budget, "max_total", jnum0(s->budget.max_total));

    cJSON *life = jput(&ok, j, "lifecycle", cJSON_CreateObject());
    jput(&ok, life, "max_duration_s", jnum0((double)s->lifecycle.max_duration_s));
    jput(&ok, life, "idle_timeout_s", jnum0((double)s->lifecycle.idle_timeout_s));

    jput(&ok, j, "image", jstr(s->image ? s->image : "pytorch"));
    jput(&ok, j, "env", jpairs(&ok, s->env, s->n_env, true));
    jput(&ok, j, "labels", jpairs(&ok, s->labels, s->n_labels, false));
    jput(&ok, j, "workdir", jstr(s->workdir));
    jput(&ok, j, "checkpoint_dir", jstr(s->checkpoint_dir));
    jput(&ok, j, "setup", jstr(s->setup));

    cJSON *run = jput(&ok, j, "run", cJSON_CreateObject());
    jput(&ok, run, "command", jstr(s->run.command));
    jput(&ok, run, "nproc_per_node", s->run.nproc_per_node
                                         ? cJSON_CreateNumber(s->run.nproc_per_node)
                                         : cJSON_CreateString("auto"));
    jput(&ok, run, "rdzv_port", jnum0(s->run.rdzv_port)); /* null: provider default */
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gpc_spec_hash(const gpc_spec *spec, char out[65], gpc_error *err)
{
    cJSON *j = gpc_spec_to_json(spec);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        return nomem(err);
    gpc_sha256_hex(text, strlen(text), out);
    cJSON_free(text);
    return 0;
}
