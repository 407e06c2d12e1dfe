/*
 * Chakra execution-trace import: per-rank protobuf node streams -> one finalized SsimGraph.
 *
 * This file drives a load and owns the options, the stats report and the comm-group JSON; the
 * pipeline a trace goes through is described in chakra-private.h.  Traces are decoded, resolved
 * and ordered by opts.n_threads decoders (the ordered pipeline of src/core/ordered.h: n_threads -
 * 1 pool workers and the calling thread while it waits), each a whole trace at a time, and
 * emitted into the graph on the calling thread strictly in rank order, as each becomes ready:
 * the graph, the stats and the
 * first error reported are those of a one-thread load.  At most a window of 4 traces per decoder
 * is decoded ahead of emission, so memory beyond the graph is a few traces' records whatever the
 * rank count.
 *
 * The mapping rules themselves are documented in include/shiftsim/chakra.h.
 *
 * Invariant: every op's dependencies are ops of the same rank added before it, so the graph's
 * own checks (finalize) can only fail on cross-rank matching (a collective whose members
 * disagree), which is reported as a configuration error naming the trace set.  With
 * causal_order the ops are then reordered (ssim_graph_issue_causally()), and an op's
 * dependencies are still ops of its rank before it.
 */
#include <shiftsim/chakra.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/import/chakra-private.h"
#include "src/core/jsonbound.h"
#include "src/core/ordered.h"
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
        .n_threads = 0,
        .reference_decoder = FALSE,
        .causal_order = TRUE,
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
    g_clear_pointer(&stats->node_ids, g_array_unref);
    g_clear_pointer(&stats->colls, g_array_unref);
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
    if (s->n_dangling)
        g_string_append_printf(out,
                               "chakra: %" G_GUINT64_FORMAT
                               " dependencies on nodes absent from their trace taken as met "
                               "(--dangling-deps drop)\n",
                               s->n_dangling);
    if (s->n_ctrl_ignored)
        g_string_append_printf(out,
                               "chakra: %" G_GUINT64_FORMAT
                               " control dependencies not replayed (--ctrl-deps ignore)\n",
                               s->n_ctrl_ignored);
    if (s->n_reordered)
        g_string_append_printf(out,
                               "chakra: %" G_GUINT64_FORMAT
                               " ops issued after another op of their stream than in their "
                               "trace, in a causal order across ranks (--issue-order trace keeps "
                               "the trace's)\n",
                               s->n_reordered);
    if (s->n_cpu_colls)
        g_string_append_printf(out,
                               "chakra: %" G_GUINT64_FORMAT
                               " host-side collective calls without comm_type (PyTorch's "
                               "c10d::...) replayed as CPU ops of their duration; the GPU "
                               "kernels they launch carry the collectives\n",
                               s->n_cpu_colls);
    if (s->n_replayed)
        g_string_append_printf(out,
                               "chakra: %" G_GUINT64_FORMAT
                               " nodes replayed by their duration whatever their type, nothing "
                               "matched across ranks (ASTRA-sim's replay-only)\n",
                               s->n_replayed);
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

gboolean chakra_astra_group_id(const char *name, int *out)
{
    const char *p = name;
    while (g_ascii_isspace(*p))
        p++;
    gboolean negative = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!g_ascii_isdigit(*p))
        return FALSE;
    gint64 v = 0;
    for (; g_ascii_isdigit(*p); p++) {
        v = 10 * v + (*p - '0');
        if (v > (gint64)G_MAXINT + 1)
            return FALSE;
    }
    v = negative ? -v : v;
    if (v > G_MAXINT)
        return FALSE;
    *out = (int)v;
    return TRUE;
}

static gboolean load_groups(Loader *L, const char *path, GError **error)
{
    g_autoptr(JsonParser) parser =
        ssim_json_parse_file(path, SSIM_JSON_MAX_COMM_GROUP_BYTES, error);
    if (parser == NULL)
        return FALSE;
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
        /* ASTRA-sim (Workload::initialize_comm_groups) numbers a group by its name, which must
         * be above 0 (CommunicatorGroup asserts it); a trace's pg_name finds it by that number. */
        g_autofree char *astra_key = NULL;
        int id = 0;
        if (L->opts.astra_rules && !chakra_astra_group_id(key, &id))
            NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                     "%s: group \"%s\": ASTRA-sim reads a group's name as a number (std::stoi "
                     "throws on this one)",
                     path, key);
        if (L->opts.astra_rules && id <= 0)
            NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                     "%s: group \"%s\": ASTRA-sim needs a group number above 0 (its "
                     "CommunicatorGroup asserts it; \"0\" and an empty pg_name mean every rank)",
                     path, key);
        if (L->opts.astra_rules) {
            astra_key = g_strdup_printf("%d", id);
            if (g_hash_table_contains(L->groups, astra_key))
                NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                         "%s: group \"%s\" is group %d again, as ASTRA-sim numbers them", path, key,
                         id);
        }
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
        guint32 gi = ssim_graph_add_group(L->graph, key, (const guint32 *)(void *)ranks->data,
                                          ranks->len, &gerr);
        if (gi == SSIM_NONE)
            NODE_ERR(SSIM_CONFIG_ERROR_VALUE, "%s: group \"%s\": %s", path, key, gerr->message);
        L->stats->n_groups++;
        /* The workers' copy: they must not read the graph while it grows. */
        LoaderGroup *g = g_new(LoaderGroup, 1);
        g->index = gi;
        g->n_ranks = ranks->len;
        g->sorted = g_memdup2(ranks->data, ranks->len * sizeof(guint32));
        qsort(g->sorted, g->n_ranks, sizeof(guint32), ssim_cmp_u32);
        g_hash_table_insert(L->groups, astra_key ? g_steal_pointer(&astra_key) : g_strdup(key), g);
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

static void loader_group_free(gpointer p)
{
    LoaderGroup *g = p;
    g_free(g->sorted);
    g_free(g);
}

/* Adds a trace's counts to the load's stats (the tables are merged apart). */
static void stats_add(SsimChakraStats *dst, const SsimChakraStats *src)
{
    dst->n_nodes += src->n_nodes;
    for (guint t = 0; t < SSIM_CHAKRA_N_NODE_TYPES; t++) {
        dst->by_type[t] += src->by_type[t];
        dst->elided_by_type[t] += src->elided_by_type[t];
    }
    dst->n_compute_timed += src->n_compute_timed;
    dst->n_compute_roofline += src->n_compute_roofline;
    dst->n_compute_empty += src->n_compute_empty;
    dst->n_collectives += src->n_collectives;
    dst->n_barriers += src->n_barriers;
    dst->n_sends += src->n_sends;
    dst->n_recvs += src->n_recvs;
    dst->n_mem += src->n_mem;
    dst->n_elided += src->n_elided;
    dst->n_approximated += src->n_approximated;
    dst->n_cpu_colls += src->n_cpu_colls;
    dst->n_replayed += src->n_replayed;
    dst->n_dangling += src->n_dangling;
    dst->n_ctrl_ignored += src->n_ctrl_ignored;
}

/* ---- the pipeline: traces decoded on several threads, emitted in rank order ---- */

typedef struct {
    Trace t;
    GError *error; /* what decoding it failed with */
} Slot;

/* Decodes, resolves and orders one trace: everything but emission. */
static gboolean prepare_trace(const Loader *L, Trace *t, ChakraScratch *scratch, GError **error)
{
    return chakra_read_trace(L, t, scratch, error) && chakra_order_trace(t, error);
}

static gpointer scratch_new(gpointer data)
{
    (void)data;
    ChakraScratch *sc = g_new(ChakraScratch, 1);
    chakra_scratch_init(sc);
    return sc;
}

static void scratch_free(gpointer p)
{
    chakra_scratch_clear(p);
    g_free(p);
}

static double cpu_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Before the first trace is emitted: room in the graph for as many ops and dependencies as that
 * trace has per byte of its file, times the bytes of all the files (a quarter more, for ranks
 * that differ).  Growing the op arrays by doubling instead copied them and touched their pages
 * again at each step (a tenth of the 1,024-rank replay went to page faults); reserved room that
 * is never used costs no memory (alloc.h).  A guess only: the arrays still grow past it.
 */
static void reserve_graph(Loader *L, const Trace *t)
{
    if (t->file_bytes == 0 || L->total_bytes == 0 || ssim_graph_n_ops(L->graph) > 0)
        return;
    double scale = 1.25 * (double)L->total_bytes / (double)t->file_bytes;
    double ops = scale * t->recs->len, deps = scale * t->deps->len;
    if (ops < G_MAXUINT32 && deps < G_MAXUINT32)
        ssim_graph_reserve(L->graph, (gsize)ops, (gsize)deps);
}

/* Adds trace `t`'s ops and counts to the load. */
static gboolean emit_trace(Loader *L, Trace *t, GError **error)
{
    double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    if (t->rank == 0)
        reserve_graph(L, t);
    if (!chakra_emit_trace(L, t, error))
        return FALSE;
    stats_add(L->stats, &t->stats);
    chakra_ignored_merge(t->ignored, L->stats);
    if (t->version && !L->stats->version)
        L->stats->version = g_steal_pointer(&t->version);
    L->stats->emit_s += cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
    return TRUE;
}

/* The traces of a load, as the ordered pipeline (src/core/ordered.h) decodes and emits them. */
typedef struct {
    Loader *L;
    Slot *slots; /* one per rank */
    GError **error;
} Traces;

static void decode_one(gpointer data, guint r, gpointer scratch)
{
    Traces *ts = data;
    prepare_trace(ts->L, &ts->slots[r].t, scratch, &ts->slots[r].error);
}

static gboolean emit_one(gpointer data, guint r)
{
    Traces *ts = data;
    Slot *s = &ts->slots[r];
    gboolean ok = s->error == NULL && emit_trace(ts->L, &s->t, ts->error);
    if (s->error)
        g_propagate_error(ts->error, g_steal_pointer(&s->error));
    chakra_trace_clear(&s->t);
    return ok;
}

/* Decodes every trace on `n_threads` threads and emits them in rank order, at most 4 traces a
 * thread ahead of emission. */
static gboolean load_traces(Loader *L, guint n_threads, GError **error)
{
    guint n = L->n_ranks;
    L->total_bytes = 0;
    g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
    Traces ts = {.L = L, .slots = g_new0(Slot, n), .error = error};
    for (guint r = 0; r < n; r++) {
        g_ptr_array_add(paths, rank_path(L->prefix, r));
        GStatBuf st;
        if (g_stat(paths->pdata[r], &st) == 0 && st.st_size > 0)
            L->total_bytes += (guint64)st.st_size;
        chakra_trace_init(&ts.slots[r].t, paths->pdata[r], r);
    }
    n_threads = ssim_ordered_threads(n_threads, n);
    SsimOrdered job = {.data = &ts,
                       .produce = decode_one,
                       .consume = emit_one,
                       .scratch_new = scratch_new,
                       .scratch_free = scratch_free};
    gboolean ok = ssim_ordered_run(&job, n, n_threads, 4 * n_threads);
    for (guint r = 0; r < n; r++) {
        chakra_trace_clear(&ts.slots[r].t);
        g_clear_error(&ts.slots[r].error);
    }
    g_free(ts.slots);
    return ok;
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
    double wall0 = (double)g_get_monotonic_time() / 1e6;
    double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    g_autoptr(SsimGraph) graph = ssim_graph_new();
    Loader L = {.graph = graph, .stats = stats, .prefix = prefix, .world = SSIM_NONE};
    if (stats->node_ids)
        g_array_set_size(stats->node_ids, 0);
    if (opts)
        L.opts = *opts;
    else
        ssim_chakra_options_init(&L.opts);
    L.groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, loader_group_free);
    L.last_names = g_array_new(FALSE, FALSE, sizeof(guint32));
    /* Class labels are 16-bit string ids: intern them before any node name. */
    L.cls_comp = ssim_graph_intern(graph, "comp");
    L.cls_cpu = ssim_graph_intern(graph, "cpu");
    L.cls_mem = ssim_graph_intern(graph, "mem");
    L.cls_coll = ssim_graph_intern(graph, "coll");
    L.cls_p2p = ssim_graph_intern(graph, "p2p");
    if (L.opts.keep_node_ids)
        for (guint t = 0; t < SSIM_CHAKRA_N_NODE_TYPES; t++)
            for (guint cpu = 0; cpu < 2; cpu++) {
                g_autofree char *cls =
                    g_strconcat("chakra:", ssim_chakra_node_type_name(t), cpu ? ":cpu" : "", NULL);
                L.cls_type[cpu][t] = ssim_graph_intern(graph, cls);
            }
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
    if (!load_traces(&L, L.opts.n_threads, error))
        goto out;
    double fin0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    gboolean finalized = ssim_graph_finalize(graph, &graph_error);
    stats->finalize_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - fin0;
    stats->wall_s = (double)g_get_monotonic_time() / 1e6 - wall0;
    stats->cpu_s = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (!finalized) {
        /* Cross-rank matching (a collective's members that disagree): an input error. */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s.*.et: %s", prefix,
                    graph_error->message);
        goto out;
    }
    if (L.opts.causal_order && !L.opts.keep_node_ids) {
        guint32 moved = 0;
        if (!ssim_graph_issue_causally(graph, &moved, error))
            goto out;
        stats->n_reordered = moved;
    }
    ok = TRUE;
out:
    g_hash_table_unref(L.groups);
    g_array_unref(L.last_names);
    if (stats == &local_stats)
        ssim_chakra_stats_clear(&local_stats);
    return ok ? g_steal_pointer(&graph) : NULL;
}
