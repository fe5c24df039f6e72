/* common.c - see fuzz.h */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "gpuctl/clock.h"
#include "gpuctl/http.h"
#include "gpuctl/util.h"

static char tmpdir[256]; /* paths under it fit PATH_MAX */

/* The fixed clock's time (clock.h): 2026-01-01T00:00:00Z at the start of
 * every input, so that a run is the same on every machine and day. */
#define FUZZ_NOW 1767225600
static int64_t fuzz_now = FUZZ_NOW;

static const char *setup_once(void);

static void cleanup(void)
{
    if (tmpdir[0])
        gpc_rm_rf(tmpdir, NULL);
}

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz: %s: %s\n", what, strerror(errno));
        abort();
    }
}

const char *fuzz_path(const char *name)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", setup_once(), name);
    return p;
}

static void set(const char *name, const char *sub)
{
    char v[PATH_MAX];
    snprintf(v, sizeof(v), "%s/%s", tmpdir, sub);
    must(setenv(name, v, 1) == 0, name);
}

const char *fuzz_init(void)
{
    fuzz_now = FUZZ_NOW; /* a wait of the last input moved it on */
    return setup_once();
}

static const char *setup_once(void)
{
    if (tmpdir[0])
        return tmpdir;
    const char *t = getenv("TMPDIR");
    int len = snprintf(tmpdir, sizeof(tmpdir), "%s/gpuctl-fuzz-XXXXXX",
                       t && *t == '/' && strlen(t) < 200 ? t : "/tmp");
    must(len > 0 && (size_t)len < sizeof(tmpdir), "TMPDIR");
    must(mkdtemp(tmpdir) != NULL, "mkdtemp");
    atexit(cleanup);
    /* Every directory gpuctl may write to, and every AWS file, is in
     * tmpdir; nothing of this machine's configuration is read. */
    static const char *const dirs[] = {"home", "config", "cache", "state", "data"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char d[PATH_MAX];
        snprintf(d, sizeof(d), "%s/%s", tmpdir, dirs[i]);
        must(mkdir(d, 0700) == 0, "mkdir");
    }
    set("HOME", "home");
    set("XDG_CONFIG_HOME", "config");
    set("XDG_CACHE_HOME", "cache");
    set("XDG_STATE_HOME", "state");
    set("XDG_DATA_HOME", "data");
    set("GPUCTL_CONFIG_DIR", "config");
    set("GPUCTL_CACHE_DIR", "cache");
    set("AWS_CONFIG_FILE", "aws-config");
    set("AWS_SHARED_CREDENTIALS_FILE", "aws-credentials");
    static const char *const unset[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
        "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "GPUCTL_CATALOG", "GPUCTL_SSH_PUBLIC_KEY",
        "GPUCTL_SSH_CIDR", "GPUCTL_TEST_FAULT"};
    for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
        unsetenv(unset[i]);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("GPUCTL_CHECKIP_URL", "http://checkip.fuzz.invalid/", 1);
    gpc_clock c = gpc_clock_fixed(&fuzz_now); /* waits return at once */
    gpc_clock_set(&c);
    setenv("GPUCTL_AWS_POLL_S", "0.000001", 1);
    setenv("NO_COLOR", "1", 1);
    return tmpdir;
}

void fuzz_write(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    must(fd >= 0, path);
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        must(n > 0 || errno == EINTR, path);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        }
    }
    must(close(fd) == 0, path);
}

size_t fuzz_split(const uint8_t *in, size_t size, char **buf, const char **pre,
                  fuzz_part *parts, size_t max)
{
    static const char sep[] = "\n@@@@";
    /* a line end first, so that a part may start the input */
    char *b = malloc(size + 2);
    must(b != NULL, "malloc");
    b[0] = '\n';
    if (size)
        memcpy(b + 1, in, size);
    b[size + 1] = '\0';
    char *end = b + size + 1;
    *buf = b;
    char *at = memmem(b, size + 1, sep, sizeof(sep) - 1);
    *pre = at == b ? "" : b + 1;
    size_t n = 0;
    while (at && n < max) {
        *at = '\0';
        char *h = at + sizeof(sep) - 1;
        char *nl = memchr(h, '\n', (size_t)(end - h));
        char *data = nl ? nl + 1 : end;
        if (nl)
            *nl = '\0';
        while (*h == ' ')
            h++;
        char *next = memmem(data, (size_t)(end - data), sep, sizeof(sep) - 1);
        parts[n].header = h;
        parts[n].data = data;
        parts[n].len = (size_t)((next ? next : end) - data);
        n++;
        at = next;
    }
    if (at)
        *at = '\0';
    return n;
}

/* ---- the fake HTTP layer ------------------------------------------------ */

static const fuzz_part *answers;
static size_t n_answers, next_answer;

void fuzz_answers(const fuzz_part *parts, size_t n)
{
    answers = parts;
    n_answers = parts ? n : 0;
    next_answer = 0;
}

int __wrap_gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                         gpc_http_response *resp, gpc_error *err);
int __wrap_gpc_http_send_all(const gpc_http_request *reqs, size_t n, const gpc_http_opts *opts,
                             size_t max_parallel, gpc_http_response *resps, int *rcs,
                             gpc_error *errs);

/* Keep a header line; the request id from the headers opts names (http.h). */
static void take_header(gpc_http_response *resp, const char *line,
                        const char *const *ids)
{
    const char *colon = strchr(line, ':');
    if (!colon)
        return;
    gpc_buf_addf(&resp->headers, NULL, "%s\r\n", line);
    size_t nl = (size_t)(colon - line);
    const char *v = colon + 1 + strspn(colon + 1, " ");
    for (size_t i = 0; ids && ids[i]; i++)
        if (strlen(ids[i]) == nl && strncasecmp(line, ids[i], nl) == 0)
            snprintf(resp->request_id, sizeof(resp->request_id), "%s", v);
}

/*
 * gpc_http_send as http.h describes it, without a socket: each attempt
 * takes the next answer.  The retry decisions are http.h's (2xx and
 * opts->accept succeed; should_retry, else 429 and 5xx, retry while
 * attempts are left; a body over max_body ends the request), without the
 * waits.
 */
int __wrap_gpc_http_send(const gpc_http_request *req, const gpc_http_opts *opts,
                         gpc_http_response *resp, gpc_error *err)
{
    static const gpc_http_opts none;
    const gpc_http_opts *o = opts ? opts : &none;
    const char *what = o->what ? o->what : "http";
    const char *method = req && req->method ? req->method : "GET";
    size_t max_body = o->max_body ? o->max_body : GPC_HTTP_BODY_MAX;
    int max_attempts = o->max_attempts > 0 ? o->max_attempts : GPC_HTTP_MAX_ATTEMPTS;
    memset(resp, 0, sizeof(*resp));
    gpc_buf_init(&resp->body, max_body);
    gpc_buf_init(&resp->headers, GPC_HTTP_HEADERS_MAX);
    resp->retry_after_s = -1;
    if (!req || !req->url)
        return gpc_fail(err, GPC_ERR_USAGE, "%s: request without a URL", what);
    char url[512];
    gpc_http_redact_url(req->url, url, sizeof(url));
    for (int attempt = 1;; attempt++) {
        if (o->before_attempt) {
            gpc_http_headers extra = {0};
            gpc_error he;
            gpc_error_clear(&he);
            int rc = o->before_attempt(o->arg, req, attempt, &extra, &he);
            gpc_http_headers_free(&extra);
            if (rc) {
                if (!he.code)
                    gpc_fail(&he, (gpc_code)rc, "%s: %s %s: before_attempt failed", what,
                             method, url);
                return gpc_fail(err, he.code, "%s", he.msg);
            }
        }
        resp->attempts = attempt;
        resp->status = 0;
        resp->request_id[0] = '\0';
        gpc_buf_reset(&resp->body);
        gpc_buf_reset(&resp->headers);
        const fuzz_part *a = next_answer < n_answers ? &answers[next_answer++] : NULL;
        if (a) {
            char *rest;
            long status = strtol(a->header, &rest, 10);
            resp->status = status >= 100 && status <= 999 ? status : 200;
            if (rest && *rest == ' ')
                take_header(resp, rest + 1, o->request_id_headers);
            if (gpc_buf_add(&resp->body, a->data, a->len, NULL))
                return gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: response larger than %zu "
                                "bytes", what, method, url, max_body);
            int ok = resp->status / 100 == 2;
            for (size_t i = 0; i < o->n_accept && !ok; i++)
                ok = o->accept[i] == resp->status;
            if (ok)
                return 0;
        }
        int verdict = o->should_retry ? o->should_retry(o->arg, resp) : GPC_HTTP_DEFAULT;
        int retry = verdict == GPC_HTTP_RETRY ||
                    (verdict != GPC_HTTP_STOP &&
                     (resp->status == 0 || resp->status == 429 || resp->status == 500 ||
                      resp->status == 502 || resp->status == 503 || resp->status == 504));
        if (retry && attempt < max_attempts && next_answer < n_answers)
            continue;
        if (!a)
            return gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: no answer (fuzz: no more "
                            "answers) (after %d attempts)", what, method, url, attempt);
        return gpc_fail(err, GPC_ERR_PROVIDER, "%s: %s %s: HTTP %ld", what, method, url,
                        resp->status);
    }
}

int __wrap_gpc_http_send_all(const gpc_http_request *reqs, size_t n, const gpc_http_opts *opts,
                             size_t max_parallel, gpc_http_response *resps, int *rcs,
                             gpc_error *errs)
{
    (void)max_parallel;
    if (n && (!reqs || !resps || !rcs || !errs))
        return GPC_ERR_USAGE;
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        gpc_error_clear(&errs[i]);
        rcs[i] = __wrap_gpc_http_send(&reqs[i], opts, &resps[i], &errs[i]);
        if (rcs[i] && !first)
            first = rcs[i];
    }
    return first;
}

void fuzz_note(const char *target, const char *what, const gpc_error *err)
{
    if (!getenv("GPUCTL_FUZZ_VERBOSE"))
        return;
    fprintf(stderr, "%s: %s: %s (answers used: %zu of %zu)\n", target, what,
            err && err->code ? err->msg : "ok", next_answer, n_answers);
}

/* ---- no commands -------------------------------------------------------- */

static const char *spawn_file;

void fuzz_spawn_output(const char *file)
{
    spawn_file = file;
}

int __real_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]);
int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]);

int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    (void)path;
    (void)argv;
    if (!spawn_file)
        return ENOSYS;
    char cat[] = "cat", file[PATH_MAX];
    snprintf(file, sizeof(file), "%s", spawn_file);
    char *args[] = {cat, file, NULL};
    return __real_posix_spawn(pid, "/bin/cat", fa, attr, args, envp);
}
