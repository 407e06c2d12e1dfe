/*
 * The ASTRA-sim-compatible replay: the issue rules of ASTRA-sim's workload layer
 * (Workload::issue_dep_free_nodes, HardwareResource) over the core engine's event queue, with the
 * collectives and the network in astra-coll.c.  include/shiftsim/astra.h states the rules.
 *
 * Per rank, the dependency-free ops wait in one min-heap (by Chakra node id) per issue class: GPU
 * compute, CPU, communication (collectives, sends, memory nodes) and free (receives).  A walk
 * takes, while some class can start, the smallest id over the heads of the heaps whose slot is
 * free, which visits the ops in the order ASTRA-sim's loop over its sorted set does and starts
 * the same ones.  Ops freed during a walk (by a compute node skipped in no time) are held aside
 * and join the heaps when it ends, as ASTRA-sim's loop runs over the set as it was when it began.
 *
 * Invariants: an op is in at most one heap, only once all its explicit dependencies have ended;
 * a busy slot is held by exactly one started, unfinished op of the rank; every op ends once.
 */
#include "src/run/astra-private.h"

#include <math.h>
#include <string.h>

const char *const astra_coll_names[SSIM_ASTRA_N_COLL] = {"all-reduce", "all-gather",
                                                         "reduce-scatter", "all-to-all"};

/* ---- per-rank heaps of dependency-free ops, by node id ---- */

static gboolean id_less(const Replay *R, guint32 a, guint32 b)
{
    return R->node_ids[a] < R->node_ids[b];
}

static void heap_push(Replay *R, Rank *rk, int cls, guint32 op)
{
    if (rk->n_heap[cls] == rk->cap_heap[cls]) {
        rk->cap_heap[cls] = MAX(16u, rk->cap_heap[cls] * 2);
        rk->heap[cls] = g_renew(guint32, rk->heap[cls], rk->cap_heap[cls]);
    }
    guint32 *h = rk->heap[cls];
    guint i = rk->n_heap[cls]++;
    while (i > 0 && id_less(R, op, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = op;
}

static guint32 heap_pop(Replay *R, Rank *rk, int cls)
{
    guint32 *h = rk->heap[cls];
    guint32 top = h[0], last = h[--rk->n_heap[cls]];
    guint n = rk->n_heap[cls], i = 0;
    for (;;) {
        guint c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && id_less(R, h[c + 1], h[c]))
            c++;
        if (!id_less(R, h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0)
        h[i] = last;
    return top;
}

/* ---- classes and costs ---- */

/* What kind of op each class string makes (decided once per class, in build()); under
 * replay-only, every op waits its duration on its class's slot (ROLE_WAIT_COMM, ROLE_WAIT_FREE
 * for the types without a compute slot). */
enum {
    ROLE_PLAIN,
    ROLE_CPU,
    ROLE_MEM,
    ROLE_INVALID,
    ROLE_INVALID_CPU,
    ROLE_REFUSED,
    ROLE_WAIT_COMM,
    ROLE_WAIT_FREE
};

static int class_role(const char *cls, gboolean replay_only)
{
    if (strcmp(cls, "cpu") == 0)
        return ROLE_CPU;
    if (strcmp(cls, "mem") == 0)
        return ROLE_MEM;
    if (!g_str_has_prefix(cls, "chakra:"))
        return ROLE_PLAIN;
    if (replay_only)
        /* The loader's waits (SsimChakraOptions.astra_replay_only): HardwareResource gives a
         * receive no slot and any other type the communication slot. */
        return strcmp(cls, "chakra:COMM_RECV_NODE") == 0 ? ROLE_WAIT_FREE : ROLE_WAIT_COMM;
    /* Nodes the loader keeps for us (SsimChakraOptions.keep_node_ids): ASTRA-sim issues an
     * invalid node on the communication slot, or with is_cpu_op the CPU's, and skips it at once
     * (Workload::skip_invalid), and aborts at any other kind (the loader's astra_rules refuse
     * them as they are read). */
    return strcmp(cls, "chakra:INVALID_NODE") == 0       ? ROLE_INVALID
           : strcmp(cls, "chakra:INVALID_NODE:cpu") == 0 ? ROLE_INVALID_CPU
                                                         : ROLE_REFUSED;
}

static int op_class(const Replay *R, guint32 op)
{
    const SsimOp *o = &R->ops[op];
    switch (o->kind) {
    case SSIM_OP_COMPUTE:
        switch (R->role[op]) {
        case ROLE_CPU:
        case ROLE_INVALID_CPU:
            return CLS_CPU;
        case ROLE_MEM:
        case ROLE_INVALID:
        case ROLE_WAIT_COMM:
            return CLS_COMM;
        case ROLE_WAIT_FREE:
            return CLS_FREE;
        default:
            return CLS_COMP;
        }
    case SSIM_OP_RECV:
        return CLS_FREE;
    default:
        return CLS_COMM;
    }
}

/* Workload::issue_comp (roofline) or issue_replay: -1 when ASTRA-sim skips the node. */
static SsimTime compute_time(const Replay *R, const SsimOp *o, gboolean cpu)
{
    if (R->cfg.roofline && !R->cfg.replay_only && !cpu) {
        if (o->bytes == 0)
            return -1;
        if (o->flops <= 0)
            return 0;
        double oi = o->flops / (double)o->bytes;
        double bw = R->cfg.local_mem_bw_gbps * 1000000000.0;
        double peak = R->cfg.peak_tflops * 1000000000000.0;
        double perf = MIN(bw * oi, peak);
        double elapsed = o->flops / perf;
        return astra_ns(elapsed * 1e9);
    }
    return o->duration > 0 ? o->duration : 1;
}

/* ---- ending ops and walking the ready set ---- */

static void walk(Replay *R, guint32 rank);

/* Workload::call's common part (and skip_invalid's): the op's slot frees, its dependents may
 * become free, and (except for a skipped node) the rank walks its ready set. */
static void finish(Replay *R, guint32 op, gboolean then_walk)
{
    const SsimOp *o = &R->ops[op];
    Rank *rk = &R->ranks[o->rank];
    SsimTime now = ssim_engine_now(R->engine);
    int cls = op_class(R, op);
    if (cls != CLS_FREE)
        rk->busy[cls] = FALSE;
    R->tl->end[op] = now;
    rk->finish = now;
    for (guint32 i = R->succ_first[op]; i < R->succ_first[op + 1]; i++) {
        guint32 s = R->succ[i];
        if (--R->pending[s] > 0)
            continue;
        if (R->walking && R->ops[s].rank == o->rank)
            g_array_append_val(R->deferred, s);
        else
            heap_push(R, &R->ranks[R->ops[s].rank], op_class(R, s), s);
    }
    if (then_walk)
        walk(R, o->rank);
}

void astra_op_finished(Replay *R, guint32 op)
{
    finish(R, op, TRUE);
}

SsimTime astra_ns(double ns)
{
    return ns >= 0 && ns < (double)ASTRA_HORIZON ? (SsimTime)(guint64)ns : G_MAXINT64;
}

/* FALSE, with the run stopped, when an event `delay` ns from now would fall past the horizon or at
 * time 0. */
static gboolean event_time_ok(Replay *R, SsimTime delay)
{
    SsimTime now = ssim_engine_now(R->engine);
    if (delay < 0 || delay > ASTRA_HORIZON - now) {
        astra_fail(R, g_error_new(SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                                  "--semantics astra: at %" G_GINT64_FORMAT
                                  " ns an event falls past 2^62 ns (146 years): the "
                                  "configuration's times do not fit (a huge latency or trace "
                                  "duration, a tiny bandwidth or peak)",
                                  now));
        return FALSE;
    }
    if (now + delay == 0) {
        /* ASTRA-sim's analytical event queue asserts that each instant it steps to is later
         * than the current one, which starts at 0: an event at time 0 aborts it. */
        astra_fail(R, g_error_new(SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                                  "--semantics astra: an event falls at time 0 (a collective, "
                                  "memory node or transfer at the start that takes no time: an "
                                  "endpoint-delay of 0, a shared bus with o and G x bytes under "
                                  "1 ns, a transfer of no time), where ASTRA-sim aborts (its "
                                  "event queue asserts that the next instant is later than 0)"));
        return FALSE;
    }
    return TRUE;
}

void astra_at(Replay *R, SsimTime delay, int ev, guint64 a, guint64 b)
{
    if (event_time_ok(R, delay))
        ssim_engine_schedule(R->engine, ssim_engine_now(R->engine) + delay, ev, a, b);
}

/* ---- Sys::try_register_event and call_events ----
 *
 * ASTRA-sim's system layer keeps each rank's events in a map from instant to list.  The first
 * event of an instant schedules one CallEvents on the network's event queue (first come, first
 * served with the network's own events); later ones join its list.  When CallEvents comes due,
 * call_events runs the list in order, and an event registered while it runs for that same
 * instant (a delay of 0) joins the list and runs in the same pass, before anything else of the
 * instant.  A rank's events of one instant thus run together, which a single first-come queue of
 * every event would interleave with other ranks' and the network's. */

/* A rank's event after the first of its instant (Replay.sys_events): its kind and words, and the
 * instant's next. */
typedef struct {
    guint64 a, b;
    guint32 ev, next;
} SysEvent;

/* The index of `rank`'s instant `at` among its instants, or n_instants. */
static guint instant_find(const Rank *rk, SsimTime at)
{
    guint k = 0;
    while (k < rk->n_instants && rk->instants[k].at != at)
        k++;
    return k;
}

void astra_sys_at(Replay *R, guint32 rank, SsimTime delay, int ev, guint64 a, guint64 b)
{
    if (!event_time_ok(R, delay))
        return;
    SsimTime at = ssim_engine_now(R->engine) + delay;
    Rank *rk = &R->ranks[rank];
    guint k = instant_find(rk, at);
    if (k == rk->n_instants) {
        if (rk->n_instants == rk->cap_instants) {
            rk->cap_instants = MAX(4u, 2 * rk->cap_instants);
            rk->instants = g_renew(SysInstant, rk->instants, rk->cap_instants);
        }
        rk->instants[rk->n_instants++] = (SysInstant){at, a, b, (guint32)ev, SSIM_NONE, SSIM_NONE};
        ssim_engine_schedule(R->engine, at, EV_SYS, rank, 0);
        return;
    }
    guint32 e = astra_pool_take(R->sys_events, &R->sys_free, offsetof(SysEvent, next));
    g_array_index(R->sys_events, SysEvent, e) = (SysEvent){a, b, (guint32)ev, SSIM_NONE};
    SysInstant *x = &rk->instants[k];
    if (x->head == SSIM_NONE) /* the instant's list runs, and this joins it */
        x->head = e;
    else
        g_array_index(R->sys_events, SysEvent, x->tail).next = e;
    x->tail = e;
}

static void run_sys_event(Replay *R, guint ev, guint64 a, guint64 b)
{
    switch (ev) {
    case SYS_OP_DONE:
        astra_op_finished(R, (guint32)a);
        break;
    case SYS_BUNDLE:
        astra_on_bundle(R, (guint32)a, b);
        break;
    case SYS_CUSTOM:
        astra_custom_done(R, (guint32)a, (guint32)b);
        break;
    case SYS_MEM_FREE:
        astra_on_mem_free(R, (guint32)a);
        break;
    default:
        astra_on_bus(R, (guint32)a, b);
    }
}

/* Sys::call_events: runs the rank's list of this instant, what joins it on the way included. */
static void on_sys(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)
{
    (void)b;
    Replay *R = user_data;
    Rank *rk = &R->ranks[a];
    R->sys_calls++;
    /* Its index holds while its events run: they may add instants, but only this removes one. */
    guint k = instant_find(rk, ssim_engine_now(engine));
    g_assert(k < rk->n_instants);
    const SysInstant first = rk->instants[k];
    R->sys_events_run++;
    run_sys_event(R, first.ev, first.a, first.b);
    for (guint32 e; (e = rk->instants[k].head) != SSIM_NONE && !R->error;) {
        SysEvent run = g_array_index(R->sys_events, SysEvent, e);
        rk->instants[k].head = run.next;
        astra_pool_give(R->sys_events, &R->sys_free, offsetof(SysEvent, next), e);
        R->sys_events_run++;
        run_sys_event(R, run.ev, run.a, run.b);
    }
    rk->instants[k] = rk->instants[--rk->n_instants];
}

void astra_fail(Replay *R, GError *error)
{
    if (!R->error)
        R->error = error;
    else
        g_error_free(error);
    ssim_engine_stop(R->engine);
}

/* Workload::issue: starts `op` on its rank now. */
static void issue(Replay *R, guint32 rank, guint32 op)
{
    const SsimOp *o = &R->ops[op];
    Rank *rk = &R->ranks[rank];
    SsimTime now = ssim_engine_now(R->engine);
    int cls = op_class(R, op);
    R->tl->start[op] = R->tl->ready[op] = now;
    if (cls != CLS_FREE)
        rk->busy[cls] = TRUE;
    GError *error = NULL;
    switch (o->kind) {
    case SSIM_OP_COMPUTE: {
        if (R->role[op] == ROLE_INVALID || R->role[op] == ROLE_INVALID_CPU) {
            /* skip_invalid: ends now, its dependents wait for the next walk */
            R->stats.n_invalid++;
            finish(R, op, FALSE);
            break;
        }
        if (R->role[op] == ROLE_MEM) {
            astra_mem_issue(R, rank, op);
            break;
        }
        SsimTime t = compute_time(R, o, cls == CLS_CPU);
        R->stats.n_replayed += R->cfg.replay_only;
        if (t < 0) { /* skip_invalid: ends now; its dependents wait for the next walk */
            R->stats.n_skipped++;
            finish(R, op, FALSE);
            break;
        }
        astra_sys_at(R, rank, t, SYS_OP_DONE, op, 0);
        break;
    }
    case SSIM_OP_COLLECTIVE:
        if (!astra_coll_issue(R, rank, op, &error))
            astra_fail(R, error);
        break;
    case SSIM_OP_SEND:
        astra_send_issue(R, op);
        break;
    case SSIM_OP_RECV:
        astra_recv_issue(R, op);
        break;
    default:
        g_assert_not_reached();
    }
}

static void walk(Replay *R, guint32 rank)
{
    Rank *rk = &R->ranks[rank];
    g_assert(!R->walking);
    R->walking = TRUE;
    while (!R->error) {
        int best = -1;
        for (int c = 0; c < CLS_N; c++) {
            if (rk->n_heap[c] == 0 || (c != CLS_FREE && rk->busy[c]))
                continue;
            if (best < 0 || id_less(R, rk->heap[c][0], rk->heap[best][0]))
                best = c;
        }
        if (best < 0)
            break;
        issue(R, rank, heap_pop(R, rk, best));
    }
    R->walking = FALSE;
    for (guint i = 0; i < R->deferred->len; i++) {
        guint32 s = g_array_index(R->deferred, guint32, i);
        heap_push(R, &R->ranks[R->ops[s].rank], op_class(R, s), s);
    }
    g_array_set_size(R->deferred, 0);
}

/* ---- events ---- */

/* Engine handlers: an event's first word names the message or link it is for. */
#define ON_EVENT(name, fn)                                                                         \
    static void name(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)                 \
    {                                                                                              \
        (void)engine, (void)b;                                                                     \
        fn(user_data, (guint32)a);                                                                 \
    }
ON_EVENT(on_arrive, astra_on_arrive)
ON_EVENT(on_recv, astra_on_recv)
ON_EVENT(on_hop, astra_on_hop)
ON_EVENT(on_link_free, astra_on_link_free)
#undef ON_EVENT

/* ---- set-up and the run ---- */

static gboolean check_config(Replay *R, GError **error)
{
    SsimAstraConfig *c = &R->cfg;
    if (c->n_dims == 0) {
        c->n_dims = 1;
        c->topo[0] = SSIM_ASTRA_TOPO_SWITCH;
        c->npus[0] = R->n_ranks;
        c->bandwidth_gbps[0] = 400.0;
        c->latency_ns[0] = 936.25;
    }
    guint64 total = 1;
    for (guint d = 0; d < c->n_dims; d++) {
        R->npus_below[d] = (guint)total;
        total *= c->npus[d];
        R->bw_bpns[d] = c->bandwidth_gbps[d] * (1 << 30) / 1000000000.0;
        if (c->npus[d] == 0 || !(c->bandwidth_gbps[d] > 0) || !(c->latency_ns[d] >= 0) ||
            total > G_MAXUINT32) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "--semantics astra: network dimension %u needs NPUs > 0, bandwidth > 0 "
                        "and latency >= 0",
                        d);
            return FALSE;
        }
    }
    if (total != R->n_ranks) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: the network has %" G_GUINT64_FORMAT
                    " NPUs but the trace set has %u ranks (ASTRA-sim runs one trace per NPU)",
                    total, R->n_ranks);
        return FALSE;
    }
    R->n_dims = c->n_dims;
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        if (c->n_impl[t] > c->n_dims) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "--semantics astra: %s-implementation names %u dimensions; the network "
                        "has %u",
                        astra_coll_names[t], c->n_impl[t], c->n_dims);
            return FALSE;
        }
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        for (guint d = 0; d < c->n_impl[t]; d++) {
            if (c->impl[t][d].algo != SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE)
                continue;
            if (t != SSIM_ASTRA_AR) {
                /* Sys::generate_collective_phase makes a DoubleBinaryTreeAllReduce whatever the
                 * collective. */
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "--semantics astra: %s-implementation: doubleBinaryTree is an "
                            "all-reduce, which ASTRA-sim would run in place of the %s",
                            astra_coll_names[t], astra_coll_names[t]);
                return FALSE;
            }
            guint n = c->npus[d];
            if (n & (n - 1)) {
                /* BinaryTree numbers 2^k nodes; the others are not in the tree. */
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "--semantics astra: all-reduce-implementation: doubleBinaryTree on "
                            "dimension %u of %u NPUs: ASTRA-sim's binary tree holds a power of "
                            "two of them, and it fails on the rest",
                            d, n);
                return FALSE;
            }
        }
    if (c->queues_per_dim == 0 || c->queues_per_dim > 1000) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: num-queues-per-dim %u: expected 1 to 1000",
                    c->queues_per_dim);
        return FALSE;
    }
    if (c->splits == 0 || c->active_chunks_per_dim == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: preferred-dataset-splits and "
                    "active-chunks-per-dimension must be at least 1");
        return FALSE;
    }
    R->queue_streams = (c->active_chunks_per_dim + c->queues_per_dim - 1) / c->queues_per_dim;
    if (!(c->local_mem_bw_gbps > 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: local-mem-bw must be above 0 (ASTRA-sim prices every "
                    "reduction step by it, and divides by zero without it)");
        return FALSE;
    }
    /* Sys::Sys: the endpoint delay, an int, is the file's endpoint-delay x injection-scale. */
    double scaled = trunc((double)c->endpoint_delay * c->injection_scale);
    if (!(c->injection_scale >= 0) || !(scaled <= G_MAXINT32)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: injection-scale %g: the endpoint delay it scales must "
                    "stay a number from 0 to %d ns (ASTRA-sim keeps it in an int)",
                    c->injection_scale, G_MAXINT32);
        return FALSE;
    }
    if (c->endpoint_delay_set)
        c->endpoint_delay = (SsimTime)scaled;
    if (c->roofline && !(c->peak_tflops > 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: the roofline needs peak-perf above 0");
        return FALSE;
    }
    return TRUE;
}

/* Explicit successors (the graph's own lists also hold stream order, which ASTRA-sim ignores)
 * and the first ops free; FALSE for a graph with barriers. */
static gboolean build(Replay *R, GError **error)
{
    guint32 n = ssim_graph_n_ops(R->graph);
    R->pending = g_new0(guint32, n);
    R->role = g_new0(guint8, MAX(n, 1u));
    g_autoptr(GHashTable) roles = g_hash_table_new(NULL, NULL); /* class id -> role + 1 */
    R->succ_first = g_new0(guint32, (gsize)n + 1);
    R->chunks_left = g_new0(guint32, n);
    for (guint32 i = 0; i < n; i++) {
        if (R->ops[i].kind == SSIM_OP_BARRIER) {
            char label[128];
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "--semantics astra: %s on rank %u is a barrier, which ASTRA-sim does "
                        "not implement",
                        ssim_graph_op_label(R->graph, i, label, sizeof label), R->ops[i].rank);
            return FALSE;
        }
        guint cls = R->ops[i].cls;
        gpointer known = g_hash_table_lookup(roles, GUINT_TO_POINTER(cls));
        int role = known ? GPOINTER_TO_INT(known) - 1
                   : cls ? class_role(ssim_graph_string(R->graph, cls), R->cfg.replay_only)
                         : ROLE_PLAIN;
        if (!known)
            g_hash_table_insert(roles, GUINT_TO_POINTER(cls), GINT_TO_POINTER(role + 1));
        R->role[i] = (guint8)role;
        if (role == ROLE_REFUSED) {
            char label[128];
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "--semantics astra: %s on rank %u (node %" G_GUINT64_FORMAT
                        ") is a %s, on which ASTRA-sim aborts (its statistics assert: "
                        "\"Invalid node_type\")",
                        ssim_graph_op_label(R->graph, i, label, sizeof label), R->ops[i].rank,
                        R->node_ids ? R->node_ids[i] : (guint64)i,
                        ssim_graph_string(R->graph, cls) + strlen("chakra:"));
            return FALSE;
        }
        guint nd;
        const guint32 *d = ssim_graph_deps(R->graph, i, &nd);
        R->pending[i] = nd;
        for (guint k = 0; k < nd; k++)
            R->succ_first[d[k] + 1]++;
    }
    for (guint32 i = 0; i < n; i++)
        R->succ_first[i + 1] += R->succ_first[i];
    R->succ = g_new(guint32, MAX(R->succ_first[n], 1u));
    g_autofree guint32 *fill = g_memdup2(R->succ_first, sizeof(guint32) * n);
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(R->graph, i, &nd);
        for (guint k = 0; k < nd; k++)
            R->succ[fill[d[k]]++] = i;
    }
    if (!R->node_ids) {
        g_autofree guint64 *count = g_new0(guint64, R->n_ranks);
        R->own_ids = g_new(guint64, MAX(n, 1u));
        for (guint32 i = 0; i < n; i++)
            R->own_ids[i] = count[R->ops[i].rank]++;
        R->node_ids = R->own_ids;
    }
    for (guint32 i = 0; i < n; i++)
        if (R->pending[i] == 0)
            heap_push(R, &R->ranks[R->ops[i].rank], op_class(R, i), i);
    return TRUE;
}

static void replay_clear(Replay *R)
{
    if (R->sys_events)
        g_clear_pointer(&R->sys_events, g_array_unref);
    astra_dbt_clear(R);
    astra_custom_clear(R);
    astra_coll_clear(R);
    astra_net_clear(R);
    astra_mem_clear(R);
    astra_bus_clear(R);
    if (R->ranks) {
        for (guint r = 0; r < R->n_ranks; r++) {
            for (int c = 0; c < CLS_N; c++)
                g_free(R->ranks[r].heap[c]);
            g_free(R->ranks[r].instants);
            for (guint q = 0; q < R->n_dims * R->cfg.queues_per_dim; q++)
                g_ptr_array_unref(R->ranks[r].queues[q].list);
            g_free(R->ranks[r].queues);
        }
        g_free(R->ranks);
    }
    g_free(R->pending);
    g_free(R->role);
    g_free(R->succ_first);
    g_free(R->succ);
    g_free(R->chunks_left);
    g_free(R->group_streams);
    g_free(R->own_ids);
    if (R->phases)
        g_array_unref(R->phases);
    if (R->msgs)
        g_array_unref(R->msgs);
    if (R->deferred)
        g_array_unref(R->deferred);
    if (R->engine)
        ssim_engine_free(R->engine);
    ssim_timeline_free(R->tl);
    if (R->error)
        g_error_free(R->error);
}

SsimTimeline *ssim_astra_replay(const SsimGraph *graph, const guint64 *node_ids,
                                const SsimCollAttrs *colls, const SsimAstraConfig *cfg,
                                const SsimRunLimits *limits, SsimAstraStats *stats, GError **error)
{
    g_return_val_if_fail(graph && cfg && ssim_graph_is_finalized(graph), NULL);
    Replay R = {.graph = graph,
                .ops = ssim_graph_ops(graph),
                .node_ids = node_ids,
                .colls = colls,
                .cfg = *cfg,
                .n_ranks = ssim_graph_n_ranks(graph),
                .free_msg = SSIM_NONE};
    SsimTimeline *out = NULL;
    guint32 n = ssim_graph_n_ops(graph);
    if (!check_config(&R, error))
        goto done;
    R.ranks = g_new0(Rank, R.n_ranks);
    for (guint r = 0; r < R.n_ranks; r++) {
        guint n_queues = R.n_dims * R.cfg.queues_per_dim;
        R.ranks[r].queues = g_new0(Queue, n_queues);
        for (guint q = 0; q < n_queues; q++)
            R.ranks[r].queues[q].list = g_ptr_array_new();
        for (guint d = 0; d < R.n_dims; d++)
            R.ranks[r].next_queue[d][QUEUE_LAST] = R.cfg.queues_per_dim / 2;
    }
    R.tl = g_new0(SsimTimeline, 1);
    R.tl->n_ops = n;
    R.tl->n_copies = 1;
    R.tl->ready = g_new0(SsimTime, MAX(n, 1u));
    R.tl->start = g_new0(SsimTime, MAX(n, 1u));
    R.tl->end = g_new(SsimTime, MAX(n, 1u));
    for (guint32 i = 0; i < n; i++)
        R.tl->end[i] = -1;
    if (!build(&R, error) || !astra_custom_build(&R, error) || !astra_net_build(&R, error))
        goto done;
    astra_mem_build(&R);
    astra_bus_build(&R);
    R.group_streams = g_new0(guint32, (gsize)MAX(ssim_graph_n_groups(graph), 1u) * R.n_ranks);
    R.world = SSIM_NONE;
    for (guint32 g = 0; g < ssim_graph_n_groups(graph); g++)
        if (strcmp(ssim_graph_group_name(graph, g), "world") == 0)
            R.world = g;
    R.phases = g_array_new(FALSE, FALSE, sizeof(Phase));
    R.streams = g_ptr_array_new();
    R.msgs = g_array_new(FALSE, FALSE, sizeof(Msg));
    R.deferred = g_array_new(FALSE, FALSE, sizeof(guint32));
    R.engine = ssim_engine_new();
    ssim_engine_register(R.engine, on_arrive, &R);
    ssim_engine_register(R.engine, on_recv, &R);
    ssim_engine_register(R.engine, on_hop, &R);
    ssim_engine_register(R.engine, on_link_free, &R);
    ssim_engine_register(R.engine, on_sys, &R);
    R.sys_events = g_array_new(FALSE, FALSE, sizeof(SysEvent));
    R.sys_free = SSIM_NONE;
    /* Workload::fire, rank by rank. */
    for (guint r = 0; r < R.n_ranks && !R.error; r++)
        walk(&R, r);
    SsimEngineStop stop = SSIM_ENGINE_EMPTY;
    if (!R.error)
        stop = ssim_engine_run(R.engine, limits ? limits->until : SSIM_TIME_NEVER,
                               limits ? limits->max_events : 0);
    if (R.error) {
        g_propagate_error(error, g_steal_pointer(&R.error));
        goto done;
    }
    if (stop == SSIM_ENGINE_OVERFLOW) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "--semantics astra: the event engine is full (at most %" G_GSIZE_FORMAT
                    " events pending at once, 2^40 scheduled) before the trace ended",
                    ssim_engine_max_pending(R.engine));
        goto done;
    }
    if (stop == SSIM_ENGINE_TIME_LIMIT || stop == SSIM_ENGINE_EVENT_BUDGET) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "--semantics astra: the run reached its %s before the trace ended",
                    stop == SSIM_ENGINE_TIME_LIMIT ? "time limit" : "event budget");
        goto done;
    }
    SsimTime makespan = 0;
    for (guint32 i = 0; i < n; i++) {
        if (R.tl->end[i] < 0) {
            /* Every rank started a collective of every rank that never ended: its ranks tagged
             * it differently.  Name the first such, else the first op that never ended. */
            guint32 stuck = i, n_stuck = 0;
            g_autofree gboolean *seen = g_new0(gboolean, R.n_ranks);
            for (guint32 j = i; j < n && R.world != SSIM_NONE; j++)
                if (R.tl->end[j] < 0 && R.ops[j].kind == SSIM_OP_COLLECTIVE &&
                    R.ops[j].group == R.world && R.chunks_left[j] > 0 && !seen[R.ops[j].rank]) {
                    if (n_stuck++ == 0)
                        stuck = j;
                    seen[R.ops[j].rank] = TRUE;
                }
            if (n_stuck < R.n_ranks)
                stuck = i;
            GString *hint = g_string_new(NULL);
            guint waiting = astra_net_handshakes_waiting(&R);
            if (waiting > 0)
                g_string_append_printf(hint,
                                       "; %u sends and receives still wait for their rendezvous "
                                       "handshake: under the protocol a message leaves only once "
                                       "its receiver has posted the receive, so ranks that each "
                                       "send before they receive wait on one another (ASTRA-sim "
                                       "leaves the same nodes unreleased)",
                                       waiting);
            else if (n_stuck == R.n_ranks)
                g_string_append(hint, "; every rank started a collective of every rank that "
                                      "never ended: such a collective is tagged by the rank's "
                                      "count of collective streams, which those of other groups "
                                      "advance too, so ranks that issue collectives of several "
                                      "groups in different orders tag it differently and it "
                                      "never matches, as in ASTRA-sim");
            if (R.stats.n_skipped + R.stats.n_invalid > 0)
                g_string_append_printf(hint,
                                       "; %" G_GUINT64_FORMAT " nodes were skipped in no time "
                                       "(compute nodes of tensor_size 0 under the roofline, "
                                       "invalid nodes), and their dependents wait for the "
                                       "rank's next event, as in ASTRA-sim",
                                       R.stats.n_skipped + R.stats.n_invalid);
            char label[128];
            g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK,
                        "--semantics astra: the run stalled: %s on rank %u (node %" G_GUINT64_FORMAT
                        ") never ended (an unmatched send or receive, or a dependency that "
                        "never ends)%s",
                        ssim_graph_op_label(graph, stuck, label, sizeof label), R.ops[stuck].rank,
                        R.node_ids[stuck], hint->str);
            g_string_free(hint, TRUE);
            goto done;
        }
        makespan = MAX(makespan, R.tl->end[i]);
    }
    R.stats.rank_finish_max = 0;
    R.stats.rank_finish_min = R.n_ranks ? SSIM_TIME_NEVER : 0;
    for (guint r = 0; r < R.n_ranks; r++) {
        R.stats.rank_finish_max = MAX(R.stats.rank_finish_max, R.ranks[r].finish);
        R.stats.rank_finish_min = MIN(R.stats.rank_finish_min, R.ranks[r].finish);
    }
    R.tl->makespan = makespan;
    /* A rank's instant counts its events, not the one that ran them. */
    R.tl->events = ssim_engine_fired(R.engine) - R.sys_calls + R.sys_events_run;
    if (stats)
        *stats = R.stats;
    out = g_steal_pointer(&R.tl);
done:
    replay_clear(&R);
    return out;
}
