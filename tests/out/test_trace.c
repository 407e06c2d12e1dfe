/*
 * Timelines people look at: the Perfetto trace parses back with json-glib and has one complete
 * event per op on the right process/thread, named processes and threads, and one flow pair per
 * transfer; the Gantt plot's data and script are checked as text (no gnuplot needed).
 */
#include <criterion/criterion.h>
#include <json-glib/json-glib.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/plot.h>
#include <shiftsim/trace.h>
#include <glib/gstdio.h>
#include <string.h>

static SsimGraph *load_example(const char *name, SsimTimeline **t)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", name, NULL);
    SsimGraph *g = ssim_graphfile_load(path, NULL);
    cr_assert_not_null(g);
    *t = ssim_runtime_run(g, NULL, NULL, NULL);
    cr_assert_not_null(*t);
    return g;
}

Test(trace, perfetto_json_round_trip)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("tp-pipeline.graph", &t);
    g_autoptr(GString) json = ssim_trace_json(g, t, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    GError *error = NULL;
    cr_assert(json_parser_load_from_data(p, json->str, (gssize)json->len, &error), "%s",
              error ? error->message : "");
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    guint ns = ssim_graph_n_streams(g);
    g_autofree guint *per_thread = g_new0(guint, ns);
    guint complete = 0, flows_s = 0, flows_f = 0, thread_names = 0, process_names = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if (strcmp(ph, "X") == 0) {
            gint64 tid = json_object_get_int_member(e, "tid");
            gint64 pid = json_object_get_int_member(e, "pid");
            cr_assert(tid >= 0 && tid < ns);
            cr_assert_eq((guint32)pid, ssim_graph_stream_rank(g, (guint32)tid));
            cr_assert(json_object_get_double_member(e, "dur") >= 0);
            per_thread[tid]++;
            complete++;
        } else if (strcmp(ph, "s") == 0) {
            flows_s++;
        } else if (strcmp(ph, "f") == 0) {
            flows_f++;
        } else if (strcmp(ph, "M") == 0) {
            const char *name = json_object_get_string_member(e, "name");
            thread_names += strcmp(name, "thread_name") == 0;
            process_names += strcmp(name, "process_name") == 0;
        }
    }
    cr_assert_eq(complete, ssim_graph_n_ops(g));
    /* 4 ranks x 3 streams; each stream has 2 (tp, pp) or 4 (compute) ops. */
    for (guint s = 0; s < ns; s++) {
        const char *name = ssim_graph_stream_name(g, s);
        cr_assert_eq(per_thread[s], strcmp(name, "compute") == 0 ? 4u : 2u, "stream %s", name);
    }
    cr_assert_eq(flows_s, 4);
    cr_assert_eq(flows_f, 4);
    cr_assert_eq(thread_names, ns);
    cr_assert_eq(process_names, 4);

    /* Events on one thread never overlap (they nest trivially). */
    ssim_timeline_free(t);
}

Test(trace, max_ranks_limits_the_trace)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("tp-pipeline.graph", &t);
    g_autoptr(GString) json = ssim_trace_json(g, t, 2);
    /* Ranks 0 and 1 only: 16 ops, and no flow (all transfers end on ranks 2 and 3). */
    guint n = 0;
    for (const char *p = json->str; (p = strstr(p, "\"ph\":\"X\"")); p++)
        n++;
    cr_assert_eq(n, 16);
    cr_assert_null(strstr(json->str, "\"ph\":\"s\""));
    ssim_timeline_free(t);
}

Test(plot, gantt_data_and_script)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = load_example("two-streams.graph", &t);
    g_autofree char *dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "g.png", NULL);
    SsimPlotStatus st;
    GError *error = NULL;
    /* gnuplot may or may not be installed: both outcomes are fine, the text is what we check. */
    g_autofree char *saved = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
    gboolean ok = ssim_plot_gantt(g, t, png, NULL, "two streams", &st, &error);
    g_setenv("PATH", saved, TRUE);
    cr_assert(ok, "%s", error ? error->message : "");
    cr_assert_eq(st, SSIM_PLOT_NO_GNUPLOT);
    g_autofree char *dat_path = ssim_plot_sibling(png, ".dat");
    g_autofree char *gp_path = ssim_plot_sibling(png, ".gp");
    g_autofree char *dat = NULL, *gp = NULL;
    cr_assert(g_file_get_contents(dat_path, &dat, NULL, NULL));
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    /* Known classes first (dp), then other labels (the unlabelled compute ops).  bwd.l2 and
     * bwd.l1 touch (0..300, 300..600 us) and become one box; the barrier has zero length and is
     * not drawn.  Times in microseconds (makespan < 20 ms). */
    cr_assert(strstr(dat, "# start_us end_us row"), "%s", dat);
    cr_assert(strstr(dat, "# class dp\n300.000000 500.000000 1\n600.000000 800.000000 1\n"), "%s",
              dat);
    cr_assert(strstr(dat, "# class compute\n0.000000 600.000000 0\n800.000000 850.000000 0\n"),
              "%s", dat);
    cr_assert(strstr(gp, "set ytics ('r0 compute' 0, 'r0 comm' 1, 'r0 host' 2)"), "%s", gp);
    cr_assert(strstr(gp, "index 0 using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                         "lc rgb '#d55e00' title 'dp'"),
              "%s", gp);
    cr_assert(strstr(gp, "index 1 using (($1+$2)/2):3:(w($1,$2)):(0.4) with boxxyerror "
                         "lc rgb '#999999' title 'compute'"),
              "%s", gp);
    cr_assert(strstr(gp, "set title 'two streams'"));
    g_unlink(dat_path);
    g_unlink(gp_path);
    g_rmdir(dir);
    ssim_timeline_free(t);
}

Test(plot, sibling_and_quote)
{
    g_autofree char *a = ssim_plot_sibling("out/x.png", ".gp");
    g_autofree char *b = ssim_plot_sibling("dir.v2/x", ".dat");
    cr_assert_str_eq(a, "out/x.gp");
    cr_assert_str_eq(b, "dir.v2/x.dat");
    g_autoptr(GString) q = g_string_new(NULL);
    ssim_plot_quote(q, "it's");
    cr_assert_str_eq(q->str, "'it''s'");
}

/* ---- streamed output: exact times, no overlap, the proto format read back ---- */

#include <math.h>

#include "tests/out/perfetto-trace.pb-c.h"

/* One stream of back-to-back ops of awkward lengths (1 ns, 999 ns, 1001 ns, ...), a second
 * stream, and a transfer between two ranks: times no microsecond decimal rounds safely. */
static SsimGraph *awkward_graph(SsimTimeline **t)
{
    static const SsimTime lengths[] = {1, 999, 1001, 7, 1000001, 3, 333333, 1, 1};
    SsimGraph *g = ssim_graph_new();
    guint32 s0 = ssim_graph_stream(g, 0, "compute"), s1 = ssim_graph_stream(g, 0, "side");
    for (guint i = 0; i < G_N_ELEMENTS(lengths); i++) {
        SsimOpSpec c = SSIM_OP_SPEC_INIT;
        c.stream = i % 3 == 2 ? s1 : s0;
        c.duration = lengths[i];
        c.name = i == 4 ? "a \"quoted\"\\name\n" : "k";
        c.flops = i == 1 ? 1.5 : 1e12;
        ssim_graph_add_op(g, &c, NULL, 0);
    }
    SsimOpSpec snd = SSIM_OP_SPEC_INIT, rcv = SSIM_OP_SPEC_INIT;
    snd.kind = SSIM_OP_SEND, rcv.kind = SSIM_OP_RECV;
    snd.bytes = rcv.bytes = 12345;
    snd.peer = 1, rcv.peer = 0;
    snd.stream = ssim_graph_stream(g, 0, "send");
    rcv.stream = ssim_graph_stream(g, 1, "recv");
    guint32 after = 0;
    ssim_graph_add_op(g, &snd, &after, 1);
    ssim_graph_add_op(g, &rcv, NULL, 0);
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    p.alpha = 1;
    SsimCostModel m = ssim_simple_cost_model(&p);
    *t = ssim_runtime_run(g, &m, NULL, NULL);
    cr_assert_not_null(*t);
    return g;
}

/* A JSON number of microseconds in nanoseconds, checking it has at most three decimals. */
static gint64 json_ns(JsonObject *e, const char *member)
{
    JsonNode *n = json_object_get_member(e, member);
    cr_assert_not_null(n, "no %s", member);
    if (json_node_get_value_type(n) == G_TYPE_INT64)
        return json_node_get_int(n) * 1000;
    double us = json_node_get_double(n);
    double ns = us * 1000.0;
    cr_assert(fabs(ns - llround(ns)) < 1e-3, "%s = %.9f us is not a whole nanosecond", member, us);
    return llround(ns); /* Perfetto's rule; the check above makes any rounding agree */
}

Test(trace, json_times_are_whole_nanoseconds_and_never_overlap)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = awkward_graph(&t);
    g_autoptr(GString) json = ssim_trace_json(g, t, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    GError *error = NULL;
    cr_assert(json_parser_load_from_data(p, json->str, (gssize)json->len, &error), "%s",
              error ? error->message : "");
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    guint ns = ssim_graph_n_streams(g);
    g_autofree gint64 *last_end = g_new(gint64, ns);
    for (guint s = 0; s < ns; s++)
        last_end[s] = -1;
    guint complete = 0;
    gboolean quoted = FALSE;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (strcmp(json_object_get_string_member(e, "ph"), "X") != 0)
            continue;
        gint64 tid = json_object_get_int_member(e, "tid");
        gint64 ts = json_ns(e, "ts"), dur = json_ns(e, "dur");
        /* Exact: the op with this start on this stream has exactly this length. */
        gboolean found = FALSE;
        for (guint32 k = 0; k < ssim_graph_n_ops(g); k++)
            found = found || (ssim_graph_op(g, k)->stream == tid && t->start[k] == ts &&
                              t->end[k] - t->start[k] == dur);
        cr_assert(found,
                  "no op on stream %" G_GINT64_FORMAT " runs %" G_GINT64_FORMAT
                  " + %" G_GINT64_FORMAT,
                  tid, ts, dur);
        /* A stream's events come in order and touch at most. */
        cr_assert_geq(ts, last_end[tid], "overlap on stream %" G_GINT64_FORMAT, tid);
        last_end[tid] = ts + dur;
        quoted = quoted || strstr(json_object_get_string_member(e, "name"), "\"quoted\"") != NULL;
        complete++;
    }
    cr_assert_eq(complete, ssim_graph_n_ops(g));
    cr_assert(quoted, "the escaped name did not come back");
    /* As text: every time is an integer number of nanoseconds written as microseconds with at
     * most three decimals, never a binary fraction's expansion. */
    g_autoptr(GRegex) re = g_regex_new("\"(ts|dur|wait_us)\":([^,}]*)", 0, 0, NULL);
    g_autoptr(GRegex) exact = g_regex_new("^[0-9]+(\\.[0-9]{1,3})?$", 0, 0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    guint times = 0;
    for (g_regex_match(re, json->str, 0, &mi); g_match_info_matches(mi);
         g_match_info_next(mi, NULL)) {
        g_autofree char *v = g_match_info_fetch(mi, 2);
        cr_assert(g_regex_match(exact, v, 0, NULL), "time %s is not whole nanoseconds", v);
        times++;
    }
    cr_assert_geq(times, 3 * complete);
    ssim_timeline_free(t);
}

static gboolean count_blocks(gpointer data, const void *bytes, gsize len, GError **error)
{
    (void)bytes, (void)error;
    guint64 *c = data;
    c[0]++;
    c[1] = MAX(c[1], len);
    c[2] += len;
    return TRUE;
}

static gboolean refuse(gpointer data, const void *bytes, gsize len, GError **error)
{
    (void)data, (void)bytes, (void)len;
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSPC, "disk full");
    return FALSE;
}

static gboolean append(gpointer data, const void *b, gsize len, GError **error)
{
    (void)error;
    g_byte_array_append(data, b, (guint)len);
    return TRUE;
}

/* 8 ranks x 5000 compute ops (ten chunks of the writer's), named from a set that grows along
 * the ops, so that names are first used, and interned, inside later chunks too. */
static SsimGraph *many_ops(void)
{
    SsimGraph *g = ssim_graph_new();
    for (guint r = 0; r < 8; r++) {
        guint32 s = ssim_graph_stream(g, r, "compute");
        for (guint i = 0; i < 5000; i++) {
            char name[32];
            g_snprintf(name, sizeof name, "op%u", i / 700 + (i % 3 == 0 ? r : 0));
            SsimOpSpec c = SSIM_OP_SPEC_INIT;
            c.stream = s;
            c.duration = 1 + i % 17;
            c.name = i % 5 ? name : NULL;
            c.cls = i % 7 ? "fwd" : "bwd";
            ssim_graph_add_op(g, &c, NULL, 0);
        }
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    return g;
}

/* A trace far larger than a block reaches the sink in blocks: nothing holds the whole. */
Test(trace, streamed_in_blocks)
{
    g_autoptr(SsimGraph) g = many_ops();
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, NULL);
    for (guint f = 0; f < 2; f++)
        for (guint threads = 1; threads <= 3; threads += 2) {
            guint64 c[3] = {0, 0, 0};
            SsimTraceSink sink = {count_blocks, c};
            cr_assert(ssim_trace_write(g, t, 0, f ? SSIM_TRACE_PROTO : SSIM_TRACE_JSON, threads,
                                       &sink, NULL));
            cr_assert_gt(c[2], 2 * SSIM_TRACE_BLOCK, "format %u: %" G_GUINT64_FORMAT " bytes", f,
                         c[2]);
            cr_assert_gt(c[0], 2);
            cr_assert_leq(c[1], SSIM_TRACE_BLOCK);
        }
    for (guint threads = 1; threads <= 4; threads++) {
        SsimTraceSink bad = {refuse, NULL};
        GError *error = NULL;
        cr_assert_not(ssim_trace_write(g, t, 0, SSIM_TRACE_PROTO, threads, &bad, &error));
        cr_assert(g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOSPC));
        g_error_free(error);
    }
}

typedef struct {
    guint64 begin_ts; /* of the slice open on the track, or G_MAXUINT64 */
    guint64 last_end;
    guint32 op_id;
} Track;

/* The proto trace decoded with protobuf-c: descriptors name every rank and stream, every op is
 * one slice begin and end at its exact integer times on its stream's track, the slices of a
 * track never overlap, names and annotations resolve through interning, flows bind send to
 * receive. */
static void check_proto(const SsimGraph *g, const SsimTimeline *t)
{
    g_autoptr(GByteArray) bytes = g_byte_array_new();
    SsimTraceSink sink = {append, bytes};
    cr_assert(ssim_trace_write(g, t, 0, SSIM_TRACE_PROTO, 0, &sink, NULL));
    Pftrace__Trace *tr = pftrace__trace__unpack(NULL, bytes->len, bytes->data);
    cr_assert_not_null(tr, "the proto trace does not decode");
    guint ns = ssim_graph_n_streams(g), nr = ssim_graph_n_ranks(g);
    g_autofree Track *tracks = g_new0(Track, ns);
    g_autoptr(GHashTable) names =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    g_autoptr(GHashTable) ann = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    g_autoptr(GHashTable) flows_out = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GHashTable) flows_in = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autofree guint8 *seen = g_new0(guint8, ssim_graph_n_ops(g));
    guint processes = 0, threads = 0, begins = 0, ends = 0;
    for (guint s = 0; s < ns; s++)
        tracks[s].begin_ts = G_MAXUINT64;
    for (gsize k = 0; k < tr->n_packet; k++) {
        const Pftrace__TracePacket *pk = tr->packet[k];
        if (pk->track_descriptor) {
            const Pftrace__TrackDescriptor *d = pk->track_descriptor;
            if (d->process) {
                guint32 r = (guint32)d->process->pid - 1;
                cr_assert_lt(r, nr);
                g_autofree char *want = g_strdup_printf("rank %u", r);
                cr_assert_str_eq(d->process->process_name, want);
                processes++;
            } else {
                cr_assert_not_null(d->thread);
                guint32 s = (guint32)(d->uuid - ((guint64)1 << 32));
                cr_assert_lt(s, ns);
                cr_assert_eq((guint64)d->thread->tid, (guint64)s + 1);
                cr_assert_eq((guint32)d->thread->pid, ssim_graph_stream_rank(g, s) + 1);
                cr_assert_eq(d->parent_uuid, ssim_graph_stream_rank(g, s) + 1u);
                cr_assert_str_eq(d->thread->thread_name, ssim_graph_stream_name(g, s));
                threads++;
            }
            continue;
        }
        if (pk->interned_data) {
            const Pftrace__InternedData *in = pk->interned_data;
            for (gsize i = 0; i < in->n_event_names; i++)
                g_hash_table_insert(names, GSIZE_TO_POINTER(in->event_names[i]->iid),
                                    g_strdup(in->event_names[i]->name));
            for (gsize i = 0; i < in->n_debug_annotation_names; i++)
                g_hash_table_insert(ann, GSIZE_TO_POINTER(in->debug_annotation_names[i]->iid),
                                    g_strdup(in->debug_annotation_names[i]->name));
        }
        const Pftrace__TrackEvent *ev = pk->track_event;
        if (!ev)
            continue;
        cr_assert(pk->has_timestamp);
        cr_assert_eq(pk->trusted_packet_sequence_id, 1);
        guint32 s = (guint32)(ev->track_uuid - ((guint64)1 << 32));
        cr_assert_lt(s, ns);
        Track *tk = &tracks[s];
        if (ev->type == 1) {
            /* Begins after the last slice of its track ended: no overlap, no nesting. */
            cr_assert_eq(tk->begin_ts, G_MAXUINT64, "stream %u: a slice begins inside another", s);
            cr_assert_geq(pk->timestamp, tk->last_end);
            tk->begin_ts = pk->timestamp;
            tk->op_id = SSIM_NONE;
            const char *name =
                ev->name ? ev->name : g_hash_table_lookup(names, GSIZE_TO_POINTER(ev->name_iid));
            cr_assert_not_null(name, "event name iid %" G_GUINT64_FORMAT " never interned",
                               ev->name_iid);
            for (gsize i = 0; i < ev->n_debug_annotations; i++) {
                const Pftrace__DebugAnnotation *a = ev->debug_annotations[i];
                const char *an = g_hash_table_lookup(ann, GSIZE_TO_POINTER(a->name_iid));
                cr_assert_not_null(an);
                if (strcmp(an, "op") == 0)
                    tk->op_id = (guint32)a->uint_value;
            }
            guint32 op = ssim_graph_find_id(g, tk->op_id);
            cr_assert_neq(op, SSIM_NONE, "no op id annotation");
            cr_assert_eq(ssim_graph_op(g, op)->stream, s);
            cr_assert_eq((SsimTime)pk->timestamp, t->start[op], "op %u begins at its start", op);
            char label[128];
            ssim_graph_op_label(g, op, label, sizeof label);
            cr_assert(g_str_has_prefix(label, name), "%s is not %s#...", name, label);
            for (gsize i = 0; i < ev->n_flow_ids; i++)
                g_hash_table_insert(flows_out, GSIZE_TO_POINTER(ev->flow_ids[i]),
                                    GUINT_TO_POINTER(op + 1));
            for (gsize i = 0; i < ev->n_terminating_flow_ids; i++)
                g_hash_table_insert(flows_in, GSIZE_TO_POINTER(ev->terminating_flow_ids[i]),
                                    GUINT_TO_POINTER(op + 1));
            seen[op]++;
            begins++;
        } else {
            cr_assert_eq(ev->type, 2);
            cr_assert_neq(tk->begin_ts, G_MAXUINT64, "stream %u: an end without a begin", s);
            guint32 op = ssim_graph_find_id(g, tk->op_id);
            cr_assert_eq((SsimTime)pk->timestamp, t->end[op], "op %u ends at its end", op);
            tk->last_end = pk->timestamp;
            tk->begin_ts = G_MAXUINT64;
            ends++;
        }
    }
    cr_assert_eq(processes, nr);
    cr_assert_eq(threads, ns);
    cr_assert_eq(begins, ssim_graph_n_ops(g));
    cr_assert_eq(ends, ssim_graph_n_ops(g));
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        cr_assert_eq(seen[i], 1);
    /* Every flow leaves a send and ends in its receive. */
    guint pairs = 0;
    for (guint32 m = 0; m < ssim_graph_n_matches(g); m++) {
        guint n, expected;
        const guint32 *ops = ssim_graph_match_ops(g, m, &n, &expected);
        if (ssim_graph_op(g, ops[0])->kind != SSIM_OP_SEND)
            continue;
        cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(flows_out, GSIZE_TO_POINTER(m + 1))),
                     ops[0] + 1);
        cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(flows_in, GSIZE_TO_POINTER(m + 1))),
                     ops[1] + 1);
        pairs++;
    }
    cr_assert_eq(g_hash_table_size(flows_out), pairs);
    pftrace__trace__free_unpacked(tr, NULL);
}

Test(trace, proto_reads_back_exactly)
{
    SsimTimeline *t;
    g_autoptr(SsimGraph) g = awkward_graph(&t);
    check_proto(g, t);
    ssim_timeline_free(t);
    g_autoptr(SsimGraph) g2 = load_example("tp-pipeline.graph", &t);
    check_proto(g2, t);
    ssim_timeline_free(t);
    cr_assert_eq(ssim_trace_format_for("x.pftrace"), SSIM_TRACE_PROTO);
    cr_assert_eq(ssim_trace_format_for("x.perfetto-trace"), SSIM_TRACE_PROTO);
    cr_assert_eq(ssim_trace_format_for("x.json"), SSIM_TRACE_JSON);
    cr_assert_eq(ssim_trace_format_for("-"), SSIM_TRACE_JSON);
}

/* The ops are encoded by several threads, chunk by chunk: the bytes are the same for any thread
 * count, in both formats (the proto format's interning decided in op order), and the same as
 * ssim_trace_json()'s. */
Test(trace, same_bytes_for_any_thread_count)
{
    g_autoptr(SsimGraph) g = many_ops();
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, NULL);
    g_autoptr(GString) text = ssim_trace_json(g, t, 0);
    for (guint f = 0; f < 2; f++) {
        g_autoptr(GByteArray) one = g_byte_array_new();
        SsimTraceSink sink1 = {append, one};
        SsimTraceFormat format = f ? SSIM_TRACE_PROTO : SSIM_TRACE_JSON;
        cr_assert(ssim_trace_write(g, t, 0, format, 1, &sink1, NULL));
        if (!f)
            cr_assert(one->len == text->len && memcmp(one->data, text->str, one->len) == 0);
        for (guint threads = 0; threads <= 16; threads += threads < 3 ? 1 : 13) {
            g_autoptr(GByteArray) more = g_byte_array_new();
            SsimTraceSink sink = {append, more};
            cr_assert(ssim_trace_write(g, t, 5, format, threads, &sink, NULL));
            g_autoptr(GByteArray) fewer = g_byte_array_new();
            SsimTraceSink sink5 = {append, fewer};
            cr_assert(ssim_trace_write(g, t, 5, format, 1, &sink5, NULL));
            cr_assert(more->len == fewer->len && memcmp(more->data, fewer->data, more->len) == 0,
                      "format %u, 5 ranks, %u threads", f, threads);
            g_byte_array_set_size(more, 0);
            cr_assert(ssim_trace_write(g, t, 0, format, threads, &sink, NULL));
            cr_assert(more->len == one->len && memcmp(more->data, one->data, more->len) == 0,
                      "format %u, %u threads", f, threads);
        }
    }
    check_proto(g, t);
}

/* The JSON labels, whether copied as they are or escaped: a long name is cut to 127 bytes with
 * its "#id", quotes and backslashes are escaped, bytes that are not UTF-8 become U+FFFD, and a
 * class with a quote comes back as it was. */
Test(trace, json_labels_are_cut_escaped_and_made_valid)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 s = ssim_graph_stream(g, 0, "compute");
    char long_name[201];
    memset(long_name, 'a', 200);
    long_name[200] = '\0';
    const char *names[] = {long_name, "q\"uo\\te", "\xff\xfe bad", "plain"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        SsimOpSpec c = SSIM_OP_SPEC_INIT;
        c.stream = s;
        c.duration = 10;
        c.name = names[i];
        c.cls = i == 3 ? "c\"at" : "fwd";
        ssim_graph_add_op(g, &c, NULL, 0);
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, NULL);
    g_autoptr(GString) json = ssim_trace_json(g, t, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    cr_assert(json_parser_load_from_data(p, json->str, (gssize)json->len, NULL), "%s", json->str);
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    g_autofree char *cut = g_strdup_printf("%.*s#0", 125, long_name);
    const char *want[] = {cut, "q\"uo\\te#1", "\xef\xbf\xbd\xef\xbf\xbd bad#2", "plain#3"};
    guint seen = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (strcmp(json_object_get_string_member(e, "ph"), "X") != 0)
            continue;
        cr_assert_str_eq(json_object_get_string_member(e, "name"), want[seen]);
        cr_assert_str_eq(json_object_get_string_member(e, "cat"), seen == 3 ? "c\"at" : "fwd");
        seen++;
    }
    cr_assert_eq(seen, 4);
}
