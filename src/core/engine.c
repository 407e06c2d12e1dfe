/*
 * The event engine: a min-heap over (time, sequence) of runs of events, drawn from a pool.
 *
 * The heap holds compact entries (time, sequence and pool slot in one word) so sift operations
 * touch contiguous memory and compare two integers; the payload stays in the pool slot.  Sequence
 * numbers increase by one per scheduled event, so ties in time resolve in scheduling order, as
 * libuv's timers do, and (time, sequence) is the strict total order the heap's determinism contract
 * asks for.  Freed slots go on a free list, so after warm-up neither schedule() nor the run loop
 * allocates.
 *
 * The heap is the engine's own (not src/core/heap.h), shaped by what a simulation does with it:
 * - The fired event leaves the heap lazily.  While its handler runs it still sits at the top, and
 *   the handler's first schedule() takes its place in one sift (replace-top) instead of a pop and
 *   a push; only when the handler schedules nothing is the top popped afterwards.  A runtime op
 *   end usually starts the next op of its stream, so most events cost one sift, not two.  The
 *   new event is later than the fired one in (time, sequence) (time >= now and a larger
 *   sequence), so it may take the root's place.
 * - It is 4-ary, half the depth of a binary heap (what counts when an exact run's hundred
 *   thousand pending events leave the caches), and every sift from the root is bottom-up
 *   (Floyd): the hole walks down to a leaf along the earliest children, three compares a level
 *   and none against the new element, which then climbs back from the leaf, a level or so since
 *   a newly scheduled event is later than most pending ones.  Each level asks for the sixteen
 *   grandchildren (four lines) before it compares the children, so in a heap deeper than the
 *   caches the next level's line is on its way (measured: a third less time an event with a
 *   hundred thousand pending, nothing lost with a few hundred).
 * - (time, sequence) is compared as one 128-bit unsigned key where the compiler has one (time is
 *   never negative), which is a compare and a subtract-with-borrow, no branch.
 * Any correct priority queue pops the same sequence, since the order is total: these choices
 * change the cost, never the order (each run's first event is no later than the rest of it, and
 * the heap orders the first events).
 *
 * - Events due at the same instant queue behind one another in runs.  A replicated run (exact
 *   mode) fires almost every event at the instant of the one before (the copies of an op end
 *   together: 98% of the 1024-GPU step's 53 M events), so a heap of events would sift each of
 *   them.  An event scheduled at a time that a pending run has joins that run's tail in O(1): its
 *   sequence number is the largest yet, so a run stays in (time, sequence) order, and the heap
 *   holds only each run's first event.  When that one fires, the run's next takes its place at
 *   the root with a top-down sift that stops at once when it is still the earliest (the usual
 *   case).  A small table of run tails, direct-mapped by time, finds the run; a tail that fired
 *   (or whose slot was freed and reused) is no longer a tail, which the table sees from the
 *   slot's sequence number, and the event starts a run of its own.
 * Nothing is ever removed from the heap but its minimum: an event that a later schedule makes
 * pointless still fires and counts, and its handler recognises it through a ticket (engine.h),
 * which costs the loop nothing.
 *
 * Invariants: the heap's (every entry no earlier than its parent in (time, seq) order); every
 * pending slot is either referenced by a heap entry other than a fired top (the first of its
 * run) or linked from the slot before it in its run (same time, smaller sequence), and every
 * other slot is on the free list (sequence number FREED); now never decreases; `top_fired` only
 * inside a handler, and then v[0] is the event being fired.
 */
#include <shiftsim/engine.h>

/*
 * A heap entry is 16 bytes, so four siblings share one cache line: the time, and a tag that packs
 * the sequence number above the pool slot.  Sequence numbers are unique, so (time, tag) orders
 * exactly as (time, sequence).  The price is two limits, both far beyond any run: 2^24 (16.7 M)
 * events pending at once (ssim_engine_set_max_pending() may set a lower cap), and 2^40 (1.1
 * million million) events scheduled by one engine.  A schedule() past either drops the event and
 * marks the engine overflowed; the run stops once the handler returns (SSIM_ENGINE_OVERFLOW) and
 * the caller reports it as an error, never a result.
 */
#define SLOT_BITS 24
#define MAX_SLOTS ((gsize)1 << SLOT_BITS)
#define MAX_SEQ   ((guint64)1 << (64 - SLOT_BITS))

typedef struct {
    SsimTime time;
    guint64 tag; /* seq << SLOT_BITS | slot */
} HeapEntry;

/* (time, tag) order, without a branch: as one 128-bit key where there is such a type (time is
 * never negative), else written without short-circuits (which child is earlier is unpredictable,
 * and a mispredicted branch costs more than both compares). */
static inline gboolean event_before(const HeapEntry *x, const HeapEntry *y)
{
#ifdef __SIZEOF_INT128__
    __extension__ typedef unsigned __int128 Key;
    Key kx = ((Key)(guint64)x->time << 64) | x->tag, ky = ((Key)(guint64)y->time << 64) | y->tag;
    return kx < ky;
#else
    return (x->time < y->time) | ((x->time == y->time) & (x->tag < y->tag));
#endif
}

typedef struct {
    guint64 a, b;
    guint64 seq; /* its sequence number while pending, FREED on the free list */
    guint32 type;
    guint32 next; /* free: the next free slot; pending: the next event of its run, or NONE */
} Slot;

#define FREED G_MAXUINT64 /* no event's sequence number (they stay below MAX_SEQ) */
#define NONE  G_MAXUINT32

/* The tail of a run: valid while slot `slot` holds sequence number `seq` (time -1: unused). */
typedef struct {
    SsimTime time;
    guint64 seq;
    guint32 slot;
} RunTail;

#define RUN_TAILS 64

typedef struct {
    SsimEventFn fn;
    gpointer user_data;
} Handler;

struct SsimEngine {
    HeapEntry *v; /* the heap: v[0] the minimum when n > 0 */
    gsize n, cap;
    gboolean top_fired; /* v[0] is the event being fired, not yet replaced or popped */
    Slot *slots;
    gsize n_slots, cap_slots;
    gsize max_slots; /* the cap on pending events: MAX_SLOTS unless set lower */
    guint32 free_head;
    gsize n_pending; /* events scheduled and not yet fired */
    RunTail tails[RUN_TAILS];
    Handler handlers[256];
    guint n_handlers;
    SsimTime now;
    guint64 next_seq;
    guint64 fired;
    guint64 current_seq;
    gboolean stopped;  /* ssim_engine_stop() was called by the handler being run */
    gboolean overflow; /* a schedule() was dropped: past max_slots pending or MAX_SEQ scheduled */
};

SsimEngine *ssim_engine_new(void)
{
    SsimEngine *e = g_new0(SsimEngine, 1);
    e->free_head = G_MAXUINT32;
    e->max_slots = MAX_SLOTS;
    for (guint k = 0; k < RUN_TAILS; k++)
        e->tails[k].time = -1;
    return e;
}

void ssim_engine_free(SsimEngine *e)
{
    if (e == NULL)
        return;
    g_free(e->v);
    g_free(e->slots);
    g_free(e);
}

guint ssim_engine_register(SsimEngine *e, SsimEventFn fn, gpointer user_data)
{
    g_return_val_if_fail(e->n_handlers < G_N_ELEMENTS(e->handlers), 0);
    e->handlers[e->n_handlers] = (Handler){fn, user_data};
    return e->n_handlers++;
}

static void heap_reserve(SsimEngine *e, gsize n)
{
    if (n > e->cap) {
        e->v = g_renew(HeapEntry, e->v, n);
        e->cap = n;
    }
}

void ssim_engine_set_max_pending(SsimEngine *e, gsize n)
{
    g_return_if_fail(n > 0);
    e->max_slots = MIN(n, MAX_SLOTS);
}

gsize ssim_engine_max_pending(const SsimEngine *e)
{
    return e->max_slots;
}

gboolean ssim_engine_overflowed(const SsimEngine *e)
{
    return e->overflow;
}

void ssim_engine_reserve(SsimEngine *e, gsize n)
{
    n = MIN(n, e->max_slots);
    heap_reserve(e, n);
    if (n > e->cap_slots) {
        e->slots = g_renew(Slot, e->slots, n);
        e->cap_slots = n;
    }
}

/* The heap is 4-ary: node i's children are 4i + 1 .. 4i + 4 and its parent (i - 1) / 4.  Half
 * the levels of a binary heap, which matters when the heap is deep (an exact run keeps a hundred
 * thousand events pending) and its lower levels leave the caches: four children are adjacent. */
#define ARITY 4

/* Places x, which belongs at or above the hole i, moving later parents down. */
static inline void place_up(HeapEntry *v, gsize i, HeapEntry x)
{
    while (i > 0) {
        gsize parent = (i - 1) / ARITY;
        if (!event_before(&x, &v[parent]))
            break;
        v[i] = v[parent];
        i = parent;
    }
    v[i] = x;
}

/* The earliest of the four children from c, without a branch. */
static inline gsize earliest_of_four(const HeapEntry *v, gsize c)
{
    gsize a = c + (gsize)event_before(&v[c + 1], &v[c]);
    gsize b = c + 2 + (gsize)event_before(&v[c + 3], &v[c + 2]);
    return event_before(&v[b], &v[a]) ? b : a;
}

/* Fills the hole at the root of the heap v[0..n) with x (Floyd's bottom-up sift): the hole walks
 * down along the earliest child to a leaf, then x climbs back to its place. */
static inline void place_root(HeapEntry *v, gsize n, HeapEntry x)
{
    gsize i = 0, c;
    while ((c = ARITY * i + 1) + ARITY <= n) {
#if defined(__GNUC__) || defined(__clang__)
        /* The sixteen grandchildren, one of whose groups of four is read next: four lines. */
        const HeapEntry *g = &v[ARITY * c + 1];
        __builtin_prefetch(g);
        __builtin_prefetch(g + 4);
        __builtin_prefetch(g + 8);
        __builtin_prefetch(g + 12);
#endif
        gsize m = earliest_of_four(v, c);
        v[i] = v[m];
        i = m;
    }
    if (c < n) { /* the last node with children has fewer than four */
        gsize m = c;
        for (gsize k = c + 1; k < n; k++)
            if (event_before(&v[k], &v[m]))
                m = k;
        v[i] = v[m];
        i = m;
    }
    place_up(v, i, x);
}

/* Puts x, no earlier than the root it replaces, at the root and moves it down top-down, stopping
 * as soon as no child is earlier (at once when x is still the earliest: a run's next event). */
static inline void sift_root_down(HeapEntry *v, gsize n, HeapEntry x)
{
    gsize i = 0, c;
    while ((c = ARITY * i + 1) < n) {
        gsize m = c;
        if (c + ARITY <= n) {
            m = earliest_of_four(v, c);
        } else {
            for (gsize k = c + 1; k < n; k++)
                if (event_before(&v[k], &v[m]))
                    m = k;
        }
        if (!event_before(&v[m], &x))
            break;
        v[i] = v[m];
        i = m;
    }
    v[i] = x;
}

/* Removes the fired top: the last entry fills the root's hole. */
static inline void pop_fired(SsimEngine *e)
{
    e->top_fired = FALSE;
    HeapEntry last = e->v[--e->n];
    if (e->n > 0)
        place_root(e->v, e->n, last);
}

/* A free pool slot, or G_MAXUINT32 when max_slots events are pending. */
static guint32 slot_alloc(SsimEngine *e)
{
    if (e->free_head != G_MAXUINT32) {
        guint32 s = e->free_head;
        e->free_head = e->slots[s].next;
        return s;
    }
    if (G_UNLIKELY(e->n_slots >= e->max_slots))
        return G_MAXUINT32;
    if (e->n_slots == e->cap_slots) {
        gsize cap = MIN(e->cap_slots ? e->cap_slots * 2 : 1024, e->max_slots);
        e->slots = g_renew(Slot, e->slots, cap);
        e->cap_slots = cap;
    }
    return (guint32)e->n_slots++;
}

guint64 ssim_engine_schedule(SsimEngine *e, SsimTime at, guint type, guint64 a, guint64 b)
{
    g_return_val_if_fail(at >= e->now, 0);
    g_return_val_if_fail(type < e->n_handlers, 0);
    guint32 s = G_LIKELY(e->next_seq < MAX_SEQ) ? slot_alloc(e) : G_MAXUINT32;
    if (G_UNLIKELY(s == G_MAXUINT32)) { /* dropped: the run stops after this handler */
        e->overflow = TRUE;
        return e->next_seq;
    }
    guint64 seq = e->next_seq++;
    e->slots[s] = (Slot){.a = a, .b = b, .seq = seq, .type = type, .next = NONE};
    e->n_pending++;
    /* A pending run of the same instant takes it at its tail (see the top of the file); a tail
     * that fired holds FREED, or another sequence number once its slot is reused. */
    RunTail *t = &e->tails[((guint64)at * 0x9e3779b97f4a7c15u) >> 58];
    if (t->time == at && e->slots[t->slot].seq == t->seq) {
        e->slots[t->slot].next = s;
        t->slot = s;
        t->seq = seq;
        return seq;
    }
    *t = (RunTail){at, seq, s};
    HeapEntry x = {at, seq << SLOT_BITS | s};
    if (e->top_fired) { /* x comes after the fired event, so it may take the root's place */
        e->top_fired = FALSE;
        place_root(e->v, e->n, x);
        return seq;
    }
    if (G_UNLIKELY(e->n == e->cap))
        heap_reserve(e, e->cap ? 2 * e->cap : 64);
    place_up(e->v, e->n++, x);
    return seq;
}

/* Take the top, advance the clock, free the slot, dispatch; the top leaves the heap when the
 * handler's first schedule() replaces it, or after the handler (see the top of the file). */
SsimEngineStop ssim_engine_run(SsimEngine *e, SsimTime until, guint64 max_events)
{
    guint64 budget = max_events;
    if (G_UNLIKELY(e->overflow))
        return SSIM_ENGINE_OVERFLOW;
    while (e->n > 0) {
        HeapEntry top = e->v[0];
        if (top.time > until)
            return SSIM_ENGINE_TIME_LIMIT;
        if (max_events != 0 && budget-- == 0)
            return SSIM_ENGINE_EVENT_BUDGET;
        guint32 slot = (guint32)(top.tag & (MAX_SLOTS - 1));
        Slot ev = e->slots[slot];
        if (ev.next != NONE) { /* the run's next event takes the root, before the handler runs */
            HeapEntry x = {top.time, e->slots[ev.next].seq << SLOT_BITS | ev.next};
            sift_root_down(e->v, e->n, x);
            e->top_fired = FALSE;
        } else {
            e->top_fired = TRUE;
        }
        e->slots[slot].seq = FREED;
        e->slots[slot].next = e->free_head;
        e->free_head = slot;
        e->n_pending--;
        e->now = top.time;
        e->current_seq = top.tag >> SLOT_BITS;
        e->fired++;
        const Handler *h = &e->handlers[ev.type];
        h->fn(e, ev.a, ev.b, h->user_data);
        if (e->top_fired)
            pop_fired(e);
        if (G_UNLIKELY(e->stopped | e->overflow)) {
            if (e->overflow)
                return SSIM_ENGINE_OVERFLOW;
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
    return e->n_pending;
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
