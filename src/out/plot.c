/*
 * gnuplot plots (see include/shiftsim/plot.h).
 *
 * The Gantt chart draws each op as a box on the row of its (rank, stream), coloured by class:
 * `boxxyerror` from the data file, so gnuplot needs no per-op objects and a chart of a hundred
 * thousand ops renders in seconds.  Rows are ordered by rank, then by stream creation order.
 * What keeps it readable at any size: boxes have no border (at a thousand boxes per row the
 * borders alone paint a row black), touching boxes of one class on one row are merged into one
 * (the data file holds the merged intervals), every class has a fixed colour, the legend sits
 * outside the plot, and a window (SsimGanttView) zooms into a time range, clipping the boxes.
 */
#include <shiftsim/plot.h>
#include <shiftsim/report.h>
#include <shiftsim/opclass.h>
#include <shiftsim/output.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

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

gboolean ssim_plot_check(const char *image, GError **error)
{
    g_autofree char *gp = ssim_plot_sibling(image, ".gp");
    g_autofree char *dat = ssim_plot_sibling(image, ".dat");
    return ssim_output_check(image, error) && ssim_output_check(gp, error) &&
           ssim_output_check(dat, error);
}

/* `script` with its `set output 'IMAGE'` pointing at `temp` instead (NULL when it has none). */
static GString *retarget(const GString *script, const char *image, const char *temp)
{
    g_autoptr(GString) from = g_string_new("set output ");
    ssim_plot_quote(from, image);
    const char *at = strstr(script->str, from->str);
    if (at == NULL)
        return NULL;
    GString *out = g_string_new_len(script->str, at - script->str);
    g_string_append(out, "set output ");
    ssim_plot_quote(out, temp);
    g_string_append(out, at + from->len);
    return out;
}

/* gnuplot's complaints: every stderr line but its warnings (newly allocated; "" for none). */
static char *gnuplot_errors(const char *err_text)
{
    g_autoptr(GString) out = g_string_new(NULL);
    g_auto(GStrv) lines = g_strsplit(err_text ? err_text : "", "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *l = g_strstrip(lines[i]);
        if (l[0] == '\0' || strstr(l, "warning:") != NULL)
            continue;
        if (out->len)
            g_string_append(out, "; ");
        g_string_append(out, l);
    }
    if (out->len > 400) {
        g_string_truncate(out, 400);
        g_string_append(out, "...");
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The image gnuplot wrote at `temp` is whole: a PNG from its signature to its IEND chunk, an SVG
 * from its <svg element to </svg>.  FALSE with the reason otherwise. */
static gboolean image_is_whole(const char *temp, gboolean svg, const char *image, GError **error)
{
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(temp, &data, &len, NULL) || len == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                    "%s: gnuplot wrote no image (is the disk full?)", image);
        return FALSE;
    }
    static const guchar png_head[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const guchar png_tail[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    gboolean whole;
    if (svg) {
        g_autofree char *text = g_strndup(data, len);
        const char *close = g_strrstr(text, "</svg>");
        whole = strstr(text, "<svg") != NULL && close != NULL;
        for (const char *p = close ? close + 6 : ""; whole && *p; p++)
            whole = g_ascii_isspace(*p);
    } else {
        whole = len >= sizeof png_head + sizeof png_tail &&
                memcmp(data, png_head, sizeof png_head) == 0 &&
                memcmp(data + len - sizeof png_tail, png_tail, sizeof png_tail) == 0;
    }
    if (!whole) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                    "%s: gnuplot wrote an incomplete %s (%" G_GSIZE_FORMAT " bytes; is the disk "
                    "full?); the earlier file, if any, is left as it was",
                    image, svg ? "SVG" : "PNG", len);
        return FALSE;
    }
    return TRUE;
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
    /* gnuplot draws into a temporary beside the image, from a copy of the script that names
     * it; the image is renamed into place only once it is checked whole. */
    g_autoptr(SsimOutput) img = ssim_output_open(image, error);
    if (img == NULL || !ssim_output_close(img, error))
        return FALSE;
    g_autoptr(GString) render = retarget(script, image, ssim_output_temp_path(img));
    g_return_val_if_fail(render != NULL, FALSE); /* every script sets its output to `image` */
    g_autoptr(SsimOutput) run = ssim_output_open(gp, error);
    if (run == NULL || !ssim_output_append(run, render->str, render->len, error) ||
        !ssim_output_close(run, error))
        return FALSE;
    const char *argv[] = {gnuplot, ssim_output_temp_path(run), NULL};
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
    g_autofree char *complaints = gnuplot_errors(err_text);
    if (!g_spawn_check_wait_status(wait_status, NULL) || complaints[0] != '\0') {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                    "%s: gnuplot failed%s%s; the earlier image, if any, is left as it was", gp,
                    complaints[0] ? ": " : "", complaints);
        return FALSE;
    }
    if (!image_is_whole(ssim_output_temp_path(img), g_str_has_suffix(image, ".svg"), image,
                        error) ||
        !ssim_output_commit(img, error))
        return FALSE;
    *status = SSIM_PLOT_RENDERED;
    return TRUE;
}

/* ---- the Gantt chart ---- */

/* One drawn box: an op's span on its row, or several touching spans of one class merged. */
typedef struct {
    guint cls, row;
    SsimTime start, end;
} Box;

static gint box_cmp(gconstpointer pa, gconstpointer pb)
{
    const Box *a = pa, *b = pb;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* Fixed colours for the classes of opclass.h (Okabe-Ito, readable by the colour-blind), so that
 * a class has the same colour in every chart; other labels take the extra colours in turn. */
static const char *const class_colour[SSIM_OPCLASS_N] = {
    [SSIM_OPCLASS_FWD] = "#0072b2",       [SSIM_OPCLASS_BWD] = "#56b4e9",
    [SSIM_OPCLASS_RECOMPUTE] = "#e69f00", [SSIM_OPCLASS_OPTIMIZER] = "#4d4d4d",
    [SSIM_OPCLASS_TP] = "#009e73",        [SSIM_OPCLASS_PP] = "#cc79a7",
    [SSIM_OPCLASS_DP] = "#d55e00",        [SSIM_OPCLASS_CP] = "#882255",
};
static const char *const extra_colour[] = {"#999999", "#f0e442", "#8c564b",
                                           "#17becf", "#bcbd22", "#7f7f7f"};

gboolean ssim_gantt_window_parse(const char *text, SsimGanttView *view, GError **error)
{
    const char *colon = text ? strchr(text, ':') : NULL;
    double ms[2] = {0, 0};
    gboolean given[2] = {FALSE, FALSE};
    if (colon != NULL) {
        g_auto(GStrv) part = g_new0(char *, 3);
        part[0] = g_strndup(text, (gsize)(colon - text));
        part[1] = g_strdup(colon + 1);
        for (guint k = 0; k < 2; k++) {
            g_strstrip(part[k]);
            if (part[k][0] == '\0')
                continue;
            char *end = NULL;
            ms[k] = g_ascii_strtod(part[k], &end);
            if (*end != '\0' || !isfinite(ms[k]) || ms[k] < 0 || ms[k] > 1e12) {
                colon = NULL;
                break;
            }
            given[k] = TRUE;
        }
    }
    if (colon == NULL || (given[0] && given[1] && ms[1] <= ms[0]) || (given[1] && ms[1] == 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "'%s': expected START:END in milliseconds with END after START (either may "
                    "be left out: '100:' from 100 ms to the end, ':50' the first 50 ms)",
                    text ? text : "");
        return FALSE;
    }
    view->from = given[0] ? (SsimTime)llround(ms[0] * 1e6) : 0;
    view->to = given[1] ? (SsimTime)llround(ms[1] * 1e6) : 0;
    return TRUE;
}

gboolean ssim_plot_gantt(const SsimGraph *g, const SsimTimeline *t, const char *image,
                         const SsimGanttView *view, const char *title, SsimPlotStatus *status,
                         GError **error)
{
    static const SsimGanttView whole = {0};
    if (view == NULL)
        view = &whole;
    guint32 nr = ssim_graph_n_ranks(g), ns = ssim_graph_n_streams(g);
    guint max_ranks = view->max_ranks == 0 || view->max_ranks > nr ? nr : view->max_ranks;
    SsimTime from = view->from, to = view->to > 0 ? view->to : MAX(t->makespan, from + 1);
    /* Rows: streams of the shown ranks in (rank, creation) order. */
    g_autofree guint32 *row = g_new(guint32, MAX(ns, 1));
    g_autoptr(GArray) row_stream = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint32 r = 0; r < max_ranks; r++)
        for (guint32 s = 0; s < ns; s++)
            if (ssim_graph_stream_rank(g, s) == r) {
                row[s] = row_stream->len;
                g_array_append_val(row_stream, s);
            }
    /* Classes: the known ones (opclass.h) first, in their order, then other labels by first
     * appearance.  A class is numbered by the position of its name in `cls_names`. */
    g_autoptr(GHashTable) cls_index = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GPtrArray) cls_names = g_ptr_array_new();
    for (guint c = 0; c < SSIM_OPCLASS_N; c++) {
        g_ptr_array_add(cls_names, (gpointer)ssim_opclass_name(c));
        g_hash_table_insert(cls_index, (gpointer)ssim_opclass_name(c), GUINT_TO_POINTER(c + 1));
    }
    /* The boxes inside the window, clipped to it. */
    g_autoptr(GArray) boxes = g_array_new(FALSE, FALSE, sizeof(Box));
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        SsimTime a = MAX(t->start[i], from), z = MIN(t->end[i], to);
        if (op->rank >= max_ranks || z <= a)
            continue;
        const char *cls = ssim_graph_string(g, op->cls);
        if (cls[0] == '\0')
            cls = op->kind == SSIM_OP_COMPUTE ? "compute" : ssim_op_kind_name(op->kind);
        gpointer v = g_hash_table_lookup(cls_index, cls);
        if (v == NULL) {
            v = GUINT_TO_POINTER(cls_names->len + 1);
            g_ptr_array_add(cls_names, (gpointer)cls);
            g_hash_table_insert(cls_index, (gpointer)cls, v);
        }
        Box b = {GPOINTER_TO_UINT(v) - 1, row[op->stream], a, z};
        g_array_append_val(boxes, b);
    }
    /* Boxes of one class that touch or overlap on one row become one: a thousand kernels back
     * to back are one bar, not a thousand slivers with seams. */
    g_array_sort(boxes, box_cmp);
    guint n = 0;
    for (guint k = 0; k < boxes->len; k++) {
        Box *b = &g_array_index(boxes, Box, k), *last = n ? &g_array_index(boxes, Box, n - 1) : 0;
        if (last && last->cls == b->cls && last->row == b->row && b->start <= last->end)
            last->end = MAX(last->end, b->end);
        else
            g_array_index(boxes, Box, n++) = *b;
    }
    g_array_set_size(boxes, n);

    /* The data: one block per class present, so `index i` gets one colour each. */
    double scale = to - from > 20 * SSIM_MS ? 1e-6 : 1e-3; /* ms or us on the axis */
    const char *unit = scale == 1e-6 ? "ms" : "us";
    g_autoptr(GString) dat = g_string_new(NULL);
    g_string_append_printf(dat, "# start_%s end_%s row; one block per class\n", unit, unit);
    g_autoptr(GArray) shown = g_array_new(FALSE, FALSE, sizeof(guint)); /* classes, in order */
    for (guint k = 0; k < boxes->len; k++) {
        const Box *b = &g_array_index(boxes, Box, k);
        if (k == 0 || b[-1].cls != b->cls) {
            g_string_append_printf(dat, "%s# class %s\n", k ? "\n\n" : "",
                                   (char *)g_ptr_array_index(cls_names, b->cls));
            g_array_append_val(shown, b->cls);
        }
        char x[G_ASCII_DTOSTR_BUF_SIZE], y[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append_printf(
            dat, "%s %s %u\n", g_ascii_formatd(x, sizeof x, "%.6f", (double)b->start * scale),
            g_ascii_formatd(y, sizeof y, "%.6f", (double)b->end * scale), b->row);
    }
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;

    /* The script: a row per stream, labelled; the legend outside, right of the plot; no border
     * on a box (thousands of borders would paint the chart black). */
    g_autoptr(GString) gp =
        g_string_new("# Gantt chart of a shiftsim timeline; render: gnuplot THIS_FILE\n");
    gboolean svg = g_str_has_suffix(image, ".svg");
    guint rows = row_stream->len;
    g_string_append_printf(gp, "set terminal %s size 1200,%u font ',11'\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced",
                           MIN(140 + 20 * MAX(rows, 4), 4000u));
    ssim_plot_quote(gp, image);
    g_autofree char *full_title =
        view->from || view->to
            ? g_strdup_printf("%s [window %.6g to %.6g ms]", title ? title : "shiftsim timeline",
                              (double)from / 1e6, (double)to / 1e6)
            : g_strdup(title ? title : "shiftsim timeline");
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, full_title);
    char a[G_ASCII_DTOSTR_BUF_SIZE], z[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(gp, "\nset xlabel 'time (%s)'\nset xrange [%s:%s]\n", unit,
                           g_ascii_formatd(a, sizeof a, "%.6f", (double)from * scale),
                           g_ascii_formatd(z, sizeof z, "%.6f", (double)to * scale));
    g_string_append_printf(gp, "set yrange [%u.6:-0.6]\nset ytics (", rows ? rows - 1 : 0);
    /* Past 190 rows (the 4000-pixel cap leaves under 20 pixels a row) the labels would overlap:
     * then only each rank's first row is labelled, with the rank alone. */
    gboolean dense = rows > 190;
    for (guint k = 0; k < rows; k++) {
        guint32 s = g_array_index(row_stream, guint32, k);
        guint32 r = ssim_graph_stream_rank(g, s);
        if (dense && k > 0 &&
            ssim_graph_stream_rank(g, g_array_index(row_stream, guint32, k - 1)) == r)
            continue;
        g_autofree char *lab = dense ? g_strdup_printf("r%u", r)
                                     : g_strdup_printf("r%u %s", r, ssim_graph_stream_name(g, s));
        g_string_append(gp, k ? ", " : "");
        ssim_plot_quote(gp, lab);
        g_string_append_printf(gp, " %u", k);
    }
    g_string_append(gp,
                    ")\nset grid xtics\nset key outside right top Left reverse samplen 2 width 2\n"
                    "set style fill solid 1.0 noborder\n");
    /* A box is drawn at least a pixel wide (of the about 900 the plot area has), so an op
     * shorter than a pixel still shows its colour; the data keeps its true span. */
    char px[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(
        gp, "hw = %s\nw(a, z) = (z - a) / 2 > hw ? (z - a) / 2 : hw\n",
        g_ascii_formatd(px, sizeof px, "%.6g", (double)(to - from) * scale / 1800));
    g_string_append(gp, "plot ");
    guint extra = 0;
    for (guint k = 0; k < shown->len; k++) {
        guint c = g_array_index(shown, guint, k);
        const char *colour = c < SSIM_OPCLASS_N
                                 ? class_colour[c]
                                 : extra_colour[extra++ % G_N_ELEMENTS(extra_colour)];
        g_string_append(gp, k ? ", \\\n     " : "");
        ssim_plot_quote(gp, dat_path);
        g_string_append_printf(gp,
                               " index %u using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                               "lc rgb '%s' title ",
                               k, colour);
        ssim_plot_quote(gp, g_ptr_array_index(cls_names, c));
    }
    if (shown->len == 0)
        g_string_append(gp, "NaN notitle");
    g_string_append_c(gp, '\n');
    return ssim_plot_render(image, gp, status, error);
}
