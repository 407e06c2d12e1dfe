/*
 * A transformer language model as the simulator sees it: a stack of identical decoder layers
 * between an input embedding and an output (LM) head, described by its shape.
 *
 * A model is read from `models/<name>.ini` (GKeyFile, `format = 1`, see docs/models.md) into a
 * plain struct, checked, and never changed afterwards.  Everything else here is derived from the
 * shape: the parameter count (which must agree with a declared `params` within 1%), the GEMMs of
 * one layer for a microbatch on one tensor-parallel rank, and FLOPs per iteration.  The FLOP counts
 * are the standard "model FLOPs" of Narayanan et al. 2021 (matrix multiplications only, causal
 * masking ignored, backward = 2 x forward); "hardware FLOPs" add the recomputed forward work.
 *
 * Ownership: ssim_model_default(), ssim_model_load*() and ssim_model_copy() return a model the
 * caller owns and frees with ssim_model_free() (g_autoptr(SsimModel) works).  Getters return
 * borrowed data.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

/* Numeric formats.  One X-macro yields the enum and the name table. */
#define SSIM_DTYPE_LIST(X)                                                                         \
    X(FP8, "fp8", 1)                                                                               \
    X(BF16, "bf16", 2)                                                                             \
    X(FP16, "fp16", 2)                                                                             \
    X(TF32, "tf32", 4)                                                                             \
    X(FP32, "fp32", 4)

typedef enum {
#define SSIM_X(e, s, b) SSIM_DTYPE_##e,
    SSIM_DTYPE_LIST(SSIM_X)
#undef SSIM_X
        SSIM_DTYPE_N
} SsimDtype;

const char *ssim_dtype_name(SsimDtype dtype);
gboolean ssim_dtype_from_name(const char *name, SsimDtype *out);
/* Bytes per element as stored (tf32 is stored as fp32). */
guint ssim_dtype_size(SsimDtype dtype);

/* How attention and MLP are arranged in a layer: one after the other, each with its own norm and
 * residual (GPT-2/3, LLaMA), or side by side off one norm (GPT-J, GPT-NeoX). */
typedef enum { SSIM_BLOCK_SEQUENTIAL, SSIM_BLOCK_PARALLEL, SSIM_BLOCK_N } SsimBlock;
/* Position encoding: rotary and alibi have no parameters; learned adds seq_len x hidden. */
typedef enum {
    SSIM_POSITION_ROTARY,
    SSIM_POSITION_LEARNED,
    SSIM_POSITION_ALIBI,
    SSIM_POSITION_N
} SsimPosition;
/* MLP activation: gelu and relu use two matrices (up, down); swiglu and geglu are gated and use
 * three (gate, up, down), each of width `ffn`. */
typedef enum {
    SSIM_ACT_GELU,
    SSIM_ACT_RELU,
    SSIM_ACT_SWIGLU,
    SSIM_ACT_GEGLU,
    SSIM_ACT_N
} SsimActivation;
/* Normalisation: layernorm has a weight and a bias (2h), rmsnorm only a weight (h). */
typedef enum { SSIM_NORM_LAYERNORM, SSIM_NORM_RMSNORM, SSIM_NORM_N } SsimNorm;

/* Activation recomputation (Korthikanti et al. 2022).  Stored in SsimParallel; declared here
 * because hardware FLOPs depend on it. */
typedef enum {
    SSIM_RECOMPUTE_NONE,      /* keep every activation */
    SSIM_RECOMPUTE_SELECTIVE, /* recompute attention's softmax/dropout/score part only */
    SSIM_RECOMPUTE_FULL,      /* keep each layer's input, recompute the layer's forward */
    /* PyTorch's selective activation checkpointing by op (torchtitan's "selective op" policy):
     * keep the attention kernel's output and every other linear layer's (Q, V, the MLP's first
     * and last of a gated MLP; Q, V and up otherwise), recompute the rest of the forward: the K
     * and attention-output projections, the gated MLP's second input (the down projection of an
     * ungated one) and every elementwise op. */
    SSIM_RECOMPUTE_OP,
    SSIM_RECOMPUTE_N
} SsimRecompute;
/* The modes an automatic choice climbs, cheapest in time first: none, selective, full (op is
 * asked for by name only). */
#define SSIM_RECOMPUTE_LADDER (SSIM_RECOMPUTE_FULL + 1)

const char *ssim_block_name(SsimBlock block);
gboolean ssim_block_from_name(const char *name, SsimBlock *out);
const char *ssim_position_name(SsimPosition position);
gboolean ssim_position_from_name(const char *name, SsimPosition *out);
const char *ssim_activation_name(SsimActivation activation);
gboolean ssim_activation_from_name(const char *name, SsimActivation *out);
/* TRUE for swiglu and geglu (three MLP matrices). */
gboolean ssim_activation_is_gated(SsimActivation activation);
const char *ssim_norm_name(SsimNorm norm);
gboolean ssim_norm_from_name(const char *name, SsimNorm *out);
const char *ssim_recompute_name(SsimRecompute recompute);
gboolean ssim_recompute_from_name(const char *name, SsimRecompute *out);

typedef struct {
    char *name;   /* e.g. "gpt-j-6b" */
    char *source; /* the file it came from, or "builtin" */
    guint layers;
    guint hidden;   /* h */
    guint heads;    /* a, query heads */
    guint kv_heads; /* key/value heads (grouped-query attention); = heads for MHA */
    guint head_dim; /* d, each head's width; 0: hidden / heads.  Set, the attention is
                       heads x d wide, which may differ from hidden (Gemma, Qwen3) */
    guint ffn;      /* MLP inner width */
    guint vocab;    /* V */
    guint seq_len;  /* s, training sequence length */
    SsimBlock block;
    SsimPosition position;
    SsimActivation activation;
    SsimNorm norm;
    gboolean tied_embeddings;   /* LM head reuses the input embedding matrix */
    gboolean attention_bias;    /* QKV and output projections have biases */
    gboolean mlp_bias;          /* MLP matrices have biases */
    gboolean lm_head_bias;      /* the LM head has a bias (GPT-J) */
    gboolean embedding_norm;    /* a norm right after the input embedding (BLOOM) */
    gboolean attention_dropout; /* dropout on the attention probabilities (Megatron-LM's
                                   default): a mask over the b a s^2 scores written in the
                                   forward and read in the backward (default FALSE) */
    gboolean hidden_dropout;    /* dropout on each residual branch's output (Megatron-LM's
                                   --hidden-dropout, 0.1 by default, fused with the bias and the
                                   residual add): a byte mask written in the forward and a
                                   kernel of its own in the backward (default FALSE) */
    SsimDtype dtype;            /* training (compute and weight) dtype: bf16, fp16 or fp32 */
    /* Sliding-window attention (Mistral 7B v0.1, Gemma 2 and 3, Phi-3, StarCoder2): a windowed
     * layer's query attends to at most `sliding_window` keys, its own and those just before it;
     * `sliding_window_layers` of the layers are windowed (Gemma 2: every other one, Gemma 3:
     * five of six), the others attend to the whole causal prefix.  0 and 0: no window.  Only a
     * flash kernel skips the pairs outside the window (unfused attention computes every score
     * and masks them); FLOPs are counted as without it, the attention's every score (the
     * convention of published MFU figures, as for the causal mask). */
    guint sliding_window;
    guint sliding_window_layers;
    guint64 declared_params; /* from the file; 0 when not declared */
    char *notes;             /* what reading a foreign description (a Hugging Face
                                config.json) approximated, for the user ("PATH:
                                approximated: ..."); NULL when it was taken exactly */
} SsimModel;

/* The share of its layers whose attention is windowed (0 without a window). */
double ssim_model_windowed_share(const SsimModel *model);

/* GPT-J 6B (the embedded default; same figures as models/gpt-j-6b.ini). */
SsimModel *ssim_model_default(void);

/*
 * Loads a model by name or path.  A `name_or_path` that names an existing file, or contains a
 * '/' or ends in ".ini" or ".json", is read as a path; otherwise "models/<name>.ini" is found
 * through ssim_data_find() ("hf/NAME": below).  Returns NULL with `error` set (SSIM_CONFIG_ERROR)
 * when it cannot be found, parsed or checked; messages read "models/x.ini:7: heads: must be a
 * positive integer".
 */
SsimModel *ssim_model_load(const char *name_or_path, GError **error);
SsimModel *ssim_model_load_file(const char *path, GError **error);
/* Parses INI text; `path` is only used in messages and as `source`. */
SsimModel *ssim_model_load_data(const char *text, gssize length, const char *path, GError **error);

/*
 * Hugging Face configs.  A path ending in ".json" given to ssim_model_load() or
 * ssim_model_load_file() is read as a Hugging Face `config.json`, and a name "hf/NAME" that is
 * no file is found as "models/hf/NAME.json" through ssim_data_find() (the bundled configs).
 * GPT-2, GPT-J and Llama-style (Llama, Mistral, Qwen2) field names, and by `model_type` the
 * GPT-NeoX, Phi, OPT, BLOOM and Falcon families, are mapped onto the shape (src/spec/model-hf.c,
 * docs/models.md); what the mapping approximates is in `notes`.  seq_len
 * is the config's context length, at most SSIM_HF_MAX_SEQ_LEN.  Errors name the file and the
 * config's field ("config.json: num_hidden_layers: missing (a Llama-style config.json names
 * it)").
 */
#define SSIM_HF_MAX_SEQ_LEN 4096u
SsimModel *ssim_model_load_hf_data(const char *text, gssize length, const char *path,
                                   GError **error);

/* Checks the shape (positive sizes within the bounds below, hidden % heads, heads % kv_heads, enum
 * ranges, dtype) and the declared parameter count (within 1%).  Messages name the field; the
 * loader prefixes path:line. */
#define SSIM_MODEL_MAX_LAYERS  65535u   /* a stage's layer count is 16 bits */
#define SSIM_MODEL_MAX_WIDTH   1048576u /* hidden, ffn, heads x head_dim */
#define SSIM_MODEL_MAX_HEADS   65536u
#define SSIM_MODEL_MAX_VOCAB   16777216u
#define SSIM_MODEL_MAX_SEQ_LEN 16777216u
gboolean ssim_model_check(const SsimModel *model, GError **error);

SsimModel *ssim_model_copy(const SsimModel *model);
void ssim_model_free(SsimModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimModel, ssim_model_free)

guint ssim_model_head_dim(const SsimModel *model); /* hidden / heads */

/* Parameter counts from the shape (not from `declared_params`). */
guint64 ssim_model_params(const SsimModel *model);           /* the whole model */
guint64 ssim_model_layer_params(const SsimModel *model);     /* one decoder layer */
guint64 ssim_model_embedding_params(const SsimModel *model); /* token + position emb. + norm */
guint64 ssim_model_head_params(const SsimModel *model);      /* final norm + LM head (+bias);
                                                                its matrix is 0 when tied */
/* Those outside the layers: the embedding's and the head's (a tied table once), what FSDP's root
 * unit holds under fsdp_root. */
guint64 ssim_model_outer_params(const SsimModel *model);
/* The weights the LM head computes with: ssim_model_head_params() and its output matrix, its
 * own or the tied embedding's (what ZeRO-3 gathers before the head runs). */
guint64 ssim_model_head_weights(const SsimModel *model);
/*
 * Parameters held by pipeline stage `stage` of `pp` (before tensor-parallel sharding): its
 * layers/pp layers, the embedding on stage 0, the final norm and LM head on the last stage.
 * With tied embeddings and pp > 1 the last stage also holds a copy of the embedding matrix (as
 * Megatron-LM does), so the sum over stages can exceed ssim_model_params().
 * Requires layers % pp == 0.
 */
guint64 ssim_model_stage_params(const SsimModel *model, guint pp, guint stage);
/* The same for a stage of `layers` layers (an uneven split: any layer count). */
guint64 ssim_model_stage_params_layers(const SsimModel *model, guint pp, guint stage, guint layers);

/* The lowering's flash-attention kernel (SSIM_ATTENTION_FLASH, parallel.h): forward under this
 * name, backward under this name plus ".bwd"; the analytic model prices both from the shape
 * of SSIM_GEMM_ATTN_SCORE (analytic.h, "Flash attention"). */
#define SSIM_FLASH_KERNEL "attn_flash"
/* Under context parallelism (parallel.h, cp) the ring's steps after the first, each the queries
 * of a GPU's share of the sequence against half as many keys, unmasked (the first step is
 * SSIM_FLASH_KERNEL over the share); backward with ".bwd". */
#define SSIM_FLASH_CP_KERNEL "attn_flash.cp"

/* The bytes that kernel moves, for `q` query elements (batch x seq x heads x head dim), `kv`
 * elements of K (as many of V) and `rows` = batch x heads x seq: forward Q, K and V in and the
 * output out, plus each row's fp32 log-sum-exp; backward Q, K, V, the output and its gradient in,
 * the three gradients out, the rows' statistics twice and dQ's fp32 accumulator (8 q). */
guint64 ssim_flash_bytes(gboolean backward, guint64 q, guint64 kv, guint64 rows, guint dtype_bytes);

/* The matrix multiplications of one layer (and the LM head), for one microbatch on one
 * tensor-parallel rank.  One X-macro yields the enum and the name table. */
#define SSIM_GEMM_LIST(X)                                                                          \
    X(QKV, "qkv")               /* [b*s, h] x [h, (h + 2*kv*d)/t]                   */             \
    X(ATTN_SCORE, "attn_score") /* b*a/t batches of [s, d] x [d, s]   (Q K^T)      */              \
    X(ATTN_CONTEXT, "attn_ctx") /* b*a/t batches of [s, s] x [s, d]   (P V)        */              \
    X(ATTN_OUT, "attn_out")     /* [b*s, h/t] x [h/t, h]                            */             \
    X(FFN_UP, "ffn_up")         /* [b*s, h] x [h, g*ffn/t], g = 2 when gated else 1 */             \
    X(FFN_DOWN, "ffn_down")     /* [b*s, ffn/t] x [ffn/t, h]                        */             \
    X(LM_HEAD, "lm_head")       /* [b*s, h] x [h, ceil(V/t)]  (last stage only)     */

typedef enum {
#define SSIM_X(e, s) SSIM_GEMM_##e,
    SSIM_GEMM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_GEMM_N
} SsimGemmKind;

const char *ssim_gemm_kind_name(SsimGemmKind kind);
/* Whether FP8 training (parallel.h, SsimFp8) runs `kind` on the FP8 tensor cores: the linear
 * layers Transformer Engine replaces (QKV, attention output, MLP up and down); the attention core
 * (Transformer Engine's dot-product attention stays in 16 bits unless asked) and the LM head
 * (Megatron-LM keeps the output layer out of FP8) do not. */
gboolean ssim_gemm_kind_fp8(SsimGemmKind kind);
/* The same for a lowering kernel's name: "qkv", "ffn_up.wgrad", ... (NAME, NAME.dgrad,
 * NAME.wgrad, NAME.bwd of such a kind). */
gboolean ssim_gemm_kernel_fp8(const char *name);
/* The weights of one layer's FP8 GEMMs on one of `tp` tensor-parallel ranks (the k x n of each
 * kind ssim_gemm_kind_fp8() names): what Transformer Engine casts to FP8 once a step. */
guint64 ssim_model_fp8_layer_params(const SsimModel *model, guint tp);

/* A (batched) GEMM C[m,n] = A[m,k] B[k,n], forward direction.  The backward pass of every GEMM
 * is two GEMMs of the same FLOPs each (the gradients with respect to A and to B; for a weight
 * GEMM, the input-gradient and the weight-gradient GEMM). */
typedef struct {
    SsimGemmKind kind;
    guint64 batch; /* independent GEMMs (1 except for attention) */
    guint64 m, n, k;
    double flops;  /* 2 * batch * m * n * k */
    guint64 bytes; /* batch * (m*k + k*n + m*n) * dtype size: read A, B, write C */
} SsimGemm;

/*
 * The forward GEMM `kind` for `microbatch` sequences of seq_len tokens on one of `tp` ranks.
 * Sizes divided by tp round up (a vocabulary not divisible by tp is padded, as Megatron does).
 */
SsimGemm ssim_model_gemm(const SsimModel *model, SsimGemmKind kind, guint microbatch, guint tp);

/* The GEMMs op-level checkpointing (SSIM_RECOMPUTE_OP) recomputes in a layer's backward, the
 * even-numbered nn.Linear calls of a layer written as torchtitan writes it (wq, wk, wv, wo, then
 * w1, w3, w2 or up, down): the K projection (named "qkv.k", the K part of the QKV GEMM), the
 * attention output ("attn_out") and the gated MLP's second input ("ffn_up.half", half of the up
 * GEMM) or the ungated one's down projection ("ffn_down").  Fills `out` and `names` (3 each) for
 * `microbatch` sequences on one of `tp` ranks. */
#define SSIM_OP_RECOMPUTE_GEMMS 3
void ssim_model_op_recompute_gemms(const SsimModel *model, guint microbatch, guint tp,
                                   SsimGemm out[SSIM_OP_RECOMPUTE_GEMMS],
                                   const char *names[SSIM_OP_RECOMPUTE_GEMMS]);
/* Their FLOPs for `sequences` sequences (all tensor-parallel ranks together). */
double ssim_model_op_recompute_gemm_flops(const SsimModel *model, guint64 sequences);

/*
 * FLOPs of one forward pass for `sequences` sequences (all tensor-parallel ranks together):
 * a layer's GEMMs including attention scores and context, and the LM head.
 */
double ssim_model_layer_forward_flops(const SsimModel *model, guint64 sequences);
double ssim_model_head_forward_flops(const SsimModel *model, guint64 sequences);
double ssim_model_forward_flops(const SsimModel *model, guint64 sequences);

/*
 * Model FLOPs of one training iteration (forward + backward, backward = 2 x forward) over
 * `global_batch` sequences.  For GPT shapes (ffn = 4h, MHA, gelu) this equals
 * 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Narayanan et al. 2021, eq. 3).
 */
double ssim_model_iteration_flops(const SsimModel *model, guint64 global_batch);

/*
 * Hardware FLOPs of one iteration: model FLOPs plus the recomputed forward work -- every layer's
 * forward for full recompute (giving the 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) form), the
 * attention score and context GEMMs for selective, the K, attention-output and second MLP
 * projections for op (SSIM_RECOMPUTE_OP, under flash attention: unfused attention's score and
 * context GEMMs are recomputed too), nothing for none.
 */
double ssim_model_hardware_flops(const SsimModel *model, guint64 global_batch,
                                 SsimRecompute recompute);

/* Bytes of all weights in the model's dtype. */
guint64 ssim_model_weight_bytes(const SsimModel *model);

G_END_DECLS
