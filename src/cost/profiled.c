/*
 * The profiled cost model (what it asks the profile for each op is in include/shiftsim/profiled.h).
 *
 * The runtime asks for every op, and a lowered iteration has thousands of ops but only a few
 * dozen distinct costs: the same GEMM in every layer, the same all-reduce after every block.
 * So each answer is cached under a key of everything it depends on: what is asked (a GEMM by
 * FLOPs, a memory-bound kernel, a collective of a kind, a point-to-point transfer), bytes, FLOPs,
 * the mapped kernel name (for a GEMM kernel whose shapes the analytic model knows, the kernel
 * itself: a forward GEMM and its two gradients have equal FLOPs and bytes but other shapes) and
 * the logical group shape.  The key holds no pointers and its padding is zeroed, so it hashes
 * and compares as plain bytes.  Kernel names and class labels are graph
 * string ids; their mapping (to a profile memory op, to a lowering class) is computed once per id
 * and kept in arrays indexed by id, so a cache hit costs one hash of 40 bytes and no string
 * work beyond comparing the name with the copy its entry was made from (a model may see several
 * graphs, e.g. the candidates of a placement search, whose string ids need not agree).
 *
 * A miss asks the profile without a fallback, so "nothing relevant measured" is visible, and then
 * asks the analytical model's own op_time(): a fallback answer is exactly what the analytical
 * model alone would charge, logical groups and roofline bytes term included.
 */
#include <shiftsim/profiled.h>

#include "src/cost/memo-private.h"

#include <string.h>

/* What a cache key asks. */
enum { ASK_FLOPS, ASK_MEMORY, ASK_COLL, ASK_P2P, ASK_BARRIER };
/* A flash-attention kernel: priced by the profile's flash-fwd / flash-bwd attention rows where
 * it has them, else by the analytical model (never by the GEMMs' FLOPs curve). */
#define KERNEL_FLASH G_MAXUINT32

typedef struct {
    guint64 bytes;
    double flops;
    guint32 n_ranks, n_nodes, per_node;
    guint32 mem; /* ASK_MEMORY: index into mem_names; ASK_FLOPS: 1 + index into kernel_names
                    of a kernel with known GEMM shapes (0: none; KERNEL_FLASH: flash) */
    guint8 ask;
    guint8 coll;
} Key;

typedef struct {
    SsimCostEstimate est;
    SsimProfileKind kind;
} Answer;

struct SsimProfiled {
    const SsimProfile *profile;
    const SsimAnalytic *analytic;
    SsimCostModel fallback; /* the analytical model's view */
    SsimDtype dtype;
    SsimAnalyticParams gemm; /* the GEMM shape model with its figures fitted to the profile */
    GHashTable *cache;       /* Key -> Answer, both owned */
    GPtrArray *mem_names;    /* distinct profile memory op names (owned strings) */
    GArray *name_map;        /* CostMemo per name string id: index into mem_names */
    GPtrArray *kernel_names; /* distinct names of kernels with GEMM shapes (owned strings) */
    GArray *kernel_map;      /* CostMemo per name string id: index into kernel_names */
    GArray *cls_map;         /* CostMemo per class string id: SsimOpClass, SSIM_OPCLASS_N: other */
    SsimCostExplain explain;
    SsimClassExplain class_explain;
    guint64 n_lookups;
};

/* ---- class explain ----------------------------------------------------------------------- */

void ssim_class_explain_init(SsimClassExplain *explain)
{
    memset(explain, 0, sizeof *explain);
}

void ssim_class_explain_merge(SsimClassExplain *dst, const SsimClassExplain *src)
{
    for (guint c = 0; c < SSIM_PROFILED_N_CLASSES; c++)
        for (guint s = 0; s < SSIM_COST_N; s++)
            dst->count[c][s] += src->count[c][s];
}

guint64 ssim_class_explain_n_ops(const SsimClassExplain *explain)
{
    guint64 n = 0;
    for (guint c = 0; c < SSIM_PROFILED_N_CLASSES; c++)
        for (guint s = 0; s < SSIM_COST_N; s++)
            n += explain->count[c][s];
    return n;
}

GString *ssim_class_explain_table(const SsimClassExplain *e)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "%-10s", "op class");
    for (guint s = 0; s < SSIM_COST_N; s++)
        g_string_append_printf(out, " %13s", ssim_cost_source_name(s));
    g_string_append_printf(out, " %10s\n", "total");
    guint64 col[SSIM_COST_N] = {0}, all = 0;
    for (guint c = 0; c <= SSIM_PROFILED_N_CLASSES; c++) {
        gboolean total = c == SSIM_PROFILED_N_CLASSES;
        guint64 sum = 0;
        for (guint s = 0; s < SSIM_COST_N; s++)
            sum += total ? col[s] : e->count[c][s];
        if (!total && sum == 0)
            continue;
        const char *name = total                ? "total"
                           : c < SSIM_OPCLASS_N ? ssim_opclass_name((SsimOpClass)c)
                                                : "other";
        g_string_append_printf(out, "%-10s", name);
        for (guint s = 0; s < SSIM_COST_N; s++) {
            guint64 v = total ? col[s] : e->count[c][s];
            if (!total)
                col[s] += v;
            g_string_append_printf(out, " %13" G_GUINT64_FORMAT, v);
        }
        if (!total)
            all += sum;
        g_string_append_printf(out, " %10" G_GUINT64_FORMAT "\n", total ? all : sum);
    }
    return out;
}

/* ---- the model --------------------------------------------------------------------------- */

static guint key_hash(gconstpointer p)
{
    /* FNV-1a over the key's bytes (padding is zeroed). */
    const guint8 *b = p;
    guint32 h = 2166136261u;
    for (gsize i = 0; i < sizeof(Key); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(Key)) == 0;
}

SsimProfiled *ssim_profiled_new(const SsimProfile *profile, const SsimAnalytic *analytic,
                                SsimDtype dtype)
{
    g_return_val_if_fail(profile != NULL && analytic != NULL, NULL);
    SsimProfiled *m = g_new0(SsimProfiled, 1);
    m->profile = profile;
    m->analytic = analytic;
    m->fallback = ssim_analytic_cost_model(analytic);
    m->dtype = dtype;
    /* The measured GEMMs decide the shape model's two free figures, once per model. */
    ssim_profile_fit_gemm_model(profile, dtype, ssim_analytic_params(analytic), &m->gemm, NULL);
    m->cache = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
    m->mem_names = g_ptr_array_new_with_free_func(g_free);
    m->name_map = cost_memo_new();
    m->kernel_names = g_ptr_array_new_with_free_func(g_free);
    m->kernel_map = cost_memo_new();
    m->cls_map = cost_memo_new();
    ssim_cost_explain_init(&m->explain);
    ssim_class_explain_init(&m->class_explain);
    return m;
}

void ssim_profiled_free(SsimProfiled *model)
{
    if (model == NULL)
        return;
    g_hash_table_destroy(model->cache);
    g_ptr_array_free(model->mem_names, TRUE);
    g_array_free(model->name_map, TRUE);
    g_ptr_array_free(model->kernel_names, TRUE);
    g_array_free(model->kernel_map, TRUE);
    g_array_free(model->cls_map, TRUE);
    g_free(model);
}

/* The profile memory op a lowering kernel name stands for (see profiled.h). */
static char *memory_op_name(const char *name)
{
    static const struct {
        const char *prefix, *op;
    } map[] = {
        {"final_norm", "layernorm"}, {"norm", "layernorm"}, {"softmax", "softmax"}, {"act", "gelu"},
        {"residual", "add"},         {"branch_add", "add"}, {"optimizer", "adam"}};
    for (gsize i = 0; i < G_N_ELEMENTS(map); i++)
        if (g_str_has_prefix(name, map[i].prefix))
            return g_strdup(map[i].op);
    const char *dot = strchr(name, '.');
    return dot ? g_strndup(name, (gsize)(dot - name)) : g_strdup(name);
}

static guint32 mem_index(SsimProfiled *m, const SsimGraph *graph, guint32 name)
{
    const char *str = ssim_graph_string(graph, name);
    gboolean fresh;
    CostMemo *e = cost_memo_entry(m->name_map, graph, name == SSIM_NONE ? 0 : name, &fresh);
    if (fresh) {
        g_autofree char *op = memory_op_name(str);
        guint i;
        for (i = 0; i < m->mem_names->len; i++)
            if (strcmp(g_ptr_array_index(m->mem_names, i), op) == 0)
                break;
        if (i == m->mem_names->len)
            g_ptr_array_add(m->mem_names, g_steal_pointer(&op));
        e->value = i;
    }
    return e->value;
}

/* 1 + the index of op `idx`'s kernel name among those with GEMM shapes, or 0 when the analytic
 * model knows no shapes for it (then it is asked by its FLOPs). */
static guint32 kernel_index(SsimProfiled *m, const SsimGraph *graph, guint32 idx)
{
    const SsimGemmShape *g;
    guint n;
    if (!ssim_analytic_op_gemms(m->analytic, graph, idx, &g, &n))
        return ssim_analytic_op_flash(m->analytic, graph, idx, NULL, NULL) ? KERNEL_FLASH : 0;
    guint32 name = ssim_graph_op(graph, idx)->name;
    const char *str = ssim_graph_string(graph, name);
    gboolean fresh;
    CostMemo *e = cost_memo_entry(m->kernel_map, graph, name, &fresh);
    if (fresh) {
        guint i;
        for (i = 0; i < m->kernel_names->len; i++)
            if (strcmp(g_ptr_array_index(m->kernel_names, i), str) == 0)
                break;
        if (i == m->kernel_names->len)
            g_ptr_array_add(m->kernel_names, g_strdup(str));
        e->value = i;
    }
    return e->value + 1;
}

static guint class_index(SsimProfiled *m, const SsimGraph *graph, guint16 cls)
{
    const char *str = ssim_graph_string(graph, cls);
    gboolean fresh;
    CostMemo *e = cost_memo_entry(m->cls_map, graph, cls, &fresh);
    if (fresh) {
        SsimOpClass c;
        e->value = ssim_opclass_from_name(str, &c) ? (guint32)c : SSIM_OPCLASS_N;
    }
    return e->value;
}

/* Fills `key` for op `idx`; FALSE for an op kind the model does not price (returns 0). */
static gboolean make_key(SsimProfiled *m, const SsimGraph *graph, guint32 idx, Key *key)
{
    const SsimOp *op = ssim_graph_op(graph, idx);
    memset(key, 0, sizeof *key);
    key->bytes = op->bytes;
    switch ((SsimOpKind)op->kind) {
    case SSIM_OP_COMPUTE:
        if (op->flops > 0) {
            key->ask = ASK_FLOPS;
            key->flops = op->flops;
            /* Kernels of equal FLOPs and bytes but other shapes (a forward GEMM, its dgrad and
             * its wgrad) cost differently: the kernel is part of the key. */
            key->mem = kernel_index(m, graph, idx);
        } else {
            key->ask = ASK_MEMORY;
            key->mem = mem_index(m, graph, op->name);
        }
        return TRUE;
    case SSIM_OP_SEND:
    case SSIM_OP_RECV:
    case SSIM_OP_COLLECTIVE:
    case SSIM_OP_BARRIER: {
        guint n = 0, nodes = 0, per = 0;
        ssim_analytic_group_shape(m->analytic, graph, idx, &n, &nodes, &per);
        key->n_ranks = n, key->n_nodes = nodes, key->per_node = per;
        key->coll = op->coll;
        key->ask = op->kind == SSIM_OP_BARRIER      ? ASK_BARRIER
                   : op->kind != SSIM_OP_COLLECTIVE ? ASK_P2P
                   : op->coll == SSIM_COLL_PERMUTE  ? ASK_P2P
                                                    : ASK_COLL;
        return TRUE;
    }
    default:
        return FALSE;
    }
}

/*
 * A kernel with known GEMM shapes: each GEMM asked by its shape, with the analytic model's
 * parameters so that the profile can carry its measured GEMMs to this shape through the shape
 * model; FALSE (nothing relevant) when every GEMM's answer is the analytic one.
 */
static gboolean ask_gemms(const SsimProfiled *m, const SsimGraph *graph, guint32 idx,
                          SsimCostEstimate *est)
{
    const SsimGemmShape *g;
    guint n;
    if (!ssim_analytic_op_gemms(m->analytic, graph, idx, &g, &n))
        return FALSE;
    const SsimAnalyticParams *p = &m->gemm;
    SsimDtype dtype = m->dtype;
    /* An FP8 GEMM is asked of the profile's FP8 rows, carried by the FP8 tensor cores' model
     * (the fit of the 16-bit rows does not describe them). */
    SsimAnalyticParams p8;
    if (ssim_analytic_op_fp8(m->analytic, graph, idx)) {
        ssim_analytic_fp8_params(ssim_analytic_params(m->analytic), &p8);
        p = &p8;
        dtype = SSIM_DTYPE_FP8;
    }
    SsimCostEstimate sum = {0, 0, SSIM_COST_EXACT};
    gboolean measured = FALSE;
    for (guint i = 0; i < n; i++) {
        SsimCostEstimate one;
        ssim_profile_gemm_time(m->profile, g[i].m, g[i].n, g[i].k, g[i].batch, dtype, p, &one);
        measured = measured || one.source != SSIM_COST_ANALYTICAL;
        sum.time_us += one.time_us;
        sum.time += one.time;
        sum.source = MAX(sum.source, one.source);
    }
    *est = sum;
    return measured;
}

/* Asks the profile (no fallback); FALSE when it has nothing relevant. */
static gboolean ask_profile(const SsimProfiled *m, const Key *key, const SsimGraph *graph,
                            guint32 idx, SsimCostEstimate *est)
{
    switch (key->ask) {
    case ASK_FLOPS:
        if (key->mem == KERNEL_FLASH) {
            /* The heads of the microbatch as one batch of heads (the rows' FLOPs and the
             * nearest-shape search see the same kernel either way). */
            SsimGemmShape s;
            gboolean bwd;
            ssim_analytic_op_flash(m->analytic, graph, idx, &s, &bwd);
            if (!ssim_profile_flash_time(m->profile, bwd, s.m, s.batch, s.k, 1, key->bytes,
                                         m->dtype, NULL, est))
                return FALSE;
            /* The profile measured the causal kernel: a sliding window's layers skip pairs, by
             * the analytic model's ratio (1 without a window). */
            double w = ssim_analytic_op_flash_window(m->analytic, graph, idx, key->bytes);
            if (w != 1.0) {
                est->time_us *= w;
                est->time = ssim_time_from_seconds(ssim_time_to_seconds(est->time) * w);
            }
            return TRUE;
        }
        if (key->mem > 0)
            return ask_gemms(m, graph, idx, est);
        return ssim_profile_flops_time(m->profile, key->flops, m->dtype, NULL, est);
    case ASK_MEMORY:
        return ssim_profile_memory_time(m->profile, g_ptr_array_index(m->mem_names, key->mem),
                                        (int)m->dtype, key->bytes, NULL, est);
    case ASK_COLL: {
        if (key->n_ranks <= 1)
            return FALSE;
        /* The analytic model's figures are the network model a measured curve of another
         * layout is carried through; an answer it gives alone is "nothing relevant". */
        const SsimAnalyticParams *net = ssim_analytic_params(m->analytic);
        return ssim_profile_comm_time(
                   m->profile, ssim_profile_comm_from_coll(key->coll), (int)m->dtype, key->bytes,
                   key->n_ranks, key->n_nodes > 1 ? key->per_node : key->n_ranks, NULL, net, est) &&
               est->source != SSIM_COST_ANALYTICAL;
    }
    case ASK_P2P:
        if (key->n_ranks <= 1)
            return FALSE;
        /* One step between two ranks, one per node when the transfer leaves the node. */
        return ssim_profile_comm_time(m->profile, SSIM_PCOMM_SENDRECV, (int)m->dtype, key->bytes, 2,
                                      key->n_nodes > 1 ? 1 : 2, NULL,
                                      ssim_analytic_params(m->analytic), est) &&
               est->source != SSIM_COST_ANALYTICAL;
    default:
        return FALSE;
    }
}

/* The cached answer for op `idx` (computing it on a miss). */
static const Answer *answer(SsimProfiled *m, const SsimGraph *graph, guint32 idx, guint n)
{
    static const Answer none = {.est = {0, 0, SSIM_COST_ANALYTICAL}, .kind = SSIM_PROFILE_COMM};
    Key key;
    if (!make_key(m, graph, idx, &key))
        return &none;
    const Answer *hit = g_hash_table_lookup(m->cache, &key);
    if (hit)
        return hit;
    Answer *a = g_new0(Answer, 1);
    a->kind = key.ask == ASK_FLOPS && key.mem == KERNEL_FLASH ? SSIM_PROFILE_ATTENTION
              : key.ask == ASK_FLOPS                          ? SSIM_PROFILE_GEMM
              : key.ask == ASK_MEMORY                         ? SSIM_PROFILE_MEMORY
                                                              : SSIM_PROFILE_COMM;
    m->n_lookups++;
    if (!ask_profile(m, &key, graph, idx, &a->est)) {
        SsimTime t = m->fallback.op_time(&m->fallback, graph, idx, n);
        a->est = (SsimCostEstimate){
            .time_us = (double)t * 1e-3, .time = t, .source = SSIM_COST_ANALYTICAL};
    }
    g_hash_table_insert(m->cache, g_memdup2(&key, sizeof key), a);
    return a;
}

SsimProfileKind ssim_profiled_estimate(SsimProfiled *model, const SsimGraph *graph, guint32 op,
                                       SsimCostEstimate *out)
{
    g_return_val_if_fail(model != NULL && graph != NULL && out != NULL, SSIM_PROFILE_COMM);
    const Answer *a = answer(model, graph, op, 1);
    *out = a->est;
    return a->kind;
}

static SsimTime op_time(const SsimCostModel *cm, const SsimGraph *graph, guint32 idx, guint n)
{
    SsimProfiled *m = cm->data;
    const Answer *a = answer(m, graph, idx, n);
    const SsimOp *op = ssim_graph_op(graph, idx);
    /* The runtime asks once per compute op, per collective instance (n members) and per
     * send/receive pair: count every op the answer prices. */
    guint64 weight = op->kind == SSIM_OP_COMPUTE                            ? 1
                     : op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV ? 2
                                                                            : MAX(n, 1u);
    guint cls = class_index(m, graph, op->cls);
    m->explain.count[a->kind][a->est.source] += weight;
    m->class_explain.count[cls][a->est.source] += weight;
    return a->est.time;
}

SsimCostModel ssim_profiled_cost_model(SsimProfiled *model)
{
    return (SsimCostModel){.op_time = op_time, .data = model};
}

const SsimCostExplain *ssim_profiled_explain(const SsimProfiled *model)
{
    return &model->explain;
}

const SsimClassExplain *ssim_profiled_class_explain(const SsimProfiled *model)
{
    return &model->class_explain;
}

void ssim_profiled_reset_explain(SsimProfiled *model)
{
    ssim_cost_explain_init(&model->explain);
    ssim_class_explain_init(&model->class_explain);
}

guint64 ssim_profiled_n_lookups(const SsimProfiled *model)
{
    return model->n_lookups;
}
