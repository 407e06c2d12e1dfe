/*
 * The GPU runtime: replays a finalized op graph on the event engine with CUDA-stream semantics.
 *
 * An op is *ready* when its stream predecessor, its dependencies and any host barrier before it
 * have finished.  A compute op starts when ready.  A collective starts when every member of its
 * instance is ready, and all members end together.  A send and its receive start together when
 * both are ready (NCCL's rendezvous) and end together.  A barrier behaves like a collective.
 * Durations come from the op itself when it carries one, else from the cost model.
 *
 * Host issue (SsimRunConfig.host_issue): the host launches each rank's ops one after another, in
 * op order, each taking it host_issue; an op starts no earlier than its launch.  The host does
 * not wait for the GPU, except after a send or receive: like Megatron-LM, which calls
 * torch.cuda.synchronize() after every batch_isend_irecv(), it waits for the transfer to finish
 * before it launches the rank's next op.  So op i of a rank is launched at
 *   H(i) = F(i) + L,  F(i) = host_issue x (the rank's ops up to and including i, barriers not
 *   counted),  L = max(0, max over the rank's finished sends and receives s of end(s) - F(s)).
 * An op ready before a transfer that precedes it has finished is launched by the L of that time
 * (the host is not made to wait for a transfer the op does not depend on).
 *
 * Blocking launches (SsimRunConfig.host_blocking, with host issue, in a graph without programs):
 * CUDA_LAUNCH_BLOCKING=1, under which every launch returns only when its kernel has finished.
 * The host then launches a rank's op only after the kernel or collective before it (in launch
 * order, runtime.c's host_order()) has finished, and L grows at every op's end, not only a
 * transfer's: op i is launched at
 *   H(i) = max(F(i) + L, end(p) + host_issue),  p the last kernel or collective before i.
 * Sends and receives hold no launch: the host waits for them through L, as without blocking.
 * Megatron-LM batches each transfer with the ones of the next step (batch_isend_irecv(), one NCCL
 * group), which a lowering need not list side by side; holding launches on them would deadlock
 * schedules that real runs complete (interleaved 1F1B).  A graph with programs (compiled XLA
 * programs) has no eager host to block.
 *
 * When the engine runs dry with ops unfinished, the run fails with SSIM_RUN_ERROR_DEADLOCK and a
 * message naming, per stuck stream, the op it is blocked on and why.  When the time limit or the
 * event budget runs out first, it fails with SSIM_RUN_ERROR_LIMIT: partial figures are never
 * presented as a result.
 */
#pragma once

#include <shiftsim/engine.h>
#include <shiftsim/graph.h>

G_BEGIN_DECLS

/*
 * The cost model interface later modules plug in.  `op_time` is asked for every op whose
 * duration is -1: for a compute op with its index, for a collective or barrier with the index of
 * its instance's first member and the member count, for a p2p transfer with the send's index.
 */
typedef struct SsimCostModel SsimCostModel;
struct SsimCostModel {
    SsimTime (*op_time)(const SsimCostModel *model, const SsimGraph *graph, guint32 op,
                        guint n_ranks);
    gpointer data;
    /* TRUE when op_time is a function of its arguments with no effect anyone sees (it counts
     * nothing), so a replicated run asks it once per graph op for all copies, and every run asks
     * it for each compute op before the replay starts, in op order; FALSE (what a designated
     * initializer leaves) asks it for every copy, when the op starts. */
    gboolean pure;
};

/*
 * The analytical model used when nothing else is plugged in: compute is flops / flops_per_s
 * (or bytes / mem_bw when that is longer); collectives are alpha-beta ring costs
 * (all-reduce 2(n-1)a + 2(n-1)/n S/B; all-gather, reduce-scatter and all-to-all (n-1)a +
 * (n-1)/n S/B; broadcast and reduce a*ceil(log2 n) + S/B; permute a + S/B); p2p a + S/B; a barrier
 * 2a*ceil(log2 n).  S is the op's bytes (the full buffer, as nccl-tests counts it).
 */
typedef struct {
    double flops_per_s; /* default 500e12 */
    double mem_bw;      /* bytes/s, default 3e12 */
    double link_bw;     /* bytes/s, default 100e9 */
    SsimTime alpha;     /* per-step latency, default 5 us */
} SsimSimpleCost;

void ssim_simple_cost_init(SsimSimpleCost *params);
/* A cost model reading `params` (borrowed: it must outlive the model's use). */
SsimCostModel ssim_simple_cost_model(const SsimSimpleCost *params);

typedef struct {
    SsimTime until;     /* SSIM_TIME_NEVER for no limit */
    guint64 max_events; /* 0 for no budget */
    gsize max_pending;  /* events pending at once (ssim_engine_set_max_pending); 0: the engine's */
} SsimRunLimits;

#define SSIM_RUN_LIMITS_NONE                                                                       \
    {                                                                                              \
        .until = SSIM_TIME_NEVER, .max_events = 0                                                  \
    }

/*
 * The outcome of a run: per-op times, owned by the caller (ssim_timeline_free).  A replicated
 * run (SsimReplication) has n_copies copies of every op: copy c of graph op i is entry
 * i * n_copies + c (the copies of an op run close together in time, so they share cache lines),
 * and keeps no `ready` times (NULL), which only traces and reports of an explicit graph show.
 */
typedef struct {
    guint32 n_ops;   /* entries: graph ops times n_copies */
    guint n_copies;  /* 1, or the replication's copies */
    SsimTime *ready; /* when the op was reached on its stream with inputs done */
    SsimTime *start;
    SsimTime *end;
    SsimTime makespan; /* latest end */
    guint64 events;    /* events fired */
    /* Host issue only (else NULL): per graph rank copy (rank * n_copies + copy), the time its
     * compute ops, once ready, waited for the host to launch them: its GPU idle for the host. */
    SsimTime *host_wait;
} SsimTimeline;

void ssim_timeline_free(SsimTimeline *timeline);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimTimeline, ssim_timeline_free)

/*
 * Runs `graph` (finalized) with costs from `model` (NULL: the simple model with defaults).
 * Returns the timeline, or NULL with `error` set on deadlock or when a limit is hit.
 */
SsimTimeline *ssim_runtime_run(const SsimGraph *graph, const SsimCostModel *model,
                               const SsimRunLimits *limits, GError **error);

/*
 * An asynchronous communication model: the flow-level network plugs in here.
 *
 * `attach` is called once before the run: the model registers its own event handlers on the
 * engine and keeps `run`.  When a match (a collective instance or a send/recv pair; barriers
 * are not communication) has all its members ready, the runtime calls `start` at the current
 * simulated time.  The model returns the duration if it knows it now (>= 0), or -1 and later
 * calls ssim_run_finish_match(run, match) from one of its own event handlers, at the simulated
 * time the communication completes.  `detach` (may be NULL) is called after the run.
 */
typedef struct SsimRun SsimRun;
typedef struct {
    gpointer data;
    gboolean (*attach)(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *graph,
                       GError **error);
    SsimTime (*start)(gpointer data, SsimRun *run, guint32 match);
    void (*detach)(gpointer data, SsimRun *run);
    /*
     * Replicated runs (SsimReplication) call this instead of `start`: instance `instance`
     * (numbered as ssim_replication_instances() says) of `match` has all its members ready;
     * `copy` is the lowest copy taking part.  Same contract as `start`, ending with
     * ssim_run_finish_instance().  NULL: the model cannot replay replicated runs.
     */
    SsimTime (*start_copy)(gpointer data, SsimRun *run, guint32 match, guint32 instance,
                           guint copy);
} SsimCommModel;

/* Ends `match` at the engine's current time (only for a match whose start returned -1). */
void ssim_run_finish_match(SsimRun *run, guint32 match);
/* The same for instance `instance` of `match` of a replicated run (start_copy returned -1). */
void ssim_run_finish_instance(SsimRun *run, guint32 match, guint32 instance);
SsimEngine *ssim_run_engine(SsimRun *run);

/*
 * Replication: every graph rank stands for `n_copies` GPUs that run its program (a
 * representative and its symmetric copies, lower.h), and the run simulates each copy on its own:
 * its own op states and times, streams, interference and collective instances.  Copy c sits at
 * (c % stride, c / stride) on a stride x (n_copies / stride) torus, copy 0 being the graph rank
 * itself.  The copies that meet in one instance of match m are those whose coordinates agree
 * modulo (period[2m], period[2m+1]), which divide the torus sides: a tensor-parallel collective
 * of a representative, whose tp peers are its copies along the first axis, has periods
 * (1, n_copies / stride) and one instance per data-parallel replica; a send between two stages
 * has periods (stride, n_copies / stride), one instance per copy.  An instance has the match's
 * members times n_copies / (period[2m] * period[2m+1]) copies of each; its duration is the
 * match's (the cost model is asked as for the graph alone), or a communication model's that
 * has `start_copy` (SsimCommModel), which then moves each instance's own traffic.
 */
typedef struct {
    guint n_copies;        /* 0 or 1: none */
    guint stride;          /* divides n_copies */
    const guint32 *period; /* 2 per match of the graph */
} SsimReplication;

/*
 * Instances are numbered match by match: match m's come first[m], first[m] + 1, ... (period[2m]
 * * period[2m + 1] of them), copy c joining first[m] + (c % stride) % period[2m] + period[2m] *
 * ((c / stride) % period[2m + 1]).  Fills `first` (n_matches entries; may be NULL) and returns
 * the number of instances; without replication (`rep` NULL or one copy) instance m is match m.
 * The periods must divide the torus sides (the runtime checks them before it runs).
 */
guint64 ssim_replication_instances(const SsimReplication *rep, guint32 n_matches, guint32 *first);
/* The instance copy `copy` of match `match` joins, with `first` from the call above. */
guint32 ssim_replication_instance(const SsimReplication *rep, const guint32 *first, guint32 match,
                                  guint copy);
/*
 * Where the times of op copies go instead of the timeline's start and end arrays: op_end is
 * called once per op copy, as it ends (in the order copies end), with its start and end.  A
 * replicated run of a large graph measured this way never holds its 16 bytes per op copy.
 */
typedef struct {
    void (*op_end)(gpointer data, guint32 op, guint copy, SsimTime start, SsimTime end);
    gpointer data;
} SsimOpSink;

typedef struct {
    const SsimCostModel *cost; /* NULL: the simple model with its defaults */
    const SsimCommModel *comm; /* NULL: communication durations come from `cost` */
    /*
     * Interference: while a communication op (collective, send or recv) of a rank is running,
     * that rank's compute ops progress at 1 / (1 + overlap_slowdown) of their speed, so only the
     * overlapped part of a compute op is lengthened.  0 disables it.
     */
    double overlap_slowdown;
    SsimRunLimits limits;
    const SsimReplication *replication; /* NULL: every rank is one GPU */
    /*
     * Every communication instance (collective, send/receive pair, collective-permute; not a
     * barrier) runs this many times back to back before its members finish, as Alpa's
     * ALPA_TEST_REPEAT_COMM switch repeats every NCCL call: a cost-model duration is multiplied,
     * and an instance a communication model times is started again, so a flow network moves the
     * bytes that many times.  0 and 1 mean once (the run is then exactly as without it); at most
     * SSIM_COMM_REPEAT_MAX.
     */
    guint comm_repeat;
    /* When not 0: once its state is allocated, the run fails (SSIM_RUN_ERROR_MEMORY) if the
     * process's resident memory (alloc.h) is over this many bytes, before the replay starts. */
    guint64 max_memory;
    /* The host's time to launch one op (see the top; barriers cost none); 0: no host, every op
     * starts as soon as it is ready. */
    SsimTime host_issue;
    /* With host_issue > 0: blocking launches (see the top): the host waits for every kernel and
     * collective it launches. */
    gboolean host_blocking;
    /* Not NULL: op copies' times go to the sink, and the timeline's start and end are NULL. */
    const SsimOpSink *sink;
} SsimRunConfig;

#define SSIM_COMM_REPEAT_MAX 1000u

#define SSIM_RUN_CONFIG_INIT                                                                       \
    {                                                                                              \
        .cost = NULL, .comm = NULL, .overlap_slowdown = 0.0, .limits = SSIM_RUN_LIMITS_NONE,       \
        .replication = NULL, .comm_repeat = 1, .max_memory = 0, .host_issue = 0,                   \
        .host_blocking = FALSE, .sink = NULL                                                       \
    }

/* ssim_runtime_run() with every knob. */
SsimTimeline *ssim_runtime_run_config(const SsimGraph *graph, const SsimRunConfig *config,
                                      GError **error);

G_END_DECLS
