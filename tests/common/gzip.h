/* Writing a gzipped input for the tests of the readers that inflate one (ssim_read_file). */
#pragma once

#include <criterion/criterion.h>
#include <gio/gio.h>

/* `path` written as the gzip of `data` (n bytes), as PyTorch's profiler writes TRACE.json.gz. */
static inline void t_write_gzip(const char *path, const char *data, gsize n)
{
    g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
    gsize cap = n + 1024, read = 0, written = 0;
    g_autofree char *out = g_malloc(cap);
    cr_assert_eq(g_converter_convert(G_CONVERTER(z), data, n, out, cap, G_CONVERTER_INPUT_AT_END,
                                     &read, &written, NULL),
                 G_CONVERTER_FINISHED);
    cr_assert(g_file_set_contents(path, out, (gssize)written, NULL));
}
