/*
 * Chakra execution-trace import: per-rank protobuf node streams -> one finalized SsimGraph.
 *
 * The loader works one rank at a time, so its memory beyond the graph itself is one trace's
 * worth of compact node records.  For each trace, chakra-read.c decodes the file into records
 * (checking enum values and attribute types, counting every attribute the mapping does not read,
 * resolving dependency ids to local indices); this file then orders the records topologically
 * with Kahn's algorithm, taking the smallest id among ready nodes as Chakra's feeder issues them,
 * names a cycle when some nodes are never ready, and adds the ops in that order, so that stream
 * order (issue order) never contradicts a dependency and the graph's "collectives match by their
 * order within the group" rule sees each rank's issue order.  It also owns the options, the
 * stats report and the comm-group JSON.
 *
 * Elided nodes (metadata and the types shiftsim cannot model) never become ops; a node that
 * depends on one inherits its dependencies instead (transitively), so elision never loosens the
 * order.  The mapping rules themselves are documented in include/shiftsim/chakra.h.
 *
 * Invariant: every op's dependencies are ops of the same rank added before it, so the graph's
 * own checks (finalize) can only fail on cross-rank matching (sizes that disagree, a tag used
 * twice), which is reported as a configuration error naming the trace set.
 */
#include <shiftsim/chakra.h>

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/heap.h"
#include "src/import/chakra-private.h"
#include "src/import/jsonbound-private.h"
#include <shiftsim/data.h>

/* ---- options and stats ---- */

void ssim_chakra_options_init(SsimChakraOptions *opts)
{
    *opts = (SsimChakraOptions){
        .compute_stream = "compute",
        .cpu_stream = "cpu",
        .mem_stream = "mem",
        .coll_stream = "comm",
        .send_stream = "send",
        .recv_stream = "recv",
        .stream_per_group = FALSE,
        .stream_per_peer = FALSE,
        .use_roofline = FALSE,
        .strict = FALSE,
        .keep_names = TRUE,
    };
}

void ssim_chakra_stats_init(SsimChakraStats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->ignored_attrs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

void ssim_chakra_stats_clear(SsimChakraStats *stats)
{
    g_clear_pointer(&stats->ignored_attrs, g_hash_table_unref);
    g_clear_pointer(&stats->comm_group_path, g_free);
    g_clear_pointer(&stats->version, g_free);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GString *ssim_chakra_stats_format(const SsimChakraStats *s)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(
        out, "chakra: %u ranks, %" G_GUINT64_FORMAT " nodes (schema %s), %u group%s (%s)\n",
        s->n_ranks, s->n_nodes, s->version && *s->version ? s->version : "unset", s->n_groups,
        s->n_groups == 1 ? "" : "s", s->comm_group_path ? s->comm_group_path : "all ranks");
    g_string_append(out, "chakra: nodes by type:");
    for (guint t = 0; t < SSIM_CHAKRA_N_NODE_TYPES; t++)
        if (s->by_type[t])
            g_string_append_printf(out, " %s %" G_GUINT64_FORMAT, ssim_chakra_node_type_name(t),
                                   s->by_type[t]);
    g_string_append_printf(
        out,
        "\nchakra: ops %" G_GUINT64_FORMAT ": compute %" G_GUINT64_FORMAT
        " timed + %" G_GUINT64_FORMAT " roofline + %" G_GUINT64_FORMAT " empty, %" G_GUINT64_FORMAT
        " memory, %" G_GUINT64_FORMAT " collectives, %" G_GUINT64_FORMAT
        " barriers, %" G_GUINT64_FORMAT " sends, %" G_GUINT64_FORMAT " receives; %" G_GUINT64_FORMAT
        " dependencies\n",
        s->n_ops, s->n_compute_timed, s->n_compute_roofline, s->n_compute_empty, s->n_mem,
        s->n_collectives, s->n_barriers, s->n_sends, s->n_recvs, s->n_deps);
    g_string_append_printf(out, "chakra: unsupported: %" G_GUINT64_FORMAT " nodes elided",
                           s->n_elided);
    for (guint t = 0; t < SSIM_CHAKRA_N_NODE_TYPES; t++)
        if (s->elided_by_type[t])
            g_string_append_printf(out, " (%s %" G_GUINT64_FORMAT ")",
                                   ssim_chakra_node_type_name(t), s->elided_by_type[t]);
    g_string_append_printf(out, ", %" G_GUINT64_FORMAT " approximated\n", s->n_approximated);
    g_string_append_printf(out, "chakra: attributes not read: %" G_GUINT64_FORMAT,
                           s->n_ignored_attrs);
    if (s->ignored_attrs && g_hash_table_size(s->ignored_attrs)) {
        guint n;
        g_autofree gpointer keys = g_hash_table_get_keys_as_array(s->ignored_attrs, &n);
        qsort(keys, n, sizeof(char *), cmp_str);
        for (guint i = 0; i < n; i++) {
            const char *k = ((char **)keys)[i];
            g_string_append_printf(out, "%s%s %u", i ? ", " : " (", k,
                                   GPOINTER_TO_UINT(g_hash_table_lookup(s->ignored_attrs, k)));
        }
        g_string_append(out, ")");
    }
    g_string_append(out, "\n");
    return out;
}

/* Kahn's ready set: a min-heap of local node indices keyed by node id, which chakra-read.c has
 * checked unique within a trace, so the order is strict (src/core/heap.h). */
static inline gboolean id_less(const Rec *recs, const guint32 *x, const guint32 *y)
{
    return recs[*x].id < recs[*y].id;
}

SSIM_HEAP_DEFINE(ReadyHeap, ready_heap, guint32, const Rec *, id_less, SSIM_HEAP_NO_POS)

/* Names a cycle among the nodes Kahn's algorithm never reached (indeg[v] > 0). */
static void report_cycle(const Trace *t, const guint32 *indeg, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    guint32 start = SSIM_NONE;
    for (guint i = 0; i < n; i++)
        if (indeg[i] > 0 && (start == SSIM_NONE || recs[i].id < recs[start].id))
            start = i;
    g_autofree guint32 *seen = g_new(guint32, n); /* position on the walk + 1, or 0 */
    memset(seen, 0, n * sizeof *seen);
    g_autoptr(GArray) walk = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 v = start;
    while (!seen[v]) {
        g_array_append_val(walk, v);
        seen[v] = walk->len;
        guint32 next = SSIM_NONE;
        for (guint j = 0; j < recs[v].n_deps; j++) {
            guint32 d = t->dep_local[recs[v].dep_first + j];
            if (indeg[d] > 0) {
                next = d;
                break;
            }
        }
        g_assert(next != SSIM_NONE);
        v = next;
    }
    g_autoptr(GString) msg = g_string_new(NULL);
    guint first = seen[v] - 1, len = walk->len - first;
    for (guint i = 0; i < MIN(len, 8u); i++)
        g_string_append_printf(msg, "node %" G_GUINT64_FORMAT " -> ",
                               recs[g_array_index(walk, guint32, first + i)].id);
    if (len > 8)
        g_string_append_printf(msg, "... (%u nodes) -> ", len);
    g_string_append_printf(msg, "node %" G_GUINT64_FORMAT, recs[v].id);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s: node %" G_GUINT64_FORMAT ": dependency cycle (each depends on the next): %s",
                t->path, recs[v].id, msg->str);
}

/* Kahn's algorithm, smallest id first; fills `order` (n entries) or reports a cycle. */
static gboolean topo_order(const Trace *t, guint32 *order, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *first = g_new0(guint32, n + 1);
    guint64 nd = t->deps->len;
    g_autofree guint32 *succ = g_new(guint32, MAX(nd, 1));
    for (guint i = 0; i < n; i++)
        for (guint j = 0; j < recs[i].n_deps; j++) {
            first[t->dep_local[recs[i].dep_first + j] + 1]++;
            indeg[i]++;
        }
    for (guint i = 0; i < n; i++)
        first[i + 1] += first[i];
    g_autofree guint32 *fill = g_memdup2(first, (n + 1) * sizeof *first);
    for (guint i = 0; i < n; i++)
        for (guint j = 0; j < recs[i].n_deps; j++)
            succ[fill[t->dep_local[recs[i].dep_first + j]]++] = i;

    g_auto(ReadyHeap) ready = {0};
    ready_heap_reserve(&ready, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        if (indeg[i] == 0)
            ready_heap_push(&ready, i, recs);
    guint k = 0;
    while (ready.n > 0) {
        guint32 v = ready_heap_pop(&ready, recs);
        order[k++] = v;
        for (guint32 e = first[v]; e < first[v + 1]; e++)
            if (--indeg[succ[e]] == 0)
                ready_heap_push(&ready, succ[e], recs);
    }
    if (k < n) {
        report_cycle(t, indeg, error);
        return FALSE;
    }
    return TRUE;
}

static guint32 default_stream(Loader *L, Trace *t, const Rec *r)
{
    /* One stream per process group or per peer: named "<base>:<group>" / "<base>:<peer>". */
    gboolean per_group = L->opts.stream_per_group && (r->map == MAP_COLL || r->map == MAP_BARRIER);
    gboolean per_peer = L->opts.stream_per_peer && (r->map == MAP_SEND || r->map == MAP_RECV);
    if (per_group || per_peer) {
        char name[256];
        if (per_group)
            g_snprintf(name, sizeof name, "%s:%s", L->opts.coll_stream,
                       ssim_graph_group_name(L->graph, r->group));
        else
            g_snprintf(name, sizeof name, "%s:%u",
                       r->map == MAP_SEND ? L->opts.send_stream : L->opts.recv_stream, r->peer);
        return ssim_graph_stream(L->graph, t->rank, name);
    }
    guint slot = r->map == MAP_COMPUTE && r->cpu ? MAP_RECV + 1 : r->map;
    if (t->default_stream[slot] == SSIM_NONE) {
        const char *name = NULL;
        switch (slot) {
        case MAP_COMPUTE:
            name = L->opts.compute_stream;
            break;
        case MAP_RECV + 1:
            name = L->opts.cpu_stream;
            break;
        case MAP_MEM:
            name = L->opts.mem_stream;
            break;
        case MAP_COLL:
        case MAP_BARRIER:
            name = L->opts.coll_stream;
            break;
        case MAP_SEND:
            name = L->opts.send_stream;
            break;
        case MAP_RECV:
            name = L->opts.recv_stream;
            break;
        default:
            g_assert_not_reached();
        }
        t->default_stream[slot] = ssim_graph_stream(L->graph, t->rank, name);
        if (r->map == MAP_COLL || r->map == MAP_BARRIER)
            t->default_stream[r->map == MAP_COLL ? MAP_BARRIER : MAP_COLL] =
                t->default_stream[slot];
    }
    return t->default_stream[slot];
}

/* Adds the trace's ops to the graph in topological order. */
static gboolean emit(Loader *L, Trace *t, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    g_autofree guint32 *order = g_new(guint32, MAX(n, 1));
    if (!topo_order(t, order, error))
        return FALSE;

    /* op[v]: the graph op of node v, or SSIM_NONE when elided; fwd: an elided node's inherited
     * dependencies (local indices of non-elided nodes). */
    g_autofree guint32 *op = g_new(guint32, MAX(n, 1));
    g_autofree guint32 *fwd_first = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *fwd_n = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *stamp = g_new0(guint32, MAX(n, 1));
    g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_autoptr(GArray) eff = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(guint32));

    for (guint k = 0; k < n; k++) {
        guint32 v = order[k];
        const Rec *r = &recs[v];
        g_array_set_size(eff, 0);
        for (guint j = 0; j < r->n_deps; j++) {
            guint32 d = t->dep_local[r->dep_first + j];
            if (op[d] != SSIM_NONE) {
                if (stamp[d] != k + 1) {
                    stamp[d] = k + 1;
                    g_array_append_val(eff, d);
                }
                continue;
            }
            for (guint i = 0; i < fwd_n[d]; i++) {
                guint32 e = g_array_index(fwd, guint32, fwd_first[d] + i);
                if (stamp[e] != k + 1) {
                    stamp[e] = k + 1;
                    g_array_append_val(eff, e);
                }
            }
        }
        if (r->map == MAP_ELIDE) {
            op[v] = SSIM_NONE;
            fwd_first[v] = fwd->len;
            fwd_n[v] = eff->len;
            g_array_append_vals(fwd, eff->data, eff->len);
            continue;
        }
        g_array_set_size(deps, eff->len);
        for (guint i = 0; i < eff->len; i++)
            g_array_index(deps, guint32, i) = op[g_array_index(eff, guint32, i)];

        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.stream = r->stream != SSIM_NONE ? r->stream : default_stream(L, t, r);
        spec.name = r->name != SSIM_NONE ? ssim_graph_string(L->graph, r->name) : NULL;
        spec.duration = r->duration;
        spec.bytes = r->bytes;
        spec.flops = r->flops;
        spec.tag = r->tag;
        switch (r->map) {
        case MAP_COMPUTE:
            spec.kind = SSIM_OP_COMPUTE;
            spec.cls = ssim_graph_string(L->graph, r->cpu ? L->cls_cpu : L->cls_comp);
            break;
        case MAP_MEM:
            spec.kind = SSIM_OP_COMPUTE;
            spec.cls = ssim_graph_string(L->graph, L->cls_mem);
            break;
        case MAP_COLL:
        case MAP_BARRIER:
            spec.kind = r->map == MAP_COLL ? SSIM_OP_COLLECTIVE : SSIM_OP_BARRIER;
            spec.coll = (SsimCollKind)r->coll;
            spec.group = r->group;
            spec.duration = -1;
            spec.cls = ssim_graph_string(L->graph, L->cls_coll);
            break;
        case MAP_SEND:
        case MAP_RECV:
            spec.kind = r->map == MAP_SEND ? SSIM_OP_SEND : SSIM_OP_RECV;
            spec.peer = r->peer;
            spec.duration = -1;
            spec.cls = ssim_graph_string(L->graph, L->cls_p2p);
            break;
        default:
            g_assert_not_reached();
        }
        op[v] = ssim_graph_add_op(L->graph, &spec, (const guint32 *)(void *)deps->data, deps->len);
        L->stats->n_ops++;
        L->stats->n_deps += deps->len;
    }
    (void)error;
    return TRUE;
}

/* ---- comm groups ---- */

static gboolean ends_with_json(const char *name)
{
    return g_str_has_suffix(name, ".json");
}

/* The comm-group JSON to use when none is named: PREFIX.json, else the only *.json beside. */
static gboolean find_comm_json(const char *prefix, char **out, GError **error)
{
    *out = NULL;
    g_autofree char *direct = g_strconcat(prefix, ".json", NULL);
    if (g_file_test(direct, G_FILE_TEST_IS_REGULAR)) {
        *out = g_steal_pointer(&direct);
        return TRUE;
    }
    g_autofree char *dir = g_path_get_dirname(prefix);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (!d)
        return TRUE;
    g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(g_free);
    const char *e;
    while ((e = g_dir_read_name(d)))
        if (ends_with_json(e))
            g_ptr_array_add(found, g_build_filename(dir, e, NULL));
    if (found->len == 1)
        *out = g_strdup(found->pdata[0]);
    else if (found->len > 1) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %u comm-group JSON files lie beside the traces and none is named %s.json; "
                    "say which one to use",
                    dir, found->len, prefix);
        return FALSE;
    }
    return TRUE;
}

static gboolean load_groups(Loader *L, const char *path, GError **error)
{
    gsize len = 0;
    g_autofree char *text =
        ssim_read_file_limited(path, SSIM_JSON_MAX_COMM_GROUP_BYTES, &len, error);
    if (text == NULL ||
        !ssim_json_check_bounds(text, (gssize)len, SSIM_JSON_MAX_COMM_GROUP_BYTES, path, error))
        return FALSE;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) local = NULL;
    if (!json_parser_load_from_data(parser, text, (gssize)len, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s: %s", path,
                    local->message);
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                 "%s: the comm-group file must be a JSON object mapping a process-group id to "
                 "a list of ranks, e.g. {\"0\": [0, 1]}",
                 path);
    JsonObject *obj = json_node_get_object(root);
    g_autoptr(GList) members = json_object_get_members(obj);
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (GList *m = members; m; m = m->next) {
        const char *key = m->data;
        JsonNode *val = json_object_get_member(obj, key);
        if (!JSON_NODE_HOLDS_ARRAY(val))
            NODE_ERR(SSIM_CONFIG_ERROR_PARSE, "%s: group \"%s\": expected a list of ranks", path,
                     key);
        JsonArray *arr = json_node_get_array(val);
        g_array_set_size(ranks, 0);
        for (guint i = 0; i < json_array_get_length(arr); i++) {
            JsonNode *e = json_array_get_element(arr, i);
            if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64)
                NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                         "%s: group \"%s\": element %u is not an integer rank", path, key, i);
            gint64 rk = json_node_get_int(e);
            if (rk < 0)
                NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                         "%s: group \"%s\": rank %" G_GINT64_FORMAT " is negative", path, key, rk);
            if (rk >= (gint64)L->n_ranks)
                NODE_ERR(SSIM_CONFIG_ERROR_MISSING,
                         "%s: group \"%s\" names rank %" G_GINT64_FORMAT
                         ", but there are only %u trace files (%s.0.et .. %s.%u.et)",
                         path, key, rk, L->n_ranks, L->prefix, L->prefix, L->n_ranks - 1);
            guint32 r32 = (guint32)rk;
            g_array_append_val(ranks, r32);
        }
        g_autoptr(GError) gerr = NULL;
        if (ssim_graph_add_group(L->graph, key, (const guint32 *)(void *)ranks->data, ranks->len,
                                 &gerr) == SSIM_NONE)
            NODE_ERR(SSIM_CONFIG_ERROR_VALUE, "%s: group \"%s\": %s", path, key, gerr->message);
        L->stats->n_groups++;
    }
    return TRUE;
}

/* ---- the entry point ---- */

static char *rank_path(const char *prefix, guint rank)
{
    return g_strdup_printf("%s.%u.et", prefix, rank);
}

/* A directory holding exactly one trace set stands for that set's prefix. */
static gboolean prefix_of_dir(const char *dir, char **out, GError **error)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autofree char *found = NULL;
    guint n = 0;
    const char *e;
    while (d && (e = g_dir_read_name(d)))
        if (g_str_has_suffix(e, ".0.et") && n++ == 0)
            found = g_strndup(e, strlen(e) - strlen(".0.et"));
    if (n != 1) {
        g_set_error(error, SSIM_CONFIG_ERROR,
                    n ? SSIM_CONFIG_ERROR_VALUE : SSIM_CONFIG_ERROR_MISSING,
                    "%s: a directory given as the trace prefix must hold exactly one set "
                    "(one *.0.et file); it holds %u",
                    dir, n);
        return FALSE;
    }
    *out = g_build_filename(dir, found, NULL);
    return TRUE;
}

SsimGraph *ssim_chakra_load(const char *prefix, const char *comm_group_json,
                            const SsimChakraOptions *opts, SsimChakraStats *stats, GError **error)
{
    g_return_val_if_fail(prefix != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autofree char *dir_prefix = NULL;
    if (g_file_test(prefix, G_FILE_TEST_IS_DIR)) {
        if (!prefix_of_dir(prefix, &dir_prefix, error))
            return NULL;
        prefix = dir_prefix;
    }
    SsimChakraStats local_stats;
    if (!stats) {
        ssim_chakra_stats_init(&local_stats);
        stats = &local_stats;
    }
    g_autoptr(SsimGraph) graph = ssim_graph_new();
    Loader L = {.graph = graph, .stats = stats, .prefix = prefix, .world = SSIM_NONE};
    if (opts)
        L.opts = *opts;
    else
        ssim_chakra_options_init(&L.opts);
    /* Class labels are 16-bit string ids: intern them before any node name. */
    L.cls_comp = ssim_graph_intern(graph, "comp");
    L.cls_cpu = ssim_graph_intern(graph, "cpu");
    L.cls_mem = ssim_graph_intern(graph, "mem");
    L.cls_coll = ssim_graph_intern(graph, "coll");
    L.cls_p2p = ssim_graph_intern(graph, "p2p");
    chakra_arena_init(&L.arena);
    L.alloc = chakra_arena_allocator;
    L.alloc.allocator_data = &L.arena;
    gboolean ok = FALSE;
    g_autofree char *json = NULL;
    g_autoptr(GError) graph_error = NULL;

    while (TRUE) {
        g_autofree char *p = rank_path(prefix, L.n_ranks);
        if (!g_file_test(p, G_FILE_TEST_EXISTS))
            break;
        L.n_ranks++;
    }
    stats->n_ranks = L.n_ranks;
    if (L.n_ranks == 0) {
        g_autofree char *p0 = rank_path(prefix, 0);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: no such file: a Chakra trace set is PREFIX.0.et, PREFIX.1.et, ...", p0);
        goto out;
    }
    if (comm_group_json)
        json = g_strdup(comm_group_json);
    else if (!find_comm_json(prefix, &json, error))
        goto out;
    if (json) {
        L.have_json = TRUE;
        g_free(stats->comm_group_path);
        stats->comm_group_path = g_strdup(json);
        if (!load_groups(&L, json, error))
            goto out;
    }

    for (guint rank = 0; rank < L.n_ranks; rank++) {
        g_autofree char *path = rank_path(prefix, rank);
        Trace t = {.path = path, .rank = rank};
        t.recs = g_array_new(FALSE, FALSE, sizeof(Rec));
        t.deps = g_array_new(FALSE, FALSE, sizeof(guint64));
        for (guint i = 0; i < G_N_ELEMENTS(t.default_stream); i++)
            t.default_stream[i] = SSIM_NONE;
        gboolean good = chakra_read_trace(&L, &t, error) && emit(&L, &t, error);
        chakra_trace_clear(&t);
        if (!good)
            goto out;
    }
    if (!ssim_graph_finalize(graph, &graph_error)) {
        /* Cross-rank matching (sizes that disagree, a tag used twice): an input error. */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s.*.et: %s", prefix,
                    graph_error->message);
        goto out;
    }
    ok = TRUE;
out:
    chakra_arena_clear(&L.arena);
    if (stats == &local_stats)
        ssim_chakra_stats_clear(&local_stats);
    return ok ? g_steal_pointer(&graph) : NULL;
}
