/*
 * What is written of a comparison of placement policies (include/shiftsim/compare.h): the table,
 * the CSV and the JSON of ssim_compare_format(), and the plots of ssim_compare_plot() (the step
 * bars, stepbars.h, and a Gantt chart per policy, plot.h).
 *
 * Everything here reads the comparison through its public accessors; times are printed in ms
 * with fixed printf precisions, so the text depends on the figures alone.
 */
#include <shiftsim/compare.h>

#include <shiftsim/stepbars.h>
#include <shiftsim/summary.h>

#include <json-glib/json-glib.h>
#include <string.h>

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

/* Tokens/s per GPU (what Megatron-LM logs): the run's tokens/s over its GPUs. */
static double per_gpu(const SsimResult *r)
{
    return r->n_gpus > 0 ? r->tokens_per_s / r->n_gpus : 0.0;
}

static const char *name(const SsimComparePolicy *p)
{
    return p->name;
}

/* The table's attribution of policy i: its `top` largest groups, the rest summed, the total. */
static void format_attribution(GString *o, const SsimCompare *cmp, guint i, guint top)
{
    const SsimComparePolicy *base = ssim_compare_policy(cmp, 0), *r = ssim_compare_policy(cmp, i);
    g_autoptr(GArray) rows = ssim_compare_attribution(cmp, i);
    SsimTime shown = 0, total = base->result.step_time - r->result.step_time;
    g_string_append_printf(o,
                           "\nwhat %s saved: %.3f ms of step time, by group of ops on the "
                           "critical path (%s -> %s):\n",
                           name(r), ms(total), name(base), name(r));
    g_string_append(o, "  saved ms   on path ms (before -> after)   what\n");
    for (guint k = 0; k < rows->len && k < top; k++) {
        const SsimCompareGroup *a = &g_array_index(rows, SsimCompareGroup, k);
        shown += a->before - a->after;
        g_string_append_printf(o, "  %+8.3f   %9.3f -> %9.3f           %s\n",
                               ms(a->before - a->after), ms(a->before), ms(a->after), a->what);
    }
    if (rows->len > top)
        g_string_append_printf(o, "  %+8.3f   (%u more group%s)\n", ms(total - shown),
                               rows->len - top, rows->len - top == 1 ? "" : "s");
    g_string_append_printf(o, "  %+8.3f   total = step time %s - %s\n", ms(total), name(base),
                           name(r));
}

static void format_table(GString *o, const SsimCompare *cmp, const SsimModel *model,
                         const SsimCluster *cl, guint top)
{
    guint n = ssim_compare_n_policies(cmp);
    const SsimComparePolicy *base = ssim_compare_policy(cmp, 0);
    const SsimParallel *p = &base->par;
    ssim_summary_append_model_line(o, model, p);
    g_string_append_printf(o, "cluster     %s: %u node%s x %u GPUs (%s)\n", cl->name, cl->nodes,
                           cl->nodes == 1 ? "" : "s", cl->gpus_per_node, cl->gpu);
    ssim_summary_append_split_grid(o, p);
    g_string_append_printf(o, ", microbatch %u, global batch %u (%u microbatches), recompute %s",
                           p->microbatch, p->global_batch, ssim_parallel_n_microbatches(p),
                           ssim_recompute_name(p->recompute));
    ssim_summary_append_split_layers(o, p);
    /* The options that change the kernels, when not their defaults. */
    ssim_summary_append_kernel_options(o, p);
    g_string_append_c(o, '\n');
    g_autofree char *grads = ssim_site_set_to_string(&base->placement.grads);
    g_string_append_printf(o,
                           "compiler    latency-hiding scheduler %s, every communication x%u, "
                           "commshift moves gradients: %s\n\n",
                           base->placement.lhs ? "on" : "off", MAX(base->result.comm_repeat, 1u),
                           grads);
    g_string_append(o, "policy             schedule   step ms   tokens/s  tok/s/GPU  TFLOP/s   MFU%"
                       "    gain   exposed ms: tp       pp       dp   extra MiB\n");
    for (guint i = 0; i < n; i++) {
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        const SsimResult *res = &r->result;
        g_string_append_printf(o,
                               "%-18s %-8s %9.3f %10.0f %10.1f %8.1f %6.1f %+6.1f%%          %8.3f "
                               "%8.3f %8.3f %8.1f\n",
                               name(r), r->par.schedule, ms(res->step_time), res->tokens_per_s,
                               per_gpu(res), res->model_tflops_per_gpu, 100 * res->mfu,
                               ssim_compare_gain(cmp, i), ms(res->exposed[SSIM_COMM_TP]),
                               ms(res->exposed[SSIM_COMM_PP]), ms(res->exposed[SSIM_COMM_DP]),
                               (double)res->placement_extra / 1048576.0);
    }
    for (guint i = 1; i < n; i++) {
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        if (r->report.moves == NULL || r->report.moves->len == 0)
            continue;
        g_string_append_printf(o, "\n%s moved:", name(r));
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
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        if (r->kind != SSIM_PLACEMENT_COMMSHIFT && r->kind != SSIM_PLACEMENT_AUTO)
            continue;
        if (strcmp(r->par.schedule, base->par.schedule) != 0)
            continue;
        format_attribution(o, cmp, i, top);
    }
}

#define CSV_HEADER                                                                                 \
    "policy,schedule,step_ms,tokens_per_s,gain_pct,exposed_tp_ms,exposed_pp_ms,exposed_dp_ms,"     \
    "extra_bytes,memory_gib,lhs,comm_repeat,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,"        \
    "recompute,microbatch,global_batch\n"

static void format_csv(GString *o, const SsimCompare *cmp)
{
    g_string_append(o, CSV_HEADER);
    for (guint i = 0; i < ssim_compare_n_policies(cmp); i++) {
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        const SsimResult *res = &r->result;
        g_string_append_printf(
            o,
            "%s,%s,%.6f,%.3f,%.4f,%.6f,%.6f,%.6f,%" G_GUINT64_FORMAT
            ",%.3f,%d,%u,%.3f,%.3f,%.5f,%s,%u,%u\n",
            name(r), r->par.schedule, ms(res->step_time), res->tokens_per_s,
            ssim_compare_gain(cmp, i), ms(res->exposed[SSIM_COMM_TP]),
            ms(res->exposed[SSIM_COMM_PP]), ms(res->exposed[SSIM_COMM_DP]), res->placement_extra,
            (double)res->memory.total / (1024.0 * 1024.0 * 1024.0), r->placement.lhs ? 1 : 0,
            MAX(res->comm_repeat, 1u), per_gpu(res), res->model_tflops_per_gpu, res->mfu,
            ssim_recompute_name(r->par.recompute), r->par.microbatch, r->par.global_batch);
    }
}

static void json_member_double(JsonBuilder *b, const char *member, double value)
{
    json_builder_set_member_name(b, member);
    json_builder_add_double_value(b, value);
}

static void json_member_string(JsonBuilder *b, const char *member, const char *value)
{
    json_builder_set_member_name(b, member);
    json_builder_add_string_value(b, value);
}

/* Policy i as a JSON object: figures, moves and (under the reference's schedule) attribution. */
static void json_policy(JsonBuilder *b, const SsimCompare *cmp, guint i)
{
    const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
    json_builder_begin_object(b);
    json_member_string(b, "policy", name(r));
    json_member_string(b, "schedule", r->par.schedule);
    json_member_double(b, "step_ms", ms(r->result.step_time));
    json_member_double(b, "tokens_per_s", r->result.tokens_per_s);
    json_member_double(b, "tokens_per_s_per_gpu", per_gpu(&r->result));
    json_member_double(b, "model_tflops_per_gpu", r->result.model_tflops_per_gpu);
    json_member_double(b, "mfu", r->result.mfu);
    json_member_double(b, "gain_pct", ssim_compare_gain(cmp, i));
    json_builder_set_member_name(b, "exposed_ms");
    json_builder_begin_object(b);
    for (guint k = 0; k < SSIM_COMM_N; k++)
        json_member_double(b, ssim_comm_class_name(k), ms(r->result.exposed[k]));
    json_builder_end_object(b);
    json_builder_set_member_name(b, "extra_bytes");
    json_builder_add_int_value(b, (gint64)r->result.placement_extra);
    json_builder_set_member_name(b, "moves");
    json_builder_begin_array(b);
    for (guint k = 0; r->report.moves && k < r->report.moves->len; k++)
        json_builder_add_string_value(b, g_ptr_array_index(r->report.moves, k));
    json_builder_end_array(b);
    if (i > 0 && strcmp(r->par.schedule, ssim_compare_policy(cmp, 0)->par.schedule) == 0) {
        g_autoptr(GArray) rows = ssim_compare_attribution(cmp, i);
        json_builder_set_member_name(b, "attribution");
        json_builder_begin_array(b);
        for (guint k = 0; k < rows->len; k++) {
            const SsimCompareGroup *a = &g_array_index(rows, SsimCompareGroup, k);
            json_builder_begin_object(b);
            json_member_string(b, "what", a->what);
            json_member_double(b, "saved_ms", ms(a->before - a->after));
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
    }
    json_builder_end_object(b);
}

static void format_json(GString *o, const SsimCompare *cmp, const SsimModel *model,
                        const SsimCluster *cl)
{
    const SsimComparePolicy *base = ssim_compare_policy(cmp, 0);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_member_string(b, "model", model->name);
    json_member_string(b, "cluster", cl->name);
    json_builder_set_member_name(b, "gpus");
    json_builder_add_int_value(b, base->result.n_gpus);
    g_autofree char *split = ssim_parallel_to_string(&base->par);
    json_member_string(b, "split", split);
    /* What ran, as members (also inside "split"): the recompute mode may have been chosen. */
    json_member_string(b, "recompute", ssim_recompute_name(base->par.recompute));
    json_builder_set_member_name(b, "microbatch");
    json_builder_add_int_value(b, base->par.microbatch);
    json_builder_set_member_name(b, "global_batch");
    json_builder_add_int_value(b, base->par.global_batch);
    json_builder_set_member_name(b, "lhs");
    json_builder_add_boolean_value(b, base->placement.lhs);
    json_builder_set_member_name(b, "comm_repeat");
    json_builder_add_int_value(b, MAX(base->result.comm_repeat, 1u));
    g_autofree char *grads = ssim_site_set_to_string(&base->placement.grads);
    json_member_string(b, "commshift_grads", grads);
    json_builder_set_member_name(b, "policies");
    json_builder_begin_array(b);
    for (guint i = 0; i < ssim_compare_n_policies(cmp); i++)
        json_policy(b, cmp, i);
    json_builder_end_array(b);
    json_builder_end_object(b);
    ssim_json_append(o, b, TRUE);
}

GString *ssim_compare_format(const SsimCompare *cmp, SsimFormat format, guint top)
{
    GString *out = g_string_new(NULL);
    const SsimModel *model = ssim_compare_model(cmp);
    const SsimCluster *cluster = ssim_compare_cluster(cmp);
    if (format == SSIM_FORMAT_CSV)
        format_csv(out, cmp);
    else if (format == SSIM_FORMAT_JSON)
        format_json(out, cmp, model, cluster);
    else
        format_table(out, cmp, model, cluster, top);
    return out;
}

gboolean ssim_compare_plot(const SsimCompare *cmp, const char *image, const SsimGanttView *view,
                           SsimPlotStatus *status, GError **error)
{
    guint n = ssim_compare_n_policies(cmp);
    const SsimModel *model = ssim_compare_model(cmp);
    const SsimComparePolicy *base = ssim_compare_policy(cmp, 0);
    g_autofree SsimStepBar *bars = g_new0(SsimStepBar, n);
    for (guint i = 0; i < n; i++) {
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        bars[i].name = name(r);
        bars[i].step = r->result.step_time;
        memcpy(bars[i].exposed, r->result.exposed, sizeof bars[i].exposed);
    }
    const SsimCluster *cl = ssim_compare_cluster(cmp);
    g_autofree char *title =
        g_strdup_printf("%s on %s, dp %u x tp %u x pp %u: step time by placement", model->name,
                        cl->name, base->par.dp, base->par.tp, base->par.pp);
    SsimStepBars chart = {.bars = bars,
                          .n_bars = n,
                          .label = "policy",
                          .about = "shiftsim compare: step time per placement policy",
                          .title = title};
    *status = SSIM_PLOT_RENDERED;
    SsimPlotStatus one = SSIM_PLOT_RENDERED;
    if (!ssim_step_bars_plot(&chart, image, &one, error))
        return FALSE;
    if (one == SSIM_PLOT_NO_GNUPLOT)
        *status = one;

    /* IMAGE-POLICY.EXT: the extension of `image` when its last component has one. */
    g_autofree char *stem = g_strdup(image);
    char *dot = strrchr(stem, '.');
    const char *ext = dot && !strchr(dot, '/') ? image + (dot - stem) : ".png";
    if (dot && !strchr(dot, '/'))
        *dot = '\0';
    SsimGanttView shown = view ? *view : (SsimGanttView){0};
    if (shown.max_ranks == 0)
        shown.max_ranks = 8;
    for (guint i = 0; i < n; i++) {
        const SsimComparePolicy *r = ssim_compare_policy(cmp, i);
        g_autofree char *gantt = g_strdup_printf("%s-%s%s", stem, name(r), ext);
        g_autofree char *gantt_title =
            g_strdup_printf("%s on %s, dp %u x tp %u x pp %u, placement %s (schedule %s): %.3f ms",
                            model->name, cl->name, r->par.dp, r->par.tp, r->par.pp, name(r),
                            r->par.schedule, ms(r->result.step_time));
        if (!ssim_plot_gantt(ssim_lowered_graph(r->lowered), r->timeline, gantt, &shown,
                             gantt_title, &one, error))
            return FALSE;
        if (one == SSIM_PLOT_NO_GNUPLOT)
            *status = one;
    }
    return TRUE;
}
