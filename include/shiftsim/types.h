/*
 * Units and error domains shared by every shiftsim module.
 *
 * Simulated time is an integer count of nanoseconds so that runs are exact and reproducible on any
 * machine; bytes are unsigned 64-bit; FLOPs and bandwidths are doubles.  Converting a double
 * duration to SsimTime always goes through ssim_time_from_seconds(), which rounds to the nearest
 * nanosecond, so every module rounds the same way.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef int64_t SsimTime;

#define SSIM_TIME_NEVER INT64_MAX
#define SSIM_NS         ((SsimTime)1)
#define SSIM_US         ((SsimTime)1000)
#define SSIM_MS         ((SsimTime)1000000)
#define SSIM_S          ((SsimTime)1000000000)
#define SSIM_NONE       G_MAXUINT32

/* Rounds a non-negative duration in seconds to the nearest nanosecond (saturating). */
SsimTime ssim_time_from_seconds(double seconds);
double ssim_time_to_seconds(SsimTime t);

/* qsort/bsearch comparison of two guint32 (ranks, GPU ids, op indices). */
int ssim_cmp_u32(const void *a, const void *b);

/* Errors in input files and configurations (INI, graph text, CSV, impossible splits). */
#define SSIM_CONFIG_ERROR (ssim_config_error_quark())
GQuark ssim_config_error_quark(void);
typedef enum {
    SSIM_CONFIG_ERROR_PARSE,   /* malformed syntax */
    SSIM_CONFIG_ERROR_VALUE,   /* a field has a wrong, out-of-range or inconsistent value */
    SSIM_CONFIG_ERROR_MISSING, /* a required field or file is absent */
    SSIM_CONFIG_ERROR_VERSION, /* unsupported format version */
    SSIM_CONFIG_ERROR_IO,      /* the file could not be read or written */
} SsimConfigError;

/* Errors found while simulating (deadlock, limits). */
#define SSIM_RUN_ERROR (ssim_run_error_quark())
GQuark ssim_run_error_quark(void);
typedef enum {
    SSIM_RUN_ERROR_DEADLOCK, /* no event left but some ops never finished */
    SSIM_RUN_ERROR_LIMIT,    /* a limit: the op or microbatch budget refused the configuration
                                (budget.h), or the time limit or event budget ran out first */
    SSIM_RUN_ERROR_GRAPH,    /* the graph is not legal (cycle, dangling dependency) */
} SsimRunError;

G_END_DECLS
