/*
 * Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM's forward_backward_pipelining_with_
 * interleaving): each GPU holds v model chunks, chunk c of stage s being virtual stage c p + s.
 * The m v (microbatch, chunk) forwards of a stage are taken in groups of p microbatches: the k-th
 * forward is microbatch (k / (p v)) p + k % p of chunk (k / p) % v; the k-th backward is the same
 * microbatch of chunk v - 1 - (k / p) % v.  Stage s warms up with 2 (p - s - 1) + (v - 1) p
 * forwards (all of them when m == p), then alternates forward and backward, then drains.  Each
 * chunk is 1/v of a stage's work, so the fill and drain cost (p - 1) (t_f + t_b) / v: a bubble
 * of (p - 1) / (v m).  Requires m % p == 0, as Megatron-LM does.
 */
#include "src/workload/schedule-private.h"

static void kth(guint k, guint p, guint v, gboolean forward, guint *chunk, guint *micro)
{
    guint in_group = k % (p * v);
    guint c = in_group / p;
    *chunk = forward ? c : v - 1 - c;
    *micro = (k / (p * v)) * p + k % p;
}

gboolean ssim_schedule_build_interleaved(SsimSchedule *schedule, GError **error)
{
    (void)error;
    guint p = schedule->pp, v = schedule->v, m = schedule->m;
    guint total = m * v;
    for (guint s = 0; s < p; s++) {
        guint warmup = m == p ? total : MIN(2 * (p - s - 1) + (v - 1) * p, total);
        guint steady = total - warmup;
        guint c, mb;
        for (guint k = 0; k < warmup; k++) {
            kth(k, p, v, TRUE, &c, &mb);
            sched_push(schedule, s, SSIM_PHASE_FWD, c, mb, 0);
        }
        for (guint i = 0; i < steady; i++) {
            kth(warmup + i, p, v, TRUE, &c, &mb);
            sched_push(schedule, s, SSIM_PHASE_FWD, c, mb, 0);
            kth(i, p, v, FALSE, &c, &mb);
            sched_push(schedule, s, SSIM_PHASE_BWD, c, mb, 0);
        }
        for (guint k = steady; k < total; k++) {
            kth(k, p, v, FALSE, &c, &mb);
            sched_push(schedule, s, SSIM_PHASE_BWD, c, mb, 0);
        }
    }
    return TRUE;
}
