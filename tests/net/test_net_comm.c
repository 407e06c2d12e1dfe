/*
 * Tests for collectives as flows, through the runtime (ssim_runtime_run_config with the network's
 * comm model).  Oracles are closed forms for uncongested runs (ring all-reduce
 * 2(n-1) alpha + 2(n-1)/n S/B, hierarchical, direct all-to-all, a single p2p flow), the doubling
 * of the bandwidth term when two collectives share the same links, the choice rule's expected
 * answers, and bit-identical reruns.  Figures are round (bytes/ns) so the times are exact.
 */
#include "tests/test_common.h"
#include "tests/net/net-fixtures.h"

#include <shiftsim/cluster.h>
#include <shiftsim/net.h>

#include <math.h>
#include <string.h>

static SsimNet *net_for(const SsimCluster *c, SsimNetAlgorithm algo, SsimTime overhead)
{
    SsimNetConfig cfg;
    ssim_net_config_init(&cfg, c);
    cfg.algorithm = algo;
    cfg.step_overhead = overhead;
    GError *error = NULL;
    SsimNet *net = ssim_net_new_config(c, &cfg, &error);
    cr_assert_not_null(net, "%s", error ? error->message : "");
    return net;
}

static guint32 group_of(SsimGraph *g, const char *name, const guint32 *ranks, guint n)
{
    guint32 gi = ssim_graph_add_group(g, name, ranks, n, NULL);
    cr_assert_neq(gi, SSIM_NONE);
    return gi;
}

/* One collective of `kind` over `ranks` on stream `stream`, repeated in `copies` groups. */
static SsimGraph *coll_graph(SsimCollKind kind, const guint32 *ranks, guint n, guint64 bytes,
                             guint copies)
{
    SsimGraph *g = ssim_graph_new();
    for (guint k = 0; k < copies; k++) {
        char name[16], stream[16];
        g_snprintf(name, sizeof name, "g%u", k);
        g_snprintf(stream, sizeof stream, "s%u", k);
        guint32 gi = group_of(g, name, ranks, n);
        for (guint i = 0; i < n; i++)
            t_coll(g, ranks[i], stream, gi, kind, bytes, NODEPS);
    }
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    return g;
}

static SsimTime run_makespan(const SsimGraph *g, SsimNet *net)
{
    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &comm;
    GError *error = NULL;
    g_autoptr(SsimTimeline) tl = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(tl, "%s", error ? error->message : "");
    return tl->makespan;
}

static void range(guint32 *r, guint n, guint32 first, guint32 stride)
{
    for (guint i = 0; i < n; i++)
        r[i] = first + i * stride;
}

/* 2(n-1) alpha + 2(n-1)/n S/B, in ns, with B in bytes/ns. */
static SsimTime ring_allreduce(guint n, SsimTime alpha, guint64 S, double B)
{
    return (SsimTime)(2 * (n - 1)) * alpha + (SsimTime)llround(2.0 * (n - 1) / n * S / B);
}

Test(net_comm, ring_allreduce_closed_form_one_node)
{
    g_autoptr(SsimCluster) c = t_round_cluster(1, 8);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 300);
    guint32 r[8];
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, 8 * 4 * 1000, 1);
    /* alpha = NVLink latency + software overhead; B = NVLink. */
    cr_assert_eq(run_makespan(g, net), ring_allreduce(8, 2000 + 300, 32000, 4.0));
}

/* The cluster's collective_overhead_us is paid once, before the first step, as the analytical
 * model charges it: the ring's closed form plus 53 us, on the same network. */
Test(net_comm, collective_overhead_once_before_the_first_step)
{
    g_autoptr(SsimCluster) c = t_round_cluster(1, 8);
    c->collective_overhead = 53000;
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 300);
    guint32 r[8];
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, 8 * 4 * 1000, 1);
    cr_assert_eq(run_makespan(g, net), 53000 + ring_allreduce(8, 2000 + 300, 32000, 4.0));
}

/* Inside a node the copy term (collective_copy_GB_s) is paid before the first step, as the
 * analytical model charges it: 2 S / C for an all-reduce on top of the ring; a send inside the
 * node pays S / C; across nodes neither pays. */
Test(net_comm, collective_copy_before_the_first_step_inside_a_node)
{
    g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
    c->collective_copy_bw = 400e9;
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 300);
    g_autoptr(SsimCluster) c0 = t_round_cluster(2, 4);
    g_autoptr(SsimNet) net0 = net_for(c0, SSIM_NET_ALGO_RING, 300);
    guint32 r[8];
    range(r, 4, 0, 1);
    guint64 bytes = 4 * 4 * 1000;
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 4, bytes, 1);
    /* 2 * 16000 B / 400e9 B/s = 80 ns. */
    cr_assert_eq(run_makespan(g, net), 80 + run_makespan(g, net0));
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) across = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, bytes, 1);
    cr_assert_eq(run_makespan(across, net), run_makespan(across, net0));
}

Test(net_comm, ring_allreduce_closed_form_across_nodes)
{
    /* 2 nodes x 4 GPUs: 4 rail-aligned rings; per step every GPU sends S/8 over NVLink
     * (4 bytes/ns) and each NIC carries one ring's S/32 (1 byte/ns): B = 4 bytes/ns.  Every
     * ring's node crossing goes through PXN: alpha = NVLink + inter-node latency. */
    g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
    guint32 r[8];
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, 32 * 1000, 1);
    cr_assert_eq(run_makespan(g, net), ring_allreduce(8, 7000, 32000, 4.0));

    /* One GPU per node (a data-parallel group): same rail, NIC-limited, alpha = 5 us. */
    g_autoptr(SsimCluster) c4 = t_round_cluster(4, 4);
    g_autoptr(SsimNet) net4 = net_for(c4, SSIM_NET_ALGO_AUTO, 0);
    guint32 dp[4];
    range(dp, 4, 1, 4);
    g_autoptr(SsimGraph) g4 = coll_graph(SSIM_COLL_ALLREDUCE, dp, 4, 4000000, 1);
    cr_assert_eq(ssim_net_choose(net4, SSIM_COLL_ALLREDUCE, dp, 4, 4000000), SSIM_NET_ALGO_RING);
    cr_assert_eq(run_makespan(g4, net4), ring_allreduce(4, 5000, 4000000, 1.0));
}

/* A cluster that puts a communicator's rings on ring_nics NICs (cluster.h) runs that many rings
 * across nodes, not one per member of a node: on 2 nodes x 4 GPUs (NICs of 1 byte/ns) one ring
 * carries the whole S/8 a step over one NIC (B = 1 byte/ns), two rings half each over two
 * (B = 2); the uncapped four give B = 4 (ring_allreduce_closed_form_across_nodes).  alpha as
 * there: NVLink + inter-node latency. */
Test(net_comm, ring_nics_limits_the_rings_across_nodes)
{
    guint32 r[8];
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, 32 * 1000, 1);
    for (guint nics = 1; nics <= 2; nics++) {
        g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
        c->ring_nics = nics;
        g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
        cr_assert_eq(run_makespan(g, net), ring_allreduce(8, 7000, 32000, (double)nics));
    }
    /* One member per node is one ring whatever the cap. */
    g_autoptr(SsimCluster) c4 = t_round_cluster(4, 4);
    c4->ring_nics = 1;
    g_autoptr(SsimNet) net4 = net_for(c4, SSIM_NET_ALGO_RING, 0);
    guint32 dp[4];
    range(dp, 4, 1, 4);
    g_autoptr(SsimGraph) g4 = coll_graph(SSIM_COLL_ALLREDUCE, dp, 4, 4000000, 1);
    cr_assert_eq(run_makespan(g4, net4), ring_allreduce(4, 5000, 4000000, 1.0));
}

/* On Jean Zay's nodes (4 NICs, each shared by two GPUs; ring_nics 1) the four data-parallel
 * groups of a tp 4 stage over 2 nodes, {j, j+4, j+8, j+12}, each run one ring that leaves a node
 * through one NIC.  NCCL picks each communicator's NIC near its own GPUs, so the four rings leave
 * through four NICs, not two: together they take the time one takes alone, as the analytical
 * model prices them (one NIC's worth each).  Leaving every node from its last member, they had
 * shared two NICs and taken the bandwidth part twice. */
Test(net_comm, ring_nics_groups_of_one_stage_spread_over_the_nics)
{
    GError *error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("jean-zay-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_eq(c->ring_nics, 1);
    cr_assert_eq(c->gpus_per_nic, 2);
    c->nodes = 2;
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
    const guint64 S = 400000000;
    SsimTime alone = 0, together = 0;
    for (guint n_groups = 1; n_groups <= 4; n_groups += 3) {
        g_autoptr(SsimGraph) g = ssim_graph_new();
        for (guint32 j = 0; j < n_groups; j++) {
            char name[16], stream[16];
            g_snprintf(name, sizeof name, "dp%u", j);
            g_snprintf(stream, sizeof stream, "s%u", j);
            guint32 r[4];
            range(r, 4, j, 4);
            guint32 gi = group_of(g, name, r, 4);
            for (guint i = 0; i < 4; i++)
                t_coll(g, r[i], stream, gi, SSIM_COLL_ALLREDUCE, S, NODEPS);
        }
        cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
        *(n_groups == 1 ? &alone : &together) = run_makespan(g, net);
    }
    cr_assert_eq(together, alone,
                 "4 groups %" G_GINT64_FORMAT " ns, one alone %" G_GINT64_FORMAT " ns",
                 (gint64)together, (gint64)alone);
    /* One NIC's worth: 2 x 3/4 S through one NIC at nic_bw x ib, within the steps' latency. */
    double bw_part = 2.0 * 3 / 4 * (double)S / (c->nic_bw * c->ib_efficiency) * 1e9;
    cr_assert(fabs((double)alone / bw_part - 1) < 0.01, "%" G_GINT64_FORMAT " ns vs %g",
              (gint64)alone, bw_part);
}

Test(net_comm, concurrent_collectives_share_links)
{
    /* Two all-reduces over the same 4 GPUs at once: each gets half of every NVLink, so the
     * bandwidth term doubles while the latency term stays. */
    g_autoptr(SsimCluster) c = t_round_cluster(1, 4);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
    guint32 r[4];
    range(r, 4, 0, 1);
    g_autoptr(SsimGraph) one = coll_graph(SSIM_COLL_ALLREDUCE, r, 4, 16000, 1);
    g_autoptr(SsimGraph) two = coll_graph(SSIM_COLL_ALLREDUCE, r, 4, 16000, 2);
    cr_assert_eq(run_makespan(one, net), ring_allreduce(4, 2000, 16000, 4.0));
    cr_assert_eq(run_makespan(two, net), ring_allreduce(4, 2000, 16000, 2.0));
}

Test(net_comm, hierarchical_closed_form)
{
    /* 2 nodes x 4: reduce-scatter on each node (3 steps of S/4 at 4 bytes/ns + 2 us), all-reduce
     * of S/4 on 4 same-rail rings across 2 nodes (2 steps of S/8 at 1 byte/ns + 5 us),
     * all-gather on each node (3 steps as the first phase). */
    g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_HIERARCHICAL, 0);
    guint32 r[8];
    range(r, 8, 0, 1);
    const guint64 S = 64000;
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, S, 1);
    SsimTime want = 2 * 3 * (2000 + S / 4 / 4) + 2 * 1 * (5000 + S / 8 / 1);
    cr_assert_eq(run_makespan(g, net), want);
    cr_assert_eq(ssim_net_estimate(net, SSIM_COLL_ALLREDUCE, SSIM_NET_ALGO_HIERARCHICAL, r, 8, S),
                 want);
    /* With ring_nics (cluster.h) the four shares leave a node through 1 or 2 NICs: the
     * all-reduce across is 2 steps of S/2 or S/4 at 1 byte/ns, the node's phases as above. */
    for (guint nics = 1; nics <= 2; nics++) {
        g_autoptr(SsimCluster) cn = t_round_cluster(2, 4);
        cn->ring_nics = nics;
        g_autoptr(SsimNet) netn = net_for(cn, SSIM_NET_ALGO_HIERARCHICAL, 0);
        SsimTime capped = 2 * 3 * (2000 + S / 4 / 4) + 2 * 1 * (5000 + S / (2 * nics) / 1);
        cr_assert_eq(run_makespan(g, netn), capped);
        cr_assert_eq(
            ssim_net_estimate(netn, SSIM_COLL_ALLREDUCE, SSIM_NET_ALGO_HIERARCHICAL, r, 8, S),
            capped);
    }
}

Test(net_comm, alltoall_direct_and_p2p)
{
    g_autoptr(SsimCluster) c = t_round_cluster(1, 4);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_AUTO, 0);
    guint32 r[4];
    range(r, 4, 0, 1);
    /* Each GPU sends S/4 to each of 3 others through its NVLink: 3 S/4 / B after one alpha. */
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLTOALL, r, 4, 16000, 1);
    cr_assert_eq(run_makespan(g, net), 2000 + 3 * 4000 / 4);

    /* A send/recv pair across nodes: one flow, NIC-limited, after the path latency. */
    g_autoptr(SsimCluster) c2 = t_round_cluster(2, 4);
    g_autoptr(SsimNet) net2 = net_for(c2, SSIM_NET_ALGO_AUTO, 0);
    g_autoptr(SsimGraph) p = ssim_graph_new();
    t_p2p(p, SSIM_OP_SEND, 1, "pp", 5, 1000000, NODEPS);
    t_p2p(p, SSIM_OP_RECV, 5, "pp", 1, 1000000, NODEPS);
    cr_assert(ssim_graph_finalize(p, NULL));
    cr_assert_eq(run_makespan(p, net2), 5000 + 1000000);

    /* A collective-permute between two nodes: both directions at once, each one NIC flow. */
    guint32 pp[2] = {1, 5};
    g_autoptr(SsimGraph) q = coll_graph(SSIM_COLL_PERMUTE, pp, 2, 1000000, 1);
    cr_assert_eq(run_makespan(q, net2), 5000 + 1000000);
}

Test(net_comm, choice_by_size_and_scope)
{
    /* The bundled DGX H200 at 16 nodes: tree for small all-reduces across nodes (few steps),
     * hierarchical in the middle (2(k-1) + 2(N-1) steps instead of 2(n-1)), the ring for the
     * largest (it overlaps NVLink and NIC time, which hierarchical serializes); a ring inside
     * a node. */
    g_autoptr(SsimCluster) c = ssim_cluster_default();
    ssim_cluster_set_nodes(c, 16);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_AUTO, 0);
    guint32 node[8], world[128];
    range(node, 8, 0, 1);
    range(world, 128, 0, 1);
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLREDUCE, node, 8, 1 << 30), SSIM_NET_ALGO_RING);
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLREDUCE, world, 128, 4096), SSIM_NET_ALGO_TREE);
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLREDUCE, world, 128, 16 << 20),
                 SSIM_NET_ALGO_HIERARCHICAL);
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLREDUCE, world, 128, 4ULL << 30),
                 SSIM_NET_ALGO_RING);
    /* The choice is the smallest estimate at every size. */
    for (guint64 s = 1024; s <= (4ULL << 30); s *= 4) {
        SsimNetAlgorithm best = SSIM_NET_ALGO_RING;
        SsimTime t_best = ssim_net_estimate(net, SSIM_COLL_ALLREDUCE, best, world, 128, s);
        for (SsimNetAlgorithm a = SSIM_NET_ALGO_TREE; a <= SSIM_NET_ALGO_HIERARCHICAL; a++) {
            SsimTime t = ssim_net_estimate(net, SSIM_COLL_ALLREDUCE, a, world, 128, s);
            if (t < t_best) {
                best = a;
                t_best = t;
            }
        }
        cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLREDUCE, world, 128, s), best, "%lu",
                     (unsigned long)s);
    }
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLGATHER, world, 128, 4096), SSIM_NET_ALGO_RING);
    cr_assert_eq(ssim_net_choose(net, SSIM_COLL_ALLTOALL, world, 128, 4096), SSIM_NET_ALGO_DIRECT);
    /* A fixed algorithm wins where it applies. */
    g_autoptr(SsimNet) fixed = net_for(c, SSIM_NET_ALGO_RING, 0);
    cr_assert_eq(ssim_net_choose(fixed, SSIM_COLL_ALLREDUCE, world, 128, 4096), SSIM_NET_ALGO_RING);
    /* Without NVLink SHARP (no NVLS trees) `auto` never takes the hierarchical form, where it
     * took it above; the ring or the tree instead, whichever estimates faster. */
    g_autoptr(SsimCluster) plain = ssim_cluster_copy(c);
    plain->nvlink_sharp = FALSE;
    g_autoptr(SsimNet) no_sharp = net_for(plain, SSIM_NET_ALGO_AUTO, 0);
    for (guint64 s = 1024; s <= (4ULL << 30); s *= 4) {
        SsimNetAlgorithm a = ssim_net_choose(no_sharp, SSIM_COLL_ALLREDUCE, world, 128, s);
        cr_assert(a == SSIM_NET_ALGO_RING || a == SSIM_NET_ALGO_TREE, "%lu: %s", (unsigned long)s,
                  ssim_net_algorithm_name(a));
    }
    /* Asked for by name it still runs. */
    g_autoptr(SsimNet) forced = net_for(plain, SSIM_NET_ALGO_HIERARCHICAL, 0);
    cr_assert_eq(ssim_net_choose(forced, SSIM_COLL_ALLREDUCE, world, 128, 16 << 20),
                 SSIM_NET_ALGO_HIERARCHICAL);
}

Test(net_comm, tree_broadcast_reduce_complete_and_beat_ring_when_small)
{
    g_autoptr(SsimCluster) c = t_round_cluster(8, 4);
    guint32 r[32];
    range(r, 32, 0, 1);
    g_autoptr(SsimNet) tree = net_for(c, SSIM_NET_ALGO_TREE, 0);
    g_autoptr(SsimNet) ring = net_for(c, SSIM_NET_ALGO_RING, 0);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 32, 8192, 1);
    SsimTime t_tree = run_makespan(g, tree), t_ring = run_makespan(g, ring);
    cr_assert_lt(t_tree, t_ring);
    /* At least one latency per tree level up and down (height 5 for 32 ranks). */
    cr_assert_geq(t_tree, 2 * 5 * 2000);

    for (int k = 0; k < 2; k++) {
        SsimCollKind kind = k ? SSIM_COLL_REDUCE : SSIM_COLL_BROADCAST;
        g_autoptr(SsimGraph) b = coll_graph(kind, r, 32, 1 << 20, 1);
        SsimTime t = run_makespan(b, ring);
        /* At least S over one NIC, at most store-and-forward along the chain. */
        cr_assert_geq(t, (1 << 20) / 1);
        cr_assert_lt(t, 31 * (7000 + (1 << 20)));
    }
}

Test(net_comm, deterministic_and_reusable)
{
    g_autoptr(SsimCluster) c = t_round_cluster(4, 8);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_AUTO, 100);
    guint32 r[32];
    range(r, 32, 0, 1);
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 world = group_of(g, "world", r, 32);
    guint32 tp[4];
    for (guint k = 0; k < 4; k++) {
        char name[8];
        g_snprintf(name, sizeof name, "tp%u", k);
        tp[k] = group_of(g, name, r + 8 * k, 8);
    }
    for (guint i = 0; i < 32; i++) {
        guint32 prev = SSIM_NONE;
        for (guint s = 0; s < 6; s++) {
            guint32 a = t_coll(g, i, "tp", tp[i / 8], SSIM_COLL_ALLREDUCE, 1000000 + s * 77777,
                               prev == SSIM_NONE ? NULL : &prev, prev == SSIM_NONE ? 0 : 1);
            prev = a;
        }
        t_coll(g, i, "dp", world, SSIM_COLL_ALLREDUCE, 50000000, NODEPS);
        t_coll(g, i, "ep", world, SSIM_COLL_ALLTOALL, 3000000, NODEPS);
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &comm;
    g_autoptr(SsimTimeline) a = ssim_runtime_run_config(g, &cfg, NULL);
    g_autoptr(SsimTimeline) b = ssim_runtime_run_config(g, &cfg, NULL);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_eq(a->makespan, b->makespan);
    for (guint32 i = 0; i < a->n_ops; i++)
        cr_assert_eq(a->end[i], b->end[i], "op %u", i);
    SsimNetStats st;
    ssim_net_stats(net, &st);
    cr_assert_eq(st.flows_started, st.flows_finished);
}

Test(net_comm, too_many_ranks)
{
    g_autoptr(SsimCluster) c = t_round_cluster(1, 4);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_AUTO, 0);
    guint32 r[8];
    range(r, 8, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 8, 1000, 1);
    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &comm;
    GError *error = NULL;
    cr_assert_null(ssim_runtime_run_config(g, &cfg, &error));
    cr_assert(strstr(error->message, "8 ranks but the cluster only 4 GPUs") != NULL, "%s",
              error->message);
    g_clear_error(&error);
}

static const guint32 *eight_gpus(gpointer data, guint32 group, guint *n)
{
    (void)group;
    *n = 8;
    return data;
}

Test(net_comm, representative_mapping)
{
    /* One graph rank stands for GPU 8 (node 1); its one-member group is really GPUs 8..15. */
    g_autoptr(SsimCluster) c = t_round_cluster(2, 8);
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
    static guint32 members[8] = {8, 9, 10, 11, 12, 13, 14, 15};
    static const guint32 map[2] = {8, 0};
    SsimNetMapping m = {
        .rank_map = map, .n_ranks = 2, .group_members = eight_gpus, .data = members};
    ssim_net_set_mapping(net, &m);
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 one = 0;
    guint32 gi = group_of(g, "tp", &one, 1);
    t_coll(g, 0, "tp", gi, SSIM_COLL_ALLREDUCE, 32000, NODEPS);
    /* And a send from graph rank 0 (GPU 8) to graph rank 1 (GPU 0): across nodes, same rail. */
    t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 1000, NODEPS);
    t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 1000, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &comm;
    g_autoptr(SsimTimeline) tl = ssim_runtime_run_config(g, &cfg, NULL);
    cr_assert_not_null(tl);
    cr_assert_eq(tl->end[0], ring_allreduce(8, 2000, 32000, 4.0));
    cr_assert_eq(tl->end[1], 5000 + 1000);
}

/* Copies by a fixed table of `width` GPUs: copy c of GPU g is cells[c * width + g]. */
typedef struct {
    guint width;
    const guint32 *cells;
} CopyTable;

static guint32 copy_by_table(gpointer data, guint32 gpu, guint copy)
{
    const CopyTable *t = data;
    return t->cells[copy * t->width + gpu];
}

/* A send of `bytes` from GPU 0 (node 0) to GPU `dst` (node 1), with the copies of `t`. */
static SsimTime send_with_copies(const SsimCluster *c, guint n_copies, const CopyTable *t,
                                 guint32 dst, guint64 bytes)
{
    g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_AUTO, 0);
    SsimNetMapping m = {.n_copies = n_copies, .copy_gpu = copy_by_table, .data = (gpointer)t};
    ssim_net_set_mapping(net, &m);
    g_autoptr(SsimGraph) p = ssim_graph_new();
    t_p2p(p, SSIM_OP_SEND, 0, "pp", dst, bytes, NODEPS);
    t_p2p(p, SSIM_OP_RECV, dst, "pp", 0, bytes, NODEPS);
    cr_assert(ssim_graph_finalize(p, NULL));
    return run_makespan(p, net);
}

Test(net_comm, copies_load_shared_links)
{
    /* 2 nodes x 4 GPUs.  Copy 1 shifts every GPU by one inside its node: the representative's
     * send 0 -> 4 has the copy 1 -> 5. */
    static const guint32 cells[2 * 8] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 0, 5, 6, 7, 4};
    const CopyTable table = {8, cells};
    /* One NIC per GPU: the copy's flow is on other NICs and rails, the time is the lone flow's
     * (path latency + S / NIC bandwidth), as without copies. */
    g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
    cr_assert_eq(send_with_copies(c, 1, &table, 4, 1000000), 5000 + 1000000);
    cr_assert_eq(send_with_copies(c, 2, &table, 4, 1000000), 5000 + 1000000);
    /* One NIC per node (4 GPUs on it): both flows cross the same NIC, each at half its
     * bandwidth, so the representative takes S / (B / 2). */
    c->nics_per_node = 1;
    c->rails = 1;
    c->gpus_per_nic = 4;
    SsimTime alone = send_with_copies(c, 1, &table, 4, 1000000);
    cr_assert_eq(send_with_copies(c, 2, &table, 4, 1000000) - alone, 1000000);
}

/* The cluster vTrain measured on (models/clusters/vtrain-a100.ini) is the DGX A100 but for its
 * network: 4 NICs of 200 Gb/s a node (vTrain's 800 Gb/s), GPUs 2k and 2k+1 on NIC k.  Two
 * pipeline sends leave node 0 at once, GPU 0 -> 8 and GPU 1 -> 9 (a stage of tp 2 on each side):
 * on the DGX A100 each has its own NIC, on vTrain's cluster they share one, so the send takes
 * S / (B ib) longer, B = 25 GB/s, ib = 0.96: 100 MB in 4.1667 ms more. */
static SsimTime pair_send(const SsimCluster *c, guint n_copies)
{
    static guint32 cells[2 * 16];
    for (guint32 g = 0; g < 16; g++) {
        cells[g] = g;
        cells[16 + g] = g ^ 1u; /* the copy of the send 0 -> 8 is 1 -> 9 */
    }
    const CopyTable table = {16, cells};
    return send_with_copies(c, n_copies, &table, 8, 100000000);
}

Test(net_comm, bundled_vtrain_cluster_shares_nics)
{
    GError *error = NULL;
    g_autoptr(SsimCluster) dgx = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(dgx, "%s", error ? error->message : "");
    g_autoptr(SsimCluster) vt = ssim_cluster_load("vtrain-a100", &error);
    cr_assert_not_null(vt, "%s", error ? error->message : "");
    cr_assert_eq(vt->nics_per_node, 4);
    cr_assert_eq(vt->rails, 4);
    cr_assert_eq(vt->gpus_per_nic, 2);
    cr_assert_float_eq(vt->nic_bw, 25e9, 1.0);
    /* Nothing else differs: the DGX A100 given vTrain's network writes the same INI. */
    g_autoptr(SsimCluster) as_vt = ssim_cluster_copy(dgx);
    as_vt->nics_per_node = vt->nics_per_node;
    as_vt->rails = vt->rails;
    as_vt->gpus_per_nic = vt->gpus_per_nic;
    g_free(as_vt->name);
    as_vt->name = g_strdup(vt->name);
    g_autoptr(GString) a = ssim_cluster_write_ini(as_vt, NULL);
    g_autoptr(GString) b = ssim_cluster_write_ini(vt, NULL);
    cr_assert_str_eq(a->str, b->str);

    dgx->nodes = vt->nodes = 2;
    SsimTime own_nic = pair_send(dgx, 1);
    cr_assert_eq(pair_send(dgx, 2), own_nic);
    cr_assert_eq(pair_send(vt, 1), own_nic);
    SsimTime shared = pair_send(vt, 2) - own_nic;
    cr_assert(llabs((long long)shared - 4166667) <= 2, "%" G_GINT64_FORMAT " ns", (gint64)shared);
}

Test(net_comm, copies_of_a_group_are_distinct)
{
    /* A 4-GPU all-reduce over node 0.  A copy that permutes the group onto itself is the same
     * collective and adds nothing; a copy onto node 1 runs on node 1's own links. */
    g_autoptr(SsimCluster) c = t_round_cluster(2, 4);
    static const guint32 rotate[2 * 8] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 0, 4, 5, 6, 7};
    static const guint32 other[2 * 8] = {0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 0, 1, 2, 3};
    guint32 r[4];
    range(r, 4, 0, 1);
    g_autoptr(SsimGraph) g = coll_graph(SSIM_COLL_ALLREDUCE, r, 4, 4 * 4000, 1);
    const CopyTable tables[] = {{8, rotate}, {8, other}};
    for (guint t = 0; t < 2; t++) {
        g_autoptr(SsimNet) net = net_for(c, SSIM_NET_ALGO_RING, 0);
        SsimNetMapping m = {.n_copies = 2, .copy_gpu = copy_by_table, .data = (gpointer)&tables[t]};
        ssim_net_set_mapping(net, &m);
        cr_assert_eq(run_makespan(g, net), ring_allreduce(4, 2000, 16000, 4.0));
        SsimNetStats st;
        ssim_net_stats(net, &st);
        /* 2 (n - 1) steps of n flows: the rotation adds none, the other node as many again. */
        cr_assert_eq(st.flows_started, (t == 0 ? 1 : 2) * 2 * 3 * 4, "table %u: %" G_GUINT64_FORMAT,
                     t, st.flows_started);
    }
}
