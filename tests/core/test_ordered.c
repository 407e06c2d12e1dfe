/*
 * The ordered pipeline (src/core/ordered.h): items are consumed in order whatever the thread
 * count and however long each takes to produce, never more than the window ahead of the consumer,
 * claims run in order, and a consumer that says stop stops the run.
 */
#include <criterion/criterion.h>

#include "src/core/ordered.h"

typedef struct {
    GMutex lock;
    guint window;
    guint claimed;          /* claims seen (in order) */
    guint consumed;         /* items consumed so far */
    guint max_ahead;        /* the most items produced past the consumer at once */
    guint produced_ahead;   /* produced, not yet consumed */
    guint stop_at;          /* consume returns FALSE for this item */
    guint *order;           /* the items in consumption order */
    guint64 *value;         /* what production made of each item */
    guint scratches, freed; /* scratch made and freed */
} Run;

static void on_claim(gpointer data, guint k)
{
    Run *r = data;
    g_mutex_lock(&r->lock);
    guint consumed = r->consumed;
    g_mutex_unlock(&r->lock);
    cr_assert_eq(k, r->claimed, "claim %u out of order (expected %u)", k, r->claimed);
    cr_assert_lt(k, consumed + r->window, "claim %u past the window", k);
    r->claimed++;
}

static void produce(gpointer data, guint k, gpointer scratch)
{
    Run *r = data;
    cr_assert_not_null(scratch);
    /* Uneven work, so that later items are often ready before earlier ones. */
    guint64 v = k;
    for (guint i = 0; i < (k % 7) * 20000; i++)
        v = v * 6364136223846793005ull + 1442695040888963407ull;
    r->value[k] = (k % 7) ? v : k;
    g_mutex_lock(&r->lock);
    r->produced_ahead++;
    r->max_ahead = MAX(r->max_ahead, r->produced_ahead);
    g_mutex_unlock(&r->lock);
}

static gboolean consume(gpointer data, guint k)
{
    Run *r = data;
    g_mutex_lock(&r->lock);
    r->produced_ahead--;
    r->order[r->consumed++] = k;
    g_mutex_unlock(&r->lock);
    return k != r->stop_at;
}

/* A thread's scratch remembers its run, to count itself out. */
static gpointer scratch_new(gpointer data)
{
    Run *r = data;
    g_mutex_lock(&r->lock);
    r->scratches++;
    g_mutex_unlock(&r->lock);
    Run **scratch = g_new(Run *, 1);
    *scratch = r;
    return scratch;
}

static void scratch_free(gpointer p)
{
    Run *r = *(Run **)p;
    g_mutex_lock(&r->lock);
    r->freed++;
    g_mutex_unlock(&r->lock);
    g_free(p);
}

static gboolean run(Run *r, guint n, guint threads, guint window, guint stop_at)
{
    *r = (Run){.window = window, .stop_at = stop_at};
    g_mutex_init(&r->lock);
    r->order = g_new0(guint, n + 1);
    r->value = g_new0(guint64, n + 1);
    SsimOrdered job = {.data = r,
                       .claim = on_claim,
                       .produce = produce,
                       .consume = consume,
                       .scratch_new = scratch_new,
                       .scratch_free = scratch_free};
    return ssim_ordered_run(&job, n, threads, window);
}

static void done(Run *r)
{
    g_free(r->order);
    g_free(r->value);
    g_mutex_clear(&r->lock);
}

Test(ordered, every_item_in_order_within_the_window)
{
    guint64 want[200];
    for (guint threads = 1; threads <= 5; threads++) {
        Run r;
        cr_assert(run(&r, 200, threads, 2 * threads, G_MAXUINT));
        cr_assert_eq(r.consumed, 200);
        cr_assert_eq(r.claimed, 200);
        for (guint k = 0; k < 200; k++) {
            cr_assert_eq(r.order[k], k, "%u threads: item %u consumed %u-th", threads, r.order[k],
                         k);
            if (threads == 1)
                want[k] = r.value[k];
            cr_assert_eq(r.value[k], want[k]);
        }
        cr_assert_leq(r.max_ahead, 2 * threads);
        cr_assert_leq(r.scratches, threads);
        cr_assert_eq(r.freed, r.scratches);
        done(&r);
    }
}

Test(ordered, a_consumer_that_stops_stops_the_run)
{
    for (guint threads = 1; threads <= 4; threads++) {
        Run r;
        cr_assert_not(run(&r, 100, threads, 3, 17));
        cr_assert_eq(r.consumed, 18, "%u threads: %u consumed", threads, r.consumed);
        cr_assert_leq(r.claimed, 18 + 3);
        cr_assert_eq(r.freed, r.scratches);
        done(&r);
    }
}

Test(ordered, no_items_and_the_thread_count)
{
    Run r;
    cr_assert(run(&r, 0, 4, 8, G_MAXUINT));
    cr_assert_eq(r.consumed, 0);
    cr_assert_eq(r.scratches, 0);
    done(&r);
    cr_assert_eq(ssim_ordered_threads(8, 3), 3);
    cr_assert_eq(ssim_ordered_threads(2, 100), 2);
    cr_assert_eq(ssim_ordered_threads(5, 0), 1);
    cr_assert_geq(ssim_ordered_threads(0, 1000), 1);
}
