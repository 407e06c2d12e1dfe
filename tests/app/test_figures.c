/*
 * The throughput figures of every results table (issue 20, item 4): tokens/s per GPU, model
 * TFLOP/s per GPU and MFU in simulate's summary, compare's table, CSV and JSON, and sweep's table.
 * The oracle for tokens/s per GPU is tokens/s over dp x tp x pp, read from the same output.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"

#include "src/app/cli.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What the command printed on stdout; it must succeed. */
static char *run(const char *const *args, int argc)
{
    int rc = -1;
    char *text = test_cli_stdout(args, argc, &rc);
    cr_assert_eq(rc, 0, "%s: exit %d", args[1], rc);
    return text;
}

static JsonObject *parse_object(JsonParser *parser, const char *text)
{
    g_autoptr(GError) error = NULL;
    cr_assert(json_parser_load_from_data(parser, text, -1, &error), "%s", text);
    return json_node_get_object(json_parser_get_root(parser));
}

Test(figures, simulate_has_them_in_every_format, .init = cr_redirect_stderr)
{
    const char *json[] = {"shiftsim", "simulate", "-c",   "tsubame4", "-n", "2",
                          "--tp",     "2",        "--pp", "2",        "-f", "json"};
    g_autofree char *text = run(json, G_N_ELEMENTS(json));
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = parse_object(parser, text);
    double gpus = (double)json_object_get_int_member(o, "gpus");
    cr_assert_eq(gpus, 8);
    double per_gpu = json_object_get_double_member(o, "tokens_per_s_per_gpu");
    cr_expect_float_eq(per_gpu, json_object_get_double_member(o, "tokens_per_s") / 8, 1e-6);
    cr_expect_gt(per_gpu, 0);

    json[G_N_ELEMENTS(json) - 1] = "csv";
    g_autofree char *csv = run(json, G_N_ELEMENTS(json));
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    g_auto(GStrv) row = g_strsplit(lines[1], ",", -1);
    cr_assert_eq(g_strv_length(head), g_strv_length(row));
    double tokens = -1, tokens_gpu = -1;
    for (guint i = 0; head[i]; i++) {
        if (strcmp(head[i], "tokens_per_s") == 0)
            tokens = g_ascii_strtod(row[i], NULL);
        if (strcmp(head[i], "tokens_per_s_per_gpu") == 0)
            tokens_gpu = g_ascii_strtod(row[i], NULL);
    }
    cr_expect_float_eq(tokens_gpu, tokens / 8, 1e-3);

    json[G_N_ELEMENTS(json) - 1] = "table";
    g_autofree char *table = run(json, G_N_ELEMENTS(json));
    cr_expect(strstr(table, "\ntokens/s per GPU "), "%s", table);
    cr_expect(strstr(table, "\nmodel TFLOP/s per GPU "), "%s", table);
    cr_expect(strstr(table, "\nMFU "), "%s", table);
}

Test(figures, compare_has_them_in_every_format, .init = cr_redirect_stderr)
{
    const char *json[] = {"shiftsim", "compare", "-c", "tsubame4",       "-n", "2",   "--tp", "2",
                          "--pp",     "2",       "-p", "alpa,commshift", "-f", "json"};
    g_autofree char *text = run(json, G_N_ELEMENTS(json));
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonArray *pol = json_object_get_array_member(parse_object(parser, text), "policies");
    cr_assert_eq(json_array_get_length(pol), 2);
    for (guint i = 0; i < 2; i++) {
        JsonObject *p = json_array_get_object_element(pol, i);
        cr_expect_float_eq(json_object_get_double_member(p, "tokens_per_s_per_gpu"),
                           json_object_get_double_member(p, "tokens_per_s") / 8, 1e-6);
        double tflops = json_object_get_double_member(p, "model_tflops_per_gpu");
        double mfu = json_object_get_double_member(p, "mfu");
        cr_expect(tflops > 0 && mfu > 0 && mfu < 1, "%g %g", tflops, mfu);
    }
    json[G_N_ELEMENTS(json) - 1] = "csv";
    g_autofree char *csv = run(json, G_N_ELEMENTS(json));
    cr_expect(strstr(csv, ",tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,"), "%s", csv);
    json[G_N_ELEMENTS(json) - 1] = "table";
    g_autofree char *table = run(json, G_N_ELEMENTS(json));
    cr_expect(strstr(table, "tokens/s  tok/s/GPU  TFLOP/s   MFU%"), "%s", table);
}

Test(figures, sweep_table_has_them, .init = cr_redirect_stderr)
{
    const char *argv[] = {"shiftsim", "sweep", "-c",   "tsubame4", "-N", "8", "-b",
                          "1",        "-p",    "alpa", "-q",       "-k", "2"};
    g_autofree char *text = run(argv, G_N_ELEMENTS(argv));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    cr_assert(strstr(lines[0], "tokens/s  tok/s/GPU") && strstr(lines[0], "TFLOP/s   MFU%"), "%s",
              text);
    /* Row 1: tokens/s over dp tp pp is the tok/s/GPU column. */
    guint dp, tp, pp, v, mb, rank, index, zero;
    char sched[32], place[32], rec[32];
    double tokens, per_gpu;
    cr_assert_eq(sscanf(lines[1], "%u %u %u %u %u %u %u %31s %31s %31s %u %lf %lf", &rank, &index,
                        &dp, &tp, &pp, &v, &mb, sched, place, rec, &zero, &tokens, &per_gpu),
                 13, "%s", lines[1]);
    cr_expect_eq(dp * tp * pp, 8);
    cr_expect_eq(zero, 0, "the ZeRO stage, 0 unless --zero says");
    /* Both printed rounded: tokens/s to 1 (0.5 / 8 per GPU), tok/s/GPU to 0.1 (0.05). */
    cr_expect_float_eq(per_gpu, tokens / 8, 0.5 / 8 + 0.05 + 1e-9, "%s", lines[1]);
}
