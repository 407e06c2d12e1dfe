/*
 * Which algorithm a collective runs: ssim_coll_choose() for the comm model, ssim_net_choose()
 * and ssim_net_estimate() for callers outside it, and the alpha-beta estimates the `auto`
 * setting compares.
 *
 * The choice depends only on the collective's kind and bytes, the configured setting
 * (SsimNetConfig.algorithm, the cluster's [network] algorithm by default) and its layout, never
 * on the network's state, so all instances of one shape on one layout run the same algorithm.
 * The user's words (auto, ring, tree, hierarchical; direct for all-to-all) become the algorithms
 * of collective-private.h here, and only here: `ring` means chain for broadcast and reduce and
 * permute for collective-permute, and a setting that does not fit the group falls back to ring.
 * The way back, an algorithm's user-visible name, is its entry's `reported`.
 */
#include "src/net/collective-private.h"
#include "src/net/net-private.h"

/* What the `ring` setting means for `kind`: a pipeline for broadcast and reduce, the group-order
 * ring for collective-permute, rings for the others. */
static Algo ring_like(SsimCollKind kind)
{
    if (kind == SSIM_COLL_PERMUTE)
        return ALGO_PERMUTE;
    if (kind == SSIM_COLL_BROADCAST || kind == SSIM_COLL_REDUCE)
        return ALGO_CHAIN;
    return ALGO_RING;
}

/* The algorithm a user-visible `setting` names for `kind` (auto: the ring family). */
static Algo from_setting(SsimCollKind kind, SsimNetAlgorithm setting)
{
    switch (setting) {
    case SSIM_NET_ALGO_TREE:
        return ALGO_TREE;
    case SSIM_NET_ALGO_HIERARCHICAL:
        return ALGO_HIERARCHICAL;
    case SSIM_NET_ALGO_DIRECT:
        return ALGO_DIRECT;
    default:
        return ring_like(kind);
    }
}

static gboolean fits(const Layout *l, Algo a)
{
    return ssim_coll_algos[a]->fits == NULL || ssim_coll_algos[a]->fits(l);
}

/* The alpha-beta time, in seconds, of a collective of `kind` and `bytes` with `a` on `l`. */
static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, Algo a, guint64 bytes)
{
    if (l->n <= 1 || bytes == 0)
        return 0.0;
    return ssim_coll_algos[a]->estimate(l, net, kind, bytes);
}

/*
 * The algorithm of a collective of `kind` and `bytes` on `l`: all-to-all is direct; the kinds
 * other than all-reduce, and a group of one, take the ring family; an all-reduce takes the
 * configured algorithm when it fits the layout (AlgoClass.fits; else ring), and under `auto` a
 * ring inside one node and across nodes the fastest estimate of ring, tree and, on nodes with
 * NVLink SHARP (NCCL's NVLS trees, cluster.h), hierarchical (ties: the earlier of them).
 */
Algo ssim_coll_choose(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    if (kind == SSIM_COLL_ALLTOALL)
        return ALGO_DIRECT;
    if (kind != SSIM_COLL_ALLREDUCE || l->n <= 1)
        return ring_like(kind);
    SsimNetAlgorithm setting = ssim_net_config(net)->algorithm;
    if (setting == SSIM_NET_ALGO_RING || setting == SSIM_NET_ALGO_TREE ||
        setting == SSIM_NET_ALGO_HIERARCHICAL) {
        Algo a = from_setting(kind, setting);
        return fits(l, a) ? a : ALGO_RING;
    }
    if (l->n_nodes <= 1)
        return ALGO_RING;
    static const Algo candidates[] = {ALGO_RING, ALGO_TREE, ALGO_HIERARCHICAL};
    gboolean nvls = ssim_net_topo(net)->sharp; /* hierarchical: NCCL's NVLS trees only */
    Algo best = candidates[0];
    double t_best = estimate(l, net, kind, best, bytes);
    for (guint i = 1; i < G_N_ELEMENTS(candidates); i++) {
        if (!fits(l, candidates[i]) || (candidates[i] == ALGO_HIERARCHICAL && !nvls))
            continue;
        double t = estimate(l, net, kind, candidates[i], bytes);
        if (t < t_best) {
            best = candidates[i];
            t_best = t;
        }
    }
    return best;
}

SsimNetAlgorithm ssim_net_choose(SsimNet *net, SsimCollKind kind, const guint32 *ranks, guint n,
                                 guint64 bytes)
{
    g_return_val_if_fail(net != NULL && ranks != NULL && n > 0, SSIM_NET_ALGO_RING);
    Layout l = {0};
    ssim_coll_layout_build(&l, net, ranks, n);
    Algo a = ssim_coll_choose(&l, net, kind, bytes);
    ssim_coll_layout_clear(&l);
    return ssim_coll_algos[a]->reported;
}

SsimTime ssim_net_estimate(SsimNet *net, SsimCollKind kind, SsimNetAlgorithm algorithm,
                           const guint32 *ranks, guint n, guint64 bytes)
{
    g_return_val_if_fail(net != NULL && ranks != NULL && n > 0, 0);
    Layout l = {0};
    ssim_coll_layout_build(&l, net, ranks, n);
    double t = estimate(&l, net, kind, from_setting(kind, algorithm), bytes);
    ssim_coll_layout_clear(&l);
    return ssim_time_from_seconds(t);
}
