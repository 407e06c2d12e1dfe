/*
 * Split charts (include/shiftsim/plot.h, ssim_plot_splits()): a sweep's two gnuplot plots.
 *
 * Both draw the best tokens/s of each (split, series), where a split is the (dp, tp, pp) triple
 * and a series is one of a sweep's placements; the caller has reduced its rows to those bests.
 * A (split, series) with no value is NAN ('?' in the throughput data, NaN and an empty label in
 * the heat map).  Splits appear in the order given (a sweep gives configuration order, tp outer,
 * pp inner), series in the order given, so the data files are as deterministic as their input.  The
 * heat map is a tp x pp grid drawn `with image` on integer cell coordinates (the tics name the
 * actual sizes; a tp or pp with nothing simulated at all is left out), one panel per series (one
 * above the other, so the chart stays narrow enough to read where documentation shows it), every
 * cell labelled with its value in thousands of tokens/s.
 *
 * Honest scales: the bars start at zero, and the heat map's colour is the cell's share of the
 * best cell of every panel, on a colour box from 0 to 100% that says so; a split 2% slower than
 * the best is a shade away from it, not the other end of a rainbow stretched from min to max.
 */
#include <shiftsim/plot.h>
#include <shiftsim/report.h>

#include <math.h>
#include <string.h>

static gboolean any_value(const SsimSplitBest *s, guint n)
{
    for (guint k = 0; k < n; k++)
        if (!isnan(s->best[k]))
            return TRUE;
    return FALSE;
}

static void title_line(GString *gp, const SsimSplitChart *chart, const char *what)
{
    g_autofree char *t = g_strdup_printf("%s: %s", chart->context, what);
    g_string_append(gp, "set title ");
    ssim_plot_quote(gp, t);
    g_string_append_c(gp, '\n');
}

static gboolean plot_throughput(const SsimSplitChart *chart, const char *image,
                                SsimPlotStatus *status, GError **error)
{
    guint np = chart->n_series;
    g_autoptr(GString) dat = g_string_new("# split");
    for (guint k = 0; k < np; k++)
        g_string_append_printf(dat, " %s", chart->series[k]);
    g_string_append(dat, "   (best tokens/s; ? = nothing simulated)\n");
    guint rows = 0;
    for (guint i = 0; i < chart->n_splits; i++) {
        const SsimSplitBest *s = &chart->splits[i];
        if (!any_value(s, np))
            continue;
        rows++;
        g_string_append_printf(dat, "\"dp%u tp%u pp%u\"", s->dp, s->tp, s->pp);
        for (guint k = 0; k < np; k++) {
            if (isnan(s->best[k]))
                g_string_append(dat, " ?");
            else
                g_string_append_printf(dat, " %.3f", s->best[k]);
        }
        g_string_append_c(dat, '\n');
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;

    g_autoptr(GString) gp = g_string_new("# shiftsim sweep: throughput per split; render: "
                                         "gnuplot THIS_FILE\n");
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_string_append_printf(gp, "set terminal %s size %u,560 font ',11'\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(320 + 26 * MAX(rows, 1) * MAX(np, 1), 3000u));
    ssim_plot_quote(gp, image);
    g_string_append_c(gp, '\n');
    title_line(gp, chart, "best tokens/s per split");
    g_string_append(gp, "set datafile missing '?'\nset style data histograms\n"
                        "set style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
                        "set boxwidth 0.9\nset xtics rotate by -45 scale 0\nset grid ytics\n"
                        "set yrange [0:*]\nset format y '%.0s%c'\n"
                        "set ylabel 'tokens/s (best over v, microbatch, schedule, recompute)'\n"
                        "set key below horizontal\n");
    if (rows == 0) {
        g_string_append(gp, "set xrange [0:1]\nplot NaN title 'nothing simulated'\n");
    } else {
        g_string_append(gp, "plot ");
        for (guint k = 0; k < np; k++) {
            g_string_append(gp, k ? ", \\\n     " : "");
            ssim_plot_quote(gp, k ? "" : dat_path);
            g_string_append_printf(gp, " using %u%s title ", k + 2, k ? "" : ":xtic(1)");
            ssim_plot_quote(gp, chart->series[k]);
        }
        g_string_append_c(gp, '\n');
    }
    return ssim_plot_render(image, gp, status, error);
}

/* The distinct tp (or pp) sizes of the splits, in first-appearance order. */
static guint axis_values(const SsimSplitChart *chart, gboolean want_pp, guint *out)
{
    guint n = 0, np = chart->n_series;
    for (guint i = 0; i < chart->n_splits; i++) {
        const SsimSplitBest *s = &chart->splits[i];
        if (!any_value(s, np))
            continue;
        guint v = want_pp ? s->pp : s->tp;
        gboolean seen = FALSE;
        for (guint j = 0; j < n; j++)
            seen = seen || out[j] == v;
        if (!seen)
            out[n++] = v;
    }
    return n;
}

static guint axis_pos(const guint *vals, guint n, guint v)
{
    for (guint i = 0; i < n; i++)
        if (vals[i] == v)
            return i;
    g_assert_not_reached();
}

static gint guint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;
    return x < y ? -1 : x > y;
}

static void tics(GString *gp, const char *axis, const guint *vals, guint n)
{
    g_string_append_printf(gp, "set %stics (", axis);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(gp, "%s'%u' %u", i ? ", " : "", vals[i], i);
    g_string_append(gp, ")\n");
}

static gboolean plot_heatmap(const SsimSplitChart *chart, const char *image, SsimPlotStatus *status,
                             GError **error)
{
    guint np = chart->n_series;
    g_autofree guint *tps = g_new(guint, MAX(chart->n_splits, 1));
    g_autofree guint *pps = g_new(guint, MAX(chart->n_splits, 1));
    guint ntp = axis_values(chart, FALSE, tps), npp = axis_values(chart, TRUE, pps);
    qsort(tps, ntp, sizeof(guint), guint_cmp);
    qsort(pps, npp, sizeof(guint), guint_cmp);

    /* One block per placement: every cell of the grid, NaN where nothing was simulated. */
    g_autoptr(GString) dat =
        g_string_new("# tp_index pp_index best_tokens_per_s label tp pp percent_of_best\n");
    g_autofree double *grid = g_new(double, MAX(ntp * npp, 1));
    double hi = 0; /* the best cell of every panel: 100% */
    for (guint i = 0; i < chart->n_splits; i++)
        for (guint k = 0; k < np; k++)
            if (!isnan(chart->splits[i].best[k]))
                hi = MAX(hi, chart->splits[i].best[k]);
    for (guint k = 0; k < np; k++) {
        for (guint c = 0; c < ntp * npp; c++)
            grid[c] = NAN;
        for (guint i = 0; i < chart->n_splits; i++) {
            const SsimSplitBest *s = &chart->splits[i];
            if (!any_value(s, np))
                continue;
            guint x = axis_pos(tps, ntp, s->tp), y = axis_pos(pps, npp, s->pp);
            grid[y * ntp + x] = s->best[k];
        }
        g_string_append_printf(dat, "# placement %s\n", chart->series[k]);
        for (guint y = 0; y < npp; y++) {
            for (guint x = 0; x < ntp; x++) {
                double v = grid[y * ntp + x];
                if (isnan(v)) {
                    g_string_append_printf(dat, "%u %u NaN \"\" %u %u NaN\n", x, y, tps[x], pps[y]);
                } else {
                    g_string_append_printf(dat, "%u %u %.3f \"%.0fk\" %u %u %.2f\n", x, y, v,
                                           v / 1e3, tps[x], pps[y], hi > 0 ? 100 * v / hi : 0);
                }
            }
            g_string_append_c(dat, '\n');
        }
        g_string_append(dat, "\n");
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;

    g_autoptr(GString) gp = g_string_new("# shiftsim sweep: tp x pp heat map per placement; "
                                         "render: gnuplot THIS_FILE\n");
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_string_append_printf(gp, "set terminal %s size %u,%u font ',11'\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(MAX(300 + 90 * MAX(ntp, 1), 640u), 2000u),
                           MIN(50 + np * (110 + 40 * MAX(npp, 1)), 4000u));
    ssim_plot_quote(gp, image);
    g_string_append_c(gp, '\n');
    g_string_append_printf(gp, "set multiplot layout %u,1 title ", np);
    ssim_plot_quote(gp, chart->context);
    g_string_append_printf(gp, "\nset xrange [-0.5:%u.5]\nset yrange [-0.5:%u.5]\n",
                           ntp ? ntp - 1 : 0, npp ? npp - 1 : 0);
    tics(gp, "x", tps, ntp);
    tics(gp, "y", pps, npp);
    /* A light sequential palette (black labels stay readable on every cell) on a fixed 0..100%
     * scale; every panel has its colour box, so the panels stay the same size. */
    g_string_append(gp, "set xlabel 'tp'\nset ylabel 'pp'\n"
                        "set palette defined (0 '#ffffff', 50 '#c7e9b4', 80 '#7fcdbb', "
                        "100 '#41b6c4')\nset cbrange [0:100]\nset cbtics 0,25,100\n"
                        "set format cb '%g%%'\nset colorbox\nset tics scale 0\n");
    for (guint k = 0; k < np; k++) {
        g_autofree char *t =
            g_strdup_printf("%s: best tokens/s (k); colour: %% of the best cell, %.0fk",
                            chart->series[k], hi / 1e3);
        g_string_append(gp, "set title ");
        ssim_plot_quote(gp, t);
        if (ntp == 0) {
            g_string_append(gp, "\nplot NaN title 'nothing simulated'\n");
            continue;
        }
        g_string_append(gp, "\nplot ");
        ssim_plot_quote(gp, dat_path);
        g_string_append_printf(gp,
                               " index %u using 1:2:7 with image notitle, \\\n     ''"
                               " index %u using 1:2:4 with labels notitle\n",
                               k, k);
    }
    g_string_append(gp, "unset multiplot\n");
    return ssim_plot_render(image, gp, status, error);
}

gboolean ssim_plot_splits(const SsimSplitChart *chart, const char *prefix, SsimPlotStatus *status,
                          GError **error)
{
    g_autofree char *thr = g_strdup_printf("%s-throughput.png", prefix);
    g_autofree char *heat = g_strdup_printf("%s-heatmap.png", prefix);
    SsimPlotStatus a = SSIM_PLOT_RENDERED, b = SSIM_PLOT_RENDERED;
    gboolean ok = plot_throughput(chart, thr, &a, error) && plot_heatmap(chart, heat, &b, error);
    if (ok)
        *status = (a == SSIM_PLOT_RENDERED && b == SSIM_PLOT_RENDERED) ? SSIM_PLOT_RENDERED
                                                                       : SSIM_PLOT_NO_GNUPLOT;
    return ok;
}
