/*
 * Private to the ASTRA-sim-compatible replay (src/run/astra*.c): the replay's state, shared by
 * the issue rules (astra-replay.c) and the collective streams and their packet protocol
 * (astra-coll.c).  The rules themselves are at the top of include/shiftsim/astra.h.
 *
 * Everything refers to everything else by index: ops by graph index, streams by their index in
 * Replay.streams, messages by their index in Replay.msgs (a free list reuses them), so the arrays
 * may grow while events hold indices.
 */
#pragma once

#include <shiftsim/astra.h>
#include <shiftsim/engine.h>

#include <stddef.h>
#include <string.h>

/* Engine event types (registered in this order): the network's (CommonNetworkApi's event queue)
 * and a rank's system-layer instant. */
enum {
    EV_ARRIVE, /* a = message: a transfer reaches its destination */
    EV_RECV,   /* a = message: a receive posted after its message arrived completes */
    EV_HOP,    /* a = message: congestion-aware, it reaches the next device of its route */
    EV_FREE,   /* a = link: congestion-aware, the link can take its next message */
    EV_SYS,    /* a = rank: Sys::call_events, the rank's events of this instant (astra_sys_at) */
    EV_N
};

/* A rank's system-layer events (Sys::register_event; astra_sys_at). */
enum {
    SYS_OP_DONE,  /* a = op: a compute (or broadcast, or memory) op ends */
    SYS_BUNDLE,   /* a = stream, b = bytes << 1 | 1 when the bundle still needs its reduction */
    SYS_CUSTOM,   /* a = custom run, b = op of its trace: a compute node of a custom implementation
                     ends */
    SYS_MEM_FREE, /* a = memory unit: its transfer is over (after its op's SYS_OP_DONE) */
    SYS_BUS       /* a = a side of a rank's shared memory bus, b = its event (astra-bus.c) */
};

/* Phase.algo of a custom implementation (after SsimAstraAlgo's values). */
#define ALGO_CUSTOM SSIM_ASTRA_ALGO_N

/* Issue classes: each but CLS_FREE is one slot per rank. */
enum { CLS_COMP, CLS_CPU, CLS_COMM, CLS_FREE, CLS_N };

/* What ASTRA-sim calls the phase's ComType. */
typedef enum { CT_AR, CT_AG, CT_RS, CT_A2A } ComType;

/* One phase of a chunk: one algorithm over one ring of ranks. */
typedef struct {
    guint8 type; /* ComType */
    guint8 algo; /* SsimAstraAlgo */
    guint8 fast; /* a group's ring: the endpoint costs 10 ns, not endpoint_delay */
    guint8 clockwise;
    guint32 queue;          /* dimension x queues_per_dim + its index among the dimension's */
    guint32 n;              /* ranks in the ring */
    guint32 pos;            /* this rank's index in the ring */
    guint32 base, offset;   /* member k is base + k x offset ... */
    const guint32 *members; /* ... or members[k] (a group's ring, file order) */
    int window;
    guint8 tree; /* doubleBinaryTree: the dimension's tree (0 RootMax, 1 RootMin), */
    guint8 dim;  /* and the dimension */
    guint32 set; /* ALGO_CUSTOM: the custom set (an index of Replay.custom) */
    guint64 msg_size;
} Phase;

/* Member k of a phase's ring. */
static inline guint32 astra_phase_member(const Phase *p, guint32 k)
{
    return p->members ? p->members[k] : p->base + k * p->offset;
}

/* A message waiting to be sent: ring indices of its destination and source, and its size. */
typedef struct {
    guint32 dest, src;
    guint64 size;
} Packet;

/* A PacketBundle's flags: reduced after the endpoint (needs_processing), sent back by the shared
 * bus's receiver (send_back), made by send_to_MA (towards the memory) rather than send_to_NPU. */
enum { BUNDLE_PROCESS = 1, BUNDLE_SEND_BACK = 2, BUNDLE_TO_MA = 4 };

/* A chunk on one rank: ASTRA-sim's StreamBaseline with its current algorithm's state. */
typedef struct {
    guint32 rank;
    guint32 op; /* the collective op (its DataSet) */
    guint32 tag;
    gint64 priority;
    guint32 first_phase, n_phases; /* in Replay.phases */
    gint32 cur;                    /* the current phase, -1 before the first */
    gboolean initialized, dead;
    /* Ring / AllToAll state (Ring.cc's fields). */
    gint64 stream_count, max_count;
    int free_packets, parallel_reduce, zero_lat, nonzero_lat;
    int remained_msg, remained_max, total_received, middle_point;
    gboolean toggle;
    guint8 bundle; /* the next PacketBundle's BUNDLE_* flags (processed, send_back, NPU_to_MA) */
    guint32 curr_recv, curr_send;     /* ring indices */
    guint8 dbt_state, dbt_reductions; /* DoubleBinaryTreeAllReduce's state and reductions */
    int hd_offset;                    /* HalvingDoubling: rank_offset, */
    double hd_mult;                   /* offset_multiplier */
    guint64 hd_msg;                   /* and msg_size */
    GArray *packets;                  /* Packet, queued */
    guint packets_head;
} Stream;

/* Who is told when a side of a message is served. */
enum {
    CB_NONE,     /* nobody (a collective step's send) */
    CB_OP,       /* a = a send or receive op of the trace, which ends */
    CB_STREAM,   /* a = a collective's stream, whose step's message has arrived */
    CB_CUSTOM,   /* a = a custom run, b = the send or receive of its trace that ends */
    CB_HANDSHAKE /* a = a rendezvous handshake (Replay.handshakes), whose post it makes */
};

typedef struct {
    guint8 kind;
    guint32 a, b;
} Callback;

/* 16 bytes: the replay keeps every message in flight.  A CB_CUSTOM side's `b` is kept apart, in
 * Replay.custom_ops. */
typedef struct {
    guint8 arrived;           /* the transfer has reached its destination */
    guint8 first_send;        /* the send was posted first (it waits in the match queue) */
    guint8 sent_kind;         /* the sender's side, served at the arrival */
    guint8 recv_kind;         /* the receiver's side (CB_NONE: not posted yet) */
    guint32 sent_cb, recv_cb; /* their Callback.a */
    guint32 next;             /* the next message in its match queue, or in the free list */
} Msg;

/* A message on the congestion-aware network (Replay.flights, indexed as Replay.msgs): where it is
 * on its route, and the next message waiting for the link it waits for. */
typedef struct {
    guint32 at, dst, link_next;
    gint32 step; /* a Ring's direction: +1 or -1 */
    guint64 size;
} Flight;

/* A directed link of the congestion-aware network: busy, and the messages waiting for it. */
typedef struct {
    gboolean busy;
    guint32 head, tail; /* Msg indices through link_next; SSIM_NONE: none */
} Link;

/* A custom implementation's trace set, indexed for the replay (astra-custom.c); op indices are
 * the set's graph's. */
typedef struct {
    const char *key, *path; /* the system file's key and the set's prefix, for messages */
    const SsimGraph *graph;
    const SsimOp *ops;
    const guint64 *node_ids;    /* NULL: the op's index within its rank */
    guint n_pos;                /* positions: the set's ranks */
    guint32 *pos_first;         /* n_pos + 1: position p's ops are order[pos_first[p] ...] */
    guint32 *order;             /* ops by position, ascending node id */
    guint32 *local;             /* per op: its index within its position's run of order */
    guint32 *succ_first, *succ; /* explicit successors (CSR), ascending node id */
} CustomSet;

/* One custom collective running on one rank: its position's trace. */
typedef struct {
    guint32 stream;   /* the collective's stream */
    guint32 set;      /* which custom set (an index of Replay.custom) */
    guint32 left;     /* ops not finished */
    guint32 *pending; /* per op of the position (local index): dependencies not finished */
} CustomRun;

/* A dimension's queue on one rank: ASTRA-sim's active_Streams[q] and running_streams[q]. */
typedef struct {
    GPtrArray *list; /* Stream index + 1 as pointers, in order */
    guint running;
} Queue;

/* A remote memory shared by several NPUs (astra-mem.c). */
typedef struct {
    gboolean busy;
    GArray *pending; /* guint32 ops waiting, from index head */
    guint head;
} MemUnit;

typedef struct Replay Replay;
typedef struct AstraMatchSlot AstraMatchSlot;
typedef struct AstraLogGP AstraLogGP;

/* QueueLevelHandler's three allocators of a dimension's queues on a rank (Rank.next_queue): the
 * next in turn (get_next_queue_id: the second half of the queues runs its rings anticlockwise),
 * the first half's next (clockwise) and the second half's next (anticlockwise). */
enum { QUEUE_NEXT, QUEUE_FIRST, QUEUE_LAST };

/* An instant of a rank with system-layer events waiting (astra_sys_at): the first one's kind and
 * words here, the others' list, oldest first, in Replay.sys_events (none while its last runs). */
typedef struct {
    SsimTime at;
    guint64 a, b;
    guint32 ev, head, tail;
} SysInstant;

typedef struct {
    guint32 *heap[CLS_N]; /* dependency-free ops, min-heaps by node id */
    guint n_heap[CLS_N], cap_heap[CLS_N];
    gboolean busy[CLS_N];
    Queue *queues; /* queues_per_dim per dimension, dimension 0's first */
    guint32 next_queue[SSIM_ASTRA_MAX_DIMS][3]; /* per dimension, the next queue of each
                                                   allocator (QUEUE_*), an index within it */
    gint64 priority_counter;
    guint32 dbt_counter[SSIM_ASTRA_MAX_DIMS]; /* doubleBinaryTree phases made, per dimension */
    guint32 num_streams;  /* Sys::num_streams: streams made on the rank, every group's */
    SysInstant *instants; /* Sys::event_queue: the instants with events waiting, unordered (a */
    guint n_instants, cap_instants; /* rank has a few at a time) */
    SsimTime finish;
} Rank;

struct Replay {
    const SsimGraph *graph;
    const SsimOp *ops;
    const guint64 *node_ids;
    const SsimCollAttrs *colls; /* NULL: every collective's node gives the defaults */
    guint64 *own_ids;
    SsimAstraConfig cfg;
    guint n_ranks, n_dims;
    guint queue_streams; /* streams a queue runs at once (Sys::Sys's concurrent_streams) */
    guint npus_below[SSIM_ASTRA_MAX_DIMS];
    double bw_bpns[SSIM_ASTRA_MAX_DIMS];
    SsimEngine *engine;
    Rank *ranks;
    guint32 *pending;           /* per op: explicit dependencies not finished */
    guint8 *role;               /* per op: what its class makes it (astra-replay.c) */
    guint32 *succ_first, *succ; /* explicit successors (CSR) */
    guint32 *chunks_left;       /* per collective op: streams not finished */
    guint32 *group_streams;     /* per (group, rank): the group's stream counter */
    guint32 world;              /* the group "world" (ASTRA-sim's no communicator), or NONE */
    GArray *phases;             /* Phase */
    GPtrArray *streams;         /* Stream * */
    GArray *msgs;               /* Msg */
    guint32 free_msg;
    Link *links;        /* congestion-aware: every directed link (astra-net.c) */
    GArray *flights;    /* congestion-aware: Flight, one per Msg */
    GArray *handshakes; /* rendezvous: Handshake, the posts waiting for theirs (astra-net.c) */
    guint32 free_handshake;
    guint n_links;
    AstraMatchSlot *match; /* keys with posts waiting for the other side (astra-coll.c) */
    guint match_cap, match_used;
    gint32 *dbt_tree[SSIM_ASTRA_MAX_DIMS][2]; /* per dimension, RootMax and RootMin: per
                                                 position its parent, left and right child's
                                                 positions (-1: none); made when first used */
    /* Custom sets: SSIM_ASTRA_N_COLL of the collective types' (graph NULL: native), then one
     * per per-node-custom-implementation entry. */
    CustomSet *custom;
    guint n_custom;
    GHashTable *per_node; /* a per-node entry's node id -> its index in custom + 1 */
    /* (group x ranks + rank) x SSIM_ASTRA_N_COLL + type -> the implementation the first
     * collective of the type on the group chose there, as a custom set's index + 1 (0: native):
     * CommunicatorGroup::get_collective_plan keeps a group's first plan (astra-coll.c). */
    GHashTable *group_impl;
    GArray *runs;       /* CustomRun */
    GArray *custom_ops; /* per Msg, two guint32: its sides' Callback.b (custom sets only) */
    GArray *freed;      /* scratch: a custom run's ops freed by one op */
    GArray *deferred;   /* ops freed during a walk */
    MemUnit *mem_units; /* the shared remote memories (astra-mem.c) */
    guint n_mem_units;
    AstraLogGP *bus;    /* model-shared-bus: four sides a rank (astra-bus.c); NULL: off */
    GArray *sys_events; /* SysEvent: the events after each instant's first (astra_sys_at) */
    guint32 sys_free;
    guint64 sys_calls, sys_events_run; /* EV_SYS events fired, and the events they ran */
    gboolean walking;
    SsimTimeline *tl;
    SsimAstraStats stats;
    GError *error; /* the first error a handler met; stops the run */
};

/* A pool of records in a GArray whose free ones are listed through a guint32 `link` bytes into
 * each (offsetof), from *free_head (SSIM_NONE: none free).  take: a free record's index, or a
 * new one's at the end; give: record i is free again. */
static inline guint32 astra_pool_take(GArray *pool, guint32 *free_head, gsize link)
{
    guint32 i = *free_head;
    if (i == SSIM_NONE) {
        i = pool->len;
        g_array_set_size(pool, i + 1);
    } else {
        memcpy(free_head, pool->data + (gsize)i * g_array_get_element_size(pool) + link,
               sizeof *free_head);
    }
    return i;
}

static inline void astra_pool_give(GArray *pool, guint32 *free_head, gsize link, guint32 i)
{
    memcpy(pool->data + (gsize)i * g_array_get_element_size(pool) + link, free_head,
           sizeof *free_head);
    *free_head = i;
}

/* The records of the pool in use (0 for none made): its length less the free ones. */
static inline guint astra_pool_live(const GArray *pool, guint32 free_head, gsize link)
{
    if (pool == NULL)
        return 0;
    guint live = pool->len;
    for (guint32 i = free_head; i != SSIM_NONE; live--)
        memcpy(&i, pool->data + (gsize)i * g_array_get_element_size((GArray *)pool) + link,
               sizeof i);
    return live;
}

/* SsimAstraColl's names, as the system file's keys begin ("all-reduce", ...). */
extern const char *const astra_coll_names[SSIM_ASTRA_N_COLL];

/* Times (astra-replay.c).  No run gets past ASTRA_HORIZON ns (146 years): a later event means a
 * configuration's times do not fit (a huge latency, a tiny bandwidth, a peak of 0). */
#define ASTRA_HORIZON ((SsimTime)1 << 62)
/* `ns` truncated to whole ns, as ASTRA-sim's casts truncate; G_MAXINT64 (which astra_at()
 * refuses) when it is not a finite number below the horizon. */
SsimTime astra_ns(double ns);
/* Schedules network event `ev` `delay` ns from now on the network's queue (CommonNetworkApi::
 * sim_schedule), or stops the run with an error past the horizon or at time 0. */
void astra_at(Replay *R, SsimTime delay, int ev, guint64 a, guint64 b);
/* Registers event `ev` (SYS_*) of `rank`'s system layer `delay` ns from now (Sys::register_event):
 * with the rank's other events of that instant, which run together, in the order registered, when
 * the first of them comes due; one registered while they run joins them. */
void astra_sys_at(Replay *R, guint32 rank, SsimTime delay, int ev, guint64 a, guint64 b);

/* Issue rules (astra-replay.c). */
void astra_op_finished(Replay *R, guint32 op);
/* Stops the run with `error` (taken), unless an earlier error did. */
void astra_fail(Replay *R, GError *error);

/* Collectives (astra-coll.c). */
gboolean astra_coll_issue(Replay *R, guint32 rank, guint32 op, GError **error);
/* A step's message for stream `sid` has arrived (its receive completes). */
void astra_coll_received(Replay *R, guint32 sid);

/* The network and message matching (astra-net.c).  A key: collectives' steps (coll 1, tag the
 * stream's) and the trace's sends (coll 0, tag the op's) never match each other, nor any of them
 * a rendezvous handshake (coll | 2, as ASTRA-sim's tags + RENDEZVOUS). */
typedef struct {
    guint64 tag, size;
    guint32 src, dst;
    guint32 coll;
} MatchKey;

/* The tag a trace's send or receive (or a custom set's) is matched by: Sys::front_end_sim_send
 * and _recv take the node's uint32 comm_tag as an int and keep it modulo 500000000 (C's %, so a
 * tag of 2^31 or more, negative as an int, stays negative): tags 7 and 500000007 meet. */
static inline guint64 astra_native_tag(guint32 tag)
{
    return (guint64)(gint64)((gint32)tag % 500000000);
}

SsimTime astra_net_delay(const Replay *R, guint32 src, guint32 dst, guint64 bytes);
/* Sys::front_end_sim_send: starts a transfer now (with the rendezvous protocol, once its
 * handshake has arrived); `sent` is served at its arrival. */
void astra_net_send(Replay *R, const MatchKey *key, Callback sent);
/* Sys::front_end_sim_recv: posts a receive (with the rendezvous protocol, once its handshake has
 * arrived); `cb` is served at the arrival, or now if it has arrived. */
void astra_net_recv(Replay *R, const MatchKey *key, Callback cb);
/* Rendezvous: the sends and receives still waiting for their handshakes. */
guint astra_net_handshakes_waiting(const Replay *R);
void astra_send_issue(Replay *R, guint32 op);
void astra_recv_issue(Replay *R, guint32 op);
void astra_on_arrive(Replay *R, guint32 msg);
void astra_on_recv(Replay *R, guint32 msg);
void astra_on_hop(Replay *R, guint32 msg);
void astra_on_link_free(Replay *R, guint32 link);
/* Makes the congestion-aware network's links (one dimension); FALSE with `error` otherwise. */
gboolean astra_net_build(Replay *R, GError **error);
void astra_net_clear(Replay *R);
/* `bundle`: the bundle's bytes << 1 | 1 when it still needs its reduction. */
void astra_on_bundle(Replay *R, guint32 stream, guint64 bundle);
void astra_coll_clear(Replay *R);
/* Proceeds a stream whose phase is over (Sys::proceed_to_next_vnet_baseline). */
void astra_stream_proceed(Replay *R, guint32 sid);

/* doubleBinaryTree (astra-dbt.c). */
/* Picks `rank`'s next tree on dimension `d` for `p` (a ring phase of it). */
void astra_dbt_phase(Replay *R, guint32 rank, guint d, Phase *p);
enum { DBT_INIT, DBT_GENERAL, DBT_RECEIVED };
/* DoubleBinaryTreeAllReduce::run on stream `sid` for one of the events above. */
void astra_dbt_run(Replay *R, guint32 sid, int event);
void astra_dbt_clear(Replay *R);
/* PacketBundle: `size` bytes through the endpoint, then reduced with BUNDLE_PROCESS; the
 * stream's algorithm is called back. */
void astra_bundle(Replay *R, guint32 sid, guint64 size, guint flags);

/* The shared memory bus, model-shared-bus 1 (astra-bus.c). */
void astra_bus_build(Replay *R);
/* MemBus::send_from_NPU_to_MA (BUNDLE_TO_MA) or send_from_MA_to_NPU of a "Usual" bundle of
 * stream `sid`: astra_on_bundle() is called when the bus is done with it. */
void astra_bus_send(Replay *R, guint32 sid, guint64 size, guint flags);
void astra_on_bus(Replay *R, guint32 side, guint64 event);
void astra_bus_clear(Replay *R);

/* The remote memory (astra-mem.c). */
void astra_mem_build(Replay *R);
/* Serves memory node `op` of `rank` (Workload::issue_remote_mem). */
void astra_mem_issue(Replay *R, guint32 rank, guint32 op);
void astra_on_mem_free(Replay *R, guint32 unit);
void astra_mem_clear(Replay *R);

/* Custom implementations (astra-custom.c). */
gboolean astra_custom_build(Replay *R, GError **error);
/* Starts stream `sid`'s custom run (CustomAlgorithm::run): position `pos` of set `set` (an index
 * of Replay.custom). */
void astra_custom_start(Replay *R, guint32 sid, guint32 set, guint32 pos);
/* Op `op` of custom run `run` has ended (CustomAlgorithm::call). */
void astra_custom_done(Replay *R, guint32 run, guint32 op);
void astra_custom_clear(Replay *R);
