/*
 * What net.c (topology, flows) shares with collective.c (the runtime plug-in) and
 * collective-choose.c (which algorithm a collective runs; the algorithms in collective-*.c
 * need none of it).
 *
 * The comm model object lives in the network (created by ssim_net_comm_model(), freed with the
 * network through comm_free), so the public API can hand out a model by value.
 */
#pragma once

#include <shiftsim/net.h>

struct SsimNetTopo {
    guint gpus_per_node, nodes, nics_per_node, gpus_per_nic, rails, n_leaves, nodes_per_leaf;
    gboolean fullmesh; /* a link per pair of GPUs of a node, no NVSwitch (cluster.h) */
    gboolean sharp;    /* NVLink SHARP: NCCL's NVLS trees, the hierarchical all-reduce */
    guint ring_nics;   /* a communicator's rings across nodes: at most this many (0: one per
                          member of a node; cluster.h) */
};

/* The topology figures of `net` (zeros for a network made by ssim_net_new_links()). */
const struct SsimNetTopo *ssim_net_topo(const SsimNet *net);
/* The comm model's slot in the network; `free_fn` frees what it holds with the network. */
gpointer *ssim_net_comm_slot(SsimNet *net, GDestroyNotify free_fn);
/* Counts one more match handled by the comm model. */
void ssim_net_count_collective(SsimNet *net);
/* An empty network with the links, topology and configuration of `net` (no flows, clock 0, no
 * comm model): the scratch network the comm model times collectives alone on. */
SsimNet *ssim_net_new_like(const SsimNet *net);
