/*
 * The inside of SsimGraph, shared by graph.c (storage, read access, finalize), graph-match.c (the
 * matching of collectives, barriers and send/receive pairs) and graph-programs.c (programs: their
 * storage and their part of finalize).  Nothing outside src/core/ includes it; the rest of the
 * library sees the graph through include/shiftsim/graph.h.
 *
 * Invariants (besides graph.h's): op_program is NULL until some op is put into a program, and then
 * holds one entry per op; a program's rank never changes; everything below `finalized` is derived
 * by ssim_graph_finalize() and freed by graph_clear_finalized() whenever the graph changes.
 */
#pragma once

#include <shiftsim/graph.h>

typedef enum { MATCH_COLL, MATCH_BARRIER, MATCH_P2P } MatchKind;

struct SsimGraph {
    guint64 serial;                            /* ssim_graph_serial() */
    GArray *ops;                               /* SsimOp */
    GArray *deps;                              /* guint32 */
    GArray *dep_first;                         /* guint32 per op: its first entry in deps */
    gsize ops_room, deps_room, dep_first_room; /* elements each has room for (ssim_array_push) */
    GPtrArray *strings;                        /* owned char * */
    GHashTable *string_ids;                    /* borrowed char * -> id + 1 */
    GArray *stream_rank;                       /* guint32 per stream */
    GArray *stream_name;                       /* guint32 string id per stream */
    GHashTable *stream_ids;                    /* "rank\x1fname" -> stream + 1 */
    guint32 n_ranks;
    GArray *group_name;    /* guint32 string id */
    GArray *group_first;   /* guint32 offset into group_ranks, n_groups + 1 entries */
    GArray *group_ranks;   /* guint32 */
    GArray *group_sorted;  /* guint32: each group's ranks in increasing order (same offsets) */
    GHashTable *group_ids; /* borrowed name -> group + 1 */
    /* Programs: per program its rank and name (string id), the table "rank\x1fname" -> index + 1,
     * and per op its program (NULL while no op has one; ssim_array_push room in op_program_room).
     */
    GArray *prog_rank, *prog_name;
    GHashTable *prog_ids;
    GArray *op_program;
    gsize op_program_room;

    gboolean finalized;
    /* Whether ssim_graph_finalize() has run since the last change: arrays it derived (or
     * partly derived, when it failed) may exist.  An edit clears them only then, so adding a
     * million ops to a fresh graph does not clear nothing a million times. */
    gboolean derived;
    guint32 *n_preds;
    guint32 *stream_prev;
    guint32 *gate;
    guint32 *succ_first; /* n_ops + 1 */
    guint32 *succs;
    guint32 n_matches;
    guint32 *match_first; /* n_matches + 1 */
    guint32 *match_ops;
    guint32 *match_expected;
    guint8 *match_kind;
    gboolean ids_identity; /* op i has id i for all i */
    guint64 *id_sorted;    /* (id << 32 | index), sorted, when !ids_identity */
    /* Programs, when the graph has some: previous and next program on the rank, and each
     * program's ops in graph order (CSR: prog_ops[prog_first[p]] ..). */
    guint32 *prog_prev, *prog_next;
    guint32 *prog_first, *prog_ops;
};

/* Fails finalize: sets `error` naming op `op` (label, rank, stream) and the message, frees what
 * finalize derived so far, and returns FALSE. */
gboolean graph_fail(GError **error, SsimGraph *g, guint32 op, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
/* Frees everything finalize derives (the graph changed, or finalize failed). */
void graph_clear_finalized(SsimGraph *g);
/* TRUE when `rank` is a member of `group`. */
gboolean graph_group_has_rank(const SsimGraph *g, guint32 group, guint32 rank);

/* Resolves auto tags and builds the match lists (graph-match.c). */
gboolean graph_build_matches(SsimGraph *g, GError **error);

/* The programs' part of finalize, after the successor lists exist (graph-programs.c): each
 * program's neighbours and ops, and the proof that no program waits for itself. */
gboolean graph_finalize_programs(SsimGraph *g, GError **error);
/* Frees the programs' derived arrays; frees the programs themselves too when `all`. */
void graph_programs_clear(SsimGraph *g, gboolean all);
