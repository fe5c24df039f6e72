/* util.c - see include/gpuctl/util.h */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <zlib.h>

#include "gpuctl/buf.h"
#include "gpuctl/util.h"

void gpc_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    static const char hex[] = "0123456789abcdef";
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < mdlen && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

int gpc_base64_encode(const void *data, size_t len, char **out, size_t *out_len,
                      gpc_error *err)
{
    if (len > (size_t)INT_MAX / 2)
        return gpc_fail(err, GPC_ERR_NOMEM, "base64 input too large");
    size_t cap = 4 * ((len + 2) / 3) + 1;
    char *p = malloc(cap);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int n = EVP_EncodeBlock((unsigned char *)p, data, (int)len);
    p[n] = '\0';
    *out = p;
    if (out_len)
        *out_len = (size_t)n;
    return 0;
}

int gpc_base64_decode(const char *text, size_t len, unsigned char **out,
                      size_t *out_len, gpc_error *err)
{
    if (len % 4 != 0 || len > (size_t)INT_MAX / 2)
        return gpc_fail(err, GPC_ERR_RENDER, "invalid base64 length %zu", len);
    unsigned char *p = malloc(len / 4 * 3 + 1);
    if (!p)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int n = EVP_DecodeBlock(p, (const unsigned char *)text, (int)len);
    if (n < 0) {
        free(p);
        return gpc_fail(err, GPC_ERR_RENDER, "invalid base64");
    }
    /* EVP_DecodeBlock counts padding bytes as output: take them off. */
    if (len >= 1 && text[len - 1] == '=')
        n--;
    if (len >= 2 && text[len - 2] == '=')
        n--;
    p[n] = '\0';
    *out = p;
    *out_len = (size_t)n;
    return 0;
}

int gpc_gzip(const void *data, size_t len, unsigned char **out, size_t *out_len,
             gpc_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    /* windowBits 15 + 16 = gzip wrapper; deflateInit2 writes mtime 0. */
    if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return gpc_fail(err, GPC_ERR_INTERNAL, "zlib: deflateInit2 failed");
    uLong cap = deflateBound(&zs, (uLong)len) + 32;
    unsigned char *p = malloc(cap);
    if (!p) {
        deflateEnd(&zs);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    zs.next_in = (Bytef *)(uintptr_t)data;
    zs.avail_in = (uInt)len;
    zs.next_out = p;
    zs.avail_out = (uInt)cap;
    int rc = deflate(&zs, Z_FINISH);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(p);
        return gpc_fail(err, GPC_ERR_INTERNAL, "zlib: deflate failed (%d)", rc);
    }
    *out = p;
    *out_len = n;
    return 0;
}

int gpc_gunzip(const void *data, size_t len, size_t max, unsigned char **out,
               size_t *out_len, gpc_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, 15 + 16) != Z_OK)
        return gpc_fail(err, GPC_ERR_INTERNAL, "zlib: inflateInit2 failed");
    gpc_buf b;
    gpc_buf_init(&b, max);
    unsigned char chunk[16384];
    zs.next_in = (Bytef *)(uintptr_t)data;
    zs.avail_in = (uInt)len;
    int rc;
    do {
        zs.next_out = chunk;
        zs.avail_out = sizeof(chunk);
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) {
            inflateEnd(&zs);
            gpc_buf_free(&b);
            return gpc_fail(err, GPC_ERR_RENDER, "gzip data is corrupt");
        }
        if (gpc_buf_add(&b, chunk, sizeof(chunk) - zs.avail_out, err)) {
            inflateEnd(&zs);
            gpc_buf_free(&b);
            return GPC_ERR_NOMEM;
        }
    } while (rc != Z_STREAM_END && (zs.avail_in > 0 || zs.avail_out == 0));
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        gpc_buf_free(&b);
        return gpc_fail(err, GPC_ERR_RENDER, "gzip data is truncated");
    }
    *out_len = b.len;
    *out = (unsigned char *)gpc_buf_take(&b);
    return *out ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

int gpc_read_file(const char *path, size_t max, char **out, size_t *out_len,
                  gpc_error *err)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    gpc_buf b;
    gpc_buf_init(&b, max);
    char chunk[8192];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (gpc_buf_add(&b, chunk, n, NULL)) {
            rc = gpc_fail(err, GPC_ERR_IO, "%s: larger than %zu bytes", path, max);
            break;
        }
    }
    if (!rc && ferror(f))
        rc = gpc_fail(err, GPC_ERR_IO, "%s: read error: %s", path, strerror(errno));
    if (!is_stdin)
        fclose(f);
    if (rc) {
        gpc_buf_free(&b);
        return rc;
    }
    if (out_len)
        *out_len = b.len;
    *out = gpc_buf_take(&b);
    return *out ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
}

int gpc_write_file_atomic(const char *path, const void *data, size_t len,
                          unsigned mode, gpc_error *err)
{
    char tmp[PATH_MAX];
    if (!*path)
        return gpc_fail(err, GPC_ERR_IO, "cannot write a file with an empty name");
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return gpc_fail(err, GPC_ERR_IO, "%s: path too long", path);
    /* rename() would replace whatever is there: a device (/dev/null, for
     * root), a symlink, ... - only ever replace a regular file. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return gpc_fail(err, GPC_ERR_IO, "%s: exists and is not a regular file (a %s); "
                        "refusing to replace it", path,
                        S_ISDIR(sb.st_mode) ? "directory" : S_ISLNK(sb.st_mode) ? "symbolic link"
                        : "device or special file");
    unlink(tmp); /* left by a killed process with our pid */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_EXCL, (mode_t)mode);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return gpc_fail(err, GPC_ERR_IO, "%s: cannot write: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    int synced = fsync(fd) == 0 ? 0 : errno;
    if (close(fd) != 0 && !synced)
        synced = errno;
    if (synced) {
        int e = synced;
        unlink(tmp);
        return gpc_fail(err, GPC_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(e));
    }
    return 0;
}

int gpc_mkdir_p(const char *path, unsigned mode, gpc_error *err)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(tmp))
        return gpc_fail(err, GPC_ERR_IO, "invalid directory path '%s'", path);
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
                return gpc_fail(err, GPC_ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_IO, "%s: not a directory", path);
    return 0;
}

int gpc_rm_rf(const char *path, gpc_error *err)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? 0 : gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (!d)
            return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        struct dirent *de;
        int rc = 0;
        while (!rc && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char child[PATH_MAX];
            if (snprintf(child, sizeof(child), "%s/%s", path, de->d_name) >= (int)sizeof(child))
                rc = gpc_fail(err, GPC_ERR_IO, "%s: path too long", path);
            else
                rc = gpc_rm_rf(child, err);
        }
        closedir(d);
        if (rc)
            return rc;
        if (rmdir(path) != 0 && errno != ENOENT)
            return gpc_fail(err, GPC_ERR_IO, "rmdir %s: %s", path, strerror(errno));
        return 0;
    }
    if (unlink(path) != 0 && errno != ENOENT)
        return gpc_fail(err, GPC_ERR_IO, "unlink %s: %s", path, strerror(errno));
    return 0;
}

int gpc_random_hex(char out[33], gpc_error *err)
{
    unsigned char b[16];
    static const char hex[] = "0123456789abcdef";
    if (RAND_bytes(b, sizeof(b)) != 1)
        return gpc_fail(err, GPC_ERR_INTERNAL, "RAND_bytes failed");
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
    return 0;
}

char *gpc_strdup(const char *s, gpc_error *err)
{
    if (!s)
        return NULL;
    char *p = strdup(s);
    if (!p)
        gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    return p;
}

int gpc_realpath(const char *path, char **out, gpc_error *err)
{
    char *p = realpath(path, NULL);
    if (!p)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    *out = p;
    return 0;
}

static int lower_ascii(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t gpc_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d[65][65]; /* a distance is at most 64 */
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = lower_ascii((unsigned char)a[i - 1]);
            int cb = lower_ascii((unsigned char)b[j - 1]);
            size_t best = (size_t)d[i - 1][j - 1] + (ca != cb);
            if ((size_t)d[i - 1][j] + 1 < best)
                best = (size_t)d[i - 1][j] + 1;
            if ((size_t)d[i][j - 1] + 1 < best)
                best = (size_t)d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == lower_ascii((unsigned char)b[j - 2]) &&
                lower_ascii((unsigned char)a[i - 2]) == cb && (size_t)d[i - 2][j - 2] + 1 < best)
                best = (size_t)d[i - 2][j - 2] + 1;
            d[i][j] = (unsigned char)best;
        }
    }
    return d[la][lb];
}

int gpc_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

double gpc_json_num(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

const char *gpc_json_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void gpc_format_bytes(uint64_t n, char *out, size_t size)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024) {
        snprintf(out, size, "%llu B", (unsigned long long)n);
        return;
    }
    double v = (double)n / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s", v, unit[u]);
}
