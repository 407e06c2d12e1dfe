/*
 * Replaying a given op graph (an op-graph file, a Chakra trace) on a described cluster, the way
 * ssim_simulate() replays a lowered step: op durations from the cluster's analytical model (or a
 * measured profile first), communication through the analytic closed forms or the flow-level
 * network (max-min shared links: NVLink, NICs, leaf and spine), and the cluster's interference
 * (overlap_slowdown) on compute that overlaps communication.
 *
 * Graph rank r is GPU r of the cluster, on node r / gpus_per_node: a trace's ranks are laid out
 * on the nodes in order, and a group's collective is charged with its members' real placement
 * (how many nodes it spans, how many GPUs per node).  Ops that carry a duration keep it; the
 * others are priced: compute from its FLOPs and bytes in `dtype` (the roofline of analytic.h),
 * collectives and transfers from their bytes and members.
 *
 * Ownership: the configuration is borrowed for the call; the timeline returned is the caller's.
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/profile.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

typedef struct {
    const SsimCluster *cluster; /* must have a GPU for every graph rank */
    SsimDtype dtype;            /* the compute dtype of the cluster's peak (default bf16) */
    const SsimProfile *profile; /* NULL: the analytical model alone */
    gboolean flow_network;      /* communication through the flow-level network */
    SsimRunLimits limits;
    guint64 max_memory; /* SsimRunConfig.max_memory (0: no limit) */
} SsimReplayConfig;

#define SSIM_REPLAY_CONFIG_INIT                                                                    \
    {                                                                                              \
        .cluster = NULL, .dtype = SSIM_DTYPE_BF16, .profile = NULL, .flow_network = FALSE,         \
        .limits = SSIM_RUN_LIMITS_NONE, .max_memory = 0                                            \
    }

/* What the flow network adds to a replay (zero without it). */
typedef struct {
    guint64 flows;      /* flows started */
    SsimTime alone;     /* sum over communication ops of their time alone on the network */
    SsimTime contended; /* sum over them of the time beyond that: the slowdown from sharing */
} SsimReplayNet;

/*
 * Replays finalized `graph` under `config`; `net` (may be NULL) receives the network figures.
 * Fails (NULL, `error` set) when the cluster has fewer GPUs than the graph has ranks, when the
 * network cannot be built, or as ssim_runtime_run() fails (deadlock, a limit).
 */
SsimTimeline *ssim_replay_on_cluster(const SsimGraph *graph, const SsimReplayConfig *config,
                                     SsimReplayNet *net, GError **error);

G_END_DECLS
