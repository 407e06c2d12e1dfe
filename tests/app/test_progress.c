/*
 * The progress module (src/app/progress.c): the ETA arithmetic on a fake clock, the format of
 * the lines written when stderr is not a terminal and of the in-place line on one, the interval
 * between lines, quiet silence, and the weighting that makes a rejected item count for nothing.
 * No test sleeps or times anything: the clock is a variable the test advances.
 */
#include <criterion/criterion.h>

#include "src/app/progress.h"

#include <math.h>
#include <string.h>

static double fake_now(gpointer data)
{
    return *(double *)data;
}

/* A progress writing to a memory stream, on the fake clock `now`. */
static SsimProgress *progress_on(double *now, FILE *stream, gboolean tty, gboolean quiet)
{
    SsimProgress *p = ssim_progress_new("shiftsim test", "configurations", quiet);
    ssim_progress_set_output(p, stream, tty);
    ssim_progress_set_clock(p, fake_now, now);
    return p;
}

static char *contents(FILE *f)
{
    fflush(f);
    long len = ftell(f);
    char *text = g_malloc0((gsize)len + 1);
    rewind(f);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fseek(f, 0, SEEK_END);
    return text;
}

Test(progress, eta_arithmetic)
{
    /* A quarter of the work in 30 s: three quarters left take 90 s. */
    cr_assert_float_eq(ssim_progress_eta(30, 25, 100), 90, 1e-9);
    cr_assert_float_eq(ssim_progress_eta(30, 100, 100), 0, 1e-9);
    cr_assert_float_eq(ssim_progress_eta(30, 120, 100), 0, 1e-9, "overshoot: nothing left");
    cr_assert_float_eq(ssim_progress_eta(0, 0, 100), -1, 1e-9, "nothing done: unknown");
    char buf[32];
    cr_assert_str_eq(ssim_progress_format_time(5, buf), "0:05");
    cr_assert_str_eq(ssim_progress_format_time(754, buf), "12:34");
    cr_assert_str_eq(ssim_progress_format_time(3723, buf), "1:02:03");
    cr_assert_str_eq(ssim_progress_format_time(-1, buf), "?");
}

/*
 * The sweep: 1000 configurations, 900 rejected in microseconds and 100 simulated at a
 * second each.  Counting configurations, the first second (900 rejections and one simulation
 * done) promised the end in 0.1 s; weighted by work, it says 99 s, the truth.
 */
Test(progress, rejected_items_weigh_nothing)
{
    double now = 0;
    FILE *f = tmpfile();
    g_autoptr(SsimProgress) p = progress_on(&now, f, FALSE, FALSE);
    ssim_progress_set_interval(p, 1.0);
    ssim_progress_set_total(p, 1000, 1000 * 5e6); /* every item estimated at 5e6 ops */
    for (guint i = 0; i < 900; i++)
        ssim_progress_add(p, 5e6, FALSE);
    now = 1.0;
    ssim_progress_add(p, 5e6, TRUE);
    g_autofree char *text = contents(f);
    cr_assert_str_eq(text, "shiftsim test: 901/1000 configurations, 1% of the estimated work, "
                           "0:01 elapsed, ETA 1:39\n");
    double naive = 1.0 * (1000 - 901) / 901;
    cr_assert_lt(naive, 0.2, "what counting items would have said");
    fclose(f);
}

/* Not a terminal: one line per interval, the end line only after one was written. */
Test(progress, lines_every_interval)
{
    double now = 0;
    FILE *f = tmpfile();
    g_autoptr(SsimProgress) p = progress_on(&now, f, FALSE, FALSE);
    for (guint i = 1; i <= 30; i++) {
        now = i; /* one item a second, equal work */
        ssim_progress_update(p, i, 30, i, 30);
    }
    g_autofree char *text = contents(f);
    cr_assert_str_eq(text, "shiftsim test: 10/30 configurations, 33% of the estimated work, 0:10 "
                           "elapsed, ETA 0:20\n"
                           "shiftsim test: 20/30 configurations, 67% of the estimated work, 0:20 "
                           "elapsed, ETA 0:10\n"
                           "shiftsim test: 30/30 configurations, 100% of the estimated work, 0:30 "
                           "elapsed, ETA 0:00\n");
    fclose(f);

    /* A run shorter than the interval writes nothing at all. */
    now = 0;
    f = tmpfile();
    g_autoptr(SsimProgress) q = progress_on(&now, f, FALSE, FALSE);
    now = 3;
    ssim_progress_update(q, 5, 10, 5, 10);
    ssim_progress_update(q, 10, 10, 10, 10);
    g_autofree char *quick = contents(f);
    cr_assert_str_eq(quick, "");
    fclose(f);
}

/* A terminal: redrawn in place with '\r', ended by one newline. */
Test(progress, terminal_line_in_place)
{
    double now = 0;
    FILE *f = tmpfile();
    g_autoptr(SsimProgress) p = progress_on(&now, f, TRUE, FALSE);
    now = 0.1;
    ssim_progress_update(p, 1, 4, 1, 4); /* within 0.2 s of the start: not drawn */
    now = 1;
    ssim_progress_update(p, 2, 4, 1, 4);
    now = 2;
    ssim_progress_update(p, 4, 4, 4, 4);
    ssim_progress_update(p, 4, 4, 4, 4); /* after the end: nothing */
    g_autofree char *text = contents(f);
    cr_assert_str_eq(text, "\rshiftsim test [#######.......................] 2/4 configurations  "
                           "25%  0:01  ETA 0:03 "
                           "\rshiftsim test [##############################] 4/4 configurations "
                           "100%  0:02  ETA 0:00 \n");
    fclose(f);
}

/* -q: nothing, whatever happens. */
Test(progress, quiet_is_silent)
{
    double now = 0;
    FILE *f = tmpfile();
    g_autoptr(SsimProgress) p = progress_on(&now, f, TRUE, TRUE);
    ssim_progress_set_total(p, 3, 3);
    for (guint i = 0; i < 3; i++) {
        now += 60;
        ssim_progress_add(p, 1, TRUE);
    }
    ssim_progress_update(p, 3, 3, 3, 3);
    ssim_progress_finish(p);
    g_autofree char *text = contents(f);
    cr_assert_str_eq(text, "");
    fclose(f);
}

/* Counting by ssim_progress_add(): a short estimate grows instead of ending early, and the
 * end is ssim_progress_finish()'s. */
Test(progress, add_never_ends_the_line)
{
    double now = 0;
    FILE *f = tmpfile();
    g_autoptr(SsimProgress) p = progress_on(&now, f, FALSE, FALSE);
    ssim_progress_set_total(p, 2, 2);
    for (guint i = 0; i < 3; i++) {
        now += 10;
        ssim_progress_add(p, 1, TRUE);
    }
    ssim_progress_set_remaining(p, 0, 0);
    now += 10;
    ssim_progress_finish(p);
    g_autofree char *text = contents(f);
    cr_assert_str_eq(text,
                     "shiftsim test: 1/2 configurations, 50% of the estimated work, 0:10 elapsed, "
                     "ETA 0:10\n"
                     "shiftsim test: 2/3 configurations, 67% of the estimated work, 0:20 elapsed, "
                     "ETA 0:10\n"
                     "shiftsim test: 3/4 configurations, 75% of the estimated work, 0:30 elapsed, "
                     "ETA 0:10\n"
                     "shiftsim test: 3/3 configurations, 100% of the estimated work, 0:40 elapsed, "
                     "ETA 0:00\n");
    fclose(f);
}
