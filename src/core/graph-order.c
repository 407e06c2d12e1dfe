/*
 * A causal issue order (include/shiftsim/graph.h, ssim_graph_issue_causally()): the ops of a
 * finalized graph reordered into one order that every rank could have issued together, so that
 * no stream issues an op that waits for another rank ahead of one that rank is waiting for.
 *
 * Kahn's algorithm over units: a unit is a match (a collective or a send with its receive: all
 * its members at once, as the runtime starts them together) or a single op outside every match.
 * A unit is ready once every dependency of every member is placed.  A first pass (in the ranks'
 * own order) gives each unit its hops, the send/receive pairs on the longest dependency path to
 * it; the second places next the ready unit with the fewest hops, then the smallest (position of
 * a member among its rank's ops, rank), its members in index order: the ranks advance together,
 * each in its old order as far as it can go, and an op that needs more pipeline transfers before
 * it (a stage's backward, which waits for every later stage) comes after those that need fewer
 * (the next microbatch's forward).  The order is a topological order of the dependencies in
 * which each match's members are adjacent, so replayed with the streams in this order the graph
 * cannot deadlock through the order alone: the order itself is an execution in which each op
 * finds its stream predecessors done.
 *
 * Invariants: a match's members keep their relative order on each rank (a pair placed before
 * another is placed before it on both ranks), so the matching finalize makes again, by tags and
 * by the k-th of a repeated tag, is the same; every dependency points to an earlier op after it.
 */
#include "src/core/graph-private.h"
#include "src/core/heap.h"

#include <shiftsim/alloc.h>
#include <string.h>

/* The units' priorities: hops (send/receive pairs on the longest dependency path to the unit,
 * written as the first pass places it, so 0 for every unit still waiting then), then (position
 * among its rank's ops, rank) of its first member.  No two ops share a position and a rank, so
 * two units never compare equal. */
typedef struct {
    const guint32 *hops;
    const guint64 *pos;
} Prio;

static inline gboolean unit_less(const Prio *p, const guint32 *a, const guint32 *b)
{
    if (p->hops[*a] != p->hops[*b])
        return p->hops[*a] < p->hops[*b];
    return p->pos[*a] < p->pos[*b];
}
#define UNIT_LESS(ctx, a, b) unit_less((ctx), (a), (b))
SSIM_HEAP_DEFINE(UnitHeap, unit_heap, guint32, const Prio *, UNIT_LESS, SSIM_HEAP_NO_POS)

/* The graph's units and their dependency successors, for place(). */
typedef struct {
    const SsimGraph *g;
    guint32 n, n_units;
    const guint32 *succ_first, *succs; /* by dependency alone, not stream order */
    const guint32 *n_left;             /* per unit: members with a dependency */
    Prio prio;
} Units;

static inline guint32 unit_of(const Units *U, guint32 i)
{
    guint32 m = ssim_graph_op(U->g, i)->match;
    return m != SSIM_NONE ? m : U->g->n_matches + i;
}

/* Kahn's algorithm over the units by U->prio: fills order[] (ops placed, the rest after them in
 * index order) and, when hops is not NULL (U->prio.hops, all 0), each unit's hops as it places
 * it: the units still waiting keep 0, so this pass orders by position alone. */
static void place(const Units *U, guint32 *order, guint32 *hops)
{
    const SsimGraph *g = U->g;
    guint32 n = U->n;
    g_autofree guint32 *left = ssim_memdup_large(U->n_left, MAX(U->n_units, 1) * sizeof(guint32));
    g_autofree guint32 *dep_left = ssim_new_large(guint32, MAX(n, 1));
    g_autofree guint8 *placed = ssim_new0_large(guint8, MAX(n, 1));
    for (guint32 i = 0; i < n; i++)
        dep_left[i] = ssim_graph_op(g, i)->n_deps;
    g_auto(UnitHeap) ready = {0};
    for (guint32 u = 0; u < U->n_units; u++)
        if (left[u] == 0 && U->prio.pos[u] != G_MAXUINT64)
            unit_heap_push(&ready, u, &U->prio);
    guint32 k = 0;
    while (ready.n > 0) {
        guint32 u = unit_heap_pop(&ready, &U->prio);
        guint32 one = u - g->n_matches;
        const guint32 *members = &one;
        guint n_members = 1, expected;
        if (u < g->n_matches)
            members = ssim_graph_match_ops(g, u, &n_members, &expected);
        if (hops) {
            guint32 h = 0;
            for (guint m = 0; m < n_members; m++) {
                if (members[m] == SSIM_NONE)
                    continue;
                guint nd;
                const guint32 *d = ssim_graph_deps(g, members[m], &nd);
                for (guint j = 0; j < nd; j++)
                    h = MAX(h, hops[unit_of(U, d[j])]);
            }
            hops[u] = h + (u < g->n_matches && g->match_kind[u] == MATCH_P2P);
        }
        for (guint m = 0; m < n_members; m++) {
            guint32 i = members[m];
            if (i == SSIM_NONE) /* a send or a receive without its other half */
                continue;
            order[k++] = i;
            placed[i] = TRUE;
            for (guint32 s = U->succ_first[i]; s < U->succ_first[i + 1]; s++) {
                guint32 j = U->succs[s];
                if (--dep_left[j] > 0)
                    continue;
                guint32 uj = unit_of(U, j);
                if (--left[uj] == 0)
                    unit_heap_push(&ready, uj, &U->prio);
            }
        }
    }
    /* What waits on a match that can never complete (a member another rank never issues) keeps
     * its place after the rest, for the replay to report. */
    for (guint32 i = 0; i < n && k < n; i++)
        if (!placed[i])
            order[k++] = i;
}

/* Rewrites the ops and their dependencies in `order` (order[k]: the old index of the op now at
 * k); the graph is no longer finalized.  Only for a graph without programs (op_program NULL). */
static void permute(SsimGraph *g, const guint32 *order)
{
    guint32 n = g->ops->len;
    gsize n_deps = g->deps->len;
    g_autofree guint32 *inv = ssim_new_large(guint32, MAX(n, 1));
    for (guint32 k = 0; k < n; k++)
        inv[order[k]] = k;
    g_autofree SsimOp *ops = ssim_memdup_large(g->ops->data, (gsize)n * sizeof(SsimOp));
    g_autofree guint32 *deps = ssim_memdup_large(g->deps->data, MAX(n_deps, 1) * sizeof(guint32));
    g_autofree guint32 *first = ssim_memdup_large(g->dep_first->data, (gsize)n * sizeof(guint32));
    SsimOp *out = (SsimOp *)(void *)g->ops->data;
    guint32 *out_deps = (guint32 *)(void *)g->deps->data;
    guint32 *out_first = (guint32 *)(void *)g->dep_first->data;
    gsize pos = 0;
    for (guint32 k = 0; k < n; k++) {
        guint32 i = order[k];
        out[k] = ops[i];
        out[k].match = SSIM_NONE;
        out_first[k] = (guint32)pos;
        for (guint j = 0; j < ops[i].n_deps; j++)
            out_deps[pos++] = inv[deps[first[i] + j]];
    }
    graph_clear_finalized(g);
}

gboolean ssim_graph_issue_causally(SsimGraph *g, guint32 *n_moved, GError **error)
{
    g_return_val_if_fail(g->finalized, FALSE);
    *n_moved = 0;
    guint32 n = g->ops->len;
    /* A barrier gates the ops its rank issues after it, and a program runs in its place: both
     * are orders of their own, which a reorder would change. */
    if (g->prog_rank->len > 0)
        return TRUE;
    for (guint32 i = 0; i < n; i++)
        if (ssim_graph_op(g, i)->kind == SSIM_OP_BARRIER)
            return TRUE;

    /* Units: match m is unit m; an op outside every match is unit n_matches + its index. */
    guint32 n_units = g->n_matches + n;
    g_autofree guint32 *n_left = ssim_new0_large(guint32, MAX(n_units, 1));
    g_autofree guint64 *pos = ssim_new_large(guint64, MAX(n_units, 1));
    g_autofree guint32 *hops = ssim_new0_large(guint32, MAX(n_units, 1));
    g_autofree guint32 *at = ssim_new0_large(guint32, MAX(g->n_ranks, 1));
    g_autofree guint32 *succ_first = ssim_new0_large(guint32, (gsize)n + 1);
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint j = 0; j < nd; j++)
            succ_first[d[j] + 1]++;
    }
    for (guint32 i = 0; i < n; i++)
        succ_first[i + 1] += succ_first[i];
    g_autofree guint32 *succs = ssim_new_large(guint32, MAX(succ_first[n], 1));
    g_autofree guint32 *fill = ssim_memdup_large(succ_first, MAX(n, 1) * sizeof(guint32));
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint j = 0; j < nd; j++)
            succs[fill[d[j]]++] = i;
    }
    Units U = {g, n, n_units, succ_first, succs, n_left, {hops, pos}};
    for (guint32 u = 0; u < n_units; u++)
        pos[u] = G_MAXUINT64;
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        guint32 u = unit_of(&U, i);
        pos[u] = MIN(pos[u], (guint64)at[o->rank]++ << 32 | o->rank);
        n_left[u] += o->n_deps > 0;
    }
    /* First the hops of every unit (in the ranks' own order), then the order by hops: an op that
     * needs more pipeline transfers to happen first comes after those that need fewer. */
    g_autofree guint32 *order = ssim_new_large(guint32, MAX(n, 1));
    place(&U, order, hops);
    place(&U, order, NULL);

    /* Only the order within each stream matters: leave the graph alone when no stream's
     * changes (the common case of a trace issued in a causal order already). */
    g_autofree guint32 *last = ssim_new_large(guint32, MAX(g->stream_rank->len, 1));
    memset(last, 0xff, sizeof(guint32) * MAX(g->stream_rank->len, 1));
    guint32 moved = 0;
    for (guint32 k2 = 0; k2 < n; k2++) {
        guint32 i = order[k2];
        guint32 s = ssim_graph_op(g, i)->stream;
        if (last[s] != g->stream_prev[i])
            moved++;
        last[s] = i;
    }
    if (moved == 0)
        return TRUE;
    permute(g, order);
    *n_moved = moved;
    return ssim_graph_finalize(g, error);
}
