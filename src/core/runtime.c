/*
 * The GPU runtime: replays a finalized graph on the engine (semantics in runtime.h).
 *
 * Each op keeps a count of unfinished predecessors (dependencies, stream predecessor, barrier
 * gate).  When it reaches zero the op is ready at the current time: a compute op schedules its
 * own end; a collective, barrier or p2p op counts itself into its match, and the last arrival
 * schedules one end event for the whole match.  An end event finishes its ops and releases their
 * successors, which may become ready at the same instant.  Two event types cover the run, and
 * all per-op state sits in flat arrays allocated before the loop, so the hot path allocates only
 * what the engine's pool has not yet grown to hold.
 *
 * Ties: ops made ready at the same time are handled in successor-list order, and their end
 * events fire in scheduling order; both are fixed by the graph, so runs are deterministic.
 */
#include <shiftsim/runtime.h>

#include <math.h>
#include <string.h>

enum { WAITING, ARRIVED, RUNNING, DONE };

/*
 * An op's state and its count of unfinished predecessors share one 32-bit word, so the array
 * the hot loop updates for every successor stays dense (16 ops a cache line).
 */
#define STATE_SHIFT 30
#define PENDING_MASK ((1u << STATE_SHIFT) - 1)
#define STATE(w) ((w) >> STATE_SHIFT)
#define WITH_STATE(w, s) (((w)&PENDING_MASK) | ((guint32)(s) << STATE_SHIFT))

typedef struct {
    const SsimGraph *g;
    const SsimCostModel *cost;
    SsimEngine *engine;
    SsimTime now;            /* the engine's clock, cached by the handlers */
    const SsimOp *ops;       /* the graph's arrays, fetched once */
    const guint32 *succ_first, *succs;
    const guint32 *match_first, *match_ops, *match_expected;
    guint32 *word;           /* per op: state << 30 | pending predecessors */
    guint32 *arrived;
    SsimTime *ready, *start, *end;
    guint ev_op_end, ev_match_end;
    guint32 n_done;
} Run;

/* ---- the simple analytical cost model ---- */

void ssim_simple_cost_init(SsimSimpleCost *p)
{
    p->flops_per_s = 500e12;
    p->mem_bw = 3e12;
    p->link_bw = 100e9;
    p->alpha = 5 * SSIM_US;
}

static guint ceil_log2(guint n)
{
    guint k = 0;
    while ((1u << k) < n)
        k++;
    return k;
}

static SsimTime simple_op_time(const SsimCostModel *model, const SsimGraph *g, guint32 index,
                               guint n)
{
    const SsimSimpleCost *p = model->data;
    const SsimOp *op = ssim_graph_op(g, index);
    double a = (double)p->alpha * 1e-9, s = (double)op->bytes, b = p->link_bw, t = 0;
    switch ((SsimOpKind)op->kind) {
    case SSIM_OP_COMPUTE:
        t = MAX(op->flops / p->flops_per_s, s / p->mem_bw);
        break;
    case SSIM_OP_SEND:
    case SSIM_OP_RECV:
        t = a + s / b;
        break;
    case SSIM_OP_BARRIER:
        t = 2.0 * a * ceil_log2(n);
        break;
    case SSIM_OP_COLLECTIVE:
        if (n <= 1)
            return 0;
        switch ((SsimCollKind)op->coll) {
        case SSIM_COLL_ALLREDUCE:
            t = 2.0 * (n - 1) * a + 2.0 * (n - 1) / n * s / b;
            break;
        case SSIM_COLL_ALLGATHER:
        case SSIM_COLL_REDUCESCATTER:
        case SSIM_COLL_ALLTOALL:
            t = (n - 1) * a + (double)(n - 1) / n * s / b;
            break;
        case SSIM_COLL_BROADCAST:
        case SSIM_COLL_REDUCE:
        case SSIM_COLL_N:
            t = a * ceil_log2(n) + s / b;
            break;
        }
        break;
    case SSIM_OP_N:
        break;
    }
    return ssim_time_from_seconds(t);
}

SsimCostModel ssim_simple_cost_model(const SsimSimpleCost *params)
{
    return (SsimCostModel){.op_time = simple_op_time, .data = (gpointer)params};
}

/* ---- replay ---- */

static void make_ready(Run *r, guint32 i);

static void finish(Run *r, guint32 i)
{
    r->end[i] = r->now;
    r->word[i] = WITH_STATE(r->word[i], DONE);
    r->n_done++;
    for (guint32 e = r->succ_first[i], last = r->succ_first[i + 1]; e < last; e++) {
        guint32 s = r->succs[e];
        if (--r->word[s] == 0) /* state WAITING is 0, so the word is the count */
            make_ready(r, s);
    }
}

static SsimTime op_duration(Run *r, guint32 i, guint n_ranks)
{
    const SsimOp *op = &r->ops[i];
    if (op->duration >= 0)
        return op->duration;
    SsimTime t = r->cost->op_time(r->cost, r->g, i, n_ranks);
    return t < 0 ? 0 : t;
}

static void make_ready(Run *r, guint32 i)
{
    SsimTime now = r->now;
    const SsimOp *op = &r->ops[i];
    r->ready[i] = now;
    if (op->kind == SSIM_OP_COMPUTE) {
        r->word[i] = WITH_STATE(0, RUNNING);
        r->start[i] = now;
        ssim_engine_schedule(r->engine, now + op_duration(r, i, 1), r->ev_op_end, i, 0);
        return;
    }
    r->word[i] = WITH_STATE(0, ARRIVED);
    guint32 m = op->match, expected = r->match_expected[m];
    if (++r->arrived[m] < expected)
        return;
    const guint32 *members = r->match_ops + r->match_first[m];
    guint32 n = r->match_first[m + 1] - r->match_first[m];
    for (guint32 k = 0; k < n; k++) {
        r->word[members[k]] = WITH_STATE(0, RUNNING);
        r->start[members[k]] = now;
    }
    SsimTime d = op_duration(r, members[0], expected);
    ssim_engine_schedule(r->engine, now + d, r->ev_match_end, m, 0);
}

static void on_op_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Run *r = user;
    r->now = ssim_engine_now(e);
    finish(r, (guint32)a);
}

static void on_match_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Run *r = user;
    r->now = ssim_engine_now(e);
    for (guint32 k = r->match_first[a]; k < r->match_first[a + 1]; k++)
        finish(r, r->match_ops[k]);
}

void ssim_timeline_free(SsimTimeline *t)
{
    if (t == NULL)
        return;
    g_free(t->ready);
    g_free(t->start);
    g_free(t->end);
    g_free(t);
}

/* ---- deadlock diagnosis ---- */

static void describe_match_wait(const Run *r, guint32 i, GString *out)
{
    const SsimGraph *g = r->g;
    const SsimOp *op = ssim_graph_op(g, i);
    char label[128];
    guint n, expected;
    const guint32 *members = ssim_graph_match_ops(g, op->match, &n, &expected);
    ssim_graph_op_label(g, i, label, sizeof label);
    if (op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV) {
        gboolean send = op->kind == SSIM_OP_SEND;
        guint32 other = members[send ? 1 : 0];
        g_string_append_printf(out, "blocked on %s %s rank %u (tag %u): ", label,
                               send ? "to" : "from", op->peer, op->tag);
        if (other == SSIM_NONE)
            g_string_append_printf(out, "rank %u never posts the matching %s", op->peer,
                                   send ? "recv" : "send");
        else
            g_string_append_printf(out, "rank %u has not reached the matching %s",
                                   op->peer, ssim_graph_op_label(g, other, label, sizeof label));
        return;
    }
    g_string_append_printf(out, "blocked in %s %s (group %s, tag %u): %u of %u members arrived",
                           op->kind == SSIM_OP_BARRIER ? "barrier" : "collective", label,
                           ssim_graph_group_name(g, op->group), op->tag, r->arrived[op->match],
                           expected);
    guint gn;
    const guint32 *ranks = ssim_graph_group_ranks(g, op->group, &gn);
    for (guint k = 0; k < gn; k++) {
        guint32 member = SSIM_NONE;
        for (guint j = 0; j < n; j++)
            if (ssim_graph_op(g, members[j])->rank == ranks[k])
                member = members[j];
        if (member == SSIM_NONE)
            g_string_append_printf(out, "; rank %u never issues it", ranks[k]);
        else if (STATE(r->word[member]) == WAITING)
            g_string_append_printf(out, "; rank %u has not reached it (%s on stream %s)",
                                   ranks[k], ssim_graph_op_label(g, member, label, sizeof label),
                                   ssim_graph_stream_name(g, ssim_graph_op(g, member)->stream));
    }
}

static void describe_dep_wait(const Run *r, guint32 i, GString *out)
{
    const SsimGraph *g = r->g;
    char label[128], dl[128];
    g_string_append_printf(out, "blocked on %s, which waits for",
                           ssim_graph_op_label(g, i, label, sizeof label));
    guint nd;
    const guint32 *d = ssim_graph_deps(g, i, &nd);
    guint shown = 0;
    for (guint k = 0; k < nd; k++) {
        if (STATE(r->word[d[k]]) == DONE)
            continue;
        const SsimOp *dep = ssim_graph_op(g, d[k]);
        if (shown++ < 4)
            g_string_append_printf(out, "%s %s (rank %u stream %s)", shown > 1 ? "," : "",
                                   ssim_graph_op_label(g, d[k], dl, sizeof dl), dep->rank,
                                   ssim_graph_stream_name(g, dep->stream));
    }
    if (shown > 4)
        g_string_append_printf(out, " and %u more", shown - 4);
    if (shown == 0)
        g_string_append(out, " the host barrier before it");
}

static void diagnose_deadlock(const Run *r, GError **error)
{
    const SsimGraph *g = r->g;
    guint32 n_ops = ssim_graph_n_ops(g), n_streams = ssim_graph_n_streams(g);
    g_autofree guint32 *head = g_new(guint32, MAX(n_streams, 1));
    memset(head, 0xff, sizeof(guint32) * MAX(n_streams, 1));
    for (guint32 i = 0; i < n_ops; i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (STATE(r->word[i]) != DONE && head[op->stream] == SSIM_NONE)
            head[op->stream] = i;
    }
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg, "deadlock at t=%" G_GINT64_FORMAT " ns: %u of %u ops finished; "
                           "blocked streams:", ssim_engine_now(r->engine), r->n_done, n_ops);
    guint listed = 0, more = 0;
    for (guint32 s = 0; s < n_streams; s++) {
        guint32 i = head[s];
        if (i == SSIM_NONE)
            continue;
        if (listed >= 16) {
            more++;
            continue;
        }
        listed++;
        g_string_append_printf(msg, "\n  rank %u stream %s: ", ssim_graph_stream_rank(g, s),
                               ssim_graph_stream_name(g, s));
        if (STATE(r->word[i]) == ARRIVED)
            describe_match_wait(r, i, msg);
        else
            describe_dep_wait(r, i, msg);
    }
    if (more)
        g_string_append_printf(msg, "\n  ... and %u more blocked streams", more);
    g_set_error_literal(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK, msg->str);
    g_string_free(msg, TRUE);
}

SsimTimeline *ssim_runtime_run(const SsimGraph *g, const SsimCostModel *cost,
                               const SsimRunLimits *limits, GError **error)
{
    if (!ssim_graph_is_finalized(g)) {
        g_set_error_literal(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                            "the graph was not finalized");
        return NULL;
    }
    SsimSimpleCost defaults;
    SsimCostModel simple;
    if (cost == NULL) {
        ssim_simple_cost_init(&defaults);
        simple = ssim_simple_cost_model(&defaults);
        cost = &simple;
    }
    SsimRunLimits no_limits = SSIM_RUN_LIMITS_NONE;
    if (limits == NULL)
        limits = &no_limits;

    guint32 n = ssim_graph_n_ops(g), nm = ssim_graph_n_matches(g);
    g_autoptr(SsimEngine) engine = ssim_engine_new();
    Run r = {
        .g = g,
        .cost = cost,
        .engine = engine,
        .word = g_new(guint32, MAX(n, 1)),
        .arrived = g_new0(guint32, MAX(nm, 1)),
        .ready = g_new(SsimTime, MAX(n, 1)),
        .start = g_new(SsimTime, MAX(n, 1)),
        .end = g_new(SsimTime, MAX(n, 1)),
    };
    for (guint32 i = 0; i < n; i++) {
        guint32 preds = ssim_graph_n_preds(g, i);
        g_assert(preds <= PENDING_MASK);
        r.word[i] = WITH_STATE(preds, WAITING);
        r.ready[i] = r.start[i] = r.end[i] = -1;
    }
    r.ops = ssim_graph_ops(g);
    ssim_graph_successor_csr(g, &r.succ_first, &r.succs);
    ssim_graph_match_csr(g, &r.match_first, &r.match_ops, &r.match_expected);
    r.ev_op_end = ssim_engine_register(engine, on_op_end, &r);
    r.ev_match_end = ssim_engine_register(engine, on_match_end, &r);
    /* At most one pending event per stream (its running op) or per running match. */
    ssim_engine_reserve(engine, 2 * (gsize)ssim_graph_n_streams(g) + 16);

    for (guint32 i = 0; i < n; i++)
        if (ssim_graph_n_preds(g, i) == 0)
            make_ready(&r, i);
    SsimEngineStop stop = ssim_engine_run(engine, limits->until, limits->max_events);

    gboolean ok = TRUE;
    if (stop == SSIM_ENGINE_TIME_LIMIT || stop == SSIM_ENGINE_EVENT_BUDGET) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "stopped by the %s (%s %" G_GUINT64_FORMAT ") at t=%" G_GINT64_FORMAT
                    " ns with %u of %u ops finished; no figures are reported for an "
                    "unfinished run",
                    stop == SSIM_ENGINE_TIME_LIMIT ? "time limit" : "event budget",
                    stop == SSIM_ENGINE_TIME_LIMIT ? "until ns" : "max events",
                    stop == SSIM_ENGINE_TIME_LIMIT ? (guint64)limits->until : limits->max_events,
                    ssim_engine_now(engine), r.n_done, n);
        ok = FALSE;
    } else if (r.n_done < n) {
        diagnose_deadlock(&r, error);
        ok = FALSE;
    }
    g_free(r.word);
    g_free(r.arrived);
    if (!ok) {
        g_free(r.ready);
        g_free(r.start);
        g_free(r.end);
        return NULL;
    }
    SsimTimeline *t = g_new0(SsimTimeline, 1);
    t->n_ops = n;
    t->events = ssim_engine_fired(engine);
    t->ready = r.ready;
    t->start = r.start;
    t->end = r.end;
    for (guint32 i = 0; i < n; i++)
        t->makespan = MAX(t->makespan, t->end[i]);
    return t;
}
