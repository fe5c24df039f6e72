/* plan_int.h - what plan.c (making and writing a plan) and plan_read.c
 * (reading a saved one back) share: the document's kind, its format and
 * how many losing candidates it lists. */
#ifndef GPUCTL_PLAN_INT_H
#define GPUCTL_PLAN_INT_H

#define PLAN_KIND "plan"
#define PLAN_FORMAT 1          /* bumped when an older gpuctl could misread it */
#define LOST_LISTED 20         /* losing candidates kept in the document */

struct cJSON;

/* The plan document's checksum into out ("sha256:" and 64 hex digits): of
 * its compact JSON without "schema_version" and "checksum".  -1 when out
 * of memory. */
int gpc_plan_doc_checksum(const struct cJSON *doc, char out[72]);

#endif /* GPUCTL_PLAN_INT_H */
