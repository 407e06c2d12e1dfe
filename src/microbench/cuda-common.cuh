/*
 * Helpers shared by shiftsim-bench's CUDA modules: error checks that turn a failed CUDA call into
 * a notice, RAII owners for device and host memory, streams and events (so every early return
 * frees what it took), the L2 flush, pseudo-random initialisation, and the timing loop every
 * single-stream case goes through.
 *
 * The timing loop is the method docs/microbench.md describes: `warmup` untimed runs, then up to `iters`
 * timed runs, each bracketed by two events on the case's stream and synchronised, optionally
 * preceded (outside the events) by a write over twice the L2 so the run starts cold; it stops
 * early once it has `min_iters` samples and `max_case_seconds` of timed GPU time.
 */
#pragma once

#include "src/microbench/bench.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <vector>

/* Evaluates a cudaError_t expression; on failure reports it and returns `ret`. */
#define CUDA_OR(run, ret, call)                                                                    \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            ssim_bench_notice((run), "%s:%d: %s: %s", __FILE__, __LINE__, #call,                   \
                              cudaGetErrorString(e_));                                             \
            return ret;                                                                            \
        }                                                                                          \
    } while (0)

namespace ssimb
{

/* Device memory owned until destruction; alloc() returns false (error cleared) when it does not
 * fit, so a case can be skipped rather than the run stopped. */
struct DeviceBuffer {
    void *ptr = nullptr;
    size_t bytes = 0;
    int device = -1;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    ~DeviceBuffer()
    {
        release();
    }
    bool alloc(size_t n)
    {
        release();
        if (n == 0)
            n = 1;
        if (cudaMalloc(&ptr, n) != cudaSuccess) {
            (void)cudaGetLastError();
            ptr = nullptr;
            return false;
        }
        cudaGetDevice(&device);
        bytes = n;
        return true;
    }
    void release()
    {
        if (ptr != nullptr) {
            int cur = -1;
            cudaGetDevice(&cur);
            if (device >= 0 && device != cur)
                cudaSetDevice(device);
            cudaFree(ptr);
            if (device >= 0 && device != cur)
                cudaSetDevice(cur);
        }
        ptr = nullptr;
        bytes = 0;
    }
    template <typename T> T *as() const
    {
        return static_cast<T *>(ptr);
    }
};

/* Pinned host memory. */
struct HostBuffer {
    void *ptr = nullptr;
    HostBuffer() = default;
    HostBuffer(const HostBuffer &) = delete;
    HostBuffer &operator=(const HostBuffer &) = delete;
    ~HostBuffer()
    {
        if (ptr != nullptr)
            cudaFreeHost(ptr);
    }
    bool alloc(size_t n)
    {
        if (cudaMallocHost(&ptr, n == 0 ? 1 : n) != cudaSuccess) {
            (void)cudaGetLastError();
            ptr = nullptr;
            return false;
        }
        return true;
    }
};

struct Stream {
    cudaStream_t s = nullptr;
    Stream() = default;
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    ~Stream()
    {
        if (s != nullptr)
            cudaStreamDestroy(s);
    }
    cudaError_t create()
    {
        return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    }
};

struct Event {
    cudaEvent_t e = nullptr;
    Event() = default;
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
    ~Event()
    {
        if (e != nullptr)
            cudaEventDestroy(e);
    }
    cudaError_t create()
    {
        return cudaEventCreate(&e);
    }
};

/* Writes over a buffer of twice the L2 size, evicting whatever the previous run left there. */
struct L2Flush {
    DeviceBuffer buf;
    unsigned n = 0;
    bool init(int device)
    {
        int l2 = 0;
        if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess)
            l2 = 64 << 20;
        return buf.alloc(2 * (size_t)(l2 > 0 ? l2 : 64 << 20));
    }
    cudaError_t run(cudaStream_t s)
    {
        return cudaMemsetAsync(buf.ptr, (int)(++n & 0xff), buf.bytes, s);
    }
};

/* Fills `n` elements with pseudo-random values uniform in [-scale, scale] (a hash of the index
 * and `seed`, so runs are repeatable); real data, because zeros make tensor cores draw less
 * power and run faster than they will in training. */
template <typename T>
cudaError_t fill_random(T *p, size_t n, unsigned seed, float scale, cudaStream_t s);
cudaError_t fill_random_f32(float *p, size_t n, unsigned seed, float scale, cudaStream_t s);

/*
 * The timing loop.  `body()` enqueues one run on `s` and returns a cudaError_t; `flush`, when
 * not null, is run before each timed iteration outside the events.  Samples are appended to
 * `samples_us`.  Returns false (with a notice) on a CUDA error.
 */
template <typename Body>
bool time_case(SsimBenchRun *run, cudaStream_t s, L2Flush *flush, Body body,
               std::vector<double> &samples_us)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    Event a, b;
    CUDA_OR(run, false, a.create());
    CUDA_OR(run, false, b.create());
    for (unsigned i = 0; i < plan->warmup; i++)
        CUDA_OR(run, false, body());
    CUDA_OR(run, false, cudaStreamSynchronize(s));
    double total_ms = 0.0;
    samples_us.clear();
    for (unsigned i = 0; i < plan->iters; i++) {
        if (flush != nullptr)
            CUDA_OR(run, false, flush->run(s));
        CUDA_OR(run, false, cudaEventRecord(a.e, s));
        CUDA_OR(run, false, body());
        CUDA_OR(run, false, cudaEventRecord(b.e, s));
        CUDA_OR(run, false, cudaEventSynchronize(b.e));
        float ms = 0.0f;
        CUDA_OR(run, false, cudaEventElapsedTime(&ms, a.e, b.e));
        samples_us.push_back(1000.0 * (double)ms);
        total_ms += ms;
        if (samples_us.size() >= plan->min_iters && total_ms >= 1000.0 * plan->max_case_seconds)
            break;
    }
    return true;
}

} // namespace ssimb
