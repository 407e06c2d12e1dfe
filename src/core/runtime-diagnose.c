/*
 * What a deadlocked run reports (runtime.h): for each stuck stream copy, the first op it has not
 * finished and why it cannot go on.  An op that arrived in a match names the members that have not
 * arrived; an op that waits for inputs names the unfinished ones (at most four); an op in a
 * program that has not started names what the program waits for (the previous program of its
 * rank, inputs from outside the program); an input in another program counts as unfinished until
 * that whole program has finished, and is named as "program NAME (rank R) to finish".  Runs only
 * after the engine ran dry, so it may walk every op.  Also what a run reports when an op's cost
 * or end is not a finite simulated time (runtime_refuse_time).
 */
#include "src/core/runtime-private.h"

#include <string.h>

static void describe_match_wait(const Run *r, guint c, guint32 i, GString *out)
{
    const SsimGraph *g = r->g;
    const SsimOp *op = ssim_graph_op(g, i);
    char label[128];
    guint n, expected;
    const guint32 *members = ssim_graph_match_ops(g, op->match, &n, &expected);
    ssim_graph_op_label(g, i, label, sizeof label);
    if (is_p2p(op)) {
        gboolean send = op->kind == SSIM_OP_SEND;
        guint32 other = members[send ? 1 : 0];
        g_string_append_printf(out, "blocked on %s %s rank %u (tag %u): ", label,
                               send ? "to" : "from", op->peer, op->tag);
        if (other == SSIM_NONE)
            g_string_append_printf(out, "rank %u never posts the matching %s", op->peer,
                                   send ? "recv" : "send");
        else
            g_string_append_printf(out, "rank %u has not reached the matching %s", op->peer,
                                   ssim_graph_op_label(g, other, label, sizeof label));
        return;
    }
    guint nc = instance_copies(r, op->match);
    g_string_append_printf(out, "blocked in %s %s (group %s, tag %u): %u of %u members arrived",
                           op->kind == SSIM_OP_BARRIER ? "barrier" : "collective", label,
                           ssim_graph_group_name(g, op->group), op->tag,
                           r->arrived[instance_index(r, op->match, instance_of(r, op->match, c))],
                           expected * nc);
    guint gn;
    const guint32 *ranks = ssim_graph_group_ranks(g, op->group, &gn);
    for (guint k = 0; k < gn; k++) {
        guint32 member = SSIM_NONE;
        for (guint j = 0; j < n; j++)
            if (ssim_graph_op(g, members[j])->rank == ranks[k])
                member = members[j];
        if (member == SSIM_NONE)
            g_string_append_printf(out, "; rank %u never issues it", ranks[k]);
        else if (STATE(r->word[AT(r, c, member)]) == WAITING)
            g_string_append_printf(out, "; rank %u has not reached it (%s on stream %s)", ranks[k],
                                   ssim_graph_op_label(g, member, label, sizeof label),
                                   ssim_graph_stream_name(g, ssim_graph_op(g, member)->stream));
    }
}

/* TRUE when copy c of dependency d has delivered its output to op i: d is done, and, when d is
 * in a program other than i's, that whole program is done (rule (b) of graph.h). */
static gboolean delivered(const Run *r, guint c, guint32 d, guint32 i)
{
    if (STATE(r->word[AT(r, c, d)]) != DONE)
        return FALSE;
    if (r->prog == NULL || r->prog[d] == SSIM_NONE || r->prog[d] == r->prog[i])
        return TRUE;
    return r->left[PAT(r, c, r->prog[d])] == 0;
}

/* " program NAME (rank R) to finish (K of N ops done)" */
static void describe_program_end(const Run *r, guint c, guint32 p, GString *out)
{
    guint n;
    ssim_graph_program_ops(r->g, p, &n);
    g_string_append_printf(out, " program %s (rank %u) to finish (%u of %u ops done)",
                           ssim_graph_program_name(r->g, p), ssim_graph_program_rank(r->g, p),
                           n - r->left[PAT(r, c, p)], n);
}

/* One unfinished input `d` of op i, as ", LABEL (rank R stream S)" or its program's end. */
static void describe_input(const Run *r, guint c, guint32 d, guint32 i, guint *shown, GString *out)
{
    if (delivered(r, c, d, i))
        return;
    if ((*shown)++ >= 4)
        return;
    g_string_append(out, *shown > 1 ? "," : "");
    if (STATE(r->word[AT(r, c, d)]) == DONE) {
        describe_program_end(r, c, r->prog[d], out);
        return;
    }
    char dl[128];
    const SsimOp *dep = ssim_graph_op(r->g, d);
    g_string_append_printf(out, " %s (rank %u stream %s)",
                           ssim_graph_op_label(r->g, d, dl, sizeof dl), dep->rank,
                           ssim_graph_stream_name(r->g, dep->stream));
}

/* Op i's inputs are done but its launch is held (blocking launches, runtime.h): name the
 * unfinished op of its rank that holds it (held_first()). */
static void describe_host_hold(const Run *r, guint c, guint32 i, GString *out)
{
    guint32 holder = SSIM_NONE;
    for (guint32 j = 0; j < r->n && holder == SSIM_NONE; j++) {
        if (r->ops[j].rank != r->ops[i].rank || STATE(r->word[AT(r, c, j)]) == DONE)
            continue;
        for (guint32 x = held_first(r, j); x != SSIM_NONE; x = held_next(r, x))
            if (x == i)
                holder = j;
    }
    char label[128];
    if (holder == SSIM_NONE) {
        g_string_append(out, " its launch (blocking launches)");
        return;
    }
    g_string_append_printf(out,
                           " the host, which has not returned from %s (rank %u stream %s): "
                           "launches block",
                           ssim_graph_op_label(r->g, holder, label, sizeof label), r->ops[i].rank,
                           ssim_graph_stream_name(r->g, r->ops[holder].stream));
}

static void describe_dep_wait(const Run *r, guint c, guint32 i, GString *out)
{
    const SsimGraph *g = r->g;
    char label[128];
    g_string_append_printf(out, "blocked on %s, which waits for",
                           ssim_graph_op_label(g, i, label, sizeof label));
    guint nd, shown = 0;
    const guint32 *d = ssim_graph_deps(g, i, &nd);
    for (guint k = 0; k < nd; k++)
        describe_input(r, c, d[k], i, &shown, out);
    if (shown > 4)
        g_string_append_printf(out, " and %u more", shown - 4);
    if (shown == 0 && r->host_next != NULL)
        describe_host_hold(r, c, i, out);
    else if (shown == 0)
        g_string_append(out, " the host barrier before it");
}

/* Op i is in program p, which has not started: say what the program waits for. */
static void describe_program_wait(const Run *r, guint c, guint32 i, guint32 p, GString *out)
{
    const SsimGraph *g = r->g;
    char label[128];
    g_string_append_printf(out, "blocked on %s: its program %s has not started; it waits for",
                           ssim_graph_op_label(g, i, label, sizeof label),
                           ssim_graph_program_name(g, p));
    guint shown = 0;
    guint32 prev = ssim_graph_program_prev(g, p);
    if (prev != SSIM_NONE && r->left[PAT(r, c, prev)] > 0) {
        describe_program_end(r, c, prev, out);
        shown++;
    }
    guint n;
    const guint32 *ops = ssim_graph_program_ops(g, p, &n);
    for (guint k = 0; k < n; k++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(g, ops[k], &nd);
        for (guint j = 0; j < nd; j++)
            if (r->prog[d[j]] != p)
                describe_input(r, c, d[j], ops[k], &shown, out);
        guint32 sp = ssim_graph_stream_prev(g, ops[k]);
        if (sp != SSIM_NONE && r->prog[sp] != p)
            describe_input(r, c, sp, ops[k], &shown, out);
    }
    if (shown > 4)
        g_string_append_printf(out, " and %u more", shown - 4);
    if (shown == 0)
        g_string_append(out, " the host barrier before it");
}

void runtime_diagnose_deadlock(const Run *r, GError **error)
{
    const SsimGraph *g = r->g;
    guint32 n_ops = r->n, n_streams = ssim_graph_n_streams(g);
    gsize n_heads = MAX((gsize)n_streams * r->n_copies, 1);
    g_autofree guint32 *head = g_new(guint32, n_heads);
    memset(head, 0xff, sizeof(guint32) * n_heads);
    for (guint c = 0; c < r->n_copies; c++)
        for (guint32 i = 0; i < n_ops; i++) {
            gsize s = (gsize)ssim_graph_op(g, i)->stream * r->n_copies + c;
            if (STATE(r->word[AT(r, c, i)]) != DONE && head[s] == SSIM_NONE)
                head[s] = i;
        }
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg,
                           "deadlock at t=%" G_GINT64_FORMAT " ns: %" G_GUINT64_FORMAT
                           " of %" G_GUINT64_FORMAT " ops finished; blocked streams:",
                           ssim_engine_now(r->engine), r->n_done, (guint64)n_ops * r->n_copies);
    guint listed = 0, more = 0;
    for (gsize s = 0; s < (gsize)n_streams * r->n_copies; s++) {
        guint32 i = head[s];
        guint c = (guint)(s % r->n_copies);
        guint32 stream = (guint32)(s / r->n_copies);
        if (i == SSIM_NONE)
            continue;
        if (listed >= 16) {
            more++;
            continue;
        }
        listed++;
        g_string_append_printf(msg, "\n  rank %u", ssim_graph_stream_rank(g, stream));
        if (r->n_copies > 1)
            g_string_append_printf(msg, " copy %u", c);
        g_string_append_printf(msg, " stream %s: ", ssim_graph_stream_name(g, stream));
        char label[128];
        guint32 state = STATE(r->word[AT(r, c, i)]);
        if (state == ARRIVED)
            describe_match_wait(r, c, i, msg);
        else if (state == RUNNING)
            g_string_append_printf(msg,
                                   "%s started but never completed (its communication "
                                   "model did not finish it)",
                                   ssim_graph_op_label(g, i, label, sizeof label));
        else if (r->prog != NULL && r->prog[i] != SSIM_NONE && !r->open[PAT(r, c, r->prog[i])])
            describe_program_wait(r, c, i, r->prog[i], msg);
        else
            describe_dep_wait(r, c, i, msg);
    }
    if (more)
        g_string_append_printf(msg, "\n  ... and %u more blocked streams", more);
    g_set_error_literal(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK, msg->str);
    g_string_free(msg, TRUE);
}

/*
 * The time boundary: op i's `duration` (from its cost, or its end at now + duration) is not a
 * finite simulated time.  Records the first such op with what it was asked (its bytes, FLOPs and
 * ranks) and stops the engine; the run then fails with SSIM_RUN_ERROR_TIME.
 */
void runtime_refuse_time(Run *r, guint32 i, guint n_ranks, SsimTime duration, gboolean is_end)
{
    if (r->time_error == NULL) {
        const SsimOp *op = &r->ops[i];
        char label[128], flops[G_ASCII_DTOSTR_BUF_SIZE];
        g_autofree char *what =
            is_end ? g_strdup_printf("would end at t = %" G_GINT64_FORMAT " ns + %" G_GINT64_FORMAT
                                     " ns, past the 2^63 ns (292 years) simulated time can hold",
                                     r->now, duration)
                   : g_strdup("has no finite cost (infinite, NaN, or past 2^63 ns)");
        g_set_error(&r->time_error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_TIME,
                    "op %u '%s' (rank %u) %s; its inputs: %" G_GUINT64_FORMAT " bytes, %s FLOPs, "
                    "%u rank%s; check the rates (bandwidths, peak FLOP/s, efficiencies) it was "
                    "priced with",
                    op->id, ssim_graph_op_label(r->g, i, label, sizeof label), op->rank, what,
                    op->bytes, g_ascii_formatd(flops, sizeof flops, "%.6g", op->flops), n_ranks,
                    n_ranks == 1 ? "" : "s");
    }
    ssim_engine_stop(r->engine);
}
