/*
 * exec.c - run a command on a Slurm cluster's login node (slurm_internal.h):
 * here, with /bin/sh and a cleaned environment, when gpuctl runs on the
 * login node, or through the system's OpenSSH client.
 *
 * The time limit is a wall-clock limit on a child process, like curl's
 * transfer timeout, so it reads CLOCK_MONOTONIC rather than gpuctl's clock
 * (which tests may stop).
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slurm/slurm_internal.h"

extern char **environ;

/* The variables a command run here keeps: what the Slurm commands need,
 * and what makes the user's software environment (Python environments,
 * environment modules, CUDA), which sbatch --export=ALL hands the job as
 * Slurm users expect; nothing else, so that no credential of gpuctl's
 * environment (AWS_SECRET_ACCESS_KEY, a token) reaches the job, and no
 * GPUCTL_* variable meets the bootstrap's own. */
static int keep_var(const char *kv)
{
    static const char *const names[] = {
        "PATH=", "HOME=", "USER=", "LOGNAME=", "SHELL=", "LANG=", "LC_", "TZ=", "TMPDIR=",
        "SLURM_", "MUNGE_", "PYENV_", "CONDA_", "VIRTUAL_ENV=", "PYTHONPATH=", "PYTHONHOME=",
        "LD_LIBRARY_PATH=", "MODULEPATH=", "MODULESHOME=", "LOADEDMODULES=", "_LMFILES_=",
        "LMOD_", "CUDA_HOME=", "CUDA_PATH="};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strncmp(kv, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void slurm_result_free(slurm_result *r)
{
    gpc_buf_free(&r->out);
    gpc_buf_free(&r->err);
}

/* The last non-empty line of `b` into out (size bytes), "" when none. */
static void last_line(const gpc_buf *b, char *out, size_t size)
{
    const char *s = b->data ? b->data : "";
    size_t end = b->len;
    while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && s[start - 1] != '\n')
        start--;
    snprintf(out, size, "%.*s", (int)(end - start), s + start);
}

static void first_line(const gpc_buf *b, char *out, size_t size)
{
    size_t n;
    const char *l = slurm_first_line(b->data ? b->data : "", &n);
    snprintf(out, size, "%.*s", (int)n, l);
}

/* write() to the command's stdin without SIGPIPE: a command that exits
 * without reading its input (ssh that cannot connect, sbatch refusing an
 * option) must be an EPIPE here, not the end of gpuctl.  SIGPIPE is
 * blocked in this thread for the write, and the one the write raised, if
 * any, taken before it is unblocked (a SIGPIPE already pending stays). */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t n)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, buf, n);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

static int spawn(const slurm_site *s, const char *cmd, int fds[3][2], pid_t *pid,
                 gpc_error *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, fds[0][0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1][1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[2][1], STDERR_FILENO);
    /* a group of its own, so that a time-out stops what it started too */
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t dflt;
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    int src;
    if (s->local) {
        size_t n = 0, k = 0;
        while (environ && environ[n])
            n++;
        char **env = calloc(n + 1, sizeof(*env));
        if (!env) {
            posix_spawn_file_actions_destroy(&fa);
            posix_spawnattr_destroy(&at);
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++)
            if (keep_var(environ[i]))
                env[k++] = environ[i];
        char sh[] = "sh", dash_c[] = "-c";
        char *argv[] = {sh, dash_c, (char *)cmd, NULL};
        src = posix_spawn(pid, "/bin/sh", &fa, &at, argv, env);
        free(env);
    } else {
        char ssh[] = "ssh", o[] = "-o", batch[] = "BatchMode=yes", conn[] = "ConnectTimeout=15",
             dd[] = "--";
        char *argv[] = {ssh, o, batch, o, conn, dd, (char *)s->login, (char *)cmd, NULL};
        src = posix_spawnp(pid, "ssh", &fa, &at, argv, environ);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (src != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: cannot run %s for Slurm cluster '%s': %s",
                        s->local ? "/bin/sh" : "ssh", s->name, strerror(src));
    return 0;
}

int slurm_exec(const slurm_site *s, const char *cmd, const char *input, size_t len,
               int timeout_s, slurm_result *r, gpc_error *err)
{
    memset(r, 0, sizeof(*r));
    gpc_buf_init(&r->out, SLURM_OUTPUT_MAX);
    gpc_buf_init(&r->err, SLURM_OUTPUT_MAX);
    int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    for (int i = 0; i < 3; i++)
        if (pipe2(fds[i], O_CLOEXEC) != 0) {
            int e = errno;
            for (int j = 0; j < i; j++) {
                close(fds[j][0]);
                close(fds[j][1]);
            }
            return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: cannot create a pipe: %s",
                            strerror(e));
        }
    pid_t pid = -1;
    int rc = spawn(s, cmd, fds, &pid, err);
    close(fds[0][0]);
    close(fds[1][1]);
    close(fds[2][1]);
    int in = fds[0][1], outs[2] = {fds[1][0], fds[2][0]};
    if (rc) {
        close(in);
        close(outs[0]);
        close(outs[1]);
        return rc;
    }
    size_t sent = 0;
    if (!input || len == 0) {
        close(in);
        in = -1;
    } else {
        fcntl(in, F_SETFL, fcntl(in, F_GETFL) | O_NONBLOCK);
    }
    double deadline = mono_now() + (timeout_s > 0 ? timeout_s : 1);
    int timed_out = 0, too_big = 0;
    gpc_buf *bufs[2] = {&r->out, &r->err};
    while ((outs[0] >= 0 || outs[1] >= 0) && !rc) {
        struct pollfd pf[3];
        int np = 0, idx[3];
        for (int i = 0; i < 2; i++)
            if (outs[i] >= 0) {
                pf[np] = (struct pollfd){.fd = outs[i], .events = POLLIN};
                idx[np++] = i;
            }
        if (in >= 0) {
            pf[np] = (struct pollfd){.fd = in, .events = POLLOUT};
            idx[np++] = 2;
        }
        double left = deadline - mono_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        int pr = poll(pf, (nfds_t)np, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < np && !rc; k++) {
            if (!pf[k].revents)
                continue;
            if (idx[k] == 2) {
                ssize_t w = write_nosigpipe(in, input + sent, len - sent);
                if (w > 0)
                    sent += (size_t)w;
                if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == len) {
                    close(in); /* all sent, or the command stopped reading */
                    in = -1;
                }
                continue;
            }
            char chunk[8192];
            ssize_t got = read(outs[idx[k]], chunk, sizeof(chunk));
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close(outs[idx[k]]);
                outs[idx[k]] = -1;
            } else if (gpc_buf_add(bufs[idx[k]], chunk, (size_t)got, NULL)) {
                too_big = 1;
                break;
            }
        }
        if (too_big)
            break;
    }
    if (in >= 0)
        close(in);
    for (int i = 0; i < 2; i++)
        if (outs[i] >= 0)
            close(outs[i]);
    if (timed_out || too_big || rc)
        kill(-pid, SIGKILL);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, timed_out || too_big || rc ? 0 : WNOHANG);
        if (w < 0 && errno == EINTR)
            continue;
        if (w != 0)
            break;
        /* it closed its output and runs on: the time limit still holds */
        if (mono_now() >= deadline) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            continue;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    if (rc)
        return rc;
    if (timed_out)
        return gpc_fail(err, GPC_ERR_TIMEOUT, "slurm: a command on Slurm cluster '%s' ran "
                        "longer than %d s and was stopped", s->name, timeout_s);
    if (too_big)
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: a command on Slurm cluster '%s' printed "
                        "more than %u bytes", s->name, SLURM_OUTPUT_MAX);
    if (!s->local && r->status == 255) {
        char line[256];
        last_line(&r->err, line, sizeof(line));
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: cannot reach the login node %s of Slurm "
                      "cluster '%s' with ssh: %s", s->login, s->name,
                      line[0] ? line : "ssh exited 255");
        err->remote.retryable = 1;
        return rc;
    }
    return 0;
}

int slurm_exec_ok(const slurm_site *s, const char *label, const char *cmd, const char *input,
                  size_t len, int timeout_s, slurm_result *r, gpc_error *err)
{
    int rc = slurm_exec(s, cmd, input, len, timeout_s, r, err);
    if (rc || r->status == 0)
        return rc;
    char line[512];
    first_line(&r->err, line, sizeof(line));
    if (!line[0])
        first_line(&r->out, line, sizeof(line));
    return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: %s on Slurm cluster '%s' failed (exit %d)%s%s",
                    label, s->name, r->status, line[0] ? ": " : "", line);
}
