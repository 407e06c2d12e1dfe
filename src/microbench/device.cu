/*
 * Device discovery and the facts the profile's metadata lines record (GPU, SM count, clocks,
 * L2, memory, CUDA runtime and driver API, cuBLAS and NCCL versions), plus the random-fill
 * kernels the other modules share.  No device, or no driver at all, is an ordinary outcome here:
 * the count is 0 and `why` says what CUDA reported.
 */
#include "src/microbench/cuda-common.cuh"

#include <cublasLt.h>
#include <nccl.h>

#include <stdio.h>
#include <string.h>

int ssim_bench_device_count(char *why, size_t why_len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return 0;
    }
    if (count <= 0)
        snprintf(why, why_len, "cudaGetDeviceCount reports no device");
    return count;
}

int ssim_bench_device_info(int device, SsimBenchDeviceInfo *info, char *why, size_t why_len)
{
    memset(info, 0, sizeof *info);
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceProperties(%d): %s", device, cudaGetErrorString(e));
        return -1;
    }
    snprintf(info->gpu, sizeof info->gpu, "%s", prop.name);
    info->sm_count = prop.multiProcessorCount;
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->hbm_bytes = prop.totalGlobalMem;
    info->l2_bytes = prop.l2CacheSize;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess)
        info->clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
        info->mem_clock_mhz = khz / 1000;
    cudaRuntimeGetVersion(&info->cuda_runtime);
    cudaDriverGetVersion(&info->cuda_driver);
    info->cublas_version = (int)cublasLtGetVersion();
    if (ncclGetVersion(&info->nccl_version) != ncclSuccess)
        info->nccl_version = 0;
    cudaGetDeviceCount(&info->visible_gpus);
    return 0;
}

namespace ssimb
{

/* A 32-bit integer hash (the "lowbias32" finaliser): cheap and well mixed. */
__device__ static inline unsigned hash32(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__device__ static inline float uniform(size_t i, unsigned seed, float scale)
{
    unsigned h = hash32((unsigned)i ^ hash32(seed + (unsigned)(i >> 32)));
    return scale * ((float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

template <typename T> __device__ static inline T from_float(float v);
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16(v);
}
template <> __device__ inline __half from_float<__half>(float v)
{
    return __float2half(v);
}
template <> __device__ inline float from_float<float>(float v)
{
    return v;
}

template <typename T> __global__ void fill_kernel(T *p, size_t n, unsigned seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_float<T>(uniform(i, seed, scale));
}

template <typename T>
cudaError_t fill_random(T *p, size_t n, unsigned seed, float scale, cudaStream_t s)
{
    fill_kernel<T><<<1024, 256, 0, s>>>(p, n, seed, scale);
    return cudaGetLastError();
}

template cudaError_t fill_random<__nv_bfloat16>(__nv_bfloat16 *, size_t, unsigned, float,
                                                cudaStream_t);
template cudaError_t fill_random<__half>(__half *, size_t, unsigned, float, cudaStream_t);

cudaError_t fill_random_f32(float *p, size_t n, unsigned seed, float scale, cudaStream_t s)
{
    fill_kernel<float><<<1024, 256, 0, s>>>(p, n, seed, scale);
    return cudaGetLastError();
}

} // namespace ssimb
