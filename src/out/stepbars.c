/*
 * Step-time bars (include/shiftsim/stepbars.h): gnuplot's row-stacked histogram of the data file,
 * one column per part of the step, so the bar's height is the step time and the parts are where
 * it went.  The rest is the step less every class's exposed time, clamped at 0 (a moment two
 * classes are exposed at once counts for both, so the sum may exceed the step).
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
    g_string_append_printf(gp, "set terminal %s size 720,420\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced");
    ssim_plot_quote(gp, image);
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, chart->title);
    /* Labels longer than a bar is wide are slanted, so that they never overlap. */
    gsize longest = 0;
    for (guint i = 0; i < chart->n_bars; i++)
        longest = MAX(longest, strlen(chart->bars[i].name));
    if (longest > 9)
        g_string_append(gp, "\nset xtics rotate by -25 offset -1,0");
    g_string_append(gp, "\nset ylabel 'step time (ms)'\nset style data histograms\n"
                        "set style histogram rowstacked\nset style fill solid 0.85 border -1\n"
                        "set boxwidth 0.6\nset key outside bottom center horizontal\n"
                        "set yrange [0:*]\n"
                        "set grid ytics\nplot ");
    const char *titles[] = {"compute and bubbles", "exposed tp", "exposed pp", "exposed dp"};
    for (guint k = 0; k < 4; k++) {
        if (k == 0)
            ssim_plot_quote(gp, dat_path);
        else
            g_string_append(gp, "''");
        g_string_append_printf(gp, " using %u%s title ", k + 2, k == 0 ? ":xtic(1)" : "");
        ssim_plot_quote(gp, titles[k]);
        g_string_append(gp, k + 1 < 4 ? ", " : "\n");
    }
    return ssim_plot_render(image, gp, status, error);
}
