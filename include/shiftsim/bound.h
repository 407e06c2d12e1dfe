/*
 * A lower bound on the simulated step of a training configuration, computed in microseconds of
 * processor time from the lowering's own kernels (lower.h's ssim_lower_each_kernel) and the
 * analytical cost model, without lowering or replaying anything.  A sweep skips a configuration
 * whose bound already exceeds the step of enough simulated ones (sweep.h).
 *
 * The bound.  Let F(j) and B(j) be the time of one microbatch's forward and backward (its
 * recompute included) on virtual stage j: its layers' kernels, plus the embedding on virtual stage
 * 0 and the head on the last, each kernel priced as the simulation prices it (the analytic model's
 * roofline).  GPU s holds virtual stages c p + s for
 * chunks c < v, and runs every microbatch's forward and backward of each on its one compute
 * stream, one kernel at a time: W(s) = m sum_c [F(c p + s) + B(c p + s)].  Its first kernel
 * needs microbatch 0's activations from virtual stages 0 .. s-1, each a forward and a transfer
 * away: head(s) = sum_{j<s} [F(j) + P].  Its last backward is of chunk 0 (a chunk's backward of a
 * microbatch precedes chunk 0's on the same GPU) and every other kernel of the GPU precedes it
 * (each forward precedes its own backward, which precedes that microbatch's chunk-0 backward);
 * after it the gradient still crosses virtual stages s-1 .. 0: tail(s) = sum_{j<s} [B(j) + P].
 * P is the cheaper of a transfer inside a node and across nodes, at the analytic model's alpha and
 * bandwidth.  Then
 *
 *   step >= max_s [head(s) + W(s) + tail(s)].
 *
 * With a host floor (the cluster's kernel_floor_us, runtime.h's host issue) the host launches
 * each of its GPU's ops in order, a floor apart, and none starts before its launch, so W(s) with
 * every kernel priced the floor is a bound too (without the fill and drain: whether the host
 * waits for a transfer depends on the framework).  The larger of the two is taken.
 *
 * What it leaves out is what a schedule or a placement may hide or add: tensor- and
 * data-parallel communication (a placement may overlap it), the optimizer, waits between
 * kernels.  It holds for every schedule (each runs every phase once, chunk c of GPU s being
 * virtual stage c p + s, with a transfer or a permute between consecutive virtual stages) and
 * every placement (none breaks a data dependency or puts two kernels of a GPU side by side), for
 * the representative and the exact modes, with interference (which only slows kernels).  It
 * assumes the analytical cost model (no measured profile), the one a sweep uses.  The tests check
 * it against the simulated step of every configuration of sweeps over every schedule and
 * placement.
 *
 * Ownership: plain values.
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/parallel.h>
#include <shiftsim/types.h>

G_BEGIN_DECLS

typedef struct {
    SsimTime step;       /* the bound: the largest head + work + tail */
    guint stage;         /* the GPU (pipeline stage) that gives it */
    SsimTime work;       /* its compute, W(s) */
    SsimTime head, tail; /* the fill and drain it cannot avoid */
    SsimTime transfer;   /* P */
    SsimTime fwd0, bwd0; /* F(0), B(0): one microbatch on virtual stage 0 */
} SsimStepBound;

/*
 * The bound for `par` (valid for `model`: ssim_parallel_validate() passed) on `cluster`, the
 * cluster's analytical costs in the model's dtype.  Cheap: one pass over a layer's kernels.
 */
void ssim_step_lower_bound(const SsimModel *model, const SsimCluster *cluster,
                           const SsimParallel *par, SsimStepBound *bound);

G_END_DECLS
