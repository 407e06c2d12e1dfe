/*
 * The op budget of a lowering (include/shiftsim/budget.h).
 *
 * ssim_lower() emits, per graph rank, the same programs for every layer and microbatch: a
 * layer's forward (12 to 20 kernels and 2 to 4 TP collectives), its recompute (as many again at
 * most) and its backward (about twice the forward), plus per microbatch and model chunk the
 * pipeline sends and receives, the embedding and the head, and per rank the gradient reductions
 * and the optimizer.  The constants below round each of those up, so the estimate errs high by
 * a small factor (tests/test_budget.c checks it against real lowerings); a limit is a budget,
 * not a prediction, and refusing a little early is safer than exhausting memory.
 */
#include <shiftsim/budget.h>

#include <shiftsim/alloc.h>
#include <shiftsim/types.h>

/* Ops per layer and microbatch, all of forward, recompute, backward and their TP collectives: up
 * to about 66 (a sequential block with both dropouts, rotary positions, sequence parallelism, full
 * recompute, unfused gradient accumulation and Megatron-LM's own layers' bias kernels). */
#define OPS_PER_LAYER 80
/* Ops per microbatch and model chunk outside the layers: sends, receives, embedding, head. */
#define OPS_PER_CHUNK 16
/* Ops per layer once per iteration (gradient reductions, optimizer pieces), and per rank. */
#define OPS_PER_LAYER_ONCE 8
#define OPS_PER_RANK       32

void ssim_budget_estimate(const SsimModel *model, const SsimParallel *par, gboolean exact,
                          SsimOpEstimate *out)
{
    guint pp = MAX(par->pp, 1u), v = MAX(par->virtual_stages, 1u);
    guint cp = MAX(par->cp, 1u);
    out->ranks = exact ? (guint64)ssim_parallel_world(par) : (guint64)pp * cp;
    out->layers_per_rank = (model->layers + pp - 1) / pp;
    out->microbatches = ssim_parallel_n_microbatches(par);
    /* Context parallelism: cp attention kernels a pass instead of one, and a ring step beside
     * each but the last (the backward's one more): 6 cp more at most. */
    out->ops_per_layer = OPS_PER_LAYER + (cp > 1 ? 6 * cp : 0);
    double per_rank =
        (double)out->layers_per_rank * (double)out->microbatches * (double)out->ops_per_layer +
        (double)out->microbatches * v * OPS_PER_CHUNK +
        (double)out->layers_per_rank * OPS_PER_LAYER_ONCE + OPS_PER_RANK;
    out->ops = (double)out->ranks * per_rank;
}

gboolean ssim_budget_check(const SsimModel *model, const SsimParallel *par, gboolean exact,
                           guint64 max_ops, GError **error)
{
    SsimOpEstimate est;
    ssim_budget_estimate(model, par, exact, &est);
    if (est.microbatches > SSIM_MAX_MICROBATCHES) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "global_batch: %" G_GUINT64_FORMAT " microbatches per pipeline (global batch "
                    "%u / (dp %u x microbatch %u)) is over the limit of %u",
                    est.microbatches, par->global_batch, par->dp, par->microbatch,
                    SSIM_MAX_MICROBATCHES);
        return FALSE;
    }
    if (max_ops == 0)
        max_ops = SSIM_MAX_OPS_DEFAULT;
    if (max_ops != G_MAXUINT64 && est.ops > (double)max_ops) {
        g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
                    "max_ops: the lowering would build about %.3g ops (%" G_GUINT64_FORMAT
                    " layers per rank x %" G_GUINT64_FORMAT " microbatches x %" G_GUINT64_FORMAT
                    " ops per layer x %" G_GUINT64_FORMAT
                    " graph ranks), over the limit of %" G_GUINT64_FORMAT
                    " ops (--max-ops); use fewer microbatches%s or raise "
                    "--max-ops",
                    est.ops, est.layers_per_rank, est.microbatches, est.ops_per_layer, est.ranks,
                    max_ops, exact ? ", drop --exact" : "");
        return FALSE;
    }
    return TRUE;
}

gboolean ssim_budget_check_time(const SsimModel *model, const SsimCluster *cluster,
                                const SsimParallel *par, GError **error)
{
    double flops = ssim_parallel_hardware_flops(par, model);
    guint64 gpus = ssim_parallel_world(par);
    double peak = ssim_cluster_peak_flops(cluster, model->dtype);
    if (!(peak > 0))
        peak = ssim_cluster_peak_flops(cluster, SSIM_DTYPE_BF16);
    double least = flops / ((double)MAX(gpus, 1u) * peak);
    if (!(least <= SSIM_MAX_STEP_SECONDS)) { /* also NaN */
        g_set_error(
            error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT,
            "step_time: one iteration needs at least %.3g s (%.3g FLOPs / (%" G_GUINT64_FORMAT
            " GPUs x %.3g FLOP/s peak)), over the limit of %.0f s; check the model's "
            "shape and the batch",
            least, flops, gpus, peak, SSIM_MAX_STEP_SECONDS);
        return FALSE;
    }
    return TRUE;
}

/* ---- host memory ------------------------------------------------------------------------- */

void ssim_budget_memory_estimate(const SsimModel *model, const SsimParallel *par,
                                 SsimMemoryMode mode, SsimMemoryEstimate *out)
{
    SsimOpEstimate rep, all;
    ssim_budget_estimate(model, par, FALSE, &rep);
    ssim_budget_estimate(model, par, TRUE, &all);
    out->mode = mode;
    out->graph_ops = mode == SSIM_MEMORY_EXPLICIT ? all.ops : rep.ops;
    out->op_copies = mode == SSIM_MEMORY_REPLICATED ? all.ops : 0;
    out->bytes = out->graph_ops * SSIM_BYTES_PER_GRAPH_OP + out->op_copies * SSIM_BYTES_PER_OP_COPY;
}

guint64 ssim_budget_memory_default(void)
{
    return ssim_alloc_available_bytes() / 4 * 3;
}

static double gb(double bytes)
{
    return bytes / 1e9;
}

/* The limit in force: 0 is the default, which may itself be 0 (unknown: none). */
static guint64 limit_of(guint64 max_memory)
{
    if (max_memory == 0)
        max_memory = ssim_budget_memory_default();
    return max_memory == 0 ? G_MAXUINT64 : max_memory;
}

gboolean ssim_budget_check_memory(const SsimModel *model, const SsimParallel *par,
                                  SsimMemoryMode mode, guint held, guint64 max_memory,
                                  GError **error)
{
    guint64 limit = limit_of(max_memory);
    if (limit == G_MAXUINT64)
        return TRUE;
    SsimMemoryEstimate est;
    ssim_budget_memory_estimate(model, par, mode, &est);
    double need = est.bytes * MAX(held, 1u);
    if (need <= (double)limit)
        return TRUE;
    static const char *const how[] = {"the representative graph",
                                      "the representative graph and every GPU's copy (--exact)",
                                      "the explicit per-GPU graph (--exact-graph, or --exact with "
                                      "a timeline, traces or plots)"};
    g_autofree char *times =
        held > 1 ? g_strdup_printf(" x %u runs held at once", held) : g_strdup("");
    g_autofree char *copies = est.op_copies > 0
                                  ? g_strdup_printf(" + %.3g op copies x %.0f bytes", est.op_copies,
                                                    SSIM_BYTES_PER_OP_COPY)
                                  : g_strdup("");
    g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY,
                "max_memory: %s would need about %.3g GB of host memory (%.3g ops x %.0f "
                "bytes%s%s), over the limit of %.3g GB (--max-memory%s); %suse fewer "
                "microbatches (a smaller --global-batch) or raise --max-memory",
                how[mode], gb(need), est.graph_ops, SSIM_BYTES_PER_GRAPH_OP, copies, times,
                gb((double)limit), max_memory == 0 ? ", default 75% of this machine's memory" : "",
                mode == SSIM_MEMORY_REPRESENTATIVE ? ""
                                                   : "simulate one representative per stage "
                                                     "(drop --exact and --exact-graph), ");
    return FALSE;
}

gboolean ssim_budget_check_resident(guint64 max_memory, const char *when, double estimate,
                                    GError **error)
{
    guint64 limit = limit_of(max_memory);
    if (limit == G_MAXUINT64)
        return TRUE;
    guint64 held = ssim_alloc_resident_bytes();
    if (held <= limit)
        return TRUE;
    g_autofree char *est = estimate > 0 ? g_strdup_printf(" (the estimate before the work was "
                                                          "%.3g GB)",
                                                          gb(estimate))
                                        : g_strdup("");
    g_set_error(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_MEMORY,
                "max_memory: the process holds %.3g GB resident %s%s, over the limit of %.3g GB "
                "(--max-memory); simulate one representative per stage (drop --exact), use fewer "
                "microbatches or raise --max-memory",
                gb((double)held), when, est, gb((double)limit));
    return FALSE;
}
