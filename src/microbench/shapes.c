/*
 * Shape derivation for shiftsim-bench (see shapes.h for the conventions).
 *
 * The forward shapes come from ssim_model_gemm(), the one place that knows how a layer's GEMMs
 * are split across tensor-parallel ranks; this file only adds the two backward GEMMs of each,
 * merges duplicates and sorts.  Lists are small (tens of entries), so duplicates are found by a
 * linear scan: simple, and the order of first appearance, which the labels keep, stays obvious.
 */
#include "src/microbench/shapes.h"

#include <string.h>

/* Appends `name` to `label` ('+'-joined) unless it is already one of its parts.  A label that
 * would overflow ends in "+..." instead, so it stays a valid, if shortened, description. */
static void label_add(char *label, gsize size, const char *name)
{
    gsize name_len = strlen(name);
    for (const char *p = label; *p != '\0';) {
        const char *end = strchr(p, '+');
        gsize len = end != NULL ? (gsize)(end - p) : strlen(p);
        if (len == name_len && strncmp(p, name, len) == 0)
            return;
        if (len == 3 && strncmp(p, "...", 3) == 0)
            return;
        p += len + (end != NULL ? 1 : 0);
    }
    gsize used = strlen(label);
    gsize need = used + (used > 0 ? 1 : 0) + name_len;
    if (need + 1 <= size - 4) {
        if (used > 0)
            label[used++] = '+';
        memcpy(label + used, name, name_len + 1);
    } else if (used + 4 < size) {
        memcpy(label + used, "+...", 5);
    }
}

/* A shape reached by several GEMMs is timed once, in the layout of the first (shapes.h). */
static void gemm_add(GArray *list, const char *name, guint64 m, guint64 n, guint64 k, guint64 batch,
                     const char *layout)
{
    for (guint i = 0; i < list->len; i++) {
        SsimBenchGemmShape *s = &g_array_index(list, SsimBenchGemmShape, i);
        if (s->m == m && s->n == n && s->k == k && s->batch == batch) {
            label_add(s->label, sizeof s->label, name);
            return;
        }
    }
    SsimBenchGemmShape s = {.m = m, .n = n, .k = k, .batch = batch};
    label_add(s.label, sizeof s.label, name);
    g_strlcpy(s.layout, layout, sizeof s.layout);
    g_array_append_val(list, s);
}

/* The layouts frameworks run a GEMM's three products in (PyTorch's Linear, Megatron-LM): the
 * second operand of a weight GEMM is the weight stored [out, in] = [n x k], so the forward
 * X W^T is "NT", the input gradient dY W "NN" and the weight gradient, dW = dY^T X (the
 * transposed problem of dB = A^T dC), "TN".  Q K^T holds K as [s x d] = [n x k], a weight's
 * layout; P V holds V as [s x d] = [k x n]: forward "NN", its input gradient dO V^T "NT". */
static void layouts_of(SsimGemmKind kind, const char **fwd, const char **dgrad, const char **wgrad)
{
    gboolean b_as_stored = kind == SSIM_GEMM_ATTN_CONTEXT;
    *fwd = b_as_stored ? "NN" : "NT";
    *dgrad = b_as_stored ? "NT" : "NN";
    *wgrad = "TN";
}

static int cmp_u64(guint64 a, guint64 b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

static gint gemm_cmp(gconstpointer pa, gconstpointer pb)
{
    const SsimBenchGemmShape *a = pa, *b = pb;
    int c = cmp_u64(a->batch, b->batch);
    if (c == 0)
        c = cmp_u64(a->m, b->m);
    if (c == 0)
        c = cmp_u64(a->n, b->n);
    if (c == 0)
        c = cmp_u64(a->k, b->k);
    return c;
}

GArray *ssim_bench_gemm_shapes(const SsimModel *model, const guint *tps, guint n_tps,
                               const guint *microbatches, guint n_microbatches, guint seq)
{
    g_return_val_if_fail(model != NULL, NULL);
    GArray *list = g_array_new(FALSE, TRUE, sizeof(SsimBenchGemmShape));
    SsimModel m = *model; /* a shallow copy: only seq_len changes, the strings are not touched */
    if (seq > 0)
        m.seq_len = seq;
    for (guint t = 0; t < n_tps; t++) {
        for (guint b = 0; b < n_microbatches; b++) {
            g_return_val_if_fail(tps[t] > 0 && microbatches[b] > 0, list);
            for (guint kind = 0; kind < SSIM_GEMM_N; kind++) {
                SsimGemm g = ssim_model_gemm(&m, (SsimGemmKind)kind, microbatches[b], tps[t]);
                const char *name = ssim_gemm_kind_name((SsimGemmKind)kind);
                g_autofree char *fwd = g_strdup_printf("fwd.%s", name);
                g_autofree char *dgrad = g_strdup_printf("bwd.%s.dgrad", name);
                g_autofree char *wgrad = g_strdup_printf("bwd.%s.wgrad", name);
                const char *lf, *ld, *lw;
                layouts_of((SsimGemmKind)kind, &lf, &ld, &lw);
                gemm_add(list, fwd, g.m, g.n, g.k, g.batch, lf);
                gemm_add(list, dgrad, g.m, g.k, g.n, g.batch, ld);
                gemm_add(list, wgrad, g.k, g.n, g.m, g.batch, lw);
            }
        }
    }
    g_array_sort(list, gemm_cmp);
    return list;
}

GArray *ssim_bench_gemm_sweep(const guint64 *sizes, guint n_sizes)
{
    GArray *list = g_array_new(FALSE, TRUE, sizeof(SsimBenchGemmShape));
    for (guint i = 0; i < n_sizes; i++)
        gemm_add(list, "sweep", sizes[i], sizes[i], sizes[i], 1, "NT");
    g_array_sort(list, gemm_cmp);
    return list;
}

void ssim_bench_gemm_shapes_merge(GArray *list, const GArray *more)
{
    g_return_if_fail(list != NULL && more != NULL);
    for (guint i = 0; i < more->len; i++) {
        const SsimBenchGemmShape *s = &g_array_index(more, SsimBenchGemmShape, i);
        /* Each '+'-separated part of the label is added on its own, so none is repeated. */
        g_auto(GStrv) parts = g_strsplit(s->label, "+", -1);
        for (guint j = 0; parts[j] != NULL; j++)
            gemm_add(list, parts[j], s->m, s->n, s->k, s->batch, s->layout);
    }
    g_array_sort(list, gemm_cmp);
}

static gint attention_cmp(gconstpointer pa, gconstpointer pb)
{
    const SsimBenchAttention *a = pa, *b = pb;
    int c = cmp_u64(a->seq, b->seq);
    if (c == 0)
        c = cmp_u64(a->heads, b->heads);
    if (c == 0)
        c = cmp_u64(a->head_dim, b->head_dim);
    if (c == 0)
        c = cmp_u64(a->batch, b->batch);
    return c;
}

GArray *ssim_bench_attention_cases(const SsimModel *model, const guint *tps, guint n_tps,
                                   const guint *microbatches, guint n_microbatches, guint seq)
{
    g_return_val_if_fail(model != NULL, NULL);
    GArray *list = g_array_new(FALSE, TRUE, sizeof(SsimBenchAttention));
    guint64 s = seq > 0 ? seq : model->seq_len;
    for (guint t = 0; t < n_tps; t++) {
        for (guint b = 0; b < n_microbatches; b++) {
            g_return_val_if_fail(tps[t] > 0 && microbatches[b] > 0, list);
            SsimBenchAttention a = {
                .seq = s,
                .heads = (model->heads + tps[t] - 1) / tps[t],
                .head_dim = ssim_model_head_dim(model),
                .batch = microbatches[b],
            };
            gboolean seen = FALSE;
            for (guint i = 0; i < list->len && !seen; i++)
                seen = attention_cmp(&g_array_index(list, SsimBenchAttention, i), &a) == 0;
            if (!seen)
                g_array_append_val(list, a);
        }
    }
    g_array_sort(list, attention_cmp);
    return list;
}

static gint memcase_cmp(gconstpointer pa, gconstpointer pb)
{
    const SsimBenchMemCase *a = pa, *b = pb;
    int c = a->op < b->op ? -1 : a->op > b->op ? 1 : 0;
    if (c == 0)
        c = cmp_u64(a->rows, b->rows);
    if (c == 0)
        c = cmp_u64(a->cols, b->cols);
    return c;
}

static void memcase_add(GArray *list, SsimBenchMemop op, guint64 rows, guint64 cols)
{
    SsimBenchMemCase c = {.op = op, .rows = rows, .cols = cols};
    for (guint i = 0; i < list->len; i++)
        if (memcase_cmp(&g_array_index(list, SsimBenchMemCase, i), &c) == 0)
            return;
    g_array_append_val(list, c);
}

GArray *ssim_bench_memory_cases(const SsimModel *model, const guint *tps, guint n_tps,
                                const guint *microbatches, guint n_microbatches, guint seq)
{
    g_return_val_if_fail(model != NULL, NULL);
    GArray *list = g_array_new(FALSE, TRUE, sizeof(SsimBenchMemCase));
    guint64 s = seq > 0 ? seq : model->seq_len, h = model->hidden;
    guint64 layer_params = ssim_model_layer_params(model);
    for (guint t = 0; t < n_tps; t++) {
        for (guint b = 0; b < n_microbatches; b++) {
            g_return_val_if_fail(tps[t] > 0 && microbatches[b] > 0, list);
            guint64 tp = tps[t], tokens = (guint64)microbatches[b] * s;
            guint64 heads = (model->heads + tp - 1) / tp, ffn = (model->ffn + tp - 1) / tp;
            memcase_add(list, SSIM_BENCH_MEMOP_LAYERNORM, tokens, h);
            memcase_add(list, SSIM_BENCH_MEMOP_GELU, 1, tokens * ffn);
            memcase_add(list, SSIM_BENCH_MEMOP_SOFTMAX, microbatches[b] * heads * s, s);
            memcase_add(list, SSIM_BENCH_MEMOP_ADD, 1, tokens * h);
            memcase_add(list, SSIM_BENCH_MEMOP_ADAM, 1, (layer_params + tp - 1) / tp);
            memcase_add(list, SSIM_BENCH_MEMOP_COPY, 1, tokens * h);
        }
    }
    g_array_sort(list, memcase_cmp);
    return list;
}
