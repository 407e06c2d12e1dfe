/*
 * The plan (include/shiftsim/plan.h): its storage, the lowering's checked setters, the queries
 * the placement rules need, and the one checked primitive that moves points (ssim_plan_move).
 *
 * Invariants (see plan-private.h for the storage's).  Only communication ops have issue and wait
 * points; kernels never move.  A data dependency is realised in the graph by one of: stream
 * order (two kernels of a rank), the consumer's issue point (kernel -> communication), the
 * producer's wait point (communication -> kernel), an explicit edge (communication ->
 * communication on one rank) or the collective / send-receive matching (across ranks).  The
 * legality rule of ssim_plan_move() is exactly what makes the first three hold; the builder's
 * checker (plan-build.c) does not trust it and searches the built graph.
 *
 * Every write to an op goes through a function of this file, each checking what it can when it
 * is called: the shape of a point and its program order (points_are_legal) for the lowering's
 * setters and for moves, and, for moves only, the data dependencies, which are complete by then.
 * With programs, a same-rank dependency also holds when the producer's program runs before the
 * consumer's (in-order dispatch).  A setter that changes an op's role (flags, site) marks the
 * caches dirty.
 */
#include "src/workload/plan-private.h"

#include <shiftsim/alloc.h>
#include <shiftsim/opclass.h>

#include <string.h>

/* ---- storage ----------------------------------------------------------------------------- */

SsimPlan *ssim_plan_new(void)
{
    SsimPlan *p = g_new0(SsimPlan, 1);
    p->ops = g_array_new(FALSE, FALSE, sizeof(SsimPlanOp));
    p->streams = g_array_new(FALSE, FALSE, sizeof(Stream));
    p->stream_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    p->groups = g_array_new(FALSE, FALSE, sizeof(Group));
    p->programs = g_array_new(FALSE, FALSE, sizeof(Program));
    p->program_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    p->rank_programs = g_array_new(FALSE, TRUE, sizeof(guint32));
    p->group_ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->order = g_array_new(FALSE, FALSE, sizeof(Pair));
    p->data = g_array_new(FALSE, FALSE, sizeof(Pair));
    p->kernels = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    p->kernels_room = g_array_new(FALSE, FALSE, sizeof(gsize));
    p->pfirst = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->pl = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->cfirst = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->cl = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->site_last = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->last_permute = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->dirty = p->dirty_producers = TRUE;
    return p;
}

void ssim_plan_reserve(SsimPlan *p, gsize n_ops)
{
    g_return_if_fail(p->ops->len == 0 && p->order->len == 0 && p->data->len == 0);
    if (n_ops == 0)
        return;
    GArray **arrays[] = {&p->ops, &p->order, &p->data};
    gsize *rooms[] = {&p->ops_room, &p->order_room, &p->data_room};
    const guint sizes[] = {sizeof(SsimPlanOp), sizeof(Pair), sizeof(Pair)};
    for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) {
        g_array_free(*arrays[i], TRUE);
        *arrays[i] = ssim_array_new_large(sizes[i], n_ops);
        *rooms[i] = n_ops;
    }
}

void ssim_plan_free(SsimPlan *p)
{
    if (p == NULL)
        return;
    for (guint i = 0; i < p->groups->len; i++)
        g_free(g_array_index(p->groups, Group, i).name);
    GArray *arrays[] = {p->ops,       p->streams,      p->groups,   p->group_ranks,  p->order,
                        p->data,      p->pfirst,       p->pl,       p->cfirst,       p->cl,
                        p->site_last, p->last_permute, p->programs, p->rank_programs};
    for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
        g_array_free(arrays[i], TRUE);
    g_hash_table_destroy(p->stream_of);
    g_hash_table_destroy(p->program_of);
    g_ptr_array_free(p->kernels, TRUE);
    g_array_unref(p->kernels_room);
    g_free(p);
}

/* ---- built by the lowering --------------------------------------------------------------- */

guint32 ssim_plan_stream(SsimPlan *p, guint32 rank, const char *name)
{
    g_autofree char *key = g_strdup_printf("%u/%s", rank, name);
    gpointer v = g_hash_table_lookup(p->stream_of, key);
    if (v)
        return GPOINTER_TO_UINT(v) - 1;
    Stream s = {rank, g_intern_string(name)};
    g_array_append_val(p->streams, s);
    guint32 idx = p->streams->len - 1;
    g_hash_table_insert(p->stream_of, g_steal_pointer(&key), GUINT_TO_POINTER(idx + 1));
    return idx;
}

guint32 ssim_plan_add_group(SsimPlan *p, const char *name, const guint32 *ranks, guint n,
                            GError **error)
{
    if (ssim_plan_find_group(p, name) != SSIM_NONE || n == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    n == 0 ? "place: group '%s' is empty" : "place: group '%s' exists", name);
        return SSIM_NONE;
    }
    Group g = {g_strdup(name), p->group_ranks->len, n};
    g_array_append_vals(p->group_ranks, ranks, n);
    g_array_append_val(p->groups, g);
    return p->groups->len - 1;
}

/* g_intern_string(name), through the plan's small cache. */
static const char *intern_name(SsimPlan *p, const char *name)
{
    guint slot = plan_pointer_slot(name, G_N_ELEMENTS(p->names));
    if (p->names[slot].interned == name) /* already interned: immortal, no text to compare */
        return name;
    if (p->names[slot].given == name && strcmp(p->names[slot].interned, name) == 0)
        return p->names[slot].interned;
    const char *interned = g_intern_string(name);
    p->names[slot].given = name;
    p->names[slot].interned = interned;
    return interned;
}

static GArray *rank_kernels(SsimPlan *p, guint32 rank)
{
    while (p->kernels->len <= rank) {
        g_ptr_array_add(p->kernels, g_array_new(FALSE, FALSE, sizeof(guint32)));
        gsize none = 0;
        g_array_append_val(p->kernels_room, none);
    }
    return g_ptr_array_index(p->kernels, rank);
}

guint32 ssim_plan_add(SsimPlan *p, const SsimOpSpec *spec, guint32 rank, guint8 cls,
                      const guint32 *order, guint n_order)
{
    SsimPlanOp op = {
        .kind = spec->kind,
        .coll = spec->coll,
        .rank = rank,
        .stream = spec->stream,
        .group = spec->group,
        .peer = spec->peer,
        .tag = spec->tag,
        .name = intern_name(p, spec->name ? spec->name : ssim_op_kind_name(spec->kind)),
        .cls = cls,
        .flags = spec->kind == SSIM_OP_RECV ? 0 : SSIM_PLAN_ISSUE_DEP,
        .site = SSIM_NONE,
        .issue = SSIM_NONE,
        .wait = SSIM_NONE,
        .issue0 = SSIM_NONE,
        .wait0 = SSIM_NONE,
        .send_peer = SSIM_NONE,
        .recv_peer = SSIM_NONE,
        .program = SSIM_NONE,
        .program0 = SSIM_NONE,
        .duration = spec->duration,
        .bytes = spec->bytes,
        .flops = spec->flops,
    };
    guint32 idx = p->ops->len;
    *(SsimPlanOp *)ssim_array_push(p->ops, &p->ops_room, sizeof op, 1) = op;
    GArray *kernels = rank_kernels(p, rank); /* (which grows kernels_room too) */
    if (spec->kind == SSIM_OP_COMPUTE)
        *(guint32 *)ssim_array_push(kernels, &g_array_index(p->kernels_room, gsize, rank),
                                    sizeof idx, 1) = idx;
    for (guint i = 0; i < n_order; i++)
        *(Pair *)ssim_array_push(p->order, &p->order_room, sizeof(Pair), 1) = (Pair){order[i], idx};
    p->dirty = p->dirty_producers = TRUE;
    return idx;
}

void ssim_plan_data(SsimPlan *p, guint32 producer, guint32 consumer)
{
    *(Pair *)ssim_array_push(p->data, &p->data_room, sizeof(Pair), 1) = (Pair){producer, consumer};
    p->dirty = p->dirty_producers = TRUE;
}

guint32 ssim_plan_program(SsimPlan *p, guint32 rank, const char *name)
{
    g_autofree char *key = g_strdup_printf("%u/%s", rank, name);
    gpointer v = g_hash_table_lookup(p->program_of, key);
    if (v)
        return GPOINTER_TO_UINT(v) - 1;
    if (p->rank_programs->len <= rank)
        g_array_set_size(p->rank_programs, rank + 1);
    guint32 *count = &g_array_index(p->rank_programs, guint32, rank);
    Program prog = {rank, (*count)++, g_intern_string(name)};
    g_array_append_val(p->programs, prog);
    guint32 idx = p->programs->len - 1;
    g_hash_table_insert(p->program_of, g_steal_pointer(&key), GUINT_TO_POINTER(idx + 1));
    return idx;
}

guint32 ssim_plan_n_programs(const SsimPlan *p)
{
    return p->programs->len;
}

guint32 ssim_plan_find_program(const SsimPlan *p, guint32 rank, const char *name)
{
    g_autofree char *key = g_strdup_printf("%u/%s", rank, name);
    gpointer v = g_hash_table_lookup(p->program_of, key);
    return v ? GPOINTER_TO_UINT(v) - 1 : SSIM_NONE;
}

const char *ssim_plan_program_name(const SsimPlan *p, guint32 program)
{
    g_return_val_if_fail(program < p->programs->len, "?");
    return g_array_index(p->programs, Program, program).name;
}

guint32 ssim_plan_program_rank(const SsimPlan *p, guint32 program)
{
    g_return_val_if_fail(program < p->programs->len, SSIM_NONE);
    return g_array_index(p->programs, Program, program).rank;
}

gboolean ssim_plan_program_before(const SsimPlan *p, guint32 a, guint32 b)
{
    if (a == SSIM_NONE || b == SSIM_NONE)
        return FALSE;
    const Program *x = &g_array_index(p->programs, Program, a);
    const Program *y = &g_array_index(p->programs, Program, b);
    return x->rank == y->rank && x->ordinal < y->ordinal;
}

/* ---- the one writable access ------------------------------------------------------------- */

/* The op `op`, writable.  Only the setters of this file and ssim_plan_reset() use it, each
 * after its own check: nothing outside plan.c writes an op. */
static SsimPlanOp *op_at(SsimPlan *p, guint32 op)
{
    return &g_array_index(p->ops, SsimPlanOp, op);
}

static gboolean same_rank_kernel(const SsimPlan *p, guint32 op, guint32 rank)
{
    const SsimPlanOp *o = ssim_plan_op(p, op);
    return o->rank == rank && o->kind == SSIM_OP_COMPUTE;
}

/*
 * The shape every pair of points obeys, whoever sets it: only communication has points; an
 * issue point is any other op of the rank (a kernel, or communication such as the loop's last
 * permute); a wait point is a kernel of the rank; and the wait comes after the issue.  With the op
 * in `program`, the program is its rank's, the issue point is in no later program and the wait
 * point in no earlier one (either would make two programs wait for each other).  `doing` names
 * the attempt in the message ("move", "set the lowering's points of").
 */
static gboolean points_are_legal(const SsimPlan *p, guint32 op, guint32 issue, guint32 wait,
                                 guint32 program, const char *doing, GError **error)
{
    char a[96], b[96];
    const SsimPlanOp *o = ssim_plan_op(p, op);
    if (o->kind == SSIM_OP_COMPUTE) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot %s %s: it is a kernel, and only communication has issue and "
                    "wait points",
                    doing, ssim_plan_op_label(p, op, a, sizeof a));
        return FALSE;
    }
    gboolean bad_issue = issue != SSIM_NONE && (issue >= p->ops->len || issue == op ||
                                                ssim_plan_op(p, issue)->rank != o->rank);
    gboolean bad_wait =
        wait != SSIM_NONE && (wait >= p->ops->len || !same_rank_kernel(p, wait, o->rank));
    if (bad_issue || bad_wait) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot %s %s: its %s point must be %s of rank %u", doing,
                    ssim_plan_op_label(p, op, a, sizeof a), bad_wait ? "wait" : "issue",
                    bad_wait ? "a kernel" : "another op", o->rank);
        return FALSE;
    }
    if (issue != SSIM_NONE && wait != SSIM_NONE && wait <= issue) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot %s %s: %s would wait for it before it is issued after %s", doing,
                    ssim_plan_op_label(p, op, a, sizeof a),
                    ssim_plan_op_label(p, wait, b, sizeof b), ssim_plan_op(p, issue)->name);
        return FALSE;
    }
    if (program != SSIM_NONE &&
        (program >= p->programs->len || ssim_plan_program_rank(p, program) != o->rank)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot %s %s: its program is not a program of rank %u", doing,
                    ssim_plan_op_label(p, op, a, sizeof a), o->rank);
        return FALSE;
    }
    guint32 ip = issue == SSIM_NONE ? SSIM_NONE : ssim_plan_op(p, issue)->program;
    guint32 wp = wait == SSIM_NONE ? SSIM_NONE : ssim_plan_op(p, wait)->program;
    gboolean late_issue = ssim_plan_program_before(p, program, ip);
    if (late_issue || ssim_plan_program_before(p, wp, program)) {
        guint32 pt = late_issue ? issue : wait;
        g_set_error(
            error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
            "place: cannot %s %s into program %s: its %s point %s runs in program %s, "
            "which runs %s it",
            doing, ssim_plan_op_label(p, op, a, sizeof a), ssim_plan_program_name(p, program),
            late_issue ? "issue" : "wait", ssim_plan_op_label(p, pt, b, sizeof b),
            ssim_plan_program_name(p, late_issue ? ip : wp), late_issue ? "after" : "before");
        return FALSE;
    }
    return TRUE;
}

/* ---- the lowering's points and marks ----------------------------------------------------- */

/* The lowering describes an op before any placement moves it: FALSE once one has. */
static gboolean not_placed(const SsimPlan *p, guint32 op, const char *doing, GError **error)
{
    const SsimPlanOp *o = ssim_plan_op(p, op);
    if (o->issue == o->issue0 && o->wait == o->wait0 && o->program == o->program0 &&
        !(o->flags & SSIM_PLAN_SPLIT))
        return TRUE;
    char a[96];
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "place: cannot %s %s: a placement has moved it (the lowering describes an op "
                "before any placement)",
                doing, ssim_plan_op_label(p, op, a, sizeof a));
    return FALSE;
}

gboolean ssim_plan_set_lowered_issue(SsimPlan *p, guint32 op, guint32 issue, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    const char *doing = "set the lowering's points of";
    if (!not_placed(p, op, doing, error) ||
        !points_are_legal(p, op, issue, ssim_plan_op(p, op)->wait0, ssim_plan_op(p, op)->program0,
                          doing, error))
        return FALSE;
    SsimPlanOp *o = op_at(p, op);
    o->issue = o->issue0 = issue;
    return TRUE;
}

gboolean ssim_plan_set_lowered_wait(SsimPlan *p, guint32 op, guint32 wait, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    const char *doing = "set the lowering's points of";
    if (!not_placed(p, op, doing, error) ||
        !points_are_legal(p, op, ssim_plan_op(p, op)->issue0, wait, ssim_plan_op(p, op)->program0,
                          doing, error))
        return FALSE;
    SsimPlanOp *o = op_at(p, op);
    o->wait = o->wait0 = wait;
    return TRUE;
}

gboolean ssim_plan_set_lowered_program(SsimPlan *p, guint32 op, guint32 program, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    const char *doing = "set the lowering's program of";
    const SsimPlanOp *o = ssim_plan_op(p, op);
    if (!not_placed(p, op, doing, error))
        return FALSE;
    if (o->kind != SSIM_OP_COMPUTE &&
        !points_are_legal(p, op, o->issue0, o->wait0, program, doing, error))
        return FALSE;
    if (program != SSIM_NONE &&
        (program >= p->programs->len || ssim_plan_program_rank(p, program) != o->rank)) {
        char a[96];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot %s %s: its program is not a program of rank %u", doing,
                    ssim_plan_op_label(p, op, a, sizeof a), o->rank);
        return FALSE;
    }
    SsimPlanOp *m = op_at(p, op);
    m->program = m->program0 = program;
    return TRUE;
}

gboolean ssim_plan_mark_gradient(SsimPlan *p, guint32 op, guint32 site, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    const SsimPlanOp *o = ssim_plan_op(p, op);
    const char *why = o->kind != SSIM_OP_COLLECTIVE  ? "it is not a collective"
                      : o->coll == SSIM_COLL_PERMUTE ? "it is a collective-permute"
                      : site == SSIM_NONE            ? "it has no gradient site"
                                                     : NULL;
    if (why != NULL) {
        char a[96];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: %s cannot be a gradient piece: %s",
                    ssim_plan_op_label(p, op, a, sizeof a), why);
        return FALSE;
    }
    if (!not_placed(p, op, "mark as a gradient piece", error))
        return FALSE;
    SsimPlanOp *m = op_at(p, op);
    m->flags |= SSIM_PLAN_FUSABLE;
    m->site = site;
    p->dirty = TRUE; /* ssim_plan_site_last */
    return TRUE;
}

gboolean ssim_plan_mark_permute(SsimPlan *p, guint32 op, guint32 slot, guint32 send_peer,
                                guint32 recv_peer, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    const SsimPlanOp *o = ssim_plan_op(p, op);
    const char *why = o->kind != SSIM_OP_COLLECTIVE || o->coll != SSIM_COLL_PERMUTE
                          ? "it is not a collective-permute"
                      : send_peer == o->rank || recv_peer == o->rank
                          ? "its split form would exchange with its own rank"
                          : NULL;
    if (why != NULL) {
        char a[96];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: %s cannot be a lock-step permute: %s",
                    ssim_plan_op_label(p, op, a, sizeof a), why);
        return FALSE;
    }
    if (!not_placed(p, op, "mark as a lock-step permute", error))
        return FALSE;
    SsimPlanOp *m = op_at(p, op);
    m->flags |= SSIM_PLAN_PERMUTE;
    m->site = slot;
    m->send_peer = send_peer;
    m->recv_peer = recv_peer;
    p->dirty = TRUE; /* ssim_plan_last_permute */
    return TRUE;
}

/* ---- queries ----------------------------------------------------------------------------- */

guint32 ssim_plan_n_ops(const SsimPlan *p)
{
    return p->ops->len;
}

guint32 ssim_plan_n_ranks(const SsimPlan *p)
{
    return p->kernels->len;
}

const SsimPlanOp *ssim_plan_op(const SsimPlan *p, guint32 op)
{
    g_return_val_if_fail(op < p->ops->len, NULL);
    return &g_array_index(p->ops, SsimPlanOp, op);
}

gboolean ssim_plan_is_comm(const SsimPlan *p, guint32 op)
{
    return ssim_plan_op(p, op)->kind != SSIM_OP_COMPUTE;
}

guint32 ssim_plan_find_group(const SsimPlan *p, const char *name)
{
    for (guint i = 0; i < p->groups->len; i++)
        if (strcmp(g_array_index(p->groups, Group, i).name, name) == 0)
            return i;
    return SSIM_NONE;
}

const char *ssim_plan_group_name(const SsimPlan *p, guint32 group)
{
    g_return_val_if_fail(group < p->groups->len, "?");
    return g_array_index(p->groups, Group, group).name;
}

void plan_csr(const GArray *pairs, gboolean by_consumer, guint32 n, GArray *first, GArray *list)
{
    g_array_set_size(first, n + 1);
    ssim_mem_advise(first->data, (gsize)(n + 1) * sizeof(guint32));
    guint32 *f = (guint32 *)first->data;
    memset(f, 0, (n + 1) * sizeof(guint32));
    for (guint i = 0; i < pairs->len; i++) {
        const Pair *pr = &g_array_index(pairs, Pair, i);
        f[(by_consumer ? pr->b : pr->a) + 1]++;
    }
    for (guint32 i = 0; i < n; i++)
        f[i + 1] += f[i];
    g_array_set_size(list, pairs->len);
    ssim_mem_advise(list->data, (gsize)pairs->len * sizeof(guint32));
    g_autofree guint32 *fill = ssim_memdup_large(f, n * sizeof(guint32));
    for (guint i = 0; i < pairs->len; i++) {
        const Pair *pr = &g_array_index(pairs, Pair, i);
        guint32 key = by_consumer ? pr->b : pr->a;
        g_array_index(list, guint32, fill[key]++) = by_consumer ? pr->a : pr->b;
    }
}

void plan_refresh_producers(const SsimPlan *cp)
{
    SsimPlan *p = (SsimPlan *)cp; /* the caches are logically const */
    if (!p->dirty_producers)
        return;
    plan_csr(p->data, TRUE, p->ops->len, p->pfirst, p->pl);
    p->dirty_producers = FALSE;
}

static void refresh(const SsimPlan *cp)
{
    SsimPlan *p = (SsimPlan *)cp; /* the caches are logically const */
    if (!p->dirty)
        return;
    plan_refresh_producers(p);
    plan_csr(p->data, FALSE, p->ops->len, p->cfirst, p->cl);
    /* Last producer of each gradient site (rank, site), for ssim_plan_site_last. */
    g_autoptr(GHashTable) last = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GArray) keys = ssim_array_new_large(sizeof(gint64), p->ops->len);
    g_array_set_size(keys, p->ops->len);
    g_array_set_size(p->site_last, p->ops->len);
    ssim_mem_advise(p->site_last->data, (gsize)p->ops->len * sizeof(guint32));
    for (guint32 i = 0; i < p->ops->len; i++) {
        const SsimPlanOp *o = &g_array_index(p->ops, SsimPlanOp, i);
        g_array_index(p->site_last, guint32, i) = SSIM_NONE;
        g_array_index(keys, gint64, i) = ((gint64)o->rank << 32) | o->site;
        if (o->site == SSIM_NONE || !(o->flags & SSIM_PLAN_FUSABLE))
            continue;
        gint64 *key = &g_array_index(keys, gint64, i);
        guint32 best = GPOINTER_TO_UINT(g_hash_table_lookup(last, key));
        const guint32 *f = (const guint32 *)p->pfirst->data;
        for (guint32 k = f[i]; k < f[i + 1]; k++) {
            guint32 pr = g_array_index(p->pl, guint32, k);
            if (ssim_plan_op(p, pr)->rank == o->rank && pr + 1 > best)
                best = pr + 1;
        }
        g_hash_table_insert(last, key, GUINT_TO_POINTER(best));
    }
    for (guint32 i = 0; i < p->ops->len; i++) {
        const SsimPlanOp *o = &g_array_index(p->ops, SsimPlanOp, i);
        if (o->site == SSIM_NONE || !(o->flags & SSIM_PLAN_FUSABLE))
            continue;
        guint32 best = GPOINTER_TO_UINT(g_hash_table_lookup(last, &g_array_index(keys, gint64, i)));
        g_array_index(p->site_last, guint32, i) = best ? best - 1 : SSIM_NONE;
    }
    g_array_set_size(p->last_permute, p->kernels->len);
    for (guint r = 0; r < p->kernels->len; r++)
        g_array_index(p->last_permute, guint32, r) = SSIM_NONE;
    for (guint32 i = 0; i < p->ops->len; i++) {
        const SsimPlanOp *o = &g_array_index(p->ops, SsimPlanOp, i);
        if (o->flags & SSIM_PLAN_PERMUTE)
            g_array_index(p->last_permute, guint32, o->rank) = i;
    }
    p->dirty = FALSE;
}

const guint32 *ssim_plan_producers(const SsimPlan *p, guint32 op, guint *n)
{
    plan_refresh_producers(p);
    const guint32 *f = (const guint32 *)p->pfirst->data;
    *n = f[op + 1] - f[op];
    return &g_array_index(p->pl, guint32, f[op]);
}

const guint32 *ssim_plan_consumers(const SsimPlan *p, guint32 op, guint *n)
{
    refresh(p);
    const guint32 *f = (const guint32 *)p->cfirst->data;
    *n = f[op + 1] - f[op];
    return &g_array_index(p->cl, guint32, f[op]);
}

guint32 ssim_plan_next_kernel(const SsimPlan *p, guint32 rank, guint32 after)
{
    if (rank >= p->kernels->len)
        return SSIM_NONE;
    const GArray *k = g_ptr_array_index(p->kernels, rank);
    guint lo = 0, hi = k->len;
    while (lo < hi) {
        guint mid = (lo + hi) / 2;
        if (after != SSIM_NONE && g_array_index(k, guint32, mid) <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->len ? g_array_index(k, guint32, lo) : SSIM_NONE;
}

guint32 ssim_plan_last_kernel(const SsimPlan *p, guint32 rank, guint8 cls)
{
    if (rank >= p->kernels->len)
        return SSIM_NONE;
    const GArray *k = g_ptr_array_index(p->kernels, rank);
    for (guint i = k->len; i-- > 0;) {
        guint32 op = g_array_index(k, guint32, i);
        if (ssim_plan_op(p, op)->cls == cls)
            return op;
    }
    return SSIM_NONE;
}

guint32 ssim_plan_site_last(const SsimPlan *p, guint32 op)
{
    g_return_val_if_fail(op < p->ops->len, SSIM_NONE);
    refresh(p);
    return g_array_index(p->site_last, guint32, op);
}

guint32 ssim_plan_last_permute(const SsimPlan *p, guint32 rank)
{
    refresh(p);
    return rank < p->last_permute->len ? g_array_index(p->last_permute, guint32, rank) : SSIM_NONE;
}

const char *ssim_plan_op_label(const SsimPlan *p, guint32 op, char *buf, gsize size)
{
    if (op == SSIM_NONE) {
        g_strlcpy(buf, "(none)", size);
        return buf;
    }
    const SsimPlanOp *o = ssim_plan_op(p, op);
    g_snprintf(buf, size, "%s#%u (rank %u)", o->name, op, o->rank);
    return buf;
}

/* ---- changed by a placement pass --------------------------------------------------------- */

void ssim_plan_reset(SsimPlan *p)
{
    for (guint32 i = 0; i < p->ops->len; i++) {
        SsimPlanOp *o = op_at(p, i);
        o->issue = o->issue0;
        o->wait = o->wait0;
        o->program = o->program0;
        o->flags &= (guint8)~SSIM_PLAN_SPLIT;
    }
}

/* The checked move of both primitives: `op` into `program` with `issue` and `wait`. */
static gboolean move_to(SsimPlan *p, guint32 op, guint32 program, guint32 issue, guint32 wait,
                        GError **error)
{
    const SsimPlanOp *at = ssim_plan_op(p, op);
    /* A move that changes nothing is no move: points a move set were checked then, and the
     * lowering's own are proved with every other dependency when the graph is built
     * (ssim_plan_build's check). */
    if (at->kind != SSIM_OP_COMPUTE && at->issue == issue && at->wait == wait &&
        at->program == program)
        return TRUE;
    if (!points_are_legal(p, op, issue, wait, program, "move", error))
        return FALSE;
    char a[96], b[96];
    const SsimPlanOp *o = ssim_plan_op(p, op);
    guint n;
    const guint32 *prod = ssim_plan_producers(p, op, &n);
    for (guint i = 0; i < n; i++) {
        if (!same_rank_kernel(p, prod[i], o->rank))
            continue;
        /* A producer in an earlier program has finished before this program starts. */
        if (ssim_plan_program_before(p, ssim_plan_op(p, prod[i])->program, program))
            continue;
        if (issue == SSIM_NONE || prod[i] > issue) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: cannot move %s to issue after %s: it needs the output of %s, "
                        "which runs later",
                        ssim_plan_op_label(p, op, a, sizeof a),
                        issue == SSIM_NONE ? "the start" : ssim_plan_op(p, issue)->name,
                        ssim_plan_op_label(p, prod[i], b, sizeof b));
            return FALSE;
        }
    }
    const guint32 *cons = ssim_plan_consumers(p, op, &n);
    for (guint i = 0; i < n; i++) {
        if (!same_rank_kernel(p, cons[i], o->rank))
            continue;
        /* A consumer in a later program starts after this program has finished. */
        if (ssim_plan_program_before(p, program, ssim_plan_op(p, cons[i])->program))
            continue;
        if (wait == SSIM_NONE || wait > cons[i]) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: cannot move the wait for %s to %s: %s reads its result earlier",
                        ssim_plan_op_label(p, op, a, sizeof a),
                        wait == SSIM_NONE ? "nowhere" : ssim_plan_op(p, wait)->name,
                        ssim_plan_op_label(p, cons[i], b, sizeof b));
            return FALSE;
        }
    }
    SsimPlanOp *m = op_at(p, op);
    m->issue = issue;
    m->wait = wait;
    m->program = program;
    return TRUE;
}

gboolean ssim_plan_move(SsimPlan *p, guint32 op, guint32 issue, guint32 wait, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    return move_to(p, op, ssim_plan_op(p, op)->program, issue, wait, error);
}

gboolean ssim_plan_move_program(SsimPlan *p, guint32 op, guint32 program, guint32 issue,
                                guint32 wait, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    return move_to(p, op, program, issue, wait, error);
}

gboolean ssim_plan_split(SsimPlan *p, guint32 op, gboolean split, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    SsimPlanOp *o = op_at(p, op);
    if (!(o->flags & SSIM_PLAN_PERMUTE)) {
        char a[96];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot split %s: only a lock-step permute has a send/receive form",
                    ssim_plan_op_label(p, op, a, sizeof a));
        return FALSE;
    }
    if (split)
        o->flags |= SSIM_PLAN_SPLIT;
    else
        o->flags &= (guint8)~SSIM_PLAN_SPLIT;
    return TRUE;
}

guint64 ssim_plan_extra_bytes(const SsimPlan *p)
{
    guint nr = ssim_plan_n_ranks(p);
    g_autofree guint64 *tp = g_new0(guint64, nr + 1);
    g_autofree guint64 *pp = g_new0(guint64, nr + 1);
    for (guint32 i = 0; i < p->ops->len; i++) {
        const SsimPlanOp *o = ssim_plan_op(p, i);
        if (o->kind == SSIM_OP_COMPUTE)
            continue;
        if (o->flags & SSIM_PLAN_SPLIT)
            pp[o->rank] = MAX(pp[o->rank], o->bytes);
        gboolean later = o->wait0 != SSIM_NONE && (o->wait == SSIM_NONE || o->wait > o->wait0);
        if (later && o->cls == SSIM_OPCLASS_TP)
            tp[o->rank] = MAX(tp[o->rank], o->bytes);
    }
    guint64 best = 0;
    for (guint r = 0; r < nr; r++)
        best = MAX(best, tp[r] + pp[r]);
    return best;
}
