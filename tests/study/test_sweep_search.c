/*
 * A sweep at planners' scale (src/study/sweep-run.c, src/run/bound.c, src/run/steady.c): the
 * lower bound, pruning by it, the steady-state replay, and ZeRO in the space.
 *
 * Oracles: the unpruned, fully simulated sweep of the same space.  The bound must not exceed the
 * simulated step of any configuration of sweeps over every schedule and placement, recompute mode
 * and ZeRO stage; a pruned sweep must rank the same K first with the same figures, and keep every
 * row it simulates byte for byte; its CSV must not depend on the threads; the steady-state replay
 * must give every extrapolated configuration its fully simulated step to within 0.1%, and the same
 * ten configurations first, exactly.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/spectest.h"

#include <shiftsim/bound.h>
#include <shiftsim/steady.h>
#include <shiftsim/sweep.h>

#include "src/app/verbs.h"

#include <math.h>
#include <string.h>

static SsimSweep *run(const SsimModel *m, const SsimCluster *c, const SsimSweepSpec *spec,
                      guint threads)
{
    g_autoptr(GError) error = NULL;
    SsimSweep *s = ssim_sweep_new(m, c, spec, &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    ssim_sweep_run(s, 0, 1, threads, NULL, NULL, 100);
    return s;
}

/* Every simulated configuration's step is at least its bound. */
static guint check_bounds(const SsimSweep *s, const SsimModel *m, double *mean_ratio)
{
    guint ok = 0;
    double sum = 0;
    for (guint i = 0; i < ssim_sweep_n_configs(s); i++) {
        const SsimSweepRow *r = ssim_sweep_row(s, i);
        if (r->status != SSIM_SWEEP_OK)
            continue;
        SsimStepBound b;
        ssim_step_lower_bound(m, ssim_sweep_cluster(s), &r->par, &b);
        cr_assert_leq(
            b.step, r->result.step_time,
            "config %u (%s, %s, tp %u pp %u v %u mb %u, %s, zero %u): bound %" G_GINT64_FORMAT
            " > step %" G_GINT64_FORMAT,
            i, r->par.schedule, r->par.placement, r->par.tp, r->par.pp, r->par.virtual_stages,
            r->par.microbatch, ssim_recompute_name(r->par.recompute), r->par.zero_stage, b.step,
            r->result.step_time);
        cr_assert_gt(b.step, 0);
        if (r->bound)
            cr_assert_eq(r->bound, b.step, "the row's bound is the bound");
        sum += (double)b.step / (double)r->result.step_time;
        ok++;
    }
    if (mean_ratio)
        *mean_ratio = ok ? sum / ok : 0;
    return ok;
}

Test(sweep_search, bound_never_exceeds_the_step)
{
    /* GPT-J 6B on 16 H100s: every schedule and placement, every recompute mode, ZeRO 0 and 1. */
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 16);
    test_sweep_names(&spec.schedules, "1f1b,interleaved,gpipe,xla");
    test_sweep_names(&spec.placements, "baseline,megatron,commshift");
    cr_assert(ssim_sweep_recompute_parse(&spec.recompute, "none,selective,full", NULL));
    cr_assert(ssim_sweep_zero_parse(&spec.zero, "0,1", NULL));
    test_sweep_ints(&spec.tp, "2,4");
    test_sweep_ints(&spec.pp, "1,2,4");
    test_sweep_ints(&spec.microbatch, "1");
    g_autoptr(SsimSweep) s = run(m, c, &spec, 2);
    double ratio;
    guint ok = check_bounds(s, m, &ratio);
    cr_assert_geq(ok, 100, "only %u configurations simulated", ok);
    /* auto, which searches placements of its own. */
    test_sweep_names(&spec.placements, "auto");
    test_sweep_ints(&spec.tp, "4");
    cr_assert(ssim_sweep_recompute_parse(&spec.recompute, "auto", NULL));
    cr_assert(ssim_sweep_zero_parse(&spec.zero, "0", NULL));
    g_autoptr(SsimSweep) a = run(m, c, &spec, 2);
    cr_assert_geq(check_bounds(a, m, NULL), 5);
    /* Tight enough to prune: on average within a third of the step. */
    cr_assert_gt(ratio, 0.66, "bound / step %.3f", ratio);

    /* Exact mode, interference and a deeper pipeline: Megatron GPT 1.7B on 8 GPUs. */
    g_autoptr(SsimModel) m2 = test_model("megatron-gpt-1.7b");
    SsimSweepSpec s2;
    ssim_sweep_spec_init(&s2, c, 8);
    test_sweep_names(&s2.schedules, "1f1b,interleaved,gpipe,xla");
    test_sweep_names(&s2.placements, "baseline,commshift");
    test_sweep_ints(&s2.vstages, "1,2,3");
    s2.exact = TRUE;
    g_autoptr(SsimSweep) x = run(m2, c, &s2, 2);
    cr_assert_geq(check_bounds(x, m2, NULL), 20);

    /* A host-bound cluster (the host's launches, runtime.h): the bound is then the host's. */
    g_autoptr(SsimCluster) h = test_cluster("dgx-h100");
    h->kernel_floor = 400 * SSIM_US;
    SsimSweepSpec s3;
    ssim_sweep_spec_init(&s3, h, 8);
    test_sweep_names(&s3.schedules, "1f1b,interleaved,gpipe,xla");
    test_sweep_names(&s3.placements, "baseline,megatron,commshift");
    test_sweep_ints(&s3.vstages, "1,2");
    g_autoptr(SsimSweep) y = run(m2, h, &s3, 2);
    cr_assert_geq(check_bounds(y, m2, NULL), 20);
}

/* The rows of `a` and `b` with index `i`, as CSV lines. */
static char *csv_line(const GString *csv, guint index)
{
    g_autofree char *needle = g_strdup_printf("\n%u,", index);
    const char *p = strstr(csv->str, needle);
    cr_assert_not_null(p, "no row %u", index);
    p++;
    return g_strndup(p, strcspn(p, "\n"));
}

Test(sweep_search, pruning_keeps_the_top_k)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 32);
    test_sweep_names(&spec.schedules, "1f1b,interleaved,gpipe,xla");
    test_sweep_names(&spec.placements, "baseline,commshift");
    cr_assert(ssim_sweep_zero_parse(&spec.zero, "0,1", NULL));
    g_autoptr(SsimSweep) full = run(m, c, &spec, 2);
    g_autoptr(GArray) want = ssim_sweep_ranking(full);
    g_autoptr(GString) full_csv = ssim_sweep_csv(full);
    static const guint ks[] = {1, 5, 10};
    for (guint t = 0; t < G_N_ELEMENTS(ks); t++) {
        guint k = ks[t];
        SsimSweepSpec ps = spec;
        ps.prune_top = k;
        g_autoptr(SsimSweep) pr = run(m, c, &ps, t + 1);
        g_autoptr(GArray) got = ssim_sweep_ranking(pr);
        cr_assert_geq(got->len, k);
        for (guint i = 0; i < k; i++) {
            guint a = g_array_index(want, guint, i), b = g_array_index(got, guint, i);
            cr_assert_eq(a, b, "K = %u: rank %u is %u unpruned, %u pruned", k, i + 1, a, b);
        }
        /* Every simulated row as the full sweep has it; every pruned row was full of promise no
         * more: its bound exceeds the K-th best step, and so does its real step. */
        g_autoptr(GString) csv = ssim_sweep_csv(pr);
        SsimTime kth = ssim_sweep_row(full, g_array_index(want, guint, k - 1))->result.step_time;
        guint pruned = 0, simulated = 0;
        for (guint i = 0; i < ssim_sweep_n_configs(pr); i++) {
            const SsimSweepRow *r = ssim_sweep_row(pr, i);
            const SsimSweepRow *f = ssim_sweep_row(full, i);
            if (r->status == SSIM_SWEEP_PRUNED) {
                cr_assert_eq(f->status, SSIM_SWEEP_OK, "only simulable rows are pruned");
                cr_assert_gt(r->bound, kth);
                cr_assert_gt(f->result.step_time, kth);
                cr_assert_str_eq(r->reason, "bound");
                pruned++;
                continue;
            }
            g_autofree char *x = csv_line(csv, i), *y = csv_line(full_csv, i);
            cr_assert_str_eq(x, y, "row %u differs", i);
            simulated += r->status == SSIM_SWEEP_OK;
        }
        cr_assert_gt(pruned, 0, "K = %u pruned nothing", k);
        cr_assert_lt(simulated, want->len);
        check_bounds(pr, m, NULL);
    }
}

Test(sweep_search, pruned_csv_does_not_depend_on_threads)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 32);
    test_sweep_names(&spec.schedules, "1f1b,interleaved,xla");
    spec.prune_top = 3;
    g_autofree char *first = NULL;
    for (guint threads = 1; threads <= 4; threads++) {
        g_autoptr(SsimSweep) s = run(m, c, &spec, threads);
        g_autoptr(GString) csv = ssim_sweep_csv(s);
        cr_assert(strstr(csv->str, " prune=3\n"));
        if (!first)
            first = g_strdup(csv->str);
        else
            cr_assert_str_eq(csv->str, first, "%u threads", threads);
    }
}

/* A GPT-J sweep of many microbatches per pipeline (so the probes are worth it) over
 * `schedules`, run in full and with the steady-state replay. */
static void full_and_steady(const SsimModel *m, const SsimCluster *c, const char *schedules,
                            const char *microbatches, SsimSweep **full, SsimSweep **steady)
{
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 32);
    spec.base.global_batch = 512;
    test_sweep_names(&spec.schedules, schedules);
    test_sweep_names(&spec.placements, "baseline,commshift");
    test_sweep_ints(&spec.tp, "4,8");
    test_sweep_ints(&spec.pp, "2,4");
    test_sweep_ints(&spec.microbatch, microbatches);
    *full = run(m, c, &spec, 2);
    SsimSweepSpec ss = spec;
    ss.steady = TRUE;
    *steady = run(m, c, &ss, 2);
}

/* The relative error of a steady-state row's step against the full simulation's. */
static double step_error(const SsimSweepRow *r, const SsimSweepRow *f)
{
    return fabs((double)(r->result.step_time - f->result.step_time)) / (double)f->result.step_time;
}

Test(sweep_search, steady_state_is_close_and_the_top_exact)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    /* The GPUs alone: the host's launches are the next test's. */
    c->kernel_floor = 0;
    c->microbatch_floor = 0;
    g_autoptr(SsimSweep) full = NULL;
    g_autoptr(SsimSweep) st = NULL;
    full_and_steady(m, c, "1f1b,interleaved,gpipe,xla", "2", &full, &st);
    guint extrapolated = 0;
    double worst = 0;
    for (guint i = 0; i < ssim_sweep_n_configs(st); i++) {
        const SsimSweepRow *r = ssim_sweep_row(st, i), *f = ssim_sweep_row(full, i);
        cr_assert_eq(r->status, f->status, "row %u", i);
        if (r->status != SSIM_SWEEP_OK)
            continue;
        /* An approximation (steady.h): within 0.1% of the step, a little more for the rest. */
        double err = step_error(r, f);
        cr_assert_lt(err, 1e-3, "row %u: the step is %.4f%% off", i, 100 * err);
        worst = MAX(worst, err);
        cr_assert_eq(r->result.n_ops, f->result.n_ops, "row %u", i);
        cr_assert(fabs(r->result.bubble - f->result.bubble) < 1e-3, "row %u: bubble %g vs %g", i,
                  r->result.bubble, f->result.bubble);
        for (guint k = 0; k < SSIM_COMM_N; k++)
            cr_assert(llabs(r->result.exposed[k] - f->result.exposed[k]) <=
                          f->result.step_time / 1000,
                      "row %u: exposed %u", i, k);
        if (!r->steady) /* simulated in full: exact */
            cr_assert_eq(r->result.step_time, f->result.step_time, "row %u", i);
        extrapolated += r->steady;
    }
    cr_log_info("steady state on the GPUs alone: worst step error %.4f%% over %u extrapolated rows",
                100 * worst, extrapolated);
    cr_assert_geq(extrapolated, 5, "only %u rows extrapolated", extrapolated);
    /* The best ten were simulated again in full: every figure is the full sweep's. */
    g_autoptr(GArray) rank = ssim_sweep_ranking(st);
    g_autoptr(GArray) want = ssim_sweep_ranking(full);
    cr_assert_gt(rank->len, 10);
    for (guint i = 0; i < 10; i++) {
        guint r = g_array_index(rank, guint, i);
        cr_assert_eq(r, g_array_index(want, guint, i), "rank %u", i + 1);
        const SsimSweepRow *a = ssim_sweep_row(st, r), *b = ssim_sweep_row(full, r);
        cr_assert_eq(a->result.step_time, b->result.step_time);
        cr_assert_not(a->steady);
        cr_assert_eq(a->result.bubble, b->result.bubble);
        cr_assert_eq(memcmp(a->result.exposed, b->result.exposed, sizeof a->result.exposed), 0);
    }
}

/* With an eager host (the stock dgx-a100's measured launches, under the Megatron-LM schedules)
 * the host's waits after each transfer shift a period now and then, and most configurations fall
 * back to a full simulation (their probes are not affine); over microbatches of 1, 2 and 4 some
 * extrapolate, and their step stays within 0.5% (steady.h); the best ten, simulated again in
 * full, are the full sweep's. */
Test(sweep_search, steady_state_with_a_host)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    c->kernel_floor = 55300; /* ns */
    c->microbatch_floor = 650 * SSIM_US;
    g_autoptr(SsimSweep) full = NULL;
    g_autoptr(SsimSweep) st = NULL;
    full_and_steady(m, c, "1f1b,interleaved,gpipe", "1,2,4", &full, &st);
    guint extrapolated = 0;
    double worst = 0;
    for (guint i = 0; i < ssim_sweep_n_configs(st); i++) {
        const SsimSweepRow *r = ssim_sweep_row(st, i), *f = ssim_sweep_row(full, i);
        cr_assert_eq(r->status, f->status, "row %u", i);
        if (r->status != SSIM_SWEEP_OK)
            continue;
        cr_assert_gt(f->result.host_wait, 0, "row %u: the host shows", i);
        worst = MAX(worst, step_error(r, f));
        extrapolated += r->steady;
    }
    cr_log_info("steady state with a host: worst step error %.4f%% over %u extrapolated rows",
                100 * worst, extrapolated);
    cr_assert_lt(worst, 5e-3, "the step is %.4f%% off", 100 * worst);
    cr_assert_geq(extrapolated, 2, "only %u rows extrapolated", extrapolated);
    g_autoptr(GArray) rank = ssim_sweep_ranking(st);
    g_autoptr(GArray) want = ssim_sweep_ranking(full);
    for (guint i = 0; i < MIN(10u, want->len); i++)
        cr_assert_eq(g_array_index(rank, guint, i), g_array_index(want, guint, i), "rank %u",
                     i + 1);
}

Test(sweep_search, zero_is_swept_between_recompute_and_placement)
{
    g_autoptr(SsimModel) m = test_model("gpt-j-6b");
    g_autoptr(SsimCluster) c = test_cluster("dgx-h100");
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, c, 16); /* dp 2: ZeRO-1 has something to shard */
    test_sweep_ints(&spec.tp, "8");
    test_sweep_ints(&spec.pp, "1");
    test_sweep_ints(&spec.vstages, "1");
    test_sweep_ints(&spec.microbatch, "1");
    test_sweep_names(&spec.schedules, "1f1b");
    test_sweep_names(&spec.placements, "baseline,commshift");
    cr_assert(ssim_sweep_zero_parse(&spec.zero, "0,1", NULL));
    cr_assert_not(ssim_sweep_zero_parse(&spec.zero, "4", NULL));
    g_autoptr(SsimSweep) s = ssim_sweep_new(m, c, &spec, NULL);
    cr_assert_eq(ssim_sweep_n_configs(s), 4);
    const char *pl[] = {"baseline", "commshift", "baseline", "commshift"};
    for (guint i = 0; i < 4; i++) {
        cr_assert_eq(ssim_sweep_row(s, i)->par.zero_stage, i / 2);
        cr_assert_str_eq(ssim_sweep_row(s, i)->par.placement, pl[i]);
    }
    ssim_sweep_run(s, 0, 1, 2, NULL, NULL, 100);
    /* ZeRO-1 shards the optimizer state: less memory. */
    cr_assert_lt(ssim_sweep_row(s, 2)->result.memory.total,
                 ssim_sweep_row(s, 0)->result.memory.total);
    g_autoptr(GString) csv = ssim_sweep_csv(s);
    cr_assert(strstr(csv->str, " zero=0,1\n"));
}

static void quiet(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

Test(sweep_search, prune_needs_one_process, .init = quiet)
{
    char *argv[] = {"sweep", "--gpus", "8", "--prune", "--shard", "0/2", "-q", NULL};
    cr_assert_eq(ssim_verb_sweep(7, argv), 2);
    char *bad_zero[] = {"sweep", "--gpus", "8", "--zero", "0,4", "-q", NULL};
    cr_assert_eq(ssim_verb_sweep(6, bad_zero), 2);
}
