/*
 * The discrete-event engine: a simulated clock and a binary min-heap of timed events.
 *
 * Events are ordered by (time, sequence), where the sequence number grows by one with every
 * event scheduled, so two events at the same instant fire in the order they were scheduled and a
 * run is deterministic.  Event records come from a pool with a free list: once the pool has grown
 * to the peak number of pending events, scheduling and firing allocate nothing.
 *
 * A handler is registered once and gets a small integer type; an event carries that type and two
 * 64-bit payload words.  Handlers may schedule further events, at or after the current time.
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
} SsimEngineStop;

/* Returns a new engine at time 0 that the caller owns. */
SsimEngine *ssim_engine_new(void);
void ssim_engine_free(SsimEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimEngine, ssim_engine_free)

/* Registers a handler and returns its event type (at most 255 handlers). */
guint ssim_engine_register(SsimEngine *engine, SsimEventFn fn, gpointer user_data);

/* Pre-sizes the pool for n pending events, so that a run never grows it. */
void ssim_engine_reserve(SsimEngine *engine, gsize n);

/* Schedules an event of the given type at time `at` (>= now) and returns its sequence number. */
guint64 ssim_engine_schedule(SsimEngine *engine, SsimTime at, guint type, guint64 a, guint64 b);

/*
 * Fires events in (time, sequence) order until none is left, the next one is later than `until`
 * (events at exactly `until` still fire), or `max_events` have fired in this call (0 = no budget).
 */
SsimEngineStop ssim_engine_run(SsimEngine *engine, SsimTime until, guint64 max_events);

SsimTime ssim_engine_now(const SsimEngine *engine);
gsize ssim_engine_pending(const SsimEngine *engine);
guint64 ssim_engine_fired(const SsimEngine *engine);
/* Sequence number of the event being fired (valid inside a handler). */
guint64 ssim_engine_current_seq(const SsimEngine *engine);

G_END_DECLS
