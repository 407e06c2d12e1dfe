/*
 * Chrome / Perfetto trace output (the JSON "Trace Event Format"): one process per rank, one
 * thread per stream, a complete ("X") event per op, and flow arrows from each send to its
 * receive.  A stream runs one op at a time, so its events never overlap and nest trivially.
 * Timestamps are microseconds with nanosecond decimals.
 */
#pragma once

#include <shiftsim/runtime.h>

G_BEGIN_DECLS

/* The trace as JSON text; `max_ranks` (0 = all) keeps only ranks below it. */
GString *ssim_trace_json(const SsimGraph *graph, const SsimTimeline *timeline, guint max_ranks);

G_END_DECLS
