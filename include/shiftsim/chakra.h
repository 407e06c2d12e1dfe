/*
 * Import of Chakra execution traces (MLCommons Chakra, the input format of ASTRA-sim 2.x).
 *
 * A Chakra workload is one trace per rank, PREFIX.<rank>.et for rank = 0, 1, ... (the first
 * missing number ends the set), each a stream of varint-length-prefixed protobuf messages: one
 * GlobalMetadata, then Nodes; plus, optionally, a comm-group JSON ({"5": [0, 2], ...}) mapping a
 * process-group id (a collective's pg_name) to its ranks.  ssim_chakra_load() turns the set into
 * a finalized SsimGraph that ssim_runtime_run() replays.
 *
 * The mapping (docs/chakra.md has the user's view):
 *   - COMP_NODE -> a compute op.  Its duration is duration_micros when that is non-zero (unless
 *     options.use_roofline), else the cost model's answer for flops = num_ops and bytes =
 *     tensor_size (the roofline ASTRA-sim uses), else zero.  is_cpu_op nodes go on the CPU stream.
 *   - COMM_COLL_NODE -> a collective of comm_type on group pg_name (all ranks when pg_name is
 *     absent) moving comm_size bytes.  ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER(_BLOCK),
 *     ALL_TO_ALL, BROADCAST and REDUCE map one to one, BARRIER to a barrier; GATHER and SCATTER
 *     have no shiftsim equivalent and are replayed as an all-gather and a reduce-scatter of the
 *     same size (same ring cost), and counted as approximated.  Collectives are matched across
 *     ranks by comm_tag when the node has one, else by their order of issue within the group.
 *     comm_size is taken as the whole buffer, as ASTRA-sim and nccl-tests count it.
 *   - COMM_SEND_NODE / COMM_RECV_NODE -> a send to comm_dst / a receive from comm_src of
 *     comm_size bytes, matched by (source, destination, comm_tag), by order when untagged.
 *   - MEM_LOAD_NODE / MEM_STORE_NODE -> a memory-bound op of tensor_size bytes on the memory
 *     stream (approximated: shiftsim has no remote-memory model).
 *   - METADATA_NODE and the node types shiftsim cannot model (INVALID, STORAGE, BATCH,
 *     CHECKPOINT) are elided: counted by type, and their dependents inherit their dependencies,
 *     so no ordering is lost.  With options.strict they are errors instead.
 *   - data_deps and ctrl_deps both become dependencies; node ids are per trace.
 *   - start_time_micros, and the duration_micros of communication nodes, are not used: shiftsim
 *     predicts when things start and how long communication takes (as ASTRA-sim does).
 *   - Streams: a node's "stream" attribute names its stream when present; otherwise compute,
 *     CPU, memory, collective, send and receive ops go on the streams named in the options.
 *     A stream runs its ops in issue order, which the importer takes to be a topological order
 *     of the trace that prefers the smallest node id among ready nodes (the order of Chakra's
 *     own feeder).
 *   - Every attribute the mapping does not read (inputs, outputs, op_type, ...) is counted by
 *     name in the stats, and ssim_chakra_stats_format() reports them: nothing is dropped
 *     silently.
 *
 * Errors are SSIM_CONFIG_ERROR and name the file and, where one is involved, the node id or the
 * byte offset: truncated or corrupt files, unknown enum values, dangling dependencies, cycles,
 * duplicate node ids, peers or group members beyond the last rank file, bad JSON.
 */
#pragma once

#include <shiftsim/graph.h>

G_BEGIN_DECLS

/* Chakra's NodeType values, 0..10, as they appear in the files. */
#define SSIM_CHAKRA_N_NODE_TYPES 11

/* Chakra's name for NodeType `type` ("COMP_NODE"), or "?" when out of range. */
const char *ssim_chakra_node_type_name(guint type);

typedef struct {
    const char *compute_stream; /* GPU compute nodes: "compute" */
    const char *cpu_stream;     /* compute nodes with is_cpu_op: "cpu" */
    const char *mem_stream;     /* MEM_LOAD / MEM_STORE nodes: "mem" */
    const char *coll_stream;    /* collectives: "comm" */
    /*
     * Sends and receives: "send" and "recv".  Set them to coll_stream for a single communication
     * stream; beware that a receive with no dependencies is issued early (ASTRA-sim posts it
     * without blocking anything), and on a shared stream it then blocks the rank's later
     * communication, which deadlocks pipeline-parallel traces.
     */
    const char *send_stream;
    const char *recv_stream;
    /*
     * One collective stream per process group ("comm:<pg>"), as NCCL runs one communicator's
     * operations in order but different communicators concurrently; and one send and one
     * receive stream per peer ("send:<peer>", "recv:<peer>").  Both off by default.
     */
    gboolean stream_per_group;
    gboolean stream_per_peer;
    gboolean use_roofline; /* price compute by num_ops/tensor_size even if it has a duration */
    gboolean strict;       /* elided node types and approximated collectives are errors */
    /* A dependency on a node id the trace does not have is an error (FALSE, the default) or is
     * taken as met and dropped (TRUE): PyTorch's traces, once converted, name nodes the
     * converter left out (the process's root node, filtered CPU ops).  Counted in n_dangling. */
    gboolean drop_dangling;
    /* Replay data dependencies only (TRUE) instead of data and control dependencies (FALSE, the
     * default, as ASTRA-sim's feeder): some converted PyTorch traces make a CPU operator wait
     * (ctrl_deps) for the GPU kernel it launches, which waits (data_deps) for the operator, a
     * cycle.  Counted in n_ctrl_ignored. */
    gboolean ignore_ctrl_deps;
    /* Label ops with their node names (default TRUE).  Interning a name per node is a large
     * part of loading a big trace: turn it off when no report shows op names (the replay verb
     * keeps them only for --timeline, --trace, --plot and error messages). */
    gboolean keep_names;
    /* Decode traces on this many threads (0, the default: every core); the graph, the stats
     * and any error are the same for every count. */
    guint n_threads;
    /* Decode nodes with protobuf-c's generated unpacker instead of the fast wire decoder; both
     * accept the same bytes and give the same graph (the tests hold them to it), this one is
     * slower and allocates every field.  For tests. */
    gboolean reference_decoder;
    /* Record each op's Chakra node id (its id within its rank's trace) in stats->node_ids, for
     * replays whose rules follow node ids (ASTRA-sim's issue order, include/shiftsim/astra.h).
     * Nodes otherwise elided are then kept too, as zero-time compute ops of class
     * "chakra:<TYPE>" (e.g. "chakra:INVALID_NODE"; "chakra:INVALID_NODE:cpu" with is_cpu_op) on
     * the stream "elided", since such a replay
     * gives them a place in the issue order; they are still counted as elided. */
    gboolean keep_node_ids;
    /* Read the nodes as ASTRA-sim 2.x reads them (for its rules, include/shiftsim/astra.h),
     * failing where it throws: a send or a receive without comm_tag; in a workload, unlike a
     * custom collective's set (astra_custom, which ASTRA-sim's CustomAlgorithm reads), a send
     * whose comm_src or a receive whose comm_dst names another rank than its trace's; and, with
     * astra_roofline (the system's roofline-enabled), a GPU compute node without num_ops or
     * tensor_size; and a METADATA_NODE or a type past COMM_COLL_NODE, on which ASTRA-sim's
     * statistics assert as it issues the node.  A broadcast keeps its duration_micros, which
     * ASTRA-sim replays.  A collective's comm_priority and involved_dim are read too (into
     * stats->colls, with keep_node_ids; refused when ASTRA-sim throws or exits at them), and an
     * attribute a node gives twice is read by its first instance, as ASTRA-sim's node reader
     * reads it (protobuf's rule, and the default's, is the last).  All off by default. */
    gboolean astra_rules;
    gboolean astra_custom;
    gboolean astra_roofline;
    /* With astra_rules: the system's track-local-mem is on, and ASTRA-sim's local memory tracker
     * reads every node's inputs and outputs attributes as it ends (it throws without them). */
    gboolean astra_track_mem;
    /* With astra_rules and keep_node_ids: the system's replay-only is on, and ASTRA-sim issues
     * every node, whatever its type, as a wait of its duration_micros (1 ns without one) on the
     * slot its type and is_cpu_op give (Workload::issue_replay).  Each node becomes a compute op
     * of that duration, of class "cpu" (is_cpu_op), "comp" (a GPU COMP_NODE) or
     * "chakra:<TYPE>", on its type's stream; nothing is matched across ranks, and no attribute
     * but is_cpu_op and stream is read.  Counted in n_replayed. */
    gboolean astra_replay_only;
    /* Issue each stream's ops in a causal order over all ranks (ssim_graph_issue_causally(),
     * TRUE, the default) instead of each trace's own topological order (FALSE): a generator's
     * node order is not a schedule, and a stage of symbolic_tensor_graph's pipelines would
     * otherwise issue a microbatch's backward, waiting for the later stages, ahead of the next
     * microbatch's forward.  A trace whose order is causal already keeps it.  Not with
     * keep_node_ids.  Counted in n_reordered. */
    gboolean causal_order;
} SsimChakraOptions;

/* Fills `opts` with the defaults above. */
void ssim_chakra_options_init(SsimChakraOptions *opts);

/* What a load read and how it mapped it.  Owned by the caller: init, then clear. */
typedef struct {
    guint n_ranks;                             /* trace files read */
    guint n_groups;                            /* process groups defined */
    char *comm_group_path;                     /* the JSON used, or NULL (one group) */
    char *version;                             /* rank 0's GlobalMetadata.version */
    guint64 n_nodes;                           /* nodes read, all ranks */
    guint64 by_type[SSIM_CHAKRA_N_NODE_TYPES]; /* nodes read, by NodeType */
    guint64 n_compute_timed;                   /* compute ops with a trace duration */
    guint64 n_compute_roofline;                /* compute ops priced by the cost model */
    guint64 n_compute_empty;                   /* compute nodes with neither: zero time */
    guint64 n_collectives, n_barriers, n_sends, n_recvs, n_mem;
    guint64 n_elided; /* nodes not replayed (deps forwarded) */
    guint64 elided_by_type[SSIM_CHAKRA_N_NODE_TYPES];
    guint64 n_approximated;    /* GATHER, SCATTER, MEM_* nodes */
    guint64 n_cpu_colls;       /* host-side collective calls (no comm_type): CPU ops */
    guint64 n_dangling;        /* dependencies on absent nodes dropped (drop_dangling) */
    guint64 n_ctrl_ignored;    /* control dependencies not replayed (ignore_ctrl_deps) */
    guint64 n_reordered;       /* ops issued after another op than in their trace (causal_order) */
    guint64 n_replayed;        /* nodes replayed by their duration whatever their type */
    guint64 n_ops;             /* ops in the graph */
    guint64 n_deps;            /* dependency edges in the graph */
    guint64 n_ignored_attrs;   /* attribute instances not read */
    GHashTable *ignored_attrs; /* name -> count (GUINT_TO_POINTER) */
    /* Seconds the load took (for benchmarks; no report prints them, as they differ between
     * runs): wall time, the process's processor time (every thread), and the loading thread's
     * processor time adding ops to the graph and finalizing it (the part no worker shares). */
    double wall_s, cpu_s, emit_s, finalize_s;
    /* With options.keep_node_ids: guint64 per op of the graph, the op's node id in its trace
     * (NULL otherwise). */
    GArray *node_ids;
    /* With options.keep_node_ids and astra_rules: SsimCollAttrs per op of the graph (zeros for
     * an op that is not a collective; NULL otherwise). */
    GArray *colls;
} SsimChakraStats;

void ssim_chakra_stats_init(SsimChakraStats *stats);
void ssim_chakra_stats_clear(SsimChakraStats *stats);
/* A human-readable summary: node counts by type, how they were mapped, what was not read. */
GString *ssim_chakra_stats_format(const SsimChakraStats *stats);

/*
 * Reads PREFIX.0.et, PREFIX.1.et, ... (PREFIX may also be a directory holding exactly one set)
 * and the comm-group JSON `comm_group_json` (NULL: PREFIX.json
 * when it exists, else the only *.json beside the traces, else one group of all ranks) and
 * returns the finalized graph (caller owns), or NULL with `error` set.  `opts` NULL means the
 * defaults; `stats` may be NULL, else it must have been initialised and is filled in.
 */
SsimGraph *ssim_chakra_load(const char *prefix, const char *comm_group_json,
                            const SsimChakraOptions *opts, SsimChakraStats *stats, GError **error);

G_END_DECLS
