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
        SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100/ground_truth_single.csv",
        SSIM_VTRAIN_CLUSTER, &error);
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
    cr_assert_eq(r->par.transformer_impl, SSIM_TRANSFORMER_IMPL_LOCAL);
    /* DeepSpeed's engine: no asynchronous TP all-reduce, autograd's gradient accumulation. */
    cr_assert(r->par.tp_sync_grad);
    cr_assert(r->par.step_costs_set & r->par.step_costs_on & (1u << SSIM_STEP_COST_GRAD_ACCUM));
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

/* vTrain's multi-node table (ground_truth_multi.csv: the model's size in front of the same
 * columns): rows made up for the test, one inside tp = 2 on 32 GPUs, one with tp = 16 across two
 * of vTrain's eight-GPU nodes.  Each run gets the nodes it spans, cross-node tp where tp is larger
 * than a node, its file and line as source; the file is one to check, not to fit. */
Test(vtrain, multi_node_table)
{
    const char *table =
        "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,"
        "# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
        "iteration time (ms)\n"
        "7.5,32,256,4,4096,32,36,2048,2,16,1,1234.5\n"
        "20,128,512,2,5120,40,40,2048,16,8,1,9876.5\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_from_vtrain_data(table, -1, "dir/made_up_multi.csv", "dgx-a100", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_n(runs), 2);
    const SsimMeasuredRun *a = ssim_runs_get(runs, 0), *b = ssim_runs_get(runs, 1);
    cr_assert_eq(a->nodes, 4);
    cr_assert_eq(b->nodes, 16);
    cr_assert_not(a->par.allow_cross_node_tp);
    cr_assert(b->par.allow_cross_node_tp);
    cr_assert_eq(a->par.tp, 2);
    cr_assert_eq(a->par.dp, 16);
    cr_assert_eq(a->hidden, 4096);
    cr_assert_eq(a->layers, 36);
    cr_assert_float_eq(b->iteration_ms, 9876.5, 1e-9);
    cr_assert_str_eq(b->source, "vTrain measured data (Bang et al., MICRO 2024), "
                                "made_up_multi.csv line 3");
    cr_assert_str_eq(ssim_runs_get_meta(runs, "use"), "check");
    cr_assert_str_eq(ssim_runs_get_meta(runs, "data"),
                     "vTrain measured data: 2 training iterations on 32 to 128 A100 GPUs "
                     "(nodes of 8)");

    /* A bad size cell is named by file, line, column and field. */
    g_autofree char *bad = g_strdup(table);
    bad[strlen(bad) - strlen("20,128,512,2,5120,40,40,2048,16,8,1,9876.5\n")] = 'x';
    cr_assert_null(ssim_runs_from_vtrain_data(bad, -1, "m.csv", "dgx-a100", &error));
    cr_assert(strstr(error->message, "m.csv:3:1: Parameters (billion): 'x0' is not a positive"),
              "%s", error->message);
    g_clear_error(&error);
    /* Neither header: the message gives both. */
    cr_assert_null(ssim_runs_from_vtrain_data("a,b\n1,2\n", -1, "h.csv", "dgx-a100", &error));
    cr_assert(strstr(error->message, "h.csv:1:1: header: ") &&
                  strstr(error->message, "ground_truth_multi.csv"),
              "%s", error->message);
}

/* ssim_runs_load_any() reads vTrain's table as the converter does and a runs file as a runs
 * file: the bundled single-node table and the runs file converted from it load to the same runs;
 * the header is recognised after a byte order mark and with a CR, and nothing else is taken for
 * it (a runs file, an all-reduce table, a header with a column missing). */
Test(vtrain, load_any_tells_the_tables_from_runs_files)
{
    g_autoptr(GError) error = NULL;
    gboolean vtrain = FALSE;
    g_autoptr(SsimRuns) table = ssim_runs_load_any(
        SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100/ground_truth_single.csv",
        SSIM_VTRAIN_CLUSTER, &vtrain, &error);
    cr_assert_not_null(table, "%s", error ? error->message : "");
    cr_assert(vtrain);
    g_autoptr(SsimRuns) file =
        ssim_runs_load_any(SHIFTSIM_SOURCE_ROOT "/traces/validation/vtrain-a100-single.csv",
                           SSIM_VTRAIN_CLUSTER, &vtrain, &error);
    cr_assert_not_null(file, "%s", error ? error->message : "");
    cr_assert_not(vtrain);
    g_autoptr(GString) a = ssim_runs_write(table), b = ssim_runs_write(file);
    cr_assert_str_eq(a->str, b->str);

    const char *single = "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
                         "sequence length,tensor parallelism,data parallelism,pipeline "
                         "parallelism,iteration time (ms)";
    g_autofree char *multi = g_strconcat("Parameters (billion),", single, "\n1,2\n", NULL);
    g_autofree char *bom_crlf = g_strconcat("\xEF\xBB\xBF", single, "\r\n8,16\r\n", NULL);
    cr_assert(ssim_vtrain_is_runs_table(single, strlen(single)));
    cr_assert(ssim_vtrain_is_runs_table(multi, strlen(multi)));
    cr_assert(ssim_vtrain_is_runs_table(bom_crlf, strlen(bom_crlf)));
    const char *others[] = {"# shiftsim-runs v2\nmodel,layers\n",
                            "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n",
                            "# GPUs,global batch,micro batch\n", ""};
    for (guint k = 0; k < G_N_ELEMENTS(others); k++)
        cr_assert_not(ssim_vtrain_is_runs_table(others[k], strlen(others[k])), "%s", others[k]);
}
