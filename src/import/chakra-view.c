/*
 * The parts of Chakra decoding that do not depend on the trace: node views (chakra-private.h),
 * the reference decoder that fills one from protobuf-c's generated unpacker, the arena that
 * unpacker allocates from, the names of the attributes the mapping reads, and the table of the
 * attribute names it does not read.
 *
 * The reference decoder is the importer as it was before the fast wire decoder
 * (chakra-wire.c): it materialises every field, then copies out what the mapping reads.  It stays
 * because it is the other half of the equivalence the tests check, and the benchmark's "before".
 */
#include "src/import/chakra-private.h"

#include <string.h>

/* ---- the decoding arena ---- */

#define ARENA_SIZE (256 * 1024)

static void *arena_alloc(void *data, size_t n)
{
    ChakraArena *a = data;
    n = (n + 15) & ~(size_t)15;
    if (a->used + n <= ARENA_SIZE) {
        void *p = a->buf + a->used;
        a->used += n;
        return p;
    }
    void *p = g_malloc(n);
    g_ptr_array_add(a->big, p);
    return p;
}

static void arena_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

void chakra_arena_reset(ChakraArena *a)
{
    a->used = 0;
    g_ptr_array_set_size(a->big, 0);
}

void chakra_arena_init(ChakraArena *a)
{
    a->buf = g_malloc(ARENA_SIZE);
    a->used = 0;
    a->big = g_ptr_array_new_with_free_func(g_free);
    a->alloc = (ProtobufCAllocator){arena_alloc, arena_free, a};
}

void chakra_arena_clear(ChakraArena *a)
{
    g_clear_pointer(&a->buf, g_free);
    g_clear_pointer(&a->big, g_ptr_array_unref);
}

/* ---- node views ---- */

const char *const chakra_known_attr_names[KA_N] = {
    [KA_IS_CPU_OP] = "is_cpu_op",       [KA_STREAM] = "stream",
    [KA_COMM_SIZE] = "comm_size",       [KA_COMM_TYPE] = "comm_type",
    [KA_PG_NAME] = "pg_name",           [KA_COMM_TAG] = "comm_tag",
    [KA_COMM_DST] = "comm_dst",         [KA_COMM_SRC] = "comm_src",
    [KA_NUM_OPS] = "num_ops",           [KA_TENSOR_SIZE] = "tensor_size",
    [KA_INVOLVED_DIM] = "involved_dim", [KA_COMM_PRIORITY] = "comm_priority",
};

void chakra_vec_grow(gpointer *v, guint *cap, gsize elt)
{
    *cap = MAX(16u, 2 * *cap);
    *v = g_realloc_n(*v, *cap, elt);
}

void chakra_view_init(NodeView *v)
{
    memset(v, 0, sizeof *v);
}

void chakra_view_clear(NodeView *v)
{
    g_clear_pointer(&v->unknown.v, g_free);
    g_clear_pointer(&v->data_deps.v, g_free);
    g_clear_pointer(&v->ctrl_deps.v, g_free);
    memset(v, 0, sizeof *v);
}

void chakra_view_reset(NodeView *v)
{
    v->id = 0;
    v->name = (Bytes){"", 0};
    v->type = 0;
    v->duration_micros = 0;
    /* known[k] and n_known[k] are read only where bit k of the mask is set */
    v->known_mask = 0;
    v->unknown.n = 0;
    v->data_deps.n = 0;
    v->ctrl_deps.n = 0;
}

Bytes chakra_view_name(const NodeView *v)
{
    const void *nul = memchr(v->name.s, 0, v->name.n);
    return nul ? (Bytes){v->name.s, (guint32)((const char *)nul - v->name.s)} : v->name;
}

/* protobuf-c's attribute value as a view value. */
static AttrVal pb_value(const PbAttr *a)
{
    AttrVal v = {.kind = AV_INT};
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET:
        v.kind = AV_NONE;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        v.i = a->int32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        v.i = a->int64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        v.i = a->uint32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        v.i = a->sint32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        v.i = a->sint64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        v.i = a->fixed32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        v.i = a->sfixed32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        v.i = a->sfixed64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        v.i = a->bool_val ? 1 : 0;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: {
        guint64 u = a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL
                        ? a->uint64_val
                        : a->fixed64_val;
        if (u > (guint64)G_MAXINT64)
            v.kind = AV_BIG_UINT;
        else
            v.i = (gint64)u;
        break;
    }
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL:
        v.kind = AV_REAL, v.d = a->double_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL:
        v.kind = AV_REAL, v.d = a->float_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL:
        v.kind = AV_STRING, v.s = a->string_val, v.n = (guint32)strlen(a->string_val);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST: {
        const ChakraProtoMsg__BoolList *l = a->bool_list;
        guint64 bits = 0;
        for (gsize k = 0; l && k < l->n_values && k < 64; k++)
            bits |= (guint64)(l->values[k] != 0) << k;
        v.kind = AV_BOOLS, v.i = (gint64)bits, v.n = l ? (guint32)l->n_values : 0;
        break;
    }
    default:
        v.kind = AV_OTHER;
        break;
    }
    return v;
}

gboolean chakra_pb_node(ChakraArena *arena, const guint8 *buf, gsize len, NodeView *v)
{
    chakra_view_reset(v);
    PbNode *n = chakra_proto_msg__node__unpack(&arena->alloc, len, buf);
    if (!n)
        return FALSE;
    v->id = n->id;
    v->name = (Bytes){n->name, (guint32)strlen(n->name)};
    v->type = (gint32)n->type;
    v->duration_micros = n->duration_micros;
    for (gsize i = 0; i < n->n_data_deps; i++)
        u64vec_push(&v->data_deps, n->data_deps[i]);
    for (gsize i = 0; i < n->n_ctrl_deps; i++)
        u64vec_push(&v->ctrl_deps, n->ctrl_deps[i]);
    for (gsize i = 0; i < n->n_attr; i++) {
        const PbAttr *a = n->attr[i];
        KnownAttr k = chakra_known_attr(a->name, strlen(a->name));
        if (k == KA_N) {
            chakra_view_add_unknown(v, (Bytes){a->name, (guint32)strlen(a->name)});
        } else {
            gboolean first = !(v->known_mask & (1u << k));
            if (first)
                v->n_known[k] = 0;
            if (first || !v->keep_first)
                v->known[k] = pb_value(a);
            v->n_known[k]++;
            v->known_mask |= 1u << k;
        }
    }
    return TRUE;
}

/* ---- attributes not read ---- */

/* An open-addressing table of entries keyed by name bytes; names are copied once, on first
 * sight, so counting the millions of instances a large trace has allocates nothing. */
struct IgnoredTable {
    IgnoredEntry **slots; /* NULL: empty */
    guint cap, used;      /* cap is a power of two */
};

static guint32 name_hash(const char *s, gsize n)
{
    guint32 h = 2166136261u; /* FNV-1a */
    for (gsize i = 0; i < n; i++)
        h = (h ^ (guint8)s[i]) * 16777619u;
    return h;
}

IgnoredTable *chakra_ignored_new(void)
{
    IgnoredTable *t = g_new0(IgnoredTable, 1);
    t->cap = 16;
    t->slots = g_new0(IgnoredEntry *, t->cap);
    return t;
}

void chakra_ignored_free(IgnoredTable *t)
{
    if (!t)
        return;
    for (guint i = 0; i < t->cap; i++)
        if (t->slots[i]) {
            g_free(t->slots[i]->name);
            g_free(t->slots[i]);
        }
    g_free(t->slots);
    g_free(t);
}

static IgnoredEntry **find_slot(IgnoredEntry **slots, guint cap, const char *s, gsize n, guint32 h)
{
    for (guint i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        IgnoredEntry *e = slots[i];
        if (!e || (e->hash == h && e->len == n && memcmp(e->name, s, n) == 0))
            return &slots[i];
    }
}

IgnoredEntry *chakra_ignored_entry(IgnoredTable *t, const char *s, gsize n)
{
    guint32 h = name_hash(s, n);
    IgnoredEntry **slot = find_slot(t->slots, t->cap, s, n, h);
    if (*slot)
        return *slot;
    if (2 * (t->used + 1) > t->cap) {
        guint cap = 2 * t->cap;
        IgnoredEntry **grown = g_new0(IgnoredEntry *, cap);
        for (guint i = 0; i < t->cap; i++)
            if (t->slots[i])
                *find_slot(grown, cap, t->slots[i]->name, t->slots[i]->len, t->slots[i]->hash) =
                    t->slots[i];
        g_free(t->slots);
        t->slots = grown;
        t->cap = cap;
        slot = find_slot(t->slots, t->cap, s, n, h);
    }
    IgnoredEntry *e = g_new(IgnoredEntry, 1);
    *e = (IgnoredEntry){g_strndup(s, n), (guint32)n, h, 0};
    *slot = e;
    t->used++;
    return e;
}

void chakra_ignored_merge(const IgnoredTable *t, SsimChakraStats *s)
{
    for (guint i = 0; i < t->cap; i++) {
        const IgnoredEntry *e = t->slots[i];
        if (!e || e->count == 0)
            continue;
        s->n_ignored_attrs += e->count;
        gpointer v = g_hash_table_lookup(s->ignored_attrs, e->name);
        g_hash_table_replace(s->ignored_attrs, g_strdup(e->name),
                             GUINT_TO_POINTER(GPOINTER_TO_UINT(v) + (guint)e->count));
    }
}
