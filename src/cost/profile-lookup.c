/*
 * Profile lookup: turns a profile's measured rows into the duration of an op it may not have
 * measured, and says how (exact, interpolated, extrapolated or analytical).
 *
 * The index, built once per profile on the first lookup, holds:
 *   - curves: points (x, time) sorted by x, one per key; x is bytes for comm (key: collective,
 *     ranks, ranks per node, dtype, algorithm), memory and copy rows (key: kind, op, dtype; a
 *     copy's dtype is ignored), plus one pooled curve of every memory row;
 *   - compute points: one per measured GEMM or attention shape, and per (kind, pass, dtype) the
 *     size-dependent efficiency curve: its points (time vs FLOPs) and a least-squares fit of
 *     eff(F) = e F / (F + h), the analytical model's form (t = c (F + h)).
 * Rows measured twice (same key and x, or same shape) are merged into one point whose time is
 * the sample-weighted mean.  Interpolation on a curve is linear in log(time) vs log(x) between
 * the two bracketing points, which is exact for a power law and makes achieved bandwidth
 * interpolate geometrically.  Outside a curve's range it continues from its end point in log-log
 * with the slope clamped to [0, 1] (time never falls as size grows, and never grows faster than
 * size), the slope taken between the end point and the nearest point at least twice (or half) as
 * large, so that closely spaced noisy neighbours do not decide it.
 *
 * A GEMM off the measured shapes takes its shape family (the measured shapes that differ from
 * the nearest measured shape along one dimension, the one the query differs most in), and
 * interpolates, in log(FLOPs), the family's time relative to a fitted efficiency curve (the
 * family's own when it has three shapes or more, else the dtype's); the result is that ratio
 * times the curve at the query's FLOPs.  So a skinny family keeps its own (lower) efficiency,
 * and the curvature between measured sizes follows the measured efficiency-vs-size curve rather
 * than a straight line.  Fitting a family costs some microseconds per query: callers cache the
 * answer per distinct shape.
 *
 * Invariants: curve points are strictly increasing in x and every time is > 0; the index is
 * immutable once published, so concurrent lookups only read it.
 */
#include "profile-private.h"

#include <math.h>
#include <string.h>

typedef struct {
    double x, t;   /* bytes or FLOPs; microseconds */
    double lx, lt; /* their logs */
    double w;      /* weight (samples) while merging */
} Point;

typedef struct {
    SsimProfileKind kind;
    int op;           /* SsimProfileComm for comm curves; -1 otherwise */
    const char *name; /* op string (NULL: the pooled memory curve) */
    int dtype;
    guint ranks, rpn;
    const char *algo;
    guint first, n;      /* in ProfileIndex.points */
    double fit_c, fit_h; /* compute curves: the fitted t = c (F + h), see fit_efficiency() */
} Curve;

typedef struct {
    SsimProfileKind kind;
    const char *pass; /* attention: "fwd"/"bwd"; gemm: "" */
    int dtype;
    guint64 dim[4]; /* m n k batch */
    double ldim[4];
    double flops, t;
    guint eff; /* its efficiency curve (and fit) in ProfileIndex.curves */
} CPoint;

struct ProfileIndex {
    GArray *points;     /* Point */
    GArray *curves;     /* Curve */
    GArray *cpoints;    /* CPoint, sorted by (kind, pass, dtype, dims) */
    gint pooled_memory; /* curve index or -1 */
};

static void index_free(ProfileIndex *index)
{
    g_array_free(index->points, TRUE);
    g_array_free(index->curves, TRUE);
    g_array_free(index->cpoints, TRUE);
    g_free(index);
}

const char *ssim_cost_source_name(SsimCostSource source)
{
    static const char *const names[] = {
#define SSIM_X(e, s) s,
        SSIM_COST_SOURCE_LIST(SSIM_X)
#undef SSIM_X
    };
    return (unsigned)source < SSIM_COST_N ? names[source] : "?";
}

/* ---- Building the index ------------------------------------------------------------------ */

typedef struct {
    Curve key;
    double x, t, w;
} Entry;

static int cmp_int(long long a, long long b)
{
    return (a > b) - (a < b);
}

static int cmp_key(const Curve *a, const Curve *b)
{
    int c;
    if ((c = cmp_int(a->kind, b->kind)) || (c = cmp_int(a->op, b->op)) ||
        (c = cmp_int(a->ranks, b->ranks)) || (c = cmp_int(a->rpn, b->rpn)) ||
        (c = cmp_int(a->dtype, b->dtype)))
        return c;
    if ((c = g_strcmp0(a->name, b->name)))
        return c;
    return g_strcmp0(a->algo, b->algo);
}

static gint cmp_entry(gconstpointer pa, gconstpointer pb)
{
    const Entry *a = pa, *b = pb;
    int c = cmp_key(&a->key, &b->key);
    return c ? c : (a->x > b->x) - (a->x < b->x);
}

/* Turns sorted entries into curves of merged points. */
static void add_curves(ProfileIndex *ix, GArray *entries)
{
    g_array_sort(entries, cmp_entry);
    for (guint i = 0; i < entries->len;) {
        const Entry *e0 = &g_array_index(entries, Entry, i);
        Curve c = e0->key;
        c.first = ix->points->len;
        c.n = 0;
        guint j = i;
        while (j < entries->len && cmp_key(&g_array_index(entries, Entry, j).key, &c) == 0) {
            const Entry *e = &g_array_index(entries, Entry, j);
            Point *last = c.n ? &g_array_index(ix->points, Point, ix->points->len - 1) : NULL;
            if (last && last->x == e->x) {
                last->t = (last->t * last->w + e->t * e->w) / (last->w + e->w);
                last->w += e->w;
            } else {
                Point p = {e->x, e->t, log(e->x), 0, e->w};
                g_array_append_val(ix->points, p);
                c.n++;
            }
            j++;
        }
        for (guint k = c.first; k < c.first + c.n; k++) {
            Point *p = &g_array_index(ix->points, Point, k);
            p->lt = log(p->t);
        }
        g_array_append_val(ix->curves, c);
        i = j;
    }
}

static double row_weight(const SsimProfileRow *r)
{
    return r->samples > 0 ? (double)r->samples : 1.0;
}

static double compute_flops(SsimProfileKind kind, gboolean backward, const guint64 d[4])
{
    double f = (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3];
    if (kind == SSIM_PROFILE_GEMM)
        return 2.0 * f;
    /* attention: m = seq, n = heads, k = head_dim, batch */
    return (backward ? 8.0 : 4.0) * f * (double)d[0];
}

static gint cmp_cpoint(gconstpointer pa, gconstpointer pb)
{
    const CPoint *a = pa, *b = pb;
    int c;
    if ((c = cmp_int(a->kind, b->kind)) || (c = strcmp(a->pass, b->pass)) ||
        (c = cmp_int(a->dtype, b->dtype)))
        return c;
    for (int i = 0; i < 4; i++)
        if ((c = cmp_int((long long)a->dim[i], (long long)b->dim[i])))
            return c;
    return 0;
}

/* Sum of squared log errors of t = c (F + h) at the best c for this h; sets *lc = ln c. */
static double fit_sse(const Point *p, guint n, double h, double *lc)
{
    double m = 0, sse = 0;
    for (guint i = 0; i < n; i++)
        m += p[i].lt - log(p[i].x + h);
    m /= n;
    for (guint i = 0; i < n; i++) {
        double d = p[i].lt - m - log(p[i].x + h);
        sse += d * d;
    }
    *lc = m;
    return sse;
}

/*
 * Fits the size-dependent efficiency curve eff(F) = F / t(F) = e F / (F + h) (the analytical
 * model's form: t = c (F + h), c = 1 / e) to a compute curve's points by least squares in
 * log(time): a grid over log h, then golden-section refinement.  One point: h = 0.
 */
static void fit_points(const Point *p, guint n, double *fit_c, double *fit_h)
{
    double lc, best_h = 0, best = fit_sse(p, n, 0, &lc);
    if (n >= 2) {
        double lo = log(p[0].x) - 3 * G_LN10, hi = log(p[n - 1].x) + 3 * G_LN10;
        double step = G_LN10 / 8, best_l = lo;
        for (double l = lo; l <= hi; l += step) {
            double e = fit_sse(p, n, exp(l), &lc);
            if (e < best) {
                best = e;
                best_h = exp(l);
                best_l = l;
            }
        }
        if (best_h > 0) {
            double a = best_l - step, b = best_l + step;
            const double g = 0.6180339887498949;
            for (int it = 0; it < 60; it++) {
                double x1 = b - g * (b - a), x2 = a + g * (b - a);
                if (fit_sse(p, n, exp(x1), &lc) < fit_sse(p, n, exp(x2), &lc))
                    b = x2;
                else
                    a = x1;
            }
            double h = exp((a + b) / 2);
            if (fit_sse(p, n, h, &lc) < best)
                best_h = h;
        }
    }
    fit_sse(p, n, best_h, &lc);
    *fit_c = exp(lc);
    *fit_h = best_h;
}

static void fit_efficiency(const ProfileIndex *ix, Curve *c)
{
    fit_points(&g_array_index(ix->points, Point, c->first), c->n, &c->fit_c, &c->fit_h);
}

static double fit_time(const Curve *c, double flops)
{
    return c->fit_c * (flops + c->fit_h);
}

static ProfileIndex *index_build(const SsimProfile *p)
{
    ProfileIndex *ix = g_new0(ProfileIndex, 1);
    ix->points = g_array_new(FALSE, FALSE, sizeof(Point));
    ix->curves = g_array_new(FALSE, FALSE, sizeof(Curve));
    ix->cpoints = g_array_new(FALSE, FALSE, sizeof(CPoint));
    ix->pooled_memory = -1;
    g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(Entry));
    g_autoptr(GArray) cw = g_array_new(FALSE, FALSE, sizeof(double)); /* weights of cpoints */
    gboolean any_memory = FALSE;
    for (guint i = 0; i < p->rows->len; i++) {
        const SsimProfileRow *r = &g_array_index(p->rows, SsimProfileRow, i);
        if (r->kind == SSIM_PROFILE_GEMM || r->kind == SSIM_PROFILE_ATTENTION) {
            CPoint c = {.kind = r->kind, .dtype = r->dtype, .t = r->time_us};
            c.pass = r->kind == SSIM_PROFILE_ATTENTION ? r->op : "";
            c.dim[0] = r->m, c.dim[1] = r->n, c.dim[2] = r->k, c.dim[3] = r->batch;
            for (int d = 0; d < 4; d++)
                c.ldim[d] = log((double)c.dim[d]);
            c.flops = compute_flops(r->kind, strcmp(c.pass, "bwd") == 0, c.dim);
            g_array_append_val(ix->cpoints, c);
            double w = row_weight(r);
            g_array_append_val(cw, w);
            continue;
        }
        Entry e = {.x = (double)r->bytes, .t = r->time_us, .w = row_weight(r)};
        e.key.kind = r->kind;
        e.key.op = -1;
        e.key.name = r->op;
        e.key.dtype = r->kind == SSIM_PROFILE_COPY ? SSIM_PROFILE_NO_DTYPE : r->dtype;
        e.key.algo = "";
        if (r->kind == SSIM_PROFILE_COMM) {
            SsimProfileComm op = SSIM_PCOMM_ALLREDUCE;
            ssim_profile_comm_from_name(r->op, &op);
            e.key.op = (int)op;
            e.key.name = NULL;
            e.key.ranks = r->ranks;
            e.key.rpn = r->ranks_per_node;
            e.key.algo = r->algo;
        }
        g_array_append_val(entries, e);
        if (r->kind == SSIM_PROFILE_MEMORY) {
            any_memory = TRUE;
            Entry pooled = e;
            pooled.key.kind = SSIM_PROFILE_KIND_N; /* a kind of its own, sorted last */
            pooled.key.name = NULL;
            pooled.key.dtype = SSIM_PROFILE_NO_DTYPE;
            g_array_append_val(entries, pooled);
        }
    }
    add_curves(ix, entries);
    if (any_memory)
        ix->pooled_memory = (gint)ix->curves->len - 1;

    /* Compute points: merge repeated shapes (weighted), then an efficiency curve per class. */
    if (ix->cpoints->len > 0) {
        /* Sort points together with their weights. */
        g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(CPoint));
        for (guint i = 0; i < ix->cpoints->len; i++) {
            CPoint c = g_array_index(ix->cpoints, CPoint, i);
            c.eff = i; /* temporarily: the weight's index */
            g_array_append_val(order, c);
        }
        g_array_sort(order, cmp_cpoint);
        g_array_set_size(ix->cpoints, 0);
        g_autoptr(GArray) weights = g_array_new(FALSE, FALSE, sizeof(double));
        for (guint i = 0; i < order->len; i++) {
            CPoint c = g_array_index(order, CPoint, i);
            double w = g_array_index(cw, double, c.eff);
            guint n = ix->cpoints->len;
            CPoint *last = n ? &g_array_index(ix->cpoints, CPoint, n - 1) : NULL;
            if (last && cmp_cpoint(last, &c) == 0) {
                double *lw = &g_array_index(weights, double, n - 1);
                last->t = (last->t * *lw + c.t * w) / (*lw + w);
                *lw += w;
            } else {
                g_array_append_val(ix->cpoints, c);
                g_array_append_val(weights, w);
            }
        }
        g_autoptr(GArray) eff = g_array_new(FALSE, FALSE, sizeof(Entry));
        for (guint i = 0; i < ix->cpoints->len; i++) {
            const CPoint *c = &g_array_index(ix->cpoints, CPoint, i);
            Entry e = {.x = c->flops, .t = c->t, .w = 1};
            e.key.kind = c->kind;
            e.key.op = -1;
            e.key.name = c->pass;
            e.key.dtype = c->dtype;
            e.key.algo = "";
            g_array_append_val(eff, e);
        }
        guint base = ix->curves->len;
        add_curves(ix, eff);
        for (guint k = base; k < ix->curves->len; k++)
            fit_efficiency(ix, &g_array_index(ix->curves, Curve, k));
        for (guint i = 0; i < ix->cpoints->len; i++) {
            CPoint *c = &g_array_index(ix->cpoints, CPoint, i);
            for (guint k = base; k < ix->curves->len; k++) {
                const Curve *cv = &g_array_index(ix->curves, Curve, k);
                if (cv->kind == c->kind && cv->dtype == c->dtype && strcmp(cv->name, c->pass) == 0)
                    c->eff = k;
            }
        }
    }
    return ix;
}

static const ProfileIndex *index_get(const SsimProfile *p)
{
    SsimProfile *mp = (SsimProfile *)p; /* the index is a cache; the rows stay const */
    ProfileIndex *ix = g_atomic_pointer_get(&mp->index);
    if (ix)
        return ix;
    g_mutex_lock(&mp->index_lock);
    if (mp->index == NULL) {
        mp->index_free = index_free;
        g_atomic_pointer_set(&mp->index, index_build(p));
    }
    ix = mp->index;
    g_mutex_unlock(&mp->index_lock);
    return ix;
}

/* ---- Curves ------------------------------------------------------------------------------ */

static double clamp01(double s)
{
    return s < 0 ? 0 : s > 1 ? 1 : s;
}

/* The time of `c` at x (> 0): measured, interpolated, or continued with a clamped slope. */
static SsimCostSource curve_eval(const ProfileIndex *ix, const Curve *c, double x, double *t)
{
    const Point *p = &g_array_index(ix->points, Point, c->first);
    guint n = c->n;
    double lx = log(x);
    if (x < p[0].x || x > p[n - 1].x) {
        gboolean below = x < p[0].x;
        double slope;
        const Point *e = below ? &p[0] : &p[n - 1];
        if (n == 1)
            slope = below ? 0 : 1;
        else {
            /* The slope between the end point and the nearest point at least a factor of two
             * away (or the other end): neighbours 1% apart would give a noisy slope. */
            guint j = below ? 1 : n - 2;
            while (fabs(p[j].lx - e->lx) < G_LN2 && j > 0 && j < n - 1)
                j = below ? j + 1 : j - 1;
            slope = clamp01((e->lt - p[j].lt) / (e->lx - p[j].lx));
        }
        *t = exp(e->lt + slope * (lx - e->lx));
        return SSIM_COST_EXTRAPOLATED;
    }
    guint lo = 0, hi = n - 1; /* p[lo].x <= x <= p[hi].x */
    while (hi - lo > 1) {
        guint mid = (lo + hi) / 2;
        if (p[mid].x <= x)
            lo = mid;
        else
            hi = mid;
    }
    if (p[lo].x == x || p[hi].x == x) {
        *t = p[lo].x == x ? p[lo].t : p[hi].t;
        return SSIM_COST_EXACT;
    }
    double f = (lx - p[lo].lx) / (p[hi].lx - p[lo].lx);
    *t = exp(p[lo].lt + f * (p[hi].lt - p[lo].lt));
    return SSIM_COST_INTERPOLATED;
}

static gboolean finish(SsimCostEstimate *out, double t_us, SsimCostSource source)
{
    out->time_us = t_us;
    out->time = ssim_time_from_seconds(t_us * 1e-6);
    out->source = source;
    return TRUE;
}

static gboolean analytical(SsimCostEstimate *out, const SsimAnalyticParams *fb, SsimTime t)
{
    if (fb == NULL) {
        out->time_us = 0;
        out->time = 0;
        out->source = SSIM_COST_ANALYTICAL;
        return FALSE;
    }
    out->time = t;
    out->time_us = (double)t * 1e-3;
    out->source = SSIM_COST_ANALYTICAL;
    return TRUE;
}

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
        SsimCostSource si = curve_eval(ix, c, x, &ti);
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
    const ProfileIndex *ix = index_get(profile);
    double x = bytes > 0 ? (double)bytes : 1.0;
    double t;
    SsimCostSource src = SSIM_COST_EXACT;
    if (ranks >= 1 && comm_at_ranks(ix, op, dtype, x, ranks, ranks_per_node, algo, &t, &src))
        return finish(out, t, src);

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
        return finish(out, ssim_profile_bus_factor(op, ranks) * x / b, source);
    }

    if (fallback == NULL)
        return analytical(out, NULL, 0);
    guint nodes = (ranks + ranks_per_node - 1) / MAX(ranks_per_node, 1);
    SsimTime ta = op == SSIM_PCOMM_SENDRECV
                      ? ssim_analytic_p2p_time(fallback, bytes, nodes > 1)
                      : ssim_analytic_collective_time(fallback, (SsimCollKind)op, bytes, ranks,
                                                      nodes, ranks_per_node);
    return analytical(out, fallback, ta);
}

/* ---- GEMMs and attention ----------------------------------------------------------------- */

static gboolean compute_time(const SsimProfile *profile, SsimProfileKind kind, const char *pass,
                             const guint64 dim[4], SsimDtype dtype, SsimCostEstimate *out)
{
    const ProfileIndex *ix = index_get(profile);
    const CPoint *pts = (const CPoint *)(const void *)ix->cpoints->data;
    double lq[4], fq = compute_flops(kind, strcmp(pass, "bwd") == 0, dim);
    for (int d = 0; d < 4; d++)
        lq[d] = log((double)(dim[d] ? dim[d] : 1));
    /* The nearest measured shape in log-shape distance (exact hit: distance 0). */
    gint near = -1;
    double best = INFINITY;
    for (guint i = 0; i < ix->cpoints->len; i++) {
        const CPoint *c = &pts[i];
        if (c->kind != kind || c->dtype != (int)dtype || strcmp(c->pass, pass) != 0)
            continue;
        double d2 = 0;
        for (int d = 0; d < 4; d++)
            d2 += (lq[d] - c->ldim[d]) * (lq[d] - c->ldim[d]);
        if (d2 < best) {
            best = d2;
            near = (gint)i;
        }
    }
    if (near < 0)
        return FALSE;
    const CPoint *r = &pts[near];
    if (memcmp(r->dim, dim, sizeof r->dim) == 0)
        return finish(out, r->t, SSIM_COST_EXACT);

    /* Its family: the measured shapes that differ from it along one dimension only, taking the
     * dimension along which the query differs most that has a family of two or more. */
    int order[4] = {0, 1, 2, 3};
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++)
            if (fabs(lq[order[b]] - r->ldim[order[b]]) > fabs(lq[order[a]] - r->ldim[order[a]])) {
                int tmp = order[a];
                order[a] = order[b];
                order[b] = tmp;
            }
    g_autoptr(GArray) fam = g_array_new(FALSE, FALSE, sizeof(const CPoint *));
    for (int oi = 0; oi < 4 && fam->len < 2; oi++) {
        int along = order[oi];
        g_array_set_size(fam, 0);
        for (guint i = 0; i < ix->cpoints->len; i++) {
            const CPoint *c = &pts[i];
            if (c->kind != kind || c->dtype != (int)dtype || strcmp(c->pass, pass) != 0)
                continue;
            gboolean same = TRUE;
            for (int d = 0; d < 4; d++)
                same = same && (d == along || c->dim[d] == r->dim[d]);
            if (same)
                g_array_append_val(fam, c);
        }
    }
    if (fam->len < 2) {
        g_array_set_size(fam, 0);
        g_array_append_val(fam, r);
    }
    /* Family members are sorted by their varying dimension, hence by FLOPs.  The family's
     * efficiency relative to the fitted curve is interpolated in log(FLOPs) and multiplied by
     * the curve at the query's FLOPs: exact at measured points, and shaped like the measured
     * efficiency-vs-size curve in between and beyond. */
    const CPoint **f = (const CPoint **)(void *)fam->data;
    guint n = fam->len;
    Curve fit = g_array_index(ix->curves, Curve, r->eff), *eff = &fit;
    const Point *ep = &g_array_index(ix->points, Point, eff->first);
    if (n >= 3) {
        /* A family of three or more has an efficiency curve of its own (a skinny family's
         * differs in shape, not only in scale, from the dtype's). */
        g_autofree Point *fp = g_new0(Point, n);
        for (guint i = 0; i < n; i++)
            fp[i] = (Point){.x = f[i]->flops, .t = f[i]->t, .lt = log(f[i]->t)};
        fit_points(fp, n, &fit.fit_c, &fit.fit_h);
    }
    double fit_q = fit_time(eff, fq);
    if (n >= 2 && fq >= f[0]->flops && fq <= f[n - 1]->flops) {
        guint lo = 0;
        while (lo + 2 < n && f[lo + 1]->flops <= fq)
            lo++;
        const CPoint *a = f[lo], *b = f[lo + 1];
        double u = (log(fq) - log(a->flops)) / (log(b->flops) - log(a->flops));
        double ra = log(a->t / fit_time(eff, a->flops)), rb = log(b->t / fit_time(eff, b->flops));
        return finish(out, exp(ra + u * (rb - ra)) * fit_q, SSIM_COST_INTERPOLATED);
    }
    /* Outside the family: its nearest end, carried along the efficiency curve. */
    const CPoint *e = (n == 1 || fq < f[0]->flops) ? f[0] : f[n - 1];
    gboolean inside = fq >= ep[0].x && fq <= ep[eff->n - 1].x;
    return finish(out, e->t / fit_time(eff, e->flops) * fit_q,
                  inside ? SSIM_COST_INTERPOLATED : SSIM_COST_EXTRAPOLATED);
}

gboolean ssim_profile_gemm_time(const SsimProfile *profile, guint64 m, guint64 n, guint64 k,
                                guint64 batch, SsimDtype dtype, const SsimAnalyticParams *fallback,
                                SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const guint64 dim[4] = {m, n, k, batch ? batch : 1};
    if (compute_time(profile, SSIM_PROFILE_GEMM, "", dim, dtype, out))
        return TRUE;
    if (fallback == NULL)
        return analytical(out, NULL, 0);
    double bytes = (double)(m * k + k * n + m * n) * (double)dim[3] * ssim_dtype_size(dtype);
    return analytical(out, fallback,
                      ssim_analytic_compute_time(
                          fallback, compute_flops(SSIM_PROFILE_GEMM, FALSE, dim), (guint64)bytes));
}

gboolean ssim_profile_flops_time(const SsimProfile *profile, double flops, SsimDtype dtype,
                                 const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const ProfileIndex *ix = index_get(profile);
    double f = flops > 1 ? flops : 1;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_GEMM || c->dtype != (int)dtype)
            continue;
        const Point *p = &g_array_index(ix->points, Point, c->first);
        if (f >= p[0].x && f <= p[c->n - 1].x) {
            double t;
            SsimCostSource s = curve_eval(ix, c, f, &t);
            return finish(out, t, s);
        }
        const Point *e = f < p[0].x ? &p[0] : &p[c->n - 1];
        return finish(out, e->t / fit_time(c, e->x) * fit_time(c, f), SSIM_COST_EXTRAPOLATED);
    }
    if (fallback == NULL)
        return analytical(out, NULL, 0);
    return analytical(out, fallback, ssim_analytic_compute_time(fallback, flops, 0));
}

gboolean ssim_profile_attention_time(const SsimProfile *profile, gboolean backward, guint64 seq,
                                     guint64 heads, guint64 head_dim, guint64 batch,
                                     SsimDtype dtype, const SsimAnalyticParams *fallback,
                                     SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const guint64 dim[4] = {seq, heads, head_dim, batch ? batch : 1};
    const char *pass = backward ? "bwd" : "fwd";
    if (compute_time(profile, SSIM_PROFILE_ATTENTION, pass, dim, dtype, out))
        return TRUE;
    if (fallback == NULL)
        return analytical(out, NULL, 0);
    double bytes = 4.0 * (double)(seq * heads * head_dim * dim[3]) * ssim_dtype_size(dtype) *
                   (backward ? 2 : 1);
    return analytical(
        out, fallback,
        ssim_analytic_compute_time(fallback, compute_flops(SSIM_PROFILE_ATTENTION, backward, dim),
                                   (guint64)bytes));
}

/* ---- Memory-bound ops and copies --------------------------------------------------------- */

static gboolean bytes_time(const ProfileIndex *ix, SsimProfileKind kind, const char *op, int dtype,
                           double x, SsimCostEstimate *out)
{
    const Curve *same = NULL, *other = NULL;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != kind || g_strcmp0(c->name, op) != 0)
            continue;
        if (kind == SSIM_PROFILE_COPY || c->dtype == dtype || dtype == SSIM_PROFILE_NO_DTYPE)
            same = same ? same : c;
        else
            other = other ? other : c;
    }
    double t;
    if (same) {
        SsimCostSource s = curve_eval(ix, same, x, &t);
        return finish(out, t, s);
    }
    const Curve *c = other;
    if (c == NULL && kind == SSIM_PROFILE_MEMORY && ix->pooled_memory >= 0)
        c = &g_array_index(ix->curves, Curve, ix->pooled_memory);
    if (c == NULL)
        return FALSE;
    SsimCostSource s = curve_eval(ix, c, x, &t);
    return finish(out, t, MAX(SSIM_COST_INTERPOLATED, s));
}

gboolean ssim_profile_memory_time(const SsimProfile *profile, const char *op, int dtype,
                                  guint64 bytes, const SsimAnalyticParams *fallback,
                                  SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && op != NULL && out != NULL, FALSE);
    if (bytes_time(index_get(profile), SSIM_PROFILE_MEMORY, op, dtype, bytes ? (double)bytes : 1.0,
                   out))
        return TRUE;
    return analytical(out, fallback, fallback ? ssim_analytic_compute_time(fallback, 0, bytes) : 0);
}

gboolean ssim_profile_copy_time(const SsimProfile *profile, const char *op, guint64 bytes,
                                const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && op != NULL && out != NULL, FALSE);
    if (bytes_time(index_get(profile), SSIM_PROFILE_COPY, op, SSIM_PROFILE_NO_DTYPE,
                   bytes ? (double)bytes : 1.0, out))
        return TRUE;
    if (fallback == NULL)
        return analytical(out, NULL, 0);
    /* d2d moves through HBM; p2p over NVLink; h2d/d2h over PCIe, which the cluster does not
     * describe: the NIC path (PCIe-class bandwidth) stands in for it. */
    SsimTime t = strcmp(op, "d2d") == 0   ? ssim_analytic_compute_time(fallback, 0, bytes)
                 : strcmp(op, "p2p") == 0 ? ssim_analytic_p2p_time(fallback, bytes, FALSE)
                                          : ssim_analytic_p2p_time(fallback, bytes, TRUE);
    return analytical(out, fallback, t);
}

/* ---- Summary ----------------------------------------------------------------------------- */

/* "1 MiB", "1.5 GiB", "4096 B" (plain ASCII: GLib's g_format_size() uses a no-break space). */
static void put_bytes(GString *out, double b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    guint u = 0;
    while (u + 1 < G_N_ELEMENTS(units) && b >= 1024.0) {
        b /= 1024.0;
        u++;
    }
    g_string_append_printf(out, "%.4g %s", b, units[u]);
}

static void summary_ranges(const SsimProfile *profile, GString *out)
{
    const ProfileIndex *ix = index_get(profile);
    g_string_append(out, "measured ranges:\n");
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        const Point *p = &g_array_index(ix->points, Point, c->first);
        const Point *q = p + c->n - 1;
        const char *dt = c->dtype == SSIM_PROFILE_NO_DTYPE ? "-" : ssim_dtype_name(c->dtype);
        if (c->kind == SSIM_PROFILE_GEMM || c->kind == SSIM_PROFILE_ATTENTION) {
            g_string_append_printf(out,
                                   "  %s%s%s %s: %u FLOP sizes, %.3g .. %.3g FLOPs, "
                                   "%.1f .. %.1f TFLOP/s; fit: %.1f TFLOP/s at large sizes, "
                                   "half of it at %.3g FLOPs\n",
                                   ssim_profile_kind_name(c->kind), c->name[0] ? " " : "", c->name,
                                   dt, c->n, p->x, q->x, p->x / p->t * 1e-6, q->x / q->t * 1e-6,
                                   1e-6 / c->fit_c, c->fit_h);
            continue;
        }
        if (c->kind == SSIM_PROFILE_COMM)
            g_string_append_printf(
                out, "  comm %s %s ranks %u (%u per node)%s%s: ", ssim_profile_comm_name(c->op), dt,
                c->ranks, c->rpn, c->algo[0] ? " algo " : "", c->algo);
        else if (c->kind == SSIM_PROFILE_KIND_N)
            g_string_append(out, "  memory (all ops pooled): ");
        else
            g_string_append_printf(out, "  %s %s %s: ", ssim_profile_kind_name(c->kind), c->name,
                                   dt);
        g_string_append_printf(out, "%u sizes, ", c->n);
        put_bytes(out, p->x);
        g_string_append(out, " .. ");
        put_bytes(out, q->x);
        g_string_append_printf(out, ", %.4g .. %.4g us\n", p->t, q->t);
    }
}

/* ---- --explain-costs --------------------------------------------------------------------- */

void ssim_cost_explain_init(SsimCostExplain *explain)
{
    memset(explain, 0, sizeof *explain);
}

void ssim_cost_explain_add(SsimCostExplain *explain, SsimProfileKind cls, SsimCostSource source)
{
    g_return_if_fail((unsigned)cls < SSIM_PROFILE_KIND_N && (unsigned)source < SSIM_COST_N);
    explain->count[cls][source]++;
}

void ssim_cost_explain_merge(SsimCostExplain *dst, const SsimCostExplain *src)
{
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        for (guint s = 0; s < SSIM_COST_N; s++)
            dst->count[k][s] += src->count[k][s];
}

guint64 ssim_cost_explain_total(const SsimCostExplain *explain, SsimCostSource source)
{
    guint64 n = 0;
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        n += explain->count[k][source];
    return n;
}

static void explain_rows(const SsimCostExplain *e, GString *out, gboolean csv)
{
    guint64 col[SSIM_COST_N] = {0}, all = 0;
    for (guint k = 0; k <= SSIM_PROFILE_KIND_N; k++) {
        gboolean total = k == SSIM_PROFILE_KIND_N;
        const char *name = total ? "total" : ssim_profile_kind_name(k);
        guint64 sum = 0;
        g_string_append_printf(out, csv ? "%s" : "%-10s", name);
        for (guint s = 0; s < SSIM_COST_N; s++) {
            guint64 v = total ? col[s] : e->count[k][s];
            if (!total)
                col[s] += v;
            sum += v;
            g_string_append_printf(out, csv ? ",%" G_GUINT64_FORMAT : " %13" G_GUINT64_FORMAT, v);
        }
        if (!total)
            all += sum;
        g_string_append_printf(out, csv ? ",%" G_GUINT64_FORMAT "\n" : " %10" G_GUINT64_FORMAT "\n",
                               total ? all : sum);
    }
}

GString *ssim_cost_explain_table(const SsimCostExplain *explain)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "%-10s", "op class");
    for (guint s = 0; s < SSIM_COST_N; s++)
        g_string_append_printf(out, " %13s", ssim_cost_source_name(s));
    g_string_append_printf(out, " %10s\n", "total");
    explain_rows(explain, out, FALSE);
    return out;
}

GString *ssim_cost_explain_csv(const SsimCostExplain *explain)
{
    GString *out = g_string_new("class");
    for (guint s = 0; s < SSIM_COST_N; s++)
        g_string_append_printf(out, ",%s", ssim_cost_source_name(s));
    g_string_append(out, ",total\n");
    explain_rows(explain, out, TRUE);
    return out;
}

GString *ssim_profile_summary(const SsimProfile *profile)
{
    GString *out = g_string_new(NULL);
    g_string_append(out, "metadata:\n");
    for (guint i = 0; i < ssim_profile_n_meta(profile); i++)
        g_string_append_printf(out, "  %-14s %s\n", ssim_profile_meta_key(profile, i),
                               ssim_profile_meta_value(profile, i));
    guint per_kind[SSIM_PROFILE_KIND_N] = {0};
    for (guint i = 0; i < ssim_profile_n_rows(profile); i++)
        per_kind[ssim_profile_row(profile, i)->kind]++;
    g_string_append_printf(out, "rows: %u\n", ssim_profile_n_rows(profile));
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        g_string_append_printf(out, "  %-14s %u\n", ssim_profile_kind_name((SsimProfileKind)k),
                               per_kind[k]);
    summary_ranges(profile, out);
    return out;
}
