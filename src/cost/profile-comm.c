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

/* Does curve `c` (a comm curve) have the query's layout?  Intra-node: the same ranks, all on one
 * node.  Across nodes: the same ranks and ranks per node, and the same NICs per rank where both
 * record them. */
static gboolean same_layout(const Curve *c, guint ranks, guint rpn, double nics)
{
    if (c->ranks != ranks)
        return FALSE;
    if (rpn >= ranks)
        return c->rpn >= c->ranks;
    return c->rpn == rpn && (c->nics == 0 || nics == 0 || fabs(c->nics - nics) < 1e-9);
}

/*
 * The curves of `op` with the query's layout; among them the same dtype if any, the same algo if
 * asked and present.  Evaluates each at x and keeps the fastest (`used`, when not NULL, says
 * which).  FALSE when none has the layout.
 */
static gboolean comm_at_layout(const ProfileIndex *ix, SsimProfileComm op, int dtype, double x,
                               guint ranks, guint rpn, double nics, const char *algo, double *t,
                               SsimCostSource *src, const Curve **used)
{
    gboolean found = FALSE, dtype_seen = FALSE, algo_seen = FALSE;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || !same_layout(c, ranks, rpn, nics))
            continue;
        found = TRUE;
        dtype_seen = dtype_seen || (dtype != SSIM_PROFILE_NO_DTYPE && c->dtype == dtype);
        algo_seen = algo_seen || (algo && strcmp(c->algo, algo) == 0);
    }
    if (!found)
        return FALSE;
    *t = INFINITY;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || !same_layout(c, ranks, rpn, nics) ||
            (dtype_seen && c->dtype != dtype) || (algo_seen && strcmp(c->algo, algo) != 0))
            continue;
        double ti;
        SsimCostSource si = profile_curve_eval(ix, c, x, &ti);
        if (ti < *t) {
            *t = ti;
            *src = si;
            if (used)
                *used = c;
        }
    }
    return TRUE;
}

/* An intra-node rank count that was not measured: the bus bandwidth interpolated between the
 * nearest measured intra-node rank counts (nccl-tests' busbw is nearly flat over NVSwitch). */
static gboolean intra_by_busbw(const ProfileIndex *ix, SsimProfileComm op, int dtype, double x,
                               guint ranks, const char *algo, double *t, SsimCostSource *src)
{
    guint lo = 0, hi = G_MAXUINT;
    for (guint i = 0; ranks >= 2 && i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || c->ranks < 2 || c->rpn < c->ranks)
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
        double ti;
        if (nr[side] == 0 || nr[side] == G_MAXUINT ||
            !comm_at_layout(ix, op, dtype, x, nr[side], nr[side], 0, algo, &ti, &s[side], NULL))
            continue;
        bw[side] = ssim_profile_bus_factor(op, nr[side]) * x / ti;
        have[side] = TRUE;
    }
    if (!have[0] && !have[1])
        return FALSE;
    double b;
    if (have[0] && have[1]) {
        double f = (double)(ranks - lo) / (double)(hi - lo);
        b = bw[0] + f * (bw[1] - bw[0]);
        *src = MAX(SSIM_COST_INTERPOLATED, MAX(s[0], s[1]));
    } else {
        b = have[0] ? bw[0] : bw[1];
        *src = SSIM_COST_EXTRAPOLATED;
    }
    *t = ssim_profile_bus_factor(op, ranks) * x / b;
    return TRUE;
}

/* ---- Another layout, through the network model ------------------------------------------- */

/*
 * The network model's two levels: NVLink inside a node (latency per step, bus bandwidth per
 * rank) and the NICs between nodes (latency per step, bandwidth per NIC).  A collective's time
 * under them is the analytic model's closed form (analytic.h) with the inter-node bandwidth per
 * rank = per-NIC bandwidth x NICs per rank, in the form the cluster prices it in (Form).
 */
typedef struct {
    double a_nv, b_nv; /* s per step; bytes/s per rank */
    double a_ib, b_nic;
} Levels;

typedef struct {
    guint ranks, rpn;
    double nics;
} Layout;

/* The cluster's form of a collective (analytic.h): across nodes its NVLink SHARP and [network]
 * algorithm (NCCL's rings, its trees, the faster, or two levels), and the terms beside the
 * levels, its fixed cost per collective and, inside a node, its copy rate, so that a curve is
 * carried as the cluster's own closed form would price it; without a cluster, NCCL's own choice
 * on a switch without SHARP and no such terms. */
typedef struct {
    gboolean sharp;
    guint algorithm;
    double overhead; /* s */
    double copy_bw;  /* bytes/s (0: none) */
} Form;

static Form cluster_form(const SsimAnalyticParams *net)
{
    if (net == NULL)
        return (Form){FALSE, SSIM_NET_ALGO_AUTO, 0, 0};
    return (Form){net->nvlink_sharp, net->net_algorithm,
                  ssim_time_to_seconds(net->collective_overhead), net->collective_copy_bw};
}

/* model_time()'s scale: it keeps the closed forms' int64 nanoseconds far from overflow and from
 * rounding. */
#define TIME_SCALE 1e3

/* The model's time in seconds of `op` over `lay` for `bytes` (latencies and bandwidths of `l`;
 * a bandwidth of 0 stands for an infinitely fast level). */
static double model_time(SsimProfileComm op, double bytes, const Layout *lay, const Levels *l,
                         const Form *form)
{
    guint nodes = (lay->ranks + lay->rpn - 1) / MAX(lay->rpn, 1u);
    double nics = lay->nics > 0 ? lay->nics : 1.0;
    SsimAnalyticParams p = {
        .nvlink_bw = l->b_nv > 0 ? l->b_nv : 1e30,
        .nvlink_latency = ssim_time_from_seconds(l->a_nv * TIME_SCALE),
        .ib_bw = l->b_nic > 0 ? l->b_nic * nics : 1e30,
        .ib_latency = ssim_time_from_seconds(l->a_ib * TIME_SCALE),
        .gpus_per_node = MAX(lay->rpn, 1u),
        .nvlink_sharp = form->sharp,
        .net_algorithm = form->algorithm,
        .collective_overhead = ssim_time_from_seconds(form->overhead * TIME_SCALE),
        /* The copy's bytes scale with TIME_SCALE like the levels' bytes. */
        .collective_copy_bw = form->copy_bw,
    };
    /* Latencies and bytes scaled by TIME_SCALE keep the nanosecond rounding of the closed forms
     * a thousand times below the figures compared (the result is scaled back). */
    guint64 b = (guint64)(bytes * TIME_SCALE);
    SsimTime t =
        op == SSIM_PCOMM_SENDRECV
            ? ssim_analytic_p2p_time(&p, b, nodes > 1)
            : ssim_analytic_collective_time(&p, (SsimCollKind)op, b, lay->ranks, nodes, lay->rpn);
    return ssim_time_to_seconds(t) / TIME_SCALE;
}

/* Least-squares line t = a + b x through points [lo, hi) of `c` (us, bytes); one point: a = 0. */
static void curve_line(const ProfileIndex *ix, const Curve *c, gboolean small, double *a, double *b)
{
    const Point *p = &g_array_index(ix->points, Point, c->first);
    guint n = c->n, lo = 0, hi = n;
    if (small) {
        while (hi > 2 && p[hi - 1].x > 4 * p[0].x)
            hi--;
    } else {
        while (lo + 2 < n && p[lo].x < p[n - 1].x / 2)
            lo++;
    }
    if (hi - lo < 2) {
        *a = 0;
        *b = p[lo].t / p[lo].x;
        return;
    }
    double sx = 0, sy = 0, sxx = 0, sxy = 0, m = hi - lo;
    for (guint i = lo; i < hi; i++) {
        sx += p[i].x;
        sy += p[i].t;
        sxx += p[i].x * p[i].x;
        sxy += p[i].x * p[i].t;
    }
    double den = m * sxx - sx * sx;
    *b = den > 0 ? (m * sxy - sx * sy) / den : p[hi - 1].t / p[hi - 1].x;
    *a = (sy - *b * sx) / m;
}

/* Which level calibrate_level() solves for, and which part of the model's line. */
enum { SOLVE_NVLINK = 1, SOLVE_NIC = 2 };
enum { PART_LATENCY, PART_SLOPE, PART_AT };

/* Part `part` of the model with levels `l`: its line's latency (its time at 0 bytes with every
 * bandwidth infinite, s), its line's slope (its time per byte with every latency 0, s per
 * byte), or its whole time at `at` bytes (s). */
static double model_part(SsimProfileComm op, const Layout *lay, Levels l, const Form *form,
                         int part, double at)
{
    const double S = 1e9;
    if (part == PART_AT)
        return model_time(op, at, lay, &l, form);
    if (part == PART_LATENCY) {
        l.b_nv = l.b_nic = 0; /* infinitely fast */
        return model_time(op, 0, lay, &l, form);
    }
    l.a_nv = l.a_ib = 0;
    return model_time(op, S, lay, &l, form) / S;
}

/* The figure of level `solve` that gives part `part` of the model (at `at` bytes) the measured
 * `want`, the other level as it is in `l`: the latency for PART_LATENCY, else the bandwidth.  The
 * part grows with a latency and falls with a bandwidth, whatever the form (levels that add, or
 * rings bound by the slower), so a bisection finds it (in log bandwidth).  Where the other level
 * alone already gives at least `want` (noise, or a ring the other level binds), the level is
 * solved on its own, the other one infinitely fast; where the level does not enter the part at
 * all, it keeps its figure in `l`. */
static double solve_level(SsimProfileComm op, const Layout *lay, const Levels *l, const Form *form,
                          int solve, int part, double at, double want)
{
    Levels m = *l;
    double *v = solve == SOLVE_NIC ? (part == PART_LATENCY ? &m.a_ib : &m.b_nic)
                                   : (part == PART_LATENCY ? &m.a_nv : &m.b_nv);
    /* Latency: linear bisection on [0, 10 s]; bandwidth: log bisection on [1 kB/s, 1 PB/s]. */
    double lo = part == PART_LATENCY ? 0 : log(1e3), hi = part == PART_LATENCY ? 10 : log(1e15);
    double was = *v;
    *v = 0; /* no latency, or an infinite bandwidth: the other level's floor */
    double floor_part = model_part(op, lay, m, form, part, at);
    *v = part == PART_LATENCY ? hi : exp(lo); /* the slowest figure tried */
    if (!(model_part(op, lay, m, form, part, at) > floor_part))
        return was; /* the level is not in this part of the curve's line (one rank a node) */
    if (floor_part >= want * (1 - 1e-9)) {
        /* The other level alone: every figure of it at its infinitely fast one. */
        if (solve == SOLVE_NIC)
            m.a_nv = m.b_nv = 0;
        else
            m.a_ib = m.b_nic = 0;
        if (!(want > 0))
            return 0;
    }
    for (int i = 0; i < 100; i++) {
        double mid = (lo + hi) / 2;
        *v = part == PART_LATENCY ? mid : exp(mid);
        gboolean above = model_part(op, lay, m, form, part, at) > want;
        /* Above the measured part: a lower latency, or a higher bandwidth. */
        if (above == (part == PART_LATENCY))
            hi = mid;
        else
            lo = mid;
    }
    double x = (lo + hi) / 2;
    return part == PART_LATENCY ? x : exp(x);
}

/*
 * Calibrates level `solve` of `l` from curve `c`, the other level of `l` being known: its
 * latency from the curve's smallest sizes, its bandwidth from the largest, solved through the
 * model's closed form in the cluster's `form` (an intra-node curve has only the NVLink level).
 * `floor` (may be NULL) takes the curve's floor, the intercept of its smallest sizes' line (s).
 */
static void calibrate_level(const ProfileIndex *ix, const Curve *c, SsimProfileComm op, double nics,
                            const Form *form, int solve, Levels *l, double *floor)
{
    Layout lay = {c->ranks, c->rpn, c->nics > 0 ? c->nics : nics};
    double a_us, b_us, a_big, slope_us;
    curve_line(ix, c, TRUE, &a_us, &b_us);
    curve_line(ix, c, FALSE, &a_big, &slope_us);
    double A = MAX(a_us, 0.0) * 1e-6, B = MAX(slope_us, 0.0) * 1e-6;
    if (floor)
        *floor = A;
    double bw = B > 0 ? solve_level(op, &lay, l, form, solve, PART_SLOPE, 0, B) : 0;
    double lat = solve_level(op, &lay, l, form, solve, PART_LATENCY, 0, A);
    if (solve == SOLVE_NIC) {
        l->b_nic = bw;
        l->a_ib = lat;
    } else {
        l->b_nv = bw;
        l->a_nv = lat;
    }
}

/*
 * Carries curve `anchor` of `op` to layout `q` and `x` bytes through the network model: t =
 * t_measured x T_query / T_measured, T the model's time in the form of the cluster `net` with
 * levels calibrated from the profile (the NVLink level from its largest intra-node curve of the
 * op, else from `net`; the NIC level from the measured curve itself, at most the NIC's line rate:
 * a curve faster than that is carried by its NVLink level; with `net`, its latency per step the
 * cluster's and the rest of the curve's floor a fixed cost).  Exact for a curve that is the
 * model's own; otherwise it keeps the measured shape (protocol switches, noise) and moves only
 * what the layout changes.  A curve of one measured size says a bandwidth at that size and no
 * latency: with `net`, its level's latency is the cluster's and its bandwidth the one that gives
 * the point back, and T_measured is taken at the point (so another size follows the cluster's
 * closed form, not a constant time).  FALSE when the NVLink level is needed and neither the
 * profile nor `net` gives it.
 */
static gboolean carry(const ProfileIndex *ix, const Curve *anchor, SsimProfileComm op, double x,
                      const Layout *q, const SsimAnalyticParams *net, double *t)
{
    gboolean one = anchor->n == 1 && net != NULL, cross = anchor->rpn < anchor->ranks;
    const Curve *intra = NULL;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c != anchor && c->kind == SSIM_PROFILE_COMM && c->op == (int)op && c->rpn >= c->ranks &&
            c->ranks >= 2 && (intra == NULL || c->ranks > intra->ranks))
            intra = c;
    }
    Form form = cluster_form(net);
    double nics_gpu = net && net->nics_per_gpu > 0 ? net->nics_per_gpu : 1.0;
    Levels l = {0};
    if (net) {
        l.a_nv = ssim_time_to_seconds(net->nvlink_latency);
        l.b_nv = net->nvlink_bw;
        l.a_ib = ssim_time_to_seconds(net->ib_latency);
        l.b_nic = net->ib_bw / nics_gpu;
    }
    if (intra)
        calibrate_level(ix, intra, op, 0, &form, SOLVE_NVLINK, &l, NULL);
    else if (!net && (anchor->rpn > 1 || q->rpn > 1))
        return FALSE; /* the NVLink level matters and nothing gives it */
    Layout m = {anchor->ranks, anchor->rpn, anchor->nics > 0 ? anchor->nics : q->nics};
    const Point *p = &g_array_index(ix->points, Point, anchor->first);
    double xm = x, tm, floor = 0;
    if (one) {
        xm = p->x;
        tm = p->t;
        double bw = solve_level(op, &m, &l, &form, cross ? SOLVE_NIC : SOLVE_NVLINK, PART_AT, xm,
                                tm * 1e-6);
        *(cross ? &l.b_nic : &l.b_nv) = bw;
    } else {
        profile_curve_eval(ix, anchor, x, &tm);
        calibrate_level(ix, anchor, op, q->nics, &form, SOLVE_NIC, &l, &floor);
    }
    /* No NIC moves more than its line rate.  A curve that asks for more is one whose node-local
     * part ran faster than the closed form's ring over NVLink (NVLink SHARP, or a tree on two
     * nodes): then the NIC level is the cluster's effective one and what the curve measures is
     * the NVLink level (unless an intra-node curve already gave it: then the NIC stays capped). */
    if (cross && net && net->nic_bw > 0 && l.b_nic > net->nic_bw) {
        l.b_nic = MIN(net->nic_bw, net->ib_bw / nics_gpu);
        l.a_ib = ssim_time_to_seconds(net->ib_latency);
        if (intra == NULL)
            calibrate_level(ix, anchor, op, q->nics, &form, SOLVE_NVLINK, &l, NULL);
    } else if (cross && net && !one) {
        /* One curve cannot tell a fixed cost from a cost per step.  The steps keep the cluster's
         * latency, and what the curve's floor holds beyond the model's (NCCL's setup, a slow
         * transport) is a cost of every collective, which does not grow with the steps of a
         * larger layout; a floor below the model's keeps the latency the curve gives. */
        Levels own = l;
        own.a_ib = ssim_time_to_seconds(net->ib_latency);
        double rest = floor - model_part(op, &m, own, &form, PART_LATENCY, 0);
        if (rest >= 0) {
            l = own;
            form.overhead += rest;
        }
    }
    double model_m = model_time(op, xm, &m, &l, &form), model_q = model_time(op, x, q, &l, &form);
    if (!(model_m > 0) || !(model_q > 0))
        return FALSE;
    *t = tm * model_q / model_m;
    return TRUE;
}

/* A collective across nodes measured at another layout: the measured curve nearest to the
 * query's layout (ranks, ranks per node, NICs per rank, in log ratios; the same dtype and algo
 * preferred), carried to it (carry()).  FALSE when no curve crosses nodes, or carry() cannot. */
static gboolean scaled(const ProfileIndex *ix, SsimProfileComm op, int dtype, double x,
                       const Layout *q, const char *algo, const SsimAnalyticParams *net, double *t)
{
    const Curve *anchor = NULL;
    double best = INFINITY;
    for (int pass = 0; pass < 2 && anchor == NULL; pass++)
        for (guint i = 0; i < ix->curves->len; i++) {
            const Curve *c = &g_array_index(ix->curves, Curve, i);
            if (c->kind != SSIM_PROFILE_COMM || c->op != (int)op || c->rpn >= c->ranks)
                continue;
            /* First pass: the same dtype (when asked) and algo (when asked) only. */
            if (pass == 0 && ((dtype != SSIM_PROFILE_NO_DTYPE && c->dtype != dtype) ||
                              (algo && strcmp(c->algo, algo) != 0)))
                continue;
            double d = fabs(log((double)c->ranks / q->ranks)) + fabs(log((double)c->rpn / q->rpn));
            if (c->nics > 0 && q->nics > 0)
                d += fabs(log(c->nics / q->nics));
            if (d < best) {
                best = d;
                anchor = c;
            }
        }
    return anchor != NULL && carry(ix, anchor, op, x, q, net, t);
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
    double nics = fallback ? ssim_analytic_rank_nics(fallback, ranks_per_node) : 0;
    gboolean intra = ranks_per_node >= ranks;
    double t;
    SsimCostSource src = SSIM_COST_EXACT;
    Layout q = {ranks, ranks_per_node, nics};
    const Curve *used = NULL;
    if (ranks >= 1 &&
        comm_at_layout(ix, op, dtype, x, ranks, ranks_per_node, nics, algo, &t, &src, &used)) {
        /* Another size than a one-size curve's: the cluster's closed form through its point
         * (where carry() cannot, the curve's own extrapolation stands). */
        if (src == SSIM_COST_EXTRAPOLATED && used->n == 1 && fallback)
            (void)carry(ix, used, op, x, &q, fallback, &t);
        return profile_finish(out, t, src);
    }
    if (intra && intra_by_busbw(ix, op, dtype, x, ranks, algo, &t, &src))
        return profile_finish(out, t, src);
    if (!intra && scaled(ix, op, dtype, x, &q, algo, fallback, &t))
        return profile_finish(out, t, SSIM_COST_SCALED);

    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    guint nodes = (ranks + ranks_per_node - 1) / MAX(ranks_per_node, 1);
    SsimTime ta = op == SSIM_PCOMM_SENDRECV
                      ? ssim_analytic_p2p_time(fallback, bytes, nodes > 1)
                      : ssim_analytic_collective_time(fallback, (SsimCollKind)op, bytes, ranks,
                                                      nodes, ranks_per_node);
    return profile_analytical(out, fallback, ta);
}
