/*
 * The op graph's legality checks and derived structure: dependency validation, cycles (with the
 * cycle named), automatic tags (NCCL issue order), collective and p2p matching (keys of different
 * kinds never collide), barrier gates.
 */
#include "tests/test_common.h"

#include <string.h>

Test(graph, dangling_and_self_dependencies_are_refused)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_compute(g, 0, "s", 1, DEPS(5));
    GError *e = NULL;
    cr_assert_not(ssim_graph_finalize(g, &e));
    cr_assert(g_error_matches(e, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH));
    cr_assert(strstr(e->message, "depends on op index 5, which does not exist"), "%s", e->message);
    g_clear_error(&e);

    g_autoptr(SsimGraph) h = ssim_graph_new();
    t_compute(h, 0, "s", 1, DEPS(0));
    cr_assert_not(ssim_graph_finalize(h, &e));
    cr_assert(strstr(e->message, "depends on itself"), "%s", e->message);
    g_clear_error(&e);
}

Test(graph, cycle_through_stream_order_is_named)
{
    /* b waits for c by dependency; c comes after b on the same stream: a cycle. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_compute(g, 0, "s", 1, NODEPS);  /* 0 */
    t_compute(g, 0, "s", 1, DEPS(2)); /* 1 */
    t_compute(g, 0, "s", 1, NODEPS);  /* 2: after 1 on stream s */
    GError *e = NULL;
    cr_assert_not(ssim_graph_finalize(g, &e));
    cr_assert(strstr(e->message, "dependency cycle"), "%s", e->message);
    cr_assert(strstr(e->message, "compute#1") && strstr(e->message, "compute#2"), "%s", e->message);
    cr_assert_null(strstr(e->message, "compute#0"), "%s", e->message);
    g_clear_error(&e);
}

/* A dependency on a later op is legal when it closes no cycle (finalize then runs its full
 * check, not the shortcut for graphs whose dependencies all point back), and the replay honours
 * it: the op waits for the later-numbered one on another stream. */
Test(graph, dependency_on_a_later_op_without_a_cycle)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_compute(g, 0, "a", 5, DEPS(1)); /* 0: waits for op 1 */
    t_compute(g, 0, "b", 7, NODEPS);  /* 1 */
    cr_assert(ssim_graph_finalize(g, NULL));
    g_autoptr(SsimTimeline) tl = ssim_runtime_run(g, NULL, NULL, NULL);
    cr_assert_not_null(tl);
    cr_assert_eq(tl->makespan, 12);
}

Test(graph, auto_tags_follow_issue_order_per_group)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "dp", 2, 0u, 1u);
    /* Rank 0 issues A then B; rank 1 issues A then B on a different stream layout. */
    guint32 a0 = t_coll(g, 0, "c1", grp, SSIM_COLL_ALLREDUCE, 10, NODEPS);
    guint32 b0 = t_coll(g, 0, "c2", grp, SSIM_COLL_ALLGATHER, 20, NODEPS);
    guint32 a1 = t_coll(g, 1, "c1", grp, SSIM_COLL_ALLREDUCE, 10, NODEPS);
    guint32 b1 = t_coll(g, 1, "c1", grp, SSIM_COLL_ALLGATHER, 20, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    cr_assert_eq(ssim_graph_op(g, a0)->tag, 0);
    cr_assert_eq(ssim_graph_op(g, b0)->tag, 1);
    cr_assert_eq(ssim_graph_op(g, a0)->match, ssim_graph_op(g, a1)->match);
    cr_assert_eq(ssim_graph_op(g, b0)->match, ssim_graph_op(g, b1)->match);
    cr_assert_neq(ssim_graph_op(g, a0)->match, ssim_graph_op(g, b0)->match);
    guint n, expected;
    const guint32 *m = ssim_graph_match_ops(g, ssim_graph_op(g, b0)->match, &n, &expected);
    cr_assert_eq(n, 2);
    cr_assert_eq(expected, 2);
    cr_assert(m[0] == b0 && m[1] == b1);
}

/* A rank's auto tags on a group are its ordinals there, so it can enter one instance twice only
 * through a tag of its own: given on the later op, or on an earlier one whose number a later
 * auto tag reaches.  Both are refused, naming the two ops; auto tags alone never are. */
Test(graph, a_tag_of_its_own_that_meets_an_auto_tag_is_refused)
{
    for (guint explicit_first = 0; explicit_first < 2; explicit_first++) {
        g_autoptr(SsimGraph) g = ssim_graph_new();
        guint32 grp = t_group(g, "dp", 2, 0u, 1u);
        SsimOpSpec s = SSIM_OP_SPEC_INIT;
        s.kind = SSIM_OP_COLLECTIVE;
        s.coll = SSIM_COLL_ALLREDUCE;
        s.stream = ssim_graph_stream(g, 0, "comm");
        s.group = grp;
        s.bytes = 8;
        /* Rank 1 enters the instance first, so that rank 0's first op is not its first member
         * (which every op is compared with).  Then rank 0: explicit_first, tag 1 (ordinal 0)
         * and auto (ordinal 1, tag 1); else auto (0) and tag 0. */
        SsimOpSpec s1 = s;
        s1.stream = ssim_graph_stream(g, 1, "comm");
        s1.tag = explicit_first ? 1 : 0;
        ssim_graph_add_op(g, &s1, NULL, 0);
        if (explicit_first) {
            s.tag = 1;
            ssim_graph_add_op(g, &s, NULL, 0);
            t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
        } else {
            t_coll(g, 0, "comm", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
            s.tag = 0;
            ssim_graph_add_op(g, &s, NULL, 0);
        }
        GError *error = NULL;
        cr_assert_not(ssim_graph_finalize(g, &error), "explicit first %u", explicit_first);
        cr_assert(strstr(error->message, "rank 0 enters dp collective tag") &&
                      strstr(error->message, "twice"),
                  "%s", error->message);
        g_error_free(error);
    }
    /* Auto tags only: rank 0's three all-reduces are three instances. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "dp", 2, 0u, 1u);
    for (guint r = 0; r < 2; r++)
        for (guint k = 0; k < 3; k++)
            t_coll(g, r, "comm", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    cr_assert_eq(ssim_graph_n_matches(g), 3);
}

Test(graph, sends_match_receives_by_source_destination_and_tag)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 s_a = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 8, NODEPS);
    guint32 s_b = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 8, NODEPS);
    guint32 r_a = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 8, NODEPS);
    guint32 r_b = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 8, NODEPS);
    guint32 back = t_p2p(g, SSIM_OP_SEND, 1, "pp", 0, 8, NODEPS); /* other direction, tag 0 */
    cr_assert(ssim_graph_finalize(g, NULL));
    cr_assert_eq(ssim_graph_op(g, s_a)->match, ssim_graph_op(g, r_a)->match);
    cr_assert_eq(ssim_graph_op(g, s_b)->match, ssim_graph_op(g, r_b)->match);
    cr_assert_neq(ssim_graph_op(g, back)->match, ssim_graph_op(g, s_a)->match);
    guint n, expected;
    const guint32 *m = ssim_graph_match_ops(g, ssim_graph_op(g, back)->match, &n, &expected);
    cr_assert(n == 2 && m[0] == back && m[1] == SSIM_NONE);
}

/* A tag repeated between two ranks (Chakra traces do it: ASTRA-sim's custom collectives send
 * every step of a ring with tag 0) pairs the k-th send with the k-th receive in op order, MPI's
 * non-overtaking rule; each pair is its own match, and none meets a collective's or a barrier's
 * of the same numbers (group 1 with tag 1, 2, ...: a repeat's key shares the third word of a
 * group's). */
Test(graph, a_repeated_tag_pairs_sends_and_receives_in_op_order)
{
    enum { N = 5 };
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_group(g, "other", 2, 0u, 1u);
    guint32 grp = t_group(g, "g1", 2, 0u, 1u);
    guint32 s[N], r[N], c[2][N], back;
    for (guint k = 0; k < N; k++) {
        /* Rank 0 alternates two streams: op order, not stream, decides. */
        s[k] = t_p2p_tag(g, SSIM_OP_SEND, 0, k % 2 ? "a" : "b", 1, 7, 8, NODEPS);
        c[0][k] = t_coll(g, 0, "c", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    }
    back = t_p2p_tag(g, SSIM_OP_SEND, 1, "pp", 0, 7, 8, NODEPS); /* the other direction */
    for (guint k = 0; k < N; k++) {
        r[k] = t_p2p_tag(g, SSIM_OP_RECV, 1, "pp", 0, 7, 8, NODEPS);
        c[1][k] = t_coll(g, 1, "c", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    }
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_matches(g), 2 * N + 1);
    for (guint k = 0; k < N; k++) {
        guint32 m = ssim_graph_op(g, s[k])->match;
        cr_assert_eq(ssim_graph_op(g, r[k])->match, m, "pair %u", k);
        cr_assert_eq(ssim_graph_op(g, s[k])->tag, 7);
        cr_assert_neq(ssim_graph_op(g, c[0][k])->match, m);
        cr_assert_neq(ssim_graph_op(g, back)->match, m);
        cr_assert_eq(ssim_graph_op(g, c[1][k])->match, ssim_graph_op(g, c[0][k])->match);
        guint n, expected;
        const guint32 *ops = ssim_graph_match_ops(g, m, &n, &expected);
        cr_assert(n == 2 && expected == 2 && ops[0] == s[k] && ops[1] == r[k], "pair %u", k);
    }
}

/* Thousands of instances and channels (the maps that match them grow many times over): each
 * collective pairs the two ranks' ops of the same ordinal, each send its receive, whatever the
 * order the ranks issued them in. */
Test(graph, many_instances_match_by_ordinal)
{
    enum { N = 3000 };
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "dp", 2, 0u, 1u);
    static guint32 c0[N], c1[N], s0[N], r1[N];
    for (guint i = 0; i < N; i++) {
        c0[i] = t_coll(g, 0, "c", grp, SSIM_COLL_ALLREDUCE, 8 + i, NODEPS);
        s0[i] = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 8, NODEPS);
    }
    for (guint i = 0; i < N; i++) /* rank 1 receives everything first */
        r1[i] = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 8, NODEPS);
    for (guint i = 0; i < N; i++)
        c1[i] = t_coll(g, 1, "c", grp, SSIM_COLL_ALLREDUCE, 8 + i, NODEPS);
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_matches(g), 2 * N);
    for (guint i = 0; i < N; i++) {
        cr_assert_eq(ssim_graph_op(g, c0[i])->match, ssim_graph_op(g, c1[i])->match);
        cr_assert_eq(ssim_graph_op(g, s0[i])->match, ssim_graph_op(g, r1[i])->match);
        cr_assert_eq(ssim_graph_op(g, c1[i])->tag, i);
        guint n, expected;
        const guint32 *m = ssim_graph_match_ops(g, ssim_graph_op(g, s0[i])->match, &n, &expected);
        cr_assert(n == 2 && m[0] == s0[i] && m[1] == r1[i]);
    }
}

static guint32 t_barrier(SsimGraph *g, guint32 rank, guint32 group)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_BARRIER;
    s.group = group;
    s.stream = ssim_graph_stream(g, rank, "host");
    return ssim_graph_add_op(g, &s, NODEPS);
}

Test(graph, channels_and_match_kinds_never_share_keys)
{
    /* Group 1 and rank 1 have the same number: rank 0's collective on group 1, its barrier on
     * group 1 and its send to rank 1 are counted on three channels (each gets tag 0), and the
     * collective and the barrier of group 1 with tag 0 are two matches, not one. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    t_group(g, "other", 2, 0u, 1u);
    guint32 grp = t_group(g, "g1", 2, 0u, 1u);
    cr_assert_eq(grp, 1);
    guint32 c0 = t_coll(g, 0, "c", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    guint32 s0 = t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 8, NODEPS);
    guint32 b0 = t_barrier(g, 0, grp);
    guint32 c1 = t_coll(g, 1, "c", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    guint32 r1 = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 8, NODEPS);
    guint32 b1 = t_barrier(g, 1, grp);
    cr_assert(ssim_graph_finalize(g, NULL));
    const guint32 ops[] = {c0, s0, b0, c1, r1, b1};
    for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
        cr_assert_eq(ssim_graph_op(g, ops[i])->tag, 0, "op %u", ops[i]);
    guint32 mc = ssim_graph_op(g, c0)->match, mp = ssim_graph_op(g, s0)->match;
    guint32 mb = ssim_graph_op(g, b0)->match;
    cr_assert_eq(ssim_graph_op(g, c1)->match, mc);
    cr_assert_eq(ssim_graph_op(g, r1)->match, mp);
    cr_assert_eq(ssim_graph_op(g, b1)->match, mb);
    cr_assert(mc != mp && mc != mb && mp != mb);
    guint n, expected;
    ssim_graph_match_ops(g, mb, &n, &expected);
    cr_assert(n == 2 && expected == 2);
}

Test(graph, barrier_gates_first_op_per_stream_only)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "w", 1, 0u);
    t_compute(g, 0, "a", 1, NODEPS); /* 0 */
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_BARRIER;
    s.group = grp;
    s.stream = ssim_graph_stream(g, 0, "host");
    guint32 b = ssim_graph_add_op(g, &s, NODEPS); /* 1 */
    guint32 x = t_compute(g, 0, "a", 1, NODEPS);  /* 2: gated */
    guint32 y = t_compute(g, 0, "a", 1, NODEPS);  /* 3: follows by stream order */
    guint32 z = t_compute(g, 0, "b", 1, NODEPS);  /* 4: gated */
    cr_assert(ssim_graph_finalize(g, NULL));
    guint n;
    const guint32 *succ = ssim_graph_succs(g, b, &n);
    cr_assert_eq(n, 2);
    cr_assert(succ[0] == x && succ[1] == z);
    cr_assert_eq(ssim_graph_n_preds(g, x), 2); /* stream predecessor + gate */
    cr_assert_eq(ssim_graph_n_preds(g, y), 1);
    cr_assert_eq(ssim_graph_n_preds(g, z), 1);
}

Test(graph, user_ids_and_labels)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.stream = ssim_graph_stream(g, 3, "compute");
    s.duration = 1;
    s.id = 900;
    s.name = "fwd.qkv";
    ssim_graph_add_op(g, &s, NODEPS);
    s.id = 17;
    s.name = NULL;
    ssim_graph_add_op(g, &s, NODEPS);
    cr_assert(ssim_graph_finalize(g, NULL));
    cr_assert_eq(ssim_graph_n_ranks(g), 4);
    cr_assert_eq(ssim_graph_find_id(g, 17), 1);
    cr_assert_eq(ssim_graph_find_id(g, 900), 0);
    cr_assert_eq(ssim_graph_find_id(g, 5), SSIM_NONE);
    char buf[64];
    cr_assert_str_eq(ssim_graph_op_label(g, 0, buf, sizeof buf), "fwd.qkv#900");
    cr_assert_str_eq(ssim_graph_op_label(g, 1, buf, sizeof buf), "compute#17");

    s.id = 17;
    ssim_graph_add_op(g, &s, NODEPS);
    GError *e = NULL;
    cr_assert_not(ssim_graph_finalize(g, &e));
    cr_assert(strstr(e->message, "id 17 is used by two ops"), "%s", e->message);
    g_clear_error(&e);
}

Test(graph, groups_reject_repeats_and_unknown_members)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    GError *e = NULL;
    const guint32 twice[] = {1, 2, 1};
    cr_assert_eq(ssim_graph_add_group(g, "x", twice, 3, &e), SSIM_NONE);
    cr_assert(strstr(e->message, "lists rank 1 twice"));
    g_clear_error(&e);
    guint32 grp = t_group(g, "tp", 2, 0u, 1u);
    t_coll(g, 2, "comm", grp, SSIM_COLL_ALLREDUCE, 8, NODEPS);
    cr_assert_not(ssim_graph_finalize(g, &e));
    cr_assert(strstr(e->message, "rank 2 is not a member of group tp"), "%s", e->message);
    g_clear_error(&e);
}

/* ---- the causal issue order (graph-order.c) ---- */

static guint32 t_xfer(SsimGraph *g, SsimOpKind kind, guint32 rank, guint32 peer, guint32 tag,
                      const guint32 *deps, guint n_deps)
{
    const char *stream =
        kind == SSIM_OP_SEND ? (peer < rank ? "s-" : "s+") : (peer < rank ? "r-" : "r+");
    return t_p2p_tag(g, kind, rank, stream, peer, tag, 1000, deps, n_deps);
}

/*
 * Three pipeline stages, two microbatches, each stage's ops added in the order a generator
 * writes them, microbatch by microbatch (forward F, backward B, 10 us each; the last stage's FB
 * 20 us; a transfer alpha + S/B = 1 + 1 us, send and receive streams per neighbour).  Stage 1
 * issues B0 before F1, and B0 waits for stage 2:
 *   F0 0-10, f0 10-12, F0' 12-22, f0' 22-24, FB0 24-44, g0 44-46, B0' 46-56, g0' 56-58,
 *   B0 58-68; F1 10-20, f1 20-22, F1' 56-66 (behind B0'), f1' 66-68, FB1 68-88, g1 88-90,
 *   B1' 90-100, g1' 100-102, B1 102-112: 112 us.
 * In the causal order stage 1's F1 (one transfer from the start) comes before B0 (three):
 *   F1' 22-32, f1' 32-34, FB1 44-64, g1 64-66, B1' 66-76, g1' 76-78, B1 78-88: 88 us,
 * with F1', B0' and B1' after another op than before, and every pair matched as before.
 */
/* Adds the pipeline above; stage 1's F0', B0', F1', B1' in want[]. */
static void add_pipeline(SsimGraph *g, guint32 want[4])
{
    /* Stage 0. */
    guint32 F0 = t_compute(g, 0, "c", 10000, NODEPS);
    t_xfer(g, SSIM_OP_SEND, 0, 1, 0, DEPS(F0));
    guint32 F1 = t_compute(g, 0, "c", 10000, NODEPS);
    t_xfer(g, SSIM_OP_SEND, 0, 1, 1, DEPS(F1));
    guint32 rg0 = t_xfer(g, SSIM_OP_RECV, 0, 1, 10, NODEPS);
    t_compute(g, 0, "c", 10000, DEPS(rg0));
    guint32 rg1 = t_xfer(g, SSIM_OP_RECV, 0, 1, 11, NODEPS);
    t_compute(g, 0, "c", 10000, DEPS(rg1));
    /* Stage 1, microbatch by microbatch. */
    guint32 r0 = t_xfer(g, SSIM_OP_RECV, 1, 0, 0, NODEPS);
    want[0] = t_compute(g, 1, "c", 10000, DEPS(r0));
    t_xfer(g, SSIM_OP_SEND, 1, 2, 2, DEPS(want[0]));
    guint32 rg0b = t_xfer(g, SSIM_OP_RECV, 1, 2, 12, NODEPS);
    want[1] = t_compute(g, 1, "c", 10000, DEPS(rg0b));
    t_xfer(g, SSIM_OP_SEND, 1, 0, 10, DEPS(want[1]));
    guint32 r1 = t_xfer(g, SSIM_OP_RECV, 1, 0, 1, NODEPS);
    want[2] = t_compute(g, 1, "c", 10000, DEPS(r1));
    t_xfer(g, SSIM_OP_SEND, 1, 2, 3, DEPS(want[2]));
    guint32 rg1b = t_xfer(g, SSIM_OP_RECV, 1, 2, 13, NODEPS);
    want[3] = t_compute(g, 1, "c", 10000, DEPS(rg1b));
    t_xfer(g, SSIM_OP_SEND, 1, 0, 11, DEPS(want[3]));
    /* Stage 2. */
    guint32 q0 = t_xfer(g, SSIM_OP_RECV, 2, 1, 2, NODEPS);
    guint32 FB0 = t_compute(g, 2, "c", 20000, DEPS(q0));
    t_xfer(g, SSIM_OP_SEND, 2, 1, 12, DEPS(FB0));
    guint32 q1 = t_xfer(g, SSIM_OP_RECV, 2, 1, 3, NODEPS);
    guint32 FB1 = t_compute(g, 2, "c", 20000, DEPS(q1));
    t_xfer(g, SSIM_OP_SEND, 2, 1, 13, DEPS(FB1));
}

Test(graph, causal_order_pipelines_a_generators_order)
{
    for (int causal = 0; causal <= 1; causal++) {
        g_autoptr(SsimGraph) g = ssim_graph_new();
        guint32 want[4];
        add_pipeline(g, want);
        GError *error = NULL;
        cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
        guint32 n_matches = ssim_graph_n_matches(g);
        if (causal) {
            guint32 moved = 0;
            cr_assert(ssim_graph_issue_causally(g, &moved, &error), "%s",
                      error ? error->message : "");
            cr_assert_eq(moved, 3);
            cr_assert(ssim_graph_is_finalized(g));
            cr_assert_eq(ssim_graph_n_matches(g), n_matches);
            /* Every op keeps its id; each pair still joins a send to the receive of its tag. */
            for (guint32 m = 0; m < n_matches; m++) {
                guint n, expected;
                const guint32 *ops = ssim_graph_match_ops(g, m, &n, &expected);
                cr_assert(n == 2 && ops[0] != SSIM_NONE && ops[1] != SSIM_NONE);
                cr_assert_eq(ssim_graph_op(g, ops[0])->tag, ssim_graph_op(g, ops[1])->tag);
            }
            for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
                guint nd;
                const guint32 *d = ssim_graph_deps(g, i, &nd);
                for (guint j = 0; j < nd; j++)
                    cr_assert_lt(d[j], i, "op %u depends on a later op", i);
            }
            /* Stage 1's compute stream: F0', F1', B0', B1' (ids are the old indices). */
            const guint32 order[] = {want[0], want[2], want[1], want[3]};
            guint at = 0;
            for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
                const SsimOp *o = ssim_graph_op(g, i);
                if (o->rank == 1 && o->kind == SSIM_OP_COMPUTE)
                    cr_assert_eq(o->id, order[at++]);
            }
            /* Already causal: nothing moves the second time. */
            cr_assert(ssim_graph_issue_causally(g, &moved, &error));
            cr_assert_eq(moved, 0);
        }
        SsimSimpleCost p;
        ssim_simple_cost_init(&p);
        p.alpha = 1000;
        p.link_bw = 1e9;
        SsimCostModel model = ssim_simple_cost_model(&p);
        g_autoptr(SsimTimeline) tl = ssim_runtime_run(g, &model, NULL, &error);
        cr_assert_not_null(tl, "%s", error ? error->message : "");
        cr_assert_eq(tl->makespan, causal ? 88000 : 112000, "causal %d: %" G_GINT64_FORMAT, causal,
                     tl->makespan);
    }
}

/* The same pipeline with a host barrier at its end keeps its order: a barrier gates what its
 * rank issues after it, which a new order would change. */
Test(graph, causal_order_leaves_barriers_alone)
{
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 want[4];
    add_pipeline(g, want);
    guint32 w = t_group(g, "w", 3, 0u, 1u, 2u);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_BARRIER;
    s.group = w;
    for (guint32 r = 0; r < 3; r++) {
        s.stream = ssim_graph_stream(g, r, "host");
        ssim_graph_add_op(g, &s, NODEPS);
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    guint32 moved = 7;
    cr_assert(ssim_graph_issue_causally(g, &moved, NULL));
    cr_assert_eq(moved, 0);
    cr_assert_eq(ssim_graph_op(g, want[1] + 1)->kind, SSIM_OP_SEND); /* untouched */
}

/*
 * Random graphs that some order of all ranks together runs (events drawn one after another: a
 * computation on one rank, or a transfer between two, each depending on up to two earlier ops of
 * its ranks), each rank's ops added in a random topological order of their own and spread over
 * two streams a rank: in their added order many deadlock, in the causal order none does.
 */
Test(graph, causal_order_never_deadlocks_a_graph_some_order_runs)
{
    enum { GRAPHS = 200, RANKS = 4, EVENTS = 40 };
    g_autoptr(GRand) rng = g_rand_new_with_seed(18);
    guint deadlocked_in_order = 0;
    for (guint t = 0; t < GRAPHS; t++) {
        /* The abstract ops, in event order: rank, peer (or none), kind, deps among them. */
        guint32 rank[2 * EVENTS], peer[2 * EVENTS], tag[2 * EVENTS], kind[2 * EVENTS];
        guint32 deps[2 * EVENTS][2], n_deps[2 * EVENTS];
        guint n = 0;
        for (guint e = 0; e < EVENTS; e++) {
            guint32 a = g_rand_int_range(rng, 0, RANKS), b = g_rand_int_range(rng, 0, RANKS);
            gboolean xfer = a != b && g_rand_boolean(rng);
            for (guint side = 0; side < (xfer ? 2u : 1u); side++) {
                guint32 r = side ? b : a;
                rank[n] = r;
                peer[n] = xfer ? (side ? a : b) : SSIM_NONE;
                kind[n] = xfer ? (side ? SSIM_OP_RECV : SSIM_OP_SEND) : SSIM_OP_COMPUTE;
                tag[n] = e;
                n_deps[n] = 0;
                for (guint k = 0; k < 2; k++) {
                    guint32 d = g_rand_int_range(rng, 0, n + 1);
                    if (d < n && rank[d] == r && (n_deps[n] == 0 || deps[n][0] != d))
                        deps[n][n_deps[n]++] = d;
                }
                n++;
            }
        }
        /* Each rank's ops added in a random topological order of their dependencies. */
        guint32 index[2 * EVENTS], stream[2 * EVENTS];
        gboolean added[2 * EVENTS] = {FALSE};
        g_autoptr(SsimGraph) g = ssim_graph_new();
        for (guint32 r = 0; r < RANKS; r++)
            for (;;) {
                guint32 ready[2 * EVENTS], n_ready = 0;
                for (guint i = 0; i < n; i++) {
                    gboolean ok = rank[i] == r && !added[i];
                    for (guint k = 0; ok && k < n_deps[i]; k++)
                        ok = added[deps[i][k]];
                    if (ok)
                        ready[n_ready++] = i;
                }
                if (n_ready == 0)
                    break;
                guint i = ready[g_rand_int_range(rng, 0, n_ready)];
                guint32 d[2];
                for (guint k = 0; k < n_deps[i]; k++)
                    d[k] = index[deps[i][k]];
                SsimOpSpec s = SSIM_OP_SPEC_INIT;
                stream[i] = g_rand_int_range(rng, 0, 2);
                s.stream = ssim_graph_stream(g, r, stream[i] ? "x" : "y");
                s.kind = kind[i];
                s.peer = peer[i];
                s.tag = kind[i] == SSIM_OP_COMPUTE ? SSIM_TAG_AUTO : tag[i];
                s.bytes = kind[i] == SSIM_OP_COMPUTE ? 0 : 1000;
                s.duration = kind[i] == SSIM_OP_COMPUTE ? (SsimTime)(1000 + 100 * i) : -1;
                index[i] = ssim_graph_add_op(g, &s, d, n_deps[i]);
                added[i] = TRUE;
            }
        GError *error = NULL;
        cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
        SsimSimpleCost p;
        ssim_simple_cost_init(&p);
        SsimCostModel model = ssim_simple_cost_model(&p);
        SsimTimeline *tl = ssim_runtime_run(g, &model, NULL, &error);
        if (tl == NULL) {
            cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
            deadlocked_in_order++;
            g_clear_error(&error);
        }
        ssim_timeline_free(tl);
        guint32 moved;
        cr_assert(ssim_graph_issue_causally(g, &moved, &error), "%s", error ? error->message : "");
        g_autoptr(SsimTimeline) tl2 = ssim_runtime_run(g, &model, NULL, &error);
        cr_assert_not_null(tl2, "graph %u: %s", t, error ? error->message : "");
    }
    cr_assert_gt(deadlocked_in_order, GRAPHS / 10, "%u of %u", deadlocked_in_order, GRAPHS);
}
