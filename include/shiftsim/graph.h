/*
 * The op graph: what every rank (GPU) runs, on which CUDA stream, after what.
 *
 * An op belongs to one stream of one rank.  A stream runs its ops one at a time in the order they
 * were added (issue order); an op also waits for its explicit dependencies, which may live on any
 * stream of any rank (cudaStreamWaitEvent semantics).  Collectives are matched across the members
 * of a group by (group, tag) and sends with receives by (source, destination, tag), the k-th send
 * of a (source, destination, tag) in the order the ops were added with its k-th receive (MPI's
 * non-overtaking rule); a tag left SSIM_TAG_AUTO becomes the op's ordinal among the rank's ops
 * on that group (or towards that peer), which is NCCL's rule that a communicator runs its
 * operations in issue order.
 *
 * A host barrier is reached when its dependencies are done and completes once every member of
 * its group has reached it; every op that the same rank issues after it, on any stream, waits for
 * it (the host thread is blocked, so nothing later is even launched).
 *
 * Programs.  Ops of one rank may be grouped into *programs*: a unit a framework launches as a
 * whole (an XLA executable, a CUDA graph launch, a compiled step function).  A program belongs to
 * one rank, and the programs of a rank run one after the other in the order they were created
 * (ssim_graph_program; a graph file creates them in the order they first appear), which is
 * in-order dispatch.  (a) No op of program k starts before program k-1 of its rank has finished
 * (every op of it, on every stream) and before every predecessor from outside program k has
 * finished (its inputs have arrived).  (b) An op outside program P that depends on an op of P
 * waits until all of P has finished (an executable's outputs exist when it ends).  Inside a
 * program, ops follow the stream semantics above.  Ops outside every program (cross-stage sends
 * and receives, say) follow stream semantics alone, and a graph without programs replays exactly
 * as it would without this paragraph.  Finalize refuses a graph in which a program would wait
 * for itself through these rules.
 *
 * Ops, dependencies and strings live in flat arrays and refer to each other by index, so a graph
 * of ten million ops is a few hundred megabytes and no per-op heap object exists.  An op's
 * program is kept in a separate array that exists only once some op has one, so a graph without
 * programs costs nothing for them.
 *
 * Lifecycle: ssim_graph_new(), add streams, groups, programs and ops, then ssim_graph_finalize(),
 * which checks legality (every dependency exists, no cycle through dependencies, stream order,
 * barriers and programs, collective members belong to the group and appear once) and builds the
 * successor lists, program lists and matchings the runtime uses.  A finalized graph is read-only.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

#define SSIM_TAG_AUTO G_MAXUINT32

/*
 * Collective operations: one X-macro yields the enum and the name table.  `permute` is XLA's
 * collective-permute: every member sends its buffer to the next member of the group.
 */
#define SSIM_COLL_LIST(X)                                                                          \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(ALLGATHER, "allgather")                                                                      \
    X(REDUCESCATTER, "reducescatter")                                                              \
    X(ALLTOALL, "alltoall")                                                                        \
    X(BROADCAST, "broadcast")                                                                      \
    X(REDUCE, "reduce")                                                                            \
    X(PERMUTE, "permute")

typedef enum {
#define SSIM_X(e, s) SSIM_COLL_##e,
    SSIM_COLL_LIST(SSIM_X)
#undef SSIM_X
        SSIM_COLL_N
} SsimCollKind;

#define SSIM_OPKIND_LIST(X)                                                                        \
    X(COMPUTE, "compute")                                                                          \
    X(COLLECTIVE, "collective")                                                                    \
    X(SEND, "send")                                                                                \
    X(RECV, "recv")                                                                                \
    X(BARRIER, "barrier")

typedef enum {
#define SSIM_X(e, s) SSIM_OP_##e,
    SSIM_OPKIND_LIST(SSIM_X)
#undef SSIM_X
        SSIM_OP_N
} SsimOpKind;

const char *ssim_coll_kind_name(SsimCollKind kind);
gboolean ssim_coll_kind_from_name(const char *name, SsimCollKind *out);
const char *ssim_op_kind_name(SsimOpKind kind);

/*
 * One op: 64 bytes, with the fields the runtime reads on every event (duration, kind, match)
 * first, so replaying an op touches one cache line of it.  Fields marked (finalize) are filled
 * by ssim_graph_finalize().
 */
typedef struct {
    SsimTime duration; /* given duration in ns, or -1 to ask the cost model */
    guint8 kind;       /* SsimOpKind */
    guint8 coll;       /* SsimCollKind, for SSIM_OP_COLLECTIVE */
    guint16 cls;       /* communication/compute class label (string id), e.g. "tp", "dp" */
    guint32 match;     /* (finalize) collective/barrier instance or p2p pair index */
    guint32 stream;    /* global stream index */
    guint32 rank;
    guint32 id;     /* the user-visible id (file id); unique */
    guint32 group;  /* group index: collectives and barriers */
    guint32 peer;   /* the other rank: sends (destination) and receives (source) */
    guint32 tag;    /* matching tag (resolved from SSIM_TAG_AUTO by finalize) */
    guint32 name;   /* string id of a label, or SSIM_NONE */
    guint32 n_deps; /* number of explicit dependencies (ssim_graph_deps lists them) */
    guint64 bytes;  /* payload of a communication, bytes touched by a compute op */
    double flops;   /* work of a compute op */
} SsimOp;

/* What a collective's trace node may say beside its kind, size and group, for replays that read
 * it (Chakra's comm_priority and involved_dim, as ASTRA-sim's workload layer reads them:
 * SsimChakraOptions.astra_rules, include/shiftsim/astra.h): `priority`, the stream priority
 * under an explicit scheduling policy (0 without one); and the network dimensions a collective
 * without a process group runs on: `n_dims` values, the first 32 as the bits of `dims` (value
 * k: bit k); without the attribute, four values, all true, as ASTRA-sim assumes. */
typedef struct {
    guint32 priority;
    guint32 n_dims;
    guint32 dims;
} SsimCollAttrs;

/* What a caller fills in to add an op; unset fields stay zero/NONE via SSIM_OP_SPEC_INIT. */
typedef struct {
    SsimOpKind kind;
    SsimCollKind coll;
    guint32 id; /* SSIM_NONE: use the op's index */
    guint32 stream;
    guint32 group;
    guint32 peer;
    guint32 tag;
    const char *name;
    const char *cls;
    SsimTime duration;
    guint64 bytes;
    double flops;
} SsimOpSpec;

#define SSIM_OP_SPEC_INIT                                                                          \
    {                                                                                              \
        .kind = SSIM_OP_COMPUTE, .id = SSIM_NONE, .group = SSIM_NONE, .peer = SSIM_NONE,           \
        .tag = SSIM_TAG_AUTO, .duration = -1                                                       \
    }

typedef struct SsimGraph SsimGraph;

SsimGraph *ssim_graph_new(void);
void ssim_graph_free(SsimGraph *graph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimGraph, ssim_graph_free)

/* Pre-sizes the arrays (a hint; graphs grow as needed). */
void ssim_graph_reserve(SsimGraph *graph, gsize n_ops, gsize n_deps);

/* Returns the global index of `rank`'s stream `name`, creating it on first use. */
guint32 ssim_graph_stream(SsimGraph *graph, guint32 rank, const char *name);

/*
 * Adds a group of distinct ranks under a unique name and returns its index, or SSIM_NONE with
 * `error` set when the name is taken, the group is empty or a rank repeats.
 */
guint32 ssim_graph_add_group(SsimGraph *graph, const char *name, const guint32 *ranks,
                             guint n_ranks, GError **error);
guint32 ssim_graph_find_group(const SsimGraph *graph, const char *name);

/* Interns a string and returns its id (stable for the graph's life). */
guint32 ssim_graph_intern(SsimGraph *graph, const char *s);
const char *ssim_graph_string(const SsimGraph *graph, guint32 id);
/* Strings interned so far: ids 0 .. n - 1. */
guint32 ssim_graph_n_strings(const SsimGraph *graph);
/* A number no other graph of this process has had (from 1): with a string id it names one
 * string for good, so a memo of a graph's strings can trust an id without comparing text. */
guint64 ssim_graph_serial(const SsimGraph *graph);

/*
 * Adds an op depending on `deps` (indices of ops already added or to be added; checked by
 * finalize) and returns its index.  Ops are numbered 0, 1, 2... in the order they are added.
 */
guint32 ssim_graph_add_op(SsimGraph *graph, const SsimOpSpec *spec, const guint32 *deps,
                          guint n_deps);
/* The same with the label and class given as string ids (ssim_graph_intern; SSIM_NONE: no label,
 * 0: no class); spec->name and spec->cls are ignored.  For builders that add many ops with a few
 * labels and would otherwise hash each label again. */
guint32 ssim_graph_add_op_ids(SsimGraph *graph, const SsimOpSpec *spec, guint32 name_id,
                              guint32 cls_id, const guint32 *deps, guint n_deps);

/*
 * Programs (see the top of this file).  ssim_graph_program() returns the index of `rank`'s program
 * `name`, creating it on first use: a rank's programs run in the order they are created.
 * ssim_graph_set_program() puts op `op` (already added) into `program`, which must be a program of
 * the op's rank (FALSE otherwise, nothing changed); SSIM_NONE takes it out of every program.
 */
guint32 ssim_graph_program(SsimGraph *graph, guint32 rank, const char *name);
gboolean ssim_graph_set_program(SsimGraph *graph, guint32 op, guint32 program);
guint32 ssim_graph_n_programs(const SsimGraph *graph);
const char *ssim_graph_program_name(const SsimGraph *graph, guint32 program);
guint32 ssim_graph_program_rank(const SsimGraph *graph, guint32 program);
/* The program of op `op`, or SSIM_NONE. */
guint32 ssim_graph_op_program(const SsimGraph *graph, guint32 op);
/* One program index (or SSIM_NONE) per op, or NULL when no op has a program (borrowed). */
const guint32 *ssim_graph_op_programs(const SsimGraph *graph);
/* After finalize: the program before / after `program` on its rank (SSIM_NONE at either end),
 * and its ops in graph order (borrowed). */
guint32 ssim_graph_program_prev(const SsimGraph *graph, guint32 program);
guint32 ssim_graph_program_next(const SsimGraph *graph, guint32 program);
const guint32 *ssim_graph_program_ops(const SsimGraph *graph, guint32 program, guint *n_ops);

/* Checks legality and builds successors and matchings (see the top of this file). */
gboolean ssim_graph_finalize(SsimGraph *graph, GError **error);

/*
 * Reorders the ops of a finalized graph into a causal issue order, for a graph whose op order is
 * not a schedule (a trace generator's node order): one topological order of the dependencies in
 * which each match (a collective's members, a send and its receive) is placed at once, when all
 * its members' dependencies are; of the ready ones, the one with the fewest send/receive pairs
 * on its longest dependency path goes next, then the one whose first op comes earliest among
 * its rank's ops (the ranks advancing together).  Each stream then issues its ops in this order,
 * so no stream issues an op that waits for another rank ahead of one that rank waits for, and
 * the order alone cannot deadlock the replay.  Op indices change (ids and names move with their
 * ops) and the graph is finalized again; *n_moved counts the ops whose stream predecessor
 * changed (0: the graph is untouched).  A graph with barriers or programs, whose order means
 * more than the streams', is left as it is.  FALSE only if the new finalize fails.
 */
gboolean ssim_graph_issue_causally(SsimGraph *graph, guint32 *n_moved, GError **error);
gboolean ssim_graph_is_finalized(const SsimGraph *graph);

/* Read access. */
guint32 ssim_graph_n_ops(const SsimGraph *graph);
guint32 ssim_graph_n_ranks(const SsimGraph *graph);
guint32 ssim_graph_n_streams(const SsimGraph *graph);
guint32 ssim_graph_n_groups(const SsimGraph *graph);
guint64 ssim_graph_n_deps(const SsimGraph *graph);
const SsimOp *ssim_graph_op(const SsimGraph *graph, guint32 op);
const guint32 *ssim_graph_deps(const SsimGraph *graph, guint32 op, guint *n_deps);
guint32 ssim_graph_stream_rank(const SsimGraph *graph, guint32 stream);
const char *ssim_graph_stream_name(const SsimGraph *graph, guint32 stream);
const char *ssim_graph_group_name(const SsimGraph *graph, guint32 group);
const guint32 *ssim_graph_group_ranks(const SsimGraph *graph, guint32 group, guint *n_ranks);
/* Index of the op with user id `id`, or SSIM_NONE. */
guint32 ssim_graph_find_id(const SsimGraph *graph, guint32 id);

/* After finalize: successors (dependency, stream-order and barrier edges), stream heads. */
const guint32 *ssim_graph_succs(const SsimGraph *graph, guint32 op, guint *n_succs);
guint32 ssim_graph_n_preds(const SsimGraph *graph, guint32 op);
guint32 ssim_graph_stream_prev(const SsimGraph *graph, guint32 op);
guint32 ssim_graph_n_matches(const SsimGraph *graph);
/* Members of a collective/barrier instance or the two ends of a p2p pair (send first). */
const guint32 *ssim_graph_match_ops(const SsimGraph *graph, guint32 match, guint *n_ops,
                                    guint *n_expected);

/*
 * The same lists as flat CSR arrays, for loops that visit every op (the runtime's hot path):
 * op i's successors are succs[first[i]] .. succs[first[i+1]-1]; match m's members are
 * ops[mfirst[m]] .. ops[mfirst[m+1]-1] and it expects expected[m] of them.  Borrowed.
 */
void ssim_graph_successor_csr(const SsimGraph *graph, const guint32 **first, const guint32 **succs);
/* Each rank's streams as CSR, newly allocated (the caller g_frees both): rank r's are
 * streams[first[r]] .. streams[first[r + 1] - 1], ascending; first has n_ranks + 1 entries. */
void ssim_graph_rank_streams(const SsimGraph *graph, guint32 **first, guint32 **streams);
void ssim_graph_match_csr(const SsimGraph *graph, const guint32 **mfirst, const guint32 **ops,
                          const guint32 **expected);
/* The ops as one array of ssim_graph_n_ops() entries (borrowed; valid until the next add). */
const SsimOp *ssim_graph_ops(const SsimGraph *graph);

/* "allreduce#17 (tp)" style display name into `buf`; returns buf. */
const char *ssim_graph_op_label(const SsimGraph *graph, guint32 op, char *buf, gsize size);

G_END_DECLS
