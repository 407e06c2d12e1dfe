/*
 * Placement `alpa`: the paper's baseline, Alpa on XLA (schedule `alpa`), as its compiler places
 * communication (findings and inferences: docs/placement.md).
 *
 * Each stage runs one program per microbatch phase and apply_grad.  Tensor-parallel collectives
 * are synchronous inside a program: the kernel right after a collective waits for it (XLA
 * schedules the all-reduce's done right before the next op unless its latency-hiding scheduler is
 * on).  Gradients accumulate over microbatches and the stage's data-parallel all-reduce runs once,
 * in its last backward program, after the backward (Alpa's GradAccRewrite and
 * should_skip_grad_sync: the reductions of every gradient fused at the end of that program).
 * Transfers between stages are sent after their producing program, so an executable's outputs,
 * which exist only when it has finished, include everything it ran, the all-reduce too.  That is
 * the cascade the paper removes: the last backward's activation gradient leaves only after the
 * stage's all-reduce, so in the 1F1B drain the stages' all-reduces run one after another.
 *
 * Extensions (place.h) apply on top; alpa itself moves nothing else.  The same compiler defaults
 * are xla's on the lock-step schedule (place-xla.c).
 */
#include <shiftsim/place.h>

gboolean ssim_place_alpa(SsimPlan *plan, const SsimPlacement *placement,
                         const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    (void)eval;
    if (!ssim_place_compiler_defaults(plan, error))
        return FALSE;
    return ssim_place_extensions(plan, ssim_placement_shifts(placement), report, error);
}
