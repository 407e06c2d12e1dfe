/*
 * Profile lookup of compute ops (include/shiftsim/profile.h): GEMMs and attention by shape or by
 * FLOPs, memory-bound kernels and copies by bytes.
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
 * Given the GEMM shape model (a fallback with sm_count; analytic.h), a GEMM off the measured
 * shapes is instead the model's time at its shape times the ratio measured / model at the
 * nearest measured shape, the model's two free figures (gemm efficiency, per-tile overhead)
 * having been fitted to the measured GEMMs by ssim_profile_fit_gemm_model(): the measurement
 * reaches another shape through tiles and waves, not through its FLOPs, so a small-shape
 * efficiency does not decide the cost of a large GEMM.
 */
#include "src/cost/profile-index-private.h"

#include <math.h>
#include <string.h>

/* ---- GEMMs and attention ----------------------------------------------------------------- */

/* The shape model's time of a GEMM, in us. */
static double model_us(const SsimAnalyticParams *p, const guint64 d[4])
{
    SsimGemmShape g = {d[0], d[1], d[2], d[3]};
    return (double)ssim_analytic_gemm_time(p, &g) * 1e-3;
}

static gboolean compute_time(const SsimProfile *profile, SsimProfileKind kind, const char *pass,
                             const guint64 dim[4], SsimDtype dtype,
                             const SsimAnalyticParams *shape_model, SsimCostEstimate *out)
{
    const ProfileIndex *ix = profile_index_get(profile);
    const CPoint *pts = (const CPoint *)(const void *)ix->cpoints->data;
    gboolean backward = FALSE;
    if (kind == SSIM_PROFILE_ATTENTION)
        ssim_profile_attention_pass(pass, &backward, NULL);
    double lq[4], fq = profile_compute_flops(kind, backward, dim);
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
        return profile_finish(out, r->t, SSIM_COST_EXACT);

    /* With the GEMM shape model (its figures fitted to these rows: ssim_profile_fit_gemm_model),
     * the query is the model's time at its shape, corrected by how far the nearest measured
     * shape is from the model: tiles and waves, not FLOPs, carry the measurement to the query. */
    if (shape_model && shape_model->sm_count > 0 && kind == SSIM_PROFILE_GEMM) {
        const Curve *eff = &g_array_index(ix->curves, Curve, r->eff);
        const Point *ep = &g_array_index(ix->points, Point, eff->first);
        gboolean inside = fq >= ep[0].x && fq <= ep[eff->n - 1].x;
        return profile_finish(out,
                              model_us(shape_model, dim) * r->t / model_us(shape_model, r->dim),
                              inside ? SSIM_COST_INTERPOLATED : SSIM_COST_EXTRAPOLATED);
    }

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
        profile_fit_points(fp, n, &fit.fit_c, &fit.fit_h);
    }
    double fit_q = profile_fit_time(eff, fq);
    if (n >= 2 && fq >= f[0]->flops && fq <= f[n - 1]->flops) {
        guint lo = 0;
        while (lo + 2 < n && f[lo + 1]->flops <= fq)
            lo++;
        const CPoint *a = f[lo], *b = f[lo + 1];
        double u = (log(fq) - log(a->flops)) / (log(b->flops) - log(a->flops));
        double ra = log(a->t / profile_fit_time(eff, a->flops)),
               rb = log(b->t / profile_fit_time(eff, b->flops));
        return profile_finish(out, exp(ra + u * (rb - ra)) * fit_q, SSIM_COST_INTERPOLATED);
    }
    /* Outside the family: its nearest end, carried along the efficiency curve. */
    const CPoint *e = (n == 1 || fq < f[0]->flops) ? f[0] : f[n - 1];
    gboolean inside = fq >= ep[0].x && fq <= ep[eff->n - 1].x;
    return profile_finish(out, e->t / profile_fit_time(eff, e->flops) * fit_q,
                          inside ? SSIM_COST_INTERPOLATED : SSIM_COST_EXTRAPOLATED);
}

gboolean ssim_profile_gemm_time(const SsimProfile *profile, guint64 m, guint64 n, guint64 k,
                                guint64 batch, SsimDtype dtype, const SsimAnalyticParams *fallback,
                                SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const guint64 dim[4] = {m, n, k, batch ? batch : 1};
    if (compute_time(profile, SSIM_PROFILE_GEMM, "", dim, dtype, fallback, out))
        return TRUE;
    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    SsimGemmShape g = {m, n, k, dim[3]};
    return profile_analytical(out, fallback, ssim_analytic_gemm_time(fallback, &g));
}

/* Sum of squared log errors of the shape model `p` over the measured GEMMs pts[0..n). */
static double gemm_sse(const SsimAnalyticParams *p, const CPoint *const *pts, guint n)
{
    double sse = 0;
    for (guint i = 0; i < n; i++) {
        double d = log(pts[i]->t) - log(model_us(p, pts[i]->dim));
        sse += d * d;
    }
    return sse;
}

/* Golden-section search of the GEMM efficiency in [0.05, 1] for the tile overhead in `p`. */
static double best_efficiency(SsimAnalyticParams *p, const CPoint *const *pts, guint n)
{
    const double g = 0.6180339887498949;
    double a = 0.05, b = 1.0;
    for (int it = 0; it < 50; it++) {
        double x1 = b - g * (b - a), x2 = a + g * (b - a);
        p->gemm_efficiency = x1;
        double f1 = gemm_sse(p, pts, n);
        p->gemm_efficiency = x2;
        double f2 = gemm_sse(p, pts, n);
        if (f1 < f2)
            b = x2;
        else
            a = x1;
    }
    p->gemm_efficiency = (a + b) / 2;
    return gemm_sse(p, pts, n);
}

gboolean ssim_profile_fit_gemm_model(const SsimProfile *profile, SsimDtype dtype,
                                     const SsimAnalyticParams *start, SsimAnalyticParams *fitted,
                                     SsimGemmModelFit *fit)
{
    g_return_val_if_fail(profile != NULL && start != NULL && fitted != NULL, FALSE);
    *fitted = *start;
    if (fit)
        memset(fit, 0, sizeof *fit);
    if (start->sm_count == 0)
        return FALSE;
    const ProfileIndex *ix = profile_index_get(profile);
    g_autoptr(GPtrArray) pts = g_ptr_array_new();
    for (guint i = 0; i < ix->cpoints->len; i++) {
        const CPoint *c = &g_array_index(ix->cpoints, CPoint, i);
        if (c->kind == SSIM_PROFILE_GEMM && c->dtype == (int)dtype)
            g_ptr_array_add(pts, (gpointer)c);
    }
    guint n = pts->len;
    if (n == 0)
        return FALSE;
    const CPoint *const *pp = (const CPoint *const *)pts->pdata;
    /* The tile overhead on a log grid from 0.05 to 20 us (and 0), the efficiency by golden
     * section at each; then a golden refinement of the overhead around the best grid point.
     * One or two rows cannot tell the two apart: the overhead stays the start's. */
    SsimAnalyticParams p = *start;
    double best = best_efficiency(&p, pp, n), best_tau = ssim_time_to_seconds(p.gemm_tile_overhead);
    double best_e = p.gemm_efficiency;
    if (n >= 3) {
        for (int i = -1; i <= 24; i++) {
            double tau = i < 0 ? 0 : 0.05e-6 * pow(20.0 / 0.05, i / 24.0);
            p.gemm_tile_overhead = ssim_time_from_seconds(tau);
            double f = best_efficiency(&p, pp, n);
            if (f < best) {
                best = f;
                best_tau = tau;
                best_e = p.gemm_efficiency;
            }
        }
        if (best_tau > 0) {
            const double g = 0.6180339887498949, step = log(20.0 / 0.05) / 24.0;
            double a = log(best_tau) - step, b = log(best_tau) + step;
            for (int it = 0; it < 30; it++) {
                double x1 = b - g * (b - a), x2 = a + g * (b - a);
                p.gemm_tile_overhead = ssim_time_from_seconds(exp(x1));
                double f1 = best_efficiency(&p, pp, n);
                p.gemm_tile_overhead = ssim_time_from_seconds(exp(x2));
                double f2 = best_efficiency(&p, pp, n);
                if (f1 < f2)
                    b = x2;
                else
                    a = x1;
            }
            p.gemm_tile_overhead = ssim_time_from_seconds(exp((a + b) / 2));
            double f = best_efficiency(&p, pp, n);
            if (f < best) {
                best = f;
                best_tau = exp((a + b) / 2);
                best_e = p.gemm_efficiency;
            }
        }
    }
    fitted->gemm_efficiency = best_e;
    fitted->gemm_tile_overhead = ssim_time_from_seconds(best_tau);
    if (fit) {
        fit->rows = n;
        fit->efficiency = best_e;
        fit->tile_overhead_us = best_tau * 1e6;
        fit->rms_log_error = sqrt(best / n);
    }
    return TRUE;
}

gboolean ssim_profile_flops_time(const SsimProfile *profile, double flops, SsimDtype dtype,
                                 const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const ProfileIndex *ix = profile_index_get(profile);
    double f = flops > 1 ? flops : 1;
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        if (c->kind != SSIM_PROFILE_GEMM || c->dtype != (int)dtype)
            continue;
        const Point *p = &g_array_index(ix->points, Point, c->first);
        if (f >= p[0].x && f <= p[c->n - 1].x) {
            double t;
            SsimCostSource s = profile_curve_eval(ix, c, f, &t);
            return profile_finish(out, t, s);
        }
        const Point *e = f < p[0].x ? &p[0] : &p[c->n - 1];
        return profile_finish(out, e->t / profile_fit_time(c, e->x) * profile_fit_time(c, f),
                              SSIM_COST_EXTRAPOLATED);
    }
    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    return profile_analytical(out, fallback, ssim_analytic_compute_time(fallback, flops, 0));
}

gboolean ssim_profile_attention_pass(const char *op, gboolean *backward, gboolean *flash)
{
    static const char *const passes[] = {"fwd", "bwd", "flash-fwd", "flash-bwd"};
    for (guint i = 0; op != NULL && i < G_N_ELEMENTS(passes); i++)
        if (strcmp(op, passes[i]) == 0) {
            if (backward)
                *backward = i % 2 == 1;
            if (flash)
                *flash = i >= 2;
            return TRUE;
        }
    return FALSE;
}

guint64 ssim_profile_flash_bytes(gboolean backward, guint64 seq, guint64 heads, guint64 head_dim,
                                 guint64 batch, SsimDtype dtype)
{
    guint64 b = batch ? batch : 1, q = b * seq * heads * head_dim;
    return ssim_flash_bytes(backward, q, q, b * heads * seq, ssim_dtype_size(dtype));
}

gboolean ssim_profile_flash_time(const SsimProfile *profile, gboolean backward, guint64 seq,
                                 guint64 heads, guint64 head_dim, guint64 batch, guint64 bytes,
                                 SsimDtype dtype, const SsimAnalyticParams *fallback,
                                 SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const guint64 dim[4] = {seq, heads, head_dim, batch ? batch : 1};
    if (compute_time(profile, SSIM_PROFILE_ATTENTION, backward ? "flash-bwd" : "flash-fwd", dim,
                     dtype, NULL, out))
        return TRUE;
    if (fallback == NULL)
        return FALSE;
    SsimGemmShape score = {seq, seq, head_dim, heads * dim[3]};
    return profile_analytical(out, fallback,
                              ssim_analytic_flash_time(fallback, &score, bytes, backward));
}

gboolean ssim_profile_attention_time(const SsimProfile *profile, gboolean backward, guint64 seq,
                                     guint64 heads, guint64 head_dim, guint64 batch,
                                     SsimDtype dtype, const SsimAnalyticParams *fallback,
                                     SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && out != NULL, FALSE);
    const guint64 dim[4] = {seq, heads, head_dim, batch ? batch : 1};
    const char *pass = backward ? "bwd" : "fwd";
    if (compute_time(profile, SSIM_PROFILE_ATTENTION, pass, dim, dtype, NULL, out))
        return TRUE;
    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    double bytes = 4.0 * (double)(seq * heads * head_dim * dim[3]) * ssim_dtype_size(dtype) *
                   (backward ? 2 : 1);
    return profile_analytical(
        out, fallback,
        ssim_analytic_compute_time(fallback,
                                   profile_compute_flops(SSIM_PROFILE_ATTENTION, backward, dim),
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
        SsimCostSource s = profile_curve_eval(ix, same, x, &t);
        return profile_finish(out, t, s);
    }
    const Curve *c = other;
    if (c == NULL && kind == SSIM_PROFILE_MEMORY && ix->pooled_memory >= 0)
        c = &g_array_index(ix->curves, Curve, ix->pooled_memory);
    if (c == NULL)
        return FALSE;
    SsimCostSource s = profile_curve_eval(ix, c, x, &t);
    return profile_finish(out, t, MAX(SSIM_COST_INTERPOLATED, s));
}

gboolean ssim_profile_memory_time(const SsimProfile *profile, const char *op, int dtype,
                                  guint64 bytes, const SsimAnalyticParams *fallback,
                                  SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && op != NULL && out != NULL, FALSE);
    if (bytes_time(profile_index_get(profile), SSIM_PROFILE_MEMORY, op, dtype,
                   bytes ? (double)bytes : 1.0, out))
        return TRUE;
    return profile_analytical(out, fallback,
                              fallback ? ssim_analytic_compute_time(fallback, 0, bytes) : 0);
}

gboolean ssim_profile_copy_time(const SsimProfile *profile, const char *op, guint64 bytes,
                                const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(profile != NULL && op != NULL && out != NULL, FALSE);
    if (bytes_time(profile_index_get(profile), SSIM_PROFILE_COPY, op, SSIM_PROFILE_NO_DTYPE,
                   bytes ? (double)bytes : 1.0, out))
        return TRUE;
    if (fallback == NULL)
        return profile_analytical(out, NULL, 0);
    /* A copy's bytes are read plus written (docs/profiles.md), so a transfer carries half of
     * them.  d2d moves through HBM; p2p over NVLink; h2d/d2h over PCIe, which the cluster does
     * not describe: the NIC path (PCIe-class bandwidth) stands in for it. */
    SsimTime t = strcmp(op, "d2d") == 0   ? ssim_analytic_compute_time(fallback, 0, bytes)
                 : strcmp(op, "p2p") == 0 ? ssim_analytic_p2p_time(fallback, bytes / 2, FALSE)
                                          : ssim_analytic_p2p_time(fallback, bytes / 2, TRUE);
    return profile_analytical(out, fallback, t);
}
