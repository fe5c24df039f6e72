/*
 * config_internal.h - what the files of the AWS configuration share
 * (private to providers/aws/; the interface is config.h):
 *
 *   config.c       small helpers, ~/.aws/config and credentials (INI),
 *                  profile, region and endpoint (gpc_aws_config_load)
 *   credentials.c  the credentials chain in botocore's order
 *                  (gpc_aws_credentials): environment, the two files,
 *                  credential_process, and what gpuctl refuses to fake
 *   imds.c         EC2 instance metadata (IMDSv2): a role's credentials,
 *                  the region
 */
#ifndef GPUCTL_AWS_CONFIG_INTERNAL_H
#define GPUCTL_AWS_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "aws/config.h"
#include "gpuctl/buf.h"
#include "gpuctl/error.h"

#define SHOWN_MAX      256        /* a path as shown in messages */
#define HINT_FMT       "eval \"$(aws configure export-credentials --profile %s --format env)\""

/* ---- config.c: small helpers --------------------------------------------- */

/* An environment variable; an empty one counts as unset. */
const char *aws_env(const char *name);

/* botocore's ensure_boolean: only "true", in any case, is true. */
int aws_is_true(const char *v);

/* Copy src into dst[size] when it fits; 0 (dst untouched) when it does not. */
int aws_fits(char *dst, size_t size, const char *src);

/* snprintf into a field, truncating (labels only: never data that counts). */
void aws_set_label(char *dst, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Overwrite s (NUL-terminated) with zeros and free it; NULL is fine. */
void aws_wipe_free(char *s);

/* http:// or https:// followed by a host. */
int aws_is_http_url(const char *url);

/* botocore's region rule, lower-case only: [a-z0-9] ([a-z0-9-]* [a-z0-9])?. */
int aws_valid_region(const char *r);

/*
 * "2026-01-01T12:00:00Z" as IMDS, STS and credential_process print it: an
 * optional fraction of a second, then Z or an offset +HH, +HHMM or +HH:MM.
 * A zone is required (botocore fails on a naive time too).
 */
int aws_parse_iso8601(const char *s, int64_t *out);

/* t (seconds since 1970, UTC) as "2026-01-01T12:00:00Z" into out (the
 * number itself when it cannot be shown so). */
void aws_format_time(int64_t t, char *out, size_t size);

/* ---- config.c: the two files, libinih plus sub-sections -------------------- */

typedef struct ini_entry {
    char *section;  /* as inih gives it (untrimmed), e.g. "profile dev" */
    char *key;
    char *sub;      /* sub-section key ("endpoint_url" under "ec2 ="); NULL = top level */
    char *value;
    int line;
} ini_entry;

typedef struct ini_doc {
    char shown[SHOWN_MAX];
    int present;    /* the file exists */
    ini_entry *v;
    size_t n, cap;
} ini_doc;

enum section_kind {
    SECT_PLAIN,    /* credentials file: [NAME] */
    SECT_PROFILE,  /* config file: [profile NAME], [default] */
    SECT_SERVICES  /* config file: [services NAME] */
};

typedef struct aws_files {
    ini_doc config, creds;
} aws_files;

/* A profile setting: botocore overlays the credentials file's [NAME] on the
 * config file's [profile NAME] (session.full_config). */
typedef struct setting {
    const ini_entry *e;   /* NULL = not set */
    const ini_doc *doc;
    int in_creds;
} setting;

/* The last entry for key (and sub-key) in the section; NULL when none. */
const ini_entry *aws_ini_get(const ini_doc *d, enum section_kind kind, const char *name,
                             const char *key, const char *sub);

/* Does the file have a section for `name` of this kind? */
int aws_ini_has_section(const ini_doc *d, enum section_kind kind, const char *name);

/* Release both files. */
void aws_files_free(aws_files *f);

/* Read cfg->config_file and cfg->credentials_file (an absent one stays
 * empty); on failure nothing is left to free. */
int aws_files_load(aws_files *f, const gpc_aws_config *cfg, gpc_error *err);

/* `key` of the profile: the credentials file's [profile] over the config
 * file's [profile NAME] (see setting). */
setting aws_profile_get(const aws_files *f, const char *profile, const char *key);

/* The setting's value, NULL when it is unset or empty. */
const char *aws_setting_value(setting s);

/* ---- credentials.c: one walk down the chain ------------------------------ */

/* The state of one walk down the chain. */
typedef struct chain {
    const gpc_aws_config *cfg;
    aws_files files;
    int explicit_profile;   /* --profile: no env keys */
    gpc_aws_creds *out;
    int found;
    gpc_buf tried;          /* "what, what (why), ..." for the final message */
    gpc_error *err;
} chain;

/* Fill *out from found values; source says where they came from. */
int aws_creds_fill(gpc_aws_creds *out, const char *akid, const char *secret,
                   const char *token, int64_t expiration, const char *source,
                   gpc_error *err);

/* Add "what was tried" to the chain's list for the final message. */
void aws_note_tried(chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The string member `name` of obj, NULL when absent or not a string. */
const char *aws_json_str(const cJSON *obj, const char *name);

/* Overwrite every string in a parsed document before it is freed. */
void aws_json_wipe(cJSON *j);

/* ---- imds.c -------------------------------------------------------------- */

/* The chain's last step: a role's credentials from EC2 instance metadata
 * (IMDSv2), unless AWS_EC2_METADATA_DISABLED. */
int aws_step_imds(chain *c);

#endif /* GPUCTL_AWS_CONFIG_INTERNAL_H */
