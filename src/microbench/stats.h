/*
 * Summary statistics of a case's timed samples, as the profile rows report them.
 *
 * The median of an even count is the mean of the two middle samples; the standard deviation is
 * the sample standard deviation (divisor n - 1), 0 for a single sample.  The mean is computed in
 * one pass and the deviation in a second, around the mean, so large offsets lose no precision.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    guint samples;
    double mean, median, min, max, stddev;
} SsimBenchStats;

/* Fills `out` from `n` >= 1 finite samples (left unchanged).  Returns FALSE, with `out` zeroed,
 * when n is 0 or a sample is NaN or infinite. */
gboolean ssim_bench_stats_compute(const double *samples, guint n, SsimBenchStats *out);

G_END_DECLS
