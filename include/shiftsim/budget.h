/*
 * Up-front limits on a simulation's size: a lowering that would build more ops than memory and
 * time allow, or an absurd microbatch count, is refused before anything is allocated, with the
 * estimate and the limit in the message.  The estimate is deliberately a little high (see
 * src/run/budget.c) and costs nothing: it is arithmetic on the model and the split.  The other
 * up-front limit, on GPUs (SSIM_MAX_GPUS), is the cluster's (cluster.h); the event budget of a
 * replay is the runtime's (SsimRunLimits).
 *
 * Ownership: plain values only.
 */
#pragma once

#include <shiftsim/model.h>
#include <shiftsim/parallel.h>

G_BEGIN_DECLS

/* The default op budget of a lowering (`shiftsim simulate --max-ops`): 200 million ops is
 * roughly 20 GB of graph, timeline and event state and about ten minutes of replay. */
#define SSIM_MAX_OPS_DEFAULT G_GUINT64_CONSTANT(200000000)
/* Microbatches per pipeline beyond which a configuration is refused outright. */
#define SSIM_MAX_MICROBATCHES 1000000u
/* The least time one iteration can take (its FLOPs at every GPU's peak) beyond which a
 * configuration is refused: 10^7 s, about 116 days, leaves simulated time (int64 ns, 292 years)
 * room for efficiencies down to 1% and overheads without overflowing. */
#define SSIM_MAX_STEP_SECONDS 1e7

typedef struct {
    guint64 ranks;           /* graph ranks: pp, or every GPU with `exact` */
    guint64 layers_per_rank; /* layers / pp (every chunk of a rank) */
    guint64 microbatches;    /* per pipeline */
    guint64 ops_per_layer;   /* per layer and microbatch: forward, recompute, backward, TP */
    double ops;              /* the estimate; a double, so it cannot overflow */
} SsimOpEstimate;

/* Estimates the ops ssim_lower() would build for `model` under `par` (which must have passed
 * ssim_parallel_validate()). */
void ssim_budget_estimate(const SsimModel *model, const SsimParallel *par, gboolean exact,
                          SsimOpEstimate *out);

/*
 * Refuses (FALSE, `error` SSIM_RUN_ERROR_LIMIT, the code of every limit) a configuration with
 * more than SSIM_MAX_MICROBATCHES microbatches ("global_batch: ...") or whose estimate exceeds
 * `max_ops` ("max_ops: ..."; 0: the default SSIM_MAX_OPS_DEFAULT; G_MAXUINT64: no limit).
 */
gboolean ssim_budget_check(const SsimModel *model, const SsimParallel *par, gboolean exact,
                           guint64 max_ops, GError **error);

/*
 * Refuses (FALSE, SSIM_RUN_ERROR_LIMIT, "step_time: ...") a configuration whose iteration cannot
 * take less than SSIM_MAX_STEP_SECONDS: its hardware FLOPs over the GPUs' peak in the model's
 * dtype.  Absurd shapes (a hidden size of billions, huge microbatches) stop here with the
 * estimate instead of overflowing simulated time.
 */
gboolean ssim_budget_check_time(const SsimModel *model, const SsimCluster *cluster,
                                const SsimParallel *par, GError **error);

G_END_DECLS
