/*
 * The schedule registry and what every schedule shares: construction, the final numbering and
 * the invariant check, and the in-flight count used by the memory estimate.
 *
 * After a builder has filled the lists, finish() verifies that each stage holds every
 * (microbatch, chunk) forward once and its backward once, later than the forward (bubble slots
 * aside), and for lock-step schedules that all stages have the same number of slots.  A
 * violation is a programming error in a builder and trips an assertion; impossible parameters
 * are reported to the caller through GError before any builder runs.
 */
#include "src/workload/schedule-private.h"

#include <string.h>

typedef gboolean (*BuildFn)(SsimSchedule *schedule, GError **error);

static const struct {
    const char *name;
    const char *summary;
    BuildFn build;
} registry[] = {
#define SSIM_X(e, s, f, d) [SSIM_SCHEDULE_##e] = {s, d, ssim_schedule_build_##f},
    SSIM_SCHEDULE_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_schedule_kind_name(SsimScheduleKind kind)
{
    g_return_val_if_fail(kind < SSIM_SCHEDULE_N, "?");
    return registry[kind].name;
}

const char *ssim_schedule_kind_summary(SsimScheduleKind kind)
{
    g_return_val_if_fail(kind < SSIM_SCHEDULE_N, "?");
    return registry[kind].summary;
}

gboolean ssim_schedule_kind_from_name(const char *name, SsimScheduleKind *out)
{
    for (guint i = 0; i < SSIM_SCHEDULE_N; i++) {
        if (name != NULL && g_ascii_strcasecmp(name, registry[i].name) == 0) {
            *out = (SsimScheduleKind)i;
            return TRUE;
        }
    }
    return FALSE;
}

char *ssim_schedule_kind_list(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < SSIM_SCHEDULE_N; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", registry[i].name);
    return g_string_free(s, FALSE);
}

void sched_push(SsimSchedule *schedule, guint stage, SsimPhaseDir dir, guint chunk, guint32 micro,
                guint32 iter)
{
    g_assert(stage < schedule->pp && chunk < schedule->v);
    SsimPhase ph = {.dir = (guint8)dir, .chunk = (guint16)chunk, .micro = micro, .iter = iter};
    g_array_append_val(schedule->stages[stage], ph);
}

/* Numbers the slots, marks each chunk's last backward and checks the invariants. */
static void finish(SsimSchedule *s)
{
    gboolean lockstep = ssim_schedule_is_lockstep(s);
    guint n_pairs = s->m * s->v;
    g_autofree guint8 *seen = g_new(guint8, n_pairs);
    for (guint st = 0; st < s->pp; st++) {
        GArray *a = s->stages[st];
        memset(seen, 0, n_pairs);
        for (guint i = 0; i < a->len; i++) {
            SsimPhase *ph = &g_array_index(a, SsimPhase, i);
            if (!lockstep)
                ph->iter = i;
            if (ph->micro == SSIM_NONE) {
                g_assert(lockstep);
                continue;
            }
            g_assert(ph->micro < s->m);
            guint k = ph->chunk * s->m + ph->micro;
            if (ph->dir == SSIM_PHASE_FWD) {
                g_assert(seen[k] == 0);
                seen[k] = 1;
            } else {
                g_assert(seen[k] == 1);
                seen[k] = 2;
            }
        }
        for (guint k = 0; k < n_pairs; k++)
            g_assert(seen[k] == 2);
        for (guint c = 0; c < s->v; c++) {
            for (guint i = a->len; i-- > 0;) {
                SsimPhase *ph = &g_array_index(a, SsimPhase, i);
                if (ph->dir == SSIM_PHASE_BWD && ph->chunk == c && ph->micro != SSIM_NONE) {
                    ph->last = TRUE;
                    break;
                }
            }
        }
        if (lockstep)
            g_assert(a->len == s->stages[0]->len);
    }
}

SsimSchedule *ssim_schedule_new(SsimScheduleKind kind, guint pp, guint v, guint m, GError **error)
{
    g_return_val_if_fail(kind < SSIM_SCHEDULE_N, NULL);
    const char *name = registry[kind].name;
    if (pp < 1 || v < 1 || m < 1) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "schedule: %s needs pp, v and microbatches >= 1 (got pp %u, v %u, m %u)", name,
                    pp, v, m);
        return NULL;
    }
    if (kind != SSIM_SCHEDULE_INTERLEAVED && v != 1) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "schedule: %s runs one model chunk per GPU but v = %u (use interleaved)", name,
                    v);
        return NULL;
    }
    if (kind == SSIM_SCHEDULE_INTERLEAVED && (pp < 2 || m % pp != 0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "schedule: interleaved needs pp >= 2 and microbatches %% pp == 0 "
                    "(got pp %u, m %u)",
                    pp, m);
        return NULL;
    }
    g_autoptr(SsimSchedule) s = g_new0(SsimSchedule, 1);
    s->kind = kind;
    s->pp = pp;
    s->v = v;
    s->m = m;
    s->stages = g_new0(GArray *, pp);
    for (guint i = 0; i < pp; i++)
        s->stages[i] = g_array_sized_new(FALSE, FALSE, sizeof(SsimPhase), 2 * (m * v + pp));
    if (!registry[kind].build(s, error))
        return NULL;
    finish(s);
    return g_steal_pointer(&s);
}

void ssim_schedule_free(SsimSchedule *schedule)
{
    if (schedule == NULL)
        return;
    for (guint i = 0; i < schedule->pp && schedule->stages; i++)
        if (schedule->stages[i])
            g_array_free(schedule->stages[i], TRUE);
    g_free(schedule->stages);
    g_free(schedule);
}

SsimScheduleKind ssim_schedule_kind(const SsimSchedule *schedule)
{
    return schedule->kind;
}

guint ssim_schedule_pp(const SsimSchedule *schedule)
{
    return schedule->pp;
}

guint ssim_schedule_v(const SsimSchedule *schedule)
{
    return schedule->v;
}

guint ssim_schedule_m(const SsimSchedule *schedule)
{
    return schedule->m;
}

gboolean ssim_schedule_is_lockstep(const SsimSchedule *schedule)
{
    return schedule->kind == SSIM_SCHEDULE_XLA;
}

gboolean ssim_schedule_kind_has_programs(SsimScheduleKind kind)
{
    return kind == SSIM_SCHEDULE_ALPA || kind == SSIM_SCHEDULE_ALPA_GPIPE;
}

gboolean ssim_schedule_has_programs(const SsimSchedule *schedule)
{
    return ssim_schedule_kind_has_programs(schedule->kind);
}

const SsimPhase *ssim_schedule_phases(const SsimSchedule *schedule, guint stage, guint *n)
{
    g_return_val_if_fail(stage < schedule->pp, NULL);
    GArray *a = schedule->stages[stage];
    *n = a->len;
    return (const SsimPhase *)a->data;
}

guint ssim_schedule_virtual_stage(const SsimSchedule *schedule, guint stage, guint chunk)
{
    return chunk * schedule->pp + stage;
}

guint ssim_schedule_in_flight(const SsimSchedule *schedule, guint stage)
{
    guint n, alive = 0, peak = 0;
    const SsimPhase *ph = ssim_schedule_phases(schedule, stage, &n);
    for (guint i = 0; i < n; i++) {
        if (ph[i].micro == SSIM_NONE)
            continue;
        if (ph[i].dir == SSIM_PHASE_FWD) {
            alive++;
            peak = MAX(peak, alive);
        } else {
            alive--;
        }
    }
    return peak;
}
