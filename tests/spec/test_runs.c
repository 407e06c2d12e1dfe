/*
 * Tests of the measured-runs table (spec/runs): a round trip through the writer and the reader of
 * the published A100 runs, and the exact `file:line:column: field:` messages of malformed runs
 * files (fixtures in tests/data/runs/).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <shiftsim/runs.h>

#include <string.h>

#define RUNS_DATA SSIM_TEST_DATA "/runs/"

typedef struct {
    char file[40];
    char message[160];
} BadRuns;

ParameterizedTestParameters(runs, bad_runs)
{
    static BadRuns cases[] = {
        {"bad-version.csv", "bad-version.csv:1:1: version: the first line must be"},
        {"bad-header.csv", "bad-header.csv:2:1: header: 3 columns, expected 22"},
        {"bad-tp.csv", "bad-tp.csv:3:41: tp: 'x' is not a positive integer"},
        {"no-measurement.csv", "no-measurement.csv:3:65: iteration_ms: missing"},
        {"short-row.csv", "short-row.csv:3:67: tflops_per_gpu: the row has 20 fields"},
        {"bad-recompute.csv", "bad-recompute.csv:4:56: recompute: 'most' is not one of"},
        {"bad-quote.csv", "bad-quote.csv:3:"},
        {"negative-time.csv", "negative-time.csv:3:65: iteration_ms: '-3' is not a positive"},
    };
    return cr_make_param_array(BadRuns, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadRuns *c, runs, bad_runs)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_strconcat(RUNS_DATA, c->file, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_load(path, &error);
    cr_assert_null(runs, "%s loaded", c->file);
    cr_assert(strstr(error->message, c->message) != NULL, "%s: got '%s', want '%s'", c->file,
              error->message, c->message);
}

Test(runs, runs_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    /* Ten Narayanan et al. 2021 rows, eight Korthikanti et al. 2022 Table 5 rows and the 530B
     * run at 8-way data parallelism of its section 6.3. */
    cr_assert_eq(ssim_runs_n(runs), 19);
    cr_assert_float_eq(ssim_runs_get(runs, 0)->tflops_per_gpu, 137, 1e-12);
    const SsimMeasuredRun *k = ssim_runs_get(runs, 15);
    cr_assert_str_eq(k->model, "korthikanti-530b");
    cr_assert_eq(k->par.pp, 35);
    cr_assert_eq(k->par.virtual_stages, 3);
    cr_assert_eq(k->par.recompute, SSIM_RECOMPUTE_SELECTIVE);
    cr_assert(k->par.sequence_parallel);
    cr_assert_float_eq(k->iteration_ms, 37830, 1e-9);
    g_autoptr(GString) a = ssim_runs_write(runs);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autoptr(GString) b = ssim_runs_write(back);
    cr_assert_str_eq(a->str, b->str);
}
