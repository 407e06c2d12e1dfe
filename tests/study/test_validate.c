/*
 * Tests of validation (study/validate) and the run set under it (study/runset).
 *
 * Oracles: hand-computed MAPE, median, max and Kendall's tau on four rows; the measured time of
 * a published TFLOP/s row worked out from the model's hardware FLOPs.
 */
#include <criterion/criterion.h>
#include <shiftsim/memory.h>
#include <shiftsim/runset.h>
#include <shiftsim/validate.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

Test(validate, stats_hand_computed)
{
    const double meas[] = {100, 200, 300, 400};
    const double pred[] = {110, 180, 330, 200};
    /* errors +0.1, -0.1, +0.1, -0.5 */
    const guint one_group[] = {0, 0, 0, 0}, two_groups[] = {0, 0, 1, 1};
    SsimErrorStats s;
    ssim_error_stats(pred, meas, one_group, 4, &s);
    cr_assert_eq(s.n, 4);
    cr_assert_float_eq(s.mape, 0.2, 1e-12);
    cr_assert_float_eq(s.median, 0.1, 1e-12);
    cr_assert_float_eq(s.max, 0.5, 1e-12);
    cr_assert_float_eq(s.bias, -0.1, 1e-12);
    cr_assert_float_eq(s.within10, 0.75, 1e-12); /* |error| <= 10%: three of four */
    /* Six pairs: only (300, 400) -> (330, 200) is discordant: (5 - 1) / 6. */
    cr_assert_eq(s.pairs, 6);
    cr_assert_float_eq(s.tau, 4.0 / 6.0, 1e-12);
    ssim_error_stats(pred, meas, two_groups, 4, &s);
    cr_assert_eq(s.pairs, 2); /* (100,200) concordant, (300,400) discordant */
    cr_assert_float_eq(s.tau, 0.0, 1e-12);
    /* Per group: rows 0-1 (errors +0.1, -0.1, concordant) and rows 2-3 (+0.1, -0.5, discordant). */
    SsimErrorStats per[2];
    ssim_error_stats_groups(pred, meas, two_groups, 4, 2, per);
    cr_assert_eq(per[0].n, 2);
    cr_assert_float_eq(per[0].mape, 0.1, 1e-12);
    cr_assert_float_eq(per[0].bias, 0.0, 1e-12);
    cr_assert_float_eq(per[0].within10, 1.0, 1e-12);
    cr_assert_float_eq(per[0].tau, 1.0, 1e-12);
    cr_assert_float_eq(per[1].mape, 0.3, 1e-12);
    cr_assert_float_eq(per[1].max, 0.5, 1e-12);
    cr_assert_float_eq(per[1].within10, 0.5, 1e-12);
    cr_assert_float_eq(per[1].tau, -1.0, 1e-12);
    g_autoptr(GString) table = g_string_new(NULL);
    char *names[] = {"a", "b"};
    ssim_error_groups_append(table, per, names, 2, "");
    cr_assert(strstr(table->str, "b                        2   30.00%   30.00%   50.00%  -20.00%"
                                 "    50.0%  -1.000"),
              "%s", table->str);
    /* Ties (tau-b): rows 0 and 1 predicted alike, as two runs of one configuration are.  By
     * hand, the predictions 100, 100, 300, 200 against the measurements 100, 200, 300, 400 give
     * the pairs (0,2), (0,3), (1,2) and (1,3) concordant, (2,3) discordant and (0,1) tied in
     * the predictions: (4 - 1) / sqrt((6 - 1) (6 - 0)). */
    const double pred_tied[] = {100, 100, 300, 200};
    ssim_error_stats(pred_tied, meas, one_group, 4, &s);
    cr_assert_eq(s.pairs, 6);
    cr_assert_float_eq(s.tau, 3.0 / sqrt(30.0), 1e-12);
    /* A tie in the measurements counts the same way, on its side of the denominator. */
    const double meas_tied[] = {100, 100, 300, 400}, pred_free[] = {110, 180, 330, 200};
    ssim_error_stats(pred_free, meas_tied, one_group, 4, &s);
    cr_assert_float_eq(s.tau, 3.0 / sqrt(30.0), 1e-12);
    /* A group whose every pair is tied in the predictions has no tau, and says so. */
    const guint tied_groups[] = {0, 0, 1, 2};
    ssim_error_stats(pred_tied, meas, tied_groups, 4, &s);
    cr_assert_eq(s.pairs, 1);
    cr_assert(isnan(s.tau));
    g_autoptr(GString) tied_report = g_string_new(NULL);
    ssim_error_stats_append(tied_report, &s, "");
    cr_assert(strstr(tied_report->str, "Kendall tau    n/a  (1 pair of runs of one model, tied)"),
              "%s", tied_report->str);
    /* A failed row is left out of the figures. */
    const double pred_nan[] = {110, NAN, 330, 200};
    ssim_error_stats(pred_nan, meas, one_group, 4, &s);
    cr_assert_eq(s.n, 3);
    cr_assert_eq(s.failed, 1);
    cr_assert_float_eq(s.mape, 0.7 / 3, 1e-12);
    cr_assert_float_eq(s.median, 0.1, 1e-12);
    cr_assert_eq(s.pairs, 3);
    cr_assert_float_eq(s.tau, 1.0 / 3.0, 1e-12);
}

/* The five rows of the --by tests, A to E, with measured 100, 200, 300, 400 and 50 ms: A, B and C
 * at tp 2 (B at pp 2), D at tp 8, E at tp 1; A, B and D of model m1, C and E of m2.  by_pred are
 * their predictions, by hand: errors +0.1, -0.1, -0.5, +0.1, -0.1. */
static const double by_pred[] = {110, 180, 150, 440, 45};

static SsimRunSet *by_rows(void)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-by-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "runs.csv", NULL);
    const char *csv =
        "# shiftsim-runs v2\n"
        "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"
        "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,"
        "iteration_ms,tflops_per_gpu,source\n"
        "m1,2,1024,16,4096,51200,1024,fp16,dgx-a100,1,4,2,1,1,1,8,1f1b,none,off,0,off,100,,A\n"
        "m1,2,1024,16,4096,51200,1024,fp16,dgx-a100,1,2,2,2,1,1,8,1f1b,none,off,0,off,200,,B\n"
        "m2,4,1024,16,4096,51200,1024,fp16,dgx-a100,1,4,2,1,1,1,8,1f1b,none,off,0,off,300,,C\n"
        "m1,2,1024,16,4096,51200,1024,fp16,dgx-a100,1,1,8,1,1,1,8,1f1b,none,off,0,off,400,,D\n"
        "m2,4,1024,16,4096,51200,1024,fp16,dgx-a100,1,8,1,1,1,1,8,1f1b,none,off,0,off,50,,E\n";
    cr_assert(g_file_set_contents(path, csv, -1, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load(path, &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    SsimRunSet *set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    g_unlink(path);
    g_rmdir(dir);
    return set;
}

/* validate --by: the figures per group of one key, the groups in the order of their numbers
 * (tp 1, 2, 8, though the rows give tp 2 first), tau only over pairs that share a model too.
 * by_rows(): errors +0.1, -0.1, -0.5 at tp 2, +0.1 at tp 8, -0.1 at tp 1; rows A and B (model
 * m1) are the only pair of one model inside one tp. */
Test(validate, figures_by_key_hand_computed)
{
    g_autoptr(SsimRunSet) set = by_rows();
    const double *pred = by_pred;
    const SsimGrouping by[] = {ssim_grouping_one(SSIM_GROUP_BY_MODEL),
                               ssim_grouping_one(SSIM_GROUP_BY_TP),
                               ssim_grouping_one(SSIM_GROUP_BY_TP)};
    g_autoptr(GString) json =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, by, 3, SSIM_FORMAT_JSON);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json->str, -1, NULL), "%s", json->str);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonObject *per = json_object_get_object_member(root, "by");
    cr_assert_eq(json_object_get_size(per), 1); /* model is the default table; tp once */
    JsonArray *tp = json_object_get_array_member(per, "tp");
    cr_assert_eq(json_array_get_length(tp), 3);
    const char *order[] = {"tp 1", "tp 2", "tp 8"};
    for (guint g = 0; g < 3; g++)
        cr_assert_str_eq(
            json_object_get_string_member(json_array_get_object_element(tp, g), "group"), order[g]);
    JsonObject *two = json_array_get_object_element(tp, 1);
    cr_assert_eq(json_object_get_int_member(two, "runs"), 3);
    cr_assert_float_eq(json_object_get_double_member(two, "mape"), 0.7 / 3, 1e-12);
    cr_assert_float_eq(json_object_get_double_member(two, "median_error"), 0.1, 1e-12);
    cr_assert_float_eq(json_object_get_double_member(two, "max_error"), 0.5, 1e-12);
    cr_assert_float_eq(json_object_get_double_member(two, "bias"), -0.5 / 3, 1e-12);
    cr_assert_float_eq(json_object_get_double_member(two, "within_10pct"), 2.0 / 3, 1e-12);
    /* (A, B): 100 < 200 and 110 < 180, concordant; C is another model's. */
    cr_assert_eq(json_object_get_int_member(two, "tau_pairs"), 1);
    cr_assert_float_eq(json_object_get_double_member(two, "kendall_tau"), 1.0, 1e-12);
    JsonObject *one = json_array_get_object_element(tp, 0);
    cr_assert_float_eq(json_object_get_double_member(one, "bias"), -0.1, 1e-12);
    cr_assert(json_object_get_null_member(one, "kendall_tau"));
    /* The table gives the same after the per-model one. */
    g_autoptr(GString) table =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, by, 3, SSIM_FORMAT_TABLE);
    const char *model = strstr(table->str, "per model\n"), *t = strstr(table->str, "\nper tp ");
    cr_assert(model && t && model < t, "%s", table->str);
    cr_assert(strstr(t, "tp 2                     3   23.33%   10.00%   50.00%  -16.67%    66.7%"
                        "   1.000"),
              "%s", t);
    cr_assert(strstr(t, "tp 1") < strstr(t, "tp 2") && strstr(t, "tp 2") < strstr(t, "tp 8"));
    /* CSV is a row per run: no groups. */
    g_autoptr(GString) rows =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, by, 3, SSIM_FORMAT_CSV);
    cr_assert_null(strstr(rows->str, "tp 2"));
}

/* validate --by tp+model: a group per pair of values that occur together, ordered by the first
 * part's number, then the second's order of first appearance (tp 1: m2; tp 2: m1, m2; tp 8:
 * m1); each group's figures those of its rows alone.  by_rows(): tp 2 splits into m1 (A, B:
 * +0.1, -0.1) and m2 (C: -0.5). */
Test(validate, figures_by_composite_key_hand_computed)
{
    g_autoptr(SsimRunSet) set = by_rows();
    const double *pred = by_pred;
    SsimGrouping by[2];
    cr_assert(ssim_grouping_from_name("tp+model", &by[0]));
    cr_assert(ssim_grouping_from_name("pp + tp", &by[1])); /* spaces around '+' are allowed */
    g_autoptr(GString) json =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, by, 2, SSIM_FORMAT_JSON);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json->str, -1, NULL), "%s", json->str);
    JsonObject *per =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(parser)), "by");
    cr_assert_eq(json_object_get_size(per), 2);
    JsonArray *tm = json_object_get_array_member(per, "tp+model");
    cr_assert_not_null(tm, "%s", json->str);
    const char *order[] = {"tp 1, m2", "tp 2, m1", "tp 2, m2", "tp 8, m1"};
    const guint runs_in[] = {1, 2, 1, 1};
    const double mape[] = {0.1, 0.1, 0.5, 0.1}, bias[] = {-0.1, 0.0, -0.5, 0.1};
    cr_assert_eq(json_array_get_length(tm), 4);
    for (guint g = 0; g < 4; g++) {
        JsonObject *o = json_array_get_object_element(tm, g);
        cr_assert_str_eq(json_object_get_string_member(o, "group"), order[g]);
        cr_assert_eq(json_object_get_int_member(o, "runs"), runs_in[g]);
        cr_assert_float_eq(json_object_get_double_member(o, "mape"), mape[g], 1e-12);
        cr_assert_float_eq(json_object_get_double_member(o, "bias"), bias[g], 1e-12);
    }
    /* (A, B) share tp 2 and m1: one concordant pair. */
    cr_assert_float_eq(
        json_object_get_double_member(json_array_get_object_element(tm, 1), "kendall_tau"), 1.0,
        1e-12);
    /* pp+tp: pp 1 first (tp 1, 2, 8 inside it), then pp 2. */
    JsonArray *pt = json_object_get_array_member(per, "pp+tp");
    const char *order_pt[] = {"pp 1, tp 1", "pp 1, tp 2", "pp 1, tp 8", "pp 2, tp 2"};
    cr_assert_eq(json_array_get_length(pt), 4);
    for (guint g = 0; g < 4; g++)
        cr_assert_str_eq(
            json_object_get_string_member(json_array_get_object_element(pt, g), "group"),
            order_pt[g]);
    g_autoptr(GString) table =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, by, 2, SSIM_FORMAT_TABLE);
    cr_assert(strstr(table->str, "\nper tp+model (tau: pairs of runs of one model)\n"), "%s",
              table->str);
    cr_assert(strstr(table->str, "tp 2, m2                 1   50.00%   50.00%   50.00%  -50.00%"),
              "%s", table->str);
}

/* validate and calibrate --only: a condition parses from KEY=VALUE and keeps the rows whose key
 * is the value, all of several at once.  by_rows(): A, B, C at tp 2 (B at pp 2), D at tp 8, E
 * at tp 1; A, B, D of model m1, C, E of m2; dp 4, 2, 4, 1, 8. */
Test(validate, only_keeps_the_rows_that_meet_every_condition)
{
    g_autoptr(SsimRunSet) set = by_rows();
    struct {
        const char *items[3];
        const char *kept;
    } cases[] = {
        {{"tp=2"}, "ABC"},
        {{"tp = 2", "pp=1"}, "AC"},
        {{"model=m1"}, "ABD"},
        {{"model=m2", "dp=4"}, "C"},
        {{"dp=8", "tp=1"}, "E"},
        {{"tp=2", "tp=8"}, ""},
        {{"gpus=8"}, "ABCDE"},
        {{"microbatches=8"}, "D"},
        {{"nodes=1"}, "ABCDE"},
        {{"cluster=dgx-a100"}, "ABCDE"},
        {{"model=m3"}, ""},
        {{"tp!=2"}, "DE"},
        {{"model!=m1", "dp != 4"}, "E"},
    };
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        SsimRowMatch m[3];
        guint n = 0;
        for (; n < 3 && cases[c].items[n]; n++) {
            g_autoptr(GError) error = NULL;
            cr_assert(ssim_row_match_parse(cases[c].items[n], &m[n], &error), "%s: %s",
                      cases[c].items[n], error ? error->message : "");
        }
        char kept[8] = "";
        for (guint i = 0; i < ssim_run_set_n(set); i++)
            if (ssim_run_set_matches(set, i, m, n))
                kept[strlen(kept)] = ssim_run_set_run(set, i)->source[0];
        cr_assert_str_eq(kept, cases[c].kept, "case %u", c);
    }
    /* No condition keeps every row. */
    cr_assert(ssim_run_set_matches(set, 0, NULL, 0));
    const char *bad[] = {"tp", "tp=", "tp=0",   "tp=-1", "tp=2x",          "tpp=2",
                         "=2", "!=2", "model=", "model", "dp=99999999999", "tp!="};
    for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
        SsimRowMatch m;
        g_autoptr(GError) error = NULL;
        cr_assert_not(ssim_row_match_parse(bad[k], &m, &error), "'%s' parsed", bad[k]);
        cr_assert(error && strstr(error->message, bad[k]), "%s", error ? error->message : "");
    }
}

/* A grouping of several keys parses, names itself and refuses unknown, repeated or too many
 * parts. */
Test(validate, groupings_parse)
{
    SsimGrouping g;
    cr_assert(ssim_grouping_from_name("tp+microbatch", &g));
    cr_assert_eq(g.n, 2);
    cr_assert_eq(g.part[0], SSIM_GROUP_BY_TP);
    cr_assert_eq(g.part[1], SSIM_GROUP_BY_MICROBATCH);
    g_autofree char *name = ssim_grouping_name(&g);
    cr_assert_str_eq(name, "tp+microbatch");
    SsimGrouping swapped;
    cr_assert(ssim_grouping_from_name("microbatch+tp", &swapped));
    cr_assert_not(ssim_grouping_equal(&g, &swapped)); /* the order sorts the groups */
    SsimGrouping one = ssim_grouping_one(SSIM_GROUP_BY_TP), parsed;
    cr_assert(ssim_grouping_from_name("tp", &parsed));
    cr_assert(ssim_grouping_equal(&one, &parsed));
    cr_assert(ssim_grouping_from_name("model+nodes+tp+pp", &g));
    cr_assert_eq(g.n, SSIM_GROUPING_MAX);
    const char *bad[] = {"", "+", "tp+", "tp+tp", "tp+tpp", "model+nodes+tp+pp+dp"};
    for (guint k = 0; k < G_N_ELEMENTS(bad); k++)
        cr_assert_not(ssim_grouping_from_name(bad[k], &g), "'%s' parsed", bad[k]);
}

/* The keys name themselves and their numbers, and every key is one the parser knows. */
Test(validate, group_keys_round_trip)
{
    for (guint b = 0; b < SSIM_GROUP_BY_N; b++) {
        SsimGroupBy back;
        cr_assert(ssim_group_by_from_name(ssim_group_by_name((SsimGroupBy)b), &back));
        cr_assert_eq(back, (SsimGroupBy)b);
    }
    SsimGroupBy none;
    cr_assert_not(ssim_group_by_from_name("tpp", &none));
    g_autofree char *list = ssim_group_by_names_list("group:");
    cr_assert_str_eq(list, "group:model, group:nodes, group:tp, group:gpus, group:pp, group:dp, "
                           "group:microbatch, group:microbatches, group:file, group:cluster or "
                           "group:recompute");
}

Test(validate, validate_published_rows)
{
    /* Smoke test of the run set on the real published file: every row simulates. */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) all =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    cr_assert_not_null(all);
    g_autoptr(SsimRuns) runs = ssim_runs_new("published-a100.csv");
    for (guint i = 0; i < 3; i++)
        ssim_runs_add(runs, ssim_runs_get(all, i));
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    /* 137 TFLOP/s on 32 GPUs for 512 x 2048 tokens of the 1.7B model, recompute included. */
    double hw = ssim_model_hardware_flops(ssim_run_set_model(set, 0), 512, SSIM_RECOMPUTE_FULL);
    cr_assert_float_eq(ssim_run_set_measured_ms(set, 0), hw / (137e12 * 32) * 1e3, 1e-9);
    /* A row given by its shape is Megatron-LM's GPT: both dropouts, biases. */
    const SsimModel *m = ssim_run_set_model(set, 0);
    cr_assert(m->attention_dropout && m->hidden_dropout && m->attention_bias && m->mlp_bias);
    double pred[3];
    char *errors[3] = {NULL};
    ssim_run_set_predict(set, NULL, 3, NULL, 1, pred, errors);
    for (guint i = 0; i < 3; i++) {
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        g_free(errors[i]);
    }
    g_autoptr(GString) csv =
        ssim_validation_format(set, pred, NULL, &(SsimErrorStats){0}, NULL, 0, SSIM_FORMAT_CSV);
    cr_assert(g_str_has_prefix(csv->str, "line,model,gpus,"));
}

/* The H100 rows (traces/validation/published-h100.csv, check only): each runs on the stock
 * dgx-h100, NeMo's FP8 rows with their tokens/s per GPU turned into a step (Llama 2 7B: 128 x 4096
 * tokens at 16,847 a second on each of 8 GPUs), and every prediction lands within 15% of its
 * measurement (the worst, NeMo's Llama 3 8B at CP 2, 11% fast: docs/validation.md).
 * What FP8 buys, on a job the FP8 efficiency was not fitted to: GPT-3 175B on 128 H100s took
 * 5.626 s a step in FP8 and 8.309 s in BF16 (0.677); the model's ratio is within 10% of that. */
Test(validate, published_h100_rows)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-h100.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    guint n = ssim_runs_n(runs);
    cr_assert_eq(n, 23);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    cr_assert_str_eq(ssim_run_set_model(set, 4)->name, "llama-2-7b");
    /* The last two are NeMo's context-parallel rows: 8 and 64 GPUs at CP 2, dp the replicas. */
    cr_assert_eq(ssim_run_set_run(set, 19)->par.cp, 2);
    cr_assert_eq(ssim_run_set_run(set, 19)->par.dp, 4);
    cr_assert_eq(ssim_parallel_world(&ssim_run_set_run(set, 20)->par), 64);
    cr_assert_eq(ssim_run_set_run(set, 20)->par.cp, 2);
    /* Then Megatron-Bridge's Llama 3.1 405B on 1024 GPUs, pp 8 x v 8 with the embedding and the
     * loss counted as a layer each: 64 chunks of 2 layers, the first and the last of 1. */
    const SsimParallel *big = &ssim_run_set_run(set, 21)->par;
    cr_assert_eq(ssim_parallel_world(big), 1024);
    cr_assert_eq(big->virtual_stages, 8);
    cr_assert(big->stage_layers[0] == 1 && big->stage_layers[1] == 2 &&
              big->stage_layers[62] == 2 && big->stage_layers[63] == 1 &&
              big->stage_layers[64] == 0);
    cr_assert_eq(ssim_run_set_run(set, 4)->par.fp8, SSIM_FP8_HYBRID);
    cr_assert_float_eq(ssim_run_set_measured_ms(set, 4), 128.0 * 4096 / (16847.0 * 8) * 1e3, 0.01);
    double pred[23];
    char *errors[23] = {NULL};
    ssim_run_set_predict(set, NULL, n, NULL, 2, pred, errors);
    guint bf16 = n, fp8 = n; /* the 128-GPU rows of the GPT-3 175B sweeps */
    for (guint i = 0; i < n; i++) {
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        double err = pred[i] / ssim_run_set_measured_ms(set, i) - 1;
        cr_assert(fabs(err) < 0.15, "row %u: %+.1f%%", i, 100 * err);
        g_free(errors[i]);
        const SsimMeasuredRun *r = ssim_run_set_run(set, i);
        if (ssim_parallel_world(&r->par) == 128 && r->par.virtual_stages == 12)
            *(r->par.fp8 != SSIM_FP8_OFF ? &fp8 : &bf16) = i;
    }
    cr_assert(bf16 < n && fp8 < n);
    cr_assert_float_eq(ssim_run_set_measured_ms(set, fp8) / ssim_run_set_measured_ms(set, bf16),
                       5626.0 / 8309, 1e-9);
    double ratio = pred[fp8] / pred[bf16];
    cr_assert(fabs(ratio / (5626.0 / 8309) - 1) < 0.10, "model's FP8/BF16 ratio %.3f", ratio);
}

/* A row's options may give Megatron-LM's first/last stage counts or the embedding and loss
 * counted as layers: the run set counts them into the row's stage_layers with its model (6 layers
 * on pp 4 with the embedding and loss counted: 8 / 4 = 2 a stage, 1/2/2/1), writes them back as
 * given, and a rule the model's layers cannot meet is refused with the file and line. */
Test(validate, runs_take_megatron_first_last_and_counted_layers)
{
    static const char head[] =
        "# shiftsim-runs v2\n"
        "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"
        "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,options,"
        "iteration_ms,tflops_per_gpu,source\n";
    g_autofree char *good =
        g_strconcat(head,
                    "m1,6,1024,16,4096,51200,1024,fp16,dgx-a100,1,2,1,4,1,1,8,1f1b,none,off,0,off,"
                    "\"embedding_in_split=on,account_for_loss_in_pipeline_split=on\",100,,A\n"
                    "m1,6,1024,16,4096,51200,1024,fp16,dgx-a100,1,2,1,4,1,1,8,1f1b,none,off,0,off,"
                    "decoder_first_pipeline_num_layers=3,100,,B\n",
                    NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(good, -1, "good.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    g_autoptr(GString) written = ssim_runs_write(runs);
    cr_assert(strstr(written->str, "\"embedding_in_split=on,loss_in_split=on\""), "%s",
              written->str);
    cr_assert(strstr(written->str, ",first_stage_layers=3,"), "%s", written->str);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    static const char *const want[] = {"1/2/2/1", "3/1*3"};
    for (guint i = 0; i < 2; i++) {
        const SsimParallel *p = &ssim_run_set_run(set, i)->par;
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, p);
        cr_assert_str_eq(got->str, want[i], "row %u", i);
        cr_assert_not(ssim_parallel_layers_pending(p));
    }
    double pred[2];
    char *errors[2] = {NULL};
    ssim_run_set_predict(set, NULL, 2, NULL, 1, pred, errors);
    for (guint i = 0; i < 2; i++) {
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        g_free(errors[i]);
    }

    g_autofree char *bad =
        g_strconcat(head,
                    "m1,6,1024,16,4096,51200,1024,fp16,dgx-a100,1,2,1,4,1,1,8,1f1b,none,off,0,off,"
                    "first_stage_layers=1,100,,A\n",
                    NULL);
    g_autoptr(SsimRuns) badruns = ssim_runs_load_data(bad, -1, "bad.csv", &error);
    cr_assert_not_null(badruns, "%s", error ? error->message : "");
    g_autoptr(SsimRunSet) none = ssim_run_set_new(badruns, NULL, &error);
    cr_assert_null(none);
    cr_assert(strstr(error->message, "bad.csv:3: options: first_stage_layers: 5 layers of "), "%s",
              error->message);
}

/* torchtitan's FSDP2 rows (traces/validation/published-a100-fsdp.csv, check only): eight
 * ZeRO-3 runs on 64 A100s, each data-parallel over all 64 GPUs with one microbatch a step; the
 * measured step is the local batch's tokens over the tokens/s per GPU published (Llama 3 70B:
 * 8192 at 331 a second).  On AWS's p4de nodes, with torchtitan's eager PyTorch layers and
 * FSDP2's copies, the full recompute rows land within 5% of it, the others (none, every other
 * layer, op-level) within 10% (1% and 5.5-8.9%: docs/validation.md, "FSDP on 64 A100s"; the first
 * three were 10-18% too fast on dgx-a100 before the layers and copies were modelled). */
Test(validate, published_fsdp_rows)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100-fsdp.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert(ssim_runs_check_only(runs));
    guint n = ssim_runs_n(runs);
    cr_assert_eq(n, 8);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    static const double tokens[] = {8192, 2 * 4096, 2 * 4096, 8192, 8192, 2 * 4096, 2 * 4096, 4096},
                        wps[] = {331, 353, 2162, 2904, 2973, 1914, 1904, 355};
    /* torchtitan's modes: full, none, every other layer (recompute_layers), op-level. */
    static const SsimRecompute mode[] = {
        SSIM_RECOMPUTE_FULL, SSIM_RECOMPUTE_FULL, SSIM_RECOMPUTE_NONE, SSIM_RECOMPUTE_FULL,
        SSIM_RECOMPUTE_OP,   SSIM_RECOMPUTE_FULL, SSIM_RECOMPUTE_OP,   SSIM_RECOMPUTE_OP};
    static const guint layers[] = {0, 0, 0, 16, 0, 20, 0, 0};
    double pred[8];
    char *errors[8] = {NULL};
    ssim_run_set_predict(set, NULL, n, NULL, 2, pred, errors);
    for (guint i = 0; i < n; i++) {
        const SsimMeasuredRun *r = ssim_run_set_run(set, i);
        cr_assert_eq(r->par.zero_stage, 3);
        cr_assert_eq(r->par.dp, 64);
        cr_assert_eq(ssim_parallel_n_microbatches(&r->par), 1);
        cr_assert_eq(r->par.recompute, mode[i], "row %u", i);
        cr_assert_eq(r->par.recompute_layers, layers[i], "row %u", i);
        /* torchtitan's eager layers, their RMSNorm eager for the 70B runs, fused for the others. */
        cr_assert_eq(r->par.transformer_impl, SSIM_TRANSFORMER_IMPL_TORCH);
        cr_assert_eq(r->par.rmsnorm, i < 2 || i == 7 ? SSIM_RMSNORM_AUTO : SSIM_RMSNORM_FUSED,
                     "row %u", i);
        cr_assert_float_eq(ssim_run_set_measured_ms(set, i), tokens[i] / wps[i] * 1e3, 0.01);
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        double err = pred[i] / ssim_run_set_measured_ms(set, i) - 1;
        gboolean full = mode[i] == SSIM_RECOMPUTE_FULL && layers[i] == 0;
        cr_assert(fabs(err) < (full ? 0.05 : 0.10), "row %u: %+.1f%%", i, 100 * err);
        g_free(errors[i]);
    }
    /* Llama 2 13B: without recompute faster than with either of the others, as measured. */
    cr_assert_lt(pred[2], pred[5]);
    cr_assert_lt(pred[2], pred[6]);
    /* The recompute mode is a key of --by and --only ("op", "full": every-other-layer included). */
    g_autofree char *key = ssim_run_set_key(set, 4, SSIM_GROUP_BY_RECOMPUTE);
    cr_assert_str_eq(key, "op");
    SsimRowMatch only;
    cr_assert(ssim_row_match_parse("recompute=op", &only, NULL));
    guint op_rows = 0;
    for (guint i = 0; i < n; i++)
        op_rows += ssim_run_set_matches(set, i, &only, 1);
    cr_assert_eq(op_rows, 3);
}

/* Every measured run ran, so validate says where its memory estimate is above the GPUs': of the
 * published H100 rows, NeMo's FP8 GPT-3 20B at tp 2 (line 11, 93.6 GiB of weights, their FP8
 * copies, fp32 gradients and activations), GPT-3 175B on 512 GPUs (line 13) and Llama 3 8B at
 * CP 2 on 8 GPUs (line 29, 83.9 GiB), in each format:
 * a CSV column, a JSON member and its count, the table's mark and its footnote. */
Test(validate, memory_estimates_beside_the_runs)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-h100.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    guint n = ssim_run_set_n(set);
    g_autofree double *pred = g_new(double, n);
    for (guint i = 0; i < n; i++)
        pred[i] = ssim_run_set_measured_ms(set, i);
    SsimErrorStats st = {0};
    g_autoptr(GString) json =
        ssim_validation_format(set, pred, NULL, &st, NULL, 0, SSIM_FORMAT_JSON);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json->str, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonObject *summary = json_object_get_object_member(root, "summary");
    cr_assert_eq(json_object_get_int_member(summary, "memory_misfits"), 3);
    JsonArray *rows = json_object_get_array_member(root, "runs");
    for (guint i = 0; i < n; i++) {
        JsonObject *r = json_array_get_object_element(rows, i);
        gint64 line = json_object_get_int_member(r, "line");
        gboolean over = line == 11 || line == 13 || line == 29;
        cr_assert_eq(json_object_get_boolean_member(r, "memory_fits"), !over, "line %d", (int)line);
        double gib = json_object_get_double_member(r, "peak_memory_gib");
        cr_assert(over ? gib > 79.6 : gib > 10 && gib <= 79.6, "line %d: %g", (int)line, gib);
    }
    g_autoptr(GString) csv = ssim_validation_format(set, pred, NULL, &st, NULL, 0, SSIM_FORMAT_CSV);
    cr_assert(strstr(csv->str, ",extrapolation,peak_memory_gib,memory_fits\n"));
    cr_assert(strstr(csv->str, ",93.65,0\n"), "%s", csv->str);
    g_autoptr(GString) table =
        ssim_validation_format(set, pred, NULL, &st, NULL, 0, SSIM_FORMAT_TABLE);
    cr_assert(strstr(table->str, "+0.0% m\n"));
    cr_assert(strstr(table->str, "m 3 of 23 runs are estimated above their GPUs' memory, though "
                                 "they ran (first: line 11: 93.6 GiB on an NVIDIA H100"),
              "%s", table->str);
    /* The A100 rows all fit: no mark, no footnote. */
    g_autoptr(SsimRuns) a100 =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    g_autoptr(SsimRunSet) aset = ssim_run_set_new(a100, NULL, &error);
    cr_assert_not_null(aset, "%s", error ? error->message : "");
    g_autofree double *apred = g_new(double, ssim_run_set_n(aset));
    for (guint i = 0; i < ssim_run_set_n(aset); i++)
        apred[i] = ssim_run_set_measured_ms(aset, i);
    g_autoptr(GString) atable =
        ssim_validation_format(aset, apred, NULL, &st, NULL, 0, SSIM_FORMAT_TABLE);
    cr_assert_null(strstr(atable->str, "GPUs' memory"));
}

/* The memory estimate against what torchtitan's runs say of memory (docs/performance.md at
 * 395a526, "add performance file": 64 A100s of 80 GB, FSDP2): every one of the eight rows ran,
 * and Llama 2 70B at a local batch of 2 ran out of memory with selective checkpointing, per layer
 * (every other layer) or per op, which is why its op-level row is at batch 1. */
Test(validate, published_fsdp_memory_facts)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100-fsdp.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    SsimMemory mem;
    for (guint i = 0; i < ssim_runs_n(runs); i++) {
        const SsimMeasuredRun *r = ssim_run_set_run(set, i);
        ssim_memory_estimate(&mem, ssim_run_set_model(set, i), &r->par, 0, 1);
        cr_assert(ssim_memory_fits(&mem, ssim_run_set_cluster(set, i), NULL), "row %u ran", i);
    }
    /* Row 7: Llama 2 70B, op-level, batch 1; row 1: the same model, full recompute, batch 2. */
    const SsimMeasuredRun *op = ssim_run_set_run(set, 7), *full = ssim_run_set_run(set, 1);
    const SsimModel *m = ssim_run_set_model(set, 7);
    cr_assert_str_eq(m->name, "llama-2-70b");
    cr_assert_eq(op->par.recompute, SSIM_RECOMPUTE_OP);
    cr_assert_eq(full->par.microbatch, 2);
    SsimParallel op2 = op->par, layer2 = full->par;
    op2.microbatch = 2, op2.global_batch = 128;
    layer2.recompute_layers = m->layers / 2;
    for (guint k = 0; k < 2; k++) {
        ssim_memory_estimate(&mem, m, k ? &layer2 : &op2, 0, 1);
        cr_assert_not(ssim_memory_fits(&mem, ssim_run_set_cluster(set, 7), NULL),
                      "%s at batch 2 ran out of memory", k ? "every other layer" : "op-level");
    }
}

/* BigScience's rows on Jean Zay (traces/validation/published-a100-bigscience.csv, check only):
 * 18 runs on jean-zay-a100, each with CUDA_LAUNCH_BLOCKING=1 and DeepSpeed's partition of the tied
 * embedding as a layer at each end (the first and last stage one transformer layer short); the
 * production run's step is 105.22 s.  Of BLOOM's shape with 64 heads, three configurations: the
 * model ranks them as measured (tp 4 microbatch 2 < tp 4 microbatch 4 < tp 8), and each is
 * slower with blocking launches than without, with DeepSpeed's BF16_Optimizer casting each
 * microbatch's gradients to fp32 (grad_cast) than without, and with ALiBi's bias written into
 * the scores than with learned positions. */
Test(validate, published_bigscience_rows)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) all = ssim_runs_load(
        SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100-bigscience.csv", &error);
    cr_assert_not_null(all, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_n(all), 18);
    g_autoptr(SsimRuns) runs = ssim_runs_new("published-a100-bigscience.csv");
    guint bloom = 0;
    for (guint i = 0; i < ssim_runs_n(all); i++) {
        const SsimMeasuredRun *r = ssim_runs_get(all, i);
        cr_assert_str_eq(r->cluster, "jean-zay-a100");
        cr_assert(r->par.launch_blocking, "row %u", i);
        cr_assert(r->par.step_costs_set & r->par.step_costs_on & (1u << SSIM_STEP_COST_GRAD_CAST),
                  "row %u: BF16_Optimizer's cast", i);
        cr_assert(r->position == SSIM_POSITION_ALIBI && r->embedding_norm, "row %u: BLOOM's", i);
        guint pp = r->par.pp, first = r->par.stage_layers[0];
        cr_assert_eq(first, (r->layers + 2) / pp - 1, "row %u", i);
        cr_assert_eq(r->par.stage_layers[pp - 1], first, "row %u", i);
        if (r->hidden == 14336 && r->layers == 70 && r->heads == 64)
            ssim_runs_add(runs, r);
        if (r->iteration_ms == 105220)
            bloom++;
    }
    cr_assert_eq(bloom, 1);
    cr_assert_eq(ssim_runs_n(runs), 3);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    double pred[3];
    char *errors[3] = {NULL};
    ssim_run_set_predict(set, NULL, 3, NULL, 2, pred, errors);
    guint order[3] = {0, 1, 2}; /* by measured time */
    for (guint a = 0; a < 3; a++)
        for (guint b = a + 1; b < 3; b++)
            if (ssim_run_set_measured_ms(set, order[b]) < ssim_run_set_measured_ms(set, order[a])) {
                guint t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    for (guint i = 0; i < 3; i++) {
        cr_assert(isfinite(pred[i]) && pred[i] > 0, "row %u: %s", i, errors[i] ? errors[i] : "");
        g_free(errors[i]);
    }
    cr_assert_lt(pred[order[0]], pred[order[1]]);
    cr_assert_lt(pred[order[1]], pred[order[2]]);
    cr_assert_eq(ssim_run_set_run(set, order[2])->par.tp, 8);
    /* Without blocking launches, without BF16_Optimizer's cast, or with learned positions
     * instead of ALiBi's bias, each row is faster. */
    static const char *const what[] = {"launches that block", "the casts", "ALiBi's bias"};
    for (guint i = 0; i < 3 * 3; i++) {
        SsimMeasuredRun r = *ssim_run_set_run(set, i % 3);
        if (i < 3)
            r.par.launch_blocking = FALSE;
        else if (i < 6)
            r.par.step_costs_on &= ~(1u << SSIM_STEP_COST_GRAD_CAST);
        else
            r.position = SSIM_POSITION_LEARNED;
        g_autoptr(SsimRuns) one = ssim_runs_new("variant");
        ssim_runs_add(one, &r);
        g_autoptr(SsimRunSet) variant = ssim_run_set_new(one, NULL, &error);
        cr_assert_not_null(variant, "%s", error ? error->message : "");
        double p;
        char *e = NULL;
        ssim_run_set_predict(variant, NULL, 1, NULL, 1, &p, &e);
        cr_assert(isfinite(p), "%s", e ? e : "");
        g_free(e);
        cr_assert_lt(p, pred[i % 3], "row %u: %s cost time", i % 3, what[i / 3]);
    }
}

/* A cluster calibrated on hidden 1024..2048 and one node marks a row beyond those as an
 * extrapolation, naming what lies outside, and leaves a row inside them alone. */
Test(validate, rows_outside_the_fitted_shapes_are_extrapolations)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(c);
    c->fit_lo[SSIM_FIT_HIDDEN] = 1024;
    c->fit_hi[SSIM_FIT_HIDDEN] = 2048;
    c->fit_lo[SSIM_FIT_NODES] = c->fit_hi[SSIM_FIT_NODES] = 1;
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
    g_autofree char *dir = g_dir_make_tmp("ssim-val-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "cal.ini", NULL);
    cr_assert(g_file_set_contents(path, ini->str, -1, NULL));
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "in,2,1024,16,,8192,512,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,0,off,10,,t\n"
        "out,2,4096,32,,8192,512,bf16,dgx-a100,2,16,1,1,1,1,16,1f1b,full,off,0,off,10,,t\n";
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "r.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, path, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    g_autofree char *in = ssim_run_set_extrapolation(set, 0);
    g_autofree char *out = ssim_run_set_extrapolation(set, 1);
    cr_assert_null(in, "%s", in);
    cr_assert_str_eq(out, "hidden 4096 > 2048, nodes 2 > 1");
    /* The ranges of a set of rows, as calibrate records them. */
    g_autoptr(SsimCluster) rec = ssim_cluster_copy(c);
    ssim_run_set_fit_ranges(set, NULL, 2, rec);
    cr_assert_eq(rec->fit_lo[SSIM_FIT_HIDDEN], 1024);
    cr_assert_eq(rec->fit_hi[SSIM_FIT_HIDDEN], 4096);
    cr_assert_eq(rec->fit_hi[SSIM_FIT_GPUS], 16);
    cr_assert_eq(rec->fit_lo[SSIM_FIT_GPUS], 8);
    g_unlink(path);
    g_rmdir(dir);
}

/* A named model trains in the row's dtype when the row gives one, in its own otherwise; the
 * writer keeps an empty cell empty. */
Test(validate, a_named_models_dtype_comes_from_the_row)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "gpt-3-175b,,,,,,,fp16,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,10000,,t\n"
        "gpt-3-175b,,,,,,,,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,10000,,t\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "d.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    g_autoptr(SsimModel) own = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(own);
    cr_assert_neq(own->dtype, SSIM_DTYPE_FP16, "the test needs a model file that is not fp16");
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_not_null(set, "%s", error ? error->message : "");
    cr_assert_eq(ssim_run_set_model(set, 0)->dtype, SSIM_DTYPE_FP16);
    cr_assert_eq(ssim_run_set_model(set, 1)->dtype, own->dtype);
    g_autoptr(GString) w = ssim_runs_write(runs);
    cr_assert(strstr(w->str, "\ngpt-3-175b,,,,,,,fp16,dgx-a100,"), "%s", w->str);
    cr_assert(strstr(w->str, "\ngpt-3-175b,,,,,,,,dgx-a100,"), "%s", w->str);
}

/* A measured figure faster than the GPU's peak is refused by name: a TFLOP/s per GPU above the
 * A100's 312 (its fastest dtype), a time whose FLOPs would need more; the same row passes under
 * another cluster given for every row (judged on the row's own), and just under the peak. */
Test(validate, a_row_faster_than_the_peak_is_refused)
{
    static const char head[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(m);
    /* 128 GPUs, batch 64, full recompute: the time at exactly 312 TFLOP/s per GPU, by hand. */
    double at_peak_ms =
        ssim_model_hardware_flops(m, 64, SSIM_RECOMPUTE_FULL) / (312e12 * 128) * 1e3;
    const struct {
        const char *ms, *tflops;
        const char *cluster; /* the override, or NULL */
        const char *says;    /* NULL: loads */
    } cases[] = {
        {"", "400", NULL,
         "fast.csv:3: tflops_per_gpu: 400 TFLOP/s per GPU is above the NVIDIA "
         "A100 SXM4 80GB's peak of 312 TFLOP/s"},
        {"", "311", NULL, NULL},
        {"100", "", NULL, "fast.csv:3: iteration_ms: 100 ms is "},
        {"100", "", "dgx-h100", NULL},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text =
            g_strdup_printf("%sgpt-3-175b,,,,,,,,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,"
                            "%s,%s,t\n",
                            head, cases[i].ms, cases[i].tflops);
        g_clear_error(&error);
        g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "fast.csv", &error);
        cr_assert_not_null(runs, "%s", error ? error->message : "");
        g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, cases[i].cluster, &error);
        if (cases[i].says == NULL) {
            cr_assert_not_null(set, "case %zu: %s", i, error ? error->message : "");
        } else {
            cr_assert_null(set, "case %zu loaded", i);
            cr_assert(strstr(error->message, cases[i].says), "%s", error->message);
        }
    }
    cr_assert_gt(at_peak_ms, 100, "the 100 ms case is faster than the peak allows");
    g_autofree char *peak = g_strdup_printf(
        "%sgpt-3-175b,,,,,,,,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,%.17g,,t\n", head,
        at_peak_ms * 0.999);
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(peak, -1, "fast.csv", &error);
    g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
    cr_assert_null(set, "0.1%% faster than the peak allows loaded");
    g_clear_error(&error);
    g_free(peak);
    peak = g_strdup_printf(
        "%sgpt-3-175b,,,,,,,,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,%.17g,,t\n", head,
        at_peak_ms * 1.001);
    g_autoptr(SsimRuns) slower = ssim_runs_load_data(peak, -1, "fast.csv", &error);
    g_autoptr(SsimRunSet) ok = ssim_run_set_new(slower, NULL, &error);
    cr_assert_not_null(ok, "0.1%% slower than the peak allows: %s", error ? error->message : "");
}

/* A row may give its time and its TFLOP/s per GPU both, when they tell the same time within 5%
 * (the time is then the measurement); a row whose two figures disagree is refused, naming the
 * file, the line and both times.  The TFLOP/s is computed here from the model's FLOP count. */
Test(validate, a_rows_time_and_tflops_must_agree)
{
    static const char head[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(m);
    /* 128 GPUs (dp 1, tp 8, pp 16), batch 64, full recompute, 10 s an iteration. */
    double tflops = ssim_model_hardware_flops(m, 64, SSIM_RECOMPUTE_FULL) / (10.0 * 128) / 1e12;
    const struct {
        double factor; /* the TFLOP/s written, of the consistent figure */
        gboolean loads;
    } cases[] = {{1.0, TRUE}, {1.04, TRUE}, {0.96, TRUE}, {1.06, FALSE}, {0.5, FALSE}};
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text =
            g_strdup_printf("%sgpt-3-175b,,,,,,,,dgx-a100,16,1,8,16,1,1,64,1f1b,full,off,0,off,"
                            "10000,%.17g,t\n",
                            head, tflops * cases[i].factor);
        g_clear_error(&error);
        g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "both.csv", &error);
        cr_assert_not_null(runs, "%s", error ? error->message : "");
        g_autoptr(SsimRunSet) set = ssim_run_set_new(runs, NULL, &error);
        if (cases[i].loads) {
            cr_assert_not_null(set, "x%g: %s", cases[i].factor, error ? error->message : "");
            cr_assert_float_eq(ssim_run_set_measured_ms(set, 0), 10000, 1e-9);
        } else {
            cr_assert_null(set, "x%g loaded", cases[i].factor);
            cr_assert(strstr(error->message, "both.csv:3: tflops_per_gpu: "), "%s", error->message);
            cr_assert(strstr(error->message, "but iteration_ms is 10000 ms: give one, or both "
                                             "within 5%"),
                      "%s", error->message);
        }
    }
}
