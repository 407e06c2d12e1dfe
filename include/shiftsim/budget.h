/*
 * Up-front limits on a simulation's size: a lowering that would build more ops than memory and
 * time allow, or an absurd microbatch count, is refused before anything is allocated, with the
 * estimate and the limit in the message.  The estimate is deliberately a little high (see
 * src/run/budget.c) and costs nothing: it is arithmetic on the model and the split.
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
 * Refuses (FALSE, `error` SSIM_CONFIG_ERROR_VALUE) a configuration with more than
 * SSIM_MAX_MICROBATCHES microbatches or whose estimate exceeds `max_ops` (0: the default
 * SSIM_MAX_OPS_DEFAULT; G_MAXUINT64: no limit).
 */
gboolean ssim_budget_check(const SsimModel *model, const SsimParallel *par, gboolean exact,
                           guint64 max_ops, GError **error);

G_END_DECLS
