/*
 * `shiftsim simulate`: one training configuration -> step time, throughput, TFLOP/s per GPU,
 * MFU, pipeline bubble, exposed communication per class and peak memory per GPU.
 *
 * With no options it simulates the embedded GPT-J 6B on the embedded DGX H200 cluster under the
 * split ssim_parallel_suggest() picks.  Split options override that suggestion field by field;
 * when tp or pp is given and dp is not, dp takes the remaining GPUs, and when the global batch is
 * not given it is 4 sequences per GPU whatever the split (ssim_parallel_default_global_batch), so
 * two splits simulated at their defaults train on the same batch.  When no
 * recompute mode is given, the cheapest of none, selective and full whose memory estimate fits
 * is used (and named on stderr); a configuration that fits under none of them is reported with
 * its full-recompute figure.  The placement is the one every verb defaults to, alpa (the paper's
 * baseline) with its schedule alpa; --placement NAME (with --shift, --commshift-grads, --lhs)
 * applies that policy and, unless --schedule is given, the policy's schedule; --schedule alone
 * runs that schedule's own framework (ssim_placement_kind_for_schedule).  Megatron gets
 * Megatron-LM's default gradient bucket unless --bucket is given.  --comm-repeat N runs every
 * communication N times.  The output names the placement and schedule that ran.  --plot draws
 * the step's Gantt chart (--plot-ranks, --plot-window as in replay).
 */
#include "src/app/tracefile.h"
#include "src/app/verbs.h"

#include <shiftsim/explain.h>
#include <shiftsim/netcal.h>
#include <shiftsim/plot.h>
#include <shiftsim/sim.h>
#include <shiftsim/summary.h>

#include <stdio.h>
#include <string.h>

#define VERB "simulate"

int ssim_verb_simulate(int argc, char **argv)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliPlace) place = SSIM_CLI_PLACE_INIT;
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *timeline = NULL, *profile_path = NULL, *network_name = NULL;
    g_autofree char *trace = NULL, *trace_format = NULL;
    g_autofree char *plot = NULL, *plot_window = NULL;
    gint plot_ranks = 8;
    gboolean ignore_memory = FALSE, exact = FALSE, exact_graph = FALSE, explain_costs = FALSE;
    g_auto(SsimCliLimits) limits = {0};
    /* After the job options (--model ... --order), before the placement ones. */
    GOptionEntry run_entries[] = {
        {"exact", 0, 0, G_OPTION_ARG_NONE, &exact,
         "Simulate every GPU instead of one representative rank per pipeline stage (each GPU "
         "replays its own copy of its stage's program)",
         NULL},
        {"exact-graph", 0, 0, G_OPTION_ARG_NONE, &exact_graph,
         "With --exact: lower every GPU's program on its own (the explicit per-GPU graph, about "
         "13x the memory; implied by --timeline)",
         NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &ignore_memory,
         "Simulate even when the memory estimate exceeds a GPU's HBM", NULL},
        {"network", 0, 0, G_OPTION_ARG_STRING, &network_name,
         "Communication model: analytic (closed forms, default) or flow (flow-level network: "
         "links shared max-min fairly, so concurrent TP, PP and DP traffic slow each other; "
         "collectives as ring/tree/hierarchical flows; adds the slowdown from contention per "
         "class, and an uncontended_ns column to --timeline)",
         "MODEL"},
        {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile_path,
         "Measured profile (a # shiftsim-profile v1 CSV, or a directory of them): costs come from "
         "its rows where it has them, from the analytical model elsewhere; with --network flow "
         "its collective rows calibrate the network's bandwidth and latency instead",
         "PATH"},
        {"explain-costs", 0, 0, G_OPTION_ARG_NONE, &explain_costs,
         "After the figures, count per op class and kind how many op costs were exact, "
         "interpolated, extrapolated or analytical",
         NULL},
        {NULL}};
    /* After the placement options. */
    GOptionEntry output_entries[] = {
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "Output: table (default), csv (header + one row) or json"),
        {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &timeline,
         "Write one CSV row per op (id, name, rank, stream, kind, class, bytes, flops, "
         "ready_ns, start_ns, end_ns) to FILE ('-' for stdout)",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
         "Write the iteration as a Perfetto trace (open in ui.perfetto.dev): a process per "
         "simulated rank, a thread per stream; protobuf for FILE.pftrace, JSON otherwise ('-' "
         "for stdout)",
         "FILE"},
        {"trace-format", 0, 0, G_OPTION_ARG_STRING, &trace_format,
         "Force the --trace format: proto or json (default: by FILE's extension)", "FORMAT"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write a Gantt chart of the step to FILE (.png or .svg; FILE.dat and FILE.gp always "
         "written, rendering needs gnuplot)",
         "FILE"},
        {"plot-ranks", 0, 0, G_OPTION_ARG_INT, &plot_ranks,
         "Ranks shown in --plot (0 = all; default 8)", "N"},
        {"plot-window", 0, 0, G_OPTION_ARG_STRING, &plot_window,
         "Draw only START:END (ms) of the step in --plot, e.g. 100:200 or 400:", "START:END"},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("- simulate one training iteration");
    g_option_context_set_summary(
        ctx, "Lowers a model, a cluster and a dp x tp x pp split to the per-GPU op graph of one\n"
             "training iteration, replays it with the analytical cost model and prints step\n"
             "time, tokens/s, samples/s, model and hardware TFLOP/s per GPU, MFU, the pipeline\n"
             "bubble, exposed communication per class (time a class's communication runs while\n"
             "the GPU computes nothing) and peak memory per GPU.  With no options: GPT-J 6B on\n"
             "a 4-node DGX H200 cluster under a suggested split.");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim simulate\n"
             "  shiftsim simulate --model gpt-3-175b --cluster dgx-a100 --nodes 128 --tp 8 "
             "--pp 16 \\\n      --global-batch 1536 --schedule interleaved -v 2 --recompute "
             "full\n"
             "  shiftsim simulate -c tsubame4 -n 4 --tp 2 --pp 4 -p commshift --comm-repeat 2\n"
             "  shiftsim simulate --profile traces/vtrain-a100 --cluster dgx-a100 --nodes 1 "
             "--explain-costs\n"
             "  shiftsim simulate --tp 4 --pp 2 --trace step.pftrace\n\n"
             "Exit status: 0 success; 1 bad input, configuration that does not fit or simulation "
             "failure; 2 usage error.");
    ssim_cli_add_job(ctx, &job);
    g_option_context_add_main_entries(ctx, run_entries, NULL);
    ssim_cli_add_place(ctx, &place);
    g_option_context_add_main_entries(ctx, output_entries, NULL);
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    ssim_cli_job_resolve(VERB, &job);
    SsimFormat format;
    if (rc != SSIM_EXIT_OK || (rc = ssim_cli_output_format(VERB, &output, &format)) ||
        (rc = ssim_cli_job_check_counts(VERB, &job)) ||
        (rc = ssim_cli_job_check_nodes(VERB, &job)) || (rc = ssim_cli_check_output(timeline)) ||
        (rc = ssim_cli_check_output(trace)) || (rc = ssim_cli_check_plot(plot)))
        return rc;
    if (!ssim_cli_trace_format_valid(trace_format))
        return ssim_cli_usage_error(VERB, "--trace-format: '%s' is not proto or json",
                                    trace_format);
    if (trace_format && !trace)
        return ssim_cli_usage_error(VERB, "--trace-format: needs --trace FILE");
    if (trace && timeline && strcmp(trace, "-") == 0 && strcmp(timeline, "-") == 0)
        return ssim_cli_usage_error(VERB, "--trace and --timeline: only one of them can be '-'");

    g_autoptr(GError) error = NULL;
    if (plot_ranks < 0)
        return ssim_cli_usage_error(VERB, "--plot-ranks: must not be negative");
    SsimGanttView view = {.max_ranks = (guint)plot_ranks};
    if (plot_window && !ssim_gantt_window_parse(plot_window, &view, &error))
        return ssim_cli_usage_error(VERB, "--plot-window: %s", error->message);
    g_autoptr(SsimModel) model = NULL;
    g_autoptr(SsimCluster) cluster = NULL;
    if ((rc = ssim_cli_job_load(VERB, &job, &model, &cluster)) != SSIM_EXIT_OK)
        return rc;
    guint world = ssim_cluster_n_gpus(cluster);
    /* Loaded once; without --profile, --explain-costs counts against an empty one (all
     * analytical). */
    g_autoptr(SsimProfile) profile = NULL;
    ssim_cli_resolve_input(VERB, &profile_path, NULL);
    if (profile_path) {
        profile = ssim_profile_load(profile_path, &error);
        if (profile == NULL)
            return ssim_cli_runtime_error(error);
    } else if (explain_costs) {
        profile = ssim_profile_new();
    }

    SsimParallel par;
    ssim_parallel_init(&par);
    g_autoptr(GError) suggest_error = NULL;
    gboolean suggested = ssim_parallel_suggest(&par, model, cluster, &suggest_error);
    if (!suggested)
        ssim_parallel_init(&par);
    if (!suggested && !SSIM_CLI_GIVEN(job.tp) && !SSIM_CLI_GIVEN(job.pp) && job.split == NULL) {
        fprintf(stderr, "shiftsim: %s; give the split with --tp and --pp (or --split)\n",
                suggest_error->message);
        return SSIM_EXIT_RUNTIME;
    }
    if ((rc = ssim_cli_job_apply(VERB, &job, &par, world)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_job_apply_model(VERB, &job, model, &par)) != SSIM_EXIT_OK)
        return rc;

    SsimSimConfig config = {.model = model,
                            .cluster = cluster,
                            .par = &par,
                            .exact = exact || exact_graph,
                            .exact_graph = exact_graph,
                            .ignore_memory = ignore_memory};
    SsimCostExplain explain;
    SsimClassExplain class_explain;
    ssim_cost_explain_init(&explain);
    ssim_class_explain_init(&class_explain);
    if (network_name && strcmp(network_name, "flow") != 0 && strcmp(network_name, "analytic") != 0)
        return ssim_cli_usage_error(VERB, "--network: '%s' is not analytic or flow", network_name);
    config.flow_network = network_name && strcmp(network_name, "flow") == 0;
    config.max_ops = (guint64)limits.max_ops;
    config.max_events = (guint64)limits.max_events;
    config.max_memory = limits.max_memory;
    config.profile = profile;
    config.explain = explain_costs ? &explain : NULL;
    config.class_explain = explain_costs ? &class_explain : NULL;
    SsimPlacement placement = SSIM_PLACEMENT_INIT;
    g_auto(SsimPlaceReport) place_report = {0};
    ssim_place_report_init(&place_report);
    /* The default placement (alpa), or the one --schedule alone implies, then --placement. */
    gboolean schedule_given = ssim_cli_job_has_schedule(&job);
    if (schedule_given)
        placement.kind = ssim_placement_kind_for_schedule(par.schedule);
    if ((rc = ssim_cli_place_parse(VERB, &place, &placement)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_place_comm_repeat(VERB, &place, &config.comm_repeat)) != SSIM_EXIT_OK)
        return rc;
    if (place.commshift_grads && placement.kind != SSIM_PLACEMENT_COMMSHIFT &&
        placement.kind != SSIM_PLACEMENT_AUTO)
        fprintf(stderr,
                "shiftsim simulate: --commshift-grads has no effect under placement %s "
                "(only commshift and auto move gradients)\n",
                ssim_placement_kind_name(placement.kind));
    g_strlcpy(par.placement, ssim_placement_kind_name(placement.kind), sizeof par.placement);
    if (!schedule_given)
        g_strlcpy(par.schedule, ssim_placement_kind_schedule(placement.kind), sizeof par.schedule);
    if (!ssim_cli_job_has_bucket(&job))
        par.dp_bucket_bytes = ssim_placement_default_bucket(placement.kind, &par, model->dtype);
    config.placement = &placement;
    config.report = &place_report;
    /* Without an explicit recompute mode, take the cheapest one that fits (none, selective,
     * full), saying so on stderr. */
    if (!ssim_cli_job_has_recompute(&job) && !ignore_memory) {
        SsimMemory peak;
        for (int mode = SSIM_RECOMPUTE_NONE; mode < SSIM_RECOMPUTE_LADDER; mode++) {
            g_autoptr(GError) probe = NULL;
            if (!ssim_parallel_set_recompute(&par, model, (SsimRecompute)mode, &error))
                return ssim_cli_usage_error(VERB, "%s", error->message);
            if (ssim_simulate_memory(&config, &peak, &probe))
                break;
            if (mode == SSIM_RECOMPUTE_NONE &&
                !g_error_matches(probe, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY))
                break; /* not a memory problem: let ssim_simulate() report it */
            if (mode + 1 == SSIM_RECOMPUTE_LADDER)
                break; /* even full recompute does not fit: report that */
            fprintf(stderr,
                    "shiftsim simulate: recompute %s does not fit (%.1f GiB per GPU); "
                    "trying %s\n",
                    ssim_recompute_name((SsimRecompute)mode), (double)peak.total / (1 << 30),
                    ssim_recompute_name((SsimRecompute)(mode + 1)));
        }
    }
    g_autoptr(GArray) uncontended = g_array_new(FALSE, FALSE, sizeof(SsimTime));
    if (config.flow_network && timeline)
        config.uncontended = uncontended;
    SsimResult result;
    g_autoptr(SsimLowered) lowered = NULL;
    g_autoptr(SsimTimeline) tl = NULL;
    gboolean keep = timeline || trace || plot; /* they need the graph and its per-op times */
    if (!ssim_simulate(&config, &result, keep ? &lowered : NULL, keep ? &tl : NULL, &error))
        return ssim_cli_runtime_error(error);
    ssim_cli_warn_extrapolation(VERB, &par, model, cluster);
    if (trace &&
        !ssim_cli_write_trace(trace, trace_format, ssim_lowered_graph(lowered), tl, 0, 0, &error))
        return ssim_cli_runtime_error(error);
    if (timeline) {
        const SsimTime *unc =
            config.uncontended ? (const SsimTime *)(void *)uncontended->data : NULL;
        g_autoptr(GString) csv =
            ssim_report_timeline_csv_uncontended(ssim_lowered_graph(lowered), tl, unc);
        if (!ssim_cli_emit(timeline, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    if (plot) {
        g_autofree char *title = g_strdup_printf(
            "%s on %s, dp %u x tp %u x pp %u, placement %s (schedule %s): %.3f ms", model->name,
            cluster->name, config.par->dp, config.par->tp, config.par->pp, result.placement,
            ssim_schedule_kind_name(result.schedule), (double)result.step_time / 1e6);
        SsimPlotStatus st;
        if (!ssim_plot_gantt(ssim_lowered_graph(lowered), tl, plot, &view, title, &st, &error))
            return ssim_cli_runtime_error(error);
        if (st == SSIM_PLOT_NO_GNUPLOT)
            fprintf(stderr,
                    "shiftsim simulate: gnuplot not found; wrote %s's .dat and .gp "
                    "(render with: gnuplot FILE.gp)\n",
                    plot);
    }
    if (profile_path) {
        g_autofree char *what = g_strdup_printf("the step simulated with profile %s", profile_path);
        g_autofree char *warning =
            ssim_mfu_implausible(result.mfu, ssim_time_to_seconds(result.step_time), what);
        if (warning)
            fprintf(stderr, "shiftsim simulate: warning: %s\n", warning);
    }
    g_autoptr(GString) out = ssim_result_format(&result, &config, format);
    if (explain_costs) {
        ssim_explain_append_costs(out, format, profile_path, &explain, &class_explain);
        ssim_explain_append_step_costs(out, format, &result,
                                       ssim_host_microbatch_floor(cluster, config.par));
    }
    if (explain_costs && config.flow_network && profile_path) {
        g_autoptr(SsimNetCal) cal = ssim_netcal_new(profile, cluster, model->dtype);
        ssim_explain_append_netcal(out, format, profile_path, cal);
    }
    /* With --timeline -, stdout carries the timeline alone: the summary goes to stderr. */
    if (timeline && strcmp(timeline, "-") == 0) {
        fputs(out->str, stderr);
        return SSIM_EXIT_OK;
    }
    if (!ssim_cli_emit(NULL, out, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
