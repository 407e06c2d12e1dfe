/*
 * `shiftsim sweep`: every dp x tp x pp split (with virtual stages, microbatch sizes, schedules,
 * recompute modes and placements) of N GPUs, simulated on a thread pool, ranked by tokens/s and
 * written as CSV and plots.  The work is the library's (include/shiftsim/sweep.h); this file is
 * options, progress and output.
 *
 * What is printed on stdout (the top K and the counts) and the CSV depend only on the command
 * line, never on -j, --shard composition or the MPI rank count; timing and progress go to stderr.
 * Under `mpirun -n K` (a build with -Dmpi=enabled) every rank parses the same options, evaluates
 * its share, and rank 0 alone prints and writes.  A launcher environment with more than one
 * process but a build without MPI is refused, so K copies never race to write one file.
 */
#include "src/app/progress.h"
#include "src/app/verbs.h"

#include <shiftsim/budget.h>
#include <shiftsim/report.h>
#include <shiftsim/sweep.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERB "sweep"

/* The sweep's figures to the progress line (src/app/progress.h). */
static void progress_cb(const SsimSweepProgress *pr, gpointer user)
{
    ssim_progress_update(user, pr->done, pr->total, pr->work_done, pr->work_total);
}

/*
 * How many configurations can be simulated at once within the memory budget: the limit over the
 * largest estimate among the rows that fit it at all (a row over it alone is refused as a limit
 * row, whatever the threads).  Only the speed depends on it, never the output.
 */
static guint threads_that_fit(const SsimSweep *sweep, const SsimModel *model, gboolean exact,
                              guint64 max_memory)
{
    guint64 limit = max_memory ? max_memory : ssim_budget_memory_default();
    if (limit == 0)
        return G_MAXUINT;
    double most = 0;
    for (guint i = 0; i < ssim_sweep_n_configs(sweep); i++) {
        SsimMemoryEstimate est;
        ssim_budget_memory_estimate(model, &ssim_sweep_row(sweep, i)->par,
                                    exact ? SSIM_MEMORY_REPLICATED : SSIM_MEMORY_REPRESENTATIVE,
                                    &est);
        if (est.bytes <= (double)limit)
            most = MAX(most, est.bytes);
    }
    return most > 0 ? (guint)MIN((double)limit / most, (double)G_MAXUINT) : G_MAXUINT;
}

static gboolean parse_list(const char *text, const char *opt, SsimSweepInts *list, int *rc)
{
    g_autoptr(GError) error = NULL;
    if (text && !ssim_sweep_ints_parse(list, text, &error)) {
        *rc = ssim_cli_usage_error(VERB, "--%s: %s", opt, error->message);
        return FALSE;
    }
    return TRUE;
}

static gboolean parse_names(const char *text, const char *opt, SsimSweepNames *list, int *rc)
{
    g_autoptr(GError) error = NULL;
    if (text && !ssim_sweep_names_parse(list, text, &error)) {
        *rc = ssim_cli_usage_error(VERB, "--%s: %s", opt, error->message);
        return FALSE;
    }
    return TRUE;
}

/* The process count a launcher (mpirun, srun) announces; 1 when none. */
static guint launched_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"};
    if (!ssim_sweep_mpi_launched())
        return 1;
    for (gsize i = 0; i < G_N_ELEMENTS(vars); i++) {
        const char *v = g_getenv(vars[i]);
        if (v)
            return (guint)MAX(1, atoi(v));
    }
    return 1;
}

/* On stderr, how many of the simulated splits lie outside the shapes the cluster was calibrated
 * on (ssim_parallel_extrapolation), naming the first: their figures extrapolate the fit. */
static void warn_extrapolations(const SsimSweep *sweep, const SsimModel *model)
{
    const SsimCluster *cluster = ssim_sweep_cluster(sweep);
    guint outside = 0, ok = 0;
    g_autofree char *first = NULL;
    for (guint i = 0; i < ssim_sweep_n_configs(sweep); i++) {
        const SsimSweepRow *row = ssim_sweep_row(sweep, i);
        if (row->status != SSIM_SWEEP_OK)
            continue;
        ok++;
        char *why = ssim_parallel_extrapolation(&row->par, model, cluster->nodes, cluster);
        if (why == NULL)
            continue;
        if (outside++ == 0)
            first = why;
        else
            g_free(why);
    }
    if (outside > 0)
        fprintf(stderr,
                "shiftsim sweep: warning: %u of %u simulated splits lie outside the shapes %s "
                "was calibrated on (the first: %s): their figures extrapolate its fit\n",
                outside, ok, cluster->name, first);
}

static int run(int argc, char **argv, gboolean *mpi_started)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliOutput) output = {0};
    g_auto(SsimCliPlace) place = SSIM_CLI_PLACE_INIT;
    g_autofree char *tp_list = NULL, *pp_list = NULL, *v_list = NULL, *mb_list = NULL;
    g_autofree char *sched_list = NULL, *place_list = NULL, *recompute = NULL;
    g_autofree char *plot = NULL, *shard = NULL, *zero_list = NULL;
    gint gpus = SSIM_CLI_UNSET, jobs = 0, top = 10;
    gboolean exact = FALSE, cross_node_tp = FALSE, quiet = FALSE, prune = FALSE, steady = FALSE;
    g_auto(SsimCliLimits) limits = {0};
    /* The split's counts and the schedule, placement and recompute mode are lists here. */
    GOptionEntry entries[] = {
        ssim_cli_job_entry(&job, SSIM_OPT_MODEL,
                           "Model: a bundled name (gpt-j-6b, gpt-3-175b, ...) or an INI path "
                           "(default GPT-J 6B)"),
        ssim_cli_job_entry(&job, SSIM_OPT_CLUSTER,
                           "Cluster: dgx-a100, dgx-h100, dgx-h200 or an INI path (default the "
                           "embedded DGX H200)"),
        {"gpus", 'N', 0, G_OPTION_ARG_INT, &gpus,
         "GPUs to split (a multiple of the GPUs per node; default all of the cluster's)", "N"},
        ssim_cli_job_entry(&job, SSIM_OPT_NODES, "Nodes (instead of --gpus)"),
        ssim_cli_job_entry(&job, SSIM_OPT_GLOBAL_BATCH,
                           "Sequences per iteration, the same for every split (default 4 x GPUs)"),
        {"tp", 0, 0, G_OPTION_ARG_STRING, &tp_list,
         "Tensor-parallel sizes (default powers of two up to the GPUs per node, or up to N with "
         "--cross-node-tp)",
         "LIST"},
        {"pp", 0, 0, G_OPTION_ARG_STRING, &pp_list, "Pipeline stages (default every divisor of N)",
         "LIST"},
        ssim_cli_job_entry(&job, SSIM_OPT_CP,
                           "Context parallelism in every configuration: GPUs each sequence is "
                           "split over (default 1; needs --attention flash and a Megatron-LM "
                           "schedule: --placements megatron)"),
        {"vstages", 'v', 0, G_OPTION_ARG_STRING, &v_list,
         "Virtual stages per GPU (default 1; more need the interleaved schedule)", "LIST"},
        {"microbatch", 'b', 0, G_OPTION_ARG_STRING, &mb_list,
         "Sequences per microbatch (default 1,2)", "LIST"},
        {"schedules", 's', 0, G_OPTION_ARG_STRING, &sched_list,
         "Schedules: alpa, alpa-gpipe, gpipe, xla, 1f1b, interleaved, or native (each "
         "placement's own; the default)",
         "LIST"},
        {"placements", 'p', 0, G_OPTION_ARG_STRING, &place_list,
         "Placements NAME[+EXT], e.g. alpa,commshift (default alpa; with --schedules alone, "
         "each schedule's framework)",
         "LIST"},
        ssim_cli_place_entry(&place, SSIM_OPT_SHIFT,
                             "Extensions added to every placement: early-dp, async-pp, late-tp, "
                             "all or none"),
        ssim_cli_place_entry(&place, SSIM_OPT_COMMSHIFT_GRADS, NULL),
        ssim_cli_place_entry(&place, SSIM_OPT_LHS, NULL),
        ssim_cli_place_entry(&place, SSIM_OPT_COMM_REPEAT, NULL),
        {"recompute", 'r', 0, G_OPTION_ARG_STRING, &recompute,
         "Recompute modes: auto (default: the first of none, selective, full that fits) or a "
         "list of none, selective, full, op",
         "LIST"},
        {"cross-node-tp", 0, 0, G_OPTION_ARG_NONE, &cross_node_tp,
         "Allow tensor-parallel groups that span nodes", NULL},
        ssim_cli_job_entry(&job, SSIM_OPT_SEQ_PARALLEL,
                           "Sequence parallelism in every configuration (implies --tp-comm "
                           "rs-ag)"),
        {"zero", 0, 0, G_OPTION_ARG_STRING, &zero_list,
         "ZeRO stages to sweep, from 0 to 3 (e.g. 0,1,3; default 0)", "LIST"},
        ssim_cli_job_entry(&job, SSIM_OPT_BUCKET, "DP gradient bucket (e.g. 25MiB) or off"),
        ssim_cli_job_entry(&job, SSIM_OPT_TP_COMM, "allreduce (default) or rs-ag"),
        ssim_cli_job_entry(&job, SSIM_OPT_ATTENTION, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_TRANSFORMER_IMPL,
                           "transformer_engine (default), local (Megatron-LM's own layers) or "
                           "torch (eager PyTorch modules)"),
        ssim_cli_job_entry(&job, SSIM_OPT_RMSNORM, "auto (default), fused or eager"),
        ssim_cli_job_entry(&job, SSIM_OPT_FP8, "FP8 GEMMs: off (default), hybrid or e4m3"),
        ssim_cli_job_entry(&job, SSIM_OPT_FP8_RECIPE, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_TP_COMM_OVERLAP,
                           "Transformer Engine's tensor-parallel overlap where sp is on"),
        ssim_cli_job_entry(&job, SSIM_OPT_CROSS_ENTROPY, "unfused (default), native or te"),
        ssim_cli_job_entry(&job, SSIM_OPT_LAUNCH_BLOCKING,
                           "Every configuration runs with CUDA_LAUNCH_BLOCKING=1"),
        ssim_cli_job_entry(&job, SSIM_OPT_OVERLAP_PARAM_GATHER,
                           "The weights' all-gather beside the next step's forward where ZeRO is "
                           "1 or 2 (Megatron-LM's --overlap-param-gather)"),
        ssim_cli_job_entry(&job, SSIM_OPT_FSDP_ROOT,
                           "FSDP2's root unit as torchtitan wraps it where ZeRO is 3 and pp 1"),
        ssim_cli_job_entry(&job, SSIM_OPT_ORDER, "Rank order, innermost first (tp-dp-pp)"),
        ssim_cli_job_entry(&job, SSIM_OPT_STAGE_LAYERS,
                           "balanced: each row's layers spread for even work over its pp v "
                           "chunks, the LM head counted by its FLOPs (a list fits one pp only)"),
        ssim_cli_job_entry(&job, SSIM_OPT_FIRST_STAGE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_LAST_STAGE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_EMBEDDING_IN_SPLIT, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_LOSS_IN_SPLIT, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_STEP_COSTS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_SEQ_LENGTH, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_DTYPE, NULL),
        {"exact", 0, 0, G_OPTION_ARG_NONE, &exact,
         "Simulate every GPU instead of one representative per stage", NULL},
        {"prune", 0, 0, G_OPTION_ARG_NONE, &prune,
         "Skip configurations whose lower bound on the step (compute and the pipeline's fill and "
         "drain) exceeds the K-th best step simulated (-k, at least 1): the top K are the "
         "unpruned sweep's; one process only",
         NULL},
        {"steady", 0, 0, G_OPTION_ARG_NONE, &steady,
         "Simulate three short steady-state probes per configuration and extrapolate to its "
         "microbatches (exact step; the bubble approximated), then the best max(K, 10) again in "
         "full",
         NULL},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Threads (default: all cores)", "N"},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
         "Evaluate only configurations k with k mod N = I (0 <= I < N), for job arrays; "
         "join the CSVs with 'shiftsim merge'",
         "I/N"},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "What stdout carries: table (default: the K best and the counts), "
                              "csv (every row) or json (every row; docs/sweep.md); with csv or "
                              "json the table goes to stderr"),
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT,
                              "Write every row to FILE.csv (atomically; '-' for stdout, the "
                              "table then on stderr)"),
        {"top", 'k', 0, G_OPTION_ARG_INT, &top, "Print the K best configurations (default 10)",
         "K"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write PREFIX-throughput.png and PREFIX-heatmap.png (with their .dat and .gp)", "PREFIX"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress or timing on stderr", NULL},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("- simulate every split of N GPUs");
    g_option_context_set_summary(
        ctx, "Enumerates every dp x tp x pp = N split with each virtual-stage count, microbatch\n"
             "size, schedule, recompute mode and placement of the lists, drops the illegal and\n"
             "the memory-infeasible ones (counting each reason), simulates the rest in\n"
             "parallel and prints the best by tokens/s.  The CSV has every configuration, its\n"
             "status, reason and figures, in configuration order whatever -j.");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim sweep --model gpt-j-6b --cluster dgx-h100 --gpus 32 -o sweep.csv\n"
             "  shiftsim sweep --model gpt-3-175b --cluster dgx-h100 --gpus 1024 "
             "--global-batch 1536 \\\n      --tp 4,8 --pp 8,16,32 --microbatch 1 "
             "--schedules 1f1b -j 2 -o gpt3.csv\n"
             "  shiftsim sweep ... --shard 0/4 -o part0.csv; shiftsim merge part*.csv -o all.csv\n"
             "  mpirun -n 4 shiftsim sweep ... -o all.csv      (built with -Dmpi=enabled)\n\n"
             "Exit status: 0 success (also when nothing fits); 1 bad input; 2 usage error.");
    ssim_cli_add_entries(ctx, entries, &job);
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    if (rc != SSIM_EXIT_OK)
        return rc;
    ssim_cli_job_resolve(VERB, &job);
    if ((rc = ssim_cli_check_at_least(VERB, "jobs", jobs, 0)) ||
        (rc = ssim_cli_check_at_least(VERB, "top", top, 0)) ||
        (rc = ssim_cli_check_at_least(VERB, "gpus", gpus, 1)) ||
        (rc = ssim_cli_job_check_nodes(VERB, &job)) || (rc = ssim_cli_job_check_counts(VERB, &job)))
        return rc;
    SsimFormat format;
    if ((rc = ssim_cli_output_format(VERB, &output, &format)) != SSIM_EXIT_OK)
        return rc;
    if (format != SSIM_FORMAT_TABLE && output.output && strcmp(output.output, "-") == 0)
        return ssim_cli_usage_error(VERB,
                                    "-o -: stdout already carries the --format %s rows; "
                                    "give -o FILE.csv",
                                    output.format);
    if (job.overlap_grad_reduce) /* Megatron-LM's bucket depends on dp, which the sweep varies */
        return ssim_cli_usage_error(VERB, "--overlap-grad-reduce: give --bucket BYTES, or "
                                          "--placements megatron, whose default bucket is "
                                          "Megatron-LM's (docs/simulate.md)");
    if (gpus > (gint)SSIM_MAX_GPUS)
        return ssim_cli_usage_error(VERB, "--gpus: %d GPUs is over the limit of %u GPUs", gpus,
                                    SSIM_MAX_GPUS);
    guint shard_i = 0, shard_n = 1;
    if (shard) {
        char *end = NULL;
        guint64 i = g_ascii_strtoull(shard, &end, 10);
        guint64 n = end && *end == '/' ? g_ascii_strtoull(end + 1, &end, 10) : 0;
        if (end == NULL || *end != '\0' || n < 1 || n > G_MAXINT || i >= n)
            return ssim_cli_usage_error(VERB, "--shard: '%s' is not I/N with 0 <= I < N", shard);
        shard_i = (guint)i;
        shard_n = (guint)n;
    }

    g_autofree char *throughput = plot ? g_strdup_printf("%s-throughput.png", plot) : NULL;
    g_autofree char *heatmap = plot ? g_strdup_printf("%s-heatmap.png", plot) : NULL;
    if ((rc = ssim_cli_check_output(output.output)) || (rc = ssim_cli_check_plot(throughput)) ||
        (rc = ssim_cli_check_plot(heatmap)))
        return rc;

    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = NULL;
    g_autoptr(SsimCluster) cluster = NULL;
    if ((rc = ssim_cli_job_load(VERB, &job, &model, &cluster)) != SSIM_EXIT_OK)
        return rc;
    guint n_gpus = SSIM_CLI_GIVEN(gpus) ? (guint)gpus : ssim_cluster_n_gpus(cluster);

    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, cluster, n_gpus);
    spec.exact = exact;
    spec.max_ops = (guint64)limits.max_ops;
    spec.max_events = (guint64)limits.max_events;
    spec.max_memory = limits.max_memory;
    spec.base.allow_cross_node_tp = cross_node_tp;
    if (cross_node_tp)
        ssim_sweep_spec_default_tp(&spec, cluster);
    if (SSIM_CLI_GIVEN(job.global_batch))
        spec.base.global_batch = (guint)job.global_batch;
    if ((rc = ssim_cli_job_apply_fields(VERB, &job, &spec.base)) != SSIM_EXIT_OK)
        return rc;
    if (SSIM_CLI_GIVEN(job.cp))
        spec.base.cp = (guint)job.cp;
    if (!parse_list(tp_list, "tp", &spec.tp, &rc) || !parse_list(pp_list, "pp", &spec.pp, &rc) ||
        !parse_list(v_list, "vstages", &spec.vstages, &rc) ||
        !parse_list(mb_list, "microbatch", &spec.microbatch, &rc) ||
        !parse_names(sched_list, "schedules", &spec.schedules, &rc) ||
        !parse_names(place_list, "placements", &spec.placements, &rc))
        return rc;
    if (recompute && !ssim_sweep_recompute_parse(&spec.recompute, recompute, &error))
        return ssim_cli_usage_error(VERB, "--recompute: %s", error->message);
    if (zero_list && !ssim_sweep_zero_parse(&spec.zero, zero_list, &error))
        return ssim_cli_usage_error(VERB, "--zero: %s", error->message);
    spec.steady = steady;
    if (prune) {
        /* The threshold needs every configuration's result: one process. */
        if (shard || launched_size() > 1)
            return ssim_cli_usage_error(VERB, "--prune needs the whole sweep in one process (no "
                                              "--shard, no MPI)");
        spec.prune_top = (guint)MAX(top, 1);
    }
    /* Schedules without placements: each runs with its framework's placement. */
    if (sched_list && !place_list) {
        g_strlcpy(spec.placements.v[0], "native", SSIM_PARALLEL_NAME_MAX);
        spec.placements.n = 1;
    }
    for (guint i = 0; i < spec.placements.n; i++) {
        const char *note = ssim_placement_alias_note(spec.placements.v[i]);
        if (note) {
            fprintf(stderr, "shiftsim %s: %s\n", VERB, note);
            break;
        }
    }
    if ((rc = ssim_cli_place_parse(VERB, &place, &spec.placement)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_place_comm_repeat(VERB, &place, &spec.comm_repeat)) != SSIM_EXIT_OK)
        return rc;
    spec.bucket_given = job.bucket != NULL;

    g_autoptr(SsimSweep) sweep = ssim_sweep_new(model, cluster, &spec, &error);
    if (sweep == NULL)
        return ssim_cli_runtime_error(error);

    /* Under a launcher, join MPI (or refuse when this build cannot). */
    guint rank = 0, size = 1;
    if (launched_size() > 1 || (ssim_sweep_mpi_launched() && ssim_sweep_mpi_available())) {
        if (!ssim_sweep_mpi_init(&argc, &argv, &rank, &size, &error)) {
            g_prefix_error(&error, "started by an MPI launcher, but ");
            return ssim_cli_runtime_error(error);
        }
        *mpi_started = TRUE;
    }
    guint first = shard_i + shard_n * rank, stride = shard_n * size;
    guint threads = jobs > 0 ? (guint)jobs : g_get_num_processors();
    guint fit = threads_that_fit(sweep, model, exact, limits.max_memory);
    if (fit < threads) {
        if (!quiet && rank == 0)
            fprintf(stderr,
                    "shiftsim sweep: %u thread%s instead of %u: the largest configuration's "
                    "memory estimate fits %u time%s in --max-memory\n",
                    fit, fit == 1 ? "" : "s", threads, fit, fit == 1 ? "" : "s");
        threads = fit;
    }
    g_autoptr(SsimProgress) prog = ssim_progress_new("shiftsim sweep", "configurations", quiet);
    gint64 t0 = g_get_monotonic_time();
    guint evaluated = ssim_sweep_run(sweep, first, stride, threads,
                                     quiet || rank != 0 ? NULL : progress_cb, prog, 200);
    double wall = (double)(g_get_monotonic_time() - t0) / 1e6;
    if (size > 1 && !ssim_sweep_mpi_gather(sweep, &error))
        return ssim_cli_runtime_error(error);
    if (rank != 0)
        return SSIM_EXIT_OK;
    if (!quiet)
        fprintf(stderr,
                "shiftsim sweep: evaluated %u configurations in %.2f s (%.1f/s) on %u thread%s%s"
                "\n",
                evaluated, wall, wall > 0 ? evaluated / wall : 0.0, threads,
                threads == 1 ? "" : "s", size > 1 ? " per rank (rank 0's share)" : "");
    warn_extrapolations(sweep, model);

    /* stdout carries only what was asked for: the table, or (-f csv, -f json, -o -) the rows,
     * the table then going to stderr for people. */
    g_autoptr(GString) summary = ssim_sweep_summary(sweep, (guint)top);
    const char *csv_path = output.output;
    gboolean csv_to_stdout = csv_path && strcmp(csv_path, "-") == 0;
    if (format == SSIM_FORMAT_TABLE && !csv_to_stdout) {
        if (!ssim_cli_emit(NULL, summary, &error))
            return ssim_cli_runtime_error(error);
    } else {
        fputs(summary->str, stderr);
    }
    g_autoptr(GString) csv = ssim_sweep_csv(sweep);
    if (csv_path && !ssim_cli_emit(csv_to_stdout ? NULL : csv_path, csv, &error))
        return ssim_cli_runtime_error(error);
    if (format == SSIM_FORMAT_CSV && !ssim_cli_emit(NULL, csv, &error))
        return ssim_cli_runtime_error(error);
    if (format == SSIM_FORMAT_JSON) {
        g_autoptr(GString) json = ssim_sweep_csv_json(csv->str, csv->len, "sweep", &error);
        if (json == NULL || !ssim_cli_emit(NULL, json, &error))
            return ssim_cli_runtime_error(error);
    }
    if (plot) {
        SsimPlotStatus status;
        if (!ssim_sweep_plot(sweep, plot, &status, &error))
            return ssim_cli_runtime_error(error);
        if (status == SSIM_PLOT_NO_GNUPLOT && !quiet)
            fprintf(stderr, "shiftsim sweep: gnuplot not found: wrote %s-*.dat and .gp only\n",
                    plot);
    }
    return SSIM_EXIT_OK;
}

int ssim_verb_sweep(int argc, char **argv)
{
    gboolean mpi = FALSE;
    int rc = run(argc, argv, &mpi);
    if (mpi)
        ssim_sweep_mpi_finalize();
    return rc;
}
