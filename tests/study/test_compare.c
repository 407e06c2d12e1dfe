/*
 * `shiftsim compare` end to end: the default run prints the table and the attribution, and
 * commshift beats the baseline on GPT-J; the output is byte-identical from run to run; the
 * Perfetto traces parse back (json-glib) with the events each policy's streams should carry; the
 * plot files are written as data and script; bad options are usage errors.
 */
#include <criterion/criterion.h>

#include "src/app/verbs.h"

#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <string.h>

static int compare(int argc, const char **argv)
{
    return ssim_verb_compare(argc, (char **)argv);
}

static char *tmpdir(void)
{
    return g_dir_make_tmp("ssim-compare-XXXXXX", NULL);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    return text;
}

Test(compare, default_run_is_deterministic_and_commshift_gains)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *a = g_build_filename(dir, "a.txt", NULL);
    g_autofree char *b = g_build_filename(dir, "b.txt", NULL);
    const char *argv_a[] = {"compare", "--output", a};
    const char *argv_b[] = {"compare", "--output", b};
    cr_assert_eq(compare(3, argv_a), 0);
    cr_assert_eq(compare(3, argv_b), 0);
    g_autofree char *ta = slurp(a), *tb = slurp(b);
    cr_assert_str_eq(ta, tb, "two runs print the same bytes");
    cr_assert(strstr(ta, "policy     schedule"));
    cr_assert(strstr(ta, "what commshift saved"));
    cr_assert(strstr(ta, "total = step time baseline - commshift"));

    g_autofree char *j = g_build_filename(dir, "c.json", NULL);
    const char *argv_j[] = {"compare",  "--format", "json", "--policies", "baseline,commshift",
                            "--output", j};
    cr_assert_eq(compare(7, argv_j), 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    cr_assert(json_parser_load_from_file(parser, j, NULL));
    JsonArray *pol = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(parser)), "policies");
    cr_assert_eq(json_array_get_length(pol), 2);
    JsonObject *cs = json_array_get_object_element(pol, 1);
    cr_assert_str_eq(json_object_get_string_member(cs, "policy"), "commshift");
    double gain = json_object_get_double_member(cs, "gain_pct");
    cr_assert_gt(gain, 1.0, "commshift gains on GPT-J (%.2f %%)", gain);
    /* The attribution adds up to the step-time difference. */
    JsonArray *attr = json_object_get_array_member(cs, "attribution");
    double saved = 0;
    for (guint i = 0; i < json_array_get_length(attr); i++)
        saved += json_object_get_double_member(json_array_get_object_element(attr, i), "saved_ms");
    double base_ms =
        json_object_get_double_member(json_array_get_object_element(pol, 0), "step_ms");
    double cs_ms = json_object_get_double_member(cs, "step_ms");
    cr_assert_float_eq(saved, base_ms - cs_ms, 1e-6);
}

/* Complete events per stream name of rank 0 in a trace file. */
static GHashTable *events_per_stream(const char *path)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    cr_assert(json_parser_load_from_file(parser, path, &error), "%s: %s", path,
              error ? error->message : "");
    JsonArray *ev = json_object_get_array_member(json_node_get_object(json_parser_get_root(parser)),
                                                 "traceEvents");
    g_autoptr(GHashTable) names =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    GHashTable *count = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if (strcmp(ph, "M") == 0 &&
            strcmp(json_object_get_string_member(e, "name"), "thread_name") == 0 &&
            json_object_get_int_member(e, "pid") == 0)
            g_hash_table_insert(names, GINT_TO_POINTER(json_object_get_int_member(e, "tid")),
                                g_strdup(json_object_get_string_member(
                                    json_object_get_object_member(e, "args"), "name")));
    }
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (strcmp(json_object_get_string_member(e, "ph"), "X") != 0 ||
            json_object_get_int_member(e, "pid") != 0)
            continue;
        const char *name =
            g_hash_table_lookup(names, GINT_TO_POINTER(json_object_get_int_member(e, "tid")));
        cr_assert_not_null(name, "every event's thread is named");
        guint c = GPOINTER_TO_UINT(g_hash_table_lookup(count, name));
        g_hash_table_insert(count, g_strdup(name), GUINT_TO_POINTER(c + 1));
    }
    return count;
}

static guint n_of(GHashTable *h, const char *stream)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(h, stream));
}

Test(compare, traces_parse_back_with_the_expected_events)
{
    g_autofree char *dir = tmpdir();
    g_autofree char *prefix = g_build_filename(dir, "t", NULL);
    g_autofree char *plot = g_build_filename(dir, "p.png", NULL);
    g_autofree char *out = g_build_filename(dir, "out.txt", NULL);
    const char *argv[] = {"compare", "--policies", "baseline,commshift", "--trace", prefix,
                          "--plot",  plot,         "--output",           out};
    cr_assert_eq(compare(9, argv), 0);
    g_autofree char *b = g_strdup_printf("%s-baseline.json", prefix);
    g_autofree char *c = g_strdup_printf("%s-commshift.json", prefix);
    g_autoptr(GHashTable) hb = events_per_stream(b);
    g_autoptr(GHashTable) hc = events_per_stream(c);
    /* Default: dp 2 x tp 4 x pp 2, 8 microbatches, GPT-J's 28 layers, 14 per stage.  Stage 0
     * runs 8 (embed + 14 x 11 + ...) forward kernels; rather than recount them, check the
     * relations placement must keep. */
    cr_assert_gt(n_of(hb, "compute"), 0);
    cr_assert_eq(n_of(hb, "compute"), n_of(hc, "compute"), "placement never moves a kernel");
    cr_assert_eq(n_of(hb, "tp"), n_of(hc, "tp"));
    /* Lock-step: one permute per iteration, 2 (m + p - 1) = 18; commshift sends stage 0's 8
     * forward activations and receives its 8 backward gradients. */
    cr_assert_eq(n_of(hb, "pp"), 18);
    cr_assert_eq(n_of(hc, "pp"), 0);
    cr_assert_eq(n_of(hc, "pp.send"), 8);
    cr_assert_eq(n_of(hc, "pp.recv"), 8);
    /* One combined gradient reduction after the backward, against one per layer (14) plus the
     * embedding's. */
    cr_assert_eq(n_of(hb, "dp"), 1);
    cr_assert_eq(n_of(hc, "dp"), 15);
    g_autofree char *dat = g_build_filename(dir, "p.dat", NULL);
    g_autofree char *gp = g_build_filename(dir, "p.gp", NULL);
    g_autofree char *gantt = g_build_filename(dir, "p-commshift.gp", NULL);
    cr_assert(g_file_test(dat, G_FILE_TEST_EXISTS));
    cr_assert(g_file_test(gp, G_FILE_TEST_EXISTS));
    cr_assert(g_file_test(gantt, G_FILE_TEST_EXISTS));
    g_autofree char *text = slurp(dat);
    cr_assert(g_str_has_prefix(text, "# policy rest_ms"));
    cr_assert(strstr(text, "\nbaseline "));
    cr_assert(strstr(text, "\ncommshift "));
}

Test(compare, usage_errors)
{
    const char *a[] = {"compare", "--policies", "baseline,zz"};
    cr_assert_eq(compare(3, a), 2);
    const char *b[] = {"compare", "--shift", "qq"};
    cr_assert_eq(compare(3, b), 2);
    const char *c[] = {"compare", "--format", "xml"};
    cr_assert_eq(compare(3, c), 2);
    const char *d[] = {"compare", "--tp", "3"};
    cr_assert_eq(compare(3, d), 1);
}

Test(compare, simulate_honours_the_placement)
{
    const char *a[] = {"simulate",    "--nodes",   "2",       "--tp", "4",        "--pp", "2",
                       "--placement", "commshift", "--shift", "dp",   "--format", "csv"};
    cr_assert_eq(ssim_verb_simulate(13, (char **)a), 0);
    const char *b[] = {"simulate", "--placement", "nowhere"};
    cr_assert_eq(ssim_verb_simulate(3, (char **)b), 2);
    const char *c[] = {"simulate", "--placement", "commshift", "--shift", "dp,xx"};
    cr_assert_eq(ssim_verb_simulate(5, (char **)c), 2);
}
