/*
 * Reporters for a replayed graph: a per-rank, per-stream summary (table, CSV, JSON) and the
 * timeline CSV with one row per op.  They read results only.  Output files are written to a
 * temporary name and renamed, so an error never leaves a truncated file behind.
 */
#pragma once

#include <shiftsim/runtime.h>

G_BEGIN_DECLS

typedef enum { SSIM_FORMAT_TABLE, SSIM_FORMAT_CSV, SSIM_FORMAT_JSON } SsimFormat;

gboolean ssim_format_from_name(const char *name, SsimFormat *out);

/* Per-rank figures derived from a timeline. */
typedef struct {
    SsimTime busy_union; /* time at least one stream of the rank is busy */
    SsimTime overlap;    /* time at least two streams of the rank are busy at once */
} SsimRankSummary;

/* Busy time of each stream (indexed by global stream) and per-rank union/overlap; caller frees. */
void ssim_timeline_summarize(const SsimGraph *graph, const SsimTimeline *timeline,
                             SsimTime **stream_busy, SsimRankSummary **ranks);

/* The replay summary in the given format. */
GString *ssim_report_replay(const SsimGraph *graph, const SsimTimeline *timeline, SsimFormat format,
                            const char *source);

/* One row per op: id,name,rank,stream,kind,class,bytes,flops,ready_ns,start_ns,end_ns. */
GString *ssim_report_timeline_csv(const SsimGraph *graph, const SsimTimeline *timeline);
/* The same with a last column uncontended_ns: `uncontended[op]` (a communication op's time alone
 * on the flow network), empty where it is negative. */
GString *ssim_report_timeline_csv_uncontended(const SsimGraph *graph, const SsimTimeline *timeline,
                                              const SsimTime *uncontended);

typedef struct _JsonBuilder JsonBuilder;
/* Appends the document `builder` holds (pretty-printed or compact) and a newline to `out`. */
void ssim_json_append(GString *out, JsonBuilder *builder, gboolean pretty);
/* Sets member `name` of the object `builder` is in to `value`, or to null when it is NaN or
 * infinite (JSON has no such numbers). */
void ssim_json_set_number(JsonBuilder *builder, const char *name, double value);

/* Writes `contents` to `path` atomically: ssim_output_write() (output.h: only a regular file is
 * replaced, every write checked, fsync, rename). */
gboolean ssim_write_file(const char *path, const GString *contents, GError **error);

G_END_DECLS
