/*
 * The profiled cost model and its use in a simulation.  Oracles: vTrain's measured A100
 * all-reduce table itself (a measured size must cost exactly the row's time, read here from the
 * rows, not from the lookup), the neighbouring rows for an interpolated size, the analytical
 * closed form for a collective the table lacks, the op count of a lowered graph for the explain
 * counters (a conservation law), and the analytic-only simulation for an empty profile (the
 * fallback must change nothing).  The verb is driven through ssim_cli_main().
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"
#include "src/app/cli.h"
#include <shiftsim/profiled.h>
#include <shiftsim/sim.h>

#include <stdio.h>
#include <math.h>
#include <string.h>

#define VTRAIN_AR  SHIFTSIM_SOURCE_ROOT "/traces/vtrain-a100/allreduce.csv"
#define VTRAIN_DIR SHIFTSIM_SOURCE_ROOT "/traces/vtrain-a100"
#define DGX_A100   SHIFTSIM_SOURCE_ROOT "/models/clusters/dgx-a100.ini"
#define MIB        1048576ull

/* The measured mean of the vTrain row (allreduce, `ranks` on one node, `bytes`), or -1. */
static double table_us(const SsimProfile *p, guint ranks, guint64 bytes)
{
    for (guint i = 0; i < ssim_profile_n_rows(p); i++) {
        const SsimProfileRow *r = ssim_profile_row(p, i);
        if (r->kind == SSIM_PROFILE_COMM && strcmp(r->op, "allreduce") == 0 && r->ranks == ranks &&
            r->ranks_per_node == ranks && r->bytes == bytes)
            return r->time_us;
    }
    return -1;
}

/* A graph of 8 ranks, one per GPU of a node, running `n` collectives of `kind` on `bytes` over
 * all of them, one after another. */
static SsimGraph *collectives(SsimCollKind kind, guint64 bytes, guint n)
{
    SsimGraph *g = ssim_graph_new();
    guint32 ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    guint32 group = ssim_graph_add_group(g, "world", ranks, 8, NULL);
    for (guint i = 0; i < n; i++)
        for (guint32 r = 0; r < 8; r++) {
            SsimOpSpec s = SSIM_OP_SPEC_INIT;
            s.kind = SSIM_OP_COLLECTIVE;
            s.coll = kind;
            s.stream = ssim_graph_stream(g, r, "comm");
            s.group = group;
            s.bytes = bytes;
            s.cls = "tp";
            ssim_graph_add_op(g, &s, NULL, 0);
        }
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    return g;
}

typedef struct {
    SsimProfile *profile;
    SsimCluster *cluster;
    SsimAnalyticParams params;
    SsimAnalytic *analytic;
    SsimProfiled *model;
} Fixture;

static Fixture fixture(void)
{
    Fixture f = {0};
    GError *error = NULL;
    f.profile = ssim_profile_load(VTRAIN_AR, &error);
    cr_assert_not_null(f.profile, "%s", error ? error->message : "");
    f.cluster = ssim_cluster_load(DGX_A100, &error);
    cr_assert_not_null(f.cluster, "%s", error ? error->message : "");
    ssim_analytic_params_from_cluster(&f.params, f.cluster, SSIM_DTYPE_BF16);
    f.analytic = ssim_analytic_new(&f.params);
    f.model = ssim_profiled_new(f.profile, f.analytic, SSIM_DTYPE_BF16);
    return f;
}

static void fixture_clear(Fixture *f)
{
    ssim_profiled_free(f->model);
    ssim_analytic_free(f->analytic);
    ssim_cluster_free(f->cluster);
    ssim_profile_free(f->profile);
}

static SsimCostEstimate estimate(Fixture *f, SsimCollKind kind, guint64 bytes)
{
    g_autoptr(SsimGraph) g = collectives(kind, bytes, 1);
    SsimCostEstimate e;
    cr_assert_eq(ssim_profiled_estimate(f->model, g, 0, &e), SSIM_PROFILE_COMM);
    return e;
}

Test(profiled, measured_allreduce_costs_the_table_time)
{
    Fixture f = fixture();
    const guint64 sizes[] = {1 * MIB, 24 * MIB, 100 * MIB, 1024 * MIB};
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        double want = table_us(f.profile, 8, sizes[i]);
        cr_assert_gt(want, 0);
        /* Through the runtime: the makespan of one all-reduce is its cost. */
        g_autoptr(SsimGraph) g = collectives(SSIM_COLL_ALLREDUCE, sizes[i], 1);
        SsimCostModel cm = ssim_profiled_cost_model(f.model);
        g_autoptr(SsimTimeline) tl = ssim_runtime_run(g, &cm, NULL, NULL);
        cr_assert_not_null(tl);
        cr_assert_eq(tl->makespan, ssim_time_from_seconds(want * 1e-6),
                     "%" G_GUINT64_FORMAT " B: %" G_GINT64_FORMAT " ns, table %.3f us", sizes[i],
                     tl->makespan, want);
    }
    /* Each all-reduce counted once per member, all exact, as comm and as tp. */
    const SsimCostExplain *e = ssim_profiled_explain(f.model);
    cr_assert_eq(e->count[SSIM_PROFILE_COMM][SSIM_COST_EXACT], 8 * G_N_ELEMENTS(sizes));
    cr_assert_eq(ssim_cost_explain_total(e, SSIM_COST_EXACT), 8 * G_N_ELEMENTS(sizes));
    const SsimClassExplain *c = ssim_profiled_class_explain(f.model);
    cr_assert_eq(c->count[SSIM_OPCLASS_TP][SSIM_COST_EXACT], 8 * G_N_ELEMENTS(sizes));
    fixture_clear(&f);
}

Test(profiled, unmeasured_size_is_interpolated_between_its_neighbours)
{
    Fixture f = fixture();
    SsimCostEstimate e = estimate(&f, SSIM_COLL_ALLREDUCE, 24 * MIB + MIB / 2);
    cr_assert_eq(e.source, SSIM_COST_INTERPOLATED);
    double lo = table_us(f.profile, 8, 24 * MIB), hi = table_us(f.profile, 8, 25 * MIB);
    cr_assert(e.time_us > MIN(lo, hi) && e.time_us < MAX(lo, hi), "%.3f not in (%.3f, %.3f)",
              e.time_us, lo, hi);
    fixture_clear(&f);
}

Test(profiled, beyond_the_range_is_extrapolated)
{
    Fixture f = fixture();
    SsimCostEstimate big = estimate(&f, SSIM_COLL_ALLREDUCE, 4096 * MIB);
    cr_assert_eq(big.source, SSIM_COST_EXTRAPOLATED);
    /* At worst constant bandwidth above the largest measured size: four times the bytes cost at
     * most four times the time, and more than the largest measured time. */
    double top = table_us(f.profile, 8, 1024 * MIB);
    cr_assert(big.time_us > top && big.time_us <= 4 * top * (1 + 1e-9), "%.3f vs %.3f", big.time_us,
              top);
    SsimCostEstimate small = estimate(&f, SSIM_COLL_ALLREDUCE, 4096);
    cr_assert_eq(small.source, SSIM_COST_EXTRAPOLATED);
    cr_assert_leq(small.time_us, table_us(f.profile, 8, 1 * MIB) * (1 + 1e-9));
    fixture_clear(&f);
}

Test(profiled, missing_collective_falls_back_to_the_analytic_model)
{
    Fixture f = fixture();
    SsimCostEstimate e = estimate(&f, SSIM_COLL_ALLGATHER, 64 * MIB);
    cr_assert_eq(e.source, SSIM_COST_ANALYTICAL);
    cr_assert_eq(e.time,
                 ssim_analytic_collective_time(&f.params, SSIM_COLL_ALLGATHER, 64 * MIB, 8, 1, 8));
    fixture_clear(&f);
}

Test(profiled, repeated_shapes_cost_one_lookup)
{
    Fixture f = fixture();
    g_autoptr(SsimGraph) g = collectives(SSIM_COLL_ALLREDUCE, 3 * MIB, 50);
    SsimCostModel cm = ssim_profiled_cost_model(f.model);
    g_autoptr(SsimTimeline) tl = ssim_runtime_run(g, &cm, NULL, NULL);
    cr_assert_not_null(tl);
    cr_assert_eq(ssim_profiled_n_lookups(f.model), 1);
    cr_assert_eq(tl->makespan, 50 * ssim_time_from_seconds(table_us(f.profile, 8, 3 * MIB) * 1e-6));
    cr_assert_eq(ssim_profiled_explain(f.model)->count[SSIM_PROFILE_COMM][SSIM_COST_EXACT], 400);
    fixture_clear(&f);
}

/* A small GPT (the embedded GPT-J shape, 2 layers) on one DGX A100 node, tp 4 x pp 2. */
static gboolean simulate_small(const SsimProfile *profile, SsimResult *r, SsimCostExplain *e,
                               SsimClassExplain *c, SsimLowered **lowered)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 2;
    GError *error = NULL;
    g_autoptr(SsimCluster) cluster = ssim_cluster_load(DGX_A100, &error);
    cr_assert_not_null(cluster, "%s", error ? error->message : "");
    ssim_cluster_set_nodes(cluster, 1);
    SsimParallel par;
    ssim_parallel_init(&par);
    par.dp = 1, par.tp = 4, par.pp = 2, par.microbatch = 1, par.global_batch = 8;
    SsimSimConfig config = {.model = model,
                            .cluster = cluster,
                            .par = &par,
                            .ignore_memory = TRUE,
                            .profile = profile,
                            .explain = e,
                            .class_explain = c};
    gboolean ok = ssim_simulate(&config, r, lowered, NULL, &error);
    cr_assert(ok, "%s", error ? error->message : "");
    return ok;
}

Test(profiled, explain_counts_every_op_of_a_lowered_gpt)
{
    g_autoptr(SsimProfile) profile = ssim_profile_load(VTRAIN_DIR, NULL);
    cr_assert_not_null(profile);
    SsimResult r;
    SsimCostExplain e;
    SsimClassExplain c;
    ssim_cost_explain_init(&e);
    ssim_class_explain_init(&c);
    g_autoptr(SsimLowered) lowered = NULL;
    simulate_small(profile, &r, &e, &c, &lowered);
    /* Every op but the host's work per microbatch phase (a fixed time, the cluster's
     * microbatch_floor_us; counted by --explain-costs under the step costs' "host"). */
    guint32 n_ops = ssim_graph_n_ops(ssim_lowered_graph(lowered)) -
                    (guint32)r.step_cost_ops[SSIM_STEP_COST_HOST];
    guint64 by_kind = 0;
    for (guint s = 0; s < SSIM_COST_N; s++)
        by_kind += ssim_cost_explain_total(&e, s);
    cr_assert_eq(by_kind, n_ops);
    cr_assert_eq(ssim_class_explain_n_ops(&c), n_ops);
    /* Per class, the counts are the ops the lowering gave that class. */
    guint64 per_class[SSIM_OPCLASS_N] = {0};
    const SsimGraph *g = ssim_lowered_graph(lowered);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        if (ssim_graph_op(g, i)->duration < 0) /* priced by the cost model: not a host op */
            per_class[ssim_lowered_op_class(lowered, i)]++;
    for (guint k = 0; k < SSIM_OPCLASS_N; k++) {
        guint64 got = 0;
        for (guint s = 0; s < SSIM_COST_N; s++)
            got += c.count[k][s];
        cr_assert_eq(got, per_class[k], "class %s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT,
                     ssim_opclass_name(k), got, per_class[k]);
    }
    /* The 4-GPU TP all-reduces come from the table; GEMMs (none measured) from the roofline. */
    cr_assert_gt(c.count[SSIM_OPCLASS_TP][SSIM_COST_EXACT] +
                     c.count[SSIM_OPCLASS_TP][SSIM_COST_INTERPOLATED] +
                     c.count[SSIM_OPCLASS_TP][SSIM_COST_EXTRAPOLATED],
                 0);
    cr_assert_eq(e.count[SSIM_PROFILE_GEMM][SSIM_COST_EXACT], 0);
    cr_assert_gt(e.count[SSIM_PROFILE_GEMM][SSIM_COST_ANALYTICAL], 0);
}

/* GPT-J (2 layers) with flash attention on one H200 node, under the caller's split. */
typedef struct {
    SsimModel *model;
    SsimCluster *cluster;
    SsimParallel par;
} FlashJob;

static void flash_job_init(FlashJob *j, guint dp, guint tp, guint pp, guint global_batch)
{
    j->model = ssim_model_default();
    j->model->layers = 2;
    j->cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(j->cluster, 1);
    ssim_parallel_init(&j->par);
    j->par.dp = dp, j->par.tp = tp, j->par.pp = pp, j->par.global_batch = global_batch;
    j->par.attention = SSIM_ATTENTION_FLASH;
}

static void flash_job_clear(FlashJob *j)
{
    ssim_model_free(j->model);
    ssim_cluster_free(j->cluster);
}

/* Simulates the job priced by `profile` (NULL: the analytical model), explaining into `e` (may
 * be NULL); the lowering and the timeline come back. */
static void flash_job_run(FlashJob *j, const SsimProfile *profile, SsimCostExplain *e,
                          SsimLowered **lowered, SsimTimeline **tl)
{
    if (e)
        ssim_cost_explain_init(e);
    SsimSimConfig config = {.model = j->model,
                            .cluster = j->cluster,
                            .par = &j->par,
                            .ignore_memory = TRUE,
                            .profile = profile,
                            .explain = e};
    SsimResult r;
    GError *error = NULL;
    cr_assert(ssim_simulate(&config, &r, lowered, tl, &error), "%s", error ? error->message : "");
}

static const char *op_name(const SsimGraph *g, guint32 i)
{
    const SsimOp *op = ssim_graph_op(g, i);
    return op->name == SSIM_NONE ? "" : ssim_graph_string(g, op->name);
}

/*
 * A profile times attention's unfused kernels, not flash attention's: under --attention flash the
 * fused kernels are the analytical model's (explained as attention, analytical), to the
 * nanosecond the time they take without the profile, while the GEMMs around them still come from
 * the profile.  GPT-J (2 layers) on one H200 node, tp 4 x pp 2, the bundled H200 profile.
 */
Test(profiled, flash_attention_is_priced_by_the_analytic_model)
{
    GError *error = NULL;
    g_autoptr(SsimProfile) profile =
        ssim_profile_load(SHIFTSIM_SOURCE_ROOT "/traces/h200/gpt-j-6b.csv", &error);
    cr_assert_not_null(profile, "%s", error ? error->message : "");
    FlashJob j;
    flash_job_init(&j, 1, 4, 2, 8);
    SsimCostExplain e;
    g_autoptr(SsimLowered) lowered = NULL, plain = NULL;
    g_autoptr(SsimTimeline) tl = NULL, tla = NULL;
    flash_job_run(&j, profile, &e, &lowered, &tl);
    flash_job_run(&j, NULL, NULL, &plain, &tla);
    const SsimGraph *g = ssim_lowered_graph(lowered);
    cr_assert_eq(ssim_graph_n_ops(g), ssim_graph_n_ops(ssim_lowered_graph(plain)));
    guint64 flash = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        if (strncmp(op_name(g, i), SSIM_FLASH_KERNEL, sizeof SSIM_FLASH_KERNEL - 1) != 0)
            continue;
        flash++;
        cr_assert_eq(tl->end[i] - tl->start[i], tla->end[i] - tla->start[i], "op %u", i);
    }
    /* 2 layers x 8 microbatches, a forward and a backward each (no recompute asked). */
    cr_assert_eq(flash, 32);
    cr_assert_eq(e.count[SSIM_PROFILE_ATTENTION][SSIM_COST_ANALYTICAL], flash);
    cr_assert_eq(ssim_cost_explain_total(&e, SSIM_COST_ANALYTICAL) -
                     e.count[SSIM_PROFILE_ATTENTION][SSIM_COST_ANALYTICAL],
                 e.count[SSIM_PROFILE_GEMM][SSIM_COST_ANALYTICAL] +
                     e.count[SSIM_PROFILE_MEMORY][SSIM_COST_ANALYTICAL] +
                     e.count[SSIM_PROFILE_COMM][SSIM_COST_ANALYTICAL] +
                     e.count[SSIM_PROFILE_COPY][SSIM_COST_ANALYTICAL]);
    cr_assert_gt(e.count[SSIM_PROFILE_GEMM][SSIM_COST_EXACT], 0, "the GEMMs are measured");
    flash_job_clear(&j);
}

/* A profile with measured flash kernels (the H200's cuDNN SDPA, imported from the bundled Kineto
 * trace: flash-fwd 92.0315 us, flash-bwd 315.967 us for 16 heads of 256 over 2048 tokens) prices
 * GPT-J's flash kernels at exactly those times, explained as attention, exact. */
Test(profiled, flash_attention_from_measured_rows)
{
    GError *error = NULL;
    g_autoptr(SsimProfile) profile = ssim_profile_load(
        SHIFTSIM_SOURCE_ROOT "/traces/h200/reference/kineto-gpt-j-layer.csv", &error);
    cr_assert_not_null(profile, "%s", error ? error->message : "");
    FlashJob j;
    flash_job_init(&j, 8, 1, 1, 16);
    SsimCostExplain e;
    g_autoptr(SsimLowered) lowered = NULL;
    g_autoptr(SsimTimeline) tl = NULL;
    flash_job_run(&j, profile, &e, &lowered, &tl);
    const SsimGraph *g = ssim_lowered_graph(lowered);
    guint fwd = 0, bwd = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        SsimTime d = tl->end[i] - tl->start[i];
        if (strcmp(op_name(g, i), SSIM_FLASH_KERNEL) == 0) {
            fwd++;
            cr_assert(llabs((long long)d - 92032) <= 1, "forward %lld ns", (long long)d);
        } else if (strcmp(op_name(g, i), SSIM_FLASH_KERNEL ".bwd") == 0) {
            bwd++;
            cr_assert(llabs((long long)d - 315967) <= 1, "backward %lld ns", (long long)d);
        }
    }
    /* 2 layers x 2 microbatches on the representative rank. */
    cr_assert_eq(fwd, 4);
    cr_assert_eq(bwd, 4);
    cr_assert_eq(e.count[SSIM_PROFILE_ATTENTION][SSIM_COST_EXACT], fwd + bwd);
    flash_job_clear(&j);
}

/* The first forward flash kernel's duration in the job priced by `profile` (NULL: analytic). */
static SsimTime first_flash(FlashJob *j, const SsimProfile *profile, const char *name)
{
    g_autoptr(SsimLowered) lowered = NULL;
    g_autoptr(SsimTimeline) tl = NULL;
    flash_job_run(j, profile, NULL, &lowered, &tl);
    const SsimGraph *g = ssim_lowered_graph(lowered);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        if (strcmp(op_name(g, i), name) == 0)
            return tl->end[i] - tl->start[i];
    cr_assert_fail("no %s", name);
    return 0;
}

/* The measured kernels are causal: a model with a sliding window carries their times to its
 * windowed layers by the analytical model's ratio of the windowed kernel to the causal one. */
Test(profiled, flash_attention_rows_carried_to_a_sliding_window)
{
    GError *error = NULL;
    g_autoptr(SsimProfile) profile = ssim_profile_load(
        SHIFTSIM_SOURCE_ROOT "/traces/h200/reference/kineto-gpt-j-layer.csv", &error);
    cr_assert_not_null(profile, "%s", error ? error->message : "");
    const char *names[2] = {SSIM_FLASH_KERNEL, SSIM_FLASH_KERNEL ".bwd"};
    const SsimTime measured[2] = {92032, 315967};
    for (guint pass = 0; pass < 2; pass++) {
        FlashJob j;
        flash_job_init(&j, 8, 1, 1, 16);
        SsimTime causal = first_flash(&j, NULL, names[pass]);
        j.model->sliding_window = 512; /* of GPT-J's 2048 tokens, both layers */
        j.model->sliding_window_layers = 2;
        SsimTime windowed = first_flash(&j, NULL, names[pass]);
        SsimTime carried = first_flash(&j, profile, names[pass]);
        cr_assert_lt(windowed, causal);
        double want = (double)measured[pass] * (double)windowed / (double)causal;
        cr_assert(fabs((double)carried - want) <= 2, "%s: %lld ns, want %.0f", names[pass],
                  (long long)carried, want);
        /* A window as long as the sequence is the causal kernel: the measured time itself. */
        j.model->sliding_window = 2048;
        cr_assert(llabs((long long)first_flash(&j, profile, names[pass]) - measured[pass]) <= 1);
        flash_job_clear(&j);
    }
}

Test(profiled, empty_profile_gives_the_analytic_figures)
{
    g_autoptr(SsimProfile) empty = ssim_profile_new();
    SsimResult a, b;
    SsimCostExplain e;
    ssim_cost_explain_init(&e);
    simulate_small(NULL, &a, NULL, NULL, NULL);
    simulate_small(empty, &b, &e, NULL, NULL);
    cr_assert_eq(a.step_time, b.step_time);
    cr_assert_eq(ssim_cost_explain_total(&e, SSIM_COST_ANALYTICAL),
                 b.n_ops - b.step_cost_ops[SSIM_STEP_COST_HOST]);
}

/* ---- The verb ---------------------------------------------------------------------------- */

static void redirect_both(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

static int run(int argc, const char **argv)
{
    int rc = ssim_cli_main(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

Test(profiled, simulate_verb_explains_costs, .init = redirect_both)
{
    const char *argv[] = {
        "shiftsim", "simulate", "--profile", VTRAIN_DIR, "--cluster", DGX_A100,         "--nodes",
        "1",        "--tp",     "4",         "--pp",     "2",         "--explain-costs"};
    cr_assert_eq(run(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "step time") != NULL, "%s", out);
    cr_assert(strstr(out, "cost sources (" VTRAIN_DIR ")") != NULL, "%s", out);
    cr_assert(strstr(out, "exact  interpolated  extrapolated        scaled    analytical      "
                          "total") != NULL,
              "%s", out);
    cr_assert(strstr(out, "\ntp ") != NULL && strstr(out, "\ncomm ") != NULL, "%s", out);
}

Test(profiled, simulate_verb_broken_profile_is_a_runtime_error, .init = redirect_both)
{
    const char *argv[] = {"shiftsim", "simulate", "--profile",
                          SSIM_TEST_DATA "/profiles/negative.csv", "--explain-costs"};
    cr_assert_eq(run(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "negative.csv:4:44: time_us: '-612.4' is negative") != NULL, "%s", err);
    const char *missing[] = {"shiftsim", "simulate", "--profile", "/nonexistent/profile.csv"};
    cr_assert_eq(run(G_N_ELEMENTS(missing), missing), 1);
}
