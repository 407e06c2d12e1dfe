/*
 * Slowdown from contention: how much longer each communication class took through the flow
 * network than its ops would have alone on it (definitions in include/shiftsim/sim.h).
 *
 * The network records, per match, the time the match would take alone (ssim_net_uncontended());
 * the timeline has what it took.  Every member op of a match (each rank of a collective, both
 * ends of a send/receive pair) is charged the difference, so the sums are per-rank views like
 * the exposed and busy figures, and are reported as means over the graph's ranks.  The
 * difference is never negative for a run of one collective at a time: sharing links only takes
 * capacity away (the runtime charges no other cost to a communication op).
 */
#include <shiftsim/sim.h>

#include <string.h>

/* The communication class of op `i`, or SSIM_COMM_N for others. */
typedef guint (*ClassOf)(gconstpointer data, const SsimGraph *graph, guint32 i);

static guint class_from_label(gconstpointer data, const SsimGraph *graph, guint32 i)
{
    (void)data;
    const char *label = ssim_graph_string(graph, ssim_graph_op(graph, i)->cls);
    for (guint c = 0; label != NULL && c < SSIM_COMM_N; c++)
        if (strcmp(label, ssim_comm_class_name((SsimCommClass)c)) == 0)
            return c;
    return SSIM_COMM_N;
}

static guint class_from_lowering(gconstpointer data, const SsimGraph *graph, guint32 i)
{
    (void)graph;
    switch (ssim_lowered_op_class(data, i)) {
    case SSIM_OPCLASS_TP:
    case SSIM_OPCLASS_CP:
        return SSIM_COMM_TP;
    case SSIM_OPCLASS_PP:
        return SSIM_COMM_PP;
    case SSIM_OPCLASS_DP:
        return SSIM_COMM_DP;
    default:
        return SSIM_COMM_N;
    }
}

/* With `rep` (a replicated run, runtime.h), `unc` is per instance and every copy of an op is
 * charged its instance's figure; `per_op` then has an entry per op copy (timeline order:
 * i * n_copies + c). */
static void sum_contention(const SsimGraph *g, const SsimTimeline *tl, const SsimTime *unc,
                           guint n_matches, const SsimReplication *rep, ClassOf class_of,
                           gconstpointer data, SsimTime extra[SSIM_COMM_N],
                           SsimTime alone[SSIM_COMM_N], GArray *per_op)
{
    guint32 n_ops = ssim_graph_n_ops(g);
    guint copies = rep != NULL && rep->n_copies > 1 ? rep->n_copies : 1;
    g_autofree guint32 *first = NULL;
    if (copies > 1) {
        first = g_new(guint32, MAX(ssim_graph_n_matches(g), 1));
        ssim_replication_instances(rep, ssim_graph_n_matches(g), first);
    }
    memset(extra, 0, SSIM_COMM_N * sizeof *extra);
    memset(alone, 0, SSIM_COMM_N * sizeof *alone);
    if (per_op != NULL) {
        g_array_set_size(per_op, (gsize)n_ops * copies);
        for (gsize x = 0; x < (gsize)n_ops * copies; x++)
            g_array_index(per_op, SsimTime, x) = -1;
    }
    for (guint32 i = 0; i < n_ops && unc != NULL; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->kind == SSIM_OP_COMPUTE || op->kind == SSIM_OP_BARRIER || op->match == SSIM_NONE)
            continue;
        guint c = class_of(data, g, i);
        for (guint k = 0; k < copies; k++) {
            guint32 slot = ssim_replication_instance(rep, first, op->match, k);
            if (slot >= n_matches)
                continue;
            gsize x = (gsize)i * copies + k;
            SsimTime u = unc[slot];
            if (per_op != NULL)
                g_array_index(per_op, SsimTime, x) = u;
            if (c >= SSIM_COMM_N)
                continue;
            extra[c] += tl->end[x] - tl->start[x] - u;
            alone[c] += u;
        }
    }
}

void ssim_contention_sum(const SsimGraph *graph, const SsimTimeline *timeline,
                         const SsimTime *uncontended, guint n_matches, SsimTime extra[SSIM_COMM_N],
                         SsimTime alone[SSIM_COMM_N], GArray *per_op)
{
    sum_contention(graph, timeline, uncontended, n_matches, NULL, class_from_label, NULL, extra,
                   alone, per_op);
}

void ssim_result_measure_contention(SsimResult *r, const SsimLowered *lowered,
                                    const SsimTimeline *tl, const SsimReplication *replication,
                                    const SsimTime *uncontended, guint n_matches, GArray *per_op)
{
    guint nr = 0;
    ssim_lowered_rank_map(lowered, &nr);
    if (replication != NULL && replication->n_copies > 1)
        nr *= replication->n_copies;
    SsimTime extra[SSIM_COMM_N], alone[SSIM_COMM_N];
    sum_contention(ssim_lowered_graph(lowered), tl, uncontended, n_matches, replication,
                   class_from_lowering, lowered, extra, alone, per_op);
    r->has_contention = TRUE;
    for (guint c = 0; c < SSIM_COMM_N; c++) {
        r->contention[c] = nr ? extra[c] / (SsimTime)nr : 0;
        r->uncontended[c] = nr ? alone[c] / (SsimTime)nr : 0;
    }
}
