/*
 * What the import dispatcher (import.c) needs of vtrain.c beyond its public header: the rank
 * count a lookup table's file name gives, to find the tables of a directory and order them.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

/* The n of a base name AR_GPU<n>_... (1 <= n <= 2^20), or 0 when `path` names no vTrain table. */
guint ssim_vtrain_lut_ranks(const char *path);

G_END_DECLS
