/*
 * The bad-input corpus (tests/data/bad/): every broken file, fed to the verb that reads its
 * format through ssim_cli_main(), must give a non-zero exit and a message on stderr naming the
 * file and, where the format has them, the line and the field.  Then the limits (an op budget
 * checked before lowering, an event budget on the replay, host memory) and the guarantee that a
 * failing run leaves neither a half-written output nor a temporary file behind; and one section
 * per class of docs/robustness.md ("What each class of hostile input gets"): output paths,
 * inputs that are not files, time that cannot overflow, honest exits, importers that refuse or
 * warn, the memory budget.  Inputs the fuzzers (tests/fuzz/) found crashing are kept here as
 * regression cases too.
 *
 * Parameters are inline arrays, not pointers: Criterion copies them into the test's process.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <shiftsim/runs.h>
#include "src/app/cli.h"
#include <shiftsim/graphfile.h>
#include <shiftsim/kineto.h>
#include <shiftsim/nccltests.h>
#include <shiftsim/profile.h>
#include <shiftsim/output.h>
#include <shiftsim/sim.h>

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum {
    K_MODEL,
    K_CLUSTER,
    K_GRAPH,
    K_PROFILE,
    K_NCCL,
    K_NCCL_JSON,
    K_RUNS,
    K_KINETO,
    K_CHAKRA,
    K_SWEEP
} Kind;

typedef struct {
    char file[40];  /* under tests/data/bad/ */
    int kind;       /* Kind: which verb reads it */
    int line;       /* the line the message names right after the file name; 0: none */
    char field[64]; /* the field (key, column) the message names; "": none */
} Bad;

static Bad bad_cases[] = {
    /* model INI: shiftsim simulate --model FILE */
    {"model-empty.ini", K_MODEL, 0, "[model]"},
    {"model-truncated.ini", K_MODEL, 5, ""},
    {"model-zero-layers.ini", K_MODEL, 4, "layers"},
    {"model-negative-hidden.ini", K_MODEL, 5, "hidden"},
    {"model-nan-heads.ini", K_MODEL, 6, "heads"},
    {"model-huge-layers.ini", K_MODEL, 4, "layers"},
    {"model-wrong-type.ini", K_MODEL, 10, "seq_len"},
    {"model-float-layers.ini", K_MODEL, 4, "layers"},
    {"model-duplicate-key.ini", K_MODEL, 13, "layers"},
    {"model-unknown-key.ini", K_MODEL, 13, "dropout"},
    {"model-version-2.ini", K_MODEL, 2, "format"},
    {"model-unknown-dtype.ini", K_MODEL, 11, "dtype"},
    {"model-binary.ini", K_MODEL, 1, ""},
    /* cluster INI: shiftsim simulate --cluster FILE */
    {"cluster-empty.ini", K_CLUSTER, 0, "[cluster]"},
    {"cluster-truncated.ini", K_CLUSTER, 17, "bandw"},
    {"cluster-zero-gpus.ini", K_CLUSTER, 5, "gpus_per_node"},
    {"cluster-negative-bandwidth.ini", K_CLUSTER, 17, "bandwidth_GB_s"},
    {"cluster-nan-peak.ini", K_CLUSTER, 9, "peak_tflops_bf16"},
    {"cluster-inf-latency.ini", K_CLUSTER, 23, "latency_us"},
    {"cluster-huge-nodes.ini", K_CLUSTER, 6, "nodes"},
    {"cluster-duplicate-key.ini", K_CLUSTER, 6, "gpus_per_node"},
    {"cluster-unknown-key.ini", K_CLUSTER, 43, "rail_colour"},
    {"cluster-version-0.ini", K_CLUSTER, 2, "format"},
    {"cluster-wrong-type.ini", K_CLUSTER, 13, "hbm_capacity_MiB"},
    {"cluster-binary.ini", K_CLUSTER, 0, ""},
    {"cluster-too-many-gpus.ini", K_CLUSTER, 6, "over the limit of 1048576 GPUs"},
    /* op graph: shiftsim replay FILE */
    {"graph-empty.graph", K_GRAPH, 1, "version"},
    {"graph-truncated.graph", K_GRAPH, 4, ""},
    {"graph-version-9.graph", K_GRAPH, 1, "version"},
    {"graph-nan-flops.graph", K_GRAPH, 2, "flops"},
    {"graph-negative-bytes.graph", K_GRAPH, 3, "bytes"},
    {"graph-huge-duration.graph", K_GRAPH, 2, "dur"},
    {"graph-duplicate-key.graph", K_GRAPH, 2, "dur"},
    {"graph-unknown-key.graph", K_GRAPH, 2, "colour"},
    {"graph-zero-rank-group.graph", K_GRAPH, 2, "group"},
    {"graph-binary.graph", K_GRAPH, 0, ""},
    /* profile CSV: shiftsim profile show FILE */
    {"profile-empty.csv", K_PROFILE, 1, "version"},
    {"profile-version-3.csv", K_PROFILE, 1, "version"},
    {"profile-truncated.csv", K_PROFILE, 4, "k"},
    {"profile-nan-time.csv", K_PROFILE, 3, "time_us"},
    {"profile-negative-m.csv", K_PROFILE, 3, "m"},
    {"profile-huge-bytes.csv", K_PROFILE, 3, "bytes"},
    {"profile-wrong-type.csv", K_PROFILE, 3, "time_us"},
    {"profile-duplicate-column.csv", K_PROFILE, 2, "header"},
    {"profile-unknown-column.csv", K_PROFILE, 2, "header"},
    {"profile-binary.csv", K_PROFILE, 1, "version"},
    {"profile-huge-time.csv", K_PROFILE, 4, "time_us"},
    /* nccl-tests: shiftsim profile import --from nccl-tests[-json] FILE */
    {"nccl-empty.txt", K_NCCL, 1, "table"},
    {"nccl-truncated.txt", K_NCCL, 19, "time"},
    {"nccl-negative-size.txt", K_NCCL, 18, "size"},
    {"nccl-binary.txt", K_NCCL, 1, "table"},
    {"nccl-nan-time.txt", K_NCCL, 18, "time"},
    {"nccl-huge-size.txt", K_NCCL, 18, "size"},
    {"nccl-wrong-type.txt", K_NCCL, 18, "size"},
    {"nccl-truncated.json", K_NCCL_JSON, 1, "json"},
    {"nccl-empty.json", K_NCCL_JSON, 0, "not a JSON object"},
    {"nccl-version-3.json", K_NCCL_JSON, 0, "$.version"},
    {"nccl-wrong-type.json", K_NCCL_JSON, 0, "$.results[0].size"},
    {"nccl-negative-time.json", K_NCCL_JSON, 0, "$.results[0].out_of_place.time"},
    {"nccl-huge-size.json", K_NCCL_JSON, 0, "$.results[0].size"},
    /* Found by the nccltests fuzzer: an nthreads past 2^63 overflowed nthreads x ngpus. */
    {"nccl-fuzz-huge-nthreads.json", K_NCCL_JSON, 0, "$.config.devices"},
    {"nccl-deep.json", K_NCCL_JSON, 1, "JSON nested deeper than 256 levels"},
    /* Results nccl-tests itself found wrong, and rank or device lines listed twice (two runs
     * concatenated), which inflated the rank count. */
    {"nccl-wrong.txt", K_NCCL, 27, "#wrong: 3 wrong results"},
    {"nccl-duplicate-rank.txt", K_NCCL, 10, "rank 3 is listed twice"},
    {"nccl-duplicate-device.txt", K_NCCL, 10, "listed for a second rank"},
    {"nccl-wrong.json", K_NCCL_JSON, 0, "$.results[2].in_place.nwrong"},
    {"nccl-duplicate-rank.json", K_NCCL_JSON, 0, "$.config.devices[8]: rank 3 is listed twice"},
    /* measured runs: shiftsim validate --runs FILE */
    {"runs-empty.csv", K_RUNS, 1, "version"},
    {"runs-binary.csv", K_RUNS, 1, "version"},
    {"runs-version-2.csv", K_RUNS, 1, "version"},
    {"runs-nan-time.csv", K_RUNS, 3, "iteration_ms"},
    {"runs-zero-layers.csv", K_RUNS, 3, "layers"},
    {"runs-huge-nodes.csv", K_RUNS, 3, "nodes"},
    {"runs-unknown-cluster.csv", K_RUNS, 3, "cluster"},
    {"runs-truncated.csv", K_RUNS, 4, "fields"},
    {"runs-wrong-type.csv", K_RUNS, 3, "dp"},
    {"runs-negative-time.csv", K_RUNS, 3, "iteration_ms"},
    {"runs-duplicate-column.csv", K_RUNS, 2, "header"},
    {"runs-unknown-column.csv", K_RUNS, 2, "header"},
    {"runs-too-many-gpus.csv", K_RUNS, 3, "nodes"},
    /* Kineto JSON: shiftsim calibrate --kineto FILE */
    {"kineto-empty.json", K_KINETO, 0, "traceEvents"},
    {"kineto-truncated.json", K_KINETO, 0, "not JSON"},
    {"kineto-wrong-type.json", K_KINETO, 0, "traceEvents"},
    {"kineto-binary.json", K_KINETO, 0, "not JSON"},
    {"kineto-negative-dur.json", K_KINETO, 0, "traceEvents[0].dur: -10000"},
    {"kineto-huge-dur.json", K_KINETO, 0, "dur: 1.0000000000000001e+300"},
    {"kineto-wrong-type-dur.json", K_KINETO, 0, "traceEvents[0].dur: \"long\""},
    /* Nested 75,000 levels in 150 KB: json-glib's recursion overflowed the stack. */
    {"kineto-deep.json", K_KINETO, 1, "JSON nested deeper than 256 levels"},
    /* Malformed events are reported with their index, never dropped. */
    {"kineto-string-ts.json", K_KINETO, 0, "traceEvents[1].ts: \"soon\""},
    {"kineto-negative-bytes.json", K_KINETO, 0, "traceEvents[1].args.bytes: -4096"},
    {"kineto-zero-step.json", K_KINETO, 0, "traceEvents[0].dur: ProfilerStep#1 lasts 0 us"},
    /* Chakra traces: shiftsim replay --chakra PREFIX (the file is PREFIX.0.et); "line" is the
     * byte offset the message gives. */
    {"chakra/empty.0.et", K_CHAKRA, 0, "GlobalMetadata"},
    {"chakra/truncated.0.et", K_CHAKRA, 0, "byte 8: message 1"},
    {"chakra/binary.0.et", K_CHAKRA, 0, "byte 0: message 0"},
    {"chakra/huge-length.0.et", K_CHAKRA, 0, "claims 4294967295 bytes"},
    /* sweep CSVs: shiftsim merge FILE */
    {"sweep-empty.csv", K_SWEEP, 1, "version"},
    {"sweep-binary.csv", K_SWEEP, 1, "version"},
    {"sweep-version-2.csv", K_SWEEP, 1, "version"},
    {"sweep-unknown-column.csv", K_SWEEP, 3, "header"},
    {"sweep-truncated.csv", K_SWEEP, 5, "row"},
    {"sweep-wrong-type.csv", K_SWEEP, 4, "index"},
    {"sweep-negative-index.csv", K_SWEEP, 4, "index"},
    {"sweep-huge-index.csv", K_SWEEP, 4, "index"},
    {"sweep-duplicate-row.csv", K_SWEEP, 5, "appears twice"},
    /* Every figure is checked before it is merged. */
    {"sweep-nan-step.csv", K_SWEEP, 4, "step_ms: 'nan'"},
    {"sweep-negative-step.csv", K_SWEEP, 5, "step_ms: '-419.462985'"},
    {"sweep-unknown-status.csv", K_SWEEP, 4, "status: 'great'"},
};

static void redirect(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

static int cli(int argc, const char **argv)
{
    int rc = ssim_cli_main(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

/* Everything the redirected stream received (caller frees). */
static char *slurp(FILE *f)
{
    GString *s = g_string_new(NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        g_string_append_len(s, buf, (gssize)n);
    return g_string_free(s, FALSE);
}

static char *bad_path(const char *file)
{
    return g_build_filename(SSIM_TEST_DATA, "bad", file, NULL);
}

ParameterizedTestParameters(badinputs, corpus)
{
    return cr_make_param_array(Bad, bad_cases, G_N_ELEMENTS(bad_cases));
}

ParameterizedTest(Bad *c, badinputs, corpus, .init = redirect, .timeout = 60)
{
    g_autofree char *path = bad_path(c->file);
    cr_assert(g_file_test(path, G_FILE_TEST_IS_REGULAR), "%s: fixture missing", path);
    const char *argv[8] = {"shiftsim"};
    int n = 1;
    switch ((Kind)c->kind) {
    case K_MODEL:
        argv[n++] = "simulate", argv[n++] = "--model";
        break;
    case K_CLUSTER:
        argv[n++] = "simulate", argv[n++] = "--cluster";
        break;
    case K_GRAPH:
        argv[n++] = "replay";
        break;
    case K_PROFILE:
        argv[n++] = "profile", argv[n++] = "show";
        break;
    case K_NCCL:
    case K_NCCL_JSON:
        argv[n++] = "profile", argv[n++] = "import", argv[n++] = "--from";
        argv[n++] = c->kind == K_NCCL ? "nccl-tests" : "nccl-tests-json";
        break;
    case K_RUNS:
        argv[n++] = "validate", argv[n++] = "--runs";
        break;
    case K_KINETO:
        argv[n++] = "calibrate", argv[n++] = "--kineto";
        break;
    case K_CHAKRA:
        argv[n++] = "replay", argv[n++] = "--chakra";
        break;
    case K_SWEEP:
        argv[n++] = "merge";
        break;
    }
    /* A Chakra workload is named by its prefix; the message names the rank's file. */
    g_autofree char *prefix =
        c->kind == K_CHAKRA ? g_strndup(path, strlen(path) - strlen(".0.et")) : NULL;
    argv[n++] = prefix ? prefix : path;
    int rc = cli(n, argv);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert_neq(rc, 0, "%s: exit 0; stderr: %s", c->file, err);
    g_autofree char *where =
        c->line ? g_strdup_printf("%s:%d:", path, c->line) : g_strdup_printf("%s:", path);
    cr_assert(strstr(err, where) != NULL, "%s: the message should name '%s': %s", c->file, where,
              err);
    if (c->field[0])
        cr_assert(strstr(err, c->field) != NULL, "%s: the message should name '%s': %s", c->file,
                  c->field, err);
}

/* Found by the nccltests fuzzer: a device_info with a line break failed
 * ssim_profile_set_meta()'s precondition (a GLib critical, the metadata lost).  The break is now
 * a space. */
Test(badinputs, nccl_json_device_name_with_a_line_break)
{
    g_autofree char *path =
        g_build_filename(SSIM_TEST_DATA, "nccltests", "newline-device.json", NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &text, &len, NULL));
    g_autoptr(SsimProfile) p = ssim_profile_new();
    GError *error = NULL;
    cr_assert(ssim_nccltests_import_json(p, text, (gssize)len, path, NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_str_eq(ssim_profile_get_meta(p, "gpu"), "NVIDIA H200");
}

/* Found by the nccltests fuzzer: "nccl_version": 2E703 is infinite, and its conversion to long
 * was undefined.  The rows import; the version is left out of the metadata. */
Test(badinputs, nccl_json_infinite_version)
{
    g_autofree char *path =
        g_build_filename(SSIM_TEST_DATA, "nccltests", "infinite-version.json", NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &text, &len, NULL));
    g_autoptr(SsimProfile) p = ssim_profile_new();
    GError *error = NULL;
    cr_assert(ssim_nccltests_import_json(p, text, (gssize)len, path, NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_gt(ssim_profile_n_rows(p), 0);
    cr_assert_null(ssim_profile_get_meta(p, "nccl"));
}

/* ---- limits --------------------------------------------------------------------------------- */

Test(badinputs, absurd_microbatch_count_is_refused, .init = redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim",    "simulate", "--nodes",        "1",
                          "--tp",        "8",        "--pp",           "1",
                          "--dp",        "1",        "--global-batch", "2000000000",
                          "--recompute", "full",     "--ignore-memory"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "2000000000 microbatches") && strstr(err, "over the limit of 1000000"),
              "%s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
}

Test(badinputs, op_estimate_over_max_ops_is_refused, .init = redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim",       "simulate", "--nodes",        "1", "--tp",      "8",
                          "--pp",           "1",        "--dp",           "1", "--max-ops", "1000",
                          "--global-batch", "64",       "--ignore-memory"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    /* GPT-J: 28 layers on one stage, 64 microbatches, one graph rank. */
    cr_assert(strstr(err, "28 layers per rank x 64 microbatches") &&
                  strstr(err, "over the limit of 1000 ops (--max-ops)"),
              "%s", err);
}

Test(badinputs, default_op_limit_refuses_billions_of_ops, .init = redirect, .timeout = 60)
{
    /* 1024 GPUs, every one simulated, 512 microbatches of a 96-layer model: billions of ops. */
    const char *argv[] = {"shiftsim",       "simulate", "--model", "gpt-3-175b",
                          "--cluster",      "dgx-a100", "--nodes", "128",
                          "--tp",           "8",        "--pp",    "8",
                          "--global-batch", "8192",     "--exact", "--ignore-memory"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "over the limit of 200000000 ops"), "%s", err);
}

Test(badinputs, max_events_stops_the_run_without_figures, .init = redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "simulate", "--max-events", "50"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "event budget") && strstr(err, "no figures"), "%s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
}

Test(badinputs, negative_limits_are_usage_errors, .init = redirect)
{
    const char *a[] = {"shiftsim", "simulate", "--max-events", "-1"};
    cr_assert_eq(cli(G_N_ELEMENTS(a), a), 2);
    const char *b[] = {"shiftsim", "simulate", "--max-ops", "-5"};
    cr_assert_eq(cli(G_N_ELEMENTS(b), b), 2);
}

/* Every verb that simulates takes the limits (src/app/options.c, ssim_cli_add_limits). */
Test(badinputs, every_simulating_verb_refuses_negative_limits, .init = redirect)
{
    const char *verbs[] = {"simulate", "compare", "sweep", "validate", "calibrate"};
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++) {
        const char *a[] = {"shiftsim", verbs[i], "--max-ops", "-1"};
        cr_assert_eq(cli(G_N_ELEMENTS(a), a), 2, "%s --max-ops -1", verbs[i]);
        const char *b[] = {"shiftsim", verbs[i], "--max-events", "-1"};
        cr_assert_eq(cli(G_N_ELEMENTS(b), b), 2, "%s --max-events -1", verbs[i]);
    }
}

Test(badinputs, compare_honours_max_ops, .init = redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "compare", "--max-ops", "1000"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "max_ops: ") && strstr(err, "over the limit of 1000 ops"), "%s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
}

/* The CSV row of configuration `index` (caller frees), or NULL. */
static char *csv_row_of(const char *csv, guint index)
{
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    g_autofree char *prefix = g_strdup_printf("%u,", index);
    for (guint i = 0; lines[i]; i++)
        if (g_str_has_prefix(lines[i], prefix))
            return g_strdup(lines[i]);
    return NULL;
}

/* One 8-GPU configuration (tp 8, pp 1, 1f1b, no recompute), under a limit: the row is "limit"
 * with the limit as its reason and no figures. */
static char *sweep_one(const char *option, const char *value)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
    const char *argv[] = {"shiftsim", "sweep", "--gpus", "8",  "--tp", "8",    "--pp", "1",
                          "-v",       "1",     "-b",     "1",  "-s",   "1f1b", "-r",   "none",
                          "-q",       "-k",    "0",      "-o", csv,    option, value};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 0);
    char *text = NULL;
    cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
    g_unlink(csv);
    g_rmdir(dir);
    return text;
}

Test(badinputs, sweep_row_over_a_limit_is_reported_as_such, .init = redirect, .timeout = 60)
{
    g_autofree char *ops = sweep_one("--max-ops", "1000");
    g_autofree char *row = csv_row_of(ops, 0);
    cr_assert_not_null(row, "%s", ops);
    /* status, reason, then the nine figures empty, then the peak memory (the estimate was made). */
    cr_assert(strstr(row, ",allreduce,limit,max_ops,,,,,,,,,,"), "%s", row);
    cr_assert(strstr(row, "over the limit of 1000 ops"), "%s", row);

    g_autofree char *events = sweep_one("--max-events", "100");
    g_free(row);
    row = csv_row_of(events, 0);
    cr_assert_not_null(row, "%s", events);
    cr_assert(strstr(row, ",allreduce,limit,max_events,,,,,,,,,,"), "%s", row);
    cr_assert(strstr(row, "event budget (max events 100)"), "%s", row);

    /* Without a limit the same configuration is simulated. */
    g_autofree char *free_run = sweep_one("--max-events", "0");
    g_free(row);
    row = csv_row_of(free_run, 0);
    cr_assert(strstr(row, ",allreduce,ok,,"), "%s", row);
    /* The summary counts the limited row under its own status. */
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "limit    max_ops") && strstr(out, "limit    max_events"), "%s", out);
}

static const char *const one_run =
    "# shiftsim-runs v1\n" SSIM_RUNS_HEADER "\n"
    "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,10,,test\n"
    "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,64,1f1b,full,off,10,,test\n";

static char *write_runs(char **dir)
{
    *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    char *path = g_build_filename(*dir, "runs.csv", NULL);
    cr_assert(g_file_set_contents(path, one_run, -1, NULL));
    return path;
}

Test(badinputs, validate_fails_when_a_run_hits_a_limit, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = NULL;
    g_autofree char *runs = write_runs(&dir);
    /* Row 2 has 8 microbatches of 2 layers on one rank: 2 x 8 x 64 + 8 x 16 + 2 x 8 + 32 = 1200
     * estimated ops; row 1 has one microbatch, 2 x 64 + 16 + 16 + 32 = 192.  A budget of 1000
     * stops row 2 only. */
    const char *argv[] = {"shiftsim", "validate", "--runs", runs, "--max-ops", "1000", "-j", "1"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "1 of 2 runs hit a limit"), "%s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "limit: max_ops: the lowering would build about 1.2e+03 ops"), "%s", out);
    cr_assert(strstr(out, "1 simulated, 1 failed"), "%s", out);
    g_unlink(runs);
    g_rmdir(dir);
}

Test(badinputs, calibrate_refuses_runs_over_a_limit, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = NULL;
    g_autofree char *runs = write_runs(&dir);
    const char *argv[] = {"shiftsim", "calibrate", "--runs", runs, "--folds",
                          "0",        "--max-ops", "1000",   "-j", "1"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    g_autofree char *where = g_strdup_printf("%s:4: limit: max_ops:", runs);
    cr_assert(strstr(err, where) && strstr(err, "1 of the 2 runs to fit hit a limit"), "%s", err);
    cr_assert_null(strstr(err, ":3: limit"), "%s", err);
    g_unlink(runs);
    g_rmdir(dir);
}

Test(badinputs, absurd_gpu_counts_are_refused_up_front, .init = redirect, .timeout = 60)
{
    /* 2^20 GPUs is the limit: 131073 nodes of 8 is one node over, 2^30 nodes overflow a guint. */
    const char *a[] = {"shiftsim", "simulate", "--nodes", "131073"};
    cr_assert_eq(cli(G_N_ELEMENTS(a), a), 2);
    const char *b[] = {"shiftsim", "compare", "--nodes", "1073741824"};
    cr_assert_eq(cli(G_N_ELEMENTS(b), b), 2);
    const char *c[] = {"shiftsim", "sweep", "--nodes", "600000000"};
    cr_assert_eq(cli(G_N_ELEMENTS(c), c), 2);
    const char *d[] = {"shiftsim", "sweep", "--gpus", "100000000"};
    cr_assert_eq(cli(G_N_ELEMENTS(d), d), 2);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "131073 nodes x 8 GPUs per node = 1048584 GPUs is over the limit of "
                          "1048576 GPUs"),
              "%s", err);
    cr_assert(strstr(err, "1073741824 nodes x 8 GPUs per node = 8589934592 GPUs"), "%s", err);
    cr_assert(strstr(err, "--gpus: 100000000 GPUs is over the limit of 1048576 GPUs"), "%s", err);
}

/* A hidden size of billions: 7e26 FLOPs an iteration, refused with the estimate instead of
 * overflowing simulated time into a false deadlock. */
Test(badinputs, absurd_model_shape_is_refused_with_the_estimate, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *ini = g_build_filename(dir, "m.ini", NULL);
    cr_assert(g_file_set_contents(ini,
                                  "[model]\nformat = 1\nname = wide\nlayers = 28\n"
                                  "hidden = 4000000000\nheads = 16\nkv_heads = 16\n"
                                  "ffn = 16384\nvocab = 50400\nseq_len = 2048\n",
                                  -1, NULL));
    const char *argv[] = {"shiftsim", "simulate", "--model",        ini, "--tp", "8",
                          "--pp",     "1",        "--ignore-memory"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "step_time: one iteration needs at least") &&
                  strstr(err, "over the limit of 10000000 s"),
              "%s", err);
    g_unlink(ini);
    g_rmdir(dir);
}

/* ---- outputs are never half-written ------------------------------------------------------- */

static guint n_entries(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    cr_assert_not_null(d);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    return n;
}

Test(badinputs, failed_simulation_writes_no_timeline, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "timeline.csv", NULL);
    const char *argv[] = {"shiftsim", "simulate", "--max-events", "50", "--timeline", out};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    cr_assert_eq(n_entries(dir), 0, "a failed run left a file in %s", dir);
    g_rmdir(dir);
}

Test(badinputs, output_into_missing_directory_leaves_nothing, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "no-such-dir", "timeline.csv", NULL);
    const char *argv[] = {"shiftsim", "replay", "--timeline", out};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, out), "the message should name %s: %s", out, err);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}

Test(badinputs, failed_import_keeps_the_old_output, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "profile.csv", NULL);
    cr_assert(g_file_set_contents(out, "old contents\n", -1, NULL));
    g_autofree char *in = bad_path("nccl-truncated.txt");
    const char *argv[] = {"shiftsim", "profile", "import", "--from", "nccl-tests", in, "-o", out};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(out, &text, NULL, NULL));
    cr_assert_str_eq(text, "old contents\n");
    cr_assert_eq(n_entries(dir), 1, "a temporary file was left in %s", dir);
    g_unlink(out);
    g_rmdir(dir);
}

/* A deadlocked graph: replay fails after parsing, before anything is written. */
Test(badinputs, deadlocked_replay_writes_no_trace, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "t.csv", NULL);
    g_autofree char *json = g_build_filename(dir, "t.json", NULL);
    g_autofree char *graph = g_build_filename(SSIM_TEST_DATA, "graphs", "deadlock.graph", NULL);
    const char *argv[] = {"shiftsim", "replay", graph, "--timeline", csv, "--trace", json};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}

/* ---- outputs ----------------------------------------------------------------------------------
 */

/* A device, a FIFO or a symbolic link given as an output is refused before any work: as root a
 * rename over /dev/null would replace the device. */
Test(badinputs, non_regular_outputs_are_refused_before_the_work, .init = redirect, .timeout = 60)
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
        cr_assert_eq(cli(argc[i], argv[i]), 1, "%s %s was accepted", argv[i][1], argv[i][2]);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "/dev/null: is a character device"), "%s", err);
    cr_assert(strstr(err, "fifo.csv: is a FIFO"), "%s", err);
    cr_assert(strstr(err, ": is a directory"), "%s", err);
    /* compare --plot FILE.png checks FILE.dat and FILE.gp too, and the per-policy charts. */
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out, "work was done before the output was checked: %s", out);
    GStatBuf st;
    cr_assert_eq(g_lstat("/dev/null", &st), 0);
    cr_assert(S_ISCHR(st.st_mode));
    g_unlink(fifo);
    g_rmdir(dir);
}

/* The check comes right after the options: a sweep into a missing directory prints nothing but
 * the message (the audit's took 11 s of simulation first). */
Test(badinputs, sweep_into_a_missing_directory_fails_before_simulating, .init = redirect,
     .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "nodir", "plots", NULL);
    const char *argv[] = {"shiftsim", "sweep", "--gpus", "8", "--plot", prefix};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "does not exist"), "%s", err);
    cr_assert_null(strstr(err, "evaluated"), "the sweep ran: %s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}

/* SIGTERM while an output is being written: the CLI's handler removes the temporary file and
 * the process still dies of SIGTERM. */
Test(badinputs, a_signal_leaves_no_temporary_file, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "sweep.csv", NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        const char *argv[] = {"shiftsim", "--version"};
        freopen("/dev/null", "w", stdout);
        ssim_cli_main(2, (char **)argv); /* installs the handlers */
        SsimOutput *out = ssim_output_open(path, NULL);
        if (out == NULL || !ssim_output_append(out, "half a row", 10, NULL))
            _exit(3);
        raise(SIGTERM);
        _exit(4); /* not reached */
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    cr_assert_eq(n_entries(dir), 0, "a temporary file was left in %s", dir);
    g_rmdir(dir);
}

/* ---- inputs that are not files -------------------------------------------------------------- */

/* A directory or a device given as an input file says what it is (both got "no such file"). */
Test(badinputs, directories_and_devices_as_inputs_say_what_they_are, .init = redirect,
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
        cr_assert_eq(cli(argc[i], argv[i]), 1, "%s %s was accepted", argv[i][1], argv[i][2]);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
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
Test(badinputs, tiny_bandwidth_is_refused_at_the_cost_boundary, .init = redirect, .timeout = 60)
{
    g_autofree char *ini = bad_path("cluster-tiny-bandwidth.ini");
    const char *analytic[] = {"shiftsim", "simulate", "--cluster", ini, "--nodes", "1"};
    cr_assert_eq(cli(G_N_ELEMENTS(analytic), analytic), 1);
    const char *flow[] = {"shiftsim", "simulate", "--cluster", ini,
                          "--nodes",  "1",        "--network", "flow"};
    cr_assert_eq(cli(G_N_ELEMENTS(flow), flow), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "(rank 0) has no finite cost"), "%s", err);
    cr_assert(strstr(err, "16777216 bytes"), "%s", err);
    cr_assert(strstr(err, "no usable bandwidth"), "%s", err);
    cr_assert_null(strstr(err, "deadlock"), "%s", err);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_null(strstr(out, "9223372036854775807"), "%s", out);
}

/* An infinite rate made every op free: a makespan of 0. */
Test(badinputs, infinite_or_zero_rates_are_refused_where_parsed, .init = redirect)
{
    const char *opts[][2] = {{"--tflops", "inf"},   {"--tflops", "0"},    {"--hbm-gbps", "inf"},
                             {"--hbm-gbps", "nan"}, {"--link-bw", "inf"}, {"--link-bw", "0"}};
    for (gsize i = 0; i < G_N_ELEMENTS(opts); i++) {
        const char *argv[] = {"shiftsim", "replay", opts[i][0], opts[i][1]};
        cr_assert_eq(cli(4, argv), 2, "%s %s", opts[i][0], opts[i][1]);
    }
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "--tflops: inf is not a rate"), "%s", err);
}

/* validate and calibrate with no row that simulates: exit 1, no "MAPE nan %" presented as a
 * result. */
Test(badinputs, no_row_simulated_is_a_failure, .init = redirect, .timeout = 60)
{
    g_autofree char *runs = g_build_filename(SSIM_TEST_DATA, "runs", "none-simulate.csv", NULL);
    const char *formats[] = {"table", "csv", "json"};
    for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
        const char *argv[] = {"shiftsim", "validate", "--runs", runs, "-f", formats[i]};
        cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1, "validate -f %s", formats[i]);
    }
    const char *cal[] = {"shiftsim", "calibrate", "--runs", runs, "--folds", "0"};
    cr_assert_eq(cli(G_N_ELEMENTS(cal), cal), 1);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_null(strstr(out, "nan"), "%s", out);
    cr_assert(strstr(out, "no run simulated"), "%s", out);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "none of the 2 runs simulated"), "%s", err);
    cr_assert(strstr(err, "nothing to fit"), "%s", err);
}

/* ---- importers that refuse or warn ---------------------------------------------------------- */

/* A trace whose step, for the model and split given, beats the GPUs' peak is imported with a
 * warning that says so (the audit's Kineto-derived profile predicted a 7,214 s step silently). */
Test(badinputs, implausible_kineto_step_is_warned_about, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *run = g_build_filename(dir, "run.csv", NULL);
    g_autofree char *trace = g_build_filename(SSIM_TEST_DATA, "kineto", "small.json", NULL);
    const char *argv[] = {
        "shiftsim", "calibrate", "--kineto", trace,     "--emit-run",
        run,        "--model",   "gpt-j-6b", "--split", "dp=1,tp=8,pp=1,mb=1,gbs=8"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
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
Test(badinputs, deep_comm_group_json_is_refused, .init = redirect, .timeout = 60)
{
    g_autofree char *groups = bad_path("commgroup-deep.json");
    g_autofree char *prefix = g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "chakra",
                                               "stg-gpt-dp2-tp2-pp2", "workload", NULL);
    const char *argv[] = {"shiftsim", "replay", "--chakra", prefix, "--comm-group", groups};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    g_autofree char *want = g_strdup_printf("%s:1: JSON nested deeper than 256 levels", groups);
    cr_assert(strstr(err, want), "%s", err);
}

/* ---- the memory budget ---------------------------------------------------------------------- */

/* --max-memory: the estimate is checked before anything is lowered, in every verb that
 * simulates; the message names the estimate and the option that reduces it. */
Test(badinputs, max_memory_refuses_before_the_work, .init = redirect, .timeout = 60)
{
    const char *sim[] = {"shiftsim", "simulate", "--exact-graph", "--max-memory", "20MB"};
    cr_assert_eq(cli(G_N_ELEMENTS(sim), sim), 1);
    const char *cmp[] = {"shiftsim", "compare", "--exact", "--max-memory", "20MB"};
    cr_assert_eq(cli(G_N_ELEMENTS(cmp), cmp), 1);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "max_memory: the explicit per-GPU graph (--exact-graph"), "%s", err);
    cr_assert(strstr(err, " runs held at once"), "%s", err);
    cr_assert(strstr(err, "over the limit of 0.02 GB (--max-memory)"), "%s", err);
    cr_assert(strstr(err, "drop --exact"), "%s", err);
    const char *bad[][2] = {
        {"--max-memory", "0"}, {"--max-memory", "-1G"}, {"--max-memory", "lots"}};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *argv[] = {"shiftsim", "sweep", bad[i][0], bad[i][1]};
        cr_assert_eq(cli(4, argv), 2, "%s %s", bad[i][0], bad[i][1]);
    }
}

/* In a sweep the row is a limit with reason max_memory; the others run. */
Test(badinputs, sweep_row_over_max_memory_is_a_limit, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
    const char *argv[] = {
        "shiftsim", "sweep",        "--gpus", "8",  "--tp", "8",  "--pp", "1", "-v",
        "1",        "-b",           "1",      "-s", "1f1b", "-q", "-k",   "0", "-B",
        "4096",     "--max-memory", "16MB",   "-o", csv};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
    cr_assert(strstr(text, ",limit,max_memory,"), "%s", text);
    g_unlink(csv);
    g_rmdir(dir);
}

/* A sweep runs no more configurations at once than fit in --max-memory (here the larger of two
 * rows is estimated at 185 MB, so one at a time within 300 MB); the CSV is the same whatever the
 * threads. */
Test(badinputs, sweep_threads_fit_the_memory_budget, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *a = g_build_filename(dir, "a.csv", NULL);
    g_autofree char *b = g_build_filename(dir, "b.csv", NULL);
    const char *one[] = {"shiftsim", "sweep", "--gpus", "8",   "--tp", "8",    "--pp", "1",
                         "-v",       "1",     "-b",     "1,2", "-s",   "1f1b", "-r",   "none",
                         "-B",       "512",   "-k",     "0",   "-j",   "1",    "-o",   a};
    cr_assert_eq(cli(G_N_ELEMENTS(one), one), 0);
    const char *many[] = {"shiftsim",     "sweep", "--gpus", "8",   "--tp", "8",    "--pp", "1",
                          "-v",           "1",     "-b",     "1,2", "-s",   "1f1b", "-r",   "none",
                          "-B",           "512",   "-k",     "0",   "-j",   "8",    "-o",   b,
                          "--max-memory", "300MB"};
    cr_assert_eq(cli(G_N_ELEMENTS(many), many), 0);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
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
Test(badinputs, implausible_profile_step_is_warned_about, .init = redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *prof = g_build_filename(dir, "k.csv", NULL);
    g_autofree char *trace = g_build_filename(SSIM_TEST_DATA, "kineto", "small.json", NULL);
    const char *import[] = {"shiftsim", "calibrate", "--kineto", trace, "--emit-profile", prof};
    cr_assert_eq(cli(G_N_ELEMENTS(import), import), 0);
    const char *sim[] = {"shiftsim", "simulate", "--profile", prof,   "--nodes",
                         "1",        "--tp",     "8",         "--pp", "1"};
    cr_assert_eq(cli(G_N_ELEMENTS(sim), sim), 0);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
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
Test(badinputs, validate_counts_max_memory_as_a_limit, .init = redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "validate", "--every",      "720",
                          "-j",       "1",        "--max-memory", "1MB"};
    cr_assert_eq(cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *out = slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "failed: limit: max_memory:"), "%s", out);
    g_autofree char *err = slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "hit a limit (--max-ops, --max-events, --max-memory)") ||
                  strstr(err, "none of the"),
              "%s", err);
}
