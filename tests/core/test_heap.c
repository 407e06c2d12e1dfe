/*
 * The generic heap (src/core/heap.h) against an independent reference: a GSequence kept sorted
 * by the same (key, id) order, under random pushes, pops, replace-tops, removals and key updates
 * with many equal keys; after every step the heap's order invariant and every element's recorded
 * position are checked.  Also the determinism contract: the same elements pushed in any order
 * come out in the same order.
 */
#include <criterion/criterion.h>
#include <glib.h>

#include "src/core/heap.h"

#define MAX_ID 512

/* The elements are ids; their keys and recorded positions live in the context. */
typedef struct {
    guint key[MAX_ID];
    gsize pos[MAX_ID]; /* G_MAXSIZE when not in the heap */
} World;

static inline gboolean id_before(World *w, const guint32 *a, const guint32 *b)
{
    return w->key[*a] < w->key[*b] || (w->key[*a] == w->key[*b] && *a < *b);
}

static inline void id_moved(World *w, const guint32 *id, gsize i)
{
    w->pos[*id] = i;
}

SSIM_HEAP_DEFINE(IdHeap, id_heap, guint32, World *, id_before, id_moved)

/* The reference stores ids as pointers and sorts them by the same order. */
static gint ref_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    guint32 x = GPOINTER_TO_UINT(a), y = GPOINTER_TO_UINT(b);
    return id_before(data, &x, &y) ? -1 : id_before(data, &y, &x) ? 1 : 0;
}

static void check_heap(const IdHeap *h, World *w, GSequence *ref)
{
    cr_assert(id_heap_check(h, w));
    cr_assert_eq(h->n, (gsize)g_sequence_get_length(ref));
    for (gsize i = 0; i < h->n; i++)
        cr_assert_eq(w->pos[h->v[i]], i, "id %u recorded at %zu, found at %zu", h->v[i],
                     w->pos[h->v[i]], i);
    if (h->n > 0)
        cr_assert_eq(h->v[0], GPOINTER_TO_UINT(g_sequence_get(g_sequence_get_begin_iter(ref))));
}

/* Removes id from the reference (found by the order, which is strict). */
static void ref_remove(GSequence *ref, World *w, guint32 id)
{
    GSequenceIter *it = g_sequence_lookup(ref, GUINT_TO_POINTER(id), ref_cmp, w);
    cr_assert_not_null(it);
    g_sequence_remove(it);
}

Test(heap, matches_gsequence_reference_under_every_operation)
{
    for (guint32 seed = 1; seed <= 8; seed++) {
        World *w = g_new0(World, 1);
        for (guint i = 0; i < MAX_ID; i++)
            w->pos[i] = G_MAXSIZE;
        g_auto(IdHeap) h = {0};
        GSequence *ref = g_sequence_new(NULL);
        GRand *rng = g_rand_new_with_seed(seed);
        guint n_keys = seed % 2 ? 8 : 1000; /* few distinct keys: ties everywhere */
        for (guint step = 0; step < 20000; step++) {
            guint32 id = (guint32)g_rand_int_range(rng, 0, MAX_ID);
            gboolean in = w->pos[id] != G_MAXSIZE;
            switch (g_rand_int_range(rng, 0, 5)) {
            case 0: /* push (or, when present, update its key) */
                if (in) {
                    ref_remove(ref, w, id);
                    w->key[id] = (guint)g_rand_int_range(rng, 0, (gint32)n_keys);
                    id_heap_update_at(&h, w->pos[id], w);
                } else {
                    w->key[id] = (guint)g_rand_int_range(rng, 0, (gint32)n_keys);
                    id_heap_push(&h, id, w);
                }
                g_sequence_insert_sorted(ref, GUINT_TO_POINTER(id), ref_cmp, w);
                break;
            case 1: /* pop */
                if (h.n > 0) {
                    GSequenceIter *first = g_sequence_get_begin_iter(ref);
                    guint32 want = GPOINTER_TO_UINT(g_sequence_get(first));
                    g_sequence_remove(first);
                    guint32 got = id_heap_pop(&h, w);
                    cr_assert_eq(got, want, "seed %u step %u", seed, step);
                    w->pos[got] = G_MAXSIZE;
                }
                break;
            case 2: /* replace the top by an absent id */
                if (h.n > 0 && !in) {
                    GSequenceIter *first = g_sequence_get_begin_iter(ref);
                    guint32 want = GPOINTER_TO_UINT(g_sequence_get(first));
                    g_sequence_remove(first);
                    w->key[id] = (guint)g_rand_int_range(rng, 0, (gint32)n_keys);
                    cr_assert_eq(id_heap_replace_top(&h, id, w), want);
                    w->pos[want] = G_MAXSIZE;
                    g_sequence_insert_sorted(ref, GUINT_TO_POINTER(id), ref_cmp, w);
                }
                break;
            case 3: /* remove wherever it is */
                if (in) {
                    ref_remove(ref, w, id);
                    cr_assert_eq(id_heap_remove_at(&h, w->pos[id], w), id);
                    w->pos[id] = G_MAXSIZE;
                }
                break;
            case 4: /* lower or raise a key in place with the explicit sifts */
                if (in) {
                    ref_remove(ref, w, id);
                    guint old = w->key[id];
                    w->key[id] = (guint)g_rand_int_range(rng, 0, (gint32)n_keys);
                    if (w->key[id] >= old)
                        id_heap_sift_down(&h, w->pos[id], w);
                    else
                        id_heap_sift_up(&h, w->pos[id], w);
                    g_sequence_insert_sorted(ref, GUINT_TO_POINTER(id), ref_cmp, w);
                }
                break;
            }
            check_heap(&h, w, ref);
        }
        /* Drain: the rest comes out in the reference's order. */
        while (h.n > 0) {
            GSequenceIter *first = g_sequence_get_begin_iter(ref);
            cr_assert_eq(id_heap_pop(&h, w), GPOINTER_TO_UINT(g_sequence_get(first)));
            g_sequence_remove(first);
        }
        g_rand_free(rng);
        g_sequence_free(ref);
        g_free(w);
    }
}

/* Plain values, no positions, no context: the engine's and the solver's kind of heap. */
typedef struct {
    guint key;
    guint32 id;
} Pair;

static inline int pair_before(gpointer ctx, const Pair *a, const Pair *b)
{
    (void)ctx;
    return (a->key < b->key) | ((a->key == b->key) & (a->id < b->id));
}

SSIM_HEAP_DEFINE(PairHeap, pair_heap, Pair, gpointer, pair_before, SSIM_HEAP_NO_POS)

Test(heap, pop_order_depends_only_on_the_elements)
{
    enum { N = 2000 };
    Pair items[N];
    GRand *rng = g_rand_new_with_seed(7);
    for (guint32 i = 0; i < N; i++)
        items[i] = (Pair){(guint)g_rand_int_range(rng, 0, 16), i};
    guint32 first_order[N];
    for (guint round = 0; round < 4; round++) {
        /* Shuffle, push everything, pop everything. */
        for (guint i = N - 1; i > 0; i--) {
            guint j = (guint)g_rand_int_range(rng, 0, (gint32)i + 1);
            Pair t = items[i];
            items[i] = items[j];
            items[j] = t;
        }
        g_auto(PairHeap) h = {0};
        if (round % 2)
            pair_heap_reserve(&h, N); /* storage size must not matter either */
        for (guint i = 0; i < N; i++)
            pair_heap_push(&h, items[i], NULL);
        Pair prev = {0, 0};
        for (guint i = 0; i < N; i++) {
            Pair p = pair_heap_pop(&h, NULL);
            if (i > 0)
                cr_assert(pair_before(NULL, &prev, &p));
            if (round == 0)
                first_order[i] = p.id;
            else
                cr_assert_eq(p.id, first_order[i]);
            prev = p;
        }
        cr_assert_eq(h.n, 0);
    }
    g_rand_free(rng);
}
