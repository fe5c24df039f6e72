/*
 * present.h - the engine's values for people and scripts: tables of a
 * cluster's nodes and launch attempts, the JSON of one cluster, a plan.
 * The engine computes; these only format (output.h decides colour).
 */
#ifndef GPUCTL_PRESENT_H
#define GPUCTL_PRESENT_H

#include "gpuctl/cluster.h"
#include "gpuctl/plan.h"
#include "output.h"

struct cJSON;

/* The JSON object for one cluster and its nodes (docs/schema/). Caller
 * owns the result; NULL with *err set on a state error. */
struct cJSON *gpc_cluster_json(gpc_session *s, const gpc_cluster_rec *c, gpc_error *err);

/* Print the cluster's node table to stdout. */
int gpc_cluster_print_nodes(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c,
                            gpc_error *err);

/* Print the launch attempts when some failed or were skipped (failover):
 * one row per attempt, zone and outcome.  Prints nothing otherwise. */
/* `status NAME`: the cluster's interruption notices, recoveries and
 * budget stops (events of kinds interruption, recovery, budget), oldest
 * first, as a table after a heading; nothing when it has none. */
int gpc_cluster_print_recoveries(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c,
                                 gpc_error *err);
int gpc_cluster_print_attempts(const gpc_out *o, gpc_session *s, const gpc_cluster_rec *c,
                               gpc_error *err);

/* Print a plan for people (tables; colour per gpc_out). */
void gpc_plan_print(const gpc_out *o, const gpc_plan *p);

#endif /* GPUCTL_PRESENT_H */
