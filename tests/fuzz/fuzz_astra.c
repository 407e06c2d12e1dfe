/*
 * libFuzzer target: ASTRA-sim's configuration files as --semantics astra reads them
 * (ssim_astra_config_read_system, ssim_astra_config_read_network,
 * ssim_astra_config_read_memory, ssim_astra_config_read_per_node).  The readers take paths, so
 * each input is written to DIR/c (DIR made once per process under $TMPDIR) and read as a system
 * JSON, a network YAML, a remote memory JSON and a per-node-custom-implementation YAML into one
 * configuration; a success is printed back.
 */
#include <shiftsim/astra.h>

#include <glib/gstdio.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dir;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir == NULL)
        dir = g_dir_make_tmp("ssim-fuzz-astra-XXXXXX", NULL);
    g_assert(dir != NULL);
    g_autofree char *path = g_build_filename(dir, "c", NULL);
    g_assert(g_file_set_contents(path, (const char *)data, (gssize)size, NULL));
    g_auto(SsimAstraConfig) cfg;
    ssim_astra_config_init(&cfg);
    GError *error = NULL;
    gboolean sys = ssim_astra_config_read_system(&cfg, path, &error);
    g_assert(sys == (error == NULL));
    g_clear_error(&error);
    gboolean net = ssim_astra_config_read_network(&cfg, path, &error);
    g_assert(net == (error == NULL));
    g_clear_error(&error);
    gboolean mem = ssim_astra_config_read_memory(&cfg, path, &error);
    g_assert(mem == (error == NULL));
    g_assert(!mem || cfg.mem_type == SSIM_ASTRA_MEM_NONE || cfg.mem_bw > 0);
    g_clear_error(&error);
    gboolean per_node = ssim_astra_config_read_per_node(&cfg, path, &error);
    g_assert(per_node == (error == NULL));
    for (guint i = 0; per_node && i < cfg.n_per_node; i++)
        g_assert(cfg.per_node[i].path && cfg.per_node[i].path[0]);
    g_clear_error(&error);
    if (sys || net || mem || per_node)
        g_string_free(ssim_astra_config_format(&cfg), TRUE);
    return 0;
}
