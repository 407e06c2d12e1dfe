/*
 * GEMM timing: bf16 or fp16 A, B and C, fp32 accumulation and scaling (CUBLAS_COMPUTE_32F),
 * C = A B with no epilogue, through cuBLAS's default algorithm (cublasGemmEx, what PyTorch's
 * matmul calls; the default) or with --gemm-library cublaslt the first algorithm cuBLASLt's
 * heuristic proposes for a 32 MiB workspace.  On an H200 the two agreed (median ratio 1.00,
 * 0.92-1.12 over 198 GEMMs; traces/h200/variants).
 *
 * Shapes are row-major, as the profile format states them: C[m x n] = A[m x k] B[k x n], `batch`
 * times with packed strides.  cuBLASLt is column-major, so the call computes the same product
 * transposed, C^T[n x m] = B^T[n x k] A^T[k x m], which reads the row-major buffers in place: a
 * row-major matrix is its column-major transpose.  Each shape is timed in the operand layout
 * frameworks run it in (shapes.h: "NT" forward, "NN" input gradient, "TN" weight gradient); on
 * an H200 the layout moved a GEMM's time by -10% to +10% (median +1%) against "NN".  L2 is
 * flushed before every timed iteration (unless --no-l2-flush): in training a layer's weights are
 * rarely still cached.
 */
#include "src/microbench/cuda-common.cuh"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <vector>

#define LT_OR(run, ret, call)                                                                      \
    do {                                                                                           \
        cublasStatus_t st_ = (call);                                                               \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            ssim_bench_notice((run), "%s:%d: %s: %s", __FILE__, __LINE__, #call,                   \
                              cublasGetStatusString(st_));                                         \
            return ret;                                                                            \
        }                                                                                          \
    } while (0)

namespace
{

using namespace ssimb;

constexpr size_t WORKSPACE_BYTES = 32u << 20;

struct LtLayout {
    cublasLtMatrixLayout_t l = nullptr;
    ~LtLayout()
    {
        if (l != nullptr)
            cublasLtMatrixLayoutDestroy(l);
    }
};
struct LtOp {
    cublasLtMatmulDesc_t d = nullptr;
    ~LtOp()
    {
        if (d != nullptr)
            cublasLtMatmulDescDestroy(d);
    }
};
struct LtPref {
    cublasLtMatmulPreference_t p = nullptr;
    ~LtPref()
    {
        if (p != nullptr)
            cublasLtMatmulPreferenceDestroy(p);
    }
};
struct BlasHandle {
    cublasHandle_t h = nullptr;
    ~BlasHandle()
    {
        if (h != nullptr)
            cublasDestroy(h);
    }
};
struct LtHandle {
    cublasLtHandle_t h = nullptr;
    ~LtHandle()
    {
        if (h != nullptr)
            cublasLtDestroy(h);
    }
};

cudaDataType_t cuda_type(SsimBenchDtype d)
{
    return d == SSIM_BENCH_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* A column-major rows x cols matrix, `batch` of them `stride` elements apart. */
bool make_layout(SsimBenchRun *run, LtLayout &lay, cudaDataType_t t, uint64_t rows, uint64_t cols,
                 uint64_t batch)
{
    LT_OR(run, false, cublasLtMatrixLayoutCreate(&lay.l, t, rows, cols, (int64_t)rows));
    if (batch > 1) {
        int count = (int)batch;
        int64_t stride = (int64_t)(rows * cols);
        LT_OR(run, false,
              cublasLtMatrixLayoutSetAttribute(lay.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof count));
        LT_OR(run, false,
              cublasLtMatrixLayoutSetAttribute(lay.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof stride));
    }
    return true;
}

/* Times `g` through cuBLAS's default algorithm (cublasGemmEx, strided-batched for a batch): the
 * call PyTorch's matmul makes.  The column-major view is the one of the cuBLASLt path below. */
bool blas_samples(SsimBenchRun *run, cublasHandle_t h, cudaStream_t s, L2Flush *flush,
                  cudaDataType_t t, const SsimBenchGemmShape &g, const DeviceBuffer &a,
                  const DeviceBuffer &b, DeviceBuffer &c, std::vector<double> &samples)
{
    const bool a_t = g.layout[0] == 'T', b_t = g.layout[1] == 'T';
    const int m = (int)g.m, n = (int)g.n, k = (int)g.k;
    const float alpha = 1.0f, beta = 0.0f;
    auto body = [&]() -> cudaError_t {
        cublasStatus_t r =
            g.batch > 1
                ? cublasGemmStridedBatchedEx(
                      h, b_t ? CUBLAS_OP_T : CUBLAS_OP_N, a_t ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                      &alpha, b.ptr, t, b_t ? k : n, (long long)g.k * g.n, a.ptr, t, a_t ? m : k,
                      (long long)g.m * g.k, &beta, c.ptr, t, n, (long long)g.m * g.n, (int)g.batch,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                : cublasGemmEx(h, b_t ? CUBLAS_OP_T : CUBLAS_OP_N, a_t ? CUBLAS_OP_T : CUBLAS_OP_N,
                               n, m, k, &alpha, b.ptr, t, b_t ? k : n, a.ptr, t, a_t ? m : k, &beta,
                               c.ptr, t, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        return r == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
    };
    return time_case(run, s, flush, body, samples);
}

template <typename T>
bool one_shape(SsimBenchRun *run, cublasLtHandle_t lt, cublasHandle_t blas, cudaStream_t s,
               DeviceBuffer &ws, L2Flush *flush, SsimBenchDtype dtype, const SsimBenchGemmShape &g)
{
    const uint64_t es = sizeof(T);
    DeviceBuffer a, b, c;
    if (!a.alloc(g.batch * g.m * g.k * es) || !b.alloc(g.batch * g.k * g.n * es) ||
        !c.alloc(g.batch * g.m * g.n * es)) {
        ssim_bench_notice(run, "gemm %s: does not fit in GPU memory, skipped", g.label);
        return true;
    }
    CUDA_OR(run, false, fill_random<T>(a.as<T>(), g.batch * g.m * g.k, 1, 1.0f, s));
    CUDA_OR(run, false, fill_random<T>(b.as<T>(), g.batch * g.k * g.n, 2, 1.0f, s));

    cudaDataType_t t = cuda_type(dtype);
    /* The algo column records the operand layout the GEMM was timed in. */
    SsimBenchRow row = {"gemm", g.label, ssim_bench_dtype_name(dtype), g.m, g.n, g.k, g.batch, 0, 1,
                        1,      g.layout};
    std::vector<double> samples;
    if (!ssim_bench_run_plan(run)->gemm_lt) {
        if (!blas_samples(run, blas, s, flush, t, g, a, b, c, samples))
            return false;
        ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
        return true;
    }
    LtOp op;
    LT_OR(run, false, cublasLtMatmulDescCreate(&op.d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    /* Column-major view: C^T (n x m) = B^T (n x k) * A^T (k x m).  A row-major buffer is its
     * column-major transpose, so B stored [k x n] ('N') is B^T as it stands and B stored [n x k]
     * ('T') is B, taken transposed; likewise A. */
    const bool a_t = g.layout[0] == 'T', b_t = g.layout[1] == 'T';
    cublasOperation_t opa = b_t ? CUBLAS_OP_T : CUBLAS_OP_N, opb = a_t ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_OR(run, false,
          cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    LT_OR(run, false,
          cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    LtLayout la, lb, lc;
    if (!make_layout(run, la, t, b_t ? g.k : g.n, b_t ? g.n : g.k, g.batch) ||
        !make_layout(run, lb, t, a_t ? g.m : g.k, a_t ? g.k : g.m, g.batch) ||
        !make_layout(run, lc, t, g.n, g.m, g.batch))
        return false;
    LtPref pref;
    LT_OR(run, false, cublasLtMatmulPreferenceCreate(&pref.p));
    size_t wsb = ws.bytes;
    LT_OR(run, false,
          cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(lt, op.d, la.l, lb.l, lc.l, lc.l, pref.p, 1, &heur, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        ssim_bench_notice(run, "gemm %s %s: cuBLASLt has no algorithm (%s), skipped", g.label,
                          ssim_bench_dtype_name(dtype), cublasGetStatusString(st));
        return true;
    }
    const float alpha = 1.0f, beta = 0.0f;
    auto body = [&]() -> cudaError_t {
        cublasStatus_t r = cublasLtMatmul(lt, op.d, &alpha, b.ptr, la.l, a.ptr, lb.l, &beta, c.ptr,
                                          lc.l, c.ptr, lc.l, &heur.algo, ws.ptr, ws.bytes, s);
        return r == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
    };
    if (!time_case(run, s, flush, body, samples))
        return false;
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    return true;
}

} // namespace

int ssim_bench_gemm(SsimBenchRun *run)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    CUDA_OR(run, -1, cudaSetDevice(plan->device));
    Stream s;
    CUDA_OR(run, -1, s.create());
    LtHandle lt;
    LT_OR(run, -1, cublasLtCreate(&lt.h));
    DeviceBuffer ws;
    L2Flush flush;
    if (!ws.alloc(WORKSPACE_BYTES) || (plan->flush_l2 && !flush.init(plan->device))) {
        ssim_bench_notice(run, "gemm: cannot allocate the workspace and L2 flush buffer");
        return -1;
    }
    /* cuBLAS gets the same 32 MiB workspace, as PyTorch gives it on Hopper. */
    BlasHandle blas;
    if (cublasCreate(&blas.h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(blas.h, s.s) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(blas.h, ws.ptr, ws.bytes) != CUBLAS_STATUS_SUCCESS) {
        ssim_bench_notice(run, "gemm: cublasCreate failed");
        return -1;
    }
    for (size_t d = 0; d < plan->n_dtypes; d++) {
        for (size_t i = 0; i < plan->n_gemms; i++) {
            bool ok = plan->dtypes[d] == SSIM_BENCH_FP16
                          ? one_shape<__half>(run, lt.h, blas.h, s.s, ws,
                                              plan->flush_l2 ? &flush : nullptr, plan->dtypes[d],
                                              plan->gemms[i])
                          : one_shape<__nv_bfloat16>(run, lt.h, blas.h, s.s, ws,
                                                     plan->flush_l2 ? &flush : nullptr,
                                                     plan->dtypes[d], plan->gemms[i]);
            if (!ok)
                return -1;
        }
    }
    return 0;
}
