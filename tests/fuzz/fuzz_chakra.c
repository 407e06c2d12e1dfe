/*
 * libFuzzer target: the Chakra execution-trace importer (ssim_chakra_load).  The importer reads
 * files, so each input is written as the one-rank trace set DIR/t.0.et (DIR is made once per
 * process under $TMPDIR) and loaded with the default options and one group of all ranks, then
 * again as `replay --semantics astra` reads it (ASTRA-sim's rules, by the input's size modulo
 * 3: as a workload under the roofline, as a custom collective's set, or under replay-only, which
 * is then replayed too).  An input starting "SPLIT" holds two ranks: the bytes up to the next
 * "SPLIT" are rank 0.
 */
#include <shiftsim/astra.h>
#include <shiftsim/chakra.h>

#include <glib/gstdio.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dir;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir == NULL)
        dir = g_dir_make_tmp("ssim-fuzz-chakra-XXXXXX", NULL);
    g_assert(dir != NULL);
    g_autofree char *r0 = g_build_filename(dir, "t.0.et", NULL);
    g_autofree char *r1 = g_build_filename(dir, "t.1.et", NULL);
    g_autofree char *prefix = g_build_filename(dir, "t", NULL);
    const char *text = (const char *)data;
    gsize n0 = size;
    g_unlink(r1);
    if (size >= 5 && memcmp(text, "SPLIT", 5) == 0) {
        const char *rest = text + 5, *stop = text + size;
        const char *cut = g_strstr_len(rest, stop - rest, "SPLIT");
        const char *second = cut ? cut + 5 : stop;
        g_assert(g_file_set_contents(r1, second, stop - second, NULL));
        text = rest;
        n0 = (gsize)((cut ? cut : stop) - rest);
    }
    g_assert(g_file_set_contents(r0, text, (gssize)n0, NULL));
    GError *error = NULL;
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    SsimGraph *graph = ssim_chakra_load(prefix, NULL, NULL, &stats, &error);
    g_assert((graph == NULL) == (error != NULL));
    if (graph) {
        g_string_free(ssim_chakra_stats_format(&stats), TRUE);
        ssim_graph_free(graph);
    }
    ssim_chakra_stats_clear(&stats);
    g_clear_error(&error);

    SsimChakraOptions astra;
    ssim_chakra_options_init(&astra);
    astra.keep_node_ids = astra.astra_rules = TRUE;
    astra.astra_roofline = size % 3 == 0;
    astra.astra_custom = size % 3 == 1;
    astra.astra_replay_only = size % 3 == 2;
    ssim_chakra_stats_init(&stats);
    graph = ssim_chakra_load(prefix, NULL, &astra, &stats, &error);
    g_assert((graph == NULL) == (error != NULL));
    if (graph) {
        guint32 n_ops = ssim_graph_n_ops(graph);
        g_assert(stats.node_ids ? stats.node_ids->len == n_ops : n_ops == 0);
        g_assert(stats.colls ? stats.colls->len == n_ops : n_ops == 0);
        if (astra.astra_replay_only && n_ops > 0) {
            /* Every rank alone, each op a wait: the replay ends them all. */
            g_auto(SsimAstraConfig) cfg;
            ssim_astra_config_init(&cfg);
            cfg.replay_only = TRUE;
            SsimTimeline *t = ssim_astra_replay(graph, (const guint64 *)stats.node_ids->data,
                                                (const SsimCollAttrs *)stats.colls->data, &cfg,
                                                NULL, NULL, &error);
            g_assert(t != NULL || g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT));
            if (t)
                ssim_timeline_free(t);
            g_clear_error(&error);
        }
        ssim_graph_free(graph);
    }
    ssim_chakra_stats_clear(&stats);
    g_clear_error(&error);
    return 0;
}
