/*
 * fuzz_aws_config.c - the AWS configuration readers
 * (providers/aws/config.c): ~/.aws/credentials and ~/.aws/config (INI,
 * with inih), and the JSON a profile's credential_process prints; then
 * what gpc_ec2_open and the first EC2 call do with them: the profile,
 * region and endpoint (gpc_aws_config_load), the credential chain
 * (gpc_aws_credentials) and the EC2 endpoint URL.
 *
 * Input: a first line naming the profile (--profile; empty: none), then
 * parts "@@@@ credentials", "@@@@ config" and "@@@@ process" (each
 * optional).  No command is run: a credential_process runs "/bin/cat"
 * of the "process" part instead (fuzz.h), or fails when there is none.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "aws/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    fuzz_part parts[8];
    char *buf;
    const char *profile;
    size_t n = fuzz_split(data, size, &buf, &profile, parts, 8);
    static const char *const names[] = {"credentials", "config", "process"};
    char files[3][PATH_MAX];
    snprintf(files[0], sizeof(files[0]), "%s", getenv("AWS_SHARED_CREDENTIALS_FILE"));
    snprintf(files[1], sizeof(files[1]), "%s", getenv("AWS_CONFIG_FILE"));
    snprintf(files[2], sizeof(files[2]), "%s", fuzz_path("process.json"));
    int have[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (strcmp(parts[i].header, names[k]) == 0 && !have[k]) {
                fuzz_write(files[k], parts[i].data, parts[i].len);
                have[k] = 1;
            }
    for (int k = 0; k < 3; k++)
        if (!have[k])
            unlink(files[k]);
    fuzz_spawn_output(have[2] ? files[2] : NULL);
    gpc_aws_options opts = {.profile = profile[0] ? profile : NULL};
    gpc_aws_config cfg;
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_aws_config_load(&opts, &cfg, &err);
    if (rc)
        fuzz_note("aws_config", "config", &err);
    if (rc == 0) {
        gpc_aws_creds creds;
        gpc_error_clear(&err);
        rc = gpc_aws_credentials(&cfg, &opts, &creds, &err);
        fuzz_note("aws_config", "credentials", &err);
        if (rc == 0) {
            gpc_aws_creds_expiring(&creds, 1767225600, GPC_AWS_REFRESH_MARGIN_S);
            gpc_aws_creds_free(&creds);
        }
        char *url = NULL;
        gpc_error_clear(&err);
        if (gpc_aws_ec2_endpoint(&cfg, cfg.region[0] ? cfg.region : "us-east-1", &url, &err) == 0)
            free(url);
        gpc_aws_config_free(&cfg);
    }
    fuzz_spawn_output(NULL);
    free(buf);
    return 0;
}
