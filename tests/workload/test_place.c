/*
 * Placement passes.  Oracles: a hand-built two-rank plan whose timeline is drawn by hand
 * (plan_drain.h: a gradient reduction moved from after the backward into the pipeline drain
 * shortens the step by exactly its own duration, because all of it now overlaps the wait); a
 * rule that does not apply leaves its op alone, and a rule or a pass that asks for an illegal
 * move returns the plan's refusal by name; the critical path of a replay adds up to the
 * makespan; on real lowerings, the `megatron` pass reproduces the lowering's own graph, every
 * pass keeps every FLOP and gradient byte, and auto is never worse than the better of alpa and
 * commshift.  (The plan's own checks are test_plan.c's; the paper's pair on programs,
 * test_alpa.c's.)
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "plan_drain.h"

#include <shiftsim/lower.h>
#include <shiftsim/place.h>
#include <shiftsim/sim.h>

#include <string.h>

static SsimTimeline *run_plan(const SsimPlan *p, GArray **plan_of)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = ssim_plan_build(p, NULL, plan_of, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    SsimTimeline *tl = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(tl, "%s", error ? error->message : "");
    return tl;
}

static guint32 graph_op(GArray *plan_of, guint32 plan_op)
{
    for (guint i = 0; i < plan_of->len; i++)
        if (g_array_index(plan_of, guint32, i) == plan_op)
            return i;
    return SSIM_NONE;
}

Test(place, dp_moved_into_the_drain_saves_exactly_its_time)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    GArray *pof = NULL;
    g_autoptr(SsimTimeline) before = run_plan(plan, &pof);
    /* A 0..1000; transfer 3000..3100; D 3100..3600; R 3600..5100; optimizer 5100..5600. */
    cr_assert_eq(before->makespan, 5600);
    cr_assert_eq(before->start[graph_op(pof, d.r)], 3600);
    g_array_free(pof, TRUE);

    g_autoptr(GError) error = NULL;
    cr_assert(ssim_plan_move(plan, d.r, d.a, d.opt, &error), "%s", error ? error->message : "");
    g_autoptr(SsimTimeline) after = run_plan(plan, &pof);
    guint32 r = graph_op(pof, d.r);
    g_array_free(pof, TRUE);
    /* R runs 1000..2500, inside the 1000..3000 drain wait: all 1500 ns of it overlap. */
    cr_assert_eq(after->start[r], 1000);
    cr_assert_eq(after->end[r], 2500);
    SsimTime overlapped = MIN(after->end[r], 3000) - MAX(after->start[r], 1000);
    cr_assert_eq(before->makespan - after->makespan, overlapped);
    cr_assert_eq(after->makespan, 4100);
    cr_assert_eq(ssim_plan_extra_bytes(plan), 0);

    /* The policy helper makes the same move. */
    ssim_plan_reset(plan);
    cr_assert_eq(ssim_place_dp_early_issue(plan, d.r), d.a);
    cr_assert(ssim_place_dp_early(plan, d.r, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_plan_op(plan, d.r)->issue, d.a);
}

/* Rank 0: a TP collective T issued after k0, waited for by k1 as lowered; k1 and k2 run after
 * it, and `read` says whether k2 reads it. */
typedef struct {
    SsimPlan *plan;
    guint32 k0, t, k1, k2;
} Tp;

static void tp_build(Tp *t, gboolean read)
{
    SsimPlan *p = t->plan = ssim_plan_new();
    guint32 g0 = ssim_plan_add_group(p, "tp.0", (guint32[]){0}, 1, NULL);
    t->k0 = t_plan_kernel(p, 0, "qkv.dgrad", 100, SSIM_OPCLASS_BWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.stream = ssim_plan_stream(p, 0, "tp");
    s.group = g0;
    s.name = "tp.allreduce";
    t->t = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_TP, NULL, 0);
    t->k1 = t_plan_kernel(p, 0, "qkv.wgrad", 100, SSIM_OPCLASS_BWD);
    t->k2 = t_plan_kernel(p, 0, "norm1.bwd", 100, SSIM_OPCLASS_BWD);
    cr_assert(ssim_plan_set_lowered_issue(p, t->t, t->k0, NULL));
    cr_assert(ssim_plan_set_lowered_wait(p, t->t, t->k1, NULL));
    ssim_plan_data(p, t->k0, t->t);
    if (read)
        ssim_plan_data(p, t->t, t->k2);
}

Test(place, a_rule_that_does_not_apply_leaves_the_op_alone)
{
    g_autoptr(GError) error = NULL;
    Tp t;
    tp_build(&t, FALSE);
    g_autoptr(SsimPlan) plan = t.plan;
    /* No kernel of its rank reads T: the late-wait rule has no point for it. */
    cr_assert_eq(ssim_place_tp_late_wait(plan, t.t), SSIM_NONE);
    cr_assert(ssim_place_tp_late(plan, t.t, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_plan_op(plan, t.t)->wait, t.k1, "kept its point");
    cr_assert_eq(ssim_place_tp_early_wait(plan, t.t), t.k1);
    cr_assert(ssim_place_tp_early(plan, t.t, &error));
    cr_assert_eq(ssim_plan_op(plan, t.t)->wait, t.k1);

    Tp r;
    tp_build(&r, TRUE);
    g_autoptr(SsimPlan) read = r.plan;
    cr_assert_eq(ssim_place_tp_late_wait(read, r.t), r.k2);
    cr_assert(ssim_place_tp_late(read, r.t, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_plan_op(read, r.t)->wait, r.k2, "waited for at its first reader");
    cr_assert_eq(ssim_plan_extra_bytes(read), 0, "T carries no bytes here");
}

Test(place, an_illegal_move_fails_the_pass_by_name)
{
    /* A gradient piece R of layer site 1 produced by A and, as lowered, read by B before the
     * backward ends at C: issuing it after the backward (the compilers' rule) would have B wait
     * for it before it is issued. */
    g_autoptr(SsimPlan) plan = ssim_plan_new();
    guint32 g0 = ssim_plan_add_group(plan, "dp.0", (guint32[]){0}, 1, NULL);
    guint32 a = t_plan_kernel(plan, 0, "ffn_up.wgrad", 100, SSIM_OPCLASS_BWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.stream = ssim_plan_stream(plan, 0, "dp");
    s.group = g0;
    s.name = "dp.allreduce";
    guint32 r = ssim_plan_add(plan, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
    guint32 b = t_plan_kernel(plan, 0, "clip", 100, SSIM_OPCLASS_BWD);
    guint32 c = t_plan_kernel(plan, 0, "norm.bwd", 100, SSIM_OPCLASS_BWD);
    cr_assert(ssim_plan_mark_gradient(plan, r, 1, NULL));
    cr_assert(ssim_plan_set_lowered_issue(plan, r, a, NULL));
    cr_assert(ssim_plan_set_lowered_wait(plan, r, b, NULL));
    ssim_plan_data(plan, a, r);
    ssim_plan_data(plan, r, b);

    g_autoptr(GError) error = NULL;
    cr_assert_eq(ssim_place_dp_late_issue(plan, r), c);
    cr_assert_not(ssim_place_dp_late(plan, r, &error));
    cr_assert_str_eq(error->message, "place: cannot move dp.allreduce#1 (rank 0): clip#2 "
                                     "(rank 0) would wait for it before it is issued after "
                                     "norm.bwd");
    g_clear_error(&error);
    cr_assert_eq(ssim_plan_op(plan, r)->issue, a, "a refused move changes nothing");
    /* The passes that use the rule return the same refusal, through ssim_place_apply too. */
    SsimPlacement pl = SSIM_PLACEMENT_INIT;
    cr_assert_not(ssim_place_alpa(plan, &pl, NULL, NULL, &error));
    cr_assert(strstr(error->message, "clip#2 (rank 0) would wait for it before it is issued"), "%s",
              error->message);
    g_clear_error(&error);
    pl.kind = SSIM_PLACEMENT_COMMSHIFT;
    pl.shifts = SSIM_SHIFT_TP; /* gradients stay after the backward */
    cr_assert_not(ssim_place_apply(plan, &pl, NULL, NULL, &error));
    cr_assert(strstr(error->message, "would wait for it before it is issued"), "%s",
              error->message);
    g_clear_error(&error);
    /* The lowering's placement, and commshift's rule for the piece, are legal. */
    ssim_plan_reset(plan);
    cr_assert(ssim_place_dp_early(plan, r, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_plan_op(plan, r)->issue, a);
    g_autoptr(SsimGraph) g = ssim_plan_build(plan, NULL, NULL, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
}

Test(place, critical_path_adds_up_to_the_makespan)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(SsimGraph) g = ssim_plan_build(plan, NULL, NULL, NULL);
    g_autoptr(SsimTimeline) tl = ssim_runtime_run(g, NULL, NULL, NULL);
    g_autoptr(GArray) path = ssim_critical_path(g, tl);
    SsimTime sum = 0;
    for (guint i = 0; i < path->len; i++) {
        guint32 op = g_array_index(path, guint32, i);
        sum += tl->end[op] - tl->start[op];
    }
    /* optimizer <- R <- D <- transfer <- C: 500 + 1500 + 500 + 100 + 3000. */
    cr_assert_eq(path->len, 5);
    cr_assert_eq(sum, tl->makespan);
}

Test(place, shift_lists)
{
    guint m = 0;
    cr_assert(ssim_shift_parse("dp, tp", &m, NULL));
    cr_assert_eq(m, SSIM_SHIFT_DP | SSIM_SHIFT_TP);
    g_autofree char *s = ssim_shift_to_string(m);
    cr_assert_str_eq(s, "early-dp,late-tp");
    cr_assert(ssim_shift_parse("async-pp,early-dp", &m, NULL));
    cr_assert_eq(m, SSIM_SHIFT_DP | SSIM_SHIFT_PP);
    cr_assert(ssim_shift_parse("none", &m, NULL));
    cr_assert_eq(m, 0);
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_shift_parse("dp,zz", &m, &error));
    cr_assert_str_eq(error->message, "shift: unknown extension 'zz' (known: early-dp, async-pp, "
                                     "late-tp, or dp, pp, tp; all, none)");
    g_clear_error(&error);
    SsimPlacementKind k;
    cr_assert(ssim_placement_kind_from_name("commshift", &k));
    cr_assert_eq(k, SSIM_PLACEMENT_COMMSHIFT);
    cr_assert(ssim_placement_kind_from_name("baseline", &k), "the old name is an alias");
    cr_assert_eq(k, SSIM_PLACEMENT_XLA);
    cr_assert_not_null(ssim_placement_alias_note("baseline"));
    cr_assert_null(ssim_placement_alias_note("xla"));
    cr_assert_str_eq(ssim_placement_kind_schedule(SSIM_PLACEMENT_MEGATRON), "1f1b");
    cr_assert_str_eq(ssim_placement_kind_schedule(SSIM_PLACEMENT_ALPA), "alpa");
    cr_assert_str_eq(ssim_placement_kind_schedule(SSIM_PLACEMENT_COMMSHIFT), "alpa");
    cr_assert_eq(ssim_placement_kind_for_schedule("alpa-gpipe"), SSIM_PLACEMENT_ALPA);
    cr_assert_eq(ssim_placement_kind_for_schedule("xla"), SSIM_PLACEMENT_XLA);
    cr_assert_eq(ssim_placement_kind_for_schedule("interleaved"), SSIM_PLACEMENT_MEGATRON);
    g_autofree char *list = ssim_placement_kind_list();
    cr_assert_str_eq(list, "alpa, commshift, xla, megatron, auto");

    /* Policies with extensions, and their names. */
    SsimPlacement p = SSIM_PLACEMENT_INIT;
    cr_assert(ssim_placement_parse("alpa+late-tp+early-dp", &p, NULL));
    cr_assert(p.kind == SSIM_PLACEMENT_ALPA && p.shifts == (SSIM_SHIFT_TP | SSIM_SHIFT_DP));
    g_autofree char *name = ssim_placement_to_string(&p);
    cr_assert_str_eq(name, "alpa+early-dp+late-tp");
    cr_assert(ssim_placement_parse("commshift", &p, NULL));
    cr_assert_eq(p.shifts, SSIM_SHIFT_DEFAULT);
    cr_assert_eq(ssim_placement_shifts(&p), 0);
    p.lhs = TRUE;
    cr_assert_eq(ssim_placement_shifts(&p), SSIM_SHIFT_TP | SSIM_SHIFT_DP, "lhs: both sides");
    p.kind = SSIM_PLACEMENT_AUTO;
    p.lhs = FALSE;
    cr_assert_eq(ssim_placement_shifts(&p), SSIM_SHIFT_ALL, "auto searches every extension");
    cr_assert_not(ssim_placement_parse("alpa+fast", &p, &error));
    cr_assert_str_eq(error->message, "placement 'alpa+fast': unknown extension 'fast' (known: "
                                     "early-dp, async-pp, late-tp, all)");
    g_clear_error(&error);
    cr_assert_not(ssim_placement_parse("gspmd", &p, &error));
    cr_assert(g_str_has_prefix(error->message, "unknown placement 'gspmd' (known: alpa, "));
    g_clear_error(&error);

    /* Gradient lists, like the author's index list. */
    SsimSiteSet set;
    cr_assert(ssim_site_set_parse("0-13, embed,20", &set, NULL));
    cr_assert(ssim_site_set_has(&set, 0) && ssim_site_set_has(&set, 13));
    cr_assert(!ssim_site_set_has(&set, 14) && ssim_site_set_has(&set, 20));
    cr_assert(ssim_site_set_has(&set, SSIM_SITE_EMBED) && !ssim_site_set_has(&set, SSIM_SITE_HEAD));
    g_autofree char *text = ssim_site_set_to_string(&set);
    cr_assert_str_eq(text, "0-13,embed,20");
    cr_assert(ssim_site_set_parse("none", &set, NULL) && !ssim_site_set_has(&set, 0));
    cr_assert(ssim_site_set_parse("all", &set, NULL) && ssim_site_set_has(&set, SSIM_SITE_HEAD));
    const char *bad[] = {"", "13-0", "x", "-3", "embed-head", "1,,q"};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        cr_assert_not(ssim_site_set_parse(bad[i], &set, &error), "'%s' parsed", bad[i]);
        cr_assert(g_str_has_prefix(error->message, "gradients: "), "%s", error->message);
        g_clear_error(&error);
    }
    /* A layer the model lacks is refused, against the model (GPT-J: layers 0 to 27). */
    g_autoptr(SsimModel) gptj = ssim_model_default();
    cr_assert(ssim_site_set_parse("0-27,embed,head", &set, NULL));
    cr_assert(ssim_site_set_check(&set, gptj, NULL));
    cr_assert(ssim_site_set_parse("all", &set, NULL) && ssim_site_set_check(&set, gptj, NULL));
    cr_assert(ssim_site_set_parse("3,20-28", &set, NULL));
    cr_assert_not(ssim_site_set_check(&set, gptj, &error));
    cr_assert_str_eq(error->message,
                     "gradients: layer 28 is out of range: gpt-j-6b has layers 0 to 27");
    g_clear_error(&error);
    SsimParallel par;
    ssim_parallel_init(&par);
    par.dp = 8;
    cr_assert_eq(ssim_placement_default_bucket(SSIM_PLACEMENT_MEGATRON, &par, SSIM_DTYPE_BF16),
                 80000000u);
    par.dp = 64;
    cr_assert_eq(ssim_placement_default_bucket(SSIM_PLACEMENT_MEGATRON, &par, SSIM_DTYPE_BF16),
                 128000000u);
    cr_assert_eq(ssim_placement_default_bucket(SSIM_PLACEMENT_ALPA, &par, SSIM_DTYPE_BF16), 0);
    /* ZeRO-2 and 3 reduce unit by unit: no bucket. */
    par.zero_stage = 1;
    cr_assert_eq(ssim_placement_default_bucket(SSIM_PLACEMENT_MEGATRON, &par, SSIM_DTYPE_BF16),
                 128000000u);
    par.zero_stage = 2;
    cr_assert_eq(ssim_placement_default_bucket(SSIM_PLACEMENT_MEGATRON, &par, SSIM_DTYPE_BF16), 0);
}

/* ---- real lowerings ---- */

static SsimParallel split(guint dp, guint tp, guint pp, const char *schedule)
{
    SsimParallel par;
    ssim_parallel_init(&par);
    par.dp = dp;
    par.tp = tp;
    par.pp = pp;
    par.global_batch = dp * 4 * pp;
    g_strlcpy(par.schedule, schedule, sizeof par.schedule);
    return par;
}

static SsimLowered *lower(const SsimModel *model, const SsimParallel *par, gboolean exact)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimSchedule) sched = NULL;
    SsimScheduleKind kind;
    cr_assert(ssim_schedule_kind_from_name(par->schedule, &kind));
    sched = ssim_schedule_new(kind, par->pp, par->virtual_stages, ssim_parallel_n_microbatches(par),
                              &error);
    cr_assert_not_null(sched);
    SsimLowerOptions opts = SSIM_LOWER_OPTIONS_INIT;
    opts.exact = exact;
    SsimLowered *l = ssim_lower(model, par, sched, &opts, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    return l;
}

Test(place, every_pass_keeps_the_work_and_the_megatron_pass_changes_nothing)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    const char *schedules[] = {"xla", "1f1b", "alpa"};
    for (guint s = 0; s < G_N_ELEMENTS(schedules); s++)
        for (int exact = 0; exact < 2; exact++) {
            SsimParallel par = split(2, 2, 2, schedules[s]);
            g_autoptr(SsimLowered) l = lower(model, &par, exact);
            guint32 n0 = ssim_graph_n_ops(ssim_lowered_graph(l));
            double f0 = ssim_lowered_flops(l, TRUE);
            guint64 dp0 = 0;
            for (guint32 i = 0; i < n0; i++)
                if (ssim_lowered_op_class(l, i) == SSIM_OPCLASS_DP)
                    dp0 += ssim_graph_op(ssim_lowered_graph(l), i)->bytes;
            for (guint k = 0; k < SSIM_PLACEMENT_N; k++) {
                if (k == SSIM_PLACEMENT_AUTO)
                    continue;
                SsimPlacement pl = SSIM_PLACEMENT_INIT;
                pl.kind = (SsimPlacementKind)k;
                g_autoptr(GError) error = NULL;
                cr_assert(ssim_lowered_place(l, &pl, NULL, NULL, &error), "%s",
                          error ? error->message : "");
                const SsimGraph *g = ssim_lowered_graph(l);
                cr_assert_eq(ssim_lowered_flops(l, TRUE), f0);
                guint64 dp = 0;
                for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
                    if (ssim_lowered_op_class(l, i) == SSIM_OPCLASS_DP)
                        dp += ssim_graph_op(g, i)->bytes;
                cr_assert_eq(dp, dp0, "%s: gradient bytes are conserved", schedules[s]);
                if (k == SSIM_PLACEMENT_MEGATRON)
                    cr_assert_eq(ssim_graph_n_ops(g), n0);
            }
        }
}

Test(place, async_pp_splits_the_lockstep_permute)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par = split(1, 1, 4, "xla");
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    SsimPlacement pl = SSIM_PLACEMENT_INIT;
    pl.kind = SSIM_PLACEMENT_XLA;
    pl.shifts = SSIM_SHIFT_PP;
    cr_assert(ssim_lowered_place(l, &pl, NULL, NULL, NULL));
    const SsimGraph *g = ssim_lowered_graph(l);
    guint sends = 0, recvs = 0, permutes = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        sends += o->kind == SSIM_OP_SEND;
        recvs += o->kind == SSIM_OP_RECV;
        permutes += o->kind == SSIM_OP_COLLECTIVE && o->coll == SSIM_COLL_PERMUTE;
    }
    /* m = 16 microbatches cross 3 stage boundaries each way: 2 * 3 * 16 transfers. */
    cr_assert_eq(permutes, 0);
    cr_assert_eq(sends, 96);
    cr_assert_eq(recvs, 96);
    cr_assert_eq(ssim_lowered_extra_bytes(l), model->seq_len * (guint64)model->hidden * 2,
                 "one activation buffer more (double buffering)");
}

typedef struct {
    guint dp, tp, pp, nodes;
    char shifts[16];
} AutoCase;

ParameterizedTestParameters(place, auto_never_worse)
{
    static AutoCase cases[] = {
        {2, 4, 2, 2, "all"}, {2, 2, 4, 2, "all"}, {2, 2, 2, 1, "all"},
        {4, 2, 2, 2, "dp"},  {2, 8, 1, 2, "all"}, {2, 4, 2, 2, "pp,tp"},
    };
    return cr_make_param_array(AutoCase, cases, G_N_ELEMENTS(cases));
}

static SsimTime step_of(const SsimModel *model, const SsimCluster *cluster, SsimParallel par,
                        SsimPlacementKind kind, guint shifts)
{
    SsimPlacement pl = SSIM_PLACEMENT_INIT;
    pl.kind = kind;
    if (kind == SSIM_PLACEMENT_AUTO)
        pl.shifts = shifts;
    pl.budget = 8;
    SsimSimConfig c = {
        .model = model, .cluster = cluster, .par = &par, .ignore_memory = TRUE, .placement = &pl};
    SsimResult r;
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_simulate(&c, &r, NULL, NULL, &error), "%s", error ? error->message : "");
    return r.step_time;
}

ParameterizedTest(AutoCase *tc, place, auto_never_worse)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, tc->nodes);
    SsimParallel par = split(tc->dp, tc->tp, tc->pp, "alpa");
    guint shifts;
    cr_assert(ssim_shift_parse(tc->shifts, &shifts, NULL));
    SsimTime base = step_of(model, cluster, par, SSIM_PLACEMENT_ALPA, shifts);
    SsimTime shift = step_of(model, cluster, par, SSIM_PLACEMENT_COMMSHIFT, shifts);
    SsimTime aut = step_of(model, cluster, par, SSIM_PLACEMENT_AUTO, shifts);
    cr_assert_leq(aut, MIN(base, shift), "dp %u tp %u pp %u: auto %ld, alpa %ld, commshift %ld",
                  tc->dp, tc->tp, tc->pp, (long)aut, (long)base, (long)shift);
}

/* Representative ranks and every GPU give the same step under every placement (an uncongested
 * analytic network): the placement treats replicas alike. */
Test(place, exact_and_representative_agree_under_every_placement)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, 1);
    for (guint k = 0; k < SSIM_PLACEMENT_N; k++) {
        SsimTime t[2];
        SsimParallel par = split(2, 2, 2, ssim_placement_kind_schedule((SsimPlacementKind)k));
        for (int exact = 0; exact < 2; exact++) {
            SsimPlacement pl = SSIM_PLACEMENT_INIT;
            pl.kind = (SsimPlacementKind)k;
            pl.budget = 4;
            SsimSimConfig c = {.model = model,
                               .cluster = cluster,
                               .par = &par,
                               .exact = exact,
                               .ignore_memory = TRUE,
                               .placement = &pl};
            SsimResult r;
            g_autoptr(GError) error = NULL;
            cr_assert(ssim_simulate(&c, &r, NULL, NULL, &error), "%s", error ? error->message : "");
            t[exact] = r.step_time;
        }
        cr_assert_eq(t[0], t[1], "%s: representative %ld, exact %ld",
                     ssim_placement_kind_name((SsimPlacementKind)k), (long)t[0], (long)t[1]);
    }
}
