/*
 * Names of the bench's dtypes, memory ops and collectives, and nccl-tests' bookkeeping for
 * collectives: which element count a given "size" means for each collective, how many bytes each
 * rank sends and receives, and the bus-bandwidth factor.
 *
 * The definitions follow nccl-tests (doc/PERFORMANCE.md): algbw = size / time, where size is the
 * per-rank buffer (the full vector for allreduce, broadcast and reduce, the output of allgather,
 * the input of reducescatter, the whole send buffer of alltoall, the message of sendrecv), and
 * busbw = algbw * factor, the factor making busbw comparable with the hardware's link bandwidth
 * whatever the rank count: 2(n-1)/n for allreduce, (n-1)/n for allgather, reducescatter and
 * alltoall, 1 for broadcast, reduce and sendrecv.
 */
#include "src/microbench/bench.h"
#include "src/microbench/collective.h"

#include <glib.h>

static const char *const dtype_names[] = {"bf16", "fp16"};
static const unsigned dtype_sizes[] = {2, 2};
static const char *const memop_names[] = {
#define SSIM_X(e, s) [SSIM_BENCH_MEMOP_##e] = s,
    SSIM_BENCH_MEMOP_LIST(SSIM_X)
#undef SSIM_X
};
static const char *const coll_names[] = {
#define SSIM_X(e, s) [SSIM_BENCH_COLL_##e] = s,
    SSIM_BENCH_COLL_LIST(SSIM_X)
#undef SSIM_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(dtype_names) == SSIM_BENCH_DTYPE_N);
G_STATIC_ASSERT(G_N_ELEMENTS(dtype_sizes) == SSIM_BENCH_DTYPE_N);

const char *ssim_bench_dtype_name(SsimBenchDtype dtype)
{
    return (unsigned)dtype < SSIM_BENCH_DTYPE_N ? dtype_names[dtype] : "?";
}

unsigned ssim_bench_dtype_size(SsimBenchDtype dtype)
{
    return (unsigned)dtype < SSIM_BENCH_DTYPE_N ? dtype_sizes[dtype] : 0;
}

const char *ssim_bench_memop_name(SsimBenchMemop op)
{
    return (unsigned)op < SSIM_BENCH_MEMOP_N ? memop_names[op] : "?";
}

const char *ssim_bench_coll_name(SsimBenchColl coll)
{
    return (unsigned)coll < SSIM_BENCH_COLL_N ? coll_names[coll] : "?";
}

static gboolean lookup(const char *const *names, guint n, const char *name, guint *out)
{
    for (guint i = 0; i < n; i++) {
        if (g_ascii_strcasecmp(names[i], name) == 0) {
            *out = i;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean ssim_bench_dtype_from_name(const char *name, SsimBenchDtype *out)
{
    guint i;
    if (name == NULL || !lookup(dtype_names, SSIM_BENCH_DTYPE_N, name, &i))
        return FALSE;
    *out = (SsimBenchDtype)i;
    return TRUE;
}

gboolean ssim_bench_coll_from_name(const char *name, SsimBenchColl *out)
{
    guint i;
    if (name == NULL || !lookup(coll_names, SSIM_BENCH_COLL_N, name, &i))
        return FALSE;
    *out = (SsimBenchColl)i;
    return TRUE;
}

double ssim_bench_busbw_factor(SsimBenchColl coll, unsigned ranks)
{
    g_return_val_if_fail(ranks >= 1, 0.0);
    double n = ranks;
    switch (coll) {
    case SSIM_BENCH_COLL_ALLREDUCE:
        return 2.0 * (n - 1.0) / n;
    case SSIM_BENCH_COLL_ALLGATHER:
    case SSIM_BENCH_COLL_REDUCESCATTER:
    case SSIM_BENCH_COLL_ALLTOALL:
        return (n - 1.0) / n;
    case SSIM_BENCH_COLL_BROADCAST:
    case SSIM_BENCH_COLL_REDUCE:
    case SSIM_BENCH_COLL_SENDRECV:
        return 1.0;
    case SSIM_BENCH_COLL_N:
        break;
    }
    g_return_val_if_reached(0.0);
}

double ssim_bench_algbw(uint64_t size, double seconds)
{
    return seconds > 0.0 ? (double)size / seconds : 0.0;
}

double ssim_bench_busbw(SsimBenchColl coll, unsigned ranks, uint64_t size, double seconds)
{
    return ssim_bench_algbw(size, seconds) * ssim_bench_busbw_factor(coll, ranks);
}

int ssim_bench_coll_sizes(SsimBenchColl coll, uint64_t size, unsigned ranks, unsigned elem,
                          SsimBenchCollSizes *out)
{
    g_return_val_if_fail(out != NULL && ranks >= 1 && elem >= 1, -1);
    SsimBenchCollSizes s = {0};
    switch (coll) {
    case SSIM_BENCH_COLL_ALLREDUCE:
    case SSIM_BENCH_COLL_BROADCAST:
    case SSIM_BENCH_COLL_REDUCE:
    case SSIM_BENCH_COLL_SENDRECV:
        /* One buffer of `count` elements, sent and received whole. */
        s.count = size / elem;
        s.size = s.count * elem;
        s.send_bytes = s.recv_bytes = s.size;
        break;
    case SSIM_BENCH_COLL_ALLGATHER:
        /* `count` elements in from each rank, ranks x count out. */
        s.count = size / ((uint64_t)elem * ranks);
        s.size = s.count * elem * ranks;
        s.send_bytes = s.count * elem;
        s.recv_bytes = s.size;
        break;
    case SSIM_BENCH_COLL_REDUCESCATTER:
        /* ranks x count in, `count` out. */
        s.count = size / ((uint64_t)elem * ranks);
        s.size = s.count * elem * ranks;
        s.send_bytes = s.size;
        s.recv_bytes = s.count * elem;
        break;
    case SSIM_BENCH_COLL_ALLTOALL:
        /* `count` elements to and from each peer. */
        s.count = size / ((uint64_t)elem * ranks);
        s.size = s.count * elem * ranks;
        s.send_bytes = s.recv_bytes = s.size;
        break;
    case SSIM_BENCH_COLL_N:
        g_return_val_if_reached(-1);
    }
    *out = s;
    return s.count > 0 ? 0 : -1;
}
