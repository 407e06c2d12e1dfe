/*
 * The step's end and uneven pipeline stages, against hand counts.
 *
 * The model is GPT-3 175B cut to 8 layers (h = 12288, V = 50257, s = 2048, tied embeddings,
 * learned positions): a layer holds 12 h^2 + 13 h = 1,812,099,072 parameters, the embedding
 * V h + s h = 642,723,840, the final norm 2 h = 24,576 and the last stage's tied copy of the
 * embedding V h = 617,558,016.  On dp 2 x tp 2 x pp 2 (4 layers a stage) a GPU of stage 0 holds
 * (4 x 1,812,099,072 + 642,723,840) / 2 = 3,945,560,064 parameters and one of stage 1
 * (4 x 1,812,099,072 + 24,576 + 617,558,016) / 2 = 3,932,989,440.  Every term's bytes below are
 * those counts times the bytes per parameter its Megatron-LM kernel reads and writes; a
 * collective's group is checked by its logical members.  Uneven stages: parameters, FLOPs and
 * memory per stage against the same counts for 5 + 3 layers.
 */
#include <criterion/criterion.h>

#include "tests/common/lowertest.h"

#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
#include <shiftsim/runtime.h>

#include <string.h>

#define LAYER  1812099072ull
#define EMBED  642723840ull
#define NORM   24576ull
#define TIED   617558016ull
#define P0     3945560064ull      /* (4 LAYER + EMBED) / 2 */
#define P1     3932989440ull      /* (4 LAYER + NORM + TIED) / 2 */
#define EMB_AR (25129ull * 12288) /* ceil(V / tp) h elements */

static SsimModel *gpt3_8(void)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    m->layers = 8;
    return m;
}

static SsimParallel split(guint dp, guint tp, guint pp, const char *step_costs)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = dp, p.tp = tp, p.pp = pp, p.microbatch = 1;
    p.global_batch = dp * 4;
    if (step_costs)
        cr_assert(ssim_parallel_set(&p, "step_costs", step_costs, NULL));
    return p;
}

static SsimLowered *lower_host(const SsimModel *model, const SsimParallel *par, SsimTime host)
{
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    o.host_microbatch = host;
    return test_lower(model, par, &o);
}

static SsimLowered *lower(const SsimModel *model, const SsimParallel *par)
{
    return lower_host(model, par, 0);
}

/* The ops named `name` on graph rank `rank`: their number, their bytes summed, and the logical
 * size of the group of the last one (0 for a kernel). */
typedef struct {
    guint n;
    guint64 bytes;
    guint group_n;
    SsimTime duration;
} Ops;

static Ops ops(const SsimLowered *l, guint rank, const char *name)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    Ops o = {0};
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != rank || strcmp(ssim_graph_string(g, op->name), name) != 0)
            continue;
        o.n++;
        o.bytes += op->bytes;
        o.duration = op->duration;
        if (op->group != SSIM_NONE)
            ssim_lowered_group_ranks(l, op->group, &o.group_n);
    }
    return o;
}

Test(stepcost, defaults_follow_megatron_by_dtype)
{
    /* Every term but the separate gradient accumulation (fused by default), DeepSpeed's cast
     * before it, FSDP2's copies and the FP8 amax reductions (on with fp8 only). */
    guint all = ((1u << SSIM_STEP_COST_N) - 1) & ~(1u << SSIM_STEP_COST_GRAD_ACCUM) &
                ~(1u << SSIM_STEP_COST_GRAD_CAST) & ~(1u << SSIM_STEP_COST_SHARD_COPY) &
                ~(1u << SSIM_STEP_COST_FP8_AMAX);
    cr_assert_eq(ssim_step_costs_default(SSIM_DTYPE_BF16),
                 all & ~(1u << SSIM_STEP_COST_LOSS_SCALE));
    cr_assert_eq(ssim_step_costs_default(SSIM_DTYPE_FP16), all & ~(1u << SSIM_STEP_COST_GRAD_FP32));
    cr_assert_eq(ssim_step_costs_default(SSIM_DTYPE_FP32),
                 all & ~(1u << SSIM_STEP_COST_GRAD_FP32) & ~(1u << SSIM_STEP_COST_LOSS_SCALE));
    SsimParallel p = split(1, 1, 1, "-clip/+loss_scale");
    g_autoptr(SsimModel) m = gpt3_8();
    cr_assert_not(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_CLIP));
    cr_assert(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_LOSS_SCALE));
    cr_assert(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_GRAD_FP32), "untouched: default");
    /* The canonical string reads back. */
    g_autofree char *s = ssim_parallel_to_string(&p);
    cr_assert(strstr(s, ",step_costs=+loss_scale/-clip") ||
                  strstr(s, ",step_costs=-clip/+loss_scale"),
              "%s", s);
    SsimParallel q;
    ssim_parallel_init(&q);
    cr_assert(ssim_parallel_parse(&q, s, NULL));
    cr_assert_eq(q.step_costs_set, p.step_costs_set);
    cr_assert_eq(q.step_costs_on, p.step_costs_on);
    /* none, then one back on; default resets. */
    cr_assert(ssim_parallel_set(&q, "step_costs", "none,+host", NULL));
    cr_assert_eq(ssim_parallel_step_costs(&q, m), 1u << SSIM_STEP_COST_HOST);
    cr_assert(ssim_parallel_set(&q, "step_costs", "default", NULL));
    cr_assert_eq(ssim_parallel_step_costs(&q, m), ssim_step_costs_default(SSIM_DTYPE_BF16));
    /* Eager PyTorch accumulates its gradients in kernels of their own (AccumulateGrad), and its
     * ZeRO-2 and 3 are FSDP2's, whose copies are on by default there, and only there. */
    cr_assert_not(ssim_parallel_step_cost_on(&q, m, SSIM_STEP_COST_SHARD_COPY));
    cr_assert(ssim_parallel_set(&q, "transformer_impl", "torch", NULL));
    cr_assert_eq(ssim_parallel_step_costs(&q, m),
                 ssim_step_costs_default(SSIM_DTYPE_BF16) | 1u << SSIM_STEP_COST_GRAD_ACCUM);
    q.zero_stage = 3;
    cr_assert_eq(ssim_parallel_step_costs(&q, m),
                 ssim_step_costs_default(SSIM_DTYPE_BF16) | 1u << SSIM_STEP_COST_SHARD_COPY);
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_parallel_set(&q, "step_costs", "-clip/adamw", &error));
    cr_assert(strstr(error->message, "'adamw' is not a step cost"), "%s", error->message);
}

Test(stepcost, bf16_terms_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    g_autoptr(SsimLowered) l = lower(m, &p);
    const guint64 P[2] = {P0, P1};
    for (guint s = 0; s < 2; s++) {
        /* Adam: fp32 gradient, weight, m, v read, the last three written (28), then the fp32
         * weights copied into the bf16 ones (4 read, 2 written), as Megatron-LM's
         * _copy_main_params_to_model_params. */
        Ops opt = ops(l, s, "optimizer");
        cr_assert_eq(opt.n, 1);
        cr_assert_eq(opt.bytes, P[s] * 34, "stage %u: %" G_GUINT64_FORMAT, s, opt.bytes);
        /* The fp32 gradient buffer zeroed for the next iteration (zero_grad_buffer). */
        Ops zero = ops(l, s, "grad.zero");
        cr_assert_eq(zero.n, 1);
        cr_assert_eq(zero.bytes, P[s] * 4, "stage %u: %" G_GUINT64_FORMAT, s, zero.bytes);
        /* Clipping: the norm reads the fp32 gradients once; 4 bytes all-reduced over tp x pp. */
        Ops norm = ops(l, s, "clip.norm"), nar = ops(l, s, "clip.allreduce");
        cr_assert_eq(norm.bytes, P[s] * 4);
        cr_assert_eq(nar.n, 1);
        cr_assert_eq(nar.bytes, 4);
        cr_assert_eq(nar.group_n, 4, "tp 2 x pp 2");
        /* bf16: no loss scaler. */
        cr_assert_eq(ops(l, s, "loss_scale.check").n, 0);
        cr_assert_eq(ops(l, s, "loss_scale.allreduce").n, 0);
        /* Gradients reduced over dp in fp32: 4 bytes a parameter. */
        Ops dp = ops(l, s, "dp.allreduce");
        cr_assert_eq(dp.bytes, P[s] * 4, "stage %u: %" G_GUINT64_FORMAT, s, dp.bytes);
        cr_assert_eq(dp.group_n, 2);
        /* The tied embedding's gradient between the two end stages, in fp32. */
        Ops emb = ops(l, s, "emb.allreduce");
        cr_assert_eq(emb.n, 1);
        cr_assert_eq(emb.bytes, EMB_AR * 4);
        cr_assert_eq(emb.group_n, 2);
        /* No host op without a microbatch floor. */
        cr_assert_eq(ops(l, s, "host").n, 0);
    }
    /* Without grad_fp32 the reductions carry bf16, 2 bytes a parameter, and Adam first copies
     * the gradients into fp32 (2 read + 4 written). */
    p = split(2, 2, 2, "-grad_fp32");
    g_autoptr(SsimLowered) h = lower(m, &p);
    cr_assert_eq(ops(h, 0, "dp.allreduce").bytes, P0 * 2);
    cr_assert_eq(ops(h, 1, "emb.allreduce").bytes, EMB_AR * 2);
    cr_assert_eq(ops(h, 0, "optimizer").bytes, P0 * 40);
    cr_assert_eq(ops(h, 0, "grad.zero").bytes, P0 * 2, "a bf16 gradient buffer");
}

Test(stepcost, fp16_loss_scale_and_zero1_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    m->dtype = SSIM_DTYPE_FP16;
    SsimParallel p = split(2, 2, 2, NULL);
    p.zero_stage = 1;
    g_autoptr(SsimLowered) l = lower(m, &p);
    /* ZeRO-1 (the distributed optimizer): each GPU updates 1/dp of its stage; the norm and the
     * inf check cover that shard and are all-reduced over every GPU. */
    Ops check = ops(l, 0, "loss_scale.check"), flag = ops(l, 0, "loss_scale.allreduce");
    cr_assert_eq(check.bytes, P0 / 2 * 8, "unscale: read and write the fp32 gradients");
    cr_assert_eq(flag.bytes, 4);
    cr_assert_eq(flag.group_n, 8, "every GPU under ZeRO-1");
    cr_assert_eq(ops(l, 0, "clip.norm").bytes, P0 / 2 * 4);
    cr_assert_eq(ops(l, 0, "clip.allreduce").group_n, 8);
    /* fp16 reduces in 16 bits by default: Adam copies into fp32 first (2 + 4) besides its 28 and
     * the weights' copy (4 + 2); the zeroing covers the whole 16-bit buffer, not the shard. */
    cr_assert_eq(ops(l, 0, "optimizer").bytes, P0 / 2 * 40);
    cr_assert_eq(ops(l, 0, "grad.zero").bytes, P0 * 2);
    cr_assert_eq(ops(l, 0, "dp.reducescatter").bytes, P0 * 2);
    cr_assert_eq(ops(l, 0, "dp.allgather").bytes, P0 * 2);
    /* An fp32 model has no compute copy and no conversion: 28 bytes. */
    m->dtype = SSIM_DTYPE_FP32;
    p.zero_stage = 0;
    g_autoptr(SsimLowered) f = lower(m, &p);
    cr_assert_eq(ops(f, 1, "optimizer").bytes, P1 * 28);
    cr_assert_eq(ops(f, 1, "loss_scale.check").n, 0);
}

Test(stepcost, every_term_off)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, "none");
    g_autoptr(SsimLowered) l = lower_host(m, &p, 5000);
    const char *gone[] = {"optimizer",     "clip.norm",        "clip.allreduce",
                          "emb.allreduce", "loss_scale.check", "loss_scale.allreduce",
                          "host"};
    for (guint s = 0; s < 2; s++)
        for (gsize i = 0; i < G_N_ELEMENTS(gone); i++)
            cr_assert_eq(ops(l, s, gone[i]).n, 0, "stage %u: %s", s, gone[i]);
    /* The gradients are still reduced, in the model's dtype. */
    cr_assert_eq(ops(l, 0, "dp.allreduce").bytes, P0 * 2);
}

/* Every op of a graph costs `each` ns unless it carries its own duration. */
static SsimTime flat_time(const SsimCostModel *cm, const SsimGraph *g, guint32 i, guint n)
{
    (void)g, (void)i, (void)n;
    return *(const SsimTime *)cm->data;
}

static SsimTime step_of(const SsimLowered *l)
{
    SsimTime each = 1000;
    SsimCostModel cm = {.op_time = flat_time, .data = &each};
    GError *error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run(ssim_lowered_graph(l), &cm, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    return t->makespan;
}

Test(stepcost, host_floor_per_microbatch_phase)
{
    /* One GPU, m = 4: a host op of 25 us before each of the 8 phases, on the compute stream,
     * adds exactly 8 x 25 us to a step with nothing to overlap it. */
    g_autoptr(SsimModel) m = gpt3_8();
    m->layers = 2;
    SsimParallel p = split(1, 1, 1, NULL);
    g_autoptr(SsimLowered) without = lower(m, &p);
    g_autoptr(SsimLowered) with = lower_host(m, &p, 25000);
    Ops host = ops(with, 0, "host");
    cr_assert_eq(host.n, 8);
    cr_assert_eq(host.duration, 25000);
    cr_assert_eq(step_of(with) - step_of(without), 8 * 25000);
    /* Turned off, the floor is not charged. */
    p = split(1, 1, 1, "-host");
    g_autoptr(SsimLowered) off = lower_host(m, &p, 25000);
    cr_assert_eq(ops(off, 0, "host").n, 0);
    cr_assert_eq(step_of(off), step_of(without));
}

/* ---- uneven stages ---------------------------------------------------------------------- */

/* Model FLOPs of graph rank `rank`'s compute ops. */
static double rank_flops(const SsimLowered *l, guint rank)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    double f = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank == rank && op->kind == SSIM_OP_COMPUTE)
            f += op->flops;
    }
    return f;
}

Test(stepcost, uneven_stage_params_flops_memory)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    cr_assert(ssim_parallel_set(&p, "stage_layers", "5/3", NULL));
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_parallel_stage_layers(&p, m, 0), 5);
    cr_assert_eq(ssim_parallel_chunk_first_layer(&p, m, 1), 5);
    /* Params: the embedding with stage 0's 5 layers, the norm and tied copy with stage 1's 3. */
    cr_assert_eq(ssim_parallel_stage_params(&p, m, 0), 5 * LAYER + EMBED);
    cr_assert_eq(ssim_parallel_stage_params(&p, m, 1), 3 * LAYER + NORM + TIED);
    g_autoptr(SsimLowered) l = lower(m, &p);
    cr_assert_eq(ops(l, 0, "optimizer").bytes, (5 * LAYER + EMBED) / 2 * 34);
    cr_assert_eq(ops(l, 1, "dp.allreduce").bytes, (3 * LAYER + NORM + TIED) / 2 * 4);
    /* FLOPs per microbatch and GPU: a GPT layer's forward is 24 b s h^2 + 4 b s^2 h over tp,
     * the backward twice that; the head's GEMM 2 b s h ceil(V/tp), three times; m = 4. */
    const double b = 1, s = 2048, h = 12288, t = 2;
    double layer = 3 * (24 * b * s * h * h + 4 * b * s * s * h) / t;
    double head = 3 * 2 * b * s * h * 25129;
    cr_assert_float_eq(rank_flops(l, 0), 4 * 5 * layer, 1e-9 * rank_flops(l, 0));
    cr_assert_float_eq(rank_flops(l, 1), 4 * (3 * layer + head), 1e-9 * rank_flops(l, 1));
    /* Memory: weights, fp32 gradients, Adam, and activations of the stage's own layers. */
    SsimMemory mem;
    for (guint st = 0; st < 2; st++) {
        guint64 params = (st == 0 ? 5 * LAYER + EMBED : 3 * LAYER + NORM + TIED) / 2;
        ssim_memory_estimate(&mem, m, &p, st, 2 - st);
        cr_assert_eq(mem.params, params);
        cr_assert_eq(mem.weights + mem.gradients + mem.optimizer, 18 * params);
        cr_assert_eq(mem.activations, mem.activation_layer * (st == 0 ? 5 : 3) * (2 - st));
    }
    /* Every gradient site is one layer: stage 0's 0..4, stage 1's 5..7 (plus the ends). */
    SsimPlan *plan = ssim_lowered_plan(l);
    guint seen[8] = {0};
    for (guint32 i = 0; i < ssim_plan_n_ops(plan); i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (o->site < 8) {
            cr_assert_eq(ssim_lowered_global_rank(l, o->rank) >= 4, o->site >= 5, "site %u",
                         o->site);
            seen[o->site]++;
        }
    }
    for (guint k = 0; k < 8; k++)
        cr_assert_gt(seen[k], 0, "site %u", k);
}

Test(stepcost, uneven_stage_rules)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    GError *error = NULL;
    cr_assert(ssim_parallel_set(&p, "stage_layers", "5/2", NULL));
    cr_assert_not(ssim_parallel_validate(&p, m, NULL, &error));
    cr_assert(strstr(error->message, "the stages hold 7 layers but"), "%s", error->message);
    g_clear_error(&error);
    cr_assert(ssim_parallel_set(&p, "stage_layers", "3,3,2", NULL));
    cr_assert_not(ssim_parallel_validate(&p, m, NULL, &error));
    cr_assert(strstr(error->message, "3 entries for pp = 2"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_parallel_set(&p, "stage_layers", "4/0", &error));
    cr_assert(strstr(error->message, "entry 2 '0'"), "%s", error->message);
    g_clear_error(&error);
    /* An even split needs layers % pp == 0; a list lifts that. */
    m->layers = 7;
    ssim_parallel_init(&p);
    p.pp = 2;
    cr_assert_not(ssim_parallel_validate(&p, m, NULL, NULL));
    cr_assert(ssim_parallel_set(&p, "stage_layers", "4:3", NULL));
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    g_autofree char *s = ssim_parallel_to_string(&p);
    cr_assert(g_str_has_suffix(s, ",stage_layers=4/3"), "%s", s);
    cr_assert(ssim_parallel_set(&p, "stage_layers", "even", NULL));
    cr_assert_not(ssim_parallel_uneven(&p));
}

/* With v > 1 an uneven split lists each model chunk in pipeline order (Megatron-LM's
 * account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split, or its
 * pipeline_model_parallel_layout): 8 layers on pp 2 x v 2 as 1/3*2/1, chunks 0..3 holding 1, 3, 3
 * and 1 layers, chunk j on stage j % 2.  Stage 0 runs chunks 0 (the embedding and layer 0) and 2
 * (layers 4..6), stage 1 chunks 1 (layers 1..3) and 3 (layer 7 and the head): 4 layers each, the
 * params, FLOPs, gradient sites and memory by hand. */
Test(stepcost, uneven_chunks_with_virtual_stages)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    p.virtual_stages = 2;
    cr_assert(ssim_parallel_set(&p, "schedule", "interleaved", NULL));
    cr_assert(ssim_parallel_set(&p, "stage_layers", "1/3*2/1", NULL));
    static const guint16 want[] = {1, 3, 3, 1, 0};
    cr_assert_arr_eq(p.stage_layers, want, sizeof want);
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_parallel_chunk_layers(&p, m, 2), 3);
    cr_assert_eq(ssim_parallel_chunk_first_layer(&p, m, 3), 7);
    cr_assert_eq(ssim_parallel_stage_layers(&p, m, 0), 4);
    cr_assert_eq(ssim_parallel_stage_layers(&p, m, 1), 4);
    cr_assert_eq(ssim_parallel_layers_per_chunk(&p, m), 3);
    cr_assert_eq(ssim_parallel_stage_params(&p, m, 0), 4 * LAYER + EMBED);
    cr_assert_eq(ssim_parallel_stage_params(&p, m, 1), 4 * LAYER + NORM + TIED);
    g_autoptr(SsimLowered) l = lower(m, &p);
    const double b = 1, s = 2048, h = 12288, t = 2;
    double layer = 3 * (24 * b * s * h * h + 4 * b * s * s * h) / t;
    double head = 3 * 2 * b * s * h * 25129;
    cr_assert_float_eq(rank_flops(l, 0), 4 * 4 * layer, 1e-9 * rank_flops(l, 0));
    cr_assert_float_eq(rank_flops(l, 1), 4 * (4 * layer + head), 1e-9 * rank_flops(l, 1));
    /* Each layer's gradient site on the stage holding its chunk: 0 and 4..6 on stage 0. */
    SsimPlan *plan = ssim_lowered_plan(l);
    guint seen[8] = {0};
    for (guint32 i = 0; i < ssim_plan_n_ops(plan); i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (o->site < 8) {
            gboolean on0 = o->site == 0 || (o->site >= 4 && o->site <= 6);
            cr_assert_eq(ssim_lowered_global_rank(l, o->rank) >= 4, !on0, "site %u", o->site);
            seen[o->site]++;
        }
    }
    for (guint k = 0; k < 8; k++)
        cr_assert_gt(seen[k], 0, "site %u", k);
    /* Memory: the passes in flight spread over the stage's two chunks, 4 / 2 layers each on
     * average: 5 passes keep 10 layers' activations. */
    SsimMemory mem;
    ssim_memory_estimate(&mem, m, &p, 0, 5);
    cr_assert_eq(mem.params, (4 * LAYER + EMBED) / 2);
    cr_assert_eq(mem.activations, mem.activation_layer * 10);
    /* The list counts chunks, not stages, and written back it is the same list. */
    g_autofree char *str = ssim_parallel_to_string(&p);
    cr_assert(g_str_has_suffix(str, ",stage_layers=1/3/3/1"), "%s", str);
    cr_assert(ssim_parallel_set(&p, "stage_layers", "4/4", NULL));
    cr_assert_not(ssim_parallel_validate(&p, m, NULL, &error));
    cr_assert(strstr(error->message, "2 entries for pp x v = 2 x 2 = 4 model chunks"), "%s",
              error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_parallel_set(&p, "stage_layers", "1/3*0/1", &error));
    cr_assert(strstr(error->message, "entry 2 '3*0'"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_parallel_set(&p, "stage_layers", "2*3*1", &error));
    cr_assert(strstr(error->message, "entry 1 '2*3*1'"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_parallel_set(&p, "stage_layers", "1*200", &error));
    cr_assert(strstr(error->message, "more than the 128 entries"), "%s", error->message);
    g_clear_error(&error);
}

/* Megatron-LM's --pipeline-model-parallel-layout taken as it is (its parse_str_to_list): commas
 * dropped, "(group)*N" then "x*N" unrolled, '|' between chunks, each chunk's 't' its layers; the
 * embedding and the loss only where shiftsim models them; refusals name the chunk. */
Test(stepcost, megatron_layout_string)
{
    static const struct {
        const char *layout;
        guint16 want[6];
    } ok[] = {{"Et|(t*3|)*2,tL", {1, 3, 3, 1}},
              {"Ettt|(tt|)*2,m|L", {0}}, /* refused below */
              {"(tt|)*3,tt", {2, 2, 2, 2}},
              {"E, t*2 | t t | tL", {2, 2, 1}}};
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        SsimParallel p;
        ssim_parallel_init(&p);
        GError *error = NULL;
        gboolean set = ssim_parallel_set(&p, "stage_layers", ok[i].layout, &error);
        if (ok[i].want[0] == 0) {
            cr_assert_not(set, "%s", ok[i].layout);
            cr_assert(strstr(error->message, "chunk 4 of the layout, 'm'"), "%s", error->message);
            g_clear_error(&error);
            continue;
        }
        cr_assert(set, "%s: %s", ok[i].layout, error ? error->message : "");
        cr_assert_arr_eq(p.stage_layers, ok[i].want, sizeof ok[i].want, "%s", ok[i].layout);
    }
    static const struct {
        const char *layout, *says;
    } bad[] = {
        {"E|tt", "chunk 1 of the layout holds no transformer layer"},
        {"tt|Ett", "chunk 2 of the layout, 'E': the embedding 'E' is modelled in the first chunk"},
        {"tL|tt", "chunk 1 of the layout, 'L': the loss 'L' is modelled in the last chunk"},
        {"tx", "chunk 1 of the layout, 'x': not one of E, t, L"},
        {"t*70000", "unrolls to more than 65536 characters"},
        {"(t|)*200", "201 model chunks in the layout, more than the 128"},
        {"()*99999999999|t", "unrolls to more than 65536"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        SsimParallel p;
        ssim_parallel_init(&p);
        GError *error = NULL;
        cr_assert_not(ssim_parallel_set(&p, "stage_layers", bad[i].layout, &error), "%s",
                      bad[i].layout);
        cr_assert(strstr(error->message, bad[i].says), "%s: %s", bad[i].layout, error->message);
        cr_assert_not(ssim_parallel_uneven(&p), "unchanged on a refusal");
        g_clear_error(&error);
    }
}

/* Megatron-LM's other uneven splits, counted as Megatron-Core's get_num_layers_to_build counts
 * them: the first and last stage's layers (the stages between sharing the rest, each stage split
 * over its v chunks, chunk j on stage j % pp), or the embedding and loss counted as a layer each
 * (the first and last chunk one fewer).  By hand: Qwen3-8B's 36 layers on 8 stages with 3 first
 * and 3 last are 3,5,5,5,5,5,5,3 (Megatron-Bridge's pruning guide); 80 on 4 with 17 first are
 * 17 and 63 / 3 = 21 each; 80 on pp 4 x v 2 with 10 first and last: stages of 10, 30, 30, 10, each
 * in two chunks; 80 and the embedding on 3 stages: 81 / 3 = 27, the first 26; Llama 3.1 405B's
 * 126 on pp 8 x v 8 with both counted: 128 / 64 = 2 a chunk, 1/2*62/1.  8 layers on pp 2 x v 5
 * with both counted: 10 / 10 = 1 a chunk, the first holding only the embedding: refused. */
Test(stepcost, megatron_first_last_and_counted_layers)
{
    static const struct {
        guint layers, pp, v;
        const char *rule, *want; /* the stage_layers written back; "" even */
    } ok[] = {
        {36, 8, 1, "first_stage_layers=3,last_stage_layers=3", "3/5*6/3"},
        {80, 4, 1, "decoder_first_pipeline_num_layers=17", "17/21*3"},
        {80, 4, 1, "num_layers_in_last_pipeline_stage=20", ""}, /* 20 each: even */
        {80, 4, 2, "first_stage_layers=10,last_stage_layers=10", "5/15/15/5/5/15/15/5"},
        {80, 3, 1, "account_for_embedding_in_pipeline_split=on", "26/27/27"},
        {126, 8, 8, "embedding_in_split=on,loss_in_split=on", "1/2*62/1"},
        {7, 2, 1, "first_stage_layers=3,last_stage_layers=4", "3/4"},
        /* One stage: the counted embedding and loss change nothing (Megatron-LM builds
         * layers + 2 - 2); a first stage of all the layers is the even split. */
        {80, 1, 1, "embedding_in_split=on,loss_in_split=on", ""},
        {80, 1, 1, "first_stage_layers=80", ""},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        g_autoptr(SsimModel) m = gpt3_8();
        m->layers = ok[i].layers;
        SsimParallel p = split(1, 1, ok[i].pp, NULL);
        p.virtual_stages = ok[i].v;
        GError *error = NULL;
        cr_assert(ssim_parallel_parse(&p, ok[i].rule, &error), "%s", ok[i].rule);
        cr_assert(ssim_parallel_layers_pending(&p));
        /* Before it is counted the rule is written as given, and the split refused. */
        g_autofree char *given = ssim_parallel_to_string(&p);
        cr_assert(strstr(given, "_stage_layers=") || strstr(given, "_in_split=on"), "%s", given);
        cr_assert_not(ssim_parallel_validate(&p, m, NULL, &error));
        cr_assert(strstr(error->message, "not yet counted"), "%s", error->message);
        g_clear_error(&error);
        cr_assert(ssim_parallel_resolve_layers(&p, m, &error), "%s: %s", ok[i].rule,
                  error ? error->message : "");
        cr_assert_not(ssim_parallel_layers_pending(&p));
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &p);
        cr_assert_str_eq(got->str, ok[i].want, "%s", ok[i].rule);
        g_strlcpy(p.schedule, ok[i].v > 1 ? "interleaved" : "1f1b", sizeof p.schedule);
        p.global_batch = 8 * ok[i].pp;
        cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s: %s", ok[i].rule,
                  error ? error->message : "");
        guint sum = 0;
        for (guint s = 0; s < ok[i].pp; s++)
            sum += ssim_parallel_stage_layers(&p, m, s);
        cr_assert_eq(sum, ok[i].layers, "%s", ok[i].rule);
        /* Counted once: resolving again changes nothing. */
        SsimParallel again = p;
        cr_assert(ssim_parallel_resolve_layers(&again, m, NULL));
        cr_assert_eq(memcmp(&again, &p, sizeof p), 0);
    }
    /* The Qwen3 split's params by hand: 3 + 5 layers' weights on stages 0 and 1 (the 8-layer
     * GPT-3 shapes), the embedding on the first, the norm and tied copy on the last. */
    {
        g_autoptr(SsimModel) m = gpt3_8();
        m->layers = 36;
        SsimParallel p = split(1, 1, 8, NULL);
        cr_assert(ssim_parallel_parse(&p, "first_stage_layers=3,last_stage_layers=3", NULL));
        cr_assert(ssim_parallel_resolve_layers(&p, m, NULL));
        cr_assert_eq(ssim_parallel_stage_params(&p, m, 0), 3 * LAYER + EMBED);
        cr_assert_eq(ssim_parallel_stage_params(&p, m, 1), 5 * LAYER);
        cr_assert_eq(ssim_parallel_stage_params(&p, m, 7), 3 * LAYER + NORM + TIED);
    }
    static const struct {
        guint layers, pp, v;
        const char *rule, *says;
    } bad[] = {
        {80, 12, 1, "first_stage_layers=2",
         "first_stage_layers: 78 layers of gpt-3-175b remain for the 11 stages between"},
        {80, 2, 1, "first_stage_layers=30,last_stage_layers=40",
         "first_stage_layers: 10 of the 80 layers of gpt-3-175b are left over and no stage is "
         "left to hold them"},
        {80, 1, 1, "first_stage_layers=79", "first_stage_layers: 1 of the 80 layers"},
        {80, 1, 1, "first_stage_layers=40,last_stage_layers=40",
         "at pp = 1 the first stage is the last"},
        {80, 4, 1, "first_stage_layers=81", "first_stage_layers: 81 is more than the 80 layers"},
        {80, 4, 1, "first_stage_layers=40,last_stage_layers=41",
         "last_stage_layers: 41 is more than the 40 layers gpt-3-175b leaves after the first"},
        {80, 3, 1, "first_stage_layers=40,last_stage_layers=40", "remain for the 1 stage between"},
        {80, 2, 3, "first_stage_layers=30,last_stage_layers=50",
         "last_stage_layers: stage 1's 50 layers do not split evenly over its v = 3"},
        {80, 4, 2, "first_stage_layers=5", "first_stage_layers: stage 0's 5 layers do not split"},
        {80, 4, 1, "embedding_in_split=on",
         "embedding_in_split: the 80 layers of gpt-3-175b and the embedding make 81, which pp x "
         "v = 4 x 1 model chunks cannot share evenly"},
        {8, 2, 5, "embedding_in_split=on,loss_in_split=on",
         "the first model chunk would hold the embedding and no transformer layer"},
        {9, 2, 5, "loss_in_split=on",
         "the last model chunk would hold the loss and no transformer layer"},
        {80, 4, 1, "stage_layers=20/20/20/20,last_stage_layers=4",
         "last_stage_layers: stage_layers already gives every stage's layers"},
        {80, 100, 2, "embedding_in_split=on", "more model chunks than an uneven split may list"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(SsimModel) m = gpt3_8();
        m->layers = bad[i].layers;
        SsimParallel p = split(1, 1, bad[i].pp, NULL);
        p.virtual_stages = bad[i].v;
        GError *error = NULL;
        cr_assert(ssim_parallel_parse(&p, bad[i].rule, &error), "%s", bad[i].rule);
        SsimParallel before = p;
        cr_assert_not(ssim_parallel_resolve_layers(&p, m, &error), "%s", bad[i].rule);
        cr_assert(strstr(error->message, bad[i].says), "%s: %s", bad[i].rule, error->message);
        cr_assert_eq(memcmp(&before, &p, sizeof p), 0, "unchanged on a refusal");
        g_clear_error(&error);
    }
    /* Megatron-LM takes a stage's count or the embedding and loss counted, not both; and each
     * setting once under any of its names. */
    static const struct {
        const char *spec, *says;
    } parse_bad[] = {
        {"first_stage_layers=2,Account-For-Embedding-In-Pipeline-Split=on",
         "Account-For-Embedding-In-Pipeline-Split: contradicts 'first_stage_layers': give the "
         "first stage's layers or count the embedding as a layer, not both"},
        {"loss_in_split=on,last_stage_layers=3", "last_stage_layers: contradicts 'loss_in_split'"},
        {"first_stage_layers=2,decoder_first_pipeline_num_layers=3",
         "given twice (as 'first_stage_layers' and 'decoder_first_pipeline_num_layers')"},
        {"first_stage_layers=0", "first_stage_layers: '0' is not a positive integer"},
        {"last_stage_layers=70000", "70000 is more layers than a stage can hold"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(parse_bad); i++) {
        SsimParallel p;
        ssim_parallel_init(&p);
        GError *error = NULL;
        cr_assert_not(ssim_parallel_parse(&p, parse_bad[i].spec, &error), "%s", parse_bad[i].spec);
        cr_assert(strstr(error->message, parse_bad[i].says), "%s: %s", parse_bad[i].spec,
                  error->message);
        g_clear_error(&error);
    }
    /* A stage count on the first stage and the loss counted on the last: each alone parses;
     * counting them together is refused. */
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(1, 1, 2, NULL);
    cr_assert(ssim_parallel_parse(&p, "first_stage_layers=3,loss_in_split=on", NULL));
    GError *error = NULL;
    cr_assert_not(ssim_parallel_resolve_layers(&p, m, &error));
    cr_assert(strstr(error->message, "first_stage_layers: contradicts loss_in_split"), "%s",
              error->message);
    g_clear_error(&error);
}

/* stage_layers=balanced: even work a chunk, the LM head on the last chunk counted as H layers,
 * H = 3 head / ((3 + 1 under full recompute) layer) by forward FLOPs a token: for the GPT-3
 * shapes 2 h V = 1,235,116,032 against 24 h^2 + 4 s h = 3,724,541,952, H = 0.3316 (0.2487 under
 * full recompute).  10 layers on 4 chunks: (10 + H) / 4 - H = 2.25, so 2 on the last, the other
 * 8 as 2 each and the remainder 2 to chunks 1 and 2: 2/3/3/2; 9 layers: 2.0, 2/3/2/2; 8 layers:
 * 2 each, an even split (nothing listed).  Llama 3.1 405B on pp 8 x v 8: 1/2*62/1, Megatron-
 * Bridge's split.  Written back as asked until counted. */
Test(stepcost, balanced_stage_layers_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    const double h = 12288, s = 2048, V = 50257;
    double H = 2 * h * V / (24 * h * h + 4 * s * h);
    cr_assert_float_eq(H, 0.3316, 1e-4);
    cr_assert_float_eq(ssim_model_head_forward_flops(m, 1) / ssim_model_layer_forward_flops(m, 1),
                       H, 1e-9);
    static const struct {
        guint layers;
        const char *recompute, *want;
    } ok[] = {{10, "none", "2/3/3/2"},
              {9, "none", "2/3/2/2"},
              {8, "none", ""},
              {8, "full", ""},
              {10, "full", "2/3/3/2"}};
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        m->layers = ok[i].layers;
        SsimParallel p = split(1, 1, 4, NULL);
        cr_assert(ssim_parallel_set(&p, "recompute", ok[i].recompute, NULL));
        cr_assert(ssim_parallel_set(&p, "stage_layers", "balanced", NULL));
        g_autofree char *asked = ssim_parallel_to_string(&p);
        cr_assert(strstr(asked, ",stage_layers=balanced"), "%s", asked);
        SsimParallel back;
        ssim_parallel_init(&back);
        cr_assert(ssim_parallel_parse(&back, asked, NULL));
        cr_assert(back.balance_layers);
        GError *error = NULL;
        cr_assert(ssim_parallel_resolve_layers(&p, m, &error), "%s", error ? error->message : "");
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &p);
        cr_assert_str_eq(got->str, ok[i].want, "case %zu", i);
        cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    }
    g_autoptr(SsimModel) big = ssim_model_load("llama-3.1-405b", NULL);
    cr_assert_not_null(big);
    SsimParallel p = split(1, 1, 8, NULL);
    p.virtual_stages = 8;
    cr_assert(ssim_parallel_parse(&p, "stage_layers=balanced", NULL));
    cr_assert(ssim_parallel_resolve_layers(&p, big, NULL));
    g_autoptr(GString) got = g_string_new(NULL);
    ssim_parallel_append_stage_layers(got, &p);
    cr_assert_str_eq(got->str, "1/2*62/1");
    /* Refused: fewer layers than chunks; beside another rule. */
    m->layers = 8;
    p = split(1, 1, 2, NULL);
    p.virtual_stages = 5;
    GError *error = NULL;
    cr_assert(ssim_parallel_parse(&p, "stage_layers=balanced", NULL));
    cr_assert_not(ssim_parallel_resolve_layers(&p, m, &error));
    cr_assert(strstr(error->message, "stage_layers=balanced: 8 layers of gpt-3-175b for pp x v = "
                                     "10 model chunks"),
              "%s", error->message);
    g_clear_error(&error);
    p = split(1, 1, 2, NULL);
    cr_assert(ssim_parallel_parse(&p, "stage_layers=balanced,first_stage_layers=3", NULL));
    cr_assert_not(ssim_parallel_resolve_layers(&p, m, &error));
    cr_assert(strstr(error->message, "contradicts first_stage_layers"), "%s", error->message);
    g_clear_error(&error);
}

/*
 * A balanced split follows the recompute mode the ladders of simulate, compare and sweep choose
 * after counting it: full recompute weighs a layer 4/3 more against the head (H = 0.33162 of a
 * layer for the GPT-3 shapes, 0.24871 under full).  11 layers on 3 stages: the last holds
 * round(11.33162 / 3 - 0.33162) = round(3.4456) = 3 without, round(11.24871 / 3 - 0.24871) =
 * round(3.5009) = 4 under full, the rest 8 as 4/4 or 7 as 3/4: 4/4/3 and 3/4/4.  A split
 * given as a list does not move.
 */
Test(stepcost, balanced_stage_layers_follow_the_recompute_mode)
{
    g_autoptr(SsimModel) m = gpt3_8();
    m->layers = 11;
    SsimParallel p = split(1, 1, 3, NULL);
    cr_assert(ssim_parallel_set(&p, "stage_layers", "balanced", NULL));
    cr_assert(ssim_parallel_resolve_layers(&p, m, NULL));
    cr_assert(p.layers_balanced && !p.balance_layers);
    static const struct {
        SsimRecompute mode;
        const char *want;
    } steps[] = {{SSIM_RECOMPUTE_NONE, "4/4/3"},
                 {SSIM_RECOMPUTE_SELECTIVE, "4/4/3"},
                 {SSIM_RECOMPUTE_FULL, "3/4/4"},
                 {SSIM_RECOMPUTE_NONE, "4/4/3"}};
    for (gsize i = 0; i < G_N_ELEMENTS(steps); i++) {
        GError *error = NULL;
        cr_assert(ssim_parallel_set_recompute(&p, m, steps[i].mode, &error), "%s",
                  error ? error->message : "");
        cr_assert_eq(p.recompute, steps[i].mode);
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &p);
        cr_assert_str_eq(got->str, steps[i].want, "step %zu: %s", i, got->str);
        cr_assert(p.layers_balanced && !ssim_parallel_layers_pending(&p));
        cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    }
    SsimParallel listed = split(1, 1, 3, NULL);
    cr_assert(ssim_parallel_set(&listed, "stage_layers", "4/4/3", NULL));
    cr_assert(ssim_parallel_set_recompute(&listed, m, SSIM_RECOMPUTE_FULL, NULL));
    g_autoptr(GString) got = g_string_new(NULL);
    ssim_parallel_append_stage_layers(got, &listed);
    cr_assert_str_eq(got->str, "4/4/3");
    cr_assert_eq(listed.recompute, SSIM_RECOMPUTE_FULL);
    /* Asking for a list after a balanced count ends the balancing. */
    cr_assert(ssim_parallel_set(&p, "stage_layers", "4/4/3", NULL));
    cr_assert_not(p.layers_balanced);
}

/*
 * The FP8 recipe's amax reductions (Transformer Engine's delayed scaling, Megatron-LM's default
 * --fp8-recipe delayed): each chunk pass's fp8_autocast region all-reduces (max) the amaxes of
 * its FP8 GEMMs over the stage's tp x dp GPUs as it ends, forward, and after its first module's
 * backward.  The 8-layer GPT-3 on dp 2 x tp 2 x pp 2, 4 microbatches: per stage and direction 4
 * all-reduces over 4 GPUs ({0,1,2,3} on stage 0), of 4 layers x 4 GEMMs x 3 (forward: input,
 * weight, output) or 2 (backward: the gradients) amaxes x 4 bytes: 192 and 128 bytes.  With v = 2
 * twice as many, of 2 layers each.  Off without fp8, with step cost -fp8_amax, on one GPU a stage,
 * and under a compiled schedule (no Transformer Engine).
 */
Test(stepcost, fp8_amax_reductions_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    p.fp8 = SSIM_FP8_HYBRID;
    cr_assert(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_FP8_AMAX));
    g_autoptr(SsimLowered) l = lower(m, &p);
    for (guint s = 0; s < 2; s++) {
        Ops f = ops(l, s, "fp8.amax_fwd"), b = ops(l, s, "fp8.amax_bwd");
        cr_assert_eq(f.n, 4);
        cr_assert_eq(b.n, 4);
        cr_assert_eq(f.bytes, 4 * 192);
        cr_assert_eq(b.bytes, 4 * 128);
        cr_assert_eq(f.group_n, 4, "tp 2 x dp 2");
        SsimStepCost term;
        cr_assert(ssim_lower_step_cost_of("fp8.amax_bwd", &term));
        cr_assert_eq(term, SSIM_STEP_COST_FP8_AMAX);
    }
    /* The group is the stage's GPUs, the same on every member. */
    const SsimGraph *g = ssim_lowered_graph(l);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (strcmp(ssim_graph_string(g, op->name), "fp8.amax_fwd") != 0)
            continue;
        guint n;
        const guint32 *r = ssim_lowered_group_ranks(l, op->group, &n);
        guint stage = ssim_lowered_global_rank(l, op->rank) / 4;
        for (guint k = 0; k < n; k++)
            cr_assert_eq(r[k], stage * 4 + k);
    }
    /* Interleaved, v = 2: a region per chunk pass, half the layers each. */
    p.virtual_stages = 2;
    cr_assert(ssim_parallel_set(&p, "schedule", "interleaved", NULL));
    g_autoptr(SsimLowered) v2 = lower(m, &p);
    Ops f2 = ops(v2, 0, "fp8.amax_fwd"), b2 = ops(v2, 0, "fp8.amax_bwd");
    cr_assert_eq(f2.n, 8);
    cr_assert_eq(f2.bytes, 8 * 96);
    cr_assert_eq(b2.bytes, 8 * 64);
    /* None without fp8, turned off, on a one-GPU stage, or under a compiled schedule. */
    p = split(2, 2, 2, NULL);
    g_autoptr(SsimLowered) bf16 = lower(m, &p);
    p.fp8 = SSIM_FP8_HYBRID;
    cr_assert(ssim_parallel_set(&p, "step_costs", "-fp8_amax", NULL));
    g_autoptr(SsimLowered) off = lower(m, &p);
    SsimParallel one = split(1, 1, 2, NULL);
    one.fp8 = SSIM_FP8_HYBRID;
    g_autoptr(SsimLowered) single = lower(m, &one);
    SsimParallel alpa = split(2, 2, 2, NULL);
    alpa.fp8 = SSIM_FP8_HYBRID;
    cr_assert(ssim_parallel_set(&alpa, "schedule", "alpa", NULL));
    cr_assert_not(ssim_parallel_step_cost_on(&alpa, m, SSIM_STEP_COST_FP8_AMAX));
    const SsimLowered *none[] = {bf16, off, single};
    for (gsize i = 0; i < G_N_ELEMENTS(none); i++) {
        cr_assert_eq(ops(none[i], 0, "fp8.amax_fwd").n, 0, "case %zu", i);
        cr_assert_eq(ops(none[i], 0, "fp8.amax_bwd").n, 0, "case %zu", i);
    }
}

/*
 * grad_accum (off by default: Megatron-LM fuses the accumulation into the weight-gradient GEMM
 * since 2022-02): after each microbatch's backward every weight gradient of the GPU is added
 * into its main gradient: the bf16 gradient read (2 bytes a parameter), the fp32 main gradient
 * read and written (8) under grad_fp32; 2 + 2 + 2 without it.  Four microbatches of the 8-layer
 * GPT-3 on dp 2 x tp 2 x pp 2: one kernel per layer and microbatch, and one for the embedding
 * (stage 0) or for the final norm and the tied copy (stage 1).
 */
Test(stepcost, grad_accum_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    cr_assert_not(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_GRAD_ACCUM), "default off");
    g_autoptr(SsimLowered) none = lower(m, &p);
    cr_assert_eq(ops(none, 0, "grad_accum").n, 0);

    p = split(2, 2, 2, "+grad_accum");
    g_autoptr(SsimLowered) l = lower(m, &p);
    Ops s0 = ops(l, 0, "grad_accum"), s1 = ops(l, 1, "grad_accum");
    cr_assert_eq(s0.n, 4 * (4 + 1));
    cr_assert_eq(s1.n, 4 * (4 + 1));
    cr_assert_eq(s0.bytes, 4 * P0 * 10);
    cr_assert_eq(s1.bytes, 4 * P1 * 10);

    p = split(2, 2, 2, "+grad_accum/-grad_fp32");
    g_autoptr(SsimLowered) h = lower(m, &p);
    cr_assert_eq(ops(h, 0, "grad_accum").bytes, 4 * P0 * 6);
    cr_assert_eq(ops(h, 1, "grad_accum").bytes, 4 * P1 * 6);

    /* The gradients a DP bucket waits for are the same bytes, now completed by these kernels. */
    g_autofree char *s = ssim_parallel_to_string(&p);
    cr_assert(strstr(s, "+grad_accum"), "%s", s);
}

/*
 * grad_cast (DeepSpeed's BF16_Optimizer, update_hp_grads()): before the add each bf16 gradient is
 * cast to an fp32 copy (2 bytes read, 4 written), which the add then reads in its place (4 + 4
 * read, 4 written): 6 + 12 = 18 bytes a parameter against grad_accum's 10.  The optimizer loops
 * over the parameters in Python, a cast and an add for each tensor: a layer's 12 (QKV, attention
 * output, MLP up and down, their biases, two LayerNorms' weights and biases), the embedding's 2
 * (the table, the learned positions), the last stage's head 3 (the tied copy of the table, the
 * final LayerNorm's two).  It needs the accumulation (grad_accum) and fp32 gradients
 * (grad_fp32).
 */
Test(stepcost, grad_cast_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, "+grad_accum");
    cr_assert_not(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_GRAD_CAST), "default off");
    g_autoptr(SsimLowered) plain = lower(m, &p);
    cr_assert_eq(ops(plain, 0, "grad_accum.cast").n, 0);

    p = split(2, 2, 2, "+grad_accum/+grad_cast");
    g_autoptr(SsimLowered) l = lower(m, &p);
    for (guint rank = 0; rank < 2; rank++) {
        guint64 params = rank == 0 ? P0 : P1;
        Ops cast = ops(l, rank, "grad_accum.cast"), add = ops(l, rank, "grad_accum");
        guint tensors = 4 * 12 + (rank == 0 ? 2 : 3);
        cr_assert_eq(cast.n, 4 * tensors, "rank %u", rank);
        cr_assert_eq(add.n, 4 * tensors, "rank %u", rank);
        cr_assert_eq(cast.bytes, 4 * params * 6, "rank %u", rank);
        cr_assert_eq(add.bytes, 4 * params * 12, "rank %u", rank);
    }
    g_autofree char *s = ssim_parallel_to_string(&p);
    cr_assert(strstr(s, "+grad_cast"), "%s", s);

    /* Without the accumulation's kernels, or into 16-bit gradients, there is no cast to make. */
    const char *bad[] = {"+grad_cast", "+grad_accum/+grad_cast/-grad_fp32"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        SsimParallel q = split(2, 2, 2, bad[i]);
        cr_assert_not(ssim_parallel_validate(&q, m, NULL, &error), "%s", bad[i]);
        cr_assert(strstr(error->message, "grad_cast") &&
                      strstr(error->message, "needs grad_accum and grad_fp32"),
                  "%s", error->message);
    }
    /* An fp32 model's gradients are fp32 already: "all" turns the term on, and it has no op. */
    m->dtype = SSIM_DTYPE_FP32;
    p = split(2, 2, 2, "all");
    g_autoptr(SsimLowered) f = lower(m, &p);
    cr_assert_eq(ops(f, 0, "grad_accum.cast").n, 0);
    cr_assert_eq(ops(f, 0, "grad_accum").bytes, 4 * P0 * 12);
}

/* The vocabulary-parallel cross entropy as Megatron-LM runs it, in fp32 over the T x V/tp logits
 * of a microbatch (GPT-3's 50257 words over tp 2: 25129 a GPU; T = 2048): the forward's passes
 * (the fp32 copy 2 + 4, max 4, subtract 8, exp 8, sum 4, softmax 8) are dt + 36 = 38 bytes a
 * logit, the backward's (scale 8, back to bf16 4 + 2) 14; one of each per microbatch, on the
 * last stage only, with one all-reduce of three floats a token. */
Test(stepcost, cross_entropy_bytes_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    g_autoptr(SsimLowered) l = lower(m, &p);
    const guint64 logits = 2048ull * 25129;
    Ops fwd = ops(l, 1, "loss"), bwd = ops(l, 1, "loss.bwd");
    cr_assert_eq(fwd.n, 4);
    cr_assert_eq(fwd.bytes, 4 * logits * 38, "%" G_GUINT64_FORMAT, fwd.bytes);
    cr_assert_eq(bwd.n, 4);
    cr_assert_eq(bwd.bytes, 4 * logits * 14, "%" G_GUINT64_FORMAT, bwd.bytes);
    cr_assert_eq(ops(l, 0, "loss").n, 0);
    m->dtype = SSIM_DTYPE_FP32;
    g_autoptr(SsimLowered) f = lower(m, &p);
    cr_assert_eq(ops(f, 1, "loss").bytes, 4 * logits * 40);
    cr_assert_eq(ops(f, 1, "loss.bwd").bytes, 4 * logits * 16);
}

/* The fused cross entropies on the same logits, bf16 (2 bytes): Megatron-Core's native fusion
 * (the fp32 copy and the max in one pass 2 + 4, exp in place 8, sum 4, division in place 8) is
 * 26 bytes a logit forward, the backward unchanged (14); Transformer Engine's Triton kernels
 * read the bf16 logits twice and write the gradient over them once forward (3 x 2 = 6) and
 * scale it in place backward (2 x 2 = 4), nothing in fp32.  The tp reduction and the other
 * ops of the head do not change. */
Test(stepcost, fused_cross_entropy_bytes_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    const guint64 logits = 2048ull * 25129;
    const struct {
        const char *kind;
        guint64 fwd, bwd;
    } cases[] = {{"unfused", 38, 14}, {"native", 26, 14}, {"te", 6, 4}};
    g_autoptr(SsimLowered) base = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        SsimParallel p = split(2, 2, 2, NULL);
        cr_assert(ssim_parallel_set(&p, "cross_entropy", cases[i].kind, NULL));
        g_autoptr(SsimLowered) l = lower(m, &p);
        cr_assert_eq(ops(l, 1, "loss").bytes, 4 * logits * cases[i].fwd, "%s", cases[i].kind);
        cr_assert_eq(ops(l, 1, "loss.bwd").bytes, 4 * logits * cases[i].bwd, "%s", cases[i].kind);
        if (base == NULL) {
            base = g_steal_pointer(&l);
            continue;
        }
        cr_assert_eq(ops(l, 1, "lm_head").bytes, ops(base, 1, "lm_head").bytes);
        cr_assert_eq(ops(l, 1, "tp").n, ops(base, 1, "tp").n, "%s", cases[i].kind);
        cr_assert_eq(ops(l, 0, "loss").n, 0);
    }
}

/*
 * Rotary positions (lower-steps.c) on dp 2 x tp 2 x pp 2, 4 microbatches of 1 sequence: the
 * same 8 layers with rotary positions and grouped-query attention of 8 key-value heads.  A tp
 * rank holds 48 query heads and 4 key-value heads of 128: Q is 2048 x 6144 and K 2048 x 512
 * elements a microbatch; the fused RoPE reads and writes both (2 + 2 bytes an element) in the
 * forward and their gradients in the backward, once a layer and microbatch: 16 of each a stage.
 * A selective recompute does not repeat it; a full one does.  Learned positions have none.
 */
Test(stepcost, rope_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    g_autoptr(SsimLowered) learned = lower(m, &p);
    m->position = SSIM_POSITION_ROTARY;
    m->kv_heads = 8;
    const guint64 bytes = 16 * 2048ull * (6144 + 512) * 4;
    p.recompute = SSIM_RECOMPUTE_SELECTIVE;
    g_autoptr(SsimLowered) l = lower(m, &p);
    p.recompute = SSIM_RECOMPUTE_FULL;
    g_autoptr(SsimLowered) full = lower(m, &p);
    for (guint s = 0; s < 2; s++) {
        Ops f = ops(l, s, "rope"), b = ops(l, s, "rope.bwd");
        cr_assert_eq(f.n, 16, "stage %u: %u", s, f.n);
        cr_assert_eq(f.bytes, bytes, "stage %u: %" G_GUINT64_FORMAT, s, f.bytes);
        cr_assert_eq(b.n, 16);
        cr_assert_eq(b.bytes, bytes);
        cr_assert_eq(ops(full, s, "rope").n, 32, "the forward's and the recompute's");
        cr_assert_eq(ops(full, s, "rope").bytes, 2 * bytes);
        cr_assert_eq(ops(learned, s, "rope").n + ops(learned, s, "rope.bwd").n, 0);
    }
}

/*
 * FP8 training (parallel.h, SsimFp8) on dp 2 x tp 2 x pp 2, 4 microbatches of 1 sequence: the
 * casts it adds, by hand.  A layer's FP8 GEMMs hold 6 h^2 = 905,969,664 weights on a tp rank
 * (QKV 12288 x 18432, output 6144 x 12288, MLP 12288 x 24576 and 24576 x 12288), 4 layers a
 * stage; each cast reads 2 bytes and writes 2 (the FP8 copy and its transpose) an element.
 * Forward, the attention output projection's input (2048 x 6144) is cast; backward, each FP8
 * GEMM's output gradient (2048 tokens x its n).  The weights are cast once a step, counted with
 * the optimizer, and kept with their transposes: 2 more bytes a weight in memory.
 */
Test(stepcost, fp8_casts_by_hand)
{
    g_autoptr(SsimModel) m = gpt3_8();
    SsimParallel p = split(2, 2, 2, NULL);
    g_autoptr(SsimLowered) bf16 = lower(m, &p);
    p.fp8 = SSIM_FP8_HYBRID;
    g_autoptr(SsimLowered) l = lower(m, &p);
    const guint64 W = 905969664ull * 4, T = 2048, n = 4 * 4; /* layers x microbatches */
    cr_assert_eq(ssim_model_fp8_layer_params(m, 2), 905969664ull);
    const struct {
        const char *name;
        guint64 elements;
    } casts[] = {{"attn_out.cast", T * 6144},
                 {"qkv.grad_cast", T * 18432},
                 {"attn_out.grad_cast", T * 12288},
                 {"ffn_up.grad_cast", T * 24576},
                 {"ffn_down.grad_cast", T * 12288}};
    for (guint s = 0; s < 2; s++) {
        for (gsize i = 0; i < G_N_ELEMENTS(casts); i++) {
            Ops o = ops(l, s, casts[i].name);
            cr_assert_eq(o.n, n, "%s: %u", casts[i].name, o.n);
            cr_assert_eq(o.bytes, n * casts[i].elements * 4, "%s", casts[i].name);
            cr_assert_eq(ops(bf16, s, casts[i].name).n, 0, "no %s without fp8", casts[i].name);
        }
        Ops w = ops(l, s, "fp8.weight_cast");
        cr_assert_eq(w.n, 1);
        cr_assert_eq(w.bytes, W * 4, "stage %u: %" G_GUINT64_FORMAT, s, w.bytes);
        cr_assert_eq(ops(bf16, s, "fp8.weight_cast").n, 0);
        SsimStepCost term;
        cr_assert(ssim_lower_step_cost_of("fp8.weight_cast", &term));
        cr_assert_eq(term, SSIM_STEP_COST_OPTIMIZER);
        SsimMemory a, b;
        ssim_memory_estimate(&a, m, &p, s, 1);
        p.fp8 = SSIM_FP8_OFF;
        ssim_memory_estimate(&b, m, &p, s, 1);
        p.fp8 = SSIM_FP8_HYBRID;
        cr_assert_eq(a.weights, b.weights + 2 * W, "stage %u", s);
        /* ... and keeps its linear layers' inputs in FP8 (memory.c): fewer activation bytes. */
        cr_assert_eq(a.total - a.activations, b.total - b.activations + 2 * W);
        cr_assert_lt(a.activations, b.activations);
    }
}
