/*
 * `shiftsim simulate --trace`: the iteration as a Perfetto trace, by the same rules as `replay
 * --trace` (src/app/tracefile.h), driven through ssim_cli_main().
 *
 * Oracle: the run's own --timeline CSV, written by another module (src/out/report.c): the JSON
 * trace has one complete slice ("ph":"X") per op of the timeline and one process per rank in it.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"

#include "src/app/cli.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The figure after `label` in simulate's table output. */
static double figure(const char *out, const char *label)
{
    const char *at = strstr(out, label);
    cr_assert_not_null(at, "no '%s' in %s", label, out);
    return g_ascii_strtod(at + strlen(label), NULL);
}

/* simulate's output for `argv`'s first `n` arguments, and with `flag` in argv[n] (a NULL slot);
 * both runs must succeed. */
static void without_and_with(const char **argv, gsize n, const char *flag, char **without,
                             char **with)
{
    int rc;
    *without = test_cli_stdout(argv, (int)n, &rc);
    cr_assert_eq(rc, 0, "%s", *without);
    argv[n] = flag;
    *with = test_cli_stdout(argv, (int)n + 1, &rc);
    cr_assert_eq(rc, 0, "%s", *with);
}

static guint count(const char *text, const char *needle)
{
    guint n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(verb_simulate, trace_has_every_op_of_the_timeline, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-simulate-XXXXXX", NULL);
    g_autofree char *js = g_build_filename(dir, "t.json", NULL);
    g_autofree char *pf = g_build_filename(dir, "t.pftrace", NULL);
    g_autofree char *csv = g_build_filename(dir, "t.csv", NULL);
    const char *a[] = {"shiftsim", "simulate", "-n",      "1", "--tp",       "2",
                       "--pp",     "2",        "--trace", js,  "--timeline", csv};
    cr_assert_eq(test_cli(G_N_ELEMENTS(a), a), 0);
    g_autofree char *json = NULL, *timeline = NULL;
    cr_assert(g_file_get_contents(js, &json, NULL, NULL));
    cr_assert(g_file_get_contents(csv, &timeline, NULL, NULL));
    cr_assert(g_str_has_prefix(json, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
    guint ops = count(timeline, "\n") - 1; /* the header */
    cr_assert_gt(ops, 1000);
    cr_assert_eq(count(json, "\"ph\":\"X\""), ops);
    cr_assert_eq(count(json, "\"name\":\"process_name\""), 2, "one process per stage");

    /* By extension, and forced. */
    const char *b[] = {"shiftsim", "simulate", "-n", "1", "--tp", "2", "--pp", "2", "--trace", pf};
    cr_assert_eq(test_cli(G_N_ELEMENTS(b), b), 0);
    g_autofree char *proto = NULL;
    cr_assert(g_file_get_contents(pf, &proto, NULL, NULL));
    cr_assert_eq(proto[0], 0x0a, "a Trace starts with its first packet (field 1)");
    const char *c[] = {"shiftsim", "simulate", "-n",      "1", "--tp",           "2",
                       "--pp",     "2",        "--trace", js,  "--trace-format", "proto"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(c), c), 0);
    g_autofree char *forced = NULL;
    cr_assert(g_file_get_contents(js, &forced, NULL, NULL));
    cr_assert_eq(forced[0], 0x0a);
    g_unlink(js);
    g_unlink(pf);
    g_unlink(csv);
    g_rmdir(dir);
}

Test(verb_simulate, trace_errors, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-simulate-XXXXXX", NULL);
    g_autofree char *js = g_build_filename(dir, "t.json", NULL);
    const char *bad_format[] = {"shiftsim", "simulate", "--trace", js, "--trace-format", "xml"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad_format), bad_format), 2);
    const char *alone[] = {"shiftsim", "simulate", "--trace-format", "json"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(alone), alone), 2);
    const char *both[] = {"shiftsim", "simulate", "--trace", "-", "--timeline", "-"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(both), both), 2);
    /* A configuration that fails writes no trace at all. */
    const char *fails[] = {"shiftsim", "simulate", "--tp", "3", "--trace", js};
    cr_assert_neq(test_cli(G_N_ELEMENTS(fails), fails), 0);
    cr_assert_not(g_file_test(js, G_FILE_TEST_EXISTS));
    g_autofree char *missing = g_build_filename(dir, "no", "t.json", NULL);
    const char *nodir[] = {"shiftsim", "simulate", "-n", "1", "--trace", missing};
    cr_assert_eq(test_cli(G_N_ELEMENTS(nodir), nodir), 1);
    GDir *left = g_dir_open(dir, 0, NULL);
    cr_assert_null(g_dir_read_name(left), "a temporary file was left behind");
    g_dir_close(left);
    g_rmdir(dir);
}

/* --cp (Megatron-LM's --context-parallel-size) from the command line: dp defaults to the GPUs
 * over cp x tp x pp, the split line and the exposed line say it; a run without flash attention,
 * or with cp x tp x pp not dividing the GPUs, is one message and exit 1. */
Test(verb_simulate, context_parallel_option, .init = test_redirect)
{
    const char *ok[] = {"shiftsim", "simulate", "-m",          "llama-3.1-8b", "-c",
                        "dgx-h100", "-n",       "1",           "--cp",         "2",
                        "--tp",     "2",        "--attention", "flash",        "--placement",
                        "megatron", "-B",       "16",          "--seq-length", "4096"};
    int rc;
    g_autofree char *out = test_cli_stdout(ok, G_N_ELEMENTS(ok), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "split       dp 2 x tp 2 x pp 1 x cp 2,"), "%s", out);
    cr_assert(strstr(out, "exposed tp+cp comm"), "%s", out);
    cr_assert(strstr(out, "(a representative per stage and cp rank)"), "%s", out);

    const char *unfused[] = {"shiftsim", "simulate", "-m", "llama-3.1-8b",
                             "-c",       "dgx-h100", "-n", "1",
                             "--cp",     "2",        "-p", "megatron"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(unfused), unfused), 1);
    g_autofree char *e1 = test_stderr();
    cr_assert(strstr(e1, "cp > 1 needs attention = flash"), "%s", e1);
    const char *odd[] = {"shiftsim", "simulate", "-m", "llama-3.1-8b", "-c",    "dgx-h100", "-n",
                         "1",        "--cp",     "3",  "--attention",  "flash", "--tp",     "1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(odd), odd), 1);
    g_autofree char *e2 = test_stderr();
    cr_assert(strstr(e2, "cp x tp x pp = 3 x 1 x 1 = 3 does not divide the 8 GPUs"), "%s", e2);
}

/* A command line of the NULL-terminated arguments. */
static GPtrArray *command(const char *first, ...)
{
    GPtrArray *argv = g_ptr_array_new();
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (gpointer)a);
    va_end(ap);
    return argv;
}

/* Llama 2 7B on 16 DGX H100 nodes, tp 8 x pp 16, balanced: the job of the test below. */
#define LLAMA7B_16_STAGES                                                                          \
    "-m", "llama-2-7b", "-c", "dgx-h100", "-n", "16", "--tp", "8", "--pp", "16", "-B", "1024",     \
        "--stage-layers", "balanced"
/* test_cli_stdout()'s arguments for a command(). */
#define ARGS(a) ((const char *const *)(a)->pdata), (int)(a)->len

/*
 * --stage-layers balanced counts the head against a layer as the recompute mode runs them, and
 * without -r the mode is chosen after the split is counted: simulate, compare and sweep count it
 * again for the mode they choose.  Llama 2 7B (32 layers; the head 0.556 of a layer's forward
 * FLOPs, 0.417 against full recompute's) on 16 stages: without recompute round(32.556 / 16 -
 * 0.556) = 1 layer on the last stage (2/3/2*13/1), under full round(2.03 - 0.417) = 2, even.
 * Microbatches of 16 fit only under full recompute, which all three choose, and which a misfit's
 * hint prices with the split counted for it.
 */
Test(verb_simulate, balanced_split_follows_the_chosen_recompute, .init = test_redirect)
{
    int rc;
    g_autoptr(GPtrArray) none = command("shiftsim", "simulate", LLAMA7B_16_STAGES, "-s", "1f1b",
                                        "-b", "16", "-r", "none", "--ignore-memory", NULL);
    g_autofree char *a = test_cli_stdout(ARGS(none), &rc);
    cr_assert_eq(rc, 0, "%s", a);
    cr_assert(strstr(a, "schedule 1f1b, stage layers 2/3/2*13/1\n"), "%s", a);
    /* The ladder: none and selective do not fit, full does. */
    g_autoptr(GPtrArray) ladder =
        command("shiftsim", "simulate", LLAMA7B_16_STAGES, "-s", "1f1b", "-b", "16", NULL);
    g_autofree char *b = test_cli_stdout(ARGS(ladder), &rc);
    cr_assert_eq(rc, 0, "%s", b);
    cr_assert(strstr(b, "recompute full"), "%s", b);
    cr_assert(strstr(b, "(64 microbatches), schedule 1f1b\n"), "an even split: %s", b);
    /* The oracle: the split counted for full recompute from the start (-r full). */
    g_autoptr(GPtrArray) full = command("shiftsim", "simulate", LLAMA7B_16_STAGES, "-s", "1f1b",
                                        "-b", "16", "-r", "full", NULL);
    g_autofree char *f = test_cli_stdout(ARGS(full), &rc);
    cr_assert_eq(rc, 0, "%s", f);
    const char *step = strstr(f, "step time");
    cr_assert_not_null(step, "%s", f);
    g_autofree char *line = g_strndup(step, strcspn(step, "\n"));
    cr_assert(strstr(b, line), "the ladder's run is -r full's (%s): %s", line, b);
    /* A misfit's hint prices --recompute full with the split counted for it, too. */
    const char *peak = strstr(f, "peak memory per GPU");
    cr_assert_not_null(peak, "%s", f);
    double gib = g_ascii_strtod(peak + strlen("peak memory per GPU"), NULL);
    g_autoptr(GPtrArray) misfit_args = command("shiftsim", "simulate", LLAMA7B_16_STAGES, "-s",
                                               "1f1b", "-b", "16", "-r", "none", NULL);
    cr_assert_eq(test_cli((int)misfit_args->len, (const char **)misfit_args->pdata), 1);
    g_autofree char *misfit = test_stderr();
    g_autofree char *hint = g_strdup_printf("fits with --recompute full (%.1f GiB)", gib);
    cr_assert(strstr(misfit, hint), "%s not in %s", hint, misfit);
    g_autoptr(GPtrArray) cmp = command("shiftsim", "compare", LLAMA7B_16_STAGES, "-b", "16",
                                       "--policies", "megatron", NULL);
    g_autofree char *c = test_cli_stdout(ARGS(cmp), &rc);
    cr_assert_eq(rc, 0, "%s", c);
    cr_assert(strstr(c, "(64 microbatches), recompute full\n"), "an even split: %s", c);
    g_autoptr(GPtrArray) sweep = command("shiftsim", "sweep", LLAMA7B_16_STAGES, "--microbatch",
                                         "16", "--schedules", "1f1b", "-f", "csv", "-q", NULL);
    g_autofree char *d = test_cli_stdout(ARGS(sweep), &rc);
    cr_assert_eq(rc, 0, "%s", d);
    /* The sweep's row is -r full's run, to the microsecond. */
    double ms = g_ascii_strtod(step + strlen("step time"), NULL);
    g_autofree char *row = g_strdup_printf(",full,0,0,allreduce,ok,,%.3f", ms);
    cr_assert(strstr(d, row), "%s not in %s", row, d);
}

/*
 * --overlap-param-gather: Llama 2 7B on 16 H100s (dp 4 x tp 2 x pp 2), ZeRO 1 (each GPU gathers
 * the 3.4 GB of bf16 weights of its shard of the model): the options line says it, the step is
 * shorter and less of the
 * data-parallel traffic is exposed; without ZeRO 1 or 2 it is refused with the rule; sweep keeps
 * it for its ZeRO-1 rows only, and runs its ZeRO-0 rows without it.
 */
Test(verb_simulate, overlap_param_gather_option, .init = test_redirect)
{
    const char *base[] = {"shiftsim",    "simulate", "-m",   "llama-2-7b", "-c",   "dgx-h100",
                          "-n",          "2",        "--tp", "2",          "--pp", "2",
                          "-s",          "1f1b",     "-r",   "none",       "-B",   "128",
                          "--attention", "flash",    "-z",   "1",          NULL};
    int rc;
    gsize n = G_N_ELEMENTS(base) - 1;
    g_autofree char *a = NULL, *b = NULL;
    without_and_with(base, n, "--overlap-param-gather", &a, &b);
    cr_assert(strstr(b, ", attention flash, overlap-param-gather on\n"), "%s", b);
    cr_assert_null(strstr(a, "overlap-param-gather"), "%s", a);
    double step_a = figure(a, "step time");
    double step_b = figure(b, "step time");
    double dp_a = figure(a, "exposed dp comm");
    double dp_b = figure(b, "exposed dp comm");
    cr_assert_lt(step_b, step_a, "%s\n%s", a, b);
    cr_assert_lt(dp_b, dp_a, "%s\n%s", a, b);

    base[n - 1] = "0";
    cr_assert_eq(test_cli((int)n + 1, base), 1);
    g_autofree char *e = test_stderr();
    cr_assert(strstr(e, "overlap_param_gather needs ZeRO 1 or 2"), "%s", e);

    g_autoptr(GPtrArray) sweep = command(
        "shiftsim", "sweep", "-m", "llama-2-7b", "-c", "dgx-h100", "-n", "2", "--tp", "2", "--pp",
        "2", "--microbatch", "1", "-B", "128", "--schedules", "1f1b", "--attention", "flash",
        "--zero", "0,1", "-r", "none", "--overlap-param-gather", "-f", "csv", "-q", NULL);
    g_autofree char *c = test_cli_stdout(ARGS(sweep), &rc);
    cr_assert_eq(rc, 0, "%s", c);
    guint ok = 0;
    for (const char *p = strstr(c, ",ok,"); p; p = strstr(p + 1, ",ok,"))
        ok++;
    cr_assert_eq(ok, 2, "both rows run: %s", c);
    /* The ZeRO-1 row is simulate's with the option, the ZeRO-0 row simulate's without ZeRO. */
    g_autofree char *row = g_strdup_printf(",ok,,%.3f", step_b);
    cr_assert(strstr(c, row), "%s not in %s", row, c);
}

/*
 * --fsdp-root, torchtitan's Llama 3 8B run (batch 1 x 8192 on 64 A100s over EFA, op-level
 * checkpointing): the options line says it; the step is longer, its 128,256-entry embedding and
 * head gathered together before the first layer and their fp32 gradients reduce-scattered together
 * after the backward, exposed; the estimate holds the root unit whole.  Under ZeRO 1 it is
 * refused with the rule; sweep keeps it for its ZeRO-3 row only.
 */
Test(verb_simulate, fsdp_root_option, .init = test_redirect)
{
    const char *base[] = {"shiftsim",
                          "simulate",
                          "-m",
                          "llama-3.1-8b",
                          "-c",
                          "aws-p4de",
                          "-n",
                          "8",
                          "--tp",
                          "1",
                          "--pp",
                          "1",
                          "-s",
                          "1f1b",
                          "-b",
                          "1",
                          "-B",
                          "64",
                          "-r",
                          "op",
                          "--attention",
                          "flash",
                          "--transformer-impl",
                          "torch",
                          "-z",
                          "3",
                          NULL};
    int rc;
    gsize n = G_N_ELEMENTS(base) - 1;
    g_autofree char *a = NULL, *b = NULL;
    without_and_with(base, n, "--fsdp-root", &a, &b);
    cr_assert(strstr(b, ", transformer-impl torch, fsdp-root on"), "%s", b);
    cr_assert_null(strstr(a, "fsdp-root"), "%s", a);
    double step_a = figure(a, "step time");
    double step_b = figure(b, "step time");
    double dp_a = figure(a, "exposed dp comm");
    double dp_b = figure(b, "exposed dp comm");
    cr_assert_gt(step_b, step_a, "%s\n%s", a, b);
    cr_assert_gt(dp_b, dp_a, "%s\n%s", a, b);
    double w_a = figure(a, "weights ");
    double w_b = figure(b, "weights ");
    cr_assert_gt(w_b, w_a, "%s\n%s", a, b);

    base[n - 1] = "1";
    cr_assert_eq(test_cli((int)n + 1, base), 1);
    g_autofree char *e = test_stderr();
    cr_assert(strstr(e, "fsdp_root is FSDP2's root unit as torchtitan wraps it, which needs zero 3 "
                        "(every weight sharded); zero is 1"),
              "%s", e);

    g_autoptr(GPtrArray) sweep =
        command("shiftsim", "sweep", "-m", "llama-3.1-8b", "-c", "aws-p4de", "-n", "8", "--tp", "1",
                "--pp", "1", "--microbatch", "1", "-B", "64", "--schedules", "1f1b", "--attention",
                "flash", "--transformer-impl", "torch", "--zero", "1,3", "-r", "op", "--fsdp-root",
                "-f", "csv", "-q", NULL);
    g_autofree char *c = test_cli_stdout(ARGS(sweep), &rc);
    cr_assert_eq(rc, 0, "%s", c);
    /* The ZeRO-3 row is simulate's with the option (to the printed microsecond). */
    const char *z3 = strstr(c, ",3,allreduce,ok,,");
    cr_assert_not_null(z3, "%s", c);
    double step_z3 = g_ascii_strtod(z3 + strlen(",3,allreduce,ok,,"), NULL);
    cr_assert(fabs(step_z3 - step_b) < 0.0005 + 1e-9, "%.6f vs %.3f", step_z3, step_b);
    cr_assert_not_null(strstr(c, ",1,allreduce,ok,,"), "%s", c);
}
