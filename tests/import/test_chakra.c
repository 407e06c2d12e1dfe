/*
 * Tests of the Chakra importer (src/import/chakra.c).
 *
 * Oracles independent of the importer: traces are written by the test encoder
 * (tests/import/chakra-writer.c) and replayed, and the timeline is checked against one drawn by
 * hand; all-reduce traces against the runtime's closed form 2(n-1)a + 2(n-1)/n S/B; the real
 * ASTRA-sim traces copied under traces/chakra/ against the node counts decoded independently
 * (protoc-c's output and a separate dumper, see traces/chakra/README.md); and every error path
 * against a message that names the file and the node.
 *
 * Fixtures are written to a fresh temporary directory per test.
 */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <shiftsim/chakra.h>
#include <shiftsim/runtime.h>

#include "chakra-writer.h"
#include "tests/common/clitest.h"

static char *tmp_dir;

static void setup(void)
{
    GError *error = NULL;
    tmp_dir = g_dir_make_tmp("ssim-chakra-XXXXXX", &error);
    cr_assert_not_null(tmp_dir, "%s", error ? error->message : "");
}

static void teardown(void)
{
    cw_rm_rf(tmp_dir);
    g_clear_pointer(&tmp_dir, g_free);
}

TestSuite(chakra, .init = setup, .fini = teardown);

/* The path of fixture set `name` in the temp dir (the prefix). */
static char *prefix_of(const char *name)
{
    return g_build_filename(tmp_dir, name, NULL);
}

static void write_rank(const char *prefix, guint rank, const CwNode *nodes, guint n)
{
    GError *error = NULL;
    cr_assert(cw_write_rank(prefix, rank, nodes, n, &error), "%s", error ? error->message : "");
}

static void write_text(const char *path, const char *text)
{
    cr_assert(g_file_set_contents(path, text, -1, NULL));
}

static CwNode comp_node(guint64 id, guint64 dur_us)
{
    CwNode n = CW_NODE_INIT;
    n.id = id;
    n.name = "comp";
    n.type = CW_COMP;
    n.duration_micros = dur_us;
    return n;
}

static CwNode coll_node(guint64 id, gint64 type, gint64 bytes, const char *pg)
{
    CwNode n = CW_NODE_INIT;
    n.id = id;
    n.name = "coll";
    n.type = CW_COLL;
    n.comm_type = type;
    n.comm_size = bytes;
    n.pg_name = pg;
    return n;
}

static CwNode p2p_node(guint64 id, gboolean send, gint64 peer, gint64 tag, gint64 bytes)
{
    CwNode n = CW_NODE_INIT;
    n.id = id;
    n.name = send ? "send" : "recv";
    n.type = send ? CW_SEND : CW_RECV;
    if (send)
        n.comm_dst = peer;
    else
        n.comm_src = peer;
    n.comm_tag = tag;
    n.comm_size = bytes;
    return n;
}

/* The simple cost model with round numbers: 1 TFLOP/s, 1 TB/s memory, 100 GB/s links, 5 us. */
static SsimSimpleCost test_cost(void)
{
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    p.flops_per_s = 1e12;
    p.mem_bw = 1e12;
    p.link_bw = 100e9;
    p.alpha = 5 * SSIM_US;
    return p;
}

static SsimTimeline *replay(const SsimGraph *g, const SsimSimpleCost *p)
{
    SsimCostModel model = ssim_simple_cost_model(p);
    SsimRunLimits limits = SSIM_RUN_LIMITS_NONE;
    GError *error = NULL;
    SsimTimeline *tl = ssim_runtime_run(g, &model, &limits, &error);
    cr_assert_not_null(tl, "replay failed: %s", error ? error->message : "");
    return tl;
}

/* Loads `prefix` and expects failure; returns the message (caller frees). */
static char *load_error(const char *prefix, const char *json, const SsimChakraOptions *opts)
{
    GError *error = NULL;
    SsimGraph *g = ssim_chakra_load(prefix, json, opts, NULL, &error);
    cr_assert_null(g, "loading %s should have failed", prefix);
    cr_assert_not_null(error);
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR, "wrong domain for: %s", error->message);
    char *msg = g_strdup(error->message);
    g_error_free(error);
    return msg;
}

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (needle))

static SsimGraph *load_ok(const char *prefix, const char *json, const SsimChakraOptions *opts,
                          SsimChakraStats *stats)
{
    GError *error = NULL;
    SsimGraph *g = ssim_chakra_load(prefix, json, opts, stats, &error);
    cr_assert_not_null(g, "load %s: %s", prefix, error ? error->message : "");
    return g;
}

/* The op of rank `rank` named `name` (names are unique in the fixtures that use this). */
static guint32 find_op(const SsimGraph *g, guint rank, const char *name)
{
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank == rank && op->name != SSIM_NONE &&
            strcmp(ssim_graph_string(g, op->name), name) == 0)
            return i;
    }
    cr_assert_fail("no op %s on rank %u", name, rank);
    return SSIM_NONE;
}

/*
 * The hand-drawn timeline.  Two ranks, all collectives on the implicit all-ranks group:
 *
 *   rank 0: c0 (10 us) -> ar (1 MB all-reduce) -> c1 (5 us) -> send to 1, tag 7, 0.5 MB
 *   rank 1: c0 (20 us) -> ar;  recv from 0, tag 7 (no deps) -> c2 (3 us)
 *
 * With a = 5 us and B = 100 GB/s: the all-reduce over 2 ranks takes 2a + S/B = 10 + 10 = 20 us
 * and starts when the later member is ready (20 us): 20..40.  c1 runs 40..45; the transfer takes
 * a + S/B = 5 + 5 us once both ends are ready: 45..55; c2 waits for the receive and for c0 on
 * its stream: 55..58.  Makespan 58 us.
 */
Test(chakra, round_trip_timeline)
{
    g_autofree char *prefix = prefix_of("rt");
    guint64 d1[] = {1}, d2[] = {2}, d3[] = {3}, d5[] = {5};
    CwNode r0[4] = {comp_node(1, 10), coll_node(2, CW_ALL_REDUCE, 1000000, NULL), comp_node(3, 5),
                    p2p_node(4, TRUE, 1, 7, 500000)};
    r0[0].name = "c0";
    r0[1].data_deps = d1, r0[1].n_data_deps = 1, r0[1].name = "ar";
    r0[2].data_deps = d2, r0[2].n_data_deps = 1, r0[2].name = "c1";
    r0[3].ctrl_deps = d3, r0[3].n_ctrl_deps = 1;
    CwNode r1[4] = {comp_node(1, 20), coll_node(2, CW_ALL_REDUCE, 1000000, NULL),
                    p2p_node(5, FALSE, 0, 7, 500000), comp_node(6, 3)};
    r1[0].name = "c0";
    r1[1].data_deps = d1, r1[1].n_data_deps = 1, r1[1].name = "ar";
    r1[3].data_deps = d5, r1[3].n_data_deps = 1, r1[3].name = "c2";
    write_rank(prefix, 0, r0, 4);
    write_rank(prefix, 1, r1, 4);

    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_eq(st.n_ranks, 2);
    cr_assert_eq(st.n_nodes, 8);
    cr_assert_eq(st.by_type[CW_COMP], 4);
    cr_assert_eq(st.by_type[CW_COLL], 2);
    cr_assert_eq(st.n_sends, 1);
    cr_assert_eq(st.n_recvs, 1);
    cr_assert_eq(st.n_compute_timed, 4);
    cr_assert_eq(st.n_ops, 8);
    cr_assert_eq(st.n_deps, 5);
    cr_assert_eq(st.n_elided, 0);
    cr_assert_str_eq(st.version, "0.0.4");
    cr_assert_null(st.comm_group_path);
    ssim_chakra_stats_clear(&st);

    /* Streams: compute, comm, send on rank 0; compute, comm, recv on rank 1. */
    cr_assert_eq(ssim_graph_n_streams(g), 6);
    guint32 send = find_op(g, 0, "send");
    cr_assert_eq(ssim_graph_op(g, send)->kind, SSIM_OP_SEND);
    cr_assert_eq(ssim_graph_op(g, send)->peer, 1);
    cr_assert_eq(ssim_graph_op(g, send)->tag, 7);
    cr_assert_str_eq(ssim_graph_stream_name(g, ssim_graph_op(g, send)->stream), "send");

    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    struct {
        guint rank;
        const char *name;
        SsimTime start, end;
    } want[] = {
        {0, "c0", 0, 10}, {0, "ar", 20, 40}, {0, "c1", 40, 45},   {0, "send", 45, 55},
        {1, "c0", 0, 20}, {1, "ar", 20, 40}, {1, "recv", 45, 55}, {1, "c2", 55, 58},
    };
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        guint32 op = find_op(g, want[i].rank, want[i].name);
        cr_expect_eq(tl->start[op], want[i].start * SSIM_US,
                     "rank %u %s starts at %" G_GINT64_FORMAT, want[i].rank, want[i].name,
                     tl->start[op]);
        cr_expect_eq(tl->end[op], want[i].end * SSIM_US, "rank %u %s ends at %" G_GINT64_FORMAT,
                     want[i].rank, want[i].name, tl->end[op]);
    }
    cr_assert_eq(tl->makespan, 58 * SSIM_US);
}

/* Issue order is a topological order (smallest id first among ready nodes), not file order. */
Test(chakra, out_of_order_file)
{
    g_autofree char *prefix = prefix_of("ooo");
    guint64 d9[] = {9};
    CwNode r0[2] = {comp_node(2, 4), comp_node(9, 6)};
    r0[0].data_deps = d9, r0[0].n_data_deps = 1, r0[0].name = "late";
    r0[1].name = "early";
    write_rank(prefix, 0, r0, 2);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->start[find_op(g, 0, "early")], 0);
    cr_assert_eq(tl->start[find_op(g, 0, "late")], 6 * SSIM_US);
    cr_assert_eq(tl->makespan, 10 * SSIM_US);
}

/* Ids far apart (resolved by search, not by a table), in increasing file order (each node after
 * those it depends on) and shuffled: the same ops, the same timeline. */
Test(chakra, sparse_ids_in_any_file_order)
{
    guint64 d_a[] = {10}, d_b[] = {900000};
    const guint perm[2][3] = {{0, 1, 2}, {2, 0, 1}};
    SsimTime start[2][3];
    for (guint k = 0; k < 2; k++) {
        g_autofree char *prefix = prefix_of(k ? "sparse-shuffled" : "sparse-sorted");
        CwNode all[3] = {comp_node(10, 4), comp_node(900000, 6), comp_node(7000000000ULL, 3)};
        all[0].name = "a", all[1].name = "b", all[2].name = "c";
        all[1].data_deps = d_a, all[1].n_data_deps = 1; /* b after a */
        all[2].data_deps = d_b, all[2].n_data_deps = 1; /* c after b */
        CwNode file[3];
        for (guint i = 0; i < 3; i++)
            file[i] = all[perm[k][i]];
        write_rank(prefix, 0, file, 3);
        g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
        SsimSimpleCost p = test_cost();
        g_autoptr(SsimTimeline) tl = replay(g, &p);
        const char *names[3] = {"a", "b", "c"};
        for (guint i = 0; i < 3; i++) {
            guint32 op = find_op(g, 0, names[i]);
            cr_assert_eq(op, i, "file order %u: %s is op %u", k, names[i], op);
            start[k][i] = tl->start[op];
        }
        cr_assert_eq(tl->makespan, 13 * SSIM_US);
    }
    const SsimTime want[3] = {0, 4 * SSIM_US, 10 * SSIM_US};
    for (guint k = 0; k < 2; k++)
        for (guint i = 0; i < 3; i++)
            cr_assert_eq(start[k][i], want[i], "file order %u, op %u", k, i);
}

/* Roofline: no duration, so the cost model prices num_ops and tensor_size. */
Test(chakra, roofline_compute)
{
    g_autofree char *prefix = prefix_of("roof");
    CwNode n[3] = {comp_node(1, 0), comp_node(2, 0), comp_node(3, 7)};
    n[0].name = "flop_bound", n[0].num_ops = 2e9, n[0].tensor_size = 1000000;     /* 2 ms vs 1 us */
    n[1].name = "mem_bound", n[1].num_ops = 1e6, n[1].tensor_size = 3000000000LL; /* 1 us vs 3 ms */
    n[2].name = "timed", n[2].num_ops = 1e15; /* duration wins */
    write_rank(prefix, 0, n, 3);
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_eq(st.n_compute_roofline, 2);
    cr_assert_eq(st.n_compute_timed, 1);
    ssim_chakra_stats_clear(&st);
    guint32 a = find_op(g, 0, "flop_bound"), b = find_op(g, 0, "mem_bound"),
            c = find_op(g, 0, "timed");
    cr_assert_eq(ssim_graph_op(g, a)->duration, -1);
    cr_assert_float_eq(ssim_graph_op(g, a)->flops, 2e9, 1);
    cr_assert_eq(ssim_graph_op(g, b)->bytes, 3000000000ULL);
    cr_assert_eq(ssim_graph_op(g, c)->duration, 7 * SSIM_US);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->end[a] - tl->start[a], 2 * SSIM_MS);
    cr_assert_eq(tl->end[b] - tl->start[b], 3 * SSIM_MS);
    cr_assert_eq(tl->makespan, 5 * SSIM_MS + 7 * SSIM_US);

    /* use_roofline prices the timed node too: 1e15 / 1e12 = 1000 s. */
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.use_roofline = TRUE;
    g_autoptr(SsimGraph) g2 = load_ok(prefix, NULL, &o, NULL);
    cr_assert_eq(ssim_graph_op(g2, find_op(g2, 0, "timed"))->duration, -1);
}

static SsimTime ring_allreduce(guint n, double bytes, const SsimSimpleCost *p)
{
    double a = (double)p->alpha * 1e-9;
    return ssim_time_from_seconds(2.0 * (n - 1) * a + 2.0 * (n - 1) / n * bytes / p->link_bw);
}

static void check_allreduce_makespan(const SsimGraph *g, guint n, double bytes)
{
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    SsimTime want = ring_allreduce(n, bytes, &p);
    cr_assert(tl->makespan >= want - 1 && tl->makespan <= want + 1,
              "%u-rank all-reduce of %.0f bytes: makespan %" G_GINT64_FORMAT
              " ns, closed form %" G_GINT64_FORMAT " ns",
              n, bytes, tl->makespan, want);
}

/* A ring all-reduce trace written by the encoder, for several sizes, against the closed form. */
Test(chakra, allreduce_closed_form)
{
    guint sizes[] = {2, 8, 64};
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *name = g_strdup_printf("ar%u", sizes[i]);
        g_autofree char *prefix = prefix_of(name);
        for (guint r = 0; r < sizes[i]; r++) {
            CwNode n = coll_node(0, CW_ALL_REDUCE, 1 << 20, NULL);
            write_rank(prefix, r, &n, 1);
        }
        g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
        cr_assert_eq(ssim_graph_n_ops(g), sizes[i]);
        cr_assert_eq(ssim_graph_n_matches(g), 1);
        check_allreduce_makespan(g, sizes[i], 1 << 20);
    }
}

/* Explicit groups from JSON; a collective on a sub-group; PREFIX.json found by default. */
Test(chakra, comm_groups)
{
    g_autofree char *prefix = prefix_of("groups");
    for (guint r = 0; r < 4; r++) {
        CwNode n = coll_node(0, CW_ALL_GATHER, 4000000, r < 2 ? "10" : "11");
        write_rank(prefix, r, &n, 1);
    }
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    write_text(json, "{\"10\": [0, 1], \"11\": [2, 3], \"12\": [0, 1, 2, 3]}");
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_str_eq(st.comm_group_path, json);
    cr_assert_eq(st.n_groups, 3);
    ssim_chakra_stats_clear(&st);
    cr_assert_eq(ssim_graph_n_matches(g), 2);
    cr_assert_eq(ssim_graph_op(g, 0)->coll, SSIM_COLL_ALLGATHER);
    cr_assert_str_eq(ssim_graph_group_name(g, ssim_graph_op(g, 0)->group), "10");
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    /* all-gather over 2: a + S/(2B) = 5 + 20 us */
    cr_assert_eq(tl->makespan, 25 * SSIM_US);
}

/* Collective kinds, barrier, approximations, elided nodes with forwarded deps, ignored attrs. */
Test(chakra, mapping_and_stats)
{
    g_autofree char *prefix = prefix_of("map");
    guint64 d1[] = {1}, d2[] = {2}, d3[] = {3}, d4[] = {4};
    for (guint r = 0; r < 2; r++) {
        CwNode n[7] = {comp_node(1, 10),
                       CW_NODE_INIT,
                       comp_node(3, 1),
                       coll_node(4, CW_GATHER, 100, NULL),
                       coll_node(5, CW_BARRIER, CW_ABSENT, NULL),
                       coll_node(6, CW_REDUCE_SCATTER, 100, NULL),
                       CW_NODE_INIT};
        n[0].name = "first";
        n[0].extra_attr = "op_type";
        n[1].id = 2, n[1].type = CW_METADATA, n[1].data_deps = d1, n[1].n_data_deps = 1;
        n[2].name = "after_meta", n[2].data_deps = d2, n[2].n_data_deps = 1;
        n[2].is_cpu_op = 1;
        n[3].data_deps = d3, n[3].n_data_deps = 1;
        n[4].name = "barrier", n[4].data_deps = d4, n[4].n_data_deps = 1;
        n[6].id = 7, n[6].type = CW_MEM_LOAD, n[6].tensor_size = 2000000, n[6].name = "load";
        n[6].extra_attr = "tensor_loc";
        write_rank(prefix, r, n, 7);
    }
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_eq(st.n_nodes, 14);
    cr_assert_eq(st.n_elided, 2);
    cr_assert_eq(st.elided_by_type[CW_METADATA], 2);
    cr_assert_eq(st.n_approximated, 4); /* 2 gathers, 2 memory loads */
    cr_assert_eq(st.n_barriers, 2);
    cr_assert_eq(st.n_collectives, 4);
    cr_assert_eq(st.n_mem, 2);
    cr_assert_eq(st.n_ops, 12);
    cr_assert_eq(st.n_ignored_attrs, 4);
    cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(st.ignored_attrs, "op_type")), 2);
    cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(st.ignored_attrs, "tensor_loc")), 2);
    g_autoptr(GString) rep = ssim_chakra_stats_format(&st);
    assert_has(rep->str, "METADATA_NODE 2");
    assert_has(rep->str, "op_type 2");
    assert_has(rep->str, "2 nodes elided (METADATA_NODE 2)");
    ssim_chakra_stats_clear(&st);

    /* The metadata node is gone, and after_meta depends on first directly. */
    guint32 first = find_op(g, 0, "first"), after = find_op(g, 0, "after_meta");
    guint nd;
    const guint32 *deps = ssim_graph_deps(g, after, &nd);
    cr_assert_eq(nd, 1);
    cr_assert_eq(deps[0], first);
    cr_assert_str_eq(ssim_graph_stream_name(g, ssim_graph_op(g, after)->stream), "cpu");
    cr_assert_eq(ssim_graph_op(g, find_op(g, 0, "barrier"))->kind, SSIM_OP_BARRIER);
    guint32 load = find_op(g, 0, "load");
    cr_assert_str_eq(ssim_graph_stream_name(g, ssim_graph_op(g, load)->stream), "mem");
    cr_assert_eq(ssim_graph_op(g, load)->bytes, 2000000);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->end[first], 10 * SSIM_US);
    cr_assert_eq(tl->start[after], 10 * SSIM_US);

    /* Strict mode refuses the approximated gather and the memory node. */
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.strict = TRUE;
    g_autofree char *msg = load_error(prefix, NULL, &o);
    assert_has(msg, "GATHER is not supported");
}

/* A node's "stream" attribute names its stream; keep_names off leaves ops unlabelled. */
Test(chakra, stream_attribute)
{
    g_autofree char *prefix = prefix_of("streams");
    CwNode n[2] = {comp_node(1, 3), comp_node(2, 4)};
    n[0].stream = "7";
    n[1].stream = "side";
    write_rank(prefix, 0, n, 2);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
    cr_assert_str_eq(ssim_graph_stream_name(g, ssim_graph_op(g, 0)->stream), "7");
    cr_assert_str_eq(ssim_graph_stream_name(g, ssim_graph_op(g, 1)->stream), "side");
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->makespan, 4 * SSIM_US); /* two streams: they overlap */
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.keep_names = FALSE;
    g_autoptr(SsimGraph) g2 = load_ok(prefix, NULL, &o, NULL);
    cr_assert_eq(ssim_graph_op(g2, 0)->name, SSIM_NONE);
}

/* ---- the real traces under traces/chakra/ (made by ASTRA-sim's generators) ---- */

static char *bundled(const char *rel)
{
    const char *root = g_getenv("SHIFTSIM_DATA");
    return g_build_filename(root ? root : SSIM_TEST_DATA "/..", "traces", "chakra", rel, NULL);
}

/* comm_tag repeated between two ranks (ASTRA-sim's custom-collective traces send every step of
 * a ring with tag 0): the k-th send in issue order pairs with the k-th receive.  Rank 0 sends
 * s1, and s2 after 10 us of compute (both on the send stream), rank 1 receives r1 then r2, all
 * with tag 0, 1 MB each: a + S/B = 5 + 10 us a transfer, s1/r1 0..15 us, s2/r2 after s1 and
 * r1: 15..30. */
Test(chakra, repeated_tag_pairs_in_issue_order)
{
    g_autofree char *prefix = prefix_of("rtag");
    guint64 d2[] = {2}, d11[] = {11};
    CwNode r0[3] = {p2p_node(1, TRUE, 1, 0, 1000000), comp_node(2, 10),
                    p2p_node(3, TRUE, 1, 0, 1000000)};
    r0[0].name = "s1", r0[2].name = "s2";
    r0[2].data_deps = d2, r0[2].n_data_deps = 1;
    CwNode r1[2] = {p2p_node(11, FALSE, 0, 0, 1000000), p2p_node(12, FALSE, 0, 0, 1000000)};
    r1[0].name = "r1", r1[1].name = "r2";
    r1[1].data_deps = d11, r1[1].n_data_deps = 1;
    write_rank(prefix, 0, r0, 3);
    write_rank(prefix, 1, r1, 2);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
    guint32 s1 = find_op(g, 0, "s1"), s2 = find_op(g, 0, "s2");
    guint32 q1 = find_op(g, 1, "r1"), q2 = find_op(g, 1, "r2");
    cr_assert_eq(ssim_graph_op(g, s1)->match, ssim_graph_op(g, q1)->match);
    cr_assert_eq(ssim_graph_op(g, s2)->match, ssim_graph_op(g, q2)->match);
    cr_assert_neq(ssim_graph_op(g, s1)->match, ssim_graph_op(g, s2)->match);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->end[s1], 15 * SSIM_US);
    cr_assert_eq(tl->end[q1], 15 * SSIM_US);
    cr_assert_eq(tl->start[s2], 15 * SSIM_US);
    cr_assert_eq(tl->end[q2], 30 * SSIM_US);
}

Test(chakra, astra_sim_allreduce_traces)
{
    struct {
        const char *prefix;
        guint n;
    } sets[] = {
        {"allreduce-8npus-1MB/all_reduce", 8},
        {"allreduce-64npus-1MB/all_reduce", 64},
    };
    for (guint i = 0; i < G_N_ELEMENTS(sets); i++) {
        g_autofree char *prefix = bundled(sets[i].prefix);
        SsimChakraStats st;
        ssim_chakra_stats_init(&st);
        g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
        cr_assert_eq(st.n_ranks, sets[i].n);
        cr_assert_eq(st.n_nodes, sets[i].n);
        cr_assert_eq(st.by_type[CW_COLL], sets[i].n);
        cr_assert_eq(st.n_ignored_attrs, 0);
        cr_assert_str_eq(st.version, "0.0.4");
        ssim_chakra_stats_clear(&st);
        cr_assert_eq(ssim_graph_op(g, 0)->bytes, 1048576);
        check_allreduce_makespan(g, sets[i].n, 1048576);
    }
}

Test(chakra, astra_sim_stg_gpt_trace)
{
    /* The directory stands for its only trace set (workload.*.et) and its JSON. */
    g_autofree char *prefix = bundled("stg-gpt-dp2-tp2-pp2");
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_eq(st.n_ranks, 8);
    cr_assert_eq(st.n_groups, 16);
    cr_assert_eq(st.n_nodes, 4 * 177 + 4 * 179);
    cr_assert_eq(st.by_type[CW_COMP], 4 * 129 + 4 * 131);
    cr_assert_eq(st.by_type[CW_COLL], 8 * 46);
    cr_assert_eq(st.by_type[CW_SEND], 8);
    cr_assert_eq(st.by_type[CW_RECV], 8);
    cr_assert_eq(st.n_elided, 0);
    cr_assert_eq(st.n_approximated, 0);
    cr_assert_eq(st.n_compute_roofline, 4 * 129 + 4 * 131);
    cr_assert_eq(st.n_ops, st.n_nodes);
    /* Tensor metadata (inputs, outputs, op_type) is not read, and is reported. */
    cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(st.ignored_attrs, "op_type")),
                 4 * 129 + 4 * 131);
    cr_assert(g_hash_table_lookup(st.ignored_attrs, "inputs") != NULL);
    ssim_chakra_stats_clear(&st);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_gt(tl->makespan, 0);

    /*
     * With one communication stream, in each trace's own order, the same trace deadlocks: a
     * receive has no dependencies, so it is issued first and blocks the rank's later sends
     * (ASTRA-sim posts it without blocking anything).  This is why sends and receives get
     * streams of their own by default.  The runtime reports the deadlock rather than inventing
     * a time.  In the causal order (the default) the receive waits its turn, and the same one
     * stream replays.
     */
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.send_stream = o.recv_stream = o.coll_stream;
    o.causal_order = FALSE;
    g_autoptr(SsimGraph) g1 = load_ok(prefix, NULL, &o, NULL);
    SsimCostModel model = ssim_simple_cost_model(&p);
    GError *error = NULL;
    SsimRunLimits limits = SSIM_RUN_LIMITS_NONE;
    SsimTimeline *bad = ssim_runtime_run(g1, &model, &limits, &error);
    cr_assert_null(bad);
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    assert_has(error->message, "Y_RECV");
    g_error_free(error);
    o.causal_order = TRUE;
    SsimChakraStats st2;
    ssim_chakra_stats_init(&st2);
    g_autoptr(SsimGraph) g2 = load_ok(prefix, NULL, &o, &st2);
    cr_assert_gt(st2.n_reordered, 0);
    ssim_chakra_stats_clear(&st2);
    g_autoptr(SsimTimeline) tl2 = replay(g2, &p);
    cr_assert_gt(tl2->makespan, 0);
}

/* ---- error paths ---- */

static void write_simple(const char *prefix, guint ranks)
{
    for (guint r = 0; r < ranks; r++) {
        CwNode n[2] = {comp_node(1, 1), comp_node(2, 1)};
        guint64 d1[] = {1};
        n[1].data_deps = d1, n[1].n_data_deps = 1;
        write_rank(prefix, r, n, 2);
    }
}

Test(chakra, error_truncated_file)
{
    g_autofree char *prefix = prefix_of("trunc");
    write_simple(prefix, 1);
    g_autofree char *path = cw_rank_path(prefix, 0);
    g_autofree char *text = NULL;
    gsize len;
    cr_assert(g_file_get_contents(path, &text, &len, NULL));
    cr_assert(g_file_set_contents(path, text, (gssize)len - 3, NULL));
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, path);
    assert_has(msg, "truncated");
}

Test(chakra, error_truncated_length_prefix)
{
    g_autofree char *prefix = prefix_of("trunc2");
    g_autofree char *path = cw_rank_path(prefix, 0);
    CwWriter *w = cw_open(path, "0.0.4");
    cw_raw(w, "\x80\x80", 2); /* a varint whose continuation never ends */
    cr_assert(cw_close(w, NULL));
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, path);
    assert_has(msg, "length prefix");
}

Test(chakra, error_garbage)
{
    g_autofree char *prefix = prefix_of("garbage");
    g_autofree char *path = cw_rank_path(prefix, 0);
    /* A well-framed message whose body is not a Node: field 1 with wire type 7 (invalid). */
    CwWriter *w = cw_open(path, "0.0.4");
    CwNode ok = comp_node(41, 1);
    cw_node(w, &ok);
    cw_raw(w, "\x04\x0f\xff\xff\xff", 5);
    cr_assert(cw_close(w, NULL));
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, path);
    assert_has(msg, "not a valid Chakra Node");
    assert_has(msg, "after node 41");

    /* A file that is not a trace at all. */
    write_text(path, "this is not a chakra trace, just text\n");
    g_autofree char *msg2 = load_error(prefix, NULL, NULL);
    assert_has(msg2, path);

    /* An empty file. */
    write_text(path, "");
    g_autofree char *msg3 = load_error(prefix, NULL, NULL);
    assert_has(msg3, "no GlobalMetadata");
}

Test(chakra, error_unknown_node_type)
{
    g_autofree char *prefix = prefix_of("badtype");
    CwNode n = comp_node(5, 1);
    n.type = 42;
    write_rank(prefix, 0, &n, 1);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    g_autofree char *path = cw_rank_path(prefix, 0);
    assert_has(msg, path);
    assert_has(msg, "node 5");
    assert_has(msg, "unknown node type 42");
}

Test(chakra, error_unknown_comm_type)
{
    g_autofree char *prefix = prefix_of("badcoll");
    CwNode n = coll_node(3, 17, 100, NULL);
    write_rank(prefix, 0, &n, 1);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "node 3");
    assert_has(msg, "unknown comm_type 17");
}

Test(chakra, error_missing_attributes)
{
    g_autofree char *prefix = prefix_of("noattr");
    CwNode n = coll_node(3, CW_ALL_REDUCE, CW_ABSENT, NULL);
    write_rank(prefix, 0, &n, 1);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "node 3");
    assert_has(msg, "no comm_size");
    CwNode s = p2p_node(4, TRUE, CW_ABSENT, 1, 10);
    write_rank(prefix, 0, &s, 1);
    g_autofree char *msg2 = load_error(prefix, NULL, NULL);
    assert_has(msg2, "node 4");
    assert_has(msg2, "no comm_dst");
}

Test(chakra, error_dangling_dependency)
{
    g_autofree char *prefix = prefix_of("dangle");
    guint64 d[] = {99};
    CwNode n[2] = {comp_node(1, 1), comp_node(3, 1)};
    n[1].ctrl_deps = d, n[1].n_ctrl_deps = 1;
    write_rank(prefix, 0, n, 2);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    g_autofree char *path = cw_rank_path(prefix, 0);
    assert_has(msg, path);
    assert_has(msg, "node 3: depends on node 99");
    assert_has(msg, "dangling");
}

/* Converted PyTorch traces (Chakra's feeder test data, for one) name nodes the converter left
 * out.  --dangling-deps drop takes such a dependency as met: node 3 runs at once, as if it had
 * none, and the count says how many were dropped. */
Test(chakra, dangling_dependencies_dropped_on_request)
{
    g_autofree char *prefix = prefix_of("dangle-drop");
    guint64 d[] = {99, 1};
    CwNode n[2] = {comp_node(1, 4), comp_node(3, 2)};
    n[1].data_deps = d, n[1].n_data_deps = 1; /* 99: absent */
    n[1].ctrl_deps = d + 1, n[1].n_ctrl_deps = 1;
    write_rank(prefix, 0, n, 2);
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    cr_assert_not(o.drop_dangling, "an error by default");
    o.drop_dangling = TRUE;
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, &o, &stats);
    cr_assert_eq(stats.n_dangling, 1);
    cr_assert_eq(stats.n_deps, 1, "the dependency on node 1 stays");
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->makespan, 6 * SSIM_US, "node 3 after node 1: 4 + 2 us");
    g_autoptr(GString) text = ssim_chakra_stats_format(&stats);
    assert_has(text->str, "1 dependencies on nodes absent from their trace taken as met");
    ssim_chakra_stats_clear(&stats);
}

/* A CPU operator that waits (ctrl_deps) for the GPU kernel it launches, which waits (data_deps)
 * for the operator: a cycle, refused with a hint; --ctrl-deps ignore replays the data
 * dependencies alone, and the kernel follows its operator. */
Test(chakra, control_dependencies_ignored_on_request)
{
    g_autofree char *prefix = prefix_of("ctrl-cycle");
    guint64 d1[] = {1}, d2[] = {2};
    CwNode n[2] = {comp_node(1, 3), comp_node(2, 5)};
    n[0].name = "aten::mul", n[0].is_cpu_op = 1;
    n[0].ctrl_deps = d2, n[0].n_ctrl_deps = 1;
    n[1].name = "kernel";
    n[1].data_deps = d1, n[1].n_data_deps = 1;
    write_rank(prefix, 0, n, 2);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "dependency cycle");
    assert_has(msg, "--ctrl-deps ignore");
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.ignore_ctrl_deps = TRUE;
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, &o, &stats);
    cr_assert_eq(stats.n_ctrl_ignored, 1);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->makespan, 8 * SSIM_US, "the kernel after its operator: 3 + 5 us");
    ssim_chakra_stats_clear(&stats);
}

/* PyTorch's host-side call of a collective (c10d::allreduce_) converted to a COMM_COLL_NODE on
 * the CPU without comm_type: a CPU op of its duration (the kernel it launches carries the
 * collective); in strict mode, an error. */
Test(chakra, host_side_collective_call_is_a_cpu_op)
{
    g_autofree char *prefix = prefix_of("c10d");
    CwNode n = CW_NODE_INIT;
    n.id = 7;
    n.name = "c10d::allreduce_";
    n.type = CW_COLL;
    n.is_cpu_op = 1;
    n.duration_micros = 12;
    write_rank(prefix, 0, &n, 1);
    SsimChakraStats stats;
    ssim_chakra_stats_init(&stats);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &stats);
    cr_assert_eq(stats.n_cpu_colls, 1);
    cr_assert_eq(stats.n_collectives, 0);
    cr_assert_eq(stats.n_compute_timed, 1);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->makespan, 12 * SSIM_US);
    ssim_chakra_stats_clear(&stats);
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.strict = TRUE;
    g_autofree char *msg = load_error(prefix, NULL, &o);
    assert_has(msg, "node 7");
    assert_has(msg, "on the CPU without comm_type");
    /* On the GPU it is still an error: a collective must say which. */
    n.is_cpu_op = 0;
    write_rank(prefix, 0, &n, 1);
    g_autofree char *gpu = load_error(prefix, NULL, NULL);
    assert_has(gpu, "COMM_COLL_NODE has no comm_type");
}

Test(chakra, error_cycle)
{
    g_autofree char *prefix = prefix_of("cycle");
    guint64 d1[] = {1}, d2[] = {2}, d3[] = {3};
    CwNode n[4] = {comp_node(0, 1), comp_node(1, 1), comp_node(2, 1), comp_node(3, 1)};
    n[1].data_deps = d3, n[1].n_data_deps = 1; /* 1 <- 3 <- 2 <- 1 */
    n[2].data_deps = d1, n[2].n_data_deps = 1;
    n[3].data_deps = d2, n[3].n_data_deps = 1;
    write_rank(prefix, 0, n, 4);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    g_autofree char *path = cw_rank_path(prefix, 0);
    assert_has(msg, path);
    assert_has(msg, "cycle");
    assert_has(msg, "node 1 -> node 3 -> node 2 -> node 1");

    /* A node depending on itself. */
    CwNode self = comp_node(8, 1);
    guint64 d8[] = {8};
    self.data_deps = d8, self.n_data_deps = 1;
    write_rank(prefix, 0, &self, 1);
    g_autofree char *msg2 = load_error(prefix, NULL, NULL);
    assert_has(msg2, "node 8 -> node 8");
}

Test(chakra, error_duplicate_id)
{
    g_autofree char *prefix = prefix_of("dup");
    CwNode n[2] = {comp_node(6, 1), comp_node(6, 2)};
    write_rank(prefix, 0, n, 2);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "node 6: the id is used twice");
}

Test(chakra, error_missing_rank_file)
{
    g_autofree char *prefix = prefix_of("missing");
    /* No file at all. */
    g_autofree char *msg0 = load_error(prefix, NULL, NULL);
    assert_has(msg0, "missing.0.et: no such file");

    /* Two files, but a send to rank 3 and a group naming rank 2. */
    CwNode s = p2p_node(1, TRUE, 3, 0, 64);
    write_rank(prefix, 0, &s, 1);
    CwNode one = comp_node(1, 1);
    write_rank(prefix, 1, &one, 1);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "node 1");
    assert_has(msg, "sends to rank 3, but there are only 2 trace files");

    CwNode c = coll_node(1, CW_ALL_REDUCE, 64, "0");
    write_rank(prefix, 0, &c, 1);
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    write_text(json, "{\"0\": [0, 1, 2]}");
    g_autofree char *msg2 = load_error(prefix, NULL, NULL);
    assert_has(msg2, json);
    assert_has(msg2, "names rank 2, but there are only 2 trace files");
}

/* A rank's trace that is not a regular file is refused by name, not read: a FIFO would block the
 * loader forever, /dev/zero would never end. */
Test(chakra, error_special_rank_file)
{
    g_autofree char *prefix = prefix_of("special");
    CwNode one = comp_node(1, 1);
    write_rank(prefix, 1, &one, 1);
    g_autofree char *rank0 = g_strconcat(prefix, ".0.et", NULL);
    cr_assert_eq(mkfifo(rank0, 0600), 0);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, rank0);
    assert_has(msg, "is a FIFO, not a Chakra trace");
    cr_assert_eq(g_unlink(rank0), 0);
    cr_assert_eq(symlink("/dev/zero", rank0), 0);
    g_autofree char *msg2 = load_error(prefix, NULL, NULL);
    assert_has(msg2, "is a character device, not a Chakra trace");
}

Test(chakra, error_groups)
{
    g_autofree char *prefix = prefix_of("grp");
    CwNode c = coll_node(1, CW_ALL_REDUCE, 64, "4");
    write_rank(prefix, 0, &c, 1);
    write_rank(prefix, 1, &c, 1);
    /* pg_name without any JSON. */
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "node 1");
    assert_has(msg, "process group '4' is not defined");
    /* The rank is not a member of its group. */
    g_autofree char *json = prefix_of("other.json");
    write_text(json, "{\"4\": [1]}");
    g_autofree char *msg2 = load_error(prefix, json, NULL);
    assert_has(msg2, "grp.0.et: node 1");
    assert_has(msg2, "rank 0 is not a member of process group '4'");
}

Test(chakra, error_bad_json)
{
    g_autofree char *prefix = prefix_of("json");
    write_simple(prefix, 2);
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    const char *bad[][2] = {
        {"{\"0\": [0, 1", NULL},
        {"[0, 1]", "must be a JSON object"},
        {"{\"0\": 3}", "group \"0\": expected a list of ranks"},
        {"{\"0\": [0, \"one\"]}", "element 1 is not an integer rank"},
        {"{\"0\": [0, -1]}", "rank -1 is negative"},
        {"{\"0\": [1, 1]}", "group \"0\""},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        write_text(json, bad[i][0]);
        g_autofree char *msg = load_error(prefix, NULL, NULL);
        assert_has(msg, json);
        if (bad[i][1])
            assert_has(msg, bad[i][1]);
    }
    g_autofree char *missing = prefix_of("nope.json");
    g_autofree char *msg = load_error(prefix, missing, NULL);
    assert_has(msg, missing);
}

Test(chakra, error_ambiguous_json)
{
    g_autofree char *dir = prefix_of("two");
    g_mkdir(dir, 0755);
    g_autofree char *prefix = g_build_filename(dir, "t", NULL);
    write_simple(prefix, 1);
    g_autofree char *a = g_build_filename(dir, "a.json", NULL);
    g_autofree char *b = g_build_filename(dir, "b.json", NULL);
    write_text(a, "{}");
    write_text(b, "{}");
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "2 comm-group JSON files");
    /* Naming one resolves it. */
    g_autoptr(SsimGraph) g = load_ok(prefix, a, NULL, NULL);
    cr_assert_eq(ssim_graph_n_ops(g), 2);
}

/* ---- the examples written by tests/import/chakra-gen under traces/chakra/examples/ ---- */

Test(chakra, bundled_examples)
{
    /* `chakra-gen two-rank`: the hand-drawn timeline above, under the default cost model. */
    g_autofree char *two = bundled("examples/two-rank/two-rank");
    g_autoptr(SsimGraph) g = load_ok(two, NULL, NULL, NULL);
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->makespan, 58 * SSIM_US);

    /* `chakra-gen allreduce --ranks 16`. */
    g_autofree char *ar = bundled("examples/allreduce-16npus-1MiB/all_reduce");
    g_autoptr(SsimGraph) g2 = load_ok(ar, NULL, NULL, NULL);
    check_allreduce_makespan(g2, 16, 1 << 20);

    /*
     * `chakra-gen gpt --dp 2 --tp 2 --pp 2 --layers 4 --microbatches 2`: per rank, 2 microbatches
     * x 2 layers x (2 compute + 2 TP all-reduces) forward and as many backward, 2 sends and 2
     * receives, and 2 DP all-reduces: 38 nodes.
     */
    g_autofree char *gpt = bundled("examples/gpt-dp2-tp2-pp2/gpt");
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g3 = load_ok(gpt, NULL, NULL, &st);
    cr_assert_eq(st.n_ranks, 8);
    cr_assert_eq(st.n_groups, 8);
    cr_assert_eq(st.n_nodes, 8 * 38);
    cr_assert_eq(st.by_type[CW_COMP], 8 * 16);
    cr_assert_eq(st.by_type[CW_COLL], 8 * 18);
    cr_assert_eq(st.n_sends, 16);
    cr_assert_eq(st.n_recvs, 16);
    cr_assert_eq(st.n_ignored_attrs, 0);
    ssim_chakra_stats_clear(&st);
    g_autoptr(SsimTimeline) tl3 = replay(g3, &p);
    cr_assert_gt(tl3->makespan, 0);

    /* `chakra-gen offload --ranks 8 --layers 4`: per rank and layer a forward, a store, a load,
     * a backward and an all-reduce. */
    g_autofree char *off = bundled("examples/offload-8npus/offload");
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g4 = load_ok(off, NULL, NULL, &st);
    cr_assert_eq(st.n_nodes, 8 * 20);
    cr_assert_eq(st.by_type[CW_COMP], 8 * 8);
    cr_assert_eq(st.by_type[CW_MEM_LOAD] + st.by_type[CW_MEM_STORE], 8 * 8);
    cr_assert_eq(st.n_mem, 8 * 8);
    cr_assert_eq(st.n_collectives, 8 * 4);
    ssim_chakra_stats_clear(&st);
}

/* Ranks that disagree on a collective's size, or reuse a tag: the graph's matching refuses. */
Test(chakra, error_cross_rank_mismatch)
{
    g_autofree char *prefix = prefix_of("mismatch");
    CwNode a = coll_node(1, CW_ALL_REDUCE, 100, NULL), b = coll_node(1, CW_ALL_REDUCE, 200, NULL);
    write_rank(prefix, 0, &a, 1);
    write_rank(prefix, 1, &b, 1);
    g_autofree char *msg = load_error(prefix, NULL, NULL);
    assert_has(msg, "mismatch.*.et: ");

    /* Two sends with tag 3 against receives with tags 3 and 4: the first pair meets (a tag
     * repeats in order), and the replay names the send and the receive left over. */
    CwNode s[2] = {p2p_node(1, TRUE, 1, 3, 10), p2p_node(2, TRUE, 1, 3, 10)};
    CwNode r[2] = {p2p_node(1, FALSE, 0, 3, 10), p2p_node(2, FALSE, 0, 4, 10)};
    write_rank(prefix, 0, s, 2);
    write_rank(prefix, 1, r, 2);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
    SsimSimpleCost p = test_cost();
    SsimCostModel model = ssim_simple_cost_model(&p);
    g_autoptr(GError) error = NULL;
    cr_assert_null(ssim_runtime_run(g, &model, NULL, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    assert_has(error->message, "to rank 1 (tag 3): rank 1 never posts the matching recv");
    assert_has(error->message, "from rank 0 (tag 4): rank 0 never posts the matching send");
}

Test(chakra, error_directory_prefix)
{
    g_autofree char *dir = prefix_of("sets");
    g_mkdir(dir, 0755);
    g_autofree char *msg = load_error(dir, NULL, NULL);
    assert_has(msg, "holds 0");
    g_autofree char *a = g_build_filename(dir, "a", NULL), *b = g_build_filename(dir, "b", NULL);
    write_simple(a, 1);
    g_autoptr(SsimGraph) g = load_ok(dir, NULL, NULL, NULL);
    cr_assert_eq(ssim_graph_n_ops(g), 2);
    write_simple(b, 1);
    g_autofree char *msg2 = load_error(dir, NULL, NULL);
    assert_has(msg2, "holds 2");
}

/* A node type shiftsim cannot model is elided (deps forwarded, counted), or refused if strict. */
Test(chakra, unsupported_node_type)
{
    g_autofree char *prefix = prefix_of("storage");
    guint64 d1[] = {1}, d2[] = {2};
    CwNode n[3] = {comp_node(1, 4), CW_NODE_INIT, comp_node(3, 2)};
    n[0].name = "a";
    n[1].id = 2, n[1].type = CW_STORAGE, n[1].name = "ckpt", n[1].ctrl_deps = d1;
    n[1].n_ctrl_deps = 1, n[1].extra_attr = "size";
    n[2].name = "b", n[2].stream = "other", n[2].data_deps = d2, n[2].n_data_deps = 1;
    write_rank(prefix, 0, n, 3);
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, &st);
    cr_assert_eq(st.elided_by_type[CW_STORAGE], 1);
    cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(st.ignored_attrs, "size")), 1);
    g_autoptr(GString) rep = ssim_chakra_stats_format(&st);
    assert_has(rep->str, "1 nodes elided (STORAGE_NODE 1)");
    ssim_chakra_stats_clear(&st);
    cr_assert_eq(ssim_graph_n_ops(g), 2);
    SsimSimpleCost p = test_cost();
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    /* b is on another stream, but still after a through the elided node. */
    cr_assert_eq(tl->start[find_op(g, 0, "b")], 4 * SSIM_US);

    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.strict = TRUE;
    g_autofree char *msg = load_error(prefix, NULL, &o);
    assert_has(msg, "node 2 (ckpt): STORAGE_NODE is not supported");
    cr_assert_str_eq(ssim_chakra_node_type_name(CW_STORAGE), "STORAGE_NODE");
    cr_assert_str_eq(ssim_chakra_node_type_name(99), "?");
}

/* Writes the three-stage pipeline of the test below (1 MB transfers, tags 1..4). */
static void write_three_stages(const char *prefix)
{
    /* Rank 1: forward to 2 (tag 1) and, ready at once, a second forward (tag 2, id 4); the
     * gradient from 2 (tag 3) goes on to 0 (tag 4).  Rank 2 reduces both forwards (10 us)
     * before its gradient. */
    guint64 d2[] = {2}, d12[] = {1, 2}, d3[] = {3};
    CwNode r0 = p2p_node(1, FALSE, 1, 4, 1000000);
    CwNode r1[4] = {p2p_node(1, TRUE, 2, 1, 1000000), p2p_node(2, FALSE, 2, 3, 1000000),
                    p2p_node(3, TRUE, 0, 4, 1000000), p2p_node(4, TRUE, 2, 2, 1000000)};
    r1[2].data_deps = d2, r1[2].n_data_deps = 1;
    CwNode r2[4] = {p2p_node(1, FALSE, 1, 1, 1000000), p2p_node(2, FALSE, 1, 2, 1000000),
                    comp_node(3, 10), p2p_node(4, TRUE, 1, 3, 1000000)};
    r2[2].data_deps = d12, r2[2].n_data_deps = 2;
    r2[3].data_deps = d3, r2[3].n_data_deps = 1;
    write_rank(prefix, 0, &r0, 1);
    write_rank(prefix, 1, r1, 4);
    write_rank(prefix, 2, r2, 4);
}

/*
 * Streams per peer keep a pipeline going that one send stream per rank deadlocks: rank 1's one
 * send stream takes, smallest ready id first, the gradient to rank 0 (id 3, which waits for the
 * gradient from rank 2) before the second forward (id 4) that rank 2 needs to make that
 * gradient.  With a send stream per peer (PyTorch's communicator per pair) the forwards run
 * 0..15 and 15..30 us (a + S/B = 5 + 10), rank 2's compute 30..40, its gradient 40..55 and rank
 * 1's 55..70.
 */
Test(chakra, stream_per_peer_keeps_a_pipeline_going)
{
    g_autofree char *prefix = prefix_of("stages");
    write_three_stages(prefix);
    SsimSimpleCost p = test_cost();
    SsimCostModel model = ssim_simple_cost_model(&p);
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.causal_order = FALSE;
    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, &o, NULL);
    g_autoptr(GError) error = NULL;
    cr_assert_null(ssim_runtime_run(g, &model, NULL, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));

    o.stream_per_peer = TRUE;
    g_autoptr(SsimGraph) g2 = load_ok(prefix, NULL, &o, NULL);
    g_autoptr(SsimTimeline) tl = replay(g2, &p);
    cr_assert_eq(tl->makespan, 70 * SSIM_US);

    /* In the causal order rank 1's one send stream issues the second forward (one transfer from
     * the start) before the gradient (three), and the same timeline comes out. */
    o.stream_per_peer = FALSE;
    o.causal_order = TRUE;
    SsimChakraStats st;
    ssim_chakra_stats_init(&st);
    g_autoptr(SsimGraph) g3 = load_ok(prefix, NULL, &o, &st);
    cr_assert_eq(st.n_reordered, 2, "%" G_GUINT64_FORMAT, st.n_reordered);
    ssim_chakra_stats_clear(&st);
    g_autoptr(SsimTimeline) tl3 = replay(g3, &p);
    cr_assert_eq(tl3->makespan, 70 * SSIM_US);
}

/* `replay --chakra` takes a stream per peer unless told --comm-streams rank, which deadlocks in
 * the trace's own order (the replay verb's simple model is the test's: a = 5 us, 100 GB/s). */
Test(chakra, replay_verb_streams_per_peer_by_default, .init = test_redirect)
{
    g_autofree char *prefix = prefix_of("stages-cli");
    write_three_stages(prefix);
    int rc;
    const char *peer[] = {"shiftsim", "replay", "--chakra", prefix, "-f", "csv"};
    g_autofree char *out = test_cli_stdout(peer, G_N_ELEMENTS(peer), &rc);
    cr_assert_eq(rc, 0, "%s", out);
    assert_has(out, "0,recv:1,1,15000,15000,0,70000\n");
    const char *rank[] = {"shiftsim",       "replay", "--chakra",      prefix,
                          "--comm-streams", "rank",   "--issue-order", "trace"};
    g_autofree char *out2 = test_cli_stdout(rank, G_N_ELEMENTS(rank), &rc);
    cr_assert_eq(rc, 1);
    g_autofree char *err = test_stderr();
    assert_has(err, "deadlock at");
}

/*
 * Streams per process group: rank 0 issues a collective on group A = {0, 1}, then one on
 * B = {0, 2}.  Rank 1 computes 100 us before joining A; rank 2 joins B at once.  On one "comm"
 * stream B waits behind A: A runs 100..110 us, B 110..120.  With a stream per group B runs
 * 0..10 us while A waits.  (A 2-rank all-reduce of 0 bytes costs 2a = 10 us.)
 */
Test(chakra, stream_per_group)
{
    g_autofree char *prefix = prefix_of("pergroup");
    CwNode r0[2] = {coll_node(1, CW_ALL_REDUCE, 0, "A"), coll_node(2, CW_ALL_REDUCE, 0, "B")};
    r0[0].name = "a", r0[1].name = "b";
    guint64 d1[] = {1};
    CwNode r1[2] = {comp_node(1, 100), coll_node(2, CW_ALL_REDUCE, 0, "A")};
    r1[1].data_deps = d1, r1[1].n_data_deps = 1;
    CwNode r2 = coll_node(1, CW_ALL_REDUCE, 0, "B");
    write_rank(prefix, 0, r0, 2);
    write_rank(prefix, 1, r1, 2);
    write_rank(prefix, 2, &r2, 1);
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    write_text(json, "{\"A\": [0, 1], \"B\": [0, 2]}");
    SsimSimpleCost p = test_cost();

    g_autoptr(SsimGraph) g = load_ok(prefix, NULL, NULL, NULL);
    g_autoptr(SsimTimeline) tl = replay(g, &p);
    cr_assert_eq(tl->start[find_op(g, 0, "b")], 110 * SSIM_US);
    cr_assert_eq(tl->makespan, 120 * SSIM_US);

    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.stream_per_group = TRUE;
    o.stream_per_peer = TRUE;
    g_autoptr(SsimGraph) g2 = load_ok(prefix, NULL, &o, NULL);
    guint32 b = find_op(g2, 0, "b");
    cr_assert_str_eq(ssim_graph_stream_name(g2, ssim_graph_op(g2, b)->stream), "comm:B");
    g_autoptr(SsimTimeline) tl2 = replay(g2, &p);
    cr_assert_eq(tl2->start[b], 0);
    cr_assert_eq(tl2->end[b], 10 * SSIM_US);
    cr_assert_eq(tl2->makespan, 110 * SSIM_US);

    /* Per-peer p2p streams: the round-trip trace keeps its timeline. */
    g_autofree char *two = bundled("examples/two-rank/two-rank");
    g_autoptr(SsimGraph) g3 = load_ok(two, NULL, &o, NULL);
    g_autoptr(SsimTimeline) tl3 = replay(g3, &p);
    cr_assert_eq(tl3->makespan, 58 * SSIM_US);
    cr_assert_str_eq(ssim_graph_stream_name(g3, ssim_graph_op(g3, find_op(g3, 0, "send"))->stream),
                     "send:1");
}
