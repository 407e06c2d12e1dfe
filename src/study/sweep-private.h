/*
 * The inside of SsimSweep, shared by sweep.c (the space and its evaluation) and sweep-report.c
 * (what is written of it).  Nothing else includes this.
 *
 * Invariants: rows[i].index == i for every configuration; the array is allocated once by
 * ssim_sweep_new() and never resized, so workers write their rows in place.
 */
#pragma once

#include <shiftsim/sweep.h>

struct SsimSweep {
    const SsimModel *model;
    SsimCluster *cluster; /* a copy with N GPUs */
    SsimSweepSpec spec;
    SsimSweepRow *rows;
    guint n_rows;
    guint skipped_pairs;
    gboolean has_1f1b; /* "1f1b" is in the schedule list */
};
