/*
 * Placement: where each communication op is issued and where its consumer waits for it.
 *
 * The lowering does not write the op graph directly; it writes a *plan*, a placement-neutral
 * description of one iteration: every op (kernel or communication) with its rank, stream, class
 * and payload, the *data dependencies* between ops (producer -> consumer facts that hold whatever
 * the placement), and for every communication op two movable points:
 *
 *   issue  the op of the same rank after which it is issued (its stream position follows that
 *          op, and it waits for it unless the op is a receive, which is only posted there); a
 *          kernel, or communication (the lock-step loop's last permute, say);
 *   wait   the kernel of the same rank that waits for its completion (SSIM_NONE: nobody).
 *
 * A placement pass moves those points and nothing else.  ssim_plan_move() refuses a move that
 * would break a data dependency (issuing before a producer, waiting after a consumer, waiting
 * before issuing) with a message naming the op and the dependency.  ssim_plan_build() turns the
 * plan into a finalized graph: kernels in their fixed order, communication ops sorted on their
 * streams by issue point, consecutive gradient pieces with the same points fused into one
 * reduction (XLA's all-reduce combiner, Megatron's buckets), and a lock-step collective-permute
 * that the placement marked `split` realised as a double-buffered send/receive pair.  The
 * builder then proves the result legal: finalize checks that it is acyclic, and every data
 * dependency of the plan is checked to hold in the graph, directly or transitively (through
 * dependency, stream-order and collective/p2p matching edges); a failure names the two ops.
 *
 * Extra memory.  A move that keeps a buffer alive longer than the lowering's placement did is
 * charged: a TP collective whose wait moved later keeps its payload (the largest such payload
 * per rank), a split permute keeps a second activation buffer (double buffering).  Gradient
 * reductions moved earlier keep nothing extra: the gradients live until the optimizer anyway.
 *
 * Policies are a registry: one file each (src/workload/place-<name>.c) plus one line in
 * SSIM_PLACEMENT_LIST, which yields the enum, the name table and the pass table.
 *
 * Ownership: ssim_plan_new() returns a plan the caller frees (g_autoptr(SsimPlan));
 * ssim_plan_build() returns a graph the caller owns; ssim_place_report_clear() frees a report's
 * strings.  Getters return borrowed data.
 */
#pragma once

#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

/* The relocations commshift can make, each switchable (`--shift dp,pp,tp`). */
#define SSIM_SHIFT_DP  (1u << 0) /* gradient reduction of a layer right after its last backward */
#define SSIM_SHIFT_PP  (1u << 1) /* lock-step permute as a double-buffered send/receive */
#define SSIM_SHIFT_TP  (1u << 2) /* TP collective waited for at its first real consumer */
#define SSIM_SHIFT_ALL (SSIM_SHIFT_DP | SSIM_SHIFT_PP | SSIM_SHIFT_TP)

/* Parses "dp,pp,tp", "all" or "none" into a mask; FALSE with SSIM_CONFIG_ERROR on a bad word. */
gboolean ssim_shift_parse(const char *list, guint *mask, GError **error);
/* "dp,pp,tp" / "none"; caller frees. */
char *ssim_shift_to_string(guint mask);

/* ---- the plan ---------------------------------------------------------------------------- */

#define SSIM_PLAN_ISSUE_DEP (1u << 0) /* the op waits for its issue point (not a receive) */
#define SSIM_PLAN_FUSABLE   (1u << 1) /* a gradient piece: fused with like neighbours */
#define SSIM_PLAN_PERMUTE   (1u << 2) /* a lock-step collective-permute (may be split) */
#define SSIM_PLAN_SPLIT     (1u << 3) /* (placement) realise the permute as send + receive */

typedef struct {
    guint8 kind; /* SsimOpKind (a byte: a plan holds a million of these) */
    guint8 coll; /* SsimCollKind */
    guint8 cls;  /* SsimOpClass */
    guint8 flags;
    guint32 rank;
    guint32 stream;        /* plan stream index (ssim_plan_stream) */
    guint32 group;         /* plan group index */
    guint32 peer, tag;     /* sends and receives */
    const char *name;      /* interned */
    guint32 site;          /* gradient site (a layer's or head's gradients) on the rank, or NONE */
    guint32 issue, wait;   /* current placement */
    guint32 issue0, wait0; /* the lowering's placement */
    guint32 send_peer, recv_peer; /* permute: neighbour ranks for the split form, or NONE */
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

guint32 ssim_plan_stream(SsimPlan *plan, guint32 rank, const char *name);
guint32 ssim_plan_add_group(SsimPlan *plan, const char *name, const guint32 *ranks, guint n,
                            GError **error);
guint32 ssim_plan_find_group(const SsimPlan *plan, const char *name);
const char *ssim_plan_group_name(const SsimPlan *plan, guint32 group);

/*
 * Adds an op (kernel or communication) of `rank` and returns its index; ops of one rank must be
 * added in the order the rank issues them (the kernels' order is final).  `spec->stream` is a
 * plan stream; spec->cls names an SsimOpClass.  `order` lists same-rank ops it must follow
 * besides its issue point that are not data dependencies (kept unless the op is split).
 */
guint32 ssim_plan_add(SsimPlan *plan, const SsimOpSpec *spec, guint32 rank, guint8 cls,
                      const guint32 *order, guint n_order);
/* Records that `consumer` needs the output of `producer` (any ranks). */
void ssim_plan_data(SsimPlan *plan, guint32 producer, guint32 consumer);
/* Sets the lowering's issue/wait points (also the current ones). */
void ssim_plan_set_points(SsimPlan *plan, guint32 op, guint32 issue, guint32 wait);

guint32 ssim_plan_n_ops(const SsimPlan *plan);
guint32 ssim_plan_n_ranks(const SsimPlan *plan);
const SsimPlanOp *ssim_plan_op(const SsimPlan *plan, guint32 op);
SsimPlanOp *ssim_plan_op_mut(SsimPlan *plan, guint32 op);
gboolean ssim_plan_is_comm(const SsimPlan *plan, guint32 op);
/* The data producers / consumers of `op` (borrowed; valid until the next ssim_plan_data). */
const guint32 *ssim_plan_producers(const SsimPlan *plan, guint32 op, guint *n);
const guint32 *ssim_plan_consumers(const SsimPlan *plan, guint32 op, guint *n);
/* The first kernel of `rank` after op `after` (SSIM_NONE: from the start), or SSIM_NONE. */
guint32 ssim_plan_next_kernel(const SsimPlan *plan, guint32 rank, guint32 after);
/* The last kernel of `rank` of class `cls`, or SSIM_NONE. */
guint32 ssim_plan_last_kernel(const SsimPlan *plan, guint32 rank, guint8 cls);
/* "dp.allreduce#812 (rank 1)" into buf. */
const char *ssim_plan_op_label(const SsimPlan *plan, guint32 op, char *buf, gsize size);

/* Restores the lowering's placement (issue0/wait0, no split). */
void ssim_plan_reset(SsimPlan *plan);

/*
 * Moves communication op `op` to issue after `issue` and be waited for by `wait` (either may be
 * SSIM_NONE).  Refuses (FALSE, SSIM_CONFIG_ERROR_VALUE, plan unchanged) a move that would break a
 * data dependency, with a message naming the op and the dependency.
 */
gboolean ssim_plan_move(SsimPlan *plan, guint32 op, guint32 issue, guint32 wait, GError **error);
/* Marks a permute op to be realised as a send/receive pair (or not). */
void ssim_plan_split(SsimPlan *plan, guint32 op, gboolean split);

/* The bytes the current placement keeps alive beyond the lowering's (see the top). */
guint64 ssim_plan_extra_bytes(const SsimPlan *plan);

/*
 * The graph of the current placement, finalized and checked (see the top of the file).
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

/* ---- critical path ----------------------------------------------------------------------- */

/*
 * The ops of the critical path of a replayed graph, last first: from the op that ends last, each
 * step goes to the predecessor (dependency, stream predecessor, or a matched partner's
 * predecessor) whose end bound the op's start.  Caller frees the array (guint32 op indices).
 */
GArray *ssim_critical_path(const SsimGraph *graph, const SsimTimeline *timeline);

/* ---- policies ---------------------------------------------------------------------------- */

/* X(enum suffix, registry name, pass suffix, native schedule, one-line summary) */
#define SSIM_PLACEMENT_LIST(X)                                                                     \
    X(BASELINE, "baseline", baseline, "xla",                                                       \
      "XLA: lock-step permute, TP waited for by the next kernel, DP after the whole backward")     \
    X(MEGATRON, "megatron", megatron, "1f1b",                                                      \
      "Megatron-LM: async p2p, TP overlapping weight gradients, DP in buckets (if set)")           \
    X(COMMSHIFT, "commshift", commshift, "xla",                                                    \
      "baseline with the paper's relocations: DP per layer early, permute double-buffered, TP "    \
      "late wait")                                                                                 \
    X(AUTO, "auto", auto, "xla",                                                                   \
      "critical-path-guided search over legal moves, starting from the better of the above")

typedef enum {
#define SSIM_X(e, s, f, sch, d) SSIM_PLACEMENT_##e,
    SSIM_PLACEMENT_LIST(SSIM_X)
#undef SSIM_X
        SSIM_PLACEMENT_N
} SsimPlacementKind;

const char *ssim_placement_kind_name(SsimPlacementKind kind);
const char *ssim_placement_kind_summary(SsimPlacementKind kind);
/* The schedule the policy is defined with ("xla" or "1f1b"). */
const char *ssim_placement_kind_schedule(SsimPlacementKind kind);
gboolean ssim_placement_kind_from_name(const char *name, SsimPlacementKind *out);
/* "baseline, megatron, commshift, auto"; caller frees. */
char *ssim_placement_kind_list(void);

typedef struct {
    SsimPlacementKind kind;
    guint shifts; /* SSIM_SHIFT_* for commshift and auto (default all) */
    guint budget; /* auto: most candidate evaluations (default 24) */
} SsimPlacement;

#define SSIM_PLACEMENT_INIT                                                                        \
    {                                                                                              \
        .kind = SSIM_PLACEMENT_BASELINE, .shifts = SSIM_SHIFT_ALL, .budget = 24                    \
    }

/* How auto evaluates a candidate: replays the graph and returns its timeline (or NULL). */
typedef struct {
    SsimTimeline *(*run)(gpointer data, const SsimGraph *graph, GError **error);
    gpointer data;
} SsimPlaceEvaluator;

/* What a pass did: the moves it chose, in words, and (auto) how many candidates it tried. */
typedef struct {
    GPtrArray *moves; /* char * */
    guint evaluations;
    SsimTime start_step, best_step; /* auto: the better of baseline and commshift, and its own */
    char start[16];                 /* auto: "baseline" or "commshift" */
} SsimPlaceReport;

void ssim_place_report_init(SsimPlaceReport *report);
void ssim_place_report_clear(SsimPlaceReport *report);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimPlaceReport, ssim_place_report_clear)

/*
 * Applies `placement` to `plan` (from the lowering's placement).  `eval` is needed by auto only
 * (NULL otherwise); `report` may be NULL.
 */
gboolean ssim_place_apply(SsimPlan *plan, const SsimPlacement *placement,
                          const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error);

/* The passes, one file each (internal to the registry; exposed for tests). */
#define SSIM_X(e, s, f, sch, d)                                                                    \
    gboolean ssim_place_##f(SsimPlan *plan, const SsimPlacement *placement,                        \
                            const SsimPlaceEvaluator *eval, SsimPlaceReport *report,               \
                            GError **error);
SSIM_PLACEMENT_LIST(SSIM_X)
#undef SSIM_X

/* Helpers the passes share: the baseline's TP, DP and PP moves, and commshift's. */
void ssim_place_tp_early(SsimPlan *plan, guint32 op); /* wait at the next kernel */
void ssim_place_tp_late(SsimPlan *plan, guint32 op);  /* wait at the first consumer */
/* Issue after the backward loop: the last backward kernel, or the loop's last permute when the
 * pipeline is lock-step and that permute is not split. */
void ssim_place_dp_late(SsimPlan *plan, guint32 op);
void ssim_place_dp_early(SsimPlan *plan, guint32 op); /* issue after its site's last producer */

G_END_DECLS
