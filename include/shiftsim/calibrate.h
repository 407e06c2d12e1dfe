/*
 * Measured training runs, and what shiftsim does with them: validation (simulate every run and
 * report the error of each, MAPE, median and max error, Kendall's tau of the ranking) and
 * calibration (fit the cost model's free parameters to the runs with GSL, with k-fold
 * cross-validated error).
 *
 * A runs file (`# shiftsim-runs v1`, README "Validation and calibration") is a CSV with one
 * measured run a row: the configuration (model by name or by shape, cluster, nodes, dp, tp, pp,
 * virtual stages, microbatch, global batch, schedule, recompute, sequence parallelism), the
 * measurement (iteration time in ms, or achieved hardware TFLOP/s per GPU as Megatron-LM reports
 * it) and the source of the row.  It is read with libcsv in strict mode and every error reads
 * `file:line:column: field: what is wrong`.
 *
 * A measurement given as TFLOP/s is turned into an iteration time with the model's hardware
 * FLOPs (ssim_model_hardware_flops, i.e. the recompute-inclusive count Megatron-LM divides by),
 * so every comparison is of iteration times: error = (predicted - measured) / measured.
 *
 * Ownership: ssim_runs_load*() and ssim_runs_from_vtrain*() return runs the caller frees with
 * ssim_runs_free(); rows returned by ssim_runs_get() are borrowed.  An SsimRunSet borrows
 * nothing (it holds its own models and clusters).
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/parallel.h>
#include <shiftsim/report.h>

G_BEGIN_DECLS

#define SSIM_RUNS_VERSION_LINE "# shiftsim-runs v1"
#define SSIM_RUNS_HEADER                                                                           \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,iteration_ms,tflops_per_gpu,source"
#define SSIM_RUNS_N_COLUMNS 22
#define SSIM_RUN_TEXT_MAX   128

/* One measured run.  Plain value (inline strings) so it copies by assignment. */
typedef struct {
    char model[SSIM_RUN_TEXT_MAX]; /* a model name/path, or a label when the shape is given */
    gboolean has_shape;            /* the shape columns are filled: a GPT of that shape */
    guint layers, hidden, heads, ffn, vocab, seq_len;
    SsimDtype dtype;
    char cluster[SSIM_RUN_TEXT_MAX]; /* cluster name or path */
    guint nodes;
    SsimParallel par;
    double iteration_ms;   /* measured; 0 when the row gives tflops_per_gpu only */
    double tflops_per_gpu; /* measured hardware TFLOP/s per GPU; 0 when not given */
    char source[2 * SSIM_RUN_TEXT_MAX];
    guint line; /* line in its file */
} SsimMeasuredRun;

typedef struct SsimRuns SsimRuns;

SsimRuns *ssim_runs_new(const char *path);
void ssim_runs_free(SsimRuns *runs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimRuns, ssim_runs_free)

/* Reads a runs file.  NULL with `error` set (SSIM_CONFIG_ERROR, "file:line:column: field: ...")
 * on the first malformed row. */
SsimRuns *ssim_runs_load(const char *path, GError **error);
SsimRuns *ssim_runs_load_data(const char *text, gssize length, const char *path, GError **error);
void ssim_runs_add(SsimRuns *runs, const SsimMeasuredRun *run);
guint ssim_runs_n(const SsimRuns *runs);
const SsimMeasuredRun *ssim_runs_get(const SsimRuns *runs, guint i);
const char *ssim_runs_path(const SsimRuns *runs);
/* `# key = value` metadata lines (kept in order; set replaces). */
void ssim_runs_set_meta(SsimRuns *runs, const char *key, const char *value);
const char *ssim_runs_get_meta(const SsimRuns *runs, const char *key);
/* The text form: version line, metadata, header, rows; load(write(r)) gives r back. */
GString *ssim_runs_write(const SsimRuns *runs);
/* A run with the defaults of an empty cell: dtype bf16, nodes 1, ssim_parallel_init(). */
void ssim_measured_run_init(SsimMeasuredRun *run);

/*
 * Converts vTrain's ground_truth_single.csv (columns: GPUs, global batch, micro batch, hidden
 * size, attention heads, layers, sequence length, tp, dp, pp, iteration time ms) to runs: GPT
 * shape with vocab 51200, fp16, `cluster` on one node, 1F1B, full recompute (vTrain's
 * activation checkpointing), source "vTrain measured data (Bang et al., MICRO 2024)".
 */
SsimRuns *ssim_runs_from_vtrain(const char *path, const char *cluster, GError **error);
SsimRuns *ssim_runs_from_vtrain_data(const char *text, gssize length, const char *path,
                                     const char *cluster, GError **error);

/* ---- simulating runs ------------------------------------------------------------------- */

/* A runs table made ready to simulate: each row's model and cluster loaded once. */
typedef struct SsimRunSet SsimRunSet;

/* Loads every row's model and cluster (`cluster_override`, when not NULL, replaces each row's
 * cluster, keeping its node count).  Errors name the row: "file:line: model: ...". */
SsimRunSet *ssim_run_set_new(const SsimRuns *runs, const char *cluster_override, GError **error);
void ssim_run_set_free(SsimRunSet *set);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimRunSet, ssim_run_set_free)
/* The limits every simulation of the set runs under (SsimSimConfig.max_ops and .max_events;
 * 0, the default, for each: SSIM_MAX_OPS_DEFAULT and no event budget). */
void ssim_run_set_set_limits(SsimRunSet *set, guint64 max_ops, guint64 max_events);
guint ssim_run_set_n(const SsimRunSet *set);
const SsimMeasuredRun *ssim_run_set_run(const SsimRunSet *set, guint i);
const SsimCluster *ssim_run_set_cluster(const SsimRunSet *set, guint i);
const SsimModel *ssim_run_set_model(const SsimRunSet *set, guint i);
/* The measured iteration time of row i in ms (from iteration_ms or tflops_per_gpu). */
double ssim_run_set_measured_ms(const SsimRunSet *set, guint i);
/* "model/GPUs": rows with the same key form one group for Kendall's tau. */
char *ssim_run_set_group_key(const SsimRunSet *set, guint i);
/* Group ids (0, 1, ... in order of first appearance) of rows idx[0..n) (all when idx is NULL);
 * caller frees. */
guint *ssim_run_set_groups(const SsimRunSet *set, const guint *idx, guint n);

/* Overrides applied to every cluster before simulating (see SSIM_CALIB_PARAM_LIST). */
typedef struct {
    guint64 mask; /* bit p set: value[p] replaces the cluster's figure */
    double value[16];
} SsimCalibValues;

/*
 * Simulates rows `idx[0..n)` (all rows when idx is NULL, n ignored) with `values` applied (may
 * be NULL), on `threads` threads, writing the predicted iteration time in ms to pred[j] (NAN
 * and a message in errors[j], when errors is not NULL, for a row that fails; the message starts
 * with SSIM_RUN_SET_LIMIT_PREFIX when a limit refused or stopped the row).  Deterministic:
 * each row's result does not depend on the thread count.  `errors` has holes (NULL for the rows
 * that succeeded), so it is freed with ssim_run_set_errors_free(), not g_strfreev().
 */
#define SSIM_RUN_SET_LIMIT_PREFIX "limit: "
void ssim_run_set_predict(const SsimRunSet *set, const guint *idx, guint n,
                          const SsimCalibValues *values, guint threads, double *pred,
                          char **errors);
/* Frees errors[0..n) and the array (NULL: nothing). */
void ssim_run_set_errors_free(char **errors, guint n);

/* ---- error statistics ------------------------------------------------------------------ */

typedef struct {
    guint n;       /* rows with a prediction */
    guint failed;  /* rows whose simulation failed (not in the figures) */
    double mape;   /* mean |pred - meas| / meas, as a fraction */
    double median; /* median of |error| */
    double max;    /* largest |error| */
    double bias;   /* mean signed error */
    double msle;   /* mean of (log pred - log meas)^2 */
    double tau;    /* Kendall's tau-a over pairs inside groups (NAN with no pair) */
    guint pairs;   /* pairs counted for tau */
} SsimErrorStats;

/*
 * Statistics of pred vs meas over n rows (a NAN prediction counts as failed).  `groups` (may be
 * NULL: no tau) gives each row's group id; tau = (concordant - discordant) / pairs over the pairs
 * of rows in the same group (a tie in either ranking is neither).
 */
void ssim_error_stats(const double *pred, const double *meas, const guint *groups, guint n,
                      SsimErrorStats *out);

/* The validation report: a table (row per run, then the summary), CSV (one row per run) or JSON
 * (rows and summary).  `errors` may be NULL. */
GString *ssim_validation_format(const SsimRunSet *set, const double *pred, char *const *errors,
                                const SsimErrorStats *stats, SsimFormat format);
/* The summary lines alone (n, MAPE, median, max, bias, tau). */
void ssim_error_stats_append(GString *out, const SsimErrorStats *stats, const char *indent);

/* Writes IMAGE.dat and IMAGE.gp (log-log predicted vs measured, y = x) and renders with gnuplot
 * when present; *rendered tells whether the image was written. */
gboolean ssim_validation_plot(const SsimRunSet *set, const double *pred, const char *image,
                              const char *title, gboolean *rendered, GError **error);

/* ---- calibration ----------------------------------------------------------------------- */

/* The free parameters: enum name, file key, lower and upper bound, log scale. */
#define SSIM_CALIB_PARAM_LIST(X)                                                                   \
    X(GEMM, "gemm", 0.2, 1.0, FALSE)                                                               \
    X(GEMM_HALF, "gemm_half_gflop", 0.001, 100.0, TRUE)                                            \
    X(MEMORY, "memory", 0.1, 1.0, FALSE)                                                           \
    X(NVLINK, "nvlink", 0.05, 1.0, FALSE)                                                          \
    X(NVLINK_LATENCY, "nvlink_latency_us", 0.0, 100.0, FALSE)                                      \
    X(IB, "ib", 0.05, 1.0, FALSE)                                                                  \
    X(IB_LATENCY, "ib_latency_us", 0.0, 200.0, FALSE)                                              \
    X(OVERLAP, "overlap_slowdown", 1.0, 3.0, FALSE)                                                \
    X(KERNEL_OVERHEAD, "kernel_overhead_us", 0.0, 200.0, FALSE)                                    \
    X(KERNEL_FLOOR, "kernel_floor_us", 0.0, 500.0, FALSE)

typedef enum {
#define SSIM_X(e, k, lo, hi, lg) SSIM_CALIB_##e,
    SSIM_CALIB_PARAM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_CALIB_N
} SsimCalibParam;

const char *ssim_calib_param_name(SsimCalibParam p);
/* Parses "gemm,memory,kernel_overhead_us" into a mask; FALSE with a message naming the bad one. */
gboolean ssim_calib_params_parse(const char *list, guint64 *mask, GError **error);
/* The default set: gemm, memory, nvlink, nvlink_latency_us, kernel_overhead_us, kernel_floor_us
 * (gemm_half_gflop, overlap_slowdown, ib and ib_latency_us on request). */
guint64 ssim_calib_params_default(void);
/* The figure of `cluster` for p, in the unit of its key (us for latencies, GFLOP for half). */
double ssim_calib_param_get(const SsimCluster *cluster, SsimCalibParam p);
void ssim_calib_param_set(SsimCluster *cluster, SsimCalibParam p, double value);
/* Applies every parameter of `values` present in its mask. */
void ssim_calib_values_apply(const SsimCalibValues *values, SsimCluster *cluster);

typedef struct {
    guint64 mask;     /* parameters to fit */
    guint max_iter;   /* Nelder-Mead iterations (default 200) */
    double tolerance; /* stop when the simplex size falls below this (default 1e-3) */
    guint threads;    /* 0: g_get_num_processors() */
    guint scan;       /* before the simplex, try this many points across each parameter's
                         range in turn, keeping the best (0: start at the start values) */
} SsimCalibOptions;

typedef struct {
    SsimCalibValues start, fitted;
    double loss_before, loss_after; /* mean squared log error on the rows fitted */
    guint iterations;
    gboolean converged;
} SsimCalibFit;

/*
 * Fits the parameters of options->mask on rows idx[0..n) by minimising the mean squared log
 * error with GSL's Nelder-Mead simplex (gsl_multimin_fminimizer_nmsimplex2), starting from the
 * figures of `start` (a cluster; its other figures are what each row's cluster has).  Each
 * parameter is searched inside its bounds through a logistic map (log scale where listed).
 * With options->scan = S > 0 the simplex starts from the result of one coordinate pass: for
 * each fitted parameter in list order, the loss at S points evenly spread over its range (in
 * the logistic domain) and at the current point, keeping the best; S dim extra evaluations.
 */
gboolean ssim_calibrate_fit(const SsimRunSet *set, const guint *idx, guint n,
                            const SsimCluster *start, const SsimCalibOptions *options,
                            SsimCalibFit *fit, GError **error);

/*
 * K-fold cross-validation on rows idx[0..n): row idx[j] is in fold j % k; for each fold, fit on
 * the others and predict it.  cv_pred[j] receives the held-out prediction of idx[j].
 */
gboolean ssim_calibrate_cross_validate(const SsimRunSet *set, const guint *idx, guint n, guint k,
                                       const SsimCluster *start, const SsimCalibOptions *options,
                                       double *cv_pred, GError **error);

/* The cluster as a `format = 1` INI that ssim_cluster_load() reads back to the same figures;
 * `comment` (may be NULL) is written first, each line prefixed with "# ". */
GString *ssim_cluster_write_ini(const SsimCluster *cluster, const char *comment);

G_END_DECLS
