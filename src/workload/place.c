/*
 * The placement plan, its legality rules, the graph builder and checker, the critical path and
 * the policy registry (see include/shiftsim/place.h for the model).
 *
 * Invariants.  Plan ops of one rank are stored in issue order and their indices are that order,
 * so "kernel a runs before kernel b of the same rank" is a < b.  Only communication ops have
 * issue and wait points; kernels never move.  A data dependency is realised in the graph by one
 * of: stream order (two kernels of a rank), the consumer's issue point (kernel -> communication),
 * the producer's wait point (communication -> kernel), an explicit edge (communication ->
 * communication on one rank) or the collective / send-receive matching (across ranks).  The
 * legality rule of ssim_plan_move() is exactly what makes the first three hold; the checker does
 * not trust it and searches the built graph.
 *
 * The checker is a breadth-first search per data dependency from the producer's last graph op,
 * over successor edges and matching edges (members of one collective instance, the two ends of a
 * send/receive), stopping at the consumer.  Almost every dependency is a few hops long, so the
 * check costs about one pass over the ops; a pathological plan costs O(ops) per dependency.
 */
#include <shiftsim/alloc.h>
#include <shiftsim/lower.h>
#include <shiftsim/place.h>

#include <string.h>

/* ---- shifts ------------------------------------------------------------------------------ */

static const char *const shift_names[] = {"dp", "pp", "tp"};

gboolean ssim_shift_parse(const char *list, guint *mask, GError **error)
{
    guint m = 0;
    g_auto(GStrv) words = g_strsplit(list ? list : "", ",", -1);
    for (guint i = 0; words[i]; i++) {
        const char *w = g_strstrip(words[i]);
        if (*w == '\0')
            continue;
        if (strcmp(w, "all") == 0) {
            m |= SSIM_SHIFT_ALL;
            continue;
        }
        if (strcmp(w, "none") == 0)
            continue;
        gboolean found = FALSE;
        for (guint k = 0; k < G_N_ELEMENTS(shift_names); k++)
            if (strcmp(w, shift_names[k]) == 0) {
                m |= 1u << k;
                found = TRUE;
            }
        if (!found) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "shift: unknown relocation '%s' (known: dp, pp, tp, all, none)", w);
            return FALSE;
        }
    }
    *mask = m;
    return TRUE;
}

char *ssim_shift_to_string(guint mask)
{
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < G_N_ELEMENTS(shift_names); k++)
        if (mask & (1u << k))
            g_string_append_printf(s, "%s%s", s->len ? "," : "", shift_names[k]);
    if (s->len == 0)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

/* ---- the plan ---------------------------------------------------------------------------- */

typedef struct {
    guint32 rank;
    const char *name; /* interned */
} Stream;

typedef struct {
    char *name;
    guint32 first, n;
} Group;

typedef struct {
    guint32 a, b;
} Pair;

struct SsimPlan {
    GArray *ops;           /* SsimPlanOp */
    GArray *streams;       /* Stream */
    GHashTable *stream_of; /* "rank/name" -> index + 1 */
    GArray *groups;        /* Group */
    GArray *group_ranks;   /* guint32 */
    GArray *order;         /* Pair (before, op) */
    GArray *data;          /* Pair (producer, consumer) */
    GPtrArray *kernels;    /* per rank: GArray of guint32 kernel indices, ascending */
    gsize ops_room, order_room, data_room; /* ssim_array_push */
    /* Lazily built adjacency of `data`: producers (what building a graph needs) and the rest
     * (consumers and the per-site and per-rank caches, what placement passes need). */
    gboolean dirty, dirty_producers;
    GArray *pfirst, *pl, *cfirst, *cl;
    GArray *site_last;    /* guint32 per op: last producer of its gradient site */
    GArray *last_permute; /* guint32 per rank: its last lock-step permute, or NONE */
    /* Recently interned labels by the caller's pointer, each checked by content before use:
     * g_intern_string takes a global lock and hashes, and a lowering names a million ops with a
     * few dozen labels. */
    struct {
        const char *given, *interned;
    } names[64];
};

SsimPlan *ssim_plan_new(void)
{
    SsimPlan *p = g_new0(SsimPlan, 1);
    p->ops = g_array_new(FALSE, FALSE, sizeof(SsimPlanOp));
    p->streams = g_array_new(FALSE, FALSE, sizeof(Stream));
    p->stream_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    p->groups = g_array_new(FALSE, FALSE, sizeof(Group));
    p->group_ranks = g_array_new(FALSE, FALSE, sizeof(guint32));
    p->order = g_array_new(FALSE, FALSE, sizeof(Pair));
    p->data = g_array_new(FALSE, FALSE, sizeof(Pair));
    p->kernels = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
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
    GArray *arrays[] = {p->ops,    p->streams, p->groups,    p->group_ranks,
                        p->order,  p->data,    p->pfirst,    p->pl,
                        p->cfirst, p->cl,      p->site_last, p->last_permute};
    for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++)
        g_array_free(arrays[i], TRUE);
    g_hash_table_destroy(p->stream_of);
    g_ptr_array_free(p->kernels, TRUE);
    g_free(p);
}

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

/* g_intern_string(name), through the plan's small cache. */
static const char *intern_name(SsimPlan *p, const char *name)
{
    guint slot = (guint)(((guintptr)name >> 3) ^ ((guintptr)name >> 9)) % G_N_ELEMENTS(p->names);
    if (p->names[slot].given == name && strcmp(p->names[slot].interned, name) == 0)
        return p->names[slot].interned;
    const char *interned = g_intern_string(name);
    p->names[slot].given = name;
    p->names[slot].interned = interned;
    return interned;
}

static GArray *rank_kernels(SsimPlan *p, guint32 rank)
{
    while (p->kernels->len <= rank)
        g_ptr_array_add(p->kernels, g_array_new(FALSE, FALSE, sizeof(guint32)));
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
        .duration = spec->duration,
        .bytes = spec->bytes,
        .flops = spec->flops,
    };
    guint32 idx = p->ops->len;
    *(SsimPlanOp *)ssim_array_push(p->ops, &p->ops_room, sizeof op, 1) = op;
    if (spec->kind == SSIM_OP_COMPUTE)
        g_array_append_val(rank_kernels(p, rank), idx);
    else
        rank_kernels(p, rank);
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

void ssim_plan_set_points(SsimPlan *p, guint32 op, guint32 issue, guint32 wait)
{
    SsimPlanOp *o = ssim_plan_op_mut(p, op);
    o->issue = o->issue0 = issue;
    o->wait = o->wait0 = wait;
}

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

SsimPlanOp *ssim_plan_op_mut(SsimPlan *p, guint32 op)
{
    g_return_val_if_fail(op < p->ops->len, NULL);
    return &g_array_index(p->ops, SsimPlanOp, op);
}

gboolean ssim_plan_is_comm(const SsimPlan *p, guint32 op)
{
    return ssim_plan_op(p, op)->kind != SSIM_OP_COMPUTE;
}

static void csr(const GArray *pairs, gboolean by_consumer, guint32 n, GArray *first, GArray *list)
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

static void refresh_producers(const SsimPlan *cp)
{
    SsimPlan *p = (SsimPlan *)cp; /* the caches are logically const */
    if (!p->dirty_producers)
        return;
    csr(p->data, TRUE, p->ops->len, p->pfirst, p->pl);
    p->dirty_producers = FALSE;
}

static void refresh(const SsimPlan *cp)
{
    SsimPlan *p = (SsimPlan *)cp; /* the caches are logically const */
    if (!p->dirty)
        return;
    refresh_producers(p);
    csr(p->data, FALSE, p->ops->len, p->cfirst, p->cl);
    /* Last producer of each gradient site (rank, site), for ssim_place_dp_early. */
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
    refresh_producers(p);
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

void ssim_plan_reset(SsimPlan *p)
{
    for (guint32 i = 0; i < p->ops->len; i++) {
        SsimPlanOp *o = &g_array_index(p->ops, SsimPlanOp, i);
        o->issue = o->issue0;
        o->wait = o->wait0;
        o->flags &= (guint8)~SSIM_PLAN_SPLIT;
    }
}

static gboolean same_rank_kernel(const SsimPlan *p, guint32 op, guint32 rank)
{
    const SsimPlanOp *o = ssim_plan_op(p, op);
    return o->rank == rank && o->kind == SSIM_OP_COMPUTE;
}

gboolean ssim_plan_move(SsimPlan *p, guint32 op, guint32 issue, guint32 wait, GError **error)
{
    g_return_val_if_fail(op < p->ops->len, FALSE);
    char a[96], b[96];
    const SsimPlanOp *o = ssim_plan_op(p, op);
    if (o->kind == SSIM_OP_COMPUTE) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: %s is a kernel; only communication moves",
                    ssim_plan_op_label(p, op, a, sizeof a));
        return FALSE;
    }
    /* An issue point is any earlier op of the rank (a kernel, or communication such as the
     * loop's last permute); a wait point is a kernel. */
    if ((issue != SSIM_NONE &&
         (issue >= p->ops->len || issue == op || ssim_plan_op(p, issue)->rank != o->rank)) ||
        (wait != SSIM_NONE && (wait >= p->ops->len || !same_rank_kernel(p, wait, o->rank)))) {
        g_set_error(
            error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
            "place: cannot move %s: its %s point must be %s of rank %u",
            ssim_plan_op_label(p, op, a, sizeof a),
            wait != SSIM_NONE && (wait >= p->ops->len || !same_rank_kernel(p, wait, o->rank))
                ? "wait"
                : "issue",
            wait != SSIM_NONE && (wait >= p->ops->len || !same_rank_kernel(p, wait, o->rank))
                ? "a kernel"
                : "another op",
            o->rank);
        return FALSE;
    }
    if (issue != SSIM_NONE && wait != SSIM_NONE && wait <= issue) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "place: cannot move %s: %s would wait for it before it is issued after %s",
                    ssim_plan_op_label(p, op, a, sizeof a),
                    ssim_plan_op_label(p, wait, b, sizeof b), ssim_plan_op(p, issue)->name);
        return FALSE;
    }
    guint n;
    const guint32 *prod = ssim_plan_producers(p, op, &n);
    for (guint i = 0; i < n; i++) {
        if (!same_rank_kernel(p, prod[i], o->rank))
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
        if (wait == SSIM_NONE || wait > cons[i]) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: cannot move the wait for %s to %s: %s reads its result earlier",
                        ssim_plan_op_label(p, op, a, sizeof a),
                        wait == SSIM_NONE ? "nowhere" : ssim_plan_op(p, wait)->name,
                        ssim_plan_op_label(p, cons[i], b, sizeof b));
            return FALSE;
        }
    }
    SsimPlanOp *m = ssim_plan_op_mut(p, op);
    m->issue = issue;
    m->wait = wait;
    return TRUE;
}

void ssim_plan_split(SsimPlan *p, guint32 op, gboolean split)
{
    SsimPlanOp *o = ssim_plan_op_mut(p, op);
    g_return_if_fail(o->flags & SSIM_PLAN_PERMUTE);
    if (split)
        o->flags |= SSIM_PLAN_SPLIT;
    else
        o->flags &= (guint8)~SSIM_PLAN_SPLIT;
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
 * that issues it.  A counting sort on the anchor, stable in the index: O(n), no comparisons.
 */
static guint32 anchor_of(const SsimPlan *p, guint32 i)
{
    const SsimPlanOp *o = ssim_plan_op(p, i);
    return o->kind != SSIM_OP_COMPUTE && o->issue != SSIM_NONE ? o->issue : i;
}

static guint32 *issue_order(const SsimPlan *p, guint32 n)
{
    g_autofree guint32 *first = ssim_new0_large(guint32, (gsize)n + 1);
    for (guint32 i = 0; i < n; i++)
        first[anchor_of(p, i) + 1]++;
    for (guint32 a = 0; a < n; a++)
        first[a + 1] += first[a];
    guint32 *order = ssim_new_large(guint32, MAX(n, 1));
    for (guint32 i = 0; i < n; i++)
        order[first[anchor_of(p, i)]++] = i;
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

static guint32 string_id(StringIds *ids, SsimGraph *g, const char *s)
{
    guint k = (guint)(((guintptr)s >> 3) ^ ((guintptr)s >> 11)) % G_N_ELEMENTS(ids->slot);
    if (ids->slot[k].s == s)
        return ids->slot[k].id;
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
    refresh_producers(p);
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
                q->name == o->name && q->kind == o->kind) {
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
        csr(pairs, TRUE, n, wfirst, wlist);
    }
    g_autoptr(GArray) ofirst = g_array_new(FALSE, TRUE, sizeof(guint32));
    g_autoptr(GArray) olist = g_array_new(FALSE, FALSE, sizeof(guint32));
    csr(p->order, TRUE, n, ofirst, olist);

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
        ssim_graph_add_op_ids(g, &spec, string_id(&ids, g, spec.name), cls_id,
                              (const guint32 *)deps->data, deps->len);
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
    for (guint i = 0; i < p->data->len; i++) {
        const Pair *pr = &g_array_index(p->data, Pair, i);
        guint32 from = tail[pr->a], to = head[pr->b];
        if (from == SSIM_NONE || to == SSIM_NONE) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "place: %s needs %s, but the placement realises no transfer between them",
                        ssim_plan_op_label(p, pr->b, b, sizeof b),
                        ssim_plan_op_label(p, pr->a, a, sizeof a));
            return FALSE;
        }
        if (from == to)
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
                    if (v == to) {
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

/* ---- critical path ----------------------------------------------------------------------- */

GArray *ssim_critical_path(const SsimGraph *g, const SsimTimeline *tl)
{
    GArray *path = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 n = ssim_graph_n_ops(g);
    if (n == 0)
        return path;
    const guint32 *mfirst, *mops, *mexp;
    ssim_graph_match_csr(g, &mfirst, &mops, &mexp);
    const SsimOp *ops = ssim_graph_ops(g);
    guint32 cur = 0;
    for (guint32 i = 1; i < n; i++)
        if (tl->end[i] > tl->end[cur])
            cur = i;
    g_autofree guint8 *seen = g_new0(guint8, n);
    while (cur != SSIM_NONE && !seen[cur]) {
        seen[cur] = 1;
        g_array_append_val(path, cur);
        SsimTime start = tl->start[cur];
        guint32 best = SSIM_NONE;
        const guint32 *members = &cur;
        guint32 n_members = 1;
        if (ops[cur].kind != SSIM_OP_COMPUTE && ops[cur].match != SSIM_NONE) {
            members = mops + mfirst[ops[cur].match];
            n_members = mfirst[ops[cur].match + 1] - mfirst[ops[cur].match];
        }
        for (guint32 k = 0; k < n_members; k++) {
            guint32 q = members[k];
            guint nd;
            const guint32 *d = ssim_graph_deps(g, q, &nd);
            guint32 prev = ssim_graph_stream_prev(g, q);
            for (guint j = 0; j <= nd; j++) {
                guint32 c = j < nd ? d[j] : prev;
                if (c == SSIM_NONE || seen[c] || tl->end[c] > start)
                    continue;
                if (best == SSIM_NONE || tl->end[c] > tl->end[best] ||
                    (tl->end[c] == tl->end[best] && c < best))
                    best = c;
            }
        }
        cur = best;
    }
    return path;
}

/* ---- policies ---------------------------------------------------------------------------- */

typedef gboolean (*PassFn)(SsimPlan *, const SsimPlacement *, const SsimPlaceEvaluator *,
                           SsimPlaceReport *, GError **);

static const struct {
    const char *name, *schedule, *summary;
    PassFn pass;
} placements[] = {
#define SSIM_X(e, s, f, sch, d) [SSIM_PLACEMENT_##e] = {s, sch, d, ssim_place_##f},
    SSIM_PLACEMENT_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_placement_kind_name(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "?");
    return placements[kind].name;
}

const char *ssim_placement_kind_summary(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "?");
    return placements[kind].summary;
}

const char *ssim_placement_kind_schedule(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "xla");
    return placements[kind].schedule;
}

gboolean ssim_placement_kind_from_name(const char *name, SsimPlacementKind *out)
{
    for (guint i = 0; i < SSIM_PLACEMENT_N; i++)
        if (name && strcmp(name, placements[i].name) == 0) {
            *out = (SsimPlacementKind)i;
            return TRUE;
        }
    return FALSE;
}

char *ssim_placement_kind_list(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < SSIM_PLACEMENT_N; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", placements[i].name);
    return g_string_free(s, FALSE);
}

void ssim_place_report_init(SsimPlaceReport *r)
{
    memset(r, 0, sizeof *r);
    r->moves = g_ptr_array_new_with_free_func(g_free);
}

void ssim_place_report_clear(SsimPlaceReport *r)
{
    if (r->moves)
        g_ptr_array_free(r->moves, TRUE);
    memset(r, 0, sizeof *r);
}

gboolean ssim_place_apply(SsimPlan *plan, const SsimPlacement *placement,
                          const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    g_return_val_if_fail(placement->kind < SSIM_PLACEMENT_N, FALSE);
    ssim_plan_reset(plan);
    return placements[placement->kind].pass(plan, placement, eval, report, error);
}

/* ---- moves the passes share -------------------------------------------------------------- */

void ssim_place_tp_early(SsimPlan *p, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(p, op);
    guint32 w = ssim_plan_next_kernel(p, o->rank, o->issue);
    if (w != SSIM_NONE && o->wait0 != SSIM_NONE)
        ssim_plan_move(p, op, o->issue, w, NULL);
}

void ssim_place_tp_late(SsimPlan *p, guint32 op)
{
    const SsimPlanOp *o = ssim_plan_op(p, op);
    guint n;
    const guint32 *cons = ssim_plan_consumers(p, op, &n);
    guint32 w = SSIM_NONE;
    for (guint i = 0; i < n; i++)
        if (same_rank_kernel(p, cons[i], o->rank) && (w == SSIM_NONE || cons[i] < w))
            w = cons[i];
    if (w != SSIM_NONE)
        ssim_plan_move(p, op, o->issue, w, NULL);
}

void ssim_place_dp_late(SsimPlan *p, guint32 op)
{
    refresh(p);
    const SsimPlanOp *o = ssim_plan_op(p, op);
    guint32 i = ssim_plan_last_kernel(p, o->rank, SSIM_OPCLASS_BWD);
    /* After the loop: a lock-step pipeline's loop ends with its last permute, unless that is
     * split (then it has no single end on this rank and the last kernel is the end). */
    guint32 lp = o->rank < p->last_permute->len ? g_array_index(p->last_permute, guint32, o->rank)
                                                : SSIM_NONE;
    if (lp != SSIM_NONE && !(ssim_plan_op(p, lp)->flags & SSIM_PLAN_SPLIT) &&
        (i == SSIM_NONE || lp > i))
        i = lp;
    if (i != SSIM_NONE && (o->wait == SSIM_NONE || o->wait > i))
        ssim_plan_move(p, op, i, o->wait, NULL);
}

void ssim_place_dp_early(SsimPlan *p, guint32 op)
{
    refresh(p);
    const SsimPlanOp *o = ssim_plan_op(p, op);
    guint32 i = g_array_index(p->site_last, guint32, op);
    if (i != SSIM_NONE)
        ssim_plan_move(p, op, i, o->wait, NULL);
}
