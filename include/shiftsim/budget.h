/*
 * Up-front limits on a simulation's size: a lowering that would build more ops than memory and
 * time allow, or an absurd microbatch count, is refused before anything is allocated, with the
 * estimate and the limit in the message.  The estimate is deliberately a little high (see
 * src/run/budget.c) and costs nothing: it is arithmetic on the model and the split.  The other
 * up-front limit, on GPUs (SSIM_MAX_GPUS), is the cluster's (cluster.h); the event budget of a
 * replay is the runtime's (SsimRunLimits).  Host memory has both: an estimate from the op count
 * checked before the work, and the process's resident memory checked between phases of the run.
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

/* ---- host memory (--max-memory) ---------------------------------------------------------- */

/*
 * How a run holds its ops, which decides its memory: one representative graph (pp ranks), that
 * graph plus per-GPU state for every copy (--exact, replicated), or the explicit per-GPU graph
 * (--exact-graph, or --exact with a timeline, traces or plots).
 */
typedef enum {
    SSIM_MEMORY_REPRESENTATIVE,
    SSIM_MEMORY_REPLICATED,
    SSIM_MEMORY_EXPLICIT,
} SsimMemoryMode;

/*
 * Bytes of host memory per *estimated* op (ssim_budget_estimate, itself up to about 2.5x the
 * ops built), from the growth of the resident set across runs that keep their graph and
 * timeline (tests/run/test_budget.c; GPT-J, every schedule and recompute mode, both graph modes:
 * 97 to 140 bytes, the most under full recompute) and rounded up: a graph op (plan, graph,
 * timeline, runtime state); and a replicated copy of one (its state in the runtime and its share
 * of the intervals it is measured by: about 11 bytes per copy built, GPT-3 175B on 1,024 H100s
 * under --exact; 17.5 when the run kept every copy's times, an upper bound kept).
 */
#define SSIM_BYTES_PER_GRAPH_OP 160.0
#define SSIM_BYTES_PER_OP_COPY  16.0

typedef struct {
    SsimMemoryMode mode;
    double graph_ops; /* estimated ops of the graph the run builds */
    double op_copies; /* estimated per-GPU op copies a replicated run keeps (0 otherwise) */
    double bytes;     /* the estimate */
} SsimMemoryEstimate;

void ssim_budget_memory_estimate(const SsimModel *model, const SsimParallel *par,
                                 SsimMemoryMode mode, SsimMemoryEstimate *out);

/* The default --max-memory: 75% of the memory this process may use (ssim_alloc_available_bytes);
 * 0 (no limit) when that cannot be read. */
guint64 ssim_budget_memory_default(void);

/*
 * Refuses (FALSE, SSIM_RUN_ERROR_MEMORY, "max_memory: ...") a configuration whose estimate,
 * times `held` (runs whose graphs are kept at once, as compare keeps one per policy), exceeds
 * `max_memory` (0: ssim_budget_memory_default(); G_MAXUINT64: no limit).  The message names the
 * estimate and what reduces it: the representative mode, fewer microbatches, --max-memory.
 */
gboolean ssim_budget_check_memory(const SsimModel *model, const SsimParallel *par,
                                  SsimMemoryMode mode, guint held, guint64 max_memory,
                                  GError **error);

/*
 * During a run: FALSE (SSIM_RUN_ERROR_MEMORY) when the process's resident memory
 * (ssim_alloc_resident_bytes) exceeds `max_memory` (0: the default; G_MAXUINT64: none) at `when`
 * ("after lowering"), naming the estimate made before the work (`estimate` bytes, 0 when none) for
 * comparison.
 */
gboolean ssim_budget_check_resident(guint64 max_memory, const char *when, double estimate,
                                    GError **error);

G_END_DECLS
