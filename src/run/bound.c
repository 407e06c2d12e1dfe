/*
 * The lower bound on a step (include/shiftsim/bound.h, which states it and why it holds).
 *
 * The kernels come from the lowering itself (ssim_lower_each_kernel: the same FLOPs and bytes op
 * for op) and are priced as the analytical cost model prices a compute op, so each term is
 * exactly a kernel the simulation runs at no less than that time; with a host floor, a second
 * bound prices each as the host's launch of it, and the larger one holds.
 */
#include <shiftsim/analytic.h>
#include <shiftsim/bound.h>
#include <shiftsim/lower.h>
#include <shiftsim/sim.h>

#include <string.h>

/* Per kernel list, its kernels priced as the GPU's work and as the host's launches of them. */
typedef struct {
    const SsimAnalyticParams *ap;
    const SsimAnalyticParams *ap8; /* the linear layers' GEMMs under fp8, or NULL */
    guint dtype_bytes;             /* of the model: the lowering's bytes are counted in it */
    SsimGemmShape score;           /* the heads' Q K^T: a flash-attention kernel's shape */
    guint64 window;                /* and the model's sliding window (model.h) */
    double windowed;
    SsimTime gpu[SSIM_KERNELS_N], host[SSIM_KERNELS_N];
} Sums;

static void add_kernel(gpointer data, SsimKernelList list, const char *name, double flops,
                       guint64 bytes)
{
    Sums *s = data;
    /* A flash-attention kernel executes less than the FLOPs it carries (the causal half): it is
     * priced as the cost model prices it, exactly. */
    gboolean bwd = strcmp(name, SSIM_FLASH_KERNEL ".bwd") == 0;
    if (bwd || strcmp(name, SSIM_FLASH_KERNEL) == 0)
        s->gpu[list] +=
            ssim_analytic_flash_time_window(s->ap, &s->score, s->window, s->windowed, bytes, bwd);
    else if (s->ap8 != NULL && ssim_gemm_kernel_fp8(name)) /* 1-byte elements (analytic.h) */
        s->gpu[list] += ssim_analytic_compute_time(s->ap8, flops, bytes / MAX(s->dtype_bytes, 1u));
    else
        s->gpu[list] += ssim_analytic_compute_time(s->ap, flops, bytes);
    s->host[list] += s->ap->kernel_floor;
}

/* The bound with the kernel lists' times `sum` and a transfer priced `transfer`; `busiest`, when
 * not NULL, receives the largest W(s) alone, with its stage in its `stage`. */
static void bound_of(const SsimModel *model, const SsimParallel *par, const SsimTime *sum,
                     SsimTime transfer, SsimStepBound *b, SsimStepBound *busiest)
{
    guint p = par->pp, v = par->virtual_stages, pv = p * v;
    guint m = ssim_parallel_n_microbatches(par);

    /* F(j), B(j) of virtual stage j: its layers (the same everywhere unless the split is uneven),
     * the ends at the ends. */
    SsimTime layer_f = sum[SSIM_KERNELS_LAYER_FWD];
    SsimTime layer_b = sum[SSIM_KERNELS_LAYER_RECOMPUTE] + sum[SSIM_KERNELS_LAYER_BWD];
#define L(j) ((SsimTime)ssim_parallel_chunk_layers(par, model, (j)))
#define F(j)                                                                                       \
    (L(j) * layer_f + ((j) == 0 ? sum[SSIM_KERNELS_EMBED_FWD] : 0) +                               \
     ((j) == pv - 1 ? sum[SSIM_KERNELS_HEAD_FWD] : 0))
#define B(j)                                                                                       \
    (L(j) * layer_b + ((j) == 0 ? sum[SSIM_KERNELS_EMBED_BWD] : 0) +                               \
     ((j) == pv - 1 ? sum[SSIM_KERNELS_HEAD_BWD] : 0))
    *b = (SsimStepBound){.transfer = transfer, .fwd0 = F(0u), .bwd0 = B(0u)};
    SsimTime head = 0, tail = 0;
    for (guint st = 0; st < p; st++) {
        SsimTime work = 0;
        for (guint c = 0; c < v; c++)
            work += F(c * p + st) + B(c * p + st);
        work *= (SsimTime)m;
        SsimTime total = head + work + tail;
        if (st == 0 || total > b->step)
            b->step = total, b->stage = st, b->work = work, b->head = head, b->tail = tail;
        if (busiest != NULL && (st == 0 || work > busiest->work))
            *busiest = (SsimStepBound){.step = work,
                                       .stage = st,
                                       .work = work,
                                       .transfer = transfer,
                                       .fwd0 = b->fwd0,
                                       .bwd0 = b->bwd0};
        /* The next GPU waits for this one's chunk 0 and its transfer, both ways. */
        head += F(st) + transfer;
        tail += B(st) + transfer;
    }
#undef F
#undef B
#undef L
}

void ssim_step_lower_bound(const SsimModel *model, const SsimCluster *cluster,
                           const SsimParallel *par, SsimStepBound *b)
{
    SsimAnalyticParams ap;
    ssim_analytic_params_from_cluster(&ap, cluster, model->dtype);
    ap.kernel_floor = ssim_host_kernel_floor(cluster, par); /* as the simulation's (sim.h) */
    /* With a host floor the simulation's GEMMs may run up to the burst rate (a GPU the host leaves
     * idle keeps its clocks, sim.c): the bound takes that rate, never slower than the step's. */
    if (ap.kernel_floor > 0)
        ap.gemm_efficiency = ssim_analytic_sustained_efficiency(cluster, 0.0);
    SsimAnalyticParams ap8;
    ssim_analytic_fp8_params(&ap, &ap8);
    SsimModel local; /* a GPU's share of each sequence under context parallelism */
    SsimGemm score = ssim_model_gemm(ssim_parallel_local_model(par, model, &local),
                                     SSIM_GEMM_ATTN_SCORE, par->microbatch, par->tp);
    Sums s = {.ap = &ap,
              .ap8 = par->fp8 != SSIM_FP8_OFF ? &ap8 : NULL,
              .dtype_bytes = ssim_dtype_size(model->dtype),
              .score = {score.m, score.n, score.k, score.batch},
              .window = model->sliding_window,
              .windowed = ssim_model_windowed_share(model)};
    ssim_lower_each_kernel(model, par, add_kernel, &s);
    guint64 bytes = ssim_lower_transfer_bytes(model, par);
    SsimTime inside = ssim_analytic_p2p_time(&ap, bytes, FALSE);
    SsimTime across = ssim_analytic_p2p_time(&ap, bytes, TRUE);
    bound_of(model, par, s.gpu, MIN(inside, across), b, NULL);
    if (ap.kernel_floor <= 0)
        return;
    /* The host's bound: it launches every kernel of its GPU one after another, a floor each, and
     * no kernel starts before its launch.  Only the work term: whether the host waits after a
     * transfer depends on the framework (Megatron-LM's does, runtime.h; a collective-permute
     * does not), so no fill or drain is added to it. */
    SsimStepBound chains, hb;
    bound_of(model, par, s.host, 0, &chains, &hb);
    if (hb.step > b->step)
        *b = hb;
}
