/*
 * The event engine: a binary min-heap over (time, sequence) with events drawn from a pool.
 *
 * The heap (src/core/heap.h) holds compact entries (time, sequence, pool slot) so sift
 * operations touch contiguous memory and compare two integers; the payload stays in the pool
 * slot.  Sequence numbers increase by one per scheduled event, so ties in time resolve in
 * scheduling order, as libuv's timers do, and (time, sequence) is the strict total order the
 * heap's determinism contract asks for.  Freed slots go on a free list, so after warm-up neither
 * schedule() nor the run loop allocates.
 *
 * Nothing is ever removed from the heap but its minimum: an event that a later schedule makes
 * pointless still fires and counts, and its handler recognises it through a ticket (engine.h),
 * which costs the loop nothing.
 *
 * Invariants: the heap's (every entry no earlier than its parent in (time, seq) order); every
 * slot is either in the heap exactly once or on the free list; now never decreases.
 */
#include <shiftsim/engine.h>

#include "src/core/heap.h"

typedef struct {
    SsimTime time;
    guint64 seq;
    guint32 slot;
} HeapEntry;

/* (time, seq) order, written without short-circuits so that the compiler can avoid branches:
 * which child is smaller is unpredictable, and a mispredicted branch costs more than both
 * compares. */
static inline int event_before(gpointer ctx, const HeapEntry *x, const HeapEntry *y)
{
    (void)ctx;
    return (x->time < y->time) | ((x->time == y->time) & (x->seq < y->seq));
}

SSIM_HEAP_DEFINE(EventHeap, event_heap, HeapEntry, gpointer, event_before, SSIM_HEAP_NO_POS)

typedef struct {
    guint64 a, b;
    guint32 type;
    guint32 next_free;
} Slot;

typedef struct {
    SsimEventFn fn;
    gpointer user_data;
} Handler;

struct SsimEngine {
    EventHeap heap;
    Slot *slots;
    gsize n_slots, cap_slots;
    guint32 free_head;
    Handler handlers[256];
    guint n_handlers;
    SsimTime now;
    guint64 next_seq;
    guint64 fired;
    guint64 current_seq;
    gboolean stopped; /* ssim_engine_stop() was called by the handler being run */
};

SsimEngine *ssim_engine_new(void)
{
    SsimEngine *e = g_new0(SsimEngine, 1);
    e->free_head = G_MAXUINT32;
    return e;
}

void ssim_engine_free(SsimEngine *e)
{
    if (e == NULL)
        return;
    event_heap_clear(&e->heap);
    g_free(e->slots);
    g_free(e);
}

guint ssim_engine_register(SsimEngine *e, SsimEventFn fn, gpointer user_data)
{
    g_return_val_if_fail(e->n_handlers < G_N_ELEMENTS(e->handlers), 0);
    e->handlers[e->n_handlers] = (Handler){fn, user_data};
    return e->n_handlers++;
}

void ssim_engine_reserve(SsimEngine *e, gsize n)
{
    event_heap_reserve(&e->heap, n);
    if (n > e->cap_slots) {
        e->slots = g_renew(Slot, e->slots, n);
        e->cap_slots = n;
    }
}

static guint32 slot_alloc(SsimEngine *e)
{
    if (e->free_head != G_MAXUINT32) {
        guint32 s = e->free_head;
        e->free_head = e->slots[s].next_free;
        return s;
    }
    if (e->n_slots == e->cap_slots) {
        gsize cap = e->cap_slots ? e->cap_slots * 2 : 1024;
        e->slots = g_renew(Slot, e->slots, cap);
        e->cap_slots = cap;
    }
    return (guint32)e->n_slots++;
}

guint64 ssim_engine_schedule(SsimEngine *e, SsimTime at, guint type, guint64 a, guint64 b)
{
    g_return_val_if_fail(at >= e->now, 0);
    g_return_val_if_fail(type < e->n_handlers, 0);
    guint32 s = slot_alloc(e);
    e->slots[s].a = a;
    e->slots[s].b = b;
    e->slots[s].type = type;
    guint64 seq = e->next_seq++;
    event_heap_push(&e->heap, (HeapEntry){at, seq, s}, NULL);
    return seq;
}

/* Pop, advance the clock, free the slot, dispatch: the whole loop (ROSS's shape). */
SsimEngineStop ssim_engine_run(SsimEngine *e, SsimTime until, guint64 max_events)
{
    guint64 budget = max_events;
    while (e->heap.n > 0) {
        if (e->heap.v[0].time > until)
            return SSIM_ENGINE_TIME_LIMIT;
        if (max_events != 0 && budget-- == 0)
            return SSIM_ENGINE_EVENT_BUDGET;
        HeapEntry top = event_heap_pop(&e->heap, NULL);
        Slot ev = e->slots[top.slot];
        e->slots[top.slot].next_free = e->free_head;
        e->free_head = top.slot;
        e->now = top.time;
        e->current_seq = top.seq;
        e->fired++;
        const Handler *h = &e->handlers[ev.type];
        h->fn(e, ev.a, ev.b, h->user_data);
        if (G_UNLIKELY(e->stopped)) {
            e->stopped = FALSE;
            return SSIM_ENGINE_STOPPED;
        }
    }
    return SSIM_ENGINE_EMPTY;
}

void ssim_engine_stop(SsimEngine *e)
{
    e->stopped = TRUE;
}

SsimTime ssim_engine_now(const SsimEngine *e)
{
    return e->now;
}

gsize ssim_engine_pending(const SsimEngine *e)
{
    return e->heap.n;
}

guint64 ssim_engine_fired(const SsimEngine *e)
{
    return e->fired;
}

guint64 ssim_engine_current_seq(const SsimEngine *e)
{
    return e->current_seq;
}

/* ---- tickets: superseded events (engine.h) ---- */

guint64 ssim_engine_schedule_ticket(SsimEngine *e, SsimEngineTicket *ticket, SsimTime at,
                                    guint type, guint64 a, guint64 b)
{
    guint64 seq = ssim_engine_schedule(e, at, type, a, b);
    *ticket = (SsimEngineTicket){at, seq};
    return seq;
}

guint64 ssim_engine_schedule_alarm(SsimEngine *e, SsimEngineTicket *ticket, SsimTime at, guint type,
                                   guint64 a, guint64 b)
{
    guint64 seq = ssim_engine_schedule(e, at, type, a, b);
    *ticket = (SsimEngineTicket){at, 0};
    return seq;
}

gboolean ssim_engine_ticket_take(const SsimEngine *e, SsimEngineTicket *ticket)
{
    if (e->now != ticket->at || e->current_seq < ticket->seq)
        return FALSE;
    *ticket = (SsimEngineTicket)SSIM_ENGINE_TICKET_INIT;
    return TRUE;
}
