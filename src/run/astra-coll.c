/*
 * Collectives of the ASTRA-sim-compatible replay: how one rank turns a collective into chunk
 * streams, how the streams share a dimension's queue, and the packet protocol of ASTRA-sim's
 * Ring, AllToAll ("direct") and HalvingDoubling algorithms; their messages go through
 * astra-net.c.  Each function names the ASTRA-sim code it follows (astra-sim/system/...),
 * statement for statement where the order of effects matters: which stream a queue starts next,
 * and when, decides the timeline.
 *
 * Invariants: a stream is in exactly one queue (its current phase's) from its first phase until
 * it dies; a queue's first `running` streams are the initialized ones.
 */
#include "src/run/astra-private.h"

#include <math.h>

/* ---- streams ---- */

static Stream *stream_at(Replay *R, guint32 s)
{
    return g_ptr_array_index(R->streams, s);
}

static const Phase *cur_phase(Replay *R, const Stream *s)
{
    return &g_array_index(R->phases, Phase, s->first_phase + (guint)s->cur);
}

static guint32 ring_next(const Phase *p, guint32 k, gboolean clockwise)
{
    return clockwise ? (k + 1) % p->n : (k + p->n - 1) % p->n;
}

/* HalvingDoubling's peer: rank_offset steps from this rank, clockwise when its index over
 * the offset is even (specify_direction); it sends to and receives from that rank. */
static void hd_peer(Stream *s, const Phase *p)
{
    gboolean cw = s->hd_offset == 0 || (p->pos / (guint)s->hd_offset) % 2 == 0;
    guint32 k = p->pos;
    for (int i = 0; i < s->hd_offset; i++)
        k = ring_next(p, k, cw);
    s->curr_recv = s->curr_send = k;
}

/* The Ring (and AllToAll) constructor's state for the stream's current phase. */
static void algo_init(Stream *s, const Phase *p)
{
    gint64 n = p->n;
    s->parallel_reduce = 1;
    switch (p->type) {
    case CT_AR:
        s->stream_count = 2 * (n - 1);
        break;
    case CT_A2A:
        s->stream_count = ((n - 1) * n) / 2;
        break;
    default:
        s->stream_count = n - 1;
    }
    s->max_count = p->type == CT_A2A || p->type == CT_AG ? 0 : n - 1;
    s->remained_msg = s->remained_max = 1;
    s->free_packets = s->zero_lat = s->nonzero_lat = s->total_received = 0;
    s->toggle = FALSE;
    s->curr_recv = ring_next(p, p->pos, p->clockwise);
    s->curr_send = ring_next(p, p->pos, !p->clockwise);
    s->middle_point = (int)(n - 1);
    if (p->algo == SSIM_ASTRA_ALGO_DIRECT) {
        s->parallel_reduce = p->window < 0 ? (int)(n - 1) : (int)MIN((gint64)p->window, n - 1);
        if (p->type == CT_A2A)
            s->stream_count = n - 1;
    }
    if (p->algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING) {
        /* HalvingDoubling's constructor: log2 steps, exchanging with the rank rank_offset
         * away, the offset doubling (or halving) and the message halving (or doubling). */
        int lg = (int)log2((double)n);
        s->stream_count = p->type == CT_AR ? (gint64)(2 * log2((double)n)) : lg;
        s->max_count = p->type == CT_AG ? 0 : lg;
        s->hd_msg = p->msg_size;
        s->hd_offset = p->type == CT_AG ? (int)(n / 2) : 1;
        s->hd_mult = p->type == CT_AG ? 0.5 : 2.0;
        hd_peer(s, p);
    }
    g_array_set_size(s->packets, 0);
    s->packets_head = 0;
}

static int nonzero_latency_packets(const Stream *s, const Phase *p)
{
    if (p->algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING)
        return (int)(log2((double)p->n) - 1 * s->parallel_reduce);
    if (p->algo == SSIM_ASTRA_ALGO_DIRECT && !p->fast)
        return s->parallel_reduce;
    return (int)(p->n - 1) * s->parallel_reduce;
}

/* PacketBundle::send_to_MA / send_to_NPU through MemBus: the endpoint's delay (a group's ring
 * is "Fast": 10 ns), or with the shared bus on, the bus for every other bundle. */
void astra_bundle(Replay *R, guint32 sid, guint64 size, guint flags)
{
    const Phase *p = cur_phase(R, stream_at(R, sid));
    if (R->bus && !p->fast) {
        astra_bus_send(R, sid, size, flags);
        return;
    }
    SsimTime delay = p->fast ? 10 : R->cfg.endpoint_delay;
    astra_sys_at(R, stream_at(R, sid)->rank, delay, SYS_BUNDLE, sid,
                 size << 1 | (flags & BUNDLE_PROCESS ? 1 : 0));
}

/* Ring::process_max_count (AllToAll's also turns to the next peer). */
static void process_max_count(Replay *R, guint32 sid, Stream *s, const Phase *p)
{
    if (s->remained_max > 0)
        s->remained_max--;
    if (s->remained_max == 0) {
        s->max_count--;
        astra_bundle(R, sid, p->algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING ? s->hd_msg : p->msg_size,
                     s->bundle);
        s->remained_max = 1;
        if (p->algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING) {
            s->hd_offset = (int)(s->hd_offset * s->hd_mult);
            s->hd_msg = (guint64)((double)s->hd_msg / s->hd_mult);
            if (s->hd_offset == (int)p->n && p->type == CT_AR) {
                s->hd_mult = 0.5;
                s->hd_offset = (int)(s->hd_offset * s->hd_mult);
                s->hd_msg = (guint64)((double)s->hd_msg / s->hd_mult);
            }
            hd_peer(s, p);
        } else if (p->algo == SSIM_ASTRA_ALGO_DIRECT) {
            s->curr_recv = ring_next(p, s->curr_recv, p->clockwise);
            if (s->curr_recv == p->pos)
                s->curr_recv = ring_next(p, s->curr_recv, p->clockwise);
            s->curr_send = ring_next(p, s->curr_send, !p->clockwise);
            if (s->curr_send == p->pos)
                s->curr_send = ring_next(p, s->curr_send, !p->clockwise);
        }
    }
}

/* Ring::insert_packet. */
static void insert_packet(Replay *R, guint32 sid, Stream *s, const Phase *p)
{
    if (s->zero_lat == 0 && s->nonzero_lat == 0) {
        s->zero_lat = s->parallel_reduce;
        s->nonzero_lat = nonzero_latency_packets(s, p);
        s->toggle = !s->toggle;
    }
    Packet pkt = {s->curr_recv, s->curr_send,
                  p->algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING ? s->hd_msg : p->msg_size};
    g_array_append_val(s->packets, pkt);
    if (s->zero_lat > 0) {
        s->bundle = BUNDLE_TO_MA;
        process_max_count(R, sid, s, p);
        s->zero_lat--;
        return;
    }
    g_assert(s->nonzero_lat > 0);
    s->bundle = (p->type == CT_RS || (p->type == CT_AR && s->toggle) ? BUNDLE_PROCESS : 0) |
                (s->nonzero_lat > s->parallel_reduce ? BUNDLE_SEND_BACK : 0);
    process_max_count(R, sid, s, p);
    s->nonzero_lat--;
}

/* Ring::ready: sends the front packet and posts its receive. */
static gboolean ready(Replay *R, guint32 sid, Stream *s, const Phase *p)
{
    if (s->packets->len == s->packets_head || s->stream_count == 0 || s->free_packets == 0)
        return FALSE;
    Packet pkt = g_array_index(s->packets, Packet, s->packets_head);
    guint32 dest = astra_phase_member(p, pkt.dest), src = astra_phase_member(p, pkt.src);
    MatchKey out = {.tag = s->tag, .size = pkt.size, .src = s->rank, .dst = dest, .coll = 1};
    astra_net_send(R, &out, (Callback){CB_NONE, 0, 0});
    MatchKey in = {.tag = s->tag, .size = pkt.size, .src = src, .dst = s->rank, .coll = 1};
    astra_net_recv(R, &in, (Callback){CB_STREAM, sid, 0});
    /* Ring::reduce -> process_stream_count. */
    if (s->remained_msg > 0)
        s->remained_msg--;
    if (s->remained_msg == 0 && s->stream_count > 0) {
        s->stream_count--;
        if (s->stream_count > 0)
            s->remained_msg = 1;
    }
    s->packets_head++;
    if (s->packets_head == s->packets->len) {
        g_array_set_size(s->packets, 0);
        s->packets_head = 0;
    }
    s->free_packets--;
    return TRUE;
}

/* Ring::iteratable: the phase is over once every message is out and every bundle is back. */
static gboolean iteratable(Replay *R, guint32 sid, Stream *s)
{
    if (s->stream_count == 0 && s->free_packets == s->parallel_reduce) {
        astra_stream_proceed(R, sid);
        return FALSE;
    }
    return TRUE;
}

/* StreamBaseline::call -> Ring::run / AllToAll::run (General). */
static void stream_general(Replay *R, guint32 sid)
{
    Stream *s = stream_at(R, sid);
    const Phase *p = cur_phase(R, s);
    s->free_packets++;
    if (p->algo == SSIM_ASTRA_ALGO_DIRECT && p->type == CT_AR &&
        s->stream_count <= s->middle_point) {
        if (s->total_received < s->middle_point)
            return;
        for (int i = 0; i < s->parallel_reduce; i++)
            ready(R, sid, s, p);
        iteratable(R, sid, s);
        return;
    }
    ready(R, sid, s, p);
    iteratable(R, sid, s);
}

void astra_on_bundle(Replay *R, guint32 sid, guint64 bundle)
{
    gboolean needs_processing = bundle & 1;
    Stream *s = stream_at(R, sid);
    if (s->dead)
        return;
    if (needs_processing) {
        /* PacketBundle::call: write, read and read of the message at local memory bandwidth. */
        double bw = R->cfg.local_mem_bw_gbps * 1000000000.0;
        double size = (double)(bundle >> 1);
        SsimTime one = astra_ns(size / bw * 1e9);
        astra_sys_at(R, s->rank, one <= ASTRA_HORIZON / 3 ? 3 * one : G_MAXINT64, SYS_BUNDLE, sid,
                     bundle & ~(guint64)1);
        return;
    }
    if (cur_phase(R, s)->algo == SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE)
        astra_dbt_run(R, sid, DBT_GENERAL);
    else
        stream_general(R, sid);
}

/* StreamBaseline::init. */
static void stream_init(Replay *R, guint32 sid)
{
    Stream *s = stream_at(R, sid);
    s->initialized = TRUE;
    const Phase *p = cur_phase(R, s);
    if (p->algo == ALGO_CUSTOM) { /* CustomAlgorithm::run */
        astra_custom_start(R, sid, p->set, p->pos);
        return;
    }
    if (p->algo == SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE) {
        astra_dbt_run(R, sid, DBT_INIT);
        return;
    }
    for (int i = 0; i < s->parallel_reduce; i++)
        insert_packet(R, sid, s, p);
}

static guint32 queue_get(const Queue *q, guint i)
{
    return GPOINTER_TO_UINT(g_ptr_array_index(q->list, i)) - 1;
}

/* SchedulerUnit::notify_stream_added's loop: start waiting streams while there is room. */
static void queue_fill(Replay *R, Queue *q)
{
    for (guint i = q->running; i < q->list->len && q->running < R->queue_streams; i++) {
        stream_init(R, queue_get(q, i));
        q->running++;
    }
}

/* Sys::insert_stream, FIFO intra-dimension scheduling: after the running streams and after
 * every waiting one of no lower priority. */
static void queue_insert(Replay *R, Queue *q, guint32 sid)
{
    const Stream *s = stream_at(R, sid);
    guint i = 0;
    while (i < q->list->len) {
        const Stream *t = stream_at(R, queue_get(q, i));
        if (t->initialized || t->priority >= s->priority)
            i++;
        else
            break;
    }
    g_ptr_array_insert(q->list, (gint)i, GUINT_TO_POINTER(sid + 1));
}

static void queue_remove(Queue *q, guint32 sid)
{
    g_ptr_array_remove(q->list, GUINT_TO_POINTER(sid + 1));
}

/* Sys::proceed_to_next_vnet_baseline: the stream leaves its phase for the next, or dies. */
void astra_stream_proceed(Replay *R, guint32 sid)
{
    Stream *s = stream_at(R, sid);
    Rank *rk = &R->ranks[s->rank];
    Queue *prev = s->cur >= 0 ? &rk->queues[cur_phase(R, s)->queue] : NULL;
    gboolean last = s->cur + 1 == (gint32)s->n_phases;
    if (last) {
        /* DataSet::notify_stream_finished, which may run the workload's callback and so issue
         * new collectives while this stream still holds its place. */
        if (--R->chunks_left[s->op] == 0)
            astra_op_finished(R, s->op);
        s = stream_at(R, sid);
    }
    if (prev)
        queue_remove(prev, sid);
    if (last) {
        s->dead = TRUE;
        g_clear_pointer(&s->packets, g_array_unref);
        if (prev) {
            prev->running--;
            queue_fill(R, prev);
        }
        return;
    }
    s->cur++;
    s->initialized = FALSE;
    const Phase *p = cur_phase(R, s);
    s->dbt_state = s->dbt_reductions = 0;
    if (p->algo != ALGO_CUSTOM && p->algo != SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE)
        algo_init(s, p);
    Queue *q = &rk->queues[p->queue];
    queue_insert(R, q, sid);
    if (prev) {
        prev->running--;
        queue_fill(R, prev);
    }
    queue_fill(R, q); /* notify_stream_added */
}

/* ---- collectives ---- */

/* The queue of dimension `d` that `rank`'s next phase there takes, and its ring's direction. */
static guint32 take_queue(Replay *R, guint32 rank, guint d, int how, gboolean *clockwise)
{
    guint32 n = R->cfg.queues_per_dim;
    guint32 *next = &R->ranks[rank].next_queue[d][how];
    guint32 k = *next;
    switch (how) {
    case QUEUE_NEXT:
        *clockwise = !(n > 1 && k >= n / 2);
        if (++*next >= n)
            *next = 0;
        break;
    case QUEUE_FIRST:
        *clockwise = TRUE;
        if (++*next >= n / 2)
            *next = 0;
        break;
    default:
        *clockwise = FALSE;
        if (++*next >= n)
            *next = n / 2;
    }
    return d * n + k;
}

/* Appends a phase of `type` on dimension `d` (a group's ring: 0) of `rank`, taking the queue
 * `how` allocates there. */
static void add_phase(Replay *R, guint32 rank, ComType type, SsimAstraImpl impl, guint d, int how,
                      guint64 size, guint64 *final_size, const Phase *ring)
{
    Phase p = *ring;
    p.type = (guint8)type;
    p.algo = (guint8)impl.algo;
    p.window = impl.window;
    gboolean clockwise;
    p.queue = take_queue(R, rank, d, how, &clockwise);
    p.clockwise = (guint8)clockwise;
    gboolean hd = impl.algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING;
    if (impl.algo == SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE) {
        /* DoubleBinaryTreeAllReduce on the dimension's next tree (a group's ring never takes a
         * tree): a whole all-reduce of the chunk, whatever the type. */
        astra_dbt_phase(R, rank, d, &p);
        p.msg_size = *final_size = size;
        g_array_append_val(R->phases, p);
        return;
    }
    switch (type) {
    case CT_AR:
        p.msg_size = hd ? size / 2 : size / p.n;
        *final_size = size;
        break;
    case CT_AG:
        p.msg_size = size;
        *final_size = size * p.n;
        break;
    case CT_RS:
        p.msg_size = hd ? size / 2 : size / p.n;
        *final_size = size / p.n;
        break;
    default:
        p.msg_size = size / p.n;
        *final_size = size;
    }
    g_array_append_val(R->phases, p);
}

/* The ring of dimension `d` through `rank` (GeneralComplexTopology's RingTopology). */
static Phase dim_ring(const Replay *R, guint32 rank, guint d)
{
    Phase p = {0};
    p.n = R->cfg.npus[d];
    p.offset = R->npus_below[d];
    p.pos = (rank / p.offset) % p.n;
    p.base = rank - p.pos * p.offset;
    return p;
}

/* How many dimensions a collective of type `t` on every rank runs through: one per
 * implementation, up to the first one* implementation, which spans every NPU. */
static guint world_dims(const SsimAstraConfig *c, int t)
{
    for (guint d = 0; d < c->n_impl[t]; d++)
        if (c->impl[t][d].one)
            return d + 1;
    return c->n_impl[t];
}

/* The ring of world dimension `d` for the implementations of `t`: an one* implementation is one
 * ring over every NPU (GeneralComplexTopology stops there). */
static Phase world_ring(const Replay *R, guint32 rank, int t, guint d)
{
    if (!R->cfg.impl[t][d].one)
        return dim_ring(R, rank, d);
    Phase p = {0};
    p.n = R->n_ranks;
    p.offset = 1;
    p.pos = rank;
    return p;
}

/* Sys::generate_collective's phases of one chunk, appended to R->phases; how many.  A
 * dimension d takes part when bit d of `involved` is set (dimensions_involved; see
 * involved_dims()) and it has more than one NPU. */
static guint chunk_phases(Replay *R, guint32 rank, ComType type, const Phase *group_ring,
                          guint32 involved, guint64 size)
{
    const SsimAstraConfig *c = &R->cfg;
    guint before = R->phases->len;
    guint64 remain = size;
    if (group_ring) {
        /* CommunicatorGroup::get_collective_plan: one dimension, a ring unless one
         * implementation is given. */
        SsimAstraImpl impl = c->impl[type][0];
        if (c->n_impl[type] > 1)
            impl = (SsimAstraImpl){SSIM_ASTRA_ALGO_RING, -1, FALSE};
        if (group_ring->n <= 1)
            return 0;
        /* The plan's one dimension takes the first dimension's queues: in turn, or from the
         * first half for a localBWAware all-reduce (its turning point). */
        int how = type != CT_AR || !c->local_bw_aware ? QUEUE_NEXT : QUEUE_FIRST;
        add_phase(R, rank, type, impl, 0, how, remain, &remain, group_ring);
        return R->phases->len - before;
    }
    guint dims = world_dims(c, type);
    guint map[SSIM_ASTRA_MAX_DIMS];
    for (guint i = 0; i < dims; i++)
        map[i] = type == CT_AG ? dims - 1 - i : i;
    if (type != CT_AR || !c->local_bw_aware) {
        for (guint i = 0; i < dims; i++) {
            Phase ring = world_ring(R, rank, type, map[i]);
            if (ring.n == 1 || !(involved >> map[i] & 1))
                continue;
            add_phase(R, rank, type, c->impl[type][map[i]], map[i], QUEUE_NEXT, remain, &remain,
                      &ring);
        }
        return R->phases->len - before;
    }
    /* localBWAware all-reduce: reduce-scatter up to the last dimension that has more than one
     * NPU, all-reduce there, all-gather back down. */
    int last = -1;
    for (guint d = 0; d < dims; d++)
        if (world_ring(R, rank, CT_AR, d).n > 1 && (involved >> d & 1))
            last = (int)d;
    if (last < 0)
        return 0;
    for (int d = 0; d < last; d++) {
        Phase ring = world_ring(R, rank, CT_AR, (guint)d);
        if (ring.n > 1 && (involved >> d & 1))
            add_phase(R, rank, CT_RS, c->impl[CT_AR][d], (guint)d, QUEUE_FIRST, remain, &remain,
                      &ring);
    }
    Phase top = world_ring(R, rank, CT_AR, (guint)last);
    add_phase(R, rank, CT_AR, c->impl[CT_AR][last], (guint)last, QUEUE_FIRST, remain, &remain,
              &top);
    for (int d = last - 1; d >= 0; d--) {
        Phase ring = world_ring(R, rank, CT_AR, (guint)d);
        if (ring.n > 1 && (involved >> d & 1))
            add_phase(R, rank, CT_AG, c->impl[CT_AR][d], (guint)d, QUEUE_LAST, remain, &remain,
                      &ring);
    }
    return R->phases->len - before;
}

/* The dimensions collective `op` of `type` runs on, as bits (dimensions_involved): for a
 * collective without a process group, its node's involved_dim (four dimensions without one);
 * for one on a group, every dimension (CommunicatorGroup::get_collective_plan).  ASTRA-sim reads
 * the list at each dimension of more than one NPU (and, for a localBWAware all-reduce, at 0):
 * one past its end is an error here, as there it reads beyond the vector. */
static gboolean involved_dims(const Replay *R, guint32 rank, guint32 op, ComType type, guint32 *out,
                              GError **error)
{
    const SsimAstraConfig *c = &R->cfg;
    *out = G_MAXUINT32;
    if (R->ops[op].group != R->world)
        return TRUE;
    guint32 n = R->colls ? R->colls[op].n_dims : 4;
    *out = R->colls ? R->colls[op].dims : 0xf;
    guint dims = world_dims(c, type);
    gboolean bw_aware = type == CT_AR && c->local_bw_aware;
    for (guint d = 0; d < dims; d++)
        if (d >= n && (world_ring(R, rank, type, d).n > 1 || (d == 0 && bw_aware))) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "--semantics astra: rank %u: node %" G_GUINT64_FORMAT
                        ": a collective without a process group runs on %u network "
                        "dimension%s, and its involved_dim lists %u (four without the "
                        "attribute): ASTRA-sim reads the list at dimension %u, beyond its end "
                        "(undefined); give involved_dim a value for every dimension",
                        rank, R->node_ids[op], dims, dims == 1 ? "" : "s", n, d);
            return FALSE;
        }
    return TRUE;
}

/* A StreamBaseline of collective `op` on `rank` over phases [first, first + n): its index. */
static guint32 stream_new(Replay *R, guint32 rank, guint32 op, guint32 tag, gint64 priority,
                          guint first, guint n)
{
    Stream *s = g_new0(Stream, 1);
    s->rank = rank;
    s->op = op;
    s->tag = tag;
    s->priority = priority;
    s->first_phase = first;
    s->n_phases = n;
    s->cur = -1;
    s->packets = g_array_new(FALSE, FALSE, sizeof(Packet));
    g_ptr_array_add(R->streams, s);
    return R->streams->len - 1;
}

/* Sys::generate_collective's stream id, which tags the stream's messages: a collective without a
 * communicator group (the loader's "world": no pg_name, "" or "0") takes the rank's count of
 * streams made, which every stream advances; one on a group takes the group's count on the
 * rank.  Ranks that issue collectives of several groups in different orders thus give one world
 * collective different ids, and its messages never match: ASTRA-sim never ends it. */
static guint32 next_stream_id(Replay *R, guint32 rank, guint32 group)
{
    guint32 own = R->ranks[rank].num_streams++;
    return group == R->world ? own : R->group_streams[(gsize)group * R->n_ranks + rank]++;
}

/* CollectiveImplLookup::get_collective_impl for collective `op` of `type` on `rank`: the index
 * of its custom set in R->custom (the per-node entry of its node id, cast to an int as ASTRA-sim
 * casts it, before the type's), or -1 for the native implementations.  On a process group
 * (a group of every rank too) CommunicatorGroup::get_collective_plan makes the plan once per
 * type on each rank and keeps it, so the first collective of the type on the group decides
 * for the later ones, whatever their node ids; a collective without a group looks up each time. */
static int impl_of(Replay *R, guint32 rank, guint32 op, ComType type)
{
    const SsimAstraConfig *c = &R->cfg;
    guint32 group = R->ops[op].group;
    gpointer key = NULL;
    if (group != R->world && c->n_per_node > 0) {
        if (!R->group_impl)
            R->group_impl = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        gint64 k = ((gint64)group * R->n_ranks + rank) * SSIM_ASTRA_N_COLL + type;
        gpointer v;
        if (g_hash_table_lookup_extended(R->group_impl, &k, NULL, &v))
            return GPOINTER_TO_INT(v) - 1;
        key = g_memdup2(&k, sizeof k);
    }
    int found = R->custom[type].graph ? (int)type : -1;
    gpointer entry =
        c->n_per_node > 0
            ? g_hash_table_lookup(R->per_node, GINT_TO_POINTER((gint32)(guint32)R->node_ids[op]))
            : NULL;
    if (entry)
        found = GPOINTER_TO_INT(entry) - 1;
    if (key)
        g_hash_table_insert(R->group_impl, key, GINT_TO_POINTER(found + 1));
    return found;
}

/* Sys::generate_collective's custom branch: one stream of one phase on the rank's first queue,
 * whose algorithm replays the rank's position in custom set `set_index`. */
static gboolean custom_issue(Replay *R, guint32 rank, guint32 op, ComType type, int set_index,
                             const guint32 *members, guint n_members, gint64 pri, GError **error)
{
    const CustomSet *set = &R->custom[set_index];
    if (set->n_pos != n_members) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: a collective of %u ranks, and its custom "
                    "implementation %s has %u positions (ASTRA-sim reads position k's trace "
                    "PREFIX.k.et for the k-th rank of the group)",
                    rank, n_members, set->path, set->n_pos);
        return FALSE;
    }
    Phase p = {0};
    p.type = (guint8)type;
    p.set = (guint32)set_index;
    p.algo = ALGO_CUSTOM;
    p.n = n_members;
    /* CommunicatorGroup: the rank's position is its index among the sorted members, and the
     * peer at position k is the group's k-th member in file order.  (Without a process group
     * ASTRA-sim uses the rank and the peer's number as they are: the same, as the loader's group
     * of every rank is 0, 1, ... in order.) */
    p.members = members;
    for (guint i = 0; i < n_members; i++)
        p.pos += members[i] < rank;
    g_array_append_val(R->phases, p);
    guint32 sid = stream_new(R, rank, op, next_stream_id(R, rank, R->ops[op].group), pri,
                             R->phases->len - 1, 1);
    R->stats.n_collectives++;
    R->stats.n_custom++;
    R->stats.n_chunks++;
    R->chunks_left[op] = 1;
    astra_stream_proceed(R, sid);
    return TRUE;
}

gboolean astra_coll_issue(Replay *R, guint32 rank, guint32 op, GError **error)
{
    const SsimOp *o = &R->ops[op];
    const SsimAstraConfig *c = &R->cfg;
    ComType type;
    switch (o->coll) {
    case SSIM_COLL_ALLREDUCE:
        type = CT_AR;
        break;
    case SSIM_COLL_ALLGATHER:
        type = CT_AG;
        break;
    case SSIM_COLL_REDUCESCATTER:
        type = CT_RS;
        break;
    case SSIM_COLL_ALLTOALL:
        type = CT_A2A;
        break;
    case SSIM_COLL_BROADCAST:
        /* ASTRA-sim replays a broadcast's trace duration, or 1 ns without one. */
        R->stats.n_broadcast++;
        astra_sys_at(R, rank, MAX(o->duration, 1), SYS_OP_DONE, op, 0);
        return TRUE;
    default:
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: a %s collective, which ASTRA-sim does not "
                    "implement",
                    rank, ssim_coll_kind_name((SsimCollKind)o->coll));
        return FALSE;
    }
    if (type == CT_A2A)
        for (guint d = 0; d < c->n_impl[CT_A2A]; d++)
            if (c->impl[CT_A2A][d].algo == SSIM_ASTRA_ALGO_HALVING_DOUBLING) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "--semantics astra: rank %u: an all-to-all by halvingDoubling, "
                            "which ASTRA-sim does not implement (it exits)",
                            rank);
                return FALSE;
            }
    guint n_members;
    const guint32 *members = ssim_graph_group_ranks(R->graph, o->group, &n_members);
    Rank *rk = &R->ranks[rank];
    /* Sys::get_priority; comm_priority is read as a uint32 and passed on as an int. */
    gint64 pri = c->policy == SSIM_ASTRA_LIFO   ? rk->priority_counter++
                 : c->policy == SSIM_ASTRA_FIFO ? rk->priority_counter--
                 : R->colls                     ? (gint32)R->colls[op].priority
                                                : 0;
    int set = impl_of(R, rank, op, type);
    if (set >= 0)
        return custom_issue(R, rank, op, type, set, members, n_members, pri, error);
    if (c->n_impl[type] == 0) {
        /* CollectiveImplLookup::get_collective_impl throws. */
        g_set_error(
            error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
            "--semantics astra: rank %u: a collective of type %s, and the system file gives no "
            "%s-implementation (ASTRA-sim stops: \"No collective implementation "
            "found\")",
            rank, astra_coll_names[type], astra_coll_names[type]);
        return FALSE;
    }
    if (type == CT_AR && c->coll_opt_unset) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: an all-reduce, which ASTRA-sim's native "
                    "implementations split by collective-optimization, and the system file leaves "
                    "it unset",
                    rank);
        return FALSE;
    }
    Phase group_ring = {0};
    gboolean whole = n_members == R->n_ranks;
    if (!whole && c->n_impl[type] == 1 &&
        c->impl[type][0].algo == SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE) {
        /* CommunicatorGroup::get_collective_plan gives the group a ring topology, which
         * DoubleBinaryTreeAllReduce takes for a tree. */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: an all-reduce on a process group of %u ranks "
                    "(fewer than the system's %u) by doubleBinaryTree, where ASTRA-sim takes the "
                    "group's ring for a tree (undefined); list a second implementation (the group "
                    "then runs a ring) or group every rank",
                    rank, n_members, R->n_ranks);
        return FALSE;
    }
    if (!whole) {
        group_ring.n = n_members;
        group_ring.members = members;
        group_ring.fast = 1; /* RingTopology::Dimension::Local */
        for (guint i = 0; i < n_members; i++)
            if (members[i] == rank)
                group_ring.pos = i;
    }
    guint32 involved;
    if (!involved_dims(R, rank, op, type, &involved, error))
        return FALSE;
    /* Sys::determine_chunk_size. */
    guint64 size = o->bytes, chunk = size / c->splits;
    if (type != CT_AG && (guint64)R->n_ranks > chunk) {
        chunk = R->n_ranks;
        size = c->splits * chunk;
    }
    if (chunk == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: an all-gather of %" G_GUINT64_FORMAT
                    " bytes splits into empty chunks (preferred-dataset-splits %u)",
                    rank, o->bytes, c->splits);
        return FALSE;
    }
    R->stats.n_collectives++;
    guint count = 0;
    GArray *made = g_array_new(FALSE, FALSE, sizeof(guint32));
    while (size > 0) {
        size -= MIN(chunk, size);
        guint first = R->phases->len;
        guint n = chunk_phases(R, rank, type, whole ? NULL : &group_ring, involved, chunk);
        if (n == 0)
            break;
        guint32 sid = stream_new(R, rank, op, next_stream_id(R, rank, o->group), pri, first, n);
        g_array_append_val(made, sid);
        count++;
    }
    R->stats.n_chunks += count;
    if (count == 0) {
        /* Sys::generate_collective leaves the dataset without a stream, which never ends. */
        g_array_unref(made);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: rank %u: a collective of type %s over %u rank%s, which has "
                    "nothing to move: "
                    "ASTRA-sim makes it no stream and never finishes it",
                    rank, astra_coll_names[type], whole ? R->n_ranks : n_members,
                    (whole ? R->n_ranks : n_members) == 1 ? "" : "s");
        return FALSE;
    }
    R->chunks_left[op] = count;
    /* Each stream enters the ready list and is scheduled at once (the scheduler's thresholds
     * are unbounded): proceed to its first phase. */
    for (guint i = 0; i < made->len; i++)
        astra_stream_proceed(R, g_array_index(made, guint32, i));
    g_array_unref(made);
    return TRUE;
}

/* StreamBaseline::consume -> run(PacketReceived): a step's message has arrived. */
void astra_coll_received(Replay *R, guint32 sid)
{
    Stream *s = stream_at(R, sid);
    if (s->dead)
        return;
    if (cur_phase(R, s)->algo == SSIM_ASTRA_ALGO_DOUBLE_BINARY_TREE) {
        astra_dbt_run(R, sid, DBT_RECEIVED);
        return;
    }
    s->total_received++;
    insert_packet(R, sid, s, cur_phase(R, s));
}

void astra_coll_clear(Replay *R)
{
    if (R->streams) {
        for (guint i = 0; i < R->streams->len; i++) {
            Stream *s = g_ptr_array_index(R->streams, i);
            if (s->packets)
                g_array_unref(s->packets);
            g_free(s);
        }
        g_ptr_array_unref(R->streams);
    }
}
