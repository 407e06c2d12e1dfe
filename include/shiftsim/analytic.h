/*
 * The analytical cost model: op durations from closed forms over a cluster's datasheet figures
 * and efficiencies, used wherever no measured profile exists and kept as the fallback.
 *
 * Compute by FLOPs and bytes (roofline with size-dependent GEMM efficiency):
 *   eff(F)  = gemm_efficiency * F / (F + gemm_half_flops)
 *   t       = max(F / (peak * eff(F)), bytes / (hbm_bw * memory_efficiency)) + kernel_overhead
 * where F is the op's FLOPs (an op with F = 0 is memory-bound: only the second term counts;
 * the optimizer step's multi-tensor kernels, named "optimizer", "clip.norm" and
 * "loss_scale.check", at multi_tensor_efficiency instead of memory_efficiency).
 * gemm_efficiency is the cluster's `gemm` times its `gemm_sustained`: the rate of a short burst
 * (what GEMM benchmarks report) times the fraction of it that continuous load keeps under the
 * board's power limit (ssim_analytic_params_from_cluster); a simulation under a host floor
 * raises it toward the burst rate as the GPU idles (ssim_analytic_sustained_efficiency).
 *
 * A GEMM by its shape (when the cluster gives sm_count; src/cost/analytic-gemm.c says why):
 * C[m x n] = A[m x k] B[k x n], `batch` of them, as output tiles tm x tn, one per SM at a time
 * over S = sm_count SMs, each SM at r = peak / S * gemm_efficiency:
 *   tiles   = ceil(m / tm) ceil(n / tn) batch
 *   split   = min(floor(S / tiles), floor(k / 256)) when tiles < S and k >= 512, else 1 (split-K)
 *   t_math  = ceil(tiles split / S) (2 tm tn (k / split) / r + gemm_tile_overhead)
 *             (r = peak / S x gemm_efficiency, times gemm_unaligned when n or k times the
 *             element size is not a multiple of 16 bytes: Hopper's TMA tile loads need 16-byte
 *             aligned rows, and cuBLAS falls back to slower kernels without them)
 *             + (split > 1: split 8 m n batch / (hbm_bw memory_efficiency), the fp32 partials)
 *   t       = max(min over (tm, tn) of t_math, bytes / (hbm_bw * memory_efficiency))
 *             + kernel_overhead,   bytes = (m k + k n + m n) batch dtype_bytes
 * with (tm, tn) the cluster's tile, its transpose and the square of its smaller side.  A lowered
 * kernel is priced so when its name is in the model's kernel table (ssim_analytic_set_kernel,
 * ssim_analytic_set_model_gemms: "qkv", "qkv.dgrad", "qkv.wgrad", "attn_score.bwd", ...) and its
 * FLOPs are the table's; any other compute op by FLOPs and bytes.
 *
 * Flash attention (SSIM_FLASH_KERNEL, "attn_flash" and "attn_flash.bwd"; lower.h): one kernel
 * over B = b heads / tp heads of s causal queries with head dimension d, in blocks of 128
 * queries by 128 keys; under the causal mask the q-th block of queries visits keys 0 .. q, so
 * a head has nb (nb + 1) / 2 block pairs, nb = ceil(s / 128).  A pair costs its products on the
 * tensor cores and one exponential per score on the special-function units, which
 * FlashAttention-2 runs between the products, not beside them:
 *   t_pair  = c 2 128^2 d / r + 128^2 / (exp_rate / S x gemm_efficiency / gemm_burst)
 *             (the larger of the two instead of their sum under flash_overlap: Hopper's
 *              warp-specialised kernels, FlashAttention-3 and cuDNN's, run the exponentials of
 *              one block beside the products of the next)
 *             (c = 2 forward, Q K^T and P V; 5 backward: the scores again, dV, dP, dQ, dK;
 *              exp_rate = S x 16 a clock x sm_clock, CUDA C++ Programming Guide, "Arithmetic
 *              Instructions": 16 exponentials a clock per SM from compute capability 5 to 9)
 *   t       = max((B nb (nb + 1) / 2 t_pair + B nb f) / S + (1 - 1/S) (nb t_pair + f),
 *                 bytes / (hbm_bw memory_efficiency)) + kernel_overhead
 * (f = gemm_tile_overhead: a block of queries, like a GEMM's tile, loads its operands and
 * writes its output once.  The blocks, of 1 to nb pairs, go to the SMs in launch order as they
 * free, the heaviest of a head last: list scheduling, whose makespan is at most the work per SM
 * plus (1 - 1/S) of the longest block, Graham's bound, taken as the estimate).  The backward
 * adds, after its main kernel, three passes through HBM of its own: zeroing dQ's fp32
 * accumulator (4 q bytes, q = B s d), the rows' dO . O (2 q dtype + 4 B s) and dQ's conversion
 * (4 q + q dtype), and their launches; the main kernel moves the rest of the op's bytes.  The op
 * carries the FLOPs of the unfused kernels it replaces (the step's FLOP count is Megatron-LM's
 * either way); its time follows the work it executes.
 *
 * Collectives (alpha-beta with nccl-tests' bus factors; S is the full buffer as nccl-tests counts
 * it, n = k N members, k per node on N nodes; B_nv = nvlink_bw * nvlink_efficiency per GPU,
 * B_ib = nics_per_node * nic_bw / gpus_per_node * ib_efficiency per GPU, a rail each):
 *   inside one node (N = 1), a ring over NVLink:
 *     all-reduce                 2 (n-1) a_nv + 2 (n-1)/n S / B_nv
 *     all-gather, reduce-scatter   (n-1) a_nv +   (n-1)/n S / B_nv
 *   one member per node (k = 1), a ring over InfiniBand: the same with a_ib, B_ib; for an
 *   all-reduce, when faster (NCCL's tuner picks), NCCL's double binary tree over the nodes,
 *   2 floor(log2 N) a_ib + 2 (n-1)/n S / B_ib (the tuner's latency, src/graph/tuning.cc: a
 *   tree's steps, the rings' bytes)
 *   otherwise (k > 1 members on each of N > 1 nodes) NCCL's k rings, each leaving a node through
 *   its own NIC (rail-aligned), every step moving S/n per member at B_ring = min(k B_ib,
 *   k/(k-1) B_nv) (the k NICs, or NVLink over the k-1 hops of a member that stay in its node),
 *   and where the cluster puts a communicator's rings on ring_nics NICs (cluster.h), at most
 *   B_node = ring_nics nic_bw ib_efficiency (those NICs at the cluster's efficiency):
 *   B_ring = min(k B_ib, B_node, k/(k-1) B_nv), and
 *   k B_ib is min(k B_ib, B_node) in every form below (k = 1: B_ib is min(B_ib, B_node)):
 *     all-reduce                 2 (n-1) (a_ib + S/n / B_ring)
 *     all-gather, reduce-scatter   (n-1) (a_ib + S/n / B_ring)
 *   and for an all-reduce, when faster (NCCL's tuner picks), NCCL's trees.  On nodes with NVLink
 *   SHARP (nvlink_sharp: NVLS trees) hierarchically: reduce-scatter inside the node, the
 *   inter-node step on S / k per GPU (all k rails in parallel), all-gather inside the node:
 *     all-reduce   T2 = 2 [(k-1) a_nv + (k-1)/k S/B_nv] + 2 (N-1) a_ib + 2 (N-1)/N (S/k) / B_ib
 *   (the two-level form: ssim_analytic_two_level_time() always prices this one, and all-gather
 *   and reduce-scatter as (k-1) a_nv + (k-1)/k S/B_nv + (N-1) a_ib + (N-1)/N (S/k) / B_ib),
 *   which a tree crosses in 2 floor(log2 N) network steps, not 2 (N-1) (NCCL's tuner's count,
 *   src/graph/tuning.cc: a chain in each node, a double binary tree over the nodes): T2'.
 *   Without SHARP NCCL's trees save steps, not bytes: its tuner never gives a tree more
 *   bandwidth than the rings (a tree's bus bandwidth capped per channel, its algorithm bandwidth
 *   half of that), so the tree is max(T2', 2 (n-1)/n S / B_ring), the rings' time without their
 *   latency.  The cluster's [network] algorithm may force one: ring, tree, or hierarchical (T2,
 *   rings across nodes, whatever the switch).
 *   On DGX A100 nodes of 8 GPUs and 8 NICs of 24 GB/s, many nodes: rings reach 192 GB/s of bus
 *   bandwidth, what NCCL's maintainers measure; the two-level form would give 123.
 *   all-to-all      (n-1) a + max((k-1)/n S / B_nv, (n-k)/n S / B_ib)
 * On a full-mesh node (cluster.h: a link of B_pair per direction per pair of GPUs, no switch) a
 * GPU reaches each peer over a link of its own: the k members of a node reach one another at
 * B_nv = min((k-1) B_pair, nvlink_bw) (NCCL runs its rings over every link of the group, so each
 * GPU sends on all k-1 of them), and a point-to-point transfer, a permute or a broadcast/reduce
 * chain, which uses one link per hop, at B_pair.  So on 4 GPUs an all-reduce costs
 * 6 a_nv + 2 (3/4) S / (3 B_pair) = 6 a_nv + S / (2 B_pair), and on 2 of them 2 a_nv + S / B_pair.
 *   broadcast, reduce   ceil(log2 n) a + S / B       (B, a of the slowest link used)
 *   send/recv and a collective-permute (SSIM_COLL_PERMUTE), where every
 *   member sends S to one neighbour:   a + S / B
 *   barrier   2 ceil(log2 n) a
 * Every collective above (n > 1), the permute included (not a send, a receive or a barrier),
 * also pays the cluster's collective_overhead once: NCCL's launch, setup and the
 * synchronisation that starts it, which nccl-tests times show as a floor under the alpha-beta
 * line (0 unless the cluster sets it).
 * Inside one node (N = 1), a collective and a transfer also pay for the bytes its kernels read
 * and write in one member's own buffers, C = collective_copy_bw (0: none, the default):
 *   all-reduce, all-to-all, collective-permute  2 S / C   (the whole input read, output written)
 *   all-gather, reduce-scatter                  (n+1)/n S / C   (S one way, S / n the other)
 *   broadcast, reduce, send/recv                S / C
 * On NVLink the same SMs that move the data read and write those buffers, so this adds to the
 * link time; on InfiniBand the NIC moves the data while the SMs copy, so it is left out.  It is
 * what makes a small group's bus bandwidth lower than a large one's (nccl-tests: two A100s reach
 * 197 GB/s, eight 229): the link term shrinks with n, this one does not.
 *
 * Host floor: kernel_floor (0, the default, is none) is the host's time to launch one op, as a
 * framework such as Megatron-DeepSpeed issues each op from Python.  The cost model does not
 * apply it: op_time prices the GPU's work alone, and the runtime's host issue
 * (SsimRunConfig.host_issue, runtime.h) starts each op no earlier than the host launches it, so
 * a stream idles when its kernels are shorter than the launches, and the host runs ahead during
 * long kernels.
 *
 * A group's shape (n, N, k) comes from the global ranks of its members, which need not be the
 * graph's ranks: a lowering that emits one representative rank charges a collective with its full
 * logical group (see ssim_analytic_set_group).  Without that, the graph group's own ranks are
 * used, mapped through the rank map when one is set.  Ranks sit on nodes node-major
 * (rank / gpus_per_node).
 *
 * Ownership: ssim_analytic_new() returns a model the caller frees with ssim_analytic_free();
 * ssim_analytic_cost_model() returns a value that borrows it.  A model serves one run at a time
 * (its kernel-name memo fills while it is asked).
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

typedef struct {
    double peak_flops;     /* FLOP/s of one GPU in the compute dtype */
    double peak_flops_fp8; /* FLOP/s of its FP8 tensor cores (0: none) */
    double fp8_gemm_ratio; /* FP8 GEMMs' efficiency over the 16-bit ones' (cluster gemm_fp8) */
    double hbm_bw;         /* bytes/s */
    double gemm_efficiency;
    double gemm_half_flops;
    double memory_efficiency;
    SsimTime kernel_overhead;
    SsimTime kernel_floor;        /* the host's launch of each op (runtime host issue; 0 = none) */
    SsimTime collective_overhead; /* once per collective (NCCL launch and setup; 0 = none) */
    double collective_copy_bw;    /* inside a node, bytes/s of a member's own buffers (0 = none) */
    double nvlink_bw;             /* effective per-GPU bytes/s (efficiency applied) */
    double nvlink_pair_bw;        /* full mesh: effective bytes/s of one pair's link; 0: NVSwitch */
    SsimTime nvlink_latency;
    double ib_bw; /* effective per-GPU bytes/s (efficiency applied) */
    SsimTime ib_latency;
    guint gpus_per_node;
    double nics_per_gpu; /* NICs per node / GPUs per node (0: unknown) */
    double nic_bw;       /* one NIC's line rate per direction, bytes/s (0: unknown) */
    /* The GEMM shape model (0 SMs: GEMMs by their FLOPs). */
    guint sm_count;
    guint gemm_tile_m, gemm_tile_n;
    SsimTime gemm_tile_overhead;
    /* The rate factor of a GEMM whose n or k is not a multiple of 16 bytes (0 or 1: none). */
    double gemm_unaligned;
    /* The fraction of HBM bandwidth of the optimizer step's multi-tensor kernels (Adam with the
     * weights' copy, the gradient norm, the loss scaler's check); 0: memory_efficiency. */
    double multi_tensor_efficiency;
    guint dtype_bytes; /* of the compute dtype: a GEMM's operand and result elements */
    /* Flash attention's softmax: exponentials per second of one GPU at the datasheet's clock
     * (SMs x 16 a clock x sm_clock; 0: the cluster gives no clock, the softmax is not priced),
     * and the cluster's burst GEMM efficiency: gemm_efficiency / gemm_burst is the fraction of
     * that clock a GPU under load keeps (gemm_sustained), for the exponentials too. */
    double exp_rate;
    double gemm_burst;
    gboolean flash_overlap; /* the exponentials beside the products, not after (cluster.h) */
    guint net_algorithm;    /* SsimNetAlgorithm: an all-reduce across nodes by rings, by trees,
                             * or (auto) the faster (cluster.h, [network] algorithm) */
    gboolean nvlink_sharp;  /* NVLS trees: the two-level form's halved network traffic */
    guint ring_nics;        /* the NICs one collective's rings leave a node through (cluster.h;
                             * 0: one ring a member), for a layout's NICs a rank */
    double ring_node_bw;    /* B_node: those NICs' bytes/s at ib_efficiency (0: no cap); not
                             * from ib_bw / nics_per_gpu, which a caller may set to a measured
                             * layout's NICs (cost/profile-predict.c) */
} SsimAnalyticParams;

/* One GEMM shape: C[m x n] = A[m x k] B[k x n], `batch` of them (2 m n k batch FLOPs). */
typedef struct {
    guint64 m, n, k, batch;
} SsimGemmShape;

/* Takes the figures of `cluster` for compute in `dtype`. */
void ssim_analytic_params_from_cluster(SsimAnalyticParams *params, const SsimCluster *cluster,
                                       SsimDtype dtype);
/* `params` for an FP8 GEMM (parallel.h, SsimFp8): the FP8 tensor cores' peak at their own
 * efficiency (the GEMM efficiencies times fp8_gemm_ratio), 1-byte elements (its result, written
 * in the model's dtype, is counted at 1 byte too: a GEMM large enough to matter is bound by its
 * tiles, not its bytes); every other figure the same. */
void ssim_analytic_fp8_params(const SsimAnalyticParams *params, SsimAnalyticParams *fp8);

/* The GEMM efficiency of `cluster` for a GPU busy a fraction `busy` (0..1) of the time:
 * gemm x (1 - (1 - gemm_sustained) busy).  The board's power limit binds only on a GPU kept
 * busy; one the host leaves idle between kernels keeps its clocks (a burst's rate at busy 0). */
double ssim_analytic_sustained_efficiency(const SsimCluster *cluster, double busy);

/* Closed forms, usable without a graph. */
double ssim_analytic_gemm_efficiency(const SsimAnalyticParams *params, double flops);
SsimTime ssim_analytic_compute_time(const SsimAnalyticParams *params, double flops, guint64 bytes);
/* A GEMM by its shape (the shape model above; by FLOPs and bytes when params->sm_count is 0). */
SsimTime ssim_analytic_gemm_time(const SsimAnalyticParams *params, const SsimGemmShape *gemm);
/* A collective of `kind` over `n_ranks` members on `n_nodes` nodes (at most per_node on one). */
SsimTime ssim_analytic_collective_time(const SsimAnalyticParams *params, SsimCollKind kind,
                                       guint64 bytes, guint n_ranks, guint n_nodes, guint per_node);
/* The same with the two-level form across nodes, never the rings, whatever the collective (what
 * [network] algorithm = hierarchical gives an all-reduce; the collectives carried from measured
 * curves take the cluster's own form, cost/profile-comm.c). */
SsimTime ssim_analytic_two_level_time(const SsimAnalyticParams *params, SsimCollKind kind,
                                      guint64 bytes, guint n_ranks, guint n_nodes, guint per_node);
/* The NICs through which each of a collective's `per_node` members of a node sends across nodes:
 * its GPU's share (nics_per_gpu), or of the ring_nics NICs a communicator's rings are put on,
 * ring_nics / per_node, where that is fewer. */
double ssim_analytic_rank_nics(const SsimAnalyticParams *params, guint per_node);
/* The bytes one member of a collective of `kind` over `n` members reads and writes in its own
 * buffers (the copy term above; S = `bytes` as nccl-tests counts it). */
double ssim_analytic_copy_bytes(SsimCollKind kind, double bytes, guint n);
/* A point-to-point transfer (and a collective-permute), inside a node or across nodes. */
SsimTime ssim_analytic_p2p_time(const SsimAnalyticParams *params, guint64 bytes,
                                gboolean cross_node);

typedef struct SsimAnalytic SsimAnalytic;

SsimAnalytic *ssim_analytic_new(const SsimAnalyticParams *params);
void ssim_analytic_free(SsimAnalytic *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimAnalytic, ssim_analytic_free)

const SsimAnalyticParams *ssim_analytic_params(const SsimAnalytic *model);

/* Maps graph rank i to global rank `global[i]` (copied), for p2p and unset groups. */
void ssim_analytic_set_rank_map(SsimAnalytic *model, const guint32 *global, guint n);
/* Charges graph group `group` as the logical group of global ranks `ranks` (copied). */
void ssim_analytic_set_group(SsimAnalytic *model, guint32 group, const guint32 *ranks, guint n);

/* Exponentials a clock of one SM's special-function units (flash attention's softmax). */
#define SSIM_SFU_PER_CLOCK 16

/* Flash attention's time, forward or backward (above), for `score`, the Q K^T GEMM of its heads
 * (batch B, m = n = s, k = d), moving `bytes` through HBM. */
SsimTime ssim_analytic_flash_time(const SsimAnalyticParams *params, const SsimGemmShape *score,
                                  guint64 bytes, gboolean backward);
/* The same for a model with a sliding window (model.h): a share `windowed` of the layers attends
 * to at most `window` keys a query, each block of queries multiplying only with the blocks of
 * keys the window touches; the time is the layers' mean (window 0 or >= the sequence: the
 * causal kernel's). */
SsimTime ssim_analytic_flash_time_window(const SsimAnalyticParams *params,
                                         const SsimGemmShape *score, guint64 window,
                                         double windowed, guint64 bytes, gboolean backward);

/* Whether compute op `op` of `graph` is a flash-attention kernel of the model's table; if so,
 * `score` (may be NULL) receives its heads' Q K^T shape and `backward` (may be NULL) its pass. */
gboolean ssim_analytic_op_flash(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                SsimGemmShape *score, gboolean *backward);

/* For a flash-attention op of the model's table moving `bytes`, its windowed time over its
 * causal one under the model's parameters (1 without a window): how a measured causal kernel's
 * time is carried to the model's windowed layers. */
double ssim_analytic_op_flash_window(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                     guint64 bytes);

/* Prices compute ops named `name` (whose FLOPs are the GEMMs') as the n (1 or 2) GEMMs `gemms`
 * (copied; a name set again is replaced). */
void ssim_analytic_set_kernel(SsimAnalytic *model, const char *name, const SsimGemmShape *gemms,
                              guint n);
/* The kernel table of the lowering (include/shiftsim/lower.h) for `model` at `microbatch` and
 * `tp`: each SsimGemmKind NAME (forward and recompute), NAME.dgrad (dA = dC B^T), NAME.wgrad
 * (dB = A^T dC) and NAME.bwd (both: the attention GEMMs' backward).  With `fp8` the kinds
 * ssim_gemm_kind_fp8() names are priced as FP8 GEMMs (ssim_analytic_fp8_params()). */
void ssim_analytic_set_model_gemms(SsimAnalytic *model, const SsimModel *m, guint microbatch,
                                   guint tp, gboolean fp8);
/* The GEMMs compute op `op` of `graph` runs, when the kernel table knows it (borrowed). */
gboolean ssim_analytic_op_gemms(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                const SsimGemmShape **gemms, guint *n);
/* Whether those GEMMs run in FP8 (FALSE for an op the table does not know). */
gboolean ssim_analytic_op_fp8(const SsimAnalytic *model, const SsimGraph *graph, guint32 op);

/*
 * The shape `model` charges communication op `op` of `graph` with: for a collective or barrier
 * its logical group's members, distinct nodes and most members on one node (the group set by
 * ssim_analytic_set_group(), else the graph group's ranks through the rank map); for a send or
 * receive its two ends (2 members, on 1 or 2 nodes).  FALSE, outputs untouched, for compute ops.
 */
gboolean ssim_analytic_group_shape(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                   guint *n_ranks, guint *n_nodes, guint *per_node);

/* The fraction of the time the GPU works on the compute ops of `graph` when the host launches
 * them: their times under `model` over the longer of that sum and the host's launches
 * (kernel_floor each); 1 without a floor. */
double ssim_analytic_busy_fraction(const SsimAnalytic *model, const SsimGraph *graph);

/* The SsimCostModel view of `model` (borrowed; `model` must outlive its use). */
SsimCostModel ssim_analytic_cost_model(const SsimAnalytic *model);

G_END_DECLS
