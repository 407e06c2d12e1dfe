/*
 * Collective algorithms as flows on the network, and the runtime plug-in that drives them.
 *
 * Each communication match becomes a sequence of steps; a step is a set of flows that start
 * together, one latency term after the previous step's flows have all finished (the slowest
 * flow ends a step, which is how a contended link slows a whole collective).  A step's latency
 * is the largest route latency among its edges plus the configured per-step software overhead,
 * as NCCL's tuning model charges a base plus a per-hop latency per step.  S is the op's bytes,
 * the full buffer as nccl-tests counts it; n the members, sorted by rank so that the members of
 * one node are consecutive (N nodes of k members each when the group is uniform).
 *
 *   ring          all-reduce 2(n-1) steps (reduce-scatter then all-gather), all-gather and
 *                 reduce-scatter n-1 steps; in each step every rank sends S/n to its successor.
 *                 Across nodes a uniform group runs k rings (NCCL's channels), ring c entering
 *                 each node at its c-th member, each carrying S/(kn) per step, so every NIC
 *                 carries one ring as NCCL's rail-aligned rings do.
 *   chain         broadcast and reduce: a pipeline along the sorted members in C chunks of S/C
 *                 (C + n - 2 steps), rooted at the first member.
 *   tree          all-reduce on NCCL's double binary tree over the sorted members: each tree
 *                 reduces then broadcasts S/2 pipelined in C chunks, a node forwarding chunk j
 *                 at step j + its height (reduce) or its parent's depth (broadcast):
 *                 2 (C + H - 1) steps for trees of height H.
 *   hierarchical  all-reduce over a uniform multi-node group: reduce-scatter on each node's
 *                 ring (k-1 steps of S/k over NVLink), all-reduce of S/k on k rings of
 *                 same-rail members across the N nodes (2(N-1) steps of S/(kN)), all-gather on
 *                 each node (k-1 steps of S/k).
 *   direct        all-to-all: one step, every rank sends S/n to each of the others.
 *   permute       XLA's collective-permute: one step, every member sends S to the next member
 *                 in group order (cyclically).
 *   p2p           a send/receive pair: one flow of the send's bytes.
 *
 * Steps are generated on the fly from (algorithm, step index) and a per-group plan (sorted
 * members, tree shapes, per-phase latencies), built on a group's first use and cached for the
 * run, so the steady state allocates nothing: instances come from a pool with a free list.
 */
#include "src/net/net-private.h"

#include <math.h>
#include <string.h>

typedef struct {
    gboolean built;
    gboolean has_tree;
    guint n, n_nodes, k; /* k: members per node when uniform, else 0 */
    guint channels;      /* rings of the ring algorithm */
    guint32 *sorted;
    guint32 *order;    /* the members in group order (permute) */
    gint32 *parent[2]; /* tree parent position or -1 */
    guint16 *height[2], *depth[2];
    guint tree_h; /* the larger root height of the two trees */
    SsimTime a_ring, a_chain, a_intra, a_inter, a_tree, a_direct, a_permute;
    double b_intra, b_inter; /* one flow alone inside a node / across nodes */
} Plan;

typedef struct {
    guint32 match;
    guint32 instance; /* a replicated run's instance of the match (SSIM_NONE: not replicated) */
    guint8 algo;      /* SsimNetAlgorithm, or ALGO_P2P */
    guint8 coll;
    guint32 group;    /* plan index, or SSIM_NONE for p2p */
    guint32 src, dst; /* p2p */
    guint64 bytes;
    guint32 chunks;
    guint32 step, n_steps;
    guint32 pending;
    guint32 next_free;
    gboolean calibrated;
    double scale;       /* flow bytes factor (1 when not calibrated) */
    SsimTime lat_total; /* calibrated: the latency spread over the steps */
    guint8 load_only;   /* a copy's traffic (SsimNetMapping): finishes no match */
} Inst;

#define ALGO_P2P SSIM_NET_ALGO_N

typedef struct {
    SsimNet *net;
    SsimEngine *engine;
    SsimRun *run;
    const SsimGraph *graph;
    Plan *plans;
    guint n_plans;
    Inst *insts;
    guint32 n_insts, cap_insts, free_head;
    guint ev_step, ev_wake;
    SsimEngineTicket wake; /* an alarm (engine.h) at the network's next completion */
    SsimNetMapping map;
    GArray *scratch; /* guint32: a group's members mapped to GPUs */
    SsimNetCalibration cal;
    SsimNet *shadow;     /* scratch network for timing an instance alone (lazily made) */
    GHashTable *alone;   /* AloneKey -> AloneVal, for the current graph */
    GArray *uncontended; /* SsimTime per match (per instance when replicated) of the last run */
    /* The distinct copies of each graph group (SsimNetMapping), built on the group's first use:
     * plan index n_plans + copy_first[g] + k is copy k of group g. */
    GArray *copy_plans;  /* Plan */
    guint32 *copy_first; /* per group, SSIM_NONE until built */
    guint32 *copy_n;
    guint32 *copy_plan; /* per group and copy (g * n_copies + c): the plan of that copy */
} Comm;

/* Plan `id`: a graph group's, or past them a copy's. */
static inline Plan *plan_at(const Comm *cm, guint32 id)
{
    return id < cm->n_plans ? &cm->plans[id]
                            : &g_array_index(cm->copy_plans, Plan, id - cm->n_plans);
}

/* What an instance's time alone depends on, besides its calibration (zeroed padding). */
typedef struct {
    guint64 bytes;
    guint32 group, src, dst;
    guint8 algo, coll;
} AloneKey;

typedef struct {
    SsimTime flows;          /* its flows' time alone at scale 1, latencies left out */
    SsimTime nominal;        /* uncalibrated: the whole time alone */
    SsimTime total, latency; /* the last calibration seen, and its time alone */
    SsimTime calibrated;
    double scale;
} AloneVal;

/* --- Plans ------------------------------------------------------------------------------ */

/* NCCL's binary tree (src/graph/trees.cc, ncclGetBtree): the parent of position r of n. */
static gint32 btree_parent(gint32 n, gint32 r)
{
    if (r == 0)
        return -1;
    gint32 bit = 1;
    while (bit < n && !(bit & r))
        bit <<= 1;
    gint32 up = (r ^ bit) | (bit << 1);
    return up >= n ? (r ^ bit) : up;
}

/* NCCL's second tree (ncclGetDtree): mirrored for even n, shifted by one for odd n. */
static gint32 dtree_parent(gint32 n, gint32 r)
{
    if (n % 2 == 1) {
        gint32 u = btree_parent(n, (r - 1 + n) % n);
        return u < 0 ? -1 : (u + 1) % n;
    }
    gint32 u = btree_parent(n, n - 1 - r);
    return u < 0 ? -1 : n - 1 - u;
}

static void plan_clear(Plan *p)
{
    g_free(p->sorted);
    g_free(p->order);
    for (int t = 0; t < 2; t++) {
        g_free(p->parent[t]);
        g_free(p->height[t]);
        g_free(p->depth[t]);
    }
    memset(p, 0, sizeof *p);
}

static SsimTime lat(const SsimNet *net, guint32 a, guint32 b)
{
    return a == b ? 0 : ssim_net_path_latency(net, a, b);
}

/* Position-based ring edges: the successor of position p of channel c. */
static inline void ring_edge(const Plan *p, guint c, guint i, guint32 *src, guint32 *dst)
{
    if (p->channels == 1) {
        *src = p->sorted[i];
        *dst = p->sorted[(i + 1) % p->n];
        return;
    }
    guint k = p->k, j = i / k, q = i % k;
    *src = p->sorted[j * k + (c + q) % k];
    *dst = q + 1 < k ? p->sorted[j * k + (c + q + 1) % k]
                     : p->sorted[((j + 1) % p->n_nodes) * k + c % k];
}

static void plan_build_tree(Plan *p, const SsimNet *net)
{
    guint n = p->n;
    p->tree_h = 0;
    p->a_tree = 0;
    for (int t = 0; t < 2; t++) {
        p->parent[t] = g_new(gint32, n);
        p->height[t] = g_new0(guint16, n);
        p->depth[t] = g_new0(guint16, n);
        for (guint r = 0; r < n; r++)
            p->parent[t][r] =
                t == 0 ? btree_parent((gint32)n, (gint32)r) : dtree_parent((gint32)n, (gint32)r);
        for (guint r = 0; r < n; r++) {
            guint d = 0, h = 0;
            for (gint32 x = p->parent[t][r]; x >= 0; x = p->parent[t][x])
                d++;
            p->depth[t][r] = (guint16)d;
            for (gint32 x = p->parent[t][r]; x >= 0; x = p->parent[t][x]) {
                h++;
                if (p->height[t][x] >= h)
                    break; /* its ancestors were raised when it was */
                p->height[t][x] = (guint16)h;
            }
            if (p->parent[t][r] >= 0) {
                guint32 a = p->sorted[r], b = p->sorted[p->parent[t][r]];
                p->a_tree = MAX(p->a_tree, MAX(lat(net, a, b), lat(net, b, a)));
            }
        }
        for (guint r = 0; r < n; r++)
            if (p->parent[t][r] < 0)
                p->tree_h = MAX(p->tree_h, p->height[t][r]);
    }
    p->has_tree = TRUE;
}

static void plan_build(Plan *p, const SsimNet *net, const guint32 *ranks, guint n)
{
    guint gpn = ssim_net_gpus_per_node(net);
    p->n = n;
    p->sorted = g_memdup2(ranks, n * sizeof *ranks);
    p->order = g_memdup2(ranks, n * sizeof *ranks);
    for (guint i = 0; i < n; i++)
        p->a_permute = MAX(p->a_permute, lat(net, ranks[i], ranks[(i + 1) % n]));
    qsort(p->sorted, n, sizeof *p->sorted, ssim_cmp_u32);
    p->n_nodes = 0;
    guint run = 0, k = 0;
    gboolean uniform = TRUE;
    for (guint i = 0; i < n; i++) {
        if (i == 0 || p->sorted[i] / gpn != p->sorted[i - 1] / gpn) {
            if (p->n_nodes > 0) {
                if (k == 0)
                    k = run;
                uniform = uniform && run == k;
            }
            p->n_nodes++;
            run = 0;
        }
        run++;
    }
    if (k == 0)
        k = run;
    uniform = uniform && run == k;
    p->k = uniform ? k : 0;
    p->channels = uniform && p->n_nodes > 1 ? k : 1;
    p->b_intra = p->b_inter = INFINITY;

    for (guint c = 0; c < p->channels; c++)
        for (guint i = 0; i < n; i++) {
            guint32 s, d;
            ring_edge(p, c, i, &s, &d);
            p->a_ring = MAX(p->a_ring, lat(net, s, d));
            if (s == d)
                continue;
            double bw = ssim_net_path_bandwidth(net, s, d);
            if (s / gpn == d / gpn)
                p->b_intra = MIN(p->b_intra, bw);
            else
                p->b_inter = MIN(p->b_inter, bw);
        }
    for (guint i = 0; i + 1 < n; i++)
        p->a_chain = MAX(p->a_chain, lat(net, p->sorted[i], p->sorted[i + 1]));
    if (p->k > 0) {
        for (guint j = 0; j < p->n_nodes; j++)
            for (guint q = 0; q < k; q++) {
                guint32 s = p->sorted[j * k + q];
                p->a_intra = MAX(p->a_intra, lat(net, s, p->sorted[j * k + (q + 1) % k]));
                p->a_inter =
                    MAX(p->a_inter, lat(net, s, p->sorted[((j + 1) % p->n_nodes) * k + q]));
            }
    }
    for (guint i = 1; i < n; i++)
        p->a_direct = MAX(p->a_direct, MAX(lat(net, p->sorted[0], p->sorted[i]),
                                           lat(net, p->sorted[i], p->sorted[0])));
    if (!isfinite(p->b_intra))
        p->b_intra = p->b_inter;
    if (!isfinite(p->b_inter))
        p->b_inter = p->b_intra;
    p->built = TRUE;
}

static guint32 chunks_for(const SsimNet *net, guint64 bytes)
{
    const SsimNetConfig *cfg = ssim_net_config(net);
    guint64 c = (bytes + cfg->chunk_bytes - 1) / cfg->chunk_bytes;
    return (guint32)CLAMP(c, 1, (guint64)cfg->max_chunks);
}

static double estimate_plan(Plan *p, const SsimNet *net, SsimCollKind kind, SsimNetAlgorithm algo,
                            guint64 bytes)
{
    double S = (double)bytes, n = p->n,
           ov = ssim_time_to_seconds(ssim_net_config(net)->step_overhead);
    if (p->n <= 1 || bytes == 0)
        return 0.0;
    double b_ring = p->n_nodes > 1 ? MIN(p->b_intra, p->channels * p->b_inter) : p->b_intra;
    double a_ring = ssim_time_to_seconds(p->a_ring) + ov;
    switch (algo) {
    case SSIM_NET_ALGO_TREE: {
        if (!p->has_tree)
            plan_build_tree(p, net);
        double C = chunks_for(net, bytes / 2), steps = 2 * (C + p->tree_h - 1);
        double b = p->n_nodes > 1 ? p->b_inter : p->b_intra;
        return steps * (ssim_time_to_seconds(p->a_tree) + ov + S / (C * b));
    }
    case SSIM_NET_ALGO_HIERARCHICAL: {
        double k = p->k, N = p->n_nodes;
        return 2 * (k - 1) * (ssim_time_to_seconds(p->a_intra) + ov + S / (k * p->b_intra)) +
               2 * (N - 1) * (ssim_time_to_seconds(p->a_inter) + ov + S / (k * N * p->b_inter));
    }
    case SSIM_NET_ALGO_DIRECT:
        return ssim_time_to_seconds(p->a_direct) + ov + (n - 1) / n * S / b_ring;
    default:
        break;
    }
    if (kind == SSIM_COLL_PERMUTE)
        return ssim_time_to_seconds(p->a_permute) + ov + S / MIN(p->b_intra, p->b_inter);
    if (kind == SSIM_COLL_BROADCAST || kind == SSIM_COLL_REDUCE) {
        double C = chunks_for(net, bytes);
        return (C + n - 2) * (ssim_time_to_seconds(p->a_chain) + ov + S / C / p->b_intra);
    }
    double steps = kind == SSIM_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    return steps * (a_ring + S / n / b_ring);
}

static gboolean hier_ok(const Plan *p)
{
    return p->k > 1 && p->n_nodes > 1;
}

static SsimNetAlgorithm choose_plan(Plan *p, SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    if (kind == SSIM_COLL_ALLTOALL)
        return SSIM_NET_ALGO_DIRECT;
    if (kind != SSIM_COLL_ALLREDUCE || p->n <= 1)
        return SSIM_NET_ALGO_RING;
    SsimNetAlgorithm fixed = ssim_net_config(net)->algorithm;
    if (fixed == SSIM_NET_ALGO_HIERARCHICAL)
        return hier_ok(p) ? fixed : SSIM_NET_ALGO_RING;
    if (fixed == SSIM_NET_ALGO_RING || fixed == SSIM_NET_ALGO_TREE)
        return fixed;
    if (p->n_nodes <= 1)
        return SSIM_NET_ALGO_RING;
    SsimNetAlgorithm best = SSIM_NET_ALGO_RING;
    double t_best = estimate_plan(p, net, kind, SSIM_NET_ALGO_RING, bytes);
    double t = estimate_plan(p, net, kind, SSIM_NET_ALGO_TREE, bytes);
    if (t < t_best) {
        best = SSIM_NET_ALGO_TREE;
        t_best = t;
    }
    if (hier_ok(p) && estimate_plan(p, net, kind, SSIM_NET_ALGO_HIERARCHICAL, bytes) < t_best)
        best = SSIM_NET_ALGO_HIERARCHICAL;
    return best;
}

SsimNetAlgorithm ssim_net_choose(SsimNet *net, SsimCollKind kind, const guint32 *ranks, guint n,
                                 guint64 bytes)
{
    g_return_val_if_fail(net != NULL && ranks != NULL && n > 0, SSIM_NET_ALGO_RING);
    Plan p = {0};
    plan_build(&p, net, ranks, n);
    SsimNetAlgorithm a = choose_plan(&p, net, kind, bytes);
    plan_clear(&p);
    return a;
}

SsimTime ssim_net_estimate(SsimNet *net, SsimCollKind kind, SsimNetAlgorithm algorithm,
                           const guint32 *ranks, guint n, guint64 bytes)
{
    g_return_val_if_fail(net != NULL && ranks != NULL && n > 0, 0);
    Plan p = {0};
    plan_build(&p, net, ranks, n);
    double t = estimate_plan(&p, net, kind, algorithm, bytes);
    plan_clear(&p);
    return ssim_time_from_seconds(t);
}

/* --- Steps ------------------------------------------------------------------------------ */

static inline guint64 div_up(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

/* The latency charged before step `s` of `in`: a calibrated instance's latency spread evenly
 * (the steps' shares add up to it exactly), else the step's route latency and overhead. */
static SsimTime step_alpha(const Comm *cm, const Inst *in, const Plan *p, guint32 s)
{
    if (in->calibrated) {
        guint64 n = MAX(in->n_steps, 1u), l = (guint64)in->lat_total;
        return (SsimTime)((s + 1) * l / n - s * l / n);
    }
    SsimTime ov = ssim_net_config(cm->net)->step_overhead, a = 0;
    switch (in->algo) {
    case ALGO_P2P:
        a = lat(cm->net, in->src, in->dst);
        break;
    case SSIM_NET_ALGO_TREE:
        a = p->a_tree;
        break;
    case SSIM_NET_ALGO_DIRECT:
        a = p->a_direct;
        break;
    case SSIM_NET_ALGO_HIERARCHICAL: {
        guint32 intra = p->k - 1, inter = 2 * (p->n_nodes - 1);
        a = s < intra || s >= intra + inter ? p->a_intra : p->a_inter;
        break;
    }
    default:
        a = in->coll == SSIM_COLL_BROADCAST || in->coll == SSIM_COLL_REDUCE ? p->a_chain
            : in->coll == SSIM_COLL_PERMUTE                                 ? p->a_permute
                                                                            : p->a_ring;
    }
    return a + ov;
}

/* Starts the flows of step `in->step` of `in` on `net`, owned by `id`; returns how many.  A
 * calibrated instance's flows carry their bytes times its scale. */
static guint32 start_flows(SsimNet *net, const Inst *in, const Plan *p, guint64 id)
{
    guint32 count = 0, s = in->step;
#define FLOW(a, b, bytes)                                                                          \
    do {                                                                                           \
        guint64 bytes_ = (bytes);                                                                  \
        if (in->calibrated)                                                                        \
            bytes_ = (guint64)llround((double)bytes_ * in->scale);                                 \
        ssim_net_flow_start(net, (a), (b), bytes_, id);                                            \
        count++;                                                                                   \
    } while (0)
    switch (in->algo) {
    case ALGO_P2P:
        FLOW(in->src, in->dst, in->bytes);
        break;
    case SSIM_NET_ALGO_DIRECT: {
        guint64 b = div_up(in->bytes, p->n);
        for (guint i = 0; i < p->n; i++)
            for (guint j = 0; j < p->n; j++)
                if (i != j)
                    FLOW(p->sorted[i], p->sorted[j], b);
        break;
    }
    case SSIM_NET_ALGO_TREE: {
        guint32 half = in->chunks + p->tree_h - 1;
        gboolean reduce = s < half;
        guint32 t0 = reduce ? s : s - half;
        guint64 b = div_up(div_up(in->bytes, 2), in->chunks);
        for (int t = 0; t < 2; t++)
            for (guint r = 0; r < p->n; r++) {
                gint32 up = p->parent[t][r];
                if (up < 0)
                    continue;
                guint32 lag = reduce ? p->height[t][r] : p->depth[t][up];
                if (t0 < lag || t0 - lag >= in->chunks)
                    continue;
                if (reduce)
                    FLOW(p->sorted[r], p->sorted[up], b);
                else
                    FLOW(p->sorted[up], p->sorted[r], b);
            }
        break;
    }
    case SSIM_NET_ALGO_HIERARCHICAL: {
        guint k = p->k, N = p->n_nodes;
        guint32 intra = k - 1, inter = 2 * (N - 1);
        if (s < intra || s >= intra + inter) {
            guint64 b = div_up(in->bytes, k);
            for (guint j = 0; j < N; j++)
                for (guint q = 0; q < k; q++)
                    FLOW(p->sorted[j * k + q], p->sorted[j * k + (q + 1) % k], b);
        } else {
            guint64 b = div_up(in->bytes, (guint64)k * N);
            for (guint q = 0; q < k; q++)
                for (guint j = 0; j < N; j++)
                    FLOW(p->sorted[j * k + q], p->sorted[((j + 1) % N) * k + q], b);
        }
        break;
    }
    default:
        if (in->coll == SSIM_COLL_PERMUTE) {
            for (guint i = 0; i < p->n; i++)
                FLOW(p->order[i], p->order[(i + 1) % p->n], in->bytes);
        } else if (in->coll == SSIM_COLL_BROADCAST || in->coll == SSIM_COLL_REDUCE) {
            guint64 b = div_up(in->bytes, in->chunks);
            for (guint e = 0; e + 1 < p->n; e++) {
                if (s < e || s - e >= in->chunks)
                    continue;
                if (in->coll == SSIM_COLL_BROADCAST)
                    FLOW(p->sorted[e], p->sorted[e + 1], b);
                else
                    FLOW(p->sorted[p->n - 1 - e], p->sorted[p->n - 2 - e], b);
            }
        } else {
            guint64 b = div_up(in->bytes, (guint64)p->n * p->channels);
            for (guint c = 0; c < p->channels; c++)
                for (guint i = 0; i < p->n; i++) {
                    guint32 a, d;
                    ring_edge(p, c, i, &a, &d);
                    FLOW(a, d, b);
                }
        }
    }
#undef FLOW
    return count;
}

/* Starts the flows of the current step of instance `id`; returns how many. */
static guint32 start_step(Comm *cm, guint32 id)
{
    const Inst *in = &cm->insts[id];
    const Plan *p = in->group == SSIM_NONE ? NULL : plan_at(cm, in->group);
    return start_flows(cm->net, in, p, id);
}

/* --- Uncontended times ------------------------------------------------------------------ */

/* The time step `s` of `in` takes alone on the scratch network (its latency left out). */
static SsimTime alone_step(Comm *cm, const Inst *in, const Plan *p, guint32 s)
{
    if (cm->shadow == NULL)
        cm->shadow = ssim_net_new_like(cm->net);
    SsimNet *net = cm->shadow;
    ssim_net_reset(net);
    Inst tmp = *in;
    tmp.step = s;
    start_flows(net, &tmp, p, 0);
    while (ssim_net_pop_completion(net, SSIM_TIME_NEVER, NULL, NULL))
        ;
    return ssim_net_now(net);
}

/*
 * The time the flows of `in` take alone, step after step, latencies left out.  Steps with the
 * same flows take the same time, so a ring's steps are timed once and a hierarchical
 * all-reduce's two kinds of step once each; trees and chains (whose steps differ as their
 * pipelines fill and drain) and one-step algorithms are timed step by step.
 */
static SsimTime alone_flows(Comm *cm, const Inst *in, const Plan *p)
{
    gboolean ring = in->algo == SSIM_NET_ALGO_RING && in->coll != SSIM_COLL_BROADCAST &&
                    in->coll != SSIM_COLL_REDUCE;
    if (ring)
        return (SsimTime)in->n_steps * alone_step(cm, in, p, 0);
    if (in->algo == SSIM_NET_ALGO_HIERARCHICAL) {
        guint32 intra = p->k - 1, inter = 2 * (p->n_nodes - 1);
        return (SsimTime)(2 * intra) * alone_step(cm, in, p, 0) +
               (SsimTime)inter * alone_step(cm, in, p, intra);
    }
    SsimTime t = 0;
    for (guint32 s = 0; s < in->n_steps; s++)
        t += alone_step(cm, in, p, s);
    return t;
}

static SsimTime alone_alphas(const Comm *cm, const Inst *in, const Plan *p)
{
    SsimTime t = 0;
    for (guint32 s = 0; s < in->n_steps; s++)
        t += step_alpha(cm, in, p, s);
    return t;
}

static guint alone_hash(gconstpointer k)
{
    const guint8 *b = k;
    guint32 h = 2166136261u;
    for (gsize i = 0; i < sizeof(AloneKey); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean alone_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(AloneKey)) == 0;
}

/*
 * Calibrates `in` (fresh from comm_start, step 0) when the calibration answers for it, and
 * returns its uncontended time.  Times alone are cached per (group, kind, algorithm, bytes) for
 * the graph: a lowered iteration repeats a few shapes thousands of times.
 */
static SsimTime prepare_inst(Comm *cm, Inst *in, const Plan *p, guint32 first_op)
{
    AloneKey key;
    memset(&key, 0, sizeof key);
    key.bytes = in->bytes;
    key.group = in->group;
    key.src = in->src;
    key.dst = in->dst;
    key.algo = in->algo;
    key.coll = in->coll;
    AloneVal *v = g_hash_table_lookup(cm->alone, &key);
    if (v == NULL) {
        v = g_new0(AloneVal, 1);
        v->flows = alone_flows(cm, in, p);
        v->nominal = v->flows + alone_alphas(cm, in, p);
        v->total = v->latency = -1;
        g_hash_table_insert(cm->alone, g_memdup2(&key, sizeof key), v);
    }
    SsimTime total = 0, latency = 0;
    if (cm->cal.lookup == NULL) {
        return v->nominal;
    }
    guint n = in->algo == ALGO_P2P ? 2 : p->n;
    guint gpn = ssim_net_gpus_per_node(cm->net);
    guint per_node = in->algo == ALGO_P2P ? (in->src / gpn == in->dst / gpn ? 2 : 1)
                     : p->n_nodes <= 1    ? p->n
                     : p->k > 0           ? p->k
                                          : (p->n + p->n_nodes - 1) / p->n_nodes;
    SsimCollKind kind = in->algo == ALGO_P2P ? SSIM_COLL_N : (SsimCollKind)in->coll;
    SsimNetAlgorithm algo = in->algo == ALGO_P2P ? SSIM_NET_ALGO_AUTO : in->algo;
    if (!cm->cal.lookup(cm->cal.data, cm->graph, first_op, kind, algo, n, per_node, in->bytes,
                        &total, &latency) ||
        v->flows <= 0)
        return v->nominal;
    latency = CLAMP(latency, 0, total);
    in->calibrated = TRUE;
    in->lat_total = latency;
    if (v->total != total || v->latency != latency) {
        v->total = total;
        v->latency = latency;
        v->scale = (double)(total - latency) / (double)v->flows;
        in->scale = v->scale;
        v->calibrated = latency + alone_flows(cm, in, p);
    }
    in->scale = v->scale;
    return v->calibrated;
}

/* --- Engine glue ------------------------------------------------------------------------ */

static void ensure_wake(Comm *cm)
{
    SsimTime next = ssim_net_next_completion(cm->net);
    if (next != SSIM_TIME_NEVER && next < cm->wake.at)
        ssim_engine_schedule_alarm(cm->engine, &cm->wake, next, cm->ev_wake, 0, 0);
}

static void inst_free(Comm *cm, guint32 id)
{
    cm->insts[id].next_free = cm->free_head;
    cm->free_head = id;
}

/* The current step of `id` is done: schedule the next one, or finish the match. */
static void step_done(Comm *cm, guint32 id)
{
    Inst *in = &cm->insts[id];
    in->step++;
    if (in->step >= in->n_steps) {
        guint32 match = in->match, instance = in->instance;
        gboolean load_only = in->load_only;
        inst_free(cm, id);
        if (load_only)
            return;
        if (instance != SSIM_NONE)
            ssim_run_finish_instance(cm->run, match, instance);
        else
            ssim_run_finish_match(cm->run, match);
        return;
    }
    const Plan *p = in->group == SSIM_NONE ? NULL : plan_at(cm, in->group);
    SsimTime at = ssim_engine_now(cm->engine) + step_alpha(cm, in, p, in->step);
    ssim_engine_schedule(cm->engine, at, cm->ev_step, id, 0);
}

static void on_step(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)
{
    (void)b;
    Comm *cm = user_data;
    guint32 id = (guint32)a;
    ssim_net_advance(cm->net, ssim_engine_now(engine));
    guint32 n = start_step(cm, id);
    cm->insts[id].pending = n;
    if (n == 0)
        step_done(cm, id);
    ensure_wake(cm);
}

static void on_wake(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)
{
    (void)a;
    (void)b;
    Comm *cm = user_data;
    SsimTime now = ssim_engine_now(engine);
    if (!ssim_engine_ticket_take(engine, &cm->wake))
        return; /* superseded by an earlier wake-up */
    guint64 owner;
    while (ssim_net_pop_completion(cm->net, now, &owner, NULL)) {
        Inst *in = &cm->insts[owner];
        if (--in->pending == 0)
            step_done(cm, (guint32)owner);
    }
    ensure_wake(cm);
}

static void comm_reset(Comm *cm)
{
    for (guint i = 0; i < cm->n_plans; i++)
        plan_clear(&cm->plans[i]);
    g_free(cm->plans);
    cm->plans = NULL;
    cm->n_plans = 0;
    for (guint i = 0; cm->copy_plans != NULL && i < cm->copy_plans->len; i++)
        plan_clear(&g_array_index(cm->copy_plans, Plan, i));
    if (cm->copy_plans != NULL)
        g_array_set_size(cm->copy_plans, 0);
    g_clear_pointer(&cm->copy_first, g_free);
    g_clear_pointer(&cm->copy_n, g_free);
    g_clear_pointer(&cm->copy_plan, g_free);
    cm->n_insts = 0;
    cm->free_head = SSIM_NONE;
    cm->graph = NULL;
    cm->run = NULL;
    cm->engine = NULL;
    g_hash_table_remove_all(cm->alone);
}

static void comm_free(gpointer data)
{
    Comm *cm = data;
    comm_reset(cm);
    g_free(cm->insts);
    if (cm->scratch != NULL)
        g_array_free(cm->scratch, TRUE);
    g_hash_table_destroy(cm->alone);
    g_array_free(cm->uncontended, TRUE);
    ssim_net_free(cm->shadow);
    if (cm->copy_plans != NULL)
        g_array_free(cm->copy_plans, TRUE);
    g_free(cm);
}

static inline guint32 gpu_of(const Comm *cm, guint32 rank)
{
    return cm->map.rank_map != NULL && rank < cm->map.n_ranks ? cm->map.rank_map[rank] : rank;
}

static gboolean comm_attach(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *graph,
                            GError **error)
{
    Comm *cm = data;
    comm_reset(cm);
    guint n_gpus = ssim_net_n_gpus(cm->net), n_ranks = ssim_graph_n_ranks(graph);
    if (cm->map.rank_map == NULL && n_ranks > n_gpus) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "network: the graph has %u ranks but the cluster only %u GPUs", n_ranks,
                    n_gpus);
        return FALSE;
    }
    for (guint32 r = 0; cm->map.rank_map != NULL && r < n_ranks; r++)
        if (r >= cm->map.n_ranks || cm->map.rank_map[r] >= n_gpus) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "network: graph rank %u has no GPU in the rank map (the cluster has "
                        "%u GPUs)",
                        r, n_gpus);
            return FALSE;
        }
    ssim_net_reset(cm->net);
    cm->engine = engine;
    cm->run = run;
    cm->graph = graph;
    cm->n_plans = ssim_graph_n_groups(graph);
    cm->plans = g_new0(Plan, MAX(cm->n_plans, 1u));
    cm->copy_first = g_new(guint32, MAX(cm->n_plans, 1u));
    cm->copy_n = g_new0(guint32, MAX(cm->n_plans, 1u));
    for (guint i = 0; i < cm->n_plans; i++)
        cm->copy_first[i] = SSIM_NONE;
    if (cm->map.n_copies > 1 && cm->map.copy_gpu != NULL)
        cm->copy_plan = g_new0(guint32, (gsize)MAX(cm->n_plans, 1u) * cm->map.n_copies);
    cm->wake = (SsimEngineTicket)SSIM_ENGINE_TICKET_INIT;
    g_array_set_size(cm->uncontended, 0);
    g_array_set_size(cm->uncontended, ssim_graph_n_matches(graph));
    cm->ev_step = ssim_engine_register(engine, on_step, cm);
    cm->ev_wake = ssim_engine_register(engine, on_wake, cm);
    return TRUE;
}

static void comm_detach(gpointer data, SsimRun *run)
{
    (void)run;
    comm_reset(data);
}

static guint32 inst_alloc(Comm *cm)
{
    if (cm->free_head != SSIM_NONE) {
        guint32 id = cm->free_head;
        cm->free_head = cm->insts[id].next_free;
        return id;
    }
    if (cm->n_insts == cm->cap_insts) {
        cm->cap_insts = cm->cap_insts ? cm->cap_insts * 2 : 64;
        cm->insts = g_renew(Inst, cm->insts, cm->cap_insts);
    }
    return cm->n_insts++;
}

/* Fills the algorithm, chunks and steps of `in`, a collective of `coll` and in->bytes on plan
 * `plan_id`; FALSE when it moves nothing (one member, or no bytes). */
static gboolean setup_collective(Comm *cm, Inst *in, guint32 plan_id)
{
    Plan *p = plan_at(cm, plan_id);
    if (p->n <= 1 || in->bytes == 0)
        return FALSE;
    in->group = plan_id;
    in->algo = (guint8)choose_plan(p, cm->net, in->coll, in->bytes);
    switch (in->algo) {
    case SSIM_NET_ALGO_TREE:
        if (!p->has_tree)
            plan_build_tree(p, cm->net);
        in->chunks = chunks_for(cm->net, in->bytes / 2);
        in->n_steps = 2 * (in->chunks + p->tree_h - 1);
        break;
    case SSIM_NET_ALGO_HIERARCHICAL:
        in->n_steps = 2 * (p->k - 1) + 2 * (p->n_nodes - 1);
        break;
    case SSIM_NET_ALGO_DIRECT:
        in->n_steps = 1;
        break;
    default:
        if (in->coll == SSIM_COLL_PERMUTE) {
            in->n_steps = 1;
        } else if (in->coll == SSIM_COLL_BROADCAST || in->coll == SSIM_COLL_REDUCE) {
            in->chunks = chunks_for(cm->net, in->bytes);
            in->n_steps = in->chunks + p->n - 2;
        } else {
            in->n_steps = (in->coll == SSIM_COLL_ALLREDUCE ? 2 : 1) * (p->n - 1);
        }
    }
    return TRUE;
}

/* Starts instance `in`: its first step after the step's latency. */
static void launch(Comm *cm, const Inst *in)
{
    guint32 id = inst_alloc(cm);
    cm->insts[id] = *in;
    const Plan *p = in->group == SSIM_NONE ? NULL : plan_at(cm, in->group);
    SsimTime at = ssim_engine_now(cm->engine) + step_alpha(cm, &cm->insts[id], p, 0);
    ssim_engine_schedule(cm->engine, at, cm->ev_step, id, 0);
}

static gint cmp_ranks(const guint32 *a, const guint32 *b, guint n)
{
    return memcmp(a, b, n * sizeof *a);
}

/* The distinct copies of graph group `g` (built), as plans appended to copy_plans. */
static void build_copies(Comm *cm, guint32 g)
{
    guint n = cm->plans[g].n;
    guint32 *plan_of = cm->copy_plan + (gsize)g * cm->map.n_copies;
    cm->copy_first[g] = cm->copy_plans->len;
    cm->copy_n[g] = 0;
    for (guint c = 0; c < cm->map.n_copies; c++)
        plan_of[c] = g;
    if (n <= 1)
        return;
    g_autofree guint32 *ranks = g_new(guint32, n);
    g_autofree guint32 *sorted = g_new(guint32, n);
    for (guint c = 1; c < cm->map.n_copies; c++) {
        for (guint i = 0; i < n; i++) {
            ranks[i] = cm->map.copy_gpu(cm->map.data, cm->plans[g].order[i], c);
            g_return_if_fail(ranks[i] < ssim_net_n_gpus(cm->net));
        }
        memcpy(sorted, ranks, n * sizeof *ranks);
        qsort(sorted, n, sizeof *sorted, ssim_cmp_u32);
        gboolean same = cmp_ranks(sorted, cm->plans[g].sorted, n) == 0;
        for (guint k = 0; !same && k < cm->copy_n[g]; k++)
            if (cmp_ranks(sorted, plan_at(cm, cm->n_plans + cm->copy_first[g] + k)->sorted, n) ==
                0) {
                same = TRUE;
                plan_of[c] = cm->n_plans + cm->copy_first[g] + k;
            }
        if (same)
            continue;
        Plan copy = {0};
        plan_build(&copy, cm->net, ranks, n);
        g_array_append_val(cm->copy_plans, copy);
        plan_of[c] = cm->n_plans + cm->copy_first[g] + cm->copy_n[g];
        cm->copy_n[g]++;
    }
}

/* Starts, as load only, the copies of the representative's instance `in` (SsimNetMapping). */
static void launch_copies(Comm *cm, const Inst *in)
{
    Inst copy = *in;
    copy.load_only = 1;
    if (in->algo == ALGO_P2P) {
        for (guint c = 1; c < cm->map.n_copies; c++) {
            copy.src = cm->map.copy_gpu(cm->map.data, in->src, c);
            copy.dst = cm->map.copy_gpu(cm->map.data, in->dst, c);
            g_return_if_fail(copy.src < ssim_net_n_gpus(cm->net) &&
                             copy.dst < ssim_net_n_gpus(cm->net));
            launch(cm, &copy);
        }
        return;
    }
    guint32 g = in->group;
    if (cm->copy_first[g] == SSIM_NONE)
        build_copies(cm, g);
    for (guint32 k = 0; k < cm->copy_n[g]; k++) {
        copy.chunks = 0;
        if (setup_collective(cm, &copy, cm->n_plans + cm->copy_first[g] + k))
            launch(cm, &copy);
    }
}

/*
 * Starts copy `copy` of `match` (copy 0: the graph's own GPUs), recording its time alone under
 * `slot` of `uncontended`.  A replicated run's `instance` is finished on its own; otherwise
 * (SSIM_NONE) the match's copies are started as load only with it.
 */
static SsimTime start_copy(Comm *cm, guint32 match, guint32 instance, guint copy)
{
    const guint32 *mfirst, *mops, *expected;
    ssim_graph_match_csr(cm->graph, &mfirst, &mops, &expected);
    const SsimOp *op = ssim_graph_op(cm->graph, mops[mfirst[match]]);
    Inst in = {.match = match,
               .instance = instance,
               .coll = op->coll,
               .group = SSIM_NONE,
               .bytes = op->bytes};
    gboolean copied = cm->map.n_copies > 1 && cm->map.copy_gpu != NULL;
    g_return_val_if_fail(copy == 0 || (copied && copy < cm->map.n_copies), 0);
    ssim_net_count_collective(cm->net);
    if (op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV) {
        in.algo = ALGO_P2P;
        in.src = gpu_of(cm, op->kind == SSIM_OP_SEND ? op->rank : op->peer);
        in.dst = gpu_of(cm, op->kind == SSIM_OP_SEND ? op->peer : op->rank);
        if (copy > 0) {
            in.src = cm->map.copy_gpu(cm->map.data, in.src, copy);
            in.dst = cm->map.copy_gpu(cm->map.data, in.dst, copy);
            g_return_val_if_fail(
                in.src < ssim_net_n_gpus(cm->net) && in.dst < ssim_net_n_gpus(cm->net), 0);
        }
        in.n_steps = 1;
    } else if (op->kind == SSIM_OP_COLLECTIVE && op->group < cm->n_plans) {
        Plan *p = &cm->plans[op->group];
        if (!p->built) {
            guint n = 0;
            const guint32 *ranks = cm->map.group_members != NULL
                                       ? cm->map.group_members(cm->map.data, op->group, &n)
                                       : NULL;
            if (ranks == NULL) {
                ranks = ssim_graph_group_ranks(cm->graph, op->group, &n);
                g_array_set_size(cm->scratch, n);
                for (guint i = 0; i < n; i++)
                    g_array_index(cm->scratch, guint32, i) = gpu_of(cm, ranks[i]);
                ranks = (const guint32 *)(void *)cm->scratch->data;
            }
            for (guint i = 0; i < n; i++)
                g_return_val_if_fail(ranks[i] < ssim_net_n_gpus(cm->net), 0);
            plan_build(p, cm->net, ranks, n);
        }
        guint32 plan = op->group;
        if (copy > 0) {
            if (cm->copy_first[op->group] == SSIM_NONE)
                build_copies(cm, op->group);
            plan = cm->copy_plan[(gsize)op->group * cm->map.n_copies + copy];
        }
        if (!setup_collective(cm, &in, plan))
            return 0;
    } else {
        return 0; /* barriers and the like carry no data */
    }
    in.scale = 1.0;
    const Plan *p = in.group == SSIM_NONE ? NULL : plan_at(cm, in.group);
    guint32 slot = instance == SSIM_NONE ? match : instance;
    if (slot >= cm->uncontended->len)
        g_array_set_size(cm->uncontended, MAX(slot + 1, 2 * cm->uncontended->len));
    g_array_index(cm->uncontended, SsimTime, slot) = prepare_inst(cm, &in, p, mops[mfirst[match]]);
    launch(cm, &in);
    /* The copies carry the representative's calibration (they are the same collective). */
    if (instance == SSIM_NONE && copied)
        launch_copies(cm, &in);
    return -1;
}

static SsimTime comm_start(gpointer data, SsimRun *run, guint32 match)
{
    (void)run;
    return start_copy(data, match, SSIM_NONE, 0);
}

static SsimTime comm_start_copy(gpointer data, SsimRun *run, guint32 match, guint32 instance,
                                guint copy)
{
    (void)run;
    return start_copy(data, match, instance, copy);
}

SsimCommModel ssim_net_comm_model(SsimNet *net)
{
    gpointer *slot = ssim_net_comm_slot(net, comm_free);
    if (*slot == NULL) {
        Comm *cm = g_new0(Comm, 1);
        cm->net = net;
        cm->free_head = SSIM_NONE;
        cm->scratch = g_array_new(FALSE, FALSE, sizeof(guint32));
        cm->alone = g_hash_table_new_full(alone_hash, alone_equal, g_free, g_free);
        cm->uncontended = g_array_new(FALSE, TRUE, sizeof(SsimTime));
        cm->copy_plans = g_array_new(FALSE, FALSE, sizeof(Plan));
        *slot = cm;
    }
    return (SsimCommModel){.data = *slot,
                           .attach = comm_attach,
                           .start = comm_start,
                           .detach = comm_detach,
                           .start_copy = comm_start_copy};
}

void ssim_net_set_mapping(SsimNet *net, const SsimNetMapping *mapping)
{
    g_return_if_fail(net != NULL);
    ssim_net_comm_model(net);
    GDestroyNotify unused = comm_free;
    Comm *cm = *ssim_net_comm_slot(net, unused);
    cm->map = mapping != NULL ? *mapping : (SsimNetMapping){0};
}

void ssim_net_set_calibration(SsimNet *net, const SsimNetCalibration *calibration)
{
    g_return_if_fail(net != NULL);
    ssim_net_comm_model(net);
    Comm *cm = *ssim_net_comm_slot(net, comm_free);
    cm->cal = calibration != NULL ? *calibration : (SsimNetCalibration){0};
}

const SsimTime *ssim_net_uncontended(SsimNet *net, guint *n_matches)
{
    g_return_val_if_fail(net != NULL, NULL);
    ssim_net_comm_model(net);
    Comm *cm = *ssim_net_comm_slot(net, comm_free);
    if (n_matches != NULL)
        *n_matches = cm->uncontended->len;
    return cm->uncontended->len > 0 ? (const SsimTime *)(void *)cm->uncontended->data : NULL;
}
