/*
 * Copies with cudaMemcpyAsync: device to device on --device, peer from GPU 0 to GPU 1 (peer
 * access enabled when the pair allows it, otherwise whatever path CUDA takes, staged through the
 * host), host to device and device to host from pinned memory.  Following the profile format, a
 * row's `bytes` counts what is read plus what is written, 2 x the buffer, for every kind; the
 * link bandwidth of a p2p, h2d or d2h copy is therefore bytes / 2 / time.  The time of a peer
 * copy is taken with events on GPU 0's stream, which issues it.
 */
#include "src/microbench/cuda-common.cuh"

#include <vector>

namespace
{

using namespace ssimb;

enum Kind { D2D, P2P, H2D, D2H };
const char *const kind_names[] = {"d2d", "p2p", "h2d", "d2h"};

bool one_size(SsimBenchRun *run, Kind kind, int dev, int peer, uint64_t size)
{
    CUDA_OR(run, false, cudaSetDevice(dev));
    Stream s;
    CUDA_OR(run, false, s.create());
    DeviceBuffer src, dst;
    HostBuffer host;
    bool fits;
    switch (kind) {
    case D2D:
        fits = src.alloc(size) && dst.alloc(size);
        break;
    case P2P:
        fits = src.alloc(size);
        if (fits) {
            CUDA_OR(run, false, cudaSetDevice(peer));
            fits = dst.alloc(size);
            CUDA_OR(run, false, cudaSetDevice(dev));
        }
        break;
    default:
        fits = src.alloc(size) && host.alloc(size);
        break;
    }
    if (!fits) {
        ssim_bench_notice(run, "copy %s %llu B: does not fit in memory, skipped", kind_names[kind],
                          (unsigned long long)size);
        return true;
    }
    CUDA_OR(run, false, cudaMemsetAsync(src.ptr, 1, size, s.s));
    auto body = [&]() -> cudaError_t {
        switch (kind) {
        case D2D:
            return cudaMemcpyAsync(dst.ptr, src.ptr, size, cudaMemcpyDeviceToDevice, s.s);
        case P2P:
            return cudaMemcpyPeerAsync(dst.ptr, peer, src.ptr, dev, size, s.s);
        case H2D:
            return cudaMemcpyAsync(src.ptr, host.ptr, size, cudaMemcpyHostToDevice, s.s);
        case D2H:
            return cudaMemcpyAsync(host.ptr, src.ptr, size, cudaMemcpyDeviceToHost, s.s);
        }
        return cudaErrorInvalidValue;
    };
    std::vector<double> samples;
    if (!time_case(run, s.s, nullptr, body, samples))
        return false;
    unsigned ranks = kind == P2P ? 2 : 1;
    SsimBenchRow row = {"copy", kind_names[kind], "", 0, 0, 0, 0, 2 * size, ranks, ranks, ""};
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    return true;
}

} // namespace

int ssim_bench_copy(SsimBenchRun *run)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    int count = 0;
    CUDA_OR(run, -1, cudaGetDeviceCount(&count));
    bool p2p = count >= 2;
    if (p2p) {
        int can = 0;
        CUDA_OR(run, -1, cudaDeviceCanAccessPeer(&can, 0, 1));
        if (can) {
            CUDA_OR(run, -1, cudaSetDevice(0));
            cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
                ssim_bench_notice(run, "copy: cudaDeviceEnablePeerAccess(1): %s",
                                  cudaGetErrorString(e));
                return -1;
            }
            (void)cudaGetLastError();
        } else {
            ssim_bench_notice(run, "copy p2p: GPUs 0 and 1 have no peer access; timing the "
                                   "staged copy CUDA falls back to");
        }
    } else {
        ssim_bench_notice(run, "copy p2p: skipped, one GPU visible");
    }
    for (int kind = D2D; kind <= D2H; kind++) {
        if (kind == P2P && !p2p)
            continue;
        for (size_t i = 0; i < plan->n_copy_sizes; i++) {
            int dev = kind == P2P ? 0 : plan->device;
            if (!one_size(run, (Kind)kind, dev, 1, plan->copy_sizes[i]))
                return -1;
        }
    }
    return 0;
}
