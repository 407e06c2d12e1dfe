/*
 * One simulated training iteration: validate the configuration, check memory, build the
 * schedule, lower to an op graph, replay it on the runtime with a cost model, and derive the
 * figures a user asks for (SsimResult).
 *
 * Definitions of the figures (all per iteration, "step" = the makespan of the lowered graph,
 * from the first kernel to the end of the optimizer step and the last gradient collective):
 *   tokens/s, samples/s      global_batch * seq_len / step, global_batch / step
 *   model TFLOP/s per GPU    model FLOPs (matmuls, backward = 2 x forward, no recompute) /
 *                            (step * GPUs); hardware TFLOP/s adds the recomputed FLOPs (this is
 *                            the figure Megatron-LM reports)
 *   MFU, HFU                 those divided by the GPU's dense peak in the model's dtype
 *   pipeline bubble          the pipeline window is [first start, last end] of all forward,
 *                            backward and recompute kernels; a rank's work is the union of its
 *                            kernels and TP collectives inside the window, its bubble the rest of
 *                            the window; the figure is mean over ranks of bubble / work, which is
 *                            (p-1)/m for GPipe and 1F1B and (p-1)/(v m) for interleaved 1F1B
 *                            when every phase costs the same and communication is free
 *   exposed communication    for class c (tp, pp, dp) on a rank: the time some op of class c
 *                            runs while no kernel (compute op) runs on that rank, i.e. the
 *                            measure of union(c ops) minus union(kernels); reported as the mean
 *                            over graph ranks (exposed) and the largest rank (exposed_max).  A
 *                            moment with two classes exposed counts for both.
 *   host waits               with a host (the cluster's kernel_floor_us, runtime.h's host issue):
 *                            on a rank, the sum over its compute ops of the time from ready to
 *                            launched, i.e. its GPU idle for the host; mean over graph ranks
 *                            (host_wait) and the largest rank (host_wait_max)
 *   peak memory per GPU      the largest ssim_memory_estimate() over stages, with the schedule's
 *                            in-flight count for each stage, plus the buffers the placement
 *                            keeps alive longer (ssim_plan_extra_bytes)
 *
 * The replay applies the cluster's overlap_slowdown: a kernel that runs while a communication op
 * of its GPU runs is slowed over the overlapped part (the runtime's interference model).
 *
 * Ownership: ssim_simulate() fills a caller-provided SsimResult (plain values); the optional
 * lowered graph and timeline it hands back are the caller's to free.
 */
#pragma once

#include <shiftsim/budget.h>
#include <shiftsim/cluster.h>
#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
#include <shiftsim/model.h>
#include <shiftsim/opclass.h>
#include <shiftsim/parallel.h>
#include <shiftsim/profiled.h>
#include <shiftsim/runtime.h>
#include <shiftsim/schedule.h>

G_BEGIN_DECLS

typedef struct {
    const SsimModel *model;
    const SsimCluster *cluster;
    const SsimParallel *par;
    /* Simulate every GPU instead of one representative per stage.  By default the stage
     * programs are lowered once and every GPU replays its copy (SsimReplication: its own times,
     * streams, collective instances and, under the flow network, traffic; about 20 bytes an op
     * copy); `exact_graph`, or asking ssim_simulate() for the lowered graph, the timeline or the
     * per-op uncontended times, lower every GPU's program on its own instead (the explicit
     * graph, about 270 bytes an op). */
    gboolean exact;
    gboolean exact_graph;
    gboolean ignore_memory;    /* simulate even when the memory estimate exceeds the GPU */
    const SsimCostModel *cost; /* NULL: the analytic model of `cluster` */
    /* Communication through the flow-level network (net.h: max-min shared links, collectives
     * as their algorithm's flows) instead of the analytic closed forms. */
    gboolean flow_network;
    /* With flow_network, when not NULL: receives each op's uncontended time (SsimTime per op of
     * the final graph: its time alone on the network; -1 for ops that are not communication). */
    GArray *uncontended;
    /* A measured profile answering costs first, the analytic model the rest (profiled.h);
     * NULL: the analytic model alone.  Ignored when `cost` is set.  With flow_network its
     * collective rows calibrate the network (netcal.h) instead of pricing collectives. */
    const SsimProfile *profile;
    /* When not NULL (with `profile`), receive where each op's cost came from, per op kind and
     * per lowering class (added to what they hold). */
    SsimCostExplain *explain;
    SsimClassExplain *class_explain;
    /* The placement pass (place.h); NULL simulates the graph as lowered, which is Megatron-LM's
     * placement (what library callers, validate and calibrate run).  par->placement is only a
     * name: callers resolve it into this.  The result names what ran (SsimResult.placement). */
    const SsimPlacement *placement;
    /* Every communication runs this many times back to back (SsimRunConfig.comm_repeat; 0 or
     * 1: once). */
    guint comm_repeat;
    SsimPlaceReport *report; /* may be NULL: what the placement pass did */
    /* Limits (include/shiftsim/budget.h): the lowering's estimated op count (0: the default
     * SSIM_MAX_OPS_DEFAULT, G_MAXUINT64: none) and the replay's event budget (0: none).  A
     * configuration over the first is refused before it is lowered; a run that hits the second
     * fails with SSIM_RUN_ERROR_LIMIT and no figures. */
    guint64 max_ops;
    guint64 max_events;
    /* Host memory (budget.h): the run's estimate is checked against it before lowering, and the
     * process's resident memory after lowering, after placement and once the replay's state is
     * allocated (SSIM_RUN_ERROR_MEMORY).  0: ssim_budget_memory_default(); G_MAXUINT64: none. */
    guint64 max_memory;
    /* When not NULL, receives the processor time each phase took (benchmarks; never printed by
     * the reporters, since it differs between runs). */
    struct SsimSimTimes *times;
} SsimSimConfig;

/* Processor seconds of the calling thread spent in each phase of ssim_simulate(). */
typedef struct SsimSimTimes {
    double prepare; /* validation, budget, schedule, memory estimate */
    double lower;   /* the plan and its graph (ssim_lower) */
    double place;   /* the placement pass and the graph rebuilt from it (0 without one) */
    double replay;  /* the runtime */
    double measure; /* the figures from the timeline */
} SsimSimTimes;

typedef struct {
    guint n_gpus;
    guint m; /* microbatches per pipeline */
    SsimScheduleKind schedule;
    char placement[64]; /* the placement that ran: "alpa", "commshift+late-tp", "megatron" (no
                           placement: the lowering's own), with "+lhs" when that was on */
    guint comm_repeat;  /* every communication ran this many times */
    SsimTime step_time;
    double tokens_per_s;
    double samples_per_s;
    double model_flops; /* per iteration, all GPUs */
    double hardware_flops;
    double model_tflops_per_gpu;
    double hardware_tflops_per_gpu;
    double mfu, hfu;                   /* fractions of peak */
    double peak_flops;                 /* per GPU, model dtype */
    double bubble;                     /* fraction (see above) */
    SsimTime exposed[SSIM_COMM_N];     /* mean over graph ranks */
    SsimTime exposed_max[SSIM_COMM_N]; /* worst graph rank */
    SsimTime comm_busy[SSIM_COMM_N];   /* mean time some op of the class runs */
    SsimMemory memory;                 /* the stage with the largest total (its total includes
                                          placement_extra) */
    guint64 placement_extra;           /* bytes per GPU the placement keeps alive (place.h) */
    guint64 memory_capacity;           /* HBM bytes of one GPU */
    gboolean memory_fits;
    guint n_graph_ranks;
    guint32 n_ops;
    guint64 events;
    /* The flow network only (has_contention): per class, the mean over graph ranks of the time
     * its communication ops took beyond their uncontended time (alone on the network, net.h:
     * the slowdown from sharing links with other traffic), and of that uncontended time. */
    gboolean has_contention;
    SsimTime contention[SSIM_COMM_N];
    SsimTime uncontended[SSIM_COMM_N];
    /* A cluster with a host (kernel_floor_us; has_host): the time a GPU's compute ops, once
     * ready, waited for the host to launch them, mean over graph ranks and the worst. */
    gboolean has_host;
    SsimTime host_wait, host_wait_max;
    /* The per-iteration terms (parallel.h's SsimStepCost; lower.h names their ops): which were
     * on, and per term the mean over graph ranks of the time its ops ran (the sum of their
     * durations; for grad_fp32, the gradient reductions' whole time) and their count per step
     * over all graph ranks. */
    guint step_costs_on;
    SsimTime step_cost_time[SSIM_STEP_COST_N];
    guint64 step_cost_ops[SSIM_STEP_COST_N];
} SsimResult;

/*
 * The host a cluster describes (its kernel_floor_us and microbatch_floor_us, eager PyTorch's
 * time to launch each op and its work around each microbatch phase) as it applies to `par`: both
 * under Megatron-LM's schedules, neither under a compiled program's (ssim_parallel_compiled).
 */
SsimTime ssim_host_kernel_floor(const SsimCluster *cluster, const SsimParallel *par);
SsimTime ssim_host_microbatch_floor(const SsimCluster *cluster, const SsimParallel *par);

/*
 * Simulates one iteration of `config`.  Fails (FALSE, `error` set) when the split is invalid
 * (ssim_parallel_validate's message), the schedule is unknown or impossible, the memory estimate
 * does not fit (unless ignore_memory), or the runtime deadlocks.  `lowered` and `timeline`, when
 * not NULL, receive the graph and its per-op times.
 */
gboolean ssim_simulate(const SsimSimConfig *config, SsimResult *result, SsimLowered **lowered,
                       SsimTimeline **timeline, GError **error);

/*
 * The validation and memory half of ssim_simulate(), without lowering: fills `peak` with the
 * largest per-stage estimate and returns TRUE when it fits the GPU (FALSE with the same messages
 * as ssim_simulate() otherwise; `peak` is filled whenever the split itself is valid).
 */
gboolean ssim_simulate_memory(const SsimSimConfig *config, SsimMemory *peak, GError **error);

/*
 * Plausibility of a step: model FLOP utilisation above 100% (faster than the hardware's peak) or
 * below 1% says the costs behind it are wrong (a profile in the wrong unit, of another GPU, or
 * with broken rows), whatever the arithmetic.  Returns a warning naming the MFU, the step and the
 * bound ("MFU 240% is above 100%: ..."; newly allocated), or NULL when `mfu` is within bounds.
 * `what` names the source ("the step simulated from profile p.csv").
 */
#define SSIM_MFU_PLAUSIBLE_MIN 0.01
#define SSIM_MFU_PLAUSIBLE_MAX 1.0
char *ssim_mfu_implausible(double mfu, double step_seconds, const char *what);

/* Derives the timing figures of `result` (step, throughput, FLOP/s, bubble, exposure) from a
 * replayed lowering; ssim_simulate() calls it, tests may call it on their own runs. */
void ssim_result_measure(SsimResult *result, const SsimLowered *lowered,
                         const SsimTimeline *timeline, const SsimModel *model,
                         const SsimParallel *par, double peak_flops);

/*
 * Fills the contention figures of `result` (and sets has_contention) from a replay through the
 * flow network: `uncontended` is ssim_net_uncontended()'s per-match array (n_matches entries;
 * per instance, with every op copy measured, when `replication` is the run's, else NULL).
 * A communication op's slowdown is end - start - uncontended of its match, filed under its
 * lowering class (tp, pp, dp; others are left out).  When `per_op` is not NULL it is resized
 * to the graph's ops and receives each op's uncontended time (-1 for other ops).
 */
void ssim_result_measure_contention(SsimResult *result, const SsimLowered *lowered,
                                    const SsimTimeline *timeline,
                                    const SsimReplication *replication, const SsimTime *uncontended,
                                    guint n_matches, GArray *per_op);
/* The sums behind it for any graph, classes taken from the ops' labels ("tp", "pp", "dp"):
 * `extra[c]` the time beyond uncontended, `alone[c]` the uncontended time, over every op. */
void ssim_contention_sum(const SsimGraph *graph, const SsimTimeline *timeline,
                         const SsimTime *uncontended, guint n_matches, SsimTime extra[SSIM_COMM_N],
                         SsimTime alone[SSIM_COMM_N], GArray *per_op);

G_END_DECLS
