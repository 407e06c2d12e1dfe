/*
 * `shiftsim replay [GRAPH]`: runs an op-graph file and prints its timeline summary.
 *
 * With no GRAPH it replays the bundled example traces/examples/tp-pipeline.graph.  Costs for
 * ops without dur= come from the simple analytical model, whose parameters are options here.
 */
#include "src/app/verbs.h"

#include <shiftsim/budget.h>
#include <shiftsim/chakra.h>
#include <shiftsim/data.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/plot.h>
#include <shiftsim/trace.h>
#include <shiftsim/report.h>
#include <shiftsim/runtime.h>

#include <stdio.h>

#define DEFAULT_GRAPH "traces/examples/tp-pipeline.graph"

int ssim_verb_replay(int argc, char **argv)
{
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *timeline = NULL, *until = NULL;
    g_autofree char *link_bw = NULL, *alpha = NULL, *trace = NULL, *plot = NULL;
    g_autofree char *chakra = NULL, *comm_group = NULL;
    gint plot_ranks = 8;
    /* --max-events and --max-memory: a graph file has no lowering to bound */
    g_auto(SsimCliLimits) budget = {0};
    double tflops = 500, hbm = 3000;
    GOptionEntry entries[] = {
        {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &timeline,
         "Write one CSV row per op (id,name,rank,stream,kind,class,bytes,flops,ready_ns,start_ns,"
         "end_ns) to FILE ('-' for stdout)",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
         "Write a Chrome/Perfetto trace (JSON; open in ui.perfetto.dev): a process per rank, a "
         "thread per stream, arrows for transfers",
         "FILE"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write a Gantt chart of the streams to FILE (.png or .svg); FILE.dat and FILE.gp are "
         "always written, rendering needs gnuplot",
         "FILE"},
        {"plot-ranks", 0, 0, G_OPTION_ARG_INT, &plot_ranks,
         "Ranks shown in --plot and --trace (0 = all; default 8 for the plot)", "N"},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "Summary format: table (default), csv or json"),
        {"until", 0, 0, G_OPTION_ARG_STRING, &until,
         "Stop at simulated time T (e.g. 10ms); a run that has not finished by then fails", "T"},
        ssim_cli_limits_entry(&budget, SSIM_OPT_MAX_EVENTS,
                              "Stop after N events (0 = no budget); a run cut short fails"),
        ssim_cli_limits_entry(&budget, SSIM_OPT_MAX_MEMORY,
                              "Fail before replaying when the process's resident memory, with the "
                              "graph loaded and the replay's state allocated, exceeds BYTES "
                              "(default 75% of this machine's memory)"),
        {"link-bw", 0, 0, G_OPTION_ARG_STRING, &link_bw,
         "Bandwidth of a communication link for ops without dur=, in bytes/s (default 100e9)",
         "BPS"},
        {"alpha", 0, 0, G_OPTION_ARG_STRING, &alpha,
         "Per-step latency of a collective or transfer (default 5us)", "T"},
        {"tflops", 0, 0, G_OPTION_ARG_DOUBLE, &tflops,
         "Compute throughput for ops with flops= and no dur=, in TFLOP/s (default 500)", "X"},
        {"hbm-gbps", 0, 0, G_OPTION_ARG_DOUBLE, &hbm,
         "Memory bandwidth for ops with bytes= and no dur=, in GB/s (default 3000)", "X"},
        {"chakra", 0, 0, G_OPTION_ARG_FILENAME, &chakra,
         "Replay the Chakra execution traces PREFIX.0.et, PREFIX.1.et, ... (ASTRA-sim's input) "
         "instead of a graph file",
         "PREFIX"},
        {"comm-group", 0, 0, G_OPTION_ARG_FILENAME, &comm_group,
         "Chakra comm-group JSON (default: PREFIX.json, else the only *.json beside the traces)",
         "FILE"},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH] - replay an op graph");
    g_option_context_set_summary(
        ctx, "Runs GRAPH (a '# shiftsim-graph v1' file, see README.md) on the event engine with\n"
             "CUDA-stream semantics and prints the makespan, each stream's busy time and each\n"
             "rank's overlap.  Without GRAPH it replays the bundled " DEFAULT_GRAPH ".");
    g_option_context_set_description(
        ctx, "Exit status: 0 success; 1 bad graph, deadlock or limit reached; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, "replay"))
        return SSIM_EXIT_USAGE;
    if (argc > 2)
        return ssim_cli_usage_error("replay", "expected at most one GRAPH, got %d", argc - 1);

    SsimFormat format;
    int rc = ssim_cli_output_format("replay", &output, &format);
    if (rc != SSIM_EXIT_OK)
        return rc;
    SsimSimpleCost cost;
    ssim_simple_cost_init(&cost);
    SsimRunLimits limits = SSIM_RUN_LIMITS_NONE;
    g_autoptr(GError) error = NULL;
    if (until && !ssim_parse_duration(until, &limits.until, &error))
        return ssim_cli_usage_error("replay", "--until: %s", error->message);
    if (alpha && !ssim_parse_duration(alpha, &cost.alpha, &error))
        return ssim_cli_usage_error("replay", "--alpha: %s", error->message);
    if (link_bw) {
        char *end;
        cost.link_bw = g_ascii_strtod(link_bw, &end);
        if (*end != '\0' || !(cost.link_bw > 0) || cost.link_bw > 1e15 || link_bw[0] == '\0')
            return ssim_cli_usage_error("replay",
                                        "--link-bw: '%s' is not a bandwidth in "
                                        "bytes/s",
                                        link_bw);
    }
    if (plot_ranks < 0)
        return ssim_cli_usage_error("replay", "--plot-ranks: must not be negative");
    if ((rc = ssim_cli_check_limits("replay", &budget)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_check_output(timeline)) || (rc = ssim_cli_check_output(trace)) ||
        (rc = ssim_cli_check_plot(plot)))
        return rc;
    /* Finite as well as positive: an infinite rate made every op free (a makespan of 0). */
    if (!(tflops > 0) || !(tflops <= 1e9))
        return ssim_cli_usage_error("replay", "--tflops: %g is not a rate in (0, 1e9] TFLOP/s",
                                    tflops);
    if (!(hbm > 0) || !(hbm <= 1e9))
        return ssim_cli_usage_error("replay", "--hbm-gbps: %g is not a rate in (0, 1e9] GB/s", hbm);
    limits.max_events = (guint64)budget.max_events;
    cost.flops_per_s = tflops * 1e12;
    cost.mem_bw = hbm * 1e9;

    g_autofree char *path = NULL;
    g_autoptr(SsimGraph) graph = NULL;
    if (chakra) {
        if (argc > 1)
            return ssim_cli_usage_error("replay", "--chakra and a GRAPH file exclude each other");
        SsimChakraStats stats;
        ssim_chakra_stats_init(&stats);
        graph = ssim_chakra_load(chakra, comm_group, NULL, &stats, &error);
        if (graph) {
            g_autoptr(GString) report = ssim_chakra_stats_format(&stats);
            fputs(report->str, stderr);
        }
        ssim_chakra_stats_clear(&stats);
        if (graph == NULL)
            return ssim_cli_runtime_error(error);
        path = g_strdup(chakra);
    } else if (comm_group) {
        return ssim_cli_usage_error("replay", "--comm-group needs --chakra");
    } else if (argc == 2) {
        path = g_strdup(argv[1]);
    } else {
        path = ssim_data_find(DEFAULT_GRAPH);
        if (path == NULL) {
            fprintf(stderr,
                    "shiftsim: the bundled %s was not found (set SHIFTSIM_DATA to the "
                    "directory holding traces/)\n",
                    DEFAULT_GRAPH);
            return SSIM_EXIT_RUNTIME;
        }
    }
    if (graph == NULL)
        graph = ssim_graphfile_load(path, &error);
    if (graph == NULL)
        return ssim_cli_runtime_error(error);

    SsimCostModel model = ssim_simple_cost_model(&cost);
    SsimRunConfig run = SSIM_RUN_CONFIG_INIT;
    run.cost = &model;
    run.limits = limits;
    run.max_memory = budget.max_memory ? budget.max_memory : ssim_budget_memory_default();
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(graph, &run, &error);
    if (t == NULL) {
        g_prefix_error(&error, "%s: ", path);
        return ssim_cli_runtime_error(error);
    }
    if (timeline) {
        g_autoptr(GString) csv = ssim_report_timeline_csv(graph, t);
        if (!ssim_cli_emit(timeline, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    if (trace) {
        g_autoptr(GString) json = ssim_trace_json(graph, t, 0);
        if (!ssim_cli_emit(trace, json, &error))
            return ssim_cli_runtime_error(error);
    }
    if (plot) {
        SsimPlotStatus st;
        if (!ssim_plot_gantt(graph, t, plot, (guint)plot_ranks, path, &st, &error))
            return ssim_cli_runtime_error(error);
        if (st == SSIM_PLOT_NO_GNUPLOT)
            fprintf(stderr,
                    "shiftsim: notice: gnuplot is not installed; wrote the plot's data "
                    "and script next to %s (render with `gnuplot FILE.gp`)\n",
                    plot);
    }
    g_autoptr(GString) summary = ssim_report_replay(graph, t, format, path);
    if (!ssim_cli_emit(NULL, summary, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
