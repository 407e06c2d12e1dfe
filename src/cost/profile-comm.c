/*
 * Profile lookup of collectives (include/shiftsim/profile.h): a measured curve of the same layout,
 * an intra-node rank count interpolated in bus bandwidth, or a measured curve of another layout
 * carried through the network model.
 */
#include "src/cost/profile-index-private.h"

#include <math.h>
#include <string.h>

/* ---- Collectives ------------------------------------------------------------------------- */

double ssim_profile_bus_factor(SsimProfileComm op, guint n)
{
    switch (op) {
    case SSIM_PCOMM_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case SSIM_PCOMM_ALLGATHER:
    case SSIM_PCOMM_REDUCESCATTER:
    case SSIM_PCOMM_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/*
 * The best curve set for (op, ranks, scope): curves with exactly `ranks` ranks and the nearest
 * ranks-per-node of the same scope; among them the same dtype if any; the same algo if asked and
 * present.  Evaluates each and keeps the fastest.  FALSE when no curve has those ranks.
 */
static gboolean comm_at_ranks(const ProfileIndex *ix, SsimProfileComm op, int dtype, double x,
                              guint ranks, guint rpn, const char *algo, double *t,
                              SsimCostSource *src)
{
    gboolean intra = rpn >= ranks;
    double best_rpn = INFINITY;
    gboolean dtype_seen = FALSE, algo_seen = FALSE;
    for (guint pass = 0; pass < 2; pass++) {
        gboolean found = FALSE;
        for (guint i = 0; i < ix->curves->len; i++) {
            const Curve *c = &g_array_index(ix->curves, Curve, i);
            if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || c->ranks != ranks ||
                (c->rpn >= c->ranks) != intra)
                continue;
            double d = fabs(log((double)c->rpn / (double)(rpn ? rpn : 1)));
            if (pass == 0) {
                if (d < best_rpn)
                    best_rpn = d;
                continue;
            }
            if (d != best_rpn)
                continue;
            if (dtype != SSIM_PROFILE_NO_DTYPE && c->dtype == dtype)
                dtype_seen = TRUE;
            if (algo && strcmp(c->algo, algo) == 0)
                algo_seen = TRUE;
            found = TRUE;
        }
        if (pass == 0 && isinf(best_rpn))
            return FALSE;
        if (pass == 1 && !found)
            return FALSE;
    }
    *t = INFINITY;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || c->ranks != ranks ||
            (c->rpn >= c->ranks) != intra ||
            fabs(log((double)c->rpn / (double)(rpn ? rpn : 1))) != best_rpn ||
            (dtype_seen && c->dtype != dtype) || (algo_seen && strcmp(c->algo, algo) != 0))
            continue;
        double ti;
        SsimCostSource si = profile_curve_eval(ix, c, x, &ti);
        /* Another ranks-per-node split of the same ranks is an interpolation at best. */
        if (c->rpn != rpn && si == SSIM_COST_EXACT)
            si = SSIM_COST_INTERPOLATED;
        if (ti < *t) {
            *t = ti;
            *src = si;
        }
    }
    return TRUE;
}

gboolean ssim_profile_comm_time(const SsimProfile *profile, SsimProfileComm op, int dtype,
                                guint64 bytes, guint ranks, guint ranks_per_node, const char *algo,
                                const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL && (unsigned)op < SSIM_PCOMM_N, FALSE);
    if (ranks_per_node == 0 || ranks_per_node > ranks)
        ranks_per_node = ranks;
    const ProfileIndex *ix = profile_index_get(profile);
    double x = bytes > 0 ? (double)bytes : 1.0;
    double t;
    SsimCostSource src = SSIM_COST_EXACT;
    if (ranks >= 1 && comm_at_ranks(ix, op, dtype, x, ranks, ranks_per_node, algo, &t, &src))
        return profile_finish(out, t, src);

    /* An unmeasured rank count: interpolate the bus bandwidth between the nearest measured
     * rank counts of the same scope (same ranks per node across nodes). */
    gboolean intra = ranks_per_node >= ranks;
    guint lo = 0, hi = G_MAXUINT;
    for (guint i = 0; ranks >= 2 && i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || c->ranks < 2 ||
            (c->rpn >= c->ranks) != intra || (!intra && c->rpn != ranks_per_node))
            continue;
        if (c->ranks < ranks && c->ranks > lo)
            lo = c->ranks;
        if (c->ranks > ranks && c->ranks < hi)
            hi = c->ranks;
    }
    double bw[2] = {0, 0};
    SsimCostSource s[2] = {SSIM_COST_EXACT, SSIM_COST_EXACT};
    guint nr[2] = {lo, hi};
    gboolean have[2] = {FALSE, FALSE};
    for (int side = 0; side < 2; side++) {
        if (nr[side] == 0 || nr[side] == G_MAXUINT)
            continue;
        guint rpn = intra ? nr[side] : ranks_per_node;
        double ti;
        if (comm_at_ranks(ix, op, dtype, x, nr[side], rpn, algo, &ti, &s[side])) {
            bw[side] = ssim_profile_bus_factor(op, nr[side]) * x / ti;
            have[side] = TRUE;
        }
    }
    if (have[0] || have[1]) {
        double b;
        SsimCostSource source;
        if (have[0] && have[1]) {
            double f = (double)(ranks - lo) / (double)(hi - lo);
            b = bw[0] + f * (bw[1] - bw[0]);
            source = MAX(SSIM_COST_INTERPOLATED, MAX(s[0], s[1]));
        } else {
            b = have[0] ? bw[0] : bw[1];
            source = SSIM_COST_EXTRAPOLATED;
        }
        return profile_finish(out, ssim_profile_bus_factor(op, ranks) * x / b, source);
    }

    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    guint nodes = (ranks + ranks_per_node - 1) / MAX(ranks_per_node, 1);
    SsimTime ta = op == SSIM_PCOMM_SENDRECV
                      ? ssim_analytic_p2p_time(fallback, bytes, nodes > 1)
                      : ssim_analytic_collective_time(fallback, (SsimCollKind)op, bytes, ranks,
                                                      nodes, ranks_per_node);
    return profile_analytical(out, fallback, ta);
}
