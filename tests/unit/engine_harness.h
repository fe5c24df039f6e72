/*
 * engine_harness.h - what the engine tests (test_engine*.c) share: a
 * state directory of their own, the fixed clock, the scripted providers'
 * world (tests/providers/scripted/scripted.h), and the state's rows as
 * text, so that a test asserts a whole sequence with one string compare.
 *
 * Cluster uids are random: in the call log and the rows, the first 8
 * characters of cluster N's uid (the part a client token carries) read
 * "U<N>" (N: the cluster's id in the state, 1 for a test's first cluster).
 * Times read as seconds after ENG_T0, the fixed clock's start: "+5".
 */
#ifndef GPUCTL_TEST_ENGINE_HARNESS_H
#define GPUCTL_TEST_ENGINE_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpuctl/buf.h"
#include "gpuctl/cluster.h"
#include "scripted/scripted.h"

/* The fixed clock's time when a test starts (2023-11-14T22:13:20Z). */
#define ENG_T0 1700000000

typedef struct eng {
    char dir[256];       /* the test's temporary directory (state, config) */
    int64_t now;         /* the fixed clock (gpc_clock_fixed) */
    gpc_log log;         /* collects warnings and info lines into `said` */
    gpc_buf said;        /* "warn: ...\n", "info: ...\n", "status [Ns]: ...\n" */
    gpc_settings set;
    gpc_session s;
    gpc_spec *spec;      /* eng_spec's */
    gpc_buf text;        /* what the eng_* text functions return */
} eng;

/* cmocka setup and teardown: *state is an eng. */
int eng_setup(void **state);
int eng_teardown(void **state);

/* Parse `yaml` as the spec to apply (replacing the one before). */
void eng_spec(eng *e, const char *yaml);

/* gpc_apply of the spec, polling every 5 s; returns its code. */
int eng_apply(eng *e, gpc_apply_result *res, gpc_error *err);

/* The cluster named `name` (live); the test frees it. */
void eng_cluster(eng *e, const char *name, gpc_cluster_rec *c);

/* Close the session and open a new one, as a gpuctl killed and run again
 * (the scripted world stays). */
void eng_restart(eng *e);

/* The scripted call log since the last eng_calls (uids as "U<N>"); the
 * log is then emptied. */
const char *eng_calls(eng *e);

/* Every node row of cluster `cid` (terminated ones too), one a line:
 *   RANK ID TOKEN REGION/ZONE TYPE IP PHASE(EXIT) started=+S ended=+E|-
 * ("-" for an empty field). */
const char *eng_nodes(eng *e, int64_t cid);

/* Every attempt row of cluster `cid`, one a line:
 *   RANK aATTEMPT REGION/ZONE TYPE OUTCOME[ CODE: MESSAGE] */
const char *eng_attempts(eng *e, int64_t cid);

/* Every event of cluster `cid`, one a line: "RANK KIND: MESSAGE" (RANK
 * "-" for the cluster's). */
const char *eng_events(eng *e, int64_t cid);

/* What the engine said (warn, info and wait status lines) since the
 * last eng_said; then forgotten. */
const char *eng_said(eng *e);

/* Replace each cluster's uid prefix by "U<id>" in `s` (into e->text). */
const char *eng_norm(eng *e, const char *s);

#endif /* GPUCTL_TEST_ENGINE_HARNESS_H */
