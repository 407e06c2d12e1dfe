/*
 * Lowering: model x parallel configuration x schedule -> the op graph every GPU runs in one
 * training iteration.
 *
 * Each emitted rank gets the streams a Megatron-style framework issues on: "compute" (kernels),
 * "tp" (tensor-parallel collectives), "pp.send.fwd", "pp.recv.fwd", "pp.send.bwd", "pp.recv.bwd"
 * (pipeline transfers, one stream per direction so that sends and receives never queue behind
 * each other; "pp" for the lock-step collective-permute) and "dp" (gradient reduction).  Phases
 * run in the schedule's order; within a phase, per layer and microbatch, these ops are issued
 * (t = tp, SP = sequence parallelism; "AR" is an all-reduce, or a reduce-scatter "RS" / all-gather
 * "AG" under tp_comm = rs-ag):
 *
 *   sequential block, forward (12 kernels, 2 TP collectives; +2 AG under rs-ag):
 *     norm1 [AG] qkv attn_score softmax attn_ctx attn_out AR|RS residual1
 *     norm2 [AG] ffn_up act ffn_down AR|RS residual2
 *   sequential block, backward (16 kernels, 2 TP collectives; +2 AG under rs-ag):
 *     residual2.bwd [AG] ffn_down.dgrad ffn_down.wgrad act.bwd ffn_up.dgrad AR|RS ffn_up.wgrad
 *     norm2.bwd residual1.bwd [AG] attn_out.dgrad attn_out.wgrad attn_ctx.bwd softmax.bwd
 *     attn_score.bwd qkv.dgrad AR|RS qkv.wgrad norm1.bwd
 *   parallel block (GPT-J), forward (11 kernels, 1 TP collective; +1 AG under rs-ag):
 *     norm [AG] qkv attn_score softmax attn_ctx attn_out ffn_up act ffn_down branch_add AR|RS
 *     residual
 *   parallel block, backward (15 kernels, 1 TP collective; +1 AG under rs-ag):
 *     residual.bwd [AG] ffn_down.dgrad ffn_down.wgrad act.bwd ffn_up.dgrad attn_out.dgrad
 *     attn_out.wgrad attn_ctx.bwd softmax.bwd attn_score.bwd qkv.dgrad branch_add.bwd AR|RS
 *     ffn_up.wgrad qkv.wgrad norm.bwd
 *   full recompute: the layer's whole forward (kernels and TP collectives) again before its
 *   backward, class "recompute"; selective: attn_score softmax attn_ctx again.
 *   Rotary positions (model position = rotary) add `rope` after qkv and `rope.bwd` after the
 *   attention core's backward (one kernel more each way); attention dropout adds `attn_dropout`
 *   after the softmax and `attn_dropout.bwd` before its backward.  Where Megatron-LM's fused
 *   softmax cannot run (parallel.h, ssim_parallel_softmax_fallback) `softmax` becomes PyTorch's
 *   softmax.cast softmax.scale softmax.mask softmax softmax.cast_out, and `softmax.bwd` their
 *   five backwards; flash attention, FP8 casts and Megatron-LM's own layers' bias kernels change
 *   the lists as lower-steps.c says.
 *
 * The backward input-gradient collective is issued right after the dgrad that produces it and
 * overlaps the following weight-gradient GEMM(s), as Megatron-LM's asynchronous all-reduce does;
 * every other TP collective blocks the next kernel.  The first virtual stage adds `embed` (plus an
 * AR|RS when t > 1) to a forward and `embed.bwd` (after an AG under rs-ag) to a backward; the last
 * virtual stage adds `final_norm [AG] lm_head loss` (plus a small all-reduce for the
 * vocabulary-parallel loss when t > 1) and `loss.bwd lm_head.dgrad [AR|RS] lm_head.wgrad
 * final_norm.bwd`.  Between virtual stages a forward ends with a send of the activation
 * (b s h / t elements: sharded by SP, or by Megatron's scatter-gather) and the next stage's
 * forward begins with the matching receive; gradients go back the same way.  Under the XLA
 * schedule every iteration ends in one collective-permute (SSIM_COLL_PERMUTE) over the pipeline
 * group instead.
 *
 * Placement.  The lowering writes a placement-neutral plan (plan.h): data dependencies plus,
 * for every communication op, the issue and wait points described here, which are Megatron-LM's
 * placement; gradients are emitted as one piece per weight-gradient kernel, and the bucket rule
 * below only decides where the pieces are issued (pieces with the same points fuse into one
 * reduction when the graph is built).  A placement pass (options->placement) may move those
 * points before the graph is built.
 *
 * Gradients are reduced over dp once the last microbatch's backward has produced them: in
 * buckets of dp_bucket_bytes, each issued after the weight-gradient kernel that fills it and
 * overlapping the rest of the backward, or (bucket 0) one reduction per rank after its last
 * backward.  Tied embeddings with pp > 1 add an all-reduce of the embedding gradient (under
 * ZeRO-2 and 3, of the rank's shard of it) between the
 * first and last stage.  The `optimizer` kernel waits for all of them; under ZeRO-1 the reduction
 * is a reduce-scatter, the optimizer updates 1/dp of the state and an all-gather of the weights
 * follows.  ZeRO-2 and 3 keep only their shard of the gradients, so every microbatch's backward
 * reduce-scatters each unit's gradients (a layer's, the embedding's, the LM head's) after the
 * unit's last kernel (`dp.reducescatter`, not gradient pieces: no bucket, and no placement moves
 * them); ZeRO-2 then all-gathers the updated weights as ZeRO-1 does.  ZeRO-3 keeps the weights
 * sharded too: each unit's first kernel of a forward and of a backward (its recompute's, when it
 * has one) waits for a `zero3.allgather` of the unit's weights on the rank's `dp.gather` stream,
 * the next unit's gather starting once that kernel has (lower-private.h, lower_emit_gather).
 *
 * FLOPs count matrix multiplications only (the model-FLOPs convention); norms, softmax,
 * activations, residuals, embedding, loss and the optimizer are memory-bound and carry bytes
 * only.  A GEMM's bytes are its operands and result; a backward GEMM has the forward's FLOPs and
 * bytes.  Classes: compute ops "fwd", "bwd", "recompute", "optimizer"; communication "tp", "pp",
 * "dp".  Gradients travel in the model's dtype.
 *
 * Ranks.  With `exact`, every GPU is a graph rank (graph rank = global rank).  Otherwise (the
 * default) data-parallel replicas and the tensor-parallel ranks of a stage, which run the same
 * program, are represented by one rank per pipeline stage (graph rank s = stage s, the GPU at
 * dp 0, tp 0): its TP and DP collectives are one-member groups in the graph, and the lowering
 * records each group's full logical membership (ssim_lowered_group_ranks) so that a cost model
 * charges them as the real collective.  Both give the same times on an uncongested network.
 * The simulation driver's default exact run (sim.h) replays the representative lowering with
 * every GPU simulated (ssim_lowered_replication below), which is exact mode without lowering
 * every GPU's program on its own.
 *
 * Context parallelism (parallel.h, cp > 1).  Every op of a GPU works on its share of each
 * sequence, s / cp tokens (the step lists are built for that share: ssim_parallel_local_model);
 * the flash attention of a pass becomes cp kernels, SSIM_FLASH_KERNEL over the share then cp - 1
 * of SSIM_FLASH_CP_KERNEL, each but the last preceded by a step of the key-value ring on stream
 * "cp" (class "cp"): a collective-permute over the replica's cp GPUs, "cp.kv" (K and V of the
 * share) forward, "cp.kv.bwd" (K, V and the gradient so far) backward, waited for by the kernel
 * after next; the backward ends with "cp.dkv", the last gradient home, which the next kernel
 * waits for.  The representative lowering emits the cp GPUs of each stage's first replica
 * (graph rank stage x cp + cp rank), so the ring runs between real ranks.
 *
 * Ownership: ssim_lower() returns a result the caller frees with ssim_lowered_free(); every
 * getter returns borrowed data that lives as long as the result.
 */
#pragma once

#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>
#include <shiftsim/model.h>
#include <shiftsim/opclass.h>
#include <shiftsim/parallel.h>
#include <shiftsim/place.h>
#include <shiftsim/schedule.h>

G_BEGIN_DECLS

typedef struct {
    gboolean exact; /* emit every GPU (default: one representative per stage) */
    /* The placement pass applied before the graph is built; NULL keeps the lowering's own
     * placement (Megatron-LM's, see place-megatron.c).  `eval` is needed by auto only; `report`
     * (may be NULL) receives what the pass did. */
    const SsimPlacement *placement;
    const SsimPlaceEvaluator *eval;
    SsimPlaceReport *report;
    /* An estimate of the ops the lowering will emit (ssim_budget_estimate's), or 0: the plan
     * reserves that many up front instead of growing by doubling (no effect on the result). */
    gsize expected_ops;
    /* The host's work per microbatch phase (the step cost "host": the cluster's
     * microbatch_floor_us); 0 emits no host op. */
    SsimTime host_microbatch;
} SsimLowerOptions;

#define SSIM_LOWER_OPTIONS_INIT                                                                    \
    {                                                                                              \
        .exact = FALSE, .placement = NULL, .eval = NULL, .report = NULL, .expected_ops = 0,        \
        .host_microbatch = 0                                                                       \
    }

typedef struct SsimLowered SsimLowered;

/*
 * The kernels of one microbatch, by list, exactly as the lowering emits them for `par` (the same
 * FLOPs and bytes, op for op; the lists are the table at the top of this file): a layer's forward,
 * its recompute (empty without recompute) and its backward, the first virtual stage's embedding
 * and the last one's head.  For analyses that must agree with the lowering kernel for kernel, such
 * as a lower bound on the step (bound.h), without lowering.
 */
typedef enum {
    SSIM_KERNELS_LAYER_FWD,
    SSIM_KERNELS_LAYER_RECOMPUTE,
    SSIM_KERNELS_LAYER_BWD,
    SSIM_KERNELS_EMBED_FWD,
    SSIM_KERNELS_EMBED_BWD,
    SSIM_KERNELS_HEAD_FWD,
    SSIM_KERNELS_HEAD_BWD,
    SSIM_KERNELS_N
} SsimKernelList;

typedef void (*SsimKernelFn)(gpointer data, SsimKernelList list, const char *name, double flops,
                             guint64 bytes);

/* Calls `fn` for every kernel (not the collectives) of every list, in order, with its name (an
 * interned string: "qkv", SSIM_FLASH_KERNEL, ...).  The backward lists are a microbatch's after
 * the first: under transformer_impl=torch with grad_accum the first has no accumulation. */
void ssim_lower_each_kernel(const SsimModel *model, const SsimParallel *par, SsimKernelFn fn,
                            gpointer data);
/*
 * The per-iteration term (parallel.h's SsimStepCost) an op of the lowering belongs to, by its
 * name: "optimizer" and "dp.allgather" (optimizer), "clip.norm" and "clip.allreduce" (clip),
 * "loss_scale.check" and "loss_scale.allreduce" (loss_scale), "emb.allreduce" (embedding),
 * "host" (host), and the gradient reductions "dp.allreduce" / "dp.reducescatter" (grad_fp32:
 * the term changes their bytes).  FALSE for every other op.
 */
gboolean ssim_lower_step_cost_of(const char *name, SsimStepCost *out);
/* Bytes of one pipeline transfer between virtual stages (an activation, or its gradient). */
guint64 ssim_lower_transfer_bytes(const SsimModel *model, const SsimParallel *par);

/*
 * Lowers one iteration.  `par` must have passed ssim_parallel_validate() for `model` and
 * `schedule` must have been built for par->pp stages, par->virtual_stages chunks and
 * ssim_parallel_n_microbatches(par) microbatches; a mismatch is reported through
 * SSIM_CONFIG_ERROR_VALUE.  The graph comes back finalized.
 */
SsimLowered *ssim_lower(const SsimModel *model, const SsimParallel *par,
                        const SsimSchedule *schedule, const SsimLowerOptions *options,
                        GError **error);
void ssim_lowered_free(SsimLowered *lowered);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimLowered, ssim_lowered_free)

const SsimGraph *ssim_lowered_graph(const SsimLowered *lowered);
/* The placement-neutral plan the graph was built from (borrowed; see plan.h). */
SsimPlan *ssim_lowered_plan(SsimLowered *lowered);
/* The plan op graph op `op` realises (the first of a fused run). */
guint32 ssim_lowered_plan_op(const SsimLowered *lowered, guint32 op);
/*
 * Re-places the plan with `placement` (from the lowering's placement) and rebuilds the graph;
 * the previous graph, classes and anything borrowed from them are invalidated.  FALSE with
 * `error` set (the previous graph kept) when the pass or the checker refuses.
 */
gboolean ssim_lowered_place(SsimLowered *lowered, const SsimPlacement *placement,
                            const SsimPlaceEvaluator *eval, SsimPlaceReport *report,
                            GError **error);
/* Bytes per GPU the current placement keeps alive beyond the lowering's (ssim_plan_extra_bytes). */
guint64 ssim_lowered_extra_bytes(const SsimLowered *lowered);
gboolean ssim_lowered_exact(const SsimLowered *lowered);
/* How many GPUs each graph rank stands for (tp * dp when representative, 1 when exact; dp is
 * the replicas, each of whose cp GPUs is a graph rank). */
guint ssim_lowered_weight(const SsimLowered *lowered);
/*
 * The symmetric copies a representative stands for: copy c (0 <= c < weight; 0 is the GPU
 * itself) of global rank `gpu` is the GPU whose tensor-parallel coordinate and replica are
 * shifted by (c mod tp, c / tp), cyclically, in the same pipeline stage and cp rank.  Every program
 * the representative runs, its copies run too on their GPUs (exact mode: weight 1, no copies).
 */
guint32 ssim_lowered_copy_gpu(const SsimLowered *lowered, guint32 gpu, guint copy);
/*
 * Every GPU simulated from a representative lowering (runtime.h's SsimReplication): copies are
 * the representative's (ssim_lowered_copy_gpu; stride tp, weight copies), and each match of the
 * current graph gets the periods of its logical membership (the least tp and dp shifts that map
 * the GPUs of its group, or of its send/receive pair, onto themselves), so that a collective
 * instance gathers exactly the copies its real group holds.  Returns the period array (2 per
 * match, the caller's to g_free; `out` borrows it), or NULL with `error` set when a match's GPUs
 * are not its members' copies (placement or a graph that is not symmetric).  Call it again after
 * ssim_lowered_place().
 */
guint32 *ssim_lowered_replication(const SsimLowered *lowered, SsimReplication *out, GError **error);
/* Global rank of graph rank `rank`, and the whole map (n = graph ranks). */
guint32 ssim_lowered_global_rank(const SsimLowered *lowered, guint32 rank);
const guint32 *ssim_lowered_rank_map(const SsimLowered *lowered, guint *n);
/* Pipeline stage of graph rank `rank`. */
guint ssim_lowered_stage(const SsimLowered *lowered, guint32 rank);
/* Logical member global ranks of graph group `group`. */
const guint32 *ssim_lowered_group_ranks(const SsimLowered *lowered, guint32 group, guint *n);
/* Class of op `op` (every op the lowering emits has one). */
SsimOpClass ssim_lowered_op_class(const SsimLowered *lowered, guint32 op);
/* FLOPs of the iteration over all GPUs (graph FLOPs times the weight); recompute FLOPs only
 * when `with_recompute`.  Equals the model FLOPs / hardware FLOPs of the iteration. */
double ssim_lowered_flops(const SsimLowered *lowered, gboolean with_recompute);

G_END_DECLS
