/*
 * ZeRO stages 2 and 3 against hand counts: GPT-3 175B's shapes cut to 4 layers on dp 2 x tp 2 x
 * pp 2, 4 microbatches of 1 (1F1B), bf16 with gradients reduced in fp32 (Megatron-LM's default).
 *
 *   a layer     12 h^2 + 13 h = 1,812,099,072 parameters (h 12288; biases, two LayerNorms),
 *               906,049,536 a tp rank: 1,812,099,072 bytes in bf16
 *   embedding   (V + s) h = (50257 + 2048) 12288 = 642,723,840 (tp rank: 321,361,920)
 *   LM head     2 h + V h (its final norm and the tied weight) = 617,582,592 (tp rank: 308,791,296)
 *
 * Stage 0 holds two layers and the embedding, stage 1 two layers and the head.  ZeRO-2 and 3
 * reduce-scatter each unit's gradients after its backward, every microbatch: 4 x 3 a rank, whose
 * bytes add up to 4 times the one all-reduce of stage 0.  ZeRO-3 gathers each unit's weights
 * before its forward and its backward: 4 x 2 x 3 a rank, of the bytes above in bf16, and no
 * all-gather after the optimizer; ZeRO-2 keeps that all-gather (the stage's weights).
 */
#include <criterion/criterion.h>

#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
#include <shiftsim/place.h>
#include <shiftsim/runtime.h>

#include <string.h>

#define LAYER_BYTES   1812099072ull /* a layer's weights on a tp rank, bf16 */
#define EMBED_BYTES   642723840ull
#define HEAD_BYTES    617582592ull
#define MICROBATCHES  4u
#define UNITS_A_STAGE 3u

/* fsdp_root's unit: the embedding and the head's own weights (its final norm; the table once) */
#define ROOT_BYTES (EMBED_BYTES + 24576ull)

static SsimModel *gpt3_4_layers(void)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    m->layers = 4;
    return m;
}

static SsimParallel split(guint zero)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = 2, p.tp = 2, p.pp = 2, p.microbatch = 1;
    p.global_batch = 2 * MICROBATCHES;
    p.zero_stage = zero;
    g_strlcpy(p.schedule, "1f1b", sizeof p.schedule);
    g_strlcpy(p.placement, "megatron", sizeof p.placement);
    return p;
}

static SsimLowered *lower_with(const SsimModel *model, const SsimParallel *par,
                               const SsimPlacement *placement, GError **error)
{
    cr_assert(ssim_parallel_validate(par, model, NULL, error), "%s",
              *error ? (*error)->message : "");
    g_autoptr(SsimSchedule) s =
        ssim_schedule_new(SSIM_SCHEDULE_1F1B, par->pp, 1, ssim_parallel_n_microbatches(par), NULL);
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    o.placement = placement;
    return ssim_lower(model, par, s, &o, error);
}

static SsimLowered *lower(const SsimModel *model, const SsimParallel *par)
{
    GError *error = NULL;
    SsimLowered *l = lower_with(model, par, NULL, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    return l;
}

/* Ops of graph rank `rank` named `name`: how many, and their bytes summed (`first`: the bytes of
 * each, which must all be one of the `n_sizes` given, counted per size in `per_size`). */
static guint named(const SsimLowered *l, guint rank, const char *name, guint64 *sum,
                   const guint64 *sizes, guint *per_size, guint n_sizes)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    guint n = 0;
    *sum = 0;
    for (guint k = 0; k < n_sizes; k++)
        per_size[k] = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != rank || op->name == SSIM_NONE ||
            strcmp(ssim_graph_string(g, op->name), name) != 0)
            continue;
        n++;
        *sum += op->bytes;
        guint k = 0;
        while (k < n_sizes && sizes[k] != op->bytes)
            k++;
        if (n_sizes > 0) {
            cr_assert_lt(k, n_sizes, "%s of %" G_GUINT64_FORMAT " bytes on rank %u", name,
                         op->bytes, rank);
            per_size[k]++;
        }
    }
    return n;
}

/* Replays `g` with the simple cost model; the caller frees the timeline. */
static SsimTimeline *replay(const SsimGraph *g)
{
    GError *error = NULL;
    SsimTimeline *t = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    return t;
}

/* For each op of `g`: how many ops depend on it (`waiters`, zeroed by the caller) and the last of
 * them (`waiter`). */
static void waiters_of(const SsimGraph *g, guint32 *waiter, guint *waiters)
{
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        if (ssim_graph_op(g, i)->kind != SSIM_OP_COMPUTE)
            continue; /* a collective's turn on its group (one_collective_of_a_group_at_a_time) */
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint k = 0; k < nd; k++) {
            waiter[d[k]] = i;
            waiters[d[k]]++;
        }
    }
}

Test(zero, stages_2_and_3_reduce_every_microbatch_unit_by_unit)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    SsimParallel p0 = split(0), p2 = split(2), p3 = split(3);
    g_autoptr(SsimLowered) z0 = lower(model, &p0);
    g_autoptr(SsimLowered) z2 = lower(model, &p2);
    g_autoptr(SsimLowered) z3 = lower(model, &p3);
    guint none[1];
    for (guint s = 0; s < 2; s++) {
        guint64 ar, rs2, rs3, ag2, ag3;
        cr_assert_eq(named(z0, s, "dp.allreduce", &ar, NULL, none, 0), 1);
        cr_assert_eq(named(z2, s, "dp.reducescatter", &rs2, NULL, none, 0),
                     MICROBATCHES * UNITS_A_STAGE);
        cr_assert_eq(named(z3, s, "dp.reducescatter", &rs3, NULL, none, 0),
                     MICROBATCHES * UNITS_A_STAGE);
        cr_assert_eq(rs2, MICROBATCHES * ar, "stage %u: the same gradients, every microbatch", s);
        cr_assert_eq(rs3, rs2);
        cr_assert_eq(named(z2, s, "dp.allreduce", &ar, NULL, none, 0), 0);
        /* fp32 gradients: twice the weights' bf16 bytes of the stage (the tied copy included). */
        guint64 weights = 2 * LAYER_BYTES + (s == 0 ? EMBED_BYTES : HEAD_BYTES);
        cr_assert_eq(rs2, MICROBATCHES * 2 * weights, "stage %u", s);
        /* After the step: ZeRO-2 gathers the updated weights, ZeRO-3 keeps them sharded. */
        cr_assert_eq(named(z2, s, "dp.allgather", &ag2, NULL, none, 0), 1);
        cr_assert_eq(ag2, weights);
        cr_assert_eq(named(z3, s, "dp.allgather", &ag3, NULL, none, 0), 0);
        cr_assert_eq(named(z2, s, "zero3.allgather", &ag2, NULL, none, 0), 0);
        /* ZeRO-3: each unit gathered before its forward and its backward, every microbatch. */
        guint64 sizes[] = {LAYER_BYTES, s == 0 ? EMBED_BYTES : HEAD_BYTES};
        guint per[2];
        cr_assert_eq(named(z3, s, "zero3.allgather", &ag3, sizes, per, 2),
                     MICROBATCHES * 2 * UNITS_A_STAGE);
        cr_assert_eq(per[0], MICROBATCHES * 2 * 2, "stage %u: layers", s);
        cr_assert_eq(per[1], MICROBATCHES * 2, "stage %u: embedding or head", s);
        cr_assert_eq(ag3, MICROBATCHES * 2 * weights);
        /* The tied embedding's all-reduce between the first and the last stage: the table's
         * gradient over tp in fp32, ceil(50257 / 2) x 12288 x 4 bytes, and under ZeRO-2 and 3
         * the rank's half of it. */
        guint64 emb0, emb2, emb3;
        cr_assert_eq(named(z0, s, "emb.allreduce", &emb0, NULL, none, 0), 1);
        cr_assert_eq(named(z2, s, "emb.allreduce", &emb2, NULL, none, 0), 1);
        cr_assert_eq(named(z3, s, "emb.allreduce", &emb3, NULL, none, 0), 1);
        cr_assert_eq(emb0, 25129ull * 12288 * 4);
        cr_assert_eq(emb2, emb0 / 2);
        cr_assert_eq(emb3, emb0 / 2);
    }
}

/* Replays the ZeRO-3 lowering: every gather is waited for by exactly one kernel (its unit's
 * first), which starts after it; a gather after a phase's first waits for the kernel that began
 * the unit before it (and for the reduce-scatter issued before it, its group's turn), so no
 * more than two units are whole at once. */
Test(zero, stage_3_gathers_each_unit_before_it_and_the_next_one_ahead)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    SsimParallel par = split(3);
    g_autoptr(SsimLowered) l = lower(model, &par);
    const SsimGraph *g = ssim_lowered_graph(l);
    SsimTimeline *t = replay(g);
    guint32 n = ssim_graph_n_ops(g);
    g_autofree guint32 *waiter = g_new(guint32, n);
    g_autofree guint *waiters = g_new0(guint, n);
    waiters_of(g, waiter, waiters);
    guint gathers = 0, prefetched = 0;
    guint32 previous[2] = {SSIM_NONE, SSIM_NONE}; /* per rank: the last gather seen */
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->name == SSIM_NONE || strcmp(ssim_graph_string(g, op->name), "zero3.allgather") != 0)
            continue;
        gathers++;
        cr_assert_eq(op->coll, SSIM_COLL_ALLGATHER);
        cr_assert_eq(waiters[i], 1, "gather %u: %u ops wait for it", i, waiters[i]);
        const SsimOp *w = ssim_graph_op(g, waiter[i]);
        cr_assert_eq(w->kind, SSIM_OP_COMPUTE);
        cr_assert_geq(t->start[waiter[i]], t->end[i]);
        guint nd, kernels = 0;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint k = 0; k < nd; k++) {
            const SsimOp *dep = ssim_graph_op(g, d[k]);
            cr_assert_geq(t->start[i], t->end[d[k]]);
            if (dep->kind != SSIM_OP_COMPUTE) {
                /* The group's turn: the reduce-scatter this rank issued before it. */
                cr_assert_str_eq(ssim_graph_string(g, dep->name), "dp.reducescatter");
                cr_assert_eq(dep->rank, op->rank);
                continue;
            }
            /* Prefetched: issued once the previous unit's first kernel has run. */
            cr_assert_neq(previous[op->rank], SSIM_NONE);
            cr_assert_eq(d[k], waiter[previous[op->rank]], "gather %u", i);
            kernels++;
        }
        cr_assert_leq(kernels, 1);
        prefetched += kernels;
        previous[op->rank] = i;
    }
    /* Per rank and microbatch, a forward and a backward phase of three units: the first of
     * each phase gathered as the stream frees, the other two prefetched. */
    cr_assert_eq(gathers, 2 * MICROBATCHES * 2 * UNITS_A_STAGE);
    cr_assert_eq(prefetched, 2 * MICROBATCHES * 2 * (UNITS_A_STAGE - 1));
    ssim_timeline_free(t);
}

/* NCCL runs one communicator's operations one at a time, in issue order, whatever their
 * streams: ZeRO-3's gathers (dp.gather stream) and reduce-scatters (dp stream) share the dp group,
 * so on every rank no two of them overlap, each follows the one issued before it on the other
 * stream, and the group is busy for the sum of their times.  Under FSDP2 (transformer_impl=torch)
 * each unit's copy into the reduce-scatter's buffer also waits for the unit before's
 * reduce-scatter. */
Test(zero, one_collective_of_a_group_at_a_time)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    for (guint fsdp2 = 0; fsdp2 < 2; fsdp2++) {
        SsimParallel par = split(3);
        if (fsdp2)
            cr_assert(ssim_parallel_set(&par, "transformer_impl", "torch", NULL));
        g_autoptr(SsimLowered) l = lower(model, &par);
        const SsimGraph *g = ssim_lowered_graph(l);
        SsimTimeline *t = replay(g);
        guint32 n = ssim_graph_n_ops(g);
        guint32 last[2] = {SSIM_NONE, SSIM_NONE}, last_rs[2] = {SSIM_NONE, SSIM_NONE};
        guint turns = 0, copies_waiting = 0, dp_ops = 0;
        for (guint32 i = 0; i < n; i++) { /* each rank's ops in issue order */
            const SsimOp *op = ssim_graph_op(g, i);
            const char *name = op->name == SSIM_NONE ? "" : ssim_graph_string(g, op->name);
            guint r = op->rank, nd;
            const guint32 *d = ssim_graph_deps(g, i, &nd);
            if (strcmp(name, "zero.copy_in") == 0 && last_rs[r] != SSIM_NONE) {
                gboolean waits = FALSE;
                for (guint k = 0; k < nd; k++)
                    waits |= d[k] == last_rs[r];
                cr_assert_eq(waits, fsdp2 == 1, "copy-in %u", i);
                cr_assert_geq(t->start[i], t->end[last_rs[r]]);
                copies_waiting += waits;
            }
            gboolean rs = strcmp(name, "dp.reducescatter") == 0;
            if (!rs && strcmp(name, "zero3.allgather") != 0)
                continue;
            dp_ops++;
            if (last[r] != SSIM_NONE) {
                const SsimOp *prev = ssim_graph_op(g, last[r]);
                cr_assert_eq(prev->group, op->group);
                cr_assert_geq(t->start[i], t->end[last[r]], "rank %u: %u overlaps %u", r, i,
                              last[r]);
                if (prev->stream != op->stream) {
                    gboolean follows = FALSE;
                    for (guint k = 0; k < nd; k++)
                        follows |= d[k] == last[r];
                    cr_assert(follows, "rank %u: %u does not follow %u", r, i, last[r]);
                    turns++;
                }
            }
            last[r] = i;
            if (rs)
                last_rs[r] = i;
        }
        /* Per rank: 4 microbatches of 3 units, each gathered twice and reduce-scattered once. */
        cr_assert_eq(dp_ops, 2 * MICROBATCHES * UNITS_A_STAGE * 3);
        cr_assert_gt(turns, 0);
        /* Every unit's copy-in but each rank's first waits for the one before's. */
        cr_assert_eq(copies_waiting, fsdp2 ? 2 * (MICROBATCHES * UNITS_A_STAGE - 1) : 0);
        ssim_timeline_free(t);
    }
}

/* fsdp_root, FSDP2 as torchtitan wraps it, on one stage of the 4 layers (dp 2 x tp 2 x pp 1):
 * the root unit is the embedding and the head's own weights (the tied table once, and the final
 * norm's 2 h = 24,576 parameters: 12,288 a tp rank, 24,576 bytes), gathered once a microbatch
 * before the embedding and reduce-scattered once after its backward; the last layer is not
 * gathered again for the backward.  Per microbatch: 1 + 4 gathers forward, 3 backward (12 without
 * it: the embedding, 4 layers and the head, twice), 4 + 1 reduce-scatters (6 without).  Memory:
 * the shard, the root unit and two layers whole. */
Test(zero, fsdp_root_gathers_the_root_once_and_keeps_the_last_layer)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    SsimParallel par = split(3), plain;
    par.pp = 1;
    cr_assert(ssim_parallel_set(&par, "fsdp_root", "on", NULL));
    plain = par;
    plain.fsdp_root = FALSE;
    g_autoptr(SsimLowered) l = lower(model, &par);
    g_autoptr(SsimLowered) p = lower(model, &plain);
    guint64 sizes[] = {LAYER_BYTES, ROOT_BYTES}, ag, rs;
    guint per[2], none[1];
    cr_assert_eq(named(l, 0, "zero3.allgather", &ag, sizes, per, 2), MICROBATCHES * 8);
    cr_assert_eq(per[0], MICROBATCHES * 7);
    cr_assert_eq(per[1], MICROBATCHES);
    cr_assert_eq(ag, MICROBATCHES * (ROOT_BYTES + 7 * LAYER_BYTES));
    cr_assert_eq(named(p, 0, "zero3.allgather", &ag, NULL, none, 0), MICROBATCHES * 12);
    /* fp32 gradients: twice the bf16 bytes. */
    guint64 rsizes[] = {2 * LAYER_BYTES, 2 * ROOT_BYTES};
    cr_assert_eq(named(l, 0, "dp.reducescatter", &rs, rsizes, per, 2), MICROBATCHES * 5);
    cr_assert_eq(per[1], MICROBATCHES);
    cr_assert_eq(rs, MICROBATCHES * 2 * (4 * LAYER_BYTES + ROOT_BYTES));
    cr_assert_eq(named(p, 0, "dp.reducescatter", &rs, NULL, none, 0), MICROBATCHES * 6);

    /* Each root gather is waited for by its microbatch's first kernel, the embedding's. */
    const SsimGraph *g = ssim_lowered_graph(l);
    guint32 n = ssim_graph_n_ops(g);
    g_autofree guint32 *waiter = g_new(guint32, n);
    g_autofree guint *waiters = g_new0(guint, n);
    waiters_of(g, waiter, waiters);
    guint roots = 0;
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != 0 || op->bytes != ROOT_BYTES || op->name == SSIM_NONE ||
            strcmp(ssim_graph_string(g, op->name), "zero3.allgather") != 0)
            continue;
        cr_assert_eq(waiters[i], 1);
        const SsimOp *w = ssim_graph_op(g, waiter[i]);
        cr_assert(g_str_has_prefix(ssim_graph_string(g, w->name), "embed"), "%s",
                  ssim_graph_string(g, w->name));
        roots++;
    }
    cr_assert_eq(roots, MICROBATCHES);
    SsimTimeline *t = replay(g);
    ssim_timeline_free(t);

    SsimMemory m, mp;
    ssim_memory_estimate(&m, model, &par, 0, 1);
    ssim_memory_estimate(&mp, model, &plain, 0, 1);
    cr_assert_eq(m.weights, (4 * LAYER_BYTES + ROOT_BYTES) / 2 + ROOT_BYTES + 2 * LAYER_BYTES);
    /* Without it: the largest two units, two layers. */
    cr_assert_eq(mp.weights, (4 * LAYER_BYTES + ROOT_BYTES) / 2 + 2 * LAYER_BYTES);
    /* At dp 1 nothing is sharded nor gathered: ZeRO-3's weights are ZeRO-0's, root or not. */
    SsimMemory m1, m0;
    SsimParallel one = par, zero0 = par;
    one.dp = zero0.dp = 1;
    zero0.zero_stage = 0;
    zero0.fsdp_root = FALSE;
    ssim_memory_estimate(&m1, model, &one, 0, 1);
    ssim_memory_estimate(&m0, model, &zero0, 0, 1);
    cr_assert_eq(m1.weights, 4 * LAYER_BYTES + ROOT_BYTES);
    cr_assert_eq(m1.weights, m0.weights);
}

/* Memory per GPU: ZeRO-2 shards the gradients too, ZeRO-3 the weights, keeping two units whole. */
Test(zero, memory_shards_gradients_then_weights)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    /* The head's weights: its final norm (2 h) and the tied table (V h). */
    cr_assert_eq(ssim_model_head_weights(model), 2 * 12288 + 50257ull * 12288);
    cr_assert_eq(ssim_model_head_weights(model), HEAD_BYTES);
    cr_assert_eq(ssim_model_layer_params(model), LAYER_BYTES);
    for (guint s = 0; s < 2; s++) {
        SsimMemory m1, m2, m3;
        SsimParallel p1 = split(1), p2 = split(2), p3 = split(3);
        ssim_memory_estimate(&m1, model, &p1, s, 1);
        ssim_memory_estimate(&m2, model, &p2, s, 1);
        ssim_memory_estimate(&m3, model, &p3, s, 1);
        guint64 weights = 2 * LAYER_BYTES + (s == 0 ? EMBED_BYTES : HEAD_BYTES); /* bf16 */
        cr_assert_eq(m1.weights, weights);
        cr_assert_eq(m1.gradients, 2 * weights); /* fp32 */
        cr_assert_eq(m1.optimizer, 12 * weights / 2 / 2);
        cr_assert_eq(m2.weights, weights);
        cr_assert_eq(m2.gradients, weights); /* fp32, halved by dp 2 */
        cr_assert_eq(m2.optimizer, m1.optimizer);
        /* Half the weights, plus a layer and the larger of a layer, the embedding, the head. */
        cr_assert_eq(m3.weights, weights / 2 + 2 * LAYER_BYTES, "stage %u", s);
        cr_assert_eq(m3.gradients, m2.gradients);
        cr_assert_eq(m3.activations, m1.activations);
    }
    /* One layer a stage (pp 4): the layer and the embedding, or the layer and the head, whole. */
    SsimParallel p4 = split(3);
    p4.pp = 4;
    for (guint s = 0; s < 4; s += 3) {
        SsimMemory m;
        ssim_memory_estimate(&m, model, &p4, s, 1);
        guint64 other = s == 0 ? EMBED_BYTES : HEAD_BYTES;
        cr_assert_eq(m.weights, (LAYER_BYTES + other) / 2 + LAYER_BYTES + other, "stage %u", s);
    }
}

/* commshift and early-dp move the step's gradient reductions, which ZeRO-2 and 3 do not have. */
Test(zero, placements_that_move_the_step_reduction_are_refused)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    const char *names[] = {"commshift", "megatron+early-dp"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        SsimPlacement pl = SSIM_PLACEMENT_INIT;
        cr_assert(ssim_placement_parse(names[i], &pl, NULL));
        SsimParallel par = split(3);
        GError *error = NULL;
        SsimLowered *l = lower_with(model, &par, &pl, &error);
        cr_assert_null(l, "%s", names[i]);
        cr_assert(strstr(error->message, " with zero 3: ZeRO stage 3 reduce-scatters each layer's "
                                         "gradients every microbatch") != NULL,
                  "%s", error->message);
        g_error_free(error);
        /* The same placement under ZeRO-1 lowers. */
        par.zero_stage = 1;
        l = lower_with(model, &par, &pl, &error);
        cr_assert_not_null(l, "%s: %s", names[i], error ? error->message : "");
        ssim_lowered_free(l);
    }
}

/* Every schedule lowers and replays under ZeRO-2 and 3, representative and exact (whose steps
 * tests/run/test_simulate.c compares through the driver, which charges a representative's
 * collectives for their whole groups). */
Test(zero, every_schedule_replays)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    const char *schedules[] = {"gpipe", "xla", "1f1b", "interleaved", "alpa"};
    for (gsize si = 0; si < G_N_ELEMENTS(schedules); si++)
        for (guint zero = 2; zero <= 3; zero++)
            for (guint exact = 0; exact < 2; exact++) {
                SsimParallel par = split(zero);
                g_strlcpy(par.schedule, schedules[si], sizeof par.schedule);
                par.virtual_stages = si == 3 ? 2 : 1;
                SsimScheduleKind kind;
                cr_assert(ssim_schedule_kind_from_name(par.schedule, &kind));
                GError *error = NULL;
                g_autoptr(SsimSchedule) s = ssim_schedule_new(
                    kind, par.pp, par.virtual_stages, ssim_parallel_n_microbatches(&par), &error);
                cr_assert_not_null(s, "%s", error ? error->message : "");
                SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
                o.exact = exact;
                g_autoptr(SsimLowered) l = ssim_lower(model, &par, s, &o, &error);
                cr_assert_not_null(l, "%s zero %u: %s", schedules[si], zero,
                                   error ? error->message : "");
                SsimTimeline *t = ssim_runtime_run(ssim_lowered_graph(l), NULL, NULL, &error);
                cr_assert_not_null(t, "%s zero %u exact %u: %s", schedules[si], zero, exact,
                                   error ? error->message : "");
                cr_assert_gt(t->makespan, 0);
                ssim_timeline_free(t);
            }
}

/* FSDP2's copies (step cost shard_copy, on by default under transformer_impl=torch): each
 * gathered unit copied out of the all-gather's buffer (its bf16 bytes read and written) by one
 * kernel, which waits for the gather; each unit's gradients copied into the reduce-scatter's
 * buffer in fp32 (2 bytes read, 4 written an element) before it. */
Test(zero, fsdp2_copies_out_of_each_gather_and_into_each_reduce_scatter)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    SsimParallel p3 = split(3), p2 = split(2), te = split(3);
    cr_assert(ssim_parallel_set(&p3, "transformer_impl", "torch", NULL));
    cr_assert(ssim_parallel_set(&p2, "step_costs", "+shard_copy", NULL));
    g_autoptr(SsimLowered) z3 = lower(model, &p3);
    g_autoptr(SsimLowered) z2 = lower(model, &p2);
    g_autoptr(SsimLowered) plain = lower(model, &te);
    guint none[1];
    for (guint s = 0; s < 2; s++) {
        guint64 weights = 2 * LAYER_BYTES + (s == 0 ? EMBED_BYTES : HEAD_BYTES), out, in, ag;
        guint64 sizes[] = {2 * LAYER_BYTES, 2 * (s == 0 ? EMBED_BYTES : HEAD_BYTES)};
        guint per[2];
        cr_assert_eq(named(z3, s, "zero3.copy_out", &out, sizes, per, 2),
                     named(z3, s, "zero3.allgather", &ag, NULL, none, 0));
        cr_assert_eq(out, 2 * ag, "stage %u: every gathered byte read and written", s);
        cr_assert_eq(out, MICROBATCHES * 2 * 2 * weights);
        cr_assert_eq(named(z3, s, "zero.copy_in", &in, NULL, none, 0),
                     MICROBATCHES * UNITS_A_STAGE);
        cr_assert_eq(in, MICROBATCHES * 3 * weights, "stage %u: 2 + 4 bytes a gradient", s);
        /* ZeRO-2 has no gathers to copy out of, the same reduce-scatters to copy into. */
        cr_assert_eq(named(z2, s, "zero3.copy_out", &out, NULL, none, 0), 0);
        cr_assert_eq(named(z2, s, "zero.copy_in", &out, NULL, none, 0),
                     MICROBATCHES * UNITS_A_STAGE);
        cr_assert_eq(out, in);
        cr_assert_eq(named(plain, s, "zero.copy_in", &out, NULL, none, 0), 0, "off by default");
    }
    /* Each copy-out is the one kernel that waits for its gather. */
    const SsimGraph *g = ssim_lowered_graph(z3);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->name == SSIM_NONE || strcmp(ssim_graph_string(g, op->name), "zero3.copy_out") != 0)
            continue;
        guint nd, gathers = 0;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint k = 0; k < nd; k++) {
            const SsimOp *dep = ssim_graph_op(g, d[k]);
            gathers += dep->name != SSIM_NONE &&
                       strcmp(ssim_graph_string(g, dep->name), "zero3.allgather") == 0;
        }
        cr_assert_eq(gathers, 1, "copy-out %u", i);
    }
}

/*
 * overlap_param_gather (Megatron-LM's --overlap-param-gather) under ZeRO 1 and 2: no all-gather
 * after the optimizer; instead each unit's weights (the same bytes: 2 layers and the embedding or
 * the head a stage) are gathered once, as the step begins, back to back on the gather stream in
 * forward order, each waited for by one kernel, which starts after it; the step's first kernel
 * starts exactly when the first unit's weights are whole.  With v = 2 (one layer a chunk) the
 * chunks' gathers follow each other in forward order: stage 0's embedding and layer 0, then layer
 * 2; stage 1's layer 1, then layer 3 and the head.
 */
Test(zero, overlap_param_gather_gathers_each_unit_once_before_its_first_forward)
{
    g_autoptr(SsimModel) model = gpt3_4_layers();
    for (guint zero = 1; zero <= 2; zero++) {
        for (guint v = 1; v <= 2; v++) {
            SsimParallel par = split(zero);
            cr_assert(ssim_parallel_set(&par, "overlap_param_gather", "on", NULL));
            par.virtual_stages = v;
            if (v == 2)
                g_strlcpy(par.schedule, "interleaved", sizeof par.schedule);
            GError *error = NULL;
            cr_assert(ssim_parallel_validate(&par, model, NULL, &error), "%s",
                      error ? error->message : "");
            g_autoptr(SsimSchedule) s =
                ssim_schedule_new(v == 1 ? SSIM_SCHEDULE_1F1B : SSIM_SCHEDULE_INTERLEAVED, par.pp,
                                  v, ssim_parallel_n_microbatches(&par), NULL);
            SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
            g_autoptr(SsimLowered) l = ssim_lower(model, &par, s, &o, &error);
            cr_assert_not_null(l, "%s", error ? error->message : "");
            guint none[1];
            for (guint st = 0; st < 2; st++) {
                guint64 ag, pg;
                cr_assert_eq(named(l, st, "dp.allgather", &ag, NULL, none, 0), 0);
                guint64 sizes[] = {LAYER_BYTES, st == 0 ? EMBED_BYTES : HEAD_BYTES};
                guint per[2];
                cr_assert_eq(named(l, st, "dp.param_gather", &pg, sizes, per, 2), UNITS_A_STAGE,
                             "zero %u, v %u, stage %u", zero, v, st);
                cr_assert_eq(per[0], 2);
                cr_assert_eq(per[1], 1);
                cr_assert_eq(pg, 2 * LAYER_BYTES + (st == 0 ? EMBED_BYTES : HEAD_BYTES));
            }
            const SsimGraph *g = ssim_lowered_graph(l);
            SsimTimeline *t = replay(g);
            guint32 n = ssim_graph_n_ops(g);
            g_autofree guint32 *waiter = g_new(guint32, n);
            g_autofree guint *waiters = g_new0(guint, n);
            waiters_of(g, waiter, waiters);
            SsimTime prev_end[2] = {0, 0}, prev_wait[2] = {-1, -1};
            guint seen[2] = {0, 0};
            /* Each rank's gathers in forward order: their waiters' units. */
            static const char *const first_kernel[2][3] = {{"embed", "norm1", "norm1"},
                                                           {"norm1", "norm1", "final_norm"}};
            for (guint32 i = 0; i < n; i++) {
                const SsimOp *op = ssim_graph_op(g, i);
                if (op->name == SSIM_NONE ||
                    strcmp(ssim_graph_string(g, op->name), "dp.param_gather") != 0)
                    continue;
                guint nd, r = op->rank;
                ssim_graph_deps(g, i, &nd);
                cr_assert_eq(nd, 0, "issued as the step begins");
                cr_assert_eq(t->start[i], prev_end[r], "back to back from 0 on rank %u", r);
                prev_end[r] = t->end[i];
                cr_assert_eq(waiters[i], 1);
                const SsimOp *w = ssim_graph_op(g, waiter[i]);
                cr_assert_eq(w->kind, SSIM_OP_COMPUTE);
                cr_assert_geq(t->start[waiter[i]], t->end[i]);
                const char *wn = ssim_graph_string(g, w->name);
                cr_assert(g_str_has_prefix(wn, first_kernel[r][seen[r]]),
                          "v %u, rank %u, gather %u waited for by %s", v, r, seen[r], wn);
                if (r == 0 && seen[r] == 0) /* the step's first kernel */
                    cr_assert_eq(t->start[waiter[i]], t->end[i]);
                /* Forward order: the unit waited for first was gathered first. */
                cr_assert_gt(t->start[waiter[i]], prev_wait[r]);
                prev_wait[r] = t->start[waiter[i]];
                seen[r]++;
            }
            cr_assert_eq(seen[0], UNITS_A_STAGE);
            cr_assert_eq(seen[1], UNITS_A_STAGE);
            ssim_timeline_free(t);
        }
    }
}
