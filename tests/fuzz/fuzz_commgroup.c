/*
 * libFuzzer target: a Chakra comm-group JSON (process-group id -> ranks) read with the bundled
 * 8-rank GPT trace set traces/chakra/stg-gpt-dp2-tp2-pp2 ($SHIFTSIM_DATA, which run.sh sets).
 * The input is written as DIR/groups.json (DIR made once per process under $TMPDIR); the JSON
 * bounds (depth, size) are checked before json-glib parses it, so a deeply nested input must
 * fail with a message, never overflow the stack.
 */
#include <shiftsim/chakra.h>
#include <shiftsim/data.h>

#include <glib/gstdio.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dir, *prefix;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir == NULL) {
        dir = g_dir_make_tmp("ssim-fuzz-commgroup-XXXXXX", NULL);
        char *first = ssim_data_find("traces/chakra/stg-gpt-dp2-tp2-pp2/workload.0.et");
        g_assert(dir != NULL && first != NULL);
        prefix = g_strndup(first, strlen(first) - strlen(".0.et"));
        g_free(first);
    }
    g_autofree char *groups = g_build_filename(dir, "groups.json", NULL);
    g_assert(g_file_set_contents(groups, (const char *)data, (gssize)size, NULL));
    GError *error = NULL;
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    SsimGraph *graph = ssim_chakra_load(prefix, groups, NULL, &stats, &error);
    g_assert((graph == NULL) == (error != NULL));
    if (graph)
        ssim_graph_free(graph);
    ssim_chakra_stats_clear(&stats);
    g_clear_error(&error);
    return 0;
}
