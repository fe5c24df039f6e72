/*
 * slurm.c - the slurm provider: an existing Slurm cluster, one sbatch
 * allocation per gpuctl cluster (docs/providers/slurm.md).
 *
 * The Slurm clusters are the [slurm "NAME"] sections of gpuctl's config
 * file (docs/config.md): where the login node is (`local` when gpuctl runs
 * on it, else an ssh destination), the partitions to use, the account and
 * QoS to charge, the price the user pays per GPU-hour, and the directory
 * on the shared filesystem for the jobs' files.  `gpuctl check slurm` asks
 * each one what it has and records it (record.c), so that plan and offers
 * stay offline; apply submits one job (job.c).
 *
 * How the nodes come together (docs/architecture.md, "The seam"): the
 * nodes are one group (the Slurm job), each node's rank is SLURM_NODEID,
 * and the head is the NodeAddr of the allocation's first host, found on
 * the node (node.sh).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/clock.h"
#include "gpuctl/util.h"
#include "slurm/slurm_internal.h"

/* Seconds a status or control command may take on the login node. */
#define QUERY_TIMEOUT_S 60

static const char *const site_keys[] = {"login", "partitions", "account", "qos",
                                        "gpu_hour_price", "job_dir", NULL};

const slurm_site *slurm_site_find(const slurm_ctx *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->n_sites; i++)
        if (strcmp(c->sites[i].name, name) == 0)
            return &c->sites[i];
    return NULL;
}

/* Letters, digits and ".-_" (and '@' ':' '/' '~' for the fields that allow
 * them): a value that reaches a shell quoted, but is still checked so that
 * a typo is told at once. */
static int plain_word(const char *v, const char *extra)
{
    if (!*v)
        return 0;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p) && !(extra && strchr(extra, *p)))
            return 0;
    return 1;
}

static int bad_value(const gpc_provider_config *cfg, const gpc_site *st, const gpc_site_value *v,
                     const char *why, gpc_error *err)
{
    return gpc_fail(err, GPC_ERR_USAGE, "%s:%d: %s of [slurm \"%s\"]: %s", cfg->config_path,
                    v->line, v->key, st->name, why);
}

/* The names of `list` added to s->partitions: 0, -1 when one is longer
 * than a partition name may be here (63), or an error. */
static int add_partitions(slurm_site *s, const char *list, gpc_error *err)
{
    const char *p = list;
    while (*p) {
        p += strspn(p, ", \t");
        size_t n = strcspn(p, ", \t");
        if (!n)
            break;
        if (n >= sizeof(*s->partitions))
            return -1;
        char (*np)[64] = realloc(s->partitions, (s->n_partitions + 1) * sizeof(*np));
        if (!np)
            return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        s->partitions = np;
        snprintf(np[s->n_partitions++], sizeof(*np), "%.*s", (int)n, p);
        p += n;
    }
    return 0;
}

/* One [slurm "NAME"] section into *s. */
static int site_from(const gpc_provider_config *cfg, const gpc_site *st, slurm_site *s,
                     gpc_error *err)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", st->name);
    snprintf(s->from, sizeof(s->from), "%s:%d", cfg->config_path, st->line);
    snprintf(s->job_dir, sizeof(s->job_dir), "~/.gpuctl/slurm");
    int have_login = 0;
    for (size_t i = 0; i < st->n_values; i++) {
        const gpc_site_value *v = &st->values[i];
        const char *k = v->key, *val = v->value;
        if (strcmp(k, "login") == 0) {
            have_login = 1;
            if (strcmp(val, "local") == 0)
                s->local = 1;
            else if (val[0] == '-' || strlen(val) >= sizeof(s->login) ||
                     !plain_word(val, "@:[]"))
                return bad_value(cfg, st, v, "'local' or an ssh destination ([user@]host, or a "
                                 "Host of ~/.ssh/config)", err);
            else
                snprintf(s->login, sizeof(s->login), "%s", val);
        } else if (strcmp(k, "partitions") == 0) {
            int rc = add_partitions(s, val, err);
            if (rc < 0)
                return bad_value(cfg, st, v, "a partition name has at most 63 characters", err);
            if (rc)
                return rc;
            /* a list that names none is no "every partition" */
            int bad = s->n_partitions == 0;
            for (size_t j = 0; j < s->n_partitions; j++)
                if (!plain_word(s->partitions[j], NULL))
                    bad = 1;
            if (bad)
                return bad_value(cfg, st, v, "partition names are letters, digits, '.', "
                                 "'_' and '-', separated by commas", err);
        } else if (strcmp(k, "account") == 0 || strcmp(k, "qos") == 0) {
            char *dst = k[0] == 'a' ? s->account : s->qos;
            if (strlen(val) >= 64 || !plain_word(val, NULL))
                return bad_value(cfg, st, v, "letters, digits, '.', '_' and '-', at most 63", err);
            snprintf(dst, 64, "%s", val);
        } else if (strcmp(k, "gpu_hour_price") == 0) {
            char *end = NULL;
            errno = 0;
            double d = strtod(val, &end);
            if (errno || end == val || *end || !(d >= 0 && d <= 1000))
                return bad_value(cfg, st, v, "a price in USD per GPU-hour, from 0 to 1000", err);
            s->gpu_hour_price = d;
        } else if (strcmp(k, "job_dir") == 0) {
            if ((val[0] != '/' && strncmp(val, "~/", 2) != 0) ||
                strlen(val) >= sizeof(s->job_dir) || strpbrk(val, "\n'\"$`\\"))
                return bad_value(cfg, st, v, "an absolute path, or one under ~/, on the shared "
                                 "filesystem (no quotes, '$', '`' or '\\')", err);
            snprintf(s->job_dir, sizeof(s->job_dir), "%s", val);
        }
    }
    if (!have_login)
        return gpc_fail(err, GPC_ERR_USAGE, "%s: [slurm \"%s\"] has no login (login = local "
                        "when gpuctl runs on the Slurm cluster's login node, else its ssh "
                        "destination)", s->from, st->name);
    return 0;
}

static void slurm_close(void *ctx)
{
    slurm_ctx *c = ctx;
    if (!c)
        return;
    for (size_t i = 0; i < c->n_sites; i++)
        free(c->sites[i].partitions);
    free(c->sites);
    free(c);
}

/* A setting made for this provider (not the one every provider gets from
 * --endpoint or --profile): it has no use for it, and says so. */
static int no_setting(const char *value, const char *from, const char *what, const char *all,
                      gpc_error *err)
{
    if (!value || !from || strcmp(from, all) == 0)
        return 0;
    return gpc_fail(err, GPC_ERR_USAGE, "%s: slurm takes no %s: a Slurm cluster is a "
                    "[slurm \"NAME\"] section of the config file (docs/providers/slurm.md)",
                    from, what);
}

static int slurm_open(const gpc_provider_config *cfg, void **ctx, gpc_error *err)
{
    int bad = no_setting(cfg->endpoint, cfg->endpoint_from, "endpoint", "--endpoint", err);
    if (!bad)
        bad = no_setting(cfg->profile, cfg->profile_from, "profile", "--profile", err);
    if (!bad)
        bad = no_setting(cfg->region, cfg->region_from, "region", "", err);
    if (bad)
        return bad;
    slurm_ctx *c = calloc(1, sizeof(*c));
    if (!c || (cfg->n_sites && !(c->sites = calloc(cfg->n_sites, sizeof(*c->sites))))) {
        free(c);
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < cfg->n_sites; i++) {
        rc = site_from(cfg, &cfg->sites[i], &c->sites[i], err);
        c->n_sites = i + 1;
    }
    snprintf(c->state_dir, sizeof(c->state_dir), "%s", cfg->state_dir ? cfg->state_dir : "");
    c->log = cfg->log;
    if (rc) {
        slurm_close(c);
        return rc;
    }
    *ctx = c;
    return 0;
}

int slurm_record_fetch(const slurm_site *s, slurm_record *out, gpc_error *err)
{
    memset(out, 0, sizeof(*out));
    slurm_result ping, info, parts, ver;
    memset(&info, 0, sizeof(info));
    memset(&parts, 0, sizeof(parts));
    memset(&ver, 0, sizeof(ver));
    int rc = slurm_exec_ok(s, "scontrol ping", "scontrol ping", NULL, 0, QUERY_TIMEOUT_S, &ping,
                           err);
    /* "Slurmctld(primary) at localhost is UP" */
    if (!rc && !strstr(gpc_buf_str(&ping.out), "is UP")) {
        size_t ll;
        const char *l0 = slurm_first_line(gpc_buf_str(&ping.out), &ll);
        char l[256];
        snprintf(l, sizeof(l), "%.*s", (int)ll, l0);
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "slurm: the controller of Slurm cluster '%s' does "
                      "not answer: %s", s->name, l[0] ? l : "scontrol ping printed nothing");
    }
    if (!rc)
        rc = slurm_exec_ok(s, "sinfo", SLURM_SINFO_FORMAT, NULL, 0, QUERY_TIMEOUT_S, &info, err);
    if (!rc)
        rc = slurm_exec_ok(s, "scontrol show partition", "scontrol show partition -o", NULL, 0,
                           QUERY_TIMEOUT_S, &parts, err);
    if (!rc)
        rc = slurm_exec_ok(s, "sinfo -V", "sinfo -V", NULL, 0, QUERY_TIMEOUT_S, &ver, err);
    if (!rc)
        rc = slurm_record_parse(gpc_buf_str(&info.out), gpc_buf_str(&parts.out),
                                gpc_buf_str(&ver.out), out, err);
    if (!rc) {
        snprintf(out->site, sizeof(out->site), "%s", s->name);
        out->checked_at = gpc_now();
    }
    slurm_result_free(&ping);
    slurm_result_free(&info);
    slurm_result_free(&parts);
    slurm_result_free(&ver);
    return rc;
}

/* `gpuctl check slurm`: ask every configured Slurm cluster what it has and
 * record it; the detail says what each has. */
static int slurm_check(void *ctx, char *detail, size_t size, gpc_error *err)
{
    slurm_ctx *c = ctx;
    if (!c->n_sites)
        return gpc_fail(err, GPC_ERR_AUTH, "slurm: no Slurm cluster is configured: add a "
                        "[slurm \"NAME\"] section to gpuctl's config file "
                        "(docs/providers/slurm.md)");
    gpc_buf d;
    gpc_buf_init(&d, GPC_BUF_LINE_MAX);
    int rc = 0;
    for (size_t i = 0; !rc && i < c->n_sites; i++) {
        slurm_record rec;
        rc = slurm_record_fetch(&c->sites[i], &rec, err);
        if (!rc)
            rc = slurm_record_save(c, &rec, err);
        if (rc)
            break;
        /* the partitions the config names must be there */
        const slurm_site *st = &c->sites[i];
        for (size_t k = 0; !rc && k < st->n_partitions; k++) {
            size_t p = 0;
            while (p < rec.n_parts && strcmp(rec.parts[p].name, st->partitions[k]) != 0)
                p++;
            if (p < rec.n_parts)
                continue;
            gpc_buf have;
            gpc_buf_init(&have, GPC_BUF_LINE_MAX);
            for (p = 0; p < rec.n_parts; p++)
                gpc_buf_addf(&have, NULL, "%s%s", p ? ", " : "", rec.parts[p].name);
            rc = gpc_fail(err, GPC_ERR_USAGE, "%s: partitions of [slurm \"%s\"]: Slurm cluster "
                          "'%s' has no partition '%s' (it has: %s)", st->from, st->name, st->name,
                          st->partitions[k], have.len ? gpc_buf_str(&have) : "none");
            gpc_buf_free(&have);
        }
        if (rc) {
            slurm_record_free(&rec);
            break;
        }
        gpc_buf_addf(&d, NULL, "%s%s (%s, %s): %s, %zu partition(s):", d.len ? "; " : "",
                     c->sites[i].name, c->sites[i].local ? "login here" : c->sites[i].login,
                     rec.version[0] ? rec.version : "slurm", "controller up", rec.n_parts);
        for (size_t p = 0; p < rec.n_parts; p++) {
            uint32_t nn = 0, ng = 0;
            for (size_t k = 0; k < rec.n_nodes; k++)
                if (strcmp(rec.nodes[k].partition, rec.parts[p].name) == 0) {
                    nn++;
                    ng += rec.nodes[k].gpus;
                }
            gpc_buf_addf(&d, NULL, "%s %s (%u node(s), %u GPU(s))", p ? "," : "",
                         rec.parts[p].name, nn, ng);
        }
        slurm_record_free(&rec);
    }
    snprintf(detail, size, "%s", gpc_buf_str(&d));
    gpc_buf_free(&d);
    return rc;
}

/* With login = local, gpuctl runs on a login node: its files are on the
 * filesystem the compute nodes mount (docs/providers/slurm.md). */
static int slurm_shares_files(void *ctx, const gpc_offer *offer)
{
    const slurm_site *s = slurm_site_find(ctx, offer->region);
    return s && s->local;
}

extern const unsigned char gpc_node_script_slurm[];

static const gpc_userdata_rules slurm_userdata = {
    .provider = "slurm",
    .max_raw = 0, /* the bootstrap is written into the batch script: no limit
                     of a metadata service */
    .node_script = (const char *)gpc_node_script_slurm,
    .bare = 1,
};

const gpc_provider gpc_provider_slurm = {
    .name = "slurm",
    .summary = "an existing Slurm cluster: one sbatch allocation per cluster, here or over ssh",
    .caps = GPC_CAP_OWN_OFFERS | GPC_CAP_GROUP | GPC_CAP_QUEUE | GPC_CAP_SECRETS,
    .rdzv = GPC_RDZV_ON_NODE,
    .rank = GPC_RANK_SCHEDULER,
    .userdata = &slurm_userdata,
    .open = slurm_open,
    .close = slurm_close,
    .list_offers = slurm_list_offers,
    .shares_files = slurm_shares_files,
    .create_nodes = slurm_create_nodes,
    .find_node = slurm_find_node,
    .describe_node = slurm_describe_node,
    .describe_nodes = slurm_describe_nodes,
    .delete_node = slurm_delete_node,
    .check = slurm_check,
    .refresh_offers = slurm_check,
    .read_log = slurm_read_log,
    .shell_argv = slurm_shell_argv,
    .site_keys = site_keys,
    .store_url = slurm_store_url,
    .store_push = slurm_store_push,
    .store_pull = slurm_store_pull,
    .store_list = slurm_store_list,
    .store_remove = slurm_store_remove,
    .store_delete = slurm_store_delete,
};
