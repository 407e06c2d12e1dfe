/*
 * Placement `xla`: XLA's 3D parallelism with GSPMD's lock-step pipeline (schedule `xla`), what
 * this simulator called `baseline` before it modelled the paper's system (Alpa's MPMD pipeline).
 *
 * The pipeline is one SPMD program looping over iterations, each ending in one collective-permute
 * over all stages, which every later op of the stage waits for, so the stages move together and
 * the slowest one sets the pace (all m microbatches stay in flight).  Tensor-parallel collectives
 * are synchronous (the next kernel waits), and the data-parallel gradient reduction is one
 * combined all-reduce after the whole backward loop (after its last permute).  These are the
 * compiler defaults alpa uses too (place-moves.c); the difference is the schedule.
 */
#include <shiftsim/place.h>

gboolean ssim_place_xla(SsimPlan *plan, const SsimPlacement *placement,
                        const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    (void)eval;
    if (!ssim_place_compiler_defaults(plan, error))
        return FALSE;
    return ssim_place_extensions(plan, ssim_placement_shifts(placement), report, error);
}
