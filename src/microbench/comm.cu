/*
 * NCCL collectives across the GPUs of this node, driven by one process (ncclCommInitAll over
 * devices 0..n-1), measured with nccl-tests' definitions (see collective.c): `bytes` in the row
 * is nccl-tests' size, algbw = size / time and busbw = algbw x factor are printed as progress.
 *
 * One timed iteration: an event on every GPU's stream, the collective launched on every GPU inside
 * one ncclGroupStart/End, an event after it on every stream; the sample is the largest of the
 * per-GPU elapsed times, i.e. the time until the last GPU finished.  Sizes too small to give each
 * rank one element are skipped, as nccl-tests does; sizes that do not fit in memory are skipped
 * with a notice.  sendrecv is a ring: rank r sends `size` bytes to r+1 and receives from r-1.
 * broadcast and reduce use root 0.  The algo column records NCCL_ALGO when the environment fixes
 * one algorithm (e.g. NCCL_ALGO=Ring gives "ring"), and is empty when NCCL chooses.
 *
 * TODO(multi-node): an MPI bootstrap (rank 0 calls ncclGetUniqueId, MPI_Bcast, ncclCommInitRank
 * on each rank) would extend this to several nodes; it needs Open MPI at build time and is not
 * built yet.  Until then, ranks_per_node equals ranks.
 */
#include "src/microbench/cuda-common.cuh"

#include <nccl.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace
{

using namespace ssimb;

#define NCCL_OR(run, ret, call)                                                                    \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            ssim_bench_notice((run), "%s:%d: %s: %s", __FILE__, __LINE__, #call,                   \
                              ncclGetErrorString(r_));                                             \
            return ret;                                                                            \
        }                                                                                          \
    } while (0)

struct Comms {
    std::vector<ncclComm_t> c;
    ~Comms()
    {
        for (ncclComm_t x : c)
            if (x != nullptr)
                ncclCommDestroy(x);
    }
};

/* Per-GPU state for one measurement. */
struct Rank {
    Stream s;
    Event a, b;
    DeviceBuffer send, recv;
};

std::string fixed_algo()
{
    const char *env = getenv("NCCL_ALGO");
    if (env == nullptr || *env == '\0' || strpbrk(env, ",^") != nullptr)
        return "";
    std::string a(env);
    for (char &ch : a)
        ch = (char)tolower((unsigned char)ch);
    return a;
}

ncclResult_t launch(SsimBenchColl coll, const std::vector<std::unique_ptr<Rank>> &ranks,
                    const Comms &comms, size_t count, ncclDataType_t t)
{
    int n = (int)ranks.size();
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < n && r == ncclSuccess; i++) {
        const void *sb = ranks[i]->send.ptr;
        void *rb = ranks[i]->recv.ptr;
        cudaStream_t s = ranks[i]->s.s;
        ncclComm_t c = comms.c[i];
        switch (coll) {
        case SSIM_BENCH_COLL_ALLREDUCE:
            r = ncclAllReduce(sb, rb, count, t, ncclSum, c, s);
            break;
        case SSIM_BENCH_COLL_ALLGATHER:
            r = ncclAllGather(sb, rb, count, t, c, s);
            break;
        case SSIM_BENCH_COLL_REDUCESCATTER:
            r = ncclReduceScatter(sb, rb, count, t, ncclSum, c, s);
            break;
        case SSIM_BENCH_COLL_ALLTOALL:
            r = ncclAlltoAll(sb, rb, count, t, c, s);
            break;
        case SSIM_BENCH_COLL_BROADCAST:
            r = ncclBroadcast(sb, rb, count, t, 0, c, s);
            break;
        case SSIM_BENCH_COLL_REDUCE:
            r = ncclReduce(sb, rb, count, t, ncclSum, 0, c, s);
            break;
        case SSIM_BENCH_COLL_SENDRECV:
            r = ncclSend(sb, count, t, (i + 1) % n, c, s);
            if (r == ncclSuccess)
                r = ncclRecv(rb, count, t, (i + n - 1) % n, c, s);
            break;
        case SSIM_BENCH_COLL_N:
            r = ncclInvalidArgument;
            break;
        }
    }
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

/* Returns false on a CUDA or NCCL error; true when measured or skipped. */
bool one_size(SsimBenchRun *run, const Comms &comms, SsimBenchColl coll, SsimBenchDtype dtype,
              uint64_t size, const std::string &algo)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    const unsigned n = (unsigned)comms.c.size();
    SsimBenchCollSizes sz;
    if (ssim_bench_coll_sizes(coll, size, n, ssim_bench_dtype_size(dtype), &sz) != 0)
        return true;
    std::vector<std::unique_ptr<Rank>> ranks;
    for (unsigned i = 0; i < n; i++) {
        CUDA_OR(run, false, cudaSetDevice((int)i));
        ranks.emplace_back(new Rank);
        Rank &r = *ranks.back();
        CUDA_OR(run, false, r.s.create());
        CUDA_OR(run, false, r.a.create());
        CUDA_OR(run, false, r.b.create());
        if (!r.send.alloc(sz.send_bytes) || !r.recv.alloc(sz.recv_bytes)) {
            ssim_bench_notice(run, "comm %s %llu B: does not fit in GPU memory, skipped",
                              ssim_bench_coll_name(coll), (unsigned long long)sz.size);
            return true;
        }
        CUDA_OR(run, false, cudaMemsetAsync(r.send.ptr, 0, sz.send_bytes, r.s.s));
    }
    const ncclDataType_t t = dtype == SSIM_BENCH_FP16 ? ncclFloat16 : ncclBfloat16;
    for (unsigned w = 0; w < plan->warmup; w++)
        NCCL_OR(run, false, launch(coll, ranks, comms, sz.count, t));
    for (unsigned i = 0; i < n; i++) {
        CUDA_OR(run, false, cudaSetDevice((int)i));
        CUDA_OR(run, false, cudaStreamSynchronize(ranks[i]->s.s));
    }
    std::vector<double> samples;
    double total_ms = 0.0;
    for (unsigned it = 0; it < plan->iters; it++) {
        for (unsigned i = 0; i < n; i++) {
            CUDA_OR(run, false, cudaSetDevice((int)i));
            CUDA_OR(run, false, cudaEventRecord(ranks[i]->a.e, ranks[i]->s.s));
        }
        NCCL_OR(run, false, launch(coll, ranks, comms, sz.count, t));
        float worst = 0.0f;
        for (unsigned i = 0; i < n; i++) {
            CUDA_OR(run, false, cudaSetDevice((int)i));
            CUDA_OR(run, false, cudaEventRecord(ranks[i]->b.e, ranks[i]->s.s));
        }
        for (unsigned i = 0; i < n; i++) {
            float ms = 0.0f;
            CUDA_OR(run, false, cudaEventSynchronize(ranks[i]->b.e));
            CUDA_OR(run, false, cudaEventElapsedTime(&ms, ranks[i]->a.e, ranks[i]->b.e));
            worst = std::max(worst, ms);
        }
        samples.push_back(1000.0 * (double)worst);
        total_ms += worst;
        if (samples.size() >= plan->min_iters && total_ms >= 1000.0 * plan->max_case_seconds)
            break;
    }
    SsimBenchRow row = {"comm",
                        ssim_bench_coll_name(coll),
                        ssim_bench_dtype_name(dtype),
                        0,
                        0,
                        0,
                        0,
                        sz.size,
                        n,
                        n,
                        algo.c_str()};
    ssim_bench_report(run, &row, samples.data(), (unsigned)samples.size());
    return true;
}

} // namespace

int ssim_bench_comm(SsimBenchRun *run)
{
    const SsimBenchPlan *plan = ssim_bench_run_plan(run);
    int count = 0;
    CUDA_OR(run, -1, cudaGetDeviceCount(&count));
    int n = plan->n_comm_gpus > 0 ? std::min(plan->n_comm_gpus, count) : count;
    if (n < 2) {
        ssim_bench_notice(run, "comm: skipped, collectives need two or more GPUs and %d %s visible",
                          n, n == 1 ? "is" : "are");
        return 0;
    }
    Comms comms;
    comms.c.assign((size_t)n, nullptr);
    std::vector<int> devs((size_t)n);
    for (int i = 0; i < n; i++)
        devs[(size_t)i] = i;
    NCCL_OR(run, -1, ncclCommInitAll(comms.c.data(), n, devs.data()));
    const std::string algo = fixed_algo();
    for (size_t d = 0; d < plan->n_dtypes; d++)
        for (size_t c = 0; c < plan->n_colls; c++)
            for (size_t i = 0; i < plan->n_comm_sizes; i++)
                if (!one_size(run, comms, plan->colls[c], plan->dtypes[d], plan->comm_sizes[i],
                              algo))
                    return -1;
    return 0;
}
