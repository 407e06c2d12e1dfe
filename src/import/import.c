/*
 * The import registry and dispatcher of include/shiftsim/import.h: one line of
 * SSIM_IMPORT_KIND_LIST a kind, and ssim_profile_import_into() reading a file (or a directory of
 * vTrain tables) with the importer of its kind (nccltests.c, vtrain.c).
 *
 * The dispatcher adds to a scratch copy of the destination first and copies the new rows over
 * only when the whole input imported, so a failed import adds no row.  Metadata is filled in only
 * where the destination has none: the vTrain defaults (GPU, tool, source) first, whatever comes
 * of the import; then, for a single file, its base name as the source and what the importer
 * found.  The tables of a vTrain directory are imported in order of rank count, then of name, so
 * the profile is the same whatever order the directory lists them in.
 */
#include <shiftsim/data.h>
#include <shiftsim/import.h>
#include <shiftsim/nccltests.h>
#include <shiftsim/vtrain.h>

#include "src/import/nccltests-private.h"
#include "src/import/vtrain-private.h"

#include <string.h>

static const char *const import_names[] = {
#define SSIM_X(e, s) s,
    SSIM_IMPORT_KIND_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_import_kind_name(SsimImportKind kind)
{
    return (unsigned)kind < SSIM_IMPORT_N ? import_names[kind] : "?";
}

gboolean ssim_import_kind_from_name(const char *name, SsimImportKind *out)
{
    for (guint i = 0; i < SSIM_IMPORT_N; i++)
        if (g_strcmp0(name, import_names[i]) == 0) {
            *out = (SsimImportKind)i;
            return TRUE;
        }
    return FALSE;
}

/* Orders vTrain tables by rank count, then by path. */
static gint cmp_vtrain(gconstpointer a, gconstpointer b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    guint nx = ssim_vtrain_lut_ranks(x), ny = ssim_vtrain_lut_ranks(y);
    return nx != ny ? (nx > ny) - (nx < ny) : strcmp(x, y);
}

/* Reads the file `path` and imports it as `kind` into `dst`. */
static gboolean import_file(SsimProfile *dst, SsimImportKind kind, const char *path, const char *op,
                            GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if ((text = ssim_read_file(path, &len, error)) == NULL)
        return FALSE;
    switch (kind) {
    case SSIM_IMPORT_NCCL_TESTS:
        if (op == NULL) {
            /* The file name may be all that says which collective this is. */
            SsimProfileComm c;
            if (strstr(text, "Collective test starting:") == NULL &&
                ssim_nccltests_op_from_name(path, &c))
                op = ssim_profile_comm_name(c);
        }
        return ssim_nccltests_import_text(dst, text, (gssize)len, path, op, error);
    case SSIM_IMPORT_NCCL_TESTS_JSON:
        return ssim_nccltests_import_json(dst, text, (gssize)len, path, op, error);
    case SSIM_IMPORT_VTRAIN:
        return ssim_vtrain_import_lut(dst, text, (gssize)len, path, error);
    default:
        g_return_val_if_reached(FALSE);
    }
}

gboolean ssim_profile_import_into(SsimProfile *dst, SsimImportKind kind, const char *path,
                                  const char *op, GError **error)
{
    g_return_val_if_fail(dst != NULL && path != NULL, FALSE);
    if (kind == SSIM_IMPORT_VTRAIN) {
        ssim_nccltests_set_meta_default(dst, "gpu", "NVIDIA A100 (vTrain's nodes of 8, NVLink)");
        ssim_nccltests_set_meta_default(dst, "tool",
                                        "nccl-tests all-reduce via vTrain's LUTs (imported by "
                                        "shiftsim profile import --from vtrain)");
        ssim_nccltests_set_meta_default(dst, "source",
                                        "vTrain, Bang et al., MICRO 2024 (arXiv 2312.12391), "
                                        "MIT licence");
    }
    if (kind != SSIM_IMPORT_VTRAIN || !g_file_test(path, G_FILE_TEST_IS_DIR)) {
        g_autoptr(SsimProfile) scratch = ssim_profile_new();
        if (!ssim_profile_merge(scratch, dst, error) ||
            !import_file(scratch, kind, path, op, error))
            return FALSE;
        g_autofree char *base = g_path_get_basename(path);
        ssim_nccltests_set_meta_default(dst, "source", base);
        for (guint i = 0; i < ssim_profile_n_meta(scratch); i++)
            ssim_nccltests_set_meta_default(dst, ssim_profile_meta_key(scratch, i),
                                            ssim_profile_meta_value(scratch, i));
        for (guint i = ssim_profile_n_rows(dst); i < ssim_profile_n_rows(scratch); i++)
            if (!ssim_profile_add_row(dst, ssim_profile_row(scratch, i), error))
                return FALSE;
        return TRUE;
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(GDir) dir = g_dir_open(path, 0, &err);
    if (dir == NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", path, err->message);
        return FALSE;
    }
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL)
        if (ssim_vtrain_lut_ranks(name) > 0 && g_str_has_suffix(name, "_LUT.csv"))
            g_ptr_array_add(files, g_build_filename(path, name, NULL));
    if (files->len == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: no AR_GPU<n>_*_LUT.csv table in this directory", path);
        return FALSE;
    }
    g_ptr_array_sort(files, cmp_vtrain);
    g_autoptr(SsimProfile) scratch = ssim_profile_new();
    if (!ssim_profile_merge(scratch, dst, error))
        return FALSE;
    for (guint i = 0; i < files->len; i++)
        if (!import_file(scratch, kind, files->pdata[i], NULL, error))
            return FALSE;
    for (guint i = ssim_profile_n_rows(dst); i < ssim_profile_n_rows(scratch); i++)
        if (!ssim_profile_add_row(dst, ssim_profile_row(scratch, i), error))
            return FALSE;
    return TRUE;
}

SsimProfile *ssim_profile_import(const char *kind, const char *path, GError **error)
{
    SsimImportKind k;
    if (!ssim_import_kind_from_name(kind, &k)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--from: '%s' is not nccl-tests, nccl-tests-json or vtrain", kind);
        return NULL;
    }
    g_autoptr(SsimProfile) p = ssim_profile_new();
    if (!ssim_profile_import_into(p, k, path, NULL, error))
        return NULL;
    return g_steal_pointer(&p);
}
