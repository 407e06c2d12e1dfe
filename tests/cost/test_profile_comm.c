/*
 * Collectives measured at one layout and asked at another (cost/profile-comm): never the same
 * time reused.  Oracle: profiles written from the network model's own closed forms with round
 * figures (NVLink 200 GB/s of bus bandwidth per rank and 2 us per step, 20 GB/s per NIC and 5 us
 * per step), so the per-level figures the lookup calibrates from the rows are exact and the time
 * it derives for another layout is the hand-computed one.  The form is the cluster's: two levels
 * where its [network] algorithm is hierarchical (network(), below), NCCL's rings where it is the
 * default on a switch without NVLink SHARP (the last tests).
 */
#include <criterion/criterion.h>

#include <shiftsim/cluster.h>
#include <shiftsim/data.h>
#include <shiftsim/profile.h>

#include <math.h>
#include <string.h>

#define A_NV  2e-6
#define B_NV  200e9
#define A_IB  5e-6
#define B_NIC 20e9
#define GIB   (G_GUINT64_CONSTANT(1) << 30)

/* All-reduce over k ranks per node on N nodes: the hierarchical closed form (analytic.h). */
static double hier_allreduce(double S, double k, double N, double nics)
{
    double t = 2 * ((k - 1) * A_NV + (k - 1) / k * S / B_NV);
    if (N > 1)
        t += 2 * (N - 1) * A_IB + 2 * (N - 1) / N * (S / k) / (B_NIC * nics);
    return t;
}

/* The all-reduce of one form over n ranks, k a node, `nics` NICs a rank (hand-written). */
typedef double (*AllreduceForm)(double S, double n, double k, double nics);

static double two_levels(double S, double n, double k, double nics)
{
    return hier_allreduce(S, k, n / k, nics);
}

/* Rows of 1 MiB to 1 GiB written in `form` at `nics` NICs a rank; the rows record `row_nics`. */
static void add_form_curve(SsimProfile *p, guint ranks, guint rpn, double row_nics, double nics,
                           AllreduceForm form)
{
    for (guint64 S = 1u << 20; S <= GIB; S *= 2) {
        SsimProfileRow r;
        ssim_profile_row_init(&r, SSIM_PROFILE_COMM);
        r.op = "allreduce";
        r.dtype = SSIM_DTYPE_BF16;
        r.bytes = S;
        r.ranks = ranks;
        r.ranks_per_node = rpn;
        r.nics_per_rank = row_nics;
        r.time_us = form((double)S, ranks, rpn, nics) * 1e6;
        cr_assert(ssim_profile_add_row(p, &r, NULL));
    }
}

static void add_curve(SsimProfile *p, guint ranks, guint rpn, double nics)
{
    add_form_curve(p, ranks, rpn, nics, nics > 0 ? nics : 1, two_levels);
}

/* A cluster whose collectives across nodes take the two levels ([network] algorithm =
 * hierarchical), the form the curves above are written in. */
static SsimAnalyticParams network(double nics_per_gpu)
{
    return (SsimAnalyticParams){.net_algorithm = SSIM_NET_ALGO_HIERARCHICAL,
                                .nvlink_bw = B_NV,
                                .nvlink_latency = 2000,
                                .ib_bw = B_NIC * nics_per_gpu,
                                .ib_latency = 5000,
                                .gpus_per_node = 8,
                                .nics_per_gpu = nics_per_gpu,
                                .peak_flops = 1e15,
                                .hbm_bw = 1e12,
                                .gemm_efficiency = 1,
                                .memory_efficiency = 1};
}

/*
 * Measured: 16 ranks as 4 per node on 4 nodes (and 4 ranks on one node, which gives the NVLink
 * level).  Asked: 16 ranks one per node, a flat ring over 16 NICs: 2 x 15 steps of 5 us and
 * 2 x 15/16 of the buffer through one 20 GB/s NIC.  At 1 GiB that is 150 us + 100663.296 us,
 * 3.6 times the measured 28227.7 us (which the old lookup returned as it was).
 */
Test(profile_comm, four_per_node_is_never_reused_for_one_per_node)
{
    g_autoptr(SsimProfile) p = ssim_profile_new();
    add_curve(p, 16, 4, 1);
    add_curve(p, 4, 4, 0);
    SsimAnalyticParams net = network(1);
    SsimCostEstimate at4, at1;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 4, NULL,
                                     &net, &at4));
    cr_assert_eq(at4.source, SSIM_COST_EXACT);
    cr_assert_float_eq(at4.time_us, hier_allreduce((double)GIB, 4, 4, 1) * 1e6, 1e-6);
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 1, NULL,
                                     &net, &at1));
    cr_assert_eq(at1.source, SSIM_COST_SCALED);
    double hand_us = 2 * 15 * 5.0 + 2 * (15.0 / 16.0) * (double)GIB / 20e9 * 1e6;
    cr_assert_float_eq(hand_us, 150 + 100663.296, 1e-6);
    cr_assert(fabs(at1.time_us - hand_us) < 1e-4 * hand_us, "got %g us, hand %g us", at1.time_us,
              hand_us);
    cr_assert(at1.time_us > 3.5 * at4.time_us);

    /* Half a NIC per GPU (4 NICs per 8 GPUs): the NIC-bound part doubles. */
    SsimAnalyticParams half = network(0.5);
    SsimCostEstimate slow;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 1, NULL,
                                     &half, &slow));
    double hand_half = 150 + 2 * (15.0 / 16.0) * (double)GIB / 10e9 * 1e6;
    cr_assert(fabs(slow.time_us - hand_half) < 1e-4 * hand_half, "got %g us, hand %g us",
              slow.time_us, hand_half);
    /* ... and the measured layout measured with one NIC per rank is no longer "the same". */
    SsimCostEstimate same_half;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 4, NULL,
                                     &half, &same_half));
    cr_assert_eq(same_half.source, SSIM_COST_SCALED);
    double hand_same_half = hier_allreduce((double)GIB, 4, 4, 0.5) * 1e6;
    cr_assert(fabs(same_half.time_us - hand_same_half) < 1e-4 * hand_same_half, "%g vs %g",
              same_half.time_us, hand_same_half);
}

/* A cluster that puts a communicator's rings on ring_nics NICs (analytic.h) gives a rank of a
 * node with k members ring_nics / k NICs (at most its own share): a curve measured so, 16 ranks
 * as 4 per node through one NIC a node (0.25 a rank), is its own layout again and answers
 * exactly; without the cap each rank has its NIC and the NIC-bound part is 4 times faster. */
Test(profile_comm, ring_nics_layout_is_the_measured_one)
{
    g_autoptr(SsimProfile) p = ssim_profile_new();
    add_curve(p, 16, 4, 0.25);
    add_curve(p, 4, 4, 0);
    SsimAnalyticParams net = network(1);
    net.ring_nics = 1;
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 4, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_EXACT);
    cr_assert_float_eq(e.time_us, hier_allreduce((double)GIB, 4, 4, 0.25) * 1e6, 1e-6);
    net.ring_nics = 0;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 4, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_SCALED);
    double hand = hier_allreduce((double)GIB, 4, 4, 1) * 1e6;
    cr_assert(fabs(e.time_us - hand) < 1e-4 * hand, "%g vs %g", e.time_us, hand);
}

/* Another rank count across nodes (32 ranks, 8 per node) scales through the model too, and a
 * profile without any curve across nodes leaves the answer to the analytical model. */
Test(profile_comm, other_rank_counts_and_no_inter_node_curve)
{
    g_autoptr(SsimProfile) p = ssim_profile_new();
    add_curve(p, 16, 4, 1);
    add_curve(p, 4, 4, 0);
    SsimAnalyticParams net = network(1);
    SsimCostEstimate e;
    guint64 S = 256u << 20;
    cr_assert(
        ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, S, 32, 8, NULL, &net, &e));
    cr_assert_eq(e.source, SSIM_COST_SCALED);
    double hand = hier_allreduce((double)S, 8, 4, 1) * 1e6;
    cr_assert(fabs(e.time_us - hand) < 1e-4 * hand, "%g vs %g", e.time_us, hand);

    g_autoptr(SsimProfile) intra = ssim_profile_new();
    add_curve(intra, 4, 4, 0);
    cr_assert(ssim_profile_comm_time(intra, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, S, 16, 1, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_ANALYTICAL);
    /* Without a network model nor an intra-node curve, the NVLink level is unknown: nothing. */
    g_autoptr(SsimProfile) only = ssim_profile_new();
    add_curve(only, 16, 4, 1);
    cr_assert_not(ssim_profile_comm_time(only, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, S, 16, 1,
                                         NULL, NULL, &e));
}

/* The NICs per rank of rows that do not record them come from the profile's nics_per_node
 * metadata (over the rows' ranks per node, at most one): a node of 2 NICs measured with 4 ranks
 * gives each rank half a NIC, and a query on a 1-NIC-per-GPU cluster is scaled from it. */
Test(profile_comm, nics_per_node_metadata)
{
    g_autoptr(SsimProfile) p = ssim_profile_new();
    ssim_profile_set_meta(p, "nics_per_node", "2");
    /* Written with half a NIC per rank but not recording it. */
    add_form_curve(p, 16, 4, 0, 0.5, two_levels);
    add_curve(p, 4, 4, 0);
    SsimAnalyticParams net = network(1);
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 4, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_SCALED);
    double hand = hier_allreduce((double)GIB, 4, 4, 1) * 1e6;
    cr_assert(fabs(e.time_us - hand) < 1e-4 * hand, "%g vs %g", e.time_us, hand);
}

/*
 * A curve faster than the NICs allow under the network model's NVLink ring (NVLink SHARP on H100:
 * the node-local part runs at twice the ring's speed): the NIC level cannot exceed its line rate,
 * so it is the cluster's effective one, and the curve calibrates the NVLink level instead.  A
 * query one rank per node is then a ring over the NICs alone: 2 x 15 steps of 5 us and
 * 2 x 15/16 of the buffer through one NIC at 20 GB/s.
 */
Test(profile_comm, nic_level_never_above_line_rate)
{
    g_autoptr(SsimProfile) p = ssim_profile_new();
    for (guint64 S = 1u << 20; S <= GIB; S *= 2) {
        SsimProfileRow r;
        ssim_profile_row_init(&r, SSIM_PROFILE_COMM);
        r.op = "allreduce";
        r.dtype = SSIM_DTYPE_BF16;
        r.bytes = S;
        r.ranks = 16;
        r.ranks_per_node = 8;
        r.nics_per_rank = 1;
        /* NVLink at twice B_NV, NICs at 20 GB/s. */
        double nv = 2 * (7 * A_NV + 7.0 / 8 * (double)S / (2 * B_NV));
        r.time_us = (nv + 2 * A_IB + (double)S / 8 / B_NIC) * 1e6;
        cr_assert(ssim_profile_add_row(p, &r, NULL));
    }
    SsimAnalyticParams net = network(1);
    net.nic_bw = 25e9; /* line rate; 20 GB/s effective */
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, 16, 1, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_SCALED);
    double hand = 150 + 2 * (15.0 / 16.0) * (double)GIB / 20e9 * 1e6;
    cr_assert(fabs(e.time_us - hand) < 1e-3 * hand, "got %g us, hand %g us", e.time_us, hand);
}

/* An all-reduce across nodes as a cluster without NVLink SHARP prices it by default (analytic.h):
 * NCCL's k rings, each step moving S/n per member at B_ring = min(k B_NIC nics, k/(k-1) B_NV), or
 * its trees where faster, which cross the network in two levels, 2 floor(log2 N) steps across
 * nodes (not the two-level form's 2 (N-1)), but never with fewer bytes than the rings:
 * max(T2 - 2 (N - 1 - floor(log2 N)) a_ib, 2 (n-1)/n S / B_ring). */
static double nccl_allreduce(double S, double n, double k, double nics)
{
    double N = n / k;
    double b_ring = fmin(k * B_NIC * nics, k / (k - 1) * B_NV);
    double ring = 2 * (n - 1) * (A_IB + S / n / b_ring);
    double tree_t = hier_allreduce(S, k, N, nics) - 2 * (N - 1 - floor(log2(N))) * A_IB;
    double tree = fmax(tree_t, 2 * (n - 1) / n * S / b_ring);
    return fmin(ring, tree);
}

/*
 * Measured: 32 ranks as 8 per node on 4 nodes, in that form (and 8 ranks on one node).  Asked:
 * 16 ranks on 2 nodes and 64 on 8, 8 per node.  NCCL's rings run over every rank, so the time
 * follows (n-1)/n of the ring: at 1 GiB 2 x 15 steps of 5 us and 2 x 15/16 of the buffer at
 * 8 NICs x 20 GB/s, 12732.9 us, 4.4% under the 32 ranks' 13312.3 us.  The two-level form, which
 * the lookup used for every cluster before, follows (N-1)/N of the nodes instead and made the
 * 2-node group a third faster than the 4-node one.
 */
/* 32 ranks, 8 a node, one NIC each, written in `form`, beside 8 ranks on one node (which give
 * the NVLink level); and a cluster that leaves the form to NCCL (rings or trees). */
static SsimProfile *measured_on_4_nodes(AllreduceForm form, SsimAnalyticParams *net)
{
    SsimProfile *p = ssim_profile_new();
    add_form_curve(p, 32, 8, 1, 1, form);
    add_curve(p, 8, 8, 0);
    *net = network(1);
    net->net_algorithm = SSIM_NET_ALGO_AUTO;
    return p;
}

Test(profile_comm, rings_carry_to_other_node_counts)
{
    SsimAnalyticParams net;
    g_autoptr(SsimProfile) p = measured_on_4_nodes(nccl_allreduce, &net);
    double hand16 = 2 * 15 * 5.0 + 2 * (15.0 / 16) * (double)GIB / 160e9 * 1e6;
    cr_assert_float_eq(hand16, 12732.9, 0.05);
    cr_assert_float_eq(nccl_allreduce((double)GIB, 32, 8, 1) * 1e6, 13312.3, 0.1);
    struct {
        guint ranks;
        double hand_us;
    } q[] = {{16, hand16},
             {64, 2 * 63 * 5.0 + 2 * (63.0 / 64) * (double)GIB / 160e9 * 1e6},
             {32, nccl_allreduce((double)GIB, 32, 8, 1) * 1e6}};
    for (guint i = 0; i < G_N_ELEMENTS(q); i++) {
        SsimCostEstimate e;
        cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, GIB, q[i].ranks,
                                         8, NULL, &net, &e));
        cr_assert_eq(e.source, q[i].ranks == 32 ? SSIM_COST_EXACT : SSIM_COST_SCALED);
        cr_assert(fabs(e.time_us / q[i].hand_us - 1) < 1e-4, "%u ranks: got %g us, hand %g us",
                  q[i].ranks, e.time_us, q[i].hand_us);
    }
    /* At 1 MiB the trees win (fewer steps): 2 x (7 x 2 us + 1 x 5 us) + 2 x 7/8 S / 200 GB/s +
     * 2 x 1/2 (S/8) / 20 GB/s on 2 nodes. */
    SsimCostEstimate e;
    guint64 MIB = 1u << 20;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, MIB, 16, 8, NULL,
                                     &net, &e));
    double hand_tree =
        2 * (7 * 2.0 + 5.0) + (2 * 7.0 / 8 * MIB / 200e9 + (double)MIB / 8 / 20e9) * 1e6;
    cr_assert(fabs(e.time_us / hand_tree - 1) < 1e-3, "got %g us, hand %g us", e.time_us,
              hand_tree);
}

/* NCCL's all-reduce as nccl_allreduce() plus a fixed 100 us a collective (setup, a slow
 * transport), which the cluster does not have. */
static double with_fixed_cost(double S, double n, double k, double nics)
{
    return 100e-6 + nccl_allreduce(S, n, k, nics);
}

/*
 * One curve cannot tell a fixed cost from a cost per step: the steps keep the cluster's latency
 * (5 us) and the rest of the curve's floor is a cost of every collective, not of every step.
 * Measured: 32 ranks, 8 a node, 100 us over the model at every size.  Asked: one rank on each of
 * 16 nodes at 1 MiB, NCCL's tree over the nodes (2 floor(log2 16) = 8 steps): 100 us + 8 x 5 us
 * + 2 x 15/16 S / 20 GB/s = 238.3 us.  Read as latency per step, the floor (148 us: the trees'
 * 2 (7 x 2 + 2 x 5) us, and the 100) would have made each network step 30 us and the tree
 * 338.3 us.
 */
Test(profile_comm, a_floor_beyond_the_steps_is_a_fixed_cost)
{
    SsimAnalyticParams net;
    g_autoptr(SsimProfile) p = measured_on_4_nodes(with_fixed_cost, &net);
    const guint64 MIB = 1u << 20;
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_BF16, MIB, 16, 1, NULL,
                                     &net, &e));
    cr_assert_eq(e.source, SSIM_COST_SCALED);
    double hand = 100 + 8 * 5.0 + 2 * (15.0 / 16) * (double)MIB / 20e9 * 1e6;
    cr_assert_float_eq(hand, 238.3, 0.05);
    cr_assert(fabs(e.time_us / hand - 1) < 1e-3, "got %g us, hand %g us", e.time_us, hand);
}

/* The bundled Jean Zay measurement (traces/jean-zay-a100: 4 GB in fp32 over 32 ranks, 8 per node,
 * NCCL's rings through one NIC a node), carried to other layouts and sizes through
 * jean-zay-a100's network: the cluster's own closed form gives the measured row back within
 * 0.01% (test_analytic.c), so the carried times must be its times too: 2 nodes, 8 nodes, one
 * rank on each of 16 nodes (half a NIC each), 2 a node; and at the measured layout, sizes the
 * row did not measure (a curve of one size says no latency: the cluster's, not a constant time,
 * which gave 1 MB the 4 GB's 1.5 s). */
Test(profile_comm, bundled_jean_zay_row_carried_as_the_cluster_prices_it)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("jean-zay-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    g_autofree char *path = ssim_data_find("traces/jean-zay-a100");
    cr_assert_not_null(path);
    g_autoptr(SsimProfile) p = ssim_profile_load(path, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    SsimAnalyticParams net;
    ssim_analytic_params_from_cluster(&net, c, SSIM_DTYPE_FP32);
    const guint64 sizes[] = {1000000, 100000000, 4000000000ULL, 8000000000ULL};
    guint layout[][2] = {{32, 8}, {16, 8}, {64, 8}, {16, 1}, {16, 2}};
    for (guint i = 0; i < G_N_ELEMENTS(layout); i++)
        for (guint b = 0; b < G_N_ELEMENTS(sizes); b++) {
            guint n = layout[i][0], k = layout[i][1];
            guint64 S = sizes[b];
            SsimCostEstimate e;
            cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_DTYPE_FP32, S, n, k,
                                             NULL, &net, &e));
            SsimCostSource want = n != 32              ? SSIM_COST_SCALED
                                  : S == 4000000000ULL ? SSIM_COST_EXACT
                                                       : SSIM_COST_EXTRAPOLATED;
            cr_assert_eq(e.source, want, "%u ranks, %u a node, %" G_GUINT64_FORMAT " B", n, k, S);
            double model =
                (double)ssim_analytic_collective_time(&net, SSIM_COLL_ALLREDUCE, S, n, n / k, k) /
                1e3;
            cr_assert(fabs(e.time_us / model - 1) < 0.005,
                      "%u ranks, %u a node, %" G_GUINT64_FORMAT " B: %g us, model %g us", n, k, S,
                      e.time_us, model);
        }
}
