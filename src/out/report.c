/*
 * Reporters for a replayed graph (see include/shiftsim/report.h).
 *
 * Busy time of a stream is the sum of its ops' (end - start); a stream runs one op at a time,
 * so these never overlap within a stream.  Per rank, a sweep over the ops' intervals gives the
 * time at least one stream is busy (union) and the time two or more are busy at once (overlap):
 * the part of the work that the streams hid behind each other.
 */
#include <shiftsim/report.h>

#include <shiftsim/output.h>

#include "src/core/heap.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

gboolean ssim_format_from_name(const char *name, SsimFormat *out)
{
    static const char *const names[] = {"table", "csv", "json"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (SsimFormat)i;
            return TRUE;
        }
    return FALSE;
}

typedef struct {
    SsimTime t;
    gint delta;
} Edge;

static int cmp_edge(const void *a, const void *b)
{
    const Edge *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends before starts at the same instant */
}

/* Sweep state of one rank: the time at least one (union) and two (overlap) streams run. */
typedef struct {
    SsimTime prev;
    gint depth;
    gboolean started;
    SsimRankSummary *out;
} Sweep;

static inline void sweep_edge(Sweep *w, SsimTime t, gint delta)
{
    if (w->started) {
        SsimTime span = t - w->prev;
        if (w->depth >= 1)
            w->out->busy_union += span;
        if (w->depth >= 2)
            w->out->overlap += span;
    }
    w->started = TRUE;
    w->prev = t;
    w->depth += delta;
}

/* A stream's next edge in the merge of a rank's streams: edge `pos` of its ops (2 j the start of
 * its j-th op, 2 j + 1 the end).  Ordered like cmp_edge, then by stream: a strict order. */
typedef struct {
    SsimTime t;
    gint delta;
    guint32 stream, pos;
} Head;

static inline gboolean head_less(gpointer ctx, const Head *a, const Head *b)
{
    (void)ctx;
    if (a->t != b->t)
        return a->t < b->t;
    if (a->delta != b->delta)
        return a->delta < b->delta;
    return a->stream < b->stream;
}

SSIM_HEAP_DEFINE(HeadHeap, head_heap, Head, gpointer, head_less, SSIM_HEAP_NO_POS)

/*
 * Per stream, its ops with a positive duration in op order (CSR: ops[first[s] .. first[s + 1])),
 * and whether each stream's ops follow each other in time (each starts at or after the previous
 * one's end), as the runtime runs them.  Then a stream's edges are already in sweep order and a
 * rank's sweep merges its streams' edges; where some stream's are not (a replay with other issue
 * rules), the rank's edges are sorted instead.  The union and the overlap do not depend on the
 * order among edges of one instant, so both ways give the same figures.
 */
static void stream_ops(const SsimGraph *g, const SsimTimeline *t, guint32 **first_out,
                       guint32 **ops_out, gboolean **in_order_out)
{
    guint32 n = ssim_graph_n_ops(g), ns = ssim_graph_n_streams(g);
    guint32 *first = g_new0(guint32, ns + 1);
    gboolean *in_order = g_new(gboolean, MAX(ns, 1));
    for (guint32 s = 0; s < ns; s++)
        in_order[s] = TRUE;
    for (guint32 i = 0; i < n; i++)
        if (t->end[i] > t->start[i])
            first[ssim_graph_op(g, i)->stream + 1]++;
    for (guint32 s = 0; s < ns; s++)
        first[s + 1] += first[s];
    guint32 *ops = g_new(guint32, MAX(first[ns], 1));
    g_autofree guint32 *pos = g_memdup2(first, sizeof(guint32) * (ns + 1));
    for (guint32 i = 0; i < n; i++) {
        if (t->end[i] <= t->start[i])
            continue;
        guint32 s = ssim_graph_op(g, i)->stream;
        if (pos[s] > first[s] && t->start[i] < t->end[ops[pos[s] - 1]])
            in_order[s] = FALSE;
        ops[pos[s]++] = i;
    }
    *first_out = first;
    *ops_out = ops;
    *in_order_out = in_order;
}

void ssim_timeline_summarize(const SsimGraph *g, const SsimTimeline *t, SsimTime **stream_busy,
                             SsimRankSummary **ranks)
{
    guint32 n = ssim_graph_n_ops(g), nr = ssim_graph_n_ranks(g), ns = ssim_graph_n_streams(g);
    SsimTime *busy = g_new0(SsimTime, MAX(ns, 1));
    SsimRankSummary *rs = g_new0(SsimRankSummary, MAX(nr, 1));
    for (guint32 i = 0; i < n; i++)
        busy[ssim_graph_op(g, i)->stream] += t->end[i] - t->start[i];
    g_autofree guint32 *first = NULL, *ops = NULL;
    g_autofree gboolean *in_order = NULL;
    stream_ops(g, t, &first, &ops, &in_order);
    g_autofree guint32 *rfirst = NULL, *rstreams = NULL;
    ssim_graph_rank_streams(g, &rfirst, &rstreams);

    g_auto(HeadHeap) heap = {0};
    g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(Edge));
    for (guint32 r = 0; r < nr; r++) {
        Sweep w = {.out = &rs[r]};
        gboolean merge = TRUE;
        for (guint32 k = rfirst[r]; k < rfirst[r + 1]; k++)
            merge &= in_order[rstreams[k]];
        if (!merge) {
            g_array_set_size(edges, 0);
            for (guint32 k = rfirst[r]; k < rfirst[r + 1]; k++)
                for (guint32 e = first[rstreams[k]]; e < first[rstreams[k] + 1]; e++) {
                    Edge pair[2] = {{t->start[ops[e]], +1}, {t->end[ops[e]], -1}};
                    g_array_append_vals(edges, pair, 2);
                }
            qsort(edges->data, edges->len, sizeof(Edge), cmp_edge);
            for (guint k = 0; k < edges->len; k++)
                sweep_edge(&w, g_array_index(edges, Edge, k).t,
                           g_array_index(edges, Edge, k).delta);
            continue;
        }
        heap.n = 0;
        for (guint32 k = rfirst[r]; k < rfirst[r + 1]; k++) {
            guint32 s = rstreams[k];
            if (first[s] < first[s + 1])
                head_heap_push(&heap, (Head){t->start[ops[first[s]]], +1, s, 0}, NULL);
        }
        while (heap.n > 0) {
            Head h = heap.v[0];
            sweep_edge(&w, h.t, h.delta);
            guint32 next = h.pos + 1;
            if (first[h.stream] + next / 2 < first[h.stream + 1]) {
                guint32 op = ops[first[h.stream] + next / 2];
                Head x = next % 2 ? (Head){t->end[op], -1, h.stream, next}
                                  : (Head){t->start[op], +1, h.stream, next};
                head_heap_replace_top(&heap, x, NULL);
            } else {
                head_heap_pop(&heap, NULL);
            }
        }
    }
    *stream_busy = busy;
    *ranks = rs;
}

static double pct(SsimTime part, SsimTime whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

GString *ssim_report_replay(const SsimGraph *g, const SsimTimeline *t, SsimFormat format,
                            const char *source)
{
    g_autofree SsimTime *busy = NULL;
    g_autofree SsimRankSummary *rs = NULL;
    ssim_timeline_summarize(g, t, &busy, &rs);
    guint32 ns = ssim_graph_n_streams(g), nr = ssim_graph_n_ranks(g);
    g_autofree guint32 *ops = g_new0(guint32, MAX(ns, 1));
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        ops[ssim_graph_op(g, i)->stream]++;
    /* Streams in (rank, creation) order. */
    g_autofree guint32 *rank_first = NULL, *order = NULL;
    ssim_graph_rank_streams(g, &rank_first, &order);

    GString *out = g_string_new(NULL);
    if (format == SSIM_FORMAT_TABLE) {
        g_string_append_printf(out, "graph     %s\n", source);
        g_string_append_printf(
            out, "ops       %u on %u ranks, %u streams; %" G_GUINT64_FORMAT " events\n",
            ssim_graph_n_ops(g), nr, ns, t->events);
        g_string_append_printf(out, "makespan  %" G_GINT64_FORMAT " ns (%.3f ms)\n\n", t->makespan,
                               (double)t->makespan / 1e6);
        g_string_append_printf(out, "%-6s %-16s %8s %14s %7s\n", "rank", "stream", "ops", "busy_ns",
                               "busy%");
        for (guint32 k = 0; k < ns; k++) {
            guint32 s = order[k];
            g_string_append_printf(out, "%-6u %-16s %8u %14" G_GINT64_FORMAT " %6.1f%%\n",
                                   ssim_graph_stream_rank(g, s), ssim_graph_stream_name(g, s),
                                   ops[s], busy[s], pct(busy[s], t->makespan));
        }
        g_string_append_printf(out, "\n%-6s %14s %14s %9s\n", "rank", "busy_ns", "overlap_ns",
                               "overlap%");
        for (guint32 r = 0; r < nr; r++)
            g_string_append_printf(
                out, "%-6u %14" G_GINT64_FORMAT " %14" G_GINT64_FORMAT " %8.1f%%\n", r,
                rs[r].busy_union, rs[r].overlap, pct(rs[r].overlap, rs[r].busy_union));
        g_string_append(out, "\nbusy: time the stream (or, per rank, any stream) runs an op; "
                             "overlap: time two or more streams of the rank run at once.\n");
    } else if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, "rank,stream,ops,busy_ns,rank_busy_ns,rank_overlap_ns,makespan_ns\n");
        for (guint32 k = 0; k < ns; k++) {
            guint32 s = order[k], r = ssim_graph_stream_rank(g, s);
            g_string_append_printf(out,
                                   "%u,%s,%u,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                                   ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "\n",
                                   r, ssim_graph_stream_name(g, s), ops[s], busy[s],
                                   rs[r].busy_union, rs[r].overlap, t->makespan);
        }
    } else {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "graph");
        json_builder_add_string_value(b, source);
        json_builder_set_member_name(b, "ops");
        json_builder_add_int_value(b, ssim_graph_n_ops(g));
        json_builder_set_member_name(b, "events");
        json_builder_add_int_value(b, (gint64)t->events);
        json_builder_set_member_name(b, "makespan_ns");
        json_builder_add_int_value(b, t->makespan);
        json_builder_set_member_name(b, "ranks");
        json_builder_begin_array(b);
        for (guint32 r = 0; r < nr; r++) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "rank");
            json_builder_add_int_value(b, r);
            json_builder_set_member_name(b, "busy_ns");
            json_builder_add_int_value(b, rs[r].busy_union);
            json_builder_set_member_name(b, "overlap_ns");
            json_builder_add_int_value(b, rs[r].overlap);
            json_builder_set_member_name(b, "streams");
            json_builder_begin_array(b);
            for (guint32 k = rank_first[r]; k < rank_first[r + 1]; k++) {
                guint32 s = order[k];
                json_builder_begin_object(b);
                json_builder_set_member_name(b, "name");
                json_builder_add_string_value(b, ssim_graph_stream_name(g, s));
                json_builder_set_member_name(b, "ops");
                json_builder_add_int_value(b, ops[s]);
                json_builder_set_member_name(b, "busy_ns");
                json_builder_add_int_value(b, busy[s]);
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
        ssim_json_append(out, b, TRUE);
    }
    return out;
}

void ssim_json_set_number(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    if (isfinite(v))
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

void ssim_json_append(GString *out, JsonBuilder *b, gboolean pretty)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, pretty);
    gsize len;
    g_autofree char *text = json_generator_to_data(gen, &len);
    g_string_append_len(out, text, (gssize)len);
    g_string_append_c(out, '\n');
}

/* CSV-quotes a field when it holds a comma, quote or newline. */
static void csv_field(GString *out, const char *s)
{
    if (strpbrk(s, ",\"\n") == NULL) {
        g_string_append(out, s);
        return;
    }
    g_string_append_c(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            g_string_append_c(out, '"');
        g_string_append_c(out, *s);
    }
    g_string_append_c(out, '"');
}

GString *ssim_report_timeline_csv(const SsimGraph *g, const SsimTimeline *t)
{
    return ssim_report_timeline_csv_uncontended(g, t, NULL);
}

GString *ssim_report_timeline_csv_uncontended(const SsimGraph *g, const SsimTimeline *t,
                                              const SsimTime *uncontended)
{
    GString *out = g_string_sized_new(64 + (gsize)t->n_ops * 64);
    g_string_append(out, "id,name,rank,stream,kind,class,bytes,flops,ready_ns,start_ns,end_ns");
    g_string_append(out, uncontended ? ",uncontended_ns\n" : "\n");
    char label[128], flops[G_ASCII_DTOSTR_BUF_SIZE];
    for (guint32 i = 0; i < t->n_ops; i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        g_string_append_printf(out, "%u,", o->id);
        csv_field(out, ssim_graph_op_label(g, i, label, sizeof label));
        g_string_append_printf(out, ",%u,", o->rank);
        csv_field(out, ssim_graph_stream_name(g, o->stream));
        g_string_append_printf(out, ",%s,",
                               o->kind == SSIM_OP_COLLECTIVE ? ssim_coll_kind_name(o->coll)
                                                             : ssim_op_kind_name(o->kind));
        csv_field(out, ssim_graph_string(g, o->cls));
        g_string_append_printf(out,
                               ",%" G_GUINT64_FORMAT ",%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                               ",%" G_GINT64_FORMAT,
                               o->bytes, g_ascii_formatd(flops, sizeof flops, "%.17g", o->flops),
                               t->ready[i], t->start[i], t->end[i]);
        if (uncontended && uncontended[i] >= 0)
            g_string_append_printf(out, ",%" G_GINT64_FORMAT, uncontended[i]);
        else if (uncontended)
            g_string_append_c(out, ',');
        g_string_append_c(out, '\n');
    }
    return out;
}

gboolean ssim_write_file(const char *path, const GString *contents, GError **error)
{
    return ssim_output_write(path, contents->str, contents->len, error);
}
