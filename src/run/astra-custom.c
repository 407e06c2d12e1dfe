/*
 * Custom collective implementations of the ASTRA-sim-compatible replay: a collective whose type
 * the system file gives a Chakra trace set (`all-reduce-implementation-custom`, ...) runs as
 * ASTRA-sim's CustomAlgorithm runs it (astra-sim/system/astraccl/custom_collectives/
 * CustomAlgorithm.cc): the rank replays its position's trace, issuing every dependency-free node
 * at once and the nodes each finished one frees; sends and receives go through astra-net.c with
 * the node's size and tag, to and from the ranks at the peers' positions; a compute node takes
 * its duration, at least 1 ns.  When the last node has finished, the stream proceeds (and, its
 * only phase over, ends the collective).  astra-coll.c makes the stream and starts the run when
 * its queue lets it.
 *
 * Invariants: a run's pending counts only fall; an op of a run is issued once, when its count
 * reaches 0, and ends once; a run's stream proceeds once, after its last op has ended.
 */
#include "src/run/astra-private.h"

#include <string.h>

static guint64 node_id(const CustomSet *set, const guint32 *own, guint32 op)
{
    return set->node_ids ? set->node_ids[op] : own[op];
}

/* Sorts `ops` (n of them) by node id: an insertion sort, as a rank's ops arrive nearly sorted
 * and a node's successors are few. */
static void sort_by_id(const CustomSet *set, const guint32 *own, guint32 *ops, guint n)
{
    for (guint i = 1; i < n; i++) {
        guint32 x = ops[i];
        guint64 id = node_id(set, own, x);
        guint j = i;
        while (j > 0 && node_id(set, own, ops[j - 1]) > id) {
            ops[j] = ops[j - 1];
            j--;
        }
        ops[j] = x;
    }
}

/* What an op of a custom trace may be: what CustomAlgorithm::issue runs (it takes any other
 * node and never finishes it, so ASTRA-sim would wait for ever). */
static gboolean check_op(const CustomSet *set, guint32 op, const guint32 *own, GError **error)
{
    const SsimOp *o = &set->ops[op];
    const char *why = NULL;
    if (o->kind == SSIM_OP_COMPUTE) {
        const char *cls = o->cls ? ssim_graph_string(set->graph, o->cls) : "";
        if (strcmp(cls, "mem") == 0 || g_str_has_prefix(cls, "chakra:"))
            why = "a memory or metadata node";
    } else if (o->kind != SSIM_OP_SEND && o->kind != SSIM_OP_RECV) {
        why = "a collective or barrier";
    }
    guint nd;
    const guint32 *d = ssim_graph_deps(set->graph, op, &nd);
    for (guint k = 0; k < nd && !why; k++)
        if (set->ops[d[k]].rank != o->rank)
            why = "a dependency on another position's node";
    if (!why)
        return TRUE;
    char label[128];
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "--semantics astra: %s: %s: %s of position %u (node %" G_GUINT64_FORMAT
                ") is %s; a custom implementation runs sends, receives and compute nodes of "
                "its own position (ASTRA-sim's CustomAlgorithm never finishes anything else)",
                set->key, set->path, ssim_graph_op_label(set->graph, op, label, sizeof label),
                o->rank, node_id(set, own, op), why);
    return FALSE;
}

/* Indexes custom set `set` (its key and path set) from the loaded set `in`. */
static gboolean build_set(const Replay *R, CustomSet *set, const SsimAstraCustom *in,
                          GError **error)
{
    if (R->cfg.splits != 1) {
        /* Sys::generate_collective makes one stream for a custom collective, in a DataSet that
         * waits for preferred-dataset-splits of them: it would never finish. */
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: %s with preferred-dataset-splits %u: ASTRA-sim runs a "
                    "custom collective as one stream and waits for %u, so it never ends (set "
                    "preferred-dataset-splits to 1)",
                    set->key, R->cfg.splits, R->cfg.splits);
        return FALSE;
    }
    if (!in->graph || !ssim_graph_is_finalized(in->graph)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--semantics astra: %s: the trace set %s is not loaded", set->key, set->path);
        return FALSE;
    }
    set->graph = in->graph;
    set->ops = ssim_graph_ops(in->graph);
    set->node_ids = in->node_ids;
    set->n_pos = ssim_graph_n_ranks(in->graph);
    guint32 n = ssim_graph_n_ops(in->graph);
    /* Without node ids, an op's index within its rank stands for its id. */
    g_autofree guint32 *own = g_new0(guint32, MAX(n, 1u));
    set->pos_first = g_new0(guint32, (gsize)set->n_pos + 1);
    for (guint32 i = 0; i < n; i++)
        own[i] = set->pos_first[set->ops[i].rank + 1]++;
    for (guint p = 0; p < set->n_pos; p++)
        set->pos_first[p + 1] += set->pos_first[p];
    set->order = g_new(guint32, MAX(n, 1u));
    set->local = g_new(guint32, MAX(n, 1u));
    g_autofree guint32 *fill = g_memdup2(set->pos_first, sizeof(guint32) * set->n_pos);
    set->succ_first = g_new0(guint32, (gsize)n + 1);
    for (guint32 i = 0; i < n; i++) {
        if (!check_op(set, i, own, error))
            return FALSE;
        set->order[fill[set->ops[i].rank]++] = i;
        guint nd;
        const guint32 *d = ssim_graph_deps(set->graph, i, &nd);
        for (guint k = 0; k < nd; k++)
            set->succ_first[d[k] + 1]++;
    }
    for (guint p = 0; p < set->n_pos; p++) {
        guint32 *run = set->order + set->pos_first[p];
        guint len = set->pos_first[p + 1] - set->pos_first[p];
        sort_by_id(set, own, run, len);
        for (guint k = 0; k < len; k++)
            set->local[run[k]] = k;
    }
    for (guint32 i = 0; i < n; i++)
        set->succ_first[i + 1] += set->succ_first[i];
    set->succ = g_new(guint32, MAX(set->succ_first[n], 1u));
    g_autofree guint32 *at = g_memdup2(set->succ_first, sizeof(guint32) * MAX(n, 1u));
    for (guint32 i = 0; i < n; i++) {
        guint nd;
        const guint32 *d = ssim_graph_deps(set->graph, i, &nd);
        for (guint k = 0; k < nd; k++)
            set->succ[at[d[k]]++] = i;
    }
    for (guint32 i = 0; i < n; i++)
        sort_by_id(set, own, set->succ + set->succ_first[i],
                   set->succ_first[i + 1] - set->succ_first[i]);
    return TRUE;
}

gboolean astra_custom_build(Replay *R, GError **error)
{
    const SsimAstraConfig *c = &R->cfg;
    R->n_custom = SSIM_ASTRA_N_COLL + c->n_per_node;
    R->custom = g_new0(CustomSet, R->n_custom);
    /* Under replay-only no collective runs, and ASTRA-sim reads no custom set. */
    for (int t = 0; t < SSIM_ASTRA_N_COLL && !c->replay_only; t++) {
        CustomSet *set = &R->custom[t];
        set->key = ssim_astra_custom_key((SsimAstraColl)t);
        set->path = c->custom_path[t];
        if (c->custom_path[t] && !build_set(R, set, &c->custom[t], error))
            return FALSE;
    }
    R->per_node = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < c->n_per_node && !c->replay_only; i++) {
        CustomSet *set = &R->custom[SSIM_ASTRA_N_COLL + i];
        set->key = "per-node-custom-implementation";
        set->path = c->per_node[i].path;
        if (!build_set(R, set, &c->per_node[i].set, error))
            return FALSE;
        g_hash_table_insert(R->per_node, GINT_TO_POINTER(c->per_node[i].node),
                            GUINT_TO_POINTER(SSIM_ASTRA_N_COLL + i + 1));
    }
    R->runs = g_array_new(FALSE, FALSE, sizeof(CustomRun));
    R->freed = g_array_new(FALSE, FALSE, sizeof(guint32));
    R->custom_ops = g_array_new(FALSE, TRUE, sizeof(guint32));
    return TRUE;
}

static CustomRun *run_at(Replay *R, guint32 run)
{
    return &g_array_index(R->runs, CustomRun, run);
}

/* CustomAlgorithm::issue. */
static void issue(Replay *R, guint32 run, guint32 op)
{
    const CustomRun *r = run_at(R, run);
    const CustomSet *set = &R->custom[r->set];
    const SsimOp *o = &set->ops[op];
    const Stream *s = g_ptr_array_index(R->streams, r->stream);
    const Phase *p = &g_array_index(R->phases, Phase, s->first_phase);
    Callback done = {CB_CUSTOM, run, op};
    if ((o->kind == SSIM_OP_SEND || o->kind == SSIM_OP_RECV) &&
        astra_phase_member(p, o->peer) == s->rank) {
        /* The network's BasicTopology::send asserts src != dest: ASTRA-sim aborts. */
        char label[128];
        g_autoptr(GString) group = g_string_new(NULL);
        for (guint k = 0; k < p->n; k++)
            g_string_append_printf(group, "%s%u", k ? ", " : "", astra_phase_member(p, k));
        astra_fail(R, g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                  "--semantics astra: %s: rank %u at position %u: %s (%s "
                                  "position %u) is a message to itself, on which ASTRA-sim "
                                  "aborts: it numbers the rank's own position among the sorted "
                                  "members of the group [%s] and the peers in the group's order "
                                  "(list the group's ranks in ascending order)",
                                  set->path, s->rank, p->pos,
                                  ssim_graph_op_label(set->graph, op, label, sizeof label),
                                  o->kind == SSIM_OP_SEND ? "a send to" : "a receive from", o->peer,
                                  group->str));
        return;
    }
    switch (o->kind) {
    case SSIM_OP_SEND: {
        MatchKey key = {.tag = astra_native_tag(o->tag),
                        .size = o->bytes,
                        .src = s->rank,
                        .dst = astra_phase_member(p, o->peer),
                        .coll = 0};
        astra_net_send(R, &key, done);
        break;
    }
    case SSIM_OP_RECV: {
        MatchKey key = {.tag = astra_native_tag(o->tag),
                        .size = o->bytes,
                        .src = astra_phase_member(p, o->peer),
                        .dst = s->rank,
                        .coll = 0};
        astra_net_recv(R, &key, done);
        break;
    }
    default: /* a compute node (a reduction): its duration, at least 1 ns */
        astra_sys_at(R, s->rank, MAX(o->duration, (SsimTime)1), SYS_CUSTOM, run, op);
    }
}

void astra_custom_start(Replay *R, guint32 sid, guint32 set_index, guint32 pos)
{
    const CustomSet *set = &R->custom[set_index];
    guint32 first = set->pos_first[pos], len = set->pos_first[pos + 1] - first;
    CustomRun r = {.stream = sid, .set = set_index, .left = len};
    r.pending = g_new(guint32, MAX(len, 1u));
    for (guint32 k = 0; k < len; k++) {
        guint nd;
        ssim_graph_deps(set->graph, set->order[first + k], &nd);
        r.pending[k] = nd;
    }
    guint32 run = R->runs->len;
    g_array_append_val(R->runs, r);
    /* CustomAlgorithm::run: the dependency-free nodes, ascending node id.  (A position with no
     * node never finishes, in ASTRA-sim too: the replay reports it stalled.) */
    for (guint32 k = 0; k < len; k++)
        if (r.pending[k] == 0)
            issue(R, run, set->order[first + k]);
}

void astra_custom_done(Replay *R, guint32 run, guint32 op)
{
    CustomRun *r = run_at(R, run);
    const CustomSet *set = &R->custom[r->set];
    r->left--;
    g_array_set_size(R->freed, 0);
    for (guint32 i = set->succ_first[op]; i < set->succ_first[op + 1]; i++) {
        guint32 x = set->succ[i];
        if (--r->pending[set->local[x]] == 0)
            g_array_append_val(R->freed, x);
    }
    gboolean over = r->left == 0;
    guint32 stream = r->stream;
    if (over)
        g_clear_pointer(&r->pending, g_free);
    /* Issuing touches only the network and the event queue, never the runs. */
    for (guint i = 0; i < R->freed->len; i++)
        issue(R, run, g_array_index(R->freed, guint32, i));
    if (over) /* Algorithm::exit */
        astra_stream_proceed(R, stream);
}

void astra_custom_clear(Replay *R)
{
    for (guint i = 0; i < R->n_custom; i++) {
        CustomSet *set = &R->custom[i];
        g_free(set->pos_first);
        g_free(set->order);
        g_free(set->local);
        g_free(set->succ_first);
        g_free(set->succ);
    }
    g_clear_pointer(&R->custom, g_free);
    R->n_custom = 0;
    if (R->group_impl)
        g_clear_pointer(&R->group_impl, g_hash_table_unref);
    if (R->per_node)
        g_clear_pointer(&R->per_node, g_hash_table_unref);
    if (R->runs) {
        for (guint i = 0; i < R->runs->len; i++)
            g_free(run_at(R, i)->pending);
        g_clear_pointer(&R->runs, g_array_unref);
    }
    if (R->freed)
        g_clear_pointer(&R->freed, g_array_unref);
    if (R->custom_ops)
        g_clear_pointer(&R->custom_ops, g_array_unref);
}
