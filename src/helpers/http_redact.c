/*
 * http_redact.c - what include/gpuctl/http.h shows of requests and replies:
 * URLs without credentials or query, and header lines, form bodies, JSON
 * and XML documents with their secrets and user data redacted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "gpuctl/http.h"
#include "gpuctl/util.h"
#include "http_internal.h"

void gpc_http_redact_url(const char *url, char *out, size_t size)
{
    if (!size)
        return;
    out[0] = '\0';
    if (!url)
        return;
    const char *p = url, *scheme = strstr(url, "://");
    size_t o = 0;
    if (scheme && scheme < url + strcspn(url, "/?#")) {
        const char *auth = scheme + 3;
        size_t alen = strcspn(auth, "/?#");
        const char *at = NULL;
        for (size_t i = 0; i < alen; i++)
            if (auth[i] == '@')
                at = auth + i;
        /* copy "scheme://" then the authority after any userinfo */
        for (const char *q = url; q < auth && o + 1 < size; q++)
            out[o++] = *q;
        p = at ? at + 1 : auth;
    }
    for (; *p && *p != '?' && *p != '#' && o + 1 < size; p++)
        out[o++] = *p;
    out[o] = '\0';
}


/* ---- redaction ---------------------------------------------------------- */

/* Words that make a parameter, JSON key or XML element sensitive. */
static const char *const secret_words[] = {
    "signature", "token", "secret", "password", "credential",
};

/* The words providers add (gpc_http_add_word), kept as given. */
#define WORDS_MAX 64
static struct {
    gpc_http_word_kind kind;
    char word[GPC_HTTP_WORD_MAX + 1];
} added[WORDS_MAX];
static size_t n_added;

static int equals_ci(const char *s, size_t len, const char *word);

int gpc_http_add_word(gpc_http_word_kind kind, const char *word, gpc_error *err)
{
    if (kind != GPC_HTTP_SECRET_HEADER && kind != GPC_HTTP_SECRET_WORD &&
        kind != GPC_HTTP_PUBLIC_NAME)
        return gpc_fail(err, GPC_ERR_USAGE, "http: redaction word of unknown kind %d",
                        (int)kind);
    size_t len = word ? strlen(word) : 0;
    if (!len || len > GPC_HTTP_WORD_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "http: a redaction word must have 1 to %d bytes",
                        GPC_HTTP_WORD_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)word[i] <= ' ' || word[i] == ':' || word[i] == 0x7f)
            return gpc_fail(err, GPC_ERR_USAGE, "http: redaction word '%s' holds a blank, ':' "
                            "or a control character", word);
    for (size_t i = 0; i < n_added; i++)
        if (added[i].kind == kind && equals_ci(word, len, added[i].word))
            return 0;
    if (n_added == WORDS_MAX)
        return gpc_fail(err, GPC_ERR_USAGE, "http: more than %d redaction words", WORDS_MAX);
    added[n_added].kind = kind;
    memcpy(added[n_added].word, word, len + 1);
    n_added++;
    return 0;
}

int gpc_http_add_words(const gpc_http_word *list, gpc_error *err)
{
    for (size_t i = 0; list && list[i].kind != GPC_HTTP_WORD_END; i++) {
        int rc = gpc_http_add_word(list[i].kind, list[i].word, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Does s[0..len) hold word (lower case) anywhere, case-insensitively? */
int http_holds_word(const char *s, size_t len, const char *word)
{
    size_t wlen = strlen(word);
    for (size_t i = 0; i + wlen <= len; i++)
        if (strncasecmp(s + i, word, wlen) == 0)
            return 1;
    return 0;
}

/* Names that hold a secret word but no secret, as providers registered
 * them (GPC_HTTP_PUBLIC_NAME): the whole name or its last dotted part. */
static int known_public(const char *s, size_t len)
{
    size_t off = len;
    while (off > 0 && s[off - 1] != '.')
        off--;
    for (size_t i = 0; i < n_added; i++)
        if (added[i].kind == GPC_HTTP_PUBLIC_NAME &&
            (equals_ci(s + off, len - off, added[i].word) || equals_ci(s, len, added[i].word)))
            return 1;
    return 0;
}

static int secret_name(const char *s, size_t len)
{
    if (known_public(s, len))
        return 0;
    for (size_t i = 0; i < sizeof(secret_words) / sizeof(*secret_words); i++)
        if (http_holds_word(s, len, secret_words[i]))
            return 1;
    for (size_t i = 0; i < n_added; i++)
        if (added[i].kind == GPC_HTTP_SECRET_WORD && http_holds_word(s, len, added[i].word))
            return 1;
    return 0;
}

static int equals_ci(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* A JSON key or XML element that carries user data (job env: secrets). */
static int user_data_key(const char *s, size_t len)
{
    return equals_ci(s, len, "userdata") || equals_ci(s, len, "customdata");
}

/* A form parameter that carries user data: exactly UserData or CustomData,
 * or that as the last dotted part (LaunchSpecification.UserData). */
static int user_data_param(const char *s, size_t len)
{
    static const char *const names[] = {"UserData", "CustomData"};
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(names[i]);
        if (len == n && memcmp(s, names[i], n) == 0)
            return 1;
        if (len > n && s[len - n - 1] == '.' && memcmp(s + len - n, names[i], n) == 0)
            return 1;
    }
    return 0;
}

static int secret_header(const char *name, size_t len)
{
    static const char *const exact[] = {
        "authorization", "proxy-authorization", "cookie", "set-cookie", "api-key",
    };
    for (size_t i = 0; i < sizeof(exact) / sizeof(*exact); i++)
        if (equals_ci(name, len, exact[i]))
            return 1;
    for (size_t i = 0; i < n_added; i++)
        if (added[i].kind == GPC_HTTP_SECRET_HEADER && equals_ci(name, len, added[i].word))
            return 1;
    if (secret_name(name, len) || http_holds_word(name, len, "authorization") ||
        http_holds_word(name, len, "cookie"))
        return 1;
    return len > 4 && strncasecmp(name + len - 4, "-key", 4) == 0;
}

void gpc_http_redact_header(const char *line, gpc_buf *out)
{
    if (!line || !out)
        return;
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    const char *colon = memchr(line, ':', len);
    if (!colon) {
        gpc_buf_add(out, line, len, NULL);
        return;
    }
    size_t nlen = (size_t)(colon - line), name_end = nlen;
    while (name_end && (line[name_end - 1] == ' ' || line[name_end - 1] == '\t'))
        name_end--;
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (v == end || !secret_header(line, name_end)) {
        gpc_buf_add(out, line, len, NULL);
        return;
    }
    gpc_buf_add(out, line, nlen, NULL);
    gpc_buf_adds(out, ": ", NULL);
    if (equals_ci(line, name_end, "authorization")) {
        size_t scheme = strcspn(v, " \t");
        if (v + scheme < end) { /* "Scheme credentials": keep the scheme word */
            gpc_buf_add(out, v, scheme, NULL);
            gpc_buf_adds(out, " ", NULL);
        }
    }
    gpc_buf_adds(out, "[redacted]", NULL);
}


/* Percent-decode s[0..len) ('+' is a space) into out (len+1 bytes at
 * least); returns the decoded length. */
static size_t form_decode(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = gpc_hex_value((unsigned char)s[i + 1])) >= 0 &&
            (lo = gpc_hex_value((unsigned char)s[i + 2])) >= 0) {
            if (out)
                out[o] = (char)(hi * 16 + lo);
            o++;
            i += 2;
        } else {
            if (out)
                out[o] = s[i] == '+' ? ' ' : s[i];
            o++;
        }
    }
    if (out)
        out[o] = '\0';
    return o;
}

void gpc_http_redact_form(const char *body, size_t len, gpc_buf *out)
{
    if (!body || !out)
        return;
    const char *p = body, *end = body + len;
    while (p <= end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        if (!amp)
            amp = end;
        const char *eq = memchr(p, '=', (size_t)(amp - p));
        if (eq) {
            size_t nlen = (size_t)(eq - p);
            char small[256], *name = nlen < sizeof(small) ? small : malloc(nlen + 1);
            size_t dlen = name ? form_decode(p, nlen, name) : 0;
            int user = name && user_data_param(name, dlen);
            int secret = !name || secret_name(name, dlen);
            if (name != small)
                free(name);
            gpc_buf_add(out, p, nlen + 1, NULL); /* "name=" */
            if (user)
                gpc_buf_addf(out, NULL, "[%zu bytes]",
                             form_decode(eq + 1, (size_t)(amp - eq - 1), NULL));
            else if (secret)
                gpc_buf_adds(out, "[redacted]", NULL);
            else
                gpc_buf_add(out, eq + 1, (size_t)(amp - eq - 1), NULL);
        } else {
            gpc_buf_add(out, p, (size_t)(amp - p), NULL);
        }
        if (amp == end)
            break;
        gpc_buf_adds(out, "&", NULL);
        p = amp + 1;
    }
}

/* Replace child (a member of parent) by a string, keeping its key. */
static void json_replace(cJSON *parent, cJSON *child, const char *text)
{
    cJSON *r = cJSON_CreateString(text);
    if (!r) { /* out of memory: drop the member rather than show it */
        cJSON_Delete(cJSON_DetachItemViaPointer(parent, child));
        return;
    }
    r->string = child->string;
    r->type |= child->type & cJSON_StringIsConst;
    child->string = NULL;
    child->type &= ~cJSON_StringIsConst;
    cJSON_ReplaceItemViaPointer(parent, child, r);
}

static void json_redact(cJSON *item)
{
    cJSON *child = item->child;
    while (child) {
        cJSON *next = child->next;
        const char *key = cJSON_IsObject(item) ? child->string : NULL;
        size_t klen = key ? strlen(key) : 0;
        if (key && user_data_key(key, klen)) {
            char text[48];
            if (cJSON_IsString(child) && child->valuestring)
                snprintf(text, sizeof(text), "[%zu bytes]", strlen(child->valuestring));
            else
                snprintf(text, sizeof(text), "[redacted]");
            json_replace(item, child, text);
        } else if (key && secret_name(key, klen)) {
            json_replace(item, child, "[redacted]");
        } else if (cJSON_IsObject(child) || cJSON_IsArray(child)) {
            json_redact(child);
        }
        child = next;
    }
}

void gpc_http_redact_json(const char *body, size_t len, gpc_buf *out)
{
    if (!body || !out)
        return;
    cJSON *doc = cJSON_ParseWithLength(body, len);
    if (!doc) {
        gpc_buf_addf(out, NULL, "[%zu bytes, not valid JSON]", len);
        return;
    }
    json_redact(doc);
    char *text = cJSON_PrintUnformatted(doc);
    if (text)
        gpc_buf_adds(out, text, NULL);
    else
        gpc_buf_addf(out, NULL, "[%zu bytes of JSON]", len);
    cJSON_free(text);
    cJSON_Delete(doc);
}

static void xml_redact(xmlNodePtr n)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        for (xmlAttrPtr a = n->properties; a; a = a->next)
            if (a->name && secret_name((const char *)a->name, strlen((const char *)a->name)))
                xmlNodeSetContent((xmlNodePtr)a, BAD_CAST "[redacted]");
        const char *name = (const char *)n->name;
        size_t nlen = name ? strlen(name) : 0;
        if (name && user_data_key(name, nlen)) {
            xmlChar *text = xmlNodeGetContent(n);
            char note[48];
            snprintf(note, sizeof(note), "[%zu bytes]", text ? strlen((char *)text) : (size_t)0);
            xmlFree(text);
            xmlNodeSetContent(n, BAD_CAST note);
        } else if (name && secret_name(name, nlen)) {
            xmlNodeSetContent(n, BAD_CAST "[redacted]");
        } else {
            xml_redact(n->children);
        }
    }
}

void gpc_http_redact_xml(const char *body, size_t len, gpc_buf *out)
{
    if (!body || !out)
        return;
    http_init_once();
    xmlDocPtr doc = len <= INT32_MAX
                        ? xmlReadMemory(body, (int)len, NULL, NULL,
                                        XML_PARSE_NONET | XML_PARSE_NOERROR |
                                            XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)
                        : NULL;
    xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root) {
        gpc_buf_addf(out, NULL, "[%zu bytes, not well-formed XML]", len);
        xmlFreeDoc(doc);
        return;
    }
    xml_redact(root);
    xmlBufferPtr b = xmlBufferCreate();
    if (b && xmlNodeDump(b, doc, root, 0, 0) >= 0)
        gpc_buf_add(out, xmlBufferContent(b), (size_t)xmlBufferLength(b), NULL);
    else
        gpc_buf_addf(out, NULL, "[%zu bytes of XML]", len);
    if (b)
        xmlBufferFree(b);
    xmlFreeDoc(doc);
}
