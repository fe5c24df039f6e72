/*
 * logs.c - the log transport of an aws node (the seam's read_log): the
 * node's /var/lib/gpuctl/node.log and exit_status read over SSH, with the
 * same ssh command as `gpuctl ssh` (ssh.c: the node's host key from its
 * console output, the user's ssh config, a shared connection).
 *
 * One remote command per read prints the node's exit status ("-" while it
 * has none) on a line of its own, then the bytes of node.log from the
 * offset on, at most LOG_CHUNK_MAX: the status comes first and is one
 * line, so it cannot be confused with the log's bytes.  The ssh command of
 * a node is kept in the context once it worked (aws_ctx.logs), so repeated
 * reads ask EC2 nothing, and ControlMaster makes each a new session on the
 * same connection.
 *
 * A node not reachable yet (pending, no public address, sshd not
 * answering, no host keys in its console while the read may not wait) is
 * read as empty; a node that is gone (shutting-down, terminated, stopped:
 * the bootstrap powers the node off when its job ends) is GPC_ERR_NOT_FOUND,
 * saying that its log went with it (its exit status still comes from its
 * console output: instances.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aws/aws_internal.h"
#include "gpuctl/shell.h"
#include "gpuctl/util.h"

extern char **environ;

/* Most bytes of a node's log returned by one read (provider.h). */
#define LOG_CHUNK_MAX (1 << 20)
/* Seconds one read may take (connecting included). */
#define READ_TIMEOUT_S 60
/* Seconds ssh may take to connect. */
#define CONNECT_TIMEOUT_S 10
/* Where the bootstrap keeps its files on an EC2 node (GPUCTL_HOME). */
#define NODE_HOME "/var/lib/gpuctl"

/* A node's ssh command, kept once it worked; said_keys, said_ssh: gpuctl
 * said why the node cannot be read yet (each reason once). */
typedef struct aws_log_conn {
    char id[32];
    char **argv;        /* ssh ... -- USER@IP, ended by NULL; NULL until known */
    int said_keys, said_ssh;
    char gone[32];      /* the state it was found gone in ("" = not gone):
                           final, so EC2 is not asked again */
} aws_log_conn;

struct aws_logs {
    aws_log_conn *v;
    size_t n;
};

void aws_logs_free(aws_ctx *c)
{
    if (!c->logs)
        return;
    for (size_t i = 0; i < c->logs->n; i++)
        gpc_argv_free(c->logs->v[i].argv);
    free(c->logs->v);
    free(c->logs);
    c->logs = NULL;
}

static aws_log_conn *conn_of(aws_ctx *c, const char *id, gpc_error *err)
{
    if (!c->logs && !(c->logs = calloc(1, sizeof(*c->logs)))) {
        gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < c->logs->n; i++)
        if (strcmp(c->logs->v[i].id, id) == 0)
            return &c->logs->v[i];
    aws_log_conn *v = realloc(c->logs->v, (c->logs->n + 1) * sizeof(*v));
    if (!v) {
        gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->logs->v = v;
    aws_log_conn *k = &v[c->logs->n++];
    memset(k, 0, sizeof(*k));
    snprintf(k->id, sizeof(k->id), "%s", id);
    return k;
}

/* ---- the instance's state ------------------------------------------------ */

typedef struct inst_acc {
    char state[32];
    char ip[64];
    int found;
} inst_acc;

static int pick_inst(void *arg, xmlNode *res, gpc_error *err)
{
    (void)err;
    inst_acc *a = arg;
    for (xmlNode *it = gpc_xml_items(res, "instancesSet"); it && !a->found;
         it = gpc_xml_next(it)) {
        gpc_xml_text(it, "instanceState/name", a->state, sizeof(a->state));
        gpc_xml_text(it, "ipAddress", a->ip, sizeof(a->ip));
        a->found = 1;
    }
    return 0;
}

/* The instance's state ("" when EC2 no longer lists it) and public IP. */
static int instance_state(aws_ctx *c, const char *region, const char *id, inst_acc *a,
                          gpc_error *err)
{
    memset(a, 0, sizeof(*a));
    gpc_ec2_params p;
    gpc_ec2_params_init(&p);
    gpc_ec2_param(&p, id, "InstanceId.1");
    gpc_error e;
    gpc_error_clear(&e);
    int rc = aws_describe_all(c, region, "DescribeInstances", &p, "reservationSet", pick_inst, a,
                              &e);
    gpc_ec2_params_free(&p);
    if (rc && strcmp(e.remote.code, "InvalidInstanceID.NotFound") == 0)
        return 0; /* not listed: gone */
    return rc ? gpc_error_wrap(err, &e, NULL) : 0;
}

/* GPC_ERR_NOT_FOUND for a node EC2 shows in `state` (or no longer lists),
 * remembered in k. */
static int gone(aws_log_conn *k, uint32_t rank, const char *state, gpc_error *err)
{
    const char *id = k->id;
    char st[32];
    snprintf(st, sizeof(st), "%s", state[0] ? state : "gone");
    memcpy(k->gone, st, sizeof(st));
    state = strcmp(st, "gone") ? st : "";
    return gpc_fail(err, GPC_ERR_NOT_FOUND, "aws: node %u (%s) is %s: its log went with it (its "
                    "exit status, read from its console output, is in gpuctl status)", rank, id,
                    state[0] ? state : "no longer listed by EC2");
}

static int is_gone(const inst_acc *a)
{
    return !a->found || strcmp(a->state, "shutting-down") == 0 ||
           strcmp(a->state, "terminated") == 0 || strcmp(a->state, "stopping") == 0 ||
           strcmp(a->state, "stopped") == 0;
}

/* 1 when ssh can check the node's host key without waiting: its console
 * shows keys, or the cluster's known_hosts has a line of it. */
static int keys_known(aws_ctx *c, const gpc_cluster_ref *cl, const gpc_node_ref *node)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/ssh/%s/known_hosts", c->state_dir, cl->cluster_uid);
    char *text = NULL;
    size_t len = 0;
    gpc_error e;
    gpc_error_clear(&e);
    int found = 0;
    size_t il = strlen(node->provider_id);
    if (gpc_read_file(path, 16u << 20, &text, &len, &e) == 0)
        for (const char *l = text; l && l < text + len && !found;) {
            found = (size_t)(text + len - l) > il && memcmp(l, node->provider_id, il) == 0 &&
                    l[il] == ' ';
            const char *nl = memchr(l, '\n', (size_t)(text + len - l));
            l = nl ? nl + 1 : NULL;
        }
    free(text);
    if (found)
        return 1;
    unsigned char *out = NULL;
    gpc_error_clear(&e);
    if (aws_console_output(c, node->region, node->provider_id, 0, &out, &len, &e) == 0) {
        gpc_buf keys;
        gpc_buf_init(&keys, 1u << 20);
        found = aws_console_host_keys(out, len, &keys) > 0;
        gpc_buf_free(&keys);
    }
    free(out);
    return found;
}

/* ---- running ssh --------------------------------------------------------- */

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Run argv (found on PATH) with stdin /dev/null; its stdout into out, its
 * stderr into errb (both bounded by their buffers' limits), its exit
 * status into *status (128 + signal when a signal ended it), killed after
 * timeout_s.  Errors: GPC_ERR_PROVIDER (cannot run it, timed out, too much
 * output), GPC_ERR_NOMEM.
 */
static int run_capture(char *const *argv, int timeout_s, gpc_buf *out, gpc_buf *errb,
                       int *status, gpc_error *err)
{
    int po[2], pe[2];
    if (pipe(po) != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: cannot create a pipe: %s", strerror(errno));
    if (pipe(pe) != 0) {
        int e = errno;
        close(po[0]);
        close(po[1]);
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: cannot create a pipe: %s", strerror(e));
    }
    fcntl(po[0], F_SETFD, FD_CLOEXEC);
    fcntl(pe[0], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t dflt;
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int src = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(po[1]);
    close(pe[1]);
    if (src != 0) {
        close(po[0]);
        close(pe[0]);
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: cannot run %s: %s", argv[0], strerror(src));
    }
    /* Read until the child has exited and both pipes are drained; a
     * master connection that ssh left in the background (ControlPersist)
     * holds no end of them. */
    int fds[2] = {po[0], pe[0]}, rc = 0, exited = 0, ws = 0;
    gpc_buf *bufs[2] = {out, errb};
    double deadline = mono_now() + timeout_s;
    while (!rc && (fds[0] >= 0 || fds[1] >= 0)) {
        struct pollfd pf[2];
        int np = 0, idx[2];
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0) {
                pf[np] = (struct pollfd){.fd = fds[i], .events = POLLIN};
                idx[np++] = i;
            }
        double left = deadline - mono_now();
        if (left <= 0) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: %s did not finish within %d s", argv[0],
                          timeout_s);
            break;
        }
        int pr = poll(pf, (nfds_t)np, exited ? 0 : (int)(left < 0.2 ? left * 1000 : 200) + 1);
        if (pr < 0 && errno != EINTR) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; pr > 0 && k < np && !rc; k++) {
            if (!pf[k].revents)
                continue;
            char chunk[65536];
            ssize_t got = read(fds[idx[k]], chunk, sizeof(chunk));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                close(fds[idx[k]]);
                fds[idx[k]] = -1;
            } else if (gpc_buf_add(bufs[idx[k]], chunk, (size_t)got, NULL)) {
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: %s printed more than expected",
                              argv[0]);
            }
        }
        if (exited && pr == 0)
            break; /* exited, and nothing more to read now */
        if (!exited && waitpid(pid, &ws, WNOHANG) == pid)
            exited = 1;
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (!exited) {
        if (rc)
            kill(pid, SIGKILL);
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
            ;
    }
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return rc;
}

/* The last non-empty line of b, for a message. */
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

/* ---- the seam's read_log --------------------------------------------------- */

/* The ssh command of the node into k->argv: 0 with k->argv NULL when the
 * node cannot be reached yet (said once). */
static int connect_node(aws_ctx *c, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                        uint32_t rank, int may_wait, aws_log_conn *k, gpc_error *err)
{
    inst_acc a;
    int rc = instance_state(c, node->region, node->provider_id, &a, err);
    if (rc)
        return rc;
    if (is_gone(&a))
        return gone(k, rank, a.state, err);
    if (!a.ip[0] || strcmp(a.state, "running") != 0) {
        gpc_debug(c->log, "aws: node %u (%s) is %s%s: no log to read yet", rank,
                  node->provider_id, a.state, a.ip[0] ? "" : " without a public address");
        return 0;
    }
    if (!may_wait && !keys_known(c, cl, node)) {
        if (!k->said_keys)
            gpc_info(c->log, "aws: node %u (%s): no SSH host keys in its console output yet: its "
                     "log is read once they show (gpuctl logs -f waits for them)", rank,
                     node->provider_id);
        k->said_keys = 1;
        return 0;
    }
    gpc_argv v = {0};
    char dest[128];
    rc = aws_ssh_transport(c, cl, node, 0, &v, dest, sizeof(dest), err);
    if (!rc)
        rc = gpc_argv_add(&v, "-o", err);
    if (!rc)
        rc = gpc_argv_add(&v, "BatchMode=yes", err);
    if (!rc)
        rc = gpc_argv_add(&v, "-o", err);
    if (!rc)
        rc = gpc_argv_addf(&v, err, "ConnectTimeout=%d", CONNECT_TIMEOUT_S);
    if (!rc)
        rc = gpc_argv_add(&v, "--", err);
    if (!rc)
        rc = gpc_argv_add(&v, dest, err);
    if (!rc)
        rc = gpc_argv_take(&v, &k->argv, err);
    gpc_argv_reset(&v);
    return rc;
}

int aws_read_log(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node, uint32_t rank,
                 long offset, int may_wait, gpc_buf *out, long *next, int *exit_status,
                 gpc_error *err)
{
    aws_ctx *c = ctx;
    *next = offset;
    *exit_status = -1;
    if (offset < 0)
        return gpc_fail(err, GPC_ERR_INTERNAL, "aws: negative log offset %ld", offset);
    if (!node->provider_id[0] || strpbrk(node->provider_id, "/. ") ||
        strlen(node->provider_id) >= sizeof(((aws_log_conn *)0)->id))
        return gpc_fail(err, GPC_ERR_PROVIDER, "aws: invalid node id '%s'", node->provider_id);
    aws_log_conn *k = conn_of(c, node->provider_id, err);
    if (!k)
        return GPC_ERR_NOMEM;
    if (k->gone[0])
        return gone(k, rank, k->gone, err);
    int rc = 0;
    if (!k->argv)
        rc = connect_node(c, cl, node, rank, may_wait, k, err);
    if (rc || !k->argv)
        return rc;

    /* the command: the status line, then the bytes */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "s=$(cat " NODE_HOME "/exit_status 2>/dev/null); "
             "printf '%%s\\n' \"${s:--}\"; tail -c +%ld " NODE_HOME "/node.log 2>/dev/null | "
             "head -c %d", offset + 1, LOG_CHUNK_MAX);
    gpc_argv v = {0};
    for (char **p = k->argv; !rc && *p; p++)
        rc = gpc_argv_add(&v, *p, err);
    if (!rc)
        rc = gpc_argv_add(&v, cmd, err);
    gpc_buf o, e;
    gpc_buf_init(&o, LOG_CHUNK_MAX + 4096);
    gpc_buf_init(&e, 1u << 16);
    int status = 0;
    if (!rc)
        rc = run_capture(v.v, READ_TIMEOUT_S, &o, &e, &status, err);
    gpc_argv_reset(&v);
    char line[512];
    last_line(&e, line, sizeof(line));
    if (!rc && status == 255) {
        /* ssh could not connect: gone, or not answering yet */
        inst_acc a;
        rc = instance_state(c, node->region, node->provider_id, &a, err);
        if (!rc && is_gone(&a))
            rc = gone(k, rank, a.state, err);
        if (!rc) {
            if (!k->said_ssh)
                gpc_info(c->log, "aws: node %u (%s) cannot be reached over ssh yet (%s); trying "
                         "again on the next read", rank, node->provider_id, line);
            else
                gpc_debug(c->log, "aws: node %u (%s): ssh: %s", rank, node->provider_id, line);
            k->said_ssh = 1;
        }
    } else if (!rc && status != 0) {
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: reading the log of node %u (%s) failed (exit "
                      "%d): %s", rank, node->provider_id, status, line);
    } else if (!rc) {
        const char *text = o.data ? o.data : "";
        const char *nl = memchr(text, '\n', o.len);
        if (!nl || nl - text > 16) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: reading the log of node %u (%s) gave no "
                          "status line", rank, node->provider_id);
        } else {
            char st[20], *end;
            snprintf(st, sizeof(st), "%.*s", (int)(nl - text), text);
            long x = strtol(st, &end, 10);
            if (end != st && !*end && x >= 0 && x <= 255)
                *exit_status = (int)x;
            size_t len = o.len - (size_t)(nl + 1 - text);
            if (len > LOG_CHUNK_MAX)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: the log read from node %u (%s) is "
                              "longer than asked", rank, node->provider_id);
            if (!rc)
                rc = gpc_buf_add(out, nl + 1, len, err);
            if (!rc)
                *next = offset + (long)len;
        }
    }
    gpc_buf_free(&o);
    gpc_buf_free(&e);
    return rc;
}

/* ---- the seam's poll_interruptions ------------------------------------------ */

/*
 * What each node's notice watcher wrote (templates/notice.sh: "ACTION EPOCH"
 * in GPUCTL_HOME/preempting, from IMDS spot/instance-action), read over the
 * same ssh connection as its log.  A node not reachable yet, or gone, has no
 * notice to give here (a gone one is PREEMPTED by describe_node); a read that
 * fails is an error, so that the engine asks again rather than take it for
 * "no notice".
 */
int aws_poll_interruptions(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *nodes,
                           size_t n, gpc_interruption *out, gpc_error *err)
{
    aws_ctx *c = ctx;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const gpc_node_ref *node = &nodes[i];
        if (!node->provider_id[0] || strpbrk(node->provider_id, "/. ") ||
            strlen(node->provider_id) >= sizeof(((aws_log_conn *)0)->id))
            return gpc_fail(err, GPC_ERR_PROVIDER, "aws: invalid node id '%s'",
                            node->provider_id);
        aws_log_conn *k = conn_of(c, node->provider_id, err);
        if (!k)
            return GPC_ERR_NOMEM;
        if (k->gone[0])
            continue;
        gpc_error e;
        gpc_error_clear(&e);
        if (!k->argv && connect_node(c, cl, node, (uint32_t)i, 0, k, &e) != 0) {
            if (e.code != GPC_ERR_NOT_FOUND)
                rc = gpc_fail(err, e.code, "%s", e.msg);
            continue;
        }
        if (!k->argv)
            continue;
        gpc_argv v = {0};
        for (char **p = k->argv; !rc && *p; p++)
            rc = gpc_argv_add(&v, *p, err);
        if (!rc)
            rc = gpc_argv_add(&v, "cat " NODE_HOME "/preempting 2>/dev/null; true", err);
        gpc_buf o, eb;
        gpc_buf_init(&o, 4096);
        gpc_buf_init(&eb, 1u << 16);
        int status = 0;
        if (!rc)
            rc = run_capture(v.v, READ_TIMEOUT_S, &o, &eb, &status, err);
        gpc_argv_reset(&v);
        char line[256];
        last_line(&eb, line, sizeof(line));
        if (!rc && status != 0) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: reading the interruption notice of %s "
                          "failed (exit %d): %s", node->provider_id, status, line);
        } else if (!rc && o.len) {
            char action[32] = "";
            long long at = 0;
            char text[128];
            snprintf(text, sizeof(text), "%.*s", (int)(o.len < 127 ? o.len : 127),
                     o.data ? o.data : "");
            if (sscanf(text, "%31[a-z-] %lld", action, &at) == 2 && at >= 0) {
                snprintf(out[i].action, sizeof(out[i].action), "%s", action);
                out[i].deadline = (int64_t)at;
                snprintf(out[i].detail, sizeof(out[i].detail), "EC2 spot/instance-action, "
                         "seen by the node");
            } else {
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "aws: node %s wrote an unreadable "
                              "interruption notice", node->provider_id);
            }
        }
        gpc_buf_free(&o);
        gpc_buf_free(&eb);
    }
    return rc;
}
