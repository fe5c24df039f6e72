/*
 * cli.c - gpuctl's command table, global options and dispatch (git style:
 * `gpuctl [global options] <command> [options]`, `gpuctl help <command>`,
 * `gpuctl <command> -h`).  Global options are accepted before or after the
 * command name.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuctl/http.h"
#include "commands.h"

static const gpc_command commands[] = {
    {"validate", NULL, "check a job spec and print its canonical form",
     "validate -f FILE", gpc_cmd_validate},
    {"offers", NULL, "list instance types and prices from the catalog, cheapest first",
     "offers [--gpu GPU[,GPU]] [--spot] [--provider P[,P]] [--region R[,R]] "
     "[--interconnect any|none|efa|infiniband|erdma|rdma] [--max-price USD] "
     "[--sort price|price-per-tflops] [--limit N]", gpc_cmd_offers},
    {"plan", NULL, "show what apply would do: chosen offer, fallbacks, cost, changes",
     "plan -f FILE [--out PLANFILE] [--detailed-exitcode] [--live]", gpc_cmd_plan},
    {"apply", NULL, "create the cluster a spec or a saved plan describes (and wait for its job)",
     "apply -f FILE | PLANFILE [--wait [--timeout SECONDS]] [--poll-interval SECONDS] "
     "[--dry-run] [-y]",
     gpc_cmd_apply},
    {"status", "get", "show clusters, their nodes, phases and cost",
     "status [NAME] [-a|--all]", gpc_cmd_status},
    {"logs", NULL, "print a cluster's node logs",
     "logs NAME [--node N] [-f|--follow]", gpc_cmd_logs},
    {"destroy", NULL, "delete a cluster's nodes (idempotent)",
     "destroy NAME | -f FILE [-y]", gpc_cmd_destroy},
    {"render", NULL, "print a node's user-data as it would be sent (decoded)",
     "render -f FILE [--node N] [--provider P] [--head-ip IP] [--encoded]", gpc_cmd_render},
    {"catalog", NULL, "show, export, update or reset the GPU instance catalog",
     "catalog [show | export | update [--provider P[,P]] [--region R[,R]] [--endpoint URL] "
     "[--from FILE] [--dry-run] | reset]", gpc_cmd_catalog},
    {"check", NULL, "check that each provider's credentials resolve and work",
     "check [PROVIDER...]", gpc_cmd_check},
    {"version", NULL, "print the version", "version", gpc_cmd_version},
    {"help", NULL, "show help for gpuctl or a command", "help [COMMAND]", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static const char global_help[] =
    "Global options:\n"
    "  -o, --output table|json  output format (json carries schema_version)\n"
    "  -q, --quiet              print only errors and results\n"
    "  -v, --verbose            more detail on stderr (--debug: even more)\n"
    "      --state-dir DIR      state directory (default $XDG_STATE_HOME/gpuctl)\n"
    "      --catalog FILE       instance catalog CSV (default: $GPUCTL_CATALOG, else the\n"
    "                           user override from 'catalog update', else built-in)\n"
    "      --endpoint URL       provider API endpoint (AWS: EC2; else AWS_ENDPOINT_URL_EC2,\n"
    "                           AWS_ENDPOINT_URL, ~/.aws/config); for tests and mocks\n"
    "      --profile NAME       credentials profile (AWS: ~/.aws/{credentials,config})\n"
    "  -y, --yes                do not ask for confirmation\n"
    "  -h, --help               help for gpuctl or the command\n";

static const gpc_command *find_command(const char *name)
{
    for (const gpc_command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0 || (c->alias && strcmp(c->alias, name) == 0))
            return c;
    return NULL;
}

static void usage_all(FILE *f)
{
    fprintf(f, "usage: gpuctl [global options] <command> [options]\n\n"
               "gpuctl turns a YAML job spec into a running multi-node GPU training job.\n\n"
               "Commands:\n");
    for (const gpc_command *c = commands; c->name; c++)
        fprintf(f, "  %-10s %s%s%s%s\n", c->name, c->summary, c->alias ? " (alias: " : "",
                c->alias ? c->alias : "", c->alias ? ")" : "");
    fprintf(f, "\n%s\nSee 'gpuctl help <command>', docs/cli.md and docs/spec.md.\n", global_help);
}

void gpc_command_usage(const gpc_command *c, FILE *f)
{
    fprintf(f, "usage: gpuctl %s\n\n%s\n\n%s", c->usage, c->summary, global_help);
}

int gpc_usage_error(const gpc_out *o, const gpc_command *c, const char *fmt, ...)
{
    gpc_error err;
    gpc_error_clear(&err);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gpc_fail(&err, GPC_ERR_USAGE, "%s (usage: gpuctl %s)", msg, c ? c->usage : "<command>");
    return gpc_report_error(o, &err);
}

/* Why the last option value was refused, set by gpc_opt_fail(). */
static char opt_why[512];

int gpc_opt_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opt_why, sizeof(opt_why), fmt, ap);
    va_end(ap);
    return -1;
}

/*
 * Parse the options of a command: the global ones plus `extra`.  Calls
 * `on_opt` for each command option; the rest of argv (operands) is left at
 * argv[optind...].  Returns 0, or the exit status of a usage error / help.
 */
int gpc_parse_options(gpc_out *o, const gpc_command *c, int argc, char **argv,
                      const struct option *extra, const char *extra_short,
                      int (*on_opt)(int opt, const char *arg, void *ud), void *ud,
                      int *done)
{
    static const struct option global[] = {
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"debug", no_argument, NULL, 1000},
        {"state-dir", required_argument, NULL, 1001},
        {"catalog", required_argument, NULL, 1002},
        {"endpoint", required_argument, NULL, 1003},
        {"profile", required_argument, NULL, 1004},
        {"yes", no_argument, NULL, 'y'},
        {"help", no_argument, NULL, 'h'},
    };
    struct option all[48];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(global) / sizeof(global[0]); i++)
        all[n++] = global[i];
    for (size_t i = 0; extra && extra[i].name && n < 47; i++)
        all[n++] = extra[i];
    memset(&all[n], 0, sizeof(all[n]));
    char shorts[64];
    /* Before the command, stop at the first operand (the command name);
     * after it, options and operands may mix. */
    snprintf(shorts, sizeof(shorts), "%s:o:qvyh%s", c ? "" : "+", extra_short ? extra_short : "");
    *done = 0;
    optind = 0; /* 0, not 1: glibc then re-reads the option string ("+" or not) */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
        switch (opt) {
        case 'o':
            if (strcmp(optarg, "json") == 0)
                o->format = GPC_OUT_JSON;
            else if (strcmp(optarg, "table") == 0)
                o->format = GPC_OUT_TABLE;
            else {
                *done = 1;
                return gpc_usage_error(o, c, "unknown output format '%s' (table or json)", optarg);
            }
            break;
        case 'q': o->quiet = 1; break;
        case 'v': o->verbose = o->verbose < 1 ? 1 : o->verbose; break;
        case 1000: o->verbose = 2; gpc_http_set_trace(stderr); break;
        case 1001: o->cfg.state_dir = optarg; break;
        case 1002: o->cfg.catalog_path = optarg; break;
        case 1003: o->cfg.endpoint = optarg; break;
        case 1004: o->cfg.profile = optarg; break;
        case 'y': o->assume_yes = 1; break;
        case 'h':
            *done = 1;
            if (c)
                gpc_command_usage(c, stdout);
            else
                usage_all(stdout);
            return 0;
        case ':':
            *done = 1;
            return gpc_usage_error(o, c, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            *done = 1;
            return gpc_usage_error(o, c, "unknown option '%s'", argv[optind - 1]);
        default:
            if (on_opt) {
                int rc = on_opt(opt, optarg, ud);
                if (rc) {
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
                    return gpc_usage_error(o, c, "invalid value for option: '%s'",
                                           optarg ? optarg : "");
                }
            }
        }
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

int gpc_valid_cluster_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

int gpc_cli_main(int argc, char **argv)
{
    gpc_out o;
    gpc_out_init(&o);
    /* Global options before the command. */
    int done;
    int rc = gpc_parse_options(&o, NULL, argc, argv, NULL, NULL, NULL, NULL, &done);
    if (done)
        return rc;
    int first = optind;
    if (first >= argc) {
        usage_all(stderr);
        return gpc_exit_status(GPC_ERR_USAGE);
    }
    const char *name = argv[first];
    if (strcmp(name, "help") == 0) {
        if (first + 1 < argc) {
            const gpc_command *c = find_command(argv[first + 1]);
            if (!c)
                return gpc_usage_error(&o, NULL, "unknown command '%s'", argv[first + 1]);
            gpc_command_usage(c, stdout);
        } else {
            usage_all(stdout);
        }
        return 0;
    }
    const gpc_command *c = find_command(name);
    if (!c || !c->fn) {
        gpc_error err;
        gpc_error_clear(&err);
        gpc_fail(&err, GPC_ERR_USAGE, "unknown command '%s' (see 'gpuctl help')", name);
        return gpc_report_error(&o, &err);
    }
    return c->fn(&o, c, argc - first, argv + first);
}
