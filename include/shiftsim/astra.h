/*
 * ASTRA-sim-compatible replay of a Chakra trace set (`replay --chakra ... --semantics astra`).
 *
 * shiftsim's own replay (runtime.h) runs each rank's ops on CUDA-like streams in a fixed issue
 * order and prices a collective as one alpha-beta cost.  This module replays the same graph under
 * the rules ASTRA-sim 2.x's system layer and its analytical congestion-unaware network apply, as
 * read in its source (astra-sim 518bd51: workload/Workload.cc, HardwareResource.cc, system/Sys.cc,
 * StreamBaseline.cc, PacketBundle.cc, MemBus.cc, astraccl/native_collectives/collective_algorithm/
 * Ring.cc and AllToAll.cc; astra-network-analytical congestion_unaware/), so that a user can check
 * shiftsim against ASTRA-sim, or get ASTRA-sim's number at a fraction of its cost:
 *
 *   - Issue.  Each rank has one GPU compute slot, one CPU slot and one communication slot, which
 *     collectives, sends and memory nodes share; receives take no slot.  Whenever an op of the
 *     rank ends, the rank walks its dependency-free nodes in ascending node id and starts each
 *     whose slot is free (Workload::issue_dep_free_nodes).  A node freed during that walk (the
 *     children of a compute node of tensor_size 0, which ASTRA-sim skips in no time) waits for
 *     the next walk.  Stream attributes play no part.
 *   - Compute.  With the roofline on, a GPU compute node takes num_ops / min(peak, mem_bw x
 *     num_ops / tensor_size) seconds, truncated to whole nanoseconds; one with tensor_size 0 is
 *     skipped.  Otherwise (and for CPU nodes) it takes its trace duration, at least 1 ns.
 *   - Collectives.  comm_size bytes (for all-gather, each rank's input) are split into
 *     `preferred-dataset-splits` chunks of size / splits bytes (for every type but all-gather at
 *     least one byte per NPU of the whole system: then splits x NPUs bytes in all); a remainder
 *     makes one more chunk of the same size.  Each chunk is a stream of phases, one per network
 *     dimension it crosses (a process group smaller than the system is one ring over its
 *     members); an all-reduce under `localBWAware` is reduce-scatter up the dimensions, all-reduce
 *     on the last, all-gather back down.  A collective without a process group crosses only the
 *     dimensions its node's involved_dim marks (SsimCollAttrs; four, all true, without one); one
 *     on a group ignores it.  Every dimension has one queue per rank in which
 *     `active-chunks-per-dimension` streams run at once, the rest waiting in priority order (LIFO:
 *     the newest collective first; EXPLICIT: the node's comm_priority), though with one
 *     communication node at a time per rank only one collective's streams ever wait.  A phase
 *     runs ASTRA-sim's packet protocol: each message goes through the endpoint (the
 *     `endpoint-delay`, or 10 ns inside a group's ring) and, on the steps that reduce, a local
 *     reduction of 3 x message bytes / local memory bandwidth (each third truncated to whole ns;
 *     the bandwidth's GB here is 10^9 bytes), then is sent to the ring neighbour.  Ring
 *     all-reduce is 2(n-1) messages of size/n, all-gather n-1 of size, reduce-scatter n-1 of
 *     size/n; `direct` sends to every member with a window;
 *     `halvingDoubling` exchanges log2(n) messages with ranks 1, 2, 4, ... away, halving them
 *     (all-reduce: log2(n) more back down; all-gather: from n/2 down, doubling).  A chunk's
 *     messages are tagged by its stream id: on the graph's group named "world" (the loader's
 *     group of every rank, ASTRA-sim's collective without a communicator) the rank's count of
 *     chunks made in every group, on any other group that group's own count, as
 *     Sys::generate_collective numbers them.
 *   - Network, congestion-aware (`congestion_aware`: ASTRA-sim's other analytical backend,
 *     astra-network-analytical congestion_aware/, which takes one dimension).  A message is
 *     stored and forwarded along its route (a Ring the shorter way round, clockwise on a tie; a
 *     Switch through the switch; a FullyConnected direct), and each directed link sends one
 *     message at a time, first come first served: it arrives at the next device latency + b /
 *     bandwidth after the link took it, and the link takes the next after b / bandwidth (each
 *     truncated to whole ns).
 *   - Network.  A message of b bytes from a to b takes hops x latency + b / bandwidth on the first
 *     dimension where their coordinates differ (rank = sum of coordinate x NPUs of lower
 *     dimensions), truncated to whole ns; a Switch is 2 hops, a FullyConnected 1, a bidirectional
 *     Ring the shorter way round.  Bandwidth is in GB/s of 2^30 bytes.  Sends are eager: a
 *     transfer starts when sent, and a receive posted after its arrival completes at once.
 *     Messages match by (tag, source, destination, size) in order, a send's or receive's tag
 *     taken modulo 500000000 (astra_native_tag(), as Sys::front_end_sim_send keeps it).
 *   - Rendezvous (`rendezvous`, ASTRA-sim's --rendezvous-protocol).  Every message, a
 *     collective's steps included, first waits for a handshake: the sender posts a receive of
 *     8192 bytes from its destination and sends when they arrive; the receiver sends them when
 *     it posts its receive, which it posts once they have arrived (Sys::rendezvous_sim_send and
 *     _recv).  `injection_scale` (--injection-scale) multiplies an endpoint-delay the system file
 *     gives, truncated to whole ns.  With `queues_per_dim` (--num-queues-per-dim) above 1 a
 *     dimension has that many queues per rank (the collectives bullet's queue is each of them).
 *
 * The "one" forms (oneRing, oneDirect, oneHalvingDoubling) run over one ring of every NPU, and
 * the dimensions after theirs are not used (GeneralComplexTopology stops there).
 *
 * doubleBinaryTree (all-reduce only, a dimension of 2^k NPUs) runs ASTRA-sim's
 * DoubleBinaryTreeAllReduce over one of the dimension's two trees, the rank's own choice
 * alternating between them with each phase it makes on the dimension (DoubleBinaryTreeTopology's
 * counter): the NPUs numbered in order through a tree whose root has one child, the root last
 * (RootMax, first) or first (RootMin).  Whatever the phase's type, it is a whole all-reduce of the
 * chunk: a leaf passes its chunk through the endpoint and sends it to its parent; an inner node
 * reduces each child's chunk as it arrives (endpoint, then 3 x bytes / local memory bandwidth),
 * sends to its parent once both reductions are back, reduces the parent's reply and sends it to
 * both children; the root reduces its child's chunk and sends it back.  Every message is the
 * whole chunk.
 *
 * Custom implementations (`<collective>-implementation-custom`: a Chakra trace set, one file per
 * position in the collective's group) run each collective of that type as ASTRA-sim's
 * CustomAlgorithm does: one stream on the rank's first queue (it waits there for a free slot
 * like a chunk), which replays its position's trace: every dependency-free node is issued at
 * once, in ascending node id (ASTRA-sim walks an unordered set; nothing in the algorithm waits
 * for a slot, so only the order of events at one instant can differ); a send goes to the rank at
 * the peer's position in the group (the file's order; the rank's own position is its index among
 * the sorted members, as ASTRA-sim's CommunicatorGroup computes both) with the node's comm_size
 * and comm_tag, the collective's own size being ignored, and matches the workload's own sends of
 * the same key, as in ASTRA-sim; a compute node takes its duration, at least 1 ns.  The stream
 * ends, and with it the collective, when the last node has.  preferred-dataset-splits must be 1:
 * ASTRA-sim makes one stream and waits for that many.  per-node-custom-implementation entries
 * (SsimAstraConfig.per_node) come first, by the collective's node id; on a process group the
 * group's first collective of a type fixes the implementation of its later ones on that rank
 * (CommunicatorGroup::get_collective_plan keeps its plan).
 *
 * With model-shared-bus 1 a message that is not a group ring's crosses ASTRA-sim's LogGP memory
 * bus instead of the endpoint delay (MemBus.cc, LogGP.cc; src/run/astra-bus.c): towards the
 * network through the NPU side, back through the MA side, each side sending one request at a time
 * (o, or what is left of g since its last send, then G a byte; received L + o later), the
 * receiver reducing ((bytes / 100) x local-reduction-delay + 50 ns), sending back or retiring it,
 * the NPU side crossing its own bus to memory (G = 0.0038) for each.  An event at time 0 (a
 * message at the start whose endpoint or bus takes no time) stops the run: ASTRA-sim's event
 * queue aborts on it.
 *
 * What is not modelled (errors, never silent): doubleBinaryTree for other collectives than
 * all-reduce, on dimensions not of 2^k NPUs and on process groups smaller than the system (where
 * ASTRA-sim's tree is undefined), offline-greedy inter-dimension scheduling, REDUCE and PERMUTE
 * collectives (ASTRA-sim refuses them too), barriers;
 * GATHER and SCATTER, which the loader refuses under astra_rules.  BROADCAST takes its trace
 * duration (the loader keeps it under astra_rules), 1 ns without one, as ASTRA-sim replays it.
 * Memory nodes take the communication slot and are served by the remote memory
 * (AnalyticalRemoteMemory): latency + tensor_size / bandwidth, at once on each NPU's own, one
 * transfer after another (first come, first served) on a node's or on the pool; with
 * NO_MEMORY_EXPANSION, ASTRA-sim's example, a memory node is an error (ASTRA-sim exits).  Invalid
 * nodes, which the loader keeps as ops of class "chakra:INVALID_NODE" when it records node ids,
 * take the communication slot and are skipped at once, their dependents waiting for the next
 * walk, as in ASTRA-sim; a kept node of any other type is refused (ASTRA-sim's statistics assert
 * on it).  The loader's astra_rules (include/shiftsim/chakra.h) refuse what ASTRA-sim's workload
 * layer throws on as it reads or issues a node, metadata nodes among them.
 *
 * With replay-only (Workload::issue_replay for every node), the loader makes every node a
 * compute op of its duration (SsimChakraOptions.astra_replay_only), and the replay runs each for
 * its duration, 1 ns without one, whatever its type, roofline or not, on the slot ASTRA-sim's
 * HardwareResource gives it: the CPU's for a node with is_cpu_op, the GPU compute slot for a
 * COMP_NODE, none for a receive, the communication slot for any other type (a collective, a
 * send, a memory or an invalid node).  Nothing is matched across ranks: each rank's trace runs
 * alone, and the network, the remote memory and the custom implementations are not used.
 *
 * Time is integer nanoseconds throughout.  Events at one instant run as ASTRA-sim orders them:
 * the network's (an arrival, a receive served at once, a congestion-aware hop) in the order they
 * were scheduled, and a rank's system-layer events (a compute or memory node's end, an endpoint
 * delay, a reduction, the shared bus's) together with that rank's others of the instant, at the
 * place of the first one registered, as Sys::try_register_event keeps them, one registered
 * while they run (a delay of 0) included.  A replay is deterministic.
 */
#pragma once

#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>

G_BEGIN_DECLS

#define SSIM_ASTRA_MAX_DIMS 8

/* Basic topologies of one network dimension, as ASTRA-sim's network files name them. */
#define SSIM_ASTRA_TOPO_LIST(X)                                                                    \
    X(RING, "Ring")                                                                                \
    X(SWITCH, "Switch")                                                                            \
    X(FULLY_CONNECTED, "FullyConnected")

typedef enum {
#define SSIM_X(e, s) SSIM_ASTRA_TOPO_##e,
    SSIM_ASTRA_TOPO_LIST(SSIM_X)
#undef SSIM_X
        SSIM_ASTRA_TOPO_N
} SsimAstraTopo;

/* Collective implementations of one dimension (the system file's *-implementation lists). */
#define SSIM_ASTRA_ALGO_LIST(X)                                                                    \
    X(RING, "ring")                                                                                \
    X(DIRECT, "direct")                                                                            \
    X(HALVING_DOUBLING, "halvingDoubling")                                                         \
    X(DOUBLE_BINARY_TREE, "doubleBinaryTree")

typedef enum {
#define SSIM_X(e, s) SSIM_ASTRA_ALGO_##e,
    SSIM_ASTRA_ALGO_LIST(SSIM_X)
#undef SSIM_X
        SSIM_ASTRA_ALGO_N
} SsimAstraAlgo;

/* The collective types ASTRA-sim implements, indexing SsimAstraConfig.impl. */
typedef enum {
    SSIM_ASTRA_AR,  /* all-reduce */
    SSIM_ASTRA_AG,  /* all-gather */
    SSIM_ASTRA_RS,  /* reduce-scatter */
    SSIM_ASTRA_A2A, /* all-to-all */
    SSIM_ASTRA_N_COLL
} SsimAstraColl;

typedef struct {
    SsimAstraAlgo algo;
    int window;   /* direct: messages in flight (-1: all members), as "direct<W>" says */
    gboolean one; /* the "one" forms (oneRing, ...): one ring over every NPU, from here on */
} SsimAstraImpl;

/* ASTRA-sim's analytical remote memory (its --remote-memory-configuration JSON, memory-type):
 * how MEM_LOAD and MEM_STORE nodes are served.  A transfer of S bytes takes latency + S /
 * bandwidth ns (truncated). */
#define SSIM_ASTRA_MEM_LIST(X)                                                                     \
    X(NONE, "NO_MEMORY_EXPANSION")           /* no remote memory: a memory node is an error */     \
    X(PER_NODE, "PER_NODE_MEMORY_EXPANSION") /* one transfer at a time per node of NPUs */         \
    X(PER_NPU, "PER_NPU_MEMORY_EXPANSION")   /* every NPU its own, no queue */                     \
    X(POOL, "MEMORY_POOL")                   /* one transfer at a time for every NPU */

typedef enum {
#define SSIM_X(e, s) SSIM_ASTRA_MEM_##e,
    SSIM_ASTRA_MEM_LIST(SSIM_X)
#undef SSIM_X
        SSIM_ASTRA_MEM_N
} SsimAstraMemType;

/* The memory-type string of `t` ("PER_NPU_MEMORY_EXPANSION", ...). */
const char *ssim_astra_mem_type_name(SsimAstraMemType t);

/* The system's scheduling-policy: the priority Sys::get_priority gives a collective's streams,
 * which order a queue's waiting streams (highest first; equal ones in arrival order).  LIFO
 * counts up from 0 per rank, so the latest collective goes first; FIFO counts down; EXPLICIT
 * takes the node's comm_priority (SsimCollAttrs.priority, as a C int). */
typedef enum { SSIM_ASTRA_LIFO, SSIM_ASTRA_FIFO, SSIM_ASTRA_EXPLICIT } SsimAstraPolicy;

/* A custom implementation's trace set, loaded by the caller (ssim_chakra_load() with
 * keep_node_ids): rank k of the graph is position k in a collective's group. */
typedef struct {
    const SsimGraph *graph;
    const guint64 *node_ids; /* each op's Chakra node id; NULL: its index within its rank */
} SsimAstraCustom;

/* One entry of a per-node-custom-implementation file: the workload node id it names (a C int, as
 * ASTRA-sim compares it with the node's id cast to an int), its trace-set prefix as the file
 * gives it (owned), and the set, which the caller loads (borrowed). */
typedef struct {
    gint32 node;
    char *path;
    SsimAstraCustom set;
} SsimAstraPerNode;

typedef struct {
    /* The network (ASTRA-sim's network YAML): dimension 0 is the innermost. */
    guint n_dims;
    SsimAstraTopo topo[SSIM_ASTRA_MAX_DIMS];
    guint npus[SSIM_ASTRA_MAX_DIMS];
    double bandwidth_gbps[SSIM_ASTRA_MAX_DIMS]; /* GB/s, GB = 2^30 bytes */
    double latency_ns[SSIM_ASTRA_MAX_DIMS];
    gboolean congestion_aware; /* links queue messages (one dimension), not a delay per message */
    /* The system (ASTRA-sim's system JSON). */
    SsimAstraPolicy policy;      /* scheduling-policy */
    gboolean local_bw_aware;     /* collective-optimization localBWAware (TRUE) or baseline */
    gboolean coll_opt_unset;     /* the system file left collective-optimization out */
    SsimTime endpoint_delay;     /* endpoint-delay, ns */
    gboolean endpoint_delay_set; /* the file gives endpoint-delay (injection_scale scales it) */
    guint active_chunks_per_dim; /* active-chunks-per-dimension */
    guint splits;                /* preferred-dataset-splits */
    double local_mem_bw_gbps;    /* local-mem-bw, GB/s with GB = 10^9 bytes (as ASTRA-sim) */
    gboolean roofline;           /* roofline-enabled */
    gboolean track_local_mem;    /* track-local-mem: every node needs inputs and outputs */
    gboolean replay_only;        /* replay-only: every node waits its duration (below) */
    double peak_tflops;          /* peak-perf, TFLOP/s */
    /* model-shared-bus 1: a message's endpoint is ASTRA-sim's LogGP memory bus, not the delay
     * (astra-bus.c); its parameters, read whether or not it is on, as Sys keeps them: L, o and g
     * floats passed on as whole ns (truncated), G a float (ns a byte), local-reduction-delay an
     * int (ns per 100 bytes reduced). */
    gboolean shared_bus;
    double bus_L, bus_o, bus_g, bus_G;
    gint64 local_reduction_delay;
    guint n_impl[SSIM_ASTRA_N_COLL]; /* implementations given per dimension, per collective */
    SsimAstraImpl impl[SSIM_ASTRA_N_COLL][SSIM_ASTRA_MAX_DIMS];
    /* Custom implementations: the trace set's prefix as the system file gives it (owned; NULL:
     * the native ones above), and the set, which the caller loads (borrowed). */
    char *custom_path[SSIM_ASTRA_N_COLL];
    SsimAstraCustom custom[SSIM_ASTRA_N_COLL];
    /* per-node-custom-implementation: the YAML file the system file names, as it names it (owned;
     * NULL: none), and its entries, which ssim_astra_config_read_per_node() reads (owned). */
    char *per_node_path;
    guint n_per_node;
    SsimAstraPerNode *per_node;
    /* ASTRA-sim's command line.  --injection-scale: an endpoint-delay the system file gives is
     * multiplied by it, truncated to whole ns (Sys::Sys; the default 10 is not).
     * --rendezvous-protocol: before each message its receiver sends the sender a handshake of
     * 8192 bytes, and the message leaves when that has arrived (Sys::rendezvous_sim_send). */
    double injection_scale;
    gboolean rendezvous;
    /* --num-queues-per-dim: each dimension's queues on a rank (default 1), which its chunks'
     * phases take in turn, each running ceil(active-chunks-per-dimension / queues) at once; the
     * second half of a dimension's queues runs its rings the other way round (QueueLevelHandler),
     * and a localBWAware all-reduce's reduce-scatter and all-reduce phases take the first half,
     * its all-gather phases the second. */
    guint queues_per_dim;
    /* The remote memory (ASTRA-sim's remote memory JSON). */
    SsimAstraMemType mem_type;
    guint64 mem_latency_ns;         /* remote-mem-latency */
    guint64 mem_bw;                 /* remote-mem-bw: GB/s of 10^9 bytes, a whole number */
    guint mem_nodes, mem_npus_node; /* PER_NODE: num-nodes, num-npus-per-node */
} SsimAstraConfig;

/*
 * The defaults: no network (ssim_astra_replay() then uses one Switch of all ranks at 400 GB/s and
 * 936.25 ns, ASTRA-sim's example), and ASTRA-sim's example system
 * native_collectives/Ring_4chunks.json with the roofline on: LIFO, localBWAware, endpoint delay
 * 10 ns, 1 active chunk per dimension, 4 splits, ring everywhere, local memory 1600 GB/s, peak
 * 900 TFLOP/s; and ASTRA-sim's example remote memory, NO_MEMORY_EXPANSION.
 */
void ssim_astra_config_init(SsimAstraConfig *cfg);

/* The system file's key of a custom implementation: "all-reduce-implementation-custom", ... */
const char *ssim_astra_custom_key(SsimAstraColl t);

/*
 * Reads the per-node-custom-implementation YAML at `path` (cfg->per_node_path as the caller
 * resolved it) into cfg->per_node, replacing what was there, as ASTRA-sim's CollectiveImplLookup
 * reads it: a mapping of workload node ids (integers of a C int) to Chakra trace-set prefixes,
 * one `ID: PREFIX` a line (the prefix optionally quoted), `#` comments and blank lines.  A
 * collective whose node id the file names runs that set as its custom implementation, before
 * the system file's `<collective>-implementation-custom` and native ones.  Errors
 * (SSIM_CONFIG_ERROR) name path:line: an id given twice, any other line.
 */
gboolean ssim_astra_config_read_per_node(SsimAstraConfig *cfg, const char *path, GError **error);

/* Frees what the configuration owns (the custom implementations' paths and per-node entries). */
void ssim_astra_config_clear(SsimAstraConfig *cfg);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimAstraConfig, ssim_astra_config_clear)

/*
 * Reads ASTRA-sim's network YAML at `path` into cfg's network.  The reader takes the flat subset
 * those files use, strictly: `key: scalar` or `key: [ a, b, ... ]` lines, `#` comments and blank
 * lines; the keys topology, npus_count, bandwidth and latency, all required, lists of one length.
 * Errors (SSIM_CONFIG_ERROR) name path:line: and the key.
 */
gboolean ssim_astra_config_read_network(SsimAstraConfig *cfg, const char *path, GError **error);

/*
 * Reads ASTRA-sim's system JSON at `path` into cfg's system fields, as ASTRA-sim reads it: a key
 * the file leaves out takes ASTRA-sim's own value (roofline-enabled 0, peak-perf and local-mem-bw
 * 0, endpoint-delay 10, active-chunks-per-dimension 1; an implementation key left out leaves
 * that collective without a native implementation, so that one is an error at the replay, as
 * in ASTRA-sim), and scheduling-policy and preferred-dataset-splits, which ASTRA-sim leaves unset
 * without them, are required; collective-optimization, which only a native all-reduce reads, may
 * be left out (coll_opt_unset: such an all-reduce is then an error).  A custom implementation's
 * key is a list of one trace-set prefix, kept as given in custom_path (the file says every custom
 * implementation: those of cfg are dropped), and per-node-custom-implementation's YAML path is
 * kept in per_node_path (ssim_astra_config_read_per_node() reads its entries).  Values are
 * converted as ASTRA-sim's nlohmann::json converts them: a switch is off only for a number equal
 * to 0 (false turns it on), a whole-number key drops a real's fraction and reads true as 1, and
 * a value ASTRA-sim's reader throws on is an error.  Keys ASTRA-sim reads that change nothing
 * in this model (boost-mode, trace-enabled, ...) are accepted; values this model does not
 * implement are errors naming path: and the key.
 */
gboolean ssim_astra_config_read_system(SsimAstraConfig *cfg, const char *path, GError **error);

/*
 * Reads ASTRA-sim's remote memory JSON at `path` into cfg's mem_* fields, as its analytical
 * remote memory reads it: memory-type (required; ASTRA-sim leaves it unset without it),
 * remote-mem-latency and remote-mem-bw (whole numbers, a real's fraction dropped, 0 when left
 * out; an expansion needs a bandwidth above 0, which ASTRA-sim divides by), and for
 * PER_NODE_MEMORY_EXPANSION num-nodes and num-npus-per-node (above 0).  Any other key is an
 * error naming path: and the key.
 */
gboolean ssim_astra_config_read_memory(SsimAstraConfig *cfg, const char *path, GError **error);

/* The configuration as the equivalent ASTRA-sim files would say it, one `key: value` a line. */
GString *ssim_astra_config_format(const SsimAstraConfig *cfg);

/* What a replay did, for reports. */
typedef struct {
    guint64 n_collectives;    /* collective ops run */
    guint64 n_chunks;         /* chunk streams they were split into */
    guint64 n_messages;       /* network messages (collective steps, sends) */
    guint64 n_skipped;        /* compute nodes skipped (roofline on, tensor_size 0) */
    guint64 n_mem;            /* memory nodes served by the remote memory */
    guint64 n_invalid;        /* invalid nodes skipped on the comm slot */
    guint64 n_broadcast;      /* broadcasts replayed by their duration */
    guint64 n_custom;         /* collectives run by a custom implementation */
    guint64 n_replayed;       /* replay-only: nodes that waited their duration */
    SsimTime rank_finish_max; /* the last rank's finish: ASTRA-sim's "sys[i] finished" max */
    SsimTime rank_finish_min; /* the first rank's finish */
} SsimAstraStats;

/*
 * Replays `graph` (finalized; as ssim_chakra_load() makes it, one trace per rank) under the rules
 * above.  `node_ids` gives each op's Chakra node id (SsimChakraOptions.keep_node_ids), which the
 * issue rule orders by; NULL uses the op index within its rank.  `colls` gives what each
 * collective's node says beside its type and size (SsimChakraStats.colls, with astra_rules):
 * its priority under EXPLICIT scheduling and, for a collective of every rank without a process
 * group, the network dimensions it runs on; NULL: priority 0 and involved_dim's default, four
 * dimensions.  A configuration without a
 * network gets one Switch of all ranks (400 GB/s, 936.25 ns); otherwise its NPUs must equal the
 * graph's ranks.  Each custom implementation cfg names (custom_path) must have its set in
 * cfg->custom, loaded as the graph is (node ids kept); the timeline holds the workload's ops
 * only (a custom collective is one op, its trace's nodes are not shown).  Returns the timeline
 * (start and end of every op; ready = start) or NULL with
 * `error` set: a configuration the model does not implement or that does not fit the graph
 * (SSIM_CONFIG_ERROR), a run that stalls with ops unfinished (SSIM_RUN_ERROR_DEADLOCK, naming
 * one), or the limits (SSIM_RUN_ERROR_LIMIT).  `stats` may be NULL.
 */
SsimTimeline *ssim_astra_replay(const SsimGraph *graph, const guint64 *node_ids,
                                const SsimCollAttrs *colls, const SsimAstraConfig *cfg,
                                const SsimRunLimits *limits, SsimAstraStats *stats, GError **error);

G_END_DECLS
