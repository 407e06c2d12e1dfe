/*
 * Memory-bound operations with this tool's own kernels, timed for the achieved bandwidth: the
 * row's `bytes` is what the operation must read plus write at least once, so bytes / time is the
 * bandwidth a simulator should charge it at.
 *
 *   layernorm  y = (x - mean) / sqrt(var + eps) * gamma + beta per row; bytes (2 rows + 2) cols
 *   gelu       y = gelu_tanh(x);  bytes 2 n                     (x elements of `dtype`)
 *   softmax    y = softmax(x) per row;  bytes 2 rows cols
 *   add        y = a + b (the residual add);  bytes 3 n
 *   adam       one fused AdamW step: fp32 param, m, v read and written, a `dtype` gradient read,
 *              a `dtype` copy of the param written (mixed precision);  bytes n (24 + 2 size)
 *   copy       y = x with this tool's vectorised kernel;  bytes 2 n
 *
 * Elementwise kernels move 16 bytes per thread per step where the size allows (n a multiple of 8,
 * which every model size is), otherwise one element; all use grid-stride loops sized to fill the
 * GPU.  L2 is flushed before each timed iteration unless --no-l2-flush: a layer's activations
 * of training sizes do not stay in L2 between the kernels that produce and consume them.
 */
#include "src/microbench/cuda-common.cuh"
#include "src/microbench/kernels.cuh"

#include <vector>

namespace
{

using namespace ssimb;

template <typename T> struct alignas(16) Vec8 {
    T v[8];
};

__device__ inline float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <typename T> __global__ void gelu_kernel(const T *x, T *y, size_t n)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x,
           step = (size_t)gridDim.x * blockDim.x;
    if (n % 8 == 0) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        uint4 *yv = reinterpret_cast<uint4 *>(y);
        for (size_t i = tid; i < n / 8; i += step) {
            uint4 raw = xv[i];
            Vec8<T> a = *reinterpret_cast<Vec8<T> *>(&raw);
            for (int j = 0; j < 8; j++)
                a.v[j] = from_f<T>(gelu_tanh(to_f(a.v[j])));
            yv[i] = *reinterpret_cast<uint4 *>(&a);
        }
    } else {
        for (size_t i = tid; i < n; i += step)
            y[i] = from_f<T>(gelu_tanh(to_f(x[i])));
    }
}

template <typename T> __global__ void add_kernel(const T *a, const T *b, T *y, size_t n)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x,
           step = (size_t)gridDim.x * blockDim.x;
    if (n % 8 == 0) {
        const uint4 *av = reinterpret_cast<const uint4 *>(a);
        const uint4 *bv = reinterpret_cast<const uint4 *>(b);
        uint4 *yv = reinterpret_cast<uint4 *>(y);
        for (size_t i = tid; i < n / 8; i += step) {
            uint4 ra = av[i], rb = bv[i];
            Vec8<T> va = *reinterpret_cast<Vec8<T> *>(&ra);
            Vec8<T> vb = *reinterpret_cast<Vec8<T> *>(&rb);
            for (int j = 0; j < 8; j++)
                va.v[j] = from_f<T>(to_f(va.v[j]) + to_f(vb.v[j]));
            yv[i] = *reinterpret_cast<uint4 *>(&va);
        }
    } else {
        for (size_t i = tid; i < n; i += step)
            y[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
    }
}

template <typename T> __global__ void copy_kernel(const T *x, T *y, size_t n)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x,
           step = (size_t)gridDim.x * blockDim.x;
    if (n % 8 == 0) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        uint4 *yv = reinterpret_cast<uint4 *>(y);
        for (size_t i = tid; i < n / 8; i += step)
            yv[i] = xv[i];
    } else {
        for (size_t i = tid; i < n; i += step)
            y[i] = x[i];
    }
}

template <typename T>
__global__ void adam_kernel(float *p, float *m, float *v, const T *g, T *p16, size_t n, float lr,
                            float b1, float b2, float c1, float c2, float eps, float wd)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x,
           step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = tid; i < n; i += step) {
        float gi = to_f(g[i]);
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        float pi = p[i] * (1.0f - lr * wd) - lr * (mi * c1) / (sqrtf(vi * c2) + eps);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        p16[i] = from_f<T>(pi);
    }
}

template <typename T>
__global__ void layernorm_kernel(const T *x, const T *gamma, const T *beta, T *y, long long cols,
                                 float eps)
{
    long long row = blockIdx.x;
    const T *xr = x + row * cols;
    T *yr = y + row * cols;
    float sum = 0.0f, sq = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = to_f(xr[j]);
        sum += v;
        sq += v * v;
    }
    sum = block_reduce<false>(sum);
    sq = block_reduce<false>(sq);
    float mean = sum / (float)cols;
    float rstd = rsqrtf(fmaxf(sq / (float)cols - mean * mean, 0.0f) + eps);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = from_f<T>((to_f(xr[j]) - mean) * rstd * to_f(gamma[j]) + to_f(beta[j]));
}

template <typename T>
bool one_case(SsimBenchRun *run, cudaStream_t s, L2Flush *flush, int blocks, SsimBenchDtype dtype,
              const SsimBenchMemCase &c)
{
    const size_t n = (size_t)(c.rows * c.cols), es = sizeof(T);
    DeviceBuffer a, b, y, f1, f2, f3;
    uint64_t bytes = 0;
    bool fits = a.alloc(n * es) && y.alloc(n * es);
    switch (c.op) {
    case SSIM_BENCH_MEMOP_LAYERNORM:
        fits = fits && b.alloc(2 * c.cols * es);
        bytes = (2 * c.rows + 2) * c.cols * es;
        break;
    case SSIM_BENCH_MEMOP_ADD:
        fits = fits && b.alloc(n * es);
        bytes = 3 * n * es;
        break;
    case SSIM_BENCH_MEMOP_ADAM:
        fits = fits && f1.alloc(n * 4) && f2.alloc(n * 4) && f3.alloc(n * 4);
        bytes = n * (24 + 2 * es);
        break;
    default:
        bytes = 2 * n * es;
        break;
    }
    const char *name = ssim_bench_memop_name(c.op);
    if (!fits) {
        ssim_bench_notice(run, "memory %s %zu elements: does not fit in GPU memory, skipped", name,
                          n);
        return true;
    }
    CUDA_OR(run, false, fill_random<T>(a.as<T>(), n, 21, 1.0f, s));
    if (b.ptr != nullptr)
        CUDA_OR(run, false, fill_random<T>(b.as<T>(), b.bytes / es, 22, 1.0f, s));
    if (f1.ptr != nullptr) {
        CUDA_OR(run, false, fill_random_f32(f1.as<float>(), n, 23, 1.0f, s));
        CUDA_OR(run, false, fill_random_f32(f2.as<float>(), n, 24, 0.01f, s));
        CUDA_OR(run, false, cudaMemsetAsync(f3.ptr, 0, n * 4, s));
    }
    T *A = a.as<T>(), *B = b.as<T>(), *Y = y.as<T>();
    float *P = f1.as<float>(), *M = f2.as<float>(), *V = f3.as<float>();
    const long long cols = (long long)c.cols;
    const unsigned rows = (unsigned)c.rows;
    auto body = [&]() -> cudaError_t {
        switch (c.op) {
        case SSIM_BENCH_MEMOP_LAYERNORM:
            layernorm_kernel<T><<<rows, ROW_THREADS, 0, s>>>(A, B, B + cols, Y, cols, 1e-5f);
            break;
        case SSIM_BENCH_MEMOP_GELU:
            gelu_kernel<T><<<blocks, 256, 0, s>>>(A, Y, n);
            break;
        case SSIM_BENCH_MEMOP_SOFTMAX:
            softmax_rows<T><<<rows, ROW_THREADS, 0, s>>>(A, Y, cols, 1.0f, false);
            break;
        case SSIM_BENCH_MEMOP_ADD:
            add_kernel<T><<<blocks, 256, 0, s>>>(A, B, Y, n);
            break;
        case SSIM_BENCH_MEMOP_ADAM:
            adam_kernel<T><<<blocks, 256, 0, s>>>(P, M, V, A, Y, n, 1e-4f, 0.9f, 0.95f, 1.1f, 1.2f,
                                                  1e-8f, 0.1f);
            break;
        case SSIM_BENCH_MEMOP_COPY:
            copy_kernel<T><<<blocks, 256, 0, s>>>(A, Y, n);
            break;
        case SSIM_BENCH_MEMOP_N:
            return cudaErrorInvalidValue;
        }
        return cudaGetLastError();
    };
    std::vector<double> samples;
    if (!time_case(run, s, flush, body, samples))
        return false;
    SsimBenchRow row = {"memory", name, ssim_bench_dtype_name(dtype), 0, 0, 0, 0, bytes, 1, 1, ""};
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    return true;
}

} // namespace

int ssim_bench_memops(SsimBenchRun *run)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    CUDA_OR(run, -1, cudaSetDevice(plan->device));
    Stream s;
    CUDA_OR(run, -1, s.create());
    int sms = 0;
    CUDA_OR(run, -1, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, plan->device));
    const int blocks = 8 * sms; /* 8 x 256 threads per SM: full occupancy for these kernels */
    L2Flush flush;
    if (plan->flush_l2 && !flush.init(plan->device)) {
        ssim_bench_notice(run, "memory: cannot allocate the L2 flush buffer");
        return -1;
    }
    for (size_t d = 0; d < plan->n_dtypes; d++) {
        for (size_t i = 0; i < plan->n_memcases; i++) {
            L2Flush *f = plan->flush_l2 ? &flush : nullptr;
            bool ok =
                plan->dtypes[d] == SSIM_BENCH_FP16
                    ? one_case<__half>(run, s.s, f, blocks, plan->dtypes[d], plan->memcases[i])
                    : one_case<__nv_bfloat16>(run, s.s, f, blocks, plan->dtypes[d],
                                              plan->memcases[i]);
            if (!ok)
                return -1;
        }
    }
    return 0;
}
