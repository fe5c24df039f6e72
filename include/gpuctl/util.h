/*
 * util.h - small helpers over well-kept libraries: hashing and base64 from
 * OpenSSL's libcrypto, gzip from zlib, plus file and path helpers.
 */
#ifndef GPUCTL_UTIL_H
#define GPUCTL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/clock.h" /* gpc_now(), which util.h declared before clock.h */
#include "gpuctl/error.h"

/* SHA-256 of data as 64 lower-case hex chars + NUL (libcrypto EVP). */
void gpc_sha256_hex(const void *data, size_t len, char out[65]);

/*
 * Base64 (RFC 4648, standard alphabet, padded, no line breaks) of data.
 * Caller frees *out (NUL-terminated); *out_len may be NULL.
 */
int gpc_base64_encode(const void *data, size_t len, char **out, size_t *out_len,
                      gpc_error *err);

/* Decode standard base64 (no whitespace); caller frees *out. */
int gpc_base64_decode(const char *text, size_t len, unsigned char **out,
                      size_t *out_len, gpc_error *err);

/*
 * gzip (RFC 1952) of data at the best compression level, with a zero mtime
 * so output is deterministic.  Caller frees *out.
 */
int gpc_gzip(const void *data, size_t len, unsigned char **out, size_t *out_len,
             gpc_error *err);

/* gunzip; fails when the output would pass `max` bytes.  Caller frees *out. */
int gpc_gunzip(const void *data, size_t len, size_t max, unsigned char **out,
               size_t *out_len, gpc_error *err);

/*
 * Read a whole file ("-" = stdin), at most `max` bytes, NUL-terminated.
 * GPC_ERR_IO naming the path on failure.  Caller frees *out.
 */
int gpc_read_file(const char *path, size_t max, char **out, size_t *out_len,
                  gpc_error *err);

/*
 * Write a file atomically: write PATH.tmp.<pid>, fsync, rename over PATH.
 * `mode` is the permission of the new file (e.g. 0600).
 */
int gpc_write_file_atomic(const char *path, const void *data, size_t len,
                          unsigned mode, gpc_error *err);

/* mkdir -p with `mode` for the directories it creates. */
int gpc_mkdir_p(const char *path, unsigned mode, gpc_error *err);

/* Remove a directory tree (like rm -rf); a missing path is not an error. */
int gpc_rm_rf(const char *path, gpc_error *err);


/* 16 random bytes as 32 hex chars + NUL (libcrypto RAND_bytes). */
int gpc_random_hex(char out[33], gpc_error *err);

/* strdup that records GPC_ERR_NOMEM; NULL in -> NULL out without error. */
char *gpc_strdup(const char *s, gpc_error *err);

/* Absolute, normalised path of an existing file or directory (realpath).
 * Caller frees *out. */
int gpc_realpath(const char *path, char **out, gpc_error *err);

/*
 * Optimal-string-alignment distance between a and b, ASCII letters
 * compared without case (for "did you mean" hints); SIZE_MAX when either
 * is longer than 64 bytes (a cluster name has at most 63).
 */
size_t gpc_edit_distance(const char *a, const char *b);

/* A size of `n` bytes for people into out (size bytes): "512 B" below
 * 1 KiB, else one decimal and a binary unit: "1.5 KiB", "12.0 MiB",
 * "3.2 GiB", "1.0 TiB" (TiB the largest).  Truncated to fit. */
void gpc_format_bytes(uint64_t n, char *out, size_t size);

/* 0-15 for a hex digit of either case, -1 for any other byte. */
int gpc_hex_value(int c);

struct cJSON;
/* Member `k` of JSON object `o` as a number (`dflt` when absent or not a
 * number) or as a string (NULL then); borrowed from `o`. */
double gpc_json_num(const struct cJSON *o, const char *k, double dflt);
const char *gpc_json_str(const struct cJSON *o, const char *k);

#endif /* GPUCTL_UTIL_H */
