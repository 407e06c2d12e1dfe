/*
 * The summary of one simulated iteration (include/shiftsim/summary.h): what ran (model, cluster,
 * split, schedule) and its figures (sim.h's SsimResult), as an aligned table for people, one CSV
 * row under its header, or a JSON object.  It reads the result and the configuration only.
 */
#include <shiftsim/summary.h>

#include <json-glib/json-glib.h>

void ssim_summary_append_split_grid(GString *out, const SsimParallel *par)
{
    g_string_append_printf(out, "split       dp %u x tp %u x pp %u", par->dp, par->tp, par->pp);
    if (par->cp > 1)
        g_string_append_printf(out, " x cp %u", par->cp);
}

void ssim_summary_append_split_layers(GString *out, const SsimParallel *par)
{
    if (!ssim_parallel_uneven(par))
        return;
    g_string_append(out, par->virtual_stages > 1 ? ", chunk layers " : ", stage layers ");
    ssim_parallel_append_stage_layers(out, par);
}

void ssim_summary_append_kernel_options(GString *out, const SsimParallel *par)
{
    if (par->attention != SSIM_ATTENTION_UNFUSED)
        g_string_append_printf(out, ", attention %s", ssim_attention_name(par->attention));
    if (par->transformer_impl != SSIM_TRANSFORMER_IMPL_TE)
        g_string_append_printf(out, ", transformer-impl %s",
                               ssim_transformer_impl_name(par->transformer_impl));
    if (par->fp8 != SSIM_FP8_OFF)
        g_string_append_printf(out, ", fp8 %s", ssim_fp8_name(par->fp8));
    if (par->tp_comm_overlap)
        g_string_append(out, ", tp-comm-overlap on");
    if (par->cross_entropy != SSIM_CROSS_ENTROPY_UNFUSED)
        g_string_append_printf(out, ", cross-entropy %s",
                               ssim_cross_entropy_name(par->cross_entropy));
    if (par->launch_blocking)
        g_string_append(out, ", launch-blocking on");
    if (par->overlap_param_gather)
        g_string_append(out, ", overlap-param-gather on");
    if (par->fsdp_root)
        g_string_append(out, ", fsdp-root on");
    if (par->rmsnorm != SSIM_RMSNORM_AUTO)
        g_string_append_printf(out, ", rmsnorm %s", ssim_rmsnorm_name(par->rmsnorm));
}

void ssim_summary_append_model_line(GString *out, const SsimModel *model, const SsimParallel *par)
{
    g_string_append_printf(out, "model       %s", model->name);
    if (ssim_model_windowed_share(model) > 0 && model->sliding_window < model->seq_len) {
        g_string_append_printf(out, ", sliding window %u on %u of %u layers", model->sliding_window,
                               model->sliding_window_layers, model->layers);
        if (par->attention == SSIM_ATTENTION_UNFUSED)
            g_string_append(out, " (unfused attention computes every score all the same)");
    }
    g_string_append_c(out, '\n');
}

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

static double gib(guint64 b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

static double pct(SsimTime part, SsimTime whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A throughput per GPU of the run (tokens/s per GPU, as Megatron-LM logs it). */
static double per_gpu(double rate, const SsimResult *r)
{
    return r->n_gpus > 0 ? rate / r->n_gpus : 0.0;
}

static void format_table(GString *o, const SsimResult *r, const SsimSimConfig *c)
{
    const SsimParallel *p = c->par;
    const SsimCluster *cl = c->cluster;
    ssim_summary_append_model_line(o, c->model, p);
    g_string_append_printf(o, "cluster     %s: %u node%s x %u GPUs (%s)\n", cl->name, cl->nodes,
                           cl->nodes == 1 ? "" : "s", cl->gpus_per_node, cl->gpu);
    ssim_summary_append_split_grid(o, p);
    g_string_append_printf(o,
                           ", v %u, microbatch %u, global batch %u (%u microbatches), schedule %s",
                           p->virtual_stages, p->microbatch, p->global_batch, r->m,
                           ssim_schedule_kind_name(r->schedule));
    ssim_summary_append_split_layers(o, p);
    g_string_append_c(o, '\n');
    g_string_append_printf(o, "options     seq-parallel %s, recompute %s, zero %u, bucket ",
                           p->sequence_parallel ? "on" : "off", ssim_recompute_name(p->recompute),
                           p->zero_stage);
    if (p->dp_bucket_bytes)
        g_string_append_printf(o, "%.0f MiB", (double)p->dp_bucket_bytes / 1048576.0);
    else
        g_string_append(o, "off");
    g_string_append_printf(o, ", tp-comm %s", ssim_tp_comm_name(p->tp_comm));
    if (p->allow_cross_node_tp)
        g_string_append(o, ", cross-node-tp on");
    if (p->tp_sync_grad)
        g_string_append(o, ", tp-overlap off");
    ssim_summary_append_kernel_options(o, p);
    if (p->step_costs_set) {
        /* Only when changed: the default (Megatron-LM's) is --explain-costs' to tell. */
        guint on = ssim_parallel_step_costs(p, c->model);
        g_string_append(o, ", step costs ");
        gboolean any = FALSE;
        for (guint t = 0; t < SSIM_STEP_COST_N; t++)
            if ((on >> t) & 1u) {
                g_string_append_printf(o, "%s%s", any ? "+" : "", ssim_step_cost_name(t));
                any = TRUE;
            }
        if (!any)
            g_string_append(o, "none");
    }
    g_string_append_c(o, '\n');
    g_string_append_printf(o, "placement   %s", r->placement);
    if (c->placement == NULL)
        g_string_append(o, " (the lowering's own)");
    if (c->placement && c->placement->kind == SSIM_PLACEMENT_COMMSHIFT) {
        g_autofree char *grads = ssim_site_set_to_string(&c->placement->grads);
        g_string_append_printf(o, " (gradients moved: %s)", grads);
    }
    if (c->comm_repeat > 1)
        g_string_append_printf(o, ", every communication x%u", c->comm_repeat);
    g_string_append_printf(o, ", +%.1f MiB of buffers kept alive\n",
                           (double)r->placement_extra / 1048576.0);
    if (c->report && c->report->moves)
        for (guint i = 0; i < c->report->moves->len; i++)
            g_string_append_printf(o, "  moved     %s\n",
                                   (const char *)g_ptr_array_index(c->report->moves, i));
    g_string_append_c(o, '\n');
    g_string_append_printf(o, "step time                %12.3f ms\n", ms(r->step_time));
    g_string_append_printf(o, "tokens/s                 %12.0f\n", r->tokens_per_s);
    g_string_append_printf(o, "tokens/s per GPU         %12.1f\n", per_gpu(r->tokens_per_s, r));
    g_string_append_printf(o, "samples/s                %12.2f\n", r->samples_per_s);
    g_string_append_printf(o, "model TFLOP/s per GPU    %12.1f\n", r->model_tflops_per_gpu);
    g_string_append_printf(o, "hardware TFLOP/s per GPU %12.1f   (with recompute)\n",
                           r->hardware_tflops_per_gpu);
    g_string_append_printf(o, "MFU                      %12.1f %%  (of %.0f TFLOP/s %s)\n",
                           100 * r->mfu, r->peak_flops / 1e12, ssim_dtype_name(c->model->dtype));
    g_string_append_printf(o, "pipeline bubble          %12.1f %%\n", 100 * r->bubble);
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        /* Context parallelism's ring is a layer's own communication, counted with tp's. */
        g_autofree char *label = g_strdup_printf(
            "exposed %s comm",
            k == SSIM_COMM_TP && p->cp > 1 ? "tp+cp" : ssim_comm_class_name((SsimCommClass)k));
        g_string_append_printf(o,
                               "%-26s%12.3f ms  (%.1f %% of step; worst rank %.3f ms; busy %.3f "
                               "ms)\n",
                               label, ms(r->exposed[k]), pct(r->exposed[k], r->step_time),
                               ms(r->exposed_max[k]), ms(r->comm_busy[k]));
    }
    for (guint k = 0; r->has_contention && k < SSIM_COMM_N; k++)
        g_string_append_printf(o,
                               "contention %s            %12.3f ms  (+%.1f %% over %.3f ms "
                               "uncontended)\n",
                               ssim_comm_class_name((SsimCommClass)k), ms(r->contention[k]),
                               pct(r->contention[k], r->uncontended[k]), ms(r->uncontended[k]));
    if (r->has_host)
        g_string_append_printf(o,
                               "host waits               %12.3f ms  (%.1f %% of step; worst rank "
                               "%.3f ms: GPU idle until the host launched a ready kernel)\n",
                               ms(r->host_wait), pct(r->host_wait, r->step_time),
                               ms(r->host_wait_max));
    const SsimMemory *m = &r->memory;
    g_string_append_printf(o,
                           "peak memory per GPU      %12.1f GiB of %.1f GiB%s (stage %u: "
                           "weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f)\n",
                           gib(m->total), gib(r->memory_capacity),
                           r->memory_fits ? "" : " -- DOES NOT FIT", m->stage, gib(m->weights),
                           gib(m->gradients), gib(m->optimizer), gib(m->activations));
    g_string_append_printf(
        o, "simulated                %u rank%s (%s), %u ops, %" G_GUINT64_FORMAT " events\n",
        r->n_graph_ranks, r->n_graph_ranks == 1 ? "" : "s",
        c->exact    ? "every GPU"
        : p->cp > 1 ? "a representative per stage and cp rank"
                    : "one representative per stage",
        r->n_ops, r->events);
}

#define CSV_HEADER                                                                                 \
    "model,cluster,gpus,dp,tp,pp,v,microbatch,global_batch,microbatches,schedule,placement,"       \
    "comm_repeat,seq_parallel,"                                                                    \
    "recompute,zero,bucket_bytes,tp_comm,step_ms,tokens_per_s,samples_per_s,model_tflops_per_gpu," \
    "hardware_tflops_per_gpu,mfu,hfu,bubble,exposed_tp_ms,exposed_pp_ms,exposed_dp_ms,"            \
    "peak_memory_gib,memory_capacity_gib,memory_fits,tokens_per_s_per_gpu\n"

static void format_csv(GString *o, const SsimResult *r, const SsimSimConfig *c)
{
    const SsimParallel *p = c->par;
    g_autoptr(GString) header = g_string_new(CSV_HEADER);
    if (r->has_contention) {
        g_string_truncate(header, header->len - 1);
        g_string_append(header, ",contention_tp_ms,contention_pp_ms,contention_dp_ms,"
                                "uncontended_tp_ms,uncontended_pp_ms,uncontended_dp_ms\n");
    }
    if (r->has_host) {
        g_string_truncate(header, header->len - 1);
        g_string_append(header, ",host_wait_ms,host_wait_max_ms\n");
    }
    if (p->cp > 1) {
        g_string_truncate(header, header->len - 1);
        g_string_append(header, ",cp\n");
    }
    g_string_append(o, header->str);
    g_string_append_printf(
        o,
        "%s,%s,%u,%u,%u,%u,%u,%u,%u,%u,%s,%s,%u,%d,%s,%u,%" G_GUINT64_FORMAT ",%s,%.6f,%.3f,%.4f,"
        "%.3f,%.3f,%.5f,%.5f,%.5f,%.6f,%.6f,%.6f,%.3f,%.3f,%d,%.3f\n",
        c->model->name, c->cluster->name, r->n_gpus, p->dp, p->tp, p->pp, p->virtual_stages,
        p->microbatch, p->global_batch, r->m, ssim_schedule_kind_name(r->schedule), r->placement,
        MAX(c->comm_repeat, 1u), p->sequence_parallel ? 1 : 0, ssim_recompute_name(p->recompute),
        p->zero_stage, p->dp_bucket_bytes, ssim_tp_comm_name(p->tp_comm), ms(r->step_time),
        r->tokens_per_s, r->samples_per_s, r->model_tflops_per_gpu, r->hardware_tflops_per_gpu,
        r->mfu, r->hfu, r->bubble, ms(r->exposed[0]), ms(r->exposed[1]), ms(r->exposed[2]),
        gib(r->memory.total), gib(r->memory_capacity), r->memory_fits ? 1 : 0,
        per_gpu(r->tokens_per_s, r));
    if (r->has_contention) {
        g_string_truncate(o, o->len - 1);
        for (guint k = 0; k < SSIM_COMM_N; k++)
            g_string_append_printf(o, ",%.6f", ms(r->contention[k]));
        for (guint k = 0; k < SSIM_COMM_N; k++)
            g_string_append_printf(o, ",%.6f", ms(r->uncontended[k]));
        g_string_append_c(o, '\n');
    }
    if (r->has_host) {
        g_string_truncate(o, o->len - 1);
        g_string_append_printf(o, ",%.6f,%.6f\n", ms(r->host_wait), ms(r->host_wait_max));
    }
    if (p->cp > 1) {
        g_string_truncate(o, o->len - 1);
        g_string_append_printf(o, ",%u\n", p->cp);
    }
}

static void format_json(GString *o, const SsimResult *r, const SsimSimConfig *c)
{
    const SsimParallel *p = c->par;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, c->model->name);
    json_builder_set_member_name(b, "cluster");
    json_builder_add_string_value(b, c->cluster->name);
    json_builder_set_member_name(b, "gpus");
    json_builder_add_int_value(b, r->n_gpus);
    json_builder_set_member_name(b, "parallel");
    g_autofree char *spec = ssim_parallel_to_string(p);
    json_builder_add_string_value(b, spec);
    json_builder_set_member_name(b, "schedule");
    json_builder_add_string_value(b, ssim_schedule_kind_name(r->schedule));
    json_builder_set_member_name(b, "placement");
    json_builder_add_string_value(b, r->placement);
    /* What ran, as members of their own (also inside "parallel"): a default or an automatic
     * choice (the recompute mode that fits) is named, not only implied. */
    json_builder_set_member_name(b, "recompute");
    json_builder_add_string_value(b, ssim_recompute_name(p->recompute));
    json_builder_set_member_name(b, "microbatch");
    json_builder_add_int_value(b, p->microbatch);
    json_builder_set_member_name(b, "global_batch");
    json_builder_add_int_value(b, p->global_batch);
    json_builder_set_member_name(b, "comm_repeat");
    json_builder_add_int_value(b, MAX(c->comm_repeat, 1u));
    json_builder_set_member_name(b, "microbatches");
    json_builder_add_int_value(b, r->m);
    json_builder_set_member_name(b, "step_ms");
    json_builder_add_double_value(b, ms(r->step_time));
    json_builder_set_member_name(b, "tokens_per_s");
    json_builder_add_double_value(b, r->tokens_per_s);
    json_builder_set_member_name(b, "tokens_per_s_per_gpu");
    json_builder_add_double_value(b, per_gpu(r->tokens_per_s, r));
    json_builder_set_member_name(b, "samples_per_s");
    json_builder_add_double_value(b, r->samples_per_s);
    json_builder_set_member_name(b, "model_tflops_per_gpu");
    json_builder_add_double_value(b, r->model_tflops_per_gpu);
    json_builder_set_member_name(b, "hardware_tflops_per_gpu");
    json_builder_add_double_value(b, r->hardware_tflops_per_gpu);
    json_builder_set_member_name(b, "mfu");
    json_builder_add_double_value(b, r->mfu);
    json_builder_set_member_name(b, "hfu");
    json_builder_add_double_value(b, r->hfu);
    json_builder_set_member_name(b, "bubble");
    json_builder_add_double_value(b, r->bubble);
    json_builder_set_member_name(b, "exposed_ms");
    json_builder_begin_object(b);
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        json_builder_set_member_name(b, ssim_comm_class_name((SsimCommClass)k));
        json_builder_add_double_value(b, ms(r->exposed[k]));
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "exposed_max_ms");
    json_builder_begin_object(b);
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        json_builder_set_member_name(b, ssim_comm_class_name((SsimCommClass)k));
        json_builder_add_double_value(b, ms(r->exposed_max[k]));
    }
    json_builder_end_object(b);
    for (int u = 0; r->has_contention && u < 2; u++) {
        json_builder_set_member_name(b, u ? "uncontended_ms" : "contention_ms");
        json_builder_begin_object(b);
        for (guint k = 0; k < SSIM_COMM_N; k++) {
            json_builder_set_member_name(b, ssim_comm_class_name((SsimCommClass)k));
            json_builder_add_double_value(b, ms(u ? r->uncontended[k] : r->contention[k]));
        }
        json_builder_end_object(b);
    }
    if (r->has_host) {
        json_builder_set_member_name(b, "host_wait_ms");
        json_builder_add_double_value(b, ms(r->host_wait));
        json_builder_set_member_name(b, "host_wait_max_ms");
        json_builder_add_double_value(b, ms(r->host_wait_max));
    }
    json_builder_set_member_name(b, "memory");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "stage");
    json_builder_add_int_value(b, r->memory.stage);
    json_builder_set_member_name(b, "total_bytes");
    json_builder_add_int_value(b, (gint64)r->memory.total);
    json_builder_set_member_name(b, "weights_bytes");
    json_builder_add_int_value(b, (gint64)r->memory.weights);
    json_builder_set_member_name(b, "gradients_bytes");
    json_builder_add_int_value(b, (gint64)r->memory.gradients);
    json_builder_set_member_name(b, "optimizer_bytes");
    json_builder_add_int_value(b, (gint64)r->memory.optimizer);
    json_builder_set_member_name(b, "activations_bytes");
    json_builder_add_int_value(b, (gint64)r->memory.activations);
    json_builder_set_member_name(b, "capacity_bytes");
    json_builder_add_int_value(b, (gint64)r->memory_capacity);
    json_builder_set_member_name(b, "fits");
    json_builder_add_boolean_value(b, r->memory_fits);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "ranks_simulated");
    json_builder_add_int_value(b, r->n_graph_ranks);
    json_builder_set_member_name(b, "exact");
    json_builder_add_boolean_value(b, c->exact);
    json_builder_set_member_name(b, "ops");
    json_builder_add_int_value(b, r->n_ops);
    json_builder_end_object(b);
    ssim_json_append(o, b, TRUE);
}

GString *ssim_result_format(const SsimResult *result, const SsimSimConfig *config,
                            SsimFormat format)
{
    GString *o = g_string_new(NULL);
    switch (format) {
    case SSIM_FORMAT_CSV:
        format_csv(o, result, config);
        break;
    case SSIM_FORMAT_JSON:
        format_json(o, result, config);
        break;
    case SSIM_FORMAT_TABLE:
    default:
        format_table(o, result, config);
        break;
    }
    return o;
}
