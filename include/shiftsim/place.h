/*
 * Placement: where each communication op is issued and where its consumer waits for it.
 *
 * The lowering writes a placement-neutral plan (plan.h): ops, data dependencies, and for every
 * communication op an issue point and a wait point.  A placement pass moves those points, and
 * splits lock-step permutes, before the graph is built; ssim_plan_build() then proves the graph
 * it builds (acyclic, every data dependency held).
 *
 * Who may change what, and which function checks it:
 *
 *   the lowering  adds ops, streams, groups and data dependencies (facts: ssim_plan_add,
 *                 ssim_plan_data), sets each communication op's own points
 *                 (ssim_plan_set_lowered_issue / _wait: the setter checks their shape, the
 *                 builder their data dependencies) and marks its role (ssim_plan_mark_gradient /
 *                 _mark_permute: the setter checks the op's kind).  All of it before any
 *                 placement: the setters refuse an op a placement has moved.
 *   a pass        changes the current points only through ssim_plan_move(), which checks their
 *                 shape and every same-rank data dependency, directly or through the shared
 *                 rules below (a query naming the point, a move applying it); and a permute's
 *                 form only through ssim_plan_split(), which refuses anything but a permute.  It
 *                 returns every refusal it gets, so a policy that asks for an illegal move fails
 *                 with a message naming the op and the dependency.  Where a rule does not apply
 *                 to an op (a TP collective no kernel of its rank reads, a rank with no
 *                 backward), the op keeps its points and the rule says so by returning TRUE.
 *   ssim_place_apply  resets the plan to the lowering's placement (ssim_plan_reset) before the
 *                 pass runs, so a policy is a function of the lowered plan alone.
 *   nobody        writes the extra bytes a placement keeps alive: ssim_plan_extra_bytes()
 *                 derives them from the points.
 *
 * No one else writes a plan op: ssim_plan_op() returns a const pointer.  The mover's check is the
 * contract; the builder's proof (ssim_plan_build) backs it for every candidate graph.
 *
 * Policies are a registry: one file each (src/workload/place-<name>.c) plus one line in
 * SSIM_PLACEMENT_LIST, which yields the enum, the name table and the pass table.
 *
 * Ownership: ssim_place_report_clear() frees a report's strings; ssim_critical_path() returns an
 * array the caller frees.  Getters return borrowed data.
 */
#pragma once

#include <shiftsim/plan.h>
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

/* ---- critical path ----------------------------------------------------------------------- */

/*
 * The ops of the critical path of a replayed graph, last first: from the op that ends last, each
 * step goes to the predecessor (dependency, stream predecessor, or a matched partner's
 * predecessor) whose end bound the op's start; with programs (graph.h), a predecessor in another
 * program stands for that program's last op to end, and an op in a program may also be bound by
 * what opened its program (the previous program's last op, or its last input from outside).
 * Caller frees the array (guint32 op indices).
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

/*
 * The rules the passes share (place-moves.c).  A query names the point a rule gives `op`, or
 * SSIM_NONE when the rule does not apply to it; a move applies the query's point through
 * ssim_plan_move() and returns its refusal (FALSE, `error` set, plan unchanged), or TRUE without
 * moving when the rule does not apply.
 */
/* TP collective: waited for by the next kernel after its issue point (the baseline's).  Does not
 * apply to a collective nobody waited for as lowered. */
guint32 ssim_place_tp_early_wait(const SsimPlan *plan, guint32 op);
gboolean ssim_place_tp_early(SsimPlan *plan, guint32 op, GError **error);
/* TP collective: waited for by the first kernel of its rank that reads it (commshift's). */
guint32 ssim_place_tp_late_wait(const SsimPlan *plan, guint32 op);
gboolean ssim_place_tp_late(SsimPlan *plan, guint32 op, GError **error);
/* Gradient piece: issued after the backward loop: the last backward kernel, or the loop's last
 * permute when the pipeline is lock-step and that permute is not split (the baseline's). */
guint32 ssim_place_dp_late_issue(const SsimPlan *plan, guint32 op);
gboolean ssim_place_dp_late(SsimPlan *plan, guint32 op, GError **error);
/* Gradient piece: issued after the last producer of its gradient site (commshift's). */
guint32 ssim_place_dp_early_issue(const SsimPlan *plan, guint32 op);
gboolean ssim_place_dp_early(SsimPlan *plan, guint32 op, GError **error);

G_END_DECLS
