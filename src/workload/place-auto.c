/*
 * Placement `auto`: a greedy search over extensions and gradient subsets on top of alpa, guided by
 * the critical path.
 *
 * The moves are grouped so that one decision covers ops that run the same program, and every
 * member of a collective's group makes the same decision (replicas must fuse their gradient
 * pieces alike, or their reductions would not match): the TP collectives of one TP group issued
 * after the same kernel (waited for by the next kernel, or by the first one that reads it:
 * late-tp); the gradient pieces of one layer (or head, or embedding) of one DP group, twice: moved
 * into apply_grad or left in the backward program (commshift's relocation, per gradient as the
 * author's index list allows), and, when left, issued right after their layer or after the
 * backward (early-dp); and the pipeline transfers of all stages together (whole, or asynchronous:
 * async-pp; both ends must agree).  Only the extensions ssim_placement_shifts() allows are
 * searched; those XLA's latency-hiding scheduler implies (lhs) are on from the start.
 *
 * Search: evaluate alpa and commshift and start from the better (ties go to commshift).  Then
 * repeatedly take the critical path of the current best, charge each group with the time its ops
 * spend on that path, and flip the untried group with the most; keep the flip when the step gets
 * shorter, undo it otherwise.  When no group on the path is left untried, the other groups are
 * tried in order (a reduction moved late can help by no longer slowing the compute it overlaps).
 * It stops after placement->budget evaluations.  Because only improvements are kept, the result
 * is never worse than the start, hence never worse than either policy.
 *
 * Invariant: every flip goes through the shared rules (place-moves.c), i.e. the plan's checked
 * primitives.  A refusal ends the search with the plan's message rather than counting as a bad
 * candidate: a flip only asks for points the policies' rules give, so a refused one means a rule
 * is wrong for this plan.  The graph builder checks each candidate before it is evaluated.
 */
#include <shiftsim/opclass.h>
#include <shiftsim/place.h>

#include <string.h>

typedef enum { G_TP, G_DP_EARLY, G_DP_MOVE, G_PP } GroupKind;

typedef struct {
    char *label;
    GroupKind kind;
    gboolean shifted; /* current state: moved (late-tp, early-dp, to apply_grad, async) or not */
    gboolean tried;
    GArray *ops; /* guint32 plan ops */
    SsimTime on_path;
} Group;

/* The state of the gradient pieces, which two kinds of groups share: per plan op, whether it is
 * in apply_grad and whether (in the backward) it is issued early. */
typedef struct {
    guint8 *moved, *early;
} DpState;

/* Places gradient piece `op` by its state. */
static gboolean dp_place(SsimPlan *plan, const DpState *st, guint32 op, GError **error)
{
    if (st->moved[op] && ssim_place_dp_apply_program(plan, op) != SSIM_NONE)
        return ssim_place_dp_to_apply(plan, op, error);
    return st->early[op] ? ssim_place_dp_early(plan, op, error)
                         : ssim_place_dp_late(plan, op, error);
}

static void group_clear(gpointer p)
{
    Group *g = p;
    g_free(g->label);
    g_array_free(g->ops, TRUE);
}

/* Puts every op of `g` in state `shifted`; FALSE with the plan's refusal (the group's state then
 * unchanged in `g`, some of its ops possibly moved). */
static gboolean group_set(SsimPlan *plan, DpState *st, Group *g, gboolean shifted, GError **error)
{
    for (guint i = 0; i < g->ops->len; i++) {
        guint32 op = g_array_index(g->ops, guint32, i);
        gboolean ok = TRUE;
        switch (g->kind) {
        case G_TP:
            ok = shifted ? ssim_place_tp_late(plan, op, error)
                         : ssim_place_tp_early(plan, op, error);
            break;
        case G_DP_EARLY:
            st->early[op] = (guint8)shifted;
            ok = dp_place(plan, st, op, error);
            break;
        case G_DP_MOVE:
            st->moved[op] = (guint8)shifted;
            ok = dp_place(plan, st, op, error);
            break;
        case G_PP:
            if (ssim_plan_op(plan, op)->flags & SSIM_PLAN_PERMUTE)
                ok = ssim_plan_split(plan, op, shifted, error);
            else
                ok = shifted ? ssim_place_pp_in_program(plan, op, error)
                             : ssim_place_pp_after_program(plan, op, error);
            break;
        }
        if (!ok)
            return FALSE;
    }
    g->shifted = shifted;
    return TRUE;
}

/* Re-anchors the reductions left after the loop once the loop's end moved (a permute flip). */
static gboolean relate_dp(SsimPlan *plan, DpState *st, GError **error)
{
    guint32 n = ssim_plan_n_ops(plan);
    for (guint32 i = 0; i < n; i++)
        if ((ssim_plan_op(plan, i)->flags & SSIM_PLAN_FUSABLE) && !st->early[i] && !st->moved[i] &&
            !dp_place(plan, st, i, error))
            return FALSE;
    return TRUE;
}

/* Flips group `g` to `shifted` and, after a transfer flip, re-anchors the late reductions. */
static gboolean flip(SsimPlan *plan, DpState *st, Group *g, gboolean shifted, GError **error)
{
    if (!group_set(plan, st, g, shifted, error))
        return FALSE;
    return g->kind != G_PP || relate_dp(plan, st, error);
}

/* "layer 5", "embed", "head" */
static void site_name(guint32 site, char *buf, gsize size)
{
    if (site == SSIM_SITE_EMBED)
        g_strlcpy(buf, "embed", size);
    else if (site == SSIM_SITE_HEAD)
        g_strlcpy(buf, "head", size);
    else
        g_snprintf(buf, size, "layer %u", site);
}

/* Adds plan op `op` to the group labelled `key` (creating it), recording it in `of` (one of two
 * group slots per op). */
static void group_add(GArray *groups, GHashTable *index, const char *key, GroupKind kind,
                      guint32 op, GArray *of, guint slot)
{
    gpointer v = g_hash_table_lookup(index, key);
    guint gi;
    if (v == NULL) {
        Group g = {.label = g_strdup(key),
                   .kind = kind,
                   .ops = g_array_new(FALSE, FALSE, sizeof(guint32))};
        g_array_append_val(groups, g);
        gi = groups->len - 1;
        g_hash_table_insert(index, g_strdup(key), GUINT_TO_POINTER(gi + 1));
    } else {
        gi = GPOINTER_TO_UINT(v) - 1;
    }
    g_array_append_val(g_array_index(groups, Group, gi).ops, op);
    g_array_index(of, guint32, 2 * op + slot) = gi;
}

/* The movable groups of `plan` under `search`; `group_of` gets each plan op's groups (two slots
 * per op, SSIM_NONE where none). */
static GArray *find_groups(SsimPlan *plan, guint search, GArray *group_of)
{
    GArray *groups = g_array_new(FALSE, TRUE, sizeof(Group));
    g_array_set_clear_func(groups, group_clear);
    g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint32 n = ssim_plan_n_ops(plan);
    g_array_set_size(group_of, 2 * (gsize)n);
    for (guint32 i = 0; i < 2 * n; i++)
        g_array_index(group_of, guint32, i) = SSIM_NONE;
    for (guint32 i = 0; i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (o->kind == SSIM_OP_COMPUTE)
            continue;
        char key[160], site[32];
        if ((search & SSIM_SHIFT_TP) && o->cls == SSIM_OPCLASS_TP && o->issue != SSIM_NONE) {
            guint32 first = ssim_place_tp_late_wait(plan, i);
            if (first == SSIM_NONE || first == ssim_plan_next_kernel(plan, o->rank, o->issue))
                continue; /* nothing to overlap: both placements agree */
            g_snprintf(key, sizeof key, "%s: %s after %s (late-tp)",
                       ssim_plan_group_name(plan, o->group), o->name,
                       ssim_plan_op(plan, o->issue)->name);
            group_add(groups, index, key, G_TP, i, group_of, 0);
        } else if ((o->flags & SSIM_PLAN_FUSABLE) && o->site != SSIM_NONE) {
            site_name(o->site, site, sizeof site);
            if (ssim_place_dp_apply_program(plan, i) != SSIM_NONE) {
                g_snprintf(key, sizeof key, "%s: %s to apply_grad (commshift)",
                           ssim_plan_group_name(plan, o->group), site);
                group_add(groups, index, key, G_DP_MOVE, i, group_of, 0);
            }
            if (search & SSIM_SHIFT_DP) {
                g_snprintf(key, sizeof key, "%s: %s issued early (early-dp)",
                           ssim_plan_group_name(plan, o->group), site);
                group_add(groups, index, key, G_DP_EARLY, i, group_of, 1);
            }
        } else if ((search & SSIM_SHIFT_PP) &&
                   ((o->flags & SSIM_PLAN_PERMUTE) ||
                    (o->kind == SSIM_OP_SEND &&
                     ssim_place_pp_async_program(plan, i) != SSIM_NONE))) {
            group_add(groups, index, "every pipeline transfer (async-pp)", G_PP, i, group_of, 0);
        }
    }
    return groups;
}

/* Builds and replays the plan's current placement; the timeline and graph come back. */
static SsimTime evaluate(const SsimPlan *plan, const SsimPlaceEvaluator *eval, SsimGraph **graph,
                         SsimTimeline **tl, GArray **plan_of, GError **error)
{
    *graph = ssim_plan_build(plan, NULL, plan_of, error);
    if (*graph == NULL)
        return -1;
    *tl = eval->run(eval->data, *graph, error);
    if (*tl == NULL) {
        ssim_graph_free(*graph);
        *graph = NULL;
        g_array_free(*plan_of, TRUE);
        *plan_of = NULL;
        return -1;
    }
    return (*tl)->makespan;
}

typedef struct {
    SsimGraph *graph;
    SsimTimeline *tl;
    GArray *plan_of;
} Eval;

static void eval_clear(Eval *e)
{
    ssim_graph_free(e->graph);
    ssim_timeline_free(e->tl);
    if (e->plan_of)
        g_array_free(e->plan_of, TRUE);
    memset(e, 0, sizeof *e);
}

/* Applies alpa or commshift (with the extensions `forced`) and evaluates it. */
static SsimTime try_policy(SsimPlan *plan, const SsimPlacement *placement, gboolean shift,
                           guint forced, const SsimPlaceEvaluator *eval, Eval *out,
                           SsimPlaceReport *report, GError **error)
{
    SsimPlacement p = *placement;
    p.kind = shift ? SSIM_PLACEMENT_COMMSHIFT : SSIM_PLACEMENT_ALPA;
    p.shifts = forced;
    p.lhs = FALSE;
    ssim_plan_reset(plan);
    gboolean ok = shift ? ssim_place_commshift(plan, &p, eval, report, error)
                        : ssim_place_alpa(plan, &p, eval, NULL, error);
    if (!ok)
        return -1;
    return evaluate(plan, eval, &out->graph, &out->tl, &out->plan_of, error);
}

static gint by_path(gconstpointer a, gconstpointer b, gpointer data)
{
    const Group *g = data;
    guint x = *(const guint *)a, y = *(const guint *)b;
    if (g[x].on_path != g[y].on_path)
        return g[x].on_path > g[y].on_path ? -1 : 1;
    return x < y ? -1 : x > y;
}

gboolean ssim_place_auto(SsimPlan *plan, const SsimPlacement *placement,
                         const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    if (eval == NULL || eval->run == NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: auto needs an evaluator to replay its candidates");
        return FALSE;
    }
    guint forced = placement->lhs ? SSIM_SHIFT_TP | SSIM_SHIFT_DP : 0;
    guint search = ssim_placement_shifts(placement) & ~forced;
    Eval best = {0}, cand = {0};
    g_auto(SsimPlaceReport) shift_report = {0};
    ssim_place_report_init(&shift_report);
    SsimTime t_base = try_policy(plan, placement, FALSE, forced, eval, &best, NULL, error);
    if (t_base < 0)
        return FALSE;
    SsimTime t_shift = try_policy(plan, placement, TRUE, forced, eval, &cand, &shift_report, error);
    if (t_shift < 0) {
        eval_clear(&best);
        return FALSE;
    }
    gboolean from_shift = t_shift <= t_base;
    SsimTime t_best = from_shift ? t_shift : t_base;
    if (from_shift) {
        eval_clear(&best);
        best = cand;
        memset(&cand, 0, sizeof cand);
    } else {
        eval_clear(&cand);
        SsimPlacement p = *placement;
        p.kind = SSIM_PLACEMENT_ALPA;
        p.shifts = forced;
        p.lhs = FALSE;
        ssim_plan_reset(plan);
        if (!ssim_place_alpa(plan, &p, eval, NULL, error)) {
            eval_clear(&best);
            return FALSE;
        }
    }
    guint evaluations = 2;

    g_autoptr(GArray) group_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_autoptr(GArray) groups = find_groups(plan, search, group_of);
    Group *gs = (Group *)groups->data;
    guint32 n = ssim_plan_n_ops(plan);
    g_autofree guint8 *moved = g_new0(guint8, MAX(n, 1));
    g_autofree guint8 *early = g_new0(guint8, MAX(n, 1));
    DpState st = {moved, early};
    /* The state of each op and group in the start placement. */
    for (guint32 i = 0; i < n; i++) {
        const SsimPlanOp *o = ssim_plan_op(plan, i);
        if (!(o->flags & SSIM_PLAN_FUSABLE))
            continue;
        moved[i] = o->program != o->program0;
        early[i] = (forced & SSIM_SHIFT_DP) != 0;
    }
    for (guint i = 0; i < groups->len; i++) {
        guint32 op = g_array_index(gs[i].ops, guint32, 0);
        const SsimPlanOp *o = ssim_plan_op(plan, op);
        gs[i].shifted =
            gs[i].kind == G_PP ? (o->flags & SSIM_PLAN_SPLIT) != 0 ||
                                     (o->kind == SSIM_OP_SEND && o->program != o->program0)
            : gs[i].kind == G_DP_MOVE  ? moved[op]
            : gs[i].kind == G_DP_EARLY ? early[op]
                                       : o->wait != ssim_plan_next_kernel(plan, o->rank, o->issue);
    }
    g_autoptr(GPtrArray) kept = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
    gboolean ok = TRUE;
    while (ok && evaluations < MAX(placement->budget, 2u) && groups->len > 0) {
        /* Charge each group with its ops' time on the current critical path. */
        for (guint i = 0; i < groups->len; i++)
            gs[i].on_path = 0;
        g_autoptr(GArray) path = ssim_critical_path(best.graph, best.tl);
        for (guint i = 0; i < path->len; i++) {
            guint32 op = g_array_index(path, guint32, i);
            guint32 p = g_array_index(best.plan_of, guint32, op);
            for (guint slot = 0; p != SSIM_NONE && slot < 2; slot++) {
                guint32 gi = g_array_index(group_of, guint32, 2 * p + slot);
                if (gi != SSIM_NONE)
                    gs[gi].on_path += best.tl->end[op] - best.tl->start[op];
            }
        }
        g_array_set_size(order, 0);
        for (guint i = 0; i < groups->len; i++)
            if (!gs[i].tried)
                g_array_append_val(order, i);
        if (order->len == 0)
            break;
        g_array_sort_with_data(order, by_path, gs);
        guint pick = g_array_index(order, guint, 0);
        Group *g = &gs[pick];
        g->tried = TRUE;
        gboolean before = g->shifted;
        if (!flip(plan, &st, g, !before, error)) {
            ok = FALSE;
            break;
        }
        SsimTime t = evaluate(plan, eval, &cand.graph, &cand.tl, &cand.plan_of, error);
        evaluations++;
        if (t < 0) {
            ok = FALSE;
            break;
        }
        if (t < t_best) {
            g_ptr_array_add(kept,
                            g_strdup_printf("%s: %s (%.3f ms shorter)", g->label,
                                            g->shifted ? "on" : "off", (double)(t_best - t) / 1e6));
            t_best = t;
            eval_clear(&best);
            best = cand;
            memset(&cand, 0, sizeof cand);
            for (guint i = 0; i < groups->len; i++)
                gs[i].tried = FALSE;
            g->tried = TRUE; /* flipping it straight back cannot help */
        } else {
            eval_clear(&cand);
            if (!flip(plan, &st, g, before, error)) {
                ok = FALSE;
                break;
            }
        }
    }
    eval_clear(&best);
    eval_clear(&cand);
    if (!ok)
        return FALSE;
    if (report) {
        report->evaluations = evaluations;
        report->start_step = from_shift ? t_shift : t_base;
        report->best_step = t_best;
        g_strlcpy(report->start, from_shift ? "commshift" : "alpa", sizeof report->start);
        for (guint i = 0; from_shift && i < shift_report.moves->len; i++)
            g_ptr_array_add(report->moves, g_strdup(g_ptr_array_index(shift_report.moves, i)));
        for (guint i = 0; i < kept->len; i++)
            g_ptr_array_add(report->moves, g_strdup(g_ptr_array_index(kept, i)));
        if (kept->len == 0)
            g_ptr_array_add(
                report->moves,
                g_strdup_printf("no flip of the %u move groups shortened the step", groups->len));
    }
    return TRUE;
}
