/*
 * Evaluating a sweep (include/shiftsim/sweep.h): each configuration's checks and simulation, on
 * a thread pool, and the two ways a large sweep is made cheaper: pruning by a lower bound and the
 * steady-state replay.
 *
 * A configuration is evaluated in two halves: prepare() checks it (legality, the placement's
 * name, the duplicate rule, memory, choosing the recompute mode under auto) and, when it can run,
 * simulate() replays it.  Without pruning every configuration of the shard goes through both on
 * the pool.  The calling thread waits on a condition variable with a timeout and draws progress
 * between waits; workers only bump an atomic counter and signal when the last one finishes.
 *
 * With pruning (spec.prune_top = K), the prepared configurations are sorted by their lower bound
 * (bound.h; ties by number) and committed in that order: configuration c counts as simulated only
 * when its bound does not exceed R, the K-th best step among the configurations committed before
 * it; the first that exceeds R ends the sweep, it and all after it pruned (R only falls as more
 * commit, bounds only rise).  Workers simulate ahead of the commit point, a window of 2 per
 * thread, and a result that lands past the end is discarded, so which rows are simulated depends
 * on the spec alone, never on the threads.  A configuration is not even started when its bound
 * already exceeds the R of the committed prefix: that R can only fall.
 *
 * With the steady-state replay, simulate() extrapolates from probes (steady.h), to within a small
 * error: the pruning threshold then allows STEADY_MARGIN on R, and at the end the best
 * max(K, 10) rows, and every extrapolated row within the margin of the last of them, are
 * simulated again in full, on the pool, so the rows ranked first are exact and are the full
 * sweep's as long as the extrapolation errs by less than the margin.
 */
#include "src/study/sweep-private.h"

#include <shiftsim/bound.h>
#include <shiftsim/budget.h>
#include <shiftsim/place.h>
#include <shiftsim/steady.h>

#include <stdlib.h>
#include <string.h>

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

/* The configuration of `row` as ssim_simulate() takes it; `placement` is filled by prepare(). */
static SsimSimConfig config_of(const SsimSweep *sweep, SsimSweepRow *row,
                               const SsimPlacement *placement)
{
    return (SsimSimConfig){.model = sweep->model,
                           .cluster = sweep->cluster,
                           .par = &row->par,
                           .exact = sweep->spec.exact,
                           .comm_repeat = sweep->spec.comm_repeat,
                           .max_ops = sweep->spec.max_ops,
                           .max_events = sweep->spec.max_events,
                           .max_memory = sweep->spec.max_memory,
                           .placement = placement};
}

/* The row's placement pass: its name's kind (and extensions) with what every row shares. */
static gboolean placement_of(const SsimSweep *sweep, const SsimSweepRow *row,
                             SsimPlacement *placement, GError **error)
{
    SsimPlacement own = SSIM_PLACEMENT_INIT;
    *placement = sweep->spec.placement;
    if (!ssim_placement_parse(row->par.placement, &own, error))
        return FALSE;
    placement->kind = own.kind;
    if (!(own.shifts & SSIM_SHIFT_DEFAULT))
        placement->shifts =
            own.shifts | (placement->shifts & SSIM_SHIFT_DEFAULT ? 0 : placement->shifts);
    return TRUE;
}

/*
 * The first half: starts `row` afresh from configuration `index`, checks it and picks its
 * recompute mode.  TRUE when it can be simulated (status still PENDING), FALSE with its final
 * status (illegal, memory, limit) recorded.
 */
static gboolean prepare(const SsimSweep *sweep, guint index, SsimSweepRow *row,
                        SsimPlacement *placement)
{
    g_assert(index < sweep->n_rows);
    *row = sweep->rows[index];
    row->status = SSIM_SWEEP_PENDING;
    row->reason[0] = row->detail[0] = '\0';
    row->has_memory = FALSE;
    row->bound = 0;
    row->steady = FALSE;
    memset(&row->result, 0, sizeof row->result);
    /* The memory half first: it tells an illegal split (no peak) from one that does not fit, and
     * under auto it picks the first recompute mode that fits. */
    guint first = row->auto_recompute ? SSIM_RECOMPUTE_NONE : row->par.recompute;
    guint last = row->auto_recompute ? SSIM_RECOMPUTE_LADDER - 1 : row->par.recompute;
    g_autoptr(GError) invalid = NULL;
    if (!ssim_parallel_resolve_layers(&row->par, sweep->model, &invalid) ||
        !ssim_parallel_validate(&row->par, sweep->model, sweep->cluster, &invalid)) {
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, invalid);
        return FALSE;
    }
    /* The placement name resolves to its pass (place.h), with what every row shares; an unknown
     * one is illegal. */
    g_autoptr(GError) unknown = NULL;
    if (!placement_of(sweep, row, placement, &unknown)) {
        g_autoptr(GError) bad = g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                            "placement: %s", unknown->message);
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, bad);
        return FALSE;
    }
    g_autoptr(GError) misplaced = NULL;
    if (!ssim_placement_check(placement, &row->par, &misplaced)) {
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, misplaced);
        return FALSE;
    }
    /* A legal interleaved 1F1B with one chunk per GPU is 1F1B itself: when both are swept, the
     * interleaved copy is marked so the ranking does not list every such split twice. */
    if (row->par.virtual_stages == 1 && strcmp(row->par.schedule, "interleaved") == 0 &&
        sweep->has_1f1b) {
        g_autoptr(GError) dup = g_error_new_literal(
            SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
            "duplicate: interleaved with v = 1 is 1f1b, which the sweep also runs");
        reject(row, SSIM_SWEEP_ILLEGAL, NULL, dup);
        return FALSE;
    }
    SsimSimConfig config = config_of(sweep, row, placement);
    for (guint mode = first; mode <= last; mode++) {
        g_autoptr(GError) error = NULL;
        if (!ssim_parallel_set_recompute(&row->par, sweep->model, (SsimRecompute)mode, &error)) {
            reject(row, SSIM_SWEEP_ILLEGAL, NULL, error);
            return FALSE;
        }
        SsimMemory peak;
        memset(&peak, 0, sizeof peak);
        if (ssim_simulate_memory(&config, &peak, &error)) {
            row->result.memory = peak;
            row->has_memory = TRUE;
            return TRUE;
        }
        if (g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT)) {
            /* The op or microbatch budget, checked before the schedule: the reason is the
             * message's field ("max_ops", "global_batch"). */
            reject(row, SSIM_SWEEP_LIMIT, NULL, error);
            return FALSE;
        }
        if (!g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY)) {
            /* not a misfit (the schedule refused, say): no estimate was made */
            reject(row, SSIM_SWEEP_ILLEGAL, NULL, error);
            return FALSE;
        }
        row->result.memory = peak;
        row->has_memory = TRUE;
        if (mode == last) {
            reject(row, SSIM_SWEEP_MEMORY, "does not fit in HBM", error);
            return FALSE;
        }
    }
    g_assert_not_reached();
}

/* The second half: simulates a prepared row (in full when `full`, else as the spec says). */
static void simulate(const SsimSweep *sweep, SsimSweepRow *row, const SsimPlacement *placement,
                     gboolean full)
{
    SsimSimConfig config = config_of(sweep, row, placement);
    g_autoptr(GError) error = NULL;
    SsimMemory peak = row->result.memory;
    SsimTime bound = row->bound;
    SsimSteadyInfo info = {0};
    gboolean ok = sweep->spec.steady && !full
                      ? ssim_simulate_steady(&config, &row->result, &info, &error)
                      : ssim_simulate(&config, &row->result, NULL, NULL, &error);
    row->bound = bound;
    row->steady = info.extrapolated;
    if (!ok) {
        row->result.memory = peak;
        if (g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT))
            reject(row, SSIM_SWEEP_LIMIT, "max_events", error);
        else if (g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY))
            reject(row, SSIM_SWEEP_LIMIT, "max_memory", error);
        else
            reject(row, SSIM_SWEEP_FAILED, "simulate", error);
        return;
    }
    row->status = SSIM_SWEEP_OK;
}

void ssim_sweep_eval(const SsimSweep *sweep, guint index, SsimSweepRow *row)
{
    SsimPlacement placement;
    if (prepare(sweep, index, row, &placement))
        simulate(sweep, row, &placement, FALSE);
}

/* ---- the pool ---- */

typedef enum { JOB_EVAL, JOB_PREPARE, JOB_SIMULATE, JOB_FULL } JobKind;

typedef struct {
    SsimSweep *sweep;
    JobKind kind;
    gint done; /* atomic */
    guint total;
    GMutex lock;
    GCond finished;
    guint8 *ready; /* JOB_SIMULATE: per row, set under the lock when its result is in */
    /* The progress's work (under the lock): per row its estimated ops, and the sums. */
    double *weight;
    double work_done, work_total;
} Pool;

/* The work of a finished job on row `index` (under the lock): a simulated row's ops are done, a
 * rejected row's leave the total. */
static void count_work(Pool *p, JobKind kind, guint index, SsimSweepStatus status)
{
    double w = p->weight ? p->weight[index] : 0;
    if (kind == JOB_FULL)
        return; /* a re-run of a row already counted */
    if (kind == JOB_SIMULATE || (kind == JOB_EVAL && status == SSIM_SWEEP_OK))
        p->work_done += w;
    else if (status != SSIM_SWEEP_PENDING) /* rejected by the eval or the preparation */
        p->work_total -= w;
}

/* Calls `progress` with the pool's figures, `done` of `total` configurations. */
static void report(Pool *p, SsimSweepProgressFn progress, gpointer user, guint done, guint total,
                   gint64 t0)
{
    g_mutex_lock(&p->lock);
    SsimSweepProgress pr = {done, total, p->work_done, MAX(p->work_total, p->work_done),
                            (double)(g_get_monotonic_time() - t0) / 1e6};
    g_mutex_unlock(&p->lock);
    progress(&pr, user);
}

static void work(gpointer data, gpointer user)
{
    Pool *p = user;
    guint index = GPOINTER_TO_UINT(data) - 1;
    SsimSweepRow row;
    SsimPlacement placement;
    switch (p->kind) {
    case JOB_EVAL:
        ssim_sweep_eval(p->sweep, index, &row);
        break;
    case JOB_PREPARE:
        /* The bound of what can run: the key pruning sorts by. */
        if (prepare(p->sweep, index, &row, &placement)) {
            SsimStepBound b;
            ssim_step_lower_bound(p->sweep->model, p->sweep->cluster, &row.par, &b);
            row.bound = b.step;
        }
        break;
    case JOB_SIMULATE:
    case JOB_FULL:
        row = p->sweep->rows[index];
        placement_of(p->sweep, &row, &placement, NULL); /* prepare() parsed it already */
        simulate(p->sweep, &row, &placement, p->kind == JOB_FULL);
        break;
    }
    g_mutex_lock(&p->lock);
    p->sweep->rows[index] = row;
    count_work(p, p->kind, index, row.status);
    if (p->ready)
        p->ready[index] = 1;
    g_atomic_int_add(&p->done, 1);
    g_cond_broadcast(&p->finished);
    g_mutex_unlock(&p->lock);
}

/* Runs `kind` on the rows `idx` (n of them) on `pool`'s threads and waits, drawing progress. */
static void run_jobs(Pool *p, GThreadPool *pool, const guint *idx, guint n, gint64 t0,
                     SsimSweepProgressFn progress, gpointer user, guint interval_ms, guint shown,
                     guint total_shown)
{
    p->done = 0;
    p->total = n;
    for (guint k = 0; k < n; k++)
        g_thread_pool_push(pool, GUINT_TO_POINTER(idx[k] + 1), NULL);
    g_mutex_lock(&p->lock);
    while ((guint)g_atomic_int_get(&p->done) < n) {
        gint64 deadline = g_get_monotonic_time() + (gint64)MAX(interval_ms, 10u) * 1000;
        g_cond_wait_until(&p->finished, &p->lock, deadline);
        guint done = (guint)g_atomic_int_get(&p->done);
        if (progress && done < n) {
            g_mutex_unlock(&p->lock);
            report(p, progress, user, shown + done, total_shown, t0);
            g_mutex_lock(&p->lock);
        }
    }
    g_mutex_unlock(&p->lock);
}

/* The K best steps so far, worst first (a sorted array: K is small). */
typedef struct {
    SsimTime *v;
    guint n, k;
} Best;

static void best_add(Best *b, SsimTime t)
{
    if (b->n == b->k) {
        if (t >= b->v[0])
            return;
        memmove(b->v, b->v + 1, (b->n - 1) * sizeof *b->v); /* drop the worst */
        b->n--;
    }
    guint i = b->n++;
    while (i > 0 && b->v[i - 1] < t) { /* v descending: the worst first */
        b->v[i] = b->v[i - 1];
        i--;
    }
    b->v[i] = t;
}

/* R: the K-th best step so far, or "none yet" (no pruning) while fewer than K are in. */
static SsimTime best_threshold(const Best *b)
{
    return b->n < b->k ? SSIM_TIME_NEVER : b->v[0];
}

/*
 * The steady-state replay extrapolates the step to within a small error (steady.h; measured
 * under 0.1% on the tests' and the benchmark's sweeps): with it, pruning allows ten times that
 * on the threshold, and every row within it of the K-th best is simulated again in full.
 */
#define STEADY_MARGIN 0.01

static SsimTime with_margin(SsimTime t)
{
    return t == SSIM_TIME_NEVER ? t : t + (SsimTime)((double)t * STEADY_MARGIN);
}

/* The pruning threshold: R, with the steady replay's margin. */
static SsimTime threshold(const SsimSweep *s, const Best *b)
{
    SsimTime r = best_threshold(b);
    return s->spec.steady ? with_margin(r) : r;
}

static gint cmp_bound(gconstpointer x, gconstpointer y, gpointer data)
{
    const SsimSweep *s = data;
    const SsimSweepRow *a = &s->rows[*(const guint *)x], *b = &s->rows[*(const guint *)y];
    if (a->bound != b->bound)
        return a->bound < b->bound ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static const char *ordinal(guint k)
{
    guint t = k % 100;
    return t >= 11 && t <= 13 ? "th"
           : k % 10 == 1      ? "st"
           : k % 10 == 2      ? "nd"
           : k % 10 == 3      ? "rd"
                              : "th";
}

static void prune_row(SsimSweepRow *row, SsimTime threshold, guint k)
{
    g_autofree char *msg =
        g_strdup_printf("bound: its step is at least %.3f ms (the lower bound), above %.3f ms, "
                        "the %u%s best step simulated",
                        (double)row->bound / 1e6, (double)threshold / 1e6, k, ordinal(k));
    g_autoptr(GError) e = g_error_new_literal(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, msg);
    SsimMemory memory = row->result.memory; /* the estimate stays; the figures go */
    memset(&row->result, 0, sizeof row->result);
    row->result.memory = memory;
    reject(row, SSIM_SWEEP_PRUNED, "bound", e);
    row->steady = FALSE;
}

/* The pruned evaluation (see the top of this file) of the candidates `cand` (n, prepared). */
static void run_pruned(Pool *p, GThreadPool *pool, guint *cand, guint n, guint threads, gint64 t0,
                       SsimSweepProgressFn progress, gpointer user, guint interval_ms, guint shown,
                       guint total_shown)
{
    SsimSweep *s = p->sweep;
    g_qsort_with_data(cand, (gint)n, sizeof *cand, cmp_bound, s);
    guint k = s->spec.prune_top;
    Best best = {.v = g_new(SsimTime, k), .k = k};
    p->ready = g_new0(guint8, s->n_rows);
    p->kind = JOB_SIMULATE;
    p->done = 0;
    p->total = n;
    guint window = 2 * threads, next = 0, commit = 0;
    gboolean stopped = FALSE;
    g_mutex_lock(&p->lock);
    while (commit < n && !stopped) {
        SsimTime r = threshold(s, &best);
        /* Start what may still count: within the window, and not already beyond R. */
        while (next < n && next < commit + window && s->rows[cand[next]].bound <= r) {
            g_thread_pool_push(pool, GUINT_TO_POINTER(cand[next] + 1), NULL);
            next++;
        }
        guint c = cand[commit];
        if (s->rows[c].bound > r) {
            stopped = TRUE; /* c and everything after it: pruned */
            break;
        }
        if (!p->ready[c]) {
            gint64 deadline = g_get_monotonic_time() + (gint64)MAX(interval_ms, 10u) * 1000;
            g_cond_wait_until(&p->finished, &p->lock, deadline);
            if (progress) {
                g_mutex_unlock(&p->lock);
                report(p, progress, user, shown + commit, total_shown, t0);
                g_mutex_lock(&p->lock);
            }
            continue;
        }
        if (s->rows[c].status == SSIM_SWEEP_OK)
            best_add(&best, s->rows[c].result.step_time);
        commit++;
    }
    g_mutex_unlock(&p->lock);
    /* Wait for what is still running, then prune from the stop on (discarding those results). */
    g_thread_pool_free(pool, FALSE, TRUE);
    SsimTime r = threshold(s, &best);
    for (guint i = commit; i < n; i++) {
        gboolean ran = p->ready[cand[i]] != 0; /* started before the stop: its work was done */
        prune_row(&s->rows[cand[i]], r, k);
        if (!ran && p->weight)
            p->work_total -= p->weight[cand[i]];
    }
    g_free(best.v);
    g_clear_pointer(&p->ready, g_free);
}

static int cmp_uint(const void *a, const void *b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;
    return (x > y) - (x < y);
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
    Pool p = {.sweep = sweep};
    g_mutex_init(&p.lock);
    g_cond_init(&p.finished);
    g_autofree guint *idx = g_new(guint, MAX(total, 1u));
    guint n = 0;
    for (guint k = first; k < sweep->n_rows && n < total; k += stride)
        idx[n++] = k;
    /* Each configuration's weight in the progress: its estimated ops. */
    if (progress) {
        p.weight = g_new0(double, sweep->n_rows);
        for (guint i = 0; i < n; i++) {
            SsimOpEstimate est;
            ssim_budget_estimate(sweep->model, &sweep->rows[idx[i]].par, sweep->spec.exact, &est);
            p.weight[idx[i]] = MAX(est.ops, 1.0);
            p.work_total += p.weight[idx[i]];
        }
    }
    if (total > 0) {
        GThreadPool *pool = g_thread_pool_new(work, &p, (gint)n_threads, FALSE, NULL);
        if (sweep->spec.prune_top == 0) {
            p.kind = JOB_EVAL;
            run_jobs(&p, pool, idx, n, t0, progress, user, interval_ms, 0, total);
        } else {
            p.kind = JOB_PREPARE;
            run_jobs(&p, pool, idx, n, t0, progress, user, interval_ms, 0, total);
            guint nc = 0;
            for (guint i = 0; i < n; i++)
                if (sweep->rows[idx[i]].status == SSIM_SWEEP_PENDING)
                    idx[nc++] = idx[i];
            run_pruned(&p, pool, idx, nc, n_threads, t0, progress, user, interval_ms, n - nc,
                       total);
            pool = g_thread_pool_new(work, &p, (gint)n_threads, FALSE, NULL);
        }
        if (sweep->spec.steady) {
            /* The rows ranked first, and any extrapolated one within the margin of the K-th
             * best, simulated again in full (in row order, for the pool). */
            g_autoptr(GArray) rank = ssim_sweep_ranking(sweep);
            guint top = MIN(rank->len, MAX(sweep->spec.prune_top, 10u)), nf = 0;
            SsimTime kth =
                top ? with_margin(sweep->rows[g_array_index(rank, guint, top - 1)].result.step_time)
                    : 0;
            for (guint i = 0; i < rank->len; i++) {
                guint r = g_array_index(rank, guint, i);
                if (sweep->rows[r].steady && (i < top || sweep->rows[r].result.step_time <= kth))
                    idx[nf++] = r;
            }
            qsort(idx, nf, sizeof *idx, cmp_uint);
            p.kind = JOB_FULL;
            run_jobs(&p, pool, idx, nf, t0, NULL, NULL, interval_ms, total, total);
        }
        g_thread_pool_free(pool, FALSE, TRUE);
    }
    if (progress)
        report(&p, progress, user, total, total, t0);
    g_free(p.weight);
    g_mutex_clear(&p.lock);
    g_cond_clear(&p.finished);
    return total;
}
