/*
 * The op graph (see include/shiftsim/graph.h for the semantics).
 *
 * Storage is flat: ops in one GArray, their dependency lists concatenated in another, strings
 * interned once.  ssim_graph_finalize() derives everything the runtime needs in arrays indexed
 * by op: the number of predecessors (dependencies + stream predecessor + host-barrier gate) and
 * a CSR successor list; and, per matched communication (a collective or barrier instance, or a
 * send/receive pair), the list of its member ops.  A barrier gates only the first op after it on
 * each stream of its rank: the stream order carries the gate to the rest, so a barrier costs at
 * most one edge per stream instead of one per later op.
 *
 * Invariants after finalize: every dependency names an existing op other than itself; the edge
 * relation (dependencies, stream order, gates) is acyclic, and so is the relation between
 * programs and the ops outside them (graph-programs.c); every collective member belongs to its
 * group and no rank appears twice in an instance; members of an instance agree on kind and
 * bytes; a send/receive match holds one send and one receive, the k-th of their (source,
 * destination, tag) in op order (graph-match.c).
 */
#include "src/core/graph-private.h"

#include <shiftsim/alloc.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_names[] = {
#define SSIM_X(e, s) s,
    SSIM_COLL_LIST(SSIM_X)
#undef SSIM_X
};

static const char *const op_kind_names[] = {
#define SSIM_X(e, s) s,
    SSIM_OPKIND_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_coll_kind_name(SsimCollKind kind)
{
    return (guint)kind < SSIM_COLL_N ? coll_names[kind] : "?";
}

gboolean ssim_coll_kind_from_name(const char *name, SsimCollKind *out)
{
    for (guint i = 0; i < SSIM_COLL_N; i++)
        if (strcmp(name, coll_names[i]) == 0) {
            *out = (SsimCollKind)i;
            return TRUE;
        }
    return FALSE;
}

const char *ssim_op_kind_name(SsimOpKind kind)
{
    return (guint)kind < SSIM_OP_N ? op_kind_names[kind] : "?";
}

SsimGraph *ssim_graph_new(void)
{
    static atomic_uint_fast64_t last_serial;
    SsimGraph *g = g_new0(SsimGraph, 1);
    g->serial = (guint64)atomic_fetch_add(&last_serial, 1) + 1;
    g->ops = g_array_new(FALSE, FALSE, sizeof(SsimOp));
    g->deps = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->dep_first = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->strings = g_ptr_array_new_with_free_func(g_free);
    g->string_ids = g_hash_table_new(g_str_hash, g_str_equal);
    g->stream_rank = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->stream_name = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->stream_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g->group_name = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->group_first = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->group_ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->group_sorted = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->group_ids = g_hash_table_new(g_str_hash, g_str_equal);
    g->prog_rank = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->prog_name = g_array_new(FALSE, FALSE, sizeof(guint32));
    g->prog_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint32 zero = 0;
    g_array_append_val(g->group_first, zero);
    ssim_graph_intern(g, ""); /* string id 0 is the empty string: the default class */
    return g;
}

void graph_clear_finalized(SsimGraph *g)
{
    if (!g->derived)
        return;
    g->derived = FALSE;
    g_clear_pointer(&g->n_preds, g_free);
    g_clear_pointer(&g->stream_prev, g_free);
    g_clear_pointer(&g->gate, g_free);
    g_clear_pointer(&g->succ_first, g_free);
    g_clear_pointer(&g->succs, g_free);
    g_clear_pointer(&g->match_first, g_free);
    g_clear_pointer(&g->match_ops, g_free);
    g_clear_pointer(&g->match_expected, g_free);
    g_clear_pointer(&g->match_kind, g_free);
    g_clear_pointer(&g->id_sorted, g_free);
    graph_programs_clear(g, FALSE);
    g->n_matches = 0;
    g->finalized = FALSE;
}

void ssim_graph_free(SsimGraph *g)
{
    if (g == NULL)
        return;
    graph_clear_finalized(g);
    g_array_unref(g->ops);
    g_array_unref(g->deps);
    g_array_unref(g->dep_first);
    g_hash_table_unref(g->string_ids);
    g_ptr_array_unref(g->strings);
    g_array_unref(g->stream_rank);
    g_array_unref(g->stream_name);
    g_hash_table_unref(g->stream_ids);
    g_array_unref(g->group_name);
    g_array_unref(g->group_first);
    g_array_unref(g->group_ranks);
    g_array_unref(g->group_sorted);
    g_hash_table_unref(g->group_ids);
    graph_programs_clear(g, TRUE);
    g_free(g);
}

void ssim_graph_reserve(SsimGraph *g, gsize n_ops, gsize n_deps)
{
    /* GArray has no reserve: swap in pre-sized arrays while the graph is still empty. */
    if (g->ops->len == 0 && n_ops > 0) {
        g_array_unref(g->ops);
        g->ops = ssim_array_new_large(sizeof(SsimOp), n_ops);
        g_array_unref(g->dep_first);
        g->dep_first = ssim_array_new_large(sizeof(guint32), n_ops);
        g->ops_room = g->dep_first_room = n_ops;
    }
    if (g->deps->len == 0 && n_deps > 0) {
        g_array_unref(g->deps);
        g->deps = ssim_array_new_large(sizeof(guint32), n_deps);
        g->deps_room = n_deps;
    }
}

guint32 ssim_graph_intern(SsimGraph *g, const char *s)
{
    gpointer v = g_hash_table_lookup(g->string_ids, s);
    if (v != NULL)
        return GPOINTER_TO_UINT(v) - 1;
    char *copy = g_strdup(s);
    guint32 id = g->strings->len;
    g_ptr_array_add(g->strings, copy);
    g_hash_table_insert(g->string_ids, copy, GUINT_TO_POINTER(id + 1));
    return id;
}

const char *ssim_graph_string(const SsimGraph *g, guint32 id)
{
    return id < g->strings->len ? g_ptr_array_index(g->strings, id) : "";
}

guint64 ssim_graph_serial(const SsimGraph *g)
{
    return g->serial;
}

guint32 ssim_graph_n_strings(const SsimGraph *g)
{
    return g->strings->len;
}

void ssim_graph_rank_streams(const SsimGraph *g, guint32 **first_out, guint32 **streams_out)
{
    guint32 nr = ssim_graph_n_ranks(g), ns = ssim_graph_n_streams(g);
    guint32 *first = g_new0(guint32, nr + 1), *streams = g_new(guint32, MAX(ns, 1));
    for (guint32 s = 0; s < ns; s++)
        first[ssim_graph_stream_rank(g, s) + 1]++;
    for (guint32 r = 0; r < nr; r++)
        first[r + 1] += first[r];
    g_autofree guint32 *fill = g_memdup2(first, sizeof(guint32) * (nr + 1));
    for (guint32 s = 0; s < ns; s++)
        streams[fill[ssim_graph_stream_rank(g, s)]++] = s;
    *first_out = first;
    *streams_out = streams;
}

guint32 ssim_graph_stream(SsimGraph *g, guint32 rank, const char *name)
{
    char key[256];
    g_snprintf(key, sizeof key, "%u\x1f%s", rank, name);
    gpointer v = g_hash_table_lookup(g->stream_ids, key);
    if (v != NULL)
        return GPOINTER_TO_UINT(v) - 1;
    guint32 s = g->stream_rank->len;
    guint32 name_id = ssim_graph_intern(g, name);
    g_array_append_val(g->stream_rank, rank);
    g_array_append_val(g->stream_name, name_id);
    g_hash_table_insert(g->stream_ids, g_strdup(key), GUINT_TO_POINTER(s + 1));
    if (rank + 1 > g->n_ranks)
        g->n_ranks = rank + 1;
    graph_clear_finalized(g);
    return s;
}

guint32 ssim_graph_add_group(SsimGraph *g, const char *name, const guint32 *ranks, guint n,
                             GError **error)
{
    if (g_hash_table_contains(g->group_ids, name)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "group '%s' is defined twice", name);
        return SSIM_NONE;
    }
    if (n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "group '%s' has no ranks",
                    name);
        return SSIM_NONE;
    }
    g_autofree guint32 *sorted = g_memdup2(ranks, n * sizeof *ranks);
    qsort(sorted, n, sizeof *sorted, ssim_cmp_u32);
    for (guint i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "group '%s' lists rank %u twice", name, sorted[i]);
            return SSIM_NONE;
        }
    guint32 gi = g->group_name->len;
    guint32 name_id = ssim_graph_intern(g, name);
    g_array_append_val(g->group_name, name_id);
    g_array_append_vals(g->group_ranks, ranks, n);
    g_array_append_vals(g->group_sorted, sorted, n);
    guint32 end = g->group_ranks->len;
    g_array_append_val(g->group_first, end);
    g_hash_table_insert(g->group_ids, (gpointer)ssim_graph_string(g, name_id),
                        GUINT_TO_POINTER(gi + 1));
    if (sorted[n - 1] + 1 > g->n_ranks)
        g->n_ranks = sorted[n - 1] + 1;
    graph_clear_finalized(g);
    return gi;
}

guint32 ssim_graph_find_group(const SsimGraph *g, const char *name)
{
    gpointer v = g_hash_table_lookup(g->group_ids, name);
    return v ? GPOINTER_TO_UINT(v) - 1 : SSIM_NONE;
}

guint32 ssim_graph_add_op(SsimGraph *g, const SsimOpSpec *spec, const guint32 *deps, guint n_deps)
{
    return ssim_graph_add_op_ids(g, spec, spec->name ? ssim_graph_intern(g, spec->name) : SSIM_NONE,
                                 spec->cls ? ssim_graph_intern(g, spec->cls) : 0, deps, n_deps);
}

guint32 ssim_graph_add_op_ids(SsimGraph *g, const SsimOpSpec *spec, guint32 name_id, guint32 cls_id,
                              const guint32 *deps, guint n_deps)
{
    g_return_val_if_fail(spec->stream < g->stream_rank->len, SSIM_NONE);
    g_return_val_if_fail(cls_id < g->strings->len, SSIM_NONE);
    g_return_val_if_fail(name_id == SSIM_NONE || name_id < g->strings->len, SSIM_NONE);
    guint32 index = g->ops->len;
    SsimOp op = {
        .kind = (guint8)spec->kind,
        .coll = (guint8)spec->coll,
        .cls = (guint16)cls_id,
        .id = spec->id == SSIM_NONE ? index : spec->id,
        .stream = spec->stream,
        .rank = g_array_index(g->stream_rank, guint32, spec->stream),
        .group = spec->group,
        .peer = spec->peer,
        .tag = spec->tag,
        .name = name_id,
        .n_deps = n_deps,
        .match = SSIM_NONE,
        .duration = spec->duration,
        .bytes = spec->bytes,
        .flops = spec->flops,
    };
    guint32 first = g->deps->len;
    if (n_deps > 0)
        memcpy(ssim_array_push(g->deps, &g->deps_room, sizeof(guint32), n_deps), deps,
               n_deps * sizeof(guint32));
    *(guint32 *)ssim_array_push(g->dep_first, &g->dep_first_room, sizeof(guint32), 1) = first;
    *(SsimOp *)ssim_array_push(g->ops, &g->ops_room, sizeof(SsimOp), 1) = op;
    if (g->op_program != NULL)
        *(guint32 *)ssim_array_push(g->op_program, &g->op_program_room, sizeof(guint32), 1) =
            SSIM_NONE;
    graph_clear_finalized(g);
    return index;
}

/* ---- read access ---- */

gboolean ssim_graph_is_finalized(const SsimGraph *g)
{
    return g->finalized;
}
guint32 ssim_graph_n_ops(const SsimGraph *g)
{
    return g->ops->len;
}
guint32 ssim_graph_n_ranks(const SsimGraph *g)
{
    return g->n_ranks;
}
guint32 ssim_graph_n_streams(const SsimGraph *g)
{
    return g->stream_rank->len;
}
guint32 ssim_graph_n_groups(const SsimGraph *g)
{
    return g->group_name->len;
}
guint64 ssim_graph_n_deps(const SsimGraph *g)
{
    return g->deps->len;
}
const SsimOp *ssim_graph_op(const SsimGraph *g, guint32 op)
{
    return &g_array_index(g->ops, SsimOp, op);
}
const guint32 *ssim_graph_deps(const SsimGraph *g, guint32 op, guint *n_deps)
{
    const SsimOp *o = ssim_graph_op(g, op);
    *n_deps = o->n_deps;
    return o->n_deps ? &g_array_index(g->deps, guint32, g_array_index(g->dep_first, guint32, op))
                     : NULL;
}
guint32 ssim_graph_stream_rank(const SsimGraph *g, guint32 stream)
{
    return g_array_index(g->stream_rank, guint32, stream);
}
const char *ssim_graph_stream_name(const SsimGraph *g, guint32 stream)
{
    return ssim_graph_string(g, g_array_index(g->stream_name, guint32, stream));
}
const char *ssim_graph_group_name(const SsimGraph *g, guint32 group)
{
    if (group >= g->group_name->len)
        return "?";
    return ssim_graph_string(g, g_array_index(g->group_name, guint32, group));
}
const guint32 *ssim_graph_group_ranks(const SsimGraph *g, guint32 group, guint *n)
{
    guint32 a = g_array_index(g->group_first, guint32, group);
    guint32 b = g_array_index(g->group_first, guint32, group + 1);
    *n = b - a;
    return &g_array_index(g->group_ranks, guint32, a);
}

gboolean graph_group_has_rank(const SsimGraph *g, guint32 group, guint32 rank)
{
    guint32 lo = g_array_index(g->group_first, guint32, group);
    guint32 end = g_array_index(g->group_first, guint32, group + 1), hi = end;
    const guint32 *r = (const guint32 *)(void *)g->group_sorted->data;
    while (lo < hi) { /* a binary search: a data-parallel group has a rank per replica */
        guint32 mid = lo + (hi - lo) / 2;
        if (r[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && r[lo] == rank;
}

guint32 ssim_graph_find_id(const SsimGraph *g, guint32 id)
{
    guint32 n = g->ops->len;
    if (g->finalized && g->ids_identity)
        return id < n ? id : SSIM_NONE;
    if (g->finalized) {
        guint32 lo = 0, hi = n;
        while (lo < hi) {
            guint32 mid = lo + (hi - lo) / 2;
            guint32 mid_id = (guint32)(g->id_sorted[mid] >> 32);
            if (mid_id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && (guint32)(g->id_sorted[lo] >> 32) == id)
            return (guint32)g->id_sorted[lo];
        return SSIM_NONE;
    }
    for (guint32 i = 0; i < n; i++)
        if (ssim_graph_op(g, i)->id == id)
            return i;
    return SSIM_NONE;
}

const guint32 *ssim_graph_succs(const SsimGraph *g, guint32 op, guint *n)
{
    g_return_val_if_fail(g->finalized, NULL);
    *n = g->succ_first[op + 1] - g->succ_first[op];
    return g->succs + g->succ_first[op];
}
guint32 ssim_graph_n_preds(const SsimGraph *g, guint32 op)
{
    return g->n_preds[op];
}
guint32 ssim_graph_stream_prev(const SsimGraph *g, guint32 op)
{
    return g->stream_prev[op];
}
guint32 ssim_graph_n_matches(const SsimGraph *g)
{
    return g->n_matches;
}
const guint32 *ssim_graph_match_ops(const SsimGraph *g, guint32 m, guint *n, guint *expected)
{
    *n = g->match_first[m + 1] - g->match_first[m];
    *expected = g->match_expected[m];
    return g->match_ops + g->match_first[m];
}

void ssim_graph_successor_csr(const SsimGraph *g, const guint32 **first, const guint32 **succs)
{
    g_return_if_fail(g->finalized);
    *first = g->succ_first;
    *succs = g->succs;
}

void ssim_graph_match_csr(const SsimGraph *g, const guint32 **mfirst, const guint32 **ops,
                          const guint32 **expected)
{
    g_return_if_fail(g->finalized);
    *mfirst = g->match_first;
    *ops = g->match_ops;
    *expected = g->match_expected;
}

const SsimOp *ssim_graph_ops(const SsimGraph *g)
{
    return (const SsimOp *)g->ops->data;
}

const char *ssim_graph_op_label(const SsimGraph *g, guint32 op, char *buf, gsize size)
{
    const SsimOp *o = ssim_graph_op(g, op);
    const char *base;
    if (o->name != SSIM_NONE)
        base = ssim_graph_string(g, o->name);
    else if (o->kind == SSIM_OP_COLLECTIVE)
        base = ssim_coll_kind_name(o->coll);
    else
        base = ssim_op_kind_name(o->kind);
    g_snprintf(buf, size, "%s#%u", base, o->id);
    return buf;
}

/* ---- finalize ---- */

gboolean graph_fail(GError **error, SsimGraph *g, guint32 op, const char *fmt, ...)
{
    char label[128];
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    const SsimOp *o = ssim_graph_op(g, op);
    g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH, "%s (rank %u, stream %s): %s",
                ssim_graph_op_label(g, op, label, sizeof label), o->rank,
                ssim_graph_stream_name(g, o->stream), msg);
    graph_clear_finalized(g);
    return FALSE;
}

static int cmp_u64(const void *a, const void *b)
{
    guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
    return (x > y) - (x < y);
}

static gboolean check_ids(SsimGraph *g, GError **error)
{
    guint32 n = g->ops->len;
    g->ids_identity = TRUE;
    for (guint32 i = 0; i < n && g->ids_identity; i++)
        g->ids_identity = ssim_graph_op(g, i)->id == i;
    if (g->ids_identity)
        return TRUE;
    g->id_sorted = ssim_new_large(guint64, MAX(n, 1));
    for (guint32 i = 0; i < n; i++)
        g->id_sorted[i] = ((guint64)ssim_graph_op(g, i)->id << 32) | i;
    qsort(g->id_sorted, n, sizeof(guint64), cmp_u64);
    for (guint32 i = 1; i < n; i++)
        if (g->id_sorted[i] >> 32 == g->id_sorted[i - 1] >> 32)
            return graph_fail(error, g, (guint32)g->id_sorted[i], "id %u is used by two ops",
                              (guint32)(g->id_sorted[i] >> 32));
    return TRUE;
}

/* An unfinished predecessor of `op` (dependency, stream predecessor or gate), or SSIM_NONE. */
static guint32 left_pred(const SsimGraph *g, const guint32 *left, guint32 op)
{
    guint nd;
    const guint32 *d = ssim_graph_deps(g, op, &nd);
    for (guint i = 0; i < nd; i++)
        if (left[d[i]] > 0)
            return d[i];
    if (g->stream_prev[op] != SSIM_NONE && left[g->stream_prev[op]])
        return g->stream_prev[op];
    if (g->gate[op] != SSIM_NONE && left[g->gate[op]])
        return g->gate[op];
    return SSIM_NONE;
}

/*
 * Every op Kahn's algorithm left over waits for another left-over op, so walking predecessors
 * from one of them must revisit an op: the walk from that op's first visit is the cycle.
 */
static gboolean report_cycle(SsimGraph *g, const guint32 *left, GError **error)
{
    guint32 n = g->ops->len, cur = SSIM_NONE;
    for (guint32 i = 0; i < n && cur == SSIM_NONE; i++)
        if (left[i] > 0)
            cur = i;
    g_autofree guint32 *seen =
        ssim_new0_large(guint32, n); /* 1 + position in walk, 0 = unvisited */
    g_autofree guint32 *walk = ssim_new_large(guint32, n);
    guint32 steps = 0;
    while (seen[cur] == 0) {
        walk[steps] = cur;
        seen[cur] = ++steps;
        cur = left_pred(g, left, cur);
        g_assert(cur != SSIM_NONE);
    }
    GString *path = g_string_new(NULL);
    char label[128];
    for (guint32 k = seen[cur] - 1; k < steps && path->len < 2000; k++)
        g_string_append_printf(path, "%s <- ",
                               ssim_graph_op_label(g, walk[k], label, sizeof label));
    g_string_append(path, ssim_graph_op_label(g, cur, label, sizeof label));
    g_autofree char *text = g_string_free(path, FALSE);
    return graph_fail(error, g, cur, "dependency cycle (each op waits for the next): %s", text);
}

/* Kahn's algorithm over the finalized edges: FALSE with the cycle reported when some op can
 * never become ready. */
static gboolean graph_acyclic(SsimGraph *g, GError **error)
{
    guint32 n = g->ops->len;
    g_autofree guint32 *left = ssim_memdup_large(g->n_preds, sizeof(guint32) * MAX(n, 1));
    g_autofree guint32 *queue = ssim_new_large(guint32, MAX(n, 1));
    guint32 head = 0, tail = 0;
    for (guint32 i = 0; i < n; i++)
        if (left[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        guint32 u = queue[head++];
        for (guint32 e = g->succ_first[u]; e < g->succ_first[u + 1]; e++)
            if (--left[g->succs[e]] == 0)
                queue[tail++] = g->succs[e];
    }
    return tail == n || report_cycle(g, left, error);
}

gboolean ssim_graph_finalize(SsimGraph *g, GError **error)
{
    if (g->finalized)
        return TRUE;
    g->derived = TRUE;
    guint32 n = g->ops->len, n_streams = g->stream_rank->len;
    if (!check_ids(g, error))
        return FALSE;
    gboolean backward = TRUE; /* every dependency an earlier op */
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint j = 0; j < nd; j++) {
            if (d[j] >= n)
                return graph_fail(error, g, i, "depends on op index %u, which does not exist",
                                  d[j]);
            if (d[j] == i)
                return graph_fail(error, g, i, "depends on itself");
            backward &= d[j] < i;
        }
    }

    /* Stream order and barrier gates. */
    g->stream_prev = ssim_new_large(guint32, MAX(n, 1));
    g->gate = ssim_new_large(guint32, MAX(n, 1));
    g_autofree guint32 *last = g_new(guint32, MAX(n_streams, 1));
    g_autofree guint32 *gated_epoch = g_new0(guint32, MAX(n_streams, 1));
    g_autofree guint32 *barrier = g_new(guint32, MAX(g->n_ranks, 1));
    g_autofree guint32 *epoch = g_new0(guint32, MAX(g->n_ranks, 1));
    memset(last, 0xff, sizeof(guint32) * MAX(n_streams, 1));
    memset(barrier, 0xff, sizeof(guint32) * MAX(g->n_ranks, 1));
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        g->stream_prev[i] = last[o->stream];
        last[o->stream] = i;
        g->gate[i] = SSIM_NONE;
        if (barrier[o->rank] != SSIM_NONE && gated_epoch[o->stream] != epoch[o->rank]) {
            if (g->stream_prev[i] != barrier[o->rank])
                g->gate[i] = barrier[o->rank];
            gated_epoch[o->stream] = epoch[o->rank];
        }
        if (o->kind == SSIM_OP_BARRIER) {
            barrier[o->rank] = i;
            epoch[o->rank]++;
            gated_epoch[o->stream] = epoch[o->rank]; /* its own stream follows by stream order */
        }
    }

    /* Predecessor counts and CSR successors. */
    g->n_preds = ssim_new_large(guint32, MAX(n, 1)); /* every entry set below */
    g->succ_first = ssim_new0_large(guint32, n + 1);
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint j = 0; j < nd; j++)
            g->succ_first[d[j] + 1]++;
        if (g->stream_prev[i] != SSIM_NONE)
            g->succ_first[g->stream_prev[i] + 1]++;
        if (g->gate[i] != SSIM_NONE)
            g->succ_first[g->gate[i] + 1]++;
        g->n_preds[i] = nd + (g->stream_prev[i] != SSIM_NONE) + (g->gate[i] != SSIM_NONE);
    }
    for (guint32 i = 0; i < n; i++)
        g->succ_first[i + 1] += g->succ_first[i];
    g->succs = ssim_new_large(guint32, MAX(g->succ_first[n], 1));
    g_autofree guint32 *pos = ssim_memdup_large(g->succ_first, sizeof(guint32) * (n + 1));
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        if (g->stream_prev[i] != SSIM_NONE)
            g->succs[pos[g->stream_prev[i]]++] = i;
        for (guint j = 0; j < nd; j++)
            g->succs[pos[d[j]]++] = i;
        if (g->gate[i] != SSIM_NONE)
            g->succs[pos[g->gate[i]]++] = i;
    }

    /* Every edge from a lower op index to a higher one (the stream order and the barrier gates
     * always are; the dependencies are when `backward`) cannot close a cycle.  Otherwise Kahn's
     * algorithm proves the edge relation acyclic. */
    if (!backward && !graph_acyclic(g, error))
        return FALSE;

    if (!graph_finalize_programs(g, error) || !graph_build_matches(g, error))
        return FALSE;
    g->finalized = TRUE;
    return TRUE;
}
