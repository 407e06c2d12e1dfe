/*
 * The command line: exit statuses (0 ok, 1 runtime error, 2 usage error) and what goes to
 * stdout and stderr, driving ssim_cli_main() in the test process.
 *
 * No test here sets Criterion's `.timeout`: with two of these long tests (seconds under the
 * sanitizers) timed at once, Criterion 2.4's runner leaks 48 bytes of its timeout bookkeeping
 * now and then, which LeakSanitizer turns into a failed run; a hang is bounded by the suite's
 * own timeout (tests/meson.build) and the CI step's.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"
#include "src/app/cli.h"
#include <shiftsim/data.h>
#include <shiftsim/runs.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(cli, version, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "--version"};
    cr_assert_eq(test_cli(2, argv), 0);
    cr_assert_stdout_eq_str("shiftsim 0.1.0\n");
}

Test(cli, no_verb_is_a_usage_error, .init = test_redirect)
{
    const char *argv[] = {"shiftsim"};
    cr_assert_eq(test_cli(1, argv), 2);
}

Test(cli, unknown_verb, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "frobnicate"};
    cr_assert_eq(test_cli(2, argv), 2);
    cr_assert_stderr_eq_str("shiftsim: unknown verb 'frobnicate' (try 'shiftsim --help')\n");
}

Test(cli, replay_default_example, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--format", "csv"};
    cr_assert_eq(test_cli(4, argv), 0);
}

Test(cli, replay_bad_option_is_usage_error, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--format", "xml"};
    cr_assert_eq(test_cli(4, argv), 2);
    cr_assert_stderr_eq_str("shiftsim replay: --format: 'xml' is not table, csv or json (try "
                            "'shiftsim replay --help')\n");
}

Test(cli, replay_missing_file_is_runtime_error, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "replay", "/nonexistent.graph"};
    cr_assert_eq(test_cli(3, argv), 1);
}

Test(cli, replay_deadlock_is_runtime_error, .init = test_redirect)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "graphs", "deadlock.graph", NULL);
    const char *argv[] = {"shiftsim", "replay", path};
    cr_assert_eq(test_cli(3, argv), 1);
}

Test(cli, replay_until_cuts_a_run_short, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--until", "1us"};
    cr_assert_eq(test_cli(4, argv), 1);
}

/* --comm-repeat 1 is the same run as no --comm-repeat: every verb that simulates prints the
 * same bytes (simulate's JSON, compare's CSV, sweep's CSV with its metadata line). */
Test(cli, comm_repeat_once_changes_no_byte, .init = cr_redirect_stderr)
{
    const char *simulate[] = {"shiftsim",      "simulate", "-c",   "tsubame4", "-n", "2",
                              "--tp",          "2",        "--pp", "2",        "-f", "json",
                              "--comm-repeat", "1"};
    const char *compare[] = {
        "shiftsim", "compare", "-c", "tsubame4",       "-n", "2",   "--tp",          "2",
        "--pp",     "2",       "-P", "alpa,commshift", "-f", "csv", "--comm-repeat", "1"};
    const char *sweep[] = {"shiftsim", "sweep", "-c", "tsubame4",       "-N", "8",
                           "-b",       "1",     "-p", "alpa,commshift", "-q", "-k",
                           "0",        "-o",    "-",  "--comm-repeat",  "1"};
    struct {
        const char **argv;
        int argc;
    } verbs[] = {{simulate, G_N_ELEMENTS(simulate)},
                 {compare, G_N_ELEMENTS(compare)},
                 {sweep, G_N_ELEMENTS(sweep)}};
    for (guint i = 0; i < G_N_ELEMENTS(verbs); i++) {
        int rc_once = -1, rc_plain = -1, rc_twice = -1;
        g_autofree char *once = test_cli_stdout(verbs[i].argv, verbs[i].argc, &rc_once);
        g_autofree char *plain = test_cli_stdout(verbs[i].argv, verbs[i].argc - 2, &rc_plain);
        verbs[i].argv[verbs[i].argc - 1] = "2";
        g_autofree char *twice = test_cli_stdout(verbs[i].argv, verbs[i].argc, &rc_twice);
        cr_assert(rc_once == 0 && rc_plain == 0 && rc_twice == 0, "%s: exit %d %d %d",
                  verbs[i].argv[1], rc_once, rc_plain, rc_twice);
        cr_assert_str_eq(once, plain, "%s: --comm-repeat 1 changed the output", verbs[i].argv[1]);
        cr_assert_str_neq(twice, plain, "%s: --comm-repeat 2 changed nothing", verbs[i].argv[1]);
    }
}

/* One byte-size grammar (docs/units.md) in every size option: profile query --bytes takes 3M as
 * 3000000 (it took integers only), and a bad size is one usage error naming the option. */
Test(cli, byte_sizes_share_one_grammar, .init = cr_redirect_stderr)
{
    g_autofree char *profile =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "vtrain-a100", NULL);
    const char *si[] = {"shiftsim",  "profile", "query", profile,   "--comm",
                        "allreduce", "--bytes", "3M",    "--ranks", "6"};
    const char *plain[] = {"shiftsim",  "profile", "query",   profile,   "--comm",
                           "allreduce", "--bytes", "3000000", "--ranks", "6"};
    const char *iec[] = {"shiftsim",  "profile", "query", profile,   "--comm",
                         "allreduce", "--bytes", "3Mi",   "--ranks", "6"};
    int rc_si = -1, rc_plain = -1, rc_iec = -1;
    g_autofree char *a = test_cli_stdout(si, G_N_ELEMENTS(si), &rc_si);
    g_autofree char *b = test_cli_stdout(plain, G_N_ELEMENTS(plain), &rc_plain);
    g_autofree char *c = test_cli_stdout(iec, G_N_ELEMENTS(iec), &rc_iec);
    cr_assert(rc_si == 0 && rc_plain == 0 && rc_iec == 0, "exit %d %d %d", rc_si, rc_plain, rc_iec);
    cr_assert_str_eq(a, b);
    cr_assert_str_neq(a, c, "3Mi priced like 3M");
    const char *bad[][2] = {{"--bytes", "40X"}, {"--bytes", "-1M"}, {"--bytes", "1e3"}};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *argv[] = {"shiftsim",  "profile", "query",   profile,   "--comm",
                              "allreduce", bad[i][0], bad[i][1], "--ranks", "6"};
        int rc = -1;
        g_autofree char *out = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
        cr_expect_eq(rc, 2, "%s %s: exit %d", bad[i][0], bad[i][1], rc);
        cr_expect_str_empty(out);
    }
}

/* profile query --attention PASS --shape SxHxD: the H200's measured cuDNN flash forward
 * (Kineto, 92.0315 us) exactly, its backward carried to twice the sequence by FLOPs (4x), the
 * bench's unfused attention of the same shape (its own row, 308.129 us); a flash query of a
 * profile without flash rows is 'none', or the analytic kernel with --cluster; a bad pass or a
 * missing --shape is a usage error. */
Test(cli, profile_query_attention, .init = cr_redirect_stderr)
{
    g_autofree char *kineto = g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "h200",
                                               "reference", "kineto-gpt-j-layer.csv", NULL);
    g_autofree char *bench =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "h200", "gpt-j-6b.csv", NULL);
    const struct {
        const char *profile, *pass, *shape, *want;
    } cases[] = {
        {kineto, "flash-fwd", "2048x16x256", "92.0315 us (exact)\n"},
        {kineto, "flash-bwd", "4096x16x256x1", "1263.87 us (extrapolated)\n"},
        {bench, "fwd", "2048x16x256", "308.129 us (exact)\n"},
        {bench, "flash-fwd", "2048x16x256",
         "none: the profile has nothing relevant (the simulator uses the analytical model)\n"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *argv[] = {"shiftsim",    "profile",     "query",   cases[i].profile,
                              "--attention", cases[i].pass, "--shape", cases[i].shape};
        int rc = -1;
        g_autofree char *out = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
        cr_assert_eq(rc, 0, "%s %s", cases[i].pass, cases[i].shape);
        cr_assert_str_eq(out, cases[i].want);
    }
    const char *fallback[] = {"shiftsim",  "profile", "query",       bench, "--attention",
                              "flash-fwd", "--shape", "2048x16x256", "-c",  "dgx-h200"};
    int rc = -1;
    g_autofree char *out = test_cli_stdout(fallback, G_N_ELEMENTS(fallback), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "us (analytical: the profile has nothing relevant)"), "%s", out);
    const char *bad[][4] = {{"--attention", "flash", "--shape", "2048x16x256"},
                            {"--attention", "fwd", "--shape", "2048x16"},
                            {"--attention", "fwd", "--dtype", "bf16"}};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *argv[] = {"shiftsim", "profile", "query",   kineto,
                              bad[i][0],  bad[i][1], bad[i][2], bad[i][3]};
        g_autofree char *o = test_cli_stdout(argv, G_N_ELEMENTS(argv), &rc);
        cr_expect_eq(rc, 2, "%s %s %s: exit %d", bad[i][1], bad[i][2], bad[i][3], rc);
        cr_expect_str_empty(o);
    }
}

/* profile query --nics-per-rank sets the NICs a rank's traffic uses, past the cluster's ring_nics:
 * BigScience's Jean Zay row (32 ranks, 8 a node, one NIC a node) asked for 16 ranks, 2 a node,
 * takes one NIC a node by default (two members at ring_nics 1), half the time with a NIC each (the
 * rings' bytes at twice the rate; the override was capped at the default before), four times
 * the time with an eighth of one each. */
Test(cli, profile_query_nics_per_rank_overrides_ring_nics, .init = cr_redirect_stderr)
{
    g_autofree char *jz =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "jean-zay-a100", NULL);
    const char *nics[] = {NULL, "1", "0.125"};
    double us[3], want[3] = {1, 0.5, 4};
    for (gsize i = 0; i < G_N_ELEMENTS(nics); i++) {
        const char *argv[] = {"shiftsim",        "profile",   "query",   jz,
                              "--comm",          "allreduce", "--bytes", "4G",
                              "--dtype",         "fp32",      "--ranks", "16",
                              "--per-node",      "2",         "-c",      "jean-zay-a100",
                              "--nics-per-rank", nics[i]};
        int rc = -1;
        g_autofree char *out = test_cli_stdout(argv, G_N_ELEMENTS(argv) - (nics[i] ? 0 : 2), &rc);
        cr_assert_eq(rc, 0, "--nics-per-rank %s", nics[i] ? nics[i] : "(none)");
        cr_assert(strstr(out, "(scaled"), "%s", out);
        us[i] = g_ascii_strtod(out, NULL);
        cr_assert(fabs(us[i] / (want[i] * us[0]) - 1) < 0.01, "--nics-per-rank %s: %g us, %g",
                  nics[i] ? nics[i] : "(none)", us[i], us[0]);
    }
}

/* profile check: a profile checked against itself is exact (every error 0); against the
 * analytical model it reports each group's rows; a bad --kind is a usage error, a missing
 * file a runtime error naming it. */
Test(cli, profile_check_puts_the_model_beside_measured_rows, .init = cr_redirect_stderr)
{
    g_autofree char *h200 =
        g_build_filename(SSIM_TEST_DATA, "..", "..", "traces", "h200", "gpt-j-6b.csv", NULL);
    const char *self[] = {"shiftsim", "profile", "check", h200, "--profile", h200, "-f", "csv"};
    int rc = -1;
    g_autofree char *out = test_cli_stdout(self, G_N_ELEMENTS(self), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(g_str_has_prefix(out, "group,rows,mape,median,max,bias,within10,tau\n"), "%s", out);
    cr_assert_not_null(strstr(out, "\ngemm,272,0.0000,0.0000,0.0000,0.0000,1.0000,1.0000\n"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "\nall,397,0.0000,"), "%s", out);

    const char *model[] = {"shiftsim",  "profile", "check", h200, "--kind",
                           "gemm,copy", "--rows",  "-f",    "csv"};
    g_autofree char *rows = test_cli_stdout(model, G_N_ELEMENTS(model), &rc);
    cr_assert_eq(rc, 0);
    g_auto(GStrv) lines = g_strsplit(rows, "\n", -1);
    cr_assert_str_eq(lines[0], "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,"
                               "measured_us,predicted_us,error,source");
    /* 272 GEMMs and 27 copies, each priced by the model, then the empty last line. */
    cr_assert_eq(g_strv_length(lines), 1 + 272 + 27 + 1);
    for (guint i = 1; lines[i][0] != '\0'; i++)
        cr_assert(g_str_has_suffix(lines[i], ",analytical"), "%s", lines[i]);

    const char *bad_kind[] = {"shiftsim", "profile", "check", h200, "--kind", "gemms"};
    g_autofree char *o2 = test_cli_stdout(bad_kind, G_N_ELEMENTS(bad_kind), &rc);
    cr_assert_eq(rc, 2);
    const char *missing[] = {"shiftsim", "profile", "check", "no-such-profile.csv"};
    g_autofree char *o3 = test_cli_stdout(missing, G_N_ELEMENTS(missing), &rc);
    cr_assert_eq(rc, 1);
}

/* A file of measured runs with the given rows after the version line and the header. */
static char *runs_file(const char *dir, const char *name, const char *rows)
{
    char *path = g_build_filename(dir, name, NULL);
    g_autofree char *text = g_strconcat("# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n", rows, NULL);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* validate --runs A --runs B: one set, its figures over both files' rows, each row naming its
 * file (as grep names the file only when given several): "FILE:LINE" in the table under a
 * legend, a leading file column in the CSV.  One file prints as it always did; a file given
 * twice is refused; an error in the second file names that file. */
Test(cli, validate_takes_several_runs_files, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-runs-XXXXXX", NULL);
    static const char row[] = "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,1,1,1,1,1,%u,1f1b,full,off,"
                              "0,off,%u,,src\n";
    g_autofree char *r1 = g_strdup_printf(row, 8, 10), *r2 = g_strdup_printf(row, 16, 20),
                    *r3 = g_strdup_printf(row, 32, 40);
    g_autofree char *two = g_strconcat(r1, r2, NULL);
    g_autofree char *a = runs_file(dir, "a.csv", two);
    g_autofree char *b = runs_file(dir, "b.csv", r3);
    int rc;
    const char *both[] = {"shiftsim", "validate", "-q", "--runs", a, "--runs", b};
    g_autofree char *table = test_cli_stdout(both, G_N_ELEMENTS(both), &rc);
    cr_assert_eq(rc, 0, "%s", table);
    g_autofree char *legend = g_strdup_printf("files: 1 %s, 2 %s (line: FILE:LINE)\n", a, b);
    cr_assert(g_str_has_prefix(table, legend), "%s", table);
    cr_assert(strstr(table, "\n   1:3  gpt") && strstr(table, "\n   1:4  gpt") &&
                  strstr(table, "\n   2:3  gpt"),
              "%s", table);
    cr_assert(strstr(table, "runs           3 simulated, 0 failed"), "%s", table);

    const char *both_csv[] = {"shiftsim", "validate", "-q", "--runs", a, "--runs", b, "-f", "csv"};
    g_autofree char *csv = test_cli_stdout(both_csv, G_N_ELEMENTS(both_csv), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(g_str_has_prefix(csv, "file,line,model,"), "%s", csv);
    g_autofree char *row_b = g_strdup_printf("\n%s,3,gpt,", b);
    cr_assert(strstr(csv, row_b), "%s", csv);
    /* The union's rows are the two files' own, predicted alike. */
    const char *only_a[] = {"shiftsim", "validate", "-q", "--runs", a, "-f", "csv"};
    g_autofree char *csv_a = test_cli_stdout(only_a, G_N_ELEMENTS(only_a), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(g_str_has_prefix(csv_a, "line,model,"), "%s", csv_a);
    const char *first_a = strchr(csv_a, '\n') + 1;
    g_autofree char *with_file = g_strdup_printf("\n%s,%s", a, first_a);
    g_autofree char *first_line = g_strndup(with_file, strchr(with_file + 1, '\n') - with_file);
    cr_assert(strstr(csv, first_line), "%s\nlacks\n%s", csv, first_line);

    /* --every counts through the files in turn: rows 0 and 2 of the three are a:3 and b:3. */
    const char *every[] = {"shiftsim", "validate", "-q", "--runs", a, "--runs", b, "--every", "2"};
    g_autofree char *half = test_cli_stdout(every, G_N_ELEMENTS(every), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(half, "\n   1:3  gpt") && strstr(half, "\n   2:3  gpt") &&
                  !strstr(half, "\n   1:4  gpt") && strstr(half, "runs           2 simulated"),
              "%s", half);

    const char *twice[] = {"shiftsim", "validate", "--runs", a, "--runs", a};
    cr_assert_eq(test_cli(G_N_ELEMENTS(twice), twice), 2);
    static const char bad_row[] =
        "nosuchmodel,,,,,,,,dgx-a100,1,1,1,1,1,1,8,1f1b,full,off,0,off,10,,src\n";
    g_autofree char *c = runs_file(dir, "c.csv", bad_row);
    const char *bad[] = {"shiftsim", "validate", "--runs", a, "--runs", c};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 1);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "--runs: ") && strstr(err, "a.csv is given twice"), "%s", err);
    g_autofree char *where = g_strdup_printf("%s:3: model: ", c);
    cr_assert(strstr(err, where), "%s", err);
    g_unlink(a);
    g_unlink(b);
    g_unlink(c);
    g_rmdir(dir);
}

/* validate --by: "tp,pp" and a repeated --by add a table per key after the per-model one,
 * each key once and the model's table never twice; an unknown key is a usage error that names
 * the keys there are. */
Test(cli, validate_by_keys, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-by-XXXXXX", NULL);
    static const char rows[] =
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,2,1,1,1,1,8,1f1b,full,off,0,off,10,,src\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,1,2,1,1,1,8,1f1b,full,off,0,off,12,,src\n";
    g_autofree char *a = runs_file(dir, "a.csv", rows);
    int rc;
    const char *by[] = {"shiftsim", "validate", "-q",    "--runs", a,   "--by",
                        "tp,pp",    "--by",     "model", "--by",   "tp"};
    g_autofree char *out = test_cli_stdout(by, G_N_ELEMENTS(by), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    const char *model = strstr(out, "\nper model\n"), *tp = strstr(out, "\nper tp ("),
               *pp = strstr(out, "\nper pp (");
    cr_assert(model && tp && pp && model < tp && tp < pp, "%s", out);
    cr_assert_null(strstr(tp + 1, "\nper tp ("), "%s", out);
    cr_assert_null(strstr(model + 1, "\nper model\n"), "%s", out);
    cr_assert(strstr(tp, "\n  tp 1      ") && strstr(tp, "\n  tp 2      "), "%s", out);
    /* Two files: a group per file, named by its path however long, in the order given. */
    g_autofree char *b = runs_file(dir, "a-second-file-with-a-long-name.csv", rows);
    const char *files[] = {"shiftsim", "validate", "-q",   "--runs",      a,
                           "--runs",   b,          "--by", "file,cluster"};
    g_autofree char *per_file = test_cli_stdout(files, G_N_ELEMENTS(files), &rc);
    cr_assert_eq(rc, 0, "%s", per_file);
    const char *f = strstr(per_file, "\nper file (");
    cr_assert(f && strstr(f, "\nper cluster ("), "%s", per_file);
    g_autofree char *line_a = g_strdup_printf("\n  %s ", a),
                    *line_b = g_strdup_printf("\n  %s ", b);
    cr_assert(strstr(f, line_a) && strstr(f, line_b) && strstr(f, line_a) < strstr(f, line_b), "%s",
              per_file);
    cr_assert(strstr(f, "\n  dgx-a100 "), "%s", per_file);
    g_unlink(b);
    /* Keys joined by '+': a group per combination, named by its parts. */
    const char *both[] = {
        "shiftsim", "validate", "-q", "--runs", a, "--by", "tp+pp,pp,microbatches"};
    g_autofree char *per_both = test_cli_stdout(both, G_N_ELEMENTS(both), &rc);
    cr_assert_eq(rc, 0, "%s", per_both);
    const char *tp_pp = strstr(per_both, "\nper tp+pp (");
    cr_assert(tp_pp && strstr(tp_pp, "\n  tp 1, pp 1 ") &&
                  strstr(tp_pp, "\n  tp 1, pp 1 ") < strstr(tp_pp, "\n  tp 2, pp 1 ") &&
                  strstr(tp_pp, "\nper pp ("),
              "%s", per_both);
    /* Global batch 8 in microbatches of 1 over dp 2 and dp 1: 4 and 8 a step. */
    const char *steps = strstr(per_both, "\nper microbatches (");
    cr_assert(steps && strstr(steps, "\n  4 microbatches ") && strstr(steps, "\n  8 microbatches "),
              "%s", per_both);
    const char *bad[] = {"shiftsim", "validate", "--runs", a, "--by", "tp,tensor"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 2);
    g_autofree char *err = test_stderr();
    cr_assert(
        strstr(err,
               "--by: 'tensor' is not model, nodes, tp, gpus, pp, dp, microbatch, "
               "microbatches, file, cluster or recompute, or up to 4 different ones joined by '+'"),
        "%s", err);
    const char *twice[] = {"shiftsim", "validate", "--runs", a, "--by", "tp+tp"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(twice), twice), 2);
    g_autofree char *err_twice = test_stderr();
    cr_assert(strstr(err_twice, "--by: 'tp+tp' is not"), "%s", err_twice);
    g_unlink(a);
    g_rmdir(dir);
}

/* validate and calibrate take vTrain's own table of measured runs as --convert-vtrain converts
 * it, and say so: every 160th row of the bundled single-node table gives the figures its
 * converted runs file gives; a multi-node table is a check file, which calibrate refuses. */
Test(cli, runs_verbs_read_vtrain_tables, .init = cr_redirect_stderr)
{
    const char *table =
        SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100/ground_truth_single.csv";
    int rc;
    const char *direct[] = {"shiftsim", "validate", "-q", "--every", "160", "--runs", table};
    g_autofree char *out = test_cli_stdout(direct, G_N_ELEMENTS(direct), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    const char *conv[] = {"shiftsim",
                          "validate",
                          "-q",
                          "--every",
                          "160",
                          "--runs",
                          SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100-single.csv"};
    g_autofree char *out_conv = test_cli_stdout(conv, G_N_ELEMENTS(conv), &rc);
    cr_assert_eq(rc, 0, "%s", out_conv);
    const char *figures = strstr(out, "\nruns  "), *figures_conv = strstr(out_conv, "\nruns  ");
    cr_assert(figures && figures_conv, "%s", out);
    cr_assert_str_eq(figures, figures_conv);
    g_autofree char *dir = g_dir_make_tmp("ssim-vt-XXXXXX", NULL);
    g_autofree char *multi = g_build_filename(dir, "ground_truth_multi.csv", NULL);
    cr_assert(g_file_set_contents(
        multi,
        "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,"
        "# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
        "iteration time (ms)\n"
        "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5\n",
        -1, NULL));
    const char *fit[] = {"shiftsim", "calibrate", "-q", "--runs", multi};
    cr_assert_eq(test_cli(G_N_ELEMENTS(fit), fit), 1);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim validate: ") &&
                  strstr(err, "ground_truth_single.csv: vTrain's table of measured runs, read as "
                              "'shiftsim calibrate --convert-vtrain' converts it (cluster "
                              "vtrain-a100, use = fit)"),
              "%s", err);
    cr_assert(strstr(err, "(cluster vtrain-a100, use = check)") &&
                  strstr(err, "ground_truth_multi.csv: use: the file is marked '# use = check'"),
              "%s", err);
    g_unlink(multi);
    g_rmdir(dir);
}

/* Two calibrate reports past their first line (the files) and the fit's wall time are the
 * same. */
static void assert_same_fit(const char *a, const char *b)
{
    g_auto(GStrv) la = g_strsplit(a, "\n", -1), lb = g_strsplit(b, "\n", -1);
    cr_assert_eq(g_strv_length(la), g_strv_length(lb), "%s\n---\n%s", a, b);
    for (guint i = 1; lb[i]; i++)
        if (!g_str_has_prefix(lb[i], "fit  "))
            cr_assert_str_eq(la[i], lb[i]);
}

/* calibrate --runs A --runs B fits the two files' rows as one set: the same fit, to the printed
 * digit, as one file holding both; the report and the JSON name both files; a file marked
 * `# use = check` among them is refused (by its name) unless --force; a file given twice is a
 * usage error. */
Test(cli, calibrate_takes_several_runs_files, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-runs-XXXXXX", NULL);
    static const char row[] = "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,1,%u,1,1,%u,%u,1f1b,full,off,"
                              "0,off,%u,,src\n";
    g_autofree char *r1 = g_strdup_printf(row, 1, 1, 8, 10),
                    *r2 = g_strdup_printf(row, 2, 2, 16, 9),
                    *r3 = g_strdup_printf(row, 1, 4, 32, 30),
                    *r4 = g_strdup_printf(row, 2, 1, 8, 8);
    g_autofree char *first = g_strconcat(r1, r2, NULL), *second = g_strconcat(r3, r4, NULL);
    g_autofree char *all = g_strconcat(first, second, NULL);
    g_autofree char *a = runs_file(dir, "a.csv", first);
    g_autofree char *b = runs_file(dir, "b.csv", second);
    g_autofree char *ab = runs_file(dir, "ab.csv", all);
    int rc;
    const char *two[] = {"shiftsim", "calibrate", "-q",         "--runs", a,    "--runs", b,
                         "--folds",  "2",         "--max-iter", "20",     "-j", "1"};
    g_autofree char *out2 = test_cli_stdout(two, G_N_ELEMENTS(two), &rc);
    cr_assert_eq(rc, 0, "%s", out2);
    const char *one[] = {"shiftsim", "calibrate",  "-q", "--runs", ab, "--folds",
                         "2",        "--max-iter", "20", "-j",     "1"};
    g_autofree char *out1 = test_cli_stdout(one, G_N_ELEMENTS(one), &rc);
    cr_assert_eq(rc, 0, "%s", out1);
    g_autofree char *names = g_strdup_printf("runs           %s, %s: 4 rows, fitting on 4", a, b);
    cr_assert(g_str_has_prefix(out2, names), "%s", out2);
    assert_same_fit(out2, out1);

    const char *json[] = {"shiftsim", "calibrate", "-q",         "--runs", a,    "--runs", b,
                          "--folds",  "0",         "--max-iter", "2",      "-f", "json"};
    g_autofree char *js = test_cli_stdout(json, G_N_ELEMENTS(json), &rc);
    cr_assert_eq(rc, 0);
    g_autofree char *files =
        g_strdup_printf("\"runs_files\" : [\n    \"%s\",\n    \"%s\"\n  ]", a, b);
    cr_assert(strstr(js, files), "%s", js);

    g_autofree char *checked =
        g_strconcat("# shiftsim-runs v2\n# use = check\n" SSIM_RUNS_HEADER "\n", second, NULL);
    g_autofree char *c = g_build_filename(dir, "c.csv", NULL);
    cr_assert(g_file_set_contents(c, checked, -1, NULL));
    const char *refused[] = {"shiftsim", "calibrate", "-q", "--runs", a, "--runs", c};
    cr_assert_eq(test_cli(G_N_ELEMENTS(refused), refused), 1);
    const char *forced[] = {"shiftsim", "calibrate", "-q", "--runs",     a,  "--runs", c,
                            "--force",  "--folds",   "0",  "--max-iter", "2"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(forced), forced), 0);
    const char *twice[] = {"shiftsim", "calibrate", "--runs", a, "--runs", a};
    cr_assert_eq(test_cli(G_N_ELEMENTS(twice), twice), 2);
    g_autofree char *err = test_stderr();
    g_autofree char *why = g_strdup_printf("%s: use: the file is marked '# use = check'", c);
    cr_assert(strstr(err, why), "%s", err);
    cr_assert(strstr(err, "a.csv is given twice"), "%s", err);
    g_unlink(a);
    g_unlink(b);
    g_unlink(ab);
    g_unlink(c);
    g_rmdir(dir);
}

/* validate and calibrate --only KEY=VALUE: the rows that meet every condition and no other,
 * before --every; calibrate on them fits as on a file holding those rows alone, to the printed
 * digit, and names the condition; a bad condition is a usage error, one that no row meets a
 * runtime one. */
Test(cli, validate_and_calibrate_only, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-only-XXXXXX", NULL);
    static const char row[] = "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,%u,%u,1,1,%u,%u,1f1b,full,"
                              "off,0,off,%u,,src\n";
    g_autofree char *r1 = g_strdup_printf(row, 2, 1, 1, 8, 10),
                    *r2 = g_strdup_printf(row, 1, 2, 2, 16, 9),
                    *r3 = g_strdup_printf(row, 2, 1, 4, 32, 30),
                    *r4 = g_strdup_printf(row, 1, 2, 1, 8, 8);
    g_autofree char *all = g_strconcat(r1, r2, r3, r4, NULL), *tp1 = g_strconcat(r1, r3, NULL);
    g_autofree char *a = runs_file(dir, "a.csv", all), *t = runs_file(dir, "t.csv", tp1);
    int rc;
    const char *v[] = {"shiftsim", "validate", "-q", "--runs", a, "--only", "tp=2", "-f", "csv"};
    g_autofree char *out = test_cli_stdout(v, G_N_ELEMENTS(v), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    cr_assert_eq(g_strv_length(lines), 4, "%s", out); /* the header, the file's lines 4 and 6, "" */
    cr_assert(g_str_has_prefix(lines[1], "4,") && g_str_has_prefix(lines[2], "6,"), "%s", out);
    const char *ve[] = {"shiftsim", "validate", "-q",   "--runs",  a,  "--only",
                        "tp=1",     "--only",   "dp=2", "--every", "2"};
    g_autofree char *out_e = test_cli_stdout(ve, G_N_ELEMENTS(ve), &rc);
    cr_assert_eq(rc, 0, "%s", out_e);
    cr_assert(strstr(out_e, "runs           1 simulated, 0 failed"), "%s", out_e);

    const char *c_only[] = {"shiftsim", "calibrate", "-q",         "--runs", a,    "--only", "tp=1",
                            "--folds",  "0",         "--max-iter", "20",     "-j", "1"};
    g_autofree char *cal_only = test_cli_stdout(c_only, G_N_ELEMENTS(c_only), &rc);
    cr_assert_eq(rc, 0, "%s", cal_only);
    const char *c_file[] = {"shiftsim", "calibrate",  "-q", "--runs", t,  "--folds",
                            "0",        "--max-iter", "20", "-j",     "1"};
    g_autofree char *cal_file = test_cli_stdout(c_file, G_N_ELEMENTS(c_file), &rc);
    cr_assert_eq(rc, 0, "%s", cal_file);
    g_autofree char *head =
        g_strdup_printf("runs           %s where tp=1: 2 rows, fitting on 2", a);
    cr_assert(g_str_has_prefix(cal_only, head), "%s", cal_only);
    assert_same_fit(cal_only, cal_file);

    const char *bad[] = {"shiftsim", "validate", "--runs", a, "--only", "tp=2,tensor=8"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 2);
    const char *none[] = {"shiftsim", "calibrate", "--runs", a, "--only", "tp=2,dp=2"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(none), none), 1);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "--only: 'tensor=8' is not KEY=VALUE or KEY!=VALUE with KEY model,"),
              "%s", err);
    g_autofree char *why =
        g_strdup_printf("shiftsim calibrate: --only tp=2,dp=2: no row of %s meets it", a);
    cr_assert(strstr(err, why), "%s", err);
    g_unlink(a);
    g_unlink(t);
    g_rmdir(dir);
}

/* calibrate --cv group:tp+microbatch holds out each tp and microbatch pair in turn and prints
 * the held-out figures per pair in validate --by's order (tp 1 before tp 2, though the file gives
 * tp 2 first); a key it does not know is a usage error that names it. */
Test(cli, calibrate_cv_groupings, .init = cr_redirect_stderr)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-runs-XXXXXX", NULL);
    static const char row[] = "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,1,%u,1,1,%u,%u,1f1b,full,off,"
                              "0,off,%u,,src\n";
    g_autofree char *r1 = g_strdup_printf(row, 2, 1, 8, 9), *r2 = g_strdup_printf(row, 2, 2, 16, 9),
                    *r3 = g_strdup_printf(row, 1, 1, 8, 10),
                    *r4 = g_strdup_printf(row, 1, 2, 16, 18);
    g_autofree char *rows = g_strconcat(r1, r2, r3, r4, NULL);
    g_autofree char *a = runs_file(dir, "a.csv", rows);
    int rc;
    const char *cv[] = {
        "shiftsim", "calibrate", "-q",         "--runs", a,    "--cv", "group:tp+microbatch",
        "--folds",  "0",         "--max-iter", "5",      "-j", "1"};
    g_autofree char *out = test_cli_stdout(cv, G_N_ELEMENTS(cv), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    const char *t = strstr(out, "(group:tp+microbatch, 4 groups;");
    cr_assert(t && strstr(t, "\n  held out, per tp+microbatch\n"), "%s", out);
    const char *order[] = {"tp 1, microbatch 1", "tp 1, microbatch 2", "tp 2, microbatch 1",
                           "tp 2, microbatch 2"};
    for (guint g = 0; g < G_N_ELEMENTS(order); g++) {
        g_autofree char *line = g_strdup_printf("\n    %s ", order[g]);
        const char *at = strstr(t, line);
        cr_assert(at, "%s: %s", order[g], out);
        t = at;
    }
    const char *bad[] = {"shiftsim", "calibrate", "--runs", a, "--cv", "group:tp+zz"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 2);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "--cv: 'group:tp+zz' is not group:model, "), "%s", err);
    g_unlink(a);
    g_rmdir(dir);
}

/* A calibrated cluster used outside the shapes it was fitted on ([calibration]: the bundled
 * dgx-a100-calibrated holds hidden 1024..2048 from vTrain's single-node runs) makes simulate,
 * compare and sweep say so on stderr, naming what lies outside; inside them, or on a stock
 * cluster (no ranges), nothing is said. */
Test(cli, calibrated_clusters_warn_outside_their_fit, .init = cr_redirect_stderr)
{
    int rc;
    const char *out[] = {"shiftsim",     "simulate",
                         "-m",           "megatron-gpt-1.7b",
                         "-c",           "dgx-a100-calibrated",
                         "-n",           "1",
                         "--tp",         "4",
                         "--seq-length", "1024",
                         "-B",           "8"};
    g_autofree char *table = test_cli_stdout(out, G_N_ELEMENTS(out), &rc);
    cr_assert_eq(rc, 0, "%s", table);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim simulate: warning: dgx-a100-calibrated was calibrated on "
                          "other shapes (hidden 2304 > 2048): this prediction extrapolates its "
                          "fit\n"),
              "%s", err);
    const char *stock[] = {
        "shiftsim", "simulate", "-m", "megatron-gpt-1.7b", "-c",   "dgx-a100", "-n",
        "1",        "--tp",     "4",  "--seq-length",      "1024", "-B",       "8"};
    g_autofree char *t2 = test_cli_stdout(stock, G_N_ELEMENTS(stock), &rc);
    cr_assert_eq(rc, 0);
    g_autofree char *err2 = test_stderr();
    cr_assert_null(strstr(err2, "warning"), "%s", err2);
    /* Inside every range: hidden 2048, layers 24, sequence 1024, 8 GPUs of one node, tp 2, pp 2,
     * microbatch 1. */
    g_autofree char *dir = g_dir_make_tmp("ssim-fit-XXXXXX", NULL);
    g_autofree char *ini = g_build_filename(dir, "m.ini", NULL);
    cr_assert(g_file_set_contents(ini,
                                  "[model]\nformat = 1\nname = inside\nlayers = 24\nhidden = 2048\n"
                                  "heads = 16\nffn = 8192\nvocab = 51200\nseq_len = 1024\n",
                                  -1, NULL));
    const char *in[] = {"shiftsim", "compare", "-m",   ini, "-c",   "dgx-a100-calibrated",
                        "-n",       "1",       "--tp", "2", "--pp", "2"};
    g_autofree char *t3 = test_cli_stdout(in, G_N_ELEMENTS(in), &rc);
    cr_assert_eq(rc, 0, "%s", t3);
    g_autofree char *err3 = test_stderr();
    cr_assert_null(strstr(err3, "warning"), "%s", err3);
    const char *cmp[] = {"shiftsim", "compare", "-m",   ini, "-c",   "dgx-a100-calibrated",
                         "-n",       "1",       "--tp", "2", "--pp", "2",
                         "-b",       "16"};
    g_autofree char *t4 = test_cli_stdout(cmp, G_N_ELEMENTS(cmp), &rc);
    cr_assert_eq(rc, 0, "%s", t4);
    g_autofree char *err4 = test_stderr();
    cr_assert(strstr(err4, "shiftsim compare: warning: dgx-a100-calibrated was calibrated on other "
                           "shapes (microbatch 16 > 8)"),
              "%s", err4);
    const char *sweep[] = {"shiftsim", "sweep", "-m", ini, "-c", "dgx-a100-calibrated",
                           "--gpus",   "16",    "-q"};
    g_autofree char *t5 = test_cli_stdout(sweep, G_N_ELEMENTS(sweep), &rc);
    cr_assert_eq(rc, 0, "%s", t5);
    g_autofree char *err5 = test_stderr();
    cr_assert(strstr(err5, "shiftsim sweep: warning: ") &&
                  strstr(err5, " simulated splits lie outside the shapes dgx-a100-calibrated was "
                               "calibrated on (the first: gpus 16 > 8, nodes 2 > 1"),
              "%s", err5);
    g_unlink(ini);
    g_rmdir(dir);
}

/* A relative input path that is nothing in the current directory reads the bundled file of that
 * name and says so on stderr (validate --runs, simulate --cluster and --profile, replay --chakra
 * with a trace set's prefix, profile query), from an empty directory: the figures are those of
 * the bundled file given by its full path.  A file at that path in the current directory is read
 * instead, without a note; a path bundled nowhere, "", and a path through ".." are the reader's
 * own error. */
Test(cli, relative_inputs_fall_back_to_bundled_files, .init = cr_redirect_stderr)
{
    g_autofree char *bundled = ssim_data_find("traces/validation/published-a100.csv");
    cr_assert_not_null(bundled);
    g_autofree char *full = g_canonicalize_filename(bundled, NULL);
    g_autofree char *home = g_get_current_dir();
    g_autofree char *dir = g_dir_make_tmp("ssim-cwd-XXXXXX", NULL);
    cr_assert_eq(g_chdir(dir), 0);
    int rc;
    const char *rel[] = {"shiftsim",
                         "validate",
                         "-q",
                         "-f",
                         "csv",
                         "--only",
                         "model=megatron-gpt-1.7b",
                         "--runs",
                         "traces/validation/published-a100.csv"};
    g_autofree char *csv = test_cli_stdout(rel, G_N_ELEMENTS(rel), &rc);
    cr_assert_eq(rc, 0, "%s", csv);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim validate: note: traces/validation/published-a100.csv: not in "
                          "the current directory; reading the bundled "),
              "%s", err);
    const char *abs[] = {
        "shiftsim", "validate", "-q", "-f", "csv", "--only", "model=megatron-gpt-1.7b",
        "--runs",   full};
    g_autofree char *csv_abs = test_cli_stdout(abs, G_N_ELEMENTS(abs), &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(csv, csv_abs);

    const char *sim[] = {"shiftsim", "simulate", "-c",        "models/clusters/dgx-a100.ini",
                         "-n",       "1",        "--profile", "traces/vtrain-a100",
                         "-f",       "csv"};
    g_autofree char *row = test_cli_stdout(sim, G_N_ELEMENTS(sim), &rc);
    cr_assert_eq(rc, 0, "%s", row);
    g_autofree char *err2 = test_stderr();
    cr_assert(strstr(err2, "shiftsim simulate: note: models/clusters/dgx-a100.ini: not in the "
                           "current directory") &&
                  strstr(err2, "shiftsim simulate: note: traces/vtrain-a100: not in the current "
                               "directory"),
              "%s", err2);
    const char *chakra[] = {"shiftsim", "replay", "--chakra",
                            "traces/chakra/allreduce-8npus-1MB/all_reduce"};
    g_autofree char *replayed = test_cli_stdout(chakra, G_N_ELEMENTS(chakra), &rc);
    cr_assert_eq(rc, 0, "%s", replayed);
    g_autofree char *err3 = test_stderr();
    cr_assert(strstr(err3, "traces/chakra/allreduce-8npus-1MB/all_reduce: not in the current "
                           "directory; reading the bundled ") &&
                  strstr(err3, "/traces/chakra/allreduce-8npus-1MB/all_reduce\n"),
              "%s", err3);
    const char *query[] = {"shiftsim", "profile",   "query",   "traces/h200-nvls/allreduce-8.csv",
                           "--comm",   "allreduce", "--bytes", "268435456",
                           "--ranks",  "8"};
    g_autofree char *us = test_cli_stdout(query, G_N_ELEMENTS(query), &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(us, "1077.06 us (exact)\n");
    g_free(test_stderr());

    /* A file at that path here wins: the bundled file's first row alone, read without a note. */
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(full, &text, NULL, NULL));
    g_autofree char *header_end = g_strdup(strstr(text, "\nmodel,"));
    char *second = strchr(strchr(header_end + 1, '\n') + 1, '\n');
    second[1] = '\0';
    g_autofree char *mine = g_strconcat("# shiftsim-runs v2", header_end, NULL);
    cr_assert_eq(g_mkdir_with_parents("traces/validation", 0700), 0);
    cr_assert(g_file_set_contents("traces/validation/published-a100.csv", mine, -1, NULL));
    g_autofree char *one = test_cli_stdout(rel, G_N_ELEMENTS(rel), &rc);
    cr_assert_eq(rc, 0, "%s", one);
    g_auto(GStrv) lines = g_strsplit(one, "\n", -1);
    cr_assert_eq(g_strv_length(lines), 3, "%s", one); /* the header, the row, "" */
    g_autofree char *err4 = test_stderr();
    cr_assert_null(strstr(err4, "note:"), "%s", err4);

    const char *none[] = {"shiftsim", "validate", "--runs", "traces/validation/no-such.csv"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(none), none), 1);
    g_autofree char *err5 = test_stderr();
    cr_assert(strstr(err5, "traces/validation/no-such.csv: cannot read: no such file") &&
                  !strstr(err5, "note:"),
              "%s", err5);
    /* "../DATA/traces/..." would reach the bundled file through the data directory's parent:
     * a path with ".." is not looked up.  (From a folder of our own, where ".." holds nothing of
     * that name, whichever folder the data directory sits in.) */
    g_autofree char *root =
        g_strndup(full, strlen(full) - strlen("/traces/validation/published-a100.csv"));
    g_autofree char *root_name = g_path_get_basename(root);
    cr_assert(strcmp(root_name, "traces") != 0 && strcmp(root_name, "sub") != 0);
    g_autofree char *up = g_strdup_printf("../%s/traces/validation/published-a100.csv", root_name);
    cr_assert_eq(g_mkdir("sub", 0700), 0);
    cr_assert_eq(g_chdir("sub"), 0);
    const char *dots[] = {"shiftsim", "validate", "--only", "model=megatron-gpt-1.7b",
                          "--runs",   up};
    cr_assert_eq(test_cli(G_N_ELEMENTS(dots), dots), 1);
    cr_assert_eq(g_chdir(".."), 0);
    g_autofree char *err6 = test_stderr();
    cr_assert(strstr(err6, ": cannot read: no such file") && !strstr(err6, "note:"), "%s", err6);
    const char *empty[] = {"shiftsim", "validate", "--runs", ""};
    cr_assert_eq(test_cli(G_N_ELEMENTS(empty), empty), 1);
    g_autofree char *err7 = test_stderr();
    cr_assert(strstr(err7, ": cannot read: no such file") && !strstr(err7, "note:"), "%s", err7);
    cr_assert_eq(g_chdir(home), 0);
    test_remove_tree(dir);
}
