/*
 * The profiled cost model: op durations answered from a measured profile (profile.h) first and
 * from the analytical model (analytic.h) where the profile has nothing relevant.
 *
 * How each op of a graph is asked:
 *   - a collective, with its *logical* group shape (members n, members per node k), taken from
 *     the analytical model's groups (ssim_analytic_group_shape): the lowering emits one
 *     representative rank per stage, so the graph group alone would say "one member";
 *     ssim_profile_comm_time(op, dtype, bytes, n, k);
 *   - a send/receive pair and a collective-permute (every member sends its buffer to one
 *     neighbour), as SENDRECV between two ranks, on one node or across two;
 *   - a compute op with FLOPs whose GEMM shapes the analytic model knows (a lowered kernel,
 *     ssim_analytic_op_gemms), each GEMM by ssim_profile_gemm_time() with the analytic model's
 *     parameters, their GEMM efficiency and tile overhead fitted once to the profile's measured
 *     GEMMs (ssim_profile_fit_gemm_model), so the measurements reach each shape through tiles
 *     and waves;
 *     any other, by ssim_profile_flops_time(); one with zero FLOPs is memory-bound, by
 * ssim_profile_memory_time() with the lowering's kernel name mapped to the profile's memory ops:
 * norm*, final_norm* -> layernorm, softmax* -> softmax, act* -> gelu, residual*, branch_add* ->
 * add, optimizer -> adam, any other name up to its first '.' (the profile then pools all its memory
 * rows);
 *   - barriers, and whatever the profile cannot answer: the analytical model, as it would
 *     price the op on its own, so an empty profile gives exactly the analytical times.
 *
 * Answers are cached per key (what is asked, bytes or FLOPs, the mapped kernel, the group shape),
 * so a graph of thousands of ops with a few dozen distinct shapes does a few dozen lookups.
 *
 * Every answer is counted, once per graph op it prices (a collective instance counts each of its
 * members, a send/receive pair both ends, so the counts add up to the ops the runtime asked
 * for), by its provenance (exact, interpolated, extrapolated, analytical), both per op kind
 * (SsimCostExplain: gemm, memory, comm) and per lowering class (the op's class label: fwd, bwd,
 * recompute, optimizer, tp, pp, dp; "other" for any other label).
 *
 * A model is used by one run at a time: op_time() updates its cache and counters.
 *
 * Ownership: ssim_profiled_new() borrows the profile and the analytical model (both must outlive
 * it) and returns a model the caller frees with ssim_profiled_free(); the SsimCostModel view and
 * the counters it returns are borrowed from it.
 */
#pragma once

#include <shiftsim/analytic.h>
#include <shiftsim/opclass.h>
#include <shiftsim/profile.h>

G_BEGIN_DECLS

/* The lowering's classes (SsimOpClass order), then "other". */
#define SSIM_PROFILED_N_CLASSES (SSIM_OPCLASS_N + 1)

/* How many ops of each lowering class got their cost from each source. */
typedef struct {
    guint64 count[SSIM_PROFILED_N_CLASSES][SSIM_COST_N];
} SsimClassExplain;

void ssim_class_explain_init(SsimClassExplain *explain);
void ssim_class_explain_merge(SsimClassExplain *dst, const SsimClassExplain *src);
/* All ops counted. */
guint64 ssim_class_explain_n_ops(const SsimClassExplain *explain);
/* A text table: a row per class that has ops (and a total), a column per source. */
GString *ssim_class_explain_table(const SsimClassExplain *explain);

typedef struct SsimProfiled SsimProfiled;

/* A model answering from `profile` for compute in `dtype`, falling back to `analytic`. */
SsimProfiled *ssim_profiled_new(const SsimProfile *profile, const SsimAnalytic *analytic,
                                SsimDtype dtype);
void ssim_profiled_free(SsimProfiled *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimProfiled, ssim_profiled_free)

/* The SsimCostModel view of `model` (borrowed; `model` must outlive its use). */
SsimCostModel ssim_profiled_cost_model(SsimProfiled *model);

/*
 * The cost of op `op` of `graph` with its provenance, without counting it; returns the op kind
 * it was priced as (GEMM, MEMORY or COMM).
 */
SsimProfileKind ssim_profiled_estimate(SsimProfiled *model, const SsimGraph *graph, guint32 op,
                                       SsimCostEstimate *out);

/* The counters so far (borrowed), and a reset of them (the cache is kept). */
const SsimCostExplain *ssim_profiled_explain(const SsimProfiled *model);
const SsimClassExplain *ssim_profiled_class_explain(const SsimProfiled *model);
void ssim_profiled_reset_explain(SsimProfiled *model);
/* Profile lookups done so far (cache misses), for tests and benchmarks. */
guint64 ssim_profiled_n_lookups(const SsimProfiled *model);

G_END_DECLS
