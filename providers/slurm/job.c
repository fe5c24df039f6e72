/*
 * job.c - one sbatch allocation per gpuctl cluster (slurm_internal.h).
 *
 * The batch script writes the provider-neutral bootstrap into the job's
 * directory on the shared filesystem (JOB_DIR/job-ID) and runs it on every
 * node with one `srun --ntasks-per-node=1` step; each node's bootstrap
 * keeps its files (node.log, phase, exit_status) in JOB_DIR/job-ID/node-R,
 * R being SLURM_NODEID, its rank.  sbatch's own output goes to
 * JOB_DIR/slurm-ID.out.
 *
 * A node's provider id is "SITE/JOB/RANK"; the cluster's provider data is
 * {"site": SITE, "job": JOB}.  The job is named "gpuctl-TOKEN" after the
 * group's client token, so that a create repeated after a crash finds it.
 *
 * Status comes from `scontrol show job -o` (one line of Key=Value words;
 * Slurm's JSON output changes shape between versions), the allocation's
 * nodes from `scontrol show node -o`, and what each node's bootstrap
 * recorded; a job Slurm has forgotten (MinJobAge) from `sacct -P` where
 * the site keeps accounting, else from the files alone.
 *
 * The spec's secrets (GPC_CAP_SECRETS) never enter the batch script nor
 * sbatch's environment, which slurmctld keeps and shows: before sbatch,
 * they go through the standard input of a command on the login node into
 * JOB_DIR/.secrets/gpuctl-TOKEN.env (the directory 0700, the file 0600:
 * `export NAME=VALUE` lines quoted for the shell).  The batch script reads
 * that file into its own environment and deletes it before anything else,
 * and its srun step hands that environment to every node's bootstrap
 * (--export=ALL: srun sends it to the nodes' slurmd, slurmctld keeps no
 * step's environment); the bootstrap keeps them out of node.env and a
 * later job takes them from the bootstrap's own environment
 * (templates/bootstrap.sh, gpuctl_secrets_load).  A job cancelled
 * before it started leaves the file: destroy removes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "gpuctl/render.h"
#include "gpuctl/util.h"
#include "slurm/slurm_internal.h"

/* Seconds a command on the login node may take. */
#define CMD_TIMEOUT_S 60
/* Most bytes of a node's log returned by one read_log. */
#define LOG_CHUNK_MAX (1 << 20)

/* ---- small helpers ---- */

int slurm_dir_word(gpc_buf *b, const slurm_site *s, gpc_error *err)
{
    if (strncmp(s->job_dir, "~/", 2) == 0) {
        int rc = gpc_buf_adds(b, "\"$HOME\"/", err);
        return rc ? rc : gpc_shell_quote(b, s->job_dir + 2, err);
    }
    return gpc_shell_quote(b, s->job_dir, err);
}

/* The value of `key` in a line of Key=Value words (scontrol -o), into out;
 * 1 when found. */
static int kv_get(const char *line, const char *key, char *out, size_t size)
{
    size_t vl = 0;
    const char *v = slurm_kv_find(line, strlen(line), key, &vl);
    snprintf(out, size, "%.*s", v ? (int)vl : 0, v ? v : "");
    return v != NULL;
}

/* "SITE/JOB/RANK" into its parts; 0 when it is of that form. */
static int parse_id(const char *id, char *site, size_t ssize, long *job, unsigned *rank)
{
    const char *a = strchr(id, '/');
    const char *b = a ? strchr(a + 1, '/') : NULL;
    if (!a || !b || a == id || (size_t)(a - id) >= ssize)
        return -1;
    char *end;
    errno = 0;
    long j = strtol(a + 1, &end, 10);
    if (errno || end != b || j <= 0)
        return -1;
    unsigned long r = strtoul(b + 1, &end, 10);
    if (*end || end == b + 1 || r > 65535)
        return -1;
    snprintf(site, ssize, "%.*s", (int)(a - id), id);
    *job = j;
    *rank = (unsigned)r;
    return 0;
}

static int site_of(slurm_ctx *c, const char *name, const slurm_site **s, gpc_error *err)
{
    *s = slurm_site_find(c, name);
    if (!*s)
        return gpc_fail(err, GPC_ERR_USAGE, "slurm: no Slurm cluster '%s' in gpuctl's config "
                        "file (a [slurm \"%s\"] section; docs/providers/slurm.md)", name, name);
    return 0;
}

/* The job whose name is "gpuctl-TOKEN", the newest when several: 0 when
 * Slurm knows none. */
static int job_by_name(const slurm_site *s, const char *token, long *job, gpc_error *err)
{
    gpc_buf cmd;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    char name[128];
    snprintf(name, sizeof(name), "gpuctl-%s", token);
    int rc = gpc_buf_adds(&cmd, "squeue -h -t all -o %i -n ", err);
    if (!rc)
        rc = gpc_shell_quote(&cmd, name, err);
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        rc = slurm_exec_ok(s, "squeue", gpc_buf_str(&cmd), NULL, 0, CMD_TIMEOUT_S, &r, err);
    *job = 0;
    if (!rc) {
        for (const char *p = gpc_buf_str(&r.out); *p; p += strcspn(p, "\n"), p += *p == '\n') {
            long j = strtol(p, NULL, 10);
            if (j > *job)
                *job = j;
        }
    }
    slurm_result_free(&r);
    gpc_buf_free(&cmd);
    return rc;
}

/* ---- secrets ---- */

/* The file that carries the secrets of the job named gpuctl-TOKEN to its
 * batch script: JOB_DIR/.secrets/gpuctl-TOKEN.env, as a word for the login
 * node's shell.  A token of other characters than [A-Za-z0-9._-] is refused
 * (it names a file). */
static int secrets_path_word(const slurm_site *s, const char *token, gpc_buf *b,
                             gpc_error *err)
{
    if (!token[0] || strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789._-") != strlen(token))
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: the token '%.80s' cannot name the "
                        "secrets file", token);
    int rc = slurm_dir_word(b, s, err);
    return rc ? rc : gpc_buf_addf(b, err, "/.secrets/gpuctl-%s.env", token);
}

/* The batch script's lines that take the secrets: read the file into the
 * script's environment and delete it.  A missing file fails the job before
 * any node starts. */
static int secrets_script(const slurm_site *s, const char *token, gpc_buf *b, gpc_error *err)
{
    int rc = gpc_buf_adds(b, "# the spec's secrets: read from the file gpuctl wrote, which is\n"
                             "# deleted at once; srun hands them to every node's bootstrap\n"
                             "gpuctl_sec=", err);
    if (!rc)
        rc = secrets_path_word(s, token, b, err);
    if (!rc)
        rc = gpc_buf_adds(b, "\nif [ ! -r \"$gpuctl_sec\" ]; then\n"
                             "  echo \"gpuctl: the secrets file $gpuctl_sec is missing: the job "
                             "was started again, or the file removed; run gpuctl apply again\" >&2\n"
                             "  exit 1\n"
                             "fi\n"
                             ". \"$gpuctl_sec\"\n"
                             "rm -f \"$gpuctl_sec\"\n", err);
    return rc;
}

/* Write the secrets into their file on the login node, through the
 * standard input of the command (never its command line). */
static int secrets_write(const slurm_site *s, const gpc_node_request *req, const char *token,
                         gpc_error *err)
{
    gpc_buf cmd, body;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    gpc_buf_init(&body, 16u << 20);
    int rc = gpc_buf_adds(&cmd, "umask 077 && mkdir -p ", err);
    if (!rc)
        rc = slurm_dir_word(&cmd, s, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, "/.secrets && chmod 700 ", err);
    if (!rc)
        rc = slurm_dir_word(&cmd, s, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, "/.secrets && f=", err);
    if (!rc)
        rc = secrets_path_word(s, token, &cmd, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, " && cat > \"$f.tmp\" && mv -f \"$f.tmp\" \"$f\"", err);
    for (size_t i = 0; !rc && i < req->n_secrets; i++) {
        rc = gpc_buf_addf(&body, err, "export %s=", req->secrets[i].name);
        if (!rc)
            rc = gpc_shell_quote(&body, req->secrets[i].value, err);
        if (!rc)
            rc = gpc_buf_adds(&body, "\n", err);
    }
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        rc = slurm_exec_ok(s, "writing the secrets file", gpc_buf_str(&cmd), body.data, body.len,
                           CMD_TIMEOUT_S, &r, err);
    slurm_result_free(&r);
    if (body.data)
        OPENSSL_cleanse(body.data, body.len);
    gpc_buf_free(&body);
    gpc_buf_free(&cmd);
    return rc;
}

/* Remove the secrets file of the job named gpuctl-TOKEN, if it is there
 * (a job that never started, an sbatch that failed). */
static void secrets_remove(const slurm_site *s, const char *token)
{
    gpc_buf cmd;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    gpc_error e;
    gpc_error_clear(&e);
    int rc = gpc_buf_adds(&cmd, "rm -f ", &e);
    if (!rc)
        rc = secrets_path_word(s, token, &cmd, &e);
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        slurm_exec(s, gpc_buf_str(&cmd), NULL, 0, CMD_TIMEOUT_S, &r, &e);
    slurm_result_free(&r);
    gpc_buf_free(&cmd);
}

/* ---- submit ---- */

/* The batch script: the bootstrap written into the job's directory, then
 * one task per node running it with GPUCTL_HOME set to the node's own
 * directory. */
static int batch_script(const slurm_site *s, const gpc_node_request *req, const char *token,
                        gpc_buf *b, gpc_error *err)
{
    const gpc_payload *p = req->payload;
    char delim[64];
    snprintf(delim, sizeof(delim), "GPUCTL_BOOTSTRAP_%.16s", req->cluster_uid);
    for (char *d = delim; *d; d++)
        if (!((*d >= 'A' && *d <= 'Z') || (*d >= 'a' && *d <= 'z') || (*d >= '0' && *d <= '9')))
            *d = '_';
    if (strstr(p->script, delim))
        return gpc_fail(err, GPC_ERR_RENDER, "slurm: the bootstrap contains the line %s that "
                        "ends it in the batch script", delim);
    int rc = gpc_buf_addf(b, err, "#!/bin/bash\n"
                          "# gpuctl: cluster %s (%s), %u node(s); the bootstrap of every node,\n"
                          "# run once per node by srun.  Written by gpuctl apply.\n"
                          "set -eu\n"
                          "umask 077\n"
                          "gpuctl_dir=", req->cluster, req->cluster_uid, req->nnodes);
    if (!rc)
        rc = slurm_dir_word(b, s, err);
    if (!rc)
        rc = gpc_buf_addf(b, err, "/job-\"$SLURM_JOB_ID\"\n"
                          "mkdir -p \"$gpuctl_dir\"\n");
    if (!rc && req->n_secrets)
        rc = secrets_script(s, token, b, err);
    if (!rc)
        rc = gpc_buf_addf(b, err, "cat >\"$gpuctl_dir/bootstrap.sh\" <<'%s'\n", delim);
    if (!rc)
        rc = gpc_buf_add(b, p->script, p->script_len, err);
    if (!rc && (p->script_len == 0 || p->script[p->script_len - 1] != '\n'))
        rc = gpc_buf_adds(b, "\n", err);
    if (!rc)
        rc = gpc_buf_addf(b, err, "%s\n"
                          "# One task per node; a task that fails ends the step, so that no\n"
                          "# node waits for a rank that is gone.\n"
                          "exec srun --export=ALL --nodes=\"$SLURM_JOB_NUM_NODES\" "
                          "--ntasks-per-node=1 --kill-on-bad-exit=1 /bin/bash -c "
                          "'GPUCTL_HOME=\"$1/node-$SLURM_NODEID\"; export GPUCTL_HOME; "
                          "exec /bin/bash \"$1/bootstrap.sh\"' gpuctl \"$gpuctl_dir\"\n", delim);
    return rc;
}

/* Add " --NAME=VALUE" (quoted) to the command. */
static int opt(gpc_buf *cmd, const char *name, const char *value, gpc_error *err)
{
    int rc = gpc_buf_addf(cmd, err, " --%s=", name);
    return rc ? rc : gpc_shell_quote(cmd, value, err);
}

static int sbatch_command(const slurm_site *s, const gpc_node_request *req, const char *token,
                          gpc_buf *cmd, gpc_error *err)
{
    const gpc_offer *of = req->offer;
    char v[128];
    /* the job's files (its env among them) are the user's alone */
    int rc = gpc_buf_adds(cmd, "umask 077 && mkdir -p ", err);
    if (!rc)
        rc = slurm_dir_word(cmd, s, err);
    if (!rc)
        rc = gpc_buf_addf(cmd, err, " && sbatch --parsable --no-requeue --exclusive --mem=0 "
                          "--ntasks-per-node=1 --nodes=%u", req->nnodes);
    snprintf(v, sizeof(v), "gpuctl-%s", token);
    if (!rc)
        rc = opt(cmd, "job-name", v, err);
    if (!rc && of->zone[0])
        rc = opt(cmd, "partition", of->zone, err);
    if (!rc && s->account[0])
        rc = opt(cmd, "account", s->account, err);
    if (!rc && s->qos[0])
        rc = opt(cmd, "qos", s->qos, err);
    if (!rc && of->gpu_count) {
        /* the GRES type as the record has it: the shape's part before 'x' */
        const char *x = strchr(of->instance_type, 'x');
        const char *dash = x ? strchr(x, '-') : NULL;
        if (x && dash && x > of->instance_type)
            snprintf(v, sizeof(v), "gpu:%.*s:%u", (int)(dash - x - 1), x + 1, of->gpu_count);
        else
            snprintf(v, sizeof(v), "gpu:%u", of->gpu_count);
        rc = opt(cmd, "gres", v, err);
    }
    uint64_t max_s = req->spec ? req->spec->lifecycle.max_duration_s : 0;
    if (!rc && max_s) {
        /* Slurm's limit is max_duration itself (whole minutes), which the
         * offers held against the partition's MaxTime: a longer one would
         * pend forever (PartitionTimeLimit).  Whichever of the bootstrap
         * and Slurm stops the job first, it ends as 124. */
        snprintf(v, sizeof(v), "%" PRIu64, (max_s + 59) / 60);
        rc = opt(cmd, "time", v, err);
    }
    if (!rc) {
        rc = gpc_buf_adds(cmd, " --chdir=", err);
        if (!rc)
            rc = slurm_dir_word(cmd, s, err);
        if (!rc)
            rc = gpc_buf_adds(cmd, " --output=", err);
        if (!rc)
            rc = slurm_dir_word(cmd, s, err);
        if (!rc)
            rc = gpc_buf_adds(cmd, "/slurm-%j.out", err);
    }
    return rc;
}

static void node_out(const char *site, long job, uint32_t rank, gpc_node_status *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->provider_id, sizeof(o->provider_id), "%s/%ld/%u", site, job, rank);
    o->phase = GPC_PHASE_BOOTING;
    o->exit_code = -1;
    snprintf(o->detail, sizeof(o->detail), "Slurm job %ld submitted", job);
    snprintf(o->data, sizeof(o->data), "{\"site\":\"%s\",\"job\":%ld,\"rank\":%u}", site, job,
             rank);
}

int slurm_create_nodes(void *ctx, const gpc_node_request *reqs, size_t n, gpc_node_status *out,
                       gpc_error *err)
{
    slurm_ctx *c = ctx;
    const slurm_site *s;
    int rc = site_of(c, reqs[0].offer->region, &s, err);
    if (rc)
        return rc;
    /* the group's token: the requests' token without "/i" */
    char token[80];
    snprintf(token, sizeof(token), "%.*s", (int)strcspn(reqs[0].client_token, "/"),
             reqs[0].client_token);
    long job = 0;
    rc = job_by_name(s, token, &job, err);
    gpc_buf cmd, script;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    gpc_buf_init(&script, GPC_BUF_SCRIPT_MAX + 65536);
    int wrote = 0;
    if (!rc && !job) {
        rc = sbatch_command(s, &reqs[0], token, &cmd, err);
        if (!rc)
            rc = batch_script(s, &reqs[0], token, &script, err);
        if (!rc && reqs[0].n_secrets) {
            rc = secrets_write(s, &reqs[0], token, err);
            wrote = !rc;
        }
        slurm_result r;
        if (!rc) {
            gpc_debug(c->log, "slurm: %s", gpc_buf_str(&cmd));
            rc = slurm_exec_ok(s, "sbatch", gpc_buf_str(&cmd), script.data, script.len,
                               CMD_TIMEOUT_S, &r, err);
            /* "12345" or "12345;cluster" */
            if (!rc && (job = strtol(gpc_buf_str(&r.out), NULL, 10)) <= 0)
                rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: sbatch on Slurm cluster '%s' "
                              "printed no job id: '%.100s'", s->name, gpc_buf_str(&r.out));
            slurm_result_free(&r);
        }
    }
    gpc_buf_free(&cmd);
    gpc_buf_free(&script);
    if (rc && wrote)
        secrets_remove(s, token); /* no job takes them */
    if (rc)
        return rc;
    if (reqs[0].ref && reqs[0].ref->data)
        snprintf(reqs[0].ref->data, GPC_PROVIDER_DATA_MAX, "{\"site\":\"%s\",\"job\":%ld}",
                 s->name, job);
    for (size_t i = 0; i < n; i++)
        node_out(s->name, job, reqs[i].rank, &out[i]);
    return 0;
}

/* ---- status ---- */

/* The job's status from the login node (slurm_job_view_parse reads it).
 * `hosts`: the allocation's node list as recorded while the job ran, or
 * "": Slurm drops a lost node from NodeList while the job completes, so
 * the ranks are mapped by what was recorded. */
static int job_view_get(const slurm_site *s, long job, const char *hosts, slurm_job_view *v,
                        gpc_error *err)
{
    gpc_buf cmd;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    int rc = gpc_buf_addf(&cmd, err, "j=%ld; rec=", job);
    if (!rc)
        rc = gpc_shell_quote(&cmd, hosts, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, "; d=", err);
    if (!rc)
        rc = slurm_dir_word(&cmd, s, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, "/job-$j\n"
                          "echo @job\n"
                          "if ! l=$(scontrol show job -o \"$j\" 2>&1); then\n"
                          "  case $l in\n"
                          "  *'Invalid job id'*) l='' ;;\n"
                          "  *) printf '@error %s\\n' \"$(printf '%s\\n' \"$l\" | head -n 1)\"; exit 0 ;;\n"
                          "  esac\n"
                          "fi\n"
                          "printf '%s\\n' \"$l\"\n"
                          "if [ -z \"$l\" ]; then echo @acct; "
                          "sacct -n -P -X -j \"$j\" -o State,ExitCode 2>/dev/null || true; fi\n"
                          "echo @nodes; nl=''\n"
                          "for w in $l; do case $w in NodeList=*) nl=${w#NodeList=} ;; esac; done\n"
                          "if [ -n \"$rec\" ]; then nl=$rec; fi\n"
                          "if [ -n \"$nl\" ] && [ \"$nl\" != '(null)' ]; then\n"
                          "  for h in $(scontrol show hostnames \"$nl\"); do "
                          "scontrol show node -o \"$h\" 2>/dev/null || echo \"NodeName=$h\"; done\n"
                          "fi\n"
                          "echo @files\n"
                          "for f in \"$d\"/node-*; do [ -d \"$f\" ] || continue; "
                          "printf '%s|%s|%s\\n' \"${f##*/node-}\" \"$(cat \"$f/phase\" 2>/dev/null)\" "
                          "\"$(cat \"$f/exit_status\" 2>/dev/null)\"; done\n", err);
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        rc = slurm_exec_ok(s, "scontrol show job", gpc_buf_str(&cmd), NULL, 0, CMD_TIMEOUT_S, &r,
                           err);
    gpc_buf_free(&cmd);
    if (!rc)
        slurm_job_view_parse(gpc_buf_str(&r.out), v);
    slurm_result_free(&r);
    /* Slurm did not answer (a controller that is down or slow, munge): no
     * word on the job, which is not "forgotten" */
    if (!rc && v->error[0]) {
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: cannot read Slurm job %ld on Slurm cluster "
                      "'%s': %s", job, s->name, v->error);
        err->remote.retryable = 1;
    }
    return rc;
}

void slurm_job_view_parse(const char *text, slurm_job_view *v)
{
    memset(v, 0, sizeof(*v));
    for (size_t i = 0; i < SLURM_JOB_NODES_MAX; i++)
        v->files[i].exit_status = -1;
    enum { NONE, JOB, ACCT, NODES, FILES } sect = NONE;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, "\n");
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        p += len + (p[len] == '\n');
        if (strncmp(line, "@error ", 7) == 0) {
            snprintf(v->error, sizeof(v->error), "%.255s", line + 7);
            break;
        } else if (strcmp(line, "@job") == 0) {
            sect = JOB;
        } else if (strcmp(line, "@acct") == 0) {
            sect = ACCT;
        } else if (strcmp(line, "@nodes") == 0) {
            sect = NODES;
        } else if (strcmp(line, "@files") == 0) {
            sect = FILES;
        } else if (sect == JOB && line[0]) {
            char ec[32];
            v->known = kv_get(line, "JobState", v->state, sizeof(v->state));
            kv_get(line, "Reason", v->reason, sizeof(v->reason));
            kv_get(line, "NodeList", v->nodelist, sizeof(v->nodelist));
            if (kv_get(line, "ExitCode", ec, sizeof(ec)))
                sscanf(ec, "%d:%d", &v->exit_code, &v->exit_signal);
        } else if (sect == ACCT && line[0] && !v->known) {
            /* "COMPLETED|0:0", "CANCELLED by 0|0:15" */
            char st[32] = "";
            sscanf(line, "%31[^| ]", st);
            const char *bar = strchr(line, '|');
            if (st[0] && bar) {
                snprintf(v->state, sizeof(v->state), "%s", st);
                sscanf(bar + 1, "%d:%d", &v->exit_code, &v->exit_signal);
                v->known = 1;
            }
        } else if (sect == NODES && line[0] && v->n_nodes < SLURM_JOB_NODES_MAX) {
            kv_get(line, "NodeName", v->nodes[v->n_nodes].name, sizeof(v->nodes[0].name));
            kv_get(line, "NodeAddr", v->nodes[v->n_nodes].addr, sizeof(v->nodes[0].addr));
            kv_get(line, "State", v->nodes[v->n_nodes].state, sizeof(v->nodes[0].state));
            v->n_nodes++;
        } else if (sect == FILES && line[0]) {
            /* RANK|PHASE|EXIT_STATUS, either of the last two may be empty */
            char *end;
            unsigned long rank = strtoul(line, &end, 10);
            char *ex = *end == '|' ? strchr(end + 1, '|') : NULL;
            if (end != line && ex && rank < SLURM_JOB_NODES_MAX) {
                v->files[rank].seen = 1;
                snprintf(v->files[rank].phase, sizeof(v->files[rank].phase), "%.*s",
                         (int)(ex - end - 1), end + 1);
                if (ex[1])
                    v->files[rank].exit_status = atoi(ex + 1);
            }
        }
    }
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A Slurm node state that means the node is lost: DOWN, FAIL, or not
 * responding (scontrol's "+NOT_RESPONDING", sinfo's '*' after the
 * state). */
static int node_lost(const char *state)
{
    return strstr(state, "DOWN") || strstr(state, "FAIL") || strstr(state, "NOT_RESPONDING") ||
           strchr(state, '*');
}

void slurm_job_node_status(const char *site, long job, unsigned rank, const slurm_job_view *v,
                           gpc_node_status *o)
{
    node_out(site, job, rank, o);
    o->detail[0] = '\0';
    if (rank < v->n_nodes && v->nodes[rank].addr[0])
        snprintf(o->private_ip, sizeof(o->private_ip), "%s", v->nodes[rank].addr);
    const char *st = v->state;
    int file_exit = rank < SLURM_JOB_NODES_MAX ? v->files[rank].exit_status : -1;
    const char *file_phase = rank < SLURM_JOB_NODES_MAX ? v->files[rank].phase : "";
    /* a node lost ends the job (--no-requeue): COMPLETING for NodeDown
     * while Slurm stops the other nodes, then NODE_FAIL */
    int node_fail = starts(st, "NODE_FAIL") ||
                    (starts(st, "COMPLETING") && strcmp(v->reason, "NodeDown") == 0);
    /* Slurm's time limit: COMPLETING (TimeLimit) while it stops the nodes
     * (KillWait), then TIMEOUT */
    int time_limit = starts(st, "TIMEOUT") ||
                     (starts(st, "COMPLETING") && strcmp(v->reason, "TimeLimit") == 0);
    int terminal = v->known && !starts(st, "PENDING") && !starts(st, "RUNNING") &&
                   !starts(st, "CONFIGURING") && !starts(st, "COMPLETING") &&
                   !starts(st, "SUSPENDED") && !starts(st, "REQUEUE") && !starts(st, "RESIZING") &&
                   !starts(st, "STOPPED") && !starts(st, "SIGNALING") && !starts(st, "STAGE_OUT");
    if (!v->known) {
        /* forgotten by Slurm: what the node recorded, if anything */
        o->stopped = 1;
        if (file_exit >= 0) {
            o->phase = file_exit == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
            o->exit_code = file_exit;
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld is over", job);
        } else {
            o->phase = GPC_PHASE_TERMINATED;
            snprintf(o->detail, sizeof(o->detail), "Slurm no longer knows job %ld", job);
        }
        return;
    }
    if (!terminal && !node_fail && !time_limit) {
        if (file_exit >= 0) {
            o->phase = file_exit == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
            o->exit_code = file_exit;
        } else if (starts(st, "RUNNING") && strcmp(file_phase, "running") == 0) {
            o->phase = GPC_PHASE_RUNNING;
        } else {
            o->phase = GPC_PHASE_BOOTING;
        }
        if (file_exit >= 0)
            snprintf(o->detail, sizeof(o->detail), "the node's job exited %d (Slurm job %ld "
                     "still %s)", file_exit, job, st);
        else if (starts(st, "PENDING") && v->reason[0] && strcmp(v->reason, "None") != 0)
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld pending (%s)", job, v->reason);
        else if (starts(st, "PENDING"))
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld pending", job);
        else if (rank < v->n_nodes)
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld %s on %s (%s)", job, st,
                     v->nodes[rank].name, v->nodes[rank].addr);
        else
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld %s", job, st);
        return;
    }
    o->stopped = 1;
    if (node_fail) {
        /* the job ended because a node was lost: that node is lost, the
         * others were stopped (what their bootstrap recorded of the
         * SIGTERM is no exit status of the job's) */
        const char *gone = "";
        for (size_t k = 0; k < v->n_nodes && !gone[0]; k++)
            if (node_lost(v->nodes[k].state))
                gone = v->nodes[k].name;
        if (rank < v->n_nodes && node_lost(v->nodes[rank].state)) {
            o->phase = GPC_PHASE_FAILED;
            snprintf(o->detail, sizeof(o->detail), "lost: Slurm node %s is %s; Slurm job %ld "
                     "ended (NODE_FAIL)", v->nodes[rank].name, v->nodes[rank].state, job);
        } else {
            o->phase = GPC_PHASE_TERMINATED;
            snprintf(o->detail, sizeof(o->detail), "Slurm job %ld ended (NODE_FAIL)%s%s%s", job,
                     gone[0] ? ": Slurm node " : "", gone, gone[0] ? " was lost" : "");
        }
        o->exit_code = -1;
    } else if (starts(st, "PREEMPTED")) {
        o->phase = GPC_PHASE_PREEMPTED;
        snprintf(o->detail, sizeof(o->detail), "Slurm preempted job %ld", job);
    } else if (file_exit >= 0 && !starts(st, "CANCELLED") && !time_limit) {
        /* (what a bootstrap recorded of Slurm's SIGTERM, 143, is neither
         * a cancel's nor a time limit's exit status) */
        o->phase = file_exit == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
        o->exit_code = file_exit;
        snprintf(o->detail, sizeof(o->detail), "Slurm job %ld %s", job, st);
    } else if (starts(st, "COMPLETED")) {
        o->phase = GPC_PHASE_SUCCEEDED;
        o->exit_code = 0;
        snprintf(o->detail, sizeof(o->detail), "Slurm job %ld COMPLETED", job);
    } else if (starts(st, "CANCELLED")) {
        o->phase = GPC_PHASE_TERMINATED;
        snprintf(o->detail, sizeof(o->detail), "Slurm job %ld %s%s%s", job, st,
                 v->reason[0] && strcmp(v->reason, "None") ? ": " : "",
                 v->reason[0] && strcmp(v->reason, "None") ? v->reason : "");
    } else {
        /* FAILED, TIMEOUT, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE: the job's
         * own exit code, 124 for Slurm's time limit as for max_duration */
        o->phase = GPC_PHASE_FAILED;
        o->exit_code = time_limit ? 124 : v->exit_signal ? 128 + v->exit_signal : v->exit_code;
        snprintf(o->detail, sizeof(o->detail), "Slurm job %ld %s", job,
                 time_limit ? "TIMEOUT" : st);
    }
}

int slurm_describe_nodes(void *ctx, const gpc_cluster_ref *cl, const char *const *ids, size_t n,
                         gpc_node_status *out, gpc_error *err)
{
    (void)cl;
    slurm_ctx *c = ctx;
    slurm_job_view *v = malloc(sizeof(*v));
    if (!v)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    /* the cluster's data: {"site": S, "job": J, "hosts": "node[1-2]"} */
    char hosts[256] = "";
    cJSON *data = cl && cl->data ? cJSON_Parse(cl->data) : NULL;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(data, "hosts");
    if (cJSON_IsString(h))
        snprintf(hosts, sizeof(hosts), "%s", h->valuestring);
    long have = 0;
    char have_site[48] = "";
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        char site[48];
        long job;
        unsigned rank;
        const slurm_site *s = NULL;
        if (parse_id(ids[i], site, sizeof(site), &job, &rank) != 0) {
            rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: '%s' is not a node id of this provider "
                          "(SITE/JOB/RANK)", ids[i]);
            break;
        }
        rc = site_of(c, site, &s, err);
        if (!rc && (job != have || strcmp(site, have_site) != 0)) {
            rc = job_view_get(s, job, hosts, v, err);
            have = job;
            snprintf(have_site, sizeof(have_site), "%s", site);
            /* what the job runs on, while it runs on all of it */
            if (!rc && !hosts[0] && data && starts(v->state, "RUNNING") && v->nodelist[0] &&
                strcmp(v->nodelist, "(null)") != 0 && strlen(v->nodelist) < sizeof(hosts)) {
                snprintf(hosts, sizeof(hosts), "%s", v->nodelist);
                cJSON_DeleteItemFromObjectCaseSensitive(data, "hosts");
                cJSON_AddStringToObject(data, "hosts", hosts);
                char *text = cJSON_PrintUnformatted(data);
                if (text && strlen(text) < GPC_PROVIDER_DATA_MAX)
                    snprintf(cl->data, GPC_PROVIDER_DATA_MAX, "%s", text);
                free(text);
            }
        }
        if (!rc)
            slurm_job_node_status(s->name, job, rank, v, &out[i]);
    }
    free(v);
    cJSON_Delete(data);
    return rc;
}

int slurm_describe_node(void *ctx, const gpc_node_ref *node, gpc_node_status *out,
                        gpc_error *err)
{
    const char *ids[1] = {node->provider_id};
    return slurm_describe_nodes(ctx, NULL, ids, 1, out, err);
}

int slurm_find_node(void *ctx, const char *region, const char *client_token,
                    gpc_node_status *out, gpc_error *err)
{
    slurm_ctx *c = ctx;
    const slurm_site *s;
    int rc = site_of(c, region, &s, err);
    if (rc)
        return rc;
    char token[80];
    size_t tl = strcspn(client_token, "/");
    snprintf(token, sizeof(token), "%.*s", (int)tl, client_token);
    unsigned rank = client_token[tl] == '/' ? (unsigned)strtoul(client_token + tl + 1, NULL, 10)
                                            : 0;
    long job = 0;
    rc = job_by_name(s, token, &job, err);
    if (rc)
        return rc;
    if (!job)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "slurm: no job gpuctl-%s on Slurm cluster '%s'",
                        token, s->name);
    char id[128];
    snprintf(id, sizeof(id), "%s/%ld/%u", s->name, job, rank);
    const char *ids[1] = {id};
    return slurm_describe_nodes(ctx, NULL, ids, 1, out, err);
}

/* ---- cancel ---- */

int slurm_delete_node(void *ctx, const gpc_node_ref *node, gpc_error *err)
{
    slurm_ctx *c = ctx;
    char site[48];
    long job;
    unsigned rank;
    if (parse_id(node->provider_id, site, sizeof(site), &job, &rank) != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: '%s' is not a node id of this provider "
                        "(SITE/JOB/RANK)", node->provider_id);
    const slurm_site *s;
    int rc = site_of(c, site, &s, err);
    if (rc)
        return rc;
    /* scancel of a job that is over or forgotten is no error for gpuctl:
     * the nodes are released either way.  A job cancelled before it
     * started leaves its secrets file (gpuctl-TOKEN.env, after the job's
     * name): removed. */
    gpc_buf cmd;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    rc = gpc_buf_addf(&cmd, err, "n=$(squeue -h -t all -j %ld -o %%j 2>/dev/null); "
                      "scancel %ld 2>&1; s=$(squeue -h -j %ld -o %%T 2>/dev/null); "
                      "printf 'state=%%s\\n' \"$s\"; "
                      "case $n in */*) ;; gpuctl-?*) rm -f ", job, job, job);
    if (!rc)
        rc = slurm_dir_word(&cmd, s, err);
    if (!rc)
        rc = gpc_buf_adds(&cmd, "/.secrets/\"$n\".env ;; esac", err);
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        rc = slurm_exec(s, gpc_buf_str(&cmd), NULL, 0, CMD_TIMEOUT_S, &r, err);
    gpc_buf_free(&cmd);
    if (!rc && r.status != 0) {
        char l[256];
        snprintf(l, sizeof(l), "%.*s", (int)strcspn(gpc_buf_str(&r.out), "\n"),
                 gpc_buf_str(&r.out));
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: scancel %ld on Slurm cluster '%s' failed: "
                      "%s", job, s->name, l);
    }
    slurm_result_free(&r);
    gpc_debug(c->log, "slurm: cancelled job %ld on %s", job, s->name);
    return rc;
}

/* ---- logs ---- */

int slurm_read_log(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                   uint32_t node_rank, long offset, int may_wait, gpc_buf *out, long *next,
                   int *exit_status, gpc_error *err)
{
    (void)cl;
    (void)node_rank;
    (void)may_wait;
    slurm_ctx *c = ctx;
    char site[48];
    long job;
    unsigned rank;
    *next = offset;
    *exit_status = -1;
    const char *provider_id = node->provider_id;
    if (parse_id(provider_id, site, sizeof(site), &job, &rank) != 0)
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: '%s' is not a node id of this provider "
                        "(SITE/JOB/RANK)", provider_id);
    const slurm_site *s;
    int rc = site_of(c, site, &s, err);
    if (rc)
        return rc;
    /* the node's log; rank 0's is followed by sbatch's own output (srun's
     * errors, which come before any node.log when a step cannot start, or
     * after it when a task fails) */
    char files[128];
    snprintf(files, sizeof(files), "\"$d/job-%ld/node-%u/node.log\"", job, rank);
    if (rank == 0)
        snprintf(files + strlen(files), sizeof(files) - strlen(files), " \"$d/slurm-%ld.out\"",
                 job);
    /* first line: the node's exit status ("-" while it has none), read
     * before the bytes; then the bytes */
    gpc_buf cmd;
    gpc_buf_init(&cmd, GPC_BUF_LINE_MAX);
    rc = gpc_buf_adds(&cmd, "d=", err);
    if (!rc)
        rc = slurm_dir_word(&cmd, s, err);
    if (!rc)
        rc = gpc_buf_addf(&cmd, err, "; s=$(cat \"$d/job-%ld/node-%u/exit_status\" 2>/dev/null); "
                          "printf '%%s\\n' \"${s:--}\"; cat %s 2>/dev/null | tail -c +%ld | "
                          "head -c %d", job, rank, files, offset + 1, LOG_CHUNK_MAX);
    slurm_result r;
    memset(&r, 0, sizeof(r));
    if (!rc)
        rc = slurm_exec(s, gpc_buf_str(&cmd), NULL, 0, CMD_TIMEOUT_S, &r, err);
    gpc_buf_free(&cmd);
    if (rc) {
        slurm_result_free(&r);
        return rc;
    }
    const char *text = r.out.data ? r.out.data : "";
    const char *nl = memchr(text, '\n', r.out.len);
    if (!nl) {
        slurm_result_free(&r);
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: reading the log of node %s on Slurm "
                        "cluster '%s' gave no status line", provider_id, s->name);
    }
    char st[32];
    snprintf(st, sizeof(st), "%.*s", (int)(nl - text) < 31 ? (int)(nl - text) : 31, text);
    char *end;
    long v = strtol(st, &end, 10);
    if (end != st && !*end && v >= 0 && v <= 255)
        *exit_status = (int)v;
    size_t len = r.out.len - (size_t)(nl + 1 - text);
    rc = gpc_buf_add(out, nl + 1, len, err);
    if (!rc)
        *next = offset + (long)len;
    slurm_result_free(&r);
    return rc;
}
