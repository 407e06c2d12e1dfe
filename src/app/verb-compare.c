/*
 * `shiftsim compare`: one configuration under several placement policies (baseline, megatron,
 * commshift, auto by default), side by side, and an explanation of what moved.
 *
 * Every policy is simulated on the same model, cluster and split; each runs its own schedule
 * (baseline, commshift and auto XLA's lock-step pipeline, megatron 1F1B) unless --schedule forces
 * one for all.  With no options: GPT-J 6B on 2 DGX H200 nodes, dp 2 x tp 4 x pp 2, which has both
 * a pipeline and data parallelism, so every relocation has something to act on.
 *
 * Attribution.  The step time of a replay is exactly the length of its critical path (see
 * ssim_critical_path): the durations of the ops on it plus the gaps between them.  Grouping the
 * path's ops by (stage, what they are: compute, TP forward or backward collectives, pipeline
 * transfers, gradient reductions) and subtracting a policy's groups from the baseline's splits
 * the step-time difference into parts that add up to it exactly; the rows are those parts, the
 * largest first.  The output depends only on the inputs (no clock, no hash order), so two runs
 * print the same bytes.
 */
#include "src/app/verbs.h"

#include <shiftsim/lower.h>
#include <shiftsim/place.h>
#include <shiftsim/plot.h>
#include <shiftsim/report.h>
#include <shiftsim/sim.h>
#include <shiftsim/trace.h>

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#define VERB "compare"

typedef struct {
    SsimPlacementKind kind;
    SsimParallel par;
    SsimResult result;
    SsimLowered *lowered;
    SsimTimeline *timeline;
    SsimPlaceReport report;
    GHashTable *path; /* group label -> SsimTime on the critical path (boxed gint64) */
} Run;

static void run_clear(Run *r)
{
    ssim_lowered_free(r->lowered);
    ssim_timeline_free(r->timeline);
    ssim_place_report_clear(&r->report);
    if (r->path)
        g_hash_table_destroy(r->path);
}

/* The attribution group of graph op `op`: "stage S <what>". */
static char *group_label(SsimLowered *l, guint32 op)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    const SsimOp *o = ssim_graph_op(g, op);
    guint stage = ssim_lowered_stage(l, o->rank);
    SsimOpClass cls = ssim_lowered_op_class(l, op);
    const char *what;
    switch (cls) {
    case SSIM_OPCLASS_TP: {
        const SsimPlan *plan = ssim_lowered_plan(l);
        guint32 p = ssim_lowered_plan_op(l, op);
        guint32 issue = p == SSIM_NONE ? SSIM_NONE : ssim_plan_op(plan, p)->issue;
        gboolean bwd = issue != SSIM_NONE && ssim_plan_op(plan, issue)->cls == SSIM_OPCLASS_BWD;
        what = bwd ? "tp collectives (backward)" : "tp collectives (forward)";
        break;
    }
    case SSIM_OPCLASS_PP:
        what = "pipeline transfers";
        break;
    case SSIM_OPCLASS_DP:
        what = "gradient reduction";
        break;
    case SSIM_OPCLASS_OPTIMIZER:
        /* Whichever stage ends last puts its optimizer on the path; it is the same work. */
        return g_strdup("optimizer step (the stage that ends last)");
    default:
        what = "compute";
        break;
    }
    return g_strdup_printf("stage %u %s", stage, what);
}

static void path_add(GHashTable *h, const char *key, SsimTime t)
{
    gint64 *v = g_hash_table_lookup(h, key);
    if (v == NULL) {
        v = g_new0(gint64, 1);
        g_hash_table_insert(h, g_strdup(key), v);
    }
    *v += t;
}

/* Files the critical path of `r` under its group labels, and the gaps as "waiting". */
static void measure_path(Run *r)
{
    r->path = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    const SsimGraph *g = ssim_lowered_graph(r->lowered);
    g_autoptr(GArray) path = ssim_critical_path(g, r->timeline);
    SsimTime next_start = r->timeline->makespan;
    for (guint i = 0; i < path->len; i++) {
        guint32 op = g_array_index(path, guint32, i);
        SsimTime s = r->timeline->start[op], e = r->timeline->end[op];
        g_autofree char *label = group_label(r->lowered, op);
        path_add(r->path, label, e - s);
        path_add(r->path, "waiting (gaps on the path)", next_start - e);
        next_start = s;
    }
    path_add(r->path, "waiting (gaps on the path)", next_start);
}

typedef struct {
    char *label;
    SsimTime base, other;
} Attr;

static gint attr_cmp(gconstpointer a, gconstpointer b)
{
    const Attr *x = a, *y = b;
    SsimTime dx = x->base - x->other, dy = y->base - y->other;
    SsimTime ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
    if (ax != ay)
        return ax > ay ? -1 : 1;
    return strcmp(x->label, y->label);
}

static void attr_free(gpointer p)
{
    g_free(((Attr *)p)->label);
}

/* Rows of (label, baseline time, policy time) for every group of either path, largest change
 * first. */
static GArray *attribution(const Run *base, const Run *other)
{
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(Attr));
    g_array_set_clear_func(rows, attr_free);
    const Run *runs[2] = {base, other};
    for (int k = 0; k < 2; k++) {
        GHashTableIter it;
        gpointer key, val;
        g_hash_table_iter_init(&it, runs[k]->path);
        while (g_hash_table_iter_next(&it, &key, &val)) {
            if (k == 1 && g_hash_table_contains(base->path, key))
                continue;
            gint64 *b = g_hash_table_lookup(base->path, key);
            gint64 *o = g_hash_table_lookup(other->path, key);
            Attr a = {g_strdup(key), b ? *b : 0, o ? *o : 0};
            if (a.base != a.other)
                g_array_append_val(rows, a);
            else
                g_free(a.label);
        }
    }
    g_array_sort(rows, attr_cmp);
    return rows;
}

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

static double gain(const Run *r, const Run *base)
{
    return base->result.step_time > 0 && r->result.step_time > 0
               ? 100.0 * ((double)base->result.step_time / (double)r->result.step_time - 1.0)
               : 0.0;
}

static void format_table(GString *o, Run *runs, guint n, const SsimModel *model,
                         const SsimCluster *cl, guint top)
{
    const SsimParallel *p = &runs[0].par;
    g_string_append_printf(o, "model       %s\n", model->name);
    g_string_append_printf(o, "cluster     %s: %u node%s x %u GPUs (%s)\n", cl->name, cl->nodes,
                           cl->nodes == 1 ? "" : "s", cl->gpus_per_node, cl->gpu);
    g_string_append_printf(o,
                           "split       dp %u x tp %u x pp %u, microbatch %u, global batch %u "
                           "(%u microbatches), recompute %s\n\n",
                           p->dp, p->tp, p->pp, p->microbatch, p->global_batch,
                           ssim_parallel_n_microbatches(p), ssim_recompute_name(p->recompute));
    g_string_append(o, "policy     schedule   step ms   tokens/s    gain   exposed ms: tp       "
                       "pp       dp   extra MiB\n");
    for (guint i = 0; i < n; i++) {
        const SsimResult *r = &runs[i].result;
        g_string_append_printf(
            o, "%-10s %-8s %9.3f %10.0f %+6.1f%%          %8.3f %8.3f %8.3f %8.1f\n",
            ssim_placement_kind_name(runs[i].kind), runs[i].par.schedule, ms(r->step_time),
            r->tokens_per_s, gain(&runs[i], &runs[0]), ms(r->exposed[SSIM_COMM_TP]),
            ms(r->exposed[SSIM_COMM_PP]), ms(r->exposed[SSIM_COMM_DP]),
            (double)r->placement_extra / 1048576.0);
    }
    for (guint i = 1; i < n; i++) {
        const Run *r = &runs[i];
        if (r->report.moves == NULL || r->report.moves->len == 0)
            continue;
        g_string_append_printf(o, "\n%s moved:", ssim_placement_kind_name(r->kind));
        if (r->kind == SSIM_PLACEMENT_AUTO)
            g_string_append_printf(o, " (started from %s at %.3f ms, %u candidates tried)",
                                   r->report.start, ms(r->report.start_step),
                                   r->report.evaluations);
        g_string_append_c(o, '\n');
        for (guint k = 0; k < r->report.moves->len; k++)
            g_string_append_printf(o, "  %s\n",
                                   (const char *)g_ptr_array_index(r->report.moves, k));
    }
    for (guint i = 1; i < n; i++) {
        const Run *r = &runs[i];
        if (r->kind != SSIM_PLACEMENT_COMMSHIFT && r->kind != SSIM_PLACEMENT_AUTO)
            continue;
        if (strcmp(r->par.schedule, runs[0].par.schedule) != 0)
            continue;
        g_autoptr(GArray) rows = attribution(&runs[0], r);
        g_string_append_printf(
            o,
            "\nwhat %s saved: %.3f ms of step time, by group of ops on the "
            "critical path (%s -> %s):\n",
            ssim_placement_kind_name(r->kind), ms(runs[0].result.step_time - r->result.step_time),
            ssim_placement_kind_name(runs[0].kind), ssim_placement_kind_name(r->kind));
        g_string_append(o, "  saved ms   on path ms (before -> after)   what\n");
        SsimTime shown = 0, total = runs[0].result.step_time - r->result.step_time;
        for (guint k = 0; k < rows->len && k < top; k++) {
            const Attr *a = &g_array_index(rows, Attr, k);
            shown += a->base - a->other;
            g_string_append_printf(o, "  %+8.3f   %9.3f -> %9.3f           %s\n",
                                   ms(a->base - a->other), ms(a->base), ms(a->other), a->label);
        }
        if (rows->len > top)
            g_string_append_printf(o, "  %+8.3f   (%u more group%s)\n", ms(total - shown),
                                   rows->len - top, rows->len - top == 1 ? "" : "s");
        g_string_append_printf(o, "  %+8.3f   total = step time %s - %s\n", ms(total),
                               ssim_placement_kind_name(runs[0].kind),
                               ssim_placement_kind_name(r->kind));
    }
}

#define CSV_HEADER                                                                                 \
    "policy,schedule,step_ms,tokens_per_s,gain_pct,exposed_tp_ms,exposed_pp_ms,exposed_dp_ms,"     \
    "extra_bytes,memory_gib\n"

static void format_csv(GString *o, Run *runs, guint n)
{
    g_string_append(o, CSV_HEADER);
    for (guint i = 0; i < n; i++) {
        const SsimResult *r = &runs[i].result;
        g_string_append_printf(
            o, "%s,%s,%.6f,%.3f,%.4f,%.6f,%.6f,%.6f,%" G_GUINT64_FORMAT ",%.3f\n",
            ssim_placement_kind_name(runs[i].kind), runs[i].par.schedule, ms(r->step_time),
            r->tokens_per_s, gain(&runs[i], &runs[0]), ms(r->exposed[SSIM_COMM_TP]),
            ms(r->exposed[SSIM_COMM_PP]), ms(r->exposed[SSIM_COMM_DP]), r->placement_extra,
            (double)r->memory.total / (1024.0 * 1024.0 * 1024.0));
    }
}

static void format_json(GString *o, Run *runs, guint n, const SsimModel *model,
                        const SsimCluster *cl)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, model->name);
    json_builder_set_member_name(b, "cluster");
    json_builder_add_string_value(b, cl->name);
    json_builder_set_member_name(b, "gpus");
    json_builder_add_int_value(b, runs[0].result.n_gpus);
    g_autofree char *split = ssim_parallel_to_string(&runs[0].par);
    json_builder_set_member_name(b, "split");
    json_builder_add_string_value(b, split);
    json_builder_set_member_name(b, "policies");
    json_builder_begin_array(b);
    for (guint i = 0; i < n; i++) {
        const Run *r = &runs[i];
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "policy");
        json_builder_add_string_value(b, ssim_placement_kind_name(r->kind));
        json_builder_set_member_name(b, "schedule");
        json_builder_add_string_value(b, r->par.schedule);
        json_builder_set_member_name(b, "step_ms");
        json_builder_add_double_value(b, ms(r->result.step_time));
        json_builder_set_member_name(b, "tokens_per_s");
        json_builder_add_double_value(b, r->result.tokens_per_s);
        json_builder_set_member_name(b, "gain_pct");
        json_builder_add_double_value(b, gain(r, &runs[0]));
        json_builder_set_member_name(b, "exposed_ms");
        json_builder_begin_object(b);
        for (guint k = 0; k < SSIM_COMM_N; k++) {
            json_builder_set_member_name(b, ssim_comm_class_name(k));
            json_builder_add_double_value(b, ms(r->result.exposed[k]));
        }
        json_builder_end_object(b);
        json_builder_set_member_name(b, "extra_bytes");
        json_builder_add_int_value(b, (gint64)r->result.placement_extra);
        json_builder_set_member_name(b, "moves");
        json_builder_begin_array(b);
        for (guint k = 0; r->report.moves && k < r->report.moves->len; k++)
            json_builder_add_string_value(b, g_ptr_array_index(r->report.moves, k));
        json_builder_end_array(b);
        if (i > 0 && strcmp(r->par.schedule, runs[0].par.schedule) == 0) {
            g_autoptr(GArray) rows = attribution(&runs[0], r);
            json_builder_set_member_name(b, "attribution");
            json_builder_begin_array(b);
            for (guint k = 0; k < rows->len; k++) {
                const Attr *a = &g_array_index(rows, Attr, k);
                json_builder_begin_object(b);
                json_builder_set_member_name(b, "what");
                json_builder_add_string_value(b, a->label);
                json_builder_set_member_name(b, "saved_ms");
                json_builder_add_double_value(b, ms(a->base - a->other));
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    ssim_json_append(o, b, TRUE);
}

/* The policy bar chart: per policy, the step split into exposed TP, PP, DP and the rest. */
static gboolean plot_bars(const char *image, Run *runs, guint n, const SsimModel *model,
                          SsimPlotStatus *status, GError **error)
{
    g_autoptr(GString) dat = g_string_new("# policy rest_ms exposed_tp_ms exposed_pp_ms "
                                          "exposed_dp_ms\n");
    for (guint i = 0; i < n; i++) {
        const SsimResult *r = &runs[i].result;
        SsimTime rest = r->step_time;
        for (guint k = 0; k < SSIM_COMM_N; k++)
            rest -= r->exposed[k];
        g_string_append_printf(dat, "%s %.6f %.6f %.6f %.6f\n",
                               ssim_placement_kind_name(runs[i].kind), ms(MAX(rest, 0)),
                               ms(r->exposed[SSIM_COMM_TP]), ms(r->exposed[SSIM_COMM_PP]),
                               ms(r->exposed[SSIM_COMM_DP]));
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_autoptr(GString) gp = g_string_new("# shiftsim compare: step time per placement policy\n");
    g_string_append_printf(gp, "set terminal %s size 720,420\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced");
    ssim_plot_quote(gp, image);
    g_autofree char *title =
        g_strdup_printf("%s, dp %u x tp %u x pp %u: step time by placement", model->name,
                        runs[0].par.dp, runs[0].par.tp, runs[0].par.pp);
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, title);
    g_string_append(gp, "\nset ylabel 'step time (ms)'\nset style data histograms\n"
                        "set style histogram rowstacked\nset style fill solid 0.85 border -1\n"
                        "set boxwidth 0.6\nset key outside bottom center horizontal\n"
                        "set yrange [0:*]\n"
                        "set grid ytics\nplot ");
    const char *titles[] = {"compute and bubbles", "exposed tp", "exposed pp", "exposed dp"};
    for (guint k = 0; k < 4; k++) {
        if (k == 0)
            ssim_plot_quote(gp, dat_path);
        else
            g_string_append(gp, "''");
        g_string_append_printf(gp, " using %u%s title ", k + 2, k == 0 ? ":xtic(1)" : "");
        ssim_plot_quote(gp, titles[k]);
        g_string_append(gp, k + 1 < 4 ? ", " : "\n");
    }
    return ssim_plot_render(image, gp, status, error);
}

int ssim_verb_compare(int argc, char **argv)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliPlace) place = {0};
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *policies = NULL, *trace = NULL, *plot = NULL;
    gint top = 8, budget = -1;
    gboolean exact = FALSE, ignore_memory = FALSE;
    SsimCliLimits limits;
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
        ssim_cli_job_entry(&job, SSIM_OPT_MICROBATCH, NULL),
        ssim_cli_job_entry(&job, SSIM_OPT_GLOBAL_BATCH,
                           "Sequences per iteration (default dp * microbatch * max(8, 4 pp))"),
        ssim_cli_job_entry(&job, SSIM_OPT_SCHEDULE,
                           "Force one schedule for every policy (default: each policy's own: "
                           "xla, megatron 1f1b)"),
        ssim_cli_job_entry(&job, SSIM_OPT_RECOMPUTE,
                           "none, selective or full (default: the first that fits)"),
        ssim_cli_job_entry(&job, SSIM_OPT_SEQ_PARALLEL, "Sequence parallelism"),
        ssim_cli_job_entry(&job, SSIM_OPT_ZERO, "ZeRO stage 0 or 1"),
        ssim_cli_job_entry(&job, SSIM_OPT_BUCKET,
                           "Megatron's DP gradient bucket size (default off)"),
        ssim_cli_job_entry(&job, SSIM_OPT_TP_COMM, "allreduce or rs-ag"),
        {"policies", 'P', 0, G_OPTION_ARG_STRING, &policies,
         "Comma-separated policies; the first is the reference (default "
         "baseline,megatron,commshift,auto)",
         "LIST"},
        ssim_cli_place_entry(&place, SSIM_OPT_SHIFT,
                             "Relocations commshift and auto may make: dp, pp, tp (default all) "
                             "or none"),
        {"budget", 0, 0, G_OPTION_ARG_INT, &budget, "Auto: most candidates to try (default 24)",
         "N"},
        {"top", 0, 0, G_OPTION_ARG_INT, &top, "Attribution rows to show (default 8)", "N"},
        {"exact", 0, 0, G_OPTION_ARG_NONE, &exact, "Simulate every GPU", NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &ignore_memory,
         "Simulate even when the memory estimate exceeds a GPU's HBM", NULL},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT, NULL),
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT, NULL),
        {"trace", 't', 0, G_OPTION_ARG_FILENAME, &trace,
         "Write a Perfetto trace per policy to PREFIX-POLICY.json", "PREFIX"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Write a bar chart of the policies to FILE.png and a Gantt chart per policy to "
         "FILE-POLICY.png (with .dat and .gp)",
         "FILE.png"},
        {NULL}};
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- compare placement policies on one configuration");
    g_option_context_set_summary(
        ctx, "Simulates one configuration under the placement policies baseline (XLA's 3D\n"
             "parallelism), megatron, commshift (the paper's relocations) and auto (a search)\n"
             "and prints step time, tokens/s, gain over the first policy and exposed\n"
             "communication per class, the moves each policy made, and where the difference\n"
             "comes from on the critical path.  With no options: GPT-J 6B on 2 DGX H200 nodes,\n"
             "dp 2 x tp 4 x pp 2.");
    g_option_context_set_description(
        ctx, "Examples:\n"
             "  shiftsim compare\n"
             "  shiftsim compare --nodes 4 --tp 8 --pp 4 --policies baseline,commshift "
             "--shift dp\n"
             "  shiftsim compare --trace out/gptj --plot out/gptj.png\n\n"
             "Exit status: 0 success; 1 bad input or simulation failure; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    int rc = ssim_cli_parse_limited(ctx, &argc, &argv, VERB, &limits);
    SsimFormat format;
    if (rc != SSIM_EXIT_OK || (rc = ssim_cli_output_format(VERB, &output, &format)) ||
        (rc = ssim_cli_job_check_nodes(VERB, &job)) || (rc = ssim_cli_job_check_counts(VERB, &job)))
        return rc;
    if (top < 1)
        return ssim_cli_usage_error(VERB, "--top: must be a positive integer");
    if (job.nodes < 1) /* -1 is no sentinel here: the default is 2 */
        return ssim_cli_usage_error(VERB, "--nodes: must be a positive integer");

    SsimPlacement placement = SSIM_PLACEMENT_INIT;
    if ((rc = ssim_cli_place_parse(VERB, &place, &placement)) != SSIM_EXIT_OK)
        return rc;
    g_autoptr(GError) error = NULL;
    if (budget != -1)
        placement.budget = (guint)MAX(budget, 0);
    SsimPlacementKind kinds[SSIM_PLACEMENT_N * 2];
    guint n_runs = 0;
    {
        g_auto(GStrv) words =
            g_strsplit(policies ? policies : "baseline,megatron,commshift,auto", ",", -1);
        for (guint i = 0; words[i]; i++) {
            const char *w = g_strstrip(words[i]);
            if (*w == '\0')
                continue;
            if (n_runs == G_N_ELEMENTS(kinds))
                return ssim_cli_usage_error(VERB, "--policies: too many entries");
            if (!ssim_placement_kind_from_name(w, &kinds[n_runs])) {
                g_autofree char *names = ssim_placement_kind_list();
                return ssim_cli_usage_error(VERB, "--policies: unknown placement '%s' (known: %s)",
                                            w, names);
            }
            n_runs++;
        }
        if (n_runs == 0)
            return ssim_cli_usage_error(VERB, "--policies: give at least one policy");
    }

    g_autoptr(SsimModel) model = NULL;
    g_autoptr(SsimCluster) cluster = NULL;
    if ((rc = ssim_cli_job_load(VERB, &job, &model, &cluster)) != SSIM_EXIT_OK)
        return rc;

    SsimParallel par;
    ssim_parallel_init(&par);
    par.tp = MIN(4u, cluster->gpus_per_node);
    par.pp = 2;
    if ((rc = ssim_cli_job_apply(VERB, &job, &par, ssim_cluster_n_gpus(cluster))) != SSIM_EXIT_OK)
        return rc;
    gboolean schedule_given = ssim_cli_job_has_schedule(&job);
    /* Without a recompute mode, the cheapest that fits the native schedule of the first policy
     * (GPipe-like in-flight counts: the lock-step pipeline keeps every microbatch alive). */
    if (!ssim_cli_job_has_recompute(&job) && !ignore_memory) {
        for (int mode = SSIM_RECOMPUTE_NONE; mode < SSIM_RECOMPUTE_N; mode++) {
            SsimParallel probe_par = par;
            probe_par.recompute = (SsimRecompute)mode;
            if (!schedule_given)
                g_strlcpy(probe_par.schedule, "xla", sizeof probe_par.schedule);
            SsimSimConfig probe = {.model = model, .cluster = cluster, .par = &probe_par};
            SsimMemory peak;
            if (ssim_simulate_memory(&probe, &peak, NULL) || mode + 1 == SSIM_RECOMPUTE_N) {
                par.recompute = (SsimRecompute)mode;
                break;
            }
        }
    }

    Run *runs = g_new0(Run, n_runs);
    gboolean ok = TRUE;
    for (guint i = 0; ok && i < n_runs; i++) {
        Run *r = &runs[i];
        r->kind = kinds[i];
        r->par = par;
        if (!schedule_given)
            g_strlcpy(r->par.schedule, ssim_placement_kind_schedule(r->kind),
                      sizeof r->par.schedule);
        g_strlcpy(r->par.placement, ssim_placement_kind_name(r->kind), sizeof r->par.placement);
        ssim_place_report_init(&r->report);
        SsimPlacement pl = placement;
        pl.kind = r->kind;
        SsimSimConfig config = {.model = model,
                                .cluster = cluster,
                                .par = &r->par,
                                .exact = exact,
                                .ignore_memory = ignore_memory,
                                .placement = &pl,
                                .report = &r->report,
                                .max_ops = (guint64)limits.max_ops,
                                .max_events = (guint64)limits.max_events};
        ok = ssim_simulate(&config, &r->result, &r->lowered, &r->timeline, &error);
        if (ok) {
            measure_path(r);
        } else {
            g_prefix_error(&error, "placement %s: ", ssim_placement_kind_name(r->kind));
        }
    }
    if (!ok) {
        for (guint i = 0; i < n_runs; i++)
            run_clear(&runs[i]);
        g_free(runs);
        return ssim_cli_runtime_error(error);
    }

    g_autoptr(GString) out = g_string_new(NULL);
    if (format == SSIM_FORMAT_CSV)
        format_csv(out, runs, n_runs);
    else if (format == SSIM_FORMAT_JSON)
        format_json(out, runs, n_runs, model, cluster);
    else
        format_table(out, runs, n_runs, model, cluster, (guint)top);

    for (guint i = 0; ok && trace && i < n_runs; i++) {
        g_autofree char *path =
            g_strdup_printf("%s-%s.json", trace, ssim_placement_kind_name(runs[i].kind));
        g_autoptr(GString) json =
            ssim_trace_json(ssim_lowered_graph(runs[i].lowered), runs[i].timeline, 0);
        ok = ssim_cli_emit(path, json, &error);
    }
    gboolean no_gnuplot = FALSE;
    if (ok && plot) {
        SsimPlotStatus status = SSIM_PLOT_RENDERED;
        ok = plot_bars(plot, runs, n_runs, model, &status, &error);
        no_gnuplot = status == SSIM_PLOT_NO_GNUPLOT;
        g_autofree char *stem = g_strdup(plot);
        char *dot = strrchr(stem, '.');
        const char *ext = dot && !strchr(dot, '/') ? plot + (dot - stem) : ".png";
        if (dot && !strchr(dot, '/'))
            *dot = '\0';
        for (guint i = 0; ok && i < n_runs; i++) {
            g_autofree char *image =
                g_strdup_printf("%s-%s%s", stem, ssim_placement_kind_name(runs[i].kind), ext);
            g_autofree char *title =
                g_strdup_printf("%s, dp %u x tp %u x pp %u, placement %s (%s): %.3f ms",
                                model->name, runs[i].par.dp, runs[i].par.tp, runs[i].par.pp,
                                ssim_placement_kind_name(runs[i].kind), runs[i].par.schedule,
                                ms(runs[i].result.step_time));
            ok = ssim_plot_gantt(ssim_lowered_graph(runs[i].lowered), runs[i].timeline, image, 8,
                                 title, &status, &error);
            no_gnuplot = no_gnuplot || status == SSIM_PLOT_NO_GNUPLOT;
        }
    }
    if (ok)
        ok = ssim_cli_emit(output.output, out, &error);
    for (guint i = 0; i < n_runs; i++)
        run_clear(&runs[i]);
    g_free(runs);
    if (!ok)
        return ssim_cli_runtime_error(error);
    if (no_gnuplot)
        fprintf(stderr, "shiftsim compare: gnuplot not found; wrote the .dat and .gp files "
                        "(render with: gnuplot FILE.gp)\n");
    return SSIM_EXIT_OK;
}
