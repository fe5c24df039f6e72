/*
 * shell.h - shell access to a node (`gpuctl ssh`), and the argument
 * vectors the providers' shell_argv operation builds (provider.h).
 *
 * The engine finds the node and asks its provider for the command that
 * reaches it; the CLI runs that command.  The same vector is what a file
 * transfer (rsync -e) or `gpuctl exec` runs on a node.
 */
#ifndef GPUCTL_SHELL_H
#define GPUCTL_SHELL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctl/buf.h"
#include "gpuctl/cluster.h"
#include "gpuctl/error.h"
#include "gpuctl/render.h"

/* An argument vector being built: v[0..n-1], each string owned, v[n]
 * NULL once anything was added.  Zero-initialise it. */
typedef struct gpc_argv {
    char **v;
    size_t n, cap;
} gpc_argv;

/* Append a copy of `s`.  Errors: GPC_ERR_NOMEM (a is left as it was). */
int gpc_argv_add(gpc_argv *a, const char *s, gpc_error *err);

/* Append a printf-formatted string.  Errors: GPC_ERR_NOMEM. */
int gpc_argv_addf(gpc_argv *a, gpc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The vector, ended by NULL, for the caller to free with gpc_argv_free;
 * `a` is empty after.  Errors: GPC_ERR_NOMEM (a is then freed). */
int gpc_argv_take(gpc_argv *a, char ***argv, gpc_error *err);

/* Free the strings of a builder and empty it. */
void gpc_argv_reset(gpc_argv *a);

/* Free a vector from gpc_argv_take (each string, then the array); NULL
 * is ignored. */
void gpc_argv_free(char **argv);

/* Quoting a word for the node's shell: gpc_shell_quote (render.h). */

/* Append the n words of `cmd` joined by single spaces, as they are (the
 * node's shell reads them as one command line, as ssh(1) sends a
 * command).  Errors: the buffer's. */
int gpc_shell_join(gpc_buf *b, const char *const *cmd, size_t n, gpc_error *err);

/*
 * The command that runs `cmd` on node `rank` of cluster `name` (the
 * provider's shell_argv, provider.h): *argv for the caller to run and
 * free (gpc_argv_free).  The cluster is refreshed first (the provider is
 * asked about its nodes, and what changed is recorded), so the node's
 * phase is current.  n_cmd == 0: an interactive login shell; tty: ask for
 * a terminal.  Errors: GPC_ERR_NOT_FOUND when no live cluster has the
 * name, when the cluster has no node of that rank, or when the node is not
 * running (the message names its phase: pending, booting, succeeded, ...);
 * GPC_ERR_PROVIDER when the cluster's provider has no shell access (no
 * shell_argv); the refresh's and the provider's errors.
 */
int gpc_cluster_shell(gpc_session *s, const char *name, uint32_t rank,
                      const char *const *cmd, size_t n_cmd, int tty, char ***argv,
                      gpc_error *err);

#endif /* GPUCTL_SHELL_H */
