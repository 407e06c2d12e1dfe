/*
 * `shiftsim calibrate`: fit the cost model's free parameters to measured runs and report the
 * cross-validated error; also the two importers that produce calibration data.
 *
 *   shiftsim calibrate --runs FILE [--runs FILE]... [--cluster C] [--params LIST] [--folds K]
 *                      [--cv group:BY]... [--every S] [--force] [-o CALIBRATED.ini]
 *       fits on every S-th row of the files in turn (a deterministic subset, for speed; several
 *       files are one set, ssim_cli_load_runs()), prints the parameters
 *       before and after with their 95% intervals, the training error before and after, the
 *       held-out error of a K-fold cross-validation on the same rows (row j of the subset is in
 *       fold j % K) and, for each --cv group:BY (model, nodes, tp, gpus), of leaving out one
 *       whole group at a time; with --validate-all also the error of the fitted parameters on
 *       every row of the files.  A file marked `# use = check` is refused unless --force.  -o
 *       writes the start cluster with the fitted figures, their provenance and the ranges of
 *       the shapes fitted ([calibration]).
 *   shiftsim calibrate --kineto TRACE.json [--emit-profile OUT.csv] [--emit-run OUT.csv
 *                      --model M --split SPEC [--cluster C] [--nodes N]]
 *       imports a PyTorch profiler trace: its kernels as a profile, its step time as a run.
 *   shiftsim calibrate --convert-vtrain ground_truth_{single,multi}.csv [--cluster C] -o RUNS.csv
 *       converts vTrain's measured table to the runs format.
 */
#include "src/app/progress.h"
#include "src/app/verbs.h"

#include <shiftsim/calibrate.h>
#include <shiftsim/clusterparams.h>
#include <shiftsim/data.h>
#include <shiftsim/kineto.h>
#include <shiftsim/runs.h>
#include <shiftsim/runset.h>
#include <shiftsim/validate.h>
#include <shiftsim/vtrain.h>
#include <shiftsim/sim.h>

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERB "calibrate"

static void print_stats(GString *out, const char *title, const SsimErrorStats *s)
{
    g_string_append_printf(out, "%s\n", title);
    ssim_error_stats_append(out, s, "  ");
}

static void stats_of(const SsimRunSet *set, const guint *idx, guint n, const double *pred,
                     SsimErrorStats *out)
{
    g_autofree double *meas = g_new(double, MAX(n, 1u));
    for (guint j = 0; j < n; j++)
        meas[j] = ssim_run_set_measured_ms(set, idx ? idx[j] : j);
    g_autofree guint *groups = ssim_run_set_groups(set, idx, n);
    ssim_error_stats(pred, meas, groups, n, out);
}

/* Prints row i's error at its file and line ("shiftsim: FILE:LINE: message"). */
static void report_row(const SsimRunSet *set, guint i, const char *message)
{
    const SsimMeasuredRun *r = ssim_run_set_run(set, i);
    fprintf(stderr, "shiftsim: %s:%u: %s\n", r->path, r->line, message);
}

/* Prints every row of idx[0..n) that a limit refused or stopped ("FILE:LINE: limit: ...") and
 * returns how many there were. */
static guint report_limited(const SsimRunSet *set, const guint *idx, guint n, char *const *errors)
{
    guint limited = 0;
    for (guint j = 0; j < n; j++)
        if (errors[j] && g_str_has_prefix(errors[j], SSIM_RUN_SET_LIMIT_PREFIX)) {
            report_row(set, idx[j], errors[j]);
            limited++;
        }
    return limited;
}

/* The held-out figures of each group of `by` (the rows' cross-validated predictions pred), in
 * the order validate --by gives them, tau over the pairs of a group that share a model. */
static GString *held_out_table(const SsimRunSet *set, const guint *idx, guint n, const double *pred,
                               const SsimGrouping *by)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autofree double *meas = g_new(double, MAX(n, 1u));
    for (guint j = 0; j < n; j++)
        meas[j] = ssim_run_set_measured_ms(set, idx ? idx[j] : j);
    g_autofree SsimErrorStats *per = ssim_error_stats_by(set, idx, n, pred, meas, by, names);
    GString *t = g_string_new(NULL);
    ssim_error_groups_append(t, per, (char *const *)names->pdata, names->len, "    ");
    return t;
}

/* The parameter table: start, fitted, and the 95% interval where the rows determine it. */
static void append_parameters(GString *out, const SsimCalibOptions *opt, const SsimCalibFit *fit,
                              guint n)
{
    g_string_append_printf(out, "%-20s %12s %12s  %s\n", "parameter", "start", "fitted",
                           "95% interval (std error)");
    for (guint p = 0; p < SSIM_CALIB_N; p++) {
        if (!(opt->mask & (G_GUINT64_CONSTANT(1) << p)))
            continue;
        g_string_append_printf(out, "%-20s %12.5g %12.5g  ", ssim_calib_param_name(p),
                               fit->start.value[p], fit->fitted.value[p]);
        if (fit->has_interval & (G_GUINT64_CONSTANT(1) << p))
            g_string_append_printf(out, "%.5g .. %.5g (%.2g)",
                                   fit->fitted.value[p] - fit->half_width[p],
                                   fit->fitted.value[p] + fit->half_width[p], fit->std_error[p]);
        else
            g_string_append(out, "not determined by these rows");
        if (fit->at_bound[p])
            g_string_append(out, "  [at a bound of its range]");
        g_string_append_c(out, '\n');
    }
    if (fit->has_interval)
        g_string_append_printf(out,
                               "(nonlinear least squares on %u rows: s^2 (J^T J)^-1 of the log "
                               "residuals, s = %.3g, Student's t)\n",
                               n, fit->residual_sd);
    g_string_append_c(out, '\n');
}

/* --- -f csv|json: the fit as data. ------------------------------------------------------- */

/* Error statistics as the object `name` (ssim_error_stats_json: runs, failed, mape, ...). */
static void json_stats(JsonBuilder *b, const char *name, const SsimErrorStats *s)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    ssim_error_stats_json(b, s, &SSIM_ERROR_WORDS_RUNS);
    json_builder_end_object(b);
}

/* The parameters: CSV rows, or the "parameters" array of the JSON object. */
static void data_parameters(GString *csv, JsonBuilder *b, const SsimCalibOptions *opt,
                            const SsimCalibFit *fit)
{
    if (csv)
        g_string_append(csv, "parameter,start,fitted,low,high,std_error,at_bound\n");
    else {
        json_builder_set_member_name(b, "parameters");
        json_builder_begin_array(b);
    }
    for (guint p = 0; p < SSIM_CALIB_N; p++) {
        if (!(opt->mask & (G_GUINT64_CONSTANT(1) << p)))
            continue;
        gboolean has = (fit->has_interval & (G_GUINT64_CONSTANT(1) << p)) != 0;
        double lo = has ? fit->fitted.value[p] - fit->half_width[p] : NAN;
        double hi = has ? fit->fitted.value[p] + fit->half_width[p] : NAN;
        double se = has ? fit->std_error[p] : NAN;
        const char *name = ssim_calib_param_name((SsimCalibParam)p);
        if (csv) {
            g_string_append_printf(csv, "%s,%.6g,%.6g,", name, fit->start.value[p],
                                   fit->fitted.value[p]);
            if (has)
                g_string_append_printf(csv, "%.6g,%.6g,%.6g", lo, hi, se);
            else
                g_string_append(csv, ",,");
            g_string_append_printf(csv, ",%d\n", fit->at_bound[p] ? 1 : 0);
            continue;
        }
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, name);
        ssim_json_set_number(b, "start", fit->start.value[p]);
        ssim_json_set_number(b, "fitted", fit->fitted.value[p]);
        ssim_json_set_number(b, "low", lo);
        ssim_json_set_number(b, "high", hi);
        ssim_json_set_number(b, "std_error", se);
        json_builder_set_member_name(b, "at_bound");
        json_builder_add_boolean_value(b, fit->at_bound[p]);
        json_builder_end_object(b);
    }
    if (!csv)
        json_builder_end_array(b);
}

static int do_convert(const char *vtrain, const char *cluster, const char *out_path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_from_vtrain(vtrain, cluster ? cluster : SSIM_VTRAIN_CLUSTER, &error);
    if (runs == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(GString) text = ssim_runs_write(runs);
    if (!ssim_cli_emit(out_path, text, &error))
        return ssim_cli_runtime_error(error);
    fprintf(stderr, "shiftsim calibrate: %u vTrain rows converted\n", ssim_runs_n(runs));
    return SSIM_EXIT_OK;
}

/* `cluster` (a name or path; dgx-a100 when NULL) with the host `sum` measured, written to `path`
 * as calibrate writes a fitted cluster (checked to load back first). */
static gboolean write_host_cluster(const char *path, const char *cluster, const char *trace,
                                   const SsimKinetoSummary *sum, GError **error)
{
    if (!(sum->launch_us_mean > 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: no host time per launch to write to %s (no process launched GPU work "
                    "twice from one thread: record with activities CPU and CUDA)",
                    trace, path);
        return FALSE;
    }
    g_autoptr(SsimCluster) c = ssim_cluster_load(cluster ? cluster : "dgx-a100", error);
    if (c == NULL)
        return FALSE;
    g_autofree char *base = g_path_get_basename(trace);
    g_autoptr(GString) comment = g_string_new(NULL);
    g_string_append_printf(comment,
                           "%s with the host measured from the PyTorch profiler trace %s by "
                           "shiftsim calibrate --kineto: kernel_floor_us %.1f (the mean gap "
                           "between two launches on one thread)",
                           c->name, base, sum->launch_us_mean);
    c->kernel_floor = ssim_time_from_seconds(sum->launch_us_mean * 1e-6);
    if (sum->thread_switches > 0) {
        c->microbatch_floor = ssim_time_from_seconds(sum->switch_us_mean * 1e-6);
        g_string_append_printf(comment,
                               ", microbatch_floor_us %.1f (the mean of %u changes of launching "
                               "thread)",
                               sum->switch_us_mean, sum->thread_switches);
    }
    g_string_append_printf(comment, ".\nFigures not measured are those of %s.\n", c->source);
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, comment->str);
    g_autoptr(SsimCluster) back = ssim_cluster_load_data(ini->str, (gssize)ini->len, path, error);
    return back != NULL && ssim_cli_emit(path, ini, error);
}

static int do_kineto(const char *trace, const char *emit_profile, const char *emit_run,
                     const char *out_path, const char *model, const char *split,
                     const char *cluster, gint nodes)
{
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary sum;
    g_autoptr(SsimProfile) profile = ssim_kineto_load(trace, &sum, &error);
    if (profile == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(GString) out = g_string_new(NULL);
    g_string_append_printf(out, "trace          %s\n", trace);
    g_string_append_printf(out, "kernels        %u (%.3f ms of GPU time)\n", sum.kernels,
                           sum.kernel_ms);
    g_string_append_printf(out,
                           "profile rows   %u (from %u GEMM, %u attention, %u collective, %u "
                           "copy events; %u kernels without a shape left out)\n",
                           ssim_profile_n_rows(profile), sum.gemm, sum.attention, sum.comm,
                           sum.copy, sum.unmapped);
    g_string_append_printf(out, "steps          %u, mean %.3f ms (min %.3f, max %.3f)\n", sum.steps,
                           sum.step_ms, sum.step_ms_min, sum.step_ms_max);
    if (sum.launches > sum.host_processes) {
        g_string_append_printf(out,
                               "host           %u launches in %u process%s, waits for the GPU "
                               "left out: %.1f us a launch (median %.1f; a cluster's "
                               "kernel_floor_us)",
                               sum.launches, sum.host_processes,
                               sum.host_processes == 1 ? "" : "es", sum.launch_us_mean,
                               sum.launch_us_median);
        if (sum.thread_switches > 0)
            g_string_append_printf(out,
                                   ", %.1f us at each of %u changes of launching thread "
                                   "(forward to backward and back; microbatch_floor_us)",
                                   sum.switch_us_mean, sum.thread_switches);
        g_string_append_c(out, '\n');
    } else {
        g_string_append(out, "host           no process launched GPU work twice (no cuda_runtime "
                             "events: record with activities CPU and CUDA)\n");
    }
    if (emit_profile) {
        g_autoptr(GString) csv = ssim_profile_write(profile);
        if (!ssim_cli_emit(emit_profile, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    if (emit_run) {
        SsimMeasuredRun run;
        ssim_measured_run_init(&run);
        g_strlcpy(run.model, model, sizeof run.model);
        g_strlcpy(run.cluster, cluster ? cluster : "dgx-a100", sizeof run.cluster);
        run.nodes = SSIM_CLI_GIVEN(nodes) ? (guint)nodes : 1;
        if (!ssim_parallel_parse(&run.par, split, &error))
            return ssim_cli_usage_error(VERB, "--split: %s", error->message);
        if (!(sum.step_ms > 0)) {
            fprintf(stderr, "shiftsim: %s: no step time (no ProfilerStep range, no kernel)\n",
                    trace);
            return SSIM_EXIT_RUNTIME;
        }
        run.iteration_ms = sum.step_ms;
        /* The measured step against the model's FLOPs at the cluster's peak. */
        g_autoptr(SsimModel) m = ssim_model_load(model, &error);
        g_autoptr(SsimCluster) c = m ? ssim_cluster_load(run.cluster, &error) : NULL;
        if (c == NULL)
            return ssim_cli_runtime_error(error);
        double peak = ssim_cluster_peak_flops(c, m->dtype);
        double gpus = (double)run.par.dp * run.par.tp * run.par.pp;
        double step = sum.step_ms / 1e3;
        double mfu = ssim_model_iteration_flops(m, run.par.global_batch) / (step * gpus * peak);
        g_autofree char *what = g_strdup_printf("%s (%s, %s)", trace, model, split);
        g_autofree char *warning = peak > 0 ? ssim_mfu_implausible(mfu, step, what) : NULL;
        if (warning)
            fprintf(stderr, "shiftsim calibrate: warning: %s\n", warning);
        g_autofree char *base = g_path_get_basename(trace);
        g_snprintf(run.source, sizeof run.source, "PyTorch profiler trace %s (%u steps)", base,
                   sum.steps);
        g_autoptr(SsimRuns) runs = ssim_runs_new(emit_run);
        ssim_runs_set_meta(runs, "source", base);
        ssim_runs_add(runs, &run);
        g_autoptr(GString) csv = ssim_runs_write(runs);
        if (!ssim_cli_emit(emit_run, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    if (out_path) {
        if (!write_host_cluster(out_path, cluster, trace, &sum, &error))
            return ssim_cli_runtime_error(error);
        g_string_append_printf(out, "wrote          %s (the cluster with this host)\n", out_path);
    }
    if (!ssim_cli_emit(NULL, out, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}

int ssim_verb_calibrate(int argc, char **argv)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT; /* the start cluster; the --emit-run run */
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *param_list = NULL, *kineto = NULL, *emit_profile = NULL;
    g_auto(GStrv) runs_paths = NULL;
    g_autofree char *emit_run = NULL, *vtrain = NULL;
    g_auto(GStrv) cv_specs = NULL, only_specs = NULL;
    g_autofree char *only_text = NULL;
    gint folds = 5, every = 1, max_iter = 200, jobs = 0, scan = 5;
    gdouble tolerance = 1e-3;
    gboolean validate_all = FALSE, force = FALSE, quiet = FALSE;
    g_auto(SsimCliLimits) limits = {0};
    GOptionEntry entries[] = {
        {"runs", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &runs_paths,
         "Measured runs to fit (# shiftsim-runs v2 or v1 CSV, or vTrain's ground_truth_*.csv, "
         "read as --convert-vtrain converts it); repeat to fit the rows of several files as one "
         "set",
         "FILE"},
        ssim_cli_job_entry(&job, SSIM_OPT_CLUSTER,
                           "Start cluster (the parameters' start values and the base of -o; "
                           "default: the first run's cluster); every run keeps its own "
                           "cluster's other figures"),
        {"params", 'P', 0, G_OPTION_ARG_STRING, &param_list,
         "Parameters to fit (default kernel_floor_us; also gemm, gemm_sustained, gemm_half_gflop, "
         "gemm_tile_us, memory, nvlink, nvlink_latency_us, ib, ib_latency_us, overlap_slowdown, "
         "kernel_overhead_us, microbatch_floor_us)",
         "LIST"},
        {"folds", 0, 0, G_OPTION_ARG_INT, &folds,
         "Cross-validation folds (default 5; row j of the fitted rows is in fold j % K; 0: none)",
         "K"},
        {"cv", 0, 0, G_OPTION_ARG_STRING_ARRAY, &cv_specs,
         "Also leave-one-group-out cross-validation: group:model, group:nodes, group:tp, "
         "group:gpus, group:pp, group:dp, group:microbatch, group:microbatches, group:file, "
         "group:cluster or group:recompute (every run of one model, node count, tp, GPU count, pp, "
         "dp, microbatch size, count of microbatches a step, runs file, cluster or recompute mode "
         "held out at once; keys joined "
         "by '+', group:tp+pp, hold out each pair; a list, or repeat it)",
         "group:BY"},
        {"force", 0, 0, G_OPTION_ARG_NONE, &force,
         "Fit even a file marked '# use = check' (rows kept to check predictions)", NULL},
        {"every", 0, 0, G_OPTION_ARG_INT, &every,
         "Fit on every N-th row only (rows 0, N, 2N, ...; default 1 = all)", "N"},
        {"only", 0, 0, G_OPTION_ARG_STRING_ARRAY, &only_specs,
         "Use only the rows whose KEY (as in --cv, without group:) is VALUE, or with != is not: "
         "dp=1, dp!=1, tp=8, model=NAME, file=PATH, ...; a list, or repeat: every one must hold "
         "(before --every; the other rows are not fitted, held out or validated)",
         "KEY=VALUE"},
        {"max-iter", 0, 0, G_OPTION_ARG_INT, &max_iter,
         "Nelder-Mead iterations per fit (default 200)", "N"},
        {"scan", 0, 0, G_OPTION_ARG_INT, &scan,
         "Before the simplex, try N points across each parameter's range in turn and start "
         "from the best (default 5; 0 = start at the start cluster's values)",
         "N"},
        {"tolerance", 0, 0, G_OPTION_ARG_DOUBLE, &tolerance,
         "Stop when the simplex size is below this (default 1e-3)", "X"},
        {"validate-all", 0, 0, G_OPTION_ARG_NONE, &validate_all,
         "After fitting, report the error of the fitted parameters on every row of the files "
         "(that --only keeps)",
         NULL},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Threads (default: all cores)", "N"},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "table (default), csv (the parameters) or json (the parameters and "
                              "every error; docs/validation.md)"),
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
         "No progress on stderr (by default the phases and a line with an ETA: each run weighs "
         "its estimated ops, each fit its evaluations, at most --max-iter until the first fit "
         "ends, then as many as it took)",
         NULL},
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT,
                              "Write the calibrated cluster INI (with --convert-vtrain: the runs "
                              "CSV; with --kineto: --cluster's INI with the measured host)"),
        {"kineto", 0, 0, G_OPTION_ARG_FILENAME, &kineto,
         "Import a PyTorch profiler (Kineto) Chrome trace (or its .json.gz) instead of "
         "fitting: its kernels, step time and the host's time per launch and per phase "
         "(kernel_floor_us, microbatch_floor_us)",
         "TRACE.json"},
        {"emit-profile", 0, 0, G_OPTION_ARG_FILENAME, &emit_profile,
         "With --kineto: write its GPU kernels as a # shiftsim-profile v1 CSV", "OUT.csv"},
        {"emit-run", 0, 0, G_OPTION_ARG_FILENAME, &emit_run,
         "With --kineto: write its step time as a measured run (needs --model and --split)",
         "OUT.csv"},
        ssim_cli_entry_arg(
            ssim_cli_job_entry(&job, SSIM_OPT_MODEL, "With --emit-run: the run's model"), "NAME"),
        ssim_cli_job_entry(&job, SSIM_OPT_SPLIT,
                           "With --emit-run: the run's configuration, e.g. "
                           "dp=1,tp=8,pp=1,mb=1,gbs=8"),
        ssim_cli_job_entry(&job, SSIM_OPT_NODES, "With --emit-run: the run's nodes"),
        {"convert-vtrain", 0, 0, G_OPTION_ARG_FILENAME, &vtrain,
         "Convert vTrain's ground_truth_single.csv (or ground_truth_multi.csv) to the runs "
         "format (to -o); the rows name --cluster, by default vtrain-a100 (the cluster vTrain "
         "measured on: DGX A100 nodes with 4 x 200 Gb/s InfiniBand)",
         "FILE"},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("- fit the cost model to measured runs");
    g_option_context_set_summary(
        ctx, "Fits the analytical cost model's free parameters (by default the host floor; on\n"
             "request GEMM, memory, NVLink/IB efficiencies and latencies, overlap slowdown,\n"
             "kernel overhead) to measured runs with GSL's Nelder-Mead simplex, minimising the\n"
             "mean squared log error, and reports each parameter's 95% interval and the K-fold\n"
             "and leave-one-group-out (held-out) errors next to the training error.  Also\n"
             "imports PyTorch profiler traces and vTrain's table.");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim calibrate --runs traces/validation/vtrain-a100-single.csv \\\n"
             "      --cluster dgx-a100 --params kernel_floor_us,microbatch_floor_us --every 16 \\\n"
             "      --folds 3 --cv group:tp --cv group:model \\\n"
             "      -o models/clusters/dgx-a100-calibrated.ini\n"
             "  shiftsim calibrate --kineto trace.json --emit-profile prof.csv \\\n"
             "      --emit-run run.csv --model gpt-j-6b --split dp=1,tp=8,pp=1,mb=1,gbs=8\n\n"
             "Exit status: 0 success; 1 bad input; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    const GOptionEntry old[] = {
        {"runs", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &runs_paths, NULL, NULL},
        {"folds", 'k', 0, G_OPTION_ARG_INT, &folds, NULL, NULL},
        {NULL}};
    ssim_cli_add_old_short_names(ctx, old); /* -r is --recompute, -k --top */
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    if (rc != SSIM_EXIT_OK)
        return rc;
    ssim_cli_job_resolve(VERB, &job);

    SsimFormat format;
    if ((rc = ssim_cli_job_check_nodes(VERB, &job)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_output_format(VERB, &output, &format)) != SSIM_EXIT_OK)
        return rc;
    const char *out_path = output.output;
    if ((rc = ssim_cli_check_output(out_path)) || (rc = ssim_cli_check_output(emit_profile)) ||
        (rc = ssim_cli_check_output(emit_run)))
        return rc;
    ssim_cli_resolve_input(VERB, &vtrain, NULL);
    ssim_cli_resolve_input(VERB, &kineto, NULL);
    if (vtrain)
        return do_convert(vtrain, job.cluster, out_path);
    if (kineto) {
        if (emit_run && (job.model == NULL || job.split == NULL))
            return ssim_cli_usage_error(VERB, "--emit-run needs --model and --split");
        return do_kineto(kineto, emit_profile, emit_run, out_path, job.model, job.split,
                         job.cluster, job.nodes);
    }
    if (emit_profile || emit_run)
        return ssim_cli_usage_error(VERB, "--emit-profile and --emit-run need --kineto");
    if (runs_paths == NULL)
        return ssim_cli_usage_error(VERB, "--runs FILE is required (or --kineto, "
                                          "--convert-vtrain)");
    if (folds < 0 || folds == 1)
        return ssim_cli_usage_error(VERB, "--folds: must be 0 (no cross-validation) or >= 2");
    if (every < 1 || max_iter < 1 || jobs < 0 || scan < 0 || !(tolerance > 0))
        return ssim_cli_usage_error(VERB, "--every, --max-iter and --tolerance must be positive");
    SsimGrouping cv_by[SSIM_CLI_GROUPINGS_MAX];
    guint n_cv;
    if ((rc = ssim_cli_group_keys(VERB, "--cv", cv_specs, "group:", cv_by, &n_cv)))
        return rc;
    SsimRowMatch only[SSIM_CLI_MATCHES_MAX];
    guint n_only;
    if ((rc = ssim_cli_row_matches(VERB, only_specs, only, &n_only, &only_text)))
        return rc;
    g_auto(GStrv) cv_name = g_new0(char *, n_cv + 1); /* "tp", "tp+pp" */
    for (guint c = 0; c < n_cv; c++)
        cv_name[c] = ssim_grouping_name(&cv_by[c]);
    g_autoptr(GError) error = NULL;
    SsimCalibOptions opt = {.mask = ssim_calib_params_default(),
                            .max_iter = (guint)max_iter,
                            .tolerance = tolerance,
                            .threads = (guint)jobs,
                            .scan = (guint)scan,
                            .intervals = TRUE};
    if (param_list && !ssim_calib_params_parse(param_list, &opt.mask, &error))
        return ssim_cli_usage_error(VERB, "--params: %s", error->message);

    g_autoptr(SsimRuns) runs = NULL;
    if ((rc = ssim_cli_load_runs(VERB, (const char *const *)runs_paths, TRUE, force, &runs)) !=
        SSIM_EXIT_OK)
        return rc;
    /* The files, as the report and the calibrated file's header name them, and the rows of them
     * --only keeps. */
    g_autofree char *files = g_strjoinv(", ", runs_paths);
    g_autofree char *runs_label =
        only_text ? g_strdup_printf("%s where %s", files, only_text) : g_strdup(files);
    if ((rc = ssim_cli_select_runs(VERB, &runs, NULL, only, n_only, only_text, files)))
        return rc;
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    if (set == NULL)
        return ssim_cli_runtime_error(error);
    ssim_run_set_set_limits(set, (guint64)limits.max_ops, (guint64)limits.max_events);
    ssim_run_set_set_max_memory(set, limits.max_memory);
    const char *start_name = job.cluster ? job.cluster : ssim_runs_get(runs, 0)->cluster;
    g_autoptr(SsimCluster) start = ssim_cluster_load(start_name, &error);
    if (start == NULL)
        return ssim_cli_runtime_error(error);

    guint n_all = ssim_run_set_n(set), n = 0;
    g_autofree guint *idx = g_new(guint, n_all);
    for (guint i = 0; i < n_all; i += (guint)every)
        idx[n++] = i;
    if (folds > 0 && (guint)folds > n)
        return ssim_cli_usage_error(VERB, "--folds %d: only %u runs to fit", folds, n);

    /* Progress: simulations of runs, each weighing its estimated ops.  A fit's loss evaluations
     * are each a simulation of every run it fits; until the first fit ends their count is its
     * cap (a start, the scan, the simplex's first vertices and two per iteration), then what the
     * first fit took. */
    g_autoptr(SsimProgress) progress =
        ssim_progress_new("shiftsim calibrate", "simulations", quiet);
    double fit_work = 0, all_work = 0;
    for (guint j = 0; j < n; j++)
        fit_work += ssim_run_set_work(set, idx[j]);
    for (guint i = 0; validate_all && i < n_all; i++)
        all_work += ssim_run_set_work(set, i);
    guint dim = (guint)__builtin_popcountll(opt.mask);
    guint evals_cap = 1 + (guint)scan * dim + dim + 1 + 2 * (guint)max_iter;
    /* Cross-validation: K folds (or G groups) fit on all rows but theirs, K - 1 (G - 1) times
     * the rows in all, then predict each held-out row once. */
    guint later_fits = folds > 0 ? (guint)folds - 1 : 0, held_out = folds > 0;
    for (guint c = 0; c < n_cv; c++) {
        g_autofree guint *g = ssim_run_set_groups_by(set, idx, n, &cv_by[c], NULL);
        guint groups = 0;
        for (guint j = 0; j < n; j++)
            groups = MAX(groups, g[j] + 1);
        later_fits += groups - 1;
        held_out++;
    }
    /* The fitted predictions, the held-out ones and --validate-all's. */
    guint tail_items = n * (1 + held_out) + (validate_all ? n_all : 0);
    double tail_work = fit_work * (1 + held_out) + all_work;
    ssim_progress_set_total(progress, n * (1 + evals_cap * (1 + later_fits)) + tail_items,
                            fit_work * (1 + evals_cap * (1 + later_fits)) + tail_work);
    ssim_run_set_set_progress(set, ssim_progress_run_set_cb, progress);

    g_autoptr(GString) out = g_string_new(NULL);
    g_string_append_printf(out, "runs           %s: %u rows, fitting on %u (every %d-th)\n",
                           runs_label, n_all, n, every);
    g_string_append_printf(out, "start cluster  %s\n", start->source);
    gint64 t0 = g_get_monotonic_time();
    /* The start parameters' predictions first: a row that a limit refuses or stops would only be
     * a penalty to the fit and a "failed" count in the figures, so it is refused here. */
    g_autofree double *pred = g_new(double, MAX(n_all, 1u));
    SsimErrorStats before, after, cv = {0}, all = {0};
    SsimErrorStats group_cv[SSIM_CLI_GROUPINGS_MAX] = {{0}};
    GString *group_tables[SSIM_CLI_GROUPINGS_MAX] = {NULL};
    guint group_n[SSIM_CLI_GROUPINGS_MAX] = {0};
    {
        char **errors = g_new0(char *, MAX(n, 1u));
        ssim_run_set_predict(set, idx, n, NULL, opt.threads, pred, errors);
        guint limited = report_limited(set, idx, n, errors);
        guint simulated = 0;
        for (guint j = 0; j < n; j++)
            simulated += isfinite(pred[j]);
        if (limited == 0 && simulated == 0) {
            for (guint j = 0; j < MIN(n, 3u); j++)
                if (errors[j])
                    report_row(set, idx[j], errors[j]);
            ssim_run_set_errors_free(errors, n);
            fprintf(stderr,
                    "shiftsim calibrate: none of the %u runs to fit simulated (the first are "
                    "above); there is nothing to fit\n",
                    n);
            return SSIM_EXIT_RUNTIME;
        }
        ssim_run_set_errors_free(errors, n);
        if (limited > 0) {
            fprintf(stderr,
                    "shiftsim calibrate: %u of the %u runs to fit hit a limit; raise --max-ops, "
                    "--max-events or --max-memory, or leave them out\n",
                    limited, n);
            return SSIM_EXIT_RUNTIME;
        }
    }
    stats_of(set, idx, n, pred, &before);
    SsimCalibFit fit;
    if (!quiet)
        fprintf(stderr, "shiftsim calibrate: fitting %u parameters on %u runs...\n", dim, n);
    if (!ssim_calibrate_fit(set, idx, n, start, &opt, &fit, &error))
        return ssim_cli_runtime_error(error);
    /* The first fit's evaluations (its iterations plus the start, scan and simplex) stand for
     * each later fit's: the estimate of what is left. */
    guint evals = MIN(evals_cap, 1 + (guint)scan * dim + dim + 1 + 2 * fit.iterations);
    ssim_progress_set_remaining(progress, n * evals * later_fits + tail_items,
                                fit_work * evals * later_fits + tail_work);
    if (folds > 0 && !quiet)
        fprintf(stderr, "shiftsim calibrate: %u iterations; now %d-fold cross-validation...\n",
                fit.iterations, folds);
    ssim_run_set_predict(set, idx, n, &fit.fitted, opt.threads, pred, NULL);
    stats_of(set, idx, n, pred, &after);
    if (folds > 0) {
        if (!ssim_calibrate_cross_validate(set, idx, n, (guint)folds, start, &opt, pred, &error))
            return ssim_cli_runtime_error(error);
        stats_of(set, idx, n, pred, &cv);
    }
    for (guint c = 0; c < n_cv; c++) {
        if (!quiet)
            fprintf(stderr, "shiftsim calibrate: leave-one-%s-out cross-validation...\n",
                    cv_name[c]);
        if (!ssim_calibrate_cross_validate_groups(set, idx, n, &cv_by[c], start, &opt, pred,
                                                  &group_n[c], &error)) {
            for (guint d = 0; d < c; d++)
                g_string_free(group_tables[d], TRUE);
            return ssim_cli_runtime_error(error);
        }
        stats_of(set, idx, n, pred, &group_cv[c]);
        group_tables[c] = held_out_table(set, idx, n, pred, &cv_by[c]);
    }
    if (validate_all) {
        ssim_run_set_predict(set, NULL, n_all, &fit.fitted, opt.threads, pred, NULL);
        stats_of(set, NULL, n_all, pred, &all);
    }
    ssim_progress_finish(progress);
    ssim_run_set_set_progress(set, NULL, NULL);
    double secs = (double)(g_get_monotonic_time() - t0) / 1e6;

    g_autofree char *scan_text =
        scan > 0 ? g_strdup_printf("a %d-point scan of each parameter, then ", scan) : g_strdup("");
    g_string_append_printf(out,
                           "fit            %sGSL Nelder-Mead (nmsimplex2), mean squared log "
                           "error, %u iterations%s, %.1f s\n\n",
                           scan_text, fit.iterations,
                           fit.converged ? " (converged)" : " (iteration limit)", secs);
    append_parameters(out, &opt, &fit, n);
    print_stats(out, "training error before (start parameters)", &before);
    print_stats(out, "training error after (fitted on these rows)", &after);
    if (folds > 0) {
        g_autofree char *t =
            g_strdup_printf("cross-validated error (%d folds, held-out rows)", folds);
        print_stats(out, t, &cv);
    }
    for (guint c = 0; c < n_cv; c++) {
        g_autofree char *t = g_strdup_printf(
            "leave-one-group-out error (group:%s, %u groups; each group predicted by a fit that "
            "saw none of its runs)",
            cv_name[c], group_n[c]);
        print_stats(out, t, &group_cv[c]);
        g_string_append_printf(out, "  held out, per %s\n", cv_name[c]);
        g_string_append(out, group_tables[c]->str);
        g_string_free(group_tables[c], TRUE);
    }
    if (validate_all)
        print_stats(out, "fitted parameters on every row of the file", &all);

    if (out_path) {
        g_autoptr(SsimCluster) cal = ssim_cluster_copy(start);
        ssim_calib_values_apply(&fit.fitted, cal);
        /* What the figures were fitted on: validate marks predictions outside it. */
        ssim_run_set_fit_ranges(set, idx, n, cal);
        g_free(cal->name);
        cal->name = ssim_path_stem(out_path, ".ini");
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        g_autofree char *date = g_date_time_format(now, "%Y-%m-%d %H:%M UTC");
        g_autoptr(GString) c = g_string_new(NULL);
        g_string_append_printf(c, "%s calibrated by shiftsim %s calibrate on %s.\n", start->name,
                               ssim_version(), date);
        g_string_append_printf(c, "Data: %s (%u rows; fitted on every %d-th: %u rows).\n",
                               runs_label, n_all, every, n);
        const char *src = ssim_runs_get_meta(runs, "source");
        if (src)
            g_string_append_printf(c, "Source: %s.\n", src);
        g_string_append_printf(c,
                               "Fitted (%sGSL Nelder-Mead, at most %d iterations, mean squared log "
                               "error of iteration time):",
                               scan_text, max_iter);
        for (guint p = 0; p < SSIM_CALIB_N; p++) {
            if (!(opt.mask & (G_GUINT64_CONSTANT(1) << p)))
                continue;
            g_string_append_printf(c, " %s %.4g -> %.4g", ssim_calib_param_name((SsimCalibParam)p),
                                   fit.start.value[p], fit.fitted.value[p]);
            if (fit.has_interval & (G_GUINT64_CONSTANT(1) << p))
                g_string_append_printf(c, " (95%%: %.4g .. %.4g)",
                                       fit.fitted.value[p] - fit.half_width[p],
                                       fit.fitted.value[p] + fit.half_width[p]);
            g_string_append_c(c, ';');
        }
        g_string_append_printf(c, "\nTraining MAPE %.2f%% before, %.2f%% after (max %.2f%%).\n",
                               100 * before.mape, 100 * after.mape, 100 * after.max);
        if (folds > 0)
            g_string_append_printf(c,
                                   "%d-fold cross-validated MAPE %.2f%%, median %.2f%%, max "
                                   "%.2f%%, Kendall tau %.3f.\n",
                                   folds, 100 * cv.mape, 100 * cv.median, 100 * cv.max, cv.tau);
        for (guint g = 0; g < n_cv; g++)
            g_string_append_printf(c,
                                   "Leave-one-%s-out (%u groups) MAPE %.2f%%, max %.2f%%, bias "
                                   "%+.2f%%, Kendall tau %.3f.\n",
                                   cv_name[g], group_n[g], 100 * group_cv[g].mape,
                                   100 * group_cv[g].max, 100 * group_cv[g].bias, group_cv[g].tau);
        if (validate_all)
            g_string_append_printf(c, "On all %u rows: MAPE %.2f%%, max %.2f%%.\n", n_all,
                                   100 * all.mape, 100 * all.max);
        g_string_append_printf(c, "Figures not fitted are those of %s.\n", start->source);
        g_autoptr(GString) ini = ssim_cluster_write_ini(cal, c->str);
        /* The writer must round-trip through the loader: check before writing. */
        g_autoptr(SsimCluster) back =
            ssim_cluster_load_data(ini->str, (gssize)ini->len, out_path, &error);
        if (back == NULL)
            return ssim_cli_runtime_error(error);
        if (!ssim_cli_emit(out_path, ini, &error))
            return ssim_cli_runtime_error(error);
        g_string_append_printf(out, "\nwrote %s\n", out_path);
        if (format != SSIM_FORMAT_TABLE)
            fprintf(stderr, "shiftsim calibrate: wrote %s\n", out_path);
    }
    if (format == SSIM_FORMAT_CSV) {
        g_string_truncate(out, 0);
        data_parameters(out, NULL, &opt, &fit);
    } else if (format == SSIM_FORMAT_JSON) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "runs");
        json_builder_add_string_value(b, runs_label);
        json_builder_set_member_name(b, "runs_files");
        json_builder_begin_array(b);
        for (guint f = 0; runs_paths[f]; f++)
            json_builder_add_string_value(b, runs_paths[f]);
        json_builder_end_array(b);
        json_builder_set_member_name(b, "rows");
        json_builder_add_int_value(b, n_all);
        json_builder_set_member_name(b, "fitted_rows");
        json_builder_add_int_value(b, n);
        json_builder_set_member_name(b, "start_cluster");
        json_builder_add_string_value(b, start->name);
        json_builder_set_member_name(b, "iterations");
        json_builder_add_int_value(b, fit.iterations);
        json_builder_set_member_name(b, "converged");
        json_builder_add_boolean_value(b, fit.converged);
        data_parameters(NULL, b, &opt, &fit);
        json_builder_set_member_name(b, "errors");
        json_builder_begin_object(b);
        json_stats(b, "before", &before);
        json_stats(b, "after", &after);
        if (folds > 0)
            json_stats(b, "cross_validated", &cv);
        for (guint c = 0; c < n_cv; c++) {
            g_autofree char *name = g_strdup_printf("leave_one_%s_out", cv_name[c]);
            json_stats(b, name, &group_cv[c]);
        }
        if (validate_all)
            json_stats(b, "all_rows", &all);
        json_builder_end_object(b);
        json_builder_end_object(b);
        g_string_truncate(out, 0);
        ssim_json_append(out, b, TRUE);
    }
    if (!ssim_cli_emit(NULL, out, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
