/*
 * Tests of vTrain's readers (import/vtrain): the runs converter against the shipped runs file it
 * made from the bundled table, and the all-reduce LUT importer on a hand-written table (means
 * and minima worked out by hand) and on its error messages, and what the bundled single-node
 * table is made of.
 */
#include <criterion/criterion.h>
#include <shiftsim/profile.h>
#include <shiftsim/vtrain.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* vTrain's bundled single-node table, converted. */
static SsimRuns *bundled_single_table(void)
{
    g_autoptr(GError) error = NULL;
    SsimRuns *runs = ssim_runs_from_vtrain(SHIFTSIM_SOURCE_ROOT
                                           "/traces/validation/vtrain-a100/ground_truth_single.csv",
                                           SSIM_VTRAIN_CLUSTER, &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    return runs;
}

/* The shipped vTrain runs file is exactly what the converter makes of the bundled table. */
Test(vtrain, vtrain_converter_matches_shipped_file)
{
    g_autoptr(SsimRuns) runs = bundled_single_table();
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

/*
 * What vTrain's single-node table is (docs/validation.md, "What vTrain's single-node rows
 * are"): the rows that differ only in their number of microbatches lie on one line to the
 * nanosecond, as no set of timed runs does, and a row with dp > 1 is the dp = 1 line of its
 * configuration plus one all-reduce time of vTrain's own nccl-tests table (imported as
 * traces/vtrain-a100/allreduce.csv, either of its two timings), or for gradients above its
 * largest size, vTrain's extrapolation of it, which at 4 GPUs gives 1161 and 1353 MiB less time
 * than the table's own 1 GiB.
 */
typedef struct {
    GArray *points; /* (microbatches, ns) */
    double a, b;    /* the line through its first two points */
    gint64 lo, hi;  /* dp > 1 over the dp = 1 line: its offsets' range */
    guint dp;
} VtrainGroup;

static void vtrain_group_free(gpointer p)
{
    VtrainGroup *g = p;
    if (g->points)
        g_array_free(g->points, TRUE);
    g_free(g);
}

static VtrainGroup *vtrain_group(GHashTable *t, char *key, guint dp)
{
    VtrainGroup *g = g_hash_table_lookup(t, key);
    if (g == NULL) {
        g = g_new0(VtrainGroup, 1);
        g->points = g_array_new(FALSE, FALSE, 2 * sizeof(gint64));
        g->lo = G_MAXINT64;
        g->hi = G_MININT64;
        g->dp = dp;
        g_hash_table_insert(t, key, g);
    } else {
        g_free(key);
    }
    return g;
}

Test(vtrain, single_node_rows_are_lines_plus_an_allreduce_table)
{
    g_autoptr(SsimRuns) runs = bundled_single_table();
    g_autoptr(GHashTable) lines =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, vtrain_group_free);
    for (guint i = 0; i < ssim_runs_n(runs); i++) {
        const SsimMeasuredRun *r = ssim_runs_get(runs, i);
        const SsimParallel *p = &r->par;
        VtrainGroup *g = vtrain_group(
            lines, g_strdup_printf("%s/%u/%u/%u/%u", r->model, p->tp, p->pp, p->microbatch, p->dp),
            p->dp);
        gint64 pt[2] = {ssim_parallel_n_microbatches(p), llround(r->iteration_ms * 1e6)};
        g_array_append_val(g->points, pt);
    }
    /* 1. Lines: 288 groups of 3 or 4 rows, 432 rows on the line through two others. */
    guint on_line = 0, groups3 = 0;
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, lines);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        VtrainGroup *g = value;
        if (g->points->len < 2)
            continue;
        const gint64 *p0 = &g_array_index(g->points, gint64, 0), *p1 = p0 + 2;
        g->b = (double)(p1[1] - p0[1]) / (double)(p1[0] - p0[0]);
        g->a = (double)p0[1] - g->b * (double)p0[0];
        groups3 += g->points->len >= 3;
        for (guint k = 2; k < g->points->len; k++, on_line++) {
            const gint64 *q = p0 + 2 * k;
            cr_assert_leq(fabs(g->a + g->b * (double)q[0] - (double)q[1]), 3.0,
                          "%s: %" G_GINT64_FORMAT, (char *)key, q[0]);
        }
    }
    cr_assert_eq(groups3, 288);
    cr_assert_eq(on_line, 432);

    /* vTrain's all-reduce table: both timings of every size, by rank count; and the 1 GiB one. */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimProfile) table =
        ssim_profile_load(SHIFTSIM_SOURCE_ROOT "/traces/vtrain-a100/allreduce.csv", &error);
    cr_assert_not_null(table, "%s", error ? error->message : "");
    g_autoptr(GArray) lut = g_array_new(FALSE, FALSE, 2 * sizeof(gint64)); /* (ranks, ns) */
    gint64 gib[9] = {0};
    for (guint k = 0; k < ssim_profile_n_rows(table); k++) {
        const SsimProfileRow *row = ssim_profile_row(table, k);
        gint64 ranks = row->ranks;
        gint64 mean = llround(row->time_us * 1e3), min = llround(row->min_us * 1e3);
        gint64 a[2] = {ranks, min}, b[2] = {ranks, 2 * mean - min};
        g_array_append_val(lut, a);
        g_array_append_val(lut, b);
        if (row->bytes == 1ull << 30 && ranks <= 8)
            gib[ranks] = MAX(min, 2 * mean - min);
    }
    cr_assert(gib[2] > 0 && gib[4] > 0 && gib[8] > 0);

    /* 2. dp > 1 over the dp = 1 line: one offset a (model, tp, pp, dp). */
    g_autoptr(GHashTable) offsets =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, vtrain_group_free);
    guint composed = 0;
    g_hash_table_iter_init(&it, lines);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        VtrainGroup *g = value;
        if (g->dp == 1)
            continue;
        g_autofree char *base = g_strdup(key);
        *strrchr(base, '/') = '\0';
        g_autofree char *twin = g_strdup_printf("%s/1", base);
        VtrainGroup *one = g_hash_table_lookup(lines, twin);
        if (one == NULL || one->points->len < 2)
            continue;
        *strrchr(base, '/') = '\0'; /* drop the microbatch */
        VtrainGroup *o = vtrain_group(offsets, g_strdup_printf("%s/%u", base, g->dp), g->dp);
        for (guint k = 0; k < g->points->len; k++, composed++) {
            const gint64 *q = &g_array_index(g->points, gint64, 2 * k);
            gint64 off = q[1] - llround(one->a + one->b * (double)q[0]);
            o->lo = MIN(o->lo, off);
            o->hi = MAX(o->hi, off);
        }
    }
    cr_assert_eq(composed, 504);
    guint in_table = 0, above2 = 0, below4 = 0;
    g_hash_table_iter_init(&it, offsets);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        VtrainGroup *o = value;
        cr_assert_leq(o->hi - o->lo, 6, "%s: offsets %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT,
                      (char *)key, o->lo, o->hi);
        gint64 mid = (o->lo + o->hi) / 2;
        gboolean found = FALSE;
        for (guint k = 0; k < lut->len && !found; k++) {
            const gint64 *e = &g_array_index(lut, gint64, 2 * k);
            found = e[0] == (gint64)o->dp && llabs(e[1] - mid) <= 3;
        }
        in_table += found;
        above2 += !found && o->dp == 2 && mid > gib[2];
        below4 += !found && o->dp == 4 && mid < gib[4];
    }
    cr_assert_eq(g_hash_table_size(offsets), 56);
    cr_assert_eq(in_table, 48);
    /* Gradients above 1 GiB: at 2 GPUs longer than the table's 1 GiB, at 4 GPUs shorter. */
    cr_assert_eq(above2, 4);
    cr_assert_eq(below4, 4);
}
