/*
 * An ordered pipeline: items 0 .. n - 1 are produced on several threads and consumed on the
 * calling thread in item order, each as soon as it and those before it are ready.  The Chakra
 * loader decodes traces this way and emits them into the graph in rank order
 * (src/import/chakra.c); the trace writer encodes chunks of ops and writes them in op order
 * (src/out/trace.c).
 *
 * The threads are n_threads - 1 GLib pool workers and the calling thread, which produces while
 * the item it must consume next is not ready (n_threads threads keep n_threads cores busy).
 * Items are claimed in order, under a lock, and at most `window` of them past the next one to
 * consume, so the memory they hold is bounded whatever n is; `claim` (optional) runs then, in
 * item order, for what an item's production depends on the items before it.  What is consumed,
 * and in which order, does not depend on the thread count; only who produced what does.
 */
#pragma once

#include <glib.h>

typedef struct {
    gpointer data;
    /* Under the lock, in item order, when item k is claimed (may be NULL). */
    void (*claim)(gpointer data, guint k);
    /* On any of the threads, without the lock: makes item k; `scratch` is the thread's own. */
    void (*produce)(gpointer data, guint k, gpointer scratch);
    /* On the calling thread, in item order: takes item k.  FALSE stops the pipeline: nothing is
     * claimed or consumed after it (what is being produced finishes first). */
    gboolean (*consume)(gpointer data, guint k);
    /* Each thread's scratch for `produce`, made on its first item and freed at its end (both
     * may be NULL: scratch is then NULL). */
    gpointer (*scratch_new)(gpointer data);
    void (*scratch_free)(gpointer scratch);
} SsimOrdered;

/* The threads to use for n items when `requested` are asked (0: one per core): 1 to n. */
guint ssim_ordered_threads(guint requested, guint n);

/* Runs `job` over n items on n_threads threads (ssim_ordered_threads()) with `window` items
 * claimed ahead of consumption at most (>= 1); TRUE when every item was consumed, FALSE when
 * `consume` stopped it. */
gboolean ssim_ordered_run(const SsimOrdered *job, guint n, guint n_threads, guint window);
