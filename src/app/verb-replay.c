/*
 * `shiftsim replay [GRAPH]`: runs an op-graph file or a Chakra trace set and prints its timeline
 * summary.
 *
 * With no GRAPH it replays the bundled example traces/examples/tp-pipeline.graph.  Costs for
 * ops without a duration come from the simple analytical model, whose parameters are options
 * here, or, with --cluster (or --network, --profile), from a described cluster as `simulate`
 * prices them: graph rank r is GPU r (node r / gpus_per_node), communication through the
 * analytic forms or the flow-level network, a measured profile first (include/shiftsim/replay.h).
 *
 * `--semantics astra` replays a Chakra trace set under ASTRA-sim's rules instead
 * (include/shiftsim/astra.h), on the machine --astra-network and --astra-system describe.
 *
 * A Chakra load interns op names only when something shows them (--timeline, --trace, --plot);
 * when a run without them fails, the trace is loaded again with names so that the message names
 * the ops (the failure is the same: names never change a replay).
 */
#include "src/app/tracefile.h"
#include "src/app/verbs.h"

#include <shiftsim/astra.h>
#include <shiftsim/budget.h>
#include <shiftsim/chakra.h>
#include <shiftsim/data.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/plot.h>
#include <shiftsim/replay.h>
#include <shiftsim/report.h>
#include <shiftsim/runtime.h>
#include <shiftsim/trace.h>

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERB          "replay"
#define DEFAULT_GRAPH "traces/examples/tp-pipeline.graph"

/* A numeric option's value: a number in (0, max], or [0, max] with zero_ok (max finite: an
 * infinite rate makes ops free). */
static gboolean parse_number(const char *text, gboolean zero_ok, double max, double *out)
{
    char *end;
    double v = g_ascii_strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || !(zero_ok ? v >= 0 : v > 0) || !(v <= max))
        return FALSE;
    *out = v;
    return TRUE;
}

/* How the graph is priced: the simple model, or a cluster (replay.h). */
typedef struct {
    const SsimCostModel *simple;
    const SsimReplayConfig *cluster; /* NULL: the simple model */
    SsimRunLimits limits;
    guint64 max_memory;           /* SsimRunConfig.max_memory */
    const SsimAstraConfig *astra; /* --semantics astra: ASTRA-sim's rules, or NULL */
    const guint64 *node_ids;      /* with astra: each op's Chakra node id */
    const SsimCollAttrs *colls;   /* with astra: what each collective's node says, or NULL */
    SsimAstraStats astra_stats;
} Pricing;

static SsimTimeline *run_graph(const SsimGraph *graph, Pricing *p, SsimReplayNet *net,
                               GError **error)
{
    if (p->astra)
        return ssim_astra_replay(graph, p->node_ids, p->colls, p->astra, &p->limits,
                                 &p->astra_stats, error);
    if (p->cluster)
        return ssim_replay_on_cluster(graph, p->cluster, net, error);
    SsimRunConfig run = SSIM_RUN_CONFIG_INIT;
    run.cost = p->simple;
    run.limits = p->limits;
    run.max_memory = p->max_memory;
    return ssim_runtime_run_config(graph, &run, error);
}

/* How a Chakra load treats dependencies its trace cannot keep (--dangling-deps, --ctrl-deps),
 * which streams it puts each rank's communication on (--comm-streams) and in what order
 * (--issue-order). */
typedef struct {
    gboolean drop_dangling, ignore_ctrl;
    gboolean per_peer, per_group; /* --comm-streams */
    gboolean causal;              /* --issue-order causal */
    /* --semantics astra: read the nodes as ASTRA-sim does (SsimChakraOptions.astra_rules) */
    gboolean astra, astra_custom, roofline, track_mem, replay_only;
} LoadRules;

/* What a --semantics astra replay reads beside the graph: each op's Chakra node id, and what
 * each collective's node says (SsimChakraStats.node_ids and .colls; colls NULL when the graph
 * has no op). */
typedef struct {
    GArray *node_ids, *colls;
} AstraNodes;

static void astra_nodes_clear(AstraNodes *a)
{
    g_clear_pointer(&a->node_ids, g_array_unref);
    g_clear_pointer(&a->colls, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(AstraNodes, astra_nodes_clear)

/* `nodes`, when not NULL, receives what a --semantics astra replay reads beside the graph. */
static SsimGraph *load_chakra(const char *prefix, const char *comm_group, guint jobs,
                              const LoadRules *rules, gboolean names, gboolean report,
                              AstraNodes *nodes, GError **error)
{
    SsimChakraOptions opts;
    ssim_chakra_options_init(&opts);
    opts.drop_dangling = rules->drop_dangling;
    opts.ignore_ctrl_deps = rules->ignore_ctrl;
    opts.stream_per_peer = rules->per_peer;
    opts.stream_per_group = rules->per_group;
    opts.causal_order = rules->causal;
    opts.keep_names = names;
    opts.n_threads = jobs;
    opts.keep_node_ids = nodes != NULL;
    opts.astra_rules = rules->astra;
    opts.astra_custom = rules->astra_custom;
    opts.astra_roofline = rules->roofline;
    opts.astra_track_mem = rules->track_mem;
    opts.astra_replay_only = rules->replay_only;
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    SsimGraph *graph = ssim_chakra_load(prefix, comm_group, &opts, &stats, error);
    if (graph && report) {
        g_autoptr(GString) text = ssim_chakra_stats_format(&stats);
        fputs(text->str, stderr);
    }
    if (graph && nodes) {
        astra_nodes_clear(nodes);
        nodes->node_ids = stats.node_ids ? g_steal_pointer(&stats.node_ids)
                                         : g_array_new(FALSE, FALSE, sizeof(guint64));
        nodes->colls = g_steal_pointer(&stats.colls);
    }
    ssim_chakra_stats_clear(&stats);
    return graph;
}

/* A trace set of the system file's custom implementations, with its node ids; the sets are kept
 * in a table by the prefix as given, one a prefix however many entries name it. */
typedef struct {
    SsimGraph *graph;
    AstraNodes nodes;
} LoadedSet;

static void loaded_set_free(gpointer p)
{
    LoadedSet *l = p;
    g_clear_pointer(&l->graph, ssim_graph_free);
    astra_nodes_clear(&l->nodes);
    g_free(l);
}

/* The set at `given` (a prefix as the system or per-node file gives it), loaded on first use:
 * read as ASTRA-sim reads it, from the current directory, else from the bundled data. */
static gboolean custom_set(GHashTable *sets, const char *given, guint jobs, SsimAstraCustom *out,
                           GError **error)
{
    LoadedSet *l = g_hash_table_lookup(sets, given);
    if (!l) {
        g_autofree char *prefix = g_strdup(given);
        ssim_cli_resolve_input(VERB, &prefix, ".0.et");
        LoadRules rules = {.astra = TRUE, .astra_custom = TRUE};
        l = g_new0(LoadedSet, 1);
        l->graph = load_chakra(prefix, NULL, jobs, &rules, FALSE, FALSE, &l->nodes, error);
        if (!l->graph) {
            loaded_set_free(l);
            return FALSE;
        }
        g_hash_table_insert(sets, g_strdup(given), l);
    }
    *out = (SsimAstraCustom){l->graph, (const guint64 *)l->nodes.node_ids->data};
    return TRUE;
}

/* Loads the trace sets of the system file's custom implementations into `cfg`, and reads its
 * per-node-custom-implementation file (found as a set is) and loads the sets that names. */
static gboolean load_custom(SsimAstraConfig *cfg, const char *system, guint jobs, GHashTable *sets,
                            GError **error)
{
    if (cfg->replay_only) /* replay-only runs no collective */
        return TRUE;
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        if (cfg->custom_path[t] &&
            !custom_set(sets, cfg->custom_path[t], jobs, &cfg->custom[t], error)) {
            g_prefix_error(error, "%s: %s: ", system, ssim_astra_custom_key((SsimAstraColl)t));
            return FALSE;
        }
    if (!cfg->per_node_path)
        return TRUE;
    g_autofree char *yaml = g_strdup(cfg->per_node_path);
    ssim_cli_resolve_input(VERB, &yaml, NULL);
    if (!ssim_astra_config_read_per_node(cfg, yaml, error)) {
        g_prefix_error(error, "%s: per-node-custom-implementation: ", system);
        return FALSE;
    }
    for (guint i = 0; i < cfg->n_per_node; i++)
        if (!custom_set(sets, cfg->per_node[i].path, jobs, &cfg->per_node[i].set, error)) {
            g_prefix_error(error, "%s: node %d: ", yaml, cfg->per_node[i].node);
            return FALSE;
        }
    return TRUE;
}

/* Sizes `cluster` for `ranks` GPUs when it has fewer and --nodes did not say how many. */
static int fit_cluster(SsimCluster *cluster, guint32 ranks, gboolean nodes_given)
{
    if (ranks <= ssim_cluster_n_gpus(cluster) || nodes_given)
        return SSIM_EXIT_OK;
    guint nodes = (ranks + cluster->gpus_per_node - 1) / cluster->gpus_per_node;
    g_autoptr(GError) error = NULL;
    if (!ssim_cluster_check_nodes(cluster, nodes, &error))
        return ssim_cli_usage_error(VERB, "the graph's %u ranks: %s", ranks, error->message);
    fprintf(stderr, "shiftsim replay: notice: %s sized to %u nodes (%u GPUs) for the %u ranks\n",
            cluster->name, nodes, nodes * cluster->gpus_per_node, ranks);
    ssim_cluster_set_nodes(cluster, nodes);
    return SSIM_EXIT_OK;
}

int ssim_verb_replay(int argc, char **argv)
{
    g_auto(SsimCliOutput) output = {0};
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_autofree char *timeline = NULL, *until = NULL;
    g_autofree char *link_bw = NULL, *alpha = NULL, *trace = NULL, *plot = NULL;
    g_autofree char *chakra = NULL, *comm_group = NULL, *network = NULL, *profile_path = NULL;
    g_autofree char *trace_format = NULL, *plot_window = NULL, *semantics = NULL;
    g_autofree char *astra_congestion = NULL, *astra_injection = NULL;
    gboolean astra_rendezvous = FALSE;
    gint astra_queues = -1; /* --astra-num-queues-per-dim: -1 when not given */
    g_autofree char *dangling = NULL, *ctrl_deps = NULL, *comm_streams = NULL;
    g_autofree char *issue_order = NULL;
    g_autofree char *astra_network = NULL, *astra_system = NULL, *astra_memory = NULL;
    gint plot_ranks = 8, jobs = 0;
    /* --max-events and --max-memory: a graph file has no lowering to bound */
    g_auto(SsimCliLimits) budget = {0};
    /* The simple model's rates: NULL when not given (its defaults; given, they select it) */
    g_autofree char *tflops_text = NULL, *hbm_text = NULL;
    GOptionEntry entries[] = {
        {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &timeline,
         "Write one CSV row per op (id, name, rank, stream, kind, class, bytes, flops, "
         "ready_ns, start_ns, end_ns) to FILE ('-' for stdout)",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
         "Write a Perfetto trace (open in ui.perfetto.dev): a process per rank, a thread per "
         "stream, arrows for transfers; Perfetto's protobuf format for FILE.pftrace (exact "
         "nanoseconds, smaller), JSON otherwise ('-' for stdout)",
         "FILE"},
        {"trace-format", 0, 0, G_OPTION_ARG_STRING, &trace_format,
         "Force the --trace format: proto or json (default: by FILE's extension)", "FORMAT"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write a Gantt chart of the streams to FILE (.png or .svg); FILE.dat and FILE.gp are "
         "always written, rendering needs gnuplot",
         "FILE"},
        {"plot-ranks", 0, 0, G_OPTION_ARG_INT, &plot_ranks,
         "Ranks shown in --plot and --trace (0 = all; default 8 for the plot)", "N"},
        {"plot-window", 0, 0, G_OPTION_ARG_STRING, &plot_window,
         "Draw only START:END (ms) of the timeline in --plot, e.g. 100:200 or 400:", "START:END"},
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
        {"tflops", 0, 0, G_OPTION_ARG_STRING, &tflops_text,
         "Compute throughput for ops with flops= and no dur=, in TFLOP/s (default 500)", "X"},
        {"hbm-gbps", 0, 0, G_OPTION_ARG_STRING, &hbm_text,
         "Memory bandwidth for ops with bytes= and no dur=, in GB/s (default 3000)", "X"},
        ssim_cli_job_entry(&job, SSIM_OPT_CLUSTER,
                           "Price ops on this cluster (a bundled name or an INI path) as simulate "
                           "does, instead of the simple model: rank r is GPU r, node r / GPUs "
                           "per node (default with --network or --profile: the embedded DGX "
                           "H200, sized to the ranks)"),
        ssim_cli_job_entry(&job, SSIM_OPT_NODES,
                           "Nodes of the cluster (default: as many as the ranks need)"),
        {"network", 0, 0, G_OPTION_ARG_STRING, &network,
         "With a cluster: analytic (closed forms, default) or flow (the flow-level network: "
         "links shared max-min fairly, so concurrent transfers slow each other)",
         "MODEL"},
        {"profile", 0, 0, G_OPTION_ARG_FILENAME, &profile_path,
         "With a cluster: a measured profile (a # shiftsim-profile v1 CSV or a directory) that "
         "prices what it has measured; with --network flow its collectives calibrate the network",
         "PATH"},
        {"chakra", 0, 0, G_OPTION_ARG_FILENAME, &chakra,
         "Replay the Chakra execution traces PREFIX.0.et, PREFIX.1.et, ... (ASTRA-sim's input) "
         "instead of a graph file",
         "PREFIX"},
        {"comm-group", 0, 0, G_OPTION_ARG_FILENAME, &comm_group,
         "Chakra comm-group JSON (default: PREFIX.json, else the only *.json beside the traces)",
         "FILE"},
        {"dangling-deps", 0, 0, G_OPTION_ARG_STRING, &dangling,
         "With --chakra: a dependency on a node its trace does not have is an error (error, the "
         "default) or is taken as met (drop: PyTorch's converted traces name nodes the "
         "converter left out), counted on stderr",
         "RULE"},
        {"ctrl-deps", 0, 0, G_OPTION_ARG_STRING, &ctrl_deps,
         "With --chakra: replay control dependencies with the data dependencies (keep, the "
         "default, as ASTRA-sim) or data dependencies only (ignore: some converted PyTorch "
         "traces make an operator wait for the kernel it launches, a cycle), counted on stderr",
         "RULE"},
        {"comm-streams", 0, 0, G_OPTION_ARG_STRING, &comm_streams,
         "With --chakra: the CUDA streams communication runs on, per rank: peer (default: one "
         "for collectives, and a send and a receive stream per peer, as PyTorch runs each pair's "
         "point-to-point on a communicator of its own), group (also one collective stream per "
         "process group, as each group's communicator has its own) or rank (one send, one "
         "receive and one collective stream: a pipeline whose sends to both neighbours share a "
         "stream can deadlock)",
         "LAYOUT"},
        {"issue-order", 0, 0, G_OPTION_ARG_STRING, &issue_order,
         "With --chakra: the order each stream issues its ops in: causal (default: one order "
         "over all ranks, ops that need fewer pipeline transfers first, each trace's own order "
         "otherwise; a generator's node order is not a schedule) or trace (each trace's "
         "topological order, smallest node id first, as a framework's program order)",
         "ORDER"},
        {"semantics", 0, 0, G_OPTION_ARG_STRING, &semantics,
         "With --chakra: shiftsim (default: each rank's ops on CUDA-like streams, collectives "
         "priced whole) or astra (ASTRA-sim's rules: one communication slot per rank, the ready "
         "node with the smallest id first, collectives in chunks over its analytical network; "
         "docs/chakra.md)",
         "RULES"},
        {"astra-network", 0, 0, G_OPTION_ARG_FILENAME, &astra_network,
         "ASTRA-sim network YAML for --semantics astra (implies it; default: one Switch of all "
         "ranks, 400 GB/s, 936.25 ns)",
         "FILE"},
        {"astra-system", 0, 0, G_OPTION_ARG_FILENAME, &astra_system,
         "ASTRA-sim system JSON for --semantics astra (implies it; default: its "
         "Ring_4chunks.json with the roofline on at 900 TFLOP/s and 1600 GB/s); the trace sets "
         "of its custom collectives (per type, and per node through "
         "per-node-custom-implementation's YAML) are read from the current directory, as "
         "ASTRA-sim reads them, else from the bundled data",
         "FILE"},
        {"astra-memory", 0, 0, G_OPTION_ARG_FILENAME, &astra_memory,
         "ASTRA-sim remote memory JSON for --semantics astra (implies it; default: "
         "NO_MEMORY_EXPANSION, its example, under which a memory node is an error): how "
         "MEM_LOAD and MEM_STORE nodes are served",
         "FILE"},
        {"astra-congestion", 0, 0, G_OPTION_ARG_STRING, &astra_congestion,
         "ASTRA-sim's analytical network for --semantics astra (implies it): unaware (default: "
         "a message takes its latency and bandwidth time whatever else is in flight, as "
         "AstraSim_Analytical_Congestion_Unaware) or aware (messages queue for each link of "
         "their route, as AstraSim_Analytical_Congestion_Aware; one dimension)",
         "MODEL"},
        {"astra-injection-scale", 0, 0, G_OPTION_ARG_STRING, &astra_injection,
         "ASTRA-sim's --injection-scale for --semantics astra (implies it): the system file's "
         "endpoint-delay is multiplied by X, truncated to whole ns (default 1)",
         "X"},
        {"astra-rendezvous-protocol", 0, 0, G_OPTION_ARG_NONE, &astra_rendezvous,
         "ASTRA-sim's --rendezvous-protocol for --semantics astra (implies it): every message, "
         "collective steps included, waits for an 8192-byte handshake from its receiver",
         NULL},
        {"astra-num-queues-per-dim", 0, 0, G_OPTION_ARG_INT, &astra_queues,
         "ASTRA-sim's --num-queues-per-dim for --semantics astra (implies it): the queues of each "
         "dimension, which chunks take in turn, each running active-chunks-per-dimension / N of "
         "them (rounded up), the second half's rings the other way round (default 1)",
         "N"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Threads decoding Chakra traces and encoding --trace (default: all cores; the result "
         "is the same for any)",
         "N"},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("[GRAPH] - replay an op graph");
    g_option_context_set_summary(
        ctx, "Runs GRAPH (a '# shiftsim-graph v1' file, see README.md) on the event engine with\n"
             "CUDA-stream semantics and prints the makespan, each stream's busy time and each\n"
             "rank's overlap.  Without GRAPH it replays the bundled " DEFAULT_GRAPH ".");
    g_option_context_set_description(
        ctx, "Exit status: 0 success; 1 bad graph, deadlock or limit reached; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB))
        return SSIM_EXIT_USAGE;
    if (argc > 2)
        return ssim_cli_usage_error(VERB, "expected at most one GRAPH, got %d", argc - 1);
    ssim_cli_job_resolve(VERB, &job);
    g_autofree char *graph_path = argc == 2 ? g_strdup(argv[1]) : NULL;
    ssim_cli_resolve_input(VERB, &graph_path, NULL);
    ssim_cli_resolve_input(VERB, &chakra, ".0.et");
    ssim_cli_resolve_input(VERB, &comm_group, NULL);
    ssim_cli_resolve_input(VERB, &astra_network, NULL);
    ssim_cli_resolve_input(VERB, &astra_system, NULL);
    ssim_cli_resolve_input(VERB, &astra_memory, NULL);
    ssim_cli_resolve_input(VERB, &profile_path, NULL);

    SsimFormat format;
    int rc = ssim_cli_output_format(VERB, &output, &format);
    if (rc != SSIM_EXIT_OK)
        return rc;
    SsimSimpleCost cost;
    ssim_simple_cost_init(&cost);
    SsimRunLimits limits = SSIM_RUN_LIMITS_NONE;
    g_autoptr(GError) error = NULL;
    if (until && !ssim_parse_duration(until, &limits.until, &error))
        return ssim_cli_usage_error(VERB, "--until: %s", error->message);
    if (alpha && !ssim_parse_duration(alpha, &cost.alpha, &error))
        return ssim_cli_usage_error(VERB, "--alpha: %s", error->message);
    if (link_bw && !parse_number(link_bw, FALSE, 1e15, &cost.link_bw))
        return ssim_cli_usage_error(VERB, "--link-bw: '%s' is not a bandwidth in bytes/s", link_bw);
    if (plot_ranks < 0)
        return ssim_cli_usage_error(VERB, "--plot-ranks: must not be negative");
    SsimGanttView view = {.max_ranks = (guint)plot_ranks};
    if (plot_window && !ssim_gantt_window_parse(plot_window, &view, &error))
        return ssim_cli_usage_error(VERB, "--plot-window: %s", error->message);
    if (jobs < 0)
        return ssim_cli_usage_error(VERB, "--jobs: must not be negative");
    if (timeline && trace && strcmp(timeline, "-") == 0 && strcmp(trace, "-") == 0)
        return ssim_cli_usage_error(VERB, "--timeline - and --trace -: only one can be stdout");
    if ((rc = ssim_cli_check_limits(VERB, &budget)) != SSIM_EXIT_OK ||
        (rc = ssim_cli_check_output(timeline)) || (rc = ssim_cli_check_output(trace)) ||
        (rc = ssim_cli_check_plot(plot)))
        return rc;
    gboolean simple_given = link_bw || alpha || tflops_text || hbm_text;
    double tflops = 500, hbm = 3000;
    /* Finite as well as positive: an infinite rate made every op free (a makespan of 0). */
    if (tflops_text && !parse_number(tflops_text, FALSE, 1e9, &tflops))
        return ssim_cli_usage_error(VERB, "--tflops: %s is not a rate in (0, 1e9] TFLOP/s",
                                    tflops_text);
    if (hbm_text && !parse_number(hbm_text, FALSE, 1e9, &hbm))
        return ssim_cli_usage_error(VERB, "--hbm-gbps: %s is not a rate in (0, 1e9] GB/s",
                                    hbm_text);
    limits.max_events = (guint64)budget.max_events;
    cost.flops_per_s = tflops * 1e12;
    cost.mem_bw = hbm * 1e9;
    if (trace_format && strcmp(trace_format, "proto") != 0 && strcmp(trace_format, "json") != 0)
        return ssim_cli_usage_error(VERB, "--trace-format: '%s' is not proto or json",
                                    trace_format);
    if (network && strcmp(network, "flow") != 0 && strcmp(network, "analytic") != 0)
        return ssim_cli_usage_error(VERB, "--network: '%s' is not analytic or flow", network);
    gboolean on_cluster = job.cluster || job.nodes != SSIM_CLI_UNSET || network || profile_path;
    if (on_cluster && simple_given)
        return ssim_cli_usage_error(VERB, "--link-bw, --alpha, --tflops and --hbm-gbps price "
                                          "the simple model; a cluster (--cluster, --nodes, "
                                          "--network, --profile) prices ops itself");
    if ((rc = ssim_cli_job_check_nodes(VERB, &job)) != SSIM_EXIT_OK)
        return rc;
    if (semantics && strcmp(semantics, "astra") != 0 && strcmp(semantics, "shiftsim") != 0)
        return ssim_cli_usage_error(VERB, "--semantics: '%s' is not shiftsim or astra", semantics);
    gboolean astra_machine = astra_network || astra_system || astra_memory || astra_congestion ||
                             astra_injection || astra_rendezvous || astra_queues != -1;
    if (astra_machine && semantics && strcmp(semantics, "shiftsim") == 0)
        return ssim_cli_usage_error(VERB, "--astra-network, --astra-system, --astra-memory, "
                                          "--astra-congestion, --astra-injection-scale, "
                                          "--astra-rendezvous-protocol and "
                                          "--astra-num-queues-per-dim describe the machine of "
                                          "--semantics astra");
    if (astra_queues != -1 && (astra_queues < 1 || astra_queues > 1000))
        return ssim_cli_usage_error(VERB, "--astra-num-queues-per-dim: expected 1 to 1000, got %d",
                                    astra_queues);
    if (astra_congestion && strcmp(astra_congestion, "aware") != 0 &&
        strcmp(astra_congestion, "unaware") != 0)
        return ssim_cli_usage_error(VERB, "--astra-congestion: '%s' is not unaware or aware",
                                    astra_congestion);
    double injection_scale = 1;
    if (astra_injection && !parse_number(astra_injection, TRUE, G_MAXDOUBLE, &injection_scale))
        return ssim_cli_usage_error(VERB, "--astra-injection-scale: '%s' is not a number >= 0",
                                    astra_injection);
    gboolean astra = (semantics && strcmp(semantics, "astra") == 0) || astra_machine;
    if (dangling && strcmp(dangling, "error") != 0 && strcmp(dangling, "drop") != 0)
        return ssim_cli_usage_error(VERB, "--dangling-deps: '%s' is not error or drop", dangling);
    if (ctrl_deps && strcmp(ctrl_deps, "keep") != 0 && strcmp(ctrl_deps, "ignore") != 0)
        return ssim_cli_usage_error(VERB, "--ctrl-deps: '%s' is not keep or ignore", ctrl_deps);
    if (comm_streams && strcmp(comm_streams, "peer") != 0 && strcmp(comm_streams, "group") != 0 &&
        strcmp(comm_streams, "rank") != 0)
        return ssim_cli_usage_error(VERB, "--comm-streams: '%s' is not peer, group or rank",
                                    comm_streams);
    if (issue_order && strcmp(issue_order, "trace") != 0 && strcmp(issue_order, "causal") != 0)
        return ssim_cli_usage_error(VERB, "--issue-order: '%s' is not trace or causal",
                                    issue_order);
    if ((comm_streams || issue_order) && !chakra)
        return ssim_cli_usage_error(VERB, "--comm-streams and --issue-order need --chakra");
    LoadRules rules = {.per_peer = !comm_streams || strcmp(comm_streams, "rank") != 0,
                       .per_group = comm_streams && strcmp(comm_streams, "group") == 0,
                       .causal = !issue_order || strcmp(issue_order, "causal") == 0,
                       .drop_dangling = dangling && strcmp(dangling, "drop") == 0,
                       .ignore_ctrl = ctrl_deps && strcmp(ctrl_deps, "ignore") == 0};
    if ((dangling || ctrl_deps) && !chakra)
        return ssim_cli_usage_error(VERB, "--dangling-deps and --ctrl-deps need --chakra");
    if (comm_streams && astra)
        return ssim_cli_usage_error(VERB, "--comm-streams lays out CUDA streams, which ASTRA-sim's "
                                          "rules (--semantics astra) do not have");
    if (issue_order && astra)
        return ssim_cli_usage_error(VERB, "--issue-order orders CUDA streams; ASTRA-sim's rules "
                                          "(--semantics astra) issue the ready node with the "
                                          "smallest id");
    if ((rules.drop_dangling || rules.ignore_ctrl) && astra)
        return ssim_cli_usage_error(VERB, "--dangling-deps drop and --ctrl-deps ignore are not "
                                          "ASTRA-sim's rules (--semantics astra)");
    if (astra && !chakra)
        return ssim_cli_usage_error(VERB, "--semantics astra replays a Chakra trace set "
                                          "(--chakra PREFIX)");
    if (astra && (on_cluster || simple_given))
        return ssim_cli_usage_error(VERB, "--semantics astra prices ops by ASTRA-sim's rules on "
                                          "--astra-network and --astra-system; --cluster, "
                                          "--network, --profile, --link-bw, --alpha, --tflops "
                                          "and --hbm-gbps do not apply");
    g_auto(SsimAstraConfig) astra_cfg;
    ssim_astra_config_init(&astra_cfg);
    if (astra_network && !ssim_astra_config_read_network(&astra_cfg, astra_network, &error))
        return ssim_cli_runtime_error(error);
    if (astra_system && !ssim_astra_config_read_system(&astra_cfg, astra_system, &error))
        return ssim_cli_runtime_error(error);
    if (astra_memory && !ssim_astra_config_read_memory(&astra_cfg, astra_memory, &error))
        return ssim_cli_runtime_error(error);
    astra_cfg.congestion_aware = astra_congestion && strcmp(astra_congestion, "aware") == 0;
    astra_cfg.injection_scale = injection_scale;
    astra_cfg.rendezvous = astra_rendezvous;
    if (astra_queues != -1)
        astra_cfg.queues_per_dim = (guint)astra_queues;
    rules.astra = astra;
    rules.roofline = astra_cfg.roofline && !astra_cfg.replay_only; /* read only under rules.astra */
    rules.track_mem = astra_cfg.track_local_mem;
    rules.replay_only = astra_cfg.replay_only;
    g_autoptr(GHashTable) custom =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, loaded_set_free);
    if (!load_custom(&astra_cfg, astra_system, (guint)jobs, custom, &error))
        return ssim_cli_runtime_error(error);
    g_auto(AstraNodes) nodes = {NULL, NULL};

    gboolean names = timeline || trace || plot;
    g_autofree char *path = NULL;
    g_autoptr(SsimGraph) graph = NULL;
    if (chakra) {
        if (argc > 1)
            return ssim_cli_usage_error(VERB, "--chakra and a GRAPH file exclude each other");
        graph = load_chakra(chakra, comm_group, (guint)jobs, &rules, names, TRUE,
                            astra ? &nodes : NULL, &error);
        if (graph == NULL && !names) {
            /* A matching error names ops: load again with their names to say which. */
            g_clear_error(&error);
            graph = load_chakra(chakra, comm_group, (guint)jobs, &rules, names = TRUE, FALSE,
                                astra ? &nodes : NULL, &error);
        }
        if (graph == NULL)
            return ssim_cli_runtime_error(error);
        path = g_strdup(chakra);
    } else if (comm_group) {
        return ssim_cli_usage_error(VERB, "--comm-group needs --chakra");
    } else if (graph_path) {
        path = g_steal_pointer(&graph_path);
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
    Pricing pricing = {.simple = &model,
                       .limits = limits,
                       .max_memory =
                           budget.max_memory ? budget.max_memory : ssim_budget_memory_default()};
    if (astra) {
        pricing.astra = &astra_cfg;
        pricing.node_ids = (const guint64 *)nodes.node_ids->data;
        pricing.colls = nodes.colls ? (const SsimCollAttrs *)nodes.colls->data : NULL;
    }
    g_autoptr(SsimModel) unused_model = NULL;
    g_autoptr(SsimCluster) cluster = NULL;
    g_autoptr(SsimProfile) profile = NULL;
    SsimReplayConfig rconf = SSIM_REPLAY_CONFIG_INIT;
    if (on_cluster) {
        if ((rc = ssim_cli_job_load(VERB, &job, &unused_model, &cluster)) != SSIM_EXIT_OK ||
            (rc = fit_cluster(cluster, ssim_graph_n_ranks(graph), job.nodes != SSIM_CLI_UNSET)))
            return rc;
        if (profile_path && !(profile = ssim_profile_load(profile_path, &error)))
            return ssim_cli_runtime_error(error);
        rconf.cluster = cluster;
        rconf.profile = profile;
        rconf.flow_network = network && strcmp(network, "flow") == 0;
        rconf.limits = limits;
        rconf.max_memory = pricing.max_memory;
        pricing.cluster = &rconf;
    }
    SsimReplayNet net;
    g_autoptr(SsimTimeline) t = run_graph(graph, &pricing, &net, &error);
    if (t == NULL && chakra && !names) {
        /* Say which ops deadlocked: the same run with the ops' names. */
        g_autoptr(GError) named_error = NULL;
        g_auto(AstraNodes) named_nodes = {NULL, NULL};
        g_autoptr(SsimGraph) named = load_chakra(chakra, comm_group, (guint)jobs, &rules, TRUE,
                                                 FALSE, astra ? &named_nodes : NULL, &named_error);
        if (named && astra) {
            pricing.node_ids = (const guint64 *)named_nodes.node_ids->data;
            pricing.colls =
                named_nodes.colls ? (const SsimCollAttrs *)named_nodes.colls->data : NULL;
        }
        g_autoptr(SsimTimeline) again =
            named ? run_graph(named, &pricing, NULL, &named_error) : NULL;
        if (again == NULL && named_error && named_error->code == error->code)
            g_clear_error(&error), error = g_steal_pointer(&named_error);
    }
    if (t == NULL) {
        g_prefix_error(&error, "%s: ", path);
        return ssim_cli_runtime_error(error);
    }
    if (astra) {
        const SsimAstraStats *as = &pricing.astra_stats;
        if (astra_cfg.replay_only)
            fprintf(stderr,
                    "shiftsim replay: astra semantics, replay-only: %" G_GUINT64_FORMAT
                    " nodes waited their durations, each rank alone",
                    as->n_replayed);
        else
            fprintf(stderr,
                    "shiftsim replay: astra semantics: %" G_GUINT64_FORMAT
                    " collectives in %" G_GUINT64_FORMAT " chunks, %" G_GUINT64_FORMAT
                    " messages; %" G_GUINT64_FORMAT " compute nodes skipped (tensor_size 0)",
                    as->n_collectives, as->n_chunks, as->n_messages, as->n_skipped);
        if (as->n_invalid)
            fprintf(stderr, ", %" G_GUINT64_FORMAT " invalid nodes skipped", as->n_invalid);
        if (as->n_custom)
            fprintf(stderr, ", %" G_GUINT64_FORMAT " collectives by custom implementations",
                    as->n_custom);
        if (as->n_broadcast)
            fprintf(stderr, ", %" G_GUINT64_FORMAT " broadcasts replayed by their durations",
                    as->n_broadcast);
        if (as->n_mem)
            fprintf(stderr, ", %" G_GUINT64_FORMAT " memory nodes served by %s", as->n_mem,
                    ssim_astra_mem_type_name(astra_cfg.mem_type));
        fputc('\n', stderr);
    }
    if (rconf.flow_network)
        fprintf(stderr,
                "shiftsim replay: network: %" G_GUINT64_FORMAT " flows; communication ran "
                "%.3f ms (summed over ops) beyond its %.3f ms alone on the network\n",
                net.flows, (double)net.contended / 1e6, (double)net.alone / 1e6);
    if (timeline) {
        g_autoptr(GString) csv = ssim_report_timeline_csv(graph, t);
        if (!ssim_cli_emit(timeline, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    if (trace && !ssim_cli_write_trace(trace, trace_format, graph, t, 0, (guint)jobs, &error))
        return ssim_cli_runtime_error(error);
    if (plot) {
        SsimPlotStatus st;
        if (!ssim_plot_gantt(graph, t, plot, &view, path, &st, &error))
            return ssim_cli_runtime_error(error);
        if (st == SSIM_PLOT_NO_GNUPLOT)
            fprintf(stderr,
                    "shiftsim: notice: gnuplot is not installed; wrote the plot's data "
                    "and script next to %s (render with `gnuplot FILE.gp`)\n",
                    plot);
    }
    g_autoptr(GString) summary = ssim_report_replay(graph, t, format, path);
    /* With --timeline - or --trace -, stdout carries that file alone: the summary goes to
     * stderr. */
    if ((timeline && strcmp(timeline, "-") == 0) || (trace && strcmp(trace, "-") == 0)) {
        fputs(summary->str, stderr);
        return SSIM_EXIT_OK;
    }
    if (!ssim_cli_emit(NULL, summary, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
