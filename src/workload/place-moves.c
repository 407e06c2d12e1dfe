/*
 * The placement rules the passes share (include/shiftsim/place.h): where the baseline and
 * commshift put a TP collective's wait point and a gradient piece's issue point.
 *
 * Each rule is two functions: a query that names the point the rule gives an op (SSIM_NONE when
 * the rule does not apply to it) and a move that applies the point through ssim_plan_move(), the
 * one checked primitive, and returns its refusal.  An op the rule does not apply to stays where
 * it is, and the move says so by returning TRUE without moving; a point the plan refuses is
 * returned as FALSE with the plan's message, which names the op and the dependency, so a pass
 * that asks for an illegal move fails loudly.  None of the rules writes the plan otherwise.
 *
 * Seams.  The TP rules decide which kernel waits for a tensor-parallel collective (the next one,
 * or the first that reads it).  The DP rules decide where in the iteration a gradient reduction
 * is issued: after the backward loop (dp_late: the last backward kernel, or the loop's last
 * permute when the pipeline is lock-step and that permute is not split) or right after the last
 * producer of its gradient site (dp_early).  A placement that moves a reduction between programs
 * (Alpa's baseline keeps it at the end of the last backward program, commshift moves it into
 * apply_grad) adds its rule here, as a query and a move, and the passes pick it by name.
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

/* ---- gradient reductions: where they are issued ----------------------------------------- */

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
    return ssim_plan_move(plan, op, i, ssim_plan_op(plan, op)->wait, error);
}

gboolean ssim_place_dp_early(SsimPlan *plan, guint32 op, GError **error)
{
    guint32 i = ssim_place_dp_early_issue(plan, op);
    if (i == SSIM_NONE)
        return TRUE; /* not a gradient piece: the op keeps its points */
    return ssim_plan_move(plan, op, i, ssim_plan_op(plan, op)->wait, error);
}
