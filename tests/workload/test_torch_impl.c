/*
 * Eager PyTorch's layers (transformer_impl=torch) against hand counts, on Llama 3.1 8B's shapes:
 * h 4096, 32 heads of 128 and 8 key-value heads, ffn 14336 (SwiGLU), vocabulary 128256, RMSNorm,
 * rotary positions, bf16, one 8192-token sequence a microbatch on tp 1.  So T = 8192 tokens,
 * a norm's input N = T h = 33,554,432 elements in R = 8192 rows, Q = T x 32 x 128 = 33,554,432
 * elements and K (and V) = T x 8 x 128 = 8,388,608.
 *
 * Each kernel's bytes are what eager PyTorch's op reads and writes (lower-steps.c gives the op
 * behind each), summed here per element (and per row for the norms' row statistics):
 *   RMSNorm forward   float 2+4, pow 8, mean 4 (+4 a row), eps and rsqrt (8 a row each), mul 8
 *                     (+4 a row), cast 4+2, weight 2+2: 36 N + 24 R, 8 kernels
 *   RMSNorm backward  weight 4, its gradient 6 and 2, cast 6, mul 8 (+4 a row), 12, 4 (+4 a row),
 *                     rsqrt 8, 8, 12 a row, mean 4 (+4 a row), pow 8, 8, 12, the two gradients
 *                     added 12, cast 6: 92 N + 40 R, 16 kernels
 */
#include <criterion/criterion.h>

#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
#include <shiftsim/schedule.h>

#include <string.h>

#define N_ELEMS 33554432ull /* T h */
#define ROWS    8192ull
#define Q_ELEMS 33554432ull
#define K_ELEMS 8388608ull
#define TF      (8192ull * 14336) /* the MLP's input elements, T ffn */
#define VOCAB   128256ull

static SsimModel *llama(void)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load("llama-3.1-8b", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert_eq(m->seq_len, 8192);
    return m;
}

static SsimParallel torch_split(const char *extra)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_set(&p, "transformer_impl", "torch", NULL));
    if (extra)
        cr_assert(ssim_parallel_parse(&p, extra, NULL), "%s", extra);
    return p;
}

/* The kernels of one list whose names start with `prefix`: how many, their bytes summed. */
typedef struct {
    SsimKernelList list;
    const char *prefix;
    guint n;
    guint64 bytes;
} Tally;

static void tally_one(gpointer data, SsimKernelList list, const char *name, double flops,
                      guint64 bytes)
{
    (void)flops;
    Tally *t = data;
    if (list == t->list && g_str_has_prefix(name, t->prefix)) {
        t->n++;
        t->bytes += bytes;
    }
}

static Tally tally(const SsimModel *m, const SsimParallel *p, SsimKernelList list,
                   const char *prefix)
{
    Tally t = {.list = list, .prefix = prefix};
    ssim_lower_each_kernel(m, p, tally_one, &t);
    return t;
}

Test(torch_impl, rmsnorm_runs_as_pytorchs_chain_of_kernels)
{
    g_autoptr(SsimModel) m = llama();
    SsimParallel p = torch_split(NULL);
    Tally f = tally(m, &p, SSIM_KERNELS_LAYER_FWD, "norm1");
    cr_assert_eq(f.n, 8);
    cr_assert_eq(f.bytes, 36 * N_ELEMS + 24 * ROWS); /* 1,208,156,160 */
    Tally b = tally(m, &p, SSIM_KERNELS_LAYER_BWD, "norm1");
    cr_assert_eq(b.n, 16);
    cr_assert_eq(b.bytes, 92 * N_ELEMS + 40 * ROWS); /* 3,087,335,424 */
    /* Both norms of the layer and the final one. */
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_FWD, "norm2").bytes, f.bytes);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_HEAD_BWD, "final_norm").bytes, b.bytes);

    /* rmsnorm=fused: one kernel forward (2 N dt), PyTorch's two passes backward (5 N dt). */
    SsimParallel fused = torch_split("rmsnorm=fused");
    f = tally(m, &fused, SSIM_KERNELS_LAYER_FWD, "norm1");
    cr_assert_eq(f.n, 1);
    cr_assert_eq(f.bytes, 2 * N_ELEMS * 2);
    b = tally(m, &fused, SSIM_KERNELS_LAYER_BWD, "norm1");
    cr_assert_eq(b.n, 2);
    cr_assert_eq(b.bytes, 5 * N_ELEMS * 2);
    /* Transformer Engine's layers with the chain asked for get it too. */
    SsimParallel te;
    ssim_parallel_init(&te);
    cr_assert(ssim_parallel_set(&te, "rmsnorm", "eager", NULL));
    cr_assert_eq(tally(m, &te, SSIM_KERNELS_LAYER_FWD, "norm1").bytes, 36 * N_ELEMS + 24 * ROWS);
}

Test(torch_impl, attention_mlp_and_loss_kernels)
{
    g_autoptr(SsimModel) m = llama();
    SsimParallel p = torch_split("attention=flash");
    /* repeat_kv: K and V each read and copied to the 32 query heads; backward summed back. */
    Tally r = tally(m, &p, SSIM_KERNELS_LAYER_FWD, "repeat_kv");
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.bytes, 2 * (K_ELEMS + Q_ELEMS) * 2);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_BWD, "repeat_kv.bwd").bytes, r.bytes);
    /* The flash kernel reads the repeated K and V: (2 Q + 2 Q) dt + 4 bytes a row (b 32 s). */
    Tally fl = tally(m, &p, SSIM_KERNELS_LAYER_FWD, SSIM_FLASH_KERNEL);
    cr_assert_eq(fl.n, 1);
    cr_assert_eq(fl.bytes, 4 * Q_ELEMS * 2 + 4 * 32 * 8192);
    /* Rotary positions, complex multiplication: 3 kernels a tensor, 20 bytes an element. */
    Tally rope = tally(m, &p, SSIM_KERNELS_LAYER_FWD, "rope");
    cr_assert_eq(rope.n, 6);
    cr_assert_eq(rope.bytes, 20 * (Q_ELEMS + K_ELEMS));
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_BWD, "rope").bytes, rope.bytes);
    /* The output's transpose(1, 2).contiguous(), under flash attention too. */
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_FWD, "attn_ctx.permute").bytes, 2 * Q_ELEMS * 2);
    /* Three projections' input gradients added twice, the MLP's two once: 3 T h dt each. */
    Tally qa = tally(m, &p, SSIM_KERNELS_LAYER_BWD, "qkv.dgrad.add");
    cr_assert_eq(qa.n, 2);
    cr_assert_eq(qa.bytes, 2 * 3 * N_ELEMS * 2);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_BWD, "ffn_up.dgrad.add").bytes, 3 * N_ELEMS * 2);
    /* SwiGLU as silu (2 T ffn dt) and product (3); backward two products' and the silu's. */
    Tally act = tally(m, &p, SSIM_KERNELS_LAYER_FWD, "act");
    cr_assert_eq(act.n, 2);
    cr_assert_eq(act.bytes, 5 * TF * 2);
    Tally actb = tally(m, &p, SSIM_KERNELS_LAYER_BWD, "act");
    cr_assert_eq(actb.n, 3);
    cr_assert_eq(actb.bytes, 9 * TF * 2);
    /* F.cross_entropy on fp32 logits: (dt + 12) a logit forward, (dt + 20) backward. */
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_HEAD_FWD, "loss").bytes, 8192 * VOCAB * 14);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_HEAD_BWD, "loss.bwd").bytes, 8192 * VOCAB * 22);

    /* Transformer Engine's layers have none of these kernels, and fused ones where they must. */
    SsimParallel te;
    ssim_parallel_init(&te);
    cr_assert(ssim_parallel_set(&te, "attention", "flash", NULL));
    const char *absent[] = {"repeat_kv", "attn_ctx.permute", "qkv.dgrad.add", "act.mul"};
    for (gsize i = 0; i < G_N_ELEMENTS(absent); i++)
        cr_assert_eq(tally(m, &te, SSIM_KERNELS_LAYER_FWD, absent[i]).n +
                         tally(m, &te, SSIM_KERNELS_LAYER_BWD, absent[i]).n,
                     0, "%s", absent[i]);
    cr_assert_eq(tally(m, &te, SSIM_KERNELS_LAYER_FWD, "rope").n, 1);
    cr_assert_eq(tally(m, &te, SSIM_KERNELS_LAYER_FWD, "act").bytes, 3 * TF * 2);
}

/* Unfused eager attention: Q, K and V made contiguous (a copy each, K and V repeated), the
 * scores scaled, masked and soft-maxed in dt, b 32 s^2 = 2,147,483,648 scores. */
Test(torch_impl, unfused_attention_is_pytorchs_ops)
{
    g_autoptr(SsimModel) m = llama();
    m->seq_len = 2048; /* 134,217,728 scores; Q 8,388,608 elements */
    SsimParallel p = torch_split(NULL);
    const guint64 E = 32ull * 2048 * 2048, q = 2048ull * 4096;
    Tally c = tally(m, &p, SSIM_KERNELS_LAYER_FWD, "attn.contiguous");
    cr_assert_eq(c.n, 3);
    cr_assert_eq(c.bytes, 3 * 2 * q * 2);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_FWD, "softmax.scale").bytes, 2 * E * 2);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_FWD, "softmax.mask").bytes, E * 5);
    Tally sm = tally(m, &p, SSIM_KERNELS_LAYER_BWD, "softmax");
    cr_assert_eq(sm.n, 3);
    cr_assert_eq(sm.bytes, (3 * 2 + 5 + 2 * 2) * E);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_BWD, "attn.contiguous.bwd").bytes, c.bytes);
}

/* Memory: each eager norm keeps its input in fp32 (4 h a token more, two norms), attention the
 * repeated K and V (2 (32 - 8) 128 dt a token more): 8 x 4096 + 2 x 3072 x 2 = 45,056 bytes a
 * token, 369,098,752 for the 8192 tokens of a microbatch; nothing more under full recompute. */
Test(torch_impl, memory_keeps_what_eager_autograd_saves)
{
    g_autoptr(SsimModel) m = llama();
    SsimParallel te;
    ssim_parallel_init(&te);
    SsimParallel torch = torch_split(NULL);
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &torch) -
                     ssim_memory_activation_layer_bytes(m, &te),
                 45056ull * 8192);
    SsimParallel fused = torch_split("rmsnorm=fused");
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &fused) -
                     ssim_memory_activation_layer_bytes(m, &te),
                 12288ull * 8192);
    te.recompute = torch.recompute = SSIM_RECOMPUTE_FULL;
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &torch),
                 ssim_memory_activation_layer_bytes(m, &te));
}

/* rmsnorm other than auto is refused for a LayerNorm model, with the field and the model named. */
Test(torch_impl, rmsnorm_needs_an_rmsnorm_model)
{
    GError *error = NULL;
    g_autoptr(SsimModel) gpt = ssim_model_load("gpt-j-6b", &error);
    cr_assert_not_null(gpt);
    SsimParallel p = torch_split("rmsnorm=eager");
    cr_assert_not(ssim_parallel_validate(&p, gpt, NULL, &error));
    cr_assert_str_eq(error->message, "rmsnorm: eager applies to a model whose norm is rmsnorm, "
                                     "and gpt-j-6b's is layernorm (leave rmsnorm at auto)");
    g_clear_error(&error);
    SsimParallel auto_ = torch_split(NULL);
    cr_assert(ssim_parallel_validate(&auto_, gpt, NULL, &error), "%s", error ? error->message : "");
}

/* Op-level checkpointing (recompute=op) recomputes the layer's forward less what it kept: no
 * flash kernel, the K part of the QKV GEMM (m 8192, k 4096, n 1024: 2 x 8192 x 1024 x 4096
 * FLOPs), all of the attention output, the second half of the gated up GEMM (n 14336), no down
 * projection; every elementwise kernel again. */
Test(torch_impl, op_checkpointing_recomputes_what_it_did_not_keep)
{
    g_autoptr(SsimModel) m = llama();
    SsimParallel p = torch_split("attention=flash,recompute=op");
    cr_assert_eq(p.recompute, SSIM_RECOMPUTE_OP);
    Tally flash = tally(m, &p, SSIM_KERNELS_LAYER_RECOMPUTE, SSIM_FLASH_KERNEL);
    cr_assert_eq(flash.n, 0);
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    const struct {
        const char *name;
        double flops;
    } gemms[] = {{"qkv.k", 2.0 * 8192 * 1024 * 4096},
                 {"attn_out", 2.0 * 8192 * 4096 * 4096},
                 {"ffn_up.half", 2.0 * 8192 * 14336 * 4096}};
    for (gsize i = 0; i < G_N_ELEMENTS(gemms); i++) {
        Tally t = tally(m, &p, SSIM_KERNELS_LAYER_RECOMPUTE, gemms[i].name);
        cr_assert_eq(t.n, 1, "%s", gemms[i].name);
    }
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_RECOMPUTE, "qkv.k").bytes,
                 (8192ull * 4096 + 4096ull * 1024 + 8192ull * 1024) * 2);
    cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_RECOMPUTE, "ffn_down").n, 0);
    /* The elementwise kernels: all of the forward's. */
    const char *again[] = {"norm1", "rope", "repeat_kv", "attn_ctx.permute", "act", "residual"};
    for (gsize i = 0; i < G_N_ELEMENTS(again); i++)
        cr_assert_eq(tally(m, &p, SSIM_KERNELS_LAYER_RECOMPUTE, again[i]).bytes,
                     tally(m, &p, SSIM_KERNELS_LAYER_FWD, again[i]).bytes, "%s", again[i]);
    /* Hardware FLOPs: the model adds the three GEMMs a layer, once a sequence. */
    p.global_batch = 1;
    cr_assert_float_eq(ssim_parallel_hardware_flops(&p, m) - ssim_model_iteration_flops(m, 1),
                       32 * (gemms[0].flops + gemms[1].flops + gemms[2].flops), 1e3);
    /* Memory: the input and the down projection's output (h each), Q, V, the attention's output
     * (q, kv, q) and the MLP's first input projection (ffn), in bf16, and the flash kernel's row
     * statistics (4 bytes a head): (2 x 4096 + 2 x 4096 + 1024 + 14336) x 2 + 128 a token. */
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &p),
                 8192ull * ((2 * 4096 + 2 * 4096 + 1024 + 14336) * 2 + 4 * 32));
}

/* recompute_layers: with full recompute, only that many layers of each chunk recompute; the
 * rest keep their activations.  Refused without full recompute or above a chunk's layers. */
Test(torch_impl, recompute_layers_recomputes_the_first_layers_of_a_chunk)
{
    g_autoptr(SsimModel) m = llama();
    m->layers = 4;
    SsimParallel p = torch_split("attention=flash,recompute=full,recompute_layers=1,gbs=1");
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    g_autoptr(SsimSchedule) s = ssim_schedule_new(SSIM_SCHEDULE_1F1B, 1, 1, 1, &error);
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    g_autoptr(SsimLowered) l = ssim_lower(m, &p, s, &o, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    const SsimGraph *g = ssim_lowered_graph(l);
    guint recomputed = 0, fwd = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->name != SSIM_NONE && strcmp(ssim_graph_string(g, op->name), "attn_out") == 0)
            (op->cls != 0 && strcmp(ssim_graph_string(g, op->cls), "recompute") == 0) ? recomputed++
                                                                                      : fwd++;
    }
    cr_assert_eq(fwd, 4, "every layer's forward");
    cr_assert_eq(recomputed, 1, "one layer recomputed");
    /* Memory: one layer keeps its input, three everything. */
    SsimParallel none = p, all = p;
    none.recompute = SSIM_RECOMPUTE_NONE;
    none.recompute_layers = all.recompute_layers = 0;
    SsimMemory mem, mn, ma;
    ssim_memory_estimate(&mem, m, &p, 0, 1);
    ssim_memory_estimate(&mn, m, &none, 0, 1);
    ssim_memory_estimate(&ma, m, &all, 0, 1);
    cr_assert_eq(mem.activations, ma.activations / 4 + mn.activations / 4 * 3);

    SsimParallel sel = torch_split("recompute=selective,recompute_layers=1");
    cr_assert_not(ssim_parallel_validate(&sel, m, NULL, &error));
    cr_assert_str_eq(error->message, "recompute_layers needs recompute full: it recomputes the "
                                     "forward of 1 layers of each chunk (Megatron-LM's "
                                     "--recompute-method block), and recompute is selective");
    g_clear_error(&error);
    SsimParallel many = torch_split("recompute=full,recompute_layers=5");
    cr_assert_not(ssim_parallel_validate(&many, m, NULL, &error));
    cr_assert_str_eq(error->message, "recompute_layers: 5 is more than the 4 layers of a model "
                                     "chunk (give at most 4, or 0 for all)");
    g_clear_error(&error);
}

/* The grad_accum kernels on graph rank 0 of a lowering of `spec` on Llama 3.1 8B cut to 2 layers
 * (one pipeline stage: 2 layers, the embedding and the head, one accumulation kernel each), and
 * the bytes its dp all-reduce carries. */
static guint accum_kernels(const char *spec, guint64 *reduced)
{
    g_autoptr(SsimModel) m = llama();
    m->layers = 2;
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p, spec, NULL), "%s", spec);
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&p, m, NULL, &error), "%s", error ? error->message : "");
    g_autoptr(SsimSchedule) s =
        ssim_schedule_new(SSIM_SCHEDULE_1F1B, 1, 1, ssim_parallel_n_microbatches(&p), &error);
    SsimLowerOptions o = SSIM_LOWER_OPTIONS_INIT;
    g_autoptr(SsimLowered) l = ssim_lower(m, &p, s, &o, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    const SsimGraph *g = ssim_lowered_graph(l);
    guint n = 0;
    *reduced = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        const char *name = op->name != SSIM_NONE ? ssim_graph_string(g, op->name) : "";
        if (op->rank == 0 && strcmp(name, "grad_accum") == 0)
            n++;
        if (op->rank == 0 && strcmp(name, "dp.allreduce") == 0)
            *reduced += op->bytes;
    }
    return n;
}

/* PyTorch's AccumulateGrad: the first microbatch's weight gradients become .grad as they are,
 * the later ones are added (m - 1 adds a tensor group), where Megatron-LM without its fusion adds
 * every microbatch's; the gradients reduced are the same. */
Test(torch_impl, autograd_accumulates_from_the_second_microbatch)
{
    guint64 te_bytes, torch_bytes, one_bytes, fused_bytes;
    cr_assert_eq(accum_kernels("dp=2,gbs=6,step_costs=+grad_accum", &te_bytes), 3 * 4);
    cr_assert_eq(accum_kernels("dp=2,gbs=6,transformer_impl=torch", &torch_bytes), 2 * 4);
    cr_assert_eq(accum_kernels("dp=2,gbs=2,transformer_impl=torch", &one_bytes), 0);
    cr_assert_eq(accum_kernels("dp=2,gbs=6", &fused_bytes), 0);
    cr_assert_gt(te_bytes, 0);
    cr_assert_eq(torch_bytes, te_bytes);
    cr_assert_eq(one_bytes, te_bytes);
    cr_assert_eq(fused_bytes, te_bytes);
}
