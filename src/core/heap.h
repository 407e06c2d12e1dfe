/*
 * One binary min-heap for every priority queue of the simulator: the engine's events, the
 * network's flow completions and its solver's links, Chakra's topological ready set.
 *
 * SSIM_HEAP_DEFINE(Heap, prefix, Elem, Ctx, LESS, MOVED) instantiates a heap of Elem values, in
 * the manner of libuv's heap-inl.h but over an array and by value, so there is no function
 * pointer anywhere: every operation is a static inline function the compiler can specialise.
 *
 *   Heap    the type it defines: struct { Elem *v; gsize n, cap; }, zero-initialised empty;
 *           v[0] is the minimum when n > 0, and the caller may read v[] and n but writes only
 *           through the functions below (or sets n = 0 to empty it, keeping the memory).
 *   prefix  the functions' prefix: prefix_push(), prefix_pop(), ...
 *   Elem    the element type, copied by value (keep it small: a key and an index).
 *   Ctx     a context type passed to LESS and MOVED, e.g. the owner whose arrays the keys live in
 *           (gpointer and NULL when unused).
 *   LESS    LESS(ctx, const Elem *a, const Elem *b) is nonzero when a comes before b; pop() may
 *           also call it on the element it is removing (its result then discarded).
 *   MOVED   MOVED(ctx, const Elem *e, gsize i) is called whenever an element is stored at index
 *           i, so elements that track their position (flows, to re-sift or remove themselves)
 *           can record it; SSIM_HEAP_NO_POS when they do not.
 *
 * Invariant: LESS(v[(i - 1) / 2], v[i]) or they are equal, for 0 < i < n, and when MOVED
 * records positions, each element's recorded position is its index.  The storage grows by
 * doubling in push() and is never shrunk, so a heap that has reached its peak allocates nothing.
 *
 * Determinism contract.  LESS must be a strict total order on the elements present at any one
 * time: no two of them may compare equal, so every tie is broken by a last key that is unique
 * (a sequence number, an id, an index).  The minimum is then unique, and the sequence of
 * elements pop() returns depends only on which elements were pushed, updated and removed, never
 * on the heap's shape, on the order of pushes or on how a sift picks between two children.  That
 * is what makes a run reproducible, and what let four hand-written heaps become this one without
 * changing a single simulated time.  The users and their tie-breaks: the engine (time, sequence),
 * the network's completions (end time, flow id) and its solver (share, link index), Chakra's
 * ready set (node id, unique in a trace), the causal issue order's units (hops, then position
 * and rank of a member, unique).
 *
 * Costs: push, pop, replace_top, remove_at and update_at are O(log n) moves of one element each.
 * Sift-down picks the smaller child without a branch (which of the two is smaller is
 * unpredictable, and a mispredicted branch costs more than the compare), and every sift holds the
 * moving element aside until its place is found, so each level costs one copy.
 */
#pragma once

#include <glib.h>

/* MOVED for heaps whose elements do not track their position. */
#define SSIM_HEAP_NO_POS(ctx, elem, i) ((void)0)

#define SSIM_HEAP_DEFINE(Heap, prefix, Elem, Ctx, LESS, MOVED)                                     \
    typedef struct {                                                                               \
        Elem *v;                                                                                   \
        gsize n, cap;                                                                              \
    } Heap;                                                                                        \
                                                                                                   \
    /* Frees the storage; the heap is empty and may be used again. */                              \
    static inline void prefix##_clear(Heap *h)                                                     \
    {                                                                                              \
        g_free(h->v);                                                                              \
        *h = (Heap){0};                                                                            \
    }                                                                                              \
    G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Heap, prefix##_clear)                                         \
                                                                                                   \
    /* Makes room for `n` elements, so that pushes up to that size never allocate. */              \
    static inline void prefix##_reserve(Heap *h, gsize n)                                          \
    {                                                                                              \
        if (n > h->cap) {                                                                          \
            h->v = g_renew(Elem, h->v, n);                                                         \
            h->cap = n;                                                                            \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Stores x at i, recording its position. */                                                   \
    static inline void prefix##_store(Heap *h, gsize i, Elem x, Ctx ctx)                           \
    {                                                                                              \
        (void)ctx;                                                                                 \
        h->v[i] = x;                                                                               \
        MOVED(ctx, &h->v[i], i);                                                                   \
    }                                                                                              \
                                                                                                   \
    /* Places x, which belongs at or above the hole i, moving larger parents down. */              \
    static inline void prefix##_place_up(Heap *h, gsize i, Elem x, Ctx ctx)                        \
    {                                                                                              \
        while (i > 0) {                                                                            \
            gsize parent = (i - 1) / 2;                                                            \
            if (!LESS(ctx, &x, &h->v[parent]))                                                     \
                break;                                                                             \
            prefix##_store(h, i, h->v[parent], ctx);                                               \
            i = parent;                                                                            \
        }                                                                                          \
        prefix##_store(h, i, x, ctx);                                                              \
    }                                                                                              \
                                                                                                   \
    /* Places x, which belongs at or below the hole i, moving smaller children up.  The smaller    \
     * child is picked without a branch: a missing right child is masked out of the compare.       \
     * When `tail` is set, v[n] still holds the element pop() has just moved out, so the missing   \
     * right child can be read there (its address needs no compare, which shortens each level);    \
     * otherwise it is the left child itself, which the irreflexive LESS never picks. */           \
    static inline void prefix##_place_down(Heap *h, gsize i, Elem x, Ctx ctx, gboolean tail)       \
    {                                                                                              \
        gsize n = h->n;                                                                            \
        for (;;) {                                                                                 \
            gsize child = 2 * i + 1;                                                               \
            if (child >= n)                                                                        \
                break;                                                                             \
            gsize right = tail ? child + 1 : child + (gsize)(child + 1 < n);                       \
            child += (gsize)((child + 1 < n) & (LESS(ctx, &h->v[right], &h->v[child]) != 0));      \
            if (!LESS(ctx, &h->v[child], &x))                                                      \
                break;                                                                             \
            prefix##_store(h, i, h->v[child], ctx);                                                \
            i = child;                                                                             \
        }                                                                                          \
        prefix##_store(h, i, x, ctx);                                                              \
    }                                                                                              \
                                                                                                   \
    /* Restores the invariant after the key of v[i] decreased. */                                  \
    static inline void prefix##_sift_up(Heap *h, gsize i, Ctx ctx)                                 \
    {                                                                                              \
        prefix##_place_up(h, i, h->v[i], ctx);                                                     \
    }                                                                                              \
                                                                                                   \
    /* Restores the invariant after the key of v[i] increased. */                                  \
    static inline void prefix##_sift_down(Heap *h, gsize i, Ctx ctx)                               \
    {                                                                                              \
        prefix##_place_down(h, i, h->v[i], ctx, FALSE);                                            \
    }                                                                                              \
                                                                                                   \
    /* Restores the invariant after the key of v[i] changed either way. */                         \
    static inline void prefix##_update_at(Heap *h, gsize i, Ctx ctx)                               \
    {                                                                                              \
        Elem x = h->v[i];                                                                          \
        if (i > 0 && LESS(ctx, &x, &h->v[(i - 1) / 2]))                                            \
            prefix##_place_up(h, i, x, ctx);                                                       \
        else                                                                                       \
            prefix##_place_down(h, i, x, ctx, FALSE);                                              \
    }                                                                                              \
                                                                                                   \
    /* Adds x, growing the storage (by doubling) when it is full. */                               \
    static inline void prefix##_push(Heap *h, Elem x, Ctx ctx)                                     \
    {                                                                                              \
        if (G_UNLIKELY(h->n == h->cap))                                                            \
            prefix##_reserve(h, h->cap ? 2 * h->cap : 64);                                         \
        prefix##_place_up(h, h->n++, x, ctx);                                                      \
    }                                                                                              \
                                                                                                   \
    /* Removes and returns the minimum; the heap must not be empty. */                             \
    static inline Elem prefix##_pop(Heap *h, Ctx ctx)                                              \
    {                                                                                              \
        Elem top = h->v[0];                                                                        \
        Elem last = h->v[--h->n];                                                                  \
        if (h->n > 0)                                                                              \
            prefix##_place_down(h, 0, last, ctx, TRUE);                                            \
        return top;                                                                                \
    }                                                                                              \
                                                                                                   \
    /* Replaces the minimum by x in one sift (a pop and a push); the heap must not be empty. */    \
    static inline Elem prefix##_replace_top(Heap *h, Elem x, Ctx ctx)                              \
    {                                                                                              \
        Elem top = h->v[0];                                                                        \
        prefix##_place_down(h, 0, x, ctx, FALSE);                                                  \
        return top;                                                                                \
    }                                                                                              \
                                                                                                   \
    /* Removes and returns v[i] (i < n); the last element fills its place. */                      \
    static inline Elem prefix##_remove_at(Heap *h, gsize i, Ctx ctx)                               \
    {                                                                                              \
        Elem x = h->v[i];                                                                          \
        Elem last = h->v[--h->n];                                                                  \
        if (i < h->n) {                                                                            \
            h->v[i] = last;                                                                        \
            prefix##_update_at(h, i, ctx);                                                         \
        }                                                                                          \
        return x;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* TRUE when the order invariant holds (for tests and assertions). */                          \
    static inline gboolean prefix##_check(const Heap *h, Ctx ctx)                                  \
    {                                                                                              \
        (void)ctx;                                                                                 \
        for (gsize i = 1; i < h->n; i++)                                                           \
            if (LESS(ctx, &h->v[i], &h->v[(i - 1) / 2]))                                           \
                return FALSE;                                                                      \
        return TRUE;                                                                               \
    }
