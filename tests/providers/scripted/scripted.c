/* scripted.c - the scripted test providers (scripted.h): a cloud in memory
 * that records every call and answers from a script */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/buf.h"
#include "gpuctl/clock.h"
#include "gpuctl/provider.h"
#include "scripted/scripted.h"

#define SC_MAX_NODES 64
#define SC_MAX_RULES 32
#define SC_MAX_OFFERS 8
#define SC_MAX_REGIONS 8
#define SC_MAX_ZONES 8
#define SC_MAX_EXITS 8

typedef struct sc_node {
    char id[16];
    char ip[16];
    char name[128];
    char token[96];
    char cluster_uid[40];
    char region[48];
    int64_t created_at;
    int exit_code;   /* the job's, when it ends */
    long run_s;      /* how long the job runs */
    int deleted;     /* deleted (delete_node, cleanup_cluster) */
    int gone;        /* gone without a delete (scripted_gone) */
    char group[16];  /* "g-N" for a node of a group (scripted_group), else "" */
    char notice[32]; /* an interruption notice's action (scripted_notice) */
    int64_t notice_at; /* and its deadline */
    char detail[128]; /* what describe says of it (scripted_detail), or "" */
    char cluster[64]; /* its cluster's name */
    int64_t expires_at; /* list_orphans's expiry of it (scripted_expires), 0 none */
} sc_node;

typedef struct sc_rule {
    char op[24];
    char where[192];
    int nth;         /* 0 = each */
    int seen;        /* matching calls counted so far */
    gpc_code code;
    int lost;        /* act, then lose the answer */
} sc_rule;

static struct {
    sc_node nodes[SC_MAX_NODES];
    size_t n_nodes;
    sc_rule rules[SC_MAX_RULES];
    size_t n_rules;
    gpc_offer offers[SC_MAX_OFFERS];
    size_t n_offers;
    struct {
        char region[48];
        char zones[SC_MAX_ZONES][48];
        size_t n;
    } zonesets[SC_MAX_REGIONS];
    size_t n_zonesets;
    struct {
        char name[128];
        int code;
        long run_s;
    } exits[SC_MAX_EXITS];
    size_t n_exits;
    struct {
        char region[48];
        int shares;
    } shares[SC_MAX_REGIONS];
    size_t n_shares;
    long boot_s, run_s;
    int keep_up;         /* scripted_keep_up */
    size_t n_groups;
    char dirs[1024];     /* the last create's workdir and checkpoint_dir */
    gpc_buf log;
    int ready;
    struct {
        char id[16];
        int64_t at;
        int gone;    /* gone without a delete then, not preempted (scripted_gone_at) */
    } preempts[8]; /* nodes taken back at a time (scripted_preempt_at) */
} W;

/* A test that scripts more than the world holds is wrong: say so, loudly. */
static void sc_full(const char *what)
{
    fprintf(stderr, "scripted: too many %s\n", what);
    abort();
}

static void sc_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

void scripted_reset(void)
{
    if (W.ready)
        gpc_buf_free(&W.log);
    memset(&W, 0, sizeof(W));
    gpc_buf_init(&W.log, GPC_BUF_FILE_MAX);
    W.ready = 1;
    W.boot_s = 5;
    W.run_s = 60;
    snprintf(W.dirs, sizeof(W.dirs), "none");
}

static void sc_init(void)
{
    if (!W.ready)
        scripted_reset();
}

const char *scripted_calls(void)
{
    sc_init();
    return gpc_buf_str(&W.log);
}

void scripted_calls_clear(void)
{
    sc_init();
    gpc_buf_reset(&W.log);
}

void scripted_timing(long boot_s, long run_s)
{
    sc_init();
    W.boot_s = boot_s;
    W.run_s = run_s;
}

void scripted_offer_zone(const char *type, const char *region, const char *zone,
                         double price)
{
    sc_init();
    if (W.n_offers == SC_MAX_OFFERS)
        sc_full("offers");
    gpc_offer *o = &W.offers[W.n_offers++];
    memset(o, 0, sizeof(*o));
    sc_copy(o->instance_type, sizeof(o->instance_type), type);
    sc_copy(o->region, sizeof(o->region), region);
    sc_copy(o->zone, sizeof(o->zone), zone);
    o->vcpus = 8;
    o->mem_gib = 32;
    o->price_hourly = price;
    sc_copy(o->fabric, sizeof(o->fabric), "none");
}

void scripted_offer(const char *type, const char *region, double price)
{
    scripted_offer_zone(type, region, "", price);
}

void scripted_zones(const char *region, const char *zones)
{
    sc_init();
    size_t i = 0;
    while (i < W.n_zonesets && strcmp(W.zonesets[i].region, region) != 0)
        i++;
    if (i == SC_MAX_REGIONS)
        sc_full("regions");
    if (i == W.n_zonesets)
        W.n_zonesets++;
    sc_copy(W.zonesets[i].region, sizeof(W.zonesets[i].region), region);
    W.zonesets[i].n = 0;
    const char *p = zones;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (len) {
            if (W.zonesets[i].n == SC_MAX_ZONES)
                sc_full("zones");
            snprintf(W.zonesets[i].zones[W.zonesets[i].n++], 48, "%.*s", (int)len, p);
        }
        p += len;
        p += strspn(p, " ");
    }
}

void scripted_exit(const char *name, int code, long run_s)
{
    sc_init();
    if (W.n_exits == SC_MAX_EXITS)
        sc_full("exit statuses");
    sc_copy(W.exits[W.n_exits].name, sizeof(W.exits[0].name), name);
    W.exits[W.n_exits].run_s = run_s;
    W.exits[W.n_exits++].code = code;
}

void scripted_keep_up(int on)
{
    sc_init();
    W.keep_up = on;
}

static sc_node *sc_by_id(const char *id)
{
    for (size_t i = 0; i < W.n_nodes; i++)
        if (strcmp(W.nodes[i].id, id) == 0)
            return &W.nodes[i];
    return NULL;
}

void scripted_gone(const char *id)
{
    sc_init();
    sc_node *nd = sc_by_id(id);
    if (nd)
        nd->gone = 1;
}

static void sc_lose_at(const char *id, int64_t at, int gone)
{
    sc_init();
    for (size_t i = 0; i < sizeof(W.preempts) / sizeof(W.preempts[0]); i++)
        if (!W.preempts[i].id[0] || strcmp(W.preempts[i].id, id) == 0) {
            sc_copy(W.preempts[i].id, sizeof(W.preempts[i].id), id);
            W.preempts[i].at = at;
            W.preempts[i].gone = gone;
            return;
        }
    sc_full("preemptions");
}

void scripted_preempt_at(const char *id, int64_t at)
{
    sc_lose_at(id, at, 0);
}

void scripted_gone_at(const char *id, int64_t at)
{
    sc_lose_at(id, at, 1);
}

/* When node `id` is taken back (or gone: *gone 1), 0 = never. */
static int64_t sc_preempt_at(const char *id, int *gone)
{
    *gone = 0;
    for (size_t i = 0; i < sizeof(W.preempts) / sizeof(W.preempts[0]); i++)
        if (W.preempts[i].id[0] && strcmp(W.preempts[i].id, id) == 0) {
            *gone = W.preempts[i].gone;
            return W.preempts[i].at;
        }
    return 0;
}

void scripted_offer_spot(const char *type, const char *region, double price)
{
    scripted_offer_zone(type, region, "", price);
    W.offers[W.n_offers - 1].spot = 1;
}

void scripted_offer_fabric(const char *fabric)
{
    sc_init();
    if (W.n_offers == 0)
        sc_full("offers (none to give a fabric)");
    sc_copy(W.offers[W.n_offers - 1].fabric, sizeof(W.offers[0].fabric), fabric);
}

void scripted_notice(const char *id, const char *action, int64_t deadline)
{
    sc_init();
    sc_node *nd = sc_by_id(id);
    if (!nd)
        sc_full("notices for nodes that do not exist");
    sc_copy(nd->notice, sizeof(nd->notice), action);
    nd->notice_at = deadline;
}

void scripted_detail(const char *id, const char *detail)
{
    sc_init();
    sc_node *nd = sc_by_id(id);
    if (!nd)
        sc_full("details for nodes that do not exist");
    sc_copy(nd->detail, sizeof(nd->detail), detail);
}

void scripted_expires(const char *id, int64_t at)
{
    sc_init();
    sc_node *nd = sc_by_id(id);
    if (!nd)
        sc_full("expiries for nodes that do not exist");
    nd->expires_at = at;
}

void scripted_shares_files(const char *region, int shares)
{
    sc_init();
    size_t i = 0;
    while (i < W.n_shares && strcmp(W.shares[i].region, region) != 0)
        i++;
    if (i == SC_MAX_REGIONS)
        sc_full("regions");
    if (i == W.n_shares)
        W.n_shares++;
    sc_copy(W.shares[i].region, sizeof(W.shares[i].region), region);
    W.shares[i].shares = shares;
}

const char *scripted_dirs(void)
{
    sc_init();
    return W.dirs;
}

static void add_rule(const char *op, const char *where, int nth, gpc_code code, int lost)
{
    sc_init();
    if (W.n_rules == SC_MAX_RULES)
        sc_full("rules");
    sc_rule *r = &W.rules[W.n_rules++];
    memset(r, 0, sizeof(*r));
    sc_copy(r->op, sizeof(r->op), op);
    sc_copy(r->where, sizeof(r->where), where);
    r->nth = nth;
    r->code = code;
    r->lost = lost;
}

void scripted_fail(const char *op, const char *where, int nth, gpc_code code)
{
    add_rule(op, where, nth, code, 0);
}

void scripted_lose(const char *op, const char *where, int nth)
{
    add_rule(op, where, nth, GPC_ERR_PROVIDER, 1);
}

/* ---- one call: its line, and the rule that answers it ----------------- */

typedef struct sc_call {
    char line[1024];     /* "op key=value ..." */
    const sc_rule *rule; /* the rule that fires, or NULL */
} sc_call;

/* Does `line` hold the word `w` (whole, between spaces)? */
static int has_word(const char *line, const char *w, size_t len)
{
    for (const char *p = line; (p = strstr(p, " ")) != NULL; p++)
        if (strncmp(p + 1, w, len) == 0 && (p[1 + len] == ' ' || p[1 + len] == '\0'))
            return 1;
    return 0;
}

static int rule_matches(const sc_rule *r, const char *op, const char *line)
{
    if (strcmp(r->op, op) != 0)
        return 0;
    for (const char *p = r->where; *p;) {
        size_t len = strcspn(p, " ");
        if (len && !has_word(line, p, len))
            return 0;
        p += len;
        p += strspn(p, " ");
    }
    return 1;
}

/* Start a call: its line from the format; count it against every rule. */
static void sc_begin(sc_call *c, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sc_begin(sc_call *c, const char *op, const char *fmt, ...)
{
    sc_init();
    int len = snprintf(c->line, sizeof(c->line), "%s", op);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->line + len, sizeof(c->line) - (size_t)len, fmt, ap);
        va_end(ap);
    }
    c->rule = NULL;
    for (size_t i = 0; i < W.n_rules; i++) {
        sc_rule *r = &W.rules[i];
        if (!rule_matches(r, op, c->line))
            continue;
        r->seen++;
        if (!c->rule && (r->nth == 0 || r->seen == r->nth))
            c->rule = r;
    }
}

/* The call does nothing and fails, as scripted. */
static int sc_fails(const sc_call *c)
{
    return c->rule && !c->rule->lost;
}

/* The call acts, and its answer will be lost: the caller sees no output. */
static int sc_lost(const sc_call *c)
{
    return c->rule && c->rule->lost;
}

/* End a call: log its line and result; returns rc, or the scripted error
 * (err filled) when a rule fired. */
static int sc_end(sc_call *c, int rc, gpc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sc_end(sc_call *c, int rc, gpc_error *err, const char *fmt, ...)
{
    char result[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(result, sizeof(result), fmt, ap);
        va_end(ap);
    }
    const char *op = c->line;
    size_t oplen = strcspn(op, " ");
    if (c->rule && c->rule->lost) {
        rc = gpc_fail(err, GPC_ERR_PROVIDER, "scripted: %.*s: connection reset (answer lost)",
                      (int)oplen, op);
        gpc_buf_addf(&W.log, NULL, "%s -> %s, ERR provider (answer lost)\n", c->line, result);
    } else if (c->rule) {
        rc = gpc_fail(err, c->rule->code, "scripted: %.*s: %s (scripted)", (int)oplen, op,
                      gpc_code_name(c->rule->code));
        gpc_buf_addf(&W.log, NULL, "%s -> ERR %s\n", c->line, gpc_code_name(c->rule->code));
    } else if (rc) {
        gpc_buf_addf(&W.log, NULL, "%s -> ERR %s\n", c->line, gpc_code_name((gpc_code)rc));
    } else {
        gpc_buf_addf(&W.log, NULL, "%s -> %s\n", c->line, result);
    }
    return rc;
}

/* ---- the nodes -------------------------------------------------------- */

/* The phase of a node now, with its exit status when its job ended. */
static void sc_status(const sc_node *nd, int with_ip, gpc_node_status *out)
{
    memset(out, 0, sizeof(*out));
    sc_copy(out->provider_id, sizeof(out->provider_id), nd->id);
    if (with_ip)
        sc_copy(out->private_ip, sizeof(out->private_ip), nd->ip);
    out->exit_code = -1;
    if (nd->group[0])
        snprintf(out->data, sizeof(out->data), "{\"group\":\"%s\",\"node\":\"%s\"}",
                 nd->group, nd->id);
    int64_t age = gpc_now() - nd->created_at;
    if (nd->deleted || nd->gone) {
        out->phase = GPC_PHASE_TERMINATED;
        out->stopped = 1;
        sc_copy(out->detail, sizeof(out->detail), nd->deleted ? "deleted" : "gone");
        return;
    }
    int gone_then = 0;
    int64_t pat = sc_preempt_at(nd->id, &gone_then);
    if (pat && gpc_now() >= pat) {
        out->phase = gone_then ? GPC_PHASE_TERMINATED : GPC_PHASE_PREEMPTED;
        out->stopped = 1;
        sc_copy(out->detail, sizeof(out->detail), gone_then ? "gone" : "spot interruption");
        return;
    }
    sc_copy(out->detail, sizeof(out->detail), nd->detail);
    if (age < W.boot_s) {
        out->phase = GPC_PHASE_BOOTING;
    } else if (age < W.boot_s + nd->run_s || W.keep_up) {
        out->phase = GPC_PHASE_RUNNING;
    } else {
        out->exit_code = nd->exit_code;
        out->phase = nd->exit_code == 0 ? GPC_PHASE_SUCCEEDED : GPC_PHASE_FAILED;
        out->stopped = 1;
    }
}

/* "booting", "succeeded(0)" into buf. */
static const char *sc_phase(const gpc_node_status *ns, char *buf, size_t size)
{
    if (ns->exit_code >= 0)
        snprintf(buf, size, "%s(%d)", gpc_phase_name(ns->phase), ns->exit_code);
    else
        snprintf(buf, size, "%s", gpc_phase_name(ns->phase));
    return buf;
}

/* The newest node with this client token. */
static sc_node *sc_by_token(const char *token)
{
    for (size_t i = W.n_nodes; i-- > 0;)
        if (strcmp(W.nodes[i].token, token) == 0)
            return &W.nodes[i];
    return NULL;
}

static sc_node *sc_make(const gpc_node_request *req, const char *token)
{
    if (W.n_nodes == SC_MAX_NODES)
        sc_full("nodes");
    sc_node *nd = &W.nodes[W.n_nodes++];
    memset(nd, 0, sizeof(*nd));
    snprintf(nd->id, sizeof(nd->id), "s-%zu", W.n_nodes);
    snprintf(nd->ip, sizeof(nd->ip), "10.0.0.%zu", W.n_nodes);
    sc_copy(nd->name, sizeof(nd->name), req->name);
    sc_copy(nd->token, sizeof(nd->token), token);
    sc_copy(nd->cluster_uid, sizeof(nd->cluster_uid), req->cluster_uid);
    sc_copy(nd->cluster, sizeof(nd->cluster), req->cluster);
    sc_copy(nd->region, sizeof(nd->region), req->offer->region);
    nd->created_at = gpc_now();
    nd->run_s = W.run_s;
    for (size_t i = 0; i < W.n_exits; i++) {
        if (strcmp(W.exits[i].name, nd->name) != 0)
            continue;
        nd->exit_code = W.exits[i].code;
        if (W.exits[i].run_s >= 0)
            nd->run_s = W.exits[i].run_s;
    }
    return nd;
}

/*
 * What the payload hands the node: its rank ("+index" when it adds its
 * launch index, "sched" when the scheduler gives it on the node, "rdzv"
 * when the rendezvous numbers the node) and the head's address ("-" when
 * none: the head finds its own; "node" when the node script finds it).  Read from the rendered bootstrap (templates/bootstrap.sh); the one
 * place that knows the payload's form.
 */
static void sc_payload(const gpc_node_request *req, char *rank, size_t rl, char *head,
                       size_t hl)
{
    const char *ud = req->payload && req->payload->script ? req->payload->script : "";
    const char *r = strstr(ud, "export GPUCTL_NODE_RANK=");
    const char *h = strstr(ud, "GPUCTL_HEAD_IP=");
    snprintf(rank, rl, "?");
    snprintf(head, hl, "?");
    if (strstr(ud, "gpuctl_node_rank=$(gpuctl_md_node_rank)")) {
        snprintf(rank, rl, "sched"); /* the scheduler's, on the node */
    } else if (r) {
        r += strlen("export GPUCTL_NODE_RANK=");
        size_t len = strcspn(r, "\n");
        if (len == 2 && strncmp(r, "''", 2) == 0)
            snprintf(rank, rl, "rdzv"); /* none: the rendezvous numbers it */
        else
            snprintf(rank, rl, "%.*s%s", (int)len, r,
                     strstr(ud, "gpuctl_launch_index=$(gpuctl_md_launch_index)") ? "+index" : "");
    }
    if (strstr(ud, "GPUCTL_HEAD_IP=$(gpuctl_md_head_addr)")) {
        snprintf(head, hl, "node"); /* found on the node */
    } else if (h) {
        h += strlen("GPUCTL_HEAD_IP=");
        size_t len = strcspn(h, "\n");
        if (len >= 2 && h[0] == '\'' && h[len - 1] == '\'') {
            h++;
            len -= 2;
        }
        if (len)
            snprintf(head, hl, "%.*s", (int)len, h);
        else
            snprintf(head, hl, "-");
    }
}

/* The value of the payload's line "NAME=VALUE" unquoted, "-" when empty
 * or absent, into buf. */
static void sc_payload_var(const char *ud, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "-");
    size_t nl = strlen(name);
    for (const char *p = ud; (p = strstr(p, name)) != NULL; p += nl) {
        if ((p != ud && p[-1] != '\n') || p[nl] != '=')
            continue;
        const char *v = p + nl + 1;
        size_t len = strcspn(v, "\n");
        if (len >= 2 && v[0] == '\'' && v[len - 1] == '\'') {
            v++;
            len -= 2;
        }
        if (len)
            snprintf(buf, size, "%.*s", (int)len, v);
        return;
    }
}

/* Keep the directories the payload of `req` hands the node
 * (scripted_dirs). */
static void sc_keep_dirs(const gpc_node_request *req)
{
    const char *ud = req->payload && req->payload->script ? req->payload->script : "";
    char wd[480], ck[480];
    sc_payload_var(ud, "GPUCTL_WORKDIR", wd, sizeof(wd));
    sc_payload_var(ud, "GPUCTL_CHECKPOINT_DIR", ck, sizeof(ck));
    snprintf(W.dirs, sizeof(W.dirs), "workdir=%s checkpoint_dir=%s", wd, ck);
}

/* ---- the operations --------------------------------------------------- */

static int sc_open(const gpc_provider_config *cfg, void **ctx, gpc_error *err)
{
    sc_init();
    *ctx = &W;
    return 0;
}

static void sc_close(void *ctx)
{
}

static int sc_list_offers(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                          gpc_error *err, const char *provider)
{
    sc_call c;
    sc_begin(&c, "list_offers", NULL);
    *out = NULL;
    *n = 0;
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    if (W.n_offers == 0)
        scripted_offer("t1", "r1", 1.0);
    *out = calloc(W.n_offers, sizeof(**out));
    if (!*out)
        return sc_end(&c, gpc_fail(err, GPC_ERR_NOMEM, "out of memory"), err, NULL);
    for (size_t i = 0; i < W.n_offers; i++) {
        (*out)[i] = W.offers[i];
        sc_copy((*out)[i].provider, sizeof((*out)[i].provider), provider);
    }
    *n = W.n_offers;
    return sc_end(&c, 0, err, "%zu", *n);
}

static int sc_offers_one(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                         gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted");
}

static int sc_offers_batch(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                           gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted_batch");
}

static int sc_offers_basic(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                           gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted_basic");
}

static int sc_offers_named(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                           gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted_named");
}

static int sc_offers_group(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                           gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted_group");
}

static int sc_offers_elastic(void *ctx, const gpc_spec *spec, gpc_offer **out, size_t *n,
                             gpc_error *err)
{
    return sc_list_offers(ctx, spec, out, n, err, "scripted_rdzv");
}

static int sc_list_zones(void *ctx, const gpc_offer *offer, char (**zones)[48], size_t *n,
                         gpc_error *err)
{
    sc_call c;
    sc_begin(&c, "list_zones", " region=%s type=%s", offer->region, offer->instance_type);
    *zones = NULL;
    *n = 0;
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    size_t i = 0;
    while (i < W.n_zonesets && strcmp(W.zonesets[i].region, offer->region) != 0)
        i++;
    size_t k = i < W.n_zonesets ? W.zonesets[i].n : 1;
    *zones = calloc(k ? k : 1, sizeof(**zones));
    if (!*zones)
        return sc_end(&c, gpc_fail(err, GPC_ERR_NOMEM, "out of memory"), err, NULL);
    char list[SC_MAX_ZONES * 49] = "";
    for (size_t z = 0; z < k; z++) {
        if (i < W.n_zonesets)
            sc_copy((*zones)[z], 48, W.zonesets[i].zones[z]);
        else
            snprintf((*zones)[z], 48, "%.46sa", offer->region);
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", z ? "," : "",
                 (*zones)[z]);
    }
    *n = k;
    return sc_end(&c, 0, err, "%s", k ? list : "(none)");
}

/* Do the nodes of `offer` see this machine's files?  As scripted for its
 * region (scripted_shares_files), else yes. */
static int sc_shares_files(void *ctx, const gpc_offer *offer)
{
    sc_call c;
    sc_begin(&c, "shares_files", " region=%s zone=%s", offer->region,
             offer->zone[0] ? offer->zone : "-");
    int shares = 1;
    for (size_t i = 0; i < W.n_shares; i++)
        if (strcmp(W.shares[i].region, offer->region) == 0)
            shares = W.shares[i].shares;
    gpc_error err;
    gpc_error_clear(&err);
    sc_end(&c, 0, &err, "%d", shares);
    return shares;
}

/* Create one node (or give the one of this token again). */
static int sc_create(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                     gpc_error *err, int with_ip)
{
    char rank[32], head[64];
    sc_payload(req, rank, sizeof(rank), head, sizeof(head));
    sc_keep_dirs(req);
    sc_call c;
    sc_begin(&c, "create_node", " name=%s rank=%s region=%s zone=%s type=%s token=%s "
             "attempt=%u head=%s", req->name, rank, req->offer->region,
             req->offer->zone[0] ? req->offer->zone : "-", req->offer->instance_type,
             req->client_token, req->attempt, head);
    memset(out, 0, sizeof(*out));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    sc_node *nd = sc_by_token(req->client_token);
    if (!nd)
        nd = sc_make(req, req->client_token);
    sc_status(nd, with_ip, out);
    if (sc_lost(&c))
        memset(out, 0, sizeof(*out));
    return sc_end(&c, 0, err, "%s", nd->id);
}

static int sc_create_ip(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                        gpc_error *err)
{
    return sc_create(ctx, req, out, err, 1);
}

static int sc_create_no_ip(void *ctx, const gpc_node_request *req, gpc_node_status *out,
                           gpc_error *err)
{
    return sc_create(ctx, req, out, err, 0);
}

static int sc_create_many(const gpc_node_request *reqs, size_t n, gpc_node_status *out,
                          gpc_error *err, int as_group)
{
    char rank[32], head[64];
    sc_payload(&reqs[0], rank, sizeof(rank), head, sizeof(head));
    sc_keep_dirs(&reqs[0]);
    sc_call c;
    sc_begin(&c, "create_nodes", " n=%zu first=%s rank=%s region=%s zone=%s type=%s token=%s "
             "attempt=%u head=%s", n, reqs[0].name, rank, reqs[0].offer->region,
             reqs[0].offer->zone[0] ? reqs[0].offer->zone : "-", reqs[0].offer->instance_type,
             reqs[0].client_token, reqs[0].attempt, head);
    memset(out, 0, n * sizeof(*out));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    char ids[512] = "", group[16] = "";
    if (as_group) {
        /* one group per call: its id is the cluster's provider data, and
         * each node's says its group and index */
        char first[128];
        snprintf(first, sizeof(first), "%s/0", reqs[0].client_token);
        sc_node *old = sc_by_token(first);
        if (old)
            sc_copy(group, sizeof(group), old->group);
        else
            snprintf(group, sizeof(group), "g-%zu", ++W.n_groups);
        if (reqs[0].ref && reqs[0].ref->data)
            snprintf(reqs[0].ref->data, GPC_PROVIDER_DATA_MAX, "{\"group\":\"%s\"}", group);
    }
    for (size_t i = 0; i < n; i++) {
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/%zu", reqs[0].client_token, i);
        sc_node *nd = sc_by_token(sub);
        if (!nd)
            nd = sc_make(&reqs[i], sub);
        sc_copy(nd->group, sizeof(nd->group), group);
        sc_status(nd, 1, &out[i]);
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", i ? "," : "", nd->id);
    }
    if (sc_lost(&c))
        memset(out, 0, n * sizeof(*out));
    return sc_end(&c, 0, err, "%s%s%s", ids, group[0] ? " group=" : "", group);
}

static int sc_create_nodes(void *ctx, const gpc_node_request *reqs, size_t n,
                           gpc_node_status *out, gpc_error *err)
{
    return sc_create_many(reqs, n, out, err, 0);
}

static int sc_create_group(void *ctx, const gpc_node_request *reqs, size_t n,
                           gpc_node_status *out, gpc_error *err)
{
    return sc_create_many(reqs, n, out, err, 1);
}

static int sc_find_node(void *ctx, const char *region, const char *client_token,
                        gpc_node_status *out, gpc_error *err)
{
    sc_call c;
    sc_begin(&c, "find_node", " region=%s token=%s", region, client_token);
    memset(out, 0, sizeof(*out));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    sc_node *nd = sc_by_token(client_token);
    if (!nd)
        return sc_end(&c, gpc_fail(err, GPC_ERR_NOT_FOUND, "scripted: no node with client "
                                   "token %s", client_token), err, NULL);
    sc_status(nd, 1, out);
    char ph[48];
    sc_phase(out, ph, sizeof(ph));
    if (sc_lost(&c))
        memset(out, 0, sizeof(*out));
    return sc_end(&c, 0, err, "%s %s", nd->id, ph);
}

static int sc_describe_node(void *ctx, const gpc_node_ref *ref, gpc_node_status *out,
                            gpc_error *err)
{
    const char *region = ref->region, *provider_id = ref->provider_id;
    sc_call c;
    sc_begin(&c, "describe_node", " region=%s id=%s", region, provider_id);
    memset(out, 0, sizeof(*out));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    sc_node *nd = sc_by_id(provider_id);
    if (nd) {
        sc_status(nd, 1, out);
    } else {
        sc_copy(out->provider_id, sizeof(out->provider_id), provider_id);
        out->phase = GPC_PHASE_TERMINATED;
        out->exit_code = -1;
        out->stopped = 1;
    }
    char ph[48];
    return sc_end(&c, 0, err, "%s", sc_phase(out, ph, sizeof(ph)));
}

/* The log transport: an empty log, and the job's exit status once it ended
 * (scripted_keep_up).  Not in the call log. */
static int sc_read_log(void *ctx, const gpc_cluster_ref *c, const gpc_node_ref *node,
                       uint32_t rank, long offset, int may_wait, struct gpc_buf *out,
                       long *next, int *exit_status, gpc_error *err)
{
    (void)ctx, (void)c, (void)rank, (void)may_wait, (void)out;
    *next = offset;
    *exit_status = -1;
    const sc_node *nd = sc_by_id(node->provider_id);
    if (!nd || nd->deleted || nd->gone)
        return gpc_fail(err, GPC_ERR_NOT_FOUND, "scripted: node %s is gone",
                        node->provider_id);
    if (gpc_now() - nd->created_at >= W.boot_s + nd->run_s)
        *exit_status = nd->exit_code;
    return 0;
}

/* "a,b,c" of n strings into buf. */
static const char *sc_join(const char *const *v, size_t n, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", v[i]);
    return buf;
}

static int sc_describe_nodes(void *ctx, const gpc_cluster_ref *cr, const char *const *ids,
                             size_t n, gpc_node_status *out, gpc_error *err)
{
    char list[512], phases[1024] = "";
    sc_call c;
    sc_begin(&c, "describe_nodes", " cluster=%s ids=%s", cr->cluster,
             sc_join(ids, n, list, sizeof(list)));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    for (size_t i = 0; i < n; i++) {
        sc_node *nd = sc_by_id(ids[i]);
        memset(&out[i], 0, sizeof(out[i]));
        if (nd) {
            sc_status(nd, 1, &out[i]);
        } else {
            sc_copy(out[i].provider_id, sizeof(out[i].provider_id), ids[i]);
            out[i].phase = GPC_PHASE_TERMINATED;
            out[i].exit_code = -1;
            out[i].stopped = 1;
        }
        char ph[48];
        snprintf(phases + strlen(phases), sizeof(phases) - strlen(phases), "%s%s", i ? "," : "",
                 sc_phase(&out[i], ph, sizeof(ph)));
    }
    return sc_end(&c, 0, err, "%s", phases);
}

static int sc_nodes_running(void *ctx, const gpc_cluster_ref *cr, const char *const *ids,
                            size_t n, gpc_error *err)
{
    char list[512];
    sc_call c;
    sc_begin(&c, "nodes_running", " cluster=%s ids=%s", cr->cluster,
             sc_join(ids, n, list, sizeof(list)));
    return sc_end(&c, 0, err, "ok");
}

static int sc_delete_node(void *ctx, const gpc_node_ref *ref, gpc_error *err)
{
    const char *region = ref->region, *provider_id = ref->provider_id;
    sc_call c;
    sc_begin(&c, "delete_node", " region=%s id=%s", region, provider_id);
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    sc_node *nd = sc_by_id(provider_id);
    char also[256] = "";
    if (nd && nd->group[0]) {
        /* the whole group goes (GPC_CAP_GROUP), the data says which */
        if (!strstr(ref->data, nd->group))
            return sc_end(&c, gpc_fail(err, GPC_ERR_INTERNAL, "scripted: node %s came without "
                                       "its provider data", provider_id), err, NULL);
        for (size_t i = 0; i < W.n_nodes; i++)
            if (&W.nodes[i] != nd && strcmp(W.nodes[i].group, nd->group) == 0 &&
                !W.nodes[i].deleted && !W.nodes[i].gone) {
                W.nodes[i].deleted = 1;
                snprintf(also + strlen(also), sizeof(also) - strlen(also), "%s%s",
                         also[0] ? "," : " also=", W.nodes[i].id);
            }
    }
    if (nd)
        nd->deleted = 1;
    return sc_end(&c, 0, err, "ok%s", also);
}

static int sc_rdzv_name(void *ctx, const gpc_cluster_ref *cr, char *out, size_t size,
                        gpc_error *err)
{
    sc_call c;
    sc_begin(&c, "rdzv_name", " cluster=%s", cr->cluster);
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    snprintf(out, size, "%s-0.svc.test", cr->cluster);
    if (cr->data && !cr->data[0])
        snprintf(cr->data, GPC_PROVIDER_DATA_MAX, "{\"service\":\"%s\"}", cr->cluster);
    return sc_end(&c, 0, err, "%s", out);
}

static int sc_poll_interruptions(void *ctx, const gpc_cluster_ref *cr,
                                 const gpc_node_ref *nodes, size_t n, gpc_interruption *out,
                                 gpc_error *err)
{
    char list[512], said[512] = "";
    const char *ids[64];
    if (n > 64)
        return gpc_fail(err, GPC_ERR_INTERNAL, "scripted: more than 64 nodes");
    for (size_t i = 0; i < n; i++)
        ids[i] = nodes[i].provider_id;
    sc_call c;
    sc_begin(&c, "poll_interruptions", " cluster=%s ids=%s", cr->cluster,
             sc_join(ids, n, list, sizeof(list)));
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    for (size_t i = 0; i < n; i++) {
        sc_node *nd = sc_by_id(ids[i]);
        if (!nd || !nd->notice[0])
            continue;
        sc_copy(out[i].action, sizeof(out[i].action), nd->notice);
        out[i].deadline = nd->notice_at;
        snprintf(out[i].detail, sizeof(out[i].detail), "scripted notice");
        snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s%s:%s", said[0] ? "," : "",
                 nd->id, nd->notice);
    }
    return sc_end(&c, 0, err, "%s", said[0] ? said : "none");
}

static int sc_list_orphans(void *ctx, const char *const *regions, size_t n_regions,
                           gpc_orphan **out, size_t *n, gpc_error *err)
{
    char ids[512] = "", where[256] = "";
    if (n_regions)
        snprintf(where, sizeof(where), " regions=%s", sc_join(regions, n_regions,
                                                               ids, sizeof(ids)));
    ids[0] = '\0';
    sc_call c;
    sc_begin(&c, "list_orphans", "%s", where);
    *out = NULL;
    *n = 0;
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    *out = calloc(W.n_nodes ? W.n_nodes : 1, sizeof(**out));
    if (!*out)
        return sc_end(&c, gpc_fail(err, GPC_ERR_NOMEM, "out of memory"), err, NULL);
    for (size_t i = 0; i < W.n_nodes; i++) {
        sc_node *nd = &W.nodes[i];
        if (nd->deleted || nd->gone)
            continue;
        size_t r = 0;
        while (r < n_regions && strcmp(regions[r], nd->region) != 0)
            r++;
        if (n_regions && r == n_regions)
            continue;
        gpc_orphan *o = &(*out)[(*n)++];
        sc_copy(o->kind, sizeof(o->kind), "node");
        sc_copy(o->id, sizeof(o->id), nd->id);
        sc_copy(o->region, sizeof(o->region), nd->region);
        sc_copy(o->cluster_uid, sizeof(o->cluster_uid), nd->cluster_uid);
        sc_copy(o->cluster, sizeof(o->cluster), nd->cluster);
        o->expires_at = nd->expires_at;
        snprintf(o->detail, sizeof(o->detail), "%s", nd->name);
        snprintf(o->data, sizeof(o->data), "{\"node\":\"%s\"}", nd->id);
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", ids[0] ? "," : "",
                 nd->id);
    }
    return sc_end(&c, 0, err, "%s", ids[0] ? ids : "none");
}

static int sc_cleanup_cluster(void *ctx, const gpc_cluster_ref *cr, gpc_error *err)
{
    char regions[256], deleted[512] = "";
    sc_call c;
    sc_begin(&c, "cleanup_cluster", " cluster=%s regions=%s%s%s", cr->cluster,
             sc_join(cr->regions, cr->n_regions, regions, sizeof(regions)),
             cr->data && cr->data[0] ? " data=" : "", cr->data ? cr->data : "");
    if (sc_fails(&c))
        return sc_end(&c, 0, err, NULL);
    for (size_t i = 0; i < W.n_nodes; i++) {
        sc_node *nd = &W.nodes[i];
        if (nd->deleted || nd->gone || strcmp(nd->cluster_uid, cr->cluster_uid) != 0)
            continue;
        nd->deleted = 1;
        snprintf(deleted + strlen(deleted), sizeof(deleted) - strlen(deleted), "%s%s",
                 deleted[0] ? "," : " deleted=", nd->id);
    }
    return sc_end(&c, 0, err, "ok%s", deleted);
}

/* ---- the tables ------------------------------------------------------- */

extern const unsigned char gpc_node_script_scripted[];
static const gpc_userdata_rules sc_userdata_one = {
    .provider = "scripted", .node_script = (const char *)gpc_node_script_scripted,
};
static const gpc_userdata_rules sc_userdata_batch = {
    .provider = "scripted_batch", .node_script = (const char *)gpc_node_script_scripted,
};
static const gpc_userdata_rules sc_userdata_basic = {
    .provider = "scripted_basic", .node_script = (const char *)gpc_node_script_scripted,
};
static const gpc_userdata_rules sc_userdata_named = {
    .provider = "scripted_named", .node_script = (const char *)gpc_node_script_scripted,
};
static const gpc_userdata_rules sc_userdata_group = {
    .provider = "scripted_group", .node_script = (const char *)gpc_node_script_scripted,
};
static const gpc_userdata_rules sc_userdata_elastic = {
    .provider = "scripted_rdzv", .node_script = (const char *)gpc_node_script_scripted,
};

const gpc_provider gpc_provider_scripted = {
    .name = "scripted",
    .summary = "test provider: nodes one by one, answers from a script (tests only)",
    .caps = GPC_CAP_OWN_OFFERS | GPC_CAP_PLACEMENT,
    .userdata = &sc_userdata_one,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_one,
    .create_node = sc_create_ip,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .describe_nodes = sc_describe_nodes,
    .nodes_running = sc_nodes_running,
    .delete_node = sc_delete_node,
    .list_zones = sc_list_zones,
    .cleanup_cluster = sc_cleanup_cluster,
    .read_log = sc_read_log,
};

const gpc_provider gpc_provider_scripted_batch = {
    .name = "scripted_batch",
    .summary = "test provider: workers in one call, ranks from the launch index (tests only)",
    .caps = GPC_CAP_OWN_OFFERS,
    .rank = GPC_RANK_LAUNCH_INDEX,
    .userdata = &sc_userdata_batch,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_batch,
    .create_node = sc_create_ip,
    .create_nodes = sc_create_nodes,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .describe_nodes = sc_describe_nodes,
    .nodes_running = sc_nodes_running,
    .delete_node = sc_delete_node,
    .list_zones = sc_list_zones,
    .cleanup_cluster = sc_cleanup_cluster,
};

const gpc_provider gpc_provider_scripted_basic = {
    .name = "scripted_basic",
    .summary = "test provider: the required operations and find_node only (tests only)",
    .caps = GPC_CAP_OWN_OFFERS,
    .userdata = &sc_userdata_basic,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_basic,
    .create_node = sc_create_no_ip,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .delete_node = sc_delete_node,
};

const gpc_provider gpc_provider_scripted_named = {
    .name = "scripted_named",
    .summary = "test provider: a rendezvous name given before launch (tests only)",
    .caps = GPC_CAP_OWN_OFFERS,
    .rdzv = GPC_RDZV_NAME,
    .rdzv_name = sc_rdzv_name,
    .userdata = &sc_userdata_named,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_named,
    .create_node = sc_create_ip,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .describe_nodes = sc_describe_nodes,
    .delete_node = sc_delete_node,
    .cleanup_cluster = sc_cleanup_cluster,
    .poll_interruptions = sc_poll_interruptions,
    .list_orphans = sc_list_orphans,
};

/* scripted_group's named sections of the config file (test_engine_settings.c):
 * what a scheduler's table such as Slurm's declares. */
static const char *const sc_site_keys_group[] = {"login", "partitions", "account", NULL};

const gpc_provider gpc_provider_scripted_group = {
    .name = "scripted_group",
    .summary = "test provider: one group per cluster, queued as a scheduler's job, the head "
               "found on the node, ranks from the scheduler (tests only)",
    .caps = GPC_CAP_OWN_OFFERS | GPC_CAP_GROUP | GPC_CAP_QUEUE,
    .rdzv = GPC_RDZV_ON_NODE,
    .rank = GPC_RANK_SCHEDULER,
    .userdata = &sc_userdata_group,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_group,
    .shares_files = sc_shares_files,
    .create_nodes = sc_create_group,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .describe_nodes = sc_describe_nodes,
    .delete_node = sc_delete_node,
    .poll_interruptions = sc_poll_interruptions,
    .site_keys = sc_site_keys_group,
};

const gpc_provider gpc_provider_scripted_rdzv = {
    .name = "scripted_rdzv",
    .summary = "test provider: workers numbered by the rendezvous (tests only)",
    .caps = GPC_CAP_OWN_OFFERS,
    .rank = GPC_RANK_RENDEZVOUS,
    .userdata = &sc_userdata_elastic,
    .open = sc_open,
    .close = sc_close,
    .list_offers = sc_offers_elastic,
    .create_node = sc_create_ip,
    .find_node = sc_find_node,
    .describe_node = sc_describe_node,
    .describe_nodes = sc_describe_nodes,
    .delete_node = sc_delete_node,
    .cleanup_cluster = sc_cleanup_cluster,
};
