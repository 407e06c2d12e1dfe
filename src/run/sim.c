/*
 * The simulation driver (definitions of every figure are in include/shiftsim/sim.h).
 *
 * Order of work: validate the split, build the schedule, estimate memory for every stage and
 * reject a misfit before anything expensive, lower, build the analytic cost model with each
 * group's full logical membership, replay, measure.  Measuring walks the timeline once, files
 * each op's [start, end) interval under its rank and class, then merges the intervals per rank
 * (sort + sweep) to take unions and differences; no figure depends on the order ops were added,
 * so the same inputs give the same numbers bit for bit.
 */
#include <shiftsim/alloc.h>
#include <shiftsim/analytic.h>
#include <shiftsim/sim.h>
#include <shiftsim/net.h>
#include <shiftsim/netcal.h>

#include <math.h>
#include <string.h>
#include <time.h>

/* ---- interval arithmetic ----------------------------------------------------------------- */

typedef struct {
    SsimTime a, b;
} Iv;

static gint iv_cmp(gconstpointer x, gconstpointer y)
{
    const Iv *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Appends [s, e) to a list that iv_merge() will merge; an interval that starts inside the last
 * one extends it instead (the ops of a stream mostly run back to back, so a rank's thousands of
 * kernels become a few intervals before any sort; the merged list is the same). */
static inline void iv_push(GArray *a, gsize *room, SsimTime s, SsimTime e)
{
    if (e <= s)
        return;
    if (a->len > 0) {
        Iv *last = &g_array_index(a, Iv, a->len - 1);
        if (s >= last->a && s <= last->b) {
            last->b = MAX(last->b, e);
            return;
        }
    }
    *(Iv *)ssim_array_push(a, room, sizeof(Iv), 1) = (Iv){s, e};
}

/* Sorts and merges overlapping intervals in place.  The ops of one stream run in order, so most
 * lists arrive sorted and the sort is skipped. */
static void iv_merge(GArray *a)
{
    if (a->len == 0)
        return;
    const Iv *u = (const Iv *)a->data;
    for (guint i = 1; i < a->len; i++)
        if (iv_cmp(&u[i - 1], &u[i]) > 0) {
            g_array_sort(a, iv_cmp);
            break;
        }
    guint w = 0;
    Iv *v = (Iv *)a->data;
    for (guint i = 1; i < a->len; i++) {
        if (v[i].a <= v[w].b) {
            v[w].b = MAX(v[w].b, v[i].b);
        } else {
            v[++w] = v[i];
        }
    }
    g_array_set_size(a, w + 1);
}

/* The union of two merged lists, merged (a linear merge of the two). */
static GArray *iv_union(const GArray *x, const GArray *y)
{
    GArray *out = ssim_array_new_large(sizeof(Iv), (gsize)x->len + y->len);
    const Iv *p = (const Iv *)x->data, *q = (const Iv *)y->data;
    guint i = 0, j = 0;
    while (i < x->len || j < y->len) {
        const Iv *next =
            j >= y->len || (i < x->len && iv_cmp(&p[i], &q[j]) <= 0) ? &p[i++] : &q[j++];
        Iv *last = out->len ? &g_array_index(out, Iv, out->len - 1) : NULL;
        if (last != NULL && next->a <= last->b)
            last->b = MAX(last->b, next->b);
        else
            g_array_append_val(out, *next);
    }
    return out;
}

static SsimTime iv_measure(const GArray *a)
{
    SsimTime t = 0;
    for (guint i = 0; i < a->len; i++)
        t += g_array_index(a, Iv, i).b - g_array_index(a, Iv, i).a;
    return t;
}

/* Measure of the intersection of two merged lists. */
static SsimTime iv_intersect(const GArray *x, const GArray *y)
{
    SsimTime t = 0;
    guint i = 0, j = 0;
    while (i < x->len && j < y->len) {
        const Iv *p = &g_array_index(x, Iv, i), *q = &g_array_index(y, Iv, j);
        SsimTime lo = MAX(p->a, q->a), hi = MIN(p->b, q->b);
        if (hi > lo)
            t += hi - lo;
        if (p->b < q->b)
            i++;
        else
            j++;
    }
    return t;
}

/* ---- measuring --------------------------------------------------------------------------- */

typedef struct SimAccum SimAccum;

/* A GPU's interval lists: its phase kernels (forward, backward, recompute), its other kernels,
 * and its communication of each class (LIST_COMM + SsimCommClass). */
enum { LIST_PHASE, LIST_OPTIMIZER, LIST_COMM, N_LISTS = LIST_COMM + SSIM_COMM_N };

typedef struct {
    GArray *list[N_LISTS];
    gsize room[N_LISTS]; /* ssim_array_push */
} RankIv;

/* The list (LIST_*) an op of class `cls` is filed into, or -1. */
static int list_of_class(guint8 cls)
{
    switch ((SsimOpClass)cls) {
    case SSIM_OPCLASS_FWD:
    case SSIM_OPCLASS_BWD:
    case SSIM_OPCLASS_RECOMPUTE:
        return LIST_PHASE;
    case SSIM_OPCLASS_OPTIMIZER:
        return LIST_OPTIMIZER;
    case SSIM_OPCLASS_TP:
    case SSIM_OPCLASS_CP: /* reported with tp (opclass.h) */
        return LIST_COMM + SSIM_COMM_TP;
    case SSIM_OPCLASS_PP:
        return LIST_COMM + SSIM_COMM_PP;
    case SSIM_OPCLASS_DP:
        return LIST_COMM + SSIM_COMM_DP;
    default:
        return -1;
    }
}

/* Files copy `c` of the ops `ops` (n) of one rank into its interval lists (emptied first). */
static void rank_intervals(RankIv *x, const SsimTimeline *tl, guint c, const guint8 *cls,
                           const guint32 *ops, guint32 n)
{
    guint copies = MAX(tl->n_copies, 1);
    for (guint k = 0; k < N_LISTS; k++)
        g_array_set_size(x->list[k], 0);
    for (guint32 j = 0; j < n; j++) {
        guint32 i = ops[j];
        gsize at = (gsize)i * copies + c;
        int k = list_of_class(cls[i]);
        if (k >= 0)
            iv_push(x->list[k], &x->room[k], tl->start[at], tl->end[at]);
    }
}

/*
 * What measuring needs of each graph op, without its times: its class, rank and per-iteration
 * term (-1: none; an op's term follows from its name, ssim_lower_step_cost_of, asked once per
 * distinct name; no recompute, TP or PP op belongs to one), the ops of each rank in graph order
 * (CSR), and the FLOPs (as ssim_lowered_flops sums them).  One pass over the graph's ops: a
 * large graph's ops do not stay in the caches.
 */
typedef struct {
    guint nr, copies;
    guint32 n_ops;
    guint8 *cls;
    gint8 *term;
    guint32 *rank_of, *first, *ops;
    double flops_model, flops_all;
    guint64 step_cost_ops[SSIM_STEP_COST_N];
} OpPass;

static void op_pass_init(OpPass *p, const SsimLowered *lowered, guint copies)
{
    const SsimGraph *g = ssim_lowered_graph(lowered);
    memset(p, 0, sizeof *p);
    ssim_lowered_rank_map(lowered, &p->nr);
    p->copies = MAX(copies, 1);
    guint32 n_ops = p->n_ops = ssim_graph_n_ops(g);
    p->cls = g_new(guint8, MAX(n_ops, 1));
    p->term = g_new(gint8, MAX(n_ops, 1));
    p->rank_of = g_new(guint32, MAX(n_ops, 1));
    p->first = g_new0(guint32, p->nr + 1);
    p->ops = g_new(guint32, MAX(n_ops, 1));
    guint32 n_names = ssim_graph_n_strings(g);
    g_autofree gint8 *term_of = g_new(gint8, MAX(n_names, 1));
    memset(term_of, -2, MAX(n_names, 1)); /* -2: not asked yet, -1: no term */
    for (guint32 i = 0; i < n_ops; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        guint8 c = p->cls[i] = (guint8)ssim_lowered_op_class(lowered, i);
        p->rank_of[i] = op->rank;
        p->first[op->rank + 1]++;
        p->flops_all += op->flops;
        if (c != SSIM_OPCLASS_RECOMPUTE)
            p->flops_model += op->flops;
        p->term[i] = -1;
        if (c == SSIM_OPCLASS_RECOMPUTE || c == SSIM_OPCLASS_TP || c == SSIM_OPCLASS_PP ||
            c == SSIM_OPCLASS_CP || op->name == SSIM_NONE)
            continue;
        if (term_of[op->name] == -2) {
            SsimStepCost t;
            term_of[op->name] =
                ssim_lower_step_cost_of(ssim_graph_string(g, op->name), &t) ? (gint8)t : -1;
        }
        p->term[i] = term_of[op->name];
        if (p->term[i] >= 0)
            p->step_cost_ops[p->term[i]] += p->copies;
    }
    for (guint i = 0; i < p->nr; i++)
        p->first[i + 1] += p->first[i];
    g_autofree guint32 *fill = g_memdup2(p->first, sizeof(guint32) * (p->nr + 1));
    for (guint32 i = 0; i < n_ops; i++)
        p->ops[fill[p->rank_of[i]]++] = i;
}

static void op_pass_clear(OpPass *p)
{
    g_free(p->cls);
    g_free(p->term);
    g_free(p->rank_of);
    g_free(p->first);
    g_free(p->ops);
}

static void rank_iv_init(RankIv *x)
{
    for (guint k = 0; k < N_LISTS; k++) {
        x->list[k] = g_array_new(FALSE, FALSE, sizeof(Iv));
        x->room[k] = 0;
    }
}

static void rank_iv_clear(RankIv *x)
{
    for (guint k = 0; k < N_LISTS; k++)
        g_array_free(x->list[k], TRUE);
}

/*
 * A replicated run measured as it goes (SsimOpSink, runtime.h): every GPU's interval lists, the
 * pipeline window and the per-iteration terms' time, filled as op copies end, so the run keeps
 * no per-copy times.  The lists are the ones ssim_result_measure() files from a timeline, in
 * another order, and iv_merge() makes them the same.  Each list's last interval is kept apart,
 * in a small array every GPU's lists share (the lists' own tails, one per list of a thousand
 * GPUs, would miss the caches on every op), and appended when an op starts past it: what
 * iv_push() does with the last element.
 */
typedef struct {
    guint32 gpu0; /* the op's rank times the copies: its copy c is GPU gpu0 + c */
    gint8 list;   /* LIST_*, or -1 (a class no list takes) */
    gint8 term;   /* its per-iteration term, or -1 */
} OpKey;

struct SimAccum {
    OpPass pass;
    OpKey *key;   /* per graph op */
    RankIv *gpus; /* rank * copies + copy */
    Iv *open;     /* per GPU and list: the list's last interval (a = -1: none yet) */
    SsimTime w0, w1;
    SsimTime step_time[SSIM_STEP_COST_N];
};

static void accum_op_end(gpointer data, guint32 op, guint copy, SsimTime start, SsimTime end)
{
    SimAccum *a = data;
    OpKey k = a->key[op];
    if (k.list == LIST_PHASE) {
        a->w0 = MIN(a->w0, start);
        a->w1 = MAX(a->w1, end);
    }
    if (k.term >= 0)
        a->step_time[k.term] += end - start;
    if (k.list < 0 || end <= start)
        return;
    gsize g = (gsize)k.gpu0 + copy;
    Iv *o = &a->open[g * N_LISTS + (guint)k.list];
    if (o->a >= 0 && start >= o->a && start <= o->b) {
        o->b = MAX(o->b, end);
        return;
    }
    if (o->a >= 0) {
        RankIv *x = &a->gpus[g];
        *(Iv *)ssim_array_push(x->list[k.list], &x->room[k.list], sizeof(Iv), 1) = *o;
    }
    *o = (Iv){start, end};
}

/* Appends every list's last interval: the lists are then what iv_push() would have made. */
static void accum_close(SimAccum *a)
{
    gsize n = (gsize)a->pass.nr * a->pass.copies;
    for (gsize g = 0; g < n; g++)
        for (guint k = 0; k < N_LISTS; k++) {
            Iv *o = &a->open[g * N_LISTS + k];
            if (o->a < 0)
                continue;
            RankIv *x = &a->gpus[g];
            *(Iv *)ssim_array_push(x->list[k], &x->room[k], sizeof(Iv), 1) = *o;
            o->a = -1;
        }
}

static SimAccum *accum_new(const SsimLowered *lowered, guint copies)
{
    SimAccum *a = g_new0(SimAccum, 1);
    op_pass_init(&a->pass, lowered, copies);
    gsize n = (gsize)a->pass.nr * a->pass.copies;
    a->gpus = g_new(RankIv, MAX(n, 1));
    a->open = g_new(Iv, MAX(n * N_LISTS, 1));
    for (gsize i = 0; i < n; i++)
        rank_iv_init(&a->gpus[i]);
    for (gsize i = 0; i < n * N_LISTS; i++)
        a->open[i] = (Iv){-1, -1};
    a->key = g_new(OpKey, MAX(a->pass.n_ops, 1));
    for (guint32 i = 0; i < a->pass.n_ops; i++)
        a->key[i] = (OpKey){.gpu0 = a->pass.rank_of[i] * a->pass.copies,
                            .list = (gint8)list_of_class(a->pass.cls[i]),
                            .term = a->pass.term[i]};
    a->w0 = SSIM_TIME_NEVER;
    return a;
}

static void accum_free(SimAccum *a)
{
    if (a == NULL)
        return;
    gsize n = (gsize)a->pass.nr * a->pass.copies;
    for (gsize i = 0; i < n; i++)
        rank_iv_clear(&a->gpus[i]);
    g_free(a->gpus);
    g_free(a->open);
    g_free(a->key);
    op_pass_clear(&a->pass);
    g_free(a);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimAccum, accum_free)

/* One GPU's bubble and exposure from its interval lists (merged here), added to the sums. */
static void gpu_figures(RankIv *x, const GArray *window, double *bubble_sum,
                        SsimTime exp_sum[SSIM_COMM_N], SsimTime busy_sum[SSIM_COMM_N],
                        SsimTime exposed_max[SSIM_COMM_N])
{
    for (guint k = 0; k < N_LISTS; k++)
        iv_merge(x->list[k]);
    GArray *const *comm = x->list + LIST_COMM;
    /* Kernels: every compute op; work: phase kernels and TP collectives. */
    g_autoptr(GArray) kernels = iv_union(x->list[LIST_PHASE], x->list[LIST_OPTIMIZER]);
    g_autoptr(GArray) work_iv = iv_union(x->list[LIST_PHASE], comm[SSIM_COMM_TP]);
    SsimTime work = iv_intersect(work_iv, window);
    SsimTime idle = iv_measure(window) - work;
    if (work > 0)
        *bubble_sum += (double)idle / (double)work;
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        SsimTime busy = iv_measure(comm[k]);
        SsimTime exposed = busy - iv_intersect(comm[k], kernels);
        busy_sum[k] += busy;
        exp_sum[k] += exposed;
        exposed_max[k] = MAX(exposed_max[k], exposed);
    }
}

/* ssim_result_measure(), from the timeline's per-copy times or, with `acc`, from what the run
 * filed into it as it went (the timeline then has no start and end). */
static void measure(SsimResult *r, const SsimLowered *lowered, const SsimTimeline *tl,
                    SimAccum *acc, const SsimModel *model, const SsimParallel *par,
                    double peak_flops)
{
    /* A replicated timeline (runtime.h) holds every copy of every op: each is a GPU measured. */
    guint copies = MAX(tl->n_copies, 1);
    OpPass own;
    const OpPass *p = &own;
    if (acc != NULL)
        p = &acc->pass;
    else
        op_pass_init(&own, lowered, copies);
    guint nr = p->nr;
    guint n_gpus = nr * copies;

    r->n_gpus = ssim_parallel_world(par);
    r->m = ssim_parallel_n_microbatches(par);
    r->step_time = tl->makespan;
    r->n_graph_ranks = n_gpus;
    r->n_ops = tl->n_ops;
    r->events = tl->events;
    r->peak_flops = peak_flops;
    /* The host's share (host issue, runtime.h): the GPUs' idle time waiting for launches. */
    r->has_host = tl->host_wait != NULL;
    r->host_wait = r->host_wait_max = 0;
    for (gsize k = 0; r->has_host && k < n_gpus; k++) {
        r->host_wait += tl->host_wait[k];
        r->host_wait_max = MAX(r->host_wait_max, tl->host_wait[k]);
    }
    r->host_wait = n_gpus ? r->host_wait / (SsimTime)n_gpus : 0;
    /* The per-iteration terms: their ops' time, summed, per GPU. */
    r->step_costs_on = ssim_parallel_step_costs(par, model);
    for (guint t = 0; t < SSIM_STEP_COST_N; t++) {
        r->step_cost_ops[t] += p->step_cost_ops[t];
        if (acc != NULL)
            r->step_cost_time[t] += acc->step_time[t];
    }
    for (guint32 i = 0; acc == NULL && i < p->n_ops; i++)
        for (guint c = 0; p->term[i] >= 0 && c < copies; c++) {
            gsize at = (gsize)i * copies + c;
            r->step_cost_time[p->term[i]] += tl->end[at] - tl->start[at];
        }
    for (guint t = 0; t < SSIM_STEP_COST_N; t++)
        r->step_cost_time[t] = n_gpus ? r->step_cost_time[t] / (SsimTime)n_gpus : 0;
    r->model_flops = p->flops_model * ssim_lowered_weight(lowered);
    r->hardware_flops = p->flops_all * ssim_lowered_weight(lowered);
    double step = ssim_time_to_seconds(tl->makespan);
    if (step > 0) {
        r->samples_per_s = par->global_batch / step;
        r->tokens_per_s = (double)par->global_batch * model->seq_len / step;
        r->model_tflops_per_gpu = r->model_flops / step / r->n_gpus / 1e12;
        r->hardware_tflops_per_gpu = r->hardware_flops / step / r->n_gpus / 1e12;
        if (peak_flops > 0) {
            r->mfu = r->model_tflops_per_gpu * 1e12 / peak_flops;
            r->hfu = r->hardware_tflops_per_gpu * 1e12 / peak_flops;
        }
    }

    /* The pipeline window: the phase kernels of every GPU. */
    SsimTime w0 = SSIM_TIME_NEVER, w1 = 0;
    if (acc != NULL) {
        w0 = acc->w0;
        w1 = acc->w1;
        accum_close(acc);
    }
    for (guint32 i = 0; acc == NULL && i < p->n_ops; i++)
        for (guint c = 0; list_of_class(p->cls[i]) == LIST_PHASE && c < copies; c++) {
            w0 = MIN(w0, tl->start[(gsize)i * copies + c]);
            w1 = MAX(w1, tl->end[(gsize)i * copies + c]);
        }
    g_autoptr(GArray) window = g_array_new(FALSE, FALSE, sizeof(Iv));
    gsize window_room = 0;
    iv_push(window, &window_room, w0 == SSIM_TIME_NEVER ? 0 : w0, w1);

    /* Every GPU in turn: its own lists (acc), or one set refilled from the timeline. */
    RankIv x;
    if (acc == NULL)
        rank_iv_init(&x);
    double bubble_sum = 0;
    SsimTime exp_sum[SSIM_COMM_N] = {0}, busy_sum[SSIM_COMM_N] = {0};
    memset(r->exposed_max, 0, sizeof r->exposed_max);
    for (guint i = 0; i < nr; i++)
        for (guint c = 0; c < copies; c++) {
            RankIv *y = &x;
            if (acc != NULL)
                y = &acc->gpus[(gsize)i * copies + c];
            else
                rank_intervals(&x, tl, c, p->cls, p->ops + p->first[i],
                               p->first[i + 1] - p->first[i]);
            gpu_figures(y, window, &bubble_sum, exp_sum, busy_sum, r->exposed_max);
        }
    r->bubble = n_gpus ? bubble_sum / n_gpus : 0;
    for (guint k = 0; k < SSIM_COMM_N; k++) {
        r->exposed[k] = n_gpus ? exp_sum[k] / (SsimTime)n_gpus : 0;
        r->comm_busy[k] = n_gpus ? busy_sum[k] / (SsimTime)n_gpus : 0;
    }
    if (acc == NULL) {
        rank_iv_clear(&x);
        op_pass_clear(&own);
    }
}

void ssim_result_measure(SsimResult *r, const SsimLowered *lowered, const SsimTimeline *tl,
                         const SsimModel *model, const SsimParallel *par, double peak_flops)
{
    measure(r, lowered, tl, NULL, model, par, peak_flops);
}

char *ssim_mfu_implausible(double mfu, double step_seconds, const char *what)
{
    if (!isfinite(mfu) || mfu > SSIM_MFU_PLAUSIBLE_MAX)
        return g_strdup_printf("%s: a step of %.6g s means an MFU of %.3g%%, above 100%%: faster "
                               "than the GPUs' peak (a profile in the wrong unit or of another "
                               "GPU, or not this model and split?)",
                               what, step_seconds, 100 * mfu);
    if (mfu < SSIM_MFU_PLAUSIBLE_MIN)
        return g_strdup_printf("%s: a step of %.6g s means an MFU of %.3g%%, below 1%%: "
                               "implausibly slow (a profile in the wrong unit, broken rows, or "
                               "not this model and split?)",
                               what, step_seconds, 100 * mfu);
    return NULL;
}

/* ---- the driver -------------------------------------------------------------------------- */

/* Processor time of this thread, for SsimSimTimes. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Adds the time since *mark to *slot (when timing is on) and restarts the mark. */
static void lap(const SsimSimConfig *config, double *mark, double *slot)
{
    if (config->times == NULL)
        return;
    double t = cpu_now();
    *slot += t - *mark;
    *mark = t;
}

/* The flow network's view of a graph group: the global ranks its collective really involves. */
static const guint32 *lowered_group_members(gpointer data, guint32 group, guint *n)
{
    return ssim_lowered_group_ranks(data, group, n);
}

/* The flow network's view of a representative's copies. */
static guint32 lowered_copy_gpu(gpointer data, guint32 gpu, guint copy)
{
    return ssim_lowered_copy_gpu(data, gpu, copy);
}

/* The analytical model of `lowered` under `ap`: its ranks' GPUs, its groups' logical shapes and
 * its kernels' GEMM shapes. */
static SsimAnalytic *analytic_for(const SsimAnalyticParams *ap, const SsimLowered *lowered,
                                  const SsimModel *model, const SsimParallel *par)
{
    SsimAnalytic *analytic = ssim_analytic_new(ap);
    guint nr;
    const guint32 *map = ssim_lowered_rank_map(lowered, &nr);
    ssim_analytic_set_rank_map(analytic, map, nr);
    const SsimGraph *graph = ssim_lowered_graph(lowered);
    for (guint32 gi = 0; gi < ssim_graph_n_groups(graph); gi++) {
        guint n;
        const guint32 *ranks = ssim_lowered_group_ranks(lowered, gi, &n);
        ssim_analytic_set_group(analytic, gi, ranks, n);
    }
    SsimModel local; /* a GPU's share of each sequence under context parallelism */
    ssim_analytic_set_model_gemms(analytic, ssim_parallel_local_model(par, model, &local),
                                  par->microbatch, par->tp, par->fp8 != SSIM_FP8_OFF);
    return analytic;
}

/* Auto's evaluator: one replay of a candidate graph under the run configuration. */
static SsimTimeline *eval_run(gpointer data, const SsimGraph *graph, GError **error)
{
    return ssim_runtime_run_config(graph, data, error);
}

/* Validates the split, builds its schedule and fills the peak memory estimate. */
static SsimSchedule *prepare(const SsimSimConfig *config, SsimMemory *peak, GError **error)
{
    const SsimParallel *par = config->par;
    if (!ssim_parallel_validate(par, config->model, config->cluster, error))
        return NULL;
    if (config->placement != NULL &&
        !ssim_site_set_check(&config->placement->grads, config->model, error))
        return NULL;
    /* Before the schedule and the lowering allocate anything (include/shiftsim/budget.h). */
    if (!ssim_budget_check(config->model, par, config->exact, config->max_ops, error) ||
        !ssim_budget_check_time(config->model, config->cluster, par, error))
        return NULL;
    SsimScheduleKind kind;
    if (!ssim_schedule_kind_from_name(par->schedule, &kind)) {
        g_autofree char *names = ssim_schedule_kind_list();
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "schedule: unknown schedule '%s' (known: %s)", par->schedule, names);
        return NULL;
    }
    guint m = ssim_parallel_n_microbatches(par);
    SsimSchedule *sched = ssim_schedule_new(kind, par->pp, par->virtual_stages, m, error);
    if (sched == NULL)
        return NULL;
    for (guint s = 0; s < par->pp; s++) {
        SsimMemory mem;
        ssim_memory_estimate(&mem, config->model, par, s, ssim_schedule_in_flight(sched, s));
        if (s == 0 || mem.total > peak->total)
            *peak = mem;
    }
    return sched;
}

/* ---- ways out of a memory misfit --------------------------------------------------------- */

/* The peak estimate of `par` (otherwise `config`'s job) plus `extra` bytes, in *total; FALSE when
 * `par` is not a legal configuration (the estimate says nothing then). */
static gboolean peak_of(const SsimSimConfig *config, const SsimParallel *par, guint64 extra,
                        guint64 *total)
{
    SsimSimConfig c = *config;
    c.par = par;
    SsimMemory peak = {0};
    g_autoptr(SsimSchedule) sched = prepare(&c, &peak, NULL);
    *total = peak.total + extra;
    return sched != NULL;
}

/* Tries `par` and, when it fits, lists `option` with its peak in `fits`. */
static gboolean try_way(const SsimSimConfig *config, const SsimParallel *par, guint64 extra,
                        const char *option, GString *fits)
{
    guint64 total = 0;
    if (!peak_of(config, par, extra, &total) || total > config->cluster->hbm_bytes)
        return FALSE;
    g_string_append_printf(fits, "%s%s (%.1f GiB)", fits->len ? ", " : "", option,
                           (double)total / (1u << 30));
    return TRUE;
}

/* Turns `p` into its ZeRO-3 form (no bucket: ZeRO-3 reduces unit by unit); FALSE where that is
 * no way out: already ZeRO-3, one replica, or a placement that cannot run it. */
static gboolean zero3_way(const SsimSimConfig *config, SsimParallel *p)
{
    if (p->zero_stage >= 3 || ssim_parallel_size(p, SSIM_AXIS_DP) == 1)
        return FALSE;
    p->zero_stage = 3;
    p->dp_bucket_bytes = 0;
    return config->placement == NULL || ssim_placement_check(config->placement, p, NULL);
}

/* The recompute mode that keeps less than `mode` on the automatic ladder (none, selective, full;
 * op-level checkpointing keeps more than full), or SSIM_RECOMPUTE_N after full. */
static SsimRecompute more_recompute(SsimRecompute mode)
{
    if (mode == SSIM_RECOMPUTE_OP)
        return SSIM_RECOMPUTE_FULL;
    return mode + 1 < SSIM_RECOMPUTE_LADDER ? (SsimRecompute)(mode + 1) : SSIM_RECOMPUTE_N;
}

/*
 * Appends to a memory misfit's message (`error`, SSIM_CONFIG_ERROR_MEMORY) the options that
 * would make the job fit, tried in this order with the memory model only (a schedule per try, no
 * lowering): the 1F1B order instead of an all-forwards-first one, more recompute, a smaller
 * microbatch, ZeRO-1 (else ZeRO-3, where the placement moves no step-end gradient reduction), a
 * smaller global batch; each that fits alone is named with its peak.  When
 * none does, they are tried together; and --ignore-memory always closes the list.  `extra` is
 * what the placement keeps alive on top of the estimate.
 */
static void add_memory_hints(const SsimSimConfig *config, guint64 extra, GError **error)
{
    if (error == NULL || *error == NULL ||
        !g_error_matches(*error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY))
        return;
    const SsimParallel *par = config->par;
    g_autoptr(GString) fits = g_string_new(NULL);
    char option[96];

    /* Each way alone. */
    const char *in_order =
        strcmp(par->schedule, "alpa-gpipe") == 0                                   ? "alpa"
        : strcmp(par->schedule, "gpipe") == 0 || strcmp(par->schedule, "xla") == 0 ? "1f1b"
                                                                                   : NULL;
    if (in_order) {
        SsimParallel p = *par;
        g_strlcpy(p.schedule, in_order, sizeof p.schedule);
        g_snprintf(option, sizeof option, "--schedule %s", in_order);
        try_way(config, &p, extra, option, fits);
    }
    for (SsimRecompute mode = more_recompute(par->recompute); mode != SSIM_RECOMPUTE_N;
         mode = more_recompute(mode)) {
        SsimParallel p = *par;
        if (!ssim_parallel_set_recompute(&p, config->model, mode, NULL))
            break;
        g_snprintf(option, sizeof option, "--recompute %s", ssim_recompute_name(p.recompute));
        if (try_way(config, &p, extra, option, fits))
            break; /* more recompute than the first that fits costs time for nothing */
    }
    /* The largest smaller microbatch that fits (a divisor: the global batch stays legal). */
    for (guint mb = par->microbatch - 1; mb >= 1 && par->microbatch > 1; mb--) {
        if (par->microbatch % mb != 0)
            continue;
        SsimParallel p = *par;
        p.microbatch = mb;
        g_snprintf(option, sizeof option, "--microbatch %u", mb);
        if (try_way(config, &p, extra, option, fits))
            break;
    }
    /* Sharding over dp: the optimizer state first (ZeRO-1), else the weights and gradients too
     * (ZeRO-3, which reduces every microbatch: no bucket, which the drivers' default bucket
     * knows; a bucket the user gave is refused with its own message). */
    if (par->zero_stage < 3 && ssim_parallel_size(par, SSIM_AXIS_DP) > 1) {
        SsimParallel p = *par;
        p.zero_stage = 1;
        if ((par->zero_stage >= 1 || !try_way(config, &p, extra, "--zero 1", fits)) &&
            zero3_way(config, &p))
            try_way(config, &p, extra, "--zero 3", fits);
    }
    /* Halving the microbatches a pipeline holds, the largest batch that fits first, down to one
     * per stage: a pipeline that cannot fill is no way out (and under 1F1B, where a stage holds
     * at most pp - s microbatches, a smaller batch never helps before that). */
    guint per_step = par->dp * par->microbatch;
    guint m_floor = MAX(par->pp, 2u);
    for (guint m = ssim_parallel_n_microbatches(par) / 2; m >= m_floor; m /= 2) {
        SsimParallel p = *par;
        p.global_batch = per_step * m;
        g_snprintf(option, sizeof option, "--global-batch %u", p.global_batch);
        if (try_way(config, &p, extra, option, fits))
            break;
    }
    g_autofree char *old = (*error)->message; /* replaced below, freed on return */
    if (fits->len) {
        (*error)->message = g_strdup_printf("%s; fits with %s; or simulate anyway with "
                                            "--ignore-memory",
                                            old, fits->str);
        return;
    }

    /* None alone: the same ways one after another, until the job fits. */
    SsimParallel all = *par;
    char taken[6][96] = {{0}}; /* the option of each step kept (recompute's, ZeRO's: the last) */
    guint64 total = 0, before = 0;
    gboolean fit = FALSE;
    (void)peak_of(config, par, extra, &before);
    for (guint step = 0; step < 7 && !fit; step++) {
        SsimParallel p = all;
        switch (step) {
        case 0:
            if (in_order == NULL)
                continue;
            g_strlcpy(p.schedule, in_order, sizeof p.schedule);
            g_snprintf(option, sizeof option, "--schedule %s", in_order);
            break;
        case 1:
        case 2:
            if (more_recompute(p.recompute) == SSIM_RECOMPUTE_N ||
                !ssim_parallel_set_recompute(&p, config->model, more_recompute(p.recompute), NULL))
                continue;
            g_snprintf(option, sizeof option, "--recompute %s", ssim_recompute_name(p.recompute));
            break;
        case 3:
            if (p.microbatch == 1)
                continue;
            p.microbatch = 1;
            g_snprintf(option, sizeof option, "--microbatch 1");
            break;
        case 4:
            if (p.zero_stage != 0 || p.dp == 1)
                continue;
            p.zero_stage = 1;
            g_snprintf(option, sizeof option, "--zero 1");
            break;
        case 5:
            /* ZeRO-1 was not enough: the weights and gradients sharded too. */
            if (!zero3_way(config, &p))
                continue;
            g_snprintf(option, sizeof option, "--zero 3");
            break;
        default: {
            guint m = MIN(ssim_parallel_n_microbatches(par), m_floor);
            if (p.dp * p.microbatch * m >= p.global_batch)
                continue;
            p.global_batch = p.dp * p.microbatch * m;
            g_snprintf(option, sizeof option, "--global-batch %u", p.global_batch);
            break;
        }
        }
        /* A step that is not legal, or does not lower the peak, is not kept. */
        if (!peak_of(config, &p, extra, &total) || total >= before)
            continue;
        all = p;
        before = total;
        /* A step's slot in the list: the second recompute and ZeRO-3 replace the first. */
        static const guint slot[7] = {0, 1, 1, 3, 4, 4, 5};
        g_strlcpy(taken[slot[step]], option, sizeof taken[0]);
        fit = total <= config->cluster->hbm_bytes;
    }
    g_autoptr(GString) combo = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(taken); i++)
        if (taken[i][0])
            g_string_append_printf(combo, "%s%s", combo->len ? " " : "", taken[i]);
    if (fit)
        (*error)->message = g_strdup_printf("%s; no one option fits alone, together these do: %s "
                                            "(%.1f GiB); or simulate anyway with --ignore-memory",
                                            old, combo->str, (double)total / (1u << 30));
    else if (combo->len)
        (*error)->message = g_strdup_printf(
            "%s; it does not fit even with %s: more tp or pp (or GPUs) is needed; or simulate "
            "anyway with --ignore-memory",
            old, combo->str);
    else
        (*error)->message = g_strdup_printf(
            "%s; no schedule, recompute, microbatch, ZeRO or batch option lowers it: more tp or "
            "pp (or GPUs) is needed; or simulate anyway with --ignore-memory",
            old);
}

gboolean ssim_simulate_memory(const SsimSimConfig *config, SsimMemory *peak, GError **error)
{
    g_return_val_if_fail(config && config->model && config->cluster && config->par, FALSE);
    g_autoptr(SsimSchedule) sched = prepare(config, peak, error);
    if (sched == NULL)
        return FALSE;
    if (!ssim_memory_fits(peak, config->cluster, error)) {
        add_memory_hints(config, 0, error);
        g_prefix_error(error, "%s on %s: ", config->model->name, config->cluster->name);
        return FALSE;
    }
    return TRUE;
}

SsimTime ssim_host_kernel_floor(const SsimCluster *cluster, const SsimParallel *par)
{
    return ssim_parallel_compiled(par) ? 0 : cluster->kernel_floor;
}

SsimTime ssim_host_microbatch_floor(const SsimCluster *cluster, const SsimParallel *par)
{
    return ssim_parallel_compiled(par) ? 0 : cluster->microbatch_floor;
}

gboolean ssim_simulate(const SsimSimConfig *config, SsimResult *result, SsimLowered **lowered_out,
                       SsimTimeline **timeline_out, GError **error)
{
    g_return_val_if_fail(config && config->model && config->cluster && config->par, FALSE);
    const SsimModel *model = config->model;
    const SsimCluster *cluster = config->cluster;
    const SsimParallel *par = config->par;
    memset(result, 0, sizeof *result);
    SsimSimTimes *times = config->times, unused;
    if (times == NULL)
        times = &unused;
    memset(times, 0, sizeof *times);
    double mark = config->times ? cpu_now() : 0;

    /* Memory first: a configuration that cannot run is rejected before it is simulated. */
    g_autoptr(SsimSchedule) sched = prepare(config, &result->memory, error);
    if (sched == NULL)
        return FALSE;
    result->schedule = ssim_schedule_kind(sched);
    result->comm_repeat = MAX(config->comm_repeat, 1u);
    if (config->placement != NULL) {
        g_autofree char *name = ssim_placement_to_string(config->placement);
        g_snprintf(result->placement, sizeof result->placement, "%s%s", name,
                   config->placement->lhs ? "+lhs" : "");
    } else {
        g_strlcpy(result->placement, "megatron", sizeof result->placement);
    }
    result->memory_capacity = cluster->hbm_bytes;
    result->memory_fits = ssim_memory_fits(&result->memory, cluster, NULL);
    if (!result->memory_fits && !config->ignore_memory) {
        ssim_memory_fits(&result->memory, cluster, error);
        add_memory_hints(config, 0, error);
        g_prefix_error(error, "%s on %s: ", model->name, cluster->name);
        return FALSE;
    }

    /* An exact run replays every GPU's copy of its stage program (SsimReplication) unless the
     * caller wants the explicit per-GPU graph, or per-op figures of it. */
    gboolean replicate = config->exact && !config->exact_graph && lowered_out == NULL &&
                         timeline_out == NULL && config->uncontended == NULL;
    SsimLowerOptions opts = SSIM_LOWER_OPTIONS_INIT;
    opts.exact = config->exact && !replicate;
    opts.host_microbatch = ssim_host_microbatch_floor(cluster, par);
    /* A placement that evaluates nothing is applied to the plan before its graph is built, so
     * the graph is built once; auto replays candidates, which needs the cost model below, and
     * re-places the lowered plan after it. */
    gboolean place_in_lowering =
        config->placement != NULL && config->placement->kind != SSIM_PLACEMENT_AUTO;
    if (place_in_lowering) {
        opts.placement = config->placement;
        opts.report = config->report;
    }
    SsimOpEstimate est;
    ssim_budget_estimate(model, par, opts.exact, &est);
    opts.expected_ops = est.ops < 1e9 ? (gsize)est.ops : 0;
    /* Host memory: the estimate before anything is built, the resident memory after each big phase.
     */
    SsimMemoryMode mode = !config->exact ? SSIM_MEMORY_REPRESENTATIVE
                          : replicate    ? SSIM_MEMORY_REPLICATED
                                         : SSIM_MEMORY_EXPLICIT;
    SsimMemoryEstimate mem;
    ssim_budget_memory_estimate(model, par, mode, &mem);
    guint64 mem_limit = config->max_memory ? config->max_memory : ssim_budget_memory_default();
    if (!ssim_budget_check_memory(model, par, mode, 1, config->max_memory, error))
        return FALSE;
    lap(config, &mark, &times->prepare);
    g_autoptr(SsimLowered) lowered = ssim_lower(model, par, sched, &opts, error);
    if (lowered == NULL)
        return FALSE;
    if (!ssim_budget_check_resident(config->max_memory, "after lowering", mem.bytes, error))
        return FALSE;
    lap(config, &mark, &times->lower);
    const SsimGraph *graph = ssim_lowered_graph(lowered);

    SsimAnalyticParams ap;
    ssim_analytic_params_from_cluster(&ap, cluster, model->dtype);
    /* The host's launches are eager PyTorch's; a compiled program's runtime launches at the
     * GPU's pace (parallel.h, ssim_parallel_compiled). */
    ap.kernel_floor = ssim_host_kernel_floor(cluster, par);
    g_autoptr(SsimAnalytic) analytic = analytic_for(&ap, lowered, model, par);
    /* The board's power limit lowers the GEMM rate of a GPU kept busy (gemm_sustained); a GPU
     * the host leaves idle between kernels (launches longer than the kernels) keeps more of its
     * clocks: the rate follows the fraction of the time it works. */
    if (ap.kernel_floor > 0 && cluster->gemm_sustained < 1.0) {
        double busy = ssim_analytic_busy_fraction(analytic, graph);
        ap.gemm_efficiency = ssim_analytic_sustained_efficiency(cluster, busy);
        ssim_analytic_free(g_steal_pointer(&analytic));
        analytic = analytic_for(&ap, lowered, model, par);
    }
    guint nr;
    const guint32 *map = ssim_lowered_rank_map(lowered, &nr);
    SsimCostModel cm = ssim_analytic_cost_model(analytic);
    /* A measured profile answers first; the analytic model, with the logical groups above,
     * prices what it has not measured. */
    g_autoptr(SsimProfiled) profiled = NULL;
    if (config->profile && config->cost == NULL) {
        profiled = ssim_profiled_new(config->profile, analytic, model->dtype);
        cm = ssim_profiled_cost_model(profiled);
    }
    const SsimCostModel *cost = config->cost ? config->cost : &cm;

    /* The cluster's overlap_slowdown says compute runs that many times slower while a collective
     * shares the GPU; the runtime takes the extra fraction. */
    SsimRunConfig rc = SSIM_RUN_CONFIG_INIT;
    rc.cost = cost;
    rc.overlap_slowdown = cluster->overlap_slowdown > 1 ? cluster->overlap_slowdown - 1 : 0;
    rc.limits.max_events = config->max_events;
    rc.max_memory = mem_limit == G_MAXUINT64 ? 0 : mem_limit;
    rc.comm_repeat = config->comm_repeat;
    /* The host launches every op (the cluster's kernel floor each) and waits after transfers,
     * and after every kernel and collective when launches block. */
    rc.host_issue = ap.kernel_floor;
    rc.host_blocking = par->launch_blocking;
    g_autoptr(SsimNet) net = NULL;
    g_autoptr(SsimNetCal) netcal = NULL;
    SsimCommModel comm;
    if (config->flow_network) {
        net = ssim_net_new(cluster, error);
        if (net == NULL)
            return FALSE;
        /* A representative's copies (the GPUs it stands for) load the links too. */
        SsimNetMapping mapping = {.rank_map = map,
                                  .n_ranks = nr,
                                  .group_members = lowered_group_members,
                                  .n_copies = ssim_lowered_weight(lowered),
                                  .copy_gpu = lowered_copy_gpu,
                                  .data = lowered};
        ssim_net_set_mapping(net, &mapping);
        /* A profile's collective rows calibrate the network rather than bypass it. */
        if (profiled) {
            netcal = ssim_netcal_new(config->profile, cluster, model->dtype);
            SsimNetCalibration cal = ssim_netcal_calibration(netcal);
            ssim_net_set_calibration(net, &cal);
        }
        comm = ssim_net_comm_model(net);
        rc.comm = &comm;
    }
    /* Placement: group indices are the plan's, so the cost model built above serves every
     * placement of this lowering, including the candidates auto evaluates. */
    if (config->placement != NULL) {
        if (!place_in_lowering) {
            SsimPlaceEvaluator eval = {eval_run, &rc};
            if (!ssim_lowered_place(lowered, config->placement, &eval, config->report, error))
                return FALSE;
            graph = ssim_lowered_graph(lowered);
        }
        result->placement_extra = ssim_lowered_extra_bytes(lowered);
        result->memory.total += result->placement_extra;
        result->memory_fits = ssim_memory_fits(&result->memory, cluster, NULL);
        if (!result->memory_fits && !config->ignore_memory) {
            ssim_memory_fits(&result->memory, cluster, error);
            add_memory_hints(config, result->placement_extra, error);
            g_prefix_error(error,
                           "%s on %s under placement %s (+%.1f MiB of buffers): ", model->name,
                           cluster->name, ssim_placement_kind_name(config->placement->kind),
                           (double)result->placement_extra / 1048576.0);
            return FALSE;
        }
    }
    if (config->placement != NULL &&
        !ssim_budget_check_resident(config->max_memory, "after placement", mem.bytes, error))
        return FALSE;
    /* Count only the final replay, not the candidates a placement search replayed. */
    if (profiled)
        ssim_profiled_reset_explain(profiled);
    if (netcal)
        ssim_netcal_reset_explain(netcal);
    g_autofree guint32 *periods = NULL;
    SsimReplication replication;
    if (replicate && ssim_lowered_weight(lowered) > 1) {
        periods = ssim_lowered_replication(lowered, &replication, error);
        if (periods == NULL)
            return FALSE;
        rc.replication = &replication;
    }
    /* A replicated run is measured as it goes (its copies' times are not kept: 16 bytes per op
     * copy, most of an exact step's memory), unless the flow network's contention figures need
     * them after it. */
    g_autoptr(SimAccum) acc = NULL;
    SsimOpSink sink;
    if (rc.replication != NULL && net == NULL) {
        acc = accum_new(lowered, replication.n_copies);
        sink = (SsimOpSink){accum_op_end, acc};
        rc.sink = &sink;
    }
    lap(config, &mark, &times->place);
    g_autoptr(SsimTimeline) tl = ssim_runtime_run_config(graph, &rc, error);
    if (tl == NULL) {
        g_prefix_error(error, "simulate: ");
        return FALSE;
    }
    lap(config, &mark, &times->replay);
    /* A flow that never gets bandwidth ends "never" (the network parks it at half the range of
     * simulated time): a figure computed from that would be a lie. */
    if (tl->makespan >= SSIM_TIME_NEVER / 2) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME,
                    "simulate: the step reaches t = %" G_GINT64_FORMAT " ns (%.3g years), beyond "
                    "any real step: some communication got no usable bandwidth (check the "
                    "cluster's rates)",
                    tl->makespan, ssim_time_to_seconds(tl->makespan) / 3.156e7);
        return FALSE;
    }
    measure(result, lowered, tl, acc, model, par, ap.peak_flops);
    if (profiled && config->explain)
        ssim_cost_explain_merge(config->explain, ssim_profiled_explain(profiled));
    if (profiled && config->class_explain)
        ssim_class_explain_merge(config->class_explain, ssim_profiled_class_explain(profiled));
    if (netcal && config->explain)
        ssim_cost_explain_merge(config->explain, ssim_netcal_explain(netcal));
    if (netcal && config->class_explain)
        ssim_class_explain_merge(config->class_explain, ssim_netcal_class_explain(netcal));
    if (net) {
        guint n_matches;
        const SsimTime *unc = ssim_net_uncontended(net, &n_matches);
        ssim_result_measure_contention(result, lowered, tl, rc.replication, unc, n_matches,
                                       config->uncontended);
    }
    lap(config, &mark, &times->measure);
    if (lowered_out)
        *lowered_out = g_steal_pointer(&lowered);
    if (timeline_out)
        *timeline_out = g_steal_pointer(&tl);
    return TRUE;
}
