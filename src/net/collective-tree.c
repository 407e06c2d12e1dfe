/*
 * Tree: all-reduce on NCCL's double binary tree over the sorted members.  Each tree reduces then
 * broadcasts S/2 pipelined in C chunks, a node forwarding chunk j at step j + its height (reduce)
 * or its parent's depth (broadcast): 2 (C + H - 1) steps for trees of height H.
 *
 * The two trees (NCCL's ncclGetBtree and ncclGetDtree) are built into the layout on the tree's
 * first use only (has_tree), since most groups never run one.  Invariants once built: parent[t]
 * is -1 at the root of tree t only; height[t] of a node is the longest path down to a leaf and
 * depth[t] the path up to the root; tree_h is the larger root height; a_tree the largest latency
 * over the trees' edges, either way.  Steps differ as the pipelines fill and drain, so each is
 * timed alone on its own.
 */
#include "src/net/collective-private.h"

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

/* Builds both trees of `l` (not yet built) and measures their latency. */
static void tree_build(Layout *l, const SsimNet *net)
{
    guint n = l->n;
    l->tree_h = 0;
    l->a_tree = 0;
    for (int t = 0; t < 2; t++) {
        l->parent[t] = g_new(gint32, n);
        l->height[t] = g_new0(guint16, n);
        l->depth[t] = g_new0(guint16, n);
        for (guint r = 0; r < n; r++)
            l->parent[t][r] =
                t == 0 ? btree_parent((gint32)n, (gint32)r) : dtree_parent((gint32)n, (gint32)r);
        for (guint r = 0; r < n; r++) {
            guint d = 0, h = 0;
            for (gint32 x = l->parent[t][r]; x >= 0; x = l->parent[t][x])
                d++;
            l->depth[t][r] = (guint16)d;
            for (gint32 x = l->parent[t][r]; x >= 0; x = l->parent[t][x]) {
                h++;
                if (l->height[t][x] >= h)
                    break; /* its ancestors were raised when it was */
                l->height[t][x] = (guint16)h;
            }
            if (l->parent[t][r] >= 0) {
                guint32 a = l->sorted[r], b = l->sorted[l->parent[t][r]];
                l->a_tree = MAX(l->a_tree, MAX(coll_latency(net, a, b), coll_latency(net, b, a)));
            }
        }
        for (guint r = 0; r < n; r++)
            if (l->parent[t][r] < 0)
                l->tree_h = MAX(l->tree_h, l->height[t][r]);
    }
    l->has_tree = TRUE;
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    (void)kind;
    double S = (double)bytes, ov = coll_overhead_s(net);
    if (!l->has_tree)
        tree_build(l, net);
    double C = coll_chunks(net, bytes / 2), steps = 2 * (C + l->tree_h - 1);
    double b = l->n_nodes > 1 ? l->b_inter : l->b_intra;
    return steps * (ssim_time_to_seconds(l->a_tree) + ov + S / (C * b));
}

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    if (!l->has_tree)
        tree_build(l, net);
    in->chunks = coll_chunks(net, in->bytes / 2);
    return 2 * (in->chunks + l->tree_h - 1);
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)net;
    (void)in;
    (void)s;
    return l->a_tree;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    guint32 s = in->step, half = in->chunks + l->tree_h - 1;
    gboolean reduce = s < half;
    guint32 t0 = reduce ? s : s - half;
    guint64 b = coll_div_up(coll_div_up(in->bytes, 2), in->chunks);
    for (int t = 0; t < 2; t++)
        for (guint r = 0; r < l->n; r++) {
            gint32 up = l->parent[t][r];
            if (up < 0)
                continue;
            guint32 lag = reduce ? l->height[t][r] : l->depth[t][up];
            if (t0 < lag || t0 - lag >= in->chunks)
                continue;
            if (reduce)
                flow_start(sink, l->sorted[r], l->sorted[up], b);
            else
                flow_start(sink, l->sorted[up], l->sorted[r], b);
        }
}

const AlgoClass ssim_coll_tree = {.name = "tree",
                                  .reported = SSIM_NET_ALGO_TREE,
                                  .estimate = estimate,
                                  .steps = steps,
                                  .latency = latency,
                                  .flows = flows};
