/*
 * Memory per GPU: static training state and Korthikanti et al. 2022 activation memory.
 *
 * Korthikanti's 34 s b h + 5 a s^2 b bytes per layer break down (16-bit activations, 1-byte
 * dropout masks) as: 4 s b h for the two LayerNorm inputs, 2 s b h each for the QKV and MLP
 * inputs, 2 s b h for the two dropout masks -- together the 10 s b h that tensor parallelism
 * replicates -- plus the 24 s b h that it shards (Q and K 4, V 2, the output projection's input
 * 2, the GeLU input 8 and its output 8) and 5 a s^2 b for softmax output, its dropout mask and
 * the dropout output.  We keep that structure but take the sharded part from the model's real
 * widths (4 a d + 4 kv_heads d for attention, a d = h unless the model's head_dim says otherwise;
 * 2 g ffn + 2 ffn for the MLP with g = 2 when gated), so
 * grouped-query attention and SwiGLU models are counted as they are, and a GPT shape (MHA,
 * ffn = 4h, GeLU) with both dropouts gives exactly the paper's figures.  The masks are the
 * dropouts': a model without hidden dropout (its `hidden_dropout` key) keeps no 2 s b h of masks,
 * one without attention dropout keeps only the softmax output of the scores (2 a s^2 b, which the
 * backward of both the softmax and the probabilities' GEMM reads).  Activations are counted in the
 * model's dtype, the masks in bytes.  A parallel block is counted like a sequential one (a slight
 * overestimate: GPT-J has one norm input, not two).  Under flash attention the scores become
 * 4 a s b: the row statistics the kernel keeps (its dropout mask is regenerated from the random
 * seed, not stored).  Eager PyTorch's layers (transformer_impl=torch) keep more, FP8 training's
 * linear layers less: below.
 */
#include <shiftsim/memory.h>

#include <math.h>

static guint64 cdiv(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

guint64 ssim_memory_activation_layer_bytes(const SsimModel *model, const SsimParallel *par)
{
    g_return_val_if_fail(model != NULL && par != NULL && par->tp >= 1, 0);
    SsimModel local; /* a GPU's share of each sequence under context parallelism */
    model = ssim_parallel_local_model(par, model, &local);
    double s = model->seq_len, b = par->microbatch, h = model->hidden, t = par->tp;
    double a = model->heads;
    double d = ssim_model_head_dim(model);
    double kv = (double)model->kv_heads * d, q = a * d; /* = h unless head_dim says */
    double g = ssim_activation_is_gated(model->activation) ? 2.0 : 1.0;
    double dt = ssim_dtype_size(model->dtype);
    /* Two norm inputs, the QKV and the MLP inputs, and the two hidden-dropout masks (a byte). */
    double replicated = 4.0 * h * dt + (model->hidden_dropout ? 2.0 * h : 0.0);
    double sharded = (4.0 * q + 4.0 * kv + 2.0 * g * model->ffn + 2.0 * model->ffn) * dt / 2.0;
    /* Eager PyTorch's RMSNorm keeps each norm's input in fp32 (for the square's and the product's
     * backward) and its normalised output (for the weight's gradient): 4 h more a norm.  Its
     * repeat_kv hands attention K and V copied to every query head, which attention keeps. */
    if (ssim_parallel_rmsnorm_eager(par, model))
        replicated += 2.0 * 4.0 * h;
    if (par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH && model->kv_heads != model->heads)
        sharded += 2.0 * (q - kv) * dt;
    /* FP8 training (Transformer Engine): a linear layer keeps its input for the weight's gradient
     * as the FP8 cast it multiplied (TE's Linear and LayerNormLinear save `inputmat`, or its
     * transpose, in FP8), 1 byte an element: the QKV and first MLP inputs (replicated), the
     * second MLP matrix's (sharded), and the attention output projection's.  Under flash
     * attention the attention kernel keeps that tensor, its output, in dt for its own backward,
     * so the FP8 copy comes on top of it. */
    if (par->fp8 != SSIM_FP8_OFF && dt > 1.0) {
        replicated -= 2.0 * h * (dt - 1.0);
        sharded -= model->ffn * (dt - 1.0);
        sharded += par->attention == SSIM_ATTENTION_FLASH ? q : -q * (dt - 1.0);
    }
    /* Flash attention keeps no scores: each head's row log-sum-exp (fp32) for the backward.
     * Otherwise the softmax output (in fp32 where PyTorch's softmax runs it) and what the
     * context GEMM reads: with attention dropout its mask and the dropped output, else the
     * output itself (cast back to dt first under PyTorch's softmax). */
    gboolean fp32 = ssim_parallel_softmax_fallback(par, model);
    double softmax_out = fp32 ? 4.0 : dt;
    double ctx_input = model->attention_dropout ? dt + 1.0 : fp32 ? dt : 0.0;
    double scores =
        par->attention == SSIM_ATTENTION_FLASH ? 4.0 * a : (softmax_out + ctx_input) * a * s;
    gboolean sp = par->sequence_parallel && par->tp > 1;
    double per_token; /* bytes per token (s b of them) */

    switch (par->recompute) {
    case SSIM_RECOMPUTE_FULL:
        per_token = sp ? dt * h / t : dt * h;
        break;
    case SSIM_RECOMPUTE_SELECTIVE:
        per_token = sp ? (replicated + sharded) / t : replicated + sharded / t;
        break;
    case SSIM_RECOMPUTE_OP: {
        /* The layer's input, and the outputs op-level checkpointing keeps: Q's and V's
         * projections, the attention's output (and its row statistics under flash attention),
         * the MLP's first input projection and, gated, its down projection's output. */
        double kept_in = dt * h + (ssim_activation_is_gated(model->activation) ? dt * h : 0.0);
        double kept = (2.0 * q + kv + model->ffn) * dt +
                      (par->attention == SSIM_ATTENTION_FLASH ? 4.0 * a : 0.0);
        per_token = sp ? (kept_in + kept) / t : kept_in + kept / t;
        break;
    }
    case SSIM_RECOMPUTE_NONE:
    default:
        per_token = sp ? (replicated + sharded + scores) / t : replicated + (sharded + scores) / t;
        break;
    }
    return (guint64)llround(s * b * per_token);
}

void ssim_memory_estimate(SsimMemory *mem, const SsimModel *model, const SsimParallel *par,
                          guint stage, guint in_flight)
{
    g_return_if_fail(mem != NULL && model != NULL && par != NULL);
    g_return_if_fail(stage < par->pp && par->tp >= 1 && par->dp >= 1);
    g_return_if_fail(ssim_parallel_uneven(par) ||
                     model->layers % (par->pp * par->virtual_stages) == 0);

    guint dsize = ssim_dtype_size(model->dtype);
    /* Master weights (fp32 copy) only when training in 16 bits; Adam's two moments always. */
    guint opt_per_param = dsize < 4 ? 12 : 8;
    /* Gradients live in the buffer they are reduced from: fp32 under grad_fp32 (Megatron-LM's
     * main_grad), else the model's dtype. */
    guint gsize = ssim_parallel_step_cost_on(par, model, SSIM_STEP_COST_GRAD_FP32) ? 4 : dsize;
    guint64 stage_params = ssim_parallel_stage_params(par, model, stage);
    guint stage_layers = ssim_parallel_stage_layers(par, model, stage); /* all its chunks */

    mem->stage = stage;
    mem->in_flight = in_flight;
    mem->params = (stage_params + par->tp - 1) / par->tp;
    mem->weights = mem->params * dsize;
    /* FP8 training keeps each FP8 GEMM's weight cast to FP8 and its transpose (Hopper's FP8
     * GEMMs take only the TN layout), for the whole step (Transformer Engine casts them on the
     * first microbatch): 2 bytes a weight of those GEMMs. */
    mem->weights += 2 * ssim_parallel_stage_fp8_params(par, model, stage);
    mem->gradients = mem->params * gsize;
    mem->optimizer = mem->params * opt_per_param;
    /* ZeRO shards over dp the optimizer state (1), then the gradients (2), then the weights (3),
     * which stage 3 keeps whole only for the layer it computes and the one it gathers next (the
     * largest two of the stage's units: its layers, its embedding, its head). */
    const guint dpx = ssim_parallel_size(par, SSIM_AXIS_DP); /* dp x cp */
    if (par->zero_stage >= 1)
        mem->optimizer = cdiv(mem->optimizer, dpx);
    if (par->zero_stage >= 2)
        mem->gradients = cdiv(mem->gradients, dpx);
    if (par->zero_stage >= 3 && dpx > 1) { /* at dp 1 nothing is sharded or gathered */
        guint64 units[4] = {0}; /* the largest two, then the embedding's and the head's */
        guint64 layer = cdiv(ssim_model_layer_params(model), par->tp);
        units[0] = stage_layers >= 1 ? layer : 0;
        units[1] = stage_layers >= 2 ? layer : 0;
        units[2] = stage == 0 ? cdiv(ssim_model_embedding_params(model), par->tp) : 0;
        units[3] = stage == par->pp - 1 ? cdiv(ssim_model_head_weights(model), par->tp) : 0;
        for (guint i = 2; i < 4; i++) { /* units[0] >= units[1]: the largest two so far */
            guint64 x = units[i];
            if (x > units[0]) {
                units[1] = units[0];
                units[0] = x;
            } else if (x > units[1]) {
                units[1] = x;
            }
        }
        guint64 whole = units[0] + units[1];
        /* fsdp_root (pp 1): the root unit (the embedding's and the head's own weights) whole
         * all step, beside two layers (in the forward the one computed and the next; in the
         * backward the last one, kept since its forward, and the one prefetched). */
        if (par->fsdp_root)
            whole = cdiv(ssim_model_outer_params(model), par->tp) + MIN(stage_layers, 2u) * layer;
        mem->weights = cdiv(mem->weights, dpx) + whole * dsize;
    }
    mem->activation_layer = ssim_memory_activation_layer_bytes(model, par);
    /* in_flight counts chunk passes, which the schedules spread over the stage's v chunks (the
     * interleaved warm-up runs pp microbatches through each chunk in turn): a pass keeps the
     * stage's layers / v on average (a chunk's, even or v = 1).  recompute_layers: only that
     * many layers of each chunk keep just their input, the others everything. */
    guint64 kept_bytes = mem->activation_layer, full_bytes = kept_bytes;
    guint rc_layers = 0;
    if (par->recompute == SSIM_RECOMPUTE_FULL && par->recompute_layers > 0) {
        SsimParallel keep = *par;
        keep.recompute = SSIM_RECOMPUTE_NONE;
        keep.recompute_layers = 0;
        full_bytes = ssim_memory_activation_layer_bytes(model, &keep);
        rc_layers = par->recompute_layers;
    }
    guint64 passes = 0; /* the stage's chunks' bytes, summed */
    for (guint c = 0; c < par->virtual_stages; c++) {
        guint layers = ssim_parallel_chunk_layers(par, model, c * par->pp + stage);
        guint rc = rc_layers > 0 ? MIN(rc_layers, layers) : layers;
        passes += kept_bytes * rc + full_bytes * (layers - rc);
    }
    mem->activations = cdiv(passes * (guint64)in_flight, par->virtual_stages);
    /* defer_head_wgrad: the last stage keeps, for each deferred microbatch until the flush, the
     * LM head's input (its sequence-parallel shard) and the gradient of its logits. */
    guint deferred = ssim_parallel_deferred_wgrads(par);
    if (deferred > 0 && stage == par->pp - 1) {
        SsimModel local;
        const SsimModel *lm = ssim_parallel_local_model(par, model, &local);
        guint64 tokens = (guint64)lm->seq_len * par->microbatch;
        guint64 input = tokens * model->hidden / (par->sequence_parallel ? par->tp : 1);
        guint64 logits = tokens * cdiv(model->vocab, par->tp);
        mem->activations += deferred * (input + logits) * dsize;
    }
    mem->total = mem->weights + mem->gradients + mem->optimizer + mem->activations;
}

static double gib(guint64 bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

gboolean ssim_memory_fits(const SsimMemory *mem, const SsimCluster *cluster, GError **error)
{
    g_return_val_if_fail(mem != NULL && cluster != NULL, FALSE);
    if (mem->total <= cluster->hbm_bytes)
        return TRUE;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY,
                "memory: stage %u needs %.1f GiB per GPU (weights %.1f, gradients %.1f, "
                "optimizer %.1f, activations %.1f for %u microbatch passes in flight) but an %s "
                "has %.1f GiB",
                mem->stage, gib(mem->total), gib(mem->weights), gib(mem->gradients),
                gib(mem->optimizer), gib(mem->activations), mem->in_flight, cluster->gpu,
                gib(cluster->hbm_bytes));
    return FALSE;
}
