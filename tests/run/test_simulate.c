/*
 * The simulation driver end to end.  Oracles: with every layer kernel costing the same and
 * communication free, the measured bubble is (p-1)/m for GPipe, 1F1B and the XLA lock-step
 * schedule and (p-1)/(v m) for interleaved 1F1B (Narayanan et al. 2021); a hand-counted step and
 * exposed TP time when collectives cost half a kernel; representative and exact lowering giving
 * the same figures on an uncongested network; determinism; the memory check and every message
 * the driver itself produces; the verb's exit codes.
 */
#include <criterion/criterion.h>

#include <shiftsim/sim.h>
#include <shiftsim/summary.h>
#include "src/app/verbs.h"

#include <math.h>
#include <string.h>

/* Every layer kernel costs 1 us; the embedding, the head, the loss and the optimizer are free,
 * so that all stages carry the same work; communication costs `comm` ns. */
typedef struct {
    SsimTime kernel, comm;
    gboolean all_kernels; /* charge the head, embedding and optimizer kernels too */
} Uniform;

static SsimTime uniform_time(const SsimCostModel *cm, const SsimGraph *g, guint32 i, guint n)
{
    const Uniform *u = cm->data;
    const SsimOp *op = ssim_graph_op(g, i);
    (void)n;
    if (op->kind != SSIM_OP_COMPUTE)
        return u->comm;
    if (u->all_kernels)
        return u->kernel;
    static const char *const free_kernels[] = {
        "embed",     "embed.bwd",        "final_norm",    "lm_head",        "loss",
        "loss.bwd",  "lm_head.dgrad",    "lm_head.wgrad", "final_norm.bwd", "optimizer",
        "clip.norm", "loss_scale.check", "grad.zero"};
    const char *name = ssim_graph_string(g, op->name);
    for (gsize k = 0; k < G_N_ELEMENTS(free_kernels); k++)
        if (strcmp(name, free_kernels[k]) == 0)
            return 0;
    return u->kernel;
}

static SsimParallel split(guint dp, guint tp, guint pp, guint v, guint m, const char *schedule)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = dp, p.tp = tp, p.pp = pp, p.virtual_stages = v, p.microbatch = 1;
    p.global_batch = dp * m;
    g_strlcpy(p.schedule, schedule, sizeof p.schedule);
    return p;
}

/* Lowers and replays `par` with cost model `u`, and measures. */
static SsimResult run_uniform(const SsimModel *model, const SsimParallel *par, Uniform u)
{
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(par, model, NULL, &error), "%s", error ? error->message : "");
    SsimScheduleKind kind;
    cr_assert(ssim_schedule_kind_from_name(par->schedule, &kind));
    g_autoptr(SsimSchedule) s = ssim_schedule_new(kind, par->pp, par->virtual_stages,
                                                  ssim_parallel_n_microbatches(par), &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    g_autoptr(SsimLowered) l = ssim_lower(model, par, s, NULL, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    SsimCostModel cm = {.op_time = uniform_time, .data = &u};
    g_autoptr(SsimTimeline) t = ssim_runtime_run(ssim_lowered_graph(l), &cm, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    SsimResult r = {0};
    ssim_result_measure(&r, l, t, model, par, 1e15);
    return r;
}

static void expect_bubble(const char *schedule, guint p, guint v, guint m, double want)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 8;
    SsimParallel par = split(1, 1, p, v, m, schedule);
    SsimResult r = run_uniform(model, &par, (Uniform){.kernel = 1000, .comm = 0});
    cr_assert(fabs(r.bubble - want) < 1e-9, "%s p %u v %u m %u: bubble %.6f, want %.6f", schedule,
              p, v, m, r.bubble, want);
}

Test(simulate, bubble_gpipe)
{
    expect_bubble("gpipe", 4, 1, 8, 3.0 / 8);
    expect_bubble("gpipe", 2, 1, 5, 1.0 / 5);
}

Test(simulate, bubble_1f1b)
{
    expect_bubble("1f1b", 4, 1, 8, 3.0 / 8);
    expect_bubble("1f1b", 8, 1, 16, 7.0 / 16);
    expect_bubble("1f1b", 4, 1, 3, 3.0 / 3);
    expect_bubble("1f1b", 1, 1, 4, 0.0);
}

Test(simulate, bubble_interleaved)
{
    expect_bubble("interleaved", 4, 2, 8, 3.0 / 16);
    expect_bubble("interleaved", 2, 4, 4, 1.0 / 16);
    expect_bubble("interleaved", 4, 2, 4, 3.0 / 8);
}

Test(simulate, bubble_xla_lockstep)
{
    expect_bubble("xla", 4, 1, 8, 3.0 / 8);
    expect_bubble("xla", 2, 1, 3, 1.0 / 3);
}

Test(simulate, xla_lockstep_by_hand)
{
    /* p = 2, m = 2, one layer per stage, tp 1: a forward phase is 13 kernels (13 us, the rotary
     * positions' one among them), a backward 17 (17 us), and every collective-permute costs 0.5 us.
     * Lock-step: 3 forward iterations of 13 + 0.5 us and 3 backward iterations of 17 + 0.5 us,
     * whatever stage is idle in each. */
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 2;
    model->block = SSIM_BLOCK_SEQUENTIAL;
    SsimParallel par = split(1, 1, 2, 1, 2, "xla");
    SsimResult r = run_uniform(model, &par, (Uniform){.kernel = 1000, .comm = 500});
    /* Then the gradient norm's all-reduce over the two stages (step cost clip; its local pass
     * and the optimizer are free here): 0.5 us after stage 0's last slot. */
    cr_assert_eq(r.step_time, 3 * (13000 + 500) + 3 * (17000 + 500) + 500);
    /* Every permute runs while the GPU computes nothing. */
    cr_assert_eq(r.exposed[SSIM_COMM_PP], 6 * 500);
}

/* GPT-3's shape cut to 2 layers. */
static SsimModel *gpt3_two_layers(void)
{
    GError *error = NULL;
    SsimModel *model = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(model, "%s", error ? error->message : "");
    model->layers = 2;
    return model;
}

Test(simulate, exposed_tp_and_step_by_hand)
{
    /* GPT-3 shape cut to 2 layers, tp 2, one stage, 2 microbatches; every kernel 1 us, every
     * collective 0.5 us.  Per microbatch the blocking TP collectives are 2 per layer forward,
     * the embedding's and the loss's: 6; the backward's 2 per layer and the head's overlap a
     * weight-gradient kernel and hide completely.  Kernels per microbatch: embed + 2 x 12 +
     * 3 (head) forward, 4 (head) + 2 x 16 + embed.bwd backward = 65; then the step's end:
     * the gradient norm's local pass (1 us), its all-reduce over the tp group (0.5 us, exposed:
     * the optimizer waits for it), the optimizer (1 us) and the gradient buffer's zeroing
     * (1 us). */
    g_autoptr(SsimModel) model = gpt3_two_layers();
    SsimParallel par = split(1, 2, 1, 1, 2, "1f1b");
    SsimResult r = run_uniform(model, &par, (Uniform){1000, 500, TRUE});
    cr_assert_eq(r.exposed[SSIM_COMM_TP], 2 * 6 * 500);
    cr_assert_eq(r.comm_busy[SSIM_COMM_TP], 2 * (6 + 5) * 500);
    cr_assert_eq(r.exposed[SSIM_COMM_PP], 0);
    cr_assert_eq(r.exposed[SSIM_COMM_DP], 500);
    cr_assert_eq(r.step_time, (2 * 65 + 3) * 1000 + 2 * 6 * 500 + 500);
    /* The per-iteration terms as --explain-costs reports them: clip's pass and all-reduce,
     * Adam's kernel and the zeroing; no dp, so the gradient-reduction term has nothing. */
    cr_assert_eq(r.step_cost_ops[SSIM_STEP_COST_CLIP], 2);
    cr_assert_eq(r.step_cost_time[SSIM_STEP_COST_CLIP], 1000 + 500);
    cr_assert_eq(r.step_cost_ops[SSIM_STEP_COST_OPTIMIZER], 2);
    cr_assert_eq(r.step_cost_time[SSIM_STEP_COST_OPTIMIZER], 2000);
    cr_assert_eq(r.step_cost_ops[SSIM_STEP_COST_GRAD_FP32], 0);
    cr_assert(r.step_costs_on & (1u << SSIM_STEP_COST_GRAD_FP32), "bf16: on by default");
    /* With full recompute the recomputed forward's 2 collectives per layer block too. */
    par.recompute = SSIM_RECOMPUTE_FULL;
    r = run_uniform(model, &par, (Uniform){1000, 500, TRUE});
    cr_assert_eq(r.exposed[SSIM_COMM_TP], 2 * (6 + 4) * 500);
}

/* Transformer Engine's tensor-parallel overlap (tp_comm_overlap), on the same job with sequence
 * parallelism.  Without it, per microbatch, the blocking collectives are 4 a layer forward (the
 * all-gathers before the QKV and MLP-up GEMMs, the reduce-scatters after the output and MLP-down
 * GEMMs), the embedding's reduce-scatter, the head's all-gather and the loss's all-reduce: 11;
 * backward 2 a layer (the output gradients' all-gathers before the two row-parallel GEMMs'
 * input gradients) and the embedding's all-gather: 5; the rest run beside a kernel and hide.
 * With it, each layer's collectives run beside their GEMM (1 us, longer than the 0.5 us
 * collective) and hide; the embedding's and the head's (Megatron-LM's own layers) still block:
 * 3 forward and 1 backward.  The step loses exactly the hidden ones. */
Test(simulate, tp_comm_overlap_by_hand)
{
    GError *error = NULL;
    g_autoptr(SsimModel) model = gpt3_two_layers();
    SsimParallel par = split(1, 2, 1, 1, 2, "1f1b");
    cr_assert(ssim_parallel_set(&par, "sp", "on", NULL));
    SsimResult off = run_uniform(model, &par, (Uniform){1000, 500, TRUE});
    cr_assert(ssim_parallel_set(&par, "tp_comm_overlap", "on", NULL));
    SsimResult on = run_uniform(model, &par, (Uniform){1000, 500, TRUE});
    cr_assert_eq(off.exposed[SSIM_COMM_TP], 2 * (11 + 5) * 500, "%" G_GINT64_FORMAT,
                 off.exposed[SSIM_COMM_TP]);
    cr_assert_eq(on.exposed[SSIM_COMM_TP], 2 * (3 + 1) * 500, "%" G_GINT64_FORMAT,
                 on.exposed[SSIM_COMM_TP]);
    cr_assert_eq(on.comm_busy[SSIM_COMM_TP], off.comm_busy[SSIM_COMM_TP]);
    cr_assert_eq(off.step_time - on.step_time, 2 * 12 * 500);
    /* The same kernels and collectives, only their order and overlap differ. */
    cr_assert_eq(on.n_ops, off.n_ops);
    /* Megatron-LM: it needs sequence parallelism (at tp > 1) and Transformer Engine's layers. */
    par.sequence_parallel = FALSE;
    par.tp_comm = SSIM_TP_COMM_ALLREDUCE;
    cr_assert_not(ssim_parallel_validate(&par, model, NULL, &error));
    cr_assert(strstr(error->message, "tp_comm_overlap needs sequence parallelism"), "%s",
              error->message);
    g_clear_error(&error);
    cr_assert(ssim_parallel_set(&par, "sp", "on", NULL));
    par.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    cr_assert_not(ssim_parallel_validate(&par, model, NULL, &error));
    cr_assert(strstr(error->message, "needs transformer_impl = transformer_engine"), "%s",
              error->message);
    g_clear_error(&error);
}

static SsimCluster *cluster_nodes(guint nodes)
{
    SsimCluster *c = ssim_cluster_default();
    ssim_cluster_set_nodes(c, nodes);
    return c;
}

/* Every timing figure of two runs, to the nanosecond (and the same floating-point sums). */
static void expect_same_figures(const SsimResult *a, const SsimResult *b, const char *what)
{
    cr_assert_eq(a->step_time, b->step_time, "%s: step %" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT,
                 what, a->step_time, b->step_time);
    cr_assert_float_eq(a->bubble, b->bubble, 1e-12, "%s: bubble", what);
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        cr_assert_eq(a->exposed[k], b->exposed[k], "%s: exposed class %u", what, k);
        cr_assert_eq(a->exposed_max[k], b->exposed_max[k], "%s: exposed_max class %u", what, k);
        cr_assert_eq(a->comm_busy[k], b->comm_busy[k], "%s: busy class %u", what, k);
        cr_assert_eq(a->contention[k], b->contention[k], "%s: contention class %u", what, k);
        cr_assert_eq(a->uncontended[k], b->uncontended[k], "%s: uncontended class %u", what, k);
    }
    cr_assert_float_eq(a->model_tflops_per_gpu, b->model_tflops_per_gpu, 1e-9, "%s", what);
}

/* The exact mode both ways: every GPU replaying its copy of the stage program (the default) and
 * the explicit graph where the lowering emits every GPU's program on its own (exact_graph).  The
 * two simulate the same GPUs, ops and events, so they agree on every figure whatever the
 * network does; returns the first. */
static SsimResult exact_both_ways(SsimSimConfig c)
{
    SsimResult replicated, graph;
    GError *error = NULL;
    c.exact = TRUE;
    c.exact_graph = FALSE;
    cr_assert(ssim_simulate(&c, &replicated, NULL, NULL, &error), "%s",
              error ? error->message : "");
    c.exact_graph = TRUE;
    cr_assert(ssim_simulate(&c, &graph, NULL, NULL, &error), "%s", error ? error->message : "");
    expect_same_figures(&replicated, &graph, "replicated vs explicit exact");
    cr_assert_eq(replicated.n_graph_ranks, graph.n_graph_ranks);
    cr_assert_eq(replicated.n_ops, graph.n_ops);
    cr_assert_eq(replicated.events, graph.events);
    return replicated;
}

Test(simulate, representative_equals_exact)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = cluster_nodes(2);
    SsimParallel par = split(4, 2, 2, 1, 4, "1f1b");
    par.dp_bucket_bytes = 64u << 20;
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult a, b;
    GError *error = NULL;
    cr_assert(ssim_simulate(&c, &a, NULL, NULL, &error), "%s", error ? error->message : "");
    b = exact_both_ways(c);
    cr_assert_eq(b.n_graph_ranks, 16);
    cr_assert_eq(a.n_graph_ranks, 2);
    cr_assert_eq(b.n_ops, 8 * a.n_ops);
    expect_same_figures(&a, &b, "representative vs exact");
    /* With the cluster's interference, ZeRO-1 and the commshift placement as well. */
    cluster->overlap_slowdown = 1.25;
    par.zero_stage = 1;
    SsimPlacement commshift = SSIM_PLACEMENT_INIT;
    commshift.kind = SSIM_PLACEMENT_COMMSHIFT;
    c.placement = &commshift;
    cr_assert(ssim_simulate(&c, &a, NULL, NULL, &error), "%s", error ? error->message : "");
    b = exact_both_ways(c);
    expect_same_figures(&a, &b, "representative vs exact, interference, zero-1, commshift");
    /* ZeRO-2 and 3: every microbatch's reduce-scatters and (3) the weights' gathers. */
    SsimPlacement megatron = SSIM_PLACEMENT_INIT;
    megatron.kind = SSIM_PLACEMENT_MEGATRON;
    c.placement = &megatron;
    par.dp_bucket_bytes = 0;
    for (guint zero = 2; zero <= 3; zero++) {
        par.zero_stage = zero;
        cr_assert(ssim_simulate(&c, &a, NULL, NULL, &error), "%s", error ? error->message : "");
        b = exact_both_ways(c);
        expect_same_figures(&a, &b,
                            zero == 2 ? "representative vs exact, zero-2"
                                      : "representative vs exact, zero-3");
    }
}

/* Context parallelism: the representative lowering emits a stage's cp GPUs (its ring between real
 * ranks) and replicates them over tp and the replicas; the exact one every GPU.  Same figures,
 * with the distributed optimizer sharded over dp x cp too. */
Test(simulate, representative_equals_exact_context_parallel)
{
    GError *error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load("llama-3.1-8b", &error);
    cr_assert_not_null(model, "%s", error ? error->message : "");
    model->layers = 4;
    model->seq_len = 2048;
    g_autoptr(SsimCluster) cluster = cluster_nodes(2);
    SsimParallel par = split(2, 2, 2, 1, 4, "1f1b");
    par.cp = 2;
    par.attention = SSIM_ATTENTION_FLASH;
    SsimPlacement megatron = SSIM_PLACEMENT_INIT;
    megatron.kind = SSIM_PLACEMENT_MEGATRON;
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par, .placement = &megatron};
    for (guint zero = 0; zero <= 1; zero++) {
        par.zero_stage = zero;
        SsimResult a, b;
        cr_assert(ssim_simulate(&c, &a, NULL, NULL, &error), "%s", error ? error->message : "");
        b = exact_both_ways(c);
        cr_assert_eq(a.n_graph_ranks, 4);
        cr_assert_eq(b.n_graph_ranks, 16);
        cr_assert_eq(b.n_ops, 4 * a.n_ops);
        expect_same_figures(&a, &b, zero ? "cp 2, zero-1" : "cp 2");
        /* The ring is communication the layer waits for: counted with tp's exposed time. */
        cr_assert_gt(a.comm_busy[SSIM_COMM_TP], 0);
    }
}

/* The flow-level network in place of the closed forms: on this uncongested 2-node split both
 * price the TP ring and the inter-node DP reduction alike, so the step agrees closely; in
 * representative mode the network must still charge each collective with its logical group
 * (a one-member group would make communication free and the step much shorter). */
Test(simulate, flow_network_agrees_when_uncongested)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = cluster_nodes(2);
    SsimParallel par = split(4, 2, 2, 1, 4, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult a, b, e;
    GError *error = NULL;
    cr_assert(ssim_simulate(&c, &a, NULL, NULL, &error), "%s", error ? error->message : "");
    c.flow_network = TRUE;
    cr_assert(ssim_simulate(&c, &b, NULL, NULL, &error), "%s", error ? error->message : "");
    e = exact_both_ways(c);
    double rel = fabs((double)(b.step_time - a.step_time)) / (double)a.step_time;
    cr_assert(rel < 0.01, "flow %" G_GINT64_FORMAT " vs analytic %" G_GINT64_FORMAT, b.step_time,
              a.step_time);
    cr_assert_gt(b.comm_busy[SSIM_COMM_TP], 0);
    cr_assert_gt(b.comm_busy[SSIM_COMM_DP], 0);
    /* Representative and exact agree to the nanosecond. */
    cr_assert_eq(e.step_time, b.step_time);
    for (guint k = 0; k < SSIM_COMM_N; k++)
        cr_assert_eq(e.exposed[k], b.exposed[k], "class %u", k);
}

/* A congested fabric: four GPUs share each NIC, so the data-parallel rings of a stage's four
 * tensor-parallel ranks (and their pipeline transfers) contend on it.  The representative run
 * charges those links with its copies' traffic and so agrees with the exact run to the
 * nanosecond; the contention is real (the same split with a NIC per GPU is faster). */
Test(simulate, flow_network_representative_equals_exact_when_congested)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = cluster_nodes(4);
    SsimParallel par = split(4, 4, 2, 1, 8, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par, .flow_network = TRUE};
    SsimResult free_nics, rep, exact;
    GError *error = NULL;
    cr_assert(ssim_simulate(&c, &free_nics, NULL, NULL, &error), "%s", error ? error->message : "");
    cluster->nics_per_node = 2;
    cluster->rails = 2;
    cluster->gpus_per_nic = 4;
    cr_assert(ssim_simulate(&c, &rep, NULL, NULL, &error), "%s", error ? error->message : "");
    exact = exact_both_ways(c);
    cr_assert_eq(rep.n_graph_ranks, 2);
    cr_assert_eq(exact.n_graph_ranks, 32);
    cr_assert_gt(rep.step_time, free_nics.step_time + free_nics.step_time / 20);
    expect_same_figures(&rep, &exact, "representative vs exact, congested");
    cr_assert(exact.has_contention);
}

/* Where the copies of a stage do not see the same network, the representative is only an
 * estimate and the exact run is the answer: on 4-GPU nodes, 3 x 2 x 2 = 12 GPUs put some
 * pipeline pairs inside a node and others across two, so the copies' transfers take different
 * times and drift apart.  The replicated exact run must follow each copy through that drift and
 * match every collective instance with the right copies: it agrees with the explicit per-GPU
 * graph on every figure, and differs from the representative (which times copy 0 alone). */
Test(simulate, replicated_exact_follows_copies_that_differ)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    cluster->gpus_per_node = 4;
    cluster->nics_per_node = 4;
    cluster->rails = 4;
    cluster->gpus_per_nic = 1;
    ssim_cluster_set_nodes(cluster, 3);
    SsimParallel par = split(3, 2, 2, 1, 8, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par, .flow_network = TRUE};
    SsimResult rep;
    GError *error = NULL;
    cr_assert(ssim_simulate(&c, &rep, NULL, NULL, &error), "%s", error ? error->message : "");
    SsimResult exact = exact_both_ways(c);
    cr_assert_eq(exact.n_graph_ranks, 12);
    cr_assert_neq(rep.exposed[SSIM_COMM_PP], exact.exposed[SSIM_COMM_PP],
                  "the copies' pipeline transfers should differ from the representative's");
}

Test(simulate, default_configuration)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert(ssim_parallel_suggest(&par, model, cluster, NULL));
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    GError *error = NULL;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_gt(r.step_time, 0);
    cr_assert(r.mfu > 0.05 && r.mfu < 1, "mfu %g", r.mfu);
    cr_assert_float_eq(r.tokens_per_s, r.samples_per_s * model->seq_len, 1e-6 * r.tokens_per_s);
    cr_assert_float_eq(r.model_flops, ssim_model_iteration_flops(model, par.global_batch),
                       1e-6 * r.model_flops);
    cr_assert(r.memory_fits);
    cr_assert_gt(r.memory.total, 0);

    /* With full recompute the hardware FLOPs add the forward again (the model's count), the
     * model FLOPs do not, and the two utilisations keep their ratio. */
    par.recompute = SSIM_RECOMPUTE_FULL;
    SsimResult f;
    cr_assert(ssim_simulate(&c, &f, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_float_eq(f.model_flops, r.model_flops, 1e-9 * r.model_flops);
    double hw = ssim_model_hardware_flops(model, par.global_batch, SSIM_RECOMPUTE_FULL);
    cr_assert_float_eq(f.hardware_flops, hw, 1e-6 * hw);
    cr_assert_gt(f.hardware_flops, 1.2 * f.model_flops);
    cr_assert_float_eq(f.hfu / f.mfu, f.hardware_flops / f.model_flops, 1e-9);
}

Test(simulate, deterministic)
{
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", NULL);
    cr_assert_not_null(model);
    model->layers = 16;
    g_autoptr(SsimCluster) cluster = cluster_nodes(4);
    SsimParallel par = split(2, 4, 4, 2, 8, "interleaved");
    par.recompute = SSIM_RECOMPUTE_SELECTIVE;
    par.dp_bucket_bytes = 32u << 20;
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par, .ignore_memory = TRUE};
    SsimResult a, b;
    cr_assert(ssim_simulate(&c, &a, NULL, NULL, NULL));
    cr_assert(ssim_simulate(&c, &b, NULL, NULL, NULL));
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    for (int f = SSIM_FORMAT_TABLE; f <= SSIM_FORMAT_JSON; f++) {
        g_autoptr(GString) x = ssim_result_format(&a, &c, (SsimFormat)f);
        g_autoptr(GString) y = ssim_result_format(&b, &c, (SsimFormat)f);
        cr_assert_str_eq(x->str, y->str);
    }
}

Test(simulate, formats)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(2, 2, 2, 1, 4, "gpipe");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, NULL));
    g_autoptr(GString) table = ssim_result_format(&r, &c, SSIM_FORMAT_TABLE);
    const char *rows[] = {"step time",
                          "tokens/s",
                          "samples/s",
                          "model TFLOP/s per GPU",
                          "MFU",
                          "pipeline bubble",
                          "exposed tp comm",
                          "exposed pp comm",
                          "exposed dp comm",
                          "peak memory per GPU"};
    for (gsize i = 0; i < G_N_ELEMENTS(rows); i++)
        cr_assert(strstr(table->str, rows[i]), "table lacks '%s'", rows[i]);
    g_autoptr(GString) csv = ssim_result_format(&r, &c, SSIM_FORMAT_CSV);
    g_auto(GStrv) lines = g_strsplit(csv->str, "\n", -1);
    cr_assert_eq(g_strv_length(lines), 3); /* header, row, "" */
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    g_auto(GStrv) row = g_strsplit(lines[1], ",", -1);
    cr_assert_eq(g_strv_length(head), g_strv_length(row));
    g_autoptr(GString) json = ssim_result_format(&r, &c, SSIM_FORMAT_JSON);
    cr_assert(strstr(json->str, "\"step_ms\""));
    cr_assert(strstr(json->str, "\"exposed_ms\""));
}

/* The table's model line says a sliding window that shortens the sequence's attention, and that
 * unfused attention computes every score all the same; no window, no words. */
Test(simulate, model_line_names_a_sliding_window)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    SsimParallel par = split(2, 2, 2, 1, 4, "gpipe");
    g_autoptr(GString) plain = g_string_new(NULL);
    ssim_summary_append_model_line(plain, model, &par);
    cr_assert_str_eq(plain->str, "model       gpt-j-6b\n");
    model->sliding_window = 512;
    model->sliding_window_layers = 3;
    g_autoptr(GString) unfused = g_string_new(NULL);
    ssim_summary_append_model_line(unfused, model, &par);
    cr_assert_str_eq(unfused->str, "model       gpt-j-6b, sliding window 512 on 3 of 4 layers "
                                   "(unfused attention computes every score all the same)\n");
    par.attention = SSIM_ATTENTION_FLASH;
    g_autoptr(GString) flash = g_string_new(NULL);
    ssim_summary_append_model_line(flash, model, &par);
    cr_assert_str_eq(flash->str, "model       gpt-j-6b, sliding window 512 on 3 of 4 layers\n");
    /* A window as long as the sequence changes nothing, and is not said. */
    model->sliding_window = model->seq_len;
    g_autoptr(GString) whole = g_string_new(NULL);
    ssim_summary_append_model_line(whole, model, &par);
    cr_assert_str_eq(whole->str, "model       gpt-j-6b\n");
}

/* Every format names the schedule, placement, recompute mode and batch that ran. */
Test(simulate, outputs_name_what_ran)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(2, 2, 2, 1, 4, "gpipe");
    par.recompute = SSIM_RECOMPUTE_SELECTIVE;
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, NULL));
    g_autoptr(GString) table = ssim_result_format(&r, &c, SSIM_FORMAT_TABLE);
    const char *in_table[] = {"global batch 8", "schedule gpipe", "recompute selective",
                              "placement   megatron"};
    for (gsize i = 0; i < G_N_ELEMENTS(in_table); i++)
        cr_assert(strstr(table->str, in_table[i]), "table lacks '%s':\n%s", in_table[i],
                  table->str);
    g_autoptr(GString) json = ssim_result_format(&r, &c, SSIM_FORMAT_JSON);
    const char *in_json[] = {"\"schedule\" : \"gpipe\"", "\"placement\" : \"megatron\"",
                             "\"recompute\" : \"selective\"", "\"microbatch\" : 1",
                             "\"global_batch\" : 8"};
    for (gsize i = 0; i < G_N_ELEMENTS(in_json); i++)
        cr_assert(strstr(json->str, in_json[i]), "JSON lacks '%s':\n%s", in_json[i], json->str);
    g_autoptr(GString) csv = ssim_result_format(&r, &c, SSIM_FORMAT_CSV);
    const char *in_csv[] = {",gpipe,",  ",megatron,", ",selective,",
                            "schedule", "recompute",  "global_batch"};
    for (gsize i = 0; i < G_N_ELEMENTS(in_csv); i++)
        cr_assert(strstr(csv->str, in_csv[i]), "CSV lacks '%s':\n%s", in_csv[i], csv->str);
}

Test(simulate, memory_check)
{
    /* GPT-3 175B on one H200 node with tp 8 needs 16 bytes x 175e9 / 8 = 350 GB per GPU. */
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", NULL);
    cr_assert_not_null(model);
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(1, 8, 1, 1, 1, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    cr_assert(strstr(error->message, "gpt-3-175b on dgx-h200: memory: stage 0 needs"), "%s",
              error->message);
    cr_assert(strstr(error->message, "GiB"), "%s", error->message);
    c.ignore_memory = TRUE;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, NULL));
    cr_assert_not(r.memory_fits);
    cr_assert_gt(r.memory.total, r.memory_capacity);
}

/* Applies one CLI option of a memory hint ("--recompute full") to `par`. */
static void apply_hint(SsimParallel *par, const char *option)
{
    g_auto(GStrv) words = g_strsplit(option, " ", 2);
    cr_assert_not_null(words[1], "'%s'", option);
    const char *key = strcmp(words[0], "--global-batch") == 0 ? "gbs"
                      : strcmp(words[0], "--microbatch") == 0 ? "mb"
                                                              : words[0] + 2;
    cr_assert(ssim_parallel_set(par, key, words[1], NULL), "'%s'", option);
}

static gboolean fits(const SsimModel *model, const SsimCluster *cluster, const SsimParallel *par)
{
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = par};
    SsimMemory peak;
    return ssim_simulate_memory(&c, &peak, NULL);
}

/*
 * A misfit names the options that would fit, each checked here against the memory model itself
 * (the oracle): every option named fits when applied alone, and the ways not named do not.
 */
Test(simulate, memory_misfit_names_what_would_fit)
{
    g_autoptr(SsimModel) model = ssim_model_load("llama-2-7b", NULL);
    cr_assert_not_null(model);
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(1, 2, 4, 1, 64, "gpipe");
    par.microbatch = 2, par.global_batch = 128; /* m = 64, all held under GPipe */
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY));
    const char *list = strstr(error->message, "; fits with ");
    cr_assert_not_null(list, "%s", error->message);
    cr_assert(g_str_has_suffix(error->message, "; or simulate anyway with --ignore-memory"), "%s",
              error->message);
    g_autofree char *named =
        g_strndup(list + strlen("; fits with "),
                  strstr(list, "; or simulate") - list - strlen("; fits with "));
    g_auto(GStrv) options = g_strsplit(named, ", ", -1);
    cr_assert_eq(g_strv_length(options), 3, "%s", named);
    const char *const want[] = {"--schedule 1f1b", "--recompute full", "--global-batch 16"};
    for (guint i = 0; options[i]; i++) {
        char *paren = strstr(options[i], " (");
        cr_assert_not_null(paren, "%s", options[i]);
        *paren = '\0';
        cr_assert_str_eq(options[i], want[i]);
        SsimParallel p = par;
        apply_hint(&p, options[i]);
        cr_assert(fits(model, cluster, &p), "%s named but does not fit", options[i]);
    }
    /* Not named: selective recompute, microbatch 1, and a batch of 32 (the next one up). */
    const char *const not_named[] = {"--recompute selective", "--microbatch 1",
                                     "--global-batch 32"};
    for (gsize i = 0; i < G_N_ELEMENTS(not_named); i++) {
        SsimParallel p = par;
        apply_hint(&p, not_named[i]);
        cr_assert_not(fits(model, cluster, &p), "%s fits but was not named", not_named[i]);
    }
    /* The same words through the memory half alone (what sweep's rows and simulate's recompute
     * probe see). */
    g_autoptr(GError) half = NULL;
    SsimMemory peak;
    cr_assert_not(ssim_simulate_memory(&c, &peak, &half));
    cr_assert_str_eq(half->message, error->message);
}

/* When nothing fits, alone or together, the message says what is left. */
Test(simulate, memory_misfit_beyond_every_option)
{
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", NULL);
    cr_assert_not_null(model);
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(1, 8, 1, 1, 1, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
    cr_assert(strstr(error->message,
                     "; it does not fit even with --recompute full: more tp or pp "
                     "(or GPUs) is needed; or simulate anyway with --ignore-memory"),
              "%s", error->message);

    /* Nothing left to try (1F1B, full recompute, microbatch 1, dp 1, one microbatch): said so,
     * not claimed to have been tried. */
    par.recompute = SSIM_RECOMPUTE_FULL;
    g_clear_error(&error);
    cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
    cr_assert(strstr(error->message, "; no schedule, recompute, microbatch, ZeRO or batch option "
                                     "lowers it: more tp or pp (or GPUs) is needed"),
              "%s", error->message);

    /* Together but not alone: GPT-3 on 16 nodes under GPipe with 64 microbatches in flight. */
    g_autoptr(SsimCluster) big = cluster_nodes(16);
    par = split(2, 8, 8, 1, 64, "gpipe");
    par.microbatch = 4, par.global_batch = 512;
    c.cluster = big;
    g_clear_error(&error);
    cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
    const char *together = strstr(error->message, "no one option fits alone, together these do: ");
    cr_assert_not_null(together, "%s", error->message);
    SsimParallel p = par;
    g_autofree char *opts =
        g_strdup(together + strlen("no one option fits alone, together these do: "));
    *strstr(opts, " (") = '\0';
    g_auto(GStrv) words = g_strsplit(opts, " ", -1);
    for (guint i = 0; words[i] && words[i + 1]; i += 2) {
        g_autofree char *option = g_strdup_printf("%s %s", words[i], words[i + 1]);
        apply_hint(&p, option);
    }
    cr_assert(fits(model, big, &p), "together: %s", opts);
}

/* ZeRO-3 is named where ZeRO-1 is not enough, alone and together with other ways, and applied
 * it fits; under commshift, which ZeRO-3 cannot run, it is not named. */
Test(simulate, memory_misfit_names_zero_3)
{
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", NULL);
    cr_assert_not_null(model);
    g_autoptr(SsimCluster) cluster = cluster_nodes(16);
    SsimParallel par = split(16, 8, 1, 1, 1, "1f1b");
    par.recompute = SSIM_RECOMPUTE_FULL;
    SsimPlacement megatron = SSIM_PLACEMENT_INIT;
    megatron.kind = SSIM_PLACEMENT_MEGATRON;
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par, .placement = &megatron};
    SsimMemory peak;
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_simulate_memory(&c, &peak, &error));
    cr_assert(strstr(error->message, "; fits with --zero 3 ("), "%s", error->message);
    SsimParallel p = par;
    apply_hint(&p, "--zero 1");
    cr_assert_not(fits(model, cluster, &p));
    p = par;
    apply_hint(&p, "--zero 3");
    cr_assert(fits(model, cluster, &p));

    /* Together: no recompute and microbatch 4 need all three. */
    par.recompute = SSIM_RECOMPUTE_NONE;
    par.microbatch = 4, par.global_batch = 64;
    g_clear_error(&error);
    cr_assert_not(ssim_simulate_memory(&c, &peak, &error));
    cr_assert(strstr(error->message, "; no one option fits alone, together these do: --recompute "
                                     "full --microbatch 1 --zero 3 ("),
              "%s", error->message);
    p = par;
    apply_hint(&p, "--recompute full");
    apply_hint(&p, "--microbatch 1");
    apply_hint(&p, "--zero 3");
    cr_assert(fits(model, cluster, &p));

    SsimPlacement commshift = SSIM_PLACEMENT_INIT;
    commshift.kind = SSIM_PLACEMENT_COMMSHIFT;
    c.placement = &commshift;
    g_clear_error(&error);
    cr_assert_not(ssim_simulate_memory(&c, &peak, &error));
    cr_assert_null(strstr(error->message, "--zero 3"), "%s", error->message);
}

Test(simulate, messages)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(2, 2, 2, 1, 4, "zb-h1");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    model->layers = 4;
    {
        g_autoptr(GError) error = NULL;
        cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
        cr_assert_str_eq(error->message, "schedule: unknown schedule 'zb-h1' (known: gpipe, xla, "
                                         "1f1b, interleaved, alpa, alpa-gpipe)");
    }
    {
        g_strlcpy(par.schedule, "1f1b", sizeof par.schedule);
        par.dp = 1;
        g_autoptr(GError) error = NULL;
        cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
        cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    }
    {
        par.dp = 2;
        par.virtual_stages = 2;
        g_autoptr(GError) error = NULL;
        cr_assert_not(ssim_simulate(&c, &r, NULL, NULL, &error));
        cr_assert(strstr(error->message, "1f1b runs one model chunk per GPU but v = 2"), "%s",
                  error->message);
    }
}

Test(simulate, timeline_out)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 2;
    g_autoptr(SsimCluster) cluster = cluster_nodes(1);
    SsimParallel par = split(4, 1, 2, 1, 2, "1f1b");
    SsimSimConfig c = {.model = model, .cluster = cluster, .par = &par};
    SsimResult r;
    g_autoptr(SsimLowered) l = NULL;
    g_autoptr(SsimTimeline) t = NULL;
    cr_assert(ssim_simulate(&c, &r, &l, &t, NULL));
    cr_assert_eq(t->n_ops, ssim_graph_n_ops(ssim_lowered_graph(l)));
    cr_assert_eq(t->makespan, r.step_time);
    /* Exact with the graph asked for: the explicit per-GPU graph, one timeline entry an op. */
    g_clear_pointer(&l, ssim_lowered_free);
    g_clear_pointer(&t, ssim_timeline_free);
    c.exact = TRUE;
    SsimResult e;
    cr_assert(ssim_simulate(&c, &e, &l, &t, NULL));
    cr_assert(ssim_lowered_exact(l));
    cr_assert_eq(ssim_graph_n_ranks(ssim_lowered_graph(l)), 8);
    cr_assert_eq(t->n_copies, 1);
    cr_assert_not_null(t->ready);
    cr_assert_eq(t->n_ops, ssim_graph_n_ops(ssim_lowered_graph(l)));
    cr_assert_eq(e.n_ops, t->n_ops);
    cr_assert_eq(e.step_time, r.step_time);
}

Test(simulate, verb_exit_codes)
{
    char *ok[] = {"simulate", "--nodes", "1", "--tp", "2", "--pp", "2", "--format", "csv", NULL};
    cr_assert_eq(ssim_verb_simulate(9, ok), SSIM_EXIT_OK);
    char *exact[] = {"simulate", "--nodes", "1", "--tp", "2", "--exact", "--format", "csv", NULL};
    cr_assert_eq(ssim_verb_simulate(8, exact), SSIM_EXIT_OK);
    char *graph[] = {"simulate", "--nodes", "1", "--tp", "2", "--exact-graph", "-f", "json", NULL};
    cr_assert_eq(ssim_verb_simulate(8, graph), SSIM_EXIT_OK);
    char *bad_format[] = {"simulate", "--format", "xml", NULL};
    cr_assert_eq(ssim_verb_simulate(3, bad_format), SSIM_EXIT_USAGE);
    char *bad_int[] = {"simulate", "--tp", "0", NULL};
    cr_assert_eq(ssim_verb_simulate(3, bad_int), SSIM_EXIT_USAGE);
    char *bad_schedule[] = {"simulate", "--schedule", "zb", NULL};
    cr_assert_eq(ssim_verb_simulate(3, bad_schedule), SSIM_EXIT_RUNTIME);
    char *no_fit[] = {"simulate", "--model", "gpt-3-175b", "--nodes", "1", "--tp", "8", NULL};
    cr_assert_eq(ssim_verb_simulate(7, no_fit), SSIM_EXIT_RUNTIME);
    char *bad_split[] = {"simulate", "--nodes", "1", "--tp", "3", NULL};
    cr_assert_eq(ssim_verb_simulate(5, bad_split), SSIM_EXIT_RUNTIME);
    /* Blocking launches need an eager host: refused under the default schedule (alpa). */
    char *compiled[] = {"simulate", "--nodes", "1", "--tp", "2", "--launch-blocking", NULL};
    cr_assert_eq(ssim_verb_simulate(6, compiled), SSIM_EXIT_RUNTIME);
    char *eager[] = {"simulate", "--nodes", "1",  "--tp", "2", "--launch-blocking",
                     "-s",       "1f1b",    "-f", "csv",  NULL};
    cr_assert_eq(ssim_verb_simulate(10, eager), SSIM_EXIT_OK);
}

/* The duration of the first op named `name` in a simulation of `c` (one node: GPT-J cut to 2
 * layers, data parallel over its 8 GPUs, one microbatch each). */
/* GPT-J cut to `layers` layers: a small job of the real shapes. */
static SsimModel *gptj_layers(guint layers)
{
    SsimModel *m = ssim_model_load("gpt-j-6b", NULL);
    cr_assert_not_null(m);
    m->layers = layers;
    return m;
}

static SsimTime first_op_time(const SsimCluster *c, const char *name)
{
    g_autoptr(SsimModel) m = gptj_layers(2);
    SsimParallel p = split(8, 1, 1, 1, 1, "1f1b");
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    SsimResult r;
    SsimLowered *l = NULL;
    SsimTimeline *t = NULL;
    GError *error = NULL;
    cr_assert(ssim_simulate(&cfg, &r, &l, &t, &error), "%s", error ? error->message : "");
    const SsimGraph *g = ssim_lowered_graph(l);
    SsimTime d = -1;
    for (guint32 i = 0; i < ssim_graph_n_ops(g) && d < 0; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->name != SSIM_NONE && strcmp(ssim_graph_string(g, op->name), name) == 0)
            d = t->end[i] - t->start[i];
    }
    ssim_lowered_free(l);
    ssim_timeline_free(t);
    cr_assert_geq(d, 0, "no op %s", name);
    return d;
}

/* The board's power limit binds only on a GPU kept busy (sim.c): under a host floor that idles
 * the GPU between short kernels, a GEMM runs faster than under continuous load, and never faster
 * than the burst rate; memory-bound kernels do not change. */
Test(simulate, a_gpu_the_host_starves_keeps_its_clocks)
{
    g_autoptr(SsimCluster) c = cluster_nodes(1);
    c->gemm_sustained = 0.5;
    c->kernel_floor = 0;
    SsimTime busy = first_op_time(c, "ffn_up"), norm = first_op_time(c, "act");
    c->kernel_floor = 2 * SSIM_MS; /* launches far longer than any kernel: the GPU mostly idles */
    SsimTime starved = first_op_time(c, "ffn_up");
    cr_assert_lt(starved, 2 * SSIM_MS, "an op keeps the GPU's time; the launches are the host's");
    cr_assert_eq(first_op_time(c, "act"), norm, "a memory-bound kernel keeps its time");
    c->gemm_sustained = 1.0;
    SsimTime burst = first_op_time(c, "ffn_up");
    cr_assert_lt(burst, starved);
    cr_assert_lt(starved, busy);
    /* Continuous load at 0.5 of the burst rate: the tensor-core part twice as long. */
    cr_assert_gt(busy, burst * 3 / 2);
}

/* The cluster's host floor is eager PyTorch's launch (parallel.h, ssim_parallel_compiled): a
 * compiled program's schedule (alpa, alpa-gpipe, xla) runs as it does without one, to the
 * nanosecond, while Megatron-LM's (1f1b) waits for its launches. */
Test(simulate, a_compiled_program_has_no_eager_host)
{
    g_autoptr(SsimCluster) c = cluster_nodes(1);
    g_autoptr(SsimModel) m = gptj_layers(4);
    static const char *const schedules[] = {"alpa", "alpa-gpipe", "xla", "1f1b"};
    for (gsize i = 0; i < G_N_ELEMENTS(schedules); i++) {
        SsimParallel p = split(2, 2, 2, 1, 4, schedules[i]);
        SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
        SsimResult none, floor;
        GError *error = NULL;
        c->kernel_floor = 0;
        cr_assert(ssim_simulate(&cfg, &none, NULL, NULL, &error), "%s",
                  error ? error->message : "");
        c->kernel_floor = 200 * SSIM_US;
        cr_assert(ssim_simulate(&cfg, &floor, NULL, NULL, &error), "%s",
                  error ? error->message : "");
        if (strcmp(schedules[i], "1f1b") == 0) {
            cr_assert(floor.has_host);
            cr_assert_gt(floor.step_time, none.step_time);
        } else {
            cr_assert_not(floor.has_host, "%s", schedules[i]);
            cr_assert_eq(floor.step_time, none.step_time, "%s", schedules[i]);
        }
    }
}

/* The host's share of a step (sim.h, "host waits"): only a cluster with a host reports it; with
 * launches far longer than the kernels the GPUs mostly wait for them; the exact replay of every
 * GPU agrees with one representative per stage. */
Test(simulate, host_waits_are_the_gpus_idle_time_for_the_host)
{
    g_autoptr(SsimCluster) c = cluster_nodes(1);
    g_autoptr(SsimModel) m = gptj_layers(4);
    SsimParallel p = split(2, 2, 2, 1, 4, "1f1b");
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    SsimResult r, x;
    GError *error = NULL;
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_not(r.has_host);
    cr_assert_eq(r.host_wait, 0);
    c->kernel_floor = 2 * SSIM_MS;
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert(r.has_host);
    cr_assert_gt(r.host_wait, r.step_time / 2, "%" G_GINT64_FORMAT " of %" G_GINT64_FORMAT,
                 r.host_wait, r.step_time);
    cr_assert_leq(r.host_wait, r.host_wait_max);
    cr_assert_lt(r.host_wait_max, r.step_time);
    cfg.exact = TRUE;
    cr_assert(ssim_simulate(&cfg, &x, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_eq(x.step_time, r.step_time);
    cr_assert_eq(x.host_wait, r.host_wait);
    cr_assert_eq(x.host_wait_max, r.host_wait_max);
}

/* Blocking launches (--launch-blocking, CUDA_LAUNCH_BLOCKING=1): the host launches each op only
 * after the kernel or collective before it has ended, so on data-parallel replicas that stay in
 * step (no transfers) nothing overlaps and each op costs its launch and then its time: the step
 * is the sum, over one rank's ops, of the kernel floor plus the op's duration, to the nanosecond.
 * Without the flag the host runs ahead and the step is shorter. */
Test(simulate, blocking_launches_serialise_a_rank)
{
    g_autoptr(SsimCluster) c = cluster_nodes(1);
    c->kernel_floor = 50 * SSIM_US;
    g_autoptr(SsimModel) m = gptj_layers(2);
    SsimParallel p = split(8, 1, 1, 1, 2, "1f1b");
    p.dp_bucket_bytes = 64 << 20; /* the reductions would overlap the backward */
    cr_assert(ssim_parallel_set(&p, "launch_blocking", "on", NULL));
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    SsimResult r, free_run;
    SsimLowered *l = NULL;
    SsimTimeline *t = NULL;
    GError *error = NULL;
    cr_assert(ssim_simulate(&cfg, &r, &l, &t, &error), "%s", error ? error->message : "");
    const SsimGraph *g = ssim_lowered_graph(l);
    SsimTime sum = 0;
    guint n = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != 0)
            continue;
        cr_assert_neq(op->kind, SSIM_OP_BARRIER);
        sum += c->kernel_floor + (t->end[i] - t->start[i]);
        n++;
    }
    cr_assert_gt(n, 100);
    cr_assert_eq(t->makespan, sum, "%" G_GINT64_FORMAT " != %" G_GINT64_FORMAT, t->makespan, sum);
    cr_assert(r.has_host);
    ssim_lowered_free(l);
    ssim_timeline_free(t);
    p.launch_blocking = FALSE;
    cr_assert(ssim_simulate(&cfg, &free_run, NULL, NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_lt(free_run.step_time, r.step_time);

    /* Interleaved 1F1B lists a transfer far from the one Megatron-LM batches it with: since a
     * transfer holds no launch, its blocking run still completes, slower than without. */
    g_autoptr(SsimModel) four = gptj_layers(4);
    SsimParallel q = split(2, 2, 2, 2, 4, "interleaved");
    SsimSimConfig qc = {.model = four, .cluster = c, .par = &q, .ignore_memory = TRUE};
    cr_assert(ssim_simulate(&qc, &free_run, NULL, NULL, &error), "%s", error ? error->message : "");
    q.launch_blocking = TRUE;
    cr_assert(ssim_simulate(&qc, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_lt(free_run.step_time, r.step_time);
}
