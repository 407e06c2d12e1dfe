/*
 * Scriptable outputs (issue 20, item 4): when a file is '-', stdout carries only the data asked
 * for and every human line goes to stderr; sweep and merge print JSON of one shape.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"

#include "src/app/cli.h"
#include <shiftsim/cluster.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SWEEP "shiftsim", "sweep", "-c", "tsubame4", "-N", "8", "-b", "1", "-p", "alpa", "-k", "2"

Test(stdout, sweep_rows_on_stdout_table_on_stderr, .init = cr_redirect_stderr)
{
    const char *csv[] = {SWEEP, "-q", "-o", "-"};
    int rc = -1;
    g_autofree char *out = test_cli_stdout(csv, G_N_ELEMENTS(csv), &rc);
    cr_assert_eq(rc, 0);
    cr_expect(g_str_has_prefix(out, "# shiftsim-sweep v1\n"), "%s", out);
    cr_expect_null(strstr(out, "rank  index"), "the table on stdout:\n%s", out);
    const char *fcsv[] = {SWEEP, "-q", "-f", "csv"};
    g_autofree char *out2 = test_cli_stdout(fcsv, G_N_ELEMENTS(fcsv), &rc);
    cr_assert_eq(rc, 0);
    cr_expect_str_eq(out2, out, "-f csv and -o - print the same rows");
    g_autofree char *err = test_stderr();
    cr_expect(strstr(err, "rank  index"), "no table on stderr:\n%s", err);
    /* Both would write stdout: refused. */
    const char *both[] = {SWEEP, "-q", "-f", "json", "-o", "-"};
    g_autofree char *none = test_cli_stdout(both, G_N_ELEMENTS(both), &rc);
    cr_expect_eq(rc, 2);
    cr_expect_str_empty(none);
}

/* sweep -f json and merge -f json of the same sweep's CSV print the same object; its rows are
 * the CSV's, typed. */
Test(stdout, sweep_and_merge_json_have_one_shape, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-json-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "all.csv", NULL);
    const char *json[] = {SWEEP, "-q", "-f", "json", "-o", path};
    int rc = -1;
    g_autofree char *a = test_cli_stdout(json, G_N_ELEMENTS(json), &rc);
    cr_assert_eq(rc, 0);
    const char *merge[] = {"shiftsim", "merge", "-f", "json", path};
    g_autofree char *b = test_cli_stdout(merge, G_N_ELEMENTS(merge), &rc);
    cr_assert_eq(rc, 0);
    cr_expect_str_eq(a, b);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, a, -1, NULL), "%s", a);
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    cr_expect_str_eq(json_object_get_string_member(o, "format"), "shiftsim-sweep v1");
    cr_expect(g_str_has_prefix(json_object_get_string_member(o, "spec"), "model=gpt-j-6b "));
    JsonArray *rows = json_object_get_array_member(o, "rows");
    g_autofree char *csv = NULL;
    cr_assert(g_file_get_contents(path, &csv, NULL, NULL));
    guint lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(json_array_get_length(rows), lines - 3, "one object per CSV row");
    /* Every row is typed: one that ran has figures and a null reason, one that did not (an
     * illegal split, a misfit) null figures and its reason. */
    guint n_ok = 0, n_other = 0;
    for (guint i = 0; i < json_array_get_length(rows); i++) {
        JsonObject *r = json_array_get_object_element(rows, i);
        cr_expect_eq(json_object_get_int_member(r, "index"), (gint64)i);
        if (strcmp(json_object_get_string_member(r, "status"), "ok") == 0) {
            n_ok++;
            cr_expect_gt(json_object_get_double_member(r, "tokens_per_s"), 0);
            cr_expect(json_node_is_null(json_object_get_member(r, "reason")));
        } else {
            n_other++;
            cr_expect(json_node_is_null(json_object_get_member(r, "tokens_per_s")));
            cr_expect_gt(strlen(json_object_get_string_member(r, "reason")), 0);
        }
    }
    cr_expect_gt(n_ok, 0);
    cr_expect_gt(n_other, 0, "the sweep has rows that did not run");
    const char *table[] = {"shiftsim", "merge", "-f", "table", path};
    g_autofree char *t = test_cli_stdout(table, G_N_ELEMENTS(table), &rc);
    cr_expect_eq(rc, 2);
    g_unlink(path);
    g_rmdir(dir);
}

/* simulate and replay with --timeline -: stdout is the timeline CSV alone; the summary goes to
 * stderr. */
Test(stdout, timeline_dash_is_the_timeline_alone, .init = cr_redirect_stderr)
{
    const char *sim[] = {"shiftsim", "simulate", "-c",   "tsubame4", "-n", "2",
                         "--tp",     "2",        "--pp", "2",        "-t", "-"};
    const char *rep[] = {"shiftsim", "replay", "-t", "-"};
    struct {
        const char *const *argv;
        int argc;
    } runs[] = {{sim, G_N_ELEMENTS(sim)}, {rep, G_N_ELEMENTS(rep)}};
    for (gsize i = 0; i < G_N_ELEMENTS(runs); i++) {
        int rc = -1;
        g_autofree char *out = test_cli_stdout(runs[i].argv, runs[i].argc, &rc);
        cr_assert_eq(rc, 0);
        cr_expect(g_str_has_prefix(out, "id,name,rank,stream,kind,class,"), "%s", runs[i].argv[1]);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
        guint n = g_strv_length(lines);
        for (guint k = 1; k + 1 < n; k++)
            cr_assert(g_ascii_isdigit(lines[k][0]), "%s: not a timeline row: %s", runs[i].argv[1],
                      lines[k]);
    }
    g_autofree char *err = test_stderr();
    cr_expect(strstr(err, "step time"), "no summary on stderr:\n%s", err);
}

/* profile query -f csv|json: the figure the table line prints, as data. */
Test(stdout, profile_query_prints_data, .init = cr_redirect_stderr)
{
    g_autofree char *profile =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "vtrain-a100", NULL);
    const char *argv[] = {"shiftsim", "profile", "query",   profile, "--comm", "allreduce",
                          "--bytes",  "3M",      "--ranks", "6",     "-f",     "json"};
    int rc = -1;
    g_autofree char *json = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    cr_assert_eq(rc, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json, -1, NULL), "%s", json);
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    cr_expect_eq(json_object_get_int_member(o, "bytes"), 3000000);
    cr_expect_eq(json_object_get_int_member(o, "ranks"), 6);
    cr_expect_str_eq(json_object_get_string_member(o, "source"), "interpolated");
    double us = json_object_get_double_member(o, "time_us");
    argv[G_N_ELEMENTS(argv) - 1] = "table";
    g_autofree char *line = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    g_autofree char *want = g_strdup_printf("%.6g us (interpolated)\n", us);
    cr_expect_str_eq(line, want);
    argv[G_N_ELEMENTS(argv) - 1] = "csv";
    g_autofree char *csv = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    g_autofree char *row = g_strdup_printf("kind,op,bytes,ranks,per_node,dtype,time_us,source\n"
                                           "comm,allreduce,3000000,6,6,any,%.6g,interpolated\n",
                                           us);
    cr_expect_str_eq(csv, row);
}

/* profile show -f json|csv: the metadata and the rows per kind, which add up to the rows. */
Test(stdout, profile_show_prints_data, .init = cr_redirect_stderr)
{
    g_autofree char *profile =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "vtrain-a100", NULL);
    const char *argv[] = {"shiftsim", "profile", "show", profile, "-f", "json"};
    int rc = -1;
    g_autofree char *json = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    cr_assert_eq(rc, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json, -1, NULL), "%s", json);
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    gint64 rows = json_object_get_int_member(o, "rows");
    JsonObject *kinds = json_object_get_object_member(o, "rows_per_kind");
    gint64 sum = 0;
    g_autoptr(GList) names = json_object_get_members(kinds);
    for (GList *l = names; l; l = l->next)
        sum += json_object_get_int_member(kinds, l->data);
    cr_expect_gt(rows, 0);
    cr_expect_eq(sum, rows);
    cr_expect(g_str_has_prefix(
        json_object_get_string_member(json_object_get_object_member(o, "metadata"), "gpu"),
        "NVIDIA A100"));
    argv[G_N_ELEMENTS(argv) - 1] = "csv";
    g_autofree char *csv = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    g_autofree char *comm = g_strdup_printf("\ncomm,%" G_GINT64_FORMAT "\n", rows);
    cr_expect(g_str_has_prefix(csv, "kind,rows\n") && strstr(csv, comm), "%s", csv);
}

/* calibrate -f json|csv: the fit as data, the same figures the table prints. */
Test(stdout, calibrate_prints_data, .init = cr_redirect_stderr, .timeout = 120)
{
    g_autofree char *runs = g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "validation",
                                             "vtrain-a100-single.csv", NULL);
    const char *argv[] = {"shiftsim",   "calibrate", "--runs",  runs,  "--every", "160",
                          "--max-iter", "2",         "--folds", "0",   "--scan",  "0",
                          "-j",         "2",         "-f",      "json"};
    int rc = -1;
    g_autofree char *json = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    cr_assert_eq(rc, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json, -1, NULL), "%s", json);
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    cr_expect_eq(json_object_get_int_member(o, "fitted_rows"), 9, "rows 0, 160, ..., 1280");
    JsonArray *params = json_object_get_array_member(o, "parameters");
    cr_assert_eq(json_array_get_length(params), 1);
    JsonObject *p = json_array_get_object_element(params, 0);
    cr_expect_str_eq(json_object_get_string_member(p, "name"), "kernel_floor_us");
    double fitted = json_object_get_double_member(p, "fitted");
    JsonObject *after =
        json_object_get_object_member(json_object_get_object_member(o, "errors"), "after");
    double mape = json_object_get_double_member(after, "mape");

    argv[G_N_ELEMENTS(argv) - 1] = "table";
    g_autofree char *table = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    g_autofree char *want_fit = g_strdup_printf("%12.5g", fitted);
    g_autofree char *want_mape = g_strdup_printf("MAPE           %.2f %%", 100 * mape);
    cr_expect(strstr(table, want_fit), "no '%s' in\n%s", want_fit, table);
    cr_expect(strstr(table, want_mape), "no '%s' in\n%s", want_mape, table);

    argv[G_N_ELEMENTS(argv) - 1] = "csv";
    g_autofree char *csv = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    /* The start is the stock dgx-a100's measured host, 55.3 us a launch. */
    g_autofree char *row = g_strdup_printf("kernel_floor_us,55.3,%.6g,", fitted);
    cr_expect(g_str_has_prefix(csv, "parameter,start,fitted,low,high,std_error,at_bound\n"), "%s",
              csv);
    cr_expect(strstr(csv, row), "no '%s' in\n%s", row, csv);
}

/* calibrate --kineto -o writes the cluster with the host the trace measured (55.317 us a launch,
 * 650.052 us a change of thread on the bundled H200 trace), to the nanosecond, beside the GPU
 * figures of the cluster named; a trace with no host calls writes nothing and says why. */
Test(stdout, kineto_writes_the_measured_host, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-kineto-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "host.ini", NULL);
    const char *argv[] = {
        "shiftsim", "calibrate",
        "--kineto", SHIFTSIM_SOURCE_ROOT "/traces/h200/reference/kineto-gpt-j-layer.json",
        "-c",       "dgx-h200",
        "-o",       path};
    int rc = -1;
    g_autofree char *out = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    GError *error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load(path, &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_eq(c->kernel_floor, 55317);
    cr_assert_eq(c->microbatch_floor, 650052);
    g_autoptr(SsimCluster) stock = ssim_cluster_load("dgx-h200", NULL);
    cr_assert_eq(c->gpus_per_node, stock->gpus_per_node);
    cr_assert_float_eq(c->gemm_efficiency, stock->gemm_efficiency, 1e-12);

    g_autofree char *trace = g_build_filename(dir, "nohost.json", NULL);
    cr_assert(g_file_set_contents(
        trace,
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":2}]}",
        -1, NULL));
    g_autofree char *none = g_build_filename(dir, "none.ini", NULL);
    const char *bad[] = {"shiftsim", "calibrate", "--kineto", trace, "-o", none};
    g_autofree char *out2 = test_cli_stdout(bad, G_N_ELEMENTS(bad), &rc);
    cr_assert_neq(rc, 0);
    cr_assert_not(g_file_test(none, G_FILE_TEST_EXISTS), "nothing written");
    g_unlink(path);
    g_unlink(trace);
    g_rmdir(dir);
}
