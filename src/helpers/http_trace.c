/*
 * http_trace.c - the --debug trace of include/gpuctl/http.h
 * (gpc_http_set_trace): each attempt's request line, headers and body, its
 * reply, and each retry's delay, redacted by http_redact.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "gpuctl/http.h"
#include "http_internal.h"

/* ---- trace -------------------------------------------------------------- */

static FILE *trace_fp;

void gpc_http_set_trace(FILE *f)
{
    trace_fp = f;
}

int http_tracing(void)
{
    return trace_fp != NULL;
}

/* Write b to the trace in one locked write, then empty it. */
static void trace_flush(gpc_buf *b)
{
    FILE *f = trace_fp;
    if (f && b->len) {
        flockfile(f);
        fwrite(b->data, 1, b->len, f);
        fflush(f);
        funlockfile(f);
    }
    gpc_buf_reset(b);
}

/* Append text[0..len) as lines that start with prefix: at most max bytes of
 * it, '\r' dropped, other control bytes but tab shown as '.'. */
static void trace_lines(gpc_buf *b, const char *prefix, const char *text, size_t len,
                        size_t max)
{
    size_t shown = len > max ? max : len;
    gpc_buf_adds(b, prefix, NULL);
    for (size_t i = 0; i < shown; i++) {
        char c = text[i];
        if (c == '\r')
            continue;
        if (c == '\n') {
            if (i + 1 < shown) {
                gpc_buf_adds(b, "\n", NULL);
                gpc_buf_adds(b, prefix, NULL);
            }
            continue;
        }
        if ((unsigned char)c < 0x20 || c == 0x7f)
            c = c == '\t' ? '\t' : '.';
        gpc_buf_add(b, &c, 1, NULL);
    }
    if (shown < len)
        gpc_buf_addf(b, NULL, " [... %zu more bytes]", len - shown);
    gpc_buf_adds(b, "\n", NULL);
}

/* The URL as the trace shows it: no user:password@, no fragment, the query
 * through gpc_http_redact_form(). */
static void trace_url(const char *url, gpc_buf *b)
{
    size_t len = strlen(url);
    char *base = malloc(len + 1);
    if (!base)
        return;
    gpc_http_redact_url(url, base, len + 1);
    gpc_buf_adds(b, base, NULL);
    free(base);
    const char *q = url + strcspn(url, "?#");
    if (*q == '?') {
        size_t qlen = strcspn(q + 1, "#");
        gpc_buf_adds(b, "?", NULL);
        gpc_http_redact_form(q + 1, qlen, b);
    }
}

/* Is this a "Name: value" line (not the request line)? */
static int header_line(const char *s, size_t len)
{
    const char *colon = memchr(s, ':', len);
    return colon && colon > s && !memchr(s, ' ', (size_t)(colon - s));
}

/* Trace the current attempt's request: line, headers as sent (if curl told
 * them), body. */
static void trace_request(slot *s)
{
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    gpc_buf_addf(&b, NULL, "http: > %s ", s->method);
    trace_url(s->req->url, &b);
    gpc_buf_addf(&b, NULL, " (attempt %d%s)\n", s->attempt, s->tag);
    const char *p = s->sent.data ? s->sent.data : "", *end = p + s->sent.len;
    while (p < end) {
        size_t len = strcspn(p, "\r\n");
        if (len && header_line(p, len)) {
            char *line = strndup(p, len);
            if (line) {
                gpc_buf_adds(&b, "http: > ", NULL);
                gpc_http_redact_header(line, &b);
                gpc_buf_adds(&b, "\n", NULL);
                free(line);
            }
        }
        p += len;
        while (p < end && (*p == '\r' || *p == '\n'))
            p++;
    }
    if (s->req->body && s->req->body_len) {
        gpc_buf text;
        gpc_buf_init(&text, 1u << 20);
        if (s->kind == BODY_FORM)
            gpc_http_redact_form(s->req->body, s->req->body_len, &text);
        else if (s->kind == BODY_JSON)
            gpc_http_redact_json(s->req->body, s->req->body_len, &text);
        else
            gpc_buf_addf(&text, NULL, "[%zu bytes, not shown]", s->req->body_len);
        trace_lines(&b, "http: > ", gpc_buf_str(&text), text.len, GPC_HTTP_TRACE_BODY_MAX);
        gpc_buf_free(&text);
    }
    trace_flush(&b);
    gpc_buf_free(&b);
    gpc_buf_reset(&s->sent);
    s->traced = 1;
}

int http_on_debug(CURL *h, curl_infotype type, char *data, size_t size, void *userp)
{
    slot *s = userp;
    (void)h;
    if (type != CURLINFO_HEADER_OUT || !trace_fp)
        return 0;
    gpc_buf_add(&s->sent, data, size, NULL);
    /* The block ends with an empty line; then it is complete. */
    if (s->sent.len >= 4 && memcmp(s->sent.data + s->sent.len - 4, "\r\n\r\n", 4) == 0)
        trace_request(s);
    return 0;
}

/* Trace the end of an attempt. */
void http_trace_reply(slot *s, CURLcode cc, const char *text)
{
    if (!trace_fp)
        return;
    if (!s->traced || s->sent.len)
        trace_request(s); /* never sent (no connection), or a partial block */
    gpc_http_response *r = s->resp;
    double secs = (http_now_ms() - s->started_ms) / 1000.0;
    const char *tag = s->tag[0] ? s->tag + 2 : "";
    const char *sep = s->tag[0] ? ", " : "";
    gpc_buf b;
    gpc_buf_init(&b, 1u << 20);
    if (s->x.too_big)
        gpc_buf_addf(&b, NULL, "http: < failed: response larger than %zu bytes (%s%s%.3f s)\n",
                     s->x.max_body, tag, sep, secs);
    else if (cc != CURLE_OK)
        gpc_buf_addf(&b, NULL, "http: < failed: %s (%s%s%.3f s)\n", text, tag, sep, secs);
    else {
        gpc_buf_addf(&b, NULL, "http: < %ld (%s%s", r->status, tag, sep);
        if (r->request_id[0])
            gpc_buf_addf(&b, NULL, "request id %s, ", r->request_id);
        gpc_buf_addf(&b, NULL, "%zu bytes, %.3f s)\n", r->body.len, secs);
    }
    if (cc == CURLE_OK && !s->x.too_big && r->body.len && !(r->status >= 200 && r->status < 300)) {
        /* Not a success: its body, redacted.  (A success's body may be
         * credentials: never traced.) */
        const char *body = gpc_buf_str(&r->body);
        size_t i = 0;
        while (i < r->body.len && isspace((unsigned char)body[i]))
            i++;
        gpc_buf red;
        gpc_buf_init(&red, 1u << 20);
        if (i < r->body.len && (body[i] == '{' || body[i] == '['))
            gpc_http_redact_json(body, r->body.len, &red);
        else if (i < r->body.len && body[i] == '<')
            gpc_http_redact_xml(body, r->body.len, &red);
        else
            gpc_http_redact_form(body, r->body.len, &red);
        trace_lines(&b, "http: < ", gpc_buf_str(&red), red.len, GPC_HTTP_TRACE_ERROR_MAX);
        gpc_buf_free(&red);
    }
    trace_flush(&b);
    gpc_buf_free(&b);
}

void http_trace_retry(const slot *s, long ms)
{
    if (!trace_fp)
        return;
    gpc_buf b;
    gpc_buf_init(&b, 256);
    gpc_buf_addf(&b, NULL, "http: retrying in %ld ms%s%s%s\n", ms,
                 s->tag[0] ? " (" : "", s->tag[0] ? s->tag + 2 : "", s->tag[0] ? ")" : "");
    trace_flush(&b);
    gpc_buf_free(&b);
}
