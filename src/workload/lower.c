/*
 * Lowering: model x split x schedule -> a plan -> a placed, proved graph (include/shiftsim/
 * lower.h for the op lists, streams, classes and rank modes; lower-private.h for the files).
 *
 * ssim_lower() checks that the schedule fits the configuration, fixes the ranks it emits
 * (lower-ranks.c), builds the step lists once (lower-steps.c), emits every rank's iteration into
 * a placement-neutral plan (lower-iteration.c, lower-emit.c), lets a placement pass move the
 * plan's points (place.h) and builds the graph from the plan (plan.h), which proves it.  The
 * result keeps the plan, so that ssim_lowered_place() can re-place and rebuild without lowering
 * again; the graph, its class map and its plan map are replaced together or not at all.
 */
#include "src/workload/lower-private.h"

void ssim_lowered_free(SsimLowered *l)
{
    if (l == NULL)
        return;
    ssim_graph_free(l->graph);
    ssim_plan_free(l->plan);
    GArray *arrays[] = {l->global_of,   l->stage_of, l->group_first,
                        l->group_ranks, l->op_class, l->plan_of};
    for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
        if (arrays[i])
            g_array_free(arrays[i], TRUE);
    g_free(l);
}

const SsimGraph *ssim_lowered_graph(const SsimLowered *l)
{
    return l->graph;
}

SsimPlan *ssim_lowered_plan(SsimLowered *l)
{
    return l->plan;
}

guint32 ssim_lowered_plan_op(const SsimLowered *l, guint32 op)
{
    g_return_val_if_fail(op < l->plan_of->len, SSIM_NONE);
    return g_array_index(l->plan_of, guint32, op);
}

/* Builds the graph of the plan's current placement (and its class and plan maps). */
static gboolean rebuild(SsimLowered *l, GError **error)
{
    GArray *cls = NULL, *pof = NULL;
    SsimGraph *g = ssim_plan_build(l->plan, &cls, &pof, error);
    if (g == NULL)
        return FALSE;
    ssim_graph_free(l->graph);
    if (l->op_class)
        g_array_free(l->op_class, TRUE);
    if (l->plan_of)
        g_array_free(l->plan_of, TRUE);
    l->graph = g;
    l->op_class = cls;
    l->plan_of = pof;
    return TRUE;
}

gboolean ssim_lowered_place(SsimLowered *l, const SsimPlacement *placement,
                            const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    if (!ssim_place_apply(l->plan, placement, eval, report, error))
        return FALSE;
    return rebuild(l, error);
}

guint64 ssim_lowered_extra_bytes(const SsimLowered *l)
{
    return ssim_plan_extra_bytes(l->plan);
}

gboolean ssim_lowered_exact(const SsimLowered *l)
{
    return l->exact;
}

guint ssim_lowered_weight(const SsimLowered *l)
{
    return l->weight;
}

SsimOpClass ssim_lowered_op_class(const SsimLowered *l, guint32 op)
{
    g_return_val_if_fail(op < l->op_class->len, SSIM_OPCLASS_FWD);
    return (SsimOpClass)g_array_index(l->op_class, guint8, op);
}

double ssim_lowered_flops(const SsimLowered *l, gboolean with_recompute)
{
    double sum = 0;
    guint32 n = ssim_graph_n_ops(l->graph);
    for (guint32 i = 0; i < n; i++) {
        SsimOpClass c = ssim_lowered_op_class(l, i);
        if (c == SSIM_OPCLASS_RECOMPUTE && !with_recompute)
            continue;
        sum += ssim_graph_op(l->graph, i)->flops;
    }
    return sum * l->weight;
}

SsimLowered *ssim_lower(const SsimModel *model, const SsimParallel *par,
                        const SsimSchedule *schedule, const SsimLowerOptions *options,
                        GError **error)
{
    g_return_val_if_fail(model != NULL && par != NULL && schedule != NULL, NULL);
    SsimLowerOptions defaults = SSIM_LOWER_OPTIONS_INIT;
    if (options == NULL)
        options = &defaults;
    guint m = ssim_parallel_n_microbatches(par);
    if (ssim_schedule_pp(schedule) != par->pp || ssim_schedule_v(schedule) != par->virtual_stages ||
        ssim_schedule_m(schedule) != m) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "lower: the schedule was built for pp %u, v %u, m %u but the configuration "
                    "has pp %u, v %u, m %u",
                    ssim_schedule_pp(schedule), ssim_schedule_v(schedule),
                    ssim_schedule_m(schedule), par->pp, par->virtual_stages, m);
        return NULL;
    }
    if (!ssim_parallel_uneven(par) && model->layers % (par->pp * par->virtual_stages) != 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "lower: layers (%u) %% (pp * v) (%u) != 0", model->layers,
                    par->pp * par->virtual_stages);
        return NULL;
    }

    if (options->placement != NULL && !ssim_placement_check(options->placement, par, error))
        return NULL;

    g_autoptr(SsimLowered) L = g_new0(SsimLowered, 1);
    L->plan = ssim_plan_new();
    ssim_plan_reserve(L->plan, options->expected_ops);
    g_autoptr(GArray) graph_of = lower_ranks_init(L, par, options->exact);

    StepLists steps = {0};
    lower_steps_build(&steps, model, par);
    gboolean ok = lower_emit_iteration(L, model, par, schedule, &steps, graph_of,
                                       MAX(options->host_microbatch, 0), error);
    lower_steps_clear(&steps);
    if (!ok)
        return NULL;
    if (options->placement != NULL &&
        !ssim_place_apply(L->plan, options->placement, options->eval, options->report, error))
        return NULL;
    if (!rebuild(L, error)) {
        g_prefix_error(error, "lower: ");
        return NULL;
    }
    return g_steal_pointer(&L);
}
