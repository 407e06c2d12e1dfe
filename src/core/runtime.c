/*
 * The GPU runtime: replays a finalized graph on the engine (semantics in runtime.h).
 *
 * Each op keeps a count of unfinished predecessors (dependencies, stream predecessor, barrier
 * gate).  When it reaches zero the op is ready at the current time (make_ready): a compute op
 * starts and schedules its own end (start_compute); a collective, barrier or p2p op counts itself
 * into its match instance (arrive), and the last arrival starts the instance (start_instance):
 * its members run, and one end event, or the communication model, ends them all.  An end event
 * finishes its ops and releases their successors, which may become ready at the same instant.
 * Two event types cover the run, and all per-op state sits in flat arrays allocated before the
 * loop, so the hot path allocates only what the engine's pool has not yet grown to hold.
 *
 * Interference (overlap slowdown): while a rank copy runs communication its compute runs slower;
 * each change of speed banks the running compute's progress and re-schedules its end through
 * an engine ticket (engine.h), so the end event scheduled before fires superseded and is ignored.
 *
 * Replication: with n_copies > 1 every op has a state per copy (entry i * n_copies + c), and a
 * match has instances, each joined by the copies that agree on the match's periods (runtime.h).
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
#define STATE_SHIFT      30
#define PENDING_MASK     ((1u << STATE_SHIFT) - 1)
#define STATE(w)         ((w) >> STATE_SHIFT)
#define WITH_STATE(w, s) (((w)&PENDING_MASK) | ((guint32)(s) << STATE_SHIFT))

struct SsimRun {
    const SsimGraph *g;
    const SsimCostModel *cost;
    const SsimCommModel *comm;
    SsimEngine *engine;
    SsimTime now;      /* the engine's clock, cached by the handlers */
    const SsimOp *ops; /* the graph's arrays, fetched once */
    const guint32 *succ_first, *succs;
    const guint32 *match_first, *match_ops, *match_expected;
    guint32 n;                     /* graph ops; copy c of op i is entry i * n_copies + c below */
    guint32 *word;                 /* per op copy: state << 30 | pending predecessors */
    guint32 *arrived;              /* per match instance */
    SsimTime *ready, *start, *end; /* ready is NULL when replicated */
    guint ev_op_end, ev_match_end;
    guint64 n_done;

    /*
     * Replication (runtime.h): n_copies copies on a stride x hi torus; `period` 2 per match and
     * `inst_first` each match's first instance (NULL without replication: instance = match).
     */
    guint n_copies, stride, hi;
    const guint32 *period;
    guint32 *inst_first;

    /*
     * Interference (only when slowdown > 0).  Each stream runs at most one op, so the progress
     * of running compute is kept per stream copy (stream * n_copies + copy): the work left at
     * full speed as of `since`, and the engine ticket (engine.h) of its end event, which each
     * rate change re-schedules, superseding the end events scheduled before.
     */
    double slowdown;
    guint32 *comm_active;       /* per rank copy: running communication ops */
    guint32 *rank_stream_first; /* per rank: its streams, CSR */
    guint32 *rank_streams;
    guint32 *running; /* per stream copy: the running compute op or SSIM_NONE */
    SsimTime *work, *since;
    SsimEngineTicket *end_ticket;

    /* The first op whose cost or end was not a finite simulated time (types.h): the run stops
     * there and fails with this error rather than wrap time around or call it a deadlock. */
    GError *time_error;
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

/* Entry of copy c of op i in the per-op arrays (op-major: symmetric copies run close together
 * in time, so their states share cache lines), and the op-end event's key for it. */
#define AT(r, c, i)  ((gsize)(i) * (r)->n_copies + (c))
#define OP_KEY(c, i) (((guint64)(c) << 32) | (i))

/* The instance, among match m's, that copy c of a torus of side `stride` takes part in. */
static inline guint32 torus_instance(guint stride, const guint32 *period, guint32 m, guint c)
{
    guint pt = period[2 * m], pd = period[2 * m + 1];
    return (c % stride) % pt + pt * ((c / stride) % pd);
}

/* The instance of match m that copy c takes part in (0 without replication). */
static inline guint32 instance_of(const Run *r, guint32 m, guint c)
{
    return r->period == NULL ? 0 : torus_instance(r->stride, r->period, m, c);
}

/* Copies in each instance of match m. */
static inline guint instance_copies(const Run *r, guint32 m)
{
    if (r->period == NULL)
        return 1;
    return (r->stride / r->period[2 * m]) * (r->hi / r->period[2 * m + 1]);
}

/* The j-th copy (in increasing order) of instance k of match m. */
static inline guint instance_copy(const Run *r, guint32 m, guint32 k, guint j)
{
    if (r->period == NULL)
        return 0;
    guint pt = r->period[2 * m], pd = r->period[2 * m + 1], nt = r->stride / pt;
    return k % pt + (j % nt) * pt + r->stride * (k / pt + (j / nt) * pd);
}

/* Index of instance k of match m in `arrived`. */
static inline gsize instance_index(const Run *r, guint32 m, guint32 k)
{
    return r->inst_first == NULL ? m : (gsize)r->inst_first[m] + k;
}

static void make_ready(Run *r, guint c, guint32 i);
static SsimTime end_at(Run *r, guint32 i, guint n_ranks, SsimTime d);

/* Duration at the rank copy's current speed of `work` ns of full-speed compute. */
static SsimTime scaled(const Run *r, gsize rank_copy, SsimTime work)
{
    if (r->comm_active[rank_copy] == 0)
        return work;
    return ssim_time_scale(work, 1.0 + r->slowdown);
}

/*
 * A rank copy's compute speed changes: bank the progress of its running compute ops at the old
 * speed and re-schedule their ends at the new one, through each stream copy's ticket, so that the
 * end events scheduled before fire superseded and are ignored (on_op_end).
 */
static void rerate(Run *r, guint32 rank, guint c, gboolean was_slow)
{
    gsize rc = (gsize)rank * r->n_copies + c;
    for (guint32 k = r->rank_stream_first[rank]; k < r->rank_stream_first[rank + 1]; k++) {
        gsize s = (gsize)r->rank_streams[k] * r->n_copies + c;
        guint32 i = r->running[s];
        if (i == SSIM_NONE)
            continue;
        SsimTime elapsed = r->now - r->since[s];
        SsimTime done =
            was_slow ? (SsimTime)llround((double)elapsed / (1.0 + r->slowdown)) : elapsed;
        r->work[s] = MAX(r->work[s] - done, 0);
        r->since[s] = r->now;
        ssim_engine_schedule_ticket(r->engine, &r->end_ticket[s],
                                    end_at(r, i, 1, scaled(r, rc, r->work[s])), r->ev_op_end,
                                    OP_KEY(c, i), 0);
    }
}

/* Counts an instance's communication in or out on each member rank copy (both ends of a p2p
 * pair). */
static void comm_change(Run *r, guint32 m, guint32 k, int delta)
{
    guint nc = instance_copies(r, m);
    for (guint32 e = r->match_first[m]; e < r->match_first[m + 1]; e++) {
        guint32 rank = r->ops[r->match_ops[e]].rank;
        for (guint j = 0; j < nc; j++) {
            guint c = instance_copy(r, m, k, j);
            gsize rc = (gsize)rank * r->n_copies + c;
            guint32 before = r->comm_active[rc];
            r->comm_active[rc] = (guint32)((int)before + delta);
            if ((before == 0) != (r->comm_active[rc] == 0))
                rerate(r, rank, c, before > 0);
        }
    }
}

/* Copy c of op i ends now: one predecessor fewer for each successor, which may become ready. */
static void finish(Run *r, guint c, guint32 i)
{
    gsize x = AT(r, c, i);
    r->end[x] = r->now;
    r->word[x] = WITH_STATE(r->word[x], DONE);
    r->n_done++;
    for (guint32 e = r->succ_first[i], last = r->succ_first[i + 1]; e < last; e++) {
        guint32 s = r->succs[e];
        if (--r->word[AT(r, c, s)] == 0) /* state WAITING is 0, so the word is the count */
            make_ready(r, c, s);
    }
}

/*
 * The time boundary: op i's `duration` (from its cost, or its end at now + duration) is not a
 * finite simulated time.  Records the first such op with what it was asked (its bytes, FLOPs and
 * ranks) and stops the engine; the run then fails with SSIM_RUN_ERROR_TIME.
 */
static void refuse_time(Run *r, guint32 i, guint n_ranks, SsimTime duration, gboolean is_end)
{
    if (r->time_error == NULL) {
        const SsimOp *op = &r->ops[i];
        char label[128], flops[G_ASCII_DTOSTR_BUF_SIZE];
        g_autofree char *what =
            is_end ? g_strdup_printf("would end at t = %" G_GINT64_FORMAT " ns + %" G_GINT64_FORMAT
                                     " ns, past the 2^63 ns (292 years) simulated time can hold",
                                     r->now, duration)
                   : g_strdup("has no finite cost (infinite, NaN, or past 2^63 ns)");
        g_set_error(&r->time_error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME,
                    "op %u '%s' (rank %u) %s; its inputs: %" G_GUINT64_FORMAT " bytes, %s FLOPs, "
                    "%u rank%s; check the rates (bandwidths, peak FLOP/s, efficiencies) it was "
                    "priced with",
                    op->id, ssim_graph_op_label(r->g, i, label, sizeof label), op->rank, what,
                    op->bytes, g_ascii_formatd(flops, sizeof flops, "%.6g", op->flops), n_ranks,
                    n_ranks == 1 ? "" : "s");
    }
    ssim_engine_stop(r->engine);
}

/* Op i's own duration if it carries one, else the cost model's for n_ranks members (>= 0; a cost
 * that is not a finite time is refused, refuse_time(), and 0 returned). */
static SsimTime op_duration(Run *r, guint32 i, guint n_ranks)
{
    const SsimOp *op = &r->ops[i];
    if (op->duration >= 0)
        return op->duration;
    SsimTime t = r->cost->op_time(r->cost, r->g, i, n_ranks);
    if (G_UNLIKELY(t >= SSIM_TIME_NEVER)) {
        refuse_time(r, i, n_ranks, t, FALSE);
        return 0;
    }
    return t < 0 ? 0 : t;
}

/* now + d for op i, or (refused) now when that is past the range of simulated time. */
static SsimTime end_at(Run *r, guint32 i, guint n_ranks, SsimTime d)
{
    SsimTime at = ssim_time_add(r->now, d);
    if (G_UNLIKELY(at >= SSIM_TIME_NEVER)) {
        refuse_time(r, i, n_ranks, d, TRUE);
        return r->now;
    }
    return at;
}

/*
 * Starts compute op i of copy c now.  It has its stream to itself, so it ends after its duration,
 * at the rank copy's current speed; under interference the stream copy records its progress and
 * the end goes through the stream copy's ticket, which rerate() re-arms when the speed changes.
 */
static void start_compute(Run *r, guint c, guint32 i)
{
    const SsimOp *op = &r->ops[i];
    gsize x = AT(r, c, i);
    r->word[x] = WITH_STATE(0, RUNNING);
    r->start[x] = r->now;
    SsimTime d = op_duration(r, i, 1);
    if (r->slowdown > 0) {
        gsize s = (gsize)op->stream * r->n_copies + c;
        r->running[s] = i;
        r->work[s] = d;
        r->since[s] = r->now;
        d = scaled(r, (gsize)op->rank * r->n_copies + c, d);
        ssim_engine_schedule_ticket(r->engine, &r->end_ticket[s], end_at(r, i, 1, d), r->ev_op_end,
                                    OP_KEY(c, i), 0);
        return;
    }
    ssim_engine_schedule(r->engine, end_at(r, i, 1, d), r->ev_op_end, OP_KEY(c, i), 0);
}

/*
 * Counts communication op i (a collective, barrier, send or receive) of copy c into its match
 * instance, whose number it stores in *k.  TRUE when it is the last to arrive: every member of the
 * match, in every copy that takes part in the instance, is now waiting in it.
 */
static gboolean arrive(Run *r, guint c, guint32 i, guint32 *k)
{
    guint32 m = r->ops[i].match;
    r->word[AT(r, c, i)] = WITH_STATE(0, ARRIVED);
    *k = instance_of(r, m, c);
    return ++r->arrived[instance_index(r, m, *k)] >= r->match_expected[m] * instance_copies(r, m);
}

/* Marks every member of instance k of match m, in each of its copies, running from now. */
static void run_members(Run *r, guint32 m, guint32 k)
{
    const guint32 *members = r->match_ops + r->match_first[m];
    guint32 n = r->match_first[m + 1] - r->match_first[m];
    guint nc = instance_copies(r, m);
    for (guint j = 0; j < nc; j++) {
        guint c = instance_copy(r, m, k, j);
        for (guint32 e = 0; e < n; e++) {
            gsize x = AT(r, c, members[e]);
            r->word[x] = WITH_STATE(0, RUNNING);
            r->start[x] = r->now;
        }
    }
}

/*
 * The duration of instance k of match m, which op `last` completed: from the communication model
 * when there is one, the match is communication (not a barrier) and `last` carries no duration of
 * its own, and then -1 when the model ends the instance itself later (ssim_run_finish_match() or
 * _instance()); otherwise the first member's (its own, or the cost model's for the match's
 * expected members).  Never -1 without a communication model.
 */
static SsimTime instance_duration(Run *r, guint32 last, guint32 m, guint32 k)
{
    const SsimOp *op = &r->ops[last];
    if (op->kind != SSIM_OP_BARRIER && r->comm != NULL && op->duration < 0) {
        if (r->period == NULL)
            return r->comm->start(r->comm->data, r, m);
        return r->comm->start_copy(r->comm->data, r, m, (guint32)instance_index(r, m, k),
                                   instance_copy(r, m, k, 0));
    }
    return op_duration(r, r->match_ops[r->match_first[m]], r->match_expected[m]);
}

/*
 * Starts instance k of match m, which op `last` completed: its members run from now, their rank
 * copies count one more running communication (interference; not for a barrier), and one
 * match-end event ends them all, unless the communication model ends the instance itself.
 */
static void start_instance(Run *r, guint32 last, guint32 m, guint32 k)
{
    run_members(r, m, k);
    if (r->ops[last].kind != SSIM_OP_BARRIER && r->slowdown > 0)
        comm_change(r, m, k, +1);
    SsimTime d = instance_duration(r, last, m, k);
    if (d >= SSIM_TIME_NEVER) /* a communication model's time out of range */
        refuse_time(r, last, r->match_expected[m], d, FALSE);
    else if (d >= 0)
        ssim_engine_schedule(r->engine, end_at(r, last, r->match_expected[m], d), r->ev_match_end,
                             m, k);
}

/*
 * Copy c of op i has just lost its last unfinished predecessor, so it is ready now: record when,
 * then start it if it is compute, or else count it into its match instance and start the
 * instance if it was the last to arrive.
 */
static void make_ready(Run *r, guint c, guint32 i)
{
    if (r->ready != NULL)
        r->ready[AT(r, c, i)] = r->now;
    guint32 k;
    if (r->ops[i].kind == SSIM_OP_COMPUTE)
        start_compute(r, c, i);
    else if (arrive(r, c, i, &k))
        start_instance(r, i, r->ops[i].match, k);
}

/* Instance k of match m ends now: its rank copies stop communicating and its members finish. */
static void end_match(Run *r, guint32 m, guint32 k)
{
    const SsimOp *first = &r->ops[r->match_ops[r->match_first[m]]];
    if (first->kind != SSIM_OP_BARRIER && r->slowdown > 0)
        comm_change(r, m, k, -1);
    guint nc = instance_copies(r, m);
    for (guint j = 0; j < nc; j++) {
        guint c = instance_copy(r, m, k, j);
        for (guint32 e = r->match_first[m]; e < r->match_first[m + 1]; e++)
            finish(r, c, r->match_ops[e]);
    }
}

void ssim_run_finish_match(SsimRun *r, guint32 m)
{
    r->now = ssim_engine_now(r->engine);
    end_match(r, m, 0);
}

void ssim_run_finish_instance(SsimRun *r, guint32 m, guint32 instance)
{
    r->now = ssim_engine_now(r->engine);
    end_match(r, m, r->inst_first == NULL ? 0 : instance - r->inst_first[m]);
}

guint64 ssim_replication_instances(const SsimReplication *rep, guint32 n_matches, guint32 *first)
{
    guint64 total = 0;
    for (guint32 m = 0; m < n_matches; m++) {
        if (first != NULL)
            first[m] = (guint32)total;
        total += rep == NULL || rep->n_copies <= 1
                     ? 1
                     : (guint64)rep->period[2 * m] * rep->period[2 * m + 1];
    }
    return total;
}

guint32 ssim_replication_instance(const SsimReplication *rep, const guint32 *first, guint32 match,
                                  guint copy)
{
    if (rep == NULL || rep->n_copies <= 1)
        return match;
    return first[match] + torus_instance(rep->stride, rep->period, match, copy);
}

SsimEngine *ssim_run_engine(SsimRun *r)
{
    return r->engine;
}

static void on_op_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Run *r = user;
    guint c = (guint)(a >> 32);
    guint32 i = (guint32)a;
    if (r->slowdown > 0) {
        gsize s = (gsize)r->ops[i].stream * r->n_copies + c;
        if (!ssim_engine_ticket_take(e, &r->end_ticket[s]))
            return; /* superseded by a rate change */
        r->running[s] = SSIM_NONE;
    }
    r->now = ssim_engine_now(e);
    finish(r, c, i);
}

static void on_match_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    Run *r = user;
    r->now = ssim_engine_now(e);
    end_match(r, (guint32)a, (guint32)b);
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

static void describe_match_wait(const Run *r, guint c, guint32 i, GString *out)
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
            g_string_append_printf(out, "rank %u has not reached the matching %s", op->peer,
                                   ssim_graph_op_label(g, other, label, sizeof label));
        return;
    }
    guint nc = instance_copies(r, op->match);
    g_string_append_printf(out, "blocked in %s %s (group %s, tag %u): %u of %u members arrived",
                           op->kind == SSIM_OP_BARRIER ? "barrier" : "collective", label,
                           ssim_graph_group_name(g, op->group), op->tag,
                           r->arrived[instance_index(r, op->match, instance_of(r, op->match, c))],
                           expected * nc);
    guint gn;
    const guint32 *ranks = ssim_graph_group_ranks(g, op->group, &gn);
    for (guint k = 0; k < gn; k++) {
        guint32 member = SSIM_NONE;
        for (guint j = 0; j < n; j++)
            if (ssim_graph_op(g, members[j])->rank == ranks[k])
                member = members[j];
        if (member == SSIM_NONE)
            g_string_append_printf(out, "; rank %u never issues it", ranks[k]);
        else if (STATE(r->word[AT(r, c, member)]) == WAITING)
            g_string_append_printf(out, "; rank %u has not reached it (%s on stream %s)", ranks[k],
                                   ssim_graph_op_label(g, member, label, sizeof label),
                                   ssim_graph_stream_name(g, ssim_graph_op(g, member)->stream));
    }
}

static void describe_dep_wait(const Run *r, guint c, guint32 i, GString *out)
{
    const SsimGraph *g = r->g;
    char label[128], dl[128];
    g_string_append_printf(out, "blocked on %s, which waits for",
                           ssim_graph_op_label(g, i, label, sizeof label));
    guint nd;
    const guint32 *d = ssim_graph_deps(g, i, &nd);
    guint shown = 0;
    for (guint k = 0; k < nd; k++) {
        if (STATE(r->word[AT(r, c, d[k])]) == DONE)
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
    guint32 n_ops = r->n, n_streams = ssim_graph_n_streams(g);
    gsize n_heads = MAX((gsize)n_streams * r->n_copies, 1);
    g_autofree guint32 *head = g_new(guint32, n_heads);
    memset(head, 0xff, sizeof(guint32) * n_heads);
    for (guint c = 0; c < r->n_copies; c++)
        for (guint32 i = 0; i < n_ops; i++) {
            gsize s = (gsize)ssim_graph_op(g, i)->stream * r->n_copies + c;
            if (STATE(r->word[AT(r, c, i)]) != DONE && head[s] == SSIM_NONE)
                head[s] = i;
        }
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg,
                           "deadlock at t=%" G_GINT64_FORMAT " ns: %" G_GUINT64_FORMAT
                           " of %" G_GUINT64_FORMAT " ops finished; blocked streams:",
                           ssim_engine_now(r->engine), r->n_done, (guint64)n_ops * r->n_copies);
    guint listed = 0, more = 0;
    for (gsize s = 0; s < (gsize)n_streams * r->n_copies; s++) {
        guint32 i = head[s];
        guint c = (guint)(s % r->n_copies);
        guint32 stream = (guint32)(s / r->n_copies);
        if (i == SSIM_NONE)
            continue;
        if (listed >= 16) {
            more++;
            continue;
        }
        listed++;
        g_string_append_printf(msg, "\n  rank %u", ssim_graph_stream_rank(g, stream));
        if (r->n_copies > 1)
            g_string_append_printf(msg, " copy %u", c);
        g_string_append_printf(msg, " stream %s: ", ssim_graph_stream_name(g, stream));
        char label[128];
        guint32 state = STATE(r->word[AT(r, c, i)]);
        if (state == ARRIVED)
            describe_match_wait(r, c, i, msg);
        else if (state == RUNNING)
            g_string_append_printf(msg,
                                   "%s started but never completed (its communication "
                                   "model did not finish it)",
                                   ssim_graph_op_label(g, i, label, sizeof label));
        else
            describe_dep_wait(r, c, i, msg);
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
    gsize nrc = MAX((gsize)nr * r->n_copies, 1), nsc = MAX((gsize)ns * r->n_copies, 1);
    r->slowdown = slowdown;
    r->comm_active = g_new0(guint32, nrc);
    r->rank_stream_first = g_new0(guint32, nr + 1);
    r->rank_streams = g_new(guint32, MAX(ns, 1));
    r->running = g_new(guint32, nsc);
    r->work = g_new0(SsimTime, nsc);
    r->since = g_new0(SsimTime, nsc);
    r->end_ticket = g_new(SsimEngineTicket, nsc);
    memset(r->running, 0xff, sizeof(guint32) * nsc);
    for (gsize s = 0; s < nsc; s++)
        r->end_ticket[s] = (SsimEngineTicket)SSIM_ENGINE_TICKET_INIT;
    for (guint32 s = 0; s < ns; s++)
        r->rank_stream_first[ssim_graph_stream_rank(g, s) + 1]++;
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
    g_free(r->end_ticket);
}

static void run_free(Run *r)
{
    g_clear_error(&r->time_error);
    clear_interference(r);
    g_free(r->word);
    g_free(r->arrived);
    g_free(r->inst_first);
    g_free(r->ready);
    g_free(r->start);
    g_free(r->end);
}

/*
 * Checks a replication against the graph and fills the run's copies, and each match's first
 * instance; FALSE with `error` set when it is not one (runtime.h).
 */
static gboolean setup_replication(Run *r, const SsimRunConfig *config, gsize *n_instances,
                                  GError **error)
{
    const SsimReplication *rep = config->replication;
    guint32 nm = ssim_graph_n_matches(r->g);
    r->n_copies = r->stride = r->hi = 1;
    *n_instances = nm;
    if (rep == NULL || rep->n_copies <= 1)
        return TRUE;
    if (config->comm != NULL && config->comm->start_copy == NULL) {
        g_set_error_literal(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                            "this communication model cannot replay a replicated run");
        return FALSE;
    }
    if (rep->stride == 0 || rep->n_copies % rep->stride != 0 || rep->period == NULL ||
        (guint64)r->n * rep->n_copies > G_MAXUINT32 || rep->n_copies > (1u << 16)) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                    "replication of %u copies (stride %u) does not fit a graph of %u ops",
                    rep->n_copies, rep->stride, r->n);
        return FALSE;
    }
    r->n_copies = rep->n_copies;
    r->stride = rep->stride;
    r->hi = rep->n_copies / rep->stride;
    r->period = rep->period;
    for (guint32 m = 0; m < nm; m++) {
        guint pt = rep->period[2 * m], pd = rep->period[2 * m + 1];
        if (pt == 0 || pd == 0 || r->stride % pt != 0 || r->hi % pd != 0) {
            g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                        "replication: match %u has periods %u x %u, which do not divide the "
                        "%u x %u copies",
                        m, pt, pd, r->stride, r->hi);
            return FALSE;
        }
    }
    r->inst_first = g_new(guint32, MAX(nm, 1));
    guint64 total = ssim_replication_instances(rep, nm, r->inst_first);
    g_assert(total <= G_MAXUINT32);
    *n_instances = (gsize)total;
    return TRUE;
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

    guint32 n = ssim_graph_n_ops(g);
    g_autoptr(SsimEngine) engine = ssim_engine_new();
    Run r = {.g = g, .cost = cost, .comm = config->comm, .engine = engine, .n = n};
    gsize n_instances;
    if (!setup_replication(&r, config, &n_instances, error)) {
        run_free(&r);
        return NULL;
    }
    guint nc = r.n_copies;
    gsize total = MAX((gsize)n * nc, 1);
    r.word = ssim_new_large(guint32, total);
    r.arrived = ssim_new0_large(guint32, MAX(n_instances, 1));
    r.ready = nc == 1 ? ssim_new_large(SsimTime, total) : NULL;
    r.start = ssim_new_large(SsimTime, total);
    r.end = ssim_new_large(SsimTime, total);
    for (guint32 i = 0; i < n; i++) {
        guint32 preds = ssim_graph_n_preds(g, i);
        g_assert(preds <= PENDING_MASK);
        for (guint c = 0; c < nc; c++)
            r.word[AT(&r, c, i)] = WITH_STATE(preds, WAITING);
    }
    /* The state is allocated: the host-memory budget is checked once, before the replay. */
    if (config->max_memory != 0 && ssim_alloc_resident_bytes() > config->max_memory) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY,
                    "max_memory: the process holds %.3g GB resident with the replay's state of "
                    "%" G_GUINT64_FORMAT " op copies allocated, over the limit of %.3g GB "
                    "(--max-memory)",
                    (double)ssim_alloc_resident_bytes() / 1e9, (guint64)total,
                    (double)config->max_memory / 1e9);
        run_free(&r);
        return NULL;
    }
    /* ready, start and end need no initial value: a run that returns a timeline has set them
     * for every op copy (every op finished), and a failed run frees them. */
    r.ops = ssim_graph_ops(g);
    ssim_graph_successor_csr(g, &r.succ_first, &r.succs);
    ssim_graph_match_csr(g, &r.match_first, &r.match_ops, &r.match_expected);
    r.ev_op_end = ssim_engine_register(engine, on_op_end, &r);
    r.ev_match_end = ssim_engine_register(engine, on_match_end, &r);
    if (config->overlap_slowdown > 0)
        setup_interference(&r, config->overlap_slowdown);
    if (r.comm != NULL && r.comm->attach != NULL &&
        !r.comm->attach(r.comm->data, engine, &r, g, error)) {
        run_free(&r);
        return NULL;
    }
    /* At most one pending event per stream copy (its running op) or per running match. */
    ssim_engine_reserve(engine, 2 * (gsize)ssim_graph_n_streams(g) * nc + 16);

    for (guint c = 0; c < nc; c++)
        for (guint32 i = 0; i < n; i++)
            if (ssim_graph_n_preds(g, i) == 0)
                make_ready(&r, c, i);
    SsimEngineStop stop = r.time_error ? SSIM_ENGINE_STOPPED
                                       : ssim_engine_run(engine, limits->until, limits->max_events);

    if (r.comm != NULL && r.comm->detach != NULL)
        r.comm->detach(r.comm->data, &r);

    gboolean ok = TRUE;
    guint64 n_total = (guint64)n * nc;
    if (r.time_error != NULL) {
        g_propagate_error(error, g_steal_pointer(&r.time_error));
        ok = FALSE;
    } else if (stop == SSIM_ENGINE_TIME_LIMIT || stop == SSIM_ENGINE_EVENT_BUDGET) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "stopped by the %s (%s %" G_GUINT64_FORMAT ") at t=%" G_GINT64_FORMAT
                    " ns with %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " ops finished; no "
                    "figures are reported for an unfinished run",
                    stop == SSIM_ENGINE_TIME_LIMIT ? "time limit" : "event budget",
                    stop == SSIM_ENGINE_TIME_LIMIT ? "until ns" : "max events",
                    stop == SSIM_ENGINE_TIME_LIMIT ? (guint64)limits->until : limits->max_events,
                    ssim_engine_now(engine), r.n_done, n_total);
        ok = FALSE;
    } else if (r.n_done < n_total && ssim_engine_now(engine) >= SSIM_TIME_NEVER / 2) {
        /* Not a deadlock: the clock ran to where a communication model parks what never ends. */
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME,
                    "the run reached t = %" G_GINT64_FORMAT
                    " ns, half the range of simulated time, "
                    "with %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " ops finished: some "
                    "communication got no usable bandwidth (check the rates)",
                    ssim_engine_now(engine), r.n_done, n_total);
        ok = FALSE;
    } else if (r.n_done < n_total) {
        diagnose_deadlock(&r, error);
        ok = FALSE;
    }
    if (!ok) {
        run_free(&r);
        return NULL;
    }
    SsimTimeline *t = g_new0(SsimTimeline, 1);
    t->n_ops = (guint32)n_total;
    t->n_copies = nc;
    t->events = ssim_engine_fired(engine);
    t->ready = g_steal_pointer(&r.ready);
    t->start = g_steal_pointer(&r.start);
    t->end = g_steal_pointer(&r.end);
    run_free(&r);
    for (guint64 x = 0; x < n_total; x++)
        t->makespan = MAX(t->makespan, t->end[x]);
    return t;
}
