/*
 * Allocation of the large arrays whose length grows with the op count (plan ops, graph ops and
 * edges, runtime state, timelines).
 *
 * Why a module for this: a lowering of a million ops touches a few hundred megabytes once, and
 * on a virtualised machine each first touch of a 4 KiB page costs a trap into the hypervisor;
 * measured on the development machine (bench-scale), half the processor time of a 1024-GPU
 * reduced step went to page faults.  These helpers ask the kernel for transparent huge pages
 * (madvise MADV_HUGEPAGE, honoured when /sys/kernel/mm/transparent_hugepage/enabled is
 * "madvise" or "always"), which takes 512 times fewer faults.  The advice is only a hint: where
 * it is not supported or refused the memory is ordinary, and nothing else changes, so results
 * never depend on it.  Small requests (under 2 MiB) are plain g_malloc.
 *
 * The module also answers how much memory the process holds (ssim_alloc_resident_bytes), for the
 * memory budget (budget.h, --max-memory) checked during a run.  Why not a count of the bytes
 * requested here: every large array is allocated here but freed by its owner with g_free() or
 * g_array_unref(), which no counter of ours sees, so a count would only grow (auto placement's
 * candidate graphs would be counted once each); and the arrays are reserved at the op estimate,
 * which errs high, so even a count of live reservations (glibc's mallinfo2) is up to twice what
 * the machine gives the run: untouched pages cost no memory.  The resident set is what fills
 * the machine, so that is the figure.
 *
 * Ownership: everything returned is freed with g_free() (arrays with g_array_unref/free).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* n * size bytes, zeroed when `zero`; aborts on overflow like g_new. */
gpointer ssim_alloc_large(gsize n, gsize size, gboolean zero);
#define ssim_new_large(T, n)  ((T *)ssim_alloc_large((n), sizeof(T), FALSE))
#define ssim_new0_large(T, n) ((T *)ssim_alloc_large((n), sizeof(T), TRUE))

/* A copy of `bytes` bytes of `src` (g_memdup2 for large arrays). */
gpointer ssim_memdup_large(gconstpointer src, gsize bytes);

/* g_array_sized_new(FALSE, FALSE, elt, reserve) with its storage advised as above. */
GArray *ssim_array_new_large(guint elt, gsize reserve);

/*
 * Appends for the arrays a builder fills one element at a time, a million times a run: a
 * GArray that is neither zero-terminated nor cleared, with `*cap` the number of elements it is
 * known to have room for (the reserve given to ssim_array_new_large, or 0).  While there is room
 * the new elements' slot is returned and `len` advanced in place, which is what
 * g_array_append_vals does but without its call and copy; when full, the array grows through
 * GLib (g_array_set_size to twice the length guarantees the room, then back to the length) and
 * `*cap` records the new room.  Returns a pointer to the `n` new (uninitialised) elements.
 */
void ssim_array_make_room(GArray *a, gsize *cap, guint n);
static inline gpointer ssim_array_push(GArray *a, gsize *cap, guint elt, guint n)
{
    if (G_UNLIKELY((gsize)a->len + n > *cap))
        ssim_array_make_room(a, cap, n);
    gpointer slot = a->data + (gsize)a->len * elt;
    a->len += n;
    return slot;
}

/* Advises [p, p + bytes) (the 2 MiB-aligned part inside it); a no-op for small ranges. */
void ssim_mem_advise(gpointer p, gsize bytes);

/*
 * For a program that runs many simulations one after another (shiftsim's main, the sweep
 * benchmark): asks glibc's allocator to keep what a simulation frees for the next instead of
 * giving it back to the kernel.  By default a block over 128 KiB (up to 32 MiB as the threshold
 * adapts) is mapped on its own and unmapped when freed, and a thread's arena trims its top, so
 * every configuration of a sweep faulted in and zeroed its arrays again: measured on the
 * planners' search (bench-sweep --search), a third of a configuration's processor time.  Blocks
 * up to 32 MiB (glibc's maximum for this setting) then come from the heap, and up to 1 GiB of
 * freed heap top is kept.  The price: the process's resident memory stays near its peak, which
 * is what --max-memory budgets anyway.  Process-wide, so the library never calls it itself; a
 * no-op without glibc.  Results never depend on it.
 */
void ssim_alloc_keep_freed_memory(void);

/* The process's resident set in bytes (all threads; /proc/self/statm, else getrusage's peak);
 * one small read: call it between phases, not per op.  In a build with AddressSanitizer, the
 * allocator's live bytes instead (the sanitizer's shadow and quarantine are not the program's). */
guint64 ssim_alloc_resident_bytes(void);

/* The memory this process may use: physical memory, or the cgroup's limit (memory.max, v2; or
 * memory.limit_in_bytes, v1) when that is lower.  0 when neither can be read. */
guint64 ssim_alloc_available_bytes(void);

G_END_DECLS
