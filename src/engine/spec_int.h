/*
 * spec_int.h - what the parts of the spec loader share (src/engine only):
 *
 *   spec_forms.c  numbers, sizes, durations, ranges, GPUs; quoting and
 *                 did-you-mean for messages
 *   spec_yaml.c   pass 1: libyaml events -> a tree of nodes with positions
 *   spec.c        pass 2: the schema walk -> gpc_spec; load and free
 *   spec_json.c   canonical JSON and the spec hash
 *
 * Every message has the form "FILE:LINE:COL: [field.path: ]what is wrong".
 */
#ifndef GPUCTL_SPEC_INT_H
#define GPUCTL_SPEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"
#include "gpuctl/spec.h"

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
/* No machine or disk is bigger than 1 PB; a larger number is a typo. */
#define SIZE_MAX_GIB (1024.0 * 1024.0)

/* Small ASCII helpers (locale-independent). */
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_lower(int c) { return c >= 'a' && c <= 'z'; }
static inline bool is_alpha(int c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
static inline bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static inline int to_lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
static inline int to_upper(int c) { return is_lower(c) ? c - 'a' + 'A' : c; }

/* ------------------------------------------------------------------ */
/* spec_forms.c                                                       */

/* Digits only, no sign; false on overflow or empty. */
bool spec_parse_u64(const char *s, size_t len, uint64_t *out);

/* An optional sign, digits, an optional fraction ("15", "-2", "0.5", ".5"). */
bool spec_parse_number(const char *s, size_t len, double *out);

/* env: a NAME of [A-Za-z_][A-Za-z0-9_]*. */
bool spec_valid_env_name(const char *s, size_t len);

/* labels: a key of [a-z0-9][-_.a-z0-9]{0,62}. */
bool spec_valid_label_key(const char *s, size_t len);

/* 1 when s[0..len) is a zero duration: "0", "00", or zero and one unit
 * ("0s", "0m", "0h", "0d"), which gpc_parse_duration refuses. */
bool spec_duration_zero(const char *s, size_t len);

/* 'text' for messages, cut at SHOW_MAX bytes on a UTF-8 boundary; returns buf. */
const char *spec_quote(const char *text, size_t len, char buf[SHOW_MAX]);

/* The closest of `names` (NULL-terminated) to `word`, or NULL when none is
 * close: at most 1 edit for words of up to 4 letters, else 2. */
const char *spec_closest(const char *word, const char *const *names);

/* One end of a range: a positive size, or a positive integer count. */
typedef bool (*range_end_fn)(const char *s, size_t len, double *out);
bool spec_size_end(const char *s, size_t len, double *out);
bool spec_count_end(const char *s, size_t len, double *out);

typedef enum range_rc { RG_OK, RG_SYNTAX, RG_EMPTY } range_rc;

/* "X", "X+", "X..Y", "X..", "..Y" -> {min, max} (0 = unbounded). */
range_rc spec_parse_range(const char *s, size_t len, range_end_fn end, gpc_range *out);

/* ------------------------------------------------------------------ */
/* spec_path.c                                                        */

/* The length of the scheme of a URL "SCHEME://REST" (SCHEME: a letter,
 * then letters, digits, '+', '-', '.'), 0 when `s` is not one. */
size_t spec_url_scheme_len(const char *s);

/* Each `data` source written as a URL needs a provider of the spec whose
 * store has that scheme (gpc_provider.store_scheme): GPC_ERR_SPEC
 * "FILE:LINE:COL: data.NAME: ..." at the source otherwise. */
int spec_check_data_urls(const gpc_spec *s, gpc_error *err);

/* checkpoint_dir as a path on nodes that do not see this machine's files
 * (`where`: their provider, or the spec's providers, "aws"): it must be
 * absolute and not a system directory (/, /etc, /var/lib/gpuctl, ...),
 * whose whole contents a store would restore and save.  GPC_ERR_SPEC
 * "FILE:LINE:COL: checkpoint_dir: ..."; 0 also without checkpoint_dir. */
int spec_check_node_ckpt(const gpc_spec *spec, const char *where, gpc_error *err);

/* A store URL's bucket and prefix, `url` being "SCHEME://REST" with a
 * scheme of `sl` bytes: the bucket follows S3's naming rules (3 to 63
 * lower-case letters, digits, '.' and '-', beginning and ending with a
 * letter or digit, no "..", not an IPv4 address); an optional "/PREFIX"
 * is not empty and holds no "//"; no '?', '#', space or control
 * character anywhere.  NULL when it is one, else what is wrong (static
 * text, for a message "data.NAME: 'URL': WHAT"). */
const char *spec_store_url_problem(const char *url, size_t sl);

/* ------------------------------------------------------------------ */
/* spec_yaml.c                                                        */

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

/* Grow an array of *cap elements of `size` bytes (doubling, 8 at first);
 * NULL when out of memory (p is then left as it was). */
void *spec_grow(void *p, size_t *cap, size_t size);

/* Free every node of d and its lists (not d itself). */
void spec_doc_free(ydoc *d);

/* GPC_ERR_NOMEM "out of memory". */
int spec_nomem(gpc_error *err);

/* GPC_ERR_SPEC "SRC:LINE:COL: message". */
int spec_fail_at(const ydoc *d, gpc_error *err, unsigned long line,
                 unsigned long col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Parse d->text (d->len bytes) into d->root: aliases resolved and bounded,
 * duplicate keys and nesting bombs refused, libyaml's syntax errors named
 * by place.  GPC_ERR_SPEC or GPC_ERR_NOMEM; free d with spec_doc_free
 * either way. */
int spec_load_tree(ydoc *d, gpc_error *err);

#endif /* GPUCTL_SPEC_INT_H */
