/*
 * http_internal.h - what the files of the HTTP helper share (private to
 * src/helpers/; the interface is include/gpuctl/http.h):
 *
 *   http.c         the request engine: handles, retries, interrupts, the
 *                  multi interface
 *   http_redact.c  redaction of URLs, headers, forms, JSON and XML
 *   http_trace.c   the --debug trace
 */
#ifndef GPUCTL_HTTP_INTERNAL_H
#define GPUCTL_HTTP_INTERNAL_H

#include <stddef.h>

#include <curl/curl.h>

#include "gpuctl/buf.h"
#include "gpuctl/error.h"
#include "gpuctl/http.h"

/* What a request body is, for the trace (Content-Type, else its first byte). */
enum { BODY_OTHER, BODY_FORM, BODY_JSON };

typedef struct xfer {
    gpc_http_response *resp;
    size_t max_body;
    const char *const *id_headers; /* opts->request_id_headers */
    int too_big;  /* the body passed max_body */
    int no_mem;   /* an append failed for want of memory */
} xfer;

/* One request of a batch (a batch of one for gpc_http_send). */
enum { SLOT_WAIT, SLOT_RUN, SLOT_DONE };

typedef struct slot {
    const gpc_http_request *req;
    gpc_http_response *resp;
    gpc_error *err;           /* the caller's, or scratch when it gave none */
    gpc_error scratch;
    int rc;
    const char *method;
    char shown[512];          /* the URL as messages show it */
    CURL *h;
    struct curl_slist *headers;
    xfer x;
    char errbuf[CURL_ERROR_SIZE];
    int state;
    int attempt;              /* attempts started */
    double due_ms;            /* SLOT_WAIT: earliest start of the next one */
    double started_ms;        /* when the current attempt started */
    /* trace */
    char tag[48];             /* ", #2 of 5" in a batch, else "" */
    int kind;                 /* BODY_* of the request body */
    int traced;               /* the current attempt's request was traced */
    gpc_buf sent;             /* header block curl sent, being gathered */
} slot;

typedef struct engine {
    const gpc_http_opts *o;
    const char *what;
    long timeout_s, connect_s, base_ms, cap_ms;
    int max_attempts;
    size_t max_body;
    CURLM *multi;
    int trace;                /* trace_fp was set when the call began */
} engine;

/* ---- http.c -------------------------------------------------------------- */

/* Initialise libcurl, libxml2 and the jitter's random state, once per
 * process (thread-safe). */
void http_init_once(void);

/* A monotonic clock, milliseconds. */
double http_now_ms(void);

/* ---- http_redact.c ------------------------------------------------------- */

/* Does s[0..len) hold word (lower case) anywhere, case-insensitively? */
int http_holds_word(const char *s, size_t len, const char *word);

/* ---- http_trace.c -------------------------------------------------------- */

/* Is a trace on (gpc_http_set_trace)? */
int http_tracing(void);

/* libcurl's CURLOPT_DEBUGFUNCTION: gathers the header block curl sends
 * (userp: the slot) and traces the request once it is complete. */
int http_on_debug(CURL *h, curl_infotype type, char *data, size_t size, void *userp);

/* Trace the end of an attempt: cc and text are curl's result and error
 * text; the reply is s->resp. */
void http_trace_reply(slot *s, CURLcode cc, const char *text);

/* Trace "retrying in MS ms" for s. */
void http_trace_retry(const slot *s, long ms);

#endif /* GPUCTL_HTTP_INTERNAL_H */
