/* The cost models' memo of graph strings (memo-private.h). */
#include "src/cost/memo-private.h"

#include <string.h>

static void clear_entry(gpointer p)
{
    g_free(((CostMemo *)p)->from);
}

GArray *cost_memo_new(void)
{
    GArray *memo = g_array_new(FALSE, TRUE, sizeof(CostMemo));
    g_array_set_clear_func(memo, clear_entry);
    return memo;
}

CostMemo *cost_memo_entry(GArray *memo, const SsimGraph *graph, guint32 id, gboolean *fresh)
{
    if (id >= memo->len)
        g_array_set_size(memo, id + 1);
    CostMemo *e = &g_array_index(memo, CostMemo, id);
    guint64 serial = ssim_graph_serial(graph);
    if (e->from != NULL && e->serial == serial) {
        *fresh = FALSE;
        return e;
    }
    const char *str = ssim_graph_string(graph, id);
    *fresh = e->from == NULL || strcmp(e->from, str) != 0;
    if (*fresh) {
        g_free(e->from);
        e->from = g_strdup(str);
    }
    e->serial = serial;
    return e;
}
