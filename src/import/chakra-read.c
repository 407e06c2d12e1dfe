/*
 * Decoding one Chakra trace file into the importer's compact records (see chakra-private.h).
 *
 * The file is mapped and walked message by message (a varint length before each).  The first
 * message, the GlobalMetadata, is unpacked by protobuf-c into an arena; every Node goes through
 * one of two decoders into a NodeView: the fast wire decoder (chakra-wire.c, the default) or the
 * reference path, protobuf-c's generated unpacker into the arena, reset after every node, then
 * copied into a view (SsimChakraOptions.reference_decoder; the tests compare the two).  Each view
 * is translated into a record: enum values and attribute types are checked, the attributes its
 * mapping reads are picked out, and every other one is counted by name.  Dependency ids are then
 * resolved through a sorted (id, index) table, which also finds duplicate ids and dangling
 * dependencies.  Every error names the file and the node id (or the byte offset, before a node
 * could be decoded).
 *
 * Nothing here writes the graph or the loader: group names are looked up in the loader's own
 * copy of the comm-group table, the all-ranks group is left for emission to create, and stream
 * and node names are copied into the trace's string buffer, so traces decode on any thread.
 */
#include "src/import/chakra-private.h"

#include <shiftsim/alloc.h>
#include <shiftsim/data.h>

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- translating nodes ---- */

typedef struct {
    guint64 id;
    guint32 index;
} IdIndex;

void chakra_trace_init(Trace *t, const char *path, guint rank)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    t->rank = rank;
    t->recs = g_array_new(FALSE, FALSE, sizeof(Rec));
    t->deps = g_array_new(FALSE, FALSE, sizeof(guint64));
    t->strs = g_byte_array_new();
    t->ignored = chakra_ignored_new();
    for (guint i = 0; i < G_N_ELEMENTS(t->default_stream); i++)
        t->default_stream[i] = SSIM_NONE;
    t->last_group = SSIM_NONE;
}

void chakra_trace_clear(Trace *t)
{
    g_clear_pointer(&t->recs, g_array_unref);
    g_clear_pointer(&t->colls, g_array_unref);
    g_clear_pointer(&t->deps, g_array_unref);
    g_clear_pointer(&t->dep_local, g_free);
    g_clear_pointer(&t->order, g_free);
    g_clear_pointer(&t->strs, g_byte_array_unref);
    g_clear_pointer(&t->ignored, chakra_ignored_free);
    g_clear_pointer(&t->version, g_free);
}

/* Copies `n` bytes at `s` (and a NUL) into the trace's strings; returns the offset. */
static guint32 add_str(Trace *t, const char *s, gsize n)
{
    guint32 at = t->strs->len;
    g_byte_array_append(t->strs, (const guint8 *)s, (guint)n);
    g_byte_array_append(t->strs, (const guint8 *)"", 1);
    return at;
}

/* Reads an integer-valued attribute of any of protobuf's integer encodings (or bool). */
static inline gboolean attr_int(const AttrVal *a, gint64 *out)
{
    if (a->kind != AV_INT)
        return FALSE;
    *out = a->i;
    return TRUE;
}

/* Reads a number for num_ops: any integer, or a double. */
static gboolean attr_number(const AttrVal *a, double *out)
{
    gint64 i;
    if (attr_int(a, &i)) {
        *out = (double)i;
        return TRUE;
    }
    if (a->kind == AV_REAL) {
        *out = a->d;
        return TRUE;
    }
    return FALSE;
}

/* A string or integer attribute as a name (pg_name, stream), into buf (NUL-terminated). */
static const char *attr_name(const AttrVal *a, char *buf, gsize size, char **longer)
{
    gint64 i;
    if (a->kind == AV_STRING) {
        if (a->n < size) {
            memcpy(buf, a->s, a->n);
            buf[a->n] = '\0';
            return buf;
        }
        return *longer = g_strndup(a->s, a->n);
    }
    if (attr_int(a, &i)) {
        g_snprintf(buf, size, "%" G_GINT64_FORMAT, i);
        return buf;
    }
    return NULL;
}

/* The attributes the mapping reads (NULL: absent, or not read by this node's mapping). */
typedef struct {
    const AttrVal *comm_type, *comm_size, *comm_src, *comm_dst, *comm_tag, *pg_name;
    const AttrVal *num_ops, *tensor_size, *is_cpu_op, *stream;
    const AttrVal *involved_dim, *comm_priority;
} Attrs;

/* Sets `error` to "PATH: node ID (NAME): <message>" and returns FALSE. */
static gboolean node_fail(GError **error, const Trace *t, const NodeView *n, int code,
                          const char *fmt, ...) G_GNUC_PRINTF(5, 6);

static gboolean node_fail(GError **error, const Trace *t, const NodeView *n, int code,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    Bytes name = chakra_view_name(n);
    g_set_error(error, SSIM_CONFIG_ERROR, code, "%s: node %" G_GUINT64_FORMAT " (%.*s): %s",
                t->path, n->id, (int)name.n, name.s, msg);
    return FALSE;
}

#define NODE_FAIL(code, ...) return node_fail(error, t, n, code, __VA_ARGS__)

/* The node's duration_micros in ns (0 without one); FALSE when it does not fit. */
static gboolean node_duration(const Trace *t, const NodeView *n, SsimTime *out, GError **error)
{
    if (n->duration_micros > (guint64)(G_MAXINT64 / SSIM_US))
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "duration_micros %" G_GUINT64_FORMAT " is out of range",
                  n->duration_micros);
    *out = (SsimTime)n->duration_micros * SSIM_US;
    return TRUE;
}

/* An attribute that must be a non-negative integer fitting `max`. */
static gboolean need_uint(const Trace *t, const NodeView *n, const AttrVal *a, const char *what,
                          gint64 max, gint64 *out, GError **error)
{
    if (!a)
        NODE_FAIL(SSIM_CONFIG_ERROR_MISSING, "%s has no %s",
                  ssim_chakra_node_type_name((guint)n->type), what);
    if (!attr_int(a, out) || *out < 0 || *out > max)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "attribute %s must be an integer in 0..%" G_GINT64_FORMAT, what, max);
    return TRUE;
}

static gboolean has_rank(const LoaderGroup *g, guint32 rank)
{
    guint lo = 0, hi = g->n_ranks;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g->sorted[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_ranks && g->sorted[lo] == rank;
}

/* The group of a collective: a JSON group by pg_name, or GROUP_WORLD when there is none. */
static guint32 group_for(const Loader *L, Trace *t, const NodeView *n, const AttrVal *pg,
                         GError **error)
{
    char buf[64];
    if (!pg) {
        /* Emission creates "world"; a JSON group of that name would make it fail there, so the
         * failure is reported here, at the node, in the order a sequential load meets it. */
        if (g_hash_table_contains(L->groups, "world")) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "group 'world' is defined twice");
            return SSIM_NONE;
        }
        return GROUP_WORLD;
    }
    /* A trace uses a few groups over and over: the last one's name is kept. */
    if (pg->kind == AV_STRING && t->last_group != SSIM_NONE && pg->n == t->last_pg_len &&
        memcmp(pg->s, t->last_pg, pg->n) == 0)
        return t->last_group;
    g_autofree char *longer = NULL;
    const char *name = attr_name(pg, buf, sizeof buf, &longer);
    if (!name) {
        node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE, "pg_name must be a string or an integer");
        return SSIM_NONE;
    }
    char number[16];
    const char *key = name;
    if (L->opts.astra_rules) {
        /* Workload::extract_comm_group: "" and "0" are every rank, any other name a number. */
        int id = 0;
        if (!*name || strcmp(name, "0") == 0)
            return GROUP_WORLD;
        if (!chakra_astra_group_id(name, &id)) {
            node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE,
                      "pg_name '%s' is not a number, which ASTRA-sim reads it as (std::stoi "
                      "throws)",
                      name);
            return SSIM_NONE;
        }
        g_snprintf(number, sizeof number, "%d", id);
        key = number;
    }
    const LoaderGroup *g = g_hash_table_lookup(L->groups, key);
    if (!g) {
        node_fail(error, t, n, SSIM_CONFIG_ERROR_VALUE, "process group '%s' is not defined%s", name,
                  L->have_json ? " in the comm-group JSON"
                               : " (no comm-group JSON was found; pass one)");
        return SSIM_NONE;
    }
    if (has_rank(g, t->rank)) {
        if (pg->kind == AV_STRING && pg->n < sizeof t->last_pg) {
            memcpy(t->last_pg, pg->s, pg->n);
            t->last_pg_len = pg->n;
            t->last_group = g->index;
        }
        return g->index;
    }
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

/* Which known attributes a node of mapping `map` reads (a node replayed by its duration,
 * `timed`, reads only is_cpu_op and stream). */
static gboolean reads_attr(KnownAttr k, MapKind map, gboolean astra, gboolean own_rank,
                           gboolean timed)
{
    gboolean comm = map == MAP_COLL || map == MAP_SEND || map == MAP_RECV;
    if (timed)
        return k == KA_IS_CPU_OP || k == KA_STREAM;
    switch (k) {
    case KA_INVOLVED_DIM:
    case KA_COMM_PRIORITY:
        return astra && map == MAP_COLL; /* Workload::issue_coll_comm */
    case KA_IS_CPU_OP:
        return TRUE;
    case KA_STREAM:
        return map != MAP_ELIDE;
    case KA_COMM_SIZE:
    case KA_COMM_TAG:
        return comm;
    case KA_COMM_TYPE:
    case KA_PG_NAME:
        return map == MAP_COLL;
    case KA_COMM_DST:
        return map == MAP_SEND || (own_rank && map == MAP_RECV);
    case KA_COMM_SRC:
        return map == MAP_RECV || (own_rank && map == MAP_SEND);
    case KA_NUM_OPS:
        return map == MAP_COMPUTE;
    case KA_TENSOR_SIZE:
        return map == MAP_COMPUTE || map == MAP_MEM;
    default:
        return FALSE;
    }
}

static MapKind map_of(guint type)
{
    switch (type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        return MAP_COMPUTE;
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE:
        return MAP_MEM;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
        return MAP_COLL;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
        return MAP_SEND;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        return MAP_RECV;
    default:
        return MAP_ELIDE;
    }
}

/* memcmp(a, b, n) == 0 for the short names of attributes, without the call. */
static inline gboolean same_bytes(const char *a, const char *b, gsize n)
{
    for (gsize i = 0; i < n; i++)
        if (a[i] != b[i])
            return FALSE;
    return TRUE;
}

/* Counts `count` instances of the attribute named by the `len` bytes at `name`, the `pos`-th
 * unknown one of its node (N_GUESS: a known name its mapping does not read). */
static inline void count_ignored(Trace *t, guint pos, const char *name, gsize len, guint count)
{
    /* An entry's name has no NUL: equal bytes mean the name has none either. */
    IgnoredEntry *e = pos < N_GUESS ? t->guess[pos] : NULL;
    if (!e || e->len != len || !same_bytes(e->name, name, len)) {
        const char *nul = memchr(name, 0, len); /* C reads the name up to a NUL */
        e = chakra_ignored_entry(t->ignored, name, nul ? (gsize)(nul - name) : len);
        if (pos < N_GUESS)
            t->guess[pos] = e;
    }
    e->count += count;
}

/* What ASTRA-sim's Workload::issue_coll_comm reads from collective node `n` beside its type,
 * size and group: comm_priority (0 without one) and involved_dim (a bool_list; without one,
 * four values, all true). */
static gboolean astra_coll(const Trace *t, const NodeView *n, const Attrs *at, SsimCollAttrs *out,
                           GError **error)
{
    /* ETFeederNode::get_attr<uint32_t> casts any number and throws at anything else.  (Under
     * any scheduling policy the priority reorders nothing: a rank runs one communication node
     * at a time, HardwareResource's rule.) */
    const AttrVal *p = at->comm_priority;
    gint64 i = 0;
    out->priority = 0; /* also for a uint64 above G_MAXINT64, whose value the view keeps not */
    if (p && p->kind != AV_BIG_UINT) {
        if (attr_int(p, &i))
            out->priority = (guint32)i; /* static_cast: the low 32 bits */
        else if (p->kind == AV_REAL && p->d > -1.0 && p->d < 4294967296.0)
            out->priority = (guint32)p->d;
        else
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "comm_priority is neither an integer nor a real in 0 .. 2^32 (ASTRA-sim "
                      "reads it as a uint32: it throws at a string or a list, and a real out of "
                      "range is undefined)");
    }
    out->n_dims = 4;
    out->dims = 0xf;
    if (at->involved_dim) {
        if (at->involved_dim->kind != AV_BOOLS)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "involved_dim is not a bool_list (ASTRA-sim exits: \"Expected bool_list "
                      "in involved_dim but found another type.\")");
        out->n_dims = at->involved_dim->n;
        out->dims = (guint32)(guint64)at->involved_dim->i;
    }
    return TRUE;
}

/* Appends record `r` of node `n` with the node's dependency ids, and under astra_rules (with
 * node ids kept) what ASTRA-sim reads from it if it is a collective (`coll`; NULL: none). */
static gboolean push_rec(const Loader *L, Trace *t, const NodeView *n, Rec *r,
                         const SsimCollAttrs *coll, GError **error)
{
    if (L->opts.astra_rules && L->opts.keep_node_ids) {
        if (!t->colls)
            t->colls = g_array_new(FALSE, TRUE, sizeof(SsimCollAttrs));
        g_array_set_size(t->colls, t->recs->len + 1);
        if (coll)
            g_array_index(t->colls, SsimCollAttrs, t->recs->len) = *coll;
    }
    SsimChakraStats *s = &t->stats;
    r->dep_first = t->deps->len;
    guint n_ctrl = L->opts.ignore_ctrl_deps ? 0 : n->ctrl_deps.n;
    guint nd = n->data_deps.n + n_ctrl;
    if (L->opts.ignore_ctrl_deps)
        s->n_ctrl_ignored += n->ctrl_deps.n;
    t->has_ctrl |= n_ctrl > 0;
    if ((guint64)t->deps->len + nd > G_MAXUINT32 - 1)
        NODE_ERR(SSIM_CONFIG_ERROR_VALUE, "%s: too many dependencies", t->path);
    if (nd > 0) {
        guint64 *d = ssim_array_push(t->deps, &t->deps_room, sizeof(guint64), nd);
        if (n->data_deps.n > 0)
            memcpy(d, n->data_deps.v, n->data_deps.n * sizeof *d);
        if (n_ctrl > 0)
            memcpy(d + n->data_deps.n, n->ctrl_deps.v, n_ctrl * sizeof *d);
    }
    r->n_deps = nd;
    *(Rec *)ssim_array_push(t->recs, &t->recs_room, sizeof(Rec), 1) = *r;
    return TRUE;
}

/* Translates one decoded node into a record (and its dependency ids). */
static gboolean translate(const Loader *L, Trace *t, const NodeView *n, GError **error)
{
    SsimChakraStats *s = &t->stats;
    guint type = (guint)n->type;
    if (type >= SSIM_CHAKRA_N_NODE_TYPES)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "unknown node type %d (this importer knows "
                  "Chakra schema 0.0.4's types 0..%d)",
                  (int)n->type, SSIM_CHAKRA_N_NODE_TYPES - 1);
    s->n_nodes++;
    s->by_type[type]++;
    if (L->opts.astra_rules && (type == CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE ||
                                type > CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE))
        /* Workload::issue records every node in its statistics first, which know no other
         * types (Statistics::OperatorStatistics::get_operator_type asserts). */
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "%s, on which ASTRA-sim aborts as it issues the node (its statistics assert: "
                  "\"Invalid node_type\")",
                  ssim_chakra_node_type_name(type));

    Rec r = {.id = n->id,
             .type = (guint8)type,
             .map = (guint8)map_of(type),
             .peer = SSIM_NONE,
             .tag = SSIM_TAG_AUTO,
             .group = SSIM_NONE,
             .stream_str = SSIM_NONE,
             .name_str = SSIM_NONE,
             .stream = SSIM_NONE,
             .name = SSIM_NONE,
             .duration = -1};
    if (r.map == MAP_ELIDE && type != CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE && L->opts.strict)
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "%s is not supported (strict mode)",
                  ssim_chakra_node_type_name(type));

    if (L->opts.astra_rules && L->opts.astra_track_mem) {
        /* LocalMemUsageTracker::recordReads, then recordWrites, at every node's end. */
        gboolean has[2] = {FALSE, FALSE};
        static const char *const io[2] = {"inputs", "outputs"};
        for (guint i = 0; i < n->unknown.n; i++)
            for (int k = 0; k < 2; k++)
                has[k] |= n->unknown.v[i].n == strlen(io[k]) &&
                          memcmp(n->unknown.v[i].s, io[k], strlen(io[k])) == 0;
        for (int k = 0; k < 2; k++)
            if (!has[k])
                NODE_FAIL(SSIM_CONFIG_ERROR_MISSING,
                          "%s has no %s attribute, which ASTRA-sim's local memory tracker "
                          "(track-local-mem) reads as the node ends (it throws \"Attribute '%s' "
                          "not found\")",
                          ssim_chakra_node_type_name(type), io[k], io[k]);
    }

    /* Pick out the attributes this node's mapping reads; count every other one.  ASTRA-sim's
     * workload layer also reads a send's comm_src and a receive's comm_dst (its own rank). */
    gboolean own_rank = L->opts.astra_rules && !L->opts.astra_custom;
    /* Workload::issue under replay-only: every node waits its duration (issue_replay). */
    r.timed = L->opts.astra_rules && L->opts.astra_replay_only;
    Attrs at = {0};
    const AttrVal **slot[KA_N] = {
        [KA_IS_CPU_OP] = &at.is_cpu_op,       [KA_STREAM] = &at.stream,
        [KA_COMM_SIZE] = &at.comm_size,       [KA_COMM_TYPE] = &at.comm_type,
        [KA_PG_NAME] = &at.pg_name,           [KA_COMM_TAG] = &at.comm_tag,
        [KA_COMM_DST] = &at.comm_dst,         [KA_COMM_SRC] = &at.comm_src,
        [KA_NUM_OPS] = &at.num_ops,           [KA_TENSOR_SIZE] = &at.tensor_size,
        [KA_INVOLVED_DIM] = &at.involved_dim, [KA_COMM_PRIORITY] = &at.comm_priority,
    };
    for (guint32 mask = n->known_mask; mask; mask &= mask - 1) {
        guint k = (guint)__builtin_ctz(mask);
        if (reads_attr((KnownAttr)k, (MapKind)r.map, L->opts.astra_rules, own_rank, r.timed))
            *slot[k] = &n->known[k];
        else
            count_ignored(t, N_GUESS, chakra_known_attr_names[k],
                          strlen(chakra_known_attr_names[k]), n->n_known[k]);
    }
    for (guint i = 0; i < n->unknown.n; i++)
        count_ignored(t, i, n->unknown.v[i].s, n->unknown.v[i].n, 1);

    gint64 v = 0;
    if (at.is_cpu_op && !attr_int(at.is_cpu_op, &v))
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "is_cpu_op must be a bool or an integer");
    r.cpu = v != 0;
    if (at.stream) {
        char buf[40];
        g_autofree char *longer = NULL;
        const char *sv = at.stream->kind == AV_STRING || at.stream->kind == AV_INT
                             ? attr_name(at.stream, buf, sizeof buf, &longer)
                             : NULL;
        if (!sv || !*sv)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "stream must be a string or an integer");
        if (at.stream->kind == AV_INT) {
            char sname[48];
            g_snprintf(sname, sizeof sname, "stream%s", buf);
            r.stream_str = add_str(t, sname, strlen(sname));
        } else {
            r.stream_str = add_str(t, sv, strlen(sv));
        }
    }
    if (L->opts.keep_names && (r.map != MAP_ELIDE || r.timed || L->opts.keep_node_ids)) {
        Bytes name = chakra_view_name(n);
        if (name.n > 0)
            r.name_str = add_str(t, name.s, name.n);
    }
    if (r.timed) {
        if (!node_duration(t, n, &r.duration, error))
            return FALSE;
        s->n_replayed++;
        return push_rec(L, t, n, &r, NULL, error);
    }

    if (L->opts.astra_rules && r.cpu &&
        (r.map == MAP_COLL || r.map == MAP_SEND || r.map == MAP_RECV))
        /* Workload::issue_comm, for a host-side collective call too. */
        NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                  "%s on the CPU (is_cpu_op), which ASTRA-sim refuses (it throws \"Comm node "
                  "should not be on CPU\")",
                  ssim_chakra_node_type_name((guint)n->type));
    if (r.map == MAP_COLL && !at.comm_type && r.cpu) {
        /* PyTorch's host-side call of a collective (c10d::allreduce_, c10d::broadcast_, ...),
         * which Chakra's converter has left a COMM_COLL_NODE without comm_type: the collective
         * itself is the GPU kernel node it launches (ncclKernel_..., with comm_type and
         * comm_size).  The call is host work: a CPU compute op of its duration (it has no
         * num_ops or tensor_size to price it by). */
        if (L->opts.strict)
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "COMM_COLL_NODE on the CPU without comm_type is not supported (strict "
                      "mode)");
        r.map = MAP_COMPUTE;
        s->n_cpu_colls++;
    }
    gint64 size = 0, peer = 0, tag = 0;
    gboolean approx = FALSE;
    SsimCollAttrs coll = {0};
    switch (r.map) {
    case MAP_COMPUTE:
    case MAP_MEM: {
        double ops = 0;
        if (L->opts.astra_rules && L->opts.astra_roofline && r.map == MAP_COMPUTE && !r.cpu &&
            (!at.num_ops || !at.tensor_size))
            /* Workload::issue_comp reads both (num_ops first) and throws without one. */
            NODE_FAIL(SSIM_CONFIG_ERROR_MISSING,
                      "COMP_NODE has no %s, which ASTRA-sim's roofline (roofline-enabled) reads "
                      "(it throws \"Attribute %s not found\"); a GPU compute node needs num_ops "
                      "and tensor_size under it",
                      at.num_ops ? "tensor_size" : "num_ops",
                      at.num_ops ? "tensor_size" : "num_ops");
        if (at.num_ops && (!attr_number(at.num_ops, &ops) || !(ops >= 0)))
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE, "num_ops must be a non-negative number");
        if (at.tensor_size &&
            !need_uint(t, n, at.tensor_size, "tensor_size", G_MAXINT64, &size, error))
            return FALSE;
        r.flops = ops;
        r.bytes = (guint64)size;
        SsimTime duration;
        if (!node_duration(t, n, &duration, error))
            return FALSE;
        gboolean priced = r.map == MAP_MEM ? size > 0 : ops > 0 || size > 0;
        if (duration > 0 && !(L->opts.use_roofline && priced)) {
            r.duration = duration;
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
            if (L->opts.astra_rules && !at.tensor_size)
                /* Workload::issue_remote_mem */
                NODE_FAIL(SSIM_CONFIG_ERROR_MISSING,
                          "%s has no tensor_size, which ASTRA-sim's remote memory reads (it "
                          "throws \"Attribute tensor_size not found\")",
                          ssim_chakra_node_type_name(type));
            if (L->opts.astra_rules && r.cpu)
                NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                          "%s on the CPU (is_cpu_op): ASTRA-sim serves it on the rank's CPU slot, "
                          "which --semantics astra does not model",
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
            if (approx && L->opts.astra_rules)
                NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                          "a %s collective, which ASTRA-sim does not implement (it throws "
                          "\"Unsupported collective comm type\")",
                          coll_type_names[ct]);
            if (!need_uint(t, n, at.comm_size, "comm_size", G_MAXINT64, &size, error))
                return FALSE;
            s->n_collectives++;
            s->n_approximated += approx;
            /* ASTRA-sim replays a broadcast's duration (Workload::issue_coll_comm). */
            if (L->opts.astra_rules && kind == SSIM_COLL_BROADCAST &&
                !node_duration(t, n, &r.duration, error))
                return FALSE;
        }
        r.coll = (guint8)kind;
        r.bytes = (guint64)size;
        r.group = group_for(L, t, n, at.pg_name, error);
        if (r.group == SSIM_NONE)
            return FALSE;
        if (L->opts.astra_rules && !astra_coll(t, n, &at, &coll, error))
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
        if (L->opts.astra_rules && !at.comm_tag)
            NODE_FAIL(SSIM_CONFIG_ERROR_MISSING,
                      "%s has no comm_tag, which ASTRA-sim reads to match it (it throws "
                      "\"Attribute comm_tag not found\")",
                      ssim_chakra_node_type_name((guint)n->type));
        const AttrVal *self = send ? at.comm_src : at.comm_dst;
        gint64 me = t->rank;
        if (self && !need_uint(t, n, self, send ? "comm_src" : "comm_dst", G_MAXINT32, &me, error))
            return FALSE;
        if ((guint64)me != t->rank)
            /* Workload::issue_send_comm / issue_recv_comm. */
            NODE_FAIL(SSIM_CONFIG_ERROR_VALUE,
                      "a %s whose %s is rank %" G_GINT64_FORMAT ", in rank %u's trace (ASTRA-sim "
                      "throws \"%s node should be issued by the %s\")",
                      send ? "send" : "receive", send ? "comm_src" : "comm_dst", me, t->rank,
                      send ? "Send" : "Recv", send ? "sender" : "receiver");
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

    return push_rec(L, t, n, &r, r.map == MAP_COLL && L->opts.astra_rules ? &coll : NULL, error);
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

/* The GlobalMetadata (message 0), through protobuf-c: once a file, its cost does not matter. */
static gboolean read_metadata(Trace *t, ChakraArena *arena, const guint8 *buf, gsize len, gsize at,
                              GError **error)
{
    ChakraProtoMsg__GlobalMetadata *md =
        chakra_proto_msg__global_metadata__unpack(&arena->alloc, len, buf);
    if (!md)
        NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                 "%s: byte %" G_GSIZE_FORMAT ": the first message is not a valid Chakra "
                 "GlobalMetadata (not a Chakra trace, or a corrupt one)",
                 t->path, at);
    if (t->rank == 0)
        t->version = g_strdup(md->version ? md->version : "");
    chakra_arena_reset(arena);
    return TRUE;
}

void chakra_scratch_init(ChakraScratch *s)
{
    chakra_view_init(&s->view);
    chakra_arena_init(&s->arena);
    s->file = NULL;
    s->file_cap = 0;
}

void chakra_scratch_clear(ChakraScratch *s)
{
    chakra_view_clear(&s->view);
    chakra_arena_clear(&s->arena);
    g_free(s->file);
    s->file = NULL;
    s->file_cap = 0;
}

/*
 * Reads the file at `path` whole into the scratch's buffer, which grows to the largest trace and
 * is reused for the next: a trace is read once, front to back.  (Mapping each file instead cost a
 * TLB shootdown on every other core at each unmap once decoding ran on several threads.)  Only a
 * regular file is read (ssim_input_check): a FIFO or device would block or never end.
 */
static gboolean read_file(const char *path, ChakraScratch *sc, gsize *len, GError **error)
{
    if (!ssim_input_check(path, "Chakra trace", error))
        return FALSE;
    int fd = g_open(path, O_RDONLY | O_NONBLOCK, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot read: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) { /* replaced since ssim_input_check looked at it */
        close(fd);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                    "%s: cannot read: not a regular file", path);
        return FALSE;
    }
    gsize want = (gsize)MAX(st.st_size, 0);
    if (want > sc->file_cap) {
        g_free(sc->file);
        sc->file_cap = 0;
        sc->file = g_try_malloc(want);
        if (sc->file == NULL) {
            close(fd);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                        "%s: %.1f MiB does not fit in memory", path, (double)want / 1048576.0);
            return FALSE;
        }
        sc->file_cap = want;
    }
    gsize got = 0;
    while (got < want) {
        ssize_t k = read(fd, sc->file + got, want - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot read: %s", path,
                        k < 0 ? g_strerror(errno) : "the file shrank while it was read");
            close(fd);
            return FALSE;
        }
        got += (gsize)k;
    }
    close(fd);
    *len = got;
    return TRUE;
}

/* Decodes the file into t->recs / t->deps. */
static gboolean decode(const Loader *L, Trace *t, ChakraScratch *sc, const guint8 *buf, gsize len,
                       GError **error)
{
    ChakraArena *arena = &sc->arena;
    NodeView *view = &sc->view;
    view->keep_first = L->opts.astra_rules; /* ASTRA-sim reads an attribute's first instance */
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
            if (!read_metadata(t, arena, buf + pos, mlen, at, error))
                return FALSE;
        } else {
            gboolean ok = L->opts.reference_decoder ? chakra_pb_node(arena, buf + pos, mlen, view)
                                                    : chakra_wire_node(buf + pos, mlen, view);
            if (!ok) {
                char prev[32] = "none";
                if (t->recs->len)
                    g_snprintf(prev, sizeof prev, "%" G_GUINT64_FORMAT,
                               g_array_index(t->recs, Rec, t->recs->len - 1).id);
                chakra_arena_reset(arena);
                NODE_ERR(SSIM_CONFIG_ERROR_PARSE,
                         "%s: byte %" G_GSIZE_FORMAT ": message %" G_GUINT64_FORMAT
                         " (%" G_GUINT64_FORMAT " bytes, after node %s) is not a valid Chakra "
                         "Node (corrupt file?)",
                         t->path, at, k, mlen, prev);
            }
            ok = translate(L, t, view, error);
            chakra_arena_reset(arena);
            if (!ok)
                return FALSE;
        }
        pos += mlen;
        k++;
    }
    if (k == 0)
        NODE_ERR(SSIM_CONFIG_ERROR_PARSE, "%s: empty file: no GlobalMetadata", t->path);
    return TRUE;
}

static gboolean read_trace(const Loader *L, Trace *t, ChakraScratch *sc, GError **error)
{
    gsize len;
    if (!read_file(t->path, sc, &len, error))
        return FALSE;
    t->file_bytes = len;
    return decode(L, t, sc, sc->file, len, error);
}

static int cmp_id_index(const void *a, const void *b)
{
    const IdIndex *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : (x->index > y->index) - (x->index < y->index);
}

/* The first duplicate in id order (the pair of its first two messages): the error of both
 * resolvers below. */
static gboolean duplicate_error(const Trace *t, guint64 id, guint32 first, guint32 second,
                                GError **error)
{
    NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
             "%s: node %" G_GUINT64_FORMAT ": the id is used twice (messages %u and %u)", t->path,
             id, first + 1, second + 1);
}

static gboolean dangling_error(const Trace *t, const Rec *r, guint64 d, GError **error)
{
    NODE_ERR(SSIM_CONFIG_ERROR_VALUE,
             "%s: node %" G_GUINT64_FORMAT ": depends on node %" G_GUINT64_FORMAT
             ", which is not in this trace (dangling dependency; --dangling-deps drop takes "
             "such a dependency as met, as for traces whose converter left nodes out)",
             t->path, r->id, d);
}

/* Ids within eight times the node count of each other (generators number nodes 0, 1, 2, ...,
 * not always in file order, and symbolic_tensor_graph skips about three ids in four): a table
 * indexed by id - min, 32 bytes a node at most. */
static gboolean resolve_dense(Trace *t, guint64 lo, guint64 span, gboolean drop, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    g_autofree guint32 *at = g_new(guint32, span);
    memset(at, 0xff, span * sizeof *at); /* SSIM_NONE */
    guint64 dup = G_MAXUINT64;
    guint32 dup_first = 0, dup_second = 0;
    for (guint i = 0; i < n; i++) {
        guint32 *slot = &at[recs[i].id - lo];
        if (*slot == SSIM_NONE)
            *slot = i;
        else if (recs[i].id < dup)
            dup = recs[i].id, dup_first = *slot, dup_second = i;
    }
    if (dup != G_MAXUINT64)
        return duplicate_error(t, dup, dup_first, dup_second, error);
    const guint64 *deps = (const guint64 *)(void *)t->deps->data;
    for (guint i = 0; i < n; i++)
        for (guint j = 0; j < recs[i].n_deps; j++) {
            guint64 d = deps[recs[i].dep_first + j];
            guint32 k = d >= lo && d - lo < span ? at[d - lo] : SSIM_NONE;
            if (k == SSIM_NONE && !drop)
                return dangling_error(t, &recs[i], d, error);
            t->dep_local[recs[i].dep_first + j] = k; /* NONE: dropped (drop_dangling) */
        }
    return TRUE;
}

/* Any ids: sorted (id, index) pairs and a binary search per dependency. */
static gboolean resolve_sparse(Trace *t, gboolean drop, GError **error)
{
    guint n = t->recs->len;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    g_autofree IdIndex *ids = g_new(IdIndex, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        ids[i] = (IdIndex){recs[i].id, i};
    if (!t->ids_increasing) /* generators mostly write them in order */
        qsort(ids, n, sizeof *ids, cmp_id_index);
    for (guint i = 1; i < n; i++)
        if (ids[i].id == ids[i - 1].id)
            return duplicate_error(t, ids[i].id, ids[i - 1].index, ids[i].index, error);
    const guint64 *deps = (const guint64 *)(void *)t->deps->data;
    for (guint i = 0; i < n; i++)
        for (guint j = 0; j < recs[i].n_deps; j++) {
            guint64 d = deps[recs[i].dep_first + j];
            guint lo = 0, hi = n;
            while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (ids[mid].id < d)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            gboolean found = lo < n && ids[lo].id == d;
            if (!found && !drop)
                return dangling_error(t, &recs[i], d, error);
            t->dep_local[recs[i].dep_first + j] = found ? ids[lo].index : SSIM_NONE;
        }
    return TRUE;
}

/* Removes the dependencies resolve_dense/resolve_sparse marked dropped (SSIM_NONE in
 * dep_local), compacting each node's list in place, and counts them. */
static void drop_marked(Trace *t)
{
    Rec *recs = (Rec *)(void *)t->recs->data;
    guint64 *deps = (guint64 *)(void *)t->deps->data;
    guint32 w = 0;
    for (guint i = 0; i < t->recs->len; i++) {
        guint32 first = recs[i].dep_first, kept = 0;
        for (guint j = 0; j < recs[i].n_deps; j++) {
            guint32 k = t->dep_local[first + j];
            if (k == SSIM_NONE) {
                t->stats.n_dangling++;
                continue;
            }
            t->dep_local[w + kept] = k;
            deps[w + kept] = deps[first + j];
            kept++;
        }
        recs[i].dep_first = w;
        recs[i].n_deps = kept;
        w += kept;
    }
    g_array_set_size(t->deps, w);
}

/* Resolves dependency ids to local indices; finds duplicate ids and dangling dependencies
 * (errors, or with `drop` removed and counted). */
static gboolean resolve(Trace *t, gboolean drop, GError **error)
{
    guint n = t->recs->len;
    t->dep_local = g_new(guint32, MAX(t->deps->len, 1));
    if (n == 0)
        return TRUE;
    const Rec *recs = (const Rec *)(void *)t->recs->data;
    guint64 lo = recs[0].id, hi = recs[0].id;
    t->ids_increasing = TRUE;
    for (guint i = 1; i < n; i++) {
        lo = MIN(lo, recs[i].id);
        hi = MAX(hi, recs[i].id);
        t->ids_increasing &= recs[i].id > recs[i - 1].id;
    }
    gboolean ok = hi - lo < 8 * (guint64)n + 64 ? resolve_dense(t, lo, hi - lo + 1, drop, error)
                                                : resolve_sparse(t, drop, error);
    if (ok && drop)
        drop_marked(t);
    return ok;
}

gboolean chakra_read_trace(const Loader *L, Trace *t, ChakraScratch *scratch, GError **error)
{
    return read_trace(L, t, scratch, error) && resolve(t, L->opts.drop_dangling, error);
}
