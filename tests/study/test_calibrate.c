/*
 * Tests of measured runs, validation statistics, calibration and the Kineto importer.
 *
 * Oracles: hand-computed MAPE, median, max and Kendall's tau on four rows; a calibration that
 * must recover the parameters the simulator itself used to make its "measurements" (within 2%);
 * the vTrain converter against the shipped file; the cluster INI writer against the loader; a
 * small hand-written Kineto trace whose rows and step time are worked out by hand; and the
 * exact `file:line:column: field:` messages of malformed runs files.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <shiftsim/calibrate.h>
#include <shiftsim/kineto.h>

#include <math.h>
#include <string.h>

#define RUNS_DATA SSIM_TEST_DATA "/runs/"

Test(calib, stats_hand_computed)
{
    const double meas[] = {100, 200, 300, 400};
    const double pred[] = {110, 180, 330, 200};
    /* errors +0.1, -0.1, +0.1, -0.5 */
    const guint one_group[] = {0, 0, 0, 0}, two_groups[] = {0, 0, 1, 1};
    SsimErrorStats s;
    ssim_error_stats(pred, meas, one_group, 4, &s);
    cr_assert_eq(s.n, 4);
    cr_assert_float_eq(s.mape, 0.2, 1e-12);
    cr_assert_float_eq(s.median, 0.1, 1e-12);
    cr_assert_float_eq(s.max, 0.5, 1e-12);
    cr_assert_float_eq(s.bias, -0.1, 1e-12);
    /* Six pairs: only (300, 400) -> (330, 200) is discordant: (5 - 1) / 6. */
    cr_assert_eq(s.pairs, 6);
    cr_assert_float_eq(s.tau, 4.0 / 6.0, 1e-12);
    ssim_error_stats(pred, meas, two_groups, 4, &s);
    cr_assert_eq(s.pairs, 2); /* (100,200) concordant, (300,400) discordant */
    cr_assert_float_eq(s.tau, 0.0, 1e-12);
    /* A failed row is left out of the figures. */
    const double pred_nan[] = {110, NAN, 330, 200};
    ssim_error_stats(pred_nan, meas, one_group, 4, &s);
    cr_assert_eq(s.n, 3);
    cr_assert_eq(s.failed, 1);
    cr_assert_float_eq(s.mape, 0.7 / 3, 1e-12);
    cr_assert_float_eq(s.median, 0.1, 1e-12);
    cr_assert_eq(s.pairs, 3);
    cr_assert_float_eq(s.tau, 1.0 / 3.0, 1e-12);
}

typedef struct {
    char file[40];
    char message[160];
} BadRuns;

ParameterizedTestParameters(calib, bad_runs)
{
    static BadRuns cases[] = {
        {"bad-version.csv", "bad-version.csv:1:1: version: the first line must be"},
        {"bad-header.csv", "bad-header.csv:2:1: header: 3 columns, expected 22"},
        {"bad-tp.csv", "bad-tp.csv:3:41: tp: 'x' is not a positive integer"},
        {"no-measurement.csv", "no-measurement.csv:3:65: iteration_ms: missing"},
        {"short-row.csv", "short-row.csv:3:67: tflops_per_gpu: the row has 20 fields"},
        {"bad-recompute.csv", "bad-recompute.csv:4:56: recompute: 'most' is not one of"},
        {"bad-quote.csv", "bad-quote.csv:3:"},
        {"negative-time.csv", "negative-time.csv:3:65: iteration_ms: '-3' is not a positive"},
    };
    return cr_make_param_array(BadRuns, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadRuns *c, calib, bad_runs)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_strconcat(RUNS_DATA, c->file, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_load(path, &error);
    cr_assert_null(runs, "%s loaded", c->file);
    cr_assert(strstr(error->message, c->message) != NULL, "%s: got '%s', want '%s'", c->file,
              error->message, c->message);
}

Test(calib, runs_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    /* Ten Narayanan et al. 2021 rows, eight Korthikanti et al. 2022 Table 5 rows and the 530B
     * run at 8-way data parallelism of its section 6.3. */
    cr_assert_eq(ssim_runs_n(runs), 19);
    cr_assert_float_eq(ssim_runs_get(runs, 0)->tflops_per_gpu, 137, 1e-12);
    const SsimMeasuredRun *k = ssim_runs_get(runs, 15);
    cr_assert_str_eq(k->model, "korthikanti-530b");
    cr_assert_eq(k->par.pp, 35);
    cr_assert_eq(k->par.virtual_stages, 3);
    cr_assert_eq(k->par.recompute, SSIM_RECOMPUTE_SELECTIVE);
    cr_assert(k->par.sequence_parallel);
    cr_assert_float_eq(k->iteration_ms, 37830, 1e-9);
    g_autoptr(GString) a = ssim_runs_write(runs);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autoptr(GString) b = ssim_runs_write(back);
    cr_assert_str_eq(a->str, b->str);
}

/* The shipped vTrain runs file is exactly what the converter makes of the bundled table. */
Test(calib, vtrain_converter_matches_shipped_file)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_from_vtrain(
        SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100/ground_truth_single.csv", "dgx-a100",
        &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_n(runs), 1440);
    g_autoptr(GString) text = ssim_runs_write(runs);
    g_autofree char *shipped = NULL;
    cr_assert(g_file_get_contents(SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100-single.csv",
                                  &shipped, NULL, NULL));
    cr_assert(strcmp(text->str, shipped) == 0, "shipped file differs from the converter output");
    const SsimMeasuredRun *r = ssim_runs_get(runs, 0);
    cr_assert_eq(r->par.pp, 2);
    cr_assert_eq(r->par.microbatch, 8);
    cr_assert_eq(r->par.recompute, SSIM_RECOMPUTE_FULL);
    cr_assert_float_eq(r->iteration_ms, 372.160408, 1e-9);
}

Test(calib, cluster_ini_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    c->gemm_efficiency = 0.61234;
    c->kernel_overhead = 7321;
    c->kernel_floor = 81234;
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, "calibrated\nby a test");
    cr_assert(g_str_has_prefix(ini->str, "# calibrated\n# by a test\n[cluster]"));
    g_autoptr(SsimCluster) d = ssim_cluster_load_data(ini->str, (gssize)ini->len, "x.ini", &error);
    cr_assert_not_null(d, "%s", error ? error->message : "");
    cr_assert_eq(d->gpus_per_node, c->gpus_per_node);
    cr_assert_eq(d->hbm_bytes, c->hbm_bytes);
    for (guint k = 0; k < SSIM_DTYPE_N; k++)
        cr_assert_float_eq(d->peak_flops[k], c->peak_flops[k], 1e-3 + 1e-12 * c->peak_flops[k]);
    cr_assert_float_eq(d->hbm_bw, c->hbm_bw, 1e-6 * c->hbm_bw);
    cr_assert_float_eq(d->nic_bw, c->nic_bw, 1e-9 * c->nic_bw);
    cr_assert_float_eq(d->pcie_bw, c->pcie_bw, 1e-9 * c->pcie_bw);
    cr_assert_eq(d->nvlink_latency, c->nvlink_latency);
    cr_assert_eq(d->nic_latency, c->nic_latency);
    cr_assert_eq(d->kernel_overhead, 7321);
    cr_assert_eq(d->kernel_floor, 81234);
    cr_assert_eq(d->spine_latency, c->spine_latency);
    cr_assert_eq(d->nodes_per_leaf, c->nodes_per_leaf);
    for (guint p = 0; p < SSIM_CALIB_N; p++)
        cr_assert_float_eq(ssim_calib_param_get(d, p), ssim_calib_param_get(c, p), 1e-9, "%s",
                           ssim_calib_param_name(p));
}

Test(calib, params_parse)
{
    g_autoptr(GError) error = NULL;
    guint64 mask = 0;
    cr_assert(ssim_calib_params_parse("gemm, nvlink", &mask, &error));
    cr_assert_eq(mask, (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_NVLINK));
    cr_assert_not(ssim_calib_params_parse("gemm,speed", &mask, &error));
    cr_assert(strstr(error->message, "'speed' is not a calibration parameter") != NULL);
}

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

Test(calib, kineto_small_trace)
{
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary sum;
    g_autoptr(SsimProfile) p = ssim_kineto_load(SSIM_TEST_DATA "/kineto/small.json", &sum, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(sum.kernels, 5);
    cr_assert_eq(sum.gemm, 3);
    cr_assert_eq(sum.comm, 1);
    cr_assert_eq(sum.copy, 1);
    cr_assert_eq(sum.unmapped, 1);
    cr_assert_eq(sum.steps, 2);
    cr_assert_float_eq(sum.step_ms, 11.0, 1e-9);
    cr_assert_eq(ssim_profile_n_rows(p), 4);
    const SsimProfileRow *mm = ssim_profile_row(p, 0);
    cr_assert_eq(mm->kind, SSIM_PROFILE_GEMM);
    cr_assert_str_eq(mm->op, "mm");
    cr_assert_eq(mm->m, 128);
    cr_assert_eq(mm->n, 32);
    cr_assert_eq(mm->k, 64);
    cr_assert_eq(mm->batch, 1);
    cr_assert_eq(mm->dtype, SSIM_DTYPE_BF16);
    cr_assert_float_eq(mm->time_us, 12.0, 1e-9);
    cr_assert_float_eq(mm->min_us, 10.0, 1e-9);
    cr_assert_eq(mm->samples, 2);
    cr_assert_float_eq(mm->stddev_us, sqrt(8.0), 1e-9);
    const SsimProfileRow *bmm = ssim_profile_row(p, 1);
    cr_assert_eq(bmm->batch, 4);
    cr_assert_eq(bmm->m, 16);
    cr_assert_eq(bmm->n, 16);
    cr_assert_eq(bmm->k, 8);
    cr_assert_eq(bmm->dtype, SSIM_DTYPE_FP16);
    const SsimProfileRow *ar = ssim_profile_row(p, 2);
    cr_assert_eq(ar->kind, SSIM_PROFILE_COMM);
    cr_assert_str_eq(ar->op, "allreduce");
    cr_assert_eq(ar->bytes, 2048);
    cr_assert_eq(ar->ranks, 8);
    cr_assert_float_eq(ar->time_us, 30.0, 1e-9);
    const SsimProfileRow *cp = ssim_profile_row(p, 3);
    cr_assert_eq(cp->kind, SSIM_PROFILE_COPY);
    cr_assert_str_eq(cp->op, "d2d");
    cr_assert_eq(cp->bytes, 4096);
    /* The profile it makes is a valid profile file. */
    g_autoptr(GString) text = ssim_profile_write(p);
    g_autoptr(SsimProfile) back =
        ssim_profile_load_data(text->str, (gssize)text->len, "k.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    cr_assert_eq(ssim_profile_n_rows(back), 4);
}

Test(calib, kineto_not_a_trace)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimProfile) p = ssim_kineto_load_data("{\"x\": 1}", -1, "t.json", NULL, &error);
    cr_assert_null(p);
    cr_assert_str_eq(error->message,
                     "t.json: traceEvents: missing (not a PyTorch profiler / Chrome trace)");
    g_clear_error(&error);
    p = ssim_kineto_load_data("{", -1, "t.json", NULL, &error);
    cr_assert_null(p);
    cr_assert(g_str_has_prefix(error->message, "t.json: not JSON: "));
}

Test(calib, validate_published_rows)
{
    /* Smoke test of the run set on the real published file: every row simulates. */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) all =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    cr_assert_not_null(all);
    g_autoptr(SsimRuns) runs = ssim_runs_new("published-a100.csv");
    for (guint i = 0; i < 3; i++)
        ssim_runs_add(runs, ssim_runs_get(all, i));
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    /* 137 TFLOP/s on 32 GPUs for 512 x 2048 tokens of the 1.7B model, recompute included. */
    double hw = ssim_model_hardware_flops(ssim_run_set_model(set, 0), 512, SSIM_RECOMPUTE_FULL);
    cr_assert_float_eq(ssim_run_set_measured_ms(set, 0), hw / (137e12 * 32) * 1e3, 1e-9);
    double pred[3];
    char *errors[3] = {NULL};
    ssim_run_set_predict(set, NULL, 3, NULL, 1, pred, errors);
    for (guint i = 0; i < 3; i++) {
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        g_free(errors[i]);
    }
    g_autoptr(GString) csv =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, SSIM_FORMAT_CSV);
    cr_assert(g_str_has_prefix(csv->str, "line,model,gpus,"));
}
