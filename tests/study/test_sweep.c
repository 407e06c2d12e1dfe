/*
 * The sweep: enumeration counts and order against a hand count, every rejection reason on a
 * one-configuration sweep, the status tally of a small sweep counted by hand from the model's
 * shape, byte-identical CSVs for -j 1 and -j 2, shards merged back into the whole, the merge's
 * refusals (foreign headers, overlaps, gaps), and the plot files (text only: no gnuplot needed).
 * Every sweep here is GPT-J 6B or Megatron GPT 1.7B on 8 or 16 H100s, so the suite stays fast
 * under the sanitizers too.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/spectest.h"

#include <shiftsim/budget.h>
#include <shiftsim/sweep.h>
#include "src/app/verbs.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

Test(sweep, default_enumeration_hand_count)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 8);
    /* tp {1,2,4,8} x pp {1,2,4,8}: the 10 pairs with tp*pp | 8, 6 left out; each with
     * v {1} x mb {1,2} x native schedule x auto x alpa = 2 configurations, every one under the
     * paper's baseline with its own schedule (the default of every verb). */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, &error);
    cr_assert_not_null(s);
    cr_assert_eq(ssim_sweep_n_configs(s), 20);
    cr_assert_str_eq(ssim_sweep_row(s, 0)->par.schedule, "alpa");
    cr_assert_str_eq(ssim_sweep_row(s, 0)->par.placement, "alpa");
    cr_assert_eq(ssim_sweep_skipped_pairs(s), 6);
    cr_assert_eq(spec.base.global_batch, 32, "4 sequences per GPU, the default of every verb");
    /* With --cross-node-tp on 16 GPUs: tp up to 16, pp the 5 divisors of 16: pairs with
     * tp*pp | 16 number 5+4+3+2+1 = 15. */
    ssim_sweep_spec_init(&spec, c, 16);
    spec.base.allow_cross_node_tp = TRUE;
    ssim_sweep_spec_default_tp(&spec, c);
    cr_assert_eq(spec.tp.n, 5);
    g_autoptr(SsimSweep) s16 = ssim_sweep_new(m, c, &spec, &error);
    cr_assert_eq(ssim_sweep_n_configs(s16), 15 * 2);
    cr_assert_eq(ssim_sweep_skipped_pairs(s16), 10);
}

/* Context parallelism kept in every row (sweep --cp): on 8 GPUs at cp 2 the pairs with
 * tp*pp | 4 are the 6 of tp, pp in {1,2,4}, and each row's dp is 4 / (tp pp) replicas. */
Test(sweep, context_parallel_in_every_row)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 8);
    spec.base.cp = 2;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    cr_assert_eq(ssim_sweep_n_configs(s), 6 * 2);
    cr_assert_eq(ssim_sweep_skipped_pairs(s), 10);
    for (guint i = 0; i < ssim_sweep_n_configs(s); i++) {
        const SsimParallel *p = &ssim_sweep_row(s, i)->par;
        cr_assert_eq(p->cp, 2);
        cr_assert_eq(ssim_parallel_world(p), 8, "row %u", i);
    }
}

/* The embedding and loss counted as layers (sweep --embedding-in-split --loss-in-split) in every
 * row, counted against each row's pp: GPT-J's 28 layers and the two make 30, so on tp 2 over 24
 * H100s pp 1 and 2 are even splits (28; 14/14), pp 3 is 9/10/9 and pp 4 is refused (30 % 4). */
Test(sweep, megatron_counted_layers_in_every_row)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 24);
    cr_assert(ssim_parallel_parse(&spec.base, "embedding_in_split=on,loss_in_split=on", NULL));
    test_sweep_ints(&spec.tp, "2");
    test_sweep_ints(&spec.pp, "1,2,3,4");
    test_sweep_ints(&spec.microbatch, "1");
    test_sweep_names(&spec.schedules, "1f1b");
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    cr_assert_eq(ssim_sweep_n_configs(s), 4);
    cr_assert_eq(ssim_sweep_run(s, 0, 1, 2, NULL, NULL, 100), 4);
    static const char *const layers[] = {"", "", "9/10/9", NULL};
    for (guint i = 0; i < 4; i++) {
        const SsimSweepRow *r = ssim_sweep_row(s, i);
        if (layers[i] == NULL) {
            cr_assert_eq(r->status, SSIM_SWEEP_ILLEGAL, "pp %u", r->par.pp);
            cr_assert(strstr(r->detail, "the 28 layers of gpt-j-6b and the embedding and the "
                                        "loss make 30"),
                      "%s", r->detail);
            continue;
        }
        cr_assert_eq(r->status, SSIM_SWEEP_OK, "pp %u: %s %s", r->par.pp, r->reason, r->detail);
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &r->par);
        cr_assert_str_eq(got->str, layers[i], "pp %u", r->par.pp);
    }
    /* stage_layers=balanced instead: the head (2 h V = 0.946 of a layer's forward FLOPs at
     * s 2048, no recompute yet) on the last of 3 stages: round((28 + 0.946) / 3 - 0.946) = 9,
     * the other 19 as 9 and 10: 9/10/9; on 4, round(7.24 - 0.946) = 6, then 22 as 7, 8, 7:
     * 7/8/7/6. */
    SsimSweepSpec even;
    ssim_sweep_spec_init(&even, c, 24);
    cr_assert(ssim_parallel_parse(&even.base, "stage_layers=balanced", NULL));
    test_sweep_ints(&even.tp, "2");
    test_sweep_ints(&even.pp, "3,4");
    test_sweep_ints(&even.microbatch, "1");
    test_sweep_names(&even.schedules, "1f1b");
    g_autoptr(SsimSweep) b = ssim_sweep_new(m, c, &even, &error);
    cr_assert_not_null(b, "%s", error ? error->message : "");
    cr_assert_eq(ssim_sweep_run(b, 0, 1, 2, NULL, NULL, 100), 2);
    static const char *const balanced[] = {"9/10/9", "7/8/7/6"};
    for (guint i = 0; i < 2; i++) {
        const SsimSweepRow *r = ssim_sweep_row(b, i);
        cr_assert_eq(r->status, SSIM_SWEEP_OK, "pp %u: %s %s", r->par.pp, r->reason, r->detail);
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &r->par);
        cr_assert_str_eq(got->str, balanced[i], "pp %u", r->par.pp);
    }
}

Test(sweep, order_placements_innermost)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 8);
    test_sweep_ints(&spec.tp, "2,1");
    test_sweep_ints(&spec.pp, "1,2,3");
    test_sweep_ints(&spec.vstages, "1");
    test_sweep_ints(&spec.microbatch, "1,2");
    test_sweep_names(&spec.schedules, "1f1b");
    test_sweep_names(&spec.placements, "xla,commshift");
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, NULL);
    /* pairs in list order: (2,1), (2,2), (1,1), (1,2); pp 3 divides nothing: 2 skipped. */
    cr_assert_eq(ssim_sweep_n_configs(s), 4 * 2 * 2);
    cr_assert_eq(ssim_sweep_skipped_pairs(s), 2);
    const SsimSweepRow *r5 = ssim_sweep_row(s, 5);
    cr_assert_eq(r5->par.tp, 2);
    cr_assert_eq(r5->par.pp, 2);
    cr_assert_eq(r5->par.dp, 2);
    cr_assert_eq(r5->par.microbatch, 1);
    cr_assert_str_eq(r5->par.placement, "commshift");
    const SsimSweepRow *r10 = ssim_sweep_row(s, 10);
    cr_assert_eq(r10->par.tp, 1);
    cr_assert_eq(r10->par.pp, 1);
    cr_assert_eq(r10->par.dp, 8);
    cr_assert_eq(r10->par.microbatch, 2);
    cr_assert_str_eq(r10->par.placement, "xla");
    for (guint i = 0; i < ssim_sweep_n_configs(s); i++)
        cr_assert_eq(ssim_sweep_row(s, i)->status, SSIM_SWEEP_PENDING);
}

Test(sweep, bad_specs)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 12);
    g_autoptr(GError) error = NULL;
    cr_assert_null(ssim_sweep_new(m, c, &spec, &error));
    cr_assert(strstr(error->message, "not a positive multiple of the 8 GPUs per node"));
    SsimSweepInts l;
    g_clear_error(&error);
    cr_assert_not(ssim_sweep_ints_parse(&l, "1,x", &error));
    cr_assert_str_eq(error->message, "'x' is not a positive integer");
    g_clear_error(&error);
    cr_assert_not(ssim_sweep_ints_parse(&l, "0", &error));
    cr_assert(ssim_sweep_ints_parse(&l, "4, 2,4,1", NULL));
    cr_assert_eq(l.n, 3);
    cr_assert_eq(l.v[0], 4);
    cr_assert_eq(l.v[2], 1);
    g_clear_error(&error);
    cr_assert_not(ssim_sweep_recompute_parse(&l, "auto,some", &error));
    cr_assert(ssim_sweep_recompute_parse(&l, "auto,full", NULL));
    g_autofree char *txt = ssim_sweep_recompute_format(&l);
    cr_assert_str_eq(txt, "auto,full");
}

/* One configuration, evaluated alone, and the status and reason it must get. */
typedef struct {
    char model[32];
    guint gpus, tp, pp, v, mb, gbs;
    char schedules[32];
    gboolean cross;
    SsimSweepStatus status;
    char reason[64];
} Case;

Test(sweep, every_rejection_reason)
{
    static const Case cases[] = {
        {"megatron-gpt-1.7b", 16, 16, 1, 1, 1, 16, "1f1b", TRUE, SSIM_SWEEP_ILLEGAL,
         "heads % tp != 0"},
        {"gpt-j-6b", 16, 16, 1, 1, 1, 16, "1f1b", FALSE, SSIM_SWEEP_ILLEGAL, "tp within a node"},
        {"gpt-j-6b", 8, 1, 8, 1, 1, 16, "1f1b", FALSE, SSIM_SWEEP_ILLEGAL, "layers % (pp*v) != 0"},
        {"gpt-j-6b", 8, 1, 1, 1, 1, 12, "1f1b", FALSE, SSIM_SWEEP_ILLEGAL,
         "global_batch % (dp*microbatch) != 0"},
        {"gpt-j-6b", 8, 8, 1, 2, 1, 16, "interleaved", FALSE, SSIM_SWEEP_ILLEGAL,
         "interleaved needs pp > 1"},
        {"gpt-j-6b", 8, 1, 2, 2, 1, 12, "interleaved", FALSE, SSIM_SWEEP_ILLEGAL,
         "interleaved needs m % pp == 0"},
        {"gpt-j-6b", 8, 4, 2, 2, 1, 16, "1f1b", FALSE, SSIM_SWEEP_ILLEGAL, "schedule"},
        {"gpt-j-6b", 8, 4, 2, 1, 1, 16, "nosuch", FALSE, SSIM_SWEEP_ILLEGAL, "schedule"},
        {"gpt-j-6b", 8, 4, 2, 1, 1, 16, "1f1b,interleaved", FALSE, SSIM_SWEEP_ILLEGAL, "duplicate"},
        {"gpt-j-6b", 8, 1, 1, 1, 1, 16, "1f1b", FALSE, SSIM_SWEEP_MEMORY, "does not fit in HBM"},
        {"gpt-j-6b", 8, 4, 2, 1, 1, 16, "1f1b", FALSE, SSIM_SWEEP_ILLEGAL, "placement"},
        {"gpt-j-6b", 8, 4, 2, 1, 1, 16, "1f1b", FALSE, SSIM_SWEEP_OK, ""},
    };
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        const Case *k = &cases[i];
        g_autoptr(SsimModel) m = test_model(k->model);
        SsimSweepSpec spec;
        ssim_sweep_spec_init(&spec, c, k->gpus);
        spec.base.global_batch = k->gbs;
        spec.base.allow_cross_node_tp = k->cross;
        spec.tp.n = spec.pp.n = spec.vstages.n = spec.microbatch.n = 1;
        spec.tp.v[0] = k->tp;
        spec.pp.v[0] = k->pp;
        spec.vstages.v[0] = k->v;
        spec.microbatch.v[0] = k->mb;
        test_sweep_names(&spec.schedules, k->schedules);
        if (strcmp(k->reason, "placement") == 0)
            test_sweep_names(&spec.placements, "nosuch");
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, &error);
        cr_assert_not_null(s, "case %zu: %s", i, error ? error->message : "");
        /* The last configuration: under "1f1b,interleaved" that is the interleaved one. */
        guint last = ssim_sweep_n_configs(s) - 1;
        SsimSweepRow row;
        ssim_sweep_eval(s, last, &row);
        cr_expect_eq(row.status, k->status, "case %zu: status %s (%s)", i,
                     ssim_sweep_status_name(row.status), row.detail);
        cr_expect_str_eq(row.reason, k->reason, "case %zu: reason '%s' (%s)", i, row.reason,
                         row.detail);
        if (row.status == SSIM_SWEEP_MEMORY) {
            cr_expect(row.has_memory);
            cr_expect_eq(row.par.recompute, SSIM_RECOMPUTE_FULL); /* auto tried all three */
            cr_expect(strstr(row.detail, "memory: stage 0 needs"));
        }
        if (row.status == SSIM_SWEEP_OK)
            cr_expect_gt(row.result.tokens_per_s, 0);
    }
}

/* The last progress report of a run (the end, on the calling thread). */
static void keep_last(const SsimSweepProgress *pr, gpointer user)
{
    *(SsimSweepProgress *)user = *pr;
}

/* The progress weighs each configuration by its estimated ops and takes the rejected ones out
 * of the total: at the end the work done is the ops of the simulated rows, and the total is
 * no larger (oracle: ssim_budget_estimate on each row that ran). */
Test(sweep, progress_weighs_simulated_work_only)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 8);
    test_sweep_ints(&spec.microbatch, "1");
    test_sweep_ints(&spec.vstages, "1,2");
    test_sweep_names(&spec.schedules, "1f1b");
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, NULL);
    SsimSweepProgress last = {0};
    guint n = ssim_sweep_run(s, 0, 1, 2, keep_last, &last, 100);
    cr_assert_eq(last.done, n);
    cr_assert_eq(last.total, n);
    double ran = 0;
    guint ok = 0;
    for (guint i = 0; i < n; i++) {
        const SsimSweepRow *r = ssim_sweep_row(s, i);
        if (r->status != SSIM_SWEEP_OK)
            continue;
        SsimOpEstimate est;
        ssim_budget_estimate(m, &r->par, FALSE, &est);
        ran += est.ops;
        ok++;
    }
    cr_assert(ok > 0 && ok < n, "some rows ran, some were rejected: %u of %u", ok, n);
    cr_assert_float_eq(last.work_done, ran, 1e-6 * ran);
    cr_assert_float_eq(last.work_total, ran, 1e-6 * ran, "the rejected rows left the total");
    cr_assert_geq(last.elapsed_s, 0);
}

Test(sweep, status_tally_hand_count)
{
    /* GPT-J (28 layers, 16 heads) on 8 H100s, global batch 32, tp and pp in {1,2,4,8}, v {1,2},
     * 1f1b only, two placements (neither with programs on 1f1b).  Per placement, of the 10 pairs:
     *   v = 1: pp 8 breaks layers % pp (1); tp 1 pp 1 needs ~90 GiB even with full recompute
     *          (memory, 1); the other 8 run;
     *   v = 2: pp 1 -> "interleaved needs pp > 1" (4 pairs), pp 4 and 8 -> layers % (pp v)
     *          (3 pairs), pp 2 -> 1f1b cannot take two chunks, "schedule" (3 pairs). */
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 8);
    test_sweep_ints(&spec.microbatch, "1");
    test_sweep_ints(&spec.vstages, "1,2");
    test_sweep_names(&spec.schedules, "1f1b");
    test_sweep_names(&spec.placements, "xla,commshift");
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, NULL);
    cr_assert_eq(ssim_sweep_n_configs(s), 40);
    cr_assert_eq(ssim_sweep_run(s, 0, 1, 2, NULL, NULL, 100), 40);
    guint ok = 0, mem = 0, layers = 0, pp1 = 0, sched = 0;
    for (guint i = 0; i < 40; i++) {
        const SsimSweepRow *r = ssim_sweep_row(s, i);
        ok += r->status == SSIM_SWEEP_OK;
        mem += r->status == SSIM_SWEEP_MEMORY;
        layers += strcmp(r->reason, "layers % (pp*v) != 0") == 0;
        pp1 += strcmp(r->reason, "interleaved needs pp > 1") == 0;
        sched += strcmp(r->reason, "schedule") == 0;
    }
    cr_expect_eq(ok, 16);
    cr_expect_eq(mem, 2);
    cr_expect_eq(layers, 8);
    cr_expect_eq(pp1, 8);
    cr_expect_eq(sched, 6);
    /* The ranking is by tokens/s, ties broken by the lower index. */
    g_autoptr(GArray) rank = ssim_sweep_ranking(s);
    cr_assert_eq(rank->len, 16);
    for (guint i = 1; i < rank->len; i++) {
        const SsimSweepRow *a = ssim_sweep_row(s, g_array_index(rank, guint, i - 1));
        const SsimSweepRow *b = ssim_sweep_row(s, g_array_index(rank, guint, i));
        cr_assert(a->result.tokens_per_s > b->result.tokens_per_s ||
                  (a->result.tokens_per_s == b->result.tokens_per_s && a->index < b->index));
    }
    g_autoptr(GString) sum = ssim_sweep_summary(s, 3);
    cr_expect(strstr(sum->str, "40 configurations of gpt-j-6b on 8 GPUs (40 evaluated); 16 "
                               "simulated and ranked; 6 tp x pp pairs"));
}

/* ---- the verbs, end to end, on files ------------------------------------------------------ */

static char *tmpdir;

static void setup(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
    tmpdir = g_dir_make_tmp("ssim-sweep-XXXXXX", NULL);
    cr_assert_not_null(tmpdir);
}

static void teardown(void)
{
    GDir *d = g_dir_open(tmpdir, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(tmpdir, n, NULL);
        g_unlink(p);
    }
    if (d)
        g_dir_close(d);
    g_rmdir(tmpdir);
    g_free(tmpdir);
}

static char *tmp(const char *name)
{
    return g_build_filename(tmpdir, name, NULL);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    return text;
}

/* `shiftsim sweep` on GPT-J, 16 H100s, a small list set, plus `extra` options. */
static int sweep_verb(const char *out, const char *const *extra, int n_extra)
{
    const char *base[] = {"sweep",    "--model",
                          "gpt-j-6b", "--cluster",
                          "dgx-h100", "--gpus",
                          "16",       "--tp",
                          "2,4,8",    "--pp",
                          "1,2,4",    "-v",
                          "1,2",      "-b",
                          "1",        "--quiet",
                          "-k",       "3",
                          "-o",       out,
                          "-s",       "1f1b,interleaved"};
    GPtrArray *argv = g_ptr_array_new();
    for (gsize i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(argv, (gpointer)base[i]);
    for (int i = 0; i < n_extra; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, NULL);
    int rc = ssim_verb_sweep((int)argv->len - 1, (char **)argv->pdata);
    g_ptr_array_free(argv, TRUE);
    fflush(stdout);
    return rc;
}

static int merge_verb(const char *out, const char *const *in, int n_in, gboolean partial)
{
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "merge");
    g_ptr_array_add(argv, (gpointer) "-o");
    g_ptr_array_add(argv, (gpointer)out);
    if (partial)
        g_ptr_array_add(argv, (gpointer) "--partial");
    for (int i = 0; i < n_in; i++)
        g_ptr_array_add(argv, (gpointer)in[i]);
    g_ptr_array_add(argv, NULL);
    int rc = ssim_verb_merge((int)argv->len - 1, (char **)argv->pdata);
    g_ptr_array_free(argv, TRUE);
    fflush(stderr);
    return rc;
}

Test(sweep, threads_do_not_change_bytes, .init = setup, .fini = teardown)
{
    g_autofree char *a = tmp("j1.csv"), *b = tmp("j2.csv");
    const char *j1[] = {"-j", "1"}, *j2[] = {"-j", "2"};
    cr_assert_eq(sweep_verb(a, j1, 2), 0);
    cr_assert_eq(sweep_verb(b, j2, 2), 0);
    g_autofree char *x = slurp(a), *y = slurp(b);
    cr_assert_str_eq(x, y);
    cr_assert(g_str_has_prefix(x, "# shiftsim-sweep v1\n# model=gpt-j-6b cluster=dgx-h100 "
                                  "gpus=16 configurations=32 "));
    /* 8 pairs (tp 8 pp 4 is 32 GPUs) x v {1,2} x {1f1b, interleaved}; metadata, header and one line
     * each. */
    guint lines = 0;
    for (const char *p = x; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 3 + 32);
    cr_assert(strstr(x, "\n0,8,2,1,1,1,64,8,1f1b,megatron,"), "schedules alone: their framework");
}

Test(sweep, shards_merge_to_the_whole, .init = setup, .fini = teardown)
{
    g_autofree char *whole = tmp("whole.csv"), *merged = tmp("merged.csv");
    g_autofree char *p0 = tmp("p0.csv"), *p1 = tmp("p1.csv"), *p2 = tmp("p2.csv");
    cr_assert_eq(sweep_verb(whole, NULL, 0), 0);
    const char *s0[] = {"--shard", "0/3", "-j", "2"}, *s1[] = {"--shard", "1/3"},
               *s2[] = {"--shard", "2/3"};
    cr_assert_eq(sweep_verb(p0, s0, 4), 0);
    cr_assert_eq(sweep_verb(p1, s1, 2), 0);
    cr_assert_eq(sweep_verb(p2, s2, 2), 0);
    const char *in[] = {p2, p0, p1};
    cr_assert_eq(merge_verb(merged, in, 3, FALSE), 0);
    g_autofree char *w = slurp(whole), *m = slurp(merged);
    cr_assert_str_eq(m, w);
    /* A shard holds configurations k = 1 (mod 3) only. */
    g_autofree char *t1 = slurp(p1);
    cr_assert(strstr(t1, "\n1,") && strstr(t1, "\n4,") && !strstr(t1, "\n0,") &&
              !strstr(t1, "\n2,"));
    /* Two of three shards: a gap, unless --partial. */
    const char *two[] = {p0, p1};
    g_autofree char *part = tmp("part.csv");
    cr_assert_eq(merge_verb(part, two, 2, FALSE), 1);
    cr_assert_eq(merge_verb(part, two, 2, TRUE), 0);
    /* The same shard twice: overlap. */
    const char *dup[] = {p0, p1, p2, p1};
    cr_assert_eq(merge_verb(part, dup, 4, FALSE), 1);
}

Test(sweep, merge_rejects_other_sweeps, .init = setup, .fini = teardown)
{
    g_autofree char *a = tmp("a.csv"), *b = tmp("b.csv"), *out = tmp("out.csv");
    const char *sa[] = {"--shard", "0/2"}, *sb[] = {"--shard", "1/2", "--global-batch", "32"};
    cr_assert_eq(sweep_verb(a, sa, 2), 0);
    cr_assert_eq(sweep_verb(b, sb, 4), 0);
    g_autoptr(GError) error = NULL;
    const char *in[] = {a, b};
    g_autoptr(GString) m = ssim_sweep_merge(in, 2, TRUE, &error);
    cr_assert_null(m);
    cr_assert(strstr(error->message, "differ"), "%s", error->message);
    /* A column renamed in the header line. */
    g_autofree char *text = slurp(b);
    char *col = strstr(text, ",tokens_per_s,");
    cr_assert_not_null(col);
    memcpy(col + 1, "TOKENS", 6);
    g_autofree char *c = tmp("c.csv");
    cr_assert(g_file_set_contents(c, text, -1, NULL));
    const char *in2[] = {a, c};
    g_clear_error(&error);
    cr_assert_null(ssim_sweep_merge(in2, 2, TRUE, &error));
    cr_assert(strstr(error->message, "not a shiftsim sweep CSV"), "%s", error->message);
    const char *in3[] = {a, out};
    g_clear_error(&error);
    cr_assert_null(ssim_sweep_merge(in3, 2, TRUE, &error)); /* missing file */
}

Test(sweep, plots_written_as_text, .init = setup, .fini = teardown)
{
    g_autofree char *csv = tmp("p.csv"), *prefix = tmp("s");
    const char *extra[] = {"--placements", "alpa,commshift", "-s", "native", "--plot", prefix};
    cr_assert_eq(sweep_verb(csv, extra, 6), 0);
    g_autofree char *td = g_strdup_printf("%s-throughput.dat", prefix);
    g_autofree char *tg = g_strdup_printf("%s-throughput.gp", prefix);
    g_autofree char *hd = g_strdup_printf("%s-heatmap.dat", prefix);
    g_autofree char *hg = g_strdup_printf("%s-heatmap.gp", prefix);
    g_autofree char *a = slurp(td), *b = slurp(tg), *c = slurp(hd), *d = slurp(hg);
    cr_assert(g_str_has_prefix(a, "# split alpa commshift"));
    cr_assert(strstr(a, "\n\"dp4 tp2 pp2\" "));
    cr_assert(strstr(b, "using 2:xtic(1) title 'alpa'") && strstr(b, "title 'commshift'"));
    cr_assert(strstr(c, "# placement alpa\n") && strstr(c, "# placement commshift\n"));
    cr_assert(strstr(d, "set multiplot layout 2,1") && strstr(d, "with image"));
    cr_assert(strstr(d, "set xtics ('2' 0, '4' 1, '8' 2)"));
}

Test(sweep, usage_errors, .init = setup, .fini = teardown)
{
    g_autofree char *out = tmp("x.csv");
    const char *bad_shard[] = {"--shard", "3/3"};
    cr_assert_eq(sweep_verb(out, bad_shard, 2), 2);
    const char *bad_list[] = {"--tp", "2,zero"};
    cr_assert_eq(sweep_verb(out, bad_list, 2), 2);
    const char *bad_gpus[] = {"--gpus", "12"};
    cr_assert_eq(sweep_verb(out, bad_gpus, 2), 1);
    const char *none[] = {NULL};
    cr_assert_eq(merge_verb(out, none, 0, FALSE), 2);
}
