/*
 * Comparing two graphs op by op, for the Chakra importer's equivalence tests and benchmark: the
 * fast decoder against the reference path (protobuf-c), one thread against many.
 */
#pragma once

#include <shiftsim/graph.h>

G_BEGIN_DECLS

/*
 * NULL when `a` and `b` are the same graph: the same ranks, streams (rank and name, in order),
 * groups (name and ranks, in order) and ops in order, each with the same kind, collective,
 * stream, rank, id, group, peer, tag (as resolved by finalize), match, duration, bytes, FLOPs,
 * name and class (the same string ids, and the same strings) and dependencies.  Otherwise the first
 * difference, in words (caller frees).
 */
char *cw_graph_diff(const SsimGraph *a, const SsimGraph *b);

G_END_DECLS
