/*
 * Collectives measured at one layout and asked at another (cost/profile-comm): never the same
 * time reused.  Oracle: profiles written from the network model's own closed forms with round
 * figures (NVLink 200 GB/s of bus bandwidth per rank and 2 us per step, 20 GB/s per NIC and 5 us
 * per step), so the per-level figures the lookup calibrates from the rows are exact and the time
 * it derives for another layout is the hand-computed one.
 */
#include <criterion/criterion.h>

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

static void add_curve(SsimProfile *p, guint ranks, guint rpn, double nics)
{
    for (guint64 S = 1u << 20; S <= GIB; S *= 2) {
        SsimProfileRow r;
        ssim_profile_row_init(&r, SSIM_PROFILE_COMM);
        r.op = "allreduce";
        r.dtype = SSIM_DTYPE_BF16;
        r.bytes = S;
        r.ranks = ranks;
        r.ranks_per_node = rpn;
        r.nics_per_rank = nics;
        r.time_us = hier_allreduce((double)S, rpn, ranks / rpn, nics > 0 ? nics : 1) * 1e6;
        cr_assert(ssim_profile_add_row(p, &r, NULL));
    }
}

static SsimAnalyticParams network(double nics_per_gpu)
{
    return (SsimAnalyticParams){.nvlink_bw = B_NV,
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
    for (guint64 S = 1u << 20; S <= GIB; S *= 2) {
        SsimProfileRow r;
        ssim_profile_row_init(&r, SSIM_PROFILE_COMM);
        r.op = "allreduce";
        r.dtype = SSIM_DTYPE_BF16;
        r.bytes = S;
        r.ranks = 16;
        r.ranks_per_node = 4;
        r.time_us = hier_allreduce((double)S, 4, 4, 0.5) * 1e6;
        cr_assert(ssim_profile_add_row(p, &r, NULL));
    }
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
