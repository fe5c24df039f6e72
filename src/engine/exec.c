/*
 * exec.c - a new job on the live nodes of a cluster (`gpuctl exec`, and the
 * re-run of `apply` when only the job changed): the job file (render.h,
 * gpc_render_job) goes to every node's job runner (GPUCTL_HOME/job.sh,
 * installed by the bootstrap) over the node's shell (the provider's
 * shell_argv, shell.h), on its standard input, never on a command line.
 * The runners start at once on every node; each waits there until the
 * node's running job, if any, has ended (queued), then runs the job with
 * the node's rendezvous wiring.  Their output comes back as the nodes'
 * logs do ("[node N] line"), and the job's exit status is the first
 * non-zero one by rank.  Started in the background (a re-run by `apply`
 * without --wait), the job must have been taken by every node's runner:
 * a node that did not take it fails the start.
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuctl/buf.h"
#include "gpuctl/render.h"
#include "gpuctl/shell.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "lifecycle.h"

/* What the node's shell runs: the runner of the node's GPUCTL_HOME (the
 * bootstrap's default where the shell does not set it), in a clean
 * environment (the runner takes the node's from node.env), the job file on
 * its standard input; through `sudo -n` where the shell's user may not
 * write GPUCTL_HOME (a cloud node's login user: the bootstrap ran as root,
 * node.env is 0600).  A node without the runner whose bootstrap has
 * started (it writes `phase` first) is still booting and gets
 * RUNNER_WAIT_S; one without `phase` never ran the bootstrap (a machine
 * gpuctl did not boot; a cloud node is reached only once its bootstrap has
 * printed the host keys, after `phase`) and would wait for nothing: it
 * fails at once, 127 as for a command not found. */
#define RUNNER_FIND                                                                       \
    "h=${GPUCTL_HOME:-/var/lib/gpuctl}; s=; "                                               \
    "[ \"$(id -u)\" = 0 ] || [ -w \"$h\" ] || s='sudo -n'; "                                \
    "if [ ! -e \"$h/job.sh\" ] && [ ! -e \"$h/phase\" ]; then "                           \
    "echo \"gpuctl: no gpuctl bootstrap on this node: $h/phase is missing\" >&2; "        \
    "exit 127; fi; "                                                                      \
    "i=0; while [ ! -e \"$h/job.sh\" ] && [ $i -lt " RUNNER_WAIT_S " ]; do "                 \
    "sleep 1; i=$((i+1)); done; "
/* A node still booting installs its runner before its first job: this
 * long at most, s. */
#define RUNNER_WAIT_S "300"
static const char runner_cmd[] =
    RUNNER_FIND
    "exec $s env -i gpuctl_clean=1 GPUCTL_HOME=\"$h\" /bin/bash \"$h/job.sh\" -";

/* The same, started in the background (gpc_job_def.detach): the job file
 * is kept as jobs/.sent.PID, which the runner takes (and removes), in a
 * session of its own that outlives the shell; its output goes to node.log
 * only.  The command ends once the runner has taken job %s (its
 * jobs/ID.taken: queued, or started), or fails after RUNNER_TAKE_S,
 * removing the job file: a runner that comes to it later has nothing to
 * start, as gpuctl then says the job did not start there. */
#define RUNNER_TAKE_S "30"
static const char runner_bg_fmt[] =
    RUNNER_FIND "f=\"$h/jobs/.sent.$$\"; t=\"$h/jobs/%s.taken\"; "
    "$s mkdir -p \"$h/jobs\" && $s sh -c 'umask 077 && cat > \"$1\"' sh \"$f\" && "
    "{ $s setsid env -i gpuctl_clean=1 GPUCTL_HOME=\"$h\" /bin/bash \"$h/job.sh\" \"$f\" "
    "</dev/null >/dev/null 2>&1 & } && i=0; "
    "while [ ! -e \"$t\" ] && [ $i -lt " RUNNER_TAKE_S "0 ]; do sleep 0.1; i=$((i+1)); done; "
    "if [ -e \"$t\" ]; then echo \"gpuctl: job %s $(cat \"$t\")\"; else $s rm -f \"$f\"; "
    "echo \"gpuctl: the node's job runner did not take job %s within " RUNNER_TAKE_S "s\" >&2; "
    "exit 1; fi";

typedef struct exec_node {
    uint32_t rank;
    pid_t pid;
    int out;          /* read end of its stdout+stderr, -1 once at EOF */
    gpc_buf partial;  /* an unfinished last line */
    int status;       /* exit status, 128+N for signal N */
    char said[512];   /* its last non-empty line, for an error message */
} exec_node;

/* Keep n's unfinished line as the last thing it said, when not empty. */
static void keep_said(exec_node *n)
{
    if (n->partial.len)
        snprintf(n->said, sizeof(n->said), "%s", gpc_buf_str(&n->partial));
}

static int spawn(char **argv, const char *in, size_t in_len, exec_node *n, gpc_error *err)
{
    int pin[2], pout[2];
    if (pipe2(pin, O_CLOEXEC) != 0)
        return gpc_fail(err, GPC_ERR_IO, "pipe: %s", strerror(errno));
    if (pipe2(pout, O_CLOEXEC) != 0) {
        close(pin[0]);
        close(pin[1]);
        return gpc_fail(err, GPC_ERR_IO, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pin[0]);
        close(pin[1]);
        close(pout[0]);
        close(pout[1]);
        return gpc_fail(err, GPC_ERR_IO, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(pout[1], 2) < 0)
            _exit(127);
        execvp(argv[0], argv);
        dprintf(2, "gpuctl: could not run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    n->pid = pid;
    n->out = pout[0];
    /* the runner reads the whole file before it prints anything */
    size_t off = 0;
    while (off < in_len) {
        ssize_t w = write(pin[1], in + off, in_len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* the node's command ended early: its status says why */
        off += (size_t)w;
    }
    close(pin[1]);
    return 0;
}

/* Print the whole lines of what node n sent (prefix: 1 "[node N] ", 0
 * none, -1 print nothing), keep the rest. */
static void lines(gpc_session *s, exec_node *n, const char *data, size_t len, int prefix)
{
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            keep_said(n);
            if (prefix > 0)
                gpc_outputf(s->log, "[node %u] %s\n", n->rank, gpc_buf_str(&n->partial));
            else if (prefix == 0)
                gpc_outputf(s->log, "%s\n", gpc_buf_str(&n->partial));
            gpc_buf_reset(&n->partial);
        } else if (gpc_buf_add(&n->partial, data + i, 1, NULL) != 0) {
            if (prefix >= 0)
                gpc_log_flush(n->rank, prefix, &n->partial, s->log);
            gpc_buf_reset(&n->partial);
        }
    }
}

/* Read every node's output to its end, then reap them. */
static void pump(gpc_session *s, exec_node *nodes, size_t n, int prefix)
{
    struct pollfd *fds = calloc(n, sizeof(*fds));
    size_t open_n = n;
    char chunk[8192];
    while (fds && open_n) {
        for (size_t i = 0; i < n; i++) {
            fds[i].fd = nodes[i].out;
            fds[i].events = POLLIN;
            fds[i].revents = 0;
        }
        int r = poll(fds, (nfds_t)n, 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (size_t i = 0; i < n; i++) {
            if (nodes[i].out < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(nodes[i].out, chunk, sizeof(chunk));
            if (got < 0 && errno == EINTR)
                continue;
            if (got > 0) {
                lines(s, &nodes[i], chunk, (size_t)got, prefix);
                continue;
            }
            close(nodes[i].out);
            nodes[i].out = -1;
            open_n--;
        }
    }
    free(fds);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].out >= 0)
            close(nodes[i].out);
        nodes[i].out = -1;
        keep_said(&nodes[i]);
        if (prefix >= 0)
            gpc_log_flush(nodes[i].rank, prefix, &nodes[i].partial, s->log);
        int st = 0;
        pid_t w;
        do
            w = waitpid(nodes[i].pid, &st, 0);
        while (w < 0 && errno == EINTR);
        if (w < 0)
            nodes[i].status = 255;
        else if (WIFEXITED(st))
            nodes[i].status = WEXITSTATUS(st);
        else if (WIFSIGNALED(st))
            nodes[i].status = 128 + WTERMSIG(st);
    }
}

/*
 * A detached start (gpc_job_def.detach) where the command of some of the
 * `n` nodes failed: the node's runner did not take the job, or its shell
 * or the runner could not run, so the job did not start there.  Not a job
 * that failed (that one would have started): GPC_ERR_PROVIDER naming each
 * such node by rank, with its exit status and the last line it said.
 */
static int not_started(const char *job_id, const exec_node *nodes, size_t n, gpc_error *err)
{
    gpc_buf b;
    gpc_buf_init(&b, 1u << 16); /* the message is cut to GPC_ERROR_MSG_MAX */
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].status)
            continue;
        bad++;
        if (b.len < GPC_ERROR_MSG_MAX)
            gpc_buf_addf(&b, NULL, "%snode %u: exit status %d%s%s", b.len ? "; " : "",
                         nodes[i].rank, nodes[i].status, nodes[i].said[0] ? ": " : "",
                         nodes[i].said);
    }
    int rc = gpc_fail(err, GPC_ERR_PROVIDER, "job %s did not start on %zu of %zu node%s: %s",
                      job_id, bad, n, n == 1 ? "" : "s", gpc_buf_str(&b));
    gpc_buf_free(&b);
    return rc;
}

/*
 * Nodes that do not see this machine's files (deliver.c) get the spec's
 * workdir and secrets again: `spec`, or the one the cluster was applied
 * with, read again from its file (the recorded canonical JSON is not a
 * spec to load), which must not have changed since (its hash).  Each
 * node's side waits for the job running there to end first.
 */
static int redeliver(gpc_session *s, gpc_cluster_rec *c, const gpc_spec *spec, gpc_error *err)
{
    gpc_spec *own = NULL;
    gpc_open_provider op;
    int rc = gpc_session_provider(s, c->provider, &op, err);
    if (!rc && !spec) {
        /* nothing to send (gpc_deliver_nodes' rule): no need for the file */
        const gpc_provider *p = op.prov;
        cJSON *j = cJSON_Parse(c->spec_json);
        int sends = p->transport_argv &&
                    ((cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "workdir")) &&
                      !(p->caps & GPC_CAP_SHARED_FILES)) ||
                     (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "secrets")) > 0 &&
                      !(p->caps & GPC_CAP_SECRETS)));
        cJSON_Delete(j);
        if (!sends)
            return 0;
        if (!c->spec_path[0])
            return gpc_fail(err, GPC_ERR_USAGE, "cluster %s's spec sends a workdir or secrets "
                            "and its file is not known: give it (gpuctl exec %s -f FILE)",
                            c->name, c->name);
        char hash[65];
        rc = gpc_spec_load_file(c->spec_path, &own, err);
        if (!rc)
            rc = gpc_spec_hash(own, hash, err);
        if (!rc && strcmp(hash, c->spec_hash) != 0)
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s changed since cluster %s was applied with it "
                          "(applied %.12s, now %.12s): give the spec to send the workdir and "
                          "secrets of (gpuctl exec %s -f %s), or apply it", c->spec_path,
                          c->name, c->spec_hash, hash, c->name, c->spec_path);
        spec = own;
    }
    int delivers = 0;
    if (!rc)
        rc = gpc_deliver_nodes(s, &op, c, spec, &delivers, err);
    gpc_spec_free(own);
    return rc;
}

int gpc_cluster_exec(gpc_session *s, const char *name, const gpc_spec *spec,
                     const gpc_job_def *job, int *status, gpc_error *err)
{
    *status = 0;
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    int rc = gpc_cluster_get(s->st, name, &c, err);
    if (rc) {
        gpc_cluster_rec_free(&c);
        return rc;
    }
    gpc_job_def j = *job;
    /* the world size is the cluster's now (a node keeps its boot's) */
    j.num_nodes = c.nodes;
    char rnd[33], id[24];
    if (!j.id) {
        rc = gpc_random_hex(rnd, err);
        snprintf(id, sizeof(id), "x%.12s", rnd);
        j.id = id;
    }
    gpc_buf file;
    gpc_buf_init(&file, GPC_BUF_SCRIPT_MAX);
    if (!rc)
        rc = gpc_render_job(&j, &file, err);

    /* the workdir and secrets again, before the job is sent */
    if (!rc)
        rc = redeliver(s, &c, spec, err);

    size_t n = c.nodes;
    if (!rc && n > 1024)
        rc = gpc_fail(err, GPC_ERR_USAGE, "cluster %s has %zu nodes; exec reaches 1024 at most",
                      name, n);
    exec_node *nodes = rc ? NULL : calloc(n ? n : 1, sizeof(*nodes));
    if (!rc && !nodes)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    char **argvs[1024];
    size_t n_argv = 0;
    /* the id is [A-Za-z0-9._-] (gpc_render_job checked it) */
    char bg[sizeof(runner_bg_fmt) + 3 * 64];
    snprintf(bg, sizeof(bg), runner_bg_fmt, j.id, j.id, j.id);
    const char *cmd[] = {j.detach ? bg : runner_cmd};
    /* first every node's command (each asks the provider), then start all */
    for (uint32_t r = 0; !rc && r < n; r++) {
        rc = gpc_lc_shell(s, name, r, cmd, 1, 0, 1, &argvs[r], err);
        if (!rc)
            n_argv++;
    }
    size_t started = 0;
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; !rc && i < n_argv; i++) {
        nodes[i].rank = (uint32_t)i;
        nodes[i].out = -1;
        gpc_buf_init(&nodes[i].partial, 1u << 20);
        rc = spawn(argvs[i], file.data, file.len, &nodes[i], err);
        if (!rc)
            started++;
    }
    if (started) {
        gpc_info(s->log, "job %s on %zu node%s of cluster %s", j.id, started,
                 started == 1 ? "" : "s", name);
        pump(s, nodes, started, j.quiet ? -1 : n > 1);
    }
    signal(SIGPIPE, old_pipe);
    size_t first_bad = started;
    for (size_t i = 0; i < started; i++)
        if (nodes[i].status && !*status) {
            *status = nodes[i].status;
            first_bad = i;
        }
    /* detached: a node that did not take the job fails the start, so that
     * the caller does not take the job as started (a re-run keeps the
     * cluster's spec, gpc_lc_rerun) */
    if (!rc && j.detach && first_bad < started)
        rc = not_started(j.id, nodes, started, err);
    /* attached: the end in one line (a detached start says it per node) */
    if (!j.detach && first_bad < started)
        gpc_info(s->log, "job %s failed: exit status %d on node %u (the first by rank)", j.id,
                 *status, nodes[first_bad].rank);
    else if (!j.detach && started)
        gpc_info(s->log, "job %s succeeded on %zu node%s", j.id, started,
                 started == 1 ? "" : "s");
    if (started)
        gpc_lc_event(s, c.id, -1, "exec", "job %s on %zu node%s: exit status %d", j.id, started,
                     started == 1 ? "" : "s", *status);
    for (size_t i = 0; nodes && i < n_argv; i++)
        gpc_buf_free(&nodes[i].partial);
    for (size_t i = 0; i < n_argv; i++)
        gpc_argv_free(argvs[i]);
    free(nodes);
    gpc_buf_free(&file);
    gpc_cluster_rec_free(&c);
    return rc;
}
