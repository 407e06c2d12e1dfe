/*
 * Placement `commshift`: the seed paper's relocation (Hosoki et al., CCGrid 2025), as its first
 * author's pass GradAccCommDelay does it in his fork of Alpa's XLA (docs/placement.md).
 *
 * Start from alpa's compiler defaults; then every selected gradient (placement->grads: all by
 * default, like the pass's index list; a gradient not selected keeps Alpa's placement) has its
 * all-reduce moved out of the stage's last backward program into its apply_grad program: issued at
 * apply_grad's start, after the backward program (and so after that program's sends), with the
 * optimizer waiting for it.  The backward program then ends with its compute, its activation
 * gradient leaves at once, and the stage's all-reduce runs while the stages before it are still in
 * their backward, on other GPUs; only stage 0's stays exposed.  With one stage there is nothing to
 * overlap it with, and the step is exactly alpa's.  Without programs (other schedules) the rule
 * does not apply: nothing moves, and the report says so.
 *
 * Invariant: the move goes through the shared rule (place-moves.c: ssim_place_dp_to_apply) and
 * so through ssim_plan_move_program(), which checks the programs' order and every data dependency
 * (the gradients' producers run in earlier programs, the optimizer reads the result later in
 * apply_grad).  The builder's checker proves the graph anyway.  Extensions apply on top, early-dp
 * only to the gradients left in the backward.
 */
#include <shiftsim/place.h>

gboolean ssim_place_commshift(SsimPlan *plan, const SsimPlacement *placement,
                              const SsimPlaceEvaluator *eval, SsimPlaceReport *report,
                              GError **error)
{
    (void)eval;
    if (!ssim_place_compiler_defaults(plan, error))
        return FALSE;
    guint32 n = ssim_plan_n_ops(plan);
    g_autoptr(GHashTable) ranks = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GHashTable) sites = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GArray) keys = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_array_set_size(keys, n);
    for (guint32 i = 0; i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (!(o->flags & SSIM_PLAN_FUSABLE) || !ssim_site_set_has(&placement->grads, o->site) ||
            ssim_place_dp_apply_program(plan, i) == SSIM_NONE)
            continue;
        if (!ssim_place_dp_to_apply(plan, i, error))
            return FALSE;
        g_hash_table_add(ranks, GUINT_TO_POINTER(o->rank + 1));
        gint64 *key = &g_array_index(keys, gint64, i);
        *key = ((gint64)o->rank << 32) | o->site;
        g_hash_table_add(sites, key);
    }
    if (report && ssim_plan_n_programs(plan) == 0)
        g_ptr_array_add(report->moves,
                        g_strdup("dp: nothing moved: this schedule has no programs (commshift "
                                 "moves the all-reduce between programs: use schedule alpa or "
                                 "alpa-gpipe)"));
    if (report && g_hash_table_size(sites) > 0) {
        g_autofree char *which = ssim_site_set_to_string(&placement->grads);
        g_ptr_array_add(report->moves,
                        g_strdup_printf("dp: the gradient all-reduce of %u sites on %u ranks "
                                        "(gradients %s) moved from the last backward program into "
                                        "apply_grad",
                                        g_hash_table_size(sites), g_hash_table_size(ranks), which));
    }
    return ssim_place_extensions(plan, ssim_placement_shifts(placement), report, error);
}
