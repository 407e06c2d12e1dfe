/*
 * The steady-state replay (include/shiftsim/steady.h): three probe simulations, a check that
 * their figures are affine in the microbatch count, and the extrapolation.
 *
 * Derived figures (throughput, FLOP/s per GPU, MFU) are recomputed from the extrapolated step
 * with the definitions of include/shiftsim/sim.h, as ssim_result_measure() computes them.
 */
#include <shiftsim/steady.h>

#include <string.h>

/* The figures that are affine in m, as integers or doubles of one result. */
typedef struct {
    gint64 v[6 + 4 * SSIM_COMM_N];
    double f[2];
} Affine;

static void affine_of(const SsimResult *r, Affine *a)
{
    guint k = 0;
    a->v[k++] = r->step_time;
    a->v[k++] = r->n_ops;
    a->v[k++] = (gint64)r->events;
    a->v[k++] = 0;
    a->v[k++] = r->host_wait;
    a->v[k++] = r->host_wait_max;
    for (guint c = 0; c < SSIM_COMM_N; c++) {
        a->v[k++] = r->exposed[c];
        a->v[k++] = r->exposed_max[c];
        a->v[k++] = r->comm_busy[c];
        a->v[k++] = r->contention[c];
    }
    a->f[0] = r->model_flops;
    a->f[1] = r->hardware_flops;
}

/* The bubble through (m_i, b_i), i = 0..2, as (a + b m) / (c + m) at m; the line through the
 * last two probes when that system is singular. */
static double bubble_at(const guint *m, const double *b, guint target)
{
    /* a + b m_i - b_i c = b_i m_i, for a, b, c. */
    double A[3][4];
    for (guint i = 0; i < 3; i++)
        A[i][0] = 1, A[i][1] = m[i], A[i][2] = -b[i], A[i][3] = b[i] * m[i];
    for (guint col = 0; col < 3; col++) {
        guint piv = col;
        for (guint r = col + 1; r < 3; r++)
            if (ABS(A[r][col]) > ABS(A[piv][col]))
                piv = r;
        if (ABS(A[piv][col]) < 1e-300)
            goto linear;
        for (guint j = 0; j < 4; j++) {
            double t = A[col][j];
            A[col][j] = A[piv][j], A[piv][j] = t;
        }
        for (guint r = 0; r < 3; r++)
            if (r != col) {
                double f = A[r][col] / A[col][col];
                for (guint j = col; j < 4; j++)
                    A[r][j] -= f * A[col][j];
            }
    }
    {
        double a = A[0][3] / A[0][0], bb = A[1][3] / A[1][1], c = A[2][3] / A[2][2];
        if (c + target > 0)
            return (a + bb * target) / (c + target);
    }
linear:
    return b[2] + (b[2] - b[1]) / (double)(m[2] - m[1]) * (double)(target - m[2]);
}

gboolean ssim_simulate_steady(const SsimSimConfig *config, SsimResult *result, SsimSteadyInfo *info,
                              GError **error)
{
    g_return_val_if_fail(config && config->par && !config->uncontended && !config->report, FALSE);
    const SsimParallel *par = config->par;
    guint m = ssim_parallel_n_microbatches(par);
    gboolean interleaved = strcmp(par->schedule, "interleaved") == 0;
    guint d = interleaved ? par->pp : 1;
    guint probes[3] = {par->pp, par->pp + d, par->pp + 2 * d};
    if (info)
        *info = (SsimSteadyInfo){0};
    /* Worth it only when the probes together are well short of the whole. */
    if (2 * (guint64)(probes[0] + probes[1] + probes[2]) > m ||
        par->global_batch % ((guint64)par->dp * par->microbatch) != 0)
        return ssim_simulate(config, result, NULL, NULL, error);

    /* The configuration's own checks and memory first, as ssim_simulate() would fail. */
    SsimMemory peak;
    memset(&peak, 0, sizeof peak);
    if (!config->ignore_memory && !ssim_simulate_memory(config, &peak, error))
        return FALSE;
    SsimResult r[3];
    Affine a[3];
    double bubble[3];
    for (guint i = 0; i < 3; i++) {
        SsimParallel probe = *par;
        probe.global_batch = probes[i] * par->dp * par->microbatch;
        SsimSimConfig c = *config;
        c.par = &probe;
        c.ignore_memory = TRUE; /* fewer microbatches in flight: the real one was checked */
        if (!ssim_simulate(&c, &r[i], NULL, NULL, error))
            return FALSE;
        affine_of(&r[i], &a[i]);
        bubble[i] = r[i].bubble;
    }
    /* The step and the counts exactly; the means over ranks (integer divisions of sums that are
     * affine) within the nanosecond each truncation may take. */
    for (guint k = 0; k < G_N_ELEMENTS(a[0].v); k++) {
        gint64 skew = (a[2].v[k] - a[1].v[k]) - (a[1].v[k] - a[0].v[k]);
        if (k < 4 ? skew != 0 : skew < -2 || skew > 2)
            return ssim_simulate(config, result, NULL, NULL, error);
    }

    /* Affine over the probes: extrapolate from the last one, n periods of d microbatches on. */
    guint64 n = (m - probes[2]) / d;
    gboolean whole = (m - probes[2]) % d == 0;
    if (!whole)
        return ssim_simulate(config, result, NULL, NULL, error);
    *result = r[2];
    Affine x;
    for (guint k = 0; k < G_N_ELEMENTS(x.v); k++)
        x.v[k] = a[2].v[k] + (gint64)n * (a[2].v[k] - a[1].v[k]);
    for (guint k = 0; k < 2; k++)
        x.f[k] = a[2].f[k] + (double)n * (a[2].f[k] - a[1].f[k]);
    guint k = 0;
    result->step_time = x.v[k++];
    result->n_ops = (guint32)x.v[k++];
    result->events = (guint64)x.v[k++];
    k++;
    result->host_wait = x.v[k++];
    result->host_wait_max = x.v[k++];
    for (guint c = 0; c < SSIM_COMM_N; c++) {
        result->exposed[c] = x.v[k++];
        result->exposed_max[c] = x.v[k++];
        result->comm_busy[c] = x.v[k++];
        result->contention[c] = x.v[k++];
    }
    result->model_flops = x.f[0];
    result->hardware_flops = x.f[1];
    result->m = m;
    result->bubble = bubble_at(probes, bubble, m);
    /* The derived figures, as ssim_result_measure() derives them (sim.h). */
    double step = ssim_time_to_seconds(result->step_time);
    result->samples_per_s = result->tokens_per_s = 0;
    result->model_tflops_per_gpu = result->hardware_tflops_per_gpu = result->mfu = result->hfu = 0;
    if (step > 0) {
        result->samples_per_s = par->global_batch / step;
        result->tokens_per_s = (double)par->global_batch * config->model->seq_len / step;
        result->model_tflops_per_gpu = result->model_flops / step / result->n_gpus / 1e12;
        result->hardware_tflops_per_gpu = result->hardware_flops / step / result->n_gpus / 1e12;
        if (result->peak_flops > 0) {
            result->mfu = result->model_tflops_per_gpu * 1e12 / result->peak_flops;
            result->hfu = result->hardware_tflops_per_gpu * 1e12 / result->peak_flops;
        }
    }
    /* The configuration's memory, not the probes', with the placement's buffers (the probes'
     * placement_extra: it does not depend on m), checked as ssim_simulate() checks it. */
    if (!config->ignore_memory) {
        result->memory = peak;
        result->memory.total += result->placement_extra;
        result->memory_fits = ssim_memory_fits(&result->memory, config->cluster, NULL);
        if (!result->memory_fits) {
            ssim_memory_fits(&result->memory, config->cluster, error);
            g_prefix_error(
                error, "%s on %s under placement %s (+%.1f MiB of buffers): ", config->model->name,
                config->cluster->name,
                config->placement ? ssim_placement_kind_name(config->placement->kind) : "megatron",
                (double)result->placement_extra / 1048576.0);
            return FALSE;
        }
    }
    if (info) {
        info->extrapolated = TRUE;
        memcpy(info->probes, probes, sizeof probes);
    }
    return TRUE;
}
