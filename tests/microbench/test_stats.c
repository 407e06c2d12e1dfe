/*
 * shiftsim-bench's arithmetic: sample statistics (stats.c), nccl-tests' bus-bandwidth factors
 * and size bookkeeping (collective.c), and the list-option parsers (sizes.c).  Oracles are
 * values worked out by hand and nccl-tests' published formulas (doc/PERFORMANCE.md).
 */
#include <criterion/criterion.h>

#include "src/microbench/collective.h"
#include "src/microbench/sizes.h"
#include "src/microbench/stats.h"

#include <shiftsim/types.h>

#include <math.h>
#include <string.h>

#define EPS 1e-9

Test(microbench, stats_odd_count)
{
    const double s[] = {3.0, 1.0, 2.0};
    SsimBenchStats st;
    cr_assert(ssim_bench_stats_compute(s, 3, &st));
    cr_expect_eq(st.samples, 3);
    cr_expect_float_eq(st.mean, 2.0, EPS);
    cr_expect_float_eq(st.median, 2.0, EPS);
    cr_expect_float_eq(st.min, 1.0, EPS);
    cr_expect_float_eq(st.max, 3.0, EPS);
    cr_expect_float_eq(st.stddev, 1.0, EPS); /* sum of squares 2, divided by n - 1 = 2 */
    /* The caller's order is untouched. */
    cr_expect(s[0] == 3.0 && s[1] == 1.0 && s[2] == 2.0);
}

Test(microbench, stats_even_count)
{
    const double s[] = {4.0, 1.0, 3.0, 2.0, 10.0, 10.0};
    SsimBenchStats st;
    cr_assert(ssim_bench_stats_compute(s, 6, &st));
    cr_expect_float_eq(st.mean, 5.0, EPS);
    cr_expect_float_eq(st.median, 3.5, EPS); /* (3 + 4) / 2 */
    cr_expect_float_eq(st.min, 1.0, EPS);
    cr_expect_float_eq(st.max, 10.0, EPS);
    /* deviations -4 -1 -2 -3 5 5: squares 16+1+4+9+25+25 = 80, / 5 = 16 */
    cr_expect_float_eq(st.stddev, 4.0, EPS);
}

Test(microbench, stats_single_and_large_offset)
{
    const double one = 612.5;
    SsimBenchStats st;
    cr_assert(ssim_bench_stats_compute(&one, 1, &st));
    cr_expect(st.mean == 612.5 && st.median == 612.5 && st.min == 612.5 && st.stddev == 0.0);
    const double big[] = {1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0};
    cr_assert(ssim_bench_stats_compute(big, 3, &st));
    cr_expect_float_eq(st.stddev, 1.0, 1e-6);
    cr_expect_float_eq(st.median, 1e9 + 2.0, EPS);
}

Test(microbench, stats_rejects_empty_and_nan)
{
    SsimBenchStats st;
    cr_expect_not(ssim_bench_stats_compute(NULL, 0, &st));
    const double bad[] = {1.0, NAN};
    cr_expect_not(ssim_bench_stats_compute(bad, 2, &st));
    cr_expect_eq(st.samples, 0);
    const double inf[] = {INFINITY};
    cr_expect_not(ssim_bench_stats_compute(inf, 1, &st));
}

Test(microbench, busbw_factors)
{
    /* nccl-tests: allreduce 2(n-1)/n, allgather / reducescatter / alltoall (n-1)/n, others 1. */
    for (unsigned n = 1; n <= 16; n++) {
        double f = (n - 1.0) / n;
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_ALLREDUCE, n), 2 * f, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_ALLGATHER, n), f, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_REDUCESCATTER, n), f, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_ALLTOALL, n), f, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_BROADCAST, n), 1.0, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_REDUCE, n), 1.0, EPS);
        cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_SENDRECV, n), 1.0, EPS);
    }
    cr_expect_float_eq(ssim_bench_busbw_factor(SSIM_BENCH_COLL_ALLREDUCE, 8), 1.75, EPS);
    /* 1 GB allreduce on 8 ranks in 10 ms: algbw 100 GB/s, busbw 175 GB/s. */
    cr_expect_float_eq(ssim_bench_algbw(1000000000, 0.01), 1e11, 1.0);
    cr_expect_float_eq(ssim_bench_busbw(SSIM_BENCH_COLL_ALLREDUCE, 8, 1000000000, 0.01), 1.75e11,
                       1.0);
    cr_expect_eq(ssim_bench_algbw(1000, 0.0), 0.0);
}

Test(microbench, coll_sizes)
{
    SsimBenchCollSizes s;
    /* allreduce: the whole vector on every rank. */
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_ALLREDUCE, 1024, 8, 2, &s), 0);
    cr_expect(s.count == 512 && s.size == 1024 && s.send_bytes == 1024 && s.recv_bytes == 1024);
    /* allgather: size is the output; each rank contributes size / n. */
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_ALLGATHER, 1024, 8, 2, &s), 0);
    cr_expect(s.count == 64 && s.size == 1024 && s.send_bytes == 128 && s.recv_bytes == 1024);
    /* reducescatter: size is the input; each rank keeps size / n. */
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_REDUCESCATTER, 1024, 8, 2, &s), 0);
    cr_expect(s.count == 64 && s.size == 1024 && s.send_bytes == 1024 && s.recv_bytes == 128);
    /* alltoall: count elements to each peer. */
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_ALLTOALL, 1024, 8, 2, &s), 0);
    cr_expect(s.count == 64 && s.size == 1024 && s.send_bytes == 1024 && s.recv_bytes == 1024);
    /* Rounded down to whole elements per rank: 1000 B over 8 ranks of bf16 = 62 each. */
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_ALLGATHER, 1000, 8, 2, &s), 0);
    cr_expect(s.count == 62 && s.size == 992);
    /* Too small for one element per rank: skipped. */
    cr_expect_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_ALLGATHER, 8, 8, 2, &s), -1);
    cr_expect_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_SENDRECV, 1, 2, 2, &s), -1);
    cr_assert_eq(ssim_bench_coll_sizes(SSIM_BENCH_COLL_SENDRECV, 8, 2, 2, &s), 0);
    cr_expect(s.count == 4 && s.size == 8);
}

Test(microbench, names)
{
    SsimBenchColl c;
    SsimBenchDtype d;
    cr_expect(ssim_bench_coll_from_name("ReduceScatter", &c) && c == SSIM_BENCH_COLL_REDUCESCATTER);
    cr_expect_not(ssim_bench_coll_from_name("gather", &c));
    cr_expect(ssim_bench_dtype_from_name("fp16", &d) && d == SSIM_BENCH_FP16);
    cr_expect_not(ssim_bench_dtype_from_name("fp8", &d));
    cr_expect_str_eq(ssim_bench_coll_name(SSIM_BENCH_COLL_SENDRECV), "sendrecv");
    cr_expect_str_eq(ssim_bench_memop_name(SSIM_BENCH_MEMOP_ADAM), "adam");
    cr_expect_eq(ssim_bench_dtype_size(SSIM_BENCH_BF16), 2);
}

static GArray *sizes_ok(const char *text)
{
    g_autoptr(GError) error = NULL;
    GArray *a = ssim_bench_parse_size_list(text, &error);
    cr_assert_not_null(a, "\"%s\": %s", text, error != NULL ? error->message : "?");
    return a;
}

Test(microbench, sizes_powers_of_two)
{
    g_autoptr(GArray) a = sizes_ok("8:8Gi");
    cr_assert_eq(a->len, 31); /* 2^3 .. 2^33 */
    for (guint i = 0; i < a->len; i++)
        cr_expect_eq(g_array_index(a, guint64, i), G_GUINT64_CONSTANT(8) << i);
    g_autoptr(GArray) b = sizes_ok("4Ki:4Gi:4");
    cr_assert_eq(b->len, 11);
    cr_expect_eq(g_array_index(b, guint64, 10), G_GUINT64_CONSTANT(4) << 30);
    /* A maximum off the progression stops below it. */
    g_autoptr(GArray) c = sizes_ok("1:10");
    cr_assert_eq(c->len, 4);
    cr_expect_eq(g_array_index(c, guint64, 3), 8);
}

Test(microbench, sizes_lists_suffixes_duplicates)
{
    g_autoptr(GArray) a = sizes_ok(" 1Ki, 1024 ,512:2Ki,3,8KiB,2KiB,1MiB,1Ti ");
    const guint64 want[] = {3, 512, 1024, 2048, 8192, 1 << 20, G_GUINT64_CONSTANT(1) << 40};
    cr_assert_eq(a->len, G_N_ELEMENTS(want));
    for (guint i = 0; i < a->len; i++)
        cr_expect_eq(g_array_index(a, guint64, i), want[i], "item %u", i);
    guint64 v;
    cr_assert(ssim_bench_parse_size("16B", &v, NULL));
    cr_expect_eq(v, 16);
    /* The one grammar (docs/units.md): K, M, G are powers of 1000 here as everywhere. */
    cr_assert(ssim_bench_parse_size("8M", &v, NULL));
    cr_expect_eq(v, 8000000);
    cr_assert(ssim_bench_parse_size(" 8Mi ", &v, NULL));
    cr_expect_eq(v, 8u << 20);
    g_autoptr(GArray) si = sizes_ok("1K:8K");
    cr_assert_eq(si->len, 4); /* 1000, 2000, 4000, 8000 */
    cr_expect_eq(g_array_index(si, guint64, 3), 8000);
}

static void size_error(const char *text, const char *part)
{
    g_autoptr(GError) error = NULL;
    GArray *a = ssim_bench_parse_size_list(text, &error);
    cr_assert_null(a, "\"%s\" accepted", text);
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE));
    cr_expect(strstr(error->message, part) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", text,
              error->message, part);
}

Test(microbench, sizes_errors)
{
    size_error("", "empty");
    size_error("x", "'x' is not a byte size");
    size_error("8:x", "\"8:x\": 'x' is not a byte size");
    size_error("0", "must be positive");
    size_error("8:4", "minimum is above its maximum");
    size_error("8:8Gi:1", "factor must be an integer from 2");
    size_error("8:8Gi:x", "factor must be an integer from 2");
    size_error("1:2:3:4", "min:max or min:max:factor");
    size_error("8Q", "unknown unit 'Q'");
    size_error("8kb", "unknown unit 'kb'");
    size_error("99999999999999999999", "past the largest size");
    size_error("20000000T", "past the largest size");
    size_error("1K,,2K", "empty item");
    size_error("-8", "cannot be negative");
}

Test(microbench, uint_and_name_lists)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) a = ssim_bench_parse_uint_list("8, 4,8,1", 4096, &error);
    cr_assert_not_null(a);
    cr_assert_eq(a->len, 3);
    cr_expect(g_array_index(a, guint, 0) == 8 && g_array_index(a, guint, 1) == 4 &&
              g_array_index(a, guint, 2) == 1);
    const char *bad[] = {"", "0", "1,,2", "x", "3.5", "5000", "-1"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_clear_error(&error);
        cr_expect_null(ssim_bench_parse_uint_list(bad[i], 4096, &error), "\"%s\"", bad[i]);
        cr_expect(error != NULL && strstr(error->message, "is not an integer from 1 to 4096"));
    }
    const char *const allowed[] = {"gemm", "comm", "copy", NULL};
    g_clear_error(&error);
    g_auto(GStrv) names = ssim_bench_parse_name_list(" GEMM,copy,gemm", allowed, &error);
    cr_assert_not_null(names);
    cr_expect(g_strv_length(names) == 2 && strcmp(names[0], "gemm") == 0 &&
              strcmp(names[1], "copy") == 0);
    cr_expect_null(ssim_bench_parse_name_list("gemm,gpu", allowed, &error));
    cr_expect_str_eq(error->message, "\"gpu\" is not one of gemm, comm, copy");
}
