/* precheck.c - what apply refuses before anything is made, known without
 * calling a provider's API: the same checks for `apply` (before it
 * creates), `apply --dry-run` and `plan` (docs/cli.md), so that a plan
 * that CI approves is one apply can carry out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle.h"
#include "spec_int.h"
#include "gpuctl/data.h"
#include "gpuctl/render.h"
#include "gpuctl/util.h"

/* The absolute path of directory `field` (created when `create`); it must
 * exist.  `line`, `col`: where the spec writes it. */
static int resolve_path(const gpc_spec *spec, const char *field, const char *p, unsigned line,
                        unsigned col, int create, char **out, gpc_error *err)
{
    char *path = NULL, at[GPC_SPEC_AT_MAX];
    int rc = gpc_spec_path_at(spec, field, p, line, col, &path, err);
    if (!rc && create)
        rc = gpc_mkdir_p(path, 0755, err);
    struct stat sb;
    if (!rc && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: %s: directory '%s' does not exist (resolved: %s)",
                      gpc_spec_at(spec, line, col, at), field, p, path);
    free(path);
    return rc ? rc : gpc_spec_path(spec, p, out, err); /* canonical once it exists */
}

/* Comma-separated names of the providers that can send files and secrets
 * to their nodes (provider.h, transport_argv; plan-only ones aside), or
 * "none"; a static buffer, overwritten by the next call. */
static const char *transport_names(void)
{
    static char names[256];
    size_t len = 0;
    names[0] = '\0';
    for (size_t i = 0; gpc_providers[i]; i++) {
        const gpc_provider *p = gpc_providers[i];
        if (p->transport_argv && !(p->caps & GPC_CAP_PLAN_ONLY))
            len += (size_t)snprintf(names + len, len < sizeof(names) ? sizeof(names) - len : 0,
                                    "%s%s", len ? ", " : "", p->name);
        if (len >= sizeof(names))
            break;
    }
    return names[0] ? names : "none";
}

int gpc_lc_offer_shares(gpc_session *s, const gpc_offer *offer, int *out, gpc_error *err)
{
    const gpc_provider *p = gpc_provider_find(offer->provider);
    *out = p && (p->caps & GPC_CAP_SHARED_FILES);
    if (!p || !p->shares_files || (p->caps & GPC_CAP_PLAN_ONLY))
        return 0;
    /* the provider says per place (its answer needs a session) */
    gpc_open_provider sp;
    int rc = gpc_session_provider(s, p->name, &sp, err);
    if (!rc)
        *out = sp.prov->shares_files(sp.ctx, offer) != 0;
    return rc;
}

int gpc_lc_precheck_provider(const gpc_plan *plan, gpc_error *err)
{
    if (!plan->n_offers)
        return 0;
    const char *name = plan->offers[0].worker.provider;
    const gpc_provider *p = gpc_provider_find(name);
    if (p && !(p->caps & GPC_CAP_PLAN_ONLY))
        return 0;
    return gpc_fail(err, GPC_ERR_PROVIDER, "provider '%s' is not built into this gpuctl "
                    "(available: %s)", name, gpc_provider_names());
}

/* The payload of the head and of a worker fits the provider's transport,
 * rendered as create would for the provider's rank and rendezvous sources
 * (a placeholder head address, a full one: the longest IPv4 literal, or a
 * host name of 253 bytes); a group's nodes share one payload (rank 0, the
 * provider's rank source).  And the provider takes the spec (aws: the
 * image). */
static int payload_fits(const gpc_spec *spec, const gpc_plan *plan, const char *workdir,
                        const char *ckpt, int deliver, gpc_error *err)
{
    const gpc_offer *of = &plan->offers[0].worker;
    const gpc_provider *cp = gpc_provider_find(of->provider);
    if (!cp || (cp->caps & GPC_CAP_PLAN_ONLY))
        return 0; /* refused as not built in (gpc_lc_precheck_provider) */
    int rc = cp->check_spec ? cp->check_spec(spec, err) : 0;
    const gpc_userdata_rules *rules = cp->userdata;
    int group = (cp->caps & GPC_CAP_GROUP) != 0;
    char long_name[254];
    for (size_t i = 0; i < sizeof(long_name) - 1; i++)
        long_name[i] = i % 64 == 63 ? '.' : 'h';
    long_name[sizeof(long_name) - 1] = '\0';
    for (uint32_t r = 0; !rc && rules && r < (spec->nodes > 1 && !group ? 2u : 1u); r++) {
        /* as launch.c makes the node: in a batch or by itself */
        gpc_rank_from rf = gpc_provider_rank_source(cp, r, gpc_provider_batches(cp, r, spec->nodes));
        const char *head = NULL;
        if (cp->rdzv == GPC_RDZV_NAME)
            head = long_name;
        else if (cp->rdzv == GPC_RDZV_HEAD_IP && (rf != GPC_RANK_ENGINE || r > 0))
            head = "255.255.255.255";
        gpc_node_ctx ctx = {
            .cluster = spec->name, .cluster_id = "00000000000000000000000000000000",
            .rank = r, .nnodes = spec->nodes,
            .head_addr = head, .rdzv_port = 65535,
            .workdir = workdir, .checkpoint_dir = ckpt,
            .fabric = of->fabric[0] && spec->resources.interconnect != GPC_IC_NONE
                          ? of->fabric : NULL,
            .instance_type = of->instance_type,
            .rank_from = rf, .rdzv_from = cp->rdzv, .deliver = deliver,
            /* the largest a node's can be: with the notice watcher */
            .spot = 1, .cluster_hourly = plan->offers[0].price_cluster,
        };
        /* the spec's data as apply renders it for nodes that fetch it
         * (data.h): its URLs, for a store's one as long as a bucket's
         * (63 bytes) with the scheme and "/data/NAME" can be */
        const char **dnames = calloc(spec->n_data + 1, sizeof(char *));
        const char **durls = calloc(spec->n_data + 1, sizeof(char *));
        char store_url[160];
        memset(store_url, 'x', sizeof(store_url) - 1);
        store_url[sizeof(store_url) - 1] = '\0';
        if (!dnames || !durls)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < spec->n_data && !(cp->caps & GPC_CAP_SHARED_FILES); i++) {
            dnames[i] = spec->data[i].name;
            durls[i] = spec->data[i].is_url ? spec->data[i].source : store_url;
            ctx.data_dir = "";
            ctx.data_fetch = 1;
            ctx.data_names = dnames;
            ctx.data_urls = durls;
            ctx.n_data = i + 1;
        }
        gpc_payload pl;
        memset(&pl, 0, sizeof(pl));
        char *enc = NULL;
        size_t enc_len;
        if (!rc)
            rc = gpc_render_payload(spec, &ctx, rules, &pl, err);
        if (!rc)
            rc = gpc_payload_cloud_init(&pl, rules, &enc, &enc_len, NULL, err);
        gpc_payload_free(&pl);
        free(enc);
        free(dnames);
        free(durls);
    }
    return rc;
}

/* The data sets other live clusters use with other content (data.c,
 * offline): in the store of the chosen offer, or, for a re-run, of the
 * cluster's head. */
static int check_data_users(gpc_session *s, const gpc_spec *spec, const gpc_plan *plan,
                            gpc_error *err)
{
    if (plan->action != GPC_PLAN_RERUN)
        return plan->n_offers ? gpc_data_check_place(s, spec, &plan->offers[0].worker, err)
                              : 0;
    gpc_cluster_rec c;
    memset(&c, 0, sizeof(c));
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_offer at;
    memset(&at, 0, sizeof(at));
    int rc = gpc_cluster_get(s->st, spec->name, &c, err);
    if (!rc)
        rc = gpc_node_list(s->st, c.id, 0, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (nodes[i].rank == 0) {
            snprintf(at.provider, sizeof(at.provider), "%s", nodes[i].provider);
            snprintf(at.region, sizeof(at.region), "%s", nodes[i].region);
        }
    gpc_node_list_free(nodes, n);
    gpc_cluster_rec_free(&c);
    return !rc && at.provider[0] ? gpc_data_check_place(s, spec, &at, err) : rc;
}

int gpc_lc_precheck(gpc_session *s, const gpc_spec *spec, const gpc_plan *plan,
                    const char *have_provider, int make_dirs, gpc_lc_dirs *d, gpc_error *err)
{
    memset(d, 0, sizeof(*d));
    char at[GPC_SPEC_AT_MAX];
    /* Where the job's directories are, as the node sees them.  The local
     * provider's nodes share this machine's files, and so do those of a
     * place its provider says so of (shares_files: a Slurm cluster whose
     * login node this is); a cloud node has its own disk, where
     * checkpoint_dir is a path of the node's and nothing of this machine
     * is copied (yet). */
    const char *target = plan->n_offers ? plan->offers[0].worker.provider
                       : have_provider ? have_provider : gpc_provider_default()->name;
    const gpc_provider *tp = gpc_provider_find(target);
    int rc = plan->action != GPC_PLAN_NONE ? gpc_spec_check_paths(spec, err) : 0;
    d->shares_files = tp && (tp->caps & GPC_CAP_SHARED_FILES);
    if (!rc && tp && tp->shares_files && plan->n_offers && !(tp->caps & GPC_CAP_PLAN_ONLY))
        rc = gpc_lc_offer_shares(s, &plan->offers[0].worker, &d->shares_files, err);
    /* the job's directories as resolved here hold only on offers whose
     * nodes see this machine's files as the first one's do */
    d->dirs_depend = spec->workdir || (spec->checkpoint_dir && spec->checkpoint_dir[0] != '/');
    /* Nodes that do not see this machine's files get the workdir (and
     * secrets a provider cannot put in their environment itself) from
     * gpuctl over the provider's transport (deliver.c), where it has one;
     * also on an apply that changes nothing (a re-sync). */
    int transport = tp && tp->transport_argv && !(tp->caps & GPC_CAP_PLAN_ONLY);
    int send_secrets = spec->n_secrets && tp && !(tp->caps & GPC_CAP_SECRETS) && transport;
    if (rc)
        ;
    else if (spec->workdir && d->shares_files)
        rc = resolve_path(spec, "workdir", spec->workdir, spec->workdir_line,
                          spec->workdir_col, 0, &d->workdir, err);
    else if (spec->workdir && transport && (plan->action != GPC_PLAN_NONE || make_dirs))
        rc = resolve_path(spec, "workdir", spec->workdir, spec->workdir_line,
                          spec->workdir_col, 0, &d->send_workdir, err);
    else if (spec->workdir && plan->action != GPC_PLAN_NONE)
        rc = gpc_fail(err, GPC_ERR_SPEC, "%s: workdir: the chosen offer is on %s, whose nodes "
                      "cannot see this machine's files%s%s%s and which cannot send it to them "
                      "(providers that can: %s); put the code in the image or fetch it in "
                      "setup", gpc_spec_at(spec, spec->workdir_line, spec->workdir_col, at),
                      target,
                      tp && tp->shares_files ? " there" : " (only the ",
                      tp && tp->shares_files ? "" : gpc_provider_names_with(GPC_CAP_SHARED_FILES),
                      tp && tp->shares_files ? "" : " provider shares them)",
                      transport_names());
    d->deliver = !rc && (d->send_workdir || send_secrets);
    /* Judged, as workdir, only where something is to be made: a cluster
     * already applied whose provider now offers nothing (no offer to ask
     * shares_files of) keeps the path its apply resolved. */
    if (!rc && spec->checkpoint_dir && !d->shares_files && plan->action != GPC_PLAN_NONE) {
        rc = spec_check_node_ckpt(spec, target, err);
        if (rc)
            ;
        else if (!(d->ckpt = strdup(spec->checkpoint_dir)))
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    } else if (!rc && spec->checkpoint_dir && make_dirs && plan->action != GPC_PLAN_NONE) {
        rc = resolve_path(spec, "checkpoint_dir", spec->checkpoint_dir,
                          spec->checkpoint_dir_line, spec->checkpoint_dir_col, 1, &d->ckpt, err);
    }
    if (!rc && plan->action != GPC_PLAN_NONE && plan->n_offers)
        rc = gpc_data_check_offer(spec, &plan->offers[0].worker, err);
    if (!rc && plan->action != GPC_PLAN_NONE && spec->n_data)
        rc = check_data_users(s, spec, plan, err);
    if (!rc && plan->action != GPC_PLAN_NONE && plan->n_offers)
        rc = payload_fits(spec, plan, d->workdir, d->ckpt, d->deliver, err);
    /* secrets: a provider that can keep them out of what it records, and
     * values that can be read now */
    if (!rc && spec->n_secrets && (plan->action != GPC_PLAN_NONE || (send_secrets && make_dirs))) {
        if (tp && !(tp->caps & GPC_CAP_SECRETS) && !(tp->caps & GPC_CAP_PLAN_ONLY) && !transport)
            rc = gpc_fail(err, GPC_ERR_SPEC, "%s: secrets: the chosen offer is on %s, which "
                          "cannot deliver secrets to its nodes without writing them where "
                          "they are kept (providers that can: %s; over ssh: %s); pass them "
                          "another way, or choose such a provider",
                          gpc_spec_at(spec, spec->secrets[0].line, spec->secrets[0].col, at),
                          target,
                          gpc_provider_names_with(GPC_CAP_SECRETS), transport_names());
        if (!rc)
            rc = gpc_secrets_read(spec, &d->secrets, &d->n_secrets, err);
    }
    if (rc)
        gpc_lc_dirs_free(d);
    return rc;
}

void gpc_lc_dirs_free(gpc_lc_dirs *d)
{
    free(d->workdir);
    free(d->ckpt);
    free(d->send_workdir);
    gpc_secrets_free(d->secrets, d->n_secrets);
    memset(d, 0, sizeof(*d));
}

int gpc_spec_check_targets(const gpc_spec *spec, gpc_error *err)
{
    /* what any of the spec's providers can take, as gpc_lc_precheck
     * judges for one (a provider not built in takes everything here: it is
     * refused as such) */
    int may_share = 0, secrets_ok = 0, store = 0, spec_ok = 0, refused = 0;
    gpc_error why; /* the first provider's check_spec refusal */
    gpc_error_clear(&why);
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < spec->n_providers; i++) {
        const gpc_provider *p = gpc_provider_find(spec->providers[i]);
        int k = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                         spec->providers[i]);
        if (k > 0 && (size_t)k < sizeof(names) - len)
            len += (size_t)k;
        if (!p) {
            may_share = secrets_ok = store = spec_ok = 1;
            continue;
        }
        int plan_only = (p->caps & GPC_CAP_PLAN_ONLY) != 0;
        /* what the provider itself refuses (aws: the image); plan does not
         * ask a plan-only one */
        if (plan_only || !p->check_spec) {
            spec_ok = 1;
        } else if (!spec_ok) {
            gpc_error e;
            gpc_error_clear(&e);
            if (p->check_spec(spec, &e) == 0)
                spec_ok = 1;
            else if (!refused++)
                why = e;
        }
        may_share |= (p->caps & GPC_CAP_SHARED_FILES) || p->shares_files;
        /* plan does not refuse secrets on a plan-only provider's offer */
        secrets_ok |= (p->caps & GPC_CAP_SECRETS) || plan_only ||
                      (p->transport_argv && !plan_only);
        store |= !plan_only && p->store_url && p->store_push;
    }
    char at[GPC_SPEC_AT_MAX];
    if (!spec_ok && refused)
        return gpc_error_wrap(err, &why, NULL);
    if (!may_share && spec->checkpoint_dir) {
        int rc = spec_check_node_ckpt(spec, names, err);
        if (rc)
            return rc;
    }
    if (!secrets_ok && spec->n_secrets)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: secrets: %s cannot deliver secrets to the "
                        "nodes without writing them where they are kept (providers that can: "
                        "%s; over ssh: %s); pass them another way, or choose such a provider",
                        gpc_spec_at(spec, spec->secrets[0].line, spec->secrets[0].col, at),
                        names, gpc_provider_names_with(GPC_CAP_SECRETS), transport_names());
    if (!store && spec->n_data)
        return gpc_fail(err, GPC_ERR_SPEC, "%s:%u:%u: data.%s: %s %s no object store in this "
                        "release, so the data set cannot be placed where the nodes read it; "
                        "name in `provider` only providers with one (%s), or drop `data` and "
                        "fetch the data in `setup`", spec->source, spec->data[0].line,
                        spec->data[0].col, spec->data[0].name, names,
                        spec->n_providers > 1 ? "have" : "has", gpc_data_store_names());
    return 0;
}

int gpc_plan_check(gpc_session *s, const gpc_spec *spec, const gpc_plan *plan, gpc_error *err)
{
    gpc_lc_dirs d;
    int rc = gpc_lc_precheck(s, spec, plan, NULL, 0, &d, err);
    gpc_lc_dirs_free(&d);
    return rc;
}
