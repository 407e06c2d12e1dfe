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
 * GEMM size matters), tiny enough to simulate in a few ms each.  The stock cluster's host (eager
 * PyTorch's launches, which would make these tiny runs host-bound) is left out: under `eager`
 * the schedule is 1f1b without the host's work per phase, so only the launches the test fits
 * (kernel_floor_us) act; otherwise it is Alpa's compiled program, which has no host. */
static SsimRuns *synthetic_runs_with(gboolean eager)
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
        if (eager)
            cr_assert(ssim_parallel_set(&r.par, "step_costs", "-host", NULL));
        else
            g_strlcpy(r.par.schedule, "alpa", sizeof r.par.schedule);
        r.iteration_ms = 1000; /* replaced below */
        g_strlcpy(r.source, "simulated", sizeof r.source);
        r.line = i + 3;
        ssim_runs_add(runs, &r);
    }
    return runs;
}

static SsimRuns *synthetic_runs(void)
{
    return synthetic_runs_with(FALSE);
}

/* The runs of synthetic_runs() "measured" with `truth`: the simulator's own predictions. */
static SsimRunSet *measured_with(const SsimCalibValues *truth)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) proto = synthetic_runs();
    g_autoptr(SsimRunSet) proto_set = ssim_run_set_new(proto, NULL, &error);
    cr_assert_not_null(proto_set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(proto_set);
    double pred[8];
    ssim_run_set_predict(proto_set, NULL, n, truth, 2, pred, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_new("synthetic.csv");
    for (guint i = 0; i < n; i++) {
        SsimMeasuredRun r = *ssim_runs_get(proto, i);
        cr_assert(pred[i] > 0);
        r.iteration_ms = pred[i];
        ssim_runs_add(runs, &r);
    }
    SsimRunSet *set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    return set;
}

/* gemm_sustained (the share of a burst's GEMM rate a GPU keeps under a step's load; what
 * dgx-h100-calibrated.ini fits): runs "measured" at a known value give it back within 1%. */
Test(calib, recovers_the_sustained_gemm_rate)
{
    g_autoptr(GError) error = NULL;
    SsimCalibValues truth = {.mask = 1u << SSIM_CALIB_GEMM_SUSTAINED};
    truth.value[SSIM_CALIB_GEMM_SUSTAINED] = 0.74;
    g_autoptr(SsimRunSet) set = measured_with(&truth);
    guint n = ssim_run_set_n(set);
    g_autoptr(SsimCluster) start = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(start);
    cr_assert(fabs(ssim_calib_param_get(start, SSIM_CALIB_GEMM_SUSTAINED) - 0.74) > 0.05,
              "the start is elsewhere");
    SsimCalibOptions opt = {.mask = truth.mask, .max_iter = 400, .tolerance = 1e-6, .threads = 2};
    SsimCalibFit fit;
    cr_assert(ssim_calibrate_fit(set, NULL, n, start, &opt, &fit, &error));
    double got = fit.fitted.value[SSIM_CALIB_GEMM_SUSTAINED];
    cr_assert(fabs(got - 0.74) / 0.74 < 0.01, "fitted %g, truth 0.74", got);
    /* The cluster it writes carries it. */
    ssim_calib_values_apply(&fit.fitted, start);
    cr_assert_float_eq(start->gemm_sustained, got, 1e-12);
}

Test(calib, recovers_known_parameters)
{
    g_autoptr(GError) error = NULL;
    /* "Measure" with known parameters. */
    SsimCalibValues truth = {.mask = (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_NVLINK)};
    truth.value[SSIM_CALIB_GEMM] = 0.55;
    truth.value[SSIM_CALIB_NVLINK] = 0.45;
    g_autoptr(SsimRunSet) set = measured_with(&truth);
    guint n = ssim_run_set_n(set);
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
Test(calib, recovers_the_host_floor)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) proto = synthetic_runs_with(TRUE);
    g_autoptr(SsimRunSet) proto_set = ssim_run_set_new(proto, NULL, &error);
    cr_assert_not_null(proto_set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(proto_set);
    SsimCalibValues truth = {.mask = (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_KERNEL_FLOOR)};
    truth.value[SSIM_CALIB_GEMM] = 0.55;
    truth.value[SSIM_CALIB_KERNEL_FLOOR] = 40;
    double pred[8], free_pred[8];
    ssim_run_set_predict(proto_set, NULL, n, &truth, 2, pred, NULL);
    /* The floor matters: without it no run is slower, and most are 5% faster or more. */
    SsimCalibValues no_floor = truth;
    no_floor.value[SSIM_CALIB_KERNEL_FLOOR] = 0;
    ssim_run_set_predict(proto_set, NULL, n, &no_floor, 2, free_pred, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_new("synthetic.csv");
    guint slowed = 0;
    for (guint i = 0; i < n; i++) {
        cr_assert(pred[i] >= free_pred[i], "run %u: %g vs %g", i, pred[i], free_pred[i]);
        slowed += pred[i] > free_pred[i] * 1.05;
        SsimMeasuredRun r = *ssim_runs_get(proto, i);
        r.iteration_ms = pred[i];
        ssim_runs_add(runs, &r);
    }
    cr_assert_gt(2 * slowed, n, "%u of %u runs slowed by the floor", slowed, n);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    g_autoptr(SsimCluster) start = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(start);
    start->kernel_floor = 0; /* a start far from the truth: the stock file's measured host */
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

/* Runs of `synthetic_runs()` "measured" with `truth`, each time multiplied by exp(0.02 e_i) with
 * e_i a fixed standard normal draw (GRand seeded, so the data never change). */
static SsimRuns *noisy_runs(const SsimCalibValues *truth, double sigma)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) proto = ssim_runs_new("synthetic.csv");
    g_autoptr(SsimRuns) six = synthetic_runs();
    /* Twelve rows: the six splits at two depths, so each tp has rows of both models. */
    for (guint layers = 2; layers <= 4; layers += 2)
        for (guint i = 0; i < ssim_runs_n(six); i++) {
            SsimMeasuredRun r = *ssim_runs_get(six, i);
            r.layers = layers;
            g_snprintf(r.model, sizeof r.model, "tiny-l%u", layers);
            ssim_runs_add(proto, &r);
        }
    g_autoptr(SsimRunSet) set = ssim_run_set_new(proto, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(set);
    g_autofree double *pred = g_new(double, n);
    ssim_run_set_predict(set, NULL, n, truth, 2, pred, NULL);
    g_autoptr(GRand) rng = g_rand_new_with_seed(20240611);
    SsimRuns *runs = ssim_runs_new("synthetic.csv");
    for (guint i = 0; i < n; i++) {
        /* Box-Muller: a standard normal from two uniforms. */
        double u1 = g_rand_double(rng), u2 = g_rand_double(rng);
        double e = sqrt(-2 * log(1 - u1)) * cos(2 * G_PI * u2);
        SsimMeasuredRun r = *ssim_runs_get(proto, i);
        r.iteration_ms = pred[i] * exp(sigma * e);
        ssim_runs_add(runs, &r);
    }
    return runs;
}

/*
 * Known parameters under 2% measurement noise: the fit recovers each within its 95% interval,
 * the interval is informative (narrower than a fifth of the value), and leave-one-tp-out
 * cross-validation predicts every held-out tp to within the noise (no run of that tp was seen).
 */
Test(calib, group_cross_validation_recovers_known_parameters_within_intervals)
{
    g_autoptr(GError) error = NULL;
    SsimCalibValues truth = {.mask = (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_NVLINK)};
    truth.value[SSIM_CALIB_GEMM] = 0.55;
    truth.value[SSIM_CALIB_NVLINK] = 0.45;
    g_autoptr(SsimRuns) runs = noisy_runs(&truth, 0.02);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    g_autoptr(SsimCluster) start = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(start);
    guint n = ssim_run_set_n(set);
    SsimCalibOptions opt = {
        .mask = truth.mask, .max_iter = 300, .tolerance = 1e-6, .threads = 2, .intervals = TRUE};
    SsimCalibFit fit;
    cr_assert(ssim_calibrate_fit(set, NULL, n, start, &opt, &fit, &error));
    cr_assert(fit.residual_sd > 0.005 && fit.residual_sd < 0.04, "s = %g", fit.residual_sd);
    for (guint p = 0; p < SSIM_CALIB_N; p++) {
        if (!(truth.mask & (1u << p)))
            continue;
        cr_assert(fit.has_interval & (1u << p), "%s: no interval", ssim_calib_param_name(p));
        double err = fabs(fit.fitted.value[p] - truth.value[p]);
        cr_assert(err <= fit.half_width[p], "%s: fitted %g +/- %g, truth %g",
                  ssim_calib_param_name(p), fit.fitted.value[p], fit.half_width[p], truth.value[p]);
        cr_assert(fit.half_width[p] > 0 && fit.half_width[p] < 0.2 * truth.value[p],
                  "%s: half-width %g", ssim_calib_param_name(p), fit.half_width[p]);
    }
    /* Leave one tp out: 4 groups (tp 1, 2, 4, 8). */
    opt.max_iter = 150;
    opt.tolerance = 1e-4;
    g_autofree double *cv = g_new(double, n);
    g_autofree double *meas = g_new(double, n);
    guint groups = 0;
    const SsimGrouping by_tp = ssim_grouping_one(SSIM_GROUP_BY_TP);
    cr_assert(ssim_calibrate_cross_validate_groups(set, NULL, n, &by_tp, start, &opt, cv, &groups,
                                                   &error),
              "%s", error ? error->message : "");
    cr_assert_eq(groups, 4);
    for (guint i = 0; i < n; i++)
        meas[i] = ssim_run_set_measured_ms(set, i);
    SsimErrorStats s;
    ssim_error_stats(cv, meas, NULL, n, &s);
    cr_assert_eq(s.n, n);
    cr_assert(s.max < 0.08, "held-out max error %g", s.max);
    cr_assert(s.mape < 0.04, "held-out MAPE %g", s.mape);
    /* One group only cannot be left out. */
    g_autoptr(SsimRuns) one = ssim_runs_new("one.csv");
    ssim_runs_add(one, ssim_runs_get(runs, 0));
    ssim_runs_add(one, ssim_runs_get(runs, 6));
    g_autoptr(SsimRunSet) one_set = ssim_run_set_new(one, NULL, &error);
    cr_assert_not(ssim_calibrate_cross_validate_groups(one_set, NULL, 2, &by_tp, start, &opt, cv,
                                                       &groups, &error));
    cr_assert(strstr(error->message, "needs runs of two tp values or more"), "%s", error->message);
}
