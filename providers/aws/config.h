/*
 * config.h - AWS credentials, region and EC2 endpoint, resolved the way
 * the AWS CLI v2 (botocore) resolves them.
 *
 * Sources (see also shared/reference/aws.md section 4):
 *   - AWS SDKs and Tools Reference Guide: "Shared config and credentials
 *     files", "Standardized credential providers", "Service-specific
 *     endpoints";
 *   - EC2 User Guide: "Use IMDSv2" (instance metadata service, version 2);
 *   - botocore credentials.py / configprovider.py / configloader.py for the
 *     order of the providers and the rules the guides leave open.
 *
 * What is read:
 *   - the environment (AWS_PROFILE, AWS_REGION, AWS_ACCESS_KEY_ID, ...); an
 *     empty variable counts as unset;
 *   - the config file (AWS_CONFIG_FILE, default ~/.aws/config): sections
 *     [default], [profile NAME] ([profile default] also names the default
 *     profile; a bare [NAME] other than [default] is ignored there, as the
 *     CLI does), [services NAME];
 *   - the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default
 *     ~/.aws/credentials): sections [NAME].
 *   A leading "~" in either variable is replaced by $HOME.  An absent file
 *   (or a path that is not a regular file) is not an error.
 *
 * File syntax (parsed with libinih): "key = value" (or "key: value"),
 * blanks around both trimmed; lines starting with '#' or ';' are comments;
 * there are no inline comments (a ';' inside a value is part of it).  Keys
 * are case-sensitive.  As in botocore (configparser), the text between the
 * brackets is not trimmed ("[ default ]" is no profile), but "[profile
 * NAME  ]" and "[profile   NAME]" are NAME.  A key with an empty value
 * followed by indented "subkey = value" lines is a sub-section (`s3 =`
 * settings, `ec2 =` inside [services NAME]); an indented line after a key
 * with a value continues that value (joined with '\n').  Lines may be of
 * any length (session tokens run to 2 KB).  A value set twice: the last one
 * counts.
 *
 * Like botocore, a profile's settings are those of its config file section
 * overlaid with those of its credentials file section (a `region` or
 * `credential_process` in ~/.aws/credentials counts), except for the static
 * keys, which each file's own provider reads.
 *
 * Secrets: the secret key, session tokens, IMDS tokens and whatever a
 * credential_process prints never appear in an error message; the memory
 * that held them is wiped (OPENSSL_cleanse) before it is freed.
 *
 * Depends on: error.h, http.h (IMDS), libinih, cJSON, libcrypto.
 */
#ifndef GPUCTL_AWS_CONFIG_H
#define GPUCTL_AWS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/error.h"

#define GPC_AWS_IMDS_ENDPOINT       "http://169.254.169.254"
#define GPC_AWS_IMDS_ENDPOINT_IPV6  "http://[fd00:ec2::254]"
#define GPC_AWS_IMDS_TOKEN_TTL_S    21600   /* asked for with each token */
#define GPC_AWS_IMDS_TIMEOUT_S      1       /* per request; one attempt each */
#define GPC_AWS_REFRESH_MARGIN_S    300     /* suggested margin for
                                               gpc_aws_creds_expiring() */
#define GPC_AWS_PROCESS_OUTPUT_MAX  (64u << 10) /* credential_process stdout */

/* A set of credentials.  Zero it (or get it from gpc_aws_credentials())
 * before use; release it with gpc_aws_creds_free(). */
typedef struct gpc_aws_creds {
    char access_key_id[128];
    char secret_access_key[128];
    char *session_token;      /* heap, NULL = none (IMDS/STS tokens run to
                                 ~1-2 KB) */
    int64_t expiration;       /* UTC unix seconds; 0 = does not expire */
    char source[96];          /* where they came from, safe to print:
                                 "environment",
                                 "shared credentials file ~/.aws/credentials [profile dev]",
                                 "config file [profile dev]",
                                 "credential_process [profile dev]",
                                 "EC2 instance role 'NAME' (IMDSv2)" */
} gpc_aws_creds;

/* Wipe the whole struct (OPENSSL_cleanse: secret and token included), free
 * the token and leave *c zeroed.  c may be NULL; a zeroed struct is fine. */
void gpc_aws_creds_free(gpc_aws_creds *c);

/* What the command line / spec say; NULL (or "") = not given.  Borrowed. */
typedef struct gpc_aws_options {
    const char *profile;      /* --profile: an explicit profile also disables
                                 the env-keys step (botocore rule, aws.md 4.1) */
    const char *region;       /* --region or the spec's region */
    const char *endpoint;     /* --endpoint URL for EC2 */
    /* Where gpuctl's settings named each of them ("GPUCTL_AWS_PROFILE",
     * "/home/u/.config/gpuctl/config:3"; docs/config.md), for messages;
     * NULL: "--profile", "--region", "--endpoint". */
    const char *profile_from, *region_from, *endpoint_from;
} gpc_aws_options;

/* The resolved configuration (no secrets).  Release with
 * gpc_aws_config_free(). */
typedef struct gpc_aws_config {
    char profile[128];        /* the profile in use ("default" when none named) */
    char profile_from[320];   /* "--profile" (or where gpuctl's settings named it:
                                 opts->profile_from), "AWS_PROFILE",
                                 "AWS_DEFAULT_PROFILE", "default" */
    char region[64];          /* "" when none resolved (no error here: a caller
                                 with a region of its own still works) */
    char region_from[320];    /* "--region" (or opts->region_from), "AWS_REGION", "AWS_DEFAULT_REGION",
                                 "config file [profile X]" ("credentials file
                                 [profile X]" for a region found there), "" */
    char *ec2_endpoint;       /* heap: the override URL, NULL = the default
                                 https://ec2.<region>.amazonaws.com.  Order:
                                 opts->endpoint > AWS_ENDPOINT_URL_EC2 >
                                 AWS_ENDPOINT_URL > [services NAME] section's
                                 `ec2 =` endpoint_url > the profile's
                                 endpoint_url.  AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
                                 =true (or the profile's
                                 ignore_configured_endpoint_urls = true, when
                                 the variable is unset) drops all but the flag */
    char endpoint_from[320];  /* "--endpoint" (or opts->endpoint_from), "AWS_ENDPOINT_URL_EC2",
                                 "AWS_ENDPOINT_URL", "config file [services NAME]",
                                 "config file [profile X]", "" when none */
    /* heap: the override URL of each other service (gpc_aws_service), NULL
     * = its default; [GPC_AWS_EC2] is unused (ec2_endpoint above).  Order,
     * as the SDKs' service-specific endpoints (aws.md 4.5): AWS_ENDPOINT_URL_<ID>
     * (S3, PRICING, SERVICE_QUOTAS, IAM, STS) > AWS_ENDPOINT_URL > the
     * [services NAME] section's `<key> =` endpoint_url (s3, pricing,
     * service_quotas, iam, sts) > the profile's endpoint_url; the same
     * ignore switch.  gpuctl's own --endpoint is EC2's only. */
    char *svc_endpoint[6];
    char svc_endpoint_from[6][64]; /* where each came from, as endpoint_from */
    char *credentials_file;   /* heap: resolved path (AWS_SHARED_CREDENTIALS_FILE
                                 or ~/.aws/credentials) */
    char *config_file;        /* heap: resolved path (AWS_CONFIG_FILE or
                                 ~/.aws/config) */
} gpc_aws_config;

/*
 * Read the environment and both files and fill *cfg (zeroed first).
 *
 * Profile: opts->profile > AWS_PROFILE > AWS_DEFAULT_PROFILE > "default".
 * Region: opts->region > AWS_REGION > AWS_DEFAULT_REGION > the profile's
 * `region`; IMDS is not asked here (see gpc_aws_imds_region()).  A profile
 * named but found in neither file is not an error here (the region is then
 * ""); gpc_aws_credentials() reports it.
 *
 * Errors (*cfg left zeroed, nothing to free):
 *   GPC_ERR_IO     a file that exists but cannot be read, or is over 1 MiB
 *                  ("/full/path: Permission denied"); no home directory to
 *                  find ~/.aws in;
 *   GPC_ERR_SPEC   a malformed file: "PATH:LINE: expected '[section]' or
 *                  'key = value'", "PATH:LINE: 'KEY' is outside any
 *                  [section]", "PATH:LINE: expected 'name = value' in the
 *                  'ec2' sub-section"; a profile whose `services = NAME`
 *                  has no [services NAME] section; a configured
 *                  endpoint_url that is not an http(s) URL (PATH:LINE);
 *   GPC_ERR_USAGE  opts->endpoint / AWS_ENDPOINT_URL(_EC2) not an http(s)
 *                  URL; a profile name or region too long for its field;
 *   GPC_ERR_NOMEM.
 * PATH:LINE shows $HOME as "~".  Caller frees with
 * gpc_aws_config_free().
 */
int gpc_aws_config_load(const gpc_aws_options *opts, gpc_aws_config *cfg, gpc_error *err);

/* Free the heap fields and zero *cfg.  cfg may be NULL or zeroed. */
void gpc_aws_config_free(gpc_aws_config *cfg);

/*
 * The credential chain (aws.md 4.1, in botocore's order), for cfg->profile.
 * The files are read again (cfg holds no secrets).
 *
 *  0. A profile that was named (cfg->profile_from is not "default") and is
 *     in neither file: GPC_ERR_AUTH "AWS profile 'X' not found in CONFIG or
 *     CREDENTIALS (named by AWS_PROFILE)".
 *  1. Environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, with
 *     AWS_SECURITY_TOKEN or else AWS_SESSION_TOKEN (botocore reads the legacy
 *     name first) and AWS_CREDENTIAL_EXPIRATION (ISO 8601).  Skipped when
 *     the profile came from --profile (cfg->profile_from, or opts->profile);
 *     AWS_PROFILE does not skip it.  Only one of the two keys set:
 *     GPC_ERR_AUTH naming the variable that is missing.
 *  2. Profile features gpuctl does not support yet: web_identity_token_file
 *     (AssumeRoleWithWebIdentity), role_arn, source_profile,
 *     credential_source (AssumeRole), sso_session / sso_start_url /
 *     sso_account_id / sso_role_name (IAM Identity Center), and the
 *     AWS_WEB_IDENTITY_TOKEN_FILE variable (not with --profile):
 *     GPC_ERR_AUTH "profile 'X' uses <feature>, which gpuctl does not
 *     support yet; export temporary keys instead: eval "$(aws configure
 *     export-credentials --profile X --format env)"".
 *  3. Shared credentials file [X]: aws_access_key_id + aws_secret_access_key,
 *     with aws_security_token or else aws_session_token.  One key without
 *     the other: GPC_ERR_AUTH "PATH:LINE: [X] has aws_access_key_id but no
 *     aws_secret_access_key" (or the other way round).
 *  4. login_session (the `aws login` provider): unsupported, as in step 2.
 *  5. credential_process (from the merged profile): run with /bin/sh -c,
 *     stdin and stderr inherited, no timeout (it may prompt); stdout (at most
 *     GPC_AWS_PROCESS_OUTPUT_MAX bytes) must be the JSON
 *     {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?,
 *     "Expiration"?}.  A non-zero exit, a signal, bad JSON, a missing field
 *     or Version != 1: GPC_ERR_AUTH, never quoting the output.
 *  6. Config file [profile X] static keys, as in step 3 (botocore reads
 *     them after credential_process).
 *  7. Container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI /
 *     _FULL_URI): unsupported, as in step 2.
 *  8. EC2 instance role over IMDSv2, unless AWS_EC2_METADATA_DISABLED=true
 *     (any case).  Endpoint: AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 *     AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6 -> GPC_AWS_IMDS_ENDPOINT_IPV6,
 *     else GPC_AWS_IMDS_ENDPOINT.  PUT /latest/api/token
 *     (X-aws-ec2-metadata-token-ttl-seconds: 21600), GET
 *     /latest/meta-data/iam/security-credentials/ (first line = role), GET
 *     .../security-credentials/ROLE -> JSON Code ("Success"), AccessKeyId,
 *     SecretAccessKey, Token, Expiration.  1 s timeouts, one attempt each, no
 *     IMDSv1 fallback.  No reply, a refused token or no role (404) moves on;
 *     a role whose credentials cannot be read is GPC_ERR_AUTH.
 *  9. Nothing: GPC_ERR_AUTH "no AWS credentials found for profile 'X':
 *     tried ...; ..." listing each step and why it gave nothing.
 *
 * Credentials with an Expiration at or before gpc_now(): GPC_ERR_AUTH
 * "... expired at 2020-01-01T00:00:00Z".  A key longer than 127 bytes:
 * GPC_ERR_AUTH.  Also GPC_ERR_IO / GPC_ERR_SPEC from reading the files,
 * GPC_ERR_USAGE for a bad IMDS endpoint variable, GPC_ERR_NOMEM.
 *
 * On success *out holds the credentials (caller releases them with
 * gpc_aws_creds_free()); on failure *out is zeroed.  opts may be NULL.
 */
int gpc_aws_credentials(const gpc_aws_config *cfg, const gpc_aws_options *opts,
                        gpc_aws_creds *out, gpc_error *err);

/* 1 when c expires within margin_s seconds of now (expiration <= now +
 * margin_s: refresh before use; aws.md 4.4 suggests
 * GPC_AWS_REFRESH_MARGIN_S), 0 when it does not expire or expires later.
 * c == NULL counts as expiring.  Times in UTC unix seconds. */
int gpc_aws_creds_expiring(const gpc_aws_creds *c, int64_t now, int64_t margin_s);

/* The AWS services gpuctl calls, for gpc_aws_service_endpoint(). */
typedef enum gpc_aws_service {
    GPC_AWS_EC2,            /* EC2 Query API */
    GPC_AWS_S3,             /* S3 REST API */
    GPC_AWS_PRICING,        /* Price List Query API (JSON 1.1) */
    GPC_AWS_SERVICE_QUOTAS, /* Service Quotas (JSON 1.1) */
    GPC_AWS_IAM,            /* IAM Query API (global) */
    GPC_AWS_STS             /* STS Query API */
} gpc_aws_service;

/*
 * The endpoint URL of service `svc` for `region`, in *url (heap, caller
 * frees), and the region to sign its requests for in sign_region (size
 * bytes; NULL when not wanted): the override when one is set (cfg; EC2's
 * as gpc_aws_ec2_endpoint), else the service's public endpoint
 * (AWS General Reference, "Service endpoints and quotas"):
 *   S3               https://s3.REGION.amazonaws.com
 *   Price List       https://api.pricing.us-east-1.amazonaws.com (signed
 *                    for us-east-1; also served from eu-central-1 and
 *                    ap-south-1, which gpuctl does not use)
 *   Service Quotas   https://servicequotas.REGION.amazonaws.com
 *   IAM              https://iam.amazonaws.com (global, signed for us-east-1)
 *   STS              https://sts.REGION.amazonaws.com
 * (".amazonaws.com.cn" for cn-* regions, where IAM's home is cn-north-1
 * and the Price List's cn-northwest-1).  An override keeps the signing
 * region of the service's default.  Errors as gpc_aws_ec2_endpoint.
 */
int gpc_aws_service_endpoint(const gpc_aws_config *cfg, gpc_aws_service svc,
                             const char *region, char **url, char *sign_region,
                             size_t size, gpc_error *err);

/*
 * The EC2 endpoint URL for `region`, in *url (heap, caller frees):
 * cfg->ec2_endpoint when set, else https://ec2.REGION.amazonaws.com
 * (https://ec2.REGION.amazonaws.com.cn for cn-* regions).  cfg may be NULL.
 * The region is checked either way (it is signed into every request):
 * GPC_ERR_USAGE "invalid AWS region 'X' (expected lower-case letters,
 * digits and '-', e.g. us-east-1)" for an empty one, one over 63 bytes,
 * one with other characters or one starting or ending with '-'.
 * GPC_ERR_NOMEM.
 */
int gpc_aws_ec2_endpoint(const gpc_aws_config *cfg, const char *region, char **url,
                         gpc_error *err);

/*
 * The region this EC2 machine runs in, from IMDSv2
 * /latest/meta-data/placement/region (same endpoint rules, timeouts and
 * AWS_EC2_METADATA_DISABLED switch as step 8 above), for when nothing else
 * names one.  Copies it into out (size bytes).
 * Errors: GPC_ERR_NOT_FOUND off EC2 (disabled, no reply, token refused, 404);
 * GPC_ERR_PROVIDER another HTTP status or a reply that is not a region
 * name (or does not fit in size); GPC_ERR_USAGE a bad endpoint variable.
 */
int gpc_aws_imds_region(char *out, size_t size, gpc_error *err);

#endif /* GPUCTL_AWS_CONFIG_H */
