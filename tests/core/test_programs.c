/*
 * Programs (graph.h, graph-programs.c, the runtime's gates) against hand-computed timelines: a
 * send waiting for a collective of its program, a program waiting for its predecessor on the
 * device, stream semantics inside a program; finalize refusing a program that waits for itself,
 * deadlocks that name the program; the graph-file keys and their round trip; and the repeat count
 * of communication (SsimRunConfig.comm_repeat), once with a cost model and once with a
 * communication model.
 */
#include "tests/test_common.h"

#include <shiftsim/graphfile.h>
#include <shiftsim/report.h>
#include <string.h>

#define ASSERT_OP(t, i, r, s, e)                                                                   \
    do {                                                                                           \
        cr_assert_eq((t)->ready[i], (r), "op %u ready %" G_GINT64_FORMAT " != %d", (guint)(i),     \
                     (t)->ready[i], (int)(r));                                                     \
        cr_assert_eq((t)->start[i], (s), "op %u start %" G_GINT64_FORMAT " != %d", (guint)(i),     \
                     (t)->start[i], (int)(s));                                                     \
        cr_assert_eq((t)->end[i], (e), "op %u end %" G_GINT64_FORMAT " != %d", (guint)(i),         \
                     (t)->end[i], (int)(e));                                                       \
    } while (0)

#define ASSERT_HAS(msg, frag)                                                                      \
    cr_assert(strstr((msg), (frag)) != NULL, "'%s' lacks '%s'", (msg), (frag))

static SsimTimeline *run_ok(SsimGraph *g)
{
    GError *error = NULL;
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");
    SsimTimeline *t = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    return t;
}

static SsimGraph *load_example(const char *name, GError **error)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", name, NULL);
    return ssim_graphfile_load(path, error);
}

/* The example's text with its `program=` keys (and program lines) removed, or with the
 * all-reduce moved into apply_grad as commshift does. */
static char *example_variant(const char *name, gboolean drop_programs, gboolean commshift)
{
    g_autofree char *path =
        g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "examples", name, NULL);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    GString *out = g_string_new(NULL);
    for (guint i = 0; lines[i]; i++) {
        g_autofree char *line = g_strdup(lines[i]);
        if (drop_programs) {
            if (g_str_has_prefix(line, "program "))
                continue;
            char *key = strstr(line, " program=");
            if (key != NULL) {
                char *end = strchr(key + 1, ' ');
                memmove(key, end ? end : key + strlen(key), strlen(end ? end : "") + 1);
            }
        }
        if (commshift && g_str_has_prefix(line, "2 1 ")) {
            char *key = strstr(line, "program=bwd");
            cr_assert_not_null(key);
            g_string_append_len(out, line, key - line);
            g_string_append(out, "program=apply_grad");
            g_string_append(out, key + strlen("program=bwd"));
            g_string_append_c(out, '\n');
            continue;
        }
        if (commshift && g_str_has_prefix(line, "4 1 ")) {
            g_string_append_printf(out, "%s deps=2\n", line);
            continue;
        }
        g_string_append_printf(out, "%s\n", line);
    }
    return g_string_free(out, FALSE);
}

Test(programs, send_waits_for_the_collective_of_its_program)
{
    /* traces/examples/alpa-cooldown.graph: its header has this timeline, drawn by hand. */
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) g = load_example("alpa-cooldown.graph", &error);
    cr_assert_not_null(g, "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_programs(g), 4);
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, NULL, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    guint32 op[9];
    for (guint32 id = 1; id <= 8; id++)
        op[id] = ssim_graph_find_id(g, id);
    ASSERT_OP(t, op[1], 0, 0, 400);      /* stage 1 backward */
    ASSERT_OP(t, op[2], 400, 400, 700);  /* its gradient all-reduce, inside the program */
    ASSERT_OP(t, op[3], 700, 700, 750);  /* the send needs op 1 only, but waits for all of bwd */
    ASSERT_OP(t, op[4], 700, 700, 800);  /* apply_grad after bwd */
    ASSERT_OP(t, op[6], 0, 700, 750);    /* stage 0's receive */
    ASSERT_OP(t, op[7], 750, 750, 1150); /* stage 0's backward program waits for it */
    ASSERT_OP(t, op[8], 1150, 1150, 1250);
    cr_assert_eq(t->makespan, 1250);

    /* Without programs the send leaves at 400, and the step is 300 (the all-reduce) shorter. */
    g_autofree char *plain = example_variant("alpa-cooldown.graph", TRUE, FALSE);
    g_autoptr(SsimGraph) p = ssim_graphfile_parse("plain", plain, -1, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(ssim_graph_n_programs(p), 0);
    cr_assert_null(ssim_graph_op_programs(p));
    g_autoptr(SsimTimeline) tp = ssim_runtime_run(p, NULL, NULL, &error);
    cr_assert_eq(tp->start[ssim_graph_find_id(p, 3)], 400);
    cr_assert_eq(tp->makespan, 950);

    /* commshift: the all-reduce in apply_grad; the backward program ends with its compute. */
    g_autofree char *moved = example_variant("alpa-cooldown.graph", FALSE, TRUE);
    g_autoptr(SsimGraph) m = ssim_graphfile_parse("commshift", moved, -1, &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    g_autoptr(SsimTimeline) tm = ssim_runtime_run(m, NULL, NULL, &error);
    cr_assert_not_null(tm, "%s", error ? error->message : "");
    ASSERT_OP(tm, ssim_graph_find_id(m, 3), 400, 400, 450);
    ASSERT_OP(tm, ssim_graph_find_id(m, 2), 400, 400, 700);
    ASSERT_OP(tm, ssim_graph_find_id(m, 4), 700, 700, 800);
    ASSERT_OP(tm, ssim_graph_find_id(m, 7), 450, 450, 850);
    cr_assert_eq(tm->makespan, 950);
    cr_assert_eq(t->makespan - tm->makespan, 300); /* exactly the all-reduce */
}

Test(programs, program_waits_for_its_predecessor_on_the_device)
{
    /* Rank 0: program one = {A 100 on compute, C 300 on aux}, program two = {D 50 on compute}.
     * Inside one, A and C overlap (stream semantics); D follows A on its stream but must wait
     * for all of one (in-order dispatch): 300 .. 350, not 100 .. 150. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 one = ssim_graph_program(g, 0, "one"), two = ssim_graph_program(g, 0, "two");
    guint32 a = t_compute(g, 0, "compute", 100, NODEPS);
    guint32 c = t_compute(g, 0, "aux", 300, NODEPS);
    guint32 d = t_compute(g, 0, "compute", 50, NODEPS);
    cr_assert(ssim_graph_set_program(g, a, one));
    cr_assert(ssim_graph_set_program(g, c, one));
    cr_assert(ssim_graph_set_program(g, d, two));
    /* An op outside both, after A on its stream: it follows stream semantics alone... */
    guint32 x = t_compute(g, 0, "aux", 10, NODEPS);
    g_autoptr(SsimTimeline) t = run_ok(g);
    ASSERT_OP(t, a, 0, 0, 100);
    ASSERT_OP(t, c, 0, 0, 300);
    ASSERT_OP(t, d, 300, 300, 350);
    /* ...but its stream predecessor C is in program one, so it waits for all of one. */
    ASSERT_OP(t, x, 300, 300, 310);
    cr_assert_eq(ssim_graph_program_prev(g, two), one);
    cr_assert_eq(ssim_graph_program_next(g, one), two);
    guint n;
    const guint32 *ops = ssim_graph_program_ops(g, one, &n);
    cr_assert(n == 2 && ops[0] == a && ops[1] == c);

    /* A program of another rank: no in-order dispatch with rank 0's. */
    g_autoptr(SsimGraph) h = ssim_graph_new();
    guint32 p0 = ssim_graph_program(h, 0, "p"), p1 = ssim_graph_program(h, 1, "p");
    cr_assert_neq(p0, p1);
    guint32 h0 = t_compute(h, 0, "compute", 100, NODEPS);
    guint32 h1 = t_compute(h, 1, "compute", 100, NODEPS);
    cr_assert(ssim_graph_set_program(h, h0, p0));
    cr_assert_not(ssim_graph_set_program(h, h1, p0), "a program belongs to one rank");
    cr_assert(ssim_graph_set_program(h, h1, p1));
    g_autoptr(SsimTimeline) th = run_ok(h);
    cr_assert(th->start[h0] == 0 && th->start[h1] == 0);
}

Test(programs, input_from_outside_opens_the_program)
{
    /* Program q on rank 1 = {B 100 (reads R), E 20 on aux (reads nothing)}: neither starts
     * before R (outside, 5 us alpha + 1000 B / 1 GB/s = 6 us after the send at 200) arrived. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 q = ssim_graph_program(g, 1, "q");
    guint32 w = t_compute(g, 0, "compute", 200, NODEPS);
    t_p2p(g, SSIM_OP_SEND, 0, "pp", 1, 1000, DEPS(w));
    guint32 r = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 1000, NODEPS);
    guint32 b = t_compute(g, 1, "compute", 100, DEPS(r));
    guint32 e = t_compute(g, 1, "aux", 20, NODEPS);
    cr_assert(ssim_graph_set_program(g, b, q) && ssim_graph_set_program(g, e, q));
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    p.alpha = 5000;
    p.link_bw = 1e9;
    SsimCostModel model = ssim_simple_cost_model(&p);
    cr_assert(ssim_graph_finalize(g, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimTimeline) t = ssim_runtime_run(g, &model, NULL, &error);
    cr_assert_not_null(t, "%s", error ? error->message : "");
    ASSERT_OP(t, r, 0, 200, 6200);
    ASSERT_OP(t, b, 6200, 6200, 6300);
    ASSERT_OP(t, e, 6200, 6200, 6220);
}

Test(programs, finalize_refuses_a_program_that_waits_for_itself)
{
    /* X (outside) needs A's output, and B (in A's program) needs X: the program can never
     * start, although the op-level graph is acyclic. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 p = ssim_graph_program(g, 0, "step");
    guint32 a = t_compute(g, 0, "compute", 10, NODEPS);
    guint32 x = t_compute(g, 0, "side", 10, DEPS(a));
    guint32 b = t_compute(g, 0, "other", 10, DEPS(x));
    cr_assert(ssim_graph_set_program(g, a, p) && ssim_graph_set_program(g, b, p));
    g_autoptr(GError) error = NULL;
    cr_assert_not(ssim_graph_finalize(g, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_GRAPH));
    ASSERT_HAS(error->message, "program step can never start");
    ASSERT_HAS(error->message, "program step (rank 0) <- compute#1 <- program step (rank 0)");
    g_clear_error(&error);

    /* Taking B out of the program makes it legal again. */
    cr_assert(ssim_graph_set_program(g, b, SSIM_NONE));
    cr_assert(ssim_graph_finalize(g, &error), "%s", error ? error->message : "");

    /* A program after one that waits for it (through an op outside both). */
    g_autoptr(SsimGraph) h = ssim_graph_new();
    guint32 first = ssim_graph_program(h, 0, "first"), second = ssim_graph_program(h, 0, "second");
    guint32 s = t_compute(h, 0, "compute", 10, NODEPS);
    guint32 o = t_compute(h, 0, "side", 10, DEPS(s));
    guint32 f = t_compute(h, 0, "other", 10, DEPS(o));
    cr_assert(ssim_graph_set_program(h, s, second) && ssim_graph_set_program(h, f, first));
    cr_assert_not(ssim_graph_finalize(h, &error));
    ASSERT_HAS(error->message, "program first (rank 0) <- compute#1 <- program second (rank 0) <- "
                               "program first (rank 0)");
}

Test(programs, deadlocks_name_the_program)
{
    /* Rank 1's program q waits for a receive whose send rank 0 never posts; rank 0's send waits
     * for program p, whose all-reduce rank 2 never joins. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "dp", 2, 0u, 2u);
    guint32 pp = ssim_graph_program(g, 0, "p"), qq = ssim_graph_program(g, 1, "q");
    guint32 a = t_compute(g, 0, "compute", 10, NODEPS);
    guint32 ar = t_coll(g, 0, "dp", grp, SSIM_COLL_ALLREDUCE, 64, DEPS(a));
    t_p2p(g, SSIM_OP_SEND, 0, "pp", 2, 64, DEPS(a));
    guint32 r = t_p2p(g, SSIM_OP_RECV, 1, "pp", 0, 64, NODEPS);
    guint32 b = t_compute(g, 1, "compute", 10, DEPS(r));
    t_compute(g, 2, "compute", 10, NODEPS);
    t_p2p(g, SSIM_OP_RECV, 2, "pp", 0, 64, NODEPS);
    cr_assert(ssim_graph_set_program(g, a, pp) && ssim_graph_set_program(g, ar, pp));
    cr_assert(ssim_graph_set_program(g, b, qq));
    cr_assert(ssim_graph_finalize(g, NULL));
    GError *error = NULL;
    cr_assert_null(ssim_runtime_run(g, NULL, NULL, &error));
    cr_assert(g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_DEADLOCK));
    ASSERT_HAS(error->message, "rank 0 stream pp: blocked on send#2, which waits for program p "
                               "(rank 0) to finish (1 of 2 ops done)");
    ASSERT_HAS(error->message, "rank 1 stream compute: blocked on compute#4: its program q has not "
                               "started; it waits for recv#3 (rank 1 stream pp)");
    ASSERT_HAS(error->message, "rank 1 stream pp: blocked on recv#3 from rank 0 (tag 0): rank 0 "
                               "never posts the matching send");
    g_error_free(error);
}

Test(programs, graph_file_keys_and_round_trip)
{
    /* Programs created in an order their ops do not show: "late" runs first. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 late = ssim_graph_program(g, 0, "late"), early = ssim_graph_program(g, 0, "early");
    guint32 e = t_compute(g, 0, "compute", 10, NODEPS);
    guint32 l = t_compute(g, 0, "aux", 30, NODEPS);
    cr_assert(ssim_graph_set_program(g, e, early) && ssim_graph_set_program(g, l, late));
    g_autoptr(SsimTimeline) t = run_ok(g);
    ASSERT_OP(t, l, 0, 0, 30);
    ASSERT_OP(t, e, 30, 30, 40);
    g_autoptr(GString) text = ssim_graphfile_write(g);
    ASSERT_HAS(text->str, "program 0 late early\n");
    ASSERT_HAS(text->str, "program=early");
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimGraph) back = ssim_graphfile_parse("back", text->str, -1, &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    g_autoptr(GString) again = ssim_graphfile_write(back);
    cr_assert_str_eq(text->str, again->str);
    g_autoptr(SsimTimeline) tb = ssim_runtime_run(back, NULL, NULL, &error);
    cr_assert_not_null(tb);
    for (guint32 i = 0; i < t->n_ops; i++)
        cr_assert_eq(t->end[i], tb->end[i]);

    /* Without a program line, first appearance decides. */
    const char *plain = "# shiftsim-graph v1\n"
                        "1 0 compute compute dur=10 program=early\n"
                        "2 0 aux compute dur=30 program=late\n";
    g_autoptr(SsimGraph) f = ssim_graphfile_parse("inline", plain, -1, &error);
    cr_assert_not_null(f, "%s", error ? error->message : "");
    g_autoptr(SsimTimeline) tf = ssim_runtime_run(f, NULL, NULL, &error);
    cr_assert(tf->end[0] == 10 && tf->start[1] == 10 && tf->makespan == 40);

    /* The example file round-trips too. */
    g_autoptr(SsimGraph) ex = load_example("alpa-cooldown.graph", &error);
    cr_assert_not_null(ex, "%s", error ? error->message : "");
    g_autoptr(GString) ex_text = ssim_graphfile_write(ex);
    g_autoptr(SsimGraph) ex_back = ssim_graphfile_parse("ex", ex_text->str, -1, &error);
    cr_assert_not_null(ex_back, "%s", error ? error->message : "");
    g_autoptr(GString) ex_again = ssim_graphfile_write(ex_back);
    cr_assert_str_eq(ex_text->str, ex_again->str);
}

Test(programs, graph_file_errors_name_line_and_field)
{
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"# shiftsim-graph v1\n1 0 c compute dur=1 program=a,b\n",
         "t:2: program: 'a,b' is not a valid program name"},
        {"# shiftsim-graph v1\nprogram 0 a b a\n", "t:2: program: program a of rank 0 is listed "
                                                   "twice"},
        {"# shiftsim-graph v1\nprogram x a\n", "t:2: program: 'x' is not a rank"},
        {"# shiftsim-graph v1\nprogram 0\n", "t:2: program: expected 'program RANK NAME...'"},
        {"# shiftsim-graph v1\n1 0 c compute dur=1 program=\n", "t:2: program: empty value"},
        {"# shiftsim-graph v1\n1 0 c compute dur=1 program=s\n2 0 d compute dur=1 deps=1\n"
         "3 0 e compute dur=1 deps=2 program=s\n",
         "t: compute#1 (rank 0, stream c): program s can never start"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        GError *error = NULL;
        cr_assert_null(ssim_graphfile_parse("t", bad[i].text, -1, &error), "case %zu parsed", i);
        cr_assert(g_str_has_prefix(error->message, bad[i].message), "case %zu: '%s' vs '%s'", i,
                  error->message, bad[i].message);
        g_error_free(error);
    }
}

/* A communication model that takes 100 ns per run of any match and counts its starts. */
typedef struct {
    SsimEngine *engine;
    SsimRun *run;
    guint type, started;
} SlowNet;

static void slow_done(SsimEngine *e, guint64 a, guint64 b, gpointer user)
{
    (void)e, (void)b;
    SlowNet *f = user;
    ssim_run_finish_match(f->run, (guint32)a);
}

static gboolean slow_attach(gpointer data, SsimEngine *engine, SsimRun *run, const SsimGraph *g,
                            GError **error)
{
    (void)g, (void)error;
    SlowNet *f = data;
    f->engine = engine;
    f->run = run;
    f->type = ssim_engine_register(engine, slow_done, f);
    return TRUE;
}

static SsimTime slow_start(gpointer data, SsimRun *run, guint32 match)
{
    (void)run;
    SlowNet *f = data;
    f->started++;
    ssim_engine_schedule(f->engine, ssim_engine_now(f->engine) + 100, f->type, match, 0);
    return -1;
}

Test(programs, communication_repeats_back_to_back)
{
    /* compute 1000 -> all-reduce of 3000 B over 3 ranks -> compute 10; the simple model with
     * alpha 1 us and 1 GB/s prices the all-reduce at 4 us + 4/3 * 3 us = 8 us. */
    g_autoptr(SsimGraph) g = ssim_graph_new();
    guint32 grp = t_group(g, "tp", 3, 0u, 1u, 2u);
    guint32 ar[3], after = SSIM_NONE, barrier;
    for (guint32 r = 0; r < 3; r++) {
        guint32 c = t_compute(g, r, "compute", 1000, NODEPS);
        ar[r] = t_coll(g, r, "comm", grp, SSIM_COLL_ALLREDUCE, 3000, DEPS(c));
        guint32 z = t_compute(g, r, "compute", 10, DEPS(ar[r]));
        if (r == 0)
            after = z;
    }
    SsimOpSpec bs = SSIM_OP_SPEC_INIT;
    bs.kind = SSIM_OP_BARRIER;
    bs.group = grp;
    bs.stream = ssim_graph_stream(g, 0, "host");
    barrier = ssim_graph_add_op(g, &bs, DEPS(after));
    for (guint32 r = 1; r < 3; r++) {
        bs.stream = ssim_graph_stream(g, r, "host");
        ssim_graph_add_op(g, &bs, NODEPS);
    }
    cr_assert(ssim_graph_finalize(g, NULL));
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    p.alpha = 1000;
    p.link_bw = 1e9;
    SsimCostModel model = ssim_simple_cost_model(&p);
    SsimRunConfig cfg = SSIM_RUN_CONFIG_INIT;
    cfg.cost = &model;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimTimeline) once = ssim_runtime_run_config(g, &cfg, &error);
    cfg.comm_repeat = 1;
    g_autoptr(SsimTimeline) one = ssim_runtime_run_config(g, &cfg, &error);
    cfg.comm_repeat = 3;
    g_autoptr(SsimTimeline) three = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert(once && one && three, "%s", error ? error->message : "");
    cr_assert_eq(once->end[ar[0]], 9000);
    /* Repeat 1 changes no figure; repeat 3 runs the all-reduce three times, the barrier once
     * (2 ceil(log2 3) alpha = 4 us). */
    g_autoptr(GString) c1 = ssim_report_timeline_csv(g, once);
    g_autoptr(GString) c2 = ssim_report_timeline_csv(g, one);
    cr_assert_str_eq(c1->str, c2->str);
    cr_assert_eq(once->events, one->events);
    for (guint32 r = 0; r < 3; r++)
        cr_assert_eq(three->end[ar[r]], 1000 + 3 * 8000);
    cr_assert_eq(three->end[barrier] - three->start[barrier], 4000);
    cr_assert_eq(three->makespan, once->makespan + 2 * 8000);

    /* A communication model is started again for each run: 3 x 100 ns. */
    SlowNet f = {0};
    SsimCommModel net = {.data = &f, .attach = slow_attach, .start = slow_start};
    cfg.comm = &net;
    g_autoptr(SsimTimeline) modelled = ssim_runtime_run_config(g, &cfg, &error);
    cr_assert_not_null(modelled, "%s", error ? error->message : "");
    cr_assert_eq(f.started, 3);
    cr_assert_eq(modelled->end[ar[0]], 1000 + 300);

    cfg.comm_repeat = SSIM_COMM_REPEAT_MAX + 1;
    cr_assert_null(ssim_runtime_run_config(g, &cfg, &error));
    ASSERT_HAS(error->message, "communication repeat count 1001 is out of range (1 to 1000)");
}
