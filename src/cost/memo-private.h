/*
 * A memo of a pure function of graph strings, kept per string id, shared by the cost models
 * (the analytical model's kernel names, the profiled model's names and classes).  Nothing outside
 * src/cost includes this.
 *
 * Invariant: an entry holds `value` as computed for the string `from` (owned); a lookup whose
 * string differs (the same id in another graph) is fresh again, so one memo serves any graph.
 */
#pragma once

#include <glib.h>

typedef struct {
    char *from;
    guint32 value;
} CostMemo;

/* An empty memo (a GArray of CostMemo that frees its strings). */
GArray *cost_memo_new(void);

/* The entry of string id `id` in `memo`, valid for `str`; *fresh when it was (re)made for it
 * and the caller must fill its value. */
CostMemo *cost_memo_entry(GArray *memo, guint32 id, const char *str, gboolean *fresh);
