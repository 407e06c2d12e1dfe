/*
 * Shape derivation for shiftsim-bench (src/microbench/shapes.c).  The oracle is a table worked
 * out by hand from GPT-J 6B's shape (h = 4096, 16 heads of 256, ffn = 16384, V = 50400,
 * s = 2048): forward C[m x n] = A[m x k] B[k x n], dgrad (m, k, n), wgrad (k, n, m), merged where
 * two GEMMs coincide, sorted by (batch, m, n, k).
 */
#include <criterion/criterion.h>

#include "src/microbench/shapes.h"

#include <string.h>

typedef struct {
    const char *label;
    guint64 m, n, k, batch;
} Expect;

static void check_list(GArray *got, const Expect *want, guint n_want, guint tp)
{
    cr_assert_eq(got->len, n_want, "tp %u: %u shapes, expected %u", tp, got->len, n_want);
    for (guint i = 0; i < n_want; i++) {
        const SsimBenchGemmShape *g = &g_array_index(got, SsimBenchGemmShape, i);
        cr_expect_str_eq(g->label, want[i].label, "tp %u row %u", tp, i);
        cr_expect(g->m == want[i].m && g->n == want[i].n && g->k == want[i].k &&
                      g->batch == want[i].batch,
                  "tp %u row %u (%s): got %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                  "x%" G_GUINT64_FORMAT " x%" G_GUINT64_FORMAT,
                  tp, i, want[i].label, (guint64)g->m, (guint64)g->n, (guint64)g->k,
                  (guint64)g->batch);
    }
}

static GArray *gptj(guint tp, guint mb, guint seq)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    return ssim_bench_gemm_shapes(m, &tp, 1, &mb, 1, seq);
}

#define ATTN(b)                                                                                    \
    {"bwd.attn_score.wgrad", 256, 2048, 2048, b},                                                  \
        {"bwd.attn_score.dgrad+fwd.attn_ctx+bwd.attn_ctx.wgrad", 2048, 256, 2048, b},              \
    {                                                                                              \
        "fwd.attn_score+bwd.attn_ctx.dgrad", 2048, 2048, 256, b                                    \
    }

Test(microbench, shapes_gptj_tp1)
{
    static const Expect want[] = {
        {"fwd.attn_out+bwd.attn_out.dgrad", 2048, 4096, 4096, 1},
        {"bwd.qkv.dgrad", 2048, 4096, 12288, 1},
        {"bwd.ffn_up.dgrad+fwd.ffn_down", 2048, 4096, 16384, 1},
        {"bwd.lm_head.dgrad", 2048, 4096, 50400, 1},
        {"fwd.qkv", 2048, 12288, 4096, 1},
        {"fwd.ffn_up+bwd.ffn_down.dgrad", 2048, 16384, 4096, 1},
        {"fwd.lm_head", 2048, 50400, 4096, 1},
        {"bwd.attn_out.wgrad", 4096, 4096, 2048, 1},
        {"bwd.qkv.wgrad", 4096, 12288, 2048, 1},
        {"bwd.ffn_up.wgrad", 4096, 16384, 2048, 1},
        {"bwd.lm_head.wgrad", 4096, 50400, 2048, 1},
        {"bwd.ffn_down.wgrad", 16384, 4096, 2048, 1},
        ATTN(16),
    };
    g_autoptr(GArray) got = gptj(1, 1, 0);
    check_list(got, want, G_N_ELEMENTS(want), 1);
}

Test(microbench, shapes_gptj_tp2)
{
    /* attn_out's wgrad (k, n, m) = (2048, 4096, 2048) is its forward shape at tp 2. */
    static const Expect want[] = {
        {"bwd.attn_out.dgrad", 2048, 2048, 4096, 1},
        {"fwd.attn_out+bwd.attn_out.wgrad", 2048, 4096, 2048, 1},
        {"bwd.qkv.dgrad", 2048, 4096, 6144, 1},
        {"bwd.ffn_up.dgrad+fwd.ffn_down", 2048, 4096, 8192, 1},
        {"bwd.lm_head.dgrad", 2048, 4096, 25200, 1},
        {"fwd.qkv", 2048, 6144, 4096, 1},
        {"fwd.ffn_up+bwd.ffn_down.dgrad", 2048, 8192, 4096, 1},
        {"fwd.lm_head", 2048, 25200, 4096, 1},
        {"bwd.qkv.wgrad", 4096, 6144, 2048, 1},
        {"bwd.ffn_up.wgrad", 4096, 8192, 2048, 1},
        {"bwd.lm_head.wgrad", 4096, 25200, 2048, 1},
        {"bwd.ffn_down.wgrad", 8192, 4096, 2048, 1},
        ATTN(8),
    };
    g_autoptr(GArray) got = gptj(2, 1, 0);
    check_list(got, want, G_N_ELEMENTS(want), 2);
}

Test(microbench, shapes_gptj_tp4)
{
    /* ffn / 4 = h: all four MLP forward and dgrad GEMMs are 2048 x 4096 x 4096. */
    static const Expect want[] = {
        {"bwd.attn_out.wgrad", 1024, 4096, 2048, 1},
        {"bwd.attn_out.dgrad", 2048, 1024, 4096, 1},
        {"fwd.qkv", 2048, 3072, 4096, 1},
        {"fwd.attn_out", 2048, 4096, 1024, 1},
        {"bwd.qkv.dgrad", 2048, 4096, 3072, 1},
        {"fwd.ffn_up+bwd.ffn_up.dgrad+fwd.ffn_down+bwd.ffn_down.dgrad", 2048, 4096, 4096, 1},
        {"bwd.lm_head.dgrad", 2048, 4096, 12600, 1},
        {"fwd.lm_head", 2048, 12600, 4096, 1},
        {"bwd.qkv.wgrad", 4096, 3072, 2048, 1},
        {"bwd.ffn_up.wgrad+bwd.ffn_down.wgrad", 4096, 4096, 2048, 1},
        {"bwd.lm_head.wgrad", 4096, 12600, 2048, 1},
        ATTN(4),
    };
    g_autoptr(GArray) got = gptj(4, 1, 0);
    check_list(got, want, G_N_ELEMENTS(want), 4);
}

Test(microbench, shapes_gptj_tp8)
{
    static const Expect want[] = {
        {"bwd.attn_out.wgrad", 512, 4096, 2048, 1},
        {"bwd.attn_out.dgrad", 2048, 512, 4096, 1},
        {"fwd.qkv", 2048, 1536, 4096, 1},
        {"fwd.ffn_up+bwd.ffn_down.dgrad", 2048, 2048, 4096, 1},
        {"fwd.attn_out", 2048, 4096, 512, 1},
        {"bwd.qkv.dgrad", 2048, 4096, 1536, 1},
        {"bwd.ffn_up.dgrad+fwd.ffn_down+bwd.ffn_down.wgrad", 2048, 4096, 2048, 1},
        {"bwd.lm_head.dgrad", 2048, 4096, 6300, 1},
        {"fwd.lm_head", 2048, 6300, 4096, 1},
        {"bwd.qkv.wgrad", 4096, 1536, 2048, 1},
        {"bwd.ffn_up.wgrad", 4096, 2048, 2048, 1},
        {"bwd.lm_head.wgrad", 4096, 6300, 2048, 1},
        ATTN(2),
    };
    g_autoptr(GArray) got = gptj(8, 1, 0);
    check_list(got, want, G_N_ELEMENTS(want), 8);
}

static gint cmp_shape(const SsimBenchGemmShape *a, const SsimBenchGemmShape *b)
{
    guint64 x[4] = {a->batch, a->m, a->n, a->k}, y[4] = {b->batch, b->m, b->n, b->k};
    for (int i = 0; i < 4; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

Test(microbench, shapes_union_sorted_unique_deterministic)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    const guint tps[] = {1, 2, 4, 8}, rtps[] = {8, 4, 2, 1}, mbs[] = {1, 2, 4};
    g_autoptr(GArray) a = ssim_bench_gemm_shapes(m, tps, 4, mbs, 3, 0);
    g_autoptr(GArray) b = ssim_bench_gemm_shapes(m, tps, 4, mbs, 3, 0);
    g_autoptr(GArray) r = ssim_bench_gemm_shapes(m, rtps, 4, mbs, 3, 0);
    cr_assert_eq(a->len, b->len);
    cr_assert_eq(memcmp(a->data, b->data, a->len * sizeof(SsimBenchGemmShape)), 0);
    /* The same shapes whatever the order of --tp; only the label order may differ. */
    cr_assert_eq(a->len, r->len);
    for (guint i = 0; i < a->len; i++) {
        const SsimBenchGemmShape *s = &g_array_index(a, SsimBenchGemmShape, i);
        cr_assert_eq(cmp_shape(s, &g_array_index(r, SsimBenchGemmShape, i)), 0);
        if (i > 0)
            cr_assert_lt(cmp_shape(&g_array_index(a, SsimBenchGemmShape, i - 1), s), 0,
                         "row %u not strictly after row %u", i, i - 1);
    }
    /* Every single-configuration shape is in the union. */
    for (guint t = 0; t < 4; t++) {
        for (guint b2 = 0; b2 < 3; b2++) {
            g_autoptr(GArray) one = ssim_bench_gemm_shapes(m, &tps[t], 1, &mbs[b2], 1, 0);
            for (guint i = 0; i < one->len; i++) {
                gboolean found = FALSE;
                for (guint j = 0; j < a->len && !found; j++)
                    found = cmp_shape(&g_array_index(one, SsimBenchGemmShape, i),
                                      &g_array_index(a, SsimBenchGemmShape, j)) == 0;
                cr_assert(found, "tp %u mb %u row %u missing from the union", tps[t], mbs[b2], i);
            }
        }
    }
}

Test(microbench, shapes_microbatch_and_seq)
{
    /* mb 2: 4096 tokens, so QKV's wgrad (4096, 12288, 4096) is its forward shape; attention
     * batches double. */
    g_autoptr(GArray) mb2 = gptj(1, 2, 0);
    gboolean qkv = FALSE, score = FALSE;
    for (guint i = 0; i < mb2->len; i++) {
        const SsimBenchGemmShape *g = &g_array_index(mb2, SsimBenchGemmShape, i);
        if (g_str_has_prefix(g->label, "fwd.qkv"))
            qkv = g->m == 4096 && g->n == 12288 && g->k == 4096 && g->batch == 1;
        if (g_str_has_prefix(g->label, "fwd.attn_score"))
            score = g->m == 2048 && g->n == 2048 && g->k == 256 && g->batch == 32;
    }
    cr_assert(qkv && score);
    /* --seq 1024 overrides the model's 2048. */
    g_autoptr(GArray) s1k = gptj(1, 1, 1024);
    qkv = score = FALSE;
    for (guint i = 0; i < s1k->len; i++) {
        const SsimBenchGemmShape *g = &g_array_index(s1k, SsimBenchGemmShape, i);
        if (strcmp(g->label, "fwd.qkv") == 0)
            qkv = g->m == 1024 && g->n == 12288 && g->k == 4096;
        if (g_str_has_prefix(g->label, "fwd.attn_score"))
            score = g->m == 1024 && g->n == 1024 && g->k == 256 && g->batch == 16;
    }
    cr_assert(qkv && score);
}

Test(microbench, shapes_sweep)
{
    const guint64 sizes[] = {1024, 256, 1024, 4096};
    g_autoptr(GArray) s = ssim_bench_gemm_sweep(sizes, G_N_ELEMENTS(sizes));
    cr_assert_eq(s->len, 3);
    const guint64 want[] = {256, 1024, 4096};
    for (guint i = 0; i < 3; i++) {
        const SsimBenchGemmShape *g = &g_array_index(s, SsimBenchGemmShape, i);
        cr_expect_str_eq(g->label, "sweep");
        cr_expect(g->m == want[i] && g->n == want[i] && g->k == want[i] && g->batch == 1);
    }
}

Test(microbench, shapes_attention_cases)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    const guint tps[] = {1, 2, 4, 8}, mbs[] = {2, 1};
    g_autoptr(GArray) a = ssim_bench_attention_cases(m, tps, 4, mbs, 2, 0);
    cr_assert_eq(a->len, 8);
    const guint64 heads[] = {2, 2, 4, 4, 8, 8, 16, 16}, batch[] = {1, 2, 1, 2, 1, 2, 1, 2};
    for (guint i = 0; i < 8; i++) {
        const SsimBenchAttention *c = &g_array_index(a, SsimBenchAttention, i);
        cr_expect(c->seq == 2048 && c->head_dim == 256 && c->heads == heads[i] &&
                      c->batch == batch[i],
                  "row %u", i);
    }
    /* A tp that does not divide the heads rounds up, as ssim_model_gemm does. */
    const guint tp3 = 3, mb1 = 1;
    g_autoptr(GArray) b = ssim_bench_attention_cases(m, &tp3, 1, &mb1, 1, 512);
    cr_assert_eq(b->len, 1);
    cr_expect_eq(g_array_index(b, SsimBenchAttention, 0).heads, 6);
    cr_expect_eq(g_array_index(b, SsimBenchAttention, 0).seq, 512);
}

Test(microbench, shapes_memory_cases)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    const guint tps[] = {8, 1}, mb = 1;
    g_autoptr(GArray) c = ssim_bench_memory_cases(m, tps, 2, &mb, 1, 0);
    /* GPT-J layer parameters: LayerNorm 2h + QKV 3h^2 + out h^2 + fc_in (h ffn + ffn) + fc_out
     * (ffn h + h) = 8192 + 50331648 + 16777216 + 67125248 + 67112960 = 201355264. */
    static const SsimBenchMemCase want[] = {
        {SSIM_BENCH_MEMOP_LAYERNORM, 2048, 4096},   /* tp does not shard layernorm: once */
        {SSIM_BENCH_MEMOP_GELU, 1, 2048 * 2048},    /* tp 8: ffn / 8 = 2048 */
        {SSIM_BENCH_MEMOP_GELU, 1, 2048 * 16384},   /* tp 1 */
        {SSIM_BENCH_MEMOP_SOFTMAX, 2 * 2048, 2048}, /* 2 heads on each of 8 ranks */
        {SSIM_BENCH_MEMOP_SOFTMAX, 16 * 2048, 2048}, {SSIM_BENCH_MEMOP_ADD, 1, 2048 * 4096},
        {SSIM_BENCH_MEMOP_ADAM, 1, 201355264 / 8},   {SSIM_BENCH_MEMOP_ADAM, 1, 201355264},
        {SSIM_BENCH_MEMOP_COPY, 1, 2048 * 4096},
    };
    cr_assert_eq(c->len, G_N_ELEMENTS(want));
    for (guint i = 0; i < c->len; i++) {
        const SsimBenchMemCase *g = &g_array_index(c, SsimBenchMemCase, i);
        cr_expect(g->op == want[i].op && g->rows == want[i].rows && g->cols == want[i].cols,
                  "row %u: %s %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT, i,
                  ssim_bench_memop_name(g->op), (guint64)g->rows, (guint64)g->cols);
    }
}

Test(microbench, shapes_sweep_merges_into_model_shapes)
{
    /* At microbatch 2, 4096^3 is attn_out's forward, dgrad and wgrad shape: the sweep's 4096
     * joins that row instead of timing the shape twice. */
    g_autoptr(GArray) list = gptj(1, 2, 0);
    guint before = list->len;
    const guint64 sizes[] = {4096, 512};
    g_autoptr(GArray) sweep = ssim_bench_gemm_sweep(sizes, 2);
    ssim_bench_gemm_shapes_merge(list, sweep);
    cr_assert_eq(list->len, before + 1);
    const SsimBenchGemmShape *first = &g_array_index(list, SsimBenchGemmShape, 0);
    cr_expect_str_eq(first->label, "sweep");
    cr_expect_eq(first->m, 512);
    gboolean found = FALSE;
    for (guint i = 0; i < list->len; i++) {
        const SsimBenchGemmShape *g = &g_array_index(list, SsimBenchGemmShape, i);
        if (g->m == 4096 && g->n == 4096 && g->k == 4096 && g->batch == 1) {
            cr_expect_str_eq(g->label, "fwd.attn_out+bwd.attn_out.dgrad+bwd.attn_out.wgrad+sweep");
            found = TRUE;
        }
    }
    cr_assert(found);
    /* Merging again changes nothing. */
    ssim_bench_gemm_shapes_merge(list, sweep);
    cr_expect_eq(list->len, before + 1);
}

Test(microbench, shapes_long_labels_are_cut_cleanly)
{
    GArray *list = g_array_new(FALSE, TRUE, sizeof(SsimBenchGemmShape));
    g_autoptr(GArray) more = g_array_new(FALSE, TRUE, sizeof(SsimBenchGemmShape));
    for (guint i = 0; i < 40; i++) {
        SsimBenchGemmShape s = {.m = 8, .n = 8, .k = 8, .batch = 1};
        g_snprintf(s.label, sizeof s.label, "label%02u", i);
        g_array_append_val(more, s);
    }
    ssim_bench_gemm_shapes_merge(list, more);
    cr_assert_eq(list->len, 1);
    const char *label = g_array_index(list, SsimBenchGemmShape, 0).label;
    cr_expect(strlen(label) < sizeof(((SsimBenchGemmShape *)NULL)->label));
    cr_expect(g_str_has_prefix(label, "label00+label01+"));
    cr_expect(g_str_has_suffix(label, "+..."), "label: %s", label);
    g_array_unref(list);
}

/* Each shape is timed in the layout frameworks run its first GEMM in: a weight GEMM's forward
 * "NT" (X W^T, W stored [out, in]), its input gradient "NN", its weight gradient "TN"; Q K^T as
 * a weight GEMM, P V "NN" forward and "NT" input gradient; a shared shape keeps its first
 * GEMM's layout; sweep GEMMs "NT". */
Test(microbench, shapes_carry_the_framework_layout)
{
    g_autoptr(GArray) s = gptj(1, 1, 0);
    const struct {
        const char *label, *layout;
    } want[] = {
        {"fwd.qkv", "NT"},
        {"bwd.qkv.dgrad", "NN"},
        {"bwd.qkv.wgrad", "TN"},
        {"fwd.attn_out+bwd.attn_out.dgrad", "NT"},
        {"bwd.ffn_up.dgrad+fwd.ffn_down", "NN"},
        {"fwd.attn_score+bwd.attn_ctx.dgrad", "NT"},
        {"bwd.attn_score.dgrad+fwd.attn_ctx+bwd.attn_ctx.wgrad", "NN"},
        {"bwd.attn_score.wgrad", "TN"},
    };
    for (gsize w = 0; w < G_N_ELEMENTS(want); w++) {
        gboolean found = FALSE;
        for (guint i = 0; i < s->len; i++) {
            const SsimBenchGemmShape *g = &g_array_index(s, SsimBenchGemmShape, i);
            if (strcmp(g->label, want[w].label) == 0) {
                found = TRUE;
                cr_expect_str_eq(g->layout, want[w].layout, "%s", g->label);
            }
        }
        cr_expect(found, "no shape labelled %s", want[w].label);
    }
    const guint64 sizes[] = {1024};
    g_autoptr(GArray) sweep = ssim_bench_gemm_sweep(sizes, 1);
    cr_expect_str_eq(g_array_index(sweep, SsimBenchGemmShape, 0).layout, "NT");
    /* Merged into the model's shapes, a new sweep shape keeps its own layout. */
    ssim_bench_gemm_shapes_merge(s, sweep);
    for (guint i = 0; i < s->len; i++) {
        const SsimBenchGemmShape *g = &g_array_index(s, SsimBenchGemmShape, i);
        if (g->m == 1024 && g->n == 1024 && g->k == 1024)
            cr_expect_str_eq(g->layout, "NT");
    }
}
