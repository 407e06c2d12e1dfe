/* Bundled data lookup and checked input files (see include/shiftsim/data.h). */
#include "ssim-config.h"

#include <shiftsim/data.h>
#include <shiftsim/types.h>

#include <errno.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

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

gboolean ssim_input_check(const char *path, const char *what, GError **error)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        int saved = errno;
        if (saved == ENOENT || saved == ENOTDIR)
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                        "%s: cannot read: no such %s", path, what);
        else
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot read: %s", path,
                        g_strerror(saved));
        return FALSE;
    }
    if (S_ISREG(st.st_mode))
        return TRUE;
    const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: is %s, not a %s", path, kind,
                what);
    return FALSE;
}

char *ssim_read_file_limited(const char *path, guint64 max_bytes, gsize *len, GError **error)
{
    if (!ssim_input_check(path, "file", error))
        return NULL;
    GStatBuf st;
    if (g_stat(path, &st) == 0 && (guint64)st.st_size > max_bytes) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                    "%s: %.1f MiB is over the limit of %.1f MiB for this kind of input", path,
                    (double)st.st_size / 1048576.0, (double)max_bytes / 1048576.0);
        return NULL;
    }
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

char *ssim_read_file(const char *path, gsize *len, GError **error)
{
    return ssim_read_file_limited(path, SSIM_INPUT_MAX_BYTES, len, error);
}

const char *ssim_version(void)
{
    return SSIM_VERSION;
}
