/*
 * Decoding one Chakra trace file into the importer's compact records (see chakra-private.h).
 *
 * The file is mapped and its varint length-prefixed messages unpacked by protobuf-c into an arena
 * that is reset after every message, so decoding allocates nothing per node once the arena has
 * grown.  Each Node is translated into a record: enum values and attribute types are checked,
 * the attributes its mapping reads are picked out, and every other one is counted by name in the
 * stats.  Dependency ids are then resolved through a sorted (id, index) table, which also finds
 * duplicate ids and dangling dependencies.  Every error names the file and the node id (or the
 * byte offset, before a node could be decoded).
 */
#include "src/import/chakra-private.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Chakra's CollectiveCommType names, for messages. */
static const char *const coll_type_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER",  "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER",
};
#define N_COLL_TYPES G_N_ELEMENTS(coll_type_names)

static const char *const node_type_names[SSIM_CHAKRA_N_NODE_TYPES] = {
    "INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",   "MEM_STORE_NODE",
    "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE",  "COMM_COLL_NODE",
    "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE",
};

const char *ssim_chakra_node_type_name(guint type)
{
    return type < SSIM_CHAKRA_N_NODE_TYPES ? node_type_names[type] : "?";
}

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

static void arena_reset(ChakraArena *a)
{
    a->used = 0;
    g_ptr_array_set_size(a->big, 0);
}

void chakra_arena_init(ChakraArena *a)
{
    a->buf = g_malloc(ARENA_SIZE);
    a->used = 0;
    a->big = g_ptr_array_new_with_free_func(g_free);
}

void chakra_arena_clear(ChakraArena *a)
{
    g_clear_pointer(&a->buf, g_free);
    g_clear_pointer(&a->big, g_ptr_array_unref);
}

const ProtobufCAllocator chakra_arena_allocator = {arena_alloc, arena_free, NULL};

/* ---- translating nodes ---- */

typedef struct {
    guint64 id;
    guint32 index;
} IdIndex;

void chakra_trace_clear(Trace *t)
{
    g_clear_pointer(&t->recs, g_array_unref);
    g_clear_pointer(&t->deps, g_array_unref);
    g_clear_pointer(&t->dep_local, g_free);
}

static void count_ignored(Loader *L, const char *name)
{
    SsimChakraStats *s = L->stats;
    s->n_ignored_attrs++;
    gpointer v = g_hash_table_lookup(s->ignored_attrs, name);
    if (v)
        g_hash_table_replace(s->ignored_attrs, g_strdup(name),
                             GUINT_TO_POINTER(GPOINTER_TO_UINT(v) + 1));
    else
        g_hash_table_insert(s->ignored_attrs, g_strdup(name), GUINT_TO_POINTER(1));
}

/* Reads an integer-valued attribute of any of protobuf's integer encodings (or bool). */
static gboolean attr_int(const PbAttr *a, gint64 *out)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        *out = a->int32_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        *out = a->int64_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        *out = a->uint32_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        *out = a->sint32_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        *out = a->sint64_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        *out = a->fixed32_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        *out = a->sfixed32_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        *out = a->sfixed64_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        *out = a->bool_val ? 1 : 0;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        if (a->uint64_val > (guint64)G_MAXINT64)
            return FALSE;
        *out = (gint64)a->uint64_val;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        if (a->fixed64_val > (guint64)G_MAXINT64)
            return FALSE;
        *out = (gint64)a->fixed64_val;
        return TRUE;
    default:
        return FALSE;
    }
}

/* Reads a number for num_ops: any integer, or a double. */
static gboolean attr_number(const PbAttr *a, double *out)
{
    gint64 i;
    if (attr_int(a, &i)) {
        *out = (double)i;
        return TRUE;
    }
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL) {
        *out = a->double_val;
        return TRUE;
    }
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL) {
        *out = a->float_val;
        return TRUE;
    }
    return FALSE;
}

/* A string or integer attribute as a name (pg_name, stream), into buf. */
static const char *attr_name(const PbAttr *a, char *buf, gsize size)
{
    gint64 i;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return a->string_val;
    if (attr_int(a, &i)) {
        g_snprintf(buf, size, "%" G_GINT64_FORMAT, i);
        return buf;
    }
    return NULL;
}

/* The attributes the mapping reads. */
typedef struct {
    const PbAttr *comm_type, *comm_size, *comm_src, *comm_dst, *comm_tag, *pg_name;
    const PbAttr *num_ops, *tensor_size, *is_cpu_op, *stream;
} Attrs;

/* Sets `error` to "PATH: node ID (NAME): <message>" and returns FALSE. */
static gboolean node_fail(GError **error, const Trace *t, const PbNode *n, int code,
                          const char *fmt, ...) G_GNUC_PRINTF(5, 6);

static gboolean node_fail(GError **error, const Trace *t, const PbNode *n, int code,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SSIM_CONFIG_ERROR, code, "%s: node %" G_GUINT64_FORMAT " (%s): %s", t->path,
                (guint64)n->id, n->name, msg);
    return FALSE;
}

#define NODE_FAIL(code, ...) return node_fail(error, t, n, code, __VA_ARGS__)

/* An attribute that must be a non-negative integer fitting `max`. */
static gboolean need_uint(const Trace *t, const PbNode *n, const PbAttr *a, const char *what,
                          gint64 max, gint64 *out, GError **error)
{
    if (!a)
        NODE_FAIL(SSIM_CONFIG_ERROR_MISSING, "%s has no %s", ssim_chakra_node_type_name(n->type),
                  what);
    if (!attr_int(a, out) || *out < 0 || *out > max)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "attribute %s must be an integer in 0..%" G_GINT64_FORMAT, what, max);
    return TRUE;
}

static guint32 group_for(Loader *L, const Trace *t, const PbNode *n, const PbAttr *pg,
                         GError **error)
{
    char buf[32];
    if (!pg) {
        if (L->world == SSIM_NONE) {
            g_autofree guint32 *all = g_new(guint32, L->n_ranks);
            for (guint r = 0; r < L->n_ranks; r++)
                all[r] = r;
            L->world = ssim_graph_add_group(L->graph, "world", all, L->n_ranks, error);
            if (L->world == SSIM_NONE)
                return SSIM_NONE;
            L->stats->n_groups++;
        }
        return L->world;
    }
    const char *name = attr_name(pg, buf, sizeof buf);
    if (!name) {
        node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE, "pg_name must be a string or an integer");
        return SSIM_NONE;
    }
    guint32 g = ssim_graph_find_group(L->graph, name);
    if (g == SSIM_NONE) {
        node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE, "process group '%s' is not defined%s", name,
                  L->have_json ? " in the comm-group JSON"
                               : " (no comm-group JSON was found; pass one)");
        return SSIM_NONE;
    }
    guint nr;
    const guint32 *ranks = ssim_graph_group_ranks(L->graph, g, &nr);
    for (guint i = 0; i < nr; i++)
        if (ranks[i] == t->rank)
            return g;
    node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE, "rank %u is not a member of process group '%s'",
              t->rank, name);
    return SSIM_NONE;
}

/* Maps Chakra's CollectiveCommType to shiftsim's; FALSE for BARRIER (handled apart). */
static gboolean coll_kind(gint64 type, SsimCollKind *out, gboolean *approx)
{
    *approx = FALSE;
    switch (type) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE:
        *out = SSIM_COLL_ALLREDUCE;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE:
        *out = SSIM_COLL_REDUCE;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER:
        *out = SSIM_COLL_ALLGATHER;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST:
        *out = SSIM_COLL_BROADCAST;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL:
        *out = SSIM_COLL_ALLTOALL;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER_BLOCK:
        *out = SSIM_COLL_REDUCESCATTER;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__GATHER:
        *out = SSIM_COLL_ALLGATHER;
        *approx = TRUE;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__SCATTER:
        *out = SSIM_COLL_REDUCESCATTER;
        *approx = TRUE;
        break;
    default:
        return FALSE;
    }
    return TRUE;
}

/* Translates one decoded node into a record (and its dependency ids). */
static gboolean translate(Loader *L, Trace *t, const PbNode *n, GError **error)
{
    SsimChakraStats *s = L->stats;
    guint type = (guint)n->type;
    if (type >= SSIM_CHAKRA_N_NODE_TYPES)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "unknown node type %d (this importer knows "
                  "Chakra schema 0.0.4's types 0..%d)",
                  (int)n->type, SSIM_CHAKRA_N_NODE_TYPES - 1);
    s->n_nodes++;
    s->by_type[type]++;

    Rec r = {.id = n->id,
             .type = (guint8)type,
             .peer = SSIM_NONE,
             .tag = SSIM_TAG_AUTO,
             .group = SSIM_NONE,
             .stream = SSIM_NONE,
             .name = SSIM_NONE,
             .duration = -1};
    switch (type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        r.map = MAP_COMPUTE;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE:
        r.map = MAP_MEM;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
        r.map = MAP_COLL;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
        r.map = MAP_SEND;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        r.map = MAP_RECV;
        break;
    default:
        r.map = MAP_ELIDE;
        break;
    }
    if (r.map == MAP_ELIDE && type != CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE && L->opts.strict)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "%s is not supported (strict mode)",
                  ssim_chakra_node_type_name(type));

    /* Pick out the attributes this node's mapping reads; count every other one. */
    Attrs at = {0};
    for (gsize i = 0; i < n->n_attr; i++) {
        const PbAttr *a = n->attr[i];
        const char *k = a->name;
        const PbAttr **slot = NULL;
        gboolean comm = r.map == MAP_COLL || r.map == MAP_SEND || r.map == MAP_RECV;
        if (strcmp(k, "is_cpu_op") == 0)
            slot = &at.is_cpu_op;
        else if (strcmp(k, "stream") == 0 && r.map != MAP_ELIDE)
            slot = &at.stream;
        else if (comm && strcmp(k, "comm_size") == 0)
            slot = &at.comm_size;
        else if (r.map == MAP_COLL && strcmp(k, "comm_type") == 0)
            slot = &at.comm_type;
        else if (r.map == MAP_COLL && strcmp(k, "pg_name") == 0)
            slot = &at.pg_name;
        else if (comm && strcmp(k, "comm_tag") == 0)
            slot = &at.comm_tag;
        else if (r.map == MAP_SEND && strcmp(k, "comm_dst") == 0)
            slot = &at.comm_dst;
        else if (r.map == MAP_RECV && strcmp(k, "comm_src") == 0)
            slot = &at.comm_src;
        else if ((r.map == MAP_COMPUTE) && strcmp(k, "num_ops") == 0)
            slot = &at.num_ops;
        else if ((r.map == MAP_COMPUTE || r.map == MAP_MEM) && strcmp(k, "tensor_size") == 0)
            slot = &at.tensor_size;
        if (slot)
            *slot = a;
        else
            count_ignored(L, k);
    }

    gint64 v = 0;
    if (at.is_cpu_op && !attr_int(at.is_cpu_op, &v))
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "is_cpu_op must be a bool or an integer");
    r.cpu = v != 0;
    if (at.stream) {
        char buf[40], sname[48];
        const char *sv = attr_name(at.stream, buf, sizeof buf);
        if (!sv || !*sv)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "stream must be a string or an integer");
        if (sv == buf) {
            g_snprintf(sname, sizeof sname, "stream%s", buf);
            sv = sname;
        }
        r.stream = ssim_graph_stream(L->graph, t->rank, sv);
    }
    if (L->opts.keep_names && n->name && *n->name && r.map != MAP_ELIDE)
        r.name = ssim_graph_intern(L->graph, n->name);

    gint64 size = 0, peer = 0, tag = 0;
    gboolean approx = FALSE;
    switch (r.map) {
    case MAP_COMPUTE:
    case MAP_MEM: {
        double ops = 0;
        if (at.num_ops && (!attr_number(at.num_ops, &ops) || !(ops >= 0)))
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "num_ops must be a non-negative number");
        if (at.tensor_size &&
            !need_uint(t, n, at.tensor_size, "tensor_size", G_MAXINT64, &size, error))
            return FALSE;
        r.flops = ops;
        r.bytes = (guint64)size;
        if (n->duration_micros > (guint64)(G_MAXINT64 / SSIM_US))
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "duration_micros %" G_GUINT64_FORMAT " is out of range",
                      (guint64)n->duration_micros);
        gboolean priced = r.map == MAP_MEM ? size > 0 : ops > 0 || size > 0;
        if (n->duration_micros > 0 && !(L->opts.use_roofline && priced)) {
            r.duration = (SsimTime)n->duration_micros * SSIM_US;
            if (r.map == MAP_COMPUTE)
                s->n_compute_timed++;
        } else if (priced) {
            r.duration = -1;
            if (r.map == MAP_COMPUTE)
                s->n_compute_roofline++;
        } else {
            r.duration = 0;
            if (r.map == MAP_COMPUTE)
                s->n_compute_empty++;
        }
        if (r.map == MAP_MEM) {
            if (L->opts.strict)
                NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "%s is not supported (strict mode)",
                          ssim_chakra_node_type_name(type));
            r.flops = 0;
            s->n_mem++;
            s->n_approximated++;
        }
        break;
    }
    case MAP_COLL: {
        gint64 ct;
        if (!at.comm_type)
            NODE_FAIL(SSIM_CONFIG_ERROR_MISSING, "COMM_COLL_NODE has no comm_type");
        if (!attr_int(at.comm_type, &ct) || ct < 0 || ct >= (gint64)N_COLL_TYPES)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "unknown comm_type %" G_GINT64_FORMAT " (known: 0 ALL_REDUCE .. 9 BARRIER)",
                      attr_int(at.comm_type, &ct) ? ct : -1);
        SsimCollKind kind = SSIM_COLL_ALLREDUCE;
        if (ct == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER) {
            r.map = MAP_BARRIER;
            s->n_barriers++;
        } else {
            coll_kind(ct, &kind, &approx);
            if (approx && L->opts.strict)
                NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "%s is not supported (strict mode)",
                          coll_type_names[ct]);
            if (!need_uint(t, n, at.comm_size, "comm_size", G_MAXINT64, &size, error))
                return FALSE;
            s->n_collectives++;
            s->n_approximated += approx;
        }
        r.coll = (guint8)kind;
        r.bytes = (guint64)size;
        r.group = group_for(L, t, n, at.pg_name, error);
        if (r.group == SSIM_NONE)
            return FALSE;
        break;
    }
    case MAP_SEND:
    case MAP_RECV: {
        gboolean send = r.map == MAP_SEND;
        if (!need_uint(t, n, at.comm_size, "comm_size", G_MAXINT64, &size, error) ||
            !need_uint(t, n, send ? at.comm_dst : at.comm_src, send ? "comm_dst" : "comm_src",
                       G_MAXINT32, &peer, error))
            return FALSE;
        if ((guint64)peer >= L->n_ranks)
            NODE_FAIL(SSIM_CONFIG_ERROR_MISSING,
                      "%s rank %" G_GINT64_FORMAT
                      ", but there are only %u trace files (%s.0.et .. %s.%u.et)",
                      send ? "sends to" : "receives from", peer, L->n_ranks, L->prefix, L->prefix,
                      L->n_ranks - 1);
        if ((guint)peer == t->rank)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "%s its own rank %u",
                      send ? "sends to" : "receives from", t->rank);
        r.peer = (guint32)peer;
        r.bytes = (guint64)size;
        if (send)
            s->n_sends++;
        else
            s->n_recvs++;
        break;
    }
    default:
        s->n_elided++;
        s->elided_by_type[type]++;
        break;
    }
    if (at.comm_tag) {
        if (!need_uint(t, n, at.comm_tag, "comm_tag", (gint64)G_MAXUINT32 - 1, &tag, error))
            return FALSE;
        r.tag = (guint32)tag;
    }

    r.dep_first = t->deps->len;
    g_array_append_vals(t->deps, n->data_deps, n->n_data_deps);
    g_array_append_vals(t->deps, n->ctrl_deps, n->n_ctrl_deps);
    if (t->deps->len > G_MAXUINT32 - 1)
        NODE_ERR(SSIM_CONFIG_ERROR_VALUE, "%s: too many dependencies", t->path);
    r.n_deps = t->deps->len - r.dep_first;
    g_array_append_val(t->recs, r);
    return TRUE;
}

/* Reads a varint at *pos; FALSE when the buffer ends first or it is longer than 10 bytes. */
static gboolean read_varint(const guint8 *buf, gsize len, gsize *pos, guint64 *out)
{
    guint64 v = 0;
    for (guint shift = 0; shift < 70 && *pos < len; shift += 7) {
        guint8 c = buf[(*pos)++];
        v |= (guint64)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return TRUE;
        }
    }
    return FALSE;
}

/* Decodes the file into t->recs / t->deps. */
static gboolean read_trace(Loader *L, Trace *t, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(GMappedFile) mf = g_mapped_file_new(t->path, FALSE, &local);
    if (!mf) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", t->path,
                    local->message);
        return FALSE;
    }
    const guint8 *buf = (const guint8 *)g_mapped_file_get_contents(mf);
    gsize len = g_mapped_file_get_length(mf);
    gsize pos = 0;
    guint64 k = 0;
    while (pos < len) {
        gsize at = pos;
        guint64 mlen;
        if (!read_varint(buf, len, &pos, &mlen))
            NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                     "%s: byte %" G_GSIZE_FORMAT ": message %" G_GUINT64_FORMAT
                     ": truncated or malformed length prefix",
                     t->path, at, k);
        if (mlen > len - pos)
            NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                     "%s: byte %" G_GSIZE_FORMAT ": message %" G_GUINT64_FORMAT
                     " claims %" G_GUINT64_FORMAT " bytes but only %" G_GSIZE_FORMAT
                     " remain (truncated file?)",
                     t->path, at, k, mlen, len - pos);
        if (k == 0) {
            ChakraProtoMsg__GlobalMetadata *md =
                chakra_proto_msg__global_metadata__unpack(&L->alloc, mlen, buf + pos);
            if (!md)
                NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                         "%s: byte %" G_GSIZE_FORMAT ": the first message is not a valid Chakra "
                         "GlobalMetadata (not a Chakra trace, or a corrupt one)",
                         t->path, at);
            if (t->rank == 0 && !L->stats->version)
                L->stats->version = g_strdup(md->version ? md->version : "");
        } else {
            PbNode *n = chakra_proto_msg__node__unpack(&L->alloc, mlen, buf + pos);
            if (!n) {
                char prev[32] = "none";
                if (t->recs->len)
                    g_snprintf(prev, sizeof prev, "%" G_GUINT64_FORMAT,
                               g_array_index(t->recs, Rec, t->recs->len - 1).id);
                NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                         "%s: byte %" G_GSIZE_FORMAT ": message %" G_GUINT64_FORMAT
                         " (%" G_GUINT64_FORMAT " bytes, after node %s) is not a valid Chakra "
                         "Node (corrupt file?)",
                         t->path, at, k, mlen, prev);
            }
            gboolean ok = translate(L, t, n, error);
            arena_reset(&L->arena);
            if (!ok)
                return FALSE;
        }
        arena_reset(&L->arena);
        pos += mlen;
        k++;
    }
    if (k == 0)
        NODE_ERR(SSIM_CONFIG_ERROR_PARSE, "%s: empty file: no GlobalMetadata", t->path);
    return TRUE;
}

static int cmp_id_index(const void *a, const void *b)
{
    const IdIndex *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : (x->index > y->index) - (x->index < y->index);
}

/* Resolves dependency ids to local indices; finds duplicate ids and dangling dependencies. */
static gboolean resolve(Trace *t, GError **error)
{
    guint n = t->recs->len;
    g_autofree IdIndex *ids = g_new(IdIndex, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        ids[i] = (IdIndex){g_array_index(t->recs, Rec, i).id, i};
    qsort(ids, n, sizeof *ids, cmp_id_index);
    for (guint i = 1; i < n; i++)
        if (ids[i].id == ids[i - 1].id)
            NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                     "%s: node %" G_GUINT64_FORMAT ": the id is used twice (messages %u and %u)",
                     t->path, ids[i].id, ids[i - 1].index + 1, ids[i].index + 1);
    t->dep_local = g_new(guint32, MAX(t->deps->len, 1));
    for (guint i = 0; i < n; i++) {
        const Rec *r = &g_array_index(t->recs, Rec, i);
        for (guint j = 0; j < r->n_deps; j++) {
            guint64 d = g_array_index(t->deps, guint64, r->dep_first + j);
            guint lo = 0, hi = n;
            while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (ids[mid].id < d)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == n || ids[lo].id != d)
                NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
                         "%s: node %" G_GUINT64_FORMAT ": depends on node %" G_GUINT64_FORMAT
                         ", which is not in this trace (dangling dependency)",
                         t->path, r->id, d);
            t->dep_local[r->dep_first + j] = ids[lo].index;
        }
    }
    return TRUE;
}

gboolean chakra_read_trace(Loader *L, Trace *t, GError **error)
{
    return read_trace(L, t, error) && resolve(t, error);
}
