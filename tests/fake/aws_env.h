/*
 * aws_env.h - a clean AWS environment for unit tests that talk to the fakes
 * in tests/fake/ (header-only; static inline).
 *
 * aws_env_reset() removes every AWS_* variable the test process inherited
 * (credentials, profiles, endpoints of the machine the tests run on), keeps
 * a proxy from the environment off loopback, and turns the instance
 * metadata service off, so that nothing reaches beyond 127.0.0.1.  It also
 * puts the system clock back (clock.h), should a test have set another.
 */
#ifndef GPUCTL_TESTS_FAKE_AWS_ENV_H
#define GPUCTL_TESTS_FAKE_AWS_ENV_H

#include <stdlib.h>
#include <string.h>

#include "gpuctl/clock.h"

extern char **environ;

static inline void aws_env_reset(void)
{
    char *names[256];
    size_t n = 0;
    for (char **e = environ; *e && n < 256; e++)
        if (strncmp(*e, "AWS_", 4) == 0)
            names[n++] = strndup(*e, strcspn(*e, "="));
    for (size_t i = 0; i < n; i++) {
        if (names[i])
            unsetenv(names[i]);
        free(names[i]);
    }
    gpc_clock_set(NULL);
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

#endif /* GPUCTL_TESTS_FAKE_AWS_ENV_H */
