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
#include <shiftsim/alloc.h>
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

struct SsimRun {
    const SsimGraph *g;
    const SsimCostModel *cost;
    const SsimCommModel *comm;
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

    /*
     * Interference (only when slowdown > 0).  Each stream runs at most one op, so the progress
     * of running compute is kept per stream: the work left at full speed as of `since`, and a
     * version that invalidates the end event scheduled before the latest rate change.
     */
    double slowdown;
    guint32 *comm_active;            /* per rank: running communication ops */
    guint32 *rank_stream_first;      /* per rank: its streams, CSR */
    guint32 *rank_streams;
    guint32 *running;                /* per stream: the running compute op or SSIM_NONE */
    SsimTime *work, *since;
    guint32 *version;
};
typedef struct SsimRun Run;

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
        case SSIM_COLL_PERMUTE:
            t = a + s / b;
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

/* Duration at the rank's current speed of `work` ns of full-speed compute. */
static SsimTime scaled(const Run *r, guint32 rank, SsimTime work)
{
    if (r->comm_active[rank] == 0)
        return work;
    return (SsimTime)llround((double)work * (1.0 + r->slowdown));
}

/*
 * A rank's compute speed changes: bank the progress of its running compute ops at the old speed
 * and reschedule their ends at the new one.  The stale end events are ignored when they fire.
 */
static void rerate(Run *r, guint32 rank, gboolean was_slow)
{
    for (guint32 k = r->rank_stream_first[rank]; k < r->rank_stream_first[rank + 1]; k++) {
        guint32 s = r->rank_streams[k], i = r->running[s];
        if (i == SSIM_NONE)
            continue;
        SsimTime elapsed = r->now - r->since[s];
        SsimTime done = was_slow ? (SsimTime)llround((double)elapsed / (1.0 + r->slowdown))
                                 : elapsed;
        r->work[s] = MAX(r->work[s] - done, 0);
        r->since[s] = r->now;
        ssim_engine_schedule(r->engine, r->now + scaled(r, rank, r->work[s]), r->ev_op_end, i,
                             ++r->version[s]);
    }
}

/* Counts a match's communication in or out on each member rank (both ends of a p2p pair). */
static void comm_change(Run *r, guint32 m, int delta)
{
    for (guint32 k = r->match_first[m]; k < r->match_first[m + 1]; k++) {
        guint32 rank = r->ops[r->match_ops[k]].rank;
        guint32 before = r->comm_active[rank];
        r->comm_active[rank] = (guint32)((int)before + delta);
        if ((before == 0) != (r->comm_active[rank] == 0))
            rerate(r, rank, before > 0);
    }
}

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
        SsimTime d = op_duration(r, i, 1);
        if (r->slowdown > 0) {
            guint32 s = op->stream;
            r->running[s] = i;
            r->work[s] = d;
            r->since[s] = now;
            d = scaled(r, op->rank, d);
            ssim_engine_schedule(r->engine, now + d, r->ev_op_end, i, ++r->version[s]);
            return;
        }
        ssim_engine_schedule(r->engine, now + d, r->ev_op_end, i, 0);
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
    gboolean is_comm = op->kind != SSIM_OP_BARRIER;
    if (is_comm && r->slowdown > 0)
        comm_change(r, m, +1);
    SsimTime d;
    if (is_comm && r->comm != NULL && op->duration < 0) {
        d = r->comm->start(r->comm->data, r, m);
        if (d < 0)
            return; /* the model calls ssim_run_finish_match() */
    } else {
        d = op_duration(r, members[0], expected);
    }
    ssim_engine_schedule(r->engine, now + d, r->ev_match_end, m, 0);
}

static void end_match(Run *r, guint32 m)
{
    const SsimOp *first = &r->ops[r->match_ops[r->match_first[m]]];
    if (first->kind != SSIM_OP_BARRIER && r->slowdown > 0)
        comm_change(r, m, -1);
    for (guint32 k = r->match_first[m]; k < r->match_first[m + 1]; k++)
        finish(r, r->match_ops[k]);
}

void ssim_run_finish_match(SsimRun *r, guint32 m)
{
    r->now = ssim_engine_now(r->engine);
    end_match(r, m);
}

SsimEngine *ssim_run_engine(SsimRun *r)
{
    return r->engine;
}

static void on_op_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    Run *r = user;
    guint32 i = (guint32)a;
    if (r->slowdown > 0) {
        guint32 s = r->ops[i].stream;
        if (b != r->version[s])
            return; /* superseded by a rate change */
        r->running[s] = SSIM_NONE;
    }
    r->now = ssim_engine_now(e);
    finish(r, i);
}

static void on_match_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Run *r = user;
    r->now = ssim_engine_now(e);
    end_match(r, (guint32)a);
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
        char label[128];
        if (STATE(r->word[i]) == ARRIVED)
            describe_match_wait(r, i, msg);
        else if (STATE(r->word[i]) == RUNNING)
            g_string_append_printf(msg, "%s started but never completed (its communication "
                                   "model did not finish it)",
                                   ssim_graph_op_label(g, i, label, sizeof label));
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
    SsimRunConfig config = SSIM_RUN_CONFIG_INIT;
    config.cost = cost;
    if (limits != NULL)
        config.limits = *limits;
    return ssim_runtime_run_config(g, &config, error);
}

static void setup_interference(Run *r, double slowdown)
{
    const SsimGraph *g = r->g;
    guint32 nr = ssim_graph_n_ranks(g), ns = ssim_graph_n_streams(g);
    r->slowdown = slowdown;
    r->comm_active = g_new0(guint32, MAX(nr, 1));
    r->rank_stream_first = g_new0(guint32, nr + 1);
    r->rank_streams = g_new(guint32, MAX(ns, 1));
    r->running = g_new(guint32, MAX(ns, 1));
    r->work = g_new0(SsimTime, MAX(ns, 1));
    r->since = g_new0(SsimTime, MAX(ns, 1));
    r->version = g_new0(guint32, MAX(ns, 1));
    for (guint32 s = 0; s < ns; s++) {
        r->rank_stream_first[ssim_graph_stream_rank(g, s) + 1]++;
        r->running[s] = SSIM_NONE;
    }
    for (guint32 k = 0; k < nr; k++)
        r->rank_stream_first[k + 1] += r->rank_stream_first[k];
    g_autofree guint32 *fill = g_memdup2(r->rank_stream_first, sizeof(guint32) * (nr + 1));
    for (guint32 s = 0; s < ns; s++)
        r->rank_streams[fill[ssim_graph_stream_rank(g, s)]++] = s;
}

static void clear_interference(Run *r)
{
    g_free(r->comm_active);
    g_free(r->rank_stream_first);
    g_free(r->rank_streams);
    g_free(r->running);
    g_free(r->work);
    g_free(r->since);
    g_free(r->version);
}

SsimTimeline *ssim_runtime_run_config(const SsimGraph *g, const SsimRunConfig *config,
                                      GError **error)
{
    const SsimCostModel *cost = config->cost;
    const SsimRunLimits *limits = &config->limits;
    if (!(config->overlap_slowdown >= 0) || config->overlap_slowdown > 1e6) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                    "overlap slowdown %g is out of range (0 to 1e6)", config->overlap_slowdown);
        return NULL;
    }
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

    guint32 n = ssim_graph_n_ops(g), nm = ssim_graph_n_matches(g);
    g_autoptr(SsimEngine) engine = ssim_engine_new();
    Run r = {
        .g = g,
        .cost = cost,
        .comm = config->comm,
        .engine = engine,
        .word = ssim_new_large(guint32, MAX(n, 1)),
        .arrived = ssim_new0_large(guint32, MAX(nm, 1)),
        .ready = ssim_new_large(SsimTime, MAX(n, 1)),
        .start = ssim_new_large(SsimTime, MAX(n, 1)),
        .end = ssim_new_large(SsimTime, MAX(n, 1)),
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
    if (config->overlap_slowdown > 0)
        setup_interference(&r, config->overlap_slowdown);
    if (r.comm != NULL && r.comm->attach != NULL &&
        !r.comm->attach(r.comm->data, engine, &r, g, error)) {
        clear_interference(&r);
        g_free(r.word);
        g_free(r.arrived);
        g_free(r.ready);
        g_free(r.start);
        g_free(r.end);
        return NULL;
    }
    /* At most one pending event per stream (its running op) or per running match. */
    ssim_engine_reserve(engine, 2 * (gsize)ssim_graph_n_streams(g) + 16);

    for (guint32 i = 0; i < n; i++)
        if (ssim_graph_n_preds(g, i) == 0)
            make_ready(&r, i);
    SsimEngineStop stop = ssim_engine_run(engine, limits->until, limits->max_events);

    if (r.comm != NULL && r.comm->detach != NULL)
        r.comm->detach(r.comm->data, &r);
    clear_interference(&r);

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
