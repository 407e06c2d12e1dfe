/*
 * gnuplot output.  A plot is always written as data (`.dat`) and script (`.gp`) next to the
 * requested image, so it can be inspected, edited and re-rendered; rendering runs the external
 * `gnuplot` program when it is on PATH, and its absence is reported, not an error.
 */
#pragma once

#include <shiftsim/runtime.h>

G_BEGIN_DECLS

typedef enum {
    SSIM_PLOT_RENDERED,   /* the image was written */
    SSIM_PLOT_NO_GNUPLOT, /* .dat and .gp written; gnuplot is not installed */
} SsimPlotStatus;

/* `image` with its extension replaced by `ext` (".dat", ".gp"); newly allocated. */

char *ssim_plot_sibling(const char *image, const char *ext);

/* Whether IMAGE, IMAGE.gp and IMAGE.dat can all be written (ssim_output_check), before the
 * work that draws them. */
gboolean ssim_plot_check(const char *image, GError **error);

/*
 * Writes `script` to IMAGE.gp (the script refers to its data by the paths the caller wrote) and
 * renders it with gnuplot when available.  The script must set its own terminal and output
 * (`set output 'IMAGE'`, quoted by ssim_plot_quote).  Rendering is atomic: gnuplot draws into a
 * temporary file beside IMAGE (from a copy of the script that names it), which replaces IMAGE
 * only when gnuplot exited 0, printed nothing but warnings on stderr, and the file is a whole
 * PNG (its signature through its IEND chunk) or SVG (through its closing </svg>); otherwise the
 * temporary is removed, an earlier IMAGE stays as it was, and the error quotes gnuplot.
 */
gboolean ssim_plot_render(const char *image, const GString *script, SsimPlotStatus *status,
                          GError **error);

/* What a Gantt chart shows: the first `max_ranks` ranks (0: all) and the window [from, to) of
 * simulated time (to == 0: to the end of the timeline). */
typedef struct {
    guint max_ranks;
    SsimTime from, to;
} SsimGanttView;

/* Parses a --plot-window value: "START:END" in milliseconds, either side may be empty ("100:",
 * ":50"); sets `from` and `to` of `view`, leaving `max_ranks`.  FALSE with a message saying the
 * accepted form otherwise. */
gboolean ssim_gantt_window_parse(const char *text, SsimGanttView *view, GError **error);

/*
 * A Gantt chart of the streams: one row per rank and stream (labelled "rRANK STREAM"), a box per
 * op coloured by class (fixed colours for the classes of opclass.h), touching boxes of one class
 * on one row merged, ops clipped to the window of `view` (NULL: every rank, the whole timeline).
 * IMAGE.dat holds, per class, a block "# class NAME" of "start end row" lines (ms, or us when the
 * window is under 20 ms: the header says which); IMAGE.gp draws it.
 */
gboolean ssim_plot_gantt(const SsimGraph *graph, const SsimTimeline *timeline, const char *image,
                         const SsimGanttView *view, const char *title, SsimPlotStatus *status,
                         GError **error);

/* The best figure of one split (dp x tp x pp) under each series of a split chart. */
typedef struct {
    guint tp, pp, dp;
    double *best; /* one per series: the best tokens/s, NAN where nothing was simulated */
} SsimSplitBest;

/* A sweep reduced to its splits: what ssim_plot_splits() draws (everything borrowed). */
typedef struct {
    const SsimSplitBest *splits; /* in drawing order (a sweep's: tp outer, pp inner) */
    guint n_splits;
    const char *const *series; /* the series' names (a sweep's placements) */
    guint n_series;
    const char *context; /* the titles' prefix, e.g. "16 GPUs of dgx-h200, global batch 32" */
} SsimSplitChart;

/*
 * Writes PREFIX-throughput.{dat,gp,png} (the best tokens/s of each split, one bar per series,
 * clustered) and PREFIX-heatmap.{dat,gp,png} (a tp x pp grid of them, one panel per series);
 * renders them when gnuplot exists (`status` says whether it did).
 */
gboolean ssim_plot_splits(const SsimSplitChart *chart, const char *prefix, SsimPlotStatus *status,
                          GError **error);

/* One point of a predicted-vs-measured chart. */
typedef struct {
    double measured, predicted; /* in the chart's unit; a point without both (> 0) is left out */
    guint group;                /* index into the chart's groups: its colour and legend entry */
    guint line;                 /* where it came from (the runs file's line), kept in the data */
} SsimPredictedPoint;

/* A predicted-vs-measured chart (everything borrowed). */
typedef struct {
    const SsimPredictedPoint *points;
    guint n_points;
    const char *const *groups; /* the groups' names (a validation's models) */
    guint n_groups;
    const char *unit;  /* "ms" */
    const char *about; /* the script's opening comment */
    const char *title;
} SsimPredictedChart;

/*
 * Writes IMAGE.dat (a block "# group NAME" per group with points: "measured predicted line") and
 * IMAGE.gp: the points coloured by group (legend: name and count, outside the plot), the line
 * y = x and a shaded +/-10% band, square, on log axes when the figures span more than a decade;
 * renders it when gnuplot exists.
 */
gboolean ssim_plot_predicted(const SsimPredictedChart *chart, const char *image,
                             SsimPlotStatus *status, GError **error);

/* Quotes `s` as a gnuplot string literal (single quotes, '' for a quote). */
void ssim_plot_quote(GString *out, const char *s);

G_END_DECLS
