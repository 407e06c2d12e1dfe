/*
 * The iteration: in which order every emitted rank runs its work (include/shiftsim/lower.h).
 *
 * The schedule decides the order.  For each stage, ssim_schedule_phases() lists its phases (the
 * forward or the backward of one microbatch on one model chunk, or a lock-step bubble slot), and
 * this file walks that list once per emitted rank, emitting each phase through the emitter
 * (lower-emit.c) as
 *
 *   forward    [receive the activation] [embedding] layers [LM head] [send the activation]
 *   backward   [receive the gradient] [LM head] (recompute, layer)... [embedding]
 *              [send the gradient] [close the gradient bucket after the chunk's last microbatch]
 *   lock-step  no sends or receives: one collective-permute ends every slot, bubbles included
 *
 * and then ends the rank's iteration: the last gradient bucket, the tied-embedding all-reduce,
 * the optimizer and (ZeRO-1 and 2) the weights' all-gather.  Under ZeRO-2 and 3 each unit of a
 * backward (a layer, the embedding, the LM head) ends with the reduce-scatter of its gradients,
 * every microbatch; under ZeRO-3 each unit of a forward or a backward first gathers its weights
 * (lower_emit_gather).  Send/receive pairs carry explicit tags
 * ((direction * p v + destination virtual stage) * m + microbatch), so pairing cannot depend on
 * the order in which the two directions interleave.  Once every rank is emitted, the data a
 * lock-step slot hands to the next stage is recorded across ranks (the sender's last kernel
 * feeds the kernel that reads it), so that a placement that splits the permute keeps it.
 *
 * Programs.  Under a schedule whose phases are programs (Alpa's MPMD pipeline,
 * ssim_schedule_has_programs), each phase's kernels, TP collectives and gradient pieces form the
 * program `fwd.MB` or `bwd.MB` of their rank, and the optimizer step the program `apply_grad`;
 * the receive before a phase and the send after it stay outside, on their pipeline streams, so a
 * send waits for its whole producing program and the consuming program waits for its receive.
 * The gradient pieces are emitted in the backward program of their chunk's last microbatch, and a
 * placement moves them between programs through a rule of place-moves.c.
 *
 * Gradient sites are global: layer l of the model is site l (a chunk's backward emits its layers
 * last first), the embedding SSIM_SITE_EMBED, the LM head SSIM_SITE_HEAD.
 *
 * Seams.  A new schedule changes only the phase lists (schedule-<name>.c).
 */
#include "src/workload/lower-private.h"

#include <stdlib.h>

static int cmp_uint(const void *a, const void *b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;
    return (x > y) - (x < y);
}

static guint32 tag_of(const Emit *e, SsimPhaseDir dir, guint dst_vs, guint micro)
{
    return ((guint32)dir * e->pv + dst_vs) * e->m + micro;
}

/* Graph rank of the stage that slot `j` of `stage` exchanges with in direction `dir` (+1 the
 * next stage, -1 the previous), when both run the same microbatch in the same direction in
 * consecutive slots (`sender` tells which of the two slots is this stage's); else SSIM_NONE. */
static guint32 lockstep_peer(const Emit *e, guint j, gboolean sender)
{
    guint p = e->par->pp, n, nn;
    const SsimPhase *mine = ssim_schedule_phases(e->sched, e->stage, &n);
    guint js = sender ? j : j + 1; /* this stage's slot */
    if (j + 1 >= n || mine[js].micro == SSIM_NONE)
        return SSIM_NONE;
    gint step = mine[js].dir == SSIM_PHASE_FWD ? 1 : -1;
    gint other = (gint)e->stage + (sender ? step : -step);
    if (other < 0 || other >= (gint)p)
        return SSIM_NONE;
    const SsimPhase *theirs = ssim_schedule_phases(e->sched, (guint)other, &nn);
    guint jo = sender ? j + 1 : j;
    if (jo >= nn || theirs[jo].micro != mine[js].micro || theirs[jo].dir != mine[js].dir)
        return SSIM_NONE;
    return lower_stage_rank(e, (guint)other);
}

/*
 * overlap_param_gather (Megatron-LM's --overlap-param-gather): the weights the last step's
 * optimizer updated are all-gathered over dp as this step begins, unit by unit in forward order,
 * chunk after chunk, on the gather stream (Megatron-Core dispatches each model chunk's buckets
 * ahead of its first forward; a unit of shiftsim's is a layer, the embedding or the LM head,
 * where Megatron-LM's buckets hold about 40M parameters), instead of in one all-gather after
 * the optimizer.  param_first holds each chunk's first gather in param_ops.
 */
static void param_gather(Emit *e, guint64 bytes)
{
    if (bytes == 0)
        return;
    guint32 op = lower_emit_param_gather(e, bytes);
    g_array_append_val(e->param_ops, op);
}

static void param_gathers(Emit *e)
{
    g_array_set_size(e->param_ops, 0);
    g_array_set_size(e->param_first, e->par->virtual_stages);
    for (guint c = 0; c < e->par->virtual_stages; c++)
        g_array_index(e->param_first, guint, c) = G_MAXUINT;
    const Units *u = &e->params;
    if (u->layer == 0 && u->embed == 0 && u->head == 0)
        return;
    for (guint c = 0; c < e->par->virtual_stages; c++) {
        guint vs = ssim_schedule_virtual_stage(e->sched, e->stage, c);
        g_array_index(e->param_first, guint, c) = e->param_ops->len;
        guint lpc = ssim_parallel_chunk_layers(e->par, e->model, vs);
        if (vs == 0)
            param_gather(e, u->embed);
        for (guint l = 0; l < lpc; l++)
            param_gather(e, u->layer);
        if (vs == e->pv - 1)
            param_gather(e, u->head);
    }
}

/* The next kernel waits for the next of the chunk's gathers (`pg` its index in param_ops;
 * G_MAXUINT: not the chunk's first forward), when the unit has weights to gather. */
static void param_wait(Emit *e, guint *pg, guint64 bytes)
{
    if (*pg == G_MAXUINT || bytes == 0)
        return;
    g_assert(*pg < e->param_ops->len);
    guint32 op = g_array_index(e->param_ops, guint32, (*pg)++);
    g_array_append_val(e->pending, op);
}

/* Emits slot `slot` of this rank's schedule, phase `ph`; returns its lock-step permute, or
 * SSIM_NONE. */
static guint32 emit_phase(Emit *e, const SsimPhase *ph, guint slot)
{
    guint p = e->par->pp;
    gboolean lock = ssim_schedule_is_lockstep(e->sched);
    gboolean programs = ssim_schedule_has_programs(e->sched);
    const StepLists *sl = e->steps;
    if (ph->micro != SSIM_NONE) {
        guint vs = ssim_schedule_virtual_stage(e->sched, e->stage, ph->chunk);
        guint last_vs = e->pv - 1;
        /* The chunk's layers (stage_layers's entry when uneven) and its first. */
        guint lpc = ssim_parallel_chunk_layers(e->par, e->model, vs);
        guint first_layer = ssim_parallel_chunk_first_layer(e->par, e->model, vs);
        guint next = (e->stage + 1) % p, prev = (e->stage + p - 1) % p;
        char name[32] = ""; /* the phase's program, only where the schedule has programs */
        if (programs)
            g_snprintf(name, sizeof name, "%s.%u", ph->dir == SSIM_PHASE_FWD ? "fwd" : "bwd",
                       ph->micro);
        /* ZeRO-3's units, in forward order: the weights each gathers (0 for none).  Under
         * fsdp_root (pp 1) the embedding and the head are the root unit's, and the model's last
         * layer stays whole from its forward to its backward. */
        const Units *u = &e->units;
        gboolean root = u->root > 0;
        guint64 u_embed = vs == 0 && !root ? u->embed : 0;
        guint64 u_head = vs == last_vs && !root ? u->head : 0;
        if (ph->dir == SSIM_PHASE_FWD) {
            /* overlap_param_gather: the chunk's first forward waits, unit by unit, for the
             * weights gathered since the step began (param_gathers). */
            guint *first_gather = &g_array_index(e->param_first, guint, ph->chunk);
            guint pg = *first_gather;
            *first_gather = G_MAXUINT;
            if (!lock && vs > 0)
                lower_emit_p2p(e, SSIM_OP_RECV, &e->st_pp_rf, "pp.recv.fwd", prev,
                               tag_of(e, SSIM_PHASE_FWD, vs, ph->micro));
            if (programs)
                e->program = ssim_plan_program(e->plan, e->rank, name);
            lower_emit_host(e, SSIM_OPCLASS_FWD);
            /* fsdp_root: the root unit before the first layer, in place of the embedding's and
             * the head's own gathers. */
            lower_emit_gather(e, u->root, lpc > 0 ? u->layer : 0, SSIM_OPCLASS_FWD);
            if (vs == 0) {
                param_wait(e, &pg, e->params.embed);
                lower_emit_gather(e, u_embed, lpc > 0 ? u->layer : u_head, SSIM_OPCLASS_FWD);
                lower_emit_steps(e, sl->embed_fwd, SSIM_OPCLASS_FWD, SSIM_NONE);
            }
            for (guint l = 0; l < lpc; l++) {
                param_wait(e, &pg, e->params.layer);
                lower_emit_gather(e, u->layer, l + 1 < lpc ? u->layer : u_head, SSIM_OPCLASS_FWD);
                lower_emit_steps(e, sl->layer_fwd, SSIM_OPCLASS_FWD, SSIM_NONE);
            }
            /* Megatron-LM's fp8_autocast wraps the chunk's layers: its exit reduces their
             * amaxes. */
            lower_emit_amax(e, lpc, TRUE);
            if (vs == last_vs) {
                param_wait(e, &pg, e->params.head);
                lower_emit_gather(e, u_head, 0, SSIM_OPCLASS_FWD);
                lower_emit_steps(e, sl->head_fwd, SSIM_OPCLASS_FWD, SSIM_NONE);
            }
            e->program = SSIM_NONE;
            if (!lock && vs < last_vs)
                lower_emit_p2p(e, SSIM_OP_SEND, &e->st_pp_sf, "pp.send.fwd", next,
                               tag_of(e, SSIM_PHASE_FWD, vs + 1, ph->micro));
        } else {
            if (!lock && vs < last_vs)
                lower_emit_p2p(e, SSIM_OP_RECV, &e->st_pp_rb, "pp.recv.bwd", next,
                               tag_of(e, SSIM_PHASE_BWD, vs, ph->micro));
            if (programs)
                e->program = ssim_plan_program(e->plan, e->rank, name);
            /* ZeRO-2 and 3 reduce every microbatch's gradients unit by unit instead. */
            e->collect_grads = ph->last && e->par->zero_stage < 2;
            /* The chunk's first backward, where its lists differ (StepLists). */
            guint8 *seen = &g_array_index(e->bwd_seen, guint8, ph->chunk);
            gboolean first = !*seen;
            *seen = 1;
            const GArray *layer_bwd =
                first && sl->layer_bwd_first ? sl->layer_bwd_first : sl->layer_bwd;
            const GArray *embed_bwd =
                first && sl->embed_bwd_first ? sl->embed_bwd_first : sl->embed_bwd;
            const GArray *head_bwd =
                first && sl->head_bwd_first ? sl->head_bwd_first : sl->head_bwd;
            lower_emit_host(e, SSIM_OPCLASS_BWD);
            if (vs == last_vs) {
                /* defer_head_wgrad: the first microbatches' weight gradient waits for the flush
                 * (emit_rank). */
                gboolean defer = sl->head_bwd_deferred != NULL &&
                                 e->head_deferred < ssim_parallel_deferred_wgrads(e->par);
                e->head_deferred += defer;
                lower_emit_gather(e, u_head, lpc > 0 ? u->layer : u_embed, SSIM_OPCLASS_BWD);
                if (root) /* the whole last layer's pre-backward prefetches the one before */
                    lower_emit_kept(e, lpc > 1 ? u->layer : 0);
                lower_emit_steps(e, defer ? sl->head_bwd_deferred : head_bwd, SSIM_OPCLASS_BWD,
                                 SSIM_SITE_HEAD);
                lower_emit_reduce_unit(e, root ? 0 : u->head_grad);
            }
            for (guint l = 0; l < lpc; l++) {
                /* The chunk's layer lpc - 1 - l; under recompute_layers only its first ones
                 * recompute (Megatron-LM's block method). */
                guint n_rc = e->par->recompute_layers;
                gboolean rc = sl->layer_recompute->len > 0 && (n_rc == 0 || lpc - 1 - l < n_rc);
                if (!(root && vs == last_vs && l == 0))
                    lower_emit_gather(e, u->layer, l + 1 < lpc ? u->layer : u_embed,
                                      rc ? SSIM_OPCLASS_RECOMPUTE : SSIM_OPCLASS_BWD);
                if (rc)
                    lower_emit_steps(e, sl->layer_recompute, SSIM_OPCLASS_RECOMPUTE, SSIM_NONE);
                lower_emit_steps(e, layer_bwd, SSIM_OPCLASS_BWD, first_layer + (lpc - 1 - l));
                lower_emit_reduce_unit(e, u->layer_grad);
            }
            /* After the backward of the chunk's first FP8 module (its first layer's QKV). */
            lower_emit_amax(e, lpc, FALSE);
            if (vs == 0) {
                lower_emit_gather(e, u_embed, 0, SSIM_OPCLASS_BWD);
                lower_emit_steps(e, embed_bwd, SSIM_OPCLASS_BWD, SSIM_SITE_EMBED);
                /* The root unit's gradients, the head's with the embedding's. */
                lower_emit_reduce_unit(e, root ? u->root : u->embed_grad);
            }
            e->program = SSIM_NONE;
            if (!lock && vs > 0)
                lower_emit_p2p(e, SSIM_OP_SEND, &e->st_pp_sb, "pp.send.bwd", prev,
                               tag_of(e, SSIM_PHASE_BWD, vs - 1, ph->micro));
            if (ph->last && e->par->dp_bucket_bytes > 0)
                lower_emit_flush_dp(e);
            e->collect_grads = FALSE;
        }
    }
    if (lock && p > 1)
        return lower_emit_permute(e, slot, lockstep_peer(e, slot, TRUE),
                                  lockstep_peer(e, slot, FALSE));
    return SSIM_NONE;
}

/* The group of the GPUs that differ from this rank only in tp and in `axis` (pp: Megatron-LM's
 * model-parallel group; dp, with cp: the amax reduction group), its members in global rank order
 * so that every member names the same group. */
static guint32 tp_plane_group(Emit *e, SsimAxis axis, const char *name, GError **error)
{
    const SsimParallel *par = e->par;
    guint other = ssim_parallel_size(par, axis), n = par->tp * other;
    g_autofree guint *ranks = g_new(guint, n);
    SsimCoord c = e->coord;
    for (guint o = 0; o < other; o++)
        for (guint t = 0; t < par->tp; t++) {
            *(axis == SSIM_AXIS_PP ? &c.pp : &c.dp) = o;
            c.tp = t;
            ranks[o * par->tp + t] = ssim_parallel_rank(par, c);
        }
    qsort(ranks, n, sizeof(guint), cmp_uint);
    return lower_group(e->L, e->graph_of, name, ranks, n, error);
}

/* Emits graph rank `rank`: its groups, its phases in the schedule's order, its optimizer step.
 * `permutes` receives its lock-step permute per slot (SSIM_NONE where it has none). */
static gboolean emit_rank(Emit *e, guint32 rank, GArray *permutes, GError **error)
{
    lower_emit_begin_rank(e, rank);
    guint32 global = g_array_index(e->L->global_of, guint32, rank);
    const SsimParallel *par = e->par;
    guint p = par->pp;
    const guint dpx = ssim_parallel_size(par, SSIM_AXIS_DP); /* dp x cp */
    g_autofree guint *ranks = g_new(guint, MAX(MAX(par->tp, dpx), MAX(p, 2u)));
    if (par->tp > 1) {
        ssim_parallel_group(par, global, SSIM_AXIS_TP, ranks);
        e->tp_group = lower_group(e->L, e->graph_of, "tp", ranks, par->tp, error);
        if (e->tp_group == SSIM_NONE)
            return FALSE;
    }
    /* Gradients are reduced over the whole data-parallel axis, a replica's cp GPUs included
     * (Megatron-LM's data-parallel group with context parallelism). */
    if (dpx > 1) {
        ssim_parallel_group(par, global, SSIM_AXIS_DP, ranks);
        e->dp_group = lower_group(e->L, e->graph_of, "dp", ranks, dpx, error);
        if (e->dp_group == SSIM_NONE)
            return FALSE;
    }
    /* The key-value ring: the cp GPUs of this rank's replica, in cp order. */
    if (par->cp > 1) {
        SsimCoord c = e->coord;
        guint first = c.dp - c.dp % par->cp;
        for (guint j = 0; j < par->cp; j++) {
            c.dp = first + j;
            ranks[j] = ssim_parallel_rank(par, c);
        }
        e->cp_group = lower_group(e->L, e->graph_of, "cp", ranks, par->cp, error);
        if (e->cp_group == SSIM_NONE)
            return FALSE;
    }
    if (p > 1 && ssim_schedule_is_lockstep(e->sched)) {
        ssim_parallel_group(par, global, SSIM_AXIS_PP, ranks);
        e->pp_group = lower_group(e->L, e->graph_of, "pp", ranks, p, error);
        if (e->pp_group == SSIM_NONE)
            return FALSE;
    }
    gboolean emb_ar = e->model->tied_embeddings && p > 1 && (e->stage == 0 || e->stage == p - 1);
    if (emb_ar) {
        SsimCoord c = e->coord;
        c.pp = 0;
        ranks[0] = ssim_parallel_rank(par, c);
        c.pp = p - 1;
        ranks[1] = ssim_parallel_rank(par, c);
        e->emb_group = lower_group(e->L, e->graph_of, "emb", ranks, 2, error);
        if (e->emb_group == SSIM_NONE)
            return FALSE;
    }
    /* The gradient norm's and the inf check's group: Megatron-LM's model-parallel group (tp x
     * pp), or every GPU when the optimizer is sharded (the distributed optimizer's). */
    gboolean zero = par->zero_stage >= 1 && dpx > 1;
    guint mp_n = zero ? ssim_parallel_world(par) : par->tp * p;
    guint want = (1u << SSIM_STEP_COST_CLIP) | (1u << SSIM_STEP_COST_LOSS_SCALE);
    if (mp_n > 1 && (e->step_costs & want)) {
        if (zero) {
            g_autofree guint *world = g_new(guint, mp_n);
            for (guint i = 0; i < mp_n; i++)
                world[i] = i;
            e->mp_group = lower_group(e->L, e->graph_of, "world", world, mp_n, error);
        } else {
            e->mp_group = tp_plane_group(e, SSIM_AXIS_PP, "mp", error);
        }
        if (e->mp_group == SSIM_NONE)
            return FALSE;
    }
    /* Transformer Engine's amax reduction group (Megatron-LM's get_amax_reduction_group with
     * context parallelism): the stage's tp x dp x cp GPUs. */
    if (par->tp * dpx > 1 && (e->step_costs >> SSIM_STEP_COST_FP8_AMAX) & 1u) {
        e->amax_group = tp_plane_group(e, SSIM_AXIS_DP, "amax", error);
        if (e->amax_group == SSIM_NONE)
            return FALSE;
    }

    param_gathers(e);
    guint n;
    const SsimPhase *ph = ssim_schedule_phases(e->sched, e->stage, &n);
    g_array_set_size(permutes, n);
    for (guint i = 0; i < n; i++)
        g_array_index(permutes, guint32, i) = emit_phase(e, &ph[i], i);
    /* The flush's deferred LM head weight gradients (Megatron-LM's
     * finish_embedding_wgrad_compute, before the gradients are finalised); the last completes
     * the head's gradients, whose reduction then follows. */
    for (guint i = 0; i < e->head_deferred; i++) {
        e->collect_grads = i + 1 == e->head_deferred;
        lower_emit_steps(e, e->steps->head_wgrad, SSIM_OPCLASS_BWD, SSIM_SITE_HEAD);
    }
    e->collect_grads = FALSE;
    lower_emit_flush_dp(e);
    if (ssim_schedule_has_programs(e->sched))
        e->program = ssim_plan_program(e->plan, e->rank, "apply_grad");
    lower_emit_optimizer_step(e, emb_ar);
    e->program = SSIM_NONE;
    return TRUE;
}

static guint64 grad_bytes(const GArray *steps)
{
    guint64 sum = 0;
    for (guint i = 0; i < steps->len; i++)
        sum += g_array_index(steps, Step, i).grad_bytes;
    return sum;
}

/* The weights an all-gather over dp makes whole for each unit (a GPU's tp shard, in the model's
 * dtype). */
static void unit_weights(const SsimModel *model, const SsimParallel *par, Units *u)
{
    guint64 dt = ssim_dtype_size(model->dtype);
    u->layer = lower_cdiv(ssim_model_layer_params(model), par->tp) * dt;
    u->embed = lower_cdiv(ssim_model_embedding_params(model), par->tp) * dt;
    u->head = lower_cdiv(ssim_model_head_weights(model), par->tp) * dt;
}

/* overlap_param_gather's units (lower-private.h): ZeRO 1 and 2 over dp > 1. */
static Units param_units_of(const SsimModel *model, const SsimParallel *par)
{
    Units u = {0};
    if (par->overlap_param_gather && ssim_parallel_size(par, SSIM_AXIS_DP) > 1 &&
        par->zero_stage >= 1 && par->zero_stage <= 2)
        unit_weights(model, par, &u);
    return u;
}

/* ZeRO-2 and 3's units (lower-private.h). */
static Units units_of(const SsimModel *model, const SsimParallel *par, const StepLists *steps)
{
    Units u = {0};
    if (ssim_parallel_size(par, SSIM_AXIS_DP) == 1 || par->zero_stage < 2)
        return u;
    u.layer_grad = grad_bytes(steps->layer_bwd);
    u.embed_grad = grad_bytes(steps->embed_bwd);
    u.head_grad = grad_bytes(steps->head_bwd);
    if (par->zero_stage >= 3)
        unit_weights(model, par, &u);
    if (par->zero_stage >= 3 && par->fsdp_root)
        u.root =
            lower_cdiv(ssim_model_outer_params(model), par->tp) * ssim_dtype_size(model->dtype);
    u.copies = ssim_parallel_step_cost_on(par, model, SSIM_STEP_COST_SHARD_COPY);
    return u;
}

gboolean lower_emit_iteration(SsimLowered *L, const SsimModel *model, const SsimParallel *par,
                              const SsimSchedule *schedule, const StepLists *steps,
                              const GArray *graph_of, SsimTime host, GError **error)
{
    Emit e = {
        .L = L,
        .plan = L->plan,
        .model = model,
        .par = par,
        .sched = schedule,
        .steps = steps,
        .graph_of = graph_of,
        .m = ssim_parallel_n_microbatches(par),
        .pv = par->pp * par->virtual_stages,
        .act_bytes = ssim_lower_transfer_bytes(model, par),
        .step_costs = ssim_parallel_step_costs(par, model),
        .host = host,
        .units = units_of(model, par, steps),
        .params = param_units_of(model, par),
        .pending = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .deferred = g_array_new(FALSE, FALSE, sizeof(Deferred)),
        .dp_ops = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .open = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .bwd_seen = g_array_new(FALSE, TRUE, sizeof(guint8)),
        .param_ops = g_array_new(FALSE, FALSE, sizeof(guint32)),
        .param_first = g_array_new(FALSE, TRUE, sizeof(guint)),
        .group_last = g_array_new(FALSE, FALSE, sizeof(GroupLast)),
    };
    /* Per graph rank: its lock-step permute per slot. */
    g_autoptr(GPtrArray) all_permutes =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    gboolean ok = TRUE;
    for (guint32 r = 0; ok && r < L->global_of->len; r++) {
        GArray *permutes = g_array_new(FALSE, FALSE, sizeof(guint32));
        g_ptr_array_add(all_permutes, permutes);
        ok = emit_rank(&e, r, permutes, error);
    }
    /* Across ranks: the kernel after which a stage sends a lock-step slot's output feeds the
     * kernel of the next stage that reads it in the next slot. */
    for (guint32 r = 0; ok && r < all_permutes->len; r++) {
        GArray *mine = g_ptr_array_index(all_permutes, r);
        for (guint j = 0; j < mine->len; j++) {
            guint32 idx = g_array_index(mine, guint32, j);
            const SsimPlanOp *o = idx == SSIM_NONE ? NULL : ssim_plan_op(L->plan, idx);
            if (o == NULL || o->send_peer == SSIM_NONE || o->issue0 == SSIM_NONE)
                continue;
            GArray *theirs = g_ptr_array_index(all_permutes, o->send_peer);
            guint32 q = g_array_index(theirs, guint32, j);
            guint32 consumer = ssim_plan_op(L->plan, q)->wait0;
            if (consumer != SSIM_NONE)
                ssim_plan_data(L->plan, o->issue0, consumer);
        }
    }
    g_array_free(e.pending, TRUE);
    g_array_free(e.deferred, TRUE);
    g_array_free(e.dp_ops, TRUE);
    g_array_free(e.open, TRUE);
    g_array_free(e.bwd_seen, TRUE);
    g_array_free(e.param_ops, TRUE);
    g_array_free(e.param_first, TRUE);
    g_array_free(e.group_last, TRUE);
    return ok;
}
