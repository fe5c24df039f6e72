/*
 * test_slurm.c - the slurm provider's own code without a Slurm
 * (providers/slurm/): running a command on the login node (exec.c: here,
 * and through a stand-in ssh), the [slurm "NAME"] sections of the config
 * file (slurm.c, through the provider table's open), a job's status from
 * what the status command prints (job.c), and the table itself.
 *
 * The scontrol lines below were printed by Slurm 22.05.8 (Debian's
 * slurm-wlm) on the tests' loopback Slurm (tests/e2e/slurm_cluster.sh:
 * node1 at 127.0.0.2, node2 at 127.0.0.3; with a partition `hi` of a
 * higher PriorityTier and PreemptMode=CANCEL added for the PREEMPTED job).
 */
#define _GNU_SOURCE 1 /* clearenv */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuctl/provider.h"
#include "gpuctl/state.h"
#include "gpuctl/util.h"
#include "slurm/slurm_internal.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static slurm_site local_site(void)
{
    slurm_site s;
    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "lab");
    s.local = 1;
    return s;
}

/* ---- exec.c: login = local ---- */

static void test_exec_out_err_status(void **state)
{
    (void)state;
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(slurm_exec(&s, "echo out1; echo err1 >&2; printf out2; exit 3", NULL, 0, 10,
                                &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "out1\nout2");
    assert_string_equal(gpc_buf_str(&r.err), "err1\n");
    assert_int_equal(r.out.len, 9);
    assert_int_equal(r.status, 3);
    slurm_result_free(&r);

    /* nothing printed: empty, NUL-terminated buffers */
    assert_int_equal(slurm_exec(&s, "true", NULL, 0, 10, &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "");
    assert_string_equal(gpc_buf_str(&r.err), "");
    assert_int_equal(r.status, 0);
    slurm_result_free(&r);

    /* a signal: 128+N */
    assert_int_equal(slurm_exec(&s, "kill -TERM $$", NULL, 0, 10, &r, &err), 0);
    assert_int_equal(r.status, 128 + SIGTERM);
    slurm_result_free(&r);
    assert_int_equal(slurm_exec(&s, "kill -KILL $$", NULL, 0, 10, &r, &err), 0);
    assert_int_equal(r.status, 137);
    slurm_result_free(&r);
    assert_int_equal(err.code, GPC_OK);
}

static void test_exec_stdin(void **state)
{
    (void)state;
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(slurm_exec(&s, "tr a-z A-Z", "hello\nslurm", 11, 10, &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "HELLO\nSLURM");
    assert_int_equal(r.status, 0);
    slurm_result_free(&r);

    /* more than a pipe holds (3 MiB), read whole while the command's own
     * output is read too */
    size_t big = 3u << 20;
    char *in = malloc(big);
    assert_non_null(in);
    for (size_t i = 0; i < big; i++)
        in[i] = (char)('a' + i % 26);
    in[big - 1] = '\n';
    assert_int_equal(slurm_exec(&s, "wc -c; echo done >&2", in, big, 30, &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "3145728\n");
    assert_string_equal(gpc_buf_str(&r.err), "done\n");
    assert_int_equal(r.status, 0);
    slurm_result_free(&r);
    /* echoed back: every byte, in order */
    assert_int_equal(slurm_exec(&s, "cat", in, big, 30, &r, &err), 0);
    assert_int_equal(r.out.len, big);
    assert_memory_equal(r.out.data, in, big);
    slurm_result_free(&r);

    /* input the command never reads: no hang, and no SIGPIPE in gpuctl
     * (which kept gpuctl dying silently before) */
    double t0 = mono();
    assert_int_equal(slurm_exec(&s, "exit 4", in, big, 30, &r, &err), 0);
    assert_int_equal(r.status, 4);
    slurm_result_free(&r);
    assert_int_equal(slurm_exec(&s, "head -c 5", in, big, 30, &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "abcde");
    assert_int_equal(r.status, 0);
    slurm_result_free(&r);
    assert_true(mono() - t0 < 10);
    assert_int_equal(err.code, GPC_OK);
    /* no SIGPIPE left pending for this thread either */
    sigset_t pend;
    sigpending(&pend);
    assert_false(sigismember(&pend, SIGPIPE));
    free(in);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of `text`, sorted, joined by '\n' (a static buffer). */
static const char *sorted_lines(const char *text)
{
    static char out[8192];
    char copy[8192], *lines[128];
    size_t n = 0;
    snprintf(copy, sizeof(copy), "%s", text);
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l && n < 128;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof(lines[0]), cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? "\n" : "", lines[i]);
    return out;
}

static void test_exec_environment(void **state)
{
    (void)state;
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    clearenv();
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI", 1);
    setenv("GPUCTL_X", "1", 1);
    setenv("FOO", "bar", 1);
    setenv("PATH", "/usr/bin:/bin", 1);
    setenv("SLURM_CONF", "/etc/slurm/lab.conf", 1);
    setenv("PYENV_ROOT", "/opt/pyenv", 1);
    setenv("LC_ALL", "C.UTF-8", 1);
    setenv("SLURMX", "no", 1);      /* "SLURM_" is the prefix, not "SLURM" */
    setenv("PATHS", "no", 1);       /* PATH= exactly */
    setenv("VIRTUAL_ENV", "/home/u/venv", 1);
    setenv("SSH_AUTH_SOCK", "/tmp/agent.1", 1);
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(slurm_exec(&s, "env", NULL, 0, 10, &r, &err), 0);
    char want[2048];
    /* what dash adds itself: PWD */
    snprintf(want, sizeof(want), "%s",
             sorted_lines("LC_ALL=C.UTF-8\nPATH=/usr/bin:/bin\nPYENV_ROOT=/opt/pyenv\n"
                          "SLURM_CONF=/etc/slurm/lab.conf\nVIRTUAL_ENV=/home/u/venv"));
    snprintf(want + strlen(want), sizeof(want) - strlen(want), "\nPWD=%s", cwd);
    char got[2048];
    snprintf(got, sizeof(got), "%s", gpc_buf_str(&r.out));
    assert_string_equal(sorted_lines(got), sorted_lines(want));
    slurm_result_free(&r);
    /* gpuctl's own environment is left as it was */
    assert_string_equal(getenv("AWS_SECRET_ACCESS_KEY"), "wJalrXUtnFEMI");
    clearenv();
    setenv("PATH", path, 1);
    free(path);
}

/* The processes (not zombies) of process group `pgid`. */
static int group_alive(pid_t pgid)
{
    int n = 0;
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[300], buf[1024];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(p, sizeof(p), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *rp = strrchr(buf, ')');
        char st;
        int ppid, pgrp;
        if (rp && sscanf(rp + 2, "%c %d %d", &st, &ppid, &pgrp) == 3 && pgrp == pgid &&
            st != 'Z')
            n++;
    }
    closedir(d);
    return n;
}

static void test_exec_timeout(void **state)
{
    (void)state;
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    double t0 = mono();
    assert_int_equal(slurm_exec(&s, "sleep 30 & echo $$ $!; sleep 30", NULL, 0, 1, &r, &err),
                     GPC_ERR_TIMEOUT);
    double took = mono() - t0;
    assert_true(took >= 0.9 && took < 5);
    assert_string_equal(err.msg, "slurm: a command on Slurm cluster 'lab' ran longer than 1 s "
                        "and was stopped");
    assert_int_equal(r.status, 137);
    int pgid = 0, child = 0;
    assert_int_equal(sscanf(gpc_buf_str(&r.out), "%d %d", &pgid, &child), 2);
    assert_true(pgid > 1 && child > 1);
    slurm_result_free(&r);
    /* the group, the background sleep included, is killed */
    for (int i = 0; i < 100 && group_alive(pgid); i++)
        usleep(20000);
    assert_int_equal(group_alive(pgid), 0);

    /* a command that closes its output and goes on: the limit still holds
     * (it waited for the command's end, whatever the limit, before) */
    gpc_error_clear(&err);
    t0 = mono();
    assert_int_equal(slurm_exec(&s, "exec >/dev/null 2>&1; sleep 30", NULL, 0, 1, &r, &err),
                     GPC_ERR_TIMEOUT);
    took = mono() - t0;
    assert_true(took >= 0.9 && took < 5);
    assert_string_equal(err.msg, "slurm: a command on Slurm cluster 'lab' ran longer than 1 s "
                        "and was stopped");
    assert_int_equal(r.status, 137);
    slurm_result_free(&r);

    /* one that ends after closing its output is waited for */
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec(&s, "exec >/dev/null 2>&1; sleep 0.3; exit 6", NULL, 0, 10, &r,
                                &err), 0);
    assert_int_equal(r.status, 6);
    slurm_result_free(&r);
}

static void test_exec_output_limit(void **state)
{
    (void)state;
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(SLURM_OUTPUT_MAX, 8388608);
    assert_int_equal(slurm_exec(&s, "head -c 8388608 /dev/zero", NULL, 0, 30, &r, &err), 0);
    assert_int_equal(r.out.len, SLURM_OUTPUT_MAX);
    assert_int_equal(r.status, 0);
    slurm_result_free(&r);
    assert_int_equal(slurm_exec(&s, "head -c 8388609 /dev/zero", NULL, 0, 30, &r, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: a command on Slurm cluster 'lab' printed more than "
                        "8388608 bytes");
    slurm_result_free(&r);
    gpc_error_clear(&err);
    /* stderr alike, and a command that would print for ever is stopped */
    double t0 = mono();
    assert_int_equal(slurm_exec(&s, "yes >&2", NULL, 0, 30, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: a command on Slurm cluster 'lab' printed more than "
                        "8388608 bytes");
    assert_true(mono() - t0 < 20);
    /* (137 or 141: killed, or SIGPIPE once its stderr is closed first) */
    assert_true(r.status == 137 || r.status == 141);
    slurm_result_free(&r);
}

static void test_exec_ok_messages(void **state)
{
    (void)state;
    slurm_site s = local_site();
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(slurm_exec_ok(&s, "sbatch", "echo out; printf '\\n  \\nsbatch: error: "
                                   "Invalid partition name specified\\nsecond\\n' >&2; exit 1",
                                   NULL, 0, 10, &r, &err), GPC_ERR_PROVIDER);
    /* the first line that is not blank (leading newlines and spaces
     * skipped) */
    assert_string_equal(err.msg, "slurm: sbatch on Slurm cluster 'lab' failed (exit 1): sbatch: "
                        "error: Invalid partition name specified");
    assert_int_equal(r.status, 1);
    assert_string_equal(gpc_buf_str(&r.out), "out\n");
    slurm_result_free(&r);
    /* stdout when stderr is empty */
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec_ok(&s, "squeue", "printf 'first\\nsecond\\n'; exit 2", NULL, 0,
                                   10, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: squeue on Slurm cluster 'lab' failed (exit 2): first");
    slurm_result_free(&r);
    /* nothing printed */
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec_ok(&s, "scancel", "exit 5", NULL, 0, 10, &r, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: scancel on Slurm cluster 'lab' failed (exit 5)");
    slurm_result_free(&r);
    /* a signal */
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec_ok(&s, "sinfo", "kill -KILL $$", NULL, 0, 10, &r, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: sinfo on Slurm cluster 'lab' failed (exit 137)");
    slurm_result_free(&r);
    /* success: no error, output kept */
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec_ok(&s, "sinfo", "echo fine; echo warn >&2", NULL, 0, 10, &r,
                                   &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "fine\n");
    assert_string_equal(gpc_buf_str(&r.err), "warn\n");
    assert_int_equal(err.code, GPC_OK);
    slurm_result_free(&r);
    /* a time-out is the error, not an exit status */
    assert_int_equal(slurm_exec_ok(&s, "sinfo", "sleep 10", NULL, 0, 1, &r, &err),
                     GPC_ERR_TIMEOUT);
    assert_string_equal(err.msg, "slurm: a command on Slurm cluster 'lab' ran longer than 1 s "
                        "and was stopped");
    slurm_result_free(&r);
}

/* ---- exec.c: over ssh (a stand-in ssh first on PATH) ---- */

typedef struct ssh_fix {
    char dir[64];
    char *path;     /* the PATH to restore */
} ssh_fix;

static const char fake_ssh[] =
    "#!/bin/sh\n"
    "# a stand-in for ssh: records its arguments (one a line) and the agent,\n"
    "# then runs the last argument as the login node's shell would\n"
    "d=$(dirname \"$0\")\n"
    ": >\"$d/argv\"\n"
    "for a in \"$@\"; do printf '%s\\n' \"$a\" >>\"$d/argv\"; last=$a; done\n"
    "printf '%s\\n' \"${SSH_AUTH_SOCK-unset}\" >\"$d/agent\"\n"
    "case \"$*\" in *down@*)\n"
    "  echo 'Warning: Permanently added login (ED25519) to the list of known hosts.' >&2\n"
    "  echo 'ssh: connect to host login port 22: Connection refused' >&2\n"
    "  exit 255;;\n"
    "esac\n"
    "exec /bin/sh -c \"$last\"\n";

static int ssh_setup(void **state)
{
    ssh_fix *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/gpuctl-test-ssh-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char p[128];
    snprintf(p, sizeof(p), "%s/ssh", f->dir);
    FILE *fp = fopen(p, "w");
    if (!fp)
        return -1;
    fputs(fake_ssh, fp);
    fclose(fp);
    chmod(p, 0755);
    const char *old = getenv("PATH");
    f->path = strdup(old ? old : "/usr/bin:/bin");
    char np[4096];
    snprintf(np, sizeof(np), "%s:%s", f->dir, f->path);
    setenv("PATH", np, 1);
    *state = f;
    return 0;
}

static int ssh_teardown(void **state)
{
    ssh_fix *f = *state;
    setenv("PATH", f->path, 1);
    unsetenv("SSH_AUTH_SOCK");
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f->path);
    free(f);
    return 0;
}

static char *slurp(const char *dir, const char *name)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    char *text = NULL;
    size_t len = 0;
    gpc_error err = {0};
    assert_int_equal(gpc_read_file(p, 1 << 20, &text, &len, &err), 0);
    return text;
}

static void test_exec_ssh(void **state)
{
    ssh_fix *f = *state;
    slurm_site s = local_site();
    s.local = 0;
    snprintf(s.login, sizeof(s.login), "alice@login");
    setenv("SSH_AUTH_SOCK", "/tmp/ssh-agent.42", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI", 1);
    slurm_result r;
    gpc_error err = {0};
    const char *cmd = "printf '%s|' \"a b\" 'c\"d' $HOME-x; echo; echo e >&2; exit 3";
    assert_int_equal(slurm_exec(&s, cmd, "in", 2, 10, &r, &err), 0);
    assert_int_equal(r.status, 3);
    char want_out[256];
    snprintf(want_out, sizeof(want_out), "a b|c\"d|%s-x|\n", getenv("HOME") ? getenv("HOME") : "");
    assert_string_equal(gpc_buf_str(&r.out), want_out);
    assert_string_equal(gpc_buf_str(&r.err), "e\n");
    slurm_result_free(&r);
    char *argv = slurp(f->dir, "argv");
    char want[512];
    snprintf(want, sizeof(want), "-o\nBatchMode=yes\n-o\nConnectTimeout=15\n--\nalice@login\n%s\n",
             cmd);
    assert_string_equal(argv, want);
    free(argv);
    /* ssh gets the caller's environment: its agent */
    char *agent = slurp(f->dir, "agent");
    assert_string_equal(agent, "/tmp/ssh-agent.42\n");
    free(agent);
    /* stdin reaches the remote command */
    assert_int_equal(slurm_exec(&s, "cat", "through ssh", 11, 10, &r, &err), 0);
    assert_string_equal(gpc_buf_str(&r.out), "through ssh");
    slurm_result_free(&r);
    /* slurm_exec_ok says the remote command's exit and line */
    assert_int_equal(slurm_exec_ok(&s, "sbatch", "echo 'sbatch: error: no' >&2; exit 1", NULL,
                                   0, 10, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: sbatch on Slurm cluster 'lab' failed (exit 1): "
                        "sbatch: error: no");
    assert_int_equal(err.remote.retryable, 0);
    slurm_result_free(&r);
    unsetenv("AWS_SECRET_ACCESS_KEY");
}

static void test_exec_ssh_unreachable(void **state)
{
    (void)state;
    slurm_site s = local_site();
    s.local = 0;
    snprintf(s.login, sizeof(s.login), "down@login");
    slurm_result r;
    gpc_error err = {0};
    assert_int_equal(slurm_exec(&s, "sinfo", NULL, 0, 10, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: cannot reach the login node down@login of Slurm cluster "
                        "'lab' with ssh: ssh: connect to host login port 22: Connection refused");
    assert_int_equal(err.remote.retryable, 1);
    assert_int_equal(r.status, 255);
    slurm_result_free(&r);
    /* slurm_exec_ok keeps that message; with a batch script on stdin that
     * ssh never reads (gpuctl died of SIGPIPE here before) */
    size_t big = 1u << 20;
    char *in = calloc(1, big);
    assert_non_null(in);
    memset(in, 'x', big);
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec_ok(&s, "sbatch", "sbatch --parsable", in, big, 10, &r, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: cannot reach the login node down@login of Slurm cluster "
                        "'lab' with ssh: ssh: connect to host login port 22: Connection refused");
    assert_int_equal(err.remote.retryable, 1);
    slurm_result_free(&r);
    free(in);
    /* 255 from a command on a login node that runs: the same (ssh cannot
     * tell them apart) */
    snprintf(s.login, sizeof(s.login), "alice@login");
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec(&s, "exit 255", NULL, 0, 10, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: cannot reach the login node alice@login of Slurm "
                        "cluster 'lab' with ssh: ssh exited 255");
    slurm_result_free(&r);
    /* no ssh at all */
    setenv("PATH", "/nonexistent", 1);
    gpc_error_clear(&err);
    assert_int_equal(slurm_exec(&s, "sinfo", NULL, 0, 10, &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: cannot run ssh for Slurm cluster 'lab': No such file "
                        "or directory");
    slurm_result_free(&r);
}

/* ---- slurm.c: the [slurm "NAME"] sections, through the table's open ---- */

#define CONFIG "/home/u/.config/gpuctl/config"

static int open_sites(const gpc_site *sites, size_t n, slurm_ctx **c, gpc_error *err)
{
    gpc_provider_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.state_dir = "/home/u/.local/state/gpuctl";
    cfg.sites = sites;
    cfg.n_sites = n;
    cfg.config_path = CONFIG;
    const gpc_provider *p = gpc_provider_find("slurm");
    assert_non_null(p);
    void *ctx = NULL;
    int rc = p->open(&cfg, &ctx, err);
    *c = ctx;
    if (rc)
        assert_null(ctx);
    return rc;
}

static void close_sites(slurm_ctx *c)
{
    gpc_provider_find("slurm")->close(c);
}

/* Open a site "lab" (header on line 4) with login = local (line 5) and
 * key = value on line 6: 0, or the error's code with its message in msg. */
static int one_value(const char *key, const char *value, slurm_ctx **c, char *msg, size_t size)
{
    gpc_site_value v[2] = {{"login", "local", 5}, {key, value, 6}};
    gpc_site st = {"lab", 4, v, 2};
    gpc_error err = {0};
    int rc = open_sites(&st, 1, c, &err);
    snprintf(msg, size, "%s", rc ? err.msg : "");
    return rc;
}

/* One key = value that is refused: its exact message. */
static void refused(const char *key, const char *value, const char *why)
{
    slurm_ctx *c = NULL;
    char msg[GPC_ERROR_MSG_MAX], want[512];
    assert_int_equal(one_value(key, value, &c, msg, sizeof(msg)), GPC_ERR_USAGE);
    snprintf(want, sizeof(want), CONFIG ":6: %s of [slurm \"lab\"]: %s", key, why);
    assert_string_equal(msg, want);
}

static const char why_login[] =
    "'local' or an ssh destination ([user@]host, or a Host of ~/.ssh/config)";
static const char why_part[] =
    "partition names are letters, digits, '.', '_' and '-', separated by commas";
static const char why_word[] = "letters, digits, '.', '_' and '-', at most 63";
static const char why_price[] = "a price in USD per GPU-hour, from 0 to 1000";
static const char why_dir[] = "an absolute path, or one under ~/, on the shared filesystem (no "
                              "quotes, '$', '`' or '\\')";

static void test_site_defaults(void **state)
{
    (void)state;
    gpc_site_value v[1] = {{"login", "local", 2}};
    gpc_site st = {"lab", 1, v, 1};
    slurm_ctx *c = NULL;
    gpc_error err = {0};
    assert_int_equal(open_sites(&st, 1, &c, &err), 0);
    assert_int_equal(c->n_sites, 1);
    const slurm_site *s = &c->sites[0];
    assert_string_equal(s->name, "lab");
    assert_int_equal(s->local, 1);
    assert_string_equal(s->login, "");
    assert_null(s->partitions);
    assert_int_equal(s->n_partitions, 0);
    assert_string_equal(s->account, "");
    assert_string_equal(s->qos, "");
    assert_true(s->gpu_hour_price == 0.0);
    assert_string_equal(s->job_dir, "~/.gpuctl/slurm");
    assert_string_equal(s->from, CONFIG ":1");
    assert_string_equal(c->state_dir, "/home/u/.local/state/gpuctl");
    assert_ptr_equal(slurm_site_find(c, "lab"), s);
    assert_null(slurm_site_find(c, "lab2"));
    assert_null(slurm_site_find(c, NULL));
    close_sites(c);
}

static void test_site_every_key(void **state)
{
    (void)state;
    gpc_site_value a[] = {{"login", "alice@login.lab.example", 2},
                          {"partitions", " gpu, gpu-long ,debug.1\tcpu_x ", 3},
                          {"account", "proj-42", 4},
                          {"qos", "high_prio", 5},
                          {"gpu_hour_price", "0.9", 6},
                          {"job_dir", "/shared/my jobs/gpuctl", 7}};
    gpc_site_value b[] = {{"login", "lab2", 10}, {"job_dir", "~/jobs", 11},
                          {"gpu_hour_price", "0", 12}, {"partitions", "one", 13}};
    gpc_site sites[] = {{"lab", 1, a, 6}, {"lab2", 9, b, 4}};
    slurm_ctx *c = NULL;
    gpc_error err = {0};
    assert_int_equal(open_sites(sites, 2, &c, &err), 0);
    assert_int_equal(c->n_sites, 2);
    const slurm_site *s = &c->sites[0];
    assert_int_equal(s->local, 0);
    assert_string_equal(s->login, "alice@login.lab.example");
    assert_int_equal(s->n_partitions, 4);
    assert_string_equal(s->partitions[0], "gpu");
    assert_string_equal(s->partitions[1], "gpu-long");
    assert_string_equal(s->partitions[2], "debug.1");
    assert_string_equal(s->partitions[3], "cpu_x");
    assert_string_equal(s->account, "proj-42");
    assert_string_equal(s->qos, "high_prio");
    assert_true(s->gpu_hour_price == 0.9);
    assert_string_equal(s->job_dir, "/shared/my jobs/gpuctl");
    assert_string_equal(s->from, CONFIG ":1");
    s = &c->sites[1];
    assert_string_equal(s->name, "lab2");
    assert_int_equal(s->local, 0);
    assert_string_equal(s->login, "lab2");
    assert_int_equal(s->n_partitions, 1);
    assert_string_equal(s->partitions[0], "one");
    assert_string_equal(s->job_dir, "~/jobs");
    assert_true(s->gpu_hour_price == 0.0);
    assert_string_equal(s->from, CONFIG ":9");
    assert_ptr_equal(slurm_site_find(c, "lab2"), s);
    close_sites(c);

    /* an ssh destination with an IPv6 address */
    char msg[GPC_ERROR_MSG_MAX];
    gpc_site_value l[] = {{"login", "bob@[fe80::1]", 2}};
    gpc_site st = {"lab", 1, l, 1};
    assert_int_equal(open_sites(&st, 1, &c, &err), 0);
    assert_string_equal(c->sites[0].login, "bob@[fe80::1]");
    close_sites(c);
    /* the highest price */
    assert_int_equal(one_value("gpu_hour_price", "1000", &c, msg, sizeof(msg)), 0);
    assert_true(c->sites[0].gpu_hour_price == 1000.0);
    close_sites(c);
}

static void test_site_refused(void **state)
{
    (void)state;
    /* login: not an option of ssh, no shell words, not empty of host */
    gpc_site_value l[] = {{"login", "-oProxyCommand=x", 7}};
    gpc_site st = {"lab", 4, l, 1};
    slurm_ctx *c = NULL;
    gpc_error err = {0};
    assert_int_equal(open_sites(&st, 1, &c, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, CONFIG ":7: login of [slurm \"lab\"]: 'local' or an ssh "
                        "destination ([user@]host, or a Host of ~/.ssh/config)");
    const char *bad_logins[] = {"alice@login;rm -rf ~", "a b", "$(id)", "login'", "Local host"};
    for (size_t i = 0; i < sizeof(bad_logins) / sizeof(bad_logins[0]); i++) {
        gpc_site_value v[] = {{"login", bad_logins[i], 7}};
        gpc_site s2 = {"lab", 4, v, 1};
        gpc_error_clear(&err);
        assert_int_equal(open_sites(&s2, 1, &c, &err), GPC_ERR_USAGE);
        char want[512];
        snprintf(want, sizeof(want), CONFIG ":7: login of [slurm \"lab\"]: %s", why_login);
        assert_string_equal(err.msg, want);
    }
    char longlogin[300];
    memset(longlogin, 'h', 256);
    longlogin[256] = '\0';
    gpc_site_value ll[] = {{"login", longlogin, 7}};
    gpc_site s3 = {"lab", 4, ll, 1};
    gpc_error_clear(&err);
    assert_int_equal(open_sites(&s3, 1, &c, &err), GPC_ERR_USAGE);
    longlogin[255] = '\0'; /* 255 characters fit */
    assert_int_equal(open_sites(&s3, 1, &c, &err), 0);
    assert_string_equal(c->sites[0].login, longlogin);
    close_sites(c);

    refused("partitions", "gpu;one", why_part);
    refused("partitions", "gpu, 'one'", why_part);
    refused("partitions", "gpu,*", why_part);
    refused("account", "proj 42", why_word);
    refused("account", "proj/42", why_word);
    char w64[80];
    memset(w64, 'a', 64);
    w64[64] = '\0';
    refused("account", w64, why_word);
    refused("qos", w64, why_word);
    refused("qos", "hi$", why_word);
    w64[63] = '\0';
    char msg[GPC_ERROR_MSG_MAX];
    assert_int_equal(one_value("qos", w64, &c, msg, sizeof(msg)), 0);
    assert_string_equal(c->sites[0].qos, w64);
    close_sites(c);

    refused("gpu_hour_price", "-1", why_price);
    refused("gpu_hour_price", "1e9", why_price);
    refused("gpu_hour_price", "abc", why_price);
    refused("gpu_hour_price", "0.9 USD", why_price);
    refused("gpu_hour_price", "nan", why_price);
    refused("gpu_hour_price", "inf", why_price);
    refused("gpu_hour_price", "1000.01", why_price);

    refused("job_dir", "jobs", why_dir);
    refused("job_dir", "./jobs", why_dir);
    refused("job_dir", "~", why_dir);
    refused("job_dir", "~bob/jobs", why_dir);
    refused("job_dir", "/shared/it's", why_dir);
    refused("job_dir", "/shared/\"x\"", why_dir);
    refused("job_dir", "/shared/$USER", why_dir);
    refused("job_dir", "/shared/`id`", why_dir);
    refused("job_dir", "/shared\\x", why_dir);
    char longdir[1100] = "/";
    memset(longdir + 1, 'd', 1023);
    longdir[1024] = '\0';
    refused("job_dir", longdir, why_dir);
    longdir[1023] = '\0';
    assert_int_equal(one_value("job_dir", longdir, &c, msg, sizeof(msg)), 0);
    assert_string_equal(c->sites[0].job_dir, longdir);
    close_sites(c);

    /* the first site that is wrong is said, a later one never read */
    gpc_site_value ok[] = {{"login", "local", 2}};
    gpc_site_value nologin[] = {{"partitions", "gpu", 9}};
    gpc_site two[] = {{"lab", 1, ok, 1}, {"far", 8, nologin, 1}};
    gpc_error_clear(&err);
    assert_int_equal(open_sites(two, 2, &c, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, CONFIG ":8: [slurm \"far\"] has no login (login = local when "
                        "gpuctl runs on the Slurm cluster's login node, else its ssh "
                        "destination)");
    /* no values at all */
    gpc_site empty = {"lab", 3, NULL, 0};
    gpc_error_clear(&err);
    assert_int_equal(open_sites(&empty, 1, &c, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, CONFIG ":3: [slurm \"lab\"] has no login (login = local when "
                        "gpuctl runs on the Slurm cluster's login node, else its ssh "
                        "destination)");
}

/* Partition names Slurm would never match are refused, not cut (a name of
 * 64 or more characters was cut to 63 before), and a list naming none is
 * not taken for "every partition". */
static void test_site_partitions_edge(void **state)
{
    (void)state;
    char name[100];
    memset(name, 'p', 64);
    name[64] = '\0';
    char list[200];
    snprintf(list, sizeof(list), "gpu, %s", name);
    refused("partitions", list, "a partition name has at most 63 characters");
    refused("partitions", " , ,", why_part);
    name[63] = '\0';
    snprintf(list, sizeof(list), "gpu,%s", name);
    slurm_ctx *c = NULL;
    char msg[GPC_ERROR_MSG_MAX];
    assert_int_equal(one_value("partitions", list, &c, msg, sizeof(msg)), 0);
    assert_int_equal(c->sites[0].n_partitions, 2);
    assert_string_equal(c->sites[0].partitions[1], name);
    close_sites(c);
}

/* ---- job.c: a job's status from what the status command prints ---- */

/* scontrol show job -o, Slurm 22.05.8: a two-node job pending for
 * resources; one running on node1 and node2; one-node jobs that completed,
 * failed (exit 3: ExitCode=3:0; killed by signal 9: ExitCode=0:9) and ran
 * out of time (--time=1); a two-node job cancelled while it ran; the
 * two-node job whose node2 slurmd was killed (NODE_FAIL); a job of a
 * partition of a lower PriorityTier preempted (PreemptMode=CANCEL). */
static const char job_pending[] =
    "JobId=6 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901754 Nice=0 Account=(null) QOS=(null) JobState=PENDING "
    "Reason=Resources Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 RunTime=00:00:00 TimeLimit=02:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:41:15 EligibleTime=2026-12-01T22:41:15 "
    "AccrueTime=2026-12-01T22:41:15 StartTime=Unknown EndTime=Unknown Deadline=N/A "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T22:41:16 Scheduler=Main "
    "Partition=gpu AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList= NumNodes=2-2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=2,mem=8000M,node=2,billing=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* "
    "CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) "
    "Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-6.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-6.out Power= \n";
static const char job_running[] =
    "JobId=5 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=00:01:26 TimeLimit=02:00:00 TimeMin=N/A SubmitTime=2026-12-01T22:41:15 "
    "EligibleTime=2026-12-01T22:41:15 AccrueTime=2026-12-01T22:41:15 "
    "StartTime=2026-12-01T22:41:16 EndTime=2026-12-02T00:41:16 Deadline=N/A "
    "PreemptEligibleTime=2026-12-01T22:41:16 PreemptTime=None SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-12-01T22:41:16 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[1-2] BatchHost=node1 NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=2,billing=2 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-5.out "
    "StdIn=/dev/null StdOut=/tmp/slcap/slurm-5.out Power= \n";
static const char node1_alloc[] =
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 "
    "CPULoad=3.45 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.2 NodeHostName=localhost Port=20584 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=21958 Sockets=2 Boards=1 State=ALLOCATED ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu,one,hi  "
    "BootTime=2026-12-01T14:06:44 SlurmdStartTime=2026-12-01T22:41:07 "
    "LastBusyTime=2026-12-01T22:41:10 CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES=cpu=2 "
    "CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
    "ExtSensorsTemp=n/s\n";
static const char node2_alloc[] =
    "NodeName=node2 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 "
    "CPULoad=3.40 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.3 NodeHostName=localhost Port=27008 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=21912 Sockets=2 Boards=1 State=ALLOCATED ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  BootTime=2026-12-01T14:06:44 "
    "SlurmdStartTime=2026-12-01T22:41:07 LastBusyTime=2026-12-01T22:41:10 "
    "CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES=cpu=2 CapWatts=n/a CurrentWatts=0 "
    "AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";
static const char job_completed[] =
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=00:00:00 TimeLimit=02:00:00 TimeMin=N/A SubmitTime=2026-12-01T22:41:09 "
    "EligibleTime=2026-12-01T22:41:09 AccrueTime=2026-12-01T22:41:09 "
    "StartTime=2026-12-01T22:41:10 EndTime=2026-12-01T22:41:10 Deadline=N/A "
    "PreemptEligibleTime=2026-12-01T22:41:10 PreemptTime=None SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-12-01T22:41:10 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) NodeList=node1 "
    "BatchHost=node1 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-1.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-1.out Power= \n";
static const char job_failed3[] =
    "JobId=2 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901758 Nice=0 Account=(null) QOS=(null) JobState=FAILED "
    "Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=3:0 RunTime=00:00:00 TimeLimit=02:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:41:09 EligibleTime=2026-12-01T22:41:09 "
    "AccrueTime=2026-12-01T22:41:09 StartTime=2026-12-01T22:41:10 "
    "EndTime=2026-12-01T22:41:10 Deadline=N/A PreemptEligibleTime=2026-12-01T22:41:10 "
    "PreemptTime=None SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:41:10 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) NodeList=node1 "
    "BatchHost=node1 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-2.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-2.out Power= \n";
static const char job_failed09[] =
    "JobId=3 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=FAILED "
    "Reason=JobLaunchFailure Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:9 RunTime=00:00:00 TimeLimit=02:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:41:09 EligibleTime=2026-12-01T22:41:09 "
    "AccrueTime=2026-12-01T22:41:09 StartTime=2026-12-01T22:41:10 "
    "EndTime=2026-12-01T22:41:10 Deadline=N/A PreemptEligibleTime=2026-12-01T22:41:10 "
    "PreemptTime=None SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:41:10 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) NodeList=node2 "
    "BatchHost=node2 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-3.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-3.out Power= \n";
static const char job_timeout[] =
    "JobId=4 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901756 Nice=0 Account=(null) QOS=(null) JobState=TIMEOUT "
    "Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:15 RunTime=00:01:21 TimeLimit=00:01:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:41:13 EligibleTime=2026-12-01T22:41:13 "
    "AccrueTime=2026-12-01T22:41:13 StartTime=2026-12-01T22:41:16 "
    "EndTime=2026-12-01T22:42:37 Deadline=N/A PreemptEligibleTime=2026-12-01T22:41:16 "
    "PreemptTime=None SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:41:16 Scheduler=Main Partition=one "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) NodeList=node1 "
    "BatchHost=node1 NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-4.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-4.out Power= \n";
static const char job_cancelled[] =
    "JobId=7 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901753 Nice=0 Account=(null) QOS=(null) JobState=CANCELLED Reason=None "
    "Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 "
    "RunTime=00:00:00 TimeLimit=02:00:00 TimeMin=N/A SubmitTime=2026-12-01T22:43:02 "
    "EligibleTime=2026-12-01T22:43:02 AccrueTime=2026-12-01T22:43:02 "
    "StartTime=2026-12-01T22:43:05 EndTime=2026-12-01T22:43:05 Deadline=N/A "
    "PreemptEligibleTime=2026-12-01T22:43:05 PreemptTime=None SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-12-01T22:43:05 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[1-2] BatchHost=node1 NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=2,billing=2 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-7.out "
    "StdIn=/dev/null StdOut=/tmp/slcap/slurm-7.out Power= \n";
static const char job_nodefail[] =
    "JobId=5 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901755 Nice=0 Account=(null) QOS=(null) JobState=NODE_FAIL "
    "Reason=NodeDown Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:15 RunTime=00:01:45 TimeLimit=02:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:41:15 EligibleTime=2026-12-01T22:41:15 "
    "AccrueTime=2026-12-01T22:41:15 StartTime=2026-12-01T22:41:16 "
    "EndTime=2026-12-01T22:43:01 Deadline=N/A PreemptEligibleTime=2026-12-01T22:41:16 "
    "PreemptTime=None SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:41:16 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[1-2] BatchHost=node1 NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=2,billing=2 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-5.out "
    "StdIn=/dev/null StdOut=/tmp/slcap/slurm-5.out Power= \n";
static const char node1_idle[] =
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "CPULoad=3.55 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.2 NodeHostName=localhost Port=20584 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=22094 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 "
    "Owner=N/A MCS_label=N/A Partitions=gpu,one,hi  BootTime=2026-12-01T14:06:44 "
    "SlurmdStartTime=2026-12-01T22:41:07 LastBusyTime=2026-12-01T22:43:01 "
    "CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";
static const char node2_down[] =
    "NodeName=node2 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "CPULoad=3.40 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.3 NodeHostName=localhost Port=27008 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=21912 Sockets=2 Boards=1 State=DOWN+NOT_RESPONDING ThreadsPerCore=1 "
    "TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  "
    "BootTime=2026-12-01T14:06:44 SlurmdStartTime=2026-12-01T22:41:07 "
    "LastBusyTime=2026-12-01T22:43:01 CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES= "
    "CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
    "ExtSensorsTemp=n/s Reason=Not responding [root@2026-12-01T22:43:01]\n";
static const char job_preempted[] =
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=PREEMPTED Reason=None "
    "Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 "
    "RunTime=00:00:03 TimeLimit=02:00:00 TimeMin=N/A SubmitTime=2026-12-01T22:44:15 "
    "EligibleTime=2026-12-01T22:44:15 AccrueTime=2026-12-01T22:44:15 "
    "StartTime=2026-12-01T22:44:16 EndTime=2026-12-01T22:44:19 Deadline=N/A "
    "PreemptEligibleTime=2026-12-01T22:44:16 PreemptTime=2026-12-01T22:44:19 "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-01T22:44:16 Scheduler=Main "
    "Partition=one AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node1 BatchHost=node1 NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=1,billing=2 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-1.out "
    "StdIn=/dev/null StdOut=/tmp/slcap/slurm-1.out Power= \n";

/* Another run: job 1 of two nodes whose tasks ignore SIGTERM, node2's
 * slurmd killed: COMPLETING for NodeDown while Slurm stops node1 (NodeList
 * no longer names node2), then NODE_FAIL. */
static const char job_completing[] =
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETING "
    "Reason=NodeDown Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 RunTime=00:00:18 TimeLimit=02:00:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:45:08 EligibleTime=2026-12-01T22:45:08 "
    "AccrueTime=2026-12-01T22:45:08 StartTime=2026-12-01T22:45:10 "
    "EndTime=2026-12-01T22:45:28 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:45:10 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) NodeList=node1 "
    "BatchHost=node1 NumNodes=1 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=4,node=2,billing=4 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* "
    "MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-1.out StdIn=/dev/null "
    "StdOut=/tmp/slcap/slurm-1.out Power= \n";
static const char node1_completing[] =
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "CPULoad=3.89 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.2 NodeHostName=localhost Port=26097 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=22151 Sockets=2 Boards=1 State=IDLE+COMPLETING ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu,one  BootTime=2026-12-01T14:06:45 "
    "SlurmdStartTime=2026-12-01T22:45:07 LastBusyTime=2026-12-01T22:45:28 "
    "CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";

/* A third: job 1 of two nodes whose tasks ignore SIGTERM, run past
 * --time=1 with KillWait=20: COMPLETING for TimeLimit, then TIMEOUT. */
static const char job_completing_timelimit[] =
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETING "
    "Reason=TimeLimit Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:15 RunTime=00:01:27 TimeLimit=00:01:00 TimeMin=N/A "
    "SubmitTime=2026-12-01T22:44:54 EligibleTime=2026-12-01T22:44:54 "
    "AccrueTime=2026-12-01T22:44:54 StartTime=2026-12-01T22:44:56 "
    "EndTime=2026-12-01T22:46:23 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-01T22:44:56 Scheduler=Main Partition=gpu "
    "AllocNode:Sid=localhost:20742 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=node[1-2] BatchHost=node1 NumNodes=2 NumCPUs=4 NumTasks=2 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=4,node=2,billing=4 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp/slcap StdErr=/tmp/slcap/slurm-1.out "
    "StdIn=/dev/null StdOut=/tmp/slcap/slurm-1.out Power= \n";

static const char node2_completing[] =
    "NodeName=node2 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "CPULoad=4.09 AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:2 "
    "NodeAddr=127.0.0.3 NodeHostName=localhost Port=21740 Version=22.05.8 OS=Linux "
    "6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 AllocMem=0 "
    "FreeMem=22156 Sockets=2 Boards=1 State=IDLE+COMPLETING ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu  BootTime=2026-12-01T14:06:44 "
    "SlurmdStartTime=2026-12-01T22:44:53 LastBusyTime=2026-12-01T22:46:23 "
    "CfgTRES=cpu=2,mem=4000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";

/* The node lines while job 5 ran (node1_alloc, node2_alloc) and after
 * node2 was lost (node1_idle, node2_down); what the status command prints
 * for a host scontrol does not know. */
static const char node2_unknown[] = "NodeName=node2\n";

/* The status command's output: "@job", the job line ("" printed as an
 * empty line), "@acct" and its lines when there is no job line, "@nodes",
 * "@files".  Static buffer. */
static const char *status_text(const char *job, const char *acct, const char *nodes,
                               const char *files)
{
    static char t[16384];
    snprintf(t, sizeof(t), "@job\n%s%s%s%s@nodes\n%s@files\n%s", job[0] ? job : "\n",
             job[0] ? "" : "@acct\n", job[0] ? "" : acct, "", nodes, files);
    return t;
}

static slurm_job_view *view(const char *text)
{
    static slurm_job_view v;
    slurm_job_view_parse(text, &v);
    return &v;
}

/* Node `rank` of job `job` on site "lab" is as said. */
static void expect_node(const slurm_job_view *v, long job, unsigned rank, gpc_phase phase,
                        int exit_code, int stopped, const char *ip, const char *detail)
{
    gpc_node_status o;
    memset(&o, 0x5a, sizeof(o));
    slurm_job_node_status("lab", job, rank, v, &o);
    char id[64], data[128];
    snprintf(id, sizeof(id), "lab/%ld/%u", job, rank);
    snprintf(data, sizeof(data), "{\"site\":\"lab\",\"job\":%ld,\"rank\":%u}", job, rank);
    assert_string_equal(o.provider_id, id);
    assert_string_equal(o.data, data);
    assert_string_equal(gpc_phase_name(o.phase), gpc_phase_name(phase));
    assert_int_equal(o.exit_code, exit_code);
    assert_int_equal(o.stopped, stopped);
    assert_string_equal(o.private_ip, ip);
    assert_string_equal(o.detail, detail);
    assert_int_equal(o.no_capacity, 0);
}

static void test_view_parse(void **state)
{
    (void)state;
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_alloc, node2_alloc);
    slurm_job_view *v = view(status_text(job_running, "", nodes,
                                         "0|running|\n1||7\n2|setup|\n64|running|\nbad\n"));
    assert_int_equal(v->known, 1);
    assert_string_equal(v->state, "RUNNING");
    assert_string_equal(v->reason, "None");
    assert_int_equal(v->exit_code, 0);
    assert_int_equal(v->exit_signal, 0);
    assert_string_equal(v->nodelist, "node[1-2]");
    assert_int_equal(v->n_nodes, 2);
    assert_string_equal(v->nodes[0].name, "node1");
    assert_string_equal(v->nodes[0].addr, "127.0.0.2");
    assert_string_equal(v->nodes[0].state, "ALLOCATED");
    assert_string_equal(v->nodes[1].name, "node2");
    assert_string_equal(v->nodes[1].addr, "127.0.0.3");
    assert_string_equal(v->nodes[1].state, "ALLOCATED");
    assert_int_equal(v->files[0].seen, 1);
    assert_string_equal(v->files[0].phase, "running");
    assert_int_equal(v->files[0].exit_status, -1);
    assert_int_equal(v->files[1].seen, 1);
    assert_string_equal(v->files[1].phase, "");
    assert_int_equal(v->files[1].exit_status, 7);
    assert_int_equal(v->files[2].seen, 1);
    assert_string_equal(v->files[2].phase, "setup");
    assert_int_equal(v->files[3].seen, 0);
    assert_int_equal(v->files[3].exit_status, -1);
    assert_int_equal(v->files[63].seen, 0);

    v = view(status_text(job_pending, "", "", ""));
    assert_int_equal(v->known, 1);
    assert_string_equal(v->state, "PENDING");
    assert_string_equal(v->reason, "Resources");
    assert_string_equal(v->nodelist, "");
    assert_int_equal(v->n_nodes, 0);

    v = view(status_text(job_failed09, "", node2_unknown, "0|failed|137\n"));
    assert_string_equal(v->state, "FAILED");
    assert_string_equal(v->reason, "JobLaunchFailure");
    assert_int_equal(v->exit_code, 0);
    assert_int_equal(v->exit_signal, 9);
    assert_int_equal(v->n_nodes, 1);
    assert_string_equal(v->nodes[0].name, "node2");
    assert_string_equal(v->nodes[0].addr, "");
    assert_string_equal(v->nodes[0].state, "");
    assert_string_equal(v->files[0].phase, "failed");
    assert_int_equal(v->files[0].exit_status, 137);

    /* the node that was lost: its State, not its Reason's words */
    snprintf(nodes, sizeof(nodes), "%s%s", node1_idle, node2_down);
    v = view(status_text(job_nodefail, "", nodes, ""));
    assert_string_equal(v->state, "NODE_FAIL");
    assert_string_equal(v->reason, "NodeDown");
    assert_int_equal(v->exit_signal, 15);
    assert_string_equal(v->nodes[0].state, "IDLE");
    assert_string_equal(v->nodes[1].state, "DOWN+NOT_RESPONDING");

    /* forgotten: sacct's line */
    v = view(status_text("", "CANCELLED by 0|0:15\n", "", ""));
    assert_int_equal(v->known, 1);
    assert_string_equal(v->state, "CANCELLED");
    assert_int_equal(v->exit_code, 0);
    assert_int_equal(v->exit_signal, 15);
    v = view(status_text("", "", "", ""));
    assert_int_equal(v->known, 0);
    assert_string_equal(v->state, "");
    /* nothing at all (the command printed nothing) */
    v = view("");
    assert_int_equal(v->known, 0);
    assert_int_equal(v->n_nodes, 0);
    assert_int_equal(v->files[0].exit_status, -1);
}

static void test_status_pending(void **state)
{
    (void)state;
    const slurm_job_view *v = view(status_text(job_pending, "", "", ""));
    expect_node(v, 6, 0, GPC_PHASE_BOOTING, -1, 0, "", "Slurm job 6 pending (Resources)");
    expect_node(v, 6, 1, GPC_PHASE_BOOTING, -1, 0, "", "Slurm job 6 pending (Resources)");
}

static void test_status_running(void **state)
{
    (void)state;
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_alloc, node2_alloc);
    /* rank 0's bootstrap runs the job, rank 1's is in setup */
    const slurm_job_view *v = view(status_text(job_running, "", nodes,
                                               "0|running|\n1|setup|\n"));
    expect_node(v, 5, 0, GPC_PHASE_RUNNING, -1, 0, "127.0.0.2",
                "Slurm job 5 RUNNING on node1 (127.0.0.2)");
    expect_node(v, 5, 1, GPC_PHASE_BOOTING, -1, 0, "127.0.0.3",
                "Slurm job 5 RUNNING on node2 (127.0.0.3)");
    /* no node directory yet: booting */
    v = view(status_text(job_running, "", nodes, ""));
    expect_node(v, 5, 0, GPC_PHASE_BOOTING, -1, 0, "127.0.0.2",
                "Slurm job 5 RUNNING on node1 (127.0.0.2)");
    /* a node whose bootstrap ended while the job runs: its own status */
    v = view(status_text(job_running, "", nodes, "0|running|\n1|failed|7\n"));
    expect_node(v, 5, 0, GPC_PHASE_RUNNING, -1, 0, "127.0.0.2",
                "Slurm job 5 RUNNING on node1 (127.0.0.2)");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, 7, 0, "127.0.0.3",
                "the node's job exited 7 (Slurm job 5 still RUNNING)");
    v = view(status_text(job_running, "", nodes, "0|succeeded|0\n1||7\n"));
    expect_node(v, 5, 0, GPC_PHASE_SUCCEEDED, 0, 0, "127.0.0.2",
                "the node's job exited 0 (Slurm job 5 still RUNNING)");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, 7, 0, "127.0.0.3",
                "the node's job exited 7 (Slurm job 5 still RUNNING)");
    /* a rank beyond the hosts listed */
    expect_node(v, 5, 2, GPC_PHASE_BOOTING, -1, 0, "", "Slurm job 5 RUNNING");
}

static void test_status_completed_failed(void **state)
{
    (void)state;
    /* COMPLETED, with and without the node's files */
    const slurm_job_view *v = view(status_text(job_completed, "", node1_idle, "0|succeeded|0\n"));
    expect_node(v, 1, 0, GPC_PHASE_SUCCEEDED, 0, 1, "127.0.0.2", "Slurm job 1 COMPLETED");
    v = view(status_text(job_completed, "", node1_idle, ""));
    expect_node(v, 1, 0, GPC_PHASE_SUCCEEDED, 0, 1, "127.0.0.2", "Slurm job 1 COMPLETED");

    /* FAILED: the node's own status, else the job's ExitCode */
    v = view(status_text(job_failed3, "", node1_idle, "0|failed|3\n"));
    expect_node(v, 2, 0, GPC_PHASE_FAILED, 3, 1, "127.0.0.2", "Slurm job 2 FAILED");
    v = view(status_text(job_failed3, "", node1_idle, ""));
    expect_node(v, 2, 0, GPC_PHASE_FAILED, 3, 1, "127.0.0.2", "Slurm job 2 FAILED");
    v = view(status_text(job_failed09, "", node2_unknown, ""));
    expect_node(v, 3, 0, GPC_PHASE_FAILED, 137, 1, "", "Slurm job 3 FAILED");
    v = view(status_text(job_failed09, "", node2_unknown, "0|failed|1\n"));
    expect_node(v, 3, 0, GPC_PHASE_FAILED, 1, 1, "", "Slurm job 3 FAILED");
    /* a node of a failed job whose bootstrap succeeded keeps its 0 */
    v = view(status_text(job_failed3, "", node1_idle, "0|succeeded|0\n"));
    expect_node(v, 2, 0, GPC_PHASE_SUCCEEDED, 0, 1, "127.0.0.2", "Slurm job 2 FAILED");
}

static void test_status_timeout_cancelled(void **state)
{
    (void)state;
    /* TIMEOUT: 124 whatever the node recorded of Slurm's SIGTERM (143; it
     * said 143 before, against docs/providers/slurm.md) */
    const slurm_job_view *v = view(status_text(job_timeout, "", node1_idle, ""));
    expect_node(v, 4, 0, GPC_PHASE_FAILED, 124, 1, "127.0.0.2", "Slurm job 4 TIMEOUT");
    v = view(status_text(job_timeout, "", node1_idle, "0|failed|143\n"));
    expect_node(v, 4, 0, GPC_PHASE_FAILED, 124, 1, "127.0.0.2", "Slurm job 4 TIMEOUT");
    v = view(status_text(job_timeout, "", node1_idle, "0|running|\n"));
    expect_node(v, 4, 0, GPC_PHASE_FAILED, 124, 1, "127.0.0.2", "Slurm job 4 TIMEOUT");
    /* while Slurm stops the nodes (COMPLETING, Reason=TimeLimit): the
     * same, not the 143 the bootstraps recorded (said as failed 143 before) */
    char nodes2[4096];
    snprintf(nodes2, sizeof(nodes2), "%s%s", node1_completing, node2_completing);
    v = view(status_text(job_completing_timelimit, "", nodes2, "0|failed|143\n1|running|\n"));
    assert_string_equal(v->state, "COMPLETING");
    assert_string_equal(v->reason, "TimeLimit");
    expect_node(v, 1, 0, GPC_PHASE_FAILED, 124, 1, "127.0.0.2", "Slurm job 1 TIMEOUT");
    expect_node(v, 1, 1, GPC_PHASE_FAILED, 124, 1, "127.0.0.3", "Slurm job 1 TIMEOUT");

    /* CANCELLED: terminated, what the bootstraps recorded of the SIGTERM
     * is no exit status */
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_alloc, node2_alloc);
    v = view(status_text(job_cancelled, "", nodes, "0|failed|143\n1|failed|143\n"));
    expect_node(v, 7, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2", "Slurm job 7 CANCELLED");
    expect_node(v, 7, 1, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.3", "Slurm job 7 CANCELLED");
    v = view(status_text(job_cancelled, "", nodes, ""));
    expect_node(v, 7, 1, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.3", "Slurm job 7 CANCELLED");
}

static void test_status_node_fail(void **state)
{
    (void)state;
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_idle, node2_down);
    /* node2 is lost; node1's bootstrap recorded the SIGTERM */
    const slurm_job_view *v = view(status_text(job_nodefail, "", nodes,
                                               "0|failed|143\n1|running|\n"));
    expect_node(v, 5, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 5 ended (NODE_FAIL): Slurm node node2 was lost");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, -1, 1, "127.0.0.3",
                "lost: Slurm node node2 is DOWN+NOT_RESPONDING; Slurm job 5 ended (NODE_FAIL)");
}

static void test_status_preempted(void **state)
{
    (void)state;
    const slurm_job_view *v = view(status_text(job_preempted, "", node1_idle, ""));
    expect_node(v, 1, 0, GPC_PHASE_PREEMPTED, -1, 1, "127.0.0.2", "Slurm preempted job 1");
    v = view(status_text(job_preempted, "", node1_idle, "0|failed|143\n"));
    expect_node(v, 1, 0, GPC_PHASE_PREEMPTED, -1, 1, "127.0.0.2", "Slurm preempted job 1");
}

static void test_status_forgotten(void **state)
{
    (void)state;
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_idle, node2_down);
    /* no accounting, the nodes' files */
    const slurm_job_view *v = view(status_text("", "", nodes, "0|succeeded|0\n1|failed|3\n"));
    expect_node(v, 5, 0, GPC_PHASE_SUCCEEDED, 0, 1, "127.0.0.2", "Slurm job 5 is over");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, 3, 1, "127.0.0.3", "Slurm job 5 is over");
    /* no accounting, no files (or no exit recorded) */
    v = view(status_text("", "", "", "0|running|\n"));
    expect_node(v, 5, 0, GPC_PHASE_TERMINATED, -1, 1, "", "Slurm no longer knows job 5");
    expect_node(v, 5, 1, GPC_PHASE_TERMINATED, -1, 1, "", "Slurm no longer knows job 5");
    /* accounting: its state as Slurm's own */
    v = view(status_text("", "COMPLETED|0:0\n", "", ""));
    expect_node(v, 5, 0, GPC_PHASE_SUCCEEDED, 0, 1, "", "Slurm job 5 COMPLETED");
    v = view(status_text("", "FAILED|3:0\n", "", "0|failed|3\n1|failed|1\n"));
    expect_node(v, 5, 0, GPC_PHASE_FAILED, 3, 1, "", "Slurm job 5 FAILED");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, 1, 1, "", "Slurm job 5 FAILED");
    v = view(status_text("", "FAILED|0:9\n", "", ""));
    expect_node(v, 5, 0, GPC_PHASE_FAILED, 137, 1, "", "Slurm job 5 FAILED");
    v = view(status_text("", "CANCELLED by 0|0:15\n", "", "0|failed|143\n"));
    expect_node(v, 5, 0, GPC_PHASE_TERMINATED, -1, 1, "", "Slurm job 5 CANCELLED");
    v = view(status_text("", "TIMEOUT|0:15\n", "", "0|failed|143\n"));
    expect_node(v, 5, 0, GPC_PHASE_FAILED, 124, 1, "", "Slurm job 5 TIMEOUT");
    v = view(status_text("", "NODE_FAIL|0:0\n", nodes, ""));
    expect_node(v, 5, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 5 ended (NODE_FAIL): Slurm node node2 was lost");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, -1, 1, "127.0.0.3",
                "lost: Slurm node node2 is DOWN+NOT_RESPONDING; Slurm job 5 ended (NODE_FAIL)");
    v = view(status_text("", "PREEMPTED|0:15\n", "", ""));
    expect_node(v, 5, 0, GPC_PHASE_PREEMPTED, -1, 1, "", "Slurm preempted job 5");
}

static void test_status_completing_node_down(void **state)
{
    (void)state;
    /* the hosts recorded while the job ran: node2 is found lost */
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_completing, node2_down);
    const slurm_job_view *v = view(status_text(job_completing, "", nodes,
                                               "0|running|\n1|running|\n"));
    assert_string_equal(v->nodelist, "node1");
    assert_string_equal(v->nodes[0].state, "IDLE+COMPLETING");
    expect_node(v, 1, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 1 ended (NODE_FAIL): Slurm node node2 was lost");
    expect_node(v, 1, 1, GPC_PHASE_FAILED, -1, 1, "127.0.0.3",
                "lost: Slurm node node2 is DOWN+NOT_RESPONDING; Slurm job 1 ended (NODE_FAIL)");
    /* the bootstrap that recorded the SIGTERM: still no exit status */
    v = view(status_text(job_completing, "", nodes, "0|failed|143\n"));
    expect_node(v, 1, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 1 ended (NODE_FAIL): Slurm node node2 was lost");
    /* without them, only NodeList's node1: no node is known lost */
    v = view(status_text(job_completing, "", node1_completing, ""));
    expect_node(v, 1, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 1 ended (NODE_FAIL)");
    expect_node(v, 1, 1, GPC_PHASE_TERMINATED, -1, 1, "", "Slurm job 1 ended (NODE_FAIL)");
    /* COMPLETING for any other reason: the job runs on until it is over */
    char line[sizeof(job_completing)];
    snprintf(line, sizeof(line), "%s", job_completing);
    char *r = strstr(line, "Reason=NodeDown");
    assert_non_null(r);
    memcpy(r, "Reason=None    ", 15);
    v = view(status_text(line, "", nodes, "0|running|\n"));
    expect_node(v, 1, 0, GPC_PHASE_BOOTING, -1, 0, "127.0.0.2",
                "Slurm job 1 COMPLETING on node1 (127.0.0.2)");
}

/* scontrol show node says a node that does not answer with
 * "+NOT_RESPONDING" (sinfo's '*'): such a node is lost even before Slurm
 * marks it DOWN (the DOWN line of node2 with IDLE for DOWN: a node an
 * administrator resumed while its slurmd is still gone). */
static void test_status_not_responding(void **state)
{
    (void)state;
    char n2[sizeof(node2_down)];
    snprintf(n2, sizeof(n2), "%s", node2_down);
    char *st = strstr(n2, "State=DOWN+");
    assert_non_null(st);
    memmove(st + 6, "IDLE", 4);
    char nodes[4096];
    snprintf(nodes, sizeof(nodes), "%s%s", node1_idle, n2);
    const slurm_job_view *v = view(status_text(job_nodefail, "", nodes, ""));
    assert_string_equal(v->nodes[1].state, "IDLE+NOT_RESPONDING");
    expect_node(v, 5, 0, GPC_PHASE_TERMINATED, -1, 1, "127.0.0.2",
                "Slurm job 5 ended (NODE_FAIL): Slurm node node2 was lost");
    expect_node(v, 5, 1, GPC_PHASE_FAILED, -1, 1, "127.0.0.3",
                "lost: Slurm node node2 is IDLE+NOT_RESPONDING; Slurm job 5 ended (NODE_FAIL)");
}

/* ---- the provider table ---- */

static void test_table(void **state)
{
    (void)state;
    const gpc_provider *p = gpc_provider_find("slurm");
    assert_non_null(p);
    gpc_error err = {0};
    assert_int_equal(gpc_provider_check(p, &err), 0);
    assert_int_equal(p->caps,
                     GPC_CAP_OWN_OFFERS | GPC_CAP_GROUP | GPC_CAP_QUEUE | GPC_CAP_SECRETS);
    assert_int_equal(p->rdzv, GPC_RDZV_ON_NODE);
    assert_int_equal(p->rank, GPC_RANK_SCHEDULER);
    const char *keys[] = {"login", "partitions", "account", "qos", "gpu_hour_price", "job_dir"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(p->site_keys[i], keys[i]);
    assert_null(p->site_keys[6]);
    assert_string_equal(p->userdata->provider, "slurm");

    /* check with no Slurm cluster configured */
    slurm_ctx *c = NULL;
    assert_int_equal(open_sites(NULL, 0, &c, &err), 0);
    assert_int_equal(c->n_sites, 0);
    char detail[256] = "unchanged";
    assert_int_equal(p->check(c, detail, sizeof(detail), &err), GPC_ERR_AUTH);
    assert_string_equal(err.msg, "slurm: no Slurm cluster is configured: add a [slurm \"NAME\"] "
                        "section to gpuctl's config file (docs/providers/slurm.md)");
    close_sites(c);

    /* shares_files: only where gpuctl runs on the login node */
    gpc_site_value a[] = {{"login", "local", 2}};
    gpc_site_value b[] = {{"login", "alice@login", 4}};
    gpc_site sites[] = {{"here", 1, a, 1}, {"far", 3, b, 1}};
    assert_int_equal(open_sites(sites, 2, &c, &err), 0);
    gpc_offer of;
    memset(&of, 0, sizeof(of));
    snprintf(of.region, sizeof(of.region), "here");
    assert_int_equal(p->shares_files(c, &of), 1);
    snprintf(of.region, sizeof(of.region), "far");
    assert_int_equal(p->shares_files(c, &of), 0);
    snprintf(of.region, sizeof(of.region), "gone");
    assert_int_equal(p->shares_files(c, &of), 0);

    /* node ids that are not this provider's, a site not configured: said
     * before anything runs */
    const char *bad[] = {"here", "here/5", "here/0/0", "here/x/0", "here/5/", "here/5/70000",
                         "/5/0", "here/5/0x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gpc_node_status o;
        const char *ids[1] = {bad[i]};
        char want[256];
        snprintf(want, sizeof(want), "slurm: '%s' is not a node id of this provider "
                 "(SITE/JOB/RANK)", bad[i]);
        gpc_error_clear(&err);
        assert_int_equal(p->describe_nodes(c, NULL, ids, 1, &o, &err), GPC_ERR_PROVIDER);
        assert_string_equal(err.msg, want);
        gpc_node_ref ref = {"here", bad[i], ""};
        gpc_error_clear(&err);
        assert_int_equal(p->delete_node(c, &ref, &err), GPC_ERR_PROVIDER);
        assert_string_equal(err.msg, want);
        gpc_buf out;
        gpc_buf_init(&out, 1 << 20);
        long next = -1;
        gpc_error_clear(&err);
        int ex = -2;
        assert_int_equal(p->read_log(c, NULL, &ref, 0, 10, 0, &out, &next, &ex, &err),
                         GPC_ERR_PROVIDER);
        assert_int_equal(ex, -1);
        assert_string_equal(err.msg, want);
        assert_int_equal(next, 10);
        assert_int_equal(out.len, 0);
        gpc_buf_free(&out);
    }
    const char *ids[1] = {"lab/5/0"};
    gpc_node_status o;
    gpc_error_clear(&err);
    assert_int_equal(p->describe_nodes(c, NULL, ids, 1, &o, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "slurm: no Slurm cluster 'lab' in gpuctl's config file (a "
                        "[slurm \"lab\"] section; docs/providers/slurm.md)");
    gpc_node_ref ref = {"lab", "lab/5/0", ""};
    gpc_error_clear(&err);
    assert_int_equal(p->delete_node(c, &ref, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "slurm: no Slurm cluster 'lab' in gpuctl's config file (a "
                        "[slurm \"lab\"] section; docs/providers/slurm.md)");
    gpc_error_clear(&err);
    assert_int_equal(p->find_node(c, "lab", "tok/0", &o, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "slurm: no Slurm cluster 'lab' in gpuctl's config file (a "
                        "[slurm \"lab\"] section; docs/providers/slurm.md)");
    close_sites(c);
}

/* scontrol that cannot answer (a controller stopped or slow) is no
 * forgotten job: the view says so, knows nothing, and reads no further.
 * Regression: the job was taken for over, and destroy left it running. */
static void test_view_scontrol_error(void **state)
{
    (void)state;
    slurm_job_view v;
    slurm_job_view_parse("@job\n"
                         "@error slurm_load_jobs error: Socket timed out on send/recv operation\n"
                         "@files\n0|running|\n", &v);
    assert_string_equal(v.error, "slurm_load_jobs error: Socket timed out on send/recv operation");
    assert_int_equal(v.known, 0);
    assert_int_equal(v.files[0].seen, 0);
    slurm_job_view_parse("@job\n@acct\n@nodes\n@files\n", &v);
    assert_string_equal(v.error, "");
}

/* endpoint, profile and region made for slurm are refused, naming where
 * they come from; the ones every provider gets from --endpoint and
 * --profile are not slurm's to refuse. */
static void test_no_settings(void **state)
{
    (void)state;
    const gpc_provider *p = gpc_provider_find("slurm");
    gpc_provider_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.config_path = CONFIG;
    void *ctx = NULL;
    gpc_error err = {0};
    cfg.region = "lab";
    cfg.region_from = "/home/u/.config/gpuctl/config:2";
    assert_int_equal(p->open(&cfg, &ctx, &err), GPC_ERR_USAGE);
    assert_null(ctx);
    assert_string_equal(err.msg, "/home/u/.config/gpuctl/config:2: slurm takes no region: a "
                                 "Slurm cluster is a [slurm \"NAME\"] section of the config "
                                 "file (docs/providers/slurm.md)");
    cfg.region = NULL;
    cfg.endpoint = "http://127.0.0.1:9";
    cfg.endpoint_from = "GPUCTL_SLURM_ENDPOINT";
    gpc_error_clear(&err);
    assert_int_equal(p->open(&cfg, &ctx, &err), GPC_ERR_USAGE);
    assert_string_equal(err.msg, "GPUCTL_SLURM_ENDPOINT: slurm takes no endpoint: a Slurm "
                                 "cluster is a [slurm \"NAME\"] section of the config file "
                                 "(docs/providers/slurm.md)");
    cfg.endpoint_from = "--endpoint";
    cfg.profile = "x";
    cfg.profile_from = "--profile";
    gpc_error_clear(&err);
    assert_int_equal(p->open(&cfg, &ctx, &err), 0);
    p->close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_out_err_status),
        cmocka_unit_test(test_exec_environment),
        cmocka_unit_test(test_exec_timeout),
        cmocka_unit_test(test_exec_output_limit),
        cmocka_unit_test(test_exec_ok_messages),
        cmocka_unit_test_setup_teardown(test_exec_ssh, ssh_setup, ssh_teardown),
        cmocka_unit_test_setup_teardown(test_exec_ssh_unreachable, ssh_setup, ssh_teardown),
        cmocka_unit_test(test_site_defaults),
        cmocka_unit_test(test_site_every_key),
        cmocka_unit_test(test_site_refused),
        cmocka_unit_test(test_site_partitions_edge),
        cmocka_unit_test(test_exec_stdin),
        cmocka_unit_test(test_view_parse),
        cmocka_unit_test(test_view_scontrol_error),
        cmocka_unit_test(test_no_settings),
        cmocka_unit_test(test_status_pending),
        cmocka_unit_test(test_status_running),
        cmocka_unit_test(test_status_completed_failed),
        cmocka_unit_test(test_status_timeout_cancelled),
        cmocka_unit_test(test_status_node_fail),
        cmocka_unit_test(test_status_preempted),
        cmocka_unit_test(test_status_forgotten),
        cmocka_unit_test(test_status_completing_node_down),
        cmocka_unit_test(test_status_not_responding),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
