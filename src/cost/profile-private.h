/*
 * The inside of SsimProfile, shared by profile.c (rows, metadata, text form) and the lookup
 * (profile-index.c and its parts: the index, interpolation, the summary), which builds on
 * profile.c and not the other way round: profile.c frees the index through the function pointer
 * the lookup stored beside it.  Nothing else includes this but the lookup's own private header.
 *
 * Invariants: every row in `rows` passed ssim_profile_add_row()'s checks and its strings point
 * into `strings`; `index` is NULL or was built from exactly the current rows (any change to the
 * rows frees it); `index_lock` guards building it so that concurrent const lookups are safe.
 */
#pragma once

#include <shiftsim/profile.h>

typedef struct ProfileIndex ProfileIndex;

struct SsimProfile {
    GArray *rows;          /* SsimProfileRow */
    GStringChunk *strings; /* op and algo strings of the rows */
    GPtrArray *meta_keys;  /* char *, owned */
    GPtrArray *meta_values;
    GMutex index_lock;
    ProfileIndex *index; /* built on first lookup; read through g_atomic_pointer_get */
    /* Frees `index` (set with it by profile-index.c); called whenever the rows change. */
    void (*index_free)(ProfileIndex *index);
};
