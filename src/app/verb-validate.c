/*
 * `shiftsim validate`: simulate every run of a measured-runs file and print predicted vs
 * measured iteration time, the error of each row, and MAPE, median and max error, the mean
 * signed error, the fraction within 10% and Kendall's tau of the ranking within groups of rows
 * sharing a model, overall and per model (and per node count, tp, ... with --by).  With no
 * --runs it validates the bundled vTrain single-node A100 rows.
 *
 * Rows are simulated as measured: memory is not checked (the run happened), each row on its own
 * copy of its cluster, in parallel over --jobs threads; output does not depend on the thread
 * count.  A row whose simulation fails is listed with the reason and left out of the figures.
 * A row that a limit (--max-ops, --max-events) refused or stopped is listed the same way, and
 * the verb then fails (exit 1, after writing its outputs) saying how many rows the figures miss,
 * since figures over part of the file are not the figures that were asked for.  Progress goes
 * to stderr (src/app/progress.h: each run weighs its estimated ops), unless -q.
 */
#include "src/app/progress.h"
#include "src/app/verbs.h"

#include <shiftsim/data.h>
#include <shiftsim/runs.h>
#include <shiftsim/runset.h>
#include <shiftsim/validate.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERB         "validate"
#define DEFAULT_RUNS "traces/validation/vtrain-a100-single.csv"

int ssim_verb_validate(int argc, char **argv)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliOutput) output = {0};
    g_auto(GStrv) runs_paths = NULL;
    g_auto(GStrv) by_specs = NULL, only_specs = NULL;
    g_autofree char *plot = NULL, *only_text = NULL;
    gint jobs = 0, every = 1;
    gboolean quiet = FALSE;
    g_auto(SsimCliLimits) limits = {0};
    GOptionEntry entries[] = {
        {"runs", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &runs_paths,
         "Measured runs (# shiftsim-runs v2 or v1 CSV, or vTrain's ground_truth_*.csv, read as "
         "--convert-vtrain converts it; default the bundled " DEFAULT_RUNS
         "); repeat to validate several files as one set (each row then names its file)",
         "FILE"},
        ssim_cli_job_entry(&job, SSIM_OPT_CLUSTER,
                           "Simulate every row on this cluster (name or INI path, e.g. a "
                           "calibrated one) instead of the row's own, keeping its node count"),
        ssim_cli_job_entry(&job, SSIM_OPT_STEP_COSTS,
                           "Per-iteration costs to turn off (-NAME) or on (+NAME) in every row "
                           "(optimizer, clip, loss_scale, grad_fp32, embedding, host, grad_accum, "
                           "grad_cast, shard_copy; none, all, default): what each term "
                           "contributes to the "
                           "error"),
        {"every", 0, 0, G_OPTION_ARG_INT, &every,
         "Use every N-th row only (rows 0, N, 2N, ... in file order, the files in turn; default 1 "
         "= all)",
         "N"},
        {"only", 0, 0, G_OPTION_ARG_STRING_ARRAY, &only_specs,
         "Use only the rows whose KEY (a --by key) is VALUE, or with != is not: dp=1, dp!=1, "
         "tp=8, model=NAME, file=PATH, ...; a list, or repeat: every one must hold (before "
         "--every)",
         "KEY=VALUE"},
        {"by", 0, 0, G_OPTION_ARG_STRING_ARRAY, &by_specs,
         "Also give the figures per group of runs sharing a key: nodes, tp, gpus, pp, dp, "
         "microbatch, microbatches (a step's, per pipeline), file, cluster or recompute (none, "
         "selective, full, op), or several joined "
         "by '+' (tp+microbatch: a group per pair; a list, or repeat; the per-model figures are "
         "always given): where the error lies",
         "KEY"},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "Output: table (default), csv (one row per run) or json"),
        ssim_cli_entry_arg(
            ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT, "Also write the per-run CSV to FILE"),
            "FILE.csv"),
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Predicted-vs-measured scatter (log-log, y = x): writes FILE's .dat and .gp, and the "
         "image when gnuplot is installed",
         "FILE.png"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Threads (default: all cores)", "N"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
         "No progress on stderr (by default a line with an ETA weighted by each run's size)", NULL},
        {NULL}};
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- compare predictions with measured runs");
    g_option_context_set_summary(
        ctx, "Simulates every run of measured-runs files and prints predicted vs measured\n"
             "iteration time, the error of each run, MAPE, median and max error, bias, the\n"
             "fraction within 10%, and Kendall's tau of the ranking within groups of runs that\n"
             "share a model, overall and per model; and each run's peak memory estimate, marked\n"
             "'m' where it is above its GPUs' (every measured run ran: the estimate is too high).");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim validate\n"
             "  shiftsim validate --runs traces/validation/published-a100.csv --format csv\n"
             "  shiftsim validate --runs traces/validation/published-a100.csv \\\n"
             "      --runs traces/validation/published-a100-scaling.csv\n"
             "  shiftsim validate -c models/clusters/dgx-a100-calibrated.ini --plot val.png\n"
             "  shiftsim validate --by tp,microbatch\n\n"
             "Exit status: 0 success; 1 bad input; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    const GOptionEntry old[] = {
        {"runs", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &runs_paths, NULL, NULL},
        {"plot", 'p', 0, G_OPTION_ARG_FILENAME, &plot, NULL, NULL},
        {NULL}};
    ssim_cli_add_old_short_names(ctx, old); /* -r is --recompute, -p the placement */
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    ssim_cli_job_resolve(VERB, &job);
    SsimFormat format;
    if (rc != SSIM_EXIT_OK || (rc = ssim_cli_output_format(VERB, &output, &format)))
        return rc;
    if (every < 1)
        return ssim_cli_usage_error(VERB, "--every: must be a positive integer");
    if (jobs < 0)
        return ssim_cli_usage_error(VERB, "--jobs: must be >= 0");
    if ((rc = ssim_cli_check_output(output.output)) || (rc = ssim_cli_check_plot(plot)))
        return rc;
    SsimGrouping by[SSIM_CLI_GROUPINGS_MAX];
    guint n_by;
    if ((rc = ssim_cli_group_keys(VERB, "--by", by_specs, "", by, &n_by)))
        return rc;
    SsimRowMatch only[SSIM_CLI_MATCHES_MAX];
    guint n_only;
    if ((rc = ssim_cli_row_matches(VERB, only_specs, only, &n_only, &only_text)))
        return rc;

    g_autoptr(GError) error = NULL;
    g_autofree char *found = runs_paths ? NULL : ssim_data_find(DEFAULT_RUNS);
    if (runs_paths == NULL && found == NULL) {
        fprintf(stderr, "shiftsim: %s: not found (give --runs FILE)\n", DEFAULT_RUNS);
        return SSIM_EXIT_RUNTIME;
    }
    const char *const one[] = {found, NULL};
    const char *const *paths = runs_paths ? (const char *const *)runs_paths : one;
    guint n_paths = g_strv_length((char **)paths);
    /* What the messages call the set: its file, or how many. */
    g_autofree char *label =
        n_paths == 1 ? g_strdup(paths[0]) : g_strdup_printf("%u runs files", n_paths);
    g_autoptr(SsimRuns) all = NULL;
    if ((rc = ssim_cli_load_runs(VERB, paths, FALSE, FALSE, &all)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_select_runs(VERB, &all, job.cluster, only, n_only, only_text, label)))
        return rc;
    /* Every N-th row (of those --only keeps) of the files in order, as if they were one. */
    g_autoptr(SsimRuns) runs = ssim_runs_new(paths[0]);
    for (guint i = 0; i < ssim_runs_n(all); i += (guint)every) {
        SsimMeasuredRun run = *ssim_runs_get(all, i);
        if (job.step_costs && !ssim_parallel_set(&run.par, "step_costs", job.step_costs, &error))
            return ssim_cli_usage_error(VERB, "--step-costs: %s", error->message);
        ssim_runs_add(runs, &run);
    }
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, job.cluster, &error);
    if (set == NULL)
        return ssim_cli_runtime_error(error);
    ssim_run_set_set_limits(set, (guint64)limits.max_ops, (guint64)limits.max_events);
    ssim_run_set_set_max_memory(set, limits.max_memory);
    guint n = ssim_run_set_n(set);
    g_autofree double *pred = g_new0(double, MAX(n, 1u));
    g_autofree double *meas = g_new0(double, MAX(n, 1u));
    char **errors = g_new0(char *, n + 1);
    g_autoptr(SsimProgress) progress = ssim_progress_new("shiftsim validate", "runs", quiet);
    double work = 0;
    for (guint i = 0; i < n; i++)
        work += ssim_run_set_work(set, i);
    ssim_progress_set_total(progress, n, work);
    ssim_run_set_set_progress(set, ssim_progress_run_set_cb, progress);
    ssim_run_set_predict(set, NULL, n, NULL, (guint)jobs, pred, errors);
    ssim_run_set_set_progress(set, NULL, NULL);
    ssim_progress_finish(progress);
    for (guint i = 0; i < n; i++)
        meas[i] = ssim_run_set_measured_ms(set, i);
    g_autofree guint *groups = ssim_run_set_groups(set, NULL, n);
    SsimErrorStats stats;
    ssim_error_stats(pred, meas, groups, n, &stats);

    guint outside = 0;
    for (guint i = 0; i < n; i++) {
        g_autofree char *ex = ssim_run_set_extrapolation(set, i);
        outside += ex != NULL;
    }
    if (outside > 0)
        fprintf(stderr,
                "shiftsim validate: warning: %u of %u runs lie outside the shapes the cluster was "
                "calibrated on; their predictions are extrapolations (marked *)\n",
                outside, n);
    g_autoptr(GString) out = ssim_validation_format(set, pred, errors, &stats, by, n_by, format);
    /* With -o -, stdout carries the per-run CSV alone: the report goes to stderr. */
    if (output.output && strcmp(output.output, "-") == 0)
        fputs(out->str, stderr);
    else if (!ssim_cli_emit(NULL, out, &error))
        rc = ssim_cli_runtime_error(error);
    if (rc == SSIM_EXIT_OK && output.output) {
        g_autoptr(GString) csv =
            ssim_validation_format(set, pred, errors, &stats, NULL, 0, SSIM_FORMAT_CSV);
        if (!ssim_cli_emit(output.output, csv, &error))
            rc = ssim_cli_runtime_error(error);
    }
    if (rc == SSIM_EXIT_OK && plot) {
        gboolean rendered = FALSE;
        if (!ssim_validation_plot(set, pred, plot, NULL, &rendered, &error))
            rc = ssim_cli_runtime_error(error);
        else if (!rendered)
            fprintf(stderr, "shiftsim validate: gnuplot not found; wrote the .dat and .gp of %s\n",
                    plot);
    }
    guint limited = 0;
    for (guint i = 0; i < n; i++)
        limited += errors[i] && g_str_has_prefix(errors[i], SSIM_RUN_SET_LIMIT_PREFIX);
    if (rc == SSIM_EXIT_OK && stats.n == 0) {
        fprintf(stderr,
                "shiftsim validate: %s: none of the %u runs simulated (each row says why); there "
                "are no error figures\n",
                label, n);
        rc = SSIM_EXIT_RUNTIME;
    } else if (rc == SSIM_EXIT_OK && limited > 0) {
        fprintf(stderr,
                "shiftsim validate: %s: %u of %u runs hit a limit (--max-ops, --max-events, "
                "--max-memory) and are left out of the figures\n",
                label, limited, n);
        rc = SSIM_EXIT_RUNTIME;
    }
    ssim_run_set_errors_free(errors, n);
    return rc;
}
