/*
 * Alpa's MPMD pipeline (Zheng et al. 2022; alpa/parallel_method.py, pipeline_parallel/
 * schedules.py), the system the seed paper measured.  Each stage runs on its own GPUs as a
 * sequence of compiled programs, one per microbatch phase (the forward of microbatch i, its
 * backward), then apply_grad, the optimizer; stages exchange activations and gradients with
 * send/receive between programs.  `alpa` orders the phases as 1F1B, Alpa's default ("1f1b" in
 * parallel_method.py): min(p - s - 1, m) warm-up forwards, alternation, drain, so a stage keeps
 * min(p - s, m) microbatches alive; `alpa-gpipe` as GPipe (all forwards, then all backwards; m
 * alive).  The phase lists are those of the 1F1B and GPipe builders; what makes them Alpa's is
 * that the lowering turns each phase into a program (ssim_schedule_has_programs).
 */
#include "src/workload/schedule-private.h"

gboolean ssim_schedule_build_alpa(SsimSchedule *schedule, GError **error)
{
    return ssim_schedule_build_1f1b(schedule, error);
}

gboolean ssim_schedule_build_alpa_gpipe(SsimSchedule *schedule, GError **error)
{
    return ssim_schedule_build_gpipe(schedule, error);
}
