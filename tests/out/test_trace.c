/*
 * Timelines people look at: the Perfetto trace parses back with json-glib and has one complete
 * event per op on the right process/thread, named processes and threads, and one flow pair per
 * transfer; the Gantt plot's data and script are checked as text (no gnuplot needed).
 */
#include <criterion/criterion.h>
#include <json-glib/json-glib.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/plot.h>
#include <shiftsim/trace.h>
#include <glib/gstdio.h>
#include <string.h>

static SsimGraph *load_example(const char *name, SsimTimeline **t)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", name, NULL);
    SsimGraph *g = ssim_graphfile_load(path, NULL);
    cr_assert_not_null(g);
    *t = ssim_runtime_run(g, NULL, NULL, NULL);
    cr_assert_not_null(*t);
    return g;
}

Test(trace, perfetto_json_round_trip)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("tp-pipeline.graph", &t);
    g_autoptr(GString) json = ssim_trace_json(g, t, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    GError *error = NULL;
    cr_assert(json_parser_load_from_data(p, json->str, (gssize)json->len, &error), "%s",
              error ? error->message : "");
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    guint ns = ssim_graph_n_streams(g);
    g_autofree guint *per_thread = g_new0(guint, ns);
    guint complete = 0, flows_s = 0, flows_f = 0, thread_names = 0, process_names = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if (strcmp(ph, "X") == 0) {
            gint64 tid = json_object_get_int_member(e, "tid");
            gint64 pid = json_object_get_int_member(e, "pid");
            cr_assert(tid >= 0 && tid < ns);
            cr_assert_eq((guint32)pid, ssim_graph_stream_rank(g, (guint32)tid));
            cr_assert(json_object_get_double_member(e, "dur") >= 0);
            per_thread[tid]++;
            complete++;
        } else if (strcmp(ph, "s") == 0) {
            flows_s++;
        } else if (strcmp(ph, "f") == 0) {
            flows_f++;
        } else if (strcmp(ph, "M") == 0) {
            const char *name = json_object_get_string_member(e, "name");
            thread_names += strcmp(name, "thread_name") == 0;
            process_names += strcmp(name, "process_name") == 0;
        }
    }
    cr_assert_eq(complete, ssim_graph_n_ops(g));
    /* 4 ranks x 3 streams; each stream has 2 (tp, pp) or 4 (compute) ops. */
    for (guint s = 0; s < ns; s++) {
        const char *name = ssim_graph_stream_name(g, s);
        cr_assert_eq(per_thread[s], strcmp(name, "compute") == 0 ? 4u : 2u, "stream %s", name);
    }
    cr_assert_eq(flows_s, 4);
    cr_assert_eq(flows_f, 4);
    cr_assert_eq(thread_names, ns);
    cr_assert_eq(process_names, 4);

    /* Events on one thread never overlap (they nest trivially). */
    ssim_timeline_free(t);
}

Test(trace, max_ranks_limits_the_trace)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("tp-pipeline.graph", &t);
    g_autoptr(GString) json = ssim_trace_json(g, t, 2);
    /* Ranks 0 and 1 only: 16 ops, and no flow (all transfers end on ranks 2 and 3). */
    guint n = 0;
    for (const char *p = json->str; (p = strstr(p, "\"ph\":\"X\"")); p++)
        n++;
    cr_assert_eq(n, 16);
    cr_assert_null(strstr(json->str, "\"ph\":\"s\""));
    ssim_timeline_free(t);
}

Test(plot, gantt_data_and_script)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("two-streams.graph", &t);
    g_autofree char *dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "g.png", NULL);
    SsimPlotStatus st;
    GError *error = NULL;
    /* gnuplot may or may not be installed: both outcomes are fine, the text is what we check. */
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    gboolean ok = ssim_plot_gantt(g, t, png, 0, "two streams", &st, &error);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok, "%s", error ? error->message : "");
    cr_assert_eq(st, SSIM_PLOT_NO_GNUPLOT);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *dat = NULL, *gp = NULL;
    cr_assert(g_file_get_contents(dat_path, &dat, NULL, NULL));
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    /* Classes by first appearance: compute (bwd.l2, bwd.l1, optimizer), then dp. The barrier
     * has zero length and is not drawn.  Times in microseconds (makespan < 20 ms). */
    cr_assert(strstr(dat, "# class compute\n150.000000 0 150.000000 0.38 0\n"
                          "450.000000 0 150.000000 0.38 0\n825.000000 0 25.000000 0.38 0\n"),
              "%s", dat);
    cr_assert(strstr(dat, "# class dp\n400.000000 1 100.000000 0.38 1\n"
                          "700.000000 1 100.000000 0.38 1\n"),
              "%s", dat);
    cr_assert(strstr(gp, "set ytics ('r0 compute' 0, 'r0 comm' 1, 'r0 host' 2)"), "%s", gp);
    cr_assert(strstr(gp, "index 1 using 1:2:3:4 with boxxyerror lc 2 title 'dp'"), "%s", gp);
    cr_assert(strstr(gp, "set title 'two streams'"));
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
    ssim_timeline_free(t);
}

Test(plot, sibling_and_quote)
{
    g_autofree char *a = ssim_plot_sibling("out/x.png", ".gp");
    g_autofree char *b = ssim_plot_sibling("dir.v2/x", ".dat");
    cr_assert_str_eq(a, "out/x.gp");
    cr_assert_str_eq(b, "dir.v2/x.dat");
    g_autoptr(GString) q = g_string_new(NULL);
    ssim_plot_quote(q, "it's");
    cr_assert_str_eq(q->str, "'it''s'");
}
