/*
 * PyTorch profiler (Kineto) Chrome-trace import: the GPU kernels of a trace become rows of a
 * measured profile (SsimProfile), and its ProfilerStep#N ranges become a measured step time.
 *
 * What is read (json-glib): `traceEvents`, complete events (ph "X") only.
 *   - cat "kernel": a GPU kernel.  A GEMM when the CPU op that launched it (linked by args
 *     "External id") is aten::mm, aten::addmm, aten::bmm, aten::baddbmm or aten::matmul with
 *     args "Input Dims" (m x k by k x n, batched for bmm) -> a gemm row; an NCCL kernel (name
 *     containing "nccl") with "In msg nelems" / "Out msg nelems" / "Group size" / "dtype" (on the
 *     kernel or on its CPU op) -> a comm row; a fused attention kernel launched by one of
 *     PyTorch's flash, cuDNN or memory-efficient attention ops (aten::_scaled_dot_product_*_
 *     attention, aten::_cudnn_attention_forward, aten::_flash_attention_forward,
 *     aten::_efficient_attention_forward, and their _backward) with "Input Dims" of the query
 *     -> an attention row "flash-fwd" or "flash-bwd" (seq, heads, head dim, batch; taken as
 *     causal, as the simulator's decoders are); anything else is counted as unmapped (no
 *     shape).
 *   - cat "gpu_memcpy": a copy (name Memcpy DtoD / HtoD / DtoH / PtoP, args "bytes") -> copy row.
 *   - cat "cpu_op" / "user_annotation" named "ProfilerStep#N": one training step.
 *   - cat "cuda_runtime" / "cuda_driver": the host's launches and synchronisations (below).
 * Kernels of the same row key (kind, op, dtype, shape, bytes, ranks) are merged: time_us is the
 * mean, with median, min, stddev and the sample count.  Without a ProfilerStep range the step
 * time is the span from the first kernel start to the last kernel end.
 *
 * Ownership: ssim_kineto_load*() return a profile the caller frees with ssim_profile_free().
 */
#pragma once

#include <shiftsim/profile.h>

G_BEGIN_DECLS

typedef struct {
    guint kernels;          /* GPU kernels seen */
    guint gemm, comm, copy; /* events mapped to rows of each kind */
    guint attention;        /* fused (flash) attention kernels mapped to rows */
    guint unmapped;         /* kernels with no shape to key them by */
    guint steps;            /* ProfilerStep ranges */
    double step_ms;         /* mean step time (ms); 0 when the trace has no kernel */
    double step_ms_min, step_ms_max;
    double kernel_ms; /* sum of mapped and unmapped kernel time */
    /* The host (events of cat cuda_runtime / cuda_driver): launches of GPU work (a kernel, an
     * async copy or memset, a CUDA graph; a driver launch inside a runtime one on its thread
     * counts once) and in how many processes.  Between two launches of a process, the time from
     * one's start to the next's less the calls between them that waited for the GPU (a
     * synchronisation, a synchronous copy): on one thread, the host's time per launch (mean and
     * median: a cluster's kernel_floor_us); from one thread to another, a change of phase
     * (PyTorch launches the forward from Python's thread and the backward from autograd's: the
     * loss, the autograd engine's start, the step's own Python; a cluster's microbatch_floor_us,
     * which is per phase).  Means are 0 where there is no such gap. */
    guint launches, host_processes, thread_switches;
    double launch_us_mean, launch_us_median, switch_us_mean;
} SsimKinetoSummary;

/* Reads a Kineto trace.  NULL with `error` set (SSIM_CONFIG_ERROR, "file: ...") when it is not
 * JSON or has no traceEvents array.  `summary` may be NULL. */
SsimProfile *ssim_kineto_load(const char *path, SsimKinetoSummary *summary, GError **error);
SsimProfile *ssim_kineto_load_data(const char *text, gssize length, const char *path,
                                   SsimKinetoSummary *summary, GError **error);

G_END_DECLS
