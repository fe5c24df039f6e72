/*
 * spec_forms.c - the value forms of the job spec: numbers, sizes
 * ("80GB"), durations ("1h30m"), ranges ("8+", "4..16"), GPUs
 * ("A100-80GB:8"); quoting and did-you-mean for messages.  The public
 * gpc_parse_* are declared in gpuctl/spec.h, the rest in spec_int.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuctl/util.h"
#include "spec_int.h"


/* Digits only, no sign; false on overflow or empty. */
bool spec_parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit((unsigned char)s[i]))
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* An optional sign, digits, an optional fraction ("15", "-2", "0.5", ".5").
 * No exponents, hex, inf or nan. */
bool spec_parse_number(const char *s, size_t len, double *out)
{
    char tmp[64];
    size_t i = 0, digits = 0;
    if (len == 0 || len >= sizeof(tmp))
        return false;
    if (s[i] == '+' || s[i] == '-')
        i++;
    for (; i < len && is_digit((unsigned char)s[i]); i++)
        digits++;
    if (i < len && s[i] == '.')
        for (i++; i < len && is_digit((unsigned char)s[i]); i++)
            digits++;
    if (i != len || digits == 0)
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    *out = strtod(tmp, NULL);
    return isfinite(*out);
}

/* 'text' for messages, cut at SHOW_MAX bytes on a UTF-8 boundary. */
const char *spec_quote(const char *text, size_t len, char buf[SHOW_MAX])
{
    size_t room = SHOW_MAX - 6; /* quotes, "...", NUL */
    bool cut = len > room;
    if (cut) {
        len = room;
        while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
            len--;
    }
    snprintf(buf, SHOW_MAX, "'%.*s%s'", (int)len, text, cut ? "..." : "");
    return buf;
}


/* The closest of `names` (NULL-terminated) to `word`, or NULL when none is
 * close: at most 1 edit for words of up to 4 letters, else 2. */
const char *spec_closest(const char *word, const char *const *names)
{
    size_t len = strlen(word);
    size_t limit = len <= 4 ? 1 : 2;
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (const char *const *p = names; *p; p++) {
        /* Ties go to a name with the same first letter ("cpu": "cpus", not "gpu"). */
        size_t dist = gpc_edit_distance(word, *p);
        if (dist != SIZE_MAX)
            dist = 2 * dist + (to_lower((unsigned char)word[0]) != to_lower((unsigned char)(*p)[0]));
        if (dist <= 2 * limit + 1 && dist < best_d) {
            best = *p;
            best_d = dist;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* Numeric forms.                                                     */

typedef enum size_rc { SZ_OK, SZ_SYNTAX, SZ_UNIT, SZ_NONPOS, SZ_HUGE } size_rc;

static const struct size_unit {
    const char *name;
    double gib;
} size_units[] = {
    {"", 1}, {"g", 1}, {"gb", 1}, {"gib", 1},
    {"t", 1024}, {"tb", 1024}, {"tib", 1024},
    {"m", 1.0 / 1024}, {"mb", 1.0 / 1024}, {"mib", 1.0 / 1024},
};

/* "80GB", "1.5 TB", "512mib", "64" -> GiB.  *unit gets the unit's offset. */
static size_rc scan_size(const char *s, size_t len, double *gib, size_t *unit)
{
    size_t i = 0, digits = 0;
    double v;
    if (i < len && s[i] == '-')
        i++;
    size_t num_start = i;
    for (; i < len && is_digit((unsigned char)s[i]); i++)
        digits++;
    if (i < len && s[i] == '.')
        for (i++; i < len && is_digit((unsigned char)s[i]); i++)
            digits++;
    if (digits == 0 || !spec_parse_number(s + num_start, i - num_start, &v))
        return SZ_SYNTAX;
    size_t num_end = i;
    while (i < len && s[i] == ' ')
        i++;
    *unit = i;
    if (i > num_end && i == len)
        return SZ_SYNTAX; /* trailing blank, no unit */
    for (size_t j = i; j < len; j++)
        if (!is_alpha((unsigned char)s[j]))
            return SZ_SYNTAX;
    size_t ulen = len - i;
    const struct size_unit *u = NULL;
    for (size_t k = 0; k < sizeof(size_units) / sizeof(size_units[0]); k++) {
        const char *n = size_units[k].name;
        if (strlen(n) != ulen)
            continue;
        size_t j = 0;
        while (j < ulen && to_lower((unsigned char)s[i + j]) == n[j])
            j++;
        if (j == ulen) {
            u = &size_units[k];
            break;
        }
    }
    if (!u)
        return SZ_UNIT;
    if (s[0] == '-' || v <= 0)
        return SZ_NONPOS;
    *gib = v * u->gib;
    return *gib > SIZE_MAX_GIB ? SZ_HUGE : SZ_OK;
}

int gpc_parse_size_gib(const char *what, const char *s, double *gib, gpc_error *err)
{
    char q[SHOW_MAX];
    size_t unit = 0, len = strlen(s);
    switch (scan_size(s, len, gib, &unit)) {
    case SZ_OK:
        return 0;
    case SZ_UNIT:
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: unknown size unit '%s' in %s (use MB, GB or TB)",
                        what, s + unit, spec_quote(s, len, q));
    case SZ_NONPOS:
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive size, got %s",
                        what, spec_quote(s, len, q));
    case SZ_HUGE:
        return gpc_fail(err, GPC_ERR_SPEC, "%s: %s is more than 1PB", what, spec_quote(s, len, q));
    default:
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: expected a size like 80GB, 512MB or 2TB, got %s",
                        what, spec_quote(s, len, q));
    }
}

int gpc_parse_duration(const char *what, const char *s, uint64_t *secs, gpc_error *err)
{
    static const char units[] = "dhms";
    static const uint64_t mult[] = {86400, 3600, 60, 1};
    char q[SHOW_MAX];
    size_t len = strlen(s), i = 0;
    uint64_t total = 0;
    int last = -1;
    bool ok = len > 0;

    if (ok && s[0] == '-')
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive duration, got %s",
                        what, spec_quote(s, len, q));
    while (ok && i < len) { /* NUMBER UNIT ..., units in the order d h m s */
        size_t start = i;
        uint64_t n;
        int unit;
        const char *u;
        while (i < len && is_digit((unsigned char)s[i]))
            i++;
        if (i == start) {
            ok = false;
            break;
        }
        if (!spec_parse_u64(s + start, i - start, &n))
            n = UINT64_MAX;               /* overflow: "too long" below */
        if (i == len && start == 0) {
            unit = 3;                     /* a bare number is seconds */
        } else if (i < len && (u = strchr(units, s[i])) != NULL) {
            unit = (int)(u - units);
            i++;
        } else {
            unit = -1;
        }
        if (unit <= last) {
            ok = false;
            break;
        }
        last = unit;
        if (n > (UINT64_MAX - total) / mult[unit])
            total = UINT64_MAX;
        else
            total += n * mult[unit];
    }
    if (!ok)
        return gpc_fail(err, GPC_ERR_SPEC,
                        "%s: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got %s",
                        what, spec_quote(s, len, q));
    if (total == 0)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: expected a positive duration, got %s",
                        what, spec_quote(s, len, q));
    if (total > DURATION_MAX_S)
        return gpc_fail(err, GPC_ERR_SPEC, "%s: %s is too long (at most 36500d)",
                        what, spec_quote(s, len, q));
    *secs = total;
    return 0;
}

void gpc_spec_node_end(const gpc_spec *spec, double cluster_hourly, gpc_node_end *out)
{
    double total = spec->budget.max_total;
    memset(out, 0, sizeof(*out));
    if (total > 0 && cluster_hourly > 0) {
        double secs = floor(total / cluster_hourly * 3600.0);
        out->budget_s = secs < 1 ? 1 : secs > 1e12 ? (uint64_t)1e12 : (uint64_t)secs;
    }
    out->max_duration_s = spec->lifecycle.max_duration_s;
    if (!out->max_duration_s && !spec->lifecycle.max_duration_none && !out->budget_s)
        out->max_duration_s = GPC_SPEC_DEFAULT_MAX_DURATION_S;
    if (out->max_duration_s && (!out->budget_s || out->max_duration_s <= out->budget_s)) {
        out->end_s = out->max_duration_s;
        out->why = spec->lifecycle.max_duration_s ? GPC_END_MAX_DURATION : GPC_END_DEFAULT;
    } else if (out->budget_s) {
        out->end_s = out->budget_s;
        out->why = GPC_END_BUDGET;
    }
}

bool spec_size_end(const char *s, size_t len, double *out)
{
    size_t unit;
    size_rc rc = scan_size(s, len, out, &unit);
    return rc == SZ_OK || rc == SZ_HUGE; /* callers bound the result */
}

bool spec_count_end(const char *s, size_t len, double *out)
{
    uint64_t v;
    if (!spec_parse_u64(s, len, &v) || v == 0 || v > 1000000)
        return false;
    *out = (double)v;
    return true;
}

/* "X", "X+", "X..Y", "X..", "..Y" -> {min, max} (0 = unbounded). */
range_rc spec_parse_range(const char *s, size_t len, range_end_fn end, gpc_range *out)
{
    const char *dots = NULL;
    gpc_range r = {0, 0};
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == '.' && s[i + 1] == '.') {
            dots = s + i;
            break;
        }
    if (len > 1 && s[len - 1] == '+') {
        if (!end(s, len - 1, &r.min))
            return RG_SYNTAX;
    } else if (dots) {
        size_t l = (size_t)(dots - s), rl = len - l - 2;
        if ((l == 0 && rl == 0) || (l > 0 && !end(s, l, &r.min)) ||
            (rl > 0 && !end(dots + 2, rl, &r.max)))
            return RG_SYNTAX;
        if (r.max > 0 && r.min > r.max)
            return RG_EMPTY;
    } else {
        if (!end(s, len, &r.min))
            return RG_SYNTAX;
        r.max = r.min;
    }
    *out = r;
    return RG_OK;
}

/* A model name: [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters. */
static bool valid_model(const char *s, size_t len)
{
    if (len == 0 || len > 64 || !is_alnum((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static bool has_alpha(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (is_alpha((unsigned char)s[i]))
            return true;
    return false;
}

/* "A100-80GB": when the text after the last '-' is a size with a unit, set
 * *mem (if not NULL) and return the model's length without it; else 0. */
static size_t model_mem_suffix(const char *model, size_t len, gpc_range *mem)
{
    size_t dash = 0;
    gpc_range m;
    for (size_t i = 1; i < len; i++)
        if (model[i] == '-')
            dash = i;
    if (dash == 0 || dash + 1 >= len)
        return 0;
    const char *suf = model + dash + 1;
    size_t sl = len - dash - 1;
    if (!is_digit((unsigned char)suf[0]) || !has_alpha(suf, sl) ||
        spec_parse_range(suf, sl, spec_size_end, &m) != RG_OK)
        return 0;
    if (mem)
        *mem = m;
    return dash;
}

int gpc_parse_gpu(const char *what, const char *s, gpc_gpu_req *out, gpc_error *err)
{
    const char *part[3];
    size_t plen[3], n = 0, len = strlen(s);
    gpc_range count = {1, 1}, mem = {0, 0};
    const char *model = "";
    size_t model_len = 0;
    char q[SHOW_MAX];

    /* Split at ':' into at most three non-empty parts. */
    for (const char *p = s;; ) {
        const char *c = strchr(p, ':');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (n == 3 || l == 0)
            goto bad;
        part[n] = p;
        plen[n++] = l;
        if (!c)
            break;
        p = c + 1;
    }

    /* The last part is a count unless it has letters ("80GB" is memory). */
    if (!has_alpha(part[n - 1], plen[n - 1])) {
        const char *c = part[n - 1];
        size_t cl = plen[n - 1];
        uint64_t zero;
        if (spec_parse_u64(c, cl, &zero) && zero == 0)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: GPU count must be at least 1 in %s",
                            what, spec_quote(s, len, q));
        if (spec_parse_range(c, cl, spec_count_end, &count) != RG_OK)
            goto bad;
        if (count.min == 0)                 /* "..2" is "1..2" */
            count.min = 1;
        if (count.min > GPUS_PER_NODE_MAX || count.max > GPUS_PER_NODE_MAX)
            return gpc_fail(err, GPC_ERR_SPEC, "%s: at most %d GPUs per node in %s",
                            what, GPUS_PER_NODE_MAX, spec_quote(s, len, q));
        n--;
    }
    if (n == 2) {                       /* MODEL:MEM */
        model = part[0];
        model_len = plen[0];
        if (spec_parse_range(part[1], plen[1], spec_size_end, &mem) != RG_OK ||
            model_mem_suffix(model, model_len, NULL))
            goto bad;
    } else if (n == 1 && (is_digit((unsigned char)part[0][0]) || part[0][0] == '.')) {
        if (spec_parse_range(part[0], plen[0], spec_size_end, &mem) != RG_OK)  /* MEM */
            goto bad;
    } else if (n == 1) {                /* MODEL or MODEL-MEM */
        model = part[0];
        model_len = plen[0];
        size_t cut = model_mem_suffix(model, model_len, &mem);
        if (cut)
            model_len = cut;
    } else if (n != 0) {
        goto bad;
    }
    if (model_len > 0 && !valid_model(model, model_len))
        goto bad;

    char *m = malloc(model_len + 1);
    if (!m)
        return gpc_fail(err, GPC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < model_len; i++)
        m[i] = (char)to_upper((unsigned char)model[i]);
    m[model_len] = '\0';
    out->model = m;
    out->mem_gib = mem;
    out->count = count;
    out->line = out->col = 0;   /* not from a spec file: f_gpu sets them */
    out->listed = 0;
    return 0;

bad:
    return gpc_fail(err, GPC_ERR_SPEC,
                    "%s: expected a GPU like A100-80GB:8, A100:80GB:8, H100:8, T4 "
                    "or 24GB..80GB:2, got %s", what, spec_quote(s, len, q));
}

uint64_t gpc_spec_zone_cooldown_s(const gpc_spec *spec)
{
    return spec->spot.zone_cooldown_set ? spec->spot.zone_cooldown_s
                                        : GPC_SPOT_ZONE_COOLDOWN_DEFAULT_S;
}

uint32_t gpc_spec_fallback_after(const gpc_spec *spec)
{
    if (spec->spot.policy != GPC_SPOT_AUTO)
        return 0;
    return spec->spot.fallback_after ? spec->spot.fallback_after
                                     : GPC_SPOT_FALLBACK_AFTER_DEFAULT;
}

bool spec_duration_zero(const char *s, size_t len)
{
    size_t z = 0;
    while (z < len && s[z] == '0')
        z++;
    return z > 0 && (z == len || (z + 1 == len && strchr("dhms", s[z]) != NULL));
}

/* env: NAME must be [A-Za-z_][A-Za-z0-9_]*. */
bool spec_valid_env_name(const char *s, size_t len)
{
    if (len == 0 || is_digit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

/* labels: key must be [a-z0-9][-_.a-z0-9]{0,62}. */
bool spec_valid_label_key(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !(is_lower((unsigned char)s[0]) || is_digit((unsigned char)s[0])))
        return false;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (!is_lower(c) && !is_digit(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

int gpc_valid_cluster_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '-')
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}
