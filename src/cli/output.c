/* output.c - see output.h */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "output.h"

/* Clear a live status line before anything else goes to the terminal (one
 * is shown only where escapes are allowed: color_err). */
static void clear_status(gpc_out *o)
{
    if (o->status_shown) {
        fputs("\r\033[K", stderr);
        o->status_shown = 0;
    }
}

static void sink_emit(void *ud, gpc_log_kind kind, long elapsed_s, const char *msg)
{
    gpc_out *o = ud;
    switch (kind) {
    case GPC_LOG_DEBUG:
        if (o->verbose < 1)
            return;
        clear_status(o);
        fprintf(stderr, "gpuctl: debug: %s\n", msg);
        return;
    case GPC_LOG_INFO:
        if (o->quiet)
            return;
        clear_status(o);
        fprintf(stderr, "%s\n", msg);
        return;
    case GPC_LOG_WARN:
        clear_status(o);
        fprintf(stderr, "gpuctl: warning: %s\n", msg);
        return;
    case GPC_LOG_STATUS:
        if (o->quiet)
            return;
        if (o->color_err) {
            /* a terminal that takes escapes: the line is rewritten */
            fprintf(stderr, "\r\033[K[%4lds] %s", elapsed_s, msg);
            fflush(stderr);
            o->status_shown = 1;
        } else if (strcmp(msg, o->status_last) != 0) {
            fprintf(stderr, "[%4lds] %s\n", elapsed_s, msg);
        }
        snprintf(o->status_last, sizeof(o->status_last), "%s", msg);
        return;
    case GPC_LOG_STATUS_END:
        if (o->status_shown)
            fputc('\n', stderr);
        o->status_shown = 0;
        o->status_last[0] = '\0';
        return;
    }
}

static void sink_output(void *ud, const char *data, size_t len)
{
    gpc_out *o = ud;
    clear_status(o);
    fwrite(data, 1, len, stdout);
    fflush(stdout);
}

void gpc_out_init(gpc_out *o)
{
    memset(o, 0, sizeof(*o));
    o->tty = isatty(STDOUT_FILENO);
    o->err_tty = isatty(STDERR_FILENO);
    const char *nc = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    int plain = (nc && *nc) || (term && strcmp(term, "dumb") == 0);
    o->color = o->tty && !plain;
    /* escapes on stderr (the red "error:", the rewritten status line) only
     * on a terminal that is not dumb */
    o->color_err = o->err_tty && !(term && strcmp(term, "dumb") == 0);
    o->color_err_red = o->color_err && !(nc && *nc);
    o->log.emit = sink_emit;
    o->log.output = sink_output;
    o->log.ud = o;
    o->log.debug = 1; /* the sink filters by -v */
    o->cfg.log = &o->log;
}

int gpc_report_error(const gpc_out *o, const gpc_error *err)
{
    return gpc_report_error_status(o, err, gpc_exit_status(err->code ? err->code
                                                                     : GPC_ERR_INTERNAL));
}

void gpc_json_add_error(cJSON *obj, const char *key, const gpc_error *err, int exit_status)
{
    cJSON *e = cJSON_AddObjectToObject(obj, key);
    cJSON_AddStringToObject(e, "code", gpc_code_name(err->code));
    cJSON_AddStringToObject(e, "message", err->msg);
    cJSON_AddNumberToObject(e, "exit_status", exit_status);
    const gpc_remote *r = &err->remote;
    if (!r->set)
        return;
    if (r->code[0])
        cJSON_AddStringToObject(e, "remote_code", r->code);
    if (r->http_status)
        cJSON_AddNumberToObject(e, "http_status", r->http_status);
    if (r->request_id[0])
        cJSON_AddStringToObject(e, "request_id", r->request_id);
    cJSON_AddBoolToObject(e, "retryable", r->retryable);
}

int gpc_report_error_status(const gpc_out *o, const gpc_error *err, int status)
{
    gpc_error shown = *err;
    if (!shown.code)
        shown.code = GPC_ERR_INTERNAL;
    if (!shown.msg[0])
        snprintf(shown.msg, sizeof(shown.msg), "unknown error");
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        gpc_json_add_error(doc, "error", &shown, status);
        gpc_print_json(doc);
    }
    /* the request id for a support ticket, unless the message has it */
    const char *rid = shown.remote.request_id;
    int with_rid = rid[0] && !strstr(shown.msg, rid);
    int on = o->color_err_red;
    fprintf(stderr, "%sgpuctl: error:%s %s%s%s%s\n", on ? "\033[1;31m" : "", on ? "\033[0m" : "",
            shown.msg, with_rid ? " (request id " : "", with_rid ? rid : "", with_rid ? ")" : "");
    return status;
}

int gpc_report_cancelled(const gpc_out *o, const char *what)
{
    int status = gpc_exit_status(GPC_ERR_USAGE);
    if (o->format == GPC_OUT_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", gpc_code_name(GPC_ERR_USAGE));
        cJSON_AddStringToObject(e, "message", what);
        cJSON_AddNumberToObject(e, "exit_status", status);
        gpc_print_json(doc);
    }
    fprintf(stderr, "%s\n", what);
    return status;
}

void gpc_print_json(cJSON *doc)
{
    /* schema_version first, then the document's own members in order. */
    cJSON *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(out, "schema_version", GPC_JSON_SCHEMA_VERSION);
    cJSON_DeleteItemFromObject(doc, "schema_version");
    while (doc->child) {
        cJSON *item = doc->child;
        cJSON_DetachItemViaPointer(doc, item);
        /* copies the key, then frees the item's old copy */
        cJSON_AddItemToObject(out, item->string, item);
    }
    cJSON_Delete(doc);
    char *s = cJSON_Print(out);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
    fflush(stdout);
    cJSON_Delete(out);
}

const char *gpc_c_bold(const gpc_out *o) { return o->color ? "\033[1m" : ""; }
const char *gpc_c_reset(const gpc_out *o) { return o->color ? "\033[0m" : ""; }

const char *gpc_c_phase(const gpc_out *o, const char *phase)
{
    if (!o->color)
        return "";
    if (strcmp(phase, "succeeded") == 0 || strcmp(phase, "running") == 0)
        return "\033[32m";
    if (strcmp(phase, "failed") == 0 || strcmp(phase, "preempted") == 0)
        return "\033[31m";
    if (strcmp(phase, "booting") == 0 || strcmp(phase, "pending") == 0)
        return "\033[33m";
    return "\033[2m";
}

void gpc_table_init(gpc_table *t, size_t ncols, const char *const *header)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    gpc_table_add(t, header);
}

void gpc_table_add(gpc_table *t, const char *const *row)
{
    if (t->nrows * t->ncols + t->ncols > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : t->ncols * 8;
        while (cap < t->nrows * t->ncols + t->ncols)
            cap *= 2;
        char **c = realloc(t->cells, cap * sizeof(*c));
        if (!c)
            return;
        t->cells = c;
        t->cap = cap;
    }
    for (size_t i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = strdup(row[i] ? row[i] : "");
    t->nrows++;
}

void gpc_table_print(const gpc_out *o, gpc_table *t, FILE *f)
{
    size_t w[32] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols && c < 32; c++) {
            const char *s = t->cells[r * t->ncols + c];
            size_t l = s ? strlen(s) : 0;
            if (l > w[c])
                w[c] = l;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        if (r == 0)
            fputs(gpc_c_bold(o), f);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            s = s ? s : "";
            int last = c + 1 == t->ncols;
            if (r > 0 && t->ncols > 2 && strcmp(t->cells[c], "PHASE") == 0 && o->color)
                fprintf(f, "%s%-*s%s", gpc_c_phase(o, s), last ? 0 : (int)w[c], s, gpc_c_reset(o));
            else
                fprintf(f, "%-*s", last ? 0 : (int)w[c], s);
            if (!last)
                fputs("  ", f);
        }
        if (r == 0)
            fputs(gpc_c_reset(o), f);
        fputc('\n', f);
    }
    fflush(f);
}

void gpc_table_free(gpc_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

void gpc_fmt_age(long long secs, char *out, size_t len)
{
    if (secs < 0)
        secs = 0;
    if (secs < 60)
        snprintf(out, len, "%llds", secs);
    else if (secs < 3600)
        snprintf(out, len, "%lldm%02llds", secs / 60, secs % 60);
    else if (secs < 86400)
        snprintf(out, len, "%lldh%02lldm", secs / 3600, secs % 3600 / 60);
    else
        snprintf(out, len, "%lldd%02lldh", secs / 86400, secs % 86400 / 3600);
}

int gpc_confirm(const gpc_out *o, const char *question)
{
    (void)o;
    if (!isatty(STDIN_FILENO))
        return -1;
    fprintf(stderr, "%s [y/N] ", question);
    fflush(stderr);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        return 0;
    return line[0] == 'y' || line[0] == 'Y';
}
