/*
 * Tests for the model module: every bundled model parses and its parameter count from the shape
 * is within 1% of the count its authors published; FLOPs agree with Narayanan et al.'s closed
 * forms; GEMM shapes; and every kind of broken file yields "file:line: field: message".
 *
 * Oracles are independent of the code: published parameter counts, hand-expanded parameter
 * formulas, and the closed-form FLOP expressions of the Megatron-LM paper.
 */
#include <criterion/criterion.h>

#include <glib/gstdio.h>
#include <shiftsim/cluster.h>
#include <shiftsim/data.h>
#include <shiftsim/memory.h>
#include <shiftsim/model.h>
#include <shiftsim/parallel.h>

#include "tests/common/gzip.h"

#include <math.h>
#include <string.h>

static const char *const bundled[] = {
    "gpt-j-6b",
    "gpt-3-175b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3-70b",
    "llama-3.1-405b",
    "bloom-176b",
    "megatron-gpt-1.7b",
    "megatron-gpt-3.6b",
    "megatron-gpt-7.5b",
    "megatron-gpt-18.4b",
    "megatron-gpt-39.1b",
    "megatron-gpt-76.1b",
    "megatron-gpt-145.6b",
    "megatron-gpt-310.1b",
    "megatron-gpt-529.6b",
    "megatron-gpt-1t",
};

static SsimModel *load_ok(const char *name)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load(name, &error);
    cr_assert_not_null(m, "loading %s: %s", name, error ? error->message : "?");
    return m;
}

/* Loads a broken fixture and returns its error message (caller frees). */
static char *load_fail(const char *fixture)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "models", fixture, NULL);
    GError *error = NULL;
    SsimModel *m = ssim_model_load(path, &error);
    cr_assert_null(m, "%s loaded but should not", fixture);
    cr_assert_not_null(error);
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    char *msg = g_strdup(error->message);
    g_error_free(error);
    return msg;
}

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message '%s' lacks '%s'", (msg), (needle))

Test(model, bundled_params_within_one_percent)
{
    for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++) {
        g_autoptr(SsimModel) m = load_ok(bundled[i]);
        cr_assert_str_eq(m->name, bundled[i]);
        cr_assert_gt(m->declared_params, 0, "%s declares no params", bundled[i]);
        double shape = (double)ssim_model_params(m);
        double off = fabs(shape - (double)m->declared_params) / (double)m->declared_params;
        cr_assert_leq(off, 0.01, "%s: shape %.0f vs declared %" G_GUINT64_FORMAT, bundled[i], shape,
                      m->declared_params);
    }
}

/* Every .ini under models/ is in the list above (so none escapes the 1% check). */
Test(model, every_bundled_file_is_checked)
{
    g_autofree char *dir = ssim_data_find("models");
    cr_assert_not_null(dir);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    cr_assert_not_null(d);
    const char *name;
    guint n = 0;
    while ((name = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(name, ".ini"))
            continue;
        g_autofree char *stem = g_strndup(name, strlen(name) - 4);
        gboolean listed = FALSE;
        for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++)
            listed = listed || strcmp(bundled[i], stem) == 0;
        cr_assert(listed, "models/%s is not in the test's list", name);
        n++;
    }
    cr_assert_eq(n, G_N_ELEMENTS(bundled));
}

Test(model, gptj_params_by_hand)
{
    g_autoptr(SsimModel) m = load_ok("gpt-j-6b");
    /* Embedding V h; per layer: one LayerNorm 2h, QKV 3h^2 and out h^2 without bias, fc_in
     * h*4h + 4h, fc_out 4h*h + h; final LayerNorm 2h; LM head V h + V. */
    guint64 h = 4096, V = 50400, l = 28, f = 16384;
    guint64 layer = 2 * h + 3 * h * h + h * h + (h * f + f) + (f * h + h);
    guint64 expect = V * h + l * layer + 2 * h + V * h + V;
    cr_assert_eq(ssim_model_layer_params(m), layer);
    cr_assert_eq(ssim_model_params(m), expect);
    cr_assert_eq(expect, 6050882784ULL);
    /* The model card says 6,053,381,344: 0.04% apart. */
    cr_assert_eq(m->declared_params, 6053381344ULL);
}

Test(model, published_exact_counts)
{
    /* Released checkpoints (Hugging Face parameter totals). */
    struct {
        const char *name;
        guint64 params;
    } exact[] = {{"llama-2-7b", 6738415616ULL},   {"llama-2-13b", 13015864320ULL},
                 {"llama-2-70b", 68976648192ULL}, {"llama-3.1-8b", 8030261248ULL},
                 {"llama-3-70b", 70553706496ULL}, {"llama-3.1-405b", 405853388800ULL},
                 {"bloom-176b", 176247271424ULL}};
    for (gsize i = 0; i < G_N_ELEMENTS(exact); i++) {
        g_autoptr(SsimModel) m = load_ok(exact[i].name);
        cr_assert_eq(ssim_model_params(m), exact[i].params, "%s: %" G_GUINT64_FORMAT, exact[i].name,
                     ssim_model_params(m));
    }
}

Test(model, megatron_param_formula)
{
    /* Narayanan et al. 2021, section 5.1: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); ours
     * adds only the final LayerNorm (2h). */
    const char *names[] = {"megatron-gpt-18.4b", "megatron-gpt-145.6b", "megatron-gpt-1t"};
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(SsimModel) m = load_ok(names[i]);
        double l = m->layers, h = m->hidden, V = m->vocab, s = m->seq_len;
        double p = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h)) + 2 * h;
        cr_assert_float_eq((double)ssim_model_params(m), p, 1.0, "%s", names[i]);
    }
}

Test(model, default_matches_bundled_gptj)
{
    g_autoptr(SsimModel) d = ssim_model_default();
    g_autoptr(SsimModel) f = load_ok("gpt-j-6b");
    cr_assert(ssim_model_check(d, NULL));
    cr_assert_str_eq(d->name, f->name);
    cr_assert_str_eq(d->source, "builtin");
    cr_assert_eq(d->layers, f->layers);
    cr_assert_eq(d->hidden, f->hidden);
    cr_assert_eq(d->heads, f->heads);
    cr_assert_eq(d->kv_heads, f->kv_heads);
    cr_assert_eq(d->ffn, f->ffn);
    cr_assert_eq(d->vocab, f->vocab);
    cr_assert_eq(d->seq_len, f->seq_len);
    cr_assert_eq(d->block, f->block);
    cr_assert_eq(d->position, f->position);
    cr_assert_eq(d->activation, f->activation);
    cr_assert_eq(d->norm, f->norm);
    cr_assert_eq(d->tied_embeddings, f->tied_embeddings);
    cr_assert_eq(d->attention_bias, f->attention_bias);
    cr_assert_eq(d->mlp_bias, f->mlp_bias);
    cr_assert_eq(d->lm_head_bias, f->lm_head_bias);
    cr_assert_eq(d->embedding_norm, f->embedding_norm);
    cr_assert_eq(d->dtype, f->dtype);
    cr_assert_eq(d->declared_params, f->declared_params);
    cr_assert_eq(d->block, SSIM_BLOCK_PARALLEL);
    cr_assert_eq(d->position, SSIM_POSITION_ROTARY);
}

Test(model, load_by_path_and_copy)
{
    g_autofree char *path = ssim_data_find("models/llama-2-70b.ini");
    cr_assert_not_null(path);
    g_autoptr(SsimModel) m = load_ok(path);
    cr_assert_eq(m->kv_heads, 8);
    cr_assert_eq(m->activation, SSIM_ACT_SWIGLU);
    cr_assert_eq(m->norm, SSIM_NORM_RMSNORM);
    cr_assert_str_eq(m->source, path);
    g_autoptr(SsimModel) c = ssim_model_copy(m);
    cr_assert_str_eq(c->name, m->name);
    cr_assert_neq(c->name, m->name);
    cr_assert_eq(ssim_model_params(c), ssim_model_params(m));
}

/*
 * Gzipped model and cluster files read as the plain ones (ssim_read_file inflates them): an INI
 * with no `name` is named by its file less ".gz" and ".ini", a Hugging Face config.json.gz is
 * read as JSON (its format is told by the name less ".gz"), and a bare file name of a gzipped
 * INI in the current directory is a path, not a bundled name.
 */
Test(model, gzipped_model_and_cluster_files)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-gz-XXXXXX", NULL);
    g_autofree char *ini_path = ssim_data_find("models/llama-2-70b.ini");
    g_autofree char *hf_path = ssim_data_find("models/hf/gpt2.json");
    g_autofree char *cl_path = ssim_data_find("models/clusters/dgx-a100.ini");
    g_autofree char *ini = NULL, *hf = NULL, *cl = NULL;
    cr_assert(g_file_get_contents(ini_path, &ini, NULL, NULL));
    cr_assert(g_file_get_contents(hf_path, &hf, NULL, NULL));
    cr_assert(g_file_get_contents(cl_path, &cl, NULL, NULL));
    /* The INI without its name line, so that the file's name names it. */
    g_autoptr(GRegex) name = g_regex_new("^name = .*$", G_REGEX_MULTILINE, 0, NULL);
    g_autofree char *unnamed = g_regex_replace_literal(name, ini, -1, 0, "", 0, NULL);
    g_autofree char *unnamed_cl = g_regex_replace_literal(name, cl, -1, 0, "", 0, NULL);
    cr_assert(strcmp(unnamed, ini) != 0 && strcmp(unnamed_cl, cl) != 0);
    g_autofree char *gz_ini = g_build_filename(dir, "big.ini.gz", NULL);
    g_autofree char *gz_hf = g_build_filename(dir, "gpt2.json.gz", NULL);
    g_autofree char *gz_cl = g_build_filename(dir, "mine.ini.gz", NULL);
    t_write_gzip(gz_ini, unnamed, strlen(unnamed));
    t_write_gzip(gz_hf, hf, strlen(hf));
    t_write_gzip(gz_cl, unnamed_cl, strlen(unnamed_cl));

    g_autoptr(SsimModel) plain = load_ok(ini_path), zipped = load_ok(gz_ini);
    cr_assert_str_eq(zipped->name, "big");
    cr_assert_eq(ssim_model_params(zipped), ssim_model_params(plain));
    cr_assert_eq(zipped->kv_heads, plain->kv_heads);
    g_autoptr(SsimModel) hf_plain = load_ok(hf_path), hf_zipped = load_ok(gz_hf);
    cr_assert_str_eq(hf_zipped->name, "gpt2");
    cr_assert_eq(ssim_model_params(hf_zipped), ssim_model_params(hf_plain));
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load(gz_cl, &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_str_eq(c->name, "mine");
    g_autofree char *cwd = g_get_current_dir();
    cr_assert_eq(g_chdir(dir), 0);
    g_autoptr(SsimModel) bare = ssim_model_load("big.ini.gz", &error);
    cr_assert_eq(g_chdir(cwd), 0);
    cr_assert_not_null(bare, "%s", error ? error->message : "");
    cr_assert_eq(ssim_model_params(bare), ssim_model_params(plain));

    cr_assert(ssim_path_is("a/b.json.gz", ".json") && ssim_path_is("b.json", ".json"));
    cr_assert(!ssim_path_is("b.gz", ".json") && !ssim_path_is("b.jsongz", ".json") &&
              !ssim_path_is("b.ini.gz", ".json"));
    g_autofree char *stem = ssim_path_stem("x/y/dgx.ini.gz", ".ini");
    cr_assert_str_eq(stem, "dgx");
    g_remove(gz_ini);
    g_remove(gz_hf);
    g_remove(gz_cl);
    g_rmdir(dir);
}

/* 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) and, with full recompute, 96 B s l h^2 (1 + s/(6h) +
 * V/(16 l h)) (Narayanan et al. 2021, eq. 3 and appendix). */
Test(model, flops_closed_form_gpt)
{
    const char *names[] = {"gpt-3-175b",          "megatron-gpt-1.7b",   "megatron-gpt-3.6b",
                           "megatron-gpt-7.5b",   "megatron-gpt-18.4b",  "megatron-gpt-39.1b",
                           "megatron-gpt-76.1b",  "megatron-gpt-145.6b", "megatron-gpt-310.1b",
                           "megatron-gpt-529.6b", "megatron-gpt-1t"};
    const guint64 batches[] = {1, 512, 1536};
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(SsimModel) m = load_ok(names[i]);
        double l = m->layers, h = m->hidden, V = m->vocab, s = m->seq_len;
        for (gsize j = 0; j < G_N_ELEMENTS(batches); j++) {
            double B = (double)batches[j];
            double f72 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
            double f96 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
            double got = ssim_model_iteration_flops(m, batches[j]);
            double hw = ssim_model_hardware_flops(m, batches[j], SSIM_RECOMPUTE_FULL);
            cr_assert_leq(fabs(got - f72) / f72, 0.01, "%s B=%g: %g vs %g", names[i], B, got, f72);
            cr_assert_leq(fabs(hw - f96) / f96, 0.01, "%s B=%g: %g vs %g", names[i], B, hw, f96);
            cr_assert_float_eq(ssim_model_hardware_flops(m, batches[j], SSIM_RECOMPUTE_NONE), got,
                               got * 1e-12);
        }
    }
}

Test(model, selective_recompute_adds_attention_core)
{
    g_autoptr(SsimModel) m = load_ok("megatron-gpt-18.4b");
    double B = 8, s = m->seq_len, h = m->hidden, l = m->layers;
    double extra = l * 4 * B * s * s * h; /* Q K^T and P V forward, recomputed once */
    double got = ssim_model_hardware_flops(m, 8, SSIM_RECOMPUTE_SELECTIVE) -
                 ssim_model_iteration_flops(m, 8);
    cr_assert_float_eq(got, extra, extra * 1e-9);
}

Test(model, gemm_shapes_gptj_tp4)
{
    g_autoptr(SsimModel) m = ssim_model_default();
    guint b = 2, t = 4;
    guint64 T = (guint64)b * 2048;
    SsimGemm g = ssim_model_gemm(m, SSIM_GEMM_QKV, b, t);
    cr_assert_eq(g.m, T);
    cr_assert_eq(g.k, 4096);
    cr_assert_eq(g.n, 3 * 4096 / 4);
    cr_assert_float_eq(g.flops, 2.0 * T * 4096 * 3072, 1.0);
    cr_assert_eq(g.bytes, 2 * (T * 4096 + 4096 * 3072 + T * 3072));
    g = ssim_model_gemm(m, SSIM_GEMM_ATTN_SCORE, b, t);
    cr_assert_eq(g.batch, 2 * 16 / 4);
    cr_assert_eq(g.m, 2048);
    cr_assert_eq(g.n, 2048);
    cr_assert_eq(g.k, 256);
    g = ssim_model_gemm(m, SSIM_GEMM_ATTN_CONTEXT, b, t);
    cr_assert_eq(g.n, 256);
    cr_assert_eq(g.k, 2048);
    g = ssim_model_gemm(m, SSIM_GEMM_ATTN_OUT, b, t);
    cr_assert_eq(g.k, 1024);
    cr_assert_eq(g.n, 4096);
    g = ssim_model_gemm(m, SSIM_GEMM_FFN_UP, b, t);
    cr_assert_eq(g.n, 4096);
    g = ssim_model_gemm(m, SSIM_GEMM_FFN_DOWN, b, t);
    cr_assert_eq(g.k, 4096);
    g = ssim_model_gemm(m, SSIM_GEMM_LM_HEAD, b, t);
    cr_assert_eq(g.n, 50400 / 4);
    /* A vocabulary that tp does not divide is padded up. */
    g = ssim_model_gemm(m, SSIM_GEMM_LM_HEAD, 1, 7);
    cr_assert_eq(g.n, (50400 + 6) / 7);
    cr_assert_str_eq(ssim_gemm_kind_name(SSIM_GEMM_ATTN_OUT), "attn_out");
}

/* The per-rank GEMMs of a layer, times tp, add up to the layer's forward FLOPs. */
Test(model, gemms_sum_to_layer_flops)
{
    const char *names[] = {"gpt-j-6b", "llama-2-70b", "bloom-176b"};
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(SsimModel) m = load_ok(names[i]);
        guint t = 8, b = 3;
        double sum = 0;
        for (int k = 0; k < SSIM_GEMM_LM_HEAD; k++)
            sum += ssim_model_gemm(m, (SsimGemmKind)k, b, t).flops;
        double layer = ssim_model_layer_forward_flops(m, b);
        cr_assert_float_eq(sum * t, layer, layer * 1e-12, "%s", names[i]);
        double head = ssim_model_gemm(m, SSIM_GEMM_LM_HEAD, b, 1).flops;
        cr_assert_float_eq(head, ssim_model_head_forward_flops(m, b), 1.0);
    }
}

Test(model, llama_gqa_swiglu_shapes)
{
    g_autoptr(SsimModel) m = load_ok("llama-2-70b");
    SsimGemm g = ssim_model_gemm(m, SSIM_GEMM_QKV, 1, 8);
    cr_assert_eq(g.n, (8192 + 2 * 8 * 128) / 8);
    g = ssim_model_gemm(m, SSIM_GEMM_FFN_UP, 1, 8);
    cr_assert_eq(g.n, 2 * 28672 / 8);
    cr_assert(ssim_activation_is_gated(m->activation));
}

/*
 * head_dim: an attention wider than the residual stream (Gemma-7B: 16 heads of 256 on a hidden of
 * 3072).  Oracle: the layer's matrices by hand, q = a d = 4096 wide: QKV h x (q + 2 kv d), the
 * output projection q x h; the GEMMs that carry q, the FLOPs they sum to, the selective-recompute
 * activations (Q and the context q wide, K and V kv d).  The same head_dim as hidden / heads
 * changes nothing.
 */
Test(model, head_dim_wider_than_hidden)
{
    const char *ini = "[model]\nformat = 1\nname = wide\nlayers = 2\nhidden = 3072\nheads = 16\n"
                      "kv_heads = %u\nhead_dim = %u\nffn = 24576\nvocab = 1000\nseq_len = 2048\n"
                      "activation = geglu\nnorm = rmsnorm\nattention_bias = false\n"
                      "mlp_bias = false\n";
    g_autofree char *text = g_strdup_printf(ini, 16, 256);
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_data(text, -1, "wide.ini", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "?");
    const guint64 h = 3072, q = 16 * 256, f = 24576;
    cr_assert_eq(ssim_model_head_dim(m), 256);
    cr_assert_eq(ssim_model_layer_params(m), h * (q + 2 * q) + q * h + 3 * h * f + 2 * h);
    SsimGemm qkv = ssim_model_gemm(m, SSIM_GEMM_QKV, 1, 2);
    cr_assert_eq(qkv.n, 3 * q / 2);
    cr_assert_eq(qkv.k, h);
    SsimGemm out = ssim_model_gemm(m, SSIM_GEMM_ATTN_OUT, 1, 2);
    cr_assert_eq(out.k, q / 2);
    cr_assert_eq(out.n, h);
    SsimGemm score = ssim_model_gemm(m, SSIM_GEMM_ATTN_SCORE, 1, 2);
    cr_assert_eq(score.k, 256);
    double sum = 0;
    for (int k = 0; k < SSIM_GEMM_LM_HEAD; k++)
        sum += ssim_model_gemm(m, (SsimGemmKind)k, 3, 2).flops;
    double layer = ssim_model_layer_forward_flops(m, 3);
    cr_assert_float_eq(sum * 2, layer, layer * 1e-12);

    /* Selective recomputation keeps Q, K, V and the context, each q (K, V: kv d) wide, sharded
     * over tp, beside the 4 h of norm and GEMM inputs every rank keeps (bf16, no dropout). */
    SsimParallel par;
    ssim_parallel_init(&par);
    par.tp = 2;
    par.recompute = SSIM_RECOMPUTE_SELECTIVE;
    const guint64 sharded = (4 * q + 4 * q + 2 * 2 * f + 2 * f) * 2 / 2;
    cr_assert_eq(ssim_memory_activation_layer_bytes(m, &par), 2048 * (4 * h * 2 + sharded / 2));

    /* Grouped-query on the same width: K and V are kv_heads x d. */
    g_autofree char *gqa_text = g_strdup_printf(ini, 4, 256);
    g_autoptr(SsimModel) gqa = ssim_model_load_data(gqa_text, -1, "gqa.ini", &error);
    cr_assert_not_null(gqa);
    cr_assert_eq(ssim_model_gemm(gqa, SSIM_GEMM_QKV, 1, 1).n, q + 2 * 4 * 256);

    /* head_dim = hidden / heads is the default written out. */
    g_autofree char *same = g_strdup_printf(ini, 16, 192);
    g_autofree char *none = g_strdup_printf(ini, 16, 192);
    char *line = strstr(none, "head_dim");
    memcpy(line, "#ead_dim", 8);
    g_autoptr(SsimModel) a = ssim_model_load_data(same, -1, "a.ini", &error);
    g_autoptr(SsimModel) b = ssim_model_load_data(none, -1, "b.ini", &error);
    cr_assert(a && b);
    cr_assert_eq(ssim_model_params(a), ssim_model_params(b));
    cr_assert_float_eq(ssim_model_layer_forward_flops(a, 1), ssim_model_layer_forward_flops(b, 1),
                       1.0);
}

Test(model, stage_params)
{
    g_autoptr(SsimModel) j = ssim_model_default(); /* untied */
    guint64 sum = 0;
    for (guint s = 0; s < 4; s++)
        sum += ssim_model_stage_params(j, 4, s);
    cr_assert_eq(sum, ssim_model_params(j));
    cr_assert_eq(ssim_model_stage_params(j, 1, 0), ssim_model_params(j));

    g_autoptr(SsimModel) g = load_ok("gpt-3-175b"); /* tied: the last stage keeps a copy */
    sum = 0;
    for (guint s = 0; s < 8; s++)
        sum += ssim_model_stage_params(g, 8, s);
    cr_assert_eq(sum, ssim_model_params(g) + (guint64)g->vocab * g->hidden);
    cr_assert_eq(ssim_model_stage_params(g, 8, 3), 12 * ssim_model_layer_params(g));
}

Test(model, names_round_trip)
{
    for (int d = 0; d < SSIM_DTYPE_N; d++) {
        SsimDtype out;
        cr_assert(ssim_dtype_from_name(ssim_dtype_name((SsimDtype)d), &out));
        cr_assert_eq((int)out, d);
    }
    cr_assert_eq(ssim_dtype_size(SSIM_DTYPE_BF16), 2);
    cr_assert_eq(ssim_dtype_size(SSIM_DTYPE_FP32), 4);
    SsimRecompute r;
    cr_assert(ssim_recompute_from_name("selective", &r));
    cr_assert_eq(r, SSIM_RECOMPUTE_SELECTIVE);
    cr_assert_not(ssim_recompute_from_name("some", &r));
    SsimBlock b;
    cr_assert(ssim_block_from_name("parallel", &b));
    cr_assert_str_eq(ssim_position_name(SSIM_POSITION_ALIBI), "alibi");
}

/* ---- broken files ---------------------------------------------------------------------- */

Test(model, error_bad_version)
{
    g_autofree char *msg = load_fail("bad-version.ini");
    assert_has(msg, "bad-version.ini:3: format: version 2 is not supported");
}

Test(model, error_missing_format)
{
    g_autofree char *msg = load_fail("missing-format.ini");
    assert_has(msg, "missing-format.ini:2: format: missing");
}

Test(model, error_unknown_key)
{
    g_autofree char *msg = load_fail("unknown-key.ini");
    assert_has(msg, "unknown-key.ini:6: num_layers: unknown key in [model]");
}

Test(model, error_negative_heads)
{
    g_autofree char *msg = load_fail("negative-heads.ini");
    assert_has(msg, "negative-heads.ini:7: heads: must be a positive integer");
}

Test(model, error_param_mismatch)
{
    g_autofree char *msg = load_fail("param-mismatch.ini");
    assert_has(msg, "param-mismatch.ini:13: params: declared 2,000,000 but the shape gives "
                    "2,124,800");
    assert_has(msg, "6.24%");
}

Test(model, error_bad_enum)
{
    g_autofree char *msg = load_fail("bad-enum.ini");
    assert_has(msg, "bad-enum.ini:8: block: 'diagonal' is not one of sequential | parallel");
}

Test(model, error_heads_indivisible)
{
    g_autofree char *msg = load_fail("heads-indivisible.ini");
    assert_has(msg, "heads-indivisible.ini:6: heads: hidden (100) is not divisible by heads (3); "
                    "give head_dim");
}

Test(model, error_syntax)
{
    g_autofree char *msg = load_fail("bad-syntax.ini");
    assert_has(msg, "bad-syntax.ini:3: 'layers 2' is neither");
}

Test(model, error_duplicate_key)
{
    g_autofree char *msg = load_fail("duplicate-key.ini");
    assert_has(msg, "duplicate-key.ini:6: layers: key repeated (first at line 3)");
}

Test(model, error_missing_required)
{
    g_autofree char *msg = load_fail("missing-vocab.ini");
    assert_has(msg, "missing-vocab.ini:2: vocab: missing");
}

Test(model, error_unknown_name_and_file)
{
    GError *error = NULL;
    cr_assert_null(ssim_model_load("no-such-model", &error));
    assert_has(error->message, "unknown model 'no-such-model'");
    g_clear_error(&error);
    cr_assert_null(ssim_model_load("/nonexistent/x.ini", &error));
    cr_assert_eq(error->code, SSIM_CONFIG_ERROR_IO);
    g_clear_error(&error);
}

Test(model, error_inline_texts)
{
    struct {
        const char *text, *needle;
    } cases[] = {
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 3\nvocab = 10\n"
         "seq_len = 8\n",
         "t.ini:6: kv_heads: heads (4) is not a multiple of kv_heads (3)"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq_len = 8\n"
         "dtype = fp8\n",
         "t.ini:8: dtype: fp8 is not a training dtype"},
        {"[model]\nformat = 1\nlayers = 2x\n", "t.ini:3: layers: must be a positive integer, "
                                               "not '2x'"},
        {"[model]\nformat = 1\nlayers = 0\n", "t.ini:3: layers: must be a positive integer"},
        {"[model]\nformat = 1\ntied_embeddings = maybe\nlayers = 1\nhidden = 8\nheads = 1\n"
         "vocab = 4\nseq_len = 4\n",
         "t.ini:3: tied_embeddings: must be true or false"},
        {"format = 1\n", "t.ini:1: format: key outside any [group]"},
        {"[model]\nformat = 1\n[extra]\nx = 1\n", "t.ini:3: [extra]: unknown group"},
        {"# nothing\n", "t.ini: [model]: required group missing"},
        /* The bounds that keep the counts in 64 bits (model.h), each just past. */
        {"[model]\nformat = 1\nlayers = 65536\nhidden = 64\nheads = 4\nvocab = 10\n"
         "seq_len = 8\n",
         "t.ini:3: layers: 65536 is more than 65535"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nffn = 1048577\nvocab = 10\n"
         "seq_len = 8\n",
         "t.ini:6: ffn: 1048577 is more than 1048576"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 65537\nheads = 65537\nvocab = 10\n"
         "seq_len = 8\n",
         "t.ini:5: heads: 65537 is more than 65536"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nhead_dim = 262145\n"
         "vocab = 10\nseq_len = 8\n",
         "t.ini:6: head_dim: heads x head_dim (4 x 262145) is more than 1048576"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 16777217\n"
         "seq_len = 8\n",
         "t.ini:6: vocab: 16777217 is more than 16777216"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\n"
         "seq_len = 16777217\n",
         "t.ini:7: seq_len: 16777217 is more than 16777216 tokens"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq_len = 8\n"
         "sliding_window_layers = 2\n",
         "t.ini:8: sliding_window_layers: 2 windowed layers need a sliding_window"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq_len = 8\n"
         "sliding_window = 4\nsliding_window_layers = 3\n",
         "t.ini:9: sliding_window_layers: 3 is more than the model's 2 layers"},
        {"[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq_len = 8\n"
         "sliding_window = 0\n",
         "t.ini:8: sliding_window: must be a positive integer"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *error = NULL;
        SsimModel *m = ssim_model_load_data(cases[i].text, -1, "t.ini", &error);
        cr_assert_null(m, "case %zu loaded", i);
        assert_has(error->message, cases[i].needle);
        g_clear_error(&error);
    }
}

Test(model, defaults_for_optional_keys)
{
    const char *text = "[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\n"
                       "seq_len = 8\n";
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_data(text, -1, "dir/tiny.ini", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert_str_eq(m->name, "tiny");
    cr_assert_eq(m->kv_heads, 4);
    cr_assert_eq(m->ffn, 256);
    cr_assert_eq(m->block, SSIM_BLOCK_SEQUENTIAL);
    cr_assert_eq(m->position, SSIM_POSITION_LEARNED);
    cr_assert_eq(m->dtype, SSIM_DTYPE_BF16);
    cr_assert_eq(m->declared_params, 0);
}

/* A sliding window is every layer's unless it names how many; it changes no FLOPs count (the
 * attention's every score is counted, as published MFU figures count it). */
Test(model, sliding_window_keys)
{
    const char *base = "[model]\nformat = 1\nlayers = 6\nhidden = 64\nheads = 4\nvocab = 10\n"
                       "seq_len = 1024\n";
    g_autofree char *all = g_strconcat(base, "sliding_window = 256\n", NULL);
    g_autofree char *five =
        g_strconcat(base, "sliding_window = 256\nsliding_window_layers = 5\n", NULL);
    GError *error = NULL;
    g_autoptr(SsimModel) none = ssim_model_load_data(base, -1, "n.ini", &error);
    g_autoptr(SsimModel) a = ssim_model_load_data(all, -1, "a.ini", &error);
    g_autoptr(SsimModel) f = ssim_model_load_data(five, -1, "f.ini", &error);
    cr_assert(none && a && f, "%s", error ? error->message : "");
    cr_assert_eq(none->sliding_window, 0);
    cr_assert_eq(none->sliding_window_layers, 0);
    cr_assert_float_eq(ssim_model_windowed_share(none), 0.0, 1e-12);
    cr_assert_eq(a->sliding_window, 256);
    cr_assert_eq(a->sliding_window_layers, 6);
    cr_assert_float_eq(ssim_model_windowed_share(a), 1.0, 1e-12);
    cr_assert_float_eq(ssim_model_windowed_share(f), 5.0 / 6.0, 1e-12);
    cr_assert_float_eq(ssim_model_iteration_flops(f, 8), ssim_model_iteration_flops(none, 8),
                       1e-9 * ssim_model_iteration_flops(none, 8));
    g_autoptr(SsimModel) copy = ssim_model_copy(f);
    cr_assert_eq(copy->sliding_window_layers, 5);
}

/* A UTF-8 byte order mark before the first line (a Windows editor's) is skipped: the model is
 * the one without it, and errors keep their line numbers. */
Test(model, byte_order_mark_is_skipped)
{
    const char *text = "# a comment\n[model]\nformat = 1\nlayers = 2\nhidden = 64\nheads = 4\n"
                       "vocab = 10\nseq_len = 8\n";
    g_autofree char *marked = g_strconcat("\xef\xbb\xbf", text, NULL);
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_data(marked, -1, "dir/tiny.ini", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert_eq(m->layers, 2);
    cr_assert_eq(m->hidden, 64);
    g_autofree char *bad = g_strconcat("\xef\xbb\xbf", "[model]\nformat = 1\nlayers = x\n", NULL);
    g_autoptr(SsimModel) none = ssim_model_load_data(bad, -1, "b.ini", &error);
    cr_assert_null(none);
    cr_assert(strstr(error->message, "b.ini:3"), "%s", error->message);
    g_error_free(error);
}
