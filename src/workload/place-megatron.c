/*
 * Placement `megatron`: Megatron-LM's placement, which is the lowering's own (schedule `1f1b`).
 *
 * Pipeline transfers are asynchronous point-to-point sends and receives (a receive is posted
 * early and only the first kernel that reads it waits); the input-gradient collective of a
 * backward layer overlaps the weight-gradient GEMMs that do not read it; gradients are reduced in
 * buckets of dp_bucket_bytes, each issued once the kernel that fills it is done, which is
 * Megatron-LM's --overlap-grad-reduce (the drivers give this policy Megatron's default bucket when
 * none is set; with dp_bucket_bytes 0, one reduction after the backward).  The pass moves nothing
 * but the extensions asked for, which keeps `shiftsim simulate` of a library caller without a
 * placement what it always was.
 */
#include <shiftsim/place.h>

gboolean ssim_place_megatron(SsimPlan *plan, const SsimPlacement *placement,
                             const SsimPlaceEvaluator *eval, SsimPlaceReport *report,
                             GError **error)
{
    (void)eval;
    return ssim_place_extensions(plan, ssim_placement_shifts(placement), report, error);
}
