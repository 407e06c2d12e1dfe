/*
 * Tests for the parallel module: defaults, split strings, the rank <-> coordinate mapping
 * (checked against a hand-written Megatron-style formula and as a bijection), and one test per
 * validation rule asserting that the message names the rule.
 */
#include <criterion/criterion.h>

#include <shiftsim/parallel.h>

#include <string.h>

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message '%s' lacks '%s'", (msg), (needle))

static SsimModel *gptj;
static SsimCluster *h200; /* 4 nodes x 8 */

static void setup(void)
{
    gptj = ssim_model_default();
    h200 = ssim_cluster_default();
}

static void teardown(void)
{
    ssim_model_free(gptj);
    ssim_cluster_free(h200);
}

TestSuite(parallel, .init = setup, .fini = teardown);

/* dp=4, tp=4, pp=2 on 32 GPUs, 8 microbatches. */
static SsimParallel good(void)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p, "dp=4,tp=4,pp=2,mb=2,gbs=64", NULL));
    return p;
}

/* Expects validation to fail with a message containing `needle`. */
static void expect_rule(const SsimParallel *p, const SsimModel *m, const SsimCluster *c,
                        const char *needle)
{
    GError *error = NULL;
    cr_assert_not(ssim_parallel_validate(p, m, c, &error), "validated, expected '%s'", needle);
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    assert_has(error->message, needle);
    g_error_free(error);
}

/* Field-wise equality (memcmp would compare padding). */
static gboolean par_equal(const SsimParallel *a, const SsimParallel *b)
{
    return a->dp == b->dp && a->tp == b->tp && a->pp == b->pp &&
           a->virtual_stages == b->virtual_stages && a->microbatch == b->microbatch &&
           a->global_batch == b->global_batch && a->sequence_parallel == b->sequence_parallel &&
           a->recompute == b->recompute && a->zero_stage == b->zero_stage &&
           a->dp_bucket_bytes == b->dp_bucket_bytes && a->tp_comm == b->tp_comm &&
           a->allow_cross_node_tp == b->allow_cross_node_tp && a->order[0] == b->order[0] &&
           a->order[1] == b->order[1] && a->order[2] == b->order[2] &&
           strcmp(a->schedule, b->schedule) == 0 && strcmp(a->placement, b->placement) == 0 &&
           a->tp_sync_grad == b->tp_sync_grad && a->attention == b->attention &&
           a->transformer_impl == b->transformer_impl && a->fp8 == b->fp8 &&
           a->tp_comm_overlap == b->tp_comm_overlap && a->cross_entropy == b->cross_entropy &&
           a->launch_blocking == b->launch_blocking && a->rmsnorm == b->rmsnorm &&
           a->recompute_layers == b->recompute_layers &&
           a->overlap_param_gather == b->overlap_param_gather;
}

/* `p`'s canonical string has `needle` and parses back to `p`. */
static void assert_round_trip(const SsimParallel *p, const char *needle)
{
    g_autofree char *s = ssim_parallel_to_string(p);
    cr_assert_not_null(strstr(s, needle), "%s", s);
    SsimParallel q;
    ssim_parallel_init(&q);
    cr_assert(ssim_parallel_parse(&q, s, NULL), "%s", s);
    cr_assert(par_equal(p, &q), "round trip of %s", s);
}

/* The defaults' canonical string leaves `key` out (a default is not written). */
static void assert_default_unwritten(const char *key)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    g_autofree char *s = ssim_parallel_to_string(&p);
    cr_assert_null(strstr(s, key), "%s", s);
}

/*
 * A switch `key` (the gboolean at `field` of SsimParallel): off by default and not written;
 * `alias` = `on` turns it on, and it round-trips as ",key=on"; a value that is no switch is
 * refused naming the key and the value, and leaves it on.  Returns the switched-on split.
 */
static SsimParallel assert_switch(const char *key, gsize field, const char *alias, const char *on,
                                  const char *bad)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    const gboolean *v = (const gboolean *)((const char *)&p + field);
    cr_assert_not(*v, "%s", key);
    assert_default_unwritten(key);
    cr_assert(ssim_parallel_set(&p, alias, on, NULL), "%s=%s", alias, on);
    cr_assert(*v, "%s=%s", alias, on);
    g_autofree char *canonical = g_strdup_printf(",%s=on", key);
    assert_round_trip(&p, canonical);
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, key, bad, &error));
    g_autofree char *named = g_strdup_printf("%s: '%s'", key, bad);
    cr_assert(strstr(error->message, named), "%s", error->message);
    g_clear_error(&error);
    cr_assert(*v, "an error leaves the value");
    return p;
}

Test(parallel, defaults)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.dp, 1);
    cr_assert_eq(p.tp, 1);
    cr_assert_eq(p.pp, 1);
    cr_assert_eq(p.virtual_stages, 1);
    cr_assert_str_eq(p.schedule, "1f1b");
    cr_assert_str_eq(p.placement, "megatron");
    cr_assert_eq(p.order[0], SSIM_AXIS_TP);
    cr_assert_eq(p.order[1], SSIM_AXIS_DP);
    cr_assert_eq(p.order[2], SSIM_AXIS_PP);
    cr_assert_eq(p.recompute, SSIM_RECOMPUTE_NONE);
    cr_assert_eq(p.tp_comm, SSIM_TP_COMM_ALLREDUCE);
    cr_assert(ssim_parallel_validate(&p, gptj, NULL, NULL));
}

Test(parallel, parse_and_round_trip)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    GError *error = NULL;
    cr_assert(ssim_parallel_parse(&p,
                                  "dp=2, tp=4 ,pp=4,v=2,mb=1,gbs=64,sp=on,recompute=selective,"
                                  "zero=1,bucket=25MB,order=tp-pp-dp,schedule=interleaved,"
                                  "placement=commshift",
                                  &error),
              "%s", error ? error->message : "");
    cr_assert_eq(p.dp, 2);
    cr_assert_eq(p.tp, 4);
    cr_assert_eq(p.pp, 4);
    cr_assert_eq(p.virtual_stages, 2);
    cr_assert(p.sequence_parallel);
    cr_assert_eq(p.tp_comm, SSIM_TP_COMM_RS_AG); /* implied by sp=on */
    cr_assert_eq(p.recompute, SSIM_RECOMPUTE_SELECTIVE);
    cr_assert_eq(p.zero_stage, 1);
    cr_assert_eq(p.dp_bucket_bytes, 25000000);
    cr_assert_eq(p.order[1], SSIM_AXIS_PP);
    cr_assert_str_eq(p.schedule, "interleaved");
    cr_assert_str_eq(p.placement, "commshift");

    g_autofree char *s = ssim_parallel_to_string(&p);
    SsimParallel q;
    ssim_parallel_init(&q);
    cr_assert(ssim_parallel_parse(&q, s, NULL), "%s", s);
    cr_assert(par_equal(&p, &q), "round trip of %s", s);

    cr_assert(ssim_parallel_set(&p, "bucket", "32MiB", NULL));
    cr_assert_eq(p.dp_bucket_bytes, 32u << 20);
    cr_assert(ssim_parallel_set(&p, "bucket", "off", NULL));
    cr_assert_eq(p.dp_bucket_bytes, 0);
    cr_assert(ssim_parallel_set(&p, "tp-comm", "allreduce", NULL));
    cr_assert_eq(p.tp_comm, SSIM_TP_COMM_ALLREDUCE);
    cr_assert(ssim_parallel_set(&p, "global_batch", "1536", NULL));
    cr_assert_eq(p.global_batch, 1536);
}

/* attention: unfused by default (and then not in the canonical string), flash by its names, a
 * round trip through the string, an unknown kind refused with the field named. */
Test(parallel, attention_kinds)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.attention, SSIM_ATTENTION_UNFUSED);
    assert_default_unwritten("attention");
    const char *flash[] = {"flash", "FLASH", "flash-attn", "fused"};
    for (gsize i = 0; i < G_N_ELEMENTS(flash); i++) {
        ssim_parallel_init(&p);
        cr_assert(ssim_parallel_set(&p, "attention", flash[i], NULL), "%s", flash[i]);
        cr_assert_eq(p.attention, SSIM_ATTENTION_FLASH, "%s", flash[i]);
    }
    assert_round_trip(&p, ",attention=flash");
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "attention", "sdpa", &error));
    cr_assert_str_eq(error->message,
                     "attention: 'sdpa' is not an attention kind (unfused or flash)");
    g_clear_error(&error);
    cr_assert_eq(p.attention, SSIM_ATTENTION_FLASH, "an error leaves the value");
    cr_assert(ssim_parallel_set(&p, "attn", "unfused", NULL));
    cr_assert_eq(p.attention, SSIM_ATTENTION_UNFUSED);
}

/* transformer_impl: Transformer Engine's by default (not in the canonical string), Megatron-LM's
 * names and "te" read, local round-trips, an unknown one refused with the field named. */
Test(parallel, transformer_impls)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.transformer_impl, SSIM_TRANSFORMER_IMPL_TE);
    assert_default_unwritten("transformer_impl");
    const char *te[] = {"transformer_engine", "te", "Transformer-Engine"};
    for (gsize i = 0; i < G_N_ELEMENTS(te); i++) {
        cr_assert(ssim_parallel_set(&p, "transformer_impl", "local", NULL));
        cr_assert(ssim_parallel_set(&p, "transformer-impl", te[i], NULL), "%s", te[i]);
        cr_assert_eq(p.transformer_impl, SSIM_TRANSFORMER_IMPL_TE, "%s", te[i]);
    }
    cr_assert(ssim_parallel_set(&p, "transformer_impl", "LOCAL", NULL));
    assert_round_trip(&p, ",transformer_impl=local");
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "transformer_impl", "apex", &error));
    cr_assert_str_eq(error->message, "transformer_impl: 'apex' is not a transformer "
                                     "implementation (transformer_engine, local or torch)");
    g_clear_error(&error);
    cr_assert_eq(p.transformer_impl, SSIM_TRANSFORMER_IMPL_LOCAL, "an error leaves the value");
    const char *torch[] = {"torch", "PyTorch", "eager"};
    for (gsize i = 0; i < G_N_ELEMENTS(torch); i++) {
        cr_assert(ssim_parallel_set(&p, "transformer_impl", torch[i], NULL), "%s", torch[i]);
        cr_assert_eq(p.transformer_impl, SSIM_TRANSFORMER_IMPL_TORCH, "%s", torch[i]);
    }
    assert_round_trip(&p, ",transformer_impl=torch");
}

/* rmsnorm: auto by default (unwritten), fused and eager round-trip, eager by default under
 * transformer_impl=torch only, never for a LayerNorm model, which validation says. */
Test(parallel, rmsnorm_impls)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.rmsnorm, SSIM_RMSNORM_AUTO);
    assert_default_unwritten("rmsnorm");
    SsimModel llama = {.name = (char *)"llama"}, gpt = {.name = (char *)"gpt"};
    llama.norm = SSIM_NORM_RMSNORM;
    gpt.norm = SSIM_NORM_LAYERNORM;
    cr_assert_not(ssim_parallel_rmsnorm_eager(&p, &llama), "Transformer Engine's is fused");
    cr_assert(ssim_parallel_set(&p, "transformer_impl", "torch", NULL));
    cr_assert(ssim_parallel_rmsnorm_eager(&p, &llama), "eager PyTorch's is the chain");
    cr_assert_not(ssim_parallel_rmsnorm_eager(&p, &gpt), "a LayerNorm is one kernel");
    cr_assert(ssim_parallel_set(&p, "rmsnorm", "Fused", NULL));
    cr_assert_not(ssim_parallel_rmsnorm_eager(&p, &llama));
    assert_round_trip(&p, ",transformer_impl=torch,rmsnorm=fused");
    cr_assert(ssim_parallel_set(&p, "transformer_impl", "te", NULL));
    cr_assert(ssim_parallel_set(&p, "norm-impl", "eager", NULL));
    cr_assert(ssim_parallel_rmsnorm_eager(&p, &llama), "eager asked for under any layers");
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "rmsnorm", "triton", &error));
    cr_assert_str_eq(error->message,
                     "rmsnorm: 'triton' is not an RMSNorm implementation (auto, fused or eager)");
    g_clear_error(&error);
    cr_assert_eq(p.rmsnorm, SSIM_RMSNORM_EAGER, "an error leaves the value");
}

/* fp8: off by default (not in the canonical string), Megatron-LM's formats and a bare switch
 * read, each round-trips, an unknown format refused with the field named. */
Test(parallel, fp8_formats)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.fp8, SSIM_FP8_OFF);
    assert_default_unwritten("fp8");
    const struct {
        const char *text;
        SsimFp8 want;
    } cases[] = {{"hybrid", SSIM_FP8_HYBRID}, {"on", SSIM_FP8_HYBRID}, {"E4M3", SSIM_FP8_E4M3},
                 {"off", SSIM_FP8_OFF},       {"false", SSIM_FP8_OFF}, {"1", SSIM_FP8_HYBRID}};
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        cr_assert(ssim_parallel_set(&p, "fp8", cases[i].text, NULL), "%s", cases[i].text);
        cr_assert_eq(p.fp8, cases[i].want, "%s", cases[i].text);
    }
    cr_assert(ssim_parallel_set(&p, "fp8-format", "e4m3", NULL));
    assert_round_trip(&p, ",fp8=e4m3");
    cr_assert(ssim_parallel_set(&p, "fp8", "hybrid", NULL));
    assert_round_trip(&p, ",fp8=hybrid");
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "fp8", "e5m2", &error));
    cr_assert_str_eq(error->message, "fp8: 'e5m2' is not an FP8 format (off, hybrid or e4m3)");
    g_clear_error(&error);
    cr_assert_eq(p.fp8, SSIM_FP8_HYBRID, "an error leaves the value");
}

/* cross_entropy: unfused by default (not in the canonical string); Megatron-LM's names of the
 * switch and of the implementation read too (a bare switch is the native fusion), each kind
 * round-trips, a bad value leaves the field. */
Test(parallel, cross_entropy_kinds)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_UNFUSED);
    assert_default_unwritten("cross_entropy");
    cr_assert(ssim_parallel_set(&p, "cross-entropy-loss-fusion", "on", NULL));
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_NATIVE);
    assert_round_trip(&p, ",cross_entropy=native");
    cr_assert(ssim_parallel_set(&p, "cross-entropy-fusion-impl", "TE", NULL));
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_TE);
    assert_round_trip(&p, ",cross_entropy=te");
    cr_assert(ssim_parallel_set(&p, "cross_entropy", "transformer_engine", NULL));
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_TE);
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "cross_entropy", "liger", &error));
    cr_assert_str_eq(error->message,
                     "cross_entropy: 'liger' is not a cross entropy (unfused, native or te)");
    g_clear_error(&error);
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_TE, "an error leaves the value");
    cr_assert(ssim_parallel_set(&p, "cross_entropy", "off", NULL));
    cr_assert_eq(p.cross_entropy, SSIM_CROSS_ENTROPY_UNFUSED);
    cr_assert_str_eq(ssim_cross_entropy_name(SSIM_CROSS_ENTROPY_NATIVE), "native");
}

/* launch_blocking: off by default (not in the canonical string), the environment variable's name
 * read too, on round-trips, a bad value names the key. */
/*
 * Megatron-LM's fused softmax (FusedScaleMaskSoftmax.is_kernel_available) on GPT-J's 16 heads at
 * s = 2048, under transformer_impl=local: tp 8 leaves 2 heads a GPU, so a microbatch of 1 makes 2
 * attention batches, not a multiple of 4 (PyTorch's softmax), one of 2 makes 4 (fused); at tp 4,
 * 4 a microbatch.  s over 4096, s not a multiple of 4 and 32-bit scores fall back; at s = 64 the
 * kernel takes 8 batches a block: 4 fall back, 8 do not.  Transformer Engine's layers, flash
 * attention and compiled schedules never ask.
 */
#define LOCAL "schedule=1f1b,transformer_impl=local,"

static gboolean fallback(const char *spec, guint seq, SsimDtype dtype)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    g_autofree char *full = g_strconcat("pp=1,gbs=64,", spec, NULL);
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_parallel_parse(&p, full, &error), "%s: %s", full, error ? error->message : "");
    guint seq0 = gptj->seq_len;
    SsimDtype dtype0 = gptj->dtype;
    gptj->seq_len = seq;
    gptj->dtype = dtype;
    gboolean r = ssim_parallel_softmax_fallback(&p, gptj);
    gptj->seq_len = seq0;
    gptj->dtype = dtype0;
    return r;
}

Test(parallel, softmax_fallback_follows_megatron_rule)
{
    cr_assert_eq(gptj->heads, 16);
    const SsimDtype bf16 = SSIM_DTYPE_BF16;
    const struct {
        const char *spec;
        guint seq;
        SsimDtype dtype;
        gboolean fallback;
    } cases[] = {
        {LOCAL "tp=8,mb=1", 2048, bf16, TRUE},
        {LOCAL "tp=8,mb=2", 2048, bf16, FALSE},
        {LOCAL "tp=8,mb=2", 2048, SSIM_DTYPE_FP16, FALSE},
        {LOCAL "tp=8,mb=3", 2048, bf16, TRUE},
        {LOCAL "tp=4,mb=1", 2048, bf16, FALSE},
        {LOCAL "tp=4,mb=1", 4096, bf16, FALSE},
        {LOCAL "tp=4,mb=1", 8192, bf16, TRUE},
        {LOCAL "tp=4,mb=1", 2046, bf16, TRUE},
        {LOCAL "tp=4,mb=1", 16, bf16, TRUE},
        {LOCAL "tp=4,mb=1", 2048, SSIM_DTYPE_FP32, TRUE},
        {LOCAL "tp=4,mb=1", 64, bf16, TRUE},
        {LOCAL "tp=4,mb=2", 64, bf16, FALSE},
        {LOCAL "tp=4,mb=1", 256, bf16, FALSE},
        {"schedule=1f1b,transformer_impl=te,tp=8,mb=1", 2048, bf16, FALSE},
        {LOCAL "attention=flash,tp=8,mb=1", 2048, bf16, FALSE},
        {"schedule=alpa,transformer_impl=local,tp=8,mb=1", 2048, bf16, FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        cr_assert_eq(fallback(cases[i].spec, cases[i].seq, cases[i].dtype), cases[i].fallback,
                     "%s, s = %u, dtype %d", cases[i].spec, cases[i].seq, (int)cases[i].dtype);
}

Test(parallel, launch_blocking_switch)
{
    SsimParallel p =
        assert_switch("launch_blocking", G_STRUCT_OFFSET(SsimParallel, launch_blocking),
                      "CUDA_LAUNCH_BLOCKING", "1", "sometimes");
    cr_assert(ssim_parallel_set(&p, "launch-blocking", "off", NULL));
    cr_assert_not(p.launch_blocking);
    SsimParallel q = good();
    q.launch_blocking = TRUE;
    cr_assert(ssim_parallel_validate(&q, gptj, h200, NULL), "%s", q.schedule);
    g_strlcpy(q.schedule, "alpa", sizeof q.schedule);
    expect_rule(&q, gptj, h200, "schedule alpa runs compiled programs");
}

/* overlap_param_gather: off by default, NeMo's name (overlap_param_sync) read too, on
 * round-trips; refused, as Megatron-LM refuses it, without the distributed optimizer (ZeRO 1 or
 * 2), and under a compiled schedule. */
Test(parallel, overlap_param_gather_switch)
{
    assert_switch("overlap_param_gather", G_STRUCT_OFFSET(SsimParallel, overlap_param_gather),
                  "overlap-param-sync", "true", "sometimes");
    SsimParallel q = good();
    q.overlap_param_gather = TRUE;
    expect_rule(&q, gptj, h200, "overlap_param_gather needs ZeRO 1 or 2");
    q.zero_stage = 3;
    expect_rule(&q, gptj, h200, "zero is 3");
    for (guint z = 1; z <= 2; z++) {
        q.zero_stage = z;
        GError *error = NULL;
        cr_assert(ssim_parallel_validate(&q, gptj, h200, &error), "%s",
                  error ? error->message : "");
    }
    g_strlcpy(q.schedule, "alpa", sizeof q.schedule);
    expect_rule(&q, gptj, h200, "schedule alpa runs compiled programs");
    SsimParallelField f;
    cr_assert(ssim_parallel_set_field(&q, "overlap_param_gather", "off", &f, NULL));
    cr_assert_eq(f, SSIM_PARALLEL_OVERLAP_PARAM_GATHER);
}

/* fsdp_root: off by default, fsdp_root_unit read too, on round-trips; refused without ZeRO 3 or
 * with a pipeline (pp > 1); its field bit is the 32nd, which a split's given set carries beside
 * the others (a guint64) and names when given twice. */
Test(parallel, fsdp_root_switch)
{
    assert_switch("fsdp_root", G_STRUCT_OFFSET(SsimParallel, fsdp_root), "fsdp-root-unit", "true",
                  "sometimes");
    SsimParallel q = good();
    q.fsdp_root = TRUE;
    q.zero_stage = 3;
    expect_rule(&q, gptj, h200, "without a pipeline, which needs pp 1; pp is 2");
    q.dp *= q.pp;
    q.pp = 1;
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(&q, gptj, h200, &error), "%s", error ? error->message : "");
    q.zero_stage = 2;
    expect_rule(&q, gptj, h200, "needs zero 3 (every weight sharded); zero is 2");
    SsimParallelField f;
    cr_assert(ssim_parallel_set_field(&q, "fsdp_root", "off", &f, NULL));
    cr_assert_eq(f, SSIM_PARALLEL_FSDP_ROOT);
    cr_assert_eq(f, G_GUINT64_CONSTANT(1) << 31);
    SsimParallel p;
    ssim_parallel_init(&p);
    guint64 given = 0;
    cr_assert(ssim_parallel_parse_fields(&p, "zero=3,fsdp_root=on", &given, NULL));
    cr_assert_eq(given, SSIM_PARALLEL_ZERO | SSIM_PARALLEL_FSDP_ROOT);
    cr_assert_not(
        ssim_parallel_parse_fields(&p, "fsdp_root=on,fsdp_root_unit=off", &given, &error));
    assert_has(error->message, "given twice (as 'fsdp_root' and 'fsdp_root_unit')");
    g_clear_error(&error);
}

/* tp_comm_overlap: off by default (not in the canonical string), NeMo's name read too, on
 * round-trips; at tp = 1 it needs no sequence parallelism (nothing to overlap). */
Test(parallel, tp_comm_overlap_switch)
{
    assert_switch("tp_comm_overlap", G_STRUCT_OFFSET(SsimParallel, tp_comm_overlap),
                  "ub-tp-comm-overlap", "true", "maybe");
    SsimParallel q = good(); /* tp 4 */
    q.tp_comm_overlap = TRUE;
    expect_rule(&q, gptj, h200, "tp_comm_overlap needs sequence parallelism");
    cr_assert(ssim_parallel_set(&q, "sp", "on", NULL));
    cr_assert(ssim_parallel_validate(&q, gptj, h200, NULL));
    cr_assert(ssim_parallel_parse(&q, "dp=16,tp=1,sp=off", NULL));
    cr_assert(ssim_parallel_validate(&q, gptj, h200, NULL), "tp 1: nothing to overlap");
}

/* FP8 needs Transformer Engine's layers, a 16-bit model and FP8 tensor cores (the A100 has
 * none); the default H200 and GPT-J in bf16 take it. */
Test(parallel, rule_fp8)
{
    SsimParallel p = good();
    p.fp8 = SSIM_FP8_HYBRID;
    cr_assert(ssim_parallel_validate(&p, gptj, h200, NULL));
    p.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    expect_rule(&p, gptj, h200, "fp8 needs transformer_impl = transformer_engine");
    p.transformer_impl = SSIM_TRANSFORMER_IMPL_TE;
    GError *error = NULL;
    g_autoptr(SsimModel) fp32 = ssim_model_copy(gptj);
    fp32->dtype = SSIM_DTYPE_FP32;
    expect_rule(&p, fp32, h200, "fp8 needs a bf16 or fp16 model");
    g_autoptr(SsimCluster) a100 = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(a100, "%s", error ? error->message : "");
    ssim_cluster_set_nodes(a100, 4);
    expect_rule(&p, gptj, a100, "fp8 needs FP8 tensor cores: cluster dgx-a100");
    p.fp8 = SSIM_FP8_OFF;
    cr_assert(ssim_parallel_validate(&p, gptj, a100, NULL));
}

Test(parallel, set_errors_leave_value)
{
    SsimParallel p = good();
    struct {
        const char *key, *value, *needle;
    } bad[] = {
        {"tp", "0", "tp: '0' is not a positive integer"},
        {"tp", "-2", "tp: '-2' is not a positive integer"},
        {"dp", "four", "dp: 'four' is not a positive integer"},
        {"sp", "maybe", "sp: 'maybe' is not on or off"},
        {"recompute", "most", "recompute: 'most' is not one of none | selective | full"},
        {"zero", "4", "zero: stage 4 does not exist (0, 1, 2 or 3)"},
        {"bucket", "12XB", "bucket: '12XB' is not a byte size"},
        {"tp_comm", "ring", "tp_comm: 'ring' is not one of allreduce | rs-ag"},
        {"order", "tp-dp", "order: 'tp-dp' is not an order of tp, dp and pp"},
        {"order", "tp-tp-pp", "is not an order"},
        {"schedule", "", "schedule: '' must be 1 to 31 characters"},
        {"warp", "9", "warp: unknown parallel setting"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        SsimParallel before = p;
        GError *error = NULL;
        cr_assert_not(ssim_parallel_set(&p, bad[i].key, bad[i].value, &error), "%s=%s", bad[i].key,
                      bad[i].value);
        assert_has(error->message, bad[i].needle);
        g_error_free(error);
        cr_assert(par_equal(&before, &p));
    }
    GError *error = NULL;
    cr_assert_not(ssim_parallel_parse(&p, "dp=2,tp", &error));
    assert_has(error->message, "'tp': expected key=value");
    g_error_free(error);
}

/* Megatron-LM's default order: rank = tp_i + tp * (dp_i + dp * pp_i). */
Test(parallel, rank_mapping_default_order)
{
    SsimParallel p = good();
    for (guint pp = 0; pp < p.pp; pp++)
        for (guint dp = 0; dp < p.dp; dp++)
            for (guint tp = 0; tp < p.tp; tp++) {
                SsimCoord c = {.dp = dp, .tp = tp, .pp = pp};
                guint r = ssim_parallel_rank(&p, c);
                cr_assert_eq(r, tp + p.tp * (dp + p.dp * pp));
                SsimCoord back = ssim_parallel_coord(&p, r);
                cr_assert_eq(back.dp, dp);
                cr_assert_eq(back.tp, tp);
                cr_assert_eq(back.pp, pp);
            }
    guint tp_group[4], pp_group[2], dp_group[4];
    ssim_parallel_group(&p, 13, SSIM_AXIS_TP, tp_group); /* 13 = tp 1, dp 3, pp 0 */
    cr_assert_eq(tp_group[0], 12);
    cr_assert_eq(tp_group[3], 15);
    ssim_parallel_group(&p, 13, SSIM_AXIS_PP, pp_group);
    cr_assert_eq(pp_group[0], 13);
    cr_assert_eq(pp_group[1], 29);
    ssim_parallel_group(&p, 13, SSIM_AXIS_DP, dp_group);
    cr_assert_eq(dp_group[0], 1);
    cr_assert_eq(dp_group[1], 5);
    cr_assert_eq(dp_group[3], 13);
}

Test(parallel, rank_mapping_is_bijection_any_order)
{
    SsimParallel p = good();
    const char *orders[] = {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"};
    for (gsize o = 0; o < G_N_ELEMENTS(orders); o++) {
        cr_assert(ssim_parallel_set(&p, "order", orders[o], NULL));
        guint world = ssim_parallel_world(&p);
        g_autofree gboolean *seen = g_new0(gboolean, world);
        for (guint r = 0; r < world; r++) {
            SsimCoord c = ssim_parallel_coord(&p, r);
            guint back = ssim_parallel_rank(&p, c);
            cr_assert_eq(back, r, "%s", orders[o]);
            cr_assert_not(seen[r]);
            seen[r] = TRUE;
        }
        /* The innermost axis varies fastest. */
        SsimCoord c1 = ssim_parallel_coord(&p, 1);
        cr_assert_eq(ssim_coord_get(c1, p.order[0]), 1, "%s", orders[o]);
    }
}

Test(parallel, microbatches_and_chunks)
{
    SsimParallel p = good();
    cr_assert_eq(ssim_parallel_world(&p), 32);
    cr_assert_eq(ssim_parallel_n_microbatches(&p), 64 / (4 * 2));
    cr_assert_eq(ssim_parallel_layers_per_chunk(&p, gptj), 14);
    p.virtual_stages = 2;
    cr_assert_eq(ssim_parallel_layers_per_chunk(&p, gptj), 7);
    cr_assert(ssim_parallel_validate(&p, gptj, h200, NULL));
}

/* ---- one test per rule ----------------------------------------------------------------- */

Test(parallel, rule_sizes_positive)
{
    SsimParallel p = good();
    p.microbatch = 0;
    expect_rule(&p, gptj, h200, "microbatch >= 1: microbatch is 0");
    p = good();
    p.virtual_stages = 0;
    expect_rule(&p, gptj, h200, "v >= 1");
}

Test(parallel, rule_world_equals_gpus)
{
    SsimParallel p = good();
    p.dp = 2;
    expect_rule(&p, gptj, h200,
                "dp*tp*pp != GPUs: 2*4*2 = 16 but cluster dgx-h200 has 32 GPUs "
                "(4 nodes x 8)");
}

Test(parallel, rule_heads_divisible)
{
    SsimParallel p = good();
    g_autoptr(SsimModel) m = ssim_model_copy(gptj);
    m->heads = 12;
    m->kv_heads = 12;
    m->hidden = 12 * 256;
    p.tp = 8;
    p.dp = 2;
    expect_rule(&p, m, h200, "heads % tp != 0: heads (12) of gpt-j-6b is not divisible by tp (8)");
}

Test(parallel, rule_kv_heads_divisible)
{
    g_autoptr(SsimModel) m = ssim_model_copy(gptj);
    m->kv_heads = 2; /* grouped-query attention with 2 KV heads */
    SsimParallel p = good();
    expect_rule(&p, m, h200,
                "kv_heads % tp != 0: kv_heads (2) of gpt-j-6b is not divisible by "
                "tp (4) (Megatron-LM splits the key-value heads over tp, replicating none: a tp "
                "that divides 2)");
}

Test(parallel, rule_ffn_divisible)
{
    g_autoptr(SsimModel) m = ssim_model_copy(gptj);
    m->ffn = 16386;
    SsimParallel p = good();
    expect_rule(&p, m, h200, "ffn % tp != 0: ffn (16386)");
}

Test(parallel, rule_layers_divisible)
{
    SsimParallel p = good();
    p.pp = 8;
    p.dp = 1;
    p.global_batch = 16;
    /* 28 layers, pp*v = 8 */
    expect_rule(&p, gptj, h200,
                "layers % (pp*v) != 0: layers (28) of gpt-j-6b is not divisible "
                "by pp*v = 8*1 = 8");
    p.pp = 2, p.dp = 4, p.virtual_stages = 3;
    expect_rule(&p, gptj, h200, "pp*v = 2*3 = 6");
}

Test(parallel, rule_batch_divisible)
{
    SsimParallel p = good();
    p.global_batch = 60;
    expect_rule(&p, gptj, h200,
                "global_batch % (dp*microbatch) != 0: global batch 60 is not "
                "divisible by dp*microbatch = 4*2 = 8");
}

Test(parallel, rule_interleaved_needs_pp)
{
    SsimParallel p = good();
    p.pp = 1;
    p.dp = 8;
    p.global_batch = 64;
    p.virtual_stages = 2;
    expect_rule(&p, gptj, h200, "interleaved needs pp > 1");
}

Test(parallel, rule_interleaved_needs_m_multiple_of_pp)
{
    g_autoptr(SsimModel) m = ssim_model_copy(gptj);
    m->layers = 32;
    SsimParallel p = good();
    p.pp = 4;
    p.dp = 2;
    p.virtual_stages = 2;
    p.microbatch = 1;
    p.global_batch = 12; /* m = 6 */
    expect_rule(&p, m, h200, "interleaved needs m % pp == 0: 6 microbatches");
    p.global_batch = 16;
    cr_assert(ssim_parallel_validate(&p, m, h200, NULL));
}

Test(parallel, rule_sequence_parallel)
{
    SsimParallel p = good();
    p.sequence_parallel = TRUE;
    expect_rule(&p, gptj, h200, "sequence parallelism needs tp_comm = rs-ag");
    p.tp_comm = SSIM_TP_COMM_RS_AG;
    cr_assert(ssim_parallel_validate(&p, gptj, h200, NULL));
    p.tp = 1;
    p.dp = 16;
    expect_rule(&p, gptj, h200, "sequence parallelism needs tp > 1");
}

Test(parallel, rule_tp_within_node)
{
    SsimParallel p = good();
    p.tp = 16;
    p.dp = 1;
    p.global_batch = 16;
    expect_rule(&p, gptj, h200, "tp within a node: tp (16) is larger than the GPUs per node (8)");
    p.allow_cross_node_tp = TRUE;
    cr_assert(ssim_parallel_validate(&p, gptj, h200, NULL));

    /* tp = 4 outermost: a tp group is ranks {r, r+8, r+16, r+24}, one per node. */
    p = good();
    cr_assert(ssim_parallel_set(&p, "order", "dp-pp-tp", NULL));
    expect_rule(&p, gptj, h200,
                "tp within a node: the tp group of ranks 0..24 spans nodes 0 and 1");

    /* tp = 2 on a 3-GPU node straddles a node boundary even innermost. */
    g_autoptr(SsimCluster) odd = ssim_cluster_copy(h200);
    odd->gpus_per_node = 3;
    odd->nodes = 2;
    SsimParallel q;
    ssim_parallel_init(&q);
    cr_assert(ssim_parallel_parse(&q, "dp=3,tp=2,pp=1,gbs=3", NULL));
    expect_rule(&q, gptj, odd, "the tp group of ranks 2..3 spans nodes 0 and 1");
}

Test(parallel, rule_zero_and_names)
{
    SsimParallel p = good();
    p.zero_stage = 4;
    expect_rule(&p, gptj, h200, "zero in {0, 1, 2, 3}: ZeRO stage 4 does not exist");
    /* ZeRO-2 and 3 reduce unit by unit: a bucket is a contradiction, not ignored. */
    p.zero_stage = 2;
    p.dp_bucket_bytes = 25000000;
    expect_rule(&p, gptj, h200, "bucket: ZeRO stage 2 reduces each layer's gradients");
    p = good();
    p.schedule[0] = '\0';
    expect_rule(&p, gptj, h200, "schedule: must not be empty");
    p = good();
    p.placement[0] = '\0';
    expect_rule(&p, gptj, h200, "placement: must not be empty");
    p = good();
    p.order[1] = SSIM_AXIS_TP;
    expect_rule(&p, gptj, h200, "order: the rank order must name tp, dp and pp once each");
}

Test(parallel, suggest)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    GError *error = NULL;
    cr_assert(ssim_parallel_suggest(&p, gptj, h200, &error), "%s", error ? error->message : "");
    /* GPT-J: 16 B/param = 96.9 GB > 40% of 141 GB at tp 1; fits at tp 2. */
    cr_assert_eq(p.tp, 2);
    cr_assert_eq(p.pp, 1);
    cr_assert_eq(p.dp, 16);
    cr_assert_eq(ssim_parallel_n_microbatches(&p), 8);

    g_autoptr(SsimModel) big = ssim_model_load("gpt-3-175b", NULL);
    cr_assert_not_null(big);
    g_autoptr(SsimCluster) a100 = ssim_cluster_load("dgx-a100", NULL);
    cr_assert_not_null(a100);
    ssim_cluster_set_nodes(a100, 128);
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_suggest(&p, big, a100, &error), "%s", error ? error->message : "");
    cr_assert_eq(p.tp, 8);
    cr_assert_gt(p.pp, 1);
    cr_assert_eq(ssim_parallel_world(&p), 1024);

    ssim_cluster_set_nodes(a100, 1); /* 8 A100s cannot hold 175B parameters' state */
    ssim_parallel_init(&p);
    cr_assert_not(ssim_parallel_suggest(&p, big, a100, &error));
    assert_has(error->message, "suggest: no dp x tp x pp split of 8 GPUs");
    g_clear_error(&error);
}

/* The parser says which fields it set, under every alias and with blanks around the pairs; a
 * field given twice, under any name, is an error naming both. */
Test(parallel, parse_reports_the_fields_it_set)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    guint64 given = 0;
    cr_assert(ssim_parallel_parse_fields(&p, " tp=4 , dp = 1,pp=2,batch=64 ", &given, NULL));
    cr_assert_eq(given, SSIM_PARALLEL_TP | SSIM_PARALLEL_DP | SSIM_PARALLEL_PP |
                            SSIM_PARALLEL_GLOBAL_BATCH);
    cr_assert_eq(p.dp, 1);
    cr_assert_eq(p.global_batch, 64);
    ssim_parallel_init(&p);
    cr_assert(
        ssim_parallel_parse_fields(&p, "micro_batch=2,schedule=xla,Recompute=full", &given, NULL));
    cr_assert_eq(given,
                 SSIM_PARALLEL_MICROBATCH | SSIM_PARALLEL_SCHEDULE | SSIM_PARALLEL_RECOMPUTE);
    const struct {
        const char *spec, *needle;
    } twice[] = {{"tp=4,tp=2", "tp: given twice (as 'tp' and 'tp')"},
                 {"gbs=8,batch=16", "batch: given twice (as 'gbs' and 'batch')"},
                 {"v=2,virtual-stages=2", "given twice (as 'v' and 'virtual-stages')"}};
    for (gsize i = 0; i < G_N_ELEMENTS(twice); i++) {
        GError *error = NULL;
        ssim_parallel_init(&p);
        cr_assert_not(ssim_parallel_parse_fields(&p, twice[i].spec, &given, &error), "%s",
                      twice[i].spec);
        assert_has(error->message, twice[i].needle);
        g_error_free(error);
    }
}

/* One byte-size grammar (--bucket, --max-memory): SI and IEC prefixes, an optional B. */
Test(parallel, byte_sizes)
{
    const struct {
        const char *text;
        guint64 bytes;
    } good[] = {{"4096", 4096},
                {"25MB", 25000000},
                {"25M", 25000000},
                {"32MiB", 33554432},
                {"16GiB", 17179869184ULL},
                {"16Gi", 17179869184ULL},
                {"1.5GiB", 1610612736},
                {"2kB", 2000},
                {"2KiB", 2048},
                {"1T", 1000000000000ULL},
                {"0", 0}};
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        guint64 v = 1;
        cr_assert(ssim_bytes_parse(good[i].text, &v), "%s", good[i].text);
        cr_assert_eq(v, good[i].bytes, "%s: %" G_GUINT64_FORMAT, good[i].text, v);
    }
    const char *bad[] = {"", "-1", "MiB", "12XB", "nan", "inf", " 5", "5 MB", "1e30", "20000000Ti"};
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        guint64 v;
        cr_assert_not(ssim_bytes_parse(bad[i], &v), "'%s' accepted", bad[i]);
    }
}

/* The fp32 gradient reduction is Megatron-LM's default under bf16, not the JAX frameworks'
 * (alpa, alpa-gpipe, xla reduce in the compute dtype); an explicit +grad_fp32 wins everywhere. */
Test(parallel, grad_fp32_default_follows_the_framework)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    cr_assert_eq(model->dtype, SSIM_DTYPE_BF16);
    const struct {
        const char *spec;
        gboolean on;
    } cases[] = {
        {"dp=2,tp=1,pp=2,schedule=1f1b", TRUE},
        {"dp=2,tp=1,pp=2,schedule=gpipe", TRUE},
        {"dp=2,tp=1,pp=2,schedule=alpa", FALSE},
        {"dp=2,tp=1,pp=2,schedule=alpa-gpipe", FALSE},
        {"dp=2,tp=1,pp=2,schedule=xla", FALSE},
        {"dp=2,tp=1,pp=2,schedule=alpa,step_costs=+grad_fp32", TRUE},
        {"dp=2,tp=1,pp=2,schedule=1f1b,step_costs=-grad_fp32", FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        SsimParallel par;
        ssim_parallel_init(&par);
        g_autoptr(GError) error = NULL;
        cr_assert(ssim_parallel_parse(&par, cases[i].spec, &error), "%s: %s", cases[i].spec,
                  error ? error->message : "");
        cr_expect_eq(ssim_parallel_step_cost_on(&par, model, SSIM_STEP_COST_GRAD_FP32), cases[i].on,
                     "%s", cases[i].spec);
    }
}

/* recompute=op and recompute_layers: read, written only when set, read back; a count too large
 * for a chunk's 16 bits refused with the key named. */
Test(parallel, recompute_op_and_layers_round_trip)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    assert_default_unwritten("recompute_layers");
    cr_assert(ssim_parallel_set(&p, "recompute", "op", NULL));
    cr_assert_eq(p.recompute, SSIM_RECOMPUTE_OP);
    assert_round_trip(&p, ",recompute=op,");
    cr_assert(ssim_parallel_parse(&p, "recompute=full,recompute_num_layers=20", NULL));
    cr_assert_eq(p.recompute_layers, 20);
    assert_round_trip(&p, ",recompute_layers=20");
    GError *error = NULL;
    cr_assert_not(ssim_parallel_set(&p, "recompute_layers", "70000", &error));
    cr_assert_str_eq(error->message,
                     "recompute_layers: 70000 is more layers than a chunk can hold (65535)");
    g_clear_error(&error);
    cr_assert_eq(p.recompute_layers, 20, "an error leaves the value");
}
