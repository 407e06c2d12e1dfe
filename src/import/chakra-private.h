/*
 * Private to the Chakra importer (src/import/chakra*.c): the decoded view of one node, the
 * compact per-node records a trace is turned into, and the state a load shares across traces.
 *
 * The pipeline, per trace file (one rank), and who runs it:
 *   decode    chakra-wire.c (the fast decoder: reads the protobuf wire format in place, skips
 *             what the mapping does not read, allocates nothing per node) or chakra-read.c's
 *             reference path (protobuf-c's generated unpacker) turns each Node message into a
 *             NodeView; both accept exactly the same bytes and give the same view.
 *   translate chakra-read.c maps a NodeView to a Rec (the rules of include/shiftsim/chakra.h),
 *             counts it in the trace's stats, then resolves dependency ids to local indices;
 *   order     chakra.c orders the records topologically (Kahn, smallest id first);
 *   emit      chakra.c adds the ops to the graph.
 * The first three touch only the trace and the loader's read-only tables, so they run on worker
 * threads, one trace each; emission alone writes the graph and runs on the calling thread in rank
 * order, which makes the graph (and every error) the same for any number of threads.
 *
 * A record refers to other records of the same trace by local index only, and to strings (node
 * names, stream names) by offset into the trace's string buffer, never into the file, so a trace
 * outlives its mapping.
 */
#pragma once

#include <shiftsim/chakra.h>

#include <string.h>

#include "chakra.pb-c.h"

typedef ChakraProtoMsg__Node PbNode;
typedef ChakraProtoMsg__AttributeProto PbAttr;

/*
 * protobuf-c allocates every sub-message and string of an unpacked node; a bump allocator reset
 * after each node makes that free.  Requests that do not fit go to the heap and are released at
 * the next reset.  Used by the reference decoder and for each file's GlobalMetadata.
 */
typedef struct {
    char *buf;
    gsize used;
    GPtrArray *big;
    ProtobufCAllocator alloc; /* allocates from this arena */
} ChakraArena;

typedef enum { MAP_ELIDE, MAP_COMPUTE, MAP_MEM, MAP_COLL, MAP_BARRIER, MAP_SEND, MAP_RECV } MapKind;

/* ---- the decoded view of a node ---- */

/* An attribute value as the mapping reads it (AttributeProto's oneof, reduced). */
typedef enum {
    AV_NONE,     /* no value set */
    AV_INT,      /* any integer encoding or a bool, in `i` */
    AV_BIG_UINT, /* a uint64 or fixed64 above G_MAXINT64: not an integer to the mapping */
    AV_REAL,     /* double or float, in `d` */
    AV_STRING,   /* string_val: `s`, `n` bytes up to its first NUL (as C reads it) */
    AV_BOOLS,    /* bool_list: `n` values, the first 64 as the bits of `i` (value k: bit k) */
    AV_OTHER,    /* bytes or another list */
} AttrKind;

typedef struct {
    guint8 kind; /* AttrKind */
    guint32 n;
    gint64 i;
    double d;
    const char *s;
} AttrVal;

/* The attributes some mapping reads, by name (chakra-read.c's known_attr_names). */
typedef enum {
    KA_IS_CPU_OP,
    KA_STREAM,
    KA_COMM_SIZE,
    KA_COMM_TYPE,
    KA_PG_NAME,
    KA_COMM_TAG,
    KA_COMM_DST,
    KA_COMM_SRC,
    KA_NUM_OPS,
    KA_TENSOR_SIZE,
    KA_INVOLVED_DIM,
    KA_COMM_PRIORITY,
    KA_N
} KnownAttr;

extern const char *const chakra_known_attr_names[KA_N];
/* The KnownAttr named by the `n` bytes at `s`, or KA_N. */
static inline KnownAttr chakra_known_attr(const char *s, gsize n)
{
    /* By length first: most names a trace carries (inputs, outputs, op_type) fail there. */
    switch (n) {
    case 6:
        return memcmp(s, "stream", 6) == 0 ? KA_STREAM : KA_N;
    case 7:
        return memcmp(s, "pg_name", 7) == 0   ? KA_PG_NAME
               : memcmp(s, "num_ops", 7) == 0 ? KA_NUM_OPS
                                              : KA_N;
    case 8:
        if (memcmp(s, "comm_", 5) != 0)
            return KA_N;
        return memcmp(s + 5, "tag", 3) == 0   ? KA_COMM_TAG
               : memcmp(s + 5, "dst", 3) == 0 ? KA_COMM_DST
               : memcmp(s + 5, "src", 3) == 0 ? KA_COMM_SRC
                                              : KA_N;
    case 9:
        return memcmp(s, "is_cpu_op", 9) == 0   ? KA_IS_CPU_OP
               : memcmp(s, "comm_size", 9) == 0 ? KA_COMM_SIZE
               : memcmp(s, "comm_type", 9) == 0 ? KA_COMM_TYPE
                                                : KA_N;
    case 11:
        return memcmp(s, "tensor_size", 11) == 0 ? KA_TENSOR_SIZE : KA_N;
    case 12:
        return memcmp(s, "involved_dim", 12) == 0 ? KA_INVOLVED_DIM : KA_N;
    case 13:
        return memcmp(s, "comm_priority", 13) == 0 ? KA_COMM_PRIORITY : KA_N;
    default:
        return KA_N;
    }
}

typedef struct {
    const char *s;
    guint32 n;
} Bytes;

/* Growable arrays the decoder appends to in its inner loop (GArray's calls cost more than the
 * work they hold there). */
typedef struct {
    guint64 *v;
    guint n, cap;
} U64Vec;

typedef struct {
    Bytes *v;
    guint n, cap;
} BytesVec;

void chakra_vec_grow(gpointer *v, guint *cap, gsize elt);

static inline void u64vec_push(U64Vec *a, guint64 x)
{
    if (G_UNLIKELY(a->n == a->cap))
        chakra_vec_grow((gpointer *)&a->v, &a->cap, sizeof *a->v);
    a->v[a->n++] = x;
}

/*
 * One Node as the mapping sees it.  Strings point into the decoder's input (or protobuf-c's
 * arena) and live until the next node.  For a field or attribute given twice, the last wins, as
 * protobuf decoding says (an attribute's first with keep_first, as ASTRA-sim reads it); `n_known`
 * counts every instance, because the instances a mapping does not read are reported.  `name` is the
 * field's bytes: C reads it only up to a NUL, which chakra_view_name() applies where a name is used
 * (most loads use none).
 */
typedef struct {
    guint64 id;
    Bytes name;
    gint32 type;
    guint64 duration_micros;
    guint32 known_mask;  /* bit k: n_known[k] > 0 */
    AttrVal known[KA_N]; /* the last instance of each known attribute (where its bit is set), or
                            with keep_first the first */
    guint32 n_known[KA_N];
    /* Keep an attribute's first instance, as ASTRA-sim's ETFeederNode reads it, not the last
     * (SsimChakraOptions.astra_rules).  Set by the caller; a reset keeps it. */
    gboolean keep_first;
    BytesVec unknown; /* the name of every other attribute instance, in order (its bytes: C
                         reads it up to a NUL) */
    U64Vec data_deps, ctrl_deps;
} NodeView;

static inline void chakra_view_add_unknown(NodeView *v, Bytes name)
{
    if (G_UNLIKELY(v->unknown.n == v->unknown.cap))
        chakra_vec_grow((gpointer *)&v->unknown.v, &v->unknown.cap, sizeof(Bytes));
    v->unknown.v[v->unknown.n++] = name;
}

/* The node's name as C reads it (up to its first NUL). */
Bytes chakra_view_name(const NodeView *v);

void chakra_view_init(NodeView *v);
void chakra_view_clear(NodeView *v);
/* Empties the view for the next node (keeps the arrays' storage). */
void chakra_view_reset(NodeView *v);

/* The reference decoder (chakra-view.c): protobuf-c's unpacker into `arena` (the caller resets
 * it once the view is used), its message copied into `v`.  FALSE when it refuses the bytes. */
gboolean chakra_pb_node(ChakraArena *arena, const guint8 *buf, gsize len, NodeView *v);

/*
 * The fast decoder (chakra-wire.c): decodes the Node message of `len` bytes at `buf` into `v`
 * (reset first).  Returns FALSE exactly when protobuf-c's chakra_proto_msg__node__unpack() would
 * refuse the bytes, and otherwise fills `v` with what that unpacker's message gives.
 */
gboolean chakra_wire_node(const guint8 *buf, gsize len, NodeView *v);

/* ---- records ---- */

#define GROUP_WORLD (SSIM_NONE - 1) /* the all-ranks group, created at emission */

typedef struct {
    guint64 id;
    guint32 dep_first; /* into Trace.deps */
    guint32 n_deps;
    guint8 type;      /* Chakra NodeType */
    guint8 map;       /* MapKind */
    guint8 coll;      /* SsimCollKind */
    guint8 cpu : 1;   /* is_cpu_op */
    guint8 timed : 1; /* astra_replay_only: a compute op of `duration` whatever `type` */
    guint32 peer, tag, group;
    guint32 stream_str; /* offset of a stream attribute's name in Trace.strs, or SSIM_NONE */
    guint32 name_str;   /* offset of the node's name in Trace.strs (keep_names), or SSIM_NONE */
    guint32 stream;     /* at emission: the graph stream, or SSIM_NONE: the kind's default */
    guint32 name;       /* at emission: the interned name, or SSIM_NONE */
    SsimTime duration;
    guint64 bytes;
    double flops;
} Rec;

/* A comm-group JSON group as workers see it (a copy: the graph is not theirs to read). */
typedef struct {
    guint32 index;   /* the graph's group index */
    guint32 n_ranks; /* sorted[] holds them, ascending */
    guint32 *sorted;
} LoaderGroup;

/* Counts of attribute names not read (one table per trace, merged at emission).  An entry, once
 * made, stays where it is, so a caller may keep its address to count the same name again. */
typedef struct {
    char *name;
    guint32 len, hash;
    guint64 count;
} IgnoredEntry;

typedef struct IgnoredTable IgnoredTable;
IgnoredTable *chakra_ignored_new(void);
void chakra_ignored_free(IgnoredTable *t);
/* The entry of the `n` bytes at `s`, made on first sight; its count is the caller's to add to. */
IgnoredEntry *chakra_ignored_entry(IgnoredTable *t, const char *s, gsize n);
/* Adds every count of `t` to `stats` (n_ignored_attrs and the ignored_attrs table). */
void chakra_ignored_merge(const IgnoredTable *t, SsimChakraStats *stats);

/* What the loader shares with every trace; read-only while workers run. */
typedef struct {
    SsimGraph *graph; /* the calling thread's alone */
    SsimChakraOptions opts;
    SsimChakraStats *stats; /* likewise; traces count into their own and are merged */
    const char *prefix;
    guint n_ranks;
    guint32 world; /* the all-ranks group, created on first use */
    gboolean have_json;
    guint32 cls_comp, cls_cpu, cls_mem, cls_coll, cls_p2p;
    /* "chakra:<TYPE>" and, for a node with is_cpu_op, "chakra:<TYPE>:cpu": elided nodes kept */
    guint32 cls_type[2][SSIM_CHAKRA_N_NODE_TYPES];
    GHashTable *groups;  /* JSON group name -> LoaderGroup * */
    guint64 total_bytes; /* of all the trace files, to size the graph */
    /* The name's string id of each record of the trace emitted last (SSIM_NONE: none), with
     * names kept: ranks of one job name their nodes alike, so a record's name is most often the
     * same record's name one trace earlier, and a compare then spares hashing it. */
    GArray *last_names;
} Loader;

#define N_GUESS 8 /* unknown attributes remembered by position */

typedef struct {
    const char *path;
    guint rank;
    gsize file_bytes; /* the trace file's size */
    GArray *recs;     /* Rec */
    GArray *colls;    /* with astra_rules and keep_node_ids: SsimCollAttrs per record, else NULL */
    GArray *deps;     /* dependency ids (guint64), Rec.dep_first indexes them */
    gsize recs_room, deps_room; /* ssim_array_push's room in each */
    guint32 *dep_local;         /* the same dependencies as local record indices */
    gboolean ids_increasing;    /* (resolve) the ids increase in file order */
    gboolean has_ctrl;          /* some node's control dependencies are among deps */
    guint32 *order;             /* the records in issue order (chakra.c) */
    GByteArray *strs;           /* NUL-terminated names the records refer to */
    SsimChakraStats stats;      /* this trace's counts (no tables) */
    IgnoredTable *ignored;      /* this trace's attributes not read */
    /* The entry the i-th unknown attribute of the last node counted into: nodes of a trace
     * carry the same metadata in the same order, so this is nearly always the next one's too. */
    IgnoredEntry *guess[N_GUESS];
    /* The group the last string pg_name named (SSIM_NONE: none yet), and that name. */
    guint32 last_group, last_pg_len;
    char last_pg[32];
    char *version;                        /* GlobalMetadata.version (rank 0 only) */
    guint32 default_stream[MAP_RECV + 2]; /* per MapKind (+1 for CPU compute); SSIM_NONE: not yet */
} Trace;

/* Sets `error` (SSIM_CONFIG_ERROR, `code`) and returns FALSE from the calling function. */
#define NODE_ERR(code, ...)                                                                        \
    do {                                                                                           \
        g_set_error(error, SSIM_CONFIG_ERROR, code, __VA_ARGS__);                                  \
        return FALSE;                                                                              \
    } while (0)

void chakra_arena_init(ChakraArena *a);
void chakra_arena_clear(ChakraArena *a);
/* Forgets everything allocated since the last reset. */
void chakra_arena_reset(ChakraArena *a);

/* Sets up `t` for the trace of `rank` at `path` (borrowed), and frees what it holds. */
void chakra_trace_init(Trace *t, const char *path, guint rank);
void chakra_trace_clear(Trace *t);

/* What a worker reuses from trace to trace: a node view, protobuf-c's arena, the buffer a file
 * is read into. */
typedef struct {
    NodeView view;
    ChakraArena arena;
    guint8 *file;
    gsize file_cap;
} ChakraScratch;

void chakra_scratch_init(ChakraScratch *s);
void chakra_scratch_clear(ChakraScratch *s);

/*
 * Decodes the file t->path into t->recs, t->deps and t->strs (translating each node as
 * chakra.h says, counting into t->stats and t->ignored) and resolves the dependencies into
 * t->dep_local; FALSE with `error` naming the file, and the node id or byte offset, on any
 * problem.  Touches nothing of `L` but its read-only fields, so traces decode in parallel.
 */
gboolean chakra_read_trace(const Loader *L, Trace *t, ChakraScratch *scratch, GError **error);

/* A process group's name as ASTRA-sim reads it (std::stoi: leading blanks, a sign, digits, the
 * rest ignored): FALSE when it has no number or one out of int's range. */
gboolean chakra_astra_group_id(const char *name, int *out);

/* Orders t's records topologically into t->order (chakra-emit.c); FALSE naming a cycle. */
gboolean chakra_order_trace(Trace *t, GError **error);
/* Adds t's ops to L->graph in t->order (the loading thread only). */
gboolean chakra_emit_trace(Loader *L, Trace *t, GError **error);
