/*
 * The plan: its checked setters and primitive, and the builder that proves a graph.  Oracles:
 * hand-built plans (plan_drain.h, and smaller ones here) whose legal and illegal points are
 * known by construction; every refusal is checked by its message and by the plan being
 * unchanged after it; graphs that break a dependency behind the setters' back are caught by the
 * checker; fusion conserves bytes.
 */
#include <criterion/criterion.h>

#include "plan_drain.h"

#include <shiftsim/runtime.h>

#include <string.h>

Test(plan, move_breaking_a_dependency_is_refused_by_name)
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

Test(plan, a_move_to_the_points_an_op_has_changes_nothing)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(GError) error = NULL;
    const SsimPlanOp *r = ssim_plan_op(plan, d.r);
    cr_assert(ssim_plan_move(plan, d.r, r->issue, r->wait, &error), "%s",
              error ? error->message : "");
    cr_assert_eq(r->issue, d.d);
    cr_assert_eq(r->wait, d.opt);
    cr_assert(ssim_plan_move_program(plan, d.r, r->program, r->issue, r->wait, &error), "%s",
              error ? error->message : "");
    /* Still a move of its own kind: a kernel has no points to keep. */
    const SsimPlanOp *a = ssim_plan_op(plan, d.a);
    cr_assert_not(ssim_plan_move(plan, d.a, a->issue, a->wait, &error));
    cr_assert(strstr(error->message, "is a kernel"), "%s", error->message);
    g_clear_error(&error);
    /* And a move elsewhere is checked as before. */
    cr_assert_not(ssim_plan_move(plan, d.r, d.z, d.opt, &error));
    cr_assert(strstr(error->message, "which runs later"), "%s", error->message);
}

Test(plan, checker_catches_what_the_setters_did_not_see)
{
    /* The lowering's own point issues the reduction after z, before its producer: the setter
     * sees a legal shape (the dependency is recorded after it), the builder's checker does not
     * let it through. */
    Drain d;
    drain_build_at(&d, TRUE);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = ssim_plan_build(plan, NULL, NULL, &error);
    cr_assert_null(g);
    cr_assert_str_eq(error->message, "place: the placed graph breaks a data dependency: "
                                     "dp.allreduce#2 (rank 0) no longer waits for "
                                     "ffn_up.wgrad#1 (rank 0)");
    g_clear_error(&error);

    /* An order edge against the op's own issue point is a cycle: k1 must follow the reduction,
     * which is issued after k1.  No setter relates the two; finalize refuses it. */
    g_autoptr(SsimPlan) p = ssim_plan_new();
    guint32 g0 = ssim_plan_add_group(p, "dp.0", (guint32[]){0}, 1, NULL);
    t_plan_kernel(p, 0, "k0", 100, SSIM_OPCLASS_BWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.stream = ssim_plan_stream(p, 0, "dp");
    s.group = g0;
    s.name = "dp.allreduce";
    guint32 c = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
    SsimOpSpec k = SSIM_OP_SPEC_INIT;
    k.kind = SSIM_OP_COMPUTE;
    k.stream = ssim_plan_stream(p, 0, "compute");
    k.name = "k1";
    guint32 k1 = ssim_plan_add(p, &k, 0, SSIM_OPCLASS_BWD, &c, 1);
    cr_assert(ssim_plan_set_lowered_issue(p, c, k1, NULL));
    g_autoptr(SsimGraph) g2 = ssim_plan_build(p, NULL, NULL, &error);
    cr_assert_null(g2);
    cr_assert(g_str_has_prefix(error->message, "place: the placed graph is illegal: "), "%s",
              error->message);
}

Test(plan, the_lowerings_points_are_checked_in_shape)
{
    Drain d;
    drain_build(&d);
    g_autoptr(SsimPlan) plan = d.plan;
    g_autoptr(GError) error = NULL;
    /* A kernel has no points. */
    cr_assert_not(ssim_plan_set_lowered_issue(plan, d.a, d.z, &error));
    cr_assert_str_eq(error->message,
                     "place: cannot set the lowering's points of ffn_up.wgrad#1 (rank 0): it is "
                     "a kernel, and only communication has issue and wait points");
    g_clear_error(&error);
    /* A wait point is a kernel of the op's rank: not a receive, not another rank's kernel. */
    cr_assert_not(ssim_plan_set_lowered_wait(plan, d.r, d.recv, &error));
    cr_assert_str_eq(error->message,
                     "place: cannot set the lowering's points of dp.allreduce#2 (rank 0): its "
                     "wait point must be a kernel of rank 0");
    g_clear_error(&error);
    cr_assert_not(ssim_plan_set_lowered_wait(plan, d.r, d.c, &error));
    cr_assert(strstr(error->message, "its wait point must be a kernel of rank 0"), "%s",
              error->message);
    g_clear_error(&error);
    /* An issue point is another op of the rank. */
    cr_assert_not(ssim_plan_set_lowered_issue(plan, d.r, d.r, &error));
    cr_assert(strstr(error->message, "its issue point must be another op of rank 0"), "%s",
              error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_plan_set_lowered_issue(plan, d.send, d.a, &error));
    cr_assert(strstr(error->message, "its issue point must be another op of rank 1"), "%s",
              error->message);
    g_clear_error(&error);
    /* The wait comes after the issue, whichever of the two is set. */
    cr_assert_not(ssim_plan_set_lowered_wait(plan, d.r, d.a, &error));
    cr_assert_str_eq(error->message,
                     "place: cannot set the lowering's points of dp.allreduce#2 (rank 0): "
                     "ffn_up.wgrad#1 (rank 0) would wait for it before it is issued after "
                     "norm.bwd");
    g_clear_error(&error);
    cr_assert_not(ssim_plan_set_lowered_issue(plan, d.r, d.opt, &error));
    cr_assert(strstr(error->message, "before it is issued after optimizer"), "%s", error->message);
    g_clear_error(&error);
    /* Every refusal left the lowering's placement as it was. */
    const SsimPlanOp *r = ssim_plan_op(plan, d.r);
    cr_assert_eq(r->issue0, d.d);
    cr_assert_eq(r->wait0, d.opt);
    cr_assert_eq(r->issue, d.d);
    cr_assert_eq(r->wait, d.opt);
    cr_assert_eq(ssim_plan_op(plan, d.send)->wait0, SSIM_NONE);

    /* The lowering describes an op before any placement: once moved, its setters refuse. */
    cr_assert(ssim_plan_move(plan, d.r, d.a, d.opt, &error), "%s", error ? error->message : "");
    cr_assert_not(ssim_plan_set_lowered_issue(plan, d.r, d.d, &error));
    cr_assert(strstr(error->message, "a placement has moved it"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_plan_mark_gradient(plan, d.r, 2, &error));
    cr_assert(strstr(error->message, "a placement has moved it"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_eq(ssim_plan_op(plan, d.r)->issue0, d.d);
    cr_assert_eq(ssim_plan_op(plan, d.r)->site, 1);
    /* Back at the lowering's placement, the lowering may describe it again. */
    ssim_plan_reset(plan);
    cr_assert(ssim_plan_set_lowered_issue(plan, d.r, d.d, &error), "%s",
              error ? error->message : "");
}

Test(plan, fusion_conserves_bytes)
{
    SsimPlan *p = ssim_plan_new();
    g_autoptr(SsimPlan) plan = p;
    guint32 g0 = ssim_plan_add_group(p, "dp.0", (guint32[]){0}, 1, NULL);
    guint32 k[3], piece[3];
    for (guint i = 0; i < 3; i++) {
        k[i] = t_plan_kernel(p, 0, "wgrad", 100, SSIM_OPCLASS_BWD);
        SsimOpSpec s = SSIM_OP_SPEC_INIT;
        s.kind = SSIM_OP_COLLECTIVE;
        s.stream = ssim_plan_stream(p, 0, "dp");
        s.group = g0;
        s.name = "dp.allreduce";
        s.bytes = 100 * (i + 1);
        piece[i] = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
        cr_assert(ssim_plan_mark_gradient(p, piece[i], i == 0 ? 1 : 2, NULL)); /* {0}, {1, 2} */
        ssim_plan_data(p, k[i], piece[i]);
    }
    guint32 opt = t_plan_kernel(p, 0, "optimizer", 100, SSIM_OPCLASS_OPTIMIZER);
    for (guint i = 0; i < 3; i++) {
        cr_assert(ssim_plan_set_lowered_issue(p, piece[i], k[2], NULL));
        cr_assert(ssim_plan_set_lowered_wait(p, piece[i], opt, NULL));
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
        cr_assert(ssim_place_dp_early(p, piece[i], &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_plan_op(p, piece[0])->issue, k[0]);
    cr_assert_eq(ssim_plan_op(p, piece[1])->issue, k[2], "a site issues after its last producer");
    g_autoptr(SsimGraph) g2 = ssim_plan_build(p, NULL, NULL, &error);
    cr_assert_eq(ssim_graph_n_ops(g2), 6, "one reduction per site");
}

/* A permute of rank 0 in a two-rank lock-step plan, and an all-reduce beside it. */
typedef struct {
    SsimPlan *plan;
    guint32 k, permute, allreduce;
} Lockstep;

static void lockstep_build(Lockstep *l)
{
    SsimPlan *p = l->plan = ssim_plan_new();
    guint32 pp = ssim_plan_add_group(p, "pp.0", (guint32[]){0, 1}, 2, NULL);
    l->k = t_plan_kernel(p, 0, "k", 100, SSIM_OPCLASS_FWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.coll = SSIM_COLL_PERMUTE;
    s.stream = ssim_plan_stream(p, 0, "pp");
    s.group = pp;
    s.name = "pp.permute";
    s.bytes = 4096;
    l->permute = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_PP, NULL, 0);
    s.coll = SSIM_COLL_ALLREDUCE;
    s.name = "dp.allreduce";
    l->allreduce = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
}

Test(plan, roles_are_marked_on_the_right_ops_only)
{
    Lockstep l;
    lockstep_build(&l);
    g_autoptr(SsimPlan) plan = l.plan;
    g_autoptr(GError) error = NULL;
    /* A gradient piece is a collective other than a permute, with a site. */
    cr_assert_not(ssim_plan_mark_gradient(plan, l.k, 1, &error));
    cr_assert_str_eq(error->message,
                     "place: k#0 (rank 0) cannot be a gradient piece: it is not a collective");
    g_clear_error(&error);
    cr_assert_not(ssim_plan_mark_gradient(plan, l.allreduce, SSIM_NONE, &error));
    cr_assert(strstr(error->message, "it has no gradient site"), "%s", error->message);
    g_clear_error(&error);
    /* A lock-step permute is a collective-permute, exchanging with other ranks. */
    cr_assert_not(ssim_plan_mark_permute(plan, l.allreduce, 0, 1, SSIM_NONE, &error));
    cr_assert_str_eq(error->message, "place: dp.allreduce#2 (rank 0) cannot be a lock-step "
                                     "permute: it is not a collective-permute");
    g_clear_error(&error);
    cr_assert_not(ssim_plan_mark_permute(plan, l.permute, 0, 0, SSIM_NONE, &error));
    cr_assert(strstr(error->message, "would exchange with its own rank"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_eq(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_PERMUTE, 0,
                 "a refused mark changes nothing");
    cr_assert_eq(ssim_plan_last_permute(plan, 0), SSIM_NONE);

    cr_assert(ssim_plan_mark_permute(plan, l.permute, 3, 1, SSIM_NONE, &error));
    const SsimPlanOp *o = ssim_plan_op(plan, l.permute);
    cr_assert(o->flags & SSIM_PLAN_PERMUTE);
    cr_assert_eq(o->site, 3);
    cr_assert_eq(o->send_peer, 1);
    cr_assert_eq(o->recv_peer, SSIM_NONE);
    cr_assert_eq(ssim_plan_last_permute(plan, 0), l.permute);
    /* A permute is never a gradient piece; an all-reduce is. */
    cr_assert_not(ssim_plan_mark_gradient(plan, l.permute, 1, &error));
    cr_assert(strstr(error->message, "it is a collective-permute"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_eq(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_FUSABLE, 0);
    cr_assert(ssim_plan_mark_gradient(plan, l.allreduce, 1, &error));
    cr_assert(ssim_plan_op(plan, l.allreduce)->flags & SSIM_PLAN_FUSABLE);
    cr_assert_eq(ssim_plan_op(plan, l.allreduce)->site, 1);
}

Test(plan, only_a_permute_splits)
{
    Lockstep l;
    lockstep_build(&l);
    g_autoptr(SsimPlan) plan = l.plan;
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_plan_split(plan, l.permute, TRUE, &error), "not marked by the lowering");
    cr_assert_str_eq(error->message, "place: cannot split pp.permute#1 (rank 0): only a "
                                     "lock-step permute has a send/receive form");
    g_clear_error(&error);
    cr_assert_not(ssim_plan_split(plan, l.k, TRUE, &error));
    g_clear_error(&error);
    cr_assert_eq(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_SPLIT, 0);
    cr_assert(ssim_plan_mark_permute(plan, l.permute, 0, 1, 1, &error));
    cr_assert(ssim_plan_split(plan, l.permute, TRUE, &error));
    cr_assert(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_SPLIT);
    cr_assert_eq(ssim_plan_extra_bytes(plan), ssim_plan_op(plan, l.permute)->bytes);
    cr_assert(ssim_plan_split(plan, l.permute, FALSE, &error));
    cr_assert_eq(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_SPLIT, 0);
    cr_assert(ssim_plan_split(plan, l.permute, TRUE, &error));
    ssim_plan_reset(plan);
    cr_assert_eq(ssim_plan_op(plan, l.permute)->flags & SSIM_PLAN_SPLIT, 0, "reset unsplits");
}
