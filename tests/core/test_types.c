/*
 * Units (types.h): saturating time arithmetic, the conversion from seconds, message excerpts; and
 * the runtime's time boundary built on them: a cost or an end that is not a finite simulated
 * time fails the run with SSIM_RUN_ERROR_TIME naming the op, never wraps into a false deadlock.
 */
#include "tests/test_common.h"

#include <math.h>
#include <string.h>

Test(types, time_add_saturates_instead_of_wrapping)
{
    cr_assert_eq(ssim_time_add(1, 2), 3);
    cr_assert_eq(ssim_time_add(SSIM_TIME_NEVER - 5, 5), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_add(SSIM_TIME_NEVER - 5, 6), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_add(SSIM_TIME_NEVER, SSIM_TIME_NEVER), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_add(INT64_MIN, -1), INT64_MIN);
    cr_assert_eq(ssim_time_mul(3, 4), 12);
    cr_assert_eq(ssim_time_mul(SSIM_TIME_NEVER / 2, 3), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_mul(0, G_MAXUINT64), 0);
    cr_assert_eq(ssim_time_mul(1, G_MAXUINT64), SSIM_TIME_NEVER);
    cr_assert(ssim_time_is_finite(0));
    cr_assert(ssim_time_is_finite(SSIM_TIME_NEVER - 1));
    cr_assert_not(ssim_time_is_finite(SSIM_TIME_NEVER));
    cr_assert_not(ssim_time_is_finite(-1));
}

Test(types, seconds_and_scaling_map_the_unrepresentable_to_never)
{
    cr_assert_eq(ssim_time_from_seconds(1.5e-9), 2);
    cr_assert_eq(ssim_time_from_seconds(-3), 0);
    cr_assert_eq(ssim_time_from_seconds(NAN), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_from_seconds(INFINITY), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_from_seconds(1e300), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_scale(1000, 1.5), 1500);
    cr_assert_eq(ssim_time_scale(SSIM_TIME_NEVER / 2, 4.0), SSIM_TIME_NEVER);
    cr_assert_eq(ssim_time_scale(10, NAN), SSIM_TIME_NEVER);
}

Test(types, excerpts_bound_what_a_message_quotes)
{
    g_autofree char *big = g_strnfill(100000, 'x');
    g_autofree char *e = ssim_text_excerpt(big, 64);
    cr_assert(g_str_has_suffix(e, "... (99936 more bytes)"), "%s", e);
    g_autofree char *ctl = ssim_text_excerpt("a\nb\tc", 64);
    cr_assert_str_eq(ctl, "a?b?c");
    /* Never cut inside a UTF-8 sequence: "é" is two bytes. */
    g_autofree char *utf = ssim_text_excerpt("aé", 2);
    cr_assert_str_eq(utf, "a... (2 more bytes)");
    GError *error = g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s", big);
    ssim_error_truncate(error);
    cr_assert_lt(strlen(error->message), SSIM_MESSAGE_MAX + 64);
    cr_assert(strstr(error->message, "more bytes)"));
    g_error_free(error);
}

/* A cost model that prices op `bad` at `cost` and everything else at 1 us. */
typedef struct {
    guint32 bad;
    SsimTime cost;
} OddCost;

static SsimTime odd_time(const SsimCostModel *m, const SsimGraph *g, guint32 op, guint n)
{
    (void)g;
    (void)n;
    const OddCost *c = m->data;
    return op == c->bad ? c->cost : SSIM_US;
}

static GError *run_fails(SsimGraph *g, const SsimCostModel *m)
{
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    SsimTimeline *t = ssim_runtime_run(g, m, NULL, &error);
    cr_assert_null(t, "the run succeeded with a makespan of %" G_GINT64_FORMAT " ns",
                   t ? t->makespan : 0);
    cr_assert_not_null(error);
    return error;
}

/* A cost of "no finite time" (what ssim_time_from_seconds gives a tiny bandwidth, an infinite or
 * NaN duration) is refused with the op and its inputs. */
/* The one byte-size grammar (types.h, docs/units.md): SI is 10^3k, IEC 2^10k, both with and
 * without B; read exactly, in integers. */
Test(types, byte_sizes_si_and_iec)
{
    const struct {
        const char *text;
        guint64 bytes;
    } good[] = {
        {"0", 0},
        {"4096", 4096},
        {"4096B", 4096},
        {"40k", 40000},
        {"40K", 40000},
        {"40kB", 40000},
        {"40KB", 40000},
        {"40Ki", 40960},
        {"40ki", 40960},
        {"40KiB", 40960},
        {"40M", 40000000},
        {"40MB", 40000000},
        {"40Mi", 41943040},
        {"40MiB", 41943040},
        {"16G", 16000000000ULL},
        {"16GiB", 17179869184ULL},
        {"2T", 2000000000000ULL},
        {"2Ti", 2199023255552ULL},
        {"1P", 1000000000000000ULL},
        {"1Pi", 1125899906842624ULL},
        {"1.5GiB", 1610612736ULL},
        {"1.5GB", 1500000000ULL},
        {"0.1GB", 100000000ULL}, /* exact: 0.1 * 1e9 in doubles is not */
        {"0.5KB", 500},
        {"1.000B", 1},
        {"007M", 7000000},
        {"18446744073709551615", G_MAXUINT64},
        {"15Ei", 15ULL << 60},
        {"18E", 18000000000000000000ULL},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        guint64 v = 1;
        g_autoptr(GError) error = NULL;
        cr_assert(ssim_bytes_read(good[i].text, &v, &error), "%s: %s", good[i].text,
                  error ? error->message : "");
        cr_expect_eq(v, good[i].bytes, "%s: %" G_GUINT64_FORMAT, good[i].text, v);
        cr_expect(ssim_bytes_parse(good[i].text, &v) && v == good[i].bytes, "%s", good[i].text);
    }
    const struct {
        const char *text;
        const char *why; /* part of the message */
    } bad[] = {
        {"40X", "unknown unit 'X'"},
        {"40MX", "unknown unit 'MX'"},
        {"40mb", "unknown unit 'mb'"}, /* lower-case b is bits, m milli */
        {"40Mib", "unknown unit 'Mib'"},
        {"40 M", "unknown unit ' M'"},
        {"1e3", "unknown unit 'e3'"},
        {"0x10", "unknown unit 'x10'"},
        {"-1M", "cannot be negative"},
        {"-0", "cannot be negative"},
        {"+5", "does not start with a digit"},
        {" 5", "does not start with a digit"},
        {"MiB", "does not start with a digit"},
        {"nan", "does not start with a digit"},
        {"", "empty"},
        {"1.", "digits after"},
        {"1..5", "digits after it"},
        {"0.5B", "not a whole number of bytes"},
        {"1.1KiB", "not a whole number of bytes"},
        {"18446744073709551616", "past the largest size"},
        {"16Ei", "past the largest size"},
        {"19E", "past the largest size"},
        {"20000000Ti", "past the largest size"},
        {"99999999999999999999999K", "past the largest size"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        guint64 v = 7;
        g_autoptr(GError) error = NULL;
        cr_assert_not(ssim_bytes_read(bad[i].text, &v, &error), "'%s' accepted", bad[i].text);
        cr_expect_eq(v, 7, "%s: the output changed on an error", bad[i].text);
        cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE));
        cr_expect(strstr(error->message, bad[i].why) != NULL, "'%s': %s", bad[i].text,
                  error->message);
        cr_expect(strstr(error->message, "is not a byte size") != NULL, "%s", error->message);
        cr_expect_not(ssim_bytes_parse(bad[i].text, &v), "%s", bad[i].text);
    }
    cr_assert_not(ssim_bytes_read(NULL, &(guint64){0}, NULL));
}

Test(types, runtime_refuses_a_cost_that_is_not_a_finite_time)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 a = t_compute(g, 0, "compute", -1, NULL, 0);
    guint32 grp = t_group(g, "tp", 2, 0, 1);
    t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 1 << 20, &a, 1);
    t_coll(g, 1, "comm", grp, SSIM_COLL_ALLREDUCE, 1 << 20, NULL, 0);
    OddCost c = {1, SSIM_TIME_NEVER};
    SsimCostModel m = {odd_time, &c, FALSE};
    g_autoptr(GError) error = run_fails(g, &m);
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME), "%s", error->message);
    cr_assert(strstr(error->message, "op 1 "), "%s", error->message);
    cr_assert(strstr(error->message, "1048576 bytes"), "%s", error->message);
    cr_assert(strstr(error->message, "no finite cost"), "%s", error->message);
    cr_assert_null(strstr(error->message, "deadlock"), "%s", error->message);
}

/* Two ops of 2^62 ns on one stream: each cost is finite, the second end is not; it used to wrap
 * negative (UBSan) and be reported as a deadlock. */
Test(types, runtime_refuses_an_end_past_the_range)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    SsimTime half = (SsimTime)1 << 62;
    guint32 a = t_compute(g, 0, "compute", half, NULL, 0);
    t_compute(g, 0, "compute", half, &a, 1);
    g_autoptr(GError) error = run_fails(g, NULL);
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME), "%s", error->message);
    cr_assert(strstr(error->message, "op 1 "), "%s", error->message);
    cr_assert(strstr(error->message, "292 years"), "%s", error->message);
}

/* Under interference the scaled end saturates too (scaled() used llround on the product). */
Test(types, interference_cannot_overflow_an_end)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 2, 0, 1);
    t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 1, NULL, 0);
    t_coll(g, 1, "comm", grp, SSIM_COLL_ALLREDUCE, 1, NULL, 0);
    t_compute(g, 0, "compute", ((SsimTime)1 << 62) + 7, NULL, 0);
    OddCost c = {G_MAXUINT32, 0};
    SsimCostModel m = {odd_time, &c, FALSE};
    SsimRunConfig rc = SSIM_RUN_CONFIG_INIT;
    rc.cost = &m;
    rc.overlap_slowdown = 3.0;
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error));
    SsimTimeline *t = ssim_runtime_run_config(g, &rc, &error);
    cr_assert_null(t);
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME), "%s",
              error ? error->message : "");
    g_error_free(error);
}
