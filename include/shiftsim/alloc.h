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

G_END_DECLS
