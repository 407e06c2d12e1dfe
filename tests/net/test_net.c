/*
 * Tests for the topology keys and the flow-level network solver.  Oracles are hand
 * computations: link counts and capacities from the cluster figures, route latencies summed by
 * hand, rates of a hand-solved max-min example, completion times of flows sharing a link
 * computed on paper (capacities of 1 byte/ns keep the arithmetic exact), conservation of
 * capacity on saturated links, and bit-identical reruns.
 */
#include <criterion/criterion.h>
#include "tests/net/net-fixtures.h"

#include <shiftsim/cluster.h>
#include <shiftsim/net.h>

#include <math.h>
#include <string.h>

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message '%s' lacks '%s'", (msg), (needle))

static SsimCluster *load_ok(const char *name)
{
    GError *error = NULL;
    SsimCluster *c = ssim_cluster_load(name, &error);
    cr_assert_not_null(c, "loading %s: %s", name, error ? error->message : "?");
    return c;
}

/* The bundled h200 file with `from` replaced by `to` (or [topology] cut off when to is NULL). */
static SsimCluster *load_edited(const char *from, const char *to, GError **error)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "models", "clusters", "dgx-h200.ini", NULL);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in dgx-h200.ini", from);
    if (to == NULL) {
        *at = '\0';
        return ssim_cluster_load_data(text, -1, "edited.ini", error);
    }
    g_autoptr(GString) s = g_string_new_len(text, at - text);
    g_string_append(s, to);
    g_string_append(s, at + strlen(from));
    return ssim_cluster_load_data(s->str, -1, "edited.ini", error);
}

/* --- Topology keys ------------------------------------------------------------------------ */

Test(net, topology_keys_bundled)
{
    g_autoptr(SsimCluster) h = load_ok("dgx-h200");
    cr_assert_eq(h->nvlink_ports, 18);
    cr_assert_float_eq(h->pcie_bw, 64e9, 1.0);
    cr_assert_eq(h->pcie_latency, 1 * SSIM_US);
    cr_assert_eq(h->rails, 8);
    cr_assert_eq(h->gpus_per_nic, 1);
    cr_assert_eq(h->nodes_per_leaf, 32);
    cr_assert_float_eq(h->oversubscription, 1.0, 1e-12);
    cr_assert_eq(h->spine_latency, 500);
    cr_assert_eq(h->net_algorithm, SSIM_NET_ALGO_AUTO);
    cr_assert_eq(h->step_overhead, 0);

    g_autoptr(SsimCluster) a = load_ok("dgx-a100");
    cr_assert_eq(a->nvlink_ports, 12);
    cr_assert_float_eq(a->pcie_bw, 32e9, 1.0);
    cr_assert_eq(a->nodes_per_leaf, 20);
    g_autoptr(SsimCluster) h1 = load_ok("dgx-h100");
    cr_assert_eq(h1->nodes_per_leaf, 32);
    cr_assert_float_eq(h1->pcie_bw, 64e9, 1.0);

    /* The embedded default keeps in step with the bundled file. */
    g_autoptr(SsimCluster) d = ssim_cluster_default();
    cr_assert_eq(d->nvlink_ports, h->nvlink_ports);
    cr_assert_float_eq(d->pcie_bw, h->pcie_bw, 1.0);
    cr_assert_eq(d->pcie_latency, h->pcie_latency);
    cr_assert_eq(d->rails, h->rails);
    cr_assert_eq(d->gpus_per_nic, h->gpus_per_nic);
    cr_assert_eq(d->nodes_per_leaf, h->nodes_per_leaf);
    cr_assert_float_eq(d->oversubscription, h->oversubscription, 1e-12);
    cr_assert_eq(d->spine_latency, h->spine_latency);
    cr_assert_eq(d->net_algorithm, h->net_algorithm);
    cr_assert_eq(d->step_overhead, h->step_overhead);
}

Test(net, topology_defaults_when_group_absent)
{
    GError *error = NULL;
    g_autoptr(SsimCluster) c = load_edited("[topology]", NULL, &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_eq(c->rails, c->nics_per_node);
    cr_assert_eq(c->gpus_per_nic, 1);
    cr_assert_float_eq(c->pcie_bw, c->nic_bw, 1.0);
    cr_assert_eq(c->pcie_latency, 0);
    cr_assert_float_eq(c->oversubscription, 1.0, 1e-12);
    cr_assert_eq(c->nodes_per_leaf, 32);
    cr_assert_eq(c->spine_latency, 0);
}

Test(net, topology_key_errors)
{
    GError *error = NULL;
    cr_assert_null(load_edited("oversubscription = 1", "oversubscription = 0.5", &error));
    assert_has(error->message, "edited.ini:");
    assert_has(error->message, "oversubscription:");
    g_clear_error(&error);

    cr_assert_null(load_edited("rails = 8", "rails = 9", &error));
    assert_has(error->message, "rails: 9 is out of range");
    g_clear_error(&error);

    cr_assert_null(load_edited("algorithm = auto", "algorithm = butterfly", &error));
    assert_has(error->message, "algorithm: 'butterfly' is not one of auto | ring | tree");
    g_clear_error(&error);

    cr_assert_null(load_edited("kind = rail-fat-tree", "kind = torus", &error));
    assert_has(error->message, "kind: 'torus' is not one of rail-fat-tree");
    g_clear_error(&error);

    cr_assert_null(load_edited("nodes_per_leaf = 32", "nodes_per_leef = 32", &error));
    assert_has(error->message, "nodes_per_leef");
    g_clear_error(&error);

    /* A fixed algorithm loads. */
    g_autoptr(SsimCluster) c = load_edited("algorithm = auto", "algorithm = tree", &error);
    cr_assert_not_null(c);
    cr_assert_eq(c->net_algorithm, SSIM_NET_ALGO_TREE);
}

/* --- Links and routes --------------------------------------------------------------------- */

/* t_round_cluster with 4 GPUs per node, a leaf group of `nodes_per_leaf` nodes, uplinks
 * oversubscribed `oversub`:1 and 300 ns per spine hop. */
static SsimCluster *small_cluster(guint nodes, guint nodes_per_leaf, double oversub)
{
    SsimCluster *c = t_round_cluster(nodes, 4);
    c->nodes_per_leaf = nodes_per_leaf;
    c->oversubscription = oversub;
    c->spine_latency = 300;
    return c;
}

Test(net, links_and_capacities)
{
    g_autoptr(SsimCluster) c = small_cluster(4, 2, 2.0);
    g_autoptr(SsimNet) net = ssim_net_new(c, NULL);
    cr_assert_not_null(net);
    /* 16 GPUs x 4 + 16 NICs x 2 + 4 rails x 2 leaves x 2. */
    cr_assert_eq(ssim_net_n_links(net), 64 + 32 + 16);
    const SsimNetLink *l = ssim_net_link(net, ssim_net_link_id(net, SSIM_LINK_NVLINK_UP, 5));
    cr_assert_eq(l->kind, SSIM_LINK_NVLINK_UP);
    cr_assert_float_eq(l->capacity, 4e9, 1.0);
    l = ssim_net_link(net, ssim_net_link_id(net, SSIM_LINK_PCIE_DOWN, 5));
    cr_assert_float_eq(l->capacity, 2e9, 1.0);
    cr_assert_eq(l->latency, 1 * SSIM_US);
    l = ssim_net_link(net, ssim_net_link_id(net, SSIM_LINK_NIC_UP, 3));
    cr_assert_float_eq(l->capacity, 1e9, 1.0);
    /* (5 - 2 x 1) / 2 us per NIC cable. */
    cr_assert_eq(l->latency, 1500);
    /* A leaf has 2 nodes x 1 NIC of its rail: 2 GB/s down, 1 GB/s up at 2:1. */
    l = ssim_net_link(net, ssim_net_link_id(net, SSIM_LINK_LEAF_UP, 0));
    cr_assert_float_eq(l->capacity, 1e9, 1.0);
    cr_assert_eq(l->latency, 300);

    /* Efficiencies scale NVLink and the fabric, not PCIe. */
    c->nvlink_efficiency = 0.5;
    c->ib_efficiency = 0.25;
    g_autoptr(SsimNet) eff = ssim_net_new(c, NULL);
    cr_assert_float_eq(
        ssim_net_link(eff, ssim_net_link_id(eff, SSIM_LINK_NVLINK_DOWN, 0))->capacity, 2e9, 1.0);
    cr_assert_float_eq(ssim_net_link(eff, ssim_net_link_id(eff, SSIM_LINK_NIC_DOWN, 0))->capacity,
                       0.25e9, 1.0);
    cr_assert_float_eq(ssim_net_link(eff, ssim_net_link_id(eff, SSIM_LINK_PCIE_UP, 0))->capacity,
                       2e9, 1.0);
}

Test(net, routes_and_latencies)
{
    g_autoptr(SsimCluster) c = small_cluster(4, 2, 1.0);
    g_autoptr(SsimNet) net = ssim_net_new(c, NULL);
    guint32 links[SSIM_NET_MAX_HOPS];

    /* Same node: NVLink up, NVLink down. */
    cr_assert_eq(ssim_net_route(net, 1, 2, links), 2);
    cr_assert_eq(links[0], ssim_net_link_id(net, SSIM_LINK_NVLINK_UP, 1));
    cr_assert_eq(links[1], ssim_net_link_id(net, SSIM_LINK_NVLINK_DOWN, 2));
    cr_assert_eq(ssim_net_path_latency(net, 1, 2), 2 * SSIM_US);

    /* Next node, same rail, same leaf: PCIe, NIC, NIC, PCIe; exactly nic_latency. */
    cr_assert_eq(ssim_net_route(net, 1, 5, links), 4);
    cr_assert_eq(links[0], ssim_net_link_id(net, SSIM_LINK_PCIE_UP, 1));
    cr_assert_eq(links[1], ssim_net_link_id(net, SSIM_LINK_NIC_UP, 1));
    cr_assert_eq(links[2], ssim_net_link_id(net, SSIM_LINK_NIC_DOWN, 4 + 1));
    cr_assert_eq(links[3], ssim_net_link_id(net, SSIM_LINK_PCIE_DOWN, 5));
    cr_assert_eq(ssim_net_path_latency(net, 1, 5), 5 * SSIM_US);
    cr_assert_float_eq(ssim_net_path_bandwidth(net, 1, 5), 1e9, 1.0);

    /* Another leaf group (node 0 -> node 2): through the spine on rail 1. */
    cr_assert_eq(ssim_net_route(net, 1, 9, links), 6);
    cr_assert_eq(links[2], ssim_net_link_id(net, SSIM_LINK_LEAF_UP, 1 * 2 + 0));
    cr_assert_eq(links[3], ssim_net_link_id(net, SSIM_LINK_LEAF_DOWN, 1 * 2 + 1));
    cr_assert_eq(ssim_net_path_latency(net, 1, 9), 5 * SSIM_US + 2 * 300);

    /* Another rail: NVLink to the local GPU on the destination's rail first (PXN). */
    cr_assert_eq(ssim_net_route(net, 1, 6, links), 6);
    cr_assert_eq(links[0], ssim_net_link_id(net, SSIM_LINK_NVLINK_UP, 1));
    cr_assert_eq(links[1], ssim_net_link_id(net, SSIM_LINK_NVLINK_DOWN, 2));
    cr_assert_eq(links[2], ssim_net_link_id(net, SSIM_LINK_PCIE_UP, 2));
    cr_assert_eq(links[3], ssim_net_link_id(net, SSIM_LINK_NIC_UP, 2));
    cr_assert_eq(ssim_net_path_latency(net, 1, 6), 7 * SSIM_US);

    /* Two GPUs per NIC share it. */
    c->gpus_per_nic = 2;
    c->rails = 2;
    g_autoptr(SsimNet) shared = ssim_net_new(c, NULL);
    ssim_net_route(shared, 0, 4, links);
    guint32 nic_a = links[1];
    ssim_net_route(shared, 1, 5, links);
    cr_assert_eq(links[1], nic_a);
}

/* --- The solver --------------------------------------------------------------------------- */

Test(net, two_flows_share_a_link)
{
    const double cap[] = {1e9}; /* 1 byte/ns */
    g_autoptr(SsimNet) net = ssim_net_new_links(cap, 1);
    guint32 l = 0;
    guint32 a = ssim_net_flow_start_path(net, &l, 1, 1000, 1);
    guint32 b = ssim_net_flow_start_path(net, &l, 1, 3000, 2);
    cr_assert_float_eq(ssim_net_flow_rate(net, a), 0.5e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, b), 0.5e9, 1.0);
    /* A: 1000 bytes at 0.5 byte/ns -> 2000 ns. */
    cr_assert_eq(ssim_net_next_completion(net), 2000);
    guint64 owner = 0;
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 1);
    cr_assert_eq(ssim_net_now(net), 2000);
    /* At exactly that instant B has 2000 bytes left and the whole link. */
    cr_assert_float_eq(ssim_net_flow_remaining(net, b), 2000.0, 1e-6);
    cr_assert_float_eq(ssim_net_flow_rate(net, b), 1e9, 1.0);
    cr_assert_eq(ssim_net_next_completion(net), 4000);
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 2);
    cr_assert_eq(ssim_net_now(net), 4000);
    cr_assert_eq(ssim_net_n_active(net), 0);
    cr_assert_eq(ssim_net_next_completion(net), SSIM_TIME_NEVER);
    cr_assert_not(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
}

Test(net, a_flow_that_ends_frees_bandwidth_at_that_instant)
{
    /* A and B share link 0; B and C share link 1 (2 bytes/ns).  A (600 bytes) ends at 1200 ns
     * and only then does B, capped by link 0 until now, rise to its share of link 1. */
    const double cap[] = {1e9, 2e9};
    g_autoptr(SsimNet) net = ssim_net_new_links(cap, 2);
    guint32 p0 = 0, p1 = 1, p01[] = {0, 1};
    guint32 a = ssim_net_flow_start_path(net, &p0, 1, 600, 1);
    guint32 b = ssim_net_flow_start_path(net, p01, 2, 3000, 2);
    guint32 c = ssim_net_flow_start_path(net, &p1, 1, 6000, 3);
    cr_assert_float_eq(ssim_net_flow_rate(net, a), 0.5e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, b), 0.5e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, c), 1.5e9, 1.0);
    guint64 owner;
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 1);
    cr_assert_eq(ssim_net_now(net), 1200);
    /* At 1200: B has 3000 - 600 = 2400 left, C 6000 - 1800 = 4200; now each gets 1 byte/ns. */
    cr_assert_float_eq(ssim_net_flow_remaining(net, b), 2400.0, 1e-6);
    cr_assert_float_eq(ssim_net_flow_remaining(net, c), 4200.0, 1e-6);
    cr_assert_float_eq(ssim_net_flow_rate(net, b), 1e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, c), 1e9, 1.0);
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 2);
    cr_assert_eq(ssim_net_now(net), 1200 + 2400);
    /* C alone: 4200 - 2400 = 1800 left at 2 bytes/ns. */
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 3);
    cr_assert_eq(ssim_net_now(net), 3600 + 900);
}

Test(net, max_min_hand_solved_three_links)
{
    /*
     * L0 = 10, L1 = 4, L2 = 6 (GB/s).  f0: L0 L1; f1: L0 L2; f2: L1; f3: L2; f4: L0.
     * Progressive filling: L1's share 4/2 = 2 is the smallest -> f0 = f2 = 2.  Then L2's
     * 6/2 = 3 is below L0's (10 - 2)/2 = 4 -> f1 = f3 = 3.  Then L0 has 10 - 2 - 3 = 5 for f4.
     */
    const double cap[] = {10e9, 4e9, 6e9};
    g_autoptr(SsimNet) net = ssim_net_new_links(cap, 3);
    const guint32 p0[] = {0, 1}, p1[] = {0, 2}, p2[] = {1}, p3[] = {2}, p4[] = {0};
    guint32 f[5];
    f[0] = ssim_net_flow_start_path(net, p0, 2, 1 << 30, 0);
    f[1] = ssim_net_flow_start_path(net, p1, 2, 1 << 30, 1);
    f[2] = ssim_net_flow_start_path(net, p2, 1, 1 << 30, 2);
    f[3] = ssim_net_flow_start_path(net, p3, 1, 1 << 30, 3);
    f[4] = ssim_net_flow_start_path(net, p4, 1, 1 << 30, 4);
    const double want[] = {2e9, 3e9, 2e9, 3e9, 5e9};
    for (int i = 0; i < 5; i++)
        cr_assert_float_eq(ssim_net_flow_rate(net, f[i]), want[i], 1e-3, "flow %d", i);
    /* Every link is saturated: the rates on it sum to its capacity. */
    cr_assert_float_eq(want[0] + want[1] + want[4], cap[0], 1e-3);
    cr_assert_float_eq(want[0] + want[2], cap[1], 1e-3);
    cr_assert_float_eq(want[1] + want[3], cap[2], 1e-3);
}

Test(net, zero_bytes_complete_at_once_and_ties_go_by_start_order)
{
    const double cap[] = {1e9, 1e9};
    g_autoptr(SsimNet) net = ssim_net_new_links(cap, 2);
    guint32 p0 = 0, p1 = 1;
    ssim_net_flow_start_path(net, &p1, 1, 500, 10);
    ssim_net_flow_start_path(net, &p0, 1, 500, 11);
    ssim_net_flow_start_path(net, &p0, 1, 0, 12);
    guint64 owner;
    cr_assert(ssim_net_pop_completion(net, 0, &owner, NULL));
    cr_assert_eq(owner, 12);
    cr_assert_eq(ssim_net_now(net), 0);
    cr_assert_not(ssim_net_pop_completion(net, 499, &owner, NULL));
    cr_assert(ssim_net_pop_completion(net, 500, &owner, NULL));
    cr_assert_eq(owner, 10);
    cr_assert(ssim_net_pop_completion(net, 500, &owner, NULL));
    cr_assert_eq(owner, 11);
    cr_assert_eq(ssim_net_now(net), 500);
}

Test(net, congested_uplink_limits_a_flow)
{
    /* 4 nodes, 2 per leaf, 4:1: a leaf's uplink per rail is 2 x 1 GB/s / 4 = 0.5 GB/s. */
    g_autoptr(SsimCluster) c = small_cluster(4, 2, 4.0);
    g_autoptr(SsimNet) net = ssim_net_new(c, NULL);
    /* GPU 0 (node 0) -> GPU 8 (node 2, other leaf): the uplink is the bottleneck. */
    guint32 far = ssim_net_flow_start(net, 0, 8, 1000000, 1);
    /* GPU 1 (node 0) -> GPU 5 (node 1, same leaf): NIC-limited at 1 GB/s. */
    guint32 near = ssim_net_flow_start(net, 1, 5, 1000000, 2);
    cr_assert_float_eq(ssim_net_flow_rate(net, far), 0.5e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, near), 1e9, 1.0);
    cr_assert_eq(ssim_net_next_completion(net), 1000000); /* 1 MB at 1 GB/s */
    guint64 owner;
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 2);
    cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, &owner, NULL));
    cr_assert_eq(owner, 1);
    cr_assert_eq(ssim_net_now(net), 2000000); /* 1 MB at 0.5 GB/s */

    /* Two cross-leaf flows on rail 0 from both nodes of leaf 0 share its uplink. */
    ssim_net_reset(net);
    guint32 x = ssim_net_flow_start(net, 0, 8, 1000, 1);
    guint32 y = ssim_net_flow_start(net, 4, 12, 1000, 2);
    cr_assert_float_eq(ssim_net_flow_rate(net, x), 0.25e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(net, y), 0.25e9, 1.0);

    /* At 1:1 the same flows run at NIC speed. */
    g_autoptr(SsimCluster) full = small_cluster(4, 2, 1.0);
    g_autoptr(SsimNet) fat = ssim_net_new(full, NULL);
    x = ssim_net_flow_start(fat, 0, 8, 1000, 1);
    y = ssim_net_flow_start(fat, 4, 12, 1000, 2);
    cr_assert_float_eq(ssim_net_flow_rate(fat, x), 1e9, 1.0);
    cr_assert_float_eq(ssim_net_flow_rate(fat, y), 1e9, 1.0);
}

/* Starts `n` pseudo-random flows at pseudo-random times; returns a digest of (owner, time). */
static guint64 random_run(guint n, guint64 *events)
{
    g_autoptr(SsimCluster) c = small_cluster(8, 2, 2.0);
    g_autoptr(SsimNet) net = ssim_net_new(c, NULL);
    g_autoptr(GRand) rng = g_rand_new_with_seed(42);
    guint64 digest = 1469598103934665603ULL;
    guint started = 0;
    SsimTime t = 0;
    *events = 0;
    while (started < n || ssim_net_n_active(net) > 0) {
        SsimTime next_start = started < n ? t + g_rand_int_range(rng, 0, 2000) : SSIM_TIME_NEVER;
        guint64 owner;
        if (ssim_net_next_completion(net) <= next_start) {
            cr_assert(ssim_net_pop_completion(net, next_start, &owner, NULL));
            digest = (digest ^ owner) * 1099511628211ULL;
            digest = (digest ^ (guint64)ssim_net_now(net)) * 1099511628211ULL;
            (*events)++;
            t = ssim_net_now(net);
            continue;
        }
        ssim_net_advance(net, next_start);
        t = next_start;
        guint32 src = (guint32)g_rand_int_range(rng, 0, 32);
        guint32 dst = (guint32)g_rand_int_range(rng, 0, 32);
        ssim_net_flow_start(net, src, dst, (guint64)g_rand_int_range(rng, 1, 1 << 20), started);
        started++;
    }
    SsimNetStats st;
    ssim_net_stats(net, &st);
    cr_assert_eq(st.flows_started, n);
    cr_assert_eq(st.flows_finished, n);
    return digest;
}

Test(net, deterministic)
{
    guint64 e1, e2;
    guint64 d1 = random_run(3000, &e1);
    guint64 d2 = random_run(3000, &e2);
    cr_assert_eq(e1, 3000);
    cr_assert_eq(d1, d2);
}

/* A from-scratch reference: progressive filling over every active flow, one bottleneck level
 * per round, as in the textbook (Bertsekas and Gallager, Data Networks, 6.5.2). */
static void reference_rates(const SsimNet *net, guint n, guint32 (*paths)[SSIM_NET_MAX_HOPS],
                            const guint *hops, double *rate)
{
    guint nl = ssim_net_n_links(net);
    g_autofree double *rem = g_new(double, nl);
    g_autofree guint *cnt = g_new0(guint, nl);
    g_autofree gboolean *fixed = g_new0(gboolean, n);
    for (guint l = 0; l < nl; l++)
        rem[l] = ssim_net_link(net, l)->capacity;
    for (guint f = 0; f < n; f++)
        for (guint h = 0; h < hops[f]; h++)
            cnt[paths[f][h]]++;
    for (;;) {
        double share = INFINITY;
        for (guint l = 0; l < nl; l++)
            if (cnt[l] > 0)
                share = MIN(share, rem[l] / cnt[l]);
        if (!isfinite(share))
            break;
        for (guint f = 0; f < n; f++) {
            if (fixed[f])
                continue;
            gboolean bottleneck = FALSE;
            for (guint h = 0; h < hops[f]; h++) {
                guint l = paths[f][h];
                bottleneck = bottleneck || rem[l] / cnt[l] <= share * (1 + 1e-9);
            }
            if (!bottleneck)
                continue;
            fixed[f] = TRUE;
            rate[f] = share;
            for (guint h = 0; h < hops[f]; h++) {
                rem[paths[f][h]] -= share;
                cnt[paths[f][h]]--;
            }
        }
    }
}

Test(net, incremental_solver_matches_reference)
{
    g_autoptr(SsimCluster) c = small_cluster(4, 2, 3.0);
    g_autoptr(SsimNet) net = ssim_net_new(c, NULL);
    g_autoptr(GRand) rng = g_rand_new_with_seed(7);
    enum { MAXF = 256 };
    guint32 handle[MAXF], paths[MAXF][SSIM_NET_MAX_HOPS];
    guint hops[MAXF], n = 0;
    double rate[MAXF];
    for (guint round = 0; round < 400; round++) {
        /* Start a few flows, or take the next completion. */
        if (n < 40 || g_rand_boolean(rng)) {
            guint k = (guint)g_rand_int_range(rng, 1, 4);
            for (guint i = 0; i < k && n < MAXF; i++) {
                guint32 s = (guint32)g_rand_int_range(rng, 0, 16);
                guint32 d = (guint32)g_rand_int_range(rng, 0, 16);
                if (s == d)
                    continue;
                hops[n] = ssim_net_route(net, s, d, paths[n]);
                handle[n] = ssim_net_flow_start(net, s, d,
                                                (guint64)g_rand_int_range(rng, 1000, 1 << 22), n);
                n++;
            }
        } else {
            guint32 done;
            cr_assert(ssim_net_pop_completion(net, SSIM_TIME_NEVER, NULL, &done));
            guint i = 0;
            while (handle[i] != done)
                i++;
            n--;
            handle[i] = handle[n];
            hops[i] = hops[n];
            memcpy(paths[i], paths[n], sizeof paths[i]);
        }
        reference_rates(net, n, paths, hops, rate);
        for (guint i = 0; i < n; i++)
            cr_assert_float_eq(ssim_net_flow_rate(net, handle[i]), rate[i], rate[i] * 1e-9,
                               "round %u flow %u", round, i);
        cr_assert_eq(ssim_net_n_active(net), n);
    }
}
