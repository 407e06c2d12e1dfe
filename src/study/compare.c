/*
 * The comparison of placement policies (include/shiftsim/compare.h): the runs, the critical-path
 * measure of each and the attribution of the difference.  What is written of it (table, CSV,
 * JSON, plots) is in compare-report.c.
 *
 * Each run keeps its graph and timeline (the reports draw them) and the time of each group of
 * its critical path, in a hash table keyed by the group's label.  The attribution reads two such
 * tables, so its order cannot depend on hashing: the rows are sorted by the size of the change,
 * then by label.
 */
#include <shiftsim/compare.h>

#include <shiftsim/place.h>
#include <shiftsim/budget.h>

#include <string.h>

#define GAPS "waiting (gaps on the path)"

typedef struct {
    SsimComparePolicy p;
    GHashTable *path; /* group label -> SsimTime on the critical path (boxed gint64) */
} Run;

struct SsimCompare {
    const SsimModel *model;
    const SsimCluster *cluster;
    Run *runs;
    guint n;
};

guint ssim_compare_policies_parse(const char *list, SsimPlacement *policies, GError **error)
{
    g_auto(GStrv) words = g_strsplit(list ? list : SSIM_COMPARE_POLICIES_DEFAULT, ",", -1);
    guint n = 0;
    for (guint i = 0; words[i]; i++) {
        const char *w = g_strstrip(words[i]);
        if (*w == '\0')
            continue;
        if (n == SSIM_COMPARE_MAX_POLICIES) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "too many entries");
            return 0;
        }
        SsimPlacement p = SSIM_PLACEMENT_INIT;
        if (!ssim_placement_parse(w, &p, error))
            return 0;
        policies[n++] = p;
    }
    if (n == 0)
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "give at least one policy");
    return n;
}

static void run_clear(Run *r)
{
    ssim_lowered_free(r->p.lowered);
    ssim_timeline_free(r->p.timeline);
    ssim_place_report_clear(&r->p.report);
    if (r->path)
        g_hash_table_destroy(r->path);
}

void ssim_compare_free(SsimCompare *cmp)
{
    if (cmp == NULL)
        return;
    for (guint i = 0; i < cmp->n; i++)
        run_clear(&cmp->runs[i]);
    g_free(cmp->runs);
    g_free(cmp);
}

/* The attribution group of graph op `op`: "stage S <what>". */
static char *group_label(SsimLowered *l, guint32 op)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    const SsimOp *o = ssim_graph_op(g, op);
    guint stage = ssim_lowered_stage(l, o->rank);
    SsimOpClass cls = ssim_lowered_op_class(l, op);
    const char *what;
    switch (cls) {
    case SSIM_OPCLASS_TP: {
        const SsimPlan *plan = ssim_lowered_plan(l);
        guint32 p = ssim_lowered_plan_op(l, op);
        guint32 issue = p == SSIM_NONE ? SSIM_NONE : ssim_plan_op(plan, p)->issue;
        gboolean bwd = issue != SSIM_NONE && ssim_plan_op(plan, issue)->cls == SSIM_OPCLASS_BWD;
        what = bwd ? "tp collectives (backward)" : "tp collectives (forward)";
        break;
    }
    case SSIM_OPCLASS_CP:
        what = "context-parallel key-value ring";
        break;
    case SSIM_OPCLASS_PP:
        what = "pipeline transfers";
        break;
    case SSIM_OPCLASS_DP:
        what = "gradient reduction";
        break;
    case SSIM_OPCLASS_OPTIMIZER:
        /* Whichever stage ends last puts its optimizer on the path; it is the same work. */
        return g_strdup("optimizer step (the stage that ends last)");
    default:
        what = "compute";
        break;
    }
    return g_strdup_printf("stage %u %s", stage, what);
}

static void path_add(GHashTable *h, const char *key, SsimTime t)
{
    gint64 *v = g_hash_table_lookup(h, key);
    if (v == NULL) {
        v = g_new0(gint64, 1);
        g_hash_table_insert(h, g_strdup(key), v);
    }
    *v += t;
}

/* Files the critical path of `r` under its group labels, and the gaps as "waiting". */
static void measure_path(Run *r)
{
    r->path = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    const SsimTimeline *t = r->p.timeline;
    g_autoptr(GArray) path = ssim_critical_path(ssim_lowered_graph(r->p.lowered), t);
    SsimTime next_start = t->makespan;
    for (guint i = 0; i < path->len; i++) {
        guint32 op = g_array_index(path, guint32, i);
        SsimTime s = t->start[op], e = t->end[op];
        g_autofree char *label = group_label(r->p.lowered, op);
        path_add(r->path, label, e - s);
        path_add(r->path, GAPS, next_start - e);
        next_start = s;
    }
    path_add(r->path, GAPS, next_start);
}

/* Policy `p` as it runs in `spec`: its kind and extensions, with what every policy shares. */
static SsimPlacement policy_placement(const SsimCompareSpec *spec, const SsimPlacement *p)
{
    SsimPlacement pl = spec->placement;
    pl.kind = p->kind;
    guint shared = spec->placement.shifts;
    if (p->shifts & SSIM_SHIFT_DEFAULT)
        pl.shifts = shared;
    else
        pl.shifts = p->shifts | (shared & SSIM_SHIFT_DEFAULT ? 0 : shared);
    return pl;
}

/* The split policy `pl` runs: its schedule (unless forced), its name, and for megatron
 * Megatron-LM's default bucket unless the spec chose one. */
static void policy_par(const SsimCompareSpec *spec, const SsimPlacement *pl, SsimParallel *par)
{
    if (!spec->force_schedule)
        g_strlcpy(par->schedule, ssim_placement_kind_schedule(pl->kind), sizeof par->schedule);
    g_strlcpy(par->placement, ssim_placement_kind_name(pl->kind), sizeof par->placement);
    if (!spec->bucket_given)
        par->dp_bucket_bytes = ssim_placement_default_bucket(pl->kind, par, spec->model->dtype);
}

/* The cheapest recompute mode whose memory estimate fits every policy's schedule (or the forced
 * one), so that all run the same work; the most thorough (full) when none fits. */
static SsimRecompute pick_recompute(const SsimCompareSpec *spec, const SsimPlacement *policies,
                                    guint n)
{
    int mode = SSIM_RECOMPUTE_NONE;
    for (; mode + 1 < SSIM_RECOMPUTE_LADDER; mode++) {
        gboolean fits = TRUE;
        for (guint i = 0; i < n && fits; i++) {
            SsimParallel probe_par = spec->par;
            SsimPlacement pl = policy_placement(spec, &policies[i]);
            policy_par(spec, &pl, &probe_par);
            if (!ssim_parallel_set_recompute(&probe_par, spec->model, (SsimRecompute)mode, NULL))
                return SSIM_RECOMPUTE_NONE; /* ssim_compare_run() refuses the split itself */
            SsimSimConfig probe = {
                .model = spec->model, .cluster = spec->cluster, .par = &probe_par};
            SsimMemory peak;
            fits = ssim_simulate_memory(&probe, &peak, NULL);
        }
        if (fits)
            break;
    }
    return (SsimRecompute)mode;
}

SsimCompare *ssim_compare_run(const SsimCompareSpec *spec, const SsimPlacement *policies, guint n,
                              GError **error)
{
    g_return_val_if_fail(spec != NULL && policies != NULL && n > 0, NULL);
    if (!ssim_site_set_check(&spec->placement.grads, spec->model, error))
        return NULL;
    SsimParallel par = spec->par;
    if (spec->pick_recompute && !spec->ignore_memory &&
        !ssim_parallel_set_recompute(&par, spec->model, pick_recompute(spec, policies, n), error))
        return NULL;

    /* Each policy keeps its graph (explicit per GPU under exact: the report needs the timeline)
     * and timeline until the report is written. */
    if (ssim_parallel_validate(&par, spec->model, spec->cluster, NULL) &&
        !ssim_budget_check_memory(spec->model, &par,
                                  spec->exact ? SSIM_MEMORY_EXPLICIT : SSIM_MEMORY_REPRESENTATIVE,
                                  n, spec->max_memory, error))
        return NULL;
    g_autoptr(SsimCompare) cmp = g_new0(SsimCompare, 1);
    cmp->model = spec->model;
    cmp->cluster = spec->cluster;
    cmp->runs = g_new0(Run, n);
    for (guint i = 0; i < n; i++) {
        cmp->n = i + 1; /* so a failure frees what ran */
        SsimComparePolicy *r = &cmp->runs[i].p;
        r->placement = policy_placement(spec, &policies[i]);
        r->kind = r->placement.kind;
        g_autofree char *name = ssim_placement_to_string(&r->placement);
        g_strlcpy(r->name, name, sizeof r->name);
        r->par = par;
        policy_par(spec, &r->placement, &r->par);
        ssim_place_report_init(&r->report);
        SsimSimConfig config = {.model = spec->model,
                                .cluster = spec->cluster,
                                .par = &r->par,
                                .exact = spec->exact,
                                .ignore_memory = spec->ignore_memory,
                                .placement = &r->placement,
                                .report = &r->report,
                                .comm_repeat = spec->comm_repeat,
                                .max_ops = spec->max_ops,
                                .max_events = spec->max_events,
                                .max_memory = spec->max_memory};
        if (!ssim_simulate(&config, &r->result, &r->lowered, &r->timeline, error)) {
            g_prefix_error(error, "placement %s: ", r->name);
            return NULL;
        }
        measure_path(&cmp->runs[i]);
    }
    return g_steal_pointer(&cmp);
}

const SsimModel *ssim_compare_model(const SsimCompare *cmp)
{
    return cmp->model;
}

const SsimCluster *ssim_compare_cluster(const SsimCompare *cmp)
{
    return cmp->cluster;
}

guint ssim_compare_n_policies(const SsimCompare *cmp)
{
    return cmp->n;
}

const SsimComparePolicy *ssim_compare_policy(const SsimCompare *cmp, guint i)
{
    g_return_val_if_fail(i < cmp->n, NULL);
    return &cmp->runs[i].p;
}

double ssim_compare_gain(const SsimCompare *cmp, guint i)
{
    g_return_val_if_fail(i < cmp->n, 0.0);
    SsimTime base = cmp->runs[0].p.result.step_time, step = cmp->runs[i].p.result.step_time;
    return base > 0 && step > 0 ? 100.0 * ((double)base / (double)step - 1.0) : 0.0;
}

static gint group_cmp(gconstpointer a, gconstpointer b)
{
    const SsimCompareGroup *x = a, *y = b;
    SsimTime dx = x->before - x->after, dy = y->before - y->after;
    SsimTime ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
    if (ax != ay)
        return ax > ay ? -1 : 1;
    return strcmp(x->what, y->what);
}

static void group_clear(gpointer p)
{
    g_free(((SsimCompareGroup *)p)->what);
}

GArray *ssim_compare_attribution(const SsimCompare *cmp, guint i)
{
    g_return_val_if_fail(i < cmp->n, NULL);
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(SsimCompareGroup));
    g_array_set_clear_func(rows, group_clear);
    GHashTable *base = cmp->runs[0].path, *other = cmp->runs[i].path;
    GHashTable *paths[2] = {base, other};
    for (int k = 0; k < 2; k++) {
        GHashTableIter it;
        gpointer key, val;
        g_hash_table_iter_init(&it, paths[k]);
        while (g_hash_table_iter_next(&it, &key, &val)) {
            if (k == 1 && g_hash_table_contains(base, key))
                continue;
            gint64 *b = g_hash_table_lookup(base, key);
            gint64 *o = g_hash_table_lookup(other, key);
            SsimCompareGroup row = {NULL, b ? *b : 0, o ? *o : 0};
            if (row.before != row.after) {
                row.what = g_strdup(key);
                g_array_append_val(rows, row);
            }
        }
    }
    g_array_sort(rows, group_cmp);
    return rows;
}
