/*
 * Models from Hugging Face `config.json` files: the file people already have for a model maps onto
 * SsimModel (include/shiftsim/model.h), so `--model path/to/config.json` needs no INI.
 *
 * Two families of field names are read.  GPT-2 style (`n_embd`, `n_layer`, `n_head`, `n_inner`,
 * `n_positions` or `n_ctx`, `vocab_size`, `activation_function`): GPT-2 itself (learned
 * positions, sequential blocks, biases everywhere, tied embeddings) and GPT-J (`model_type`
 * "gptj" or a `rotary_dim`: rotary positions, attention and MLP side by side, no attention bias,
 * an LM head bias, untied).  Llama style (`hidden_size`, `num_hidden_layers`,
 * `num_attention_heads`, `num_key_value_heads`, `intermediate_size`, `max_position_embeddings`,
 * `vocab_size`, `tie_word_embeddings`, `hidden_act`, `torch_dtype`): Llama, Mistral, Qwen2 and the
 * decoders that copy them (RMSNorm, rotary positions, a gated MLP, grouped-query attention).
 * GPTBigCode (StarCoder, `gpt_bigcode`) is GPT-2 style with `multi_query` attention.  Five more
 * families are told by `model_type` alone, their shapes being none of the above: GPT-NeoX and
 * Pythia (`gpt_neox`: Llama's size names, but LayerNorm, a plain GELU MLP, biases and by default
 * attention and MLP side by side, `use_parallel_residual`), Phi-1 to Phi-2 (`phi`: the same, side
 * by side off one LayerNorm, an LM head bias), OPT (`opt`: `ffn_dim`,
 * ReLU, learned positions, biases, tied embeddings), BLOOM (`bloom`: `n_layer`, `n_head`, ALiBi, a
 * LayerNorm after the embedding, tied) and Falcon (`falcon`, or `RefinedWeb*` in the first
 * releases: multi-query or `num_kv_heads` attention, `parallel_attn`, no biases by default).
 *
 * What the shape model cannot say exactly is mapped to the closest thing it can and written to
 * SsimModel.notes (the CLI prints it): a config's context length above SSIM_HF_MAX_SEQ_LEN is a
 * context, not a training length, so seq_len is capped there; Qwen2's QKV bias is counted with an
 * output-projection bias (h more parameters a layer, 0.001% of Qwen2-7B); a float32 checkpoint is
 * simulated as bf16 mixed precision.  A sliding window is read onto the layers the config's class
 * windows (map_window()).  Mixture-of-experts configs are refused: their MLP is not one matrix per
 * layer; so are encoders, encoder-decoders and state-space models (refuse_architecture()). Dropout
 * is a flag here (the kernels and masks it costs do not depend on its rate): a config's
 * attention-probability dropout (`attn_pdrop`, `attention_dropout`,
 * `attention_probs_dropout_prob`) above 0 sets attention_dropout, a residual one (`resid_pdrop`,
 * `hidden_dropout`, `hidden_dropout_prob`) hidden_dropout; absent is 0, as the model classes'.
 *
 * Errors name the file and the config's own field ("config.json: num_hidden_layers: missing (a
 * Llama-style config names it)"); the text is bounded (src/core/jsonbound.h) before json-glib
 * parses it.  Invariant: a model returned here has passed ssim_model_check().
 */
#include <shiftsim/data.h>
#include <shiftsim/model.h>

#include "src/core/jsonbound.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

typedef enum {
    FAMILY_GPT2,
    FAMILY_GPTJ,
    FAMILY_LLAMA,
    FAMILY_NEOX,
    FAMILY_PHI,
    FAMILY_OPT,
    FAMILY_BLOOM,
    FAMILY_FALCON,
    FAMILY_N
} Family;

static const char *const family_names[FAMILY_N] = {"GPT-2", "GPT-J", "Llama", "GPT-NeoX",
                                                   "Phi",   "OPT",   "BLOOM", "Falcon"};

typedef struct {
    const char *path;
    JsonObject *obj;        /* the model's fields: the file's object, or its text_config */
    JsonObject *top;        /* the file's object */
    const char *model_type; /* obj's model_type, or NULL */
    Family family;
    GString *notes;
} Hf;

/* The member `key`, or NULL when it is absent or JSON null. */
static JsonNode *member(const Hf *hf, const char *key)
{
    JsonNode *n = json_object_get_member(hf->obj, key);
    return n == NULL || JSON_NODE_HOLDS_NULL(n) ? NULL : n;
}

static void note(Hf *hf, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void note(Hf *hf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (hf->notes->len > 0)
        g_string_append(hf->notes, "; ");
    g_string_append_vprintf(hf->notes, fmt, ap);
    va_end(ap);
}

/* The text of a scalar for messages ("4096.5", "\"abc\"", "an object"). */
static char *node_text(JsonNode *n)
{
    if (JSON_NODE_HOLDS_OBJECT(n))
        return g_strdup("an object");
    if (JSON_NODE_HOLDS_ARRAY(n))
        return g_strdup("an array");
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, n);
    char *text = json_generator_to_data(gen, NULL);
    char *shown = ssim_text_excerpt(text, 40);
    g_free(text);
    return shown;
}

/*
 * The integer `key` of at least `min` (1 or 0; first of the names in `keys`, a NULL-terminated
 * list of aliases, that is present) into *out.  Absent: FALSE with an error naming the first
 * alias when `required`, else TRUE and *out unchanged; *found says which it was (may be NULL).
 */
static gboolean read_uint_min(const Hf *hf, const char *const *keys, guint min, gboolean required,
                              guint *out, gboolean *found, GError **error)
{
    if (found)
        *found = FALSE;
    for (guint i = 0; keys[i]; i++) {
        JsonNode *n = member(hf, keys[i]);
        if (n == NULL)
            continue;
        gboolean ok = JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64 &&
                      json_node_get_int(n) >= min && json_node_get_int(n) <= G_MAXUINT;
        if (!ok) {
            g_autofree char *shown = node_text(n);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: %s: must be a %s integer, not %s", hf->path, keys[i],
                        min > 0 ? "positive" : "non-negative", shown);
            return FALSE;
        }
        *out = (guint)json_node_get_int(n);
        if (found)
            *found = TRUE;
        return TRUE;
    }
    if (!required)
        return TRUE;
    g_autoptr(GString) alias = g_string_new(NULL);
    for (guint i = 1; keys[i]; i++)
        g_string_append_printf(alias, "%s%s", i == 1 ? " (or " : " or ", keys[i]);
    if (alias->len)
        g_string_append_c(alias, ')');
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                "%s: %s%s: missing (%s %s-style config.json names it)", hf->path, keys[0],
                alias->str, hf->family == FAMILY_OPT ? "an" : "a", family_names[hf->family]);
    return FALSE;
}

static gboolean read_uint(const Hf *hf, const char *const *keys, gboolean required, guint *out,
                          gboolean *found, GError **error)
{
    return read_uint_min(hf, keys, 1, required, out, found, error);
}

static gboolean read_bool(const Hf *hf, const char *key, gboolean *out, GError **error)
{
    JsonNode *n = member(hf, key);
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        g_autofree char *shown = node_text(n);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %s: must be true or false, not %s", hf->path, key, shown);
        return FALSE;
    }
    *out = json_node_get_boolean(n);
    return TRUE;
}

/* Whether the first present of `keys`, a dropout probability (a number from 0 to 1), is above 0;
 * FALSE when none is present. */
static gboolean read_dropout(const Hf *hf, const char *const *keys, gboolean *out, GError **error)
{
    *out = FALSE;
    for (guint i = 0; keys[i]; i++) {
        JsonNode *n = member(hf, keys[i]);
        if (n == NULL)
            continue;
        GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
        double p = t == G_TYPE_DOUBLE  ? json_node_get_double(n)
                   : t == G_TYPE_INT64 ? (double)json_node_get_int(n)
                                       : NAN;
        if (!(p >= 0.0 && p <= 1.0)) {
            g_autofree char *shown = node_text(n);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: %s: must be a dropout probability from 0 to 1, not %s", hf->path,
                        keys[i], shown);
            return FALSE;
        }
        *out = p > 0.0;
        return TRUE;
    }
    return TRUE;
}

/* The string `key`, or NULL when absent; a non-string is an error. */
static gboolean read_string(const Hf *hf, const char *key, const char **out, GError **error)
{
    *out = NULL;
    JsonNode *n = member(hf, key);
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        g_autofree char *shown = node_text(n);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %s: must be a string, not %s", hf->path, key, shown);
        return FALSE;
    }
    *out = json_node_get_string(n);
    return TRUE;
}

/* The model_types of Llama's own configuration classes (Llama-style names, a gated MLP). */
static const char *const llama_classes[] = {"llama", "mistral", "qwen2", NULL};

/* The family from model_type and the size fields present. */
static gboolean detect_family(Hf *hf, GError **error)
{
    const char *model_type = hf->model_type;
    /* The families whose model_type alone decides them (their field names are shared). */
    static const struct {
        const char *type;
        Family family;
    } by_type[] = {
        {"gptj", FAMILY_GPTJ},         {"gpt2", FAMILY_GPT2},
        {"gpt_neox", FAMILY_NEOX},     {"phi", FAMILY_PHI},
        {"gpt_bigcode", FAMILY_GPT2},  {"opt", FAMILY_OPT},
        {"bloom", FAMILY_BLOOM},       {"falcon", FAMILY_FALCON},
        {"RefinedWeb", FAMILY_FALCON}, {"RefinedWebModel", FAMILY_FALCON},
    };
    for (gsize i = 0; model_type && i < G_N_ELEMENTS(by_type); i++)
        if (strcmp(model_type, by_type[i].type) == 0) {
            hf->family = by_type[i].family;
            return TRUE;
        }
    gboolean llama = member(hf, "hidden_size") != NULL;
    gboolean gpt = member(hf, "n_embd") != NULL;
    if (gpt) {
        hf->family = member(hf, "rotary_dim") ? FAMILY_GPTJ : FAMILY_GPT2;
    } else if (llama) {
        hf->family = FAMILY_LLAMA;
    } else {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: hidden_size: missing (neither hidden_size, as Llama, Mistral and Qwen2 "
                    "name the width, nor n_embd, as GPT-2 and GPT-J do)",
                    hf->path);
        return FALSE;
    }
    if (model_type && !g_strv_contains(llama_classes, model_type))
        note(hf, "model_type %s is read as a %s-style decoder", model_type,
             family_names[hf->family]);
    return TRUE;
}

/*
 * Configs of models that are not decoder-only transformers, refused before their fields are read
 * as one (a BERT config has Llama's size names and would otherwise simulate as a causal decoder):
 * encoders (bidirectional attention, a masked-language-model or classification head),
 * encoder-decoders (T5, BART, Whisper: `is_encoder_decoder`) and state-space or recurrent models
 * (Mamba, RWKV, and the hybrids whose layers are partly Mamba), told by `model_type` or by the
 * fields only they have.
 */
static gboolean refuse_architecture(const Hf *hf, GError **error)
{
    static const char *const encoders[] = {
        "bert",       "roberta",       "xlm-roberta", "xlm-roberta-xl", "deberta",   "deberta-v2",
        "distilbert", "albert",        "electra",     "mpnet",          "camembert", "modernbert",
        "nomic_bert", "megatron-bert", "mobilebert",  "longformer",     "ernie",     "esm",
        "vit",        "clip",          "siglip",      "dinov2",         "wav2vec2",  "hubert",
        NULL};
    static const char *const encoder_decoders[] = {
        "t5",   "mt5",        "umt5",    "longt5", "switch_transformers",
        "bart", "mbart",      "pegasus", "marian", "whisper",
        "led",  "blenderbot", "m2m_100", "fsmt",   "encoder-decoder",
        NULL};
    static const char *const recurrent[] = {"rwkv",  "rwkv5", "rwkv6", "recurrent_gemma",
                                            "xlstm", NULL};
    static const char *const ssm_fields[] = {"ssm_cfg", "state_size", "mamba_d_state",
                                             "ssm_state_size"};
    const char *type = hf->model_type;
    JsonNode *ed = json_object_get_member(hf->top, "is_encoder_decoder");
    gboolean is_ed = ed && JSON_NODE_HOLDS_VALUE(ed) &&
                     json_node_get_value_type(ed) == G_TYPE_BOOLEAN && json_node_get_boolean(ed);
    const char *what = NULL, *field = "model_type";
    if (is_ed || (type && g_strv_contains(encoder_decoders, type))) {
        what = "an encoder-decoder model (its decoder also attends to an encoder's output)";
        field = is_ed ? "is_encoder_decoder" : field;
    } else if (type && g_strv_contains(encoders, type)) {
        what = "an encoder (bidirectional attention, no causal language-model head)";
    } else if (type && g_strv_contains(recurrent, type)) {
        what = "a recurrent model (its layers are not attention and an MLP)";
    } else {
        for (gsize i = 0; i < G_N_ELEMENTS(ssm_fields) && what == NULL; i++)
            if (member(hf, ssm_fields[i])) {
                what = "a state-space model (Mamba layers, not only attention and an MLP)";
                field = ssm_fields[i];
            }
    }
    if (what == NULL)
        return TRUE;
    g_autofree char *which = strcmp(field, "model_type") == 0
                                 ? g_strdup_printf("%s is", type)
                                 : g_strdup_printf("model_type %s is", type ? type : "unset:");
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s: %s: %s %s: shiftsim models decoder-only transformers (GPT-style causal "
                "language models)",
                hf->path, field, which, what);
    return FALSE;
}

/* Mixture-of-experts configs: their MLP is not one matrix per layer.  The expert count is a
 * top-level field (Mixtral, Qwen2-MoE, DeepSeek) or, in DBRX's config, ffn_config's. */
static gboolean refuse_unsupported(const Hf *hf, GError **error)
{
    static const char *const experts[] = {"num_local_experts", "num_experts", "n_routed_experts",
                                          "moe_num_experts"};
    JsonNode *ffn = member(hf, "ffn_config");
    JsonObject *scopes[] = {hf->obj,
                            ffn && JSON_NODE_HOLDS_OBJECT(ffn) ? json_node_get_object(ffn) : NULL};
    for (gsize s = 0; s < G_N_ELEMENTS(scopes) && scopes[s]; s++)
        for (gsize i = 0; i < G_N_ELEMENTS(experts); i++) {
            JsonNode *n = json_object_get_member(scopes[s], experts[i]);
            if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64 &&
                json_node_get_int(n) > 1) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: %s%s: %" G_GINT64_FORMAT
                            " experts: mixture-of-experts models are not modelled (the MLP "
                            "of a layer is one dense block here)",
                            hf->path, s ? "ffn_config." : "", experts[i], json_node_get_int(n));
                return FALSE;
            }
        }
    return TRUE;
}

static gboolean map_dtype(Hf *hf, SsimModel *m, GError **error)
{
    const char *dtype = NULL;
    /* A text_config without a dtype has the checkpoint's, at the top. */
    Hf outer = *hf;
    if (!member(hf, "torch_dtype") && !member(hf, "dtype"))
        outer.obj = hf->top;
    const char *key = member(&outer, "torch_dtype") ? "torch_dtype" : "dtype";
    if (!read_string(&outer, key, &dtype, error))
        return FALSE;
    m->dtype = SSIM_DTYPE_BF16;
    if (dtype == NULL || strcmp(dtype, "bfloat16") == 0)
        return TRUE;
    if (strcmp(dtype, "float16") == 0) {
        m->dtype = SSIM_DTYPE_FP16;
    } else if (strcmp(dtype, "float32") == 0) {
        note(hf,
             "%s float32 is how the checkpoint is stored: simulated as bf16 mixed-precision "
             "training",
             key);
    } else {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %s: '%s' is not bfloat16, float16 or float32", hf->path, key, dtype);
        return FALSE;
    }
    return TRUE;
}

static gboolean map_activation(Hf *hf, SsimModel *m, GError **error)
{
    /* Each family's field (BLOOM has none).  Absent: ReLU for OPT, SiLU for Llama, else GELU. */
    static const char *const keys[FAMILY_N] = {
        "activation_function", "activation_function", "hidden_act", "hidden_act",
        "hidden_act",          "activation_function", NULL,         "activation"};
    const char *key = keys[hf->family];
    const char *act = NULL;
    /* Gemma's configs name it hidden_activation (Gemma 1 both). */
    if (hf->family == FAMILY_LLAMA && !member(hf, key) && member(hf, "hidden_activation"))
        key = "hidden_activation";
    if (key && !read_string(hf, key, &act, error))
        return FALSE;
    if (act == NULL && hf->family == FAMILY_OPT)
        act = "relu";
    if (hf->family == FAMILY_LLAMA) {
        /* A Llama-style MLP is gated: act(gate(x)) * up(x), then down; with SiLU always.  A GELU
         * one is gated in Llama's own classes and Gemma's, and one matrix up and one down in
         * the other decoders that share Llama's field names (StarCoder2, BioGPT):
         * those are read so, and said. */
        const char *model_type = hf->model_type;
        gboolean gelu_gated = model_type == NULL || g_strv_contains(llama_classes, model_type) ||
                              g_str_has_prefix(model_type, "gemma");
        if (act == NULL || strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0) {
            m->activation = SSIM_ACT_SWIGLU;
        } else if (g_str_has_prefix(act, "gelu") && gelu_gated) {
            m->activation = SSIM_ACT_GEGLU;
        } else if (g_str_has_prefix(act, "gelu")) {
            m->activation = SSIM_ACT_GELU;
            note(hf, "%s %s: an ungated MLP (one matrix up, one down)", key, act);
        } else {
            goto unknown;
        }
        return TRUE;
    }
    /* Every other family's MLP is one matrix up, the activation, one down. */
    if (act == NULL || g_str_has_prefix(act, "gelu"))
        m->activation = SSIM_ACT_GELU;
    else if (strcmp(act, "relu") == 0)
        m->activation = SSIM_ACT_RELU;
    else
        goto unknown;
    return TRUE;
unknown:
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s: %s: '%s' is not an activation this model knows (%s)", hf->path, key, act,
                hf->family == FAMILY_LLAMA ? "silu, swish or gelu*" : "gelu* or relu");
    return FALSE;
}

/* The model's name: the file's name without .json, or for a file called config.json the last
 * part of _name_or_path (or of the folder). */
static char *model_name(const Hf *hf)
{
    g_autofree char *base = ssim_path_stem(hf->path, ".json");
    if (strcmp(base, "config") != 0 && base[0] != '\0')
        return g_steal_pointer(&base);
    const char *named = NULL;
    if (read_string(hf, "_name_or_path", &named, NULL) && named && named[0]) {
        g_autofree char *trimmed = g_strdup(named);
        g_strchomp(trimmed);
        while (g_str_has_suffix(trimmed, "/"))
            trimmed[strlen(trimmed) - 1] = '\0';
        if (trimmed[0])
            return g_path_get_basename(trimmed);
    }
    g_autofree char *dir = g_path_get_dirname(hf->path);
    g_autofree char *parent = g_path_get_basename(dir);
    return strcmp(parent, ".") == 0 ? g_strdup("config") : g_steal_pointer(&parent);
}

/* A NULL-terminated list of a field's names, first the one messages use. */
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* What configs without a context length mean: BLOOM was trained on 2048 tokens (BigScience's
 * runs), and 2048 is FalconConfig's default max_position_embeddings. */
#define BLOOM_SEQ_LEN  2048u
#define FALCON_SEQ_LEN 2048u

/* The size fields most families name as Llama does. */
static gboolean read_llama_sizes(const Hf *hf, SsimModel *m, GError **error)
{
    return read_uint(hf, KEYS("hidden_size"), TRUE, &m->hidden, NULL, error) &&
           read_uint(hf, KEYS("num_hidden_layers"), TRUE, &m->layers, NULL, error) &&
           read_uint(hf, KEYS("num_attention_heads"), TRUE, &m->heads, NULL, error) &&
           read_uint(hf, KEYS("vocab_size"), TRUE, &m->vocab, NULL, error);
}

static gboolean map_llama(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    gboolean found = FALSE;
    if (!read_llama_sizes(hf, m, error))
        return FALSE;
    m->kv_heads = m->heads;
    if (!read_uint(hf, KEYS("num_key_value_heads"), FALSE, &m->kv_heads, NULL, error) ||
        !read_uint(hf, KEYS("intermediate_size"), TRUE, &m->ffn, NULL, error) ||
        !read_uint(hf, KEYS("max_position_embeddings"), TRUE, ctx, NULL, error))
        return FALSE;
    m->block = SSIM_BLOCK_SEQUENTIAL;
    m->position = SSIM_POSITION_ROTARY;
    m->norm = SSIM_NORM_RMSNORM;
    const char *model_type = hf->model_type;
    /* Gemma's configuration class ties the embeddings unless told otherwise (Llama's unties). */
    m->tied_embeddings = model_type && g_str_has_prefix(model_type, "gemma");
    m->attention_bias = FALSE;
    m->mlp_bias = FALSE;
    m->lm_head_bias = FALSE;
    if (!read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error) ||
        !read_bool(hf, "attention_bias", &m->attention_bias, error) ||
        !read_bool(hf, "mlp_bias", &m->mlp_bias, error))
        return FALSE;
    if (g_strcmp0(model_type, "starcoder2") == 0) {
        /* StarCoder2: LayerNorm, and biases everywhere unless use_bias is false. */
        gboolean bias = TRUE;
        if (!read_bool(hf, "use_bias", &bias, error))
            return FALSE;
        m->norm = SSIM_NORM_LAYERNORM;
        m->attention_bias = m->mlp_bias = bias;
    }
    if (g_strcmp0(model_type, "qwen2") == 0) {
        /* Qwen2's q, k and v projections have biases, its output projection none. */
        m->attention_bias = TRUE;
        note(hf,
             "Qwen2's QKV bias is counted with an output-projection bias (%u more "
             "parameters a layer)",
             m->hidden);
    }
    /* A head_dim other than hidden_size / num_attention_heads (Gemma, Qwen3, Mistral-Nemo): the
     * attention is heads x head_dim wide. */
    guint head_dim = 0;
    if (!read_uint(hf, KEYS("head_dim"), FALSE, &head_dim, &found, error))
        return FALSE;
    if (found && (guint64)head_dim * m->heads != m->hidden)
        m->head_dim = head_dim;
    return TRUE;
}

/* GPT-2 and GPT-J. */
static gboolean map_gpt(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    if (!read_uint(hf, KEYS("n_embd"), TRUE, &m->hidden, NULL, error) ||
        !read_uint(hf, KEYS("n_layer"), TRUE, &m->layers, NULL, error) ||
        !read_uint(hf, KEYS("n_head"), TRUE, &m->heads, NULL, error))
        return FALSE;
    m->kv_heads = m->heads;
    m->ffn = 4 * m->hidden; /* n_inner null: 4 * n_embd, as both models define it */
    if (!read_uint(hf, KEYS("n_inner"), FALSE, &m->ffn, NULL, error) ||
        !read_uint(hf, KEYS("n_positions", "n_ctx"), TRUE, ctx, NULL, error) ||
        !read_uint(hf, KEYS("vocab_size"), TRUE, &m->vocab, NULL, error))
        return FALSE;
    /* GPTBigCode (StarCoder) names its multi-query attention: one key-value head. */
    gboolean multi_query = FALSE;
    if (!read_bool(hf, "multi_query", &multi_query, error))
        return FALSE;
    if (multi_query)
        m->kv_heads = 1;
    m->norm = SSIM_NORM_LAYERNORM;
    m->mlp_bias = TRUE;
    if (hf->family == FAMILY_GPTJ) {
        m->block = SSIM_BLOCK_PARALLEL;
        m->position = SSIM_POSITION_ROTARY;
        m->attention_bias = FALSE;
        m->lm_head_bias = TRUE;
        m->tied_embeddings = FALSE;
    } else {
        m->block = SSIM_BLOCK_SEQUENTIAL;
        m->position = SSIM_POSITION_LEARNED;
        m->attention_bias = TRUE;
        m->lm_head_bias = FALSE;
        m->tied_embeddings = TRUE;
    }
    return read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error);
}

/* A parallel block with a norm for each branch (GPT-NeoX, Falcon's new decoder): the shape has
 * one norm per parallel block, as GPT-J's. */
static void note_two_norms(Hf *hf, const SsimModel *m)
{
    note(hf,
         "the two LayerNorms of each parallel block (attention's and the MLP's) are counted as "
         "one (%u fewer parameters a layer)",
         2 * m->hidden);
}

/* GPT-NeoX and Pythia (HF's GPTNeoXConfig and its defaults), and Phi-1 to Phi-2 (PhiConfig: the
 * same plain MLP and biases, attention and MLP side by side off one LayerNorm, an LM head
 * bias). */
static gboolean map_neox(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    gboolean phi = hf->family == FAMILY_PHI, parallel = TRUE;
    if (!read_llama_sizes(hf, m, error) ||
        !read_uint(hf, KEYS("intermediate_size"), TRUE, &m->ffn, NULL, error) ||
        !read_uint(hf, KEYS("max_position_embeddings"), TRUE, ctx, NULL, error) ||
        (!phi && !read_bool(hf, "use_parallel_residual", &parallel, error)))
        return FALSE;
    m->kv_heads = m->heads;
    if (phi && !read_uint(hf, KEYS("num_key_value_heads"), FALSE, &m->kv_heads, NULL, error))
        return FALSE;
    m->block = parallel ? SSIM_BLOCK_PARALLEL : SSIM_BLOCK_SEQUENTIAL;
    m->position = SSIM_POSITION_ROTARY;
    m->norm = SSIM_NORM_LAYERNORM;
    m->attention_bias = TRUE;
    m->mlp_bias = TRUE;
    m->lm_head_bias = phi;
    m->tied_embeddings = FALSE;
    if (!read_bool(hf, "attention_bias", &m->attention_bias, error) ||
        !read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error))
        return FALSE;
    if (parallel && !phi)
        note_two_norms(hf, m);
    return TRUE;
}

/* OPT (HF's OPTConfig: learned positions two rows past the context, biases, tied). */
static gboolean map_opt(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    gboolean found = FALSE, bias = TRUE;
    guint proj = 0;
    if (!read_llama_sizes(hf, m, error) ||
        !read_uint(hf, KEYS("ffn_dim"), TRUE, &m->ffn, NULL, error) ||
        !read_uint(hf, KEYS("max_position_embeddings"), TRUE, ctx, NULL, error) ||
        !read_bool(hf, "enable_bias", &bias, error) ||
        !read_uint(hf, KEYS("word_embed_proj_dim"), FALSE, &proj, &found, error))
        return FALSE;
    m->kv_heads = m->heads;
    m->block = SSIM_BLOCK_SEQUENTIAL;
    m->position = SSIM_POSITION_LEARNED;
    m->norm = SSIM_NORM_LAYERNORM;
    m->attention_bias = m->mlp_bias = bias;
    m->lm_head_bias = FALSE;
    m->tied_embeddings = TRUE;
    if (!read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error))
        return FALSE;
    note(hf, "OPT's position table has 2 rows more than its context (an offset): left out");
    if (found && proj != m->hidden)
        note(hf,
             "word_embed_proj_dim %u: the projections between the embedding and hidden_size "
             "are left out",
             proj);
    return TRUE;
}

/* BLOOM (HF's BloomConfig: ALiBi, no context length, a LayerNorm on the embedding, tied). */
static gboolean map_bloom(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    gboolean found = FALSE;
    if (!read_uint(hf, KEYS("hidden_size", "n_embed"), TRUE, &m->hidden, NULL, error) ||
        !read_uint(hf, KEYS("n_layer", "num_hidden_layers"), TRUE, &m->layers, NULL, error) ||
        !read_uint(hf, KEYS("n_head", "num_attention_heads"), TRUE, &m->heads, NULL, error) ||
        !read_uint(hf, KEYS("vocab_size"), TRUE, &m->vocab, NULL, error) ||
        !read_uint(hf, KEYS("seq_length", "max_position_embeddings"), FALSE, ctx, &found, error))
        return FALSE;
    if (!found) {
        *ctx = BLOOM_SEQ_LEN;
        note(hf, "no context length (ALiBi positions): seq_len %u, BLOOM's training length", *ctx);
    }
    m->kv_heads = m->heads;
    m->ffn = 4 * m->hidden;
    m->block = SSIM_BLOCK_SEQUENTIAL;
    m->position = SSIM_POSITION_ALIBI;
    m->norm = SSIM_NORM_LAYERNORM;
    m->embedding_norm = TRUE;
    m->attention_bias = m->mlp_bias = TRUE;
    m->lm_head_bias = FALSE;
    m->tied_embeddings = TRUE;
    return read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error);
}

/* Falcon (HF's FalconConfig; the first releases' RefinedWeb configs name the sizes n_layer and
 * n_head, and the grouped key-value heads n_head_kv). */
static gboolean map_falcon(Hf *hf, SsimModel *m, guint *ctx, GError **error)
{
    gboolean new_arch = FALSE, multi_query = TRUE, parallel = TRUE, alibi = FALSE, bias = FALSE;
    gboolean found = FALSE;
    if (!read_uint(hf, KEYS("hidden_size"), TRUE, &m->hidden, NULL, error) ||
        !read_uint(hf, KEYS("num_hidden_layers", "n_layer"), TRUE, &m->layers, NULL, error) ||
        !read_uint(hf, KEYS("num_attention_heads", "n_head"), TRUE, &m->heads, NULL, error) ||
        !read_uint(hf, KEYS("vocab_size"), TRUE, &m->vocab, NULL, error) ||
        !read_bool(hf, "new_decoder_architecture", &new_arch, error) ||
        !read_bool(hf, "multi_query", &multi_query, error) ||
        !read_bool(hf, "parallel_attn", &parallel, error) ||
        !read_bool(hf, "alibi", &alibi, error) || !read_bool(hf, "bias", &bias, error))
        return FALSE;
    m->kv_heads = m->heads;
    if (new_arch) {
        if (!read_uint(hf, KEYS("num_kv_heads", "n_head_kv"), TRUE, &m->kv_heads, NULL, error))
            return FALSE;
    } else if (multi_query) {
        m->kv_heads = 1;
    }
    m->ffn = 4 * m->hidden;
    *ctx = FALCON_SEQ_LEN;
    if (!read_uint(hf, KEYS("ffn_hidden_size"), FALSE, &m->ffn, NULL, error) ||
        !read_uint(hf, KEYS("max_position_embeddings"), FALSE, ctx, &found, error))
        return FALSE;
    m->block = new_arch || parallel ? SSIM_BLOCK_PARALLEL : SSIM_BLOCK_SEQUENTIAL;
    m->position = alibi ? SSIM_POSITION_ALIBI : SSIM_POSITION_ROTARY;
    m->norm = SSIM_NORM_LAYERNORM;
    m->attention_bias = m->mlp_bias = bias;
    m->lm_head_bias = FALSE;
    m->tied_embeddings = TRUE;
    if (!read_bool(hf, "tie_word_embeddings", &m->tied_embeddings, error))
        return FALSE;
    if (new_arch)
        note_two_norms(hf, m);
    return TRUE;
}

/*
 * Sliding-window attention (model.h): `sliding_window` keys, unless `use_sliding_window` is
 * false (Qwen2's default), on the layers the config's class windows: those `layer_types` calls
 * "sliding_attention" where the config lists them; else Gemma 2's every other layer (the first
 * of each pair), Gemma 3's all but every `sliding_window_pattern`-th (default 6), Qwen2's from
 * layer `max_window_layers` on, and every layer for the others (Mistral, Phi-3, StarCoder2).
 */
static gboolean map_window(Hf *hf, SsimModel *m, GError **error)
{
    guint window = 0;
    gboolean found = FALSE, use_window = TRUE;
    if (!read_uint(hf, KEYS("sliding_window"), FALSE, &window, &found, error) ||
        !read_bool(hf, "use_sliding_window", &use_window, error))
        return FALSE;
    if (!found || !use_window)
        return TRUE;
    const char *type = hf->model_type ? hf->model_type : "";
    guint layers = m->layers, pattern = 6, from = 0;
    JsonNode *types = member(hf, "layer_types");
    if (types != NULL) {
        JsonArray *a = JSON_NODE_HOLDS_ARRAY(types) ? json_node_get_array(types) : NULL;
        if (a == NULL || json_array_get_length(a) != m->layers) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: layer_types: must list the %u layers' attention kinds", hf->path,
                        m->layers);
            return FALSE;
        }
        layers = 0;
        for (guint i = 0; i < m->layers; i++) {
            JsonNode *e = json_array_get_element(a, i);
            layers += JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING &&
                      strcmp(json_node_get_string(e), "sliding_attention") == 0;
        }
    } else if (strcmp(type, "gemma2") == 0) {
        layers = (m->layers + 1) / 2;
    } else if (g_str_has_prefix(type, "gemma3")) {
        if (!read_uint_min(hf, KEYS("sliding_window_pattern"), 0, FALSE, &pattern, NULL, error))
            return FALSE;
        layers = pattern > 0 ? m->layers - m->layers / pattern : m->layers;
    } else if (g_str_has_prefix(type, "qwen2")) {
        if (!read_uint_min(hf, KEYS("max_window_layers"), 0, FALSE, &from, NULL, error))
            return FALSE;
        layers = m->layers - MIN(from, m->layers);
    }
    if (layers > 0) {
        m->sliding_window = window;
        m->sliding_window_layers = layers;
    }
    return TRUE;
}

/* The shape fields of each family, as the config names them. */
static gboolean map_shape(Hf *hf, SsimModel *m, GError **error)
{
    guint ctx = 0;
    gboolean ok;
    switch (hf->family) {
    case FAMILY_LLAMA:
        ok = map_llama(hf, m, &ctx, error);
        break;
    case FAMILY_NEOX:
    case FAMILY_PHI:
        ok = map_neox(hf, m, &ctx, error);
        break;
    case FAMILY_OPT:
        ok = map_opt(hf, m, &ctx, error);
        break;
    case FAMILY_BLOOM:
        ok = map_bloom(hf, m, &ctx, error);
        break;
    case FAMILY_FALCON:
        ok = map_falcon(hf, m, &ctx, error);
        break;
    default:
        ok = map_gpt(hf, m, &ctx, error);
        break;
    }
    if (!ok)
        return FALSE;
    if (!read_dropout(hf, KEYS("attn_pdrop", "attention_dropout", "attention_probs_dropout_prob"),
                      &m->attention_dropout, error) ||
        !read_dropout(hf, KEYS("resid_pdrop", "hidden_dropout", "hidden_dropout_prob", "dropout"),
                      &m->hidden_dropout, error))
        return FALSE;
    m->seq_len = MIN(ctx, SSIM_HF_MAX_SEQ_LEN);
    if (ctx > SSIM_HF_MAX_SEQ_LEN)
        note(hf, "seq_len %u: the config's context of %u tokens is not a training length",
             m->seq_len, ctx);
    /* A learned position table has one row per position of the context, trained or not. */
    if (m->position == SSIM_POSITION_LEARNED && ctx != m->seq_len)
        note(hf, "the learned position table is counted for %u positions", m->seq_len);
    return map_window(hf, m, error);
}

/* The config field a check failure is about, for the message. */
static const char *config_field(Family family, const char *ours)
{
    /* Per family, in Family's order: GPT-2, GPT-J, Llama, GPT-NeoX, Phi, OPT, BLOOM, Falcon. */
    static const struct {
        const char *ours;
        const char *theirs[FAMILY_N];
    } fields[] = {
        {"layers",
         {"n_layer", "n_layer", "num_hidden_layers", "num_hidden_layers", "num_hidden_layers",
          "num_hidden_layers", "n_layer", "num_hidden_layers"}},
        {"hidden",
         {"n_embd", "n_embd", "hidden_size", "hidden_size", "hidden_size", "hidden_size",
          "hidden_size", "hidden_size"}},
        {"heads",
         {"n_head", "n_head", "num_attention_heads", "num_attention_heads", "num_attention_heads",
          "num_attention_heads", "n_head", "num_attention_heads"}},
        {"kv_heads",
         {"n_head", "n_head", "num_key_value_heads", "num_attention_heads", "num_key_value_heads",
          "num_attention_heads", "n_head", "num_kv_heads"}},
        {"ffn",
         {"n_inner", "n_inner", "intermediate_size", "intermediate_size", "intermediate_size",
          "ffn_dim", "hidden_size", "ffn_hidden_size"}},
        {"vocab",
         {"vocab_size", "vocab_size", "vocab_size", "vocab_size", "vocab_size", "vocab_size",
          "vocab_size", "vocab_size"}},
        {"seq_len",
         {"n_positions", "n_positions", "max_position_embeddings", "max_position_embeddings",
          "max_position_embeddings", "max_position_embeddings", "seq_length",
          "max_position_embeddings"}},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
        if (strcmp(fields[i].ours, ours) == 0)
            return fields[i].theirs[family];
    return NULL;
}

SsimModel *ssim_model_load_hf_data(const char *text, gssize length, const char *path,
                                   GError **error)
{
    g_return_val_if_fail(text != NULL && path != NULL, NULL);
    g_autoptr(JsonParser) parser =
        ssim_json_parse(text, length, SSIM_JSON_MAX_HF_CONFIG_BYTES, path, error);
    if (parser == NULL)
        return NULL;
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s: a Hugging Face config.json is one JSON object", path);
        return NULL;
    }
    g_autoptr(GString) notes = g_string_new(NULL);
    JsonObject *top = json_node_get_object(root);
    Hf hf = {.path = path, .obj = top, .top = top, .notes = notes};
    /* A multimodal checkpoint (Gemma 3, Llama 4, LLaVA) nests its language model's config under
     * text_config: that is the model simulated, the vision tower left out (and said). */
    JsonNode *lm = json_object_get_member(top, "text_config");
    if (lm && JSON_NODE_HOLDS_OBJECT(lm) && !json_object_has_member(top, "hidden_size") &&
        !json_object_has_member(top, "n_embd")) {
        hf.obj = json_node_get_object(lm);
        note(&hf, "the language model of text_config is read (the vision tower is left out)");
    }
    if (!read_string(&hf, "model_type", &hf.model_type, error) ||
        !refuse_architecture(&hf, error) || !refuse_unsupported(&hf, error) ||
        !detect_family(&hf, error))
        return NULL;

    g_autoptr(SsimModel) m = g_new0(SsimModel, 1);
    m->source = g_strdup(path);
    m->name = model_name(&hf);
    if (!map_shape(&hf, m, error) || !map_activation(&hf, m, error) || !map_dtype(&hf, m, error))
        return NULL;
    if (!ssim_model_check(m, error)) {
        /* The check names our field ("heads: ..."); say which of the config's it came from. */
        g_autofree char *ours = g_strdup((*error)->message);
        char *colon = strstr(ours, ": ");
        const char *theirs = NULL;
        if (colon) {
            *colon = '\0';
            theirs = config_field(hf.family, ours);
        }
        if (theirs) {
            g_autofree char *rest = g_strdup(colon + 2);
            g_clear_error(error);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: %s: %s", path,
                        theirs, rest);
        } else {
            g_prefix_error(error, "%s: ", path);
        }
        return NULL;
    }
    if (notes->len > 0)
        m->notes = g_strdup_printf("%s: approximated: %s", path, notes->str);
    return g_steal_pointer(&m);
}
