/*
 * nccl-tests' vocabulary, for the other importers of this folder: vTrain's lookup tables are
 * nccl-tests output reformatted (vtrain.c), and the import dispatcher (import.c) infers a
 * collective from a file name and fills in metadata the way the nccl-tests importers do.
 */
#pragma once

#include <shiftsim/profile.h>

G_BEGIN_DECLS

/* A shiftsim dtype from a nccl-tests data type name (float, half, bfloat16, f8e4m3, ...). */
gboolean ssim_nccltests_dtype_from_name(const char *type, SsimDtype *out);
/* The collective a program or file name holds ("./build/all_reduce_perf", "allgather.txt"). */
gboolean ssim_nccltests_op_from_name(const char *name, SsimProfileComm *out);
/* Sets metadata `key` to `value` unless `p` has it or `value` is NULL; line breaks in `value`
 * become spaces (a metadata value is one line). */
void ssim_nccltests_set_meta_default(SsimProfile *p, const char *key, const char *value);

G_END_DECLS
