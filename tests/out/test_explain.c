/*
 * --explain-costs' per-iteration costs: every term in its row, on or off, with its ops and time
 * per GPU, in the table, the CSV and the JSON form (a result filled by hand).
 */
#include <criterion/criterion.h>

#include <shiftsim/explain.h>

#include <json-glib/json-glib.h>
#include <string.h>

static SsimResult result(void)
{
    SsimResult r;
    memset(&r, 0, sizeof r);
    r.step_costs_on = ssim_step_costs_default(SSIM_DTYPE_BF16);
    r.step_cost_ops[SSIM_STEP_COST_CLIP] = 8;
    r.step_cost_time[SSIM_STEP_COST_CLIP] = 1500000; /* 1.5 ms */
    r.step_cost_ops[SSIM_STEP_COST_OPTIMIZER] = 4;
    r.step_cost_time[SSIM_STEP_COST_OPTIMIZER] = 22250000;
    return r;
}

Test(explain, step_costs_table)
{
    SsimResult r = result();
    g_autoptr(GString) out = g_string_new(NULL);
    ssim_explain_append_step_costs(out, SSIM_FORMAT_TABLE, &r, 0);
    cr_assert(strstr(out->str, "\nper-iteration costs"), "%s", out->str);
    /* One row a term, in the registry's order. */
    const char *prev = out->str;
    for (guint t = 0; t < SSIM_STEP_COST_N; t++) {
        g_autofree char *head = g_strdup_printf("\n%-11s ", ssim_step_cost_name(t));
        const char *at = strstr(out->str, head);
        cr_assert_not_null(at, "%s missing:\n%s", ssim_step_cost_name(t), out->str);
        cr_assert_gt(at, prev - 1);
        prev = at;
    }
    cr_assert(strstr(out->str, "\nclip        on         8       1.500  "), "%s", out->str);
    cr_assert(strstr(out->str, "\nloss_scale  off        0       0.000  "), "%s", out->str);
    cr_assert(strstr(out->str, "--clip-grad 1.0"), "%s", out->str);
    cr_assert(strstr(out->str, "no microbatch_floor_us"), "%s", out->str);
    g_string_truncate(out, 0);
    ssim_explain_append_step_costs(out, SSIM_FORMAT_TABLE, &r, 250000);
    cr_assert(strstr(out->str, "(host: 250.0 us per microbatch phase"), "%s", out->str);
}

Test(explain, step_costs_csv_and_json)
{
    SsimResult r = result();
    g_autoptr(GString) csv = g_string_new(NULL);
    ssim_explain_append_step_costs(csv, SSIM_FORMAT_CSV, &r, 0);
    cr_assert(g_str_has_prefix(csv->str, "\nterm,on,ops,ms_per_gpu\noptimizer,1,4,22.250000\n"),
              "%s", csv->str);
    cr_assert(strstr(csv->str, "\nloss_scale,0,0,0.000000\n"), "%s", csv->str);

    g_autoptr(GString) json = g_string_new("{\"step_time_ms\": 1}\n");
    ssim_explain_append_step_costs(json, SSIM_FORMAT_JSON, &r, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_data(parser, json->str, -1, NULL), "%s", json->str);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    cr_assert(json_object_has_member(root, "step_time_ms"), "the summary's members stay");
    JsonArray *terms = json_object_get_array_member(root, "step_costs");
    cr_assert_eq(json_array_get_length(terms), SSIM_STEP_COST_N);
    JsonObject *clip = json_array_get_object_element(terms, SSIM_STEP_COST_CLIP);
    cr_assert_str_eq(json_object_get_string_member(clip, "term"), "clip");
    cr_assert(json_object_get_boolean_member(clip, "on"));
    cr_assert_eq(json_object_get_int_member(clip, "ops"), 8);
    cr_assert_float_eq(json_object_get_double_member(clip, "ms_per_gpu"), 1.5, 1e-12);
}
