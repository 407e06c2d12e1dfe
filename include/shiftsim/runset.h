/*
 * A table of measured runs made ready to simulate: each row's model and cluster loaded once, its
 * measurement turned into an iteration time, and every row simulated on threads with the same
 * cluster overrides (what validation and calibration compare with the measurements).
 *
 * A measurement given as TFLOP/s is turned into an iteration time with the model's hardware
 * FLOPs (ssim_model_hardware_flops, i.e. the recompute-inclusive count Megatron-LM divides by),
 * so every comparison is of iteration times: error = (predicted - measured) / measured.
 *
 * Ownership: an SsimRunSet borrows nothing (it holds copies of the rows and its own models and
 * clusters); the rows, models and clusters its getters return are borrowed from it.
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/clusterparams.h>
#include <shiftsim/model.h>
#include <shiftsim/runs.h>

G_BEGIN_DECLS

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
/* Host memory per simulation (SsimSimConfig.max_memory; 0: the default). */
void ssim_run_set_set_max_memory(SsimRunSet *set, guint64 max_memory);
guint ssim_run_set_n(const SsimRunSet *set);
const SsimMeasuredRun *ssim_run_set_run(const SsimRunSet *set, guint i);
const SsimCluster *ssim_run_set_cluster(const SsimRunSet *set, guint i);
const SsimModel *ssim_run_set_model(const SsimRunSet *set, guint i);
/* The measured iteration time of row i in ms (from iteration_ms or tflops_per_gpu). */
double ssim_run_set_measured_ms(const SsimRunSet *set, guint i);
/* What rows are grouped by: Kendall's tau is counted inside groups of one model;
 * cross-validation can leave out a whole group of one model, node count, tp, GPU count, pp, dp,
 * microbatch size, microbatches a step (a pipeline's: global batch / (dp x microbatch)), runs
 * file, cluster or recompute mode; validate --by breaks its figures down by any of them. */
typedef enum {
    SSIM_GROUP_BY_MODEL,
    SSIM_GROUP_BY_NODES,
    SSIM_GROUP_BY_TP,
    SSIM_GROUP_BY_GPUS,
    SSIM_GROUP_BY_PP,
    SSIM_GROUP_BY_DP,
    SSIM_GROUP_BY_MICROBATCH,
    SSIM_GROUP_BY_MICROBATCHES,
    SSIM_GROUP_BY_FILE,
    SSIM_GROUP_BY_CLUSTER,
    SSIM_GROUP_BY_RECOMPUTE,
    SSIM_GROUP_BY_N
} SsimGroupBy;

/* "model", "nodes", "tp", "gpus", "pp", "dp", "microbatch", "microbatches", "file", "cluster",
 * "recompute" */
const char *ssim_group_by_name(SsimGroupBy by);
gboolean ssim_group_by_from_name(const char *name, SsimGroupBy *out);
/* The names for a message: "model, nodes, tp, ..., cluster or recompute", each after `prefix` (e.g.
 * "group:"); caller frees. */
char *ssim_group_by_names_list(const char *prefix);
/* Row i's key under `by` ("gpt-l24-h1024", "4 nodes", "tp 8", "32 GPUs", "pp 4", "dp 16",
 * "microbatch 2", "16 microbatches", the runs file's path, the cluster's name, the recompute
 * mode: "none", "selective", "full", "op"); caller frees. */
char *ssim_run_set_key(const SsimRunSet *set, guint i, SsimGroupBy by);
/* Row i's number under `by` (8 for "tp 8"; 0 for a model, file, cluster or recompute mode): the
 * order of the groups. */
guint ssim_run_set_key_number(const SsimRunSet *set, guint i, SsimGroupBy by);
/* The model: rows with the same key form one group for Kendall's tau. */
char *ssim_run_set_group_key(const SsimRunSet *set, guint i);

/* A grouping: one key, or up to SSIM_GROUPING_MAX different keys joined by '+'
 * ("tp+microbatch"), under which rows share a group when they share every part. */
#define SSIM_GROUPING_MAX 4
typedef struct {
    guint n;
    SsimGroupBy part[SSIM_GROUPING_MAX];
} SsimGrouping;

/* The grouping of one key. */
SsimGrouping ssim_grouping_one(SsimGroupBy by);
/* Parses "tp" or "tp+microbatch": FALSE for an unknown part, a part given twice or more than
 * SSIM_GROUPING_MAX parts. */
gboolean ssim_grouping_from_name(const char *name, SsimGrouping *out);
/* "tp+microbatch"; caller frees. */
char *ssim_grouping_name(const SsimGrouping *g);
/* The same parts in the same order. */
gboolean ssim_grouping_equal(const SsimGrouping *a, const SsimGrouping *b);
/* Row i's key under `g`: its parts' keys joined by ", " ("tp 8, microbatch 1"); caller frees. */
char *ssim_run_set_grouping_key(const SsimRunSet *set, guint i, const SsimGrouping *g);

/* A condition on a row (validate and calibrate --only): its key under `by` is (or with `negate`
 * is not) `number` (nodes, tp, gpus, pp, dp, microbatch, microbatches) or `text` (model, file or
 * cluster: the key as validate --by names its group). */
typedef struct {
    SsimGroupBy by;
    gboolean negate;
    guint number;
    char text[SSIM_RUN_TEXT_MAX];
} SsimRowMatch;
/* Parses "KEY=VALUE" or "KEY!=VALUE" ("dp=1", "dp!=1", "model=gpt-l24-h1024"): FALSE
 * (SSIM_CONFIG_ERROR_VALUE) for an unknown key, a missing or empty value, or a number that is
 * not a positive integer. */
gboolean ssim_row_match_parse(const char *item, SsimRowMatch *out, GError **error);
/* Whether row i meets every one of m[0..n). */
gboolean ssim_run_set_matches(const SsimRunSet *set, guint i, const SsimRowMatch *m, guint n);
/* Group ids under `g` (0, 1, ... in order of first appearance) of rows idx[0..n) (all when idx
 * is NULL); caller frees.  `names` (may be NULL) receives each group's key (owned strings),
 * in id order. */
guint *ssim_run_set_groups_by(const SsimRunSet *set, const guint *idx, guint n,
                              const SsimGrouping *g, GPtrArray *names);
/* The same grouped by the model: Kendall tau's groups. */
guint *ssim_run_set_groups(const SsimRunSet *set, const guint *idx, guint n);

/* Records in `cluster` (its fit_lo/fit_hi) the range of every SsimFitDim over rows
 * idx[0..n) (all when idx is NULL): the shapes a calibration fitted. */
void ssim_run_set_fit_ranges(const SsimRunSet *set, const guint *idx, guint n,
                             SsimCluster *cluster);
/* NULL when row i lies inside the fitted ranges its cluster records (or records none); else what
 * lies outside, e.g. "hidden 12288 > 2048, nodes 128 > 1" (caller frees): its prediction is an
 * extrapolation. */
char *ssim_run_set_extrapolation(const SsimRunSet *set, guint i);

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
/*
 * Progress of ssim_run_set_predict(): `fn` is called once per row, from the thread that
 * simulated it (several may call at once: the callee locks), with the row's estimated work
 * (ssim_run_set_work) and whether it was simulated (FALSE: a limit refused it before it ran,
 * so its work should leave the total).  NULL turns it off (the default).
 */
typedef void (*SsimRunSetProgressFn)(double work, gboolean simulated, gpointer user);
void ssim_run_set_set_progress(SsimRunSet *set, SsimRunSetProgressFn fn, gpointer user);
/* Row i's estimated work: the ops of its lowering (ssim_budget_estimate), at least 1. */
double ssim_run_set_work(const SsimRunSet *set, guint i);

/* Frees errors[0..n) and the array (NULL: nothing). */
void ssim_run_set_errors_free(char **errors, guint n);

G_END_DECLS
