/*
 * Chain: broadcast and reduce as a pipeline along the sorted members in C chunks of S/C
 * (C + n - 2 steps), rooted at the first member; what the `ring` setting means for them.
 *
 * At step s, edge e (from member e to e + 1 for a broadcast, the mirror image towards the first
 * member for a reduce) carries chunk s - e when there is one, so the pipeline fills and drains
 * and its steps differ: each is timed alone on its own.
 */
#include "src/net/collective-private.h"

static void measure(Layout *l, const SsimNet *net)
{
    for (guint i = 0; i + 1 < l->n; i++)
        l->a_chain = MAX(l->a_chain, coll_latency(net, l->sorted[i], l->sorted[i + 1]));
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    (void)kind;
    double S = (double)bytes, n = l->n, ov = coll_overhead_s(net);
    double C = coll_chunks(net, bytes);
    return (C + n - 2) * (ssim_time_to_seconds(l->a_chain) + ov + S / C / l->b_intra);
}

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    in->chunks = coll_chunks(net, in->bytes);
    return in->chunks + l->n - 2;
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)net;
    (void)in;
    (void)s;
    return l->a_chain;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    guint32 s = in->step;
    guint64 b = coll_div_up(in->bytes, in->chunks);
    for (guint e = 0; e + 1 < l->n; e++) {
        if (s < e || s - e >= in->chunks)
            continue;
        if (in->coll == SSIM_COLL_BROADCAST)
            flow_start(sink, l->sorted[e], l->sorted[e + 1], b);
        else
            flow_start(sink, l->sorted[l->n - 1 - e], l->sorted[l->n - 2 - e], b);
    }
}

const AlgoClass ssim_coll_chain = {.name = "chain",
                                   .reported = SSIM_NET_ALGO_RING,
                                   .measure = measure,
                                   .estimate = estimate,
                                   .steps = steps,
                                   .latency = latency,
                                   .flows = flows};
