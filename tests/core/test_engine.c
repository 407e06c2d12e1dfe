/*
 * The event engine: firing order checked against an independent reference (a GSequence sorted
 * by (time, insertion order)) on random events with many ties, over few instants and over more
 * instants than the engine keeps run tails for, including events scheduled from inside handlers;
 * the time limit and the event budget; pool reuse; the two ways a ticket names the live one of an
 * owner's events.
 */
#include <criterion/criterion.h>
#include <shiftsim/engine.h>

typedef struct {
    SsimTime time;
    guint64 order; /* global insertion order: the tie-break the engine must reproduce */
    guint64 payload;
} Ref;

static gint ref_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    (void)data;
    const Ref *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->order < y->order ? -1 : (x->order > y->order);
}

typedef struct {
    GArray *fired; /* payloads in firing order */
    GSequence *ref;
    GRand *rng;
    guint64 order;
    guint type;
    guint spawn_left;
} Harness;

static void schedule_both(SsimEngine *e, Harness *h, SsimTime at, guint64 payload)
{
    ssim_engine_schedule(e, at, h->type, payload, 0);
    Ref *r = g_new(Ref, 1);
    *r = (Ref){at, h->order++, payload};
    g_sequence_insert_sorted(h->ref, r, ref_cmp, NULL);
}

static void on_event(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Harness *h = user;
    g_array_append_val(h->fired, a);
    /* Some events schedule more, at now or later: the engine must keep the order. */
    if (h->spawn_left > 0 && g_rand_int_range(h->rng, 0, 3) == 0) {
        h->spawn_left--;
        SsimTime at = ssim_engine_now(e) + g_rand_int_range(h->rng, 0, 4);
        schedule_both(e, h, at, 1000000 + h->spawn_left);
    }
}

/* Instants: 50 (hundreds of ties each, one run each) or 5000 (more instants than the engine's
 * table of run tails: runs of one instant split, and a tail that fired stays in the table while
 * other events of its instant fire and free their slots). */
static void check_against_reference(gint32 instants, guint spawns)
{
    for (guint32 seed = 1; seed <= 5; seed++) {
        g_autoptr(SsimEngine) e = ssim_engine_new();
        Harness h = {g_array_new(FALSE, FALSE, sizeof(guint64)),
                     g_sequence_new(g_free),
                     g_rand_new_with_seed(seed),
                     0,
                     0,
                     spawns};
        h.type = ssim_engine_register(e, on_event, &h);
        for (guint i = 0; i < 20000; i++)
            schedule_both(e, &h, g_rand_int_range(h.rng, 0, instants), i);
        cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_EMPTY);

        /* Everything scheduled, spawned events included, entered the reference in the order
         * it was scheduled; the engine must have fired exactly the reference's order. */
        cr_assert_eq(h.fired->len, (guint)g_sequence_get_length(h.ref));
        GSequenceIter *it = g_sequence_get_begin_iter(h.ref);
        for (guint i = 0; i < h.fired->len; i++, it = g_sequence_iter_next(it)) {
            const Ref *r = g_sequence_get(it);
            cr_assert_eq(g_array_index(h.fired, guint64, i), r->payload,
                         "seed %u: event %u fired payload %" G_GUINT64_FORMAT
                         ", expected %" G_GUINT64_FORMAT,
                         seed, i, g_array_index(h.fired, guint64, i), r->payload);
        }
        cr_assert_eq(ssim_engine_fired(e), h.fired->len);
        g_array_unref(h.fired);
        g_sequence_free(h.ref);
        g_rand_free(h.rng);
    }
}

Test(engine, order_matches_gsequence_reference_with_ties)
{
    check_against_reference(50, 3000); /* ~400 ties per instant */
}

Test(engine, order_matches_reference_over_many_instants)
{
    check_against_reference(5000, 15000);
}

static void count(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)e, (void)a, (void)b;
    (*(guint *)user)++;
}

Test(engine, time_limit_and_event_budget)
{
    g_autoptr(SsimEngine) e = ssim_engine_new();
    guint n = 0;
    guint t = ssim_engine_register(e, count, &n);
    for (SsimTime at = 0; at < 10; at++)
        ssim_engine_schedule(e, at * 100, t, 0, 0);
    /* Events at exactly `until` fire. */
    cr_assert_eq(ssim_engine_run(e, 300, 0), SSIM_ENGINE_TIME_LIMIT);
    cr_assert_eq(n, 4);
    cr_assert_eq(ssim_engine_now(e), 300);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 2), SSIM_ENGINE_EVENT_BUDGET);
    cr_assert_eq(n, 6);
    cr_assert_eq(ssim_engine_pending(e), 4);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_EMPTY);
    cr_assert_eq(n, 10);
    cr_assert_eq(ssim_engine_now(e), 900);
}

typedef struct {
    SsimEngine *e;
    guint type;
    guint left;
} Chain;

static void chain(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Chain *c = user;
    if (c->left-- > 0)
        ssim_engine_schedule(e, ssim_engine_now(e) + (SsimTime)a, c->type, a, 0);
}

Test(engine, handlers_schedule_at_now_and_later)
{
    g_autoptr(SsimEngine) e = ssim_engine_new();
    Chain c = {e, 0, 1000};
    c.type = ssim_engine_register(e, chain, &c);
    ssim_engine_schedule(e, 0, c.type, 7, 0);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_EMPTY);
    cr_assert_eq(ssim_engine_fired(e), 1001);
    cr_assert_eq(ssim_engine_now(e), 7000);
    cr_assert_eq(ssim_engine_pending(e), 0);
}

/*
 * Tickets (engine.h): an owner's events log whether they were live ("+") or superseded ("-");
 * other events log "x".  Both arming modes are checked where they differ: two of the owner's
 * events due at one instant with another event between them.
 */
typedef struct {
    SsimEngineTicket ticket;
    guint ev_owner;
    gboolean alarm;
    GString *log;
} Owner;

static void owner_event(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)b;
    Owner *o = user;
    gboolean live = ssim_engine_ticket_take(e, &o->ticket);
    g_string_append_printf(o->log, "%c%s ", (char)a, live ? "+" : "-");
    if (live && o->alarm && a == 'B') /* re-arm for 10, where A is still pending */
        ssim_engine_schedule_alarm(e, &o->ticket, 10, o->ev_owner, 'C', 0);
}

static void other_event(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)e, (void)a, (void)b;
    g_string_append(((Owner *)user)->log, "x ");
}

static void plan_event(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)a, (void)b;
    Owner *o = user;
    if (!o->alarm) {
        /* Two re-schedules: the last one wins, even at the time of the first event. */
        ssim_engine_schedule_ticket(e, &o->ticket, 30, o->ev_owner, 'M', 0);
        ssim_engine_schedule_ticket(e, &o->ticket, 10, o->ev_owner, 'B', 0);
    } else if (5 < o->ticket.at) {
        ssim_engine_schedule_alarm(e, &o->ticket, 5, o->ev_owner, 'B', 0);
    }
}

static void run_owner(gboolean alarm, const char *want)
{
    g_autoptr(SsimEngine) e = ssim_engine_new();
    Owner o = {SSIM_ENGINE_TICKET_INIT, 0, alarm, g_string_new(NULL)};
    o.ev_owner = ssim_engine_register(e, owner_event, &o);
    guint ev_other = ssim_engine_register(e, other_event, &o);
    guint ev_plan = ssim_engine_register(e, plan_event, &o);
    if (alarm)
        ssim_engine_schedule_alarm(e, &o.ticket, 10, o.ev_owner, 'A', 0);
    else
        ssim_engine_schedule_ticket(e, &o.ticket, 10, o.ev_owner, 'A', 0);
    ssim_engine_schedule(e, 10, ev_other, 0, 0);
    ssim_engine_schedule(e, alarm ? 2 : 5, ev_plan, 0, 0);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_EMPTY);
    cr_assert_str_eq(o.log->str, want);
    /* Superseded events fire and count like any other. */
    cr_assert_eq(ssim_engine_fired(e), 5);
    cr_assert_eq(o.ticket.at, SSIM_TIME_NEVER);
    g_string_free(o.log, TRUE);
}

Test(engine, ticket_makes_the_newest_schedule_the_live_event)
{
    /* A (10) is superseded by M (30), then by B (10): A fires first but B is the live one. */
    run_owner(FALSE, "A- x B+ M- ");
}

Test(engine, alarm_is_served_by_the_first_event_at_its_time)
{
    /* A (10) is superseded by B (5); B re-arms for 10 with C, and A, already due then, serves
     * the alarm before the other event; C finds it served. */
    run_owner(TRUE, "B+ A+ x C- ");
}

/*
 * The fired event leaves the heap lazily (engine.c): the handler's first schedule takes its place,
 * or it is popped after the handler.  Seen from a handler, pending() never counts the event being
 * fired, whether the handler schedules nothing, one event or several; a stop after scheduling
 * keeps what was scheduled, and the run resumes in order.
 */
typedef struct {
    guint type;
    GArray *log;     /* (payload, pending before, pending after) per fired event */
    guint64 stop_at; /* payload whose handler stops the run */
} Lazy;

static void lazy_event(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    Lazy *l = user;
    guint64 before = ssim_engine_pending(e);
    for (guint64 k = 0; k < b; k++) /* b new events, at now and later, that schedule nothing */
        ssim_engine_schedule(e, ssim_engine_now(e) + (SsimTime)k, l->type, 100 * a + k, 0);
    guint64 row[3] = {a, before, ssim_engine_pending(e)};
    g_array_append_vals(l->log, row, 3);
    if (a == l->stop_at)
        ssim_engine_stop(e);
}

static void fan_out(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)a;
    (void)b;
    guint type = *(guint *)user;
    ssim_engine_schedule(e, ssim_engine_now(e) + 1, type, 0, 0);
    ssim_engine_schedule(e, ssim_engine_now(e) + 1, type, 0, 0);
}

/* Past the cap on pending events the engine drops the event and stops after the handler: each
 * event schedules two, so with a cap of 4 the pending count goes 1, 2, 3, 4, and the fourth
 * event's second schedule overflows; nothing fires after, whatever the later calls. */
Test(engine, overflow_stops_the_run)
{
    g_autoptr(SsimEngine) e = ssim_engine_new();
    guint type = 0;
    type = ssim_engine_register(e, fan_out, &type);
    ssim_engine_set_max_pending(e, 4);
    cr_assert_eq(ssim_engine_max_pending(e), 4);
    ssim_engine_schedule(e, 0, type, 0, 0);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_OVERFLOW);
    cr_assert(ssim_engine_overflowed(e));
    cr_assert_eq(ssim_engine_fired(e), 4);
    cr_assert_eq(ssim_engine_pending(e), 4);
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_OVERFLOW);
    cr_assert_eq(ssim_engine_fired(e), 4);

    /* Outside a handler: the fifth schedule is dropped and run() fires nothing. */
    g_autoptr(SsimEngine) f = ssim_engine_new();
    type = ssim_engine_register(f, fan_out, &type);
    ssim_engine_set_max_pending(f, 4);
    for (int i = 0; i < 5; i++)
        ssim_engine_schedule(f, i, type, 0, 0);
    cr_assert_eq(ssim_engine_pending(f), 4);
    cr_assert_eq(ssim_engine_run(f, SSIM_TIME_NEVER, 0), SSIM_ENGINE_OVERFLOW);
    cr_assert_eq(ssim_engine_fired(f), 0);
}

Test(engine, fired_event_is_never_pending_and_replaced_in_order)
{
    g_autoptr(SsimEngine) e = ssim_engine_new();
    Lazy l = {0, g_array_new(FALSE, FALSE, sizeof(guint64)), 2};
    l.type = ssim_engine_register(e, lazy_event, &l);
    ssim_engine_schedule(e, 10, l.type, 1, 0); /* schedules nothing */
    ssim_engine_schedule(e, 20, l.type, 2, 1); /* one event at 20, then stops */
    ssim_engine_schedule(e, 30, l.type, 3, 3); /* three events: 30, 31, 32 */
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_STOPPED);
    cr_assert_eq(ssim_engine_pending(e), 2); /* 200 at 20 and 3 at 30 */
    cr_assert_eq(ssim_engine_run(e, SSIM_TIME_NEVER, 0), SSIM_ENGINE_EMPTY);
    static const guint64 want[][3] = {{1, 2, 2},   {2, 1, 2},   {200, 1, 1}, {3, 0, 3},
                                      {300, 2, 2}, {301, 1, 1}, {302, 0, 0}};
    cr_assert_eq(l.log->len, 3 * G_N_ELEMENTS(want));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++)
        for (guint j = 0; j < 3; j++)
            cr_assert_eq(g_array_index(l.log, guint64, 3 * i + j), want[i][j], "event %u field %u",
                         i, j);
    cr_assert_eq(ssim_engine_now(e), 32);
    g_array_unref(l.log);
}
