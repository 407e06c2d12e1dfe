/*
 * The full-mesh topology (cluster.h `fullmesh`: a link per pair of a node's GPUs, no NVSwitch),
 * as TSUBAME 4.0's 4-GPU nodes are wired.  Oracles are hand computations on 4 GPUs with round
 * figures (1 byte/ns per pair link, 2 us per NVLink hop): routes and link counts, a p2p transfer,
 * ring all-reduces on 2 and 4 GPUs in the flow network (rings over every pair's link) and in the
 * analytic closed forms, which must agree to the nanosecond; the bundled tsubame4.ini and its
 * errors; and communication repeated through the flow network, which moves the bytes again.
 */
#include "tests/test_common.h"
#include "tests/net/net-fixtures.h"

#include <shiftsim/analytic.h>
#include <shiftsim/cluster.h>
#include <shiftsim/net.h>

#include <math.h>
#include <string.h>

/* `nodes` nodes of 4 GPUs in a full mesh: 1 byte/ns per direction per pair (3 bytes/ns per GPU
 * over its 3 links), NVLink hop 2 us, round inter-node figures (net-fixtures.h). */
static SsimCluster *mesh_cluster(guint nodes)
{
    SsimCluster *c = t_round_cluster(nodes, 4);
    c->topology = SSIM_TOPOLOGY_FULLMESH;
    c->nvlink_bw = 3e9;
    c->nvlink_pair_bw = 1e9;
    return c;
}

static SsimNet *mesh_net(guint nodes)
{
    g_autoptr(SsimCluster) c = mesh_cluster(nodes);
    GError *error = NULL;
    SsimNet *net = ssim_net_new(c, &error);
    cr_assert_not_null(net, "%s", error ? error->message : "");
    return net;
}

/* The makespan of one collective of `kind` and `bytes` over `ranks` (or a send 0 -> ranks[1] when
 * `p2p`), run `repeat` times, through the flow network; its uncontended time into *alone. */
static SsimTime run_one(SsimNet *net, SsimCollKind kind, const guint32 *ranks, guint n,
                        guint64 bytes, gboolean p2p, guint repeat, SsimTime *alone)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    if (p2p) {
        t_p2p(g, SSIM_OP_SEND, ranks[0], "pp", ranks[1], bytes, NODEPS);
        t_p2p(g, SSIM_OP_RECV, ranks[1], "pp", ranks[0], bytes, NODEPS);
    } else {
        guint32 gi = ssim_graph_add_group(g, "g", ranks, n, NULL);
        for (guint i = 0; i < n; i++)
            t_coll(g, ranks[i], "comm", gi, kind, bytes, NODEPS);
    }
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    SsimCommModel comm = ssim_net_comm_model(net);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &comm;
    cfg.comm_repeat = repeat;
    g_autoptr(SsimTimeline) tl = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(tl, "%s", error ? error->message : "");
    guint nm;
    const SsimTime *unc = ssim_net_uncontended(net, &nm);
    if (alone)
        *alone = unc[0];
    return tl->makespan;
}

Test(fullmesh, links_and_routes)
{
    g_autoptr(SsimNet) net = mesh_net(2);
    /* 8 GPUs: 4 links each (NVLink up/down, PCIe up/down; the NVSwitch ones idle), 8 NICs x 2,
     * 4 rails x 1 leaf x 2, and 8 x 3 pair links. */
    cr_assert_eq(ssim_net_n_links(net), 8 * 4 + 8 * 2 + 4 * 1 * 2 + 8 * 3);
    guint32 links[SSIM_NET_MAX_HOPS];
    /* Inside a node: the pair's own link, one hop, one whole NVLink latency. */
    cr_assert_eq(ssim_net_route(net, 1, 3, links), 1);
    guint32 pair = ssim_net_pair_index(net, 1, 3);
    cr_assert_eq(pair, 1 * 3 + 2);
    cr_assert_eq(links[0], ssim_net_link_id(net, SSIM_LINK_NVLINK_PAIR, pair));
    const SsimNetLink *l = ssim_net_link(net, links[0]);
    cr_assert_eq(l->kind, SSIM_LINK_NVLINK_PAIR);
    cr_assert_float_eq(l->capacity, 1e9, 1.0);
    cr_assert_eq(ssim_net_path_latency(net, 1, 3), 2 * SSIM_US);
    cr_assert_neq(ssim_net_route(net, 3, 1, links) ? links[0] : 0,
                  ssim_net_link_id(net, SSIM_LINK_NVLINK_PAIR, pair), "a link per direction");
    cr_assert_eq(ssim_net_pair_index(net, 1, 5), SSIM_NONE, "different nodes");
    /* Another node on another rail: over the pair link to the local GPU of that rail (PXN). */
    cr_assert_eq(ssim_net_route(net, 1, 6, links), 5);
    cr_assert_eq(links[0],
                 ssim_net_link_id(net, SSIM_LINK_NVLINK_PAIR, ssim_net_pair_index(net, 1, 2)));
    cr_assert_eq(links[1], ssim_net_link_id(net, SSIM_LINK_PCIE_UP, 2));
    cr_assert_eq(ssim_net_path_latency(net, 1, 6), 7 * SSIM_US);
    /* Without the mesh nothing has pair links. */
    g_autoptr(SsimCluster) sw = t_round_cluster(1, 4);
    g_autoptr(SsimNet) sn = ssim_net_new(sw, NULL);
    cr_assert_eq(ssim_net_pair_index(sn, 0, 1), SSIM_NONE);
    cr_assert_eq(ssim_net_route(sn, 0, 1, links), 2);
}

Test(fullmesh, ring_all_reduce_on_four_and_two_gpus)
{
    /* S = 12000 bytes.  4 GPUs: the 6 rings of the mesh put S/24 twice on every link per step,
     * 1000 ns, after the hop's 2000 ns: 2(n-1) = 6 steps, 18000 ns
     * = 6 a + 2 (3/4) S / (3 B_pair) = 12000 + 6000.
     * 2 GPUs: one ring, two steps of S/2 over the one link: 2 (2000 + 6000) = 16000 ns.
     * A send of S: 2000 + 12000 ns. */
    g_autoptr(SsimNet) net = mesh_net(1);
    const guint32 four[4] = {0, 1, 2, 3}, two[2] = {1, 2};
    cr_assert_eq(run_one(net, SSIM_COLL_ALLREDUCE, four, 4, 12000, FALSE, 1, NULL), 18000);
    cr_assert_eq(run_one(net, SSIM_COLL_ALLREDUCE, two, 2, 12000, FALSE, 1, NULL), 16000);
    cr_assert_eq(run_one(net, SSIM_COLL_ALLREDUCE, four, 0, 12000, TRUE, 1, NULL), 14000);
    /* All-gather on 4: 3 steps of 1000 + 2000. */
    cr_assert_eq(run_one(net, SSIM_COLL_ALLGATHER, four, 4, 12000, FALSE, 1, NULL), 9000);

    /* The analytic closed forms give the same nanoseconds. */
    g_autoptr(SsimCluster) c = mesh_cluster(1);
    SsimAnalyticParams p;
    ssim_analytic_params_from_cluster(&p, c, SSIM_DTYPE_BF16);
    cr_assert_float_eq(p.nvlink_pair_bw, 1e9, 1.0);
    cr_assert_eq(ssim_analytic_collective_time(&p, SSIM_COLL_ALLREDUCE, 12000, 4, 1, 4), 18000);
    cr_assert_eq(ssim_analytic_collective_time(&p, SSIM_COLL_ALLREDUCE, 12000, 2, 1, 2), 16000);
    cr_assert_eq(ssim_analytic_collective_time(&p, SSIM_COLL_ALLGATHER, 12000, 4, 1, 4), 9000);
    cr_assert_eq(ssim_analytic_p2p_time(&p, 12000, FALSE), 14000);
    /* A permute uses one link per member. */
    cr_assert_eq(ssim_analytic_collective_time(&p, SSIM_COLL_PERMUTE, 12000, 4, 1, 4), 14000);
    /* On an NVSwitch with the same 3 bytes/ns per GPU, 2 GPUs get all of it. */
    c->topology = SSIM_TOPOLOGY_RAIL_FAT_TREE;
    ssim_analytic_params_from_cluster(&p, c, SSIM_DTYPE_BF16);
    cr_assert_eq(ssim_analytic_collective_time(&p, SSIM_COLL_ALLREDUCE, 12000, 2, 1, 2),
                 2 * 2000 + 4000);
}

Test(fullmesh, repeated_communication_moves_the_bytes_again)
{
    g_autoptr(SsimNet) net = mesh_net(1);
    const guint32 four[4] = {0, 1, 2, 3};
    SsimTime alone1, alone3;
    SsimNetStats a, b, c;
    ssim_net_stats(net, &a);
    SsimTime once = run_one(net, SSIM_COLL_ALLREDUCE, four, 4, 12000, FALSE, 1, &alone1);
    ssim_net_stats(net, &b);
    SsimTime thrice = run_one(net, SSIM_COLL_ALLREDUCE, four, 4, 12000, FALSE, 3, &alone3);
    ssim_net_stats(net, &c);
    cr_assert_eq(thrice, 3 * once);
    cr_assert_eq(alone1, once);
    cr_assert_eq(alone3, 3 * once, "the time alone counts every run, so none is contention");
    /* 6 steps of 6 rings x 4 flows, started once, then three times. */
    cr_assert_eq(b.flows_started - a.flows_started, 6 * 24);
    cr_assert_eq(c.flows_started - b.flows_started, 3 * 6 * 24);
}

Test(fullmesh, bundled_tsubame4)
{
    GError *error = NULL;
    g_autoptr(SsimCluster) t = ssim_cluster_load("tsubame4", &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cr_assert_eq(t->gpus_per_node, 4);
    cr_assert_eq(t->topology, SSIM_TOPOLOGY_FULLMESH);
    cr_assert_float_eq(t->nvlink_pair_bw, 150e9, 1.0);
    cr_assert_float_eq(t->nvlink_bw, 450e9, 1.0);
    cr_assert_eq(t->nics_per_node, 4);
    cr_assert_float_eq(t->nic_bw, 25e9, 1.0);
    cr_assert_float_eq(t->peak_flops[SSIM_DTYPE_BF16], 989.5e12, 1e6);
    /* Written back and read again: the same figures. */
    g_autoptr(GString) ini = ssim_cluster_write_ini(t, NULL);
    cr_assert(strstr(ini->str, "kind = fullmesh\n"), "%s", ini->str);
    g_autoptr(SsimCluster) back = ssim_cluster_load_data(ini->str, -1, "back.ini", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    cr_assert_eq(back->topology, SSIM_TOPOLOGY_FULLMESH);
    cr_assert_float_eq(back->nvlink_pair_bw, 150e9, 1.0);
    cr_assert_str_eq(ssim_topology_name(SSIM_TOPOLOGY_FULLMESH), "fullmesh");

    /* Without the per-pair key, a GPU's NVLink spreads evenly over its peers. */
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "models", "clusters", "tsubame4.ini", NULL);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    char *key = strstr(text, "nvlink_pair_bandwidth_GB_s = 150");
    cr_assert_not_null(key);
    memcpy(key, "#", 1);
    g_autoptr(SsimCluster) even = ssim_cluster_load_data(text, -1, "even.ini", &error);
    cr_assert_not_null(even, "%s", error ? error->message : "");
    cr_assert_float_eq(even->nvlink_pair_bw, 450e9 / 3, 1.0);

    /* Errors name the file, the group and the key. */
    const struct {
        const char *from, *to, *message;
    } bad[] = {
        {"kind = fullmesh", "kind = torus", "kind: 'torus' is not one of rail-fat-tree | fullmesh"},
        {"nvlink_pair_bandwidth_GB_s = 150", "nvlink_pair_bandwidth_GB_s = -3",
         "nvlink_pair_bandwidth_GB_s"},
        {"gpus_per_node = 4", "gpus_per_node = 1", "nvlink_pair_bandwidth_GB_s"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *orig = NULL;
        cr_assert(g_file_get_contents(path, &orig, NULL, NULL));
        char *at = strstr(orig, bad[i].from);
        cr_assert_not_null(at);
        g_autoptr(GString) s = g_string_new_len(orig, at - orig);
        g_string_append(s, bad[i].to);
        g_string_append(s, at + strlen(bad[i].from));
        g_autoptr(GError) e = NULL;
        g_autoptr(SsimCluster) c = ssim_cluster_load_data(s->str, -1, "bad.ini", &e);
        cr_assert_null(c, "case %zu loaded", i);
        cr_assert(strstr(e->message, bad[i].message) && g_str_has_prefix(e->message, "bad.ini:"),
                  "case %zu: %s", i, e->message);
    }
}
