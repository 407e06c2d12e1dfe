/*
 * Network benchmark: flows solved per second on a 1024-GPU fabric (128 DGX H200 nodes, 8 rails,
 * 4 leaf groups of 32 nodes, a spine), replayed through the runtime with the flow network as
 * its comm model.
 *
 * Traffic: 8 data-parallel groups of 128 ranks (one GPU per node, one group per rail) each run
 * ROUNDS ring all-reduces of 64 MiB back to back (128 flows per step, 254 steps each, across the
 * spine); at the same time an expert-parallel group of the first 8 nodes (64 ranks) runs ROUNDS
 * all-to-alls of 64 MiB (4032 flows each, coupling NVLink, PCIe, NICs and every rail of those
 * nodes, and through them the data-parallel rings, into one connected component), and every
 * node runs an 8-GPU all-to-all of 8 MiB (56 flows) and an 8-GPU ring all-reduce of 16 MiB over
 * NVLink, ROUNDS * 8 times each.  That keeps thousands of flows
 * active at once (printed as the peak).  Prints flows/s (flows started and finished per second
 * of wall time), rate recomputations/s (solver calls, each re-rating one connected component),
 * flows re-rated per second and peak RSS.
 *
 * Usage: bench-net [ROUNDS]   (default 2)
 */
#include <shiftsim/cluster.h>
#include <shiftsim/graph.h>
#include <shiftsim/net.h>
#include <shiftsim/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define NODES     128
#define GPN       8
#define MOE_NODES 8

static double now_s(void)
{
    return (double)g_get_monotonic_time() * 1e-6;
}

static guint32 add_coll(SsimGraph *g, guint32 rank, const char *stream, guint32 group,
                        SsimCollKind kind, guint64 bytes)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.coll = kind;
    s.stream = ssim_graph_stream(g, rank, stream);
    s.group = group;
    s.bytes = bytes;
    return ssim_graph_add_op(g, &s, NULL, 0);
}

int main(int argc, char **argv)
{
    guint rounds = argc > 1 ? (guint)g_ascii_strtoull(argv[1], NULL, 10) : 2;
    if (rounds == 0) {
        fprintf(stderr, "bench-net: ROUNDS must be positive\n");
        return 2;
    }
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, NODES);
    SsimNetConfig cfg;
    ssim_net_config_init(&cfg, cluster);
    cfg.algorithm = SSIM_NET_ALGO_RING;
    GError *error = NULL;
    g_autoptr(SsimNet) net = ssim_net_new_config(cluster, &cfg, &error);
    if (net == NULL) {
        fprintf(stderr, "bench-net: %s\n", error->message);
        return 1;
    }

    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 dp[GPN], node[NODES], a2a[NODES], ranks[NODES];
    for (guint k = 0; k < GPN; k++) {
        for (guint j = 0; j < NODES; j++)
            ranks[j] = j * GPN + k;
        char name[16];
        g_snprintf(name, sizeof name, "dp%u", k);
        dp[k] = ssim_graph_add_group(g, name, ranks, NODES, NULL);
    }
    for (guint j = 0; j < NODES; j++) {
        for (guint k = 0; k < GPN; k++)
            ranks[k] = j * GPN + k;
        char name[16];
        g_snprintf(name, sizeof name, "tp%u", j);
        node[j] = ssim_graph_add_group(g, name, ranks, GPN, NULL);
        g_snprintf(name, sizeof name, "ep%u", j);
        a2a[j] = ssim_graph_add_group(g, name, ranks, GPN, NULL);
    }
    for (guint i = 0; i < MOE_NODES * GPN; i++)
        ranks[i] = i;
    guint32 moe = ssim_graph_add_group(g, "moe", ranks, MOE_NODES * GPN, NULL);
    for (guint32 r = 0; r < NODES * GPN; r++) {
        for (guint i = 0; i < rounds; i++) {
            add_coll(g, r, "dp", dp[r % GPN], SSIM_COLL_ALLREDUCE, 64 << 20);
            if (r < MOE_NODES * GPN)
                add_coll(g, r, "moe", moe, SSIM_COLL_ALLTOALL, 64 << 20);
        }
        for (guint i = 0; i < rounds * 8; i++) {
            add_coll(g, r, "ep", a2a[r / GPN], SSIM_COLL_ALLTOALL, 8 << 20);
            add_coll(g, r, "tp", node[r / GPN], SSIM_COLL_ALLREDUCE, 16 << 20);
        }
    }
    if (!ssim_graph_finalize(g, &error)) {
        fprintf(stderr, "bench-net: %s\n", error->message);
        return 1;
    }

    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig run = SSIM_RUN_CONFIG_INIT;
    run.comm = &comm;
    double t0 = now_s();
    g_autoptr(SsimTimeline) tl = ssim_runtime_run_config(g, &run, &error);
    double wall = now_s() - t0;
    if (tl == NULL) {
        fprintf(stderr, "bench-net: %s\n", error->message);
        return 1;
    }
    SsimNetStats st;
    ssim_net_stats(net, &st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("fabric: %u GPUs (%u nodes x %u), %u links, %u leaf groups x %u rails\n",
           ssim_net_n_gpus(net), NODES, GPN, ssim_net_n_links(net), ssim_cluster_n_leaves(cluster),
           cluster->rails);
    printf("collectives: %" G_GUINT64_FORMAT ", flows: %" G_GUINT64_FORMAT
           ", peak concurrent flows: %u\n",
           st.collectives, st.flows_finished, st.peak_active);
    printf("simulated: %.3f ms, wall: %.3f s\n", ssim_time_to_seconds(tl->makespan) * 1e3, wall);
    printf("flows/s: %.3g\n", (double)st.flows_finished / wall);
    printf("rate recomputations/s: %.3g (%" G_GUINT64_FORMAT " solves, %.1f flows re-rated "
           "per solve)\n",
           (double)st.solves / wall, st.solves, (double)st.flows_solved / MAX(st.solves, 1));
    printf("flows re-rated/s: %.3g\n", (double)st.flows_solved / wall);
    printf("peak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    return 0;
}
