/*
 * Perfetto traces written by the verbs (src/app/tracefile.c): `replay --trace` and `simulate
 * --trace` write through this one function, so both follow the same rules.
 *
 * The format is Perfetto's protobuf for a FILE ending in .pftrace, .perfetto-trace, .pb or
 * .proto, JSON otherwise (ssim_trace_format_for), unless `format_name` ("proto" or "json", from
 * --trace-format) says which.  The trace is streamed to a temporary file beside FILE and renamed
 * over it when complete, so a failed write leaves no partial trace; "-" is stdout.
 */
#pragma once

#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

/* Writes the trace of `t` (a run of `graph`; `max_ranks` 0 = all ranks) to `path`, encoded on
 * `n_threads` threads (0 = one per core; ssim_trace_write()).  FALSE with `error` ("FILE: cannot
 * write: ...") when it cannot. */
gboolean ssim_cli_write_trace(const char *path, const char *format_name, const SsimGraph *graph,
                              const SsimTimeline *t, guint max_ranks, guint n_threads,
                              GError **error);

/* Whether `format_name` (NULL: not given) is a --trace-format value: NULL, "proto" or "json". */
gboolean ssim_cli_trace_format_valid(const char *format_name);

G_END_DECLS
