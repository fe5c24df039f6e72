/*
 * local.c - the `local` provider: nodes are process groups on this machine.
 *
 * Each node gets a directory, <state-dir>/local/<client-token>/, that plays
 * the part of the VM's disk (/var/lib/gpuctl there).  create_node puts the
 * engine's payload, the bootstrap every node runs, in it and starts it
 * with bash in a new session with a clean environment, as a VM boots; the
 * cloud-init wrapping a VM provider adds (gpc_payload_cloud_init) is not
 * needed on this machine.
 * The node (its session, see node_procs) outlives the gpuctl process that
 * started it.
 *
 * Files in a node directory:
 *   bootstrap.sh            the payload's bootstrap (0700)
 *   runcmd.sh               the command that starts it
 *   pid                     "<sid> <starttime>" of the node's session leader
 *   cloud-init-output.log   stdout/stderr of runcmd before the bootstrap
 *                           redirects to node.log
 *   node.log, phase, exit_status   written by the bootstrap
 *
 * This is also how gpuctl runs on your own deep-learning server: install
 * gpuctl there and apply a spec with `provider: local`.
 *
 * Leftovers: a node directory without a pid file and without processes
 * is the leftover of a create that failed or whose gpuctl was killed
 * before it started the node; it holds the bootstrap, with the job's env
 * values.  A create that fails removes its directory; a create repeated
 * with the token (idempotent) starts that directory over; find_node, which
 * the core asks before it creates again or destroys, removes such a
 * leftover of the token and of the node's other launch attempts (tokens
 * "<cluster>-<rank>-<uid>-a<N>" that differ in N only), and so does
 * delete_node for the other attempts.  Creates hold a lock on the local/
 * directory from the mkdir until the pid file is written, and a leftover
 * is only judged under that lock, so a create in progress (in another
 * gpuctl) is never taken for one.
 */
#define _GNU_SOURCE 1 /* pipe2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "gpuctl/buf.h"
#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/shell.h"
#include "gpuctl/util.h"
#include "local_store.h"

#define NODE_ROOT "/var/lib/gpuctl"
#define LOG_CHUNK_MAX (1u << 20)

/* out = dir + "/" + name; 0, or -1 when it does not fit. */
static int join(char *out, size_t len, const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    if (dl + 1 + nl + 1 > len)
        return -1;
    memcpy(out, dir, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, name, nl + 1);
    return 0;
}

typedef struct local_ctx {
    char root[PATH_MAX];   /* <state-dir>/local */
} local_ctx;

const char *local_root(void *ctx)
{
    return ((const local_ctx *)ctx)->root;
}

static int local_open(const gpc_provider_config *cfg, void **out, gpc_error *err)
{
    local_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    if (snprintf(c->root, sizeof(c->root), "%s/local", cfg->state_dir) >= (int)sizeof(c->root)) {
        free(c);
        return gpc_fail(err, GPC_ERR_IO, "local: state directory path too long");
    }
    int rc = gpc_mkdir_p(c->root, 0700, err);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static void local_close(void *ctx)
{
    free(ctx);
}

/* ---- this machine as an offer ---------------------------------------- */

/* GPUs as nvidia-smi reports them; 0 when there is no working nvidia-smi. */
static uint32_t detect_gpus(char *model, size_t model_len, double *mem_gib)
{
    model[0] = '\0';
    *mem_gib = 0;
    FILE *p = popen("nvidia-smi --query-gpu=name,memory.total "
                    "--format=csv,noheader,nounits 2>/dev/null", "r");
    if (!p)
        return 0;
    char line[512];
    uint32_t n = 0;
    while (fgets(line, sizeof(line), p)) {
        char *comma = strchr(line, ',');
        if (!comma)
            continue;
        *comma = '\0';
        if (n == 0) {
            size_t l = strlen(line);
            if (l >= model_len)
                l = model_len - 1;
            memcpy(model, line, l);
            model[l] = '\0';
            *mem_gib = strtod(comma + 1, NULL) / 1024.0; /* MiB -> GiB */
        }
        n++;
    }
    if (pclose(p) != 0)
        return 0;
    return n;
}

/* Does GPU model `have` ("NVIDIA H200") satisfy a wanted model ("H200")? */
static int model_matches(const char *want, const char *have)
{
    if (!want[0])
        return 1;
    size_t wl = strlen(want);
    for (const char *h = have; *h; h++)
        if (strncasecmp(h, want, wl) == 0)
            return 1;
    return 0;
}

static int local_list_offers(void *ctx, const gpc_spec *spec, gpc_offer **out,
                             size_t *n, gpc_error *err)
{
    const local_ctx *c = ctx;
    gpc_offer o;
    memset(&o, 0, sizeof(o));
    snprintf(o.provider, sizeof(o.provider), "local");
    snprintf(o.instance_type, sizeof(o.instance_type), "local");
    snprintf(o.region, sizeof(o.region), "local");
    snprintf(o.zone, sizeof(o.zone), "local");
    snprintf(o.fabric, sizeof(o.fabric), "none");
    o.gpu_count = detect_gpus(o.gpu_model, sizeof(o.gpu_model), &o.gpu_mem_gib);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    o.vcpus = cpus > 0 ? (double)cpus : 1;
    o.mem_gib = pages > 0 && psize > 0 ? (double)pages * (double)psize / (1024.0 * 1024 * 1024) : 0;
    /* in whole hundredths, rounded down: a plan shows (and its checksum
     * covers) 23.54, not 23.540065765380859 */
    o.mem_gib = floor(o.mem_gib * 100.0) / 100.0;

    /* Every constraint is a filter: what this machine cannot be is an error,
     * not something to ignore. */
    int type_ok = spec->resources.n_instance_types == 0;
    for (size_t i = 0; i < spec->resources.n_instance_types; i++)
        type_ok |= strcmp(spec->resources.instance_types[i], "local") == 0;
    if (!type_ok)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: resources.instance_types: this machine is instance type "
                        "'local', not '%s'", spec->resources.instance_types[0]);
    int region_ok = spec->n_regions == 0, zone_ok = spec->n_zones == 0;
    for (size_t i = 0; i < spec->n_regions; i++)
        region_ok |= strcmp(spec->regions[i], "local") == 0;
    for (size_t i = 0; i < spec->n_zones; i++)
        zone_ok |= strcmp(spec->zones[i], "local") == 0;
    if (!region_ok || !zone_ok)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: %s: this machine's region and zone are 'local', not '%s'",
                        region_ok ? "zone" : "region",
                        region_ok ? spec->zones[0] : spec->regions[0]);
    if (spec->spot.policy == GPC_SPOT_SPOT || spec->spot.head == GPC_SPOT_SPOT)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: spot: this machine has no spot capacity (use policy auto or on-demand)");
    gpc_interconnect ic = spec->resources.interconnect;
    if (ic == GPC_IC_EFA || ic == GPC_IC_INFINIBAND || ic == GPC_IC_ERDMA || ic == GPC_IC_RDMA)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: resources.interconnect: local nodes share loopback, not %s",
                        gpc_interconnect_name(ic));
    struct statvfs vfs;
    if (spec->resources.disk_gib > 0 && statvfs(c->root, &vfs) == 0) {
        double free_gib = (double)vfs.f_bavail * (double)vfs.f_frsize / (1024.0 * 1024 * 1024);
        if (spec->resources.disk_gib > free_gib)
            return gpc_fail(err, GPC_ERR_CAPACITY,
                            "local: resources.disk asks for %.0f GiB, %.1f GiB are free here",
                            spec->resources.disk_gib, free_gib);
    }
    if (spec->resources.cpus.min > o.vcpus)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: resources.cpus asks for %g, this machine has %g",
                        spec->resources.cpus.min, o.vcpus);
    if (spec->resources.memory_gib.min > o.mem_gib)
        return gpc_fail(err, GPC_ERR_CAPACITY,
                        "local: resources.memory asks for %g GiB, this machine has %.1f GiB",
                        spec->resources.memory_gib.min, o.mem_gib);
    if (spec->resources.n_gpus > 0) {
        int fit = 0;
        for (size_t i = 0; i < spec->resources.n_gpus && !fit; i++) {
            const gpc_gpu_req *g = &spec->resources.gpus[i];
            fit = o.gpu_count >= (uint32_t)g->count.min &&
                  model_matches(g->model, o.gpu_model) &&
                  (g->mem_gib.min <= 0 || o.gpu_mem_gib + 0.5 >= g->mem_gib.min);
        }
        if (!fit)
            return gpc_fail(err, GPC_ERR_CAPACITY,
                            "local: resources.gpu does not fit this machine (%u x %s)",
                            o.gpu_count, o.gpu_count ? o.gpu_model : "no GPU");
    }
    *out = malloc(sizeof(o));
    if (!*out)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    **out = o;
    *n = 1;
    return 0;
}

static int local_pick_rdzv_port(void *ctx, uint32_t *port, gpc_error *err)
{
    (void)ctx;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return gpc_fail(err, GPC_ERR_IO, "local: socket: %s", strerror(errno));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        close(fd);
        return gpc_fail(err, GPC_ERR_IO, "local: cannot find a free port: %s", strerror(e));
    }
    close(fd);
    *port = ntohs(sa.sin_port);
    return 0;
}

/* ---- a node's processes ---------------------------------------------- */

/*
 * A node is every process that is in the session its bootstrap started
 * (setsid), descends from such a process, or carries GPUCTL_HOME=<node dir>
 * in its environment.  The three together catch what a plain process-group
 * kill misses: `timeout` and torch 2.x move their children into groups and
 * sessions of their own, and a worker can outlive its launcher.
 */

typedef struct proc_info {
    long pid, ppid, sid;
    char state;
    int mark;
} proc_info;

/* Fields of /proc/<pid>/stat; 0 on success. */
static int proc_stat(long pid, long *ppid, long *sid, char *state, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p || !p[1])
        return -1;
    /* after the name: 3 state, 4 ppid, 5 pgrp, 6 session, ... 22 starttime */
    char st;
    long pp, pg, se;
    if (sscanf(p + 2, "%c %ld %ld %ld", &st, &pp, &pg, &se) != 4)
        return -1;
    unsigned long long t = 0;
    char *q = p + 2;
    for (int field = 3; field < 22 && q; field++) {
        q = strchr(q, ' ');
        if (q)
            q++;
    }
    if (q)
        t = strtoull(q, NULL, 10);
    if (ppid)
        *ppid = pp;
    if (sid)
        *sid = se;
    if (state)
        *state = st;
    if (start)
        *start = t;
    return 0;
}

/* Does /proc/<pid>/environ hold exactly the entry `want`? */
static int environ_has(long pid, const char *want)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char buf[256 * 1024];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    size_t wl = strlen(want);
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, want, wl + 1) == 0)
            return 1;
    return 0;
}

/*
 * The live (not zombie) processes of the node whose session leader was
 * `sid` started at `start`, in node directory `dir`.  Returns how many were
 * stored in out[] (at most max).
 */
static size_t node_procs(long sid, unsigned long long start, const char *dir,
                         long *out, size_t max)
{
    char marker[PATH_MAX + 16];
    snprintf(marker, sizeof(marker), "GPUCTL_HOME=%s", dir);
    /* A session id is not reused while its session lives; a leader pid with
     * another start time leading its own session means this one is over. */
    long lsid;
    unsigned long long t;
    int sid_ok = 1;
    if (proc_stat(sid, NULL, &lsid, NULL, &t) == 0 && lsid == sid && t != start)
        sid_ok = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    proc_info *ps = NULL;
    size_t np = 0, cap = 0;
    struct dirent *de;
    long self = (long)getpid();
    while ((de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        proc_info pi = {pid, 0, 0, 0, 0};
        if (proc_stat(pid, &pi.ppid, &pi.sid, &pi.state, NULL) != 0)
            continue;
        if (pi.state == 'Z' || pi.state == 'X')
            continue;
        pi.mark = (sid_ok && pi.sid == sid) || environ_has(pid, marker);
        if (np == cap) {
            size_t nc = cap ? cap * 2 : 256;
            proc_info *g = realloc(ps, nc * sizeof(*ps));
            if (!g)
                break;
            ps = g;
            cap = nc;
        }
        ps[np++] = pi;
    }
    closedir(d);
    /* Descendants of marked processes are the node's too. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < np; i++) {
            if (ps[i].mark)
                continue;
            for (size_t j = 0; j < np; j++)
                if (ps[j].mark && ps[j].pid == ps[i].ppid) {
                    ps[i].mark = changed = 1;
                    break;
                }
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < np && n < max; i++)
        if (ps[i].mark)
            out[n++] = ps[i].pid;
    free(ps);
    return n;
}

static int node_alive(long sid, unsigned long long start, const char *dir)
{
    long one;
    return node_procs(sid, start, dir, &one, 1) > 0;
}

/* Send `sig` to every process of the node; returns how many there were. */
static size_t node_signal(long sid, unsigned long long start, const char *dir, int sig)
{
    long pids[4096];
    size_t n = node_procs(sid, start, dir, pids, sizeof(pids) / sizeof(pids[0]));
    for (size_t i = 0; i < n; i++)
        kill((pid_t)pids[i], sig);
    return n;
}

/* ---- node directories ------------------------------------------------- */

static int node_dir(const local_ctx *c, const char *id, char *out, size_t len,
                    gpc_error *err)
{
    if (!id[0] || strlen(id) > 64)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: invalid node id '%s'", id);
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return gpc_fail(err, GPC_ERR_PROVIDER, "local: invalid node id '%s'", id);
    if (id[0] == '.')
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: invalid node id '%s'", id);
    if (snprintf(out, len, "%s/%s", c->root, id) >= (int)len)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
    return 0;
}

/* Read a small file in the node dir into buf (trimmed); "" when missing. */
static void read_small(const char *dir, const char *name, char *buf, size_t len)
{
    char path[PATH_MAX];
    buf[0] = '\0';
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
}

/*
 * Put the payload on the node as a VM's boot would: the bootstrap where
 * the node keeps it (NODE_ROOT/bootstrap.sh, which is dir/bootstrap.sh
 * here) and runcmd.sh, the one command that starts it with bash.  The
 * job's env values are in the bootstrap (0700, this user's).
 */
static int place_payload(const char *dir, const gpc_payload *pl, gpc_error *err)
{
    if (!pl || !pl->script)
        return gpc_fail(err, GPC_ERR_INTERNAL, "local: no payload");
    if (memchr(pl->script, '\0', pl->script_len))
        return gpc_fail(err, GPC_ERR_RENDER, "the bootstrap holds a NUL byte");
    char path[PATH_MAX];
    join(path, sizeof(path), dir, "bootstrap.sh");
    int rc = gpc_write_file_atomic(path, pl->script, pl->script_len, 0700, err);
    gpc_buf run;
    gpc_buf_init(&run, GPC_BUF_LINE_MAX);
    if (!rc)
        rc = gpc_buf_adds(&run, "#!/bin/sh\n'/bin/bash' ", err);
    if (!rc)
        rc = gpc_shell_quote(&run, path, err);
    if (!rc)
        rc = gpc_buf_adds(&run, "\n", err);
    if (!rc) {
        join(path, sizeof(path), dir, "runcmd.sh");
        rc = gpc_write_file_atomic(path, run.data, run.len, 0700, err);
    }
    gpc_buf_free(&run);
    return rc;
}

/*
 * Start /bin/sh runcmd.sh as a detached session (double fork), with the
 * environment a freshly booted machine has.  Returns the new pgid.
 */
/* The environment of a node: the fixed entries, CUDA_VISIBLE_DEVICES when
 * set, and the job's secrets (GPC_CAP_SECRETS: in the process's
 * environment only, never in the node's files).  NULL-terminated; free
 * with free_envp, which wipes the secrets. */
#define ENV_FIXED 6

static void free_envp(char **envp, size_t n)
{
    for (size_t i = ENV_FIXED; envp && i < n; i++)
        if (envp[i]) {
            OPENSSL_cleanse(envp[i], strlen(envp[i]));
            free(envp[i]);
        }
    free(envp);
}

static char **make_envp(const char *dir, const char *cuda_visible, const gpc_env_var *secrets,
                        size_t n_secrets, size_t *n_out)
{
    size_t n = ENV_FIXED + 1 + n_secrets;
    char **envp = calloc(n + 1, sizeof(*envp));
    if (!envp)
        return NULL;
    static char path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    static char lang[] = "LANG=C.UTF-8", user[] = "USER=gpuctl";
    static char ip[] = "GPUCTL_LOCAL_IP=127.0.0.1";
    static char home[PATH_MAX + 16], gh[PATH_MAX + 16];
    snprintf(home, sizeof(home), "HOME=%s/home", dir);
    snprintf(gh, sizeof(gh), "GPUCTL_HOME=%s", dir);
    char *fixed[ENV_FIXED] = {path, lang, user, home, gh, ip};
    memcpy(envp, fixed, sizeof(fixed));
    size_t k = ENV_FIXED;
    int ok = 1;
    if (cuda_visible && cuda_visible[0]) {
        size_t len = strlen(cuda_visible) + 22;
        if ((envp[k] = malloc(len)))
            snprintf(envp[k], len, "CUDA_VISIBLE_DEVICES=%s", cuda_visible);
        ok = envp[k++] != NULL;
    }
    for (size_t i = 0; ok && i < n_secrets; i++) {
        size_t len = strlen(secrets[i].name) + strlen(secrets[i].value) + 2;
        if ((envp[k] = malloc(len)))
            snprintf(envp[k], len, "%s=%s", secrets[i].name, secrets[i].value);
        ok = envp[k++] != NULL;
    }
    *n_out = n;
    if (!ok) {
        free_envp(envp, n);
        return NULL;
    }
    return envp;
}

static int spawn_node(const char *dir, const char *cuda_visible, const gpc_env_var *secrets,
                      size_t n_secrets, long *pgid_out, gpc_error *err)
{
    size_t n_env = 0;
    char **envp = make_envp(dir, cuda_visible, secrets, n_secrets, &n_env);
    if (!envp)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        free_envp(envp, n_env);
        return gpc_fail(err, GPC_ERR_IO, "local: pipe: %s", strerror(errno));
    }
    pid_t child = fork();
    if (child < 0) {
        close(pfd[0]);
        close(pfd[1]);
        free_envp(envp, n_env);
        return gpc_fail(err, GPC_ERR_IO, "local: fork: %s", strerror(errno));
    }
    if (child == 0) {
        close(pfd[0]);
        pid_t gc = fork();
        if (gc != 0)
            _exit(gc < 0 ? 1 : 0);
        /* The node: its own session and process group. */
        setsid();
        /* Record the group before anything else, so that a gpuctl killed
         * right now still finds this node on the next apply. */
        long me = (long)getpid();
        unsigned long long start = 0;
        char line[64], pidpath[PATH_MAX];
        if (proc_stat(me, NULL, NULL, NULL, &start) != 0)
            _exit(127);
        int ln = snprintf(line, sizeof(line), "%ld %llu\n", me, start);
        join(pidpath, sizeof(pidpath), dir, "pid");
        if (gpc_write_file_atomic(pidpath, line, (size_t)ln, 0600, NULL) != 0)
            _exit(127);
        if (write(pfd[1], &me, sizeof(me)) != (ssize_t)sizeof(me))
            _exit(127);
        char script[PATH_MAX], logp[PATH_MAX], home[PATH_MAX];
        join(script, sizeof(script), dir, "runcmd.sh");
        join(logp, sizeof(logp), dir, "cloud-init-output.log");
        join(home, sizeof(home), dir, "home");
        mkdir(home, 0700);
        int in = open("/dev/null", O_RDONLY);
        int out = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in < 0 || out < 0 || chdir(dir) != 0)
            _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        if (in > 2)
            close(in);
        if (out > 2)
            close(out);
        char *argv[] = {"/bin/sh", script, NULL};
        execve("/bin/sh", argv, envp);
        long fail = -(long)errno;
        if (write(pfd[1], &fail, sizeof(fail)) < 0)
            _exit(127);
        _exit(127);
    }
    close(pfd[1]);
    free_envp(envp, n_env);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    long pgid = 0, extra = 0;
    ssize_t n = read(pfd[0], &pgid, sizeof(pgid));
    ssize_t m = read(pfd[0], &extra, sizeof(extra));
    close(pfd[0]);
    if (n != (ssize_t)sizeof(pgid) || pgid <= 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: could not start the node process");
    if (m == (ssize_t)sizeof(extra) && extra < 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: exec /bin/sh: %s", strerror((int)-extra));
    *pgid_out = pgid;
    return 0;
}

static int read_pid(const char *dir, long *pgid, unsigned long long *start)
{
    char buf[128];
    read_small(dir, "pid", buf, sizeof(buf));
    return sscanf(buf, "%ld %llu", pgid, start) == 2 ? 0 : -1;
}

/* ---- leftovers of creates that did not finish ------------------------- */

/* Lock the local/ directory (creates hold it until the node's pid file is
 * written); returns the descriptor to close, or -1 when it cannot lock
 * (then nothing is judged a leftover). */
static int root_lock(const local_ctx *c)
{
    int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Closing drops the lock once no forked copy of the descriptor is left
 * (a node's session holds one until it execs, after its pid file). */
static void root_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* Is the node directory `dir` a leftover: there, no pid file, no
 * process?  Only under root_lock. */
static int leftover(const char *dir)
{
    struct stat sb;
    long sid;
    unsigned long long start;
    return lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && read_pid(dir, &sid, &start) != 0 &&
           !node_alive(-1, 0, dir);
}

/* Length of the part of a client token "<cluster>-<rank>-<uid8>-a<N>"
 * that the node's launch attempts share (up to and with "-a"); 0 when
 * the token is not of that form. */
static size_t attempt_prefix(const char *id)
{
    size_t n = strlen(id), i = n;
    while (i > 0 && id[i - 1] >= '0' && id[i - 1] <= '9')
        i--;
    if (i == n || i < 2 || id[i - 1] != 'a' || id[i - 2] != '-')
        return 0;
    size_t p = i; /* after "-a" */
    i -= 2;       /* at the '-' before 'a' */
    size_t h = i;
    while (h > 0 && ((id[h - 1] >= '0' && id[h - 1] <= '9') || (id[h - 1] >= 'a' && id[h - 1] <= 'f')))
        h--;
    if (i - h != 8 || h < 2 || id[h - 1] != '-')
        return 0;
    size_t r = h - 1;
    while (r > 0 && id[r - 1] >= '0' && id[r - 1] <= '9')
        r--;
    if (r == h - 1 || r < 2 || id[r - 1] != '-')
        return 0;
    return p;
}

/*
 * Remove the leftovers among the node directories of `id`'s other launch
 * attempts (and of `id` itself when `self`).  Only under root_lock.
 * Returns how many were removed.
 */
static int sweep_leftovers(const local_ctx *c, const char *id, int self)
{
    size_t pl = attempt_prefix(id);
    int removed = 0;
    char dir[PATH_MAX];
    if (self && snprintf(dir, sizeof(dir), "%s/%s", c->root, id) < (int)sizeof(dir) &&
        leftover(dir) && gpc_rm_rf(dir, NULL) == 0)
        removed++;
    if (!pl)
        return removed;
    DIR *d = opendir(c->root);
    if (!d)
        return removed;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (strncmp(n, id, pl) != 0 || strcmp(n, id) == 0 || !n[pl] ||
            strspn(n + pl, "0123456789") != strlen(n + pl))
            continue;
        if (snprintf(dir, sizeof(dir), "%s/%s", c->root, n) < (int)sizeof(dir) &&
            leftover(dir) && gpc_rm_rf(dir, NULL) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

/* GPUCTL_TEST_FAULT=kill-after-node-dir:<rank> (docs/testing.md; test builds
 * only, GPUCTL_TEST_HOOKS): kill this gpuctl in the middle of a create, with
 * the node directory written and the node not started, as a crash or a
 * SIGKILL there would. */
static void fault_kill_after_node_dir(uint32_t rank)
{
#ifdef GPUCTL_TEST_HOOKS
    static const char point[] = "kill-after-node-dir:";
    const char *f = getenv("GPUCTL_TEST_FAULT");
    char *end;
    if (f && strncmp(f, point, sizeof(point) - 1) == 0 &&
        strtoul(f + sizeof(point) - 1, &end, 10) == rank && (*end == '\0' || *end == ':'))
        raise(SIGKILL);
#else
    (void)rank;
#endif
}

static int local_describe(void *ctx, const char *id, gpc_node_status *out, gpc_error *err)
{
    local_ctx *c = ctx;
    char dir[PATH_MAX];
    int rc = node_dir(c, id, dir, sizeof(dir), err);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    snprintf(out->provider_id, sizeof(out->provider_id), "%s", id);
    out->exit_code = -1;
    struct stat sb;
    long pgid;
    unsigned long long start;
    if (stat(dir, &sb) != 0 || read_pid(dir, &pgid, &start) != 0) {
        /* Without its pid file a node can still have processes (found by
         * their GPUCTL_HOME): then it is broken, not gone. */
        int orphans = node_alive(-1, 0, dir);
        out->phase = orphans ? GPC_PHASE_FAILED : GPC_PHASE_TERMINATED;
        out->stopped = !orphans;
        snprintf(out->detail, sizeof(out->detail), "%s%s",
                 stat(dir, &sb) != 0 ? "node directory is gone" : "pid file is unreadable",
                 orphans ? "; its processes still run (gpuctl destroy stops them)" : "");
        return 0;
    }
    snprintf(out->private_ip, sizeof(out->private_ip), "127.0.0.1");
    /* Liveness first, then the files: a node that writes its exit status
     * and ends between the two reads must not look lost. */
    int alive = node_alive(pgid, start, dir);
    out->stopped = !alive;
    char phase[64], status[64];
    read_small(dir, "exit_status", status, sizeof(status));
    read_small(dir, "phase", phase, sizeof(phase));
    if (status[0]) {
        out->exit_code = atoi(status);
        out->phase = out->exit_code == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
        /* a node that stopped itself says why (lifecycle.idle_timeout) */
        char why[64];
        read_small(dir, "stopped", why, sizeof(why));
        snprintf(out->detail, sizeof(out->detail), "exit status %d%s%s", out->exit_code,
                 !alive && why[0] ? "; stopped itself: " : "", !alive ? why : "");
    } else if (!alive) {
        out->phase = GPC_PHASE_FAILED;
        snprintf(out->detail, sizeof(out->detail),
                 "node processes (session %ld) are gone without an exit status", pgid);
    } else if (strcmp(phase, "running") == 0) {
        out->phase = GPC_PHASE_RUNNING;
    } else if (strcmp(phase, "succeeded") == 0 || strcmp(phase, "failed") == 0) {
        /* the job's end, its exit status written next: still running (it
         * read as booting, a finished node shown as starting again) */
        out->phase = GPC_PHASE_RUNNING;
        snprintf(out->detail, sizeof(out->detail), "ending: %s", phase);
    } else if (strcmp(phase, "idle") == 0) {
        /* up, with no job yet (a node added to a live cluster) */
        out->phase = GPC_PHASE_RUNNING;
        snprintf(out->detail, sizeof(out->detail), "idle: no job yet");
    } else {
        out->phase = GPC_PHASE_BOOTING;
        snprintf(out->detail, sizeof(out->detail), "%s", phase[0] ? phase : "starting");
    }
    return 0;
}

/* The node id is the client token: found when its directory has a pid. */
static int local_find(void *ctx, const char *token, gpc_node_status *out, gpc_error *err)
{
    local_ctx *c = ctx;
    char dir[PATH_MAX];
    int rc = node_dir(c, token, dir, sizeof(dir), err);
    if (rc)
        return rc;
    long sid;
    unsigned long long start;
    int lk = root_lock(c);
    if (read_pid(dir, &sid, &start) != 0) {
        /* Not created.  What a create that never started the node left
         * (the user-data, with the job's env values) goes now: the core
         * asks before it creates again or destroys. */
        if (lk >= 0)
            sweep_leftovers(c, token, 1);
        root_unlock(lk);
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "local: no node with token %s", token);
    }
    root_unlock(lk);
    return local_describe(ctx, token, out, err);
}

static int local_create(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                        gpc_error *err)
{
    local_ctx *c = ctx;
    char dir[PATH_MAX];
    int rc = node_dir(c, req->client_token, dir, sizeof(dir), err);
    if (rc)
        return rc;
    long pgid;
    unsigned long long start;
    /* Several nodes on one multi-GPU machine: each gets its own share of
     * the GPUs (NCCL refuses two ranks on one GPU). */
    char cuda[256] = "";
    if (req->nnodes > 1) {
        char model[64];
        double mem;
        uint32_t g = detect_gpus(model, sizeof(model), &mem);
        uint32_t per = g / req->nnodes;
        for (uint32_t i = 0; per && i < per; i++) {
            size_t l = strlen(cuda);
            snprintf(cuda + l, sizeof(cuda) - l, "%s%u", i ? "," : "", req->rank * per + i);
        }
    }
    /* From here until the node's pid file exists, hold the lock that
     * tells a create in progress from a leftover. */
    int lk = root_lock(c);
    if (lk < 0)
        return gpc_fail(err, GPC_ERR_IO, "local: cannot lock %s: %s", c->root, strerror(errno));
    if (read_pid(dir, &pgid, &start) == 0) { /* created before: same node */
        root_unlock(lk);
        return local_describe(ctx, req->client_token, out, err);
    }
    /* The token's own leftover (a create repeated after a crash) starts
     * over; the node's other attempts' leftovers go. */
    sweep_leftovers(c, req->client_token, 1);
    struct stat sb;
    if (lstat(dir, &sb) == 0) {
        root_unlock(lk);
        return gpc_fail(err, GPC_ERR_PROVIDER,
                        "local: node directory %s has processes but no pid file; "
                        "gpuctl destroy stops them", dir);
    }
    rc = gpc_mkdir_p(dir, 0700, err);
    if (!rc)
        rc = place_payload(dir, req->payload, err);
    if (!rc)
        fault_kill_after_node_dir(req->rank);
    if (!rc)
        rc = spawn_node(dir, cuda, req->secrets, req->n_secrets, &pgid, err);
    if (rc && leftover(dir))
        gpc_rm_rf(dir, NULL); /* a failed create leaves nothing behind */
    root_unlock(lk);
    if (rc)
        return rc;
    return local_describe(ctx, req->client_token, out, err);
}

/* Wait up to `ms` for the node's processes to end, re-sending `sig` (0 =
 * none) on every look.  1 when they are gone. */
static int wait_gone(long sid, unsigned long long start, const char *dir, int sig, int ms)
{
    for (int waited = 0; waited < ms; waited += 50) {
        if (node_signal(sid, start, dir, sig) == 0)
            return 1;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !node_alive(sid, start, dir);
}

static int local_delete(void *ctx, const char *id, gpc_error *err)
{
    local_ctx *c = ctx;
    char dir[PATH_MAX];
    int rc = node_dir(c, id, dir, sizeof(dir), err);
    if (rc)
        return rc;
    long sid = -1; /* no pid file: find the processes by GPUCTL_HOME alone */
    unsigned long long start = 0;
    if (read_pid(dir, &sid, &start) != 0) {
        sid = -1;
        start = 0;
    }
    if (node_signal(sid, start, dir, SIGTERM) > 0 && !wait_gone(sid, start, dir, 0, 10000) &&
        !wait_gone(sid, start, dir, SIGKILL, 5000))
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: node %s survived SIGKILL", id);
    rc = gpc_rm_rf(dir, err);
    /* and what earlier attempts at this node left */
    int lk = rc ? -1 : root_lock(c);
    if (lk >= 0)
        sweep_leftovers(c, id, 0);
    root_unlock(lk);
    return rc;
}

/*
 * The node's log is cloud-init-output.log (what ran before the bootstrap
 * redirected its output) followed by node.log; `offset` counts bytes of
 * the two together, so no byte is skipped or shown twice at the switch.
 */
static int local_read_log(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                          uint32_t rank, long offset, int may_wait, gpc_buf *out, long *next,
                          int *exit_status, gpc_error *err)
{
    (void)cl;
    (void)rank;
    (void)may_wait;
    local_ctx *c = ctx;
    char dir[PATH_MAX];
    *next = offset;
    *exit_status = -1;
    int rc = node_dir(c, node->provider_id, dir, sizeof(dir), err);
    if (rc)
        return rc;
    /* the status before the bytes: with it, the log is complete */
    char status[64];
    read_small(dir, "exit_status", status, sizeof(status));
    if (status[0])
        *exit_status = atoi(status);
    static const char *const files[] = {"cloud-init-output.log", "node.log"};
    long base = 0;
    size_t total = 0;
    for (size_t i = 0; i < 2 && !rc && total < LOG_CHUNK_MAX; i++) {
        char path[PATH_MAX];
        if (join(path, sizeof(path), dir, files[i]) != 0)
            return gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
        struct stat sb;
        if (stat(path, &sb) != 0)
            continue;
        long size = (long)sb.st_size;
        if (offset < base + size) {
            FILE *f = fopen(path, "rb");
            if (!f)
                return gpc_fail(err, GPC_ERR_IO, "%s: %s", path, strerror(errno));
            if (fseek(f, offset - base, SEEK_SET) == 0) {
                char chunk[8192];
                size_t n;
                long want = base + size - offset;
                while (!rc && want > 0 && total < LOG_CHUNK_MAX &&
                       (n = fread(chunk, 1, (size_t)want < sizeof(chunk) ? (size_t)want
                                                                        : sizeof(chunk), f)) > 0) {
                    rc = gpc_buf_add(out, chunk, n, err);
                    total += n;
                    offset += (long)n;
                    want -= (long)n;
                }
            }
            fclose(f);
        }
        base += size;
    }
    *next = offset;
    return rc;
}

/* ---- shell access (gpuctl ssh) ----------------------------------------- */

/* The environment of process `pid` (NUL-separated entries) into b. */
static int read_environ(long pid, gpc_buf *b)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char chunk[8192];
    ssize_t n;
    int rc = 0;
    while (!rc && (n = read(fd, chunk, sizeof(chunk))) > 0)
        rc = gpc_buf_add(b, chunk, (size_t)n, NULL);
    close(fd);
    return rc;
}

/* Does the environment block [e, e+len) have an entry starting `prefix`? */
static int env_has_prefix(const char *e, size_t len, const char *prefix)
{
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < len; i += strlen(e + i) + 1)
        if (strncmp(e + i, prefix, pl) == 0)
            return 1;
    return 0;
}


/*
 * The job's environment and working directory on a local node: those of
 * its first worker (the process torchrun started with LOCAL_RANK=0, which
 * holds RANK, WORLD_SIZE, MASTER_ADDR and the job env), else of any of its
 * processes that has the bootstrap's GPUCTL_NODE_RANK (the job is still in
 * setup).  dir/shell.env (0600) holds no value: it imports that process's
 * environment when the shell sources it (/proc/PID/environ: the job's
 * secrets stay in no file, docs/spec.md#secrets), then does a `cd` to its
 * directory.  Several such processes are tried in that order (the first
 * worker, then the oldest): one may end between now and the shell's start
 * (a job that `gpuctl exec` queued takes over from the one that ends); the
 * shell fails, saying so, only when all have gone.
 */
static int write_shell_env(const char *dir, const char *id, char *env_path, size_t size,
                           gpc_error *err)
{
    long sid;
    unsigned long long start;
    if (read_pid(dir, &sid, &start) != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: node %s has not started", id);
    static long pids[4096];
    size_t n = node_procs(sid, start, dir, pids, sizeof(pids) / sizeof(pids[0]));
    /* candidates: first workers (LOCAL_RANK=0), then the others, each by pid */
    enum { N_CAND = 16 };
    long cand[2][N_CAND];
    size_t nc[2] = {0, 0};
    gpc_buf e;
    gpc_buf_init(&e, 4u << 20);
    for (size_t i = 0; i < n; i++) {
        gpc_buf_reset(&e);
        if (read_environ(pids[i], &e) != 0 || !e.len ||
            !env_has_prefix(e.data, e.len, "GPUCTL_NODE_RANK="))
            continue;
        int k = env_has_prefix(e.data, e.len, "LOCAL_RANK=0") ? 0 : 1;
        size_t at = nc[k];
        while (at > 0 && cand[k][at - 1] > pids[i])
            at--;
        if (at >= N_CAND)
            continue;
        size_t last = nc[k] < N_CAND ? nc[k] : N_CAND - 1;
        memmove(&cand[k][at + 1], &cand[k][at], (last - at) * sizeof(long));
        cand[k][at] = pids[i];
        if (nc[k] < N_CAND)
            nc[k]++;
    }
    gpc_buf_free(&e);
    long pid = nc[0] ? cand[0][0] : nc[1] ? cand[1][0] : -1;
    char cwd[PATH_MAX], link[64];
    snprintf(link, sizeof(link), "/proc/%ld/cwd", pid);
    ssize_t cl = pid < 0 ? -1 : readlink(link, cwd, sizeof(cwd) - 1);
    if (cl <= 0 && snprintf(cwd, sizeof(cwd), "%s", dir) >= (int)sizeof(cwd))
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
    if (cl > 0)
        cwd[cl] = '\0';
    char node_env[PATH_MAX];
    if (join(node_env, sizeof(node_env), dir, "node.env") != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
    gpc_buf f;
    gpc_buf_init(&f, 1u << 16);
    /* the shell's own bookkeeping (_, SHLVL, PWD, OLDPWD) is not the job's */
    int rc = gpc_buf_adds(&f, "# the job's environment on this node (gpuctl ssh), read from "
                              "the first of its\n# processes still there when the shell starts: "
                              "no value is kept here\ngpuctl_p=\nfor gpuctl_c in", err);
    for (int k = 0; !rc && k < 2; k++)
        for (size_t i = 0; !rc && i < nc[k]; i++)
            rc = gpc_buf_addf(&f, err, " %ld", cand[k][i]);
    if (!rc)
        rc = gpc_buf_adds(&f, "; do\n", err);
    if (!rc)
        rc = gpc_buf_addf(&f, err,
                          "  [ -r /proc/$gpuctl_c/environ ] && { gpuctl_p=$gpuctl_c; break; }\n"
                          "done\n"
                          "unset gpuctl_c\n"
                          "if [ -n \"$gpuctl_p\" ]; then\n"
                          "  while IFS= read -r -d '' gpuctl_kv; do\n"
                          "    case ${gpuctl_kv%%%%=*} in _ | SHLVL | PWD | OLDPWD) continue ;; esac\n"
                          "    [[ ${gpuctl_kv%%%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && "
                          "export \"$gpuctl_kv\"\n"
                          "  done </proc/$gpuctl_p/environ\n"
                          "  unset gpuctl_kv\n"
                          "  cd -- \"$(readlink /proc/$gpuctl_p/cwd 2>/dev/null || echo ");
    if (!rc)
        rc = gpc_shell_quote(&f, cwd, err);
    /* between jobs (lifecycle.idle_timeout): the node's wiring the
     * bootstrap keeps in node.env (no job env, no secret) */
    if (!rc)
        rc = gpc_buf_adds(&f, ")\"\nelif [ -r ", err);
    if (!rc)
        rc = gpc_shell_quote(&f, node_env, err);
    if (!rc)
        rc = gpc_buf_adds(&f, " ]; then\n  . ", err);
    if (!rc)
        rc = gpc_shell_quote(&f, node_env, err);
    if (!rc)
        rc = gpc_buf_adds(&f, "\n  cd -- \"${GPUCTL_WORKDIR:-$GPUCTL_HOME}\"\nelse\n"
                              "  echo \"gpuctl: node runs no process of its job and has no "
                              "node.env (yet)\" >&2\n  false\nfi && unset gpuctl_p\n", err);
    if (!rc && join(env_path, size, dir, "shell.env") != 0)
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
    if (!rc)
        rc = gpc_write_file_atomic(env_path, f.data, f.len, 0600, err);
    gpc_buf_free(&f);
    return rc;
}

/*
 * A shell on a local node: bash in the job's working directory with the
 * job's environment (write_shell_env).  A command runs as
 * `bash -lc '. ENV && eval "$2"' gpuctl-ssh ENV CMD` (the login profile
 * first, then the job's variables, which win); a shell at a terminal
 * (tty) is `bash --rcfile RC -i`, RC reading ~/.bashrc and then the job's
 * environment; without a terminal, bash reads the commands on its
 * standard input (bash -s), as ssh's login shell would.
 */
static int local_shell_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                            uint32_t rank, const char *const *cmd, size_t n_cmd, int tty,
                            char ***argv, gpc_error *err)
{
    (void)cl;
    (void)rank;
    (void)tty;
    local_ctx *c = ctx;
    char dir[PATH_MAX], env[PATH_MAX], rcfile[PATH_MAX];
    int rc = node_dir(c, node->provider_id, dir, sizeof(dir), err);
    if (!rc)
        rc = write_shell_env(dir, node->provider_id, env, sizeof(env), err);
    gpc_argv a = {0};
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    if (!rc && (n_cmd || !tty)) {
        /* without a terminal and a command: the commands on stdin */
        rc = gpc_shell_join(&b, cmd, n_cmd, err);
        const char *words[] = {"/bin/bash", "-lc",
                               n_cmd ? ". \"$1\" && eval \"$2\"" : ". \"$1\" && exec /bin/bash -s",
                               "gpuctl-ssh", env, gpc_buf_str(&b)};
        for (size_t i = 0; !rc && i < (n_cmd ? 6u : 5u); i++)
            rc = gpc_argv_add(&a, words[i], err);
    } else if (!rc) {
        rc = gpc_buf_adds(&b, "[ -r ~/.bashrc ] && . ~/.bashrc\n. ", err);
        if (!rc)
            rc = gpc_shell_quote(&b, env, err);
        if (!rc)
            rc = gpc_buf_adds(&b, "\n", err);
        if (!rc && join(rcfile, sizeof(rcfile), dir, "shell.rc") != 0)
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "local: path too long");
        if (!rc)
            rc = gpc_write_file_atomic(rcfile, b.data, b.len, 0600, err);
        const char *words[] = {"/bin/bash", "--rcfile", rcfile, "-i"};
        for (size_t i = 0; !rc && i < 4; i++)
            rc = gpc_argv_add(&a, words[i], err);
    }
    if (!rc)
        rc = gpc_argv_take(&a, argv, err);
    gpc_argv_reset(&a);
    gpc_buf_free(&b);
    return rc;
}

/* The table's entry points: one machine, so the region plays no part. */
static int local_find_in(void *ctx, const char *region, const char *token,
                         gpc_node_status *out, gpc_error *err)
{
    (void)region;
    return local_find(ctx, token, out, err);
}

/* A local node is its directory: the record's provider id names it. */
static int local_describe_in(void *ctx, const gpc_node_ref *node, gpc_node_status *out,
                             gpc_error *err)
{
    return local_describe(ctx, node->provider_id, out, err);
}

static int local_delete_in(void *ctx, const gpc_node_ref *node, gpc_error *err)
{
    return local_delete(ctx, node->provider_id, err);
}

/* User-data is a file on this machine: no transport limit, no encoding.
 * The node's facts come from its environment (node.sh). */
extern const unsigned char gpc_node_script_local[];
static const gpc_userdata_rules local_userdata = {
    .provider = "local", .max_raw = 0, .gzip_ok = 0, .base64 = 0,
    .node_script = (const char *)gpc_node_script_local,
};

const gpc_provider gpc_provider_local = {
    .name = "local",
    .summary = "nodes are process groups on this machine (the default; also your own GPU server)",
    .caps = GPC_CAP_FREE | GPC_CAP_OWN_OFFERS | GPC_CAP_SHARED_FILES | GPC_CAP_SECRETS,
    .userdata = &local_userdata,
    .open = local_open,
    .close = local_close,
    .list_offers = local_list_offers,
    .pick_rdzv_port = local_pick_rdzv_port,
    .create_node = local_create,
    .find_node = local_find_in,
    .describe_node = local_describe_in,
    .delete_node = local_delete_in,
    .read_log = local_read_log,
    .shell_argv = local_shell_argv,
    .store_url = local_store_url,
    .store_push = local_store_push,
    .store_pull = local_store_pull,
    .store_list = local_store_list,
    .store_remove = local_store_remove,
    .store_delete = local_store_delete,
};
