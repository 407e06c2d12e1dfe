/*
 * ASTRA-sim's configuration files, read into SsimAstraConfig (include/shiftsim/astra.h): the
 * analytical backend's network YAML and the system layer's JSON.
 *
 * The network reader is a small strict parser of the flat YAML subset those files use
 * (`key: scalar` and `key: [ a, b ]` lines, `#` comments), not a YAML implementation: anything
 * else (nesting, block lists, anchors, quotes that span lines) is an error naming path:line, so
 * a file is never half understood.  The system reader takes the keys ASTRA-sim's Sys reads; a
 * value this model does not implement, or a key ASTRA-sim does not read, is an error naming
 * path and key.  Units are ASTRA-sim's: network bandwidth in GB/s of 2^30 bytes, latency in ns,
 * local memory bandwidth in GB/s of 10^9 bytes, peak performance in TFLOP/s.
 */
#include <shiftsim/astra.h>

#include "src/core/jsonbound.h"
#include <shiftsim/data.h>

#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const topo_names[] = {
#define SSIM_X(e, s) s,
    SSIM_ASTRA_TOPO_LIST(SSIM_X)
#undef SSIM_X
};

static const char *const algo_names[] = {
#define SSIM_X(e, s) s,
    SSIM_ASTRA_ALGO_LIST(SSIM_X)
#undef SSIM_X
};

static const char *const mem_names[] = {
#define SSIM_X(e, s) s,
    SSIM_ASTRA_MEM_LIST(SSIM_X)
#undef SSIM_X
};

/* scheduling-policy's values, in SsimAstraPolicy's order. */
static const char *const policy_names[] = {"LIFO", "FIFO", "EXPLICIT"};

const char *ssim_astra_mem_type_name(SsimAstraMemType t)
{
    g_return_val_if_fail((int)t >= 0 && t < SSIM_ASTRA_MEM_N, NULL);
    return mem_names[t];
}

/* The system file's keys for SsimAstraColl, in order, and their custom forms. */
static const char *const impl_keys[SSIM_ASTRA_N_COLL] = {
    "all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
    "all-to-all-implementation"};
static const char *const custom_keys[SSIM_ASTRA_N_COLL] = {
    "all-reduce-implementation-custom", "all-gather-implementation-custom",
    "reduce-scatter-implementation-custom", "all-to-all-implementation-custom"};

const char *ssim_astra_custom_key(SsimAstraColl t)
{
    g_return_val_if_fail((int)t >= 0 && t < SSIM_ASTRA_N_COLL, NULL);
    return custom_keys[t];
}

void ssim_astra_config_init(SsimAstraConfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->policy = SSIM_ASTRA_LIFO;
    cfg->local_bw_aware = TRUE;
    cfg->endpoint_delay = 10;
    cfg->endpoint_delay_set = TRUE; /* Ring_4chunks.json gives it */
    cfg->injection_scale = 1;
    cfg->queues_per_dim = 1;
    cfg->active_chunks_per_dim = 1;
    cfg->splits = 4;
    cfg->local_mem_bw_gbps = 1600;
    cfg->roofline = TRUE;
    cfg->peak_tflops = 900;
    cfg->local_reduction_delay = 1;
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++) {
        cfg->n_impl[t] = 1;
        cfg->impl[t][0] = (SsimAstraImpl){SSIM_ASTRA_ALGO_RING, -1, FALSE};
    }
}

static void per_node_clear(SsimAstraConfig *cfg)
{
    for (guint i = 0; i < cfg->n_per_node; i++)
        g_free(cfg->per_node[i].path);
    g_clear_pointer(&cfg->per_node, g_free);
    cfg->n_per_node = 0;
}

void ssim_astra_config_clear(SsimAstraConfig *cfg)
{
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++) {
        g_clear_pointer(&cfg->custom_path[t], g_free);
        cfg->custom[t] = (SsimAstraCustom){NULL, NULL};
    }
    g_clear_pointer(&cfg->per_node_path, g_free);
    per_node_clear(cfg);
}

/* ---- per-node-custom-implementation's YAML ---- */

/* A scalar as yaml-cpp reads it: quoted ('...' with '' for a quote, "..." with no escape taken
 * here) or plain; NULL when a quote is not closed or text follows it. */
static char *yaml_scalar(const char *s)
{
    if (s[0] != '\'' && s[0] != '"')
        return g_strdup(s);
    char q = s[0];
    GString *out = g_string_new(NULL);
    const char *p = s + 1;
    for (; *p; p++) {
        if (*p == q && q == '\'' && p[1] == '\'') {
            g_string_append_c(out, q);
            p++;
        } else if (*p == q) {
            break;
        } else if (*p == '\\' && q == '"') {
            g_string_free(out, TRUE);
            return NULL;
        } else {
            g_string_append_c(out, *p);
        }
    }
    if (*p != q || p[1] != '\0') {
        g_string_free(out, TRUE);
        return NULL;
    }
    return g_string_free(out, FALSE);
}

gboolean ssim_astra_config_read_per_node(SsimAstraConfig *cfg, const char *path, GError **error)
{
    g_autofree char *text =
        ssim_read_file_limited(path, SSIM_JSON_MAX_ASTRA_CONFIG_BYTES, NULL, error);
    if (text == NULL)
        return FALSE;
    g_autoptr(GArray) got = g_array_new(FALSE, FALSE, sizeof(SsimAstraPerNode));
    g_autoptr(GHashTable) line_of = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_auto(GStrv) lines = g_strsplit(text + ssim_text_bom(text, strlen(text)), "\n", -1);
    gboolean ok = TRUE;
    for (guint ln = 0; lines[ln] && ok; ln++) {
        char *line = lines[ln];
        /* A comment: `#` at the start or after a space (yaml-cpp; a prefix may hold `#`). */
        for (char *h = strchr(line, '#'); h; h = strchr(h + 1, '#'))
            if (h == line || g_ascii_isspace(h[-1])) {
                *h = '\0';
                break;
            }
        if (*g_strstrip(line) == '\0')
            continue;
        char *colon = strstr(line, ": ");
        if (!colon && g_str_has_suffix(line, ":"))
            colon = line + strlen(line) - 1;
        char *end = NULL;
        gint64 id = 0;
        if (colon) {
            *colon = '\0';
            g_strchomp(line);
            errno = 0;
            id = g_ascii_strtoll(line, &end, 10);
        }
        g_autofree char *prefix = colon ? yaml_scalar(g_strstrip(colon + 1)) : NULL;
        if (!colon || end == line || *end != '\0' || errno != 0 || id < G_MININT32 ||
            id > G_MAXINT32) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: expected `NODE_ID: TRACE_PREFIX`, a workload node id (an int) and "
                        "the Chakra trace set of its custom implementation",
                        path, ln + 1);
            ok = FALSE;
        } else if (!prefix || !*prefix) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: node %" G_GINT64_FORMAT ": expected a trace-set prefix", path,
                        ln + 1, id);
            ok = FALSE;
        } else if (g_hash_table_contains(line_of, GINT_TO_POINTER((gint32)id))) {
            g_set_error(
                error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s:%u: node %" G_GINT64_FORMAT " given twice (first on line %u)", path, ln + 1, id,
                GPOINTER_TO_UINT(g_hash_table_lookup(line_of, GINT_TO_POINTER((gint32)id))));
            ok = FALSE;
        } else {
            g_hash_table_insert(line_of, GINT_TO_POINTER((gint32)id), GUINT_TO_POINTER(ln + 1));
            SsimAstraPerNode e = {(gint32)id, g_steal_pointer(&prefix), {NULL, NULL}};
            g_array_append_val(got, e);
        }
    }
    if (!ok) {
        for (guint i = 0; i < got->len; i++)
            g_free(g_array_index(got, SsimAstraPerNode, i).path);
        return FALSE;
    }
    per_node_clear(cfg);
    cfg->n_per_node = got->len;
    cfg->per_node = (SsimAstraPerNode *)(void *)g_array_free(g_steal_pointer(&got), FALSE);
    return TRUE;
}

/* ---- the network YAML ---- */

#define MAX_ITEMS SSIM_ASTRA_MAX_DIMS

typedef struct {
    char *items[MAX_ITEMS];
    guint n;
    guint line;
} YamlValue;

static void yaml_value_clear(YamlValue *v)
{
    for (guint i = 0; i < v->n; i++)
        g_free(v->items[i]);
    v->n = 0;
}

/* Splits `text` (a scalar or a [list]) into v's items; FALSE naming what is wrong. */
static gboolean yaml_items(char *text, YamlValue *v, const char *where, GError **error)
{
    g_strstrip(text);
    gboolean list = text[0] == '[';
    if (list) {
        gsize len = strlen(text);
        if (len < 2 || text[len - 1] != ']') {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s: a list must close with ] on the same line", where);
            return FALSE;
        }
        text[len - 1] = '\0';
        text++;
    }
    g_auto(GStrv) parts = list ? g_strsplit(text, ",", -1) : g_strsplit(text, "\n", 1);
    for (guint i = 0; parts[i]; i++) {
        char *p = g_strstrip(parts[i]);
        if (list && parts[1] == NULL && *p == '\0')
            break; /* [] */
        gsize len = strlen(p);
        if (len >= 2 && (p[0] == '"' || p[0] == '\'') && p[len - 1] == p[0]) {
            p[len - 1] = '\0';
            p++;
        }
        if (*p == '\0' || strpbrk(p, "[]{}:\"'")) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s: \"%s\" is not a plain value (the reader takes `key: value` and "
                        "`key: [ a, b ]`)",
                        where, parts[i]);
            return FALSE;
        }
        if (v->n == MAX_ITEMS) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: more than %d dimensions", where, MAX_ITEMS);
            return FALSE;
        }
        v->items[v->n++] = g_strdup(p);
    }
    if (v->n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: no value", where);
        return FALSE;
    }
    return TRUE;
}

/* FALSE ("PATH:LINE: KEY: no value") when key `open` (-1: none) began a block list that ended
 * with no `- value` line. */
static gboolean block_list_closed(const YamlValue *vals, const char *const *keys, int open,
                                  const char *path, GError **error)
{
    if (open < 0 || vals[open].n > 0)
        return TRUE;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u: %s: no value", path,
                vals[open].line, keys[open]);
    return FALSE;
}

static gboolean parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double x = g_ascii_strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(x))
        return FALSE;
    *out = x;
    return TRUE;
}

gboolean ssim_astra_config_read_network(SsimAstraConfig *cfg, const char *path, GError **error)
{
    g_autofree char *text =
        ssim_read_file_limited(path, SSIM_JSON_MAX_ASTRA_CONFIG_BYTES, NULL, error);
    if (text == NULL)
        return FALSE;
    static const char *const keys[] = {"topology", "npus_count", "bandwidth", "latency"};
    YamlValue vals[4];
    memset(vals, 0, sizeof vals);
    gboolean ok = FALSE;
    /* A Windows editor's byte order mark before the first line is skipped, as every text
     * reader does (types.h). */
    g_auto(GStrv) lines = g_strsplit(text + ssim_text_bom(text, strlen(text)), "\n", -1);
    /* The key whose value is a block list, `- item` on the lines after it (yaml-cpp, which
     * ASTRA-sim reads these files with, takes that as well as `[ a, b ]`). */
    int open = -1;
    for (guint ln = 0; lines[ln]; ln++) {
        char *line = lines[ln];
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        g_strchomp(line);
        gboolean indented = g_ascii_isspace(line[0]);
        if (*g_strchug(line) == '\0')
            continue;
        g_autofree char *where = g_strdup_printf("%s:%u", path, ln + 1);
        if (line[0] == '-' && (line[1] == '\0' || g_ascii_isspace(line[1]))) {
            if (open < 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s: a list item (`- value`) that follows no `key:` line", where);
                goto out;
            }
            g_autofree char *kw = g_strdup_printf("%s: %s", where, keys[open]);
            char *item = g_strstrip(line + 1);
            if (item[0] == '[') {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s: a list inside a list: each `- value` is one dimension", kw);
                goto out;
            }
            if (!yaml_items(item, &vals[open], kw, error))
                goto out;
            continue;
        }
        if (!block_list_closed(vals, keys, open, path, error))
            goto out;
        open = -1;
        if (indented) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s: indented line: the reader takes `key: value`, `key: [ a, b ]` and "
                        "`- value` lines only",
                        where);
            goto out;
        }
        char *colon = strchr(line, ':');
        if (!colon) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s: expected `key: value`, got \"%s\"", where, line);
            goto out;
        }
        *colon = '\0';
        char *key = g_strstrip(line);
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(key, keys[i]) == 0)
                k = i;
        if (k < 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: unknown key \"%s\" (the analytical network reads topology, "
                        "npus_count, bandwidth and latency)",
                        where, key);
            goto out;
        }
        if (vals[k].line) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: %s given twice (first on line %u)", where, key, vals[k].line);
            goto out;
        }
        vals[k].line = ln + 1;
        if (*g_strstrip(colon + 1) == '\0') {
            open = k;
            continue;
        }
        g_autofree char *kw = g_strdup_printf("%s: %s", where, key);
        if (!yaml_items(colon + 1, &vals[k], kw, error))
            goto out;
    }
    if (!block_list_closed(vals, keys, open, path, error))
        goto out;
    for (int k = 0; k < 4; k++)
        if (!vals[k].n) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING, "%s: %s is missing",
                        path, keys[k]);
            goto out;
        }
    guint n = vals[0].n;
    for (int k = 1; k < 4; k++)
        if (vals[k].n != n) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: %s has %u values but topology has %u dimensions", path,
                        vals[k].line, keys[k], vals[k].n, n);
            goto out;
        }
    SsimAstraConfig c = *cfg;
    c.n_dims = n;
    guint64 total = 1;
    for (guint d = 0; d < n; d++) {
        int t = -1;
        for (int i = 0; i < SSIM_ASTRA_TOPO_N; i++)
            if (strcmp(vals[0].items[d], topo_names[i]) == 0)
                t = i;
        if (t < 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: topology: \"%s\" is not Ring, Switch or FullyConnected", path,
                        vals[0].line, vals[0].items[d]);
            goto out;
        }
        c.topo[d] = (SsimAstraTopo)t;
        double npus, bw, lat;
        if (!parse_number(vals[1].items[d], &npus) || npus < 1 || npus > 1e6 ||
            npus != (double)(guint)npus) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: npus_count: \"%s\" is not a whole number of NPUs >= 1", path,
                        vals[1].line, vals[1].items[d]);
            goto out;
        }
        if (!parse_number(vals[2].items[d], &bw) || !(bw > 0)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: bandwidth: \"%s\" is not a number of GB/s above 0", path,
                        vals[2].line, vals[2].items[d]);
            goto out;
        }
        if (!parse_number(vals[3].items[d], &lat) || lat < 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: latency: \"%s\" is not a number of ns >= 0", path, vals[3].line,
                        vals[3].items[d]);
            goto out;
        }
        c.npus[d] = (guint)npus;
        c.bandwidth_gbps[d] = bw;
        c.latency_ns[d] = lat;
        total *= c.npus[d];
        if (total > G_MAXINT32) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: npus_count: too many NPUs in all", path, vals[1].line);
            goto out;
        }
    }
    *cfg = c;
    ok = TRUE;
out:
    for (int k = 0; k < 4; k++)
        yaml_value_clear(&vals[k]);
    return ok;
}

/* ---- the system JSON ---- */

/* A number as ASTRA-sim reads one through nlohmann::json's conversion to an integer or a
 * real: true and false are 1 and 0, and an integer key takes a real truncated toward zero (the
 * conversion's static_cast: an endpoint-delay of 10.9 is 10); anything else makes ASTRA-sim
 * throw.  NAN where the node is none of those. */
static double json_number(JsonNode *node)
{
    if (!JSON_NODE_HOLDS_VALUE(node))
        return NAN;
    GType t = json_node_get_value_type(node);
    return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE ? json_node_get_double(node)
           : t == G_TYPE_BOOLEAN                   ? (double)json_node_get_boolean(node)
                                                   : NAN;
}

static gboolean json_int(JsonNode *node, const char *path, const char *key, gint64 lo, gint64 hi,
                         gint64 *out, GError **error)
{
    double x = trunc(json_number(node));
    if (x >= (double)lo && x <= (double)hi) {
        *out = (gint64)x;
        return TRUE;
    }
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s: %s: expected a number from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                " (a fraction is dropped, as ASTRA-sim drops it)",
                path, key, lo, hi);
    return FALSE;
}

static gboolean json_num(JsonNode *node, const char *path, const char *key, double *out,
                         GError **error)
{
    double x = json_number(node);
    if (isfinite(x) && x >= 0) {
        *out = x;
        return TRUE;
    }
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: %s: expected a number >= 0",
                path, key);
    return FALSE;
}

/* A switch as ASTRA-sim's Sys reads one, `j[key] != 0`: nlohmann::json compares a value of
 * another type than a number as unequal to 0, so only a number equal to 0 turns it off; true,
 * false, a string, null or a list turn it on. */
static gboolean json_switch(JsonNode *node)
{
    if (!JSON_NODE_HOLDS_VALUE(node))
        return TRUE;
    GType t = json_node_get_value_type(node);
    return (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE) || json_node_get_double(node) != 0;
}

/* The JSON object of `what` settings at `path` (owned by *parser) and its keys in sorted order
 * (*keys, the caller's list of the object's strings), or NULL with `error` set. */
static JsonObject *read_object(const char *path, const char *what, JsonParser **parser,
                               GList **keys, GError **error)
{
    *parser = ssim_json_parse_file(path, SSIM_JSON_MAX_ASTRA_CONFIG_BYTES, error);
    if (*parser == NULL)
        return NULL;
    JsonNode *root = json_parser_get_root(*parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s: expected a JSON object of %s settings", path, what);
        return NULL;
    }
    JsonObject *o = json_node_get_object(root);
    *keys = g_list_sort(json_object_get_members(o), (GCompareFunc)strcmp);
    return o;
}

static const char *json_str(JsonNode *node)
{
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING)
        return json_node_get_string(node);
    return NULL;
}

static gboolean read_impl(SsimAstraConfig *c, int t, JsonNode *node, const char *path,
                          GError **error)
{
    const char *key = impl_keys[t];
    if (!JSON_NODE_HOLDS_ARRAY(node) || json_array_get_length(json_node_get_array(node)) == 0 ||
        json_array_get_length(json_node_get_array(node)) > SSIM_ASTRA_MAX_DIMS) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %s: expected a list of 1 to %d implementations, one per dimension", path,
                    key, SSIM_ASTRA_MAX_DIMS);
        return FALSE;
    }
    JsonArray *a = json_node_get_array(node);
    guint n = json_array_get_length(a);
    for (guint d = 0; d < n; d++) {
        const char *s = json_str(json_array_get_element(a, d));
        SsimAstraImpl impl = {SSIM_ASTRA_ALGO_RING, -1, FALSE};
        gboolean ok = s != NULL;
        if (ok && g_str_has_prefix(s, "one")) { /* oneRing, oneDirect<W>, oneHalvingDoubling */
            impl.one = TRUE;
            s += 3;
        }
        if (ok && (strcmp(s, "ring") == 0 || (impl.one && strcmp(s, "Ring") == 0))) {
            impl.algo = SSIM_ASTRA_ALGO_RING;
        } else if (ok && strcmp(s, impl.one ? "HalvingDoubling" : "halvingDoubling") == 0) {
            impl.algo = SSIM_ASTRA_ALGO_HALVING_DOUBLING;
        } else if (ok && !impl.one && strcmp(s, "doubleBinaryTree") == 0) {
            impl.algo = SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE;
        } else if (ok && g_str_has_prefix(s, impl.one ? "Direct" : "direct")) {
            impl.algo = SSIM_ASTRA_ALGO_DIRECT;
            if (s[6] != '\0') { /* direct<W>, as CollectiveImplLookup reads it */
                char *end;
                long w = strtol(s + 6, &end, 10);
                ok = *end == '\0' && w >= 1 && w <= 1000000 && g_ascii_isdigit(s[6]);
                impl.window = (int)w;
            }
        } else {
            ok = FALSE;
        }
        if (!ok) {
            const char *given = json_str(json_array_get_element(a, d));
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: %s: \"%s\" is not one of ASTRA-sim's implementations (ring, "
                        "direct, direct<window>, halvingDoubling, their one* forms, "
                        "doubleBinaryTree)",
                        path, key, given ? given : "(not a string)");
            return FALSE;
        }
        c->impl[t][d] = impl;
    }
    c->n_impl[t] = n;
    return TRUE;
}

/* A custom implementation's key: a list of exactly one trace-set prefix (CollectiveImplLookup
 * throws on any other length: one trace covers every dimension). */
static gboolean read_custom(SsimAstraConfig *c, int t, JsonNode *node, const char *path,
                            const char *key, GError **error)
{
    JsonArray *a = JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
    const char *prefix =
        a && json_array_get_length(a) == 1 ? json_str(json_array_get_element(a, 0)) : NULL;
    if (prefix == NULL || prefix[0] == '\0') {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %s: expected a list of one Chakra trace-set prefix (one trace covers "
                    "every dimension, as ASTRA-sim requires)",
                    path, key);
        return FALSE;
    }
    c->custom_path[t] = g_strdup(prefix);
    return TRUE;
}

static gboolean read_system(SsimAstraConfig *cfg, SsimAstraConfig *out, const char *path,
                            GError **error);

gboolean ssim_astra_config_read_system(SsimAstraConfig *cfg, const char *path, GError **error)
{
    /* Read into a copy whose custom implementations start empty (the file says all of them, as
     * in ASTRA-sim), so that a failure leaves cfg as it was and frees only what it read. */
    SsimAstraConfig c;
    if (!read_system(cfg, &c, path, error)) {
        ssim_astra_config_clear(&c);
        return FALSE;
    }
    ssim_astra_config_clear(cfg);
    *cfg = c;
    return TRUE;
}

static gboolean read_system(SsimAstraConfig *cfg, SsimAstraConfig *out, const char *path,
                            GError **error)
{
    /* A key the file leaves out takes ASTRA-sim's own value (Sys::Sys), not this reader's
     * defaults: the roofline off, peak-perf and local-mem-bw 0, endpoint-delay 10, one active
     * chunk.  Two that Sys::Sys leaves unset are required (without preferred-dataset-splits
     * ASTRA-sim divides by zero); collective-optimization is read only by a native all-reduce,
     * which is refused when the file leaves it out. */
    *out = *cfg;
    SsimAstraConfig *c = out;
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++) {
        c->custom_path[t] = NULL;
        c->custom[t] = (SsimAstraCustom){NULL, NULL};
    }
    c->per_node_path = NULL;
    c->n_per_node = 0;
    c->per_node = NULL;
    c->roofline = FALSE;
    c->peak_tflops = 0;
    c->local_mem_bw_gbps = 0;
    c->endpoint_delay = 10;
    c->endpoint_delay_set = FALSE;
    c->active_chunks_per_dim = 1;
    c->coll_opt_unset = TRUE;
    c->track_local_mem = FALSE;
    c->replay_only = FALSE;
    c->shared_bus = FALSE;
    c->bus_L = c->bus_o = c->bus_g = c->bus_G = 0;
    c->local_reduction_delay = 1; /* Sys::Sys's last word on it */
    /* The file says every native implementation too: a collective whose type it leaves out has
     * none (ASTRA-sim: "No collective implementation found"). */
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        c->n_impl[t] = 0;
    g_autoptr(JsonParser) parser = NULL;
    g_autoptr(GList) members = NULL;
    JsonObject *o = read_object(path, "system", &parser, &members, error);
    if (!o)
        return FALSE;
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        JsonNode *v = json_object_get_member(o, key);
        gint64 i;
        const char *s;
        if (strcmp(key, "scheduling-policy") == 0) {
            s = json_str(v);
            guint k = 0;
            while (s && k < G_N_ELEMENTS(policy_names) && strcmp(s, policy_names[k]) != 0)
                k++;
            if (!s || k == G_N_ELEMENTS(policy_names)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: scheduling-policy: expected \"LIFO\", \"FIFO\" or "
                            "\"EXPLICIT\"",
                            path);
                return FALSE;
            }
            c->policy = (SsimAstraPolicy)k;
        } else if (strcmp(key, "collective-optimization") == 0) {
            s = json_str(v);
            if (!s || (strcmp(s, "baseline") != 0 && strcmp(s, "localBWAware") != 0)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: collective-optimization: expected \"baseline\" or "
                            "\"localBWAware\"",
                            path);
                return FALSE;
            }
            c->local_bw_aware = strcmp(s, "localBWAware") == 0;
            c->coll_opt_unset = FALSE;
        } else if (strcmp(key, "endpoint-delay") == 0) {
            if (!json_int(v, path, key, 0, G_MAXINT32, &i, error))
                return FALSE;
            c->endpoint_delay = i;
            c->endpoint_delay_set = TRUE;
        } else if (strcmp(key, "active-chunks-per-dimension") == 0) {
            if (!json_int(v, path, key, 1, 1000000, &i, error))
                return FALSE;
            c->active_chunks_per_dim = (guint)i;
        } else if (strcmp(key, "preferred-dataset-splits") == 0) {
            if (!json_int(v, path, key, 1, 1000000, &i, error))
                return FALSE;
            c->splits = (guint)i;
        } else if (strcmp(key, "local-mem-bw") == 0) {
            if (!json_num(v, path, key, &c->local_mem_bw_gbps, error))
                return FALSE;
        } else if (strcmp(key, "peak-perf") == 0) {
            if (!json_num(v, path, key, &c->peak_tflops, error))
                return FALSE;
        } else if (strcmp(key, "roofline-enabled") == 0) {
            c->roofline = json_switch(v);
        } else if (strcmp(key, "track-local-mem") == 0) {
            c->track_local_mem = json_switch(v);
        } else if (strcmp(key, "replay-only") == 0) {
            c->replay_only = json_switch(v);
        } else if (strcmp(key, "model-shared-bus") == 0) {
            if (!json_int(v, path, key, G_MININT32, G_MAXINT32, &i, error))
                return FALSE;
            c->shared_bus = i == 1; /* Sys.cc: on at 1, and only there */
        } else if (strcmp(key, "L") == 0 || strcmp(key, "o") == 0 || strcmp(key, "g") == 0 ||
                   strcmp(key, "G") == 0) {
            /* Sys keeps them as floats (a value it cannot convert makes it throw). */
            double x = json_number(v);
            if (isnan(x)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: %s: expected a number (ASTRA-sim's reader throws on any other "
                            "value)",
                            path, key);
                return FALSE;
            }
            double *at = key[0] == 'L'   ? &c->bus_L
                         : key[0] == 'o' ? &c->bus_o
                         : key[0] == 'g' ? &c->bus_g
                                         : &c->bus_G;
            *at = (double)(float)x;
        } else if (strcmp(key, "local-reduction-delay") == 0) {
            if (!json_int(v, path, key, G_MININT32, G_MAXINT32, &i, error))
                return FALSE;
            c->local_reduction_delay = i;
        } else if (strcmp(key, "per-node-custom-implementation") == 0) {
            /* CollectiveImplLookup: a string, the YAML file of node id -> trace-set prefix. */
            s = json_str(v);
            if (!s || !*s) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: %s: expected the path of a YAML file (node id: trace-set prefix)",
                            path, key);
                return FALSE;
            }
            c->per_node_path = g_strdup(s);
        } else {
            int t = -1, custom = -1;
            for (int k = 0; k < SSIM_ASTRA_N_COLL; k++) {
                if (strcmp(key, impl_keys[k]) == 0)
                    t = k;
                if (strcmp(key, custom_keys[k]) == 0)
                    custom = k;
            }
            if (t >= 0) {
                if (!read_impl(c, t, v, path, error))
                    return FALSE;
                continue;
            }
            if (custom >= 0) {
                if (!read_custom(c, custom, v, path, key, error))
                    return FALSE;
                continue;
            }
            /* Keys ASTRA-sim reads that change nothing here (statistics and traces:
             * trace-enabled is a switch, any value; the trace's file name a string, which Sys.cc
             * throws without), and keys of ASTRA-sim 1.0's system files that tools still write
             * and 2.x's system layer does not read (it schedules FIFO within a dimension and
             * ascending across them whatever they say), any value. */
            static const struct {
                const char *key;
                gboolean string;
            } inert[] = {{"boost-mode", FALSE},
                         {"intra-dimension-scheduling", FALSE},
                         {"inter-dimension-scheduling", FALSE},
                         {"trace-enabled", FALSE},
                         {"local-mem-trace-filename", TRUE}};
            guint k = 0;
            while (k < G_N_ELEMENTS(inert) && strcmp(key, inert[k].key) != 0)
                k++;
            if (k == G_N_ELEMENTS(inert)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: unknown key \"%s\" (not one ASTRA-sim's system layer reads)", path,
                            key);
                return FALSE;
            }
            if (inert[k].string && !json_str(v)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: %s: expected a string (ASTRA-sim's reader throws on any other "
                            "value)",
                            path, key);
                return FALSE;
            }
        }
    }
    /* The bus passes L, o and g on as unsigned ticks and schedules its reductions after an int
     * number of ns: values ASTRA-sim would wrap are refused where the bus is on. */
    if (c->shared_bus) {
        const double limit = (double)((SsimTime)1 << 62);
        const double times[] = {c->bus_L, c->bus_o, c->bus_g, c->bus_G};
        for (guint k = 0; k < G_N_ELEMENTS(times); k++)
            if (!(times[k] >= 0 && times[k] < limit)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: %s: the shared bus (model-shared-bus 1) needs a time from 0 to "
                            "2^62 ns",
                            path, (const char *[]){"L", "o", "g", "G"}[k]);
                return FALSE;
            }
        if (c->local_reduction_delay < 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: local-reduction-delay: the shared bus (model-shared-bus 1) needs a "
                        "delay >= 0",
                        path);
            return FALSE;
        }
    }
    static const char *const required[] = {"scheduling-policy", "preferred-dataset-splits"};
    for (guint k = 0; k < G_N_ELEMENTS(required); k++)
        if (!json_object_has_member(o, required[k])) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: %s is missing (ASTRA-sim's system layer leaves it unset without "
                        "it)",
                        path, required[k]);
            return FALSE;
        }
    return TRUE;
}

gboolean ssim_astra_config_read_memory(SsimAstraConfig *cfg, const char *path, GError **error)
{
    g_autoptr(JsonParser) parser = NULL;
    g_autoptr(GList) members = NULL;
    JsonObject *o = read_object(path, "remote memory", &parser, &members, error);
    if (!o)
        return FALSE;
    /* AnalyticalRemoteMemory's constructor: latency and bandwidth 0 unless given. */
    SsimAstraConfig c = *cfg;
    c.mem_latency_ns = c.mem_bw = 0;
    c.mem_nodes = c.mem_npus_node = 0;
    if (!json_object_has_member(o, "memory-type")) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: memory-type is missing (ASTRA-sim's remote memory leaves it unset "
                    "without it)",
                    path);
        return FALSE;
    }
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        JsonNode *v = json_object_get_member(o, key);
        gint64 i = 0;
        if (strcmp(key, "memory-type") == 0) {
            const char *name = json_str(v);
            int t = SSIM_ASTRA_MEM_N;
            for (int k = 0; name && k < SSIM_ASTRA_MEM_N; k++)
                if (strcmp(name, mem_names[k]) == 0)
                    t = k;
            if (t == SSIM_ASTRA_MEM_N) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: memory-type: expected \"NO_MEMORY_EXPANSION\", "
                            "\"PER_NODE_MEMORY_EXPANSION\", \"PER_NPU_MEMORY_EXPANSION\" or "
                            "\"MEMORY_POOL\"",
                            path);
                return FALSE;
            }
            c.mem_type = (SsimAstraMemType)t;
        } else if (strcmp(key, "remote-mem-latency") == 0) {
            if (!json_int(v, path, key, 0, G_MAXINT64 / 2, &i, error))
                return FALSE;
            c.mem_latency_ns = (guint64)i;
        } else if (strcmp(key, "remote-mem-bw") == 0) {
            if (!json_int(v, path, key, 0, G_MAXINT64 / 2, &i, error))
                return FALSE;
            c.mem_bw = (guint64)i;
        } else if (strcmp(key, "num-nodes") == 0) {
            if (!json_int(v, path, key, 1, G_MAXINT32, &i, error))
                return FALSE;
            c.mem_nodes = (guint)i;
        } else if (strcmp(key, "num-npus-per-node") == 0) {
            if (!json_int(v, path, key, 1, G_MAXINT32, &i, error))
                return FALSE;
            c.mem_npus_node = (guint)i;
        } else {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: unknown key \"%s\" (not one ASTRA-sim's remote memory reads)", path,
                        key);
            return FALSE;
        }
    }
    if (c.mem_type != SSIM_ASTRA_MEM_NONE && c.mem_bw == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: remote-mem-bw: a %s needs a bandwidth above 0 (ASTRA-sim divides by it)",
                    path, mem_names[c.mem_type]);
        return FALSE;
    }
    if (c.mem_type == SSIM_ASTRA_MEM_PER_NODE && (c.mem_nodes == 0 || c.mem_npus_node == 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: PER_NODE_MEMORY_EXPANSION needs num-nodes and num-npus-per-node", path);
        return FALSE;
    }
    *cfg = c;
    return TRUE;
}

GString *ssim_astra_config_format(const SsimAstraConfig *c)
{
    GString *s = g_string_new(NULL);
    if (c->n_dims == 0) {
        g_string_append(s, "# network: one Switch of all ranks, 400 GB/s, 936.25 ns\n");
    } else {
        const char *labels[] = {"topology", "npus_count", "bandwidth", "latency"};
        for (int k = 0; k < 4; k++) {
            g_string_append_printf(s, "%s: [ ", labels[k]);
            for (guint d = 0; d < c->n_dims; d++) {
                if (d)
                    g_string_append(s, ", ");
                if (k == 0)
                    g_string_append(s, topo_names[c->topo[d]]);
                else if (k == 1)
                    g_string_append_printf(s, "%u", c->npus[d]);
                else
                    g_string_append_printf(s, "%g",
                                           k == 2 ? c->bandwidth_gbps[d] : c->latency_ns[d]);
            }
            g_string_append(s, " ]\n");
        }
    }
    g_string_append_printf(s, "# network backend: congestion-%s\n",
                           c->congestion_aware ? "aware" : "unaware");
    g_string_append_printf(s, "scheduling-policy: %s\n", policy_names[c->policy]);
    if (c->coll_opt_unset)
        g_string_append(s, "# collective-optimization: unset (a native all-reduce is refused)\n");
    else
        g_string_append_printf(s, "collective-optimization: %s\n",
                               c->local_bw_aware ? "localBWAware" : "baseline");
    g_string_append_printf(s, "endpoint-delay: %" G_GINT64_FORMAT "\n", c->endpoint_delay);
    g_string_append_printf(s, "active-chunks-per-dimension: %u\n", c->active_chunks_per_dim);
    g_string_append_printf(s, "preferred-dataset-splits: %u\n", c->splits);
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++) {
        g_string_append_printf(s, "%s: [ ", impl_keys[t]);
        for (guint d = 0; d < c->n_impl[t]; d++) {
            const SsimAstraImpl *im = &c->impl[t][d];
            const char *name = algo_names[im->algo];
            if (im->one)
                g_string_append_printf(s, "%sone%c%s", d ? ", " : "", g_ascii_toupper(name[0]),
                                       name + 1);
            else
                g_string_append_printf(s, "%s%s", d ? ", " : "", name);
            if (im->algo == SSIM_ASTRA_ALGO_DIRECT && im->window > 0)
                g_string_append_printf(s, "%d", im->window);
        }
        g_string_append(s, " ]\n");
    }
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        if (c->custom_path[t])
            g_string_append_printf(s, "%s: [ %s ]\n", custom_keys[t], c->custom_path[t]);
    if (c->per_node_path)
        g_string_append_printf(s, "per-node-custom-implementation: %s\n", c->per_node_path);
    for (guint i = 0; i < c->n_per_node; i++)
        g_string_append_printf(s, "#   node %d: %s\n", c->per_node[i].node, c->per_node[i].path);
    if (c->shared_bus)
        g_string_append_printf(s,
                               "model-shared-bus: 1\nL: %g\no: %g\ng: %g\nG: %.9g\n"
                               "local-reduction-delay: %" G_GINT64_FORMAT "\n",
                               c->bus_L, c->bus_o, c->bus_g, c->bus_G, c->local_reduction_delay);
    g_string_append_printf(s, "local-mem-bw: %g\n", c->local_mem_bw_gbps);
    g_string_append_printf(s, "roofline-enabled: %d\n", c->roofline ? 1 : 0);
    g_string_append_printf(s, "peak-perf: %g\n", c->peak_tflops);
    if (c->track_local_mem)
        g_string_append(s, "track-local-mem: 1\n");
    if (c->replay_only)
        g_string_append(s, "replay-only: 1\n");
    g_string_append_printf(s, "memory-type: %s\n", mem_names[c->mem_type]);
    if (c->mem_type != SSIM_ASTRA_MEM_NONE)
        g_string_append_printf(
            s, "remote-mem-latency: %" G_GUINT64_FORMAT "\nremote-mem-bw: %" G_GUINT64_FORMAT "\n",
            c->mem_latency_ns, c->mem_bw);
    if (c->mem_type == SSIM_ASTRA_MEM_PER_NODE)
        g_string_append_printf(s, "num-nodes: %u\nnum-npus-per-node: %u\n", c->mem_nodes,
                               c->mem_npus_node);
    if (c->injection_scale != 1)
        g_string_append_printf(s, "# command line: --injection-scale %g\n", c->injection_scale);
    if (c->rendezvous)
        g_string_append(s, "# command line: --rendezvous-protocol true\n");
    if (c->queues_per_dim != 1)
        g_string_append_printf(s, "# command line: --num-queues-per-dim %u\n", c->queues_per_dim);
    return s;
}
