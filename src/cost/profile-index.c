/*
 * The profile lookup's index (src/cost/profile-index-private.h): curves of measured points built
 * once per profile, their evaluation, and the efficiency-curve fit of compute points.
 *
 * The index, built once per profile on the first lookup, holds:
 *   - curves: points (x, time) sorted by x, one per key; x is bytes for comm (key: collective,
 *     ranks, ranks per node, NICs per rank, dtype, algorithm), memory and copy rows (key: kind,
 *     op, dtype; a copy's dtype is ignored), plus one pooled curve of every memory row;
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
 * A comm row that does not record its NICs per rank takes them from the profile's
 * `nics_per_node` metadata when it has one (NICs per node over ranks per node, at most 1: NCCL
 * drives each GPU through its nearest NIC), else stays 0 (as on the simulated cluster).
 */
#include "src/cost/profile-index-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
        (c = (a->nics > b->nics) - (a->nics < b->nics)) || (c = cmp_int(a->dtype, b->dtype)))
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

double profile_compute_flops(SsimProfileKind kind, gboolean backward, const guint64 d[4])
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
void profile_fit_points(const Point *p, guint n, double *fit_c, double *fit_h)
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
    profile_fit_points(&g_array_index(ix->points, Point, c->first), c->n, &c->fit_c, &c->fit_h);
}

double profile_fit_time(const Curve *c, double flops)
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
    const char *npn = ssim_profile_get_meta(p, "nics_per_node");
    double nics_per_node = npn ? g_ascii_strtod(npn, NULL) : 0;
    if (!(nics_per_node > 0 && nics_per_node < 1e6))
        nics_per_node = 0;
    for (guint i = 0; i < p->rows->len; i++) {
        const SsimProfileRow *r = &g_array_index(p->rows, SsimProfileRow, i);
        if (r->kind == SSIM_PROFILE_GEMM || r->kind == SSIM_PROFILE_ATTENTION) {
            CPoint c = {.kind = r->kind, .dtype = r->dtype, .t = r->time_us};
            c.pass = r->kind == SSIM_PROFILE_ATTENTION ? r->op : "";
            c.dim[0] = r->m, c.dim[1] = r->n, c.dim[2] = r->k, c.dim[3] = r->batch;
            for (int d = 0; d < 4; d++)
                c.ldim[d] = log((double)c.dim[d]);
            gboolean backward = FALSE;
            if (r->kind == SSIM_PROFILE_ATTENTION)
                ssim_profile_attention_pass(c.pass, &backward, NULL);
            c.flops = profile_compute_flops(r->kind, backward, c.dim);
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
            e.key.nics = r->nics_per_rank;
            /* Unrecorded on the row: the profile's NICs per node over the row's ranks per node,
             * at most one NIC per rank (a GPU's traffic goes through its nearest NIC). */
            if (e.key.nics == 0 && nics_per_node > 0 && r->ranks_per_node < r->ranks)
                e.key.nics = MIN(1.0, nics_per_node / r->ranks_per_node);
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

const ProfileIndex *profile_index_get(const SsimProfile *p)
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
SsimCostSource profile_curve_eval(const ProfileIndex *ix, const Curve *c, double x, double *t)
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

gboolean profile_finish(SsimCostEstimate *out, double t_us, SsimCostSource source)
{
    out->time_us = t_us;
    out->time = ssim_time_from_seconds(t_us * 1e-6);
    out->source = source;
    return TRUE;
}

gboolean profile_analytical(SsimCostEstimate *out, const SsimAnalyticParams *fb, SsimTime t)
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
