/*
 * The driver's side of a measurement run (SsimBenchRun, opaque to the CUDA modules): where the
 * profile and raw rows go, and the one-line progress report on stderr for each case.
 *
 * Rows are written and flushed as they are reported, so an interrupted run keeps what it
 * measured.  Ownership: the run borrows the plan and the FILE streams; ssim_bench_run_free()
 * closes neither.
 */
#pragma once

#include "src/microbench/bench.h"

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

/* `raw` may be NULL (no raw file); `progress` may be NULL (quiet). */
SsimBenchRun *ssim_bench_run_new(const SsimBenchPlan *plan, FILE *profile, FILE *raw,
                                 FILE *progress);
void ssim_bench_run_free(SsimBenchRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimBenchRun, ssim_bench_run_free)

/* Writes the version line, `metadata` (key, value pairs, NULL-terminated) and the header to the
 * profile and, if any, the raw file. */
void ssim_bench_run_begin(SsimBenchRun *run, const char *const *metadata);
/* Rows written so far. */
guint ssim_bench_run_rows(const SsimBenchRun *run);
/* FALSE once a write to the profile or raw file has failed. */
gboolean ssim_bench_run_ok(const SsimBenchRun *run);

/* The progress text for a case with median `median_us`: its figure of merit (TFLOP/s for GEMMs,
 * GB/s for memory and copies, algbw and busbw for collectives).  Exposed for the tests. */
char *ssim_bench_run_describe(const SsimBenchRow *row, double median_us);

G_END_DECLS
