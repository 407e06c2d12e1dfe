/*
 * Attention forward and backward, timed as the `gemm-softmax` formulation: no fused (flash)
 * kernel, but batched cuBLAS GEMMs around this tool's softmax kernels, the way attention ran
 * before fused kernels and the way the simulator's roofline models it.  The profile's algo column
 * says `gemm-softmax`, so a profile measured with a fused kernel later is never confused with it.
 *
 * Layout: Q, K, V, O and their gradients are [batch * heads, seq, head_dim] row-major; the scores
 * S, probabilities P and their gradients are [batch * heads, seq, seq].  Forward (one sample):
 * S = Q K^T; P = softmax(S / sqrt(d)) with a causal mask; O = P V.  Backward (one sample):
 * dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(dP * P)) / sqrt(d); dQ = dS K; dK = dS^T Q.
 * GEMMs accumulate in fp32 (CUBLAS_COMPUTE_32F).  L2 is flushed before each timed iteration.
 *
 * Row-major to cuBLAS: a row-major X[r x c] is a column-major X^T, so C = op(A) op(B) row-major
 * is C^T = op(B)^T op(A)^T column-major: swap the operands, keep their transpose flags.
 */
#include "src/microbench/cuda-common.cuh"
#include "src/microbench/kernels.cuh"

#include <cublas_v2.h>

#include <math.h>
#include <vector>

namespace
{

using namespace ssimb;

struct BlasHandle {
    cublasHandle_t h = nullptr;
    ~BlasHandle()
    {
        if (h != nullptr)
            cublasDestroy(h);
    }
};

/* Row-major strided-batched C[m x n] = op(A) op(B); lda/ldb/ldc are row lengths as stored. */
cudaError_t rm_gemm(cublasHandle_t h, cudaDataType_t t, bool ta, bool tb, long long m, long long n,
                    long long k, const void *a, long long lda, long long sa, const void *b,
                    long long ldb, long long sb, void *c, long long ldc, long long sc, int batch)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
        &one, b, t, (int)ldb, sb, a, t, (int)lda, sa, &zero, c, t, (int)ldc, sc, batch,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

template <typename T>
bool one_case(SsimBenchRun *run, cublasHandle_t h, cudaStream_t s, L2Flush *flush,
              SsimBenchDtype dtype, const SsimBenchAttention &c)
{
    const long long S = (long long)c.seq, D = (long long)c.head_dim;
    const int BH = (int)(c.batch * c.heads);
    const size_t qkv = (size_t)BH * S * D, ss = (size_t)BH * S * S;
    DeviceBuffer q, k, v, o, dO, dq, dk, dv, p, dp;
    bool fits = q.alloc(qkv * sizeof(T)) && k.alloc(qkv * sizeof(T)) && v.alloc(qkv * sizeof(T)) &&
                o.alloc(qkv * sizeof(T)) && dO.alloc(qkv * sizeof(T)) &&
                dq.alloc(qkv * sizeof(T)) && dk.alloc(qkv * sizeof(T)) &&
                dv.alloc(qkv * sizeof(T)) && p.alloc(ss * sizeof(T)) && dp.alloc(ss * sizeof(T));
    if (!fits) {
        ssim_bench_notice(run, "attention seq %lld heads %d: does not fit in GPU memory, skipped",
                          S, BH);
        return true;
    }
    CUDA_OR(run, false, fill_random<T>(q.as<T>(), qkv, 11, 1.0f, s));
    CUDA_OR(run, false, fill_random<T>(k.as<T>(), qkv, 12, 1.0f, s));
    CUDA_OR(run, false, fill_random<T>(v.as<T>(), qkv, 13, 1.0f, s));
    CUDA_OR(run, false, fill_random<T>(dO.as<T>(), qkv, 14, 1.0f, s));
    const cudaDataType_t t = dtype == SSIM_BENCH_FP16 ? CUDA_R_16F : CUDA_R_16BF;
    const float scale = 1.0f / sqrtf((float)D);
    const long long sQ = S * D, sS = S * S;

    auto forward = [&]() -> cudaError_t {
        cudaError_t e =
            rm_gemm(h, t, false, true, S, S, D, q.ptr, D, sQ, k.ptr, D, sQ, p.ptr, S, sS, BH);
        if (e != cudaSuccess)
            return e;
        softmax_rows<T>
            <<<(unsigned)(BH * S), ROW_THREADS, 0, s>>>(p.as<T>(), p.as<T>(), S, scale, true);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        return rm_gemm(h, t, false, false, S, D, S, p.ptr, S, sS, v.ptr, D, sQ, o.ptr, D, sQ, BH);
    };
    auto backward = [&]() -> cudaError_t {
        cudaError_t e;
        if ((e = rm_gemm(h, t, true, false, S, D, S, p.ptr, S, sS, dO.ptr, D, sQ, dv.ptr, D, sQ,
                         BH)) != cudaSuccess)
            return e;
        if ((e = rm_gemm(h, t, false, true, S, S, D, dO.ptr, D, sQ, v.ptr, D, sQ, dp.ptr, S, sS,
                         BH)) != cudaSuccess)
            return e;
        softmax_backward_rows<T><<<(unsigned)(BH * S), ROW_THREADS, 0, s>>>(p.as<T>(), dp.as<T>(),
                                                                            dp.as<T>(), S, scale);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        if ((e = rm_gemm(h, t, false, false, S, D, S, dp.ptr, S, sS, k.ptr, D, sQ, dq.ptr, D, sQ,
                         BH)) != cudaSuccess)
            return e;
        return rm_gemm(h, t, true, false, S, D, S, dp.ptr, S, sS, q.ptr, D, sQ, dk.ptr, D, sQ, BH);
    };

    std::vector<double> samples;
    SsimBenchRow row = {"attention",
                        "fwd",
                        ssim_bench_dtype_name(dtype),
                        c.seq,
                        c.heads,
                        c.head_dim,
                        c.batch,
                        0,
                        1,
                        1,
                        "gemm-softmax"};
    if (!time_case(run, s, flush, forward, samples))
        return false;
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    /* The backward pass reads P, which the forward runs above left in place. */
    row.op = "bwd";
    if (!time_case(run, s, flush, backward, samples))
        return false;
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    return true;
}

} // namespace

int ssim_bench_attention(SsimBenchRun *run)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    CUDA_OR(run, -1, cudaSetDevice(plan->device));
    Stream s;
    CUDA_OR(run, -1, s.create());
    BlasHandle h;
    if (cublasCreate(&h.h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(h.h, s.s) != CUBLAS_STATUS_SUCCESS) {
        ssim_bench_notice(run, "attention: cublasCreate failed");
        return -1;
    }
    L2Flush flush;
    if (plan->flush_l2 && !flush.init(plan->device)) {
        ssim_bench_notice(run, "attention: cannot allocate the L2 flush buffer");
        return -1;
    }
    for (size_t d = 0; d < plan->n_dtypes; d++) {
        for (size_t i = 0; i < plan->n_attentions; i++) {
            L2Flush *f = plan->flush_l2 ? &flush : nullptr;
            bool ok = plan->dtypes[d] == SSIM_BENCH_FP16
                          ? one_case<__half>(run, h.h, s.s, f, plan->dtypes[d], plan->attentions[i])
                          : one_case<__nv_bfloat16>(run, h.h, s.s, f, plan->dtypes[d],
                                                    plan->attentions[i]);
            if (!ok)
                return -1;
        }
    }
    return 0;
}
