/*
 * commands.h - the subcommands behind the table in cli.c, and the option
 * tables they are parsed and documented from.
 *
 * Every command has one table of gpc_option: the parser (getopt_long, built
 * from the table), `gpuctl CMD -h`, `gpuctl help CMD` and the shell
 * completions (`gpuctl completion bash|zsh`) all read it, so an option
 * cannot be accepted without being explained, nor explained without being
 * accepted.
 */
#ifndef GPUCTL_COMMANDS_H
#define GPUCTL_COMMANDS_H

#include <stdio.h>
#include <unistd.h> /* optind */

#include "gpuctl/buf.h"
#include "gpuctl/catalog.h"
#include "gpuctl/spec.h" /* gpc_valid_cluster_name */
#include "output.h"
#include "present.h"

struct cJSON;

/*
 * One option of a command (or a global one).  Tables end with an entry
 * whose `name` is NULL.
 */
typedef struct gpc_option {
    const char *name;  /* the long name without "--" ("file") */
    int short_name;    /* the one-letter form ('f'), or 0 for none */
    const char *arg;   /* the value's name in help ("FILE", "DURATION"); a
                          value list "a|b|c" is also what the completions
                          offer; FILE, PLANFILE and DIR complete paths.
                          NULL: a flag without a value */
    int id;            /* what the command's handler gets for it */
    const char *help;  /* what it does, with units (help wraps it) */
} gpc_option;

typedef struct gpc_command gpc_command;
typedef int (*gpc_command_fn)(gpc_out *o, const gpc_command *c, int argc, char **argv);

struct gpc_command {
    const char *name;
    const char *alias;        /* another name, or NULL */
    const char *summary;      /* one line */
    const char *usage;        /* the synopsis after "gpuctl " */
    const gpc_option *options; /* the command's own options, or NULL */
    const char *operands;     /* what the shell completes as operands: NULL
                                 nothing, "@file" paths, "@command" command
                                 names, "@provider" the registry's names,
                                 else a space-separated word list */
    int hidden;               /* not listed by help nor suggested */
    gpc_command_fn fn;        /* returns the process exit status */
};

/* The command table (ends with a NULL name) and the global options. */
extern const gpc_command gpc_commands[];
extern const gpc_option gpc_global_options[];

/* The option tables of the commands (cmd_*.c). */
extern const gpc_option gpc_validate_options[];
extern const gpc_option gpc_offers_options[];
extern const gpc_option gpc_plan_options[];
extern const gpc_option gpc_apply_options[];
extern const gpc_option gpc_status_options[];
extern const gpc_option gpc_logs_options[];
extern const gpc_option gpc_ssh_options[];
extern const gpc_option gpc_exec_options[];
extern const gpc_option gpc_destroy_options[];
extern const gpc_option gpc_render_options[];
extern const gpc_option gpc_catalog_options[];
extern const gpc_option gpc_data_options[];
extern const gpc_option gpc_cost_options[];
extern const gpc_option gpc_gc_options[];
extern const gpc_option gpc_watch_options[];

/* What an option callback returns for an option that may appear once and
 * came again (any other non-zero: an invalid value). */
#define GPC_OPT_TWICE 2

/* For an option callback: store the value of an option that may appear
 * once in *slot; GPC_OPT_TWICE when *slot holds one already, else 0. */
static inline int gpc_opt_once(const char **slot, const char *arg)
{
    if (*slot)
        return GPC_OPT_TWICE;
    *slot = arg;
    return 0;
}

/* For an option callback: refuse the value with this explanation (printf
 * style) instead of "invalid value for option".  Returns -1. */
int gpc_opt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Parse argv: the global options and, with a command `c`, that command's
 * table.  Calls `on_opt(id, value, ud)` for each option of the command
 * (value NULL for a flag); the operands are left at argv[optind...].
 * Without a command, stops at the first operand (the command name).
 * Sets *done and returns the exit status when parsing ended the command:
 * -h/--help or --version (status 0, help printed), or a usage error
 * (reported, status 3).  Otherwise *done is 0 and it returns 0.
 */
int gpc_parse_options(gpc_out *o, const gpc_command *c, int argc, char **argv,
                      int (*on_opt)(int id, const char *arg, void *ud), void *ud,
                      int *done);

/* Print `gpuctl CMD -h`: the usage line, the summary, each of the
 * command's options, then the global options. */
void gpc_command_usage(const gpc_command *c, FILE *f);

/* Report a usage error (printf style) and return its exit status (3). */
int gpc_usage_error(const gpc_out *o, const gpc_command *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Parse a duration option value: "90s", "5m", "2h", "1h30m", "1d", or a
 * bare number of seconds, or seconds or milliseconds with fractions
 * ("0.5", "0.5s", "500ms"), from `min_s` to
 * `max_s` seconds.  On failure returns -1 with gpc_opt_fail() set to a
 * message naming `option`.
 */
int gpc_opt_duration(const char *option, const char *arg, double min_s, double max_s,
                     double *secs);

/*
 * Append the items of a comma-separated option value ("aws, azure") to *v
 * (n items, each its own string, blanks around it removed), so that an
 * option given twice adds to the list.  The caller frees the list with
 * gpc_list_free(), also after a failure.  Returns 0, or -1 for an empty
 * item ("aws,", ",", "") or no memory.
 */
int gpc_list_append(const char *arg, char ***v, size_t *n);
void gpc_list_free(char **v, size_t n);


/* ---- did you mean (suggest.c) ----------------------------------------- */

/* The most edits a did-you-mean suggestion for `word` may be away: 1 for
 * words of up to 4 letters, 2 up to 10, else 3. */
size_t gpc_suggest_limit(const char *word);

/*
 * Did-you-mean for a cluster name not found: look through every cluster
 * recorded in the session's state (destroyed ones too).  Sets *recorded
 * when some record has exactly `name`.  Otherwise appends to `hint` (when
 * not NULL) "; did you mean 'a' or 'b' (destroyed)?" for the closest names
 * within gpc_suggest_limit() edits, live ones first, at most three, and
 * the same names to the JSON array `names` (when not NULL).  Returns 0,
 * or an error of the state.
 */
int gpc_suggest_clusters(gpc_session *s, const char *name, int *recorded,
                         gpc_buf *hint, struct cJSON *names, gpc_error *err);

/* No live cluster `name`: GPC_ERR_NOT_FOUND "no cluster named 'NAME'" and
 * the closest recorded names (gpc_suggest_clusters), or `no_hint` when
 * there are none, into err; returns it. */
int gpc_no_cluster(gpc_session *s, const char *name, const char *no_hint, gpc_error *err);

/* The one operand of a command about a cluster (`logs`, `watch`), NAME,
 * after the options, into *name (argv's).  Returns 0, or
 * gpc_usage_error's exit status for no operand, one more, or an invalid
 * name. */
int gpc_name_operand(gpc_out *o, const gpc_command *c, int argc, char **argv,
                     const char **name);

/* The cluster NAME operand of a command that runs something on its nodes
 * (`ssh`, `exec`), after the options, into *name (argv's).  Returns 0, or
 * gpc_usage_error's exit status for no operand, an invalid name, or -o json
 * (`what`: whose the output is, "node's"). */
int gpc_node_command_name(gpc_out *o, const gpc_command *c, int argc, char **argv,
                          const char *what, const char **name);

/* The options of a wait (`apply --wait`, `watch`; cmd_apply.c): 't'
 * --timeout DURATION (whole seconds) into o->timeout_s, 'p'
 * --poll-interval DURATION (0.05 s to 1 h) into o->poll_s.  0, or an
 * option callback's error for a bad value or another option. */
struct gpc_apply_opts;
int gpc_wait_opt(int opt, const char *arg, struct gpc_apply_opts *o);

/* After a wait (`apply --wait`, `watch`): the job's end in one line on
 * stdout, "job PHASE: rank 0 exit status N", naming the node whose job
 * failed when rank 0 exited 0; nothing when res->waited is 0. */
struct gpc_apply_result;
struct gpc_session;
void gpc_print_job_end(struct gpc_session *s, const struct gpc_apply_result *res);

/* The end of `apply` and `watch` documents (-o json): `phase`,
 * `exit_code` (rank 0's, null when none), `error` (err's, null when
 * none), `cluster_status` (as status NAME's cluster, null when the
 * cluster is not recorded) added to doc. */
struct gpc_error;
void gpc_json_add_job_end(struct cJSON *doc, struct gpc_session *s,
                          const struct gpc_apply_result *res, const struct gpc_error *err);

/* ---- shell completions (completion.c) --------------------------------- */

/* Print the completion script for `shell` ("bash" or "zsh") to f; -1 for
 * another shell. */
int gpc_completion_print(const char *shell, FILE *f);

/* ---- the commands ------------------------------------------------------ */

/* Print what `gpuctl version` prints (text or, per o->format, JSON). */
void gpc_version_print(const gpc_out *o);

int gpc_cmd_validate(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_apply(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_status(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_cost(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_logs(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_ssh(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_exec(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_destroy(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_render(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_version(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_check(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_offers(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_plan(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_catalog(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_data(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_gc(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_watch(gpc_out *o, const gpc_command *c, int argc, char **argv);
int gpc_cmd_completion(gpc_out *o, const gpc_command *c, int argc, char **argv);

#endif
