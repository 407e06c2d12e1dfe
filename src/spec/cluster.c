/*
 * GPU cluster descriptions: parsing models/clusters/<name>.ini into SsimCluster.
 *
 * The file is split in groups by what a figure describes: [cluster] (identity and size), [gpu]
 * (peaks, HBM), [nvlink] (inside a node), [network] (between nodes) and [efficiency] (the
 * calibratable fractions of peak), plus the optional [topology] (NVLink ports, PCIe, rails, leaf
 * and spine switches) that the flow-level network (net.c) builds its links from.  Each key
 * carries its unit in its name (peak_tflops_bf16, bandwidth_GB_s, latency_us, ...), so a reader
 * of the file never has to guess whether a bandwidth is in bits or bytes; this module converts
 * everything to base units once.  ssim_cluster_write_ini() writes the same file back (what
 * `shiftsim calibrate` stores its fitted cluster in).
 *
 * Invariants: a cluster handed out by this module has passed ssim_cluster_check().  The INI
 * writer writes every key the loader reads, in the loader's units, each number in the shortest
 * decimal that reads back to the same double, so ssim_cluster_load_data(ssim_cluster_write_ini(c))
 * has c's figures.
 */
#include <shiftsim/data.h>
#include <shiftsim/cluster.h>

#include "src/spec/ini-private.h"

#include <math.h>
#include <string.h>

#define FORMAT_VERSION 1

static const char *const cluster_keys[] = {"format", "name", "gpu", "gpus_per_node", "nodes", NULL};
static const char *const gpu_keys[] = {"peak_tflops_fp8",    "peak_tflops_bf16",
                                       "peak_tflops_fp16",   "peak_tflops_tf32",
                                       "peak_tflops_fp32",   "hbm_capacity_MiB",
                                       "hbm_bandwidth_GB_s", "sm_count",
                                       "sm_clock_MHz",       NULL};
static const char *const nvlink_keys[] = {"bandwidth_GB_s", "latency_us", "sharp", NULL};
static const char *const network_keys[] = {"nics_per_node",
                                           "nic_bandwidth_Gbit_s",
                                           "latency_us",
                                           "algorithm",
                                           "step_overhead_us",
                                           "ring_nics",
                                           NULL};
static const char *const topology_keys[] = {"kind",
                                            "nvlink_ports",
                                            "pcie_bandwidth_GB_s",
                                            "pcie_latency_us",
                                            "rails",
                                            "gpus_per_nic",
                                            "nodes_per_leaf",
                                            "oversubscription",
                                            "spine_latency_us",
                                            "nvlink_pair_bandwidth_GB_s",
                                            NULL};

static const char *const algorithm_names[] = {
#define SSIM_X(e, s) s,
    SSIM_NET_ALGO_LIST(SSIM_X)
#undef SSIM_X
};

/* The topologies the network model knows; a file names one with [topology] kind. */
static const char *const topology_kinds[] = {
#define SSIM_X(e, s) s,
    SSIM_TOPOLOGY_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_topology_name(SsimTopologyKind kind)
{
    g_return_val_if_fail((guint)kind < SSIM_TOPOLOGY_N, "?");
    return topology_kinds[kind];
}

const char *ssim_net_algorithm_name(SsimNetAlgorithm algorithm)
{
    g_return_val_if_fail((guint)algorithm < SSIM_NET_ALGO_N, "?");
    return algorithm_names[algorithm];
}
static const char *const efficiency_keys[] = {"gemm",
                                              "gemm_half_gflop",
                                              "memory",
                                              "nvlink",
                                              "ib",
                                              "overlap_slowdown",
                                              "kernel_overhead_us",
                                              "collective_overhead_us",
                                              "collective_copy_GB_s",
                                              "kernel_floor_us",
                                              "microbatch_floor_us",
                                              "gemm_tile_m",
                                              "gemm_tile_n",
                                              "gemm_tile_us",
                                              "gemm_unaligned",
                                              "gemm_sustained",
                                              "gemm_fp8",
                                              "multi_tensor",
                                              "flash_overlap",
                                              NULL};

static const char *const fit_dim_names[SSIM_FIT_DIM_N] = {
#define SSIM_X(e, s) s,
    SSIM_FIT_DIM_LIST(SSIM_X)
#undef SSIM_X
};

static const char *const calibration_keys[] = {
#define SSIM_X(e, s) s,
    SSIM_FIT_DIM_LIST(SSIM_X)
#undef SSIM_X
        NULL};

const char *ssim_fit_dim_name(SsimFitDim dim)
{
    g_return_val_if_fail((guint)dim < SSIM_FIT_DIM_N, "?");
    return fit_dim_names[dim];
}

static const SsimIniGroup cluster_groups[] = {
    {"cluster", cluster_keys, TRUE},
    {"gpu", gpu_keys, TRUE},
    {"nvlink", nvlink_keys, TRUE},
    {"network", network_keys, TRUE},
    {"efficiency", efficiency_keys, FALSE},
    {"topology", topology_keys, FALSE},
    {"calibration", calibration_keys, FALSE},
    {NULL, NULL, FALSE},
};

/* Efficiency defaults for a file without an [efficiency] group: middle-of-the-road figures for
 * recent NVIDIA GPUs (the bundled cluster files give the reasoning). */
static void set_default_efficiencies(SsimCluster *c)
{
    c->gemm_efficiency = 0.75;
    c->gemm_half_flops = 2e9;
    c->memory_efficiency = 0.85;
    c->nvlink_efficiency = 0.8;
    c->ib_efficiency = 0.85;
    c->overlap_slowdown = 1.1;
    c->kernel_overhead = 1 * SSIM_US;
    c->gemm_tile_m = 128;
    c->gemm_tile_n = 256;
    c->gemm_tile_overhead = 1 * SSIM_US;
    c->gemm_unaligned = 1.0;
    c->gemm_sustained = 1.0;
    c->multi_tensor = 0.0;
}

/* Topology defaults that depend on nothing else; 0 marks the ones derive_topology() fills. */
static void set_default_topology(SsimCluster *c)
{
    c->nvlink_ports = 18;
    c->pcie_bw = 0.0;
    c->pcie_latency = 0;
    c->rails = 0;
    c->gpus_per_nic = 0;
    c->nodes_per_leaf = 32;
    c->oversubscription = 1.0;
    c->spine_latency = 0;
    c->net_algorithm = SSIM_NET_ALGO_AUTO;
    c->step_overhead = 0;
    c->ring_nics = 0;
    c->topology = SSIM_TOPOLOGY_RAIL_FAT_TREE;
    c->nvlink_pair_bw = 0.0;
}

/* Fills the topology fields left 0 from the [network] figures, so that a file without
 * [topology] describes a non-blocking fabric where only the NICs limit inter-node traffic. */
static void derive_topology(SsimCluster *c)
{
    if (c->rails == 0)
        c->rails = c->nics_per_node;
    if (c->gpus_per_nic == 0)
        c->gpus_per_nic = MAX(1u, c->gpus_per_node / MAX(1u, c->nics_per_node));
    if (c->pcie_bw == 0.0)
        c->pcie_bw = c->nic_bw * c->gpus_per_nic;
    if (c->topology == SSIM_TOPOLOGY_FULLMESH && c->nvlink_pair_bw == 0.0 && c->gpus_per_node > 1)
        c->nvlink_pair_bw = c->nvlink_bw / (c->gpus_per_node - 1);
}

static SsimCluster *cluster_new(void)
{
    SsimCluster *c = g_new0(SsimCluster, 1);
    set_default_efficiencies(c);
    set_default_topology(c);
    return c;
}

SsimCluster *ssim_cluster_default(void)
{
    /* Keep in step with models/clusters/dgx-h200.ini (a test compares them). */
    SsimCluster *c = cluster_new();
    c->name = g_strdup("dgx-h200");
    c->source = g_strdup("builtin");
    c->gpu = g_strdup("NVIDIA H200 SXM 141GB");
    c->gpus_per_node = 8;
    c->nodes = 4;
    c->peak_flops[SSIM_DTYPE_FP8] = 1979e12;
    c->peak_flops[SSIM_DTYPE_BF16] = 989.5e12;
    c->peak_flops[SSIM_DTYPE_FP16] = 989.5e12;
    c->peak_flops[SSIM_DTYPE_TF32] = 494.7e12;
    c->peak_flops[SSIM_DTYPE_FP32] = 67e12;
    c->hbm_bytes = 143771ULL * 1024 * 1024;
    c->hbm_bw = 4800e9;
    c->sm_count = 132;
    c->sm_clock = 1830e6;
    c->nvlink_bw = 450e9;
    c->nvlink_latency = 2 * SSIM_US;
    c->nics_per_node = 8;
    c->nic_bw = 400e9 / 8;
    c->nic_latency = 5 * SSIM_US;
    c->gemm_efficiency = 0.84;
    c->gemm_half_flops = 4e9;
    c->gemm_unaligned = 0.31;
    c->gemm_sustained = 0.87;
    c->gemm_fp8 = 0.70;
    c->multi_tensor = 0.69;
    c->flash_overlap = TRUE;
    c->nvlink_sharp = TRUE;
    c->memory_efficiency = 0.85;
    c->nvlink_efficiency = 0.82;
    c->ib_efficiency = 0.94;
    c->overlap_slowdown = 1.1;
    c->kernel_overhead = 1 * SSIM_US;
    c->nvlink_ports = 18;
    c->pcie_bw = 64e9;
    c->pcie_latency = 1 * SSIM_US;
    c->rails = 8;
    c->gpus_per_nic = 1;
    c->nodes_per_leaf = 32;
    c->oversubscription = 1.0;
    c->spine_latency = 500;
    return c;
}

SsimCluster *ssim_cluster_copy(const SsimCluster *cluster)
{
    g_return_val_if_fail(cluster != NULL, NULL);
    SsimCluster *c = g_new(SsimCluster, 1);
    *c = *cluster;
    c->name = g_strdup(cluster->name);
    c->source = g_strdup(cluster->source);
    c->gpu = g_strdup(cluster->gpu);
    return c;
}

void ssim_cluster_free(SsimCluster *cluster)
{
    if (cluster == NULL)
        return;
    g_free(cluster->name);
    g_free(cluster->source);
    g_free(cluster->gpu);
    g_free(cluster);
}

void ssim_cluster_set_nodes(SsimCluster *cluster, guint nodes)
{
    g_return_if_fail(cluster != NULL && nodes >= 1);
    cluster->nodes = nodes;
}

gboolean ssim_cluster_check_nodes(const SsimCluster *cluster, guint nodes, GError **error)
{
    g_return_val_if_fail(cluster != NULL, FALSE);
    guint64 gpus = (guint64)nodes * cluster->gpus_per_node; /* both < 2^32: no overflow */
    if (gpus > SSIM_MAX_GPUS) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%u nodes x %u GPUs per node = %" G_GUINT64_FORMAT
                    " GPUs is over the limit of %u GPUs",
                    nodes, cluster->gpus_per_node, gpus, SSIM_MAX_GPUS);
        return FALSE;
    }
    return TRUE;
}

guint ssim_cluster_n_gpus(const SsimCluster *cluster)
{
    return cluster->gpus_per_node * cluster->nodes;
}

guint ssim_cluster_node_of(const SsimCluster *cluster, guint rank)
{
    return rank / cluster->gpus_per_node;
}

double ssim_cluster_peak_flops(const SsimCluster *cluster, SsimDtype dtype)
{
    g_return_val_if_fail((guint)dtype < SSIM_DTYPE_N, 0.0);
    return cluster->peak_flops[dtype];
}

double ssim_cluster_node_net_bw(const SsimCluster *cluster)
{
    return cluster->nics_per_node * cluster->nic_bw;
}

guint ssim_cluster_n_leaves(const SsimCluster *cluster)
{
    return (cluster->nodes + cluster->nodes_per_leaf - 1) / cluster->nodes_per_leaf;
}

guint ssim_cluster_nic_of(const SsimCluster *cluster, guint local)
{
    return (local / cluster->gpus_per_nic) % cluster->nics_per_node;
}

guint ssim_cluster_rail_of(const SsimCluster *cluster, guint nic)
{
    return nic % cluster->rails;
}

/* Checks `c`; on failure sets `*group`/`*field` to the key at fault and `error` to
 * "field: message". */
static gboolean check_cluster(const SsimCluster *c, const char **group, const char **field,
                              GError **error)
{
#define FAIL(g, f, ...)                                                                            \
    do {                                                                                           \
        *group = g;                                                                                \
        *field = f;                                                                                \
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, f ": " __VA_ARGS__);        \
        return FALSE;                                                                              \
    } while (0)
#define FRACTION(f, v)                                                                             \
    if (!((v) > 0.0 && (v) <= 1.0))                                                                \
    FAIL("efficiency", f, "%g is out of range (must be in (0, 1])", (v))

    if (c->name == NULL || c->name[0] == '\0')
        FAIL("cluster", "name", "must not be empty");
    if (c->gpu == NULL || c->gpu[0] == '\0')
        FAIL("cluster", "gpu", "must not be empty");
    if (c->gpus_per_node == 0)
        FAIL("cluster", "gpus_per_node", "must be a positive integer");
    if (c->nodes == 0)
        FAIL("cluster", "nodes", "must be a positive integer");
    if ((guint64)c->nodes * c->gpus_per_node > SSIM_MAX_GPUS)
        FAIL("cluster", "nodes",
             "%u nodes x %u GPUs per node = %" G_GUINT64_FORMAT
             " GPUs is over the limit of %u GPUs",
             c->nodes, c->gpus_per_node, (guint64)c->nodes * c->gpus_per_node, SSIM_MAX_GPUS);
    if (!(c->peak_flops[SSIM_DTYPE_BF16] > 0.0))
        FAIL("gpu", "peak_tflops_bf16", "must be positive");
    for (guint d = 0; d < SSIM_DTYPE_N; d++)
        if (!(c->peak_flops[d] >= 0.0 && isfinite(c->peak_flops[d])))
            FAIL("gpu", "peak_tflops_bf16", "peak for %s must be finite and >= 0",
                 ssim_dtype_name((SsimDtype)d));
    if (c->hbm_bytes == 0)
        FAIL("gpu", "hbm_capacity_MiB", "must be a positive integer");
    if (!(c->hbm_bw > 0.0))
        FAIL("gpu", "hbm_bandwidth_GB_s", "must be positive");
    if (!(c->nvlink_bw > 0.0))
        FAIL("nvlink", "bandwidth_GB_s", "must be positive");
    if (c->nvlink_latency < 0)
        FAIL("nvlink", "latency_us", "must be >= 0");
    if (c->nics_per_node == 0)
        FAIL("network", "nics_per_node", "must be a positive integer");
    if (!(c->nic_bw > 0.0))
        FAIL("network", "nic_bandwidth_Gbit_s", "must be positive");
    if (c->nic_latency < 0)
        FAIL("network", "latency_us", "must be >= 0");
    FRACTION("gemm", c->gemm_efficiency);
    FRACTION("memory", c->memory_efficiency);
    FRACTION("nvlink", c->nvlink_efficiency);
    FRACTION("ib", c->ib_efficiency);
    FRACTION("gemm_unaligned", c->gemm_unaligned);
    FRACTION("gemm_sustained", c->gemm_sustained);
    if (c->gemm_fp8 != 0.0) { /* 0: unset, FP8 GEMMs at `gemm` of the FP8 peak */
        FRACTION("gemm_fp8", c->gemm_fp8);
    }
    if (c->multi_tensor != 0.0) { /* 0: unset, the optimizer's kernels stream at `memory` */
        FRACTION("multi_tensor", c->multi_tensor);
    }
    if (!(c->gemm_half_flops >= 0.0 && isfinite(c->gemm_half_flops)))
        FAIL("efficiency", "gemm_half_gflop", "must be >= 0");
    if (!(c->overlap_slowdown >= 1.0 && isfinite(c->overlap_slowdown)))
        FAIL("efficiency", "overlap_slowdown", "%g is out of range (must be >= 1)",
             c->overlap_slowdown);
    if (c->kernel_overhead < 0)
        FAIL("efficiency", "kernel_overhead_us", "must be >= 0");
    if (c->collective_overhead < 0)
        FAIL("efficiency", "collective_overhead_us", "must be >= 0");
    if (!(c->collective_copy_bw >= 0.0 && isfinite(c->collective_copy_bw)))
        FAIL("efficiency", "collective_copy_GB_s", "must be >= 0");
    if (c->kernel_floor < 0)
        FAIL("efficiency", "kernel_floor_us", "must be >= 0");
    if (c->microbatch_floor < 0)
        FAIL("efficiency", "microbatch_floor_us", "must be >= 0");
    if (c->nvlink_ports == 0)
        FAIL("topology", "nvlink_ports", "must be a positive integer");
    if (!(c->pcie_bw > 0.0 && isfinite(c->pcie_bw)))
        FAIL("topology", "pcie_bandwidth_GB_s", "must be positive");
    if (c->pcie_latency < 0 || 2 * c->pcie_latency > c->nic_latency)
        FAIL("topology", "pcie_latency_us",
             "must be in [0, latency_us / 2] (two PCIe crossings are part of [network] "
             "latency_us)");
    if (c->rails == 0 || c->rails > c->nics_per_node)
        FAIL("topology", "rails", "%u is out of range (must be in [1, nics_per_node = %u])",
             c->rails, c->nics_per_node);
    if (c->gpus_per_nic == 0 || c->gpus_per_nic > c->gpus_per_node)
        FAIL("topology", "gpus_per_nic", "%u is out of range (must be in [1, gpus_per_node = %u])",
             c->gpus_per_nic, c->gpus_per_node);
    if (c->nodes_per_leaf == 0)
        FAIL("topology", "nodes_per_leaf", "must be a positive integer");
    if (!(c->oversubscription >= 1.0 && isfinite(c->oversubscription)))
        FAIL("topology", "oversubscription", "%g is out of range (must be >= 1)",
             c->oversubscription);
    if (c->spine_latency < 0)
        FAIL("topology", "spine_latency_us", "must be >= 0");
    if (c->topology >= SSIM_TOPOLOGY_N)
        FAIL("topology", "kind", "must be rail-fat-tree or fullmesh");
    if (c->topology == SSIM_TOPOLOGY_FULLMESH &&
        (c->gpus_per_node < 2 || !(c->nvlink_pair_bw > 0.0 && isfinite(c->nvlink_pair_bw))))
        FAIL("topology", "nvlink_pair_bandwidth_GB_s",
             "a full mesh needs at least 2 GPUs per node and a positive bandwidth per pair");
    if (c->net_algorithm >= SSIM_NET_ALGO_N || c->net_algorithm == SSIM_NET_ALGO_DIRECT)
        FAIL("network", "algorithm", "must be auto, ring, tree or hierarchical");
    if (c->step_overhead < 0)
        FAIL("network", "step_overhead_us", "must be >= 0");
    if (c->ring_nics > c->nics_per_node)
        FAIL("network", "ring_nics", "%u is out of range (must be in [1, nics_per_node = %u])",
             c->ring_nics, c->nics_per_node);
    if (c->gemm_tile_m == 0 || c->gemm_tile_n == 0)
        FAIL("efficiency", "gemm_tile_m", "tile sizes must be positive");
    if (c->gemm_tile_overhead < 0)
        FAIL("efficiency", "gemm_tile_us", "must be >= 0");
    return TRUE;
#undef FRACTION
#undef FAIL
}

gboolean ssim_cluster_check(const SsimCluster *cluster, GError **error)
{
    g_return_val_if_fail(cluster != NULL, FALSE);
    const char *group = NULL, *field = NULL;
    return check_cluster(cluster, &group, &field, error);
}

/* A double key scaled to base units; absent optional keys leave `*out` alone. */
static gboolean read_scaled(const SsimIni *ini, const char *group, const char *key,
                            gboolean required, double lo, gboolean lo_open, double hi, double scale,
                            double *out, GError **error)
{
    double v = *out / scale;
    if (!ssim_ini_double(ini, group, key, required, lo, lo_open, hi, &v, error))
        return FALSE;
    *out = v * scale;
    return TRUE;
}

static gboolean read_time_us(const SsimIni *ini, const char *group, const char *key,
                             gboolean required, SsimTime *out, GError **error)
{
    double us = ssim_time_to_seconds(*out) * 1e6;
    if (!ssim_ini_double(ini, group, key, required, 0.0, FALSE, 1e9, &us, error))
        return FALSE;
    *out = ssim_time_from_seconds(us * 1e-6);
    return TRUE;
}

/* The GEMM shape model's keys (cluster.h): [gpu] sm_count, [efficiency] gemm_tile_*. */
static gboolean parse_gemm_model(const SsimIni *ini, SsimCluster *c, GError **error)
{
    double mhz = c->sm_clock / 1e6;
    if (!ssim_ini_double(ini, "gpu", "sm_clock_MHz", FALSE, 0, TRUE, 1e5, &mhz, error))
        return FALSE;
    c->sm_clock = mhz * 1e6;
    return ssim_ini_uint(ini, "gpu", "sm_count", FALSE, 1, &c->sm_count, error) &&
           ssim_ini_uint(ini, "efficiency", "gemm_tile_m", FALSE, 1, &c->gemm_tile_m, error) &&
           ssim_ini_uint(ini, "efficiency", "gemm_tile_n", FALSE, 1, &c->gemm_tile_n, error) &&
           read_time_us(ini, "efficiency", "gemm_tile_us", FALSE, &c->gemm_tile_overhead, error) &&
           ssim_ini_double(ini, "efficiency", "gemm_unaligned", FALSE, 0, TRUE, 1,
                           &c->gemm_unaligned, error) &&
           ssim_ini_double(ini, "efficiency", "gemm_sustained", FALSE, 0, TRUE, 1,
                           &c->gemm_sustained, error) &&
           ssim_ini_double(ini, "efficiency", "gemm_fp8", FALSE, 0, TRUE, 1, &c->gemm_fp8, error) &&
           ssim_ini_double(ini, "efficiency", "multi_tensor", FALSE, 0, TRUE, 1, &c->multi_tensor,
                           error) &&
           ssim_ini_bool(ini, "efficiency", "flash_overlap", FALSE, &c->flash_overlap, error);
}

/* [calibration]: each key "LO..HI" (integers, LO <= HI), the fitted range of a dimension. */
static gboolean parse_calibration(const SsimIni *ini, SsimCluster *c, GError **error)
{
    for (guint d = 0; d < SSIM_FIT_DIM_N; d++) {
        g_autofree char *text = NULL;
        if (!ssim_ini_string(ini, "calibration", fit_dim_names[d], FALSE, &text, error))
            return FALSE;
        if (text == NULL)
            continue;
        guint64 lo = 0, hi = 0;
        g_auto(GStrv) parts = g_strsplit(text, "..", 2);
        if (g_strv_length(parts) != 2 ||
            !g_ascii_string_to_unsigned(g_strstrip(parts[0]), 10, 1, G_MAXUINT32, &lo, NULL) ||
            !g_ascii_string_to_unsigned(g_strstrip(parts[1]), 10, lo, G_MAXUINT32, &hi, NULL)) {
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, "calibration", fit_dim_names[d],
                           "'%s' is not a range LO..HI of positive integers with LO <= HI", text);
            return FALSE;
        }
        c->fit_lo[d] = (guint)lo;
        c->fit_hi[d] = (guint)hi;
    }
    return TRUE;
}

/* Reads every group of `ini` into `c` (preset with defaults) and checks it. */
static gboolean parse_cluster(const SsimIni *ini, SsimCluster *c, GError **error)
{
    const double T = 1e12, HUGE_V = 1e9;
    /* The version first: a file from a newer shiftsim may well have keys this one lacks. */
    if (!ssim_ini_check_format(ini, "cluster", FORMAT_VERSION, error) ||
        !ssim_ini_check_keys(ini, cluster_groups, error))
        return FALSE;

    c->source = g_strdup(ini->path);
    c->name = ssim_path_stem(ini->path, ".ini");

    guint64 hbm_mib = 0;
    if (!ssim_ini_string(ini, "cluster", "name", FALSE, &c->name, error) ||
        !ssim_ini_string(ini, "cluster", "gpu", TRUE, &c->gpu, error) ||
        !ssim_ini_uint(ini, "cluster", "gpus_per_node", TRUE, 1, &c->gpus_per_node, error) ||
        !ssim_ini_uint(ini, "cluster", "nodes", TRUE, 1, &c->nodes, error) ||
        !read_scaled(ini, "gpu", "peak_tflops_fp8", FALSE, 0, FALSE, HUGE_V, T,
                     &c->peak_flops[SSIM_DTYPE_FP8], error) ||
        !read_scaled(ini, "gpu", "peak_tflops_bf16", TRUE, 0, TRUE, HUGE_V, T,
                     &c->peak_flops[SSIM_DTYPE_BF16], error) ||
        !read_scaled(ini, "gpu", "peak_tflops_fp16", TRUE, 0, TRUE, HUGE_V, T,
                     &c->peak_flops[SSIM_DTYPE_FP16], error) ||
        !read_scaled(ini, "gpu", "peak_tflops_tf32", FALSE, 0, FALSE, HUGE_V, T,
                     &c->peak_flops[SSIM_DTYPE_TF32], error) ||
        !read_scaled(ini, "gpu", "peak_tflops_fp32", TRUE, 0, TRUE, HUGE_V, T,
                     &c->peak_flops[SSIM_DTYPE_FP32], error) ||
        !ssim_ini_u64(ini, "gpu", "hbm_capacity_MiB", TRUE, 1, &hbm_mib, error) ||
        !read_scaled(ini, "gpu", "hbm_bandwidth_GB_s", TRUE, 0, TRUE, HUGE_V, 1e9, &c->hbm_bw,
                     error) ||
        !read_scaled(ini, "nvlink", "bandwidth_GB_s", TRUE, 0, TRUE, HUGE_V, 1e9, &c->nvlink_bw,
                     error) ||
        !read_time_us(ini, "nvlink", "latency_us", TRUE, &c->nvlink_latency, error) ||
        !ssim_ini_bool(ini, "nvlink", "sharp", FALSE, &c->nvlink_sharp, error) ||
        !ssim_ini_uint(ini, "network", "nics_per_node", TRUE, 1, &c->nics_per_node, error) ||
        !read_scaled(ini, "network", "nic_bandwidth_Gbit_s", TRUE, 0, TRUE, HUGE_V, 1e9 / 8,
                     &c->nic_bw, error) ||
        !read_time_us(ini, "network", "latency_us", TRUE, &c->nic_latency, error) ||
        !ssim_ini_double(ini, "efficiency", "gemm", FALSE, 0, TRUE, 1, &c->gemm_efficiency,
                         error) ||
        !read_scaled(ini, "efficiency", "gemm_half_gflop", FALSE, 0, FALSE, HUGE_V, 1e9,
                     &c->gemm_half_flops, error) ||
        !ssim_ini_double(ini, "efficiency", "memory", FALSE, 0, TRUE, 1, &c->memory_efficiency,
                         error) ||
        !ssim_ini_double(ini, "efficiency", "nvlink", FALSE, 0, TRUE, 1, &c->nvlink_efficiency,
                         error) ||
        !ssim_ini_double(ini, "efficiency", "ib", FALSE, 0, TRUE, 1, &c->ib_efficiency, error) ||
        !ssim_ini_double(ini, "efficiency", "overlap_slowdown", FALSE, 1, FALSE, 100,
                         &c->overlap_slowdown, error) ||
        !read_time_us(ini, "efficiency", "kernel_overhead_us", FALSE, &c->kernel_overhead, error) ||
        !read_time_us(ini, "efficiency", "collective_overhead_us", FALSE, &c->collective_overhead,
                      error) ||
        !read_scaled(ini, "efficiency", "collective_copy_GB_s", FALSE, 0, FALSE, HUGE_V, 1e9,
                     &c->collective_copy_bw, error) ||
        !read_time_us(ini, "efficiency", "kernel_floor_us", FALSE, &c->kernel_floor, error) ||
        !read_time_us(ini, "efficiency", "microbatch_floor_us", FALSE, &c->microbatch_floor, error))
        return FALSE;
    if (!ssim_ini_enum(ini, "network", "algorithm", FALSE, algorithm_names, SSIM_NET_ALGO_DIRECT,
                       &c->net_algorithm, error) ||
        !read_time_us(ini, "network", "step_overhead_us", FALSE, &c->step_overhead, error) ||
        !ssim_ini_uint(ini, "network", "ring_nics", FALSE, 1, &c->ring_nics, error) ||
        !ssim_ini_enum(ini, "topology", "kind", FALSE, topology_kinds, G_N_ELEMENTS(topology_kinds),
                       &c->topology, error) ||
        !ssim_ini_uint(ini, "topology", "nvlink_ports", FALSE, 1, &c->nvlink_ports, error) ||
        !read_scaled(ini, "topology", "pcie_bandwidth_GB_s", FALSE, 0, TRUE, HUGE_V, 1e9,
                     &c->pcie_bw, error) ||
        !read_time_us(ini, "topology", "pcie_latency_us", FALSE, &c->pcie_latency, error) ||
        !ssim_ini_uint(ini, "topology", "rails", FALSE, 1, &c->rails, error) ||
        !ssim_ini_uint(ini, "topology", "gpus_per_nic", FALSE, 1, &c->gpus_per_nic, error) ||
        !ssim_ini_uint(ini, "topology", "nodes_per_leaf", FALSE, 1, &c->nodes_per_leaf, error) ||
        !ssim_ini_double(ini, "topology", "oversubscription", FALSE, 1, FALSE, 1e6,
                         &c->oversubscription, error) ||
        !read_time_us(ini, "topology", "spine_latency_us", FALSE, &c->spine_latency, error) ||
        !read_scaled(ini, "topology", "nvlink_pair_bandwidth_GB_s", FALSE, 0, TRUE, HUGE_V, 1e9,
                     &c->nvlink_pair_bw, error))
        return FALSE;
    if (!parse_gemm_model(ini, c, error) || !parse_calibration(ini, c, error))
        return FALSE;
    derive_topology(c);
    if (hbm_mib > G_MAXUINT64 / (1024 * 1024)) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, "gpu", "hbm_capacity_MiB",
                       "%" G_GUINT64_FORMAT " is too large", hbm_mib);
        return FALSE;
    }
    c->hbm_bytes = hbm_mib * 1024 * 1024;

    const char *group = NULL, *field = NULL;
    if (!check_cluster(c, &group, &field, error)) {
        ssim_ini_prefix_error(ini, error, group, field);
        return FALSE;
    }
    return TRUE;
}

SsimCluster *ssim_cluster_load_data(const char *text, gssize length, const char *path,
                                    GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    SsimIni ini = {0};
    g_autoptr(SsimCluster) c = cluster_new();
    gboolean ok = ssim_ini_init(&ini, text, length, path, error) && parse_cluster(&ini, c, error);
    ssim_ini_clear(&ini);
    return ok ? g_steal_pointer(&c) : NULL;
}

SsimCluster *ssim_cluster_load_file(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    gsize len = 0;
    g_autofree char *text = ssim_read_file(path, &len, error);
    if (text == NULL)
        return NULL;
    return ssim_cluster_load_data(text, (gssize)len, path, error);
}

SsimCluster *ssim_cluster_load(const char *name_or_path, GError **error)
{
    g_autofree char *path = ssim_ini_resolve(name_or_path, "models/clusters", "cluster", error);
    return path ? ssim_cluster_load_file(path, error) : NULL;
}

/* ---- Writing ----------------------------------------------------------------------------- */

/* Microseconds of an integer-nanosecond time: t / 1000, which is the double nearest the decimal
 * (seconds times 1e6 would write 55.317 as 55.317000000000007). */
static double us_of(SsimTime t)
{
    return (double)t / 1e3;
}

/* Appends "key = v" with v in the shortest %g form that reads back to the same double, a whole
 * number below 10^15 as one ("1410", not "1.41e+03"). */
static void kv(GString *out, const char *key, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE], fmt[8];
    if (v == floor(v) && fabs(v) < 1e15) {
        g_string_append_printf(out, "%s = %.0f\n", key, v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    g_string_append_printf(out, "%s = %s\n", key, buf);
}

/* [calibration], when the cluster records fitted ranges. */
static void append_calibration(GString *out, const SsimCluster *c)
{
    gboolean any = FALSE;
    for (guint d = 0; d < SSIM_FIT_DIM_N; d++)
        any = any || c->fit_hi[d] > 0;
    if (!any)
        return;
    g_string_append(out, "\n[calibration]\n");
    for (guint d = 0; d < SSIM_FIT_DIM_N; d++)
        if (c->fit_hi[d] > 0)
            g_string_append_printf(out, "%s = %u..%u\n", fit_dim_names[d], c->fit_lo[d],
                                   c->fit_hi[d]);
}

GString *ssim_cluster_write_ini(const SsimCluster *c, const char *comment)
{
    GString *out = g_string_new(NULL);
    if (comment) {
        g_auto(GStrv) lines = g_strsplit(comment, "\n", -1);
        for (guint i = 0; lines[i]; i++)
            if (lines[i][0] != '\0' || lines[i + 1] != NULL)
                g_string_append_printf(out, "#%s%s\n", lines[i][0] ? " " : "", lines[i]);
    }
    g_string_append_printf(out,
                           "[cluster]\nformat = 1\nname = %s\ngpu = %s\n"
                           "gpus_per_node = %u\nnodes = %u\n\n[gpu]\n",
                           c->name, c->gpu, c->gpus_per_node, c->nodes);
    static const char *const peak_keys[SSIM_DTYPE_N] = {[SSIM_DTYPE_FP8] = "peak_tflops_fp8",
                                                        [SSIM_DTYPE_BF16] = "peak_tflops_bf16",
                                                        [SSIM_DTYPE_FP16] = "peak_tflops_fp16",
                                                        [SSIM_DTYPE_TF32] = "peak_tflops_tf32",
                                                        [SSIM_DTYPE_FP32] = "peak_tflops_fp32"};
    for (guint d = 0; d < SSIM_DTYPE_N; d++)
        kv(out, peak_keys[d], c->peak_flops[d] / 1e12);
    g_string_append_printf(out, "hbm_capacity_MiB = %" G_GUINT64_FORMAT "\n",
                           c->hbm_bytes / (1024 * 1024));
    kv(out, "hbm_bandwidth_GB_s", c->hbm_bw / 1e9);
    if (c->sm_count > 0)
        g_string_append_printf(out, "sm_count = %u\n", c->sm_count);
    if (c->sm_clock > 0)
        kv(out, "sm_clock_MHz", c->sm_clock / 1e6);
    g_string_append(out, "\n[nvlink]\n");
    kv(out, "bandwidth_GB_s", c->nvlink_bw / 1e9);
    kv(out, "latency_us", us_of(c->nvlink_latency));
    if (c->nvlink_sharp)
        g_string_append(out, "sharp = true\n");
    g_string_append_printf(out, "\n[network]\nnics_per_node = %u\n", c->nics_per_node);
    kv(out, "nic_bandwidth_Gbit_s", c->nic_bw * 8 / 1e9);
    kv(out, "latency_us", us_of(c->nic_latency));
    g_string_append_printf(out, "algorithm = %s\n",
                           ssim_net_algorithm_name((SsimNetAlgorithm)c->net_algorithm));
    kv(out, "step_overhead_us", us_of(c->step_overhead));
    if (c->ring_nics > 0)
        g_string_append_printf(out, "ring_nics = %u\n", c->ring_nics);
    g_string_append(out, "\n[efficiency]\n");
    kv(out, "gemm", c->gemm_efficiency);
    kv(out, "gemm_half_gflop", c->gemm_half_flops / 1e9);
    kv(out, "memory", c->memory_efficiency);
    kv(out, "nvlink", c->nvlink_efficiency);
    kv(out, "ib", c->ib_efficiency);
    kv(out, "overlap_slowdown", c->overlap_slowdown);
    kv(out, "kernel_overhead_us", us_of(c->kernel_overhead));
    if (c->collective_overhead > 0)
        kv(out, "collective_overhead_us", us_of(c->collective_overhead));
    if (c->collective_copy_bw > 0)
        kv(out, "collective_copy_GB_s", c->collective_copy_bw / 1e9);
    if (c->kernel_floor > 0)
        kv(out, "kernel_floor_us", us_of(c->kernel_floor));
    if (c->microbatch_floor > 0)
        kv(out, "microbatch_floor_us", us_of(c->microbatch_floor));
    g_string_append_printf(out, "gemm_tile_m = %u\ngemm_tile_n = %u\n", c->gemm_tile_m,
                           c->gemm_tile_n);
    kv(out, "gemm_tile_us", us_of(c->gemm_tile_overhead));
    if (c->gemm_unaligned < 1.0)
        kv(out, "gemm_unaligned", c->gemm_unaligned);
    if (c->gemm_sustained < 1.0)
        kv(out, "gemm_sustained", c->gemm_sustained);
    if (c->gemm_fp8 > 0.0)
        kv(out, "gemm_fp8", c->gemm_fp8);
    if (c->multi_tensor > 0.0)
        kv(out, "multi_tensor", c->multi_tensor);
    if (c->flash_overlap)
        g_string_append(out, "flash_overlap = true\n");
    g_string_append_printf(out, "\n[topology]\nkind = %s\nnvlink_ports = %u\n",
                           ssim_topology_name((SsimTopologyKind)c->topology), c->nvlink_ports);
    if (c->topology == SSIM_TOPOLOGY_FULLMESH)
        kv(out, "nvlink_pair_bandwidth_GB_s", c->nvlink_pair_bw / 1e9);
    kv(out, "pcie_bandwidth_GB_s", c->pcie_bw / 1e9);
    kv(out, "pcie_latency_us", us_of(c->pcie_latency));
    g_string_append_printf(out, "rails = %u\ngpus_per_nic = %u\nnodes_per_leaf = %u\n", c->rails,
                           c->gpus_per_nic, c->nodes_per_leaf);
    kv(out, "oversubscription", c->oversubscription);
    kv(out, "spine_latency_us", us_of(c->spine_latency));
    append_calibration(out, c);
    return out;
}
