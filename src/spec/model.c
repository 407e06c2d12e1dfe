/*
 * Transformer model shapes: parsing models/<name>.ini, parameter counts, GEMM shapes and FLOPs.
 *
 * A decoder layer is: norm, QKV projection (h -> h + 2 * kv_heads * d, d = h / heads), attention
 * (scores Q K^T and context P V, per head), output projection (h -> h), norm (sequential blocks
 * only), MLP (h -> ffn [x2 when gated] -> h).  Parameters count every matrix, bias and norm weight
 * the real checkpoints hold; buffers (rotary tables, masks) are not parameters.  FLOPs count
 * matrix multiplications only, at 2 FLOPs per multiply-add, with the full (unmasked) s x s
 * attention, which is the convention of Narayanan et al. 2021 and of MFU figures quoted in papers.
 *
 * Invariant: a model handed out by this module has passed ssim_model_check(), so every size is
 * positive, hidden % heads == 0 and heads % kv_heads == 0.
 */
#include <shiftsim/data.h>
#include <shiftsim/model.h>

#include "src/core/jsonbound.h"
#include "src/spec/ini-private.h"

#include <math.h>
#include <string.h>

#define FORMAT_VERSION 1

static const char *const dtype_names[] = {
#define SSIM_X(e, s, b) [SSIM_DTYPE_##e] = s,
    SSIM_DTYPE_LIST(SSIM_X)
#undef SSIM_X
};
static const guint dtype_sizes[] = {
#define SSIM_X(e, s, b) [SSIM_DTYPE_##e] = b,
    SSIM_DTYPE_LIST(SSIM_X)
#undef SSIM_X
};
static const char *const block_names[] = {"sequential", "parallel"};
static const char *const position_names[] = {"rotary", "learned", "alibi"};
static const char *const activation_names[] = {"gelu", "relu", "swiglu", "geglu"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};
static const char *const recompute_names[] = {"none", "selective", "full", "op"};
static const char *const gemm_names[] = {
#define SSIM_X(e, s) [SSIM_GEMM_##e] = s,
    SSIM_GEMM_LIST(SSIM_X)
#undef SSIM_X
};

G_STATIC_ASSERT(G_N_ELEMENTS(block_names) == SSIM_BLOCK_N);
G_STATIC_ASSERT(G_N_ELEMENTS(position_names) == SSIM_POSITION_N);
G_STATIC_ASSERT(G_N_ELEMENTS(activation_names) == SSIM_ACT_N);
G_STATIC_ASSERT(G_N_ELEMENTS(norm_names) == SSIM_NORM_N);
G_STATIC_ASSERT(G_N_ELEMENTS(recompute_names) == SSIM_RECOMPUTE_N);

static gboolean name_lookup(const char *const *names, guint n, const char *name, guint *out)
{
    if (name == NULL)
        return FALSE;
    for (guint i = 0; i < n; i++) {
        if (g_ascii_strcasecmp(names[i], name) == 0) {
            *out = i;
            return TRUE;
        }
    }
    return FALSE;
}

#define NAME_FUNCS(prefix, Type, table, N)                                                         \
    const char *prefix##_name(Type value)                                                          \
    {                                                                                              \
        return (guint)value < (N) ? table[value] : "?";                                            \
    }                                                                                              \
    gboolean prefix##_from_name(const char *name, Type *out)                                       \
    {                                                                                              \
        guint i;                                                                                   \
        if (!name_lookup(table, (N), name, &i))                                                    \
            return FALSE;                                                                          \
        *out = (Type)i;                                                                            \
        return TRUE;                                                                               \
    }

NAME_FUNCS(ssim_dtype, SsimDtype, dtype_names, SSIM_DTYPE_N)
NAME_FUNCS(ssim_block, SsimBlock, block_names, SSIM_BLOCK_N)
NAME_FUNCS(ssim_position, SsimPosition, position_names, SSIM_POSITION_N)
NAME_FUNCS(ssim_activation, SsimActivation, activation_names, SSIM_ACT_N)
NAME_FUNCS(ssim_norm, SsimNorm, norm_names, SSIM_NORM_N)
NAME_FUNCS(ssim_recompute, SsimRecompute, recompute_names, SSIM_RECOMPUTE_N)

guint ssim_dtype_size(SsimDtype dtype)
{
    g_return_val_if_fail((guint)dtype < SSIM_DTYPE_N, 0);
    return dtype_sizes[dtype];
}

gboolean ssim_activation_is_gated(SsimActivation activation)
{
    return activation == SSIM_ACT_SWIGLU || activation == SSIM_ACT_GEGLU;
}

const char *ssim_gemm_kind_name(SsimGemmKind kind)
{
    return (guint)kind < SSIM_GEMM_N ? gemm_names[kind] : "?";
}

gboolean ssim_gemm_kind_fp8(SsimGemmKind kind)
{
    return kind == SSIM_GEMM_QKV || kind == SSIM_GEMM_ATTN_OUT || kind == SSIM_GEMM_FFN_UP ||
           kind == SSIM_GEMM_FFN_DOWN;
}

gboolean ssim_gemm_kernel_fp8(const char *name)
{
    static const char *const suffixes[] = {"", ".dgrad", ".wgrad", ".bwd"};
    if (name == NULL)
        return FALSE;
    for (guint kind = 0; kind < SSIM_GEMM_N; kind++) {
        if (!ssim_gemm_kind_fp8((SsimGemmKind)kind))
            continue;
        gsize n = strlen(gemm_names[kind]);
        if (strncmp(name, gemm_names[kind], n) != 0)
            continue;
        for (gsize i = 0; i < G_N_ELEMENTS(suffixes); i++)
            if (strcmp(name + n, suffixes[i]) == 0)
                return TRUE;
    }
    return FALSE;
}

guint64 ssim_model_fp8_layer_params(const SsimModel *model, guint tp)
{
    guint64 n = 0;
    for (guint kind = 0; kind < SSIM_GEMM_N; kind++)
        if (ssim_gemm_kind_fp8((SsimGemmKind)kind)) {
            SsimGemm g = ssim_model_gemm(model, (SsimGemmKind)kind, 1, tp);
            n += g.k * g.n;
        }
    return n;
}

/* ---- parameters ------------------------------------------------------------------------- */

static guint64 norm_params(const SsimModel *m)
{
    return m->norm == SSIM_NORM_LAYERNORM ? 2 * (guint64)m->hidden : m->hidden;
}

static guint64 kv_dim(const SsimModel *m)
{
    return (guint64)m->kv_heads * ssim_model_head_dim(m);
}

guint64 ssim_flash_bytes(gboolean backward, guint64 q, guint64 kv, guint64 rows, guint dtype_bytes)
{
    if (backward)
        return (4 * q + 4 * kv) * dtype_bytes + 8 * rows + 8 * q;
    return (2 * q + 2 * kv) * dtype_bytes + 4 * rows;
}

guint ssim_model_head_dim(const SsimModel *model)
{
    return model->head_dim ? model->head_dim : model->hidden / model->heads;
}

/* The attention's width, heads x d: the query's, and the context's the output projection reads
 * (hidden unless head_dim says otherwise). */
static guint64 q_dim(const SsimModel *m)
{
    return (guint64)m->heads * ssim_model_head_dim(m);
}

guint64 ssim_model_layer_params(const SsimModel *m)
{
    guint64 h = m->hidden, f = m->ffn, kv = kv_dim(m), q = q_dim(m);
    guint64 attn = h * (q + 2 * kv) + q * h;
    if (m->attention_bias)
        attn += (q + 2 * kv) + h;
    guint64 mlp;
    if (ssim_activation_is_gated(m->activation))
        mlp = 3 * h * f + (m->mlp_bias ? 2 * f + h : 0);
    else
        mlp = 2 * h * f + (m->mlp_bias ? f + h : 0);
    guint64 norms = (m->block == SSIM_BLOCK_PARALLEL ? 1 : 2) * norm_params(m);
    return attn + mlp + norms;
}

guint64 ssim_model_embedding_params(const SsimModel *m)
{
    guint64 p = (guint64)m->vocab * m->hidden;
    if (m->position == SSIM_POSITION_LEARNED)
        p += (guint64)m->seq_len * m->hidden;
    if (m->embedding_norm)
        p += norm_params(m);
    return p;
}

guint64 ssim_model_head_params(const SsimModel *m)
{
    guint64 p = norm_params(m);
    if (!m->tied_embeddings)
        p += (guint64)m->vocab * m->hidden;
    if (m->lm_head_bias)
        p += m->vocab;
    return p;
}

guint64 ssim_model_head_weights(const SsimModel *m)
{
    return ssim_model_head_params(m) + (m->tied_embeddings ? (guint64)m->vocab * m->hidden : 0);
}

guint64 ssim_model_outer_params(const SsimModel *m)
{
    return ssim_model_embedding_params(m) + ssim_model_head_params(m);
}

guint64 ssim_model_params(const SsimModel *m)
{
    return ssim_model_outer_params(m) + (guint64)m->layers * ssim_model_layer_params(m);
}

guint64 ssim_model_stage_params(const SsimModel *m, guint pp, guint stage)
{
    g_return_val_if_fail(pp >= 1 && stage < pp && m->layers % pp == 0, 0);
    return ssim_model_stage_params_layers(m, pp, stage, m->layers / pp);
}

guint64 ssim_model_stage_params_layers(const SsimModel *m, guint pp, guint stage, guint layers)
{
    g_return_val_if_fail(pp >= 1 && stage < pp && layers <= m->layers, 0);
    guint64 p = (guint64)layers * ssim_model_layer_params(m);
    if (stage == 0)
        p += ssim_model_embedding_params(m);
    if (stage == pp - 1) {
        p += ssim_model_head_params(m);
        if (m->tied_embeddings && pp > 1)
            p += (guint64)m->vocab * m->hidden;
    }
    return p;
}

guint64 ssim_model_weight_bytes(const SsimModel *m)
{
    return ssim_model_params(m) * ssim_dtype_size(m->dtype);
}

/* ---- GEMMs and FLOPs -------------------------------------------------------------------- */

static guint64 ceil_div(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

SsimGemm ssim_model_gemm(const SsimModel *m, SsimGemmKind kind, guint microbatch, guint tp)
{
    SsimGemm g = {.kind = kind, .batch = 1};
    g_return_val_if_fail(tp >= 1 && microbatch >= 1 && (guint)kind < SSIM_GEMM_N, g);
    guint64 tokens = (guint64)microbatch * m->seq_len, h = m->hidden, d = ssim_model_head_dim(m);
    guint64 up = ssim_activation_is_gated(m->activation) ? 2 : 1;
    switch (kind) {
    case SSIM_GEMM_QKV:
        g.m = tokens, g.k = h, g.n = ceil_div(q_dim(m) + 2 * kv_dim(m), tp);
        break;
    case SSIM_GEMM_ATTN_SCORE:
        g.batch = (guint64)microbatch * ceil_div(m->heads, tp);
        g.m = m->seq_len, g.n = m->seq_len, g.k = d;
        break;
    case SSIM_GEMM_ATTN_CONTEXT:
        g.batch = (guint64)microbatch * ceil_div(m->heads, tp);
        g.m = m->seq_len, g.n = d, g.k = m->seq_len;
        break;
    case SSIM_GEMM_ATTN_OUT:
        g.m = tokens, g.k = ceil_div(q_dim(m), tp), g.n = h;
        break;
    case SSIM_GEMM_FFN_UP:
        g.m = tokens, g.k = h, g.n = up * ceil_div(m->ffn, tp);
        break;
    case SSIM_GEMM_FFN_DOWN:
        g.m = tokens, g.k = ceil_div(m->ffn, tp), g.n = h;
        break;
    case SSIM_GEMM_LM_HEAD:
        g.m = tokens, g.k = h, g.n = ceil_div(m->vocab, tp);
        break;
    case SSIM_GEMM_N:
        break;
    }
    g.flops = 2.0 * (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
    g.bytes = g.batch * (g.m * g.k + g.k * g.n + g.m * g.n) * ssim_dtype_size(m->dtype);
    return g;
}

/* `g` narrowed to n columns. */
static SsimGemm gemm_part(const SsimGemm *g, guint64 n, SsimDtype dtype)
{
    SsimGemm p = *g;
    p.n = n;
    p.flops = 2.0 * (double)p.batch * (double)p.m * (double)p.n * (double)p.k;
    p.bytes = p.batch * (p.m * p.k + p.k * p.n + p.m * p.n) * ssim_dtype_size(dtype);
    return p;
}

void ssim_model_op_recompute_gemms(const SsimModel *m, guint microbatch, guint tp,
                                   SsimGemm out[SSIM_OP_RECOMPUTE_GEMMS],
                                   const char *names[SSIM_OP_RECOMPUTE_GEMMS])
{
    SsimGemm qkv = ssim_model_gemm(m, SSIM_GEMM_QKV, microbatch, tp);
    out[0] = gemm_part(&qkv, ceil_div(kv_dim(m), tp), m->dtype);
    names[0] = "qkv.k";
    out[1] = ssim_model_gemm(m, SSIM_GEMM_ATTN_OUT, microbatch, tp);
    names[1] = "attn_out";
    if (ssim_activation_is_gated(m->activation)) {
        SsimGemm up = ssim_model_gemm(m, SSIM_GEMM_FFN_UP, microbatch, tp);
        out[2] = gemm_part(&up, up.n / 2, m->dtype);
        names[2] = "ffn_up.half";
    } else {
        out[2] = ssim_model_gemm(m, SSIM_GEMM_FFN_DOWN, microbatch, tp);
        names[2] = "ffn_down";
    }
}

double ssim_model_op_recompute_gemm_flops(const SsimModel *m, guint64 sequences)
{
    SsimGemm g[SSIM_OP_RECOMPUTE_GEMMS];
    const char *names[SSIM_OP_RECOMPUTE_GEMMS];
    ssim_model_op_recompute_gemms(m, 1, 1, g, names);
    double f = 0;
    for (guint i = 0; i < SSIM_OP_RECOMPUTE_GEMMS; i++)
        f += g[i].flops;
    return f * (double)sequences;
}

double ssim_model_windowed_share(const SsimModel *m)
{
    return m->sliding_window > 0 ? MIN(m->sliding_window_layers, m->layers) / (double)m->layers
                                 : 0.0;
}

/* Attention score + context FLOPs of one layer's forward: 2 * 2 * T * s * h. */
static double attention_core_flops(const SsimModel *m, double tokens)
{
    return 4.0 * tokens * m->seq_len * (double)q_dim(m);
}

double ssim_model_layer_forward_flops(const SsimModel *m, guint64 sequences)
{
    double t = (double)sequences * m->seq_len, h = m->hidden, f = m->ffn;
    double up = ssim_activation_is_gated(m->activation) ? 2.0 : 1.0;
    double q = (double)q_dim(m);
    double qkv = 2.0 * t * h * (q + 2.0 * (double)kv_dim(m));
    double out = 2.0 * t * q * h;
    double mlp = 2.0 * t * h * f * (up + 1.0);
    return qkv + attention_core_flops(m, t) + out + mlp;
}

double ssim_model_head_forward_flops(const SsimModel *m, guint64 sequences)
{
    return 2.0 * (double)sequences * m->seq_len * m->hidden * (double)m->vocab;
}

double ssim_model_forward_flops(const SsimModel *m, guint64 sequences)
{
    return m->layers * ssim_model_layer_forward_flops(m, sequences) +
           ssim_model_head_forward_flops(m, sequences);
}

double ssim_model_iteration_flops(const SsimModel *m, guint64 global_batch)
{
    return 3.0 * ssim_model_forward_flops(m, global_batch);
}

double ssim_model_hardware_flops(const SsimModel *m, guint64 global_batch, SsimRecompute recompute)
{
    double f = ssim_model_iteration_flops(m, global_batch);
    switch (recompute) {
    case SSIM_RECOMPUTE_FULL:
        f += m->layers * ssim_model_layer_forward_flops(m, global_batch);
        break;
    case SSIM_RECOMPUTE_SELECTIVE:
        f += m->layers * attention_core_flops(m, (double)global_batch * m->seq_len);
        break;
    case SSIM_RECOMPUTE_OP:
        f += m->layers * ssim_model_op_recompute_gemm_flops(m, global_batch);
        break;
    case SSIM_RECOMPUTE_NONE:
    case SSIM_RECOMPUTE_N:
        break;
    }
    return f;
}

/* ---- checking --------------------------------------------------------------------------- */

/* 6053381344 -> "6,053,381,344" */
static char *group_digits(guint64 n)
{
    g_autofree char *raw = g_strdup_printf("%" G_GUINT64_FORMAT, n);
    GString *s = g_string_new(NULL);
    gsize len = strlen(raw);
    for (gsize i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            g_string_append_c(s, ',');
        g_string_append_c(s, raw[i]);
    }
    return g_string_free(s, FALSE);
}

/* Checks `m`; on failure sets `*field` to the key at fault and `error` to "field: message". */
static gboolean check_model(const SsimModel *m, const char **field, GError **error)
{
#define FAIL(f, ...)                                                                               \
    do {                                                                                           \
        *field = f;                                                                                \
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, f ": " __VA_ARGS__);        \
        return FALSE;                                                                              \
    } while (0)
    if (m->name == NULL || m->name[0] == '\0')
        FAIL("name", "must not be empty");
    if (m->layers == 0)
        FAIL("layers", "must be a positive integer");
    if (m->hidden == 0)
        FAIL("hidden", "must be a positive integer");
    if (m->heads == 0)
        FAIL("heads", "must be a positive integer");
    if (m->kv_heads == 0)
        FAIL("kv_heads", "must be a positive integer");
    if (m->ffn == 0)
        FAIL("ffn", "must be a positive integer");
    if (m->vocab == 0)
        FAIL("vocab", "must be a positive integer");
    if (m->seq_len == 0)
        FAIL("seq_len", "must be a positive integer");
    /* Bounds far past any transformer trained (hidden 16384 to 25600, a vocabulary of 262144,
     * contexts of 10^6) that keep the parameter, GEMM and byte counts inside 64 bits. */
    if (m->layers > SSIM_MODEL_MAX_LAYERS)
        FAIL("layers", "%u is more than %u", m->layers, SSIM_MODEL_MAX_LAYERS);
    if (m->hidden > SSIM_MODEL_MAX_WIDTH)
        FAIL("hidden", "%u is more than %u", m->hidden, SSIM_MODEL_MAX_WIDTH);
    if (m->ffn > SSIM_MODEL_MAX_WIDTH)
        FAIL("ffn", "%u is more than %u", m->ffn, SSIM_MODEL_MAX_WIDTH);
    if (m->heads > SSIM_MODEL_MAX_HEADS)
        FAIL("heads", "%u is more than %u", m->heads, SSIM_MODEL_MAX_HEADS);
    if (m->head_dim > 0 && (guint64)m->head_dim * m->heads > SSIM_MODEL_MAX_WIDTH)
        FAIL("head_dim", "heads x head_dim (%u x %u) is more than %u", m->heads, m->head_dim,
             SSIM_MODEL_MAX_WIDTH);
    if (m->vocab > SSIM_MODEL_MAX_VOCAB)
        FAIL("vocab", "%u is more than %u", m->vocab, SSIM_MODEL_MAX_VOCAB);
    if (m->seq_len > SSIM_MODEL_MAX_SEQ_LEN)
        FAIL("seq_len", "%u is more than %u tokens", m->seq_len, SSIM_MODEL_MAX_SEQ_LEN);
    if (m->head_dim == 0 && m->hidden % m->heads != 0)
        FAIL("heads", "hidden (%u) is not divisible by heads (%u); give head_dim", m->hidden,
             m->heads);
    if (m->kv_heads > m->heads || m->heads % m->kv_heads != 0)
        FAIL("kv_heads", "heads (%u) is not a multiple of kv_heads (%u)", m->heads, m->kv_heads);
    if ((guint)m->block >= SSIM_BLOCK_N)
        FAIL("block", "unknown block kind %d", (int)m->block);
    if ((guint)m->position >= SSIM_POSITION_N)
        FAIL("position", "unknown position encoding %d", (int)m->position);
    if ((guint)m->activation >= SSIM_ACT_N)
        FAIL("activation", "unknown activation %d", (int)m->activation);
    if ((guint)m->norm >= SSIM_NORM_N)
        FAIL("norm", "unknown norm %d", (int)m->norm);
    if (m->dtype != SSIM_DTYPE_BF16 && m->dtype != SSIM_DTYPE_FP16 && m->dtype != SSIM_DTYPE_FP32)
        FAIL("dtype", "%s is not a training dtype (use bf16, fp16 or fp32)",
             ssim_dtype_name(m->dtype));
    if (m->sliding_window_layers > 0 && m->sliding_window == 0)
        FAIL("sliding_window_layers", "%u windowed layers need a sliding_window",
             m->sliding_window_layers);
    if (m->sliding_window_layers > m->layers)
        FAIL("sliding_window_layers", "%u is more than the model's %u layers",
             m->sliding_window_layers, m->layers);
    if (m->declared_params != 0) {
        guint64 shape = ssim_model_params(m);
        double off = fabs((double)shape - (double)m->declared_params) / (double)m->declared_params;
        if (off > 0.01) {
            g_autofree char *d = group_digits(m->declared_params);
            g_autofree char *s = group_digits(shape);
            FAIL("params", "declared %s but the shape gives %s (%.2f%% apart, more than 1%%)", d, s,
                 100.0 * off);
        }
    }
    return TRUE;
#undef FAIL
}

gboolean ssim_model_check(const SsimModel *model, GError **error)
{
    g_return_val_if_fail(model != NULL, FALSE);
    const char *field = NULL;
    return check_model(model, &field, error);
}

/* ---- construction ----------------------------------------------------------------------- */

static SsimModel *model_new_defaults(void)
{
    SsimModel *m = g_new0(SsimModel, 1);
    m->block = SSIM_BLOCK_SEQUENTIAL;
    m->position = SSIM_POSITION_LEARNED;
    m->activation = SSIM_ACT_GELU;
    m->norm = SSIM_NORM_LAYERNORM;
    m->attention_bias = TRUE;
    m->mlp_bias = TRUE;
    m->dtype = SSIM_DTYPE_BF16;
    return m;
}

SsimModel *ssim_model_default(void)
{
    /* Keep in step with models/gpt-j-6b.ini (a test compares them). */
    SsimModel *m = model_new_defaults();
    m->name = g_strdup("gpt-j-6b");
    m->source = g_strdup("builtin");
    m->layers = 28;
    m->hidden = 4096;
    m->heads = 16;
    m->kv_heads = 16;
    m->ffn = 16384;
    m->vocab = 50400;
    m->seq_len = 2048;
    m->block = SSIM_BLOCK_PARALLEL;
    m->position = SSIM_POSITION_ROTARY;
    m->activation = SSIM_ACT_GELU;
    m->norm = SSIM_NORM_LAYERNORM;
    m->tied_embeddings = FALSE;
    m->attention_bias = FALSE;
    m->mlp_bias = TRUE;
    m->lm_head_bias = TRUE;
    m->embedding_norm = FALSE;
    m->dtype = SSIM_DTYPE_BF16;
    m->declared_params = 6053381344ULL;
    return m;
}

SsimModel *ssim_model_copy(const SsimModel *model)
{
    g_return_val_if_fail(model != NULL, NULL);
    SsimModel *m = g_new(SsimModel, 1);
    *m = *model;
    m->name = g_strdup(model->name);
    m->source = g_strdup(model->source);
    m->notes = g_strdup(model->notes);
    return m;
}

void ssim_model_free(SsimModel *model)
{
    if (model == NULL)
        return;
    g_free(model->name);
    g_free(model->source);
    g_free(model->notes);
    g_free(model);
}

static const char *const model_keys[] = {"format",
                                         "name",
                                         "layers",
                                         "hidden",
                                         "heads",
                                         "kv_heads",
                                         "head_dim",
                                         "ffn",
                                         "vocab",
                                         "seq_len",
                                         "block",
                                         "position",
                                         "activation",
                                         "norm",
                                         "tied_embeddings",
                                         "attention_bias",
                                         "mlp_bias",
                                         "lm_head_bias",
                                         "embedding_norm",
                                         "dtype",
                                         "params",
                                         "attention_dropout",
                                         "hidden_dropout",
                                         "sliding_window",
                                         "sliding_window_layers",
                                         NULL};

static const SsimIniGroup model_groups[] = {
    {"model", model_keys, TRUE},
    {NULL, NULL, FALSE},
};

static gboolean read_enum(const SsimIni *ini, const char *key, const char *const *names, guint n,
                          int *field, GError **error)
{
    guint v = (guint)*field;
    if (!ssim_ini_enum(ini, "model", key, FALSE, names, n, &v, error))
        return FALSE;
    *field = (int)v;
    return TRUE;
}

/* Reads the [model] group of `ini` into `m` (preset with defaults) and checks it. */
static gboolean parse_model(const SsimIni *ini, SsimModel *m, GError **error)
{
    const char *G = "model";
    /* The version first: a file from a newer shiftsim may well have keys this one lacks. */
    if (!ssim_ini_check_format(ini, G, FORMAT_VERSION, error) ||
        !ssim_ini_check_keys(ini, model_groups, error))
        return FALSE;

    m->source = g_strdup(ini->path);
    m->name = ssim_path_stem(ini->path, ".ini");

    int block = m->block, position = m->position, activation = m->activation, norm = m->norm;
    guint dtype = m->dtype;
    if (!ssim_ini_string(ini, G, "name", FALSE, &m->name, error) ||
        !ssim_ini_uint(ini, G, "layers", TRUE, 1, &m->layers, error) ||
        !ssim_ini_uint(ini, G, "hidden", TRUE, 1, &m->hidden, error) ||
        !ssim_ini_uint(ini, G, "heads", TRUE, 1, &m->heads, error))
        return FALSE;
    m->kv_heads = m->heads;
    m->ffn = 4 * m->hidden;
    if (!ssim_ini_uint(ini, G, "kv_heads", FALSE, 1, &m->kv_heads, error) ||
        !ssim_ini_uint(ini, G, "head_dim", FALSE, 1, &m->head_dim, error) ||
        !ssim_ini_uint(ini, G, "ffn", FALSE, 1, &m->ffn, error) ||
        !ssim_ini_uint(ini, G, "vocab", TRUE, 1, &m->vocab, error) ||
        !ssim_ini_uint(ini, G, "seq_len", TRUE, 1, &m->seq_len, error) ||
        !read_enum(ini, "block", block_names, SSIM_BLOCK_N, &block, error) ||
        !read_enum(ini, "position", position_names, SSIM_POSITION_N, &position, error) ||
        !read_enum(ini, "activation", activation_names, SSIM_ACT_N, &activation, error) ||
        !read_enum(ini, "norm", norm_names, SSIM_NORM_N, &norm, error) ||
        !ssim_ini_bool(ini, G, "tied_embeddings", FALSE, &m->tied_embeddings, error) ||
        !ssim_ini_bool(ini, G, "attention_bias", FALSE, &m->attention_bias, error) ||
        !ssim_ini_bool(ini, G, "mlp_bias", FALSE, &m->mlp_bias, error) ||
        !ssim_ini_bool(ini, G, "lm_head_bias", FALSE, &m->lm_head_bias, error) ||
        !ssim_ini_bool(ini, G, "embedding_norm", FALSE, &m->embedding_norm, error) ||
        !ssim_ini_bool(ini, G, "attention_dropout", FALSE, &m->attention_dropout, error) ||
        !ssim_ini_bool(ini, G, "hidden_dropout", FALSE, &m->hidden_dropout, error) ||
        !ssim_ini_enum(ini, G, "dtype", FALSE, dtype_names, SSIM_DTYPE_N, &dtype, error) ||
        !ssim_ini_u64(ini, G, "params", FALSE, 1, &m->declared_params, error) ||
        !ssim_ini_uint(ini, G, "sliding_window", FALSE, 1, &m->sliding_window, error) ||
        !ssim_ini_uint(ini, G, "sliding_window_layers", FALSE, 1, &m->sliding_window_layers, error))
        return FALSE;
    /* A window names its layers or is every layer's. */
    if (m->sliding_window > 0 && m->sliding_window_layers == 0)
        m->sliding_window_layers = m->layers;
    m->block = (SsimBlock)block;
    m->position = (SsimPosition)position;
    m->activation = (SsimActivation)activation;
    m->norm = (SsimNorm)norm;
    m->dtype = (SsimDtype)dtype;

    const char *field = NULL;
    if (!check_model(m, &field, error)) {
        ssim_ini_prefix_error(ini, error, G, field);
        return FALSE;
    }
    return TRUE;
}

SsimModel *ssim_model_load_data(const char *text, gssize length, const char *path, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    SsimIni ini = {0};
    g_autoptr(SsimModel) m = model_new_defaults();
    gboolean ok = ssim_ini_init(&ini, text, length, path, error) && parse_model(&ini, m, error);
    ssim_ini_clear(&ini);
    return ok ? g_steal_pointer(&m) : NULL;
}

SsimModel *ssim_model_load_file(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    gsize len = 0;
    if (ssim_path_is(path, ".json")) {
        g_autofree char *json =
            ssim_read_file_limited(path, SSIM_JSON_MAX_HF_CONFIG_BYTES, &len, error);
        return json ? ssim_model_load_hf_data(json, (gssize)len, path, error) : NULL;
    }
    g_autofree char *text = ssim_read_file(path, &len, error);
    if (text == NULL)
        return NULL;
    return ssim_model_load_data(text, (gssize)len, path, error);
}

SsimModel *ssim_model_load(const char *name_or_path, GError **error)
{
    g_return_val_if_fail(name_or_path != NULL, NULL);
    /* "hf/NAME": a bundled Hugging Face config, unless a file of that name is here. */
    if (g_str_has_prefix(name_or_path, "hf/") && !strchr(name_or_path + 3, '/') &&
        !ssim_path_is(name_or_path, ".json") && !g_file_test(name_or_path, G_FILE_TEST_EXISTS)) {
        g_autofree char *rel = g_strdup_printf("models/%s.json", name_or_path);
        g_autofree char *found = ssim_data_find(rel);
        if (found == NULL) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                        "%s: unknown model '%s' (no %s in $SHIFTSIM_DATA, the source tree or "
                        "the installed data)",
                        name_or_path, name_or_path, rel);
            return NULL;
        }
        return ssim_model_load_file(found, error);
    }
    if (ssim_path_is(name_or_path, ".json")) {
        if (!ssim_input_check(name_or_path, "model file", error))
            return NULL;
        return ssim_model_load_file(name_or_path, error);
    }
    g_autofree char *path = ssim_ini_resolve(name_or_path, "models", "model", error);
    return path ? ssim_model_load_file(path, error) : NULL;
}
