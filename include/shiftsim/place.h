/*
 * Placement: where each communication op is issued, in which program it runs, and where its
 * consumer waits for it.
 *
 * The lowering writes a placement-neutral plan (plan.h): ops, data dependencies, programs, and
 * for every communication op an issue point and a wait point.  A placement pass moves those
 * points, moves communication between programs, and splits lock-step permutes, before the graph
 * is built; ssim_plan_build() then proves the graph it builds (acyclic, every data dependency
 * held).
 *
 * Vocabulary.  A *policy* is a baseline compiler's placement or the paper's optimisation:
 *
 *   alpa       the paper's baseline, Alpa on XLA (schedule `alpa`): TP collectives synchronous
 *              (the next kernel waits), the stage's gradient all-reduce fused at the end of its
 *              last backward program, transfers between stages after their programs
 *   commshift  the paper's relocation: alpa, with the gradient all-reduce (of the gradients
 *              `grads` selects) moved from the last backward program into apply_grad
 *   xla        GSPMD's lock-step pipeline (schedule `xla`) with XLA's defaults: collective-permute
 *              per iteration, TP synchronous, one gradient all-reduce after the backward loop
 *   megatron   Megatron-LM (schedule `1f1b`): the lowering's own placement
 *   auto       a search over the extensions and gradient subsets, on top of alpa
 *
 * and an *extension* is one of our own moves, which combines with any policy (`shifts`):
 *
 *   early-dp   a gradient piece issued right after its layer's last backward kernel
 *   async-pp   a pipeline transfer that does not wait: a lock-step permute as a double-buffered
 *              send/receive; under programs, a send that leaves from inside its producing
 *              program as soon as its input is computed
 *   late-tp    a TP collective waited for by the first kernel that reads it
 *
 * XLA's latency-hiding scheduler (`lhs`) is an option of the baseline's compiler: collectives
 * inside a program are asynchronous, which applies late-tp and early-dp to alpa, commshift and
 * xla alike (both sides of a comparison).
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

#include <shiftsim/model.h>
#include <shiftsim/parallel.h>
#include <shiftsim/plan.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

/* The extensions (`--shift early-dp,async-pp,late-tp`; dp, pp and tp are the old names). */
#define SSIM_SHIFT_DP  (1u << 0) /* early-dp: a layer's gradient reduction right after it */
#define SSIM_SHIFT_PP  (1u << 1) /* async-pp: transfers that do not wait (double buffering) */
#define SSIM_SHIFT_TP  (1u << 2) /* late-tp: TP collective waited for at its first consumer */
#define SSIM_SHIFT_ALL (SSIM_SHIFT_DP | SSIM_SHIFT_PP | SSIM_SHIFT_TP)
/* The policy's own default: no extension, or for auto, all of them to search. */
#define SSIM_SHIFT_DEFAULT (1u << 31)

/* Parses "early-dp,async-pp,late-tp" (or dp, pp, tp), "all" or "none" into a mask; FALSE with
 * SSIM_CONFIG_ERROR on a bad word. */
gboolean ssim_shift_parse(const char *list, guint *mask, GError **error);
/* "early-dp,async-pp,late-tp" / "none"; caller frees. */
char *ssim_shift_to_string(guint mask);

/*
 * Which gradients commshift moves, like the index list of the author's pass: all, none, or a
 * list of gradient sites (plan.h: layer indices and ranges, `embed`, `head`), e.g. "0-13,embed".
 */
#define SSIM_SITE_SET_MAX 32
typedef struct {
    gboolean all;
    guint n; /* ranges below, when not all */
    guint32 lo[SSIM_SITE_SET_MAX], hi[SSIM_SITE_SET_MAX];
} SsimSiteSet;

#define SSIM_SITE_SET_ALL                                                                          \
    {                                                                                              \
        .all = TRUE, .n = 0                                                                        \
    }

/* Parses a site list (see above); FALSE with SSIM_CONFIG_ERROR naming the bad item. */
gboolean ssim_site_set_parse(const char *text, SsimSiteSet *set, GError **error);
gboolean ssim_site_set_has(const SsimSiteSet *set, guint32 site);
/* FALSE with SSIM_CONFIG_ERROR when the set names a layer the model lacks. */
gboolean ssim_site_set_check(const SsimSiteSet *set, const SsimModel *model, GError **error);
/* "all", "none" or the list ("0-13,embed"); caller frees. */
char *ssim_site_set_to_string(const SsimSiteSet *set);

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
    X(ALPA, "alpa", alpa, "alpa",                                                                  \
      "the paper's baseline, Alpa on XLA: programs per phase, gradient all-reduce at the end of "  \
      "the last backward program")                                                                 \
    X(COMMSHIFT, "commshift", commshift, "alpa",                                                   \
      "the paper's relocation: the gradient all-reduce moved from the last backward program "      \
      "into apply_grad")                                                                           \
    X(XLA, "xla", xla, "xla",                                                                      \
      "GSPMD lock-step pipeline: collective-permute per iteration, TP synchronous, DP after the "  \
      "backward loop")                                                                             \
    X(MEGATRON, "megatron", megatron, "1f1b",                                                      \
      "Megatron-LM: async p2p, TP overlapping weight gradients, DP in buckets "                    \
      "(--overlap-grad-reduce)")                                                                   \
    X(AUTO, "auto", auto, "alpa",                                                                  \
      "critical-path-guided search over extensions and gradient subsets on top of alpa")

typedef enum {
#define SSIM_X(e, s, f, sch, d) SSIM_PLACEMENT_##e,
    SSIM_PLACEMENT_LIST(SSIM_X)
#undef SSIM_X
        SSIM_PLACEMENT_N
} SsimPlacementKind;

const char *ssim_placement_kind_name(SsimPlacementKind kind);
const char *ssim_placement_kind_summary(SsimPlacementKind kind);
/* The schedule the policy is defined with ("alpa", "xla" or "1f1b"). */
const char *ssim_placement_kind_schedule(SsimPlacementKind kind);
/* Also accepts the old name "baseline" for xla (ssim_placement_alias_note() says so). */
gboolean ssim_placement_kind_from_name(const char *name, SsimPlacementKind *out);
/* The one-line note to print when `name` is an old alias ("baseline"), or NULL. */
const char *ssim_placement_alias_note(const char *name);
/* "alpa, commshift, xla, megatron, auto"; caller frees. */
char *ssim_placement_kind_list(void);
/* The policy a schedule is run with when only the schedule is named: alpa for alpa and
 * alpa-gpipe, xla for xla, megatron for gpipe, 1f1b and interleaved (and an unknown name). */
SsimPlacementKind ssim_placement_kind_for_schedule(const char *schedule);

typedef struct {
    SsimPlacementKind kind;
    guint shifts;      /* extensions (SSIM_SHIFT_*), or SSIM_SHIFT_DEFAULT */
    guint budget;      /* auto: most candidate evaluations (default 24) */
    gboolean lhs;      /* XLA's latency-hiding scheduler (alpa, commshift, xla, auto) */
    SsimSiteSet grads; /* the gradients commshift moves (default all) */
} SsimPlacement;

#define SSIM_PLACEMENT_INIT                                                                        \
    {                                                                                              \
        .kind = SSIM_PLACEMENT_ALPA, .shifts = SSIM_SHIFT_DEFAULT, .budget = 24, .lhs = FALSE,     \
        .grads = SSIM_SITE_SET_ALL                                                                 \
    }

/* The extensions `placement` applies (auto: those it may search): its shifts, or the policy's
 * default, plus late-tp and early-dp under lhs (not for megatron). */
guint ssim_placement_shifts(const SsimPlacement *placement);
/*
 * Parses a policy as written in a list: "NAME[+EXT...]" (e.g. "alpa+early-dp"; "commshift+all"),
 * NAME a policy (or the alias "baseline"), EXT an extension.  Sets placement->kind, and shifts to
 * the extensions named (SSIM_SHIFT_DEFAULT when none); FALSE with SSIM_CONFIG_ERROR otherwise.
 */
gboolean ssim_placement_parse(const char *text, SsimPlacement *placement, GError **error);
/* "commshift", "alpa+early-dp+late-tp": the policy and the extensions it was given explicitly
 * (not its defaults, not lhs); caller frees. */
char *ssim_placement_to_string(const SsimPlacement *placement);
/*
 * The gradient bucket (bytes per GPU) a framework running policy `kind` uses by default: for
 * megatron, Megatron-LM's DistributedDataParallelConfig default with --overlap-grad-reduce,
 * max(40,000,000, 1,000,000 dp) parameters of gradients in `dtype`, for `par`'s dp; 0 (one
 * reduction) for the others, and under ZeRO-2 and 3, which reduce gradients unit by unit.
 * Drivers apply it when the user gave no bucket.
 */
guint64 ssim_placement_default_bucket(SsimPlacementKind kind, const SsimParallel *par,
                                      SsimDtype dtype);
/*
 * Whether `placement` can place `par`'s communication: commshift and early-dp move the gradient
 * reductions of the step's end, which ZeRO-2 and 3 (with dp > 1) do not have, as they reduce
 * every microbatch unit by unit.  FALSE with SSIM_CONFIG_ERROR otherwise.
 */
gboolean ssim_placement_check(const SsimPlacement *placement, const SsimParallel *par,
                              GError **error);

/* How auto evaluates a candidate: replays the graph and returns its timeline (or NULL). */
typedef struct {
    SsimTimeline *(*run)(gpointer data, const SsimGraph *graph, GError **error);
    gpointer data;
} SsimPlaceEvaluator;

/* What a pass did: the moves it chose, in words, and (auto) how many candidates it tried. */
typedef struct {
    GPtrArray *moves; /* char * */
    guint evaluations;
    SsimTime start_step, best_step; /* auto: the better of alpa and commshift, and its own */
    char start[16];                 /* auto: "alpa" or "commshift" */
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
 * SSIM_NONE when the rule does not apply to it; a move applies the query's point through the
 * plan's checked primitives (ssim_plan_move, ssim_plan_move_program) and returns its refusal
 * (FALSE, `error` set, plan unchanged), or TRUE without moving when the rule does not apply.
 */
/* TP collective: waited for by the next kernel after its issue point (synchronous, XLA's default).
 * Does not apply to a collective nobody waited for as lowered. */
guint32 ssim_place_tp_early_wait(const SsimPlan *plan, guint32 op);
gboolean ssim_place_tp_early(SsimPlan *plan, guint32 op, GError **error);
/* TP collective: waited for by the first kernel of its rank that reads it (late-tp). */
guint32 ssim_place_tp_late_wait(const SsimPlan *plan, guint32 op);
gboolean ssim_place_tp_late(SsimPlan *plan, guint32 op, GError **error);
/* Gradient piece, in the program it was lowered in: issued after the backward (the last backward
 * kernel, or the loop's last permute when the pipeline is lock-step and that permute is not
 * split), so the pieces fuse into one all-reduce at the end of the last backward program. */
guint32 ssim_place_dp_late_issue(const SsimPlan *plan, guint32 op);
gboolean ssim_place_dp_late(SsimPlan *plan, guint32 op, GError **error);
/* Gradient piece, in the program it was lowered in: issued after the last producer of its
 * gradient site (early-dp). */
guint32 ssim_place_dp_early_issue(const SsimPlan *plan, guint32 op);
gboolean ssim_place_dp_early(SsimPlan *plan, guint32 op, GError **error);
/* Gradient piece: moved into its rank's apply_grad program, issued after the backward as in
 * dp_late, waited for by the optimizer (commshift).  The query names the program; the rule does
 * not apply on a plan without programs. */
guint32 ssim_place_dp_apply_program(const SsimPlan *plan, guint32 op);
gboolean ssim_place_dp_to_apply(SsimPlan *plan, guint32 op, GError **error);
/* Pipeline send under programs: outside its producing program, after it (the baseline's), or
 * inside it, leaving as soon as its input is computed (async-pp).  The query names the program the
 * async form runs in (its issue point's), SSIM_NONE when the send has none. */
guint32 ssim_place_pp_async_program(const SsimPlan *plan, guint32 op);
gboolean ssim_place_pp_after_program(SsimPlan *plan, guint32 op, GError **error);
gboolean ssim_place_pp_in_program(SsimPlan *plan, guint32 op, GError **error);

/* What the baseline compilers do (alpa, commshift and xla start from it): every TP collective
 * synchronous, every gradient piece after the backward in its program, every permute whole and
 * every send after its program. */
gboolean ssim_place_compiler_defaults(SsimPlan *plan, GError **error);
/* Applies the extensions in `shifts` (SSIM_SHIFT_*) on top of what the plan holds: early-dp only
 * to gradient pieces still in their backward program.  `report` (may be NULL) gets a line for
 * each that moved something. */
gboolean ssim_place_extensions(SsimPlan *plan, guint shifts, SsimPlaceReport *report,
                               GError **error);

G_END_DECLS
