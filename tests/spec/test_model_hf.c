/*
 * Tests for Hugging Face config.json models (src/spec/model-hf.c): each bundled config of a
 * public checkpoint gives the parameter count published for it (within 1%, most exactly), GPT-J's
 * config maps onto the same shape as the hand-written models/gpt-j-6b.ini, the Llama-style
 * fields give grouped-query attention and a gated MLP, what is approximated is said, and every
 * broken config is refused with the file and the config's own field name.
 *
 * Oracles: the published totals (model cards and the checkpoints' safetensors metadata) and the
 * INI file written independently from the GPT-J paper's figures.
 */
#include <criterion/criterion.h>

#include <shiftsim/data.h>
#include <shiftsim/model.h>

#include <math.h>
#include <string.h>

static SsimModel *load_ok(const char *name)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load(name, &error);
    cr_assert_not_null(m, "loading %s: %s", name, error ? error->message : "?");
    return m;
}

/* The message of loading `json` (as "t/config.json"), which must fail. */
static char *load_error(const char *json)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load_hf_data(json, -1, "t/config.json", &error);
    cr_assert_null(m, "%s loaded", json);
    cr_assert_not_null(error);
    char *msg = g_strdup(error->message);
    g_error_free(error);
    return msg;
}

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "'%s' lacks '%s'", (msg), (needle))

Test(model_hf, published_parameter_counts)
{
    const struct {
        const char *name;
        guint64 published;
        double tolerance; /* relative */
    } configs[] = {
        {"hf/gpt2", 124439808ULL, 0.0},
        /* The model card's figure; the shape (every matrix, bias and norm) gives 6,050,882,784. */
        {"hf/gpt-j-6b", 6053381344ULL, 0.01},
        {"hf/llama-2-7b", 6738415616ULL, 0.0},
        {"hf/mistral-7b", 7241732096ULL, 0.0},
        /* Qwen2's QKV-only bias is counted with an output bias: 28 x 3584 more. */
        {"hf/qwen2-7b", 7615616512ULL, 0.0001},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(configs); i++) {
        g_autoptr(SsimModel) m = load_ok(configs[i].name);
        guint64 p = ssim_model_params(m);
        double off = fabs((double)p - (double)configs[i].published) / (double)configs[i].published;
        cr_assert(off <= configs[i].tolerance,
                  "%s: %" G_GUINT64_FORMAT " vs published %" G_GUINT64_FORMAT, configs[i].name, p,
                  configs[i].published);
        cr_assert(off <= 0.01);
    }
    g_autoptr(SsimModel) qwen = load_ok("hf/qwen2-7b");
    cr_assert_eq(ssim_model_params(qwen), 7615616512ULL + 28ULL * 3584);
}

/* The model of a config given inline (as "t/config.json"), which must load. */
static SsimModel *load_text(const char *json)
{
    GError *error = NULL;
    SsimModel *m = ssim_model_load_hf_data(json, -1, "t/config.json", &error);
    cr_assert_not_null(m, "%s: %s", json, error ? error->message : "?");
    return m;
}

/*
 * GPT-NeoX's family by model_type: LayerNorm, a plain GELU MLP (two matrices, not a gated three),
 * biases, untied, attention and MLP side by side.  Oracles: the totals published for Pythia-6.9B
 * (6,857,302,016, the Pythia paper's table) and GPT-NeoX-20B (20,554,567,680), from the modules
 * HF prints (input_layernorm and post_attention_layernorm, query_key_value h -> 3h with bias,
 * dense h -> h with bias, dense_h_to_4h and dense_4h_to_h with biases, final_layer_norm,
 * embed_in and embed_out V x h): the shape has one norm per parallel block, 2h parameters a layer
 * fewer, and says so.  With use_parallel_residual false the block is sequential, two norms, and
 * the count is the published one exactly.
 */
Test(model_hf, gpt_neox_family)
{
    g_autoptr(SsimModel) pythia = load_text(
        "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"hidden_act\": \"gelu\", "
        "\"hidden_size\": 4096, \"intermediate_size\": 16384, \"max_position_embeddings\": 2048, "
        "\"model_type\": \"gpt_neox\", \"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
        "\"rotary_pct\": 0.25, \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", "
        "\"use_parallel_residual\": true, \"vocab_size\": 50432}");
    cr_assert_eq(pythia->activation, SSIM_ACT_GELU, "a NeoX MLP is not gated");
    cr_assert_eq(pythia->norm, SSIM_NORM_LAYERNORM);
    cr_assert_eq(pythia->block, SSIM_BLOCK_PARALLEL);
    cr_assert_eq(pythia->position, SSIM_POSITION_ROTARY);
    cr_assert(pythia->attention_bias && pythia->mlp_bias);
    cr_assert_not(pythia->tied_embeddings);
    cr_assert_eq(pythia->dtype, SSIM_DTYPE_FP16);
    cr_assert_eq(ssim_model_params(pythia), 6857302016ULL - 32ULL * 2 * 4096);
    assert_has(pythia->notes, "two LayerNorms of each parallel block");

    const char *neox = "{\"model_type\": \"gpt_neox\", \"hidden_act\": \"gelu_fast\", "
                       "\"hidden_size\": 6144, \"intermediate_size\": 24576, "
                       "\"max_position_embeddings\": 2048, \"num_attention_heads\": 64, "
                       "\"num_hidden_layers\": 44, \"vocab_size\": 50432%s}";
    g_autofree char *parallel = g_strdup_printf(neox, "");
    g_autofree char *sequential = g_strdup_printf(neox, ", \"use_parallel_residual\": false");
    g_autoptr(SsimModel) p = load_text(parallel);
    g_autoptr(SsimModel) s = load_text(sequential);
    cr_assert_eq(p->block, SSIM_BLOCK_PARALLEL, "use_parallel_residual is true by default");
    cr_assert_eq(ssim_model_params(p), 20554567680ULL - 44ULL * 2 * 6144);
    cr_assert_eq(s->block, SSIM_BLOCK_SEQUENTIAL);
    cr_assert_eq(ssim_model_params(s), 20554567680ULL);
    cr_assert_null(s->notes, "nothing approximated: %s", s->notes);
    /* The MLP GEMM is h -> 4h, not a gated pair. */
    SsimGemm up = ssim_model_gemm(s, SSIM_GEMM_FFN_UP, 1, 1);
    cr_assert_eq(up.n, 24576);
}

/*
 * Phi-2 (model_type phi): NeoX's plain GELU MLP and biases, attention and MLP side by side off one
 * LayerNorm (exactly the shape's parallel block), an LM head bias, untied.  Oracle: its published
 * 2,779,683,840 parameters.  StarCoder (gpt_bigcode): GPT-2's names with multi-query attention,
 * one key-value head of 128; by hand with 4096 learned positions (its 8192-token context capped,
 * and said): 40 layers of 6144 x (6144 + 256) + 6144 x 6144 with biases, MLP 6144 x 24576 both
 * ways with biases, two LayerNorms; the 49152 x 6144 tied embedding and the final LayerNorm.
 */
Test(model_hf, phi_and_gpt_bigcode)
{
    g_autoptr(SsimModel) phi = load_text(
        "{\"model_type\": \"phi\", \"hidden_act\": \"gelu_new\", \"hidden_size\": 2560, "
        "\"intermediate_size\": 10240, \"max_position_embeddings\": 2048, "
        "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 32, "
        "\"partial_rotary_factor\": 0.4, \"tie_word_embeddings\": false, \"vocab_size\": 51200}");
    cr_assert_eq(phi->activation, SSIM_ACT_GELU, "Phi's fc1/fc2 MLP is not gated");
    cr_assert_eq(phi->block, SSIM_BLOCK_PARALLEL);
    cr_assert(phi->lm_head_bias && phi->attention_bias && phi->mlp_bias);
    cr_assert_eq(ssim_model_params(phi), 2779683840ULL);
    cr_assert_null(phi->notes, "%s", phi->notes);

    g_autoptr(SsimModel) sc = load_text(
        "{\"model_type\": \"gpt_bigcode\", \"activation_function\": \"gelu_pytorch_tanh\", "
        "\"multi_query\": true, \"n_embd\": 6144, \"n_head\": 48, \"n_inner\": 24576, "
        "\"n_layer\": 40, \"n_positions\": 8192, \"vocab_size\": 49152}");
    cr_assert_eq(sc->kv_heads, 1, "multi_query");
    const guint64 h = 6144, kv = 128, f = 24576;
    const guint64 layer = h * (h + 2 * kv) + h * h + (h + 2 * kv) + h + 2 * h * f + f + h + 4 * h;
    cr_assert_eq(ssim_model_params(sc), 40 * layer + 49152 * h + 4096 * h + 2 * h);
    assert_has(sc->notes, "context of 8192 tokens");
}

/*
 * OPT, BLOOM and Falcon by model_type.  Oracles: OPT-125m's 125,239,296 parameters (learned
 * positions of 2048 + 2 rows, tied; the 2 offset rows are left out and said), BLOOM-176B's
 * 176,247,271,424 (the BLOOM paper; also models/bloom-176b.ini's declared count) and
 * Falcon-7B's 6,921,720,704 (multi-query attention: one key-value head of 64; no biases; tied),
 * the last in the first release's field names (RefinedWebModel, n_layer, n_head).
 */
Test(model_hf, opt_bloom_falcon_families)
{
    g_autoptr(SsimModel) opt = load_text(
        "{\"model_type\": \"opt\", \"activation_function\": \"relu\", \"do_layer_norm_before\": "
        "true, \"dropout\": 0.1, \"ffn_dim\": 3072, \"hidden_size\": 768, "
        "\"max_position_embeddings\": 2048, \"num_attention_heads\": 12, \"num_hidden_layers\": "
        "12, \"torch_dtype\": \"float16\", \"vocab_size\": 50272, \"word_embed_proj_dim\": 768}");
    cr_assert_eq(opt->activation, SSIM_ACT_RELU);
    cr_assert_eq(opt->position, SSIM_POSITION_LEARNED);
    cr_assert(opt->tied_embeddings && opt->attention_bias && opt->mlp_bias);
    cr_assert(opt->hidden_dropout, "OPT's dropout 0.1 is the residual dropout");
    cr_assert_eq(ssim_model_params(opt), 125239296ULL - 2 * 768);
    assert_has(opt->notes, "2 rows more");

    g_autoptr(SsimModel) bloom =
        load_text("{\"architectures\": [\"BloomForCausalLM\"], \"attention_dropout\": 0.0, "
                  "\"hidden_dropout\": 0.0, \"hidden_size\": 14336, \"model_type\": \"bloom\", "
                  "\"n_head\": 112, \"n_layer\": 70, \"vocab_size\": 250880}");
    g_autoptr(SsimModel) bloom_ini = load_ok("bloom-176b");
    cr_assert_eq(ssim_model_params(bloom), 176247271424ULL);
    cr_assert_eq(ssim_model_params(bloom), ssim_model_params(bloom_ini));
    cr_assert_eq(bloom->position, SSIM_POSITION_ALIBI);
    cr_assert(bloom->embedding_norm);
    cr_assert_eq(bloom->ffn, 4 * 14336);
    cr_assert_eq(bloom->seq_len, bloom_ini->seq_len);
    assert_has(bloom->notes, "no context length");

    g_autoptr(SsimModel) f7 =
        load_text("{\"model_type\": \"RefinedWebModel\", \"alibi\": false, \"bias\": false, "
                  "\"hidden_size\": 4544, \"multi_query\": true, \"n_head\": 71, \"n_layer\": 32, "
                  "\"parallel_attn\": true, \"torch_dtype\": \"bfloat16\", \"vocab_size\": 65024}");
    cr_assert_eq(f7->kv_heads, 1, "multi-query attention");
    cr_assert_eq(f7->block, SSIM_BLOCK_PARALLEL);
    cr_assert_eq(f7->activation, SSIM_ACT_GELU);
    cr_assert_not(f7->attention_bias || f7->mlp_bias);
    cr_assert_eq(f7->seq_len, 2048);
    cr_assert_eq(ssim_model_params(f7), 6921720704ULL);

    /* The new decoder: grouped key-value heads; a norm per branch, counted as one. */
    g_autoptr(SsimModel) f40 = load_text(
        "{\"model_type\": \"falcon\", \"new_decoder_architecture\": true, \"hidden_size\": 8192, "
        "\"num_attention_heads\": 128, \"num_kv_heads\": 8, \"num_hidden_layers\": 60, "
        "\"vocab_size\": 65024}");
    cr_assert_eq(f40->kv_heads, 8);
    SsimGemm qkv = ssim_model_gemm(f40, SSIM_GEMM_QKV, 1, 1);
    cr_assert_eq(qkv.n, (128 + 2 * 8) * 64, "query_key_value: (heads + 2 kv heads) x 64");
    assert_has(f40->notes, "two LayerNorms");

    /* Their errors name their own fields, with the right article. */
    g_autofree char *m1 = load_error("{\"model_type\": \"opt\", \"hidden_size\": 64, "
                                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                     "\"vocab_size\": 8}");
    assert_has(m1, "ffn_dim: missing (an OPT-style config.json names it)");
    g_autofree char *m2 = load_error("{\"model_type\": \"falcon\", \"hidden_size\": 64, "
                                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                     "\"vocab_size\": 8, \"new_decoder_architecture\": true}");
    assert_has(m2, "num_kv_heads (or n_head_kv): missing (a Falcon-style config.json names it)");
    g_autofree char *m3 = load_error("{\"model_type\": \"bloom\", \"hidden_size\": 100, "
                                     "\"n_layer\": 2, \"n_head\": 3, \"vocab_size\": 8}");
    assert_has(m3, "t/config.json: n_head: hidden (100) is not divisible by heads (3)");
    g_autofree char *m4 = load_error("{\"model_type\": \"gpt_neox\", \"hidden_size\": 64, "
                                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                     "\"intermediate_size\": 8, \"max_position_embeddings\": 8, "
                                     "\"vocab_size\": 8, \"hidden_act\": \"silu\"}");
    assert_has(m4, "hidden_act: 'silu' is not an activation this model knows (gelu* or relu)");
}

/*
 * A head_dim other than hidden / heads is the attention's width, and Gemma ties its embeddings
 * unless told otherwise.  Oracle: Gemma-7B's published 8,537,680,896 parameters (16 heads of 256
 * on a hidden of 3072, a GeGLU MLP of 24576, RMSNorm, 256000 tied embeddings).
 */
Test(model_hf, head_dim_and_gemma)
{
    g_autoptr(SsimModel) g = load_text(
        "{\"architectures\": [\"GemmaForCausalLM\"], \"head_dim\": 256, \"hidden_act\": "
        "\"gelu\", \"hidden_size\": 3072, \"intermediate_size\": 24576, "
        "\"max_position_embeddings\": 8192, \"model_type\": \"gemma\", \"num_attention_heads\": "
        "16, \"num_hidden_layers\": 28, \"num_key_value_heads\": 16, \"vocab_size\": 256000}");
    cr_assert_eq(g->head_dim, 256);
    cr_assert(g->tied_embeddings, "GemmaConfig ties by default");
    cr_assert_eq(g->activation, SSIM_ACT_GEGLU);
    cr_assert_eq(ssim_model_params(g), 8537680896ULL);
    cr_assert_eq(ssim_model_gemm(g, SSIM_GEMM_QKV, 1, 1).n, 3 * 4096);
    cr_assert_null(strstr(g->notes, "head_dim"), "no longer approximated: %s", g->notes);
    /* A head_dim equal to hidden / heads leaves the default (0). */
    g_autoptr(SsimModel) m = load_ok("hf/qwen2-7b");
    cr_assert_eq(m->head_dim, 0);
}

/*
 * Llama's field names with a GELU: gated in Llama's and Gemma's classes, one matrix up and one
 * down elsewhere (StarCoder2, BERT), and said.  Oracle: StarCoder2-3B's 3,030,371,328 parameters
 * (24 heads of 128, 2 key-value heads, MLP 3072 -> 12288 -> 3072, biases and LayerNorms, tied).
 */
Test(model_hf, gelu_gated_only_where_the_class_gates_it)
{
    g_autoptr(SsimModel) sc2 = load_text(
        "{\"model_type\": \"starcoder2\", \"hidden_act\": \"gelu_pytorch_tanh\", "
        "\"hidden_size\": 3072, \"intermediate_size\": 12288, \"num_attention_heads\": 24, "
        "\"num_key_value_heads\": 2, \"num_hidden_layers\": 30, \"max_position_embeddings\": "
        "16384, \"tie_word_embeddings\": true, \"use_bias\": true, \"vocab_size\": 49152}");
    cr_assert_eq(sc2->activation, SSIM_ACT_GELU);
    cr_assert_eq(sc2->norm, SSIM_NORM_LAYERNORM);
    cr_assert(sc2->attention_bias && sc2->mlp_bias);
    cr_assert_eq(ssim_model_params(sc2), 3030371328ULL);
    assert_has(sc2->notes, "hidden_act gelu_pytorch_tanh: an ungated MLP");

    /* BioGPT: a causal decoder with Llama's size names and a plain GELU MLP. */
    g_autoptr(SsimModel) biogpt = load_text(
        "{\"model_type\": \"biogpt\", \"hidden_act\": \"gelu\", \"hidden_size\": 1024, "
        "\"intermediate_size\": 4096, \"num_attention_heads\": 16, \"num_hidden_layers\": 24, "
        "\"max_position_embeddings\": 1024, \"vocab_size\": 42384}");
    cr_assert_eq(biogpt->activation, SSIM_ACT_GELU);
    g_autoptr(SsimModel) llama = load_text(
        "{\"model_type\": \"llama\", \"hidden_act\": \"gelu\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, "
        "\"max_position_embeddings\": 8, \"vocab_size\": 8}");
    cr_assert_eq(llama->activation, SSIM_ACT_GEGLU, "LlamaMLP gates whatever its act");
}

/* A multimodal checkpoint (Gemma 3 4B) nests its language model under text_config: that is read,
 * the dtype from the top when text_config has none, and the vision tower's omission said. */
Test(model_hf, text_config_of_a_multimodal_checkpoint)
{
    g_autoptr(SsimModel) g = load_text(
        "{\"model_type\": \"gemma3\", \"torch_dtype\": \"float16\", \"text_config\": "
        "{\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\", "
        "\"num_hidden_layers\": 34, \"head_dim\": 256, \"num_attention_heads\": 8, "
        "\"num_key_value_heads\": 4, \"vocab_size\": 262208, \"max_position_embeddings\": 131072, "
        "\"hidden_activation\": \"gelu_pytorch_tanh\"}, \"vision_config\": {\"hidden_size\": "
        "1152, \"num_hidden_layers\": 27}}");
    cr_assert_eq(g->hidden, 2560);
    cr_assert_eq(g->layers, 34);
    cr_assert_eq(g->kv_heads, 4);
    cr_assert_eq(g->head_dim, 256);
    cr_assert_eq(g->activation, SSIM_ACT_GEGLU, "hidden_activation gelu*: gated");
    cr_assert(g->tied_embeddings);
    cr_assert_eq(g->dtype, SSIM_DTYPE_FP16, "the top's torch_dtype");
    assert_has(g->notes, "text_config");
    /* A file with its own sizes is read at the top, whatever else it nests. */
    g_autoptr(SsimModel) top =
        load_text("{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                  "\"intermediate_size\": 8, \"max_position_embeddings\": 8, \"vocab_size\": 8, "
                  "\"text_config\": {\"hidden_size\": 128}}");
    cr_assert_eq(top->hidden, 64);
}

/* The GPT-J config and the INI written from the paper describe one shape. */
Test(model_hf, gptj_config_matches_the_ini)
{
    g_autoptr(SsimModel) hf = load_ok("hf/gpt-j-6b");
    g_autoptr(SsimModel) ini = load_ok("gpt-j-6b");
    cr_assert_str_eq(hf->name, "gpt-j-6b");
    cr_assert_null(hf->notes, "nothing approximated: %s", hf->notes);
    cr_assert_eq(hf->layers, ini->layers);
    cr_assert_eq(hf->hidden, ini->hidden);
    cr_assert_eq(hf->heads, ini->heads);
    cr_assert_eq(hf->kv_heads, ini->kv_heads);
    cr_assert_eq(hf->ffn, ini->ffn);
    cr_assert_eq(hf->vocab, ini->vocab);
    cr_assert_eq(hf->seq_len, ini->seq_len);
    cr_assert_eq(hf->block, ini->block);
    cr_assert_eq(hf->position, ini->position);
    cr_assert_eq(hf->activation, ini->activation);
    cr_assert_eq(hf->norm, ini->norm);
    cr_assert_eq(hf->tied_embeddings, ini->tied_embeddings);
    cr_assert_eq(hf->attention_bias, ini->attention_bias);
    cr_assert_eq(hf->mlp_bias, ini->mlp_bias);
    cr_assert_eq(hf->lm_head_bias, ini->lm_head_bias);
    cr_assert_eq(hf->dtype, ini->dtype);
    /* attn_pdrop and resid_pdrop 0.0: GPT-J trained without dropout. */
    cr_assert_not(hf->attention_dropout);
    cr_assert_not(hf->hidden_dropout);
    cr_assert_eq(hf->attention_dropout, ini->attention_dropout);
    cr_assert_eq(hf->hidden_dropout, ini->hidden_dropout);
    cr_assert_eq(ssim_model_params(hf), ssim_model_params(ini));
}

Test(model_hf, llama_style_fields)
{
    g_autoptr(SsimModel) m = load_ok("hf/mistral-7b");
    cr_assert_eq(m->hidden, 4096);
    cr_assert_eq(m->layers, 32);
    cr_assert_eq(m->heads, 32);
    cr_assert_eq(m->kv_heads, 8, "grouped-query attention");
    cr_assert_eq(m->ffn, 14336);
    cr_assert_eq(m->activation, SSIM_ACT_SWIGLU, "silu in a Llama MLP is gated");
    cr_assert_eq(m->norm, SSIM_NORM_RMSNORM);
    cr_assert_eq(m->position, SSIM_POSITION_ROTARY);
    cr_assert_eq(m->block, SSIM_BLOCK_SEQUENTIAL);
    cr_assert_not(m->tied_embeddings);
    cr_assert_not(m->attention_bias);
    cr_assert_eq(m->dtype, SSIM_DTYPE_BF16);
    /* A 32768-token context is not a training length: capped, and said so. */
    cr_assert_eq(m->seq_len, SSIM_HF_MAX_SEQ_LEN);
    cr_assert_not_null(m->notes);
    assert_has(m->notes, "context of 32768 tokens");
    /* The QKV GEMM is narrower than MHA's: h + 2 kv d. */
    SsimGemm qkv = ssim_model_gemm(m, SSIM_GEMM_QKV, 1, 1);
    cr_assert_eq(qkv.n, 4096 + 2 * 8 * 128);

    g_autoptr(SsimModel) llama = load_ok("hf/llama-2-7b");
    cr_assert_eq(llama->dtype, SSIM_DTYPE_FP16, "torch_dtype float16");
    cr_assert_eq(llama->seq_len, 4096);
    cr_assert_null(llama->notes, "%s", llama->notes);

    g_autoptr(SsimModel) qwen = load_ok("hf/qwen2-7b");
    cr_assert(qwen->attention_bias);
    assert_has(qwen->notes, "QKV bias");

    g_autoptr(SsimModel) gpt2 = load_ok("hf/gpt2");
    cr_assert(gpt2->tied_embeddings, "GPT-2 ties its LM head to the embedding");
    cr_assert_eq(gpt2->position, SSIM_POSITION_LEARNED);
    cr_assert_eq(gpt2->ffn, 4 * 768, "n_inner absent: 4 n_embd");
    cr_assert_eq(gpt2->seq_len, 1024);
    /* attn_pdrop and resid_pdrop 0.1; Qwen2's attention_dropout 0.0, Llama's none at all. */
    cr_assert(gpt2->attention_dropout);
    cr_assert(gpt2->hidden_dropout);
    cr_assert_not(qwen->attention_dropout);
    cr_assert_not(llama->attention_dropout || llama->hidden_dropout);
}

/* Dropout from the Llama-style names too, and a rate that is not a probability is refused with
 * the config's field. */
Test(model_hf, dropout_fields)
{
    const char *llama = "{\"hidden_size\": 64, \"num_hidden_layers\": 2, "
                        "\"num_attention_heads\": 4, \"intermediate_size\": 128, "
                        "\"max_position_embeddings\": 128, \"vocab_size\": 100";
    g_autofree char *both = g_strdup_printf("%s, \"attention_dropout\": 0.1, "
                                            "\"hidden_dropout\": 0.05}",
                                            llama);
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_hf_data(both, -1, "t/config.json", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert(m->attention_dropout);
    cr_assert(m->hidden_dropout);
    g_autofree char *zero = g_strdup_printf("%s, \"attention_dropout\": 0}", llama);
    g_autoptr(SsimModel) z = ssim_model_load_hf_data(zero, -1, "t/config.json", &error);
    cr_assert_not_null(z);
    cr_assert_not(z->attention_dropout);

    g_autofree char *high = g_strdup_printf("%s, \"attention_dropout\": 1.5}", llama);
    g_autofree char *msg = load_error(high);
    assert_has(msg, "t/config.json: attention_dropout: must be a dropout probability");
    assert_has(msg, "1.5");
    g_autofree char *text = g_strdup_printf("%s, \"hidden_dropout\": \"0.1\"}", llama);
    g_autofree char *msg2 = load_error(text);
    assert_has(msg2, "t/config.json: hidden_dropout: must be a dropout probability");
}

Test(model_hf, load_by_path_and_copy)
{
    g_autofree char *path = ssim_data_find("models/hf/llama-2-7b.json");
    cr_assert_not_null(path);
    g_autoptr(SsimModel) m = load_ok(path);
    cr_assert_str_eq(m->source, path);
    g_autoptr(SsimModel) q = load_ok("hf/qwen2-7b");
    g_autoptr(SsimModel) c = ssim_model_copy(q);
    cr_assert_str_eq(c->notes, q->notes);
    cr_assert_neq(c->notes, q->notes, "the copy owns its notes");

    GError *error = NULL;
    cr_assert_null(ssim_model_load("hf/no-such-model", &error));
    assert_has(error->message, "models/hf/no-such-model.json");
    g_clear_error(&error);
    cr_assert_null(ssim_model_load("/nonexistent/config.json", &error));
    cr_assert_not_null(error);
    g_clear_error(&error);
}

/* A file called config.json takes its name from _name_or_path. */
Test(model_hf, name_of_a_config_json)
{
    const char *json = "{\"_name_or_path\": \"org/Tiny-Llama/\", \"hidden_size\": 64, "
                       "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                       "\"intermediate_size\": 128, \"max_position_embeddings\": 256, "
                       "\"vocab_size\": 1000, \"torch_dtype\": \"float32\"}";
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_hf_data(json, -1, "dir/config.json", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert_str_eq(m->name, "Tiny-Llama");
    cr_assert_eq(m->kv_heads, 4, "no num_key_value_heads: multi-head attention");
    cr_assert_eq(m->dtype, SSIM_DTYPE_BF16);
    assert_has(m->notes, "float32");
    assert_has(m->notes, "dir/config.json: approximated: ");
}

Test(model_hf, errors_name_the_config_field)
{
    const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"hidden_size\": 64}",
         "t/config.json: num_hidden_layers: missing (a Llama-style config.json names it)"},
        {"{\"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 10}",
         "t/config.json: n_positions (or n_ctx): missing"},
        {"{\"n_embd\": 64, \"n_layer\": \"2\"}", "n_layer: must be a positive integer, not \"2\""},
        {"{\"n_embd\": 64, \"n_layer\": 2.5}", "n_layer: must be a positive integer, not 2.5"},
        {"{\"n_embd\": 64, \"n_layer\": 0}", "n_layer: must be a positive integer, not 0"},
        {"{\"hidden_size\": 100, \"num_hidden_layers\": 2, \"num_attention_heads\": 3, "
         "\"intermediate_size\": 8, \"max_position_embeddings\": 8, \"vocab_size\": 8}",
         "t/config.json: num_attention_heads: hidden (100) is not divisible by heads (3)"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 3, \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
         "\"vocab_size\": 8}",
         "num_key_value_heads: heads (4) is not a multiple of kv_heads (3)"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"intermediate_size\": 8, \"max_position_embeddings\": 8, \"vocab_size\": 8, "
         "\"hidden_act\": \"tanh\"}",
         "hidden_act: 'tanh' is not an activation"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"intermediate_size\": 8, \"max_position_embeddings\": 8, \"vocab_size\": 8, "
         "\"torch_dtype\": \"int8\"}",
         "torch_dtype: 'int8' is not bfloat16, float16 or float32"},
        {"{\"hidden_size\": 64, \"num_local_experts\": 8}",
         "num_local_experts: 8 experts: mixture-of-experts models are not modelled"},
        /* DBRX nests its expert count; its size names are no family's, the experts come first. */
        {"{\"model_type\": \"dbrx\", \"d_model\": 64, \"ffn_config\": "
         "{\"moe_num_experts\": 16}}",
         "t/config.json: ffn_config.moe_num_experts: 16 experts: mixture-of-experts"},
        /* Not decoder-only transformers, though BERT's and Mamba's size names are Llama's. */
        {"{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 8, "
         "\"max_position_embeddings\": 8, \"vocab_size\": 8}",
         "t/config.json: model_type: bert is an encoder (bidirectional attention"},
        {"{\"model_type\": \"t5\", \"is_encoder_decoder\": true, \"d_model\": 64}",
         "t/config.json: is_encoder_decoder: model_type t5 is an encoder-decoder model"},
        {"{\"model_type\": \"bart\", \"d_model\": 64}", "model_type: bart is an encoder-decoder"},
        {"{\"model_type\": \"mamba\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
         "\"state_size\": 16, \"vocab_size\": 8}",
         "t/config.json: state_size: model_type mamba is a state-space model"},
        {"{\"hidden_size\": 64, \"mamba_d_state\": 16}",
         "mamba_d_state: model_type unset: is a state-space model"},
        {"{\"model_type\": \"rwkv\", \"hidden_size\": 64}", "model_type: rwkv is a recurrent"},
        {"{\"hidden_size\": 64, \"tie_word_embeddings\": 1, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
         "\"vocab_size\": 8}",
         "tie_word_embeddings: must be true or false, not 1"},
        {"{\"vocab_size\": 8}", "hidden_size: missing (neither hidden_size"},
        {"[1, 2]", "a Hugging Face config.json is one JSON object"},
        {"{\"hidden_size\": ", "t/config.json: not JSON"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *msg = load_error(bad[i].json);
        assert_has(msg, bad[i].needle);
    }
}

/* Sliding windows on the layers each configuration class windows (model-hf.c, map_window). */
Test(model_hf, sliding_window_layers_per_class)
{
#define SIZES                                                                                      \
    "\"hidden_size\": 64, \"num_hidden_layers\": 12, \"num_attention_heads\": 4, "                 \
    "\"intermediate_size\": 128, \"max_position_embeddings\": 4096, \"vocab_size\": 1000"
    const struct {
        const char *json;
        guint window, layers;
    } cases[] = {
        /* Mistral 7B v0.1 (its bundled config): every layer. */
        {"{\"model_type\": \"mistral\", \"sliding_window\": 1024, " SIZES "}", 1024, 12},
        /* Gemma 2: every other layer, the first of each pair (12 -> 6). */
        {"{\"model_type\": \"gemma2\", \"sliding_window\": 4096, " SIZES "}", 4096, 6},
        /* Gemma 3: all but every sliding_window_pattern-th, 6 by default (12 -> 10; 4 -> 9). */
        {"{\"model_type\": \"gemma3_text\", \"sliding_window\": 512, " SIZES "}", 512, 10},
        {"{\"model_type\": \"gemma3_text\", \"sliding_window\": 512, "
         "\"sliding_window_pattern\": 4, " SIZES "}",
         512, 9},
        /* Qwen2: off unless use_sliding_window; then from layer max_window_layers on. */
        {"{\"model_type\": \"qwen2\", \"sliding_window\": 4096, \"use_sliding_window\": false, "
         "\"max_window_layers\": 4, " SIZES "}",
         0, 0},
        {"{\"model_type\": \"qwen2\", \"sliding_window\": 4096, \"use_sliding_window\": true, "
         "\"max_window_layers\": 4, " SIZES "}",
         4096, 8},
        /* A config that lists its layers' kinds is counted. */
        {"{\"model_type\": \"gemma3_text\", \"sliding_window\": 512, \"layer_types\": "
         "[\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"full_attention\", \"full_attention\", "
         "\"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", "
         "\"full_attention\", \"full_attention\"], " SIZES "}",
         512, 3},
        /* No window. */
        {"{\"model_type\": \"llama\", " SIZES "}", 0, 0},
    };
#undef SIZES
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SsimModel) m = load_text(cases[i].json);
        cr_assert_eq(m->sliding_window, cases[i].window, "case %zu", i);
        cr_assert_eq(m->sliding_window_layers, cases[i].layers, "case %zu", i);
    }
    g_autoptr(SsimModel) mistral = load_ok("hf/mistral-7b");
    cr_assert_eq(mistral->sliding_window, 4096);
    cr_assert_eq(mistral->sliding_window_layers, 32);
    cr_assert_null(strstr(mistral->notes, "sliding"), "no longer approximated: %s", mistral->notes);
    g_autoptr(SsimModel) qwen = load_ok("hf/qwen2-7b");
    cr_assert_eq(qwen->sliding_window, 0, "use_sliding_window false");
    /* A layer_types list of another length than the layers is refused. */
    g_autofree char *msg = load_error("{\"model_type\": \"gemma3_text\", \"sliding_window\": "
                                      "512, \"layer_types\": [\"full_attention\"], "
                                      "\"hidden_size\": 64, \"num_hidden_layers\": 2, "
                                      "\"num_attention_heads\": 4, \"intermediate_size\": 8, "
                                      "\"max_position_embeddings\": 8, \"vocab_size\": 8}");
    assert_has(msg, "t/config.json: layer_types: must list the 2 layers' attention kinds");
}

/* A decoder that says it is not an encoder-decoder, or has one expert, loads as any other. */
Test(model_hf, decoder_flags_that_are_not_refusals)
{
    const char *json = "{\"model_type\": \"llama\", \"is_encoder_decoder\": false, "
                       "\"num_local_experts\": 1, \"hidden_size\": 64, "
                       "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                       "\"intermediate_size\": 128, \"max_position_embeddings\": 256, "
                       "\"vocab_size\": 1000}";
    GError *error = NULL;
    g_autoptr(SsimModel) m = ssim_model_load_hf_data(json, -1, "t/config.json", &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    cr_assert_eq(m->layers, 2);
    cr_assert_eq(m->ffn, 128);
}

/* The bounded reader refuses a config nested past SSIM_JSON_MAX_DEPTH before json-glib recurses. */
Test(model_hf, nesting_is_bounded)
{
    GString *deep = g_string_new("{\"a\": ");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(deep, '[');
    g_autofree char *msg = load_error(deep->str);
    g_string_free(deep, TRUE);
    assert_has(msg, "t/config.json:1: JSON nested deeper than");
}
