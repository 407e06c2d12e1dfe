/*
 * Step-time bars: one stacked bar per variant of a job (a placement policy, say), its step time
 * split into the communication of each class that nothing hid (exposed TP, PP, DP: sim.h) and the
 * rest (compute and pipeline bubbles).  Written, like every plot, as data (.dat) and script (.gp)
 * beside the image and rendered when gnuplot is installed (plot.h).
 */
#pragma once

#include <shiftsim/opclass.h>
#include <shiftsim/plot.h>

G_BEGIN_DECLS

typedef struct {
    const char *name;              /* the bar's label: one word (it is a column of the data) */
    SsimTime step;                 /* the step time */
    SsimTime exposed[SSIM_COMM_N]; /* of which exposed communication, per class */
} SsimStepBar;

/* A chart (everything borrowed). */
typedef struct {
    const SsimStepBar *bars;
    guint n_bars;
    const char *label; /* what a bar is: the data's first column, e.g. "policy" */
    const char *about; /* the script's opening comment, e.g. "shiftsim compare: ..." */
    const char *title;
} SsimStepBars;

/* Writes IMAGE.dat (a row per bar: label, rest, exposed tp, pp and dp, in ms) and IMAGE.gp, and
 * renders the image (.svg, or else PNG) when gnuplot exists. */
gboolean ssim_step_bars_plot(const SsimStepBars *chart, const char *image, SsimPlotStatus *status,
                             GError **error);

G_END_DECLS
