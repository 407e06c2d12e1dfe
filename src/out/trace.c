/*
 * Perfetto / Chrome trace writer (see include/shiftsim/trace.h).
 *
 * Process ids are ranks, thread ids are global stream indices; metadata events name them.
 * Communication ops carry their bytes and class in args.  A send and its receive are joined by
 * a flow ("s" at the send's start, "f" binding to the enclosing slice at the receive's end) so
 * Perfetto draws the pipeline transfers as arrows.
 */
#include <shiftsim/trace.h>
#include <shiftsim/report.h>

#include <json-glib/json-glib.h>

static void add_us(JsonBuilder *b, const char *member, SsimTime ns)
{
    json_builder_set_member_name(b, member);
    json_builder_add_double_value(b, (double)ns / 1000.0);
}

static void meta(JsonBuilder *b, const char *what, guint32 pid, gint64 tid, const char *name,
                 gint64 sort)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "ph");
    json_builder_add_string_value(b, "M");
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, what);
    json_builder_set_member_name(b, "pid");
    json_builder_add_int_value(b, pid);
    if (tid >= 0) {
        json_builder_set_member_name(b, "tid");
        json_builder_add_int_value(b, tid);
    }
    json_builder_set_member_name(b, "args");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, sort >= 0 ? "sort_index" : "name");
    if (sort >= 0)
        json_builder_add_int_value(b, sort);
    else
        json_builder_add_string_value(b, name);
    json_builder_end_object(b);
    json_builder_end_object(b);
}

static void flow(JsonBuilder *b, const char *ph, guint32 id, const SsimOp *op, SsimTime ts)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "ph");
    json_builder_add_string_value(b, ph);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, "transfer");
    json_builder_set_member_name(b, "cat");
    json_builder_add_string_value(b, "p2p");
    json_builder_set_member_name(b, "id");
    json_builder_add_int_value(b, id);
    json_builder_set_member_name(b, "pid");
    json_builder_add_int_value(b, op->rank);
    json_builder_set_member_name(b, "tid");
    json_builder_add_int_value(b, op->stream);
    add_us(b, "ts", ts);
    if (ph[0] == 'f') {
        json_builder_set_member_name(b, "bp");
        json_builder_add_string_value(b, "e");
    }
    json_builder_end_object(b);
}

GString *ssim_trace_json(const SsimGraph *g, const SsimTimeline *t, guint max_ranks)
{
    guint32 nr = ssim_graph_n_ranks(g);
    if (max_ranks == 0 || max_ranks > nr)
        max_ranks = nr;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "displayTimeUnit");
    json_builder_add_string_value(b, "ns");
    json_builder_set_member_name(b, "traceEvents");
    json_builder_begin_array(b);
    for (guint32 r = 0; r < max_ranks; r++) {
        char name[32];
        g_snprintf(name, sizeof name, "rank %u", r);
        meta(b, "process_name", r, -1, name, -1);
        meta(b, "process_sort_index", r, -1, NULL, r);
    }
    for (guint32 s = 0; s < ssim_graph_n_streams(g); s++) {
        guint32 r = ssim_graph_stream_rank(g, s);
        if (r >= max_ranks)
            continue;
        meta(b, "thread_name", r, s, ssim_graph_stream_name(g, s), -1);
        meta(b, "thread_sort_index", r, s, NULL, s);
    }
    char label[128];
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank >= max_ranks)
            continue;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "ph");
        json_builder_add_string_value(b, "X");
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, ssim_graph_op_label(g, i, label, sizeof label));
        json_builder_set_member_name(b, "cat");
        const char *cls = ssim_graph_string(g, op->cls);
        json_builder_add_string_value(b, cls[0] ? cls : ssim_op_kind_name(op->kind));
        json_builder_set_member_name(b, "pid");
        json_builder_add_int_value(b, op->rank);
        json_builder_set_member_name(b, "tid");
        json_builder_add_int_value(b, op->stream);
        add_us(b, "ts", t->start[i]);
        add_us(b, "dur", t->end[i] - t->start[i]);
        json_builder_set_member_name(b, "args");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "kind");
        json_builder_add_string_value(b, op->kind == SSIM_OP_COLLECTIVE
                                             ? ssim_coll_kind_name(op->coll)
                                             : ssim_op_kind_name(op->kind));
        if (op->bytes) {
            json_builder_set_member_name(b, "bytes");
            json_builder_add_int_value(b, (gint64)op->bytes);
        }
        if (op->flops > 0) {
            json_builder_set_member_name(b, "flops");
            json_builder_add_double_value(b, op->flops);
        }
        add_us(b, "wait_us", t->start[i] - t->ready[i]);
        json_builder_end_object(b);
        json_builder_end_object(b);
    }
    /* Flow arrows: send start -> recv end, for pairs whose ends are both shown. */
    guint32 flow_id = 0;
    for (guint32 m = 0; m < ssim_graph_n_matches(g); m++) {
        guint n, expected;
        const guint32 *ops = ssim_graph_match_ops(g, m, &n, &expected);
        const SsimOp *first = ssim_graph_op(g, ops[0] != SSIM_NONE ? ops[0] : ops[1]);
        if (first->kind != SSIM_OP_SEND && first->kind != SSIM_OP_RECV)
            continue;
        if (ops[0] == SSIM_NONE || ops[1] == SSIM_NONE)
            continue;
        const SsimOp *snd = ssim_graph_op(g, ops[0]), *rcv = ssim_graph_op(g, ops[1]);
        if (snd->rank >= max_ranks || rcv->rank >= max_ranks)
            continue;
        flow(b, "s", flow_id, snd, t->start[ops[0]]);
        flow(b, "f", flow_id, rcv, t->start[ops[1]] + (t->end[ops[1]] - t->start[ops[1]]) / 2);
        flow_id++;
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    GString *out = g_string_new(NULL);
    ssim_json_append(out, b, FALSE);
    return out;
}
