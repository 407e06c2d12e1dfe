/*
 * Matching (include/shiftsim/graph.h): which collective, barrier and send/receive ops of different
 * ranks form one match, and the auto tags that decide it.  Part of ssim_graph_finalize().
 *
 * Two hash maps keyed by three words (KeyMap) do the work: a channel key per (rank, group or peer,
 * channel) counts each rank's ops on a channel to resolve auto tags, and an instance key names
 * each match.  Invariants after it: every communication op has a match; a collective instance
 * holds each rank at most once and its members agree on kind and bytes; a send/receive match
 * holds at most one send and one receive: the k-th send of a (source, destination, tag), in op
 * order, with the k-th receive (MPI's non-overtaking rule, which ASTRA-sim's network layer also
 * follows: Chakra traces repeat a tag between two ranks).
 */
#include "src/core/graph-private.h"

#include <shiftsim/alloc.h>

#include <string.h>

/*
 * Matching keys.  build_matches() groups communication ops with two hash maps keyed by three
 * words; each key is made by one function below, and the comments say why keys of different
 * kinds can never be equal.
 */
typedef struct {
    guint32 a, b, c;
} Key3;

/*
 * The channels an auto tag counts on: a rank numbers its collectives on a group, its barriers on
 * a group, its sends to a peer and its receives from a peer each from 0.
 */
typedef enum { CHANNEL_COLL, CHANNEL_BARRIER, CHANNEL_SEND, CHANNEL_RECV } Channel;

/*
 * The channel key (rank, group or peer, channel) of a communication op: the channel is the third
 * word, so a group and a peer that happen to have the same number give different keys.
 */
static inline Key3 channel_key(const SsimOp *o)
{
    switch ((SsimOpKind)o->kind) {
    case SSIM_OP_COLLECTIVE:
        return (Key3){o->rank, o->group, CHANNEL_COLL};
    case SSIM_OP_BARRIER:
        return (Key3){o->rank, o->group, CHANNEL_BARRIER};
    case SSIM_OP_SEND:
        return (Key3){o->rank, o->peer, CHANNEL_SEND};
    default:
        g_assert(o->kind == SSIM_OP_RECV);
        return (Key3){o->rank, o->peer, CHANNEL_RECV};
    }
}

/*
 * Instance keys name one match.  A send/receive pair is (source, destination, tag); a collective
 * or barrier instance is (group, tag, GROUP_INSTANCE), with GROUP_BARRIER set in the group word
 * of a barrier's.  They cannot collide: the third word of a pair's key is a resolved tag, and a
 * tag is never SSIM_TAG_AUTO once resolved (an auto tag becomes an ordinal, below the op count),
 * while GROUP_INSTANCE is SSIM_TAG_AUTO; a group's barriers and collectives differ in the top
 * bit of the group word, which no group index reaches (fewer than 2^31 groups, asserted).
 */
#define GROUP_INSTANCE SSIM_TAG_AUTO
#define GROUP_BARRIER  0x80000000u

/*
 * The k-th send/receive pair (k >= 1) of a (source, destination, tag) whose first pair is
 * instance m: (PAIR_REPEAT | k, m, GROUP_INSTANCE).  Its third word is a group key's, and its
 * first is not: groups are fewer than PAIR_REPEAT (asserted), so a group's first word is below
 * PAIR_REPEAT and a barrier's at or above GROUP_BARRIER, and k < PAIR_REPEAT (checked).
 */
#define PAIR_REPEAT 0x40000000u

/* The instance key of a send or a receive whose tag is resolved. */
static inline Key3 pair_key(const SsimOp *o)
{
    gboolean send = o->kind == SSIM_OP_SEND;
    g_assert(o->tag != SSIM_TAG_AUTO);
    return (Key3){send ? o->rank : o->peer, send ? o->peer : o->rank, o->tag};
}

/* The instance key of a collective or barrier whose tag is resolved. */
static inline Key3 group_key(const SsimOp *o)
{
    g_assert(o->group < PAIR_REPEAT);
    return (Key3){o->group | (o->kind == SSIM_OP_BARRIER ? GROUP_BARRIER : 0), o->tag,
                  GROUP_INSTANCE};
}

/* The group of a collective or barrier instance key. */
static inline guint32 group_key_group(const Key3 *k)
{
    return k->a & ~GROUP_BARRIER;
}

/*
 * A map from Key3 to a slot number: open addressing with linear probing over a power-of-two
 * table of indices into the caller's key array, kept at most half full.  Called twice for every
 * communication op of a graph (a million in a large step), so the hash and the compare are
 * inline, not through GHashTable's function pointers.
 */
typedef struct {
    guint32 *at; /* slot + 1, or 0 for empty */
    guint32 mask;
    guint32 n;
} KeyMap;

static inline guint32 key3_hash(const Key3 *k)
{
    guint64 h = ((guint64)k->a << 32 | k->b) * 0x9e3779b97f4a7c15u;
    h ^= (guint64)k->c * 0xc2b2ae3d27d4eb4fu;
    return (guint32)(h >> 32) ^ (guint32)h;
}

static inline gboolean key3_equal(const Key3 *a, const Key3 *b)
{
    return a->a == b->a && a->b == b->b && a->c == b->c;
}

static void keymap_init(KeyMap *m, guint32 cap)
{
    m->mask = cap - 1;
    m->n = 0;
    m->at = g_new0(guint32, cap);
}

static void keymap_clear(KeyMap *m)
{
    g_clear_pointer(&m->at, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(KeyMap, keymap_clear)

/* Rehashes the entries of `keys` into a table twice as large. */
static void keymap_grow(KeyMap *m, const Key3 *keys)
{
    g_free(m->at);
    guint32 n = m->n;
    keymap_init(m, 2 * (m->mask + 1));
    for (guint32 s = 0; s < n; s++) {
        guint32 i = key3_hash(&keys[s]) & m->mask;
        while (m->at[i] != 0)
            i = (i + 1) & m->mask;
        m->at[i] = s + 1;
    }
    m->n = n;
}

/* The slot of `k` in `keys`, appending it (as slot m->n) when it is new; *added says which. */
static inline guint32 keymap_slot(KeyMap *m, Key3 *keys, const Key3 *k, gboolean *added)
{
    guint32 i = key3_hash(k) & m->mask;
    for (; m->at[i] != 0; i = (i + 1) & m->mask)
        if (key3_equal(&keys[m->at[i] - 1], k)) {
            *added = FALSE;
            return m->at[i] - 1;
        }
    guint32 s = m->n++;
    keys[s] = *k;
    m->at[i] = s + 1;
    if (2 * (gsize)m->n > (gsize)m->mask + 1)
        keymap_grow(m, keys);
    *added = TRUE;
    return s;
}

gboolean graph_build_matches(SsimGraph *g, GError **error)
{
    guint32 n = g->ops->len;
    g_autofree Key3 *ord_keys = ssim_new_large(Key3, MAX(n, 1));
    g_autofree Key3 *inst_keys = ssim_new_large(Key3, MAX(n, 1));
    g_auto(KeyMap) ord = {0};
    g_auto(KeyMap) inst = {0};
    keymap_init(&ord, 64);
    keymap_init(&inst, 1024);
    g_autofree guint32 *inst_kind = ssim_new_large(guint32, MAX(n, 1));
    /* Set as their slots are created: untouched pages cost nothing (alloc.h). */
    g_autofree guint32 *inst_count = ssim_new_large(guint32, MAX(n, 1));
    g_autofree guint32 *ord_count = ssim_new_large(guint32, MAX(n, 1));
    /* Whether a channel has had an op with a tag of its own, and whether a collective or barrier
     * must be checked against the members that entered its instance before it: a rank's auto tags
     * on a channel are its ordinals there, all different, so two ops of one rank in one instance
     * need a tag of their own on the later one or on a channel that had one before it. */
    g_autofree guint8 *ord_tagged = ssim_new_large(guint8, MAX(n, 1));
    g_autofree guint8 *may_repeat = ssim_new_large(guint8, MAX(n, 1)); /* comm ops' only */
    /* A first pair's sends and receives so far (pair instances' only): the ordinal k of each. */
    g_autofree guint32 *pair_sends = ssim_new_large(guint32, MAX(n, 1));
    g_autofree guint32 *pair_recvs = ssim_new_large(guint32, MAX(n, 1));

    for (guint32 i = 0; i < n; i++) {
        SsimOp *o = &g_array_index(g->ops, SsimOp, i);
        MatchKind mk;
        if (o->kind == SSIM_OP_COLLECTIVE || o->kind == SSIM_OP_BARRIER) {
            if (o->group >= g->group_name->len)
                return graph_fail(error, g, i, "needs a group");
            if (!graph_group_has_rank(g, o->group, o->rank))
                return graph_fail(error, g, i, "rank %u is not a member of group %s", o->rank,
                                  ssim_graph_group_name(g, o->group));
            mk = o->kind == SSIM_OP_COLLECTIVE ? MATCH_COLL : MATCH_BARRIER;
        } else if (o->kind == SSIM_OP_SEND || o->kind == SSIM_OP_RECV) {
            if (o->peer == SSIM_NONE)
                return graph_fail(error, g, i, "needs a peer rank");
            if (o->peer == o->rank)
                return graph_fail(error, g, i, "peer is its own rank %u", o->rank);
            mk = MATCH_P2P;
        } else {
            continue;
        }
        Key3 k = channel_key(o);
        /* An auto tag is the op's ordinal on its channel (channel_key). */
        gboolean added;
        guint32 slot = keymap_slot(&ord, ord_keys, &k, &added);
        if (added) {
            ord_count[slot] = 0;
            ord_tagged[slot] = FALSE;
        }
        if (o->tag == SSIM_TAG_AUTO) {
            o->tag = ord_count[slot];
            may_repeat[i] = ord_tagged[slot];
        } else {
            ord_tagged[slot] = may_repeat[i] = TRUE;
        }
        ord_count[slot]++;
        Key3 ik = mk == MATCH_P2P ? pair_key(o) : group_key(o);
        guint32 m = keymap_slot(&inst, inst_keys, &ik, &added);
        if (added) {
            inst_kind[m] = mk;
            inst_count[m] = 0;
            if (mk == MATCH_P2P)
                pair_sends[m] = pair_recvs[m] = 0;
        }
        if (mk == MATCH_P2P) {
            guint32 k = (o->kind == SSIM_OP_SEND ? pair_sends : pair_recvs)[m]++;
            if (k >= PAIR_REPEAT)
                return graph_fail(error, g, i, "more than %u %ss with the same peer and tag",
                                  PAIR_REPEAT, ssim_op_kind_name(o->kind));
            if (k > 0) {
                Key3 rk = {PAIR_REPEAT | k, m, GROUP_INSTANCE};
                m = keymap_slot(&inst, inst_keys, &rk, &added);
                if (added) {
                    inst_kind[m] = mk;
                    inst_count[m] = 0;
                }
            }
        }
        o->match = m;
        inst_count[m]++;
    }
    guint32 n_inst = inst.n;
    g->n_matches = n_inst;
    g->match_first = ssim_new_large(guint32, n_inst + 1);
    g->match_expected = ssim_new_large(guint32, MAX(n_inst, 1));
    g->match_kind = ssim_new_large(guint8, MAX(n_inst, 1));
    guint32 total = 0;
    for (guint32 m = 0; m < n_inst; m++) {
        g->match_first[m] = total;
        g->match_kind[m] = (guint8)inst_kind[m];
        if (inst_kind[m] == MATCH_P2P) {
            g->match_expected[m] = 2;
            total += 2;
        } else {
            guint gn;
            ssim_graph_group_ranks(g, group_key_group(&inst_keys[m]), &gn);
            g->match_expected[m] = gn;
            total += inst_count[m];
        }
    }
    g->match_first[n_inst] = total;
    g->match_ops = ssim_new_large(guint32, MAX(total, 1));
    g_autofree guint32 *fill = ssim_new0_large(guint32, MAX(n_inst, 1));
    for (guint32 m = 0; m < n_inst; m++)
        if (inst_kind[m] == MATCH_P2P)
            g->match_ops[g->match_first[m]] = g->match_ops[g->match_first[m] + 1] = SSIM_NONE;
    for (guint32 i = 0; i < n; i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        if (o->match == SSIM_NONE)
            continue;
        guint32 m = o->match, base = g->match_first[m];
        if (inst_kind[m] == MATCH_P2P) {
            guint slot = o->kind == SSIM_OP_SEND ? 0 : 1;
            g_assert(g->match_ops[base + slot] == SSIM_NONE); /* one k-th send, one k-th receive */
            g->match_ops[base + slot] = i;
            continue;
        }
        for (guint32 j = 0; j < (may_repeat[i] ? fill[m] : MIN(fill[m], 1u)); j++) {
            const SsimOp *other = ssim_graph_op(g, g->match_ops[base + j]);
            char label[128];
            if (other->rank == o->rank)
                return graph_fail(
                    error, g, i, "rank %u enters %s %s tag %u twice (also %s)", o->rank,
                    ssim_graph_group_name(g, o->group),
                    o->kind == SSIM_OP_BARRIER ? "barrier" : "collective", o->tag,
                    ssim_graph_op_label(g, g->match_ops[base + j], label, sizeof label));
            if (j == 0 && (other->coll != o->coll || other->bytes != o->bytes) &&
                o->kind == SSIM_OP_COLLECTIVE)
                return graph_fail(error, g, i,
                                  "does not match %s on rank %u of the same collective "
                                  "(group %s, tag %u): %s of %" G_GUINT64_FORMAT
                                  " bytes vs %s of %" G_GUINT64_FORMAT " bytes",
                                  ssim_graph_op_label(g, g->match_ops[base], label, sizeof label),
                                  other->rank, ssim_graph_group_name(g, o->group), o->tag,
                                  ssim_coll_kind_name(o->coll), o->bytes,
                                  ssim_coll_kind_name(other->coll), other->bytes);
        }
        g->match_ops[base + fill[m]++] = i;
    }
    return TRUE;
}
