/*
 * Ring: all-reduce in 2(n-1) steps (reduce-scatter then all-gather), all-gather and
 * reduce-scatter in n-1 steps; in each step every rank sends S/n to its successor.  Across nodes
 * a uniform group runs k rings (NCCL's channels; fewer where the cluster's ring_nics caps them),
 * ring c entering each node at its member (first + c) % k (Layout.first), each carrying
 * S/(channels n) per step, so every NIC carries one ring as NCCL's rail-aligned rings do.
 *
 * S is the op's bytes, n the members sorted by rank (coll_ring_edge gives the edges).  Every
 * step starts the same flows, so one step timed alone stands for all of them.
 */
#include "src/net/collective-private.h"

static void measure(Layout *l, const SsimNet *net)
{
    for (guint c = 0; c < l->channels; c++)
        for (guint i = 0; i < l->n; i++) {
            guint32 s, d;
            coll_ring_edge(l, c, i, &s, &d);
            l->a_ring = MAX(l->a_ring, coll_latency(net, s, d));
        }
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    double S = (double)bytes, n = l->n;
    double a_ring = ssim_time_to_seconds(l->a_ring) + coll_overhead_s(net);
    double steps = kind == SSIM_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    return steps * (a_ring + S / n / coll_ring_bandwidth(l));
}

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    (void)net;
    return (in->coll == SSIM_COLL_ALLREDUCE ? 2 : 1) * (l->n - 1);
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)net;
    (void)in;
    (void)s;
    return l->a_ring;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    guint64 b = coll_div_up(in->bytes, (guint64)l->n * l->channels);
    for (guint c = 0; c < l->channels; c++)
        for (guint i = 0; i < l->n; i++) {
            guint32 a, d;
            coll_ring_edge(l, c, i, &a, &d);
            flow_start(sink, a, d, b);
        }
}

static guint alike(const Layout *l, const Inst *in, AlikeSteps out[2])
{
    (void)l;
    out[0] = (AlikeSteps){.like = 0, .times = in->n_steps};
    return 1;
}

const AlgoClass ssim_coll_ring = {.name = "ring",
                                  .reported = SSIM_NET_ALGO_RING,
                                  .measure = measure,
                                  .estimate = estimate,
                                  .steps = steps,
                                  .latency = latency,
                                  .flows = flows,
                                  .alike = alike};
