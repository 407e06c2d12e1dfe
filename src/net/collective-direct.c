/*
 * Direct: all-to-all in one step, every rank sends S/n to each of the others (n (n-1) flows).
 */
#include "src/net/collective-private.h"

static void measure(Layout *l, const SsimNet *net)
{
    for (guint i = 1; i < l->n; i++)
        l->a_direct = MAX(l->a_direct, MAX(coll_latency(net, l->sorted[0], l->sorted[i]),
                                           coll_latency(net, l->sorted[i], l->sorted[0])));
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    (void)kind;
    double S = (double)bytes, n = l->n, ov = coll_overhead_s(net);
    return ssim_time_to_seconds(l->a_direct) + ov + (n - 1) / n * S / coll_ring_bandwidth(l);
}

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    (void)l;
    (void)net;
    (void)in;
    return 1;
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)net;
    (void)in;
    (void)s;
    return l->a_direct;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    guint64 b = coll_div_up(in->bytes, l->n);
    for (guint i = 0; i < l->n; i++)
        for (guint j = 0; j < l->n; j++)
            if (i != j)
                flow_start(sink, l->sorted[i], l->sorted[j], b);
}

const AlgoClass ssim_coll_direct = {.name = "direct",
                                    .reported = SSIM_NET_ALGO_DIRECT,
                                    .measure = measure,
                                    .estimate = estimate,
                                    .steps = steps,
                                    .latency = latency,
                                    .flows = flows};
