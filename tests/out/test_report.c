/*
 * Reporters: the replay summary in each format (JSON parsed back with json-glib), the timeline
 * CSV's shape, and atomic output files.
 */
#include "tests/test_common.h"

#include <json-glib/json-glib.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/report.h>
#include <glib/gstdio.h>
#include <string.h>

static SsimGraph *example(SsimTimeline **t)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", "two-streams.graph", NULL);
    GError *error = NULL;
    SsimGraph *g = ssim_graphfile_load(path, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    *t = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(*t);
    return g;
}

Test(report, two_streams_example_matches_its_hand_timeline)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = example(&t);
    /* The file's header comment gives the timeline. */
    const SsimTime want[][2] = {{0, 300000},      {300000, 500000}, {300000, 600000},
                                {600000, 800000}, {800000, 800000}, {800000, 850000}};
    for (guint i = 0; i < 6; i++) {
        cr_assert_eq(t->start[i], want[i][0], "op %u", i);
        cr_assert_eq(t->end[i], want[i][1], "op %u", i);
    }
    g_autofree SsimTime *busy = NULL;
    g_autofree SsimRankSummary *rs = NULL;
    ssim_timeline_summarize(g, t, &busy, &rs);
    cr_assert_eq(rs[0].busy_union, 850000);
    cr_assert_eq(rs[0].overlap, 200000);
    ssim_timeline_free(t);
}

Test(report, json_summary_parses_back)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = example(&t);
    g_autoptr(GString) s = ssim_report_replay(g, t, SSIM_FORMAT_JSON, "x.graph");
    g_autoptr(JsonParser) p = json_parser_new();
    GError *error = NULL;
    cr_assert(json_parser_load_from_data(p, s->str, (gssize)s->len, &error), "%s",
              error ? error->message : "");
    JsonObject *root = json_node_get_object(json_parser_get_root(p));
    cr_assert_eq(json_object_get_int_member(root, "makespan_ns"), 850000);
    cr_assert_eq(json_object_get_int_member(root, "ops"), 6);
    JsonArray *ranks = json_object_get_array_member(root, "ranks");
    cr_assert_eq(json_array_get_length(ranks), 1);
    JsonObject *r0 = json_array_get_object_element(ranks, 0);
    cr_assert_eq(json_object_get_int_member(r0, "overlap_ns"), 200000);
    JsonArray *streams = json_object_get_array_member(r0, "streams");
    cr_assert_eq(json_array_get_length(streams), 3);
    JsonObject *s0 = json_array_get_object_element(streams, 0);
    cr_assert_str_eq(json_object_get_string_member(s0, "name"), "compute");
    cr_assert_eq(json_object_get_int_member(s0, "busy_ns"), 650000);
    ssim_timeline_free(t);
}

Test(report, csv_summary_and_timeline_rows)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = example(&t);
    g_autoptr(GString) s = ssim_report_replay(g, t, SSIM_FORMAT_CSV, "x.graph");
    cr_assert(g_str_has_prefix(s->str, "rank,stream,ops,busy_ns,rank_busy_ns,rank_overlap_ns,"
                                       "makespan_ns\n0,compute,3,650000,850000,200000,850000\n"),
              "%s", s->str);
    g_autoptr(GString) tl = ssim_report_timeline_csv(g, t);
    g_auto(GStrv) lines = g_strsplit(tl->str, "\n", -1);
    cr_assert_eq(g_strv_length(lines), 8); /* header, 6 rows, empty tail */
    cr_assert_str_eq(lines[2], "2,ar.l2#2,0,comm,compute,dp,0,0,300000,300000,500000");
    ssim_timeline_free(t);
}

Test(report, write_file_is_atomic_and_reports_errors)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-report-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "out.csv", NULL);
    g_autoptr(GString) text = g_string_new("a,b\n1,2\n");
    cr_assert(ssim_write_file(path, text, NULL));
    g_autofree char *back = NULL;
    cr_assert(g_file_get_contents(path, &back, NULL, NULL));
    cr_assert_str_eq(back, "a,b\n1,2\n");
    g_autofree char *bad = g_build_filename(dir, "missing", "out.csv", NULL);
    GError *e = NULL;
    cr_assert_not(ssim_write_file(bad, text, &e));
    cr_assert(g_str_has_prefix(e->message, bad), "%s", e->message);
    g_clear_error(&e);
    /* Nothing but the one output is left in the directory: no temporary file. */
    GDir *d = g_dir_open(dir, 0, NULL);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    cr_assert_eq(n, 1);
    g_unlink(path);
    g_rmdir(dir);
}

/* Per rank, the time at least one (union) and at least two (overlap) of `n` intervals cover,
 * counted instant by instant on a small integer grid. */
static void brute_union(const SsimTime *start, const SsimTime *end, const guint32 *rank, guint n,
                        guint32 r, SsimTime horizon, SsimTime *u, SsimTime *o)
{
    *u = *o = 0;
    for (SsimTime x = 0; x < horizon; x++) {
        guint depth = 0;
        for (guint i = 0; i < n; i++)
            depth += rank[i] == r && start[i] <= x && x < end[i];
        *u += depth >= 1;
        *o += depth >= 2;
    }
}

Test(report, union_and_overlap_match_an_instant_by_instant_count)
{
    /* Random graphs of 3 ranks x 3 streams on a grid of 40 ns, so that many edges share an
     * instant; in one half each stream's ops follow each other in time, as the runtime runs
     * them (the summary merges the streams), in the other they may run in any order and overlap
     * (it sorts the rank's edges).  Zero-length ops count for nothing. */
    GRand *rng = g_rand_new_with_seed(7);
    for (guint round = 0; round < 40; round++) {
        gboolean in_order = round % 2 == 0;
        g_autoptr(SsimGraph) g = ssim_graph_new();
        const guint n = 30;
        SsimTime start[30], end[30], next[9] = {0};
        guint32 rank[30];
        for (guint i = 0; i < n; i++) {
            guint32 r = (guint32)g_rand_int_range(rng, 0, 3);
            guint s = (guint)g_rand_int_range(rng, 0, 3);
            char name[8];
            g_snprintf(name, sizeof name, "s%u", s);
            SsimOpSpec spec = SSIM_OP_SPEC_INIT;
            spec.stream = ssim_graph_stream(g, r, name);
            spec.duration = 0;
            ssim_graph_add_op(g, &spec, NULL, 0);
            SsimTime len = g_rand_int_range(rng, 0, 6);
            if (in_order) {
                start[i] = next[r * 3 + s] + g_rand_int_range(rng, 0, 3);
                next[r * 3 + s] = start[i] + len;
            } else {
                start[i] = g_rand_int_range(rng, 0, 34);
            }
            end[i] = start[i] + len;
            rank[i] = r;
        }
        GError *error = NULL;
        cr_assert(ssim_graph_finalize(g, &error));
        SsimTimeline t = {.n_ops = n, .n_copies = 1, .start = start, .end = end};
        g_autofree SsimTime *busy = NULL;
        g_autofree SsimRankSummary *rs = NULL;
        ssim_timeline_summarize(g, &t, &busy, &rs);
        for (guint32 r = 0; r < ssim_graph_n_ranks(g); r++) {
            SsimTime u, o;
            brute_union(start, end, rank, n, r, 64, &u, &o);
            cr_assert_eq(rs[r].busy_union, u,
                         "round %u rank %u: union %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT, round,
                         r, rs[r].busy_union, u);
            cr_assert_eq(rs[r].overlap, o,
                         "round %u rank %u: overlap %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT,
                         round, r, rs[r].overlap, o);
        }
    }
    g_rand_free(rng);
}
