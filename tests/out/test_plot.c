/*
 * Atomic plot rendering (plot.h, ssim_plot_render): a stand-in gnuplot on PATH writes whole,
 * truncated or no images, complains on stderr or fails, and the image is replaced only when
 * gnuplot's output is a whole PNG and it said nothing but warnings.  No real gnuplot needed.
 */
#include <criterion/criterion.h>
#include <shiftsim/output.h>
#include <shiftsim/plot.h>

#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A fake gnuplot: reads `set output 'PATH'` from its script and acts as $FAKE_GNUPLOT says. */
static const char fake[] =
    "#!/bin/sh\n"
    "out=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" \"$1\")\n"
    "png() { printf '\\211PNG\\r\\n\\032\\n'; printf 'body'; "
    "printf '\\000\\000\\000\\000IEND\\256B`\\202'; }\n"
    "case \"$FAKE_GNUPLOT\" in\n"
    "whole) png > \"$out\" ;;\n"
    "warn) png > \"$out\"; echo \"\\\"$1\\\" line 3: warning: empty y range\" >&2 ;;\n"
    "truncated) png | head -c 10 > \"$out\" ;;\n"
    "complain) png > \"$out\"; echo \"\\\"$1\\\" line 9: undefined variable: x\" >&2 ;;\n"
    "fail) : > \"$out\"; exit 1 ;;\n"
    "esac\n";

typedef struct {
    char *dir, *bin, *image;
} Fixture;

static void setup(Fixture *f, const char *mode)
{
    f->dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    f->bin = g_build_filename(f->dir, "bin", NULL);
    cr_assert_eq(g_mkdir(f->bin, 0700), 0);
    g_autofree char *exe = g_build_filename(f->bin, "gnuplot", NULL);
    cr_assert(g_file_set_contents(exe, fake, -1, NULL));
    cr_assert_eq(g_chmod(exe, 0700), 0);
    g_autofree char *path = g_strdup_printf("%s:%s", f->bin, g_getenv("PATH"));
    g_setenv("PATH", path, TRUE);
    g_setenv("FAKE_GNUPLOT", mode, TRUE);
    f->image = g_build_filename(f->dir, "plot.png", NULL);
    cr_assert(g_file_set_contents(f->image, "earlier image", -1, NULL));
}

static void teardown(Fixture *f)
{
    g_autofree char *gp = ssim_plot_sibling(f->image, ".gp");
    g_autofree char *exe = g_build_filename(f->bin, "gnuplot", NULL);
    g_unlink(gp);
    g_unlink(f->image);
    g_unlink(exe);
    g_rmdir(f->bin);
    g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
    const char *left = d ? g_dir_read_name(d) : NULL;
    cr_assert_null(left, "left behind in %s: %s", f->dir, left);
    g_rmdir(f->dir);
    g_free(f->dir);
    g_free(f->bin);
    g_free(f->image);
}

static gboolean render(Fixture *f, SsimPlotStatus *status, GError **error)
{
    g_autoptr(GString) gp = g_string_new("set terminal pngcairo\nset output ");
    ssim_plot_quote(gp, f->image);
    g_string_append(gp, "\nplot x\n");
    return ssim_plot_render(f->image, gp, status, error);
}

static char *image_text(const Fixture *f)
{
    char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(f->image, &text, &len, NULL));
    return text;
}

Test(plot_render, a_whole_png_replaces_the_image_and_the_script_names_the_image)
{
    Fixture f;
    setup(&f, "whole");
    SsimPlotStatus status = SSIM_PLOT_NO_GNUPLOT;
    GError *error = NULL;
    cr_assert(render(&f, &status, &error), "%s", error ? error->message : "");
    cr_assert_eq(status, SSIM_PLOT_RENDERED);
    g_autofree char *img = image_text(&f);
    cr_assert(g_str_has_prefix(img, "\x89PNG"));
    /* The .gp beside it re-renders to the image itself, not to the temporary. */
    g_autofree char *gp_path = ssim_plot_sibling(f.image, ".gp");
    g_autofree char *gp = NULL;
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    g_autofree char *want = g_strdup_printf("set output '%s'\n", f.image);
    cr_assert(strstr(gp, want), "%s", gp);
    cr_assert_eq(ssim_output_n_temporaries(), 0);
    teardown(&f);
}

Test(plot_render, warnings_alone_do_not_fail)
{
    Fixture f;
    setup(&f, "warn");
    SsimPlotStatus status;
    GError *error = NULL;
    cr_assert(render(&f, &status, &error), "%s", error ? error->message : "");
    teardown(&f);
}

/* What a full disk does to gnuplot: exit 0, no message, a cut PNG. */
Test(plot_render, a_truncated_png_is_refused_and_the_earlier_image_kept)
{
    Fixture f;
    setup(&f, "truncated");
    SsimPlotStatus status;
    GError *error = NULL;
    cr_assert_not(render(&f, &status, &error));
    cr_assert(strstr(error->message, "incomplete PNG"), "%s", error->message);
    cr_assert(g_str_has_prefix(error->message, f.image), "%s", error->message);
    g_clear_error(&error);
    g_autofree char *img = image_text(&f);
    cr_assert_str_eq(img, "earlier image");
    teardown(&f);
}

Test(plot_render, stderr_errors_and_exit_status_fail_with_gnuplots_words)
{
    const char *modes[] = {"complain", "fail"};
    for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
        Fixture f;
        setup(&f, modes[i]);
        SsimPlotStatus status;
        GError *error = NULL;
        cr_assert_not(render(&f, &status, &error), "%s: accepted", modes[i]);
        cr_assert(strstr(error->message, "gnuplot failed"), "%s", error->message);
        if (i == 0)
            cr_assert(strstr(error->message, "undefined variable"), "%s", error->message);
        g_clear_error(&error);
        g_autofree char *img = image_text(&f);
        cr_assert_str_eq(img, "earlier image");
        teardown(&f);
    }
}

Test(plot_render, check_covers_the_image_and_its_siblings)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    g_autofree char *image = g_build_filename(dir, "p.png", NULL);
    g_autofree char *dat = g_build_filename(dir, "p.dat", NULL);
    cr_assert(ssim_plot_check(image, NULL));
    cr_assert_eq(g_mkdir(dat, 0700), 0);
    GError *error = NULL;
    cr_assert_not(ssim_plot_check(image, &error));
    cr_assert(g_str_has_prefix(error->message, dat), "%s", error->message);
    g_clear_error(&error);
    g_rmdir(dat);
    g_rmdir(dir);
}

/* ---- the Gantt chart: merged boxes, fixed colours, the window (text only, no gnuplot) ---- */

#include <shiftsim/graphfile.h>

/* One rank, hand-drawn: on compute, fwd 0..100, fwd 100..200, bwd 200..300, fwd 300..400, then
 * (after tp's 400..450) fwd 450..550; on tp, tp 100..150, 150..200 and 400..450 (us). */
static const char gantt_graph[] = "# shiftsim-graph v1\n"
                                  "1 0 compute compute dur=100us class=fwd\n"
                                  "2 0 compute compute dur=100us deps=1 class=fwd\n"
                                  "3 0 compute compute dur=100us deps=2 class=bwd\n"
                                  "4 0 compute compute dur=100us deps=3 class=fwd\n"
                                  "5 0 tp compute dur=50us deps=1 class=tp\n"
                                  "6 0 tp compute dur=50us deps=5 class=tp\n"
                                  "7 0 tp compute dur=50us deps=4 class=tp\n"
                                  "8 0 compute compute dur=100us deps=7 class=fwd\n";

/* Draws gantt_graph through `view` (PATH emptied: no gnuplot); returns the .dat and .gp texts. */
static void draw_gantt(const SsimGanttView *view, char **dat, char **gp)
{
    g_autoptr(SsimGraph) g = ssim_graphfile_parse("gantt.graph", gantt_graph, -1, NULL);
    cr_assert_not_null(g);
    SsimTimeline *t = ssim_runtime_run(g, NULL, NULL, NULL);
    cr_assert_not_null(t);
    cr_assert_eq(t->makespan, 550 * SSIM_US);
    g_autofree char *dir = g_dir_make_tmp("ssim-gantt-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "g.png", NULL);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    SsimPlotStatus st;
    GError *error = NULL;
    gboolean ok = ssim_plot_gantt(g, t, png, view, "hand-drawn", &st, &error);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok, "%s", error ? error->message : "");
    cr_assert_eq(st, SSIM_PLOT_NO_GNUPLOT);
    cr_assert(g_file_get_contents(dat_path, dat, NULL, NULL));
    cr_assert(g_file_get_contents(gp_path, gp, NULL, NULL));
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
    ssim_timeline_free(t);
}

Test(plot_gantt, touching_boxes_of_one_class_merge_and_nothing_else_does)
{
    g_autofree char *dat = NULL, *gp = NULL;
    draw_gantt(NULL, &dat, &gp);
    /* fwd 0..100 and 100..200 merge; fwd 300..400 does not reach across bwd, and 450..550 is
     * 50 us later; tp 100..150 and 150..200 merge.  Blocks in opclass order: fwd, bwd, tp. */
    cr_assert(strstr(dat, "# start_us end_us row; one block per class\n"
                          "# class fwd\n0.000000 200.000000 0\n300.000000 400.000000 0\n"
                          "450.000000 550.000000 0\n\n\n"
                          "# class bwd\n200.000000 300.000000 0\n\n\n"
                          "# class tp\n100.000000 200.000000 1\n400.000000 450.000000 1\n"),
              "%s", dat);
    /* Fixed colours by class, no border on any box, the legend outside, a row per stream. */
    cr_assert(strstr(gp, "index 0 using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                         "lc rgb '#0072b2' title 'fwd'"),
              "%s", gp);
    cr_assert(strstr(gp, "index 1 using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                         "lc rgb '#56b4e9' title 'bwd'"),
              "%s", gp);
    cr_assert(strstr(gp, "index 2 using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                         "lc rgb '#009e73' title 'tp'"),
              "%s", gp);
    cr_assert(strstr(gp, "set style fill solid 1.0 noborder\n"), "%s", gp);
    cr_assert_null(strstr(gp, " border"), "%s", gp);
    cr_assert(strstr(gp, "set key outside right top"), "%s", gp);
    cr_assert(strstr(gp, "set ytics ('r0 compute' 0, 'r0 tp' 1)"), "%s", gp);
    cr_assert(strstr(gp, "set xrange [0.000000:550.000000]\n"), "%s", gp);
    cr_assert(strstr(gp, "set xlabel 'time (us)'"), "%s", gp);
    cr_assert(strstr(gp, "set title 'hand-drawn'\n"), "%s", gp);
}

Test(plot_gantt, the_window_clips_boxes_and_sets_the_axis)
{
    SsimGanttView view = {0};
    cr_assert(ssim_gantt_window_parse("0.15:0.42", &view, NULL));
    g_autofree char *dat = NULL, *gp = NULL;
    draw_gantt(&view, &dat, &gp);
    /* 150..420 us: fwd 0..200 cut to 150..200, fwd 450..550 gone, tp 400..450 cut at 420. */
    cr_assert(strstr(dat, "# class fwd\n150.000000 200.000000 0\n300.000000 400.000000 0\n\n\n"
                          "# class bwd\n200.000000 300.000000 0\n\n\n"
                          "# class tp\n150.000000 200.000000 1\n400.000000 420.000000 1\n"),
              "%s", dat);
    cr_assert(strstr(gp, "set xrange [150.000000:420.000000]\n"), "%s", gp);
    cr_assert(strstr(gp, "set title 'hand-drawn [window 0.15 to 0.42 ms]'\n"), "%s", gp);
    /* An open end runs to the end of the timeline; a window past it draws no box. */
    cr_assert(ssim_gantt_window_parse("0.5:", &view, NULL));
    g_free(dat), g_free(gp);
    draw_gantt(&view, &dat, &gp);
    cr_assert(strstr(dat, "# class fwd\n500.000000 550.000000 0\n"), "%s", dat);
    cr_assert_null(strstr(dat, "# class tp"), "%s", dat);
    cr_assert(strstr(gp, "set xrange [500.000000:550.000000]\n"), "%s", gp);
    cr_assert(ssim_gantt_window_parse("1:2", &view, NULL));
    g_free(dat), g_free(gp);
    draw_gantt(&view, &dat, &gp);
    cr_assert_null(strstr(dat, "# class"), "%s", dat);
    cr_assert(strstr(gp, "plot NaN notitle\n"), "%s", gp);
}

Test(plot_gantt, window_option_values)
{
    SsimGanttView v = {.max_ranks = 3};
    cr_assert(ssim_gantt_window_parse("100:200", &v, NULL));
    cr_assert_eq(v.from, 100 * SSIM_MS);
    cr_assert_eq(v.to, 200 * SSIM_MS);
    cr_assert_eq(v.max_ranks, 3, "the window leaves the rank cap alone");
    cr_assert(ssim_gantt_window_parse(" 100 : ", &v, NULL));
    cr_assert_eq(v.from, 100 * SSIM_MS);
    cr_assert_eq(v.to, 0);
    cr_assert(ssim_gantt_window_parse(":0.25", &v, NULL));
    cr_assert_eq(v.from, 0);
    cr_assert_eq(v.to, 250 * SSIM_US);
    const char *bad[] = {"200:100", "5:5", "100", "", "abc:1", "-5:10", "1:2x", ":0", "nan:1"};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        GError *error = NULL;
        cr_assert_not(ssim_gantt_window_parse(bad[i], &v, &error), "'%s' accepted", bad[i]);
        cr_assert(strstr(error->message, "expected START:END in milliseconds"), "%s",
                  error->message);
        g_clear_error(&error);
    }
}

/* ---- predicted vs measured ---- */

/* Draws `chart` with no gnuplot; returns the .dat and .gp texts. */
static void draw_predicted(const SsimPredictedChart *chart, char **dat, char **gp)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-pred-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "v.png", NULL);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    SsimPlotStatus st;
    GError *error = NULL;
    gboolean ok = ssim_plot_predicted(chart, png, &st, &error);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok, "%s", error ? error->message : "");
    cr_assert(g_file_get_contents(dat_path, dat, NULL, NULL));
    cr_assert(g_file_get_contents(gp_path, gp, NULL, NULL));
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
}

Test(plot_predicted, a_colour_per_group_the_diagonal_and_the_band)
{
    /* Two models, 100 ms to 20 s: two decades, so log axes; a failed run (NAN) is left out. */
    const SsimPredictedPoint pts[] = {
        {100, 95, 0, 3}, {20000, 21000, 1, 4}, {400, NAN, 1, 5}, {1000, 1200, 0, 6}};
    const char *groups[] = {"gpt-a", "gpt-b", "unused"};
    SsimPredictedChart chart = {pts, 4, groups, 3, "ms", "validate test", "runs"};
    g_autofree char *dat = NULL, *gp = NULL;
    draw_predicted(&chart, &dat, &gp);
    cr_assert_str_eq(dat, "# measured_ms predicted_ms line; one block per group\n"
                          "# group gpt-a\n100 95 3\n1000 1200 6\n\n\n"
                          "# group gpt-b\n20000 21000 4\n");
    cr_assert(strstr(gp, "set logscale xy\n"), "%s", gp);
    /* One range on both axes, 95 / 1.25 to 21000 * 1.25, square. */
    cr_assert(strstr(gp, "set xrange [76:26250]\nset yrange [76:26250]\n"), "%s", gp);
    cr_assert(strstr(gp, "set size ratio -1\n"), "%s", gp);
    /* Log tics at 1, 2 and 5 times the powers of ten inside the range. */
    cr_assert(strstr(gp, "set xtics (100, 200, 500, 1000, 2000, 5000, 10000, 20000)\n"
                         "set ytics (100, 200, 500, 1000, 2000, 5000, 10000, 20000)\n"),
              "%s", gp);
    cr_assert(strstr(gp, "'+' using 1:($1/1.1):($1*1.1) with filledcurves lc rgb '#999999' "
                         "title '+/-10%'"),
              "%s", gp);
    cr_assert(strstr(gp, "x with lines lw 1.5 lc rgb 'black' title 'y = x'"), "%s", gp);
    cr_assert(strstr(gp, "index 0 using 1:2 with points pt 7 ps 1.1 lc rgb '#0072b2' "
                         "title 'gpt-a (2)'"),
              "%s", gp);
    cr_assert(strstr(gp, "index 1 using 1:2 with points pt 5 ps 1.1 lc rgb '#d55e00' "
                         "title 'gpt-b (1)'"),
              "%s", gp);
    cr_assert_null(strstr(gp, "unused"), "a group with no point has no legend entry");
    cr_assert(strstr(gp, "set key outside right"), "%s", gp);
}

Test(plot_predicted, linear_axes_within_a_decade)
{
    const SsimPredictedPoint pts[] = {{100, 110, 0, 1}, {300, 280, 0, 2}};
    const char *groups[] = {"m"};
    SsimPredictedChart chart = {pts, 2, groups, 1, "ms", "validate test", "runs"};
    g_autofree char *dat = NULL, *gp = NULL;
    draw_predicted(&chart, &dat, &gp);
    cr_assert_null(strstr(gp, "logscale"), "%s", gp);
    cr_assert_null(strstr(gp, "set xtics"), "%s", gp);
    /* 15% of (200 + 10) below 100 and 15% of (200 + 30) above 300. */
    cr_assert(strstr(gp, "set xrange [68.5:334.5]\nset yrange [68.5:334.5]\n"), "%s", gp);
}

/* ---- step bars (compare --plot) ---- */

#include <shiftsim/stepbars.h>

Test(plot_stepbars, the_step_stacked_and_the_exposed_classes_side_by_side)
{
    const SsimStepBar bars[] = {{"alpa", 100 * SSIM_MS, {10 * SSIM_MS, 2 * SSIM_MS, 8 * SSIM_MS}},
                                {"commshift", 90 * SSIM_MS, {10 * SSIM_MS, 2 * SSIM_MS, 0}}};
    SsimStepBars chart = {bars, 2, "policy", "step bars test", "two policies"};
    g_autofree char *dir = g_dir_make_tmp("ssim-bars-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "b.png", NULL);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    SsimPlotStatus st;
    GError *error = NULL;
    gboolean ok = ssim_step_bars_plot(&chart, png, &st, &error);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok, "%s", error ? error->message : "");
    g_autofree char *dat = NULL, *gp = NULL;
    cr_assert(g_file_get_contents(dat_path, &dat, NULL, NULL));
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    /* The rest is the step less the exposed parts: 80 and 78 ms. */
    cr_assert_str_eq(dat, "# policy rest_ms exposed_tp_ms exposed_pp_ms exposed_dp_ms\n"
                          "alpa 80.000000 10.000000 2.000000 8.000000\n"
                          "commshift 78.000000 10.000000 2.000000 0.000000\n");
    cr_assert(strstr(gp, "set multiplot layout 2,1 title 'two policies'"), "%s", gp);
    cr_assert(strstr(gp, "set style histogram rowstacked\n"), "%s", gp);
    cr_assert(strstr(gp, "set yrange [0:*]\n"), "%s", gp);
    /* The step written above each bar, and the classes side by side in their Gantt colours. */
    cr_assert(strstr(gp, "'' using 0:($2+$3+$4+$5):(sprintf('%.1f', $2+$3+$4+$5)) with labels"),
              "%s", gp);
    cr_assert(strstr(gp, "set style histogram clustered gap 1\n"), "%s", gp);
    cr_assert(strstr(gp, "set linetype 2 lc rgb '#009e73'\nset linetype 3 lc rgb '#cc79a7'\n"
                         "set linetype 4 lc rgb '#d55e00'"),
              "%s", gp);
    cr_assert(strstr(gp, " using 3:xtic(1) lt 2 title 'exposed tp', '' using 4 lt 3 title "
                         "'exposed pp', '' using 5 lt 4 title 'exposed dp'\n"),
              "%s", gp);
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
}

/* 100 ranks of two streams: 200 rows, past what the image's height can label row by row. */
Test(plot_gantt, many_rows_are_labelled_by_rank)
{
    g_autoptr(GString) text = g_string_new("# shiftsim-graph v1\n");
    for (guint r = 0; r < 100; r++)
        g_string_append_printf(text,
                               "%u %u compute compute dur=10us class=fwd\n"
                               "%u %u tp compute dur=5us deps=%u class=tp\n",
                               2 * r + 1, r, 2 * r + 2, r, 2 * r + 1);
    g_autoptr(SsimGraph) g = ssim_graphfile_parse("many.graph", text->str, -1, NULL);
    cr_assert_not_null(g);
    SsimTimeline *t = ssim_runtime_run(g, NULL, NULL, NULL);
    g_autofree char *dir = g_dir_make_tmp("ssim-gantt-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "g.png", NULL);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    SsimPlotStatus st;
    gboolean ok = ssim_plot_gantt(g, t, png, NULL, NULL, &st, NULL);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok);
    g_autofree char *gp = NULL;
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    cr_assert(strstr(gp, "set ytics ('r0' 0, 'r1' 2, 'r2' 4, "), "%s", gp);
    cr_assert(strstr(gp, "'r99' 198)\n"), "%s", gp);
    cr_assert(strstr(gp, "size 1200,4000 "), "%s", gp);
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
    ssim_timeline_free(t);
}
