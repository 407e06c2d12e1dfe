/*
 * 3D-parallel configurations: defaults, text setters, the rank <-> grid mapping and validation.
 *
 * A rank is a mixed-radix number whose digits are the grid coordinates in `order`, innermost
 * first; with the default tp, dp, pp, rank = tp_i + tp * (dp_i + dp * pp_i).  Validation checks
 * the rules in the order a user fixing a configuration would want them (sizes, then the GPU
 * count, then divisibility by the model, then batch, then schedule and placement constraints),
 * and stops at the first failure, whose message starts with the rule ("heads % tp != 0: ...").
 *
 * Invariant: ssim_parallel_set() never leaves `par` half-changed; only whole-field updates.
 */
#include <shiftsim/parallel.h>

#include <stdlib.h>
#include <math.h>
#include <string.h>

static const char *const axis_names[] = {"tp", "dp", "pp"};
static const char *const tp_comm_names[] = {"allreduce", "rs-ag"};
G_STATIC_ASSERT(G_N_ELEMENTS(axis_names) == SSIM_AXIS_N);
G_STATIC_ASSERT(G_N_ELEMENTS(tp_comm_names) == SSIM_TP_COMM_N);
static const char *const attention_names[] = {"unfused", "flash"};
G_STATIC_ASSERT(G_N_ELEMENTS(attention_names) == SSIM_ATTENTION_N);
static const char *const transformer_impl_names[] = {"transformer_engine", "local", "torch"};
G_STATIC_ASSERT(G_N_ELEMENTS(transformer_impl_names) == SSIM_TRANSFORMER_IMPL_N);
static const char *const fp8_names[] = {"off", "hybrid", "e4m3"};
G_STATIC_ASSERT(G_N_ELEMENTS(fp8_names) == SSIM_FP8_N);
static const char *const cross_entropy_names[] = {"unfused", "native", "te"};
G_STATIC_ASSERT(G_N_ELEMENTS(cross_entropy_names) == SSIM_CROSS_ENTROPY_N);
static const char *const rmsnorm_names[] = {"auto", "fused", "eager"};
G_STATIC_ASSERT(G_N_ELEMENTS(rmsnorm_names) == SSIM_RMSNORM_N);

const char *ssim_axis_name(SsimAxis axis)
{
    return (guint)axis < SSIM_AXIS_N ? axis_names[axis] : "?";
}

const char *ssim_tp_comm_name(SsimTpComm comm)
{
    return (guint)comm < SSIM_TP_COMM_N ? tp_comm_names[comm] : "?";
}

const char *ssim_attention_name(SsimAttention attention)
{
    return (guint)attention < SSIM_ATTENTION_N ? attention_names[attention] : "?";
}

const char *ssim_fp8_name(SsimFp8 fp8)
{
    return (guint)fp8 < SSIM_FP8_N ? fp8_names[fp8] : "?";
}

const char *ssim_cross_entropy_name(SsimCrossEntropy ce)
{
    return (guint)ce < SSIM_CROSS_ENTROPY_N ? cross_entropy_names[ce] : "?";
}

const char *ssim_transformer_impl_name(SsimTransformerImpl impl)
{
    return (guint)impl < SSIM_TRANSFORMER_IMPL_N ? transformer_impl_names[impl] : "?";
}

const char *ssim_rmsnorm_name(SsimRmsnorm norm)
{
    return (guint)norm < SSIM_RMSNORM_N ? rmsnorm_names[norm] : "?";
}

/* The index of `name` (case-insensitive) in `names` (n of them), or `alias_to` when it is one of
 * `aliases` (NULL-terminated), or FALSE. */
static gboolean name_index(const char *const *names, guint n, const char *const *aliases,
                           guint alias_to, const char *name, guint *out)
{
    if (name == NULL)
        return FALSE;
    for (guint i = 0; i < n; i++)
        if (g_ascii_strcasecmp(name, names[i]) == 0) {
            *out = i;
            return TRUE;
        }
    for (guint i = 0; aliases[i] != NULL; i++)
        if (g_ascii_strcasecmp(name, aliases[i]) == 0) {
            *out = alias_to;
            return TRUE;
        }
    return FALSE;
}

gboolean ssim_attention_from_name(const char *name, SsimAttention *out)
{
    /* Megatron-LM's and Transformer Engine's names of the fused kernel. */
    static const char *const aliases[] = {"flash-attn", "flash_attn", "fused", NULL};
    guint i;
    if (!name_index(attention_names, SSIM_ATTENTION_N, aliases, SSIM_ATTENTION_FLASH, name, &i))
        return FALSE;
    *out = (SsimAttention)i;
    return TRUE;
}

gboolean ssim_fp8_from_name(const char *name, SsimFp8 *out)
{
    /* A bare switch turns on Megatron-LM's usual format. */
    static const char *const aliases[] = {"on", "true", "1", NULL};
    guint i;
    if (!name_index(fp8_names, SSIM_FP8_N, aliases, SSIM_FP8_HYBRID, name, &i)) {
        if (name == NULL || (g_ascii_strcasecmp(name, "false") != 0 && strcmp(name, "0") != 0))
            return FALSE;
        i = SSIM_FP8_OFF;
    }
    *out = (SsimFp8)i;
    return TRUE;
}

gboolean ssim_cross_entropy_from_name(const char *name, SsimCrossEntropy *out)
{
    /* A bare switch is Megatron-LM's --cross-entropy-loss-fusion, whose default implementation
     * is native; off is the unfused loss. */
    static const char *const fused[] = {"on", "true", "1", "fused", NULL};
    static const char *const te[] = {"transformer_engine", "transformer-engine", NULL};
    static const char *const off[] = {"off", "false", "0", NULL};
    guint i;
    if (name_index(cross_entropy_names, SSIM_CROSS_ENTROPY_N, fused, SSIM_CROSS_ENTROPY_NATIVE,
                   name, &i) ||
        name_index(cross_entropy_names, 0, te, SSIM_CROSS_ENTROPY_TE, name, &i) ||
        name_index(cross_entropy_names, 0, off, SSIM_CROSS_ENTROPY_UNFUSED, name, &i)) {
        *out = (SsimCrossEntropy)i;
        return TRUE;
    }
    return FALSE;
}

gboolean ssim_transformer_impl_from_name(const char *name, SsimTransformerImpl *out)
{
    static const char *const te[] = {"te", "transformer-engine", NULL};
    static const char *const torch[] = {"pytorch", "eager", NULL};
    guint i;
    if (!name_index(transformer_impl_names, SSIM_TRANSFORMER_IMPL_N, te, SSIM_TRANSFORMER_IMPL_TE,
                    name, &i) &&
        !name_index(transformer_impl_names, 0, torch, SSIM_TRANSFORMER_IMPL_TORCH, name, &i))
        return FALSE;
    *out = (SsimTransformerImpl)i;
    return TRUE;
}

gboolean ssim_rmsnorm_from_name(const char *name, SsimRmsnorm *out)
{
    static const char *const none[] = {NULL};
    guint i;
    if (!name_index(rmsnorm_names, SSIM_RMSNORM_N, none, 0, name, &i))
        return FALSE;
    *out = (SsimRmsnorm)i;
    return TRUE;
}

gboolean ssim_tp_comm_from_name(const char *name, SsimTpComm *out)
{
    static const char *const aliases[] = {"rs_ag", "rsag", NULL};
    guint i;
    if (!name_index(tp_comm_names, SSIM_TP_COMM_N, aliases, SSIM_TP_COMM_RS_AG, name, &i))
        return FALSE;
    *out = (SsimTpComm)i;
    return TRUE;
}

/* ---- per-iteration terms ---------------------------------------------------------------- */

static const char *const step_cost_names[] = {
#define SSIM_X(e, s, m) [SSIM_STEP_COST_##e] = s,
    SSIM_STEP_COST_LIST(SSIM_X)
#undef SSIM_X
};
static const char *const step_cost_megatron[] = {
#define SSIM_X(e, s, m) [SSIM_STEP_COST_##e] = m,
    SSIM_STEP_COST_LIST(SSIM_X)
#undef SSIM_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(step_cost_names) == SSIM_STEP_COST_N);

const char *ssim_step_cost_name(SsimStepCost term)
{
    return (guint)term < SSIM_STEP_COST_N ? step_cost_names[term] : "?";
}

const char *ssim_step_cost_megatron(SsimStepCost term)
{
    return (guint)term < SSIM_STEP_COST_N ? step_cost_megatron[term] : "?";
}

gboolean ssim_step_cost_from_name(const char *name, SsimStepCost *out)
{
    if (name == NULL)
        return FALSE;
    g_autofree char *k = g_strdelimit(g_ascii_strdown(name, -1), "-", '_');
    for (guint i = 0; i < SSIM_STEP_COST_N; i++)
        if (strcmp(k, step_cost_names[i]) == 0) {
            *out = (SsimStepCost)i;
            return TRUE;
        }
    return FALSE;
}

guint ssim_step_costs_default(SsimDtype dtype)
{
    guint all = ((1u << SSIM_STEP_COST_N) - 1) & ~(1u << SSIM_STEP_COST_GRAD_ACCUM) &
                ~(1u << SSIM_STEP_COST_GRAD_CAST) & ~(1u << SSIM_STEP_COST_SHARD_COPY) &
                ~(1u << SSIM_STEP_COST_FP8_AMAX);
    if (dtype != SSIM_DTYPE_FP16)
        all &= ~(1u << SSIM_STEP_COST_LOSS_SCALE);
    if (dtype != SSIM_DTYPE_BF16)
        all &= ~(1u << SSIM_STEP_COST_GRAD_FP32);
    return all;
}

/*
 * Alpa and XLA (schedules alpa, alpa-gpipe, xla) train with JAX's mixed precision: the step
 * differentiates with respect to the half-precision copy of the weights (Alpa's TrainState with
 * use_master_copy), so gradients, their accumulation and their all-reduce are in the compute
 * dtype; Megatron-LM's fp32 gradient reduction is not their default.
 */
gboolean ssim_parallel_compiled(const SsimParallel *par)
{
    return g_str_has_prefix(par->schedule, "alpa") || strcmp(par->schedule, "xla") == 0;
}

guint ssim_parallel_step_costs(const SsimParallel *par, const SsimModel *model)
{
    guint def = ssim_step_costs_default(model->dtype);
    if (ssim_parallel_compiled(par))
        def &= ~(1u << SSIM_STEP_COST_GRAD_FP32);
    /* Eager PyTorch: its autograd adds each microbatch's weight gradients into .grad from the
     * second microbatch on (AccumulateGrad; nothing fuses it into the GEMM), except under ZeRO-2
     * and 3, FSDP2's, which reduce-scatters every microbatch's and copies through its
     * collectives' buffers. */
    if (par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH)
        def |=
            par->zero_stage < 2 ? 1u << SSIM_STEP_COST_GRAD_ACCUM : 1u << SSIM_STEP_COST_SHARD_COPY;
    /* FP8 under Transformer Engine's delayed scaling (Megatron-LM's --fp8-recipe delayed, its
     * default): each fp8_autocast region's amaxes are all-reduced as it ends. */
    if (par->fp8 != SSIM_FP8_OFF && !ssim_parallel_compiled(par))
        def |= 1u << SSIM_STEP_COST_FP8_AMAX;
    return (def & ~par->step_costs_set) | (par->step_costs_on & par->step_costs_set);
}

gboolean ssim_parallel_rmsnorm_eager(const SsimParallel *par, const SsimModel *model)
{
    g_return_val_if_fail(par != NULL && model != NULL, FALSE);
    if (model->norm != SSIM_NORM_RMSNORM)
        return FALSE;
    if (par->rmsnorm != SSIM_RMSNORM_AUTO)
        return par->rmsnorm == SSIM_RMSNORM_EAGER;
    return par->transformer_impl == SSIM_TRANSFORMER_IMPL_TORCH;
}

gboolean ssim_parallel_softmax_fallback(const SsimParallel *par, const SsimModel *model)
{
    g_return_val_if_fail(par != NULL && model != NULL && par->tp >= 1, FALSE);
    if (par->transformer_impl != SSIM_TRANSFORMER_IMPL_LOCAL ||
        par->attention != SSIM_ATTENTION_UNFUSED || ssim_parallel_compiled(par))
        return FALSE;
    const guint64 s = model->seq_len;
    if (ssim_dtype_size(model->dtype) != 2 || s <= 16 || s > 4096 || s % 4 != 0)
        return TRUE;
    /* get_batch_per_block(): 128 threads a block, a warp per row of up to 32 x 2^k keys (a
     * row of s <= 128 keys takes two batches a warp): 4 or 8, so the rule's own "a multiple
     * of 4" is implied. */
    const guint64 pow2 = (guint64)1 << g_bit_storage(s - 1); /* s rounded up to a power of 2 */
    const guint64 warp = MIN(pow2, 32), per_block = (128 / warp) * (pow2 <= 128 ? 2 : 1);
    const guint64 batches = (guint64)par->microbatch * (model->heads / par->tp);
    return batches % per_block != 0;
}

double ssim_parallel_hardware_flops(const SsimParallel *par, const SsimModel *model)
{
    g_return_val_if_fail(par != NULL && model != NULL, 0);
    double hw = ssim_model_hardware_flops(model, par->global_batch, par->recompute);
    double all = ssim_model_iteration_flops(model, par->global_batch);
    /* Op-level checkpointing keeps a flash kernel's output; unfused attention's GEMMs, batched
     * matrix products it does not keep, run again: selective recompute's work. */
    if (par->recompute == SSIM_RECOMPUTE_OP && par->attention != SSIM_ATTENTION_FLASH)
        return hw + ssim_model_hardware_flops(model, par->global_batch, SSIM_RECOMPUTE_SELECTIVE) -
               all;
    if (par->recompute != SSIM_RECOMPUTE_FULL || par->recompute_layers == 0 || model->layers == 0)
        return hw;
    /* Every chunk recomputes the same count of layers (an uneven stage with fewer layers than
     * that recomputes all of its own). */
    guint recomputed = 0;
    for (guint s = 0; s < par->pp; s++)
        recomputed += MIN((guint)par->recompute_layers * par->virtual_stages,
                          ssim_parallel_stage_layers(par, model, s));
    return all + (hw - all) * recomputed / model->layers;
}

gboolean ssim_parallel_step_cost_on(const SsimParallel *par, const SsimModel *model,
                                    SsimStepCost term)
{
    return (ssim_parallel_step_costs(par, model) >> term) & 1u;
}

/* Applies a list of terms ("-clip/+host", "none", "default") to `set` and `on`. */
static gboolean parse_step_costs(const char *key, const char *value, guint *set, guint *on,
                                 GError **error)
{
    g_auto(GStrv) parts = g_strsplit_set(value ? value : "", ",/:", -1);
    guint all = (1u << SSIM_STEP_COST_N) - 1, s = *set, o = *on, n = 0;
    for (guint i = 0; parts[i] != NULL; i++) {
        char *w = g_strstrip(parts[i]);
        if (w[0] == '\0')
            continue;
        n++;
        gboolean turn_on = w[0] != '-';
        const char *name = (w[0] == '-' || w[0] == '+') ? w + 1 : w;
        SsimStepCost t;
        if (g_ascii_strcasecmp(name, "default") == 0) {
            s = o = 0;
        } else if (g_ascii_strcasecmp(name, "none") == 0 || g_ascii_strcasecmp(name, "all") == 0) {
            gboolean everything = g_ascii_strcasecmp(name, "all") == 0;
            s = all;
            o = everything == turn_on ? all : 0;
        } else if (ssim_step_cost_from_name(name, &t)) {
            s |= 1u << t;
            o = turn_on ? (o | 1u << t) : (o & ~(1u << t));
        } else {
            g_autofree char *shown = ssim_text_excerpt(w, 64);
            g_autoptr(GString) known = g_string_new(NULL);
            for (guint k = 0; k < SSIM_STEP_COST_N; k++)
                g_string_append_printf(known, "%s, ", step_cost_names[k]);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: '%s' is not a step cost (known: %seach with - to turn it off or + "
                        "on; all, none, default)",
                        key, shown, known->str);
            return FALSE;
        }
    }
    if (n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: empty (e.g. -clip/+loss_scale, none, default)", key);
        return FALSE;
    }
    *set = s;
    *on = o & s;
    return TRUE;
}

/* Longest layout a Megatron-LM layout string may unroll to. */
#define LAYOUT_MAX_CHARS (1u << 16)

/* Appends `text` (len bytes) `times` times to `out`, FALSE past LAYOUT_MAX_CHARS. */
static gboolean layout_repeat(GString *out, const char *text, gsize len, guint64 times)
{
    if (len > 0 && times > (LAYOUT_MAX_CHARS - out->len) / len)
        return FALSE;
    for (guint64 i = 0; i < times; i++)
        g_string_append_len(out, text, (gssize)len);
    return TRUE;
}

/* The count after a '*' at s[*i] (advanced past it), or 0 for none. */
static guint64 layout_count(const char *s, gsize *i)
{
    if (s[*i] != '*' || !g_ascii_isdigit(s[*i + 1]))
        return 0;
    char *end = NULL;
    guint64 n = g_ascii_strtoull(s + *i + 1, &end, 10);
    *i = (gsize)(end - s);
    return n;
}

/* Megatron-LM's --pipeline-model-parallel-layout ("Et*3|(tt|)*29,m|L"; PipelineParallelLayerLayout
 * .parse_str_to_list): commas dropped, "(group)*n" then "x*n" unrolled, '|' between the model
 * chunks in pipeline order, each chunk's 't' its transformer layers; the embedding 'E' only in the
 * first chunk and the loss 'L' only in the last, where shiftsim puts them.  A chunk of no layer and
 * 'm' (a multi-token prediction layer) are refused: shiftsim models neither. */
static gboolean parse_layout(const char *key, const char *value, guint16 *out, GError **error)
{
    g_autoptr(GString) flat = g_string_new(NULL), once = g_string_new(NULL);
    for (const char *c = value; *c; c++)
        if (*c != ',' && !g_ascii_isspace(*c))
            g_string_append_c(flat, *c);
    gboolean ok = TRUE;
    for (gsize i = 0; ok && i < flat->len;) { /* (group)*n */
        const char *close = flat->str[i] == '(' ? strchr(flat->str + i, ')') : NULL;
        if (close == flat->str + i + 1)
            close = NULL; /* "()": Megatron-LM's pattern needs a group */
        gsize after = close ? (gsize)(close - flat->str) + 1 : 0;
        guint64 n = close ? layout_count(flat->str, &after) : 0;
        if (n > 0) {
            ok = layout_repeat(once, flat->str + i + 1, (gsize)(close - flat->str) - i - 1, n);
            i = after;
        } else {
            ok = layout_repeat(once, flat->str + i++, 1, 1);
        }
    }
    g_string_truncate(flat, 0);
    for (gsize i = 0; ok && i < once->len;) { /* x*n */
        gsize after = i + 1;
        guint64 n = layout_count(once->str, &after);
        ok = layout_repeat(flat, once->str + i, 1, n > 0 ? n : 1);
        i = n > 0 ? after : i + 1;
    }
    if (!ok) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: the layout unrolls to more than %u characters", key, LAYOUT_MAX_CHARS);
        return FALSE;
    }
    g_auto(GStrv) chunks = g_strsplit(flat->str, "|", -1);
    guint n = g_strv_length(chunks);
    if (n > SSIM_PARALLEL_STAGES_MAX) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %u model chunks in the layout, more than the %d an uneven split may list",
                    key, n, SSIM_PARALLEL_STAGES_MAX);
        return FALSE;
    }
    guint16 got[SSIM_PARALLEL_STAGES_MAX] = {0};
    for (guint j = 0; j < n; j++) {
        guint layers = 0;
        for (const char *c = chunks[j]; *c; c++) {
            const char *why = NULL;
            if (*c == 't')
                layers++;
            else if (*c == 'E' && j != 0)
                why = "the embedding 'E' is modelled in the first chunk only";
            else if (*c == 'L' && j + 1 != n)
                why = "the loss 'L' is modelled in the last chunk only";
            else if (*c == 'm')
                why = "a multi-token prediction layer, not modelled";
            else if (*c != 'E' && *c != 'L')
                why = "not one of E, t, L (and |, (, ), *N, commas)";
            if (why == NULL && layers > 65535)
                why = "more than 65535 layers in one chunk";
            if (why != NULL) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: chunk %u of the layout, '%c': %s", key, j + 1, *c, why);
                return FALSE;
            }
        }
        if (layers == 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: chunk %u of the layout holds no transformer layer 't' (shiftsim "
                        "needs one or more a chunk)",
                        key, j + 1);
            return FALSE;
        }
        got[j] = (guint16)layers;
    }
    memcpy(out, got, sizeof got);
    return TRUE;
}

/* "6/6/6/5" (or with ':' or ','; an entry "N*K" is N K times: "1/2*62/1") -> stage_layers;
 * Megatron-LM's layout string ("Et*2|(t*2|)*62,tL": parse_layout) where it has a letter, '|' or a
 * parenthesis; "even" clears it. */
static gboolean parse_stage_layers(const char *key, const char *value, guint16 *out, GError **error)
{
    if (value && g_ascii_strcasecmp(value, "even") == 0) {
        memset(out, 0, sizeof(guint16) * SSIM_PARALLEL_STAGES_MAX);
        return TRUE;
    }
    if (value && strpbrk(value, "EtLm|()") != NULL)
        return parse_layout(key, value, out, error);
    g_auto(GStrv) parts = g_strsplit_set(value ? value : "", ",/:", -1);
    guint16 got[SSIM_PARALLEL_STAGES_MAX] = {0};
    guint n = 0;
    for (guint i = 0; parts[i] != NULL; i++) {
        char *w = g_strstrip(parts[i]);
        g_auto(GStrv) rep = g_strsplit(w, "*", 3);
        guint64 v = 0, k = 1;
        gboolean ok = rep[0] != NULL && (rep[1] == NULL || rep[2] == NULL);
        for (guint r = 0; ok && rep[r] != NULL; r++) {
            const char *t = g_strstrip(rep[r]);
            ok = t[0] != '-' && t[0] != '+' &&
                 g_ascii_string_to_unsigned(t, 10, 1, 65535, r == 0 ? &v : &k, NULL);
        }
        if (!ok) {
            g_autofree char *shown = ssim_text_excerpt(w, 32);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: entry %u '%s' is not a layer count from 1 to 65535, or one repeated "
                        "(N*K: N layers in each of K chunks) (e.g. 6/6/6/5, one entry per "
                        "pipeline stage; 1/2*6/1, one per model chunk in pipeline order with v > "
                        "1)",
                        key, i + 1, shown);
            return FALSE;
        }
        if (k > SSIM_PARALLEL_STAGES_MAX - n) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: more than the %d entries an uneven split may list", key,
                        SSIM_PARALLEL_STAGES_MAX);
            return FALSE;
        }
        for (guint64 r = 0; r < k; r++)
            got[n++] = (guint16)v;
    }
    memcpy(out, got, sizeof got);
    return TRUE;
}

guint ssim_parallel_stage_layers_n(const SsimParallel *par)
{
    guint n = 0;
    while (n < SSIM_PARALLEL_STAGES_MAX && par->stage_layers[n] != 0)
        n++;
    return n;
}

void ssim_parallel_append_stage_layers(GString *out, const SsimParallel *par)
{
    g_return_if_fail(out != NULL && par != NULL);
    if (par->balance_layers && !ssim_parallel_uneven(par)) {
        g_string_append(out, "balanced");
        return;
    }
    guint n = ssim_parallel_stage_layers_n(par);
    for (guint i = 0; i < n;) {
        guint k = 1;
        while (i + k < n && par->stage_layers[i + k] == par->stage_layers[i])
            k++;
        guint run = k >= 3 ? k : 1; /* three or more alike as N*K */
        if (run > 1)
            g_string_append_printf(out, "%s%u*%u", i ? "/" : "", par->stage_layers[i], run);
        else
            g_string_append_printf(out, "%s%u", i ? "/" : "", par->stage_layers[i]);
        i += run;
    }
}

void ssim_parallel_init(SsimParallel *par)
{
    g_return_if_fail(par != NULL);
    memset(par, 0, sizeof *par);
    par->dp = par->tp = par->pp = 1;
    par->cp = 1;
    par->virtual_stages = 1;
    par->microbatch = 1;
    par->global_batch = 1;
    par->sequence_parallel = FALSE;
    par->recompute = SSIM_RECOMPUTE_NONE;
    par->zero_stage = 0;
    par->dp_bucket_bytes = 0;
    par->tp_comm = SSIM_TP_COMM_ALLREDUCE;
    par->allow_cross_node_tp = FALSE;
    par->order[0] = SSIM_AXIS_TP;
    par->order[1] = SSIM_AXIS_DP;
    par->order[2] = SSIM_AXIS_PP;
    g_strlcpy(par->schedule, "1f1b", sizeof par->schedule);
    g_strlcpy(par->placement, "megatron", sizeof par->placement);
}

/* ---- calibrated shapes ------------------------------------------------------------------ */

guint ssim_parallel_fit_value(const SsimParallel *par, const SsimModel *model, guint nodes,
                              SsimFitDim dim)
{
    switch (dim) {
    case SSIM_FIT_HIDDEN:
        return model->hidden;
    case SSIM_FIT_LAYERS:
        return model->layers;
    case SSIM_FIT_SEQ_LEN:
        return model->seq_len;
    case SSIM_FIT_GPUS:
        return ssim_parallel_world(par);
    case SSIM_FIT_NODES:
        return nodes;
    case SSIM_FIT_TP:
        return par->tp;
    case SSIM_FIT_PP:
        return par->pp;
    case SSIM_FIT_MICROBATCH:
    default:
        return par->microbatch;
    }
}

char *ssim_parallel_extrapolation(const SsimParallel *par, const SsimModel *model, guint nodes,
                                  const SsimCluster *cluster)
{
    GString *why = NULL;
    for (guint d = 0; d < SSIM_FIT_DIM_N; d++) {
        guint lo = cluster->fit_lo[d], hi = cluster->fit_hi[d];
        if (hi == 0)
            continue;
        guint v = ssim_parallel_fit_value(par, model, nodes, (SsimFitDim)d);
        if (v >= lo && v <= hi)
            continue;
        if (why == NULL)
            why = g_string_new(NULL);
        else
            g_string_append(why, ", ");
        g_string_append_printf(why, "%s %u %s %u", ssim_fit_dim_name((SsimFitDim)d), v,
                               v < lo ? "<" : ">", v < lo ? lo : hi);
    }
    return why ? g_string_free(why, FALSE) : NULL;
}

/* ---- grid ------------------------------------------------------------------------------- */

guint ssim_parallel_world(const SsimParallel *par)
{
    return par->dp * par->cp * par->tp * par->pp;
}

guint ssim_parallel_deferred_wgrads(const SsimParallel *par)
{
    return MIN(par->defer_head_wgrad, ssim_parallel_n_microbatches(par));
}

const SsimModel *ssim_parallel_local_model(const SsimParallel *par, const SsimModel *model,
                                           SsimModel *buf)
{
    if (par->cp <= 1)
        return model;
    *buf = *model;
    buf->seq_len = model->seq_len / par->cp;
    return buf;
}

guint ssim_parallel_n_microbatches(const SsimParallel *par)
{
    guint per = par->dp * par->microbatch;
    return per ? par->global_batch / per : 0;
}

guint ssim_parallel_layers_per_chunk(const SsimParallel *par, const SsimModel *model)
{
    if (ssim_parallel_uneven(par)) {
        guint most = 0;
        for (guint j = 0; j < par->pp * par->virtual_stages && j < SSIM_PARALLEL_STAGES_MAX; j++)
            most = MAX(most, par->stage_layers[j]);
        return most;
    }
    guint chunks = par->pp * par->virtual_stages;
    return chunks ? model->layers / chunks : 0;
}

gboolean ssim_parallel_uneven(const SsimParallel *par)
{
    return par->stage_layers[0] != 0;
}

guint ssim_parallel_chunk_layers(const SsimParallel *par, const SsimModel *model, guint vstage)
{
    guint chunks = par->pp * par->virtual_stages;
    g_return_val_if_fail(vstage < chunks, 0);
    if (ssim_parallel_uneven(par))
        return vstage < SSIM_PARALLEL_STAGES_MAX ? par->stage_layers[vstage] : 0;
    return model->layers / chunks;
}

guint ssim_parallel_chunk_first_layer(const SsimParallel *par, const SsimModel *model, guint vstage)
{
    guint first = 0;
    for (guint j = 0; j < vstage && j < par->pp * par->virtual_stages; j++)
        first += ssim_parallel_chunk_layers(par, model, j);
    return first;
}

guint ssim_parallel_stage_layers(const SsimParallel *par, const SsimModel *model, guint stage)
{
    g_return_val_if_fail(stage < par->pp, 0);
    guint sum = 0;
    for (guint c = 0; c < par->virtual_stages; c++)
        sum += ssim_parallel_chunk_layers(par, model, c * par->pp + stage);
    return sum;
}

guint64 ssim_parallel_stage_params(const SsimParallel *par, const SsimModel *model, guint stage)
{
    return ssim_model_stage_params_layers(model, par->pp, stage,
                                          ssim_parallel_stage_layers(par, model, stage));
}

guint64 ssim_parallel_stage_fp8_params(const SsimParallel *par, const SsimModel *model, guint stage)
{
    if (par->fp8 == SSIM_FP8_OFF)
        return 0;
    return ssim_model_fp8_layer_params(model, par->tp) *
           ssim_parallel_stage_layers(par, model, stage);
}

guint ssim_parallel_size(const SsimParallel *par, SsimAxis axis)
{
    switch (axis) {
    case SSIM_AXIS_TP:
        return par->tp;
    case SSIM_AXIS_DP:
        return par->dp * par->cp;
    case SSIM_AXIS_PP:
        return par->pp;
    case SSIM_AXIS_N:
        break;
    }
    g_return_val_if_reached(0);
}

guint ssim_coord_get(SsimCoord coord, SsimAxis axis)
{
    switch (axis) {
    case SSIM_AXIS_TP:
        return coord.tp;
    case SSIM_AXIS_DP:
        return coord.dp;
    case SSIM_AXIS_PP:
        return coord.pp;
    case SSIM_AXIS_N:
        break;
    }
    g_return_val_if_reached(0);
}

static void coord_set(SsimCoord *coord, SsimAxis axis, guint value)
{
    if (axis == SSIM_AXIS_TP)
        coord->tp = value;
    else if (axis == SSIM_AXIS_DP)
        coord->dp = value;
    else
        coord->pp = value;
}

guint ssim_parallel_rank(const SsimParallel *par, SsimCoord coord)
{
    g_return_val_if_fail(coord.dp < par->dp * par->cp && coord.tp < par->tp && coord.pp < par->pp,
                         0);
    guint rank = 0;
    for (int i = SSIM_AXIS_N - 1; i >= 0; i--)
        rank = rank * ssim_parallel_size(par, par->order[i]) + ssim_coord_get(coord, par->order[i]);
    return rank;
}

SsimCoord ssim_parallel_coord(const SsimParallel *par, guint rank)
{
    SsimCoord c = {0, 0, 0};
    g_return_val_if_fail(rank < ssim_parallel_world(par), c);
    for (guint i = 0; i < SSIM_AXIS_N; i++) {
        guint n = ssim_parallel_size(par, par->order[i]);
        coord_set(&c, par->order[i], rank % n);
        rank /= n;
    }
    return c;
}

void ssim_parallel_group(const SsimParallel *par, guint rank, SsimAxis axis, guint *ranks)
{
    g_return_if_fail(ranks != NULL && (guint)axis < SSIM_AXIS_N);
    SsimCoord c = ssim_parallel_coord(par, rank);
    guint n = ssim_parallel_size(par, axis);
    for (guint i = 0; i < n; i++) {
        coord_set(&c, axis, i);
        ranks[i] = ssim_parallel_rank(par, c);
    }
}

/* ---- text ------------------------------------------------------------------------------- */

/* Sets "KEY: 'VALUE' is not WHAT" (the value shortened when long) and returns FALSE. */
static gboolean not_a(const char *key, const char *value, const char *what, GError **error)
{
    g_autofree char *shown = ssim_text_excerpt(value, 64);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: '%s' is not %s", key, shown,
                what);
    return FALSE;
}

static gboolean parse_uint(const char *key, const char *value, guint min, guint *out,
                           GError **error)
{
    guint64 n = 0;
    if (value == NULL || value[0] == '-' || value[0] == '+' ||
        !g_ascii_string_to_unsigned(value, 10, min, G_MAXUINT32, &n, NULL)) {
        g_autofree char *shown = ssim_text_excerpt(value, 64);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: '%s' is not %s", key,
                    shown, min ? "a positive integer" : "a non-negative integer");
        return FALSE;
    }
    *out = (guint)n;
    return TRUE;
}

/* A layer count from `min` that a guint16 holds ("%s: 70000 is more layers than a stage can
 * hold"). */
static gboolean parse_layer_count(const char *key, const char *value, guint min, const char *what,
                                  guint16 *out, GError **error)
{
    guint n;
    if (!parse_uint(key, value, min, &n, error))
        return FALSE;
    if (n > G_MAXUINT16) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: %u is more layers than %s can hold (%u)", key, n, what, G_MAXUINT16);
        return FALSE;
    }
    *out = (guint16)n;
    return TRUE;
}

/* "25MB" -> 25000000, "32MiB" -> 33554432, "off" -> 0 (ssim_bytes_parse's grammar). */
static gboolean parse_bytes(const char *key, const char *value, guint64 *out, GError **error)
{
    if (value != NULL && g_ascii_strcasecmp(value, "off") == 0) {
        *out = 0;
        return TRUE;
    }
    if (ssim_bytes_parse(value, out))
        return TRUE;
    g_autofree char *shown = ssim_text_excerpt(value, 64);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s: '%s' is not a byte size (e.g. 25MB, 32MiB, 0 or off)", key, shown);
    return FALSE;
}

static gboolean parse_order(const char *key, const char *value, SsimAxis *order, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(value ? value : "", "-", -1);
    gboolean seen[SSIM_AXIS_N] = {FALSE, FALSE, FALSE};
    SsimAxis got[SSIM_AXIS_N];
    guint n = g_strv_length(parts);
    gboolean ok = n == SSIM_AXIS_N;
    for (guint i = 0; ok && i < n; i++) {
        ok = FALSE;
        for (guint a = 0; a < SSIM_AXIS_N; a++) {
            if (g_ascii_strcasecmp(parts[i], axis_names[a]) == 0 && !seen[a]) {
                seen[a] = TRUE;
                got[i] = (SsimAxis)a;
                ok = TRUE;
            }
        }
    }
    if (!ok) {
        g_autofree char *shown = ssim_text_excerpt(value, 64);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: '%s' is not an order of tp, dp and pp (innermost first, e.g. tp-dp-pp)",
                    key, shown);
        return FALSE;
    }
    memcpy(order, got, sizeof got);
    return TRUE;
}

static gboolean parse_name(const char *key, const char *value, char *out, GError **error)
{
    gsize n = value ? strlen(value) : 0;
    if (n == 0 || n >= SSIM_PARALLEL_NAME_MAX) {
        g_autofree char *shown = ssim_text_excerpt(value, 64);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: '%s' must be 1 to %d characters", key, shown, SSIM_PARALLEL_NAME_MAX - 1);
        return FALSE;
    }
    g_strlcpy(out, value, SSIM_PARALLEL_NAME_MAX);
    return TRUE;
}

static gboolean key_is(const char *key, const char *a, const char *b, const char *c)
{
    return strcmp(key, a) == 0 || (b && strcmp(key, b) == 0) || (c && strcmp(key, c) == 0);
}

gboolean ssim_parallel_set(SsimParallel *par, const char *key, const char *value, GError **error)
{
    return ssim_parallel_set_field(par, key, value, NULL, error);
}

gboolean ssim_parallel_set_field(SsimParallel *par, const char *key, const char *value,
                                 SsimParallelField *field, GError **error)
{
    g_return_val_if_fail(par != NULL && key != NULL, FALSE);
    g_autofree char *k = g_strdelimit(g_ascii_strdown(key, -1), "-", '_');
    g_autofree char *v = g_strstrip(g_strdup(value ? value : ""));
    SsimParallel p = *par;
    SsimParallelField f;

    if (strcmp(k, "dp") == 0) {
        f = SSIM_PARALLEL_DP;
        if (!parse_uint(k, v, 1, &p.dp, error))
            return FALSE;
    } else if (strcmp(k, "tp") == 0) {
        f = SSIM_PARALLEL_TP;
        if (!parse_uint(k, v, 1, &p.tp, error))
            return FALSE;
    } else if (strcmp(k, "pp") == 0) {
        f = SSIM_PARALLEL_PP;
        if (!parse_uint(k, v, 1, &p.pp, error))
            return FALSE;
    } else if (key_is(k, "cp", "context_parallel", "context_parallel_size")) {
        f = SSIM_PARALLEL_CP;
        if (!parse_uint(k, v, 1, &p.cp, error))
            return FALSE;
    } else if (key_is(k, "v", "vpp", "virtual_stages")) {
        f = SSIM_PARALLEL_VSTAGES;
        if (!parse_uint(k, v, 1, &p.virtual_stages, error))
            return FALSE;
    } else if (key_is(k, "mb", "microbatch", "micro_batch")) {
        f = SSIM_PARALLEL_MICROBATCH;
        if (!parse_uint(k, v, 1, &p.microbatch, error))
            return FALSE;
    } else if (key_is(k, "gbs", "global_batch", "batch")) {
        f = SSIM_PARALLEL_GLOBAL_BATCH;
        if (!parse_uint(k, v, 1, &p.global_batch, error))
            return FALSE;
    } else if (key_is(k, "sp", "sequence_parallel", NULL)) {
        f = SSIM_PARALLEL_SEQ_PARALLEL;
        if (!ssim_switch_read(k, v, &p.sequence_parallel, error))
            return FALSE;
        if (p.sequence_parallel)
            p.tp_comm = SSIM_TP_COMM_RS_AG;
    } else if (strcmp(k, "recompute") == 0) {
        f = SSIM_PARALLEL_RECOMPUTE;
        if (!ssim_recompute_from_name(v, &p.recompute))
            return not_a(k, v, "one of none | selective | full", error);
    } else if (key_is(k, "recompute_layers", "recompute_num_layers", NULL)) {
        f = SSIM_PARALLEL_RECOMPUTE_LAYERS;
        if (!parse_layer_count(k, v, 0, "a chunk", &p.recompute_layers, error))
            return FALSE;
    } else if (key_is(k, "zero", "zero_stage", NULL)) {
        f = SSIM_PARALLEL_ZERO;
        if (!parse_uint(k, v, 0, &p.zero_stage, error))
            return FALSE;
        if (p.zero_stage > 3) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: stage %u does not exist (0, 1, 2 or 3)", k, p.zero_stage);
            return FALSE;
        }
    } else if (key_is(k, "bucket", "dp_bucket_bytes", "bucket_bytes")) {
        f = SSIM_PARALLEL_BUCKET;
        if (!parse_bytes(k, v, &p.dp_bucket_bytes, error))
            return FALSE;
    } else if (key_is(k, "tp_comm", NULL, NULL)) {
        f = SSIM_PARALLEL_TP_COMM;
        if (!ssim_tp_comm_from_name(v, &p.tp_comm))
            return not_a(k, v, "one of allreduce | rs-ag", error);
    } else if (key_is(k, "order", "rank_order", NULL)) {
        f = SSIM_PARALLEL_ORDER;
        if (!parse_order(k, v, p.order, error))
            return FALSE;
    } else if (strcmp(k, "schedule") == 0) {
        f = SSIM_PARALLEL_SCHEDULE;
        if (!parse_name(k, v, p.schedule, error))
            return FALSE;
    } else if (strcmp(k, "placement") == 0) {
        f = SSIM_PARALLEL_PLACEMENT;
        if (!parse_name(k, v, p.placement, error))
            return FALSE;
    } else if (key_is(k, "cross_node_tp", "allow_cross_node_tp", NULL)) {
        f = SSIM_PARALLEL_CROSS_NODE_TP;
        if (!ssim_switch_read(k, v, &p.allow_cross_node_tp, error))
            return FALSE;
    } else if (key_is(k, "stage_layers", "layers_per_stage", NULL)) {
        f = SSIM_PARALLEL_STAGE_LAYERS;
        p.balance_layers = g_ascii_strcasecmp(v, "balanced") == 0;
        p.layers_balanced = FALSE;
        if (p.balance_layers)
            memset(p.stage_layers, 0, sizeof p.stage_layers);
        else if (!parse_stage_layers(k, v, p.stage_layers, error))
            return FALSE;
    } else if (key_is(k, "first_stage_layers", "decoder_first_pipeline_num_layers",
                      "num_layers_in_first_pipeline_stage") ||
               key_is(k, "last_stage_layers", "decoder_last_pipeline_num_layers",
                      "num_layers_in_last_pipeline_stage")) {
        gboolean first = strstr(k, "first") != NULL;
        f = first ? SSIM_PARALLEL_FIRST_STAGE : SSIM_PARALLEL_LAST_STAGE;
        if (!parse_layer_count(k, v, 1, "a stage",
                               first ? &p.first_stage_layers : &p.last_stage_layers, error))
            return FALSE;
    } else if (key_is(k, "embedding_in_split", "account_for_embedding_in_pipeline_split", NULL)) {
        f = SSIM_PARALLEL_FIRST_STAGE;
        if (!ssim_switch_read(k, v, &p.embedding_in_split, error))
            return FALSE;
    } else if (key_is(k, "loss_in_split", "account_for_loss_in_pipeline_split", NULL)) {
        f = SSIM_PARALLEL_LAST_STAGE;
        if (!ssim_switch_read(k, v, &p.loss_in_split, error))
            return FALSE;
    } else if (key_is(k, "step_costs", NULL, NULL)) {
        f = SSIM_PARALLEL_STEP_COSTS;
        if (!parse_step_costs(k, v, &p.step_costs_set, &p.step_costs_on, error))
            return FALSE;
    } else if (key_is(k, "attention", "attn", NULL)) {
        f = SSIM_PARALLEL_ATTENTION;
        if (!ssim_attention_from_name(v, &p.attention))
            return not_a(k, v, "an attention kind (unfused or flash)", error);
    } else if (key_is(k, "transformer_impl", NULL, NULL)) {
        f = SSIM_PARALLEL_TRANSFORMER_IMPL;
        if (!ssim_transformer_impl_from_name(v, &p.transformer_impl))
            return not_a(k, v, "a transformer implementation (transformer_engine, local or torch)",
                         error);
    } else if (key_is(k, "rmsnorm", "rmsnorm_impl", "norm_impl")) {
        f = SSIM_PARALLEL_RMSNORM;
        if (!ssim_rmsnorm_from_name(v, &p.rmsnorm))
            return not_a(k, v, "an RMSNorm implementation (auto, fused or eager)", error);
    } else if (key_is(k, "fp8", "fp8_format", NULL)) {
        f = SSIM_PARALLEL_FP8;
        if (!ssim_fp8_from_name(v, &p.fp8))
            return not_a(k, v, "an FP8 format (off, hybrid or e4m3)", error);
    } else if (key_is(k, "cross_entropy", "cross_entropy_loss_fusion",
                      "cross_entropy_fusion_impl")) {
        f = SSIM_PARALLEL_CROSS_ENTROPY;
        if (!ssim_cross_entropy_from_name(v, &p.cross_entropy))
            return not_a(k, v, "a cross entropy (unfused, native or te)", error);
    } else if (key_is(k, "tp_overlap", NULL, NULL)) {
        f = SSIM_PARALLEL_TP_OVERLAP;
        gboolean overlap;
        if (!ssim_switch_read(k, v, &overlap, error))
            return FALSE;
        p.tp_sync_grad = !overlap;
    } else if (key_is(k, "tp_comm_overlap", "ub_tp_comm_overlap", NULL)) {
        f = SSIM_PARALLEL_TP_COMM_OVERLAP;
        if (!ssim_switch_read(k, v, &p.tp_comm_overlap, error))
            return FALSE;
    } else if (key_is(k, "overlap_param_gather", "overlap_param_sync", NULL)) {
        f = SSIM_PARALLEL_OVERLAP_PARAM_GATHER;
        if (!ssim_switch_read(k, v, &p.overlap_param_gather, error))
            return FALSE;
    } else if (key_is(k, "fsdp_root", "fsdp_root_unit", NULL)) {
        f = SSIM_PARALLEL_FSDP_ROOT;
        if (!ssim_switch_read(k, v, &p.fsdp_root, error))
            return FALSE;
    } else if (key_is(k, "launch_blocking", "cuda_launch_blocking", NULL)) {
        f = SSIM_PARALLEL_LAUNCH_BLOCKING;
        if (!ssim_switch_read(k, v, &p.launch_blocking, error))
            return FALSE;
    } else if (key_is(k, "defer_embedding_wgrad", "defer_embedding_wgrad_compute", NULL)) {
        f = SSIM_PARALLEL_DEFER_WGRAD;
        if (g_ascii_strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0)
            p.defer_head_wgrad = 0;
        else if (g_ascii_strcasecmp(v, "all") == 0)
            p.defer_head_wgrad = SSIM_DEFER_ALL;
        else if (!parse_uint(k, v, 1, &p.defer_head_wgrad, NULL) ||
                 p.defer_head_wgrad == SSIM_DEFER_ALL)
            return not_a(k, v, "off, all or a count of microbatches", error);
    } else {
        g_autofree char *shown = ssim_text_excerpt(key, 64);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: unknown parallel setting (known: dp, tp, pp, v, mb, gbs, sp, recompute, "
                    "recompute_layers, "
                    "zero, bucket, tp_comm, order, schedule, placement, cross_node_tp, "
                    "stage_layers, first_stage_layers, last_stage_layers, embedding_in_split, "
                    "loss_in_split, step_costs, tp_overlap, attention, transformer_impl, rmsnorm, "
                    "fp8, tp_comm_overlap, cross_entropy, launch_blocking, cp, "
                    "defer_embedding_wgrad, overlap_param_gather, fsdp_root)",
                    shown);
        return FALSE;
    }
    *par = p;
    if (field)
        *field = f;
    return TRUE;
}

/* Whether `key` names embedding_in_split or loss_in_split (under any of their names), not a
 * stage's layer count. */
static gboolean names_count_in_split(const char *key)
{
    g_autofree char *k = g_ascii_strdown(key, -1);
    return g_str_has_suffix(k, "split");
}

gboolean ssim_parallel_parse(SsimParallel *par, const char *spec, GError **error)
{
    return ssim_parallel_parse_fields(par, spec, NULL, error);
}

gboolean ssim_parallel_parse_fields(SsimParallel *par, const char *spec, guint64 *given,
                                    GError **error)
{
    g_return_val_if_fail(par != NULL && spec != NULL, FALSE);
    g_auto(GStrv) items = g_strsplit(spec, ",", -1);
    /* The key that set each field, to name both in a repeat. */
    const char *key_of[64] = {NULL};
    guint64 set = 0;
    for (guint i = 0; items[i] != NULL; i++) {
        char *item = g_strstrip(items[i]);
        if (item[0] == '\0')
            continue;
        char *eq = strchr(item, '=');
        if (eq == NULL) {
            g_autofree char *shown = ssim_text_excerpt(item, 64);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "'%s': expected key=value", shown);
            return FALSE;
        }
        *eq = '\0';
        const char *key = g_strstrip(item);
        SsimParallelField f;
        if (!ssim_parallel_set_field(par, key, eq + 1, &f, error))
            return FALSE;
        guint bit = (guint)__builtin_ctzll((unsigned long long)f);
        if ((set & f) && (f == SSIM_PARALLEL_FIRST_STAGE || f == SSIM_PARALLEL_LAST_STAGE) &&
            names_count_in_split(key_of[bit]) != names_count_in_split(key)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: contradicts '%s': give the %s stage's layers or count the %s as a "
                        "layer, not both (Megatron-LM refuses them together)",
                        key, key_of[bit], f == SSIM_PARALLEL_FIRST_STAGE ? "first" : "last",
                        f == SSIM_PARALLEL_FIRST_STAGE ? "embedding" : "loss");
            return FALSE;
        }
        if (set & f) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: given twice (as '%s' and '%s'); give each setting once", key,
                        key_of[bit], key);
            return FALSE;
        }
        set |= f;
        key_of[bit] = key;
    }
    if (given)
        *given = set;
    return TRUE;
}

char *ssim_parallel_to_string(const SsimParallel *par)
{
    g_return_val_if_fail(par != NULL, NULL);
    g_autoptr(GString) extra = g_string_new(NULL);
    if (ssim_parallel_uneven(par) || par->balance_layers) {
        g_string_append(extra, ",stage_layers=");
        ssim_parallel_append_stage_layers(extra, par);
    }
    if (par->step_costs_set) {
        g_string_append(extra, ",step_costs=");
        gboolean first = TRUE;
        for (guint t = 0; t < SSIM_STEP_COST_N; t++)
            if ((par->step_costs_set >> t) & 1u) {
                g_string_append_printf(extra, "%s%c%s", first ? "" : "/",
                                       (par->step_costs_on >> t) & 1u ? '+' : '-',
                                       step_cost_names[t]);
                first = FALSE;
            }
    }
    if (par->tp_sync_grad)
        g_string_append(extra, ",tp_overlap=off");
    if (par->attention != SSIM_ATTENTION_UNFUSED)
        g_string_append_printf(extra, ",attention=%s", ssim_attention_name(par->attention));
    if (par->transformer_impl != SSIM_TRANSFORMER_IMPL_TE)
        g_string_append_printf(extra, ",transformer_impl=%s",
                               ssim_transformer_impl_name(par->transformer_impl));
    if (par->fp8 != SSIM_FP8_OFF)
        g_string_append_printf(extra, ",fp8=%s", ssim_fp8_name(par->fp8));
    if (par->tp_comm_overlap)
        g_string_append(extra, ",tp_comm_overlap=on");
    if (par->cross_entropy != SSIM_CROSS_ENTROPY_UNFUSED)
        g_string_append_printf(extra, ",cross_entropy=%s",
                               ssim_cross_entropy_name(par->cross_entropy));
    if (par->launch_blocking)
        g_string_append(extra, ",launch_blocking=on");
    if (par->rmsnorm != SSIM_RMSNORM_AUTO)
        g_string_append_printf(extra, ",rmsnorm=%s", ssim_rmsnorm_name(par->rmsnorm));
    if (par->recompute_layers > 0)
        g_string_append_printf(extra, ",recompute_layers=%u", par->recompute_layers);
    if (par->cp > 1)
        g_string_append_printf(extra, ",cp=%u", par->cp);
    if (par->first_stage_layers > 0)
        g_string_append_printf(extra, ",first_stage_layers=%u", par->first_stage_layers);
    if (par->last_stage_layers > 0)
        g_string_append_printf(extra, ",last_stage_layers=%u", par->last_stage_layers);
    if (par->embedding_in_split)
        g_string_append(extra, ",embedding_in_split=on");
    if (par->loss_in_split)
        g_string_append(extra, ",loss_in_split=on");
    if (par->defer_head_wgrad == SSIM_DEFER_ALL)
        g_string_append(extra, ",defer_embedding_wgrad=all");
    else if (par->defer_head_wgrad > 0)
        g_string_append_printf(extra, ",defer_embedding_wgrad=%u", par->defer_head_wgrad);
    if (par->overlap_param_gather)
        g_string_append(extra, ",overlap_param_gather=on");
    if (par->fsdp_root)
        g_string_append(extra, ",fsdp_root=on");
    return g_strdup_printf(
        "dp=%u,tp=%u,pp=%u,v=%u,mb=%u,gbs=%u,sp=%s,recompute=%s,zero=%u,"
        "bucket=%" G_GUINT64_FORMAT ",tp_comm=%s,order=%s-%s-%s,schedule=%s,"
        "placement=%s,cross_node_tp=%s%s",
        par->dp, par->tp, par->pp, par->virtual_stages, par->microbatch, par->global_batch,
        par->sequence_parallel ? "on" : "off", ssim_recompute_name(par->recompute), par->zero_stage,
        par->dp_bucket_bytes, ssim_tp_comm_name(par->tp_comm), ssim_axis_name(par->order[0]),
        ssim_axis_name(par->order[1]), ssim_axis_name(par->order[2]), par->schedule, par->placement,
        par->allow_cross_node_tp ? "on" : "off", extra->str);
}

/* ---- Megatron-LM's rules for an uneven split -------------------------------------------- */

gboolean ssim_parallel_layers_pending(const SsimParallel *par)
{
    return par->first_stage_layers > 0 || par->last_stage_layers > 0 || par->embedding_in_split ||
           par->loss_in_split || par->balance_layers;
}

/* The name of the first rule `par` holds, for messages. */
static const char *layers_rule(const SsimParallel *par)
{
    return par->balance_layers       ? "stage_layers=balanced"
           : par->first_stage_layers ? "first_stage_layers"
           : par->last_stage_layers  ? "last_stage_layers"
           : par->embedding_in_split ? "embedding_in_split"
                                     : "loss_in_split";
}

/* The first failing rule, named in the message (here and in validation). */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, __VA_ARGS__);               \
        return FALSE;                                                                              \
    } while (0)

/* A stage's layers from first_stage_layers / last_stage_layers: the others share the rest. */
static gboolean stage_counts(const SsimParallel *par, const SsimModel *model, guint *counts,
                             GError **error)
{
    const char *rule = layers_rule(par);
    guint pp = par->pp, rest = model->layers, left = pp;
    guint first = par->first_stage_layers, last = par->last_stage_layers;
    if (first > rest)
        FAIL("first_stage_layers: %u is more than the %u layers of %s", first, rest, model->name);
    rest -= first;
    left -= first > 0;
    if (last > rest)
        FAIL("last_stage_layers: %u is more than the %u layers %s leaves%s", last, rest,
             model->name, first ? " after the first stage's" : "");
    rest -= last;
    left -= last > 0;
    if (left == 0 && rest > 0)
        FAIL("%s: %u of the %u layers of %s are left over and no stage is left to hold them", rule,
             rest, model->layers, model->name);
    if (left > 0 && (rest == 0 || rest % left != 0))
        FAIL("%s: %u layers of %s remain for the %u stage%s between, which cannot share them "
             "evenly (Megatron-LM needs the rest divisible by the stages left)",
             rule, rest, model->name, left, left == 1 ? "" : "s");
    for (guint s = 0; s < pp; s++)
        counts[s] = s == 0 && first ? first : s == pp - 1 && last ? last : rest / left;
    return TRUE;
}

/* stage_layers=balanced: each of the pp v chunks the same work, the LM head on the last chunk
 * counted as `head` layers (its forward and backward FLOPs over a layer's, whose forward runs
 * twice under full recompute); the chunks after the first take the remainder one each. */
static gboolean balanced_counts(const SsimParallel *par, const SsimModel *model, guint16 *out,
                                GError **error)
{
    guint chunks = par->pp * par->virtual_stages, layers = model->layers;
    if (layers < chunks)
        FAIL("stage_layers=balanced: %u layers of %s for pp x v = %u model chunks; each needs "
             "one",
             layers, model->name, chunks);
    double layer = ssim_model_layer_forward_flops(model, 1);
    double head = layer > 0 ? 3 * ssim_model_head_forward_flops(model, 1) /
                                  ((par->recompute == SSIM_RECOMPUTE_FULL ? 4 : 3) * layer)
                            : 0;
    double last = round(((double)layers + head) / chunks - head);
    guint n_last = chunks == 1 ? layers : (guint)CLAMP(last, 1.0, (double)(layers - chunks + 1));
    guint rest = layers - n_last, others = chunks - 1;
    for (guint j = 0; j < others; j++)
        out[j] = (guint16)(rest / others + (j >= 1 && j <= rest % others ? 1 : 0));
    out[chunks - 1] = (guint16)n_last;
    return TRUE;
}

gboolean ssim_parallel_resolve_layers(SsimParallel *par, const SsimModel *model, GError **error)
{
    g_return_val_if_fail(par != NULL && model != NULL, FALSE);
    if (!ssim_parallel_layers_pending(par))
        return TRUE;
    const char *rule = layers_rule(par);
    gboolean counts_given = par->first_stage_layers > 0 || par->last_stage_layers > 0;
    gboolean layers_counted = par->embedding_in_split || par->loss_in_split;
    guint pp = par->pp, v = par->virtual_stages;
    guint64 chunks = (guint64)pp * v;
    if (ssim_parallel_uneven(par))
        FAIL("%s: stage_layers already gives every stage's layers; give one or the other", rule);
    if (par->balance_layers && (counts_given || layers_counted))
        FAIL("stage_layers=balanced: contradicts %s: balanced chooses every chunk's layers itself",
             counts_given ? (par->first_stage_layers ? "first_stage_layers" : "last_stage_layers")
                          : (par->embedding_in_split ? "embedding_in_split" : "loss_in_split"));
    if (counts_given && layers_counted)
        FAIL("%s: contradicts %s: give the first or last stage's layers or count the "
             "embedding and loss as layers, not both (Megatron-LM refuses them together)",
             rule, par->embedding_in_split ? "embedding_in_split" : "loss_in_split");
    if (pp == 1 && par->first_stage_layers > 0 && par->last_stage_layers > 0)
        FAIL("first_stage_layers: at pp = 1 the first stage is the last; give one of "
             "first_stage_layers and last_stage_layers");
    if (chunks > SSIM_PARALLEL_STAGES_MAX)
        FAIL("%s: pp x v = %" G_GUINT64_FORMAT " is more model chunks than an uneven split "
             "may list (%d)",
             rule, chunks, SSIM_PARALLEL_STAGES_MAX);
    guint16 out[SSIM_PARALLEL_STAGES_MAX] = {0};
    if (par->balance_layers) {
        if (!balanced_counts(par, model, out, error))
            return FALSE;
    } else if (counts_given) {
        guint counts[SSIM_PARALLEL_STAGES_MAX];
        if (!stage_counts(par, model, counts, error))
            return FALSE;
        for (guint s = 0; s < pp; s++) {
            if (counts[s] % v != 0)
                FAIL("%s: stage %u's %u layers do not split evenly over its v = %u model "
                     "chunks",
                     s == 0 && par->first_stage_layers       ? "first_stage_layers"
                     : s == pp - 1 && par->last_stage_layers ? "last_stage_layers"
                                                             : rule,
                     s, counts[s], v);
            for (guint c = 0; c < v; c++)
                out[c * pp + s] = (guint16)(counts[s] / v);
        }
    } else {
        guint64 total = (guint64)model->layers + par->embedding_in_split + par->loss_in_split;
        if (total % chunks != 0)
            FAIL("%s: the %u layers of %s%s%s make %" G_GUINT64_FORMAT ", which pp x v = %u "
                 "x %u model chunks cannot share evenly",
                 rule, model->layers, model->name,
                 par->embedding_in_split ? " and the embedding" : "",
                 par->loss_in_split ? " and the loss" : "", total, pp, v);
        for (guint j = 0; j < chunks; j++)
            out[j] = (guint16)(total / chunks);
        out[0] -= par->embedding_in_split;
        out[chunks - 1] -= par->loss_in_split;
        if (out[0] == 0 || out[chunks - 1] == 0)
            FAIL("%s: the %s model chunk would hold the %s and no transformer layer, which "
                 "shiftsim does not model (give fewer stages or virtual stages)",
                 rule, out[0] == 0 ? "first" : "last", out[0] == 0 ? "embedding" : "loss");
    }
    for (guint j = 0; j < chunks; j++)
        if (out[j] == 0)
            FAIL("%s: model chunk %u (stage %u) would hold no transformer "
                 "layer, which shiftsim does not model",
                 rule, j, j % pp);
    gboolean even = TRUE;
    for (guint j = 1; j < chunks; j++)
        even = even && out[j] == out[0];
    memset(par->stage_layers, 0, sizeof par->stage_layers);
    if (!even)
        memcpy(par->stage_layers, out, sizeof(guint16) * chunks);
    par->layers_balanced = par->balance_layers;
    par->first_stage_layers = par->last_stage_layers = 0;
    par->embedding_in_split = par->loss_in_split = par->balance_layers = FALSE;
    return TRUE;
}

gboolean ssim_parallel_set_recompute(SsimParallel *par, const SsimModel *model, SsimRecompute mode,
                                     GError **error)
{
    g_return_val_if_fail(par != NULL && model != NULL, FALSE);
    SsimParallel p = *par;
    p.recompute = mode;
    if (p.layers_balanced) {
        memset(p.stage_layers, 0, sizeof p.stage_layers);
        p.balance_layers = TRUE;
        if (!ssim_parallel_resolve_layers(&p, model, error))
            return FALSE;
    }
    *par = p;
    return TRUE;
}

/* ---- validation ------------------------------------------------------------------------- */

static gboolean order_is_permutation(const SsimParallel *par)
{
    guint seen = 0;
    for (guint i = 0; i < SSIM_AXIS_N; i++) {
        if ((guint)par->order[i] >= SSIM_AXIS_N)
            return FALSE;
        seen |= 1u << par->order[i];
    }
    return seen == 7u;
}

/* Every tensor-parallel group lies in one node. */
static gboolean check_tp_in_node(const SsimParallel *par, const SsimCluster *cluster,
                                 GError **error)
{
    if (par->tp == 1 || par->allow_cross_node_tp)
        return TRUE;
    if (par->tp > cluster->gpus_per_node)
        FAIL("tp within a node: tp (%u) is larger than the GPUs per node (%u); set "
             "cross_node_tp=on (--cross-node-tp) to allow tensor parallelism across nodes",
             par->tp, cluster->gpus_per_node);
    g_autofree guint *ranks = g_new(guint, par->tp);
    guint world = ssim_parallel_world(par);
    for (guint r = 0; r < world; r++) {
        SsimCoord c = ssim_parallel_coord(par, r);
        if (c.tp != 0)
            continue;
        ssim_parallel_group(par, r, SSIM_AXIS_TP, ranks);
        guint node = ssim_cluster_node_of(cluster, ranks[0]);
        for (guint i = 1; i < par->tp; i++) {
            guint other = ssim_cluster_node_of(cluster, ranks[i]);
            if (other != node)
                FAIL("tp within a node: the tp group of ranks %u..%u spans nodes %u and %u "
                     "(%u GPUs per node, order %s-%s-%s); put tp innermost, make tp divide the "
                     "GPUs per node, or set cross_node_tp=on (--cross-node-tp)",
                     ranks[0], ranks[par->tp - 1], node, other, cluster->gpus_per_node,
                     ssim_axis_name(par->order[0]), ssim_axis_name(par->order[1]),
                     ssim_axis_name(par->order[2]));
        }
    }
    return TRUE;
}

gboolean ssim_parallel_validate(const SsimParallel *par, const SsimModel *model,
                                const SsimCluster *cluster, GError **error)
{
    g_return_val_if_fail(par != NULL && model != NULL, FALSE);
    static const char *const size_names[] = {"dp", "tp",         "pp",          "cp",
                                             "v",  "microbatch", "global_batch"};
    const guint sizes[] = {par->dp,         par->tp,          par->pp, par->cp, par->virtual_stages,
                           par->microbatch, par->global_batch};
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++)
        if (sizes[i] == 0)
            FAIL("%s >= 1: %s is 0", size_names[i], size_names[i]);
    if (par->zero_stage > 3)
        FAIL("zero in {0, 1, 2, 3}: ZeRO stage %u does not exist", par->zero_stage);
    if (par->zero_stage >= 2 && par->dp_bucket_bytes > 0)
        FAIL("bucket: ZeRO stage %u reduces each layer's gradients as its backward ends, every "
             "microbatch; a gradient bucket is for stages 0 and 1 (bucket off)",
             par->zero_stage);
    if (!order_is_permutation(par))
        FAIL("order: the rank order must name tp, dp and pp once each");
    if (par->schedule[0] == '\0')
        FAIL("schedule: must not be empty");
    if (par->placement[0] == '\0')
        FAIL("placement: must not be empty");
    if ((guint)par->recompute >= SSIM_RECOMPUTE_N || (guint)par->tp_comm >= SSIM_TP_COMM_N)
        FAIL("recompute/tp_comm: value out of range");
    if ((guint)par->fp8 >= SSIM_FP8_N)
        FAIL("fp8: value out of range");
    if ((guint)par->cross_entropy >= SSIM_CROSS_ENTROPY_N)
        FAIL("cross_entropy: value out of range");
    if ((guint)par->transformer_impl >= SSIM_TRANSFORMER_IMPL_N ||
        (guint)par->rmsnorm >= SSIM_RMSNORM_N)
        FAIL("transformer_impl/rmsnorm: value out of range");
    if (par->rmsnorm != SSIM_RMSNORM_AUTO && model->norm != SSIM_NORM_RMSNORM)
        FAIL("rmsnorm: %s applies to a model whose norm is rmsnorm, and %s's is %s (leave "
             "rmsnorm at auto)",
             ssim_rmsnorm_name(par->rmsnorm), model->name, ssim_norm_name(model->norm));

    guint64 world = (guint64)par->dp * par->cp * par->tp * par->pp;
    if (cluster != NULL && world != ssim_cluster_n_gpus(cluster)) {
        /* cp is named only where it is set. */
        g_autofree char *cp = par->cp > 1 ? g_strdup_printf("%u*", par->cp) : g_strdup("");
        FAIL("dp*%stp*pp != GPUs: %u*%s%u*%u = %" G_GUINT64_FORMAT " but cluster %s has %u GPUs "
             "(%u node%s x %u)",
             par->cp > 1 ? "cp*" : "", par->dp, cp, par->tp, par->pp, world, cluster->name,
             ssim_cluster_n_gpus(cluster), cluster->nodes, cluster->nodes == 1 ? "" : "s",
             cluster->gpus_per_node);
    }
    /* Before anything loops over the ranks (check_tp_in_node below, the lowering). */
    if (world > SSIM_MAX_GPUS)
        FAIL("dp*cp*tp*pp: %" G_GUINT64_FORMAT " GPUs is over the limit of %u GPUs", world,
             SSIM_MAX_GPUS);

    /* Context parallelism is Transformer Engine's attention over a ring of cp GPUs (Megatron-LM
     * asserts its fused or flash backends), on 2 cp chunks of each sequence, a GPU the i-th and
     * the (2 cp - 1 - i)-th for an even share of the causal work. */
    if (par->cp > 1) {
        if (par->attention != SSIM_ATTENTION_FLASH)
            FAIL("cp > 1 needs attention = flash: context parallelism runs Transformer Engine's "
                 "fused attention over a ring of GPUs (cp = %u, attention %s)",
                 par->cp, ssim_attention_name(par->attention));
        if (model->seq_len % (2 * par->cp) != 0)
            FAIL("seq_len %% (2*cp) != 0: the sequence (%u) of %s is split into 2 cp = %u "
                 "chunks (Megatron-LM's load balancing), and %u is not a multiple of %u",
                 model->seq_len, model->name, 2 * par->cp, model->seq_len, 2 * par->cp);
        if (ssim_model_windowed_share(model) > 0 && model->sliding_window < model->seq_len)
            FAIL("cp > 1 with a sliding window (%s: %u tokens) is not modelled: the ring's "
                 "chunks would skip the keys the window leaves out",
                 model->name, model->sliding_window);
        if (ssim_parallel_compiled(par))
            FAIL("cp > 1 needs an eager schedule (1f1b, gpipe, interleaved: Megatron-LM's "
                 "context parallelism); schedule %s runs compiled programs (give schedule 1f1b "
                 "or interleaved)",
                 par->schedule);
    }

    if (model->heads % par->tp != 0)
        FAIL("heads %% tp != 0: heads (%u) of %s is not divisible by tp (%u)", model->heads,
             model->name, par->tp);
    if (model->kv_heads % par->tp != 0)
        FAIL("kv_heads %% tp != 0: kv_heads (%u) of %s is not divisible by tp (%u) "
             "(Megatron-LM splits the key-value heads over tp, replicating none: a tp that "
             "divides %u)",
             model->kv_heads, model->name, par->tp, model->kv_heads);
    if (model->ffn % par->tp != 0)
        FAIL("ffn %% tp != 0: ffn (%u) of %s is not divisible by tp (%u)", model->ffn, model->name,
             par->tp);
    guint64 chunks = (guint64)par->pp * par->virtual_stages;
    if (ssim_parallel_layers_pending(par))
        FAIL("%s: not yet counted into each stage's layers (ssim_parallel_resolve_layers() needs "
             "the model)",
             layers_rule(par));
    if (ssim_parallel_uneven(par)) {
        guint n = ssim_parallel_stage_layers_n(par), sum = 0;
        for (guint j = 0; j < n; j++)
            sum += par->stage_layers[j];
        if (chunks > SSIM_PARALLEL_STAGES_MAX)
            FAIL("stage_layers: pp x v = %" G_GUINT64_FORMAT " is more model chunks than an "
                 "uneven split may list (%d)",
                 chunks, SSIM_PARALLEL_STAGES_MAX);
        if (par->virtual_stages == 1 && n != par->pp)
            FAIL("stage_layers: %u entries for pp = %u stages; give one layer count per stage", n,
                 par->pp);
        if (par->virtual_stages > 1 && n != chunks)
            FAIL("stage_layers: %u entries for pp x v = %u x %u = %" G_GUINT64_FORMAT " model "
                 "chunks; with v > 1 give one layer count per chunk, in pipeline order (chunk j "
                 "on stage j %% pp)",
                 n, par->pp, par->virtual_stages, chunks);
        if (sum != model->layers)
            FAIL("stage_layers: the stages hold %u layers but %s has %u", sum, model->name,
                 model->layers);
    } else if (model->layers % chunks != 0)
        FAIL("layers %% (pp*v) != 0: layers (%u) of %s is not divisible by pp*v = %u*%u = "
             "%" G_GUINT64_FORMAT "; give each stage's layers (stage_layers, or "
             "stage_layers=balanced), the first and last stage's (first_stage_layers, "
             "last_stage_layers) or count the embedding and loss as layers (embedding_in_split, "
             "loss_in_split)",
             model->layers, model->name, par->pp, par->virtual_stages, chunks);

    if (par->recompute_layers > 0 && par->recompute != SSIM_RECOMPUTE_FULL)
        FAIL("recompute_layers needs recompute full: it recomputes the forward of %u layers of "
             "each chunk (Megatron-LM's --recompute-method block), and recompute is %s",
             par->recompute_layers, ssim_recompute_name(par->recompute));
    if (par->recompute_layers > ssim_parallel_layers_per_chunk(par, model))
        FAIL("recompute_layers: %u is more than the %u layers of a model chunk (give at most "
             "%u, or 0 for all)",
             par->recompute_layers, ssim_parallel_layers_per_chunk(par, model),
             ssim_parallel_layers_per_chunk(par, model));

    guint64 per_step = (guint64)par->dp * par->microbatch;
    if (par->global_batch % per_step != 0)
        FAIL("global_batch %% (dp*microbatch) != 0: global batch %u is not divisible by "
             "dp*microbatch = %u*%u = %" G_GUINT64_FORMAT,
             par->global_batch, par->dp, par->microbatch, per_step);
    guint m = ssim_parallel_n_microbatches(par);

    if (par->virtual_stages > 1 && par->pp == 1)
        FAIL("interleaved needs pp > 1: v = %u model chunks per GPU with pp = 1",
             par->virtual_stages);
    if (par->virtual_stages > 1 && m % par->pp != 0)
        FAIL("interleaved needs m %% pp == 0: %u microbatches (global batch %u / (dp %u * "
             "microbatch %u)) is not a multiple of pp (%u)",
             m, par->global_batch, par->dp, par->microbatch, par->pp);

    if (par->sequence_parallel && par->tp == 1)
        FAIL("sequence parallelism needs tp > 1: sp is on with tp = 1");
    if (par->sequence_parallel && par->tp_comm != SSIM_TP_COMM_RS_AG)
        FAIL("sequence parallelism needs tp_comm = rs-ag: sp is on with tp_comm = %s",
             ssim_tp_comm_name(par->tp_comm));

    /* FP8 GEMMs are Transformer Engine's (Megatron-LM: --fp8-format needs --bf16 or --fp16 and
     * --transformer-impl transformer_engine), on tensor cores that have FP8. */
    if (par->fp8 != SSIM_FP8_OFF) {
        if (par->transformer_impl != SSIM_TRANSFORMER_IMPL_TE)
            FAIL("fp8 needs transformer_impl = transformer_engine: FP8 GEMMs are Transformer "
                 "Engine's layers, and transformer_impl is %s",
                 ssim_transformer_impl_name(par->transformer_impl));
        if (model->dtype != SSIM_DTYPE_BF16 && model->dtype != SSIM_DTYPE_FP16)
            FAIL("fp8 needs a bf16 or fp16 model: FP8 runs the GEMMs of a mixed-precision model, "
                 "and %s trains in %s",
                 model->name, ssim_dtype_name(model->dtype));
        if (cluster != NULL && !(ssim_cluster_peak_flops(cluster, SSIM_DTYPE_FP8) > 0))
            FAIL("fp8 needs FP8 tensor cores: cluster %s (%s) gives no peak_tflops_fp8",
                 cluster->name, cluster->gpu);
    }

    /* Megatron-LM: "Tensor parallel communication/GEMM overlap can happen only when sequence
     * parallelism is enabled", and it is Transformer Engine's (userbuffers). */
    if (par->tp_comm_overlap) {
        if (par->transformer_impl != SSIM_TRANSFORMER_IMPL_TE)
            FAIL("tp_comm_overlap needs transformer_impl = transformer_engine: the overlap is "
                 "Transformer Engine's (userbuffers), and transformer_impl is %s",
                 ssim_transformer_impl_name(par->transformer_impl));
        if (par->tp > 1 && !par->sequence_parallel)
            FAIL("tp_comm_overlap needs sequence parallelism: it overlaps the all-gathers and "
                 "reduce-scatters of sp with the GEMMs (tp = %u, sp off)",
                 par->tp);
    }

    /* DeepSpeed's BF16_Optimizer casts a microbatch's gradient before adding it into the fp32
     * gradient, in the accumulation's own kernels: nothing to cast without them. */
    const guint costs = ssim_parallel_step_costs(par, model);
    const guint cast_needs = (1u << SSIM_STEP_COST_GRAD_ACCUM) | (1u << SSIM_STEP_COST_GRAD_FP32);
    if (((costs >> SSIM_STEP_COST_GRAD_CAST) & 1u) && (costs & cast_needs) != cast_needs)
        FAIL("step cost grad_cast (each microbatch's gradient cast to fp32 before it is added, "
             "DeepSpeed's BF16_Optimizer) needs grad_accum and grad_fp32 on: the cast is part of "
             "an accumulation into fp32 gradients (step_costs=+grad_accum/+grad_cast)");

    /* CUDA_LAUNCH_BLOCKING blocks eager PyTorch's host; XLA's runtime runs compiled programs. */
    if (par->launch_blocking && ssim_parallel_compiled(par))
        FAIL("launch_blocking blocks an eager host's launches (schedules 1f1b, gpipe, "
             "interleaved: Megatron-LM); schedule %s runs compiled programs, which have none",
             par->schedule);

    /* Megatron-LM: "--overlap-param-gather only supported with distributed optimizer"; the
     * all-gather it moves is ZeRO-1 and 2's (ZeRO-3 gathers every pass already). */
    if (par->overlap_param_gather) {
        if (par->zero_stage < 1 || par->zero_stage > 2)
            FAIL("overlap_param_gather needs ZeRO 1 or 2 (Megatron-LM's distributed optimizer, "
                 "whose weights' all-gather it overlaps with the next step's forward); zero is %u",
                 par->zero_stage);
        if (ssim_parallel_compiled(par))
            FAIL("overlap_param_gather is Megatron-LM's (schedules 1f1b, gpipe, interleaved); "
                 "schedule %s runs compiled programs",
                 par->schedule);
    }

    /* torchtitan's wrapping of FSDP2: the root unit is the model's without its layers, one
     * stage's (torchtitan without pipeline parallelism). */
    if (par->fsdp_root && par->zero_stage != 3)
        FAIL("fsdp_root is FSDP2's root unit as torchtitan wraps it, which needs zero 3 (every "
             "weight sharded); zero is %u",
             par->zero_stage);
    if (par->fsdp_root && par->pp != 1)
        FAIL("fsdp_root is FSDP2's root unit as torchtitan wraps it without a pipeline, which "
             "needs pp 1; pp is %u",
             par->pp);

    /* Megatron-LM defers the head's weight gradient to the pipeline's flush, accumulated into
     * its main gradient (gradient-accumulation fusion), and Megatron-Bridge turns it off under
     * FSDP. */
    if (par->defer_head_wgrad > 0) {
        if (par->pp == 1)
            FAIL("defer_embedding_wgrad needs pp > 1: the LM head's weight gradient is deferred to "
                 "the pipeline's flush, and there is no pipeline (pp = 1)");
        if (ssim_parallel_compiled(par))
            FAIL("defer_embedding_wgrad is Megatron-LM's (schedules 1f1b, gpipe, interleaved); "
                 "schedule %s runs compiled programs",
                 par->schedule);
        if (par->zero_stage >= 2)
            FAIL("defer_embedding_wgrad needs ZeRO 0 or 1: ZeRO %u reduces each unit's gradients "
                 "as its backward ends (Megatron-Bridge turns the deferral off under FSDP)",
                 par->zero_stage);
        if ((costs >> SSIM_STEP_COST_GRAD_ACCUM) & 1u)
            FAIL("defer_embedding_wgrad needs the weight gradients accumulated in their GEMMs "
                 "(gradient-accumulation fusion): step cost grad_accum is on");
    }

    if (cluster != NULL && !check_tp_in_node(par, cluster, error))
        return FALSE;
    return TRUE;
}

#undef FAIL

/* ---- suggestion ------------------------------------------------------------------------- */

guint ssim_parallel_default_global_batch(guint gpus, guint dp, guint microbatch)
{
    guint64 batch = (guint64)SSIM_DEFAULT_SEQUENCES_PER_GPU * MAX(gpus, 1u);
    guint64 per_step = (guint64)MAX(dp, 1u) * MAX(microbatch, 1u);
    batch = (batch + per_step - 1) / per_step * per_step;
    return (guint)MIN(batch, (guint64)G_MAXUINT);
}

/* Static bytes (16 per parameter) on the fullest stage's GPU, for tp and pp. */
static double static_bytes(const SsimModel *model, guint tp, guint pp)
{
    guint64 most = 0;
    for (guint s = 0; s < pp; s++)
        most = MAX(most, ssim_model_stage_params(model, pp, s));
    return 16.0 * (double)most / tp;
}

gboolean ssim_parallel_suggest(SsimParallel *par, const SsimModel *model,
                               const SsimCluster *cluster, GError **error)
{
    g_return_val_if_fail(par != NULL && model != NULL && cluster != NULL, FALSE);
    guint world = ssim_cluster_n_gpus(cluster);
    double budget = 0.4 * (double)cluster->hbm_bytes;
    guint best_tp = 0, best_pp = 0, max_tp = 0;

    for (guint tp = 1; tp <= cluster->gpus_per_node && tp <= world; tp *= 2) {
        if (model->heads % tp || model->kv_heads % tp || model->ffn % tp || world % tp ||
            cluster->gpus_per_node % tp)
            continue;
        max_tp = tp;
        if (best_tp == 0 && static_bytes(model, tp, 1) <= budget)
            best_tp = tp, best_pp = 1;
    }
    if (best_tp == 0 && max_tp != 0) {
        /* pp divides world / max_tp, so the loop stops there however many layers there are. */
        for (guint pp = 2; pp <= model->layers && pp <= world / max_tp && best_pp == 0; pp++) {
            if (model->layers % pp || (world / max_tp) % pp)
                continue;
            if (static_bytes(model, max_tp, pp) <= budget)
                best_tp = max_tp, best_pp = pp;
        }
    }
    if (best_tp == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "suggest: no dp x tp x pp split of %u GPUs holds the weights, gradients and "
                    "optimizer state of %s (16 bytes/param) in 40%% of %s's memory",
                    world, model->name, cluster->gpu);
        return FALSE;
    }
    par->tp = best_tp;
    par->pp = best_pp;
    par->dp = world / (best_tp * best_pp);
    par->virtual_stages = 1;
    par->microbatch = 1;
    par->global_batch = ssim_parallel_default_global_batch(world, par->dp, 1);
    return ssim_parallel_validate(par, model, cluster, error);
}
