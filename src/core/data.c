/* Bundled data lookup and checked input files (see include/shiftsim/data.h). */
#include "ssim-config.h"

#include <shiftsim/data.h>
#include <shiftsim/types.h>

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
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

/*
 * The gzip stream `data` (n bytes) decompressed, NUL-terminated, or NULL with an error naming
 * `path`: a stream cut short or corrupt, or one that inflates past `max_bytes` (stopped there, so
 * that a small file cannot fill the memory).  Members one after another (`cat a.gz b.gz`) are
 * inflated in turn, as gzip -d does; bytes after the last member that start no member are
 * ignored, as gzip ignores trailing garbage.
 */
static char *gunzip_limited(const char *path, const char *data, gsize n, guint64 max_bytes,
                            gsize *len, GError **error)
{
    g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    g_autoptr(GByteArray) out = g_byte_array_new();
    gsize in = 0;
    guint8 buf[1 << 16];
    for (;;) {
        gsize read = 0, written = 0;
        g_autoptr(GError) local = NULL;
        GConverterResult r = g_converter_convert(G_CONVERTER(z), data + in, n - in, buf, sizeof buf,
                                                 G_CONVERTER_INPUT_AT_END, &read, &written, &local);
        if (r == G_CONVERTER_ERROR) {
            gboolean cut = g_error_matches(local, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO,
                        "%s: cannot read: %s gzip stream (%s)", path,
                        cut ? "a cut-off" : "a corrupt", local->message);
            return NULL;
        }
        in += read;
        if ((guint64)out->len + written > max_bytes) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                        "%s: decompressed, over the limit of %.1f MiB for this kind of input", path,
                        (double)max_bytes / 1048576.0);
            return NULL;
        }
        g_byte_array_append(out, buf, (guint)written);
        if (r == G_CONVERTER_FINISHED) {
            if (n - in < 2 || (guint8)data[in] != 0x1f || (guint8)data[in + 1] != 0x8b)
                break;
            g_converter_reset(G_CONVERTER(z));
        }
    }
    if (len)
        *len = out->len;
    g_byte_array_append(out, (const guint8 *)"", 1);
    return (char *)g_byte_array_free(g_steal_pointer(&out), FALSE);
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
    gsize n = 0;
    GError *local = NULL;
    if (!g_file_get_contents(path, &text, &n, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot read: %s", path,
                    local->message);
        g_error_free(local);
        return NULL;
    }
    /* gzip's magic: PyTorch's profiler writes TRACE.json.gz, and any input may come so. */
    if (n >= 2 && (guint8)text[0] == 0x1f && (guint8)text[1] == 0x8b) {
        char *plain = gunzip_limited(path, text, n, max_bytes, len, error);
        g_free(text);
        return plain;
    }
    if (len)
        *len = n;
    return text;
}

char *ssim_read_file(const char *path, gsize *len, GError **error)
{
    return ssim_read_file_limited(path, SSIM_INPUT_MAX_BYTES, len, error);
}

gboolean ssim_path_is(const char *path, const char *ext)
{
    g_return_val_if_fail(path != NULL && ext != NULL, FALSE);
    if (g_str_has_suffix(path, ext))
        return TRUE;
    gsize n = strlen(path), e = strlen(ext);
    return n >= e + 3 && g_str_has_suffix(path, ".gz") && strncmp(path + n - 3 - e, ext, e) == 0;
}

char *ssim_path_stem(const char *path, const char *ext)
{
    g_return_val_if_fail(path != NULL && ext != NULL, NULL);
    char *base = g_path_get_basename(path);
    if (g_str_has_suffix(base, ".gz"))
        base[strlen(base) - 3] = '\0';
    if (g_str_has_suffix(base, ext))
        base[strlen(base) - strlen(ext)] = '\0';
    return base;
}

const char *ssim_version(void)
{
    return SSIM_VERSION;
}
