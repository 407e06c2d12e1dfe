/*
 * Programs of the op graph (the semantics are in include/shiftsim/graph.h): their storage, the
 * per-op program array, and their part of ssim_graph_finalize().
 *
 * A program is a (rank, name) pair with an index; a rank's programs run in index order.  The
 * per-op array exists only once some op has been put into a program, so a graph without programs
 * carries nothing for them and finalize skips this file's work.
 *
 * Finalize derives each program's neighbours on its rank and its ops (CSR, graph order), and proves
 * that the rules cannot make a program wait for itself.  The proof contracts every program into
 * one node: an edge u -> v of the graph becomes node(u) -> node(v) (an op outside every program is
 * its own node), and each program gets an edge to the next one of its rank.  Rule (a) makes a
 * program wait for every node with an edge into it, rule (b) makes an outside op wait for every
 * program with an edge into it, so the runtime can finish exactly when this contracted relation is
 * acyclic, which Kahn's algorithm checks in O(ops + edges).  The op-level relation was proved
 * acyclic before; a cycle here is always through a program (an op outside program P that needs
 * P's outputs and feeds P, or a program waiting for a later one of its rank).
 */
#include "src/core/graph-private.h"

#include <shiftsim/alloc.h>

#include <string.h>

guint32 ssim_graph_program(SsimGraph *g, guint32 rank, const char *name)
{
    g_autofree char *key = g_strdup_printf("%u\x1f%s", rank, name);
    gpointer v = g_hash_table_lookup(g->prog_ids, key);
    if (v != NULL)
        return GPOINTER_TO_UINT(v) - 1;
    guint32 p = g->prog_rank->len;
    guint32 name_id = ssim_graph_intern(g, name);
    g_array_append_val(g->prog_rank, rank);
    g_array_append_val(g->prog_name, name_id);
    g_hash_table_insert(g->prog_ids, g_steal_pointer(&key), GUINT_TO_POINTER(p + 1));
    if (rank + 1 > g->n_ranks)
        g->n_ranks = rank + 1;
    graph_clear_finalized(g);
    return p;
}

gboolean ssim_graph_set_program(SsimGraph *g, guint32 op, guint32 program)
{
    g_return_val_if_fail(op < g->ops->len, FALSE);
    if (program != SSIM_NONE &&
        (program >= g->prog_rank->len ||
         g_array_index(g->prog_rank, guint32, program) != ssim_graph_op(g, op)->rank))
        return FALSE;
    if (g->op_program == NULL) {
        if (program == SSIM_NONE)
            return TRUE;
        gsize room = MAX(g->ops_room, (gsize)g->ops->len);
        g->op_program = ssim_array_new_large(sizeof(guint32), room);
        g->op_program_room = room;
        g_array_set_size(g->op_program, g->ops->len);
        memset(g->op_program->data, 0xff, (gsize)g->ops->len * sizeof(guint32));
    }
    g_array_index(g->op_program, guint32, op) = program;
    graph_clear_finalized(g);
    return TRUE;
}

guint32 ssim_graph_n_programs(const SsimGraph *g)
{
    return g->prog_rank->len;
}

const char *ssim_graph_program_name(const SsimGraph *g, guint32 program)
{
    if (program >= g->prog_name->len)
        return "?";
    return ssim_graph_string(g, g_array_index(g->prog_name, guint32, program));
}

guint32 ssim_graph_program_rank(const SsimGraph *g, guint32 program)
{
    g_return_val_if_fail(program < g->prog_rank->len, SSIM_NONE);
    return g_array_index(g->prog_rank, guint32, program);
}

guint32 ssim_graph_op_program(const SsimGraph *g, guint32 op)
{
    if (g->op_program == NULL || op >= g->op_program->len)
        return SSIM_NONE;
    return g_array_index(g->op_program, guint32, op);
}

const guint32 *ssim_graph_op_programs(const SsimGraph *g)
{
    return g->op_program != NULL ? (const guint32 *)g->op_program->data : NULL;
}

guint32 ssim_graph_program_prev(const SsimGraph *g, guint32 program)
{
    g_return_val_if_fail(g->finalized && program < g->prog_rank->len, SSIM_NONE);
    return g->prog_prev[program];
}

guint32 ssim_graph_program_next(const SsimGraph *g, guint32 program)
{
    g_return_val_if_fail(g->finalized && program < g->prog_rank->len, SSIM_NONE);
    return g->prog_next[program];
}

const guint32 *ssim_graph_program_ops(const SsimGraph *g, guint32 program, guint *n)
{
    g_return_val_if_fail(g->finalized && program < g->prog_rank->len, NULL);
    *n = g->prog_first[program + 1] - g->prog_first[program];
    return g->prog_ops + g->prog_first[program];
}

void graph_programs_clear(SsimGraph *g, gboolean all)
{
    g_clear_pointer(&g->prog_prev, g_free);
    g_clear_pointer(&g->prog_next, g_free);
    g_clear_pointer(&g->prog_first, g_free);
    g_clear_pointer(&g->prog_ops, g_free);
    if (!all)
        return;
    g_array_unref(g->prog_rank);
    g_array_unref(g->prog_name);
    g_hash_table_unref(g->prog_ids);
    if (g->op_program != NULL)
        g_array_unref(g->op_program);
}

/* The node of op `u` in the contracted relation: its program (n + p), or itself. */
static inline guint32 node_of(const guint32 *prog, guint32 n, guint32 u)
{
    return prog[u] == SSIM_NONE ? u : n + prog[u];
}

/* A left-over predecessor of node x (an op below n, or program x - n) in the contracted
 * relation, or SSIM_NONE. */
static guint32 left_pred(const SsimGraph *g, const guint32 *prog, const guint32 *left, guint32 x)
{
    guint32 n = g->ops->len;
    const guint32 *members = &x;
    guint32 n_members = 1;
    if (x >= n) {
        guint32 prev = g->prog_prev[x - n];
        if (prev != SSIM_NONE && left[n + prev] > 0)
            return n + prev;
        members = g->prog_ops + g->prog_first[x - n];
        n_members = g->prog_first[x - n + 1] - g->prog_first[x - n];
    }
    for (guint32 k = 0; k < n_members; k++) {
        guint32 v = members[k];
        guint nd;
        const guint32 *d = ssim_graph_deps(g, v, &nd);
        guint32 cand[3] = {g->stream_prev[v], g->gate[v], SSIM_NONE};
        for (guint j = 0; j < nd + 2; j++) {
            guint32 u = j < nd ? d[j] : cand[j - nd];
            if (u == SSIM_NONE)
                continue;
            guint32 a = node_of(prog, n, u);
            if (a != x && left[a] > 0)
                return a;
        }
    }
    return SSIM_NONE;
}

static void append_node(const SsimGraph *g, guint32 x, GString *out)
{
    guint32 n = g->ops->len;
    if (x >= n) {
        g_string_append_printf(out, "program %s (rank %u)", ssim_graph_program_name(g, x - n),
                               g_array_index(g->prog_rank, guint32, x - n));
        return;
    }
    char label[128];
    g_string_append(out, ssim_graph_op_label(g, x, label, sizeof label));
}

/*
 * Reports the cycle Kahn's algorithm left: every left-over node waits for another left-over one,
 * so walking predecessors must revisit a node, and the walk from its first visit is the cycle.
 * It goes through a program (an op-level cycle was ruled out before); the message names it and
 * the ops and programs in between, each waiting for the next.
 */
static gboolean report_program_cycle(SsimGraph *g, const guint32 *prog, const guint32 *left,
                                     GError **error)
{
    guint32 n = g->ops->len, np = g->prog_rank->len;
    guint32 cur = SSIM_NONE;
    for (guint32 p = 0; p < np && cur == SSIM_NONE; p++)
        if (left[n + p] > 0)
            cur = n + p;
    g_assert(cur != SSIM_NONE); /* an op-level cycle was ruled out before */
    g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GArray) walk = g_array_new(FALSE, FALSE, sizeof(guint32));
    while (!g_hash_table_contains(seen, GUINT_TO_POINTER(cur + 1))) {
        g_hash_table_insert(seen, GUINT_TO_POINTER(cur + 1), GUINT_TO_POINTER(walk->len + 1));
        g_array_append_val(walk, cur);
        cur = left_pred(g, prog, left, cur);
        g_assert(cur != SSIM_NONE);
    }
    guint from = GPOINTER_TO_UINT(g_hash_table_lookup(seen, GUINT_TO_POINTER(cur + 1))) - 1;
    /* Start the cycle at a program, so that the message opens with one. */
    guint at = from;
    for (guint k = from; k < walk->len; k++)
        if (g_array_index(walk, guint32, k) >= n) {
            at = k;
            break;
        }
    guint32 head = g_array_index(walk, guint32, at);
    GString *path = g_string_new(NULL);
    guint len = walk->len - from;
    for (guint k = 0; k <= len && path->len < 2000; k++) {
        if (k > 0)
            g_string_append(path, " <- ");
        append_node(g, g_array_index(walk, guint32, from + (at - from + k) % len), path);
    }
    g_autofree char *text = g_string_free(path, FALSE);
    guint32 p = head - n;
    guint32 op = g->prog_first[p + 1] > g->prog_first[p] ? g->prog_ops[g->prog_first[p]] : 0;
    return graph_fail(error, g, op,
                      "program %s can never start: programs and the ops outside them wait for "
                      "each other in a cycle (each waits for the next; a program's outputs exist "
                      "only when it has finished, and a rank's programs run in order): %s",
                      ssim_graph_program_name(g, p), text);
}

gboolean graph_finalize_programs(SsimGraph *g, GError **error)
{
    guint32 n = g->ops->len, np = g->prog_rank->len;
    if (np == 0)
        return TRUE;
    const guint32 *prog = ssim_graph_op_programs(g);
    g_autofree guint32 *none = NULL;
    if (prog == NULL) { /* programs exist, but no op is in one */
        none = ssim_new_large(guint32, MAX(n, 1));
        memset(none, 0xff, sizeof(guint32) * MAX(n, 1));
        prog = none;
    }
    g->prog_prev = g_new(guint32, np);
    g->prog_next = g_new(guint32, np);
    g_autofree guint32 *last = g_new(guint32, MAX(g->n_ranks, 1));
    memset(last, 0xff, sizeof(guint32) * MAX(g->n_ranks, 1));
    for (guint32 p = 0; p < np; p++) {
        guint32 r = g_array_index(g->prog_rank, guint32, p);
        g->prog_prev[p] = last[r];
        g->prog_next[p] = SSIM_NONE;
        if (last[r] != SSIM_NONE)
            g->prog_next[last[r]] = p;
        last[r] = p;
    }
    g->prog_first = g_new0(guint32, np + 1);
    for (guint32 i = 0; i < n; i++)
        if (prog[i] != SSIM_NONE)
            g->prog_first[prog[i] + 1]++;
    for (guint32 p = 0; p < np; p++)
        g->prog_first[p + 1] += g->prog_first[p];
    g->prog_ops = ssim_new_large(guint32, MAX(g->prog_first[np], 1));
    g_autofree guint32 *fill = g_memdup2(g->prog_first, sizeof(guint32) * (np + 1));
    for (guint32 i = 0; i < n; i++)
        if (prog[i] != SSIM_NONE)
            g->prog_ops[fill[prog[i]]++] = i;

    /* Kahn's algorithm on the contracted relation (see the top of the file). */
    g_autofree guint32 *indeg = ssim_new0_large(guint32, (gsize)n + np);
    for (guint32 u = 0; u < n; u++)
        for (guint32 e = g->succ_first[u]; e < g->succ_first[u + 1]; e++) {
            guint32 a = node_of(prog, n, u), b = node_of(prog, n, g->succs[e]);
            if (a != b)
                indeg[b]++;
        }
    for (guint32 p = 0; p < np; p++)
        if (g->prog_prev[p] != SSIM_NONE)
            indeg[n + p]++;
    g_autofree guint32 *queue = ssim_new_large(guint32, (gsize)n + np);
    g_autofree guint32 *left = ssim_memdup_large(indeg, sizeof(guint32) * ((gsize)n + np));
    gsize head = 0, tail = 0, total = np;
    for (guint32 u = 0; u < n; u++) {
        total += prog[u] == SSIM_NONE;
        if (prog[u] == SSIM_NONE && left[u] == 0)
            queue[tail++] = u;
    }
    for (guint32 p = 0; p < np; p++)
        if (left[n + p] == 0)
            queue[tail++] = n + p;
    while (head < tail) {
        guint32 x = queue[head++];
        const guint32 *members = &x;
        guint32 n_members = 1;
        if (x >= n) {
            members = g->prog_ops + g->prog_first[x - n];
            n_members = g->prog_first[x - n + 1] - g->prog_first[x - n];
            guint32 next = g->prog_next[x - n];
            if (next != SSIM_NONE && --left[n + next] == 0)
                queue[tail++] = n + next;
        }
        for (guint32 k = 0; k < n_members; k++) {
            guint32 u = members[k];
            for (guint32 e = g->succ_first[u]; e < g->succ_first[u + 1]; e++) {
                guint32 b = node_of(prog, n, g->succs[e]);
                if (b != x && --left[b] == 0)
                    queue[tail++] = b;
            }
        }
    }
    if (tail < total)
        return report_program_cycle(g, prog, left, error);
    return TRUE;
}
