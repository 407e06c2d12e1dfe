/*
 * Collective algorithms as flows on the network, and the runtime plug-in that drives them.
 *
 * Each communication match becomes a sequence of steps; a step is a set of flows that start
 * together, one latency term after the previous step's flows have all finished (the slowest
 * flow ends a step, which is how a contended link slows a whole collective).  A step's latency
 * is the largest route latency among its edges plus the configured per-step software overhead,
 * as NCCL's tuning model charges a base plus a per-hop latency per step.  S is the op's bytes,
 * the full buffer as nccl-tests counts it; n the members, sorted by rank so that the members of
 * one node are consecutive (N nodes of k members each when the group is uniform).
 *
 * The algorithms, one file each (collective-<name>.c, listed in collective-private.h, where
 * their interface is described):
 *
 *   ring          all-reduce, all-gather and reduce-scatter: every rank sends S/n to its
 *                 successor each step, on k rail-aligned rings across nodes.
 *   chain         broadcast and reduce: a pipeline along the sorted members.
 *   tree          all-reduce on NCCL's double binary tree, pipelined.
 *   hierarchical  all-reduce over a uniform multi-node group: reduce-scatter inside the nodes,
 *                 all-reduce across them on same-rail rings, all-gather inside the nodes.
 *   direct        all-to-all: one step, every rank sends S/n to each of the others.
 *   permute       XLA's collective-permute: one step, every member sends S to the next member
 *                 in group order.
 *   p2p           a send/receive pair: one flow of the send's bytes.
 *
 * ssim_coll_choose() (collective-choose.c) picks a collective's algorithm from its kind, the
 * configured setting and the shape of its members; a send or receive is p2p.  Steps are
 * generated on the fly from (algorithm, step index) and the layout of the collective's members
 * (sorted members, tree shapes, per-algorithm latencies), built on a group's first use and cached
 * for the run, so the steady state allocates nothing: instances come from a pool with a free
 * list.  This file keeps the registry, that pool, the layout cache, the uncontended times and
 * calibration of instances, and the engine glue.
 */
#include "src/net/net-private.h"
#include "src/net/collective-private.h"

#include <shiftsim/analytic.h>

#include <math.h>
#include <string.h>

/* The registry: each algorithm's entry, indexed by Algo, from COLL_ALGO_LIST. */
const AlgoClass *const ssim_coll_algos[ALGO_N] = {
#define COLL_X(e, f) [ALGO_##e] = &ssim_coll_##f,
    COLL_ALGO_LIST(COLL_X)
#undef COLL_X
};

typedef struct {
    SsimNet *net;
    SsimEngine *engine;
    SsimRun *run;
    const SsimGraph *graph;
    Layout *layouts; /* per graph group, built on the group's first use */
    guint n_groups;
    Inst *insts;
    guint32 n_insts, cap_insts, free_head;
    guint ev_step, ev_wake;
    SsimEngineTicket wake; /* an alarm (engine.h) at the network's next completion */
    SsimNetMapping map;
    GArray *scratch; /* guint32: a group's members mapped to GPUs */
    SsimNetCalibration cal;
    SsimNet *shadow;     /* scratch network for timing an instance alone (lazily made) */
    GHashTable *alone;   /* AloneKey -> AloneVal, for the current graph */
    GArray *uncontended; /* SsimTime per match (per instance when replicated) of the last run */
    /*
     * The layouts of the copies of each graph group (SsimNetMapping) whose members differ from
     * the group's and from every lower copy's, built on the group's first use: layout id
     * n_groups + copy_layouts_first[g] + k is the k-th such layout of group g.
     */
    GArray *copy_layouts;        /* Layout */
    guint32 *copy_layouts_first; /* per group, SSIM_NONE until built */
    guint32 *copy_layouts_n;
    guint32 *copy_layout; /* per group and copy (g * n_copies + c): the layout id of copy c */
} Comm;

/*
 * Layout `id`: a graph group's (id < n_groups), or past them one of a copy's.  An instance holds
 * the id, not a pointer, since copy_layouts grows.
 */
static inline Layout *layout_at(const Comm *cm, guint32 id)
{
    return id < cm->n_groups ? &cm->layouts[id]
                             : &g_array_index(cm->copy_layouts, Layout, id - cm->n_groups);
}

/* What an instance's time alone depends on, besides its calibration (zeroed padding). */
typedef struct {
    guint64 bytes;
    guint32 layout, src, dst;
    guint8 algo, coll;
} AloneKey;

typedef struct {
    SsimTime flows;          /* its flows' time alone at scale 1, latencies left out */
    SsimTime nominal;        /* uncalibrated: the whole time alone */
    SsimTime total, latency; /* the last calibration seen, and its time alone */
    SsimTime calibrated;
    double scale;
} AloneVal;

/* --- Layouts ---------------------------------------------------------------------------- */

void ssim_coll_layout_clear(Layout *l)
{
    g_free(l->mesh_next);
    g_free(l->sorted);
    g_free(l->order);
    for (int t = 0; t < 2; t++) {
        g_free(l->parent[t]);
        g_free(l->height[t]);
        g_free(l->depth[t]);
    }
    memset(l, 0, sizeof *l);
}

/*
 * The rings of a group of n members inside one node of a full mesh, as NCCL builds several rings
 * over different pairs so that every link carries data: for 3 and 4 members every Hamiltonian
 * cycle in both directions (each ordered pair's link then carries the same share: 2 of 2 rings,
 * or 2 of 6), for 2 members the one ring; for more, the rings i -> i + s for every shift s prime
 * to n (every link alike when n is prime; the links of the other shifts stay idle otherwise).
 * Returns the number of rings and fills `next` (n per ring): at most MESH_RINGS_MAX(n) rings.
 */
#define MESH_RINGS_MAX(n) ((n) == 4 ? 6u : (n))
static guint mesh_rings(guint n, guint8 *next)
{
    static const guint8 four[6][4] = {{0, 1, 2, 3}, {0, 3, 2, 1}, {0, 1, 3, 2},
                                      {0, 2, 3, 1}, {0, 2, 1, 3}, {0, 3, 1, 2}};
    guint rings = 0;
    if (n == 4) {
        for (guint r = 0; r < 6; r++, rings++)
            for (guint j = 0; j < 4; j++)
                next[r * 4 + four[r][j]] = four[r][(j + 1) % 4];
        return rings;
    }
    for (guint s = 1; s < n; s++) {
        guint a = s, b = n;
        while (b) {
            guint t = a % b;
            a = b;
            b = t;
        }
        if (a != 1 || (n == 2 && s > 1))
            continue;
        for (guint i = 0; i < n; i++)
            next[rings * n + i] = (guint8)((i + s) % n);
        rings++;
    }
    return rings;
}

void ssim_coll_layout_build(Layout *l, const SsimNet *net, const guint32 *ranks, guint n)
{
    guint gpn = ssim_net_gpus_per_node(net);
    l->n = n;
    l->sorted = g_memdup2(ranks, n * sizeof *ranks);
    l->order = g_memdup2(ranks, n * sizeof *ranks);
    qsort(l->sorted, n, sizeof *l->sorted, ssim_cmp_u32);
    l->n_nodes = 0;
    guint run = 0, k = 0;
    gboolean uniform = TRUE;
    for (guint i = 0; i < n; i++) {
        if (i == 0 || l->sorted[i] / gpn != l->sorted[i - 1] / gpn) {
            if (l->n_nodes > 0) {
                if (k == 0)
                    k = run;
                uniform = uniform && run == k;
            }
            l->n_nodes++;
            run = 0;
        }
        run++;
    }
    if (k == 0)
        k = run;
    uniform = uniform && run == k;
    l->k = uniform ? k : 0;
    /* Across nodes a ring per member of a node (NCCL's rail-aligned channels), or ring_nics
     * rings where the cluster puts a communicator's channels on that many NICs. */
    guint ring_nics = ssim_net_topo(net)->ring_nics;
    l->channels = uniform && l->n_nodes > 1 ? (ring_nics > 0 ? MIN(k, ring_nics) : k) : 1;
    /* The groups of one node's GPUs with k members each start their rings at different members
     * (by the first member's place in its node), as NCCL picks each communicator's NICs near
     * its own GPUs; with a ring per member, the same rings in another order. */
    l->first = uniform && l->n_nodes > 1 ? (l->sorted[0] % gpn) % k : 0;
    /* Inside one node of a full mesh: rings over every pair's link (mesh_rings), each link
     * carrying `uses` of them. */
    guint uses = 1;
    if (ssim_net_topo(net)->fullmesh && l->n_nodes == 1 && n > 1 && n <= 64) {
        l->mesh_next = g_new(guint8, (gsize)n * MESH_RINGS_MAX(n));
        l->channels = mesh_rings(n, l->mesh_next);
        uses = n == 4 ? 2 : 1;
    }
    l->b_intra = l->b_inter = INFINITY;

    for (guint c = 0; c < l->channels; c++)
        for (guint i = 0; i < n; i++) {
            guint32 s, d;
            coll_ring_edge(l, c, i, &s, &d);
            if (s == d)
                continue;
            double bw = ssim_net_path_bandwidth(net, s, d);
            if (s / gpn == d / gpn)
                l->b_intra = MIN(l->b_intra, bw);
            else
                l->b_inter = MIN(l->b_inter, bw);
        }
    /* What one member gets on the rings: its links' share of all of them. */
    if (l->mesh_next != NULL)
        l->b_intra *= (double)l->channels / uses;
    if (!isfinite(l->b_intra))
        l->b_intra = l->b_inter;
    if (!isfinite(l->b_inter))
        l->b_inter = l->b_intra;
    for (guint a = 0; a < ALGO_N; a++)
        if (ssim_coll_algos[a]->measure != NULL)
            ssim_coll_algos[a]->measure(l, net);
    l->built = TRUE;
}

/* --- Steps ------------------------------------------------------------------------------ */

/* What `in` pays once before its first step, as the analytical model charges it (analytic.h):
 * a collective's fixed cost (collective_overhead_us; a send is no collective) and, inside one
 * node, the time its kernels take to read and write a member's own buffers
 * (collective_copy_GB_s). */
static SsimTime first_step_cost(const Comm *cm, const Inst *in, const Layout *l)
{
    const SsimNetConfig *cfg = ssim_net_config(cm->net);
    SsimTime fixed = l != NULL ? cfg->collective_overhead : 0;
    if (!(cfg->collective_copy_bw > 0))
        return fixed;
    guint gpn = ssim_net_gpus_per_node(cm->net);
    gboolean inside = l != NULL ? l->n_nodes == 1 : in->src / gpn == in->dst / gpn;
    if (!inside)
        return fixed;
    double local = l != NULL
                       ? ssim_analytic_copy_bytes((SsimCollKind)in->coll, (double)in->bytes, l->n)
                       : (double)in->bytes;
    return fixed + ssim_time_from_seconds(local / cfg->collective_copy_bw);
}

/* The latency charged before step `s` of `in`: a calibrated instance's latency spread evenly
 * (the steps' shares add up to it exactly; its measured times hold the first step's costs
 * already), else the step's route latency and overhead, and before the first step
 * first_step_cost(). */
static SsimTime step_alpha(const Comm *cm, const Inst *in, const Layout *l, guint32 s)
{
    if (in->calibrated) {
        guint64 n = MAX(in->n_steps, 1u), lt = (guint64)in->lat_total;
        return (SsimTime)((s + 1) * lt / n - s * lt / n);
    }
    const SsimNetConfig *cfg = ssim_net_config(cm->net);
    SsimTime first = s == 0 ? first_step_cost(cm, in, l) : 0;
    return ssim_coll_algos[in->algo]->latency(l, cm->net, in, s) + cfg->step_overhead + first;
}

/* Starts the flows of step `in->step` of `in` on `net`, owned by `id`; returns how many.  A
 * calibrated instance's flows carry their bytes times its scale. */
static guint32 start_flows(SsimNet *net, const Inst *in, const Layout *l, guint64 id)
{
    FlowSink sink = {.net = net, .in = in, .owner = id, .n = 0};
    ssim_coll_algos[in->algo]->flows(l, in, &sink);
    return sink.n;
}

/* Starts the flows of the current step of instance `id`; returns how many. */
static guint32 start_step(Comm *cm, guint32 id)
{
    const Inst *in = &cm->insts[id];
    const Layout *l = in->layout == SSIM_NONE ? NULL : layout_at(cm, in->layout);
    return start_flows(cm->net, in, l, id);
}

/* --- Uncontended times ------------------------------------------------------------------ */

/* The time step `s` of `in` takes alone on the scratch network (its latency left out). */
static SsimTime alone_step(Comm *cm, const Inst *in, const Layout *l, guint32 s)
{
    if (cm->shadow == NULL)
        cm->shadow = ssim_net_new_like(cm->net);
    SsimNet *net = cm->shadow;
    ssim_net_reset(net);
    Inst tmp = *in;
    tmp.step = s;
    start_flows(net, &tmp, l, 0);
    while (ssim_net_pop_completion(net, SSIM_TIME_NEVER, NULL, NULL))
        ;
    return ssim_net_now(net);
}

/*
 * The time the flows of `in` take alone, step after step, latencies left out.  Steps with the
 * same flows take the same time, so where the algorithm says which steps are alike (a ring's
 * steps, a hierarchical all-reduce's two kinds of step) one of each kind is timed; the others
 * (trees and chains, whose steps differ as their pipelines fill and drain, and one-step
 * algorithms) are timed step by step.
 */
static SsimTime alone_flows(Comm *cm, const Inst *in, const Layout *l)
{
    const AlgoClass *algo = ssim_coll_algos[in->algo];
    SsimTime t = 0;
    if (algo->alike != NULL) {
        AlikeSteps alike[2];
        guint n = algo->alike(l, in, alike);
        for (guint i = 0; i < n; i++)
            t = ssim_time_add(
                t, ssim_time_mul(alone_step(cm, in, l, alike[i].like), (guint64)alike[i].times));
        return t;
    }
    for (guint32 s = 0; s < in->n_steps; s++)
        t = ssim_time_add(t, alone_step(cm, in, l, s));
    return t;
}

static SsimTime alone_alphas(const Comm *cm, const Inst *in, const Layout *l)
{
    SsimTime t = 0;
    for (guint32 s = 0; s < in->n_steps; s++)
        t = ssim_time_add(t, step_alpha(cm, in, l, s));
    return t;
}

static guint alone_hash(gconstpointer k)
{
    const guint8 *b = k;
    guint32 h = 2166136261u;
    for (gsize i = 0; i < sizeof(AloneKey); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean alone_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(AloneKey)) == 0;
}

/* What the calibration is asked about a collective `in` on `l` (unless its algorithm says
 * otherwise): its kind, the algorithm's user-visible name, the members and how many of them
 * share a node. */
static void collective_query(const Layout *l, const Inst *in, CalibQuery *q)
{
    q->kind = (SsimCollKind)in->coll;
    q->algorithm = ssim_coll_algos[in->algo]->reported;
    q->n = l->n;
    q->per_node = l->n_nodes <= 1 ? l->n : l->k > 0 ? l->k : (l->n + l->n_nodes - 1) / l->n_nodes;
}

/*
 * Calibrates `in` (fresh from comm_start, step 0) when the calibration answers for it, and
 * returns its uncontended time.  Times alone are cached per (layout, kind, algorithm, bytes) for
 * the graph: a lowered iteration repeats a few shapes thousands of times.
 */
static SsimTime prepare_inst(Comm *cm, Inst *in, const Layout *l, guint32 first_op)
{
    AloneKey key;
    memset(&key, 0, sizeof key);
    key.bytes = in->bytes;
    key.layout = in->layout;
    key.src = in->src;
    key.dst = in->dst;
    key.algo = in->algo;
    key.coll = in->coll;
    AloneVal *v = g_hash_table_lookup(cm->alone, &key);
    if (v == NULL) {
        v = g_new0(AloneVal, 1);
        v->flows = alone_flows(cm, in, l);
        v->nominal = ssim_time_add(v->flows, alone_alphas(cm, in, l));
        v->total = v->latency = -1;
        g_hash_table_insert(cm->alone, g_memdup2(&key, sizeof key), v);
    }
    SsimTime total = 0, latency = 0;
    if (cm->cal.lookup == NULL) {
        return v->nominal;
    }
    CalibQuery q;
    if (ssim_coll_algos[in->algo]->query != NULL)
        ssim_coll_algos[in->algo]->query(l, cm->net, in, &q);
    else
        collective_query(l, in, &q);
    if (!cm->cal.lookup(cm->cal.data, cm->graph, first_op, q.kind, q.algorithm, q.n, q.per_node,
                        in->bytes, &total, &latency) ||
        v->flows <= 0)
        return v->nominal;
    latency = CLAMP(latency, 0, total);
    in->calibrated = TRUE;
    in->lat_total = latency;
    if (v->total != total || v->latency != latency) {
        v->total = total;
        v->latency = latency;
        v->scale = (double)(total - latency) / (double)v->flows;
        in->scale = v->scale;
        v->calibrated = ssim_time_add(latency, alone_flows(cm, in, l));
    }
    in->scale = v->scale;
    return v->calibrated;
}

/* --- Engine glue ------------------------------------------------------------------------ */

static void ensure_wake(Comm *cm)
{
    SsimTime next = ssim_net_next_completion(cm->net);
    if (next != SSIM_TIME_NEVER && next < cm->wake.at)
        ssim_engine_schedule_alarm(cm->engine, &cm->wake, next, cm->ev_wake, 0, 0);
}

static void inst_free(Comm *cm, guint32 id)
{
    cm->insts[id].next_free = cm->free_head;
    cm->free_head = id;
}

/* The current step of `id` is done: schedule the next one, or finish the match. */
static void step_done(Comm *cm, guint32 id)
{
    Inst *in = &cm->insts[id];
    in->step++;
    if (in->step >= in->n_steps) {
        guint32 match = in->match, instance = in->instance;
        gboolean load_only = in->load_only;
        inst_free(cm, id);
        if (load_only)
            return;
        if (instance != SSIM_NONE)
            ssim_run_finish_instance(cm->run, match, instance);
        else
            ssim_run_finish_match(cm->run, match);
        return;
    }
    const Layout *l = in->layout == SSIM_NONE ? NULL : layout_at(cm, in->layout);
    SsimTime at = ssim_time_add(ssim_engine_now(cm->engine), step_alpha(cm, in, l, in->step));
    ssim_engine_schedule(cm->engine, at, cm->ev_step, id, 0);
}

static void on_step(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)
{
    (void)b;
    Comm *cm = user_data;
    guint32 id = (guint32)a;
    ssim_net_advance(cm->net, ssim_engine_now(engine));
    guint32 n = start_step(cm, id);
    cm->insts[id].pending = n;
    if (n == 0)
        step_done(cm, id);
    ensure_wake(cm);
}

static void on_wake(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data)
{
    (void)a;
    (void)b;
    Comm *cm = user_data;
    SsimTime now = ssim_engine_now(engine);
    if (!ssim_engine_ticket_take(engine, &cm->wake))
        return; /* superseded by an earlier wake-up */
    guint64 owner;
    while (ssim_net_pop_completion(cm->net, now, &owner, NULL)) {
        Inst *in = &cm->insts[owner];
        if (--in->pending == 0)
            step_done(cm, (guint32)owner);
    }
    ensure_wake(cm);
}

static void comm_reset(Comm *cm)
{
    for (guint i = 0; i < cm->n_groups; i++)
        ssim_coll_layout_clear(&cm->layouts[i]);
    g_free(cm->layouts);
    cm->layouts = NULL;
    cm->n_groups = 0;
    for (guint i = 0; cm->copy_layouts != NULL && i < cm->copy_layouts->len; i++)
        ssim_coll_layout_clear(&g_array_index(cm->copy_layouts, Layout, i));
    if (cm->copy_layouts != NULL)
        g_array_set_size(cm->copy_layouts, 0);
    g_clear_pointer(&cm->copy_layouts_first, g_free);
    g_clear_pointer(&cm->copy_layouts_n, g_free);
    g_clear_pointer(&cm->copy_layout, g_free);
    cm->n_insts = 0;
    cm->free_head = SSIM_NONE;
    cm->graph = NULL;
    cm->run = NULL;
    cm->engine = NULL;
    g_hash_table_remove_all(cm->alone);
}

static void comm_free(gpointer data)
{
    Comm *cm = data;
    comm_reset(cm);
    g_free(cm->insts);
    if (cm->scratch != NULL)
        g_array_free(cm->scratch, TRUE);
    g_hash_table_destroy(cm->alone);
    g_array_free(cm->uncontended, TRUE);
    ssim_net_free(cm->shadow);
    if (cm->copy_layouts != NULL)
        g_array_free(cm->copy_layouts, TRUE);
    g_free(cm);
}

static inline guint32 gpu_of(const Comm *cm, guint32 rank)
{
    return cm->map.rank_map != NULL && rank < cm->map.n_ranks ? cm->map.rank_map[rank] : rank;
}

static gboolean comm_attach(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *graph,
                            GError **error)
{
    Comm *cm = data;
    comm_reset(cm);
    guint n_gpus = ssim_net_n_gpus(cm->net), n_ranks = ssim_graph_n_ranks(graph);
    if (cm->map.rank_map == NULL && n_ranks > n_gpus) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "network: the graph has %u ranks but the cluster only %u GPUs", n_ranks,
                    n_gpus);
        return FALSE;
    }
    for (guint32 r = 0; cm->map.rank_map != NULL && r < n_ranks; r++)
        if (r >= cm->map.n_ranks || cm->map.rank_map[r] >= n_gpus) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "network: graph rank %u has no GPU in the rank map (the cluster has "
                        "%u GPUs)",
                        r, n_gpus);
            return FALSE;
        }
    ssim_net_reset(cm->net);
    cm->engine = engine;
    cm->run = run;
    cm->graph = graph;
    cm->n_groups = ssim_graph_n_groups(graph);
    cm->layouts = g_new0(Layout, MAX(cm->n_groups, 1u));
    cm->copy_layouts_first = g_new(guint32, MAX(cm->n_groups, 1u));
    cm->copy_layouts_n = g_new0(guint32, MAX(cm->n_groups, 1u));
    for (guint i = 0; i < cm->n_groups; i++)
        cm->copy_layouts_first[i] = SSIM_NONE;
    if (cm->map.n_copies > 1 && cm->map.copy_gpu != NULL)
        cm->copy_layout = g_new0(guint32, (gsize)MAX(cm->n_groups, 1u) * cm->map.n_copies);
    cm->wake = (SsimEngineTicket)SSIM_ENGINE_TICKET_INIT;
    g_array_set_size(cm->uncontended, 0);
    g_array_set_size(cm->uncontended, ssim_graph_n_matches(graph));
    cm->ev_step = ssim_engine_register(engine, on_step, cm);
    cm->ev_wake = ssim_engine_register(engine, on_wake, cm);
    return TRUE;
}

static void comm_detach(gpointer data, SsimRun *run)
{
    (void)run;
    comm_reset(data);
}

static guint32 inst_alloc(Comm *cm)
{
    if (cm->free_head != SSIM_NONE) {
        guint32 id = cm->free_head;
        cm->free_head = cm->insts[id].next_free;
        return id;
    }
    if (cm->n_insts == cm->cap_insts) {
        cm->cap_insts = cm->cap_insts ? cm->cap_insts * 2 : 64;
        cm->insts = g_renew(Inst, cm->insts, cm->cap_insts);
    }
    return cm->n_insts++;
}

/* Fills the algorithm, chunks and steps of `in`, a collective of `coll` and in->bytes on layout
 * `layout_id`; FALSE when it moves nothing (one member, or no bytes). */
static gboolean setup_collective(Comm *cm, Inst *in, guint32 layout_id)
{
    Layout *l = layout_at(cm, layout_id);
    if (l->n <= 1 || in->bytes == 0)
        return FALSE;
    in->layout = layout_id;
    in->algo = (guint8)ssim_coll_choose(l, cm->net, in->coll, in->bytes);
    in->n_steps = ssim_coll_algos[in->algo]->steps(l, cm->net, in);
    return TRUE;
}

/* Starts instance `in`: its first step after the step's latency. */
static void launch(Comm *cm, const Inst *in)
{
    guint32 id = inst_alloc(cm);
    cm->insts[id] = *in;
    const Layout *l = in->layout == SSIM_NONE ? NULL : layout_at(cm, in->layout);
    SsimTime at = ssim_time_add(ssim_engine_now(cm->engine), step_alpha(cm, &cm->insts[id], l, 0));
    ssim_engine_schedule(cm->engine, at, cm->ev_step, id, 0);
}

static gint cmp_ranks(const guint32 *a, const guint32 *b, guint n)
{
    return memcmp(a, b, n * sizeof *a);
}

/*
 * The layouts of the copies of graph group `g` (built): each copy's layout id into copy_layout,
 * and a layout appended to copy_layouts for each copy whose members (as a set) are neither the
 * group's nor a lower copy's; the others share that layout.
 */
static void build_copy_layouts(Comm *cm, guint32 g)
{
    guint n = cm->layouts[g].n;
    guint32 *layout_of = cm->copy_layout + (gsize)g * cm->map.n_copies;
    cm->copy_layouts_first[g] = cm->copy_layouts->len;
    cm->copy_layouts_n[g] = 0;
    for (guint c = 0; c < cm->map.n_copies; c++)
        layout_of[c] = g;
    if (n <= 1)
        return;
    g_autofree guint32 *ranks = g_new(guint32, n);
    g_autofree guint32 *sorted = g_new(guint32, n);
    guint32 first = cm->n_groups + cm->copy_layouts_first[g];
    for (guint c = 1; c < cm->map.n_copies; c++) {
        for (guint i = 0; i < n; i++) {
            ranks[i] = cm->map.copy_gpu(cm->map.data, cm->layouts[g].order[i], c);
            g_return_if_fail(ranks[i] < ssim_net_n_gpus(cm->net));
        }
        memcpy(sorted, ranks, n * sizeof *ranks);
        qsort(sorted, n, sizeof *sorted, ssim_cmp_u32);
        gboolean same = cmp_ranks(sorted, cm->layouts[g].sorted, n) == 0;
        for (guint k = 0; !same && k < cm->copy_layouts_n[g]; k++)
            if (cmp_ranks(sorted, layout_at(cm, first + k)->sorted, n) == 0) {
                same = TRUE;
                layout_of[c] = first + k;
            }
        if (same)
            continue;
        Layout layout = {0};
        ssim_coll_layout_build(&layout, cm->net, ranks, n);
        g_array_append_val(cm->copy_layouts, layout);
        layout_of[c] = first + cm->copy_layouts_n[g];
        cm->copy_layouts_n[g]++;
    }
}

/* Starts, as load only, the copies of the representative's instance `in` (SsimNetMapping): one
 * per copy of a transfer's GPUs, one per distinct copy layout of a collective's group. */
static void launch_copies(Comm *cm, const Inst *in)
{
    Inst load = *in;
    load.load_only = 1;
    if (in->algo == ALGO_P2P) {
        for (guint c = 1; c < cm->map.n_copies; c++) {
            load.src = cm->map.copy_gpu(cm->map.data, in->src, c);
            load.dst = cm->map.copy_gpu(cm->map.data, in->dst, c);
            g_return_if_fail(load.src < ssim_net_n_gpus(cm->net) &&
                             load.dst < ssim_net_n_gpus(cm->net));
            launch(cm, &load);
        }
        return;
    }
    guint32 g = in->layout; /* the representative runs on its group's own layout */
    if (cm->copy_layouts_first[g] == SSIM_NONE)
        build_copy_layouts(cm, g);
    for (guint32 k = 0; k < cm->copy_layouts_n[g]; k++) {
        load.chunks = 0;
        if (setup_collective(cm, &load, cm->n_groups + cm->copy_layouts_first[g] + k))
            launch(cm, &load);
    }
}

/*
 * Starts copy `copy` of `match` (copy 0: the graph's own GPUs), adding its time alone to `slot`
 * of `uncontended`.  A replicated run's `instance` is finished on its own; otherwise
 * (SSIM_NONE) the match's copies are started as load only with it.
 */
static SsimTime start_copy(Comm *cm, guint32 match, guint32 instance, guint copy)
{
    const guint32 *mfirst, *mops, *expected;
    ssim_graph_match_csr(cm->graph, &mfirst, &mops, &expected);
    const SsimOp *op = ssim_graph_op(cm->graph, mops[mfirst[match]]);
    Inst in = {.match = match,
               .instance = instance,
               .coll = op->coll,
               .layout = SSIM_NONE,
               .bytes = op->bytes};
    gboolean copied = cm->map.n_copies > 1 && cm->map.copy_gpu != NULL;
    g_return_val_if_fail(copy == 0 || (copied && copy < cm->map.n_copies), 0);
    ssim_net_count_collective(cm->net);
    if (op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV) {
        in.algo = ALGO_P2P;
        in.src = gpu_of(cm, op->kind == SSIM_OP_SEND ? op->rank : op->peer);
        in.dst = gpu_of(cm, op->kind == SSIM_OP_SEND ? op->peer : op->rank);
        if (copy > 0) {
            in.src = cm->map.copy_gpu(cm->map.data, in.src, copy);
            in.dst = cm->map.copy_gpu(cm->map.data, in.dst, copy);
            g_return_val_if_fail(
                in.src < ssim_net_n_gpus(cm->net) && in.dst < ssim_net_n_gpus(cm->net), 0);
        }
        in.n_steps = ssim_coll_algos[ALGO_P2P]->steps(NULL, cm->net, &in);
    } else if (op->kind == SSIM_OP_COLLECTIVE && op->group < cm->n_groups) {
        Layout *l = &cm->layouts[op->group];
        if (!l->built) {
            guint n = 0;
            const guint32 *ranks = cm->map.group_members != NULL
                                       ? cm->map.group_members(cm->map.data, op->group, &n)
                                       : NULL;
            if (ranks == NULL) {
                ranks = ssim_graph_group_ranks(cm->graph, op->group, &n);
                g_array_set_size(cm->scratch, n);
                for (guint i = 0; i < n; i++)
                    g_array_index(cm->scratch, guint32, i) = gpu_of(cm, ranks[i]);
                ranks = (const guint32 *)(void *)cm->scratch->data;
            }
            for (guint i = 0; i < n; i++)
                g_return_val_if_fail(ranks[i] < ssim_net_n_gpus(cm->net), 0);
            ssim_coll_layout_build(l, cm->net, ranks, n);
        }
        guint32 layout = op->group;
        if (copy > 0) {
            if (cm->copy_layouts_first[op->group] == SSIM_NONE)
                build_copy_layouts(cm, op->group);
            layout = cm->copy_layout[(gsize)op->group * cm->map.n_copies + copy];
        }
        if (!setup_collective(cm, &in, layout))
            return 0;
    } else {
        return 0; /* barriers and the like carry no data */
    }
    in.scale = 1.0;
    const Layout *l = in.layout == SSIM_NONE ? NULL : layout_at(cm, in.layout);
    guint32 slot = instance == SSIM_NONE ? match : instance;
    if (slot >= cm->uncontended->len)
        g_array_set_size(cm->uncontended, MAX(slot + 1, 2 * cm->uncontended->len));
    /* Added: a run that repeats its communication (SsimRunConfig.comm_repeat) starts a match
     * that many times, and its time alone is that many times one run's. */
    g_array_index(cm->uncontended, SsimTime, slot) += prepare_inst(cm, &in, l, mops[mfirst[match]]);
    launch(cm, &in);
    /* The copies carry the representative's calibration (they are the same collective). */
    if (instance == SSIM_NONE && copied)
        launch_copies(cm, &in);
    return -1;
}

static SsimTime comm_start(gpointer data, SsimRun *run, guint32 match)
{
    (void)run;
    return start_copy(data, match, SSIM_NONE, 0);
}

static SsimTime comm_start_copy(gpointer data, SsimRun *run, guint32 match, guint32 instance,
                                guint copy)
{
    (void)run;
    return start_copy(data, match, instance, copy);
}

SsimCommModel ssim_net_comm_model(SsimNet *net)
{
    gpointer *slot = ssim_net_comm_slot(net, comm_free);
    if (*slot == NULL) {
        Comm *cm = g_new0(Comm, 1);
        cm->net = net;
        cm->free_head = SSIM_NONE;
        cm->scratch = g_array_new(FALSE, FALSE, sizeof(guint32));
        cm->alone = g_hash_table_new_full(alone_hash, alone_equal, g_free, g_free);
        cm->uncontended = g_array_new(FALSE, TRUE, sizeof(SsimTime));
        cm->copy_layouts = g_array_new(FALSE, FALSE, sizeof(Layout));
        *slot = cm;
    }
    return (SsimCommModel){.data = *slot,
                           .attach = comm_attach,
                           .start = comm_start,
                           .detach = comm_detach,
                           .start_copy = comm_start_copy};
}

void ssim_net_set_mapping(SsimNet *net, const SsimNetMapping *mapping)
{
    g_return_if_fail(net != NULL);
    ssim_net_comm_model(net);
    GDestroyNotify unused = comm_free;
    Comm *cm = *ssim_net_comm_slot(net, unused);
    cm->map = mapping != NULL ? *mapping : (SsimNetMapping){0};
}

void ssim_net_set_calibration(SsimNet *net, const SsimNetCalibration *calibration)
{
    g_return_if_fail(net != NULL);
    ssim_net_comm_model(net);
    Comm *cm = *ssim_net_comm_slot(net, comm_free);
    cm->cal = calibration != NULL ? *calibration : (SsimNetCalibration){0};
}

const SsimTime *ssim_net_uncontended(SsimNet *net, guint *n_matches)
{
    g_return_val_if_fail(net != NULL, NULL);
    ssim_net_comm_model(net);
    Comm *cm = *ssim_net_comm_slot(net, comm_free);
    if (n_matches != NULL)
        *n_matches = cm->uncontended->len;
    return cm->uncontended->len > 0 ? (const SsimTime *)(void *)cm->uncontended->data : NULL;
}
