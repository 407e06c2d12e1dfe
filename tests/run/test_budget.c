/*
 * The op budget (include/shiftsim/budget.h): the estimate must bound real lowerings from above,
 * and not by so much that reasonable configurations are refused (within 8x here), over
 * schedules, recompute modes, TP styles and both rank modes; ssim_budget_check() refuses past the
 * limit with the estimate's factors in the message.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <shiftsim/alloc.h>
#include <shiftsim/budget.h>
#include <shiftsim/sim.h>
#include <shiftsim/lower.h>
#include <shiftsim/schedule.h>

#include <malloc.h>
#include <string.h>

/* `most`: the layer with the most kernels, a sequential block (two TP collectives each way) with
 * both dropouts (their backward kernels) and rotary positions. */
static void check_bound_model(const char *spec, gboolean exact, gboolean most)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 8;
    if (most) {
        model->block = SSIM_BLOCK_SEQUENTIAL;
        model->hidden_dropout = model->attention_dropout = TRUE;
        model->position = SSIM_POSITION_ROTARY;
    }
    SsimParallel par;
    ssim_parallel_init(&par);
    GError *error = NULL;
    cr_assert(ssim_parallel_parse(&par, spec, &error), "%s: %s", spec, error ? error->message : "");
    SsimScheduleKind kind;
    cr_assert(ssim_schedule_kind_from_name(par.schedule, &kind));
    g_autoptr(SsimSchedule) sched = ssim_schedule_new(kind, par.pp, par.virtual_stages,
                                                      ssim_parallel_n_microbatches(&par), &error);
    cr_assert_not_null(sched, "%s: %s", spec, error ? error->message : "");
    SsimLowerOptions opts = SSIM_LOWER_OPTIONS_INIT;
    opts.exact = exact;
    g_autoptr(SsimLowered) l = ssim_lower(model, &par, sched, &opts, &error);
    cr_assert_not_null(l, "%s: %s", spec, error ? error->message : "");
    double real = ssim_graph_n_ops(ssim_lowered_graph(l));
    SsimOpEstimate est;
    ssim_budget_estimate(model, &par, exact, &est);
    cr_assert(est.ops >= real && est.ops <= 8 * real, "%s%s: estimate %.0f, lowering %.0f ops",
              spec, exact ? " (exact)" : "", est.ops, real);
}

static void check_bound(const char *spec, gboolean exact)
{
    check_bound_model(spec, exact, FALSE);
}

Test(budget, estimate_bounds_the_lowering)
{
    const char *specs[] = {
        "dp=1,tp=1,pp=1,mb=1,gbs=4",
        "dp=2,tp=2,pp=2,mb=1,gbs=16",
        "dp=1,tp=4,pp=4,mb=2,gbs=32,recompute=full",
        "dp=1,tp=2,pp=2,mb=1,gbs=8,schedule=gpipe,recompute=selective",
        "dp=2,tp=2,pp=2,mb=1,gbs=16,schedule=interleaved,v=2,tp_comm=rs-ag,sp=on",
        "dp=4,tp=1,pp=1,mb=1,gbs=4,zero=1,bucket=1MB",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
        check_bound(specs[i], FALSE);
        check_bound(specs[i], TRUE);
    }
    /* The most kernels a layer has, over many microbatches (where the per-layer term is all):
     * that model under sequence parallelism, a full recompute and the gradients accumulated
     * unfused, with Megatron-LM's own layers (bias kernels, unfused attention, the context's
     * permute) or with FP8's casts. */
    const char *most[] = {"dp=2,tp=2,pp=2,mb=1,gbs=256,recompute=full,tp_comm=rs-ag,sp=on,"
                          "transformer_impl=local,step_costs=+grad_accum",
                          "dp=2,tp=2,pp=2,mb=1,gbs=256,recompute=full,tp_comm=rs-ag,sp=on,"
                          "fp8=hybrid,step_costs=+grad_accum"};
    for (gsize i = 0; i < G_N_ELEMENTS(most); i++) {
        check_bound_model(most[i], FALSE, TRUE);
        check_bound_model(most[i], TRUE, TRUE);
    }
}

Test(budget, check_refuses_past_the_limit)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert(ssim_parallel_parse(&par, "dp=1,tp=1,pp=1,mb=1,gbs=100", NULL));
    SsimOpEstimate est;
    ssim_budget_estimate(model, &par, FALSE, &est);
    cr_assert_eq(est.microbatches, 100);
    cr_assert_eq(est.ranks, 1);
    cr_assert(ssim_budget_check(model, &par, FALSE, 0, NULL));
    cr_assert(ssim_budget_check(model, &par, FALSE, (guint64)est.ops, NULL));
    GError *error = NULL;
    cr_assert_not(ssim_budget_check(model, &par, FALSE, (guint64)est.ops - 1, &error));
    cr_assert(strstr(error->message, "x 100 microbatches") != NULL, "%s", error->message);
    g_clear_error(&error);
    par.global_batch = 2000000;
    cr_assert_not(ssim_budget_check(model, &par, FALSE, G_MAXUINT64, &error));
    cr_assert(strstr(error->message, "2000000 microbatches") != NULL, "%s", error->message);
    g_clear_error(&error);
}

/* ---- host memory ----------------------------------------------------------------------------- */

/* Sanitizers and valgrind multiply what every allocation costs in resident memory. */
static gboolean memory_is_instrumented(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return TRUE;
#else
    const char *preload = g_getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL;
#endif
}

/* The memory a run holds at its largest point (graph and timeline kept, as --timeline and
 * compare keep them) against the estimate: an upper bound, and not an absurd one.  Measured as
 * the growth of the resident set (alloc.h) across the run, which pages freed and taken again
 * can only understate, so the bound is checked with a margin of a quarter. */
static void check_memory_bound(const char *spec, gboolean exact_graph)
{
    if (memory_is_instrumented())
        return;
#ifdef M_PERTURB
    /* meson test sets MALLOC_PERTURB_, which fills every freed block and so keeps freed pages
     * resident: the growth measured would be the allocator's, not the run's. */
    mallopt(M_PERTURB, 0);
#endif
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert(ssim_parallel_parse(&par, spec, NULL), "%s", spec);
    ssim_cluster_set_nodes(cluster, ssim_parallel_world(&par) / cluster->gpus_per_node);
    guint64 before = ssim_alloc_resident_bytes();
    cr_assert_gt(before, 0);
    SsimSimConfig config = {.model = model,
                            .cluster = cluster,
                            .par = &par,
                            .exact = exact_graph,
                            .exact_graph = exact_graph,
                            .ignore_memory = TRUE};
    SsimResult result;
    SsimLowered *lowered = NULL;
    SsimTimeline *tl = NULL;
    GError *error = NULL;
    cr_assert(ssim_simulate(&config, &result, &lowered, &tl, &error), "%s: %s", spec,
              error ? error->message : "");
    double held = (double)(ssim_alloc_resident_bytes() - MIN(before, ssim_alloc_resident_bytes()));
    SsimMemoryEstimate est;
    ssim_budget_memory_estimate(
        model, &par, exact_graph ? SSIM_MEMORY_EXPLICIT : SSIM_MEMORY_REPRESENTATIVE, &est);
    cr_assert(est.bytes >= held && est.bytes <= 8 * held,
              "%s%s: estimate %.0f bytes, held %.0f (%u ops)", spec,
              exact_graph ? " (explicit)" : "", est.bytes, held, result.n_ops);
    ssim_timeline_free(tl);
    ssim_lowered_free(lowered);
}

/* Each in its own process (a parameterised test), so the resident set starts fresh. */
typedef struct {
    char spec[64];
    int exact_graph;
} MemCase;

static MemCase mem_cases[] = {
    {"dp=1,tp=8,pp=4,mb=1,gbs=256", 0},
    {"dp=4,tp=2,pp=4,mb=2,gbs=256,recompute=full", 0},
    {"dp=1,tp=8,pp=4,mb=1,gbs=128,recompute=selective", 0},
    {"dp=4,tp=4,pp=2,mb=1,gbs=128,schedule=interleaved,v=2", 0},
    {"dp=1,tp=8,pp=4,mb=1,gbs=64,recompute=full", 1},
    {"dp=2,tp=4,pp=2,mb=1,gbs=32", 1},
};

ParameterizedTestParameters(budget, memory_estimate_bounds_what_a_run_holds)
{
    return cr_make_param_array(MemCase, mem_cases, G_N_ELEMENTS(mem_cases));
}

ParameterizedTest(MemCase *c, budget, memory_estimate_bounds_what_a_run_holds, .timeout = 60)
{
    check_memory_bound(c->spec, c->exact_graph != 0);
}

/* Modes order as their state does, the held count multiplies, and a refusal names the estimate,
 * the limit and what reduces it. */
Test(budget, memory_check_refuses_with_the_estimate_and_the_remedy)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert(ssim_parallel_parse(&par, "dp=4,tp=8,pp=4,mb=1,gbs=256", NULL));
    SsimMemoryEstimate rep, repl, expl;
    ssim_budget_memory_estimate(model, &par, SSIM_MEMORY_REPRESENTATIVE, &rep);
    ssim_budget_memory_estimate(model, &par, SSIM_MEMORY_REPLICATED, &repl);
    ssim_budget_memory_estimate(model, &par, SSIM_MEMORY_EXPLICIT, &expl);
    cr_assert(rep.bytes < repl.bytes && repl.bytes < expl.bytes, "%g %g %g", rep.bytes, repl.bytes,
              expl.bytes);
    guint64 limit = (guint64)(expl.bytes * 1.5);
    cr_assert(ssim_budget_check_memory(model, &par, SSIM_MEMORY_EXPLICIT, 1, limit, NULL));
    GError *error = NULL;
    cr_assert_not(ssim_budget_check_memory(model, &par, SSIM_MEMORY_EXPLICIT, 2, limit, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY));
    cr_assert(strstr(error->message, "max_memory:") && strstr(error->message, "x 2 runs held"),
              "%s", error->message);
    cr_assert(strstr(error->message, "drop --exact") && strstr(error->message, "--global-batch"),
              "%s", error->message);
    g_clear_error(&error);
    cr_assert(ssim_budget_check_memory(model, &par, SSIM_MEMORY_EXPLICIT, 9, G_MAXUINT64, NULL));
    /* The during-run check reads the heap: no process runs in one byte. */
    cr_assert_not(ssim_budget_check_resident(1, "after lowering", 123e9, &error));
    cr_assert(strstr(error->message, "after lowering") && strstr(error->message, "123 GB"), "%s",
              error->message);
    g_clear_error(&error);
    cr_assert_gt(ssim_budget_memory_default(), 0);
    cr_assert_leq(ssim_budget_memory_default(), ssim_alloc_available_bytes());
}

/* The runtime checks the heap once its state is allocated, before replaying. */
Test(budget, runtime_checks_the_heap_before_replaying)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.stream = ssim_graph_stream(g, 0, "compute");
    s.duration = 10;
    ssim_graph_add_op(g, &s, NULL, 0);
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimRunConfig rc = SSIM_RUN_CONFIG_INIT;
    rc.max_memory = 1;
    GError *error = NULL;
    cr_assert_null(ssim_runtime_run_config(g, &rc, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY), "%s",
              error ? error->message : "");
    g_clear_error(&error);
    rc.max_memory = 0;
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &rc, &error);
    cr_assert_not_null(t);
}
