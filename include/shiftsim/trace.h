/*
 * Perfetto trace output: one process per rank, one thread (track) per stream, a slice per op, and
 * flow arrows from each send to its receive.  A stream runs one op at a time, so the slices of a
 * track never overlap: each ends no later than the next begins.
 *
 * Two formats, both streamed: events are encoded as the timeline is walked and handed to a sink
 * in blocks of at most SSIM_TRACE_BLOCK bytes, so the memory a trace takes is that block and a
 * few chunks per thread (ssim_trace_write()), whatever the op count (a json-glib document of a
 * million-op trace took a gigabyte).
 *
 *   SSIM_TRACE_PROTO  Perfetto's native format (a `Trace` of `TracePacket`s, protos/perfetto/trace
 *                     in the Perfetto repository): track descriptors for ranks and streams, a
 *                     SLICE_BEGIN and a SLICE_END track event per op at integer nanosecond
 *                     timestamps, interned event names and categories, flow ids binding each send
 *                     to its receive, debug annotations (op id, bytes, FLOPs, wait).  Exact, about
 *                     a fifth of the JSON's size.  Process ids are rank + 1 and thread ids stream
 *                     + 1 (Perfetto reserves 0).
 *   SSIM_TRACE_JSON   the Trace Event Format (ui.perfetto.dev and chrome://tracing read it): a
 *                     complete ("X") event per op, "s"/"f" flow events.  Its times are in
 *                     microseconds: they are written as the exact decimal of the integer
 *                     nanoseconds (three decimals, formatted from integers, never through a
 *                     floating-point value), so a reader that rounds to the nearest nanosecond,
 *                     as Perfetto's does, recovers every timestamp exactly and two slices that
 *                     touch never overlap.  The proto format needs no rounding at all.
 */
#pragma once

#include <shiftsim/runtime.h>

G_BEGIN_DECLS

typedef enum { SSIM_TRACE_JSON, SSIM_TRACE_PROTO } SsimTraceFormat;

/* The format a file name asks for: PROTO for .pftrace, .perfetto-trace, .pb and .proto; JSON
 * otherwise (".json", "-"). */
SsimTraceFormat ssim_trace_format_for(const char *path);

#define SSIM_TRACE_BLOCK (256 * 1024)

/* Where a trace goes: `write` takes each block in order (FALSE with `error` stops the trace). */
typedef struct {
    gboolean (*write)(gpointer data, const void *bytes, gsize len, GError **error);
    gpointer data;
} SsimTraceSink;

/*
 * Writes the trace of `timeline` (a run of `graph` with per-op times, not a replicated one) in
 * `format` to `sink`; `max_ranks` (0 = all) keeps only ranks below it.  The ops' events are
 * encoded in chunks of a few thousand ops on `n_threads` threads (0 = one per core; the calling
 * thread is one of them and alone calls the sink, in order), at most two chunks a thread ahead of
 * the sink: the bytes are the same for any thread count.  FALSE when the sink fails, with its
 * error.
 */
gboolean ssim_trace_write(const SsimGraph *graph, const SsimTimeline *timeline, guint max_ranks,
                          SsimTraceFormat format, guint n_threads, const SsimTraceSink *sink,
                          GError **error);

/* The JSON trace as text (small graphs and tests; ssim_trace_write() streams). */
GString *ssim_trace_json(const SsimGraph *graph, const SsimTimeline *timeline, guint max_ranks);

G_END_DECLS
