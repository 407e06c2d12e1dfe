/*
 * Placement `baseline`: what XLA emits for 3D parallelism (GSPMD pipelining).
 *
 * The pipeline is lock-step: every iteration of the pipelined loop ends in one collective-permute
 * over all stages, which every later op of the stage waits for, so the stages move together and
 * the slowest one sets the pace.  Tensor-parallel collectives are synchronous inside the layer:
 * the kernel right after a collective waits for it, even when it does not read its result (XLA
 * schedules the all-reduce's done right before the next op).  The data-parallel gradient
 * reduction is one combined all-reduce after the whole backward loop: every gradient piece is
 * issued after the loop's end on its stage (the last collective-permute of a lock-step pipeline,
 * else the last backward kernel), so the builder fuses them into one.
 *
 * Invariant: only issue and wait points move, each through a shared rule (place-moves.c) and so
 * through ssim_plan_move(), whose refusal fails the pass; the point-to-point transfers of the
 * non-lock-step schedules keep the lowering's placement.
 */
#include <shiftsim/opclass.h>
#include <shiftsim/place.h>

gboolean ssim_place_baseline(SsimPlan *plan, const SsimPlacement *placement,
                             const SsimPlaceEvaluator *eval, SsimPlaceReport *report,
                             GError **error)
{
    (void)placement;
    (void)eval;
    (void)report;
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
        if (!ok)
            return FALSE;
    }
    return TRUE;
}
