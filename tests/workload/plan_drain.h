/*
 * A hand-built plan shared by the plan and placement tests: rank 1 computes C (3 us) and sends
 * to rank 0, which computes the weight gradient A (1 us), waits for the transfer (the drain),
 * runs D (0.5 us) and the optimizer (0.5 us).  The gradient reduction R (1.5 us) needs A and is
 * needed by the optimizer.  As lowered, R is issued after D, the last backward kernel (the
 * baseline's point), unless `r_before_producer` issues it after Z, before its producer (a
 * lowering bug the setters cannot see: the dependency is recorded after the point).
 */
#pragma once

#include <criterion/criterion.h>

#include <shiftsim/opclass.h>
#include <shiftsim/place.h>

typedef struct {
    SsimPlan *plan;
    guint32 z, a, d, opt, c, send, recv, r;
} Drain;

static inline guint32 t_plan_kernel(SsimPlan *p, guint32 rank, const char *name, SsimTime dur,
                                    guint8 cls)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COMPUTE;
    s.stream = ssim_plan_stream(p, rank, "compute");
    s.name = name;
    s.duration = dur;
    return ssim_plan_add(p, &s, rank, cls, NULL, 0);
}

/* Asserts that one of the plan's setters accepted. */
static inline void t_plan_ok(gboolean ok, GError *error)
{
    cr_assert(ok, "%s", error ? error->message : "");
}

static inline void drain_build_at(Drain *d, gboolean r_before_producer)
{
    GError *error = NULL;
    SsimPlan *p = d->plan = ssim_plan_new();
    guint32 g0 = ssim_plan_add_group(p, "dp.0", (guint32[]){0}, 1, NULL);
    d->z = t_plan_kernel(p, 0, "z.fwd", 0, SSIM_OPCLASS_FWD);
    d->a = t_plan_kernel(p, 0, "ffn_up.wgrad", 1000, SSIM_OPCLASS_BWD);
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.coll = SSIM_COLL_ALLREDUCE;
    s.stream = ssim_plan_stream(p, 0, "dp");
    s.group = g0;
    s.name = "dp.allreduce";
    s.duration = 1500;
    s.bytes = 1000;
    d->r = ssim_plan_add(p, &s, 0, SSIM_OPCLASS_DP, NULL, 0);
    t_plan_ok(ssim_plan_mark_gradient(p, d->r, 1, &error), error);
    SsimOpSpec rv = SSIM_OP_SPEC_INIT;
    rv.kind = SSIM_OP_RECV;
    rv.stream = ssim_plan_stream(p, 0, "pp.recv");
    rv.peer = 1;
    rv.tag = 7;
    rv.duration = 100;
    rv.name = "pp.recv";
    d->recv = ssim_plan_add(p, &rv, 0, SSIM_OPCLASS_PP, NULL, 0);
    d->d = t_plan_kernel(p, 0, "norm.bwd", 500, SSIM_OPCLASS_BWD);
    d->opt = t_plan_kernel(p, 0, "optimizer", 500, SSIM_OPCLASS_OPTIMIZER);
    d->c = t_plan_kernel(p, 1, "qkv.dgrad", 3000, SSIM_OPCLASS_BWD);
    SsimOpSpec sd = rv;
    sd.kind = SSIM_OP_SEND;
    sd.stream = ssim_plan_stream(p, 1, "pp.send");
    sd.peer = 0;
    sd.name = "pp.send";
    d->send = ssim_plan_add(p, &sd, 1, SSIM_OPCLASS_PP, NULL, 0);

    t_plan_ok(ssim_plan_set_lowered_issue(p, d->r, r_before_producer ? d->z : d->d, &error), error);
    t_plan_ok(ssim_plan_set_lowered_wait(p, d->r, d->opt, &error), error);
    t_plan_ok(ssim_plan_set_lowered_wait(p, d->recv, d->d, &error), error);
    t_plan_ok(ssim_plan_set_lowered_issue(p, d->send, d->c, &error), error);
    ssim_plan_data(p, d->a, d->r);
    ssim_plan_data(p, d->r, d->opt);
    ssim_plan_data(p, d->recv, d->d);
    ssim_plan_data(p, d->c, d->send);
    ssim_plan_data(p, d->c, d->d); /* across ranks, through the transfer */
}

static inline void drain_build(Drain *d)
{
    drain_build_at(d, FALSE);
}
