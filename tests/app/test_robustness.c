/*
 * The classes of hostile input of docs/robustness.md ("What each class of hostile input gets")
 * beyond the bad-input corpus (tests/app/test_badinputs.c, the same suite): output paths that are
 * not regular files or sit in missing directories, signals while writing, inputs that are not
 * files, time that cannot overflow, honest exits, importers that refuse or warn, the memory
 * budget.  Every case goes through ssim_cli_main() as a user's command would, and checks the exit
 * status, the message, and what was (not) written.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"
#include "src/app/cli.h"
#include "src/app/tracefile.h"
#include <shiftsim/kineto.h>
#include <shiftsim/output.h>
#include <shiftsim/runs.h>
#include <shiftsim/sim.h>

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static guint n_entries(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    cr_assert_not_null(d);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    return n;
}

/* ---- outputs ----------------------------------------------------------------------------------
 */

/* A device, a FIFO or a symbolic link given as an output is refused before any work: as root a
 * rename over /dev/null would replace the device. */
Test(badinputs, non_regular_outputs_are_refused_before_the_work, .init = test_redirect,
     .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo.csv", NULL);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *argv[][8] = {
        {"shiftsim", "simulate", "--timeline", "/dev/null"},
        {"shiftsim", "replay", "--trace", fifo},
        {"shiftsim", "sweep", "--gpus", "8", "-q", "-o", dir},
        {"shiftsim", "validate", "--every", "100", "-o", "/dev/null"},
        {"shiftsim", "compare", "--plot", fifo},
    };
    const int argc[] = {4, 4, 7, 6, 4};
    for (gsize i = 0; i < G_N_ELEMENTS(argc); i++)
        cr_assert_eq(test_cli(argc[i], argv[i]), 1, "%s %s was accepted", argv[i][1], argv[i][2]);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "/dev/null: is a character device"), "%s", err);
    cr_assert(strstr(err, "fifo.csv: is a FIFO"), "%s", err);
    cr_assert(strstr(err, ": is a directory"), "%s", err);
    /* compare --plot FILE.png checks FILE.dat and FILE.gp too, and the per-policy charts. */
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out, "work was done before the output was checked: %s", out);
    GStatBuf st;
    cr_assert_eq(g_lstat("/dev/null", &st), 0);
    cr_assert(S_ISCHR(st.st_mode));
    g_unlink(fifo);
    g_rmdir(dir);
}

/* The check comes right after the options: a sweep into a missing directory prints nothing but
 * the message (the audit's took 11 s of simulation first). */
Test(badinputs, sweep_into_a_missing_directory_fails_before_simulating, .init = test_redirect,
     .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "nodir", "plots", NULL);
    const char *argv[] = {"shiftsim", "sweep", "--gpus", "8", "--plot", prefix};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "does not exist"), "%s", err);
    cr_assert_null(strstr(err, "evaluated"), "the sweep ran: %s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}

/* Runs body(path) in a child with the CLI's signal handlers installed; returns its status. */
static int with_handlers(void (*body)(const char *path), const char *path)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        const char *argv[] = {"shiftsim", "--version"};
        freopen("/dev/null", "w", stdout);
        ssim_cli_main(2, (char **)argv); /* installs the handlers */
        body(path);
        _exit(0);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void half_a_row_then_sigterm(const char *path)
{
    SsimOutput *out = ssim_output_open(path, NULL);
    if (out == NULL || !ssim_output_append(out, "half a row", 10, NULL))
        _exit(3);
    raise(SIGTERM);
    _exit(4); /* not reached */
}

/* SIGTERM while an output is being written: the CLI's handler removes the temporary file and
 * the process still dies of SIGTERM. */
Test(badinputs, a_signal_leaves_no_temporary_file, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "sweep.csv", NULL);
    int status = with_handlers(half_a_row_then_sigterm, path);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    cr_assert_eq(n_entries(dir), 0, "a temporary file was left in %s", dir);
    g_rmdir(dir);
}

static void alarm_to_term(int sig)
{
    (void)sig;
    raise(SIGTERM);
}

/* A JSON trace of 4 x 80,000 named ops (60 MB) written to `path`, with SIGTERM 10 ms into it. */
static void trace_then_sigterm(const char *path)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    for (guint r = 0; r < 4; r++) {
        guint32 st = ssim_graph_stream(g, r, "compute");
        for (guint i = 0; i < 80000; i++) {
            SsimOpSpec c = SSIM_OP_SPEC_INIT;
            c.stream = st;
            c.duration = 1000;
            c.name = "a-kernel-with-a-name";
            ssim_graph_add_op(g, &c, NULL, 0);
        }
    }
    if (!ssim_graph_finalize(g, NULL))
        _exit(3);
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, NULL);
    /* SIGALRM's default would end the process without the handler: raise SIGTERM. */
    struct sigaction sa = {0};
    sa.sa_handler = alarm_to_term;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval at = {{0, 0}, {0, 10000}};
    setitimer(ITIMER_REAL, &at, NULL);
    if (!t || !ssim_cli_write_trace(path, "json", g, t, 0, 2, NULL))
        _exit(4);
}

/* The same while a trace streams into its file (--trace): the trace's temporary is an output's
 * too, so the handler removes it.  On a machine that writes the trace in under 10 ms the whole
 * file is there instead; never a part. */
Test(badinputs, a_signal_while_a_trace_streams_leaves_no_temporary_file, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "run.json", NULL);
    int status = with_handlers(trace_then_sigterm, path);
    gboolean killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM;
    cr_assert(killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0), "status %d", status);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
        cr_assert(!killed && strcmp(name, "run.json") == 0, "%s left in %s", name, dir);
        g_autofree char *file = g_build_filename(dir, name, NULL);
        g_unlink(file);
    }
    g_rmdir(dir);
}

/* ---- inputs that are not files -------------------------------------------------------------- */

/* A directory or a device given as an input file says what it is (both got "no such file"). */
Test(badinputs, directories_and_devices_as_inputs_say_what_they_are, .init = test_redirect,
     .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    const char *argv[][6] = {{"shiftsim", "simulate", "--model", dir},
                             {"shiftsim", "simulate", "--cluster", "/dev/null"},
                             {"shiftsim", "replay", dir},
                             {"shiftsim", "validate", "--runs", "/dev/zero"},
                             {"shiftsim", "merge", dir},
                             {"shiftsim", "calibrate", "--kineto", dir},
                             {"shiftsim", "profile", "import", "--from", "nccl-tests", dir}};
    const int argc[] = {4, 4, 3, 4, 3, 4, 6};
    for (gsize i = 0; i < G_N_ELEMENTS(argc); i++)
        cr_assert_eq(test_cli(argc[i], argv[i]), 1, "%s %s was accepted", argv[i][1], argv[i][2]);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    g_autofree char *model = g_strdup_printf("%s: is a directory, not a model file", dir);
    cr_assert(strstr(err, model), "%s", err);
    cr_assert(strstr(err, "/dev/null: is a character device, not a cluster file"), "%s", err);
    cr_assert(strstr(err, "/dev/zero: is a character device, not a file"), "%s", err);
    g_autofree char *file = g_strdup_printf("%s: is a directory, not a file", dir);
    g_autofree char **lines = g_strsplit(err, "\n", -1);
    guint n = 0;
    for (guint i = 0; lines[i]; i++)
        n += strstr(lines[i], file) != NULL;
    g_strfreev(g_steal_pointer(&lines));
    cr_assert_eq(n, 4, "replay, merge, calibrate and profile import each name the directory: %s",
                 err);
    g_rmdir(dir);
}

/* ---- time that cannot overflow -------------------------------------------------------------- */

/* A bandwidth of 1e-300 GB/s is a valid number and an impossible rate: the op it prices has no
 * finite time.  Both communication models say so by name; neither reports a deadlock or prints
 * 9223372036854775807 ns. */
Test(badinputs, tiny_bandwidth_is_refused_at_the_cost_boundary, .init = test_redirect,
     .timeout = 60)
{
    g_autofree char *ini = test_bad_path("cluster-tiny-bandwidth.ini");
    const char *analytic[] = {"shiftsim", "simulate", "--cluster", ini, "--nodes", "1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(analytic), analytic), 1);
    const char *flow[] = {"shiftsim", "simulate", "--cluster", ini,
                          "--nodes",  "1",        "--network", "flow"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(flow), flow), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "(rank 0) has no finite cost"), "%s", err);
    cr_assert(strstr(err, "16777216 bytes"), "%s", err);
    cr_assert(strstr(err, "no usable bandwidth"), "%s", err);
    cr_assert_null(strstr(err, "deadlock"), "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_null(strstr(out, "9223372036854775807"), "%s", out);
}

/* An infinite rate made every op free: a makespan of 0. */
Test(badinputs, infinite_or_zero_rates_are_refused_where_parsed, .init = test_redirect)
{
    const char *opts[][2] = {{"--tflops", "inf"},   {"--tflops", "0"},    {"--hbm-gbps", "inf"},
                             {"--hbm-gbps", "nan"}, {"--link-bw", "inf"}, {"--link-bw", "0"},
                             {"--tflops", "12abc"}};
    for (gsize i = 0; i < G_N_ELEMENTS(opts); i++) {
        const char *argv[] = {"shiftsim", "replay", opts[i][0], opts[i][1]};
        cr_assert_eq(test_cli(4, argv), 2, "%s %s", opts[i][0], opts[i][1]);
    }
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "--tflops: inf is not a rate"), "%s", err);
    cr_assert(strstr(err, "--tflops: 12abc is not a rate"), "%s", err);
}

/* validate and calibrate with no row that simulates: exit 1, no "MAPE nan %" presented as a
 * result. */
Test(badinputs, no_row_simulated_is_a_failure, .init = test_redirect, .timeout = 60)
{
    g_autofree char *runs = g_build_filename(SSIM_TEST_DATA, "runs", "none-simulate.csv", NULL);
    const char *formats[] = {"table", "csv", "json"};
    for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
        const char *argv[] = {"shiftsim", "validate", "--runs", runs, "-f", formats[i]};
        cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1, "validate -f %s", formats[i]);
    }
    const char *cal[] = {"shiftsim", "calibrate", "--runs", runs, "--folds", "0"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(cal), cal), 1);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_null(strstr(out, "nan"), "%s", out);
    cr_assert(strstr(out, "no run simulated"), "%s", out);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "none of the 2 runs simulated"), "%s", err);
    cr_assert(strstr(err, "nothing to fit"), "%s", err);
}

/* A runs file with its header and no row, and vTrain's table empty or header only, are refused
 * by name (validate used to print empty tables; --convert-vtrain wrote a runs file of no row
 * "on one node of  A100 GPUs" and exited 0). */
Test(badinputs, runs_files_without_a_row_are_refused, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *v2 = g_build_filename(dir, "header-only.csv", NULL);
    g_autofree char *vt_empty = g_build_filename(dir, "vtrain-empty.csv", NULL);
    g_autofree char *vt_header = g_build_filename(dir, "vtrain-header.csv", NULL);
    cr_assert(g_file_set_contents(v2, SSIM_RUNS_VERSION_LINE "\n" SSIM_RUNS_HEADER "\n", -1, NULL));
    cr_assert(g_file_set_contents(vt_empty, "", 0, NULL));
    cr_assert(g_file_set_contents(vt_header,
                                  "# GPUs,global batch,micro batch,hidden size,attention heads,"
                                  "# layers,sequence length,tensor parallelism,data parallelism,"
                                  "pipeline parallelism,iteration time (ms)\r\n",
                                  -1, NULL));
    g_autofree char *out_csv = g_build_filename(dir, "converted.csv", NULL);
    const char *argv[][6] = {
        {"shiftsim", "validate", "-q", "--runs", v2},
        {"shiftsim", "calibrate", "--runs", v2},
        {"shiftsim", "validate", "-q", "--runs", vt_header},
        {"shiftsim", "calibrate", "--convert-vtrain", vt_header, "-o", out_csv},
        {"shiftsim", "calibrate", "--convert-vtrain", vt_empty, "-o", out_csv},
    };
    const int argc[] = {5, 4, 5, 6, 6};
    for (gsize i = 0; i < G_N_ELEMENTS(argc); i++)
        cr_assert_eq(test_cli(argc[i], argv[i]), 1, "%s %s %s was accepted", argv[i][1], argv[i][2],
                     argv[i][3]);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "shiftsim validate: ") &&
                  strstr(err, "header-only.csv: no runs (a header "
                              "and no row)"),
              "%s", err);
    cr_assert(strstr(err, "shiftsim calibrate: "), "%s", err);
    cr_assert(strstr(err, "vtrain-header.csv: no measured run after vTrain's header"), "%s", err);
    cr_assert(strstr(err, "vtrain-empty.csv: empty: expected vTrain's header"), "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out, "a table was printed: %s", out);
    cr_assert_not(g_file_test(out_csv, G_FILE_TEST_EXISTS), "a runs file of no row was written");
    test_remove_tree(dir);
}

/* ---- importers that refuse or warn ---------------------------------------------------------- */

/* A trace whose step, for the model and split given, beats the GPUs' peak is imported with a
 * warning that says so (the audit's Kineto-derived profile predicted a 7,214 s step silently). */
Test(badinputs, implausible_kineto_step_is_warned_about, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *run = g_build_filename(dir, "run.csv", NULL);
    g_autofree char *trace = g_build_filename(SSIM_TEST_DATA, "kineto", "small.json", NULL);
    const char *argv[] = {
        "shiftsim", "calibrate", "--kineto", trace,     "--emit-run",
        run,        "--model",   "gpt-j-6b", "--split", "dp=1,tp=8,pp=1,mb=1,gbs=8"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "warning:") && strstr(err, "above 100%"), "%s", err);
    g_unlink(run);
    g_rmdir(dir);
}

Test(badinputs, mfu_bounds)
{
    g_autofree char *fast = ssim_mfu_implausible(2.4, 0.01, "x");
    g_autofree char *slow = ssim_mfu_implausible(0.002, 7214, "x");
    g_autofree char *fine = ssim_mfu_implausible(0.45, 0.3, "x");
    cr_assert(fast && strstr(fast, "above 100%"), "%s", fast);
    cr_assert(slow && strstr(slow, "below 1%") && strstr(slow, "7214 s"), "%s", slow);
    cr_assert_null(fine);
    g_autofree char *nan = ssim_mfu_implausible(NAN, 0, "x");
    cr_assert_not_null(nan);
}

/* The third JSON reader, Chakra's comm-group file, has the same bound. */
Test(badinputs, deep_comm_group_json_is_refused, .init = test_redirect, .timeout = 60)
{
    g_autofree char *groups = test_bad_path("commgroup-deep.json");
    g_autofree char *prefix = g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "chakra",
                                               "stg-gpt-dp2-tp2-pp2", "workload", NULL);
    const char *argv[] = {"shiftsim", "replay", "--chakra", prefix, "--comm-group", groups};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    g_autofree char *want = g_strdup_printf("%s:1: JSON nested deeper than 256 levels", groups);
    cr_assert(strstr(err, want), "%s", err);
}

/* ---- the memory budget ---------------------------------------------------------------------- */

/* --max-memory: the estimate is checked before anything is lowered, in every verb that
 * simulates; the message names the estimate and the option that reduces it. */
Test(badinputs, max_memory_refuses_before_the_work, .init = test_redirect, .timeout = 60)
{
    const char *sim[] = {"shiftsim", "simulate", "--exact-graph", "--max-memory", "20MB"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(sim), sim), 1);
    const char *cmp[] = {"shiftsim", "compare", "--exact", "--max-memory", "20MB"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(cmp), cmp), 1);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "max_memory: the explicit per-GPU graph (--exact-graph"), "%s", err);
    cr_assert(strstr(err, " runs held at once"), "%s", err);
    cr_assert(strstr(err, "over the limit of 0.02 GB (--max-memory)"), "%s", err);
    cr_assert(strstr(err, "drop --exact"), "%s", err);
    const char *bad[][2] = {
        {"--max-memory", "0"}, {"--max-memory", "-1G"}, {"--max-memory", "lots"}};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *argv[] = {"shiftsim", "sweep", bad[i][0], bad[i][1]};
        cr_assert_eq(test_cli(4, argv), 2, "%s %s", bad[i][0], bad[i][1]);
    }
}

/* In a sweep the row is a limit with reason max_memory; the others run. */
Test(badinputs, sweep_row_over_max_memory_is_a_limit, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
    const char *argv[] = {
        "shiftsim", "sweep",        "--gpus", "8",  "--tp", "8",  "--pp", "1", "-v",
        "1",        "-b",           "1",      "-s", "1f1b", "-q", "-k",   "0", "-B",
        "4096",     "--max-memory", "16MB",   "-o", csv};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
    cr_assert(strstr(text, ",limit,max_memory,"), "%s", text);
    g_unlink(csv);
    g_rmdir(dir);
}

/* A sweep runs no more configurations at once than fit in --max-memory (here the larger of two
 * rows is estimated at 185 MB, so one at a time within 300 MB); the CSV is the same whatever the
 * threads. */
Test(badinputs, sweep_threads_fit_the_memory_budget, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *a = g_build_filename(dir, "a.csv", NULL);
    g_autofree char *b = g_build_filename(dir, "b.csv", NULL);
    const char *one[] = {"shiftsim", "sweep", "--gpus", "8",   "--tp", "8",    "--pp", "1",
                         "-v",       "1",     "-b",     "1,2", "-s",   "1f1b", "-r",   "none",
                         "-B",       "512",   "-k",     "0",   "-j",   "1",    "-o",   a};
    cr_assert_eq(test_cli(G_N_ELEMENTS(one), one), 0);
    const char *many[] = {"shiftsim",     "sweep", "--gpus", "8",   "--tp", "8",    "--pp", "1",
                          "-v",           "1",     "-b",     "1,2", "-s",   "1f1b", "-r",   "none",
                          "-B",           "512",   "-k",     "0",   "-j",   "8",    "-o",   b,
                          "--max-memory", "300MB"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(many), many), 0);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "1 thread instead of 8"), "%s", err);
    g_autofree char *ta = NULL, *tb = NULL;
    cr_assert(g_file_get_contents(a, &ta, NULL, NULL) && g_file_get_contents(b, &tb, NULL, NULL));
    cr_assert_str_eq(ta, tb);
    cr_assert_null(strstr(tb, ",limit,"), "%s", tb);
    g_unlink(a);
    g_unlink(b);
    g_rmdir(dir);
}

/* A profile imported from a tiny Kineto trace extrapolates GPT-J's GEMMs into a step of half an
 * hour: the figures are printed, with a warning that names the MFU. */
Test(badinputs, implausible_profile_step_is_warned_about, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *prof = g_build_filename(dir, "k.csv", NULL);
    g_autofree char *trace = g_build_filename(SSIM_TEST_DATA, "kineto", "small.json", NULL);
    const char *import[] = {"shiftsim", "calibrate", "--kineto", trace, "--emit-profile", prof};
    cr_assert_eq(test_cli(G_N_ELEMENTS(import), import), 0);
    const char *sim[] = {"shiftsim", "simulate", "--profile", prof,   "--nodes",
                         "1",        "--tp",     "8",         "--pp", "1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(sim), sim), 0);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "shiftsim simulate: warning: the step simulated with profile"), "%s",
              err);
    cr_assert(strstr(err, "below 1%"), "%s", err);
    g_unlink(prof);
    g_rmdir(dir);
}

/* Found by the kineto fuzzer (third campaign): "In msg nelems": 1e024 was converted to an
 * integer (undefined; UBSan).  Such a count is no integer the importer can use: the kernel is
 * imported without a shape and counted as such.  Huge tensor dimensions likewise. */
Test(badinputs, kineto_huge_numbers_are_not_converted)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "kineto", "huge-nelems.json", NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &text, &len, NULL));
    SsimKinetoSummary sum;
    GError *error = NULL;
    g_autoptr(SsimProfile) p = ssim_kineto_load_data(text, (gssize)len, path, &sum, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(sum.comm, 0);
    cr_assert_geq(sum.unmapped, 1);
    const char *dims = "{\"traceEvents\": ["
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, "
                       "\"dur\": 5, \"args\": {\"External id\": 1, \"Input Dims\": "
                       "[[4e18, 4e18, 64, 64], [64, 32]]}},"
                       "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 2, "
                       "\"dur\": 3, \"args\": {\"External id\": 1}}]}";
    g_autoptr(SsimProfile) q = ssim_kineto_load_data(dims, -1, "dims.json", &sum, &error);
    cr_assert_not_null(q, "%s", error ? error->message : "");
    cr_assert_eq(sum.gemm, 0);
    cr_assert_eq(sum.unmapped, 1);
}

/* validate lists a row over --max-memory as a limit and fails, like the other limits. */
Test(badinputs, validate_counts_max_memory_as_a_limit, .init = test_redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "validate", "--every",      "720",
                          "-j",       "1",        "--max-memory", "1MB"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "failed: limit: max_memory:"), "%s", out);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "hit a limit (--max-ops, --max-events, --max-memory)") ||
                  strstr(err, "none of the"),
              "%s", err);
}
