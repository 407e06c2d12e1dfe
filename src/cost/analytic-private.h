/*
 * The inside of SsimAnalytic, shared by analytic.c (closed forms of collectives, groups, the cost
 * model view) and analytic-gemm.c (the GEMM shape model and the kernels' GEMM shapes).  Nothing
 * else includes this.
 *
 * Invariants: `kernels` holds at most one entry per kernel name, each with 1 or 2 GEMMs and their
 * FLOPs summed in `flops`; `name_cache` maps a graph string id to an index into `kernels` (-1:
 * none) for the string it was computed from (`from`, owned), so a lookup is valid for any graph:
 * an id whose string differs is recomputed.
 */
#pragma once

#include <shiftsim/analytic.h>

typedef struct {
    guint n_ranks, n_nodes, per_node;
} AnalyticShape;

/* The GEMMs one kernel of the lowering runs (a backward attention kernel runs two). */
typedef struct {
    char *name;
    guint n;
    SsimGemmShape gemm[2];
    double flops;
    SsimTime time; /* its GEMMs' time under the model's parameters, computed once when set */
} KernelGemms;

/* A memo entry per graph string id: `value` as computed for the string `from` (owned). */
typedef struct {
    char *from;
    gint value;
} NameEntry;

struct SsimAnalytic {
    SsimAnalyticParams params;
    GArray *rank_map;   /* guint32 global rank per graph rank; empty = identity */
    GArray *shapes;     /* AnalyticShape per graph group; n_ranks == 0 = not set */
    GArray *kernels;    /* KernelGemms */
    GArray *name_cache; /* NameEntry per graph string id */
    GArray *mt_cache;   /* NameEntry per graph string id: 1 for the optimizer's kernels */
};

/* Sets up / frees the kernel tables of analytic-gemm.c. */
void analytic_gemm_init(SsimAnalytic *model);
void analytic_gemm_clear(SsimAnalytic *model);

/* The entry of graph string id `id` in the memo `cache` (NameEntry), valid for string `str`;
 * *fresh when it was (re)made for it and the caller must compute its value. */
NameEntry *analytic_memo(GArray *cache, guint32 id, const char *str, gboolean *fresh);

/* The kernel entry of compute op `op` of `graph` whose FLOPs match the op's, or NULL. */
const KernelGemms *analytic_kernel_of(const SsimAnalytic *model, const SsimGraph *graph,
                                      const SsimOp *op);
