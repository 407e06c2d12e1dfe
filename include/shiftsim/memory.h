/*
 * Memory per GPU of one pipeline stage at its peak: weights, gradients, optimizer state and
 * activations.
 *
 * Static state follows mixed-precision Adam (Rajbhandari et al. 2020): 16-bit weights (2 B) and
 * gradients (2 B) plus fp32 master weights, momentum and variance (12 B), 16 bytes per parameter;
 * an fp32 model keeps 4 + 4 + 8.  Parameters are those of the stage (ssim_model_stage_params)
 * divided by tp; ZeRO stage 1 divides the optimizer state by dp.
 *
 * Activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", bytes per layer per microbatch of b sequences (16-bit activations):
 *   no parallelism              s b h (34 + 5 a s / h)
 *   tensor parallel t           s b h (10 + 24/t + 5 a s / (h t))
 *   tp + sequence parallel      s b h (34 + 5 a s / h) / t
 *   selective recompute         s b h (10 + 24/t)        or  34 s b h / t with sequence parallel
 *   full recompute              2 s b h                  or   2 s b h / t with sequence parallel
 * (an fp32 model doubles these).  The per-layer figure times the layers of one model chunk times
 * the number of (microbatch, chunk) forward passes the schedule keeps alive at the stage's peak
 * gives the activations; the schedule knows that number and passes it in: GPipe m, 1F1B
 * min(pp - stage, m), interleaved 1F1B on stage 0 min(v*pp + pp - 1, v*m) chunk passes, ...
 * The embedding and LM head activations, which the paper shows to be small, are left out.
 */
#pragma once

#include <shiftsim/model.h>
#include <shiftsim/parallel.h>
#include <shiftsim/cluster.h>

G_BEGIN_DECLS

typedef struct {
    guint stage;     /* the pipeline stage described */
    guint in_flight; /* (microbatch, chunk) forward passes alive at the peak */
    guint64 params;  /* parameters on one GPU of the stage (after tp sharding) */
    guint64 weights; /* bytes */
    guint64 gradients;
    guint64 optimizer;        /* fp32 master weights and Adam moments (sharded under ZeRO-1) */
    guint64 activation_layer; /* one layer, one microbatch (Korthikanti) */
    guint64 activations;      /* activation_layer * layers per chunk * in_flight */
    guint64 total;            /* weights + gradients + optimizer + activations */
} SsimMemory;

/* Korthikanti's bytes of activations of one layer for one microbatch under `par` (tp, sequence
 * parallelism, recompute, microbatch) for `model`. */
guint64 ssim_memory_activation_layer_bytes(const SsimModel *model, const SsimParallel *par);

/* Fills `mem` for pipeline stage `stage` (< par->pp) with `in_flight` chunk-microbatches alive.
 * Requires layers % (pp*v) == 0 (a validated configuration). */
void ssim_memory_estimate(SsimMemory *mem, const SsimModel *model, const SsimParallel *par,
                          guint stage, guint in_flight);

/* TRUE when `mem->total` fits the GPU's HBM; otherwise FALSE with SSIM_CONFIG_ERROR_MEMORY and a
 * message giving the stage, the total, its breakdown and the capacity in GiB, e.g.
 * "memory: stage 0 needs 162.4 GiB per GPU (weights 11.3, gradients 11.3, optimizer 67.8,
 *  activations 72.0) but an NVIDIA H200 SXM 141GB has 140.4 GiB". */
gboolean ssim_memory_fits(const SsimMemory *mem, const SsimCluster *cluster, GError **error);

G_END_DECLS
