/*
 * libFuzzer target: the cluster INI (ssim_cluster_load_data).
 */
#include <shiftsim/cluster.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimCluster *cluster =
        ssim_cluster_load_data((const char *)data, (gssize)size, "fuzz.ini", &error);
    g_assert((cluster == NULL) == (error != NULL));
    if (cluster) {
        (void)ssim_cluster_n_gpus(cluster);
        (void)ssim_cluster_node_net_bw(cluster);
        ssim_cluster_free(cluster);
    }
    g_clear_error(&error);
    return 0;
}
