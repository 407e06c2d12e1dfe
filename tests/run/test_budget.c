/*
 * The op budget (include/shiftsim/budget.h): the estimate must bound real lowerings from above,
 * and not by so much that reasonable configurations are refused (within 8x here), over
 * schedules, recompute modes, TP styles and both rank modes; ssim_budget_check() refuses past the
 * limit with the estimate's factors in the message.
 */
#include <criterion/criterion.h>
#include <shiftsim/budget.h>
#include <shiftsim/lower.h>
#include <shiftsim/schedule.h>

#include <string.h>

static void check_bound(const char *spec, gboolean exact)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    model->layers = 8;
    SsimParallel par;
    ssim_parallel_init(&par);
    GError *error = NULL;
    cr_assert(ssim_parallel_parse(&par, spec, &error), "%s: %s", spec, error ? error->message : "");
    SsimScheduleKind kind;
    cr_assert(ssim_schedule_kind_from_name(par.schedule, &kind));
    g_autoptr(SsimSchedule) sched = ssim_schedule_new(kind, par.pp, par.virtual_stages,
                                                      ssim_parallel_n_microbatches(&par), &error);
    cr_assert_not_null(sched, "%s: %s", spec, error ? error->message : "");
    SsimLowerOptions opts = SSIM_LOWER_OPTIONS_INIT;
    opts.exact = exact;
    g_autoptr(SsimLowered) l = ssim_lower(model, &par, sched, &opts, &error);
    cr_assert_not_null(l, "%s: %s", spec, error ? error->message : "");
    double real = ssim_graph_n_ops(ssim_lowered_graph(l));
    SsimOpEstimate est;
    ssim_budget_estimate(model, &par, exact, &est);
    cr_assert(est.ops >= real && est.ops <= 8 * real, "%s%s: estimate %.0f, lowering %.0f ops",
              spec, exact ? " (exact)" : "", est.ops, real);
}

Test(budget, estimate_bounds_the_lowering)
{
    const char *specs[] = {
        "dp=1,tp=1,pp=1,mb=1,gbs=4",
        "dp=2,tp=2,pp=2,mb=1,gbs=16",
        "dp=1,tp=4,pp=4,mb=2,gbs=32,recompute=full",
        "dp=1,tp=2,pp=2,mb=1,gbs=8,schedule=gpipe,recompute=selective",
        "dp=2,tp=2,pp=2,mb=1,gbs=16,schedule=interleaved,v=2,tp_comm=rs-ag,sp=on",
        "dp=4,tp=1,pp=1,mb=1,gbs=4,zero=1,bucket=1MB",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
        check_bound(specs[i], FALSE);
        check_bound(specs[i], TRUE);
    }
}

Test(budget, check_refuses_past_the_limit)
{
    g_autoptr(SsimModel) model = ssim_model_default();
    SsimParallel par;
    ssim_parallel_init(&par);
    cr_assert(ssim_parallel_parse(&par, "dp=1,tp=1,pp=1,mb=1,gbs=100", NULL));
    SsimOpEstimate est;
    ssim_budget_estimate(model, &par, FALSE, &est);
    cr_assert_eq(est.microbatches, 100);
    cr_assert_eq(est.ranks, 1);
    cr_assert(ssim_budget_check(model, &par, FALSE, 0, NULL));
    cr_assert(ssim_budget_check(model, &par, FALSE, (guint64)est.ops, NULL));
    GError *error = NULL;
    cr_assert_not(ssim_budget_check(model, &par, FALSE, (guint64)est.ops - 1, &error));
    cr_assert(strstr(error->message, "x 100 microbatches") != NULL, "%s", error->message);
    g_clear_error(&error);
    par.global_batch = 2000000;
    cr_assert_not(ssim_budget_check(model, &par, FALSE, G_MAXUINT64, &error));
    cr_assert(strstr(error->message, "2000000 microbatches") != NULL, "%s", error->message);
    g_clear_error(&error);
}
