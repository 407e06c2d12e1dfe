/*
 * 1F1B with a flush (PipeDream-flush, Narayanan et al. 2021; Megatron-LM's default): stage s runs
 * min(p - s - 1, m) warm-up forwards, then alternates one forward and one backward, then drains
 * the remaining backwards.  The bubble is GPipe's, (p - 1) / m with uniform costs, but a stage
 * keeps at most p - s microbatches alive instead of m.
 */
#include "src/workload/schedule-private.h"

gboolean ssim_schedule_build_1f1b(SsimSchedule *schedule, GError **error)
{
    (void)error;
    guint p = schedule->pp, m = schedule->m;
    for (guint s = 0; s < p; s++) {
        guint warmup = MIN(p - s - 1, m);
        guint steady = m - warmup;
        for (guint i = 0; i < warmup; i++)
            sched_push(schedule, s, SSIM_PHASE_FWD, 0, i, 0);
        for (guint i = 0; i < steady; i++) {
            sched_push(schedule, s, SSIM_PHASE_FWD, 0, warmup + i, 0);
            sched_push(schedule, s, SSIM_PHASE_BWD, 0, i, 0);
        }
        for (guint i = steady; i < m; i++)
            sched_push(schedule, s, SSIM_PHASE_BWD, 0, i, 0);
    }
    return TRUE;
}
