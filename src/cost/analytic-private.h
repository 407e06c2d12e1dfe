/*
 * The inside of SsimAnalytic, shared by analytic.c (closed forms of collectives, groups, the cost
 * model view) and analytic-gemm.c (the GEMM shape model and the kernels' GEMM shapes).  Nothing
 * else includes this.
 *
 * Invariants: `kernels` holds at most one entry per kernel name, each with 1 or 2 GEMMs and their
 * FLOPs summed in `flops`; `name_cache` maps a graph string id to an index into `kernels`
 * (G_MAXUINT32: none) and `mt_cache` to whether the name is a multi-tensor kernel, each a
 * CostMemo (memo-private.h), valid for any graph; `compute_memo` holds the times of compute
 * ops lately priced, each under the key it was computed for (ComputeMemo), emptied with
 * `name_cache` whenever the kernel table changes.
 */
#pragma once

#include <shiftsim/analytic.h>

#include "src/cost/memo-private.h"

typedef struct {
    guint n_ranks, n_nodes, per_node;
} AnalyticShape;

/* The GEMMs one kernel of the lowering runs (a backward attention kernel runs two). */
typedef struct {
    char *name;
    guint n;         /* 0: a flash-attention kernel, gemm[0] its heads' Q K^T */
    guint flash;     /* 1 its forward, 2 its backward (ssim_analytic_flash_time) */
    guint64 window;  /* a flash kernel's sliding window in keys, 0: none (model.h) */
    double windowed; /* the share of the layers whose flash kernel is windowed */
    gboolean fp8;    /* priced as FP8 GEMMs (ssim_analytic_fp8_params) */
    SsimGemmShape gemm[2];
    double flops;
    SsimTime time; /* its GEMMs' time under the model's parameters, computed once when set */
} KernelGemms;

/* A compute op's time is a pure function of its graph string (through the graph's serial and
 * the string's id), FLOPs and bytes: a direct-mapped memo of the last ones priced (serial 0: an
 * empty slot).  A step's ops repeat a few dozen kernels per microbatch and layer. */
#define ANALYTIC_COMPUTE_MEMO 512
typedef struct {
    guint64 serial;
    guint64 bytes;
    double flops;
    SsimTime time;
    guint32 name;
} ComputeMemo;

struct SsimAnalytic {
    SsimAnalyticParams params;
    GArray *rank_map;   /* guint32 global rank per graph rank; empty = identity */
    GArray *shapes;     /* AnalyticShape per graph group; n_ranks == 0 = not set */
    GArray *kernels;    /* KernelGemms */
    GArray *name_cache; /* CostMemo per graph string id: index into kernels, G_MAXUINT32 none */
    GArray *mt_cache;   /* CostMemo per graph string id: 1 for the optimizer's kernels */
    ComputeMemo *compute_memo; /* ANALYTIC_COMPUTE_MEMO slots */
};

/* Sets up / frees the kernel tables of analytic-gemm.c. */
void analytic_gemm_init(SsimAnalytic *model);
void analytic_gemm_clear(SsimAnalytic *model);

/* The kernel entry of compute op `op` of `graph` whose FLOPs match the op's, or NULL. */
const KernelGemms *analytic_kernel_of(const SsimAnalytic *model, const SsimGraph *graph,
                                      const SsimOp *op);
