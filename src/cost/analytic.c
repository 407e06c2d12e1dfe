/*
 * The analytical cost model (formulas in include/shiftsim/analytic.h).
 *
 * The model is a table once built: cluster figures, an optional graph-rank to global-rank map,
 * an optional logical shape (members, nodes, members per node) per graph group, and the GEMMs of
 * the lowering's kernels (analytic-gemm.c).  op_time() does no string hashing; a compute op's
 * name is resolved to its GEMMs once per graph string id (a memo), and a pipeline
 * collective-permute is recognised by its kind (SSIM_COLL_PERMUTE), priced as one point-to-point
 * step.
 */
#include "src/cost/analytic-private.h"

#include <math.h>
#include <string.h>

typedef AnalyticShape Shape;

void ssim_analytic_params_from_cluster(SsimAnalyticParams *params, const SsimCluster *cluster,
                                       SsimDtype dtype)
{
    double peak = ssim_cluster_peak_flops(cluster, dtype);
    if (!(peak > 0))
        peak = ssim_cluster_peak_flops(cluster, SSIM_DTYPE_BF16);
    *params = (SsimAnalyticParams){
        .peak_flops = peak,
        .peak_flops_fp8 = ssim_cluster_peak_flops(cluster, SSIM_DTYPE_FP8),
        .fp8_gemm_ratio =
            cluster->gemm_fp8 > 0 ? cluster->gemm_fp8 / cluster->gemm_efficiency : 1.0,
        .hbm_bw = cluster->hbm_bw,
        /* A training step keeps the tensor cores busy for seconds: the board's power limit
         * lowers the clocks below a short benchmark's (cluster.h, gemm_sustained). */
        .gemm_efficiency = ssim_analytic_sustained_efficiency(cluster, 1.0),
        .gemm_half_flops = cluster->gemm_half_flops,
        .memory_efficiency = cluster->memory_efficiency,
        .kernel_overhead = cluster->kernel_overhead,
        .kernel_floor = cluster->kernel_floor,
        .collective_overhead = cluster->collective_overhead,
        .collective_copy_bw = cluster->collective_copy_bw,
        .nvlink_bw = cluster->nvlink_bw * cluster->nvlink_efficiency,
        .nvlink_pair_bw = cluster->topology == SSIM_TOPOLOGY_FULLMESH
                              ? cluster->nvlink_pair_bw * cluster->nvlink_efficiency
                              : 0.0,
        .nvlink_latency = cluster->nvlink_latency,
        .ib_bw = ssim_cluster_node_net_bw(cluster) / MAX(cluster->gpus_per_node, 1) *
                 cluster->ib_efficiency,
        .ib_latency = cluster->nic_latency,
        .gpus_per_node = MAX(cluster->gpus_per_node, 1),
        .nics_per_gpu = (double)cluster->nics_per_node / MAX(cluster->gpus_per_node, 1),
        .nic_bw = cluster->nic_bw,
        .sm_count = cluster->sm_count,
        .gemm_tile_m = cluster->gemm_tile_m,
        .gemm_tile_n = cluster->gemm_tile_n,
        .gemm_tile_overhead = cluster->gemm_tile_overhead,
        .gemm_unaligned = cluster->gemm_unaligned,
        .multi_tensor_efficiency = cluster->multi_tensor,
        .dtype_bytes = ssim_dtype_size(dtype),
        .exp_rate = cluster->sm_count * SSIM_SFU_PER_CLOCK * cluster->sm_clock,
        .gemm_burst = cluster->gemm_efficiency,
        .flash_overlap = cluster->flash_overlap,
        .net_algorithm = cluster->net_algorithm,
        .nvlink_sharp = cluster->nvlink_sharp,
        .ring_nics = cluster->ring_nics,
        .ring_node_bw = cluster->ring_nics * cluster->nic_bw * cluster->ib_efficiency,
    };
}

void ssim_analytic_fp8_params(const SsimAnalyticParams *params, SsimAnalyticParams *fp8)
{
    *fp8 = *params;
    if (params->peak_flops_fp8 > 0)
        fp8->peak_flops = params->peak_flops_fp8;
    double r = params->fp8_gemm_ratio > 0 ? params->fp8_gemm_ratio : 1.0;
    fp8->gemm_efficiency *= r;
    fp8->gemm_burst *= r;
    fp8->dtype_bytes = ssim_dtype_size(SSIM_DTYPE_FP8);
}

double ssim_analytic_sustained_efficiency(const SsimCluster *cluster, double busy)
{
    busy = CLAMP(busy, 0.0, 1.0);
    return cluster->gemm_efficiency * (1.0 - (1.0 - cluster->gemm_sustained) * busy);
}

double ssim_analytic_gemm_efficiency(const SsimAnalyticParams *params, double flops)
{
    if (!(flops > 0))
        return 0;
    return params->gemm_efficiency * flops / (flops + MAX(params->gemm_half_flops, 0.0));
}

SsimTime ssim_analytic_compute_time(const SsimAnalyticParams *params, double flops, guint64 bytes)
{
    double t = 0;
    if (flops > 0)
        t = flops / (params->peak_flops * ssim_analytic_gemm_efficiency(params, flops));
    double tm = (double)bytes / (params->hbm_bw * params->memory_efficiency);
    return ssim_time_add(ssim_time_from_seconds(MAX(t, tm)), params->kernel_overhead);
}

static guint ceil_log2(guint n)
{
    guint k = 0;
    while ((1u << k) < n && k < 31)
        k++;
    return k;
}

/* NCCL's log2i (src/graph/tuning.cc): the height of its binary tree over n nodes. */
static guint floor_log2(guint n)
{
    guint k = 0;
    while (n >>= 1)
        k++;
    return k;
}

/* The bandwidth of the k members of one node towards one another (see analytic.h): NVSwitch's
 * per-GPU bandwidth, or on a full mesh the links to the other k - 1 members. */
static double node_bw(const SsimAnalyticParams *p, double k)
{
    if (!(p->nvlink_pair_bw > 0))
        return p->nvlink_bw;
    return MIN(MAX(k - 1, 1.0) * p->nvlink_pair_bw, p->nvlink_bw);
}

/* The bandwidth of one transfer inside a node: one pair's link on a full mesh. */
static double hop_bw(const SsimAnalyticParams *p)
{
    return p->nvlink_pair_bw > 0 ? p->nvlink_pair_bw : p->nvlink_bw;
}

double ssim_analytic_rank_nics(const SsimAnalyticParams *p, guint per_node)
{
    double nics = p->nics_per_gpu;
    if (p->ring_nics > 0 && per_node > 0)
        nics = MIN(nics, (double)p->ring_nics / per_node);
    return nics;
}

double ssim_analytic_copy_bytes(SsimCollKind kind, double bytes, guint n)
{
    switch (kind) {
    case SSIM_COLL_ALLREDUCE:
    case SSIM_COLL_ALLTOALL:
    case SSIM_COLL_PERMUTE:
        return 2 * bytes;
    case SSIM_COLL_ALLGATHER:
    case SSIM_COLL_REDUCESCATTER:
        return bytes + bytes / MAX(n, 1u);
    default:
        return bytes;
    }
}

/* The copy term inside a node (analytic.h): `local` bytes of a member's own buffers. */
static double copy_time(const SsimAnalyticParams *p, double local)
{
    return p->collective_copy_bw > 0 ? local / p->collective_copy_bw : 0.0;
}

/* A collective's time (analytic.h); `rings` lets a collective across nodes with more than one
 * member per node run NCCL's rings, else it always goes hierarchically. */
static SsimTime collective_time(const SsimAnalyticParams *p, SsimCollKind kind, guint64 bytes,
                                guint n_ranks, guint n_nodes, guint per_node, gboolean rings)
{
    if (n_ranks <= 1)
        return 0;
    double S = (double)bytes;
    double n = n_ranks;
    double N = MAX(n_nodes, 1u);
    double k = MAX(MIN(per_node, n_ranks), 1u);
    double a_nv = ssim_time_to_seconds(p->nvlink_latency);
    double a_ib = ssim_time_to_seconds(p->ib_latency);
    gboolean cross = n_nodes > 1;
    double b_nv = node_bw(p, cross ? k : n), b_hop = hop_bw(p);
    /* One member's rate across nodes: its NIC share, or its share of B_node where the cluster
     * puts a communicator's rings on fewer NICs. */
    double b_ib = p->ring_node_bw > 0 ? MIN(p->ib_bw, p->ring_node_bw / k) : p->ib_bw;
    double t = 0;
    switch (kind) {
    case SSIM_COLL_ALLREDUCE:
    case SSIM_COLL_ALLGATHER:
    case SSIM_COLL_REDUCESCATTER: {
        /* An all-reduce is a reduce-scatter followed by an all-gather: twice the steps. */
        double f = kind == SSIM_COLL_ALLREDUCE ? 2.0 : 1.0;
        if (!cross) {
            t = f * ((n - 1) * a_nv + (n - 1) / n * S / b_nv);
        } else {
            /* Two levels: reduce-scatter inside the node, the all-reduce across, all-gather
             * inside (for an all-gather or a reduce-scatter, its half of that); one member a
             * node (k = 1) has no node level, and its two levels are its ring. */
            double intra = k > 1 ? f * ((k - 1) * a_nv + (k - 1) / k * S / b_nv) : 0;
            double inter_bw = f * (N - 1) / N * (S / k) / b_ib;
            t = intra + f * (N - 1) * a_ib + inter_bw;
            if (rings) {
                /* NCCL's rings across nodes: k of them, each leaving a node through its own
                 * NIC (or all through ring_nics NICs: b_ib), so a step moves S/n per member at
                 * the NICs' rate or, if lower, at NVLink's over the k - 1 hops of each member
                 * that stay inside its node.  An all-reduce takes NCCL's trees when faster, as
                 * its tuner picks, unless the cluster's [network] algorithm names one. */
                double b_ring = k > 1 ? MIN(k * b_ib, k / (k - 1) * b_nv) : b_ib;
                double ring = f * (n - 1) * (a_ib + S / n / b_ring);
                /* The trees: the two levels crossing the network in 2 floor(log2 N) steps (its
                 * tuner's count, src/graph/tuning.cc: a chain in each node, a double binary
                 * tree over the nodes), not the two-level rings' 2 (N - 1).  Only on NVLink
                 * SHARP nodes (NVLS trees) with the two levels' bytes; elsewhere their steps are
                 * fewer but their bytes no fewer than the rings'. */
                double tree_t = intra + f * floor_log2(n_nodes) * a_ib + inter_bw;
                double tree = p->nvlink_sharp ? tree_t : MAX(tree_t, f * (n - 1) / n * S / b_ring);
                switch (kind != SSIM_COLL_ALLREDUCE ? SSIM_NET_ALGO_RING : p->net_algorithm) {
                case SSIM_NET_ALGO_RING:
                    t = ring;
                    break;
                case SSIM_NET_ALGO_TREE:
                    t = tree;
                    break;
                case SSIM_NET_ALGO_HIERARCHICAL:
                    break;
                default:
                    t = MIN(tree, ring);
                    break;
                }
            }
        }
        break;
    }
    case SSIM_COLL_ALLTOALL:
        if (!cross)
            t = (n - 1) * a_nv + (n - 1) / n * S / b_nv;
        else
            t = (n - 1) * a_ib + MAX((k - 1) / n * S / b_nv, (n - k) / n * S / p->ib_bw);
        break;
    case SSIM_COLL_PERMUTE:
        /* Every member sends S to its neighbour at once, each over its own link; all end
         * together, so the slowest link (InfiniBand when the ring leaves a node) sets the time. */
        t = (cross ? a_ib : a_nv) + S / (cross ? p->ib_bw : b_hop);
        break;
    case SSIM_COLL_BROADCAST:
    case SSIM_COLL_REDUCE:
    default:
        t = ceil_log2(n_ranks) * (cross ? a_ib : a_nv) + S / (cross ? p->ib_bw : b_hop);
        break;
    }
    if (!cross)
        t += copy_time(p, ssim_analytic_copy_bytes(kind, S, n_ranks));
    return ssim_time_add(ssim_time_from_seconds(t), p->collective_overhead);
}

SsimTime ssim_analytic_collective_time(const SsimAnalyticParams *p, SsimCollKind kind,
                                       guint64 bytes, guint n_ranks, guint n_nodes, guint per_node)
{
    return collective_time(p, kind, bytes, n_ranks, n_nodes, per_node, TRUE);
}

SsimTime ssim_analytic_two_level_time(const SsimAnalyticParams *p, SsimCollKind kind, guint64 bytes,
                                      guint n_ranks, guint n_nodes, guint per_node)
{
    return collective_time(p, kind, bytes, n_ranks, n_nodes, per_node, FALSE);
}

SsimTime ssim_analytic_p2p_time(const SsimAnalyticParams *p, guint64 bytes, gboolean cross_node)
{
    double a = ssim_time_to_seconds(cross_node ? p->ib_latency : p->nvlink_latency);
    double bw = cross_node ? p->ib_bw : hop_bw(p);
    double copy = cross_node ? 0.0 : copy_time(p, (double)bytes);
    return ssim_time_from_seconds(a + (double)bytes / bw + copy);
}

SsimAnalytic *ssim_analytic_new(const SsimAnalyticParams *params)
{
    SsimAnalytic *m = g_new0(SsimAnalytic, 1);
    m->params = *params;
    if (m->params.gpus_per_node == 0)
        m->params.gpus_per_node = 1;
    m->rank_map = g_array_new(FALSE, FALSE, sizeof(guint32));
    m->shapes = g_array_new(FALSE, TRUE, sizeof(Shape));
    analytic_gemm_init(m);
    return m;
}

void ssim_analytic_free(SsimAnalytic *model)
{
    if (model == NULL)
        return;
    g_array_free(model->rank_map, TRUE);
    g_array_free(model->shapes, TRUE);
    analytic_gemm_clear(model);
    g_free(model);
}

const SsimAnalyticParams *ssim_analytic_params(const SsimAnalytic *model)
{
    return &model->params;
}

void ssim_analytic_set_rank_map(SsimAnalytic *model, const guint32 *global, guint n)
{
    g_array_set_size(model->rank_map, 0);
    g_array_append_vals(model->rank_map, global, n);
}

static guint32 global_rank(const SsimAnalytic *m, guint32 rank)
{
    if (rank < m->rank_map->len)
        return g_array_index(m->rank_map, guint32, rank);
    return rank;
}

/* Shape of a set of global ranks: members, distinct nodes, most members on one node. */
static Shape shape_of(const SsimAnalytic *m, const guint32 *ranks, guint n, gboolean map)
{
    Shape sh = {.n_ranks = n};
    guint gpn = m->params.gpus_per_node;
    g_autoptr(GHashTable) per = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < n; i++) {
        guint32 r = map ? global_rank(m, ranks[i]) : ranks[i];
        gpointer key = GUINT_TO_POINTER(r / gpn + 1);
        guint c = GPOINTER_TO_UINT(g_hash_table_lookup(per, key)) + 1;
        g_hash_table_insert(per, key, GUINT_TO_POINTER(c));
        sh.per_node = MAX(sh.per_node, c);
    }
    sh.n_nodes = g_hash_table_size(per);
    return sh;
}

void ssim_analytic_set_group(SsimAnalytic *model, guint32 group, const guint32 *ranks, guint n)
{
    if (group >= model->shapes->len)
        g_array_set_size(model->shapes, group + 1);
    g_array_index(model->shapes, Shape, group) = shape_of(model, ranks, n, FALSE);
}

/* Whether compute op `op` is one of the optimizer step's multi-tensor kernels (the lowering's
 * "optimizer", "clip.norm", "loss_scale.check"; not its memset "grad.zero"), by a memo per
 * graph string id like the kernel names': an id whose string differs is looked at again. */
static gboolean is_multi_tensor(const SsimAnalytic *m, const SsimGraph *graph, const SsimOp *op)
{
    static const char *const names[] = {"optimizer", "clip.norm", "loss_scale.check"};
    if (op->name == SSIM_NONE)
        return FALSE;
    const char *str = ssim_graph_string(graph, op->name);
    gboolean fresh;
    CostMemo *e = cost_memo_entry(((SsimAnalytic *)m)->mt_cache, graph, op->name, &fresh);
    if (fresh) {
        e->value = 0;
        for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
            e->value |= strcmp(str, names[i]) == 0;
    }
    return e->value != 0;
}

/* A compute op's time (see ComputeMemo in analytic-private.h for what it depends on). */
static SsimTime compute_time(const SsimAnalytic *m, const SsimGraph *graph, const SsimOp *op)
{
    const SsimAnalyticParams *p = &m->params;
    /* Without the shape model a kernel is priced by its FLOPs and bytes, as one op; an FP8 GEMM
     * then by the FP8 tensor cores' size curve (its table entry's time). */
    const KernelGemms *k = analytic_kernel_of(m, graph, op);
    if (k != NULL && p->sm_count == 0 && !k->fp8)
        k = NULL;
    if (k != NULL && k->flash)
        return ssim_analytic_flash_time_window(p, &k->gemm[0], k->window, k->windowed, op->bytes,
                                               k->flash == 2);
    if (k != NULL)
        return k->time;
    /* The optimizer's multi-tensor kernels stream slower than a plain copy. */
    if (p->multi_tensor_efficiency > 0 && !(op->flops > 0) && is_multi_tensor(m, graph, op))
        return ssim_time_add(
            ssim_time_from_seconds((double)op->bytes / (p->hbm_bw * p->multi_tensor_efficiency)),
            p->kernel_overhead);
    return ssim_analytic_compute_time(p, op->flops, op->bytes);
}

/* The memo slot of a compute op's key (filling it is not a visible change: the memo is of a pure
 * function). */
static ComputeMemo *compute_memo_slot(const SsimAnalytic *m, const SsimGraph *graph,
                                      const SsimOp *op)
{
    guint64 flops;
    memcpy(&flops, &op->flops, sizeof flops);
    guint64 h = (ssim_graph_serial(graph) * 0x9e3779b97f4a7c15u) ^ op->bytes ^ (flops >> 17) ^
                ((guint64)op->name << 40);
    h *= 0xff51afd7ed558ccdu;
    return &m->compute_memo[(h >> 40) % ANALYTIC_COMPUTE_MEMO];
}

static SsimTime op_time_raw(const SsimAnalytic *m, const SsimGraph *graph, guint32 idx)
{
    const SsimAnalyticParams *p = &m->params;
    const SsimOp *op = ssim_graph_op(graph, idx);
    switch ((SsimOpKind)op->kind) {
    case SSIM_OP_COMPUTE: {
        ComputeMemo *c = compute_memo_slot(m, graph, op);
        if (c->serial == ssim_graph_serial(graph) && c->name == op->name && c->bytes == op->bytes &&
            c->flops == op->flops)
            return c->time;
        *c = (ComputeMemo){ssim_graph_serial(graph), op->bytes, op->flops,
                           compute_time(m, graph, op), op->name};
        return c->time;
    }
    case SSIM_OP_SEND:
    case SSIM_OP_RECV: {
        guint32 a = global_rank(m, op->rank), b = global_rank(m, op->peer);
        return ssim_analytic_p2p_time(p, op->bytes, a / p->gpus_per_node != b / p->gpus_per_node);
    }
    case SSIM_OP_COLLECTIVE:
    case SSIM_OP_BARRIER: {
        Shape sh = {0};
        if (op->group < m->shapes->len)
            sh = g_array_index(m->shapes, Shape, op->group);
        if (sh.n_ranks == 0) {
            guint nr;
            const guint32 *ranks = ssim_graph_group_ranks(graph, op->group, &nr);
            sh = shape_of(m, ranks, nr, TRUE);
        }
        if (op->kind == SSIM_OP_BARRIER) {
            double a = ssim_time_to_seconds(sh.n_nodes > 1 ? p->ib_latency : p->nvlink_latency);
            return ssim_time_from_seconds(2.0 * ceil_log2(sh.n_ranks) * a);
        }
        return ssim_analytic_collective_time(p, (SsimCollKind)op->coll, op->bytes, sh.n_ranks,
                                             sh.n_nodes, sh.per_node);
    }
    default:
        return 0;
    }
}

static SsimTime op_time(const SsimCostModel *cm, const SsimGraph *graph, guint32 idx, guint n)
{
    (void)n;
    return op_time_raw(cm->data, graph, idx);
}

gboolean ssim_analytic_group_shape(const SsimAnalytic *model, const SsimGraph *graph, guint32 idx,
                                   guint *n_ranks, guint *n_nodes, guint *per_node)
{
    const SsimOp *op = ssim_graph_op(graph, idx);
    Shape sh = {0};
    switch ((SsimOpKind)op->kind) {
    case SSIM_OP_SEND:
    case SSIM_OP_RECV: {
        guint gpn = model->params.gpus_per_node;
        gboolean cross = global_rank(model, op->rank) / gpn != global_rank(model, op->peer) / gpn;
        sh = (Shape){.n_ranks = 2, .n_nodes = cross ? 2 : 1, .per_node = cross ? 1 : 2};
        break;
    }
    case SSIM_OP_COLLECTIVE:
    case SSIM_OP_BARRIER:
        if (op->group < model->shapes->len)
            sh = g_array_index(model->shapes, Shape, op->group);
        if (sh.n_ranks == 0) {
            guint nr;
            const guint32 *ranks = ssim_graph_group_ranks(graph, op->group, &nr);
            sh = shape_of(model, ranks, nr, TRUE);
        }
        break;
    default:
        return FALSE;
    }
    *n_ranks = sh.n_ranks;
    *n_nodes = sh.n_nodes;
    *per_node = sh.per_node;
    return TRUE;
}

double ssim_analytic_busy_fraction(const SsimAnalytic *model, const SsimGraph *graph)
{
    double busy = 0;
    guint64 kernels = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(graph); i++)
        if (ssim_graph_op(graph, i)->kind == SSIM_OP_COMPUTE) {
            busy += (double)op_time_raw(model, graph, i);
            kernels++;
        }
    double host = (double)kernels * (double)model->params.kernel_floor;
    return busy > 0 && host > busy ? busy / host : 1.0;
}

SsimCostModel ssim_analytic_cost_model(const SsimAnalytic *model)
{
    /* Pure: the price of an op depends on the op alone (replicated runs ask once per op). */
    return (SsimCostModel){.op_time = op_time, .data = (gpointer)model, .pure = TRUE};
}
