/* Helper of the tests that lower a split by hand (tests/common/lowertest.h). */
#include "tests/common/lowertest.h"

#include <criterion/criterion.h>

#include <string.h>

SsimLowered *test_lower(const SsimModel *model, const SsimParallel *par,
                        const SsimLowerOptions *options)
{
    GError *error = NULL;
    cr_assert(ssim_parallel_validate(par, model, NULL, &error), "%s", error ? error->message : "");
    SsimScheduleKind kind;
    cr_assert(ssim_schedule_kind_from_name(par->schedule, &kind), "schedule %s", par->schedule);
    g_autoptr(SsimSchedule) s = ssim_schedule_new(kind, par->pp, par->virtual_stages,
                                                  ssim_parallel_n_microbatches(par), &error);
    cr_assert_not_null(s, "%s", error ? error->message : "");
    SsimLowered *l = ssim_lower(model, par, s, options, &error);
    cr_assert_not_null(l, "%s", error ? error->message : "");
    return l;
}

TestOps test_ops_named(const SsimLowered *l, guint rank, const char *name)
{
    const SsimGraph *g = ssim_lowered_graph(l);
    TestOps o = {0};
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *op = ssim_graph_op(g, i);
        if (op->rank != rank || op->name == SSIM_NONE ||
            strcmp(ssim_graph_string(g, op->name), name) != 0)
            continue;
        o.n++;
        o.bytes += op->bytes;
        o.flops += op->flops;
    }
    return o;
}
