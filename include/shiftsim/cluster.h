/*
 * A GPU cluster as the cost model sees it: identical nodes of identical GPUs; inside a node every
 * GPU reaches every other through NVLink, either through NVSwitch at a per-GPU bandwidth
 * (`rail-fat-tree`, DGX-style) or over a link of its own per pair of GPUs with no switch
 * (`fullmesh`: an HGX 4-GPU board, TSUBAME 4.0's nodes), and nodes talk through NICs
 * (InfiniBand/RoCE) on a fat tree.  Each figure is a datasheet peak; what real
 * kernels and collectives reach is the peak times a named, calibratable efficiency.
 *
 * A cluster is read from `models/clusters/<name>.ini` (GKeyFile, `format = 1`, see docs/models.md)
 * and is a plain struct.  All quantities are stored in base units (FLOP/s, bytes, bytes/s, SsimTime
 * nanoseconds) whatever unit the file's key names.  The struct will grow (topology: leaf/spine,
 * oversubscription, rails) -- allocate it only through the functions here, never on the stack by
 * hand, and read fields by name.  The topology fields are filled in (from [topology] or derived
 * defaults) by every loader and by ssim_cluster_default().
 *
 * Ownership: ssim_cluster_default(), ssim_cluster_load*() and ssim_cluster_copy() return a
 * cluster the caller owns and frees with ssim_cluster_free() (g_autoptr(SsimCluster) works).
 */
#pragma once

#include <shiftsim/types.h>
#include <shiftsim/model.h>

G_BEGIN_DECLS

/* The dimensions of a run a calibration records its range of ([calibration] keys). */
#define SSIM_FIT_DIM_LIST(X)                                                                       \
    X(HIDDEN, "hidden")                                                                            \
    X(LAYERS, "layers")                                                                            \
    X(SEQ_LEN, "seq_len")                                                                          \
    X(GPUS, "gpus")                                                                                \
    X(NODES, "nodes")                                                                              \
    X(TP, "tp")                                                                                    \
    X(PP, "pp")                                                                                    \
    X(MICROBATCH, "microbatch")

typedef enum {
#define SSIM_X(e, s) SSIM_FIT_##e,
    SSIM_FIT_DIM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_FIT_DIM_N
} SsimFitDim;

const char *ssim_fit_dim_name(SsimFitDim dim);

typedef struct {
    char *name;   /* e.g. "dgx-h200" */
    char *source; /* the file it came from, or "builtin" */
    char *gpu;    /* marketing name, e.g. "NVIDIA H200 SXM 141GB" */
    guint gpus_per_node;
    guint nodes;

    /* One GPU. */
    double peak_flops[SSIM_DTYPE_N]; /* dense tensor-core FLOP/s per dtype; 0 = unsupported */
    guint64 hbm_bytes;               /* HBM capacity */
    double hbm_bw;                   /* HBM bandwidth, bytes/s */

    /* Inside a node. */
    double nvlink_bw;        /* per GPU, per direction, bytes/s */
    SsimTime nvlink_latency; /* per message (alpha) */

    /* Between nodes. */
    guint nics_per_node;  /* NICs for GPU traffic (one per GPU on DGX) */
    double nic_bw;        /* per NIC, per direction, bytes/s */
    SsimTime nic_latency; /* per message (alpha) */

    /* Efficiencies: the fraction of a peak real work reaches (0 < e <= 1), and slowdowns. */
    double gemm_efficiency;       /* large GEMMs vs peak_flops */
    double gemm_half_flops;       /* a GEMM of this many FLOPs reaches half of
                                     gemm_efficiency (size-dependent efficiency) */
    double memory_efficiency;     /* memory-bound kernels vs hbm_bw */
    double nvlink_efficiency;     /* NCCL bus bandwidth vs nvlink_bw */
    double ib_efficiency;         /* NCCL bus bandwidth vs nic_bw */
    double overlap_slowdown;      /* compute runs this many times slower (>= 1) while a
                                     collective shares the GPU */
    SsimTime kernel_overhead;     /* fixed cost added to every kernel (launch, tail) */
    SsimTime collective_overhead; /* fixed cost added to every collective (NCCL's launch,
                                     setup and start-up synchronisation; 0 = none, the
                                     default) */
    double collective_copy_bw;    /* bytes/s at which a collective's kernels read and write
                                     its members' buffers inside one node, on top of the
                                     link time (0 = no such cost, the default) */
    SsimTime kernel_floor;        /* the host's time to launch each op of its GPU (kernel,
                                     collective, transfer), one after another: an op starts no
                                     earlier than its launch (runtime.h's host issue; 0 = no
                                     host, the default) */
    SsimTime microbatch_floor;    /* the host's own work per microbatch phase (the step cost
                                     "host": a fixed op before each forward and backward;
                                     0 = none, the default) */

    /*
     * Topology ([topology], every key optional; see docs/network.md).  Each GPU has
     * nvlink_ports ports into its node's NVSwitch plane (their sum is nvlink_bw) and a PCIe link
     * to its NIC; gpus_per_nic GPUs share a NIC; NIC k of a node sits on rail k % rails, and the
     * NICs of one rail of nodes_per_leaf consecutive nodes meet in one leaf switch, whose uplinks
     * to the spine carry 1 / oversubscription of its downlink capacity.  A path's latency is the
     * sum of its links' latencies: nvlink_latency/2 per NVLink hop, pcie_latency per PCIe
     * crossing, (nic_latency - 2 pcie_latency)/2 per NIC-leaf cable and spine_latency per
     * leaf-spine hop, so a same-leaf inter-node path costs exactly nic_latency.
     */
    guint nvlink_ports;      /* NVLink ports per GPU (default 18) */
    double pcie_bw;          /* per GPU to its NIC, per direction, bytes/s (default nic_bw *
                                gpus_per_nic, which never limits below the NIC) */
    SsimTime pcie_latency;   /* per PCIe crossing (default 0, <= nic_latency / 2) */
    guint rails;             /* default nics_per_node */
    guint gpus_per_nic;      /* default max(1, gpus_per_node / nics_per_node) */
    guint nodes_per_leaf;    /* default 32 */
    double oversubscription; /* leaf downlink : uplink capacity, >= 1 (default 1) */
    SsimTime spine_latency;  /* per leaf-spine hop (default 0) */
    /*
     * What connects the GPUs of a node (SsimTopologyKind): NVSwitch (rail-fat-tree, the default),
     * or a full mesh of direct links, one per pair of GPUs, of nvlink_pair_bw per direction each
     * (default nvlink_bw / (gpus_per_node - 1): the GPU's links spread evenly over its peers).
     */
    guint topology;
    double nvlink_pair_bw;

    /* The flow network's knobs ([network]). */
    guint net_algorithm;    /* SsimNetAlgorithm (default SSIM_NET_ALGO_AUTO) */
    SsimTime step_overhead; /* software overhead added to every collective step (default 0) */
    /*
     * The NICs through which one communicator's rings (NCCL's channels) leave a node ([network]
     * ring_nics, in [1, nics_per_node]; 0, the default: a ring per member of the node, each
     * leaving through its own GPU's NIC, as NCCL lays them out with GPUDirect RDMA).  Where
     * NCCL puts a communicator's channels on fewer NICs (Jean Zay's Omni-Path nodes, without
     * GPUDirect RDMA: two channels through one NIC each way), a collective across nodes moves
     * at most ring_nics NICs' worth out of a node (analytic.h; the flow model runs that many
     * rings).
     */
    guint ring_nics;

    /*
     * The GEMM shape model (include/shiftsim/analytic.h): a GEMM runs as tiles of gemm_tile_m x
     * gemm_tile_n outputs, one per SM at a time, in waves over sm_count SMs; each tile costs its
     * tensor-core time at gemm_efficiency of the SM's peak plus gemm_tile_overhead (pipeline
     * fill and epilogue).  sm_count 0 (the default, [gpu] sm_count absent) leaves GEMMs to the
     * size curve of gemm_half_flops.
     */
    guint sm_count;              /* streaming multiprocessors per GPU ([gpu] sm_count) */
    guint gemm_tile_m;           /* output tile rows of a large GEMM kernel (default 128) */
    guint gemm_tile_n;           /* output tile columns (default 256) */
    SsimTime gemm_tile_overhead; /* per tile, beyond its tensor-core time (default 1 us) */
    double gemm_unaligned; /* the rate of a GEMM whose n or k row is not a multiple of 16 bytes,
                              as a fraction of the aligned rate ([efficiency] gemm_unaligned;
                              default 1: no penalty) */
    /* The SM clock at which the datasheet's tensor peak is reached, Hz ([gpu] sm_clock_MHz; 0,
     * the default: unknown).  It sets the rate of the special-function units (exponentials:
     * 16 a clock per SM), which flash attention's softmax runs on (analytic.h). */
    double sm_clock;
    /* Flash attention's kernels overlap the softmax's exponentials with the tensor-core products
     * (Hopper's warp-specialised kernels: FlashAttention-3, cuDNN's sm90 kernels) rather than
     * run them after (FlashAttention-2) ([efficiency] flash_overlap; default false). */
    gboolean flash_overlap;
    /* NVLink SHARP: the node's NVSwitches reduce in the switch (third-generation NVSwitch, HGX
     * H100 and H200), which NCCL's NVLS trees use to carry an all-reduce across nodes with half
     * a ring's network traffic; without it NCCL's trees save steps, not bytes (analytic.h)
     * ([nvlink] sharp; default false). */
    gboolean nvlink_sharp;
    double gemm_fp8;       /* FP8 GEMMs' `gemm_efficiency`, of the FP8 peak ([efficiency] gemm_fp8;
                              0, the default: gemm_efficiency) */
    double gemm_sustained; /* the GEMM rate a training step sustains, as a fraction of the rate
                              of a short burst: board power limits the clocks under continuous
                              tensor-core load ([efficiency] gemm_sustained; default 1) */
    double multi_tensor;   /* the fraction of HBM bandwidth the optimizer's multi-tensor kernels
                              reach (Adam, the gradient norm, the weight copy; [efficiency]
                              multi_tensor; 0, the default: `memory_efficiency`) */

    /* [calibration]: the shapes the figures were fitted on (a calibrated cluster; fit_hi 0 for
     * a dimension not recorded).  A prediction outside them is an extrapolation. */
    guint fit_lo[SSIM_FIT_DIM_N], fit_hi[SSIM_FIT_DIM_N];
} SsimCluster;

/* Collective algorithms the flow network can use: one X-macro yields the enum and the names. */
#define SSIM_NET_ALGO_LIST(X)                                                                      \
    X(AUTO, "auto")                                                                                \
    X(RING, "ring")                                                                                \
    X(TREE, "tree")                                                                                \
    X(HIERARCHICAL, "hierarchical")                                                                \
    X(DIRECT, "direct")

typedef enum {
#define SSIM_X(e, s) SSIM_NET_ALGO_##e,
    SSIM_NET_ALGO_LIST(SSIM_X)
#undef SSIM_X
        SSIM_NET_ALGO_N
} SsimNetAlgorithm;

const char *ssim_net_algorithm_name(SsimNetAlgorithm algorithm);

/* What connects the GPUs of a node ([topology] kind): one X-macro, the enum and the names. */
#define SSIM_TOPOLOGY_LIST(X)                                                                      \
    X(RAIL_FAT_TREE, "rail-fat-tree")                                                              \
    X(FULLMESH, "fullmesh")

typedef enum {
#define SSIM_X(e, s) SSIM_TOPOLOGY_##e,
    SSIM_TOPOLOGY_LIST(SSIM_X)
#undef SSIM_X
        SSIM_TOPOLOGY_N
} SsimTopologyKind;

const char *ssim_topology_name(SsimTopologyKind kind);

/* A bundled-identical DGX H200 cluster of 4 nodes (models/clusters/dgx-h200.ini). */
SsimCluster *ssim_cluster_default(void);

/*
 * Loads a cluster by name or path: an existing file, or anything containing '/' or ending in
 * ".ini", is a path; otherwise "models/clusters/<name>.ini" is found through ssim_data_find().
 * Returns NULL with `error` set (SSIM_CONFIG_ERROR, "path:line: key: message") on failure.
 */
SsimCluster *ssim_cluster_load(const char *name_or_path, GError **error);
SsimCluster *ssim_cluster_load_file(const char *path, GError **error);
SsimCluster *ssim_cluster_load_data(const char *text, gssize length, const char *path,
                                    GError **error);

/* The cluster as a `format = 1` INI that ssim_cluster_load() reads back to the same figures;
 * `comment` (may be NULL) is written first, each line prefixed with "# ".  The caller frees the
 * string. */
GString *ssim_cluster_write_ini(const SsimCluster *cluster, const char *comment);

/* Checks ranges (counts positive, bandwidths positive, efficiencies in (0, 1], slowdown >= 1,
 * a bf16 peak present). */
gboolean ssim_cluster_check(const SsimCluster *cluster, GError **error);

SsimCluster *ssim_cluster_copy(const SsimCluster *cluster);
void ssim_cluster_free(SsimCluster *cluster);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimCluster, ssim_cluster_free)

/* The most GPUs a cluster (gpus_per_node x nodes) or a split may have: 2^20, several times the
 * largest machines built so far.  Loops over the ranks of a cluster then stay well under a second
 * and every GPU count fits a guint; a larger one is refused up front (include/shiftsim/budget.h).
 */
#define SSIM_MAX_GPUS 1048576u

/* Overrides the node count (nodes >= 1; check it first with ssim_cluster_check_nodes()). */
void ssim_cluster_set_nodes(SsimCluster *cluster, guint nodes);
/* FALSE (SSIM_CONFIG_ERROR_VALUE, "N nodes x G GPUs per node = T GPUs is over the limit of
 * SSIM_MAX_GPUS GPUs") when `nodes` nodes of `cluster` would hold more than SSIM_MAX_GPUS GPUs. */
gboolean ssim_cluster_check_nodes(const SsimCluster *cluster, guint nodes, GError **error);

guint ssim_cluster_n_gpus(const SsimCluster *cluster); /* gpus_per_node * nodes */
/* The node of global rank `rank` (ranks are numbered node-major: rank / gpus_per_node). */
guint ssim_cluster_node_of(const SsimCluster *cluster, guint rank);
/* Dense peak FLOP/s of one GPU in `dtype` (0 when the GPU lacks it). */
double ssim_cluster_peak_flops(const SsimCluster *cluster, SsimDtype dtype);
/* Total per-node inter-node bandwidth, bytes/s (nics_per_node * nic_bw). */
double ssim_cluster_node_net_bw(const SsimCluster *cluster);

/* Number of leaf switches per rail (ceil(nodes / nodes_per_leaf)). */
guint ssim_cluster_n_leaves(const SsimCluster *cluster);
/* The NIC (0 .. nics_per_node-1) a GPU of local index `local` uses, and the rail of a NIC. */
guint ssim_cluster_nic_of(const SsimCluster *cluster, guint local);
guint ssim_cluster_rail_of(const SsimCluster *cluster, guint nic);

G_END_DECLS
