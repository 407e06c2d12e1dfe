/*
 * Tests of replaying a given graph on a cluster (src/run/replay.c).
 *
 * Oracles: the analytical model's closed forms for a collective of the shape its members really
 * have on the cluster (rank r is GPU r, node r / 8), so the test checks the mapping; a measured
 * profile row, returned exactly; and, on the flow-level network, the conservation of a shared
 * link: two transfers through one NIC take twice as long as one alone.
 */
#include <criterion/criterion.h>
#include <math.h>

#include <shiftsim/analytic.h>
#include <shiftsim/replay.h>

/* One op per group, each on its own ranks: a collective of `bytes` over each of `groups`. */
static SsimGraph *collectives(const guint32 *const *groups, const guint *sizes, guint n,
                              guint64 bytes)
{
    SsimGraph *g = ssim_graph_new();
    for (guint i = 0; i < n; i++) {
        char name[16];
        g_snprintf(name, sizeof name, "g%u", i);
        guint32 gi = ssim_graph_add_group(g, name, groups[i], sizes[i], NULL);
        for (guint k = 0; k < sizes[i]; k++) {
            SsimOpSpec s = SSIM_OP_SPEC_INIT;
            s.kind = SSIM_OP_COLLECTIVE;
            s.coll = SSIM_COLL_ALLREDUCE;
            s.group = gi;
            s.bytes = bytes;
            s.stream = ssim_graph_stream(g, groups[i][k], name);
            ssim_graph_add_op(g, &s, NULL, 0);
        }
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    return g;
}

static SsimCluster *cluster_of(const char *name, guint nodes)
{
    GError *error = NULL;
    SsimCluster *c = ssim_cluster_load(name, &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    ssim_cluster_set_nodes(c, nodes);
    return c;
}

/* A collective is charged with its members' placement: one node, one per node, or both. */
Test(replay, collectives_take_their_members_placement)
{
    static const guint32 all[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const guint32 pair_in[2] = {0, 1}, pair_across[2] = {2, 10};
    const guint32 *groups[] = {all, pair_in, pair_across};
    const guint sizes[] = {16, 2, 2};
    g_autoptr(SsimCluster) c = cluster_of("dgx-h100", 2);
    guint64 bytes = 256u << 20;
    SsimAnalyticParams ap;
    ssim_analytic_params_from_cluster(&ap, c, SSIM_DTYPE_BF16);
    struct {
        guint group, n, nodes, per_node;
    } want[] = {{0, 16, 2, 8}, {1, 2, 1, 2}, {2, 2, 2, 1}};
    for (guint w = 0; w < G_N_ELEMENTS(want); w++) {
        /* Each group alone, so no collective waits for another. */
        g_autoptr(SsimGraph) g =
            collectives(&groups[want[w].group], &sizes[want[w].group], 1, bytes);
        SsimReplayConfig rc = SSIM_REPLAY_CONFIG_INIT;
        rc.cluster = c;
        GError *error = NULL;
        g_autoptr(SsimTimeline) tl = ssim_replay_on_cluster(g, &rc, NULL, &error);
        cr_assert_not_null(tl, "%s", error ? error->message : "");
        SsimTime expect = ssim_analytic_collective_time(&ap, SSIM_COLL_ALLREDUCE, bytes, want[w].n,
                                                        want[w].nodes, want[w].per_node);
        cr_assert_gt(expect, 0);
        for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
            cr_assert_eq(tl->end[i] - tl->start[i], expect,
                         "group %u: %" G_GINT64_FORMAT
                         " ns, the closed form says %" G_GINT64_FORMAT,
                         want[w].group, tl->end[i] - tl->start[i], expect);
    }
}

Test(replay, too_few_gpus_is_an_error)
{
    static const guint32 all[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const guint32 *groups[] = {all};
    const guint sizes[] = {16};
    g_autoptr(SsimGraph) g = collectives(groups, sizes, 1, 1024);
    g_autoptr(SsimCluster) c = cluster_of("dgx-h100", 1);
    SsimReplayConfig rc = SSIM_REPLAY_CONFIG_INIT;
    rc.cluster = c;
    GError *error = NULL;
    cr_assert_null(ssim_replay_on_cluster(g, &rc, NULL, &error));
    cr_assert(strstr(error->message, "16 ranks") && strstr(error->message, "at least 2 nodes"),
              "%s", error->message);
    g_error_free(error);
}

/* A profile's measured row prices the collective it has measured, exactly. */
Test(replay, a_profile_prices_what_it_measured)
{
    static const guint32 node[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const guint32 *groups[] = {node};
    const guint sizes[] = {8};
    g_autoptr(SsimGraph) g = collectives(groups, sizes, 1, 1048576);
    g_autoptr(SsimCluster) c = cluster_of("dgx-a100", 1);
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "vtrain-a100", "allreduce.csv", NULL);
    GError *error = NULL;
    g_autoptr(SsimProfile) prof = ssim_profile_load(path, &error);
    cr_assert_not_null(prof, "%s", error ? error->message : "");
    SsimReplayConfig rc = SSIM_REPLAY_CONFIG_INIT;
    rc.cluster = c;
    rc.profile = prof;
    rc.dtype = SSIM_DTYPE_FP32; /* the rows' dtype */
    g_autoptr(SsimTimeline) tl = ssim_replay_on_cluster(g, &rc, NULL, &error);
    cr_assert_not_null(tl, "%s", error ? error->message : "");
    /* traces/vtrain-a100/allreduce.csv: 1048576 bytes over 8 ranks on one node, 92.47 us. */
    cr_assert_eq(tl->end[0] - tl->start[0], 92470);
}

/* Sends from GPU 0 to GPU 8 (on the next node, same rail: one NIC each end), on two streams at
 * once, or only the first. */
static SsimGraph *two_sends(gboolean both, guint64 bytes)
{
    SsimGraph *g = ssim_graph_new();
    for (guint k = 0; k < (both ? 2u : 1u); k++) {
        SsimOpSpec s = SSIM_OP_SPEC_INIT, r = SSIM_OP_SPEC_INIT;
        s.kind = SSIM_OP_SEND, r.kind = SSIM_OP_RECV;
        s.bytes = r.bytes = bytes;
        s.peer = 8, r.peer = 0;
        s.tag = r.tag = k;
        s.stream = ssim_graph_stream(g, 0, k ? "send-b" : "send-a");
        r.stream = ssim_graph_stream(g, 8, k ? "recv-b" : "recv-a");
        ssim_graph_add_op(g, &s, NULL, 0);
        ssim_graph_add_op(g, &r, NULL, 0);
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    return g;
}

Test(replay, flow_network_shares_a_nic)
{
    g_autoptr(SsimCluster) c = cluster_of("dgx-h100", 2);
    guint64 bytes = 1u << 30;
    SsimReplayConfig rc = SSIM_REPLAY_CONFIG_INIT;
    rc.cluster = c;
    rc.flow_network = TRUE;
    GError *error = NULL;
    g_autoptr(SsimGraph) one = two_sends(FALSE, bytes);
    SsimReplayNet n1, n2;
    g_autoptr(SsimTimeline) t1 = ssim_replay_on_cluster(one, &rc, &n1, &error);
    cr_assert_not_null(t1, "%s", error ? error->message : "");
    g_autoptr(SsimGraph) two = two_sends(TRUE, bytes);
    g_autoptr(SsimTimeline) t2 = ssim_replay_on_cluster(two, &rc, &n2, &error);
    cr_assert_not_null(t2, "%s", error ? error->message : "");
    SsimTime alone = t1->end[0] - t1->start[0];
    for (guint32 i = 0; i < 4; i++) {
        double ratio = (double)(t2->end[i] - t2->start[i]) / (double)alone;
        cr_assert(fabs(ratio - 2.0) < 0.01, "op %u: %.4f x the time alone", i, ratio);
    }
    /* Alone, nothing is contended; together, each of the four ends is charged its time alone
     * (the one send's) and the rest as contention. */
    cr_assert_eq(n1.contended, 0);
    cr_assert_eq(n1.alone, 2 * alone);
    cr_assert_eq(n2.alone, 4 * alone);
    SsimTime took = 0;
    for (guint32 i = 0; i < 4; i++)
        took += t2->end[i] - t2->start[i];
    cr_assert_eq(n2.contended, took - n2.alone);
    cr_assert_geq(n2.flows, 2);
    /* The analytic model charges no sharing: both take the time of one. */
    rc.flow_network = FALSE;
    g_autoptr(SsimTimeline) ta = ssim_replay_on_cluster(two, &rc, NULL, &error);
    cr_assert_eq(ta->end[0] - ta->start[0], ta->end[2] - ta->start[2]);
}
