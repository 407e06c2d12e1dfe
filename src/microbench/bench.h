/*
 * The interface between shiftsim-bench's C driver (main.c, plain C with GLib) and its CUDA
 * measurement modules (gemm.cu, attention.cu, memops.cu, comm.cu, copy.cu).
 *
 * The header is plain C11 with no GLib so that nvcc compiles it as C++ unchanged.  The driver
 * derives every case to measure (shapes.c, sizes.c), fills one SsimBenchPlan, and calls the
 * modules in turn; a module measures its cases and hands each result back through
 * ssim_bench_report(), which computes the statistics (stats.c) and writes the profile and raw
 * rows (csvout.c).  Modules never print to stdout; notices go through ssim_bench_notice().
 *
 * Ownership: everything in a plan is owned by the driver and outlives the module calls.  Strings
 * in a row are borrowed for the duration of the ssim_bench_report() call.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One measured case, in the columns of the profile format (see docs/profiles.md). */
typedef struct {
    const char *kind;  /* gemm | attention | memory | comm | copy */
    const char *op;    /* free-text label or op name */
    const char *dtype; /* bf16, fp16, ...; NULL or "" for none */
    uint64_t m, n, k, batch;
    uint64_t bytes;
    unsigned ranks, ranks_per_node;
    const char *algo; /* NULL or "" for none */
} SsimBenchRow;

/* A GEMM C[m x n] = A[m x k] B[k x n], `batch` times (strided), row-major.  `layout` says how A
 * and B are stored: 'N' as in the product (A as [m x k], B as [k x n]), 'T' transposed (A as
 * [k x m], B as [n x k]); "NT" is PyTorch's Linear forward, X W^T with W stored [out, in]. */
typedef struct {
    char label[96];
    uint64_t m, n, k, batch;
    char layout[3];
} SsimBenchGemmShape;

/* One attention problem: `batch` sequences of `seq` tokens, `heads` heads of `head_dim`. */
typedef struct {
    uint64_t seq, heads, head_dim, batch;
} SsimBenchAttention;

/* Memory-bound operations (memops.cu); one X-macro yields the enum and the names. */
#define SSIM_BENCH_MEMOP_LIST(X)                                                                   \
    X(LAYERNORM, "layernorm")                                                                      \
    X(GELU, "gelu")                                                                                \
    X(SOFTMAX, "softmax")                                                                          \
    X(ADD, "add")                                                                                  \
    X(ADAM, "adam")                                                                                \
    X(COPY, "copy")

typedef enum {
#define SSIM_X(e, s) SSIM_BENCH_MEMOP_##e,
    SSIM_BENCH_MEMOP_LIST(SSIM_X)
#undef SSIM_X
        SSIM_BENCH_MEMOP_N
} SsimBenchMemop;

/* A memory-bound case: `rows` x `cols` elements (rows = 1 for purely elementwise ops). */
typedef struct {
    SsimBenchMemop op;
    uint64_t rows, cols;
} SsimBenchMemCase;

/* Collectives (comm.cu, collective.c); one X-macro yields the enum and the names. */
#define SSIM_BENCH_COLL_LIST(X)                                                                    \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(ALLGATHER, "allgather")                                                                      \
    X(REDUCESCATTER, "reducescatter")                                                              \
    X(ALLTOALL, "alltoall")                                                                        \
    X(BROADCAST, "broadcast")                                                                      \
    X(REDUCE, "reduce")                                                                            \
    X(SENDRECV, "sendrecv")

typedef enum {
#define SSIM_X(e, s) SSIM_BENCH_COLL_##e,
    SSIM_BENCH_COLL_LIST(SSIM_X)
#undef SSIM_X
        SSIM_BENCH_COLL_N
} SsimBenchColl;

/* Element types the modules support. */
typedef enum { SSIM_BENCH_BF16, SSIM_BENCH_FP16, SSIM_BENCH_DTYPE_N } SsimBenchDtype;

/* Everything a measurement run needs; filled by main.c. */
typedef struct {
    int device;              /* the GPU for compute, memory and d2d cases */
    unsigned iters;          /* timed iterations per case (upper bound, see max_case_seconds) */
    unsigned warmup;         /* untimed iterations before the timed ones */
    double max_case_seconds; /* stop sampling a case after this much timed GPU time ... */
    unsigned min_iters;      /* ... once it has at least this many samples */
    int flush_l2;            /* flush L2 between timed GEMM and attention iterations */
    int gemm_lt;             /* GEMMs through cuBLASLt (its heuristic's first algorithm); 0:
                                cuBLAS's default (cublasGemmEx), what PyTorch's matmul calls */
    const SsimBenchDtype *dtypes;
    size_t n_dtypes;
    const SsimBenchGemmShape *gemms;
    size_t n_gemms;
    const SsimBenchAttention *attentions;
    size_t n_attentions;
    const SsimBenchMemCase *memcases;
    size_t n_memcases;
    const SsimBenchColl *colls;
    size_t n_colls;
    const uint64_t *comm_sizes; /* nccl-tests "size" in bytes, ascending */
    size_t n_comm_sizes;
    const uint64_t *copy_sizes; /* buffer sizes in bytes, ascending */
    size_t n_copy_sizes;
    int n_comm_gpus; /* GPUs for collectives: 0 = all visible */
} SsimBenchPlan;

typedef struct SsimBenchRun SsimBenchRun; /* the driver's output state, opaque to modules */

const SsimBenchPlan *ssim_bench_run_plan(const SsimBenchRun *run);
/* Records one case: `samples_us` are the `n` timed iterations in microseconds (n >= 1). */
void ssim_bench_report(SsimBenchRun *run, const SsimBenchRow *row, const double *samples_us,
                       unsigned n);
/* A one-line notice on stderr ("shiftsim-bench: ...").  Not written to the profile: its
 * metadata block is closed by the time cases run. */
void ssim_bench_notice(SsimBenchRun *run, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

const char *ssim_bench_dtype_name(SsimBenchDtype dtype);
unsigned ssim_bench_dtype_size(SsimBenchDtype dtype);
const char *ssim_bench_memop_name(SsimBenchMemop op);
const char *ssim_bench_coll_name(SsimBenchColl coll);

/*
 * nccl-tests' bookkeeping (collective.c).  For a requested "size" (bytes per rank, as defined in
 * the profile format) and `ranks` ranks of `elem`-byte elements: `count` is the element count
 * passed to NCCL (per peer for alltoall, per rank's share for allgather and reducescatter),
 * `size` the size actually measured (the request rounded down to a whole number of elements per
 * rank), and the bytes of each rank's send and receive buffers.  Returns -1 when the size is too
 * small to give every rank one element.
 */
typedef struct {
    uint64_t count, size, send_bytes, recv_bytes;
} SsimBenchCollSizes;

int ssim_bench_coll_sizes(SsimBenchColl coll, uint64_t size, unsigned ranks, unsigned elem,
                          SsimBenchCollSizes *out);
/* busbw / algbw: 2(n-1)/n for allreduce; (n-1)/n for allgather, reducescatter, alltoall; 1 for
 * broadcast, reduce and sendrecv. */
double ssim_bench_busbw_factor(SsimBenchColl coll, unsigned ranks);
/* Bytes per second; 0 when `seconds` is not positive. */
double ssim_bench_algbw(uint64_t size, double seconds);
double ssim_bench_busbw(SsimBenchColl coll, unsigned ranks, uint64_t size, double seconds);

/* ---- CUDA side (implemented in the .cu files; only linked into shiftsim-bench) ---- */

/* What the metadata lines record about the machine. */
typedef struct {
    char gpu[256];
    int sm_count;
    int clock_mhz;     /* peak SM clock */
    int mem_clock_mhz; /* peak memory clock */
    int l2_bytes;
    uint64_t hbm_bytes;
    int cc_major, cc_minor;
    int cuda_runtime;   /* cudaRuntimeGetVersion(), e.g. 13000 */
    int cuda_driver;    /* cudaDriverGetVersion(), e.g. 13000 */
    int cublas_version; /* cublasLtGetVersion() */
    int nccl_version;   /* ncclGetVersion() */
    int visible_gpus;
} SsimBenchDeviceInfo;

/* Number of visible CUDA devices; 0 with `why` filled when there is none or no driver. */
int ssim_bench_device_count(char *why, size_t why_len);
/* Fills `info` for `device`; returns 0 on success, -1 with `why` filled. */
int ssim_bench_device_info(int device, SsimBenchDeviceInfo *info, char *why, size_t why_len);

/* Each returns 0 when it ran (cases that could not run are skipped with a notice), -1 when the
 * module failed as a whole (a notice says why). */
int ssim_bench_gemm(SsimBenchRun *run);
int ssim_bench_attention(SsimBenchRun *run);
int ssim_bench_memops(SsimBenchRun *run);
int ssim_bench_comm(SsimBenchRun *run);
int ssim_bench_copy(SsimBenchRun *run);

#ifdef __cplusplus
}
#endif
