/*
 * Progress lines with a work-weighted ETA (src/app/progress.h).
 *
 * State: the start time, when a line was last written, and whether a terminal line is open
 * (drawn without its newline yet).  Invariants: nothing is written when quiet; a terminal line is
 * closed with a newline exactly once, at the end; a non-terminal line is never written more
 * often than the interval, except the end, which is written when a line was written before (a
 * run short enough to write none stays silent, as a quick verb should).
 */
#include "src/app/progress.h"

#include <math.h>
#include <unistd.h>

#define TTY_REDRAW_S 0.2

struct SsimProgress {
    char *what, *unit;
    gboolean quiet, tty;
    FILE *stream;
    SsimProgressClock clock;
    gpointer clock_data;
    double start, last, interval;
    gboolean drawn;    /* something was written */
    gboolean open;     /* a terminal line without its newline */
    gboolean closed;   /* the end was written */
    guint done, total; /* ssim_progress_add()'s counts */
    double work_done, work_total;
    GMutex lock;
};

static double monotonic_seconds(gpointer data)
{
    (void)data;
    return (double)g_get_monotonic_time() / 1e6;
}

SsimProgress *ssim_progress_new(const char *what, const char *unit, gboolean quiet)
{
    SsimProgress *p = g_new0(SsimProgress, 1);
    p->what = g_strdup(what);
    p->unit = g_strdup(unit);
    p->quiet = quiet;
    p->stream = stderr;
    p->tty = isatty(STDERR_FILENO) == 1;
    p->clock = monotonic_seconds;
    p->interval = 10.0;
    p->start = p->last = p->clock(NULL);
    g_mutex_init(&p->lock);
    return p;
}

void ssim_progress_free(SsimProgress *p)
{
    if (p == NULL)
        return;
    g_mutex_clear(&p->lock);
    g_free(p->what);
    g_free(p->unit);
    g_free(p);
}

void ssim_progress_set_output(SsimProgress *p, FILE *stream, gboolean tty)
{
    p->stream = stream;
    p->tty = tty;
}

void ssim_progress_set_clock(SsimProgress *p, SsimProgressClock clock, gpointer data)
{
    p->clock = clock;
    p->clock_data = data;
    p->start = p->last = clock(data);
}

void ssim_progress_set_interval(SsimProgress *p, double seconds)
{
    p->interval = seconds;
}

double ssim_progress_eta(double elapsed, double work_done, double work_total)
{
    double left = work_total - work_done;
    if (!(left > 0))
        return 0;
    if (!(work_done > 0) || !(elapsed >= 0))
        return -1;
    return elapsed * left / work_done;
}

const char *ssim_progress_format_time(double seconds, char buf[32])
{
    if (!(seconds >= 0) || seconds > 1e9) {
        g_strlcpy(buf, "?", 32);
        return buf;
    }
    guint64 s = (guint64)llround(seconds);
    if (s >= 3600)
        g_snprintf(buf, 32, "%" G_GUINT64_FORMAT ":%02u:%02u", s / 3600, (guint)(s / 60 % 60),
                   (guint)(s % 60));
    else
        g_snprintf(buf, 32, "%u:%02u", (guint)(s / 60), (guint)(s % 60));
    return buf;
}

/* Draws or writes a line if one is due (the lock held). */
static void draw(SsimProgress *p, guint done, guint total, double work_done, double work_total)
{
    double now = p->clock(p->clock_data), elapsed = now - p->start;
    gboolean end = done >= total;
    gboolean due = p->tty ? now - p->last >= TTY_REDRAW_S : now - p->last >= p->interval;
    if (p->closed || (!end && !due) || (end && !p->tty && !p->drawn))
        return;
    /* The share of the work, not of the items: what the ETA is computed from. */
    double share = end ? 1.0 : work_total > 0 ? CLAMP(work_done / work_total, 0.0, 1.0) : 0.0;
    char eta[32], spent[32];
    ssim_progress_format_time(end ? 0 : ssim_progress_eta(elapsed, work_done, work_total), eta);
    ssim_progress_format_time(elapsed, spent);
    if (p->tty) {
        enum { WIDTH = 30 };
        char bar[WIDTH + 1];
        guint fill = (guint)(share * WIDTH);
        for (guint i = 0; i < WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(p->stream, "\r%s [%s] %u/%u %s %3.0f%%  %s  ETA %s ", p->what, bar, done, total,
                p->unit, 100.0 * share, spent, eta);
        p->open = TRUE;
        if (end) {
            fputc('\n', p->stream);
            p->open = FALSE;
        }
    } else {
        fprintf(p->stream, "%s: %u/%u %s, %.0f%% of the estimated work, %s elapsed, ETA %s\n",
                p->what, done, total, p->unit, 100.0 * share, spent, eta);
    }
    fflush(p->stream);
    p->drawn = TRUE;
    p->last = now;
    p->closed = end;
}

void ssim_progress_update(SsimProgress *p, guint done, guint total, double work_done,
                          double work_total)
{
    if (p == NULL || p->quiet)
        return;
    g_mutex_lock(&p->lock);
    draw(p, done, total, work_done, work_total);
    g_mutex_unlock(&p->lock);
}

void ssim_progress_set_total(SsimProgress *p, guint total, double work_total)
{
    g_mutex_lock(&p->lock);
    p->done = 0;
    p->total = total;
    p->work_done = 0;
    p->work_total = work_total;
    g_mutex_unlock(&p->lock);
}

void ssim_progress_set_remaining(SsimProgress *p, guint items, double work)
{
    g_mutex_lock(&p->lock);
    p->total = p->done + items;
    p->work_total = p->work_done + work;
    g_mutex_unlock(&p->lock);
}

void ssim_progress_add(SsimProgress *p, double work, gboolean simulated)
{
    if (p == NULL)
        return;
    g_mutex_lock(&p->lock);
    /* Only ssim_progress_finish() ends the line: a short estimate grows instead. */
    p->done++;
    p->total = MAX(p->total, p->done + 1);
    if (simulated)
        p->work_done += work;
    else
        p->work_total -= work;
    /* Work past its estimate: what is left is taken at the mean work of an item so far. */
    if (p->work_done >= p->work_total && p->done > 0)
        p->work_total = p->work_done + p->work_done / p->done * (p->total - p->done);
    if (!p->quiet)
        draw(p, p->done, p->total, p->work_done, MAX(p->work_total, p->work_done));
    g_mutex_unlock(&p->lock);
}

void ssim_progress_finish(SsimProgress *p)
{
    if (p == NULL || p->quiet)
        return;
    g_mutex_lock(&p->lock);
    guint n = MAX(p->done, 1u);
    draw(p, n, n, p->work_done, p->work_done);
    g_mutex_unlock(&p->lock);
}

void ssim_progress_run_set_cb(double work, gboolean simulated, gpointer user)
{
    ssim_progress_add(user, work, simulated);
}
