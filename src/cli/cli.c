/*
 * cli.c - gpuctl's command table, global options and dispatch (git style:
 * `gpuctl [global options] <command> [options]`, `gpuctl help <command>`,
 * `gpuctl <command> -h`).  Global options are accepted before or after the
 * command name.  Parsing, help and the shell completions all come from the
 * option tables (commands.h).
 */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gpuctl/http.h"
#include "gpuctl/spec.h"
#include "gpuctl/util.h"

/* ids of the global options */
enum {
    G_OUTPUT = 1, G_QUIET, G_VERBOSE, G_DEBUG, G_STATE_DIR, G_CATALOG, G_ENDPOINT,
    G_PROFILE, G_YES, G_HELP, G_VERSION
};

const gpc_option gpc_global_options[] = {
    {"output", 'o', "table|json", G_OUTPUT, "output format (json carries schema_version)"},
    {"quiet", 'q', NULL, G_QUIET, "print only errors and results"},
    {"verbose", 'v', NULL, G_VERBOSE, "more detail on stderr (--debug: even more)"},
    {"debug", 0, NULL, G_DEBUG, "as -v, and a trace of every HTTP attempt on stderr (secrets "
     "redacted)"},
    {"state-dir", 0, "DIR", G_STATE_DIR, "state directory (default: $GPUCTL_STATE_DIR, else "
     "$XDG_STATE_HOME/gpuctl, else ~/.local/state/gpuctl)"},
    {"catalog", 0, "FILE", G_CATALOG, "instance catalog CSV (default: $GPUCTL_CATALOG, else the "
     "user override from 'catalog update', else built-in)"},
    {"endpoint", 0, "[P=]URL", G_ENDPOINT, "the API endpoint of every provider, or with P= of "
     "provider P only (repeatable; docs/config.md, docs/providers/NAME.md); for tests and mocks"},
    {"profile", 0, "[P=]NAME", G_PROFILE, "the credentials profile of every provider, or with P= "
     "of provider P only (repeatable; docs/config.md)"},
    {"yes", 'y', NULL, G_YES, "do not ask for confirmation"},
    {"help", 'h', NULL, G_HELP, "help for gpuctl or the command"},
    {"version", 0, NULL, G_VERSION, "print the version (as 'gpuctl version')"},
    {NULL, 0, NULL, 0, NULL}
};

const gpc_command gpc_commands[] = {
    {"validate", NULL, "check a job spec and print its canonical form",
     "validate -f FILE", gpc_validate_options, "@file", 0, gpc_cmd_validate},
    {"offers", NULL, "list instance types and prices from the catalog, cheapest first",
     "offers [--gpu GPU[,GPU]] [--spot] [--provider P[,P]] [--region R[,R]] "
     "[--interconnect any|none|efa|infiniband|erdma|rdma] [--max-price USD] "
     "[--sort price|price-per-tflops] [--limit N]", gpc_offers_options, NULL, 0, gpc_cmd_offers},
    {"plan", NULL, "show what apply would do: chosen offer, fallbacks, cost, changes",
     "plan -f FILE [--out PLANFILE] [--detailed-exitcode] [--live]", gpc_plan_options, "@file",
     0, gpc_cmd_plan},
    {"apply", NULL, "create, re-run or replace what a spec or plan describes; follow it",
     "apply -f FILE | PLANFILE [--wait [--timeout DURATION]] [--poll-interval DURATION] "
     "[--dry-run] [-y]", gpc_apply_options, "@file", 0, gpc_cmd_apply},
    {"watch", NULL, "follow a live cluster's job to its end; replace lost spot nodes",
     "watch NAME [-f FILE] [--no-recover] [--timeout DURATION] [--poll-interval DURATION]",
     gpc_watch_options, NULL, 0, gpc_cmd_watch},
    {"status", "get", "show clusters, their nodes, phases and cost",
     "status [NAME] [-a|--all] [--refresh]", gpc_status_options, NULL, 0, gpc_cmd_status},
    {"cost", NULL, "what the ledger billed, per cluster and provider; owning instead",
     "cost [NAME] [--since WHEN] [--compare-buy [--server-price USD] [--server-gpus N] ...]",
     gpc_cost_options, NULL, 0, gpc_cmd_cost},
    {"logs", NULL, "print a cluster's node logs",
     "logs NAME [--node N] [-f|--follow]", gpc_logs_options, NULL, 0, gpc_cmd_logs},
    {"ssh", NULL, "open a shell, or run a command, on a node of a cluster",
     "ssh NAME [--node N] [-- CMD...]", gpc_ssh_options, NULL, 0, gpc_cmd_ssh},
    {"exec", NULL, "run a new job on all nodes of a live cluster, after the running one",
     "exec NAME (-f FILE | -- CMD...)", gpc_exec_options, NULL, 0, gpc_cmd_exec},
    {"destroy", NULL, "delete a cluster's nodes (idempotent)",
     "destroy NAME | -f FILE [--purge] [-y]", gpc_destroy_options, NULL, 0, gpc_cmd_destroy},
    {"render", NULL, "print a node's user-data as it would be sent (decoded)",
     "render -f FILE [--node N] [--provider P] [--head-ip IP] [--encoded]", gpc_render_options,
     NULL, 0, gpc_cmd_render},
    {"catalog", NULL, "show, export, update or reset the GPU instance catalog",
     "catalog [show | export | update [--provider P[,P]] [--region R[,R]] [--endpoint URL] "
     "[--from FILE] [--dry-run] | reset]", gpc_catalog_options, "show export update reset", 0,
     gpc_cmd_catalog},
    {"data", NULL, "push, list, pull or remove data sets in a provider's object storage",
     "data push DIR --name NAME [--delete] | ls [NAME] | pull NAME DIR | rm NAME [-y]; [--provider P] "
     "[--region R]", gpc_data_options, "push ls pull rm", 0, gpc_cmd_data},
    {"gc", NULL, "list, or delete (-y), what gpuctl made that no live cluster owns",
     "gc [--provider P[,P]] [--region R[,R]] [-y]", gpc_gc_options, NULL, 0, gpc_cmd_gc},
    {"check", NULL, "check that each provider's credentials resolve and work",
     "check [PROVIDER...]", NULL, "@provider", 0, gpc_cmd_check},
    {"version", NULL, "print the version", "version", NULL, NULL, 0, gpc_cmd_version},
    {"help", NULL, "show help for gpuctl, a command, or the providers",
     "help [COMMAND | providers]", NULL, "@command", 0,
     NULL},
    {"completion", NULL, "print the shell completion script for bash or zsh",
     "completion bash|zsh", NULL, "bash zsh", 1, gpc_cmd_completion},
    {NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL}
};

/* The help column: options are printed as "  -f, --file FILE" padded to
 * HELP_COL, then their help. */
#define HELP_COL 27
#define HELP_WIDTH 80

/* Print `text` from the help column on, wrapped at HELP_WIDTH columns
 * (a word longer than the room left gets a line of its own). */
static void print_wrapped(FILE *f, const char *text)
{
    size_t col = HELP_COL;
    for (const char *w = text; *w;) {
        size_t len = strcspn(w, " ");
        if (col > HELP_COL && col + 1 + len > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fwrite(w, 1, len, f);
        col += len;
        w += len;
        while (*w == ' ')
            w++;
    }
    fputc('\n', f);
}

static void print_options(FILE *f, const gpc_option *opts)
{
    for (const gpc_option *p = opts; p && p->name; p++) {
        char label[128];
        if (p->short_name)
            snprintf(label, sizeof(label), "  -%c, --%s%s%s", p->short_name, p->name,
                     p->arg ? " " : "", p->arg ? p->arg : "");
        else
            snprintf(label, sizeof(label), "      --%s%s%s", p->name, p->arg ? " " : "",
                     p->arg ? p->arg : "");
        size_t l = strlen(label);
        if (l + 2 > HELP_COL)
            fprintf(f, "%s\n%*s", label, HELP_COL, "");
        else
            fprintf(f, "%-*s", HELP_COL, label);
        print_wrapped(f, p->help);
    }
}

static int visible(const gpc_command *c) { return !c->hidden; }

static const gpc_command *find_command(const char *name)
{
    for (const gpc_command *c = gpc_commands; c->name; c++)
        if (strcmp(c->name, name) == 0 || (c->alias && strcmp(c->alias, name) == 0))
            return c;
    return NULL;
}

/* The visible command `name` was most likely meant to be: within
 * gpc_suggest_limit() edits of a name or alias, or the only command it is
 * a prefix of; NULL when none is close. */
static const char *closest_command(const char *name)
{
    const char *best = NULL, *prefix = NULL;
    size_t best_d = SIZE_MAX, n_prefix = 0, len = strlen(name);
    for (const gpc_command *c = gpc_commands; c->name; c++) {
        if (!visible(c))
            continue;
        const char *names[2] = {c->name, c->alias};
        for (int i = 0; i < 2 && names[i]; i++) {
            size_t d = gpc_edit_distance(name, names[i]);
            if (d < best_d) {
                best_d = d;
                best = c->name;
            }
            if (len >= 2 && strncmp(names[i], name, len) == 0 && prefix != c->name) {
                prefix = c->name;
                n_prefix++;
            }
        }
    }
    if (best && best_d <= gpc_suggest_limit(name))
        return best;
    return n_prefix == 1 ? prefix : NULL;
}

/* `gpuctl help providers`: the registry, the default first. */
static void help_providers(FILE *f)
{
    fprintf(f, "Providers built into this gpuctl (a spec's `provider:`; docs/providers/NAME.md):\n");
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        fprintf(f, "  %-8s %-10s %s\n", p->name,
                i == 0 ? "default" : (p->caps & GPC_CAP_PLAN_ONLY) ? "plan-only" : "available",
                p->summary ? p->summary : "");
    }
    fprintf(f, "\nSettings per provider (endpoint, profile, region): --endpoint NAME=URL,\n"
               "--profile NAME=PROFILE, GPUCTL_<NAME>_ENDPOINT and the config file "
               "(docs/config.md).\n");
    /* the places a provider takes from named sections of the config file */
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        if (!p->site_keys)
            continue;
        fprintf(f, "%s: [%s \"NAME\"] sections of the config file, keys", p->name, p->name);
        for (size_t k = 0; p->site_keys[k]; k++)
            fprintf(f, "%s %s", k ? "," : "", p->site_keys[k]);
        fprintf(f, " (docs/providers/%s.md).\n", p->name);
    }
}

static int unknown_command(const gpc_out *o, const char *name)
{
    gpc_error err;
    gpc_error_clear(&err);
    const char *near = closest_command(name);
    if (near)
        gpc_fail(&err, GPC_ERR_USAGE, "unknown command '%s'; did you mean '%s'? (see 'gpuctl help')",
                 name, near);
    else
        gpc_fail(&err, GPC_ERR_USAGE, "unknown command '%s' (see 'gpuctl help')", name);
    return gpc_report_error(o, &err);
}

static void usage_all(FILE *f)
{
    fprintf(f, "usage: gpuctl [global options] <command> [options]\n\n"
               "gpuctl turns a YAML job spec into a running multi-node GPU training job.\n\n"
               "Commands:\n");
    for (const gpc_command *c = gpc_commands; c->name; c++)
        if (visible(c))
            fprintf(f, "  %-10s %s%s%s%s\n", c->name, c->summary, c->alias ? " (alias: " : "",
                    c->alias ? c->alias : "", c->alias ? ")" : "");
    fprintf(f, "\nGlobal options:\n");
    print_options(f, gpc_global_options);
    fprintf(f, "\nSee 'gpuctl help <command>', docs/cli.md and docs/spec.md.\n");
}

void gpc_command_usage(const gpc_command *c, FILE *f)
{
    fprintf(f, "usage: gpuctl %s\n\n%s\n", c->usage, c->summary);
    if (c->options && c->options[0].name) {
        fprintf(f, "\nOptions:\n");
        print_options(f, c->options);
    }
    fprintf(f, "\nGlobal options:\n");
    print_options(f, gpc_global_options);
}

int gpc_usage_error(const gpc_out *o, const gpc_command *c, const char *fmt, ...)
{
    gpc_error err;
    gpc_error_clear(&err);
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c)
        gpc_fail(&err, GPC_ERR_USAGE, "%s (usage: gpuctl %s)", msg, c->usage);
    else /* a global option before the command */
        gpc_fail(&err, GPC_ERR_USAGE, "%s (see 'gpuctl -h')", msg);
    return gpc_report_error(o, &err);
}

/* Why the last option value was refused, set by gpc_opt_fail(). */
static char opt_why[768];

int gpc_opt_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opt_why, sizeof(opt_why), fmt, ap);
    va_end(ap);
    return -1;
}

int gpc_opt_duration(const char *option, const char *arg, double min_s, double max_s,
                     double *secs)
{
    char *end;
    double v = strtod(arg, &end);
    /* a number of seconds or milliseconds, fractions allowed: 0.5s, 500ms */
    if (end != arg && isfinite(v) && strcmp(end, "s") == 0)
        end++;
    else if (end != arg && isfinite(v) && strcmp(end, "ms") == 0)
        end += 2, v /= 1000;
    if (end == arg || *end || !isfinite(v)) {
        /* not a bare number: the spec's duration form (90s, 5m, 1h30m) */
        uint64_t u;
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_parse_duration(option, arg, &u, &e))
            return gpc_opt_fail("%s", e.msg);
        v = (double)u;
    }
    if (!(v >= min_s) || v > max_s)
        return gpc_opt_fail("%s: '%s' is not a number of seconds from %.15g to %.15g", option,
                            arg, min_s, max_s);
    *secs = v;
    return 0;
}

/* One entry of the tables getopt_long is given: the command's options
 * first, then the global ones. */
typedef struct opt_ref {
    const gpc_option *opt;
    int global;
} opt_ref;

#define MAX_OPTIONS 64

/* Did-you-mean for an unknown "--word[=value]": the closest long option
 * of the command or the global ones, or the options it is a prefix of
 * (getopt_long refuses an ambiguous prefix as unknown).  Writes "" when
 * nothing is close. */
static void option_hint(const char *word, const opt_ref *refs, size_t n, char *out, size_t len)
{
    out[0] = '\0';
    if (strncmp(word, "--", 2) != 0 || !word[2])
        return;
    char name[96];
    snprintf(name, sizeof(name), "%.*s", (int)strcspn(word + 2, "="), word + 2);
    size_t nl = strlen(name), n_prefix = 0, best_d = SIZE_MAX;
    const char *best = NULL;
    char prefixed[256] = "";
    for (size_t i = 0; i < n; i++) {
        const char *cand = refs[i].opt->name;
        if (strncmp(cand, name, nl) == 0) {
            snprintf(prefixed + strlen(prefixed), sizeof(prefixed) - strlen(prefixed), "%s--%s",
                     n_prefix ? ", " : "", cand);
            n_prefix++;
        }
        size_t d = gpc_edit_distance(name, cand);
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    if (n_prefix > 1)
        snprintf(out, len, "; it is the start of %s", prefixed);
    else if (best && best_d <= gpc_suggest_limit(name))
        snprintf(out, len, "; did you mean '--%s'?", best);
}

static int global_opt(gpc_out *o, const gpc_command *c, const gpc_option *g, const char *arg,
                      int *want_version, int *done)
{
    switch (g->id) {
    case G_OUTPUT:
        if (strcmp(arg, "json") == 0)
            o->format = GPC_OUT_JSON;
        else if (strcmp(arg, "table") == 0)
            o->format = GPC_OUT_TABLE;
        else {
            *done = 1;
            return gpc_usage_error(o, c, "unknown output format '%s' (table or json)", arg);
        }
        break;
    case G_QUIET: o->quiet = 1; break;
    case G_VERBOSE: o->verbose = o->verbose < 1 ? 1 : o->verbose; break;
    case G_DEBUG: o->verbose = 2; gpc_http_set_trace(stderr); break;
    case G_STATE_DIR: o->cfg.state_dir = arg; break;
    case G_CATALOG: o->cfg.catalog_path = arg; break;
    case G_ENDPOINT:
    case G_PROFILE: {
        gpc_error e;
        gpc_error_clear(&e);
        if (gpc_settings_flag(&o->cfg, g->id == G_ENDPOINT ? "endpoint" : "profile", arg, &e)) {
            *done = 1;
            return gpc_usage_error(o, c, "%s", e.msg);
        }
        break;
    }
    case G_YES: o->assume_yes = 1; break;
    case G_VERSION: *want_version = 1; break;
    case G_HELP:
        *done = 1;
        if (c)
            gpc_command_usage(c, stdout);
        else
            usage_all(stdout);
        return 0;
    }
    return 0;
}

int gpc_parse_options(gpc_out *o, const gpc_command *c, int argc, char **argv,
                      int (*on_opt)(int id, const char *arg, void *ud), void *ud,
                      int *done)
{
    opt_ref refs[MAX_OPTIONS];
    struct option all[MAX_OPTIONS + 1];
    char shorts[2 * MAX_OPTIONS + 4];
    size_t n = 0, ns = 0;
    /* Before the command, stop at the first operand (the command name);
     * after it, options and operands may mix.  ':' first: a missing value
     * is reported as ':', not '?'. */
    if (!c)
        shorts[ns++] = '+';
    shorts[ns++] = ':';
    for (int pass = 0; pass < 2; pass++) {
        const gpc_option *t = pass == 0 ? (c ? c->options : NULL) : gpc_global_options;
        for (size_t i = 0; t && t[i].name && n < MAX_OPTIONS; i++) {
            refs[n] = (opt_ref){&t[i], pass == 1};
            all[n] = (struct option){t[i].name, t[i].arg ? required_argument : no_argument,
                                     NULL, 256 + (int)n};
            if (t[i].short_name) {
                shorts[ns++] = (char)t[i].short_name;
                if (t[i].arg)
                    shorts[ns++] = ':';
            }
            n++;
        }
    }
    memset(&all[n], 0, sizeof(all[n]));
    shorts[ns] = '\0';
    *done = 0;
    optind = 0; /* 0, not 1: glibc then re-reads the option string ("+" or not) */
    opterr = 0;
    int opt, want_version = 0;
    while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
        if (opt == ':') {
            *done = 1;
            return gpc_usage_error(o, c, "option '%s' needs a value", argv[optind - 1]);
        }
        if (opt == '?') {
            *done = 1;
            char hint[320];
            option_hint(argv[optind - 1], refs, n, hint, sizeof(hint));
            return gpc_usage_error(o, c, "unknown option '%s'%s", argv[optind - 1], hint);
        }
        const opt_ref *r = NULL;
        if (opt >= 256 && (size_t)(opt - 256) < n)
            r = &refs[opt - 256];
        for (size_t i = 0; !r && i < n; i++)
            if (refs[i].opt->short_name == opt)
                r = &refs[i];
        if (!r)
            continue; /* cannot happen: getopt returns only what it was given */
        if (r->global) {
            int rc = global_opt(o, c, r->opt, optarg, &want_version, done);
            if (*done)
                return rc;
            continue;
        }
        int rc = on_opt ? on_opt(r->opt->id, r->opt->arg ? optarg : NULL, ud) : -1;
        if (!rc)
            continue;
        *done = 1;
        if (rc == GPC_OPT_TWICE) {
            /* "-f FILE" took two words, "--file=FILE" one */
            int word = optind - 1;
            if (optarg && optarg == argv[word] && word > 1)
                word--;
            return gpc_usage_error(o, c, "option '%s' given twice", argv[word]);
        }
        if (opt_why[0]) {
            char why[sizeof(opt_why)];
            memcpy(why, opt_why, sizeof(why));
            opt_why[0] = '\0';
            return gpc_usage_error(o, c, "%s", why);
        }
        return gpc_usage_error(o, c, "invalid value for option: '%s'", optarg ? optarg : "");
    }
    if (want_version) {
        *done = 1;
        gpc_version_print(o);
    }
    return 0;
}

int gpc_list_append(const char *arg, char ***v, size_t *n)
{
    for (const char *p = arg;; ) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0)
            return -1;
        char **grown = realloc(*v, (*n + 1) * sizeof(**v));
        if (!grown)
            return -1;
        *v = grown;
        if (!(grown[*n] = strndup(p, len)))
            return -1;
        (*n)++;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

void gpc_list_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}


int gpc_cmd_completion(gpc_out *o, const gpc_command *c, int argc, char **argv)
{
    int done;
    int rc = gpc_parse_options(o, c, argc, argv, NULL, NULL, &done);
    if (done)
        return rc;
    if (optind + 1 != argc)
        return gpc_usage_error(o, c, "name one shell: bash or zsh%s", "");
    if (gpc_completion_print(argv[optind], stdout))
        return gpc_usage_error(o, c, "no completion for shell '%s' (bash or zsh)", argv[optind]);
    return 0;
}

int gpc_cli_main(int argc, char **argv)
{
    gpc_out o;
    gpc_out_init(&o);
    /* Global options before the command. */
    int done;
    int rc = gpc_parse_options(&o, NULL, argc, argv, NULL, NULL, &done);
    if (done)
        return rc;
    int first = optind;
    if (first >= argc) {
        usage_all(stderr);
        return gpc_exit_status(GPC_ERR_USAGE);
    }
    const char *name = argv[first];
    if (strcmp(name, "help") == 0) {
        if (first + 1 < argc && strcmp(argv[first + 1], "providers") == 0) {
            help_providers(stdout);
        } else if (first + 1 < argc && argv[first + 1][0] != '-') {
            const gpc_command *c = find_command(argv[first + 1]);
            if (!c)
                return unknown_command(&o, argv[first + 1]);
            gpc_command_usage(c, stdout);
        } else {
            usage_all(stdout);
        }
        return 0;
    }
    const gpc_command *c = find_command(name);
    if (!c || !c->fn)
        return unknown_command(&o, name);
    return c->fn(&o, c, argc - first, argv + first);
}
