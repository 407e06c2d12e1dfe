/*
 * GPipe (Huang et al. 2019): every stage runs the forwards of all m microbatches, then all their
 * backwards.  The pipeline fills and drains once each way, so with uniform costs the idle time
 * of every stage is (p - 1) (t_f + t_b) against m (t_f + t_b) of work: a bubble of (p - 1) / m.
 * Every stage keeps all m microbatches' activations.
 */
#include "src/workload/schedule-private.h"

gboolean ssim_schedule_build_gpipe(SsimSchedule *schedule, GError **error)
{
    (void)error;
    for (guint s = 0; s < schedule->pp; s++) {
        for (guint i = 0; i < schedule->m; i++)
            sched_push(schedule, s, SSIM_PHASE_FWD, 0, i, 0);
        for (guint i = 0; i < schedule->m; i++)
            sched_push(schedule, s, SSIM_PHASE_BWD, 0, i, 0);
    }
    return TRUE;
}
