/*
 * Calibration: fitting the analytic cost model's free parameters (cluster efficiencies,
 * latencies, overlap slowdown, kernel overhead) to measured runs, and k-fold cross-validation.
 *
 * The loss is the mean squared log error of predicted vs measured iteration time over the rows
 * fitted: symmetric in over- and under-prediction and scale-free, so a 100 ms run and a 2 s run
 * weigh the same.  A row whose simulation fails costs a fixed penalty (as if 10x off), so the
 * search moves away from parameter values that break configurations.  The search is GSL's
 * Nelder-Mead simplex (nmsimplex2) over an unconstrained vector x: parameter p is
 * lo + (hi - lo) / (1 + exp(-x_p)) (in log space for log-scale parameters), so every point the
 * simplex visits is inside the bounds of SSIM_CALIB_PARAM_LIST.  Each loss evaluation simulates
 * every fitted row; rows run in parallel and the result does not depend on the thread count.
 *
 * Generalisation is measured by fitting on some rows and predicting the others: k folds of
 * interleaved rows, or leave-one-group-out (every run of one model, node count, tp or GPU count
 * held out at once), which asks whether the fit carries to a configuration it has not seen at
 * all.  The fitted parameters' uncertainty is the usual nonlinear least-squares one: the
 * covariance s^2 (J^T J)^-1 of the log residuals at the optimum, J by finite differences.
 */
#include <shiftsim/calibrate.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlin.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <string.h>

/* The range a fit searches for each parameter, from the registry. */
typedef struct {
    double lo, hi;
    gboolean log_scale;
} ParamRange;

static const ParamRange params[SSIM_CALIB_N] = {
#define SSIM_X(e, k, l, h, lg) {l, h, lg},
    SSIM_CALIB_PARAM_LIST(SSIM_X)
#undef SSIM_X
};

/* ---- the search space ------------------------------------------------------------------- */

static double to_value(SsimCalibParam p, double x)
{
    const ParamRange *pi = &params[p];
    double s = 1.0 / (1.0 + exp(-x));
    if (pi->log_scale)
        return exp(log(pi->lo) + (log(pi->hi) - log(pi->lo)) * s);
    return pi->lo + (pi->hi - pi->lo) * s;
}

static double to_x(SsimCalibParam p, double v)
{
    const ParamRange *pi = &params[p];
    double s = pi->log_scale ? (log(v) - log(pi->lo)) / (log(pi->hi) - log(pi->lo))
                             : (v - pi->lo) / (pi->hi - pi->lo);
    s = CLAMP(s, 0.02, 0.98); /* a start on a bound would pin the logistic map */
    return log(s / (1 - s));
}

typedef struct {
    const SsimRunSet *set;
    const guint *idx;
    guint n;
    guint threads;
    SsimCalibValues base; /* mask = the fitted parameters */
    guint order[SSIM_CALIB_N];
    guint dim;
    double *pred;
    double *meas;
} Objective;

static void values_of(const Objective *o, const gsl_vector *x, SsimCalibValues *v)
{
    *v = o->base;
    for (guint d = 0; d < o->dim; d++)
        v->value[o->order[d]] = to_value((SsimCalibParam)o->order[d], gsl_vector_get(x, d));
}

#define FAIL_PENALTY (log(10.0) * log(10.0))

static double loss_of(const Objective *o, const SsimCalibValues *v)
{
    ssim_run_set_predict(o->set, o->idx, o->n, v, o->threads, o->pred, NULL);
    double sum = 0;
    for (guint j = 0; j < o->n; j++) {
        double p = o->pred[j], m = o->meas[j];
        if (!isfinite(p) || !(p > 0)) {
            sum += FAIL_PENALTY;
            continue;
        }
        double l = log(p) - log(m);
        sum += l * l;
    }
    return o->n ? sum / o->n : 0;
}

static double objective_f(const gsl_vector *x, void *data)
{
    const Objective *o = data;
    SsimCalibValues v;
    values_of(o, x, &v);
    return loss_of(o, &v);
}

/* One coordinate pass over a coarse grid (see ssim_calibrate_fit): a deterministic start that
 * puts a parameter whose start value is far off (a new term left at 0) near its basin, which the
 * simplex's local search would not reach.  Grid point i of S is at the logistic fraction
 * (i + 0.5) / S of the parameter's range. */
static void coordinate_scan(const Objective *o, gsl_vector *x, guint points, double best)
{
    for (guint d = 0; d < o->dim; d++) {
        double keep = gsl_vector_get(x, d);
        for (guint i = 0; i < points; i++) {
            double s = (i + 0.5) / points;
            gsl_vector_set(x, d, log(s / (1 - s)));
            double l = objective_f(x, (void *)o);
            if (l < best) {
                best = l;
                keep = gsl_vector_get(x, d);
            }
        }
        gsl_vector_set(x, d, keep);
    }
}

/* Residuals r_j = log pred_j - log meas_j at `v` (FALSE when a row fails). */
static gboolean residuals(const Objective *o, const SsimCalibValues *v, double *r)
{
    ssim_run_set_predict(o->set, o->idx, o->n, v, o->threads, o->pred, NULL);
    for (guint j = 0; j < o->n; j++) {
        if (!isfinite(o->pred[j]) || !(o->pred[j] > 0))
            return FALSE;
        r[j] = log(o->pred[j]) - log(o->meas[j]);
    }
    return TRUE;
}

/*
 * The parameters' standard errors and 95% intervals at the optimum (see calibrate.h): a central
 * finite-difference Jacobian of the log residuals in each parameter's own unit (a one-sided one
 * at a bound), GSL's (J^T J)^-1 (gsl_multifit_covar, rank-revealing QR: a parameter the rows do
 * not determine gets no interval) scaled by s^2 = SSE / (n - p), and Student's t quantile.
 */
static void fit_intervals(const Objective *o, SsimCalibFit *fit)
{
    guint n = o->n, p = o->dim;
    if (n <= p)
        return;
    g_autofree double *r0 = g_new(double, n), *rp = g_new(double, n), *rm = g_new(double, n);
    if (!residuals(o, &fit->fitted, r0))
        return;
    gsl_matrix *J = gsl_matrix_alloc(n, p), *C = gsl_matrix_alloc(p, p);
    gboolean ok = TRUE;
    for (guint d = 0; d < p && ok; d++) {
        guint q = o->order[d];
        const ParamRange *pr = &params[q];
        double v = fit->fitted.value[q];
        double h = MAX(1e-2 * fabs(v), 1e-3 * (pr->hi - pr->lo));
        double hi = MIN(v + h, pr->hi), lo = MAX(v - h, pr->lo);
        fit->at_bound[q] =
            v - pr->lo < 1e-3 * (pr->hi - pr->lo) || pr->hi - v < 1e-3 * (pr->hi - pr->lo);
        SsimCalibValues a = fit->fitted, b = fit->fitted;
        a.value[q] = hi;
        b.value[q] = lo;
        ok = hi > lo && residuals(o, &a, rp) && residuals(o, &b, rm);
        for (guint j = 0; ok && j < n; j++)
            gsl_matrix_set(J, j, d, (rp[j] - rm[j]) / (hi - lo));
    }
    if (ok && gsl_multifit_covar(J, 1e-9, C) == GSL_SUCCESS) {
        double sse = 0;
        for (guint j = 0; j < n; j++)
            sse += r0[j] * r0[j];
        double s2 = sse / (double)(n - p), t = gsl_cdf_tdist_Pinv(0.975, (double)(n - p));
        for (guint d = 0; d < p; d++) {
            guint q = o->order[d];
            double var = gsl_matrix_get(C, d, d) * s2;
            /* A direction the QR found rank-deficient has a zero row: undetermined. */
            if (gsl_matrix_get(C, d, d) > 0 && isfinite(var)) {
                fit->std_error[q] = sqrt(var);
                fit->half_width[q] = t * sqrt(var);
                fit->has_interval |= G_GUINT64_CONSTANT(1) << q;
            }
        }
        fit->residual_sd = sqrt(s2);
    }
    gsl_matrix_free(J);
    gsl_matrix_free(C);
}

gboolean ssim_calibrate_fit(const SsimRunSet *set, const guint *idx, guint n,
                            const SsimCluster *start, const SsimCalibOptions *options,
                            SsimCalibFit *fit, GError **error)
{
    g_return_val_if_fail(set != NULL && start != NULL && options != NULL && fit, FALSE);
    memset(fit, 0, sizeof *fit);
    if (idx == NULL)
        n = ssim_run_set_n(set);
    if (n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "calibrate: no runs to fit");
        return FALSE;
    }
    Objective o = {.set = set, .idx = idx, .n = n, .threads = options->threads};
    o.base.mask = options->mask;
    for (guint p = 0; p < SSIM_CALIB_N; p++) {
        o.base.value[p] = ssim_calib_param_get(start, (SsimCalibParam)p);
        if (options->mask & (G_GUINT64_CONSTANT(1) << p))
            o.order[o.dim++] = p;
    }
    if (o.dim == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "calibrate: no parameter to fit");
        return FALSE;
    }
    o.pred = g_new(double, n);
    o.meas = g_new(double, n);
    for (guint j = 0; j < n; j++)
        o.meas[j] = ssim_run_set_measured_ms(set, idx ? idx[j] : j);

    fit->start = o.base;
    fit->loss_before = loss_of(&o, &o.base);

    gsl_vector *x = gsl_vector_alloc(o.dim), *step = gsl_vector_alloc(o.dim);
    for (guint d = 0; d < o.dim; d++) {
        gsl_vector_set(x, d, to_x((SsimCalibParam)o.order[d], o.base.value[o.order[d]]));
        gsl_vector_set(step, d, 0.5);
    }
    if (options->scan > 0)
        coordinate_scan(&o, x, options->scan, fit->loss_before);
    gsl_multimin_function fn = {.n = o.dim, .f = objective_f, .params = &o};
    gsl_multimin_fminimizer *s =
        gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, o.dim);
    gsl_multimin_fminimizer_set(s, &fn, x, step);
    guint max_iter = options->max_iter ? options->max_iter : 200;
    double tol = options->tolerance > 0 ? options->tolerance : 1e-3;
    int status = GSL_CONTINUE;
    guint iter = 0;
    while (status == GSL_CONTINUE && iter < max_iter) {
        iter++;
        if (gsl_multimin_fminimizer_iterate(s) != GSL_SUCCESS)
            break;
        status = gsl_multimin_test_size(gsl_multimin_fminimizer_size(s), tol);
    }
    values_of(&o, gsl_multimin_fminimizer_x(s), &fit->fitted);
    fit->loss_after = gsl_multimin_fminimizer_minimum(s);
    fit->iterations = iter;
    fit->converged = status == GSL_SUCCESS;
    if (options->intervals)
        fit_intervals(&o, fit);
    gsl_multimin_fminimizer_free(s);
    gsl_vector_free(x);
    gsl_vector_free(step);
    g_free(o.pred);
    g_free(o.meas);
    return TRUE;
}

gboolean ssim_calibrate_cross_validate_folds(const SsimRunSet *set, const guint *idx, guint n,
                                             const guint *fold, guint k, const SsimCluster *start,
                                             const SsimCalibOptions *options, double *cv_pred,
                                             GError **error)
{
    if (idx == NULL)
        n = ssim_run_set_n(set);
    g_autofree guint *train = g_new(guint, MAX(n, 1u)), *test = g_new(guint, MAX(n, 1u));
    g_autofree guint *pos = g_new(guint, MAX(n, 1u));
    g_autofree double *pred = g_new(double, MAX(n, 1u));
    SsimCalibOptions opt = *options;
    opt.intervals = FALSE; /* only the final fit's intervals are reported */
    for (guint f = 0; f < k; f++) {
        guint nt = 0, nv = 0;
        for (guint j = 0; j < n; j++) {
            guint i = idx ? idx[j] : j;
            if (fold[j] == f) {
                pos[nv] = j;
                test[nv++] = i;
            } else {
                train[nt++] = i;
            }
        }
        if (nv == 0)
            continue;
        if (nt == 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "calibrate: fold %u holds every run: nothing left to fit", f);
            return FALSE;
        }
        SsimCalibFit fit;
        if (!ssim_calibrate_fit(set, train, nt, start, &opt, &fit, error))
            return FALSE;
        ssim_run_set_predict(set, test, nv, &fit.fitted, options->threads, pred, NULL);
        for (guint j = 0; j < nv; j++)
            cv_pred[pos[j]] = pred[j];
    }
    return TRUE;
}

gboolean ssim_calibrate_cross_validate(const SsimRunSet *set, const guint *idx, guint n, guint k,
                                       const SsimCluster *start, const SsimCalibOptions *options,
                                       double *cv_pred, GError **error)
{
    if (idx == NULL)
        n = ssim_run_set_n(set);
    if (k < 2 || k > n) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "calibrate: --folds %u needs 2 <= folds <= runs (%u)", k, n);
        return FALSE;
    }
    g_autofree guint *fold = g_new(guint, n);
    for (guint j = 0; j < n; j++)
        fold[j] = j % k;
    return ssim_calibrate_cross_validate_folds(set, idx, n, fold, k, start, options, cv_pred,
                                               error);
}

gboolean ssim_calibrate_cross_validate_groups(const SsimRunSet *set, const guint *idx, guint n,
                                              const SsimGrouping *by, const SsimCluster *start,
                                              const SsimCalibOptions *options, double *cv_pred,
                                              guint *n_groups, GError **error)
{
    if (idx == NULL)
        n = ssim_run_set_n(set);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autofree guint *groups = ssim_run_set_groups_by(set, idx, n, by, names);
    *n_groups = names->len;
    if (names->len < 2) {
        g_autofree char *name = ssim_grouping_name(by);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "calibrate: --cv group:%s needs runs of two %s values or more (all %u "
                    "runs have %s)",
                    name, name, n, names->len ? (char *)g_ptr_array_index(names, 0) : "none");
        return FALSE;
    }
    return ssim_calibrate_cross_validate_folds(set, idx, n, groups, names->len, start, options,
                                               cv_pred, error);
}
