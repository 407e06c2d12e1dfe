/*
 * Context parallelism (parallel.h, cp; lower.h, "Context parallelism") against hand counts: the
 * split's rules and rank layout (a replica's cp GPUs innermost in the data-parallel axis), the
 * lowering's key-value ring (its steps, their bytes, their groups), each GPU's share of the
 * tokens in every kernel, the attention's FLOPs split evenly, the activations' share, ZeRO's
 * shards over dp x cp, and the op budget staying above the ops the lowering emits.
 */
#include <criterion/criterion.h>

#include "tests/common/lowertest.h"

#include <shiftsim/budget.h>
#include <shiftsim/lower.h>
#include <shiftsim/memory.h>

#include <string.h>

static SsimModel *llama(guint layers, guint seq)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load("llama-3.1-8b", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    m->layers = layers;
    m->seq_len = seq;
    return m;
}

/* dp x cp x tp x pp GPUs, m microbatches of one sequence, flash attention, 1F1B. */
static SsimParallel split(guint dp, guint cp, guint tp, guint pp, guint m)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = dp, p.cp = cp, p.tp = tp, p.pp = pp, p.microbatch = 1;
    p.global_batch = dp * m;
    p.attention = SSIM_ATTENTION_FLASH;
    return p;
}

static SsimLowered *lower(const SsimModel *model, const SsimParallel *par, gboolean exact)
{
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    o.exact = exact;
    return test_lower(model, par, &o);
}

static void assert_invalid(const SsimParallel *par, const SsimModel *model, const char *needle)
{
    GError *error = NULL;
    cr_assert_not(ssim_parallel_validate(par, model, NULL, &error), "expected '%s'", needle);
    cr_assert(strstr(error->message, needle) != NULL, "'%s' lacks '%s'", error->message, needle);
    g_error_free(error);
}

Test(context_parallel, split_rules_and_text)
{
    g_autoptr(SsimModel) m = llama(4, 8192);
    SsimParallel p = split(2, 2, 2, 1, 2);
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_parallel_world(&p), 8);
    cr_assert_eq(ssim_parallel_size(&p, SSIM_AXIS_DP), 4);
    /* The batch is the replicas': 2 sequences a step are 1 microbatch each for 2 replicas. */
    cr_assert_eq(ssim_parallel_n_microbatches(&p), 2);
    /* Text both ways: "cp=2" is written only when set, and read back to the same split. */
    g_autofree char *text = ssim_parallel_to_string(&p);
    cr_assert(strstr(text, ",cp=2") != NULL, "%s", text);
    SsimParallel q;
    ssim_parallel_init(&q);
    cr_assert(ssim_parallel_parse(&q, text, &error), "%s", error ? error->message : "");
    cr_assert_eq(q.cp, 2);
    cr_assert(ssim_parallel_set(&q, "context-parallel-size", "4", &error));
    cr_assert_eq(q.cp, 4);
    cr_assert_not(ssim_parallel_set(&q, "cp", "0", &error));
    g_clear_error(&error);
    SsimParallel one;
    ssim_parallel_init(&one);
    g_autofree char *plain = ssim_parallel_to_string(&one);
    cr_assert_null(strstr(plain, "cp="), "%s", plain);

    SsimParallel bad = p;
    bad.attention = SSIM_ATTENTION_UNFUSED;
    assert_invalid(&bad, m, "cp > 1 needs attention = flash");
    bad = p;
    bad.cp = 3; /* 8192 is not a multiple of 2 x 3 chunks */
    assert_invalid(&bad, m, "seq_len % (2*cp) != 0");
    bad = p;
    g_strlcpy(bad.schedule, "alpa", sizeof bad.schedule);
    assert_invalid(&bad, m, "cp > 1 needs an eager schedule");
    g_autoptr(SsimModel) windowed = llama(4, 8192);
    windowed->sliding_window = 1024;
    windowed->sliding_window_layers = 4;
    assert_invalid(&p, windowed, "sliding window");
    /* Against a cluster of 16 GPUs: dp x cp x tp x pp is 8. */
    g_autoptr(SsimCluster) cl = ssim_cluster_default();
    ssim_cluster_set_nodes(cl, 2);
    cr_assert_not(ssim_parallel_validate(&p, m, cl, &error));
    cr_assert(strstr(error->message, "dp*cp*tp*pp != GPUs: 2*2*2*1 = 8") != NULL, "%s",
              error->message);
    g_clear_error(&error);
}

/* Megatron-LM's order tp-cp-dp-pp: a replica's cp GPUs follow one another after tp, so with tp 2
 * the ring of rank 0 is {0, 2}, and the gradients of rank 0 are reduced over {0, 2, 4, 6}. */
Test(context_parallel, groups_follow_megatron_order)
{
    g_autoptr(SsimModel) m = llama(2, 4096);
    SsimParallel p = split(2, 2, 2, 1, 2);
    g_autoptr(SsimLowered) l = lower(m, &p, TRUE);
    const SsimGraph *g = ssim_lowered_graph(l);
    guint32 ring = SSIM_NONE, grads = SSIM_NONE;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != 0 || op->name == SSIM_NONE)
            continue;
        const char *name = ssim_graph_string(g, op->name);
        if (strcmp(name, "cp.kv") == 0) {
            ring = op->group;
            cr_assert_eq(op->kind, SSIM_OP_COLLECTIVE);
            cr_assert_eq(op->coll, SSIM_COLL_PERMUTE);
            cr_assert_eq(ssim_lowered_op_class(l, i), SSIM_OPCLASS_CP);
        }
        if (strcmp(name, "dp.allreduce") == 0)
            grads = op->group;
    }
    cr_assert_neq(ring, SSIM_NONE);
    cr_assert_neq(grads, SSIM_NONE);
    guint n;
    const guint32 *r = ssim_lowered_group_ranks(l, ring, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(r[0], 0);
    cr_assert_eq(r[1], 2);
    const guint32 *d = ssim_lowered_group_ranks(l, grads, &n);
    cr_assert_eq(n, 4);
    guint32 want[] = {0, 2, 4, 6};
    for (guint i = 0; i < 4; i++)
        cr_assert_eq(d[i], want[i], "member %u: %u", i, d[i]);
}

/*
 * The ring by hand, Llama 3.1 8B's shape (8 key-value heads of 128) at s = 8192 over cp = 2, two
 * layers, two microbatches, no recompute: each layer's forward sends its K and V once (2 x 4096
 * tokens x 8 x 128 x 2 bytes = 16 MiB) and runs 2 attention kernels; its backward sends K, V and
 * their gradient once (32 MiB), runs 2 kernels and sends the last gradient home (16 MiB).  The
 * representative lowering emits both GPUs of the ring (cp per stage).
 */
Test(context_parallel, ring_steps_and_bytes_by_hand)
{
    g_autoptr(SsimModel) m = llama(2, 8192);
    SsimParallel p = split(1, 2, 1, 1, 2);
    g_autoptr(SsimLowered) l = lower(m, &p, FALSE);
    cr_assert_eq(ssim_graph_n_ranks(ssim_lowered_graph(l)), 2);
    const guint64 mib = 1u << 20;
    for (guint rank = 0; rank < 2; rank++) {
        TestOps kv = test_ops_named(l, rank, "cp.kv");
        cr_assert_eq(kv.n, 2 * 2);
        cr_assert_eq(kv.bytes, 4 * 16 * mib);
        TestOps kv_bwd = test_ops_named(l, rank, "cp.kv.bwd");
        cr_assert_eq(kv_bwd.n, 2 * 2);
        cr_assert_eq(kv_bwd.bytes, 4 * 32 * mib);
        TestOps dkv = test_ops_named(l, rank, "cp.dkv");
        cr_assert_eq(dkv.n, 2 * 2);
        cr_assert_eq(dkv.bytes, 4 * 16 * mib);
        cr_assert_eq(test_ops_named(l, rank, SSIM_FLASH_KERNEL).n, 4);
        cr_assert_eq(test_ops_named(l, rank, SSIM_FLASH_CP_KERNEL).n, 4);
        cr_assert_eq(test_ops_named(l, rank, SSIM_FLASH_CP_KERNEL ".bwd").n, 4);
    }
    /* Against cp = 1 (the same replica on one GPU): every GEMM has half the tokens, and the
     * attention's FLOPs, cp kernels of (s/2)^2 each, are half of the one kernel's s^2. */
    SsimParallel one = split(1, 1, 1, 1, 2);
    g_autoptr(SsimLowered) l1 = lower(m, &one, FALSE);
    double f2 = test_ops_named(l, 0, "qkv").flops, f1 = test_ops_named(l1, 0, "qkv").flops;
    cr_assert_float_eq(f2, f1 / 2, 1e-6 * f1);
    double a2 = test_ops_named(l, 0, SSIM_FLASH_KERNEL).flops +
                test_ops_named(l, 0, SSIM_FLASH_CP_KERNEL).flops;
    double a1 = test_ops_named(l1, 0, SSIM_FLASH_KERNEL).flops;
    cr_assert_float_eq(a2, a1 / 2, 1e-6 * a1);
    /* A pipeline transfer carries the GPU's share of the activations. */
    cr_assert_eq(ssim_lower_transfer_bytes(m, &p), ssim_lower_transfer_bytes(m, &one) / 2);
    /* The step's FLOPs over all GPUs (both ranks of the ring emitted, each its share): the
     * replica's, as on one GPU. */
    cr_assert_float_eq(ssim_lowered_flops(l, TRUE), ssim_lowered_flops(l1, TRUE),
                       1e-6 * ssim_lowered_flops(l1, TRUE));
    /* The op budget errs high, as it must (budget.h). */
    SsimOpEstimate est;
    ssim_budget_estimate(m, &p, FALSE, &est);
    cr_assert_geq(est.ops, (double)ssim_graph_n_ops(ssim_lowered_graph(l)));
    cr_assert_eq(est.ranks, 2);
}

/* A GPU holds the activations of its share of each sequence (flash attention keeps no s^2
 * scores, so exactly half at cp = 2), and ZeRO-1 shards the optimizer over dp x cp. */
Test(context_parallel, memory_by_share_and_shard)
{
    g_autoptr(SsimModel) m = llama(4, 8192);
    SsimParallel p = split(2, 2, 1, 1, 2);
    SsimParallel one = split(2, 1, 1, 1, 2);
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &p) * 2,
                 ssim_memory_activation_layer_bytes(m, &one));
    p.zero_stage = one.zero_stage = 1;
    SsimMemory a, b;
    ssim_memory_estimate(&a, m, &p, 0, 1);
    ssim_memory_estimate(&b, m, &one, 0, 1);
    cr_assert_eq(a.weights, b.weights);
    cr_assert_eq(a.optimizer, (b.optimizer + 1) / 2);
}
