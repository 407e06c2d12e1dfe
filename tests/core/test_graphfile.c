/*
 * The op-graph text format: every parse error path (fixtures in tests/data/graphs/, each
 * checked for the file, line and field its message names), the number parsers, and a round
 * trip through ssim_graphfile_write().
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/runtime.h>
#include <string.h>

/* Inline arrays, not pointers: Criterion copies parameters into the test's own process. */
typedef struct {
    char file[40];
    int line;       /* 0: a structural error without a line */
    char field[16]; /* "": no field in the message */
    char fragment[80];
} BadCase;

static const BadCase bad_cases[] = {
    {"empty.graph", 1, "version", "the file is empty"},
    {"no-version.graph", 1, "version", "expected '# shiftsim-graph v1'"},
    {"bad-version.graph", 1, "version", "found '# shiftsim-graph v9'"},
    {"too-few-fields.graph", 2, "", "expected 'ID RANK STREAM KIND"},
    {"bad-id.graph", 2, "id", "'x1' is not an op id"},
    {"negative-rank.graph", 2, "rank", "'-1' is not a rank"},
    {"huge-rank.graph", 2, "rank", "'99999999999' is not a rank"},
    {"bad-stream.graph", 2, "stream", "'comp,ute' is not a valid stream name"},
    {"bad-kind.graph", 2, "kind", "unknown kind 'gemm'"},
    {"not-key-value.graph", 2, "", "'fast' is not a key=value field"},
    {"unknown-key.graph", 2, "color", "unknown key"},
    {"duplicate-key.graph", 2, "dur", "given twice"},
    {"empty-value.graph", 2, "dur", "empty value"},
    {"bad-duration.graph", 2, "dur", "'5parsecs' is not a duration"},
    {"negative-duration.graph", 2, "dur", "'-5us' is not a duration"},
    {"nan-duration.graph", 2, "dur", "'nan' is not a duration"},
    {"bad-bytes.graph", 3, "bytes", "'1.5' is not a byte size: not a whole number"},
    {"bad-flops.graph", 2, "flops", "'lots' is not a FLOP count"},
    {"compute-no-cost.graph", 2, "dur", "a compute op needs dur="},
    {"compute-with-group.graph", 3, "group", "not allowed on a compute op"},
    {"undefined-group.graph", 2, "group", "no group named 'tp'"},
    {"coll-no-group.graph", 2, "group", "a allreduce needs group="},
    {"coll-no-bytes.graph", 3, "bytes", "a collective needs bytes="},
    {"coll-with-peer.graph", 3, "peer", "not allowed on a allreduce"},
    {"not-member.graph", 3, "group", "rank 2 is not a member of group g"},
    {"send-no-peer.graph", 2, "peer", "a send needs peer="},
    {"send-self.graph", 2, "peer", "a send to its own rank"},
    {"send-no-bytes.graph", 2, "bytes", "a send needs bytes="},
    {"send-with-group.graph", 3, "group", "not allowed on a send"},
    {"bad-peer.graph", 2, "peer", "'one' is not a rank"},
    {"bad-tag.graph", 2, "tag", "'-3' is not a tag"},
    {"bad-class.graph", 2, "class", "'a,b' is not a valid class name"},
    {"bad-name.graph", 2, "name", "'a,b' is not a valid name"},
    {"duplicate-id.graph", 4, "id", "op id 1 is already used on line 2"},
    {"unknown-dep.graph", 3, "deps", "no op has id 7"},
    {"bad-dep.graph", 2, "deps", "'1x' is not an op id"},
    {"self-dep.graph", 2, "deps", "op 1 depends on itself"},
    {"cycle.graph", 0, "", "dependency cycle"},
    {"group-empty.graph", 2, "group", "at least one rank"},
    {"group-bad-rank.graph", 2, "group", "'x' is not a rank"},
    {"group-bad-range.graph", 2, "group", "'3-1' is not a rank range"},
    {"group-repeat.graph", 2, "group", "lists rank 1 twice"},
    {"group-twice.graph", 3, "group", "group 'g' is defined twice"},
    {"group-bad-name.graph", 2, "group", "'g,h' is not a valid name"},
    {"group-too-many-members.graph", 4, "group", "more than 67108864 ranks in all"},
    {"twice-in-collective.graph", 0, "", "rank 0 enters g collective tag 0 twice"},
    {"mismatched-collective.graph", 0, "", "allgather of 8 bytes vs allreduce of 8 bytes"},
    {"binary.graph", 0, "", "contains a NUL byte"},
};

ParameterizedTestParameters(graphfile, bad_inputs)
{
    return cr_make_param_array(BadCase, bad_cases, G_N_ELEMENTS(bad_cases));
}

ParameterizedTest(const BadCase *c, graphfile, bad_inputs)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "graphs", c->file, NULL);
    GError *error = NULL;
    SsimGraph *g = ssim_graphfile_load(path, &error);
    cr_assert_null(g, "%s parsed although it is broken", c->file);
    cr_assert_not_null(error);
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, error->code) ||
                  g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH),
              "%s: unexpected error domain", c->file);
    g_autofree char *prefix =
        c->line ? (c->field[0] ? g_strdup_printf("%s:%d: %s: ", path, c->line, c->field)
                               : g_strdup_printf("%s:%d: ", path, c->line))
                : g_strdup_printf("%s: ", path);
    cr_assert(g_str_has_prefix(error->message, prefix), "%s: message '%s' should start with '%s'",
              c->file, error->message, prefix);
    cr_assert(strstr(error->message, c->fragment) != NULL, "%s: message '%s' should contain '%s'",
              c->file, error->message, c->fragment);
    g_error_free(error);
}

Test(graphfile, missing_file_names_the_path)
{
    GError *error = NULL;
    cr_assert_null(ssim_graphfile_load("/nonexistent/x.graph", &error));
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO));
    cr_assert(g_str_has_prefix(error->message, "/nonexistent/x.graph: cannot read"));
    g_error_free(error);
}

Test(graphfile, durations_and_bytes)
{
    SsimTime t;
    guint64 b;
    cr_assert(ssim_parse_duration("1500", &t, NULL) && t == 1500);
    cr_assert(ssim_parse_duration("1.5us", &t, NULL) && t == 1500);
    cr_assert(ssim_parse_duration("2ms", &t, NULL) && t == 2000000);
    cr_assert(ssim_parse_duration("0.25s", &t, NULL) && t == 250000000);
    cr_assert(ssim_parse_duration("0.4ns", &t, NULL) && t == 0);
    cr_assert(ssim_parse_duration("0.6ns", &t, NULL) && t == 1);
    cr_assert_not(ssim_parse_duration("1e400", &t, NULL));
    cr_assert_not(ssim_parse_duration("inf", &t, NULL));
    cr_assert_not(ssim_parse_duration("5 us", &t, NULL));
    cr_assert(ssim_parse_bytes("4096", &b, NULL) && b == 4096);
    cr_assert(ssim_parse_bytes("16MiB", &b, NULL) && b == 16u << 20);
    cr_assert(ssim_parse_bytes("1.5GB", &b, NULL) && b == 1500000000u);
    cr_assert(ssim_parse_bytes("2KiB", &b, NULL) && b == 2048);
    cr_assert_not(ssim_parse_bytes("0.5B", &b, NULL));
    cr_assert_not(ssim_parse_bytes("-1", &b, NULL));
    /* The one grammar (docs/units.md): a graph file takes 40M (SI) and 40Mi (IEC) like --bucket. */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = ssim_graphfile_parse("si.graph",
                                                  "# shiftsim-graph v1\n"
                                                  "1 0 s0 compute bytes=40M dur=1us\n"
                                                  "2 0 s0 compute bytes=40Mi dur=1us\n",
                                                  -1, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    cr_expect_eq(ssim_graph_op(g, 0)->bytes, 40000000);
    cr_expect_eq(ssim_graph_op(g, 1)->bytes, 40u << 20);
}

Test(graphfile, comments_blank_lines_and_ranges)
{
    const char *text = "# shiftsim-graph v1\r\n"
                       "\n"
                       "group all 0-2   # three ranks\n"
                       "   # indented comment\n"
                       "7 0 s0 allreduce bytes=1KiB group=all\t name=g.ar\n"
                       "8 1 s0 allreduce bytes=1KiB group=all\n"
                       "9 2 s0 allreduce bytes=1KiB group=all deps=10\n"
                       "10 2 s1 compute dur=1us\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = ssim_graphfile_parse("inline", text, -1, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_ops(g), 4);
    cr_assert_eq(ssim_graph_n_ranks(g), 3);
    guint n;
    ssim_graph_group_ranks(g, 0, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(ssim_graph_n_matches(g), 1);
    cr_assert_eq(ssim_graph_find_id(g, 10), 3);
    cr_assert_eq(ssim_graph_op(g, 0)->bytes, 1024);
}

Test(graphfile, round_trip_is_identical)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", "tp-pipeline.graph", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) a = ssim_graphfile_load(path, &error);
    cr_assert_not_null(a, "%s", error ? error->message : "");
    g_autoptr(GString) text_a = ssim_graphfile_write(a);
    g_autoptr(SsimGraph) b = ssim_graphfile_parse("rewritten", text_a->str, -1, &error);
    cr_assert_not_null(b, "%s", error ? error->message : "");
    g_autoptr(GString) text_b = ssim_graphfile_write(b);
    cr_assert_str_eq(text_a->str, text_b->str);

    g_autoptr(SsimTimeline) ta = ssim_runtime_run(a, NULL, NULL, &error);
    g_autoptr(SsimTimeline) tb = ssim_runtime_run(b, NULL, NULL, &error);
    cr_assert(ta && tb);
    cr_assert_eq(ta->makespan, tb->makespan);
    for (guint32 i = 0; i < ta->n_ops; i++)
        cr_assert_eq(ta->end[i], tb->end[i]);
}

/* A UTF-8 byte order mark before the version line (a Windows editor's) is skipped: the graph is
 * the one without it; a file of only the mark is empty. */
Test(graphfile, byte_order_mark_is_skipped)
{
    const char *text = "# shiftsim-graph v1\n0 0 s0 compute dur=1us\n1 0 s0 compute dur=2us\n";
    g_autofree char *marked = g_strconcat("\xef\xbb\xbf", text, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) a = ssim_graphfile_parse("a", text, -1, &error);
    g_autoptr(SsimGraph) b = ssim_graphfile_parse("a", marked, -1, &error);
    cr_assert_not_null(b, "%s", error ? error->message : "");
    g_autoptr(GString) wa = ssim_graphfile_write(a);
    g_autoptr(GString) wb = ssim_graphfile_write(b);
    cr_assert_str_eq(wa->str, wb->str);
    g_autoptr(SsimGraph) none = ssim_graphfile_parse("m", "\xef\xbb\xbf", -1, &error);
    cr_assert_null(none);
    cr_assert(strstr(error->message, "m:1: version: the file is empty"), "%s", error->message);
}
