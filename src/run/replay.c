/*
 * Replaying a given graph on a cluster (include/shiftsim/replay.h): the cost and communication
 * models of ssim_simulate() (sim.c) built for a graph whose ranks are GPUs, with no lowering in
 * between.  The analytical model sees each group's own ranks, which are GPU numbers, so a
 * collective's shape (members, nodes, members per node) is its real one; the flow network maps
 * rank r to GPU r by default, so every transfer loads the links between its GPUs.
 */
#include <shiftsim/analytic.h>
#include <shiftsim/net.h>
#include <shiftsim/netcal.h>
#include <shiftsim/profiled.h>
#include <shiftsim/replay.h>

#include <string.h>

/* Sums, over communication ops, the time alone on the network and the time beyond it. */
static void sum_net(const SsimGraph *graph, const SsimTimeline *tl, const SsimTime *unc,
                    guint n_matches, SsimReplayNet *out)
{
    for (guint32 i = 0; i < ssim_graph_n_ops(graph); i++) {
        const SsimOp *op = ssim_graph_op(graph, i);
        if (op->kind == SSIM_OP_COMPUTE || op->kind == SSIM_OP_BARRIER || op->match >= n_matches)
            continue;
        SsimTime took = tl->end[i] - tl->start[i], alone = unc[op->match];
        out->alone += alone;
        out->contended += MAX(took - alone, 0);
    }
}

SsimTimeline *ssim_replay_on_cluster(const SsimGraph *graph, const SsimReplayConfig *config,
                                     SsimReplayNet *net_out, GError **error)
{
    g_return_val_if_fail(graph && config && config->cluster, NULL);
    const SsimCluster *cluster = config->cluster;
    if (net_out)
        memset(net_out, 0, sizeof *net_out);
    guint32 ranks = ssim_graph_n_ranks(graph);
    if (ranks > ssim_cluster_n_gpus(cluster)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "the graph has %u ranks but cluster %s has %u GPUs (%u nodes of %u); give "
                    "it at least %u nodes",
                    ranks, cluster->name, ssim_cluster_n_gpus(cluster), cluster->nodes,
                    cluster->gpus_per_node,
                    (ranks + cluster->gpus_per_node - 1) / cluster->gpus_per_node);
        return NULL;
    }
    SsimAnalyticParams ap;
    ssim_analytic_params_from_cluster(&ap, cluster, config->dtype);
    g_autoptr(SsimAnalytic) analytic = ssim_analytic_new(&ap);
    SsimCostModel cm = ssim_analytic_cost_model(analytic);
    g_autoptr(SsimProfiled) profiled = NULL;
    if (config->profile) {
        profiled = ssim_profiled_new(config->profile, analytic, config->dtype);
        cm = ssim_profiled_cost_model(profiled);
    }
    SsimRunConfig rc = SSIM_RUN_CONFIG_INIT;
    rc.cost = &cm;
    rc.overlap_slowdown = cluster->overlap_slowdown > 1 ? cluster->overlap_slowdown - 1 : 0;
    rc.limits = config->limits;
    rc.max_memory = config->max_memory;
    rc.host_issue = cluster->kernel_floor; /* the host launches every op (runtime.h) */
    g_autoptr(SsimNet) net = NULL;
    g_autoptr(SsimNetCal) netcal = NULL;
    SsimCommModel comm;
    if (config->flow_network) {
        net = ssim_net_new(cluster, error);
        if (net == NULL)
            return NULL;
        if (config->profile) {
            /* A profile's collective rows calibrate the network rather than bypass it. */
            netcal = ssim_netcal_new(config->profile, cluster, config->dtype);
            SsimNetCalibration cal = ssim_netcal_calibration(netcal);
            ssim_net_set_calibration(net, &cal);
        }
        comm = ssim_net_comm_model(net);
        rc.comm = &comm;
    }
    SsimTimeline *tl = ssim_runtime_run_config(graph, &rc, error);
    if (tl && net && net_out) {
        guint n_matches;
        const SsimTime *unc = ssim_net_uncontended(net, &n_matches);
        SsimNetStats st;
        ssim_net_stats(net, &st);
        net_out->flows = st.flows_started;
        if (unc)
            sum_net(graph, tl, unc, n_matches, net_out);
    }
    return tl;
}
