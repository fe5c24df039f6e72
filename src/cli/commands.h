/* commands.h - the subcommands behind the table in cli.c. */
#ifndef GPUCTL_COMMANDS_H
#define GPUCTL_COMMANDS_H

#include <getopt.h>
#include <stdio.h>

#include "output.h"
#include "present.h"

typedef struct gpc_command gpc_command;
typedef int (*gpc_command_fn)(gpc_out *o, const gpc_command *c, int argc, char **argv);

struct gpc_command {
    const char *name;
    const char *alias;
    const char *summary;
    const char *usage;
    gpc_command_fn fn;   /* returns the process exit status */
};

/* What an option callback returns for an option that may appear once and
 * came again (any other non-zero: an invalid value). */
#define GPC_OPT_TWICE 2

/* For an option callback: refuse the value with this explanation (printf
 * style) instead of "invalid value for option".  Returns -1. */
int gpc_opt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int gpc_parse_options(gpc_out *o, const gpc_command *c, int argc, char **argv,
                      const struct option *extra, const char *extra_short,
                      int (*on_opt)(int opt, const char *arg, void *ud), void *ud,
                      int *done);
void gpc_command_usage(const gpc_command *c, FILE *f);
/* Report a usage error ("fmt" with one %s) and return its exit status. */
int gpc_usage_error(const gpc_out *o, const gpc_command *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Append the items of a comma-separated option value ("aws, azure") to *v
 * (n items, each its own string, blanks around it removed), so that an
 * option given twice adds to the list.  The caller frees the list with
 * gpc_list_free(), also after a failure.  Returns 0, or -1 for an empty
 * item ("aws,", ",", "") or no memory.
 */
int gpc_list_append(const char *arg, char ***v, size_t *n);
void gpc_list_free(char **v, size_t n);

/* Is s a valid cluster name (RFC 1123 label, as the spec's `name`)? */
int gpc_valid_cluster_name(const char *s);

int gpc_cmd_validate(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_apply(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_status(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_logs(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_destroy(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_render(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_version(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_check(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_offers(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_plan(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_catalog(gpc_out *o, const gpc_command *c, int argc, char **argv);


#endif
