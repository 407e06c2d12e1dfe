/*
 * A cluster with round figures for network tests, so times come out exact: gpn GPUs (and NICs)
 * per node, one rail each, a non-blocking fabric; NVLink 4 bytes/ns, NIC 1 byte/ns, PCIe
 * 2 bytes/ns; latencies 2 us (NVLink), 5 us (inter-node path), 1 us (PCIe), none at the spine;
 * no efficiencies and no step overhead.  The caller frees it.
 */
#pragma once

#include <shiftsim/cluster.h>

static inline SsimCluster *t_round_cluster(guint nodes, guint gpn)
{
    SsimCluster *c = ssim_cluster_default();
    c->gpus_per_node = gpn;
    c->nics_per_node = gpn;
    c->rails = gpn;
    c->gpus_per_nic = 1;
    c->nodes = nodes;
    c->nodes_per_leaf = 32;
    c->oversubscription = 1.0;
    c->nvlink_bw = 4e9;
    c->nic_bw = 1e9;
    c->pcie_bw = 2e9;
    c->nvlink_latency = 2 * SSIM_US;
    c->nic_latency = 5 * SSIM_US;
    c->pcie_latency = 1 * SSIM_US;
    c->spine_latency = 0;
    c->nvlink_efficiency = 1.0;
    c->ib_efficiency = 1.0;
    c->step_overhead = 0;
    return c;
}
