/*
 * A memo of a pure function of graph strings, kept per string id, shared by the cost models
 * (the analytical model's kernel names, the profiled model's names and classes).  Nothing outside
 * src/cost includes this.
 *
 * Invariant: an entry holds `value` as computed for the string `from` (owned); a lookup whose
 * string differs (the same id in another graph) is fresh again, so one memo serves any graph.
 * `serial` is the graph (ssim_graph_serial) whose id `id` was last found to be `from`: while the
 * same graph asks, the entry is trusted without comparing the text.
 */
#pragma once

#include <glib.h>
#include <shiftsim/graph.h>

typedef struct {
    char *from;
    guint64 serial;
    guint32 value;
} CostMemo;

/* An empty memo (a GArray of CostMemo that frees its strings). */
GArray *cost_memo_new(void);

/* The entry of string id `id` of `graph` in `memo`; *fresh when it was (re)made for the id's
 * string and the caller must fill its value. */
CostMemo *cost_memo_entry(GArray *memo, const SsimGraph *graph, guint32 id, gboolean *fresh);
