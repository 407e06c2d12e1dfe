/*
 * `shiftsim compare`: one configuration under several placement policies, side by side, and an
 * explanation of what moved.  By default the paper's pair first, its baseline (alpa: Alpa on XLA)
 * and its relocation (commshift), then our extensions on top of alpa and auto.  The comparison
 * and its reports are the library's (include/shiftsim/compare.h); this file is options and
 * output.
 *
 * Every policy is simulated on the same model, cluster and split; each runs its own schedule
 * (alpa, commshift and auto Alpa's MPMD 1F1B, xla the lock-step pipeline, megatron 1F1B) unless
 * --schedule forces one for all.  With no options: GPT-J 6B on 2 DGX H200 nodes, dp 2 x tp 4 x
 * pp 2, which has both a pipeline and data parallelism, so every move has something to act on.
 * Without a recompute mode, the cheapest that fits every policy's schedule is used.
 */
#include "src/app/verbs.h"

#include <shiftsim/compare.h>
#include <shiftsim/trace.h>

#include <stdio.h>
#include <string.h>

#define VERB "compare"

/* Before the work: every file --trace and --plot will write (ssim_compare_plot's names). */
static int check_outputs(const char *trace, const char *plot, const SsimPlacement *kinds,
                         guint n_kinds)
{
    int rc = ssim_cli_check_plot(plot);
    g_autofree char *stem = plot ? g_strdup(plot) : NULL;
    char *dot = stem ? strrchr(stem, '.') : NULL;
    const char *ext = dot && !strchr(dot, '/') ? plot + (dot - stem) : ".png";
    if (dot && !strchr(dot, '/'))
        *dot = '\0';
    for (guint i = 0; rc == SSIM_EXIT_OK && i < n_kinds; i++) {
        g_autofree char *name = ssim_placement_to_string(&kinds[i]);
        g_autofree char *json = trace ? g_strdup_printf("%s-%s.json", trace, name) : NULL;
        g_autofree char *gantt = plot ? g_strdup_printf("%s-%s%s", stem, name, ext) : NULL;
        if ((rc = ssim_cli_check_output(json)) == SSIM_EXIT_OK)
            rc = ssim_cli_check_plot(gantt);
    }
    return rc;
}

int ssim_verb_compare(int argc, char **argv)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliPlace) place = SSIM_CLI_PLACE_INIT;
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *policies = NULL, *trace = NULL, *plot = NULL, *plot_window = NULL;
    gint top = 8, budget = SSIM_CLI_UNSET;
    gboolean exact = FALSE, ignore_memory = FALSE;
    g_auto(SsimCliLimits) limits = {0};
    job.nodes = 2;
    GOptionEntry entries[] = {
        ssim_cli_job_entry(&job, SSIM_OPT_MODEL,
                           "Model: a bundled name or an INI path (default: the embedded GPT-J 6B)"),
        ssim_cli_job_entry(&job, SSIM_OPT_CLUSTER,
                           "Cluster: a bundled name or an INI path (default: the embedded DGX "
                           "H200)"),
        ssim_cli_job_entry(&job, SSIM_OPT_NODES, "Number of nodes (default 2)"),
        ssim_cli_job_entry(&job, SSIM_OPT_SPLIT,
                           "Configuration as key=value pairs (applied before the options below)"),
        ssim_cli_job_entry(&job, SSIM_OPT_DP, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_TP, "Tensor-parallel ranks per stage (default 4)"),
        ssim_cli_job_entry(&job, SSIM_OPT_PP, "Pipeline stages (default 2)"),
        ssim_cli_job_entry(&job, SSIM_OPT_CP, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_DEFER_WGRAD, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_MICROBATCH, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_GLOBAL_BATCH,
                           "Sequences per iteration (default 4 per GPU, the same for every split)"),
        ssim_cli_job_entry(&job, SSIM_OPT_SCHEDULE,
                           "Force one schedule for every policy (default: each policy's own: "
                           "alpa; xla for xla, 1f1b for megatron)"),
        ssim_cli_job_entry(&job, SSIM_OPT_RECOMPUTE,
                           "none, selective, full or op (default: the first of none, selective, "
                           "full that fits)"),
        ssim_cli_job_entry(&job, SSIM_OPT_RECOMPUTE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_SEQ_PARALLEL, "Sequence parallelism"),
        ssim_cli_job_entry(&job, SSIM_OPT_CROSS_NODE_TP, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_ZERO, "ZeRO stage, 0 to 3 (commshift needs 0 or 1)"),
        ssim_cli_job_entry(&job, SSIM_OPT_BUCKET,
                           "DP gradient bucket size (default: Megatron-LM's for megatron, off "
                           "otherwise)"),
        ssim_cli_job_entry(&job, SSIM_OPT_TP_COMM, "allreduce or rs-ag"),
        ssim_cli_job_entry(&job, SSIM_OPT_ATTENTION, "unfused (default) or flash"),
        ssim_cli_job_entry(&job, SSIM_OPT_TRANSFORMER_IMPL,
                           "transformer_engine (default), local (Megatron-LM's own layers) or "
                           "torch (eager PyTorch modules)"),
        ssim_cli_job_entry(&job, SSIM_OPT_RMSNORM, "auto (default), fused or eager"),
        ssim_cli_job_entry(&job, SSIM_OPT_FP8, "FP8 GEMMs: off (default), hybrid or e4m3"),
        ssim_cli_job_entry(&job, SSIM_OPT_FP8_RECIPE, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_TP_COMM_OVERLAP, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_CROSS_ENTROPY, "unfused (default), native or te"),
        ssim_cli_job_entry(&job, SSIM_OPT_LAUNCH_BLOCKING, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_OVERLAP_PARAM_GATHER, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_FSDP_ROOT, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_STAGE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_FIRST_STAGE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_LAST_STAGE_LAYERS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_EMBEDDING_IN_SPLIT, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_LOSS_IN_SPLIT, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_STEP_COSTS, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_SEQ_LENGTH, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_DTYPE, NULL),
        {"policies", 'p', 0, G_OPTION_ARG_STRING, &policies,
         "Comma-separated policies, each NAME[+EXT...] (alpa, commshift, xla, megatron, auto; "
         "EXT early-dp, async-pp, late-tp); the first is the reference "
         "(default " SSIM_COMPARE_POLICIES_DEFAULT ")",
         "LIST"},
        ssim_cli_place_entry(&place, SSIM_OPT_SHIFT,
                             "Extensions added to every policy: early-dp, async-pp, late-tp (or "
                             "dp, pp, tp), all or none; for auto, the ones it may search "
                             "(default all)"),
        ssim_cli_place_entry(&place, SSIM_OPT_COMMSHIFT_GRADS, NULL),
        ssim_cli_place_entry(&place, SSIM_OPT_LHS,
                             "XLA's latency-hiding scheduler for every policy but megatron "
                             "(late-tp and early-dp inside programs)"),
        ssim_cli_place_entry(&place, SSIM_OPT_COMM_REPEAT, NULL),
        {"budget", 0, 0, G_OPTION_ARG_INT, &budget, "Auto: most candidates to try (default 24)",
         "N"},
        {"top", 'k', 0, G_OPTION_ARG_INT, &top, "Attribution rows to show (default 8)", "N"},
        {"exact", 0, 0, G_OPTION_ARG_NONE, &exact, "Simulate every GPU", NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &ignore_memory,
         "Simulate even when the memory estimate exceeds a GPU's HBM", NULL},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT, NULL),
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT, NULL),
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
         "Write a Perfetto trace per policy to PREFIX-POLICY.json", "PREFIX"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write a bar chart of the policies to FILE.png and a Gantt chart per policy to "
         "FILE-POLICY.png (with .dat and .gp)",
         "FILE.png"},
        {"plot-window", 0, 0, G_OPTION_ARG_STRING, &plot_window,
         "Draw only START:END (ms) of the step in the Gantt charts, e.g. 100:200 or 400:",
         "START:END"},
        {NULL}};
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- compare placement policies on one configuration");
    g_option_context_set_summary(
        ctx, "Simulates one configuration under several placement policies: first the paper's\n"
             "pair, alpa (its baseline: Alpa on XLA, the gradient all-reduce at the end of the\n"
             "last backward program) and commshift (its relocation: that all-reduce moved into\n"
             "apply_grad), then our extensions on top of alpa and auto (a search); and prints\n"
             "step time, tokens/s, gain over the first policy and exposed communication per\n"
             "class, the moves each policy made, and where the difference comes from on the\n"
             "critical path.  With no options: GPT-J 6B on 2 DGX H200 nodes, dp 2 x tp 4 x pp 2.");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim compare\n"
             "  shiftsim compare -c tsubame4 --nodes 4 --tp 2 --pp 4 -p alpa,commshift "
             "--comm-repeat 2\n"
             "  shiftsim compare -p alpa,commshift,xla,megatron --commshift-grads 0-13,embed\n"
             "  shiftsim compare --trace out/gptj --plot out/gptj.png\n\n"
             "Exit status: 0 success; 1 bad input or simulation failure; 2 usage error.");
    ssim_cli_add_entries(ctx, entries, &job);
    const GOptionEntry old[] = {{"policies", 'P', 0, G_OPTION_ARG_STRING, &policies, NULL, NULL},
                                {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace, NULL, NULL},
                                {NULL}};
    ssim_cli_add_old_short_names(ctx, old); /* -P is calibrate's --params, -t --timeline */
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    ssim_cli_job_resolve(VERB, &job);
    SsimFormat format;
    if (rc != SSIM_EXIT_OK || (rc = ssim_cli_output_format(VERB, &output, &format)) ||
        (rc = ssim_cli_job_check_nodes(VERB, &job)) || (rc = ssim_cli_job_check_counts(VERB, &job)))
        return rc;
    if ((rc = ssim_cli_check_at_least(VERB, "top", top, 1)) ||
        (rc = ssim_cli_check_at_least(VERB, "budget", budget, 1)))
        return rc;

    SsimCompareSpec spec = {.placement = SSIM_PLACEMENT_INIT,
                            .exact = exact,
                            .ignore_memory = ignore_memory,
                            .max_ops = (guint64)limits.max_ops,
                            .max_events = (guint64)limits.max_events,
                            .max_memory = limits.max_memory};
    if ((rc = ssim_cli_place_parse(VERB, &place, &spec.placement)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_place_comm_repeat(VERB, &place, &spec.comm_repeat)) != SSIM_EXIT_OK)
        return rc;
    if (SSIM_CLI_GIVEN(budget))
        spec.placement.budget = (guint)budget;
    g_autoptr(GError) error = NULL;
    SsimPlacement kinds[SSIM_COMPARE_MAX_POLICIES];
    guint n_kinds = ssim_compare_policies_parse(policies, kinds, &error);
    if (n_kinds == 0)
        return ssim_cli_usage_error(VERB, "--policies: %s", error->message);
    g_auto(GStrv) words = g_strsplit(policies ? policies : "", ",", -1);
    for (guint i = 0; words[i]; i++) {
        const char *note = ssim_placement_alias_note(g_strstrip(words[i]));
        if (note) {
            fprintf(stderr, "shiftsim %s: %s\n", VERB, note);
            break;
        }
    }
    SsimGanttView view = {0};
    if (plot_window && !ssim_gantt_window_parse(plot_window, &view, &error))
        return ssim_cli_usage_error(VERB, "--plot-window: %s", error->message);
    if ((rc = ssim_cli_check_output(output.output)) ||
        (rc = check_outputs(trace, plot, kinds, n_kinds)))
        return rc;

    g_autoptr(SsimModel) model = NULL;
    g_autoptr(SsimCluster) cluster = NULL;
    if ((rc = ssim_cli_job_load(VERB, &job, &model, &cluster)) != SSIM_EXIT_OK)
        return rc;
    ssim_parallel_init(&spec.par);
    spec.par.tp = MIN(4u, cluster->gpus_per_node);
    spec.par.pp = 2;
    if ((rc = ssim_cli_job_apply(VERB, &job, &spec.par, ssim_cluster_n_gpus(cluster))) !=
            SSIM_EXIT_OK ||
        (rc = ssim_cli_job_apply_model(VERB, &job, model, &spec.par)) != SSIM_EXIT_OK)
        return rc;
    spec.model = model;
    spec.cluster = cluster;
    spec.force_schedule = ssim_cli_job_has_schedule(&job);
    spec.pick_recompute = !ssim_cli_job_has_recompute(&job);
    spec.bucket_given = ssim_cli_job_has_bucket(&job);
    g_autoptr(SsimCompare) cmp = ssim_compare_run(&spec, kinds, n_kinds, &error);
    if (cmp == NULL)
        return ssim_cli_runtime_error(error);
    ssim_cli_warn_extrapolation(VERB, &spec.par, model, cluster);

    g_autoptr(GString) out = ssim_compare_format(cmp, format, (guint)top);
    for (guint i = 0; trace && i < n_kinds; i++) {
        const SsimComparePolicy *p = ssim_compare_policy(cmp, i);
        g_autofree char *path = g_strdup_printf("%s-%s.json", trace, p->name);
        g_autoptr(GString) json = ssim_trace_json(ssim_lowered_graph(p->lowered), p->timeline, 0);
        if (!ssim_cli_emit(path, json, &error))
            return ssim_cli_runtime_error(error);
    }
    SsimPlotStatus status = SSIM_PLOT_RENDERED;
    if (plot && !ssim_compare_plot(cmp, plot, &view, &status, &error))
        return ssim_cli_runtime_error(error);
    if (!ssim_cli_emit(output.output, out, &error))
        return ssim_cli_runtime_error(error);
    if (status == SSIM_PLOT_NO_GNUPLOT)
        fprintf(stderr, "shiftsim compare: gnuplot not found; wrote the .dat and .gp files "
                        "(render with: gnuplot FILE.gp)\n");
    return SSIM_EXIT_OK;
}
