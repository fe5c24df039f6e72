/*
 * deliver.c - the spec's workdir and secrets, sent to the nodes that do not
 * see this machine's files over their provider's transport (provider.h,
 * transport_argv: aws, ssh), before the bootstrap runs `setup`
 * (templates/bootstrap.sh, the DELIVER section; docs/spec.md, "workdir and
 * secrets on clouds").
 *
 * For each running node, in parallel, three steps (each one command over
 * the transport, all nodes at once, then the next step):
 *   1. prepare: the node runs rsync (when a workdir goes), NODE_HOME/workdir
 *      exists, a job running there has ended (the node's job runner holds
 *      NODE_HOME/job.lock while a job runs; the rsync below holds it too,
 *      so that a re-run's or `gpuctl exec`'s files never change under the
 *      job before it: they are queued after it), and the secrets arrive through the command's standard input
 *      (a memfd: never a file of this machine, never an argument of any
 *      process) into RUN_DIR/secrets.env, mode 0600, in a directory of
 *      mode 0700 on /run (tmpfs); with no secrets the file is removed;
 *   2. rsync -a --delete of the workdir into NODE_HOME/workdir/ (only that
 *      directory), with the per-directory merge filters `:- .gitignore` and
 *      `:- .gpuctlignore` (gitignore-style patterns, each file's rules for
 *      its directory and below; ignored files are neither sent nor deleted
 *      on the node), counting what moved (--stats);
 *   3. the marker NODE_HOME/delivered (Unix seconds), which the bootstrap
 *      waits for.
 * A remote user that is not root does the node's side through `sudo -n`
 * (the Deep Learning AMI's ubuntu may): the files are root's, as the
 * bootstrap's are.  Each step is idempotent: a re-run, or a node made
 * anew, gets the whole delivery again and rsync moves only what changed.
 */
#define _GNU_SOURCE 1 /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "gpuctl/render.h"
#include "gpuctl/shell.h"
#include "gpuctl/store.h"
#include "gpuctl/util.h"
#include "lifecycle.h"

extern char **environ;

/* The node's side (the bootstrap's GPUCTL_HOME and GPUCTL_RUN_DIR on a
 * machine of its own). */
#define NODE_HOME "/var/lib/gpuctl"
#define RUN_DIR "/run/gpuctl"
/* Root, or `sudo -n` for another user, in front of the node's commands. */
#define AS_ROOT "s=; [ \"$(id -u)\" = 0 ] || s='sudo -n'; "
/* Most bytes of a command's output kept for its error message and stats. */
#define OUT_MAX (256u * 1024u)
/* rsync gives up on a connection silent this long, s. */
#define RSYNC_IO_TIMEOUT_S 300
/* How long the node's rsync waits for job.lock, which the prepare step
 * found free (a job started between the two holds it), s: less than the
 * above. */
#define LOCK_WAIT_S "240"
/* The default size warning threshold, MiB ($GPUCTL_WORKDIR_WARN_MB). */
#define WARN_MB_DEFAULT 100

/* One node's delivery. */
typedef struct node_job {
    const gpc_node_rec *nd;
    char **rsh;         /* the provider's transport */
    char dest[256];     /* USER@HOST */
    pid_t pid;          /* the running step, 0 = none */
    int out_fd;         /* its standard output and error (a memfd) */
    int failed;         /* set once a step failed: err holds why */
    gpc_error err;
    uint64_t files, bytes, deleted; /* what rsync moved */
} node_job;

/* ---- running a command -------------------------------------------------- */

/* An anonymous file in memory (never on a disk), empty, for a child's
 * standard input or output. */
static int mem_file(const char *name, int *fd, gpc_error *err)
{
    *fd = memfd_create(name, MFD_CLOEXEC);
    if (*fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "memfd_create: %s", strerror(errno));
    return 0;
}

/* Start argv with standard input in_fd (-1: /dev/null) and standard output
 * and error to out_fd. */
static int spawn(char *const *argv, int in_fd, int out_fd, pid_t *pid, gpc_error *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t dflt;
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
    int e = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e)
        return gpc_fail(err, GPC_ERR_IO, "cannot run %s: %s", argv[0], strerror(e));
    return 0;
}

/* Wait for pid; *status is its exit status (128 + N after signal N). */
static void reap(pid_t pid, int *status)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* The whole output of a finished command (at most OUT_MAX bytes), in b. */
static void read_out(int fd, gpc_buf *b)
{
    char chunk[4096];
    off_t off = 0;
    ssize_t r;
    while (b->len < OUT_MAX && (r = pread(fd, chunk, sizeof(chunk), off)) > 0) {
        gpc_buf_add(b, chunk, (size_t)r, NULL);
        off += r;
    }
}

/* The last non-empty line of text, for an error message. */
static void last_line(const char *text, char *out, size_t size)
{
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    snprintf(out, size, "%.*s", (int)(end - start), start);
}

/* The words of argv on the debug log, quoted for a shell. */
static void debug_argv(gpc_session *s, const char *what, uint32_t rank, char *const *argv)
{
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            gpc_buf_adds(&b, " ", NULL);
        gpc_shell_quote(&b, argv[i], NULL);
    }
    gpc_debug(s->log, "deliver: node %u: %s: running: %s", (unsigned)rank, what,
              gpc_buf_str(&b));
    gpc_buf_free(&b);
}

/* ---- the steps ----------------------------------------------------------- */

/* `rsh... dest cmd` in *argv (caller frees with gpc_argv_free). */
static int remote_argv(const node_job *j, const char *cmd, char ***argv, gpc_error *err)
{
    gpc_argv a = {0};
    int rc = 0;
    for (size_t i = 0; !rc && j->rsh[i]; i++)
        rc = gpc_argv_add(&a, j->rsh[i], err);
    if (!rc)
        rc = gpc_argv_add(&a, j->dest, err);
    if (!rc)
        rc = gpc_argv_add(&a, cmd, err);
    if (!rc)
        rc = gpc_argv_take(&a, argv, err);
    gpc_argv_reset(&a);
    return rc;
}

/*
 * The transport as one `rsync -e` value: rsync splits it at spaces and
 * keeps a word whole inside single or double quotes (rsync(1), --rsh), so
 * each word goes in single quotes, or double ones when it holds a single
 * quote.
 */
static int rsh_value(char **rsh, gpc_buf *b, gpc_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && rsh[i]; i++) {
        const char *w = rsh[i];
        char q = strchr(w, '\'') ? '"' : '\'';
        if (q == '"' && strchr(w, '"'))
            return gpc_fail(err, GPC_ERR_PROVIDER, "deliver: the transport's word '%s' holds "
                            "both quote characters, which rsync -e cannot carry", w);
        rc = gpc_buf_addf(b, err, "%s%c%s%c", i ? " " : "", q, w, q);
    }
    return rc;
}

/*
 * A directory (absolute, may be NULL) when it lies inside `workdir`
 * (gpuctl's state directory: a CI job's GPUCTL_STATE_DIR=./.gpuctl; a
 * local job's checkpoint_dir): "--exclude=/REL/" into out, so that it is
 * neither sent nor counted in the workdir's digest (it changes with every
 * command, with every epoch); else "".
 */
static void state_exclude(const char *state_dir, const char *workdir, char *out, size_t n)
{
    out[0] = '\0';
    char *w = realpath(workdir, NULL), *sd = state_dir ? realpath(state_dir, NULL) : NULL;
    size_t wl = w ? strlen(w) : 0;
    if (w && sd && strncmp(sd, w, wl) == 0 && sd[wl] == '/')
        snprintf(out, n, "--exclude=/%s/", sd + wl + 1);
    free(w);
    free(sd);
}

/* The rsync command that sends workdir to node j (state_dir: gpuctl's). */
static int rsync_argv(const node_job *j, const char *workdir, const char *state_dir,
                      char ***argv, gpc_error *err)
{
    gpc_argv a = {0};
    gpc_buf rsh;
    gpc_buf_init(&rsh, 1u << 20);
    int rc = rsh_value(j->rsh, &rsh, err);
    const char *fixed[] = {
        "rsync", "-a", "--no-owner", "--no-group", "--delete", "--stats",
        "--no-human-readable", "--filter=:- .gitignore", "--filter=:- .gpuctlignore",
        "--rsync-path=" AS_ROOT "$s flock -w " LOCK_WAIT_S " " NODE_HOME "/job.lock rsync",
    };
    for (size_t i = 0; !rc && i < sizeof(fixed) / sizeof(fixed[0]); i++)
        rc = gpc_argv_add(&a, fixed[i], err);
    if (!rc)
        rc = gpc_argv_addf(&a, err, "--timeout=%d", RSYNC_IO_TIMEOUT_S);
    char excl[PATH_MAX + 16];
    state_exclude(state_dir, workdir, excl, sizeof(excl));
    if (!rc && excl[0])
        rc = gpc_argv_add(&a, excl, err);
    if (!rc)
        rc = gpc_argv_add(&a, "-e", err);
    if (!rc)
        rc = gpc_argv_add(&a, gpc_buf_str(&rsh), err);
    if (!rc)
        rc = gpc_argv_addf(&a, err, "%s/", workdir);
    if (!rc)
        rc = gpc_argv_addf(&a, err, "%s:" NODE_HOME "/workdir/", j->dest);
    if (!rc)
        rc = gpc_argv_take(&a, argv, err);
    gpc_argv_reset(&a);
    gpc_buf_free(&rsh);
    return rc;
}

/* N from the line "LABEL: N" of rsync's --stats, else 0 (*found = 0). */
static uint64_t stat_value(const char *text, const char *label, int *found)
{
    const char *p = strstr(text, label);
    *found = p != NULL;
    return p ? strtoull(p + strlen(label), NULL, 10) : 0;
}

/* The secrets as `export NAME=VALUE` lines, values quoted for the shell,
 * in a memfd at offset 0 (*fd). */
static int secrets_file(const gpc_env_var *sec, size_t n, int *fd, gpc_error *err)
{
    gpc_buf b;
    gpc_buf_init(&b, 16u << 20);
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        rc = gpc_buf_addf(&b, err, "export %s=", sec[i].name);
        if (!rc)
            rc = gpc_shell_quote(&b, sec[i].value, err);
        if (!rc)
            rc = gpc_buf_adds(&b, "\n", err);
    }
    if (!rc)
        rc = mem_file("gpuctl-secrets", fd, err);
    for (size_t off = 0; !rc && off < b.len;) {
        ssize_t w = write(*fd, b.data + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            rc = gpc_fail(err, GPC_ERR_IO, "memfd: %s", strerror(errno));
        else
            off += (size_t)w;
    }
    if (!rc && lseek(*fd, 0, SEEK_SET) < 0)
        rc = gpc_fail(err, GPC_ERR_IO, "memfd: %s", strerror(errno));
    if (b.data)
        OPENSSL_cleanse(b.data, b.len);
    gpc_buf_free(&b);
    return rc;
}

enum { STEP_PREPARE, STEP_RSYNC, STEP_MARK };
static const char *const step_names[] = {"prepare", "rsync of the workdir", "marker"};

/* Start step `step` on node j (not after a failure). */
static void step_start(gpc_session *s, node_job *j, int step, const char *workdir,
                       const gpc_env_var *sec, size_t n_sec)
{
    char **argv = NULL;
    int in_fd = -1, rc = 0;
    gpc_error *err = &j->err;
    if (step == STEP_PREPARE) {
        char cmd[1024];
        /* a job running on the node (its job runner holds job.lock) ends
         * before its files change: a re-run or `gpuctl exec` is queued */
        snprintf(cmd, sizeof(cmd),
                 AS_ROOT "%s$s mkdir -p " NODE_HOME "/workdir && "
                 "$s flock " NODE_HOME "/job.lock true && "
                 "$s sh -c 'umask 077 && mkdir -p " RUN_DIR " && %s'",
                 workdir ? "rsync --version >/dev/null 2>&1 || { echo 'rsync is not "
                           "installed on the node (rsync --version failed there)' >&2; exit 3; }; "
                         : "",
                 n_sec ? "cat > " RUN_DIR "/.secrets.env.tmp && "
                         "mv -f " RUN_DIR "/.secrets.env.tmp " RUN_DIR "/secrets.env"
                       : "rm -f " RUN_DIR "/secrets.env");
        rc = remote_argv(j, cmd, &argv, err);
        if (!rc && n_sec)
            rc = secrets_file(sec, n_sec, &in_fd, err);
    } else if (step == STEP_RSYNC) {
        rc = rsync_argv(j, workdir, s->state_dir, &argv, err);
    } else {
        rc = remote_argv(j, AS_ROOT "$s sh -c 'date +%s > " NODE_HOME "/.delivered.tmp && "
                            "mv -f " NODE_HOME "/.delivered.tmp " NODE_HOME "/delivered'",
                         &argv, err);
    }
    if (!rc)
        rc = mem_file("gpuctl-deliver-out", &j->out_fd, err);
    if (!rc) {
        debug_argv(s, step_names[step], j->nd->rank, argv);
        rc = spawn(argv, in_fd, j->out_fd, &j->pid, err);
        if (rc) {
            close(j->out_fd);
            j->out_fd = -1;
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    gpc_argv_free(argv);
    j->failed = rc != 0;
}

/* Wait for the step of node j and judge it. */
static void step_finish(gpc_session *s, node_job *j, int step)
{
    if (!j->pid)
        return;
    int status;
    reap(j->pid, &status);
    j->pid = 0;
    gpc_buf out;
    gpc_buf_init(&out, OUT_MAX + 4096);
    read_out(j->out_fd, &out);
    close(j->out_fd);
    j->out_fd = -1;
    const char *text = gpc_buf_str(&out);
    if (status) {
        char line[512];
        last_line(text, line, sizeof(line));
        gpc_debug(s->log, "deliver: node %u: %s: exit status %d: %s", (unsigned)j->nd->rank,
                  step_names[step], status, text);
        gpc_fail(&j->err, GPC_ERR_PROVIDER, "%s (%s): %s failed (exit status %d)%s%s",
                 j->nd->name, j->nd->provider_id, step_names[step], status,
                 line[0] ? ": " : "", line);
        j->failed = 1;
    } else if (step == STEP_RSYNC) {
        int found;
        j->files = stat_value(text, "Number of regular files transferred: ", &found);
        if (!found)
            j->files = stat_value(text, "Number of files transferred: ", &found);
        j->bytes = stat_value(text, "Total transferred file size: ", &found);
        j->deleted = stat_value(text, "Number of deleted files: ", &found);
    }
    gpc_buf_free(&out);
}

/* ---- the size warning ---------------------------------------------------- */

typedef struct entry {
    char name[256];
    uint64_t bytes;
} entry;

static int by_size(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->name, y->name);
}

/*
 * What the workdir sends: `rsync --list-only` with the delivery's filters
 * (and the n_out directories leave_out[] left out: state_exclude; with
 * no_git the .git directories too) into *out, "-rw-r--r--   SIZE YYYY/MM/DD HH:MM:SS NAME" for a regular
 * file.  Errors: GPC_ERR_IO (rsync could not run or failed), the buffer's.
 */
static int list_workdir(const char *workdir, const char *const *leave_out, size_t n_out,
                        int no_git, gpc_buf *out, gpc_error *e)
{
    gpc_argv a = {0};
    const char *fixed[] = {"rsync", "-a", "--list-only", "--no-human-readable",
                           "--filter=:- .gitignore", "--filter=:- .gpuctlignore"};
    int rc = 0, fd = -1;
    for (size_t i = 0; !rc && i < sizeof(fixed) / sizeof(fixed[0]); i++)
        rc = gpc_argv_add(&a, fixed[i], e);
    for (size_t i = 0; !rc && i < n_out; i++) {
        char excl[PATH_MAX + 16];
        state_exclude(leave_out[i], workdir, excl, sizeof(excl));
        if (excl[0])
            rc = gpc_argv_add(&a, excl, e);
    }
    if (!rc && no_git)
        rc = gpc_argv_add(&a, "--exclude=.git/", e);
    if (!rc)
        rc = gpc_argv_addf(&a, e, "%s/", workdir);
    pid_t pid = 0;
    if (!rc)
        rc = mem_file("gpuctl-list", &fd, e);
    if (!rc)
        rc = spawn(a.v, -1, fd, &pid, e);
    gpc_argv_reset(&a);
    int status = 0;
    if (!rc)
        reap(pid, &status);
    if (!rc && status)
        rc = gpc_fail(e, GPC_ERR_IO, "rsync --list-only %s/ failed", workdir);
    /* read it all: the listing may be long */
    char chunk[65536];
    off_t off = 0;
    ssize_t r;
    while (!rc && (r = pread(fd, chunk, sizeof(chunk), off)) > 0) {
        rc = gpc_buf_add(out, chunk, (size_t)r, e);
        off += r;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The name of an entry's line of list_workdir (a symbolic link's "NAME ->
 * TARGET"), its size and its permissions ("-rwxr-xr-x", perms[16], may be
 * NULL), else NULL. */
static const char *listed_entry(const char *l, unsigned long long *size, char *perms)
{
    char p[16], day[16], tod[16];
    int name_at = 0;
    if (sscanf(l, "%15s %llu %15s %15s %n", p, size, day, tod, &name_at) == 4 && name_at > 0) {
        if (perms)
            memcpy(perms, p, sizeof(p));
        return l + name_at;
    }
    return NULL;
}

/* The name of a regular file's line of list_workdir, else NULL. */
static const char *listed_file(const char *l, unsigned long long *size)
{
    return l[0] == '-' ? listed_entry(l, size, NULL) : NULL;
}

int gpc_lc_workdir_digest(const char *workdir, const char *const *leave_out, size_t n_out,
                          char hex[65], gpc_error *err)
{
    hex[0] = '\0';
    gpc_buf out, lines;
    gpc_buf_init(&out, 64u << 20);
    gpc_buf_init(&lines, 256u << 20);
    int rc = list_workdir(workdir, leave_out, n_out, 1, &out, err);
    for (char *l = out.data; !rc && l && *l;) {
        char *eol = strchr(l, '\n');
        if (eol)
            *eol = '\0';
        unsigned long long size;
        char perms[16];
        const char *name = listed_entry(l, &size, perms);
        char path[PATH_MAX], h[65];
        if (name && perms[0] == 'l') /* a symbolic link: "NAME -> TARGET" */
            rc = gpc_buf_addf(&lines, err, "%s\t%s\n", name, perms);
        else if (name && perms[0] == '-') {
            if (snprintf(path, sizeof(path), "%s/%s", workdir, name) >= (int)sizeof(path))
                rc = gpc_fail(err, GPC_ERR_IO, "%s/%s: path too long", workdir, name);
            if (!rc)
                rc = gpc_store_file_sha256(path, h, err);
            if (!rc)
                rc = gpc_buf_addf(&lines, err, "%s\t%llu\t%s\t%s\n", name, size, h, perms);
        }
        l = eol ? eol + 1 : NULL;
    }
    if (!rc)
        gpc_sha256_hex(lines.data ? lines.data : "", lines.len, hex);
    gpc_buf_free(&out);
    gpc_buf_free(&lines);
    return rc;
}

/*
 * Warn when what the workdir sends (its files less the ignored ones, as
 * `rsync --list-only` with the same filters lists them) is larger than
 * $GPUCTL_WORKDIR_WARN_MB MiB (default 100; 0 = never), naming its three
 * largest top-level entries.  A listing that fails is only logged: the
 * rsync that follows tells the error.
 */
static void size_warning(gpc_session *s, const char *workdir)
{
    const char *v = getenv("GPUCTL_WORKDIR_WARN_MB");
    char *end;
    long long mb = v && *v ? strtoll(v, &end, 10) : WARN_MB_DEFAULT;
    if (v && *v && (*end || mb < 0))
        mb = WARN_MB_DEFAULT;
    if (mb == 0)
        return;
    gpc_error e;
    gpc_error_clear(&e);
    gpc_buf out;
    gpc_buf_init(&out, 64u << 20);
    const char *state[] = {s->state_dir};
    if (list_workdir(workdir, state, 1, 0, &out, &e)) {
        gpc_debug(s->log, "deliver: listing %s for its size: %s", workdir, e.msg);
        gpc_buf_free(&out);
        return;
    }
    /* "-rw-r--r--   SIZE YYYY/MM/DD HH:MM:SS NAME": regular files only */
    entry *top = NULL;
    size_t nt = 0;
    uint64_t total = 0;
    for (char *l = out.data; l && *l;) {
        char *eol = strchr(l, '\n');
        if (eol)
            *eol = '\0';
        unsigned long long size;
        const char *name = listed_file(l, &size);
        if (name) {
            const char *slash = strchr(name, '/');
            size_t tl = slash ? (size_t)(slash - name) : strlen(name);
            total += size;
            size_t k = 0;
            while (k < nt && (strlen(top[k].name) != tl || memcmp(top[k].name, name, tl) != 0))
                k++;
            if (k == nt) {
                entry *g = realloc(top, (nt + 1) * sizeof(*top));
                if (g) {
                    top = g;
                    snprintf(top[nt].name, sizeof(top[nt].name), "%.*s%s", (int)tl, name,
                             slash ? "/" : "");
                    top[nt++].bytes = 0;
                }
            }
            if (k < nt)
                top[k].bytes += size;
        }
        l = eol ? eol + 1 : NULL;
    }
    if (total > (uint64_t)mb * 1024u * 1024u) {
        qsort(top, nt, sizeof(*top), by_size);
        char t[32], big[1024] = "";
        gpc_format_bytes(total, t, sizeof(t));
        for (size_t k = 0; k < nt && k < 3; k++) {
            char h[32];
            gpc_format_bytes(top[k].bytes, h, sizeof(h));
            size_t bl = strlen(big);
            snprintf(big + bl, sizeof(big) - bl, "%s%s (%s)", k ? ", " : "", top[k].name, h);
        }
        gpc_warn(s->log, "workdir %s holds %s after .gpuctlignore and .gitignore (more than "
                 "%lld MiB, GPUCTL_WORKDIR_WARN_MB); largest: %s; list what the job does not "
                 "need in %s/.gpuctlignore", workdir, t, mb, big, workdir);
    }
    free(top);
    gpc_buf_free(&out);
}

/* ---- the delivery -------------------------------------------------------- */

int gpc_lc_deliver(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                   const char *workdir, const gpc_env_var *secrets, size_t n_sec, gpc_error *err)
{
    if (!pv->prov->transport_argv)
        return gpc_fail(err, GPC_ERR_INTERNAL, "provider %s has no transport to deliver "
                        "the workdir and secrets with", pv->prov->name);
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_node_status *ns = NULL;
    int *have = NULL;
    int rc = gpc_lc_describe_cluster(s, pv, c, &nodes, &n, &ns, &have, err);
    node_job *jobs = rc ? NULL : calloc(n ? n : 1, sizeof(*jobs));
    if (!rc && !jobs)
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    size_t nj = 0;
    gpc_lc_ref r;
    memset(&r, 0, sizeof(r));
    int opened = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        /* running, or up between jobs (lifecycle.idle_timeout) */
        int up = ns[i].phase == GPC_PHASE_RUNNING ||
                 (!nodes[i].ended_at &&
                  (ns[i].phase == GPC_PHASE_SUCCEEDED || ns[i].phase == GPC_PHASE_FAILED));
        if (!have[i] || !up || !nodes[i].provider_id[0] ||
            nodes[i].created_at < s->deliver_since)
            continue;
        if (!opened) {
            opened = 1;
            rc = gpc_lc_ref_open(s, c, &r, err);
            if (rc)
                break;
        }
        node_job *j = &jobs[nj++];
        j->nd = &nodes[i];
        j->out_fd = -1;
        gpc_error_clear(&j->err);
        gpc_node_ref ref = gpc_lc_node_ref(&nodes[i]);
        gpc_error te;
        gpc_error_clear(&te);
        if (pv->prov->transport_argv(pv->ctx, &r.ref, &ref, &j->rsh, j->dest, sizeof(j->dest),
                                     &te)) {
            gpc_error_wrap(&j->err, &te, "%s (%s): no way to reach it", nodes[i].name,
                           nodes[i].provider_id);
            j->failed = 1;
        }
    }
    if (opened)
        gpc_lc_ref_close(s, c, &r);
    if (!rc && workdir && nj)
        size_warning(s, workdir);
    for (int step = STEP_PREPARE; !rc && step <= STEP_MARK; step++) {
        if (step == STEP_RSYNC && !workdir)
            continue;
        for (size_t k = 0; k < nj; k++)
            if (!jobs[k].failed)
                step_start(s, &jobs[k], step, workdir, secrets, n_sec);
        for (size_t k = 0; k < nj; k++)
            step_finish(s, &jobs[k], step);
    }
    /* what moved, node by node; the first failure is the answer */
    size_t failed = 0;
    for (size_t k = 0; !rc && k < nj; k++) {
        node_job *j = &jobs[k];
        if (j->failed) {
            if (!failed++)
                gpc_error_wrap(err, &j->err, "deliver: node %u", (unsigned)j->nd->rank);
            gpc_lc_event(s, c->id, (int)j->nd->rank, "error", "delivery failed: %s",
                         j->err.msg);
            continue;
        }
        char b[32], del[64] = "";
        gpc_format_bytes(j->bytes, b, sizeof(b));
        if (j->deleted)
            snprintf(del, sizeof(del), ", %" PRIu64 " deleted", j->deleted);
        if (workdir)
            gpc_info(s->log, "workdir: %" PRIu64 " file%s, %s sent to node %u%s", j->files,
                     j->files == 1 ? "" : "s", b, (unsigned)j->nd->rank, del);
        if (n_sec)
            gpc_info(s->log, "secrets: %zu sent to node %u", n_sec, (unsigned)j->nd->rank);
        gpc_lc_event(s, c->id, (int)j->nd->rank, "deliver", "workdir %" PRIu64 " file(s), "
                     "%" PRIu64 " B, %" PRIu64 " deleted; %zu secret(s)", j->files, j->bytes,
                     j->deleted, n_sec);
    }
    if (!rc && failed)
        rc = err->code ? (int)err->code : GPC_ERR_PROVIDER;
    for (size_t k = 0; jobs && k < nj; k++)
        gpc_argv_free(jobs[k].rsh);
    free(jobs);
    gpc_node_list_free(nodes, n);
    free(ns);
    free(have);
    return rc;
}

int gpc_lc_deliver_apply(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                         gpc_error *err)
{
    if (!s->deliver)
        return 0;
    return gpc_lc_deliver(s, pv, c, s->deliver_workdir, s->secrets, s->n_secrets, err);
}

int gpc_deliver_nodes(gpc_session *s, const gpc_open_provider *pv, gpc_cluster_rec *c,
                      const gpc_spec *spec, int *delivers, gpc_error *err)
{
    *delivers = 0;
    const gpc_provider *p = pv->prov;
    if (!p->transport_argv || (!spec->workdir && !spec->n_secrets))
        return 0;
    /* the nodes see this machine's files: as precheck.c judges, by the
     * provider's capability (a provider with transport_argv says no more
     * per place) */
    int shares = (p->caps & GPC_CAP_SHARED_FILES) != 0;
    int send_secrets = spec->n_secrets && !(p->caps & GPC_CAP_SECRETS);
    if (shares && !send_secrets)
        return 0;
    *delivers = 1;
    char *wd = NULL;
    gpc_env_var *sec = NULL;
    size_t n_sec = 0;
    int rc = 0;
    if (spec->workdir && !shares) {
        struct stat sb;
        char at[GPC_SPEC_AT_MAX];
        rc = gpc_spec_path(spec, spec->workdir, &wd, err);
        if (!rc && (stat(wd, &sb) != 0 || !S_ISDIR(sb.st_mode)))
            rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: directory '%s' does not exist "
                          "(resolved: %s)",
                          gpc_spec_at(spec, spec->workdir_line, spec->workdir_col, at),
                          spec->workdir, wd);
    }
    if (!rc && send_secrets)
        rc = gpc_secrets_read(spec, &sec, &n_sec, err);
    if (!rc)
        rc = gpc_lc_deliver(s, pv, c, wd, sec, n_sec, err);
    gpc_secrets_free(sec, n_sec);
    free(wd);
    return rc;
}
