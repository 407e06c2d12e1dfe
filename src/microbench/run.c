/*
 * SsimBenchRun: turns each case a CUDA module reports into statistics, a profile row, raw rows
 * and a progress line (see run.h).
 */
#include "src/microbench/run.h"

#include "src/microbench/collective.h"
#include "src/microbench/csvout.h"
#include "src/microbench/stats.h"

#include <stdarg.h>
#include <string.h>

struct SsimBenchRun {
    const SsimBenchPlan *plan;
    FILE *profile, *raw, *progress;
    GString *buf;
    guint rows;
    gboolean ok;
};

SsimBenchRun *ssim_bench_run_new(const SsimBenchPlan *plan, FILE *profile, FILE *raw,
                                 FILE *progress)
{
    g_return_val_if_fail(plan != NULL && profile != NULL, NULL);
    SsimBenchRun *run = g_new0(SsimBenchRun, 1);
    run->plan = plan;
    run->profile = profile;
    run->raw = raw;
    run->progress = progress;
    run->buf = g_string_new(NULL);
    run->ok = TRUE;
    return run;
}

void ssim_bench_run_free(SsimBenchRun *run)
{
    if (run == NULL)
        return;
    g_string_free(run->buf, TRUE);
    g_free(run);
}

const SsimBenchPlan *ssim_bench_run_plan(const SsimBenchRun *run)
{
    return run->plan;
}

guint ssim_bench_run_rows(const SsimBenchRun *run)
{
    return run->rows;
}

gboolean ssim_bench_run_ok(const SsimBenchRun *run)
{
    return run->ok;
}

/* Writes and clears the buffer. */
static void flush_to(SsimBenchRun *run, FILE *f)
{
    if (fwrite(run->buf->str, 1, run->buf->len, f) != run->buf->len || fflush(f) != 0)
        run->ok = FALSE;
    g_string_truncate(run->buf, 0);
}

void ssim_bench_run_begin(SsimBenchRun *run, const char *const *metadata)
{
    ssim_bench_csv_begin(run->buf, metadata);
    flush_to(run, run->profile);
    if (run->raw != NULL) {
        ssim_bench_csv_raw_begin(run->buf, metadata);
        flush_to(run, run->raw);
    }
}

char *ssim_bench_run_describe(const SsimBenchRow *row, double median_us)
{
    double s = median_us * 1e-6;
    GString *d = g_string_new(NULL);
    g_string_append_printf(d, "%s %s", row->kind, row->op);
    if (row->dtype != NULL && *row->dtype != '\0')
        g_string_append_printf(d, " %s", row->dtype);
    if (strcmp(row->kind, "gemm") == 0) {
        double flops = 2.0 * (double)row->batch * (double)row->m * (double)row->n * (double)row->k;
        g_string_append_printf(d, " %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT,
                               (guint64)row->m, (guint64)row->n, (guint64)row->k);
        if (row->batch > 1)
            g_string_append_printf(d, " x%" G_GUINT64_FORMAT, (guint64)row->batch);
        g_string_append_printf(d, ": %.1f us, %.1f TFLOP/s", median_us,
                               s > 0 ? flops / s * 1e-12 : 0.0);
    } else if (strcmp(row->kind, "attention") == 0) {
        g_string_append_printf(d,
                               " seq %" G_GUINT64_FORMAT " heads %" G_GUINT64_FORMAT
                               " dim %" G_GUINT64_FORMAT " batch %" G_GUINT64_FORMAT ": %.1f us",
                               (guint64)row->m, (guint64)row->n, (guint64)row->k,
                               (guint64)row->batch, median_us);
    } else if (strcmp(row->kind, "comm") == 0) {
        SsimBenchColl coll;
        double busbw = 0.0, algbw = ssim_bench_algbw(row->bytes, s);
        if (ssim_bench_coll_from_name(row->op, &coll))
            busbw = ssim_bench_busbw(coll, row->ranks, row->bytes, s);
        g_string_append_printf(d,
                               " %" G_GUINT64_FORMAT " B on %u GPUs: %.1f us, algbw %.2f GB/s, "
                               "busbw %.2f GB/s",
                               (guint64)row->bytes, row->ranks, median_us, algbw * 1e-9,
                               busbw * 1e-9);
    } else {
        g_string_append_printf(d, " %" G_GUINT64_FORMAT " B: %.1f us, %.1f GB/s",
                               (guint64)row->bytes, median_us,
                               ssim_bench_algbw(row->bytes, s) * 1e-9);
    }
    return g_string_free(d, FALSE);
}

void ssim_bench_report(SsimBenchRun *run, const SsimBenchRow *row, const double *samples_us,
                       unsigned n)
{
    SsimBenchStats st;
    if (!ssim_bench_stats_compute(samples_us, n, &st)) {
        ssim_bench_notice(run, "%s %s: no valid samples, case skipped", row->kind, row->op);
        return;
    }
    ssim_bench_csv_row(run->buf, row, &st);
    flush_to(run, run->profile);
    if (run->raw != NULL) {
        ssim_bench_csv_raw_rows(run->buf, row, samples_us, n);
        flush_to(run, run->raw);
    }
    run->rows++;
    if (run->progress != NULL) {
        g_autofree char *d = ssim_bench_run_describe(row, st.median);
        fprintf(run->progress, "  %s\n", d);
        fflush(run->progress);
    }
}

void ssim_bench_notice(SsimBenchRun *run, const char *fmt, ...)
{
    (void)run;
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "shiftsim-bench: %s\n", msg);
    fflush(stderr);
}
