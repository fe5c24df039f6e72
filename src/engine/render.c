/* render.c - see include/gpuctl/render.h */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/buf.h"
#include "gpuctl/provider.h"
#include "gpuctl/render.h"
#include "gpuctl/templates.h"
#include "gpuctl/util.h"

#define DEFAULT_RDZV_PORT 29400u

/* ------------------------------------------------------------------------ */
/* Shell quoting                                                            */

/*
 * Length of the well-formed UTF-8 sequence at s (at most n bytes), with its
 * code point in *cp; 0 when the bytes are not well-formed UTF-8 (overlong
 * forms, surrogates and values past U+10FFFF included).
 */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    size_t len;
    unsigned v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

/*
 * How many bytes at s belong to the next character, and whether it must be
 * written with an ANSI-C escape (*special).
 */
static size_t next_char(const unsigned char *s, size_t n, int *special)
{
    unsigned c = s[0], cp = 0;
    if (c < 0x80) {
        *special = (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F;
        return 1;
    }
    size_t len = utf8_seq(s, n, &cp);
    if (len == 0) {
        *special = 1;
        return 1;
    }
    /* C1 controls (NEL among them) and U+2028/U+2029 are line breaks or
     * non-printable to YAML; U+FFFE/U+FFFF are non-printable too. */
    *special = (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
               cp == 0xFFFE || cp == 0xFFFF;
    return len;
}

int gpc_shell_quote_n(gpc_buf *out, const char *value, size_t len, gpc_error *err)
{
    enum { NONE, PLAIN, ANSI } state = NONE;
    const unsigned char *s = (const unsigned char *)value;
    int rc = 0;

    if (memchr(value, '\0', len))
        return gpc_fail(err, GPC_ERR_RENDER,
                        "a value holds a NUL byte, which a shell cannot carry");
    if (len == 0)
        return gpc_buf_adds(out, "''", err);

    for (size_t i = 0; i < len && !rc;) {
        int special = 0;
        size_t n = next_char(s + i, len - i, &special);
        if (special) {
            if (state == PLAIN)
                rc = gpc_buf_adds(out, "'", err);
            if (!rc && state != ANSI)
                rc = gpc_buf_adds(out, "$'", err);
            state = ANSI;
            for (size_t k = 0; k < n && !rc; k++) {
                if (s[i + k] == '\r')
                    rc = gpc_buf_adds(out, "\\r", err);
                else
                    rc = gpc_buf_addf(out, err, "\\x%02x", s[i + k]);
            }
        } else {
            if (state == ANSI)
                rc = gpc_buf_adds(out, "'", err);
            if (!rc && state != PLAIN)
                rc = gpc_buf_adds(out, "'", err);
            state = PLAIN;
            if (!rc && s[i] == '\'')
                rc = gpc_buf_adds(out, "'\\''", err);
            else if (!rc)
                rc = gpc_buf_add(out, s + i, n, err);
        }
        i += n;
    }
    if (!rc && state != NONE)
        rc = gpc_buf_adds(out, "'", err);
    return rc;
}

int gpc_shell_quote(gpc_buf *out, const char *value, gpc_error *err)
{
    if (!value)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_shell_quote: NULL value");
    return gpc_shell_quote_n(out, value, strlen(value), err);
}

/* ------------------------------------------------------------------------ */
/* Template engine                                                          */

static int is_name_start(char c)
{
    return c >= 'A' && c <= 'Z';
}

static int is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9') || c == '_';
}

/* A template comment line: `##` after optional spaces or tabs. */
static int is_tpl_comment(const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i + 1 < n && line[i] == '#' && line[i + 1] == '#';
}

/* Insert a block value: see gpc_template_render. `prefix` was already
 * written to out just before the placeholder. */
static int put_block(gpc_buf *out, const char *prefix, size_t plen,
                     const char *v, gpc_error *err)
{
    size_t vlen = strlen(v);
    int rc = 0;
    if (vlen > 0 && v[vlen - 1] == '\n')
        vlen--;
    for (size_t i = 0, first = 1; !rc; first = 0) {
        const char *nl = memchr(v + i, '\n', vlen - i);
        size_t end = nl ? (size_t)(nl - v) : vlen;
        if (first && end == i && plen > 0) {
            /* empty first line: no trailing indentation */
            out->len -= plen;
            out->data[out->len] = '\0';
        } else if (!first && end > i) {
            rc = gpc_buf_add(out, prefix, plen, err);
        }
        if (!rc)
            rc = gpc_buf_add(out, v + i, end - i, err);
        if (!nl)
            break;
        if (!rc)
            rc = gpc_buf_adds(out, "\n", err);
        i = end + 1;
    }
    return rc;
}

/* Render one template line (without its newline). */
static int render_line(const char *tname, size_t lineno, const char *line, size_t n,
                       const gpc_tpl_var *vars, size_t n_vars, gpc_buf *out,
                       gpc_error *err)
{
    size_t i = 0;
    int rc = 0;
    while (i < n && !rc) {
        size_t at = i;
        while (at + 1 < n && !(line[at] == '{' && line[at + 1] == '{'))
            at++;
        if (at + 1 >= n) {
            rc = gpc_buf_add(out, line + i, n - i, err);
            break;
        }
        rc = gpc_buf_add(out, line + i, at - i, err);
        if (rc)
            break;

        size_t name = at + 2, end = name;
        while (end < n && is_name_char(line[end]))
            end++;
        if (end == name || !is_name_start(line[name]) || end + 1 >= n ||
            line[end] != '}' || line[end + 1] != '}')
            return gpc_fail(err, GPC_ERR_RENDER,
                            "template '%s' line %zu: malformed placeholder", tname, lineno);
        size_t nlen = end - name;
        const gpc_tpl_var *var = NULL;
        for (size_t k = 0; k < n_vars && !var; k++)
            if (strlen(vars[k].name) == nlen && memcmp(vars[k].name, line + name, nlen) == 0)
                var = &vars[k];
        if (!var || !var->value)
            return gpc_fail(err, GPC_ERR_RENDER, "template '%s' line %zu: %s placeholder {{%.*s}}",
                            tname, lineno, var ? "no value for" : "unknown",
                            (int)nlen, line + name);

        int block = end + 2 == n;
        for (size_t k = 0; k < at && block; k++)
            block = line[k] == ' ' || line[k] == '\t';
        if (block)
            rc = put_block(out, line, at, var->value, err);
        else
            rc = gpc_buf_adds(out, var->value, err);
        i = end + 2;
    }
    return rc;
}

/* The value of var `name` (n bytes), or NULL. */
static const char *tpl_var(const gpc_tpl_var *vars, size_t n_vars, const char *name, size_t n)
{
    for (size_t k = 0; k < n_vars; k++)
        if (strlen(vars[k].name) == n && memcmp(vars[k].name, name, n) == 0)
            return vars[k].value;
    return NULL;
}

/*
 * A section line: "##if NAME=word1|word2" opens a section kept only when
 * var NAME is one of the words, "##endif" closes it.  Returns 1 (open),
 * 2 (close) or 0 (not a section line); *keep says whether to keep it.
 */
static int tpl_section(const char *line, size_t n, const gpc_tpl_var *vars, size_t n_vars,
                       int *keep)
{
    if (n == 7 && memcmp(line, "##endif", 7) == 0)
        return 2;
    if (n < 6 || memcmp(line, "##if ", 5) != 0)
        return 0;
    const char *name = line + 5, *eq = memchr(name, '=', n - 5);
    if (!eq)
        return 0;
    const char *val = tpl_var(vars, n_vars, name, (size_t)(eq - name));
    *keep = 0;
    for (const char *w = eq + 1, *end = line + n; val && w < end;) {
        const char *bar = memchr(w, '|', (size_t)(end - w));
        size_t wl = (size_t)((bar ? bar : end) - w);
        if (strlen(val) == wl && memcmp(val, w, wl) == 0)
            *keep = 1;
        w += wl + 1;
    }
    return 1;
}

int gpc_template_render(const char *tname, const char *text, size_t len,
                        const gpc_tpl_var *vars, size_t n_vars,
                        gpc_buf *out, gpc_error *err)
{
    int rc = 0, keep = 1, open = 0;
    size_t lineno = 1;
    for (size_t i = 0; i < len && !rc; lineno++) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        int sec = tpl_section(text + i, n, vars, n_vars, &keep);
        if (sec == 1 && open)
            rc = gpc_fail(err, GPC_ERR_RENDER, "template %s:%zu: nested ##if", tname, lineno);
        else if (sec == 2 && !open)
            rc = gpc_fail(err, GPC_ERR_RENDER, "template %s:%zu: ##endif without ##if",
                          tname, lineno);
        if (sec) {
            open = sec == 1;
            if (!open)
                keep = 1;
        } else if (keep && !is_tpl_comment(text + i, n)) {
            rc = render_line(tname, lineno, text + i, n, vars, n_vars, out, err);
            if (!rc && nl)
                rc = gpc_buf_adds(out, "\n", err);
        }
        i += n + (nl ? 1 : 0);
    }
    if (!rc && open)
        rc = gpc_fail(err, GPC_ERR_RENDER, "template %s: ##if without ##endif", tname);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Bootstrap                                                                */

/* As in the YAML (spec.h); kept here so that render.c stands alone. */
static const char *interconnect_word(gpc_interconnect ic)
{
    switch (ic) {
    case GPC_IC_ANY: return "any";
    case GPC_IC_NONE: return "none";
    case GPC_IC_EFA: return "efa";
    case GPC_IC_INFINIBAND: return "infiniband";
    case GPC_IC_ERDMA: return "erdma";
    case GPC_IC_RDMA: return "rdma";
    }
    return NULL;
}

static int is_env_name(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/*
 * Check that s is an IPv4 dotted quad or an IPv6 literal (brackets allowed)
 * and write its bare form (no brackets) to out.
 */
static int ip_literal(const char *s, char *out, size_t outsz)
{
    unsigned char bin[16];
    size_t n = strlen(s);
    if (n == 0 || n >= outsz)
        return 0;
    if (inet_pton(AF_INET, s, bin) == 1) {
        memcpy(out, s, n + 1);
        return 1;
    }
    if (s[0] == '[') {
        if (n < 3 || s[n - 1] != ']')
            return 0;
        s++;
        n -= 2;
    }
    char tmp[INET6_ADDRSTRLEN + 1];
    if (n >= sizeof(tmp))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET6, tmp, bin) != 1)
        return 0;
    memcpy(out, tmp, n + 1);
    return 1;
}

/*
 * Is s a host name the bootstrap takes as the rendezvous host (render.h,
 * gpc_node_ctx): [A-Za-z0-9.-], labels of 1..63 characters that neither
 * start nor end with '-', 253 characters at most, the last label not all
 * digits (so that no numeric form of an address passes as a name).
 */
static int host_name(const char *s)
{
    size_t n = strlen(s), label = 0;
    int digits = 1;
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (label == 0 || label > 63 || s[i - 1] == '-')
                return 0;
            if (c == '\0')
                return !digits;
            label = 0;
            digits = 1;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return 0;
        if (c == '-' && label == 0)
            return 0;
        digits &= c >= '0' && c <= '9';
        label++;
    }
    return 0;
}

static const char *const rank_words[] = {
    [GPC_RANK_ENGINE] = "engine", [GPC_RANK_LAUNCH_INDEX] = "launch",
    [GPC_RANK_SCHEDULER] = "scheduler", [GPC_RANK_RENDEZVOUS] = "rendezvous",
};
static const char *const rdzv_words[] = {
    [GPC_RDZV_HEAD_IP] = "ip", [GPC_RDZV_NAME] = "name", [GPC_RDZV_ON_NODE] = "node",
};

enum {
    V_METADATA, V_JOB_ENV, V_CLUSTER, V_CLUSTER_ID, V_NODE_RANK, V_NUM_NODES,
    V_RDZV_PORT, V_HEAD_IP, V_MAX_DURATION_S, V_NPROC_PER_NODE, V_INTERCONNECT,
    V_WORKDIR, V_CHECKPOINT_DIR, V_SETUP, V_RUN_COMMAND, V_USER_ENV_NAMES,
    V_RANK_FROM, V_HEAD_FROM, V_INSTANCE_TYPE, V_FABRIC_SCRIPTED, V_IDLE, V_IDLE_TIMEOUT_S,
    V_DATA, V_DATA_DIR, V_DATA_FETCH,
    V_DELIVER, V_DELIVER_WORKDIR, V_SECRET_NAMES, V_FIRST_JOB,
    V_CKPT_STORE, V_CKPT_URL, V_STORE_ENDPOINT, V_NODE_STORE,
    V_NOTICE, V_BUDGET_S, V_BUDGET_NOTE, V_MAX_DURATION_NOTE, V_MAX_RESTARTS, V_JOIN_TIMEOUT_S,
    /* the included scripts: rendered with the placeholders above only */
    V_NODE_SCRIPT, V_FABRIC_SCRIPT, V_NOTICE_SCRIPT, V_COUNT
};

static const char *const var_names[V_COUNT] = {
    [V_METADATA] = "METADATA",
    [V_JOB_ENV] = "JOB_ENV",
    [V_CLUSTER] = "CLUSTER",
    [V_CLUSTER_ID] = "CLUSTER_ID",
    [V_NODE_RANK] = "NODE_RANK",
    [V_NUM_NODES] = "NUM_NODES",
    [V_RDZV_PORT] = "RDZV_PORT",
    [V_HEAD_IP] = "HEAD_IP",
    [V_MAX_DURATION_S] = "MAX_DURATION_S",
    [V_NPROC_PER_NODE] = "NPROC_PER_NODE",
    [V_INTERCONNECT] = "INTERCONNECT",
    [V_WORKDIR] = "WORKDIR",
    [V_CHECKPOINT_DIR] = "CHECKPOINT_DIR",
    [V_SETUP] = "SETUP",
    [V_RUN_COMMAND] = "RUN_COMMAND",
    [V_USER_ENV_NAMES] = "USER_ENV_NAMES",
    [V_RANK_FROM] = "RANK_FROM",
    [V_HEAD_FROM] = "HEAD_FROM",
    [V_INSTANCE_TYPE] = "INSTANCE_TYPE",
    [V_FABRIC_SCRIPTED] = "FABRIC_SCRIPTED",
    [V_IDLE] = "IDLE",
    [V_IDLE_TIMEOUT_S] = "IDLE_TIMEOUT_S",
    [V_DATA] = "DATA",
    [V_DATA_DIR] = "DATA_DIR",
    [V_DATA_FETCH] = "DATA_FETCH",
    [V_DELIVER] = "DELIVER",
    [V_DELIVER_WORKDIR] = "DELIVER_WORKDIR",
    [V_FIRST_JOB] = "FIRST_JOB",
    [V_SECRET_NAMES] = "SECRET_NAMES",
    [V_CKPT_STORE] = "CKPT_STORE",
    [V_CKPT_URL] = "CKPT_URL",
    [V_STORE_ENDPOINT] = "STORE_ENDPOINT",
    [V_NODE_STORE] = "NODE_STORE",
    [V_NOTICE] = "NOTICE",
    [V_BUDGET_S] = "BUDGET_S",
    [V_BUDGET_NOTE] = "BUDGET_NOTE",
    [V_MAX_DURATION_NOTE] = "MAX_DURATION_NOTE",
    [V_MAX_RESTARTS] = "MAX_RESTARTS",
    [V_JOIN_TIMEOUT_S] = "JOIN_TIMEOUT_S",
    [V_NODE_SCRIPT] = "NODE_SCRIPT",
    [V_FABRIC_SCRIPT] = "FABRIC_SCRIPT",
    [V_NOTICE_SCRIPT] = "NOTICE_SCRIPT",
};

/* The fabrics templates/bootstrap.sh handles itself, with no fabric script
 * (its `case $GPUCTL_INTERCONNECT`: infiniband and none; any and rdma set
 * nothing, NCCL finds what there is). */
static const char *const bootstrap_fabrics[] = {"any", "none", "rdma", "infiniband"};

/*
 * The fabric script of fabric `name`, whichever provider declares it, and
 * that provider's name in *owner; NULL when none does.
 */
static const gpc_fabric_script *fabric_script(const char *name, const char **owner)
{
    for (size_t i = 0; gpc_providers[i]; i++)
        for (const gpc_fabric_script *f = gpc_providers[i]->fabrics; f && f->name; f++)
            if (strcmp(f->name, name) == 0) {
                *owner = gpc_providers[i]->name;
                return f;
            }
    return NULL;
}

/*
 * Does the node script define shell function `name`: a line that starts
 * with "name() {" (the form the contract in render.h asks for)?
 */
static int defines_function(const char *script, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = script; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && strncmp(p + n, "() {", 4) == 0)
            return 1;
    return 0;
}

/* Quote s into b; NULL quotes as ''. */
static int quote_opt(gpc_buf *b, const char *s, gpc_error *err)
{
    return gpc_shell_quote(b, s ? s : "", err);
}

/* The rendered node script `script` of `provider` defines `fn`, or an
 * error naming it. */
static int needs_function(const char *provider, const char *script, const char *fn,
                          const char *what, gpc_error *err)
{
    if (defines_function(script, fn))
        return 0;
    return gpc_fail(err, GPC_ERR_RENDER, "the node script of provider '%s' does not define %s, "
                    "which %s needs", provider, fn, what);
}

/*
 * The functions the node's modes ask of the node script (render.h, the
 * contract), looked for in the script as rendered for the node: one in a
 * section of another mode does not count.
 */
static int mode_functions(const gpc_node_ctx *node, const char *provider, const char *script,
                          gpc_error *err)
{
    int rc = 0;
    if (node->rank_from == GPC_RANK_LAUNCH_INDEX &&
        !defines_function(script, "gpuctl_md_launch_index"))
        rc = gpc_fail(err, GPC_ERR_RENDER, "a node rank from the launch index needs a node "
                      "script that defines gpuctl_md_launch_index and a first rank above 0");
    if (!rc && node->rank_from == GPC_RANK_SCHEDULER)
        rc = needs_function(provider, script, "gpuctl_md_node_rank",
                            "a node rank from the scheduler", err);
    if (!rc && node->rdzv_from == GPC_RDZV_ON_NODE)
        rc = needs_function(provider, script, "gpuctl_md_head_addr",
                            "a rendezvous found on the node", err);
    return rc;
}

/*
 * Check that the node's rank, head address and modes go together
 * (render.h, gpc_node_ctx), and write the head address the bootstrap
 * gets to head (size bytes; "" when the node finds it itself).
 */
static int rank_and_head(const gpc_node_ctx *node, char *head, size_t size, gpc_error *err)
{
    if ((unsigned)node->rank_from >= sizeof(rank_words) / sizeof(rank_words[0]))
        return gpc_fail(err, GPC_ERR_RENDER, "unknown rank source %d", (int)node->rank_from);
    if ((unsigned)node->rdzv_from >= sizeof(rdzv_words) / sizeof(rdzv_words[0]))
        return gpc_fail(err, GPC_ERR_RENDER, "unknown rendezvous source %d",
                        (int)node->rdzv_from);
    /* the head: the one node whose bootstrap says so before it boots */
    int head_known = node->rank_from == GPC_RANK_ENGINE && node->rank == 0;

    switch (node->rdzv_from) {
    case GPC_RDZV_HEAD_IP:
        if (node->head_addr) {
            if (!ip_literal(node->head_addr, head, size))
                return gpc_fail(err, GPC_ERR_RENDER, "head address '%.64s' is not an IP literal",
                                node->head_addr);
        } else if (node->rank_from == GPC_RANK_SCHEDULER ||
                   node->rank_from == GPC_RANK_RENDEZVOUS) {
            return gpc_fail(err, GPC_ERR_RENDER, "a node rank from the %s needs the head's IP",
                            rank_words[node->rank_from]);
        } else if (!head_known) {
            return gpc_fail(err, GPC_ERR_RENDER, "node rank %u needs the head's IP",
                            (unsigned)node->rank);
        }
        break;
    case GPC_RDZV_NAME:
        if (!node->head_addr)
            return gpc_fail(err, GPC_ERR_RENDER,
                            "a rendezvous at a name needs the head's address on every node");
        if (!ip_literal(node->head_addr, head, size)) {
            if (!host_name(node->head_addr))
                return gpc_fail(err, GPC_ERR_RENDER,
                                "head address '%.64s' is neither a host name nor an IP literal",
                                node->head_addr);
            snprintf(head, size, "%s", node->head_addr);
        }
        break;
    case GPC_RDZV_ON_NODE:
        if (node->head_addr)
            return gpc_fail(err, GPC_ERR_RENDER, "head address '%.64s' given, but the nodes "
                            "find the head themselves (gpuctl_md_head_addr)", node->head_addr);
        break;
    }
    /* with the head's IP, the head is made first, by itself (the node
     * script's part of this: mode_functions) */
    if (node->rank_from == GPC_RANK_LAUNCH_INDEX && node->rank == 0 &&
        node->rdzv_from == GPC_RDZV_HEAD_IP)
        return gpc_fail(err, GPC_ERR_RENDER, "a node rank from the launch index needs a node "
                        "script that defines gpuctl_md_launch_index and a first rank above 0");
    return 0;
}


/* The DATA section's values (gpc_node_ctx.data_*): DATA none | shared |
 * fetch, DATA_DIR quoted, DATA_FETCH one `gpuctl_data_fetch NAME URL`
 * line per data set (fetch only). */
static int data_values(const gpc_node_ctx *node, gpc_buf *vals, gpc_error *err)
{
    const char *mode = !node->data_dir ? "none" : node->data_fetch ? "fetch" : "shared";
    int rc = gpc_buf_adds(&vals[V_DATA], mode, err);
    if (!rc)
        rc = quote_opt(&vals[V_DATA_DIR], node->data_dir, err);
    for (size_t i = 0; !rc && node->data_dir && node->data_fetch && i < node->n_data; i++) {
        const char *nm = node->data_names[i], *url = node->data_urls[i];
        for (const char *c = url; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return gpc_fail(err, GPC_ERR_RENDER, "data %s: URL has a control character",
                                nm);
        if (!nm || !*nm || strchr(nm, '/') || !strcmp(nm, ".") || !strcmp(nm, ".."))
            return gpc_fail(err, GPC_ERR_RENDER, "data set name '%.64s' is not a name",
                            nm ? nm : "");
        rc = gpc_buf_adds(&vals[V_DATA_FETCH], "gpuctl_data_fetch ", err);
        if (!rc)
            rc = gpc_shell_quote(&vals[V_DATA_FETCH], nm, err);
        if (!rc)
            rc = gpc_buf_adds(&vals[V_DATA_FETCH], " ", err);
        if (!rc)
            rc = gpc_shell_quote(&vals[V_DATA_FETCH], url, err);
        if (!rc)
            rc = gpc_buf_adds(&vals[V_DATA_FETCH], "\n", err);
    }
    if (!rc && !vals[V_DATA_FETCH].len)
        rc = gpc_buf_adds(&vals[V_DATA_FETCH], ":\n", err);
    return rc;
}

/*
 * Fill the values of the bootstrap's placeholders into vals[] (the included
 * scripts aside), and find the node's fabric script: *fabric and *owner
 * (its provider's name), or NULL for a fabric the bootstrap handles itself.
 */
/*
 * budget.max_total on the node (render.h, gpc_node_ctx.cluster_hourly):
 * BUDGET_S, the seconds after which the cluster, at the price its nodes
 * were bought at, would have spent max_total (0: no cap, or nodes that
 * cost nothing), the same for every node, so each node's part of the cap
 * is in proportion to its own price; and BUDGET_NOTE, the cap and the
 * price for the node's message (seconds: gpc_spec_node_end).
 */
static int budget_values(const gpc_spec *spec, const gpc_node_ctx *node,
                         const gpc_node_end *end, gpc_buf vals[V_COUNT], gpc_error *err)
{
    double total = spec->budget.max_total, price = node->cluster_hourly;
    if (!end->budget_s) {
        int rc = gpc_buf_adds(&vals[V_BUDGET_S], "0", err);
        return rc ? rc : gpc_shell_quote(&vals[V_BUDGET_NOTE], "", err);
    }
    char note[128];
    snprintf(note, sizeof(note), total < 1 ? "%.4f USD at the cluster's %.4f USD/hour (%u "
             "node(s))" : "%.2f USD at the cluster's %.4f USD/hour (%u node(s))", total, price,
             (unsigned)(node->nnodes ? node->nnodes : 1));
    int rc = gpc_buf_addf(&vals[V_BUDGET_S], err, "%llu", (unsigned long long)end->budget_s);
    return rc ? rc : gpc_shell_quote(&vals[V_BUDGET_NOTE], note, err);
}

static int bootstrap_values(const gpc_spec *spec, const gpc_node_ctx *node,
                            const gpc_userdata_rules *rules, gpc_buf vals[V_COUNT],
                            const gpc_fabric_script **fabric, const char **owner,
                            gpc_error *err)
{
    const char *ic = node->fabric && *node->fabric ? node->fabric
                   : interconnect_word(spec->resources.interconnect);
    uint32_t port = node->rdzv_port ? node->rdzv_port
                  : spec->run.rdzv_port ? spec->run.rdzv_port : DEFAULT_RDZV_PORT;
    char head[256] = "";
    int rc;

    if (!rules->provider || !*rules->provider || !rules->node_script)
        return gpc_fail(err, GPC_ERR_RENDER, "provider '%s' has no node script",
                        rules->provider ? rules->provider : "");
    if (!defines_function(rules->node_script, "gpuctl_md_private_ip"))
        return gpc_fail(err, GPC_ERR_RENDER, "the node script of provider '%s' does not "
                        "define gpuctl_md_private_ip", rules->provider);
    if (!ic)
        return gpc_fail(err, GPC_ERR_RENDER, "unknown interconnect %d",
                        (int)spec->resources.interconnect);
    *fabric = NULL;
    int builtin = 0;
    for (size_t i = 0; i < sizeof(bootstrap_fabrics) / sizeof(bootstrap_fabrics[0]); i++)
        builtin |= strcmp(ic, bootstrap_fabrics[i]) == 0;
    if (!builtin) {
        char fn[48];
        *fabric = fabric_script(ic, owner);
        if (!*fabric)
            return gpc_fail(err, GPC_ERR_RENDER, "no provider declares the fabric '%.32s'", ic);
        snprintf(fn, sizeof(fn), "gpuctl_ic_%.36s", ic);
        if (!(*fabric)->script || !defines_function((*fabric)->script, fn))
            return gpc_fail(err, GPC_ERR_RENDER, "the fabric script of '%s' (provider '%s') "
                            "does not define %s", ic, *owner, fn);
    }
    if (!node->cluster || !*node->cluster || !node->cluster_id || !*node->cluster_id)
        return gpc_fail(err, GPC_ERR_RENDER, "node has no cluster name or id");
    if (node->nnodes == 0 || node->rank >= node->nnodes)
        return gpc_fail(err, GPC_ERR_RENDER, "node rank %u is not below the node count %u",
                        (unsigned)node->rank, (unsigned)node->nnodes);
    if (port > 65535)
        return gpc_fail(err, GPC_ERR_RENDER, "rendezvous port %u is out of range",
                        (unsigned)port);
    if (!spec->run.command || !*spec->run.command)
        return gpc_fail(err, GPC_ERR_RENDER, "spec has no run command");
    rc = rank_and_head(node, head, sizeof(head), err);
    if (rc)
        return rc;

    rc = gpc_buf_adds(&vals[V_METADATA], rules->provider, err);
    for (size_t i = 0; !rc && i < spec->n_env; i++) {
        const gpc_env_var *e = &spec->env[i];
        if (!is_env_name(e->name))
            return gpc_fail(err, GPC_ERR_RENDER, "env name '%.64s' is not a shell name",
                            e->name ? e->name : "");
        if (!e->value)
            return gpc_fail(err, GPC_ERR_RENDER, "env %s has no value", e->name);
        rc = gpc_buf_addf(&vals[V_JOB_ENV], err, "export %s=", e->name);
        if (!rc)
            rc = gpc_shell_quote(&vals[V_JOB_ENV], e->value, err);
        if (!rc)
            rc = gpc_buf_adds(&vals[V_JOB_ENV], "\n", err);
        if (!rc)
            rc = gpc_buf_addf(&vals[V_USER_ENV_NAMES], err, "%s%s", i ? " " : "", e->name);
    }
    if (!rc && vals[V_USER_ENV_NAMES].len == 0)
        rc = gpc_buf_adds(&vals[V_USER_ENV_NAMES], "''", err);
    else if (!rc) {
        /* names only: [A-Za-z0-9_ ], still quoted as one word */
        gpc_buf tmp;
        gpc_buf_init(&tmp, GPC_BUF_SCRIPT_MAX);
        rc = gpc_shell_quote(&tmp, gpc_buf_str(&vals[V_USER_ENV_NAMES]), err);
        gpc_buf_free(&vals[V_USER_ENV_NAMES]);
        vals[V_USER_ENV_NAMES] = tmp;
    }
    if (!rc)
        rc = gpc_shell_quote(&vals[V_CLUSTER], node->cluster, err);
    if (!rc)
        rc = gpc_shell_quote(&vals[V_CLUSTER_ID], node->cluster_id, err);
    /* a rank the node learns at boot is '' until then */
    if (!rc && (node->rank_from == GPC_RANK_ENGINE || node->rank_from == GPC_RANK_LAUNCH_INDEX))
        rc = gpc_buf_addf(&vals[V_NODE_RANK], err, "%u", (unsigned)node->rank);
    else if (!rc)
        rc = gpc_buf_adds(&vals[V_NODE_RANK], "''", err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_RANK_FROM], rank_words[node->rank_from], err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_HEAD_FROM], rdzv_words[node->rdzv_from], err);
    if (!rc)
        rc = quote_opt(&vals[V_INSTANCE_TYPE], node->instance_type, err);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_NUM_NODES], err, "%u", (unsigned)node->nnodes);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_RDZV_PORT], err, "%u", (unsigned)port);
    if (!rc)
        rc = gpc_shell_quote(&vals[V_HEAD_IP], head, err);
    /* the node's end (spec.h, gpc_spec_node_end): its max_duration, the
     * default one where nothing else bounds the node, its budget end */
    gpc_node_end end;
    gpc_spec_node_end(spec, node->cluster_hourly, &end);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_MAX_DURATION_S], err, "%llu",
                          (unsigned long long)end.max_duration_s);
    /* the default end says so in the node's message */
    if (!rc)
        rc = gpc_shell_quote(&vals[V_MAX_DURATION_NOTE],
                             end.max_duration_s && !spec->lifecycle.max_duration_s
                                 ? " (the default: the spec sets no lifecycle.max_duration)"
                                 : "", err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_IDLE], spec->lifecycle.idle_timeout_s ? "1" : "0", err);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_IDLE_TIMEOUT_S], err, "%llu",
                          (unsigned long long)spec->lifecycle.idle_timeout_s);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_NPROC_PER_NODE], err, "%u",
                          (unsigned)spec->run.nproc_per_node);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_INTERCONNECT], ic, err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_FABRIC_SCRIPTED], *fabric ? "1" : "0", err);
    if (!rc)
        rc = quote_opt(&vals[V_WORKDIR], node->workdir, err);
    if (!rc)
        rc = quote_opt(&vals[V_CHECKPOINT_DIR], node->checkpoint_dir, err);
    /* checkpoints kept in the provider's store (the CKPT_STORE section) */
    int ckpt_store = node->checkpoint_dir && node->ckpt_store && *node->ckpt_store;
    if (!rc)
        rc = gpc_buf_adds(&vals[V_CKPT_STORE], ckpt_store ? "1" : "0", err);
    if (!rc)
        rc = quote_opt(&vals[V_CKPT_URL], ckpt_store ? node->ckpt_store : NULL, err);
    if (!rc)
        rc = quote_opt(&vals[V_STORE_ENDPOINT], node->store_endpoint, err);
    if (!rc)
        rc = quote_opt(&vals[V_SETUP], spec->setup, err);
    if (!rc)
        rc = gpc_shell_quote(&vals[V_RUN_COMMAND], spec->run.command, err);
    if (!rc)
        rc = data_values(node, vals, err);
    /* the node script's store functions: for the checkpoints, and for the
     * data sets the node fetches */
    if (!rc)
        rc = gpc_buf_adds(&vals[V_NODE_STORE],
                          ckpt_store || strcmp(gpc_buf_str(&vals[V_DATA]), "fetch") == 0 ? "1"
                                                                                        : "0",
                          err);
    /* delivery over the provider's transport (deliver.c): whether the node
     * waits for it, whether the workdir comes with it; the names (not the
     * values) of the secrets, delivered or in the bootstrap's environment */
    /* interruption notices: watched on a spot node whose node script
     * can ask for them (render.h, gpuctl_md_notice) */
    if (!rc)
        rc = gpc_buf_adds(&vals[V_NOTICE],
                          node->spot && defines_function(rules->node_script, "gpuctl_md_notice")
                              ? "1" : "0", err);
    if (!rc)
        rc = budget_values(spec, node, &end, vals, err);
    /* a cluster that buys spot: torchrun restarts the workers of the
     * nodes left when one is lost, into a rendezvous round the replacement
     * joins (recover.c) */
    if (!rc)
        rc = gpc_buf_addf(&vals[V_MAX_RESTARTS], err, "%d",
                          spec->spot.policy != GPC_SPOT_ON_DEMAND ? GPC_SPOT_MAX_RESTARTS : 0);
    if (!rc)
        rc = gpc_buf_addf(&vals[V_JOIN_TIMEOUT_S], err, "%d", GPC_SPOT_JOIN_TIMEOUT_S);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_FIRST_JOB], node->no_first_job ? "0" : "1", err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_DELIVER], node->deliver ? "1" : "0", err);
    if (!rc)
        rc = gpc_buf_adds(&vals[V_DELIVER_WORKDIR],
                          node->deliver && spec->workdir && !node->workdir ? "1" : "0", err);
    gpc_buf names;
    gpc_buf_init(&names, GPC_BUF_SCRIPT_MAX);
    for (size_t i = 0; !rc && i < spec->n_secrets; i++) {
        if (!is_env_name(spec->secrets[i].name))
            rc = gpc_fail(err, GPC_ERR_RENDER, "secret name '%.64s' is not a shell name",
                          spec->secrets[i].name ? spec->secrets[i].name : "");
        else
            rc = gpc_buf_addf(&names, err, "%s%s", i ? " " : "", spec->secrets[i].name);
    }
    if (!rc)
        rc = gpc_shell_quote(&vals[V_SECRET_NAMES], gpc_buf_str(&names), err);
    gpc_buf_free(&names);
    return rc;
}

int gpc_render_bootstrap(const gpc_spec *spec, const gpc_node_ctx *node,
                         const gpc_userdata_rules *rules,
                         char **out, gpc_error *err)
{
    if (!spec || !node || !rules || !out)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_render_bootstrap: NULL argument");
    const gpc_template *t = gpc_template_get("bootstrap.sh");
    if (!t)
        return gpc_fail(err, GPC_ERR_INTERNAL, "template 'bootstrap.sh' is not embedded");

    gpc_buf vals[V_COUNT];
    gpc_tpl_var vars[V_COUNT];
    gpc_buf res;
    for (size_t i = 0; i < V_COUNT; i++)
        gpc_buf_init(&vals[i], GPC_BUF_SCRIPT_MAX);
    gpc_buf_init(&res, GPC_BUF_SCRIPT_MAX);

    const gpc_fabric_script *fabric = NULL;
    const char *owner = NULL;
    int rc = bootstrap_values(spec, node, rules, vals, &fabric, &owner, err);
    for (size_t i = 0; i < V_COUNT; i++) {
        vars[i].name = var_names[i];
        vars[i].value = gpc_buf_str(&vals[i]);
    }
    /* The node script and the fabric script are templates with the same
     * placeholders (all but the scripts'), rendered first and then included
     * as blocks. */
    if (!rc) {
        char tname[64];
        snprintf(tname, sizeof(tname), "%.40s/node.sh", rules->provider);
        rc = gpc_template_render(tname, rules->node_script, strlen(rules->node_script), vars,
                                 V_NODE_SCRIPT, &vals[V_NODE_SCRIPT], err);
        vars[V_NODE_SCRIPT].value = gpc_buf_str(&vals[V_NODE_SCRIPT]);
        if (!rc)
            rc = mode_functions(node, rules->provider, vars[V_NODE_SCRIPT].value, err);
        if (!rc && spec->lifecycle.idle_timeout_s)
            rc = needs_function(rules->provider, vars[V_NODE_SCRIPT].value, "gpuctl_md_stop",
                                "lifecycle.idle_timeout", err);
        if (!rc && strcmp(vars[V_NODE_STORE].value, "1") == 0)
            rc = needs_function(rules->provider, vars[V_NODE_SCRIPT].value,
                                "gpuctl_md_store_get",
                                strcmp(vars[V_CKPT_STORE].value, "1") == 0
                                    ? "checkpoint_dir in the store"
                                    : "data fetched from the store",
                                err);
        if (!rc && strcmp(vars[V_CKPT_STORE].value, "1") == 0)
            rc = needs_function(rules->provider, vars[V_NODE_SCRIPT].value,
                                "gpuctl_md_store_put", "checkpoint_dir in the store", err);
    }
    if (!rc && fabric) {
        char tname[80];
        snprintf(tname, sizeof(tname), "%.30s fabric script %.30s", owner, fabric->name);
        rc = gpc_template_render(tname, fabric->script, strlen(fabric->script), vars,
                                 V_NODE_SCRIPT, &vals[V_FABRIC_SCRIPT], err);
    }
    vars[V_FABRIC_SCRIPT].value = gpc_buf_str(&vals[V_FABRIC_SCRIPT]);
    /* the interruption-notice watcher (templates/notice.sh), a template
     * of its own with the same placeholders */
    const gpc_template *nt = gpc_template_get("notice.sh");
    if (!rc && !nt)
        rc = gpc_fail(err, GPC_ERR_RENDER, "template notice.sh is not built in");
    if (!rc)
        rc = gpc_template_render(nt->name, nt->data, nt->len, vars, V_NODE_SCRIPT,
                                 &vals[V_NOTICE_SCRIPT], err);
    vars[V_NOTICE_SCRIPT].value = gpc_buf_str(&vals[V_NOTICE_SCRIPT]);
    if (!rc)
        rc = gpc_template_render(t->name, t->data, t->len, vars, V_COUNT, &res, err);
    for (size_t i = 0; i < V_COUNT; i++)
        gpc_buf_free(&vals[i]);
    if (!rc) {
        *out = gpc_buf_take(&res);
        if (!*out)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    gpc_buf_free(&res);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Payload                                                                  */

void gpc_payload_free(gpc_payload *p)
{
    if (!p)
        return;
    free(p->script);
    for (size_t i = 0; i < p->n_env; i++) {
        free(p->env[i].name);
        free(p->env[i].value);
    }
    free(p->env);
    memset(p, 0, sizeof(*p));
}

int gpc_render_payload(const gpc_spec *spec, const gpc_node_ctx *node,
                       const gpc_userdata_rules *rules, gpc_payload *out,
                       gpc_error *err)
{
    if (!out)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_render_payload: NULL argument");
    memset(out, 0, sizeof(*out));
    gpc_payload p = {0};
    int rc = gpc_render_bootstrap(spec, node, rules, &p.script, err);
    if (rc)
        return rc;
    p.script_len = strlen(p.script);
    if (spec->n_env && !(p.env = calloc(spec->n_env, sizeof(*p.env))))
        rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    /* the bootstrap has checked every name and value */
    for (size_t i = 0; !rc && i < spec->n_env; i++, p.n_env++) {
        p.env[i].name = strdup(spec->env[i].name);
        p.env[i].value = strdup(spec->env[i].value);
        if (!p.env[i].name || !p.env[i].value)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    if (rc)
        gpc_payload_free(&p);
    else
        *out = p;
    return rc;
}

/* The plain #cloud-config text around `script` (len bytes). */
static int cloud_config(const char *script, size_t len, char **out, gpc_error *err)
{
    const gpc_template *t = gpc_template_get("cloud-config.yaml");
    if (!t)
        return gpc_fail(err, GPC_ERR_INTERNAL,
                        "template 'cloud-config.yaml' is not embedded");
    if (memchr(script, '\0', len))
        return gpc_fail(err, GPC_ERR_RENDER, "the bootstrap holds a NUL byte");
    if (script[len] != '\0')
        return gpc_fail(err, GPC_ERR_INTERNAL, "the bootstrap is longer than its length says");
    gpc_buf res;
    gpc_buf_init(&res, GPC_BUF_SCRIPT_MAX);
    const gpc_tpl_var vars[] = {{"BOOTSTRAP", script}};
    int rc = gpc_template_render(t->name, t->data, t->len, vars, 1, &res, err);
    /* The transports and cloud-init want plain text: these would be bugs in
     * the templates or in the quoting, never something a spec can cause. */
    if (!rc && (strncmp(gpc_buf_str(&res), "#cloud-config\n", 14) != 0 ||
                memchr(res.data, '\r', res.len) || memchr(res.data, '\0', res.len)))
        rc = gpc_fail(err, GPC_ERR_INTERNAL,
                      "rendered user-data is not a plain #cloud-config document");
    if (!rc) {
        *out = gpc_buf_take(&res);
        if (!*out)
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    }
    gpc_buf_free(&res);
    return rc;
}

int gpc_payload_cloud_init(const gpc_payload *payload, const gpc_userdata_rules *rules,
                           char **out, size_t *out_len, int *gzipped, gpc_error *err)
{
    if (!payload || !payload->script || !rules || !out || !out_len)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_payload_cloud_init: NULL argument");
    char *ud = NULL;
    int rc = cloud_config(payload->script, payload->script_len, &ud, err);
    if (!rc)
        rc = gpc_userdata_encode(ud, strlen(ud), rules, out, out_len, gzipped, err);
    free(ud);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* User-data                                                                */

int gpc_render_userdata(const gpc_spec *spec, const gpc_node_ctx *node,
                        const gpc_userdata_rules *rules,
                        char **out, gpc_error *err)
{
    if (!out)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_render_userdata: NULL argument");
    gpc_payload p;
    int rc = gpc_render_payload(spec, node, rules, &p, err);
    if (!rc)
        rc = cloud_config(p.script, p.script_len, out, err);
    gpc_payload_free(&p);
    return rc;
}

int gpc_userdata_encode(const char *userdata, size_t len,
                        const gpc_userdata_rules *rules,
                        char **out, size_t *out_len, int *gzipped,
                        gpc_error *err)
{
    const unsigned char *data = (const unsigned char *)userdata;
    unsigned char *gz = NULL;
    size_t n = len;
    int rc = 0;

    if (!userdata || !rules || !out || !out_len)
        return gpc_fail(err, GPC_ERR_INTERNAL, "gpc_userdata_encode: NULL argument");
    if (gzipped)
        *gzipped = 0;

    if (rules->max_raw && len > rules->max_raw) {
        if (!rules->gzip_ok)
            return gpc_fail(err, GPC_ERR_RENDER, "user-data is %zu bytes; %s allows %zu",
                            len, rules->provider, rules->max_raw);
        rc = gpc_gzip(userdata, len, &gz, &n, err);
        if (rc)
            return rc;
        if (n > rules->max_raw) {
            free(gz);
            return gpc_fail(err, GPC_ERR_RENDER,
                            "user-data is %zu bytes after gzip; %s allows %zu",
                            n, rules->provider, rules->max_raw);
        }
        data = gz;
        if (gzipped)
            *gzipped = 1;
    }

    if (rules->base64) {
        rc = gpc_base64_encode(data, n, out, out_len, err);
    } else {
        char *p = malloc(n + 1);
        if (!p) {
            rc = gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
        } else {
            memcpy(p, data, n);
            p[n] = '\0';
            *out = p;
            *out_len = n;
        }
    }
    free(gz);
    return rc;
}

/* ---- a later job's file (job.sh on the node) ------------------------- */

int gpc_render_job(const gpc_job_def *job, gpc_buf *out, gpc_error *err)
{
    const char *id = job->id;
    size_t idl = id ? strlen(id) : 0;
    if (idl == 0 || idl > 64)
        return gpc_fail(err, GPC_ERR_RENDER, "job id must be 1 to 64 characters");
    for (size_t i = 0; i < idl; i++)
        if (!((id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= 'a' && id[i] <= 'z') ||
              (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '.' || id[i] == '-'))
            return gpc_fail(err, GPC_ERR_RENDER, "job id '%s' has a character other than "
                            "[A-Za-z0-9._-]", id);
    if (!job->run || !*job->run)
        return gpc_fail(err, GPC_ERR_RENDER, "the job has no run command");
    int rc = gpc_buf_addf(out, err, "GPUCTL_JOB_ID=%s\nGPUCTL_SETUP=", id);
    if (!rc)
        rc = gpc_shell_quote(out, job->setup ? job->setup : "", err);
    if (!rc)
        rc = gpc_buf_adds(out, "\nGPUCTL_RUN_COMMAND=", err);
    if (!rc)
        rc = gpc_shell_quote(out, job->run, err);
    if (!rc)
        rc = gpc_buf_adds(out, "\n", err);
    if (!rc && job->num_nodes)
        rc = gpc_buf_addf(out, err, "GPUCTL_NUM_NODES=%u\n", (unsigned)job->num_nodes);
    if (rc || !job->with_env)
        return rc;
    gpc_buf names;
    gpc_buf_init(&names, GPC_BUF_SCRIPT_MAX);
    for (size_t i = 0; !rc && i < job->n_env; i++) {
        if (!is_env_name(job->env[i].name) || !job->env[i].value)
            rc = gpc_fail(err, GPC_ERR_RENDER, "env name '%.64s' is not a shell name, or has "
                          "no value", job->env[i].name ? job->env[i].name : "");
        else
            rc = gpc_buf_addf(&names, err, "%s%s", i ? " " : "", job->env[i].name);
    }
    if (!rc)
        rc = gpc_buf_adds(out, "gpuctl_user_env=", err);
    if (!rc)
        rc = gpc_shell_quote(out, gpc_buf_str(&names), err);
    gpc_buf_free(&names);
    if (!rc)
        rc = gpc_buf_adds(out, "\ngpuctl_job_env() {\n  :\n", err);
    for (size_t i = 0; !rc && i < job->n_env; i++) {
        rc = gpc_buf_addf(out, err, "export %s=", job->env[i].name);
        if (!rc)
            rc = gpc_shell_quote(out, job->env[i].value, err);
        if (!rc)
            rc = gpc_buf_adds(out, "\n", err);
    }
    if (!rc)
        rc = gpc_buf_adds(out, "}\n", err);
    return rc;
}
