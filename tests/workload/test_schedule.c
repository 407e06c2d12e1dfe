/*
 * Pipeline schedules against hand-written phase lists (from the papers' figures and Megatron-LM's
 * loop bounds), the in-flight counts the memory estimate uses, the registry, and every message
 * for an impossible combination.
 */
#include <criterion/criterion.h>

#include <shiftsim/schedule.h>

#include <string.h>

typedef struct {
    char dir; /* 'F', 'B' or '-' (bubble slot) */
    guint chunk, micro;
} Want;

static SsimSchedule *build(SsimScheduleKind kind, guint p, guint v, guint m)
{
    GError *error = NULL;
    SsimSchedule *s = ssim_schedule_new(kind, p, v, m, &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    return s;
}

static void expect(const SsimSchedule *s, guint stage, const Want *want, guint n_want)
{
    guint n;
    const SsimPhase *ph = ssim_schedule_phases(s, stage, &n);
    cr_assert_eq(n, n_want, "stage %u has %u phases, want %u", stage, n, n_want);
    for (guint i = 0; i < n; i++) {
        if (want[i].dir == '-') {
            cr_assert_eq(ph[i].micro, SSIM_NONE, "stage %u slot %u should be a bubble", stage, i);
            continue;
        }
        cr_assert_eq(ph[i].dir, want[i].dir == 'F' ? SSIM_PHASE_FWD : SSIM_PHASE_BWD,
                     "stage %u slot %u direction", stage, i);
        cr_assert_eq(ph[i].chunk, want[i].chunk, "stage %u slot %u chunk %u want %u", stage, i,
                     ph[i].chunk, want[i].chunk);
        cr_assert_eq(ph[i].micro, want[i].micro, "stage %u slot %u micro %u want %u", stage, i,
                     ph[i].micro, want[i].micro);
    }
}

Test(schedule, gpipe_order)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_GPIPE, 3, 1, 3);
    const Want w[] = {{'F', 0, 0}, {'F', 0, 1}, {'F', 0, 2}, {'B', 0, 0}, {'B', 0, 1}, {'B', 0, 2}};
    for (guint st = 0; st < 3; st++)
        expect(s, st, w, G_N_ELEMENTS(w));
}

Test(schedule, one_f_one_b_order)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_1F1B, 3, 1, 4);
    /* Stage 0 warms up with p - 1 = 2 forwards; the last stage alternates from the start. */
    const Want w0[] = {{'F', 0, 0}, {'F', 0, 1}, {'F', 0, 2}, {'B', 0, 0},
                       {'F', 0, 3}, {'B', 0, 1}, {'B', 0, 2}, {'B', 0, 3}};
    const Want w1[] = {{'F', 0, 0}, {'F', 0, 1}, {'B', 0, 0}, {'F', 0, 2},
                       {'B', 0, 1}, {'F', 0, 3}, {'B', 0, 2}, {'B', 0, 3}};
    const Want w2[] = {{'F', 0, 0}, {'B', 0, 0}, {'F', 0, 1}, {'B', 0, 1},
                       {'F', 0, 2}, {'B', 0, 2}, {'F', 0, 3}, {'B', 0, 3}};
    expect(s, 0, w0, G_N_ELEMENTS(w0));
    expect(s, 1, w1, G_N_ELEMENTS(w1));
    expect(s, 2, w2, G_N_ELEMENTS(w2));
}

Test(schedule, one_f_one_b_fewer_microbatches_than_stages)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_1F1B, 4, 1, 2);
    const Want w0[] = {{'F', 0, 0}, {'F', 0, 1}, {'B', 0, 0}, {'B', 0, 1}};
    expect(s, 0, w0, G_N_ELEMENTS(w0));
}

Test(schedule, interleaved_order)
{
    /* p = 2, v = 2, m = 4: stage 0 warms up with 2 (p-1) + (v-1) p = 4 forwards; microbatches
     * go through the chunks in groups of p. */
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_INTERLEAVED, 2, 2, 4);
    const Want w0[] = {{'F', 0, 0}, {'F', 0, 1}, {'F', 1, 0}, {'F', 1, 1}, {'F', 0, 2}, {'B', 1, 0},
                       {'F', 0, 3}, {'B', 1, 1}, {'F', 1, 2}, {'B', 0, 0}, {'F', 1, 3}, {'B', 0, 1},
                       {'B', 1, 2}, {'B', 1, 3}, {'B', 0, 2}, {'B', 0, 3}};
    /* Stage 1 warms up with (v-1) p = 2. */
    const Want w1[] = {{'F', 0, 0}, {'F', 0, 1}, {'F', 1, 0}, {'B', 1, 0}, {'F', 1, 1}, {'B', 1, 1},
                       {'F', 0, 2}, {'B', 0, 0}, {'F', 0, 3}, {'B', 0, 1}, {'F', 1, 2}, {'B', 1, 2},
                       {'F', 1, 3}, {'B', 1, 3}, {'B', 0, 2}, {'B', 0, 3}};
    expect(s, 0, w0, G_N_ELEMENTS(w0));
    expect(s, 1, w1, G_N_ELEMENTS(w1));
    cr_assert_eq(ssim_schedule_virtual_stage(s, 1, 1), 3);
}

Test(schedule, interleaved_all_warmup_when_m_equals_p)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_INTERLEAVED, 2, 2, 2);
    const Want w1[] = {{'F', 0, 0}, {'F', 0, 1}, {'F', 1, 0}, {'F', 1, 1},
                       {'B', 1, 0}, {'B', 1, 1}, {'B', 0, 0}, {'B', 0, 1}};
    expect(s, 1, w1, G_N_ELEMENTS(w1));
}

Test(schedule, xla_lockstep_slots)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_XLA, 2, 1, 2);
    cr_assert(ssim_schedule_is_lockstep(s));
    /* m + p - 1 = 3 iterations each way; stage s computes microbatch i - s going forward and
     * i - (p - 1 - s) going backward. */
    const Want w0[] = {{'F', 0, 0}, {'F', 0, 1}, {'-', 0, 0},
                       {'-', 0, 0}, {'B', 0, 0}, {'B', 0, 1}};
    const Want w1[] = {{'-', 0, 0}, {'F', 0, 0}, {'F', 0, 1},
                       {'B', 0, 0}, {'B', 0, 1}, {'-', 0, 0}};
    expect(s, 0, w0, G_N_ELEMENTS(w0));
    expect(s, 1, w1, G_N_ELEMENTS(w1));
    guint n;
    const SsimPhase *ph = ssim_schedule_phases(s, 1, &n);
    for (guint i = 0; i < n; i++)
        cr_assert_eq(ph[i].iter, i);
}

Test(schedule, last_backward_marked_once_per_chunk)
{
    g_autoptr(SsimSchedule) s = build(SSIM_SCHEDULE_INTERLEAVED, 4, 3, 8);
    for (guint st = 0; st < 4; st++) {
        guint n, marks[3] = {0};
        const SsimPhase *ph = ssim_schedule_phases(s, st, &n);
        cr_assert_eq(n, 2 * 8 * 3);
        for (guint i = 0; i < n; i++) {
            if (ph[i].last) {
                cr_assert_eq(ph[i].dir, SSIM_PHASE_BWD);
                marks[ph[i].chunk]++;
                /* No backward of the same chunk follows. */
                for (guint j = i + 1; j < n; j++)
                    cr_assert(!(ph[j].dir == SSIM_PHASE_BWD && ph[j].chunk == ph[i].chunk));
            }
        }
        for (guint c = 0; c < 3; c++)
            cr_assert_eq(marks[c], 1);
    }
}

Test(schedule, in_flight_counts)
{
    g_autoptr(SsimSchedule) gp = build(SSIM_SCHEDULE_GPIPE, 4, 1, 8);
    g_autoptr(SsimSchedule) ofob = build(SSIM_SCHEDULE_1F1B, 4, 1, 8);
    g_autoptr(SsimSchedule) il = build(SSIM_SCHEDULE_INTERLEAVED, 4, 2, 8);
    g_autoptr(SsimSchedule) xla = build(SSIM_SCHEDULE_XLA, 4, 1, 8);
    g_autoptr(SsimSchedule) short_1f1b = build(SSIM_SCHEDULE_1F1B, 4, 1, 2);
    for (guint st = 0; st < 4; st++) {
        cr_assert_eq(ssim_schedule_in_flight(gp, st), 8);
        cr_assert_eq(ssim_schedule_in_flight(xla, st), 8);
        cr_assert_eq(ssim_schedule_in_flight(ofob, st), 4 - st);
        cr_assert_eq(ssim_schedule_in_flight(short_1f1b, st), MIN(4 - st, 2u));
    }
    /* Korthikanti: v p + p - 1 = 11 chunk passes on stage 0 (capped at v m = 16). */
    cr_assert_eq(ssim_schedule_in_flight(il, 0), 11);
    /* Stage 3: 2 (p-1-3) + (v-1) p + 1 = 5. */
    cr_assert_eq(ssim_schedule_in_flight(il, 3), 5);
}

Test(schedule, registry_names)
{
    const char *names[] = {"gpipe", "xla", "1f1b", "interleaved"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        SsimScheduleKind k;
        cr_assert(ssim_schedule_kind_from_name(names[i], &k));
        cr_assert_str_eq(ssim_schedule_kind_name(k), names[i]);
        cr_assert(strlen(ssim_schedule_kind_summary(k)) > 10);
    }
    SsimScheduleKind k = SSIM_SCHEDULE_GPIPE;
    cr_assert_not(ssim_schedule_kind_from_name("zb-h1", &k));
    g_autofree char *list = ssim_schedule_kind_list();
    cr_assert_str_eq(list, "gpipe, xla, 1f1b, interleaved, alpa, alpa-gpipe");
}

static void expect_error(SsimScheduleKind kind, guint p, guint v, guint m, const char *needle)
{
    g_autoptr(GError) error = NULL;
    SsimSchedule *s = ssim_schedule_new(kind, p, v, m, &error);
    cr_assert_null(s);
    cr_assert_not_null(error);
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    cr_assert(strstr(error->message, needle), "'%s' lacks '%s'", error->message, needle);
}

Test(schedule, messages)
{
    expect_error(SSIM_SCHEDULE_1F1B, 0, 1, 4, "pp, v and microbatches >= 1");
    expect_error(SSIM_SCHEDULE_GPIPE, 2, 1, 0, "pp, v and microbatches >= 1");
    expect_error(SSIM_SCHEDULE_GPIPE, 2, 2, 4, "gpipe runs one model chunk per GPU but v = 2");
    expect_error(SSIM_SCHEDULE_XLA, 2, 3, 4, "xla runs one model chunk per GPU but v = 3");
    expect_error(SSIM_SCHEDULE_INTERLEAVED, 4, 2, 6, "microbatches % pp == 0 (got pp 4, m 6)");
    expect_error(SSIM_SCHEDULE_INTERLEAVED, 1, 2, 4, "pp >= 2");
}
