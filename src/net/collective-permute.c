/*
 * Permute: XLA's collective-permute in one step, every member sends S to the next member in
 * group order (cyclically); what the `ring` setting means for it.  Unlike the other algorithms it
 * follows the group's own order (Layout.order), not the sorted members.
 */
#include "src/net/collective-private.h"

static void measure(Layout *l, const SsimNet *net)
{
    for (guint i = 0; i < l->n; i++)
        l->a_permute = MAX(l->a_permute, coll_latency(net, l->order[i], l->order[(i + 1) % l->n]));
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    (void)kind;
    double S = (double)bytes, ov = coll_overhead_s(net);
    return ssim_time_to_seconds(l->a_permute) + ov + S / MIN(l->b_intra, l->b_inter);
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
    return l->a_permute;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    for (guint i = 0; i < l->n; i++)
        flow_start(sink, l->order[i], l->order[(i + 1) % l->n], in->bytes);
}

const AlgoClass ssim_coll_permute = {.name = "permute",
                                     .reported = SSIM_NET_ALGO_RING,
                                     .measure = measure,
                                     .estimate = estimate,
                                     .steps = steps,
                                     .latency = latency,
                                     .flows = flows};
