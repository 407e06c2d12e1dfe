/*
 * Tests of vTrain's readers (import/vtrain): the runs converter against the shipped runs file it
 * made from the bundled table, and the all-reduce LUT importer on a hand-written table (means
 * and minima worked out by hand) and on its error messages.
 */
#include <criterion/criterion.h>
#include <shiftsim/vtrain.h>

#include <string.h>

/* The shipped vTrain runs file is exactly what the converter makes of the bundled table. */
Test(vtrain, vtrain_converter_matches_shipped_file)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_from_vtrain(
        SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100/ground_truth_single.csv", "dgx-a100",
        &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_n(runs), 1440);
    g_autoptr(GString) text = ssim_runs_write(runs);
    g_autofree char *shipped = NULL;
    cr_assert(g_file_get_contents(SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100-single.csv",
                                  &shipped, NULL, NULL));
    cr_assert(strcmp(text->str, shipped) == 0, "shipped file differs from the converter output");
    const SsimMeasuredRun *r = ssim_runs_get(runs, 0);
    cr_assert_eq(r->par.pp, 2);
    cr_assert_eq(r->par.microbatch, 8);
    cr_assert_eq(r->par.recompute, SSIM_RECOMPUTE_FULL);
    cr_assert_float_eq(r->iteration_ms, 372.160408, 1e-9);
}

Test(vtrain, import_vtrain_lut)
{
    const char *lut = "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n"
                      "1048576,262144,float,44210,23.72,45100,23.25\n"
                      "2097152,524288,float,53430,39.25,51130,41.01\n";
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_vtrain_import_lut(p, lut, -1, "dir/AR_GPU4_1M_1024M_LUT.csv", &error));
    cr_assert_eq(ssim_profile_n_rows(p), 2);
    const SsimProfileRow *r = ssim_profile_row(p, 1);
    cr_assert_eq(r->ranks, 4);
    cr_assert_eq(r->ranks_per_node, 4);
    cr_assert_float_eq(r->time_us, 52.28, 1e-12);
    cr_assert_float_eq(r->min_us, 51.13, 1e-12);
    cr_assert_not(ssim_vtrain_import_lut(p, lut, -1, "allreduce.csv", &error));
    cr_assert(strstr(error->message, "allreduce.csv:1:1: ranks: "), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_vtrain_import_lut(p, "size,count\n", -1, "AR_GPU2_x.csv", &error));
    cr_assert(strstr(error->message, "AR_GPU2_x.csv:1:1: header: "), "%s", error->message);
    g_clear_error(&error);
    const char *bad = "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n"
                      "1048576,262144,float,44210,23.72,4x5100,23.25\n";
    cr_assert_not(ssim_vtrain_import_lut(p, bad, -1, "AR_GPU2_x.csv", &error));
    cr_assert(strstr(error->message, "AR_GPU2_x.csv:2:34: time(ns): '4x5100'"), "%s",
              error->message);
    cr_assert_eq(ssim_profile_n_rows(p), 2);
}
