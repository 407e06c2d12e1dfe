/*
 * Tests of calibration (study/calibrate).
 *
 * Oracle: a calibration must recover the parameters the simulator itself used to make its
 * "measurements" (within 2%), and cross-validation on such noise-free runs must predict the
 * held-out rows almost exactly.
 */
#include <criterion/criterion.h>
#include <shiftsim/calibrate.h>
#include <shiftsim/validate.h>

#include <math.h>
#include <string.h>

/* A small table of runs on one DGX A100 node: varied tp (so NVLink matters) and microbatch (so
 * GEMM size matters), tiny enough to simulate in a few ms each. */
static SsimRuns *synthetic_runs(void)
{
    SsimRuns *runs = ssim_runs_new("synthetic.csv");
    const guint tps[] = {1, 2, 4, 8, 2, 8};
    const guint mbs[] = {1, 2, 1, 2, 4, 4};
    for (guint i = 0; i < G_N_ELEMENTS(tps); i++) {
        SsimMeasuredRun r;
        ssim_measured_run_init(&r);
        g_strlcpy(r.model, "tiny", sizeof r.model);
        r.has_shape = TRUE;
        r.layers = 2;
        r.hidden = 1024;
        r.heads = 16;
        r.ffn = 4096;
        r.vocab = 8192;
        r.seq_len = 512;
        g_strlcpy(r.cluster, "dgx-a100", sizeof r.cluster);
        r.par.tp = tps[i];
        r.par.dp = 8 / tps[i];
        r.par.microbatch = mbs[i];
        r.par.global_batch = r.par.dp * mbs[i] * 2;
        r.iteration_ms = 1; /* replaced below */
        g_strlcpy(r.source, "simulated", sizeof r.source);
        r.line = i + 3;
        ssim_runs_add(runs, &r);
    }
    return runs;
}

Test(calib, recovers_known_parameters, .timeout = 120)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) proto = synthetic_runs();
    g_autoptr(SsimRunSet) proto_set = ssim_run_set_new(proto, NULL, &error);
    cr_assert_not_null(proto_set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(proto_set);
    /* "Measure" with known parameters. */
    SsimCalibValues truth = {.mask = (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_NVLINK)};
    truth.value[SSIM_CALIB_GEMM] = 0.55;
    truth.value[SSIM_CALIB_NVLINK] = 0.45;
    double pred[8];
    ssim_run_set_predict(proto_set, NULL, n, &truth, 2, pred, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_new("synthetic.csv");
    for (guint i = 0; i < n; i++) {
        SsimMeasuredRun r = *ssim_runs_get(proto, i);
        cr_assert(pred[i] > 0);
        r.iteration_ms = pred[i];
        ssim_runs_add(runs, &r);
    }
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    g_autoptr(SsimCluster) start = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(start);
    SsimCalibOptions opt = {.mask = truth.mask, .max_iter = 400, .tolerance = 1e-6, .threads = 2};
    SsimCalibFit fit;
    cr_assert(ssim_calibrate_fit(set, NULL, n, start, &opt, &fit, &error));
    cr_assert(fit.loss_after < fit.loss_before);
    cr_assert(fit.loss_after < 1e-6, "loss %g", fit.loss_after);
    for (guint p = 0; p < SSIM_CALIB_N; p++)
        if (truth.mask & (1u << p)) {
            double rel = fabs(fit.fitted.value[p] - truth.value[p]) / truth.value[p];
            cr_assert(rel < 0.02, "%s: fitted %g, truth %g", ssim_calib_param_name(p),
                      fit.fitted.value[p], truth.value[p]);
        }
    /* Cross-validation on noise-free data predicts the held-out rows almost exactly. */
    double cv[8];
    opt.max_iter = 150;
    opt.tolerance = 1e-4;
    cr_assert(ssim_calibrate_cross_validate(set, NULL, n, 3, start, &opt, cv, &error));
    double meas[8];
    for (guint i = 0; i < n; i++)
        meas[i] = ssim_run_set_measured_ms(set, i);
    SsimErrorStats s;
    ssim_error_stats(cv, meas, NULL, n, &s);
    cr_assert(s.max < 0.02, "cross-validated max error %g", s.max);
}

/* The host floor, a term whose stock value (0) sits at its bound, is recovered (with the
 * coordinate scan as the CLI runs it, then the simplex): runs simulated with a 40 us floor and
 * GEMM efficiency 0.55 give both back within 2% from the stock A100 figures. */
Test(calib, recovers_the_host_floor, .timeout = 120)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) proto = synthetic_runs();
    g_autoptr(SsimRunSet) proto_set = ssim_run_set_new(proto, NULL, &error);
    cr_assert_not_null(proto_set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(proto_set);
    SsimCalibValues truth = {.mask = (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_KERNEL_FLOOR)};
    truth.value[SSIM_CALIB_GEMM] = 0.55;
    truth.value[SSIM_CALIB_KERNEL_FLOOR] = 40;
    double pred[8], free_pred[8];
    ssim_run_set_predict(proto_set, NULL, n, &truth, 2, pred, NULL);
    /* The floor matters: without it every run is faster. */
    SsimCalibValues no_floor = truth;
    no_floor.value[SSIM_CALIB_KERNEL_FLOOR] = 0;
    ssim_run_set_predict(proto_set, NULL, n, &no_floor, 2, free_pred, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_new("synthetic.csv");
    for (guint i = 0; i < n; i++) {
        cr_assert(pred[i] > free_pred[i] * 1.05, "run %u: %g vs %g", i, pred[i], free_pred[i]);
        SsimMeasuredRun r = *ssim_runs_get(proto, i);
        r.iteration_ms = pred[i];
        ssim_runs_add(runs, &r);
    }
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    g_autoptr(SsimCluster) start = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(start);
    cr_assert_eq(start->kernel_floor, 0);
    SsimCalibOptions opt = {
        .mask = truth.mask, .max_iter = 300, .tolerance = 1e-6, .threads = 2, .scan = 5};
    SsimCalibFit fit;
    cr_assert(ssim_calibrate_fit(set, NULL, n, start, &opt, &fit, &error));
    cr_assert(fit.loss_after < 1e-6, "loss %g", fit.loss_after);
    for (guint p = 0; p < SSIM_CALIB_N; p++)
        if (truth.mask & (1u << p)) {
            double rel = fabs(fit.fitted.value[p] - truth.value[p]) / truth.value[p];
            cr_assert(rel < 0.02, "%s: fitted %g, truth %g", ssim_calib_param_name(p),
                      fit.fitted.value[p], truth.value[p]);
        }
}
