/*
 * Writing shiftsim's profile CSV (format v1, see docs/profiles.md) and shiftsim-bench's
 * raw-samples CSV, as text appended to a GString so that tests can compare it byte for byte.
 *
 * Profile layout: the version line "# shiftsim-profile v1", metadata lines "# key = value", the
 * header, then one row per measured case:
 *   kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,time_us,median_us,min_us,
 *   stddev_us,samples
 * where time_us is the mean.  The raw file has its own version line, "# shiftsim-bench raw v1",
 * the same metadata, and one row per sample: the eleven case columns, then sample (0-based) and
 * time_us.
 *
 * Invariants of the text written: numbers use '.' whatever the locale (g_ascii_formatd), times
 * have three decimals (nanosecond resolution) and are never negative; a text field is quoted
 * (RFC 4180: in double quotes, inner quotes doubled) when it holds a comma, a quote, a line break
 * or leading or trailing blanks; metadata values are single lines (line breaks become spaces).
 */
#pragma once

#include "src/microbench/bench.h"
#include "src/microbench/stats.h"

#include <glib.h>

G_BEGIN_DECLS

#define SSIM_PROFILE_VERSION_LINE   "# shiftsim-profile v1"
#define SSIM_BENCH_RAW_VERSION_LINE "# shiftsim-bench raw v1"
#define SSIM_PROFILE_HEADER                                                                        \
    "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,time_us,median_us,min_us,"          \
    "stddev_us,samples"
#define SSIM_BENCH_RAW_HEADER                                                                      \
    "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,sample,time_us"

/* Appends one CSV field (quoted when needed; NULL is the empty field). */
void ssim_bench_csv_field(GString *out, const char *text);
/* Appends a time in microseconds, "%.3f" in the C locale; negative values (which a correct
 * measurement never gives) and -0 print as 0.000. */
void ssim_bench_csv_time(GString *out, double us);

/* "# key = value\n".  `key` is [a-z0-9_]+ (asserted). */
void ssim_bench_csv_metadata(GString *out, const char *key, const char *value);
/* Version line, then `metadata` (key, value pairs; NULL-terminated), then the header line. */
void ssim_bench_csv_begin(GString *out, const char *const *metadata);
void ssim_bench_csv_raw_begin(GString *out, const char *const *metadata);
/* One profile row. */
void ssim_bench_csv_row(GString *out, const SsimBenchRow *row, const SsimBenchStats *stats);
/* One raw row per sample. */
void ssim_bench_csv_raw_rows(GString *out, const SsimBenchRow *row, const double *samples_us,
                             guint n);

/* Version numbers as the metadata writes them: cuBLAS and NCCL encode major*10000 + minor*100 +
 * patch ("13.1.0", "2.28.9"); the CUDA runtime and driver API major*1000 + minor*10 ("13.0"). */
char *ssim_bench_version_mmp(int version);
char *ssim_bench_version_cuda(int version);
/* The driver version from the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX
 * x86_64 Kernel Module  570.86.15  ..." gives "570.86.15"); NULL when it is not there. */
char *ssim_bench_driver_from_proc(const char *text);

G_END_DECLS
