/*
 * catalog_cache.c - the binary cache of parsed instance tables
 * (catalog_int.h; what it means for a user: include/gpuctl/catalog.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "gpuctl/embedded.h"
#include "gpuctl/util.h"
#include "catalog_int.h"

/* ------------------------------------------------------------------ */
/* The cache of parsed instance tables.                               */

/*
 * A file of GPC_CATALOG_CACHE_MIN_BYTES or more read by
 * gpc_catalog_load_file is parsed once; its rows are kept in a binary file
 * in the cache directory (see catalog.h), named by the SHA-256 of the
 * CSV's realpath, and later loads read that file (one read(), no parse, no
 * hash of the CSV) while the CSV's identity (device, inode, size, mtime,
 * ctime) is the one the cache recorded.  Same machine, same build: the
 * header pins the byte order, the double format, the sizes of its structs
 * and a fingerprint of this build (format, version, built-in GPU and
 * source tables: rows name GPUs by their index in the built-in table).
 *
 * The file: cache_header, then n_rows cache_rows, then the string blob
 * (every string NUL-terminated; offset 0 is "").  Nothing of it is trusted:
 * the header's sizes must add up to the file's length, the CRC-32
 * checksum (cache_checksum: of the header up to the checksum and of
 * everything after it) must match, and every row is checked (offsets
 * inside the blob, which ends with a NUL; GPU index, enum and counts in
 * range; numbers and names as a parse gives them: what a CSV cell may hold,
 * catalog.h's ranges; not the duplicate check) before a pointer is made.  Any
 * doubt means a parse, as without a cache, and a new cache file.
 *
 * The accepted edge: a rewrite of the CSV that keeps its size, its inode
 * and its mtime and ctime to the nanosecond (a second write within one
 * tick of the file system's clock: ctime changes on every write, and on
 * chmod, rename and utimensat too) is not seen; the cache's rows stay in
 * effect until the CSV's identity changes.
 */

#define CACHE_MAGIC "GPCCACHE"
#define CACHE_VERSION 2u  /* 2: zlib CRC-32 checksum */
#define CACHE_ENDIAN 0x01020304u
#define CACHE_PROBE (-1234.5678)
#ifndef GPUCTL_VERSION
#define GPUCTL_VERSION "0.0.0"
#endif
/* Goes into the fingerprint: change it with any change to the file format
 * or to what a row's fields mean. */
#define CACHE_FORMAT                                                                    \
    "gpuctl catalog cache, format 1 (header 240 bytes, rows 104 bytes, string blob), " \
    "gpuctl " GPUCTL_VERSION
/* The most a cache file may be: rows of 104 bytes for the smallest rows a
 * CSV can hold (13 bytes with the line end), and the strings. */
#define CACHE_MAX_BYTES ((size_t)GPC_CATALOG_MAX_BYTES / 12 * 104 + GPC_CATALOG_MAX_BYTES + 4096)

typedef struct cache_header {
    char magic[8];            /* CACHE_MAGIC, no NUL */
    uint32_t version;         /* CACHE_VERSION */
    uint32_t endian;          /* CACHE_ENDIAN in the writer's byte order */
    uint32_t header_size;     /* sizeof(cache_header) */
    uint32_t row_size;        /* sizeof(cache_row) */
    double probe;             /* CACHE_PROBE: the same double format */
    char fingerprint[64];     /* cache_fingerprint(), hex, no NUL */
    /* the CSV, as stat() gave it before the CSV was read */
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
    char sha256[64];          /* of the CSV's bytes, hex, no NUL: the catalog's sha256 */
    uint64_t n_rows;
    uint64_t blob_size;       /* bytes of strings after the rows */
    uint64_t checksum;        /* cache_checksum of all but this field */
} cache_header;

/* A row: gpc_catalog_row with string offsets into the blob and the GPU's
 * index in the built-in table (-1: none; gpu_model is that GPU's model). */
typedef struct cache_row {
    double gpu_mem_gib, vcpus, mem_gib, fabric_gbps;
    double price_ondemand, price_spot, price_ondemand_cny, price_spot_cny;
    uint32_t provider, instance_type, region, source, notes;
    int32_t gpu;
    uint32_t gpu_count, fabric, line, zero;
} cache_row;

_Static_assert(sizeof(cache_header) == 240, "cache_header: see CACHE_FORMAT");
_Static_assert(offsetof(cache_header, checksum) == 232, "the checksum is the header's end");
_Static_assert(sizeof(cache_row) == 104, "cache_row: see CACHE_FORMAT");

/* zlib's CRC-32 of n bytes, continued from `seed` (a project rule: no
 * hand-written hashes).  Against torn or damaged files, where a change
 * goes unseen with a chance of about 2^-32; not against a forger (who
 * could write the cache directory anyway). */
static uint64_t cache_checksum(uint64_t seed, const unsigned char *p, size_t n)
{
    return crc32_z((uLong)seed, p, n);
}

/* The checksum of a whole cache file (its checksum field not counted). */
static uint64_t cache_file_checksum(const unsigned char *file, size_t len)
{
    const size_t at = offsetof(cache_header, checksum);
    uint64_t h = cache_checksum(0, file, at);
    return cache_checksum(h, file + sizeof(cache_header), len - sizeof(cache_header));
}

/* SHA-256 (hex) of CACHE_FORMAT and the built-in gpus.csv and sources.csv:
 * a cache made by another build is never read.  false when a table is
 * missing or memory runs out. */
static bool cache_fingerprint(char out[65])
{
    const gpc_embedded_file *g = gpc_catalog_file_get("gpus.csv");
    const gpc_embedded_file *s = gpc_catalog_file_get("sources.csv");
    if (!g || !s)
        return false;
    size_t n = sizeof(CACHE_FORMAT) + 24 + g->len + s->len;
    char *buf = malloc(n);
    if (!buf)
        return false;
    int o = snprintf(buf, n, "%s%c%zu:%zu:", CACHE_FORMAT, 0, g->len, s->len);
    if (o < 0 || (size_t)o + g->len + s->len > n) {
        free(buf);
        return false;
    }
    memcpy(buf + o, g->data, g->len);
    memcpy(buf + o + g->len, s->data, s->len);
    gpc_sha256_hex(buf, (size_t)o + g->len + s->len, out);
    free(buf);
    return true;
}

/* The cache directory: $GPUCTL_CACHE_DIR, else $XDG_CACHE_HOME/gpuctl (an
 * absolute one), else $HOME/.cache/gpuctl; then /catalog.  false: none. */
static bool cache_dir(char *buf, size_t n)
{
    const char *dir = getenv("GPUCTL_CACHE_DIR"), *sub = "/catalog";
    if (!dir || !*dir) {
        dir = getenv("XDG_CACHE_HOME");
        sub = "/gpuctl/catalog";
        if (!dir || dir[0] != '/') {
            dir = getenv("HOME");
            sub = "/.cache/gpuctl/catalog";
        }
    }
    if (!dir || !*dir)
        return false;
    int len = snprintf(buf, n, "%s%s", dir, sub);
    return len > 0 && (size_t)len < n;
}

/*
 * Whether `path` gets a cache, and where: a regular file of at least
 * GPC_CATALOG_CACHE_MIN_BYTES (and at most GPC_CATALOG_MAX_BYTES), a cache
 * directory, and GPUCTL_CATALOG_CACHE not "0".  ref->st is the file's
 * identity from now, before it is read.
 */
bool gpc_cat_cache_prepare(const char *path, cache_ref *ref)
{
    const char *env = getenv("GPUCTL_CATALOG_CACHE");
    if ((env && strcmp(env, "0") == 0) || strcmp(path, "-") == 0)
        return false;
    if (stat(path, &ref->st) != 0 || !S_ISREG(ref->st.st_mode) ||
        ref->st.st_size < (off_t)GPC_CATALOG_CACHE_MIN_BYTES ||
        (uint64_t)ref->st.st_size > GPC_CATALOG_MAX_BYTES)
        return false;
    if (!cache_dir(ref->dir, sizeof(ref->dir)))
        return false;
    char *real = realpath(path, NULL), key[65];
    if (!real)
        return false;
    gpc_sha256_hex(real, strlen(real), key);
    free(real);
    int len = snprintf(ref->path, sizeof(ref->path), "%s/%s", ref->dir, key);
    return len > 0 && (size_t)len < sizeof(ref->path);
}

/* The header's record of the CSV matches ref->st. */
static bool cache_same_csv(const cache_header *h, const struct stat *st)
{
    return h->dev == (uint64_t)st->st_dev && h->ino == (uint64_t)st->st_ino &&
           h->size == (uint64_t)st->st_size && h->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
           h->mtime_nsec == (int64_t)st->st_mtim.tv_nsec &&
           h->ctime_sec == (int64_t)st->st_ctim.tv_sec &&
           h->ctime_nsec == (int64_t)st->st_ctim.tv_nsec;
}

static bool is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!gpc_cat_is_digit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
            return false;
    return true;
}

/* A figure as a parse gives it: 0 .. max (catalog.h); or -1 (no price). */
static bool count_ok(double v, double max) { return v >= 0 && v <= max; }
static bool price_ok(double v) { return count_ok(v, GPC_CATALOG_PRICE_MAX) || v == -1; }

/* The names of a row as convert_cell takes them from a CSV cell. */
static bool names_ok(const char *provider, const char *type, const char *region)
{
    size_t pl = strlen(provider), tl = strlen(type), rl = strlen(region);
    return gpc_cat_provider_ok(provider, pl) && pl <= 15 && strcmp(provider, "local") != 0 && tl &&
           tl <= 63 && gpc_cat_name_ok(type, tl) && rl <= 47 && gpc_cat_name_ok(region, rl);
}

/* The rows of a cache file read whole into `file` (len bytes, 8-byte
 * aligned), checked; NULL (nothing kept) when anything is wrong. */
static gpc_catalog_row *cache_rows(const gpc_catalog *c, const cache_ref *ref,
                                   const unsigned char *file, size_t len, size_t *n_rows,
                                   char sha[65])
{
    cache_header h;
    char fp[65];
    if (len < sizeof(h))
        return NULL;
    memcpy(&h, file, sizeof(h));
    if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0 || h.version != CACHE_VERSION ||
        h.endian != CACHE_ENDIAN || h.header_size != sizeof(cache_header) ||
        h.row_size != sizeof(cache_row) || h.probe != CACHE_PROBE ||
        !cache_same_csv(&h, &ref->st) || !is_hex64(h.sha256))
        return NULL;
    /* The sizes add up to the file's (without overflow: both are bounded
     * by len first), and the strings end with a NUL. */
    size_t body = len - sizeof(h);
    if (h.n_rows > body / sizeof(cache_row) || h.blob_size == 0 ||
        h.blob_size != body - h.n_rows * sizeof(cache_row) || h.blob_size > UINT32_MAX ||
        h.n_rows > UINT32_MAX)
        return NULL;
    const char *blob = (const char *)file + sizeof(h) + h.n_rows * sizeof(cache_row);
    if (blob[h.blob_size - 1] != '\0' || blob[0] != '\0')
        return NULL;
    if (!cache_fingerprint(fp) || memcmp(h.fingerprint, fp, 64) != 0)
        return NULL;
    if (cache_file_checksum(file, len) != h.checksum)
        return NULL;
    size_t n = (size_t)h.n_rows;
    gpc_catalog_row *rows = malloc(n ? n * sizeof(*rows) : 1);
    if (!rows)
        return NULL;
    gpc_cat_advise_huge(rows, n * sizeof(*rows));
    const cache_row *in = (const cache_row *)(const void *)(file + sizeof(h));
    const uint32_t bs = (uint32_t)h.blob_size;
    uint32_t prev_line = 1;
    for (size_t i = 0; i < n; i++) {
        const cache_row *r = &in[i];
        if (r->provider >= bs || r->instance_type >= bs || r->region >= bs || r->source >= bs ||
            r->notes >= bs || !blob[r->provider] || !blob[r->instance_type] ||
            r->gpu < -1 || r->gpu >= (int64_t)c->n_gpus || r->gpu_count > GPC_CATALOG_GPU_COUNT_MAX ||
            (r->gpu >= 0) != (r->gpu_count > 0) || r->fabric > GPC_FABRIC_ERDMA ||
            r->line < prev_line || r->zero != 0 || !count_ok(r->gpu_mem_gib, GPC_CATALOG_GIB_MAX) ||
            !count_ok(r->vcpus, GPC_CATALOG_VCPUS_MAX) ||
            !count_ok(r->mem_gib, GPC_CATALOG_GIB_MAX) ||
            !count_ok(r->fabric_gbps, GPC_CATALOG_GBPS_MAX) ||
            !price_ok(r->price_ondemand) || !price_ok(r->price_spot) ||
            !price_ok(r->price_ondemand_cny) || !price_ok(r->price_spot_cny) ||
            !names_ok(blob + r->provider, blob + r->instance_type, blob + r->region)) {
            free(rows);
            return NULL;
        }
        prev_line = r->line;
        const gpc_gpu_info *g = r->gpu >= 0 ? &c->gpus[r->gpu] : NULL;
        rows[i] = (gpc_catalog_row){
            .provider = blob + r->provider,
            .instance_type = blob + r->instance_type,
            .region = blob + r->region,
            .gpu_model = g ? g->model : "",
            .gpu_count = r->gpu_count,
            .gpu_mem_gib = r->gpu_mem_gib,
            .vcpus = r->vcpus,
            .mem_gib = r->mem_gib,
            .fabric = (gpc_fabric)r->fabric,
            .fabric_gbps = r->fabric_gbps,
            .price_ondemand = r->price_ondemand,
            .price_spot = r->price_spot,
            .price_ondemand_cny = r->price_ondemand_cny,
            .price_spot_cny = r->price_spot_cny,
            .source = blob + r->source,
            .notes = blob + r->notes,
            .gpu = g,
            .line = r->line,
        };
    }
    memcpy(sha, h.sha256, 64);
    sha[64] = '\0';
    *n_rows = n;
    return rows;
}

/* The rows of ref's cache into c (which has its GPUs and no rows); false
 * (c unchanged) when there is no usable cache. */
bool gpc_cat_cache_read(gpc_catalog *c, const cache_ref *ref)
{
    struct stat st;
    int fd = open(ref->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(cache_header) || (uint64_t)st.st_size > CACHE_MAX_BYTES) {
        close(fd);
        return false;
    }
    size_t len = (size_t)st.st_size, got = 0;
    /* The file becomes an arena block: the rows' strings stay in it. */
    arena_block *b = malloc(sizeof(*b) + len);
    if (!b) {
        close(fd);
        return false;
    }
    gpc_cat_advise_huge(b->data, len);
    while (got < len) {
        ssize_t k = read(fd, b->data + got, len - got);
        if (k > 0)
            got += (size_t)k;
        else if (k == 0 || errno != EINTR)
            break;
    }
    close(fd);
    size_t n = 0;
    gpc_catalog_row *rows =
        got == len ? cache_rows(c, ref, (const unsigned char *)b->data, len, &n, c->sha256)
                   : NULL;
    if (!rows) {
        free(b);
        return false;
    }
    b->used = b->cap = len;
    arena *a = gpc_cat_arena(c);
    b->next = a->head ? a->head->next : NULL; /* behind the current block */
    if (a->head)
        a->head->next = b;
    else
        a->head = b;
    c->rows = rows;
    c->n_rows = n;
    return true;
}

/* The blob being built: strings, each once. */
typedef struct blob_builder {
    char *data;
    size_t len, cap;
    uint32_t *slots;          /* offset + 1 of a string; 0: empty */
    size_t n_slots, used;
} blob_builder;

static bool blob_grow_slots(blob_builder *bb)
{
    size_t n = bb->n_slots ? 2 * bb->n_slots : 4096;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return false;
    for (size_t i = 0; i < bb->n_slots; i++) {
        if (!bb->slots[i])
            continue;
        const char *s = bb->data + bb->slots[i] - 1;
        size_t j = (size_t)gpc_cat_hash_bytes(0, s, strlen(s)) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = bb->slots[i];
    }
    free(bb->slots);
    bb->slots = slots;
    bb->n_slots = n;
    return true;
}

/* The offset of s in the blob, added when new; UINT32_MAX on failure. */
static uint32_t blob_add(blob_builder *bb, const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return 0;
    if (2 * (bb->used + 1) > bb->n_slots && !blob_grow_slots(bb))
        return UINT32_MAX;
    size_t mask = bb->n_slots - 1, j = (size_t)gpc_cat_hash_bytes(0, s, len) & mask;
    for (; bb->slots[j]; j = (j + 1) & mask) {
        const char *t = bb->data + bb->slots[j] - 1;
        if (memcmp(t, s, len + 1) == 0)
            return bb->slots[j] - 1;
    }
    if (bb->len + len + 1 >= UINT32_MAX)
        return UINT32_MAX;
    if (bb->cap - bb->len < len + 1) {
        size_t cap = bb->cap;
        while (cap - bb->len < len + 1)
            cap *= 2;
        char *p = realloc(bb->data, cap);
        if (!p)
            return UINT32_MAX;
        bb->data = p;
        bb->cap = cap;
    }
    uint32_t off = (uint32_t)bb->len;
    memcpy(bb->data + off, s, len + 1);
    bb->len += len + 1;
    bb->slots[j] = off + 1;
    bb->used++;
    return off;
}

/* Write all of buf to fd; false on an error. */
static bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        } else if (k == 0 || errno != EINTR) {
            return false;
        }
    }
    return true;
}

/*
 * Write c's rows (just parsed from the CSV that ref->st describes) as ref's
 * cache file: PATH.tmp.PID, then renamed over PATH, so a reader sees the
 * old file or the new one whole.  No fsync: a file torn by a crash fails
 * the checks and is made again.  Every failure is ignored: the cache is
 * only an optimisation.
 */
void gpc_cat_cache_write(const gpc_catalog *c, const cache_ref *ref)
{
    char fp[65], tmp[PATH_MAX + 32];
    size_t n = c->n_rows;
    if (!cache_fingerprint(fp) || n > UINT32_MAX)
        return;
    /* The rows go straight into the file's buffer; the blob after them
     * once its size is known. */
    const size_t rows_end = sizeof(cache_header) + n * sizeof(cache_row);
    unsigned char *file = malloc(rows_end);
    if (file)
        gpc_cat_advise_huge(file, rows_end);
    blob_builder bb = {.data = malloc(64u << 10), .len = 1, .cap = 64u << 10};
    bool ok = file && bb.data;
    if (bb.data)
        bb.data[0] = '\0'; /* offset 0: "" */
    cache_row *rows = ok ? (cache_row *)(void *)(file + sizeof(cache_header)) : NULL;
    /* The parse shares a string between neighbouring rows: those are
     * looked up once. */
    const char *prev_s[5] = {0};
    uint32_t prev_o[5] = {0};
    for (size_t i = 0; ok && i < n; i++) {
        const gpc_catalog_row *r = &c->rows[i];
        const char *s[5] = {r->provider, r->instance_type, r->region, r->source, r->notes};
        uint32_t o[5];
        for (int k = 0; k < 5; k++) {
            o[k] = s[k] == prev_s[k] ? prev_o[k] : blob_add(&bb, s[k]);
            prev_s[k] = s[k];
            prev_o[k] = o[k];
            ok = ok && o[k] != UINT32_MAX;
        }
        ptrdiff_t g = r->gpu ? r->gpu - c->gpus : -1;
        ok = ok && g >= -1 && g < (ptrdiff_t)c->n_gpus;
        rows[i] = (cache_row){
            .gpu_mem_gib = r->gpu_mem_gib, .vcpus = r->vcpus, .mem_gib = r->mem_gib,
            .fabric_gbps = r->fabric_gbps, .price_ondemand = r->price_ondemand,
            .price_spot = r->price_spot, .price_ondemand_cny = r->price_ondemand_cny,
            .price_spot_cny = r->price_spot_cny, .provider = o[0], .instance_type = o[1],
            .region = o[2], .source = o[3], .notes = o[4], .gpu = (int32_t)g,
            .gpu_count = r->gpu_count, .fabric = (uint32_t)r->fabric, .line = r->line};
    }
    size_t len = rows_end + bb.len;
    unsigned char *whole = ok ? realloc(file, len) : NULL;
    if (whole) {
        file = whole;
        cache_header h;
        memset(&h, 0, sizeof(h));
        memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
        h.version = CACHE_VERSION;
        h.endian = CACHE_ENDIAN;
        h.header_size = sizeof(cache_header);
        h.row_size = sizeof(cache_row);
        h.probe = CACHE_PROBE;
        memcpy(h.fingerprint, fp, 64);
        h.dev = (uint64_t)ref->st.st_dev;
        h.ino = (uint64_t)ref->st.st_ino;
        h.size = (uint64_t)ref->st.st_size;
        h.mtime_sec = (int64_t)ref->st.st_mtim.tv_sec;
        h.mtime_nsec = (int64_t)ref->st.st_mtim.tv_nsec;
        h.ctime_sec = (int64_t)ref->st.st_ctim.tv_sec;
        h.ctime_nsec = (int64_t)ref->st.st_ctim.tv_nsec;
        memcpy(h.sha256, c->sha256, 64);
        h.n_rows = n;
        h.blob_size = bb.len;
        memcpy(file, &h, sizeof(h));
        memcpy(file + rows_end, bb.data, bb.len);
        h.checksum = cache_file_checksum(file, len);
        memcpy(file + offsetof(cache_header, checksum), &h.checksum, sizeof(h.checksum));
    }
    free(bb.data);
    free(bb.slots);
    int k = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", ref->path, (long)getpid());
    if (!whole || k < 0 || (size_t)k >= sizeof(tmp) || gpc_mkdir_p(ref->dir, 0700, NULL)) {
        free(file);
        return;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
        ok = write_all(fd, file, len);
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, ref->path) != 0)
            (void)unlink(tmp);
    }
    free(file);
}
