/*
 * Hierarchical: all-reduce over a uniform multi-node group (N nodes of k members, k > 1, N > 1;
 * fits() refuses any other).  Reduce-scatter on each node's ring (k-1 steps of S/k over NVLink),
 * all-reduce of S/k on k rings of same-rail members across the N nodes (2(N-1) steps of
 * S/(kN)), all-gather on each node (k-1 steps of S/k).  Where the cluster puts a communicator's
 * channels on ring_nics < k NICs (l->channels, collective.c), the k shares leave each node
 * through `channels` of its members (from l->first on): that many rings of S/(channels N) a
 * step.
 *
 * Steps come in two kinds, the intra-node steps (the first and last k-1) and the inter-node ones
 * between them; the steps of a kind start the same flows, so one of each is timed alone.
 */
#include "src/net/collective-private.h"

static gboolean fits(const Layout *l)
{
    return l->k > 1 && l->n_nodes > 1;
}

static void measure(Layout *l, const SsimNet *net)
{
    guint k = l->k;
    if (k == 0)
        return;
    for (guint j = 0; j < l->n_nodes; j++)
        for (guint q = 0; q < k; q++) {
            guint32 s = l->sorted[j * k + q];
            l->a_intra = MAX(l->a_intra, coll_latency(net, s, l->sorted[j * k + (q + 1) % k]));
            l->a_inter =
                MAX(l->a_inter, coll_latency(net, s, l->sorted[((j + 1) % l->n_nodes) * k + q]));
        }
}

static double estimate(Layout *l, const SsimNet *net, SsimCollKind kind, guint64 bytes)
{
    (void)kind;
    double S = (double)bytes, ov = coll_overhead_s(net);
    double k = l->k, N = l->n_nodes, r = l->channels;
    return 2 * (k - 1) * (ssim_time_to_seconds(l->a_intra) + ov + S / (k * l->b_intra)) +
           2 * (N - 1) * (ssim_time_to_seconds(l->a_inter) + ov + S / (r * N * l->b_inter));
}

static guint32 steps(Layout *l, const SsimNet *net, Inst *in)
{
    (void)net;
    (void)in;
    return 2 * (l->k - 1) + 2 * (l->n_nodes - 1);
}

/* Whether step `s` runs on the nodes' own rings (else across the nodes). */
static inline gboolean intra_step(const Layout *l, guint32 s)
{
    guint32 intra = l->k - 1, inter = 2 * (l->n_nodes - 1);
    return s < intra || s >= intra + inter;
}

static SsimTime latency(const Layout *l, const SsimNet *net, const Inst *in, guint32 s)
{
    (void)net;
    (void)in;
    return intra_step(l, s) ? l->a_intra : l->a_inter;
}

static void flows(const Layout *l, const Inst *in, FlowSink *sink)
{
    guint k = l->k, N = l->n_nodes;
    if (intra_step(l, in->step)) {
        guint64 b = coll_div_up(in->bytes, k);
        for (guint j = 0; j < N; j++)
            for (guint q = 0; q < k; q++)
                flow_start(sink, l->sorted[j * k + q], l->sorted[j * k + (q + 1) % k], b);
    } else {
        guint r = l->channels;
        guint64 b = coll_div_up(in->bytes, (guint64)r * N);
        for (guint c = 0; c < r; c++) {
            guint q = (l->first + c) % k;
            for (guint j = 0; j < N; j++)
                flow_start(sink, l->sorted[j * k + q], l->sorted[((j + 1) % N) * k + q], b);
        }
    }
}

static guint alike(const Layout *l, const Inst *in, AlikeSteps out[2])
{
    (void)in;
    guint32 intra = l->k - 1, inter = 2 * (l->n_nodes - 1);
    out[0] = (AlikeSteps){.like = 0, .times = 2 * intra};
    out[1] = (AlikeSteps){.like = intra, .times = inter};
    return 2;
}

const AlgoClass ssim_coll_hierarchical = {.name = "hierarchical",
                                          .reported = SSIM_NET_ALGO_HIERARCHICAL,
                                          .fits = fits,
                                          .measure = measure,
                                          .estimate = estimate,
                                          .steps = steps,
                                          .latency = latency,
                                          .flows = flows,
                                          .alike = alike};
