/*
 * `shiftsim simulate`: one training configuration -> step time, throughput, TFLOP/s per GPU,
 * MFU, pipeline bubble, exposed communication per class and peak memory per GPU.
 *
 * With no options it simulates the embedded GPT-J 6B on the embedded DGX H200 cluster under the
 * split ssim_parallel_suggest() picks.  Split options override that suggestion field by field;
 * when tp or pp is given and dp is not, dp takes the remaining GPUs, and when the global batch is
 * not given it is dp * microbatch * max(8, 4 pp) so the pipeline has work to fill.  When no
 * recompute mode is given, the cheapest of none, selective and full whose memory estimate fits
 * is used (and named on stderr); a configuration that fits under none of them is reported with
 * its full-recompute figure.  The placement field is carried but not applied yet: the graph is
 * simulated as lowered.
 */
#include "verbs.h"

#include <shiftsim/sim.h>

#include <stdio.h>
#include <string.h>

#define VERB "simulate"

static gboolean set_field(SsimParallel *par, const char *key, const char *value, const char *opt,
                          int *rc)
{
    g_autoptr(GError) error = NULL;
    if (value == NULL)
        return TRUE;
    if (!ssim_parallel_set(par, key, value, &error)) {
        *rc = ssim_cli_usage_error(VERB, "--%s: %s", opt, error->message);
        return FALSE;
    }
    return TRUE;
}

int ssim_verb_simulate(int argc, char **argv)
{
    g_autofree char *model_name = NULL, *cluster_name = NULL, *schedule = NULL;
    g_autofree char *recompute = NULL, *zero = NULL, *bucket = NULL, *tp_comm = NULL;
    g_autofree char *format_name = NULL, *timeline = NULL, *split = NULL, *order = NULL;
    gint nodes = -1, dp = -1, tp = -1, pp = -1, vstages = -1, mb = -1, gbs = -1;
    gboolean seq_parallel = FALSE, ignore_memory = FALSE, exact = FALSE;
    GOptionEntry entries[] = {
        {"model", 'm', 0, G_OPTION_ARG_STRING, &model_name,
         "Model: a bundled name (gpt-j-6b, gpt-3-175b, llama-2-70b, ...: models/NAME.ini) or an "
         "INI path (default: the embedded GPT-J 6B)",
         "NAME|PATH"},
        {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_name,
         "Cluster: dgx-a100, dgx-h100, dgx-h200 (models/clusters/NAME.ini) or an INI path "
         "(default: the embedded DGX H200, 4 nodes)",
         "NAME|PATH"},
        {"nodes", 'n', 0, G_OPTION_ARG_INT, &nodes, "Number of nodes (overrides the cluster file)",
         "N"},
        {"split", 0, 0, G_OPTION_ARG_STRING, &split,
         "Whole configuration as key=value pairs, e.g. dp=2,tp=4,pp=2,mb=1,gbs=64 (applied "
         "before the options below)",
         "SPEC"},
        {"dp", 0, 0, G_OPTION_ARG_INT, &dp, "Data-parallel replicas (default: GPUs / (tp pp))",
         "N"},
        {"tp", 0, 0, G_OPTION_ARG_INT, &tp, "Tensor-parallel ranks per stage (inside one node)",
         "N"},
        {"pp", 0, 0, G_OPTION_ARG_INT, &pp, "Pipeline stages", "N"},
        {"vstages", 'v', 0, G_OPTION_ARG_INT, &vstages,
         "Model chunks per GPU (virtual stages; > 1 needs --schedule interleaved)", "V"},
        {"microbatch", 'b', 0, G_OPTION_ARG_INT, &mb, "Sequences per microbatch (default 1)", "B"},
        {"global-batch", 'B', 0, G_OPTION_ARG_INT, &gbs,
         "Sequences per iteration over all replicas (default dp * microbatch * max(8, 4 pp))", "N"},
        {"schedule", 's', 0, G_OPTION_ARG_STRING, &schedule,
         "Pipeline schedule: gpipe, xla (lock-step with collective-permutes), 1f1b (default), "
         "interleaved",
         "NAME"},
        {"recompute", 'r', 0, G_OPTION_ARG_STRING, &recompute,
         "Activation recomputation: none, selective (attention core) or full (every layer's "
         "forward); default the first that fits in memory",
         "MODE"},
        {"seq-parallel", 0, 0, G_OPTION_ARG_NONE, &seq_parallel,
         "Sequence parallelism: shard norms and dropout over tp (implies --tp-comm rs-ag)", NULL},
        {"zero", 'z', 0, G_OPTION_ARG_STRING, &zero,
         "ZeRO stage: 0 (default) or 1 (optimizer state sharded over dp: reduce-scatter "
         "gradients, all-gather weights)",
         "0|1"},
        {"bucket", 0, 0, G_OPTION_ARG_STRING, &bucket,
         "DP gradient bucket size (e.g. 25MiB, 40M) overlapping the last backward, or off (one "
         "reduction per GPU after backward; default)",
         "BYTES|off"},
        {"tp-comm", 0, 0, G_OPTION_ARG_STRING, &tp_comm,
         "Tensor-parallel collectives: allreduce (default) or rs-ag (reduce-scatter + "
         "all-gather)",
         "STYLE"},
        {"order", 0, 0, G_OPTION_ARG_STRING, &order,
         "Rank order, innermost first (default tp-dp-pp: a TP group sits inside a node)", "AXES"},
        {"exact", 0, 0, G_OPTION_ARG_NONE, &exact,
         "Simulate every GPU instead of one representative rank per pipeline stage", NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &ignore_memory,
         "Simulate even when the memory estimate exceeds a GPU's HBM", NULL},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format_name,
         "Output: table (default), csv (header + one row) or json", "FMT"},
        {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &timeline,
         "Write one CSV row per op (id,name,rank,stream,kind,class,bytes,flops,ready_ns,"
         "start_ns,end_ns) to FILE ('-' for stdout)",
         "FILE"},
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
             "full\n\n"
             "Exit status: 0 success; 1 bad input, configuration that does not fit or simulation "
             "failure; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB))
        return SSIM_EXIT_USAGE;
    if (argc > 1)
        return ssim_cli_usage_error(VERB, "unexpected argument '%s'", argv[1]);

    SsimFormat format = SSIM_FORMAT_TABLE;
    if (format_name && !ssim_format_from_name(format_name, &format))
        return ssim_cli_usage_error(VERB, "--format: '%s' is not table, csv or json", format_name);
    gint *ints[] = {&dp, &tp, &pp, &vstages, &mb, &gbs};
    const char *int_names[] = {"dp", "tp", "pp", "vstages", "microbatch", "global-batch"};
    for (gsize i = 0; i < G_N_ELEMENTS(ints); i++)
        if (*ints[i] != -1 && *ints[i] < 1)
            return ssim_cli_usage_error(VERB, "--%s: must be a positive integer", int_names[i]);
    if (nodes != -1 && nodes < 1)
        return ssim_cli_usage_error(VERB, "--nodes: must be a positive integer");

    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model =
        model_name ? ssim_model_load(model_name, &error) : ssim_model_default();
    if (model == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(SsimCluster) cluster =
        cluster_name ? ssim_cluster_load(cluster_name, &error) : ssim_cluster_default();
    if (cluster == NULL)
        return ssim_cli_runtime_error(error);
    if (nodes != -1)
        ssim_cluster_set_nodes(cluster, (guint)nodes);
    guint world = ssim_cluster_n_gpus(cluster);

    SsimParallel par;
    ssim_parallel_init(&par);
    g_autoptr(GError) suggest_error = NULL;
    gboolean suggested = ssim_parallel_suggest(&par, model, cluster, &suggest_error);
    if (!suggested)
        ssim_parallel_init(&par);
    if (!suggested && tp == -1 && pp == -1 && split == NULL) {
        fprintf(stderr, "shiftsim: %s; give the split with --tp and --pp (or --split)\n",
                suggest_error->message);
        return SSIM_EXIT_RUNTIME;
    }
    gboolean gbs_given = gbs != -1, dp_given = dp != -1;
    if (split) {
        if (!ssim_parallel_parse(&par, split, &error))
            return ssim_cli_usage_error(VERB, "--split: %s", error->message);
        gbs_given = gbs_given || strstr(split, "gbs") || strstr(split, "global_batch");
        dp_given = dp_given || g_str_has_prefix(split, "dp=") || strstr(split, ",dp=");
    }
    if (tp != -1)
        par.tp = (guint)tp;
    if (pp != -1)
        par.pp = (guint)pp;
    if (dp != -1)
        par.dp = (guint)dp;
    else if (!dp_given && par.tp * par.pp > 0 && world % (par.tp * par.pp) == 0)
        par.dp = world / (par.tp * par.pp);
    if (vstages != -1)
        par.virtual_stages = (guint)vstages;
    if (mb != -1)
        par.microbatch = (guint)mb;
    int rc = SSIM_EXIT_OK;
    if (!set_field(&par, "schedule", schedule, "schedule", &rc) ||
        !set_field(&par, "recompute", recompute, "recompute", &rc) ||
        !set_field(&par, "zero", zero, "zero", &rc) ||
        !set_field(&par, "bucket", bucket, "bucket", &rc) ||
        !set_field(&par, "tp_comm", tp_comm, "tp-comm", &rc) ||
        !set_field(&par, "order", order, "order", &rc) ||
        !set_field(&par, "sp", seq_parallel ? "on" : NULL, "seq-parallel", &rc))
        return rc;
    if (gbs != -1)
        par.global_batch = (guint)gbs;
    else if (!gbs_given)
        par.global_batch = par.dp * par.microbatch * MAX(8u, 4 * par.pp);

    SsimSimConfig config = {.model = model,
                            .cluster = cluster,
                            .par = &par,
                            .exact = exact,
                            .ignore_memory = ignore_memory};
    /* Without an explicit recompute mode, take the cheapest one that fits (none, selective,
     * full), saying so on stderr. */
    gboolean recompute_given = recompute != NULL || (split && strstr(split, "recompute"));
    if (!recompute_given && !ignore_memory) {
        SsimMemory peak;
        for (int mode = SSIM_RECOMPUTE_NONE; mode < SSIM_RECOMPUTE_N; mode++) {
            par.recompute = (SsimRecompute)mode;
            g_autoptr(GError) probe = NULL;
            if (ssim_simulate_memory(&config, &peak, &probe))
                break;
            if (mode == SSIM_RECOMPUTE_NONE && !g_str_has_prefix(probe->message, model->name))
                break; /* not a memory problem: let ssim_simulate() report it */
            if (mode + 1 == SSIM_RECOMPUTE_N)
                break; /* even full recompute does not fit: report that */
            fprintf(stderr,
                    "shiftsim simulate: recompute %s does not fit (%.1f GiB per GPU); "
                    "trying %s\n",
                    ssim_recompute_name((SsimRecompute)mode), (double)peak.total / (1 << 30),
                    ssim_recompute_name((SsimRecompute)(mode + 1)));
        }
    }
    SsimResult result;
    g_autoptr(SsimLowered) lowered = NULL;
    g_autoptr(SsimTimeline) tl = NULL;
    if (!ssim_simulate(&config, &result, timeline ? &lowered : NULL, timeline ? &tl : NULL, &error))
        return ssim_cli_runtime_error(error);
    if (timeline) {
        g_autoptr(GString) csv = ssim_report_timeline_csv(ssim_lowered_graph(lowered), tl);
        if (!ssim_cli_emit(timeline, csv, &error))
            return ssim_cli_runtime_error(error);
    }
    g_autoptr(GString) out = ssim_result_format(&result, &config, format);
    if (!ssim_cli_emit(NULL, out, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
