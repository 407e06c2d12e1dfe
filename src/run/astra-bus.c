/*
 * ASTRA-sim's shared memory bus under the ASTRA-sim-compatible replay (`model-shared-bus: 1`;
 * astra-sim 518bd51 system/MemBus.cc, LogGP.cc, MemMovRequest.cc, statement by statement).
 *
 * With the bus off a collective's message crosses its endpoint in `endpoint-delay` ns
 * (astra_bundle).  With it on, a message that is not a group ring's ("Usual") is a request to one
 * of the rank's two LogGP sides: towards the memory (PacketBundle::send_to_MA) the NPU side,
 * back (send_to_NPU) the MA side.  A side sends one request at a time: it waits o (or what is
 * left of the gap g since its last send), takes G ns a byte, and its partner receives the
 * request L + o later, one receive after another.  What the partner does with a received
 * request: a reduction (`processed`) in a queue of its own, ((bytes / 100) x
 * local-reduction-delay) + 50 ns; a request to send back goes into its own send queue; else the
 * request retires and its PacketBundle goes on (PacketBundle::call, the reduction at local
 * memory bandwidth included, as without the bus).  A side that has sent more than 8 in a row
 * lets its partner send first when the partner has a request and has not.  The NPU side has a
 * bus of its own to the NPU's memory (the NPU2 and MEM2 sides, G = 0.0038 ns a byte): every
 * request it takes, receives for a reduction, sends back or retires first crosses that bus.
 *
 * The four sides of every rank are kept in Replay.bus (NPU, MA, NPU2, MEM2), their events are
 * SYS_BUS (a = side, b = the event), and a request's callable is either its PacketBundle (the
 * stream and the bundle's bits, as SYS_BUNDLE carries them) or the request of the bus above that
 * waits for it (MemMovRequest::call).  A request lives in exactly one queue of one side at a time
 * (ASTRA-sim copies it from list to list); the pre_* queues hold the requests waiting for the
 * side's own bus, which leave them in whatever order that bus finishes them.
 */
#include "src/run/astra-private.h"

enum { SIDE_NPU, SIDE_MA, SIDE_NPU2, SIDE_MEM2, N_SIDES };
enum { FREE, SENDING, RECEIVING };
/* LogGP::call's events, the first three SYS_BUS's. */
enum {
    SEND_FINISHED,
    REC_FINISHED,
    PROCESSING_FINISHED,
    GENERAL,
    CONSIDER_RETIRE,
    CONSIDER_PROCESS,
    CONSIDER_SEND_BACK
};
#define THRESHOLD 8
/* The bus to the NPU's memory: MemBus's constructor passes G as this literal. */
#define NPU_MEM_G 0.0038

typedef struct BusReq BusReq;
struct BusReq {   /* MemMovRequest */
    guint64 size; /* bytes (an int in ASTRA-sim: checked at the entry) */
    gboolean processed, send_back;
    guint8 call_event; /* what it raises at its side when its own bus is done */
    guint32 side;      /* while it waits in a pre_* queue for its side's own bus: the side, */
    GList *link;       /* and its link in that queue */
    BusReq *parent;    /* the callable: the request of the bus above, or NULL: */
    guint32 sid;       /* the PacketBundle of this stream, */
    gboolean reduce; /* and its needs_processing (`processed` is the bus's copy, which it clears) */
};

struct AstraLogGP {
    GQueue sends, receives, processing, pre_send, pre_process, retirements; /* BusReq * */
    guint8 cur, prev;
    gboolean processing_busy;
    SsimTime last_trans;
    int subsequent_reads;
};

static AstraLogGP *side_at(Replay *R, guint32 side)
{
    return &R->bus[side];
}

static guint32 partner(guint32 side)
{
    return side ^ 1;
}

static gboolean has_npu_mem(guint32 side)
{
    return side % N_SIDES == SIDE_NPU;
}

static double side_G(const Replay *R, guint32 side)
{
    return side % N_SIDES >= SIDE_NPU2 ? NPU_MEM_G : R->cfg.bus_G;
}

/* A delay the bus computes in double and ASTRA-sim passes on as an unsigned tick, truncated. */
static void bus_at(Replay *R, double ns, guint32 side, int event)
{
    astra_sys_at(R, side / N_SIDES, ns > -1 && ns < 0 ? 0 : astra_ns(ns), SYS_BUS, side,
                 (guint64)event);
}

static void bus_call(Replay *R, guint32 side, int event, BusReq *talking);
static void request_read(Replay *R, guint32 side, BusReq *req);

/* A request's callable->call: its PacketBundle goes on, or the request above it is considered. */
static void call_callable(Replay *R, BusReq *req)
{
    if (req->parent)
        bus_call(R, req->parent->side, req->parent->call_event, req->parent);
    else
        astra_on_bundle(R, req->sid, req->size << 1 | (req->reduce ? 1 : 0));
}

/* NPU_MEM->send_from_NPU_to_MA (to_ma) or send_from_MA_to_NPU: a request of the NPU side's own
 * bus, whose callable is `parent`. */
static void npu_mem_send(Replay *R, guint32 side, gboolean to_ma, gboolean send_back,
                         BusReq *parent)
{
    BusReq *req = g_new0(BusReq, 1);
    req->size = parent->size;
    req->send_back = send_back;
    req->parent = parent;
    guint32 base = side - side % N_SIDES;
    request_read(R, base + (to_ma ? SIDE_NPU2 : SIDE_MEM2), req);
}

/* Puts `req` at the tail of a pre_* queue of `side` to wait for the side's own bus. */
static void wait_npu_mem(guint32 side, GQueue *q, BusReq *req, int event)
{
    req->call_event = (guint8)event;
    req->side = side;
    g_queue_push_tail(q, req);
    req->link = q->tail;
}

/* LogGP::process_next_read. */
static void process_next_read(Replay *R, guint32 side)
{
    AstraLogGP *b = side_at(R, side);
    const SsimAstraConfig *c = &R->cfg;
    SsimTime now = ssim_engine_now(R->engine);
    SsimTime o = (SsimTime)c->bus_o, g = (SsimTime)c->bus_g, L = (SsimTime)c->bus_L;
    SsimTime offset = o;
    if (b->prev == SENDING)
        offset = o + (now - b->last_trans) > g ? o : g - (now - b->last_trans);
    BusReq *req = g_queue_pop_head(&b->sends);
    double G = side_G(R, side);
    double bytes = (double)((gint64)req->size - 1);
    /* partner->switch_to_receiver */
    AstraLogGP *p = side_at(R, partner(side));
    g_queue_push_tail(&p->receives, req);
    p->prev = p->cur;
    p->cur = RECEIVING;
    bus_at(R, (double)offset + bytes * G + (double)L + (double)o, partner(side), REC_FINISHED);
    p->subsequent_reads = 0;
    b->cur = SENDING;
    bus_at(R, (double)offset + G * bytes, side, SEND_FINISHED);
}

/* The end of LogGP::request_read and LogGP::call: a free side with requests sends the next,
 * unless it has sent more than THRESHOLD in a row and its partner, which has not, has one. */
static void send_next(Replay *R, guint32 side)
{
    AstraLogGP *b = side_at(R, side);
    if (b->cur != FREE || b->sends.length == 0)
        return;
    AstraLogGP *p = side_at(R, partner(side));
    if (b->subsequent_reads > THRESHOLD && p->sends.length > 0 &&
        p->subsequent_reads <= THRESHOLD) {
        if (p->cur == FREE)
            bus_call(R, partner(side), GENERAL, NULL);
        return;
    }
    process_next_read(R, side);
}

/* LogGP::request_read (the request made). */
static void request_read(Replay *R, guint32 side, BusReq *req)
{
    AstraLogGP *b = side_at(R, side);
    if (has_npu_mem(side)) {
        wait_npu_mem(side, &b->pre_send, req, CONSIDER_SEND_BACK);
        npu_mem_send(R, side, FALSE, FALSE, req);
        return;
    }
    g_queue_push_tail(&b->sends, req);
    send_next(R, side);
}

/* Starts the reduction at the head of the processing queue (LogGP's Processing_Finished). */
static void start_processing(Replay *R, guint32 side)
{
    AstraLogGP *b = side_at(R, side);
    const BusReq *head = g_queue_peek_head(&b->processing);
    gint64 ns = (gint64)(head->size / 100) * R->cfg.local_reduction_delay + 50;
    if (ns > G_MAXINT32) {
        astra_fail(R,
                   g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                               "--semantics astra: the shared bus's reduction of %" G_GUINT64_FORMAT
                               " bytes takes more ns than the int ASTRA-sim computes it in "
                               "(local-reduction-delay %" G_GINT64_FORMAT ")",
                               head->size, R->cfg.local_reduction_delay));
        return;
    }
    bus_at(R, (double)ns, side, PROCESSING_FINISHED);
    b->processing_busy = TRUE;
}

/* What a side does with the request at the head of `from`, received or reduced: sends it back
 * when asked (through its own bus first, on the NPU side), else retires it, through its own bus
 * or at once (its callable called before it leaves the queue, as in ASTRA-sim). */
static void send_back_or_retire(Replay *R, guint32 side, GQueue *from)
{
    AstraLogGP *b = side_at(R, side);
    BusReq *r = g_queue_peek_head(from);
    gboolean mem = has_npu_mem(side);
    if (r->send_back) {
        r->send_back = FALSE;
        g_queue_pop_head(from);
        if (mem) {
            wait_npu_mem(side, &b->pre_send, r, CONSIDER_SEND_BACK);
            npu_mem_send(R, side, TRUE, TRUE, r);
        } else {
            g_queue_push_tail(&b->sends, r);
        }
    } else if (mem) {
        g_queue_pop_head(from);
        wait_npu_mem(side, &b->retirements, r, CONSIDER_RETIRE);
        npu_mem_send(R, side, TRUE, FALSE, r);
    } else {
        call_callable(R, r);
        g_free(g_queue_pop_head(from));
    }
}

/* LogGP::call. */
static void bus_call(Replay *R, guint32 side, int event, BusReq *talking)
{
    AstraLogGP *b = side_at(R, side);
    SsimTime now = ssim_engine_now(R->engine);
    gboolean mem = has_npu_mem(side);
    switch (event) {
    case SEND_FINISHED:
        b->last_trans = now;
        b->prev = b->cur;
        b->cur = FREE;
        b->subsequent_reads++;
        break;
    case REC_FINISHED: {
        BusReq *r = g_queue_peek_head(&b->receives);
        b->last_trans = now;
        b->prev = b->cur;
        if (b->receives.length < 2)
            b->cur = FREE;
        if (r->processed) {
            r->processed = FALSE;
            g_queue_pop_head(&b->receives);
            if (mem) {
                wait_npu_mem(side, &b->pre_process, r, CONSIDER_PROCESS);
                npu_mem_send(R, side, TRUE, TRUE, r);
            } else {
                g_queue_push_tail(&b->processing, r);
            }
            if (!b->processing_busy && b->processing.length > 0)
                start_processing(R, side);
        } else {
            send_back_or_retire(R, side, &b->receives);
        }
        break;
    }
    case PROCESSING_FINISHED:
        b->processing_busy = FALSE;
        send_back_or_retire(R, side, &b->processing);
        if (b->processing.length > 0)
            start_processing(R, side);
        break;
    case CONSIDER_RETIRE:
        call_callable(R, talking); /* before the request leaves the queue, as ASTRA-sim */
        g_queue_delete_link(&b->retirements, talking->link);
        g_free(talking);
        break;
    case CONSIDER_PROCESS:
        g_queue_delete_link(&b->pre_process, talking->link);
        g_queue_push_tail(&b->processing, talking);
        if (!b->processing_busy && b->processing.length > 0)
            start_processing(R, side);
        break;
    case CONSIDER_SEND_BACK:
        g_queue_delete_link(&b->pre_send, talking->link);
        g_queue_push_tail(&b->sends, talking);
        break;
    default: /* GENERAL */
        break;
    }
    send_next(R, side);
}

void astra_bus_build(Replay *R)
{
    /* Zeroed queues are empty ones (G_QUEUE_INIT). */
    if (R->cfg.shared_bus)
        R->bus = g_new0(AstraLogGP, (gsize)R->n_ranks * N_SIDES);
}

void astra_bus_send(Replay *R, guint32 sid, guint64 size, guint flags)
{
    if (size > G_MAXINT32) {
        astra_fail(R, g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                  "--semantics astra: a message of %" G_GUINT64_FORMAT
                                  " bytes on the shared bus (model-shared-bus 1), which takes a "
                                  "message's size as an int (ASTRA-sim wraps it)",
                                  size));
        return;
    }
    const Stream *s = g_ptr_array_index(R->streams, sid);
    BusReq *req = g_new0(BusReq, 1);
    req->size = size;
    req->processed = (flags & BUNDLE_PROCESS) != 0;
    req->send_back = (flags & BUNDLE_SEND_BACK) != 0;
    req->sid = sid;
    req->reduce = req->processed;
    request_read(R, s->rank * N_SIDES + (flags & BUNDLE_TO_MA ? SIDE_NPU : SIDE_MA), req);
}

void astra_on_bus(Replay *R, guint32 side, guint64 event)
{
    bus_call(R, side, (int)event, NULL);
}

void astra_bus_clear(Replay *R)
{
    for (guint i = 0; R->bus && i < R->n_ranks * N_SIDES; i++) {
        AstraLogGP *b = &R->bus[i];
        GQueue *all[] = {&b->sends,    &b->receives,    &b->processing,
                         &b->pre_send, &b->pre_process, &b->retirements};
        for (guint k = 0; k < G_N_ELEMENTS(all); k++)
            g_queue_clear_full(all[k], g_free);
    }
    g_clear_pointer(&R->bus, g_free);
}
