/*
 * What one layer, the embedding and the LM head compute (lower-private.h's step lists; the op
 * lists themselves are in include/shiftsim/lower.h).
 *
 * The per-layer work does not depend on the layer, the microbatch or the rank, so it is built
 * once per lowering as small arrays of steps -- a kernel with FLOPs, bytes and the
 * weight-gradient bytes it completes, or a TP collective with the number of kernels it overlaps
 * -- for a layer's forward, its recompute and its backward, the embedding and the LM head; the
 * emitter (lower-emit.c) replays them into the plan wherever the schedule runs them.  Nothing
 * here knows about ranks, streams or placement.
 *
 * The TP collectives follow Megatron-LM's conjugate operators: "f" before a column-parallel GEMM
 * (identity forward, all-reduce backward) and "g" after a row-parallel one (all-reduce forward,
 * identity backward); sequence parallelism turns them into all-gather / reduce-scatter, and
 * tp_comm = rs-ag replaces an all-reduce with a reduce-scatter and an all-gather.
 */
#include "src/workload/lower-private.h"

#include <string.h>

static GArray *steps_new(void)
{
    return g_array_new(FALSE, TRUE, sizeof(Step));
}

/* Step names are interned here, once a configuration, so the plan takes them as they are. */
static Step kernel(const char *name, double flops, guint64 bytes, guint64 grad)
{
    return (Step){.kind = ST_KERNEL,
                  .name = g_intern_string(name),
                  .flops = flops,
                  .bytes = bytes,
                  .grad_bytes = grad};
}

static void kernel_step(GArray *p, const char *name, double flops, guint64 bytes, guint64 grad)
{
    Step st = kernel(name, flops, bytes, grad);
    g_array_append_val(p, st);
}

/* A memory-bound kernel of `bytes` that only some configurations have (none when 0). */
static void optional_step(GArray *p, const char *name, guint64 bytes)
{
    if (bytes > 0)
        kernel_step(p, name, 0, bytes, 0);
}

/* The separate accumulation of a microbatch's weight gradients (step cost grad_accum), in bytes
 * a parameter: DeepSpeed's cast to fp32 first (grad_cast; 0 without it), then the add. */
typedef struct {
    guint64 dt, cast, add;
} Accum;

/*
 * Accumulates `grad` bytes of weight gradients, completing them for a DP bucket: one add
 * (autograd's AccumulateGrad or Megatron-LM's hook, run by the backward's own engine; one kernel
 * for the lot), or, under grad_cast, DeepSpeed's Python loop over the parameters
 * (update_hp_grads()), a cast and an add for each tensor: the `n_big` of `big` bytes, then
 * `n_small` more sharing the rest (biases, norms).
 */
static void accumulate(GArray *p, const Accum *a, guint64 grad, const guint64 *big, guint n_big,
                       guint n_small)
{
    if (a->cast == 0) {
        kernel_step(p, "grad_accum", 0, grad / a->dt * a->add, grad);
        return;
    }
    const guint n = MAX(n_big + n_small, 1u);
    guint64 rest = grad / a->dt; /* parameters */
    for (guint i = 0; i < n; i++) {
        guint64 params = i < n_big ? MIN(big[i] / a->dt, rest) : rest / (n - i);
        rest -= params;
        kernel_step(p, "grad_accum.cast", 0, params * a->cast, 0);
        kernel_step(p, "grad_accum", 0, params * a->add, i + 1 == n ? grad : 0);
    }
}

static void tp_step(GArray *p, SsimCollKind coll, guint64 bytes, guint overlap)
{
    static const char *const names[SSIM_COLL_N] = {
#define SSIM_X(e, s) [SSIM_COLL_##e] = "tp." s,
        SSIM_COLL_LIST(SSIM_X)
#undef SSIM_X
    };
    Step st = {.kind = ST_TP,
               .coll = (guint8)coll,
               .overlap = (guint8)overlap,
               .name = g_intern_string(names[coll]),
               .bytes = bytes};
    g_array_append_val(p, st);
}

/* A step of context parallelism's key-value ring: every GPU of the cp group sends `bytes` to the
 * next and receives as much from the one before (a collective-permute), waited for `overlap`
 * kernels on. */
static void cp_step(GArray *p, const char *name, guint64 bytes, guint overlap)
{
    Step st = {.kind = ST_CP,
               .coll = (guint8)SSIM_COLL_PERMUTE,
               .overlap = (guint8)overlap,
               .name = g_intern_static_string(name),
               .bytes = bytes};
    g_array_append_val(p, st);
}

typedef struct {
    guint tp;
    gboolean sp;   /* sequence parallel: norms and residuals sharded, RS/AG at g/f */
    gboolean rsag; /* reduce-scatter + all-gather instead of all-reduce */
    gboolean sync; /* the input-gradient reduction waits for the weight gradients (tp_sync_grad) */
    /* Transformer Engine's overlap (tp_comm_overlap; only under sp, so only where tp > 1): the
     * all-gather before a column-parallel GEMM and the reduce-scatter after a row-parallel one
     * run beside it. */
    gboolean ub;
    guint cast; /* kernels between a backward all-gather and its GEMM: 1, an FP8 cast, or 0 */
    guint64 S;  /* bytes of a full b s h activation */
} TpStyle;

/* The collective(s) at a "g" (forward output of a row-parallel GEMM). */
static void tp_g_forward(GArray *p, const TpStyle *ts)
{
    if (ts->tp <= 1)
        return;
    if (ts->sp) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, 0);
    } else if (ts->rsag) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, 0);
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, 0);
    } else {
        tp_step(p, SSIM_COLL_ALLREDUCE, ts->S, 0);
    }
}

/*
 * Transformer Engine's tensor-parallel overlap (ts->ub; Megatron-LM's --tp-comm-overlap, NeMo's
 * ub_tp_comm_overlap) splits a GEMM next to a sequence-parallel collective into tp chunks and
 * moves the activation a chunk at a time beside them through userbuffers (ring exchange): an
 * all-gather feeds the column-parallel GEMM after it chunk by chunk, starting on the local shard,
 * and a row-parallel GEMM's output is reduce-scattered chunk by chunk as it is produced.  Here
 * the collective runs beside its GEMM and the kernel after the GEMM waits for it: what shows is
 * the part of the collective longer than the GEMM, and the GEMM runs under the cluster's
 * interference (overlap_slowdown) meanwhile.  The GEMM's chunks are priced as the whole GEMM.
 * A parallel block's reduce-scatter follows the branches' add, not a GEMM, and still blocks.
 */
/* Forward "f" (input of a column-parallel GEMM): an all-gather under SP, nothing otherwise. */
static void tp_f_forward(GArray *p, const TpStyle *ts)
{
    if (ts->tp > 1 && ts->sp)
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, ts->ub ? 1 : 0);
}

/* A row-parallel GEMM and the collective(s) at its "g": the reduce-scatter beside it under
 * Transformer Engine's overlap, after it otherwise. */
static void row_parallel_forward(GArray *p, const TpStyle *ts, Step gemm)
{
    if (ts->ub) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, 1);
        g_array_append_val(p, gemm);
        return;
    }
    g_array_append_val(p, gemm);
    tp_g_forward(p, ts);
}

/* Backward of "g": an all-gather of the output gradient under SP (beside the input-gradient GEMM
 * it feeds, and the FP8 cast before it, under Transformer Engine's overlap). */
static void tp_g_backward(GArray *p, const TpStyle *ts)
{
    if (ts->tp > 1 && ts->sp)
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, ts->ub ? 1 + ts->cast : 0);
}

/* Backward of "f" under SP, before the input-gradient GEMM: the GEMM's input all-gathered again
 * for its weight gradient, beside that GEMM (Korthikanti et al. 2022, section 4.2.2: only the
 * shard is kept; Megatron-LM's linear layers and Transformer Engine's gather it in the backward),
 * and waited for by the kernel after it. */
static void tp_f_backward_gather(GArray *p, const TpStyle *ts)
{
    if (ts->tp > 1 && ts->sp)
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, 1);
}

/* Backward of "f": the input gradient's reduction, overlapping `overlap` weight-grad kernels. */
static void tp_f_backward(GArray *p, const TpStyle *ts, guint overlap)
{
    if (ts->tp <= 1)
        return;
    if (ts->sp) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, overlap);
    } else if (ts->rsag) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, overlap);
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, overlap);
    } else {
        tp_step(p, SSIM_COLL_ALLREDUCE, ts->S, overlap);
    }
}

/*
 * The backward of "f" with the `n` weight-gradient kernels of the GEMMs it feeds.  Megatron-LM
 * launches the input gradient's reduction before them and lets it run beside them (its
 * asynchronous tensor-parallel all-reduce, since 2021-09); before that, autograd computed the
 * GEMM's input and weight gradients and only then reduced the input gradient (ts->sync).
 */
static void tp_f_backward_with(GArray *p, const TpStyle *ts, const Step *wgrads, guint n)
{
    if (!ts->sync)
        tp_f_backward(p, ts, n);
    g_array_append_vals(p, wgrads, n);
    if (ts->sync)
        tp_f_backward(p, ts, 0);
}

/*
 * The attention core: the scores, their softmax, the attention dropout and the context, as
 * Megatron-LM's separate kernels with the b (heads / tp) s^2 scores (`E`) written to memory.
 * The fused softmax (scaled_upper_triang_masked_softmax) is charged 4 E dt forward and 3 E dt
 * backward: more than its compulsory traffic (1.5 and 2 E dt), standing for a row-per-warp
 * kernel's bandwidth until one is measured on an A100 (docs/validation.md, "Left alone").  Where
 * Megatron-LM cannot use it (ssim_parallel_softmax_fallback), PyTorch's operators do the same in
 * fp32 (forward_torch_softmax with query-key layer scaling, Megatron-LM's default before 2023 and
 * Megatron-DeepSpeed's): the scores cast to fp32, scaled, masked in place, the softmax, the
 * probabilities cast back, each a kernel at its bytes; autograd runs the five backwards in
 * reverse.  The attention dropout (torch.nn.Dropout) is a kernel of its own: it reads the
 * probabilities and writes the dropped ones and a byte mask, its backward reads the gradient and
 * the mask and writes the gradient.  Or, under flash attention (par->attention), one kernel
 * forward and one backward that keep the scores on chip (Dao et al. 2022, 2023; Megatron-LM's
 * --use-flash-attn, Transformer Engine's fused attention).  The forward reads Q, K and V and
 * writes the output and each row's log-sum-exp (fp32); the backward reads Q, K, V, the output,
 * its gradient and the log-sum-exp, writes the gradients of Q, K and V and accumulates Q's in
 * fp32 (read and written).  A flash kernel carries the FLOPs of the kernels it replaces, the
 * step's count; the cost model prices the work it executes (include/shiftsim/analytic.h, "Flash
 * attention").
 *
 * Under context parallelism (cp > 1, flash only) the model is a GPU's share of the sequence,
 * s / cp tokens (lower_steps_build), and its queries attend to the whole sequence in cp steps,
 * as Transformer Engine's AttnFuncWithCPAndKVP2P runs them: step i multiplies them with the keys
 * and values of the GPU i places before it in the ring, which arrived while step i - 1 ran.  With
 * Megatron-LM's load balancing (a GPU holds sequence chunks j and 2 cp - 1 - j) every step
 * visits two chunk pairs of (s / 2 cp)^2 scores, the first two halves of a chunk's diagonal and a
 * whole pair: each step has the work of a causal kernel over s / cp tokens, which is how it is
 * priced and counted (cp of them: the whole causal attention / cp).  The forward sends K and V
 * (2 k dt) each of the cp - 1 steps; the backward sends K and V with the gradient of the step
 * before (4 k dt), then the last gradient home, which the K and V projections' backward waits
 * for.
 */
typedef struct {
    gboolean flash;
    gboolean eager;  /* eager PyTorch's unfused attention (transformer_impl=torch) */
    guint64 permute; /* the context's permute copy: local unfused, torch always */
    guint64 qs, ks; /* the query's and one of K and V's elements, K and V as attention reads them */
    guint64 scores; /* the scores' elements, b (heads / tp) s^2 */
    guint64 dt;
    guint64 repeat; /* torch's repeat_kv: one of K and V copied to every query head (0: none) */
    SsimGemm score, ctx;
    guint64 softmax_fwd, softmax_bwd; /* unfused: the fused softmax kernels' bytes */
    gboolean fallback;       /* PyTorch's softmax instead (ssim_parallel_softmax_fallback) */
    guint64 cast, fp32_pass; /* its kernels' bytes: a cast (0 for 32-bit scores), an fp32 pass */
    guint64 dropout;         /* attention dropout's kernels (0: none) */
    guint64 flash_fwd, flash_bwd; /* flash: the kernels' bytes */
    guint64 rope;                 /* rotary positions: each pass's bytes (0: none) */
    gboolean rope_eager;          /* torch: PyTorch's complex multiplication, kernel by kernel */
    guint64 k_heads;              /* ... over Q's (qs) and K's own elements (not repeated) */
    guint64 alibi;                /* unfused ALiBi: the bias written into the scores (0: none) */
    guint cp;                     /* flash under context parallelism: steps a pass (else 1) */
    guint64 cp_kv;                /* ... the K and V bytes of one ring step */
    guint64 cp_fwd, cp_bwd;       /* ... and a later step's kernels' bytes (half the keys) */
} AttnCore;

static void attn_core_init(AttnCore *ac, const SsimModel *model, const SsimParallel *par)
{
    const guint64 dt = ssim_dtype_size(model->dtype);
    const guint64 t = par->tp, b = par->microbatch, s = model->seq_len;
    const guint64 d = ssim_model_head_dim(model);
    const guint64 heads = lower_cdiv(model->heads, t), kv = lower_cdiv(model->kv_heads, t);
    const guint64 E = b * heads * s * s;
    const guint64 q = b * s * heads * d, k = b * s * kv * d, rows = b * heads * s;
    const gboolean torch = par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH;
    ac->flash = par->attention == SSIM_ATTENTION_FLASH;
    ac->eager = torch && !ac->flash;
    ac->dt = dt;
    /* torchtitan's and Hugging Face's repeat_kv: under grouped-query attention each of K and V is
     * expanded to every query head and copied (reshape of an expanded view), K and V read from
     * the copies; the backward sums the copies' gradients back (a reduction, q read, k written). */
    ac->repeat = torch && heads != kv ? (q + k) * dt : 0;
    ac->qs = q;
    ac->ks = ac->repeat ? q : k;
    ac->scores = E;
    ac->score = ssim_model_gemm(model, SSIM_GEMM_ATTN_SCORE, par->microbatch, par->tp);
    ac->ctx = ssim_model_gemm(model, SSIM_GEMM_ATTN_CONTEXT, par->microbatch, par->tp);
    ac->softmax_fwd = 4 * E * dt;
    ac->softmax_bwd = 3 * E * dt;
    ac->fallback = ssim_parallel_softmax_fallback(par, model);
    ac->cast = dt < 4 ? E * (dt + 4) : 0;
    ac->fp32_pass = 8 * E;
    ac->dropout = model->attention_dropout ? E * (2 * dt + 1) : 0;
    /* Megatron-LM's own unfused attention (transformer_impl=local) turns the context [b heads s d]
     * into [s b heads d] with permute().contiguous(), and eager PyTorch's attention, flash or not,
     * its [b heads s d] output into [b s heads d] with transpose(1, 2).contiguous(): one read and
     * one write of it. */
    ac->permute = (par->transformer_impl == SSIM_TRANSFORMER_IMPL_LOCAL && !ac->flash) || torch
                      ? 2 * q * dt
                      : 0;
    ac->flash_fwd = ssim_flash_bytes(FALSE, q, ac->ks, rows, (guint)dt);
    ac->flash_bwd = ssim_flash_bytes(TRUE, q, ac->ks, rows, (guint)dt);
    /* Rotary positions (Su et al. 2021) rotate Q and K after the QKV projection, outside the
     * attention core: Megatron-LM's fused RoPE (--apply-rope-fusion, its default; Transformer
     * Engine's kernel, one launch for Q and one for K) reads each and writes it rotated, the part
     * a partial rotary leaves alone copied; its backward does the same to their gradients.  A
     * selective recompute (the attention core only) does not repeat it. */
    ac->rope = model->position == SSIM_POSITION_ROTARY ? 2 * (q + k) * dt : 0;
    /* Eager PyTorch (torchtitan's apply_rotary_emb) rotates each of Q and K in three kernels: the
     * tensor made fp32 (dt read, 4 written), viewed as complex and multiplied by the frequencies
     * (8), cast back with type_as (4 read, dt written); autograd's backward runs the same three on
     * the gradient (the conjugate's product).  Hugging Face's rotate_half form moves about as
     * much. */
    ac->rope_eager = torch && ac->rope;
    ac->k_heads = k;
    /* ALiBi (Press et al. 2022) adds a bias linear in the key's distance to every score.
     * Unfused, Megatron-DeepSpeed (BLOOM's) passes the [b heads, 1, s] bias as baddbmm's input
     * with beta = 1: PyTorch first copies it, broadcast, into the scores (E dt written), and the
     * batched GEMM then reads them back (E dt more for the scores' kernel).  Flash attention
     * adds the bias inside its kernel. */
    ac->alibi = model->position == SSIM_POSITION_ALIBI && !ac->flash ? E * dt : 0;
    ac->cp = ac->flash ? MAX(par->cp, 1u) : 1;
    ac->cp_kv = 2 * k * dt;
    ac->cp_fwd = ssim_flash_bytes(FALSE, q, ac->ks / 2, rows, (guint)dt);
    ac->cp_bwd = ssim_flash_bytes(TRUE, q, ac->ks / 2, rows, (guint)dt);
}

/* Eager PyTorch's attention without a fused kernel (nanoGPT's, the reference GPT-J layer's):
 * Q, K and V, transposed views of the projections, made contiguous for the batched GEMMs (a copy
 * each), the scores scaled (a kernel), masked (masked_fill: the byte mask read), the softmax in
 * the scores' dtype; the backward undoes each, and copies the Q, K and V gradients back into the
 * projections' [tokens, width] layout. */
static void attn_eager_copies(GArray *p, const AttnCore *ac, const char *name)
{
    kernel_step(p, name, 0, 2 * ac->qs * ac->dt, 0);
    kernel_step(p, name, 0, 2 * ac->ks * ac->dt, 0);
    kernel_step(p, name, 0, 2 * ac->ks * ac->dt, 0);
}

static void attn_core_forward(GArray *p, const AttnCore *ac)
{
    if (ac->repeat) {
        kernel_step(p, "repeat_kv", 0, ac->repeat, 0);
        kernel_step(p, "repeat_kv", 0, ac->repeat, 0);
    }
    if (ac->flash) {
        for (guint i = 0; i < ac->cp; i++) {
            if (i + 1 < ac->cp)
                cp_step(p, "cp.kv", ac->cp_kv, 1);
            kernel_step(p, i == 0 ? SSIM_FLASH_KERNEL : SSIM_FLASH_CP_KERNEL,
                        ac->score.flops + ac->ctx.flops, i == 0 ? ac->flash_fwd : ac->cp_fwd, 0);
        }
        optional_step(p, "attn_ctx.permute", ac->permute);
        return;
    }
    if (ac->eager) {
        const guint64 E = ac->scores, dt = ac->dt;
        attn_eager_copies(p, ac, "attn.contiguous");
        optional_step(p, "alibi", ac->alibi);
        kernel_step(p, "attn_score", ac->score.flops, ac->score.bytes + ac->alibi, 0);
        kernel_step(p, "softmax.scale", 0, 2 * E * dt, 0);
        kernel_step(p, "softmax.mask", 0, E * (2 * dt + 1), 0);
        kernel_step(p, "softmax", 0, 2 * E * dt, 0);
        optional_step(p, "attn_dropout", ac->dropout);
        kernel_step(p, "attn_ctx", ac->ctx.flops, ac->ctx.bytes, 0);
        optional_step(p, "attn_ctx.permute", ac->permute);
        return;
    }
    optional_step(p, "alibi", ac->alibi);
    kernel_step(p, "attn_score", ac->score.flops, ac->score.bytes + ac->alibi, 0);
    if (ac->fallback) {
        optional_step(p, "softmax.cast", ac->cast);
        kernel_step(p, "softmax.scale", 0, ac->fp32_pass, 0);
        kernel_step(p, "softmax.mask", 0, ac->fp32_pass, 0);
        kernel_step(p, "softmax", 0, ac->fp32_pass, 0);
        optional_step(p, "softmax.cast_out", ac->cast);
    } else {
        kernel_step(p, "softmax", 0, ac->softmax_fwd, 0);
    }
    optional_step(p, "attn_dropout", ac->dropout);
    kernel_step(p, "attn_ctx", ac->ctx.flops, ac->ctx.bytes, 0);
    if (ac->permute)
        kernel_step(p, "attn_ctx.permute", 0, ac->permute, 0);
}

static void attn_core_backward_inner(GArray *p, const AttnCore *ac)
{
    if (ac->flash) {
        for (guint i = 0; i < ac->cp; i++) {
            if (i + 1 < ac->cp)
                cp_step(p, "cp.kv.bwd", 2 * ac->cp_kv, 1);
            kernel_step(p, i == 0 ? SSIM_FLASH_KERNEL ".bwd" : SSIM_FLASH_CP_KERNEL ".bwd",
                        2 * (ac->score.flops + ac->ctx.flops), i == 0 ? ac->flash_bwd : ac->cp_bwd,
                        0);
        }
        if (ac->cp > 1)
            cp_step(p, "cp.dkv", ac->cp_kv, 0);
        return;
    }
    kernel_step(p, "attn_ctx.bwd", 2 * ac->ctx.flops, 2 * ac->ctx.bytes, 0);
    optional_step(p, "attn_dropout.bwd", ac->dropout);
    if (ac->eager) {
        const guint64 E = ac->scores, dt = ac->dt;
        kernel_step(p, "softmax.bwd", 0, 3 * E * dt, 0);
        kernel_step(p, "softmax.mask.bwd", 0, E * (2 * dt + 1), 0);
        kernel_step(p, "softmax.scale.bwd", 0, 2 * E * dt, 0);
        kernel_step(p, "attn_score.bwd", 2 * ac->score.flops, 2 * ac->score.bytes, 0);
        attn_eager_copies(p, ac, "attn.contiguous.bwd");
        return;
    }
    if (ac->fallback) {
        /* The casts' backwards cast the gradient; the softmax's reads the gradient and its fp32
         * output and writes the input's gradient; the mask's and the scale's read and write it. */
        optional_step(p, "softmax.cast_out.bwd", ac->cast);
        kernel_step(p, "softmax.bwd", 0, 3 * ac->fp32_pass / 2, 0);
        kernel_step(p, "softmax.mask.bwd", 0, ac->fp32_pass, 0);
        kernel_step(p, "softmax.scale.bwd", 0, ac->fp32_pass, 0);
        optional_step(p, "softmax.cast.bwd", ac->cast);
    } else {
        kernel_step(p, "softmax.bwd", 0, ac->softmax_bwd, 0);
    }
    kernel_step(p, "attn_score.bwd", 2 * ac->score.flops, 2 * ac->score.bytes, 0);
}

/* The attention core's backward, then repeat_kv's: the copies' gradients summed back. */
static void attn_core_backward(GArray *p, const AttnCore *ac)
{
    attn_core_backward_inner(p, ac);
    if (ac->repeat) {
        kernel_step(p, "repeat_kv.bwd", 0, ac->repeat, 0);
        kernel_step(p, "repeat_kv.bwd", 0, ac->repeat, 0);
    }
}

/* Rotary positions on Q and K: one fused kernel a pass, or eager PyTorch's three a tensor. */
static void rope_step(GArray *p, const AttnCore *ac, gboolean backward)
{
    if (!ac->rope_eager) {
        optional_step(p, backward ? "rope.bwd" : "rope", ac->rope);
        return;
    }
    const guint64 dt = ac->dt, n[] = {ac->qs, ac->k_heads};
    for (guint i = 0; i < G_N_ELEMENTS(n); i++) {
        kernel_step(p, backward ? "rope.float.bwd" : "rope.float", 0, n[i] * (dt + 4), 0);
        kernel_step(p, backward ? "rope.mul.bwd" : "rope.mul", 0, 8 * n[i], 0);
        kernel_step(p, backward ? "rope.cast.bwd" : "rope.cast", 0, n[i] * (4 + dt), 0);
    }
}

/* The MLP's activation over `x` bytes of its input (b s ffn/tp): the fused kernel, reading the
 * g halves and writing the output; or, where `mul` is set (eager PyTorch's gated MLP), the silu
 * (x read and written) and then the product (`mul` bytes). */
static void act_forward(GArray *p, guint64 g, guint64 mul, guint64 x)
{
    if (mul == 0) {
        kernel_step(p, "act", 0, (g + 1) * x, 0);
        return;
    }
    kernel_step(p, "act", 0, 2 * x, 0);
    kernel_step(p, "act.mul", 0, mul, 0);
}

/* Its backward: one fused kernel (the gradient and the g halves read, their gradients written),
 * or the product's two gradients and then the silu's (the gradient and its input read). */
static void act_backward(GArray *p, guint64 g, guint64 mul, guint64 x)
{
    if (mul == 0) {
        kernel_step(p, "act.bwd", 0, (2 * g + 1) * x, 0);
        return;
    }
    kernel_step(p, "act.mul.bwd", 0, mul, 0);
    kernel_step(p, "act.mul.bwd", 0, mul, 0);
    kernel_step(p, "act.bwd", 0, 3 * x, 0);
}

/* How a layer's norms run: over `n` elements in `rows` rows of dt bytes, PyTorch's eager chain
 * or one fused kernel forward, and the backward in two passes (Megatron-LM's fused layer norm,
 * PyTorch's layer_norm_backward: the input's gradient, the weights' apart) or one. */
typedef struct {
    guint64 n, rows, dt;
    gboolean eager, two_pass;
} NormStyle;

/* One kernel of an eager chain: its name's suffix, its bytes an element and a row. */
typedef struct {
    const char *suffix;
    guint64 per_elem, per_row;
} ChainKernel;

static void chain(GArray *p, const char *name, const ChainKernel *k, guint n_k, const NormStyle *ns)
{
    for (guint i = 0; i < n_k; i++) {
        g_autofree char *kn = g_strconcat(name, k[i].suffix, NULL);
        kernel_step(p, kn, 0, ns->n * k[i].per_elem + ns->rows * k[i].per_row, 0);
    }
}

/*
 * Norm `name` forward.  Fused: one kernel, reading the input and writing the output.  Eager
 * PyTorch's RMSNorm (torchtitan's RMSNorm, Hugging Face's LlamaRMSNorm: x.float(),
 * x * rsqrt(x.pow(2).mean(-1) + eps), type_as, * weight): the input made fp32 (dt read, 4
 * written), squared (8), its row means (4 read), eps added and the reciprocal square root taken
 * over the rows, the product (8), the cast back (4 + dt) and the weight's product (2 dt), each a
 * kernel.
 */
static void norm_fwd(GArray *p, const char *name, const NormStyle *ns)
{
    const guint64 dt = ns->dt;
    if (!ns->eager) {
        kernel_step(p, name, 0, 2 * ns->n * dt, 0);
        return;
    }
    const ChainKernel k[] = {{".float", dt + 4, 0}, {".pow", 8, 0},        {".mean", 4, 4},
                             {".eps", 0, 8},        {".rsqrt", 0, 8},      {".mul", 8, 4},
                             {".cast", 4 + dt, 0},  {".weight", 2 * dt, 0}};
    chain(p, name, k, G_N_ELEMENTS(k), ns);
}

/*
 * Its backward.  Fused, over x = n dt bytes: one kernel of 4 x (the gradient and the input read,
 * the gradient written, and the weights' gradients accumulated on the way), "norm1.bwd"; or two
 * passes (two_pass: Megatron-LM's fused layer norm, megatron/fused_kernels/
 * layer_norm_cuda_kernel.cu, and PyTorch's layer_norm_backward): the weights' partial sums
 * reading the gradient and the input (2 x, "norm1.bwd.gamma"), then the input's gradient reading
 * both again and writing it (3 x).  Or the eager chain's as autograd runs it:
 * the weight's product (the input gradient, 2 dt; the weight's gradient, a product of 3 dt and
 * its sum over the tokens, dt), the cast's (dt + 4), the normalising product's (the gradient
 * times the row factor, 8; times the input, 12, summed over each row, 4), the reciprocal square
 * root's (three kernels over the rows), the mean's (the row gradient spread over the row, 4
 * written), the square's (the input copied by pow(x, 1), 8; doubled, 8; times the gradient, 12),
 * the two gradients of the fp32 input added (12) and the cast back (4 + dt).
 */
static void norm_bwd(GArray *p, const char *name, const NormStyle *ns)
{
    const guint64 dt = ns->dt;
    if (!ns->eager) {
        const guint64 x = ns->n * dt;
        g_autofree char *bwd = g_strconcat(name, ".bwd", NULL);
        if (ns->two_pass) {
            g_autofree char *gamma = g_strconcat(bwd, ".gamma", NULL);
            kernel_step(p, gamma, 0, 2 * x, 0);
            kernel_step(p, bwd, 0, 3 * x, 0);
        } else {
            kernel_step(p, bwd, 0, 4 * x, 0);
        }
        return;
    }
    const ChainKernel k[] = {
        {".weight.bwd", 2 * dt, 0}, {".weight.wgrad", 3 * dt, 0}, {".weight.wgrad", dt, 0},
        {".cast.bwd", dt + 4, 0},   {".mul.bwd", 8, 4},           {".mul.bwd", 12, 0},
        {".mul.bwd", 4, 4},         {".rsqrt.bwd", 0, 8},         {".rsqrt.bwd", 0, 8},
        {".rsqrt.bwd", 0, 12},      {".mean.bwd", 4, 4},          {".pow.bwd", 8, 0},
        {".pow.bwd", 8, 0},         {".pow.bwd", 12, 0},          {".grad_add", 12, 0},
        {".float.bwd", 4 + dt, 0}};
    chain(p, name, k, G_N_ELEMENTS(k), ns);
}

/*
 * Op-level checkpointing's recompute (SSIM_RECOMPUTE_OP): the layer's forward `f` again, less
 * the kernels whose outputs were kept: the flash-attention kernel, the QKV GEMM but its K part,
 * the MLP's up GEMM but a gated MLP's second half (or all of an ungated one's, whose down
 * projection is recomputed instead) and a gated MLP's down projection (model.h,
 * ssim_model_op_recompute_gemms).  Everything else -- norms, positions, elementwise kernels, the
 * attention output projection, collectives -- runs again.
 */
static void op_recompute(GArray *p, const GArray *f, const SsimModel *model,
                         const SsimParallel *par)
{
    SsimGemm g[SSIM_OP_RECOMPUTE_GEMMS];
    const char *names[SSIM_OP_RECOMPUTE_GEMMS];
    ssim_model_op_recompute_gemms(model, par->microbatch, par->tp, g, names);
    const gboolean gated = ssim_activation_is_gated(model->activation);
    for (guint i = 0; i < f->len; i++) {
        Step st = g_array_index(f, Step, i);
        if (st.kind == ST_KERNEL) {
            const char *n = st.name;
            if (strcmp(n, SSIM_FLASH_KERNEL) == 0 || (gated && strcmp(n, "ffn_down") == 0) ||
                (!gated && strcmp(n, "ffn_up") == 0))
                continue;
            if (strcmp(n, "qkv") == 0)
                st = kernel(names[0], g[0].flops, g[0].bytes, 0);
            else if (gated && strcmp(n, "ffn_up") == 0)
                st = kernel(names[2], g[2].flops, g[2].bytes, 0);
        }
        g_array_append_val(p, st);
    }
}

void lower_steps_clear(StepLists *sl)
{
    GArray **all[] = {&sl->layer_fwd,      &sl->layer_recompute,   &sl->layer_bwd,
                      &sl->embed_fwd,      &sl->embed_bwd,         &sl->head_fwd,
                      &sl->head_bwd,       &sl->layer_bwd_first,   &sl->embed_bwd_first,
                      &sl->head_bwd_first, &sl->head_bwd_deferred, &sl->head_wgrad};
    for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
        if (*all[i]) {
            g_array_free(*all[i], TRUE);
            *all[i] = NULL;
        }
}

/* The step lists, with the weight gradients accumulated by kernels of their own or not. */
static void build(StepLists *sl, const SsimModel *model, const SsimParallel *par, gboolean accum)
{
    const guint64 dt = ssim_dtype_size(model->dtype);
    const guint64 t = par->tp, b = par->microbatch, s = model->seq_len, h = model->hidden;
    const guint64 T = b * s;
    const gboolean sp = par->sequence_parallel && t > 1;
    const guint64 Tl = sp ? lower_cdiv(T, t) : T;
    AttnCore ac;
    attn_core_init(&ac, model, par);
    const guint64 F = lower_cdiv(model->ffn, t);
    const guint64 g = ssim_activation_is_gated(model->activation) ? 2 : 1;
    const guint64 Vt = lower_cdiv(model->vocab, t);
    TpStyle ts = {.tp = (guint)t,
                  .sp = sp,
                  .rsag = par->tp_comm == SSIM_TP_COMM_RS_AG,
                  .sync = par->tp_sync_grad,
                  .ub = par->tp_comm_overlap && sp,
                  .cast = par->fp8 != SSIM_FP8_OFF,
                  .S = T * h * dt};
    /* Without gradient-accumulation fusion (step cost grad_accum) each weight gradient is added
     * into its main gradient after every microbatch's backward: the gradient read, the main
     * gradient (fp32 under grad_fp32) read and written.  Those kernels then complete the
     * gradients a DP bucket waits for.  DeepSpeed's BF16_Optimizer (grad_cast;
     * runtime/bf16_optimizer.py, update_hp_grads(): hp_grad.add_(lp.grad.to(hp_grad.dtype)))
     * first casts a 16-bit gradient to an fp32 copy (dt read, 4 written), which the add then
     * reads in place of the gradient, tensor by tensor (accumulate()). */
    const guint64 main_dt =
        ssim_parallel_step_cost_on(par, model, SSIM_STEP_COST_GRAD_FP32) ? 4 : dt;
    const gboolean grad_cast =
        main_dt != dt && ssim_parallel_step_cost_on(par, model, SSIM_STEP_COST_GRAD_CAST);
    const Accum acc = {.dt = dt,
                       .cast = grad_cast ? dt + main_dt : 0,
                       .add = (grad_cast ? main_dt : dt) + 2 * main_dt};

    SsimGemm qkv = ssim_model_gemm(model, SSIM_GEMM_QKV, par->microbatch, par->tp);
    SsimGemm out = ssim_model_gemm(model, SSIM_GEMM_ATTN_OUT, par->microbatch, par->tp);
    SsimGemm up = ssim_model_gemm(model, SSIM_GEMM_FFN_UP, par->microbatch, par->tp);
    SsimGemm down = ssim_model_gemm(model, SSIM_GEMM_FFN_DOWN, par->microbatch, par->tp);
    SsimGemm head = ssim_model_gemm(model, SSIM_GEMM_LM_HEAD, par->microbatch, par->tp);

    /* Weight-gradient bytes: each matrix's own, and the layer's small rest (norms, biases) with
     * the last weight gradient of the layer's backward. */
    guint64 w_qkv = qkv.k * qkv.n * dt, w_out = out.k * out.n * dt;
    guint64 w_up = up.k * up.n * dt, w_down = down.k * down.n * dt;
    guint64 layer_grad = ssim_model_layer_params(model) / t * dt;
    guint64 rest = layer_grad > w_qkv + w_out + w_up + w_down
                       ? layer_grad - (w_qkv + w_out + w_up + w_down)
                       : 0;
    if (accum)
        w_qkv = w_out = w_up = w_down = rest = 0;

    /* Megatron-LM's own layers (transformer_impl=local, parallel.h), where the model has biases:
     * the QKV bias added by a kernel of its own (the GEMM's output read and written), each bias
     * gradient a reduction over the tokens that reads its output's gradient, and under unfused
     * attention the Q/K/V gradients concatenated back into the QKV output's (read and written;
     * the split was a view).  The row-parallel outputs' biases (attention output, MLP down) are
     * added after the reduction, on the sequence-parallel shard when there is one. */
    const gboolean local = par->transformer_impl == SSIM_TRANSFORMER_IMPL_LOCAL;
    /* Eager PyTorch (transformer_impl=torch) adds the biases in the GEMMs (addmm) but reduces
     * their gradients apart (AddmmBackward's sum over the tokens), like Megatron-LM's own. */
    const gboolean torch = par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH;
    const gboolean attn_b = (local || torch) && model->attention_bias;
    const gboolean mlp_b = (local || torch) && model->mlp_bias;
    const guint64 qkv_out = qkv.m * qkv.n * dt;
    const guint64 qkv_bias = attn_b && local ? 2 * qkv_out : 0, qkv_bgrad = attn_b ? qkv_out : 0;
    const guint64 qkv_cat = local && !ac.flash ? 2 * qkv_out : 0;
    /* torch: the Q, K and V projections are three nn.Linear (and a gated MLP's two inputs two),
     * whose input gradients autograd adds into one: two adds of the full b s h input (read twice,
     * written once), one for the MLP.  The GEMMs are priced as the fused one. */
    const guint64 in_add = torch ? 3 * T * h * dt : 0;
    const guint64 up_add = torch && g == 2 ? in_add : 0;
    /* torch: a gated activation's silu and product are two kernels (the silu's output written and
     * read back), and autograd's backward three: the product's two gradients and the silu's. */
    const guint64 act_mul = torch && g == 2 ? 3 * T * F * dt : 0;
    const NormStyle ns = {.n = Tl * h,
                          .rows = Tl,
                          .dt = dt,
                          .eager = ssim_parallel_rmsnorm_eager(par, model),
                          .two_pass = local || torch};
    const guint64 out_bgrad = attn_b ? Tl * h * dt : 0, down_bgrad = mlp_b ? Tl * h * dt : 0;
    const guint64 up_bgrad = mlp_b ? up.m * up.n * dt : 0;
    /* Hidden dropout (model->hidden_dropout) rides on each residual add's forward kernel (the
     * fused bias-dropout-add writes a byte mask beside its output) and has a kernel of its own
     * in the backward: the gradient read with the mask and written, before the bias gradient
     * and the residual stream's accumulation. */
    const guint64 mask = model->hidden_dropout ? Tl * h : 0;
    const guint64 dropout_bwd = model->hidden_dropout ? Tl * h * (2 * dt + 1) : 0;
    /* FP8 training (par->fp8; Transformer Engine's layers): an FP8 GEMM takes FP8 operands, and
     * on Hopper only in the TN layout, so each input is cast to FP8 and also written transposed
     * for the other pass's GEMM: dt bytes read and 2 written an element.  The casts of the QKV
     * and MLP-up inputs are fused into the LayerNorm before them, and the MLP-down input's into
     * the activation (LayerNormLinear, LayerNormMLP): those kernels write the FP8 copy and its
     * transpose where they wrote the dt output, the same bytes at dt = 2.  The attention output
     * projection's input (the attention core's output) gets a cast-transpose kernel of its own,
     * and in the backward each FP8 GEMM's output gradient does (dt read, 2 written; the bias
     * gradient rides on it).  The weights' casts happen once a step (lower-emit.c). */
    const gboolean fp8 = par->fp8 != SSIM_FP8_OFF;
    const guint64 cast = lower_fp8_cast_bytes(dt);
    const guint64 out_cast = fp8 ? out.m * out.k * cast : 0;
    const guint64 qkv_gcast = fp8 ? qkv.m * qkv.n * cast : 0;
    const guint64 out_gcast = fp8 ? out.m * out.n * cast : 0;
    const guint64 up_gcast = fp8 ? up.m * up.n * cast : 0;
    const guint64 down_gcast = fp8 ? down.m * down.n * cast : 0;

    sl->layer_fwd = steps_new();
    sl->layer_recompute = steps_new();
    sl->layer_bwd = steps_new();
    GArray *f = sl->layer_fwd, *bw = sl->layer_bwd;
    if (model->block == SSIM_BLOCK_PARALLEL) {
        norm_fwd(f, "norm", &ns);
        tp_f_forward(f, &ts);
        kernel_step(f, "qkv", qkv.flops, qkv.bytes, 0);
        optional_step(f, "qkv.bias", qkv_bias);
        rope_step(f, &ac, FALSE);
        attn_core_forward(f, &ac);
        optional_step(f, "attn_out.cast", out_cast);
        kernel_step(f, "attn_out", out.flops, out.bytes, 0);
        kernel_step(f, "ffn_up", up.flops, up.bytes, 0);
        act_forward(f, g, act_mul, T * F * dt);
        kernel_step(f, "ffn_down", down.flops, down.bytes, 0);
        kernel_step(f, "branch_add", 0, 3 * T * h * dt, 0);
        tp_g_forward(f, &ts);
        kernel_step(f, "residual", 0, 3 * Tl * h * dt + mask, 0);

        kernel_step(bw, "residual.bwd", 0, 3 * Tl * h * dt, 0);
        optional_step(bw, "dropout.bwd", dropout_bwd);
        optional_step(bw, "ffn_down.bgrad", down_bgrad);
        optional_step(bw, "attn_out.bgrad", out_bgrad);
        tp_g_backward(bw, &ts);
        optional_step(bw, "ffn_down.grad_cast", down_gcast);
        kernel_step(bw, "ffn_down.dgrad", down.flops, down.bytes, 0);
        kernel_step(bw, "ffn_down.wgrad", down.flops, down.bytes, w_down);
        act_backward(bw, g, act_mul, T * F * dt);
        optional_step(bw, "ffn_up.bgrad", up_bgrad);
        tp_f_backward_gather(bw, &ts);
        optional_step(bw, "ffn_up.grad_cast", up_gcast);
        kernel_step(bw, "ffn_up.dgrad", up.flops, up.bytes, 0);
        optional_step(bw, "ffn_up.dgrad.add", up_add);
        optional_step(bw, "attn_out.grad_cast", out_gcast);
        kernel_step(bw, "attn_out.dgrad", out.flops, out.bytes, 0);
        kernel_step(bw, "attn_out.wgrad", out.flops, out.bytes, w_out);
        attn_core_backward(bw, &ac);
        rope_step(bw, &ac, TRUE);
        optional_step(bw, "qkv.cat", qkv_cat);
        optional_step(bw, "qkv.bgrad", qkv_bgrad);
        optional_step(bw, "qkv.grad_cast", qkv_gcast);
        kernel_step(bw, "qkv.dgrad", qkv.flops, qkv.bytes, 0);
        optional_step(bw, "qkv.dgrad.add", in_add);
        optional_step(bw, "qkv.dgrad.add", in_add);
        kernel_step(bw, "branch_add.bwd", 0, 3 * T * h * dt, 0);
        Step wgrads[] = {kernel("ffn_up.wgrad", up.flops, up.bytes, w_up),
                         kernel("qkv.wgrad", qkv.flops, qkv.bytes, w_qkv + rest)};
        tp_f_backward_with(bw, &ts, wgrads, G_N_ELEMENTS(wgrads));
        norm_bwd(bw, "norm", &ns);
    } else {
        norm_fwd(f, "norm1", &ns);
        tp_f_forward(f, &ts);
        kernel_step(f, "qkv", qkv.flops, qkv.bytes, 0);
        optional_step(f, "qkv.bias", qkv_bias);
        rope_step(f, &ac, FALSE);
        attn_core_forward(f, &ac);
        optional_step(f, "attn_out.cast", out_cast);
        row_parallel_forward(f, &ts, kernel("attn_out", out.flops, out.bytes, 0));
        kernel_step(f, "residual1", 0, 3 * Tl * h * dt + mask, 0);
        norm_fwd(f, "norm2", &ns);
        tp_f_forward(f, &ts);
        kernel_step(f, "ffn_up", up.flops, up.bytes, 0);
        act_forward(f, g, act_mul, T * F * dt);
        row_parallel_forward(f, &ts, kernel("ffn_down", down.flops, down.bytes, 0));
        kernel_step(f, "residual2", 0, 3 * Tl * h * dt + mask, 0);

        kernel_step(bw, "residual2.bwd", 0, 3 * Tl * h * dt, 0);
        optional_step(bw, "dropout2.bwd", dropout_bwd);
        optional_step(bw, "ffn_down.bgrad", down_bgrad);
        tp_g_backward(bw, &ts);
        optional_step(bw, "ffn_down.grad_cast", down_gcast);
        kernel_step(bw, "ffn_down.dgrad", down.flops, down.bytes, 0);
        kernel_step(bw, "ffn_down.wgrad", down.flops, down.bytes, w_down);
        act_backward(bw, g, act_mul, T * F * dt);
        optional_step(bw, "ffn_up.bgrad", up_bgrad);
        tp_f_backward_gather(bw, &ts);
        optional_step(bw, "ffn_up.grad_cast", up_gcast);
        kernel_step(bw, "ffn_up.dgrad", up.flops, up.bytes, 0);
        optional_step(bw, "ffn_up.dgrad.add", up_add);
        Step up_wgrad = kernel("ffn_up.wgrad", up.flops, up.bytes, w_up);
        tp_f_backward_with(bw, &ts, &up_wgrad, 1);
        norm_bwd(bw, "norm2", &ns);
        kernel_step(bw, "residual1.bwd", 0, 3 * Tl * h * dt, 0);
        optional_step(bw, "dropout1.bwd", dropout_bwd);
        optional_step(bw, "attn_out.bgrad", out_bgrad);
        tp_g_backward(bw, &ts);
        optional_step(bw, "attn_out.grad_cast", out_gcast);
        kernel_step(bw, "attn_out.dgrad", out.flops, out.bytes, 0);
        kernel_step(bw, "attn_out.wgrad", out.flops, out.bytes, w_out);
        attn_core_backward(bw, &ac);
        rope_step(bw, &ac, TRUE);
        optional_step(bw, "qkv.cat", qkv_cat);
        optional_step(bw, "qkv.bgrad", qkv_bgrad);
        tp_f_backward_gather(bw, &ts);
        optional_step(bw, "qkv.grad_cast", qkv_gcast);
        kernel_step(bw, "qkv.dgrad", qkv.flops, qkv.bytes, 0);
        optional_step(bw, "qkv.dgrad.add", in_add);
        optional_step(bw, "qkv.dgrad.add", in_add);
        Step qkv_wgrad = kernel("qkv.wgrad", qkv.flops, qkv.bytes, w_qkv + rest);
        tp_f_backward_with(bw, &ts, &qkv_wgrad, 1);
        norm_bwd(bw, "norm1", &ns);
    }
    /* The layer's tensors: the four matrices, their biases, and each norm's weight (and bias). */
    const guint64 matrices[] = {w_qkv, w_out, w_up, w_down};
    const guint norm_tensors = model->norm == SSIM_NORM_LAYERNORM ? 2 : 1;
    const guint small = (model->attention_bias ? 2 : 0) + (model->mlp_bias ? 2 : 0) +
                        (model->block == SSIM_BLOCK_PARALLEL ? 1 : 2) * norm_tensors;
    if (accum)
        accumulate(bw, &acc, layer_grad, matrices, G_N_ELEMENTS(matrices), small);

    if (par->recompute == SSIM_RECOMPUTE_FULL) {
        g_array_append_vals(sl->layer_recompute, f->data, f->len);
    } else if (par->recompute == SSIM_RECOMPUTE_SELECTIVE) {
        attn_core_forward(sl->layer_recompute, &ac);
    } else if (par->recompute == SSIM_RECOMPUTE_OP) {
        op_recompute(sl->layer_recompute, f, model, par);
    }

    /* The embedding and the LM head are Megatron-LM's own layers, not Transformer Engine's: no
     * userbuffers overlap there. */
    ts.ub = FALSE;
    /* Embedding: vocabulary-parallel lookup, reduced over tp; its gradient is a dense table. */
    guint64 emb_grad = ssim_model_embedding_params(model) / t * dt;
    sl->embed_fwd = steps_new();
    kernel_step(sl->embed_fwd, "embed", 0, 2 * T * h * dt, 0);
    tp_g_forward(sl->embed_fwd, &ts);
    sl->embed_bwd = steps_new();
    tp_g_backward(sl->embed_bwd, &ts);
    kernel_step(sl->embed_bwd, "embed.bwd", 0, 2 * T * h * dt + emb_grad, accum ? 0 : emb_grad);
    const guint64 table = lower_cdiv(model->vocab, t) * h * dt;
    if (accum)
        accumulate(sl->embed_bwd, &acc, emb_grad, &table, 1,
                   (model->position == SSIM_POSITION_LEARNED ? 1 : 0) +
                       (model->embedding_norm ? norm_tensors : 0));

    /* LM head: final norm, column-parallel head, vocabulary-parallel cross entropy (whose max,
     * sum and target logit are reduced over tp: three floats per token), in passes over the
     * T x V/tp logits, bytes a logit (par->cross_entropy):
     *   unfused, Megatron-LM's tensor_parallel/cross_entropy.py on logits made fp32 (unless
     *     --fp16-lm-cross-entropy): the fp32 copy (dt read, 4 written), the max (4), the max
     *     subtracted (8), exp (8), the sum (4), the softmax kept for the backward (8): dt + 36;
     *     the backward scales the softmax by the loss's gradient (8) and returns it in dt
     *     (4 + dt): dt + 12.
     *   native, Megatron-Core's fusions/fused_cross_entropy.py: the fp32 copy and the max in one
     *     compiled pass (dt + 4), exp in place (8), the sum (4), the division in place (8):
     *     dt + 24; the backward as unfused's.
     *   te, Transformer Engine's triton/cross_entropy.py (Megatron-LM's
     *     --cross-entropy-fusion-impl te; TE 2.1 to 2.12): the online softmax reads the logits
     *     (dt), a second kernel reads them again and writes the gradient over them (2 dt),
     *     nothing in fp32: 3 dt; the backward multiplies that gradient by the loss's, in place
     *     (2 dt).  (TE since 2026-07 writes the gradient in the backward: dt and 2 dt.)
     *   unfused under transformer_impl=torch, PyTorch's F.cross_entropy on logits made fp32
     *     (torchtitan's .float(), Hugging Face's): the fp32 copy (dt + 4), log_softmax (8):
     *     dt + 12; the backward: nll_loss's zero-filled gradient (4), log_softmax's backward
     *     (12) and the cast back (4 + dt): dt + 20. */
    guint64 head_grad = ssim_model_head_params(model);
    if (model->tied_embeddings && par->pp > 1)
        head_grad += (guint64)model->vocab * model->hidden; /* the last stage's tied copy */
    head_grad = head_grad / t * dt;
    sl->head_fwd = steps_new();
    norm_fwd(sl->head_fwd, "final_norm", &ns);
    tp_f_forward(sl->head_fwd, &ts);
    kernel_step(sl->head_fwd, "lm_head", head.flops, head.bytes, 0);
    /* Bytes a logit: per_dt x dt + fixed (fp32 passes). */
    typedef struct {
        guint64 fwd_per_dt, fwd, bwd_per_dt, bwd;
    } CeBytes;
    static const CeBytes ce[SSIM_CROSS_ENTROPY_N] = {{1, 36, 1, 12}, {1, 24, 1, 12}, {3, 0, 2, 0}};
    static const CeBytes torch_ce = {1, 12, 1, 20};
    const CeBytes *cep = torch && par->cross_entropy == SSIM_CROSS_ENTROPY_UNFUSED
                             ? &torch_ce
                             : &ce[par->cross_entropy];
    kernel_step(sl->head_fwd, "loss", 0, T * Vt * (cep->fwd_per_dt * dt + cep->fwd), 0);
    if (t > 1)
        tp_step(sl->head_fwd, SSIM_COLL_ALLREDUCE, 3 * T * 4, 0);
    const Step loss_bwd = kernel("loss.bwd", 0, T * Vt * (cep->bwd_per_dt * dt + cep->bwd), 0);
    const Step head_dgrad = kernel("lm_head.dgrad", head.flops, head.bytes, 0);
    /* Under defer_head_wgrad the flush's last weight gradient completes the head's gradients
     * (StepLists), so none in the backward does. */
    const gboolean defer = par->defer_head_wgrad > 0 && par->pp > 1;
    Step head_wgrad =
        kernel("lm_head.wgrad", head.flops, head.bytes, accum || defer ? 0 : head_grad);
    sl->head_bwd = steps_new();
    g_array_append_val(sl->head_bwd, loss_bwd);
    tp_f_backward_gather(sl->head_bwd, &ts);
    g_array_append_val(sl->head_bwd, head_dgrad);
    tp_f_backward_with(sl->head_bwd, &ts, &head_wgrad, 1);
    norm_bwd(sl->head_bwd, "final_norm", &ns);
    if (defer) {
        /* Megatron-LM's deferred microbatch keeps the head's input and its output's gradient and
         * skips the weight gradient (and under sequence parallelism the input's all-gather for
         * it); drain_embedding_wgrad_compute() all-gathers that input again at the flush and
         * runs the GEMM. */
        sl->head_bwd_deferred = steps_new();
        g_array_append_val(sl->head_bwd_deferred, loss_bwd);
        g_array_append_val(sl->head_bwd_deferred, head_dgrad);
        tp_f_backward(sl->head_bwd_deferred, &ts, 0);
        norm_bwd(sl->head_bwd_deferred, "final_norm", &ns);
        sl->head_wgrad = steps_new();
        if (ts.tp > 1 && ts.sp)
            tp_step(sl->head_wgrad, SSIM_COLL_ALLGATHER, ts.S, 0);
        head_wgrad.grad_bytes = head_grad;
        g_array_append_val(sl->head_wgrad, head_wgrad);
    }
    /* The head's tensors: the final norm's, the output matrix (its own, or the last stage's tied
     * copy) and its bias. */
    const guint head_matrix = !model->tied_embeddings || par->pp > 1;
    if (accum && head_grad > 0)
        accumulate(sl->head_bwd, &acc, head_grad, &table, head_matrix,
                   norm_tensors + (model->lm_head_bias ? 1 : 0));
}

void lower_steps_build(StepLists *sl, const SsimModel *model, const SsimParallel *par)
{
    SsimModel local; /* a GPU's share of each sequence under context parallelism */
    model = ssim_parallel_local_model(par, model, &local);
    const gboolean accum = ssim_parallel_step_cost_on(par, model, SSIM_STEP_COST_GRAD_ACCUM);
    build(sl, model, par, accum);
    /* PyTorch's AccumulateGrad (transformer_impl=torch): a microbatch's weight gradient becomes
     * the parameter's .grad where it has none yet and is added into it from the second
     * microbatch on, so a chunk's first backward has no accumulation kernels (its weight
     * gradients complete where they are computed). */
    if (accum && par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH) {
        StepLists first = {0};
        build(&first, model, par, FALSE);
        sl->layer_bwd_first = g_steal_pointer(&first.layer_bwd);
        sl->embed_bwd_first = g_steal_pointer(&first.embed_bwd);
        sl->head_bwd_first = g_steal_pointer(&first.head_bwd);
        lower_steps_clear(&first);
    }
}

/* ---- the kernels, for callers outside the lowering (lower.h) ---- */

void ssim_lower_each_kernel(const SsimModel *model, const SsimParallel *par, SsimKernelFn fn,
                            gpointer data)
{
    StepLists sl = {0};
    lower_steps_build(&sl, model, par);
    const GArray *lists[SSIM_KERNELS_N] = {
        [SSIM_KERNELS_LAYER_FWD] = sl.layer_fwd,
        [SSIM_KERNELS_LAYER_RECOMPUTE] = sl.layer_recompute,
        [SSIM_KERNELS_LAYER_BWD] = sl.layer_bwd,
        [SSIM_KERNELS_EMBED_FWD] = sl.embed_fwd,
        [SSIM_KERNELS_EMBED_BWD] = sl.embed_bwd,
        [SSIM_KERNELS_HEAD_FWD] = sl.head_fwd,
        [SSIM_KERNELS_HEAD_BWD] = sl.head_bwd,
    };
    for (guint l = 0; l < SSIM_KERNELS_N; l++)
        for (guint i = 0; i < lists[l]->len; i++) {
            const Step *st = &g_array_index(lists[l], Step, i);
            if (st->kind == ST_KERNEL)
                fn(data, (SsimKernelList)l, st->name, st->flops, st->bytes);
        }
    lower_steps_clear(&sl);
}

gboolean ssim_lower_step_cost_of(const char *name, SsimStepCost *out)
{
    static const struct {
        const char *name;
        SsimStepCost term;
    } ops[] = {
        {"optimizer", SSIM_STEP_COST_OPTIMIZER},
        {"grad.zero", SSIM_STEP_COST_OPTIMIZER},
        {"dp.allgather", SSIM_STEP_COST_OPTIMIZER},
        {"fp8.weight_cast", SSIM_STEP_COST_OPTIMIZER},
        {"clip.norm", SSIM_STEP_COST_CLIP},
        {"clip.allreduce", SSIM_STEP_COST_CLIP},
        {"loss_scale.check", SSIM_STEP_COST_LOSS_SCALE},
        {"loss_scale.allreduce", SSIM_STEP_COST_LOSS_SCALE},
        {"emb.allreduce", SSIM_STEP_COST_EMBEDDING},
        {"host", SSIM_STEP_COST_HOST},
        {"dp.allreduce", SSIM_STEP_COST_GRAD_FP32},
        {"dp.reducescatter", SSIM_STEP_COST_GRAD_FP32},
        {"grad_accum", SSIM_STEP_COST_GRAD_ACCUM},
        {"grad_accum.cast", SSIM_STEP_COST_GRAD_CAST},
        {"zero3.copy_out", SSIM_STEP_COST_SHARD_COPY},
        {"zero.copy_in", SSIM_STEP_COST_SHARD_COPY},
        {"fp8.amax_fwd", SSIM_STEP_COST_FP8_AMAX},
        {"fp8.amax_bwd", SSIM_STEP_COST_FP8_AMAX},
    };
    for (gsize i = 0; name && i < G_N_ELEMENTS(ops); i++)
        if (strcmp(name, ops[i].name) == 0) {
            *out = ops[i].term;
            return TRUE;
        }
    return FALSE;
}

guint64 ssim_lower_transfer_bytes(const SsimModel *model, const SsimParallel *par)
{
    SsimModel local;
    model = ssim_parallel_local_model(par, model, &local);
    return (guint64)par->microbatch * model->seq_len * model->hidden *
           ssim_dtype_size(model->dtype) / par->tp;
}
