/*
 * Step-time bars (include/shiftsim/stepbars.h), two panels from one data file: on the left
 * gnuplot's row-stacked histogram, one column per part of the step, so the bar's height is the step
 * time (written above it) and the parts are where it went; on the right the exposed communication
 * of each class side by side per bar, on its own scale from zero, since a few milliseconds of
 * exposed DP are a sliver on a 500 ms bar.  The rest is the step less every class's exposed time,
 * clamped at 0 (a moment two classes are exposed at once counts for both, so the sum may exceed the
 * step).
 */
#include <shiftsim/stepbars.h>

#include <shiftsim/report.h>

#include <string.h>

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

gboolean ssim_step_bars_plot(const SsimStepBars *chart, const char *image, SsimPlotStatus *status,
                             GError **error)
{
    g_autoptr(GString) dat = g_string_new(NULL);
    g_string_append_printf(dat, "# %s rest_ms exposed_tp_ms exposed_pp_ms exposed_dp_ms\n",
                           chart->label);
    for (guint i = 0; i < chart->n_bars; i++) {
        const SsimStepBar *b = &chart->bars[i];
        SsimTime rest = b->step;
        for (guint k = 0; k < SSIM_COMM_N; k++)
            rest -= b->exposed[k];
        g_string_append_printf(dat, "%s %.6f %.6f %.6f %.6f\n", b->name, ms(MAX(rest, 0)),
                               ms(b->exposed[SSIM_COMM_TP]), ms(b->exposed[SSIM_COMM_PP]),
                               ms(b->exposed[SSIM_COMM_DP]));
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_autoptr(GString) gp = g_string_new(NULL);
    g_string_append_printf(gp, "# %s\n", chart->about);
    g_string_append_printf(gp, "set terminal %s size %u,820 font ',11'\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(500 + 80 * MAX(chart->n_bars, 1), 3000u));
    ssim_plot_quote(gp, image);
    g_string_append(gp, "\nset multiplot layout 2,1 title ");
    ssim_plot_quote(gp, chart->title);
    /* Labels longer than a bar is wide are slanted, so that they never overlap. */
    gsize longest = 0;
    for (guint i = 0; i < chart->n_bars; i++)
        longest = MAX(longest, strlen(chart->bars[i].name));
    if (longest > 9)
        g_string_append(gp, "\nset xtics rotate by -30 offset -1,0");
    /* The colours of the classes in the Gantt charts (plot.c); the rest a neutral grey, so the
     * exposed parts stand out. */
    static const char *const colour[] = {"#bdbdbd", "#009e73", "#cc79a7", "#d55e00"};
    const char *titles[] = {"compute and bubbles", "exposed tp", "exposed pp", "exposed dp"};
    for (guint k = 0; k < 4; k++)
        g_string_append_printf(gp, "\nset linetype %u lc rgb '%s'", k + 1, colour[k]);
    /* Top: the step, stacked, from zero, its height written above each bar. */
    g_string_append(gp, "\nset title 'step time: where it goes'\nset ylabel 'ms'\n"
                        "set style data histograms\nset style histogram rowstacked\n"
                        "set style fill solid 1.0 border rgb '#404040'\nset boxwidth 0.6\n"
                        "set key below horizontal samplen 2 width -1\nset yrange [0:*]\n"
                        "set grid ytics\n"
                        "set offsets 0, 0, graph 0.08, 0\nplot ");
    for (guint k = 0; k < 4; k++) {
        if (k == 0)
            ssim_plot_quote(gp, dat_path);
        else
            g_string_append(gp, "''");
        g_string_append_printf(gp, " using %u%s lt %u title ", k + 2, k == 0 ? ":xtic(1)" : "",
                               k + 1);
        ssim_plot_quote(gp, titles[k]);
        g_string_append(gp, ", ");
    }
    g_string_append(gp, "'' using 0:($2+$3+$4+$5):(sprintf('%.1f', $2+$3+$4+$5)) with labels "
                        "offset 0,0.7 notitle\n");
    /* Below: the exposed communication of each class side by side, on its own scale. */
    g_string_append(gp,
                    "set title 'exposed communication per class'\n"
                    "set style histogram clustered gap 1\nset boxwidth 0.9\n"
                    "set offsets 0, 0, 0, 0\nset key below horizontal samplen 4 width 0\nplot ");
    for (guint k = 1; k < 4; k++) {
        if (k == 1)
            ssim_plot_quote(gp, dat_path);
        else
            g_string_append(gp, "''");
        g_string_append_printf(gp, " using %u%s lt %u title ", k + 2, k == 1 ? ":xtic(1)" : "",
                               k + 1);
        ssim_plot_quote(gp, titles[k]);
        g_string_append(gp, k + 1 < 4 ? ", " : "\n");
    }
    g_string_append(gp, "unset multiplot\n");
    return ssim_plot_render(image, gp, status, error);
}
