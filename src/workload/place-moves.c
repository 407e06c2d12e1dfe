/*
 * The placement rules the passes share (include/shiftsim/place.h): where a TP collective is
 * waited for, where and in which program a gradient piece is issued, whether a pipeline transfer
 * waits for its program; then the baseline compilers' defaults and the extensions, built from
 * those rules.
 *
 * Each rule is two functions: a query that names the point (or program) the rule gives an op
 * (SSIM_NONE when the rule does not apply to it) and a move that applies it through the plan's
 * checked primitives, ssim_plan_move() and ssim_plan_move_program(), and returns their refusal.
 * An op the rule does not apply to stays where it is, and the move says so by returning TRUE
 * without moving; a point the plan refuses is returned as FALSE with the plan's message, which
 * names the op and the dependency, so a pass that asks for an illegal move fails loudly.  None of
 * the rules writes the plan otherwise.
 *
 * Seams.  The TP rules decide which kernel waits for a tensor-parallel collective (the next one,
 * or the first that reads it).  The DP rules decide where a gradient reduction is issued and in
 * which program: in the program it was lowered in (the last backward of its chunk) after the
 * backward (dp_late, XLA's combined all-reduce) or right after its layer (dp_early), or moved
 * into apply_grad (dp_to_apply, the paper's relocation).  The PP rules decide whether a send of a
 * program waits for the whole program (outside it) or leaves from inside it as soon as its input
 * exists; a lock-step permute's form is ssim_plan_split()'s.
 */
#include <shiftsim/opclass.h>
#include <shiftsim/place.h>

/* ---- tensor-parallel collectives: who waits --------------------------------------------- */

guint32 ssim_place_tp_early_wait(const SsimPlan *plan, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    /* Nobody waited for it as lowered: there is no wait to pull earlier. */
    if (o->wait0 == SSIM_NONE)
        return SSIM_NONE;
    return ssim_plan_next_kernel(plan, o->rank, o->issue);
}

guint32 ssim_place_tp_late_wait(const SsimPlan *plan, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    guint n;
    const guint32 *cons = ssim_plan_consumers(plan, op, &n);
    guint32 w = SSIM_NONE;
    for (guint i = 0; i < n; i++) {
        const SsimPlanOp *c = ssim_plan_op(plan, cons[i]);
        if (c->rank == o->rank && c->kind == SSIM_OP_COMPUTE && (w == SSIM_NONE || cons[i] < w))
            w = cons[i];
    }
    return w;
}

gboolean ssim_place_tp_early(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 w = ssim_place_tp_early_wait(plan, op);
    if (w == SSIM_NONE)
        return TRUE; /* the rule does not apply: the op keeps its points */
    return ssim_plan_move(plan, op, ssim_plan_op(plan, op)->issue, w, error);
}

gboolean ssim_place_tp_late(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 w = ssim_place_tp_late_wait(plan, op);
    if (w == SSIM_NONE)
        return TRUE; /* no kernel of its rank reads it: the op keeps its points */
    return ssim_plan_move(plan, op, ssim_plan_op(plan, op)->issue, w, error);
}

/* ---- gradient reductions: where and in which program ------------------------------------ */

guint32 ssim_place_dp_late_issue(const SsimPlan *plan, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    guint32 i = ssim_plan_last_kernel(plan, o->rank, SSIM_OPCLASS_BWD);
    /* After the loop: a lock-step pipeline's loop ends with its last permute, unless that is
     * split (then it has no single end on this rank and the last kernel is the end). */
    guint32 lp = ssim_plan_last_permute(plan, o->rank);
    if (lp != SSIM_NONE && !(ssim_plan_op(plan, lp)->flags & SSIM_PLAN_SPLIT) &&
        (i == SSIM_NONE || lp > i))
        i = lp;
    return i;
}

guint32 ssim_place_dp_early_issue(const SsimPlan *plan, guint32 op)
{
    return ssim_plan_site_last(plan, op);
}

gboolean ssim_place_dp_late(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 i = ssim_place_dp_late_issue(plan, op);
    if (i == SSIM_NONE)
        return TRUE; /* its rank has no backward: the op keeps its points */
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    return ssim_plan_move_program(plan, op, o->program0, i, o->wait, error);
}

gboolean ssim_place_dp_early(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 i = ssim_place_dp_early_issue(plan, op);
    if (i == SSIM_NONE)
        return TRUE; /* not a gradient piece: the op keeps its points */
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    return ssim_plan_move_program(plan, op, o->program0, i, o->wait, error);
}

guint32 ssim_place_dp_apply_program(const SsimPlan *plan, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    if (!(o->flags & SSIM_PLAN_FUSABLE) || o->program0 == SSIM_NONE)
        return SSIM_NONE;
    return ssim_plan_find_program(plan, o->rank, "apply_grad");
}

gboolean ssim_place_dp_to_apply(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 prog = ssim_place_dp_apply_program(plan, op);
    guint32 i = ssim_place_dp_late_issue(plan, op);
    if (prog == SSIM_NONE || i == SSIM_NONE)
        return TRUE; /* no programs (or no backward): the op keeps its points */
    return ssim_plan_move_program(plan, op, prog, i, ssim_plan_op(plan, op)->wait, error);
}

/* ---- pipeline transfers under programs -------------------------------------------------- */

guint32 ssim_place_pp_async_program(const SsimPlan *plan, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    if (o->kind != SSIM_OP_SEND || o->issue == SSIM_NONE)
        return SSIM_NONE;
    return ssim_plan_op(plan, o->issue)->program;
}

gboolean ssim_place_pp_after_program(SsimPlan *plan, guint32 op, GError **error)
{
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    if (o->kind != SSIM_OP_SEND)
        return TRUE;
    return ssim_plan_move_program(plan, op, o->program0, o->issue0, o->wait0, error);
}

gboolean ssim_place_pp_in_program(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 prog = ssim_place_pp_async_program(plan, op);
    if (prog == SSIM_NONE)
        return TRUE; /* not a send of a program: nothing to make asynchronous */
    const SsimPlanOp *o = ssim_plan_op(plan, op);
    return ssim_plan_move_program(plan, op, prog, o->issue, o->wait, error);
}

/* ---- the baseline compilers and the extensions ------------------------------------------ */

gboolean ssim_place_compiler_defaults(SsimPlan *plan, GError **error)
{
    guint32 n = ssim_plan_n_ops(plan);
    for (guint32 i = 0; i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        gboolean ok = TRUE;
        if (o->kind == SSIM_OP_COMPUTE)
            continue;
        if (o->cls == SSIM_OPCLASS_TP)
            ok = ssim_place_tp_early(plan, i, error);
        else if (o->flags & SSIM_PLAN_FUSABLE)
            ok = ssim_place_dp_late(plan, i, error);
        else if (o->flags & SSIM_PLAN_PERMUTE)
            ok = ssim_plan_split(plan, i, FALSE, error);
        else if (o->kind == SSIM_OP_SEND)
            ok = ssim_place_pp_after_program(plan, i, error);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

gboolean ssim_place_extensions(SsimPlan *plan, guint shifts, SsimPlaceReport *report,
                               GError **error)
{
    guint n_dp = 0, n_pp = 0, n_sends = 0, n_tp = 0;
    guint32 n = ssim_plan_n_ops(plan);
    /* Permutes first: a reduction left after the loop re-anchors on the loop's new end. */
    for (guint32 i = 0; (shifts & SSIM_SHIFT_PP) && i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (o->flags & SSIM_PLAN_PERMUTE) {
            if (!ssim_plan_split(plan, i, TRUE, error))
                return FALSE;
            n_pp++;
        } else if (o->kind == SSIM_OP_SEND && ssim_place_pp_async_program(plan, i) != SSIM_NONE) {
            if (!ssim_place_pp_in_program(plan, i, error))
                return FALSE;
            n_sends++;
        }
    }
    for (guint32 i = 0; i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (o->kind == SSIM_OP_COMPUTE)
            continue;
        guint32 issue = o->issue, wait = o->wait;
        gboolean ok = TRUE;
        if ((shifts & SSIM_SHIFT_TP) && o->cls == SSIM_OPCLASS_TP) {
            ok = ssim_place_tp_late(plan, i, error);
            n_tp += ssim_plan_op(plan, i)->wait != wait;
        } else if ((o->flags & SSIM_PLAN_FUSABLE) && o->program == o->program0) {
            if (shifts & SSIM_SHIFT_DP) {
                ok = ssim_place_dp_early(plan, i, error);
                n_dp += ssim_plan_op(plan, i)->issue != issue;
            } else if (n_pp > 0) {
                /* A reduction left after the loop re-anchors on the loop's new end. */
                ok = ssim_place_dp_late(plan, i, error);
            }
        }
        if (!ok)
            return FALSE;
    }
    if (report == NULL)
        return TRUE;
    if (n_dp)
        g_ptr_array_add(report->moves, g_strdup_printf("early-dp: %u gradient pieces issued right "
                                                       "after their layer's last backward",
                                                       n_dp));
    if (n_pp)
        g_ptr_array_add(report->moves, g_strdup_printf("async-pp: %u collective-permutes as "
                                                       "double-buffered send/receive",
                                                       n_pp));
    if (n_sends)
        g_ptr_array_add(report->moves,
                        g_strdup_printf("async-pp: %u sends leave from inside their program as "
                                        "soon as their input is computed",
                                        n_sends));
    if (n_tp)
        g_ptr_array_add(report->moves, g_strdup_printf("late-tp: %u collectives waited for at "
                                                       "their first consumer",
                                                       n_tp));
    return TRUE;
}
