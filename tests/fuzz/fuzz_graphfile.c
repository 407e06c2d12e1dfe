/*
 * libFuzzer target: the op-graph text format (ssim_graphfile_parse).  Every input must either
 * parse to a graph or fail with a GError; both are freed, so LeakSanitizer sees any leak.
 */
#include <shiftsim/graphfile.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimGraph *graph = ssim_graphfile_parse("fuzz.graph", (const char *)data, (gssize)size, &error);
    g_assert((graph == NULL) == (error != NULL));
    if (graph)
        ssim_graph_free(graph);
    g_clear_error(&error);
    return 0;
}
