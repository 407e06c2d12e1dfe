/*
 * Sweep benchmark: configurations evaluated and simulated per second by ssim_sweep_run() on 1
 * thread and on every core, for one model on N H100s (default GPT-J 6B on 32 GPUs with the
 * default lists: tp 1,2,4,8, pp every divisor of N, v 1, microbatch 1,2, each placement's native
 * schedule, recompute auto, placement alpa, global batch 2 N).  It also checks that both runs
 * give the same CSV bytes, the sweep's determinism promise.
 *
 * Usage: bench-sweep [MODEL [GPUS [GLOBAL_BATCH]]]
 * The README's 1024-GPU figure comes from the CLI instead (see "Sweeping splits").
 */
#include <shiftsim/sweep.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *model_name = argc > 1 ? argv[1] : "gpt-j-6b";
    guint gpus = argc > 2 ? (guint)atoi(argv[2]) : 32;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load(model_name, &error);
    g_autoptr(SsimCluster) cluster = model ? ssim_cluster_load("dgx-h100", &error) : NULL;
    if (cluster == NULL) {
        fprintf(stderr, "bench-sweep: %s\n", error->message);
        return 1;
    }
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, cluster, gpus);
    if (argc > 3)
        spec.base.global_batch = (guint)atoi(argv[3]);
    guint threads[2] = {1, g_get_num_processors()};
    g_autofree char *first_csv = NULL;
    for (guint t = 0; t < 2; t++) {
        g_autoptr(SsimSweep) sweep = ssim_sweep_new(model, cluster, &spec, &error);
        if (sweep == NULL) {
            fprintf(stderr, "bench-sweep: %s\n", error->message);
            return 1;
        }
        gint64 t0 = g_get_monotonic_time();
        guint n = ssim_sweep_run(sweep, 0, 1, threads[t], NULL, NULL, 1000);
        double s = (double)(g_get_monotonic_time() - t0) / 1e6;
        guint simulated = 0;
        for (guint i = 0; i < n; i++)
            simulated += ssim_sweep_row(sweep, i)->status == SSIM_SWEEP_OK;
        printf("%s on %u H100s, %u thread%s: %u configurations (%u simulated) in %.3f s: "
               "%.1f configurations/s, %.1f simulations/s\n",
               model_name, gpus, threads[t], threads[t] == 1 ? "" : "s", n, simulated, s, n / s,
               simulated / s);
        g_autoptr(GString) csv = ssim_sweep_csv(sweep);
        if (first_csv == NULL) {
            first_csv = g_strdup(csv->str);
        } else if (g_strcmp0(first_csv, csv->str) != 0) {
            fprintf(stderr, "bench-sweep: the CSV differs between 1 and %u threads\n", threads[t]);
            return 1;
        }
    }
    return 0;
}
