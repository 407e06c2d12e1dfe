/*
 * Private to the Chakra importer (src/import/chakra*.c): the compact per-node records a trace is
 * decoded into, and the state a load shares across traces.
 *
 * chakra-read.c decodes one trace file into records (protobuf-c, attribute checks, dependency
 * ids resolved to local indices); chakra.c orders them, adds them to the graph and drives the
 * load.  A record refers to other records of the same trace by local index only.
 */
#pragma once

#include <shiftsim/chakra.h>

#include "chakra.pb-c.h"

typedef ChakraProtoMsg__Node PbNode;
typedef ChakraProtoMsg__AttributeProto PbAttr;

/*
 * protobuf-c allocates every sub-message and string of an unpacked node; a bump allocator reset
 * after each node makes that free.  Requests that do not fit go to the heap and are released at
 * the next reset.
 */
typedef struct {
    char *buf;
    gsize used;
    GPtrArray *big;
} ChakraArena;

typedef enum { MAP_ELIDE, MAP_COMPUTE, MAP_MEM, MAP_COLL, MAP_BARRIER, MAP_SEND, MAP_RECV } MapKind;

typedef struct {
    guint64 id;
    guint32 dep_first; /* into Trace.deps */
    guint32 n_deps;
    guint8 type; /* Chakra NodeType */
    guint8 map;  /* MapKind */
    guint8 coll; /* SsimCollKind */
    guint8 cpu;  /* is_cpu_op */
    guint32 peer, tag, group;
    guint32 stream; /* graph stream, or SSIM_NONE: the default for the kind */
    guint32 name;   /* interned string id, or SSIM_NONE */
    SsimTime duration;
    guint64 bytes;
    double flops;
} Rec;

/* Everything the loader shares across traces. */
typedef struct {
    SsimGraph *graph;
    SsimChakraOptions opts;
    SsimChakraStats *stats;
    const char *prefix;
    guint n_ranks;
    guint32 world; /* the all-ranks group, created on first use */
    gboolean have_json;
    guint32 cls_comp, cls_cpu, cls_mem, cls_coll, cls_p2p;
    ChakraArena arena;
    ProtobufCAllocator alloc;
} Loader;

typedef struct {
    const char *path;
    guint rank;
    GArray *recs;                         /* Rec */
    GArray *deps;                         /* dependency ids (guint64), Rec.dep_first indexes them */
    guint32 *dep_local;                   /* the same dependencies as local record indices */
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
extern const ProtobufCAllocator chakra_arena_allocator; /* .allocator_data: a ChakraArena */

/* Empties `t` (records, dependencies) for the next trace. */
void chakra_trace_clear(Trace *t);

/*
 * Decodes the file t->path into t->recs and t->deps (translating each node as chakra.h says) and
 * resolves the dependencies into t->dep_local; FALSE with `error` naming the file, and the node
 * id or byte offset, on any problem.
 */
gboolean chakra_read_trace(Loader *L, Trace *t, GError **error);
