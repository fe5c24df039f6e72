/*
 * spawn.h - start and stop one of the Python fake servers in tests/fake/
 * from a cmocka test (header-only; every function is static inline).
 *
 * fake_start() runs `/usr/bin/python3 tests/fake/SCRIPT --exit-on-stdin-eof
 * --log LOGFILE ARGS...` with a pipe on its stdin and reads "PORT <n>" from
 * its stdout.  fake_stop() closes that pipe (the server exits on EOF, so a
 * test that crashes leaves nothing behind either), sends SIGTERM and reaps
 * the process.  The script directory is $GPUCTL_SOURCE_DIR/tests/fake, or
 * the directory of this header when that is unset.
 */
#ifndef GPUCTL_TESTS_FAKE_SPAWN_H
#define GPUCTL_TESTS_FAKE_SPAWN_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fake_server {
    pid_t pid;         /* 0 when not running */
    int in_fd;         /* write end of the server's stdin */
    int out_fd;        /* read end of the server's stdout */
    int port;
    char base[64];     /* "http://127.0.0.1:PORT" */
    char log[64];      /* request log file */
} fake_server;

static inline void fake_script_path(const char *script, char *out, size_t size)
{
    const char *src = getenv("GPUCTL_SOURCE_DIR");
    if (src && *src) {
        snprintf(out, size, "%s/tests/fake/%s", src, script);
        return;
    }
    const char *self = __FILE__, *slash = strrchr(self, '/');
    int dirlen = slash ? (int)(slash - self) : 1;
    snprintf(out, size, "%.*s/%s", dirlen, slash ? self : ".", script);
}

/* Start SCRIPT with extra arguments (NULL-terminated list, may be NULL).
 * Returns 0, or -1 with a message on stderr. */
static inline int fake_start(fake_server *s, const char *script, const char *const *args)
{
    char path[1024];
    fake_script_path(script, path, sizeof(path));
    memset(s, 0, sizeof(*s));
    s->in_fd = s->out_fd = -1;
    snprintf(s->log, sizeof(s->log), "/tmp/gpuctl-fake-log-XXXXXX");
    int lfd = mkstemp(s->log);
    if (lfd < 0)
        return perror("mkstemp"), -1;
    close(lfd);

    const char *argv[64];
    int argc = 0;
    argv[argc++] = "/usr/bin/python3";
    argv[argc++] = path;
    argv[argc++] = "--exit-on-stdin-eof";
    argv[argc++] = "--log";
    argv[argc++] = s->log;
    for (int i = 0; args && args[i] && argc < 63; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;

    int in[2], out[2];
    if (pipe(in))
        return perror("pipe"), -1;
    if (pipe(out)) {
        close(in[0]);
        close(in[1]);
        return perror("pipe"), -1;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(in[i], F_SETFD, FD_CLOEXEC);
        fcntl(out[i], F_SETFD, FD_CLOEXEC);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return perror("fork"), -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->pid = pid;
    s->in_fd = in[1];
    s->out_fd = out[0];

    char line[64];
    size_t n = 0;
    while (n + 1 < sizeof(line)) {
        struct pollfd pfd = {.fd = s->out_fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 15000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t r = read(s->out_fd, line + n, 1);
        if (r <= 0)
            break;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    if (sscanf(line, "PORT %d", &s->port) != 1 || s->port <= 0) {
        fprintf(stderr, "fake server %s did not report a port (got '%s')\n", script, line);
        return -1;
    }
    snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
    return 0;
}

/* Stop the server (if running), reap it and remove its log. */
static inline void fake_stop(fake_server *s)
{
    if (s->in_fd >= 0)
        close(s->in_fd);
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (s->out_fd >= 0)
        close(s->out_fd);
    if (s->log[0])
        unlink(s->log);
    s->pid = 0;
    s->in_fd = s->out_fd = -1;
    s->log[0] = '\0';
}

/* The request log so far, NUL-terminated; the caller frees it.  "" if none. */
static inline char *fake_log(const fake_server *s)
{
    FILE *f = fopen(s->log, "r");
    char *data = calloc(1, 1 << 20);
    if (!f || !data) {
        if (f)
            fclose(f);
        return data;
    }
    size_t n = fread(data, 1, (1 << 20) - 1, f);
    data[n] = '\0';
    fclose(f);
    return data;
}

/* Number of lines in a log text. */
static inline int fake_log_lines(const char *log)
{
    int n = 0;
    for (; *log; log++)
        n += *log == '\n';
    return n;
}

#endif /* GPUCTL_TESTS_FAKE_SPAWN_H */
