/*
 * Predicted-vs-measured charts (include/shiftsim/plot.h, ssim_plot_predicted()).
 *
 * A point per run, coloured by its group (a model), on the diagonal y = x with a shaded band of
 * +/-10% around it, so a point's distance from the line reads as its error at any scale.  Both
 * axes share one range (the plot is square, the diagonal at 45 degrees) and are logarithmic when
 * the figures span more than a decade, linear otherwise.  The data holds one block per group in
 * group order, the points in the order given, so it is as deterministic as its input.
 */
#include <shiftsim/plot.h>
#include <shiftsim/report.h>

#include <math.h>

/* Okabe-Ito and then some: distinct for the colour-blind up to the first seven groups; with the
 * four point shapes, every pair of the first 20 groups differs in colour or shape. */
static const char *const group_colour[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                           "#56b4e9", "#4d4d4d", "#8c564b", "#bcbd22", "#17becf"};
static const guint group_shape[] = {7, 5, 9, 13}; /* circle, square, triangle, diamond */

static const char *fmt(char *buf, double v)
{
    return g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, "%.6g", v);
}

gboolean ssim_plot_predicted(const SsimPredictedChart *chart, const char *image,
                             SsimPlotStatus *status, GError **error)
{
    double lo = G_MAXDOUBLE, hi = 0;
    g_autofree guint *count = g_new0(guint, MAX(chart->n_groups, 1));
    for (guint i = 0; i < chart->n_points; i++) {
        const SsimPredictedPoint *p = &chart->points[i];
        g_return_val_if_fail(p->group < chart->n_groups, FALSE);
        if (!(p->measured > 0) || !(p->predicted > 0) || !isfinite(p->predicted))
            continue;
        count[p->group]++;
        lo = MIN(lo, MIN(p->measured, p->predicted));
        hi = MAX(hi, MAX(p->measured, p->predicted));
    }
    if (hi == 0)
        lo = 1, hi = 10;
    gboolean logscale = hi / lo > 10;
    double a = logscale ? lo / 1.25 : MAX(0, lo - 0.15 * (hi - lo + lo * 0.1));
    double z = logscale ? hi * 1.25 : hi + 0.15 * (hi - lo + hi * 0.1);

    char x[G_ASCII_DTOSTR_BUF_SIZE], y[G_ASCII_DTOSTR_BUF_SIZE];
    g_autoptr(GString) dat = g_string_new(NULL);
    g_string_append_printf(dat, "# measured_%s predicted_%s line; one block per group\n",
                           chart->unit, chart->unit);
    g_autoptr(GArray) shown = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint k = 0; k < chart->n_groups; k++) {
        if (count[k] == 0)
            continue;
        g_string_append_printf(dat, "%s# group %s\n", shown->len ? "\n\n" : "", chart->groups[k]);
        g_array_append_val(shown, k);
        for (guint i = 0; i < chart->n_points; i++) {
            const SsimPredictedPoint *p = &chart->points[i];
            if (p->group == k && p->measured > 0 && p->predicted > 0 && isfinite(p->predicted))
                g_string_append_printf(dat, "%s %s %u\n", fmt(x, p->measured), fmt(y, p->predicted),
                                       p->line);
        }
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;

    g_autoptr(GString) gp = g_string_new(NULL);
    g_string_append_printf(gp, "# %s; render: gnuplot THIS_FILE\n", chart->about);
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_string_append_printf(gp, "set terminal %s size 1000,680 font ',11'\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced");
    ssim_plot_quote(gp, image);
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, chart->title);
    g_autofree char *xl = g_strdup_printf("measured (%s)", chart->unit);
    g_autofree char *yl = g_strdup_printf("predicted (%s)", chart->unit);
    g_string_append(gp, "\nset xlabel ");
    ssim_plot_quote(gp, xl);
    g_string_append(gp, "\nset ylabel ");
    ssim_plot_quote(gp, yl);
    g_string_append_printf(gp, "\n%sset xrange [%s:%s]\nset yrange [%s:%s]\n",
                           logscale ? "set logscale xy\n" : "", fmt(x, a), fmt(y, z), fmt(x, a),
                           fmt(y, z));
    if (logscale) {
        /* Tics at 1, 2 and 5 times a power of ten: a range of a decade or two shows more than
         * the one or two powers of ten gnuplot would label. */
        g_autoptr(GString) tics = g_string_new(NULL);
        for (int e = (int)floor(log10(a)); e <= (int)ceil(log10(z)); e++)
            for (guint k = 0; k < 3; k++) {
                double v = (double[]){1, 2, 5}[k] * pow(10, e);
                if (v >= a && v <= z)
                    g_string_append_printf(tics, "%s%s", tics->len ? ", " : "", fmt(x, v));
            }
        g_string_append_printf(gp,
                               "set xtics (%s)\nset ytics (%s)\nset mxtics 10\n"
                               "set mytics 10\n",
                               tics->str, tics->str);
    }
    g_string_append(gp, "set size ratio -1\nset grid\nset samples 400\n"
                        "set key outside right top Left reverse width 2\n"
                        "set style fill transparent solid 0.3 noborder\n"
                        "set tmargin 3\nset bmargin 4\n"
                        "plot '+' using 1:($1/1.1):($1*1.1) with filledcurves "
                        "lc rgb '#999999' title '+/-10%', \\\n"
                        "     x with lines lw 1.5 lc rgb 'black' title 'y = x'");
    for (guint k = 0; k < shown->len; k++) {
        guint gi = g_array_index(shown, guint, k);
        g_autofree char *t = g_strdup_printf("%s (%u)", chart->groups[gi], count[gi]);
        g_string_append(gp, ", \\\n     ");
        ssim_plot_quote(gp, dat_path);
        g_string_append_printf(gp, " index %u using 1:2 with points pt %u ps %s lc rgb '%s' title ",
                               k, group_shape[gi % G_N_ELEMENTS(group_shape)],
                               chart->n_points > 200 ? "0.7" : "1.1",
                               group_colour[gi % G_N_ELEMENTS(group_colour)]);
        ssim_plot_quote(gp, t);
    }
    g_string_append_c(gp, '\n');
    return ssim_plot_render(image, gp, status, error);
}
