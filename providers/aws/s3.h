/*
 * s3.h - the Amazon S3 REST client under gpuctl's AWS provider (private to
 * providers/aws/): a bucket per user and region, objects, multipart upload
 * that resumes after an interruption, and incremental directory sync in
 * both directions.  The storage seam (checkpoints, `gpuctl data`) is built
 * on these calls.
 *
 * Facts: the project's AWS reference notes, aws.md section 1 (SigV4), 6
 * (S3: addressing 6.1, operations 6.2, limits 6.3, resume 6.4, signed vs
 * UNSIGNED-PAYLOAD 6.5, errors 6.6), 4.5 (endpoints); the Amazon S3 API
 * Reference for each operation named below.
 *
 * Transport.  Every request goes through the HTTP layer (gpuctl/http.h)
 * with the EC2 session's connection cache, and is signed anew for each
 * attempt with SigV4 (aws/sigv4.h) for service "s3" and the bucket's
 * region, with the session's credentials (gpc_ec2_credentials: the same
 * chain, refreshed the same way).  `x-amz-content-sha256` is always sent
 * and signed: the hex SHA-256 of the body, or UNSIGNED-PAYLOAD for a body
 * sent over https together with a Content-MD5 that S3 verifies (never over
 * plain http, never without Content-MD5).  Objects, parts, DeleteObjects
 * and the bucket settings are sent with Content-MD5 as well.
 *
 * Addressing (aws.md 6.1).  Virtual-hosted style
 * (https://BUCKET.s3.REGION.amazonaws.com/KEY) for a DNS-compatible bucket
 * name without dots on the default endpoint; path style
 * (ENDPOINT/BUCKET/KEY) for a dotted name and for any endpoint override
 * (AWS_ENDPOINT_URL_S3 and the other sources of gpc_aws_service_endpoint).
 * Keys are UriEncoded once, '/' kept, and signed with S3's path rules (no
 * normalisation).
 *
 * Errors (aws.md 6.6).  The S3 error document <Error><Code/><Message/>
 * <RequestId/></Error> is read (also from a 200 answer of
 * CompleteMultipartUpload).  Retried, with capped exponential backoff and
 * full jitter (the HTTP layer): SlowDown, InternalError,
 * ServiceUnavailable, RequestTimeout, any 5xx, transport failures.  Fixed
 * and retried once: RequestTimeTooSkewed (re-signed with the server's
 * clock from its Date header) and a wrong region (AuthorizationHeaderMalformed
 * or PermanentRedirect naming <Region>, or x-amz-bucket-region: the
 * request is sent again to that region and the bucket's region is
 * remembered).  Mapping: AccessDenied, SignatureDoesNotMatch,
 * InvalidAccessKeyId, ExpiredToken, RequestTimeTooSkewed -> GPC_ERR_AUTH;
 * NoSuchBucket, NoSuchKey, NoSuchUpload (and a 404 without a body, as
 * HEAD answers) -> GPC_ERR_NOT_FOUND; everything else GPC_ERR_PROVIDER.
 * Messages read "aws: s3 OPERATION s3://BUCKET/KEY: CODE: MESSAGE
 * (request id ID)"; err->remote holds the code, HTTP status and request
 * id.
 *
 * Threads: a gpc_s3 is used by one thread at a time (parts go in parallel
 * through the HTTP layer's multi interface, in the calling thread).
 */
#ifndef GPUCTL_AWS_S3_H
#define GPUCTL_AWS_S3_H

#include <stddef.h>
#include <stdint.h>

#include "aws/ec2.h"
#include "gpuctl/error.h"

/* S3's XML namespace (aws.md 6.2). */
#define GPC_S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* Limits of multipart upload (aws.md 6.3), bytes / counts. */
#define GPC_S3_PART_MIN       (5ull << 20)    /* every part but the last */
#define GPC_S3_PART_MAX       (5ull << 30)
#define GPC_S3_PARTS_MAX      10000
#define GPC_S3_PART_DEFAULT   (8ull << 20)    /* gpuctl's smallest choice */
#define GPC_S3_PARALLEL       4               /* parts in flight */
#define GPC_S3_GET_CHUNK      (8u << 20)      /* bytes per ranged GET */
#define GPC_S3_DELETE_BATCH   1000            /* keys per DeleteObjects */

/* The metadata header that holds a whole object's hex SHA-256 (aws.md 6.4
 * step 4): set on every object gpuctl writes, compared by the syncs. */
#define GPC_S3_META_SHA256 "x-amz-meta-sha256"

/* A session: borrows an EC2 session for its configuration, credentials,
 * connection cache and log. */
typedef struct gpc_s3 {
    gpc_ec2 *aws;               /* borrowed for the session's life */
    char region[64];            /* the bucket's region (signing, endpoint) */
    char *endpoint;             /* heap: the S3 endpoint for `region` */
    int override;               /* 1: an endpoint override (path style) */
    long clock_offset_s;        /* S3 time - ours, from RequestTimeTooSkewed */
    /* tunables (0 = default), set after gpc_s3_open */
    uint64_t part_size;         /* multipart part size, >= GPC_S3_PART_MIN;
                                   0 = max(8 MiB, ceil(size / 10000)) rounded
                                   up to a MiB (aws.md 6.3) */
    uint64_t multipart_threshold; /* files of at least this many bytes go by
                                   multipart upload; 0, or more than the
                                   part size = the part size (a PutObject
                                   holds the whole file in memory) */
    int parallel;               /* parts in flight; 0 = GPC_S3_PARALLEL */
    long backoff_base_ms;       /* HTTP retry backoff base; 0 = the layer's */
    int max_attempts;           /* tries per request; 0 = 5 */
    /* counters (since open) */
    unsigned long requests;     /* HTTP requests made (attempts not counted) */
    unsigned long parts_sent;   /* UploadPart requests that succeeded */
} gpc_s3;

/*
 * Open a session for buckets in `region` (non-empty; the region of the
 * bucket: a bucket found elsewhere is followed, see above).  The endpoint
 * comes from gpc_aws_service_endpoint(&aws->cfg, GPC_AWS_S3, region).
 * Errors: GPC_ERR_USAGE (bad region), GPC_ERR_NOMEM.  Close with
 * gpc_s3_close, also after an error.
 */
int gpc_s3_open(gpc_s3 *s, gpc_ec2 *aws, const char *region, gpc_error *err);
void gpc_s3_close(gpc_s3 *s);

/*
 * The URL of BUCKET/KEY (key NULL or "": the bucket itself) with `query`
 * (NULL = none; as on the wire, already encoded) appended after '?', as
 * described under Addressing, into *url (heap, caller frees).  Errors:
 * GPC_ERR_USAGE (a bucket name that is not 3-63 characters of lower-case
 * letters, digits, '.' and '-', starting and ending with a letter or
 * digit; a key with a "." or ".." segment, which libcurl would remove from
 * the URL before sending, so that the object reached would not be the one
 * named and signed), GPC_ERR_NOMEM.
 */
int gpc_s3_url(const gpc_s3 *s, const char *bucket, const char *key, const char *query,
               char **url, gpc_error *err);

/* 1 when `bucket` is a valid S3 bucket name (rules above), else 0. */
int gpc_s3_bucket_name_ok(const char *bucket);

/* ---- requests ---------------------------------------------------------- */

/* One signed request (also what the operations below use). */
typedef struct gpc_s3_request {
    const char *op;             /* "PutObject", ... (messages, retry rule) */
    const char *method;         /* "GET", "PUT", "POST", "DELETE", "HEAD" */
    const char *bucket;         /* required */
    const char *key;            /* NULL or "" = the bucket */
    const char *query;          /* wire form, e.g. "uploads" or
                                   "partNumber=1&uploadId=ID%2B"; NULL = none */
    const char *const *headers; /* extra "Name: value" headers, all signed */
    size_t n_headers;
    const void *body;           /* NULL = none */
    size_t body_len;
    const long *accept;         /* statuses beside 2xx that are answers */
    size_t n_accept;
    int content_md5;            /* 1: send Content-MD5 also over http (S3
                                   checks it; DeleteObjects and the bucket
                                   configuration PUTs require it) */
} gpc_s3_request;

/*
 * The payload headers gpuctl sends and signs for a request with this body,
 * for an endpoint URL starting with https (1) or not (0): into hdr[0..) as
 * "Name: value" strings of at most 160 bytes each, returns how many (1 or
 * 2):
 *   "x-amz-content-sha256: <hex SHA-256>"     plain http, or no body
 *   "x-amz-content-sha256: UNSIGNED-PAYLOAD"  https with a body (has_body 1)
 *   "Content-MD5: <base64 MD5>"               with UNSIGNED-PAYLOAD always,
 *                                             else when content_md5 is 1
 * Errors: -1 with err filled (GPC_ERR_INTERNAL: libcrypto failed).
 */
int gpc_s3_payload_headers(const void *body, size_t len, int has_body, int https,
                           int content_md5, char hdr[2][160], gpc_error *err);

/*
 * Send one request with the retries, fixes and mapping described at the
 * top; *resp (released by the caller with gpc_http_response_free, also on
 * failure) holds the last answer.  Returns 0 (2xx or accepted status) or
 * the mapped error.
 */
int gpc_s3_send(gpc_s3 *s, const gpc_s3_request *r, gpc_http_response *resp, gpc_error *err);

/* ---- bucket ------------------------------------------------------------ */

/*
 * The account id of the session's credentials (STS GetCallerIdentity,
 * signed for service "sts" in the session's region, endpoint
 * gpc_aws_service_endpoint(GPC_AWS_STS)) into out (13 bytes: 12 digits).
 * Errors: mapped as EC2's (ec2.h), GPC_ERR_PROVIDER for an answer without
 * a 12-digit <Account>.
 */
int gpc_s3_account_id(gpc_s3 *s, char out[13], gpc_error *err);

/* "gpuctl-<account>-<region>" into out (64 bytes). */
void gpc_s3_default_bucket(const char *account, const char *region, char out[64]);

/* A tag gpuctl puts on a bucket. */
typedef struct gpc_s3_tag {
    const char *key, *value;
} gpc_s3_tag;

/*
 * Make sure `bucket` exists in the session's region, owned by the caller,
 * private and encrypted, and say whether it was made (*created 1) or was
 * there (0; created may be NULL).  Steps, each idempotent:
 *   HeadBucket: 200 -> ours; 404 -> create; 301 or a 400 with
 *     x-amz-bucket-region -> GPC_ERR_USAGE "bucket B is in region R, not
 *     S"; 403 -> GPC_ERR_AUTH "bucket B exists but belongs to another
 *     account (or these credentials may not use it)".
 *   CreateBucket with <LocationConstraint>REGION</LocationConstraint> (no
 *     body in us-east-1); BucketAlreadyOwnedByYou counts as success,
 *     BucketAlreadyExists -> GPC_ERR_USAGE "bucket name B is taken by
 *     another AWS account; name another bucket".
 *   PutPublicAccessBlock (all four settings true), PutBucketEncryption
 *     (SSE-S3, AES256), PutBucketTagging (`tags`, n_tags <= 50), and
 *     PutBucketLifecycleConfiguration (one rule, ID gpuctl-abort-incomplete-
 *     multipart, the whole bucket, AbortIncompleteMultipartUpload after
 *     abort_days days, 1..365) - applied every time, so a bucket that
 *     lost a setting gets it back.
 */
int gpc_s3_ensure_bucket(gpc_s3 *s, const char *bucket, const gpc_s3_tag *tags,
                         size_t n_tags, int abort_days, int *created, gpc_error *err);

/* ---- objects ----------------------------------------------------------- */

/* What HeadObject and a listing tell about an object. */
typedef struct gpc_s3_object {
    char key[1025];             /* S3 keys are at most 1024 bytes */
    uint64_t size;
    char etag[80];              /* with its quotes, as S3 sends it */
    char sha256[65];            /* x-amz-meta-sha256, "" when absent (and
                                   always "" from a listing) */
} gpc_s3_object;

/*
 * PutObject of the `len` bytes at `data` (NULL when len is 0) at KEY, with
 * x-amz-meta-sha256 set to their SHA-256.  Errors: mapped (above).
 */
int gpc_s3_put(gpc_s3 *s, const char *bucket, const char *key, const void *data, size_t len,
               gpc_error *err);

/* HeadObject.  GPC_ERR_NOT_FOUND when there is no such object. */
int gpc_s3_head(gpc_s3 *s, const char *bucket, const char *key, gpc_s3_object *out,
                gpc_error *err);

/*
 * GetObject to the file `path`: written to "path.gpuctl-part" by ranged
 * GETs of GPC_S3_GET_CHUNK bytes (memory stays bounded), fsynced, then
 * renamed over `path` (created 0644, parent directories made).  A failure
 * leaves `path` as it was.  *size (may be NULL) receives the bytes.
 * Errors: mapped; GPC_ERR_IO (the file); GPC_ERR_PROVIDER when the object
 * changed during the download (ETag differs between ranges).
 */
int gpc_s3_get_file(gpc_s3 *s, const char *bucket, const char *key, const char *path,
                    uint64_t *size, gpc_error *err);

/*
 * ListObjectsV2 of every key under `prefix` (NULL or "" = all), following
 * continuation tokens through every page; *out (heap array, caller frees
 * with free) gets *n objects in S3's order (UTF-8 binary).
 */
int gpc_s3_list(gpc_s3 *s, const char *bucket, const char *prefix, gpc_s3_object **out,
                size_t *n, gpc_error *err);

/*
 * DeleteObjects of `keys` (n of them) in batches of GPC_S3_DELETE_BATCH,
 * quiet mode, with Content-MD5.  A key S3 reports in an <Error> fails the
 * call (its code and message, the first one).  Missing keys are no error.
 */
int gpc_s3_delete(gpc_s3 *s, const char *bucket, const char *const *keys, size_t n,
                  gpc_error *err);

/* ---- multipart upload (s3_multipart.c) --------------------------------- */

/*
 * Upload the file `path` to KEY, by PutObject when it is smaller than the
 * multipart threshold, else by multipart upload: parts of the session's
 * part size (fixed for the whole upload), `parallel` at a time, each with
 * its own retries, each with Content-MD5.
 *
 * Resume (aws.md 6.4): `state_dir` (made when missing; NULL = no resume)
 * holds a manifest per upload, "s3-upload-<sha256 of bucket/key>.json":
 * bucket, key, the file's size, mtime and SHA-256, part size, UploadId.
 * When a manifest for the same file (size, mtime, SHA-256) exists, the
 * upload goes on: ListParts (every page), parts whose size and ETag (hex
 * MD5 of the local part) match are kept, the others sent, then
 * CompleteMultipartUpload.  NoSuchUpload -> HeadObject: an object with the
 * file's size and SHA-256 means the upload had completed; otherwise a new
 * upload starts.  A manifest for a changed file: that upload is aborted
 * and a new one starts.  The manifest is removed once the object exists.
 * *sent (may be NULL) receives the bytes sent in parts or PutObject.
 */
int gpc_s3_upload_file(gpc_s3 *s, const char *bucket, const char *key, const char *path,
                       const char *state_dir, uint64_t *sent, gpc_error *err);

/* What a sync did. */
typedef struct gpc_s3_sync_stats {
    unsigned long files_sent;      /* uploaded or downloaded */
    unsigned long files_skipped;   /* unchanged: same size and SHA-256 */
    uint64_t bytes_sent;           /* bytes moved over the network (parts
                                      kept on resume not counted) */
} gpc_s3_sync_stats;

/*
 * Upload every regular file under directory `dir` (recursively, symbolic
 * links not followed, in name order) to PREFIX + relative path ('/'
 * separated; prefix "" or ending in '/'), one object per file.  A file is
 * skipped when an object with its size and x-amz-meta-sha256 is there (one
 * listing of the prefix, then HeadObject for the keys whose size
 * matches).  Nothing is deleted.  state_dir as gpc_s3_upload_file.
 */
int gpc_s3_sync_up(gpc_s3 *s, const char *dir, const char *bucket, const char *prefix,
                   const char *state_dir, gpc_s3_sync_stats *st, gpc_error *err);

/*
 * The reverse: every object under PREFIX to `dir` + the key's rest,
 * skipping files whose size and SHA-256 equal the object's
 * x-amz-meta-sha256.  Keys ending in '/' are skipped; a key whose rest is
 * absolute, or has an empty, "." or ".." segment, is refused
 * (GPC_ERR_PROVIDER "unsafe key K") before anything is written.
 */
int gpc_s3_sync_down(gpc_s3 *s, const char *bucket, const char *prefix, const char *dir,
                     gpc_s3_sync_stats *st, gpc_error *err);

#endif /* GPUCTL_AWS_S3_H */
