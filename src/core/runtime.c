/*
 * The GPU runtime: replays a finalized graph on the engine (semantics in runtime.h).
 *
 * Each op keeps a count of unfinished predecessors (dependencies, stream predecessor, barrier
 * gate).  When it reaches zero the op is ready at the current time (make_ready): a compute op
 * starts and schedules its own end (start_compute); a collective, barrier or p2p op counts itself
 * into its match instance (arrive), and the last arrival starts the instance (start_instance):
 * its members run, and one end event, or the communication model, ends them all.  An end event
 * finishes its ops and releases their successors, which may become ready at the same instant.
 * Two event types cover the run (three with a host, below), and all per-op state sits in flat
 * arrays allocated before the loop, so the hot path allocates only what the engine's pool has
 * not yet grown to hold.
 *
 * Host issue (SsimRunConfig.host_issue > 0): each op's launch time on its rank's host is known
 * before the replay up to the host's lag, which grows only when a send or receive ends (the host
 * waited for it).  An op ready before its launch gets an issue event at the launch time, and
 * the wait counts as its GPU's idle time for the host when it is compute; without a host the
 * replay never takes these paths (one predicted branch in make_ready, one in end_match).
 *
 * Interference (overlap slowdown): while a rank copy runs communication its compute runs slower;
 * each change of speed banks the running compute's progress and re-schedules its end through
 * an engine ticket (engine.h), so the end event scheduled before fires superseded and is ignored.
 *
 * Replication: with n_copies > 1 every op has a state per copy (entry i * n_copies + c), and a
 * match has instances, each joined by the copies that agree on the match's periods (runtime.h).
 *
 * Programs (graph.h) are gates, not ops: a program copy counts its predecessors from outside it
 * (plus one for the previous program of its rank) and its unfinished ops.  An edge from outside
 * into a program is delivered to the program's gate; the gate at zero opens the program, which
 * delivers one "started" token to each of its ops; an edge from inside a program to an op outside
 * it is held until the program's last op finishes, and then delivered with the token for the next
 * program.  Edges inside a program, and every edge of a graph without programs, go straight to the
 * successor's count as before, so such a graph replays exactly as it did before programs existed.
 *
 * Repetition (SsimRunConfig.comm_repeat): a communication instance priced by the cost model takes
 * its duration times the repeat count; one the communication model times is started again until
 * it has run that many times, so a flow network moves the bytes that many times.
 *
 * Ties: ops made ready at the same time are handled in successor-list order, and their end
 * events fire in scheduling order; both are fixed by the graph, so runs are deterministic.
 */
#include "src/core/runtime-private.h"
#include "src/core/heap.h"

#include <shiftsim/alloc.h>

#include <math.h>
#include <string.h>

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
    return (SsimCostModel){.op_time = simple_op_time, .data = (gpointer)params, .pure = TRUE};
}

/* ---- replay ---- */
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

static void program_done(Run *r, guint c, guint32 p);
static void program_open(Run *r, guint c, guint32 p);

/* One predecessor of program p (copy c) is delivered: the program opens when it was the last. */
static inline void gate_release(Run *r, guint c, guint32 p)
{
    if (--r->gate[PAT(r, c, p)] == 0)
        program_open(r, c, p);
}

/* Delivers an edge into copy c of op s from `from` (the program of its source, or SSIM_NONE for a
 * source outside s's program whose outputs now exist): to s itself, or to s's program's gate. */
static inline void deliver(Run *r, guint c, guint32 s, guint32 from)
{
    guint32 q = r->prog[s];
    if (q == SSIM_NONE || q == from) {
        if (--r->word[AT(r, c, s)] == 0)
            make_ready(r, c, s);
    } else {
        gate_release(r, c, q);
    }
}

/* Program p (copy c) opens: each of its ops gets its start token (an empty program is done). */
static void program_open(Run *r, guint c, guint32 p)
{
    r->open[PAT(r, c, p)] = 1;
    if (r->left[PAT(r, c, p)] == 0) {
        program_done(r, c, p);
        return;
    }
    guint n;
    const guint32 *ops = ssim_graph_program_ops(r->g, p, &n);
    for (guint k = 0; k < n; k++)
        if (--r->word[AT(r, c, ops[k])] == 0)
            make_ready(r, c, ops[k]);
}

/* Program p (copy c) has finished: its outputs exist, so the edges from its ops to ops outside it
 * are delivered, and the next program of its rank gets its token. */
static void program_done(Run *r, guint c, guint32 p)
{
    guint n;
    const guint32 *ops = ssim_graph_program_ops(r->g, p, &n);
    for (guint k = 0; k < n; k++)
        for (guint32 e = r->succ_first[ops[k]], last = r->succ_first[ops[k] + 1]; e < last; e++)
            if (r->prog[r->succs[e]] != p)
                deliver(r, c, r->succs[e], SSIM_NONE);
    guint32 next = ssim_graph_program_next(r->g, p);
    if (next != SSIM_NONE)
        gate_release(r, c, next);
}

static void host_returned(Run *r, guint c, guint32 i);

/* Copy c of op i ends now: one predecessor fewer for each successor, which may become ready. */
static void finish(Run *r, guint c, guint32 i)
{
    gsize x = AT(r, c, i);
    if (r->sink != NULL)
        r->sink->op_end(r->sink->data, i, c,
                        r->stream_start[(gsize)r->ops[i].stream * r->n_copies + c], r->now);
    else
        r->end[x] = r->now;
    r->last_end = r->now; /* the clock never goes back, so this is the latest end */
    r->word[x] = WITH_STATE(r->word[x], DONE);
    r->n_done++;
    if (r->prog == NULL) {
        /* Blocking launches (never with programs): before any successor is launched, the host's
         * lag takes this end. */
        if (G_UNLIKELY(r->host_next != NULL))
            host_returned(r, c, i);
        for (guint32 e = r->succ_first[i], last = r->succ_first[i + 1]; e < last; e++) {
            guint32 s = r->succs[e];
            if (--r->word[AT(r, c, s)] == 0) /* state WAITING is 0, so the word is the count */
                make_ready(r, c, s);
        }
        return;
    }
    /* Edges leaving i's program wait for the program's end (program_done). */
    guint32 p = r->prog[i];
    for (guint32 e = r->succ_first[i], last = r->succ_first[i + 1]; e < last; e++)
        if (p == SSIM_NONE || r->prog[r->succs[e]] == p)
            deliver(r, c, r->succs[e], p);
    if (p != SSIM_NONE && --r->left[PAT(r, c, p)] == 0)
        program_done(r, c, p);
}

/* Op i's own duration if it carries one, else the cost model's for n_ranks members (>= 0; a cost
 * that is not a finite time is refused, runtime_refuse_time(), and 0 returned). */
static SsimTime op_duration(Run *r, guint32 i, guint n_ranks)
{
    const SsimOp *op = &r->ops[i];
    if (op->duration >= 0)
        return op->duration;
    if (r->cost_cache != NULL && r->cost_cache[i] >= 0)
        return r->cost_cache[i];
    SsimTime t = r->cost->op_time(r->cost, r->g, i, n_ranks);
    if (G_UNLIKELY(t >= SSIM_TIME_NEVER)) {
        runtime_refuse_time(r, i, n_ranks, t, FALSE);
        return 0;
    }
    t = t < 0 ? 0 : t;
    if (r->cost_cache != NULL)
        r->cost_cache[i] = t;
    return t;
}

/*
 * For the packed kinds, before the replay: compute op i's cost from a pure model, asked here in
 * op order, as op_duration() would ask it when the op starts.  Asked then, it read the op's
 * record at a random place of the graph (1.4 million compute ops on a 1,024-rank Chakra step: a
 * cache miss each); asked in order, the records stream in.  A time the replay must refuse is -1
 * (its entry stays HOT_ASK), so that it is refused where it always was, when the op starts.
 */
static SsimTime priced_ahead(Run *r, guint32 i)
{
    SsimTime t = r->cost->op_time(r->cost, r->g, i, 1);
    return t >= SSIM_TIME_NEVER ? -1 : MAX(t, 0);
}

/* A compute op's `hot` entry: its duration d when known (>= 0) and small enough to pack. */
static inline guint64 hot_duration(SsimTime d)
{
    return d >= 0 && (guint64)d < HOT_ASK ? (guint64)d : HOT_ASK;
}

/* now + d for op i, or (refused) now when that is past the range of simulated time. */
static SsimTime end_at(Run *r, guint32 i, guint n_ranks, SsimTime d)
{
    SsimTime at = ssim_time_add(r->now, d);
    if (G_UNLIKELY(at >= SSIM_TIME_NEVER)) {
        runtime_refuse_time(r, i, n_ranks, d, TRUE);
        return r->now;
    }
    return at;
}

/*
 * Asks the processor to fetch what finishing copy c of op i will touch: its successors' packed
 * kinds (`hot`) and state words.  Called when i starts: its end event fires after the other
 * pending events before it, time enough for the lines to arrive, whereas read at the end each is
 * a miss the loop waits for.  Only a hint: nothing is written, and results never depend on it.
 */
static inline void prefetch_successors(const Run *r, guint c, guint32 i)
{
#if defined(__GNUC__) || defined(__clang__)
    for (guint32 e = r->succ_first[i], last = r->succ_first[i + 1]; e < last; e++) {
        guint32 s = r->succs[e];
        __builtin_prefetch(&r->hot[s], 0, 3);
        __builtin_prefetch(&r->word[AT(r, c, s)], 1, 3);
    }
#else
    (void)r;
    (void)c;
    (void)i;
#endif
}

/* Copy c of op i (entry x) starts now. */
static inline void set_start(Run *r, guint c, guint32 i, gsize x)
{
    if (r->sink != NULL)
        r->stream_start[(gsize)r->ops[i].stream * r->n_copies + c] = r->now;
    else
        r->start[x] = r->now;
}

/*
 * Starts compute op i of copy c now.  It has its stream to itself, so it ends after its duration,
 * at the rank copy's current speed; under interference the stream copy records its progress and
 * the end goes through the stream copy's ticket, which rerate() re-arms when the speed changes.
 */
static void start_compute(Run *r, guint c, guint32 i, guint64 hot)
{
    gsize x = AT(r, c, i);
    r->word[x] = WITH_STATE(0, RUNNING);
    set_start(r, c, i, x);
    SsimTime d = hot < HOT_ASK ? (SsimTime)hot : op_duration(r, i, 1);
    if (r->slowdown > 0) {
        const SsimOp *op = &r->ops[i];
        gsize s = (gsize)op->stream * r->n_copies + c;
        r->running[s] = i;
        r->work[s] = d;
        r->since[s] = r->now;
        d = scaled(r, (gsize)op->rank * r->n_copies + c, d);
        ssim_engine_schedule_ticket(r->engine, &r->end_ticket[s], end_at(r, i, 1, d), r->ev_op_end,
                                    OP_KEY(c, i), 0);
    } else {
        ssim_engine_schedule(r->engine, end_at(r, i, 1, d), r->ev_op_end, OP_KEY(c, i), 0);
    }
    prefetch_successors(r, c, i);
}

/*
 * Counts communication op i (a collective, barrier, send or receive) of copy c into its match m's
 * instance, whose number it stores in *k.  TRUE when it is the last to arrive: every member of the
 * match, in every copy that takes part in the instance, is now waiting in it.
 */
static gboolean arrive(Run *r, guint c, guint32 i, guint32 m, guint32 *k)
{
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
            set_start(r, c, members[e], x);
        }
    }
}

/* TRUE when the communication model times a match whose op is `op` (see instance_duration). */
static inline gboolean comm_timed(const Run *r, const SsimOp *op)
{
    return op->kind != SSIM_OP_BARRIER && r->comm != NULL && op->duration < 0;
}

/* One run of instance k of match m by the communication model: its duration, or -1 when the model
 * ends it itself later (ssim_run_finish_match() or _instance()). */
static SsimTime comm_start(Run *r, guint32 m, guint32 k)
{
    if (r->period == NULL)
        return r->comm->start(r->comm->data, r, m);
    return r->comm->start_copy(r->comm->data, r, m, (guint32)instance_index(r, m, k),
                               instance_copy(r, m, k, 0));
}

/*
 * The duration of instance k of match m, which op `last` completed: from the communication model
 * when there is one, the match is communication (not a barrier) and `last` carries no duration of
 * its own, and then -1 when the model ends the instance itself later; otherwise the first
 * member's (its own, or the cost model's for the match's expected members), times the repeat
 * count for communication.  Never -1 without a communication model.  With a repeat count, the
 * instance's rounds start at 0 when the communication model times it (it is started again as it
 * ends, instance_ended) and at the last one otherwise.
 */
static SsimTime instance_duration(Run *r, guint32 last, guint32 m, guint32 k)
{
    const SsimOp *op = &r->ops[last];
    gboolean timed = comm_timed(r, op);
    if (r->round != NULL)
        r->round[instance_index(r, m, k)] = timed ? 0 : r->repeat - 1;
    if (timed)
        return comm_start(r, m, k);
    SsimTime d = op_duration(r, r->match_ops[r->match_first[m]], r->match_expected[m]);
    return op->kind == SSIM_OP_BARRIER ? d : ssim_time_mul(d, r->repeat);
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
        runtime_refuse_time(r, last, r->match_expected[m], d, FALSE);
    else if (d >= 0)
        ssim_engine_schedule(r->engine, end_at(r, last, r->match_expected[m], d), r->ev_match_end,
                             m, k);
}

/* Copy c of op i, packed kind `hot`, is ready and launched: a compute op starts now, a
 * communication op counts into its match instance, which starts if it was the last to arrive. */
static inline void issue(Run *r, guint c, guint32 i, guint64 hot)
{
    guint32 k;
    if (!(hot & HOT_COMM))
        start_compute(r, c, i, hot);
    else if (arrive(r, c, i, (guint32)hot, &k))
        start_instance(r, i, (guint32)hot, k);
}

/* Host issue: copy c of op i is ready; it is issued now if the host has launched it, else an
 * issue event is scheduled for its launch.  Kept out of line: the replay without a host never
 * calls it. */
static G_GNUC_NO_INLINE void issue_when_launched(Run *r, guint c, guint32 i, guint64 hot)
{
    gsize rc = (gsize)r->ops[i].rank * r->n_copies + c;
    SsimTime at = r->host_at[i] + r->host_lag[rc];
    if (at <= r->now) {
        issue(r, c, i, hot);
        return;
    }
    if (!(hot & HOT_COMM))
        r->host_wait[rc] += at - r->now;
    ssim_engine_schedule(r->engine, at, r->ev_op_issue, OP_KEY(c, i), hot);
}

/*
 * Copy c of op i has just lost its last unfinished predecessor, so it is ready now: record when,
 * then issue it, or, when the host has not launched it yet, when it does (host issue).
 */
static void make_ready(Run *r, guint c, guint32 i)
{
    guint64 hot = r->hot[i]; /* before `ready` is written: without copies they are one array */
    if (r->ready != NULL)
        r->ready[AT(r, c, i)] = r->now;
    if (G_UNLIKELY(r->host_at != NULL))
        issue_when_launched(r, c, i, hot);
    else
        issue(r, c, i, hot);
}

/* Instance k of match m, a send and its receive, ends now, and the host of each end waited for
 * it (host issue): each launches its rank's next op no earlier than now plus its own launch
 * time, so its lag grows to now - F of its end. */
static G_GNUC_NO_INLINE void host_waited(Run *r, guint32 m, guint32 k)
{
    guint nc = instance_copies(r, m);
    for (guint j = 0; j < nc; j++) {
        guint c = instance_copy(r, m, k, j);
        for (guint32 e = r->match_first[m]; e < r->match_first[m + 1]; e++) {
            guint32 i = r->match_ops[e];
            SsimTime *lag = &r->host_lag[(gsize)r->ops[i].rank * r->n_copies + c];
            *lag = MAX(*lag, r->now - r->host_at[i]);
        }
    }
}

/* Copy c of op i has finished under blocking launches: the host returns from its launch now (its
 * lag grows to now - F), and the launches it held may go on. */
static G_GNUC_NO_INLINE void host_returned(Run *r, guint c, guint32 i)
{
    SsimTime *lag = &r->host_lag[(gsize)r->ops[i].rank * r->n_copies + c];
    *lag = MAX(*lag, r->now - r->host_at[i]);
    for (guint32 x = held_first(r, i); x != SSIM_NONE; x = held_next(r, x))
        if (--r->word[AT(r, c, x)] == 0)
            make_ready(r, c, x);
}

/* Instance k of match m ends now: its rank copies stop communicating and its members finish. */
static void end_match(Run *r, guint32 m, guint32 k)
{
    const SsimOp *first = &r->ops[r->match_ops[r->match_first[m]]];
    if (first->kind != SSIM_OP_BARRIER && r->slowdown > 0)
        comm_change(r, m, k, -1);
    if (r->host_at != NULL && is_p2p(first))
        host_waited(r, m, k);
    guint nc = instance_copies(r, m);
    for (guint j = 0; j < nc; j++) {
        guint c = instance_copy(r, m, k, j);
        for (guint32 e = r->match_first[m]; e < r->match_first[m + 1]; e++)
            finish(r, c, r->match_ops[e]);
    }
}

/* Instance k of match m has run once: the communication model runs it again while rounds of
 * its repeat count are left, else it ends now. */
static void instance_ended(Run *r, guint32 m, guint32 k)
{
    if (r->round != NULL && ++r->round[instance_index(r, m, k)] < r->repeat) {
        SsimTime d = comm_start(r, m, k);
        guint32 first = r->match_ops[r->match_first[m]];
        if (d >= SSIM_TIME_NEVER)
            runtime_refuse_time(r, first, r->match_expected[m], d, FALSE);
        else if (d >= 0)
            ssim_engine_schedule(r->engine, end_at(r, first, r->match_expected[m], d),
                                 r->ev_match_end, m, k);
        return;
    }
    end_match(r, m, k);
}

void ssim_run_finish_match(SsimRun *r, guint32 m)
{
    r->now = ssim_engine_now(r->engine);
    instance_ended(r, m, 0);
}

void ssim_run_finish_instance(SsimRun *r, guint32 m, guint32 instance)
{
    r->now = ssim_engine_now(r->engine);
    instance_ended(r, m, r->inst_first == NULL ? 0 : instance - r->inst_first[m]);
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

static void on_op_issue(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    Run *r = user;
    r->now = ssim_engine_now(e);
    issue(r, (guint)(a >> 32), (guint32)a, b);
}

static void on_match_end(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    Run *r = user;
    r->now = ssim_engine_now(e);
    instance_ended(r, (guint32)a, (guint32)b);
}

void ssim_timeline_free(SsimTimeline *t)
{
    if (t == NULL)
        return;
    g_free(t->ready);
    g_free(t->start);
    g_free(t->end);
    g_free(t->host_wait);
    g_free(t);
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
    ssim_graph_rank_streams(g, &r->rank_stream_first, &r->rank_streams);
    r->running = g_new(guint32, nsc);
    r->work = g_new0(SsimTime, nsc);
    r->since = g_new0(SsimTime, nsc);
    r->end_ticket = g_new(SsimEngineTicket, nsc);
    memset(r->running, 0xff, sizeof(guint32) * nsc);
    for (gsize s = 0; s < nsc; s++)
        r->end_ticket[s] = (SsimEngineTicket)SSIM_ENGINE_TICKET_INIT;
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

/* The host's launch order (host_order()): a ready op's anchor, kind and index. */
typedef struct {
    guint32 anchor;
    guint32 kind; /* 0 a send or receive, 1 a collective or barrier, 2 a kernel */
    guint32 op;
} Launch;

static int launch_less(gpointer ctx, const Launch *a, const Launch *b)
{
    (void)ctx;
    if (a->anchor != b->anchor)
        return a->anchor < b->anchor;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->op < b->op;
}

SSIM_HEAP_DEFINE(LaunchHeap, launch_heap, Launch, gpointer, launch_less, SSIM_HEAP_NO_POS)

static Launch launch_of(const Run *r, const guint32 *anchor, guint32 i)
{
    guint8 kind = r->ops[i].kind;
    return (Launch){anchor[i], is_p2p(&r->ops[i]) ? 0 : kind == SSIM_OP_COMPUTE ? 2 : 1, i};
}

/*
 * Blocking launches: the order the host launches each rank's ops in, as `host_next`.  Each
 * communication op is launched right after the last kernel of its rank it waits for (its anchor;
 * the lowering lists a gradient's reduction where the gradient was computed, before its bucket's
 * last kernel), a kernel or an op that waits for no kernel where the lowering listed it (its
 * index).  Among ops of one anchor transfers go first, then collectives, then kernels: the
 * transfers a pipeline schedule ends a backward with come before the gradient reduction that
 * follows the schedule, and a collective issued after a kernel before the next kernel.  It is a
 * topological order of each rank's ops (Kahn's algorithm, the least key first).  Returns the ops
 * in that order, all ranks interleaved (caller frees).
 */
static guint32 *host_order(Run *r)
{
    const guint32 n = r->n;
    g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
    g_autofree guint32 *anchor = g_new(guint32, MAX(n, 1));
    for (guint32 i = 0; i < n; i++)
        anchor[i] = i;
    for (guint32 i = 0; i < n; i++)
        for (guint32 e = r->succ_first[i]; e < r->succ_first[i + 1]; e++) {
            guint32 s = r->succs[e];
            if (r->ops[s].rank != r->ops[i].rank)
                continue;
            indeg[s]++;
            if (r->ops[i].kind == SSIM_OP_COMPUTE && r->ops[s].kind != SSIM_OP_COMPUTE &&
                (anchor[s] == s || i > anchor[s]))
                anchor[s] = i;
        }
    g_auto(LaunchHeap) ready = {0};
    for (guint32 i = 0; i < n; i++)
        if (indeg[i] == 0)
            launch_heap_push(&ready, launch_of(r, anchor, i), NULL);
    guint32 nr = ssim_graph_n_ranks(r->g);
    g_autofree guint32 *last = g_new(guint32, MAX(nr, 1));
    memset(last, 0xff, sizeof(guint32) * MAX(nr, 1));
    guint32 *order = ssim_new_large(guint32, MAX(n, 1));
    r->host_next = ssim_new_large(guint32, MAX(n, 1));
    guint32 k = 0;
    while (ready.n > 0) {
        guint32 i = launch_heap_pop(&ready, NULL).op;
        order[k++] = i;
        guint32 rank = r->ops[i].rank;
        if (last[rank] != SSIM_NONE)
            r->host_next[last[rank]] = i;
        last[rank] = i;
        r->host_next[i] = SSIM_NONE;
        for (guint32 e = r->succ_first[i]; e < r->succ_first[i + 1]; e++) {
            guint32 s = r->succs[e];
            if (r->ops[s].rank == rank && --indeg[s] == 0)
                launch_heap_push(&ready, launch_of(r, anchor, s), NULL);
        }
    }
    g_assert(k == n); /* a finalized graph has no cycle */
    /* One hold on each op per op before it whose end its launch waits for (held_first()). */
    for (guint32 i = 0; i < n; i++)
        for (guint32 x = held_first(r, i); x != SSIM_NONE; x = held_next(r, x))
            for (guint c = 0; c < r->n_copies; c++) {
                g_assert((r->word[AT(r, c, x)] & PENDING_MASK) < PENDING_MASK);
                r->word[AT(r, c, x)]++;
            }
    return order;
}

/* Host issue (runtime.h): each op's launch time F on its rank's host, in launch order (op order,
 * or host_order() when launches block), the lags at 0. */
static void setup_host(Run *r, SsimTime per_op, gboolean blocking)
{
    guint32 nr = ssim_graph_n_ranks(r->g);
    g_autofree SsimTime *sum = g_new0(SsimTime, MAX(nr, 1));
    g_autofree guint32 *order = blocking && r->prog == NULL ? host_order(r) : NULL;
    r->host_at = ssim_new_large(SsimTime, MAX(r->n, 1));
    r->host_lag = g_new0(SsimTime, MAX((gsize)nr * r->n_copies, 1));
    r->host_wait = g_new0(SsimTime, MAX((gsize)nr * r->n_copies, 1));
    for (guint32 k = 0; k < r->n; k++) {
        guint32 i = order != NULL ? order[k] : k;
        const SsimOp *op = &r->ops[i];
        if (op->kind != SSIM_OP_BARRIER)
            sum[op->rank] = ssim_time_add(sum[op->rank], per_op);
        r->host_at[i] = sum[op->rank];
    }
    r->ev_op_issue = ssim_engine_register(r->engine, on_op_issue, r);
}

/*
 * The program gates of a graph with programs (see the top): each program copy's gate and op
 * count, and the word of each op in a program, which counts its predecessors inside the program
 * plus the program's start.  Nothing without programs.
 */
static void setup_programs(Run *r)
{
    r->prog = ssim_graph_op_programs(r->g);
    if (r->prog == NULL)
        return;
    guint32 np = ssim_graph_n_programs(r->g), n = r->n;
    guint nc = r->n_copies;
    gsize npc = MAX((gsize)np * nc, 1);
    r->n_progs = np;
    r->gate = g_new0(guint32, npc);
    r->left = g_new0(guint32, npc);
    r->open = g_new0(guint8, npc);
    g_autofree guint32 *inside = ssim_new0_large(guint32, MAX(n, 1));
    for (guint32 u = 0; u < n; u++)
        for (guint32 e = r->succ_first[u]; e < r->succ_first[u + 1]; e++) {
            guint32 q = r->prog[r->succs[e]];
            if (q == SSIM_NONE)
                continue;
            if (r->prog[u] == q)
                inside[r->succs[e]]++;
            else
                r->gate[PAT(r, 0, q)]++;
        }
    for (guint32 p = 0; p < np; p++) {
        guint n_ops;
        ssim_graph_program_ops(r->g, p, &n_ops);
        r->gate[PAT(r, 0, p)] += ssim_graph_program_prev(r->g, p) != SSIM_NONE;
        r->left[PAT(r, 0, p)] = n_ops;
        for (guint c = 1; c < nc; c++) {
            r->gate[PAT(r, c, p)] = r->gate[PAT(r, 0, p)];
            r->left[PAT(r, c, p)] = n_ops;
        }
    }
    for (guint32 i = 0; i < n; i++) {
        if (r->prog[i] == SSIM_NONE)
            continue;
        g_assert(inside[i] + 1 <= PENDING_MASK);
        for (guint c = 0; c < nc; c++)
            r->word[AT(r, c, i)] = WITH_STATE(inside[i] + 1, WAITING);
    }
}

/* Makes ready copy c of every op with nothing to wait for, and opens every program copy whose
 * gate is already clear (in op order, then the programs no op opened: empty ones). */
static void start_run(Run *r, guint c)
{
    for (guint32 i = 0; i < r->n; i++) {
        guint32 p = r->prog == NULL ? SSIM_NONE : r->prog[i];
        if (p == SSIM_NONE) {
            /* No predecessor, and no launch held (blocking launches: host_returned()). */
            if (ssim_graph_n_preds(r->g, i) == 0 && r->word[AT(r, c, i)] == 0)
                make_ready(r, c, i);
        } else if (!r->open[PAT(r, c, p)] && r->gate[PAT(r, c, p)] == 0) {
            program_open(r, c, p);
        }
    }
    for (guint32 p = 0; p < r->n_progs; p++)
        if (!r->open[PAT(r, c, p)] && r->gate[PAT(r, c, p)] == 0)
            program_open(r, c, p);
}

static void run_free(Run *r)
{
    g_clear_error(&r->time_error);
    clear_interference(r);
    g_free(r->gate);
    g_free(r->left);
    g_free(r->open);
    g_free(r->round);
    g_free(r->word);
    g_free(r->arrived);
    g_free(r->stream_start);
    g_free(r->inst_first);
    g_free(r->cost_cache);
    g_free(r->host_at);
    g_free(r->host_lag);
    g_free(r->host_wait);
    g_free(r->host_next);
    if (r->n_copies > 1) /* else it is `ready`, freed below or handed to the timeline */
        g_free(r->hot);
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
    if (config->comm_repeat > SSIM_COMM_REPEAT_MAX) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH,
                    "communication repeat count %u is out of range (1 to %u)", config->comm_repeat,
                    SSIM_COMM_REPEAT_MAX);
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
    Run r = {.g = g,
             .cost = cost,
             .comm = config->comm,
             .engine = engine,
             .n = n,
             .repeat = MAX(config->comm_repeat, 1u)};
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
    r.sink = config->sink;
    if (r.sink == NULL) {
        r.start = ssim_new_large(SsimTime, total);
        r.end = ssim_new_large(SsimTime, total);
    } else {
        r.stream_start = g_new0(SsimTime, MAX((gsize)ssim_graph_n_streams(g) * nc, 1));
    }
    if (nc > 1 && cost->pure) {
        r.cost_cache = ssim_new_large(SsimTime, MAX(n, 1));
        memset(r.cost_cache, 0xff, sizeof(SsimTime) * MAX(n, 1)); /* -1: not asked yet */
    }
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
     * for every op copy (every op finished), and a failed run frees them.  Without copies an
     * op's `ready` entry is written once, when it becomes ready, which is also when its packed
     * kind is read for the last time: one array serves both.  (Filled after the memory check,
     * which therefore sees the resident set it always saw.) */
    r.ops = ssim_graph_ops(g);
    r.hot = nc == 1 ? (guint64 *)r.ready : ssim_new_large(guint64, MAX(n, 1));
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *op = &r.ops[i];
        if (op->kind != SSIM_OP_COMPUTE)
            r.hot[i] = HOT_COMM | op->match;
        else
            r.hot[i] = hot_duration(op->duration >= 0 ? op->duration
                                    : cost->pure      ? priced_ahead(&r, i)
                                                      : -1);
    }
    ssim_graph_successor_csr(g, &r.succ_first, &r.succs);
    ssim_graph_match_csr(g, &r.match_first, &r.match_ops, &r.match_expected);
    setup_programs(&r);
    if (r.repeat > 1 && r.comm != NULL)
        r.round = ssim_new0_large(guint32, MAX(n_instances, 1));
    r.ev_op_end = ssim_engine_register(engine, on_op_end, &r);
    r.ev_match_end = ssim_engine_register(engine, on_match_end, &r);
    if (config->overlap_slowdown > 0)
        setup_interference(&r, config->overlap_slowdown);
    if (config->host_issue > 0)
        setup_host(&r, config->host_issue, config->host_blocking);
    if (r.comm != NULL && r.comm->attach != NULL &&
        !r.comm->attach(r.comm->data, engine, &r, g, error)) {
        run_free(&r);
        return NULL;
    }
    if (limits->max_pending > 0)
        ssim_engine_set_max_pending(engine, limits->max_pending);
    /* At most one pending event per stream copy (its running op) or per running match. */
    ssim_engine_reserve(engine, 2 * (gsize)ssim_graph_n_streams(g) * nc + 16);

    for (guint c = 0; c < nc; c++)
        start_run(&r, c);
    SsimEngineStop stop = r.time_error ? SSIM_ENGINE_STOPPED
                                       : ssim_engine_run(engine, limits->until, limits->max_events);

    if (r.comm != NULL && r.comm->detach != NULL)
        r.comm->detach(r.comm->data, &r);

    gboolean ok = TRUE;
    guint64 n_total = (guint64)n * nc;
    if (r.time_error != NULL) {
        g_propagate_error(error, g_steal_pointer(&r.time_error));
        ok = FALSE;
    } else if (stop == SSIM_ENGINE_OVERFLOW) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "the event engine is full (at most %" G_GSIZE_FORMAT " events pending at "
                    "once, 2^40 scheduled) at t=%" G_GINT64_FORMAT " ns with %" G_GUINT64_FORMAT
                    " of %" G_GUINT64_FORMAT " ops finished; simulate one representative per "
                    "stage (drop --exact) or fewer microbatches",
                    ssim_engine_max_pending(engine), ssim_engine_now(engine), r.n_done, n_total);
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
        runtime_diagnose_deadlock(&r, error);
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
    t->makespan = r.last_end; /* every op finished; 0 for an empty graph */
    t->host_wait = g_steal_pointer(&r.host_wait);
    run_free(&r);
    return t;
}
