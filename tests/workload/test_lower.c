/*
 * Lowering against hand counts and closed forms: ops per stage and class for sequential and
 * parallel blocks, with and without tensor-parallel collectives, sequence parallelism and
 * recompute; FLOPs per iteration against Narayanan et al.'s 72 B s l h^2 (1 + s/(6h) +
 * V/(12 l h)) and, under full recompute, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) for every bundled
 * GPT shape; conservation of gradient bytes through DP bucketing; every schedule and option
 * combination lowering to a graph that replays without deadlock.
 */
#include <criterion/criterion.h>

#include "tests/common/lowertest.h"

#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
#include <shiftsim/runtime.h>

#include <math.h>
#include <string.h>

static SsimModel *load_model(const char *name, guint layers)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load(name, &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    if (layers)
        m->layers = layers;
    return m;
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

static SsimLowered *lower(const SsimModel *model, const SsimParallel *par, gboolean exact)
{
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    o.exact = exact;
    return test_lower(model, par, &o);
}

/* Ops of graph rank `rank` in class `cls` (and, when kind >= 0, of that op kind). */
static guint count(const SsimLowered *l, guint rank, SsimOpClass cls, int kind)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    guint n = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank == rank && ssim_lowered_op_class(l, i) == cls &&
            (kind < 0 || op->kind == (guint)kind))
            n++;
    }
    return n;
}

static guint kernels(const SsimLowered *l, guint rank)
{
    return count(l, rank, SSIM_OPCLASS_FWD, -1) + count(l, rank, SSIM_OPCLASS_BWD, -1) +
           count(l, rank, SSIM_OPCLASS_RECOMPUTE, SSIM_OP_COMPUTE) +
           count(l, rank, SSIM_OPCLASS_OPTIMIZER, -1);
}

Test(lower, op_counts_sequential_tp2_pp2)
{
    /* GPT-3 shape cut to 8 layers: 4 per stage, m = 4, tp 2, all-reduce, no recompute. */
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 8);
    SsimParallel par = split(1, 2, 2, 1, 4, "1f1b");
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    cr_assert_eq(ssim_graph_n_ranks(ssim_lowered_graph(l)), 2);
    /* Stage 0, per microbatch: embed + 4 x 12 forward kernels, 4 x 16 backward + embed.bwd;
     * plus the gradient norm's local pass, the optimizer and the gradient buffer's zeroing
     * (GPT-3 is bf16: no loss scaling).
     * TP: embed's all-reduce + 4 x 2 forward + 4 x 2 backward. */
    cr_assert_eq(kernels(l, 0), 4 * (1 + 4 * 12 + 4 * 16 + 1) + 3);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_TP, SSIM_OP_COLLECTIVE), 4 * (1 + 4 * 2 + 4 * 2));
    /* One send forward and one receive backward per microbatch. */
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_PP, SSIM_OP_SEND), 4);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_PP, SSIM_OP_RECV), 4);
    /* Stage 1: 4 x 12 + final_norm lm_head loss; 4 x 16 + loss.bwd lm_head.dgrad lm_head.wgrad
     * final_norm.bwd.  TP: 8 + the loss's all-reduce forward, 8 + the head input's backward. */
    cr_assert_eq(kernels(l, 1), 4 * (4 * 12 + 3 + 4 * 16 + 4) + 3);
    cr_assert_eq(count(l, 1, SSIM_OPCLASS_TP, SSIM_OP_COLLECTIVE), 4 * (8 + 1 + 8 + 1));
    cr_assert_eq(count(l, 1, SSIM_OPCLASS_PP, SSIM_OP_RECV), 4);
    cr_assert_eq(count(l, 1, SSIM_OPCLASS_PP, SSIM_OP_SEND), 4);
    /* Tied embeddings and pp > 1: one embedding-gradient all-reduce on each end stage, and the
     * gradient norm's all-reduce over tp x pp; dp = 1 has no other gradient reduction. */
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_DP, -1), 2);
    cr_assert_eq(count(l, 1, SSIM_OPCLASS_DP, -1), 2);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_RECOMPUTE, -1), 0);
}

Test(lower, op_counts_parallel_block_full_recompute)
{
    /* GPT-J's parallel block: one TP collective per block and direction, plus the recomputed
     * forward (12 kernels, the rotary positions' among them, and its collective) before every
     * layer's backward. */
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 4;
    SsimParallel par = split(1, 4, 1, 1, 2, "1f1b");
    par.recompute = SSIM_RECOMPUTE_FULL;
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_FWD, SSIM_OP_COMPUTE), 2 * (1 + 4 * 12 + 3));
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_BWD, SSIM_OP_COMPUTE), 2 * (4 * 16 + 4 + 1));
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_RECOMPUTE, SSIM_OP_COMPUTE), 2 * 4 * 12);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_TP, -1), 2 * (1 + 4 + 1 + 4 + 1 + 4));
    /* No pipeline, no data parallelism, untied: nothing else but the gradient norm's
     * all-reduce over the tp group at the step's end. */
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_PP, -1), 0);
    cr_assert_eq(count(l, 0, SSIM_OPCLASS_DP, -1), 1);
}

static guint32 find_op(const SsimGraph *g, guint32 from, const char *name);

Test(lower, op_counts_sequence_parallel)
{
    /* Sequential block with SP: forward RS + AG around each of the two blocks, backward AG + RS,
     * and before each column-parallel input-gradient GEMM (QKV, MLP up, the head) its input
     * gathered again for the weight gradient; embedding RS, head AG forward, RS backward,
     * embed.bwd AG; the loss all-reduce stays. */
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
    SsimParallel par = split(1, 8, 1, 1, 1, "1f1b");
    par.sequence_parallel = TRUE;
    par.tp_comm = SSIM_TP_COMM_RS_AG;
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    const SsimGraph *g = ssim_lowered_graph(l);
    guint rs = 0, ag = 0, ar = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (ssim_lowered_op_class(l, i) != SSIM_OPCLASS_TP)
            continue;
        rs += op->coll == SSIM_COLL_REDUCESCATTER;
        ag += op->coll == SSIM_COLL_ALLGATHER;
        ar += op->coll == SSIM_COLL_ALLREDUCE;
    }
    cr_assert_eq(rs, 2 * 2 + 2 * 2 + 1 + 1);
    cr_assert_eq(ag, 2 * 2 + 2 * 2 + 2 * 2 + 1 + 1 + 1);
    cr_assert_eq(ar, 1);
    /* The re-gather runs beside the input-gradient GEMM (which does not wait for it) and the
     * weight-gradient GEMM waits for it. */
    const char *dgrads[] = {"qkv.dgrad", "ffn_up.dgrad", "lm_head.dgrad"},
               *wgrads[] = {"qkv.wgrad", "ffn_up.wgrad", "lm_head.wgrad"};
    for (gsize k = 0; k < G_N_ELEMENTS(dgrads); k++) {
        guint32 d = find_op(g, 0, dgrads[k]), w = find_op(g, d, wgrads[k]);
        const SsimOp *a = ssim_graph_op(g, d - 1);
        cr_assert(a->kind == SSIM_OP_COLLECTIVE && a->coll == SSIM_COLL_ALLGATHER, "%s", dgrads[k]);
        cr_assert_eq(a->bytes, 2048ull * 12288 * 2);
        gboolean d_waits = FALSE, w_waits = FALSE;
        guint nd;
        const guint32 *dep = ssim_graph_deps(g, d, &nd);
        for (guint i = 0; i < nd; i++)
            d_waits |= dep[i] == d - 1;
        dep = ssim_graph_deps(g, w, &nd);
        for (guint i = 0; i < nd; i++)
            w_waits |= dep[i] == d - 1;
        cr_assert(!d_waits && w_waits, "%s: %d %d", dgrads[k], d_waits, w_waits);
    }
}

Test(lower, xla_permute_every_iteration)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 4);
    SsimParallel par = split(1, 1, 4, 1, 3, "xla");
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    for (guint s = 0; s < 4; s++) {
        /* 2 (m + p - 1) = 12 permutes, no point-to-point. */
        cr_assert_eq(count(l, s, SSIM_OPCLASS_PP, SSIM_OP_COLLECTIVE), 12);
        cr_assert_eq(count(l, s, SSIM_OPCLASS_PP, SSIM_OP_SEND), 0);
    }
}

/* Narayanan et al. 2021, eq. 3, with the 72 and 96 prefactors; Vterm 12 or 16. */
static double narayanan(const SsimModel *m, double B, double prefactor, double vterm)
{
    double s = m->seq_len, l = m->layers, h = m->hidden, V = m->vocab;
    return prefactor * B * s * l * h * h * (1 + s / (6 * h) + V / (vterm * l * h));
}

Test(lower, flops_match_narayanan_for_gpt_shapes)
{
    const char *names[] = {"gpt-3-175b",          "megatron-gpt-1.7b",   "megatron-gpt-3.6b",
                           "megatron-gpt-7.5b",   "megatron-gpt-18.4b",  "megatron-gpt-39.1b",
                           "megatron-gpt-76.1b",  "megatron-gpt-145.6b", "megatron-gpt-310.1b",
                           "megatron-gpt-529.6b", "megatron-gpt-1t"};
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(SsimModel) model = load_model(names[i], 0);
        guint pp = model->layers % 4 == 0 ? 4 : model->layers % 3 == 0 ? 3 : 1;
        SsimParallel par = split(2, 2, pp, 1, pp, "1f1b");
        double B = par.global_batch;
        {
            g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
            double want = narayanan(model, B, 72, 12);
            double got = ssim_lowered_flops(l, FALSE);
            cr_assert(fabs(got / want - 1) < 0.01, "%s: %g vs %g", names[i], got, want);
            cr_assert_float_eq(ssim_lowered_flops(l, TRUE), got, got * 1e-12);
        }
        par.recompute = SSIM_RECOMPUTE_FULL;
        {
            g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
            double want = narayanan(model, B, 96, 16);
            double got = ssim_lowered_flops(l, TRUE);
            cr_assert(fabs(got / want - 1) < 0.01, "%s recompute: %g vs %g", names[i], got, want);
            cr_assert(fabs(ssim_lowered_flops(l, FALSE) / narayanan(model, B, 72, 12) - 1) < 0.01);
        }
    }
}

Test(lower, flops_match_the_model_module_for_every_recompute_mode)
{
    /* LLaMA-2 70B: grouped-query attention and SwiGLU, which the 72 formula does not cover. */
    g_autoptr(SsimModel) model = load_model("llama-2-70b", 0);
    /* Every mode, op-level checkpointing under flash attention too, and full recompute of 2 of
     * a stage's 20 layers. */
    for (int mode = 0; mode < SSIM_RECOMPUTE_N + 2; mode++) {
        SsimParallel par = split(2, 8, 4, 1, 4, "1f1b");
        par.recompute = mode < SSIM_RECOMPUTE_N    ? (SsimRecompute)mode
                        : mode == SSIM_RECOMPUTE_N ? SSIM_RECOMPUTE_OP
                                                   : SSIM_RECOMPUTE_FULL;
        if (mode == SSIM_RECOMPUTE_N)
            par.attention = SSIM_ATTENTION_FLASH;
        if (mode == SSIM_RECOMPUTE_N + 1)
            par.recompute_layers = 2;
        g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
        double want_model = ssim_model_iteration_flops(model, par.global_batch);
        double want_hw = ssim_parallel_hardware_flops(&par, model);
        cr_assert(fabs(ssim_lowered_flops(l, FALSE) / want_model - 1) < 1e-3, "mode %d", mode);
        cr_assert(fabs(ssim_lowered_flops(l, TRUE) / want_hw - 1) < 1e-3, "mode %d", mode);
        if (mode == SSIM_RECOMPUTE_N + 1) /* a tenth of full recompute's extra work */
            cr_assert_float_eq(
                want_hw - want_model,
                (ssim_model_hardware_flops(model, par.global_batch, SSIM_RECOMPUTE_FULL) -
                 want_model) /
                    10,
                want_model * 1e-9);
    }
}

Test(lower, exact_and_representative_have_the_same_flops)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 4);
    SsimParallel par = split(2, 2, 2, 1, 4, "1f1b");
    g_autoptr(SsimLowered) rep = lower(model, &par, FALSE);
    g_autoptr(SsimLowered) ex = lower(model, &par, TRUE);
    cr_assert_eq(ssim_lowered_weight(rep), 4);
    cr_assert_eq(ssim_lowered_weight(ex), 1);
    cr_assert_eq(ssim_graph_n_ranks(ssim_lowered_graph(ex)), 8);
    cr_assert_eq(ssim_graph_n_ops(ssim_lowered_graph(ex)),
                 4 * ssim_graph_n_ops(ssim_lowered_graph(rep)));
    cr_assert_float_eq(ssim_lowered_flops(rep, TRUE), ssim_lowered_flops(ex, TRUE), 1);
    /* The representative TP group of stage 1 is one graph rank charged as its 2 GPUs. */
    const SsimGraph *g = ssim_lowered_graph(rep);
    guint32 grp = ssim_graph_find_group(g, "tp.4");
    cr_assert_neq(grp, SSIM_NONE);
    guint n, ng;
    const guint32 *logical = ssim_lowered_group_ranks(rep, grp, &n);
    ssim_graph_group_ranks(g, grp, &ng);
    cr_assert_eq(ng, 1);
    cr_assert_eq(n, 2);
    cr_assert_eq(logical[0], 4);
    cr_assert_eq(logical[1], 5);
    cr_assert_eq(ssim_lowered_global_rank(rep, 1), 4);
    cr_assert_eq(ssim_lowered_stage(rep, 1), 1);
}

/* Sum of the bytes of rank `rank`'s gradient reductions (excluding the embedding's). */
static guint64 dp_bytes(const SsimLowered *l, guint rank, guint *n_ops)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    guint64 sum = 0;
    *n_ops = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != rank || ssim_lowered_op_class(l, i) != SSIM_OPCLASS_DP ||
            op->coll == SSIM_COLL_ALLGATHER ||
            !g_str_has_prefix(ssim_graph_string(g, op->name), "dp."))
            continue;
        sum += op->bytes;
        (*n_ops)++;
    }
    return sum;
}

Test(lower, gradient_bytes_are_conserved_by_bucketing)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 8);
    SsimParallel par = split(2, 2, 2, 1, 4, "1f1b");
    guint n_off, n_on;
    g_autoptr(SsimLowered) off = lower(model, &par, FALSE);
    par.dp_bucket_bytes = 40u << 20;
    g_autoptr(SsimLowered) on = lower(model, &par, FALSE);
    for (guint s = 0; s < 2; s++) {
        guint64 a = dp_bytes(off, s, &n_off), b = dp_bytes(on, s, &n_on);
        cr_assert_eq(n_off, 1, "bucket off: one reduction per GPU");
        cr_assert(n_on > 4, "buckets: %u reductions", n_on);
        cr_assert_eq(a, b);
        /* Within 1% of the stage's parameters / tp in fp32: GPT-3 is bf16, whose gradients
         * Megatron-LM reduces in fp32 (step cost grad_fp32, test step_costs_* below). */
        double want = (double)ssim_model_stage_params(model, 2, s) / 2 * 4;
        cr_assert(fabs((double)a / want - 1) < 0.01, "stage %u: %g vs %g", s, (double)a, want);
    }
    /* ZeRO-1: reduce-scatter instead, then an all-gather of the weights. */
    par.zero_stage = 1;
    g_autoptr(SsimLowered) z = lower(model, &par, FALSE);
    const SsimGraph *g = ssim_lowered_graph(z);
    guint ag = 0, rs = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (ssim_lowered_op_class(z, i) != SSIM_OPCLASS_DP)
            continue;
        ag += op->coll == SSIM_COLL_ALLGATHER;
        rs += op->coll == SSIM_COLL_REDUCESCATTER;
    }
    cr_assert_eq(ag, 2);
    cr_assert(rs > 8);
}

Test(lower, every_schedule_and_option_replays)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 8);
    const char *schedules[] = {"gpipe", "xla", "1f1b", "interleaved"};
    for (gsize si = 0; si < G_N_ELEMENTS(schedules); si++) {
        for (guint opt = 0; opt < 8; opt++) {
            for (guint exact = 0; exact < 2; exact++) {
                SsimParallel par = split(2, 2, 2, si == 3 ? 2 : 1, 4, schedules[si]);
                par.recompute = (SsimRecompute)(opt % 3);
                if (opt & 4) {
                    par.sequence_parallel = TRUE;
                    par.tp_comm = SSIM_TP_COMM_RS_AG;
                }
                if (opt == 3)
                    par.tp_comm = SSIM_TP_COMM_RS_AG;
                par.dp_bucket_bytes = opt & 1 ? (16u << 20) : 0;
                par.zero_stage = opt >= 6;
                g_autoptr(SsimLowered) l = lower(model, &par, exact);
                GError *error = NULL;
                SsimTimeline *t = ssim_runtime_run(ssim_lowered_graph(l), NULL, NULL, &error);
                cr_assert_not_null(t, "%s opt %u exact %u: %s", schedules[si], opt, exact,
                                   error ? error->message : "");
                cr_assert_gt(t->makespan, 0);
                ssim_timeline_free(t);
            }
        }
    }
}

Test(lower, schedule_mismatch_is_an_error)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 8);
    SsimParallel par = split(1, 1, 2, 1, 4, "1f1b");
    g_autoptr(SsimSchedule) s = ssim_schedule_new(SSIM_SCHEDULE_1F1B, 2, 1, 8, NULL);
    g_autoptr(GError) error = NULL;
    SsimLowered *l = ssim_lower(model, &par, s, NULL, &error);
    cr_assert_null(l);
    cr_assert(strstr(error->message, "built for pp 2, v 1, m 8 but the configuration has pp 2, "
                                     "v 1, m 4"),
              "%s", error->message);
}

/* Op names of a lowered graph in op order, leaving out those named in `skip` (NULL-ended). */
static GPtrArray *op_names(const SsimLowered *l, const char *const *skip)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    GPtrArray *names = g_ptr_array_new();
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        const char *name = op->name == SSIM_NONE ? "" : ssim_graph_string(g, op->name);
        gboolean keep = TRUE;
        for (guint k = 0; skip && skip[k]; k++)
            keep &= strcmp(name, skip[k]) != 0;
        if (keep)
            g_ptr_array_add(names, (gpointer)name);
    }
    return names;
}

/* The bytes and FLOPs of every op named `name` (all must agree), and how many there are. */
static guint named_ops_flops(const SsimLowered *l, const char *name, guint64 *bytes, double *flops)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    guint n = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->name == SSIM_NONE || strcmp(ssim_graph_string(g, op->name), name) != 0)
            continue;
        if (n++ == 0) {
            *bytes = op->bytes;
            *flops = op->flops;
        }
        cr_assert_eq(op->bytes, *bytes, "%s: %" G_GUINT64_FORMAT " bytes, not %" G_GUINT64_FORMAT,
                     name, op->bytes, *bytes);
        cr_assert_float_eq(op->flops, *flops, 1e-9, "%s", name);
    }
    return n;
}

/* The same for memory-bound kernels: no FLOPs. */
static guint named_ops(const SsimLowered *l, const char *name, guint64 *bytes)
{
    double flops = 0;
    guint n = named_ops_flops(l, name, bytes, &flops);
    cr_assert_float_eq(flops, 0, 1e-9, "%s", name);
    return n;
}

/* Attention dropout (torch.nn.Dropout on the probabilities) adds a kernel after every softmax
 * (forward, its recompute) that reads them and writes the dropped ones and a byte mask, and one
 * before every softmax backward that reads the gradient and the mask and writes the gradient:
 * E (2 dt + 1) bytes over the b (a / t) s^2 scores, dt = 2 for bf16; nothing else changes. */
Test(lower, attention_dropout_adds_its_own_kernels)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
    SsimParallel par = split(1, 2, 1, 1, 2, "1f1b");
    par.recompute = SSIM_RECOMPUTE_FULL;
    g_autoptr(SsimLowered) off = lower(model, &par, FALSE);
    model->attention_dropout = TRUE;
    g_autoptr(SsimLowered) on = lower(model, &par, FALSE);
    /* b = 1, a = 96 heads over tp 2, s = 2048. */
    const guint64 E = 1ull * 48 * 2048 * 2048, D = E * (2 * 2 + 1);
    guint64 fwd_bytes = 0, bwd_bytes = 0, sm_off = 0, sm_on = 0;
    /* 2 layers x 2 microbatches: a forward and a recompute each, and a backward. */
    cr_assert_eq(named_ops(on, "attn_dropout", &fwd_bytes), 8);
    cr_assert_eq(named_ops(on, "attn_dropout.bwd", &bwd_bytes), 4);
    cr_assert_eq(fwd_bytes, D);
    cr_assert_eq(bwd_bytes, D);
    cr_assert_eq(named_ops(off, "attn_dropout", &fwd_bytes), 0);
    cr_assert_eq(named_ops(on, "softmax", &sm_on), 8);
    cr_assert_eq(named_ops(off, "softmax", &sm_off), 8);
    cr_assert_eq(sm_on, sm_off);
    const char *const skip[] = {"attn_dropout", "attn_dropout.bwd", NULL};
    g_autoptr(GPtrArray) a = op_names(off, NULL), b = op_names(on, skip);
    cr_assert_eq(a->len, b->len);
    cr_assert_eq(ssim_graph_n_ops(ssim_lowered_graph(on)), a->len + 12);
    for (guint i = 0; i < a->len; i++)
        cr_assert_str_eq(g_ptr_array_index(b, i), g_ptr_array_index(a, i), "op %u", i);
}

/* ALiBi's bias, unfused (Megatron-DeepSpeed's baddbmm with beta = 1, as BLOOM trained): before
 * every scores GEMM (forward, recompute) a kernel writes the bias, broadcast, over the E =
 * b (a / t) s^2 scores (E dt bytes), and the GEMM reads them back (E dt more than without);
 * nothing in the backward, where the bias has no gradient.  Flash attention adds it in its
 * kernel. */
Test(lower, alibi_writes_the_scores_first)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
    SsimParallel par = split(1, 2, 1, 1, 2, "1f1b");
    par.recompute = SSIM_RECOMPUTE_FULL;
    g_autoptr(SsimLowered) learned = lower(model, &par, FALSE);
    model->position = SSIM_POSITION_ALIBI;
    g_autoptr(SsimLowered) alibi = lower(model, &par, FALSE);
    const guint64 E = 1ull * 48 * 2048 * 2048;
    guint64 bias = 0, score_learned = 0, score_alibi = 0;
    double flops_learned = 0, flops_alibi = 0;
    cr_assert_eq(named_ops(alibi, "alibi", &bias), 8); /* 2 layers x 2 microbatches x 2 */
    cr_assert_eq(bias, E * 2);
    cr_assert_eq(named_ops(learned, "alibi", &bias), 0);
    cr_assert_eq(named_ops_flops(learned, "attn_score", &score_learned, &flops_learned), 8);
    cr_assert_eq(named_ops_flops(alibi, "attn_score", &score_alibi, &flops_alibi), 8);
    cr_assert_eq(score_alibi, score_learned + E * 2);
    cr_assert_float_eq(flops_alibi, flops_learned, 1e-9);
    g_autoptr(GPtrArray) names = op_names(alibi, NULL);
    guint at = 0;
    while (at < names->len && strcmp(g_ptr_array_index(names, at), "alibi") != 0)
        at++;
    cr_assert_str_eq(g_ptr_array_index(names, at + 1), "attn_score");

    par.attention = SSIM_ATTENTION_FLASH;
    g_autoptr(SsimLowered) flash = lower(model, &par, FALSE);
    cr_assert_eq(named_ops(flash, "alibi", &bias), 0);
}

/*
 * Where Megatron-LM's fused softmax cannot run (ssim_parallel_softmax_fallback: GPT-3's 96 heads
 * cut to 40, so tp 2 leaves 20 a GPU, 20 attention batches at b = 1, a multiple of 4, fused; at
 * tp 8, 5, not), Megatron-LM's own layers run PyTorch's operators in fp32 instead of its one
 * kernel each way: E = 5 x 2048^2 scores, dt = 2.  Forward: the cast to fp32 (E (2 + 4)), the
 * scale and the in-place mask (8 E each), the softmax (8 E), the cast back (E (4 + 2)); backward:
 * the cast's (E (2 + 4)), the softmax's (the gradient and its fp32 output read, the gradient
 * written: 12 E), the mask's and the scale's (8 E each), the first cast's (E (4 + 2)).  Four
 * kernels more each way, in every forward, recompute and backward.  At tp 2 the fused kernels
 * stay: one each way, of 4 E dt forward and 3 E dt backward (E = 20 x 2048^2).
 */
Test(lower, softmax_fallback_runs_pytorch_kernels)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
    model->heads = model->kv_heads = 40;
    model->hidden = 40 * 128;
    model->attention_dropout = FALSE;
    SsimParallel par = split(1, 8, 1, 1, 2, "1f1b");
    par.recompute = SSIM_RECOMPUTE_FULL;
    par.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    cr_assert(ssim_parallel_softmax_fallback(&par, model));
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    const guint64 E = 5ull * 2048 * 2048;
    struct {
        const char *name;
        guint64 bytes;
        guint n;
    } want[] = {
        {"softmax.cast", 6 * E, 8},      {"softmax.scale", 8 * E, 8},
        {"softmax.mask", 8 * E, 8},      {"softmax", 8 * E, 8},
        {"softmax.cast_out", 6 * E, 8},  {"softmax.cast_out.bwd", 6 * E, 4},
        {"softmax.bwd", 12 * E, 4},      {"softmax.mask.bwd", 8 * E, 4},
        {"softmax.scale.bwd", 8 * E, 4}, {"softmax.cast.bwd", 6 * E, 4},
    };
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        guint64 bytes = 0;
        cr_assert_eq(named_ops(l, want[i].name, &bytes), want[i].n, "%s", want[i].name);
        cr_assert_eq(bytes, want[i].bytes, "%s", want[i].name);
    }
    /* In order: forward cast, scale, mask, softmax, cast back between the two GEMMs. */
    g_autoptr(GPtrArray) names = op_names(l, NULL);
    guint at = 0;
    while (at < names->len && strcmp(g_ptr_array_index(names, at), "attn_score") != 0)
        at++;
    const char *const order[] = {"attn_score", "softmax.cast",     "softmax.scale", "softmax.mask",
                                 "softmax",    "softmax.cast_out", "attn_ctx"};
    for (guint k = 0; k < G_N_ELEMENTS(order); k++)
        cr_assert_str_eq(g_ptr_array_index(names, at + k), order[k], "op %u", at + k);

    /* The same split at tp 2 keeps the fused kernels: four fewer each way and pass. */
    SsimParallel fused = split(1, 2, 1, 1, 2, "1f1b");
    fused.recompute = SSIM_RECOMPUTE_FULL;
    fused.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    cr_assert_not(ssim_parallel_softmax_fallback(&fused, model));
    g_autoptr(SsimLowered) f = lower(model, &fused, FALSE);
    guint64 bytes = 0;
    const guint64 E2 = 20ull * 2048 * 2048;
    cr_assert_eq(named_ops(f, "softmax.cast", &bytes), 0);
    cr_assert_eq(named_ops(f, "softmax", &bytes), 8);
    cr_assert_eq(bytes, 4 * E2 * 2);
    cr_assert_eq(named_ops(f, "softmax.bwd", &bytes), 4);
    cr_assert_eq(bytes, 3 * E2 * 2);
    cr_assert_eq(kernels(l, 0), kernels(f, 0) + 4 * (8 + 4));
}

/*
 * Hidden dropout: each residual add's forward kernel also writes a byte mask (T h bytes: b = 1,
 * s = 2048, h = 12288, 25,165,824), in the forward and its recompute, and the backward gets a
 * kernel per residual that reads the gradient and the mask and writes the gradient: T h (2 dt
 * + 1) = 125,829,120 bytes; nothing else changes.  With sequence parallelism (tp 2) the residual
 * stream is the tp shard: half of each.
 */
Test(lower, hidden_dropout_adds_masks_and_backward_kernels)
{
    for (guint sp = 0; sp < 2; sp++) {
        g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
        SsimParallel par = split(1, 2, 1, 1, 1, "1f1b");
        par.recompute = SSIM_RECOMPUTE_FULL;
        if (sp)
            cr_assert(ssim_parallel_set(&par, "sp", "on", NULL));
        g_autoptr(SsimLowered) off = lower(model, &par, FALSE);
        model->hidden_dropout = TRUE;
        g_autoptr(SsimLowered) on = lower(model, &par, FALSE);
        const SsimGraph *a = ssim_lowered_graph(off), *b = ssim_lowered_graph(on);
        const guint64 mask = 2048ull * 12288 / (sp ? 2 : 1), bwd = mask * 5;
        guint masks = 0, kernels = 0;
        guint32 j = 0;
        for (guint32 i = 0; i < ssim_graph_n_ops(b); i++) {
            const SsimOp *y = ssim_graph_op(b, i);
            const char *name = y->name == SSIM_NONE ? "" : ssim_graph_string(b, y->name);
            if (strcmp(name, "dropout1.bwd") == 0 || strcmp(name, "dropout2.bwd") == 0) {
                cr_assert_eq(y->bytes, bwd, "%s", name);
                kernels++;
                continue;
            }
            const SsimOp *x = ssim_graph_op(a, j++);
            gboolean res = strcmp(name, "residual1") == 0 || strcmp(name, "residual2") == 0;
            cr_assert_eq(y->bytes, x->bytes + (res ? mask : 0), "op %u (%s)", i, name);
            masks += res;
        }
        cr_assert_eq(j, ssim_graph_n_ops(a));
        /* 2 layers, 1 microbatch: two residuals a layer, forward and recompute; backward once. */
        cr_assert_eq(masks, 8);
        cr_assert_eq(kernels, 4);
    }
}

/* The op of graph rank 0 named `name` (the first, from op `from` on). */
static guint32 find_op(const SsimGraph *g, guint32 from, const char *name)
{
    for (guint32 i = from; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank == 0 && op->name != SSIM_NONE &&
            strcmp(ssim_graph_string(g, op->name), name) == 0)
            return i;
    }
    cr_assert_fail("no op %s", name);
    return SSIM_NONE;
}

/*
 * tp_overlap: Megatron-LM's asynchronous reduction of a column-parallel GEMM's input gradient
 * starts with its weight gradient and the next kernel waits for both; before it (tp_overlap=off)
 * the reduction started after the weight gradient.  One layer, tp 2, one microbatch, the simple
 * cost model, both ranks simulated: each reduction (2 x 5 us + 2 (2-1)/2 x 50,331,648 B / 100 GB/s
 * = 513.3 us) is shorter than the weight gradient beside it (the LM head's, ffn_up's and qkv's;
 * the smallest, qkv's 0.93 TFLOP at 500 TFLOP/s, takes 1,855 us), so the step grows by exactly
 * the three reductions' time.
 */
Test(lower, tp_overlap_off_reduces_the_input_gradient_after_the_weight_gradient)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 1);
    SsimParallel par = split(1, 2, 1, 1, 1, "1f1b");
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    SsimCostModel cost = ssim_simple_cost_model(&p);
    SsimTime makespan[2], reductions = 0;
    for (guint off = 0; off < 2; off++) {
        cr_assert(ssim_parallel_set(&par, "tp_overlap", off ? "off" : "on", NULL));
        cr_assert_eq(par.tp_sync_grad, off);
        g_autoptr(SsimLowered) l = lower(model, &par, TRUE); /* both tp ranks: a real group */
        const SsimGraph *g = ssim_lowered_graph(l);
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimTimeline) t = ssim_runtime_run(g, &cost, NULL, &error);
        cr_assert_not_null(t, "%s", error ? error->message : "");
        makespan[off] = t->makespan;
        const char *wgrads[] = {"lm_head.wgrad", "ffn_up.wgrad", "qkv.wgrad"},
                   *next[] = {"final_norm.bwd", "norm2.bwd", "norm1.bwd"};
        for (guint k = 0; k < G_N_ELEMENTS(wgrads); k++) {
            guint32 w = find_op(g, 0, wgrads[k]), n = find_op(g, w, next[k]);
            guint32 a = off ? w + 1 : w - 1; /* the reduction, emitted after or before */
            const SsimOp *ar = ssim_graph_op(g, a);
            cr_assert(ar->kind == SSIM_OP_COLLECTIVE && ar->coll == SSIM_COLL_ALLREDUCE, "%s",
                      wgrads[k]);
            cr_assert_eq(ar->bytes, 2048ull * 12288 * 2);
            SsimTime dur = t->end[a] - t->start[a];
            cr_assert_eq(dur, 513316, "%s: %" G_GINT64_FORMAT, wgrads[k], (gint64)dur);
            if (off) {
                cr_assert_eq(t->start[a], t->end[w], "%s: after it", wgrads[k]);
                cr_assert_eq(t->start[n], t->end[a]);
                reductions += dur;
            } else {
                cr_assert_eq(t->start[a], t->start[w], "%s: beside it", wgrads[k]);
                cr_assert_eq(t->start[n], t->end[w]);
            }
        }
    }
    cr_assert_eq(makespan[1] - makespan[0], reductions);
}

/*
 * transformer_impl=local (Megatron-LM's own layers): besides the default's kernels, the QKV bias
 * added by a kernel of its own, the four bias gradients as reductions, the context's permute copy
 * and the Q/K/V split's gradient concatenation; nothing else changes.  GPT-3 (bf16, biases) at
 * tp 2, b = 1, s = 2048, h = 12288: the QKV output is 2048 x 18432 x 2 = 75,497,472 bytes, the
 * MLP's up output 2048 x 24576 x 2 = 100,663,296, a row-parallel output 2048 x 12288 x 2 =
 * 50,331,648, the context 2048 x 48 heads x 128 x 2 = 25,165,824:
 *   qkv.bias          read and write the QKV output           150,994,944 (forward, recompute)
 *   attn_ctx.permute  read and write the context               50,331,648 (forward, recompute)
 *   qkv.cat           read and write the QKV output's grad    150,994,944 (backward)
 *   qkv.bgrad         read it                                  75,497,472
 *   ffn_up.bgrad      read the up output's gradient           100,663,296
 *   ffn_down.bgrad, attn_out.bgrad                             50,331,648 each
 * and each LayerNorm's backward is Megatron-LM's fused layer norm's two passes: the weights'
 * partial sums (`.gamma`, the gradient and the input read: 2 x 2048 x 12288 x 2 = 100,663,296)
 * and the input's gradient (3 x, where the default's one kernel is 4 x).  Llama (no biases)
 * gets only the copies and the norms' passes (2 x 4096 x 4096 x 2 bytes the weights' pass);
 * flash attention (its own layout) no copies.
 */
Test(lower, transformer_impl_local_adds_megatron_own_kernels)
{
    static const struct {
        const char *name;
        guint64 bytes;
        guint count; /* 2 layers, 1 microbatch, full recompute: forward kernels 4 times */
        gboolean bias, copy;
    } extra[] = {{"qkv.bias", 150994944, 4, TRUE, FALSE},
                 {"attn_ctx.permute", 50331648, 4, FALSE, TRUE},
                 {"qkv.cat", 150994944, 2, FALSE, TRUE},
                 {"qkv.bgrad", 75497472, 2, TRUE, FALSE},
                 {"ffn_up.bgrad", 100663296, 2, TRUE, FALSE},
                 {"ffn_down.bgrad", 50331648, 2, TRUE, FALSE},
                 {"attn_out.bgrad", 50331648, 2, TRUE, FALSE},
                 {"norm1.bwd.gamma", 100663296, 2, FALSE, FALSE},
                 {"norm2.bwd.gamma", 100663296, 2, FALSE, FALSE},
                 {"final_norm.bwd.gamma", 100663296, 1, FALSE, FALSE}};
    const char *models[] = {"gpt-3-175b", "llama-2-7b"};
    for (guint mi = 0; mi < G_N_ELEMENTS(models); mi++)
        for (guint fl = 0; fl < 2; fl++) {
            g_autoptr(SsimModel) model = load_model(models[mi], 2);
            SsimParallel par = split(1, 2, 1, 1, 1, "1f1b");
            par.recompute = SSIM_RECOMPUTE_FULL;
            par.attention = fl ? SSIM_ATTENTION_FLASH : SSIM_ATTENTION_UNFUSED;
            SsimParallel loc = par;
            cr_assert(ssim_parallel_set(&loc, "transformer_impl", "local", NULL));
            cr_assert_eq(loc.transformer_impl, SSIM_TRANSFORMER_IMPL_LOCAL);
            g_autoptr(SsimLowered) a = lower(model, &par, FALSE);
            g_autoptr(SsimLowered) b = lower(model, &loc, FALSE);
            const SsimGraph *ga = ssim_lowered_graph(a), *gb = ssim_lowered_graph(b);
            guint count[G_N_ELEMENTS(extra)] = {0};
            guint32 j = 0; /* the default graph's ops, in order, between the extra ones */
            for (guint32 i = 0; i < ssim_graph_n_ops(gb); i++) {
                const SsimOp *op = ssim_graph_op(gb, i);
                const char *name = op->name == SSIM_NONE ? "" : ssim_graph_string(gb, op->name);
                gsize k = 0;
                while (k < G_N_ELEMENTS(extra) && strcmp(name, extra[k].name) != 0)
                    k++;
                if (k < G_N_ELEMENTS(extra)) {
                    count[k]++;
                    if (mi == 0)
                        cr_assert_eq(op->bytes, extra[k].bytes, "%s", name);
                    else if (strstr(name, ".gamma")) /* Llama 2 7B: s 4096, h 4096 */
                        cr_assert_eq(op->bytes, 2ull * 4096 * 4096 * 2, "%s", name);
                    continue;
                }
                cr_assert_lt(j, ssim_graph_n_ops(ga));
                const SsimOp *x = ssim_graph_op(ga, j++);
                cr_assert_str_eq(x->name == SSIM_NONE ? "" : ssim_graph_string(ga, x->name), name);
                gboolean norm = strcmp(name, "norm1.bwd") == 0 || strcmp(name, "norm2.bwd") == 0 ||
                                strcmp(name, "final_norm.bwd") == 0;
                cr_assert_eq(norm ? x->bytes / 4 * 3 : x->bytes, op->bytes, "%s", name);
                cr_assert_float_eq(x->flops, op->flops, 1e-9);
            }
            cr_assert_eq(j, ssim_graph_n_ops(ga));
            for (gsize k = 0; k < G_N_ELEMENTS(extra); k++) {
                gboolean has = extra[k].bias ? mi == 0 : extra[k].copy ? !fl : TRUE;
                cr_assert_eq(count[k], has ? extra[k].count : 0, "%s: %s, flash %u: %u",
                             extra[k].name, models[mi], fl, count[k]);
            }
        }
}

/*
 * Flash attention: the scores, softmax and context kernels (forward, recompute and backward)
 * become one kernel each way, carrying the FLOPs they replace, so the step's FLOPs are the same;
 * its bytes are Q, K, V and the output (and the backward's gradients) instead of the s x s
 * scores.  GPT-3 at tp 2, b = 1: 48 heads of d = 128 over s = 2048 tokens, q = k = 2048 x 48 x
 * 128 = 12,582,912 elements, 48 x 2048 = 98,304 rows of statistics (fp32):
 *   forward   (2 q + 2 k) 2 + 4 rows           = 101,056,512 bytes
 *   backward  (4 q + 4 k) 2 + 8 rows + 8 q     = 302,776,320 bytes (dQ accumulated in fp32)
 */
Test(lower, flash_attention_is_one_kernel_each_way)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 2);
    for (guint r = 0; r < 2; r++) {
        SsimParallel par = split(1, 2, 1, 1, 2, "1f1b");
        par.recompute = r ? SSIM_RECOMPUTE_FULL : SSIM_RECOMPUTE_SELECTIVE;
        SsimParallel fl = par;
        fl.attention = SSIM_ATTENTION_FLASH;
        g_autoptr(SsimLowered) a = lower(model, &par, FALSE);
        g_autoptr(SsimLowered) b = lower(model, &fl, FALSE);
        const SsimGraph *ga = ssim_lowered_graph(a), *gb = ssim_lowered_graph(b);
        double fa = 0, fb = 0;
        for (guint32 i = 0; i < ssim_graph_n_ops(ga); i++)
            fa += ssim_graph_op(ga, i)->flops;
        guint fwd = 0, bwd = 0;
        for (guint32 i = 0; i < ssim_graph_n_ops(gb); i++) {
            const SsimOp *op = ssim_graph_op(gb, i);
            fb += op->flops;
            const char *name = op->name == SSIM_NONE ? "" : ssim_graph_string(gb, op->name);
            cr_assert(strstr(name, "softmax") == NULL && strstr(name, "attn_score") == NULL &&
                          strstr(name, "attn_ctx") == NULL,
                      "op %u is %s", i, name);
            if (strcmp(name, SSIM_FLASH_KERNEL) == 0) {
                fwd++;
                cr_assert_eq(op->bytes, 101056512u);
            } else if (strcmp(name, SSIM_FLASH_KERNEL ".bwd") == 0) {
                bwd++;
                cr_assert_eq(op->bytes, 302776320u);
            }
        }
        cr_assert_float_eq(fb, fa, 1e-9 * fa, "the step's FLOPs");
        /* 2 layers x 2 microbatches: a forward and a recompute (selective: the attention
         * core; full: the whole layer) each, and a backward. */
        cr_assert_eq(fwd, 8);
        cr_assert_eq(bwd, 4);
        /* Three kernels become one in each of the forward, the recompute and the backward. */
        cr_assert_eq(ssim_graph_n_ops(ga) - ssim_graph_n_ops(gb), 4 * 3 * 2);
    }
}

/*
 * defer_head_wgrad (Megatron-LM's --defer-embedding-wgrad-compute --wgrad-deferral-limit 3):
 * GPT-3's shape cut to 4 layers, pp 2, tp 2 with sequence parallelism, m = 8.  The last stage
 * still runs 8 LM head weight gradients, but the first 3 after its last backward (the flush),
 * each after an all-gather of the head's input again (moved there from the backward, so as many
 * ops); the first stage is untouched.  The memory estimate of the last stage keeps, for those 3,
 * the head's input shard and the logits' gradient: 3 x (2048 x 12288 / 2 + 2048 x 25129) x 2
 * bytes.
 */
Test(lower, deferred_head_wgrad_runs_at_the_flush)
{
    g_autoptr(SsimModel) model = load_model("gpt-3-175b", 4);
    SsimParallel par = split(2, 2, 2, 1, 8, "1f1b");
    cr_assert(ssim_parallel_set(&par, "sp", "on", NULL));
    SsimParallel deferred = par;
    cr_assert(ssim_parallel_set(&deferred, "defer_embedding_wgrad", "3", NULL));
    cr_assert_eq(ssim_parallel_deferred_wgrads(&deferred), 3);
    g_autoptr(SsimLowered) a = lower(model, &par, FALSE);
    g_autoptr(SsimLowered) b = lower(model, &deferred, FALSE);
    const SsimGraph *ga = ssim_lowered_graph(a), *gb = ssim_lowered_graph(b);
    /* Rank 1 (the last stage): the ops named lm_head.wgrad, in issue order, and where the last
     * backward of a layer's weight gradient (the stage's last backward) stands. */
    guint32 last_bwd = 0, wgrads = 0, after = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(gb); i++) {
        const SsimOp *op = ssim_graph_op(gb, i);
        if (op->rank != 1 || op->name == SSIM_NONE)
            continue;
        const char *name = ssim_graph_string(gb, op->name);
        if (strcmp(name, "norm1.bwd") == 0)
            last_bwd = i;
    }
    for (guint32 i = 0; i < ssim_graph_n_ops(gb); i++) {
        const SsimOp *op = ssim_graph_op(gb, i);
        if (op->rank != 1 || op->name == SSIM_NONE ||
            strcmp(ssim_graph_string(gb, op->name), "lm_head.wgrad") != 0)
            continue;
        wgrads++;
        after += i > last_bwd;
    }
    cr_assert_eq(wgrads, 8);
    cr_assert_eq(after, 3, "the deferred weight gradients run after the last backward");
    /* Same ops on the first stage; on the last the same count (an all-gather moved, not added). */
    cr_assert_eq(count(b, 0, SSIM_OPCLASS_BWD, -1), count(a, 0, SSIM_OPCLASS_BWD, -1));
    cr_assert_eq(count(b, 1, SSIM_OPCLASS_TP, -1), count(a, 1, SSIM_OPCLASS_TP, -1));
    cr_assert_eq(ssim_graph_n_ops(gb), ssim_graph_n_ops(ga));
    SsimMemory ma, mb;
    ssim_memory_estimate(&ma, model, &par, 1, 1);
    ssim_memory_estimate(&mb, model, &deferred, 1, 1);
    guint64 vocab = (50257 + 1) / 2; /* the vocabulary's half on each tp rank */
    cr_assert_eq(mb.activations - ma.activations, 3 * (2048ull * 12288 / 2 + 2048ull * vocab) * 2);
    ssim_memory_estimate(&ma, model, &par, 0, 2);
    ssim_memory_estimate(&mb, model, &deferred, 0, 2);
    cr_assert_eq(mb.total, ma.total);
    /* Refused where Megatron-LM has nothing to defer or to accumulate into. */
    GError *error = NULL;
    SsimParallel one = split(4, 2, 1, 1, 8, "1f1b");
    one.defer_head_wgrad = SSIM_DEFER_ALL;
    cr_assert_not(ssim_parallel_validate(&one, model, NULL, &error));
    cr_assert(strstr(error->message, "needs pp > 1"), "%s", error->message);
    g_clear_error(&error);
    SsimParallel accum = deferred;
    cr_assert(ssim_parallel_set(&accum, "step_costs", "+grad_accum", NULL));
    cr_assert_not(ssim_parallel_validate(&accum, model, NULL, &error));
    cr_assert(strstr(error->message, "grad_accum is on"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_parallel_set(&accum, "defer_embedding_wgrad", "-2", &error));
    cr_assert(strstr(error->message, "is not off, all or a count"), "%s", error->message);
    g_clear_error(&error);
}
