/*
 * Importers that turn the measurements users already have into profile rows (comm kind):
 *
 *   - nccl-tests text output (all_reduce_perf and friends): the `#  size count type redop root
 *     time algbw busbw #wrong time algbw busbw #wrong` table, out-of-place and in-place; the rank
 *     count from the `#  Rank N ... on HOST device ...` lines (ranks per node: the most ranks on
 *     one host) or else `# nThread T nGpus G`; the collective from `# Collective test starting:`
 *     or the file name (all_reduce_perf.txt), unless given;
 *   - nccl-tests JSON output (`-J FILE.json`, nccl-tests 2.17 and later, "version": 2): the same
 *     results from its "results" list, ranks from "config"."devices";
 *   - vTrain's all-reduce tables (AR_GPU<n>_..._LUT.csv: `size(B),count,type,time(ns),
 *     busbw(GB/s),time(ns),busbw(GB/s)`, out-of-place then in-place, n ranks on one node).
 *
 * Each measured size becomes one row: time_us the mean of the out-of-place and in-place times,
 * median_us the same (the median of two), min_us the smaller, stddev_us their sample standard
 * deviation, samples 2 (1 where only one was reported).  Zero-byte sizes are skipped (they
 * measure launch latency only and have no place on a log(bytes) curve).  Errors are
 * SSIM_CONFIG_ERROR with `file:line:column: field: message` (JSON: `file: json.path: message`,
 * as the JSON parser reports no positions for values).
 *
 * Ownership: the importers append to a caller-owned profile; ssim_profile_import() returns a new
 * one the caller frees.
 */
#pragma once

#include <shiftsim/profile.h>

G_BEGIN_DECLS

#define SSIM_IMPORT_KIND_LIST(X)                                                                   \
    X(NCCL_TESTS, "nccl-tests")                                                                    \
    X(NCCL_TESTS_JSON, "nccl-tests-json")                                                          \
    X(VTRAIN, "vtrain")

typedef enum {
#define SSIM_X(e, s) SSIM_IMPORT_##e,
    SSIM_IMPORT_KIND_LIST(SSIM_X)
#undef SSIM_X
        SSIM_IMPORT_N
} SsimImportKind;

const char *ssim_import_kind_name(SsimImportKind kind);
gboolean ssim_import_kind_from_name(const char *name, SsimImportKind *out);

/* `op` (NULL: inferred) names the collective: allreduce, allgather, ... */
gboolean ssim_nccltests_import_text(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error);
gboolean ssim_nccltests_import_json(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error);
/* `path`'s base name (AR_GPU<n>_...) gives the rank count. */
gboolean ssim_vtrain_import_lut(SsimProfile *dst, const char *text, gssize length, const char *path,
                                GError **error);

/*
 * Reads `path` as `kind` into `dst`.  For vtrain a directory imports every AR_GPU*_LUT.csv in it
 * in order of rank count.  Metadata (tool, source, gpu, nccl when known) is set where absent.
 */
gboolean ssim_profile_import_into(SsimProfile *dst, SsimImportKind kind, const char *path,
                                  const char *op, GError **error);
/* The same into a new profile; `kind` by name ("nccl-tests", "nccl-tests-json", "vtrain"). */
SsimProfile *ssim_profile_import(const char *kind, const char *path, GError **error);

G_END_DECLS
