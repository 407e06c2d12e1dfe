/*
 * Row-wise kernels shared by attention.cu and memops.cu: softmax (optionally scaled and causally
 * masked) and its backward.  One thread block per row, fp32 arithmetic, values stored in T; rows
 * are read once into the block's reduction and again from L1/L2 for the output, so the bytes
 * that reach HBM are one read and one write per element.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>

namespace ssimb
{

constexpr int ROW_THREADS = 256;

__device__ inline float to_f(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}
__device__ inline float to_f(__half v)
{
    return __half2float(v);
}
template <typename T> __device__ inline T from_f(float v);
template <> __device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16(v);
}
template <> __device__ inline __half from_f<__half>(float v)
{
    return __float2half(v);
}

/* Block-wide sum or max of one float per thread (blockDim.x == ROW_THREADS). */
template <bool MAX> __device__ inline float block_reduce(float v)
{
    __shared__ float part[ROW_THREADS / 32];
    __shared__ float result;
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < ROW_THREADS / 32 ? part[lane] : (MAX ? -INFINITY : 0.0f);
        for (int o = 16; o > 0; o >>= 1) {
            float w = __shfl_xor_sync(0xffffffffu, v, o);
            v = MAX ? fmaxf(v, w) : v + w;
        }
        if (lane == 0)
            result = v;
    }
    __syncthreads();
    float r = result;
    __syncthreads(); /* `part` and `result` are reused by the next call */
    return r;
}

/*
 * y = softmax(scale * x) along rows of `cols`; with `causal`, row r of each `cols` x `cols` block
 * keeps columns 0..(r mod cols) only (the rest get probability 0).  In place is allowed.
 */
template <typename T>
__global__ void softmax_rows(const T *x, T *y, long long cols, float scale, bool causal)
{
    long long row = blockIdx.x;
    const T *xr = x + row * cols;
    T *yr = y + row * cols;
    long long last = causal ? row % cols : cols - 1;
    float m = -INFINITY;
    for (long long j = threadIdx.x; j <= last; j += blockDim.x)
        m = fmaxf(m, scale * to_f(xr[j]));
    m = block_reduce<true>(m);
    float sum = 0.0f;
    for (long long j = threadIdx.x; j <= last; j += blockDim.x)
        sum += __expf(scale * to_f(xr[j]) - m);
    sum = block_reduce<false>(sum);
    float inv = 1.0f / sum;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = from_f<T>(j <= last ? __expf(scale * to_f(xr[j]) - m) * inv : 0.0f);
}

/* dx = scale * p * (dy - sum_j(dy_j p_j)) along rows; dx may alias dy. */
template <typename T>
__global__ void softmax_backward_rows(const T *p, const T *dy, T *dx, long long cols, float scale)
{
    long long row = blockIdx.x;
    const T *pr = p + row * cols;
    const T *dyr = dy + row * cols;
    T *dxr = dx + row * cols;
    float dot = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dot += to_f(pr[j]) * to_f(dyr[j]);
    dot = block_reduce<false>(dot);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dxr[j] = from_f<T>(scale * to_f(pr[j]) * (to_f(dyr[j]) - dot));
}

} // namespace ssimb
