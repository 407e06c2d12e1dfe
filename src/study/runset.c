/*
 * The run set of include/shiftsim/runset.h: measured runs with their models and clusters loaded,
 * simulated on threads.
 *
 * Loading.  Each distinct cluster name is loaded once and copied into every row that uses it,
 * with the row's node count; a row on part of each node (vTrain's 2- and 4-GPU runs) gets a node
 * of that many GPUs.  A row given by shape gets a GPT model of that shape (GELU, LayerNorm,
 * biases, tied embeddings; learned positions and no embedding norm unless its options say
 * otherwise); a row given by name loads that model.
 *
 * Invariant: predictions never depend on the thread count: each row is simulated alone, on its
 * own copy of its cluster, and thread t handles rows t, t + threads, ... writing only their
 * slots of the output arrays.
 */
#include <shiftsim/budget.h>
#include <shiftsim/runset.h>
#include <shiftsim/sim.h>

#include <math.h>
#include <string.h>

/* A row that gives both its measured time and its TFLOP/s per GPU: how far the time the TFLOP/s
 * figure implies (through this model's FLOP count) may be from the time given.  5%: published
 * figures are rounded (137 TFLOP/s is +-0.4%), and a paper's FLOP formula may drop a small term
 * that ours counts (the vocabulary's, a few percent at the smallest models). */
#define RUN_FIGURES_AGREE 0.05

typedef struct {
    SsimMeasuredRun run;
    SsimModel *model;
    SsimCluster *cluster;
    double measured_ms;
} SetRow;

struct SsimRunSet {
    GArray *rows;                /* SetRow */
    GStringChunk *paths;         /* the rows' file paths (a set may outlive its runs) */
    guint64 max_ops, max_events; /* SsimSimConfig's limits (0: the defaults) */
    guint64 max_memory;
    SsimRunSetProgressFn progress; /* per predicted row, or NULL */
    gpointer progress_data;
};

static void set_row_clear(gpointer p)
{
    SetRow *r = p;
    ssim_model_free(r->model);
    ssim_cluster_free(r->cluster);
}

static SsimModel *model_of_run(const SsimMeasuredRun *r, const char *path, GError **error)
{
    if (!r->has_shape) {
        /* A named model trains in the row's dtype when the row gives one. */
        SsimModel *m = ssim_model_load(r->model, error);
        if (m && r->has_dtype && m->dtype != r->dtype) {
            m->dtype = r->dtype;
            if (!ssim_model_check(m, error))
                g_clear_pointer(&m, ssim_model_free);
        }
        return m;
    }
    g_autofree char *ini = g_strdup_printf(
        "[model]\nformat = 1\nname = %s\nlayers = %u\nhidden = %u\nheads = %u\nffn = %u\n"
        "vocab = %u\nseq_len = %u\nblock = sequential\nposition = %s\nactivation = gelu\n"
        "norm = layernorm\nembedding_norm = %s\ntied_embeddings = true\nattention_bias = true\n"
        "mlp_bias = true\n"
        "attention_dropout = true\nhidden_dropout = true\n"
        "dtype = %s\n",
        r->model, r->layers, r->hidden, r->heads, r->ffn, r->vocab, r->seq_len,
        ssim_position_name(r->position), r->embedding_norm ? "true" : "false",
        ssim_dtype_name(r->dtype));
    return ssim_model_load_data(ini, -1, path, error);
}

/* Row `row`'s measured time (ms): its iteration_ms, or its tflops_per_gpu through the model's
 * FLOPs (both given: they must agree), refused when faster than its GPUs' peak allows. */
static gboolean row_measured(SetRow *row, guint world, gboolean judge_peak, GError **error)
{
    const SsimMeasuredRun *r = &row->run;
    row->measured_ms = r->iteration_ms;
    double hw = ssim_parallel_hardware_flops(&r->par, row->model);
    if (r->tflops_per_gpu > 0) {
        double ms = hw / (r->tflops_per_gpu * 1e12 * world) * 1e3;
        /* Both given: they must tell the same time (a run's log has both; a typo in one
         * would otherwise go unnoticed, since the time wins). */
        if (row->measured_ms > 0 && fabs(ms / row->measured_ms - 1) > RUN_FIGURES_AGREE) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: tflops_per_gpu: %g TFLOP/s per GPU is %.6g ms for this run "
                        "(its FLOPs, recompute included), but iteration_ms is %.6g ms: "
                        "give one, or both within %.0f%%",
                        r->path, r->line, r->tflops_per_gpu, ms, row->measured_ms,
                        100 * RUN_FIGURES_AGREE);
            return FALSE;
        }
        if (!(row->measured_ms > 0))
            row->measured_ms = ms;
    }
    /* A measured time faster than the GPUs' peak allows (in the fastest dtype they have) is a
     * typo, not a run: its error would be meaningless and would swamp the set's figures.  Judged
     * on the run's own cluster only (another, given for every row, may be slower). */
    double peak = 0;
    for (guint d = 0; d < SSIM_DTYPE_N; d++)
        peak = MAX(peak, row->cluster->peak_flops[d]);
    double rate = hw / (row->measured_ms / 1e3) / world;
    if (!judge_peak || !(peak > 0) || rate <= peak)
        return TRUE;
    if (r->iteration_ms > 0)
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s:%u: iteration_ms: %.6g ms is %.4g TFLOP/s per GPU for this run (its "
                    "FLOPs, recompute included), above the %s's peak of %.4g TFLOP/s",
                    r->path, r->line, row->measured_ms, rate / 1e12, row->cluster->gpu,
                    peak / 1e12);
    else
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s:%u: tflops_per_gpu: %.4g TFLOP/s per GPU is above the %s's peak of "
                    "%.4g TFLOP/s",
                    r->path, r->line, r->tflops_per_gpu, row->cluster->gpu, peak / 1e12);
    return FALSE;
}

SsimRunSet *ssim_run_set_new(const SsimRuns *runs, const char *cluster_override, GError **error)
{
    g_autoptr(GHashTable) clusters =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)ssim_cluster_free);
    SsimRunSet *set = g_new0(SsimRunSet, 1);
    set->rows = g_array_new(FALSE, TRUE, sizeof(SetRow));
    g_array_set_clear_func(set->rows, set_row_clear);
    set->paths = g_string_chunk_new(256);
    for (guint i = 0; i < ssim_runs_n(runs); i++) {
        const SsimMeasuredRun *r = ssim_runs_get(runs, i);
        SetRow row = {.run = *r};
        row.run.path = g_string_chunk_insert_const(set->paths, r->path);
        const char *cname = cluster_override ? cluster_override : r->cluster;
        SsimCluster *base = g_hash_table_lookup(clusters, cname);
        if (base == NULL) {
            base = ssim_cluster_load(cname, error);
            if (base == NULL) {
                g_prefix_error(error, "%s:%u: cluster: ", r->path, r->line);
                ssim_run_set_free(set);
                return NULL;
            }
            g_hash_table_insert(clusters, g_strdup(cname), base);
        }
        row.model = model_of_run(r, r->path, error);
        if (row.model == NULL) {
            g_prefix_error(error, "%s:%u: model: ", r->path, r->line);
            ssim_run_set_free(set);
            return NULL;
        }
        /* Megatron-LM's first/last stage counts or embedding and loss counted as layers
         * (options) become the stage_layers the row runs. */
        if (!ssim_parallel_resolve_layers(&row.run.par, row.model, error)) {
            g_prefix_error(error, "%s:%u: options: ", r->path, r->line);
            ssim_model_free(row.model); /* not in the set yet */
            ssim_run_set_free(set);
            return NULL;
        }
        if (!ssim_cluster_check_nodes(base, r->nodes, error)) {
            g_prefix_error(error, "%s:%u: nodes: ", r->path, r->line);
            ssim_model_free(row.model); /* not in the set yet */
            ssim_run_set_free(set);
            return NULL;
        }
        row.cluster = ssim_cluster_copy(base);
        ssim_cluster_set_nodes(row.cluster, r->nodes);
        /* A run on part of each node (vTrain's 2- and 4-GPU runs) sees a node of that many
         * GPUs: the same links, fewer members. */
        guint world = ssim_parallel_world(&r->par);
        if (world % r->nodes == 0 && world / r->nodes < row.cluster->gpus_per_node) {
            row.cluster->gpus_per_node = world / r->nodes;
            row.cluster->gpus_per_nic = MIN(row.cluster->gpus_per_nic, row.cluster->gpus_per_node);
        }
        if (!row_measured(&row, world, cluster_override == NULL, error)) {
            set_row_clear(&row);
            ssim_run_set_free(set);
            return NULL;
        }
        g_array_append_val(set->rows, row);
    }
    return set;
}

void ssim_run_set_free(SsimRunSet *set)
{
    if (set == NULL)
        return;
    g_array_free(set->rows, TRUE);
    g_string_chunk_free(set->paths);
    g_free(set);
}

void ssim_run_set_set_max_memory(SsimRunSet *set, guint64 max_memory)
{
    set->max_memory = max_memory;
}

void ssim_run_set_set_limits(SsimRunSet *set, guint64 max_ops, guint64 max_events)
{
    set->max_ops = max_ops;
    set->max_events = max_events;
}

guint ssim_run_set_n(const SsimRunSet *set)
{
    return set->rows->len;
}

static const SetRow *set_row(const SsimRunSet *set, guint i)
{
    return &g_array_index(set->rows, SetRow, i);
}

const SsimMeasuredRun *ssim_run_set_run(const SsimRunSet *set, guint i)
{
    return &set_row(set, i)->run;
}

const SsimCluster *ssim_run_set_cluster(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->cluster;
}

const SsimModel *ssim_run_set_model(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->model;
}

double ssim_run_set_measured_ms(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->measured_ms;
}

/* Row i's value of a fitted-range dimension. */
static guint dim_value(const SsimRunSet *set, guint i, SsimFitDim d)
{
    const SsimMeasuredRun *r = ssim_run_set_run(set, i);
    return ssim_parallel_fit_value(&r->par, ssim_run_set_model(set, i), r->nodes, d);
}

void ssim_run_set_fit_ranges(const SsimRunSet *set, const guint *idx, guint n, SsimCluster *cluster)
{
    for (guint d = 0; d < SSIM_FIT_DIM_N; d++) {
        cluster->fit_lo[d] = G_MAXUINT;
        cluster->fit_hi[d] = 0;
        for (guint j = 0; j < n; j++) {
            guint v = dim_value(set, idx ? idx[j] : j, (SsimFitDim)d);
            cluster->fit_lo[d] = MIN(cluster->fit_lo[d], v);
            cluster->fit_hi[d] = MAX(cluster->fit_hi[d], v);
        }
        if (cluster->fit_hi[d] == 0)
            cluster->fit_lo[d] = 0;
    }
}

char *ssim_run_set_extrapolation(const SsimRunSet *set, guint i)
{
    const SsimMeasuredRun *r = ssim_run_set_run(set, i);
    return ssim_parallel_extrapolation(&r->par, ssim_run_set_model(set, i), r->nodes,
                                       ssim_run_set_cluster(set, i));
}

static const char *const group_by_names[SSIM_GROUP_BY_N] = {
    "model",      "nodes",        "tp",   "gpus",    "pp",        "dp",
    "microbatch", "microbatches", "file", "cluster", "recompute",
};

const char *ssim_group_by_name(SsimGroupBy by)
{
    return (guint)by < SSIM_GROUP_BY_N ? group_by_names[by] : "?";
}

gboolean ssim_group_by_from_name(const char *name, SsimGroupBy *out)
{
    for (guint b = 0; b < SSIM_GROUP_BY_N; b++)
        if (strcmp(name, group_by_names[b]) == 0) {
            *out = (SsimGroupBy)b;
            return TRUE;
        }
    return FALSE;
}

char *ssim_group_by_names_list(const char *prefix)
{
    GString *s = g_string_new(NULL);
    for (guint b = 0; b < SSIM_GROUP_BY_N; b++)
        g_string_append_printf(s, "%s%s%s",
                               b == 0                    ? ""
                               : b + 1 < SSIM_GROUP_BY_N ? ", "
                                                         : " or ",
                               prefix, group_by_names[b]);
    return g_string_free(s, FALSE);
}

guint ssim_run_set_key_number(const SsimRunSet *set, guint i, SsimGroupBy by)
{
    const SsimMeasuredRun *r = ssim_run_set_run(set, i);
    switch (by) {
    case SSIM_GROUP_BY_NODES:
        return r->nodes;
    case SSIM_GROUP_BY_TP:
        return r->par.tp;
    case SSIM_GROUP_BY_GPUS:
        return ssim_parallel_world(&r->par);
    case SSIM_GROUP_BY_PP:
        return r->par.pp;
    case SSIM_GROUP_BY_DP:
        return r->par.dp;
    case SSIM_GROUP_BY_MICROBATCH:
        return r->par.microbatch;
    case SSIM_GROUP_BY_MICROBATCHES:
        return ssim_parallel_n_microbatches(&r->par);
    case SSIM_GROUP_BY_MODEL:
    case SSIM_GROUP_BY_FILE:
    case SSIM_GROUP_BY_CLUSTER:
    case SSIM_GROUP_BY_RECOMPUTE:
    default:
        return 0;
    }
}

char *ssim_run_set_key(const SsimRunSet *set, guint i, SsimGroupBy by)
{
    guint v = ssim_run_set_key_number(set, i, by);
    switch (by) {
    case SSIM_GROUP_BY_NODES:
        return g_strdup_printf("%u nodes", v);
    case SSIM_GROUP_BY_GPUS:
        return g_strdup_printf("%u GPUs", v);
    case SSIM_GROUP_BY_MICROBATCHES:
        return g_strdup_printf("%u microbatch%s", v, v == 1 ? "" : "es");
    case SSIM_GROUP_BY_TP:
    case SSIM_GROUP_BY_PP:
    case SSIM_GROUP_BY_DP:
    case SSIM_GROUP_BY_MICROBATCH:
        return g_strdup_printf("%s %u", group_by_names[by], v);
    case SSIM_GROUP_BY_FILE:
        return g_strdup(ssim_run_set_run(set, i)->path);
    case SSIM_GROUP_BY_CLUSTER:
        return g_strdup(ssim_run_set_cluster(set, i)->name);
    case SSIM_GROUP_BY_RECOMPUTE:
        return g_strdup(ssim_recompute_name(ssim_run_set_run(set, i)->par.recompute));
    case SSIM_GROUP_BY_MODEL:
    default:
        return g_strdup(ssim_run_set_run(set, i)->model);
    }
}

char *ssim_run_set_group_key(const SsimRunSet *set, guint i)
{
    return ssim_run_set_key(set, i, SSIM_GROUP_BY_MODEL);
}

SsimGrouping ssim_grouping_one(SsimGroupBy by)
{
    return (SsimGrouping){.n = 1, .part = {by}};
}

gboolean ssim_grouping_from_name(const char *name, SsimGrouping *out)
{
    g_auto(GStrv) parts = g_strsplit(name, "+", -1);
    SsimGrouping g = {0};
    for (guint k = 0; parts[k]; k++) {
        SsimGroupBy by;
        if (g.n == SSIM_GROUPING_MAX || !ssim_group_by_from_name(g_strstrip(parts[k]), &by))
            return FALSE;
        for (guint j = 0; j < g.n; j++)
            if (g.part[j] == by)
                return FALSE;
        g.part[g.n++] = by;
    }
    if (g.n == 0)
        return FALSE;
    *out = g;
    return TRUE;
}

char *ssim_grouping_name(const SsimGrouping *g)
{
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < g->n; k++)
        g_string_append_printf(s, "%s%s", k ? "+" : "", ssim_group_by_name(g->part[k]));
    return g_string_free(s, FALSE);
}

gboolean ssim_grouping_equal(const SsimGrouping *a, const SsimGrouping *b)
{
    if (a->n != b->n)
        return FALSE;
    for (guint k = 0; k < a->n; k++)
        if (a->part[k] != b->part[k])
            return FALSE;
    return TRUE;
}

char *ssim_run_set_grouping_key(const SsimRunSet *set, guint i, const SsimGrouping *g)
{
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < g->n; k++) {
        g_autofree char *key = ssim_run_set_key(set, i, g->part[k]);
        g_string_append_printf(s, "%s%s", k ? ", " : "", key);
    }
    return g_string_free(s, FALSE);
}

static gboolean key_is_text(SsimGroupBy by)
{
    return by == SSIM_GROUP_BY_MODEL || by == SSIM_GROUP_BY_FILE || by == SSIM_GROUP_BY_CLUSTER ||
           by == SSIM_GROUP_BY_RECOMPUTE;
}

gboolean ssim_row_match_parse(const char *item, SsimRowMatch *out, GError **error)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(item, '=');
    out->negate = eq && eq > item && eq[-1] == '!';
    g_autofree char *key =
        eq ? g_strndup(item, (gsize)(eq - item) - (out->negate ? 1 : 0)) : g_strdup(item);
    g_strstrip(key);
    if (!ssim_group_by_from_name(key, &out->by)) {
        g_autofree char *list = ssim_group_by_names_list("");
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "'%s' is not KEY=VALUE or KEY!=VALUE with KEY %s", item, list);
        return FALSE;
    }
    g_autofree char *value = g_strstrip(g_strdup(eq ? eq + 1 : ""));
    if (value[0] == '\0') {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "'%s': %s needs a value",
                    item, key);
        return FALSE;
    }
    if (key_is_text(out->by)) {
        if (g_strlcpy(out->text, value, sizeof out->text) >= sizeof out->text) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "'%s': the %s is longer than %zu bytes", item, key, sizeof out->text - 1);
            return FALSE;
        }
        return TRUE;
    }
    guint64 v = 0;
    if (!g_ascii_string_to_unsigned(value, 10, 1, G_MAXUINT, &v, NULL)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "'%s': %s must be a positive integer", item, key);
        return FALSE;
    }
    out->number = (guint)v;
    return TRUE;
}

gboolean ssim_run_set_matches(const SsimRunSet *set, guint i, const SsimRowMatch *m, guint n)
{
    for (guint k = 0; k < n; k++) {
        gboolean is;
        if (key_is_text(m[k].by)) {
            g_autofree char *key = ssim_run_set_key(set, i, m[k].by);
            is = strcmp(key, m[k].text) == 0;
        } else {
            is = ssim_run_set_key_number(set, i, m[k].by) == m[k].number;
        }
        if (is == m[k].negate)
            return FALSE;
    }
    return TRUE;
}

guint *ssim_run_set_groups_by(const SsimRunSet *set, const guint *idx, guint n,
                              const SsimGrouping *g, GPtrArray *names)
{
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint *groups = g_new(guint, MAX(n, 1u));
    for (guint j = 0; j < n; j++) {
        char *key = ssim_run_set_grouping_key(set, idx ? idx[j] : j, g);
        gpointer v = g_hash_table_lookup(ids, key);
        if (v == NULL) {
            v = GUINT_TO_POINTER(g_hash_table_size(ids) + 1);
            if (names)
                g_ptr_array_add(names, g_strdup(key));
            g_hash_table_insert(ids, key, v);
        } else {
            g_free(key);
        }
        groups[j] = GPOINTER_TO_UINT(v) - 1;
    }
    return groups;
}

guint *ssim_run_set_groups(const SsimRunSet *set, const guint *idx, guint n)
{
    SsimGrouping model = ssim_grouping_one(SSIM_GROUP_BY_MODEL);
    return ssim_run_set_groups_by(set, idx, n, &model, NULL);
}

typedef struct {
    const SsimRunSet *set;
    const guint *idx;
    guint n, stride, offset;
    const SsimCalibValues *values;
    double *pred;
    char **errors;
} PredictJob;

static gpointer predict_worker(gpointer data)
{
    PredictJob *job = data;
    for (guint j = job->offset; j < job->n; j += job->stride) {
        guint i = job->idx ? job->idx[j] : j;
        const SetRow *row = set_row(job->set, i);
        g_autoptr(SsimCluster) cluster = ssim_cluster_copy(row->cluster);
        if (job->values)
            ssim_calib_values_apply(job->values, cluster);
        SsimSimConfig config = {.model = row->model,
                                .cluster = cluster,
                                .par = &row->run.par,
                                .ignore_memory = TRUE,
                                .max_ops = job->set->max_ops,
                                .max_events = job->set->max_events,
                                .max_memory = job->set->max_memory};
        SsimResult result;
        g_autoptr(GError) error = NULL;
        gboolean ok = ssim_simulate(&config, &result, NULL, NULL, &error);
        if (job->set->progress)
            job->set->progress(ssim_run_set_work(job->set, i),
                               ok || !g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT),
                               job->set->progress_data);
        if (ok) {
            job->pred[j] = ssim_time_to_seconds(result.step_time) * 1e3;
        } else {
            job->pred[j] = NAN;
            if (job->errors)
                job->errors[j] =
                    g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT) ||
                            g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY)
                        ? g_strconcat(SSIM_RUN_SET_LIMIT_PREFIX, error->message, NULL)
                        : g_strdup(error->message);
        }
    }
    return NULL;
}

void ssim_run_set_set_progress(SsimRunSet *set, SsimRunSetProgressFn fn, gpointer user)
{
    set->progress = fn;
    set->progress_data = user;
}

double ssim_run_set_work(const SsimRunSet *set, guint i)
{
    const SetRow *row = set_row(set, i);
    SsimOpEstimate est;
    ssim_budget_estimate(row->model, &row->run.par, FALSE, &est);
    return MAX(est.ops, 1.0);
}

void ssim_run_set_predict(const SsimRunSet *set, const guint *idx, guint n,
                          const SsimCalibValues *values, guint threads, double *pred, char **errors)
{
    if (idx == NULL)
        n = set->rows->len;
    if (threads == 0)
        threads = g_get_num_processors();
    threads = CLAMP(threads, 1u, MAX(n, 1u));
    PredictJob *jobs = g_new0(PredictJob, threads);
    GThread **th = g_new0(GThread *, threads);
    for (guint t = 0; t < threads; t++) {
        jobs[t] = (PredictJob){set, idx, n, threads, t, values, pred, errors};
        if (t > 0)
            th[t] = g_thread_new("ssim-predict", predict_worker, &jobs[t]);
    }
    predict_worker(&jobs[0]);
    for (guint t = 1; t < threads; t++)
        g_thread_join(th[t]);
    g_free(th);
    g_free(jobs);
}

void ssim_run_set_errors_free(char **errors, guint n)
{
    if (errors == NULL)
        return;
    for (guint j = 0; j < n; j++)
        g_free(errors[j]);
    g_free(errors);
}
