/*
 * The sweep's two gnuplot plots (include/shiftsim/sweep.h, ssim_sweep_plot()).
 *
 * Both reduce the simulated rows to the best tokens/s of each (split, placement), where a split
 * is the (dp, tp, pp) triple and "best" is the maximum over virtual stages, microbatch sizes,
 * schedules and recompute modes; a (split, placement) with no simulated row has no value ('?' in
 * the throughput data, NaN and an empty label in the heat map).  Splits appear in configuration
 * order (tp outer, pp inner), placements in the order of the spec, so the data files are as
 * deterministic as the CSV.  The heat map is a tp x pp grid drawn `with image` on integer cell
 * coordinates (the tics name the actual sizes; a tp or pp with nothing simulated at all is left
 * out), one panel per placement, every cell labelled with its value in thousands of tokens/s.
 */
#include <shiftsim/report.h>
#include <shiftsim/sweep.h>

#include <math.h>
#include <string.h>

typedef struct {
    guint tp, pp, dp;
    double *best; /* per placement; NAN when none */
} Split;

static guint placement_of(const SsimSweepSpec *spec, const char *name)
{
    for (guint i = 0; i < spec->placements.n; i++)
        if (strcmp(spec->placements.v[i], name) == 0)
            return i;
    g_assert_not_reached();
}

/* The splits with their best tokens/s per placement, in configuration order. */
static GArray *collect(const SsimSweep *sweep)
{
    const SsimSweepSpec *spec = ssim_sweep_spec(sweep);
    GArray *splits = g_array_new(FALSE, FALSE, sizeof(Split));
    for (guint i = 0; i < ssim_sweep_n_configs(sweep); i++) {
        const SsimSweepRow *r = ssim_sweep_row(sweep, i);
        Split *s = splits->len ? &g_array_index(splits, Split, splits->len - 1) : NULL;
        if (s == NULL || s->tp != r->par.tp || s->pp != r->par.pp) {
            Split n = {r->par.tp, r->par.pp, r->par.dp, g_new(double, spec->placements.n)};
            for (guint k = 0; k < spec->placements.n; k++)
                n.best[k] = NAN;
            g_array_append_val(splits, n);
            s = &g_array_index(splits, Split, splits->len - 1);
        }
        if (r->status != SSIM_SWEEP_OK)
            continue;
        guint k = placement_of(spec, r->par.placement);
        if (isnan(s->best[k]) || r->result.tokens_per_s > s->best[k])
            s->best[k] = r->result.tokens_per_s;
    }
    return splits;
}

static void free_splits(GArray *splits)
{
    for (guint i = 0; i < splits->len; i++)
        g_free(g_array_index(splits, Split, i).best);
    g_array_free(splits, TRUE);
}

static gboolean any_value(const Split *s, guint n)
{
    for (guint k = 0; k < n; k++)
        if (!isnan(s->best[k]))
            return TRUE;
    return FALSE;
}

static void title_line(GString *gp, const SsimSweep *sweep, const char *what)
{
    const SsimSweepSpec *spec = ssim_sweep_spec(sweep);
    const SsimCluster *cl = ssim_sweep_cluster(sweep);
    g_autofree char *t = g_strdup_printf("%u GPUs of %s, global batch %u: %s", spec->n_gpus,
                                         cl->name, spec->base.global_batch, what);
    g_string_append(gp, "set title ");
    ssim_plot_quote(gp, t);
    g_string_append_c(gp, '\n');
}

static gboolean plot_throughput(const SsimSweep *sweep, const GArray *splits, const char *image,
                                SsimPlotStatus *status, GError **error)
{
    const SsimSweepSpec *spec = ssim_sweep_spec(sweep);
    guint np = spec->placements.n;
    g_autoptr(GString) dat = g_string_new("# split");
    for (guint k = 0; k < np; k++)
        g_string_append_printf(dat, " %s", spec->placements.v[k]);
    g_string_append(dat, "   (best tokens/s; ? = nothing simulated)\n");
    guint rows = 0;
    for (guint i = 0; i < splits->len; i++) {
        const Split *s = &g_array_index(splits, Split, i);
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
    g_string_append_printf(gp, "set terminal %s size %u,520\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(320 + 36 * MAX(rows, 1) * MAX(np, 1), 3000u));
    ssim_plot_quote(gp, image);
    g_string_append_c(gp, '\n');
    title_line(gp, sweep, "best tokens/s per split");
    g_string_append(gp, "set datafile missing '?'\nset style data histograms\n"
                        "set style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
                        "set boxwidth 0.9\nset xtics rotate by -45 scale 0\nset grid ytics\n"
                        "set yrange [0:*]\nset ylabel 'tokens/s (best over v, microbatch, "
                        "schedule, recompute)'\nset key top left\n");
    if (rows == 0) {
        g_string_append(gp, "set xrange [0:1]\nplot NaN title 'nothing simulated'\n");
    } else {
        g_string_append(gp, "plot ");
        for (guint k = 0; k < np; k++) {
            g_string_append(gp, k ? ", \\\n     " : "");
            ssim_plot_quote(gp, k ? "" : dat_path);
            g_string_append_printf(gp, " using %u%s title ", k + 2, k ? "" : ":xtic(1)");
            ssim_plot_quote(gp, spec->placements.v[k]);
        }
        g_string_append_c(gp, '\n');
    }
    return ssim_plot_render(image, gp, status, error);
}

/* The distinct tp (or pp) sizes of the splits, in first-appearance order. */
static guint axis_values(const GArray *splits, guint np, gboolean want_pp, guint *out)
{
    guint n = 0;
    for (guint i = 0; i < splits->len; i++) {
        const Split *s = &g_array_index(splits, Split, i);
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

static gboolean plot_heatmap(const SsimSweep *sweep, const GArray *splits, const char *image,
                             SsimPlotStatus *status, GError **error)
{
    const SsimSweepSpec *spec = ssim_sweep_spec(sweep);
    guint np = spec->placements.n;
    g_autofree guint *tps = g_new(guint, MAX(splits->len, 1));
    g_autofree guint *pps = g_new(guint, MAX(splits->len, 1));
    guint ntp = axis_values(splits, np, FALSE, tps), npp = axis_values(splits, np, TRUE, pps);
    qsort(tps, ntp, sizeof(guint), guint_cmp);
    qsort(pps, npp, sizeof(guint), guint_cmp);

    /* One block per placement: every cell of the grid, NaN where nothing was simulated. */
    g_autoptr(GString) dat = g_string_new("# tp_index pp_index best_tokens_per_s label tp pp\n");
    g_autofree double *grid = g_new(double, MAX(ntp * npp, 1));
    double lo = INFINITY, hi = -INFINITY;
    for (guint k = 0; k < np; k++) {
        for (guint c = 0; c < ntp * npp; c++)
            grid[c] = NAN;
        for (guint i = 0; i < splits->len; i++) {
            const Split *s = &g_array_index(splits, Split, i);
            if (!any_value(s, np))
                continue;
            guint x = axis_pos(tps, ntp, s->tp), y = axis_pos(pps, npp, s->pp);
            grid[y * ntp + x] = s->best[k];
        }
        g_string_append_printf(dat, "# placement %s\n", spec->placements.v[k]);
        for (guint y = 0; y < npp; y++) {
            for (guint x = 0; x < ntp; x++) {
                double v = grid[y * ntp + x];
                if (isnan(v)) {
                    g_string_append_printf(dat, "%u %u NaN \"\" %u %u\n", x, y, tps[x], pps[y]);
                } else {
                    lo = MIN(lo, v);
                    hi = MAX(hi, v);
                    g_string_append_printf(dat, "%u %u %.3f \"%.0fk\" %u %u\n", x, y, v, v / 1e3,
                                           tps[x], pps[y]);
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
    g_string_append_printf(
        gp, "set terminal %s size %u,%u\nset output ", svg ? "svg dynamic" : "pngcairo noenhanced",
        MIN(120 + np * (140 + 70 * MAX(ntp, 1)), 3000u), MIN(170 + 45 * MAX(npp, 1), 2000u));
    ssim_plot_quote(gp, image);
    g_string_append_c(gp, '\n');
    g_string_append_printf(gp, "set multiplot layout 1,%u title ", np);
    g_autofree char *mt =
        g_strdup_printf("%u GPUs of %s, global batch %u: best tokens/s (cells: thousands)",
                        spec->n_gpus, ssim_sweep_cluster(sweep)->name, spec->base.global_batch);
    ssim_plot_quote(gp, mt);
    g_string_append_printf(gp, "\nset xrange [-0.5:%u.5]\nset yrange [-0.5:%u.5]\n",
                           ntp ? ntp - 1 : 0, npp ? npp - 1 : 0);
    tics(gp, "x", tps, ntp);
    tics(gp, "y", pps, npp);
    g_string_append(gp, "set xlabel 'tp'\nset ylabel 'pp'\nset palette rgb 33,13,10\n"
                        "unset colorbox\nset tics scale 0\n");
    if (isfinite(lo) && hi > lo)
        g_string_append_printf(gp, "set cbrange [%.3f:%.3f]\n", lo, hi);
    for (guint k = 0; k < np; k++) {
        g_string_append(gp, "set title ");
        ssim_plot_quote(gp, spec->placements.v[k]);
        if (ntp == 0) {
            g_string_append(gp, "\nplot NaN title 'nothing simulated'\n");
            continue;
        }
        g_string_append(gp, "\nplot ");
        ssim_plot_quote(gp, dat_path);
        g_string_append_printf(gp,
                               " index %u using 1:2:3 with image notitle, \\\n     ''"
                               " index %u using 1:2:4 with labels notitle\n",
                               k, k);
    }
    g_string_append(gp, "unset multiplot\n");
    return ssim_plot_render(image, gp, status, error);
}

gboolean ssim_sweep_plot(const SsimSweep *sweep, const char *prefix, SsimPlotStatus *status,
                         GError **error)
{
    GArray *splits = collect(sweep);
    g_autofree char *thr = g_strdup_printf("%s-throughput.png", prefix);
    g_autofree char *heat = g_strdup_printf("%s-heatmap.png", prefix);
    SsimPlotStatus a = SSIM_PLOT_RENDERED, b = SSIM_PLOT_RENDERED;
    gboolean ok = plot_throughput(sweep, splits, thr, &a, error) &&
                  plot_heatmap(sweep, splits, heat, &b, error);
    free_splits(splits);
    if (ok)
        *status = (a == SSIM_PLOT_RENDERED && b == SSIM_PLOT_RENDERED) ? SSIM_PLOT_RENDERED
                                                                       : SSIM_PLOT_NO_GNUPLOT;
    return ok;
}
