/* engine_harness.c - what the engine tests share (engine_harness.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "gpuctl/clock.h"
#include "gpuctl/util.h"

static void collect(void *ud, gpc_log_kind kind, long elapsed_s, const char *msg)
{
    eng *e = ud;
    if (kind == GPC_LOG_WARN || kind == GPC_LOG_INFO)
        gpc_buf_addf(&e->said, NULL, "%s: %s\n", kind == GPC_LOG_WARN ? "warn" : "info", msg);
    else if (kind == GPC_LOG_STATUS)
        gpc_buf_addf(&e->said, NULL, "status [%lds]: %s\n", elapsed_s, msg);
}

static void open_session(eng *e)
{
    gpc_error err;
    gpc_error_clear(&err);
    int rc = gpc_session_open(&e->s, &e->set, &err);
    if (rc)
        fail_msg("gpc_session_open: %s", err.msg);
}

int eng_setup(void **state)
{
    eng *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    snprintf(e->dir, sizeof(e->dir), "%s/gpuctl-engine-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(e->dir)) {
        free(e);
        return -1;
    }
    /* Nothing of the user's: config, catalog override, caches. */
    setenv("HOME", e->dir, 1);
    setenv("XDG_CONFIG_HOME", e->dir, 1);
    setenv("XDG_CACHE_HOME", e->dir, 1);
    setenv("GPUCTL_CONFIG_DIR", e->dir, 1);
    setenv("GPUCTL_CACHE_DIR", e->dir, 1);
    const char *unset[] = {"GPUCTL_CONFIG", "GPUCTL_CATALOG", "GPUCTL_CAPACITY_SKIP_S",
                           "GPUCTL_BOOT_TIMEOUT_S", "GPUCTL_TEST_FAULT", "GPUCTL_FAKE_NOW"};
    for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
        unsetenv(unset[i]);
    e->now = ENG_T0;
    gpc_clock c = gpc_clock_fixed(&e->now);
    gpc_clock_set(&c);
    gpc_buf_init(&e->said, GPC_BUF_FILE_MAX);
    gpc_buf_init(&e->text, GPC_BUF_FILE_MAX);
    e->log.emit = collect;
    e->log.ud = e;
    e->set.state_dir = e->dir;
    e->set.log = &e->log;
    scripted_reset();
    open_session(e);
    *state = e;
    return 0;
}

int eng_teardown(void **state)
{
    eng *e = *state;
    gpc_session_close(&e->s);
    gpc_spec_free(e->spec);
    gpc_clock_set(NULL);
    gpc_rm_rf(e->dir, NULL);
    gpc_buf_free(&e->said);
    gpc_buf_free(&e->text);
    free(e);
    return 0;
}

void eng_spec(eng *e, const char *yaml)
{
    gpc_spec_free(e->spec);
    e->spec = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_spec_load_string("job.yaml", e->dir, yaml, strlen(yaml), &e->spec, &err))
        fail_msg("spec: %s", err.msg);
}

int eng_apply(eng *e, gpc_apply_result *res, gpc_error *err)
{
    gpc_apply_opts o = {.poll_s = 5};
    gpc_error_clear(err);
    return gpc_apply(&e->s, e->spec, "-", &o, res, err);
}

void eng_cluster(eng *e, const char *name, gpc_cluster_rec *c)
{
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_cluster_get(e->s.st, name, c, &err))
        fail_msg("cluster %s: %s", name, err.msg);
}

void eng_restart(eng *e)
{
    gpc_session_close(&e->s);
    open_session(e);
}

const char *eng_norm(eng *e, const char *s)
{
    gpc_cluster_rec *cs = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_cluster_list(e->s.st, 1, &cs, &n, &err))
        fail_msg("cluster list: %s", err.msg);
    char *out = strdup(s);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        char uid[9], id[24];
        snprintf(uid, sizeof(uid), "%.8s", cs[i].uid);
        snprintf(id, sizeof(id), "U%lld", (long long)cs[i].id);
        gpc_buf b;
        gpc_buf_init(&b, GPC_BUF_FILE_MAX);
        const char *p = out, *hit;
        while ((hit = strstr(p, uid)) != NULL) {
            gpc_buf_add(&b, p, (size_t)(hit - p), NULL);
            gpc_buf_adds(&b, id, NULL);
            p = hit + strlen(uid);
        }
        gpc_buf_adds(&b, p, NULL);
        free(out);
        out = gpc_buf_take(&b);
        assert_non_null(out);
    }
    gpc_cluster_list_free(cs, n);
    gpc_buf_reset(&e->text);
    gpc_buf_adds(&e->text, out, NULL);
    free(out);
    return gpc_buf_str(&e->text);
}

const char *eng_calls(eng *e)
{
    char *calls = strdup(scripted_calls());
    assert_non_null(calls);
    scripted_calls_clear();
    const char *r = eng_norm(e, calls);
    free(calls);
    return r;
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

/* Seconds after ENG_T0, or "-" for 0. */
static const char *rel(int64_t t, char *buf, size_t n)
{
    if (!t)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "+%lld", (long long)(t - ENG_T0));
    return buf;
}

const char *eng_nodes(eng *e, int64_t cid)
{
    gpc_node_rec *nodes = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_node_list(e->s.st, cid, 1, &nodes, &n, &err))
        fail_msg("node list: %s", err.msg);
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_FILE_MAX);
    for (size_t i = 0; i < n; i++) {
        const gpc_node_rec *nd = &nodes[i];
        char s[24], t[24];
        gpc_buf_addf(&b, NULL, "%u %s %s %s/%s %s %s %s(%d) started=%s ended=%s\n", nd->rank,
                     or_dash(nd->provider_id), or_dash(nd->client_token), or_dash(nd->region),
                     or_dash(nd->zone), or_dash(nd->instance_type), or_dash(nd->private_ip),
                     gpc_phase_name(nd->phase), nd->exit_code, rel(nd->started_at, s, sizeof(s)),
                     rel(nd->ended_at, t, sizeof(t)));
    }
    gpc_node_list_free(nodes, n);
    char *text = gpc_buf_take(&b);
    const char *r = eng_norm(e, text ? text : "");
    free(text);
    return r;
}

const char *eng_attempts(eng *e, int64_t cid)
{
    gpc_attempt_rec *att = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_attempt_list(e->s.st, cid, &att, &n, &err))
        fail_msg("attempt list: %s", err.msg);
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_FILE_MAX);
    for (size_t i = 0; i < n; i++) {
        const gpc_attempt_rec *a = &att[i];
        gpc_buf_addf(&b, NULL, "%u a%u %s/%s %s %s", a->rank, a->attempt, or_dash(a->region),
                     or_dash(a->zone), a->instance_type, a->outcome);
        if (a->error_code[0])
            gpc_buf_addf(&b, NULL, " %s: %s", a->error_code, a->error_message);
        gpc_buf_adds(&b, "\n", NULL);
    }
    gpc_attempt_list_free(att, n);
    char *text = gpc_buf_take(&b);
    const char *r = eng_norm(e, text ? text : "");
    free(text);
    return r;
}

const char *eng_events(eng *e, int64_t cid)
{
    gpc_event_rec *ev = NULL;
    size_t n = 0;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_event_list(e->s.st, cid, &ev, &n, &err))
        fail_msg("event list: %s", err.msg);
    gpc_buf b;
    gpc_buf_init(&b, GPC_BUF_FILE_MAX);
    for (size_t i = 0; i < n; i++) {
        if (ev[i].rank < 0)
            gpc_buf_addf(&b, NULL, "- %s: %s\n", ev[i].kind, ev[i].message);
        else
            gpc_buf_addf(&b, NULL, "%d %s: %s\n", ev[i].rank, ev[i].kind, ev[i].message);
    }
    gpc_event_list_free(ev, n);
    char *text = gpc_buf_take(&b);
    const char *r = eng_norm(e, text ? text : "");
    free(text);
    return r;
}

const char *eng_said(eng *e)
{
    char *said = strdup(gpc_buf_str(&e->said));
    assert_non_null(said);
    gpc_buf_reset(&e->said);
    const char *r = eng_norm(e, said);
    free(said);
    return r;
}
