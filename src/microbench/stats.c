/*
 * Statistics over timed samples (see stats.h).  The median sorts a private copy, so the caller's
 * samples keep their order (the raw file writes them in the order they were taken).
 */
#include "src/microbench/stats.h"

#include <math.h>
#include <string.h>

static gint cmp_double(gconstpointer pa, gconstpointer pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b ? 1 : 0;
}

gboolean ssim_bench_stats_compute(const double *samples, guint n, SsimBenchStats *out)
{
    g_return_val_if_fail(out != NULL, FALSE);
    memset(out, 0, sizeof *out);
    if (n == 0 || samples == NULL)
        return FALSE;
    double sum = 0.0, lo = samples[0], hi = samples[0];
    for (guint i = 0; i < n; i++) {
        if (!isfinite(samples[i]))
            return FALSE;
        sum += samples[i];
        lo = MIN(lo, samples[i]);
        hi = MAX(hi, samples[i]);
    }
    double mean = sum / n, sq = 0.0;
    for (guint i = 0; i < n; i++)
        sq += (samples[i] - mean) * (samples[i] - mean);

    double *sorted = g_memdup2(samples, (gsize)n * sizeof *samples);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double median = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    g_free(sorted);

    out->samples = n;
    out->mean = mean;
    out->median = median;
    out->min = lo;
    out->max = hi;
    out->stddev = n > 1 ? sqrt(sq / (n - 1)) : 0.0;
    return TRUE;
}
