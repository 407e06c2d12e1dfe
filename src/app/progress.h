/*
 * Progress of a long verb (sweep, calibrate, validate) on stderr, with an ETA weighted by the
 * estimated work (src/app/progress.c).
 *
 * A verb says how many items it has done of how many (configurations, runs, loss evaluations)
 * and how much of the estimated work that was: the ops of what was simulated (include/shiftsim/
 * budget.h), where an item rejected before it is simulated (illegal, does not fit) weighs about
 * nothing and is taken out of the total.  The ETA is elapsed x (work left / work done): counting
 * items instead, a sweep whose first thousand rejections took microseconds each promised to end
 * seconds before its simulations started.
 *
 * On a terminal the line is redrawn in place ('\r', at most five times a second); otherwise a
 * line is written every `interval` seconds (10 by default), so a log holds a few lines rather
 * than thousands.  Quiet (-q) writes nothing.  The clock, the stream and whether it is a
 * terminal can be set (tests use a fake clock and a memory stream; nothing here sleeps).
 * Updates may come from several threads: a mutex orders them.
 *
 * Ownership: ssim_progress_new() returns what the caller frees with ssim_progress_free()
 * (g_autoptr works); the stream is borrowed (stderr by default).
 */
#pragma once

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

typedef struct SsimProgress SsimProgress;

/* Seconds on a monotonic clock (g_get_monotonic_time() unless set). */
typedef double (*SsimProgressClock)(gpointer data);

/* `what` leads each line ("shiftsim sweep"); `unit` names the items ("configurations"). */
SsimProgress *ssim_progress_new(const char *what, const char *unit, gboolean quiet);
void ssim_progress_free(SsimProgress *progress);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimProgress, ssim_progress_free)

/* Where lines go and whether that is a terminal (default stderr, isatty(stderr)). */
void ssim_progress_set_output(SsimProgress *progress, FILE *stream, gboolean tty);
/* The clock; the elapsed time counts from this call. */
void ssim_progress_set_clock(SsimProgress *progress, SsimProgressClock clock, gpointer data);
/* Seconds between two lines when the output is not a terminal (default 10). */
void ssim_progress_set_interval(SsimProgress *progress, double seconds);

/*
 * `done` of `total` items, `work_done` of `work_total` estimated work (any unit; the same for
 * both).  Draws (terminal) or writes a line when its interval has passed since the last one;
 * done == total is the end, drawn at once (and ends the terminal line).
 */
void ssim_progress_update(SsimProgress *progress, guint done, guint total, double work_done,
                          double work_total);

/*
 * Counting kept here instead of by the caller: ssim_progress_set_total() sets the items and
 * their work; each ssim_progress_add() is one item done, its `work` done when `simulated`, else
 * taken out of the total (a rejected item).  Draws as ssim_progress_update() does, but never the
 * end (a total that was estimated short grows by one): ssim_progress_finish() draws that.
 */
void ssim_progress_set_total(SsimProgress *progress, guint total, double work_total);
void ssim_progress_add(SsimProgress *progress, double work, gboolean simulated);
/* The end of ssim_progress_add()'s counting: the last line (done = total). */
void ssim_progress_finish(SsimProgress *progress);
/* A new estimate of what is left (`items` and their `work`), keeping what is done. */
void ssim_progress_set_remaining(SsimProgress *progress, guint items, double work);
/* ssim_progress_add() as a run set's progress callback (runset.h; `user` the SsimProgress). */
void ssim_progress_run_set_cb(double work, gboolean simulated, gpointer user);

/* Seconds left when `work_done` of `work_total` took `elapsed` seconds: elapsed x (work_total -
 * work_done) / work_done; 0 when nothing is left, -1 when nothing is done yet (unknown). */
double ssim_progress_eta(double elapsed, double work_done, double work_total);

/* "0:05", "12:34", "1:02:03", or "?" for a negative (unknown) time; `buf` holds 32 bytes. */
const char *ssim_progress_format_time(double seconds, char buf[32]);

G_END_DECLS
