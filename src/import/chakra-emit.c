/*
 * From one trace's records to graph ops (see chakra-private.h for the pipeline).
 *
 * chakra_order_trace() orders the records topologically with Kahn's algorithm, taking the
 * smallest id among ready nodes as Chakra's feeder issues them, and names a cycle when some
 * nodes are never ready; it reads only the trace, so it runs on the worker that decoded it.
 * chakra_emit_trace() then adds the ops to the graph in that order, so that stream order (issue
 * order) never contradicts a dependency and the graph's "collectives match by their order within
 * the group" rule sees each rank's issue order.  It runs on the loading thread, rank after rank.
 *
 * Emission first walks the records in file order creating what the sequential importer created
 * while decoding (the streams that stream attributes name, the interned node names, the
 * all-ranks group), so string, stream and group numbers are those of a decode-and-add loader.
 *
 * Elided nodes (metadata and the types shiftsim cannot model) never become ops; a node that
 * depends on one inherits its dependencies instead (transitively), so elision never loosens the
 * order.
 *
 * Invariant: every op's dependencies are ops of the same rank added before it, so the graph's
 * own checks (finalize) can only fail on cross-rank matching.
 */
#include "src/core/heap.h"
#include "src/import/chakra-private.h"

#include <string.h>

/* Kahn's ready set: a min-heap of local node indices keyed by node id, which chakra-read.c has
 * checked unique within a trace, so the order is strict (src/core/heap.h). */
static inline gboolean id_less(const Rec *recs, const guint32 *x, const guint32 *y)
{
    return recs[*x].id < recs[*y].id;
}

SSIM_HEAP_DEFINE(ReadyHeap, ready_heap, guint32, const Rec *, id_less, SSIM_HEAP_NO_POS)

typedef struct {
    guint32 *v;
    guint n, cap;
} U32Vec;

static inline void u32vec_push(U32Vec *a, guint32 x)
{
    if (G_UNLIKELY(a->n == a->cap))
        chakra_vec_grow((gpointer *)&a->v, &a->cap, sizeof *a->v);
    a->v[a->n++] = x;
}

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
                "%s: node %" G_GUINT64_FORMAT ": dependency cycle (each depends on the next): %s%s",
                t->path, recs[v].id, msg->str,
                t->has_ctrl ? " (the trace has control dependencies: --ctrl-deps ignore "
                              "replays the data dependencies alone)"
                            : "");
}

gboolean chakra_order_trace(Trace *t, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    t->order = g_new(guint32, MAX(n, 1));
    /* Ids increasing in file order and every dependency on an earlier node (what generators
     * write): the smallest unissued id is always ready, so the order is the file's. */
    gboolean file_order = t->ids_increasing;
    for (guint i = 0; i < n && file_order; i++)
        for (guint j = 0; j < recs[i].n_deps && file_order; j++)
            file_order = t->dep_local[recs[i].dep_first + j] < i;
    if (file_order) {
        for (guint i = 0; i < n; i++)
            t->order[i] = i;
        return TRUE;
    }
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
        t->order[k++] = v;
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
    /* (A node replayed by its duration, r->timed, has read no group or peer.) */
    gboolean per_group =
        L->opts.stream_per_group && !r->timed && (r->map == MAP_COLL || r->map == MAP_BARRIER);
    gboolean per_peer =
        L->opts.stream_per_peer && !r->timed && (r->map == MAP_SEND || r->map == MAP_RECV);
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

/* In file order, what decoding created in a sequential loader: the streams that stream
 * attributes name, the interned node names, the all-ranks group. */
static gboolean create_named(Loader *L, Trace *t, GError **error)
{
    Rec *recs = (Rec *)(void *)t->recs->data;
    const char *strs = (const char *)t->strs->data;
    guint n_last = L->last_names->len;
    if (t->recs->len > n_last)
        g_array_set_size(L->last_names, t->recs->len);
    guint32 *last = (guint32 *)(void *)L->last_names->data;
    for (guint i = 0; i < t->recs->len; i++) {
        Rec *r = &recs[i];
        if (r->stream_str != SSIM_NONE)
            r->stream = ssim_graph_stream(L->graph, t->rank, strs + r->stream_str);
        if (r->name_str != SSIM_NONE) {
            /* The id interning would give: the same string has one id. */
            const char *name = strs + r->name_str;
            gboolean same = i < n_last && last[i] != SSIM_NONE &&
                            strcmp(ssim_graph_string(L->graph, last[i]), name) == 0;
            r->name = same ? last[i] : ssim_graph_intern(L->graph, name);
        }
        last[i] = r->name_str != SSIM_NONE ? r->name : SSIM_NONE;
        if (r->group == GROUP_WORLD) {
            if (L->world == SSIM_NONE) {
                g_autofree guint32 *all = g_new(guint32, L->n_ranks);
                for (guint k = 0; k < L->n_ranks; k++)
                    all[k] = k;
                L->world = ssim_graph_add_group(L->graph, "world", all, L->n_ranks, error);
                if (L->world == SSIM_NONE)
                    return FALSE;
                L->stats->n_groups++;
            }
            r->group = L->world;
        }
    }
    return TRUE;
}

gboolean chakra_emit_trace(Loader *L, Trace *t, GError **error)
{
    if (!create_named(L, t, error))
        return FALSE;
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    const guint32 *order = t->order;

    /* op[v]: the graph op of node v, or SSIM_NONE when elided; fwd: an elided node's inherited
     * dependencies (local indices of non-elided nodes); eff: this node's effective
     * dependencies, deps: the same as graph ops. */
    g_autofree guint32 *op = g_new(guint32, MAX(n, 1));
    g_autofree guint32 *fwd_first = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *fwd_n = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *stamp = g_new0(guint32, MAX(n, 1));
    g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(guint32));
    U32Vec eff = {0}, deps = {0};

    for (guint k = 0; k < n; k++) {
        guint32 v = order[k];
        const Rec *r = &recs[v];
        eff.n = 0;
        for (guint j = 0; j < r->n_deps; j++) {
            guint32 d = t->dep_local[r->dep_first + j];
            if (op[d] != SSIM_NONE) {
                if (stamp[d] != k + 1) {
                    stamp[d] = k + 1;
                    u32vec_push(&eff, d);
                }
                continue;
            }
            for (guint i = 0; i < fwd_n[d]; i++) {
                guint32 e = g_array_index(fwd, guint32, fwd_first[d] + i);
                if (stamp[e] != k + 1) {
                    stamp[e] = k + 1;
                    u32vec_push(&eff, e);
                }
            }
        }
        if (r->map == MAP_ELIDE && !r->timed && !L->opts.keep_node_ids) {
            op[v] = SSIM_NONE;
            fwd_first[v] = fwd->len;
            fwd_n[v] = eff.n;
            g_array_append_vals(fwd, eff.v, eff.n);
            continue;
        }
        deps.n = 0;
        for (guint i = 0; i < eff.n; i++)
            u32vec_push(&deps, op[eff.v[i]]);

        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.stream =
            r->stream != SSIM_NONE || r->map == MAP_ELIDE ? r->stream : default_stream(L, t, r);
        spec.duration = r->duration;
        spec.bytes = r->bytes;
        spec.flops = r->flops;
        spec.tag = r->tag;
        guint32 cls = 0;
        switch (r->map) {
        case MAP_COMPUTE:
            spec.kind = SSIM_OP_COMPUTE;
            cls = r->cpu ? L->cls_cpu : L->cls_comp;
            break;
        case MAP_MEM:
            spec.kind = SSIM_OP_COMPUTE;
            cls = L->cls_mem;
            break;
        case MAP_COLL:
        case MAP_BARRIER:
            spec.kind = r->map == MAP_COLL ? SSIM_OP_COLLECTIVE : SSIM_OP_BARRIER;
            spec.coll = (SsimCollKind)r->coll;
            spec.group = r->group;
            /* -1 (priced), but for a broadcast read under astra_rules: its trace duration */
            spec.duration = r->duration;
            cls = L->cls_coll;
            break;
        case MAP_SEND:
        case MAP_RECV:
            spec.kind = r->map == MAP_SEND ? SSIM_OP_SEND : SSIM_OP_RECV;
            spec.peer = r->peer;
            spec.duration = -1;
            cls = L->cls_p2p;
            break;
        case MAP_ELIDE:
            /* Kept (keep_node_ids) for replays whose rules follow every node: a zero-time op
             * of class "chakra:<TYPE>" (with is_cpu_op "chakra:<TYPE>:cpu") on the rank's
             * "elided" stream. */
            spec.kind = SSIM_OP_COMPUTE;
            spec.duration = 0;
            spec.bytes = 0;
            spec.flops = 0;
            spec.stream = ssim_graph_stream(L->graph, t->rank, "elided");
            cls = L->cls_type[r->cpu][r->type < SSIM_CHAKRA_N_NODE_TYPES ? r->type : 0];
            break;
        default:
            g_assert_not_reached();
        }
        if (r->timed) {
            /* astra_replay_only: whatever its type, a wait of the node's duration on its type's
             * stream, of a class that names the slot it holds (cpu, comp or its type). */
            spec.kind = SSIM_OP_COMPUTE;
            spec.duration = r->duration;
            cls = r->cpu                                              ? L->cls_cpu
                  : r->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE ? L->cls_comp
                                                                      : L->cls_type[0][r->type];
        }
        op[v] = ssim_graph_add_op_ids(L->graph, &spec, r->name, cls, deps.v, deps.n);
        if (L->opts.keep_node_ids) {
            if (!L->stats->node_ids)
                L->stats->node_ids = g_array_new(FALSE, FALSE, sizeof(guint64));
            g_array_append_val(L->stats->node_ids, r->id);
            if (t->colls) {
                if (!L->stats->colls)
                    L->stats->colls = g_array_new(FALSE, FALSE, sizeof(SsimCollAttrs));
                g_array_append_val(L->stats->colls, g_array_index(t->colls, SsimCollAttrs, v));
            }
        }
        L->stats->n_ops++;
        L->stats->n_deps += deps.n;
    }
    g_free(eff.v);
    g_free(deps.v);
    return TRUE;
}
