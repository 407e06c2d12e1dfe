/*
 * The ordered pipeline (src/core/ordered.h).
 *
 * One lock and one condition: every thread loops over "consume the next item if it is ready (the
 * calling thread only), else claim and produce one, else wait".  Item k's readiness is a flag in
 * slot k % window, cleared when k is claimed; k may only be claimed once k - window has been
 * consumed, so a slot holds one item at a time.
 */
#include "src/core/ordered.h"

typedef struct {
    const SsimOrdered *job;
    guint n, window;
    gboolean *ready; /* per slot: its item is produced */
    guint claimed, consumed;
    gboolean stop, failed;
    GMutex lock;
    GCond changed;
} Ordered;

guint ssim_ordered_threads(guint requested, guint n)
{
    guint t = requested ? requested : g_get_num_processors();
    return CLAMP(t, 1u, MAX(n, 1u));
}

/* Under the lock: the next item to produce in *k, or FALSE when none may be claimed now. */
static gboolean claim(Ordered *o, guint *k)
{
    if (o->stop || o->claimed >= o->n || o->claimed >= o->consumed + o->window)
        return FALSE;
    *k = o->claimed++;
    o->ready[*k % o->window] = FALSE;
    if (o->job->claim)
        o->job->claim(o->job->data, *k);
    return TRUE;
}

/* A thread's loop (`consumer`: the calling thread's), from start to stop. */
static void work(Ordered *o, gboolean consumer)
{
    const SsimOrdered *job = o->job;
    gpointer scratch = NULL;
    gboolean have_scratch = FALSE;
    g_mutex_lock(&o->lock);
    while (!o->stop) {
        guint k;
        if (consumer && o->claimed > o->consumed && o->ready[o->consumed % o->window]) {
            g_mutex_unlock(&o->lock);
            gboolean ok = job->consume(job->data, o->consumed);
            g_mutex_lock(&o->lock);
            o->consumed++;
            o->failed = !ok;
            o->stop = !ok || o->consumed == o->n;
            g_cond_broadcast(&o->changed);
        } else if (claim(o, &k)) {
            g_mutex_unlock(&o->lock);
            if (!have_scratch && job->scratch_new)
                scratch = job->scratch_new(job->data);
            have_scratch = TRUE;
            job->produce(job->data, k, scratch);
            g_mutex_lock(&o->lock);
            o->ready[k % o->window] = TRUE;
            g_cond_broadcast(&o->changed);
        } else if (!consumer && o->claimed >= o->n) {
            break;
        } else {
            g_cond_wait(&o->changed, &o->lock);
        }
    }
    g_mutex_unlock(&o->lock);
    if (scratch && job->scratch_free)
        job->scratch_free(scratch);
}

static void worker(gpointer item, gpointer user)
{
    (void)item;
    work(user, FALSE);
}

gboolean ssim_ordered_run(const SsimOrdered *job, guint n, guint n_threads, guint window)
{
    g_return_val_if_fail(job && job->produce && job->consume, FALSE);
    if (n == 0)
        return TRUE;
    n_threads = ssim_ordered_threads(n_threads, n);
    Ordered o = {.job = job, .n = n, .window = MAX(window, 1u)};
    o.ready = g_new0(gboolean, o.window);
    g_mutex_init(&o.lock);
    g_cond_init(&o.changed);
    GThreadPool *pool = NULL;
    if (n_threads > 1) {
        pool = g_thread_pool_new(worker, &o, (gint)n_threads - 1, FALSE, NULL);
        for (guint t = 1; t < n_threads; t++)
            g_thread_pool_push(pool, GUINT_TO_POINTER(t), NULL);
    }
    work(&o, TRUE);
    if (pool)
        g_thread_pool_free(pool, FALSE, TRUE);
    g_mutex_clear(&o.lock);
    g_cond_clear(&o.changed);
    g_free(o.ready);
    return !o.failed;
}
