/*
 * Ranks: which GPUs the lowering emits, what each emitted rank stands for, and how its copies
 * are replicated (include/shiftsim/lower.h, "Ranks").
 *
 * Three maps, all fixed before any op is emitted: graph rank -> global rank (global_of) and
 * -> pipeline stage (stage_of), and global rank -> graph rank (graph_of, SSIM_NONE for a GPU a
 * representative stands for).  Exact mode emits every GPU (graph rank = global rank); the
 * default emits the GPU at dp 0, tp 0 of each stage, and under context parallelism the cp GPUs
 * of the first replica at tp 0 (graph rank stage x cp + cp rank), whose key-value ring is then
 * simulated between real ranks.  A group of the plan holds the emitted
 * members of a logical group (a TP, DP, pipeline or embedding group), while the lowering keeps
 * the whole logical membership beside it (group_first / group_ranks, one row per plan group, in
 * the plan's group order), so that a cost model charges a one-member group as the real
 * collective and the replication below gathers the right copies.
 *
 * Replication.  Copy c of a representative GPU is the GPU whose tp coordinate and replica (its
 * dp coordinate / cp) are shifted by (c mod tp, c / tp), its cp rank kept; a collective instance of
 * the representative graph then stands for the copies its logical group holds, which repeat with
 * the least tp and dp shifts that map the group onto itself (its periods).  A match whose members'
 * copies do not make up its logical group exactly is refused: some GPU would be simulated twice or
 * not at all.
 */
#include "src/workload/lower-private.h"

#include <stdlib.h>
#include <string.h>

/* ---- the rank maps ----------------------------------------------------------------------- */

GArray *lower_ranks_init(SsimLowered *L, const SsimParallel *par, gboolean exact)
{
    L->exact = exact;
    L->weight = exact ? 1 : par->tp * par->dp;
    L->par = *par;
    L->global_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->stage_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->group_first = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->group_ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 zero = 0;
    g_array_append_val(L->group_first, zero);

    guint world = ssim_parallel_world(par);
    GArray *graph_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_array_set_size(graph_of, world);
    for (guint r = 0; r < world; r++)
        g_array_index(graph_of, guint32, r) = SSIM_NONE;
    if (exact) {
        for (guint32 r = 0; r < world; r++) {
            guint32 st = ssim_parallel_coord(par, r).pp;
            g_array_append_val(L->global_of, r);
            g_array_append_val(L->stage_of, st);
            g_array_index(graph_of, guint32, r) = r;
        }
    } else {
        for (guint32 s = 0; s < par->pp; s++)
            for (guint32 j = 0; j < par->cp; j++) {
                guint32 r = ssim_parallel_rank(par, (SsimCoord){.dp = j, .tp = 0, .pp = s});
                g_array_index(graph_of, guint32, r) = L->global_of->len;
                g_array_append_val(L->global_of, r);
                g_array_append_val(L->stage_of, s);
            }
    }
    return graph_of;
}

guint32 lower_group(SsimLowered *L, const GArray *graph_of, const char *prefix,
                    const guint *logical, guint n, GError **error)
{
    char name[64];
    guint lo = logical[0];
    for (guint i = 1; i < n; i++)
        lo = MIN(lo, logical[i]);
    g_snprintf(name, sizeof name, "%s.%u", prefix, lo);
    guint32 gi = ssim_plan_find_group(L->plan, name);
    if (gi != SSIM_NONE)
        return gi;
    g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint i = 0; i < n; i++) {
        guint32 gr = g_array_index(graph_of, guint32, logical[i]);
        if (gr != SSIM_NONE)
            g_array_append_val(members, gr);
    }
    gi = ssim_plan_add_group(L->plan, name, (const guint32 *)members->data, members->len, error);
    if (gi == SSIM_NONE)
        return SSIM_NONE;
    GArray *first = L->group_first;
    g_assert(gi + 1 == first->len);
    g_array_append_vals(L->group_ranks, logical, n);
    guint32 end = L->group_ranks->len;
    g_array_append_val(first, end);
    return gi;
}

guint32 ssim_lowered_global_rank(const SsimLowered *l, guint32 rank)
{
    g_return_val_if_fail(rank < l->global_of->len, SSIM_NONE);
    return g_array_index(l->global_of, guint32, rank);
}

const guint32 *ssim_lowered_rank_map(const SsimLowered *l, guint *n)
{
    *n = l->global_of->len;
    return (const guint32 *)l->global_of->data;
}

guint ssim_lowered_stage(const SsimLowered *l, guint32 rank)
{
    g_return_val_if_fail(rank < l->stage_of->len, 0);
    return g_array_index(l->stage_of, guint32, rank);
}

const guint32 *ssim_lowered_group_ranks(const SsimLowered *l, guint32 group, guint *n)
{
    *n = 0;
    g_return_val_if_fail(group + 1 < l->group_first->len, NULL);
    guint32 a = g_array_index(l->group_first, guint32, group);
    guint32 b = g_array_index(l->group_first, guint32, group + 1);
    *n = b - a;
    return &g_array_index(l->group_ranks, guint32, a);
}

/* ---- replication ------------------------------------------------------------------------ */

guint32 ssim_lowered_copy_gpu(const SsimLowered *l, guint32 gpu, guint copy)
{
    g_return_val_if_fail(gpu < ssim_parallel_world(&l->par), SSIM_NONE);
    SsimCoord c = ssim_parallel_coord(&l->par, gpu);
    c.tp = (c.tp + copy % l->par.tp) % l->par.tp;
    guint cp = l->par.cp, replica = c.dp / cp;
    c.dp = (replica + copy / l->par.tp) % l->par.dp * cp + c.dp % cp;
    return ssim_parallel_rank(&l->par, c);
}

/* Sorts `a` and drops repeats; returns the new length. */
static guint sort_unique(guint32 *a, guint n)
{
    qsort(a, n, sizeof *a, ssim_cmp_u32);
    guint w = 0;
    for (guint i = 0; i < n; i++)
        if (w == 0 || a[i] != a[w - 1])
            a[w++] = a[i];
    return w;
}

/* TRUE when copy `copy` of every GPU of `set` (sorted, n) is in it again. */
static gboolean shift_keeps(const SsimLowered *l, const guint32 *set, guint n, guint copy,
                            guint32 *scratch)
{
    for (guint i = 0; i < n; i++)
        scratch[i] = ssim_lowered_copy_gpu(l, set[i], copy);
    qsort(scratch, n, sizeof *scratch, ssim_cmp_u32);
    return memcmp(scratch, set, n * sizeof *set) == 0;
}

/*
 * The periods of match `m` (its logical GPUs `set`, sorted, n): the least tp and dp shifts that
 * map the set onto itself; FALSE when the copies of its members do not make up the set exactly
 * (then some GPU of it would not be simulated, or one twice).
 */
static gboolean match_periods(const SsimLowered *l, guint32 m, guint32 *set, guint n,
                              guint32 period[2])
{
    const SsimGraph *g = l->graph;
    guint tp = l->par.tp, dp = l->par.dp;
    g_autofree guint32 *scratch = g_new(guint32, MAX(n, 1));
    period[0] = tp;
    period[1] = dp;
    for (guint d = 1; d < tp; d++)
        if (tp % d == 0 && shift_keeps(l, set, n, d, scratch)) {
            period[0] = d;
            break;
        }
    for (guint d = 1; d < dp; d++)
        if (dp % d == 0 && shift_keeps(l, set, n, d * tp, scratch)) {
            period[1] = d;
            break;
        }
    guint n_members, expected;
    const guint32 *members = ssim_graph_match_ops(g, m, &n_members, &expected);
    guint per = (tp / period[0]) * (dp / period[1]);
    if ((guint64)n_members * per != n)
        return FALSE;
    g_autofree guint32 *covered = g_new(guint32, MAX(n, 1));
    guint k = 0;
    for (guint j = 0; j < n_members; j++) {
        if (members[j] == SSIM_NONE)
            return FALSE;
        guint32 gpu = ssim_lowered_global_rank(l, ssim_graph_op(g, members[j])->rank);
        for (guint a = 0; a < tp; a += period[0])
            for (guint b = 0; b < dp; b += period[1])
                covered[k++] = ssim_lowered_copy_gpu(l, gpu, a + b * tp);
    }
    return sort_unique(covered, k) == n && memcmp(covered, set, n * sizeof *set) == 0;
}

guint32 *ssim_lowered_replication(const SsimLowered *l, SsimReplication *out, GError **error)
{
    const SsimGraph *g = l->graph;
    guint32 nm = ssim_graph_n_matches(g), ng = ssim_graph_n_groups(g);
    guint32 *period = g_new(guint32, 2 * (gsize)MAX(nm, 1));
    g_autofree guint32 *group_period = g_new0(guint32, 2 * (gsize)MAX(ng, 1));
    for (guint32 m = 0; m < nm; m++) {
        guint n_members, expected;
        const guint32 *members = ssim_graph_match_ops(g, m, &n_members, &expected);
        const SsimOp *op = ssim_graph_op(g, members[0]);
        gboolean p2p = op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV;
        if (!p2p && group_period[2 * op->group] != 0) {
            period[2 * m] = group_period[2 * op->group];
            period[2 * m + 1] = group_period[2 * op->group + 1];
            continue;
        }
        guint n;
        guint32 pair[2];
        const guint32 *logical = pair;
        if (p2p) {
            n = 0;
            for (guint j = 0; j < n_members; j++)
                if (members[j] != SSIM_NONE)
                    pair[n++] = ssim_lowered_global_rank(l, ssim_graph_op(g, members[j])->rank);
        } else {
            logical = ssim_lowered_group_ranks(l, op->group, &n);
        }
        g_autofree guint32 *set = g_memdup2(logical, sizeof(guint32) * MAX(n, 1));
        n = sort_unique(set, n);
        if (!match_periods(l, m, set, n, &period[2 * m])) {
            char label[128];
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "exact: %s on rank %u is not the same program on every GPU it stands "
                        "for, so it cannot be replicated (use the explicit exact graph)",
                        ssim_graph_op_label(g, members[0], label, sizeof label), op->rank);
            g_free(period);
            return NULL;
        }
        if (!p2p) {
            group_period[2 * op->group] = period[2 * m];
            group_period[2 * op->group + 1] = period[2 * m + 1];
        }
    }
    *out = (SsimReplication){.n_copies = l->weight, .stride = l->par.tp, .period = period};
    return period;
}
