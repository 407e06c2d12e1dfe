/*
 * The inside of the comm model, shared by collective.c (the instance pool, the layout cache, the
 * engine glue), collective-choose.c (which algorithm a collective runs) and the
 * one-file-per-algorithm entries (collective-<name>.c).
 *
 * An algorithm is a table of functions (AlgoClass) that turns an instance into steps: how many,
 * the latency charged before each, and the flows each starts, all read off the instance and its
 * group's Layout, never from state of its own, so a step can be regenerated at any time (the
 * uncontended timing replays steps on a scratch network).  COLL_ALGO_LIST yields the internal
 * enum (Algo) and the registry, so adding an algorithm is one file plus one line there (and, for
 * it to be picked, a case in ssim_coll_choose()).  How an
 * op picks its algorithm is one function, ssim_coll_choose() (collective-choose.c); an entry says
 * what the user-visible SsimNetAlgorithm calls it (chain and permute are what `ring` means for
 * broadcast/reduce and collective-permute).
 *
 * Words: a *layout* is where one collective's members sit on the cluster (a graph group's
 * members, or those of one of its copies), sorted and measured, cached for the run; a *group* is
 * always the graph's communicator group (SsimOp.group); a *copy* is always copy c of a GPU as
 * SsimNetMapping and runtime.h's replication number them (copy 0: the GPU itself); an *instance*
 * (Inst) is one collective in flight in the pool, not to be confused with a replicated run's
 * instance of a match (Inst.instance, runtime.h).
 */
#pragma once

#include <shiftsim/net.h>

#include <math.h>

/* The collective algorithms: enum member, and the entry's name (ssim_coll_<name>). */
#define COLL_ALGO_LIST(X)                                                                          \
    X(RING, ring)                                                                                  \
    X(CHAIN, chain)                                                                                \
    X(TREE, tree)                                                                                  \
    X(HIERARCHICAL, hierarchical)                                                                  \
    X(DIRECT, direct)                                                                              \
    X(PERMUTE, permute)                                                                            \
    X(P2P, p2p)

typedef enum {
#define COLL_X(e, f) ALGO_##e,
    COLL_ALGO_LIST(COLL_X)
#undef COLL_X
        ALGO_N
} Algo;

/*
 * The layout of one collective's members on the cluster, built on first use and kept for the
 * run.  Invariants once built: `sorted` holds the n member GPUs ascending, so the members of a
 * node are consecutive (n_nodes nodes); k > 0 exactly when every one of those nodes holds the
 * same number k of members; channels is k when k > 0 and n_nodes > 1 (at most the cluster's
 * ring_nics), else 1, and the rings start at member `first` of each node.  Each algorithm
 * measures its own route latency (AlgoClass.measure); the tree shapes are built only when a tree
 * is first used (has_tree).
 */
typedef struct {
    gboolean built;
    gboolean has_tree;
    guint n, n_nodes, k; /* k: members per node when uniform, else 0 */
    guint channels;      /* rings of the ring algorithm */
    /* Ring c enters each node at its member (first + c) % k: where fewer rings than members
     * leave a node (ring_nics), groups that share the nodes (the data-parallel groups of one
     * stage) start at different members, so their rings leave through different NICs. */
    guint first;
    /* A group inside one node of a full mesh (net.h): ring c sends from sorted[i] to
     * sorted[mesh_next[c * n + i]], the rings together using every pair's link alike. */
    guint8 *mesh_next;
    guint32 *sorted;
    guint32 *order;    /* the members in group order (permute) */
    gint32 *parent[2]; /* tree parent position or -1 */
    guint16 *height[2], *depth[2];
    guint tree_h; /* the larger root height of the two trees */
    SsimTime a_ring, a_chain, a_intra, a_inter, a_tree, a_direct, a_permute;
    double b_intra, b_inter; /* one flow alone inside a node / across nodes */
} Layout;

/*
 * One collective (or send/receive pair) in flight: an entry of the pool, running its steps one
 * after the other.  `step` < `n_steps` while it runs; `pending` counts the current step's flows
 * not yet finished.
 */
typedef struct {
    guint32 match;
    guint32 instance; /* a replicated run's instance of the match (SSIM_NONE: not replicated) */
    guint8 algo;      /* Algo */
    guint8 coll;      /* SsimCollKind (unused by p2p) */
    guint32 layout;   /* layout id (see layout_at in collective.c), or SSIM_NONE for p2p */
    guint32 src, dst; /* p2p */
    guint64 bytes;
    guint32 chunks; /* pipelined algorithms: chunks of the pipeline */
    guint32 step, n_steps;
    guint32 pending;
    guint32 next_free;
    gboolean calibrated;
    double scale;       /* flow bytes factor (1 when not calibrated) */
    SsimTime lat_total; /* calibrated: the latency spread over the steps */
    guint8 load_only;   /* a copy's traffic (SsimNetMapping): finishes no match */
} Inst;

/* Where an algorithm's flows go: started on `net`, owned by `owner`, counted in `n`. */
typedef struct {
    SsimNet *net;
    const Inst *in;
    guint64 owner;
    guint32 n;
} FlowSink;

/* `times` steps whose flows are those of step `like` (so they take as long alone). */
typedef struct {
    guint32 like, times;
} AlikeSteps;

/* What the calibration is asked about an instance (SsimNetCalibration.lookup). */
typedef struct {
    SsimCollKind kind;
    SsimNetAlgorithm algorithm;
    guint n, per_node;
} CalibQuery;

/*
 * An algorithm.  Hooks marked optional may be NULL.  The comm model calls steps() once per
 * instance, after the layout is built and with n > 1 and bytes > 0 (p2p: layout NULL), then
 * latency() and flows() for each step s < n_steps in turn.
 */
typedef struct {
    const char *name; /* for debuggers and messages */
    /* What ssim_net_choose() returns and the calibration is asked for. */
    SsimNetAlgorithm reported;
    /* Optional: FALSE when the algorithm cannot run on `layout` (ssim_coll_choose() falls back to
     * ring). */
    gboolean (*fits)(const Layout *layout);
    /* Optional: fills the algorithm's route latency in `layout`, once, as the layout is built. */
    void (*measure)(Layout *layout, const SsimNet *net);
    /* The alpha-beta time of a collective of `kind` and `bytes` alone on `layout`, in seconds
     * (n > 1, bytes > 0); NULL for p2p, which no collective chooses. */
    double (*estimate)(Layout *layout, const SsimNet *net, SsimCollKind kind, guint64 bytes);
    /* Sets in->chunks where it pipelines, and returns the number of steps (>= 1). */
    guint32 (*steps)(Layout *layout, const SsimNet *net, Inst *in);
    /* The largest route latency among the edges of step `s` (the step overhead is added on). */
    SsimTime (*latency)(const Layout *layout, const SsimNet *net, const Inst *in, guint32 s);
    /* Starts the flows of step in->step into `sink` (flow_start()). */
    void (*flows)(const Layout *layout, const Inst *in, FlowSink *sink);
    /* Optional (NULL: every step is timed alone): classes of alike steps adding up to n_steps,
     * at most 2, into `out`; returns how many. */
    guint (*alike)(const Layout *layout, const Inst *in, AlikeSteps out[2]);
    /* Optional (NULL: the collective's kind and reported name, the layout's members and members
     * per node): what the calibration is asked. */
    void (*query)(const Layout *layout, const SsimNet *net, const Inst *in, CalibQuery *q);
} AlgoClass;

/* One entry per algorithm, defined in collective-<name>.c. */
#define COLL_X(e, f) extern const AlgoClass ssim_coll_##f;
COLL_ALGO_LIST(COLL_X)
#undef COLL_X

/* The registry (collective.c): each algorithm's entry, indexed by Algo. */
extern const AlgoClass *const ssim_coll_algos[ALGO_N];

/*
 * Builds `layout` (zeroed) for the n member GPUs `ranks`, in group order: its shape, the
 * bandwidth one flow alone gets on its ring edges inside and across nodes, and each algorithm's
 * latency (AlgoClass.measure).  ssim_coll_layout_clear() frees what it holds and zeroes it.
 */
void ssim_coll_layout_build(Layout *layout, const SsimNet *net, const guint32 *ranks, guint n);
void ssim_coll_layout_clear(Layout *layout);

/* The algorithm a collective of `kind` and `bytes` runs on `layout` (built, n > 1) under the
 * network's configured setting (collective-choose.c). */
Algo ssim_coll_choose(Layout *layout, const SsimNet *net, SsimCollKind kind, guint64 bytes);

/* --- Helpers the algorithms share ----------------------------------------------------------- */

static inline guint64 coll_div_up(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

/* The route latency from GPU a to GPU b (0 from a GPU to itself). */
static inline SsimTime coll_latency(const SsimNet *net, guint32 a, guint32 b)
{
    return a == b ? 0 : ssim_net_path_latency(net, a, b);
}

/* The chunks a pipeline cuts `bytes` into: chunk_bytes each, 1 to max_chunks of them. */
static inline guint32 coll_chunks(const SsimNet *net, guint64 bytes)
{
    const SsimNetConfig *cfg = ssim_net_config(net);
    guint64 c = (bytes + cfg->chunk_bytes - 1) / cfg->chunk_bytes;
    return (guint32)CLAMP(c, 1, (guint64)cfg->max_chunks);
}

/* The ring edge leaving position i of channel c: ring c enters each node at its c-th member
 * (one channel: the sorted members in order). */
static inline void coll_ring_edge(const Layout *l, guint c, guint i, guint32 *src, guint32 *dst)
{
    if (l->mesh_next != NULL) {
        *src = l->sorted[i];
        *dst = l->sorted[l->mesh_next[(gsize)c * l->n + i]];
        return;
    }
    if (l->k == 0 || l->n_nodes <= 1) {
        *src = l->sorted[i];
        *dst = l->sorted[(i + 1) % l->n];
        return;
    }
    guint k = l->k, j = i / k, q = i % k, e = l->first + c;
    *src = l->sorted[j * k + (e + q) % k];
    *dst = q + 1 < k ? l->sorted[j * k + (e + q + 1) % k]
                     : l->sorted[((j + 1) % l->n_nodes) * k + e % k];
}

/* The bandwidth one member gets on the rings (the slower of NVLink and its share of the NICs). */
static inline double coll_ring_bandwidth(const Layout *l)
{
    return l->n_nodes > 1 ? MIN(l->b_intra, l->channels * l->b_inter) : l->b_intra;
}

/* The per-step software overhead, in seconds (estimates). */
static inline double coll_overhead_s(const SsimNet *net)
{
    return ssim_time_to_seconds(ssim_net_config(net)->step_overhead);
}

/* Starts a flow of `bytes` (times a calibrated instance's scale) from `src` to `dst`. */
static inline void flow_start(FlowSink *sink, guint32 src, guint32 dst, guint64 bytes)
{
    if (sink->in->calibrated)
        bytes = (guint64)llround((double)bytes * sink->in->scale);
    ssim_net_flow_start(sink->net, src, dst, bytes, sink->owner);
    sink->n++;
}
