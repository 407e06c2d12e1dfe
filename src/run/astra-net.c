/*
 * The network of the ASTRA-sim-compatible replay: ASTRA-sim's analytical congestion-unaware
 * backend (astra-network-analytical congestion_unaware/: a message's time on the first dimension
 * where the two ranks differ) and its front end's message matching (CommonNetworkApi: eager
 * sends, receives matched in order per tag, source, destination and size), which carry both the
 * collectives' steps (astra-coll.c) and the trace's own sends and receives.
 *
 * Invariants: a message index is live from its first post (send or receive) until both sides
 * have been served; a key is in the match table exactly while posts of one side wait on it.
 */
#include "src/run/astra-private.h"

/* ---- the network (astra-network-analytical, congestion_unaware) ---- */

SsimTime astra_net_delay(const Replay *R, guint32 src, guint32 dst, guint64 bytes)
{
    /* MultiDimTopology::send: the first dimension where the addresses differ. */
    for (guint d = 0; d < R->n_dims; d++) {
        guint n = R->cfg.npus[d];
        guint a = (src / R->npus_below[d]) % n, b = (dst / R->npus_below[d]) % n;
        if (a == b)
            continue;
        int hops = 1;
        switch (R->cfg.topo[d]) {
        case SSIM_ASTRA_TOPO_SWITCH:
            hops = 2;
            break;
        case SSIM_ASTRA_TOPO_RING: { /* bidirectional: the shorter way */
            guint cw = (b + n - a) % n;
            hops = (int)MIN(cw, n - cw);
            break;
        }
        default:
            hops = 1;
        }
        return astra_ns(hops * R->cfg.latency_ns[d] + (double)bytes / R->bw_bpns[d]);
    }
    return 0; /* to itself: ASTRA-sim refuses it; the graph never asks */
}

/* ---- message matching (CommonNetworkApi's callback tracker) ----
 *
 * The k-th send of a key (tag, source, destination, size) matches the k-th receive of that key.
 * An open-addressing table (linear probing, backward-shift deletion) maps each key with posts
 * waiting to the queue of those posts, linked through Msg.next; a key leaves the table when its
 * queue empties, so the table holds only what is in flight.  (The replay posts millions of
 * messages: a general hash table's per-key allocations were a fifth of its time.) */

struct AstraMatchSlot {
    MatchKey key;
    guint32 head, tail; /* the waiting posts, oldest first; head SSIM_NONE: slot empty */
};

static guint64 match_hash(const MatchKey *k)
{
    guint64 h = k->tag * 0x9E3779B97F4A7C15ull ^ k->size * 0xC2B2AE3D27D4EB4Full;
    h ^= ((guint64)k->src << 32 | k->dst) * 0x165667B19E3779F9ull ^ k->coll;
    return h ^ h >> 29;
}

static gboolean match_equal(const MatchKey *x, const MatchKey *y)
{
    return x->tag == y->tag && x->size == y->size && x->src == y->src && x->dst == y->dst &&
           x->coll == y->coll;
}

static void match_grow(Replay *R)
{
    guint old_cap = R->match_cap;
    AstraMatchSlot *old = R->match;
    R->match_cap = old_cap ? old_cap * 2 : 1024;
    R->match = g_new(AstraMatchSlot, R->match_cap);
    for (guint i = 0; i < R->match_cap; i++)
        R->match[i].head = SSIM_NONE;
    guint mask = R->match_cap - 1;
    for (guint i = 0; i < old_cap; i++) {
        if (old[i].head == SSIM_NONE)
            continue;
        guint j = (guint)match_hash(&old[i].key) & mask;
        while (R->match[j].head != SSIM_NONE)
            j = (j + 1) & mask;
        R->match[j] = old[i];
    }
    g_free(old);
}

/* The slot of `key`, or the empty slot where it would go. */
static guint match_find(Replay *R, const MatchKey *key)
{
    guint mask = R->match_cap - 1, i = (guint)match_hash(key) & mask;
    while (R->match[i].head != SSIM_NONE && !match_equal(&R->match[i].key, key))
        i = (i + 1) & mask;
    return i;
}

/* Empties slot i and moves later entries of its probe run back over the hole. */
static void match_delete(Replay *R, guint i)
{
    guint mask = R->match_cap - 1, j = i;
    R->match[i].head = SSIM_NONE;
    R->match_used--;
    for (;;) {
        j = (j + 1) & mask;
        if (R->match[j].head == SSIM_NONE)
            return;
        guint k = (guint)match_hash(&R->match[j].key) & mask;
        /* Entry j may move to the hole i unless its home k lies cyclically in (i, j]. */
        gboolean stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            R->match[i] = R->match[j];
            R->match[j].head = SSIM_NONE;
            i = j;
        }
    }
}

static Msg *msg_at(Replay *R, guint32 m)
{
    return &g_array_index(R->msgs, Msg, m);
}

static guint32 msg_new(Replay *R)
{
    guint32 m = astra_pool_take(R->msgs, &R->free_msg, offsetof(Msg, next));
    Msg *x = msg_at(R, m);
    memset(x, 0, sizeof *x);
    x->next = SSIM_NONE;
    return m;
}

static void msg_free(Replay *R, guint32 m)
{
    astra_pool_give(R->msgs, &R->free_msg, offsetof(Msg, next), m);
}

/* Records a side's callback (0: the sender's, 1: the receiver's) of message m. */
static void set_side(Replay *R, guint32 m, int side, Callback cb)
{
    Msg *x = msg_at(R, m);
    if (side) {
        x->recv_kind = cb.kind;
        x->recv_cb = cb.a;
    } else {
        x->sent_kind = cb.kind;
        x->sent_cb = cb.a;
    }
    if (cb.kind == CB_CUSTOM) {
        if (R->custom_ops->len < 2 * R->msgs->len)
            g_array_set_size(R->custom_ops, 2 * R->msgs->len);
        g_array_index(R->custom_ops, guint32, 2 * (gsize)m + (guint)side) = cb.b;
    }
}

/* The message the k-th post of this side matches: the other side's oldest waiting one, taken
 * from the queue, or a new one left waiting.  (A key's queue holds posts of one side only.) */
static guint32 match_post(Replay *R, const MatchKey *key, gboolean send_side, gboolean *found)
{
    if (2 * (R->match_used + 1) > R->match_cap)
        match_grow(R);
    guint i = match_find(R, key);
    AstraMatchSlot *slot = &R->match[i];
    if (slot->head != SSIM_NONE && msg_at(R, slot->head)->first_send != send_side) {
        guint32 m = slot->head;
        slot->head = msg_at(R, m)->next;
        if (slot->head == SSIM_NONE)
            match_delete(R, i);
        *found = TRUE;
        return m;
    }
    guint32 m = msg_new(R);
    msg_at(R, m)->first_send = (guint8)send_side;
    if (slot->head == SSIM_NONE) {
        slot->key = *key;
        slot->head = m;
        R->match_used++;
    } else {
        msg_at(R, slot->tail)->next = m;
    }
    slot->tail = m;
    *found = FALSE;
    return m;
}

/* ---- the congestion-aware network (astra-network-analytical congestion_aware/) ----
 *
 * Devices are the NPUs and, for a Switch, the switch (device n).  Links: a Ring's i -> i+1 is i
 * and i -> i-1 is n + i; a Switch's i -> switch is i and switch -> i is n + i; a
 * FullyConnected's i -> j is i n + j. */

gboolean astra_net_build(Replay *R, GError **error)
{
    if (!R->cfg.congestion_aware)
        return TRUE;
    if (R->n_dims != 1) {
        /* construct_topology: "only support 1-dim topology". */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: the congestion-aware network takes one dimension, as "
                    "ASTRA-sim's congestion-aware backend does; this one has %u",
                    R->n_dims);
        return FALSE;
    }
    guint64 n = R->cfg.npus[0];
    guint64 links = R->cfg.topo[0] == SSIM_ASTRA_TOPO_FULLY_CONNECTED ? n * n : 2 * n;
    if (links > G_MAXUINT32 / 2) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: %" G_GUINT64_FORMAT " links are too many for the "
                    "congestion-aware network",
                    links);
        return FALSE;
    }
    R->n_links = (guint)links;
    R->links = g_new(Link, R->n_links);
    for (guint i = 0; i < R->n_links; i++)
        R->links[i] = (Link){FALSE, SSIM_NONE, SSIM_NONE};
    R->flights = g_array_new(FALSE, TRUE, sizeof(Flight));
    return TRUE;
}

static Flight *flight_at(Replay *R, guint32 m)
{
    return &g_array_index(R->flights, Flight, m);
}

/* The link from the message's device to the next one on its route, and that device. */
static guint32 next_link(const Replay *R, const Flight *x, guint32 *next)
{
    guint32 n = R->cfg.npus[0];
    switch (R->cfg.topo[0]) {
    case SSIM_ASTRA_TOPO_RING:
        *next = (x->at + n + (guint32)x->step) % n;
        return x->step > 0 ? x->at : n + x->at;
    case SSIM_ASTRA_TOPO_SWITCH:
        if (x->at == n) {
            *next = x->dst;
            return n + x->dst;
        }
        *next = n;
        return x->at;
    default:
        *next = x->dst;
        return x->at * n + x->dst;
    }
}

/* Link::schedule_chunk_transmission: the message reaches the next device after the latency and
 * its serialisation, and the link is free after the serialisation. */
static void transmit(Replay *R, guint32 link, guint32 m)
{
    Link *l = &R->links[link];
    l->busy = TRUE;
    double bytes = (double)flight_at(R, m)->size;
    double ser = bytes / R->bw_bpns[0];
    astra_at(R, astra_ns(R->cfg.latency_ns[0] + ser), EV_HOP, m, 0);
    astra_at(R, astra_ns(ser), EV_FREE, link, 0);
}

/* Device::send -> Link::send: now if the link is free, else after those waiting. */
static void hop(Replay *R, guint32 m)
{
    guint32 next;
    guint32 link = next_link(R, flight_at(R, m), &next);
    Link *l = &R->links[link];
    if (!l->busy) {
        transmit(R, link, m);
        return;
    }
    flight_at(R, m)->link_next = SSIM_NONE;
    if (l->head == SSIM_NONE)
        l->head = m;
    else
        flight_at(R, l->tail)->link_next = m;
    l->tail = m;
}

/* Chunk::chunk_arrived_next_device. */
void astra_on_hop(Replay *R, guint32 m)
{
    Flight *x = flight_at(R, m);
    guint32 next;
    next_link(R, x, &next);
    x->at = next;
    if (next == x->dst)
        astra_on_arrive(R, m);
    else
        hop(R, m);
}

/* Link::link_become_free. */
void astra_on_link_free(Replay *R, guint32 link)
{
    Link *l = &R->links[link];
    l->busy = FALSE;
    if (l->head == SSIM_NONE)
        return;
    guint32 m = l->head;
    l->head = flight_at(R, m)->link_next;
    transmit(R, link, m);
}

/* Sys::sim_send -> the network API's sim_send: the transfer starts now, arriving after the
 * congestion-unaware delay, or travelling the congestion-aware links. */
static void net_send(Replay *R, const MatchKey *key, Callback sent)
{
    gboolean found;
    guint32 m = match_post(R, key, TRUE, &found);
    set_side(R, m, 0, sent);
    R->stats.n_messages++;
    if (!R->cfg.congestion_aware) {
        astra_at(R, astra_net_delay(R, key->src, key->dst, key->size), EV_ARRIVE, m, 0);
        return;
    }
    if (R->flights->len < R->msgs->len)
        g_array_set_size(R->flights, R->msgs->len);
    Flight *x = flight_at(R, m);
    guint32 n = R->cfg.npus[0];
    x->at = key->src;
    x->dst = key->dst;
    x->size = key->size;
    /* Ring::route: clockwise unless the other way is shorter. */
    guint32 cw = (key->dst + n - key->src) % n;
    x->step = n - cw < cw ? -1 : 1;
    hop(R, m);
}

/* CommonNetworkApi::sim_recv: completes at the arrival, or at once when it has arrived. */
static void net_recv(Replay *R, const MatchKey *key, Callback cb)
{
    gboolean found;
    guint32 m = match_post(R, key, FALSE, &found);
    set_side(R, m, 1, cb);
    Msg *x = msg_at(R, m);
    if (found && x->arrived)
        ssim_engine_schedule(R->engine, ssim_engine_now(R->engine), EV_RECV, m, 0);
}

/* ---- the rendezvous protocol (--rendezvous-protocol) ----
 *
 * Sys::rendezvous_sim_send posts a receive of 8192 bytes from the destination, tagged tag +
 * RENDEZVOUS (MatchKey.coll's bit 2 here), and sends when it completes; rendezvous_sim_recv sends
 * those bytes to the source and posts its receive when they have arrived (its send's handler). */

#define HANDSHAKE_BYTES 8192
#define HANDSHAKE_KEY   2

/* A send or receive waiting for its handshake. */
typedef struct {
    MatchKey key;
    Callback cb;
    gboolean send;
    guint32 next_free;
} Handshake;

static void post(Replay *R, const MatchKey *key, Callback cb, gboolean send)
{
    if (!R->cfg.rendezvous) {
        (send ? net_send : net_recv)(R, key, cb);
        return;
    }
    if (R->handshakes == NULL) {
        R->handshakes = g_array_new(FALSE, FALSE, sizeof(Handshake));
        R->free_handshake = SSIM_NONE;
    }
    guint32 h = astra_pool_take(R->handshakes, &R->free_handshake, offsetof(Handshake, next_free));
    g_array_index(R->handshakes, Handshake, h) = (Handshake){*key, cb, send, SSIM_NONE};
    MatchKey hk = {.tag = key->tag,
                   .size = HANDSHAKE_BYTES,
                   .src = key->dst,
                   .dst = key->src,
                   .coll = key->coll | HANDSHAKE_KEY};
    (send ? net_recv : net_send)(R, &hk, (Callback){CB_HANDSHAKE, h, 0});
}

/* Handshake h has arrived: its send or receive goes on. */
static void handshake_done(Replay *R, guint32 h)
{
    Handshake done = g_array_index(R->handshakes, Handshake, h);
    astra_pool_give(R->handshakes, &R->free_handshake, offsetof(Handshake, next_free), h);
    (done.send ? net_send : net_recv)(R, &done.key, done.cb);
}

guint astra_net_handshakes_waiting(const Replay *R)
{
    return astra_pool_live(R->handshakes, R->free_handshake, offsetof(Handshake, next_free));
}

void astra_net_send(Replay *R, const MatchKey *key, Callback sent)
{
    post(R, key, sent, TRUE);
}

void astra_net_recv(Replay *R, const MatchKey *key, Callback cb)
{
    post(R, key, cb, FALSE);
}

/* ---- sends and receives of the trace ---- */

void astra_send_issue(Replay *R, guint32 op)
{
    const SsimOp *o = &R->ops[op];
    MatchKey key = {.tag = astra_native_tag(o->tag),
                    .size = o->bytes,
                    .src = o->rank,
                    .dst = o->peer,
                    .coll = 0};
    astra_net_send(R, &key, (Callback){CB_OP, op, 0});
}

void astra_recv_issue(Replay *R, guint32 op)
{
    const SsimOp *o = &R->ops[op];
    MatchKey key = {.tag = astra_native_tag(o->tag),
                    .size = o->bytes,
                    .src = o->peer,
                    .dst = o->rank,
                    .coll = 0};
    astra_net_recv(R, &key, (Callback){CB_OP, op, 0});
}

/* The callback of a side (0: the sender's, 1: the receiver's) of message m. */
static Callback get_side(Replay *R, guint32 m, int side)
{
    const Msg *x = msg_at(R, m);
    Callback cb = {side ? x->recv_kind : x->sent_kind, side ? x->recv_cb : x->sent_cb, 0};
    if (cb.kind == CB_CUSTOM)
        cb.b = g_array_index(R->custom_ops, guint32, 2 * (gsize)m + (guint)side);
    return cb;
}

static void serve(Replay *R, Callback cb)
{
    switch (cb.kind) {
    case CB_OP:
        astra_op_finished(R, cb.a);
        break;
    case CB_STREAM:
        astra_coll_received(R, cb.a);
        break;
    case CB_CUSTOM:
        astra_custom_done(R, cb.a, cb.b);
        break;
    case CB_HANDSHAKE:
        handshake_done(R, cb.a);
        break;
    default:
        break;
    }
}

/* CommonNetworkApi::process_chunk_arrival: the sender's handler, then the receiver's when its
 * receive is posted. */
void astra_on_arrive(Replay *R, guint32 m)
{
    Msg *x = msg_at(R, m);
    x->arrived = TRUE;
    gboolean both = x->recv_kind != CB_NONE;
    serve(R, get_side(R, m, 0));
    if (both) {
        Callback recv = get_side(R, m, 1);
        msg_free(R, m);
        serve(R, recv);
    }
}

void astra_on_recv(Replay *R, guint32 m)
{
    Callback recv = get_side(R, m, 1);
    msg_free(R, m);
    serve(R, recv);
}

void astra_net_clear(Replay *R)
{
    g_clear_pointer(&R->match, g_free);
    g_clear_pointer(&R->links, g_free);
    if (R->flights)
        g_clear_pointer(&R->flights, g_array_unref);
    if (R->handshakes)
        g_clear_pointer(&R->handshakes, g_array_unref);
}
