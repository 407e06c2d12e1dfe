/*
 * Placement passes.  Oracles: a hand-built two-rank plan whose timeline is drawn by hand (a
 * gradient reduction moved from after the backward into the pipeline drain shortens the step by
 * exactly its own duration, because all of it now overlaps the wait); moves that would break a
 * dependency are refused by name, and graphs that break one behind the mover's back are caught
 * by the checker; fusion conserves bytes; the critical path of a replay adds up to the makespan;
 * on real lowerings, the `megatron` pass reproduces the lowering's own graph, baseline and
 * commshift keep every FLOP, and auto is never worse than the better of baseline and commshift.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <shiftsim/lower.h>
#include <shiftsim/place.h>
#include <shiftsim/sim.h>

#include <string.h>

/* ---- a hand-built plan: rank 1 computes C (3 us) and sends to rank 0, which computes the
 * weight gradient A (1 us), waits for the transfer (the drain), runs D (0.5 us) and the
 * optimizer (0.5 us).  The gradient reduction R (1.5 us) needs A and is needed by the optimizer.
 * Baseline: R is issued after D, the last backward kernel. ---- */

typedef struct {
    SsimPlan *plan;
    guint32 z, a, d, opt, c, send, recv, r;
} Drain;

static guint32 kernel(SsimPlan *p, guint32 rank, const char *name, SsimTime dur, guint8 cls)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COMPUTE;
    s.stream = ssim_plan_stream(p, rank, "compute");
    s.name = name;
    s.duration = dur;
    return ssim_plan_add(p, &s, rank, cls, NULL, 0);
}

static void drain_build(Drain *d)
{
    SsimPlan *p = d->plan = ssim_plan_new();
    guint32 g0 = ssim_plan_add_group(p, "dp.0", (guint32[]){0}, 1, NULL);
    d->z = kernel(p, 0, "z.fwd", 0, SSIM_OPCLASS_FWD);
    d->a = kernel(p, 0, "ffn_up.wgrad", 1000, SSIM_OPCLASS_BWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.coll = SSIM_COLL_ALLREDUCE;
    s.stream = ssim_plan_stream(p, 0, "dp");
    s.group = g0;
    s.name = "dp.allreduce";
    s.duration = 1500;
    s.bytes = 1000;
    d->r = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
    ssim_plan_op_mut(p, d->r)->flags |= SSIM_PLAN_FUSABLE;
    ssim_plan_op_mut(p, d->r)->site = 1;
    SsimOpSpec rv = SSIM_OP_SPEC_INIT;
    rv.kind = SSIM_OP_RECV;
    rv.stream = ssim_plan_stream(p, 0, "pp.recv");
    rv.peer = 1;
    rv.tag = 7;
    rv.duration = 100;
    rv.name = "pp.recv";
    d->recv = ssim_plan_add(p, &rv, 0, SSIM_OPCLASS_PP, NULL, 0);
    d->d = kernel(p, 0, "norm.bwd", 500, SSIM_OPCLASS_BWD);
    d->opt = kernel(p, 0, "optimizer", 500, SSIM_OPCLASS_OPTIMIZER);
    d->c = kernel(p, 1, "qkv.dgrad", 3000, SSIM_OPCLASS_BWD);
    SsimOpSpec sd = rv;
    sd.kind = SSIM_OP_SEND;
    sd.stream = ssim_plan_stream(p, 1, "pp.send");
    sd.peer = 0;
    sd.name = "pp.send";
    d->send = ssim_plan_add(p, &sd, 1, SSIM_OPCLASS_PP, NULL, 0);

    ssim_plan_set_points(p, d->r, d->d, d->opt);
    ssim_plan_set_points(p, d->recv, SSIM_NONE, d->d);
    ssim_plan_set_points(p, d->send, d->c, SSIM_NONE);
    ssim_plan_data(p, d->a, d->r);
    ssim_plan_data(p, d->r, d->opt);
    ssim_plan_data(p, d->recv, d->d);
    ssim_plan_data(p, d->c, d->send);
    ssim_plan_data(p, d->c, d->d); /* across ranks, through the transfer */
}

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
    ssim_place_dp_early(plan, d.r);
    cr_assert_eq(ssim_plan_op(plan, d.r)->issue, d.a);
}

Test(place, move_breaking_a_dependency_is_refused_by_name)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(GError) error = NULL;
    /* Issuing the reduction before the kernel that produces its gradient. */
    cr_assert_not(ssim_plan_move(plan, d.r, d.z, d.opt, &error));
    cr_assert_str_eq(error->message,
                     "place: cannot move dp.allreduce#2 (rank 0) to issue after z.fwd: it needs "
                     "the output of ffn_up.wgrad#1 (rank 0), which runs later");
    cr_assert_eq(ssim_plan_op(plan, d.r)->issue, d.d, "a refused move changes nothing");
    g_clear_error(&error);
    /* Waiting for the receive after the kernel that reads it. */
    cr_assert_not(ssim_plan_move(plan, d.recv, SSIM_NONE, d.opt, &error));
    cr_assert(strstr(error->message, "norm.bwd#4 (rank 0) reads its result earlier"), "%s",
              error->message);
    g_clear_error(&error);
    /* Waiting before issuing. */
    cr_assert_not(ssim_plan_move(plan, d.r, d.d, d.a, &error));
    cr_assert(strstr(error->message, "before it is issued"), "%s", error->message);
    g_clear_error(&error);
    /* Moving a kernel, or to another rank's kernel. */
    cr_assert_not(ssim_plan_move(plan, d.a, SSIM_NONE, SSIM_NONE, &error));
    cr_assert(strstr(error->message, "is a kernel"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_plan_move(plan, d.r, d.c, d.opt, &error));
    cr_assert(strstr(error->message, "its issue point must be another op of rank 0"), "%s",
              error->message);
}

Test(place, checker_catches_what_the_mover_did_not_see)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(GError) error = NULL;
    /* Behind ssim_plan_move's back: issue the reduction after z, before its producer. */
    ssim_plan_op_mut(plan, d.r)->issue = d.z;
    g_autoptr(SsimGraph) g = ssim_plan_build(plan, NULL, NULL, &error);
    cr_assert_null(g);
    cr_assert_str_eq(error->message, "place: the placed graph breaks a data dependency: "
                                     "dp.allreduce#2 (rank 0) no longer waits for "
                                     "ffn_up.wgrad#1 (rank 0)");
    g_clear_error(&error);
    /* A wait before the issue point is a cycle: finalize refuses it. */
    ssim_plan_op_mut(plan, d.r)->issue = d.d;
    ssim_plan_op_mut(plan, d.r)->wait = d.a;
    g_autoptr(SsimGraph) g2 = ssim_plan_build(plan, NULL, NULL, &error);
    cr_assert_null(g2);
    cr_assert(g_str_has_prefix(error->message, "place: the placed graph is illegal: "), "%s",
              error->message);
}

Test(place, fusion_conserves_bytes)
{
    SsimPlan *p = ssim_plan_new();
    g_autoptr(SsimPlan) plan = p;
    guint32 g0 = ssim_plan_add_group(p, "dp.0", (guint32[]){0}, 1, NULL);
    guint32 k[3], piece[3];
    for (guint i = 0; i < 3; i++) {
        k[i] = kernel(p, 0, "wgrad", 100, SSIM_OPCLASS_BWD);
        SsimOpSpec s = SSIM_OP_SPEC_INIT;
        s.kind = SSIM_OP_COLLECTIVE;
        s.stream = ssim_plan_stream(p, 0, "dp");
        s.group = g0;
        s.name = "dp.allreduce";
        s.bytes = 100 * (i + 1);
        piece[i] = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
        ssim_plan_op_mut(p, piece[i])->flags |= SSIM_PLAN_FUSABLE;
        ssim_plan_op_mut(p, piece[i])->site = i == 0 ? 1 : 2; /* sites {0}, {1, 2} */
        ssim_plan_data(p, k[i], piece[i]);
    }
    guint32 opt = kernel(p, 0, "optimizer", 100, SSIM_OPCLASS_OPTIMIZER);
    for (guint i = 0; i < 3; i++) {
        ssim_plan_set_points(p, piece[i], k[2], opt);
        ssim_plan_data(p, piece[i], opt);
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = ssim_plan_build(p, NULL, NULL, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_ops(g), 5, "three pieces with the same points fuse into one");
    guint64 bytes = 0;
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        bytes += ssim_graph_op(g, i)->bytes;
    cr_assert_eq(bytes, 600);
    for (guint i = 0; i < 3; i++)
        ssim_place_dp_early(p, piece[i]);
    cr_assert_eq(ssim_plan_op(p, piece[0])->issue, k[0]);
    cr_assert_eq(ssim_plan_op(p, piece[1])->issue, k[2], "a site issues after its last producer");
    g_autoptr(SsimGraph) g2 = ssim_plan_build(p, NULL, NULL, &error);
    cr_assert_eq(ssim_graph_n_ops(g2), 6, "one reduction per site");
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
    cr_assert_str_eq(s, "dp,tp");
    cr_assert(ssim_shift_parse("none", &m, NULL));
    cr_assert_eq(m, 0);
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_shift_parse("dp,zz", &m, &error));
    cr_assert_str_eq(error->message,
                     "shift: unknown relocation 'zz' (known: dp, pp, tp, all, none)");
    SsimPlacementKind k;
    cr_assert(ssim_placement_kind_from_name("commshift", &k));
    cr_assert_eq(k, SSIM_PLACEMENT_COMMSHIFT);
    cr_assert_str_eq(ssim_placement_kind_schedule(SSIM_PLACEMENT_MEGATRON), "1f1b");
    g_autofree char *list = ssim_placement_kind_list();
    cr_assert_str_eq(list, "baseline, megatron, commshift, auto");
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
    const char *schedules[] = {"xla", "1f1b"};
    for (guint s = 0; s < 2; s++)
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

Test(place, commshift_splits_the_lockstep_permute)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par = split(1, 1, 4, "xla");
    g_autoptr(SsimLowered) l = lower(model, &par, FALSE);
    SsimPlacement pl = SSIM_PLACEMENT_INIT;
    pl.kind = SSIM_PLACEMENT_COMMSHIFT;
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
    SsimParallel par = split(tc->dp, tc->tp, tc->pp, "xla");
    guint shifts;
    cr_assert(ssim_shift_parse(tc->shifts, &shifts, NULL));
    SsimTime base = step_of(model, cluster, par, SSIM_PLACEMENT_BASELINE, shifts);
    SsimTime shift = step_of(model, cluster, par, SSIM_PLACEMENT_COMMSHIFT, shifts);
    SsimTime aut = step_of(model, cluster, par, SSIM_PLACEMENT_AUTO, shifts);
    cr_assert_leq(aut, MIN(base, shift), "dp %u tp %u pp %u: auto %ld, baseline %ld, commshift %ld",
                  tc->dp, tc->tp, tc->pp, (long)aut, (long)base, (long)shift);
}

/* Representative ranks and every GPU give the same step under every placement (an uncongested
 * analytic network): the placement treats replicas alike. */
Test(place, exact_and_representative_agree_under_every_placement)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    g_autoptr(SsimCluster) cluster = ssim_cluster_default();
    ssim_cluster_set_nodes(cluster, 1);
    SsimParallel par = split(2, 2, 2, "xla");
    for (guint k = 0; k < SSIM_PLACEMENT_N; k++) {
        SsimTime t[2];
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
