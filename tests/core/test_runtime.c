/*
 * The GPU runtime against hand-computed timelines, closed-form collective costs, invariants on
 * random graphs, determinism, limits and deadlock diagnosis.
 */
#include "tests/test_common.h"

#include <shiftsim/graphfile.h>
#include <shiftsim/report.h>
#include <math.h>
#include <string.h>

/* A simple model with round numbers: alpha 1 us, 1 GB/s links. */
static SsimSimpleCost params(void)
{
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    p.alpha = 1000;
    p.link_bw = 1e9;
    return p;
}

static SsimTimeline *run_ok(SsimGraph *g, const SsimSimpleCost *p)
{
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    SsimCostModel m = ssim_simple_cost_model(p);
    SsimTimeline *t = ssim_runtime_run(g, &m, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    return t;
}

#define AT3(i, c) ((gsize)(i)*3 + (c))

#define ASSERT_OP(t, i, r, s, e)                                                                   \
    do {                                                                                           \
        cr_assert_eq((t)->ready[i], (r), "op %u ready %" G_GINT64_FORMAT " != %d", (guint)(i),     \
                     (t)->ready[i], (int)(r));                                                     \
        cr_assert_eq((t)->start[i], (s), "op %u start %" G_GINT64_FORMAT " != %d", (guint)(i),     \
                     (t)->start[i], (int)(s));                                                     \
        cr_assert_eq((t)->end[i], (e), "op %u end %" G_GINT64_FORMAT " != %d", (guint)(i),         \
                     (t)->end[i], (int)(e));                                                       \
    } while (0)

Test(runtime, two_streams_overlap)
{
    /* compute: A 0-100, B 100-200, C waits for X; comm: X after A, 100-250. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 a = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 b = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 x = t_compute(g, 0, "comm", 150, DEPS(a));
    guint32 c = t_compute(g, 0, "compute", 50, DEPS(x));
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t = run_ok(g, &p);
    ASSERT_OP(t, a, 0, 0, 100);
    ASSERT_OP(t, b, 100, 100, 200);
    ASSERT_OP(t, x, 100, 100, 250);
    ASSERT_OP(t, c, 250, 250, 300);
    cr_assert_eq(t->makespan, 300);

    g_autofree SsimTime *busy = NULL;
    g_autofree SsimRankSummary *rs = NULL;
    ssim_timeline_summarize(g, t, &busy, &rs);
    cr_assert_eq(busy[ssim_graph_op(g, a)->stream], 250);
    cr_assert_eq(busy[ssim_graph_op(g, x)->stream], 150);
    cr_assert_eq(rs[0].busy_union, 300);
    cr_assert_eq(rs[0].overlap, 100); /* B and X share 100..200 */
}

Test(runtime, collective_waits_for_slowest_member)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 3, 0u, 1u, 2u);
    const SsimTime work[3] = {10, 30, 20};
    guint32 comp[3], ar[3];
    for (guint32 r = 0; r < 3; r++) {
        comp[r] = t_compute(g, r, "compute", work[r], NODEPS);
        ar[r] = t_coll(g, r, "comm", grp, SSIM_COLL_ALLREDUCE, 3000, DEPS(comp[r]));
    }
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t = run_ok(g, &p);
    /* Ring all-reduce: 2(n-1) alpha + 2(n-1)/n S/B = 4 us + 4/3 * 3000 B / 1 GB/s = 8 us. */
    for (guint32 r = 0; r < 3; r++)
        ASSERT_OP(t, ar[r], work[r], 30, 30 + 8000);
}

Test(runtime, send_recv_chain_across_three_ranks)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 c0 = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 s0 = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 1000, DEPS(c0));
    guint32 r1 = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 1000, NODEPS);
    guint32 c1 = t_compute(g, 1, "compute", 50, DEPS(r1));
    guint32 s1 = t_p2p(g, SSIM_OP_SEND, 1, "pp", 2, 1000, DEPS(c1));
    guint32 r2 = t_p2p(g, SSIM_OP_RECV, 2, "pp", 1, 1000, NODEPS);
    guint32 c2 = t_compute(g, 2, "compute", 10, DEPS(r2));
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t = run_ok(g, &p);
    /* A transfer is alpha + S/B = 1 us + 1 us; it starts when both ends are ready. */
    ASSERT_OP(t, c0, 0, 0, 100);
    ASSERT_OP(t, s0, 100, 100, 2100);
    ASSERT_OP(t, r1, 0, 100, 2100);
    ASSERT_OP(t, c1, 2100, 2100, 2150);
    ASSERT_OP(t, s1, 2150, 2150, 4150);
    ASSERT_OP(t, r2, 0, 2150, 4150);
    ASSERT_OP(t, c2, 4150, 4150, 4160);
}

/* Two sends from rank 0 to rank 1 with one tag: the first added (A, after 100 ns of compute)
 * pairs with rank 1's first receive, the second (B, ready at 0 on a stream of its own) with the
 * second, although B is ready first.  Each transfer is alpha + S/B = 1 us + 1 us:
 *   A and receive 1: 100 .. 2100; B and receive 2 (after receive 1 on its stream): 2100 .. 4100.
 * Pairing B with the first receive, as a "first ready" rule would, ends it at 2000. */
Test(runtime, a_repeated_tag_pairs_transfers_in_op_order)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 c0 = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 a = t_p2p_tag(g, SSIM_OP_SEND, 0, "a", 1, 3, 1000, DEPS(c0));
    guint32 b = t_p2p_tag(g, SSIM_OP_SEND, 0, "b", 1, 3, 1000, NODEPS);
    guint32 r1 = t_p2p_tag(g, SSIM_OP_RECV, 1, "pp", 0, 3, 1000, NODEPS);
    guint32 r2 = t_p2p_tag(g, SSIM_OP_RECV, 1, "pp", 0, 3, 1000, NODEPS);
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t = run_ok(g, &p);
    ASSERT_OP(t, a, 100, 100, 2100);
    ASSERT_OP(t, r1, 0, 100, 2100);
    ASSERT_OP(t, b, 0, 2100, 4100);
    ASSERT_OP(t, r2, 2100, 2100, 4100);
    cr_assert_eq(t->makespan, 4100);
}

Test(runtime, host_barrier_gates_every_stream_of_its_rank)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 world = t_group(g, "world", 2, 0u, 1u);
    guint32 a0 = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 a1 = t_compute(g, 1, "compute", 300, NODEPS);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_BARRIER;
    s.group = world;
    s.stream = ssim_graph_stream(g, 0, "host");
    guint32 b0 = ssim_graph_add_op(g, &s, DEPS(a0));
    s.stream = ssim_graph_stream(g, 1, "host");
    guint32 b1 = ssim_graph_add_op(g, &s, DEPS(a1));
    /* Issued after the barrier on rank 0: both wait although neither depends on anything. */
    guint32 x = t_compute(g, 0, "compute", 10, NODEPS);
    guint32 y = t_compute(g, 0, "comm", 10, NODEPS);
    guint32 z = t_compute(g, 0, "comm", 10, NODEPS);
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t = run_ok(g, &p);
    /* Barrier: 2 alpha ceil(log2 2) = 2 us, from the last arrival at 300. */
    ASSERT_OP(t, b0, 100, 300, 2300);
    ASSERT_OP(t, b1, 300, 300, 2300);
    ASSERT_OP(t, x, 2300, 2300, 2310);
    ASSERT_OP(t, y, 2300, 2300, 2310);
    ASSERT_OP(t, z, 2310, 2310, 2320);
}

Test(runtime, closed_form_collective_costs)
{
    /* One collective of each kind on 8 ranks, alone: its duration is the closed form. */
    const guint64 S = 8u << 20;
    const double a = 1e-6, B = 1e9, n = 8;
    const struct {
        SsimCollKind kind;
        double seconds;
    } cases[] = {
        {SSIM_COLL_ALLREDUCE, 2 * (n - 1) * a + 2 * (n - 1) / n * S / B},
        {SSIM_COLL_ALLGATHER, (n - 1) * a + (n - 1) / n * S / B},
        {SSIM_COLL_REDUCESCATTER, (n - 1) * a + (n - 1) / n * S / B},
        {SSIM_COLL_ALLTOALL, (n - 1) * a + (n - 1) / n * S / B},
        {SSIM_COLL_BROADCAST, 3 * a + S / B},
    };
    for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(SsimGraph) g = ssim_graph_new();
        guint32 grp = t_group(g, "all", 8, 0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u);
        for (guint32 r = 0; r < 8; r++)
            t_coll(g, r, "comm", grp, cases[c].kind, S, NODEPS);
        SsimSimpleCost p = params();
        g_autoptr(SsimTimeline) t = run_ok(g, &p);
        SsimTime want = (SsimTime)llround(cases[c].seconds * 1e9);
        cr_assert_eq(t->makespan, want, "%s: %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT,
                     ssim_coll_kind_name(cases[c].kind), t->makespan, want);
    }
}

/* A random multi-rank graph with cross-stream deps and collectives in a consistent order. */
static SsimGraph *random_graph(guint32 seed, guint ranks, guint steps)
{
    SsimGraph *g = ssim_graph_new();
    GRand *rng = g_rand_new_with_seed(seed);
    guint32 all[16];
    for (guint r = 0; r < ranks; r++)
        all[r] = r;
    guint32 grp = ssim_graph_add_group(g, "all", all, ranks, NULL);
    static const char *const streams[] = {"compute", "comm", "aux"};
    g_autofree guint32 *last = g_new(guint32, ranks * 3);
    memset(last, 0xff, sizeof(guint32) * ranks * 3);
    for (guint k = 0; k < steps; k++) {
        gboolean coll = g_rand_int_range(rng, 0, 5) == 0;
        for (guint r = 0; r < ranks; r++) {
            guint si = coll ? 1 : (guint)g_rand_int_range(rng, 0, 3);
            guint32 deps[3];
            guint nd = 0;
            for (guint o = 0; o < 3; o++)
                if (last[r * 3 + o] != SSIM_NONE && g_rand_int_range(rng, 0, 2))
                    deps[nd++] = last[r * 3 + o];
            guint32 op =
                coll ? t_coll(g, r, "comm", grp, SSIM_COLL_ALLREDUCE, 1 << 16, deps, nd)
                     : t_compute(g, r, streams[si], g_rand_int_range(rng, 0, 1000), deps, nd);
            last[r * 3 + si] = op;
        }
    }
    g_rand_free(rng);
    return g;
}

Test(runtime, invariants_on_random_graphs)
{
    for (guint32 seed = 1; seed <= 20; seed++) {
        g_autoptr(SsimGraph) g = random_graph(seed, 4, 200);
        SsimSimpleCost p = params();
        g_autoptr(SsimTimeline) t = run_ok(g, &p);
        guint32 n = ssim_graph_n_ops(g);
        for (guint32 i = 0; i < n; i++) {
            guint nd;
            const guint32 *d = ssim_graph_deps(g, i, &nd);
            cr_assert(t->ready[i] <= t->start[i] && t->start[i] <= t->end[i]);
            for (guint k = 0; k < nd; k++)
                cr_assert(t->start[i] >= t->end[d[k]], "seed %u: op %u starts before input %u",
                          seed, i, d[k]);
            guint32 prev = ssim_graph_stream_prev(g, i);
            if (prev != SSIM_NONE)
                cr_assert(t->start[i] >= t->end[prev], "seed %u: stream order broken at %u", seed,
                          i);
            const SsimOp *o = ssim_graph_op(g, i);
            if (o->kind == SSIM_OP_COLLECTIVE) {
                guint nm, expected;
                const guint32 *m = ssim_graph_match_ops(g, o->match, &nm, &expected);
                for (guint k = 0; k < nm; k++)
                    cr_assert(t->start[m[k]] == t->start[i] && t->end[m[k]] == t->end[i]);
            }
        }
    }
}

Test(runtime, determinism_byte_identical_timelines)
{
    g_autoptr(SsimGraph) g = random_graph(42, 8, 500);
    SsimSimpleCost p = params();
    g_autoptr(SsimTimeline) t1 = run_ok(g, &p);
    g_autoptr(SsimTimeline) t2 = run_ok(g, &p);
    g_autoptr(GString) a = ssim_report_timeline_csv(g, t1);
    g_autoptr(GString) b = ssim_report_timeline_csv(g, t2);
    cr_assert_eq(a->len, b->len);
    cr_assert(memcmp(a->str, b->str, a->len) == 0);

    /* Parsing the same file twice gives the same bytes too. */
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", "tp-pipeline.graph", NULL);
    g_autoptr(SsimGraph) f1 = ssim_graphfile_load(path, NULL);
    g_autoptr(SsimGraph) f2 = ssim_graphfile_load(path, NULL);
    g_autoptr(SsimTimeline) u1 = ssim_runtime_run(f1, NULL, NULL, NULL);
    g_autoptr(SsimTimeline) u2 = ssim_runtime_run(f2, NULL, NULL, NULL);
    g_autoptr(GString) c = ssim_report_timeline_csv(f1, u1);
    g_autoptr(GString) d = ssim_report_timeline_csv(f2, u2);
    cr_assert_str_eq(c->str, d->str);
}

static GError *run_fail(SsimGraph *g, const SsimRunLimits *limits)
{
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    SsimTimeline *t = ssim_runtime_run(g, NULL, limits, &error);
    cr_assert_null(t, "the run should have failed");
    cr_assert_not_null(error);
    return error;
}

#define ASSERT_HAS(msg, frag)                                                                      \
    cr_assert(strstr((msg), (frag)) != NULL, "'%s' lacks '%s'", (msg), (frag))

Test(runtime, deadlock_missing_collective_member)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 3, 0u, 1u, 2u);
    t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    t_coll(g, 1, "comm", grp, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    t_compute(g, 2, "compute", 5, NODEPS);
    g_autoptr(GError) e = run_fail(g, NULL);
    cr_assert(g_error_matches(e, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    ASSERT_HAS(e->message, "deadlock at t=5 ns: 1 of 3 ops finished");
    ASSERT_HAS(e->message, "rank 0 stream comm: blocked in collective allreduce#0 (group tp, "
                           "tag 0): 2 of 3 members arrived; rank 2 never issues it");
    ASSERT_HAS(e->message, "rank 1 stream comm: blocked in collective allreduce#1");
}

Test(runtime, deadlock_send_without_recv)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 c = t_compute(g, 0, "compute", 7, NODEPS);
    t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 64, DEPS(c));
    t_compute(g, 1, "compute", 5, NODEPS);
    g_autoptr(GError) e = run_fail(g, NULL);
    ASSERT_HAS(e->message, "deadlock at t=7 ns");
    ASSERT_HAS(e->message, "rank 0 stream pp: blocked on send#1 to rank 1 (tag 0): rank 1 never "
                           "posts the matching recv");
}

/* A tag repeated with one receive too few: the graph file loads, the first send pairs with the
 * receive and the second is named as waiting for one that is never posted. */
Test(runtime, deadlock_repeated_tag_with_a_receive_too_few)
{
    g_autofree char *path =
        g_build_filename(SSIM_TEST_DATA, "graphs", "repeat-tag-unmatched.graph", NULL);
    GError *error = NULL;
    g_autoptr(SsimGraph) g = ssim_graphfile_load(path, &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    g_autoptr(GError) e = run_fail(g, NULL);
    cr_assert(g_error_matches(e, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    ASSERT_HAS(e->message, "2 of 3 ops finished");
    ASSERT_HAS(e->message, "rank 0 stream pp2: blocked on send#2 to rank 1 (tag 4): rank 1 never "
                           "posts the matching recv");
}

Test(runtime, deadlock_chain_names_who_blocks_whom)
{
    /* Rank 2 waits in a recv whose send rank 0 issues only after a collective that needs
     * rank 2: each blocked stream is named with what it waits for. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 3, 0u, 1u, 2u);
    guint32 ar0 = t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    t_p2p(g, SSIM_OP_SEND, 0, "comm", 2, 64, DEPS(ar0));
    t_coll(g, 1, "comm", grp, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    guint32 rv = t_p2p(g, SSIM_OP_RECV, 2, "compute", 0, 64, NODEPS);
    t_coll(g, 2, "comm", grp, SSIM_COLL_ALLREDUCE, 64, DEPS(rv));
    g_autoptr(GError) e = run_fail(g, NULL);
    ASSERT_HAS(e->message, "rank 0 stream comm: blocked in collective allreduce#0 (group tp, tag "
                           "0): 2 of 3 members arrived; rank 2 has not reached it (allreduce#4 on "
                           "stream comm)");
    ASSERT_HAS(e->message, "rank 2 stream compute: blocked on recv#3 from rank 0 (tag 0): rank 0 "
                           "has not reached the matching send#1");
    ASSERT_HAS(e->message, "rank 2 stream comm: blocked on allreduce#4, which waits for recv#3 "
                           "(rank 2 stream compute)");
}

Test(runtime, limits_refuse_partial_results)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 prev = t_compute(g, 0, "compute", 100, NODEPS);
    for (int i = 0; i < 9; i++)
        prev = t_compute(g, 0, "compute", 100, DEPS(prev));
    SsimRunLimits until = {.until = 450, .max_events = 0};
    g_autoptr(GError) e1 = run_fail(g, &until);
    cr_assert(g_error_matches(e1, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT));
    ASSERT_HAS(e1->message, "stopped by the time limit");
    ASSERT_HAS(e1->message, "4 of 10 ops finished");
    SsimRunLimits budget = {.until = SSIM_TIME_NEVER, .max_events = 3};
    g_autoptr(GError) e2 = run_fail(g, &budget);
    ASSERT_HAS(e2->message, "stopped by the event budget (max events 3)");
    ASSERT_HAS(e2->message, "3 of 10 ops finished");
}

/* A run that needs more events pending at once than the engine holds is refused with an error
 * (two streams each start an op at t = 0: two events pending, against a cap of one). */
Test(runtime, engine_overflow_is_an_error)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_compute(g, 0, "compute", 100, NODEPS);
    t_compute(g, 0, "comm", 100, NODEPS);
    SsimRunLimits one = {.until = SSIM_TIME_NEVER, .max_pending = 1};
    g_autoptr(GError) e = run_fail(g, &one);
    cr_assert(g_error_matches(e, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT));
    ASSERT_HAS(e->message, "the event engine is full (at most 1 events pending at once");
    ASSERT_HAS(e->message, "with 0 of 2 ops finished");
    SsimRunLimits two = {.until = SSIM_TIME_NEVER, .max_pending = 2};
    GError *error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, &two, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cr_assert_gt(t->makespan, 0);
}

Test(runtime, zero_ops_and_unfinalized)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    GError *error = NULL;
    cr_assert_null(ssim_runtime_run(g, NULL, NULL, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH));
    g_clear_error(&error);
    cr_assert(ssim_graph_finalize(g, NULL));
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(t);
    cr_assert_eq(t->makespan, 0);
}

Test(runtime, interference_lengthens_only_the_overlapped_part)
{
    /* Rank 0 computes 1000 ns while a 400 ns transfer runs from t=0: at slowdown 1 (half
     * speed) the first 400 ns do 200 ns of work, the remaining 800 ns run at full speed. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 c = t_compute(g, 0, "compute", 1000, NODEPS);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_SEND;
    s.stream = ssim_graph_stream(g, 0, "pp");
    s.peer = 1;
    s.bytes = 64;
    s.duration = 400;
    guint32 snd = ssim_graph_add_op(g, &s, NODEPS);
    s.kind = SSIM_OP_RECV;
    s.stream = ssim_graph_stream(g, 1, "pp");
    s.peer = 0;
    ssim_graph_add_op(g, &s, NODEPS);
    guint32 after = t_compute(g, 0, "compute", 100, NODEPS);  /* starts at full speed */
    guint32 other = t_compute(g, 2, "compute", 1000, NODEPS); /* another rank: unaffected */
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.overlap_slowdown = 1.0;
    GError *error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cr_assert_eq(t->end[snd], 400);
    cr_assert_eq(t->end[c], 1200);
    cr_assert_eq(t->end[after], 1300);
    cr_assert_eq(t->end[other], 1000);

    /* An op that starts inside the communication is slowed from its start. */
    g_autoptr(SsimGraph) h = ssim_graph_new();
    s.kind = SSIM_OP_SEND;
    s.stream = ssim_graph_stream(h, 0, "pp");
    s.peer = 1;
    s.duration = 1000;
    ssim_graph_add_op(h, &s, NODEPS);
    s.kind = SSIM_OP_RECV;
    s.stream = ssim_graph_stream(h, 1, "pp");
    s.peer = 0;
    ssim_graph_add_op(h, &s, NODEPS);
    guint32 k = t_compute(h, 0, "compute", 300, NODEPS);
    cr_assert(ssim_graph_finalize(h, NULL));
    cfg.overlap_slowdown = 0.5;
    g_autoptr(SsimTimeline) u = ssim_runtime_run_config(h, &cfg, &error);
    cr_assert_eq(u->end[k], 450);
}

/*
 * Host issue (runtime.h), 100 ns a launch.  Rank 0: two 10 ns kernels, then a 1000 ns one, two
 * more 10 ns ones, a send to rank 1 and a kernel that waits for it.  The first short kernels are
 * host-bound (launched at 100 and 200); the long one is launched at 300, and the host runs ahead
 * while it works, so the two after it run back to back at 1300 and 1310 although launched at 400
 * and 500.  The send (launched at 600, ready at 1320) meets rank 1's receive (launched at 100) and
 * takes alpha + S/B = 2000 ns, to 3320.  The host waited for it: rank 0's next launches are
 * 3420 and 3520, so the kernel that depends on the send starts at 3520; rank 1's kernel after its
 * receive is launched 100 ns after it, at 3420.  Rank 0's kernel between the two does not depend
 * on the send: ready at 1320, before the transfer ended, and past its launch at the host's lag
 * of then (700), it starts at once (the host is not made to wait for a transfer an op does not
 * depend on).
 */
/* An SsimOpSink that records what it is handed (up to 64 op copies). */
typedef struct {
    const SsimGraph *g;
    guint n;
    guint seen[64];
    SsimTime start[64], end[64], last_end;
    gboolean in_order;
} SinkLog;

static void sink_log(gpointer data, guint32 op, guint copy, SsimTime start, SsimTime end)
{
    SinkLog *l = data;
    gsize x = (gsize)op * 3 + copy;
    cr_assert_lt(x, G_N_ELEMENTS(l->seen));
    if (l->n == 0)
        l->in_order = TRUE;
    l->in_order &= end >= l->last_end;
    l->last_end = end;
    l->seen[x]++;
    l->start[x] = start;
    l->end[x] = end;
    l->n++;
}

/* The host tests' graph (op indices in the enum's order): rank 0 runs two 10 ns kernels, a
 * 1000 ns one, two more 10 ns ones, a send to rank 1, a kernel that does not depend on it and
 * one that does; rank 1 receives and runs a kernel on what it received. */
enum { X1, X2, BIG, B1, B2, SND, FREE, AFTER, RCV, PEER };

static SsimGraph *host_graph(void)
{
    SsimGraph *g = ssim_graph_new();
    for (guint32 i = X1; i <= B2; i++)
        cr_assert_eq(t_compute(g, 0, "compute", i == BIG ? 1000 : 10, NODEPS), i);
    cr_assert_eq(t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 1000, DEPS(B2)), SND);
    cr_assert_eq(t_compute(g, 0, "compute", 10, NODEPS), FREE);
    cr_assert_eq(t_compute(g, 0, "compute", 10, DEPS(SND)), AFTER);
    cr_assert_eq(t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 1000, NODEPS), RCV);
    cr_assert_eq(t_compute(g, 1, "compute", 10, DEPS(RCV)), PEER);
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    return g;
}

/* Each of the 3 copies of every op in `v` has `t`'s times. */
static void assert_copies_equal(const SsimGraph *g, const SsimTimeline *v, const SsimTimeline *t)
{
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        for (guint c = 0; c < 3; c++) {
            cr_assert_eq(v->start[AT3(i, c)], t->start[i], "op %u copy %u", i, c);
            cr_assert_eq(v->end[AT3(i, c)], t->end[i], "op %u copy %u", i, c);
        }
}

/* The host tests' cost model, params()'s, kept where the run configuration can point to it. */
typedef struct {
    SsimSimpleCost p;
    SsimCostModel m;
} HostCost;

/* A run on `h` with a host of `issue` ns a launch, its launches blocking or not. */
static SsimRunConfig host_config(HostCost *h, SsimTime issue, gboolean blocking)
{
    h->p = params();
    h->m = ssim_simple_cost_model(&h->p);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.cost = &h->m;
    cfg.host_issue = issue;
    cfg.host_blocking = blocking;
    return cfg;
}

Test(runtime, host_issue_runs_ahead_and_waits_after_transfers)
{
    g_autoptr(SsimGraph) g = host_graph();
    GError *error = NULL;
    HostCost hc;
    SsimRunConfig cfg = host_config(&hc, 100, FALSE);
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    ASSERT_OP(t, X1, 0, 100, 110);
    ASSERT_OP(t, X2, 110, 200, 210);
    ASSERT_OP(t, BIG, 210, 300, 1300);
    ASSERT_OP(t, B1, 1300, 1300, 1310);
    ASSERT_OP(t, B2, 1310, 1310, 1320);
    ASSERT_OP(t, SND, 1320, 1320, 3320);
    ASSERT_OP(t, RCV, 0, 1320, 3320);
    ASSERT_OP(t, FREE, 1320, 1320, 1330);
    ASSERT_OP(t, AFTER, 3320, 3520, 3530);
    ASSERT_OP(t, PEER, 3320, 3420, 3430);
    cr_assert_eq(t->makespan, 3530);
    /* Each GPU's idle time for the host: its kernels' waits from ready to launched (rank 0:
     * 100 + 90 + 90 + 200; rank 1: 100); a transfer's wait is not the GPU's. */
    cr_assert_not_null(t->host_wait);
    cr_assert_eq(t->host_wait[0], 480);
    cr_assert_eq(t->host_wait[1], 100);

    /* Without a host the same graph starts everything when ready. */
    cfg.host_issue = 0;
    g_autoptr(SsimTimeline) u = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_eq(u->start[X2], 10);
    cr_assert_eq(u->start[AFTER], 3040);
    cr_assert_null(u->host_wait);

    /* Replicated, every copy keeps its own host: the same times in each of 3 copies. */
    guint32 period[2] = {1, 1};
    SsimReplication rep = {.n_copies = 3, .stride = 3, .period = period};
    cfg.host_issue = 100;
    cfg.replication = &rep;
    g_autoptr(SsimTimeline) v = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(v, "%s", error ? error->message : "");
    assert_copies_equal(g, v, t);
    for (guint c = 0; c < 3; c++) {
        cr_assert_eq(v->host_wait[0 * 3 + c], 480);
        cr_assert_eq(v->host_wait[1 * 3 + c], 100);
    }

    /* With a sink the run keeps no times: every op copy is handed over once, as it ends, in
     * the order copies end, with the times the timeline had. */
    SinkLog log = {.g = g};
    SsimOpSink sink = {sink_log, &log};
    cfg.sink = &sink;
    g_autoptr(SsimTimeline) w = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(w, "%s", error ? error->message : "");
    cr_assert_null(w->start);
    cr_assert_null(w->end);
    cr_assert_eq(w->makespan, v->makespan);
    cr_assert_eq(w->events, v->events);
    cr_assert_eq(log.n, ssim_graph_n_ops(g) * 3);
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++)
        for (guint c = 0; c < 3; c++) {
            cr_assert_eq(log.seen[AT3(i, c)], 1, "op %u copy %u handed over once", i, c);
            cr_assert_eq(log.start[AT3(i, c)], v->start[AT3(i, c)], "op %u copy %u", i, c);
            cr_assert_eq(log.end[AT3(i, c)], v->end[AT3(i, c)], "op %u copy %u", i, c);
        }
    cr_assert(log.in_order, "handed over in the order the copies end");
}

/*
 * Blocking launches (runtime.h, CUDA_LAUNCH_BLOCKING=1) on the graph above, 100 ns a launch: the
 * host launches each op only after the kernel before it has ended, so every launch is 100 ns
 * after that end.  Rank 0: x1 100-110, x2 210-220, big 320-1320, b1 1420-1430, b2 1530-1540; the
 * send is launched at 1640 (rank 1's receive has waited since 100) and done at 3640.  A transfer
 * holds no launch, so the kernel that does not depend on it runs at 1740-1750, beside it, as
 * Megatron-LM's next kernel runs beside a batch of transfers it does not read; the one that
 * depends on it is launched after the host's wait for it, at F + L = 800 + (3640 - 600) = 3840.
 * Rank 1's kernel is launched 100 ns after its receive: 3740-3750.  Host waits: rank 0, five
 * kernels 100 ns each and two 200 (the send's launch slot lies between them and their kernel
 * before); rank 1, 100.
 */
Test(runtime, blocking_launches_wait_for_every_op)
{
    g_autoptr(SsimGraph) g = host_graph();
    GError *error = NULL;
    HostCost hc;
    SsimRunConfig cfg = host_config(&hc, 100, TRUE);
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    ASSERT_OP(t, X1, 0, 100, 110);
    ASSERT_OP(t, X2, 110, 210, 220);
    ASSERT_OP(t, BIG, 220, 320, 1320);
    ASSERT_OP(t, B1, 1320, 1420, 1430);
    ASSERT_OP(t, B2, 1430, 1530, 1540);
    ASSERT_OP(t, SND, 1540, 1640, 3640);
    ASSERT_OP(t, RCV, 0, 1640, 3640);
    ASSERT_OP(t, FREE, 1540, 1740, 1750);
    ASSERT_OP(t, AFTER, 3640, 3840, 3850);
    ASSERT_OP(t, PEER, 3640, 3740, 3750);
    cr_assert_eq(t->makespan, 3850);
    cr_assert_eq(t->host_wait[0], 900);
    cr_assert_eq(t->host_wait[1], 100);

    /* Replicated, every copy blocks on its own host: the same times in each of 3 copies. */
    guint32 period[2] = {1, 1};
    SsimReplication rep = {.n_copies = 3, .stride = 3, .period = period};
    cfg.replication = &rep;
    g_autoptr(SsimTimeline) v = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(v, "%s", error ? error->message : "");
    assert_copies_equal(g, v, t);

    /* Without a host there is nothing to block: the flag alone changes nothing. */
    cfg.replication = NULL;
    cfg.host_issue = 0;
    g_autoptr(SsimTimeline) u = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_eq(u->start[X2], 10);
    cr_assert_eq(u->start[AFTER], 3040);
    cr_assert_null(u->host_wait);
}

/* An all-reduce of a fixed duration on a stream named after its group. */
static guint32 t_coll_for(SsimGraph *g, guint32 rank, guint32 group, SsimTime dur,
                          const guint32 *deps, guint n_deps)
{
    return t_coll_timed(g, rank, ssim_graph_group_name(g, group), group, SSIM_COLL_ALLREDUCE, 1000,
                        dur, deps, n_deps);
}

/*
 * The launch order under blocking launches.  Rank 0 lists a reduction (500 ns) before the send
 * (1000 bytes: 2000 ns) that, like it, follows kernel k0: the send is launched first (a pipeline
 * schedule's last transfer comes before the gradient reduction after it), so the reduction does
 * not delay it.  k0 100-150; the send is launched at 200 + 50 = 250 and meets the receive
 * (launched at 100) until 2250; the reduction, held by k0 only, is launched at 300 + 50 = 350 and
 * meets rank 1's (launched at 200, held by nothing: a receive holds no launch) until 850; the
 * kernel after it is launched at 400 + (850 - 300) = 950, and rank 1's, which reads the received
 * data, at 300 + (2250 - 100) = 2450.  Then two ranks that each send to the other and receive
 * from it (2000 ns one way, 4000 the other): nothing holds a transfer, so all four are launched
 * at once (sends at 100, receives at 200) and run from 200; the host waits for each through its
 * lag, so a kernel that reads its receive is launched at F + L as L stands when it is ready:
 * rank 1's at 300 + (2200 - 200) = 2300 while its own send still runs, rank 0's at
 * 300 + (4200 - 200) = 4300.
 */
Test(runtime, blocking_launches_order_and_group_transfers)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 dp = t_group(g, "dp", 2, 0u, 1u);
    guint32 k0 = t_compute(g, 0, "compute", 50, NODEPS);
    guint32 ar0 = t_coll_for(g, 0, dp, 500, DEPS(k0));
    guint32 snd = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 1000, DEPS(k0));
    guint32 k1 = t_compute(g, 0, "compute", 10, DEPS(ar0));
    guint32 rcv = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 1000, NODEPS);
    guint32 ar1 = t_coll_for(g, 1, dp, 500, NODEPS);
    guint32 k2 = t_compute(g, 1, "compute", 10, DEPS(rcv));
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    HostCost hc;
    SsimRunConfig cfg = host_config(&hc, 100, TRUE);
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    ASSERT_OP(t, k0, 0, 100, 150);
    ASSERT_OP(t, snd, 150, 250, 2250);
    ASSERT_OP(t, rcv, 0, 250, 2250);
    ASSERT_OP(t, ar0, 150, 350, 850);
    ASSERT_OP(t, ar1, 0, 350, 850);
    ASSERT_OP(t, k1, 850, 950, 960);
    ASSERT_OP(t, k2, 2250, 2450, 2460);

    g_autoptr(SsimGraph) h = ssim_graph_new();
    guint32 s0 = t_p2p(h, SSIM_OP_SEND, 0, "send", 1, 1000, NODEPS);
    guint32 r0 = t_p2p(h, SSIM_OP_RECV, 0, "recv", 1, 3000, NODEPS);
    guint32 c0 = t_compute(h, 0, "compute", 10, DEPS(r0));
    guint32 s1 = t_p2p(h, SSIM_OP_SEND, 1, "send", 0, 3000, NODEPS);
    guint32 r1 = t_p2p(h, SSIM_OP_RECV, 1, "recv", 0, 1000, NODEPS);
    guint32 c1 = t_compute(h, 1, "compute", 10, DEPS(r1));
    cr_assert(ssim_graph_finalize(h, &error), "%s", error ? error->message : "");
    g_autoptr(SsimTimeline) u = ssim_runtime_run_config(h, &cfg, &error);
    cr_assert_not_null(u, "%s", error ? error->message : "");
    ASSERT_OP(u, s0, 0, 200, 2200);
    ASSERT_OP(u, r1, 0, 200, 2200);
    ASSERT_OP(u, s1, 0, 200, 4200);
    ASSERT_OP(u, r0, 0, 200, 4200);
    ASSERT_OP(u, c0, 4200, 4300, 4310);
    ASSERT_OP(u, c1, 2200, 2300, 2310);
}

/* A schedule that cannot progress only because launches block: two ranks launch the same two
 * reductions, on streams of their own, in opposite orders.  Without blocking each host launches
 * both and they run; with it, each host waits in its first for the other's, and the run fails
 * naming the host that has not returned. */
Test(runtime, blocking_launches_deadlock_names_the_host)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 ga = t_group(g, "a", 2, 0u, 1u), gb = t_group(g, "b", 2, 0u, 1u);
    guint32 a0 = t_coll_for(g, 0, ga, 500, NODEPS);
    t_coll_for(g, 0, gb, 500, NODEPS);
    t_coll_for(g, 1, gb, 500, NODEPS);
    t_coll_for(g, 1, ga, 500, NODEPS);
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    HostCost hc;
    SsimRunConfig cfg = host_config(&hc, 100, FALSE);
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cfg.host_blocking = TRUE;
    g_autoptr(SsimTimeline) u = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_null(u);
    cr_assert_eq(error->code, SSIM_RUN_ERROR_DEADLOCK);
    char label[128];
    ssim_graph_op_label(g, a0, label, sizeof label);
    cr_assert(strstr(error->message, "the host, which has not returned from") &&
                  strstr(error->message, label) && strstr(error->message, "launches block"),
              "%s", error->message);
    g_error_free(error);
}

/* A communication model that finishes every match 777 ns after it starts, by its own event. */
typedef struct {
    SsimEngine *engine;
    SsimRun *run;
    guint type;
    guint started;
} FakeNet;

static void fake_done(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)e, (void)b;
    FakeNet *f = user;
    ssim_run_finish_match(f->run, (guint32)a);
}

static gboolean fake_attach(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *g,
                            GError **error)
{
    (void)g, (void)error;
    FakeNet *f = data;
    f->engine = engine;
    f->run = run;
    f->type = ssim_engine_register(engine, fake_done, f);
    return TRUE;
}

static SsimTime fake_start(gpointer data, SsimRun *run, guint32 match)
{
    FakeNet *f = data;
    cr_assert_eq(ssim_run_engine(run), f->engine);
    f->started++;
    ssim_engine_schedule(f->engine, ssim_engine_now(f->engine) + 777, f->type, match, 0);
    return -1;
}

Test(runtime, asynchronous_communication_model)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 2, 0u, 1u);
    guint32 c0 = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 a0 = t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 1 << 20, DEPS(c0));
    guint32 a1 = t_coll(g, 1, "comm", grp, SSIM_COLL_ALLREDUCE, 1 << 20, NODEPS);
    guint32 s0 = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 64, DEPS(a0));
    guint32 r1 = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 64, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    FakeNet f = {0};
    SsimCommModel model = {.data = &f, .attach = fake_attach, .start = fake_start};
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &model;
    GError *error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cr_assert_eq(f.started, 2);
    ASSERT_OP(t, a0, 100, 100, 877);
    ASSERT_OP(t, a1, 0, 100, 877);
    ASSERT_OP(t, s0, 877, 877, 1654);
    ASSERT_OP(t, r1, 0, 877, 1654);
}

/*
 * Replication (runtime.h): one graph rank standing for 4 copies on a 2 x 2 torus, copy c at
 * (c % 2, c / 2).  A communication model whose times depend on the copy makes the copies drift
 * apart, so each instance's start shows which copies it waited for.  X is each copy's own
 * (periods 2 x 2) and takes 100 (c + 1) ns; Y joins the copies of one row (periods 1 x 2:
 * {0, 1} and {2, 3}) and takes 10 (lowest copy + 1) ns, finished by the model's own event; Z
 * joins the copies of one column (periods 2 x 1: {0, 2} and {1, 3}) and takes 5 ns; then 1 us of
 * compute.
 */
typedef struct {
    SsimEngine *engine;
    SsimRun *run;
    guint type;
    guint32 x, y, z; /* matches */
    guint started[3];
} CopyNet;

static void copy_done(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)e;
    CopyNet *f = user;
    ssim_run_finish_instance(f->run, (guint32)a, (guint32)b);
}

static gboolean copy_attach(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *g,
                            GError **error)
{
    (void)g, (void)error;
    CopyNet *f = data;
    f->engine = engine;
    f->run = run;
    f->type = ssim_engine_register(engine, copy_done, f);
    return TRUE;
}

static SsimTime copy_start(gpointer data, SsimRun *run, guint32 match, guint32 instance, guint copy)
{
    (void)run;
    CopyNet *f = data;
    if (match == f->x) {
        f->started[0]++;
        return 100 * (SsimTime)(copy + 1);
    }
    if (match == f->y) {
        f->started[1]++;
        ssim_engine_schedule(f->engine, ssim_engine_now(f->engine) + 10 * (SsimTime)(copy + 1),
                             f->type, match, instance);
        return -1;
    }
    f->started[2]++;
    return 5;
}

static SsimTime no_start(gpointer data, SsimRun *run, guint32 match)
{
    (void)data, (void)run, (void)match;
    cr_assert_fail("a replicated run must call start_copy");
    return 0;
}

#define ASSERT_COPY(t, copies, c, i, s, e)                                                         \
    do {                                                                                           \
        gsize at_ = (gsize)(i) * (copies) + (c);                                                   \
        cr_assert_eq((t)->start[at_], (s), "copy %u op %u start %" G_GINT64_FORMAT " != %d",       \
                     (guint)(c), (guint)(i), (t)->start[at_], (int)(s));                           \
        cr_assert_eq((t)->end[at_], (e), "copy %u op %u end %" G_GINT64_FORMAT " != %d",           \
                     (guint)(c), (guint)(i), (t)->end[at_], (int)(e));                             \
    } while (0)

Test(runtime, replicated_copies_meet_in_their_instances)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 gx = t_group(g, "x", 1, 0u), gy = t_group(g, "y", 1, 0u), gz = t_group(g, "z", 1, 0u);
    guint32 x = t_coll(g, 0, "comm", gx, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    guint32 y = t_coll(g, 0, "comm", gy, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    guint32 z = t_coll(g, 0, "comm", gz, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    guint32 w = t_compute(g, 0, "compute", 1000, DEPS(z));
    cr_assert(ssim_graph_finalize(g, NULL));
    guint32 n = ssim_graph_n_ops(g);
    CopyNet f = {.x = ssim_graph_op(g, x)->match,
                 .y = ssim_graph_op(g, y)->match,
                 .z = ssim_graph_op(g, z)->match};
    guint32 period[6];
    period[2 * f.x] = 2, period[2 * f.x + 1] = 2;
    period[2 * f.y] = 1, period[2 * f.y + 1] = 2;
    period[2 * f.z] = 2, period[2 * f.z + 1] = 1;
    SsimReplication rep = {.n_copies = 4, .stride = 2, .period = period};

    guint32 first[3];
    cr_assert_eq(ssim_replication_instances(&rep, 3, first), 4 + 2 + 2);
    cr_assert_eq(ssim_replication_instance(&rep, first, f.y, 3), first[f.y] + 1);
    cr_assert_eq(ssim_replication_instance(&rep, first, f.z, 3), first[f.z] + 1);
    cr_assert_eq(ssim_replication_instance(&rep, first, f.z, 2), first[f.z]);
    cr_assert_eq(ssim_replication_instance(NULL, first, f.z, 2), f.z);

    SsimCommModel model = {
        .data = &f, .attach = copy_attach, .start = no_start, .start_copy = copy_start};
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.comm = &model;
    cfg.replication = &rep;
    GError *error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    cr_assert_eq(t->n_copies, 4);
    cr_assert_eq(t->n_ops, 4 * n);
    cr_assert_null(t->ready);
    cr_assert_eq(f.started[0], 4);
    cr_assert_eq(f.started[1], 2);
    cr_assert_eq(f.started[2], 2);
    for (guint c = 0; c < 4; c++) {
        ASSERT_COPY(t, 4, c, x, 0, 100 * (c + 1));
        /* Row {0, 1} starts when copy 1 is ready (200) and takes 10; row {2, 3} at 400, 30. */
        ASSERT_COPY(t, 4, c, y, c < 2 ? 200 : 400, c < 2 ? 210 : 430);
        /* Each column has a copy of each row, so both wait for the second row. */
        ASSERT_COPY(t, 4, c, z, 430, 435);
        ASSERT_COPY(t, 4, c, w, 435, 1435);
    }
    cr_assert_eq(t->makespan, 1435);
}

Test(runtime, replication_refusals_and_deadlocks_name_the_copy)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 1, 0u);
    t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    guint32 period[2] = {3, 1};
    SsimReplication rep = {.n_copies = 4, .stride = 2, .period = period};
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.replication = &rep;
    GError *error = NULL;
    cr_assert_null(ssim_runtime_run_config(g, &cfg, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH));
    cr_assert(strstr(error->message, "periods 3 x 1") != NULL, "%s", error->message);
    g_clear_error(&error);

    rep.stride = 3; /* does not divide 4 copies */
    period[0] = 1;
    cr_assert_null(ssim_runtime_run_config(g, &cfg, &error));
    cr_assert(strstr(error->message, "stride 3") != NULL, "%s", error->message);
    g_clear_error(&error);

    rep.stride = 2;
    FakeNet fake = {0};
    SsimCommModel plain = {.data = &fake, .attach = fake_attach, .start = fake_start};
    cfg.comm = &plain;
    cr_assert_null(ssim_runtime_run_config(g, &cfg, &error));
    cr_assert(strstr(error->message, "cannot replay a replicated run") != NULL, "%s",
              error->message);
    g_clear_error(&error);
    cfg.comm = NULL;

    /* A collective whose group has a member that never issues it deadlocks in every copy. */
    g_autoptr(SsimGraph) h = ssim_graph_new();
    guint32 pair = t_group(h, "tp", 2, 0u, 1u);
    t_coll(h, 0, "comm", pair, SSIM_COLL_ALLREDUCE, 64, NODEPS);
    t_compute(h, 1, "compute", 10, NODEPS);
    cr_assert(ssim_graph_finalize(h, NULL));
    period[0] = 2, period[1] = 2;
    cr_assert_null(ssim_runtime_run_config(h, &cfg, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    cr_assert(strstr(error->message, "4 of 8 ops finished") != NULL, "%s", error->message);
    cr_assert(strstr(error->message, "rank 0 copy 3 stream comm") != NULL, "%s", error->message);
    cr_assert(strstr(error->message, "rank 1 never issues it") != NULL, "%s", error->message);
    g_clear_error(&error);
}
