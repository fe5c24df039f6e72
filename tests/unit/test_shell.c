/*
 * test_shell.c - shell access to a node (gpuctl ssh) without a node: the
 * argument vectors and command lines (shell.h), the SSH host keys the aws
 * provider reads from a console output (providers/aws/instances.c), and
 * the srun command the slurm provider runs (providers/slurm/shell.c).
 * The sshd ends of it are in tests/e2e/test_ssh.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/aws_internal.h"
#include "gpuctl/shell.h"
#include "slurm/slurm_internal.h"

/* A key blob of each type (SSH strings, RFC 4253 6.6), base64: ed25519
 * with the bytes 0..31, ecdsa nistp256 with the point 04 00.., rsa with
 * e = 65537 and n = 00 01 02 .. 40. */
#define ED "AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f"
#define EC "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAAAAAAAAAAAAAAAAAAAAAAAAAA" \
           "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define RSA "AAAAB3NzaC1yc2EAAAADAQABAAAAQQABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4fICEiIyQl" \
            "JicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj9A"

static int keys_of(const char *console, gpc_buf *out)
{
    return aws_console_host_keys((const unsigned char *)console, strlen(console), out);
}

/* cloud-init's block as an Ubuntu node prints it, "ec2:" lines around,
 * CR LF line ends of a serial console, a comment after each key. */
static void test_host_keys_block(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    const char *console =
        "[   10.1] cloud-init[812]: Cloud-init v. 24.1 running 'modules:final'\r\n"
        "ec2: #############################################################\r\n"
        "ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\r\n"
        "ec2: 256 SHA256:abc root@ip-10-0-0-1 (ED25519)\r\n"
        "ec2: -----END SSH HOST KEY FINGERPRINTS-----\r\n"
        "-----BEGIN SSH HOST KEY KEYS-----\r\n"
        "ecdsa-sha2-nistp256 " EC " root@ip-10-0-0-1\r\n"
        "ssh-ed25519 " ED " root@ip-10-0-0-1\r\n"
        "ec2: ssh-rsa " RSA "\r\n"
        "-----END SSH HOST KEY KEYS-----\r\n";
    assert_int_equal(keys_of(console, &b), 3);
    assert_string_equal(gpc_buf_str(&b), "ecdsa-sha2-nistp256 " EC "\nssh-ed25519 " ED
                                         "\nssh-rsa " RSA "\n");
    gpc_buf_free(&b);
}

/* What is not a key of its type is left out: a blob of another type, bad
 * base64, DSA (OpenSSH refuses it), a type in the middle of a word. */
static void test_host_keys_refused_lines(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    const char *console =
        "-----BEGIN SSH HOST KEY KEYS-----\n"
        "ssh-rsa " ED " says rsa, holds ed25519\n"
        "ssh-ed25519 not*base64\n"
        "ssh-dss AAAAB3NzaC1kc3MAAAA= dsa\n"
        "xssh-ed25519 " ED "\n"
        "ssh-ed25519 " ED "\n"
        "-----END SSH HOST KEY KEYS-----\n";
    assert_int_equal(keys_of(console, &b), 1);
    assert_string_equal(gpc_buf_str(&b), "ssh-ed25519 " ED "\n");
    gpc_buf_free(&b);
}

/* No block, or one whose end is not printed yet: no keys (wait for them).
 * Two blocks (a reboot): the last. */
static void test_host_keys_partial_and_last(void **state)
{
    (void)state;
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    assert_int_equal(keys_of("booting...\n", &b), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(keys_of("-----BEGIN SSH HOST KEY KEYS-----\nssh-ed25519 " ED "\n", &b), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(keys_of("", &b), 0);
    const char *two = "-----BEGIN SSH HOST KEY KEYS-----\nssh-rsa " RSA "\n"
                      "-----END SSH HOST KEY KEYS-----\nreboot\n"
                      "-----BEGIN SSH HOST KEY KEYS-----\nssh-ed25519 " ED "\n"
                      "-----END SSH HOST KEY KEYS-----\n";
    assert_int_equal(keys_of(two, &b), 1);
    assert_string_equal(gpc_buf_str(&b), "ssh-ed25519 " ED "\n");
    gpc_buf_free(&b);
}

static void assert_argv(char **v, const char *const *want)
{
    size_t i = 0;
    for (; want[i]; i++) {
        assert_non_null(v[i]);
        assert_string_equal(v[i], want[i]);
    }
    assert_null(v[i]);
}

static void test_argv_and_join(void **state)
{
    (void)state;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_argv a = {0};
    char **v = NULL;
    assert_int_equal(gpc_argv_take(&a, &v, &err), 0);
    assert_null(v[0]);
    gpc_argv_free(v);
    assert_int_equal(gpc_argv_add(&a, "ssh", &err), 0);
    for (int i = 0; i < 40; i++) /* past the first allocation */
        assert_int_equal(gpc_argv_addf(&a, &err, "-o%d", i), 0);
    assert_int_equal(a.n, 41);
    assert_int_equal(gpc_argv_take(&a, &v, &err), 0);
    assert_string_equal(v[0], "ssh");
    assert_string_equal(v[40], "-o39");
    assert_null(v[41]);
    assert_int_equal(a.n, 0);
    gpc_argv_free(v);
    gpc_buf b;
    gpc_buf_init(&b, 1024);
    const char *cmd[] = {"echo", "$RANK", "a b"};
    assert_int_equal(gpc_shell_join(&b, cmd, 3, &err), 0);
    assert_string_equal(gpc_buf_str(&b), "echo $RANK a b"); /* as ssh(1) joins them */
    gpc_buf_free(&b);
}

static void test_slurm_words(void **state)
{
    (void)state;
    gpc_error err;
    gpc_error_clear(&err);
    gpc_argv a = {0};
    size_t at = 0;
    const char *cmd[] = {"nvidia-smi", "-L;", "echo", "$SLURM_NODEID"};
    assert_int_equal(slurm_shell_words(42, 1, "/j/job-42/node-1", cmd, 4, 0, &a, &at, &err), 0);
    const char *want[] = {"srun", "--jobid=42", "--overlap", "--nodes=1", "--ntasks=1",
                          "--relative=1", "--export=NONE", "/bin/bash", "-c",
                          "GPUCTL_HOME=$1; export GPUCTL_HOME; shift; exec /bin/bash -l \"$@\"",
                          "gpuctl", "/j/job-42/node-1", "-c",
                          "nvidia-smi -L; echo $SLURM_NODEID", NULL};
    assert_argv(a.v, want);
    assert_int_equal(at, 11);
    gpc_argv_reset(&a);
    assert_int_equal(slurm_shell_words(7, 0, "/j/job-7/node-0", NULL, 0, 1, &a, &at, &err), 0);
    const char *want2[] = {"srun", "--jobid=7", "--overlap", "--nodes=1", "--ntasks=1",
                           "--relative=0", "--export=NONE", "--pty", "/bin/bash", "-c",
                           "GPUCTL_HOME=$1; export GPUCTL_HOME; shift; exec /bin/bash -l \"$@\"",
                           "gpuctl", "/j/job-7/node-0", NULL};
    assert_argv(a.v, want2);
    assert_int_equal(at, 12);
    gpc_argv_reset(&a);
}

/* Through the login node: one command line, each word quoted for its
 * shell; on a login node itself: srun as it is. */
static void test_slurm_argv(void **state)
{
    (void)state;
    slurm_site sites[2];
    memset(sites, 0, sizeof(sites));
    snprintf(sites[0].name, sizeof(sites[0].name), "hpc");
    snprintf(sites[0].login, sizeof(sites[0].login), "me@login.example");
    snprintf(sites[0].job_dir, sizeof(sites[0].job_dir), "~/.gpuctl/slurm");
    snprintf(sites[1].name, sizeof(sites[1].name), "here");
    snprintf(sites[1].job_dir, sizeof(sites[1].job_dir), "/shared/it's");
    sites[1].local = 1;
    slurm_ctx c;
    memset(&c, 0, sizeof(c));
    c.sites = sites;
    c.n_sites = 2;
    gpc_cluster_ref cl = {"demo", "0123", NULL, 0, NULL};
    gpc_node_ref nd = {"hpc", "hpc/42/1", ""};
    gpc_error err;
    gpc_error_clear(&err);
    char **v = NULL;
    const char *cmd[] = {"echo", "it's", "$HOSTNAME"};
    assert_int_equal(slurm_shell_argv(&c, &cl, &nd, 1, cmd, 3, 0, &v, &err), 0);
    /* the node's directory as the batch script names it, "$HOME" for the
     * login node's shell */
    const char *want[] = {"ssh", "-T", "--", "me@login.example",
                          "'srun' '--jobid=42' '--overlap' '--nodes=1' '--ntasks=1' "
                          "'--relative=1' '--export=NONE' '/bin/bash' '-c' "
                          "'GPUCTL_HOME=$1; export GPUCTL_HOME; shift; exec /bin/bash -l \"$@\"' "
                          "'gpuctl' \"$HOME\"/'.gpuctl/slurm'/job-42/node-1 '-c' "
                          "'echo it'\\''s $HOSTNAME'", NULL};
    assert_argv(v, want);
    gpc_argv_free(v);
    gpc_node_ref here = {"here", "here/9/0", ""};
    assert_int_equal(slurm_shell_argv(&c, &cl, &here, 0, NULL, 0, 1, &v, &err), 0);
    const char *want2[] = {"srun", "--jobid=9", "--overlap", "--nodes=1", "--ntasks=1",
                           "--relative=0", "--export=NONE", "--pty", "/bin/bash", "-c",
                           "GPUCTL_HOME=$1; export GPUCTL_HOME; shift; exec /bin/bash -l \"$@\"",
                           "gpuctl", "/shared/it's/job-9/node-0", NULL};
    assert_argv(v, want2);
    gpc_argv_free(v);
    gpc_node_ref bad = {"hpc", "hpc-42-1", ""};
    assert_int_equal(slurm_shell_argv(&c, &cl, &bad, 0, NULL, 0, 0, &v, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: invalid node id 'hpc-42-1'");
    gpc_error_clear(&err);
    gpc_node_ref gone = {"old", "old/3/0", ""};
    assert_int_equal(slurm_shell_argv(&c, &cl, &gone, 0, NULL, 0, 0, &v, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: node old/3/0 is on Slurm cluster 'old', which the "
                                 "config file no longer has");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_keys_block),
        cmocka_unit_test(test_host_keys_refused_lines),
        cmocka_unit_test(test_host_keys_partial_and_last),
        cmocka_unit_test(test_argv_and_join),
        cmocka_unit_test(test_slurm_words),
        cmocka_unit_test(test_slurm_argv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
