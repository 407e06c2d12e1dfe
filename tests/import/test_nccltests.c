/*
 * Importers: nccl-tests text output (fixtures in tests/data/nccltests/ laid out exactly as
 * nccl-tests 2.17 prints them, plus an older layout without the root column), nccl-tests JSON
 * (-J) output, their error messages, through the import dispatcher, and `shiftsim profile`
 * driven through ssim_cli_main().  vTrain's LUT files: tests/import/test_vtrain.c.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "src/app/cli.h"
#include <shiftsim/import.h>
#include <shiftsim/nccltests.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *fixture(const char *name)
{
    return g_build_filename(SSIM_TEST_DATA, "nccltests", name, NULL);
}

/* The whole text of a fixture. */
static char *fixture_text(const char *name)
{
    g_autofree char *path = fixture(name);
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
    return text;
}

static SsimProfile *import_ok(SsimImportKind kind, const char *name)
{
    g_autofree char *path = fixture(name);
    g_autoptr(GError) error = NULL;
    SsimProfile *p = ssim_profile_new();
    cr_assert(ssim_profile_import_into(p, kind, path, NULL, &error), "%s: %s", name,
              error ? error->message : "");
    return p;
}

static void import_fails(SsimImportKind kind, const char *name, const char *where,
                         const char *fragment)
{
    g_autofree char *path = fixture(name);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimProfile) p = ssim_profile_new();
    cr_assert_not(ssim_profile_import_into(p, kind, path, NULL, &error), "%s imported", name);
    g_autofree char *prefix = g_strdup_printf("%s%s", path, where);
    cr_assert(g_str_has_prefix(error->message, prefix), "'%s' lacks prefix '%s'", error->message,
              prefix);
    cr_assert(strstr(error->message, fragment), "'%s' lacks '%s'", error->message, fragment);
    cr_assert_eq(ssim_profile_n_rows(p), 0, "a failed import left rows behind");
}

Test(profile, import_text_single_node)
{
    g_autoptr(SsimProfile) p = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_reduce_8gpu.txt");
    cr_assert_eq(ssim_profile_n_rows(p), 11);
    const SsimProfileRow *r = ssim_profile_row(p, 0);
    cr_assert_eq(r->kind, SSIM_PROFILE_COMM);
    cr_assert_str_eq(r->op, "allreduce");
    cr_assert_eq(r->dtype, SSIM_DTYPE_FP32);
    cr_assert_eq(r->bytes, 1048576);
    cr_assert_eq(r->ranks, 8);
    cr_assert_eq(r->ranks_per_node, 8);
    cr_assert_float_eq(r->time_us, (17.00 + 16.74) / 2, 1e-12);
    cr_assert_float_eq(r->min_us, 16.74, 1e-12);
    cr_assert_float_eq(r->stddev_us, 0.26 / G_SQRT2, 1e-12);
    cr_assert_eq(r->samples, 2);
    r = ssim_profile_row(p, 10);
    cr_assert_eq(r->bytes, G_GUINT64_CONSTANT(1) << 30);
    cr_assert_float_eq(r->time_us, (5006.43 + 4932.08) / 2, 1e-9);
    cr_assert_str_eq(ssim_profile_get_meta(p, "gpu"), "NVIDIA H200");
    cr_assert_str_eq(ssim_profile_get_meta(p, "nccl"), "2.27.3");
    cr_assert_str_eq(ssim_profile_get_meta(p, "source"), "all_reduce_8gpu.txt");
    /* And the lookup replays it. */
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLREDUCE, SSIM_PROFILE_NO_DTYPE, 1048576, 8, 8,
                                     NULL, NULL, &e));
    cr_assert_eq(e.source, SSIM_COST_EXACT);
    cr_assert_float_eq(e.time_us, 16.87, 1e-9);
}

Test(profile, import_text_two_nodes)
{
    g_autoptr(SsimProfile) p = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_gather_2x8.txt");
    cr_assert_eq(ssim_profile_n_rows(p), 6);
    const SsimProfileRow *r = ssim_profile_row(p, 0);
    cr_assert_str_eq(r->op, "allgather");
    cr_assert_eq(r->ranks, 16);
    cr_assert_eq(r->ranks_per_node, 8);
    cr_assert_float_eq(r->time_us, (69.38 + 68.35) / 2, 1e-12);
    /* Inter-node scope: an intra-node query of 16 ranks does not take these. */
    SsimCostEstimate e;
    cr_assert(ssim_profile_comm_time(p, SSIM_PCOMM_ALLGATHER, SSIM_PROFILE_NO_DTYPE, 1 << 21, 16, 8,
                                     NULL, NULL, &e));
    cr_assert_eq(e.source, SSIM_COST_EXACT);
    cr_assert_not(ssim_profile_comm_time(p, SSIM_PCOMM_ALLGATHER, SSIM_PROFILE_NO_DTYPE, 1 << 21,
                                         16, 16, NULL, NULL, &e));
}

Test(profile, import_text_old_layout_op_from_file_name)
{
    g_autoptr(SsimProfile) p = import_ok(SSIM_IMPORT_NCCL_TESTS, "reduce_scatter_old.txt");
    cr_assert_eq(ssim_profile_n_rows(p), 4);
    const SsimProfileRow *r = ssim_profile_row(p, 0);
    cr_assert_str_eq(r->op, "reducescatter");
    cr_assert_eq(r->bytes, 8);
    cr_assert_eq(r->ranks, 4);
    cr_assert_float_eq(r->time_us, (18.40 + 18.18) / 2, 1e-12);
    cr_assert_float_eq(ssim_profile_row(p, 3)->time_us, (1006.7 + 1004.1) / 2, 1e-9);
    cr_assert_str_eq(ssim_profile_get_meta(p, "gpu"), "A100-SXM4-40GB");
}

/*
 * Output copied from a web page that rendered it outside a code block has lost every leading
 * '#': its header lines ("nThread ..", "Rank .. on ..", the "size count type .." table header)
 * are still told from rows, and the profile is the one of the original, row for row.
 */
Test(profile, import_text_without_hash_marks)
{
    const char *names[] = {"all_reduce_8gpu.txt", "all_gather_2x8.txt", "all_reduce_2x4_ib.txt",
                           "reduce_scatter_old.txt"};
    const char *ops[] = {"allreduce", "allgather", "allreduce", "reducescatter"};
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *path = fixture(names[i]);
        g_autofree char *text = NULL;
        gsize len = 0;
        cr_assert(g_file_get_contents(path, &text, &len, NULL));
        g_autoptr(GString) bare = g_string_new(NULL);
        for (const char *c = text; *c; c++)
            if (!(*c == '#' && (c == text || c[-1] == '\n')))
                g_string_append_c(bare, *c);
        cr_assert_neq(bare->len, len, "%s has '#' lines", names[i]);
        g_autoptr(SsimProfile) a = ssim_profile_new(), b = ssim_profile_new();
        g_autoptr(GError) error = NULL;
        cr_assert(ssim_nccltests_import_text(a, text, (gssize)len, names[i], ops[i], &error),
                  "%s: %s", names[i], error ? error->message : "");
        cr_assert(
            ssim_nccltests_import_text(b, bare->str, (gssize)bare->len, names[i], ops[i], &error),
            "%s without '#': %s", names[i], error ? error->message : "");
        cr_assert_gt(ssim_profile_n_rows(a), 0);
        g_autoptr(GString) wa = ssim_profile_write(a), wb = ssim_profile_write(b);
        cr_assert_str_eq(wa->str, wb->str, "%s", names[i]);
    }
}

Test(profile, import_text_errors)
{
    import_fails(SSIM_IMPORT_NCCL_TESTS, "bad-time.txt",
                 ":19:57: time: ", "'xxxxx' is not a positive time");
    import_fails(SSIM_IMPORT_NCCL_TESTS, "bad-type.txt",
                 ":20:33: type: ", "'bool' has no shiftsim dtype");
    import_fails(SSIM_IMPORT_NCCL_TESTS, "mystery.txt",
                 ":17:1: op: ", "which collective this is cannot be told");
    /* Naming the collective resolves the last one. */
    g_autofree char *path = fixture("mystery.txt");
    g_autoptr(SsimProfile) p = ssim_profile_new();
    cr_assert(ssim_profile_import_into(p, SSIM_IMPORT_NCCL_TESTS, path, "allreduce", NULL));
    cr_assert_eq(ssim_profile_n_rows(p), 11);
    g_autoptr(GError) error = NULL;
    cr_assert_not(
        ssim_nccltests_import_text(p, "# just a comment\n", -1, "x.txt", "allreduce", &error));
    cr_assert(strstr(error->message, "x.txt:1:1: table: no nccl-tests result rows"), "%s",
              error->message);
}

Test(profile, import_json_matches_text)
{
    g_autoptr(SsimProfile) j = import_ok(SSIM_IMPORT_NCCL_TESTS_JSON, "all_reduce_8gpu.json");
    g_autoptr(SsimProfile) t = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_reduce_8gpu.txt");
    cr_assert_eq(ssim_profile_n_rows(j), ssim_profile_n_rows(t));
    for (guint i = 0; i < ssim_profile_n_rows(j); i++) {
        const SsimProfileRow *a = ssim_profile_row(j, i), *b = ssim_profile_row(t, i);
        cr_assert_str_eq(a->op, b->op);
        cr_assert(a->bytes == b->bytes && a->ranks == b->ranks && a->dtype == b->dtype);
        cr_assert(a->ranks_per_node == b->ranks_per_node);
        cr_assert_float_eq(a->time_us, b->time_us, 1e-9);
    }
    cr_assert_str_eq(ssim_profile_get_meta(j, "gpu"), "NVIDIA H200");
    cr_assert_str_eq(ssim_profile_get_meta(j, "nccl"), "2.27.3");
}

Test(profile, import_json_errors)
{
    import_fails(SSIM_IMPORT_NCCL_TESTS_JSON, "bad-version.json",
                 ": $.version: ", "3 is not supported");
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_nccltests_import_json(p, "{\"version\": 2,", -1, "t.json", NULL, &error));
    cr_assert(g_str_has_prefix(error->message, "t.json:1:14: json: "), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_nccltests_import_json(
        p,
        "{\"version\":2,\"args\":[\"./all_reduce_perf\"],\"config\":{\"nthreads\":1,"
        "\"ngpus\":2},\"results\":[{\"size\":1024,\"type\":\"float\",\"out_of_place\":"
        "{\"time\":-1}}]}",
        -1, "t.json", NULL, &error));
    cr_assert(strstr(error->message, "t.json: $.results[0].out_of_place.time: "), "%s",
              error->message);
}

/* ---- The verb ---------------------------------------------------------------------------- */

static void redirect_both(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

static int run(int argc, const char **argv)
{
    return ssim_cli_main(argc, (char **)argv);
}

Test(profile, import_verb_import_show_query, .init = redirect_both)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-verb-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "ar.csv", NULL);
    g_autofree char *in = fixture("all_reduce_8gpu.txt");
    const char *imp[] = {"shiftsim", "profile", "import", "--from", "nccl-tests", in, "-o", out};
    cr_assert_eq(run(G_N_ELEMENTS(imp), imp), 0);
    g_autoptr(SsimProfile) p = ssim_profile_load(out, NULL);
    cr_assert_not_null(p);
    cr_assert_eq(ssim_profile_n_rows(p), 11);
    const char *show[] = {"shiftsim", "profile", "show", out};
    cr_assert_eq(run(G_N_ELEMENTS(show), show), 0);
    const char *query[] = {"shiftsim",  "profile", "query",   out,       "--comm",
                           "allreduce", "--bytes", "1048576", "--ranks", "8"};
    cr_assert_eq(run(G_N_ELEMENTS(query), query), 0);
    const char *bad[] = {"shiftsim", "profile", "import", "--from", "csv", in};
    cr_assert_eq(run(G_N_ELEMENTS(bad), bad), 2);
    fflush(stdout);
    FILE *f = cr_get_redirected_stdout();
    char buf[4096] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    (void)got;
    cr_assert_str_eq(
        buf, "metadata:\n"
             "  source         all_reduce_8gpu.txt\n"
             "  nccl           2.27.3\n"
             "  gpu            NVIDIA H200\n"
             "  tool           nccl-tests (imported by shiftsim profile import)\n"
             "rows: 11\n"
             "  gemm           0\n"
             "  attention      0\n"
             "  memory         0\n"
             "  comm           11\n"
             "  copy           0\n"
             "measured ranges:\n"
             "  comm allreduce fp32 ranks 8 (8 per node): 11 sizes, 1 MiB .. 1 GiB, 16.87 .. "
             "4969 us\n"
             "16.87 us (exact)\n");
    g_unlink(out);
    g_rmdir(dir);
}

/* The layout from the header: 8 ranks on two hosts (4 per node), and NCCL's NET/IB line lists 2
 * NICs per node, so each rank's inter-node traffic has half a NIC.  (A hand-written file in the
 * format nccl-tests prints with NCCL_DEBUG=INFO.) */
Test(profile, import_text_layout_with_nics)
{
    g_autoptr(SsimProfile) p = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_reduce_2x4_ib.txt");
    cr_assert_eq(ssim_profile_n_rows(p), 3);
    const SsimProfileRow *r = ssim_profile_row(p, 0);
    cr_assert_eq(r->ranks, 8);
    cr_assert_eq(r->ranks_per_node, 4);
    cr_assert_float_eq(r->nics_per_rank, 0.5, 1e-12);
    cr_assert_str_eq(ssim_profile_get_meta(p, "nics_per_node"), "2");
    /* Written and read back, the layout stays. */
    g_autoptr(GString) text = ssim_profile_write(p);
    g_autoptr(SsimProfile) back = ssim_profile_load_data(text->str, (gssize)text->len, "x", NULL);
    cr_assert_not_null(back);
    cr_assert_float_eq(ssim_profile_row(back, 2)->nics_per_rank, 0.5, 1e-12);
    /* An intra-node run records no NICs. */
    g_autoptr(SsimProfile) one = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_reduce_8gpu.txt");
    cr_assert_float_eq(ssim_profile_row(one, 0)->nics_per_rank, 0, 1e-12);
}

/*
 * A two-node run as a launcher prints it: every line of Open MPI's --tag-output carries
 * "[1,0]<stdout>:", the GPUs are named by their PCI bus alone, two to a bus as on AWS p4d nodes
 * ("[0x10]" twice: not one GPU listed twice), and the NICs come from the EFA plugin's "(found 4
 * nics)".  The same run under Slurm's srun --label ("  0: ") or MPICH's -prepend-rank ("[0] "),
 * or with no label at all, is the same profile, and an error names the column of the line as
 * written, label included.
 */
static char *relabel(const char *text, const char *label)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GString) out = g_string_new(NULL);
    for (guint i = 0; lines[i]; i++) {
        const char *colon = g_str_has_prefix(lines[i], "[1,") ? strstr(lines[i], ">:") : NULL;
        const char *rest = colon ? colon + 2 : lines[i];
        if (lines[i + 1] == NULL && *rest == '\0')
            break;
        g_string_append_printf(out, "%s%s\n", colon ? label : "", rest);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

Test(profile, import_text_launcher_labels_and_bus_only_devices)
{
    g_autoptr(SsimProfile) p = import_ok(SSIM_IMPORT_NCCL_TESTS, "all_reduce_2x8_efa_tagged.txt");
    cr_assert_eq(ssim_profile_n_rows(p), 5);
    const SsimProfileRow *r = ssim_profile_row(p, 0);
    cr_assert_str_eq(r->op, "allreduce");
    cr_assert_eq(r->bytes, 8388608);
    cr_assert_eq(r->ranks, 16);
    cr_assert_eq(r->ranks_per_node, 8);
    cr_assert_float_eq(r->nics_per_rank, 0.5, 1e-12);
    cr_assert_float_eq(r->time_us, (1061.2 + 1057.8) / 2, 1e-9);
    cr_assert_float_eq(ssim_profile_row(p, 4)->time_us, (26433 + 26425) / 2.0, 1e-9);
    cr_assert_str_eq(ssim_profile_get_meta(p, "nics_per_node"), "4");
    cr_assert_str_eq(ssim_profile_get_meta(p, "nccl"), "2.18.5");
    cr_assert_str_eq(ssim_profile_get_meta(p, "gpu"), "NVIDIA A100-SXM4-40GB");

    g_autofree char *text = fixture_text("all_reduce_2x8_efa_tagged.txt");
    g_autoptr(SsimProfile) tagged = ssim_profile_new();
    cr_assert(ssim_nccltests_import_text(tagged, text, -1, "t.txt", "allreduce", NULL));
    g_autoptr(GString) want = ssim_profile_write(tagged);
    const char *labels[] = {"", "  0: ", "[0] "};
    for (gsize i = 0; i < G_N_ELEMENTS(labels); i++) {
        g_autofree char *variant = relabel(text, labels[i]);
        cr_assert(strcmp(variant, text) != 0);
        g_autoptr(SsimProfile) q = ssim_profile_new();
        g_autoptr(GError) error = NULL;
        cr_assert(ssim_nccltests_import_text(q, variant, -1, "t.txt", "allreduce", &error),
                  "label '%s': %s", labels[i], error ? error->message : "");
        g_autoptr(GString) got = ssim_profile_write(q);
        cr_assert_str_eq(got->str, want->str, "label '%s'", labels[i]);
    }

    /* A corrupted time on line 30: its column counts the label's 14 characters. */
    g_autoptr(GString) bad = g_string_new(text);
    const char *at = strstr(bad->str, "1648.9");
    cr_assert_not_null(at);
    gsize off = (gsize)(at - bad->str);
    g_string_overwrite(bad, off, "16x8.9");
    const char *line_start = at;
    while (line_start > bad->str && line_start[-1] != '\n')
        line_start--;
    g_autofree char *where =
        g_strdup_printf("t.txt:30:%u: time: '16x8.9'", (guint)(at - line_start) + 1);
    cr_assert_gt((guint)(at - line_start), 14 + 40);
    g_autoptr(SsimProfile) q = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_nccltests_import_text(q, bad->str, -1, "t.txt", "allreduce", &error));
    cr_assert(g_str_has_prefix(error->message, where), "'%s' lacks '%s'", error->message, where);

    /* The same bus in the whole-address form is one GPU: listed for two ranks, refused. */
    g_autoptr(GString) twice = g_string_new(text);
    for (char *b = strstr(twice->str, "[0x10]"); b; b = strstr(b + 1, "[0x10]"))
        g_string_overwrite(twice, (gsize)(b - twice->str), "[0:10]");
    g_clear_error(&error);
    cr_assert_not(ssim_nccltests_import_text(q, twice->str, -1, "t.txt", "allreduce", &error));
    cr_assert(strstr(error->message, "t.txt:5: device: [0:10] on ip-10-0-1-11 is listed for a "
                                     "second rank (first on line 4)"),
              "%s", error->message);
}

/* The JSON form of the same rule: a device is told by its whole PCI address only, so every
 * rank on bus "0x10", or on device 0 of its own process, is no GPU listed twice; a whole
 * address listed twice is. */
Test(profile, import_json_devices_by_whole_address)
{
    g_autofree char *text = fixture_text("all_reduce_8gpu.json");
    g_autoptr(GRegex) hex = g_regex_new("\"device_hex\":\"[0-9a-f:]+\"", 0, 0, NULL);
    g_autoptr(GRegex) dev = g_regex_new("\"device\":[0-9]+", 0, 0, NULL);
    g_autofree char *bus =
        g_regex_replace_literal(hex, text, -1, 0, "\"device_hex\":\"0x10\"", 0, NULL);
    g_autofree char *none =
        g_regex_replace_literal(hex, text, -1, 0, "\"device_hex\":null", 0, NULL);
    g_autofree char *zero = g_regex_replace_literal(dev, none, -1, 0, "\"device\":0", 0, NULL);
    g_autofree char *same =
        g_regex_replace_literal(hex, text, -1, 0, "\"device_hex\":\"0000:19:00\"", 0, NULL);
    const char *ok[] = {bus, zero};
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        cr_assert(strcmp(ok[i], text) != 0);
        g_autoptr(SsimProfile) p = ssim_profile_new();
        g_autoptr(GError) error = NULL;
        cr_assert(ssim_nccltests_import_json(p, ok[i], -1, "t.json", NULL, &error), "%zu: %s", i,
                  error ? error->message : "");
        cr_assert_eq(ssim_profile_row(p, 0)->ranks, 8);
    }
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_nccltests_import_json(p, same, -1, "t.json", NULL, &error));
    cr_assert(strstr(error->message, "$.config.devices[1]: device h200-01/0000:19:00 is listed "
                                     "twice (first at [0])"),
              "%s", error->message);
}

/*
 * `-d all` and `-o all` runs: rows of integer or double types, and of reductions no step reduces
 * its gradients with (prod, max, min), price nothing a training step runs.  They are left out and
 * named in `skipped_rows`, the other rows imported as from a run of floats summed; a file of
 * nothing else is an error that says so.
 */
Test(profile, import_skips_types_and_reductions_no_step_runs)
{
    g_autofree char *text = fixture_text("all_reduce_8gpu.txt");
    g_autoptr(SsimProfile) want = ssim_profile_new();
    cr_assert(ssim_nccltests_import_text(want, text, -1, "a.txt", NULL, NULL));

    /* After every row, the same row as int8, as double and reduced with max. */
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GString) all = g_string_new(NULL), others = g_string_new(NULL);
    g_autoptr(GRegex) row = g_regex_new("^( +[0-9]+ +[0-9]+ +)float( +)sum( .*)$", 0, 0, NULL);
    guint rows = 0;
    for (guint i = 0; lines[i]; i++) {
        g_string_append_printf(all, "%s\n", lines[i]);
        g_autoptr(GMatchInfo) m = NULL;
        if (!g_regex_match(row, lines[i], 0, &m)) {
            g_string_append_printf(others, "%s\n", lines[i]);
            continue;
        }
        g_autofree char *head = g_match_info_fetch(m, 1), *gap = g_match_info_fetch(m, 2),
                        *tail = g_match_info_fetch(m, 3);
        g_autofree char *extra = g_strdup_printf("%sint8%ssum%s\n%sdouble%ssum%s\n%sfloat%smax%s\n",
                                                 head, gap, tail, head, gap, tail, head, gap, tail);
        g_string_append(all, extra);
        g_string_append(others, extra);
        rows++;
    }
    cr_assert_eq(rows, 11);
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_nccltests_import_text(p, all->str, -1, "a.txt", NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_eq(ssim_profile_n_rows(p), ssim_profile_n_rows(want));
    for (guint i = 0; i < ssim_profile_n_rows(p); i++)
        cr_assert_float_eq(ssim_profile_row(p, i)->time_us, ssim_profile_row(want, i)->time_us,
                           1e-12);
    cr_assert_str_eq(ssim_profile_get_meta(p, "skipped_rows"),
                     "a.txt: 33 rows: types int8, double; reduction max");
    /* A second file's skips are added to the first's. */
    cr_assert(ssim_nccltests_import_text(p, all->str, -1, "dir/b.txt", NULL, &error));
    cr_assert_str_eq(ssim_profile_get_meta(p, "skipped_rows"),
                     "a.txt: 33 rows: types int8, double; reduction max; b.txt: 33 rows: types "
                     "int8, double; reduction max");

    g_autoptr(SsimProfile) none = ssim_profile_new();
    cr_assert_not(ssim_nccltests_import_text(none, others->str, -1, "c.txt", NULL, &error));
    cr_assert(g_str_has_prefix(error->message,
                               "c.txt:1:1: table: no row of a collective a training step runs: "
                               "33 rows: types int8, double; reduction max (steps move"),
              "%s", error->message);
    cr_assert_eq(ssim_profile_n_rows(none), 0);

    /* FSDP averages: an -o avg run is kept whole, as the -o sum one. */
    g_autoptr(GRegex) sum = g_regex_new(" sum ", 0, 0, NULL);
    g_autofree char *avg = g_regex_replace_literal(sum, text, -1, 0, " avg ", 0, NULL);
    cr_assert(strcmp(avg, text) != 0);
    g_autoptr(SsimProfile) a = ssim_profile_new();
    cr_assert(ssim_nccltests_import_text(a, avg, -1, "a.txt", NULL, &error), "%s",
              error ? error->message : "");
    g_autoptr(GString) wa = ssim_profile_write(a), ww = ssim_profile_write(want);
    cr_assert_str_eq(wa->str, ww->str);
}

/* The JSON form: a result of type int32 and one reduced with max are left out and named. */
Test(profile, import_json_skips_types_and_reductions_no_step_runs)
{
    g_autofree char *text = fixture_text("all_reduce_8gpu.json");
    g_autoptr(GString) json = g_string_new(text);
    const char *sum = "\"type\":\"float\",\"redop\":\"sum\"";
    const char *other[] = {"\"type\":\"int32\",\"redop\":\"sum\"",
                           "\"type\":\"float\",\"redop\":\"max\""};
    for (gsize i = 0; i < G_N_ELEMENTS(other); i++) {
        char *at = strstr(json->str, sum);
        cr_assert_not_null(at);
        g_string_overwrite_len(json, (gsize)(at - json->str), other[i], (gssize)strlen(sum));
    }
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_nccltests_import_json(p, json->str, -1, "ar.json", NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_eq(ssim_profile_n_rows(p), 9);
    cr_assert_eq(ssim_profile_row(p, 0)->bytes, 4194304);
    cr_assert_str_eq(ssim_profile_get_meta(p, "skipped_rows"),
                     "ar.json: 2 rows: type int32; reduction max");
}

/*
 * A script's log of several runs, one after another: each run that names itself ("# Collective
 * test starting: ...") is read on its own, with its own collective, ranks and layout, so the
 * log gives the profile its runs give imported one by one.  Without those lines a second
 * listing of rank 0 is two runs mixed, refused as before.
 */
Test(profile, import_text_a_log_of_several_runs)
{
    const char *names[] = {"all_reduce_8gpu.txt", "all_gather_2x8.txt", "all_reduce_8gpu.txt"};
    g_autoptr(GString) log = g_string_new(NULL);
    g_autoptr(SsimProfile) one_by_one = ssim_profile_new();
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *text = fixture_text(names[i]);
        g_string_append(log, text);
        cr_assert(ssim_nccltests_import_text(one_by_one, text, -1, "log.txt", NULL, NULL));
    }
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_nccltests_import_text(p, log->str, -1, "log.txt", NULL, &error), "%s",
              error ? error->message : "");
    cr_assert_eq(ssim_profile_n_rows(p), 11 + 6 + 11);
    cr_assert_eq(ssim_profile_row(p, 11)->ranks, 16);
    cr_assert_str_eq(ssim_profile_row(p, 11)->op, "allgather");
    cr_assert_eq(ssim_profile_row(p, 17)->ranks, 8);
    cr_assert_str_eq(ssim_profile_row(p, 17)->op, "allreduce");
    g_autoptr(GString) want = ssim_profile_write(one_by_one), got = ssim_profile_write(p);
    cr_assert_str_eq(got->str, want->str);

    g_autoptr(GRegex) starting =
        g_regex_new("^# Collective test starting: .*\n", G_REGEX_MULTILINE, 0, NULL);
    g_autofree char *unnamed = g_regex_replace_literal(starting, log->str, -1, 0, "", 0, NULL);
    g_autoptr(SsimProfile) q = ssim_profile_new();
    cr_assert_not(ssim_nccltests_import_text(q, unnamed, -1, "log.txt", "allreduce", &error));
    cr_assert(strstr(error->message, "Rank: rank 0 is listed twice"), "%s", error->message);

    /* A run on other GPUs in the same log: one profile describes one GPU. */
    g_autofree char *a100 = fixture_text("all_reduce_2x4_ib.txt");
    guint lines_before = 0;
    for (const char *c = log->str; *c; c++)
        lines_before += *c == '\n';
    g_string_append(log, a100);
    /* Its rank 0 is on its sixth line. */
    g_autofree char *where = g_strdup_printf("log.txt:%u: gpu: ", lines_before + 6);
    g_clear_error(&error);
    g_autoptr(SsimProfile) r = ssim_profile_new();
    cr_assert_not(ssim_nccltests_import_text(r, log->str, -1, "log.txt", NULL, &error));
    cr_assert(g_str_has_prefix(error->message, where), "%s", error->message);
    cr_assert(strstr(error->message, "'NVIDIA A100-SXM4-80GB' differs from 'NVIDIA H200' of the "
                                     "ranks before it"),
              "%s", error->message);
}
