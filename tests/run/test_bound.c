/*
 * The lower bound on a step (src/run/bound.c).  Oracles: the simulation itself (the bound never
 * exceeds the simulated step; with one stage and no tensor parallelism the step is the bound plus
 * the gradient reduction and the optimizer), and the bound's own algebra (linear in the
 * microbatches, the fill and drain of a pipeline as many forwards, backwards and transfers as
 * stages before the critical one).  tests/study/test_sweep_search.c checks it against every
 * configuration of whole sweeps.
 */
#include <criterion/criterion.h>

#include <shiftsim/bound.h>
#include <shiftsim/sim.h>

static void setup_job(SsimModel **m, SsimCluster **c, guint nodes)
{
    *m = ssim_model_load("gpt-j-6b", NULL);
    *c = ssim_cluster_load("dgx-h100", NULL);
    cr_assert(*m && *c);
    ssim_cluster_set_nodes(*c, nodes);
}

static SsimParallel split(guint dp, guint tp, guint pp, guint m)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = dp, p.tp = tp, p.pp = pp;
    p.global_batch = m * dp;
    p.recompute = SSIM_RECOMPUTE_FULL;
    /* The bound covers the phases; keep the step's end to the gradient all-reduce and the
     * optimizer, so that the gap below stays the all-reduce's exposed end and the optimizer. */
    cr_assert(ssim_parallel_set(&p, "step_costs", "none/+optimizer/+embedding", NULL));
    return p;
}

Test(bound, one_gpu_is_its_kernels)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 1);
    c->overlap_slowdown = 1; /* nothing overlaps anyway */
    /* One stage, no tensor parallelism: each GPU runs every kernel of the model (GPT-J does not
     * fit in 80 GB without ZeRO: memory is not the point here). */
    SsimParallel p = split(8, 1, 1, 4);
    SsimStepBound b;
    ssim_step_lower_bound(m, c, &p, &b);
    cr_assert_eq(b.head, 0);
    cr_assert_eq(b.tail, 0);
    cr_assert_eq(b.work, 4 * (b.fwd0 + b.bwd0));
    cr_assert_eq(b.step, b.work);
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    SsimResult r;
    GError *error = NULL;
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    /* The step is every kernel in a row, the bound's, then the gradient all-reduce's exposed end
     * and the optimizer. */
    cr_assert_leq(b.step, r.step_time);
    SsimTime opt = r.step_cost_time[SSIM_STEP_COST_OPTIMIZER];
    cr_assert_gt(opt, 0);
    cr_assert_lt(r.step_time - b.step - opt, r.step_time / 5,
                 "%" G_GINT64_FORMAT " + %" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT, b.step, opt,
                 r.step_time);
}

Test(bound, pipeline_fill_and_drain)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    SsimStepBound b8, b9;
    SsimParallel p8 = split(1, 4, 4, 8), p9 = split(1, 4, 4, 9);
    ssim_step_lower_bound(m, c, &p8, &b8);
    ssim_step_lower_bound(m, c, &p9, &b9);
    /* The last stage waits for three forwards and transfers, and drains three backwards: its
     * fill is at least three transfers and two layer-only forwards (stage 0's also embeds), at
     * most three of stage 0's forwards; likewise the drain. */
    cr_assert_eq(b8.stage, 3);
    cr_assert_eq(b8.step, b8.head + b8.work + b8.tail);
    cr_assert_gt(b8.transfer, 0);
    cr_assert_leq(b8.head, 3 * (b8.fwd0 + b8.transfer));
    cr_assert_gt(b8.head, 3 * b8.transfer + 2 * (b8.fwd0 / 2));
    cr_assert_leq(b8.tail, 3 * (b8.bwd0 + b8.transfer));
    cr_assert_gt(b8.tail, 3 * b8.transfer + 2 * (b8.bwd0 / 2));
    /* Backward (with full recompute) costs more than forward. */
    cr_assert_gt(b8.bwd0, 2 * b8.fwd0);
    /* One more microbatch adds one microbatch of the critical stage's work. */
    cr_assert_eq(b9.step - b8.step, b8.work / 8);
    /* And the simulation agrees that it is a lower bound. */
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p8, .ignore_memory = TRUE};
    SsimResult r;
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, NULL));
    cr_assert_leq(b8.step, r.step_time);
}

/* Megatron-LM before 2021-09 and 2022-02 (tp_overlap=off, step cost grad_accum): the reductions
 * after the weight gradients and the accumulation kernels only lengthen the step; the bound,
 * which counts the accumulation kernels as work, stays under it. */
Test(bound, the_2021_software_stays_bounded)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    for (guint pp = 1; pp <= 4; pp *= 4) {
        SsimParallel p = split(4 / pp, 4, pp, 8), old = p;
        cr_assert(ssim_parallel_set(&old, "tp_overlap", "off", NULL));
        cr_assert(ssim_parallel_set(&old, "step_costs", "+grad_accum", NULL));
        SsimStepBound b, bo;
        ssim_step_lower_bound(m, c, &p, &b);
        ssim_step_lower_bound(m, c, &old, &bo);
        cr_assert_gt(bo.work, b.work, "pp %u: the accumulation kernels are work", pp);
        SsimResult r, ro;
        SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
        cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, NULL));
        cfg.par = &old;
        cr_assert(ssim_simulate(&cfg, &ro, NULL, NULL, NULL));
        cr_assert_gt(ro.step_time, r.step_time, "pp %u", pp);
        cr_assert_leq(bo.step, ro.step_time, "pp %u", pp);
    }
}

/* Under a host floor (runtime.h's host issue) the host launches every kernel of its GPU, a floor
 * each: with launches far longer than the kernels, the host's bound (the busiest GPU's launches,
 * no fill or drain) is the one taken, and it stays under the simulated step. */
Test(bound, a_host_bound_step_stays_bounded)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    SsimParallel p = split(1, 4, 4, 8);
    SsimStepBound gpu, host;
    ssim_step_lower_bound(m, c, &p, &gpu);
    c->kernel_floor = 2 * SSIM_MS;
    ssim_step_lower_bound(m, c, &p, &host);
    cr_assert_gt(host.step, 2 * gpu.step);
    cr_assert_eq(host.head, 0);
    cr_assert_eq(host.tail, 0);
    cr_assert_eq(host.step, host.work);
    /* Eight microbatches of the busiest stage's launches, a floor each. */
    cr_assert_eq(host.work % (8 * c->kernel_floor), 0);
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    SsimResult r;
    GError *error = NULL;
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_leq(host.step, r.step_time);
    /* And close enough to prune: the step is mostly the host's launches (the rest is the fill
     * and drain of the pipeline's other stages, and the step's end). */
    cr_assert_lt(r.step_time, 2 * host.step, "%" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT,
                 r.step_time, host.step);
}

/* A compiled program (schedule alpa or xla) has no eager host: its bound is the one without a
 * floor, as its simulation is (sim.c). */
Test(bound, a_compiled_program_has_no_host_bound)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    SsimParallel p = split(1, 4, 4, 8);
    g_strlcpy(p.schedule, "alpa", sizeof p.schedule);
    SsimStepBound none, floor;
    ssim_step_lower_bound(m, c, &p, &none);
    c->kernel_floor = 2 * SSIM_MS;
    ssim_step_lower_bound(m, c, &p, &floor);
    cr_assert_eq(floor.step, none.step);
    cr_assert_eq(floor.work, none.work);
    g_strlcpy(p.schedule, "1f1b", sizeof p.schedule);
    ssim_step_lower_bound(m, c, &p, &floor);
    cr_assert_gt(floor.step, 2 * none.step);
}

/* Simulates `p` and `u` (the same split without the feature under test) on `c`, checks that
 * p's bound stays under its step, and gives both steps. */
static void step_and_base(SsimModel *m, SsimCluster *c, SsimParallel *p, SsimParallel *u,
                          SsimTime *step, SsimTime *base)
{
    SsimStepBound b;
    ssim_step_lower_bound(m, c, p, &b);
    SsimResult r, ru;
    GError *error = NULL;
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = p, .ignore_memory = TRUE};
    cr_assert(ssim_simulate(&cfg, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    cfg.par = u;
    cr_assert(ssim_simulate(&cfg, &ru, NULL, NULL, &error), "%s", error ? error->message : "");
    cr_assert_leq(b.step, r.step_time, "sm_count %u, pp %u", c->sm_count, p->pp);
    *step = r.step_time;
    *base = ru.step_time;
}

/* Flash attention's kernel executes the causal half of the FLOPs it carries: the bound prices it
 * as the cost model does, so it stays under the simulated step, with or without the shape model
 * (a cluster without sm_count prices it by its FLOPs, both ways). */
Test(bound, flash_attention_stays_bounded)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    m->seq_len = 32768; /* attention is most of the step: a bound that priced it by the FLOPs
                         * it carries, not the causal half it runs, would exceed the step */
    for (guint shape = 0; shape < 2; shape++) {
        if (shape)
            c->sm_count = 0;
        for (guint pp = 1; pp <= 4; pp *= 4) {
            SsimParallel p = split(4 / pp, 4, pp, 8), u = p;
            p.attention = SSIM_ATTENTION_FLASH;
            SsimTime step, base;
            step_and_base(m, c, &p, &u, &step, &base);
            if (shape == 0)
                cr_assert_lt(step, base, "pp %u: flash is faster at s = 32768", pp);
        }
    }
}

/* A sliding window (model.h): the windowed layers' flash kernels skip the pairs outside it, in the
 * simulation and the bound alike, so the bound stays under the step and the step shortens, more
 * with every layer windowed than with half of them; unfused attention computes every score and
 * is not faster; the FLOPs counted do not move (every score, as published MFU figures count). */
Test(bound, sliding_window_stays_bounded_and_faster)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    m->seq_len = 16384;
    g_autoptr(SsimModel) half = ssim_model_copy(m);
    half->sliding_window = 2048;
    half->sliding_window_layers = m->layers / 2;
    g_autoptr(SsimModel) all = ssim_model_copy(half);
    all->sliding_window_layers = m->layers;
    SsimParallel p = split(2, 4, 2, 8), u = p;
    p.attention = SSIM_ATTENTION_FLASH;
    SsimTime flash[3], unfused[3];
    SsimModel *models[3] = {m, half, all};
    for (guint i = 0; i < 3; i++)
        step_and_base(models[i], c, &p, &u, &flash[i], &unfused[i]);
    cr_assert_lt(flash[1], flash[0]);
    cr_assert_lt(flash[2], flash[1]);
    cr_assert_eq(unfused[2], unfused[0], "unfused attention masks the window's pairs");
    SsimResult r0, r2;
    SsimSimConfig cfg = {.model = m, .cluster = c, .par = &p, .ignore_memory = TRUE};
    cr_assert(ssim_simulate(&cfg, &r0, NULL, NULL, NULL));
    cfg.model = all;
    cr_assert(ssim_simulate(&cfg, &r2, NULL, NULL, NULL));
    cr_assert_float_eq(r2.model_flops, r0.model_flops, 1e-9 * r0.model_flops);
}

/* FP8 GEMMs (parallel.h, SsimFp8) run at the FP8 tensor cores' rate in the simulation and in the
 * bound alike, with the GEMM shape model and without it: the bound stays under the step, and the
 * step of a GEMM-bound job is shorter than in bf16, by less than half (attention, the LM head and
 * the memory-bound kernels stay 16-bit, and FP8 adds its casts). */
Test(bound, fp8_stays_bounded_and_faster)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    for (guint shape = 0; shape < 2; shape++) {
        if (shape)
            c->sm_count = 0;
        for (guint pp = 1; pp <= 4; pp *= 4) {
            SsimParallel p = split(4 / pp, 4, pp, 8), u = p;
            p.fp8 = SSIM_FP8_HYBRID;
            SsimTime step, base;
            step_and_base(m, c, &p, &u, &step, &base);
            cr_assert_lt(step, base, "sm_count %u, pp %u", c->sm_count, pp);
            cr_assert_gt(2 * step, base, "sm_count %u, pp %u", c->sm_count, pp);
        }
    }
}

/* An uneven split with v > 1 (a layer count per model chunk): GPT-J's 28 layers on pp 2 x v 2
 * as 10/4/10/4 put 20 on stage 0 and 8 on stage 1, so stage 0's work is 2.5 times stage 1's
 * layers' and the critical one; the bound stays under the simulated step, which is longer than
 * the even split's (7 a chunk). */
Test(bound, uneven_chunks_stay_bounded)
{
    g_autoptr(SsimModel) m = NULL;
    g_autoptr(SsimCluster) c = NULL;
    setup_job(&m, &c, 2);
    SsimParallel p = split(4, 2, 2, 8);
    p.virtual_stages = 2;
    cr_assert(ssim_parallel_set(&p, "schedule", "interleaved", NULL));
    SsimParallel even = p;
    cr_assert(ssim_parallel_set(&p, "stage_layers", "10/4/10/4", NULL));
    cr_assert(ssim_parallel_validate(&p, m, c, NULL));
    SsimStepBound b, be;
    ssim_step_lower_bound(m, c, &p, &b);
    ssim_step_lower_bound(m, c, &even, &be);
    cr_assert_eq(b.stage, 0);
    cr_assert_gt(b.work, be.work);
    SsimTime step, base;
    step_and_base(m, c, &p, &even, &step, &base);
    cr_assert_gt(step, base);
}
