/*
 * The sweep (include/shiftsim/sweep.h): enumeration, evaluation on a thread pool, the CSV, the
 * ranked summary and the merge of shard CSVs.
 *
 * Enumeration materialises every configuration as a row before anything runs, so a
 * configuration's number is fixed by the spec alone and a worker only writes the row at its
 * number: no two threads touch the same row, and the array is never resized while the pool runs.
 * The calling thread waits on a condition variable with a timeout and draws progress between
 * waits; workers only bump an atomic counter and signal when the last one finishes.
 *
 * The CSV is text only the spec and the rows determine: its two metadata lines name the spec but
 * not the shard, so every shard of one sweep carries the same lines and a merge can check that
 * its inputs belong together.  Fields are written with fixed printf precisions (as the simulate
 * CSV does) and the detail message is quoted RFC 4180 style with newlines folded to spaces, so
 * one row is exactly one line, which the merge relies on.
 */
#include <shiftsim/place.h>
#include <shiftsim/report.h>
#include <shiftsim/sweep.h>

#include <string.h>

struct SsimSweep {
    const SsimModel *model;
    SsimCluster *cluster; /* a copy with N GPUs */
    SsimSweepSpec spec;
    SsimSweepRow *rows;
    guint n_rows;
    guint skipped_pairs;
    gboolean has_1f1b; /* "1f1b" is in the schedule list */
};

#define CSV_FORMAT "# shiftsim-sweep v1"
#define CSV_HEADER                                                                                 \
    "index,dp,tp,pp,v,microbatch,global_batch,microbatches,schedule,placement,recompute,"          \
    "seq_parallel,zero,tp_comm,status,reason,step_ms,tokens_per_s,samples_per_s,"                  \
    "model_tflops_per_gpu,mfu,bubble,exposed_tp_ms,exposed_pp_ms,exposed_dp_ms,peak_memory_gib,"   \
    "detail"

static const char *const status_names[SSIM_SWEEP_STATUS_N] = {"pending", "ok",     "illegal",
                                                              "memory",  "failed", "limit"};

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

void ssim_sweep_spec_init(SsimSweepSpec *spec, const SsimCluster *cluster, guint n_gpus)
{
    memset(spec, 0, sizeof *spec);
    spec->n_gpus = n_gpus;
    ssim_parallel_init(&spec->base);
    spec->base.global_batch = 2 * n_gpus;
    ssim_sweep_spec_default_tp(spec, cluster);
    for (guint d = 1; d <= n_gpus; d++)
        if (n_gpus % d == 0)
            ints_add(&spec->pp, d);
    ints_add(&spec->vstages, 1);
    ints_add(&spec->vstages, 2);
    ints_add(&spec->microbatch, 1);
    ints_add(&spec->microbatch, 2);
    ints_add(&spec->recompute, SSIM_SWEEP_RECOMPUTE_AUTO);
    g_strlcpy(spec->schedules.v[0], "1f1b", SSIM_PARALLEL_NAME_MAX);
    g_strlcpy(spec->schedules.v[1], "interleaved", SSIM_PARALLEL_NAME_MAX);
    spec->schedules.n = 2;
    g_strlcpy(spec->placements.v[0], "baseline", SSIM_PARALLEL_NAME_MAX);
    spec->placements.n = 1;
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
                        "'%s' is not auto, none, selective or full", names.v[i]);
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
                                                  : NULL;
    if (empty) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: empty list", empty);
        return NULL;
    }
    guint pairs = 0, skipped = 0;
    for (guint a = 0; a < spec->tp.n; a++)
        for (guint b = 0; b < spec->pp.n; b++) {
            guint64 tpp = (guint64)spec->tp.v[a] * spec->pp.v[b];
            if (n % tpp == 0)
                pairs++;
            else
                skipped++;
        }
    guint64 per_pair = (guint64)spec->vstages.n * spec->microbatch.n * spec->schedules.n *
                       spec->recompute.n * spec->placements.n;
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
            if (n % ((guint64)tp * pp) != 0)
                continue;
            for (guint c = 0; c < spec->vstages.n; c++)
                for (guint d = 0; d < spec->microbatch.n; d++)
                    for (guint e = 0; e < spec->schedules.n; e++)
                        for (guint f = 0; f < spec->recompute.n; f++)
                            for (guint g = 0; g < spec->placements.n; g++) {
                                SsimSweepRow *r = &s->rows[k];
                                r->index = k++;
                                r->status = SSIM_SWEEP_PENDING;
                                r->par = spec->base;
                                r->par.tp = tp;
                                r->par.pp = pp;
                                r->par.dp = n / (tp * pp);
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

/* ---- evaluation -------------------------------------------------------------------------- */

/* Records `error` as the row's reason (the rule: the message up to the first ": ") and detail. */
static void reject(SsimSweepRow *row, SsimSweepStatus status, const char *reason,
                   const GError *error)
{
    row->status = status;
    const char *msg = error ? error->message : "";
    if (reason == NULL) {
        const char *colon = strstr(msg, ": ");
        gsize len = colon ? (gsize)(colon - msg) : strlen(msg);
        len = MIN(len, SSIM_SWEEP_REASON_MAX - 1);
        memcpy(row->reason, msg, len);
        row->reason[len] = '\0';
    } else {
        g_strlcpy(row->reason, reason, SSIM_SWEEP_REASON_MAX);
    }
    gsize n = g_strlcpy(row->detail, msg, SSIM_SWEEP_DETAIL_MAX);
    if (n >= SSIM_SWEEP_DETAIL_MAX)
        memcpy(row->detail + SSIM_SWEEP_DETAIL_MAX - 4, "...", 4);
    for (char *p = row->detail; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

void ssim_sweep_eval(const SsimSweep *sweep, guint index, SsimSweepRow *row)
{
    g_assert(index < sweep->n_rows);
    *row = sweep->rows[index];
    row->status = SSIM_SWEEP_PENDING;
    row->reason[0] = row->detail[0] = '\0';
    row->has_memory = FALSE;
    memset(&row->result, 0, sizeof row->result);
    SsimSimConfig config = {.model = sweep->model,
                            .cluster = sweep->cluster,
                            .par = &row->par,
                            .exact = sweep->spec.exact,
                            .max_ops = sweep->spec.max_ops,
                            .max_events = sweep->spec.max_events};
    /* The memory half first: it tells an illegal split (no peak) from one that does not fit, and
     * under auto it picks the first recompute mode that fits. */
    guint first = row->auto_recompute ? SSIM_RECOMPUTE_NONE : row->par.recompute;
    guint last = row->auto_recompute ? SSIM_RECOMPUTE_N - 1 : row->par.recompute;
    g_autoptr(GError) invalid = NULL;
    if (!ssim_parallel_validate(&row->par, sweep->model, sweep->cluster, &invalid)) {
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, invalid);
        return;
    }
    /* The placement name resolves to its pass (place.h); an unknown one is illegal. */
    SsimPlacement placement = SSIM_PLACEMENT_INIT;
    if (!ssim_placement_kind_from_name(row->par.placement, &placement.kind)) {
        g_autofree char *names = ssim_placement_kind_list();
        g_autoptr(GError) unknown =
            g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "placement: unknown placement '%s' (known: %s)", row->par.placement, names);
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, unknown);
        return;
    }
    config.placement = &placement;
    /* A legal interleaved 1F1B with one chunk per GPU is 1F1B itself: when both are swept, the
     * interleaved copy is marked so the ranking does not list every such split twice. */
    if (row->par.virtual_stages == 1 && strcmp(row->par.schedule, "interleaved") == 0 &&
        sweep->has_1f1b) {
        g_autoptr(GError) dup = g_error_new_literal(
            SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
            "duplicate: interleaved with v = 1 is 1f1b, which the sweep also runs");
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, dup);
        return;
    }
    for (guint mode = first; mode <= last; mode++) {
        row->par.recompute = (SsimRecompute)mode;
        g_autoptr(GError) error = NULL;
        SsimMemory peak;
        memset(&peak, 0, sizeof peak);
        if (ssim_simulate_memory(&config, &peak, &error)) {
            row->result.memory = peak;
            row->has_memory = TRUE;
            break;
        }
        if (g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT)) {
            /* The op or microbatch budget, checked before the schedule: the reason is the
             * message's field ("max_ops", "global_batch"). */
            reject(row, SSIM_SWEEP_LIMIT, NULL, error);
            return;
        }
        if (peak.total == 0) { /* the schedule refused: no estimate was made */
            reject(row, SSIM_SWEEP_ILLEGAL, NULL, error);
            return;
        }
        row->result.memory = peak;
        row->has_memory = TRUE;
        if (mode == last) {
            reject(row, SSIM_SWEEP_MEMORY, "does not fit in HBM", error);
            return;
        }
    }
    g_autoptr(GError) error = NULL;
    SsimMemory peak = row->result.memory;
    if (!ssim_simulate(&config, &row->result, NULL, NULL, &error)) {
        row->result.memory = peak;
        if (g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT))
            reject(row, SSIM_SWEEP_LIMIT, "max_events", error);
        else
            reject(row, SSIM_SWEEP_FAILED, "simulate", error);
        return;
    }
    row->status = SSIM_SWEEP_OK;
}

typedef struct {
    SsimSweep *sweep;
    gint done; /* atomic */
    guint total;
    GMutex lock;
    GCond finished;
} Pool;

static void work(gpointer data, gpointer user)
{
    Pool *p = user;
    guint index = GPOINTER_TO_UINT(data) - 1;
    SsimSweepRow row;
    ssim_sweep_eval(p->sweep, index, &row);
    p->sweep->rows[index] = row;
    if ((guint)g_atomic_int_add(&p->done, 1) + 1 == p->total) {
        g_mutex_lock(&p->lock);
        g_cond_signal(&p->finished);
        g_mutex_unlock(&p->lock);
    }
}

guint ssim_sweep_run(SsimSweep *sweep, guint first, guint stride, guint n_threads,
                     SsimSweepProgressFn progress, gpointer user, guint interval_ms)
{
    g_return_val_if_fail(sweep && stride >= 1, 0);
    guint total = first < sweep->n_rows ? (sweep->n_rows - first + stride - 1) / stride : 0;
    gint64 t0 = g_get_monotonic_time();
    if (n_threads == 0)
        n_threads = g_get_num_processors();
    n_threads = MAX(1u, MIN(n_threads, MAX(total, 1u)));
    Pool p = {.sweep = sweep, .done = 0, .total = total};
    g_mutex_init(&p.lock);
    g_cond_init(&p.finished);
    if (total > 0) {
        GThreadPool *pool = g_thread_pool_new(work, &p, (gint)n_threads, FALSE, NULL);
        for (guint k = first; k < sweep->n_rows; k += stride) {
            g_thread_pool_push(pool, GUINT_TO_POINTER(k + 1), NULL);
            if (k > G_MAXUINT - stride)
                break;
        }
        g_mutex_lock(&p.lock);
        while ((guint)g_atomic_int_get(&p.done) < total) {
            gint64 deadline = g_get_monotonic_time() + (gint64)MAX(interval_ms, 10u) * 1000;
            g_cond_wait_until(&p.finished, &p.lock, deadline);
            guint done = (guint)g_atomic_int_get(&p.done);
            if (progress && done < total) {
                g_mutex_unlock(&p.lock);
                progress(done, total, (double)(g_get_monotonic_time() - t0) / 1e6, user);
                g_mutex_lock(&p.lock);
            }
        }
        g_mutex_unlock(&p.lock);
        g_thread_pool_free(pool, FALSE, TRUE);
    }
    if (progress)
        progress(total, total, (double)(g_get_monotonic_time() - t0) / 1e6, user);
    g_mutex_clear(&p.lock);
    g_cond_clear(&p.finished);
    return total;
}

/* ---- output ------------------------------------------------------------------------------ */

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

static double gib(guint64 b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

static void csv_quoted(GString *o, const char *s)
{
    g_string_append_c(o, '"');
    for (; *s; s++) {
        if (*s == '"')
            g_string_append_c(o, '"');
        g_string_append_c(o, *s);
    }
    g_string_append_c(o, '"');
}

static void csv_metadata(GString *o, const SsimSweep *s)
{
    const SsimSweepSpec *sp = &s->spec;
    g_autofree char *tp = ssim_sweep_ints_format(&sp->tp);
    g_autofree char *pp = ssim_sweep_ints_format(&sp->pp);
    g_autofree char *v = ssim_sweep_ints_format(&sp->vstages);
    g_autofree char *mb = ssim_sweep_ints_format(&sp->microbatch);
    g_autofree char *rc = ssim_sweep_recompute_format(&sp->recompute);
    g_autofree char *sc = ssim_sweep_names_format(&sp->schedules);
    g_autofree char *pl = ssim_sweep_names_format(&sp->placements);
    g_autofree char *base = ssim_parallel_to_string(&sp->base);
    g_string_append(o, CSV_FORMAT "\n");
    g_string_append_printf(o,
                           "# model=%s cluster=%s gpus=%u configurations=%u tp=%s pp=%s v=%s "
                           "mb=%s schedules=%s recompute=%s placements=%s exact=%d base=%s\n",
                           s->model->name, s->cluster->name, sp->n_gpus, s->n_rows, tp, pp, v, mb,
                           sc, rc, pl, sp->exact ? 1 : 0, base);
}

static void csv_row(GString *o, const SsimSweepRow *r)
{
    const SsimParallel *p = &r->par;
    g_string_append_printf(o, "%u,%u,%u,%u,%u,%u,%u,", r->index, p->dp, p->tp, p->pp,
                           p->virtual_stages, p->microbatch, p->global_batch);
    guint64 per = (guint64)p->dp * p->microbatch;
    if (per && p->global_batch % per == 0)
        g_string_append_printf(o, "%" G_GUINT64_FORMAT, p->global_batch / per);
    const char *rec = r->auto_recompute && r->status == SSIM_SWEEP_ILLEGAL
                          ? "auto"
                          : ssim_recompute_name(p->recompute);
    g_string_append_printf(o, ",%s,%s,%s,%d,%u,%s,%s,%s,", p->schedule, p->placement, rec,
                           p->sequence_parallel ? 1 : 0, p->zero_stage,
                           ssim_tp_comm_name(p->tp_comm), ssim_sweep_status_name(r->status),
                           r->reason);
    const SsimResult *x = &r->result;
    if (r->status == SSIM_SWEEP_OK)
        g_string_append_printf(o, "%.6f,%.3f,%.4f,%.3f,%.5f,%.5f,%.6f,%.6f,%.6f,", ms(x->step_time),
                               x->tokens_per_s, x->samples_per_s, x->model_tflops_per_gpu, x->mfu,
                               x->bubble, ms(x->exposed[SSIM_COMM_TP]),
                               ms(x->exposed[SSIM_COMM_PP]), ms(x->exposed[SSIM_COMM_DP]));
    else
        g_string_append(o, ",,,,,,,,,");
    if (r->has_memory)
        g_string_append_printf(o, "%.3f", gib(x->memory.total));
    g_string_append_c(o, ',');
    if (r->detail[0])
        csv_quoted(o, r->detail);
    g_string_append_c(o, '\n');
}

GString *ssim_sweep_csv(const SsimSweep *sweep)
{
    GString *o = g_string_new(NULL);
    csv_metadata(o, sweep);
    g_string_append(o, CSV_HEADER "\n");
    for (guint i = 0; i < sweep->n_rows; i++)
        if (sweep->rows[i].status != SSIM_SWEEP_PENDING)
            csv_row(o, &sweep->rows[i]);
    return o;
}

static gint rank_cmp(gconstpointer a, gconstpointer b, gpointer user)
{
    const SsimSweep *s = user;
    const SsimSweepRow *x = &s->rows[*(const guint *)a], *y = &s->rows[*(const guint *)b];
    if (x->result.tokens_per_s != y->result.tokens_per_s)
        return x->result.tokens_per_s > y->result.tokens_per_s ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

GArray *ssim_sweep_ranking(const SsimSweep *sweep)
{
    GArray *idx = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < sweep->n_rows; i++)
        if (sweep->rows[i].status == SSIM_SWEEP_OK)
            g_array_append_val(idx, i);
    g_array_sort_with_data(idx, rank_cmp, (gpointer)sweep);
    return idx;
}

typedef struct {
    const char *status, *reason;
    guint count, first;
} Count;

static gint count_cmp(gconstpointer a, gconstpointer b)
{
    const Count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

GString *ssim_sweep_summary(const SsimSweep *sweep, guint k)
{
    GString *o = g_string_new(NULL);
    g_autoptr(GArray) rank = ssim_sweep_ranking(sweep);
    guint shown = MIN(k, rank->len);
    if (shown > 0) {
        g_string_append_printf(o,
                               "%4s %6s %4s %4s %4s %4s %4s %-12s %-10s %-9s %12s %10s %6s "
                               "%7s %8s\n",
                               "rank", "index", "dp", "tp", "pp", "v", "mb", "schedule",
                               "placement", "recompute", "tokens/s", "step ms", "MFU%", "bubble%",
                               "mem GiB");
        for (guint i = 0; i < shown; i++) {
            const SsimSweepRow *r = &sweep->rows[g_array_index(rank, guint, i)];
            const SsimParallel *p = &r->par;
            g_string_append_printf(
                o, "%4u %6u %4u %4u %4u %4u %4u %-12s %-10s %-9s %12.0f %10.3f %6.1f %7.1f %8.1f\n",
                i + 1, r->index, p->dp, p->tp, p->pp, p->virtual_stages, p->microbatch, p->schedule,
                p->placement, ssim_recompute_name(p->recompute), r->result.tokens_per_s,
                ms(r->result.step_time), 100 * r->result.mfu, 100 * r->result.bubble,
                gib(r->result.memory.total));
        }
        g_string_append_c(o, '\n');
    }
    /* Counts of each (status, reason), most frequent first, ties in order of first row. */
    g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(Count));
    guint evaluated = 0;
    for (guint i = 0; i < sweep->n_rows; i++) {
        const SsimSweepRow *r = &sweep->rows[i];
        if (r->status == SSIM_SWEEP_PENDING)
            continue;
        evaluated++;
        const char *st = ssim_sweep_status_name(r->status);
        guint j = 0;
        for (; j < counts->len; j++) {
            Count *c = &g_array_index(counts, Count, j);
            if (strcmp(c->status, st) == 0 && strcmp(c->reason, r->reason) == 0) {
                c->count++;
                break;
            }
        }
        if (j == counts->len) {
            Count c = {st, r->reason, 1, i};
            g_array_append_val(counts, c);
        }
    }
    g_array_sort(counts, count_cmp);
    g_string_append_printf(o,
                           "%u configurations of %s on %u GPUs (%u evaluated); %u simulated "
                           "and ranked",
                           sweep->n_rows, sweep->model->name, sweep->spec.n_gpus, evaluated,
                           rank->len);
    if (sweep->skipped_pairs)
        g_string_append_printf(o, "; %u tp x pp pairs do not divide %u GPUs and were left out",
                               sweep->skipped_pairs, sweep->spec.n_gpus);
    g_string_append(o, "\n");
    for (guint j = 0; j < counts->len; j++) {
        const Count *c = &g_array_index(counts, Count, j);
        g_string_append_printf(o, "%8u  %-8s %s\n", c->count, c->status,
                               c->reason[0] ? c->reason : "(simulated)");
    }
    return o;
}

/* ---- merge ------------------------------------------------------------------------------- */

typedef struct {
    guint index;
    const char *line; /* into a file's text, without its newline */
    gsize len;
    guint file, lineno; /* where it came from, for messages */
} Line;

/* Fields of one CSV line of `n` bytes (commas outside double quotes, plus one). */
static guint csv_n_fields(const char *q, gsize n)
{
    guint fields = 1;
    gboolean quoted = FALSE;
    for (gsize i = 0; i < n; i++)
        if (q[i] == '"')
            quoted = !quoted;
        else if (q[i] == ',' && !quoted)
            fields++;
    return fields;
}

static gint line_cmp(gconstpointer a, gconstpointer b)
{
    const Line *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->file != y->file) /* duplicates: the earlier place first, so messages are stable */
        return x->file < y->file ? -1 : 1;
    return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

GString *ssim_sweep_merge(const char *const *paths, guint n_paths, gboolean partial, GError **error)
{
    g_return_val_if_fail(n_paths >= 1, NULL);
    g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(Line));
    g_autofree char *head = NULL; /* the metadata and header lines of the first file */
    guint64 configurations = 0;
    for (guint f = 0; f < n_paths; f++) {
        char *text = NULL;
        gsize len = 0;
        GError *local = NULL;
        if (!g_file_get_contents(paths[f], &text, &len, &local)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s", local->message);
            g_error_free(local);
            return NULL;
        }
        g_ptr_array_add(texts, text);
        /* The head: every leading '#' line plus the header line. */
        const char *p = text;
        while (*p == '#') {
            const char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + strlen(p);
        }
        const char *nl = strchr(p, '\n');
        gboolean version_ok = g_str_has_prefix(text, CSV_FORMAT "\n");
        if (!version_ok || nl == NULL || strncmp(p, CSV_HEADER "\n", (gsize)(nl - p) + 1) != 0) {
            guint at = 1;
            for (const char *q = text; version_ok && q < p; q++)
                at += *q == '\n';
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VERSION,
                        "%s:%u: %s: not a shiftsim sweep CSV (expected '" CSV_FORMAT
                        "' and the v1 header)",
                        paths[f], at, version_ok ? "header" : "version");
            return NULL;
        }
        const char *body = nl + 1;
        const guint n_columns = csv_n_fields(CSV_HEADER, strlen(CSV_HEADER));
        g_autofree char *this_head = g_strndup(text, (gsize)(body - text));
        if (head == NULL) {
            head = g_steal_pointer(&this_head);
            const char *c = strstr(head, " configurations=");
            configurations = c ? g_ascii_strtoull(c + 16, NULL, 10) : 0;
        } else if (strcmp(head, this_head) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: its metadata or header lines differ from %s's: not a shard of the "
                        "same sweep",
                        paths[f], paths[0]);
            return NULL;
        }
        guint lineno = 0;
        for (const char *q = text; q < body; q++)
            lineno += *q == '\n';
        for (const char *q = body; *q;) {
            const char *e = strchr(q, '\n');
            gsize n = e ? (gsize)(e - q) : strlen(q);
            lineno++;
            if (n > 0) {
                char *end = NULL;
                guint64 idx = g_ascii_strtoull(q, &end, 10);
                if (end == q || *end != ',' || idx >= G_MAXUINT ||
                    (configurations && idx >= configurations)) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u: index: a row must start with a configuration index below "
                                "%" G_GUINT64_FORMAT,
                                paths[f], lineno, configurations);
                    return NULL;
                }
                /* A row cut short (a killed job, a truncated copy) has fewer fields or no
                 * newline: refuse it rather than merge half a row. */
                guint fields = csv_n_fields(q, n);
                if (fields != n_columns || e == NULL) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u: row: %u fields%s where the header has %u (a truncated "
                                "file?)",
                                paths[f], lineno, fields, e == NULL ? " and no end of line" : "",
                                n_columns);
                    return NULL;
                }
                Line l = {(guint)idx, q, n, f, lineno};
                g_array_append_val(lines, l);
            }
            q += n + (e ? 1 : 0);
        }
    }
    g_array_sort(lines, line_cmp);
    for (guint i = 1; i < lines->len; i++)
        if (g_array_index(lines, Line, i).index == g_array_index(lines, Line, i - 1).index) {
            const Line *a = &g_array_index(lines, Line, i - 1), *b = &g_array_index(lines, Line, i);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: index: configuration %u appears twice (also %s:%u; overlapping "
                        "shards?)",
                        paths[b->file], b->lineno, b->index, paths[a->file], a->lineno);
            return NULL;
        }
    if (!partial && lines->len != configurations) {
        guint missing = 0;
        for (guint i = 0; i < lines->len && g_array_index(lines, Line, i).index == missing; i++)
            missing++;
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%u of %" G_GUINT64_FORMAT " configurations present (configuration %u is "
                    "missing: is a shard left out?)",
                    lines->len, configurations, missing);
        return NULL;
    }
    GString *o = g_string_new(head);
    for (guint i = 0; i < lines->len; i++) {
        const Line *l = &g_array_index(lines, Line, i);
        g_string_append_len(o, l->line, (gssize)l->len);
        g_string_append_c(o, '\n');
    }
    return o;
}
