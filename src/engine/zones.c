/*
 * zones.c - zone cooldowns (spot.zone_cooldown; docs/spot.md): a zone that
 * took one of a cluster's nodes back or had no capacity is passed over for
 * a while.  apply's create (launch.c) tries the zones that do not cool
 * first and those that do last (every zone cooling: all of them, in
 * order, rather than none); apply's offer failover (apply.c) does the same
 * with offers that carry their own zone; spot recovery (recover.c) sends
 * a replacement to another zone when the survivors' cools, unless their
 * placement group keeps them in it, and buys it on-demand once policy
 * auto's spot.fallback_after interruptions happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuctl/util.h"
#include "lifecycle.h"

/* "2023-11-14T22:43:20Z" (UTC) of Unix time t. */
static void utc(int64_t t, char out[32])
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (!gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, 32, "%lld", (long long)t);
}

/* "30m", "2h", "90s": seconds as the spec would write them. */
static void span(uint64_t s, char out[32])
{
    if (s && s % 3600 == 0)
        snprintf(out, 32, "%lluh", (unsigned long long)(s / 3600));
    else if (s && s % 60 == 0)
        snprintf(out, 32, "%llum", (unsigned long long)(s / 60));
    else
        snprintf(out, 32, "%llus", (unsigned long long)s);
}

int gpc_lc_zone_cooling(gpc_session *s, const char *provider, const char *region,
                        const char *zone, int64_t now, char *why, size_t wl)
{
    if (why && wl)
        why[0] = '\0';
    if (!zone || !zone[0])
        return 0;
    gpc_zone_cool_rec r;
    int found = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_zone_cool_get(s->st, provider, region, zone, now, &r, &found, &e)) {
        gpc_info(s->log, "gpuctl: %s; zone %s taken as not cooling down", e.msg, zone);
        return 0;
    }
    if (found && why && wl) {
        char until[32];
        utc(r.until, until);
        snprintf(why, wl, "until %s: %s", until, r.why);
    }
    gpc_zone_cool_rec_free(&r);
    return found;
}

void gpc_lc_zone_cool(gpc_session *s, const gpc_spec *spec, int64_t cid, int rank,
                      const char *provider, const char *region, const char *zone,
                      const char *why)
{
    uint64_t cool = gpc_spec_zone_cooldown_s(spec);
    if (!cool || !zone || !zone[0])
        return;
    int64_t now = gpc_now();
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_zone_cool_add(s->st, provider, region, zone, now, now + (int64_t)cool, why, &e)) {
        gpc_info(s->log, "gpuctl: %s (zone %s not passed over)", e.msg, zone);
        return;
    }
    char until[32], len[32];
    utc(now + (int64_t)cool, until);
    span(cool, len);
    gpc_lc_event(s, cid, rank, "recovery", "zone %s of %s passed over for %s (spot.zone_cooldown, "
                 "until %s): %s", zone, region, len, until, why);
}

size_t gpc_lc_zones_order(gpc_session *s, const char *provider, const char *region,
                          char (*zones)[48], size_t n)
{
    if (!n)
        return 0;
    int64_t now = gpc_now();
    unsigned char *cool = calloc(n, 1);
    char (*tmp)[48] = malloc(n * sizeof(*tmp));
    size_t k = 0;
    char why[200];
    for (size_t z = 0; cool && z < n; z++) {
        cool[z] = (unsigned char)gpc_lc_zone_cooling(s, provider, region, zones[z], now, why,
                                                     sizeof(why));
        if (cool[z]) {
            k++;
            gpc_info(s->log, "gpuctl: zone %s cools down (%s): tried %s", zones[z], why,
                     n == 1 ? "anyway, the only zone"
                     : k == n ? "anyway: every zone cools down" : "after the others");
        }
    }
    if (tmp && cool && k && k < n) {
        size_t o = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t z = 0; z < n; z++)
                if (cool[z] == pass)
                    memcpy(tmp[o++], zones[z], sizeof(tmp[0]));
        memcpy(zones, tmp, n * sizeof(tmp[0]));
    }
    free(tmp);
    free(cool);
    return k;
}

size_t gpc_lc_offers_order(gpc_session *s, gpc_plan_offer *offers, size_t n)
{
    int64_t now = gpc_now();
    unsigned char *cool = calloc(n ? n : 1, 1);
    gpc_plan_offer *tmp = malloc((n ? n : 1) * sizeof(*tmp));
    size_t k = 0;
    char why[200];
    for (size_t i = 0; cool && i < n; i++) {
        const gpc_offer *w = &offers[i].worker;
        cool[i] = (unsigned char)gpc_lc_zone_cooling(s, w->provider, w->region, w->zone, now,
                                                     why, sizeof(why));
        k += cool[i];
        if (cool[i])
            gpc_info(s->log, "gpuctl: offer %zu (%s %s %s/%s) is in a zone that cools down "
                     "(%s): tried after the others", i + 1, w->provider, w->instance_type,
                     w->region, w->zone, why);
    }
    if (tmp && cool && k && k < n) {
        size_t o = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n; i++)
                if (cool[i] == pass)
                    tmp[o++] = offers[i];
        memcpy(offers, tmp, n * sizeof(*tmp));
    }
    free(tmp);
    free(cool);
    return k;
}

/* 1 when cluster c's nodes on `of` share a placement group, which lives
 * in one zone: a provider with placement groups, more than one node, and
 * a fabric the spec does not turn down (EFA). */
static int keeps_zone(const gpc_open_provider *pv, const gpc_spec *spec,
                      const gpc_cluster_rec *c, const gpc_offer *of)
{
    return (pv->prov->caps & GPC_CAP_PLACEMENT) && c->nodes > 1 &&
           spec->resources.interconnect != GPC_IC_NONE && of->fabric[0] &&
           strcmp(of->fabric, "none") != 0;
}

/* The spot interruptions the cluster's events record: recover.c's event
 * for each preempted worker it replaces. */
static int spot_losses(gpc_session *s, int64_t cid)
{
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    int k = 0;
    if (gpc_event_list(s->st, cid, &ev, &n, &e) == 0)
        for (size_t i = 0; i < n; i++)
            k += strcmp(ev[i].kind, "recovery") == 0 &&
                 strstr(ev[i].message, ") was preempted while the job runs") != NULL;
    gpc_event_list_free(ev, n);
    return k;
}

/* The on-demand price of `w`'s instance type in its region, as the plan
 * has it: the head's offer when bought on-demand, else an on-demand offer
 * of the plan's failover order; < 0 when neither. */
static double on_demand_price(const gpc_lc_recovery *rv, const gpc_offer *w)
{
    const gpc_offer *h = &rv->chosen->head;
    if (!h->spot && strcmp(h->instance_type, w->instance_type) == 0 &&
        strcmp(h->region, w->region) == 0 && strcmp(h->provider, w->provider) == 0)
        return h->price_hourly;
    for (size_t i = 0; i < rv->n_offers; i++) {
        const gpc_offer *o = &rv->offers[i].worker;
        if (!o->spot && strcmp(o->instance_type, w->instance_type) == 0 &&
            strcmp(o->region, w->region) == 0 && strcmp(o->provider, w->provider) == 0)
            return o->price_hourly;
    }
    return -1;
}

/* The cluster's price per hour (USD) once its nodes still to make (the
 * lost ranks, recorded pending) are bought at `price` each: its live
 * nodes' prices and theirs; < 0 when the state cannot say. */
static double cluster_hourly_with(gpc_session *s, int64_t cid, double price)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error e;
    gpc_error_clear(&e);
    if (gpc_node_list(s->st, cid, 0, &nodes, &n, &e))
        return -1;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += nodes[i].provider_id[0] ? (nodes[i].ended_at ? 0 : nodes[i].price_hourly) : price;
    gpc_node_list_free(nodes, n);
    return sum;
}

void gpc_lc_recover_lost(gpc_session *s, gpc_lc_recovery *rv, const gpc_cluster_rec *c,
                         const gpc_node_rec *nd)
{
    if (nd->phase != GPC_PHASE_PREEMPTED)
        return;
    char why[200];
    snprintf(why, sizeof(why), "node %s (%s) was preempted", nd->name, nd->provider_id);
    gpc_lc_zone_cool(s, rv->spec, c->id, (int)nd->rank, nd->provider, nd->region, nd->zone, why);
}

const gpc_plan_offer *gpc_lc_recover_offer(gpc_session *s, gpc_lc_recovery *rv,
                                           const gpc_open_provider *pv,
                                           const gpc_cluster_rec *c, const char *zone)
{
    rv->buy = *rv->chosen;
    gpc_offer *w = &rv->buy.worker;
    /* policy auto: on-demand once spot.fallback_after interruptions happened */
    uint32_t after = gpc_spec_fallback_after(rv->spec);
    int lost = after && w->spot ? spot_losses(s, c->id) : 0;
    if (after && w->spot && lost >= (int)after) {
        double od = on_demand_price(rv, w), cap = rv->spec->budget.max_hourly;
        double hourly = od >= 0 && cap > 0 ? cluster_hourly_with(s, c->id, od) : 0;
        if (od >= 0 && (hourly < 0 || hourly > cap + 1e-9) && cap > 0) {
            gpc_lc_event(s, c->id, -1, "recovery", "%d spot interruption%s (spot.fallback_after "
                         "%u), but on-demand (%.4f USD/hour) would bring the cluster to %.4f "
                         "USD/hour, over budget.max_hourly %.4f: the replacement stays on spot",
                         lost, lost == 1 ? "" : "s", after, od, hourly, cap);
        } else if (od < 0) {
            gpc_lc_event(s, c->id, -1, "recovery", "%d spot interruption%s (spot.fallback_after "
                         "%u), but the plan has no on-demand price for %s in %s: the "
                         "replacement stays on spot", lost, lost == 1 ? "" : "s", after,
                         w->instance_type, w->region);
        } else {
            w->spot = 0;
            w->price_hourly = od;
            /* a spot head made again (head lost) is bought so too */
            gpc_offer *h = &rv->buy.head;
            if (h->spot && strcmp(h->instance_type, w->instance_type) == 0 &&
                strcmp(h->region, w->region) == 0) {
                h->spot = 0;
                h->price_hourly = od;
            }
            const char *pl = lost == 1 ? "" : "s";
            gpc_lc_event(s, c->id, -1, "recovery", "falls back to on-demand after %d spot "
                         "interruption%s (spot.fallback_after %u): the replacement is %s "
                         "on-demand in %s at %.4f USD/hour", lost, pl, after, w->instance_type,
                         w->region, od);
            gpc_info(s->log, "gpuctl: cluster %s falls back to on-demand after %d spot "
                     "interruption%s", c->name, lost, pl);
        }
    }
    /* the survivors' zone, unless it cools and nothing keeps them there */
    char why[200];
    s->unpin_zone = 0;
    if (!gpc_lc_zone_cooling(s, c->provider, w->region, zone, gpc_now(), why, sizeof(why)))
        return &rv->buy;
    if (keeps_zone(pv, rv->spec, c, w))
        gpc_lc_event(s, c->id, -1, "recovery", "zone %s cools down (%s), but the cluster's "
                     "nodes share a placement group (%s), which lives in one zone: the "
                     "replacement stays in %s", zone, why, w->fabric, zone);
    else if (!pv->prov->list_zones)
        gpc_lc_event(s, c->id, -1, "recovery", "zone %s cools down (%s), but %s has no other "
                     "zone to offer: the replacement stays in %s", zone, why, pv->prov->name,
                     zone);
    else {
        s->unpin_zone = 1;
        gpc_lc_event(s, c->id, -1, "recovery", "zone %s cools down (%s): the replacement goes "
                     "to another zone of %s first", zone, why, w->region);
    }
    return &rv->buy;
}
