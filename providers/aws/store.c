/*
 * store.c - the AWS provider's object storage (provider.h, "object
 * storage") on the S3 client (s3.h): one bucket per account and region,
 * "gpuctl-<account>-<region>" (STS GetCallerIdentity), or the one
 * GPUCTL_AWS_BUCKET names; made private, encrypted (SSE-S3), tagged
 * gpuctl:managed=true, with incomplete multipart uploads aborted after 7
 * days (gpc_s3_ensure_bucket), once per session and region before the
 * first write.  A store path P is the key prefix "P/".  Large files go by
 * multipart upload that resumes after an interruption (its manifests in
 * STATE_DIR/aws/s3-uploads).  docs/providers/aws.md, "Object storage".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/config.h"
#include "aws/s3.h"
#include "aws_internal.h"
#include "gpuctl/util.h"

/* Days after which S3 aborts an upload never completed (its parts bill). */
#define STORE_ABORT_DAYS 7

/* The regions whose store this session used. */
#define STORE_REGIONS 8

typedef struct store_slot {
    char region[64];
    char bucket[64];
    int open;             /* s3 opened */
    int ensured;          /* the bucket made / checked in this session */
    gpc_s3 s3;
} store_slot;

struct aws_store {
    store_slot slot[STORE_REGIONS];
    size_t n;
};

void aws_store_free(aws_ctx *c)
{
    if (!c->store)
        return;
    for (size_t i = 0; i < c->store->n; i++)
        if (c->store->slot[i].open)
            gpc_s3_close(&c->store->slot[i].s3);
    free(c->store);
    c->store = NULL;
}

/* The region a store call means: as given, else the configured region,
 * else this EC2 machine's (IMDS), else us-east-1 (as `gpuctl check`). */
static void store_region(aws_ctx *c, const char *region, char out[64])
{
    if (region && region[0]) {
        snprintf(out, 64, "%s", region);
        return;
    }
    if (c->ec2.cfg.region[0]) {
        snprintf(out, 64, "%s", c->ec2.cfg.region);
        return;
    }
    gpc_error ie;
    gpc_error_clear(&ie);
    out[0] = '\0';
    if (gpc_aws_imds_region(out, 64, &ie) || !out[0])
        snprintf(out, 64, "us-east-1");
}

/* The session's S3 client and bucket for `region`; with `make`, the
 * bucket is ensured (once per session). */
static int store_get(aws_ctx *c, const char *region, int make, store_slot **out,
                     gpc_error *err)
{
    char reg[64];
    store_region(c, region, reg);
    if (!c->store && !(c->store = calloc(1, sizeof(*c->store))))
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    store_slot *sl = NULL;
    for (size_t i = 0; i < c->store->n && !sl; i++)
        if (strcmp(c->store->slot[i].region, reg) == 0)
            sl = &c->store->slot[i];
    if (!sl) {
        if (c->store->n == STORE_REGIONS)
            return gpc_fail(err, GPC_ERR_USAGE, "aws: more than %d regions' stores in one "
                            "session", STORE_REGIONS);
        sl = &c->store->slot[c->store->n];
        memset(sl, 0, sizeof(*sl));
        snprintf(sl->region, sizeof(sl->region), "%s", reg);
        int rc = gpc_s3_open(&sl->s3, &c->ec2, reg, err);
        if (rc) {
            gpc_s3_close(&sl->s3);
            return rc;
        }
        sl->open = 1;
        c->store->n++;
        const char *named = getenv("GPUCTL_AWS_BUCKET");
        if (named && named[0]) {
            if (!gpc_s3_bucket_name_ok(named))
                return gpc_fail(err, GPC_ERR_USAGE, "GPUCTL_AWS_BUCKET: '%s' is not an S3 "
                                "bucket name (3 to 63 lower-case letters, digits, '.' and "
                                "'-', starting and ending with a letter or digit)", named);
            snprintf(sl->bucket, sizeof(sl->bucket), "%s", named);
        } else {
            char account[13];
            rc = gpc_s3_account_id(&sl->s3, account, err);
            if (rc)
                return rc;
            gpc_s3_default_bucket(account, reg, sl->bucket);
        }
    }
    if (make && !sl->ensured) {
        static const gpc_s3_tag tags[] = {{"gpuctl:managed", "true"},
                                          {"gpuctl:purpose", "data and checkpoints"}};
        int created = 0;
        int rc = gpc_s3_ensure_bucket(&sl->s3, sl->bucket, tags, sizeof(tags) / sizeof(tags[0]),
                                      STORE_ABORT_DAYS, &created, err);
        if (rc)
            return rc;
        sl->ensured = 1;
        if (created)
            gpc_info(c->log, "aws: made bucket %s in %s (private, encrypted, tagged)",
                     sl->bucket, sl->region);
    }
    *out = sl;
    return 0;
}

int aws_store_url(void *ctx, const char *region, const char *path, char *out, size_t size,
                  gpc_error *err)
{
    store_slot *sl;
    int rc = store_get(ctx, region, 1, &sl, err);
    if (rc)
        return rc;
    if (snprintf(out, size, "s3://%s/%s", sl->bucket, path) >= (int)size)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: s3://%s/%s is too long for its buffer",
                        sl->bucket, path);
    return 0;
}

/* "PATH/" */
static int prefix_of(const char *path, char *out, size_t size, gpc_error *err)
{
    if (snprintf(out, size, "%s/", path) >= (int)size)
        return gpc_fail(err, GPC_ERR_USAGE, "aws: store path too long");
    return 0;
}

int aws_store_push(void *ctx, const char *region, const char *local_dir, const char *path,
                   gpc_store_stats *st, gpc_error *err)
{
    aws_ctx *c = ctx;
    memset(st, 0, sizeof(*st));
    store_slot *sl;
    char prefix[1100], resume[4096];
    int rc = prefix_of(path, prefix, sizeof(prefix), err);
    if (!rc)
        rc = store_get(c, region, 1, &sl, err);
    if (rc)
        return rc;
    int have_dir = c->state_dir &&
                   snprintf(resume, sizeof(resume), "%s/aws/s3-uploads", c->state_dir) <
                       (int)sizeof(resume);
    gpc_s3_sync_stats ss = {0};
    rc = gpc_s3_sync_up(&sl->s3, local_dir, sl->bucket, prefix, have_dir ? resume : NULL, &ss,
                        err);
    st->files_sent = ss.files_sent;
    st->files_skipped = ss.files_skipped;
    st->bytes_sent = ss.bytes_sent;
    return rc;
}

int aws_store_pull(void *ctx, const char *region, const char *path, const char *local_dir,
                   gpc_store_stats *st, gpc_error *err)
{
    memset(st, 0, sizeof(*st));
    store_slot *sl;
    char prefix[1100];
    int rc = prefix_of(path, prefix, sizeof(prefix), err);
    if (!rc)
        rc = store_get(ctx, region, 0, &sl, err);
    if (rc)
        return rc;
    gpc_s3_sync_stats ss = {0};
    rc = gpc_s3_sync_down(&sl->s3, sl->bucket, prefix, local_dir, &ss, err);
    if (rc == GPC_ERR_NOT_FOUND) { /* no bucket yet: nothing to pull */
        gpc_error_clear(err);
        return gpc_mkdir_p(local_dir, 0700, err);
    }
    st->files_sent = ss.files_sent;
    st->files_skipped = ss.files_skipped;
    st->bytes_sent = ss.bytes_sent;
    return rc;
}

/* The objects under PATH/ (none when the bucket does not exist yet). */
static int list_prefix(aws_ctx *c, const char *region, const char *path, store_slot **sl,
                       gpc_s3_object **objs, size_t *n, size_t *plen, gpc_error *err)
{
    char prefix[1100];
    *objs = NULL;
    *n = 0;
    int rc = prefix_of(path, prefix, sizeof(prefix), err);
    if (!rc)
        rc = store_get(c, region, 0, sl, err);
    if (!rc)
        rc = gpc_s3_list(&(*sl)->s3, (*sl)->bucket, prefix, objs, n, err);
    if (rc == GPC_ERR_NOT_FOUND) {
        gpc_error_clear(err);
        rc = 0;
    }
    *plen = strlen(prefix);
    return rc;
}

int aws_store_list(void *ctx, const char *region, const char *path, gpc_store_entry **out,
                   size_t *n, gpc_error *err)
{
    *out = NULL;
    *n = 0;
    store_slot *sl;
    gpc_s3_object *objs = NULL;
    size_t no = 0, plen = 0;
    int rc = list_prefix(ctx, region, path, &sl, &objs, &no, &plen, err);
    gpc_store_entry *v = !rc && no ? calloc(no, sizeof(*v)) : NULL;
    if (!rc && no && !v)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; !rc && i < no; i++) {
        const char *rest = objs[i].key + plen;
        if (!rest[0] || rest[strlen(rest) - 1] == '/')
            continue; /* a "folder" object, no file */
        snprintf(v[k].key, sizeof(v[k].key), "%s", rest);
        v[k].size = objs[i].size;
        v[k].mtime = 0; /* the listing's LastModified is not kept by gpc_s3_list */
        k++;
    }
    free(objs);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

int aws_store_delete(void *ctx, const char *region, const char *path, const char *const *keys,
                     size_t n, gpc_error *err)
{
    store_slot *sl;
    char prefix[1100];
    int rc = prefix_of(path, prefix, sizeof(prefix), err);
    if (!rc)
        rc = store_get(ctx, region, 0, &sl, err);
    if (rc == GPC_ERR_NOT_FOUND) { /* no bucket: nothing to delete */
        gpc_error_clear(err);
        return 0;
    }
    char **full = rc || !n ? NULL : calloc(n, sizeof(*full));
    if (!rc && n && !full)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (; !rc && k < n; k++) {
        size_t len = strlen(prefix) + strlen(keys[k]) + 1;
        if (!(full[k] = malloc(len)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        else
            snprintf(full[k], len, "%s%s", prefix, keys[k]);
    }
    if (!rc && n)
        rc = gpc_s3_delete(&sl->s3, sl->bucket, (const char *const *)full, n, err);
    for (size_t i = 0; full && i < k; i++)
        free(full[i]);
    free(full);
    return rc;
}

int aws_store_remove(void *ctx, const char *region, const char *path, size_t *removed,
                     gpc_error *err)
{
    if (removed)
        *removed = 0;
    store_slot *sl;
    gpc_s3_object *objs = NULL;
    size_t no = 0, plen = 0;
    int rc = list_prefix(ctx, region, path, &sl, &objs, &no, &plen, err);
    const char **keys = !rc && no ? calloc(no, sizeof(*keys)) : NULL;
    if (!rc && no && !keys)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < no; i++)
        keys[i] = objs[i].key;
    if (!rc && no)
        rc = gpc_s3_delete(&sl->s3, sl->bucket, keys, no, err);
    if (!rc && removed)
        *removed = no;
    free(keys);
    free(objs);
    return rc;
}
