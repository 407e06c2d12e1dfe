/*
 * A sweep: every legal way to run one model on N GPUs, simulated and ranked.
 *
 * The space is the Cartesian product of lists (tensor-parallel sizes, pipeline stages, virtual
 * stages, microbatch sizes, schedules, recompute modes, ZeRO stages, placements); dp is whatever
 * the GPUs leave, dp = N / (tp pp), and a (tp, pp) pair whose product does not divide N is not a
 * split of N and is left out of the space (counted in `skipped_pairs`).  Every other combination
 * is one configuration, numbered 0, 1, 2, ... in a fixed nested order: tp (outermost), pp, v,
 * microbatch, schedule, recompute, zero, placement (innermost), each list in the order given, so
 * the placements of one configuration sit on adjacent rows.  The number is the row's identity
 * everywhere: in the result array, in the CSV, across threads, shards and MPI ranks.
 *
 * Each configuration ends in one status: illegal (ssim_parallel_validate(), the schedule
 * or the placement registry refuses it; the reason is the rule's name, the text before the
 * first ": " of the message, e.g. "heads % tp != 0", "schedule" or "placement"; "duplicate" marks
 * interleaved with v = 1 when 1f1b is swept too, the same schedule), memory (even the last
 * recompute mode tried does not fit), limit (a limit of include/shiftsim/budget.h refused it or
 * stopped its replay: reason "max_ops" or "global_batch" for the op and microbatch budgets checked
 * before lowering, "max_events" for the event budget; no figures), failed (the simulation itself
 * failed, e.g. a deadlock), pruned (with prune_top: not simulated, its lower bound being above
 * the K-th best step; reason "bound"), or ok with its figures.  A row is a plain value (inline
 * strings, no pointers), so rows are copied, sent over MPI as bytes and compared field by field.
 *
 * Determinism: a row depends only on its configuration, never on the thread or rank that ran it;
 * rows are written into a preallocated array at their number, and everything printed is derived
 * from that array in index order, so output bytes do not depend on -j, shards or ranks.  Ties in
 * the ranking (equal tokens/s) are broken by the lower configuration number.
 *
 * Thread safety: ssim_sweep_run() calls ssim_simulate() from several threads at once on separate
 * configurations; the model and cluster are shared read-only.
 *
 * Ownership: ssim_sweep_new() returns a sweep the caller frees with ssim_sweep_free() (g_autoptr
 * works); it copies the model and cluster pointers, which must outlive it.  Row pointers are
 * borrowed from the sweep.  Formatting functions return GStrings the caller frees.
 */
#pragma once

#include <shiftsim/plot.h>
#include <shiftsim/sim.h>

G_BEGIN_DECLS

#define SSIM_SWEEP_LIST_MAX   256 /* entries in a list of integers */
#define SSIM_SWEEP_NAMES_MAX  16  /* entries in a list of names */
#define SSIM_SWEEP_REASON_MAX 64
#define SSIM_SWEEP_DETAIL_MAX                                                                      \
    512 /* longer messages are cut (with "..."); a memory                                          \
           misfit's, with the options that would fit, runs to ~400 */

/* "auto" in the recompute list: the first of none, selective, full whose memory fits. */
#define SSIM_SWEEP_RECOMPUTE_AUTO 255u

typedef struct {
    guint n;
    guint v[SSIM_SWEEP_LIST_MAX];
} SsimSweepInts;

typedef struct {
    guint n;
    char v[SSIM_SWEEP_NAMES_MAX][SSIM_PARALLEL_NAME_MAX];
} SsimSweepNames;

typedef struct {
    guint n_gpus;      /* N: the cluster's node count is set to N / gpus_per_node */
    SsimParallel base; /* every field not swept: global batch, sp, zero, bucket, order, ... */
    SsimSweepInts tp, pp, vstages, microbatch;
    SsimSweepInts recompute; /* SsimRecompute values or SSIM_SWEEP_RECOMPUTE_AUTO */
    /* Schedule "native" is each placement's own; placement "native" each schedule's framework
     * (ssim_placement_kind_for_schedule).  A placement may carry extensions ("alpa+early-dp"). */
    SsimSweepNames schedules, placements;
    /* ZeRO stages (swept between recompute and placement; default: base.zero_stage alone). */
    SsimSweepInts zero;
    /* What every placement shares (place.h): extensions added (shifts), lhs, the gradients
     * commshift moves, auto's budget; the kind is each row's. */
    SsimPlacement placement;
    guint comm_repeat;     /* every communication runs this many times (0, 1: once) */
    gboolean bucket_given; /* base.dp_bucket_bytes was chosen: megatron rows keep it */
    gboolean exact;        /* simulate every GPU (SsimSimConfig.exact) */
    /* Limits of each configuration (SsimSimConfig.max_ops, .max_events; 0: the defaults). */
    guint64 max_ops, max_events;
    guint64 max_memory; /* SsimSimConfig.max_memory (0: the default) */
    /*
     * Pruning (0: off).  With K > 0 every legal configuration that fits gets the lower bound of
     * bound.h, and they are taken in order of bound (ties: lower number first); a configuration is
     * simulated only when its bound does not exceed the K-th best step among the configurations
     * before it in that order, else it and every later one end "pruned" (reason "bound").  Its
     * step is at least its bound, which is more than K steps already simulated, so the K best
     * configurations are exactly the unpruned sweep's.  The rows pruned depend on the spec alone:
     * results are committed in bound order, whatever the threads.  One process only (no shards,
     * no MPI: the threshold needs every configuration's result).
     */
    guint prune_top;
    /*
     * The steady-state replay (steady.h): simulate three short probes and extrapolate to the
     * configuration's microbatch count.  The step and throughput are exact where the probes are
     * affine; the best max(prune_top, 10) rows are simulated again in full at the end, so the
     * rows ranked first have every figure exact.
     */
    gboolean steady;
} SsimSweepSpec;

/*
 * Defaults for N GPUs of `cluster`: tp the powers of two up to the GPUs per node (up to N with
 * base.allow_cross_node_tp, which the caller may set afterwards and then call
 * ssim_sweep_spec_default_tp()), pp every divisor of N, v 1, microbatch 1 and 2, schedule native,
 * recompute auto, ZeRO 0, placement alpa (with its schedule alpa: the default of every verb),
 * global batch 2 N, communication once; no pruning, no steady-state replay.
 */
void ssim_sweep_spec_init(SsimSweepSpec *spec, const SsimCluster *cluster, guint n_gpus);
/* Resets spec->tp to the powers of two up to the GPUs per node, or up to N when
 * spec->base.allow_cross_node_tp is set. */
void ssim_sweep_spec_default_tp(SsimSweepSpec *spec, const SsimCluster *cluster);

/* Parses "1,2,4,8" (positive integers; duplicates dropped, order kept) into `list`.  FALSE with
 * SSIM_CONFIG_ERROR on an empty list, a bad number or too many entries. */
gboolean ssim_sweep_ints_parse(SsimSweepInts *list, const char *text, GError **error);
/* Parses "1f1b,interleaved" (non-empty names, shorter than SSIM_PARALLEL_NAME_MAX). */
gboolean ssim_sweep_names_parse(SsimSweepNames *list, const char *text, GError **error);
/* Parses "0,1" (ZeRO stages: 0 or 1) into spec->zero. */
gboolean ssim_sweep_zero_parse(SsimSweepInts *list, const char *text, GError **error);
/* Parses "auto" or "none,selective,full" into spec->recompute. */
gboolean ssim_sweep_recompute_parse(SsimSweepInts *list, const char *text, GError **error);
/* The list as text, "1,2,4" / "1f1b,interleaved" / "auto" (caller frees). */
char *ssim_sweep_ints_format(const SsimSweepInts *list);
char *ssim_sweep_names_format(const SsimSweepNames *list);
char *ssim_sweep_recompute_format(const SsimSweepInts *list);

typedef enum {
    SSIM_SWEEP_PENDING, /* not run (another shard's or rank's) */
    SSIM_SWEEP_OK,
    SSIM_SWEEP_ILLEGAL,
    SSIM_SWEEP_MEMORY,
    SSIM_SWEEP_FAILED,
    SSIM_SWEEP_LIMIT,  /* refused or stopped by a limit (budget.h): no figures */
    SSIM_SWEEP_PRUNED, /* not simulated: its lower bound exceeds the K-th best step (prune_top) */
    SSIM_SWEEP_STATUS_N
} SsimSweepStatus;

const char *ssim_sweep_status_name(SsimSweepStatus status); /* "pending", "ok", "illegal", ... */

typedef struct {
    guint index;
    SsimParallel par; /* as simulated (recompute: the mode chosen under auto) */
    gboolean auto_recompute;
    SsimSweepStatus status;
    /* "" when ok; the rule broken, "does not fit in HBM" (memory), "simulate" (failed) or the
     * limit hit ("max_ops", "global_batch", "max_events") */
    char reason[SSIM_SWEEP_REASON_MAX];
    char detail[SSIM_SWEEP_DETAIL_MAX]; /* the whole message ("" when ok) */
    gboolean has_memory;                /* result.memory is filled (split valid) */
    SsimResult result;                  /* figures when ok */
    SsimTime bound;  /* the step's lower bound (bound.h) when pruning computed it, else 0 */
    gboolean steady; /* the figures were extrapolated from probes (steady.h) */
} SsimSweepRow;

typedef struct SsimSweep SsimSweep;

/*
 * Sets the cluster to N / gpus_per_node nodes (a private copy) and enumerates the space.  Fails
 * (SSIM_CONFIG_ERROR) when N is not a multiple of the GPUs per node or is over SSIM_MAX_GPUS, a
 * list is empty, or the space is empty or larger than G_MAXINT configurations.
 */
SsimSweep *ssim_sweep_new(const SsimModel *model, const SsimCluster *cluster,
                          const SsimSweepSpec *spec, GError **error);
void ssim_sweep_free(SsimSweep *sweep);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimSweep, ssim_sweep_free)

guint ssim_sweep_n_configs(const SsimSweep *sweep);
guint ssim_sweep_skipped_pairs(const SsimSweep *sweep); /* (tp, pp) with tp pp not dividing N */
const SsimSweepSpec *ssim_sweep_spec(const SsimSweep *sweep);
const SsimCluster *ssim_sweep_cluster(const SsimSweep *sweep); /* with N GPUs */
const SsimSweepRow *ssim_sweep_row(const SsimSweep *sweep, guint index);
/* Replaces row `row->index` (MPI gathering); the index must be in range. */
void ssim_sweep_set_row(SsimSweep *sweep, const SsimSweepRow *row);

/*
 * Where a run stands: `done` of `total` configurations evaluated; `work_done` of `work_total`
 * estimated ops (ssim_budget_estimate) simulated.  A configuration weighs its estimated ops
 * until it is rejected (illegal, memory, limit) or pruned, when it leaves the total: it took
 * microseconds where a simulation takes seconds, so an ETA from the work is honest where one
 * from the count was not.
 */
typedef struct {
    guint done, total;
    double work_done, work_total;
    double elapsed_s;
} SsimSweepProgress;

/* Called on the thread that called ssim_sweep_run(), about every interval, and once at the end
 * with done == total. */
typedef void (*SsimSweepProgressFn)(const SsimSweepProgress *progress, gpointer user);

/*
 * Evaluates configurations first, first + stride, first + 2 stride, ... (shard i of n: first i,
 * stride n; MPI composes both) on `n_threads` threads (0 = g_get_num_processors()).  Rows of other
 * configurations stay PENDING.  `progress` may be NULL.  Returns the number evaluated.
 */
guint ssim_sweep_run(SsimSweep *sweep, guint first, guint stride, guint n_threads,
                     SsimSweepProgressFn progress, gpointer user, guint interval_ms);

/* Evaluates one configuration into `row` (what each worker does). */
void ssim_sweep_eval(const SsimSweep *sweep, guint index, SsimSweepRow *row);

/* The CSV: two "# " metadata lines (format and the spec; identical in every shard), the header,
 * then one line per non-pending row in index order. */
GString *ssim_sweep_csv(const SsimSweep *sweep);
/* The top `k` ok rows by tokens/s (ties: lower index first) as a table, then the counts of each
 * status and reason. */
GString *ssim_sweep_summary(const SsimSweep *sweep, guint k);
/* Indices of the ok rows, best first (caller frees the array). */
GArray *ssim_sweep_ranking(const SsimSweep *sweep);

/*
 * Writes PREFIX-throughput.{dat,gp,png} (best tokens/s of each dp x tp x pp split, one bar per
 * placement, clustered) and PREFIX-heatmap.{dat,gp,png} (tp x pp grid of the best tokens/s, one
 * panel per placement); renders them when gnuplot exists (`status` says whether it did).
 */
gboolean ssim_sweep_plot(const SsimSweep *sweep, const char *prefix, SsimPlotStatus *status,
                         GError **error);

/*
 * Merges shard CSVs: checks that every file's metadata and header lines equal the first file's,
 * that no configuration appears twice, and (unless `partial`) that every configuration the
 * metadata counts is present; returns the CSV a single process would have written.
 */
GString *ssim_sweep_merge(const char *const *paths, guint n_paths, gboolean partial,
                          GError **error);
/*
 * A sweep CSV (ssim_sweep_csv's or a merge's text) as one JSON object, the shape `sweep -f json`
 * and `merge -f json` print (docs/sweep.md): {"format": "shiftsim-sweep v1", "spec": the second
 * metadata line without its "# ", "rows": [one object per row, the header's names as members: a
 * number where the field is one, null where it is empty, else a string]}.  NULL with
 * "path:line:column: ..." when a row does not split or has the wrong number of fields.
 */
GString *ssim_sweep_csv_json(const char *csv, gsize len, const char *path, GError **error);

/* MPI (src/app/sweep-mpi.c; stubs when built without -Dmpi=enabled). */
gboolean ssim_sweep_mpi_available(void); /* built with MPI */
gboolean ssim_sweep_mpi_launched(void);  /* started by mpirun/srun (environment says so) */
/* MPI_Init, rank and size; FALSE with `error` when MPI is unavailable or fails. */
gboolean ssim_sweep_mpi_init(int *argc, char ***argv, guint *rank, guint *size, GError **error);
/* Sends every evaluated row of this rank to rank 0, which stores them into its sweep. */
gboolean ssim_sweep_mpi_gather(SsimSweep *sweep, GError **error);
void ssim_sweep_mpi_finalize(void);

G_END_DECLS
