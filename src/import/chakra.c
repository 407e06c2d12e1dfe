/*
 * Chakra execution-trace import: per-rank protobuf node streams -> one finalized SsimGraph.
 *
 * This file drives a load and owns the options, the stats report and the comm-group JSON; the
 * pipeline a trace goes through is described in chakra-private.h.  Traces are decoded, resolved
 * and ordered by opts.n_threads decoders, a GLib thread pool of n_threads - 1 workers and the
 * calling thread while it waits, each a whole trace at a time, and emitted into the graph on the
 * calling thread strictly in rank order, as each becomes ready: the graph, the stats and the
 * first error reported are those of a one-thread load.  At most a window of 4 traces per decoder
 * is decoded ahead of emission, so memory beyond the graph is a few traces' records whatever the
 * rank count.
 *
 * The mapping rules themselves are documented in include/shiftsim/chakra.h.
 *
 * Invariant: every op's dependencies are ops of the same rank added before it, so the graph's
 * own checks (finalize) can only fail on cross-rank matching (sizes that disagree, a tag used
 * twice), which is reported as a configuration error naming the trace set.
 */
#include <shiftsim/chakra.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/import/chakra-private.h"
#include "src/core/jsonbound.h"
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
        g_hash_table_insert(L->groups, g_strdup(key), g);
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
}

/* ---- the pipeline: traces decoded on workers, emitted in rank order ---- */

typedef struct {
    Trace t;
    GError *error; /* what decoding it failed with */
    gboolean done;
} Slot;

/*
 * Traces are claimed in rank order, by the workers and by the calling thread alike: a trace
 * becomes claimable when emission comes within the window of it, and whoever is free first
 * decodes it.  The calling thread decodes while the trace it must emit next is not ready, so
 * n_threads decoders (n_threads - 1 workers and itself) keep n_threads cores busy, where a pool
 * of n_threads workers beside a waiting caller had one thread more than cores.
 */
typedef struct {
    const Loader *L;
    Slot *slots;        /* one per rank */
    GPtrArray *scratch; /* ChakraScratch * not in use (one per worker at most) */
    guint claimed;      /* traces claimed so far (ranks 0 .. claimed - 1) */
    guint claimable;    /* traces that may be claimed (the window's end) */
    GMutex lock;
    GCond ready;
} Pipeline;

static void scratch_free(gpointer p)
{
    chakra_scratch_clear(p);
    g_free(p);
}

/* Decodes, resolves and orders one trace: everything but emission. */
static gboolean prepare_trace(const Loader *L, Trace *t, ChakraScratch *scratch, GError **error)
{
    return chakra_read_trace(L, t, scratch, error) && chakra_order_trace(t, error);
}

/* Claims the next claimable trace (under the lock); G_MAXUINT when there is none. */
static guint claim(Pipeline *p)
{
    return p->claimed < p->claimable ? p->claimed++ : G_MAXUINT;
}

/* Decodes claimed trace r into its slot (without the lock) and says it is done. */
static void decode_claimed(Pipeline *p, guint r, ChakraScratch *scratch)
{
    Slot *s = &p->slots[r];
    GError *error = NULL;
    prepare_trace(p->L, &s->t, scratch, &error);
    g_mutex_lock(&p->lock);
    s->error = error;
    s->done = TRUE;
    g_cond_broadcast(&p->ready);
    g_mutex_unlock(&p->lock);
}

/* A worker's job, one per trace made claimable: decode one, if the caller has not taken it. */
static void decode_job(gpointer data, gpointer user)
{
    (void)data;
    Pipeline *p = user;
    g_mutex_lock(&p->lock);
    guint r = claim(p);
    ChakraScratch *scratch = NULL;
    if (r != G_MAXUINT && p->scratch->len)
        scratch = g_ptr_array_steal_index_fast(p->scratch, p->scratch->len - 1);
    g_mutex_unlock(&p->lock);
    if (r == G_MAXUINT)
        return;
    if (!scratch) {
        scratch = g_new(ChakraScratch, 1);
        chakra_scratch_init(scratch);
    }
    decode_claimed(p, r, scratch);
    g_mutex_lock(&p->lock);
    g_ptr_array_add(p->scratch, scratch);
    g_mutex_unlock(&p->lock);
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

/* Decodes every trace on `n_threads` workers and emits them in rank order. */
static gboolean load_traces(Loader *L, guint n_threads, GError **error)
{
    guint n = L->n_ranks;
    g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
    L->total_bytes = 0;
    for (guint r = 0; r < n; r++) {
        g_ptr_array_add(paths, rank_path(L->prefix, r));
        GStatBuf st;
        if (g_stat(paths->pdata[r], &st) == 0 && st.st_size > 0)
            L->total_bytes += (guint64)st.st_size;
    }
    if (n_threads <= 1 || n == 1) {
        ChakraScratch scratch;
        chakra_scratch_init(&scratch);
        gboolean good = TRUE;
        for (guint r = 0; r < n && good; r++) {
            Trace t;
            chakra_trace_init(&t, paths->pdata[r], r);
            good = prepare_trace(L, &t, &scratch, error) && emit_trace(L, &t, error);
            chakra_trace_clear(&t);
        }
        chakra_scratch_clear(&scratch);
        return good;
    }
    Pipeline p = {.L = L, .slots = g_new0(Slot, n)};
    p.scratch = g_ptr_array_new_with_free_func(scratch_free);
    g_mutex_init(&p.lock);
    g_cond_init(&p.ready);
    for (guint r = 0; r < n; r++)
        chakra_trace_init(&p.slots[r].t, paths->pdata[r], r);
    GThreadPool *pool = g_thread_pool_new(decode_job, &p, (gint)n_threads - 1, FALSE, NULL);
    ChakraScratch own;
    chakra_scratch_init(&own);
    guint window = 4 * n_threads;
    gboolean ok = TRUE;
    for (guint r = 0; r < n && ok; r++) {
        g_mutex_lock(&p.lock);
        guint end = MIN(n, r + window), more = end - p.claimable; /* it only grows */
        p.claimable = end;
        g_mutex_unlock(&p.lock);
        for (guint k = 0; k < more; k++)
            g_thread_pool_push(pool, GUINT_TO_POINTER(1), NULL);
        Slot *s = &p.slots[r];
        g_mutex_lock(&p.lock);
        while (!s->done) {
            guint mine = claim(&p);
            if (mine == G_MAXUINT) {
                g_cond_wait(&p.ready, &p.lock);
                continue;
            }
            g_mutex_unlock(&p.lock);
            decode_claimed(&p, mine, &own);
            g_mutex_lock(&p.lock);
        }
        g_mutex_unlock(&p.lock);
        if (s->error) {
            g_propagate_error(error, g_steal_pointer(&s->error));
            ok = FALSE;
        } else {
            ok = emit_trace(L, &s->t, error);
        }
        chakra_trace_clear(&s->t);
    }
    /* On failure, drop what is queued and wait for what runs. */
    g_thread_pool_free(pool, TRUE, TRUE);
    chakra_scratch_clear(&own);
    for (guint r = 0; r < n; r++) {
        chakra_trace_clear(&p.slots[r].t);
        g_clear_error(&p.slots[r].error);
    }
    g_free(p.slots);
    g_ptr_array_unref(p.scratch);
    g_mutex_clear(&p.lock);
    g_cond_clear(&p.ready);
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
        for (guint t = 0; t < SSIM_CHAKRA_N_NODE_TYPES; t++) {
            g_autofree char *cls = g_strconcat("chakra:", ssim_chakra_node_type_name(t), NULL);
            L.cls_type[t] = ssim_graph_intern(graph, cls);
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
    guint threads = L.opts.n_threads ? L.opts.n_threads : g_get_num_processors();
    if (!load_traces(&L, MIN(threads, L.n_ranks), error))
        goto out;
    double fin0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    gboolean finalized = ssim_graph_finalize(graph, &graph_error);
    stats->finalize_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - fin0;
    stats->wall_s = (double)g_get_monotonic_time() / 1e6 - wall0;
    stats->cpu_s = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (!finalized) {
        /* Cross-rank matching (sizes that disagree, a tag used twice): an input error. */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s.*.et: %s", prefix,
                    graph_error->message);
        goto out;
    }
    ok = TRUE;
out:
    g_hash_table_unref(L.groups);
    g_array_unref(L.last_names);
    if (stats == &local_stats)
        ssim_chakra_stats_clear(&local_stats);
    return ok ? g_steal_pointer(&graph) : NULL;
}
