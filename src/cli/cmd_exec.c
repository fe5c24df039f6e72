/*
 * cmd_exec.c - `gpuctl exec NAME [-f FILE | -- CMD...]`: a new job on every
 * node of a live cluster, queued after the job running there, with the
 * same rendezvous wiring (the engine's gpc_cluster_exec, exec.c).  With
 * -- CMD, the words joined by spaces are the run command (the latest job
 * env stays, no setup); with -f, the spec's run, env and setup, refused
 * when its other fields differ from the cluster's (that is `apply`'s).
 * The exit status is the job's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gpuctl/buf.h"
#include "gpuctl/plan.h"
#include "gpuctl/render.h"
#include "gpuctl/shell.h"

const gpc_option gpc_exec_options[] = {
    {"file", 'f', "FILE", 'f', "run the spec's run, env and setup (its other fields must be "
                               "the cluster's)"},
    {NULL, 0, NULL, 0, NULL}
};

static int exec_opt(int opt, const char *arg, void *ud)
{
    const char **file = ud;
    if (opt != 'f')
        return -1;
    if (*file)
        return GPC_OPT_TWICE;
    *file = arg;
    return 0;
}

/* The spec's fields other than the job's must be the cluster's. */
static int same_shape(gpc_session *s, const char *name, const gpc_spec *spec, const char *file,
                      gpc_error *err)
{
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    int rc = gpc_cluster_get(s->st, name, &c, err);
    gpc_spec_change *ch = NULL;
    size_t n = 0;
    if (!rc)
        rc = gpc_spec_diff(c.spec_json, spec, &ch, &n, err);
    if (!rc && gpc_spec_changes_shape(ch, n)) {
        gpc_buf b;
        gpc_buf_init(&b, GPC_ERROR_MSG_MAX);
        for (size_t i = 0; i < n; i++)
            if (!ch[i].job)
                gpc_buf_addf(&b, NULL, "%s%s: %s -> %s", b.len ? "; " : "", ch[i].field,
                             ch[i].old_value, ch[i].new_value);
        rc = gpc_fail(err, GPC_ERR_USAGE, "the spec changes cluster %s itself (%s), not only "
                      "its job, and exec runs jobs on the nodes there are: gpuctl apply -f %s "
                      "changes them (gpuctl plan -f %s shows how)", name, gpc_buf_str(&b),
                      file, file);
        gpc_buf_free(&b);
    }
    gpc_spec_changes_free(ch, n);
    gpc_cluster_rec_free(&c);
    return rc;
}

int gpc_cmd_exec(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    const char *file = NULL;
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, exec_opt, &file, &done);
    if (done)
        return rc;
    const char *name = NULL;
    rc = gpc_node_command_name(o, c, argc, argv, "job's", &name);
    if (rc)
        return rc;
    const char *const *cmd = (const char *const *)argv + optind + 1;
    size_t n_cmd = (size_t)(argc - optind - 1);
    if (file && n_cmd)
        return gpc_usage_error(o, c, "give either -f FILE or -- CMD, not both%s", "");
    if (!file && !n_cmd)
        return gpc_usage_error(o, c, "missing -- CMD or -f FILE%s", "");

    gpc_error err;
    gpc_error_clear(&err);
    gpc_spec *spec = NULL;
    gpc_buf run;
    gpc_buf_init(&run, 1u << 20);
    gpc_job_def job;
    memset(&job, 0, sizeof(job));
    if (file) {
        rc = gpc_spec_load_file(file, &spec, &err);
        if (!rc && strcmp(spec->name, name) != 0)
            rc = gpc_fail(&err, GPC_ERR_USAGE, "%s is the spec of cluster %s, not %s", file,
                          spec->name, name);
        if (!rc) {
            job.run = spec->run.command;
            job.setup = spec->setup;
            job.env = spec->env;
            job.n_env = spec->n_env;
            job.with_env = 1;
        }
    } else {
        rc = gpc_shell_join(&run, cmd, n_cmd, &err);
        job.run = gpc_buf_str(&run);
    }
    gpc_session s;
    int status = 0;
    o->cfg.state_reads_only = 0; /* the refresh records the phases it sees */
    if (!rc)
        rc = gpc_session_open(&s, &o->cfg, &err);
    else
        memset(&s, 0, sizeof(s));
    if (!rc && spec)
        rc = same_shape(&s, name, spec, file, &err);
    if (!rc)
        rc = gpc_cluster_exec(&s, name, spec, &job, &status, &err);
    if (rc == GPC_ERR_NOT_FOUND && strstr(err.msg, "no cluster named"))
        rc = gpc_no_cluster(&s, name, "", &err);
    gpc_session_close(&s);
    gpc_spec_free(spec);
    gpc_buf_free(&run);
    if (rc)
        return gpc_report_error(o, &err);
    return status;
}
