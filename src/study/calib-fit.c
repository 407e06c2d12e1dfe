/*
 * Calibration: fitting the analytic cost model's free parameters (cluster efficiencies,
 * latencies, overlap slowdown, kernel overhead) to measured runs, k-fold cross-validation, and
 * the cluster INI writer that stores the result.
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
 * Invariant: the INI writer writes every key the loader reads, in the loader's units, each
 * number in the shortest decimal that reads back to the same double, so
 * ssim_cluster_load_data(ssim_cluster_write_ini(c)) has c's figures.
 */
#include <shiftsim/calibrate.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <string.h>

typedef struct {
    const char *key;
    double lo, hi;
    gboolean log_scale;
} ParamInfo;

static const ParamInfo params[SSIM_CALIB_N] = {
#define SSIM_X(e, k, l, h, lg) {k, l, h, lg},
    SSIM_CALIB_PARAM_LIST(SSIM_X)
#undef SSIM_X
};

G_STATIC_ASSERT(SSIM_CALIB_N <= 16);

const char *ssim_calib_param_name(SsimCalibParam p)
{
    g_return_val_if_fail((guint)p < SSIM_CALIB_N, "?");
    return params[p].key;
}

gboolean ssim_calib_params_parse(const char *list, guint64 *mask, GError **error)
{
    g_auto(GStrv) names = g_strsplit(list, ",", -1);
    guint64 m = 0;
    for (guint i = 0; names[i]; i++) {
        const char *n = g_strstrip(names[i]);
        if (*n == '\0')
            continue;
        guint p;
        for (p = 0; p < SSIM_CALIB_N; p++)
            if (strcmp(params[p].key, n) == 0)
                break;
        if (p == SSIM_CALIB_N) {
            g_autoptr(GString) known = g_string_new(NULL);
            for (guint q = 0; q < SSIM_CALIB_N; q++)
                g_string_append_printf(known, "%s%s", q ? ", " : "", params[q].key);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s' is not a calibration parameter (known: %s)", n, known->str);
            return FALSE;
        }
        m |= G_GUINT64_CONSTANT(1) << p;
    }
    if (m == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "no parameter named");
        return FALSE;
    }
    *mask = m;
    return TRUE;
}

guint64 ssim_calib_params_default(void)
{
    return (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_MEMORY) | (1u << SSIM_CALIB_NVLINK) |
           (1u << SSIM_CALIB_NVLINK_LATENCY) | (1u << SSIM_CALIB_KERNEL_OVERHEAD) |
           (1u << SSIM_CALIB_KERNEL_FLOOR);
}

static double us_of(SsimTime t)
{
    return ssim_time_to_seconds(t) * 1e6;
}

double ssim_calib_param_get(const SsimCluster *c, SsimCalibParam p)
{
    switch (p) {
    case SSIM_CALIB_GEMM:
        return c->gemm_efficiency;
    case SSIM_CALIB_GEMM_HALF:
        return c->gemm_half_flops / 1e9;
    case SSIM_CALIB_MEMORY:
        return c->memory_efficiency;
    case SSIM_CALIB_NVLINK:
        return c->nvlink_efficiency;
    case SSIM_CALIB_NVLINK_LATENCY:
        return us_of(c->nvlink_latency);
    case SSIM_CALIB_IB:
        return c->ib_efficiency;
    case SSIM_CALIB_IB_LATENCY:
        return us_of(c->nic_latency);
    case SSIM_CALIB_OVERLAP:
        return c->overlap_slowdown;
    case SSIM_CALIB_KERNEL_OVERHEAD:
        return us_of(c->kernel_overhead);
    case SSIM_CALIB_KERNEL_FLOOR:
        return us_of(c->kernel_floor);
    default:
        g_return_val_if_reached(NAN);
    }
}

void ssim_calib_param_set(SsimCluster *c, SsimCalibParam p, double v)
{
    switch (p) {
    case SSIM_CALIB_GEMM:
        c->gemm_efficiency = v;
        break;
    case SSIM_CALIB_GEMM_HALF:
        c->gemm_half_flops = v * 1e9;
        break;
    case SSIM_CALIB_MEMORY:
        c->memory_efficiency = v;
        break;
    case SSIM_CALIB_NVLINK:
        c->nvlink_efficiency = v;
        break;
    case SSIM_CALIB_NVLINK_LATENCY:
        c->nvlink_latency = ssim_time_from_seconds(v * 1e-6);
        break;
    case SSIM_CALIB_IB:
        c->ib_efficiency = v;
        break;
    case SSIM_CALIB_IB_LATENCY:
        c->nic_latency = ssim_time_from_seconds(v * 1e-6);
        break;
    case SSIM_CALIB_OVERLAP:
        c->overlap_slowdown = v;
        break;
    case SSIM_CALIB_KERNEL_OVERHEAD:
        c->kernel_overhead = ssim_time_from_seconds(v * 1e-6);
        break;
    case SSIM_CALIB_KERNEL_FLOOR:
        c->kernel_floor = ssim_time_from_seconds(v * 1e-6);
        break;
    default:
        g_return_if_reached();
    }
}

void ssim_calib_values_apply(const SsimCalibValues *values, SsimCluster *cluster)
{
    for (guint p = 0; p < SSIM_CALIB_N; p++)
        if (values->mask & (G_GUINT64_CONSTANT(1) << p))
            ssim_calib_param_set(cluster, (SsimCalibParam)p, values->value[p]);
}

/* ---- the search space ------------------------------------------------------------------- */

static double to_value(SsimCalibParam p, double x)
{
    const ParamInfo *pi = &params[p];
    double s = 1.0 / (1.0 + exp(-x));
    if (pi->log_scale)
        return exp(log(pi->lo) + (log(pi->hi) - log(pi->lo)) * s);
    return pi->lo + (pi->hi - pi->lo) * s;
}

static double to_x(SsimCalibParam p, double v)
{
    const ParamInfo *pi = &params[p];
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
    gsl_multimin_fminimizer_free(s);
    gsl_vector_free(x);
    gsl_vector_free(step);
    g_free(o.pred);
    g_free(o.meas);
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
    g_autofree guint *train = g_new(guint, n), *test = g_new(guint, n), *pos = g_new(guint, n);
    g_autofree double *pred = g_new(double, n);
    for (guint f = 0; f < k; f++) {
        guint nt = 0, nv = 0;
        for (guint j = 0; j < n; j++) {
            guint i = idx ? idx[j] : j;
            if (j % k == f) {
                pos[nv] = j;
                test[nv++] = i;
            } else {
                train[nt++] = i;
            }
        }
        SsimCalibFit fit;
        if (!ssim_calibrate_fit(set, train, nt, start, options, &fit, error))
            return FALSE;
        ssim_run_set_predict(set, test, nv, &fit.fitted, options->threads, pred, NULL);
        for (guint j = 0; j < nv; j++)
            cv_pred[pos[j]] = pred[j];
    }
    return TRUE;
}

/* ---- the INI writer --------------------------------------------------------------------- */

static void kv(GString *out, const char *key, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE], fmt[8];
    for (int prec = 1; prec <= 17; prec++) {
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    g_string_append_printf(out, "%s = %s\n", key, buf);
}

GString *ssim_cluster_write_ini(const SsimCluster *c, const char *comment)
{
    GString *out = g_string_new(NULL);
    if (comment) {
        g_auto(GStrv) lines = g_strsplit(comment, "\n", -1);
        for (guint i = 0; lines[i]; i++)
            if (lines[i][0] != '\0' || lines[i + 1] != NULL)
                g_string_append_printf(out, "#%s%s\n", lines[i][0] ? " " : "", lines[i]);
    }
    g_string_append_printf(out,
                           "[cluster]\nformat = 1\nname = %s\ngpu = %s\n"
                           "gpus_per_node = %u\nnodes = %u\n\n[gpu]\n",
                           c->name, c->gpu, c->gpus_per_node, c->nodes);
    static const char *const peak_keys[SSIM_DTYPE_N] = {[SSIM_DTYPE_FP8] = "peak_tflops_fp8",
                                                        [SSIM_DTYPE_BF16] = "peak_tflops_bf16",
                                                        [SSIM_DTYPE_FP16] = "peak_tflops_fp16",
                                                        [SSIM_DTYPE_TF32] = "peak_tflops_tf32",
                                                        [SSIM_DTYPE_FP32] = "peak_tflops_fp32"};
    for (guint d = 0; d < SSIM_DTYPE_N; d++)
        kv(out, peak_keys[d], c->peak_flops[d] / 1e12);
    g_string_append_printf(out, "hbm_capacity_MiB = %" G_GUINT64_FORMAT "\n",
                           c->hbm_bytes / (1024 * 1024));
    kv(out, "hbm_bandwidth_GB_s", c->hbm_bw / 1e9);
    g_string_append(out, "\n[nvlink]\n");
    kv(out, "bandwidth_GB_s", c->nvlink_bw / 1e9);
    kv(out, "latency_us", us_of(c->nvlink_latency));
    g_string_append_printf(out, "\n[network]\nnics_per_node = %u\n", c->nics_per_node);
    kv(out, "nic_bandwidth_Gbit_s", c->nic_bw * 8 / 1e9);
    kv(out, "latency_us", us_of(c->nic_latency));
    g_string_append_printf(out, "algorithm = %s\n",
                           ssim_net_algorithm_name((SsimNetAlgorithm)c->net_algorithm));
    kv(out, "step_overhead_us", us_of(c->step_overhead));
    g_string_append(out, "\n[efficiency]\n");
    kv(out, "gemm", c->gemm_efficiency);
    kv(out, "gemm_half_gflop", c->gemm_half_flops / 1e9);
    kv(out, "memory", c->memory_efficiency);
    kv(out, "nvlink", c->nvlink_efficiency);
    kv(out, "ib", c->ib_efficiency);
    kv(out, "overlap_slowdown", c->overlap_slowdown);
    kv(out, "kernel_overhead_us", us_of(c->kernel_overhead));
    if (c->kernel_floor > 0)
        kv(out, "kernel_floor_us", us_of(c->kernel_floor));
    g_string_append_printf(out, "\n[topology]\nkind = rail-fat-tree\nnvlink_ports = %u\n",
                           c->nvlink_ports);
    kv(out, "pcie_bandwidth_GB_s", c->pcie_bw / 1e9);
    kv(out, "pcie_latency_us", us_of(c->pcie_latency));
    g_string_append_printf(out, "rails = %u\ngpus_per_nic = %u\nnodes_per_leaf = %u\n", c->rails,
                           c->gpus_per_nic, c->nodes_per_leaf);
    kv(out, "oversubscription", c->oversubscription);
    kv(out, "spine_latency_us", us_of(c->spine_latency));
    return out;
}
