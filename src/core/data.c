/* Bundled data lookup (see include/shiftsim/data.h). */
#include "ssim-config.h"

#include <shiftsim/data.h>
#include <shiftsim/types.h>

char *ssim_data_find(const char *rel)
{
    if (g_file_test(rel, G_FILE_TEST_EXISTS))
        return g_strdup(rel);
    if (g_path_is_absolute(rel))
        return NULL;
    const char *roots[] = {g_getenv("SHIFTSIM_DATA"), SSIM_SOURCE_DATADIR, SSIM_INSTALL_DATADIR};
    for (gsize i = 0; i < G_N_ELEMENTS(roots); i++) {
        if (roots[i] == NULL || roots[i][0] == '\0')
            continue;
        char *path = g_build_filename(roots[i], rel, NULL);
        if (g_file_test(path, G_FILE_TEST_EXISTS))
            return path;
        g_free(path);
    }
    return NULL;
}

char *ssim_read_file(const char *path, gsize *len, GError **error)
{
    char *text = NULL;
    GError *local = NULL;
    if (!g_file_get_contents(path, &text, len, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot read: %s", path,
                    local->message);
        g_error_free(local);
        return NULL;
    }
    return text;
}

const char *ssim_version(void)
{
    return SSIM_VERSION;
}
