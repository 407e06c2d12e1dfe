/*
 * The inside of SsimPlan, shared by plan.c (the data structure, its setters and the checked
 * move) and plan-build.c (the graph builder and the checker).  Nothing outside src/workload/
 * includes it; the rest of the library sees the plan through include/shiftsim/plan.h.
 *
 * Invariants.  Plan ops of one rank are stored in issue order and their indices are that order,
 * so "kernel a runs before kernel b of the same rank" is a < b.  `kernels[r]` lists rank r's
 * kernels ascending.  The adjacency of `data` is built lazily: `dirty_producers` covers the
 * producer lists (what the builder needs), `dirty` the consumer lists and the per-site and
 * per-rank caches (what the placement rules need); whatever changes `data`, an op's flags or
 * its site sets the flags.
 */
#pragma once

#include <shiftsim/plan.h>

typedef struct {
    guint32 rank;
    const char *name; /* interned */
} Stream;

typedef struct {
    char *name;
    guint32 first, n;
} Group;

typedef struct {
    guint32 a, b;
} Pair;

typedef struct {
    guint32 rank;
    guint32 ordinal;  /* its position among its rank's programs */
    const char *name; /* interned */
} Program;

struct SsimPlan {
    GArray *ops;            /* SsimPlanOp */
    GArray *streams;        /* Stream */
    GHashTable *stream_of;  /* "rank/name" -> index + 1 */
    GArray *groups;         /* Group */
    GArray *programs;       /* Program */
    GHashTable *program_of; /* "rank/name" -> index + 1 */
    GArray *rank_programs;  /* guint32 per rank: programs so far (the next ordinal) */
    GArray *group_ranks;    /* guint32 */
    GArray *order;          /* Pair (before, op) */
    GArray *data;           /* Pair (producer, consumer) */
    GPtrArray *kernels;     /* per rank: GArray of guint32 kernel indices, ascending */
    GArray *kernels_room;   /* per rank: the room of its kernels array (ssim_array_push) */
    gsize ops_room, order_room, data_room; /* ssim_array_push */
    /* Lazily built adjacency of `data`: producers (what building a graph needs) and the rest
     * (consumers and the per-site and per-rank caches, what placement passes need). */
    gboolean dirty, dirty_producers;
    GArray *pfirst, *pl, *cfirst, *cl;
    GArray *site_last;    /* guint32 per op: last producer of its gradient site */
    GArray *last_permute; /* guint32 per rank: its last lock-step permute, or NONE */
    /* Recently interned labels by the caller's pointer, each checked by content before use:
     * g_intern_string takes a global lock and hashes, and a lowering names a million ops with a
     * few dozen labels. */
    struct {
        const char *given, *interned;
    } names[256];
};

/* Fills `first` (n + 1 offsets) and `list` with the CSR of `pairs` keyed by the consumer
 * (`by_consumer`) or the producer. */
void plan_csr(const GArray *pairs, gboolean by_consumer, guint32 n, GArray *first, GArray *list);
/* Brings the producer lists of `plan` up to date (the caches are logically const). */
void plan_refresh_producers(const SsimPlan *plan);

/* The slot of a pointer in a direct-mapped cache of n slots, from every bit of the address:
 * interned strings lie a few bytes apart, so low bits alone put short names in one slot. */
static inline guint plan_pointer_slot(const void *p, guint n)
{
    return (guint)(((guint64)(guintptr)p * 0x9e3779b97f4a7c15u) >> 40) % n;
}
