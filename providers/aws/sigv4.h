/*
 * sigv4.h - AWS Signature Version 4 (SigV4) request signing on OpenSSL's
 * libcrypto (EVP SHA-256, HMAC-SHA256).
 *
 * External facts come from the AWS General Reference, "Signature Version 4
 * signing process", and the IAM User Guide, "Create a signed AWS API
 * request" (digested, with the pitfalls and the known-answer examples, in
 * the project's AWS reference notes, aws.md section 1: 1.1 algorithm,
 * 1.2 UriEncode, 1.3 canonical URI, 1.4 canonical query, 1.5 canonical
 * headers, 1.6 payload hash / x-amz-date / session token, 1.7 pitfalls,
 * 1.8 examples, 1.9 the official test suite, copied in
 * tests/vectors/sigv4/).
 *
 * The signer is split into pure stages, each tested on its own:
 *
 *   gpc_sigv4_canonical_request()  request        -> canonical request
 *   gpc_sigv4_scope()              date, region   -> credential scope
 *   gpc_sigv4_string_to_sign()     creq, scope    -> string to sign
 *   gpc_sigv4_signing_key()        secret, scope  -> kSigning (32 bytes)
 *   gpc_sigv4_signature()          kSigning, sts  -> hex signature
 *   gpc_sigv4_authorization()      all of it      -> Authorization value
 *
 * and gpc_sigv4_sign() runs them all for a request sent at a given time.
 * Nothing here reads the clock, the environment or a file; nothing keeps
 * state between calls (thread-safe).
 *
 * Conventions: every int function returns 0 or a gpc_code and fills `err`
 * (gpuctl/error.h).  Errors: GPC_ERR_USAGE for a missing or malformed input
 * (no method, no credentials, no region/service, a header name or value
 * with CR or LF, ...), GPC_ERR_NOMEM when a buffer limit is hit or memory
 * runs out, GPC_ERR_INTERNAL when libcrypto fails.  Messages never contain
 * the secret access key, the session token, a signing key, a signature or
 * a header value.  Key material this module puts on the stack is wiped
 * with OPENSSL_cleanse() before returning.
 *
 * Buffers (gpuctl/buf.h) passed as outputs must have been initialised by
 * the caller with gpc_buf_init(); their `max` bounds the output (and the
 * scratch space the stage needs).  gpc_sigv4_uri_encode() appends; every
 * other stage replaces what the buffer held.  On failure an output buffer
 * holds unspecified partial text (still NUL-terminated, still owned by the
 * caller).
 */
#ifndef GPUCTL_SIGV4_H
#define GPUCTL_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "gpuctl/buf.h"
#include "gpuctl/error.h"

/* Hex SHA-256 of the empty string: the HashedPayload of an empty body
 * (aws.md 1.6). */
#define GPC_SIGV4_EMPTY_SHA256 \
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The S3 payload hash that leaves the body unsigned (aws.md 6.5). */
#define GPC_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* The only algorithm implemented: first line of the string to sign and
 * first word of the Authorization value (aws.md 1.1). */
#define GPC_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"

/* Longest secret access key accepted, bytes (AWS issues 40).  "AWS4" plus
 * the secret is built on the stack, so it is bounded. */
#define GPC_SIGV4_SECRET_MAX 256

/* Limit of the canonical request and SignedHeaders list that
 * gpc_sigv4_sign() builds, bytes. */
#define GPC_SIGV4_CREQ_MAX (1u << 20)

/* Size of a credential-scope buffer large enough for any region and
 * service gpc_sigv4_sign() accepts (bytes, NUL included). */
#define GPC_SIGV4_SCOPE_SIZE 256

/* One header to sign, exactly as it is sent ("Name: value" on the wire). */
typedef struct gpc_sigv4_header {
    const char *name;   /* any case; a token: no CR, LF, ':', space or tab */
    const char *value;  /* as sent; no CR or LF (folded headers are not
                           supported: unfold them first) */
} gpc_sigv4_header;

/*
 * The request to sign.  Nothing is copied past a call.
 *
 *  method        "GET", "POST", ...; required.
 *  path          raw, NOT percent-encoded ("/example space/"); NULL or ""
 *                means "/".  The wire form is the encoding of the same raw
 *                path (for S3 use gpc_sigv4_uri_encode(path, encode_slash
 *                0)).
 *  query         the query string without '?', as on the wire; it may be
 *                percent-encoded already (it is decoded, then re-encoded,
 *                aws.md 1.4).  '+' is a literal plus, NOT a space (see
 *                gpc_sigv4_canonical_request()).  NULL or "" = no query.
 *  headers       every header to sign, Host included, exactly as sent;
 *                repeated names allowed (joined with ',' in order).
 *  body          request body, body_len bytes (NULL only when body_len is
 *                0); hashed when payload_hash is NULL.
 *  payload_hash  NULL: lower-case hex SHA-256 of the body; otherwise used
 *                verbatim as HashedPayload (S3: the value of the
 *                x-amz-content-sha256 header, e.g. "UNSIGNED-PAYLOAD").
 *  s3            0: non-S3 path rules (normalize: drop "." segments,
 *                resolve "..", collapse "//", then encode each segment);
 *                1: S3 rules (no normalization; encode once, keeping '/').
 */
typedef struct gpc_sigv4_input {
    const char *method;
    const char *path;
    const char *query;
    const gpc_sigv4_header *headers;
    size_t n_headers;
    const void *body;
    size_t body_len;
    const char *payload_hash;
    int s3;
} gpc_sigv4_input;

/* Credentials.  Only borrowed for the call. */
typedef struct gpc_sigv4_creds {
    const char *access_key_id;      /* AKID; required */
    const char *secret_access_key;  /* required; at most GPC_SIGV4_SECRET_MAX */
    const char *session_token;      /* temporary credentials; NULL or "" = none */
} gpc_sigv4_creds;

/*
 * UriEncode (aws.md 1.2): append to `out` the `len` bytes of `s` with
 * A-Z a-z 0-9 '-' '_' '.' '~' kept and every other byte written as "%XY"
 * (upper-case hex): space is "%20" (never '+'), "*!'()" are encoded, UTF-8
 * is encoded byte by byte.  encode_slash 0 keeps '/' (paths); 1 encodes it
 * as "%2F" (query names and values, form bodies).  `s` may hold NULs.
 * Errors: GPC_ERR_NOMEM (out->max).  Appends; nothing is removed.
 */
int gpc_sigv4_uri_encode(const char *s, size_t len, int encode_slash,
                         gpc_buf *out, gpc_error *err);

/*
 * Stage 1: the canonical request (aws.md 1.1 step 2, 1.3-1.6), six parts
 * joined by '\n', no trailing newline:
 *
 *   METHOD \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n
 *   SignedHeaders \n HashedPayload
 *
 * into `creq`, and the SignedHeaders list (lower-case names joined with
 * ';') into `signed_headers`.  Both are replaced.
 *
 * CanonicalURI: see gpc_sigv4_input.s3.  Non-S3 normalization follows the
 * SDKs (botocore, aws-sdk-rust): segments "" and "." are dropped, ".."
 * drops the segment before it (never above the root), and a trailing '/'
 * is kept only when the raw path ends with '/' ("/a/b/.." gives "/a",
 * "//example//" gives "/example/"); the result is never empty ("/").
 *
 * CanonicalQuery: the query is split on '&' (empty pieces are skipped),
 * each piece on its first '=' (none: empty value).  Names and values are
 * percent-decoded ("%XY", either hex case; a '%' not followed by two hex
 * digits stays a literal '%'; '+' stays a literal '+', as in RFC 3986 and
 * the AWS test suite, so it re-encodes as "%2B" - callers must write a
 * space as "%20"), then UriEncoded with encode_slash 1, sorted by encoded
 * name then encoded value (byte order, not the joined string) and joined
 * as "name=value" with '&'.  A valueless parameter becomes "name=".
 *
 * CanonicalHeaders: one "name:value\n" line per distinct lower-cased name,
 * sorted by name (byte order); the value is trimmed of leading and trailing
 * spaces/tabs and every inner run of spaces/tabs becomes one space; values
 * of a repeated name are joined with ',' in the order given.
 *
 * Errors: GPC_ERR_USAGE (no method; a header with no name, a name that is
 * not a token, a value with CR or LF; body NULL with body_len > 0; a
 * payload_hash that is empty or holds CR/LF), GPC_ERR_NOMEM (creq->max or
 * signed_headers->max exceeded), GPC_ERR_INTERNAL (SHA-256 failed).
 */
int gpc_sigv4_canonical_request(const gpc_sigv4_input *in, gpc_buf *creq,
                                gpc_buf *signed_headers, gpc_error *err);

/*
 * Credential scope (aws.md 1.1 step 3): "YYYYMMDD/region/service/
 * aws4_request" into `out`, `size` bytes (NUL included).  date8 is exactly
 * eight digits (the date part of x-amz-date); region and service are
 * non-empty and hold no '/', whitespace or control characters.
 * Errors: GPC_ERR_USAGE (bad input), GPC_ERR_NOMEM (does not fit `size`).
 */
int gpc_sigv4_scope(const char *date8, const char *region, const char *service,
                    char *out, size_t size, gpc_error *err);

/*
 * Stage 2: the string to sign (aws.md 1.1 step 4), four lines joined by
 * '\n', no trailing newline:
 *
 *   AWS4-HMAC-SHA256 \n amz_date \n scope \n hex(SHA-256(creq))
 *
 * into `out` (replaced).  amz_date is "YYYYMMDDTHHMMSSZ" (16 chars); creq
 * is creq_len bytes.  Errors: GPC_ERR_USAGE (malformed amz_date, empty
 * scope), GPC_ERR_NOMEM, GPC_ERR_INTERNAL (SHA-256 failed).
 */
int gpc_sigv4_string_to_sign(const char *amz_date, const char *scope,
                             const char *creq, size_t creq_len, gpc_buf *out,
                             gpc_error *err);

/*
 * Stage 3: the signing key (aws.md 1.1 step 5), raw 32 bytes into `key`:
 *   kDate    = HMAC("AWS4" + secret, date8)
 *   kRegion  = HMAC(kDate, region)
 *   kService = HMAC(kRegion, service)
 *   kSigning = HMAC(kService, "aws4_request")
 * It depends only on these four inputs (cacheable per day); the caller
 * should OPENSSL_cleanse() it after use.  Intermediates are wiped.
 * Errors: GPC_ERR_USAGE (secret NULL, empty or longer than
 * GPC_SIGV4_SECRET_MAX; bad date8/region/service as in gpc_sigv4_scope),
 * GPC_ERR_INTERNAL (HMAC failed; `key` is then zeroed).
 */
int gpc_sigv4_signing_key(const char *secret, const char *date8,
                          const char *region, const char *service,
                          unsigned char key[32], gpc_error *err);

/*
 * Stage 4: the signature (aws.md 1.1 step 6): lower-case hex of
 * HMAC-SHA256(key, sts), sts_len bytes, into `hex` (64 chars + NUL).
 * Errors: GPC_ERR_INTERNAL (HMAC failed; hex is then "").
 */
int gpc_sigv4_signature(const unsigned char key[32], const char *sts,
                        size_t sts_len, char hex[65], gpc_error *err);

/*
 * Stage 5: the Authorization header value (aws.md 1.1 step 7) into `out`
 * (replaced):
 *   "AWS4-HMAC-SHA256 Credential=<AKID>/<scope>, SignedHeaders=<list>,
 *    Signature=<hex>"
 * (one line; one space after the algorithm, ", " between the parts).
 * Errors: GPC_ERR_USAGE (an input missing or empty; an access key id
 * holding whitespace, a control or non-ASCII byte, '/' or ','),
 * GPC_ERR_NOMEM (out->max).
 */
int gpc_sigv4_authorization(const char *access_key_id, const char *scope,
                            const char *signed_headers,
                            const char *signature_hex, gpc_buf *out,
                            gpc_error *err);

/*
 * "YYYYMMDDTHHMMSSZ" (x-amz-date, aws.md 1.1 step 1) for the UTC time t
 * (seconds since the Unix epoch) into out (16 chars + NUL).  A time whose
 * year falls outside 0000-9999, or that gmtime_r() cannot convert, gives
 * "" (gpc_sigv4_sign() reports that as GPC_ERR_USAGE).
 */
void gpc_sigv4_amz_date(time_t t, char out[17]);

/*
 * Helpers behind the stages, exported for known-answer tests (aws.md 1.8
 * key-derivation intermediates) and for callers that need the same hash
 * (e.g. S3's x-amz-content-sha256).
 *
 * gpc_sigv4_sha256_hex: lower-case hex SHA-256 of len bytes (data may be
 * NULL when len is 0) into hex (64 chars + NUL).
 * gpc_sigv4_hmac_sha256: raw HMAC-SHA256(key, data) into mac (32 bytes).
 * Errors: GPC_ERR_INTERNAL (libcrypto failed), GPC_ERR_USAGE (key_len
 * beyond INT_MAX; a NULL key or data with a non-zero length).
 */
int gpc_sigv4_sha256_hex(const void *data, size_t len, char hex[65],
                         gpc_error *err);
int gpc_sigv4_hmac_sha256(const void *key, size_t key_len, const void *data,
                          size_t len, unsigned char mac[32], gpc_error *err);

/* What gpc_sigv4_sign() gives: the two header values to send. */
typedef struct gpc_sigv4_result {
    char amz_date[17];        /* value of the X-Amz-Date header */
    char authorization[640];  /* value of the Authorization header */
} gpc_sigv4_result;

/*
 * Every stage for a request sent at time `now` (UTC seconds since the Unix
 * epoch).  Signs in->headers PLUS "x-amz-date: <amz_date>" and, when
 * creds->session_token is set, "x-amz-security-token: <token>" (both added
 * here, aws.md 1.6: the token is signed, as botocore does).  The caller
 * must not pass either header itself and must send both, with
 * "Authorization: <out->authorization>", on the wire.  The scope's date is
 * the date part of the same amz_date (aws.md 1.7 item 9); region and
 * service are those of the endpoint ("us-east-1", "ec2", "s3", ...).
 *
 * `out` is cleared first and filled only on success.  Key material and the
 * signature are wiped from the stack before returning.
 *
 * Errors: GPC_ERR_USAGE (in/method missing; access key id, secret, region
 * or service missing or malformed; a token with CR/LF; an x-amz-date or
 * x-amz-security-token header in in->headers; a bad header; `now` out of
 * range), GPC_ERR_NOMEM (canonical request over GPC_SIGV4_CREQ_MAX, an
 * Authorization value over 639 bytes, out of memory), GPC_ERR_INTERNAL
 * (libcrypto failed).
 */
int gpc_sigv4_sign(const gpc_sigv4_input *in, const gpc_sigv4_creds *creds,
                   const char *region, const char *service, time_t now,
                   gpc_sigv4_result *out, gpc_error *err);

#endif /* GPUCTL_SIGV4_H */
