/*
 * The inside of the lowering, shared by its files (include/shiftsim/lower.h is the outside):
 *
 *   lower.c            the lowered result and ssim_lower(): ranks, step lists, emission, placement
 *   lower-steps.c      what one layer, the embedding and the LM head compute: step lists
 *   lower-emit.c       how steps become plan ops on one rank (the emitter and its invariants)
 *   lower-iteration.c  the order: the schedule's phases on every rank, the transfers between
 *                      stages, the optimizer step
 *   lower-ranks.c      graph ranks and global ranks, groups' logical members, and the copies a
 *                      representative rank stands for (replication)
 *
 * Data flows one way: lower.c builds the rank map and the step lists, lower-iteration.c walks
 * the schedule and calls the emitter.  Ops, their points and their roles are written by the
 * emitter alone, the points and roles through the plan's checked setters (plan.h); the others
 * add only groups (lower-ranks.c) and the data dependencies across ranks (lower-iteration.c).
 * Nothing outside src/workload/ includes this header.
 */
#pragma once

#include <shiftsim/lower.h>

/* ---- the lowered result ------------------------------------------------------------------ */

struct SsimLowered {
    SsimPlan *plan;   /* the placement-neutral description */
    SsimGraph *graph; /* the plan built under the current placement */
    GArray *plan_of;  /* guint32 plan op per graph op */
    gboolean exact;
    guint weight;
    GArray *global_of;   /* guint32 per graph rank */
    GArray *stage_of;    /* guint32 per graph rank */
    GArray *group_first; /* guint32 per group: offset into group_ranks; one extra at the end */
    GArray *group_ranks; /* guint32 logical members, flat */
    GArray *op_class;    /* guint8 SsimOpClass per op */
    SsimParallel par;    /* the split, for the copies of a representative */
};

static inline guint64 lower_cdiv(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

/* FP8 training's cast of an element of dt bytes: read, then written as FP8 and as FP8 transposed
 * (Hopper's FP8 GEMMs take only the TN layout; lower-steps.c, lower-emit.c). */
static inline guint64 lower_fp8_cast_bytes(guint64 dt)
{
    return dt + 2;
}

/* ---- ranks (lower-ranks.c) --------------------------------------------------------------- */

/*
 * Fills `lowered`'s graph ranks (every GPU when `exact`, else the GPU at dp 0, tp 0 of each
 * stage) with their global ranks and stages, and its empty group table.  Returns the inverse
 * map, guint32 per global rank: its graph rank, or SSIM_NONE (the caller frees it).
 */
GArray *lower_ranks_init(SsimLowered *lowered, const SsimParallel *par, gboolean exact);
/*
 * Adds (or finds) the plan group `prefix.<first logical rank>` of the emitted members of the
 * `n` global ranks `logical` (`graph_of` as lower_ranks_init returned it), and records the whole
 * logical membership for ssim_lowered_group_ranks().  SSIM_NONE with `error` set on failure.
 */
guint32 lower_group(SsimLowered *lowered, const GArray *graph_of, const char *prefix,
                    const guint *logical, guint n, GError **error);

/* ---- step lists (lower-steps.c) ---------------------------------------------------------- */

typedef enum { ST_KERNEL, ST_TP, ST_CP } StepKind;

/* One step of a step list: a kernel, a tensor-parallel collective, or a step of context
 * parallelism's key-value ring (a collective-permute over the cp group). */
typedef struct {
    guint8 kind;    /* StepKind */
    guint8 coll;    /* SsimCollKind of a TP step */
    guint8 overlap; /* TP or CP step: kernels after it that do not wait for it (0 = blocking) */
    const char *name;
    double flops;
    guint64 bytes;
    guint64 grad_bytes; /* weight-gradient bytes this kernel completes */
    SsimTime duration;  /* a fixed duration (the host op), or 0: the cost model's */
} Step;

/* The step lists of one stage's work (GArray of Step each); the same for every layer, every
 * microbatch and every rank. */
typedef struct {
    GArray *layer_fwd, *layer_recompute, *layer_bwd;
    GArray *embed_fwd, *embed_bwd, *head_fwd, *head_bwd;
    /* The backwards of a chunk's first microbatch where they differ (PyTorch's AccumulateGrad
     * under transformer_impl=torch: no accumulation kernels yet), or NULL. */
    GArray *layer_bwd_first, *embed_bwd_first, *head_bwd_first;
    /* Under defer_head_wgrad (parallel.h), or NULL: the head's backward without its weight
     * gradient, and what the flush runs for each deferred microbatch (the input all-gathered
     * again under sequence parallelism, then the weight gradient, which carries the head's
     * gradient bytes: the head's reduction waits for the flush). */
    GArray *head_bwd_deferred, *head_wgrad;
} StepLists;

void lower_steps_build(StepLists *steps, const SsimModel *model, const SsimParallel *par);
void lower_steps_clear(StepLists *steps);

/* ---- the emitter (lower-emit.c) ---------------------------------------------------------- */

typedef struct {
    guint32 op;
    guint left;
} Deferred;

/* The last collective this rank issued on a group, and its stream (Emit.group_last). */
typedef struct {
    guint32 group, op, stream;
} GroupLast;

/* What ZeRO moves unit by unit (bytes; 0 where the stage does not apply or dp is 1): the weights
 * ZeRO-3 gathers before a unit's forward and backward (in the model's dtype), and the gradients
 * ZeRO-2 and 3 reduce-scatter after a unit's backward (the step lists' gradient bytes). */
typedef struct {
    guint64 layer, embed, head;
    guint64 layer_grad, embed_grad, head_grad;
    /* fsdp_root (pp 1): the root unit's weights, the embedding's and the head's own (a tied
     * table once), gathered once a microbatch and reduce-scattered once; 0 otherwise. */
    guint64 root;
    /* FSDP2's copies (step cost shard_copy): each gathered unit copied out of the all-gather's
     * buffer into its parameters, each unit's gradients into the reduce-scatter's (cast). */
    gboolean copies;
} Units;

typedef struct {
    SsimLowered *L;
    SsimPlan *plan;
    const SsimModel *model;
    const SsimParallel *par;
    const SsimSchedule *sched;
    const StepLists *steps;
    const GArray *graph_of; /* guint32 per global rank: its graph rank, or SSIM_NONE */
    guint m, pv;
    guint64 act_bytes; /* one pipeline transfer */
    guint step_costs;  /* the per-iteration terms that are on (ssim_parallel_step_costs) */
    SsimTime host;     /* the host op per microbatch phase (0: none) */
    Units units;       /* ZeRO-2 and 3 */
    /* overlap_param_gather: the weights each unit gathers before its first forward of the step
     * (ZeRO 1 and 2; only layer, embed and head set; zero without it or at dp 1). */
    Units params;
    GError *bug; /* a setter's refusal of the lowering's own point: a bug (lower-emit.c) */

    /* Per-rank state (lower_emit_begin_rank). */
    guint32 rank, stage;
    SsimCoord coord;
    guint32 st_compute, st_tp, st_dp, st_gather, st_pp, st_pp_sf, st_pp_rf, st_pp_sb, st_pp_rb;
    guint32 st_cp;
    guint32 tp_group, dp_group, pp_group, emb_group, cp_group;
    guint32 mp_group;   /* the gradient norm's and the inf check's group: tp x pp, or every GPU
                           under ZeRO-1; SSIM_NONE when it has one member */
    guint32 amax_group; /* the FP8 amax reduction's: the stage's tp x dp x cp GPUs; SSIM_NONE when
                           the step cost fp8_amax is off or the group has one member */
    guint32 st_amax;
    guint32 last;
    GArray *pending;  /* guint32 */
    GArray *deferred; /* Deferred */
    GArray *dp_ops;   /* guint32 */
    GArray *open;     /* guint32: gradient pieces waiting for their bucket's issue point */
    guint64 bucket;
    gboolean collect_grads;
    guint32 program; /* the program ops are added to (schedules with programs), or SSIM_NONE */
    /* ZeRO-3: the all-gather already issued for the next unit's weights (SSIM_NONE: none), and
     * the bytes of the unit after the current one, gathered once its first kernel is issued. */
    guint32 gathered;
    guint64 prefetch;
    GArray *bwd_seen; /* guint8 per model chunk of the rank: its first backward was emitted */
    /* overlap_param_gather: the step's gathers in forward order (guint32 plan ops) and the
     * index of each model chunk's first (guint; G_MAXUINT once the chunk's first forward has
     * taken them, or without gathers), lower-iteration.c's param_gathers(). */
    GArray *param_ops, *param_first;
    guint head_deferred; /* LM head weight gradients left for the flush (defer_head_wgrad) */
    /* GroupLast per group this rank has issued a collective on: NCCL runs one communicator's
     * operations one at a time, in issue order, whatever their streams (lower-emit.c's add). */
    GArray *group_last;
} Emit;

/* Starts emitting graph rank `rank`: its coordinates, no streams, groups or pending ops yet. */
void lower_emit_begin_rank(Emit *e, guint32 rank);
/* Emits step list `steps` as ops of class `cls` (kernels, TP collectives, and gradient pieces of
 * gradient site `site` when e->collect_grads). */
void lower_emit_steps(Emit *e, const GArray *steps, SsimOpClass cls, guint32 site);
/* A pipeline send or receive with the stage `peer_stage` on stream `st_name` (cache `st`). */
void lower_emit_p2p(Emit *e, SsimOpKind kind, guint32 *st, const char *st_name, guint peer_stage,
                    guint32 tag);
/* The lock-step collective-permute ending slot `slot`; its split form would send to
 * `send_peer` and receive from `recv_peer` (graph ranks, or SSIM_NONE).  Returns its plan op. */
guint32 lower_emit_permute(Emit *e, guint slot, guint32 send_peer, guint32 recv_peer);
/*
 * ZeRO-3: the next kernel, a unit's first (a layer's, the embedding's, the LM head's), needs the
 * unit's `bytes` of weights all-gathered over dp.  The first unit of a phase is gathered on the
 * gather stream as soon as the stream is free (the host issues it ahead of the GPU); each later
 * one was prefetched, its gather issued once the unit before it had begun, so at most two units
 * are whole at a time (FSDP's prefetch of one unit, its limit of two in flight).  `next` is the
 * bytes of the unit after this one in the phase, 0 for none.  Under Units.copies the gathered
 * weights are first copied out of the collective's buffer into the unit's parameters
 * (torch.split_with_sizes_copy: read and written), a kernel of class `cls` on the compute stream
 * that waits for the gather, as FSDP2's wait_for_unshard runs it.
 */
void lower_emit_gather(Emit *e, guint64 bytes, guint64 next, SsimOpClass cls);
/* ZeRO-3 under fsdp_root: the next unit is whole already (FSDP2 kept it since its forward), so it
 * gathers nothing, but the unit after it, of `next` bytes (0 for none), is prefetched once its
 * first kernel is issued, as FSDP2's pre-backward hook of a whole unit still prefetches. */
void lower_emit_kept(Emit *e, guint64 next);
/* overlap_param_gather: an all-gather over dp of a unit's `bytes` of weights on the gather
 * stream, as soon as the stream is free; the caller makes a kernel wait for it (e->pending). */
guint32 lower_emit_param_gather(Emit *e, guint64 bytes);
/* ZeRO-2 and 3: the reduce-scatter over dp of the `bytes` of gradients (in the model's dtype)
 * the unit just finished completed, issued after its last kernel; the optimizer waits for it.
 * Under Units.copies the gradients are first copied into the collective's buffer in the reduce
 * dtype (FSDP2's foreach_reduce_scatter_copy_in: dt read, the reduced element written), a
 * kernel on the compute stream (FSDP2 runs it on its reduce-scatter stream, beside the next
 * unit's backward, whose memory bandwidth it shares). */
void lower_emit_reduce_unit(Emit *e, guint64 bytes);
/* Closes the current gradient bucket: its pieces are issued after the last kernel. */
void lower_emit_flush_dp(Emit *e);
/* The host's work of one microbatch phase: a fixed-duration op on the compute stream (the step
 * cost "host"; nothing when it is off or e->host is 0). */
void lower_emit_host(Emit *e, SsimOpClass cls);
/* Transformer Engine's delayed scaling: the amaxes of the FP8 GEMMs of the `layers` layers of
 * the chunk pass just emitted (3 a GEMM forward: input, weight, output; 2 backward: output and
 * input gradients; 4 GEMMs a layer, 4 bytes each) all-reduced (max) over the amax group as the
 * pass's fp8_autocast region ends (forward) or its first FP8 module's backward does: a blocking
 * collective (torch.distributed.all_reduce, async_op=False) the next kernel waits for.  Nothing
 * when the group is SSIM_NONE. */
void lower_emit_amax(Emit *e, guint layers, gboolean forward);
/* The end of the rank's iteration (lower.h, "The step's end"): the tied-embedding all-reduce
 * (when `emb_ar`), the inf/nan check and the gradient norm with their all-reduces, the optimizer
 * (waiting for every gradient reduction) and, under ZeRO-1, the all-gather of the weights. */
void lower_emit_optimizer_step(Emit *e, gboolean emb_ar);
/* Bytes per gradient element in the dp and embedding reductions: 4 when the step cost
 * grad_fp32 is on, else the model's dtype. */
guint64 lower_grad_elem_bytes(const Emit *e);
/* Graph rank of the GPU at pipeline stage `stage` with this rank's dp and tp coordinates. */
guint32 lower_stage_rank(const Emit *e, guint stage);

/* ---- the iteration (lower-iteration.c) --------------------------------------------------- */

/*
 * Emits every graph rank of `lowered` (ranks and groups from lower_ranks_init) into its plan:
 * the schedule's phases in order, the transfers between stages, the optimizer step; then the
 * data dependencies across ranks that a lock-step slot hands over.  FALSE with `error` set when
 * a group cannot be made.
 */
gboolean lower_emit_iteration(SsimLowered *lowered, const SsimModel *model, const SsimParallel *par,
                              const SsimSchedule *schedule, const StepLists *steps,
                              const GArray *graph_of, SsimTime host, GError **error);
