/*
 * The XLA lock-step pipeline (GSPMD-style, as XLA compiles a pipelined loop): the p stages run
 * one SPMD program, so in forward iteration i every stage s computes microbatch i - s (a bubble
 * slot when that is not in 0..m-1), and the iteration ends with one collective-permute that
 * moves every stage's output to the next stage at once.  After m + p - 1 forward iterations the
 * backward runs the same way in reverse: in backward iteration i stage s computes microbatch
 * i - (p - 1 - s).  No stage can run ahead of the permute, so a slow stage or a slow permute
 * delays all.  With uniform costs the bubble is (p - 1) / m, and every stage keeps m
 * microbatches alive, like GPipe.
 */
#include "src/workload/schedule-private.h"

gboolean ssim_schedule_build_xla(SsimSchedule *schedule, GError **error)
{
    (void)error;
    guint p = schedule->pp, m = schedule->m;
    guint iters = m + p - 1;
    for (guint s = 0; s < p; s++) {
        for (guint i = 0; i < iters; i++) {
            gint64 mb = (gint64)i - s;
            sched_push(schedule, s, SSIM_PHASE_FWD, 0, mb >= 0 && mb < m ? (guint32)mb : SSIM_NONE,
                       i);
        }
        for (guint i = 0; i < iters; i++) {
            gint64 mb = (gint64)i - (gint64)(p - 1 - s);
            sched_push(schedule, s, SSIM_PHASE_BWD, 0, mb >= 0 && mb < m ? (guint32)mb : SSIM_NONE,
                       iters + i);
        }
    }
    return TRUE;
}
