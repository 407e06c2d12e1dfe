/*
 * The emitter: step lists and transfers become plan ops on one rank (lower-private.h's Emit).
 *
 * A rank's ops are added in issue order, which is each stream's order; explicit dependencies
 * only point at earlier ops of the same rank (across ranks, the collective and send/receive
 * matching is the only coupling), so the lowering's own placement is acyclic by construction.
 * The emitter records data dependencies and, for every communication op, the lowering's issue
 * and wait points, which are Megatron-LM's placement (include/shiftsim/lower.h, "Placement").
 *
 * Invariants the emitter keeps: every kernel waits for the ops in `pending` (a receive, a
 * blocking collective, the DP reductions before the optimizer); a communication op waits for the
 * last kernel issued on its rank and for whatever that kernel would have waited for; a
 * collective with overlap k stays out of `pending` until k more kernels have been issued.
 * Gradient pieces wait in `open` until their bucket closes (lower_emit_flush_dp), which gives
 * them their issue point; they are waited for by the optimizer.
 *
 * This is the only file of the lowering that writes the plan, and it writes points and roles
 * only through the plan's checked setters (plan.h).  A setter's refusal here is a bug in the
 * lowering, not a property of the input (which was validated before), so must() stops with the
 * plan's message rather than turning it into a configuration error.
 */
#include "src/workload/lower-private.h"

#include <string.h>

/* Stops on a refusal of one of the plan's setters (see the top); `accepted` is its result. */
static void must(Emit *e, gboolean accepted)
{
    if (G_UNLIKELY(!accepted)) {
        g_assert_no_error(e->bug);
        g_assert_not_reached();
    }
}

/* A collective on `group` and `stream` is issued: returns the collective it must follow, the one
 * this rank issued last on the group, where that one ran on another stream (SSIM_NONE: none, or
 * the stream's own order holds), and makes `idx` the group's last.  NCCL launches each operation
 * of a communicator after the one before it, whatever the caller's stream (its internal device
 * stream), so two collectives of one group never run at once: FSDP's all-gather of the next
 * unit and reduce-scatter of the last share the dp group and take turns on its links. */
static guint32 group_turn(Emit *e, guint32 group, guint32 stream, guint32 idx)
{
    for (guint i = 0; i < e->group_last->len; i++) {
        GroupLast *g = &g_array_index(e->group_last, GroupLast, i);
        if (g->group == group) {
            guint32 prev = g->stream != stream ? g->op : SSIM_NONE;
            g->op = idx;
            g->stream = stream;
            return prev;
        }
    }
    GroupLast g = {group, idx, stream};
    g_array_append_val(e->group_last, g);
    return SSIM_NONE;
}

/* Adds a plan op of this rank, in the current program unless it is a pipeline transfer (those run
 * between programs); a communication op is issued after `issue` (the lowering's placement) and
 * `order` lists earlier communication it must follow, to which a collective adds the last one
 * of its group on another stream (group_turn). */
static guint32 add(Emit *e, const SsimOpSpec *spec, SsimOpClass cls, guint32 issue,
                   const guint32 *order, guint n_order)
{
    SsimOpSpec sp = *spec;
    sp.cls = ssim_opclass_name(cls);
    guint32 turn = SSIM_NONE;
    g_autofree guint32 *merged = NULL;
    if (spec->kind == SSIM_OP_COLLECTIVE && spec->group != SSIM_NONE)
        turn = group_turn(e, spec->group, spec->stream, ssim_plan_n_ops(e->plan));
    if (turn != SSIM_NONE && n_order == 0) { /* every collective but the lock-step permute */
        order = &turn;
        n_order = 1;
    } else if (turn != SSIM_NONE) {
        merged = g_new(guint32, n_order + 1);
        memcpy(merged, order, n_order * sizeof *order);
        merged[n_order++] = turn;
        order = merged;
    }
    guint32 idx = ssim_plan_add(e->plan, &sp, e->rank, (guint8)cls, order, n_order);
    if (e->program != SSIM_NONE && spec->kind != SSIM_OP_SEND && spec->kind != SSIM_OP_RECV)
        must(e, ssim_plan_set_lowered_program(e->plan, idx, e->program, &e->bug));
    if (spec->kind != SSIM_OP_COMPUTE && issue != SSIM_NONE)
        must(e, ssim_plan_set_lowered_issue(e->plan, idx, issue, &e->bug));
    return idx;
}

static guint32 stream(Emit *e, guint32 *cache, const char *name)
{
    if (*cache == SSIM_NONE)
        *cache = ssim_plan_stream(e->plan, e->rank, name);
    return *cache;
}

/* A collective of `bytes` over `group`, named `name`, on the stream `st_name` (cache `st`). */
static SsimOpSpec coll_spec(Emit *e, SsimCollKind coll, const char *name, guint32 group,
                            guint64 bytes, guint32 *st, const char *st_name)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = SSIM_OP_COLLECTIVE;
    spec.coll = coll;
    spec.stream = stream(e, st, st_name);
    spec.group = group;
    spec.name = name;
    spec.bytes = bytes;
    return spec;
}

/* The bytes a dp reduction carries for `bytes` of gradients counted in the model's dtype (the
 * step lists' count): 4 a gradient under grad_fp32. */
static guint64 reduced_bytes(const Emit *e, guint64 bytes)
{
    return bytes / ssim_dtype_size(e->model->dtype) * lower_grad_elem_bytes(e);
}

void lower_emit_begin_rank(Emit *e, guint32 rank)
{
    e->rank = rank;
    guint32 global = g_array_index(e->L->global_of, guint32, rank);
    e->coord = ssim_parallel_coord(e->par, global);
    e->stage = e->coord.pp;
    e->st_compute = e->st_tp = e->st_dp = e->st_gather = e->st_pp = SSIM_NONE;
    e->st_pp_sf = e->st_pp_rf = e->st_pp_sb = e->st_pp_rb = e->st_cp = SSIM_NONE;
    e->tp_group = e->dp_group = e->pp_group = e->emb_group = e->mp_group = SSIM_NONE;
    e->cp_group = e->amax_group = e->st_amax = SSIM_NONE;
    e->last = SSIM_NONE;
    e->bucket = 0;
    e->collect_grads = FALSE;
    e->program = SSIM_NONE;
    e->gathered = SSIM_NONE;
    e->prefetch = 0;
    e->head_deferred = 0;
    g_array_set_size(e->group_last, 0);
    g_array_set_size(e->open, 0);
    g_array_set_size(e->pending, 0);
    g_array_set_size(e->deferred, 0);
    g_array_set_size(e->dp_ops, 0);
    g_array_set_size(e->bwd_seen, 0);
    g_array_set_size(e->bwd_seen, e->par->virtual_stages);
}

static guint32 gather(Emit *e, guint64 bytes, guint32 issue);

static void kernel(Emit *e, const Step *st, SsimOpClass cls)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = SSIM_OP_COMPUTE;
    spec.stream = stream(e, &e->st_compute, "compute");
    spec.name = st->name;
    spec.flops = st->flops;
    spec.bytes = st->bytes;
    spec.duration = st->duration > 0 ? st->duration : -1;
    e->last = add(e, &spec, cls, SSIM_NONE, NULL, 0);
    /* This kernel is where the pending communication is waited for; it reads the result of all
     * of it but a lock-step permute of a slot whose successor receives nothing. */
    for (guint i = 0; i < e->pending->len; i++) {
        guint32 c = g_array_index(e->pending, guint32, i);
        const SsimPlanOp *o = ssim_plan_op(e->plan, c);
        if (o->wait0 == SSIM_NONE)
            must(e, ssim_plan_set_lowered_wait(e->plan, c, e->last, &e->bug));
        if (!(o->flags & SSIM_PLAN_PERMUTE) || o->recv_peer != SSIM_NONE)
            ssim_plan_data(e->plan, c, e->last);
    }
    if (e->pending->len > 0)
        g_array_set_size(e->pending, 0);
    /* ZeRO-3: the unit this kernel begins has its weights; the next one's gather starts. */
    if (e->prefetch > 0) {
        e->gathered = gather(e, e->prefetch, e->last);
        e->prefetch = 0;
    }
    for (guint i = 0; i < e->deferred->len;) {
        Deferred *d = &g_array_index(e->deferred, Deferred, i);
        if (--d->left == 0) {
            g_array_append_val(e->pending, d->op);
            g_array_remove_index(e->deferred, i);
        } else {
            i++;
        }
    }
}

/* A communication op issued after the last kernel, reading its output and that of the
 * communication the kernel after it would have waited for. */
static guint32 comm(Emit *e, SsimOpSpec *spec, SsimOpClass cls)
{
    guint32 idx = add(e, spec, cls, e->last, NULL, 0);
    if (e->last != SSIM_NONE)
        ssim_plan_data(e->plan, e->last, idx);
    for (guint i = 0; i < e->pending->len; i++) {
        guint32 c = g_array_index(e->pending, guint32, i);
        const SsimPlanOp *o = ssim_plan_op(e->plan, c);
        if (!(o->flags & SSIM_PLAN_PERMUTE) || o->recv_peer != SSIM_NONE)
            ssim_plan_data(e->plan, c, idx);
    }
    return idx;
}

/* A TP collective, or a step of the CP ring, of step `st`: blocking, or waited for by the kernel
 * `st->overlap` kernels on. */
static void layer_coll(Emit *e, const Step *st)
{
    gboolean cp = st->kind == ST_CP;
    SsimOpSpec spec =
        cp ? coll_spec(e, SSIM_COLL_PERMUTE, st->name, e->cp_group, st->bytes, &e->st_cp, "cp")
           : coll_spec(e, (SsimCollKind)st->coll, st->name, e->tp_group, st->bytes, &e->st_tp,
                       "tp");
    guint32 idx = comm(e, &spec, cp ? SSIM_OPCLASS_CP : SSIM_OPCLASS_TP);
    if (st->overlap == 0) {
        g_array_set_size(e->pending, 0);
        g_array_append_val(e->pending, idx);
    } else {
        Deferred d = {idx, st->overlap};
        g_array_append_val(e->deferred, d);
    }
}

/* The gradient piece of the weight-gradient kernel just issued, of gradient site `site`: a
 * reduction of its bytes over dp, whose issue point is decided when its bucket is flushed. */
static void grad_piece(Emit *e, guint64 bytes, guint32 site)
{
    if (e->dp_group == SSIM_NONE)
        return;
    gboolean zero = e->par->zero_stage >= 1;
    SsimOpSpec spec = coll_spec(e, zero ? SSIM_COLL_REDUCESCATTER : SSIM_COLL_ALLREDUCE,
                                zero ? "dp.reducescatter" : "dp.allreduce", e->dp_group,
                                reduced_bytes(e, bytes), &e->st_dp, "dp");
    guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, SSIM_NONE, NULL, 0);
    must(e, ssim_plan_mark_gradient(e->plan, idx, site, &e->bug));
    ssim_plan_data(e->plan, e->last, idx);
    g_array_append_val(e->open, idx);
}

/* An all-gather over dp of `bytes` of weights on the gather stream, after `issue` (SSIM_NONE: as
 * soon as the stream is free); nothing waits for it yet.  ZeRO-3's every pass, or under ZeRO 1
 * and 2 with overlap_param_gather the step's one. */
static guint32 gather(Emit *e, guint64 bytes, guint32 issue)
{
    const char *name = e->par->zero_stage >= 3 ? "zero3.allgather" : "dp.param_gather";
    SsimOpSpec spec =
        coll_spec(e, SSIM_COLL_ALLGATHER, name, e->dp_group, bytes, &e->st_gather, "dp.gather");
    return add(e, &spec, SSIM_OPCLASS_DP, issue, NULL, 0);
}

guint32 lower_emit_param_gather(Emit *e, guint64 bytes)
{
    return gather(e, bytes, SSIM_NONE);
}

void lower_emit_gather(Emit *e, guint64 bytes, guint64 next, SsimOpClass cls)
{
    if (bytes == 0) /* not ZeRO-3, dp 1 (Units), or a unit this phase does not run */
        return;
    if (e->gathered == SSIM_NONE)
        e->gathered = gather(e, bytes, SSIM_NONE);
    g_array_append_val(e->pending, e->gathered);
    e->gathered = SSIM_NONE;
    e->prefetch = next;
    if (e->units.copies) {
        Step copy = {.kind = ST_KERNEL,
                     .name = g_intern_static_string("zero3.copy_out"),
                     .bytes = 2 * bytes};
        kernel(e, &copy, cls);
    }
}

void lower_emit_kept(Emit *e, guint64 next)
{
    e->prefetch = next;
}

void lower_emit_reduce_unit(Emit *e, guint64 bytes)
{
    if (bytes == 0) /* not ZeRO-2 or 3, or dp 1 (Units) */
        return;
    if (e->units.copies) { /* the gradients read, the reduce-scatter's input written */
        /* FSDP2's post-backward first makes the compute stream wait for the unit before's
         * reduce-scatter (its buffer is freed then), so at most one is in flight behind the
         * backward: until the step's end dp_ops holds only these reduce-scatters. */
        if (e->dp_ops->len > 0)
            g_array_append_val(e->pending, g_array_index(e->dp_ops, guint32, e->dp_ops->len - 1));
        Step copy = {.kind = ST_KERNEL,
                     .name = g_intern_static_string("zero.copy_in"),
                     .bytes = bytes + reduced_bytes(e, bytes)};
        kernel(e, &copy, SSIM_OPCLASS_BWD);
    }
    SsimOpSpec spec = coll_spec(e, SSIM_COLL_REDUCESCATTER, "dp.reducescatter", e->dp_group,
                                reduced_bytes(e, bytes), &e->st_dp, "dp");
    guint32 idx = comm(e, &spec, SSIM_OPCLASS_DP);
    g_array_append_val(e->dp_ops, idx);
}

void lower_emit_flush_dp(Emit *e)
{
    /* The pieces fuse into one reduction when built as lowered (same points). */
    for (guint i = 0; i < e->open->len; i++) {
        guint32 idx = g_array_index(e->open, guint32, i);
        must(e, ssim_plan_set_lowered_issue(e->plan, idx, e->last, &e->bug));
        g_array_append_val(e->dp_ops, idx);
    }
    g_array_set_size(e->open, 0);
    e->bucket = 0;
}

void lower_emit_steps(Emit *e, const GArray *steps, SsimOpClass cls, guint32 site)
{
    for (guint i = 0; i < steps->len; i++) {
        const Step *st = &g_array_index(steps, Step, i);
        if (st->kind != ST_KERNEL) {
            layer_coll(e, st);
            continue;
        }
        kernel(e, st, cls);
        if (e->collect_grads && st->grad_bytes > 0) {
            grad_piece(e, st->grad_bytes, site);
            e->bucket += st->grad_bytes;
            if (e->par->dp_bucket_bytes > 0 && e->bucket >= e->par->dp_bucket_bytes)
                lower_emit_flush_dp(e);
        }
    }
}

guint32 lower_stage_rank(const Emit *e, guint stage)
{
    SsimCoord c = e->coord;
    c.pp = stage;
    guint32 global = ssim_parallel_rank(e->par, c);
    return g_array_index(e->graph_of, guint32, global);
}

void lower_emit_p2p(Emit *e, SsimOpKind kind, guint32 *st, const char *st_name, guint peer_stage,
                    guint32 tag)
{
    SsimOpSpec spec = SSIM_OP_SPEC_INIT;
    spec.kind = kind;
    spec.stream = stream(e, st, st_name);
    spec.peer = lower_stage_rank(e, peer_stage);
    spec.tag = tag;
    spec.name = kind == SSIM_OP_SEND ? "pp.send" : "pp.recv";
    spec.bytes = e->act_bytes;
    if (kind == SSIM_OP_SEND) {
        guint32 idx = add(e, &spec, SSIM_OPCLASS_PP, e->last, NULL, 0);
        if (e->last != SSIM_NONE)
            ssim_plan_data(e->plan, e->last, idx);
    } else {
        /* Posted at the start; the next kernel waits for it. */
        guint32 idx = add(e, &spec, SSIM_OPCLASS_PP, SSIM_NONE, NULL, 0);
        g_array_append_val(e->pending, idx);
    }
}

guint32 lower_emit_permute(Emit *e, guint slot, guint32 send_peer, guint32 recv_peer)
{
    SsimOpSpec spec =
        coll_spec(e, SSIM_COLL_PERMUTE, "pp.permute", e->pp_group, e->act_bytes, &e->st_pp, "pp");
    /* It follows what the next kernel would have waited for, but reads only the slot's output,
     * and that only when the next stage runs this microbatch next. */
    guint32 idx =
        add(e, &spec, SSIM_OPCLASS_PP, e->last, (const guint32 *)e->pending->data, e->pending->len);
    must(e, ssim_plan_mark_permute(e->plan, idx, slot, send_peer, recv_peer, &e->bug));
    if (send_peer != SSIM_NONE && e->last != SSIM_NONE)
        ssim_plan_data(e->plan, e->last, idx);
    g_array_set_size(e->pending, 0);
    g_array_append_val(e->pending, idx);
    return idx;
}

guint64 lower_grad_elem_bytes(const Emit *e)
{
    return (e->step_costs >> SSIM_STEP_COST_GRAD_FP32) & 1u ? 4 : ssim_dtype_size(e->model->dtype);
}

static gboolean term_on(const Emit *e, SsimStepCost term)
{
    return (e->step_costs >> term) & 1u;
}

void lower_emit_host(Emit *e, SsimOpClass cls)
{
    if (e->host <= 0 || !term_on(e, SSIM_STEP_COST_HOST))
        return;
    /* In the phase's class: the host's turn is part of the phase.  It waits for what the phase's
     * first kernel would (a receive): the host, which synchronised on it, then issues the phase. */
    Step st = {.kind = ST_KERNEL, .name = "host", .duration = e->host};
    kernel(e, &st, cls);
}

/* A small blocking all-reduce of `bytes` over `group` after the last kernel, on stream `st`
 * (`st_name`): the next kernel waits for it (the host reads its result). */
static void blocking_allreduce(Emit *e, const char *name, guint32 group, guint64 bytes, guint32 *st,
                               const char *st_name)
{
    SsimOpSpec spec = coll_spec(e, SSIM_COLL_ALLREDUCE, name, group, bytes, st, st_name);
    guint32 idx = comm(e, &spec, SSIM_OPCLASS_DP);
    g_array_set_size(e->pending, 0);
    g_array_append_val(e->pending, idx);
}

/* One of the step's end, on the dp stream. */
static void step_allreduce(Emit *e, const char *name, guint32 group, guint64 bytes)
{
    blocking_allreduce(e, name, group, bytes, &e->st_dp, "dp");
}

void lower_emit_amax(Emit *e, guint layers, gboolean forward)
{
    if (e->amax_group == SSIM_NONE || layers == 0)
        return;
    guint64 bytes = (guint64)layers * 4 * (forward ? 3 : 2) * 4;
    blocking_allreduce(e, forward ? "fp8.amax_fwd" : "fp8.amax_bwd", e->amax_group, bytes,
                       &e->st_amax, "amax");
}

static void optimizer(Emit *e, guint64 params, guint64 shard);

void lower_emit_optimizer_step(Emit *e, gboolean emb_ar)
{
    const SsimParallel *par = e->par;
    const guint64 gdt = lower_grad_elem_bytes(e);
    if (emb_ar && term_on(e, SSIM_STEP_COST_EMBEDDING)) {
        /* The tied table's gradient, or under ZeRO-2 and 3 this rank's shard of it (the first
         * and the last stage's same shard of it are summed). */
        guint64 bytes = (guint64)lower_cdiv(e->model->vocab, par->tp) * e->model->hidden * gdt;
        if (par->zero_stage >= 2)
            bytes = lower_cdiv(bytes, ssim_parallel_size(par, SSIM_AXIS_DP));
        SsimOpSpec spec = coll_spec(e, SSIM_COLL_ALLREDUCE, "emb.allreduce", e->emb_group, bytes,
                                    &e->st_dp, "dp");
        guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, e->last, NULL, 0);
        if (e->last != SSIM_NONE)
            ssim_plan_data(e->plan, e->last, idx);
        g_array_append_val(e->dp_ops, idx);
    }

    /* The parameters this GPU updates: its stage's over tp, and 1/(dp cp) of them under ZeRO. */
    const guint dpx = ssim_parallel_size(par, SSIM_AXIS_DP);
    guint64 params = ssim_parallel_stage_params(par, e->model, e->stage) / par->tp;
    gboolean zero = par->zero_stage >= 1 && dpx > 1;
    guint64 shard = zero ? params / dpx : params;
    g_array_append_vals(e->pending, e->dp_ops->data, e->dp_ops->len);

    /* Loss scaling: the unscale-and-check pass reads and writes the fp32 gradients, and the
     * found-inf flag is all-reduced (max) before the host decides whether to step. */
    if (term_on(e, SSIM_STEP_COST_LOSS_SCALE)) {
        Step st = {.kind = ST_KERNEL, .name = "loss_scale.check", .bytes = shard * 8};
        kernel(e, &st, SSIM_OPCLASS_OPTIMIZER);
        if (e->mp_group != SSIM_NONE)
            step_allreduce(e, "loss_scale.allreduce", e->mp_group, 4);
    }
    /* Clipping: the local squared norm reads the fp32 gradients once; the sum is all-reduced
     * over the model-parallel group (every GPU under ZeRO). */
    if (term_on(e, SSIM_STEP_COST_CLIP)) {
        Step st = {.kind = ST_KERNEL, .name = "clip.norm", .bytes = shard * 4};
        kernel(e, &st, SSIM_OPCLASS_OPTIMIZER);
        if (e->mp_group != SSIM_NONE)
            step_allreduce(e, "clip.allreduce", e->mp_group, 4);
    }
    if (term_on(e, SSIM_STEP_COST_OPTIMIZER))
        optimizer(e, params, shard);
}

/* The optimizer's kernels over this GPU's `params` (`shard` of them its own under ZeRO), under
 * ZeRO-1 and 2 the weights' all-gather, and under FP8 the weights' cast. */
static void optimizer(Emit *e, guint64 params, guint64 shard)
{
    const SsimParallel *par = e->par;
    const guint64 dt = ssim_dtype_size(e->model->dtype), gdt = lower_grad_elem_bytes(e);
    gboolean zero = par->zero_stage >= 1 && ssim_parallel_size(par, SSIM_AXIS_DP) > 1;
    /* The optimizer, as Megatron-LM's mixed-precision step runs it: Adam reads the fp32
     * gradient, master weight and two moments and writes the last three (7 x 4 bytes per
     * parameter); in 16 bits the master weights are then copied into the compute copy (4 read,
     * dt written: multi_tensor_scale), and gradients reduced in 16 bits are first copied into
     * fp32 (dt read, 4 written).  Then the gradient buffer is zeroed for the next iteration
     * (zero_grad_buffer: the whole buffer, gdt bytes a parameter, also under ZeRO-1; the shard
     * under ZeRO-2 and 3, which keep no more). */
    guint64 per = 28;
    if (dt < 4)
        per += 4 + dt + (gdt < 4 ? dt + 4 : 0);
    Step opt = {.kind = ST_KERNEL, .name = "optimizer", .bytes = shard * per};
    kernel(e, &opt, SSIM_OPCLASS_OPTIMIZER);
    Step zero_grad = {.kind = ST_KERNEL,
                      .name = "grad.zero",
                      .bytes = (zero && par->zero_stage >= 2 ? shard : params) * gdt};
    kernel(e, &zero_grad, SSIM_OPCLASS_OPTIMIZER);
    /* Stage 3 keeps the weights sharded: the next step's forward gathers them layer by layer;
     * so does overlap_param_gather, once a step (lower-iteration.c). */
    if (zero && par->zero_stage <= 2 && !par->overlap_param_gather) {
        SsimOpSpec spec = coll_spec(e, SSIM_COLL_ALLGATHER, "dp.allgather", e->dp_group,
                                    params * dt, &e->st_dp, "dp");
        guint32 idx = add(e, &spec, SSIM_OPCLASS_DP, e->last, NULL, 0);
        ssim_plan_data(e->plan, e->last, idx);
    }
    /* FP8 training: Transformer Engine casts each FP8 GEMM's weight to FP8, with its transpose,
     * once a step (on the first microbatch, from the weights the optimizer wrote): dt bytes read
     * and 2 written a weight (lower-steps.c has the activations' casts). */
    guint64 w = ssim_parallel_stage_fp8_params(par, e->model, e->stage);
    if (w > 0) {
        Step st = {
            .kind = ST_KERNEL, .name = "fp8.weight_cast", .bytes = w * lower_fp8_cast_bytes(dt)};
        kernel(e, &st, SSIM_OPCLASS_OPTIMIZER);
    }
}
