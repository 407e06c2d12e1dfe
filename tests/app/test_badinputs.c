/*
 * The bad-input corpus (tests/data/bad/): every broken file, fed to the verb that reads its
 * format through ssim_cli_main(), must give a non-zero exit and a message on stderr naming the
 * file and, where the format has them, the line and the field.  Then the limits (an op budget
 * checked before lowering, an event budget on the replay, host memory) and the guarantee that a
 * failing run leaves neither a half-written output nor a temporary file behind.  The classes of
 * docs/robustness.md ("What each class of hostile input gets") beyond the corpus are in
 * tests/app/test_robustness.c, in the same suite.  Inputs the fuzzers (tests/fuzz/) found
 * crashing are kept here as regression cases too.
 *
 * Parameters are inline arrays, not pointers: Criterion copies them into the test's process.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"
#include <shiftsim/runs.h>
#include "src/app/cli.h"
#include <shiftsim/graphfile.h>
#include <shiftsim/nccltests.h>
#include <shiftsim/profile.h>

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

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
    /* Hugging Face config.json: shiftsim simulate --model FILE (the config's field named) */
    {"model-hf-missing-layers.json", K_MODEL, 0, "num_hidden_layers: missing"},
    {"model-hf-string-heads.json", K_MODEL, 0, "num_attention_heads: must be a positive"},
    {"model-hf-truncated.json", K_MODEL, 0, "not JSON"},
    {"model-hf-deep.json", K_MODEL, 1, "JSON nested deeper than 256 levels"},
    {"model-hf-binary.json", K_MODEL, 0, "not JSON"},
    {"model-hf-moe.json", K_MODEL, 0, "num_local_experts: 8 experts"},
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
    {"runs-version-3.csv", K_RUNS, 1, "version"},
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

ParameterizedTestParameters(badinputs, corpus)
{
    return cr_make_param_array(Bad, bad_cases, G_N_ELEMENTS(bad_cases));
}

ParameterizedTest(Bad *c, badinputs, corpus, .init = test_redirect, .timeout = 60)
{
    g_autofree char *path = test_bad_path(c->file);
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
    int rc = test_cli(n, argv);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
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

Test(badinputs, absurd_microbatch_count_is_refused, .init = test_redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim",    "simulate", "--nodes",        "1",
                          "--tp",        "8",        "--pp",           "1",
                          "--dp",        "1",        "--global-batch", "2000000000",
                          "--recompute", "full",     "--ignore-memory"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "2000000000 microbatches") && strstr(err, "over the limit of 1000000"),
              "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
}

Test(badinputs, op_estimate_over_max_ops_is_refused, .init = test_redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim",       "simulate", "--nodes",        "1", "--tp",      "8",
                          "--pp",           "1",        "--dp",           "1", "--max-ops", "1000",
                          "--global-batch", "64",       "--ignore-memory"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    /* GPT-J: 28 layers on one stage, 64 microbatches, one graph rank. */
    cr_assert(strstr(err, "28 layers per rank x 64 microbatches") &&
                  strstr(err, "over the limit of 1000 ops (--max-ops)"),
              "%s", err);
}

Test(badinputs, default_op_limit_refuses_billions_of_ops, .init = test_redirect, .timeout = 60)
{
    /* 1024 GPUs, every one simulated, 512 microbatches of a 96-layer model: billions of ops. */
    const char *argv[] = {"shiftsim",       "simulate", "--model", "gpt-3-175b",
                          "--cluster",      "dgx-a100", "--nodes", "128",
                          "--tp",           "8",        "--pp",    "8",
                          "--global-batch", "8192",     "--exact", "--ignore-memory"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "over the limit of 200000000 ops"), "%s", err);
}

Test(badinputs, max_events_stops_the_run_without_figures, .init = test_redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "simulate", "--max-events", "50"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "event budget") && strstr(err, "no figures"), "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert_str_empty(out);
}

Test(badinputs, negative_limits_are_usage_errors, .init = test_redirect)
{
    const char *a[] = {"shiftsim", "simulate", "--max-events", "-1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(a), a), 2);
    const char *b[] = {"shiftsim", "simulate", "--max-ops", "-5"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(b), b), 2);
}

/* Every verb that simulates takes the limits (src/app/options.c, ssim_cli_add_limits). */
Test(badinputs, every_simulating_verb_refuses_negative_limits, .init = test_redirect)
{
    const char *verbs[] = {"simulate", "compare", "sweep", "validate", "calibrate"};
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++) {
        const char *a[] = {"shiftsim", verbs[i], "--max-ops", "-1"};
        cr_assert_eq(test_cli(G_N_ELEMENTS(a), a), 2, "%s --max-ops -1", verbs[i]);
        const char *b[] = {"shiftsim", verbs[i], "--max-events", "-1"};
        cr_assert_eq(test_cli(G_N_ELEMENTS(b), b), 2, "%s --max-events -1", verbs[i]);
    }
}

Test(badinputs, compare_honours_max_ops, .init = test_redirect, .timeout = 60)
{
    const char *argv[] = {"shiftsim", "compare", "--max-ops", "1000"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "max_ops: ") && strstr(err, "over the limit of 1000 ops"), "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
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
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    char *text = NULL;
    cr_assert(g_file_get_contents(csv, &text, NULL, NULL));
    g_unlink(csv);
    g_rmdir(dir);
    return text;
}

Test(badinputs, sweep_row_over_a_limit_is_reported_as_such, .init = test_redirect, .timeout = 60)
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
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "limit    max_ops") && strstr(out, "limit    max_events"), "%s", out);
}

static const char *const one_run =
    "# shiftsim-runs v1\n" SSIM_RUNS_HEADER_V1 "\n"
    "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,10,,test\n"
    "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,64,1f1b,full,off,10,,test\n";

static char *write_runs(char **dir)
{
    *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    char *path = g_build_filename(*dir, "runs.csv", NULL);
    cr_assert(g_file_set_contents(path, one_run, -1, NULL));
    return path;
}

Test(badinputs, validate_fails_when_a_run_hits_a_limit, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = NULL;
    g_autofree char *runs = write_runs(&dir);
    /* Row 2 has 8 microbatches of 2 layers on one rank: 2 x 8 x 80 + 8 x 16 + 2 x 8 + 32 = 1456
     * estimated ops; row 1 has one microbatch, 2 x 80 + 16 + 16 + 32 = 224.  A budget of 1000
     * stops row 2 only. */
    const char *argv[] = {"shiftsim", "validate", "--runs", runs, "--max-ops", "1000", "-j", "1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "1 of 2 runs hit a limit"), "%s", err);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "limit: max_ops: the lowering would build about 1.46e+03 ops"), "%s",
              out);
    cr_assert(strstr(out, "1 simulated, 1 failed"), "%s", out);
    g_unlink(runs);
    g_rmdir(dir);
}

Test(badinputs, calibrate_refuses_runs_over_a_limit, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = NULL;
    g_autofree char *runs = write_runs(&dir);
    const char *argv[] = {"shiftsim", "calibrate", "--runs", runs, "--folds",
                          "0",        "--max-ops", "1000",   "-j", "1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    g_autofree char *where = g_strdup_printf("%s:4: limit: max_ops:", runs);
    cr_assert(strstr(err, where) && strstr(err, "1 of the 2 runs to fit hit a limit"), "%s", err);
    cr_assert_null(strstr(err, ":3: limit"), "%s", err);
    g_unlink(runs);
    g_rmdir(dir);
}

Test(badinputs, absurd_gpu_counts_are_refused_up_front, .init = test_redirect, .timeout = 60)
{
    /* 2^20 GPUs is the limit: 131073 nodes of 8 is one node over, 2^30 nodes overflow a guint. */
    const char *a[] = {"shiftsim", "simulate", "--nodes", "131073"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(a), a), 2);
    const char *b[] = {"shiftsim", "compare", "--nodes", "1073741824"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(b), b), 2);
    const char *c[] = {"shiftsim", "sweep", "--nodes", "600000000"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(c), c), 2);
    const char *d[] = {"shiftsim", "sweep", "--gpus", "100000000"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(d), d), 2);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "131073 nodes x 8 GPUs per node = 1048584 GPUs is over the limit of "
                          "1048576 GPUs"),
              "%s", err);
    cr_assert(strstr(err, "1073741824 nodes x 8 GPUs per node = 8589934592 GPUs"), "%s", err);
    cr_assert(strstr(err, "--gpus: 100000000 GPUs is over the limit of 1048576 GPUs"), "%s", err);
}

/* A hidden size of billions is refused by the model's bounds, naming the file, line and field; a
 * shape within them but absurd (the widest hidden and the longest context: 1e24 FLOPs an
 * iteration) with the step-time estimate, instead of overflowing simulated time into a false
 * deadlock. */
Test(badinputs, absurd_model_shape_is_refused_with_the_estimate, .init = test_redirect,
     .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *ini = g_build_filename(dir, "m.ini", NULL);
    const char *shape = "[model]\nformat = 1\nname = wide\nlayers = 28\n"
                        "hidden = %s\nheads = 16\nkv_heads = 16\n"
                        "ffn = 16384\nvocab = 50400\nseq_len = %s\n";
    g_autofree char *beyond = g_strdup_printf(shape, "4000000000", "2048");
    cr_assert(g_file_set_contents(ini, beyond, -1, NULL));
    const char *argv[] = {"shiftsim", "simulate", "--model",        ini, "--tp", "8",
                          "--pp",     "1",        "--ignore-memory"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *absurd = g_strdup_printf(shape, "1048576", "16777216");
    g_autofree char *ini2 = g_build_filename(dir, "m2.ini", NULL);
    cr_assert(g_file_set_contents(ini2, absurd, -1, NULL));
    const char *argv2[] = {"shiftsim", "simulate", "--model",        ini2, "--tp", "8",
                           "--pp",     "1",        "--ignore-memory"};
    int rc = test_cli(G_N_ELEMENTS(argv2), argv2);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert_eq(rc, 1, "%s", err);
    g_autofree char *bound = g_strdup_printf("%s:5: hidden: 4000000000 is more than 1048576", ini);
    cr_assert(strstr(err, bound), "%s", err);
    cr_assert(strstr(err, "step_time: one iteration needs at least") &&
                  strstr(err, "over the limit of 10000000 s"),
              "%s", err);
    g_unlink(ini);
    g_unlink(ini2);
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

Test(badinputs, failed_simulation_writes_no_timeline, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "timeline.csv", NULL);
    const char *argv[] = {"shiftsim", "simulate", "--max-events", "50", "--timeline", out};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    cr_assert_eq(n_entries(dir), 0, "a failed run left a file in %s", dir);
    g_rmdir(dir);
}

Test(badinputs, output_into_missing_directory_leaves_nothing, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "no-such-dir", "timeline.csv", NULL);
    const char *argv[] = {"shiftsim", "replay", "--timeline", out};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, out), "the message should name %s: %s", out, err);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}

Test(badinputs, failed_import_keeps_the_old_output, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "profile.csv", NULL);
    cr_assert(g_file_set_contents(out, "old contents\n", -1, NULL));
    g_autofree char *in = test_bad_path("nccl-truncated.txt");
    const char *argv[] = {"shiftsim", "profile", "import", "--from", "nccl-tests", in, "-o", out};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(out, &text, NULL, NULL));
    cr_assert_str_eq(text, "old contents\n");
    cr_assert_eq(n_entries(dir), 1, "a temporary file was left in %s", dir);
    g_unlink(out);
    g_rmdir(dir);
}

/* A deadlocked graph: replay fails after parsing, before anything is written. */
Test(badinputs, deadlocked_replay_writes_no_trace, .init = test_redirect, .timeout = 60)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-bad-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "t.csv", NULL);
    g_autofree char *json = g_build_filename(dir, "t.json", NULL);
    g_autofree char *graph = g_build_filename(SSIM_TEST_DATA, "graphs", "deadlock.graph", NULL);
    const char *argv[] = {"shiftsim", "replay", graph, "--timeline", csv, "--trace", json};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    cr_assert_eq(n_entries(dir), 0);
    g_rmdir(dir);
}
