/*
 * The discrete-event engine: a simulated clock and a priority queue of timed events (a 4-ary
 * min-heap of runs of events due at the same instant; src/core/engine.c).
 *
 * Events are ordered by (time, sequence), where the sequence number grows by one with every
 * event scheduled, so two events at the same instant fire in the order they were scheduled and a
 * run is deterministic.  Event records come from a pool with a free list: once the pool has grown
 * to the peak number of pending events, scheduling and firing allocate nothing.
 *
 * A handler is registered once and gets a small integer type; an event carries that type and two
 * 64-bit payload words.  Handlers may schedule further events, at or after the current time.
 *
 * Superseded events: one idiom, the ticket.  A scheduled event cannot be taken back.  An owner
 * whose plans change (a compute op whose end moves when its speed changes, a wake-up that must
 * come earlier) schedules the new event and keeps a SsimEngineTicket naming the one event that
 * still counts; the handler starts with ssim_engine_ticket_take(), which is TRUE exactly once,
 * for that event, and FALSE for every superseded one, which then returns without doing anything.
 *
 *   A ticket is a time and a sequence number.  The event being fired is live when it fires at the
 *   ticket's time and was scheduled no earlier than the ticket's sequence number; taking it
 *   disarms the ticket (time SSIM_TIME_NEVER), so nothing else is live until it is armed again.
 *   There are two ways to arm it, which differ only when two of the owner's events fall due at
 *   the same instant:
 *   - ssim_engine_schedule_ticket(): the new event supersedes every event scheduled before it
 *     under the ticket, one due at the same time included; only the newest is live.
 *   - ssim_engine_schedule_alarm(): a wake-up without payload, which the owner only ever moves
 *     earlier: any of its events due at the ticket's time will do, and the first to fire serves
 *     it (sequence number 0).
 *   The runtime's compute ends use the first, the network's wake-ups the second.  Either rule
 *   fixes where, among the events of one instant, the owner's work happens, so results depend on
 *   it; neither owner can switch without reordering work within an instant.
 *
 * Why tickets rather than an explicit cancel (a dead mark on the pool slot, skipped on pop): a
 * cancel needs a way back from a sequence number to its heap entry or a check in the loop for
 * every event, and a skipped event would either drop out of ssim_engine_fired() and the event
 * budget or have to be counted anyway.  A ticket costs the owner two words and its handler two
 * compares; the loop stays pop, advance, dispatch, without allocation, and every event counts.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

typedef struct SsimEngine SsimEngine;

typedef void (*SsimEventFn)(SsimEngine *engine, guint64 a, guint64 b, gpointer user_data);

typedef enum {
    SSIM_ENGINE_EMPTY,        /* no event left */
    SSIM_ENGINE_TIME_LIMIT,   /* the next event lies beyond the time limit */
    SSIM_ENGINE_EVENT_BUDGET, /* the event budget is spent */
    SSIM_ENGINE_STOPPED,      /* a handler called ssim_engine_stop() */
    SSIM_ENGINE_OVERFLOW,     /* a schedule() found the engine full (see below); final */
} SsimEngineStop;

/* Returns a new engine at time 0 that the caller owns. */
SsimEngine *ssim_engine_new(void);
void ssim_engine_free(SsimEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimEngine, ssim_engine_free)

/* Registers a handler and returns its event type (at most 255 handlers). */
guint ssim_engine_register(SsimEngine *engine, SsimEventFn fn, gpointer user_data);

/* Pre-sizes the pool for n pending events, so that a run never grows it. */
void ssim_engine_reserve(SsimEngine *engine, gsize n);

/*
 * The engine holds at most 2^24 (16.7 M) events pending at once, or n if set lower (n > 0), and
 * schedules at most 2^40 events in its life.  A schedule() past either limit drops its event and
 * marks the engine overflowed: ssim_engine_run() returns SSIM_ENGINE_OVERFLOW once the handler
 * that scheduled returns (at once if it was called outside a handler), and every later call
 * returns it again.  The caller reports an error; nothing the run computed is a result.
 */
void ssim_engine_set_max_pending(SsimEngine *engine, gsize n);
gsize ssim_engine_max_pending(const SsimEngine *engine);
gboolean ssim_engine_overflowed(const SsimEngine *engine);

/* Schedules an event of the given type at time `at` (>= now, and a finite time: below
 * SSIM_TIME_NEVER; callers add durations with ssim_time_add() and refuse a saturated end) and
 * returns its sequence number. */
guint64 ssim_engine_schedule(SsimEngine *engine, SsimTime at, guint type, guint64 a, guint64 b);

/*
 * Fires events in (time, sequence) order until none is left, the next one is later than `until`
 * (events at exactly `until` still fire), or `max_events` have fired in this call (0 = no budget).
 */
SsimEngineStop ssim_engine_run(SsimEngine *engine, SsimTime until, guint64 max_events);

/* From a handler: ssim_engine_run() returns SSIM_ENGINE_STOPPED once the handler returns (the
 * pending events stay pending).  For a run that found it cannot go on (a cost out of range). */
void ssim_engine_stop(SsimEngine *engine);

SsimTime ssim_engine_now(const SsimEngine *engine);
gsize ssim_engine_pending(const SsimEngine *engine);
guint64 ssim_engine_fired(const SsimEngine *engine);
/* Sequence number of the event being fired (valid inside a handler). */
guint64 ssim_engine_current_seq(const SsimEngine *engine);

/* The live event of an owner that re-schedules (see the top); SSIM_ENGINE_TICKET_INIT: none. */
typedef struct {
    SsimTime at; /* when the live event fires; SSIM_TIME_NEVER when none is pending */
    guint64 seq; /* the first sequence number that may serve it */
} SsimEngineTicket;

#define SSIM_ENGINE_TICKET_INIT                                                                    \
    {                                                                                              \
        SSIM_TIME_NEVER, 0                                                                         \
    }

/*
 * Schedules an event as ssim_engine_schedule() does and makes it the ticket's only live event:
 * every event scheduled before it under the ticket is superseded.  Returns its sequence number.
 */
guint64 ssim_engine_schedule_ticket(SsimEngine *engine, SsimEngineTicket *ticket, SsimTime at,
                                    guint type, guint64 a, guint64 b);

/*
 * Schedules a wake-up as ssim_engine_schedule() does and arms the ticket for time `at`: the first
 * of the ticket's events to fire at `at` serves it, whenever it was scheduled.  For payload-free
 * events that the owner only moves earlier.  Returns the new event's sequence number.
 */
guint64 ssim_engine_schedule_alarm(SsimEngine *engine, SsimEngineTicket *ticket, SsimTime at,
                                   guint type, guint64 a, guint64 b);

/*
 * Inside a handler: TRUE when the event being fired is the ticket's live one, and then disarms
 * the ticket; FALSE for a superseded event (or a disarmed ticket), leaving the ticket as it is.
 */
gboolean ssim_engine_ticket_take(const SsimEngine *engine, SsimEngineTicket *ticket);

G_END_DECLS
