/*
 * Building the graph of a plan's current placement, and proving it (include/shiftsim/plan.h).
 *
 * The builder realises plan ops in issue order (a counting sort on each op's anchor: its issue
 * point, or itself), so a communication op follows the op that issues it on its stream.  A run
 * of like gradient pieces with the same points and program on one stream becomes one graph op
 * carrying the sum of their bytes; a split permute becomes a send and/or a receive, only where a
 * microbatch flows.  The plan's programs become the graph's, created up front in the plan's
 * order so that each rank dispatches them in the order the lowering made them, and every graph op
 * goes into its plan op's current program.  Explicit dependencies come from wait points (on the
 * waiting kernel), issue points, order edges and same-rank communication producers, nothing else;
 * stream order and the collective / send-receive matching are the graph's own.
 *
 * The checker is a breadth-first search per data dependency from the producer's last graph op,
 * over successor edges and matching edges (members of one collective instance, the two ends of a
 * send/receive), stopping at the consumer; with programs, reaching an op whose program runs before
 * the consumer's on the same rank also proves the dependency (in-order dispatch), and so does a
 * producer in such a program, without a search.  Almost every dependency is a few hops long, so the
 * check costs about one pass over the ops; a pathological plan costs O(ops) per dependency.  It
 * does not trust the setters of plan.c: whatever they let through, a graph that breaks a data
 * dependency is refused by name.
 */
#include "src/workload/plan-private.h"

#include <shiftsim/alloc.h>
#include <shiftsim/opclass.h>

#include <string.h>

/* ---- building ---------------------------------------------------------------------------- */

typedef enum { PART_WHOLE, PART_SEND, PART_RECV } Part;

typedef struct {
    guint32 plan;  /* first plan op */
    guint8 part;   /* Part */
    guint64 bytes; /* summed over a fused run */
    guint32 last;  /* last plan op of a fused run */
} Real;

/*
 * The order graph ops are created in: plan ops by (anchor, index), where a communication's
 * anchor is its issue point and any other op's is itself, so a communication follows the kernel
 * that issues it.  A communication moved into a later program than its issue point's (a gradient
 * all-reduce moved into apply_grad) is anchored at its program's first op instead: it runs at the
 * program's start, and on its stream it must come after the ops of the earlier programs, or a
 * program would wait for a later one.  A counting sort on the anchor, stable in the index: O(n),
 * no comparisons.
 */
static inline guint32 anchor_of(const SsimPlan *p, const guint32 *prog_first, guint32 i)
{
    const SsimPlanOp *o = ssim_plan_op(p, i);
    if (o->kind == SSIM_OP_COMPUTE || o->issue == SSIM_NONE)
        return i;
    if (o->program != SSIM_NONE && ssim_plan_op(p, o->issue)->program != o->program &&
        prog_first[o->program] != SSIM_NONE && prog_first[o->program] > o->issue)
        return prog_first[o->program];
    return o->issue;
}

static guint32 *issue_order(const SsimPlan *p, guint32 n)
{
    /* Each program's first op (its lowest index among kernels and ops lowered into it). */
    guint np = p->programs->len;
    g_autofree guint32 *prog_first = g_new(guint32, MAX(np, 1));
    for (guint k = 0; k < np; k++)
        prog_first[k] = SSIM_NONE;
    for (guint32 i = 0; np > 0 && i < n; i++) {
        guint32 q = ssim_plan_op(p, i)->program0;
        if (q != SSIM_NONE && prog_first[q] == SSIM_NONE)
            prog_first[q] = i;
    }
    g_autofree guint32 *first = ssim_new0_large(guint32, (gsize)n + 1);
    g_autofree guint32 *anchor = ssim_new_large(guint32, MAX(n, 1));
    for (guint32 i = 0; i < n; i++) {
        anchor[i] = anchor_of(p, prog_first, i);
        first[anchor[i] + 1]++;
    }
    for (guint32 a = 0; a < n; a++)
        first[a + 1] += first[a];
    guint32 *order = ssim_new_large(guint32, MAX(n, 1));
    for (guint32 i = 0; i < n; i++)
        order[first[anchor[i]]++] = i;
    return order;
}

/* The graph's string ids of strings with static storage or interned with g_intern_string (the
 * address names the string for the run): a direct-mapped cache in front of a table by address,
 * so each label is hashed once per graph and most ops find theirs in one probe. */
typedef struct {
    GHashTable *by_address;
    struct {
        const char *s;
        guint32 id;
    } slot[256];
} StringIds;

/* The slow path of string_id(): the table by address, or a new string of the graph. */
static G_GNUC_NO_INLINE guint32 string_id_miss(StringIds *ids, SsimGraph *g, const char *s, guint k)
{
    gpointer v = g_hash_table_lookup(ids->by_address, s);
    guint32 id;
    if (v != NULL) {
        id = GPOINTER_TO_UINT(v) - 1;
    } else {
        id = ssim_graph_intern(g, s);
        g_hash_table_insert(ids->by_address, (gpointer)s, GUINT_TO_POINTER(id + 1));
    }
    ids->slot[k].s = s;
    ids->slot[k].id = id;
    return id;
}

static inline guint32 string_id(StringIds *ids, SsimGraph *g, const char *s)
{
    guint k = plan_pointer_slot(s, G_N_ELEMENTS(ids->slot));
    if (G_LIKELY(ids->slot[k].s == s))
        return ids->slot[k].id;
    return string_id_miss(ids, g, s, k);
}

static void push_dep(GArray *deps, gsize *room, guint32 d)
{
    if (d == SSIM_NONE)
        return;
    for (guint i = 0; i < deps->len; i++)
        if (g_array_index(deps, guint32, i) == d)
            return;
    *(guint32 *)ssim_array_push(deps, room, sizeof d, 1) = d;
}

SsimGraph *ssim_plan_build(const SsimPlan *p, GArray **class_out, GArray **plan_out, GError **error)
{
    plan_refresh_producers(p);
    guint32 n = p->ops->len;
    g_autofree guint32 *order = issue_order(p, n);

    /* Realisation: one graph op per plan op, except fused runs and split permutes. */
    g_autofree guint32 *head = ssim_new_large(guint32, n);
    g_autofree guint32 *tail = ssim_new_large(guint32, n);
    g_autoptr(GArray) real = ssim_array_new_large(sizeof(Real), n);
    gsize real_room = n;
    g_autofree guint32 *last_on_stream = g_new(guint32, p->streams->len + 1);
    for (guint i = 0; i <= p->streams->len; i++)
        last_on_stream[i] = SSIM_NONE;
    for (guint k = 0; k < n; k++) {
        guint32 i = order[k];
        const SsimPlanOp *o = ssim_plan_op(p, i);
        head[i] = tail[i] = SSIM_NONE;
        if ((o->flags & SSIM_PLAN_PERMUTE) && (o->flags & SSIM_PLAN_SPLIT)) {
            if (o->send_peer != SSIM_NONE) {
                *(Real *)ssim_array_push(real, &real_room, sizeof(Real), 1) =
                    (Real){i, PART_SEND, o->bytes, i};
                head[i] = real->len - 1;
            }
            if (o->recv_peer != SSIM_NONE) {
                *(Real *)ssim_array_push(real, &real_room, sizeof(Real), 1) =
                    (Real){i, PART_RECV, o->bytes, i};
                tail[i] = real->len - 1;
            }
            continue;
        }
        guint32 prev = last_on_stream[o->stream];
        if ((o->flags & SSIM_PLAN_FUSABLE) && prev != SSIM_NONE) {
            Real *r = &g_array_index(real, Real, prev);
            const SsimPlanOp *q = ssim_plan_op(p, r->last);
            if (r->part == PART_WHOLE && (q->flags & SSIM_PLAN_FUSABLE) && q->issue == o->issue &&
                q->wait == o->wait && q->group == o->group && q->coll == o->coll &&
                q->name == o->name && q->kind == o->kind && q->program == o->program) {
                r->bytes += o->bytes;
                r->last = i;
                head[i] = tail[i] = prev;
                continue;
            }
        }
        *(Real *)ssim_array_push(real, &real_room, sizeof(Real), 1) =
            (Real){i, PART_WHOLE, o->bytes, i};
        head[i] = tail[i] = real->len - 1;
        last_on_stream[o->stream] = real->len - 1;
    }

    /* Waiters per kernel. */
    g_autoptr(GArray) wfirst = g_array_new(FALSE, TRUE, sizeof(guint32));
    g_autoptr(GArray) wlist = g_array_new(FALSE, FALSE, sizeof(guint32));
    {
        g_autoptr(GArray) pairs = g_array_new(FALSE, FALSE, sizeof(Pair));
        for (guint32 i = 0; i < n; i++) {
            const SsimPlanOp *o = ssim_plan_op(p, i);
            if (o->kind != SSIM_OP_COMPUTE && o->wait != SSIM_NONE) {
                Pair pr = {i, o->wait};
                g_array_append_val(pairs, pr);
            }
        }
        plan_csr(pairs, TRUE, n, wfirst, wlist);
    }
    g_autoptr(GArray) ofirst = g_array_new(FALSE, TRUE, sizeof(guint32));
    g_autoptr(GArray) olist = g_array_new(FALSE, FALSE, sizeof(guint32));
    plan_csr(p->order, TRUE, n, ofirst, olist);

    g_autoptr(SsimGraph) g = ssim_graph_new();
    ssim_graph_reserve(g, real->len, real->len * 2);
    /* Streams are created at their first op, so a stream a placement emptied (the permute
     * stream of a split pipeline) does not appear in the graph. */
    g_autofree guint32 *gstream = g_new(guint32, p->streams->len + 1);
    for (guint i = 0; i <= p->streams->len; i++)
        gstream[i] = SSIM_NONE;
    for (guint i = 0; i < p->groups->len; i++) {
        const Group *gr = &g_array_index(p->groups, Group, i);
        if (ssim_graph_add_group(g, gr->name, &g_array_index(p->group_ranks, guint32, gr->first),
                                 gr->n, error) == SSIM_NONE) {
            g_prefix_error(error, "place: ");
            return NULL;
        }
    }
    /* The programs, in the plan's order (each rank's in the order the lowering made them). */
    g_autofree guint32 *gprog = g_new(guint32, MAX(p->programs->len, 1));
    for (guint i = 0; i < p->programs->len; i++) {
        const Program *pr = &g_array_index(p->programs, Program, i);
        gprog[i] = ssim_graph_program(g, pr->rank, pr->name);
    }
    GArray *cls = ssim_array_new_large(sizeof(guint8), real->len);
    GArray *pof = ssim_array_new_large(sizeof(guint32), real->len);
    gsize cls_room = real->len, pof_room = real->len, deps_room = 0;
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(guint32));
    g_autoptr(GHashTable) by_address = g_hash_table_new(g_direct_hash, g_direct_equal);
    StringIds ids = {.by_address = by_address};
    const guint32 *wf = (const guint32 *)wfirst->data, *of = (const guint32 *)ofirst->data;
    const guint32 *pf = (const guint32 *)p->pfirst->data;
    for (guint ri = 0; ri < real->len; ri++) {
        const Real *r = &g_array_index(real, Real, ri);
        const SsimPlanOp *o = ssim_plan_op(p, r->plan);
        SsimOpSpec spec = SSIM_OP_SPEC_INIT;
        spec.kind = o->kind;
        spec.coll = o->coll;
        deps->len = 0; /* keeps the room (ssim_array_push) */
        if (r->part == PART_WHOLE) {
            const Stream *st = &g_array_index(p->streams, Stream, o->stream);
            if (gstream[o->stream] == SSIM_NONE)
                gstream[o->stream] = ssim_graph_stream(g, st->rank, st->name);
            spec.stream = gstream[o->stream];
            spec.group = o->group;
            spec.peer = o->peer;
            spec.tag = o->tag;
        } else {
            spec.kind = r->part == PART_SEND ? SSIM_OP_SEND : SSIM_OP_RECV;
            spec.stream =
                ssim_graph_stream(g, o->rank, r->part == PART_SEND ? "pp.send" : "pp.recv");
            spec.peer = r->part == PART_SEND ? o->send_peer : o->recv_peer;
            spec.tag = o->site;
        }
        spec.name = r->part == PART_WHOLE ? o->name : r->part == PART_SEND ? "pp.send" : "pp.recv";
        spec.cls = ssim_opclass_name((SsimOpClass)o->cls);
        spec.duration = o->duration;
        spec.bytes = r->bytes;
        spec.flops = o->flops;
        /* Every plan op of a fused run contributes its edges. */
        for (guint32 k = r->plan;; k++) {
            const SsimPlanOp *q = ssim_plan_op(p, k);
            if (k != r->plan && head[k] != ri)
                goto next_member;
            if (q->kind == SSIM_OP_COMPUTE) {
                for (guint32 w = wf[k]; w < wf[k + 1]; w++)
                    push_dep(deps, &deps_room, tail[g_array_index(wlist, guint32, w)]);
                for (guint32 w = of[k]; w < of[k + 1]; w++)
                    push_dep(deps, &deps_room, tail[g_array_index(olist, guint32, w)]);
            } else if (r->part != PART_RECV) {
                if ((q->flags & SSIM_PLAN_ISSUE_DEP) && q->issue != SSIM_NONE)
                    push_dep(deps, &deps_room, tail[q->issue]);
                if (r->part == PART_WHOLE)
                    for (guint32 w = of[k]; w < of[k + 1]; w++)
                        push_dep(deps, &deps_room, tail[g_array_index(olist, guint32, w)]);
                for (guint32 w = pf[k]; w < pf[k + 1]; w++) {
                    guint32 pr = g_array_index(p->pl, guint32, w);
                    const SsimPlanOp *po = ssim_plan_op(p, pr);
                    if (po->rank == q->rank && po->kind != SSIM_OP_COMPUTE)
                        push_dep(deps, &deps_room, tail[pr]);
                }
            }
        next_member:
            if (k == r->last)
                break;
        }
        /* A fused op never depends on itself. */
        for (guint d = 0; d < deps->len;)
            if (g_array_index(deps, guint32, d) == ri)
                g_array_remove_index(deps, d);
            else
                d++;
        /* The class first, then the label: the order ssim_graph_add_op interns them in. */
        guint32 cls_id = string_id(&ids, g, spec.cls);
        guint32 gi = ssim_graph_add_op_ids(g, &spec, string_id(&ids, g, spec.name), cls_id,
                                           (const guint32 *)deps->data, deps->len);
        if (r->part == PART_WHOLE && o->program != SSIM_NONE)
            ssim_graph_set_program(g, gi, gprog[o->program]);
        *(guint8 *)ssim_array_push(cls, &cls_room, 1, 1) = o->cls;
        *(guint32 *)ssim_array_push(pof, &pof_room, sizeof(guint32), 1) = r->plan;
    }
    gboolean ok = ssim_graph_finalize(g, error);
    if (!ok)
        g_prefix_error(error, "place: the placed graph is illegal: ");
    else
        ok = ssim_plan_check(p, g, head, tail, error);
    if (!ok) {
        g_array_free(cls, TRUE);
        g_array_free(pof, TRUE);
        return NULL;
    }
    if (class_out)
        *class_out = cls;
    else
        g_array_free(cls, TRUE);
    if (plan_out)
        *plan_out = pof;
    else
        g_array_free(pof, TRUE);
    return g_steal_pointer(&g);
}

/* ---- checking ---------------------------------------------------------------------------- */

/*
 * Whether `to` waits for `from` through the stream `from` runs on: `to` is later on that stream,
 * or depends on an op that is (a collective issued from a compute op after the one that produced
 * its data: the common case, answered here without searching the graph between them).  Ids
 * ascend along a stream (ssim_graph_finalize orders each stream by id).
 */
static gboolean follows_on_stream(const SsimGraph *g, const SsimOp *ops, guint32 from, guint32 to)
{
    guint32 stream = ops[from].stream;
    if (ops[to].stream == stream)
        return to > from;
    guint nd;
    const guint32 *d = ssim_graph_deps(g, to, &nd);
    for (guint j = 0; j < nd; j++)
        if (d[j] == from || (ops[d[j]].stream == stream && d[j] > from))
            return TRUE;
    return FALSE;
}

gboolean ssim_plan_check(const SsimPlan *p, const SsimGraph *g, const guint32 *head,
                         const guint32 *tail, GError **error)
{
    g_return_val_if_fail(ssim_graph_is_finalized(g), FALSE);
    guint32 n = ssim_graph_n_ops(g);
    const guint32 *first, *succs, *mfirst, *mops, *mexp;
    ssim_graph_successor_csr(g, &first, &succs);
    ssim_graph_match_csr(g, &mfirst, &mops, &mexp);
    const SsimOp *ops = ssim_graph_ops(g);
    g_autofree guint32 *stamp = g_new0(guint32, n);
    g_autoptr(GArray) queue = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 round = 0;
    char a[96], b[96];
    /* Graph op -> plan program, for the in-order dispatch rule. */
    g_autofree guint32 *gprog = NULL;
    if (p->programs->len > 0) {
        gprog = g_new(guint32, MAX(n, 1));
        memset(gprog, 0xff, sizeof(guint32) * MAX(n, 1));
        for (guint32 k = 0; k < p->ops->len; k++) {
            guint32 prog = ssim_plan_op(p, k)->program;
            if (head[k] != SSIM_NONE && !(ssim_plan_op(p, k)->flags & SSIM_PLAN_SPLIT))
                gprog[head[k]] = prog;
        }
    }
    for (guint i = 0; i < p->data->len; i++) {
        const Pair *pr = &g_array_index(p->data, Pair, i);
        guint32 from = tail[pr->a], to = head[pr->b];
        if (gprog != NULL && from != SSIM_NONE && to != SSIM_NONE &&
            ssim_plan_program_before(p, gprog[from], gprog[to]))
            continue; /* in-order dispatch */
        if (from == SSIM_NONE || to == SSIM_NONE) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: %s needs %s, but the placement realises no transfer between them",
                        ssim_plan_op_label(p, pr->b, b, sizeof b),
                        ssim_plan_op_label(p, pr->a, a, sizeof a));
            return FALSE;
        }
        if (from == to || follows_on_stream(g, ops, from, to))
            continue;
        round++;
        g_array_set_size(queue, 0);
        g_array_append_val(queue, from);
        stamp[from] = round;
        gboolean found = FALSE;
        for (guint q = 0; q < queue->len && !found; q++) {
            guint32 u = g_array_index(queue, guint32, q);
            /* Successors, then the partners of u's match (they end together with u). */
            for (int pass = 0; pass < 2 && !found; pass++) {
                const guint32 *list;
                guint32 len;
                if (pass == 0) {
                    list = succs + first[u];
                    len = first[u + 1] - first[u];
                } else {
                    if (ops[u].kind == SSIM_OP_COMPUTE || ops[u].match == SSIM_NONE)
                        break;
                    list = mops + mfirst[ops[u].match];
                    len = mfirst[ops[u].match + 1] - mfirst[ops[u].match];
                }
                for (guint32 s = 0; s < len; s++) {
                    guint32 v = list[s];
                    if (v == to ||
                        (gprog != NULL && ssim_plan_program_before(p, gprog[v], gprog[to]))) {
                        found = TRUE;
                        break;
                    }
                    if (stamp[v] != round) {
                        stamp[v] = round;
                        g_array_append_val(queue, v);
                    }
                }
            }
        }
        if (!found) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: the placed graph breaks a data dependency: %s no longer waits "
                        "for %s",
                        ssim_plan_op_label(p, pr->b, b, sizeof b),
                        ssim_plan_op_label(p, pr->a, a, sizeof a));
            return FALSE;
        }
    }
    return TRUE;
}
