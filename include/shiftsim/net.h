/*
 * The flow-level network: a cluster's links, routes between GPUs, and transfers (flows) that
 * share link capacity max-min fairly, as SimGrid's network model does, rather than packet by
 * packet.
 *
 * Links are directed, each a capacity (bytes/s) and a latency: per GPU GPU->NVSwitch and
 * NVSwitch->GPU (NVLink), GPU->NIC and NIC->GPU (PCIe); per NIC NIC->leaf and leaf->NIC; per
 * leaf switch one aggregate leaf->spine and spine->leaf uplink whose capacity is the leaf's
 * downlink capacity divided by the oversubscription factor (the spine is an ideal core, as with
 * ECMP over enough spines).  On a `fullmesh` cluster (cluster.h) the GPUs of a node have no
 * switch: each ordered pair of them has a link of its own (nvlink-pair, the cluster's
 * nvlink_pair_bw), and a route inside a node is that one link.  Routes are rail-aligned: a GPU
 * talks to another node through the NIC on the destination's rail, first crossing NVLink to the
 * local GPU that owns that NIC when its own NIC is on another rail (NCCL's PXN), so inter-node
 * traffic never changes rails and only crosses the spine between leaf groups.
 *
 * A flow is (route, bytes).  While flows are active, each gets its max-min fair rate (the
 * progressive-filling allocation: raise every rate together, freeze the flows of a link when it
 * saturates, continue with the rest).  Rates are recomputed when a flow starts or ends, and only
 * for the flows connected to it through shared links, since other components' allocations cannot
 * change.  Completion times are integer nanoseconds and flows completing at the same instant are
 * reported in flow-id order, so a run is deterministic.  Flow records and per-link lists come
 * from pools that only grow to the peak number of concurrent flows: in steady state starting,
 * solving and finishing flows allocates nothing.
 *
 * Latency is not part of a flow: callers (the collective algorithms, see ssim_net_comm_model)
 * charge a route's latency once per step before its flows start.
 *
 * Ownership: ssim_net_new*() return a network the caller owns (ssim_net_free, g_autoptr).  It
 * keeps a copy of what it needs from the cluster, not the cluster itself.
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

/* The longest route: NVLink (PXN) 2, PCIe, NIC->leaf, leaf->spine, spine->leaf, leaf->NIC, PCIe. */
#define SSIM_NET_MAX_HOPS 8

#define SSIM_LINK_KIND_LIST(X)                                                                     \
    X(NVLINK_UP, "nvlink-up")                                                                      \
    X(NVLINK_DOWN, "nvlink-down")                                                                  \
    X(PCIE_UP, "pcie-up")                                                                          \
    X(PCIE_DOWN, "pcie-down")                                                                      \
    X(NIC_UP, "nic-up")                                                                            \
    X(NIC_DOWN, "nic-down")                                                                        \
    X(LEAF_UP, "leaf-up")                                                                          \
    X(LEAF_DOWN, "leaf-down")                                                                      \
    X(CUSTOM, "custom")                                                                            \
    X(NVLINK_PAIR, "nvlink-pair")

typedef enum {
#define SSIM_X(e, s) SSIM_LINK_##e,
    SSIM_LINK_KIND_LIST(SSIM_X)
#undef SSIM_X
        SSIM_LINK_KIND_N
} SsimLinkKind;

const char *ssim_link_kind_name(SsimLinkKind kind);

typedef struct {
    SsimLinkKind kind;
    guint32 index;   /* the GPU, NIC or leaf it belongs to */
    double capacity; /* bytes/s */
    SsimTime latency;
} SsimNetLink;

typedef struct {
    /* Scale NVLink capacities by the cluster's nvlink_efficiency and NIC and fabric capacities
     * by ib_efficiency (the bus bandwidth NCCL reaches), default TRUE; PCIe is never scaled. */
    gboolean use_efficiency;
    SsimNetAlgorithm algorithm;   /* default: the cluster's [network] algorithm */
    SsimTime step_overhead;       /* default: the cluster's [network] step_overhead_us */
    SsimTime collective_overhead; /* before a collective's first step (not a send); default:
                                     the cluster's [efficiency] collective_overhead_us */
    double collective_copy_bw;    /* inside one node, bytes/s of a member's own buffers, paid
                                     before the first step (analytic.h; 0 = none); default: the
                                     cluster's [efficiency] collective_copy_GB_s */
    guint64 chunk_bytes;          /* pipelining chunk of tree, broadcast and reduce (512 KiB) */
    guint max_chunks;             /* at most this many chunks per pipeline (64) */
} SsimNetConfig;

/* Fills `config` with the defaults above, reading algorithm and overhead from `cluster`. */
void ssim_net_config_init(SsimNetConfig *config, const SsimCluster *cluster);

typedef struct SsimNet SsimNet;

/* The network of `cluster` (checked) with ssim_net_config_init() defaults or with `config`. */
SsimNet *ssim_net_new(const SsimCluster *cluster, GError **error);
SsimNet *ssim_net_new_config(const SsimCluster *cluster, const SsimNetConfig *config,
                             GError **error);
/* A network of `n_links` links and no GPUs, for solver tests: start flows with explicit paths. */
SsimNet *ssim_net_new_links(const double *capacities, guint n_links);
void ssim_net_free(SsimNet *net);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimNet, ssim_net_free)

const SsimNetConfig *ssim_net_config(const SsimNet *net);
guint ssim_net_n_gpus(const SsimNet *net);
guint ssim_net_gpus_per_node(const SsimNet *net);
guint ssim_net_n_links(const SsimNet *net);
const SsimNetLink *ssim_net_link(const SsimNet *net, guint32 link);
/* The link of `kind` for a GPU, NIC (global: node * nics_per_node + nic) or leaf
 * (rail * n_leaves + leaf group); an nvlink-pair link by ssim_net_pair_index(). */
guint32 ssim_net_link_id(const SsimNet *net, SsimLinkKind kind, guint32 index);
/* The index of the nvlink-pair link from GPU `src` to GPU `dst` of the same node of a full-mesh
 * network: (node * g + local src) * (g - 1) + its peer's rank among the other g - 1 GPUs, g GPUs
 * per node.  SSIM_NONE for a network without pair links, or GPUs of different nodes. */
guint32 ssim_net_pair_index(const SsimNet *net, guint32 src, guint32 dst);

/* The route from GPU `src` to GPU `dst` (src != dst) into `links`; returns its hop count. */
guint ssim_net_route(const SsimNet *net, guint32 src, guint32 dst,
                     guint32 links[SSIM_NET_MAX_HOPS]);
SsimTime ssim_net_path_latency(const SsimNet *net, guint32 src, guint32 dst);
/* The smallest capacity along the route (what one flow alone on it gets). */
double ssim_net_path_bandwidth(const SsimNet *net, guint32 src, guint32 dst);

/* Flows.  The network has its own clock; it never goes backwards. */
SsimTime ssim_net_now(const SsimNet *net);
/* Moves the clock to `t` (>= now, <= the next completion): active flows progress at their rates. */
void ssim_net_advance(SsimNet *net, SsimTime t);
/*
 * Starts a flow of `bytes` from `src` to `dst` at the current time and returns its handle (valid
 * until it is reported complete; handles are reused).  `owner` comes back with its completion.
 * A flow of 0 bytes, or between a GPU and itself, completes at once.
 */
guint32 ssim_net_flow_start(SsimNet *net, guint32 src, guint32 dst, guint64 bytes, guint64 owner);
guint32 ssim_net_flow_start_path(SsimNet *net, const guint32 *links, guint n_links, guint64 bytes,
                                 guint64 owner);
/* The time the earliest active flow completes (rates solved first), or SSIM_TIME_NEVER. */
SsimTime ssim_net_next_completion(SsimNet *net);
/*
 * When a flow completes at or before `until`: moves the clock to its completion time, removes it,
 * sets `*owner` (and `*flow`, may be NULL, to its handle) and returns TRUE.  Flows completing at
 * the same time come out in the order they were started.
 */
gboolean ssim_net_pop_completion(SsimNet *net, SsimTime until, guint64 *owner, guint32 *flow);
/* An active flow's current rate (bytes/s, rates solved first) and bytes left at `now`. */
double ssim_net_flow_rate(SsimNet *net, guint32 flow);
double ssim_net_flow_remaining(const SsimNet *net, guint32 flow);
guint ssim_net_n_active(const SsimNet *net);
/* Drops every flow and sets the clock to 0. */
void ssim_net_reset(SsimNet *net);

typedef struct {
    guint64 flows_started;
    guint64 flows_finished;
    guint64 solves;       /* rate recomputations (one per batch of starts/ends) */
    guint64 flows_solved; /* sum over solves of the flows whose rate was recomputed */
    guint64 links_solved; /* the same for links */
    guint peak_active;    /* most flows active at once */
    guint64 collectives;  /* matches handled by the comm model */
} SsimNetStats;

void ssim_net_stats(const SsimNet *net, SsimNetStats *stats);

/*
 * The runtime plug-in (see runtime.h): each communication match becomes its algorithm's flows on
 * this network.  The model is owned by `net` and valid while it lives; one run at a time.  By
 * default the graph's rank r is GPU r of the cluster (node r / gpus_per_node), see
 * ssim_net_set_mapping() otherwise; attach fails when a rank has no GPU.
 */
SsimCommModel ssim_net_comm_model(SsimNet *net);

/*
 * How graph ranks and groups map onto the cluster, for graphs where one rank stands for several
 * GPUs (the lowering's representative mode): `rank_map[r]` is the GPU of graph rank r (NULL:
 * the identity) and `group_members(data, group, &n)` returns the GPUs a graph group's collective
 * really involves (NULL: the graph's own members mapped through rank_map).  A collective is then
 * simulated with all its logical members' flows, so its own traffic contends with itself and with
 * whatever else runs on those links.
 *
 * Copies.  A representative also stands for symmetric copies of itself (the other data-parallel
 * replicas and tensor-parallel ranks of its stage), which issue the same communication at the
 * same moments on other GPUs.  With `n_copies` > 1, copy c (1 <= c < n_copies) of GPU g is
 * copy_gpu(data, g, c); every transfer and collective then also starts, as load only, on each
 * distinct copy of its members (a copy whose members are the original's, or an earlier copy's,
 * is the same collective and is not repeated), so shared links (a NIC several GPUs use, an
 * oversubscribed spine) carry the traffic of every GPU, as in an exact run; only the
 * representative's own flows decide when the op ends.  The arrays and callbacks must stay valid
 * while runs use the model; the mapping applies to the runs after the call.
 */
typedef struct {
    const guint32 *rank_map;
    guint n_ranks;
    const guint32 *(*group_members)(gpointer data, guint32 group, guint *n);
    guint n_copies; /* 0 or 1: none */
    guint32 (*copy_gpu)(gpointer data, guint32 gpu, guint copy);
    gpointer data;
} SsimNetMapping;

void ssim_net_set_mapping(SsimNet *net, const SsimNetMapping *mapping);

/*
 * Calibration from measurements (see netcal.h, which builds one from a profile's collective
 * rows).  Before a collective or a send/receive pair of `bytes` over `n` GPUs, `ranks_per_node`
 * of them per node (n when they share one node), starts with `algorithm` (p2p: `kind` is
 * SSIM_COLL_N and n is 2), the model asks `lookup`; when it answers TRUE with the measured
 * uncontended time `*total` and the part of it that is latency `*latency` (0 <= latency <=
 * total), the instance is calibrated: `*latency` replaces its route latencies and step overheads
 * (spread evenly over its steps), and every one of its flows carries its bytes times the factor
 * that makes the flows' uncontended time (the collective alone on the network) total - latency.
 * So the collective alone takes `total` (within a nanosecond per step), and when it shares links
 * its bandwidth part slows as any flow does.  `graph` and `op` (the match's first op) are for
 * the callback's bookkeeping.  NULL (the default) or a FALSE answer: the nominal link figures.
 * The callback must stay valid while runs use the model.
 */
typedef struct {
    gboolean (*lookup)(gpointer data, const SsimGraph *graph, guint32 op, SsimCollKind kind,
                       SsimNetAlgorithm algorithm, guint n, guint ranks_per_node, guint64 bytes,
                       SsimTime *total, SsimTime *latency);
    gpointer data;
} SsimNetCalibration;

void ssim_net_set_calibration(SsimNet *net, const SsimNetCalibration *calibration);

/*
 * Each match's uncontended time in the last run through the comm model: how long it would have
 * taken alone on the network (its algorithm's flows, calibrated if it was, with nothing else
 * active), indexed by match; 0 for matches that carried no data.  The actual time is the
 * timeline's end - start of the match's ops; the difference is the slowdown from contention.
 * Borrowed, valid until the next run or the network's end; NULL before any run.
 */
const SsimTime *ssim_net_uncontended(SsimNet *net, guint *n_matches);

/*
 * The algorithm the model uses for a collective of `kind` and `bytes` over `ranks` (sorted or
 * not): the fixed one from the configuration where it applies, else NCCL-like: all-to-all is
 * direct; all-gather, reduce-scatter, broadcast and reduce use rings; an all-reduce inside one
 * node uses a ring, across nodes the fastest of ring, double binary tree and hierarchical by
 * the alpha-beta estimates of ssim_net_estimate().
 */
SsimNetAlgorithm ssim_net_choose(SsimNet *net, SsimCollKind kind, const guint32 *ranks, guint n,
                                 guint64 bytes);
/* The uncongested time of that collective with `algorithm` (alpha-beta, for the choice). */
SsimTime ssim_net_estimate(SsimNet *net, SsimCollKind kind, SsimNetAlgorithm algorithm,
                           const guint32 *ranks, guint n, guint64 bytes);

G_END_DECLS
