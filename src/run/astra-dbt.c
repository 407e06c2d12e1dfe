/*
 * doubleBinaryTree under the ASTRA-sim-compatible replay: ASTRA-sim's BinaryTree logical topology
 * (astra-sim/system/astraccl/native_collectives/logical_topology/BinaryTree.cc,
 * DoubleBinaryTreeTopology.cc) and its DoubleBinaryTreeAllReduce state machine
 * (collective_algorithm/DoubleBinaryTreeAllReduce.cc), condition for condition: which branch an
 * event takes depends on their order.  astra-coll.c makes the phases and calls back here.
 *
 * Invariants: a tree over n = 2^k positions numbers them in order (left subtree, node, right
 * subtree); a stream in a tree phase sends each message once and exits once.
 */
#include "src/run/astra-private.h"

/* ---- the trees ---- */

typedef struct {
    gint32 up, left, right; /* node indices, -1: none */
} TreeNode;

/* BinaryTree::initialize_tree: a full subtree `depth` levels deep under `up`. */
static gint32 grow(GArray *nodes, int depth, gint32 up)
{
    gint32 me = (gint32)nodes->len;
    TreeNode n = {up, -1, -1};
    g_array_append_val(nodes, n);
    if (depth > 1) {
        gint32 l = grow(nodes, depth - 1, me);
        g_array_index(nodes, TreeNode, me).left = l;
        gint32 r = grow(nodes, depth - 1, me);
        g_array_index(nodes, TreeNode, me).right = r;
    }
    return me;
}

/* BinaryTree::build_tree: positions in order. */
static void number(const GArray *nodes, gint32 node, gint32 *pos, gint32 *next)
{
    const TreeNode *n = &g_array_index(nodes, TreeNode, node);
    if (n->left >= 0)
        number(nodes, n->left, pos, next);
    pos[node] = (*next)++;
    if (n->right >= 0)
        number(nodes, n->right, pos, next);
}

/* The tree over n positions (a power of two): per position its parent, left and right child. */
static gint32 *make_tree(guint n, gboolean root_max)
{
    int depth = 1;
    for (guint t = n; t > 1; t /= 2)
        depth++;
    GArray *nodes = g_array_new(FALSE, FALSE, sizeof(TreeNode));
    TreeNode root = {-1, -1, -1};
    g_array_append_val(nodes, root);
    gint32 child = grow(nodes, depth - 1, 0);
    if (root_max)
        g_array_index(nodes, TreeNode, 0).left = child;
    else
        g_array_index(nodes, TreeNode, 0).right = child;
    g_assert(nodes->len == n);
    g_autofree gint32 *pos = g_new(gint32, n);
    gint32 next = 0;
    number(nodes, 0, pos, &next);
    gint32 *tree = g_new(gint32, 3 * (gsize)n);
    for (guint i = 0; i < n; i++) {
        const TreeNode *t = &g_array_index(nodes, TreeNode, i);
        gint32 *at = tree + 3 * (gsize)pos[i];
        at[0] = t->up >= 0 ? pos[t->up] : -1;
        at[1] = t->left >= 0 ? pos[t->left] : -1;
        at[2] = t->right >= 0 ? pos[t->right] : -1;
    }
    g_array_unref(nodes);
    return tree;
}

void astra_dbt_phase(Replay *R, guint32 rank, guint d, Phase *p)
{
    /* DoubleBinaryTreeTopology::get_topology: RootMax, RootMin, RootMax, ... per rank. */
    int which = R->ranks[rank].dbt_counter[d]++ % 2;
    if (!R->dbt_tree[d][which])
        R->dbt_tree[d][which] = make_tree(p->n, which == 0);
    p->tree = (guint8)which;
    p->dim = (guint8)d;
}

void astra_dbt_clear(Replay *R)
{
    for (guint d = 0; d < SSIM_ASTRA_MAX_DIMS; d++)
        for (int k = 0; k < 2; k++)
            g_clear_pointer(&R->dbt_tree[d][k], g_free);
}

/* ---- DoubleBinaryTreeAllReduce ---- */

enum { BEGIN, WAIT_TWO, WAIT_ONE, TO_PARENT, WAIT_PARENT, TO_CHILDREN, END };

/* `to` and `from` are positions in the phase's ring. */
static void send(Replay *R, const Stream *s, const Phase *p, gint32 to)
{
    MatchKey k = {.tag = s->tag,
                  .size = p->msg_size,
                  .src = s->rank,
                  .dst = astra_phase_member(p, (guint32)to),
                  .coll = 1};
    astra_net_send(R, &k, (Callback){CB_NONE, 0, 0});
}

static void recv(Replay *R, guint32 sid, const Stream *s, const Phase *p, gint32 from)
{
    MatchKey k = {.tag = s->tag,
                  .size = p->msg_size,
                  .src = astra_phase_member(p, (guint32)from),
                  .dst = s->rank,
                  .coll = 1};
    astra_net_recv(R, &k, (Callback){CB_STREAM, sid, 0});
}

void astra_dbt_run(Replay *R, guint32 sid, int event)
{
    Stream *s = g_ptr_array_index(R->streams, sid);
    const Phase *p = &g_array_index(R->phases, Phase, s->first_phase + (guint)s->cur);
    guint64 size = p->msg_size;
    /* The rank's parent and children, as positions (-1: none). */
    const gint32 *at = R->dbt_tree[p->dim][p->tree] + 3 * (gsize)p->pos;
    gint32 up = at[0], left = at[1], right = at[2];
    gboolean root = up < 0, leaf = left < 0 && right < 0;
    if (leaf && !root) {
        switch (s->dbt_state) {
        case BEGIN: /* leaf.1 */
            astra_bundle(R, sid, size, BUNDLE_TO_MA);
            s->dbt_state = TO_PARENT;
            break;
        case TO_PARENT: /* leaf.3 */
            send(R, s, p, up);
            recv(R, sid, s, p, up);
            s->dbt_state = WAIT_PARENT;
            break;
        case WAIT_PARENT: /* leaf.4 */
            astra_bundle(R, sid, size, 0);
            s->dbt_state = END;
            break;
        case END: /* leaf.5 */
            astra_stream_proceed(R, sid);
            break;
        default:
            break;
        }
        return;
    }
    if (!root) {
        if (s->dbt_state == BEGIN) { /* int.1 */
            s->dbt_state = WAIT_TWO;
            recv(R, sid, s, p, left);
            recv(R, sid, s, p, right);
        } else if (s->dbt_state == WAIT_TWO && event == DBT_RECEIVED) { /* int.2 */
            astra_bundle(R, sid, size, BUNDLE_PROCESS);
            s->dbt_state = WAIT_ONE;
        } else if (s->dbt_state == WAIT_ONE && event == DBT_RECEIVED) { /* int.3 */
            astra_bundle(R, sid, size, BUNDLE_PROCESS | BUNDLE_SEND_BACK);
            s->dbt_state = TO_PARENT;
        } else if (s->dbt_reductions < 1 && event == DBT_GENERAL) { /* int.4 */
            s->dbt_reductions++;
        } else if (s->dbt_state == TO_PARENT) { /* int.5 */
            s->dbt_state = WAIT_PARENT;
            send(R, s, p, up);
            recv(R, sid, s, p, up);
        } else if (s->dbt_state == WAIT_PARENT && event == DBT_RECEIVED) { /* int.6 */
            astra_bundle(R, sid, size, BUNDLE_PROCESS | BUNDLE_SEND_BACK);
            s->dbt_state = TO_CHILDREN;
        } else if (s->dbt_state == TO_CHILDREN) {
            send(R, s, p, left);
            send(R, s, p, right);
            astra_stream_proceed(R, sid);
        }
        return;
    }
    gint32 only = left >= 0 ? left : right;
    if (s->dbt_state == BEGIN) { /* root.1 */
        s->dbt_state = WAIT_ONE;
        recv(R, sid, s, p, only);
    } else if (s->dbt_state == WAIT_ONE) { /* root.2 */
        astra_bundle(R, sid, size, BUNDLE_PROCESS | BUNDLE_SEND_BACK);
        s->dbt_state = TO_CHILDREN;
    } else if (s->dbt_state == TO_CHILDREN) { /* root.3 */
        send(R, s, p, only);
        astra_stream_proceed(R, sid);
    }
}
