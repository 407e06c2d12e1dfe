/*
 * P2p: a send/receive pair, one step of one flow of the send's bytes from `src` to `dst`.  It has
 * no layout (the comm model passes NULL) and is never chosen for a collective: a send or a
 * receive op picks it.  The calibration sees it as kind SSIM_COLL_N over two GPUs, with no
 * algorithm (SSIM_NET_ALGO_AUTO), as net.h states.
 */
#include "src/net/collective-private.h"

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    (void)l;
    (void)net;
    (void)in;
    return 1;
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)l;
    (void)s;
    return coll_latency(net, in->src, in->dst);
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    (void)l;
    flow_start(sink, in->src, in->dst, in->bytes);
}

static void query(const Layout *l, const SsimNet *net, const Inst *in, CalibQuery *q)
{
    (void)l;
    guint gpn = ssim_net_gpus_per_node(net);
    q->kind = SSIM_COLL_N;
    q->algorithm = SSIM_NET_ALGO_AUTO;
    q->n = 2;
    q->per_node = in->src / gpn == in->dst / gpn ? 2 : 1;
}

const AlgoClass ssim_coll_p2p = {.name = "p2p",
                                 .reported = SSIM_NET_ALGO_AUTO,
                                 .steps = steps,
                                 .latency = latency,
                                 .flows = flows,
                                 .query = query};
