/*
 * The free parameters of a cluster description: the figures no datasheet gives (how close real
 * GEMMs, memory-bound kernels and collectives come to the peaks, latencies, the slowdown of
 * compute beside a collective, the fixed cost and the floor of a kernel), which `shiftsim
 * calibrate` fits to measured runs and which a cluster INI stores in [efficiency], [nvlink] and
 * [network].
 *
 * One X-macro line a parameter gives its enum value, its key (the INI key of the figure, with
 * its unit: us for latencies, GFLOP for the half-efficiency GEMM size) and the range a fit may
 * search, so the names, the bounds and the enum cannot drift.  A parameter's value is always in
 * the unit of its key; get and set convert to and from the cluster's base units.
 *
 * Ownership: nothing is allocated; SsimCalibValues is a plain value.
 */
#pragma once

#include <shiftsim/cluster.h>

G_BEGIN_DECLS

/* The free parameters: enum name, file key, lower and upper bound, log scale. */
#define SSIM_CALIB_PARAM_LIST(X)                                                                   \
    X(GEMM, "gemm", 0.2, 1.0, FALSE)                                                               \
    X(GEMM_HALF, "gemm_half_gflop", 0.001, 100.0, TRUE)                                            \
    X(MEMORY, "memory", 0.1, 1.0, FALSE)                                                           \
    X(NVLINK, "nvlink", 0.05, 1.0, FALSE)                                                          \
    X(NVLINK_LATENCY, "nvlink_latency_us", 0.0, 100.0, FALSE)                                      \
    X(IB, "ib", 0.05, 1.0, FALSE)                                                                  \
    X(IB_LATENCY, "ib_latency_us", 0.0, 200.0, FALSE)                                              \
    X(OVERLAP, "overlap_slowdown", 1.0, 3.0, FALSE)                                                \
    X(KERNEL_OVERHEAD, "kernel_overhead_us", 0.0, 200.0, FALSE)                                    \
    X(KERNEL_FLOOR, "kernel_floor_us", 0.0, 500.0, FALSE)                                          \
    X(GEMM_TILE, "gemm_tile_us", 0.0, 20.0, FALSE)                                                 \
    X(MICROBATCH_FLOOR, "microbatch_floor_us", 0.0, 20000.0, FALSE)                                \
    X(GEMM_SUSTAINED, "gemm_sustained", 0.3, 1.0, FALSE)

typedef enum {
#define SSIM_X(e, k, lo, hi, lg) SSIM_CALIB_##e,
    SSIM_CALIB_PARAM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_CALIB_N
} SsimCalibParam;

const char *ssim_calib_param_name(SsimCalibParam p);
/* The range a fit searches for p, in the unit of its key. */
void ssim_calib_param_range(SsimCalibParam p, double *lo, double *hi);
/* Parses "gemm,memory,kernel_overhead_us" into a mask; FALSE with a message naming the bad one. */
gboolean ssim_calib_params_parse(const char *list, guint64 *mask, GError **error);
/* The default set: kernel_floor_us, the host's issue interval (every other parameter on
 * request: the GPU's figures come from public measurements, see the cluster files). */
guint64 ssim_calib_params_default(void);
/* The figure of `cluster` for p, in the unit of its key (us for latencies, GFLOP for half). */
double ssim_calib_param_get(const SsimCluster *cluster, SsimCalibParam p);
void ssim_calib_param_set(SsimCluster *cluster, SsimCalibParam p, double value);

/* Overrides applied to a cluster (a simulation's, a fit's): a value for each parameter of the
 * mask. */
typedef struct {
    guint64 mask; /* bit p set: value[p] replaces the cluster's figure */
    double value[16];
} SsimCalibValues;

/* Applies every parameter of `values` present in its mask. */
void ssim_calib_values_apply(const SsimCalibValues *values, SsimCluster *cluster);

G_END_DECLS
