/*
 * Readers of vTrain's files (Bang et al., vTrain, MICRO 2024, MIT licence): its measured training
 * iterations become measured runs, its NCCL all-reduce lookup tables become profile rows.
 *
 *   - ground_truth_single.csv (columns: GPUs, global batch, micro batch, hidden size, attention
 *     heads, layers, sequence length, tp, dp, pp, iteration time ms): 1,440 iterations on one
 *     node of 2, 4 or 8 A100 GPUs, converted to runs (include/shiftsim/runs.h) with the setup
 *     vTrain measured under: a GPT shape with vocab 51200, fp16, 1F1B, full recompute (vTrain's
 *     activation checkpointing);
 *   - the all-reduce tables AR_GPU<n>_..._LUT.csv (`size(B),count,type,time(ns),busbw(GB/s),
 *     time(ns),busbw(GB/s)`, out-of-place then in-place, n ranks on one node), imported as comm
 *     rows the way nccl-tests output is (include/shiftsim/nccltests.h): one row a size, time_us
 *     the mean of the two times, median_us the same, min_us the smaller, stddev_us their sample
 *     standard deviation, samples 2.  `shiftsim profile import --from vtrain` reaches it through
 *     ssim_profile_import_into() (include/shiftsim/import.h), which also imports a directory of
 *     tables.
 *
 * Errors are SSIM_CONFIG_ERROR with `file:line:column: field: message`.
 *
 * Ownership: ssim_runs_from_vtrain*() return runs the caller frees with ssim_runs_free();
 * ssim_vtrain_import_lut() appends to a caller-owned profile, all of the table or nothing.
 */
#pragma once

#include <shiftsim/profile.h>
#include <shiftsim/runs.h>

G_BEGIN_DECLS

/* The bundled description of the cluster vTrain measured on (models/clusters/vtrain-a100.ini:
 * DGX A100 nodes with the 800 Gb/s of InfiniBand a node that vTrain's configurations give), the
 * cluster its runs name unless the caller says otherwise. */
#define SSIM_VTRAIN_CLUSTER "vtrain-a100"

/*
 * Converts vTrain's ground_truth_single.csv (or ground_truth_multi.csv) to runs: GPT shape with
 * vocab 51200, fp16, `cluster` on as many eight-GPU nodes as the run spans, 1F1B, full recompute
 * (vTrain's activation checkpointing), source "vTrain measured data (Bang et al., MICRO 2024)".
 */
SsimRuns *ssim_runs_from_vtrain(const char *path, const char *cluster, GError **error);
SsimRuns *ssim_runs_from_vtrain_data(const char *text, gssize length, const char *path,
                                     const char *cluster, GError **error);

/* Whether `text` starts with the header of vTrain's table of measured runs (that of
 * ground_truth_single.csv or ground_truth_multi.csv, after a byte order mark if any). */
gboolean ssim_vtrain_is_runs_table(const char *text, gsize length);
/* Reads `path` as a runs file (ssim_runs_load()), or, when it is vTrain's table of measured
 * runs, converts it as ssim_runs_from_vtrain() does onto `cluster`; *was_vtrain (may be NULL)
 * says which it was. */
SsimRuns *ssim_runs_load_any(const char *path, const char *cluster, gboolean *was_vtrain,
                             GError **error);

/* Appends the rows of one all-reduce table to `dst`; `path`'s base name (AR_GPU<n>_...) gives
 * the rank count. */
gboolean ssim_vtrain_import_lut(SsimProfile *dst, const char *text, gssize length, const char *path,
                                GError **error);

G_END_DECLS
