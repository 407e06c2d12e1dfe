/*
 * A 3D-parallel training configuration: how dp x tp x pp GPUs split a model and a batch, and the
 * knobs that change what each GPU computes, stores and communicates (virtual pipeline stages,
 * microbatch size, sequence parallelism, activation recomputation, ZeRO-1, gradient bucketing,
 * the tensor-parallel collective style, the schedule and the placement pass).
 *
 * SsimParallel is a plain value: no heap pointers (names are fixed arrays), so it is copied by
 * assignment, as a sweep does millions of times.  ssim_parallel_init() sets the defaults; any
 * field may then be set directly, by ssim_parallel_set() ("tp", "4") or by ssim_parallel_parse()
 * ("dp=2,tp=4,pp=2").  ssim_parallel_validate() decides whether a configuration is possible for a
 * model on a cluster and, when not, names the rule that fails.
 *
 * Ranks: global rank r in [0, dp*cp*tp*pp) maps to a coordinate (dp_i, tp_i, pp_i) by a
 * mixed-radix number whose digits are the axes in `order`, innermost (fastest varying) first; the
 * data-parallel axis has dp*cp ranks, dp_i / cp the replica and dp_i % cp the context-parallel
 * rank.  The default
 * order tp, dp, pp (Megatron-LM's) keeps a tensor-parallel group on consecutive ranks, i.e. inside
 * one node, and puts pipeline stages outermost.  Ranks are laid on nodes node-major
 * (ssim_cluster_node_of).
 */
#pragma once

#include <shiftsim/types.h>
#include <shiftsim/model.h>
#include <shiftsim/cluster.h>

G_BEGIN_DECLS

#define SSIM_PARALLEL_NAME_MAX 32 /* schedule and placement names, including the NUL */

typedef enum { SSIM_AXIS_TP, SSIM_AXIS_DP, SSIM_AXIS_PP, SSIM_AXIS_N } SsimAxis;

/* Tensor-parallel communication: one all-reduce per sharded block, or a reduce-scatter and an
 * all-gather (needed by sequence parallelism). */
typedef enum { SSIM_TP_COMM_ALLREDUCE, SSIM_TP_COMM_RS_AG, SSIM_TP_COMM_N } SsimTpComm;

/* The attention kernels: Megatron-LM's scores, fused softmax and context as separate kernels,
 * the s x s scores written to memory (unfused, the default), or one fused flash-attention
 * kernel forward and one backward that keep the scores on chip (flash: Megatron-LM's
 * --use-flash-attn, Transformer Engine's fused attention; lower.h, "Flash attention"). */
typedef enum { SSIM_ATTENTION_UNFUSED, SSIM_ATTENTION_FLASH, SSIM_ATTENTION_N } SsimAttention;

/* The layers' implementation (Megatron-LM's --transformer-impl), for what it launches besides
 * the GEMMs and the attention core.  transformer_engine (the default, as Megatron-LM's today):
 * Transformer Engine's layers add biases and reduce their gradients in the GEMMs'
 * epilogues and hand Q, K and V to attention as views of one buffer.  local: Megatron-LM's own
 * layers (every Megatron-LM and Megatron-DeepSpeed before Transformer Engine): the QKV bias added
 * by a kernel of its own after the GEMM (PyTorch's linear on a 3-D input; `output + bias` since
 * 2021-09), each bias gradient a reduction over the tokens (`grad_output.sum(dim=0)`, or
 * autograd's for the fused bias-GeLU and bias-dropout-add), each LayerNorm's backward as the
 * fused layer norm's two passes, and under unfused attention the context's permute copy forward
 * and the Q/K/V split's concatenation backward (lower-steps.c).  torch: eager PyTorch modules
 * (torchtitan, Hugging Face transformers, nanoGPT): nn.Linear with the bias in the GEMM, the
 * norm, rotary positions, the gated activation, grouped-query attention's repeated keys and
 * values, the attention's transposes and the projections' summed input gradients each as the
 * separate kernels autograd runs, RMSNorm as PyTorch's chain of elementwise kernels in fp32
 * unless `rmsnorm` says fused; gradients accumulated by autograd (step cost grad_accum on, from
 * the second microbatch), its ZeRO-2 and 3 FSDP2's (step cost shard_copy on). */
typedef enum {
    SSIM_TRANSFORMER_IMPL_TE,
    SSIM_TRANSFORMER_IMPL_LOCAL,
    SSIM_TRANSFORMER_IMPL_TORCH,
    SSIM_TRANSFORMER_IMPL_N
} SsimTransformerImpl;

/* How an RMSNorm runs (only a model whose norm is rmsnorm has one): auto (the default) is the
 * layers' own, eager under transformer_impl=torch and one fused kernel otherwise; fused (one
 * kernel forward and one backward: Transformer Engine's, Apex's, torchtitan's fused_rmsnorm,
 * Liger's); eager (PyTorch's x.float(), pow, mean, rsqrt, mul, cast back and weight multiply, and
 * autograd's backward of each: torchtitan's rmsnorm, Hugging Face's LlamaRMSNorm). */
typedef enum {
    SSIM_RMSNORM_AUTO,
    SSIM_RMSNORM_FUSED,
    SSIM_RMSNORM_EAGER,
    SSIM_RMSNORM_N
} SsimRmsnorm;

/* FP8 training (Megatron-LM's --fp8-format, through Transformer Engine): off (the default), or
 * the linear layers' GEMMs -- QKV, attention output, MLP up and down; forward, input and weight
 * gradients -- on the GPU's FP8 tensor cores with 1-byte operands, everything else (attention,
 * the LM head, norms, communication, optimizer) in the model's dtype.  hybrid: E4M3 forward,
 * E5M2 gradients; e4m3: E4M3 throughout.  Both cost the same here (ssim_gemm_kind_fp8(),
 * lower-steps.c for the casts they add). */
typedef enum { SSIM_FP8_OFF, SSIM_FP8_HYBRID, SSIM_FP8_E4M3, SSIM_FP8_N } SsimFp8;

/* The LM head's cross entropy (Megatron-LM's --cross-entropy-loss-fusion with
 * --cross-entropy-fusion-impl): unfused (the default: tensor_parallel/cross_entropy.py, the
 * vocabulary-parallel logits made fp32 and walked in separate passes), native (Megatron-Core's
 * fusions/fused_cross_entropy.py: the fp32 copy and the max in one pass, the softmax in place) or
 * te (Transformer Engine's Triton kernels: one online-softmax read forward, the gradient written
 * over the logits backward, nothing in fp32).  lower-steps.c counts each one's bytes. */
typedef enum {
    SSIM_CROSS_ENTROPY_UNFUSED,
    SSIM_CROSS_ENTROPY_NATIVE,
    SSIM_CROSS_ENTROPY_TE,
    SSIM_CROSS_ENTROPY_N
} SsimCrossEntropy;

const char *ssim_axis_name(SsimAxis axis);      /* "tp", "dp", "pp" */
const char *ssim_tp_comm_name(SsimTpComm comm); /* "allreduce", "rs-ag" */
gboolean ssim_tp_comm_from_name(const char *name, SsimTpComm *out);
const char *ssim_attention_name(SsimAttention attention); /* "unfused", "flash" */
gboolean ssim_attention_from_name(const char *name, SsimAttention *out);
const char *ssim_fp8_name(SsimFp8 fp8); /* "off", "hybrid", "e4m3" */
gboolean ssim_fp8_from_name(const char *name, SsimFp8 *out);
/* "unfused", "native", "te"; off is read as unfused, on and fused as native. */
const char *ssim_cross_entropy_name(SsimCrossEntropy ce);
gboolean ssim_cross_entropy_from_name(const char *name, SsimCrossEntropy *out);
/* "transformer_engine", "local", "torch"; "te" is also read as transformer_engine, "pytorch"
 * and "eager" as torch. */
const char *ssim_transformer_impl_name(SsimTransformerImpl impl);
gboolean ssim_transformer_impl_from_name(const char *name, SsimTransformerImpl *out);
const char *ssim_rmsnorm_name(SsimRmsnorm norm); /* "auto", "fused", "eager" */
gboolean ssim_rmsnorm_from_name(const char *name, SsimRmsnorm *out);

/*
 * The per-iteration costs of a training step besides the phases (lower.h, "The step's end"),
 * each one a term that can be turned off or on.  Defaults follow Megatron-LM
 * (ssim_step_costs_default): the argument each mirrors is the third column.
 */
#define SSIM_STEP_COST_LIST(X)                                                                     \
    X(OPTIMIZER, "optimizer",                                                                      \
      "--optimizer adam (fp32 master weights and moments; sharded over "                           \
      "dp by --use-distributed-optimizer)")                                                        \
    X(CLIP, "clip", "--clip-grad 1.0 (global gradient norm; 0 turns it off)")                      \
    X(LOSS_SCALE, "loss_scale", "--fp16 with --loss-scale unset (dynamic scaler; none for bf16)")  \
    X(GRAD_FP32, "grad_fp32", "--accumulate-allreduce-grads-in-fp32 (forced on by --bf16)")        \
    X(EMBEDDING, "embedding",                                                                      \
      "tied embeddings (no --untie-embeddings-and-output-weights): first/last stage all-reduce")   \
    X(HOST, "host", "none: the host's work per microbatch (cluster microbatch_floor_us)")          \
    X(GRAD_ACCUM, "grad_accum",                                                                    \
      "fused by --gradient-accumulation-fusion (default since 2022-02); on: Megatron-LM before")   \
    X(GRAD_CAST, "grad_cast",                                                                      \
      "none: DeepSpeed's BF16_Optimizer casts each bf16 gradient to fp32 before its add")          \
    X(SHARD_COPY, "shard_copy",                                                                    \
      "none: PyTorch FSDP2's copies out of its all-gather and into its reduce-scatter buffers")    \
    X(FP8_AMAX, "fp8_amax",                                                                        \
      "--fp8-recipe delayed (the default with --fp8-format): amaxes all-reduced over tp x dp x "   \
      "cp")

typedef enum {
#define SSIM_X(e, s, m) SSIM_STEP_COST_##e,
    SSIM_STEP_COST_LIST(SSIM_X)
#undef SSIM_X
        SSIM_STEP_COST_N
} SsimStepCost;

const char *ssim_step_cost_name(SsimStepCost term);
/* The Megatron-LM argument a term's default mirrors (the list above). */
const char *ssim_step_cost_megatron(SsimStepCost term);
gboolean ssim_step_cost_from_name(const char *name, SsimStepCost *out);
/* Megatron-LM's defaults for a model of `dtype`, as bits (1 << SsimStepCost): every term but
 * loss scaling (fp16 only), the fp32 gradient reduction (bf16 only), the separate gradient
 * accumulation (off: Megatron-LM fuses it into the weight-gradient GEMM), DeepSpeed's cast
 * before it (grad_cast, not Megatron-LM's), FSDP2's buffer copies (shard_copy) and the FP8
 * recipe's amax reductions (fp8_amax).  A configuration's own (ssim_parallel_step_costs) drops
 * the fp32 reduction under the JAX schedules (alpa, alpa-gpipe, xla), whose gradients are in the
 * compute dtype, under transformer_impl=torch turns on the separate accumulation (autograd's,
 * from the second microbatch) with ZeRO 0 and 1, FSDP2's copies with ZeRO 2 and 3, and under fp8
 * with an eager schedule turns on the amax reductions (Transformer Engine's delayed scaling). */
guint ssim_step_costs_default(SsimDtype dtype);

/* defer_head_wgrad: every microbatch's (Megatron-LM's --wgrad-deferral-limit 0). */
#define SSIM_DEFER_ALL G_MAXUINT

/* Most pipeline stages an uneven split (stage_layers) may list. */
#define SSIM_PARALLEL_STAGES_MAX 128

typedef struct {
    guint dp, tp, pp;
    /* Context parallelism (Megatron-LM's --context-parallel-size, Transformer Engine's attention
     * with cp_comm_type p2p): each of a replica's sequences is split over cp GPUs, which hold
     * the same weights and run every op on s / cp of its tokens; the attention of a GPU's
     * queries against the whole sequence takes the keys and values of the other cp - 1 GPUs in
     * a ring, one chunk a step beside the attention of the chunk before (lower.h, "Context
     * parallelism").  The cp GPUs of a replica are innermost in the data-parallel axis (Megatron
     * -LM's order tp-cp-dp-pp): the axis has dp x cp ranks, over which gradients are reduced and
     * ZeRO shards; dp alone counts replicas, that is the batch.  Default 1. */
    guint cp;
    guint virtual_stages;       /* v: model chunks per GPU; 1 = not interleaved */
    guint microbatch;           /* b: sequences per microbatch */
    guint global_batch;         /* B: sequences per iteration, over all dp replicas */
    gboolean sequence_parallel; /* shard norms/dropout activations along the sequence over tp */
    SsimRecompute recompute;
    /* Under full recompute, the layers of each model chunk recomputed, its first ones
     * (Megatron-LM's --recompute-method block --recompute-num-layers; torchtitan's layer-level
     * checkpointing of every k-th block is layers / k of them); the others keep their
     * activations.  0: every layer. */
    guint16 recompute_layers;
    /* ZeRO stage, what is sharded over dp: 0 nothing; 1 the optimizer state (gradients
     * reduce-scattered once a step); 2 also the gradients (reduce-scattered layer by layer every
     * microbatch: DeepSpeed's stage 2, FSDP's SHARD_GRAD_OP); 3 also the weights (each layer
     * all-gathered before its forward and again before its backward: DeepSpeed's stage 3,
     * FSDP's FULL_SHARD).  Under 1 and 2 the updated weights are all-gathered after the step. */
    guint zero_stage;
    guint64 dp_bucket_bytes; /* gradient all-reduce bucket; 0 = one reduction after backward */
    SsimTpComm tp_comm;
    gboolean allow_cross_node_tp; /* permit tensor-parallel groups that span nodes */
    /* The input-gradient reduction of a column-parallel GEMM runs after its weight gradient
     * instead of beside it: tp_overlap=off, Megatron-LM before its asynchronous tensor-parallel
     * all-reduce (2021-09; --no-async-tensor-model-parallel-allreduce). */
    gboolean tp_sync_grad;
    /* Transformer Engine's tensor-parallel communication overlap (Megatron-LM's
     * --tp-comm-overlap, NeMo's ub_tp_comm_overlap; userbuffers): under sequence parallelism the
     * all-gather before a column-parallel GEMM and the reduce-scatter after a row-parallel one
     * run beside that GEMM, in chunks, instead of before or after it. */
    gboolean tp_comm_overlap;
    /* Megatron-LM's --overlap-param-gather (NeMo's overlap_param_sync): under the distributed
     * optimizer (ZeRO 1 or 2) the weights' all-gather after the optimizer step runs beside the
     * next step's forward, each layer's weights gathered before its first forward and the next
     * layer's then started, instead of in one all-gather after the step. */
    gboolean overlap_param_gather;
    /* PyTorch FSDP2 wrapped as torchtitan wraps it (ZeRO-3, pp 1): each layer its own unit, the
     * embedding, final norm and LM head left to the root module's unit, which FSDP2 does not free
     * after the forward (gathered once a microbatch, before its first layer; its gradients
     * reduce-scattered once, after the embedding's backward), and the last layer kept after its
     * forward (reshard_after_forward=False), so neither is gathered again for the backward.
     * Off: the embedding and the head units of their own, gathered before each pass. */
    gboolean fsdp_root;
    /* CUDA_LAUNCH_BLOCKING=1: every launch returns only when its kernel has finished, so the host
     * launches an op only after the kernel or collective before it has ended (runtime.h,
     * "Blocking launches").
     * BLOOM's training set it ("do not remove or the training will hang"). */
    gboolean launch_blocking;
    /* Megatron-LM's --defer-embedding-wgrad-compute (NeMo's defer_embedding_wgrad_compute, with
     * --wgrad-deferral-limit): on the last pipeline stage the LM head's weight gradient of the
     * first `defer_head_wgrad` microbatches (SSIM_DEFER_ALL: of every one, the limit 0) is left
     * out of their backward, its inputs and the logits' gradient kept, and computed at the
     * pipeline's flush, after the stage's last backward, where the stage would wait for the
     * others (lower.h).  0: off (the default). */
    guint defer_head_wgrad;
    SsimAttention attention;                /* default unfused */
    SsimTransformerImpl transformer_impl;   /* default transformer_engine */
    SsimFp8 fp8;                            /* default off */
    SsimCrossEntropy cross_entropy;         /* default unfused */
    SsimRmsnorm rmsnorm;                    /* default auto: the transformer_impl's own */
    SsimAxis order[SSIM_AXIS_N];            /* rank order, innermost first; default tp, dp, pp */
    char schedule[SSIM_PARALLEL_NAME_MAX];  /* schedule registry name, default "1f1b" */
    char placement[SSIM_PARALLEL_NAME_MAX]; /* placement policy name, default "megatron" */
    /* Per-iteration terms turned on or off against Megatron-LM's defaults (bits of
     * SsimStepCost): a term in `step_costs_set` takes its bit in `step_costs_on`; the others
     * their default for the model's dtype (ssim_parallel_step_costs). */
    guint step_costs_set, step_costs_on;
    /* Layers of each pipeline stage (pp entries, summing to the model's layers), or with v > 1 of
     * each model chunk in pipeline order (pp x v entries: chunk j on stage j % pp, its virtual
     * stage j / pp); all zero for an even split (layers / (pp v) a chunk). */
    guint16 stage_layers[SSIM_PARALLEL_STAGES_MAX];
    /* Megatron-LM's other ways to ask for an uneven split, kept as given until
     * ssim_parallel_resolve_layers() counts them into stage_layers against the model's layers:
     * the layers of the first and of the last pipeline stage (--decoder-first-pipeline-num-layers,
     * --decoder-last-pipeline-num-layers; 0: not given), the other stages sharing the rest
     * evenly; or the embedding and the loss counted as one layer each in an even split
     * (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split), the first
     * (last) model chunk then building one transformer layer fewer. */
    guint16 first_stage_layers, last_stage_layers;
    gboolean embedding_in_split, loss_in_split;
    /* stage_layers=balanced: shiftsim's own rule, counted by the same function: the layers spread
     * over the pp x v chunks so that each holds the same work, the LM head on the last chunk
     * counted as the layers its FLOPs make (ssim_parallel_resolve_layers()). */
    gboolean balance_layers;
    /* stage_layers (or the even split) were counted from balance_layers for `recompute`, whose
     * full mode weighs a layer more against the head: ssim_parallel_set_recompute() counts them
     * again for another mode. */
    gboolean layers_balanced;
} SsimParallel;

/* A position in the 3D grid. */
typedef struct {
    guint dp, tp, pp;
} SsimCoord;

/*
 * Defaults: dp = tp = pp = 1, v = 1, microbatch 1, global batch 1, no sequence parallelism, no
 * recompute, ZeRO 0, no bucketing, all-reduce, order tp-dp-pp, schedule "1f1b", placement
 * "megatron" (a name only, that of what ssim_simulate runs without a placement; the verbs set the
 * one they run, alpa by default), cross-node tp not allowed.
 */
void ssim_parallel_init(SsimParallel *par);

/*
 * A sensible split of all of `cluster`'s GPUs for `model`: tp is the smallest power of two (up to
 * the GPUs per node, dividing heads, kv_heads and ffn) for which weights, gradients and optimizer
 * state (16 bytes/param) fill at most 40% of a GPU's memory, then pp the smallest divisor of the
 * layers that gets there, dp the rest; microbatch 1 and the default global batch
 * (ssim_parallel_default_global_batch()).  Other fields keep their ssim_parallel_init() values.
 * Returns FALSE with `error` set when no split passes ssim_parallel_validate().
 */
gboolean ssim_parallel_suggest(SsimParallel *par, const SsimModel *model,
                               const SsimCluster *cluster, GError **error);

/*
 * The default global batch of a job on `gpus` GPUs: SSIM_DEFAULT_SEQUENCES_PER_GPU (4) sequences
 * per GPU, whatever the split, so that two splits of the same GPUs compared at their defaults
 * train on the same batch.  With microbatch 1 every split's pipeline then gets m = 4 tp pp
 * microbatches, at least 4 per stage (a bubble of at most 1/4 under 1F1B).  Only when dp *
 * microbatch does not divide that number is it rounded up to the next multiple of dp *
 * microbatch (a microbatch larger than 4 tp pp), the smallest legal batch above the rule.
 */
#define SSIM_DEFAULT_SEQUENCES_PER_GPU 4u
guint ssim_parallel_default_global_batch(guint gpus, guint dp, guint microbatch);

/* The fields of SsimParallel that text can set, as bits (ssim_parallel_set_field()); 64 of
 * them, so that a set of them (ssim_parallel_parse_fields()'s `given`) is a guint64. */
typedef guint64 SsimParallelField;
#define SSIM_PARALLEL_DP               (G_GUINT64_CONSTANT(1) << 0)
#define SSIM_PARALLEL_TP               (G_GUINT64_CONSTANT(1) << 1)
#define SSIM_PARALLEL_PP               (G_GUINT64_CONSTANT(1) << 2)
#define SSIM_PARALLEL_VSTAGES          (G_GUINT64_CONSTANT(1) << 3)
#define SSIM_PARALLEL_MICROBATCH       (G_GUINT64_CONSTANT(1) << 4)
#define SSIM_PARALLEL_GLOBAL_BATCH     (G_GUINT64_CONSTANT(1) << 5)
#define SSIM_PARALLEL_SEQ_PARALLEL     (G_GUINT64_CONSTANT(1) << 6)
#define SSIM_PARALLEL_RECOMPUTE        (G_GUINT64_CONSTANT(1) << 7)
#define SSIM_PARALLEL_ZERO             (G_GUINT64_CONSTANT(1) << 8)
#define SSIM_PARALLEL_BUCKET           (G_GUINT64_CONSTANT(1) << 9)
#define SSIM_PARALLEL_TP_COMM          (G_GUINT64_CONSTANT(1) << 10)
#define SSIM_PARALLEL_ORDER            (G_GUINT64_CONSTANT(1) << 11)
#define SSIM_PARALLEL_SCHEDULE         (G_GUINT64_CONSTANT(1) << 12)
#define SSIM_PARALLEL_PLACEMENT        (G_GUINT64_CONSTANT(1) << 13)
#define SSIM_PARALLEL_CROSS_NODE_TP    (G_GUINT64_CONSTANT(1) << 14)
#define SSIM_PARALLEL_STAGE_LAYERS     (G_GUINT64_CONSTANT(1) << 15)
#define SSIM_PARALLEL_STEP_COSTS       (G_GUINT64_CONSTANT(1) << 16)
#define SSIM_PARALLEL_TP_OVERLAP       (G_GUINT64_CONSTANT(1) << 17)
#define SSIM_PARALLEL_ATTENTION        (G_GUINT64_CONSTANT(1) << 18)
#define SSIM_PARALLEL_TRANSFORMER_IMPL (G_GUINT64_CONSTANT(1) << 19)
#define SSIM_PARALLEL_FP8              (G_GUINT64_CONSTANT(1) << 20)
#define SSIM_PARALLEL_TP_COMM_OVERLAP  (G_GUINT64_CONSTANT(1) << 21)
#define SSIM_PARALLEL_CROSS_ENTROPY    (G_GUINT64_CONSTANT(1) << 22)
#define SSIM_PARALLEL_LAUNCH_BLOCKING  (G_GUINT64_CONSTANT(1) << 23)
#define SSIM_PARALLEL_RMSNORM          (G_GUINT64_CONSTANT(1) << 24)
#define SSIM_PARALLEL_RECOMPUTE_LAYERS (G_GUINT64_CONSTANT(1) << 25)
#define SSIM_PARALLEL_CP               (G_GUINT64_CONSTANT(1) << 26)
#define SSIM_PARALLEL_DEFER_WGRAD      (G_GUINT64_CONSTANT(1) << 27)
/* The first stage's share, first_stage_layers or embedding_in_split (which Megatron-LM takes
 * one at a time); the last stage's, last_stage_layers or loss_in_split. */
#define SSIM_PARALLEL_FIRST_STAGE          (G_GUINT64_CONSTANT(1) << 28)
#define SSIM_PARALLEL_LAST_STAGE           (G_GUINT64_CONSTANT(1) << 29)
#define SSIM_PARALLEL_OVERLAP_PARAM_GATHER (G_GUINT64_CONSTANT(1) << 30)
#define SSIM_PARALLEL_FSDP_ROOT            (G_GUINT64_CONSTANT(1) << 31)

/*
 * Sets one field from text, as the CLI and split strings name them:
 *   dp, tp, pp, cp (context_parallel), v (or vpp, virtual_stages), mb (microbatch, micro_batch),
 * gbs (global_batch, batch), sp (sequence_parallel: on/off/true/false/1/0; "on" also sets tp_comm =
 * rs-ag), recompute (none|selective|full|op), recompute_layers (a count; 0 all), zero (0-3), bucket
 * (a byte size, ssim_bytes_parse(), or "off"), tp_comm (allreduce|rs-ag), order (e.g. "tp-dp-pp",
 * innermost first), schedule, placement, cross_node_tp (on/off), stage_layers (the layers of each
 * stage, or with v > 1 of each chunk in pipeline order, separated by
 *   '/' or ':' in a split string, commas too when set alone: "6/6/6/5"; N*K repeats N K times:
 *   "1/2*6/1"; "even" clears it; "balanced" asks ssim_parallel_resolve_layers() for a split of
 *   even work),
 *   first_stage_layers and last_stage_layers (decoder_first_pipeline_num_layers,
 *   num_layers_in_first_pipeline_stage and the last's likewise: a count from 1), embedding_in_split
 *   and loss_in_split (account_for_embedding_in_pipeline_split, ..._loss_...: on/off), the rules
 *   ssim_parallel_resolve_layers() turns into stage_layers,
 *   step_costs (terms to change, separated by '/', ':' or ',': "-clip/+loss_scale"; a bare
 *   name turns a term on, "none" all off, "all" all on, "default" back to Megatron-LM's),
 *   tp_overlap (on/off: tp_sync_grad off/on), attention (unfused|flash), transformer_impl
 *   (transformer_engine|te|local|torch), rmsnorm (auto|fused|eager), fp8 (off|hybrid|e4m3),
 * tp_comm_overlap (on/off), cross_entropy (unfused|native|te), launch_blocking (on/off; also
 * cuda_launch_blocking), defer_embedding_wgrad (off or 0, all, or a count of microbatches),
 * overlap_param_gather (on/off; also overlap_param_sync), fsdp_root (on/off; also
 * fsdp_root_unit). Keys
 * are case-insensitive, '-' and '_' alike. Returns FALSE with SSIM_CONFIG_ERROR set ("tp: 'x' is
 * not a positive integer") on a bad key or value; `par` is unchanged then.  Validity across fields
 * is ssim_parallel_validate()'s job.
 */
gboolean ssim_parallel_set(SsimParallel *par, const char *key, const char *value, GError **error);
/* The same, also telling which field `key` names (`field` may be NULL). */
gboolean ssim_parallel_set_field(SsimParallel *par, const char *key, const char *value,
                                 SsimParallelField *field, GError **error);

/*
 * Applies a comma-separated list of key=value pairs with ssim_parallel_set(), e.g.
 * "dp=2,tp=4,pp=2,mb=1,gbs=64" (blanks around keys and values are ignored).  A field given twice,
 * under any of its names ("gbs=8,batch=16"), is an error naming both.  `given`, when not NULL,
 * receives the fields the spec set (SsimParallelField bits): callers ask it, never the text,
 * which fields the user gave.  On error `par` may be partly updated.
 */
gboolean ssim_parallel_parse(SsimParallel *par, const char *spec, GError **error);
gboolean ssim_parallel_parse_fields(SsimParallel *par, const char *spec, guint64 *given,
                                    GError **error);

/* The canonical spec of every field, which ssim_parallel_parse() reads back to an equal value
 * ("dp=2,tp=4,pp=2,v=1,mb=1,gbs=64,sp=off,recompute=none,zero=0,bucket=0,tp_comm=allreduce,
 * order=tp-dp-pp,schedule=1f1b,placement=megatron,cross_node_tp=off", then ",stage_layers=6/5",
 * ",step_costs=-clip/+host", ",tp_overlap=off", ",attention=flash", ",fp8=hybrid" and
 * ",tp_comm_overlap=on", ",cross_entropy=te", ",launch_blocking=on", ",rmsnorm=eager",
 * ",cp=2", ",defer_embedding_wgrad=22", ",overlap_param_gather=on" and ",fsdp_root=on" when
 * set).
 * Caller frees. */
char *ssim_parallel_to_string(const SsimParallel *par);

/*
 * Checks that `par` can run `model` on `cluster` (which may be NULL to skip the cluster rules).
 * The first failing rule is reported (SSIM_CONFIG_ERROR_VALUE), named in the message:
 *   - dp, tp, pp, v, microbatch, global_batch >= 1; zero in {0,1}; order a permutation;
 *     schedule and placement non-empty
 *   - dp*cp*tp*pp equals the cluster's GPU count
 *   - cp > 1 needs flash attention, a sequence divisible by 2 cp (Megatron-LM's load-balanced
 *     chunks), a model without a sliding window, and an eager schedule (not compiled)
 *   - heads % tp == 0, kv_heads % tp == 0, ffn % tp == 0
 *   - no rule for ssim_parallel_resolve_layers() left uncounted
 *   - layers % (pp*v) == 0, or with stage_layers: pp entries (pp x v with v > 1), each >= 1,
 *     summing to layers, pp x v <= SSIM_PARALLEL_STAGES_MAX
 *   - global_batch % (dp*microbatch) == 0
 *   - v > 1 needs pp > 1, and the number of microbatches a multiple of pp
 *   - sequence parallelism needs tp > 1 and tp_comm = rs-ag
 *   - fp8 needs transformer_impl = transformer_engine, a bf16 or fp16 model and a cluster with
 *     FP8 tensor cores (peak_tflops_fp8 > 0)
 *   - recompute_layers needs recompute full, and at most a model chunk's layers
 *   - rmsnorm other than auto needs a model whose norm is rmsnorm
 *   - tp_comm_overlap needs transformer_impl = transformer_engine, and sequence parallelism
 *     where tp > 1 (at tp = 1 there is nothing to overlap)
 *   - launch_blocking needs an eager schedule (not ssim_parallel_compiled())
 *   - overlap_param_gather needs ZeRO 1 or 2 (the distributed optimizer's all-gather) and an
 *     eager schedule
 *   - fsdp_root needs ZeRO 3 and pp 1 (torchtitan's wrapping without pipeline parallelism)
 *   - defer_head_wgrad needs pp > 1, an eager schedule, ZeRO 0 or 1 and the weight gradients
 *     accumulated in their GEMMs (step cost grad_accum off)
 *   - every tensor-parallel group inside one node, unless allow_cross_node_tp
 */
gboolean ssim_parallel_validate(const SsimParallel *par, const SsimModel *model,
                                const SsimCluster *cluster, GError **error);

/*
 * Counts first_stage_layers, last_stage_layers, embedding_in_split, loss_in_split and
 * balance_layers into
 * stage_layers for `model`'s layers, as Megatron-Core builds each model chunk's layers
 * (get_num_layers_to_build: with a first or last stage's count the other stages share the rest
 * evenly, each stage's layers split evenly over its v chunks; with the embedding or loss counted,
 * (layers + 1 or 2) / (pp v) a chunk, the first or last chunk one fewer), and clears the rules;
 * TRUE with `par` unchanged when none is set.  An even result leaves stage_layers empty.  Refused
 * (SSIM_CONFIG_ERROR_VALUE, the setting named), as Megatron-LM refuses them: a rule beside
 * stage_layers, a stage count beside the embedding or loss counted, both counts at pp = 1, counts
 * that leave layers over, or the stages between without a layer or with layers they do not share
 * evenly, a stage whose layers do
 * not split over v chunks, a chunk left without a transformer layer (which shiftsim does not
 * model).  `par` is unchanged on error.  balance_layers: the last chunk holds
 * max(1, round((layers + H) / (pp v) - H)) layers, H the LM head's forward and backward FLOPs over
 * a layer's (its recompute included under full recompute), the other chunks the rest as evenly as
 * counts go, the chunks after the first taking the remainder one each (Llama 3.1 405B on pp 8 x
 * v 8: 1/2*62/1, as Megatron-Bridge's recipe splits it).
 */
gboolean ssim_parallel_resolve_layers(SsimParallel *par, const SsimModel *model, GError **error);
/* Whether `par` holds a rule ssim_parallel_resolve_layers() has not counted yet. */
gboolean ssim_parallel_layers_pending(const SsimParallel *par);
/*
 * Sets par->recompute to `mode`.  A split counted from stage_layers=balanced (layers_balanced)
 * is counted again for it, so that the head weighs against a layer as that mode runs them (the
 * recompute ladders of simulate, compare and sweep choose the mode after the split is counted).
 * `par` is unchanged on error.
 */
gboolean ssim_parallel_set_recompute(SsimParallel *par, const SsimModel *model, SsimRecompute mode,
                                     GError **error);

guint ssim_parallel_world(const SsimParallel *par); /* dp * cp * tp * pp */
/* The model as one GPU of `par` sees it: `model` itself without context parallelism, else a copy
 * in `buf` whose sequence is its share, seq_len / cp (its ops' tokens, its activations; the
 * weights, the FLOP counts and the tokens a step are the whole model's). */
const SsimModel *ssim_parallel_local_model(const SsimParallel *par, const SsimModel *model,
                                           SsimModel *buf);
/* m = global_batch / (dp * microbatch): microbatches per iteration per pipeline. */
guint ssim_parallel_n_microbatches(const SsimParallel *par);
/* Layers in one model chunk: layers / (pp * v); with stage_layers, the largest chunk's. */
guint ssim_parallel_layers_per_chunk(const SsimParallel *par, const SsimModel *model);
/* Whether stage_layers is set (an uneven split). */
gboolean ssim_parallel_uneven(const SsimParallel *par);
/* Layers of model chunk (virtual stage) `vstage` < pp v, in pipeline order: stage_layers[vstage],
 * or layers / (pp v). */
guint ssim_parallel_chunk_layers(const SsimParallel *par, const SsimModel *model, guint vstage);
/* Index of the first layer of chunk `vstage` (the sum of the layers of the chunks before it). */
guint ssim_parallel_chunk_first_layer(const SsimParallel *par, const SsimModel *model,
                                      guint vstage);
/* Layers of pipeline stage `stage`, all its chunks (stage, stage + pp, ...): layers / pp even. */
guint ssim_parallel_stage_layers(const SsimParallel *par, const SsimModel *model, guint stage);
/* Entries stage_layers lists: 0 for an even split, pp (v = 1) or pp x v once validated. */
guint ssim_parallel_stage_layers_n(const SsimParallel *par);
/* Appends stage_layers as a split string gives it, '/' between entries, three or more alike in a
 * row as N*K ("1/2*62/1"); nothing for an even split. */
void ssim_parallel_append_stage_layers(GString *out, const SsimParallel *par);
/* Parameters held by pipeline stage `stage` before tensor-parallel sharding: its layers, the
 * embedding on the first stage, the final norm and LM head (and a tied copy of the embedding
 * when pp > 1) on the last (ssim_model_stage_params_layers). */
guint64 ssim_parallel_stage_params(const SsimParallel *par, const SsimModel *model, guint stage);
/* The weights of stage `stage`'s FP8 GEMMs on one of its GPUs (its layers' share of
 * ssim_model_fp8_layer_params()), which FP8 training casts once a step and keeps; 0 with fp8 off.
 */
guint64 ssim_parallel_stage_fp8_params(const SsimParallel *par, const SsimModel *model,
                                       guint stage);
/* How many microbatches' LM head weight gradients are deferred to the flush (defer_head_wgrad,
 * at most the microbatches of a step; 0 when off). */
guint ssim_parallel_deferred_wgrads(const SsimParallel *par);
/* Whether the schedule is a compiled program's (alpa, alpa-gpipe, xla: Alpa and XLA on JAX),
 * whose kernels XLA's C++ runtime launches, rather than eager PyTorch's (1f1b, gpipe,
 * interleaved: Megatron-LM), whose Python launches each kernel: the cluster's per-launch host
 * floor (kernel_floor_us) is eager PyTorch's and applies only to the latter. */
gboolean ssim_parallel_compiled(const SsimParallel *par);
/*
 * Whether Megatron-LM's fused softmax kernel (scale, causal mask and softmax in one pass) runs
 * the attention core's softmax: its FusedScaleMaskSoftmax.is_kernel_available() (megatron/core/
 * fusions/fused_softmax.py; megatron/model/fused_softmax.py in Megatron-DeepSpeed, the same rule)
 * asks for 16-bit scores, 16 < s <= 4096, s a multiple of 4, and microbatch x (heads / tp) -- the
 * attention batches -- a multiple of the kernel's batches per block (4 from s > 128, else 8:
 * scaled_masked_softmax.h, get_batch_per_block).  Otherwise PyTorch's operators run it
 * (forward_torch_softmax; the kernels in lower-steps.c, attn_core_init).  Only Megatron-LM's own
 * layers (transformer_impl=local) under unfused attention are asked; FALSE for anything else.
 */
gboolean ssim_parallel_softmax_fallback(const SsimParallel *par, const SsimModel *model);
/* Whether the model's norms run as PyTorch's chain of elementwise kernels (SsimRmsnorm): FALSE
 * for a LayerNorm model, whose nn.LayerNorm / F.layer_norm is one kernel everywhere. */
gboolean ssim_parallel_rmsnorm_eager(const SsimParallel *par, const SsimModel *model);
/* Hardware FLOPs of one iteration (ssim_model_hardware_flops), counting only the layers
 * recompute_layers recomputes, and under op-level checkpointing (SSIM_RECOMPUTE_OP) with unfused
 * attention its score and context GEMMs, which it recomputes too. */
double ssim_parallel_hardware_flops(const SsimParallel *par, const SsimModel *model);
/* The per-iteration terms that are on for `model` (bits of SsimStepCost). */
guint ssim_parallel_step_costs(const SsimParallel *par, const SsimModel *model);
/* Whether term `term` is on. */
gboolean ssim_parallel_step_cost_on(const SsimParallel *par, const SsimModel *model,
                                    SsimStepCost term);
/* A run's value of a dimension a calibration records (cluster.h, SsimFitDim): the model's
 * hidden, layers or seq_len, the split's GPUs, tp, pp or microbatch, or `nodes`. */
guint ssim_parallel_fit_value(const SsimParallel *par, const SsimModel *model, guint nodes,
                              SsimFitDim dim);
/* Why a run of `model` split as `par` over `nodes` nodes lies outside the shapes `cluster` was
 * calibrated on (its [calibration] ranges), e.g. "layers 28 < 32, tp 2 > 1"; NULL when it lies
 * inside them or the cluster records none.  Caller frees. */
char *ssim_parallel_extrapolation(const SsimParallel *par, const SsimModel *model, guint nodes,
                                  const SsimCluster *cluster);

/* The extent of `axis` (par->dp * par->cp, ->tp or ->pp). */
guint ssim_parallel_size(const SsimParallel *par, SsimAxis axis);

/* Global rank <-> coordinate under par->order.  Coordinates must be in range. */
guint ssim_parallel_rank(const SsimParallel *par, SsimCoord coord);
SsimCoord ssim_parallel_coord(const SsimParallel *par, guint rank);
/* The component of `coord` along `axis`. */
guint ssim_coord_get(SsimCoord coord, SsimAxis axis);

/*
 * Fills `ranks` (length ssim_parallel_size(par, axis)) with the global ranks of the group along
 * `axis` that contains `rank`, in order of that axis's index (e.g. the TP group of rank 5).
 */
void ssim_parallel_group(const SsimParallel *par, guint rank, SsimAxis axis, guint *ranks);

G_END_DECLS
