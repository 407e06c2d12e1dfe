/*
 * The profile and raw CSV writers (src/microbench/csvout.c) and the run that feeds them
 * (run.c): byte-exact text for a small case, RFC 4180 quoting, number formatting, the version
 * strings of the metadata, and the driver version parsed from /proc/driver/nvidia/version.
 */
#include <criterion/criterion.h>

#include "src/microbench/csvout.h"
#include "src/microbench/run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const meta[] = {
    "gpu", "NVIDIA H200", "sm_count", "132", "driver", "570.86.15", "note", "two\nlines", NULL,
};

Test(microbench, csv_profile_byte_exact)
{
    g_autoptr(GString) out = g_string_new(NULL);
    ssim_bench_csv_begin(out, meta);
    SsimBenchRow gemm = {"gemm", "fwd.qkv", "bf16", 4096, 12288, 4096, 1, 0, 1, 1, NULL};
    SsimBenchStats st = {
        .samples = 50, .mean = 612.4, .median = 611.9, .min = 608.2, .max = 620.0, .stddev = 2.1};
    ssim_bench_csv_row(out, &gemm, &st);
    SsimBenchRow attn = {"attention", "fwd", "bf16", 2048, 16, 256, 1, 0, 1, 1, "gemm-softmax"};
    SsimBenchStats st2 = {
        .samples = 3, .mean = 1234.5678, .median = 0.0004, .min = 0.0, .stddev = 1e-9};
    ssim_bench_csv_row(out, &attn, &st2);
    SsimBenchRow comm = {"comm", "allreduce", "bf16", 0, 0, 0, 0, 1048576, 8, 8, "ring"};
    SsimBenchStats st3 = {.samples = 1, .mean = 25.0, .median = 25.0, .min = 25.0};
    ssim_bench_csv_row(out, &comm, &st3);
    SsimBenchRow copy = {"copy", "d2d", "", 0, 0, 0, 0, G_GUINT64_CONSTANT(8589934592), 1, 1, ""};
    SsimBenchStats st4 = {.samples = 2,
                          .mean = 2000000.25,
                          .median = 2000000.25,
                          .min = 1999999.5,
                          .stddev = 1.06066};
    ssim_bench_csv_row(out, &copy, &st4);
    const char *want =
        "# shiftsim-profile v1\n"
        "# gpu = NVIDIA H200\n"
        "# sm_count = 132\n"
        "# driver = 570.86.15\n"
        "# note = two lines\n"
        "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,time_us,median_us,min_us,"
        "stddev_us,samples\n"
        "gemm,fwd.qkv,bf16,4096,12288,4096,1,0,1,1,,612.400,611.900,608.200,2.100,50\n"
        "attention,fwd,bf16,2048,16,256,1,0,1,1,gemm-softmax,1234.568,0.000,0.000,0.000,3\n"
        "comm,allreduce,bf16,0,0,0,0,1048576,8,8,ring,25.000,25.000,25.000,0.000,1\n"
        "copy,d2d,,0,0,0,0,8589934592,1,1,,2000000.250,2000000.250,1999999.500,1.061,2\n";
    cr_assert_str_eq(out->str, want);
}

Test(microbench, csv_quoting)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *fields[] = {"plain", "a,b",    "say \"hi\"", "two\nlines",
                            " lead", "trail ", "",           NULL};
    for (guint i = 0; fields[i] != NULL; i++) {
        ssim_bench_csv_field(out, fields[i]);
        g_string_append_c(out, '|');
    }
    ssim_bench_csv_field(out, NULL);
    cr_assert_str_eq(out->str,
                     "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\" lead\"|\"trail \"||");
}

Test(microbench, csv_time_format)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const double v[] = {0.0, -0.0, 1.0, 0.0015, 123456789.123456, 1e-12};
    for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
        ssim_bench_csv_time(out, v[i]);
        g_string_append_c(out, ' ');
    }
    /* -0 prints as 0; three decimals, '.' separator, no exponent. */
    cr_assert_str_eq(out->str, "0.000 0.000 1.000 0.002 123456789.123 0.000 ");
}

Test(microbench, csv_raw_rows)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *const kv[] = {"gpu", "X", NULL};
    ssim_bench_csv_raw_begin(out, kv);
    SsimBenchRow row = {"memory", "layernorm", "fp16", 0, 0, 0, 0, 16793600, 1, 1, NULL};
    const double s[] = {10.5, 9.25};
    ssim_bench_csv_raw_rows(out, &row, s, 2);
    cr_assert_str_eq(out->str,
                     "# shiftsim-bench raw v1\n"
                     "# gpu = X\n"
                     "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,algo,sample,time_us\n"
                     "memory,layernorm,fp16,0,0,0,0,16793600,1,1,,0,10.500\n"
                     "memory,layernorm,fp16,0,0,0,0,16793600,1,1,,1,9.250\n");
}

Test(microbench, versions_and_driver)
{
    g_autofree char *cublas = ssim_bench_version_mmp(130100);
    g_autofree char *nccl = ssim_bench_version_mmp(22809);
    g_autofree char *cuda = ssim_bench_version_cuda(13000);
    g_autofree char *cuda128 = ssim_bench_version_cuda(12080);
    g_autofree char *unknown = ssim_bench_version_mmp(0);
    cr_expect_str_eq(cublas, "13.1.0");
    cr_expect_str_eq(nccl, "2.28.9");
    cr_expect_str_eq(cuda, "13.0");
    cr_expect_str_eq(cuda128, "12.8");
    cr_expect_str_eq(unknown, "unknown");

    g_autofree char *a = ssim_bench_driver_from_proc(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Fri Jan 24 2025\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
    g_autofree char *b = ssim_bench_driver_from_proc(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.51.03  Release Build\n");
    g_autofree char *c = ssim_bench_driver_from_proc("nothing here\n");
    cr_expect_str_eq(a, "570.86.15");
    cr_expect_str_eq(b, "575.51.03");
    cr_expect_null(c);
}

static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *buf = g_malloc0((gsize)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    return buf;
}

Test(microbench, run_report_writes_rows_and_progress)
{
    SsimBenchPlan plan = {.iters = 3};
    FILE *prof = tmpfile(), *raw = tmpfile(), *prog = tmpfile();
    cr_assert(prof != NULL && raw != NULL && prog != NULL);
    SsimBenchRun *run = ssim_bench_run_new(&plan, prof, raw, prog);
    cr_assert_eq(ssim_bench_run_plan(run), &plan);
    const char *const kv[] = {"gpu", "G", NULL};
    ssim_bench_run_begin(run, kv);
    /* 2 x 4096^3 FLOPs in 1000 us = 137.4 TFLOP/s. */
    SsimBenchRow row = {"gemm", "sweep", "bf16", 4096, 4096, 4096, 1, 0, 1, 1, ""};
    const double s[] = {1001.0, 999.0, 1000.0};
    ssim_bench_report(run, &row, s, 3);
    cr_expect_eq(ssim_bench_run_rows(run), 1);
    cr_expect(ssim_bench_run_ok(run));
    ssim_bench_run_free(run);

    g_autofree char *p = slurp(prof), *r = slurp(raw), *g = slurp(prog);
    cr_expect_str_eq(p, "# shiftsim-profile v1\n# gpu = G\n" SSIM_PROFILE_HEADER "\n"
                        "gemm,sweep,bf16,4096,4096,4096,1,0,1,1,,1000.000,1000.000,999.000,"
                        "1.000,3\n");
    cr_expect(g_str_has_prefix(r, "# shiftsim-bench raw v1\n# gpu = G\n" SSIM_BENCH_RAW_HEADER
                                  "\ngemm,sweep,bf16,4096,4096,4096,1,0,1,1,,0,1001.000\n"));
    cr_expect_str_eq(g, "  gemm sweep bf16 4096x4096x4096: 1000.0 us, 137.4 TFLOP/s\n");
    fclose(prof);
    fclose(raw);
    fclose(prog);
}

Test(microbench, run_describe_comm_and_memory)
{
    /* 1 MiB allreduce over 8 GPUs in 100 us: algbw 10.49 GB/s, busbw x 1.75 = 18.35 GB/s. */
    SsimBenchRow comm = {"comm", "allreduce", "bf16", 0, 0, 0, 0, 1048576, 8, 8, ""};
    g_autofree char *c = ssim_bench_run_describe(&comm, 100.0);
    cr_expect_str_eq(c, "comm allreduce bf16 1048576 B on 8 GPUs: 100.0 us, algbw 10.49 GB/s, "
                        "busbw 18.35 GB/s");
    SsimBenchRow mem = {"memory", "add", "bf16", 0, 0, 0, 0, 48000000, 1, 1, ""};
    g_autofree char *m = ssim_bench_run_describe(&mem, 10.0);
    cr_expect_str_eq(m, "memory add bf16 48000000 B: 10.0 us, 4800.0 GB/s");
}
