/*
 * The shared options (src/app/options.c) and the verbs that take them: each group's entries carry
 * the option's one declaration (name, letter, storage) and the verb's help text; the checks and
 * the application to a split name the option in every error; the split options derive dp and the
 * global batch as documented; and the verbs compare and simulate refuse bad values with a usage
 * error, and compare writes its traces and plots.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"

#include "src/app/verbs.h"
#include "src/app/cli.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

static int compare(int argc, const char **argv)
{
    return ssim_verb_compare(argc, (char **)argv);
}

Test(options, entries_are_declared_once_with_the_verbs_text)
{
    SsimCliJob job = SSIM_CLI_JOB_INIT;
    GOptionEntry tp = ssim_cli_job_entry(&job, SSIM_OPT_TP, NULL);
    cr_assert_str_eq(tp.long_name, "tp");
    cr_assert_eq(tp.arg, G_OPTION_ARG_INT);
    cr_assert_eq(tp.arg_data, &job.tp);
    cr_assert_str_eq(tp.description,
                     "Tensor-parallel ranks per stage (inside one node unless --cross-node-tp)");
    GOptionEntry own = ssim_cli_job_entry(&job, SSIM_OPT_TP, "mine");
    cr_assert_str_eq(own.description, "mine");
    cr_assert_str_eq(own.arg_description, "N");
    GOptionEntry model = ssim_cli_entry_arg(ssim_cli_job_entry(&job, SSIM_OPT_MODEL, NULL), "NAME");
    cr_assert_eq(model.short_name, 'm');
    cr_assert_eq(model.arg_data, &job.model);
    cr_assert_str_eq(model.arg_description, "NAME");
    SsimCliOutput out = {0};
    GOptionEntry o = ssim_cli_output_entry(&out, SSIM_OPT_OUTPUT, NULL);
    cr_assert_eq(o.short_name, 'o');
    cr_assert_eq(o.arg, G_OPTION_ARG_FILENAME);
    cr_assert_eq(o.arg_data, &out.output);
    SsimCliLimits limits;
    GOptionEntry ev = ssim_cli_limits_entry(&limits, SSIM_OPT_MAX_EVENTS, NULL);
    cr_assert_str_eq(ev.long_name, "max-events");
    cr_assert_eq(ev.arg_data, &limits.max_events);
}

/* A whole group parses into its struct; strings are the caller's (freed by g_auto). */
Test(options, a_group_parses_into_its_struct)
{
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    g_auto(SsimCliPlace) place = {0};
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    ssim_cli_add_job(ctx, &job);
    ssim_cli_add_place(ctx, &place);
    const char *args[] = {"simulate", "-m",        "gpt-3-175b", "--tp", "8",    "-v",
                          "2",        "-B",        "64",         "-r",   "full", "--seq-parallel",
                          "-p",       "commshift", "--shift",    "dp"};
    int argc = G_N_ELEMENTS(args);
    char **argv = g_memdup2(args, sizeof args);
    cr_assert(g_option_context_parse(ctx, &argc, &argv, NULL));
    g_free(argv);
    cr_assert_str_eq(job.model, "gpt-3-175b");
    cr_assert_eq(job.tp, 8);
    cr_assert_eq(job.vstages, 2);
    cr_assert_eq(job.global_batch, 64);
    cr_assert_eq(job.pp, SSIM_CLI_UNSET, "not given");
    cr_assert_str_eq(job.recompute, "full");
    cr_assert(job.seq_parallel);
    cr_assert_str_eq(place.placement, "commshift");
    cr_assert_str_eq(place.shift, "dp");
    cr_assert(ssim_cli_job_has_recompute(&job));
    cr_assert_not(ssim_cli_job_has_schedule(&job));
}

/* dp takes the GPUs tp x pp leave (a tp x pp that leaves no whole dp is refused); the global
 * batch is 4 per GPU whatever the split; what --split names is not overridden by either
 * default. */
Test(options, apply_derives_dp_and_the_global_batch, .init = test_redirect)
{
    SsimCliJob job = SSIM_CLI_JOB_INIT;
    job.tp = 4;
    job.pp = 4;
    job.microbatch = 2;
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_OK);
    cr_assert_eq(par.dp, 4);
    cr_assert_eq(par.global_batch, 4 * 64, "4 sequences per GPU, not per split");

    char split[] = "dp=2,gbs=24";
    job.split = split;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_OK);
    cr_assert_eq(par.dp, 2);
    cr_assert_eq(par.global_batch, 24);

    job.split = NULL;
    job.pp = 3; /* 64 GPUs do not divide into tp 4 x pp 3: no dp, refused as such */
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_RUNTIME);
    job.pp = 32; /* 128 is more than 64 */
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_RUNTIME);
    job.dp = 1; /* a dp given: the split's own check (ssim_parallel_validate) judges it */
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_OK);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim simulate: tp x pp = 4 x 3 = 12 does not divide the 64 GPUs, "
                          "so no dp fills them"),
              "%s", err);
    cr_assert(strstr(err, "tp x pp = 4 x 32 = 128 is more than the 64 GPUs"), "%s", err);
}

/* The trap: tp 8 x pp 4 and tp 4 x pp 8 of 32 GPUs at their defaults compared batch 32
 * with batch 64; both now train on 128 sequences, and so does every other split of 32 GPUs. */
Test(options, default_global_batch_is_the_same_for_every_split)
{
    const guint splits[][2] = {{8, 4}, {4, 8}, {1, 1}, {2, 16}, {1, 32}, {8, 1}};
    for (gsize i = 0; i < G_N_ELEMENTS(splits); i++) {
        SsimCliJob job = SSIM_CLI_JOB_INIT;
        job.tp = (gint)splits[i][0];
        job.pp = (gint)splits[i][1];
        SsimParallel par;
        ssim_parallel_init(&par);
        cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 32), SSIM_EXIT_OK);
        cr_assert_eq(par.global_batch, 128, "tp %u pp %u: global batch %u", splits[i][0],
                     splits[i][1], par.global_batch);
    }
    /* A microbatch that 4 per GPU cannot hold whole is the one case that rounds up: dp 32 x
     * microbatch 8 needs a multiple of 256. */
    cr_assert_eq(ssim_parallel_default_global_batch(32, 32, 8), 256);
    cr_assert_eq(ssim_parallel_default_global_batch(32, 4, 2), 128);
    cr_assert_eq(ssim_parallel_default_global_batch(1024, 8, 1), 4096);
}

Test(options, errors_name_the_option, .init = test_redirect)
{
    SsimCliJob job = SSIM_CLI_JOB_INIT;
    job.microbatch = 0;
    cr_assert_eq(ssim_cli_job_check_counts("simulate", &job), SSIM_EXIT_USAGE);
    /* -1 is a value, not "not given": it used to select the default silently. */
    job.microbatch = -1;
    cr_assert_eq(ssim_cli_job_check_counts("simulate", &job), SSIM_EXIT_USAGE);
    job.microbatch = SSIM_CLI_UNSET;
    job.nodes = 0;
    cr_assert_eq(ssim_cli_job_check_counts("simulate", &job), SSIM_EXIT_OK);
    cr_assert_eq(ssim_cli_job_check_nodes("simulate", &job), SSIM_EXIT_USAGE);
    job.nodes = -1;
    cr_assert_eq(ssim_cli_job_check_nodes("simulate", &job), SSIM_EXIT_USAGE);
    job.nodes = SSIM_CLI_UNSET;
    char tp_comm[] = "nope";
    job.tp_comm = tp_comm;
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply_fields("sweep", &job, &par), SSIM_EXIT_USAGE);
    job.tp_comm = NULL;
    char fp8[] = "e5m2";
    job.fp8 = fp8;
    cr_assert_eq(ssim_cli_job_apply_fields("simulate", &job, &par), SSIM_EXIT_USAGE);
    job.fp8 = NULL;
    char split[] = "tp=x";
    job.split = split;
    cr_assert_eq(ssim_cli_job_apply("compare", &job, &par, 8), SSIM_EXIT_USAGE);
    char bad[] = "xml";
    SsimCliOutput out = {.format = bad};
    SsimFormat format;
    cr_assert_eq(ssim_cli_output_format("replay", &out, &format), SSIM_EXIT_USAGE);
    char nowhere[] = "nowhere";
    SsimCliPlace place = {.placement = nowhere};
    SsimPlacement placement = SSIM_PLACEMENT_INIT;
    cr_assert_eq(ssim_cli_place_parse("simulate", &place, &placement), SSIM_EXIT_USAGE);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim simulate: --microbatch: must be a positive integer, not 0 (try "
                          "'shiftsim simulate --help')\n"),
              "%s", err);
    cr_assert(strstr(err, "shiftsim simulate: --microbatch: must be a positive integer, not -1"),
              "%s", err);
    cr_assert(strstr(err, "shiftsim simulate: --nodes: must be a positive integer"), "%s", err);
    cr_assert(strstr(err, "shiftsim sweep: --tp-comm: "), "%s", err);
    cr_assert(strstr(err, "shiftsim simulate: --fp8: fp8: 'e5m2' is not an FP8 format (off, "
                          "hybrid or e4m3)"),
              "%s", err);
    cr_assert(strstr(err, "shiftsim compare: --split: "), "%s", err);
    cr_assert(strstr(err, "shiftsim replay: --format: 'xml' is not table, csv or json"), "%s", err);
    cr_assert(strstr(err, "shiftsim simulate: --placement: unknown placement 'nowhere'"), "%s",
              err);
}

Test(compare, usage_errors, .init = test_redirect)
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

Test(compare, simulate_honours_the_placement, .init = test_redirect)
{
    const char *a[] = {"simulate",    "--nodes",   "2",       "--tp", "4",        "--pp", "2",
                       "--placement", "commshift", "--shift", "dp",   "--format", "csv"};
    cr_assert_eq(ssim_verb_simulate(13, (char **)a), 0);
    const char *b[] = {"simulate", "--placement", "nowhere"};
    cr_assert_eq(ssim_verb_simulate(3, (char **)b), 2);
    const char *c[] = {"simulate", "--placement", "commshift", "--shift", "dp,xx"};
    cr_assert_eq(ssim_verb_simulate(5, (char **)c), 2);
}

/* The verb end to end: the report to --output, a trace per policy, the bars and a Gantt chart
 * per policy. */
Test(compare, verb_writes_report_traces_and_plots, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-compare-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "t", NULL);
    g_autofree char *plot = g_build_filename(dir, "p.png", NULL);
    g_autofree char *out = g_build_filename(dir, "out.csv", NULL);
    const char *argv[] = {"compare", "--policies", "alpa,commshift", "--trace", prefix,
                          "--plot",  plot,         "--output",       out,       "-f",
                          "csv"};
    cr_assert_eq(compare(G_N_ELEMENTS(argv), argv), 0);
    const char *files[] = {"out.csv", "t-alpa.json", "t-commshift.json", "p.dat",
                           "p.gp",    "p-alpa.gp",   "p-commshift.gp"};
    for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = g_build_filename(dir, files[i], NULL);
        cr_assert(g_file_test(path, G_FILE_TEST_EXISTS), "%s", files[i]);
    }
    g_autofree char *csv = NULL;
    cr_assert(g_file_get_contents(out, &csv, NULL, NULL));
    cr_assert(g_str_has_prefix(csv, "policy,schedule,step_ms,"), "%s", csv);
    cr_assert(strstr(csv, "\ncommshift,alpa,"), "%s", csv);
    test_remove_tree(dir);
}

/* compare's split line names an uneven split as simulate's does (GPT-J's 28 layers balanced on
 * 3 stages: 9/10/9, the head 0.946 of a layer). */
Test(compare, split_line_names_an_uneven_split, .init = test_redirect)
{
    const char *args[] = {"shiftsim",   "compare", "-n", "3",  "--tp",           "2",
                          "--pp",       "3",       "-B", "48", "--stage-layers", "balanced",
                          "--policies", "megatron"};
    int rc = 1;
    g_autofree char *out = test_cli_stdout(args, G_N_ELEMENTS(args), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, ", stage layers 9/10/9\n"), "%s", out);
}

/* The audit's silent misconfigurations: an alias the substring search missed ("batch"), blanks
 * after commas, and a repeated key. */
Test(options, split_fields_decide_what_was_given, .init = test_redirect)
{
    SsimCliJob job = SSIM_CLI_JOB_INIT;
    char alias[] = "dp=4,tp=4,pp=2,batch=64";
    job.split = alias;
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 32), SSIM_EXIT_OK);
    cr_assert_eq(par.global_batch, 64, "batch= is the global batch, not a default");
    char spaced[] = "tp=4, dp=1, pp=2";
    job.split = spaced;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 32), SSIM_EXIT_OK);
    cr_assert_eq(par.dp, 1, "dp=1 after a blank was overridden");
    char sched[] = "schedule=gpipe, recompute=full";
    job.split = sched;
    cr_assert(ssim_cli_job_has_schedule(&job));
    cr_assert(ssim_cli_job_has_recompute(&job));
    char named[] = "dp=2,placement=commshift"; /* no "schedule" key, though a value says so */
    job.split = named;
    cr_assert_not(ssim_cli_job_has_schedule(&job));
    char twice[] = "tp=4,dp=2,tp=2";
    job.split = twice;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 32), SSIM_EXIT_USAGE);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "--split: tp: given twice"), "%s", err);
}

/* Every count option refuses -1 and 0 with its own name (they used to mean "default"). */
Test(options, negative_and_zero_counts_are_refused_by_name, .init = test_redirect)
{
    const char *opts[][3] = {{"simulate", "--tp", "-1"},
                             {"simulate", "--pp", "0"},
                             {"simulate", "--dp", "-1"},
                             {"simulate", "--nodes", "-1"},
                             {"simulate", "--global-batch", "-1"},
                             {"simulate", "--microbatch", "0"},
                             {"simulate", "-v", "-1"},
                             {"sweep", "--gpus", "-1"},
                             {"sweep", "--nodes", "0"},
                             {"compare", "--budget", "-1"},
                             {"compare", "--budget", "0"},
                             {"calibrate", "--nodes", "-2"}};
    for (gsize i = 0; i < G_N_ELEMENTS(opts); i++) {
        const char *argv[] = {"shiftsim", opts[i][0], opts[i][1], opts[i][2]};
        cr_assert_eq(ssim_cli_main(4, (char **)argv), SSIM_EXIT_USAGE, "%s %s %s", opts[i][0],
                     opts[i][1], opts[i][2]);
    }
}

/* Parses `args` (args[0] the program) into a context holding the job group. */
static gboolean parse_job(SsimCliJob *job, const char *const *args, int n)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    ssim_cli_add_job(ctx, job);
    int argc = n;
    char **argv = g_memdup2(args, sizeof *args * (gsize)n);
    gboolean ok = g_option_context_parse(ctx, &argc, &argv, NULL);
    g_free(argv);
    return ok;
}

/* Megatron-LM's names store into the option they alias: a job given with them is the job given
 * with ours, field by field. */
Test(options, megatron_names_are_aliases)
{
    const char *megatron[] = {"simulate",
                              "--tensor-model-parallel-size",
                              "4",
                              "--pipeline-model-parallel-size",
                              "2",
                              "--micro-batch-size",
                              "2",
                              "--global-batch-size",
                              "64",
                              "--recompute-granularity",
                              "selective",
                              "--sequence-parallel",
                              "--use-distributed-optimizer",
                              "--overlap-grad-reduce",
                              "--no-async-tensor-model-parallel-allreduce",
                              "--use-flash-attn",
                              "--transformer-impl",
                              "local",
                              "--fp8-format",
                              "e4m3",
                              "--num-layers-per-virtual-pipeline-stage",
                              "7"};
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&job, megatron, G_N_ELEMENTS(megatron)));
    cr_expect_eq(job.tp, 4);
    cr_expect_eq(job.pp, 2);
    cr_expect_eq(job.microbatch, 2);
    cr_expect_eq(job.global_batch, 64);
    cr_expect_str_eq(job.recompute, "selective");
    cr_expect(job.seq_parallel);
    cr_expect(job.distributed_optimizer);
    cr_expect(job.overlap_grad_reduce);
    cr_expect_eq(job.layers_per_vstage, 7);
    cr_expect(ssim_cli_job_has_bucket(&job));
    cr_expect(ssim_cli_job_has_schedule(&job));

    /* Applied to GPT-J 6B (28 layers, bf16) on 64 GPUs: the same split as ours. */
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 64), SSIM_EXIT_OK);
    cr_assert_eq(ssim_cli_job_apply_model("simulate", &job, model, &par), SSIM_EXIT_OK);
    cr_expect_eq(par.dp, 8);
    cr_expect_eq(par.zero_stage, 1);
    cr_expect(par.sequence_parallel);
    cr_expect_eq(par.recompute, SSIM_RECOMPUTE_SELECTIVE);
    cr_expect_eq(par.virtual_stages, 2, "28 layers / (pp 2 x 7)");
    cr_expect(par.tp_sync_grad, "--no-async-tensor-model-parallel-allreduce: --tp-overlap off");
    cr_expect_eq(par.attention, SSIM_ATTENTION_FLASH, "--use-flash-attn: --attention flash");
    cr_expect_eq(par.transformer_impl, SSIM_TRANSFORMER_IMPL_LOCAL, "Megatron-LM's own name");
    cr_expect_eq(par.fp8, SSIM_FP8_E4M3, "--fp8-format: --fp8");
    cr_expect_str_eq(par.schedule, "interleaved");
    /* Megatron-LM's --ddp-bucket-size default: max(40M, 1M dp) parameters, here of 2 bytes. */
    cr_expect_eq(par.dp_bucket_bytes, 80000000);

    const char *ours[] = {"simulate",
                          "--tp",
                          "4",
                          "--pp",
                          "2",
                          "--microbatch",
                          "2",
                          "--global-batch",
                          "64",
                          "--recompute",
                          "selective",
                          "--seq-parallel",
                          "--zero",
                          "1",
                          "--vstages",
                          "2",
                          "--bucket",
                          "80000000",
                          "--schedule",
                          "interleaved",
                          "--tp-overlap",
                          "off",
                          "--attention",
                          "flash",
                          "--transformer-impl",
                          "local",
                          "--fp8",
                          "e4m3"};
    g_auto(SsimCliJob) same = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&same, ours, G_N_ELEMENTS(ours)));
    SsimParallel want;
    ssim_parallel_init(&want);
    cr_assert_eq(ssim_cli_job_apply("simulate", &same, &want, 64), SSIM_EXIT_OK);
    cr_assert_eq(ssim_cli_job_apply_model("simulate", &same, model, &want), SSIM_EXIT_OK);
    g_autofree char *a = ssim_parallel_to_string(&par);
    g_autofree char *b = ssim_parallel_to_string(&want);
    cr_expect_str_eq(a, b);
}

/* What cannot be meant is refused, naming Megatron-LM's option. */
/* Megatron-LM's --pipeline-model-parallel-layout (an alias of --stage-layers) under a given pp:
 * its chunk count sets the virtual stages and, without --schedule, the interleaved schedule, as
 * Megatron-LM derives them; a list of pp entries, or v given, leaves them alone. */
Test(options, a_layout_sets_the_virtual_stages)
{
    const char *layout[] = {"simulate", "--pp", "2", "--pipeline-model-parallel-layout",
                            "Et*6|(t*8|)*2,t*6L"};
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&job, layout, G_N_ELEMENTS(layout)));
    cr_expect(ssim_cli_job_has_schedule(&job));
    g_autoptr(SsimModel) model = ssim_model_default(); /* GPT-J, 28 layers */
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 16), SSIM_EXIT_OK);
    cr_assert_eq(ssim_cli_job_apply_model("simulate", &job, model, &par), SSIM_EXIT_OK);
    cr_expect_eq(par.virtual_stages, 2);
    cr_expect_str_eq(par.schedule, "interleaved");
    static const guint16 want[] = {6, 8, 8, 6, 0};
    cr_expect_arr_eq(par.stage_layers, want, sizeof want);
    cr_expect(ssim_parallel_validate(&par, model, NULL, NULL));

    const char *stages[] = {"simulate", "--pp", "4", "--stage-layers", "6,8,8,6"};
    g_auto(SsimCliJob) plain = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&plain, stages, G_N_ELEMENTS(stages)));
    cr_expect_not(ssim_cli_job_has_schedule(&plain), "one entry a stage: nothing to derive");
    const char *given[] = {"simulate", "--pp", "2", "-v", "4", "--stage-layers", "6,8,8,6"};
    g_auto(SsimCliJob) v4 = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&v4, given, G_N_ELEMENTS(given)));
    cr_expect_not(ssim_cli_job_has_schedule(&v4), "-v given: it stands (and is refused later)");
}

/* Megatron-LM's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers and
 * --account-for-{embedding,loss}-in-pipeline-split become the stage_layers the job runs once the
 * model's layers are known (GPT-J: 28 layers): 4 and 6 first and last on 4 stages are 4/9/9/6;
 * the embedding and loss counted on pp 2 x v 3, (28 + 2) / 6 = 5 a chunk, 4/5*4/4.  A refusal
 * names our option. */
Test(options, megatron_first_last_and_counted_layers, .init = test_redirect)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    const struct {
        const char *args[9];
        const char *want; /* stage_layers, or the message */
        int rc;
    } cases[] = {
        {{"simulate", "--pp", "4", "--decoder-first-pipeline-num-layers", "4",
          "--last-stage-layers", "6"},
         "4/9/9/6",
         SSIM_EXIT_OK},
        {{"simulate", "--pp", "2", "-v", "3", "--schedule", "interleaved",
          "--account-for-embedding-in-pipeline-split", "--loss-in-split"},
         "4/5*4/4",
         SSIM_EXIT_OK},
        {{"simulate", "--pp", "4", "--first-stage-layers", "5"},
         "--first-stage-layers: 23 layers of gpt-j-6b remain for the 3 stages between",
         SSIM_EXIT_USAGE},
        {{"simulate", "--pp", "4", "--embedding-in-split"},
         "--embedding-in-split: the 28 layers of gpt-j-6b and the embedding make 29",
         SSIM_EXIT_USAGE},
        {{"simulate", "--pp", "4", "--first-stage-layers", "4", "--loss-in-split"},
         "--first-stage-layers: contradicts loss_in_split",
         SSIM_EXIT_USAGE},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        int n = 0;
        while (n < 9 && cases[i].args[n])
            n++;
        g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
        cr_assert(parse_job(&job, cases[i].args, n), "case %zu", i);
        SsimParallel par;
        ssim_parallel_init(&par);
        cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 8), SSIM_EXIT_OK, "case %zu", i);
        int rc = ssim_cli_job_apply_model("simulate", &job, model, &par);
        cr_assert_eq(rc, cases[i].rc, "case %zu", i);
        if (rc != SSIM_EXIT_OK) {
            g_autofree char *err = test_stderr();
            cr_expect(strstr(err, cases[i].want), "case %zu: %s", i, err);
            continue;
        }
        g_autoptr(GString) got = g_string_new(NULL);
        ssim_parallel_append_stage_layers(got, &par);
        cr_expect_str_eq(got->str, cases[i].want, "case %zu", i);
        cr_expect_not(ssim_parallel_layers_pending(&par));
        cr_expect(ssim_parallel_validate(&par, model, NULL, NULL), "case %zu", i);
    }
}

/* A suggested split gives way to the half the user gives: the model's suggestion tp 1 x pp 4 on
 * 8 GPUs with --tp 8 is tp 8 x pp 1 (dp 1), with --pp 2 it stays tp 1 (1 x 2 divides 8: dp 4);
 * with tp 4 x pp 2 suggested, --pp 8 makes tp 1.  A dp given leaves both as they are. */
Test(options, a_suggestion_gives_way_to_the_given_half, .init = test_redirect)
{
    const struct {
        const char *args[5];
        guint tp, pp, dp;       /* the suggestion */
        guint want_tp, want_pp; /* after */
    } cases[] = {
        {{"simulate", "--tp", "8"}, 1, 4, 2, 8, 1},
        {{"simulate", "--pp", "2"}, 1, 4, 2, 1, 2},
        {{"simulate", "--pp", "8"}, 4, 2, 1, 1, 8},
        {{"simulate", "--split", "tp=8"}, 1, 4, 2, 8, 1},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        int n = 0;
        while (n < 5 && cases[i].args[n])
            n++;
        g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
        cr_assert(parse_job(&job, cases[i].args, n), "case %zu", i);
        SsimParallel par;
        ssim_parallel_init(&par);
        par.tp = cases[i].tp, par.pp = cases[i].pp, par.dp = cases[i].dp;
        cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 8), SSIM_EXIT_OK, "case %zu", i);
        cr_expect_eq(par.tp, cases[i].want_tp, "case %zu", i);
        cr_expect_eq(par.pp, cases[i].want_pp, "case %zu", i);
        cr_expect_eq(par.dp * par.tp * par.pp, 8, "case %zu", i);
    }
    /* With dp given the user named the product: left for the cluster check to refuse. */
    const char *args[] = {"simulate", "--tp", "8", "--dp", "2"};
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    cr_assert(parse_job(&job, args, 5));
    SsimParallel par;
    ssim_parallel_init(&par);
    par.tp = 1, par.pp = 4, par.dp = 2;
    cr_assert_eq(ssim_cli_job_apply("simulate", &job, &par, 8), SSIM_EXIT_OK);
    cr_expect_eq(par.pp, 4);
    cr_expect_eq(ssim_parallel_world(&par), 64, "2 x 8 x 4: the cluster check refuses it");
}

/* --fp8-recipe: delayed keeps the amax reductions (step cost fp8_amax), the current and block
 * scalings turn them off; refused without --fp8, for an unknown recipe, and against a
 * --step-costs that says the opposite. */
Test(options, fp8_recipe_sets_the_amax_reductions, .init = test_redirect)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    const struct {
        const char *args[7];
        int rc;
        int amax; /* -1: the default (not set) */
        const char *says;
    } cases[] = {
        {{"simulate", "--fp8", "hybrid", "--fp8-recipe", "tensorwise"}, SSIM_EXIT_OK, 0, NULL},
        {{"simulate", "--fp8", "e4m3", "--fp8-recipe", "MXFP8"}, SSIM_EXIT_OK, 0, NULL},
        {{"simulate", "--fp8", "hybrid", "--fp8-recipe", "delayed"}, SSIM_EXIT_OK, 1, NULL},
        {{"simulate", "--fp8", "hybrid"}, SSIM_EXIT_OK, -1, NULL},
        {{"simulate", "--fp8-recipe", "delayed"},
         SSIM_EXIT_USAGE,
         0,
         "--fp8-recipe: needs --fp8 hybrid or e4m3"},
        {{"simulate", "--fp8", "hybrid", "--fp8-recipe", "current"},
         SSIM_EXIT_USAGE,
         0,
         "'current' is not a recipe (delayed, tensorwise, mxfp8 or blockwise)"},
        {{"simulate", "--fp8", "hybrid", "--fp8-recipe", "blockwise", "--step-costs", "+fp8_amax"},
         SSIM_EXIT_USAGE,
         0,
         "--fp8-recipe blockwise contradicts --step-costs +fp8_amax"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        int n = 0;
        while (n < 7 && cases[i].args[n])
            n++;
        g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
        cr_assert(parse_job(&job, cases[i].args, n), "case %zu", i);
        SsimParallel par;
        ssim_parallel_init(&par);
        int rc = ssim_cli_job_apply("simulate", &job, &par, 8);
        cr_assert_eq(rc, cases[i].rc, "case %zu", i);
        if (rc != SSIM_EXIT_OK) {
            g_autofree char *err = test_stderr();
            cr_expect(strstr(err, cases[i].says), "case %zu: %s", i, err);
            continue;
        }
        guint bit = 1u << SSIM_STEP_COST_FP8_AMAX;
        cr_expect_eq((par.step_costs_set & bit) != 0, cases[i].amax >= 0, "case %zu", i);
        cr_expect_eq(ssim_parallel_step_cost_on(&par, model, SSIM_STEP_COST_FP8_AMAX),
                     cases[i].amax != 0, "case %zu", i);
    }
}

Test(options, megatron_names_refuse_what_contradicts, .init = test_redirect)
{
    g_autoptr(SsimModel) model = ssim_model_default(); /* 28 layers */
    const struct {
        const char *args[5];
        const char *message;
    } cases[] = {
        {{"simulate", "--pp", "2", "--num-layers-per-virtual-pipeline-stage", "5"},
         "--num-layers-per-virtual-pipeline-stage: the model's 28 layers do not split into 2 "
         "stages of chunks of 5 layers"},
        {{"simulate", "--vstages", "4", "--num-layers-per-virtual-pipeline-stage", "7"},
         "--num-layers-per-virtual-pipeline-stage 7 is --vstages 2 here, not --vstages 4"},
        {{"simulate", "--zero", "0", "--use-distributed-optimizer", NULL},
         "--use-distributed-optimizer is --zero 1: it contradicts --zero 0"},
        {{"simulate", "--bucket", "off", "--overlap-grad-reduce", NULL},
         "--overlap-grad-reduce: contradicts --bucket off"},
        {{"simulate", "--tp-overlap", "on", "--no-async-tensor-model-parallel-allreduce"},
         "--no-async-tensor-model-parallel-allreduce is --tp-overlap off: it contradicts "
         "--tp-overlap on"},
        {{"simulate", "--attention", "unfused", "--use-flash-attn"},
         "--use-flash-attn is --attention flash: it contradicts --attention unfused"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
        int n = cases[i].args[4] ? 5 : 4;
        cr_assert(parse_job(&job, cases[i].args, n));
        SsimParallel par;
        ssim_parallel_init(&par);
        par.pp = 2;
        int rc = ssim_cli_job_apply("simulate", &job, &par, 64);
        if (rc == SSIM_EXIT_OK)
            rc = ssim_cli_job_apply_model("simulate", &job, model, &par);
        cr_expect_eq(rc, SSIM_EXIT_USAGE, "case %zu", i);
    }
    g_autofree char *err = test_stderr();
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
        cr_expect(strstr(err, cases[i].message), "no '%s' in:\n%s", cases[i].message, err);
}

/* An alias takes the verb's own entry of its name (sweep's --tp is a list) and is listed in one
 * paragraph of --help, not as entries; a flag of its own is offered only with the shared entry. */
Test(options, megatron_names_follow_the_verbs_entries)
{
    g_autofree char *tp_list = NULL, *zero_list = NULL;
    g_auto(SsimCliJob) job = SSIM_CLI_JOB_INIT;
    GOptionEntry entries[] = {
        {"tp", 0, 0, G_OPTION_ARG_STRING, &tp_list, "Tensor-parallel sizes", "LIST"},
        {"zero", 0, 0, G_OPTION_ARG_STRING, &zero_list, "ZeRO stages", "LIST"},
        ssim_cli_job_entry(&job, SSIM_OPT_BUCKET, NULL),
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_description(ctx, "Examples: none.");
    ssim_cli_add_entries(ctx, entries, &job);
    const char *args[] = {"sweep", "--tensor-model-parallel-size", "2,4", "--overlap-grad-reduce"};
    int argc = G_N_ELEMENTS(args);
    char **argv = g_memdup2(args, sizeof args);
    cr_assert(g_option_context_parse(ctx, &argc, &argv, NULL));
    g_free(argv);
    cr_expect_str_eq(tp_list, "2,4");
    cr_expect(job.overlap_grad_reduce);
    /* The verb's own --zero is not the shared one: no --use-distributed-optimizer. */
    const char *zero[] = {"sweep", "--use-distributed-optimizer"};
    argc = G_N_ELEMENTS(zero);
    argv = g_memdup2(zero, sizeof zero);
    cr_expect_not(g_option_context_parse(ctx, &argc, &argv, NULL));
    g_free(argv);
    g_autofree char *help = g_option_context_get_help(ctx, TRUE, NULL);
    cr_expect(strstr(help, "Examples: none.\n\nMegatron-LM's names, accepted too:\n"), "%s", help);
    cr_expect(strstr(help, "--tensor-model-parallel-size (--tp)"), "%s", help);
    cr_expect(strstr(help, "--overlap-grad-reduce (Megatron-LM's --bucket)"), "%s", help);
    cr_expect_null(strstr(help, "use-distributed-optimizer"), "%s", help);
    cr_expect_null(strstr(help, "  --tensor-model-parallel-size="), "listed as an entry: %s", help);
    for (SsimCliOption o = 0; o < SSIM_OPT_N; o++) {
        const char *name = ssim_cli_megatron_name(o);
        cr_expect(name == NULL || strchr(name, '-'), "%s", name);
    }
    cr_expect_str_eq(ssim_cli_megatron_name(SSIM_OPT_PP), "pipeline-model-parallel-size");
    cr_expect_null(ssim_cli_megatron_name(SSIM_OPT_MODEL));
}

/* sweep varies dp, which Megatron-LM's bucket size depends on: --overlap-grad-reduce is refused
 * there with the way out, before any work. */
Test(options, sweep_refuses_overlap_grad_reduce, .init = test_redirect)
{
    const char *argv[] = {"sweep", "--overlap-grad-reduce"};
    cr_assert_eq(ssim_verb_sweep(G_N_ELEMENTS(argv), (char **)argv), SSIM_EXIT_USAGE);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "shiftsim sweep: --overlap-grad-reduce: give --bucket BYTES, or "
                          "--placements megatron"),
              "%s", err);
}

Test(options, seq_length_and_dtype_override_the_model, .init = test_redirect)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    SsimCliJob job = SSIM_CLI_JOB_INIT;
    job.seq_length = 4096;
    job.dtype = (char *)"fp16";
    cr_assert_eq(ssim_cli_job_override_model("simulate", &job, m), SSIM_EXIT_OK);
    cr_assert_eq(m->seq_len, 4096);
    cr_assert_eq(m->dtype, SSIM_DTYPE_FP16);
    /* fp16 turns the loss scaler on by default, bf16's fp32 reduction off. */
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_LOSS_SCALE));
    cr_assert_not(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_GRAD_FP32));
    job.dtype = (char *)"int8";
    cr_assert_eq(ssim_cli_job_override_model("simulate", &job, m), SSIM_EXIT_USAGE);
    job.dtype = NULL;
    job.seq_length = 0;
    cr_assert_eq(ssim_cli_job_override_model("simulate", &job, m), SSIM_EXIT_USAGE);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "--dtype: 'int8' is not one of bf16, fp16, tf32, fp32"), "%s", err);
    cr_assert(strstr(err, "--seq-length: must be a positive integer, not 0"), "%s", err);
    /* The split options take the stage list and the terms. */
    SsimCliJob j2 = SSIM_CLI_JOB_INIT;
    j2.stage_layers = (char *)"4,3";
    j2.step_costs = (char *)"-clip";
    ssim_parallel_init(&p);
    cr_assert_eq(ssim_cli_job_apply_fields("simulate", &j2, &p), SSIM_EXIT_OK);
    cr_assert(p.stage_layers[0] == 4 && p.stage_layers[1] == 3 && p.stage_layers[2] == 0);
    cr_assert_not(ssim_parallel_step_cost_on(&p, m, SSIM_STEP_COST_CLIP));
}

/* --cross-node-tp is the split's cross_node_tp=on: a tp group larger than a node is refused
 * without it (the error names the option), and with it the run is the --split one, byte for
 * byte (and not the run of tp 8 x pp 2 on the same GPUs). */
Test(options, cross_node_tp_lets_a_tp_group_span_nodes, .init = test_redirect)
{
    int rc;
    const char *refused[] = {"shiftsim", "simulate", "-n", "2", "--tp", "16", "-B", "16"};
    g_autofree char *none = test_cli_stdout(refused, G_N_ELEMENTS(refused), &rc);
    cr_assert_eq(rc, SSIM_EXIT_RUNTIME);
    cr_assert_str_empty(none);
    g_autofree char *err = test_stderr();
    cr_assert(strstr(err, "tp (16) is larger than the GPUs per node (8); set cross_node_tp=on "
                          "(--cross-node-tp)"),
              "%s", err);

    const char *flag[] = {"shiftsim", "simulate",        "-n", "2",  "--tp", "16", "-B",
                          "16",       "--cross-node-tp", "-f", "csv"};
    const char *split[] = {"shiftsim", "simulate", "-n", "2",  "--split", "tp=16,cross_node_tp=on",
                           "-B",       "16",       "-f", "csv"};
    const char *inside[] = {"shiftsim", "simulate", "-n", "2",  "--tp", "8",
                            "--pp",     "2",        "-B", "16", "-f",   "csv"};
    g_autofree char *a = test_cli_stdout(flag, G_N_ELEMENTS(flag), &rc);
    cr_assert_eq(rc, 0);
    g_autofree char *b = test_cli_stdout(split, G_N_ELEMENTS(split), &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(a, b);
    const char *table[] = {"shiftsim", "simulate",       "-n", "2", "--tp", "16", "-B",
                           "16",       "--cross-node-tp"};
    g_autofree char *t = test_cli_stdout(table, G_N_ELEMENTS(table), &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(t, ", cross-node-tp on"), "%s", t);
    g_autofree char *c = test_cli_stdout(inside, G_N_ELEMENTS(inside), &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_neq(a, c);
}
