/*
 * fuzz_catalog_cache.c - the parsed-table cache of a large catalog file:
 * the input is the cache file of $GPUCTL_CACHE_DIR/catalog/ for a CSV of
 * at least GPC_CATALOG_CACHE_MIN_BYTES, then gpc_catalog_load_file(CSV)
 * as --catalog does.
 *
 * The cache is trusted only when it names this CSV (device, inode, size,
 * times) and this build (a fingerprint) and its CRC-32 matches; like the
 * forged caches of tests/unit/test_catalog.c, each input gets those fields
 * from this run before it is written (so that a corpus works on any
 * machine and inputs reach the row checks).  The CSV itself is refused at
 * its second line, so a refused cache costs little.  A cache that loads
 * must hold rows a CSV can hold: written back, they load again (but for
 * duplicate rows: the cache reader does not look for them).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "fuzz.h"
#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/util.h"

/* src/catalog.c's cache_header (as tests/unit/test_catalog.c has it). */
enum {
    H_FINGERPRINT = 32, H_DEV = 96, H_INO = 104, H_SIZE = 112, H_MTIME_SEC = 120,
    H_MTIME_NSEC = 128, H_CTIME_SEC = 136, H_CTIME_NSEC = 144, H_CHECKSUM = 232, H_END = 240
};

#define HDR                                                                              \
    "provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib," \
    "interconnect,interconnect_gbps,price_ondemand_usd_hr,price_spot_usd_hr,"            \
    "price_ondemand_cny_hr,price_spot_cny_hr,source,notes\n"

static char csv[PATH_MAX], cache[PATH_MAX];
static unsigned char fingerprint[64];

/* A CSV of header, `row` and blank lines up to the cache's minimum. */
static void big_csv(const char *path, const char *row)
{
    size_t len = GPC_CATALOG_CACHE_MIN_BYTES + 64;
    char *b = malloc(len);
    if (!b)
        abort();
    memset(b, '\n', len);
    memcpy(b, HDR, strlen(HDR));
    memcpy(b + strlen(HDR), row, strlen(row));
    fuzz_write(path, b, len);
    free(b);
}

/* The cache file of the CSV at path. */
static void cache_of(const char *path, char *out, size_t size)
{
    char *real = realpath(path, NULL), key[65];
    if (!real)
        abort();
    gpc_sha256_hex(real, strlen(real), key);
    free(real);
    snprintf(out, size, "%s/catalog/%s", getenv("GPUCTL_CACHE_DIR"), key);
}

static void setup(void)
{
    /* This build's fingerprint, from a cache it writes for a valid CSV. */
    char good[PATH_MAX], good_cache[PATH_MAX];
    snprintf(good, sizeof(good), "%s", fuzz_path("good.csv"));
    big_csv(good, "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,s,\n");
    gpc_catalog *c = NULL;
    if (gpc_catalog_load_file(good, &c, NULL))
        abort();
    gpc_catalog_free(c);
    cache_of(good, good_cache, sizeof(good_cache));
    char *text = NULL;
    size_t len = 0;
    if (gpc_read_file(good_cache, 1u << 20, &text, &len, NULL) || len < H_END)
        abort();
    memcpy(fingerprint, text + H_FINGERPRINT, sizeof(fingerprint));
    free(text);
    snprintf(csv, sizeof(csv), "%s", fuzz_path("big.csv"));
    big_csv(csv, "x\n"); /* refused at line 2 */
    cache_of(csv, cache, sizeof(cache));
}

static void put64(unsigned char *p, size_t at, uint64_t v)
{
    memcpy(p + at, &v, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    if (!csv[0])
        setup();
    unsigned char *b = malloc(size ? size : 1);
    if (!b)
        abort();
    memcpy(b, data, size);
    if (size >= H_END) {
        struct stat st;
        if (stat(csv, &st) != 0)
            abort();
        memcpy(b + H_FINGERPRINT, fingerprint, sizeof(fingerprint));
        put64(b, H_DEV, (uint64_t)st.st_dev);
        put64(b, H_INO, (uint64_t)st.st_ino);
        put64(b, H_SIZE, (uint64_t)st.st_size);
        put64(b, H_MTIME_SEC, (uint64_t)st.st_mtim.tv_sec);
        put64(b, H_MTIME_NSEC, (uint64_t)st.st_mtim.tv_nsec);
        put64(b, H_CTIME_SEC, (uint64_t)st.st_ctim.tv_sec);
        put64(b, H_CTIME_NSEC, (uint64_t)st.st_ctim.tv_nsec);
        uint64_t sum = crc32_z(0, b, H_CHECKSUM);
        sum = crc32_z((uLong)sum, b + H_END, size - H_END);
        put64(b, H_CHECKSUM, sum);
    }
    fuzz_write(cache, b, size);
    free(b);
    gpc_catalog *c = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_catalog_load_file(csv, &c, &err);
    /* the CSV itself fails: a load that works read the cache */
    fuzz_note("catalog_cache", rc ? "cache refused" : "cache read", NULL);
    if (rc)
        return 0;
    gpc_buf out;
    gpc_buf_init(&out, GPC_CATALOG_MAX_BYTES);
    if (gpc_catalog_write_csv(c, &out, &err) == 0) {
        gpc_catalog *back = NULL;
        /* the cache does not look for duplicate rows (src/catalog.c) */
        int rc2 = gpc_catalog_load_string("written.csv", out.data, out.len, &back, &err);
        if ((rc2 && !strstr(err.msg, ": duplicate row for ")) ||
            (!rc2 && back->n_rows != c->n_rows)) {
            fprintf(stderr, "fuzz: cached rows a CSV cannot hold: %s\n", err.msg);
            abort();
        }
        gpc_catalog_free(back);
    }
    gpc_buf_free(&out);
    gpc_catalog_free(c);
    return 0;
}
