/*
 * Where a simulation's costs came from (include/shiftsim/explain.h): the cost-source counts and
 * the network calibration, appended to a result's summary in its format.
 *
 * The JSON forms re-read the summary's object and write it again with one more member, so the
 * summary stays one object that a script reads whole; json-glib keeps the members' order.
 */
#include <shiftsim/explain.h>

#include <json-glib/json-glib.h>

/* Adds `member` (taken) to the JSON object in `out` and writes it again, pretty-printed. */
static void json_add_member(GString *out, const char *name, JsonNode *member)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, out->str, (gssize)out->len, NULL)) {
        json_node_unref(member);
        return;
    }
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    json_object_set_member(root, name, member);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, json_parser_get_root(parser));
    json_generator_set_pretty(gen, TRUE);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    g_string_assign(out, text);
    g_string_append_c(out, '\n');
}

void ssim_explain_append_costs(GString *out, SsimFormat format, const char *source,
                               const SsimCostExplain *kinds, const SsimClassExplain *classes)
{
    if (format == SSIM_FORMAT_CSV) {
        g_autoptr(GString) csv = ssim_cost_explain_csv(kinds);
        g_string_append_printf(out, "\n%s", csv->str);
        return;
    }
    if (format == SSIM_FORMAT_JSON) {
        JsonObject *src = json_object_new();
        for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++) {
            JsonObject *row = json_object_new();
            for (guint s = 0; s < SSIM_COST_N; s++)
                json_object_set_int_member(row, ssim_cost_source_name(s),
                                           (gint64)kinds->count[k][s]);
            json_object_set_object_member(src, ssim_profile_kind_name(k), row);
        }
        JsonNode *node = json_node_new(JSON_NODE_OBJECT);
        json_node_take_object(node, src);
        json_add_member(out, "cost_sources", node);
        return;
    }
    g_autoptr(GString) by_class = ssim_class_explain_table(classes);
    g_autoptr(GString) by_kind = ssim_cost_explain_table(kinds);
    g_string_replace(by_kind, "op class", "op kind ", 1);
    g_string_append_printf(out, "\ncost sources (%s)\n%s\n%s",
                           source ? source : "no profile: analytical model", by_class->str,
                           by_kind->str);
}

/* What a term's time is, in a few words (the table's last column but one). */
static const char *term_what(SsimStepCost t)
{
    switch (t) {
    case SSIM_STEP_COST_OPTIMIZER:
        return "Adam, weights copied to 16 bits, gradient buffer zeroed";
    case SSIM_STEP_COST_CLIP:
        return "global gradient norm: local pass + all-reduce";
    case SSIM_STEP_COST_LOSS_SCALE:
        return "unscale and inf/nan check + flag all-reduce";
    case SSIM_STEP_COST_GRAD_FP32:
        return "dp gradient reductions (in fp32 when on)";
    case SSIM_STEP_COST_EMBEDDING:
        return "tied embedding gradient, first <-> last stage";
    case SSIM_STEP_COST_HOST:
        return "host work per microbatch phase";
    case SSIM_STEP_COST_GRAD_ACCUM:
        return "weight gradients added into main grads per microbatch";
    case SSIM_STEP_COST_GRAD_CAST:
        return "bf16 weight gradients cast to fp32 before that add";
    case SSIM_STEP_COST_SHARD_COPY:
        return "FSDP2 copies: gathered weights out, gradients in";
    case SSIM_STEP_COST_FP8_AMAX:
        return "FP8 amaxes all-reduced at each chunk pass's end";
    case SSIM_STEP_COST_N:
        break;
    }
    return "?";
}

void ssim_explain_append_step_costs(GString *out, SsimFormat format, const SsimResult *r,
                                    SsimTime microbatch_floor)
{
    if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, "\nterm,on,ops,ms_per_gpu\n");
        for (guint t = 0; t < SSIM_STEP_COST_N; t++)
            g_string_append_printf(out, "%s,%d,%" G_GUINT64_FORMAT ",%.6f\n",
                                   ssim_step_cost_name(t), (r->step_costs_on >> t) & 1u ? 1 : 0,
                                   r->step_cost_ops[t],
                                   ssim_time_to_seconds(r->step_cost_time[t]) * 1e3);
        return;
    }
    if (format == SSIM_FORMAT_JSON) {
        JsonArray *terms = json_array_new();
        for (guint t = 0; t < SSIM_STEP_COST_N; t++) {
            JsonObject *o = json_object_new();
            json_object_set_string_member(o, "term", ssim_step_cost_name(t));
            json_object_set_boolean_member(o, "on", (r->step_costs_on >> t) & 1u);
            json_object_set_int_member(o, "ops", (gint64)r->step_cost_ops[t]);
            json_object_set_double_member(o, "ms_per_gpu",
                                          ssim_time_to_seconds(r->step_cost_time[t]) * 1e3);
            json_object_set_string_member(o, "megatron", ssim_step_cost_megatron(t));
            json_array_add_object_element(terms, o);
        }
        JsonNode *node = json_node_new(JSON_NODE_ARRAY);
        json_node_take_array(node, terms);
        json_add_member(out, "step_costs", node);
        return;
    }
    g_string_append(out, "\nper-iteration costs (ops in the simulated step; ms: their time per "
                         "GPU; --step-costs turns terms off or on)\n");
    g_string_append_printf(out, "%-11s %-3s %8s %11s  %-54s %s\n", "term", "on", "ops", "ms/GPU",
                           "what", "default follows Megatron-LM");
    for (guint t = 0; t < SSIM_STEP_COST_N; t++) {
        gboolean on = (r->step_costs_on >> t) & 1u;
        g_string_append_printf(out, "%-11s %-3s %8" G_GUINT64_FORMAT " %11.3f  %-54s %s\n",
                               ssim_step_cost_name(t), on ? "on" : "off", r->step_cost_ops[t],
                               ssim_time_to_seconds(r->step_cost_time[t]) * 1e3, term_what(t),
                               ssim_step_cost_megatron(t));
    }
    if (((r->step_costs_on >> SSIM_STEP_COST_HOST) & 1u) && microbatch_floor <= 0)
        g_string_append(out, "(host: no host op: the cluster sets no microbatch_floor_us, or the "
                             "schedule is a compiled program's)\n");
    else if ((r->step_costs_on >> SSIM_STEP_COST_HOST) & 1u)
        g_string_append_printf(out,
                               "(host: %.1f us per microbatch phase, the cluster's "
                               "microbatch_floor_us)\n",
                               ssim_time_to_seconds(microbatch_floor) * 1e6);
}

void ssim_explain_append_netcal(GString *out, SsimFormat format, const char *source,
                                const SsimNetCal *cal)
{
    if (format == SSIM_FORMAT_TABLE) {
        g_autoptr(GString) table = ssim_netcal_table(cal);
        g_string_append_printf(out,
                               "\nnetwork calibration (%s): collectives run on the flow network "
                               "with the measured time\nalone; latency and bus bandwidth fitted "
                               "as t = a + b*bytes on the smallest and largest sizes\n%s",
                               source, table->len ? table->str : "(no collective curves)\n");
        return;
    }
    if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, "\nop,ranks,ranks_per_node,intra,algo,points,min_bytes,max_bytes,"
                             "latency_us,step_latency_us,busbw_GB_s,link_GB_s,efficiency\n");
        for (guint i = 0; i < ssim_netcal_n_fits(cal); i++) {
            const SsimNetCalFit *f = ssim_netcal_fit(cal, i);
            g_string_append_printf(out,
                                   "%s,%u,%u,%d,%s,%u,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                                   ",%.4f,%.4f,%.4f,%.4f,%.5f\n",
                                   ssim_profile_comm_name(f->op), f->ranks, f->ranks_per_node,
                                   f->intra ? 1 : 0, f->algo, f->n_points, f->min_bytes,
                                   f->max_bytes, f->latency_us, f->step_latency_us, f->busbw / 1e9,
                                   f->link_bw / 1e9, f->efficiency);
        }
        return;
    }
    JsonArray *fits = json_array_new();
    for (guint i = 0; i < ssim_netcal_n_fits(cal); i++) {
        const SsimNetCalFit *f = ssim_netcal_fit(cal, i);
        JsonObject *o = json_object_new();
        json_object_set_string_member(o, "op", ssim_profile_comm_name(f->op));
        json_object_set_int_member(o, "ranks", f->ranks);
        json_object_set_int_member(o, "ranks_per_node", f->ranks_per_node);
        json_object_set_string_member(o, "algo", f->algo);
        json_object_set_int_member(o, "points", f->n_points);
        json_object_set_int_member(o, "min_bytes", (gint64)f->min_bytes);
        json_object_set_int_member(o, "max_bytes", (gint64)f->max_bytes);
        json_object_set_double_member(o, "latency_us", f->latency_us);
        json_object_set_double_member(o, "step_latency_us", f->step_latency_us);
        json_object_set_double_member(o, "busbw_GB_s", f->busbw / 1e9);
        json_object_set_double_member(o, "efficiency", f->efficiency);
        json_array_add_object_element(fits, o);
    }
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(node, fits);
    json_add_member(out, "network_calibration", node);
}
