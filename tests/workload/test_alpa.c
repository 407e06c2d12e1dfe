/*
 * The paper's pair on Alpa's MPMD pipeline: the `alpa` schedule's programs, the `alpa` baseline
 * and the `commshift` relocation.  Oracles: the structure of the lowered programs (one per stage
 * and microbatch phase, plus apply_grad; transfers outside; the gradient all-reduce in the last
 * backward program, or in apply_grad); the closed form on uniform costs (every layer kernel the
 * same, embedding, head and optimizer free, transfers free, a given all-reduce time per stage):
 * the 1F1B step is (m + p - 1)(F + B), alpa adds the all-reduces of every stage (they run one
 * after another in the cool-down), commshift removes exactly those of stages 1..p-1; pp = 1 gains
 * exactly nothing; moving a subset of gradients moves exactly their share; the memory of the
 * alpa schedule is the 1F1B formula; a repeat count of 1 changes no byte.
 */
#include <criterion/criterion.h>

#include <shiftsim/compare.h>
#include <shiftsim/lower.h>
#include <shiftsim/place.h>
#include <shiftsim/sim.h>
#include <shiftsim/summary.h>

#include <string.h>

/* Uniform costs: each forward layer kernel 1 us, backward 2 us; embedding, head, loss and
 * optimizer free; transfers free; a gradient all-reduce of graph rank (stage) s costs
 * ar_base (s + 1), or bytes / 1024 ns when `per_byte`. */
typedef struct {
    SsimTime ar_base;
    gboolean per_byte;
} Uniform;

static SsimTime uniform_time(const SsimCostModel *cm, const SsimGraph *g, guint32 i, guint n)
{
    const Uniform *u = cm->data;
    const SsimOp *op = ssim_graph_op(g, i);
    (void)n;
    const char *name = ssim_graph_string(g, op->name);
    if (op->kind != SSIM_OP_COMPUTE) {
        if (strcmp(ssim_graph_string(g, op->cls), "dp") != 0)
            return 0;
        return u->per_byte ? (SsimTime)(op->bytes / 1024) : u->ar_base * (SsimTime)(op->rank + 1);
    }
    static const char *const free_kernels[] = {
        "embed",         "embed.bwd",     "final_norm",     "lm_head",   "loss",     "loss.bwd",
        "lm_head.dgrad", "lm_head.wgrad", "final_norm.bwd", "optimizer", "grad.zero"};
    for (gsize k = 0; k < G_N_ELEMENTS(free_kernels); k++)
        if (strcmp(name, free_kernels[k]) == 0)
            return 0;
    return strcmp(ssim_graph_string(g, op->cls), "fwd") == 0 ? 1000 : 2000;
}

static SsimParallel split(guint dp, guint tp, guint pp, guint m)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.dp = dp, p.tp = tp, p.pp = pp, p.microbatch = 1;
    p.global_batch = dp * m;
    g_strlcpy(p.schedule, "alpa", sizeof p.schedule);
    /* The paper's step: the gradient all-reduce, the optimizer and the embedding's all-reduce;
     * the other per-iteration terms (clipping, fp32 reduction, the host) are pinned in
     * test_lower.c and would only add terms to the closed forms below. */
    cr_assert(ssim_parallel_set(&p, "step_costs", "none/+optimizer/+embedding", NULL));
    return p;
}

/* Simulates `par` under `placement` (NULL: alpa) with `cost` (NULL: the cluster's analytic
 * model) on DGX H200 nodes (one node of fewer GPUs for a split of fewer than 8) without
 * interference, repeating communication `repeat` times; the lowered graph and timeline too when
 * asked. */
static SsimResult run(const SsimParallel *par, const SsimPlacement *placement,
                      const SsimCostModel *cost, guint repeat, SsimLowered **lowered,
                      SsimTimeline **tl)
{
    static SsimModel *model;
    if (model == NULL)
        model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    guint world = par->dp * par->tp * par->pp;
    if (world < cluster->gpus_per_node) {
        cluster->gpus_per_node = world;
        cluster->nics_per_node = cluster->rails = world;
    }
    ssim_cluster_set_nodes(cluster, MAX(world / cluster->gpus_per_node, 1u));
    cluster->overlap_slowdown = 1.0;
    SsimPlacement alpa = SSIM_PLACEMENT_INIT;
    SsimSimConfig c = {.model = model,
                       .cluster = cluster,
                       .par = par,
                       .ignore_memory = TRUE,
                       .cost = cost,
                       .comm_repeat = repeat,
                       .placement = placement ? placement : &alpa};
    SsimResult r;
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_simulate(&c, &r, lowered, tl, &error), "%s", error ? error->message : "");
    return r;
}

static SsimPlacement policy(SsimPlacementKind kind, const char *grads)
{
    SsimPlacement p = SSIM_PLACEMENT_INIT;
    p.kind = kind;
    if (grads != NULL)
        cr_assert(ssim_site_set_parse(grads, &p.grads, NULL));
    return p;
}

/* The name of op i's program in `g`, or "-". */
static const char *program_of(const SsimGraph *g, guint32 i)
{
    guint32 p = ssim_graph_op_program(g, i);
    return p == SSIM_NONE ? "-" : ssim_graph_program_name(g, p);
}

Test(alpa, one_program_per_phase_transfers_outside)
{
    /* dp 2 x tp 2 x pp 2, m = 4 microbatches: per stage fwd.0-3, bwd.0-3, apply_grad. */
    SsimParallel par = split(2, 2, 2, 4);
    SsimLowered *l = NULL;
    SsimTimeline *tl = NULL;
    SsimPlacement alpa = policy(SSIM_PLACEMENT_ALPA, NULL);
    run(&par, &alpa, NULL, 1, &l, &tl);
    const SsimGraph *g = ssim_lowered_graph(l);
    cr_assert_eq(ssim_graph_n_programs(g), 2 * (2 * 4 + 1));
    guint dp_ops[2] = {0, 0};
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        SsimOpClass cls = ssim_lowered_op_class(l, i);
        if (o->kind == SSIM_OP_SEND || o->kind == SSIM_OP_RECV)
            cr_assert_str_eq(program_of(g, i), "-", "transfers run between programs");
        else
            cr_assert_str_neq(program_of(g, i), "-", "op %u (%s) is in a program", i,
                              ssim_graph_string(g, o->name));
        if (cls == SSIM_OPCLASS_DP) {
            dp_ops[o->rank]++;
            cr_assert_str_eq(program_of(g, i), "bwd.3", "alpa: in the last backward program");
        }
        if (cls == SSIM_OPCLASS_OPTIMIZER)
            cr_assert_str_eq(program_of(g, i), "apply_grad");
        if (cls == SSIM_OPCLASS_FWD && strcmp(ssim_graph_string(g, o->name), "qkv") == 0)
            cr_assert(g_str_has_prefix(program_of(g, i), "fwd."));
    }
    /* The reductions of every gradient are fused into one all-reduce per stage. */
    cr_assert(dp_ops[0] == 1 && dp_ops[1] == 1);
    /* In-order dispatch: a program starts after its predecessor has ended. */
    for (guint32 p = 0; p < ssim_graph_n_programs(g); p++) {
        guint32 prev = ssim_graph_program_prev(g, p);
        if (prev == SSIM_NONE)
            continue;
        guint n, np;
        const guint32 *ops = ssim_graph_program_ops(g, p, &n);
        const guint32 *pops = ssim_graph_program_ops(g, prev, &np);
        SsimTime end = 0, start = G_MAXINT64;
        for (guint k = 0; k < np; k++)
            end = MAX(end, tl->end[pops[k]]);
        for (guint k = 0; k < n; k++)
            start = MIN(start, tl->start[ops[k]]);
        cr_assert_geq(start, end, "program %s", ssim_graph_program_name(g, p));
    }
    ssim_timeline_free(tl);

    /* commshift: the same all-reduce, in apply_grad. */
    SsimPlacement cs = policy(SSIM_PLACEMENT_COMMSHIFT, NULL);
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_lowered_place(l, &cs, NULL, NULL, &error), "%s", error ? error->message : "");
    g = ssim_lowered_graph(l);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        if (ssim_lowered_op_class(l, i) == SSIM_OPCLASS_DP)
            cr_assert_str_eq(program_of(g, i), "apply_grad");
    ssim_lowered_free(l);
}

Test(alpa, closed_form_on_uniform_costs)
{
    /* GPT-J's 28 layers on p = 4 stages (7 each), m = 8: F = 7 x 12 x 1 us, B = 7 x 16 x 2 us
     * per microbatch, every stage alike.  Stage s's all-reduce costs 4 us (s + 1), less than the
     * s B it can hide behind. */
    const guint p = 4, m = 8;
    const SsimTime F = 7 * 12 * 1000, B = 7 * 16 * 2000, AR = 4000;
    Uniform u = {.ar_base = AR};
    SsimCostModel cost = {.op_time = uniform_time, .data = &u};
    SsimParallel one = split(1, 1, p, m), two = split(2, 1, p, m);
    SsimPlacement alpa = policy(SSIM_PLACEMENT_ALPA, NULL);
    SsimPlacement cs = policy(SSIM_PLACEMENT_COMMSHIFT, NULL);
    /* Without data parallelism: 1F1B's (m + p - 1)(F + B), under either placement. */
    SsimTime t1f1b = run(&one, &alpa, &cost, 1, NULL, NULL).step_time;
    cr_assert_eq(t1f1b, (SsimTime)(m + p - 1) * (F + B));
    cr_assert_eq(run(&one, &cs, &cost, 1, NULL, NULL).step_time, t1f1b);
    /* alpa: every stage's all-reduce lies on the cool-down chain. */
    SsimTime sum_all = 0, sum_upper = 0;
    for (guint s = 0; s < p; s++) {
        sum_all += AR * (s + 1);
        if (s > 0)
            sum_upper += AR * (s + 1);
    }
    SsimTime t_alpa = run(&two, &alpa, &cost, 1, NULL, NULL).step_time;
    SsimTime t_cs = run(&two, &cs, &cost, 1, NULL, NULL).step_time;
    cr_assert_eq(t_alpa, t1f1b + sum_all, "alpa %ld", (long)t_alpa);
    /* commshift: only stage 0's stays exposed; it removes exactly the sum over stages 1..p-1. */
    cr_assert_eq(t_cs, t1f1b + AR);
    cr_assert_eq(t_alpa - t_cs, sum_upper);

    /* GPipe's phase order (alpa-gpipe) has the same cool-down chain. */
    SsimParallel gp = two;
    g_strlcpy(gp.schedule, "alpa-gpipe", sizeof gp.schedule);
    SsimTime g_alpa = run(&gp, &alpa, &cost, 1, NULL, NULL).step_time;
    SsimTime g_cs = run(&gp, &cs, &cost, 1, NULL, NULL).step_time;
    cr_assert_eq(g_alpa - g_cs, sum_upper);

    /* Each communication repeated twice: the sums double. */
    SsimTime r_alpa = run(&two, &alpa, &cost, 2, NULL, NULL).step_time;
    SsimTime r_cs = run(&two, &cs, &cost, 2, NULL, NULL).step_time;
    cr_assert_eq(r_alpa, t1f1b + 2 * sum_all);
    cr_assert_eq(r_alpa - r_cs, 2 * sum_upper);
}

Test(alpa, one_stage_gains_exactly_nothing)
{
    /* With one stage there is no later stage to overlap the all-reduce with (analytic costs of
     * the bundled DGX H200, interference off as everywhere here; the equality holds with it too,
     * nothing overlaps the all-reduce in either). */
    const guint dps[] = {8, 2};
    const guint tps[] = {1, 4};
    for (gsize k = 0; k < G_N_ELEMENTS(dps); k++) {
        SsimParallel par = split(dps[k], tps[k], 1, 4);
        SsimPlacement alpa = policy(SSIM_PLACEMENT_ALPA, NULL);
        SsimPlacement cs = policy(SSIM_PLACEMENT_COMMSHIFT, NULL);
        SsimTime a = run(&par, &alpa, NULL, 1, NULL, NULL).step_time;
        SsimTime c = run(&par, &cs, NULL, 1, NULL, NULL).step_time;
        cr_assert_eq(a, c, "dp %u tp %u: alpa %ld commshift %ld", dps[k], tps[k], (long)a, (long)c);
        cr_assert_eq(run(&par, &cs, NULL, 4, NULL, NULL).step_time,
                     run(&par, &alpa, NULL, 4, NULL, NULL).step_time);
    }
}

/* Without programs (schedule 1f1b) there is no apply_grad to move into: commshift moves nothing,
 * runs exactly alpa's step, and its report says why instead of naming no move. */
Test(alpa, commshift_without_programs_moves_nothing_and_says_so)
{
    SsimParallel par = split(2, 2, 2, 4);
    g_strlcpy(par.schedule, "1f1b", sizeof par.schedule);
    SsimPlacement alpa = policy(SSIM_PLACEMENT_ALPA, NULL);
    SsimPlacement cs = policy(SSIM_PLACEMENT_COMMSHIFT, NULL);
    cr_assert_eq(run(&par, &cs, NULL, 1, NULL, NULL).step_time,
                 run(&par, &alpa, NULL, 1, NULL, NULL).step_time);
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, 1);
    g_auto(SsimPlaceReport) report = {0};
    ssim_place_report_init(&report);
    SsimSimConfig c = {.model = model,
                       .cluster = cluster,
                       .par = &par,
                       .ignore_memory = TRUE,
                       .placement = &cs,
                       .report = &report};
    SsimResult r;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, NULL));
    cr_assert_eq(report.moves->len, 1);
    cr_assert(g_str_has_prefix(g_ptr_array_index(report.moves, 0), "dp: nothing moved: "), "%s",
              (const char *)g_ptr_array_index(report.moves, 0));
}

/* The gradient bytes of graph rank `rank` whose site is (or is not) in `set`. */
static guint64 grad_bytes(const SsimLowered *l, guint32 rank, const SsimSiteSet *set, gboolean in)
{
    SsimPlan *plan = ssim_lowered_plan((SsimLowered *)l);
    guint64 sum = 0;
    for (guint32 i = 0; i < ssim_plan_n_ops(plan); i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if ((o->flags & SSIM_PLAN_FUSABLE) && o->rank == rank &&
            ssim_site_set_has(set, o->site) == in)
            sum += o->bytes;
    }
    return sum;
}

Test(alpa, a_subset_of_gradients_moves_exactly_its_share)
{
    /* All-reduce time bytes / 1024 ns.  Layers 3-17 span stage 0 (3-6), all of stage 1 (7-13)
     * and part of stage 2 (14-17): what leaves the cool-down chain is exactly the selected bytes
     * of stages 1 and 2, fused as they are (integer nanoseconds of each fused all-reduce). */
    const guint p = 4, m = 8;
    Uniform u = {.per_byte = TRUE};
    SsimCostModel cost = {.op_time = uniform_time, .data = &u};
    SsimParallel par = split(2, 1, p, m);
    SsimPlacement alpa = policy(SSIM_PLACEMENT_ALPA, NULL);
    SsimPlacement sub = policy(SSIM_PLACEMENT_COMMSHIFT, "3-17");
    SsimPlacement none = policy(SSIM_PLACEMENT_COMMSHIFT, "none");
    SsimLowered *l = NULL;
    SsimTime t_alpa = run(&par, &alpa, &cost, 1, &l, NULL).step_time;
    SsimTime t_sub = run(&par, &sub, &cost, 1, NULL, NULL).step_time;
    SsimTime t_none = run(&par, &none, &cost, 1, NULL, NULL).step_time;
    cr_assert_eq(t_none, t_alpa, "moving nothing is alpa");
    SsimSiteSet all = SSIM_SITE_SET_ALL;
    SsimTime expected = 0;
    for (guint32 s = 1; s < p; s++) {
        guint64 every = grad_bytes(l, s, &all, TRUE);
        guint64 left = grad_bytes(l, s, &sub.grads, FALSE);
        expected += (SsimTime)(every / 1024) - (SsimTime)(left / 1024);
    }
    cr_assert_gt(grad_bytes(l, 2, &sub.grads, FALSE), 0, "stage 2 keeps part of its gradients");
    cr_assert_gt(expected, 0);
    cr_assert_eq(t_alpa - t_sub, expected, "saved %ld, expected %ld", (long)(t_alpa - t_sub),
                 (long)expected);
    ssim_lowered_free(l);
}

Test(alpa, memory_is_1f1b)
{
    for (guint p = 1; p <= 8; p *= 2)
        for (guint m = 1; m <= 16; m *= 2) {
            g_autoptr(SsimSchedule) a = ssim_schedule_new(SSIM_SCHEDULE_ALPA, p, 1, m, NULL);
            g_autoptr(SsimSchedule) g = ssim_schedule_new(SSIM_SCHEDULE_ALPA_GPIPE, p, 1, m, NULL);
            cr_assert(ssim_schedule_has_programs(a) && ssim_schedule_has_programs(g));
            for (guint s = 0; s < p; s++) {
                cr_assert_eq(ssim_schedule_in_flight(a, s), MIN(p - s, m), "p %u m %u s %u", p, m,
                             s);
                cr_assert_eq(ssim_schedule_in_flight(g, s), m);
            }
        }
    g_autoptr(GError) error = NULL;
    cr_assert_null(ssim_schedule_new(SSIM_SCHEDULE_ALPA, 2, 2, 4, &error));
    cr_assert(strstr(error->message, "alpa runs one model chunk per GPU"), "%s", error->message);
}

Test(alpa, repeat_once_changes_no_byte)
{
    SsimParallel par = split(2, 2, 2, 4);
    SsimPlacement cs = policy(SSIM_PLACEMENT_COMMSHIFT, NULL);
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, 1);
    GString *out[2];
    for (guint k = 0; k < 2; k++) {
        SsimSimConfig c = {
            .model = model, .cluster = cluster, .par = &par, .placement = &cs, .comm_repeat = k};
        SsimResult r;
        cr_assert(ssim_simulate(&c, &r, NULL, NULL, NULL));
        c.comm_repeat = 1; /* the report names the count; both runs are "once" */
        out[k] = ssim_result_format(&r, &c, SSIM_FORMAT_JSON);
    }
    cr_assert_str_eq(out[0]->str, out[1]->str);
    cr_assert(strstr(out[0]->str, "\"placement\" : \"commshift\""), "%s", out[0]->str);
    cr_assert(strstr(out[0]->str, "\"schedule\" : \"alpa\""));
    g_string_free(out[0], TRUE);
    g_string_free(out[1], TRUE);
}
