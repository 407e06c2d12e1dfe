/*
 * The sweep (include/shiftsim/sweep.h): the space of configurations and its enumeration.  Their
 * evaluation on a thread pool, with pruning and the steady-state replay, is in sweep-run.c; what
 * is written of a sweep (the CSV, the ranked summary, the merge of shard CSVs, the plots) is in
 * sweep-report.c.
 *
 * Enumeration materialises every configuration as a row before anything runs, so a
 * configuration's number is fixed by the spec alone and a worker only writes the row at its
 * number: no two threads touch the same row, and the array is never resized while the pool runs.
 */
#include "src/study/sweep-private.h"

#include <shiftsim/place.h>

#include <string.h>

static const char *const status_names[SSIM_SWEEP_STATUS_N] = {
    "pending", "ok", "illegal", "memory", "failed", "limit", "pruned"};

const char *ssim_sweep_status_name(SsimSweepStatus status)
{
    g_return_val_if_fail(status < SSIM_SWEEP_STATUS_N, "?");
    return status_names[status];
}

/* ---- lists ------------------------------------------------------------------------------- */

static void ints_add(SsimSweepInts *l, guint v)
{
    for (guint i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return;
    if (l->n < SSIM_SWEEP_LIST_MAX)
        l->v[l->n++] = v;
}

void ssim_sweep_spec_default_tp(SsimSweepSpec *spec, const SsimCluster *cluster)
{
    guint limit = spec->base.allow_cross_node_tp ? spec->n_gpus : cluster->gpus_per_node;
    spec->tp.n = 0;
    for (guint t = 1; t <= limit && t <= spec->n_gpus; t *= 2)
        ints_add(&spec->tp, t);
}

/*
 * A row's "native" schedule becomes its placement's, a "native" placement its schedule's
 * framework; a megatron row gets Megatron-LM's default bucket unless the spec chose one.  An
 * unknown placement stays as given (the evaluation rejects it).
 */
static void resolve_native(const SsimSweepSpec *spec, SsimParallel *par, const SsimModel *model)
{
    SsimPlacement p = SSIM_PLACEMENT_INIT;
    gboolean native_placement = strcmp(par->placement, "native") == 0;
    gboolean known = !native_placement && ssim_placement_parse(par->placement, &p, NULL);
    if (strcmp(par->schedule, "native") == 0)
        g_strlcpy(par->schedule, ssim_placement_kind_schedule(known ? p.kind : SSIM_PLACEMENT_ALPA),
                  sizeof par->schedule);
    if (native_placement) {
        p.kind = ssim_placement_kind_for_schedule(par->schedule);
        g_strlcpy(par->placement, ssim_placement_kind_name(p.kind), sizeof par->placement);
        known = TRUE;
    }
    if (known && !spec->bucket_given)
        par->dp_bucket_bytes = ssim_placement_default_bucket(p.kind, par, model->dtype);
}

void ssim_sweep_spec_init(SsimSweepSpec *spec, const SsimCluster *cluster, guint n_gpus)
{
    memset(spec, 0, sizeof *spec);
    spec->n_gpus = n_gpus;
    ssim_parallel_init(&spec->base);
    /* Every row sets its own schedule and placement; the template names the sweep's defaults
     * rather than the library's, so the CSV's base= does not name a placement no row ran. */
    g_strlcpy(spec->base.schedule, "alpa", sizeof spec->base.schedule);
    g_strlcpy(spec->base.placement, "alpa", sizeof spec->base.placement);
    spec->base.global_batch = ssim_parallel_default_global_batch(n_gpus, 1, 1);
    ssim_sweep_spec_default_tp(spec, cluster);
    for (guint d = 1; d <= n_gpus; d++)
        if (n_gpus % d == 0)
            ints_add(&spec->pp, d);
    ints_add(&spec->vstages, 1);
    ints_add(&spec->microbatch, 1);
    ints_add(&spec->microbatch, 2);
    ints_add(&spec->recompute, SSIM_SWEEP_RECOMPUTE_AUTO);
    ints_add(&spec->zero, 0);
    g_strlcpy(spec->schedules.v[0], "native", SSIM_PARALLEL_NAME_MAX);
    spec->schedules.n = 1;
    g_strlcpy(spec->placements.v[0], "alpa", SSIM_PARALLEL_NAME_MAX);
    spec->placements.n = 1;
    spec->placement = (SsimPlacement)SSIM_PLACEMENT_INIT;
    spec->comm_repeat = 1;
}

gboolean ssim_sweep_ints_parse(SsimSweepInts *list, const char *text, GError **error)
{
    SsimSweepInts out = {0};
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    for (guint i = 0; parts[i]; i++) {
        const char *p = g_strstrip(parts[i]);
        guint64 v;
        if (!g_ascii_string_to_unsigned(p, 10, 1, G_MAXUINT32, &v, NULL)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s' is not a positive integer", p);
            return FALSE;
        }
        if (out.n == SSIM_SWEEP_LIST_MAX) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "more than %d entries",
                        SSIM_SWEEP_LIST_MAX);
            return FALSE;
        }
        ints_add(&out, (guint)v);
    }
    if (out.n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "empty list");
        return FALSE;
    }
    *list = out;
    return TRUE;
}

gboolean ssim_sweep_names_parse(SsimSweepNames *list, const char *text, GError **error)
{
    SsimSweepNames out = {0};
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    for (guint i = 0; parts[i]; i++) {
        const char *p = g_strstrip(parts[i]);
        if (*p == '\0' || strlen(p) >= SSIM_PARALLEL_NAME_MAX || strpbrk(p, " \"#") != NULL) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s' is not a name (1 to %d characters, no spaces or quotes)", p,
                        SSIM_PARALLEL_NAME_MAX - 1);
            return FALSE;
        }
        gboolean dup = FALSE;
        for (guint j = 0; j < out.n; j++)
            dup = dup || strcmp(out.v[j], p) == 0;
        if (dup)
            continue;
        if (out.n == SSIM_SWEEP_NAMES_MAX) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "more than %d entries",
                        SSIM_SWEEP_NAMES_MAX);
            return FALSE;
        }
        g_strlcpy(out.v[out.n++], p, SSIM_PARALLEL_NAME_MAX);
    }
    if (out.n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "empty list");
        return FALSE;
    }
    *list = out;
    return TRUE;
}

gboolean ssim_sweep_zero_parse(SsimSweepInts *list, const char *text, GError **error)
{
    SsimSweepInts out = {0};
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    for (guint i = 0; parts[i]; i++) {
        const char *p = g_strstrip(parts[i]);
        guint64 v;
        if (!g_ascii_string_to_unsigned(p, 10, 0, 3, &v, NULL)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s' is not a ZeRO stage (0, 1, 2 or 3)", p);
            return FALSE;
        }
        ints_add(&out, (guint)v);
    }
    if (out.n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "empty list");
        return FALSE;
    }
    *list = out;
    return TRUE;
}

gboolean ssim_sweep_recompute_parse(SsimSweepInts *list, const char *text, GError **error)
{
    SsimSweepNames names;
    if (!ssim_sweep_names_parse(&names, text, error))
        return FALSE;
    SsimSweepInts out = {0};
    for (guint i = 0; i < names.n; i++) {
        if (strcmp(names.v[i], "auto") == 0) {
            ints_add(&out, SSIM_SWEEP_RECOMPUTE_AUTO);
            continue;
        }
        SsimParallel probe;
        ssim_parallel_init(&probe);
        if (!ssim_parallel_set(&probe, "recompute", names.v[i], NULL)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s' is not auto, none, selective, full or op", names.v[i]);
            return FALSE;
        }
        ints_add(&out, (guint)probe.recompute);
    }
    *list = out;
    return TRUE;
}

char *ssim_sweep_ints_format(const SsimSweepInts *list)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < list->n; i++)
        g_string_append_printf(s, "%s%u", i ? "," : "", list->v[i]);
    return g_string_free(s, FALSE);
}

char *ssim_sweep_names_format(const SsimSweepNames *list)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < list->n; i++)
        g_string_append_printf(s, "%s%s", i ? "," : "", list->v[i]);
    return g_string_free(s, FALSE);
}

static const char *recompute_label(guint mode)
{
    return mode == SSIM_SWEEP_RECOMPUTE_AUTO ? "auto" : ssim_recompute_name((SsimRecompute)mode);
}

char *ssim_sweep_recompute_format(const SsimSweepInts *list)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < list->n; i++)
        g_string_append_printf(s, "%s%s", i ? "," : "", recompute_label(list->v[i]));
    return g_string_free(s, FALSE);
}

/* ---- enumeration ------------------------------------------------------------------------- */

SsimSweep *ssim_sweep_new(const SsimModel *model, const SsimCluster *cluster,
                          const SsimSweepSpec *spec, GError **error)
{
    g_return_val_if_fail(model && cluster && spec, NULL);
    guint n = spec->n_gpus;
    if (n == 0 || n % cluster->gpus_per_node != 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "gpus: %u is not a positive multiple of the %u GPUs per node of %s", n,
                    cluster->gpus_per_node, cluster->name);
        return NULL;
    }
    if (n > SSIM_MAX_GPUS) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "gpus: %u GPUs is over the limit of %u GPUs", n, SSIM_MAX_GPUS);
        return NULL;
    }
    const char *empty = spec->tp.n == 0           ? "tp"
                        : spec->pp.n == 0         ? "pp"
                        : spec->vstages.n == 0    ? "vstages"
                        : spec->microbatch.n == 0 ? "microbatch"
                        : spec->recompute.n == 0  ? "recompute"
                        : spec->schedules.n == 0  ? "schedules"
                        : spec->placements.n == 0 ? "placements"
                        : spec->zero.n == 0       ? "zero"
                                                  : NULL;
    if (empty) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: empty list", empty);
        return NULL;
    }
    if (!ssim_site_set_check(&spec->placement.grads, model, error))
        return NULL;
    guint pairs = 0, skipped = 0;
    const guint64 cp = MAX(spec->base.cp, 1u); /* the base's context parallelism, kept */
    for (guint a = 0; a < spec->tp.n; a++)
        for (guint b = 0; b < spec->pp.n; b++) {
            guint64 tpp = (guint64)spec->tp.v[a] * spec->pp.v[b] * cp;
            if (n % tpp == 0)
                pairs++;
            else
                skipped++;
        }
    guint64 per_pair = (guint64)spec->vstages.n * spec->microbatch.n * spec->schedules.n *
                       spec->recompute.n * spec->zero.n * spec->placements.n;
    guint64 total = per_pair * pairs;
    if (total == 0 || total > G_MAXINT) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "sweep: %" G_GUINT64_FORMAT " configurations (no tp x pp pair divides %u, "
                    "or more than %d)",
                    total, n, G_MAXINT);
        return NULL;
    }

    g_autoptr(SsimSweep) s = g_new0(SsimSweep, 1);
    s->model = model;
    s->cluster = ssim_cluster_copy(cluster);
    ssim_cluster_set_nodes(s->cluster, n / cluster->gpus_per_node);
    s->spec = *spec;
    s->n_rows = (guint)total;
    s->skipped_pairs = skipped;
    for (guint i = 0; i < spec->schedules.n; i++)
        s->has_1f1b = s->has_1f1b || strcmp(spec->schedules.v[i], "1f1b") == 0;
    s->rows = g_new0(SsimSweepRow, total);
    guint k = 0;
    for (guint a = 0; a < spec->tp.n; a++)
        for (guint b = 0; b < spec->pp.n; b++) {
            guint tp = spec->tp.v[a], pp = spec->pp.v[b];
            if (n % ((guint64)tp * pp * cp) != 0)
                continue;
            for (guint c = 0; c < spec->vstages.n; c++)
                for (guint d = 0; d < spec->microbatch.n; d++)
                    for (guint e = 0; e < spec->schedules.n; e++)
                        for (guint f = 0; f < spec->recompute.n; f++)
                            for (guint z = 0; z < spec->zero.n * spec->placements.n; z++) {
                                guint g = z % spec->placements.n;
                                SsimSweepRow *r = &s->rows[k];
                                r->index = k++;
                                r->status = SSIM_SWEEP_PENDING;
                                r->par = spec->base;
                                r->par.tp = tp;
                                r->par.pp = pp;
                                r->par.dp = (guint)(n / (tp * pp * cp));
                                r->par.virtual_stages = spec->vstages.v[c];
                                r->par.microbatch = spec->microbatch.v[d];
                                g_strlcpy(r->par.schedule, spec->schedules.v[e],
                                          SSIM_PARALLEL_NAME_MAX);
                                r->auto_recompute =
                                    spec->recompute.v[f] == SSIM_SWEEP_RECOMPUTE_AUTO;
                                r->par.recompute = r->auto_recompute
                                                       ? SSIM_RECOMPUTE_NONE
                                                       : (SsimRecompute)spec->recompute.v[f];
                                g_strlcpy(r->par.placement, spec->placements.v[g],
                                          SSIM_PARALLEL_NAME_MAX);
                                r->par.zero_stage = spec->zero.v[z / spec->placements.n];
                                resolve_native(spec, &r->par, model);
                                /* --overlap-param-gather: the rows with the distributed
                                 * optimizer's all-gather (ZeRO 1 and 2, eager schedules). */
                                r->par.overlap_param_gather =
                                    r->par.overlap_param_gather && r->par.zero_stage >= 1 &&
                                    r->par.zero_stage <= 2 && !ssim_parallel_compiled(&r->par);
                                /* --fsdp-root: the rows that run FSDP2 without a pipeline. */
                                r->par.fsdp_root =
                                    r->par.fsdp_root && r->par.zero_stage == 3 && r->par.pp == 1;
                            }
        }
    g_assert(k == total);
    return g_steal_pointer(&s);
}

void ssim_sweep_free(SsimSweep *sweep)
{
    if (sweep == NULL)
        return;
    ssim_cluster_free(sweep->cluster);
    g_free(sweep->rows);
    g_free(sweep);
}

guint ssim_sweep_n_configs(const SsimSweep *sweep)
{
    return sweep->n_rows;
}

guint ssim_sweep_skipped_pairs(const SsimSweep *sweep)
{
    return sweep->skipped_pairs;
}

const SsimSweepSpec *ssim_sweep_spec(const SsimSweep *sweep)
{
    return &sweep->spec;
}

const SsimCluster *ssim_sweep_cluster(const SsimSweep *sweep)
{
    return sweep->cluster;
}

const SsimSweepRow *ssim_sweep_row(const SsimSweep *sweep, guint index)
{
    g_return_val_if_fail(index < sweep->n_rows, NULL);
    return &sweep->rows[index];
}

void ssim_sweep_set_row(SsimSweep *sweep, const SsimSweepRow *row)
{
    g_return_if_fail(row->index < sweep->n_rows);
    sweep->rows[row->index] = *row;
}
