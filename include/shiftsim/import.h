/*
 * Importing other tools' collective measurements into a profile, by kind: the registry of kinds
 * (`shiftsim profile import --from KIND`) and the dispatcher that reads a file, or a directory
 * of vTrain tables, with the importer of its kind (include/shiftsim/nccltests.h,
 * include/shiftsim/vtrain.h).
 *
 * Invariant: an import either adds every row of its input to the profile or fails and adds none
 * (a vtrain import sets its metadata defaults either way).
 *
 * Ownership: ssim_profile_import_into() appends to a caller-owned profile; ssim_profile_import()
 * returns a new one the caller frees.
 */
#pragma once

#include <shiftsim/profile.h>

G_BEGIN_DECLS

#define SSIM_IMPORT_KIND_LIST(X)                                                                   \
    X(NCCL_TESTS, "nccl-tests")                                                                    \
    X(NCCL_TESTS_JSON, "nccl-tests-json")                                                          \
    X(VTRAIN, "vtrain")

typedef enum {
#define SSIM_X(e, s) SSIM_IMPORT_##e,
    SSIM_IMPORT_KIND_LIST(SSIM_X)
#undef SSIM_X
        SSIM_IMPORT_N
} SsimImportKind;

const char *ssim_import_kind_name(SsimImportKind kind);
gboolean ssim_import_kind_from_name(const char *name, SsimImportKind *out);

/*
 * Reads `path` as `kind` into `dst`.  For vtrain a directory imports every AR_GPU*_LUT.csv in it
 * in order of rank count.  Metadata (tool, source, gpu, nccl when known) is set where absent.
 */
gboolean ssim_profile_import_into(SsimProfile *dst, SsimImportKind kind, const char *path,
                                  const char *op, GError **error);
/* The same into a new profile; `kind` by name ("nccl-tests", "nccl-tests-json", "vtrain"). */
SsimProfile *ssim_profile_import(const char *kind, const char *path, GError **error);

G_END_DECLS
