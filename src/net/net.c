/*
 * The flow-level network: links built from a cluster's topology, rail-aligned routes, and a
 * max-min fair solver over active flows (see include/shiftsim/net.h for the model).
 *
 * Data structures.  Links are a flat array; each keeps the slots of the flows crossing it in a
 * small array that only grows, and each flow remembers its position in every one of its links'
 * arrays, so adding and removing a flow is O(hops).  Flows live in a pool with a free list.  The
 * pending completions form a binary min-heap (src/core/heap.h) of flow slots ordered by (end
 * time, flow id), with each flow's heap position stored in it so a changed end time is re-sifted
 * in O(log n).
 *
 * Lazy, incremental solving.  Starting or ending a flow only marks its links dirty.  Before
 * anything needs a rate or an end time (the next completion, advancing the clock), the solver
 * collects the connected component of the dirty links (links and flows reachable through shared
 * links), settles those flows' progress at the current time, and runs progressive filling on
 * that component alone: find the link with the smallest fair share (remaining capacity over
 * unfrozen flows), freeze its flows at that share, charge it to their other links, repeat.  The
 * links wait in a lazy min-heap keyed by share, so a solve costs O((L + F h) log) for L links
 * and F flows of h hops, not O(L) per bottleneck level.
 * Flows outside the component keep their rates, which max-min fairness guarantees are
 * unchanged.  A batch of starts at one instant thus costs one solve.
 *
 * Invariants: a flow's (remaining, since, rate) give its bytes left at any t >= since as
 * remaining - rate (t - since); every active flow with links is either in the heap with an end
 * time computed from its current rate, or on a dirty link; now never decreases.  Every scratch
 * array grows to the peak and is reused, so the steady state allocates nothing.
 */
#include "src/net/net-private.h"

#include <math.h>
#include <string.h>

#include "src/core/heap.h"

typedef struct {
    SsimNetLink pub;
    guint32 *flows; /* slots of the active flows crossing it */
    guint32 n_flows, cap_flows;
    double rem;      /* solver: capacity not yet given to frozen flows */
    guint32 unfixed; /* solver: flows not yet frozen */
    guint32 mark;    /* epoch of the last solve or dirty marking that visited it */
    guint32 dirty;   /* epoch in which it was marked dirty */
} Link;

typedef struct {
    guint64 id;
    guint64 owner;
    double remaining; /* bytes left at `since` */
    double rate;      /* bytes/s */
    SsimTime since;
    SsimTime end;
    guint32 heap_pos; /* SSIM_NONE when not in the heap */
    guint32 mark;
    guint32 next_free;
    guint8 n_hops;
    gboolean active;
    gboolean fixed;
    guint32 links[SSIM_NET_MAX_HOPS];
    guint32 pos[SSIM_NET_MAX_HOPS]; /* index of this flow in links[i]'s array */
} Flow;

/* A growable array of guint32 that keeps its memory between uses. */
typedef struct {
    guint32 *v;
    guint32 n, cap;
} U32Vec;

static inline void vec_push(U32Vec *a, guint32 x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = g_renew(guint32, a->v, a->cap);
    }
    a->v[a->n++] = x;
}

/*
 * The solver's lazy min-heap of (share, link).  A link has at most one entry (solve() pushes each
 * once and only ever replaces the entry it pops), so ties on the share are broken by the link
 * index and the order is strict, as heap.h requires: solves are deterministic.
 */
typedef struct {
    double share;
    guint32 link;
} LinkKey;

static inline gboolean key_less(gpointer ctx, const LinkKey *a, const LinkKey *b)
{
    (void)ctx;
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

SSIM_HEAP_DEFINE(LinkHeap, link_heap, LinkKey, gpointer, key_less, SSIM_HEAP_NO_POS)

/*
 * The pending completions: flow slots ordered by (end time, flow id), ids being unique.  Each flow
 * records its index in the heap (heap_pos), so a flow whose end time changed is re-sifted, and a
 * finished one removed, in O(log n).
 */
static inline gboolean flow_earlier(SsimNet *net, const guint32 *a, const guint32 *b);
static inline void flow_moved(SsimNet *net, const guint32 *slot, gsize i);

SSIM_HEAP_DEFINE(FlowHeap, flow_heap, guint32, SsimNet *, flow_earlier, flow_moved)

struct SsimNet {
    SsimNetConfig config;
    struct SsimNetTopo topo;
    guint n_gpus;
    Link *links;
    guint n_links;
    guint32 base_nic, base_leaf, base_pair;

    Flow *flows;
    guint32 n_flows, cap_flows, free_head;
    guint n_active;
    guint64 next_id;
    FlowHeap heap; /* pending completions */
    SsimTime now;

    /* Solver state. */
    U32Vec dirty; /* links marked dirty since the last solve */
    guint32 epoch;
    U32Vec stack, comp_flows, comp_links;
    LinkHeap lheap;

    SsimNetStats stats;
    gpointer comm;
    GDestroyNotify comm_free;
};

static const char *const link_kind_names[] = {
#define SSIM_X(e, s) s,
    SSIM_LINK_KIND_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_link_kind_name(SsimLinkKind kind)
{
    g_return_val_if_fail((guint)kind < SSIM_LINK_KIND_N, "?");
    return link_kind_names[kind];
}

void ssim_net_config_init(SsimNetConfig *config, const SsimCluster *cluster)
{
    g_return_if_fail(config != NULL);
    config->use_efficiency = TRUE;
    config->algorithm = cluster ? (SsimNetAlgorithm)cluster->net_algorithm : SSIM_NET_ALGO_AUTO;
    config->step_overhead = cluster ? cluster->step_overhead : 0;
    config->collective_overhead = cluster ? cluster->collective_overhead : 0;
    config->collective_copy_bw = cluster ? cluster->collective_copy_bw : 0;
    config->chunk_bytes = 512 * 1024;
    config->max_chunks = 64;
}

static SsimNet *net_alloc(guint n_links)
{
    SsimNet *net = g_new0(SsimNet, 1);
    net->links = g_new0(Link, MAX(n_links, 1u));
    net->n_links = n_links;
    net->free_head = SSIM_NONE;
    return net;
}

static void set_link(SsimNet *net, guint32 id, SsimLinkKind kind, guint32 index, double cap,
                     SsimTime latency)
{
    net->links[id].pub = (SsimNetLink){kind, index, cap, latency};
}

SsimNet *ssim_net_new_config(const SsimCluster *c, const SsimNetConfig *config, GError **error)
{
    g_return_val_if_fail(c != NULL && config != NULL, NULL);
    if (!ssim_cluster_check(c, error)) {
        g_prefix_error(error, "%s: ", c->source ? c->source : "cluster");
        return NULL;
    }
    if (config->algorithm >= SSIM_NET_ALGO_N || config->max_chunks == 0 ||
        config->chunk_bytes == 0 || config->step_overhead < 0 || config->collective_overhead < 0 ||
        !(config->collective_copy_bw >= 0 && isfinite(config->collective_copy_bw))) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "network configuration: algorithm, chunk_bytes, max_chunks, step_overhead, "
                    "collective_overhead or collective_copy_bw out of range");
        return NULL;
    }
    guint n_gpus = ssim_cluster_n_gpus(c);
    guint n_nics = c->nodes * c->nics_per_node;
    guint n_leaves = ssim_cluster_n_leaves(c);
    gboolean mesh = c->topology == SSIM_TOPOLOGY_FULLMESH;
    guint n_pairs = mesh ? n_gpus * (c->gpus_per_node - 1) : 0;
    guint n_links = 4 * n_gpus + 2 * n_nics + 2 * c->rails * n_leaves + n_pairs;
    SsimNet *net = net_alloc(n_links);
    net->config = *config;
    net->n_gpus = n_gpus;
    net->topo = (struct SsimNetTopo){
        c->gpus_per_node,  c->nodes, c->nics_per_node, c->gpus_per_nic, c->rails, n_leaves,
        c->nodes_per_leaf, mesh,     c->nvlink_sharp,  c->ring_nics};
    net->base_nic = 4 * n_gpus;
    net->base_leaf = net->base_nic + 2 * n_nics;
    net->base_pair = net->base_leaf + 2 * c->rails * n_leaves;

    double nvl = c->nvlink_bw * (config->use_efficiency ? c->nvlink_efficiency : 1.0);
    double nic = c->nic_bw * (config->use_efficiency ? c->ib_efficiency : 1.0);
    SsimTime nvl_up = c->nvlink_latency / 2, nvl_down = c->nvlink_latency - nvl_up;
    SsimTime cable = c->nic_latency - 2 * c->pcie_latency;
    SsimTime nic_up = cable / 2, nic_down = cable - nic_up;
    for (guint32 g = 0; g < n_gpus; g++) {
        set_link(net, 4 * g + 0, SSIM_LINK_NVLINK_UP, g, nvl, nvl_up);
        set_link(net, 4 * g + 1, SSIM_LINK_NVLINK_DOWN, g, nvl, nvl_down);
        set_link(net, 4 * g + 2, SSIM_LINK_PCIE_UP, g, c->pcie_bw, c->pcie_latency);
        set_link(net, 4 * g + 3, SSIM_LINK_PCIE_DOWN, g, c->pcie_bw, c->pcie_latency);
    }
    for (guint32 n = 0; n < n_nics; n++) {
        set_link(net, net->base_nic + 2 * n, SSIM_LINK_NIC_UP, n, nic, nic_up);
        set_link(net, net->base_nic + 2 * n + 1, SSIM_LINK_NIC_DOWN, n, nic, nic_down);
    }
    for (guint32 r = 0; r < c->rails; r++) {
        /* The physical ports of one leaf: one per NIC of this rail in each of its nodes. */
        guint nics_on_rail = 0;
        for (guint k = 0; k < c->nics_per_node; k++)
            nics_on_rail += ssim_cluster_rail_of(c, k) == r;
        double up = c->nodes_per_leaf * nics_on_rail * nic / c->oversubscription;
        for (guint32 q = 0; q < n_leaves; q++) {
            guint32 leaf = r * n_leaves + q;
            set_link(net, net->base_leaf + 2 * leaf, SSIM_LINK_LEAF_UP, leaf, up, c->spine_latency);
            set_link(net, net->base_leaf + 2 * leaf + 1, SSIM_LINK_LEAF_DOWN, leaf, up,
                     c->spine_latency);
        }
    }
    /* A full mesh: one link per ordered pair of a node's GPUs, a whole NVLink hop. */
    double pair = c->nvlink_pair_bw * (config->use_efficiency ? c->nvlink_efficiency : 1.0);
    for (guint32 k = 0; k < n_pairs; k++)
        set_link(net, net->base_pair + k, SSIM_LINK_NVLINK_PAIR, k, pair, c->nvlink_latency);
    return net;
}

SsimNet *ssim_net_new(const SsimCluster *cluster, GError **error)
{
    g_return_val_if_fail(cluster != NULL, NULL);
    SsimNetConfig config;
    ssim_net_config_init(&config, cluster);
    return ssim_net_new_config(cluster, &config, error);
}

SsimNet *ssim_net_new_like(const SsimNet *src)
{
    SsimNet *net = net_alloc(src->n_links);
    net->config = src->config;
    net->topo = src->topo;
    net->n_gpus = src->n_gpus;
    net->base_nic = src->base_nic;
    net->base_leaf = src->base_leaf;
    net->base_pair = src->base_pair;
    for (guint i = 0; i < src->n_links; i++)
        net->links[i].pub = src->links[i].pub;
    return net;
}

SsimNet *ssim_net_new_links(const double *capacities, guint n_links)
{
    SsimNet *net = net_alloc(n_links);
    ssim_net_config_init(&net->config, NULL);
    for (guint32 i = 0; i < n_links; i++) {
        g_return_val_if_fail(capacities[i] > 0.0, net);
        set_link(net, i, SSIM_LINK_CUSTOM, i, capacities[i], 0);
    }
    return net;
}

void ssim_net_free(SsimNet *net)
{
    if (net == NULL)
        return;
    if (net->comm != NULL && net->comm_free != NULL)
        net->comm_free(net->comm);
    for (guint i = 0; i < net->n_links; i++)
        g_free(net->links[i].flows);
    g_free(net->links);
    g_free(net->flows);
    flow_heap_clear(&net->heap);
    g_free(net->dirty.v);
    g_free(net->stack.v);
    g_free(net->comp_flows.v);
    g_free(net->comp_links.v);
    link_heap_clear(&net->lheap);
    g_free(net);
}

const SsimNetConfig *ssim_net_config(const SsimNet *net)
{
    return &net->config;
}

const struct SsimNetTopo *ssim_net_topo(const SsimNet *net)
{
    return &net->topo;
}

gpointer *ssim_net_comm_slot(SsimNet *net, GDestroyNotify free_fn)
{
    net->comm_free = free_fn;
    return &net->comm;
}

void ssim_net_count_collective(SsimNet *net)
{
    net->stats.collectives++;
}

guint ssim_net_n_gpus(const SsimNet *net)
{
    return net->n_gpus;
}

guint ssim_net_gpus_per_node(const SsimNet *net)
{
    return net->topo.gpus_per_node;
}

guint ssim_net_n_links(const SsimNet *net)
{
    return net->n_links;
}

const SsimNetLink *ssim_net_link(const SsimNet *net, guint32 link)
{
    g_return_val_if_fail(link < net->n_links, NULL);
    return &net->links[link].pub;
}

guint32 ssim_net_link_id(const SsimNet *net, SsimLinkKind kind, guint32 index)
{
    switch (kind) {
    case SSIM_LINK_NVLINK_UP:
    case SSIM_LINK_NVLINK_DOWN:
    case SSIM_LINK_PCIE_UP:
    case SSIM_LINK_PCIE_DOWN:
        g_return_val_if_fail(index < net->n_gpus, SSIM_NONE);
        return 4 * index + (guint32)(kind - SSIM_LINK_NVLINK_UP);
    case SSIM_LINK_NIC_UP:
    case SSIM_LINK_NIC_DOWN:
        g_return_val_if_fail(index < net->topo.nodes * net->topo.nics_per_node, SSIM_NONE);
        return net->base_nic + 2 * index + (kind == SSIM_LINK_NIC_DOWN);
    case SSIM_LINK_LEAF_UP:
    case SSIM_LINK_LEAF_DOWN:
        g_return_val_if_fail(index < net->topo.rails * net->topo.n_leaves, SSIM_NONE);
        return net->base_leaf + 2 * index + (kind == SSIM_LINK_LEAF_DOWN);
    case SSIM_LINK_CUSTOM:
        return index < net->n_links ? index : SSIM_NONE;
    case SSIM_LINK_NVLINK_PAIR:
        g_return_val_if_fail(
            net->topo.fullmesh && index < net->n_gpus * (net->topo.gpus_per_node - 1), SSIM_NONE);
        return net->base_pair + index;
    default:
        return SSIM_NONE;
    }
}

guint32 ssim_net_pair_index(const SsimNet *net, guint32 src, guint32 dst)
{
    guint g = net->topo.gpus_per_node;
    if (!net->topo.fullmesh || src >= net->n_gpus || dst >= net->n_gpus || src == dst ||
        src / g != dst / g)
        return SSIM_NONE;
    guint ld = dst % g, ls = src % g;
    return src * (g - 1) + (ld < ls ? ld : ld - 1);
}

/* The first link of a route from GPU src to GPU dst of its own node: its pair link on a full
 * mesh, else its NVLink up to the switch (and `down` the link down to dst, SSIM_NONE on a mesh). */
static guint32 nvlink_hop(const SsimNet *net, guint32 src, guint32 dst, guint32 *down)
{
    if (net->topo.fullmesh) {
        *down = SSIM_NONE;
        return net->base_pair + ssim_net_pair_index(net, src, dst);
    }
    *down = 4 * dst + 1;
    return 4 * src + 0;
}

/* --- Routing ---------------------------------------------------------------------------- */

static inline guint nic_of(const struct SsimNetTopo *t, guint local)
{
    return (local / t->gpus_per_nic) % t->nics_per_node;
}

guint ssim_net_route(const SsimNet *net, guint32 src, guint32 dst, guint32 links[SSIM_NET_MAX_HOPS])
{
    const struct SsimNetTopo *t = &net->topo;
    g_return_val_if_fail(src < net->n_gpus && dst < net->n_gpus && src != dst, 0);
    guint gpn = t->gpus_per_node;
    guint node_s = src / gpn, node_d = dst / gpn, ld = dst % gpn;
    guint n = 0;
    guint32 down;
    if (node_s == node_d) {
        links[n++] = nvlink_hop(net, src, dst, &down);
        if (down != SSIM_NONE)
            links[n++] = down;
        return n;
    }
    guint nic_s = nic_of(t, src % gpn), nic_d = nic_of(t, ld);
    guint rail = nic_d % t->rails;
    guint32 out = src;
    if (nic_s % t->rails != rail) {
        /* PXN: hand the data over NVLink to the local GPU whose NIC is on the right rail. */
        out = node_s * gpn + ld;
        links[n++] = nvlink_hop(net, src, out, &down);
        if (down != SSIM_NONE)
            links[n++] = down;
        nic_s = nic_d;
    }
    links[n++] = 4 * out + 2;
    links[n++] = net->base_nic + 2 * (node_s * t->nics_per_node + nic_s);
    guint q_s = node_s / t->nodes_per_leaf, q_d = node_d / t->nodes_per_leaf;
    if (q_s != q_d) {
        links[n++] = net->base_leaf + 2 * (rail * t->n_leaves + q_s);
        links[n++] = net->base_leaf + 2 * (rail * t->n_leaves + q_d) + 1;
    }
    links[n++] = net->base_nic + 2 * (node_d * t->nics_per_node + nic_d) + 1;
    links[n++] = 4 * dst + 3;
    return n;
}

SsimTime ssim_net_path_latency(const SsimNet *net, guint32 src, guint32 dst)
{
    if (src == dst)
        return 0;
    guint32 links[SSIM_NET_MAX_HOPS];
    guint n = ssim_net_route(net, src, dst, links);
    SsimTime sum = 0;
    for (guint i = 0; i < n; i++)
        sum += net->links[links[i]].pub.latency;
    return sum;
}

double ssim_net_path_bandwidth(const SsimNet *net, guint32 src, guint32 dst)
{
    if (src == dst)
        return INFINITY;
    guint32 links[SSIM_NET_MAX_HOPS];
    guint n = ssim_net_route(net, src, dst, links);
    double bw = INFINITY;
    for (guint i = 0; i < n; i++)
        bw = MIN(bw, net->links[links[i]].pub.capacity);
    return bw;
}

/* --- The completion heap ---------------------------------------------------------------- */

static inline gboolean flow_earlier(SsimNet *net, const guint32 *a, const guint32 *b)
{
    const Flow *x = &net->flows[*a], *y = &net->flows[*b];
    return x->end < y->end || (x->end == y->end && x->id < y->id);
}

static inline void flow_moved(SsimNet *net, const guint32 *slot, gsize i)
{
    net->flows[*slot].heap_pos = (guint32)i;
}

/* Inserts or re-sifts `slot` after its end time changed. */
static void heap_update(SsimNet *net, guint32 slot)
{
    guint32 i = net->flows[slot].heap_pos;
    if (i == SSIM_NONE)
        flow_heap_push(&net->heap, slot, net);
    else
        flow_heap_update_at(&net->heap, i, net);
}

static void heap_remove(SsimNet *net, guint32 slot)
{
    flow_heap_remove_at(&net->heap, net->flows[slot].heap_pos, net);
    net->flows[slot].heap_pos = SSIM_NONE;
}

/* The pending flow that completes first (the heap must not be empty). */
static inline const Flow *heap_first(const SsimNet *net)
{
    return &net->flows[net->heap.v[0]];
}

/* --- Flows ------------------------------------------------------------------------------ */

SsimTime ssim_net_now(const SsimNet *net)
{
    return net->now;
}

guint ssim_net_n_active(const SsimNet *net)
{
    return net->n_active;
}

static guint32 flow_alloc(SsimNet *net)
{
    if (net->free_head != SSIM_NONE) {
        guint32 s = net->free_head;
        net->free_head = net->flows[s].next_free;
        return s;
    }
    if (net->n_flows == net->cap_flows) {
        net->cap_flows = net->cap_flows ? net->cap_flows * 2 : 256;
        net->flows = g_renew(Flow, net->flows, net->cap_flows);
        flow_heap_reserve(&net->heap, net->cap_flows);
    }
    return net->n_flows++;
}

static void mark_dirty(SsimNet *net, guint32 link)
{
    Link *l = &net->links[link];
    if (l->dirty == net->epoch + 1)
        return;
    l->dirty = net->epoch + 1;
    vec_push(&net->dirty, link);
}

/* Rounds a duration in (fractional) nanoseconds up to an integer, treating values within a
 * thousandth of a nanosecond of an integer as that integer, so exact arithmetic stays exact. */
static SsimTime ceil_ns(double ns)
{
    if (!(ns > 0.0))
        return 0;
    if (ns >= 9e18)
        return SSIM_TIME_NEVER / 2;
    double r = nearbyint(ns);
    return (SsimTime)(fabs(ns - r) < 1e-3 ? r : ceil(ns));
}

static inline double remaining_at(const Flow *f, SsimTime t)
{
    double left = f->remaining - f->rate * (double)(t - f->since) * 1e-9;
    return left > 0.0 ? left : 0.0;
}

guint32 ssim_net_flow_start_path(SsimNet *net, const guint32 *links, guint n_links, guint64 bytes,
                                 guint64 owner)
{
    g_return_val_if_fail(n_links <= SSIM_NET_MAX_HOPS, SSIM_NONE);
    guint32 s = flow_alloc(net);
    Flow *f = &net->flows[s];
    *f = (Flow){.id = net->next_id++,
                .owner = owner,
                .remaining = (double)bytes,
                .since = net->now,
                .end = net->now,
                .heap_pos = SSIM_NONE,
                .next_free = SSIM_NONE,
                .active = TRUE};
    net->n_active++;
    net->stats.flows_started++;
    net->stats.peak_active = MAX(net->stats.peak_active, net->n_active);
    if (bytes == 0 || n_links == 0) {
        heap_update(net, s);
        return s;
    }
    f->n_hops = (guint8)n_links;
    for (guint i = 0; i < n_links; i++) {
        g_assert(links[i] < net->n_links);
        Link *l = &net->links[links[i]];
        if (l->n_flows == l->cap_flows) {
            l->cap_flows = l->cap_flows ? l->cap_flows * 2 : 8;
            l->flows = g_renew(guint32, l->flows, l->cap_flows);
        }
        f->links[i] = links[i];
        f->pos[i] = l->n_flows;
        l->flows[l->n_flows++] = s;
        mark_dirty(net, links[i]);
    }
    return s;
}

guint32 ssim_net_flow_start(SsimNet *net, guint32 src, guint32 dst, guint64 bytes, guint64 owner)
{
    g_return_val_if_fail(src < net->n_gpus && dst < net->n_gpus, SSIM_NONE);
    guint32 links[SSIM_NET_MAX_HOPS];
    guint n = src == dst ? 0 : ssim_net_route(net, src, dst, links);
    return ssim_net_flow_start_path(net, links, n, bytes, owner);
}

/* Takes flow `s` out of its links (swap-remove) and returns it to the pool. */
static void flow_finish(SsimNet *net, guint32 s)
{
    Flow *f = &net->flows[s];
    for (guint i = 0; i < f->n_hops; i++) {
        Link *l = &net->links[f->links[i]];
        guint32 p = f->pos[i], moved = l->flows[--l->n_flows];
        if (p != l->n_flows) {
            l->flows[p] = moved;
            Flow *m = &net->flows[moved];
            for (guint j = 0; j < m->n_hops; j++)
                if (m->links[j] == f->links[i]) {
                    m->pos[j] = p;
                    break;
                }
        }
        mark_dirty(net, f->links[i]);
    }
    f->active = FALSE;
    f->next_free = net->free_head;
    net->free_head = s;
    net->n_active--;
    net->stats.flows_finished++;
}

/* Progressive filling over the connected component of the dirty links (see the top). */
static void solve(SsimNet *net)
{
    if (net->dirty.n == 0)
        return;
    guint32 ep = ++net->epoch;
    net->stack.n = net->comp_flows.n = net->comp_links.n = 0;
    for (guint32 i = 0; i < net->dirty.n; i++) {
        Link *l = &net->links[net->dirty.v[i]];
        if (l->mark != ep) {
            l->mark = ep;
            vec_push(&net->stack, net->dirty.v[i]);
        }
    }
    net->dirty.n = 0;
    while (net->stack.n > 0) {
        guint32 li = net->stack.v[--net->stack.n];
        vec_push(&net->comp_links, li);
        Link *l = &net->links[li];
        for (guint32 k = 0; k < l->n_flows; k++) {
            Flow *f = &net->flows[l->flows[k]];
            if (f->mark == ep)
                continue;
            f->mark = ep;
            vec_push(&net->comp_flows, l->flows[k]);
            for (guint h = 0; h < f->n_hops; h++) {
                Link *m = &net->links[f->links[h]];
                if (m->mark != ep) {
                    m->mark = ep;
                    vec_push(&net->stack, f->links[h]);
                }
            }
        }
    }
    net->stats.solves++;
    net->stats.flows_solved += net->comp_flows.n;
    net->stats.links_solved += net->comp_links.n;

    for (guint32 i = 0; i < net->comp_flows.n; i++) {
        Flow *f = &net->flows[net->comp_flows.v[i]];
        f->remaining = remaining_at(f, net->now);
        f->since = net->now;
        f->fixed = FALSE;
    }
    net->lheap.n = 0;
    for (guint32 i = 0; i < net->comp_links.n; i++) {
        guint32 li = net->comp_links.v[i];
        Link *l = &net->links[li];
        l->rem = l->pub.capacity;
        l->unfixed = l->n_flows;
        if (l->n_flows > 0)
            link_heap_push(&net->lheap, (LinkKey){l->rem / l->unfixed, li}, NULL);
    }
    /* Shares only rise as flows freeze (a flow frozen at the smallest share s leaves each of its
     * links (rem - s) / (u - 1) >= rem / u), so an entry whose key is below its link's current
     * share is stale: replace it by the current one (in place of a pop and a push).  An entry
     * whose key is its link's share is the true minimum, since no link's share is below its key:
     * freeze that link's flows. */
    while (net->lheap.n > 0) {
        LinkKey top = net->lheap.v[0];
        Link *l = &net->links[top.link];
        if (l->unfixed == 0) { /* its flows were all frozen through other links */
            link_heap_pop(&net->lheap, NULL);
            continue;
        }
        double share = MAX(l->rem, 0.0) / l->unfixed;
        if (share > top.share) {
            link_heap_replace_top(&net->lheap, (LinkKey){share, top.link}, NULL);
            continue;
        }
        link_heap_pop(&net->lheap, NULL);
        for (guint32 k = 0; k < l->n_flows; k++) {
            Flow *f = &net->flows[l->flows[k]];
            if (f->fixed)
                continue;
            f->fixed = TRUE;
            f->rate = share;
            for (guint h = 0; h < f->n_hops; h++) {
                Link *m = &net->links[f->links[h]];
                m->rem -= share;
                m->unfixed--;
            }
        }
    }
    for (guint32 i = 0; i < net->comp_flows.n; i++) {
        guint32 s = net->comp_flows.v[i];
        Flow *f = &net->flows[s];
        SsimTime d = f->rate > 0.0 ? ceil_ns(f->remaining / f->rate * 1e9) : SSIM_TIME_NEVER / 2;
        f->end = ssim_time_add(net->now, d);
        heap_update(net, s);
    }
}

SsimTime ssim_net_next_completion(SsimNet *net)
{
    solve(net);
    return net->heap.n > 0 ? heap_first(net)->end : SSIM_TIME_NEVER;
}

void ssim_net_advance(SsimNet *net, SsimTime t)
{
    g_return_if_fail(t >= net->now);
    if (t == net->now)
        return;
    solve(net);
    g_return_if_fail(net->heap.n == 0 || t <= heap_first(net)->end);
    net->now = t;
}

gboolean ssim_net_pop_completion(SsimNet *net, SsimTime until, guint64 *owner, guint32 *flow)
{
    /* A flow due now is done whatever started or ended since its rate was computed. */
    if (net->heap.n == 0 || heap_first(net)->end > net->now) {
        solve(net);
        if (net->heap.n == 0 || heap_first(net)->end > until)
            return FALSE;
    }
    guint32 s = net->heap.v[0];
    Flow *f = &net->flows[s];
    if (f->end > net->now)
        net->now = f->end;
    heap_remove(net, s);
    if (owner != NULL)
        *owner = f->owner;
    if (flow != NULL)
        *flow = s;
    flow_finish(net, s);
    return TRUE;
}

double ssim_net_flow_rate(SsimNet *net, guint32 flow)
{
    g_return_val_if_fail(flow < net->n_flows && net->flows[flow].active, 0.0);
    solve(net);
    return net->flows[flow].rate;
}

double ssim_net_flow_remaining(const SsimNet *net, guint32 flow)
{
    g_return_val_if_fail(flow < net->n_flows && net->flows[flow].active, 0.0);
    return remaining_at(&net->flows[flow], net->now);
}

void ssim_net_reset(SsimNet *net)
{
    for (guint i = 0; i < net->n_links; i++)
        net->links[i].n_flows = 0;
    net->n_flows = 0;
    net->free_head = SSIM_NONE;
    net->n_active = 0;
    net->heap.n = 0;
    net->dirty.n = 0;
    net->epoch += 2;
    net->now = 0;
}

void ssim_net_stats(const SsimNet *net, SsimNetStats *stats)
{
    *stats = net->stats;
}
