/*
 * The program of docs/install.md ("Embedding the simulator in a C program"): one GPT-J 6B
 * step through the installed library.  CI builds it with `pkg-config --cflags --libs shiftsim`
 * against `meson install`'s output and runs it (.ci/install-check).
 */
#include <shiftsim/shiftsim.h>
#include <stdio.h>

int main(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load("gpt-j-6b", &error);
    g_autoptr(SsimCluster) cluster = model ? ssim_cluster_load("dgx-h200", &error) : NULL;
    SsimParallel par;
    ssim_parallel_init(&par);
    if (cluster != NULL)
        ssim_cluster_set_nodes(cluster, 1);
    if (cluster == NULL || !ssim_parallel_parse(&par, "dp=2,tp=4,pp=1,mb=1,gbs=16", &error))
        return fprintf(stderr, "embed: %s\n", error->message), 1;
    SsimSimConfig config = {.model = model, .cluster = cluster, .par = &par};
    SsimResult result;
    if (!ssim_simulate(&config, &result, NULL, NULL, &error))
        return fprintf(stderr, "embed: %s\n", error->message), 1;
    printf("GPT-J 6B on 8 H200s, dp 2 x tp 4: step %.3f ms\n", result.step_time / 1e6);
    return 0;
}
