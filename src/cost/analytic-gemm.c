/*
 * The GEMM shape model of the analytical cost model (formulas in include/shiftsim/analytic.h),
 * and the table that tells which GEMMs a lowered kernel runs.
 *
 * What it models.  cuBLAS and CUTLASS compute C[m x n] = A[m x k] B[k x n] as output tiles of a
 * few fixed sizes, one thread block per tile, each SM running one block of a large tile at a
 * time.  So a GEMM runs in waves of `sm_count` tiles; a last wave that fills only part of the GPU
 * costs a whole wave (wave quantization), and a matrix that is not a multiple of the tile pays for
 * the padded tile (tile quantization).  A tile's time is its tensor-core work at the SM's share of
 * the peak times `gemm_efficiency` (what a saturated SM sustains: clocks under load, issue
 * stalls), plus a fixed `gemm_tile_overhead` per tile: filling the operand pipeline before the
 * first multiply and writing the tile out afterwards, which dominates when k is small (attention's
 * head dimension).  A GEMM with fewer tiles than SMs and a long k is split along k (split-K:
 * partial tiles on the idle SMs, summed through memory in fp32).  Whatever the tiles, a GEMM
 * cannot run faster than it moves its operands and result through HBM, and each launch costs
 * `kernel_overhead`.  The tile sizes tried are the cluster's large tile, its transpose and the
 * square tile of the smaller side (cuBLAS's heuristics choose among such shapes; smaller tiles
 * would be limited by L2 bandwidth, which this model does not describe).  A GEMM whose rows
 * (n for B and C, k for A, row-major) are not a multiple of 16 bytes runs at `gemm_unaligned`
 * of the rate: measured on an H200 (traces/h200), 2048 x 6300 x 4096 in bf16 took 3.5 times
 * as long as 2048 x 6144 x 4096.
 *
 * The kernel table maps a lowering kernel name (include/shiftsim/lower.h: "qkv", "qkv.dgrad",
 * "attn_score.bwd", ...) to its GEMMs; graph ops carry FLOPs and bytes, not shapes.  A compute op
 * whose name is in the table and whose FLOPs match the table's is priced by its shapes; any other
 * compute op by its FLOPs and bytes (the size curve), as before the table existed.
 *
 * Invariants: the lookup cache (analytic-private.h) is filled lazily from const lookups, so one
 * model serves one run at a time (as the runtime uses it), never two threads at once.
 */
#include "src/cost/analytic-private.h"

#include <math.h>
#include <string.h>

static void clear_kernel(gpointer p)
{
    g_free(((KernelGemms *)p)->name);
}

void analytic_gemm_init(SsimAnalytic *m)
{
    m->kernels = g_array_new(FALSE, TRUE, sizeof(KernelGemms));
    g_array_set_clear_func(m->kernels, clear_kernel);
    m->name_cache = cost_memo_new();
    m->mt_cache = cost_memo_new();
    m->compute_memo = g_new0(ComputeMemo, ANALYTIC_COMPUTE_MEMO);
}

void analytic_gemm_clear(SsimAnalytic *m)
{
    g_array_free(m->kernels, TRUE);
    g_array_free(m->name_cache, TRUE);
    g_array_free(m->mt_cache, TRUE);
    g_free(m->compute_memo);
}

static double cdiv(guint64 a, guint64 b)
{
    return (double)((a + b - 1) / b);
}

/* The tensor-core part of a GEMM run as tm x tn tiles (with split-K when it helps), seconds. */
static double tiled_time(const SsimAnalyticParams *p, const SsimGemmShape *g, guint64 tm,
                         guint64 tn, double rate_per_sm)
{
    double sms = p->sm_count;
    double tiles = cdiv(g->m, tm) * cdiv(g->n, tn) * (double)MAX(g->batch, 1);
    double fix = ssim_time_to_seconds(p->gemm_tile_overhead);
    /* Split-K: idle SMs take slices of k (each at least 256 deep, a few pipeline stages). */
    double split = 1;
    if (tiles < sms && g->k >= 512)
        split = MIN(floor(sms / tiles), floor((double)g->k / 256.0));
    split = MAX(split, 1.0);
    double waves = ceil(tiles * split / sms);
    double t = waves * (2.0 * (double)tm * (double)tn * ((double)g->k / split) / rate_per_sm + fix);
    if (split > 1) /* the fp32 partial tiles written and read back once */
        t += split * 8.0 * (double)g->m * (double)g->n * (double)MAX(g->batch, 1) /
             (p->hbm_bw * p->memory_efficiency);
    return t;
}

SsimTime ssim_analytic_gemm_time(const SsimAnalyticParams *p, const SsimGemmShape *g)
{
    double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)MAX(g->batch, 1);
    double bytes =
        ((double)g->m * (double)g->k + (double)g->k * (double)g->n + (double)g->m * (double)g->n) *
        (double)MAX(g->batch, 1) * (double)MAX(p->dtype_bytes, 1u);
    if (p->sm_count == 0 || p->gemm_tile_m == 0 || p->gemm_tile_n == 0 || g->m == 0 || g->n == 0 ||
        g->k == 0)
        return ssim_analytic_compute_time(p, flops, (guint64)bytes);
    double rate = p->peak_flops / p->sm_count * p->gemm_efficiency;
    /* A row of B and C is n elements, a row of A k: not a multiple of 16 bytes, and cuBLAS
     * cannot use its fast (TMA-fed, on Hopper) kernels. */
    guint64 es = MAX(p->dtype_bytes, 1u);
    if (p->gemm_unaligned > 0.0 && p->gemm_unaligned < 1.0 &&
        ((g->n * es) % 16 != 0 || (g->k * es) % 16 != 0))
        rate *= p->gemm_unaligned;
    guint64 a = p->gemm_tile_m, b = p->gemm_tile_n, c = MIN(a, b);
    double t = MIN(tiled_time(p, g, a, b, rate), tiled_time(p, g, b, a, rate));
    t = MIN(t, tiled_time(p, g, c, c, rate));
    double tm = bytes / (p->hbm_bw * p->memory_efficiency);
    return ssim_time_from_seconds(MAX(t, tm)) + p->kernel_overhead;
}

/* ---- flash attention (analytic.h) ------------------------------------------------------ */

/* One layer kind's flash kernel: causal over the whole prefix (window 0) or over a window of
 * `window` keys; or, where the score's n differs from its m (a step of context parallelism's
 * ring), every query against all n keys. */
static SsimTime flash_time(const SsimAnalyticParams *p, const SsimGemmShape *score, guint64 window,
                           guint64 bytes, gboolean backward)
{
    /* The FLOPs the unfused kernels it replaces carry: Q K^T and P V forward, twice that
     * backward.  Without the shape model the kernel is priced by them, as any other. */
    double unfused = (backward ? 8.0 : 4.0) * (double)score->m * (double)score->n *
                     (double)score->k * (double)MAX(score->batch, 1);
    if (p->sm_count == 0 || score->m == 0 || score->k == 0)
        return ssim_analytic_compute_time(p, unfused, bytes);
    const double blk = 128;
    double nb = ceil((double)score->m / blk);
    /* A block of queries multiplies with the blocks of keys it sees: all before it (causal), or
     * under a window of w keys the ceil(w / blk) + 1 blocks that window can touch at most; or,
     * unmasked, all ceil(n / blk) of them. */
    gboolean rect = score->n != score->m;
    double kb = rect         ? ceil((double)score->n / blk)
                : window > 0 ? MIN(nb, ceil((double)window / blk) + 1)
                             : nb;
    double pairs =
        (rect ? nb * kb : kb * (kb + 1) / 2 + (nb - kb) * kb) * (double)MAX(score->batch, 1);
    double sms = p->sm_count;
    double rate = p->peak_flops / sms * p->gemm_efficiency;
    double pair = (backward ? 5.0 : 2.0) * 2.0 * blk * blk * (double)score->k / rate;
    if (p->exp_rate > 0) {
        double clock = p->gemm_burst > 0 ? p->gemm_efficiency / p->gemm_burst : 1.0;
        double exps = blk * blk / (p->exp_rate / sms * clock);
        /* FlashAttention-2 exponentiates a block after its products; Hopper's warp-specialised
         * kernels (FlashAttention-3, cuDNN) exponentiate one block while the next multiplies. */
        pair = p->flash_overlap ? MAX(pair, exps) : pair + exps;
    }
    /* Each block of queries, like a GEMM's tile, also loads its operands and writes its output
     * once (gemm_tile_overhead).  The blocks are of unequal work (causal: 1 to nb pairs), handed
     * to the SMs in launch order as they free, the heaviest of each head last: list scheduling,
     * whose makespan is at most the work per SM plus (1 - 1/S) of the longest block (Graham's
     * bound), which is taken as the estimate. */
    double fix = ssim_time_to_seconds(p->gemm_tile_overhead);
    double blocks = nb * (double)MAX(score->batch, 1);
    double t = (pairs * pair + blocks * fix) / sms + (1.0 - 1.0 / sms) * (kb * pair + fix);
    double hbm = p->hbm_bw * p->memory_efficiency;
    if (!backward)
        return ssim_time_add(ssim_time_from_seconds(MAX(t, (double)bytes / hbm)),
                             p->kernel_overhead);
    /* The backward runs three passes of its own around the main kernel, each streaming through
     * HBM after the other: zeroing dQ's fp32 accumulator (4 bytes an element), the rows' dO . O
     * (reading both, 4 bytes a row out), and dQ's conversion from the accumulator.  Their bytes
     * are among the op's; the main kernel moves the rest. */
    double q = (double)score->m * (double)score->k * (double)MAX(score->batch, 1);
    double rows = (double)score->m * (double)MAX(score->batch, 1);
    double dt = MAX(p->dtype_bytes, 1u);
    double passes = 4 * q + (2 * q * dt + 4 * rows) + (4 * q + q * dt);
    double rest = MAX((double)bytes - passes, 0.0);
    return ssim_time_add(
        ssim_time_from_seconds(MAX(t, rest / hbm) + MIN(passes, (double)bytes) / hbm),
        4 * p->kernel_overhead);
}

SsimTime ssim_analytic_flash_time(const SsimAnalyticParams *p, const SsimGemmShape *score,
                                  guint64 bytes, gboolean backward)
{
    return flash_time(p, score, 0, bytes, backward);
}

SsimTime ssim_analytic_flash_time_window(const SsimAnalyticParams *p, const SsimGemmShape *score,
                                         guint64 window, double windowed, guint64 bytes,
                                         gboolean backward)
{
    SsimTime full = flash_time(p, score, 0, bytes, backward);
    if (window == 0 || window >= score->m || !(windowed > 0))
        return full;
    SsimTime win = flash_time(p, score, window, bytes, backward);
    return ssim_time_from_seconds(windowed * ssim_time_to_seconds(win) +
                                  (1.0 - MIN(windowed, 1.0)) * ssim_time_to_seconds(full));
}

/* ---- the kernel table -------------------------------------------------------------------- */

/* Puts `k` (taken) in the table, replacing an entry of its name, and forgets every price. */
static void put_kernel(SsimAnalytic *model, KernelGemms *k)
{
    guint i = 0;
    while (i < model->kernels->len &&
           strcmp(g_array_index(model->kernels, KernelGemms, i).name, k->name) != 0)
        i++;
    if (i < model->kernels->len) {
        g_free(g_array_index(model->kernels, KernelGemms, i).name);
        g_array_index(model->kernels, KernelGemms, i) = *k;
    } else {
        g_array_append_val(model->kernels, *k);
    }
    g_array_set_size(model->name_cache, 0);
    memset(model->compute_memo, 0, sizeof(ComputeMemo) * ANALYTIC_COMPUTE_MEMO);
}

/* Prices compute ops named `name` carrying `flops` as flash attention over `score` (with the
 * model's sliding window when `m` is given). */
static void set_flash_kernel(SsimAnalytic *model, const char *name, const SsimGemmShape *score,
                             double flops, guint flash, const SsimModel *m)
{
    KernelGemms k = {.name = g_strdup(name),
                     .n = 0,
                     .flash = flash,
                     .flops = flops,
                     .window = m ? m->sliding_window : 0,
                     .windowed = m ? ssim_model_windowed_share(m) : 0.0};
    k.gemm[0] = *score;
    put_kernel(model, &k);
}

/* Puts kernel `name` of GEMMs `gemms` (1 or 2) in the table, priced under `p`. */
static void set_kernel(SsimAnalytic *model, const char *name, const SsimGemmShape *gemms, guint n,
                       const SsimAnalyticParams *p, gboolean fp8)
{
    KernelGemms k = {.name = g_strdup(name), .n = n, .fp8 = fp8};
    for (guint i = 0; i < n; i++) {
        k.gemm[i] = gemms[i];
        k.flops += 2.0 * (double)gemms[i].m * (double)gemms[i].n * (double)gemms[i].k *
                   (double)MAX(gemms[i].batch, 1);
        k.time += ssim_analytic_gemm_time(p, &gemms[i]);
    }
    put_kernel(model, &k);
}

void ssim_analytic_set_kernel(SsimAnalytic *model, const char *name, const SsimGemmShape *gemms,
                              guint n)
{
    g_return_if_fail(model != NULL && name != NULL && n >= 1 && n <= 2);
    set_kernel(model, name, gemms, n, &model->params, FALSE);
}

void ssim_analytic_set_model_gemms(SsimAnalytic *model, const SsimModel *m, guint microbatch,
                                   guint tp, gboolean fp8)
{
    SsimAnalyticParams p8;
    ssim_analytic_fp8_params(&model->params, &p8);
    for (guint kind = 0; kind < SSIM_GEMM_N; kind++) {
        SsimGemm g = ssim_model_gemm(m, (SsimGemmKind)kind, microbatch, tp);
        const char *base = ssim_gemm_kind_name((SsimGemmKind)kind);
        gboolean in_fp8 = fp8 && ssim_gemm_kind_fp8((SsimGemmKind)kind);
        const SsimAnalyticParams *p = in_fp8 ? &p8 : &model->params;
        SsimGemmShape fwd = {g.m, g.n, g.k, g.batch};
        /* The gradient with respect to A: dA[m x k] = dC[m x n] B^T[n x k]; with respect to B:
         * dB[k x n] = A^T[k x m] dC[m x n].  Same FLOPs, other shapes. */
        SsimGemmShape bwd[2] = {{g.m, g.k, g.n, g.batch}, {g.k, g.n, g.m, g.batch}};
        g_autofree char *dgrad = g_strconcat(base, ".dgrad", NULL);
        g_autofree char *wgrad = g_strconcat(base, ".wgrad", NULL);
        g_autofree char *both = g_strconcat(base, ".bwd", NULL);
        set_kernel(model, base, &fwd, 1, p, in_fp8);
        set_kernel(model, dgrad, &bwd[0], 1, p, in_fp8);
        set_kernel(model, wgrad, &bwd[1], 1, p, in_fp8);
        set_kernel(model, both, bwd, 2, p, in_fp8);
    }
    /* The parts of the QKV and up GEMMs op-level checkpointing recomputes (model.h): the K
     * projection, a gated MLP's second input. */
    SsimGemm part[SSIM_OP_RECOMPUTE_GEMMS];
    const char *part_name[SSIM_OP_RECOMPUTE_GEMMS];
    ssim_model_op_recompute_gemms(m, microbatch, tp, part, part_name);
    for (guint i = 0; i < SSIM_OP_RECOMPUTE_GEMMS; i++) {
        gboolean of_kind = FALSE;
        for (guint kind = 0; kind < SSIM_GEMM_N; kind++)
            of_kind |= strcmp(part_name[i], ssim_gemm_kind_name((SsimGemmKind)kind)) == 0;
        if (of_kind) /* a whole GEMM, in the table already */
            continue;
        SsimGemmShape shape = {part[i].m, part[i].n, part[i].k, part[i].batch};
        set_kernel(model, part_name[i], &shape, 1, fp8 ? &p8 : &model->params, fp8);
    }
    /* Flash attention (the lowering's SSIM_FLASH_KERNEL) over the heads of the scores' GEMM,
     * with the FLOPs of the unfused kernels it replaces and the model's sliding window. */
    SsimGemm s = ssim_model_gemm(m, SSIM_GEMM_ATTN_SCORE, microbatch, tp);
    SsimGemm c = ssim_model_gemm(m, SSIM_GEMM_ATTN_CONTEXT, microbatch, tp);
    SsimGemmShape score = {s.m, s.n, s.k, s.batch};
    set_flash_kernel(model, SSIM_FLASH_KERNEL, &score, s.flops + c.flops, 1, m);
    set_flash_kernel(model, SSIM_FLASH_KERNEL ".bwd", &score, 2 * (s.flops + c.flops), 2, m);
    /* A later step of context parallelism's ring (lower.h, SSIM_FLASH_CP_KERNEL; `m` is then a
     * GPU's share of the sequence): the s queries against half as many keys, unmasked, counted
     * as the causal kernel is (the step's FLOP count gives each step the same share). */
    SsimGemmShape ring = {s.m, s.n / 2, s.k, s.batch};
    set_flash_kernel(model, SSIM_FLASH_CP_KERNEL, &ring, s.flops + c.flops, 1, NULL);
    set_flash_kernel(model, SSIM_FLASH_CP_KERNEL ".bwd", &ring, 2 * (s.flops + c.flops), 2, NULL);
}

const KernelGemms *analytic_kernel_of(const SsimAnalytic *model, const SsimGraph *graph,
                                      const SsimOp *op)
{
    if (model->kernels->len == 0 || op->name == SSIM_NONE || !(op->flops > 0))
        return NULL;
    const char *str = ssim_graph_string(graph, op->name);
    /* The cache is a memo of a pure function of the name: filling it is not a visible change. */
    gboolean fresh;
    CostMemo *e = cost_memo_entry(((SsimAnalytic *)model)->name_cache, graph, op->name, &fresh);
    if (fresh) {
        e->value = G_MAXUINT32;
        for (guint i = 0; i < model->kernels->len; i++)
            if (strcmp(g_array_index(model->kernels, KernelGemms, i).name, str) == 0)
                e->value = i;
    }
    if (e->value == G_MAXUINT32)
        return NULL;
    const KernelGemms *k = &g_array_index(model->kernels, KernelGemms, e->value);
    /* A kernel of the same name but other work (another graph's "qkv") is not this one. */
    return fabs(k->flops - op->flops) <= 1e-9 * op->flops ? k : NULL;
}

/* The kernel entry of graph op `op`, or NULL (not a compute op, or not in the table). */
static const KernelGemms *op_kernel(const SsimAnalytic *model, const SsimGraph *graph, guint32 op)
{
    const SsimOp *o = ssim_graph_op(graph, op);
    return o->kind == SSIM_OP_COMPUTE ? analytic_kernel_of(model, graph, o) : NULL;
}

gboolean ssim_analytic_op_flash(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                SsimGemmShape *score, gboolean *backward)
{
    const KernelGemms *k = op_kernel(model, graph, op);
    if (k == NULL || k->flash == 0)
        return FALSE;
    if (score)
        *score = k->gemm[0];
    if (backward)
        *backward = k->flash == 2;
    return TRUE;
}

double ssim_analytic_op_flash_window(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                     guint64 bytes)
{
    const KernelGemms *k = op_kernel(model, graph, op);
    if (k == NULL || k->flash == 0)
        return 1.0;
    gboolean rect = k->gemm[0].n != k->gemm[0].m;
    if (!rect && k->window == 0)
        return 1.0;
    const SsimAnalyticParams *p = &model->params;
    SsimGemmShape causal = k->gemm[0];
    causal.n = causal.m;
    double full = (double)flash_time(p, &causal, 0, bytes, k->flash == 2);
    double mixed = rect ? (double)flash_time(p, &k->gemm[0], 0, bytes, k->flash == 2)
                        : (double)ssim_analytic_flash_time_window(
                              p, &k->gemm[0], k->window, k->windowed, bytes, k->flash == 2);
    return full > 0 ? mixed / full : 1.0;
}

gboolean ssim_analytic_op_fp8(const SsimAnalytic *model, const SsimGraph *graph, guint32 op)
{
    const KernelGemms *k = op_kernel(model, graph, op);
    return k != NULL && k->fp8;
}

gboolean ssim_analytic_op_gemms(const SsimAnalytic *model, const SsimGraph *graph, guint32 op,
                                const SsimGemmShape **gemms, guint *n)
{
    const KernelGemms *k = op_kernel(model, graph, op);
    if (k == NULL || k->n == 0)
        return FALSE;
    *gemms = k->gemm;
    *n = k->n;
    return TRUE;
}
