/*
 * The plan: a placement-neutral description of one training iteration, between the lowering
 * and the op graph.
 *
 * The lowering does not write the op graph directly; it writes a plan: every op (kernel or
 * communication) with its rank, stream, class and payload, the *data dependencies* between ops
 * (producer -> consumer facts that hold whatever the placement), and for every communication op
 * two movable points:
 *
 *   issue  the op of the same rank after which it is issued (its stream position follows that
 *          op, and it waits for it unless the op is a receive, which is only posted there); a
 *          kernel, or communication (the lock-step loop's last permute, say);
 *   wait   the kernel of the same rank that waits for its completion (SSIM_NONE: nobody).
 *
 * Programs.  An op may belong to a *program* of its rank (graph.h: an XLA executable, say; Alpa's
 * MPMD pipeline runs one per stage and microbatch phase, plus apply_grad), whose order on the rank
 * is the order the lowering created them in (ssim_plan_program).  Kernels stay in the program the
 * lowering put them in; a communication op may be moved between programs (ssim_plan_move_program),
 * which is how the paper's relocation moves a gradient all-reduce from the last backward program
 * into apply_grad.  Programs add one way for a data dependency to hold: everything of a program
 * has finished before the next program of its rank starts.
 *
 * Each op keeps two pairs of points and two programs: the lowering's (issue0, wait0, program0),
 * set once while the plan is built, and the current ones (issue, wait, program), which a
 * placement pass moves (place.h).
 * ssim_plan_build() turns the plan into a finalized graph: kernels in their fixed order,
 * communication ops sorted on their streams by issue point, consecutive gradient pieces with the
 * same points fused into one reduction (XLA's all-reduce combiner, Megatron's buckets), and a
 * lock-step collective-permute that the placement marked `split` realised as a double-buffered
 * send/receive pair.  The builder then proves the result legal: finalize checks that it is
 * acyclic, and every data dependency of the plan is checked to hold in the graph, directly or
 * transitively (through dependency, stream-order and collective/p2p matching edges); a failure
 * names the two ops.
 *
 * Writers.  Nobody writes an SsimPlanOp directly (ssim_plan_op() hands out a const pointer);
 * each field changes through one narrow setter that checks what it can when it is called:
 *
 *   the lowering   ops, streams, groups, data dependencies, and per op the lowering's points
 *                  (ssim_plan_set_lowered_issue/_wait) and its role (a gradient piece:
 *                  ssim_plan_mark_gradient; a lock-step permute: ssim_plan_mark_permute).  The
 *                  setters check the op's kind and that points are legal in shape (same rank, a
 *                  kernel waits, the wait after the issue); data dependencies are still being
 *                  recorded then, so ssim_plan_build() proves those.
 *   a placement    the current points (ssim_plan_move, which refuses a move that breaks a data
 *                  dependency) and the split of a permute (ssim_plan_split, permutes only);
 *                  ssim_plan_reset() goes back to the lowering's placement.
 *
 * Extra memory.  A move that keeps a buffer alive longer than the lowering's placement did is
 * charged: a TP collective whose wait moved later keeps its payload (the largest such payload
 * per rank), a split permute keeps a second activation buffer (double buffering).  Gradient
 * reductions moved earlier keep nothing extra: the gradients live until the optimizer anyway.
 * The figure is derived from the points (ssim_plan_extra_bytes), never stored.
 *
 * Ownership: ssim_plan_new() returns a plan the caller frees (g_autoptr(SsimPlan));
 * ssim_plan_build() returns a graph the caller owns.  Getters return borrowed data.
 */
#pragma once

#include <shiftsim/graph.h>

G_BEGIN_DECLS

#define SSIM_PLAN_ISSUE_DEP (1u << 0) /* the op waits for its issue point (not a receive) */
#define SSIM_PLAN_FUSABLE   (1u << 1) /* a gradient piece: fused with like neighbours */
#define SSIM_PLAN_PERMUTE   (1u << 2) /* a lock-step collective-permute (may be split) */
#define SSIM_PLAN_SPLIT     (1u << 3) /* (placement) realise the permute as send + receive */

/* Gradient sites: a layer's gradients have the layer's index (0 .. layers - 1); these two name the
 * embedding's and the LM head's (the final norm's included). */
#define SSIM_SITE_EMBED 0xFFFFFFF0u
#define SSIM_SITE_HEAD  0xFFFFFFF1u

/* One op of the plan; read-only to everyone but plan.c (see "Writers" above). */
typedef struct {
    guint8 kind; /* SsimOpKind (a byte: a plan holds a million of these) */
    guint8 coll; /* SsimCollKind */
    guint8 cls;  /* SsimOpClass */
    guint8 flags;
    guint32 rank;
    guint32 stream;    /* plan stream index (ssim_plan_stream) */
    guint32 group;     /* plan group index */
    guint32 peer, tag; /* sends and receives */
    const char *name;  /* interned */
    /* A gradient piece's site (its layer's index, or SSIM_SITE_EMBED / SSIM_SITE_HEAD); a
     * lock-step permute's slot (the split pair's tag); else SSIM_NONE. */
    guint32 site;
    guint32 issue, wait;          /* current placement */
    guint32 issue0, wait0;        /* the lowering's placement */
    guint32 send_peer, recv_peer; /* permute: neighbour ranks for the split form, or NONE */
    guint32 program, program0;    /* current and lowering's program (ssim_plan_program), or NONE */
    SsimTime duration;
    guint64 bytes;
    double flops;
} SsimPlanOp;

typedef struct SsimPlan SsimPlan;

SsimPlan *ssim_plan_new(void);
/* Reserves room for `n_ops` ops and as many order and data edges (an empty plan only). */
void ssim_plan_reserve(SsimPlan *plan, gsize n_ops);
void ssim_plan_free(SsimPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimPlan, ssim_plan_free)

/* ---- built by the lowering --------------------------------------------------------------- */

guint32 ssim_plan_stream(SsimPlan *plan, guint32 rank, const char *name);
guint32 ssim_plan_add_group(SsimPlan *plan, const char *name, const guint32 *ranks, guint n,
                            GError **error);

/*
 * Adds an op (kernel or communication) of `rank` and returns its index; ops of one rank must be
 * added in the order the rank issues them (the kernels' order is final).  `spec->stream` is a
 * plan stream; spec->cls names an SsimOpClass.  `order` lists same-rank ops it must follow
 * besides its issue point that are not data dependencies (kept unless the op is split).  A
 * communication op starts with no points (issued at the start, waited for by nobody).
 */
guint32 ssim_plan_add(SsimPlan *plan, const SsimOpSpec *spec, guint32 rank, guint8 cls,
                      const guint32 *order, guint n_order);
/* Records that `consumer` needs the output of `producer` (any ranks). */
void ssim_plan_data(SsimPlan *plan, guint32 producer, guint32 consumer);
/*
 * Returns the index of `rank`'s program `name`, creating it on first use: a rank's programs run
 * in the order they are created.  ssim_plan_set_lowered_program() puts op `op` (kernel or
 * communication, not yet placed) into `program`, which must be a program of the op's rank;
 * FALSE with SSIM_CONFIG_ERROR_VALUE otherwise.
 */
guint32 ssim_plan_program(SsimPlan *plan, guint32 rank, const char *name);
gboolean ssim_plan_set_lowered_program(SsimPlan *plan, guint32 op, guint32 program, GError **error);

/*
 * The lowering's issue / wait point of communication op `op` (also its current one).  Refuses
 * (FALSE, SSIM_CONFIG_ERROR_VALUE, plan unchanged) a kernel, an op a placement has already moved
 * or split, an issue point that is not another op of the rank, a wait point that is not a kernel
 * of the rank, and a wait at or before the issue point.  Data dependencies are not checked here
 * (the lowering may record them later); ssim_plan_build() proves them.
 */
gboolean ssim_plan_set_lowered_issue(SsimPlan *plan, guint32 op, guint32 issue, GError **error);
gboolean ssim_plan_set_lowered_wait(SsimPlan *plan, guint32 op, guint32 wait, GError **error);
/*
 * Marks collective `op` as a piece of gradient site `site` of its rank (SSIM_PLAN_FUSABLE):
 * like pieces with the same points fuse into one reduction, and ssim_plan_site_last() knows its
 * site.  Refuses anything but a collective other than a collective-permute, and site SSIM_NONE.
 */
gboolean ssim_plan_mark_gradient(SsimPlan *plan, guint32 op, guint32 site, GError **error);
/*
 * Marks collective-permute `op` as the lock-step permute of slot `slot` (SSIM_PLAN_PERMUTE), with
 * the ranks its split form would send to and receive from (SSIM_NONE: no transfer that way).
 * Refuses anything but an SSIM_COLL_PERMUTE collective (so never a gradient piece), and a peer
 * that is the op's own rank.
 */
gboolean ssim_plan_mark_permute(SsimPlan *plan, guint32 op, guint32 slot, guint32 send_peer,
                                guint32 recv_peer, GError **error);

/* ---- changed by a placement pass --------------------------------------------------------- */

/* Restores the lowering's placement (issue0/wait0, no split). */
void ssim_plan_reset(SsimPlan *plan);
/*
 * The one checked primitive for points: moves communication op `op` to issue after `issue` and
 * be waited for by `wait` (either may be SSIM_NONE).  Refuses (FALSE, SSIM_CONFIG_ERROR_VALUE,
 * plan unchanged) a kernel, points of the wrong shape (as the lowering's setters do) and a move
 * that would break a data dependency: issuing before a same-rank producer, waiting after a
 * same-rank consumer; the message names the op and the dependency.
 */
gboolean ssim_plan_move(SsimPlan *plan, guint32 op, guint32 issue, guint32 wait, GError **error);
/*
 * The checked primitive for programs: moves communication op `op` into `program` (a program of
 * its rank, or SSIM_NONE: outside every program) with the points `issue` and `wait`.  Refuses
 * what ssim_plan_move() refuses, with the data dependencies judged in the new program (a producer
 * of the rank in an earlier program, or a consumer in a later one, holds by program order), and
 * points that would make programs wait for each other: an issue point in a later program, a wait
 * point in an earlier one.
 */
gboolean ssim_plan_move_program(SsimPlan *plan, guint32 op, guint32 program, guint32 issue,
                                guint32 wait, GError **error);
/*
 * Realises lock-step permute `op` as a send/receive pair (`split`) or as the collective.
 * Refuses (FALSE, SSIM_CONFIG_ERROR_VALUE) an op the lowering did not mark as a permute.
 */
gboolean ssim_plan_split(SsimPlan *plan, guint32 op, gboolean split, GError **error);

/* ---- read by anyone ---------------------------------------------------------------------- */

guint32 ssim_plan_find_group(const SsimPlan *plan, const char *name);
guint32 ssim_plan_n_programs(const SsimPlan *plan);
/* `rank`'s program `name`, or SSIM_NONE. */
guint32 ssim_plan_find_program(const SsimPlan *plan, guint32 rank, const char *name);
const char *ssim_plan_program_name(const SsimPlan *plan, guint32 program);
guint32 ssim_plan_program_rank(const SsimPlan *plan, guint32 program);
/* TRUE when programs `a` and `b` belong to one rank and `a` runs before `b` (FALSE for NONE). */
gboolean ssim_plan_program_before(const SsimPlan *plan, guint32 a, guint32 b);
const char *ssim_plan_group_name(const SsimPlan *plan, guint32 group);
guint32 ssim_plan_n_ops(const SsimPlan *plan);
guint32 ssim_plan_n_ranks(const SsimPlan *plan);
const SsimPlanOp *ssim_plan_op(const SsimPlan *plan, guint32 op);
gboolean ssim_plan_is_comm(const SsimPlan *plan, guint32 op);
/* The data producers / consumers of `op` (borrowed; valid until the next ssim_plan_data). */
const guint32 *ssim_plan_producers(const SsimPlan *plan, guint32 op, guint *n);
const guint32 *ssim_plan_consumers(const SsimPlan *plan, guint32 op, guint *n);
/* The first kernel of `rank` after op `after` (SSIM_NONE: from the start), or SSIM_NONE. */
guint32 ssim_plan_next_kernel(const SsimPlan *plan, guint32 rank, guint32 after);
/* The last kernel of `rank` of class `cls`, or SSIM_NONE. */
guint32 ssim_plan_last_kernel(const SsimPlan *plan, guint32 rank, guint8 cls);
/* Gradient piece `op`: its site's last producer, the last op of its rank that a piece of its
 * site reads; SSIM_NONE for an op that is not a gradient piece. */
guint32 ssim_plan_site_last(const SsimPlan *plan, guint32 op);
/* The last lock-step permute of `rank`, or SSIM_NONE. */
guint32 ssim_plan_last_permute(const SsimPlan *plan, guint32 rank);
/* "dp.allreduce#812 (rank 1)" into buf. */
const char *ssim_plan_op_label(const SsimPlan *plan, guint32 op, char *buf, gsize size);

/* The bytes the current placement keeps alive beyond the lowering's (see the top). */
guint64 ssim_plan_extra_bytes(const SsimPlan *plan);

/* ---- the graph --------------------------------------------------------------------------- */

/*
 * The graph of the current placement, finalized and checked (see the top of the file), with the
 * plan's programs (each op in its current program; a split permute's parts in none).
 * `class_of` (may be NULL) receives one guint8 SsimOpClass per graph op; `plan_of` (may be
 * NULL) one guint32 plan op per graph op (the first of a fused run).
 */
SsimGraph *ssim_plan_build(const SsimPlan *plan, GArray **class_of, GArray **plan_of,
                           GError **error);

/*
 * Checks that every data dependency of `plan` holds in the finalized `graph`, directly or
 * transitively: `head[p]` / `tail[p]` are the graph ops where plan op p starts and ends
 * (SSIM_NONE where it has none; a fused run shares one).  ssim_plan_build() calls it; a test may
 * call it on a graph it built or edited itself.  FALSE with a message naming the first broken
 * dependency.
 */
gboolean ssim_plan_check(const SsimPlan *plan, const SsimGraph *graph, const guint32 *head,
                         const guint32 *tail, GError **error);

G_END_DECLS
