/*
 * Measured cost profiles: per-op timings taken on real GPUs (shiftsim-bench, nccl-tests, vTrain's
 * tables), and the lookup that turns them into op durations.
 *
 * A profile is a list of metadata key/values (gpu, driver, cuda, nccl, date, tool, ...) in the
 * order they were read, and a list of rows, one measured op each: kind (gemm, attention, memory,
 * comm, copy), op, dtype, shape (m, n, k, batch), bytes, ranks, ranks per node, algorithm and the
 * time statistics in microseconds.  Its text form is the `# shiftsim-profile v1` CSV documented
 * in docs/profiles.md, read with libcsv in strict mode; every error names
 * `file:line:column: field: what is wrong`.
 *
 * Lookup.  Every answer carries where it came from (SsimCostSource):
 *   - collectives, by layout (ranks, ranks per node, NICs per rank): piecewise linear in
 *     log(time) vs log(bytes) on a curve of the query's layout, preferring its dtype and
 *     algorithm; a measured size is EXACT; outside the measured range the curve is continued in
 *     log-log from its two end points with the slope clamped to [0, 1] (constant time below,
 *     constant bandwidth above at worst) and the answer is EXTRAPOLATED; an unmeasured rank count
 *     inside one node is interpolated in bus bandwidth (nccl-tests' busbw); a collective across
 *     nodes measured only at other layouts is SCALED: the nearest measured layout's curve times
 *     the network model's time at the query's layout over its time at the measured one, the
 *     model's NVLink and NIC levels calibrated from the profile (profile-comm.c);
 *   - GEMMs and attention: an exact shape is EXACT; otherwise the achieved FLOP/s of the nearest
 *     measured shape family (the shapes that differ from the nearest measured shape in one
 *     dimension only) is interpolated in log(FLOPs); outside the family's range it is carried by
 *     the size-dependent efficiency curve (achieved FLOP/s vs FLOPs over all rows of the dtype);
 *   - memory-bound ops and copies: achieved bandwidth vs bytes, interpolated per op, then over
 *     all ops of the kind;
 *   - nothing relevant measured: the analytical (roofline / alpha-beta) fallback, ANALYTICAL.
 *
 * Thread safety: lookups on a const profile may run concurrently (the lookup index is built once,
 * under a lock); adding rows or metadata must not race with anything.
 *
 * Ownership: ssim_profile_new() and ssim_profile_load*() return a profile the caller frees with
 * ssim_profile_free() (g_autoptr(SsimProfile) works).  Rows and metadata returned by getters are
 * borrowed and live until the profile is changed or freed.
 */
#pragma once

#include <shiftsim/analytic.h>
#include <shiftsim/graph.h>
#include <shiftsim/model.h>
#include <shiftsim/types.h>

G_BEGIN_DECLS

/* Row kinds, which are also the op classes counted by --explain-costs. */
#define SSIM_PROFILE_KIND_LIST(X)                                                                  \
    X(GEMM, "gemm")                                                                                \
    X(ATTENTION, "attention")                                                                      \
    X(MEMORY, "memory")                                                                            \
    X(COMM, "comm")                                                                                \
    X(COPY, "copy")

typedef enum {
#define SSIM_X(e, s) SSIM_PROFILE_##e,
    SSIM_PROFILE_KIND_LIST(SSIM_X)
#undef SSIM_X
        SSIM_PROFILE_KIND_N
} SsimProfileKind;

const char *ssim_profile_kind_name(SsimProfileKind kind);
gboolean ssim_profile_kind_from_name(const char *name, SsimProfileKind *out);

/* Communication ops of comm rows: the first six are SsimCollKind's, in its order. */
#define SSIM_PROFILE_COMM_LIST(X)                                                                  \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(ALLGATHER, "allgather")                                                                      \
    X(REDUCESCATTER, "reducescatter")                                                              \
    X(ALLTOALL, "alltoall")                                                                        \
    X(BROADCAST, "broadcast")                                                                      \
    X(REDUCE, "reduce")                                                                            \
    X(SENDRECV, "sendrecv")

typedef enum {
#define SSIM_X(e, s) SSIM_PCOMM_##e,
    SSIM_PROFILE_COMM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_PCOMM_N
} SsimProfileComm;

const char *ssim_profile_comm_name(SsimProfileComm op);
gboolean ssim_profile_comm_from_name(const char *name, SsimProfileComm *out);
SsimProfileComm ssim_profile_comm_from_coll(SsimCollKind kind);
/* nccl-tests' bus-bandwidth factor of `op` over `n` ranks: busbw = algbw * factor
 * (2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, else 1). */
double ssim_profile_bus_factor(SsimProfileComm op, guint n);

/* A dtype cell left empty (copies). */
#define SSIM_PROFILE_NO_DTYPE (-1)

/* The version written and its columns, in file order (v2 adds nics_per_rank to v1). */
#define SSIM_PROFILE_VERSION_LINE "# shiftsim-profile v2"
#define SSIM_PROFILE_HEADER                                                                        \
    "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,nics_per_rank,algo,time_us,median_us,"   \
    "min_us,stddev_us,samples"
#define SSIM_PROFILE_N_COLUMNS 17
/* Version 1, still read (its rows' nics_per_rank is 0: as on the simulated cluster). */
#define SSIM_PROFILE_VERSION_LINE_V1 "# shiftsim-profile v1"
#define SSIM_PROFILE_HEADER_V1                                                                     \
    "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,time_us,median_us,min_us,"          \
    "stddev_us,samples"
#define SSIM_PROFILE_N_COLUMNS_V1 16

/* One measured op.  Optional statistics are NAN (and samples 0) when the cell is empty. */
typedef struct {
    SsimProfileKind kind;
    const char *op; /* never NULL; "" only where allowed */
    int dtype;      /* SsimDtype, or SSIM_PROFILE_NO_DTYPE */
    guint64 m, n, k, batch;
    guint64 bytes;
    guint ranks, ranks_per_node;
    double nics_per_rank; /* comm: NICs each rank's inter-node traffic uses (NICs per node over
                             ranks per node, at most 1: NCCL drives a GPU through its nearest
                             NIC); 0 = not recorded, taken as the simulated cluster's */
    const char *algo;     /* "" when not fixed */
    double time_us;       /* mean, > 0 */
    double median_us, min_us, stddev_us;
    guint64 samples;
} SsimProfileRow;

/* A row of `kind` with every number zero, ranks 1, statistics empty, strings "". */
void ssim_profile_row_init(SsimProfileRow *row, SsimProfileKind kind);

typedef struct SsimProfile SsimProfile;

SsimProfile *ssim_profile_new(void);
void ssim_profile_free(SsimProfile *profile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimProfile, ssim_profile_free)

/*
 * Loads a profile file, or a directory: every regular *.csv in it (not recursing), in byte order
 * of their names, merged into one profile (metadata: the first file's value of a key wins; files
 * measured on different `gpu`s are refused).  NULL with `error` set (SSIM_CONFIG_ERROR) on
 * failure, the message starting `file:line:column: field: `.
 */
SsimProfile *ssim_profile_load(const char *path, GError **error);
/* Parses `text` (length -1: NUL-terminated); `path` names it in messages. */
SsimProfile *ssim_profile_load_data(const char *text, gssize length, const char *path,
                                    GError **error);
/* Appends `src`'s rows to `dst` and merges metadata as ssim_profile_load() does. */
gboolean ssim_profile_merge(SsimProfile *dst, const SsimProfile *src, GError **error);

/* The text form: version line, metadata, header, rows; load(write(p)) gives p back. */
GString *ssim_profile_write(const SsimProfile *profile);
/* Writes the text form to `path` atomically. */
gboolean ssim_profile_save(const SsimProfile *profile, const char *path, GError **error);

/*
 * Checks `row` (what the reader checks: shape present for compute kinds, known op for comm and
 * copy, ranks_per_node <= ranks, time > 0, ...) and appends a copy.  On failure `error` says
 * "field: what is wrong" and the profile is unchanged.
 */
gboolean ssim_profile_add_row(SsimProfile *profile, const SsimProfileRow *row, GError **error);
guint ssim_profile_n_rows(const SsimProfile *profile);
const SsimProfileRow *ssim_profile_row(const SsimProfile *profile, guint i);

/* Metadata, in insertion order; setting an existing key replaces its value in place.  Keys are
 * non-empty without '='; neither keys nor values hold line breaks (programmer errors). */
void ssim_profile_set_meta(SsimProfile *profile, const char *key, const char *value);
const char *ssim_profile_get_meta(const SsimProfile *profile, const char *key); /* or NULL */
guint ssim_profile_n_meta(const SsimProfile *profile);
const char *ssim_profile_meta_key(const SsimProfile *profile, guint i);
const char *ssim_profile_meta_value(const SsimProfile *profile, guint i);

/* A human summary: metadata, rows per kind, measured ranges per curve ("profile show"). */
GString *ssim_profile_summary(const SsimProfile *profile);

/* ---- Lookup ---------------------------------------------------------------------------- */

#define SSIM_COST_SOURCE_LIST(X)                                                                   \
    X(EXACT, "exact")                                                                              \
    X(INTERPOLATED, "interpolated")                                                                \
    X(EXTRAPOLATED, "extrapolated")                                                                \
    X(SCALED, "scaled")                                                                            \
    X(ANALYTICAL, "analytical")

/* Ordered from best to worst: combining two answers keeps the larger value. */
typedef enum {
#define SSIM_X(e, s) SSIM_COST_##e,
    SSIM_COST_SOURCE_LIST(SSIM_X)
#undef SSIM_X
        SSIM_COST_N
} SsimCostSource;

const char *ssim_cost_source_name(SsimCostSource source);

typedef struct {
    double time_us;        /* the estimate (0 when nothing could be said) */
    SsimTime time;         /* the same, rounded to the nanosecond */
    SsimCostSource source; /* where it came from */
} SsimCostEstimate;

/*
 * Each lookup fills `out` and returns TRUE, or returns FALSE (out->time 0, source ANALYTICAL)
 * when the profile has nothing relevant and `fallback` is NULL.  `fallback` is the analytical
 * model used when the profile has nothing relevant (borrowed; may be NULL).
 */

/* A collective of `bytes` (nccl-tests' size) over `ranks` ranks, `ranks_per_node` on a node.
 * dtype may be SSIM_PROFILE_NO_DTYPE (any) and algo NULL (the fastest measured).  `fallback`,
 * when given, is also the network model a curve of another layout is carried through, and its
 * nics_per_gpu the query's NICs per rank (0: as measured). */
gboolean ssim_profile_comm_time(const SsimProfile *profile, SsimProfileComm op, int dtype,
                                guint64 bytes, guint ranks, guint ranks_per_node, const char *algo,
                                const SsimAnalyticParams *fallback, SsimCostEstimate *out);

/* C[m x n] = A[m x k] B[k x n], `batch` times (2 m n k batch FLOPs).  When `fallback` has the
 * GEMM shape model (sm_count > 0), a shape not measured is the model's time at it times measured
 * / model at the nearest measured shape (fit the model's figures first:
 * ssim_profile_fit_gemm_model), and a profile without GEMMs of the dtype answers with the model. */
gboolean ssim_profile_gemm_time(const SsimProfile *profile, guint64 m, guint64 n, guint64 k,
                                guint64 batch, SsimDtype dtype, const SsimAnalyticParams *fallback,
                                SsimCostEstimate *out);

/* What ssim_profile_fit_gemm_model() fitted: rows used, the two figures, the fit's error. */
typedef struct {
    guint rows;
    double efficiency;       /* gemm_efficiency */
    double tile_overhead_us; /* gemm_tile_overhead */
    double rms_log_error;    /* root mean squared log(measured / model) over the rows */
} SsimGemmModelFit;

/*
 * Fits the GEMM shape model's free figures (gemm efficiency and per-tile overhead; the SMs,
 * tiles, peak, HBM and launch stay `start`'s) to the profile's measured GEMMs of `dtype`, by
 * least squares in log time: *fitted = start with those two replaced.  With one or two rows only
 * the efficiency is fitted.  FALSE (and *fitted = *start) when start has no shape model
 * (sm_count 0) or the profile has no GEMM of the dtype.  `fit` may be NULL.
 */
gboolean ssim_profile_fit_gemm_model(const SsimProfile *profile, SsimDtype dtype,
                                     const SsimAnalyticParams *start, SsimAnalyticParams *fitted,
                                     SsimGemmModelFit *fit);

/* A GEMM known only by its FLOPs (graphs that carry no shapes): the dtype's efficiency curve
 * (time vs FLOPs over every measured GEMM shape) at `flops`, interpolated in log-log inside the
 * measured range and carried by the fitted curve outside it. */
gboolean ssim_profile_flops_time(const SsimProfile *profile, double flops, SsimDtype dtype,
                                 const SsimAnalyticParams *fallback, SsimCostEstimate *out);

/* An attention row's pass (its op): "fwd" and "bwd" time the unfused core (scores, softmax,
 * context), "flash-fwd" and "flash-bwd" one fused flash-attention kernel (causal); FALSE for any
 * other text.  `backward` and `flash` may be NULL. */
gboolean ssim_profile_attention_pass(const char *op, gboolean *backward, gboolean *flash);

/* The bytes a causal flash-attention kernel of this shape moves (model.h's ssim_flash_bytes(),
 * with as many key and value heads as query heads). */
guint64 ssim_profile_flash_bytes(gboolean backward, guint64 seq, guint64 heads, guint64 head_dim,
                                 guint64 batch, SsimDtype dtype);

/* A causal flash-attention kernel (the "flash-fwd" or "flash-bwd" rows) over seq x seq for
 * `heads` heads of `head_dim`, `batch` sequences, moving `bytes`; without such rows, FALSE, or
 * with `fallback` the analytical model's flash kernel (analytic.h, "Flash attention"). */
gboolean ssim_profile_flash_time(const SsimProfile *profile, gboolean backward, guint64 seq,
                                 guint64 heads, guint64 head_dim, guint64 batch, guint64 bytes,
                                 SsimDtype dtype, const SsimAnalyticParams *fallback,
                                 SsimCostEstimate *out);

/* Attention core (scores, softmax, context) over seq x seq for `heads` heads of `head_dim`,
 * `batch` sequences; backward when `backward`.  FLOPs 4 b s^2 h d forward, twice that back. */
gboolean ssim_profile_attention_time(const SsimProfile *profile, gboolean backward, guint64 seq,
                                     guint64 heads, guint64 head_dim, guint64 batch,
                                     SsimDtype dtype, const SsimAnalyticParams *fallback,
                                     SsimCostEstimate *out);

/* A memory-bound kernel `op` (layernorm, gelu, ...) moving `bytes` (read + written). */
gboolean ssim_profile_memory_time(const SsimProfile *profile, const char *op, int dtype,
                                  guint64 bytes, const SsimAnalyticParams *fallback,
                                  SsimCostEstimate *out);

/* A copy `op` (d2d, p2p, h2d, d2h) of `bytes`. */
gboolean ssim_profile_copy_time(const SsimProfile *profile, const char *op, guint64 bytes,
                                const SsimAnalyticParams *fallback, SsimCostEstimate *out);

/*
 * The time `by` gives the op a measured row describes (its kind, op, dtype, shape or bytes, and
 * for a collective its layout and algorithm), through the lookup above of its kind, `fallback`
 * answering what `by` lacks: what the simulator would charge for that op.  FALSE for an unknown
 * collective, or when `by` has nothing relevant and `fallback` is NULL.
 */
gboolean ssim_profile_row_time(const SsimProfile *by, const SsimProfileRow *row,
                               const SsimAnalyticParams *fallback, SsimCostEstimate *out);

/* ---- --explain-costs ------------------------------------------------------------------- */

/* How many ops of each class got their cost from each source. */
typedef struct {
    guint64 count[SSIM_PROFILE_KIND_N][SSIM_COST_N];
} SsimCostExplain;

void ssim_cost_explain_init(SsimCostExplain *explain);
void ssim_cost_explain_add(SsimCostExplain *explain, SsimProfileKind cls, SsimCostSource source);
void ssim_cost_explain_merge(SsimCostExplain *dst, const SsimCostExplain *src);
guint64 ssim_cost_explain_total(const SsimCostExplain *explain, SsimCostSource source);
/* A text table: a row per op class (and a total), a column per source. */
GString *ssim_cost_explain_table(const SsimCostExplain *explain);
/* The same as CSV: class,exact,interpolated,extrapolated,analytical,total. */
GString *ssim_cost_explain_csv(const SsimCostExplain *explain);

G_END_DECLS
