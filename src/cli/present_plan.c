/* present_plan.c - a plan for people: the chosen offer, the failover
 * order, the cost and the changes (present.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuctl/plan.h"
#include "gpuctl/util.h"
#include "present.h"


static void fmt_price(char *b, size_t n, const cJSON *v, int decimals)
{
    if (cJSON_IsNumber(v))
        snprintf(b, n, "%.*f", gpc_price_decimals(v->valuedouble, decimals), v->valuedouble);
    else
        snprintf(b, n, "-");
}

/* printf's precision for an hourly price at least `min` decimals. */
#define PD(v, min) gpc_price_decimals((v), (min)), (v)

/* Decimals that show a percentage of the plan document (at most 6) exactly:
 * 34.2 -> 1, 88 -> 0, 99.99 -> 2. */
static int pct_decimals(double v)
{
    int d = 0;
    while (d < 6 && fabs(round(v * pow(10, d)) - v * pow(10, d)) > 1e-6)
        d++;
    return d;
}

/* "us-east-1"; "lab/gpu" for an offer with its own zone (a member only
 * such offers have); "-" for none. */
static void where_cell(char *b, size_t n, const cJSON *o)
{
    const char *region = gpc_json_str(o, "region"), *zone = gpc_json_str(o, "zone");
    if (zone && *zone)
        snprintf(b, n, "%s/%s", region, zone);
    else
        snprintf(b, n, "%s", *region ? region : "-");
}

static void offer_line(const cJSON *o, char cells[][64], int rank)
{
    const cJSON *price = cJSON_GetObjectItemCaseSensitive(o, "price");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    const cJSON *ic = cJSON_GetObjectItemCaseSensitive(o, "interconnect");
    snprintf(cells[0], 64, "%d", rank);
    snprintf(cells[1], 64, "%s", gpc_json_str(o, "provider"));
    snprintf(cells[2], 64, "%s", gpc_json_str(o, "instance_type"));
    where_cell(cells[3], 64, o);
    const char *model = gpc_json_str(gpu, "model");
    if (model && *model)
        snprintf(cells[4], 64, "%gx%s", gpc_json_num(gpu, "count", 0), model);
    else
        snprintf(cells[4], 64, "-");
    snprintf(cells[5], 64, "%s", gpc_json_str(ic, "fabric"));
    const char *pu = gpc_json_str(o, "purchase"), *hp = gpc_json_str(o, "head_purchase");
    if (strcmp(pu, hp) == 0)
        snprintf(cells[6], 64, "%s", pu);
    else
        snprintf(cells[6], 64, "%s (head %s)", pu, hp);
    fmt_price(cells[7], 64, cJSON_GetObjectItemCaseSensitive(price, "node_usd_hr"), 4);
    fmt_price(cells[8], 64, cJSON_GetObjectItemCaseSensitive(price, "cluster_usd_hr"), 2);
    const cJSON *ppt = cJSON_GetObjectItemCaseSensitive(price, "usd_per_tflops_hr");
    if (cJSON_IsNumber(ppt))
        snprintf(cells[9], 64, "%.4g", ppt->valuedouble);
    else
        snprintf(cells[9], 64, "-");
}

static void offer_table(const gpc_out *o, const cJSON *first, const cJSON *rest, int with_why,
                        int max_rows)
{
    static const char *const head[] = {"#", "PROVIDER", "INSTANCE TYPE", "REGION", "GPUS",
                                       "FABRIC", "PURCHASE", "NODE $/H", "CLUSTER $/H",
                                       "$/TFLOPS-H", "WHY"};
    gpc_table t;
    gpc_table_init(&t, with_why ? 11 : 10, head);
    int rank = 1;
    char cells[11][64];
    const char *row[11];
    for (int i = 0; i < 11; i++)
        row[i] = cells[i];
    if (first) {
        offer_line(first, cells, rank++);
        gpc_table_add(&t, row);
    }
    for (const cJSON *it = rest ? rest->child : NULL; it && rank <= max_rows; it = it->next) {
        offer_line(it, cells, rank++);
        if (with_why) {
            const char *why = gpc_json_str(it, "why");
            snprintf(cells[10], 64, "%.63s", why ? why : "");
        }
        gpc_table_add(&t, row);
    }
    gpc_table_print(o, &t, stdout);
    gpc_table_free(&t);
}

void gpc_plan_print(const gpc_out *o, const gpc_plan *p)
{
    const cJSON *d = p->doc;
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(d, "spec");
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(d, "catalog");
    const cJSON *chosen = cJSON_GetObjectItemCaseSensitive(d, "chosen");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(d, "cost");
    const char *b = gpc_c_bold(o), *r = gpc_c_reset(o);
    printf("%sPlan for cluster '%s'%s (%s, spec %.12s; catalog %s, %g rows)\n\n", b,
           gpc_json_str(d, "cluster"), r, gpc_json_str(sj, "source"), gpc_json_str(sj, "sha256"), gpc_json_str(cj, "origin"),
           gpc_json_num(cj, "rows", 0));
    if (cJSON_IsObject(chosen)) {
        const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(chosen, "gpu");
        const cJSON *ic = cJSON_GetObjectItemCaseSensitive(chosen, "interconnect");
        const cJSON *price = cJSON_GetObjectItemCaseSensitive(chosen, "price");
        const char *region = gpc_json_str(chosen, "region"), *zone = gpc_json_str(chosen, "zone");
        printf("%sChosen offer:%s %s %s%s%s%s%s, %s", b, r, gpc_json_str(chosen, "provider"),
               gpc_json_str(chosen, "instance_type"), *region ? " in " : "", region,
               zone && *zone ? "/" : "", zone && *zone ? zone : "",
               gpc_json_str(chosen, "purchase"));
        if (strcmp(gpc_json_str(chosen, "purchase"), gpc_json_str(chosen, "head_purchase")) != 0)
            printf(" (head %s)", gpc_json_str(chosen, "head_purchase"));
        printf("\n  per node: ");
        if (gpc_json_num(gpu, "count", 0) > 0 && gpc_json_num(gpu, "memory_gib", 0) > 0)
            printf("%g x %s (%.4g GiB", gpc_json_num(gpu, "count", 0), gpc_json_str(gpu, "model"),
                   gpc_json_num(gpu, "memory_gib", 0));
        else if (gpc_json_num(gpu, "count", 0) > 0) /* a Slurm GRES says no size */
            printf("%g x %s (memory not known", gpc_json_num(gpu, "count", 0),
                   gpc_json_str(gpu, "model"));
        const cJSON *tf = cJSON_GetObjectItemCaseSensitive(gpu, "tflops_dense");
        if (gpc_json_num(gpu, "count", 0) > 0 && cJSON_IsNumber(tf))
            printf(", %g dense TFLOPS each), ", tf->valuedouble);
        else if (gpc_json_num(gpu, "count", 0) > 0)
            printf("), ");
        printf("%g vCPU, %.4g GiB RAM, interconnect %s", gpc_json_num(chosen, "vcpus", 0),
               gpc_json_num(chosen, "memory_gib", 0), gpc_json_str(ic, "fabric"));
        const cJSON *gb = cJSON_GetObjectItemCaseSensitive(ic, "gbps");
        if (cJSON_IsNumber(gb))
            printf(" %g Gbit/s", gb->valuedouble);
        printf("\n");
        const cJSON *nodecny = cJSON_GetObjectItemCaseSensitive(price, "node_cny_hr");
        printf("  price: %.*f USD/hour per node", PD(gpc_json_num(cost, "node_usd_hr", 0), 4));
        if (cJSON_IsNumber(nodecny))
            printf(" (%.4f CNY at %g USD/CNY)", nodecny->valuedouble,
                   gpc_json_num(price, "usd_per_cny", 0));
        if (gpc_json_num(cost, "head_usd_hr", 0) != gpc_json_num(cost, "node_usd_hr", 0))
            printf(", head %.*f", PD(gpc_json_num(cost, "head_usd_hr", 0), 4));
        printf("; cluster %.*f USD/hour\n", PD(gpc_json_num(cost, "cluster_usd_hr", 0), 2));
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(cost, "projected_total_usd");
        if (cJSON_IsNumber(pt))
            printf("  projected: %.*f USD for lifecycle.max_duration (%gh)\n", PD(pt->valuedouble, 2),
                   gpc_json_num(cost, "max_duration_s", 0) / 3600.0);
        const cJSON *ends = cJSON_GetObjectItemCaseSensitive(d, "ends");
        const char *why = cJSON_IsObject(ends) ? gpc_json_str(ends, "why") : NULL;
        if (!cJSON_IsNumber(pt) && why && strcmp(why, "default") == 0)
            printf("  projected: %.*f USD for the nodes' default end (%gh: no "
                   "lifecycle.max_duration)\n",
                   PD(gpc_json_num(cost, "cluster_usd_hr", 0) *
                      gpc_json_num(ends, "end_s", 0) / 3600.0, 2),
                   gpc_json_num(ends, "end_s", 0) / 3600.0);
        else if (!cJSON_IsNumber(pt))
            printf("  projected: unbounded (no lifecycle.max_duration)\n");
        if (cJSON_IsObject(ends))
            printf("  nodes end: %s\n", gpc_json_str(ends, "reason"));
        const cJSON *sv = cJSON_GetObjectItemCaseSensitive(cost, "spot_saving_usd_hr");
        if (cJSON_IsNumber(sv) && sv->valuedouble > 0)
            printf("  spot saving: %.*f USD/hour (%.*f%%) against %.*f on-demand\n",
                   PD(sv->valuedouble, 2), pct_decimals(gpc_json_num(cost, "spot_saving_pct", 0)),
                   gpc_json_num(cost, "spot_saving_pct", 0),
                   PD(gpc_json_num(cost, "cluster_on_demand_usd_hr", 0), 2));
    } else {
        printf("%sChosen offer:%s none fits now\n", b, r);
    }
    const cJSON *bud = cJSON_GetObjectItemCaseSensitive(d, "budget");
    int any = 0;
    for (const cJSON *it = bud ? bud->child : NULL; it; it = it->next) {
        const cJSON *lim = cJSON_GetObjectItemCaseSensitive(it, "limit");
        if (!cJSON_IsNumber(lim))
            continue;
        if (!any++)
            printf("\n%sBudget:%s\n", b, r);
        const cJSON *val = cJSON_GetObjectItemCaseSensitive(it, "value");
        char v[32];
        int per_node = strcmp(gpc_json_str(it, "check"), "spot.max_price") == 0;
        fmt_price(v, sizeof(v), val, per_node ? 4 : 2);
        printf("  %-18s limit %10.*f  value %10s %-18s %s\n", gpc_json_str(it, "check"),
               per_node ? 4 : 2, lim->valuedouble, v, gpc_json_str(it, "unit"),
               cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(it, "ok"))
               ? "not checked: no lifecycle.max_duration bounds the run"
               : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "ok")) ? "ok" : "EXCEEDED");
    }
    const cJSON *fb = cJSON_GetObjectItemCaseSensitive(d, "fallbacks");
    if (cJSON_IsObject(chosen)) {
        int kept = cJSON_GetArraySize(fb) + 1;
        printf("\n%sOffers in failover order%s (%g feasible", b, r, gpc_json_num(d, "feasible", 0));
        if (gpc_json_num(d, "feasible", 0) > kept)
            printf("; the plan keeps the first %d", kept);
        printf("):\n");
        offer_table(o, chosen, fb, 0, GPC_PLAN_OFFERS_MAX);
    }
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(d, "lost");
    if (cJSON_GetArraySize(lost) > 0) {
        const cJSON *by = cJSON_GetObjectItemCaseSensitive(d, "lost_by");
        printf("\n%sAlternatives that lost%s (", b, r);
        int first = 1;
        for (const cJSON *it = by ? by->child : NULL; it; it = it->next) {
            if (strcmp(it->string, "provider") == 0 || strcmp(it->string, "hardware") == 0 ||
                strcmp(it->string, "instance_type") == 0)
                continue;
            printf("%s%s %g", first ? "" : ", ", it->string, it->valuedouble);
            first = 0;
        }
        printf("):\n");
        offer_table(o, NULL, lost, 1, 10);
        double total = 0;
        for (const cJSON *it = by ? by->child : NULL; it; it = it->next)
            if (strcmp(it->string, "provider") && strcmp(it->string, "hardware") &&
                strcmp(it->string, "instance_type"))
                total += it->valuedouble;
        if (total > 10)
            printf("  ... and %g more (-o json lists the first %d)\n", total - 10,
                   cJSON_GetArraySize(lost));
    }
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(d, "changes");
    printf("\n%sChanges:%s\n", b, r);
    int nodes = 0, clusters = 0, deletes = 0;
    for (const cJSON *it = ch ? ch->child : NULL; it; it = it->next) {
        const char *res = gpc_json_str(it, "resource"), *act = gpc_json_str(it, "action");
        act = act ? act : "";
        if (strcmp(act, "resize") == 0) {
            printf("  ~ cluster %s: its live nodes stay, nodes are added or removed to the new "
                   "count (changed: %s)\n", gpc_json_str(it, "name"), gpc_json_str(it, "changed"));
        } else if (strcmp(act, "replace") == 0) {
            printf("  -/+ cluster %s: its nodes are replaced by new ones on %s (changed: %s); "
                   "its name and store (checkpoints, data) stay\n", gpc_json_str(it, "name"),
                   gpc_json_str(it, "provider"), gpc_json_str(it, "changed"));
        } else if (strcmp(act, "delete") == 0) {
            const char *ph = gpc_json_str(it, "phase");
            ph = ph ? ph : "?";
            deletes++;
            printf("  - node %s (rank %g): %s %s %s, %s (%s%s)\n", gpc_json_str(it, "name"),
                   gpc_json_num(it, "rank", 0), gpc_json_str(it, "provider"),
                   gpc_json_str(it, "instance_type"), gpc_json_str(it, "region"),
                   gpc_json_str(it, "provider_id"), ph,
                   strcmp(ph, "running") == 0 || strcmp(ph, "booting") == 0
                       ? ": its job stops" : "");
        } else if (strcmp(res, "job") == 0) {
            if (p->action == GPC_PLAN_RESIZE)
                printf("  ~ job of cluster '%s': runs again on all its nodes, the kept ones "
                       "after any job running there, with the new world size\n",
                       gpc_json_str(it, "name"));
            else
                printf("  ~ job of cluster '%s': runs again on the same nodes, after any job "
                       "running there (changed: %s)\n", gpc_json_str(it, "name"),
                       gpc_json_str(it, "changed"));
        } else if (strcmp(res, "cluster") == 0) {
            clusters++;
            printf("  + cluster %s on %s\n", gpc_json_str(it, "name"), gpc_json_str(it, "provider"));
        } else {
            nodes++;
            const char *zone = gpc_json_str(it, "zone");
            printf("  + node %s (rank %g): %s %s %s%s%s, %s, %.*f USD/hour\n", gpc_json_str(it, "name"),
                   gpc_json_num(it, "rank", 0), gpc_json_str(it, "provider"), gpc_json_str(it, "instance_type"),
                   gpc_json_str(it, "region"), zone && *zone ? "/" : "", zone && *zone ? zone : "",
                   gpc_json_str(it, "purchase"), PD(gpc_json_num(it, "price_usd_hr", 0), 4));
        }
    }
    if (p->action == GPC_PLAN_NONE)
        printf("  none: cluster '%s' exists with this spec and all its nodes\n",
               gpc_json_str(d, "cluster"));
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(d, "data");
    if (cJSON_GetArraySize(data) > 0)
        printf("\n%sData:%s\n", b, r);
    for (const cJSON *it = data ? data->child : NULL; it; it = it->next)
        printf("  %s\n", gpc_json_str(it, "note"));
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(d, "notes");
    for (const cJSON *it = notes ? notes->child : NULL; it; it = it->next)
        printf("\nnote: %s\n", it->valuestring);
    printf("\nPlan: %d to create (%d cluster, %d node%s)%s", clusters + nodes, clusters, nodes,
           nodes == 1 ? "" : "s",
           p->action == GPC_PLAN_RERUN || p->action == GPC_PLAN_RESIZE ? ", 1 job to run again"
                                                                        : "");
    if (p->action == GPC_PLAN_REPLACE || p->action == GPC_PLAN_RESIZE)
        printf(", %d node%s to delete; apply asks first (-y in scripts)", deletes,
               deletes == 1 ? "" : "s");
    printf(".\n");
}
