/*
 * A small Chakra trace encoder for tests and the example generator: it writes PREFIX.<rank>.et
 * files exactly as Chakra's tools do (a varint length before each message; a GlobalMetadata,
 * then Nodes) using the protobuf-c code generated from src/import/chakra.proto, and the
 * comm-group JSON.  It is an independent path to the bytes: the importer's tests read back what
 * this wrote, so a wrong field number on either side shows up as a failed round trip (and the
 * real ASTRA-sim traces under traces/chakra/ pin the schema from the other side).
 *
 * A writer buffers one file in memory and writes it atomically at cw_close().
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Chakra NodeType and CollectiveCommType values (et_def.proto). */
enum {
    CW_INVALID = 0,
    CW_METADATA = 1,
    CW_MEM_LOAD = 2,
    CW_MEM_STORE = 3,
    CW_COMP = 4,
    CW_SEND = 5,
    CW_RECV = 6,
    CW_COLL = 7,
    CW_STORAGE = 8,
};
enum {
    CW_ALL_REDUCE = 0,
    CW_REDUCE = 1,
    CW_ALL_GATHER = 2,
    CW_GATHER = 3,
    CW_SCATTER = 4,
    CW_BROADCAST = 5,
    CW_ALL_TO_ALL = 6,
    CW_REDUCE_SCATTER = 7,
    CW_BARRIER = 9,
};

#define CW_ABSENT (-1)

/* One node; integer attributes equal to CW_ABSENT and NULL strings are left out. */
typedef struct {
    guint64 id;
    const char *name;
    int type;
    const guint64 *data_deps;
    guint n_data_deps;
    const guint64 *ctrl_deps;
    guint n_ctrl_deps;
    guint64 duration_micros;
    gint64 comm_type, comm_size, comm_src, comm_dst, comm_tag;
    const char *pg_name;
    double num_ops; /* < 0: absent */
    gint64 tensor_size;
    gint64 is_cpu_op;         /* written as bool_val */
    const char *stream;       /* a "stream" string attribute */
    const char *extra_attr;   /* the name of an extra string attribute the importer does not read */
    gint64 comm_priority;     /* written as int32_val */
    const char *involved_dim; /* a bool_list, one value a character: 't' true, else false */
} CwNode;

#define CW_NODE_INIT                                                                               \
    {                                                                                              \
        .comm_type = CW_ABSENT, .comm_size = CW_ABSENT, .comm_src = CW_ABSENT,                     \
        .comm_dst = CW_ABSENT, .comm_tag = CW_ABSENT, .num_ops = -1, .tensor_size = CW_ABSENT,     \
        .is_cpu_op = CW_ABSENT, .comm_priority = CW_ABSENT                                         \
    }

typedef struct CwWriter CwWriter;

/* Starts a trace at `path` with a GlobalMetadata of `version` ("0.0.4"). */
CwWriter *cw_open(const char *path, const char *version);
void cw_node(CwWriter *w, const CwNode *node);
/* Every node written from now on also carries symbolic_tensor_graph's tensor metadata: `inputs`
 * and `outputs` (string lists of a tensor's name and shape, then its size) and, on compute
 * nodes, `op_type`: the attributes no importer reads that make up most of a generated trace. */
void cw_set_tensor_io(CwWriter *w, gboolean on);
/* Appends raw bytes (to build corrupt files). */
void cw_raw(CwWriter *w, const void *bytes, gsize len);
/* Writes the file and frees the writer; FALSE with `error` set when the write fails. */
gboolean cw_close(CwWriter *w, GError **error);

/* "PREFIX.<rank>.et", newly allocated. */
char *cw_rank_path(const char *prefix, guint rank);
/* Writes PREFIX.<rank>.et (version 0.0.4) holding `n` nodes; FALSE with `error` set when the
 * write fails. */
gboolean cw_write_rank(const char *prefix, guint rank, const CwNode *nodes, guint n,
                       GError **error);

/* Writes {"<id>": [ranks...], ...}: groups[i] holds n_ranks[i] ranks and is named ids[i]. */
gboolean cw_write_groups(const char *path, guint n_groups, const char *const *ids,
                         const guint32 *const *groups, const guint *n_ranks, GError **error);

/*
 * A GPT-like 3D-parallel training step (GPipe order) on dp*tp*pp ranks, rank = t + tp*(d + dp*p):
 * per microbatch and layer an attention and an MLP compute node (num_ops and tensor_size, no
 * duration), each followed by a tensor-parallel all-reduce of the activations; pipeline sends and
 * receives of the activations between stages (tagged); the backward pass in reverse at twice the
 * FLOPs; one data-parallel all-reduce of each layer's gradients after its last backward.  Writes
 * PREFIX.<rank>.et and PREFIX.json (TP group of (p, d) "1 + p*dp + d", DP group of (p, t)
 * "1 + pp*dp + p*tp + t").  `tensor_io` adds the tensor metadata of cw_set_tensor_io().
 */
typedef struct {
    guint dp, tp, pp, layers, mbs;
    double hidden, seq;
    gboolean tensor_io;
} CwGpt;

gboolean cw_write_gpt(const CwGpt *gpt, const char *prefix, GError **error);

/*
 * A random trace set (chakra-gen random; traces/chakra/astra-random.sh checks
 * `replay --semantics astra` against ASTRA-sim on them): by default one random graph of `nodes`
 * nodes on every rank, node ids out of file order, data and control dependencies, each rank's
 * own compute durations (0-30 us, with num_ops and tensor_size), of the kinds in `kinds`
 * (cw_random_kinds()): GPU and CPU compute, invalid nodes, collectives of every kind ASTRA-sim
 * runs on all ranks or (4 ranks or more) on the rank's half (even or odd ranks, groups "1" and
 * "2" in PREFIX.json), sends and receives between ranks 2i and 2i + 1, memory loads and stores.
 * `independent` gives every rank a graph of its own of any node type ASTRA-sim's statistics know,
 * nothing matched across ranks (for replay-only).  Two more kinds are attributes of the
 * collectives: "prio" gives each a comm_priority of 0-3 (each rank its own), "dims" each
 * collective of every rank an involved_dim of four values (the same on every rank, each true
 * with probability 0.7).  The same spec writes the same bytes.
 */
typedef struct {
    guint ranks, nodes;
    guint32 seed;
    guint kinds;
    gboolean independent;
} CwRandom;

gboolean cw_write_random(const CwRandom *spec, const char *prefix, GError **error);
/* "comp,cpu,invalid,coll,p2p,mem,prio,dims" (any of them, one of the first six at least) as
 * CwRandom.kinds; 0 when a name is unknown or no kind of node is named. */
guint cw_random_kinds(const char *list);

/* Removes PATH, a file or a directory with everything under it (the tests' and the bench's
 * temporary fixture directories). */
void cw_rm_rf(const char *path);

G_END_DECLS
