/*
 * store_copy.c - the incremental directory copy, listing and removal that
 * the providers whose store is a directory share (store.h): local (under
 * the state directory) and slurm (under a Slurm cluster's job_dir).
 *
 * A file is "unchanged" when the destination has a regular file of the
 * same size and SHA-256 (OpenSSL's EVP digest, read in 64 KiB blocks), the
 * rule S3's sync uses too (aws/s3.h, x-amz-meta-sha256).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "gpuctl/store.h"
#include "gpuctl/util.h"

#define COPY_BLOCK (64u << 10)

int gpc_store_path_ok(const char *path)
{
    size_t len = path ? strlen(path) : 0;
    if (len == 0 || len > GPC_STORE_PATH_MAX)
        return 0;
    const char *p = path;
    for (;;) {
        size_t seg = strcspn(p, "/");
        if (seg == 0 || (seg == 1 && p[0] == '.') || (seg == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        for (size_t i = 0; i < seg; i++) {
            char c = p[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-'))
                return 0;
        }
        if (!p[seg])
            return 1;
        p += seg + 1;
    }
}

int gpc_data_name_ok(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > 63 || strchr(name, '/') || !gpc_store_path_ok(name))
        return 0;
    char c = name[0];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The hex SHA-256 of the file open on fd (read from its start). */
static int sha256_fd(int fd, const char *path, char hex[65], gpc_error *err)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *buf = malloc(COPY_BLOCK);
    int rc = 0;
    if (!md || !buf || !EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (;;) {
        ssize_t got = read(fd, buf, COPY_BLOCK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        if (!EVP_DigestUpdate(md, buf, (size_t)got)) {
            rc = gpc_fail(err, GPC_ERR_INTERNAL, "SHA-256 failed");
            goto out;
        }
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    if (!EVP_DigestFinal_ex(md, d, &dl) || dl != 32) {
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "SHA-256 failed");
        goto out;
    }
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
out:
    EVP_MD_CTX_free(md);
    free(buf);
    return rc;
}

static int sha256_path(const char *path, char hex[65], gpc_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
    int rc = sha256_fd(fd, path, hex, err);
    close(fd);
    return rc;
}

int gpc_store_file_sha256(const char *path, char hex[65], gpc_error *err)
{
    return sha256_path(path, hex, err);
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copy src to dst through "dst.gpuctl-part" (made with `mode`, less the
 * umask); *bytes receives the size. */
static int copy_file(const char *src, const char *dst, mode_t mode, uint64_t *bytes,
                     gpc_error *err)
{
    char part[PATH_MAX];
    if (snprintf(part, sizeof(part), "%s.gpuctl-part", dst) >= (int)sizeof(part))
        return gpc_fail(err, GPC_ERR_IO, "%s: path too long", dst);
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", src, strerror(errno));
    int out = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (out < 0) {
        int e = errno;
        close(in);
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", part, strerror(e));
    }
    unsigned char *buf = malloc(COPY_BLOCK);
    int rc = buf ? 0 : gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    uint64_t total = 0;
    while (!rc) {
        ssize_t got = read(in, buf, COPY_BLOCK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", src, strerror(errno));
        else if (got == 0)
            break;
        else if (write_all(out, buf, (size_t)got))
            rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", part, strerror(errno));
        else
            total += (uint64_t)got;
    }
    free(buf);
    close(in);
    if (!rc && fsync(out))
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", part, strerror(errno));
    if (close(out) && !rc)
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", part, strerror(errno));
    if (!rc && rename(part, dst))
        rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", dst, strerror(errno));
    if (rc)
        unlink(part);
    else
        *bytes = total;
    return rc;
}

/* Byte order of names, for a walk that does not depend on the locale. */
static int name_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_name(const struct dirent *d)
{
    return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Called for each regular file: its full path, its path relative to the
 * walk's root, its lstat. */
typedef int (*walk_fn)(const char *path, const char *rel, const struct stat *sb, void *ud,
                       gpc_error *err);

static int walk(const char *root, const char *rel, walk_fn fn, void *ud, gpc_error *err)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel) >= (int)sizeof(dir))
        return gpc_fail(err, GPC_ERR_IO, "%s/%s: path too long", root, rel);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, skip_name, name_cmp);
    if (n < 0)
        return gpc_fail(err, GPC_ERR_IO, "%s: %s", dir, strerror(errno));
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX], sub[PATH_MAX];
        if (!rc && (snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) >=
                        (int)sizeof(path) ||
                    snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "",
                             names[i]->d_name) >= (int)sizeof(sub)))
            rc = gpc_fail(err, GPC_ERR_IO, "%s/%s: path too long", dir, names[i]->d_name);
        struct stat sb;
        if (!rc && lstat(path, &sb))
            rc = gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        /* a file being written by an earlier interrupted copy is no data */
        size_t nl = strlen(names[i]->d_name), pl = strlen(".gpuctl-part");
        int part = nl > pl && strcmp(names[i]->d_name + nl - pl, ".gpuctl-part") == 0;
        if (!rc && S_ISDIR(sb.st_mode))
            rc = walk(root, sub, fn, ud, err);
        else if (!rc && S_ISREG(sb.st_mode) && !part)
            rc = fn(path, sub, &sb, ud, err);
        free(names[i]);
    }
    free(names);
    return rc;
}

typedef struct copy_walk {
    const char *dst;
    gpc_store_stats *st;
    mode_t file_mode, dir_mode; /* less the umask */
} copy_walk;

static int copy_one(const char *path, const char *rel, const struct stat *sb, void *ud,
                    gpc_error *err)
{
    copy_walk *cw = ud;
    char to[PATH_MAX];
    if (snprintf(to, sizeof(to), "%s/%s", cw->dst, rel) >= (int)sizeof(to))
        return gpc_fail(err, GPC_ERR_IO, "%s/%s: path too long", cw->dst, rel);
    struct stat db;
    if (lstat(to, &db) == 0 && S_ISREG(db.st_mode) && db.st_size == sb->st_size) {
        char a[65], b[65];
        int rc = sha256_path(path, a, err);
        if (!rc)
            rc = sha256_path(to, b, err);
        if (rc)
            return rc;
        if (strcmp(a, b) == 0) {
            cw->st->files_skipped++;
            return 0;
        }
    }
    /* the file's directory */
    char *slash = strrchr(to, '/');
    *slash = '\0';
    int rc = gpc_mkdir_p(to, cw->dir_mode, err);
    *slash = '/';
    uint64_t bytes = 0;
    if (!rc)
        rc = copy_file(path, to, cw->file_mode, &bytes, err);
    if (!rc) {
        cw->st->files_sent++;
        cw->st->bytes_sent += bytes;
    }
    return rc;
}

static int copy_dir(const char *src, const char *dst, mode_t file_mode, mode_t dir_mode,
                    gpc_store_stats *st, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    struct stat sb;
    if (stat(src, &sb))
        return errno == ENOENT ? gpc_fail(err, GPC_ERR_USAGE, "%s: no such directory", src)
                               : gpc_fail(err, GPC_ERR_IO, "%s: %s", src, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: not a directory", src);
    int rc = gpc_mkdir_p(dst, dir_mode, err);
    if (rc)
        return rc;
    copy_walk cw = {.dst = dst, .st = st, .file_mode = file_mode, .dir_mode = dir_mode};
    return walk(src, "", copy_one, &cw, err);
}

int gpc_store_copy_dir(const char *src, const char *dst, gpc_store_stats *st, gpc_error *err)
{
    return copy_dir(src, dst, 0600, 0700, st, err);
}

int gpc_store_pull_dir(const char *store, const char *local_dir, gpc_store_stats *st,
                       gpc_error *err)
{
    struct stat sb;
    memset(st, 0, sizeof(*st));
    /* what cp and aws s3 cp give: the umask decides */
    if (stat(store, &sb) != 0 && errno == ENOENT)   /* nothing stored yet */
        return gpc_mkdir_p(local_dir, 0777, err);
    return copy_dir(store, local_dir, 0666, 0777, st, err);
}

typedef struct list_walk {
    gpc_store_entry *v;
    size_t n, cap;
} list_walk;

static int list_one(const char *path, const char *rel, const struct stat *sb, void *ud,
                    gpc_error *err)
{
    (void)path;
    list_walk *lw = ud;
    if (lw->n == lw->cap) {
        size_t cap = lw->cap ? lw->cap * 2 : 16;
        gpc_store_entry *v = realloc(lw->v, cap * sizeof(*v));
        if (!v)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        lw->v = v;
        lw->cap = cap;
    }
    gpc_store_entry *e = &lw->v[lw->n];
    memset(e, 0, sizeof(*e));
    if (snprintf(e->key, sizeof(e->key), "%s", rel) >= (int)sizeof(e->key))
        return gpc_fail(err, GPC_ERR_IO, "%s: path too long", path);
    e->size = (uint64_t)sb->st_size;
    e->mtime = (int64_t)sb->st_mtime;
    lw->n++;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const gpc_store_entry *)a)->key, ((const gpc_store_entry *)b)->key);
}

int gpc_store_list_dir(const char *dir, gpc_store_entry **out, size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    struct stat sb;
    if (stat(dir, &sb))
        return errno == ENOENT ? 0 : gpc_fail(err, GPC_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_IO, "%s: not a directory", dir);
    list_walk lw = {0};
    int rc = walk(dir, "", list_one, &lw, err);
    if (rc) {
        free(lw.v);
        return rc;
    }
    if (lw.n)
        qsort(lw.v, lw.n, sizeof(*lw.v), entry_cmp);
    *out = lw.v;
    *n = lw.n;
    return 0;
}

int gpc_store_remove_dir(const char *dir, size_t *removed, gpc_error *err)
{
    gpc_store_entry *v = NULL;
    size_t n = 0;
    int rc = gpc_store_list_dir(dir, &v, &n, err);
    free(v);
    if (!rc)
        rc = gpc_rm_rf(dir, err);
    if (!rc && removed)
        *removed = n;
    return rc;
}

int gpc_store_delete_files(const char *dir, const char *const *keys, size_t n, gpc_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!gpc_store_path_ok(keys[i]))
            return gpc_fail(err, GPC_ERR_INTERNAL, "store: unsafe key '%s'", keys[i]);
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, keys[i]) >= (int)sizeof(path))
            return gpc_fail(err, GPC_ERR_IO, "%s/%s: path too long", dir, keys[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
        /* the directories it leaves empty, up to (not including) dir */
        size_t dl = strlen(dir);
        for (char *slash = strrchr(path, '/'); slash && (size_t)(slash - path) > dl;
             slash = strrchr(path, '/')) {
            *slash = '\0';
            if (rmdir(path) != 0)
                break; /* not empty (or gone): keep it */
        }
    }
    return 0;
}

typedef struct digest_walk {
    EVP_MD_CTX *md;
    unsigned long files;
} digest_walk;

static int digest_one(const char *path, const char *rel, const struct stat *sb, void *ud,
                      gpc_error *err)
{
    digest_walk *dw = ud;
    char hex[65], line[PATH_MAX + 128];
    int rc = sha256_path(path, hex, err);
    if (rc)
        return rc;
    int k = snprintf(line, sizeof(line), "%s\t%llu\t%s\n", rel,
                     (unsigned long long)sb->st_size, hex);
    if (k < 0 || k >= (int)sizeof(line))
        return gpc_fail(err, GPC_ERR_IO, "%s: path too long", path);
    if (!EVP_DigestUpdate(dw->md, line, (size_t)k))
        return gpc_fail(err, GPC_ERR_INTERNAL, "SHA-256 failed");
    dw->files++;
    return 0;
}

int gpc_store_dir_digest(const char *dir, char hex[65], unsigned long *files, gpc_error *err)
{
    hex[0] = '\0';
    if (files)
        *files = 0;
    struct stat sb;
    if (stat(dir, &sb))
        return errno == ENOENT ? gpc_fail(err, GPC_ERR_USAGE, "%s: no such directory", dir)
                               : gpc_fail(err, GPC_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return gpc_fail(err, GPC_ERR_USAGE, "%s: not a directory", dir);
    digest_walk dw = {.md = EVP_MD_CTX_new()};
    if (!dw.md || !EVP_DigestInit_ex(dw.md, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(dw.md);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    int rc = walk(dir, "", digest_one, &dw, err);
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    if (!rc && (!EVP_DigestFinal_ex(dw.md, d, &dl) || dl != 32))
        rc = gpc_fail(err, GPC_ERR_INTERNAL, "SHA-256 failed");
    EVP_MD_CTX_free(dw.md);
    if (rc)
        return rc;
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
    if (files)
        *files = dw.files;
    return 0;
}
