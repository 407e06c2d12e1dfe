/*
 * Importers that turn nccl-tests measurements, which users already have, into profile rows (comm
 * kind):
 *
 *   - nccl-tests text output (all_reduce_perf and friends): the `#  size count type redop root
 *     time algbw busbw #wrong time algbw busbw #wrong` table, out-of-place and in-place; the rank
 *     count from the `#  Rank N ... on HOST device ...` lines (ranks per node: the most ranks on
 *     one host) or else `# nThread T nGpus G`; the NICs of a node from NCCL's `NET/IB : Using
 *     [0]... [1]...` line when it ran with NCCL_DEBUG=INFO (a row across nodes then records
 *     min(1, NICs per node / ranks per node) NICs per rank, and the profile nics_per_node); the
 *     collective from `# Collective test starting:` or the file name (all_reduce_perf.txt),
 *     unless given;
 *   - nccl-tests JSON output (`-J FILE.json`, nccl-tests 2.17 and later, "version": 2): the same
 *     results from its "results" list, ranks from "config"."devices".
 *
 * Each measured size becomes one row: time_us the mean of the out-of-place and in-place times,
 * median_us the same (the median of two), min_us the smaller, stddev_us their sample standard
 * deviation, samples 2 (1 where only one was reported).  Zero-byte sizes are skipped (they
 * measure launch latency only and have no place on a log(bytes) curve).  Errors are
 * SSIM_CONFIG_ERROR with `file:line:column: field: message` (JSON: `file: json.path: message`,
 * as the JSON parser reports no positions for values).  vTrain's all-reduce tables, nccl-tests
 * output in another layout, are read by include/shiftsim/vtrain.h; files of any of these kinds
 * by ssim_profile_import() (include/shiftsim/import.h).
 *
 * Ownership: the importers append to a caller-owned profile.
 */
#pragma once

#include <shiftsim/profile.h>

G_BEGIN_DECLS

/* `op` (NULL: inferred) names the collective: allreduce, allgather, ... */
gboolean ssim_nccltests_import_text(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error);
gboolean ssim_nccltests_import_json(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error);

G_END_DECLS
