/*
 * The state of one run of the runtime, shared by runtime.c (the replay) and runtime-diagnose.c
 * (what a deadlocked run reports).  Nothing outside src/core/ includes it.
 *
 * Layout: per-op arrays are op-major with one entry per copy (AT below); per-program arrays
 * likewise (PAT); per-instance arrays are indexed by instance_index().
 */
#pragma once

#include <shiftsim/runtime.h>

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
    guint32 n; /* graph ops; copy c of op i is entry i * n_copies + c below */
    /*
     * Per graph op, what make_ready() needs, 8 ops a cache line instead of one (an SsimOp is 64
     * bytes, and reading it was the replay's main cache miss): HOT_COMM | match for a collective,
     * barrier, send or receive; HOT_ASK for compute the cost model prices (or whose duration is
     * too large to pack); otherwise the compute op's own duration.  Without replication it is
     * the `ready` array itself (each entry is read when the op becomes ready, just before that
     * time overwrites it), so it costs no memory; with copies it has one entry per graph op.
     */
    guint64 *hot;
    guint32 *word;                 /* per op copy: state << 30 | pending predecessors */
    guint32 *arrived;              /* per match instance */
    SsimTime *ready, *start, *end; /* ready is NULL when replicated; start, end with a sink */
    /* With a sink (runtime.h): per stream copy, the start of the op running on it (a stream runs
     * one op at a time), handed to the sink when the op ends. */
    const SsimOpSink *sink;
    SsimTime *stream_start;
    guint ev_op_end, ev_match_end;
    guint64 n_done;
    SsimTime last_end; /* the end of the op copy finished last: the makespan */

    /*
     * Replication (runtime.h): n_copies copies on a stride x hi torus; `period` 2 per match and
     * `inst_first` each match's first instance (NULL without replication: instance = match).
     */
    guint n_copies, stride, hi;
    const guint32 *period;
    guint32 *inst_first;
    /*
     * Replicated runs with a pure cost model (runtime.h) ask it once per graph op, not once per
     * copy: every copy of an op (and every instance of a match, priced by its first member with
     * the match's member count) has the same cost.  -1 until asked; NULL otherwise.
     */
    SsimTime *cost_cache;

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

    /*
     * Programs (graph.h), when the graph has some (`prog` NULL otherwise): each op's program, and
     * per program copy (program * n_copies + copy) `gate`, its predecessors from outside it not
     * yet delivered plus one for the previous program of its rank; `left`, its ops not finished;
     * `open`, whether it has started.  An op in a program counts in its word its predecessors
     * inside the program plus one for the program's start.
     */
    const guint32 *prog;
    guint32 n_progs;
    guint32 *gate, *left;
    guint8 *open;

    /*
     * Repetition: every communication instance runs `repeat` times back to back (1: once).  A
     * duration from the cost model is multiplied; an instance the communication model times is
     * started again `repeat` times, its rounds so far in `round` (per instance; NULL when once).
     */
    guint repeat;
    guint32 *round;

    /*
     * Host issue (runtime.h; `host_at` NULL without it): per graph op F, the host's time to launch
     * its rank's ops up to and including it; per rank copy (rank * n_copies + copy) L, how late
     * the host is behind F after the transfers it waited for.  An op ready before its launch
     * waits for an issue event (and a compute op's wait counts in `host_wait`).
     */
    SsimTime *host_at;
    SsimTime *host_lag;
    SsimTime *host_wait; /* per rank copy: its compute ops' waits for their launch */
    /* Blocking launches (NULL without): per op, the next op of its rank in the host's launch
     * order (SSIM_NONE for the last); which launches an unfinished op holds: held_first(). */
    guint32 *host_next;
    guint ev_op_issue;

    /* The first op whose cost or end was not a finite simulated time (types.h): the run stops
     * there and fails with this error rather than wrap time around or call it a deadlock. */
    GError *time_error;
};
typedef struct SsimRun Run;

#define HOT_COMM ((guint64)1 << 63)
#define HOT_ASK  ((guint64)1 << 62)

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

static inline gboolean is_p2p(const SsimOp *op)
{
    return op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV;
}

/* Blocking launches: the ops whose launch op i holds, held_first(i) and then held_next(x) until
 * SSIM_NONE (runtime.h): a kernel or a collective holds the next op of its rank and, when that
 * is a send or a receive, every op up to and including the next that is not; a send or a receive
 * holds nothing (the host waits for it through its lag, as without blocking launches). */
static inline guint32 held_first(const Run *r, guint32 i)
{
    return is_p2p(&r->ops[i]) ? SSIM_NONE : r->host_next[i];
}

static inline guint32 held_next(const Run *r, guint32 x)
{
    return is_p2p(&r->ops[x]) ? r->host_next[x] : SSIM_NONE;
}

/* Entry of copy c of program p in the per-program arrays. */
#define PAT(r, c, p) ((gsize)(p) * (r)->n_copies + (c))

/* Fills `error` with a description of a run that stopped with ops unfinished: per stuck stream,
 * the op it is blocked on and why (runtime-diagnose.c). */
void runtime_diagnose_deadlock(const Run *r, GError **error);
/* The time boundary: op i's `duration` (its cost, or, when `is_end`, the time from now to its
 * end) is not a finite simulated time.  Records the first such op in r->time_error, naming it
 * and what it was priced from (bytes, FLOPs, `n_ranks`), and stops the engine; the run then
 * fails with SSIM_RUN_ERROR_TIME. */
void runtime_refuse_time(Run *r, guint32 i, guint n_ranks, SsimTime duration, gboolean is_end);
