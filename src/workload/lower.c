/*
 * Lowering (see include/shiftsim/lower.h for the op lists, streams, classes and rank modes).
 *
 * The per-layer work does not depend on the layer or the microbatch, so the lowering first builds
 * small "programs" -- arrays of steps (a kernel with FLOPs and bytes, or a TP collective) for a
 * layer's forward, its recompute and its backward, the embedding and the LM head -- and then, for
 * every emitted rank, walks the schedule's phases and replays the programs into the graph.  A
 * rank's ops are added in issue order, which is each stream's order; explicit dependencies only
 * point at earlier ops of the same rank (across ranks, the graph's collective and send/receive
 * matching is the only coupling), so the graph is acyclic by construction.
 *
 * Invariants the emitter keeps: every kernel waits for the ops in `pending` (a receive, a
 * blocking collective, the DP reductions before the optimizer); a communication op waits for the
 * last kernel issued on its rank and for whatever that kernel would have waited for; a
 * collective with overlap k stays out of `pending` until k more kernels have been issued.
 * Send/receive pairs carry explicit tags ((direction * p v + destination virtual stage) * m +
 * microbatch), so pairing cannot depend on the order in which the two directions interleave.
 *
 * The emitter writes points and roles only through the plan's checked setters (plan.h).  A
 * setter's refusal here is a bug in the lowering, not a property of the input (which was
 * validated before), so must() stops with the plan's message rather than turning it into a
 * configuration error.
 */
#include <shiftsim/lower.h>

#include <stdlib.h>
#include <string.h>

/* ---- programs ---------------------------------------------------------------------------- */

typedef enum { ST_KERNEL, ST_TP } StepKind;

typedef struct {
    guint8 kind;    /* StepKind */
    guint8 coll;    /* SsimCollKind of a TP step */
    guint8 overlap; /* TP step: kernels after it that do not wait for it (0 = blocking) */
    const char *name;
    double flops;
    guint64 bytes;
    guint64 grad_bytes; /* weight-gradient bytes this kernel completes */
} Step;

typedef struct {
    GArray *layer_fwd, *layer_recompute, *layer_bwd;
    GArray *embed_fwd, *embed_bwd, *head_fwd, *head_bwd;
} Programs;

static GArray *prog_new(void)
{
    return g_array_new(FALSE, TRUE, sizeof(Step));
}

static void kernel_step(GArray *p, const char *name, double flops, guint64 bytes, guint64 grad)
{
    Step st = {.kind = ST_KERNEL, .name = name, .flops = flops, .bytes = bytes, .grad_bytes = grad};
    g_array_append_val(p, st);
}

static void tp_step(GArray *p, SsimCollKind coll, guint64 bytes, guint overlap)
{
    static const char *const names[SSIM_COLL_N] = {
#define SSIM_X(e, s) [SSIM_COLL_##e] = "tp." s,
        SSIM_COLL_LIST(SSIM_X)
#undef SSIM_X
    };
    Step st = {.kind = ST_TP,
               .coll = (guint8)coll,
               .overlap = (guint8)overlap,
               .name = names[coll],
               .bytes = bytes};
    g_array_append_val(p, st);
}

typedef struct {
    guint tp;
    gboolean sp;   /* sequence parallel: norms and residuals sharded, RS/AG at g/f */
    gboolean rsag; /* reduce-scatter + all-gather instead of all-reduce */
    guint64 S;     /* bytes of a full b s h activation */
} TpStyle;

/* The collective(s) at a "g" (forward output of a row-parallel GEMM). */
static void tp_g_forward(GArray *p, const TpStyle *ts)
{
    if (ts->tp <= 1)
        return;
    if (ts->sp) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, 0);
    } else if (ts->rsag) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, 0);
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, 0);
    } else {
        tp_step(p, SSIM_COLL_ALLREDUCE, ts->S, 0);
    }
}

/* Forward "f" (input of a column-parallel GEMM): an all-gather under SP, nothing otherwise. */
static void tp_f_forward(GArray *p, const TpStyle *ts)
{
    if (ts->tp > 1 && ts->sp)
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, 0);
}

/* Backward of "g": an all-gather of the output gradient under SP. */
static void tp_g_backward(GArray *p, const TpStyle *ts)
{
    if (ts->tp > 1 && ts->sp)
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, 0);
}

/* Backward of "f": the input gradient's reduction, overlapping `overlap` weight-grad kernels. */
static void tp_f_backward(GArray *p, const TpStyle *ts, guint overlap)
{
    if (ts->tp <= 1)
        return;
    if (ts->sp) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, overlap);
    } else if (ts->rsag) {
        tp_step(p, SSIM_COLL_REDUCESCATTER, ts->S, overlap);
        tp_step(p, SSIM_COLL_ALLGATHER, ts->S, overlap);
    } else {
        tp_step(p, SSIM_COLL_ALLREDUCE, ts->S, overlap);
    }
}

static guint64 cdiv(guint64 a, guint64 b)
{
    return (a + b - 1) / b;
}

static void programs_clear(Programs *pr)
{
    GArray **all[] = {&pr->layer_fwd, &pr->layer_recompute, &pr->layer_bwd, &pr->embed_fwd,
                      &pr->embed_bwd, &pr->head_fwd,        &pr->head_bwd};
    for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
        if (*all[i]) {
            g_array_free(*all[i], TRUE);
            *all[i] = NULL;
        }
}

static void programs_build(Programs *pr, const SsimModel *model, const SsimParallel *par)
{
    const guint64 dt = ssim_dtype_size(model->dtype);
    const guint64 t = par->tp, b = par->microbatch, s = model->seq_len, h = model->hidden;
    const guint64 T = b * s;
    const gboolean sp = par->sequence_parallel && t > 1;
    const guint64 Tl = sp ? cdiv(T, t) : T;
    const guint64 E = b * cdiv(model->heads, t) * s * s;
    /* Attention dropout rides on the softmax kernels: the forward reads the probabilities and
     * writes the dropped ones and a byte mask, the backward reads the gradient and the mask and
     * writes the gradient (and a full recompute repeats the forward's share). */
    const guint64 D = model->attention_dropout ? E * (2 * dt + 1) : 0;
    const guint64 F = cdiv(model->ffn, t);
    const guint64 g = ssim_activation_is_gated(model->activation) ? 2 : 1;
    const guint64 Vt = cdiv(model->vocab, t);
    TpStyle ts = {
        .tp = (guint)t, .sp = sp, .rsag = par->tp_comm == SSIM_TP_COMM_RS_AG, .S = T * h * dt};

    SsimGemm qkv = ssim_model_gemm(model, SSIM_GEMM_QKV, par->microbatch, par->tp);
    SsimGemm score = ssim_model_gemm(model, SSIM_GEMM_ATTN_SCORE, par->microbatch, par->tp);
    SsimGemm ctx = ssim_model_gemm(model, SSIM_GEMM_ATTN_CONTEXT, par->microbatch, par->tp);
    SsimGemm out = ssim_model_gemm(model, SSIM_GEMM_ATTN_OUT, par->microbatch, par->tp);
    SsimGemm up = ssim_model_gemm(model, SSIM_GEMM_FFN_UP, par->microbatch, par->tp);
    SsimGemm down = ssim_model_gemm(model, SSIM_GEMM_FFN_DOWN, par->microbatch, par->tp);
    SsimGemm head = ssim_model_gemm(model, SSIM_GEMM_LM_HEAD, par->microbatch, par->tp);

    /* Weight-gradient bytes: each matrix's own, and the layer's small rest (norms, biases) with
     * the last weight gradient of the layer's backward. */
    guint64 w_qkv = qkv.k * qkv.n * dt, w_out = out.k * out.n * dt;
    guint64 w_up = up.k * up.n * dt, w_down = down.k * down.n * dt;
    guint64 layer_grad = ssim_model_layer_params(model) / t * dt;
    guint64 rest = layer_grad > w_qkv + w_out + w_up + w_down
                       ? layer_grad - (w_qkv + w_out + w_up + w_down)
                       : 0;

    pr->layer_fwd = prog_new();
    pr->layer_recompute = prog_new();
    pr->layer_bwd = prog_new();
    GArray *f = pr->layer_fwd, *bw = pr->layer_bwd;
    if (model->block == SSIM_BLOCK_PARALLEL) {
        kernel_step(f, "norm", 0, 2 * Tl * h * dt, 0);
        tp_f_forward(f, &ts);
        kernel_step(f, "qkv", qkv.flops, qkv.bytes, 0);
        kernel_step(f, "attn_score", score.flops, score.bytes, 0);
        kernel_step(f, "softmax", 0, 4 * E * dt + D, 0);
        kernel_step(f, "attn_ctx", ctx.flops, ctx.bytes, 0);
        kernel_step(f, "attn_out", out.flops, out.bytes, 0);
        kernel_step(f, "ffn_up", up.flops, up.bytes, 0);
        kernel_step(f, "act", 0, (g + 1) * T * F * dt, 0);
        kernel_step(f, "ffn_down", down.flops, down.bytes, 0);
        kernel_step(f, "branch_add", 0, 3 * T * h * dt, 0);
        tp_g_forward(f, &ts);
        kernel_step(f, "residual", 0, 3 * Tl * h * dt, 0);

        kernel_step(bw, "residual.bwd", 0, 3 * Tl * h * dt, 0);
        tp_g_backward(bw, &ts);
        kernel_step(bw, "ffn_down.dgrad", down.flops, down.bytes, 0);
        kernel_step(bw, "ffn_down.wgrad", down.flops, down.bytes, w_down);
        kernel_step(bw, "act.bwd", 0, (2 * g + 1) * T * F * dt, 0);
        kernel_step(bw, "ffn_up.dgrad", up.flops, up.bytes, 0);
        kernel_step(bw, "attn_out.dgrad", out.flops, out.bytes, 0);
        kernel_step(bw, "attn_out.wgrad", out.flops, out.bytes, w_out);
        kernel_step(bw, "attn_ctx.bwd", 2 * ctx.flops, 2 * ctx.bytes, 0);
        kernel_step(bw, "softmax.bwd", 0, 3 * E * dt + D, 0);
        kernel_step(bw, "attn_score.bwd", 2 * score.flops, 2 * score.bytes, 0);
        kernel_step(bw, "qkv.dgrad", qkv.flops, qkv.bytes, 0);
        kernel_step(bw, "branch_add.bwd", 0, 3 * T * h * dt, 0);
        tp_f_backward(bw, &ts, 2);
        kernel_step(bw, "ffn_up.wgrad", up.flops, up.bytes, w_up);
        kernel_step(bw, "qkv.wgrad", qkv.flops, qkv.bytes, w_qkv + rest);
        kernel_step(bw, "norm.bwd", 0, 4 * Tl * h * dt, 0);
    } else {
        kernel_step(f, "norm1", 0, 2 * Tl * h * dt, 0);
        tp_f_forward(f, &ts);
        kernel_step(f, "qkv", qkv.flops, qkv.bytes, 0);
        kernel_step(f, "attn_score", score.flops, score.bytes, 0);
        kernel_step(f, "softmax", 0, 4 * E * dt + D, 0);
        kernel_step(f, "attn_ctx", ctx.flops, ctx.bytes, 0);
        kernel_step(f, "attn_out", out.flops, out.bytes, 0);
        tp_g_forward(f, &ts);
        kernel_step(f, "residual1", 0, 3 * Tl * h * dt, 0);
        kernel_step(f, "norm2", 0, 2 * Tl * h * dt, 0);
        tp_f_forward(f, &ts);
        kernel_step(f, "ffn_up", up.flops, up.bytes, 0);
        kernel_step(f, "act", 0, (g + 1) * T * F * dt, 0);
        kernel_step(f, "ffn_down", down.flops, down.bytes, 0);
        tp_g_forward(f, &ts);
        kernel_step(f, "residual2", 0, 3 * Tl * h * dt, 0);

        kernel_step(bw, "residual2.bwd", 0, 3 * Tl * h * dt, 0);
        tp_g_backward(bw, &ts);
        kernel_step(bw, "ffn_down.dgrad", down.flops, down.bytes, 0);
        kernel_step(bw, "ffn_down.wgrad", down.flops, down.bytes, w_down);
        kernel_step(bw, "act.bwd", 0, (2 * g + 1) * T * F * dt, 0);
        kernel_step(bw, "ffn_up.dgrad", up.flops, up.bytes, 0);
        tp_f_backward(bw, &ts, 1);
        kernel_step(bw, "ffn_up.wgrad", up.flops, up.bytes, w_up);
        kernel_step(bw, "norm2.bwd", 0, 4 * Tl * h * dt, 0);
        kernel_step(bw, "residual1.bwd", 0, 3 * Tl * h * dt, 0);
        tp_g_backward(bw, &ts);
        kernel_step(bw, "attn_out.dgrad", out.flops, out.bytes, 0);
        kernel_step(bw, "attn_out.wgrad", out.flops, out.bytes, w_out);
        kernel_step(bw, "attn_ctx.bwd", 2 * ctx.flops, 2 * ctx.bytes, 0);
        kernel_step(bw, "softmax.bwd", 0, 3 * E * dt + D, 0);
        kernel_step(bw, "attn_score.bwd", 2 * score.flops, 2 * score.bytes, 0);
        kernel_step(bw, "qkv.dgrad", qkv.flops, qkv.bytes, 0);
        tp_f_backward(bw, &ts, 1);
        kernel_step(bw, "qkv.wgrad", qkv.flops, qkv.bytes, w_qkv + rest);
        kernel_step(bw, "norm1.bwd", 0, 4 * Tl * h * dt, 0);
    }

    if (par->recompute == SSIM_RECOMPUTE_FULL) {
        g_array_append_vals(pr->layer_recompute, f->data, f->len);
    } else if (par->recompute == SSIM_RECOMPUTE_SELECTIVE) {
        kernel_step(pr->layer_recompute, "attn_score", score.flops, score.bytes, 0);
        kernel_step(pr->layer_recompute, "softmax", 0, 4 * E * dt + D, 0);
        kernel_step(pr->layer_recompute, "attn_ctx", ctx.flops, ctx.bytes, 0);
    }

    /* Embedding: vocabulary-parallel lookup, reduced over tp; its gradient is a dense table. */
    guint64 emb_grad = ssim_model_embedding_params(model) / t * dt;
    pr->embed_fwd = prog_new();
    kernel_step(pr->embed_fwd, "embed", 0, 2 * T * h * dt, 0);
    tp_g_forward(pr->embed_fwd, &ts);
    pr->embed_bwd = prog_new();
    tp_g_backward(pr->embed_bwd, &ts);
    kernel_step(pr->embed_bwd, "embed.bwd", 0, 2 * T * h * dt + emb_grad, emb_grad);

    /* LM head: final norm, column-parallel head, vocabulary-parallel cross entropy (whose max,
     * sum and target logit are reduced over tp: three floats per token). */
    guint64 head_grad = 0;
    {
        guint64 stage_last = ssim_model_stage_params(model, par->pp, par->pp - 1);
        guint64 layers_last = (guint64)(model->layers / par->pp) * ssim_model_layer_params(model);
        guint64 emb_on_last = par->pp == 1 ? ssim_model_embedding_params(model) : 0;
        if (stage_last > layers_last + emb_on_last)
            head_grad = (stage_last - layers_last - emb_on_last) / t * dt;
    }
    pr->head_fwd = prog_new();
    kernel_step(pr->head_fwd, "final_norm", 0, 2 * Tl * h * dt, 0);
    tp_f_forward(pr->head_fwd, &ts);
    kernel_step(pr->head_fwd, "lm_head", head.flops, head.bytes, 0);
    kernel_step(pr->head_fwd, "loss", 0, 3 * T * Vt * dt, 0);
    if (t > 1)
        tp_step(pr->head_fwd, SSIM_COLL_ALLREDUCE, 3 * T * 4, 0);
    pr->head_bwd = prog_new();
    kernel_step(pr->head_bwd, "loss.bwd", 0, 2 * T * Vt * dt, 0);
    kernel_step(pr->head_bwd, "lm_head.dgrad", head.flops, head.bytes, 0);
    tp_f_backward(pr->head_bwd, &ts, 1);
    kernel_step(pr->head_bwd, "lm_head.wgrad", head.flops, head.bytes, head_grad);
    kernel_step(pr->head_bwd, "final_norm.bwd", 0, 4 * Tl * h * dt, 0);
}

/* ---- the lowered result ------------------------------------------------------------------ */

struct SsimLowered {
    SsimPlan *plan;   /* the placement-neutral description */
    SsimGraph *graph; /* the plan built under the current placement */
    GArray *plan_of;  /* guint32 plan op per graph op */
    gboolean exact;
    guint weight;
    GArray *global_of;   /* guint32 per graph rank */
    GArray *stage_of;    /* guint32 per graph rank */
    GArray *group_first; /* guint32 per group: offset into group_ranks; one extra at the end */
    GArray *group_ranks; /* guint32 logical members, flat */
    GArray *op_class;    /* guint8 SsimOpClass per op */
    SsimParallel par;    /* the split, for the copies of a representative */
};

void ssim_lowered_free(SsimLowered *l)
{
    if (l == NULL)
        return;
    ssim_graph_free(l->graph);
    ssim_plan_free(l->plan);
    GArray *arrays[] = {l->global_of,   l->stage_of, l->group_first,
                        l->group_ranks, l->op_class, l->plan_of};
    for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
        if (arrays[i])
            g_array_free(arrays[i], TRUE);
    g_free(l);
}

const SsimGraph *ssim_lowered_graph(const SsimLowered *l)
{
    return l->graph;
}

SsimPlan *ssim_lowered_plan(SsimLowered *l)
{
    return l->plan;
}

guint32 ssim_lowered_plan_op(const SsimLowered *l, guint32 op)
{
    g_return_val_if_fail(op < l->plan_of->len, SSIM_NONE);
    return g_array_index(l->plan_of, guint32, op);
}

/* Builds the graph of the plan's current placement (and its class and plan maps). */
static gboolean rebuild(SsimLowered *l, GError **error)
{
    GArray *cls = NULL, *pof = NULL;
    SsimGraph *g = ssim_plan_build(l->plan, &cls, &pof, error);
    if (g == NULL)
        return FALSE;
    ssim_graph_free(l->graph);
    if (l->op_class)
        g_array_free(l->op_class, TRUE);
    if (l->plan_of)
        g_array_free(l->plan_of, TRUE);
    l->graph = g;
    l->op_class = cls;
    l->plan_of = pof;
    return TRUE;
}

gboolean ssim_lowered_place(SsimLowered *l, const SsimPlacement *placement,
                            const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    if (!ssim_place_apply(l->plan, placement, eval, report, error))
        return FALSE;
    return rebuild(l, error);
}

guint64 ssim_lowered_extra_bytes(const SsimLowered *l)
{
    return ssim_plan_extra_bytes(l->plan);
}

gboolean ssim_lowered_exact(const SsimLowered *l)
{
    return l->exact;
}

guint ssim_lowered_weight(const SsimLowered *l)
{
    return l->weight;
}

guint32 ssim_lowered_copy_gpu(const SsimLowered *l, guint32 gpu, guint copy)
{
    g_return_val_if_fail(gpu < ssim_parallel_world(&l->par), SSIM_NONE);
    SsimCoord c = ssim_parallel_coord(&l->par, gpu);
    c.tp = (c.tp + copy % l->par.tp) % l->par.tp;
    c.dp = (c.dp + copy / l->par.tp) % l->par.dp;
    return ssim_parallel_rank(&l->par, c);
}

/* Sorts `a` and drops repeats; returns the new length. */
static guint sort_unique(guint32 *a, guint n)
{
    qsort(a, n, sizeof *a, ssim_cmp_u32);
    guint w = 0;
    for (guint i = 0; i < n; i++)
        if (w == 0 || a[i] != a[w - 1])
            a[w++] = a[i];
    return w;
}

/* TRUE when copy `copy` of every GPU of `set` (sorted, n) is in it again. */
static gboolean shift_keeps(const SsimLowered *l, const guint32 *set, guint n, guint copy,
                            guint32 *scratch)
{
    for (guint i = 0; i < n; i++)
        scratch[i] = ssim_lowered_copy_gpu(l, set[i], copy);
    qsort(scratch, n, sizeof *scratch, ssim_cmp_u32);
    return memcmp(scratch, set, n * sizeof *set) == 0;
}

/*
 * The periods of match `m` (its logical GPUs `set`, sorted, n): the least tp and dp shifts that
 * map the set onto itself; FALSE when the copies of its members do not make up the set exactly
 * (then some GPU of it would not be simulated, or one twice).
 */
static gboolean match_periods(const SsimLowered *l, guint32 m, guint32 *set, guint n,
                              guint32 period[2])
{
    const SsimGraph *g = l->graph;
    guint tp = l->par.tp, dp = l->par.dp;
    g_autofree guint32 *scratch = g_new(guint32, MAX(n, 1));
    period[0] = tp;
    period[1] = dp;
    for (guint d = 1; d < tp; d++)
        if (tp % d == 0 && shift_keeps(l, set, n, d, scratch)) {
            period[0] = d;
            break;
        }
    for (guint d = 1; d < dp; d++)
        if (dp % d == 0 && shift_keeps(l, set, n, d * tp, scratch)) {
            period[1] = d;
            break;
        }
    guint n_members, expected;
    const guint32 *members = ssim_graph_match_ops(g, m, &n_members, &expected);
    guint per = (tp / period[0]) * (dp / period[1]);
    if ((guint64)n_members * per != n)
        return FALSE;
    g_autofree guint32 *covered = g_new(guint32, MAX(n, 1));
    guint k = 0;
    for (guint j = 0; j < n_members; j++) {
        if (members[j] == SSIM_NONE)
            return FALSE;
        guint32 gpu = ssim_lowered_global_rank(l, ssim_graph_op(g, members[j])->rank);
        for (guint a = 0; a < tp; a += period[0])
            for (guint b = 0; b < dp; b += period[1])
                covered[k++] = ssim_lowered_copy_gpu(l, gpu, a + b * tp);
    }
    return sort_unique(covered, k) == n && memcmp(covered, set, n * sizeof *set) == 0;
}

guint32 *ssim_lowered_replication(const SsimLowered *l, SsimReplication *out, GError **error)
{
    const SsimGraph *g = l->graph;
    guint32 nm = ssim_graph_n_matches(g), ng = ssim_graph_n_groups(g);
    guint32 *period = g_new(guint32, 2 * (gsize)MAX(nm, 1));
    g_autofree guint32 *group_period = g_new0(guint32, 2 * (gsize)MAX(ng, 1));
    for (guint32 m = 0; m < nm; m++) {
        guint n_members, expected;
        const guint32 *members = ssim_graph_match_ops(g, m, &n_members, &expected);
        const SsimOp *op = ssim_graph_op(g, members[0]);
        gboolean p2p = op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV;
        if (!p2p && group_period[2 * op->group] != 0) {
            period[2 * m] = group_period[2 * op->group];
            period[2 * m + 1] = group_period[2 * op->group + 1];
            continue;
        }
        guint n;
        guint32 pair[2];
        const guint32 *logical = pair;
        if (p2p) {
            n = 0;
            for (guint j = 0; j < n_members; j++)
                if (members[j] != SSIM_NONE)
                    pair[n++] = ssim_lowered_global_rank(l, ssim_graph_op(g, members[j])->rank);
        } else {
            logical = ssim_lowered_group_ranks(l, op->group, &n);
        }
        g_autofree guint32 *set = g_memdup2(logical, sizeof(guint32) * MAX(n, 1));
        n = sort_unique(set, n);
        if (!match_periods(l, m, set, n, &period[2 * m])) {
            char label[128];
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "exact: %s on rank %u is not the same program on every GPU it stands "
                        "for, so it cannot be replicated (use the explicit exact graph)",
                        ssim_graph_op_label(g, members[0], label, sizeof label), op->rank);
            g_free(period);
            return NULL;
        }
        if (!p2p) {
            group_period[2 * op->group] = period[2 * m];
            group_period[2 * op->group + 1] = period[2 * m + 1];
        }
    }
    *out = (SsimReplication){.n_copies = l->weight, .stride = l->par.tp, .period = period};
    return period;
}

guint32 ssim_lowered_global_rank(const SsimLowered *l, guint32 rank)
{
    g_return_val_if_fail(rank < l->global_of->len, SSIM_NONE);
    return g_array_index(l->global_of, guint32, rank);
}

const guint32 *ssim_lowered_rank_map(const SsimLowered *l, guint *n)
{
    *n = l->global_of->len;
    return (const guint32 *)l->global_of->data;
}

guint ssim_lowered_stage(const SsimLowered *l, guint32 rank)
{
    g_return_val_if_fail(rank < l->stage_of->len, 0);
    return g_array_index(l->stage_of, guint32, rank);
}

const guint32 *ssim_lowered_group_ranks(const SsimLowered *l, guint32 group, guint *n)
{
    *n = 0;
    g_return_val_if_fail(group + 1 < l->group_first->len, NULL);
    guint32 a = g_array_index(l->group_first, guint32, group);
    guint32 b = g_array_index(l->group_first, guint32, group + 1);
    *n = b - a;
    return &g_array_index(l->group_ranks, guint32, a);
}

SsimOpClass ssim_lowered_op_class(const SsimLowered *l, guint32 op)
{
    g_return_val_if_fail(op < l->op_class->len, SSIM_OPCLASS_FWD);
    return (SsimOpClass)g_array_index(l->op_class, guint8, op);
}

double ssim_lowered_flops(const SsimLowered *l, gboolean with_recompute)
{
    double sum = 0;
    guint32 n = ssim_graph_n_ops(l->graph);
    for (guint32 i = 0; i < n; i++) {
        SsimOpClass c = ssim_lowered_op_class(l, i);
        if (c == SSIM_OPCLASS_RECOMPUTE && !with_recompute)
            continue;
        sum += ssim_graph_op(l->graph, i)->flops;
    }
    return sum * l->weight;
}

/* ---- emission ---------------------------------------------------------------------------- */

typedef struct {
    guint32 op;
    guint left;
} Deferred;

typedef struct {
    SsimLowered *L;
    SsimPlan *g;
    const SsimModel *model;
    const SsimParallel *par;
    const SsimSchedule *sched;
    const Programs *pr;
    GArray *graph_of; /* guint32 per global rank: its graph rank, or SSIM_NONE */
    guint m, pv;
    guint64 act_bytes; /* one pipeline transfer */
    GError *bug;       /* a setter's refusal of the lowering's own point: a bug (see the top) */

    /* Per-rank state. */
    guint32 rank, stage;
    SsimCoord coord;
    guint32 st_compute, st_tp, st_dp, st_pp, st_pp_sf, st_pp_rf, st_pp_sb, st_pp_rb;
    guint32 tp_group, dp_group, pp_group, emb_group;
    guint32 last;
    GArray *pending;         /* guint32 */
    GArray *deferred;        /* Deferred */
    GArray *dp_ops;          /* guint32 */
    GArray *open;            /* guint32: gradient pieces waiting for their bucket's issue point */
    GArray *permutes;        /* guint32 per lock-step slot of this rank: its permute, or NONE */
    GPtrArray *all_permutes; /* per graph rank: its `permutes` (owned) */
    guint64 bucket;
    guint32 site; /* gradient site counter of this rank */
    gboolean collect_grads;
} Emit;

/* Stops on a refusal of one of the plan's setters (see the top); `accepted` is its result. */
static void must(Emit *e, gboolean accepted)
{
    if (G_UNLIKELY(!accepted)) {
        g_assert_no_error(e->bug);
        g_assert_not_reached();
    }
}

/* Adds a plan op of this rank; a communication op is issued after `issue` (the lowering's
 * placement) and `order` lists earlier communication it must follow. */
static guint32 add(Emit *e, const SsimOpSpec *spec, SsimOpClass cls, guint32 issue,
                   const guint32 *order, guint n_order)
{
    SsimOpSpec sp = *spec;
    sp.cls = ssim_opclass_name(cls);
    guint32 idx = ssim_plan_add(e->g, &sp, e->rank, (guint8)cls, order, n_order);
    if (spec->kind != SSIM_OP_COMPUTE && issue != SSIM_NONE)
        must(e, ssim_plan_set_lowered_issue(e->g, idx, issue, &e->bug));
    return idx;
}

static guint32 stream(Emit *e, guint32 *cache, const char *name)
{
    if (*cache == SSIM_NONE)
        *cache = ssim_plan_stream(e->g, e->rank, name);
    return *cache;
}

static void kernel(Emit *e, const Step *st, SsimOpClass cls)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = SSIM_OP_COMPUTE;
    spec.stream = stream(e, &e->st_compute, "compute");
    spec.name = st->name;
    spec.flops = st->flops;
    spec.bytes = st->bytes;
    e->last = add(e, &spec, cls, SSIM_NONE, NULL, 0);
    /* This kernel is where the pending communication is waited for; it reads the result of all
     * of it but a lock-step permute of a slot whose successor receives nothing. */
    for (guint i = 0; i < e->pending->len; i++) {
        guint32 c = g_array_index(e->pending, guint32, i);
        const SsimPlanOp *o = ssim_plan_op(e->g, c);
        if (o->wait0 == SSIM_NONE)
            must(e, ssim_plan_set_lowered_wait(e->g, c, e->last, &e->bug));
        if (!(o->flags & SSIM_PLAN_PERMUTE) || o->recv_peer != SSIM_NONE)
            ssim_plan_data(e->g, c, e->last);
    }
    g_array_set_size(e->pending, 0);
    for (guint i = 0; i < e->deferred->len;) {
        Deferred *d = &g_array_index(e->deferred, Deferred, i);
        if (--d->left == 0) {
            g_array_append_val(e->pending, d->op);
            g_array_remove_index(e->deferred, i);
        } else {
            i++;
        }
    }
}

/* A communication op issued after the last kernel, reading its output and that of the
 * communication the kernel after it would have waited for. */
static guint32 comm(Emit *e, SsimOpSpec *spec, SsimOpClass cls)
{
    guint32 idx = add(e, spec, cls, e->last, NULL, 0);
    if (e->last != SSIM_NONE)
        ssim_plan_data(e->g, e->last, idx);
    for (guint i = 0; i < e->pending->len; i++) {
        guint32 c = g_array_index(e->pending, guint32, i);
        const SsimPlanOp *o = ssim_plan_op(e->g, c);
        if (!(o->flags & SSIM_PLAN_PERMUTE) || o->recv_peer != SSIM_NONE)
            ssim_plan_data(e->g, c, idx);
    }
    return idx;
}

static void tp_coll(Emit *e, const Step *st)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = SSIM_OP_COLLECTIVE;
    spec.coll = (SsimCollKind)st->coll;
    spec.stream = stream(e, &e->st_tp, "tp");
    spec.group = e->tp_group;
    spec.name = st->name;
    spec.bytes = st->bytes;
    guint32 idx = comm(e, &spec, SSIM_OPCLASS_TP);
    if (st->overlap == 0) {
        g_array_set_size(e->pending, 0);
        g_array_append_val(e->pending, idx);
    } else {
        Deferred d = {idx, st->overlap};
        g_array_append_val(e->deferred, d);
    }
}

/* The gradient piece of the weight-gradient kernel just issued: a reduction of its bytes over
 * dp, whose issue point is decided when its bucket is flushed. */
static void grad_piece(Emit *e, guint64 bytes)
{
    if (e->dp_group == SSIM_NONE)
        return;
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = SSIM_OP_COLLECTIVE;
    gboolean zero = e->par->zero_stage >= 1;
    spec.coll = zero ? SSIM_COLL_REDUCESCATTER : SSIM_COLL_ALLREDUCE;
    spec.name = zero ? "dp.reducescatter" : "dp.allreduce";
    spec.stream = stream(e, &e->st_dp, "dp");
    spec.group = e->dp_group;
    spec.bytes = bytes;
    guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, SSIM_NONE, NULL, 0);
    must(e, ssim_plan_mark_gradient(e->g, idx, e->site, &e->bug));
    ssim_plan_data(e->g, e->last, idx);
    g_array_append_val(e->open, idx);
}

/* Closes the current bucket: its pieces are issued after the last kernel (and fuse into one
 * reduction when built as lowered). */
static void flush_dp(Emit *e)
{
    for (guint i = 0; i < e->open->len; i++) {
        guint32 idx = g_array_index(e->open, guint32, i);
        must(e, ssim_plan_set_lowered_issue(e->g, idx, e->last, &e->bug));
        g_array_append_val(e->dp_ops, idx);
    }
    g_array_set_size(e->open, 0);
    e->bucket = 0;
}

static void run_program(Emit *e, const GArray *prog, SsimOpClass cls)
{
    if (e->collect_grads)
        e->site++;
    for (guint i = 0; i < prog->len; i++) {
        const Step *st = &g_array_index(prog, Step, i);
        if (st->kind == ST_TP) {
            tp_coll(e, st);
            continue;
        }
        kernel(e, st, cls);
        if (e->collect_grads && st->grad_bytes > 0) {
            grad_piece(e, st->grad_bytes);
            e->bucket += st->grad_bytes;
            if (e->par->dp_bucket_bytes > 0 && e->bucket >= e->par->dp_bucket_bytes)
                flush_dp(e);
        }
    }
}

/* Graph rank of the GPU at pipeline stage `stage` with this rank's dp and tp coordinates. */
static guint32 stage_rank(Emit *e, guint stage)
{
    SsimCoord c = e->coord;
    c.pp = stage;
    guint32 global = ssim_parallel_rank(e->par, c);
    return g_array_index(e->graph_of, guint32, global);
}

static void p2p(Emit *e, SsimOpKind kind, guint32 *st, const char *st_name, guint peer_stage,
                guint32 tag)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = kind;
    spec.stream = stream(e, st, st_name);
    spec.peer = stage_rank(e, peer_stage);
    spec.tag = tag;
    spec.name = kind == SSIM_OP_SEND ? "pp.send" : "pp.recv";
    spec.bytes = e->act_bytes;
    if (kind == SSIM_OP_SEND) {
        guint32 idx = add(e, &spec, SSIM_OPCLASS_PP, e->last, NULL, 0);
        if (e->last != SSIM_NONE)
            ssim_plan_data(e->g, e->last, idx);
    } else {
        guint32 idx = add(e, &spec, SSIM_OPCLASS_PP, SSIM_NONE, NULL, 0);
        g_array_append_val(e->pending, idx);
    }
}

static guint32 tag_of(const Emit *e, SsimPhaseDir dir, guint dst_vs, guint micro)
{
    return ((guint32)dir * e->pv + dst_vs) * e->m + micro;
}

/* Graph rank of the stage that slot `j` of `stage` exchanges with in direction `dir` (+1 the
 * next stage, -1 the previous), when both run the same microbatch in the same direction in
 * consecutive slots (`sender` tells which of the two slots is this stage's); else SSIM_NONE. */
static guint32 lockstep_peer(Emit *e, guint j, gboolean sender)
{
    guint p = e->par->pp, n, nn;
    const SsimPhase *mine = ssim_schedule_phases(e->sched, e->stage, &n);
    guint js = sender ? j : j + 1; /* this stage's slot */
    if (j + 1 >= n || mine[js].micro == SSIM_NONE)
        return SSIM_NONE;
    gint step = mine[js].dir == SSIM_PHASE_FWD ? 1 : -1;
    gint other = (gint)e->stage + (sender ? step : -step);
    if (other < 0 || other >= (gint)p)
        return SSIM_NONE;
    const SsimPhase *theirs = ssim_schedule_phases(e->sched, (guint)other, &nn);
    guint jo = sender ? j + 1 : j;
    if (jo >= nn || theirs[jo].micro != mine[js].micro || theirs[jo].dir != mine[js].dir)
        return SSIM_NONE;
    return stage_rank(e, (guint)other);
}

static void emit_phase(Emit *e, const SsimPhase *ph, guint slot)
{
    guint p = e->par->pp;
    guint lpc = ssim_parallel_layers_per_chunk(e->par, e->model);
    gboolean lock = ssim_schedule_is_lockstep(e->sched);
    if (ph->micro != SSIM_NONE) {
        guint vs = ssim_schedule_virtual_stage(e->sched, e->stage, ph->chunk);
        guint last_vs = e->pv - 1;
        guint next = (e->stage + 1) % p, prev = (e->stage + p - 1) % p;
        if (ph->dir == SSIM_PHASE_FWD) {
            if (!lock && vs > 0)
                p2p(e, SSIM_OP_RECV, &e->st_pp_rf, "pp.recv.fwd", prev,
                    tag_of(e, SSIM_PHASE_FWD, vs, ph->micro));
            if (vs == 0)
                run_program(e, e->pr->embed_fwd, SSIM_OPCLASS_FWD);
            for (guint l = 0; l < lpc; l++)
                run_program(e, e->pr->layer_fwd, SSIM_OPCLASS_FWD);
            if (vs == last_vs)
                run_program(e, e->pr->head_fwd, SSIM_OPCLASS_FWD);
            if (!lock && vs < last_vs)
                p2p(e, SSIM_OP_SEND, &e->st_pp_sf, "pp.send.fwd", next,
                    tag_of(e, SSIM_PHASE_FWD, vs + 1, ph->micro));
        } else {
            if (!lock && vs < last_vs)
                p2p(e, SSIM_OP_RECV, &e->st_pp_rb, "pp.recv.bwd", next,
                    tag_of(e, SSIM_PHASE_BWD, vs, ph->micro));
            e->collect_grads = ph->last;
            if (vs == last_vs)
                run_program(e, e->pr->head_bwd, SSIM_OPCLASS_BWD);
            for (guint l = 0; l < lpc; l++) {
                run_program(e, e->pr->layer_recompute, SSIM_OPCLASS_RECOMPUTE);
                run_program(e, e->pr->layer_bwd, SSIM_OPCLASS_BWD);
            }
            if (vs == 0)
                run_program(e, e->pr->embed_bwd, SSIM_OPCLASS_BWD);
            if (!lock && vs > 0)
                p2p(e, SSIM_OP_SEND, &e->st_pp_sb, "pp.send.bwd", prev,
                    tag_of(e, SSIM_PHASE_BWD, vs - 1, ph->micro));
            if (ph->last && e->par->dp_bucket_bytes > 0)
                flush_dp(e);
            e->collect_grads = FALSE;
        }
    }
    if (lock && p > 1) {
        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.kind = SSIM_OP_COLLECTIVE;
        spec.coll = SSIM_COLL_PERMUTE;
        spec.stream = stream(e, &e->st_pp, "pp");
        spec.group = e->pp_group;
        spec.name = "pp.permute";
        spec.bytes = e->act_bytes;
        /* It follows what the next kernel would have waited for, but reads only the slot's
         * output, and that only when the next stage runs this microbatch next. */
        guint32 idx = add(e, &spec, SSIM_OPCLASS_PP, e->last, (const guint32 *)e->pending->data,
                          e->pending->len);
        guint32 send_peer = lockstep_peer(e, slot, TRUE);
        must(e, ssim_plan_mark_permute(e->g, idx, slot, send_peer, lockstep_peer(e, slot, FALSE),
                                       &e->bug));
        if (send_peer != SSIM_NONE && e->last != SSIM_NONE)
            ssim_plan_data(e->g, e->last, idx);
        g_array_index(e->permutes, guint32, slot) = idx;
        g_array_set_size(e->pending, 0);
        g_array_append_val(e->pending, idx);
    }
}

/* Adds (or finds) the group `prefix.<first logical rank>` of the emitted members of `logical`. */
static guint32 group(Emit *e, const char *prefix, const guint *logical, guint n, GError **error)
{
    char name[64];
    guint lo = logical[0];
    for (guint i = 1; i < n; i++)
        lo = MIN(lo, logical[i]);
    g_snprintf(name, sizeof name, "%s.%u", prefix, lo);
    guint32 gi = ssim_plan_find_group(e->g, name);
    if (gi != SSIM_NONE)
        return gi;
    g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint i = 0; i < n; i++) {
        guint32 gr = g_array_index(e->graph_of, guint32, logical[i]);
        if (gr != SSIM_NONE)
            g_array_append_val(members, gr);
    }
    gi = ssim_plan_add_group(e->g, name, (const guint32 *)members->data, members->len, error);
    if (gi == SSIM_NONE)
        return SSIM_NONE;
    GArray *first = e->L->group_first;
    g_assert(gi + 1 == first->len);
    g_array_append_vals(e->L->group_ranks, logical, n);
    guint32 end = e->L->group_ranks->len;
    g_array_append_val(first, end);
    return gi;
}

static gboolean emit_rank(Emit *e, guint32 rank, GError **error)
{
    e->rank = rank;
    guint32 global = g_array_index(e->L->global_of, guint32, rank);
    e->coord = ssim_parallel_coord(e->par, global);
    e->stage = e->coord.pp;
    e->st_compute = e->st_tp = e->st_dp = e->st_pp = SSIM_NONE;
    e->st_pp_sf = e->st_pp_rf = e->st_pp_sb = e->st_pp_rb = SSIM_NONE;
    e->tp_group = e->dp_group = e->pp_group = e->emb_group = SSIM_NONE;
    e->last = SSIM_NONE;
    e->bucket = 0;
    e->site = 0;
    e->collect_grads = FALSE;
    g_array_set_size(e->open, 0);
    e->permutes = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_ptr_array_add(e->all_permutes, e->permutes);
    g_array_set_size(e->pending, 0);
    g_array_set_size(e->deferred, 0);
    g_array_set_size(e->dp_ops, 0);

    const SsimParallel *par = e->par;
    guint p = par->pp;
    g_autofree guint *ranks = g_new(guint, MAX(MAX(par->tp, par->dp), MAX(p, 2u)));
    if (par->tp > 1) {
        ssim_parallel_group(par, global, SSIM_AXIS_TP, ranks);
        if ((e->tp_group = group(e, "tp", ranks, par->tp, error)) == SSIM_NONE)
            return FALSE;
    }
    if (par->dp > 1) {
        ssim_parallel_group(par, global, SSIM_AXIS_DP, ranks);
        if ((e->dp_group = group(e, "dp", ranks, par->dp, error)) == SSIM_NONE)
            return FALSE;
    }
    if (p > 1 && ssim_schedule_is_lockstep(e->sched)) {
        ssim_parallel_group(par, global, SSIM_AXIS_PP, ranks);
        if ((e->pp_group = group(e, "pp", ranks, p, error)) == SSIM_NONE)
            return FALSE;
    }
    gboolean emb_ar = e->model->tied_embeddings && p > 1 && (e->stage == 0 || e->stage == p - 1);
    if (emb_ar) {
        SsimCoord c = e->coord;
        c.pp = 0;
        ranks[0] = ssim_parallel_rank(par, c);
        c.pp = p - 1;
        ranks[1] = ssim_parallel_rank(par, c);
        if ((e->emb_group = group(e, "emb", ranks, 2, error)) == SSIM_NONE)
            return FALSE;
    }

    guint n;
    const SsimPhase *ph = ssim_schedule_phases(e->sched, e->stage, &n);
    g_array_set_size(e->permutes, n);
    for (guint i = 0; i < n; i++)
        g_array_index(e->permutes, guint32, i) = SSIM_NONE;
    for (guint i = 0; i < n; i++)
        emit_phase(e, &ph[i], i);
    flush_dp(e);
    if (emb_ar) {
        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.kind = SSIM_OP_COLLECTIVE;
        spec.coll = SSIM_COLL_ALLREDUCE;
        spec.stream = stream(e, &e->st_dp, "dp");
        spec.group = e->emb_group;
        spec.name = "emb.allreduce";
        spec.bytes = (guint64)cdiv(e->model->vocab, par->tp) * e->model->hidden *
                     ssim_dtype_size(e->model->dtype);
        guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, e->last, NULL, 0);
        if (e->last != SSIM_NONE)
            ssim_plan_data(e->g, e->last, idx);
        g_array_append_val(e->dp_ops, idx);
    }

    /* The optimizer: Adam reads and writes fp32 weights, moments and gradients (7 x 4 bytes per
     * parameter) and writes the compute copy of the weights. */
    guint64 params = ssim_model_stage_params(e->model, p, e->stage) / par->tp;
    guint64 dt = ssim_dtype_size(e->model->dtype);
    gboolean zero = par->zero_stage >= 1 && par->dp > 1;
    g_array_append_vals(e->pending, e->dp_ops->data, e->dp_ops->len);
    Step opt = {.kind = ST_KERNEL,
                .name = "optimizer",
                .bytes = (zero ? params / par->dp : params) * (28 + dt)};
    kernel(e, &opt, SSIM_OPCLASS_OPTIMIZER);
    if (zero) {
        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.kind = SSIM_OP_COLLECTIVE;
        spec.coll = SSIM_COLL_ALLGATHER;
        spec.stream = stream(e, &e->st_dp, "dp");
        spec.group = e->dp_group;
        spec.name = "dp.allgather";
        spec.bytes = params * dt;
        guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, e->last, NULL, 0);
        ssim_plan_data(e->g, e->last, idx);
    }
    return TRUE;
}

SsimLowered *ssim_lower(const SsimModel *model, const SsimParallel *par,
                        const SsimSchedule *schedule, const SsimLowerOptions *options,
                        GError **error)
{
    g_return_val_if_fail(model != NULL && par != NULL && schedule != NULL, NULL);
    SsimLowerOptions defaults = SSIM_LOWER_OPTIONS_INIT;
    if (options == NULL)
        options = &defaults;
    guint m = ssim_parallel_n_microbatches(par);
    if (ssim_schedule_pp(schedule) != par->pp || ssim_schedule_v(schedule) != par->virtual_stages ||
        ssim_schedule_m(schedule) != m) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "lower: the schedule was built for pp %u, v %u, m %u but the configuration "
                    "has pp %u, v %u, m %u",
                    ssim_schedule_pp(schedule), ssim_schedule_v(schedule),
                    ssim_schedule_m(schedule), par->pp, par->virtual_stages, m);
        return NULL;
    }
    if (model->layers % (par->pp * par->virtual_stages) != 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "lower: layers (%u) %% (pp * v) (%u) != 0", model->layers,
                    par->pp * par->virtual_stages);
        return NULL;
    }

    g_autoptr(SsimLowered) L = g_new0(SsimLowered, 1);
    L->plan = ssim_plan_new();
    ssim_plan_reserve(L->plan, options->expected_ops);
    L->exact = options->exact;
    L->weight = options->exact ? 1 : par->tp * par->dp;
    L->par = *par;
    L->global_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->stage_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->group_first = g_array_new(FALSE, FALSE, sizeof(guint32));
    L->group_ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 zero = 0;
    g_array_append_val(L->group_first, zero);

    guint world = ssim_parallel_world(par);
    g_autoptr(GArray) graph_of = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_array_set_size(graph_of, world);
    for (guint r = 0; r < world; r++)
        g_array_index(graph_of, guint32, r) = SSIM_NONE;
    if (options->exact) {
        for (guint32 r = 0; r < world; r++) {
            guint32 st = ssim_parallel_coord(par, r).pp;
            g_array_append_val(L->global_of, r);
            g_array_append_val(L->stage_of, st);
            g_array_index(graph_of, guint32, r) = r;
        }
    } else {
        for (guint32 s = 0; s < par->pp; s++) {
            guint32 r = ssim_parallel_rank(par, (SsimCoord){.dp = 0, .tp = 0, .pp = s});
            g_array_append_val(L->global_of, r);
            g_array_append_val(L->stage_of, s);
            g_array_index(graph_of, guint32, r) = s;
        }
    }

    Programs pr = {0};
    programs_build(&pr, model, par);
    Emit e = {
        .L = L,
        .g = L->plan,
        .model = model,
        .par = par,
        .sched = schedule,
        .pr = &pr,
        .graph_of = graph_of,
        .m = m,
        .pv = par->pp * par->virtual_stages,
        .act_bytes = (guint64)par->microbatch * model->seq_len * model->hidden *
                     ssim_dtype_size(model->dtype) / par->tp,
        .pending = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .deferred = g_array_new(FALSE, FALSE, sizeof(Deferred)),
        .dp_ops = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .open = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .all_permutes = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref),
    };
    gboolean ok = TRUE;
    for (guint32 r = 0; ok && r < L->global_of->len; r++)
        ok = emit_rank(&e, r, error);
    /* Across ranks: the kernel after which a stage sends a lock-step slot's output feeds the
     * kernel of the next stage that reads it in the next slot. */
    for (guint32 r = 0; ok && r < e.all_permutes->len; r++) {
        GArray *mine = g_ptr_array_index(e.all_permutes, r);
        for (guint j = 0; j < mine->len; j++) {
            guint32 idx = g_array_index(mine, guint32, j);
            const SsimPlanOp *o = idx == SSIM_NONE ? NULL : ssim_plan_op(L->plan, idx);
            if (o == NULL || o->send_peer == SSIM_NONE || o->issue0 == SSIM_NONE)
                continue;
            GArray *theirs = g_ptr_array_index(e.all_permutes, o->send_peer);
            guint32 q = g_array_index(theirs, guint32, j);
            guint32 consumer = ssim_plan_op(L->plan, q)->wait0;
            if (consumer != SSIM_NONE)
                ssim_plan_data(L->plan, o->issue0, consumer);
        }
    }
    g_array_free(e.pending, TRUE);
    g_array_free(e.deferred, TRUE);
    g_array_free(e.dp_ops, TRUE);
    g_array_free(e.open, TRUE);
    g_ptr_array_free(e.all_permutes, TRUE);
    programs_clear(&pr);
    if (!ok)
        return NULL;
    if (options->placement != NULL &&
        !ssim_place_apply(L->plan, options->placement, options->eval, options->report, error))
        return NULL;
    if (!rebuild(L, error)) {
        g_prefix_error(error, "lower: ");
        return NULL;
    }
    return g_steal_pointer(&L);
}
