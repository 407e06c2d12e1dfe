/*
 * Placement `commshift`: the baseline with the relocations the paper's mechanism implies, each
 * switchable (SSIM_SHIFT_*):
 *
 *   dp  the gradient pieces of each layer (and of the embedding and LM head) are issued right
 *       after that layer's last weight-gradient kernel of the last microbatch, so the reduction
 *       of the deep layers overlaps the backward of the shallow ones and the pipeline drain,
 *       instead of waiting for the whole backward loop.  Pieces of one layer fuse into one
 *       reduction per layer.
 *   pp  each lock-step collective-permute becomes a send to the next stage and a receive from the
 *       previous one, only where a microbatch actually flows: the send is issued at the end of
 *       the iteration, the receive is waited for by the first kernel of the next iteration that
 *       reads it, and nothing else waits (double buffering: the next iteration computes into the
 *       other buffer while the send drains).  Stages no longer barrier-synchronise.
 *   tp  a tensor-parallel collective is waited for by the first kernel that reads its result,
 *       not by the next kernel: the backward input-gradient reduction overlaps the independent
 *       weight-gradient GEMMs (in GPT-J's parallel block, those of both the attention and the MLP
 *       branch).
 *
 * Invariant: every move goes through a shared rule (place-moves.c) and so through
 * ssim_plan_move(), so none breaks a data dependency: a refused move fails the pass.  The
 * builder's checker proves the graph anyway.
 */
#include <shiftsim/opclass.h>
#include <shiftsim/place.h>

gboolean ssim_place_commshift(SsimPlan *plan, const SsimPlacement *placement,
                              const SsimPlaceEvaluator *eval, SsimPlaceReport *report,
                              GError **error)
{
    if (!ssim_place_baseline(plan, placement, eval, NULL, error))
        return FALSE;
    guint shifts = placement->shifts;
    guint n_dp = 0, n_pp = 0, n_tp = 0;
    guint32 n = ssim_plan_n_ops(plan);
    /* Permutes first: a reduction left after the loop re-anchors on the loop's new end. */
    for (guint32 i = 0; (shifts & SSIM_SHIFT_PP) && i < n; i++)
        if (ssim_plan_op(plan, i)->flags & SSIM_PLAN_PERMUTE) {
            if (!ssim_plan_split(plan, i, TRUE, error))
                return FALSE;
            n_pp++;
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
        } else if (o->flags & SSIM_PLAN_FUSABLE) {
            if (shifts & SSIM_SHIFT_DP) {
                ok = ssim_place_dp_early(plan, i, error);
                n_dp += ssim_plan_op(plan, i)->issue != issue;
            } else {
                /* A reduction left after the loop re-anchors on the loop's new end. */
                ok = ssim_place_dp_late(plan, i, error);
            }
        }
        if (!ok)
            return FALSE;
    }
    if (report) {
        if (n_dp)
            g_ptr_array_add(report->moves,
                            g_strdup_printf("dp: %u gradient pieces issued right after their "
                                            "layer's last backward",
                                            n_dp));
        if (n_pp)
            g_ptr_array_add(report->moves,
                            g_strdup_printf("pp: %u collective-permutes as double-buffered "
                                            "send/receive",
                                            n_pp));
        if (n_tp)
            g_ptr_array_add(report->moves,
                            g_strdup_printf("tp: %u collectives waited for at their first "
                                            "consumer",
                                            n_tp));
    }
    return TRUE;
}
