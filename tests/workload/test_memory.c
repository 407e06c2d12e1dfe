/*
 * Tests for the memory module against Korthikanti et al. 2022 (activations) and the 16 bytes per
 * parameter of mixed-precision Adam (static state), hand-computed for GPT-3 175B: s = 2048,
 * h = 12288, a = 96, b = 1, so s b h = 25,165,824 and 5 a s / h = 80.
 */
#include <criterion/criterion.h>

#include <shiftsim/memory.h>

#include <string.h>

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message '%s' lacks '%s'", (msg), (needle))

static SsimModel *gpt3;

static void setup(void)
{
    GError *error = NULL;
    gpt3 = ssim_model_load("gpt-3-175b", &error);
    cr_assert_not_null(gpt3, "%s", error ? error->message : "");
    /* Korthikanti's figures count both dropouts' masks, as Megatron-LM's GPT trains with. */
    gpt3->attention_dropout = TRUE;
    gpt3->hidden_dropout = TRUE;
}

static void teardown(void)
{
    ssim_model_free(gpt3);
}

TestSuite(memory, .init = setup, .fini = teardown);

static guint64 act(guint tp, gboolean sp, SsimRecompute r)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.tp = tp;
    p.sequence_parallel = sp;
    p.recompute = r;
    return ssim_memory_activation_layer_bytes(gpt3, &p);
}

Test(memory, korthikanti_activation_per_layer)
{
    const guint64 sbh = 2048ULL * 12288;
    cr_assert_eq(sbh, 25165824ULL);
    /* No parallelism: s b h (34 + 5 a s / h) = 114 s b h. */
    cr_assert_eq(act(1, FALSE, SSIM_RECOMPUTE_NONE), 2868903936ULL);
    /* Tensor parallel t = 8: s b h (10 + 24/8 + 80/8) = 23 s b h. */
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_NONE), 578813952ULL);
    /* Tensor + sequence parallel: 114 s b h / 8. */
    cr_assert_eq(act(8, TRUE, SSIM_RECOMPUTE_NONE), 358612992ULL);
    /* Selective recompute: s b h (10 + 24/8) without, 34 s b h / 8 with sequence parallel. */
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_SELECTIVE), 327155712ULL);
    cr_assert_eq(act(8, TRUE, SSIM_RECOMPUTE_SELECTIVE), 106954752ULL);
    /* Full recompute: the layer input, 2 s b h (sharded by sequence parallelism). */
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_FULL), 2 * sbh);
    cr_assert_eq(act(8, TRUE, SSIM_RECOMPUTE_FULL), 2 * sbh / 8);
    /* sp with tp = 1 is plain no-parallelism. */
    cr_assert_eq(act(1, TRUE, SSIM_RECOMPUTE_NONE), 114 * sbh);
}

/* Flash attention keeps no s x s scores: the 5 a s^2 b of the scores become the 4 a s b of each
 * head's row statistics (fp32); selective and full recompute, which keep no scores either way,
 * are unchanged.  GPT-3 at tp 8: s b h (10 + 24/8) + s b 4 a / 8 = 13 s b h + 48 s b. */
Test(memory, flash_attention_keeps_no_scores)
{
    const guint64 sb = 2048, sbh = sb * 12288;
    SsimParallel p;
    ssim_parallel_init(&p);
    p.tp = 8;
    p.attention = SSIM_ATTENTION_FLASH;
    p.recompute = SSIM_RECOMPUTE_NONE;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 13 * sbh + 48 * sb);
    p.recompute = SSIM_RECOMPUTE_SELECTIVE;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p),
                 act(8, FALSE, SSIM_RECOMPUTE_SELECTIVE));
    p.recompute = SSIM_RECOMPUTE_FULL;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), act(8, FALSE, SSIM_RECOMPUTE_FULL));
}

/* FP8 training keeps each linear layer's input as its FP8 cast, a byte an element (Transformer
 * Engine's Linear and LayerNormLinear): of Korthikanti's 34 s b h the QKV and MLP inputs lose
 * 1 s b h each, the second MLP matrix's input 4 and the output projection's 1: GPT-3 without
 * parallelism s b h (27 + 5 a s / h) = 107 s b h; at tp 8, s b h (8 + 19/8 + 80/8).  Under
 * flash attention the kernel keeps its output in bf16 beside that FP8 copy: s b h (8 + 21/8) +
 * s b 4 a / 8 at tp 8.  Full recompute keeps only the layer input, in bf16. */
Test(memory, fp8_keeps_linear_inputs_in_one_byte)
{
    const guint64 sb = 2048, sbh = sb * 12288;
    SsimParallel p;
    ssim_parallel_init(&p);
    p.fp8 = SSIM_FP8_HYBRID;
    p.recompute = SSIM_RECOMPUTE_NONE;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 107 * sbh);
    p.tp = 8;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 8 * sbh + 19 * sbh / 8 + 10 * sbh);
    p.attention = SSIM_ATTENTION_FLASH;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 8 * sbh + 21 * sbh / 8 + 48 * sb);
    p.recompute = SSIM_RECOMPUTE_FULL;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), act(8, FALSE, SSIM_RECOMPUTE_FULL));
}

/* Without dropout there are no masks: the 2 s b h of the two hidden masks go, and of the scores'
 * 5 a s^2 b only the softmax output's 2 a s^2 b stays.  GPT-3 at tp 8: s b h (8 + 24/8 + 2 a s /
 * (8 h)) = s b h (8 + 3 + 4) = 15 s b h; each dropout alone: 17 and 21.  Full and selective
 * recompute keep no scores: only the hidden masks matter there. */
Test(memory, masks_only_with_dropout)
{
    const guint64 sbh = 2048ULL * 12288;
    gpt3->attention_dropout = FALSE;
    gpt3->hidden_dropout = FALSE;
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_NONE), 15 * sbh);
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_SELECTIVE), 11 * sbh);
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_FULL), 2 * sbh);
    gpt3->hidden_dropout = TRUE;
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_NONE), 17 * sbh);
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_SELECTIVE), 13 * sbh);
    gpt3->hidden_dropout = FALSE;
    gpt3->attention_dropout = TRUE;
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_NONE), 21 * sbh);
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_SELECTIVE), 11 * sbh);
}

/* An fp32 model keeps its activations in 4 bytes and its masks in one: at tp 8 without
 * recompute s b h (2 x 8 + 2 + 2 x 24/8) + s b a s (2 x 4 + 1) / 8 = s b h (24 + 18) = 42 s b h
 * (the 46 of doubling Korthikanti's 23 would count each mask byte twice). */
Test(memory, fp32_doubles_activations_not_masks)
{
    const guint64 sbh = 2048ULL * 12288;
    gpt3->dtype = SSIM_DTYPE_FP32;
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_NONE), 42 * sbh);
    cr_assert_eq(act(8, FALSE, SSIM_RECOMPUTE_FULL), 4 * sbh);
}

/* Where PyTorch's softmax replaces Megatron-LM's fused one (parallel.h,
 * ssim_parallel_softmax_fallback; GPT-3 cut to 48 heads of 256, tp 8: 6 attention batches at
 * b = 1), the probabilities are kept in fp32 for the softmax's backward, 4 bytes instead of dt:
 * the scores' 5 a s^2 b / t become 7 a s^2 b / t.  Without recompute s b h (10 + 24/8) plus
 * s b a s (4 + 1 + 2) / 8 = 13 s b h + 7 s b h = 20 s b h (18 s b h fused); without attention
 * dropout the cast-back output stays too, 4 + 2 = 6 (fused: 2).  Recompute keeps no scores. */
Test(memory, softmax_fallback_keeps_fp32_probabilities)
{
    const guint64 sbh = 2048ULL * 12288;
    gpt3->heads = gpt3->kv_heads = 48;
    SsimParallel p;
    ssim_parallel_init(&p);
    p.tp = 8;
    g_strlcpy(p.schedule, "1f1b", sizeof p.schedule);
    p.recompute = SSIM_RECOMPUTE_NONE;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 18 * sbh);
    p.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    cr_assert(ssim_parallel_softmax_fallback(&p, gpt3));
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 20 * sbh);
    gpt3->attention_dropout = FALSE;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), (13 + 6) * sbh);
    p.recompute = SSIM_RECOMPUTE_FULL;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 2 * sbh);
}

Test(memory, activations_scale_with_microbatch)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    p.tp = 8;
    p.microbatch = 4;
    cr_assert_eq(ssim_memory_activation_layer_bytes(gpt3, &p), 4 * 578813952ULL);
}

Test(memory, estimate_gpt3_1f1b_middle_stage)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p,
                                  "dp=8,tp=8,pp=16,mb=1,gbs=1536,sp=on,recompute=selective,"
                                  "zero=1",
                                  NULL));
    SsimMemory mem;
    /* 1F1B keeps pp - stage = 15 microbatches alive on stage 1. */
    ssim_memory_estimate(&mem, gpt3, &p, 1, 15);
    const guint64 h = 12288;
    const guint64 layer = 12 * h * h + 13 * h; /* 1,812,099,072 */
    const guint64 per_gpu = 6 * layer / 8;     /* 96/16 = 6 layers, sharded 8 ways */
    cr_assert_eq(mem.stage, 1);
    cr_assert_eq(mem.in_flight, 15);
    cr_assert_eq(mem.params, per_gpu);
    cr_assert_eq(mem.weights, 2 * per_gpu);
    /* bf16: Megatron-LM keeps the gradients in fp32 (main_grad; --bf16 forces
     * --accumulate-allreduce-grads-in-fp32), 4 bytes each. */
    cr_assert_eq(mem.gradients, 4 * per_gpu);
    cr_assert_eq(mem.optimizer, 12 * per_gpu / 8); /* ZeRO-1 over dp = 8 */
    cr_assert_eq(mem.activation_layer, 106954752ULL);
    cr_assert_eq(mem.activations, 106954752ULL * 6 * 15);
    cr_assert_eq(mem.total, mem.weights + mem.gradients + mem.optimizer + mem.activations);
    /* 18 bytes per parameter without ZeRO (2 + 4 + 12), and the 16 of Rajbhandari et al. when
     * the gradients stay in 16 bits (step cost grad_fp32 off). */
    p.zero_stage = 0;
    ssim_memory_estimate(&mem, gpt3, &p, 1, 15);
    cr_assert_eq(mem.weights + mem.gradients + mem.optimizer, 18 * per_gpu);
    cr_assert(ssim_parallel_set(&p, "step_costs", "-grad_fp32", NULL));
    ssim_memory_estimate(&mem, gpt3, &p, 1, 15);
    cr_assert_eq(mem.weights + mem.gradients + mem.optimizer, 16 * per_gpu);
}

Test(memory, first_and_last_stage_hold_embeddings)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p, "dp=1,tp=8,pp=16", NULL));
    SsimMemory first, mid, last;
    ssim_memory_estimate(&first, gpt3, &p, 0, 16);
    ssim_memory_estimate(&mid, gpt3, &p, 5, 11);
    ssim_memory_estimate(&last, gpt3, &p, 15, 1);
    guint64 emb = (50257ULL * 12288 + 2048ULL * 12288) / 8; /* token + learned positions */
    cr_assert_eq(first.params - mid.params, emb);
    /* Last: final LayerNorm 2h and, tied, a copy of the token embedding. */
    cr_assert_eq(last.params - mid.params, (2ULL * 12288 + 50257ULL * 12288) / 8);
    /* No recompute, no sp: 23 s b h per layer, 6 layers, 16 microbatches in flight. */
    cr_assert_eq(first.activations, 578813952ULL * 6 * 16);
}

Test(memory, interleaved_chunks_and_fp32)
{
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p, "dp=1,tp=8,pp=8,v=3,sp=on", NULL));
    SsimMemory mem;
    /* Interleaved 1F1B stage 0: v p + p - 1 = 31 chunk passes of 96/24 = 4 layers each. */
    ssim_memory_estimate(&mem, gpt3, &p, 0, 31);
    cr_assert_eq(mem.activations, 358612992ULL * 4 * 31);

    g_autoptr(SsimModel) m = ssim_model_copy(gpt3);
    m->dtype = SSIM_DTYPE_FP32;
    ssim_memory_estimate(&mem, m, &p, 3, 1);
    /* fp32: 4 + 4 + 8 bytes per parameter, activations doubled but not the masks (under
     * sequence parallelism without recompute: 114 s b h / 8 at 16 bits, of which the masks,
     * one byte each, are 2 s b h hidden and a s^2 b = 16 s b h of the scores: (2 x 114 - 18)
     * s b h / 8). */
    cr_assert_eq(mem.optimizer, 2 * mem.weights);
    cr_assert_eq(mem.gradients, mem.weights);
    cr_assert_eq(mem.weights, 4 * mem.params);
    cr_assert_eq(mem.activation_layer, (2 * 114 - 18) * 2048ULL * 12288 / 8);
}

Test(memory, fits_and_message)
{
    g_autoptr(SsimCluster) a100 = ssim_cluster_load("dgx-a100", NULL);
    cr_assert_not_null(a100);
    SsimParallel p;
    ssim_parallel_init(&p);
    cr_assert(ssim_parallel_parse(&p, "dp=8,tp=8,pp=16,sp=on,recompute=selective,zero=1", NULL));
    SsimMemory mem;
    ssim_memory_estimate(&mem, gpt3, &p, 0, 16);
    GError *error = NULL;
    cr_assert(ssim_memory_fits(&mem, a100, &error), "%s", error ? error->message : "");

    cr_assert(ssim_parallel_parse(&p, "pp=2,zero=0,sp=off,tp_comm=allreduce,recompute=none", NULL));
    ssim_memory_estimate(&mem, gpt3, &p, 0, 2);
    cr_assert_not(ssim_memory_fits(&mem, a100, &error));
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    assert_has(error->message, "memory: stage 0 needs ");
    assert_has(error->message, "GiB per GPU (weights ");
    assert_has(error->message, "for 2 microbatch passes in flight) but an NVIDIA A100 SXM4 80GB "
                               "has 80.0 GiB");
    g_clear_error(&error);
}
