/*
 * Tests of the measured-runs table (spec/runs): a round trip through the writer and the reader of
 * the published A100 runs, and the exact `file:line:column: field:` messages of malformed runs
 * files (fixtures in tests/data/runs/).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <shiftsim/runs.h>

#include <string.h>

#define RUNS_DATA SSIM_TEST_DATA "/runs/"

typedef struct {
    char file[40];
    char message[160];
} BadRuns;

ParameterizedTestParameters(runs, bad_runs)
{
    static BadRuns cases[] = {
        {"bad-version.csv", "bad-version.csv:1:1: version: the first line must be"},
        {"bad-header.csv", "bad-header.csv:2:1: header: 3 columns, expected 22"},
        {"bad-tp.csv", "bad-tp.csv:3:41: tp: 'x' is not a positive integer"},
        {"no-measurement.csv", "no-measurement.csv:3:65: iteration_ms: missing"},
        {"short-row.csv", "short-row.csv:3:67: tflops_per_gpu: the row has 20 fields"},
        {"bad-recompute.csv", "bad-recompute.csv:4:56: recompute: 'most' is not one of"},
        {"bad-quote.csv", "bad-quote.csv:3:"},
        {"negative-time.csv", "negative-time.csv:3:65: iteration_ms: '-3' is not a positive"},
    };
    return cr_make_param_array(BadRuns, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(BadRuns *c, runs, bad_runs)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_strconcat(RUNS_DATA, c->file, NULL);
    g_autoptr(SsimRuns) runs = ssim_runs_load(path, &error);
    cr_assert_null(runs, "%s loaded", c->file);
    cr_assert(strstr(error->message, c->message) != NULL, "%s: got '%s', want '%s'", c->file,
              error->message, c->message);
}

/* The message of loading inline `text` as `path`, which must be refused (caller frees). */
static char *refusal(const char *text, const char *path)
{
    GError *error = NULL;
    SsimRuns *runs = ssim_runs_load_data(text, -1, path, &error);
    cr_assert_null(runs, "%s loaded", path);
    cr_assert_not_null(error);
    char *message = g_strdup(error->message);
    g_error_free(error);
    return message;
}

Test(runs, runs_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs =
        ssim_runs_load(SHIFTSIM_SOURCE_ROOT "/traces/validation/published-a100.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    /* Ten Narayanan et al. 2021 rows, eight Korthikanti et al. 2022 Table 5 rows and the 530B
     * run at 8-way data parallelism of its section 6.3. */
    cr_assert_eq(ssim_runs_n(runs), 19);
    cr_assert_float_eq(ssim_runs_get(runs, 0)->tflops_per_gpu, 137, 1e-12);
    const SsimMeasuredRun *k = ssim_runs_get(runs, 15);
    cr_assert_str_eq(k->model, "korthikanti-530b");
    cr_assert_eq(k->par.pp, 35);
    cr_assert_eq(k->par.virtual_stages, 3);
    cr_assert_eq(k->par.recompute, SSIM_RECOMPUTE_SELECTIVE);
    cr_assert(k->par.sequence_parallel);
    cr_assert_float_eq(k->iteration_ms, 37830, 1e-9);
    g_autoptr(GString) a = ssim_runs_write(runs);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autoptr(GString) b = ssim_runs_write(back);
    cr_assert_str_eq(a->str, b->str);
}

/* v2 adds the ZeRO stage and cross-node tensor parallelism; a v1 file reads as stage 0, off. */
Test(runs, v2_columns_and_v1_defaults)
{
    static const char v2[] =
        "# shiftsim-runs v2\n"
        "# use = check\n" SSIM_RUNS_HEADER "\n"
        "bloom-176b,,,,,,,bf16,dgx-a100,48,8,4,12,1,2,2048,1f1b,selective,off,1,off,,150,src\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,2,1,16,1,1,1,8,1f1b,full,off,0,on,10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(v2, -1, "v2.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert(ssim_runs_check_only(runs));
    cr_assert_eq(ssim_runs_get(runs, 0)->par.zero_stage, 1);
    cr_assert_not(ssim_runs_get(runs, 0)->par.allow_cross_node_tp);
    cr_assert_eq(ssim_runs_get(runs, 1)->par.zero_stage, 0);
    cr_assert(ssim_runs_get(runs, 1)->par.allow_cross_node_tp);
    cr_assert_eq(ssim_runs_get(runs, 1)->par.tp, 16);
    /* Written back as v2, it reads back the same. */
    g_autoptr(GString) a = ssim_runs_write(runs);
    cr_assert(g_str_has_prefix(a->str, "# shiftsim-runs v2\n# use = check\n"));
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autofree char *want = ssim_parallel_to_string(&ssim_runs_get(runs, 1)->par);
    g_autofree char *got = ssim_parallel_to_string(&ssim_runs_get(back, 1)->par);
    cr_assert_str_eq(got, want);

    static const char v1[] =
        "# shiftsim-runs v1\n" SSIM_RUNS_HEADER_V1 "\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,10,,test\n";
    g_autoptr(SsimRuns) old = ssim_runs_load_data(v1, -1, "v1.csv", &error);
    cr_assert_not_null(old, "%s", error ? error->message : "");
    cr_assert_not(ssim_runs_check_only(old));
    cr_assert_eq(ssim_runs_get(old, 0)->par.zero_stage, 0);
    cr_assert_not(ssim_runs_get(old, 0)->par.allow_cross_node_tp);
    cr_assert_float_eq(ssim_runs_get(old, 0)->iteration_ms, 10, 1e-12);

    /* The new cells are checked where they are, and so is the `use` key. */
    static const char bad_zero[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,4,off,10,,test\n";
    g_autofree char *z = refusal(bad_zero, "z.csv");
    cr_assert(strstr(z, "z.csv:3:65: zero: stage 4 does not exist"), "%s", z);
    static const char zero3[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,1,8,1,1,1,1,8,1f1b,full,off,3,off,10,,test\n";
    g_autoptr(SsimRuns) z3 = ssim_runs_load_data(zero3, -1, "z3.csv", &error);
    cr_assert_not_null(z3, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_get(z3, 0)->par.zero_stage, 3);
    static const char bad_use[] = "# shiftsim-runs v2\n# use = tuning\n" SSIM_RUNS_HEADER "\n";
    g_autofree char *u = refusal(bad_use, "u.csv");
    cr_assert(strstr(u, "u.csv:2:1: use: 'tuning' is not fit or check"), "%s", u);
}

Test(runs, v2_optional_stage_layers_column)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_STAGES "\n"
        "gpt,7,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,4/3,10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,,10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "s.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    const SsimParallel *p = &ssim_runs_get(runs, 0)->par;
    cr_assert(ssim_parallel_uneven(p));
    cr_assert(p->stage_layers[0] == 4 && p->stage_layers[1] == 3 && p->stage_layers[2] == 0);
    cr_assert_not(ssim_parallel_uneven(&ssim_runs_get(runs, 1)->par), "empty: even");
    cr_assert_eq(ssim_runs_get(runs, 0)->iteration_ms, 10);
    /* Written with the column (a row is uneven), read back the same. */
    g_autoptr(GString) a = ssim_runs_write(runs);
    cr_assert(strstr(a->str, SSIM_RUNS_HEADER_STAGES "\n"), "%s", a->str);
    cr_assert(strstr(a->str, ",off,4/3,1e+01,"), "%s", a->str);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autofree char *want = ssim_parallel_to_string(p);
    g_autofree char *got = ssim_parallel_to_string(&ssim_runs_get(back, 0)->par);
    cr_assert_str_eq(got, want);
    /* A bad entry names its column. */
    static const char bad[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_STAGES "\n"
        "gpt,7,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,4/x,10,,src\n";
    g_autofree char *no = refusal(bad, "b.csv");
    cr_assert(strstr(no, "b.csv:3:") && strstr(no, "stage_layers:"), "%s", no);
    /* With v > 1 one entry per chunk (pp 2 x v 3: six), a run of three or more alike written
     * as N*K. */
    static const char chunks[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_STAGES "\n"
                                 "gpt,10,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,3,1,12,interleaved,"
                                 "full,off,0,off,1/2*4/1,10,,"
                                 "src\n";
    g_autoptr(SsimRuns) c = ssim_runs_load_data(chunks, -1, "c.csv", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    static const guint16 want_chunks[] = {1, 2, 2, 2, 2, 1, 0};
    cr_assert_arr_eq(ssim_runs_get(c, 0)->par.stage_layers, want_chunks, sizeof want_chunks);
    g_autoptr(GString) cw = ssim_runs_write(c);
    cr_assert(strstr(cw->str, ",off,1/2*4/1,1e+01,"), "%s", cw->str);
}

/* v2's optional `options` column: settings without a column of their own, as a split string;
 * the header (with or without stage_layers) is matched name by name. */
Test(runs, v2_optional_options_column)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,fp16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,"
        "\"bucket=25MiB,tp_overlap=off,step_costs=+grad_accum\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,,10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,"
        "\"attention=flash,transformer_impl=local\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,"
        "\"rmsnorm=eager,transformer_impl=pytorch\",10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "o.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    const SsimParallel *p = &ssim_runs_get(runs, 0)->par, *q = &ssim_runs_get(runs, 1)->par;
    cr_assert_eq(p->dp_bucket_bytes, 25u << 20);
    cr_assert(p->tp_sync_grad);
    cr_assert_eq(p->step_costs_set, 1u << SSIM_STEP_COST_GRAD_ACCUM);
    cr_assert(q->dp_bucket_bytes == 0 && !q->tp_sync_grad && q->step_costs_set == 0);
    cr_assert_eq(ssim_runs_get(runs, 0)->dtype, SSIM_DTYPE_FP16);
    /* Written with the column, only what differs from the defaults; read back the same. */
    g_autoptr(GString) a = ssim_runs_write(runs);
    cr_assert(strstr(a->str, SSIM_RUNS_HEADER_OPTIONS "\n"), "%s", a->str);
    cr_assert(
        strstr(a->str, ",off,\"bucket=26214400,step_costs=+grad_accum,tp_overlap=off\",1e+01,"),
        "%s", a->str);
    cr_assert(strstr(a->str, ",off,0,off,,1e+01,"), "%s", a->str);
    cr_assert_eq(ssim_runs_get(runs, 2)->par.attention, SSIM_ATTENTION_FLASH);
    cr_assert_eq(ssim_runs_get(runs, 2)->par.transformer_impl, SSIM_TRANSFORMER_IMPL_LOCAL);
    cr_assert_eq(q->transformer_impl, SSIM_TRANSFORMER_IMPL_TE);
    cr_assert(strstr(a->str, ",off,0,off,\"attention=flash,transformer_impl=local\",1e+01,"), "%s",
              a->str);
    cr_assert_eq(ssim_runs_get(runs, 3)->par.transformer_impl, SSIM_TRANSFORMER_IMPL_TORCH);
    cr_assert_eq(ssim_runs_get(runs, 3)->par.rmsnorm, SSIM_RMSNORM_EAGER);
    cr_assert(strstr(a->str, ",off,0,off,\"transformer_impl=torch,rmsnorm=eager\",1e+01,"), "%s",
              a->str);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(a->str, (gssize)a->len, "x.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    for (guint i = 0; i < 4; i++) {
        g_autofree char *want = ssim_parallel_to_string(&ssim_runs_get(runs, i)->par);
        g_autofree char *got = ssim_parallel_to_string(&ssim_runs_get(back, i)->par);
        cr_assert_str_eq(got, want);
    }

    /* Both optional columns. */
    static const char both[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_STAGES_OPTIONS "\n"
        "gpt,7,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,4/3,"
        "tp_overlap=off,10,,src\n";
    g_autoptr(SsimRuns) b = ssim_runs_load_data(both, -1, "b.csv", &error);
    cr_assert_not_null(b, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_get(b, 0)->par.stage_layers[0], 4);
    cr_assert(ssim_runs_get(b, 0)->par.tp_sync_grad);
    g_autoptr(GString) bw = ssim_runs_write(b);
    cr_assert(strstr(bw->str, SSIM_RUNS_HEADER_STAGES_OPTIONS "\n"), "%s", bw->str);

    /* A field with a column of its own, or a bad setting, is refused where it stands. */
    static const char own[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,tp=4,10,,src\n";
    g_autofree char *o = refusal(own, "own.csv");
    cr_assert(strstr(o, "own.csv:3:71: options: 'tp=4' sets a field that has a column of its own"),
              "%s", o);
    static const char bad[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                              "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,"
                              "off,tp_overlap=x,10,,src\n";
    g_autofree char *x = refusal(bad, "bad.csv");
    cr_assert(strstr(x, "bad.csv:3:71: options: tp_overlap: 'x' is not on or off"), "%s", x);
}

/* Context parallelism is an option of a row (dp stays the replicas): read, written back only where
 * set, refused at 0 with the cell named. */
Test(runs, options_context_parallel)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,2,1,1,8,1f1b,none,off,1,off,"
        "\"attention=flash,cp=2\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,4,1,2,1,1,8,1f1b,none,off,1,off,attention=flash,"
        "10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "cp.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_get(runs, 0)->par.cp, 2);
    cr_assert_eq(ssim_runs_get(runs, 0)->par.dp, 2);
    cr_assert_eq(ssim_runs_get(runs, 1)->par.cp, 1);
    g_autoptr(GString) w = ssim_runs_write(runs);
    cr_assert(strstr(w->str, ",off,\"attention=flash,cp=2\",1e+01,"), "%s", w->str);
    cr_assert(strstr(w->str, ",off,attention=flash,1e+01,"), "%s", w->str);
    static const char zero[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                               "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,2,1,1,8,1f1b,none,off,1,"
                               "off,cp=0,10,,src\n";
    g_autofree char *x = refusal(zero, "zero.csv");
    cr_assert(strstr(x, "zero.csv:3:71: options: cp: '0'"), "%s", x);
}

/* Megatron-LM's --overlap-param-gather is an option of a row (NeMo's overlap_param_sync read
 * too), written back under its own name only where set; a bad value names the cell. */
Test(runs, options_overlap_param_gather)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,2,1,1,8,1f1b,none,off,1,off,"
        "\"attention=flash,overlap_param_sync=true\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,2,1,1,8,1f1b,none,off,1,off,attention=flash,"
        "10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "opg.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert(ssim_runs_get(runs, 0)->par.overlap_param_gather);
    cr_assert_not(ssim_runs_get(runs, 1)->par.overlap_param_gather);
    g_autoptr(GString) w = ssim_runs_write(runs);
    cr_assert(strstr(w->str, ",off,\"attention=flash,overlap_param_gather=on\",1e+01,"), "%s",
              w->str);
    cr_assert(strstr(w->str, ",off,attention=flash,1e+01,"), "%s", w->str);
    static const char bad[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                              "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,2,1,1,8,1f1b,none,off,1,"
                              "off,overlap_param_gather=2,10,,src\n";
    g_autofree char *x = refusal(bad, "bad.csv");
    cr_assert(strstr(x, "bad.csv:3:71: options: overlap_param_gather: '2' is not on or off"), "%s",
              x);
}

/* fsdp_root (torchtitan's FSDP2 wrapping) is an option of a row (fsdp_root_unit read too),
 * written back under its own name only where set; a bad value names the cell. */
Test(runs, options_fsdp_root)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,1,1,1,8,1f1b,none,off,3,off,"
        "\"attention=flash,fsdp_root_unit=true\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,1,1,1,8,1f1b,none,off,3,off,attention=flash,"
        "10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "root.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    cr_assert(ssim_runs_get(runs, 0)->par.fsdp_root);
    cr_assert_not(ssim_runs_get(runs, 1)->par.fsdp_root);
    g_autoptr(GString) w = ssim_runs_write(runs);
    cr_assert(strstr(w->str, ",off,\"attention=flash,fsdp_root=on\",1e+01,"), "%s", w->str);
    cr_assert(strstr(w->str, ",off,attention=flash,1e+01,"), "%s", w->str);
    static const char bad[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                              "gpt,8,256,4,,1000,128,bf16,dgx-h100,1,2,1,1,1,1,8,1f1b,none,off,3,"
                              "off,fsdp_root=2,10,,src\n";
    g_autofree char *x = refusal(bad, "bad.csv");
    cr_assert(strstr(x, "bad.csv:3:71: options: fsdp_root: '2' is not on or off"), "%s", x);
}

/* The options position= and embedding_norm= shape the GPT of a row given by shape (BLOOM's
 * ALiBi and the LayerNorm after its embedding): read beside the run's settings, written back
 * after them, refused on a row that names its model, and a bad value is named. */
Test(runs, options_shape_a_rows_gpt)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,"
        "\"tp_overlap=off,Position=alibi,embedding-norm=on\",10,,src\n"
        "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,off,,10,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) runs = ssim_runs_load_data(text, -1, "m.csv", &error);
    cr_assert_not_null(runs, "%s", error ? error->message : "");
    const SsimMeasuredRun *a = ssim_runs_get(runs, 0), *b = ssim_runs_get(runs, 1);
    cr_assert_eq(a->position, SSIM_POSITION_ALIBI);
    cr_assert(a->embedding_norm && a->par.tp_sync_grad);
    cr_assert_eq(b->position, SSIM_POSITION_LEARNED);
    cr_assert_not(b->embedding_norm);
    g_autoptr(GString) w = ssim_runs_write(runs);
    cr_assert(strstr(w->str, ",off,\"tp_overlap=off,position=alibi,embedding_norm=on\",1e+01,"),
              "%s", w->str);
    g_autoptr(SsimRuns) back = ssim_runs_load_data(w->str, (gssize)w->len, "w.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    cr_assert_eq(ssim_runs_get(back, 0)->position, SSIM_POSITION_ALIBI);
    cr_assert(ssim_runs_get(back, 0)->embedding_norm);

    static const char named[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                                "gpt-3-175b,,,,,,,,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,"
                                "off,position=alibi,10,,src\n";
    g_autofree char *n = refusal(named, "named.csv");
    cr_assert(strstr(n, "named.csv:3:") &&
                  strstr(n, "options: position: only a row given by shape takes it"),
              "%s", n);
    static const char bad[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                              "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,off,0,"
                              "off,position=sinusoid,10,,src\n";
    g_autofree char *x = refusal(bad, "bad.csv");
    cr_assert(strstr(x, "bad.csv:3:71: options: position: 'sinusoid' is not learned, rotary or "
                        "alibi"),
              "%s", x);
    static const char badnorm[] = "# shiftsim-runs v2\n" SSIM_RUNS_HEADER_OPTIONS "\n"
                                  "gpt,8,256,4,,1000,128,bf16,dgx-a100,1,2,1,2,1,1,8,1f1b,full,"
                                  "off,0,off,embedding_norm=sometimes,10,,src\n";
    g_autofree char *y = refusal(badnorm, "bad.csv");
    cr_assert(strstr(y, "options: embedding_norm: 'sometimes' is not on or off"), "%s", y);
}

/* A UTF-8 byte order mark before the version line (a spreadsheet's or a Windows editor's CSV)
 * is skipped: the file reads as without it, and an error further on names the same column. */
Test(runs, byte_order_mark_is_skipped)
{
    static const char body[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,2,1,16,1,1,1,8,1f1b,full,off,0,on,10,,src\n";
    g_autofree char *bom = g_strconcat("\xef\xbb\xbf", body, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) plain = ssim_runs_load_data(body, -1, "p.csv", &error);
    g_autoptr(SsimRuns) marked = ssim_runs_load_data(bom, -1, "p.csv", &error);
    cr_assert_not_null(plain);
    cr_assert_not_null(marked, "%s", error ? error->message : "");
    g_autoptr(GString) a = ssim_runs_write(plain);
    g_autoptr(GString) b = ssim_runs_write(marked);
    cr_assert_str_eq(a->str, b->str);
    g_autofree char *bad = g_strconcat("\xef\xbb\xbf", "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n",
                                       "gpt,2,256,4,,1000,128,bf16,dgx-a100,2,1,x,1,1,1,8,1f1b,"
                                       "full,off,0,on,10,,src\n",
                                       NULL);
    g_autofree char *none = refusal(bad, "p.csv");
    cr_assert(strstr(none, "p.csv:3:41: tp: 'x' is not a positive integer"), "%s", none);
}

/* A table may hold rows of several files: each row keeps its file's path, interned by the table
 * that holds it (valid after the table it came from is freed). */
Test(runs, rows_keep_their_file)
{
    static const char text[] =
        "# shiftsim-runs v2\n" SSIM_RUNS_HEADER "\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,2,1,16,1,1,1,8,1f1b,full,off,0,on,10,,src\n"
        "gpt,2,256,4,,1000,128,bf16,dgx-a100,2,1,16,1,1,1,8,1f1b,full,off,0,on,20,,src\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRuns) all = ssim_runs_new("union");
    const char *names[] = {"dir/a.csv", "dir/b.csv"};
    for (guint f = 0; f < 2; f++) {
        g_autoptr(SsimRuns) one = ssim_runs_load_data(text, -1, names[f], &error);
        cr_assert_not_null(one, "%s", error ? error->message : "");
        cr_assert_str_eq(ssim_runs_get(one, 1)->path, names[f]);
        for (guint i = 0; i < ssim_runs_n(one); i++)
            ssim_runs_add(all, ssim_runs_get(one, i));
    }
    cr_assert_eq(ssim_runs_n(all), 4);
    cr_assert_str_eq(ssim_runs_get(all, 0)->path, "dir/a.csv");
    cr_assert_str_eq(ssim_runs_get(all, 3)->path, "dir/b.csv");
    cr_assert_eq(ssim_runs_get(all, 3)->line, 4);
    /* One pointer a file: rows of a file share their path. */
    cr_assert_eq(ssim_runs_get(all, 2)->path, ssim_runs_get(all, 3)->path);
    /* A row without a path of its own takes the table's. */
    SsimMeasuredRun bare;
    ssim_measured_run_init(&bare);
    ssim_runs_add(all, &bare);
    cr_assert_str_eq(ssim_runs_get(all, 4)->path, "union");
}
