/*
 * cmd_ssh.c - `gpuctl ssh NAME [--node N] [-- CMD...]`: a shell, or one
 * command, on a node of a cluster.  The engine asks the node's provider
 * for the command that reaches it (shell.h); this file runs it in
 * gpuctl's place (exec), so that its exit status, its terminal and its
 * signals are the remote command's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "gpuctl/buf.h"
#include "gpuctl/shell.h"

const gpc_option gpc_ssh_options[] = {
    {"node", 0, "N", 'N', "the node's rank, 0 to 1023 (default 0, the head)"},
    {NULL, 0, NULL, 0, NULL}
};

static int ssh_opt(int opt, const char *arg, void *ud)
{
    long *node = ud;
    char *end;
    if (opt != 'N')
        return -1;
    if (*node >= 0)
        return GPC_OPT_TWICE;
    *node = strtol(arg, &end, 10);
    return !*arg || *end || *node < 0 || *node > 1023 ? -1 : 0; /* spec: nodes <= 1024 */
}

int gpc_cmd_ssh(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    long node = -1;
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, ssh_opt, &node, &done);
    if (done)
        return rc;
    const char *name = NULL;
    rc = gpc_node_command_name(o, c, argc, argv, "node's", &name);
    if (rc)
        return rc;
    const char *const *cmd = (const char *const *)argv + optind + 1;
    size_t n_cmd = (size_t)(argc - optind - 1);
    /* a terminal for an interactive shell at one, as ssh(1) decides */
    int tty = n_cmd == 0 && isatty(STDIN_FILENO);

    gpc_error err;
    gpc_error_clear(&err);
    gpc_session s;
    char **av = NULL;
    o->cfg.state_reads_only = 0; /* the refresh records the phases it sees */
    rc = gpc_session_open(&s, &o->cfg, &err);
    if (!rc) {
        gpc_cluster_rec cr;
        memset(&cr, 0, sizeof(cr));
        rc = gpc_cluster_get(s.st, name, &cr, &err);
        if (rc == GPC_ERR_NOT_FOUND)
            rc = gpc_no_cluster(&s, name, "", &err);
        gpc_cluster_rec_free(&cr);
    }
    if (!rc)
        rc = gpc_cluster_shell(&s, name, node < 0 ? 0 : (uint32_t)node, cmd, n_cmd, tty, &av,
                               &err);
    gpc_session_close(&s);
    if (rc)
        return gpc_report_error(o, &err);
    if (o->verbose) {
        gpc_buf line;
        gpc_buf_init(&line, 1u << 16);
        for (char **p = av; *p; p++)
            if (gpc_buf_adds(&line, p == av ? "" : " ", NULL) ||
                gpc_shell_quote(&line, *p, NULL))
                break;
        gpc_debug(&o->log, "running: %s", gpc_buf_str(&line));
        gpc_buf_free(&line);
    }
    fflush(stdout);
    fflush(stderr);
    execvp(av[0], av);
    rc = gpc_fail(&err, GPC_ERR_PROVIDER, "could not run %s: %s", av[0], strerror(errno));
    gpc_argv_free(av);
    return gpc_report_error(o, &err);
}
