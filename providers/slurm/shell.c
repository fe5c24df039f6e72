/*
 * shell.c - shell access to a node of a Slurm job (`gpuctl ssh`, the
 * seam's shell_argv): a step of the cluster's own job on the node of that
 * rank, `srun --jobid=JOB --overlap --nodes=1 --ntasks=1 --relative=RANK
 * --export=NONE [--pty] /bin/bash -l` (or `/bin/bash -lc CMD`), run where
 * gpuctl runs the Slurm commands: here (login = local), or on the login
 * node through the system's ssh (exec.c), with the user's ssh config.
 *
 * --relative=RANK: the node at that index of the allocation, which is the
 * node's SLURM_NODEID and so its rank (node.sh).  --overlap: the step
 * shares the resources the job's own step holds.  --export=NONE: no
 * variable of the environment srun starts in reaches the node (gpuctl's
 * credentials stay here, as exec.c keeps them from sbatch); the login
 * shell makes the node's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/shell.h"
#include "slurm/slurm_internal.h"

int slurm_shell_words(long job, uint32_t rank, const char *home, const char *const *cmd,
                      size_t n_cmd, int tty, gpc_argv *a, size_t *home_at, gpc_error *err)
{
    int rc = gpc_argv_add(a, "srun", err);
    if (!rc)
        rc = gpc_argv_addf(a, err, "--jobid=%ld", job);
    const char *const fixed[] = {"--overlap", "--nodes=1", "--ntasks=1"};
    for (size_t i = 0; !rc && i < 3; i++)
        rc = gpc_argv_add(a, fixed[i], err);
    if (!rc)
        rc = gpc_argv_addf(a, err, "--relative=%u", rank);
    if (!rc)
        rc = gpc_argv_add(a, "--export=NONE", err);
    if (!rc && tty)
        rc = gpc_argv_add(a, "--pty", err);
    const char *const sh[] = {"/bin/bash", "-c", SLURM_SHELL_HOME_SCRIPT, "gpuctl"};
    for (size_t i = 0; !rc && i < 4; i++)
        rc = gpc_argv_add(a, sh[i], err);
    *home_at = a->n;
    if (!rc)
        rc = gpc_argv_add(a, home, err);
    if (!rc && n_cmd) {
        gpc_buf b;
        gpc_buf_init(&b, 1u << 20);
        rc = gpc_argv_add(a, "-c", err);
        if (!rc)
            rc = gpc_shell_join(&b, cmd, n_cmd, err);
        if (!rc)
            rc = gpc_argv_add(a, gpc_buf_str(&b), err);
        gpc_buf_free(&b);
    }
    return rc;
}

int slurm_shell_argv(void *ctx, const gpc_cluster_ref *cl, const gpc_node_ref *node,
                     uint32_t rank, const char *const *cmd, size_t n_cmd, int tty,
                     char ***argv, gpc_error *err)
{
    (void)cl;
    slurm_ctx *c = ctx;
    /* the node's provider id: "SITE/JOB/RANK" (job.c) */
    const char *id = node->provider_id, *s1 = strchr(id, '/');
    char site[48];
    char *end = NULL;
    errno = 0;
    long job = s1 ? strtol(s1 + 1, &end, 10) : 0;
    if (!s1 || s1 == id || (size_t)(s1 - id) >= sizeof(site) || errno || job <= 0 ||
        !end || *end != '/')
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: invalid node id '%s'", id);
    snprintf(site, sizeof(site), "%.*s", (int)(s1 - id), id);
    const slurm_site *s = slurm_site_find(c, site);
    if (!s)
        return gpc_fail(err, GPC_ERR_PROVIDER, "slurm: node %s is on Slurm cluster '%s', which "
                        "the config file no longer has", id, site);
    gpc_argv a = {0}, words = {0};
    gpc_buf home;
    gpc_buf_init(&home, 8192);
    size_t home_at = 0;
    int rc = 0;
    if (s->local) {
        /* the node's directory as the batch script named it: a job_dir
         * under ~/ is under the HOME that sbatch's shell had, gpuctl's own
         * (exec.c keeps HOME) */
        const char *h = getenv("HOME");
        if (strncmp(s->job_dir, "~/", 2) == 0)
            rc = gpc_buf_addf(&home, err, "%s/%s", h ? h : "", s->job_dir + 2);
        else
            rc = gpc_buf_adds(&home, s->job_dir, err);
        if (!rc)
            rc = gpc_buf_addf(&home, err, "/job-%ld/node-%u", job, rank);
        if (!rc)
            rc = slurm_shell_words(job, rank, gpc_buf_str(&home), cmd, n_cmd, tty, &a, &home_at,
                                   err);
    } else {
        /* on the login node: its shell reads the srun line, each word
         * quoted, the node's directory in the form the batch script has
         * it (its shell expands "$HOME") */
        rc = slurm_shell_words(job, rank, "", cmd, n_cmd, tty, &words, &home_at, err);
        gpc_buf line;
        gpc_buf_init(&line, 1u << 20);
        for (size_t i = 0; !rc && i < words.n; i++) {
            rc = i ? gpc_buf_adds(&line, " ", err) : 0;
            if (!rc && i == home_at) {
                rc = slurm_dir_word(&line, s, err);
                if (!rc)
                    rc = gpc_buf_addf(&line, err, "/job-%ld/node-%u", job, rank);
            } else if (!rc) {
                rc = gpc_shell_quote(&line, words.v[i], err);
            }
        }
        const char *const pre[] = {"ssh", tty ? "-t" : "-T", "--", s->login};
        for (size_t i = 0; !rc && i < 4; i++)
            rc = gpc_argv_add(&a, pre[i], err);
        if (!rc)
            rc = gpc_argv_add(&a, gpc_buf_str(&line), err);
        gpc_buf_free(&line);
    }
    gpc_buf_free(&home);
    if (!rc)
        rc = gpc_argv_take(&a, argv, err);
    gpc_argv_reset(&a);
    gpc_argv_reset(&words);
    return rc;
}
