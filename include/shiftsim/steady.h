/*
 * A step of many microbatches from three short simulations: the steady-state replay that makes
 * a sweep's simulations cheaper (sweep.h, --steady).  An explicit approximation.
 *
 * Once a pipeline is full, every further microbatch adds about the same work to every stage at
 * the same offsets: the timeline of m + d microbatches is nearly that of m with d more periods in
 * the middle, so the step, the exposed and busy communication of each class, the FLOPs and the op
 * and event counts are close to affine in m.  ssim_simulate_steady() simulates m1 = pp, m2 = m1 +
 * d and m3 = m1 + 2d microbatches (d = pp for the interleaved schedule, whose microbatch count
 * must stay a multiple of pp, else 1), checks that the step and the counts move by the same
 * amount from m1 to m2 as from m2 to m3 (the means over ranks to within the nanosecond an integer
 * mean may take), and extrapolates them to m; the throughput and FLOP/s figures follow from the
 * step as ssim_simulate() derives them, the memory estimate is the configuration's own.  When the
 * probes are not affine, or together are more than half of m microbatches (no saving), the
 * configuration is simulated in full instead: the answer is then ssim_simulate()'s.
 *
 * Affine over the probes does not make it affine beyond them: where interference or transfers
 * shift a period by a few microseconds now and then (measured: GPipe with full recompute), the
 * extrapolated step is off by that drift times the periods, 0.012% in the worst case of the tests
 * and under 0.1% on every sweep measured (docs/sweep.md) on GPUs alone; with an eager host (a
 * cluster's kernel_floor_us, whose waits after each transfer move a period more) 0.25% in the
 * worst case of the tests.  The bubble, a mean over ranks of idle /
 * work, is not affine at all: it is extrapolated through the probes as (a + b m) / (c + m).  A
 * sweep allows for the error when it prunes and simulates its best rows again in full, so the rows
 * it ranks first are exact.
 *
 * Costs: the probes run 3 pp + 3 d microbatches instead of m.
 */
#pragma once

#include <shiftsim/sim.h>

G_BEGIN_DECLS

/* Whether ssim_simulate_steady() extrapolated (TRUE) or simulated in full (FALSE). */
typedef struct {
    gboolean extrapolated;
    guint probes[3]; /* the microbatch counts simulated when extrapolated */
} SsimSteadyInfo;

/*
 * ssim_simulate() of `config` (which must not ask for a lowered graph, a timeline, per-op
 * uncontended times or a placement report), with the steady-state extrapolation above.  Fails as
 * ssim_simulate() fails.  `info` may be NULL.
 */
gboolean ssim_simulate_steady(const SsimSimConfig *config, SsimResult *result, SsimSteadyInfo *info,
                              GError **error);

G_END_DECLS
