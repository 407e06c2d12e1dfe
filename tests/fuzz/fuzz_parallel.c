/*
 * libFuzzer target: parallel split strings ("dp=2,tp=4,pp=2", ssim_parallel_parse).  A string
 * that parses is printed back with ssim_parallel_to_string(), which must parse again; then it is
 * counted against the embedded model's layers (ssim_parallel_resolve_layers), validated against
 * it and the embedded cluster, and a valid split small enough for a tiny op
 * budget (20,000 ops, so each input stays fast) is simulated end to end, so the budget, the
 * schedule, memory estimate, lowering and replay all see fuzzed splits.
 */
#include <shiftsim/sim.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static SsimModel *model;
static SsimCluster *cluster;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (model == NULL) {
        model = ssim_model_default();
        model->layers = 4;
        cluster = ssim_cluster_default();
    }
    char *spec = g_strndup((const char *)data, size); /* stops at an embedded NUL */
    GError *error = NULL;
    SsimParallel par;
    ssim_parallel_init(&par);
    gboolean ok = ssim_parallel_parse(&par, spec, &error);
    g_assert(ok == (error == NULL));
    if (ok) {
        char *back = ssim_parallel_to_string(&par);
        SsimParallel again;
        ssim_parallel_init(&again);
        g_assert(ssim_parallel_parse(&again, back, NULL));
        g_free(back);
        /* Megatron-LM's first/last stage counts and counted embedding and loss, against the
         * model's layers (a refusal is an error like any other). */
        ok = ssim_parallel_resolve_layers(&par, model, &error);
        g_assert(ok == (error == NULL));
        g_assert(!ok || !ssim_parallel_layers_pending(&par));
        SsimSimConfig config = {.model = model,
                                .cluster = cluster,
                                .par = &par,
                                .ignore_memory = TRUE,
                                .max_ops = 20000,
                                .max_events = 1000000};
        SsimResult result;
        if (ok) {
            ok = ssim_simulate(&config, &result, NULL, NULL, &error);
            g_assert(ok == (error == NULL));
        }
    }
    g_clear_error(&error);
    g_free(spec);
    return 0;
}
