/*
 * gnuplot plots (see include/shiftsim/plot.h).
 *
 * The Gantt chart draws each op as a box on the row of its (rank, stream), coloured by class:
 * `boxxyerror` with x = the op's middle, half-width = half its duration, so gnuplot needs no
 * per-op objects and a chart of a hundred thousand ops renders in seconds.  Rows are ordered by
 * rank, then by stream creation order.
 */
#include <shiftsim/plot.h>
#include <shiftsim/report.h>

#include <glib/gstdio.h>
#include <string.h>

static void free_gstring(gpointer s)
{
    g_string_free(s, TRUE);
}

char *ssim_plot_sibling(const char *image, const char *ext)
{
    const char *slash = strrchr(image, '/');
    const char *dot = strrchr(image, '.');
    gsize stem = (dot && (!slash || dot > slash)) ? (gsize)(dot - image) : strlen(image);
    return g_strdup_printf("%.*s%s", (int)stem, image, ext);
}

void ssim_plot_quote(GString *out, const char *s)
{
    g_string_append_c(out, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            g_string_append_c(out, '\'');
        g_string_append_c(out, *s);
    }
    g_string_append_c(out, '\'');
}

gboolean ssim_plot_render(const char *image, const GString *script, SsimPlotStatus *status,
                          GError **error)
{
    g_autofree char *gp = ssim_plot_sibling(image, ".gp");
    if (!ssim_write_file(gp, script, error))
        return FALSE;
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    if (gnuplot == NULL) {
        *status = SSIM_PLOT_NO_GNUPLOT;
        return TRUE;
    }
    const char *argv[] = {gnuplot, gp, NULL};
    g_autofree char *err_text = NULL;
    gint wait_status;
    GError *local = NULL;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                      &err_text, &wait_status, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot run gnuplot: %s",
                    gp, local->message);
        g_error_free(local);
        return FALSE;
    }
    if (!g_spawn_check_wait_status(wait_status, NULL)) {
        /* gnuplot writes the image itself, so a failure can leave it half drawn: remove it (the
         * script and data beside it are whole, written by ssim_write_file). */
        g_unlink(image);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: gnuplot failed: %s", gp,
                    err_text ? g_strstrip(err_text) : "");
        return FALSE;
    }
    *status = SSIM_PLOT_RENDERED;
    return TRUE;
}

gboolean ssim_plot_gantt(const SsimGraph *g, const SsimTimeline *t, const char *image,
                         guint max_ranks, const char *title, SsimPlotStatus *status, GError **error)
{
    guint32 nr = ssim_graph_n_ranks(g), ns = ssim_graph_n_streams(g);
    if (max_ranks == 0 || max_ranks > nr)
        max_ranks = nr;
    /* Rows: streams of the shown ranks in (rank, creation) order. */
    g_autofree guint32 *row = g_new(guint32, MAX(ns, 1));
    g_autoptr(GArray) row_stream = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint32 r = 0; r < max_ranks; r++)
        for (guint32 s = 0; s < ns; s++)
            if (ssim_graph_stream_rank(g, s) == r) {
                row[s] = row_stream->len;
                g_array_append_val(row_stream, s);
            }
    /* Classes: index by first appearance, for colours and the legend. */
    g_autoptr(GHashTable) cls_index = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GPtrArray) cls_names = g_ptr_array_new();
    GString *dat = g_string_new("# x_mid_ms y half_width_ms half_height class_index\n");
    double scale = t->makespan > 20 * SSIM_MS ? 1e-6 : 1e-3; /* ms or us on the axis */
    const char *unit = scale == 1e-6 ? "ms" : "us";
    /* One data block per class, so `plot for [i=0:N-1] ... index i` gets one colour each. */
    g_autoptr(GPtrArray) per_class = g_ptr_array_new_with_free_func(free_gstring);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank >= max_ranks || t->end[i] <= t->start[i])
            continue;
        const char *cls = ssim_graph_string(g, op->cls);
        if (cls[0] == '\0')
            cls = op->kind == SSIM_OP_COMPUTE ? "compute" : ssim_op_kind_name(op->kind);
        gpointer v = g_hash_table_lookup(cls_index, cls);
        guint ci;
        if (v == NULL) {
            ci = cls_names->len;
            g_ptr_array_add(cls_names, (gpointer)cls);
            g_ptr_array_add(per_class, g_string_new(NULL));
            g_hash_table_insert(cls_index, (gpointer)cls, GUINT_TO_POINTER(ci + 1));
        } else {
            ci = GPOINTER_TO_UINT(v) - 1;
        }
        double a = (double)t->start[i] * scale, z = (double)t->end[i] * scale;
        char x[G_ASCII_DTOSTR_BUF_SIZE], w[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append_printf(g_ptr_array_index(per_class, ci), "%s %u %s 0.38 %u\n",
                               g_ascii_formatd(x, sizeof x, "%.6f", (a + z) / 2), row[op->stream],
                               g_ascii_formatd(w, sizeof w, "%.6f", (z - a) / 2), ci);
    }
    for (guint c = 0; c < per_class->len; c++) {
        GString *blk = g_ptr_array_index(per_class, c);
        g_string_append_printf(dat, "# class %s\n%s%s\n\n", (char *)g_ptr_array_index(cls_names, c),
                               blk->len ? blk->str : "", blk->len ? "" : "0 0 0 0 0\n");
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    gboolean ok = ssim_write_file(dat_path, dat, error);
    g_string_free(dat, TRUE);
    if (!ok)
        return FALSE;

    GString *gp = g_string_new("# Gantt chart of a shiftsim timeline; render: gnuplot THIS_FILE\n");
    gboolean svg = g_str_has_suffix(image, ".svg");
    guint rows = row_stream->len;
    g_string_append_printf(gp, "set terminal %s size 1200,%u\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(160 + 22 * rows, 4000u));
    ssim_plot_quote(gp, image);
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, title ? title : "shiftsim timeline");
    g_string_append_printf(gp,
                           "\nset xlabel 'time (%s)'\nset yrange [%u.6:-0.6]\n"
                           "set ytics (",
                           unit, rows ? rows - 1 : 0);
    for (guint k = 0; k < rows; k++) {
        guint32 s = g_array_index(row_stream, guint32, k);
        g_autofree char *lab =
            g_strdup_printf("r%u %s", ssim_graph_stream_rank(g, s), ssim_graph_stream_name(g, s));
        g_string_append(gp, k ? ", " : "");
        ssim_plot_quote(gp, lab);
        g_string_append_printf(gp, " %u", k);
    }
    g_string_append(gp, ")\nset grid xtics\nset key outside right top\n"
                        "set style fill solid 0.85 noborder\nset datafile commentschars '#'\n");
    g_string_append(gp, "plot ");
    for (guint c = 0; c < cls_names->len; c++) {
        g_string_append(gp, c ? ", \\\n     " : "");
        ssim_plot_quote(gp, dat_path);
        g_string_append_printf(gp, " index %u using 1:2:3:4 with boxxyerror lc %u title ", c,
                               c + 1);
        ssim_plot_quote(gp, g_ptr_array_index(cls_names, c));
    }
    if (cls_names->len == 0)
        g_string_append(gp, "NaN notitle");
    g_string_append_c(gp, '\n');
    ok = ssim_plot_render(image, gp, status, error);
    g_string_free(gp, TRUE);
    return ok;
}
